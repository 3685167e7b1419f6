"""Streams groups (KIP-1071): Kafka Streams with group.protocol=streams.

The broker takes the application's topology from its first heartbeat,
creates the internal topics (repartition and changelog, with the configs
Streams asks for), assigns the tasks to the stream threads of every instance
and moves them when an instance comes or goes; offsets are committed under
the members' epochs. Here:

- two instances of a word count (exactly_once_v2, a repartition topic and a
  state store) share the tasks, one is killed with -9 and the other takes
  its tasks over: a read_committed reader sees every count once, in order;
- Kafka's own kafka-streams-groups tool lists, describes (members, tasks,
  offsets) and deletes the group; ListGroups and DescribeGroups see its type;
- the heartbeat's error paths on the wire (Kafka's codes and messages).

Kafka Streams 4.3.1 (.cache/java/apps, tools/install-deps.sh test).
"""

import collections
import os
import random
import socket
import struct
import subprocess
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition
from confluent_kafka.admin import ConfigResource

import lsbroker
from kafka_util import admin, consumer, create_topic, produce_all, producer
from test_connect_streams import (JVM, WordCount, _poll, _sentences, _word_totals,  # noqa: F401
                                  java_procs, wordcount_classes)

TOOLS_LIB = os.path.join(lsbroker.ROOT, ".cache", "java", "tools")
# members notice changes within a second; a dead instance is gone in 6 s
QUICK = ("--group.streams.heartbeat.interval.ms=500", "--group.streams.session.timeout.ms=6000",
         "--group.streams.min.heartbeat.interval.ms=500",
         "--group.streams.min.session.timeout.ms=6000")


def streams_groups_tool(bootstrap, *args):
    """kafka-streams-groups.sh (org.apache.kafka.tools.streams.StreamsGroupCommand)."""
    r = subprocess.run(JVM + ["-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp",
                              os.path.join(TOOLS_LIB, "*"),
                              "org.apache.kafka.tools.streams.StreamsGroupCommand",
                              "--bootstrap-server", bootstrap] + list(args),
                       capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def member_rows(bootstrap, group):
    """{member id: (process, active assignment text)} from --describe --members."""
    rc, out, err = streams_groups_tool(bootstrap, "--describe", "--group", group, "--members",
                                       "--verbose")
    assert rc == 0, err
    rows = {}
    for line in out.splitlines()[1:]:
        f = line.split()
        if len(f) >= 8 and f[0] == group:
            rows[f[3]] = (f[6], " ".join(f[8:]))
    return rows


class Counts:
    """A read_committed reader of the output: every count each word got."""

    def __init__(self, bootstrap, topic, partitions):
        self.c = consumer(bootstrap, **{"isolation.level": "read_committed"})
        self.c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        self.seen = collections.defaultdict(list)

    def poll(self):
        for m in self.c.consume(num_messages=1000, timeout=0.2):
            if m.error() is None:
                self.seen[m.key().decode()].append(struct.unpack(">q", m.value())[0])
            elif m.error().code() != KafkaError._PARTITION_EOF:
                raise AssertionError("consume output: %s" % m.error())
        return {w: c[-1] for w, c in self.seen.items() if c}

    def wait_for(self, lines, apps, timeout=90):
        want = dict(_word_totals(lines))
        _poll(lambda: self.poll() == want, timeout, "exact word counts",
              on_timeout=lambda: " (have %s, want %s); logs:\n%s" % (
                  self.poll(), want, "\n".join(a.log_tail(30) for a in apps)))

    def assert_each_count_once(self, lines):
        want = _word_totals(lines)
        for w, counts in self.seen.items():
            assert counts == list(range(1, want[w] + 1)), "%s: counts %s" % (w, counts)


@pytest.mark.heavy
def test_streams_instances_share_tasks_and_take_over(broker_factory, tmp_path, java_procs,
                                                     wordcount_classes):
    b = broker_factory(*QUICK)
    bs = b.bootstrap
    tag = uuid.uuid4().hex[:8]
    app_id = "wc-streams-" + tag
    input_topic = create_topic(bs, "sg-in-" + tag, partitions=4)
    output_topic = create_topic(bs, "sg-out-" + tag, partitions=4)
    rng = random.Random(21)
    apps = [WordCount(wordcount_classes, bs, app_id, input_topic, output_topic,
                      str(tmp_path / ("state-%d" % i)), str(tmp_path), java_procs,
                      "exactly_once_v2", protocol="streams", name="instance-%d" % i)
            for i in range(2)]
    out = Counts(bs, output_topic, range(4))
    lines = []
    p = producer(bs)
    try:
        apps[0].start()
        batch = _sentences(rng, 60)
        produce_all(p, input_topic, [{"value": l.encode()} for l in batch])
        lines += batch
        out.wait_for(lines, apps)

        # the broker created the internal topics with what Streams asked for
        a = admin(bs)
        md = a.list_topics(timeout=30).topics
        assert app_id + "-words-repartition" in md and len(md[app_id + "-words-repartition"].partitions) == 4
        changelog = app_id + "-word-counts-changelog"
        assert changelog in md and len(md[changelog].partitions) == 4

        # a second instance (another process): 8 tasks, 4 each
        apps[1].start()

        def balanced():
            rows = member_rows(bs, app_id)
            procs = {proc for proc, _ in rows.values()}
            return len(rows) == 2 and len(procs) == 2 and all(
                _active_count(text) == 4 for _, text in rows.values())
        _poll(balanced, 60, "two instances with 4 active tasks each",
              on_timeout=lambda: " (have %s)" % member_rows(bs, app_id))
        batch = _sentences(rng, 60)
        produce_all(p, input_topic, [{"value": l.encode()} for l in batch])
        lines += batch
        out.wait_for(lines, apps)

        # kill -9 the first: after its session the second runs all 8 tasks
        apps[0].proc.kill()
        batch = _sentences(rng, 60)
        produce_all(p, input_topic, [{"value": l.encode()} for l in batch])
        lines += batch
        out.wait_for(lines, apps, timeout=120)
        rows = member_rows(bs, app_id)
        assert len(rows) == 1 and _active_count(list(rows.values())[0][1]) == 8, rows
        out.assert_each_count_once(lines)
        apps[1].stop()
    finally:
        out.c.close()


def _active_count(assignment_text):
    """Tasks in 'ACTIVE: 0:[0,1]; 1:[2]; TARGET-ACTIVE: ...' before TARGET."""
    active = assignment_text.split("TARGET-ACTIVE:")[0]
    if "ACTIVE:" not in active:
        return 0
    active = active.split("ACTIVE:", 1)[1].split("STANDBY:")[0]
    n = 0
    for part in active.split("["):
        if "]" in part:
            inner = part.split("]")[0].strip()
            n += len([x for x in inner.split(",") if x.strip()])
    return n


@pytest.mark.heavy
def test_streams_group_tools_and_types(broker_factory, tmp_path, java_procs, wordcount_classes):
    b = broker_factory(*QUICK)
    bs = b.bootstrap
    tag = uuid.uuid4().hex[:8]
    app_id = "wc-tools-" + tag
    input_topic = create_topic(bs, "tl-in-" + tag, partitions=2)
    output_topic = create_topic(bs, "tl-out-" + tag, partitions=2)
    app = WordCount(wordcount_classes, bs, app_id, input_topic, output_topic,
                    str(tmp_path / "state"), str(tmp_path), java_procs, protocol="streams",
                    threads=2, name="tools")
    app.start()
    produce_all(producer(bs), input_topic, [{"value": b"a b c"}] * 20)
    _poll(lambda: len(member_rows(bs, app_id)) == 2, 60, "two stream threads as members")

    rc, out, err = streams_groups_tool(bs, "--list", "--state")
    assert rc == 0, err
    assert any(l.split()[:2] == [app_id, "Stable"] for l in out.splitlines()), out
    rc, out, err = streams_groups_tool(bs, "--describe", "--group", app_id, "--offsets")
    assert rc == 0, err
    assert input_topic in out and app_id + "-words-repartition" in out, out

    # the group's type as ListGroups tells it (kafka-groups.sh --list)
    r = subprocess.run(JVM + ["-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp",
                              os.path.join(TOOLS_LIB, "*"), "org.apache.kafka.tools.GroupsCommand",
                              "--bootstrap-server", bs, "--list"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = {l.split()[0]: l.split()[1:] for l in r.stdout.splitlines()[1:] if l.split()}
    assert rows.get(app_id, [None])[0] == "Streams", r.stdout

    # lakestream groups describe: the type, each member's tasks, the offsets
    r = subprocess.run([lsbroker.binary_path(), "groups", "--bootstrap", bs, "describe", app_id],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "type streams" in r.stdout and r.stdout.count("active:") == 2, r.stdout
    assert input_topic in r.stdout, r.stdout

    # the changelog is compacted as Streams asked
    a = admin(bs)
    res = ConfigResource(ConfigResource.Type.TOPIC, app_id + "-word-counts-changelog")
    cfg = a.describe_configs([res])[res].result(timeout=30)
    assert cfg["cleanup.policy"].value == "compact"

    # a group with members is not deleted; once the app stops it is
    rc, out, err = streams_groups_tool(bs, "--delete", "--group", app_id)
    said = (out + err).lower()
    assert "not empty" in said or "non_empty" in said or "nonempty" in said, out + err
    rc, out, err = streams_groups_tool(bs, "--list")
    assert app_id in out.split(), out  # still there
    app.stop()
    _poll(lambda: member_rows(bs, app_id) == {}, 30, "the group to be empty")
    rc, out, err = streams_groups_tool(bs, "--delete", "--group", app_id)
    assert rc == 0, out + err
    rc, out, err = streams_groups_tool(bs, "--list")
    assert app_id not in out.split(), out


# ---------------------------------------------------------------- the wire

def _uv(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _s(v):  # compact (nullable) string
    return b"\x00" if v is None else _uv(len(v.encode()) + 1) + v.encode()


def _arr(items):  # compact (nullable) array of encoded items
    return b"\x00" if items is None else _uv(len(items) + 1) + b"".join(items)


def _topology(epoch, subs):
    """subs: [(id, [sources], [changelog (name, partitions)])]"""
    enc = []
    for sid, sources, changelogs in subs:
        enc.append(_s(sid) + _arr([_s(t) for t in sources]) + _arr([])
                   + _arr([_s(n) + struct.pack(">ih", p, 0) + _arr([]) + b"\x00"
                           for n, p in changelogs])
                   + _arr([]) + _arr([]) + _arr([]) + b"\x00")
    return b"\x01" + struct.pack(">i", epoch) + _arr(enc) + b"\x00"


def heartbeat(broker, group, member, epoch, topology=None, rebalance_timeout=30000,
              endpoint=None, full=False):
    """One StreamsGroupHeartbeat v0; (error, message, epoch, [(status, detail)])
    or, with full, also {field: value} of the rest of the answer."""
    ep = b"\xff" if endpoint is None else (b"\x01" + _s(endpoint[0])
                                           + struct.pack(">H", endpoint[1]) + b"\x00")
    body = (_s(group) + _s(member) + struct.pack(">ii", epoch, 0) + _s(None) + _s(None)
            + struct.pack(">i", rebalance_timeout)
            + (topology if topology is not None else b"\xff")
            + _arr(None) * 3 + _s("proc") + ep + _arr(None) * 3 + b"\x00" + b"\x00")
    hdr = struct.pack(">hhi", 88, 0, 1) + struct.pack(">h", 4) + b"test" + b"\x00"
    host, port = broker.bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(struct.pack(">i", len(hdr + body)) + hdr + body)
        n = struct.unpack(">i", _recv(s, 4))[0]
        d = _recv(s, n)
    p = 5  # correlation id, header tags
    p += 4  # throttle
    err = struct.unpack(">h", d[p:p + 2])[0]
    p += 2
    msg, p = _rs(d, p)
    _member, p = _rs(d, p)
    mepoch, _hb, _lag, _tox = struct.unpack(">iiii", d[p:p + 16])
    p += 16
    n, p = _ruv(d, p)
    status = []
    for _ in range(max(n - 1, 0)):
        code = d[p]
        detail, p = _rs(d, p + 1)
        p += 1  # tags
        status.append((code, detail))
    if not full:
        return err, msg, mepoch, status
    rest = {}
    for kind in ("active", "standby", "warmup"):
        rest[kind], p = _task_ids(d, p)
    rest["endpoint_epoch"] = struct.unpack(">i", d[p:p + 4])[0]
    p += 4
    n, p = _ruv(d, p)
    eps = None if n == 0 else []
    for _ in range(max(n - 1, 0)):
        host, p = _rs(d, p)
        port = struct.unpack(">H", d[p:p + 2])[0]
        p += 3  # port, tags
        active, p = _topic_partitions(d, p)
        standby, p = _topic_partitions(d, p)
        p += 1  # tags
        eps.append(((host, port), active, standby))
    rest["endpoints"] = eps
    return err, msg, mepoch, status, rest


def _int32s(d, p):
    n, p = _ruv(d, p)
    v = list(struct.unpack(">%di" % (n - 1), d[p:p + 4 * (n - 1)])) if n > 1 else []
    return v, p + 4 * max(n - 1, 0)


def _task_ids(d, p):
    """A nullable [TaskIds] as {subtopology: [partitions]} (None: null)."""
    n, p = _ruv(d, p)
    if n == 0:
        return None, p
    out = {}
    for _ in range(n - 1):
        sub, p = _rs(d, p)
        out[sub], p = _int32s(d, p)
        p += 1
    return out, p


def _topic_partitions(d, p):
    n, p = _ruv(d, p)
    out = {}
    for _ in range(max(n - 1, 0)):
        topic, p = _rs(d, p)
        out[topic], p = _int32s(d, p)
        p += 1
    return out, p


def _recv(s, n):
    d = b""
    while len(d) < n:
        c = s.recv(n - len(d))
        assert c, "connection closed"
        d += c
    return d


def _ruv(d, p):
    v = shift = 0
    while True:
        b = d[p]
        p += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, p


def _rs(d, p):
    n, p = _ruv(d, p)
    if n == 0:
        return None, p
    return d[p:p + n - 1].decode(), p + n - 1


def test_streams_heartbeat_errors_on_the_wire(broker):
    tag = uuid.uuid4().hex[:8]
    group = "raw-streams-" + tag
    err, msg, _, _ = heartbeat(broker, group, "m1", 0, topology=None)
    assert err == 42 and "Topology" in msg, (err, msg)  # INVALID_REQUEST
    err, msg, _, _ = heartbeat(broker, group, "m1", 0,
                               topology=_topology(0, [("0", ["x-" + tag], [("chg-" + tag, 3)])]))
    assert err == 130 and "chg-" + tag in msg, (err, msg)  # STREAMS_INVALID_TOPOLOGY
    err, msg, _, _ = heartbeat(broker, group, "m1", 0, topology=_topology(0, []),
                               rebalance_timeout=-1)
    assert err == 42 and "RebalanceTimeoutMs" in msg, (err, msg)
    err, msg, _, _ = heartbeat(broker, group, "ghost", 3)
    assert err == 25, (err, msg)  # UNKNOWN_MEMBER_ID
    # a source topic that does not exist: joined, with the status that says so
    err, msg, epoch, status = heartbeat(broker, group, "m1", 0,
                                        topology=_topology(0, [("0", ["nope-" + tag], [])]))
    assert err == 0 and epoch > 0, (err, msg)
    assert [c for c, _ in status] == [1] and "nope-" + tag in status[0][1], status
    err, _, _, _ = heartbeat(broker, group, "m1", epoch + 7)
    assert err == 110, err  # FENCED_MEMBER_EPOCH
    err, _, epoch2, _ = heartbeat(broker, group, "m1", -1)
    assert err == 0 and epoch2 == -1


def test_streams_heartbeat_tasks_and_endpoints_on_the_wire(broker):
    """A member with a user endpoint (application.server, Interactive Queries)
    gets its tasks and, while its EndpointInformationEpoch is behind, every
    endpoint with the partitions its active tasks read."""
    tag = uuid.uuid4().hex[:8]
    src = create_topic(broker.bootstrap, "ep-in-" + tag, partitions=3)
    group = "raw-ep-" + tag
    err, msg, epoch, status, rest = heartbeat(
        broker, group, "m1", 0, topology=_topology(0, [("0", [src], [])]),
        endpoint=("localhost", 8080), full=True)
    assert err == 0 and status == [], (err, msg, status)
    assert rest["active"] == {"0": [0, 1, 2]}, rest
    assert rest["standby"] == {} and rest["warmup"] == {}, rest
    assert rest["endpoint_epoch"] > 0
    assert rest["endpoints"] == [(("localhost", 8080), {src: [0, 1, 2]}, {})], rest
    err, msg, epoch2, status, rest = heartbeat(broker, group, "m1", epoch, full=True)
    assert err == 0 and epoch2 == epoch
    # the member's endpoint epoch is still 0 in this request (the helper
    # sends 0): the endpoints come again; its tasks did not change: none
    assert rest["active"] is None and rest["endpoints"] is not None, rest
