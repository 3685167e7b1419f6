"""Consumer groups against the real broker: confluent-kafka (librdkafka),
kafka-python and kcat consumers in groups, committed offsets across a
restart, static membership, and protocol-level bad input with the exact
error codes (raw frames, so the client cannot paper over them).

No fixed sleeps: everything polls for a condition with a deadline. Brokers
run with a short minimum session timeout so the tests can use short ones.
"""

import os
import socket
import struct
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

import kafka_util as ku

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


FAST = ("--group.min.session.timeout.ms=500",)


def gid(prefix="g"):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:8])


def group_consumer(bootstrap, group, **conf):
    c = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 200,
        "fetch.wait.max.ms": 50,
    }
    c.update(conf)
    return Consumer(c)


def produce_keys(bootstrap, topic, start, n, partitions):
    p = ku.producer(bootstrap)
    ku.produce_all(p, topic, [{"value": b"v%d" % i, "partition": i % partitions}
                              for i in range(start, start + n)])


def wait_until(cond, timeout=60, what="condition", step=None):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if step:
            step()
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for %s" % what)
        if not step:
            time.sleep(0.02)


# --------------------------------------------------------------- confluent


def test_three_consumers_six_partitions_join_leave_manual_commits(broker_factory):
    b = broker_factory(*FAST)
    topic = ku.create_topic(b.bootstrap, ku.unique_topic("grp"), partitions=6)
    group = gid()
    produce_keys(b.bootstrap, topic, 0, 300, 6)

    seen = {}            # value -> count
    commit_failed = set()
    consumers = []

    def poll_all():
        for c in consumers:
            m = c.poll(0.02)
            if m is None or m.error():
                continue
            v = m.value()
            seen[v] = seen.get(v, 0) + 1
            try:
                c.commit(message=m, asynchronous=False)
            except KafkaException:
                commit_failed.add(v)   # may be redelivered: allowed duplicate

    consumers.append(group_consumer(b.bootstrap, group))
    consumers[0].subscribe([topic])
    wait_until(lambda: len(seen) >= 50, what="first consumer progress", step=poll_all)

    # two more join mid-stream while more records arrive
    for _ in range(2):
        c = group_consumer(b.bootstrap, group)
        c.subscribe([topic])
        consumers.append(c)
    produce_keys(b.bootstrap, topic, 300, 300, 6)
    wait_until(lambda: all(c.assignment() for c in consumers) and len(seen) >= 400,
               what="three consumers sharing the partitions", step=poll_all)
    parts = sorted(tp.partition for c in consumers for tp in c.assignment())
    assert parts == list(range(6)), parts

    # one leaves (LeaveGroup); the other two take over its partitions
    consumers.pop(0).close()
    produce_keys(b.bootstrap, topic, 600, 120, 6)
    want = {b"v%d" % i for i in range(720)}
    wait_until(lambda: want <= set(seen), what="every record processed", step=poll_all)
    dup = {v for v, n in seen.items() if n > 1}
    assert dup <= commit_failed, "processed twice without a failed commit: %r" % sorted(dup)[:10]

    # committed offsets = end of every partition
    committed = consumers[0].committed([TopicPartition(topic, p) for p in range(6)], timeout=10)
    assert sum(tp.offset for tp in committed) == 720, committed
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    d = a.describe_consumer_groups([group])[group].result(10)
    assert str(d.state).endswith("STABLE"), d.state
    assert len(d.members) == 2
    for c in consumers:
        c.close()
    wait_until(lambda: str(a.describe_consumer_groups([group])[group].result(10).state)
               .endswith("EMPTY"), what="group empty after close")
    listed = a.list_consumer_groups().result(10)
    assert group in [g.group_id for g in listed.valid]


def test_committed_offsets_survive_restart(broker_factory):
    b = broker_factory(*FAST)
    topic = ku.create_topic(b.bootstrap, ku.unique_topic("rst"), partitions=2)
    produce_keys(b.bootstrap, topic, 0, 40, 2)
    group = gid()
    c = group_consumer(b.bootstrap, group)
    c.commit(offsets=[TopicPartition(topic, 0, 7, metadata="meta-0", leader_epoch=0),
                      TopicPartition(topic, 1, 11)], asynchronous=False)
    c.close()
    b.restart()
    c = group_consumer(b.bootstrap, group)
    got = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=20)
    assert [(tp.partition, tp.offset) for tp in got] == [(0, 7), (1, 11)]
    assert got[0].metadata == "meta-0"
    # a subscriber resumes from the committed positions
    c.subscribe([topic])
    firsts = {}
    wait_until(lambda: len(firsts) == 2, what="first records after restart",
               step=lambda: (lambda m: m and not m.error() and
                             firsts.setdefault(m.partition(), m.offset()))(c.poll(0.1)))
    assert firsts == {0: 7, 1: 11}
    c.close()


def test_static_member_restart_keeps_partitions_without_rebalance(broker_factory):
    b = broker_factory(*FAST)
    topic = ku.create_topic(b.bootstrap, ku.unique_topic("static"), partitions=4)
    group = gid()
    events = []

    def on_assign(c, parts):
        events.append(("assign", sorted(p.partition for p in parts)))

    def on_revoke(c, parts):
        events.append(("revoke", sorted(p.partition for p in parts)))

    a = group_consumer(b.bootstrap, group, **{"group.instance.id": "inst-a"})
    a.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    bb = group_consumer(b.bootstrap, group, **{"group.instance.id": "inst-b"})
    bb.subscribe([topic])

    def both_assigned():
        a.poll(0.02)
        bb.poll(0.02)
        return len(a.assignment()) == 2 and len(bb.assignment()) == 2
    wait_until(both_assigned, what="two static members with 2 partitions each")
    b_parts = sorted(p.partition for p in bb.assignment())
    a_events = len(events)
    bb.close()   # static members do not send LeaveGroup

    b2 = group_consumer(b.bootstrap, group, **{"group.instance.id": "inst-b"})
    b2.subscribe([topic])

    def b2_assigned():
        a.poll(0.02)
        b2.poll(0.02)
        return b2.assignment()
    wait_until(b2_assigned, what="restarted static member assigned")
    assert sorted(p.partition for p in b2.assignment()) == b_parts
    # keep polling a little past a heartbeat round: a must see no rebalance
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        a.poll(0.05)
        b2.poll(0.05)
    assert len(events) == a_events, "member a saw a rebalance: %r" % events[a_events:]
    a.close()
    b2.close()


def test_offsets_of_deleted_topic_are_gone(broker_factory):
    b = broker_factory(*FAST)
    topic = ku.create_topic(b.bootstrap, ku.unique_topic("del"), partitions=1)
    group = gid()
    c = group_consumer(b.bootstrap, group)
    c.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    a = ku.admin(b.bootstrap)
    a.delete_topics([topic])[topic].result(10)
    ku.create_topic(b.bootstrap, topic, partitions=1)
    got = c.committed([TopicPartition(topic, 0)], timeout=10)
    assert got[0].offset < 0, got   # not carried over to the new topic
    c.close()


# ------------------------------------------------------------ kafka-python


def test_kafka_python_group_consumers(broker_factory):
    from kafka import KafkaConsumer
    b = broker_factory(*FAST)
    topic = ku.create_topic(b.bootstrap, ku.unique_topic("kp"), partitions=4)
    produce_keys(b.bootstrap, topic, 0, 200, 4)
    group = gid("kp")
    cons = [KafkaConsumer(topic, bootstrap_servers=b.bootstrap, group_id=group,
                          auto_offset_reset="earliest", enable_auto_commit=False,
                          session_timeout_ms=6000, heartbeat_interval_ms=500,
                          consumer_timeout_ms=200)
            for _ in range(2)]
    seen = set()

    def step():
        for c in cons:
            for tp, msgs in c.poll(timeout_ms=50).items():
                for m in msgs:
                    seen.add(m.value)
                if msgs:
                    c.commit()
    wait_until(lambda: len(seen) == 200, what="kafka-python consumed everything", step=step)
    wait_until(lambda: all(c.assignment() for c in cons), what="both assigned", step=step)
    total = sum(cons[0].committed(tp) or 0 for tp in
                [__import__("kafka").TopicPartition(topic, p) for p in range(4)])
    assert total == 200
    for c in cons:
        c.close()


# ---------------------------------------------------------------- kcat -G


def test_kcat_balanced_consumer_commits(broker):
    topic = ku.create_topic(broker.bootstrap, ku.unique_topic("kcat"), partitions=3)
    produce_keys(broker.bootstrap, topic, 0, 90, 3)
    group = gid("kcat")
    cmd = ["kcat", "-b", broker.bootstrap, "-G", group, topic, "-e", "-q", "-f", "%s\n",
           "-X", "auto.offset.reset=earliest"]
    out = subprocess.run(cmd, capture_output=True, timeout=60, check=True).stdout.split()
    assert sorted(out) == sorted(b"v%d" % i for i in range(90))
    # kcat committed on exit: a second run of the group reads nothing new
    out = subprocess.run(cmd, capture_output=True, timeout=60, check=True).stdout.split()
    assert out == []


def test_kcat_lz4_now_compresses(broker):
    """librdkafka enables LZ4 only when the broker has FindCoordinator."""
    topic = ku.unique_topic("lz4")
    subprocess.run(["kcat", "-b", broker.bootstrap, "-P", "-t", topic, "-z", "lz4"],
                   input=b"a" * 4000 + b"\n", timeout=60, check=True)
    # read the stored batch back raw (Fetch v4) and look at its attributes
    ku.wait_topic(broker.bootstrap, topic)
    raw = Raw(broker.bootstrap)
    body = struct.pack(">iiiib", -1, 100, 1, 1 << 20, 0) + struct.pack(">i", 1) + s16(topic.encode())
    body += struct.pack(">i", 1) + struct.pack(">iqi", 0, 0, 1 << 20)
    r = raw.call(1, 4, body)
    pos = 4 + 4                               # throttle, topics count
    _, pos = read_str(r, pos)
    pos += 4                                  # partitions count
    _, err, _, _, naborted = struct.unpack(">ihqqi", r[pos:pos + 26])
    assert err == 0
    pos += 26 + max(naborted, 0) * 16
    n = struct.unpack(">i", r[pos:pos + 4])[0]
    records = r[pos + 4:pos + 4 + n]
    assert len(records) > 23
    attributes = struct.unpack(">h", records[21:23])[0]
    assert attributes & 7 == 3, "codec %d, want 3 (lz4)" % (attributes & 7)


# ---------------------------------------------------------- raw protocol


class Raw:
    """Non-flexible request versions only; returns the response body."""

    def __init__(self, bootstrap):
        host, port = bootstrap.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=20)
        self.corr = 0

    def call(self, key, version, body):
        self.corr += 1
        hdr = struct.pack(">hhi", key, version, self.corr) + s16(b"raw")
        msg = hdr + body
        self.s.sendall(struct.pack(">i", len(msg)) + msg)
        n = struct.unpack(">i", self._read(4))[0]
        resp = self._read(n)
        assert struct.unpack(">i", resp[:4])[0] == self.corr
        return resp[4:]

    def _read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            assert chunk, "connection closed"
            out += chunk
        return out


def s16(b):
    if b is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(b)) + b


def b32(b):
    return struct.pack(">i", len(b)) + b


def read_str(buf, pos):
    n = struct.unpack(">h", buf[pos:pos + 2])[0]
    if n < 0:
        return None, pos + 2
    return buf[pos + 2:pos + 2 + n], pos + 2 + n


SUB = struct.pack(">hi", 0, 1)   # consumer subscription v0 header, topics filled in


def join(raw, group, member=b"", instance=None, version=5, session=6000):
    meta = struct.pack(">hi", 0, 0) + struct.pack(">i", -1)
    body = s16(group) + struct.pack(">ii", session, 6000) + s16(member)
    if version >= 5:
        body += s16(instance)
    body += s16(b"consumer") + struct.pack(">i", 1) + s16(b"range") + b32(meta)
    r = raw.call(11, version, body)
    err, gen = struct.unpack(">hi", r[4:10])
    pos = 10
    _, pos = read_str(r, pos)        # protocol name
    leader, pos = read_str(r, pos)
    mid, pos = read_str(r, pos)
    return err, gen, mid, leader


def sync(raw, group, gen, member, assignments=(), instance=None):
    body = s16(group) + struct.pack(">i", gen) + s16(member) + s16(instance)
    body += struct.pack(">i", len(assignments))
    for m, a in assignments:
        body += s16(m) + b32(a)
    r = raw.call(14, 3, body)
    return struct.unpack(">h", r[4:6])[0]


def heartbeat(raw, group, gen, member, instance=None):
    r = raw.call(12, 3, s16(group) + struct.pack(">i", gen) + s16(member) + s16(instance))
    return struct.unpack(">h", r[4:6])[0]


def commit(raw, group, gen, member, topic, partition, offset, metadata=b""):
    body = s16(group) + struct.pack(">i", gen) + s16(member) + struct.pack(">q", -1)
    body += struct.pack(">i", 1) + s16(topic) + struct.pack(">i", 1)
    body += struct.pack(">iq", partition, offset) + s16(metadata)
    r = raw.call(8, 2, body)
    # [topics: name [partitions: index error]]
    pos = 4
    _, pos = read_str(r, pos)
    pos += 4
    return struct.unpack(">h", r[pos + 4:pos + 6])[0]


UNKNOWN_TOPIC_OR_PARTITION = 3
OFFSET_METADATA_TOO_LARGE = 12
ILLEGAL_GENERATION = 22
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82


def test_bad_input_gets_the_right_error_codes(broker_factory):
    b = broker_factory(*FAST)
    topic = ku.create_topic(b.bootstrap, ku.unique_topic("bad"), partitions=2).encode()
    raw = Raw(b.bootstrap)
    g = gid("raw").encode()

    assert join(raw, b"", version=5)[0] == INVALID_GROUP_ID
    assert join(raw, g, session=10)[0] == INVALID_SESSION_TIMEOUT
    err, _, mid, _ = join(raw, g, version=4)
    assert err == MEMBER_ID_REQUIRED and mid
    err, gen, mid2, leader = join(raw, g, member=mid, version=4)
    assert (err, mid2, leader) == (0, mid, mid) and gen >= 1
    assert sync(raw, g, gen + 1, mid) == ILLEGAL_GENERATION
    assert sync(raw, g, gen, b"nobody") == UNKNOWN_MEMBER_ID
    assert sync(raw, g, gen, mid, [(mid, b"")]) == 0
    assert heartbeat(raw, g, gen, mid) == 0
    assert heartbeat(raw, g, gen - 1, mid) == ILLEGAL_GENERATION

    # commits: unknown topic / partition, wrong generation, unknown member, oversized metadata
    assert commit(raw, g, gen, mid, b"no-such-topic", 0, 1) == UNKNOWN_TOPIC_OR_PARTITION
    assert commit(raw, g, gen, mid, topic, 9, 1) == UNKNOWN_TOPIC_OR_PARTITION
    assert commit(raw, g, gen + 5, mid, topic, 0, 1) == ILLEGAL_GENERATION
    assert commit(raw, g, gen, b"stranger", topic, 0, 1) == UNKNOWN_MEMBER_ID
    assert commit(raw, g, gen, mid, topic, 0, 1, b"m" * 5000) == OFFSET_METADATA_TOO_LARGE
    assert commit(raw, g, gen, mid, topic, 0, 1, b"m" * 4096) == 0
    # a group nobody ever joined: generation >= 0 is from a stale member
    assert commit(raw, gid().encode(), 3, b"x", topic, 0, 1) == ILLEGAL_GENERATION
    assert commit(raw, gid().encode(), -1, b"", topic, 0, 1) == 0

    # static membership: a second incarnation fences the first
    sg = gid("static").encode()
    err, gen, m1, _ = join(raw, sg, instance=b"i1")
    assert err == 0
    assert sync(raw, sg, gen, m1, [(m1, b"A")], instance=b"i1") == 0
    err, gen2, m2, _ = join(raw, sg, instance=b"i1")
    assert err == 0 and m2 != m1 and gen2 == gen
    assert heartbeat(raw, sg, gen, m1, instance=b"i1") == FENCED_INSTANCE_ID
    assert heartbeat(raw, sg, gen, m2, instance=b"i1") == 0


def test_admin_list_describe_offset_delete_delete_groups(broker):
    """kafka-python's admin (ListGroups v5, DescribeGroups v6, OffsetFetch,
    OffsetDelete, DeleteGroups) and librdkafka's batched FindCoordinator."""
    from kafka import TopicPartition as KTP
    from kafka.admin import KafkaAdminClient
    topic = ku.create_topic(broker.bootstrap, ku.unique_topic("adm"), partitions=2)
    group = gid("adm")
    c = group_consumer(broker.bootstrap, group)
    c.commit(offsets=[TopicPartition(topic, 0, 5), TopicPartition(topic, 1, 6)],
             asynchronous=False)
    c.close()
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        listed = {g["group_id"]: g for g in a.list_groups()}
        assert listed[group]["group_state"] == "Empty"
        assert listed[group]["group_type"] == "classic"
        missing = "no-such-" + group
        d = a.describe_groups([group, missing])
        assert d[group]["group_state"] == "Empty" and d[group]["error"] is None
        assert d[missing]["group_state"] == "Dead" and "69" in d[missing]["error"]
        offs = a.list_group_offsets(group)[group]
        assert {tp.partition: o.offset for tp, o in offs.items()} == {0: 5, 1: 6}
        r = a.delete_group_offsets(group, [KTP(topic, 0)])
        assert r[KTP(topic, 0)].__name__ == "NoError", r
        offs = a.list_group_offsets(group)[group]
        assert {tp.partition for tp in offs} == {1}
        assert a.delete_groups([group, missing]) == {group: "OK", missing: "GroupIdNotFoundError"}
        assert group not in [g["group_id"] for g in a.list_groups()]
    finally:
        a.close()
    # librdkafka batches FindCoordinator keys (v4+) when describing many groups
    ca = AdminClient({"bootstrap.servers": broker.bootstrap})
    groups = [gid("fc") for _ in range(3)]
    fs = ca.describe_consumer_groups(groups)
    for g in groups:
        try:
            r = fs[g].result(10)
            assert str(r.state).endswith(("DEAD", "UNKNOWN")), r.state
        except KafkaException as e:   # DescribeGroups v6+: GROUP_ID_NOT_FOUND
            assert e.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND, e


# ------------------------------------------------------ lakestream groups


def cli(b, *args, check=True):
    import lsbroker
    r = subprocess.run([lsbroker.binary_path(), "groups", "--bootstrap", b.bootstrap] + list(args),
                       capture_output=True, timeout=60)
    if check:
        assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    return r.stdout.decode(), r.returncode


def test_groups_cli_list_describe_lag_reset_delete(broker_factory):
    b = broker_factory(*FAST)
    topic = ku.create_topic(b.bootstrap, ku.unique_topic("cli"), partitions=2)
    produce_keys(b.bootstrap, topic, 0, 20, 2)   # 10 per partition
    group = gid("cli")
    c = group_consumer(b.bootstrap, group)
    c.subscribe([topic])
    got = []
    wait_until(lambda: len(got) >= 8, what="some records",
               step=lambda: (lambda m: m and not m.error() and got.append(m))(c.poll(0.1)))
    c.commit(offsets=[TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 3)], asynchronous=False)
    out, _ = cli(b, "list")
    assert group in out and "Stable" in out
    out, _ = cli(b, "describe", group)
    rows = {int(l.split()[1]): l.split() for l in out.splitlines() if l.startswith(topic)}
    assert rows[0][2:5] == ["4", "10", "6"] and rows[1][2:5] == ["3", "10", "7"], out
    assert rows[0][5] != "-"                   # owner shown while Stable
    assert "total lag 13" in out
    # reset needs an empty group
    out, rc = cli(b, "reset", group, "--topic", topic, "--to-earliest", check=False)
    assert rc != 0
    c.close()
    wait_until(lambda: "Empty" in cli(b, "list")[0], what="group empty")
    cli(b, "reset", group, "--topic", topic, "--to-latest")
    assert "total lag 0" in cli(b, "describe", group)[0]
    cli(b, "reset", group, "--topic", topic, "--to-earliest")
    assert "total lag 20" in cli(b, "describe", group)[0]
    cli(b, "reset", group, "--topic", topic, "--to-datetime", str(int(time.time() * 1000) + 3600_000))
    assert "total lag 0" in cli(b, "describe", group)[0]
    out, _ = cli(b, "delete", group)
    assert "deleted" in out
    assert group not in cli(b, "list")[0]
    _, rc = cli(b, "describe", group, check=False)
    assert rc == 2


def test_offset_fetch_pipelined_behind_offset_commit_reads_it(broker):
    """A client may send OffsetFetch before its OffsetCommit is answered, on
    the same connection. Kafka handles a connection's requests one at a
    time, so the fetch returns the offset just committed; here the two ran
    on different workers and the fetch read the offset before the commit's
    (a raw probe saw 68 stale answers in 200 rounds). Raw frames, so the
    two are pipelined every time."""
    from test_malformed import Conn, Reader, array, frame, header, i32, i64, string
    t = ku.create_topic(broker.bootstrap, ku.unique_topic("pipe-commit"), partitions=1)
    gid = "g-pipe-commit-" + uuid.uuid4().hex
    c = Conn(broker)
    for rnd in range(200):
        corr = 2 * rnd + 1
        offset = 1000 + rnd
        # OffsetCommit v2: group, generation -1 (no member), member "", retention -1
        commit = header(8, 2, corr) + string(gid) + i32(-1) + string("") + i64(-1) + \
            array([t], lambda n: string(n) + array([0], lambda p: i32(p) + i64(offset) + string("")))
        # OffsetFetch v1
        fetch = header(9, 1, corr + 1) + string(gid) + array([t], lambda n: string(n) + array([0], i32))
        c.send(frame(commit) + frame(fetch))  # one write: pipelined
        r = Reader(c.recv_frame())
        assert r.i32() == corr
        assert r.i32() == 1 and r.string() == t and r.i32() == 1
        assert r.i32() == 0 and r.i16() == 0, "commit refused"
        r = Reader(c.recv_frame())
        assert r.i32() == corr + 1
        assert r.i32() == 1 and r.string() == t and r.i32() == 1
        assert r.i32() == 0
        got = r.i64()
        r.string()
        assert r.i16() == 0
        assert got == offset, "round %d: OffsetFetch behind OffsetCommit read %d" % (rnd, got)
