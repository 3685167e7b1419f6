"""Topic administration and metadata with confluent-kafka's AdminClient."""

import contextlib
import os
import sqlite3
import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import ConfigResource, NewPartitions, NewTopic, ResourceType

from kafka_util import (DEFAULT_RF, admin, consume, create_topic, produce_all, producer, unique_topic,
                        wait_topic, watermarks)
from lsbroker import wait_until


pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


@pytest.mark.parametrize("rf", sorted({DEFAULT_RF, 1, -1}))
def test_create_topic_any_replication_factor(broker, rf):
    name = unique_topic("rf%d" % rf)
    a = admin(broker.bootstrap)
    fs = a.create_topics([NewTopic(name, num_partitions=3, replication_factor=rf)])
    fs[name].result(30)
    t = wait_topic(broker.bootstrap, name, 3)
    assert sorted(t.partitions) == [0, 1, 2]
    for pm in t.partitions.values():
        assert pm.leader >= 0
        assert pm.error is None


def test_create_existing_topic_fails(broker):
    name = create_topic(broker.bootstrap, unique_topic("dup"))
    _a = admin(broker.bootstrap)
    fs = _a.create_topics([NewTopic(name, 1, DEFAULT_RF)])
    with pytest.raises(KafkaException) as ei:
        fs[name].result(30)
    assert ei.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS


@pytest.mark.parametrize("bad", ["bad/name", "..", "a" * 250, "sp ace"])
def test_create_invalid_topic_name_fails(broker, bad):
    _a = admin(broker.bootstrap)
    fs = _a.create_topics([NewTopic(bad, 1, 1)])
    with pytest.raises(KafkaException) as ei:
        fs[bad].result(30)
    assert ei.value.args[0].code() == KafkaError.TOPIC_EXCEPTION


def test_create_topic_validate_only(broker):
    name = unique_topic("validate")
    _a = admin(broker.bootstrap)
    fs = _a.create_topics([NewTopic(name, 2, DEFAULT_RF)], validate_only=True)
    fs[name].result(30)
    _a = admin(broker.bootstrap)
    md = _a.list_topics(timeout=10)
    assert name not in md.topics


def test_metadata_lists_brokers_and_topics(broker):
    names = [create_topic(broker.bootstrap, unique_topic("md"), partitions=p) for p in (1, 5)]
    _a = admin(broker.bootstrap)
    md = _a.list_topics(timeout=10)
    assert md.brokers, "no brokers in metadata"
    b = next(iter(md.brokers.values()))
    assert (b.host, b.port) == (broker.host, broker.port)
    assert md.cluster_id
    assert len(md.topics[names[0]].partitions) == 1
    assert len(md.topics[names[1]].partitions) == 5
    for pm in md.topics[names[1]].partitions.values():
        assert pm.leader in md.brokers


def test_metadata_topic_ids(broker):
    a = admin(broker.bootstrap)
    n1 = create_topic(broker.bootstrap, unique_topic("tid"))
    n2 = create_topic(broker.bootstrap, unique_topic("tid"))
    d = a.describe_topics(TopicCollection([n1, n2]))
    t1 = d[n1].result(30)
    t2 = d[n2].result(30)
    assert t1.topic_id is not None and t2.topic_id is not None
    s1, s2 = str(t1.topic_id), str(t2.topic_id)
    assert s1 != s2
    assert s1 not in ("", "AAAAAAAAAAAAAAAAAAAAAA")  # the zero UUID
    assert len(t1.partitions) == 1


def test_topic_id_stable_across_restart(broker):
    name = create_topic(broker.bootstrap, unique_topic("tidrestart"))
    _a = admin(broker.bootstrap)
    before = str(_a.describe_topics(TopicCollection([name]))[name].result(30).topic_id)
    broker.restart()
    _a = admin(broker.bootstrap)
    after = str(_a.describe_topics(TopicCollection([name]))[name].result(30).topic_id)
    assert before == after


def test_describe_cluster(broker):
    _a = admin(broker.bootstrap)
    r = _a.describe_cluster().result(30)
    assert r.cluster_id
    assert r.nodes and r.nodes[0].host == broker.host and r.nodes[0].port == broker.port
    # stable across a restart (kept in the metadata store)
    cid = r.cluster_id
    broker.restart()
    _a = admin(broker.bootstrap)
    assert _a.describe_cluster().result(30).cluster_id == cid


def test_describe_configs_topic(broker):
    name = create_topic(broker.bootstrap, unique_topic("cfg"), config={"retention.ms": "3600000"})
    res = ConfigResource(ResourceType.TOPIC, name)
    _a = admin(broker.bootstrap)
    cfg = _a.describe_configs([res])[res].result(30)
    assert "retention.ms" in cfg, sorted(cfg)
    assert cfg["retention.ms"].value == "3600000"
    assert "cleanup.policy" in cfg, sorted(cfg)


def test_describe_configs_topic_defaults(broker):
    name = create_topic(broker.bootstrap, unique_topic("cfgdef"))
    res = ConfigResource(ResourceType.TOPIC, name)
    _a = admin(broker.bootstrap)
    cfg = _a.describe_configs([res])[res].result(30)
    assert cfg["retention.ms"].value == "604800000"
    assert int(cfg["max.message.bytes"].value) > 0 if "max.message.bytes" in cfg else True


def test_describe_configs_unknown_topic(broker):
    res = ConfigResource(ResourceType.TOPIC, unique_topic("nosuch"))
    with pytest.raises(KafkaException) as ei:
        _a = admin(broker.bootstrap)
        _a.describe_configs([res])[res].result(30)
    assert ei.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_create_partitions(broker):
    name = create_topic(broker.bootstrap, unique_topic("grow"), partitions=2)
    produce_all(producer(broker.bootstrap), name, [{"partition": 1, "value": b"old"}])
    a = admin(broker.bootstrap)
    a.create_partitions([NewPartitions(name, 5)])[name].result(30)
    wait_topic(broker.bootstrap, name, 5)
    produce_all(producer(broker.bootstrap), name,
                [{"partition": p, "value": b"new%d" % p} for p in range(5)])
    got = consume(broker.bootstrap, name, list(range(5)))
    assert [m.value() for m in got[1]] == [b"old", b"new1"]
    for p in (0, 2, 3, 4):
        assert [m.value() for m in got[p]] == [b"new%d" % p]
    # shrinking is refused
    with pytest.raises(KafkaException) as ei:
        a.create_partitions([NewPartitions(name, 3)])[name].result(30)
    assert ei.value.args[0].code() == KafkaError.INVALID_PARTITIONS


def test_delete_then_recreate_sees_no_old_data(broker):
    name = create_topic(broker.bootstrap, unique_topic("recreate"), partitions=2)
    produce_all(producer(broker.bootstrap), name,
                [{"partition": i % 2, "value": b"old-%d" % i} for i in range(100)])
    a = admin(broker.bootstrap)
    a.delete_topics([name], operation_timeout=30)[name].result(30)
    deadline = time.monotonic() + 30
    while name in a.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, "deleted topic still listed"
        time.sleep(0.05)
    create_topic(broker.bootstrap, name, partitions=2)
    wm = watermarks(broker.bootstrap, name, [0, 1])
    assert wm == {0: (0, 0), 1: (0, 0)}, wm
    produce_all(producer(broker.bootstrap), name,
                [{"partition": i % 2, "value": b"new-%d" % i} for i in range(10)])
    got = consume(broker.bootstrap, name, [0, 1])
    vals = [m.value() for ms in got.values() for m in ms]
    assert sorted(vals) == sorted(b"new-%d" % i for i in range(10))
    assert [m.offset() for m in got[0]] == list(range(5))


def test_delete_unknown_topic_fails(broker):
    name = unique_topic("nosuch")
    with pytest.raises(KafkaException) as ei:
        _a = admin(broker.bootstrap)
        _a.delete_topics([name])[name].result(30)
    assert ei.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_deleted_topic_survives_restart_as_deleted(broker):
    name = create_topic(broker.bootstrap, unique_topic("delrestart"))
    produce_all(producer(broker.bootstrap), name, [{"value": b"x"}])
    _a = admin(broker.bootstrap)
    _a.delete_topics([name])[name].result(30)
    broker.restart()
    _a = admin(broker.bootstrap)
    assert name not in _a.list_topics(timeout=10).topics


def test_auto_create_topic_on_produce(broker):
    name = unique_topic("auto")
    dl = produce_all(producer(broker.bootstrap), name, [{"value": b"auto-%d" % i} for i in range(5)])
    assert len(dl.acked) == 5
    t = wait_topic(broker.bootstrap, name)
    assert len(t.partitions) == 1  # num.partitions default
    assert [m.value() for m in consume(broker.bootstrap, name, [0])[0]] == [b"auto-%d" % i for i in range(5)]


def test_auto_create_uses_num_partitions(broker_factory):
    b = broker_factory("--num.partitions=4")
    name = unique_topic("auto4")
    produce_all(producer(b.bootstrap), name, [{"value": b"x"}])
    assert len(wait_topic(b.bootstrap, name).partitions) == 4


def test_auto_create_disabled(broker_factory):
    b = broker_factory("--auto.create.topics.enable=false")
    name = unique_topic("noauto")
    p = producer(b.bootstrap, **{"message.timeout.ms": 3000})
    from kafka_util import DeliveryLog
    dl = DeliveryLog()
    p.produce(name, value=b"x", on_delivery=dl)
    p.flush(15)
    assert len(dl.failed) == 1 and not dl.acked
    _a = admin(b.bootstrap)
    assert name not in _a.list_topics(timeout=10).topics


def test_topics_survive_restart(broker):
    names = [create_topic(broker.bootstrap, unique_topic("persist"), partitions=p) for p in (1, 3)]
    broker.restart()
    _a = admin(broker.bootstrap)
    md = _a.list_topics(timeout=10)
    assert len(md.topics[names[0]].partitions) == 1
    assert len(md.topics[names[1]].partitions) == 3


def test_describe_configs_broker(broker):
    md = admin(broker.bootstrap).list_topics(timeout=10)
    node = str(next(iter(md.brokers)))
    res = ConfigResource(ResourceType.BROKER, node)
    _a = admin(broker.bootstrap)
    cfg = _a.describe_configs([res])[res].result(30)
    assert cfg, "no broker configs"


def test_wal_flush_min_interval_defaults_by_store(broker_factory):
    """Issue 29 §9: with flushes at once on s3:// a cluster wrote ~4 KB WAL
    objects (272k PUTs per GB). The default depends on the store (0 on a
    local directory, 200 ms on S3; docs/OBJECT_STORES.md) and DescribeConfigs
    reports the effective value, never the -1 that selects it. -1 undoes the
    suites' own setting (lsbroker.object_store_args) to get the default."""
    b = broker_factory("--wal.flush.min.interval.ms=-1")
    md = admin(b.bootstrap).list_topics(timeout=10)
    res = ConfigResource(ResourceType.BROKER, str(next(iter(md.brokers))))
    a = admin(b.bootstrap)
    cfg = a.describe_configs([res])[res].result(30)
    s3 = os.environ.get("LS_TEST_OBJECT_STORE", "file") == "s3"
    assert cfg["wal.flush.min.interval.ms"].value == ("200" if s3 else "0")
    # an explicit value wins on every store
    b2 = broker_factory("--wal.flush.min.interval.ms=50")
    md = admin(b2.bootstrap).list_topics(timeout=10)
    res = ConfigResource(ResourceType.BROKER, str(next(iter(md.brokers))))
    a2 = admin(b2.bootstrap)
    assert a2.describe_configs([res])[res].result(30)["wal.flush.min.interval.ms"].value == "50"


def test_delete_topic_while_consumer_fetches_and_producer_writes(broker):
    """Deleting a topic under an active consumer (parked fetch) and producer
    hurts neither the broker nor other topics."""
    from confluent_kafka import TopicPartition
    from kafka_util import DeliveryLog, consumer
    victim = create_topic(broker.bootstrap, unique_topic("victim"), partitions=2)
    other = create_topic(broker.bootstrap, unique_topic("other"))
    produce_all(producer(broker.bootstrap), victim, [{"partition": p, "value": b"v"} for p in (0, 1)])
    c = consumer(broker.bootstrap, **{"fetch.wait.max.ms": 2000, "enable.partition.eof": False,
                                      "topic.metadata.refresh.interval.ms": 200})
    p = producer(broker.bootstrap, **{"message.timeout.ms": 5000})
    dl = DeliveryLog()
    try:
        c.assign([TopicPartition(victim, 0, 0), TopicPartition(victim, 1, 0)])
        c.consume(num_messages=10, timeout=1.0)
        for i in range(50):
            p.produce(victim, value=b"during-%d" % i, partition=i % 2, on_delivery=dl)
        _a = admin(broker.bootstrap)
        _a.delete_topics([victim])[victim].result(30)
        for i in range(50):
            try:
                p.produce(victim, value=b"after-%d" % i, partition=i % 2, on_delivery=dl)
            except Exception:  # noqa: BLE001 - the client may already know the topic is gone
                pass
        for _ in range(20):
            c.consume(num_messages=100, timeout=0.1)  # errors expected; must not hang
        p.flush(20)
    finally:
        c.close()
    assert broker.alive()
    produce_all(producer(broker.bootstrap), other, [{"value": b"still fine"}])
    assert [m.value() for m in consume(broker.bootstrap, other, [0])[0]] == [b"still fine"]
    # the producer's later writes may auto-create the topic again (as Kafka
    # does); if so it must not hold the data acknowledged before the delete
    _a = admin(broker.bootstrap)
    t = _a.list_topics(timeout=10).topics.get(victim)
    if t is not None:
        got = consume(broker.bootstrap, victim, sorted(t.partitions))
        assert b"v" not in [m.value() for ms in got.values() for m in ms]


def test_many_topics_in_one_producer_and_consumer(broker):
    """librdkafka packs several topics into one Produce request and one
    Fetch request."""
    topics = [create_topic(broker.bootstrap, unique_topic("multi%d" % i), partitions=2) for i in range(8)]
    p = producer(broker.bootstrap, **{"linger.ms": 50})
    recs = {}
    from kafka_util import DeliveryLog
    dl = DeliveryLog()
    for i in range(800):
        t = topics[i % 8]
        v = b"%s-%d" % (t.encode(), i)
        p.produce(t, value=v, partition=(i // 8) % 2, on_delivery=dl)
        recs.setdefault((t, (i // 8) % 2), []).append(v)
    assert p.flush(30) == 0 and not dl.failed
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition
    from kafka_util import consumer
    c = consumer(broker.bootstrap, **{"enable.partition.eof": False})
    got = {}
    try:
        c.assign([TopicPartition(t, part, OFFSET_BEGINNING) for t in topics for part in (0, 1)])
        deadline = time.monotonic() + 60
        n = 0
        while n < 800:
            assert time.monotonic() < deadline, "read %d of 800" % n
            for m in c.consume(num_messages=1000, timeout=0.2):
                if m.error() is None:
                    got.setdefault((m.topic(), m.partition()), []).append(m.value())
                    n += 1
    finally:
        c.close()
    assert got == recs


def test_data_dir_is_private_whatever_the_umask(broker_factory):
    """Regression (issue 17 §8): the metadata db, objects and tables were
    created with the broker's umask (often 022: readable by every local
    user). Everything under data.dir is now the broker user's alone."""
    import os
    import stat
    old = os.umask(0o022)
    try:
        b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    finally:
        os.umask(old)
    t = create_topic(b.bootstrap, unique_topic("private"),
                     config={"lakestream.table.enabled": "true",
                             "lakestream.table.commit.interval.ms": "1000"})
    from confluent_kafka import Producer
    from kafka_util import produce_all
    produce_all(Producer({"bootstrap.servers": b.bootstrap}), t, [{"value": b"x", "partition": 0}])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not os.path.isdir(
            os.path.join(b.data_dir, "objects", "warehouse")):
        time.sleep(0.2)
    seen = 0
    for root, dirs, files in os.walk(b.data_dir):
        for name in dirs + files:
            path = os.path.join(root, name)
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            assert mode & 0o077 == 0, "%s has mode %o" % (path, mode)
            seen += 1
    assert stat.S_IMODE(os.stat(b.data_dir).st_mode) & 0o077 == 0
    assert os.path.exists(os.path.join(b.data_dir, "meta.db"))
    assert seen >= 1     # with S3 as the object store, only the metadata is local


def test_secret_flag_is_refused_with_a_pointer_to_safe_places(tmp_path):
    import os
    import subprocess
    from lsbroker import binary_path
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}
    r = subprocess.run([binary_path(), "serve", "--data.dir=%s" % tmp_path,
                        "--s3.secret.key=hunter2"], capture_output=True, text=True, timeout=30,
                       env=env)
    assert r.returncode == 2
    assert "secrets are not accepted as command-line flags" in r.stderr
    assert "hunter2" not in r.stderr


def _create_err(a, name, parts):
    try:
        a.create_topics([NewTopic(name, parts, 1)])[name].result(30)
        return None
    except KafkaException as e:
        return e.args[0]


def _grow_err(a, name, total):
    try:
        a.create_partitions([NewPartitions(name, total)])[name].result(30)
        return None
    except KafkaException as e:
        return e.args[0]


def test_partition_limits_refuse_partition_bombs(broker_factory):
    """Regression (issue 17 §3): CreateTopics accepted 2^20 partitions from any
    client (deleting such a topic then starved every request for minutes, and
    its Metadata was too large for librdkafka). max.partitions.per.topic and
    max.partitions (the whole cluster) refuse such requests with a message."""
    b = broker_factory("--max.partitions.per.topic=50", "--max.partitions=100")
    a = admin(b.bootstrap)
    e = _create_err(a, unique_topic("bomb"), 100000)   # the client's own maximum
    assert e.code() == KafkaError.INVALID_PARTITIONS and "max.partitions.per.topic" in e.str()
    e = _create_err(a, unique_topic("big"), 51)
    assert e.code() == KafkaError.INVALID_PARTITIONS
    t1, t2 = unique_topic("lim1"), unique_topic("lim2")
    assert _create_err(a, t1, 50) is None
    assert _create_err(a, t2, 40) is None
    e = _create_err(a, unique_topic("over"), 20)          # 110 > 100
    assert e.code() == KafkaError.POLICY_VIOLATION and "max.partitions=100" in e.str(), e
    e = _grow_err(a, t2, 51)                               # per topic
    assert e.code() == KafkaError.INVALID_PARTITIONS, e
    assert _grow_err(a, t2, 50) is None                    # exactly 100
    e = _grow_err(a, t1, 50) or _create_err(a, unique_topic("one"), 1)
    assert e is not None
    e = _create_err(a, unique_topic("one"), 1)
    assert e.code() == KafkaError.POLICY_VIOLATION, e
    # the default limit refuses a bomb too
    d = broker_factory()
    e = _create_err(admin(d.bootstrap), unique_topic("bomb"), 100000)
    assert e.code() == KafkaError.INVALID_PARTITIONS


@contextlib.contextmanager
def _metadata_store_locked(broker):
    """Holds the broker's SQLite metadata file exclusively (another process's
    write transaction) for the duration."""
    if broker.external or os.environ.get("LS_TEST_META", "sqlite") not in ("", "sqlite"):
        pytest.skip("locks the local SQLite metadata file")
    db = sqlite3.connect(os.path.join(broker.data_dir, "meta.db"), timeout=30)
    db.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        db.rollback()
        db.close()


def _assert_timed_out(call):
    """call() returns an admin future: it must fail REQUEST_TIMED_OUT within
    its 2 s operation timeout (plus slack), not when the store answers."""
    t0 = time.monotonic()
    with pytest.raises(KafkaException) as ei:
        call().result(60)
    took = time.monotonic() - t0
    assert ei.value.args[0].code() == KafkaError.REQUEST_TIMED_OUT, ei.value
    assert took < 4.5, "answered after %.1f s" % took


def test_create_topics_answers_within_its_timeout_when_the_store_is_locked(broker):
    """Regression (issue 17 §9): with the SQLite metadata file held exclusively by
    another process, CreateTopics got no answer for 20 s. It is now answered
    REQUEST_TIMED_OUT (retriable) when its timeoutMs passes."""
    with _metadata_store_locked(broker):
        a = admin(broker.bootstrap)
        name = unique_topic("locked")
        _assert_timed_out(lambda: a.create_topics([NewTopic(name, 1, 1)], operation_timeout=2,
                                                  request_timeout=30)[name])
    # the broker is fine once the lock is gone
    create_topic(broker.bootstrap, unique_topic("afterlock"))


def test_delete_topics_and_create_partitions_answer_within_their_timeout(broker):
    """Issue 17: DeleteTopics and CreatePartitions are bounded by their timeoutMs
    too (REQUEST_TIMED_OUT while the metadata store is locked), and the operation
    completes once the store answers."""
    a = admin(broker.bootstrap)
    grow, gone = unique_topic("grow"), unique_topic("gone")
    create_topic(broker.bootstrap, grow)
    create_topic(broker.bootstrap, gone)
    with _metadata_store_locked(broker):
        _assert_timed_out(lambda: a.create_partitions([NewPartitions(grow, 3)],
                                                      operation_timeout=2,
                                                      request_timeout=30)[grow])
        _assert_timed_out(lambda: a.delete_topics([gone], operation_timeout=2,
                                                  request_timeout=30)[gone])

    # both complete once the store answers
    def done():
        md = a.list_topics(timeout=10)
        return (gone not in md.topics and grow in md.topics
                and len(md.topics[grow].partitions) == 3)
    wait_until(done, 30, what="the deletion and the new partitions")


def test_deleting_a_huge_topic_does_not_stall_other_clients(broker):
    """Issue 17 §3: deleting a topic with thousands of partitions fences them
    a few at a time, so produce and admin calls keep being served meanwhile
    (they used to queue behind every fence on the worker pool)."""
    a = admin(broker.bootstrap)
    big, other = unique_topic("huge"), unique_topic("busy")
    fs = a.create_topics([NewTopic(big, 8000, 1)], operation_timeout=30, request_timeout=60)
    fs[big].result(60)
    create_topic(broker.bootstrap, other)
    p = producer(broker.bootstrap, acks="all", linger_ms=0)
    p.produce(other, b"warm-up")
    assert p.flush(30) == 0
    done = a.delete_topics([big], operation_timeout=60, request_timeout=90)[big]
    worst = 0.0
    for i in range(20):   # produce round trips while the fences run
        t0 = time.monotonic()
        p.produce(other, b"during-%d" % i)
        assert p.flush(30) == 0
        worst = max(worst, time.monotonic() - t0)
    done.result(90)
    print("worst produce round trip during the deletion: %.3f s" % worst)
    assert worst < 2.0, "a produce waited %.1f s behind the deletion" % worst
    assert big not in a.list_topics(timeout=10).topics
