"""Authorization (authorizer.class.name = Kafka's StandardAuthorizer) with
real clients.

Until TLS/SASL set principals every client is User:ANONYMOUS, so a "super
user" broker is one started with super.users=User:ANONYMOUS over the same
data dir (or the same etcd prefix), and a restricted broker one whose
super.users names someone else. The matrix: a plain client on the
restricted broker is denied every API with Kafka's error and sees no topics;
then ACLs are granted one by one (topic READ, WRITE, group READ, PREFIXED, a
host filter, DENY beating ALLOW, the "*" wildcard) and each API flips.
Kafka's own AclCommand adds, lists and removes bindings; three brokers over
one etcd prefix enforce an ACL created (and removed) through one of them.
"""

import os
import re
import socket
import struct
import subprocess
import uuid

import pytest
from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   ConfigResource, ConfigEntry, AlterConfigOpType, NewPartitions,
                                   NewTopic, ResourcePatternType, ResourceType, AdminClient,
                                   OffsetSpec)

import lsbroker

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


AUTHZ = "--authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANON = "User:ANONYMOUS"
TIMEOUT = 30


def admin(b):
    return AdminClient({"bootstrap.servers": b.bootstrap})


def result(future):
    """The future's value, or the KafkaError code it failed with."""
    try:
        return future.result(timeout=TIMEOUT)
    except KafkaException as e:
        return e.args[0].code()


def code_of(future):
    r = result(future)
    return r if isinstance(r, int) else KafkaError.NO_ERROR


def topics_listed(b):
    md = admin(b).list_topics(timeout=TIMEOUT)
    return sorted(t for t in md.topics if not t.startswith("__"))


def topic_error(b, topic):
    md = admin(b).list_topics(topic=topic, timeout=TIMEOUT)
    err = md.topics[topic].error
    return err.code() if err else KafkaError.NO_ERROR


def produce_error(b, topic, client_errors=None, **conf):
    """The delivery error of one record (NO_ERROR when it was written);
    client_errors (a list) receives the codes of the client's error_cb
    (an idempotent producer's refused InitProducerId arrives there)."""
    c = {"bootstrap.servers": b.bootstrap, "message.timeout.ms": 20000}
    if client_errors is not None:
        c["error_cb"] = lambda err: client_errors.append(err.code())
    c.update(conf)
    p = Producer(c)
    out = []
    p.produce(topic, b"v", on_delivery=lambda err, msg: out.append(err))
    p.flush(TIMEOUT)
    assert out, "no delivery report"
    if client_errors is not None and out[0]:
        # the producer id is asked for on its own schedule: await its answer
        for _ in range(100):
            if client_errors:
                break
            try:
                p.poll(0.1)
            except KafkaException as e:  # a fatal error is raised, not (only) reported
                client_errors.append(e.args[0].code())
    return out[0].code() if out[0] else KafkaError.NO_ERROR


def fetch(b, topic, n_expected=None):
    """Reads partition 0 from the start with assign(): the records' values,
    or the first error code the consumer reports about the topic (librdkafka
    also looks up the coordinator of the group.id it insists on; a denial
    of that group is no answer about the topic)."""
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "unused-" + uuid.uuid4().hex[:6],
                  "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        vals = []
        for _ in range(300):
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    if n_expected is None or len(vals) >= n_expected:
                        return vals
                    continue
                if m.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                    continue  # the consumer's own (unused) group: not what is asked
                return m.error().code()
            vals.append(m.value())
        raise AssertionError("fetch of %s neither ended nor failed" % topic)
    finally:
        c.close()


def binding(rtype, name, op, perm=AclPermissionType.ALLOW, pattern=ResourcePatternType.LITERAL,
            principal=ANON, host="*"):
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def create_acls(b, *bindings):
    a = admin(b)  # kept until the results are in: a destroyed client fails its futures
    fs = a.create_acls(list(bindings), request_timeout=TIMEOUT)
    for f in fs.values():
        f.result(timeout=TIMEOUT)


def delete_acls(b, *filters):
    a = admin(b)
    fs = a.delete_acls(list(filters), request_timeout=TIMEOUT)
    return [f.result(timeout=TIMEOUT) for f in fs.values()]


@pytest.fixture
def one_dir(tmp_path, request):
    """make(*args): a broker over the test's one data dir (stop the previous
    one first: brokers here take turns on it). Every broker made is checked
    at teardown: exit code 0 on SIGTERM, no ERROR or sanitizer lines."""
    made = []
    # one object store too (on S3 every broker would otherwise get its own prefix)
    store = lsbroker.shared_object_store_url("acls", str(tmp_path / "objects"))

    def make(*args):
        b = lsbroker.Broker(str(tmp_path / "data"), str(tmp_path / "logs"),
                            ["--object.store.url=" + store] + list(args),
                            name="broker%d" % (len(made) + 1))
        made.append(b)
        request.node._ls_brokers = made
        return b.start()
    yield make
    failures = [f for b in made for f in b.final_check()]
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)


def restricted(make, *extra):
    """A broker with the authorizer on where the test's client is no super user."""
    return make(AUTHZ, "--super.users=User:admin", *extra)


def superuser(make, *extra):
    return make(AUTHZ, "--super.users=User:admin;" + ANON, *extra)


def seed(b):
    """Topics, three records in "orders" and a committed offset of group g1."""
    a = admin(b)
    fs = a.create_topics([NewTopic(t, 1) for t in ("orders", "fin-ledger", "fin-audit", "other")])
    for f in fs.values():
        f.result(timeout=TIMEOUT)
    p = Producer({"bootstrap.servers": b.bootstrap})
    for t in ("orders", "fin-ledger", "fin-audit"):
        for i in range(3):
            p.produce(t, b"%s-%d" % (t.encode(), i))
    assert p.flush(TIMEOUT) == 0
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g1", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition("orders", 0, 1)], asynchronous=False)
    c.close()


# --------------------------------------------------------------- matrix


def test_plain_client_denied_everything_then_acls_flip_each_api(one_dir):
    su = superuser(one_dir)
    seed(su)
    su.stop()

    # -- no ACLs: everything denied, nothing visible
    b = restricted(one_dir)
    a = admin(b)
    assert topics_listed(b) == []
    assert topic_error(b, "orders") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_error(b, "orders") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # librdkafka does not fetch a topic Metadata hides: ask Fetch directly
    assert raw_fetch_error(b, "orders") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert code_of(a.create_topics([NewTopic("new-topic", 1)])["new-topic"]) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert code_of(a.delete_topics(["orders"])["orders"]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert code_of(a.create_partitions([NewPartitions("orders", 2)])["orders"]) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    tres = ConfigResource(ResourceType.TOPIC, "orders")
    assert code_of(a.describe_configs([tres])[tres]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    bres = ConfigResource(ResourceType.BROKER, "0")  # broker.id 0
    assert code_of(a.describe_configs([bres])[bres]) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    alter = ConfigResource(ResourceType.TOPIC, "orders", incremental_configs=[
        ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
    assert code_of(a.incremental_alter_configs([alter])[alter]) == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert raw_list_offsets_error(b, "orders") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    groups = a.list_consumer_groups(request_timeout=TIMEOUT).result(timeout=TIMEOUT)
    assert [g.group_id for g in groups.valid] == []
    assert code_of(a.describe_consumer_groups(["g1"])["g1"]) == \
        KafkaError.GROUP_AUTHORIZATION_FAILED
    assert code_of(a.delete_consumer_groups(["g1"])["g1"]) == KafkaError.GROUP_AUTHORIZATION_FAILED
    from confluent_kafka import ConsumerGroupTopicPartitions
    off = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g1")])
    assert code_of(off["g1"]) == KafkaError.GROUP_AUTHORIZATION_FAILED
    # ACL administration needs ALTER / DESCRIBE on the cluster
    acl = binding(ResourceType.TOPIC, "orders", AclOperation.READ)
    assert code_of(a.create_acls([acl])[acl]) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    anyf = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                            AclOperation.ANY, AclPermissionType.ANY)
    assert raw_describe_acls_error(b) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert code_of(a.delete_acls([anyf])[anyf]) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    # idempotent and transactional producers
    errs = []
    produce_error(b, "orders", errs, **{"enable.idempotence": True})
    assert KafkaError.CLUSTER_AUTHORIZATION_FAILED in errs, errs
    tx = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "tx-1"})
    with pytest.raises(KafkaException) as ei:
        tx.init_transactions(TIMEOUT)
    assert ei.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    # every denial is audited: principal, host, operation, resource
    log = b.log_text()
    assert re.search(r"\[audit\] DENIED principal=User:ANONYMOUS host=127\.0\.0\.1 "
                     r"operation=READ resource=TOPIC:orders api=Fetch", log), log[-3000:]
    assert "resource=GROUP:g1" in log and "resource=CLUSTER:kafka-cluster" in log
    b.stop()

    # -- let ANONYMOUS manage ACLs (ALTER on the cluster): nothing else yet
    su = superuser(one_dir)
    create_acls(su, binding(ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER))
    assert "ACL created by principal=User:ANONYMOUS" in su.log_text()
    su.stop()

    b = restricted(one_dir)
    assert topics_listed(b) == []

    # topic DESCRIBE: listed, but Fetch is refused (the consumer sees it)
    create_acls(b, binding(ResourceType.TOPIC, "orders", AclOperation.DESCRIBE))
    assert topics_listed(b) == ["orders"]
    assert fetch(b, "orders") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    a = admin(b)
    tp = TopicPartition("orders", 0)
    lo = a.list_offsets({tp: OffsetSpec.latest()}, request_timeout=TIMEOUT)
    assert result(lo[tp]).offset == 3  # ListOffsets needs DESCRIBE only
    dr = a.delete_records([TopicPartition("orders", 0, 1)], request_timeout=TIMEOUT)
    assert code_of(list(dr.values())[0]) == KafkaError.TOPIC_AUTHORIZATION_FAILED  # DELETE

    # topic READ: the topic is listed and readable, not writable
    create_acls(b, binding(ResourceType.TOPIC, "orders", AclOperation.READ))
    assert topics_listed(b) == ["orders"]
    assert fetch(b, "orders", 3) == [b"orders-0", b"orders-1", b"orders-2"]
    assert produce_error(b, "orders") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert re.search(r"\[audit\] DENIED principal=User:ANONYMOUS host=127\.0\.0\.1 "
                     r"operation=WRITE resource=TOPIC:orders api=Produce", b.log_text())

    # WRITE
    create_acls(b, binding(ResourceType.TOPIC, "orders", AclOperation.WRITE))
    assert produce_error(b, "orders") == KafkaError.NO_ERROR
    # idempotent producer: WRITE on some topic is enough (Kafka's rule)
    assert produce_error(b, "orders", **{"enable.idempotence": True}) == KafkaError.NO_ERROR

    # group READ: offsets of g1 become readable
    a = admin(b)
    off = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g1")])
    assert code_of(off["g1"]) == KafkaError.GROUP_AUTHORIZATION_FAILED
    create_acls(b, binding(ResourceType.GROUP, "g1", AclOperation.READ))
    got = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g1")])["g1"].result(
        timeout=TIMEOUT)
    assert [(p.topic, p.offset) for p in got.topic_partitions] == [("orders", 1)]

    # a subscribed consumer of g1 joins, reads and commits (group READ + topic READ)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g1",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.subscribe(["orders"])
    m = None
    for _ in range(150):
        m = c.poll(0.2)
        if m is not None and not m.error():
            break
    assert m is not None and not m.error() and m.value() == b"orders-1", m and m.error()
    c.commit(message=m, asynchronous=False)
    c.close()

    # transactional id WRITE: a transactional producer starts and commits
    tx = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "tx-1"})
    with pytest.raises(KafkaException) as ei:
        tx.init_transactions(TIMEOUT)
    assert ei.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    create_acls(b, binding(ResourceType.TRANSACTIONAL_ID, "tx-1", AclOperation.WRITE))
    tx = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "tx-1"})
    tx.init_transactions(TIMEOUT)
    tx.begin_transaction()
    tx.produce("orders", b"in-tx")
    tx.commit_transaction(TIMEOUT)

    # PREFIXED: every fin-* topic, and not "other"
    create_acls(b, binding(ResourceType.TOPIC, "fin-", AclOperation.READ,
                           pattern=ResourcePatternType.PREFIXED))
    assert topics_listed(b) == ["fin-audit", "fin-ledger", "orders"]
    assert fetch(b, "fin-ledger", 3) == [b"fin-ledger-0", b"fin-ledger-1", b"fin-ledger-2"]

    # host filter: a binding for another address does not apply
    create_acls(b, binding(ResourceType.TOPIC, "other", AclOperation.WRITE, host="10.9.9.9"))
    assert produce_error(b, "other") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    create_acls(b, binding(ResourceType.TOPIC, "other", AclOperation.WRITE, host="127.0.0.1"))
    assert produce_error(b, "other") == KafkaError.NO_ERROR

    # DENY beats ALLOW; a DENY of READ leaves DESCRIBE (still listed)
    create_acls(b, binding(ResourceType.TOPIC, "fin-audit", AclOperation.READ,
                           perm=AclPermissionType.DENY))
    assert fetch(b, "fin-audit") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert fetch(b, "fin-ledger", 3) == [b"fin-ledger-0", b"fin-ledger-1", b"fin-ledger-2"]
    assert "fin-audit" in topics_listed(b)

    # DescribeAcls lists what was granted, grouped as Kafka groups it
    listed = result(a.describe_acls(AclBindingFilter(
        ResourceType.TOPIC, "fin-audit", ResourcePatternType.MATCH, None, None, AclOperation.ANY,
        AclPermissionType.ANY)))
    assert sorted((x.name, x.resource_pattern_type.name, x.permission_type.name)
                  for x in listed) == [("fin-", "PREFIXED", "ALLOW"), ("fin-audit", "LITERAL", "DENY")]

    # wildcard: DESCRIBE on every topic for every user
    create_acls(b, binding(ResourceType.TOPIC, "*", AclOperation.DESCRIBE, principal="User:*"))
    assert topics_listed(b) == ["fin-audit", "fin-ledger", "orders", "other"]

    # DeleteAcls: removing the prefixed READ takes fin-ledger's reads away
    removed = delete_acls(b, AclBindingFilter(ResourceType.TOPIC, "fin-",
                                              ResourcePatternType.PREFIXED, None, None,
                                              AclOperation.ANY, AclPermissionType.ANY))
    assert [(x.name, x.operation.name) for x in removed[0]] == [("fin-", "READ")]
    assert fetch(b, "fin-ledger") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert re.search(r"\[audit\] ACL deleted by principal=User:ANONYMOUS host=127\.0\.0\.1: "
                     r"resource=TOPIC:PREFIXED:fin- principal=User:ANONYMOUS host=\* "
                     r"operation=READ permission=ALLOW", b.log_text())


def test_acl_requests_kafka_refuses(one_dir):
    """Kafka's validation: a bad binding is INVALID_REQUEST for that creation only."""
    su = superuser(one_dir)
    a = admin(su)
    bad = binding(ResourceType.BROKER, "not-the-cluster", AclOperation.ALTER)
    good = binding(ResourceType.TOPIC, "t", AclOperation.READ)
    fs = a.create_acls([bad, good])
    assert code_of(fs[bad]) == KafkaError.INVALID_REQUEST
    assert code_of(fs[good]) == KafkaError.NO_ERROR


def test_authorizer_off_acl_apis_answer_security_disabled(broker):
    a = admin(broker)
    assert raw_describe_acls_error(broker) == KafkaError.SECURITY_DISABLED
    acl = binding(ResourceType.TOPIC, "t", AclOperation.READ)
    assert code_of(a.create_acls([acl])[acl]) == KafkaError.SECURITY_DISABLED
    # and nothing else changed: a plain client produces, lists, reads
    assert produce_error(broker, "plain") == KafkaError.NO_ERROR
    assert "plain" in topics_listed(broker)
    assert fetch(broker, "plain", 1) == [b"v"]


def test_unknown_authorizer_class_refused_at_start(tmp_path):
    b = lsbroker.Broker(str(tmp_path / "data"), str(tmp_path / "logs"),
                        ["--authorizer.class.name=com.example.MyAuthorizer"])
    with pytest.raises(lsbroker.BrokerError) as ei:
        b.start()
    assert b.exit_codes and b.exit_codes[-1] != 0
    assert re.search(r"authorizer\.class\.name: 'com\.example\.MyAuthorizer' is not supported",
                     str(ei.value)), str(ei.value)


def test_allow_everyone_if_no_acl_found(one_dir):
    """As Kafka: with no ACL applying, allowed; an ACL that applies decides."""
    b = restricted(one_dir, "--allow.everyone.if.no.acl.found=true")
    assert produce_error(b, "open") == KafkaError.NO_ERROR
    assert fetch(b, "open", 1) == [b"v"]
    # CreateAcls itself is allowed: no ACL names the cluster yet
    create_acls(b, binding(ResourceType.TOPIC, "open", AclOperation.WRITE,
                           perm=AclPermissionType.DENY))
    assert produce_error(b, "open") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert fetch(b, "open", 1) == [b"v"]          # READ: still no ACL applies
    assert produce_error(b, "elsewhere") == KafkaError.NO_ERROR
    # an ALLOW for someone else does not take it away from ANONYMOUS
    create_acls(b, binding(ResourceType.TOPIC, "elsewhere", AclOperation.WRITE,
                           principal="User:bob"))
    assert produce_error(b, "elsewhere") == KafkaError.NO_ERROR


# --------------------------------------------------------------- AclCommand


def acl_command(b, *args):
    cp = os.path.join(lsbroker.ROOT, ".cache", "java", "tools", "*")
    r = subprocess.run(["java", "-cp", cp, "org.apache.kafka.tools.AclCommand",
                        "--bootstrap-server", b.bootstrap] + list(args),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_kafka_acl_command_adds_lists_removes(one_dir):
    su = superuser(one_dir)
    a = admin(su)
    a.create_topics([NewTopic("cmd-t", 1)])["cmd-t"].result(timeout=TIMEOUT)
    create_acls(su, binding(ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER))
    su.stop()
    b = restricted(one_dir)
    assert topic_error(b, "cmd-t") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    acl_command(b, "--add", "--allow-principal", ANON, "--operation", "Read", "--topic", "cmd-t")
    out = acl_command(b, "--list", "--topic", "cmd-t")
    assert "principal=User:ANONYMOUS" in out and "operation=READ" in out, out
    assert topic_error(b, "cmd-t") == KafkaError.NO_ERROR
    acl_command(b, "--remove", "--force", "--allow-principal", ANON, "--operation", "Read",
                "--topic", "cmd-t")
    assert "operation=READ" not in acl_command(b, "--list", "--topic", "cmd-t")
    assert topic_error(b, "cmd-t") == KafkaError.TOPIC_AUTHORIZATION_FAILED


# ------------------------------------------------------------- three brokers


def _str(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def raw_request(host, port, api_key, version, body):
    """One request (non-flexible header v1) to exactly this broker: the
    response past its correlation id."""
    req = struct.pack(">hhi", api_key, version, 7) + _str("acl-test") + body
    with socket.create_connection((host, port), timeout=TIMEOUT) as s:
        s.sendall(struct.pack(">i", len(req)) + req)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            assert chunk, "connection closed"
            buf += chunk
    return buf[8:]


def raw_describe_acls_error(b):
    """DescribeAcls v1 (any binding): its top-level error code. librdkafka
    drops that error (an empty list instead), so the test asks itself."""
    body = struct.pack(">bhbhhbb", 1, -1, 1, -1, -1, 1, 1)
    r = raw_request(b.host, b.port, 29, 1, body)
    return struct.unpack(">h", r[4:6])[0]


def raw_fetch_error(b, topic):
    """Fetch v4 of partition 0 from offset 0: the partition's error code."""
    body = struct.pack(">iiiib", -1, 0, 1, 1 << 20, 0) + struct.pack(">i", 1) + _str(topic) + \
        struct.pack(">iiqi", 1, 0, 0, 1 << 20)
    r = raw_request(b.host, b.port, 1, 4, body)
    pos = 4 + 4  # throttle, topics count
    pos += 2 + struct.unpack(">h", r[pos:pos + 2])[0]  # topic name
    pos += 4 + 4  # partitions count, partition index
    return struct.unpack(">h", r[pos:pos + 2])[0]


def raw_list_offsets_error(b, topic):
    """ListOffsets v1 (latest) of partition 0: the partition's error code."""
    body = struct.pack(">ii", -1, 1) + _str(topic) + struct.pack(">iiq", 1, 0, -1)
    r = raw_request(b.host, b.port, 2, 1, body)
    pos = 4  # topics count
    pos += 2 + struct.unpack(">h", r[pos:pos + 2])[0]  # topic name
    pos += 4 + 4  # partitions count, partition index
    return struct.unpack(">h", r[pos:pos + 2])[0]


def raw_metadata_errors(host, port, topics):
    """Metadata v1 sent to exactly this broker: {topic: error code}."""
    body = struct.pack(">i", len(topics)) + b"".join(_str(t) for t in topics)
    r, pos = raw_request(host, port, 3, 1, body), 0

    def i16():
        nonlocal pos
        pos += 2
        return struct.unpack(">h", r[pos - 2:pos])[0]

    def i32():
        nonlocal pos
        pos += 4
        return struct.unpack(">i", r[pos - 4:pos])[0]

    def string():
        nonlocal pos
        n = i16()
        if n < 0:
            return None
        pos += n
        return r[pos - n:pos].decode()

    for _ in range(i32()):  # brokers
        i32(), string(), i32(), string()
    i32()  # controller
    out = {}
    for _ in range(i32()):
        err, name = i16(), string()
        pos += 1  # is_internal
        for _ in range(i32()):
            i16(), i32(), i32()
            for _ in range(i32()):
                i32()
            for _ in range(i32()):
                i32()
        out[name] = err
    return out


def test_three_brokers_over_etcd_enforce_an_acl_made_on_one(cluster):
    n1 = cluster.add(AUTHZ, "--super.users=" + ANON)     # where ACLs are made
    others = [cluster.add(AUTHZ, "--super.users=User:admin") for _ in range(2)]  # enforce them
    a = admin(n1)  # admin requests go to the lowest id: node 1
    a.create_topics([NewTopic("shared", 1)])["shared"].result(timeout=TIMEOUT)
    lsbroker.wait_until(lambda: raw_metadata_errors(n1.host, n1.port, ["shared"])["shared"] == 0,
                        TIMEOUT, what="topic on node 1")

    def errors_elsewhere():
        return [raw_metadata_errors(n.host, n.port, ["shared"])["shared"] for n in others]
    assert errors_elsewhere() == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 2
    create_acls(n1, binding(ResourceType.TOPIC, "shared", AclOperation.READ))
    lsbroker.wait_until(lambda: errors_elsewhere() == [0, 0], TIMEOUT,
                        what="nodes 2 and 3 enforcing the ACL made on node 1")
    delete_acls(n1, AclBindingFilter(ResourceType.TOPIC, "shared", ResourcePatternType.LITERAL,
                                     None, None, AclOperation.ANY, AclPermissionType.ANY))
    lsbroker.wait_until(
        lambda: errors_elsewhere() == [KafkaError.TOPIC_AUTHORIZATION_FAILED] * 2, TIMEOUT,
        what="nodes 2 and 3 enforcing the removal")
