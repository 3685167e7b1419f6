"""Kafka 4's admin tools against a leaderless broker (issue 34): kafka-topics
--describe goes through DescribeTopicPartitions (key 75), paged by the
tool's --partition-size-limit-per-response (default 2000)."""

import json
import os
import socket
import struct
import subprocess

import pytest

import lsbroker
from confluent_kafka.admin import AclOperation, ResourceType

from kafka_util import create_topic, produce_all, producer, unique_topic
from test_acls import binding, create_acls, one_dir, restricted, superuser  # noqa: F401 (fixture)

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


TOOLS_LIB = os.path.join(lsbroker.ROOT, ".cache", "java", "tools")
JVM = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


def kafka_tool(main, bootstrap, *args, check=True):
    """Run one of Kafka's tools (class `main`) against bootstrap."""
    if not os.path.isdir(TOOLS_LIB) or not any(f.startswith("kafka-tools-")
                                               for f in os.listdir(TOOLS_LIB)):
        pytest.fail("no Kafka tools jars in %s; run tools/install-deps.sh test" % TOOLS_LIB,
                    pytrace=False)
    cmd = JVM + ["-cp", os.path.join(TOOLS_LIB, "*"), main,
                 "--bootstrap-server", bootstrap] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if check:
        assert r.returncode == 0, "%s %s: rc %d\n%s\n%s" % (
            main, " ".join(args), r.returncode, r.stdout, r.stderr)
    return r


def describe_rows(out):
    """kafka-topics --describe partition lines as {(topic, partition): fields}."""
    rows = {}
    for ln in out.splitlines():
        f = dict(kv.split(": ", 1) for kv in ln.strip().split("\t") if ": " in kv)
        if "Partition" in f:
            rows[(f["Topic"], int(f["Partition"]))] = f
    return rows


@pytest.mark.parametrize("limit", [None, "3"])
def test_kafka_topics_describe_pages_through_every_partition(broker, limit):
    """Every partition of every topic is described once, whether the answer
    fits one page (the tool's default limit) or needs many (a limit of 3 over
    topics of 5 and 7 partitions cuts inside topics and at their ends)."""
    topics_by_count = [create_topic(broker.bootstrap, unique_topic("desc"), partitions=n)
                       for n in (5, 7, 1)]
    extra = ["--partition-size-limit-per-response", limit] if limit else []
    out = kafka_tool("org.apache.kafka.tools.TopicCommand", broker.bootstrap, "--describe",
                     *extra).stdout
    rows = describe_rows(out)
    for t, n in zip(topics_by_count, (5, 7, 1)):
        assert sorted(p for (tt, p) in rows if tt == t) == list(range(n)), out
    for f in rows.values():
        # leaderless: the broker Metadata names leads, and it is the whole ISR
        assert f["Leader"] == f["Replicas"] == f["Isr"] and int(f["Leader"]) >= 0
    # one topic asked by name pages the same way
    one = kafka_tool("org.apache.kafka.tools.TopicCommand", broker.bootstrap, "--describe",
                     "--topic", topics_by_count[1], *extra).stdout
    assert "PartitionCount: 7" in one
    assert {k: v for k, v in rows.items() if k[0] == topics_by_count[1]} == describe_rows(one)


# --- DescribeTopicPartitions on the wire, with a small limit ------------------

def _uvarint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _cstr(s):
    b = s.encode()
    return _uvarint(len(b) + 1) + b


class _Reader:
    def __init__(self, b):
        self.b, self.at = b, 0

    def take(self, n):
        v = self.b[self.at:self.at + n]
        self.at += n
        return v

    def i(self, fmt):
        return struct.unpack(">" + fmt, self.take(struct.calcsize(fmt)))[0]

    def uvarint(self):
        n, shift = 0, 0
        while True:
            b = self.take(1)[0]
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n

    def string(self):
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n).decode()

    def int_array(self):
        n = self.uvarint() - 1
        return None if n < 0 else [self.i("i") for _ in range(n)]

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def cursor(self):
        if self.i("b") < 0:
            return None
        c = (self.string(), self.i("i"))
        self.tags()
        return c


def roundtrip(bootstrap, req):
    """Sends one request frame (header and body) and returns the response
    frame without its size."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(struct.pack(">i", len(req)) + req)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            assert chunk, "connection closed"
            buf += chunk
    return buf[4:]


def describe_topic_partitions(bootstrap, topics, limit, cursor=None):
    """One DescribeTopicPartitions v0 round trip: ([(error, name, [partition])], next cursor)."""
    body = _uvarint(len(topics) + 1) + b"".join(_cstr(t) + b"\0" for t in topics)
    body += struct.pack(">i", limit)
    body += b"\xff" if cursor is None else b"\x01" + _cstr(cursor[0]) + struct.pack(">i", cursor[1]) + b"\0"
    body += b"\0"
    req = struct.pack(">hhih", 75, 0, 7, 4) + b"test" + b"\0" + body
    r = _Reader(roundtrip(bootstrap, req))
    assert r.i("i") == 7
    r.tags()
    r.i("i")  # throttle
    out = []
    for _ in range(r.uvarint() - 1):
        err, name = r.i("h"), r.string()
        r.take(17)  # topic id, internal
        parts = []
        for _ in range(r.uvarint() - 1):
            r.i("h")
            idx = r.i("i")
            r.take(8)  # leader, epoch
            r.int_array(), r.int_array(), r.int_array(), r.int_array(), r.int_array()
            r.tags()
            parts.append(idx)
        r.i("i")  # authorized operations
        r.tags()
        out.append((err, name, parts))
    return out, r.cursor()


def test_describe_topic_partitions_cursor_pages_as_kafka_defines(broker):
    """A limit of 3 over topics of 5 and 2 partitions: cut inside the first
    topic, then at the end of a page falling on a topic's end (the cursor
    names partition 0 of the next topic), never a partition twice; a cursor
    whose topic was not asked for is INVALID_REQUEST (42); an unknown topic is
    UNKNOWN_TOPIC_OR_PARTITION (3)."""
    t5 = create_topic(broker.bootstrap, unique_topic("dtp-a"), partitions=5)
    t1 = create_topic(broker.bootstrap, unique_topic("dtp-b"), partitions=1)
    t2 = create_topic(broker.bootstrap, unique_topic("dtp-c"), partitions=2)
    names = sorted([t5, t1, t2])
    counts = {t5: 5, t1: 1, t2: 2}
    seen, cursor, pages = [], None, 0
    while True:
        topics, cursor = describe_topic_partitions(broker.bootstrap, [t2, t5, t1], 3, cursor)
        pages += 1
        assert sum(len(p) for _, _, p in topics) <= 3
        for err, name, parts in topics:
            assert err == 0
            seen += [(name, p) for p in parts]
        if cursor is None:
            break
    assert seen == [(t, p) for t in names for p in range(counts[t])]
    assert pages == 3
    # a page ending exactly at a topic's end points at the next topic's start
    first = names[0]
    topics, cursor = describe_topic_partitions(broker.bootstrap, names, counts[first])
    assert [n for _, n, _ in topics] == [first] and cursor == (names[1], 0)
    topics, cursor = describe_topic_partitions(broker.bootstrap, [t5], 3, ("nope", 0))
    assert topics == [(42, t5, [])] and cursor is None
    topics, cursor = describe_topic_partitions(broker.bootstrap, ["missing-" + t5], 10)
    assert topics == [(3, "missing-" + t5, [])] and cursor is None


def test_describe_topic_partitions_hides_topics_not_allowed_describe(one_dir):
    """As Metadata: a listing leaves out topics the principal may not
    DESCRIBE; a named one answers TOPIC_AUTHORIZATION_FAILED (29), after the
    allowed ones, and uses none of the partition limit."""
    su = superuser(one_dir)
    create_topic(su.bootstrap, "orders", partitions=2)
    create_topic(su.bootstrap, "secret", partitions=2)
    # the tool also reads the topic's configs
    create_acls(su, binding(ResourceType.TOPIC, "orders", AclOperation.DESCRIBE),
                binding(ResourceType.TOPIC, "orders", AclOperation.DESCRIBE_CONFIGS))
    su.stop()
    b = restricted(one_dir)
    assert describe_topic_partitions(b.bootstrap, [], 10) == ([(0, "orders", [0, 1])], None)
    assert describe_topic_partitions(b.bootstrap, ["secret", "orders"], 2) == (
        [(0, "orders", [0, 1]), (29, "secret", [])], None)
    out = kafka_tool("org.apache.kafka.tools.TopicCommand", b.bootstrap, "--describe").stdout
    assert set(t for t, _ in describe_rows(out)) == {"orders"}


def log_dirs(bootstrap, topics):
    """kafka-log-dirs --describe: its JSON answer."""
    out = kafka_tool("org.apache.kafka.tools.LogDirsCommand", bootstrap, "--describe",
                     "--topic-list", ",".join(topics)).stdout
    line = [ln for ln in out.splitlines() if ln.startswith("{")][-1]
    return json.loads(line)


def test_kafka_log_dirs_names_the_object_store_and_sizes_grow(broker):
    """One virtual log dir per broker, named by the object store URL, with
    each partition's retained bytes: > 0 after producing, larger after more."""
    t = create_topic(broker.bootstrap, unique_topic("dirs"), partitions=2)
    p = producer(broker.bootstrap)
    produce_all(p, t, [{"value": b"x" * 100, "partition": 0} for _ in range(20)])

    def sizes():
        d = log_dirs(broker.bootstrap, [t])
        [b] = d["brokers"]
        [ld] = b["logDirs"]
        # the broker's object store: a directory, or the bucket in the S3 stage
        want = "s3://" if os.environ.get("LS_TEST_OBJECT_STORE") == "s3" else "file://"
        assert ld["error"] is None and ld["logDir"].startswith(want), ld["logDir"]
        return {q["partition"]: q["size"] for q in ld["partitions"]}

    first = sizes()
    assert first[t + "-0"] > 0 and first[t + "-1"] == 0
    produce_all(p, t, [{"value": b"y" * 100, "partition": 0} for _ in range(20)])
    assert sizes()[t + "-0"] > first[t + "-0"]


def test_kafka_log_dirs_needs_cluster_describe(one_dir):
    """As Kafka: DescribeLogDirs needs DESCRIBE on the cluster; without it the
    tool fails with the authorization error, with it it answers."""
    b = restricted(one_dir)
    r = kafka_tool("org.apache.kafka.tools.LogDirsCommand", b.bootstrap, "--describe",
                   check=False)
    assert r.returncode != 0 and "ClusterAuthorizationException" in r.stdout + r.stderr
    b.stop()
    su = superuser(one_dir)
    create_acls(su, binding(ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE))
    su.stop()
    b = restricted(one_dir)
    kafka_tool("org.apache.kafka.tools.LogDirsCommand", b.bootstrap, "--describe")


def test_leader_election_and_reassignment_list_on_a_leaderless_cluster(broker):
    """kafka-leader-election: the preferred leader already leads every
    partition (ELECTION_NOT_NEEDED, Kafka's 'Valid replica already elected');
    kafka-reassign-partitions --list: no reassignment ongoing."""
    t = create_topic(broker.bootstrap, unique_topic("elect"), partitions=2)
    r = kafka_tool("org.apache.kafka.tools.LeaderElectionCommand", broker.bootstrap,
                   "--election-type", "preferred", "--all-topic-partitions")
    assert "Error" not in r.stdout, r.stdout
    r = kafka_tool("org.apache.kafka.tools.LeaderElectionCommand", broker.bootstrap,
                   "--election-type", "preferred", "--topic", t, "--partition", "1")
    assert "Valid replica already elected for partitions %s-1" % t in r.stdout, r.stdout
    r = kafka_tool("org.apache.kafka.tools.reassign.ReassignPartitionsCommand", broker.bootstrap,
                   "--list")
    assert "No partition reassignments found." in r.stdout, r.stdout


def test_leader_election_and_reassignment_list_need_cluster_acls(one_dir):
    """As Kafka: ElectLeaders needs CLUSTER ALTER, ListPartitionReassignments
    CLUSTER DESCRIBE."""
    b = restricted(one_dir)
    r = kafka_tool("org.apache.kafka.tools.LeaderElectionCommand", b.bootstrap,
                   "--election-type", "preferred", "--all-topic-partitions", check=False)
    assert r.returncode != 0 and "Not authorized to perform leader election" in r.stdout
    r = kafka_tool("org.apache.kafka.tools.reassign.ReassignPartitionsCommand", b.bootstrap,
                   "--list", check=False)
    assert r.returncode != 0 and "ClusterAuthorization" in r.stdout + r.stderr


@pytest.mark.parametrize("extra", [[], ["--disallow-replication-factor-change"]])
def test_reassign_partitions_execute_refused_with_the_reason(broker, tmp_path, extra):
    """kafka-reassign-partitions --execute: each partition refused
    (INVALID_REPLICA_ASSIGNMENT) with a message saying why; also when the
    tool forbids a replication factor change (AlterPartitionReassignments
    v1, KIP-860), which it cannot send to a broker serving v0 only."""
    t = create_topic(broker.bootstrap, unique_topic("move"), partitions=1)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": 0, "replicas": [0]}]}))
    r = kafka_tool("org.apache.kafka.tools.reassign.ReassignPartitionsCommand", broker.bootstrap,
                   "--execute", "--reassignment-json-file", str(plan), *extra, check=False)
    assert r.returncode != 0
    assert "every broker serves every partition" in r.stdout + r.stderr, r.stdout + r.stderr


def test_alter_replica_log_dirs_answers_log_dir_not_found(broker):
    """AlterReplicaLogDirs v1 to any path: LOG_DIR_NOT_FOUND (57) per
    partition, as Kafka for a dir the broker does not have."""
    t = create_topic(broker.bootstrap, unique_topic("mvdir"), partitions=2)

    def s16(v):
        return struct.pack(">h", len(v)) + v.encode()
    body = struct.pack(">i", 1) + s16("/elsewhere") + struct.pack(">i", 1) + s16(t)
    body += struct.pack(">iii", 2, 0, 1)
    req = struct.pack(">hhi", 34, 1, 9) + s16("test") + body
    r = _Reader(roundtrip(broker.bootstrap, req))
    assert r.i("i") == 9
    r.i("i")
    assert r.i("i") == 1
    assert r.take(r.i("h")).decode() == t
    assert [(r.i("i"), r.i("h")) for _ in range(r.i("i"))] == [(0, 57), (1, 57)]


# --- kafka-features: UpdateFeatures (key 57) over the fixed feature levels ----

def features(bootstrap, *args, check=True):
    return kafka_tool("org.apache.kafka.tools.FeatureCommand", bootstrap, *args, check=check)


def test_kafka_features_describe_and_updates_that_keep_the_levels(broker):
    """kafka-features describe shows transaction.version finalized at 2;
    updates that leave every level where it is succeed (an upgrade to the
    finalized level, disabling a feature that is not finalized, dry run or
    not)."""
    out = features(broker.bootstrap, "describe").stdout
    [tv] = [ln for ln in out.splitlines() if "Feature: transaction.version" in ln]
    assert "SupportedMinVersion: 0" in tv and "SupportedMaxVersion: 2" in tv, out
    assert "FinalizedVersionLevel: 2" in tv, out
    for dry in ([], ["--dry-run"]):
        r = features(broker.bootstrap, "upgrade", "--feature", "transaction.version=2", *dry)
        verb = "can be" if dry else "was"  # the tool's wording
        assert "transaction.version %s upgraded to 2." % verb in r.stdout, r.stdout
        # ELR means nothing without leaders: never finalized here
        r = features(broker.bootstrap, "disable", "--feature",
                     "eligible.leader.replicas.version", *dry)
        assert "eligible.leader.replicas.version %s disabled." % verb in r.stdout, r.stdout
    assert features(broker.bootstrap, "describe").stdout == out


@pytest.mark.parametrize("args,reason", [
    (["downgrade", "--feature", "transaction.version=1"], "fixed at 2"),
    (["downgrade", "--feature", "transaction.version=1", "--dry-run"], "fixed at 2"),
    (["downgrade", "--unsafe", "--feature", "transaction.version=0"], "fixed at 2"),
    (["upgrade", "--feature", "transaction.version=3"], "only supports levels 0 to 2"),
    (["upgrade", "--metadata", "4.0"], "does not support this feature"),
    (["upgrade", "--feature", "eligible.leader.replicas.version=1"],
     "does not support this feature"),
])
def test_kafka_features_refuses_what_it_cannot_apply(broker, args, reason):
    """Any other level is refused (INVALID_UPDATE_VERSION, whose code the
    v1 test below checks) with a reason naming the feature, never accepted
    and ignored: the levels stay."""
    before = features(broker.bootstrap, "describe").stdout
    r = features(broker.bootstrap, *args, check=False)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "No feature was updated" in out and reason in out, out
    assert features(broker.bootstrap, "describe").stdout == before


def update_features_v1(bootstrap, updates, validate_only=False):
    """One UpdateFeatures v1 round trip: (error, message, [(feature, error)])."""
    body = struct.pack(">i", 60000) + _uvarint(len(updates) + 1)
    body += b"".join(_cstr(f) + struct.pack(">hb", level, utype) + b"\0"
                     for f, level, utype in updates)
    body += struct.pack(">?", validate_only) + b"\0"
    req = struct.pack(">hhih", 57, 1, 11, 4) + b"test" + b"\0" + body
    r = _Reader(roundtrip(bootstrap, req))
    assert r.i("i") == 11
    r.tags()
    r.i("i")  # throttle
    err, msg = r.i("h"), r.string()
    results = []
    for _ in range(r.uvarint() - 1):
        results.append((r.string(), r.i("h")))
        r.string()
        r.tags()
    return err, msg, results


def test_update_features_v1_all_or_nothing_with_per_feature_results(broker):
    """v1: a success lists each feature with no error; one update that
    cannot apply fails the whole request (95, INVALID_UPDATE_VERSION) with no
    results, as Kafka's controller; an unknown upgrade type is one."""
    elr = "eligible.leader.replicas.version"
    assert update_features_v1(broker.bootstrap, [("transaction.version", 2, 1),
                                                 (elr, 0, 2)]) == (
        0, None, [("transaction.version", 0), (elr, 0)])
    err, msg, results = update_features_v1(broker.bootstrap, [("transaction.version", 2, 1),
                                                              ("transaction.version", 1, 2)])
    assert (err, results) == (95, []) and "transaction.version" in msg, msg
    err, msg, results = update_features_v1(broker.bootstrap, [("transaction.version", 2, 7)])
    assert (err, results) == (95, []) and "upgrade type 7" in msg, msg


def test_update_features_needs_cluster_alter(one_dir):
    """As Kafka: UpdateFeatures needs ALTER on the cluster."""
    b = restricted(one_dir)
    r = features(b.bootstrap, "upgrade", "--feature", "transaction.version=2", check=False)
    assert r.returncode != 0 and "Cluster authorization failed" in r.stdout, r.stdout


# --- kafka-get-offsets and kafka-delete-records ---------------------------------

def test_kafka_get_offsets_and_delete_records(broker, tmp_path):
    """kafka-get-offsets (GetOffsetShell) prints each partition's latest and
    earliest offsets; kafka-delete-records (DeleteRecordsCommand) moves a
    partition's start, which kafka-get-offsets then shows."""
    t = create_topic(broker.bootstrap, unique_topic("getoff"), partitions=2)
    produce_all(producer(broker.bootstrap), t,
                [{"partition": p, "value": b"v"} for p in (0, 1) for _ in range(3 + 2 * p)])

    def offsets(time_spec):
        out = kafka_tool("org.apache.kafka.tools.GetOffsetShell", broker.bootstrap,
                         "--topic", t, "--time", time_spec).stdout
        return sorted(line.strip() for line in out.splitlines() if line.startswith(t + ":"))

    assert offsets("-1") == ["%s:0:3" % t, "%s:1:5" % t]
    assert offsets("-2") == ["%s:0:0" % t, "%s:1:0" % t]
    spec = tmp_path / "delete.json"
    spec.write_text(json.dumps({"version": 1,
                                "partitions": [{"topic": t, "partition": 1, "offset": 4}]}))
    out = kafka_tool("org.apache.kafka.tools.DeleteRecordsCommand", broker.bootstrap,
                     "--offset-json-file", str(spec)).stdout
    assert "partition: %s-1\tlow_watermark: 4" % t in out, out
    assert offsets("-2") == ["%s:0:0" % t, "%s:1:4" % t]


# --- ListConfigResources (key 74, KIP-1142) ------------------------------------

# 4.3.1: the Connect/Streams jars' client (.cache/java/apps); 4.4.0: the tools' and the tests'
CLIENT_LIBS = {"4.3.1": os.path.join(lsbroker.ROOT, ".cache", "java", "apps"),
               "4.4.0": os.path.join(lsbroker.ROOT, ".cache", "java", "lib")}


@pytest.fixture(scope="module", params=sorted(CLIENT_LIBS))
def admin_calls(request, tmp_path_factory):
    """run(bootstrap, call, *args): AdminCalls.java on Kafka's Admin client
    (4.3.1 and 4.4.0)."""
    out = str(tmp_path_factory.mktemp("admin_calls"))
    cp = os.path.join(CLIENT_LIBS[request.param], "*")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java", "admin",
                       "AdminCalls.java")
    r = subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", out, src],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr

    def run(bootstrap, *args):
        r = subprocess.run(JVM + ["-cp", out + os.pathsep + cp, "AdminCalls", bootstrap]
                           + list(args), capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout.splitlines()
    return run


def test_list_config_resources_names_topics_brokers_and_loggers(broker, admin_calls):
    """Admin.listConfigResources: every topic, this broker as BROKER and
    BROKER_LOGGER (all types when none is named, in Kafka's order); this
    broker has no group configs nor client-metrics subscriptions, so those
    list none (test_client_telemetry.py lists subscriptions)."""
    t = create_topic(broker.bootstrap, unique_topic("lcr"), partitions=1)
    rows = admin_calls(broker.bootstrap, "list-config-resources")
    assert "TOPIC " + t in rows, rows
    node = [r.split()[1] for r in rows if r.startswith("BROKER ")]
    assert len(node) == 1 and rows.index("BROKER_LOGGER " + node[0]) < rows.index(
        "BROKER " + node[0]) < rows.index("TOPIC " + t), rows
    assert all(r.split()[0] in ("TOPIC", "BROKER", "BROKER_LOGGER") for r in rows), rows
    topics = admin_calls(broker.bootstrap, "list-config-resources", "TOPIC")
    assert topics == sorted(topics) and "TOPIC " + t in topics
    assert all(r.startswith("TOPIC ") for r in topics), topics
    assert admin_calls(broker.bootstrap, "list-config-resources", "GROUP",
                       "CLIENT_METRICS") == []


def list_config_resources(bootstrap, version, types=()):
    """One ListConfigResources round trip: (error, [(type, name)]); v0 has
    no types and answers none (client metrics, type 16)."""
    body = (_uvarint(len(types) + 1) + bytes(t & 0xFF for t in types)) if version else b""
    req = struct.pack(">hhih", 74, version, 13, 4) + b"test" + b"\0" + body + b"\0"
    r = _Reader(roundtrip(bootstrap, req))
    assert r.i("i") == 13
    r.tags()
    r.i("i")  # throttle
    err, rows = r.i("h"), []
    for _ in range(r.uvarint() - 1):
        name = r.string()
        rows.append((r.i("b") if version else 16, name))
        r.tags()
    return err, rows


def test_list_config_resources_v0_and_types_kafka_does_not_list(broker):
    """v0 (ListClientMetricsResources) lists client-metrics subscriptions:
    none; a type Kafka does not list fails the whole request with
    UNSUPPORTED_VERSION (35), even beside a listed one; a type named twice
    lists once."""
    t = create_topic(broker.bootstrap, unique_topic("lcrraw"), partitions=1)
    assert list_config_resources(broker.bootstrap, 0) == (0, [])
    assert list_config_resources(broker.bootstrap, 1, [2, 64]) == (35, [])
    assert list_config_resources(broker.bootstrap, 1, [0]) == (35, [])
    err, rows = list_config_resources(broker.bootstrap, 1, [2, 2])
    assert err == 0 and rows.count((2, t)) == 1


def test_kafka_configs_describes_client_metrics(broker):
    """kafka-configs --describe --entity-type client-metrics lists the
    subscriptions through ListConfigResources: none on a new broker, and no
    error."""
    r = kafka_tool("org.apache.kafka.tools.ConfigCommand", broker.bootstrap, "--describe",
                   "--entity-type", "client-metrics")
    assert r.stdout.strip() == "", r.stdout


def test_list_config_resources_needs_cluster_describe_configs(one_dir, admin_calls):
    """As Kafka: DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED."""
    b = restricted(one_dir)
    [row] = admin_calls(b.bootstrap, "list-config-resources", "TOPIC")
    assert row.startswith("ERROR ClusterAuthorizationException"), row


# --- DescribeCluster (key 60) v1: EndpointType (KIP-919) -----------------------

def describe_cluster(bootstrap, endpoint_type):
    """One DescribeCluster v1 round trip: (error, endpoint type, brokers)."""
    body = b"\0" + struct.pack(">b", endpoint_type) + b"\0"
    req = struct.pack(">hhih", 60, 1, 17, 4) + b"test" + b"\0" + body
    r = _Reader(roundtrip(bootstrap, req))
    assert r.i("i") == 17
    r.tags()
    r.i("i")  # throttle
    err = r.i("h")
    r.string()  # message
    etype = r.i("b")
    r.string()  # cluster id
    r.i("i")  # controller id
    brokers = []
    for _ in range(r.uvarint() - 1):
        brokers.append(r.i("i"))
        r.string(), r.i("i"), r.string()
        r.tags()
    return err, etype, brokers


def test_describe_cluster_endpoint_types_answer_as_kafka(broker):
    """As Kafka's broker: brokers are listed; controllers (2) are
    MISMATCHED_ENDPOINT_TYPE (114; this used to answer 119,
    INVALID_REGISTRATION), a type Kafka does not know
    UNSUPPORTED_ENDPOINT_TYPE (115), both without brokers."""
    err, etype, brokers = describe_cluster(broker.bootstrap, 1)
    assert (err, etype) == (0, 1) and len(brokers) == 1
    assert describe_cluster(broker.bootstrap, 2) == (114, 1, [])
    assert describe_cluster(broker.bootstrap, 0) == (115, 1, [])
    assert describe_cluster(broker.bootstrap, 5) == (115, 1, [])


def test_bootstrap_controller_to_a_broker_names_the_mismatch(broker):
    """kafka-cluster cluster-id --bootstrap-controller pointed at a broker
    fails as it does against Kafka's broker: MismatchedEndpointTypeException."""
    cmd = JVM + ["-cp", os.path.join(TOOLS_LIB, "*"), "org.apache.kafka.tools.ClusterTool",
                 "cluster-id", "--bootstrap-controller", broker.bootstrap]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "MismatchedEndpointTypeException" in out, out


# --- README's table of Kafka APIs ----------------------------------------------

def api_versions(bootstrap):
    """ApiVersions v3: {key: (min, max)} as advertised."""
    body = _cstr("test") + _cstr("1") + b"\0"
    req = struct.pack(">hhih", 18, 3, 5, 4) + b"test" + b"\0" + body
    r = _Reader(roundtrip(bootstrap, req))
    assert r.i("i") == 5 and r.i("h") == 0  # header v0, no error
    out = {}
    for _ in range(r.uvarint() - 1):
        key, lo, hi = r.i("h"), r.i("h"), r.i("h")
        r.tags()
        out[key] = (lo, hi)
    return out


def test_readme_api_table_is_what_api_versions_advertises(broker):
    """Every API the broker advertises is a row of README's table with its
    versions, and the table lists no other (Produce's row gives the versions
    served, 3+, where ApiVersions says 0 for librdkafka's sake)."""
    text = open(os.path.join(lsbroker.ROOT, "README.md")).read()
    table = text.split("<!-- api-table: begin -->")[1].split("<!-- api-table: end -->")[0]
    rows = {}
    for ln in table.splitlines():
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].isdigit():
            lo, hi = cells[2].split("-")
            rows[int(cells[0])] = (int(lo), int(hi))
    advertised = api_versions(broker.bootstrap)
    assert advertised[0] == (0, rows[0][1]) and rows[0][0] == 3
    advertised[0] = rows[0]
    assert rows == advertised
