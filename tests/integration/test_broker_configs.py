"""Dynamic broker configs (issue 11 §3): IncrementalAlterConfigs/AlterConfigs on
the default broker resource (empty name, what kafka-configs --entity-type
brokers --entity-default sends) store cluster-wide defaults in the metadata
store; every broker applies them without a restart; DescribeConfigs shows
them with source DYNAMIC_DEFAULT_BROKER_CONFIG. Every other broker setting is
refused per key with a message naming it; a resource naming one broker is
refused (no per-broker layer on a leaderless cluster).

librdkafka and kafka-python refuse the default broker resource, so the alter
goes through kafka_util.alter_broker_defaults (the request by hand); the Java
AdminClient does it too (tests/integration/java, "dynamic_broker_configs")."""

import socket
import time

import pytest
from confluent_kafka import KafkaError, TopicPartition
from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

from kafka_util import (admin, alter_broker_defaults, consumer, create_topic, producer,
                        unique_topic, watermarks)
from lsbroker import wait_until

INVALID_CONFIG, INVALID_REQUEST = 40, 42

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


# key: (value, outcome): "applied" or a substring of the refusal
ROWS = {
    "log.retention.ms": ("3600000", "applied"),
    "log.retention.bytes": ("1073741824", "applied"),
    "message.max.bytes": ("2097152", "applied"),
    "log.message.timestamp.type": ("LogAppendTime", "applied"),
    "log.message.timestamp.before.max.ms": ("86400000", "applied"),
    "log.message.timestamp.after.max.ms": ("60000", "applied"),
    "max.connections": ("5000", "applied"),
    "max.connections.per.ip": ("500", "applied"),
    "num.partitions": ("3", "cannot be changed dynamically"),
    "auto.create.topics.enable": ("false", "cannot be changed dynamically"),
    "log.retention.check.interval.ms": ("1000", "cannot be changed dynamically"),
    "log.cleanup.policy": ("compact", "Unknown or unsupported dynamic broker config"),
    "log.retention.hours": ("1", "Unknown or unsupported dynamic broker config"),
    "no.such.config": ("1", "Unknown or unsupported dynamic broker config"),
}


def _broker_config(bootstrap, node="0"):
    res = ConfigResource(ResourceType.BROKER, node)
    a = admin(bootstrap)  # kept until the result is in
    return a.describe_configs([res])[res].result(30)


def _topic_config(bootstrap, topic):
    res = ConfigResource(ResourceType.TOPIC, topic)
    a = admin(bootstrap)
    return a.describe_configs([res])[res].result(30)


def _ok(bootstrap, configs, **kw):
    [(code, msg)] = alter_broker_defaults(bootstrap, configs, **kw)
    assert code == 0, msg


@pytest.mark.parametrize("key", sorted(ROWS))
def test_every_dynamic_broker_config_is_applied_or_refused(module_broker, key):
    bs = module_broker.bootstrap
    value, outcome = ROWS[key]
    [(code, msg)] = alter_broker_defaults(bs, {key: value})
    if outcome != "applied":
        assert code == INVALID_CONFIG and outcome in msg and key in msg, (code, msg)
        assert key not in _broker_config(bs) or _broker_config(bs)[key].source != \
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
        return
    assert code == 0, msg
    e = _broker_config(bs)[key]
    assert (e.value, e.source, e.is_read_only) == \
        (value, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value, False)
    _ok(bs, {key: None})
    e = _broker_config(bs)[key]
    assert e.source != ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value and e.value != value


def test_bad_values_per_broker_resources_and_validate_only(module_broker):
    bs = module_broker.bootstrap
    for key, bad in (("message.max.bytes", "lots"), ("log.message.timestamp.type", "Now"),
                     ("log.retention.ms", "-2"), ("max.connections.per.ip", "0"),
                     ("message.max.bytes", str(1 << 40))):
        [(code, msg)] = alter_broker_defaults(bs, {key: bad})
        assert code == INVALID_CONFIG and key in msg and bad in msg, (key, code, msg)
    [(code, msg)] = alter_broker_defaults(bs, {"log.retention.ms": "1000"}, resource_name="0")
    assert code == INVALID_REQUEST and "--entity-default" in msg, msg
    _ok(bs, {"log.retention.ms": "1000"}, validate_only=True)
    assert _broker_config(bs)["log.retention.ms"].source != \
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value


def test_retention_default_applies_live_and_survives_restart(broker_factory):
    b = broker_factory("--log.retention.check.interval.ms=100", "--compaction.interval.ms=200",
                       "--wal.gc.grace.ms=0")
    plain = create_topic(b.bootstrap, unique_topic("dyn-ret"))
    kept = create_topic(b.bootstrap, unique_topic("dyn-kept"), config={"retention.ms": "-1"})
    p = producer(b.bootstrap)
    for t in (plain, kept):
        for i in range(20):
            p.produce(t, value=b"v%d" % i, partition=0)
    assert p.flush(30) == 0
    time.sleep(1.0)  # every record is older than the retention set next
    _ok(b.bootstrap, {"log.retention.ms": "500"})
    e = _topic_config(b.bootstrap, plain)["retention.ms"]
    assert (e.value, e.source) == ("500", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    wait_until(lambda: watermarks(b.bootstrap, plain, [0])[0] == (20, 20), 30,
               what="the dynamic log.retention.ms to trim the topic without an override")
    assert watermarks(b.bootstrap, kept, [0])[0] == (0, 20)  # its own retention.ms wins
    b.restart()
    e = _topic_config(b.bootstrap, plain)["retention.ms"]
    assert (e.value, e.source) == ("500", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)


def _deliver(bootstrap, topic, value, **kw):
    got = []
    p = producer(bootstrap, **{"message.timeout.ms": 10000})
    p.produce(topic, value=value, partition=0, on_delivery=lambda err, m: got.append((err, m)),
              **kw)
    p.flush(20)
    [(err, m)] = got
    return err, m


def test_message_size_and_timestamps_apply_live(broker):
    bs = broker.bootstrap
    topic = create_topic(bs, unique_topic("dyn-msg"))
    _ok(bs, {"message.max.bytes": "2000"})
    err, _ = _deliver(bs, topic, b"x" * 5000)
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE, err
    assert _topic_config(bs, topic)["max.message.bytes"].value == "2000"
    _ok(bs, {"message.max.bytes": None})
    assert _deliver(bs, topic, b"x" * 5000)[0] is None
    # LogAppendTime: the broker's clock replaces the producer's timestamp
    _ok(bs, {"log.message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    err, m = _deliver(bs, topic, b"stamped", timestamp=1_000_000)
    assert err is None, err
    c = consumer(bs)
    c.assign([TopicPartition(topic, 0, m.offset())])
    msg = c.poll(10)
    c.close()
    ts_type, ts = msg.timestamp()
    assert msg.value() == b"stamped" and ts_type == 2 and ts >= before - 1000, msg.timestamp()
    # CreateTime again, with a one-second tolerance into the future
    _ok(bs, {"log.message.timestamp.type": None, "log.message.timestamp.after.max.ms": "1000"})
    err, _ = _deliver(bs, topic, b"future", timestamp=int(time.time() * 1000) + 600_000)
    assert err is not None and err.code() == KafkaError.INVALID_TIMESTAMP, err
    _ok(bs, {"log.message.timestamp.after.max.ms": None})
    assert _deliver(bs, topic, b"future", timestamp=int(time.time() * 1000) + 600_000)[0] is None


def _closed_by_peer(s, wait=1.5):
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True


def test_connection_limit_per_address_applies_live(broker):
    _ok(broker.bootstrap, {"max.connections.per.ip": "2"})
    time.sleep(0.5)  # the broker has seen the alter's own connection close
    socks = [socket.create_connection((broker.host, broker.port)) for _ in range(4)]
    try:
        closed = [_closed_by_peer(s) for s in socks]
        assert closed == [False, False, True, True], closed
    finally:
        for s in socks:
            s.close()
    time.sleep(0.2)  # the broker sees the closes
    _ok(broker.bootstrap, {"max.connections.per.ip": None})
    socks = [socket.create_connection((broker.host, broker.port)) for _ in range(4)]
    try:
        assert not any(_closed_by_peer(s, 0.5) for s in socks)
    finally:
        for s in socks:
            s.close()


def test_a_change_on_one_broker_applies_on_every_broker(cluster):
    n1, n2 = cluster.add(), cluster.add()
    _ok(n1.bootstrap, {"message.max.bytes": "3000"})
    wait_until(lambda: _broker_config(n2.bootstrap, "2")["message.max.bytes"].value == "3000",
               10, what="broker 2 to see the dynamic message.max.bytes")
    e = _broker_config(n2.bootstrap, "2")["message.max.bytes"]
    assert e.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    topic = create_topic(n2.bootstrap, unique_topic("dyn-cluster"))
    err, _ = _deliver(n2.bootstrap, topic, b"x" * 5000)
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE, err
