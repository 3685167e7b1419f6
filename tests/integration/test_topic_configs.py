"""Every topic config Kafka 4 defines is either applied, accepted with a
documented reason it changes nothing on a diskless broker, or refused with a
message naming it (issue 11 §3) — never stored and silently ignored.

One row per config of Kafka 4's TopicConfig (kafka-clients 4.4), with the
value a tool would send: CreateTopics (validate_only) accepts or refuses it as
the row says, and DescribeConfigs of a created topic describes every
accepted key."""

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import ConfigResource, NewTopic

from kafka_util import admin, create_topic, unique_topic

# key: (value to set, outcome); outcome "applied", "no effect (documented)", or
# a substring of the refusal message
ROWS = {
    "cleanup.policy": ("compact", "applied"),
    "compression.gzip.level": ("6", "applied"),  # test_topic_compression.py
    "compression.lz4.level": ("9", "applied"),
    "compression.type": ("zstd", "applied"),
    "compression.zstd.level": ("3", "applied"),
    "delete.retention.ms": ("86400000", "applied"),
    "errors.deadletterqueue.group.enable": ("false", "Unknown topic config"),
    "file.delete.delay.ms": ("60000", "applied"),  # test_retention.py: storage of a deleted topic
    "flush.messages": ("1000", "no effect (documented)"),
    "flush.ms": ("1000", "no effect (documented)"),
    "index.interval.bytes": ("4096", "no effect (documented)"),
    "local.retention.bytes": ("-2", "no effect (documented)"),
    "local.retention.ms": ("-2", "no effect (documented)"),
    "max.compaction.lag.ms": ("9223372036854775807", "applied"),
    "max.decompressed.message.bytes": ("1048576", "Unknown topic config"),
    "max.message.bytes": ("2097152", "applied"),
    "message.downconversion.enable": ("true", "Unknown topic config"),
    "message.timestamp.after.max.ms": ("3600000", "applied"),
    "message.timestamp.before.max.ms": ("9223372036854775807", "applied"),
    "message.timestamp.type": ("LogAppendTime", "applied"),
    "min.cleanable.dirty.ratio": ("0.5", "applied"),
    "min.compaction.lag.ms": ("0", "applied"),
    "min.insync.replicas": ("2", "no effect (documented)"),
    "preallocate": ("false", "no effect (documented)"),
    "remote.copy.lag.bytes": ("-1", "Unknown topic config"),
    "remote.copy.lag.ms": ("-1", "Unknown topic config"),
    "remote.log.copy.disable": ("false", "no effect (documented)"),
    "remote.log.delete.on.disable": ("false", "no effect (documented)"),
    "remote.storage.enable": ("true", "no effect (documented)"),
    "retention.bytes": ("1073741824", "applied"),
    "retention.ms": ("604800000", "applied"),
    "segment.bytes": ("1073741824", "no effect (documented)"),
    "segment.index.bytes": ("10485760", "no effect (documented)"),
    "segment.jitter.ms": ("0", "no effect (documented)"),
    "segment.ms": ("604800000", "no effect (documented)"),
    "unclean.leader.election.enable": ("false", "no effect (documented)"),
}


@pytest.mark.parametrize("key", sorted(ROWS))
def test_every_kafka_topic_config_is_applied_or_refused(module_broker, key):
    value, outcome = ROWS[key]
    a = admin(module_broker.bootstrap)
    name = unique_topic("cfg")
    fs = a.create_topics([NewTopic(name, 1, 1, config={key: value})], validate_only=True)
    accepted = outcome in ("applied", "no effect (documented)")
    if accepted:
        fs[name].result(30)
        t = create_topic(module_broker.bootstrap, unique_topic("cfg"), config={key: value})
        res = ConfigResource(ConfigResource.Type.TOPIC, t)
        got = a.describe_configs([res])[res].result(30)
        assert key in got and got[key].value == value, (key, got.get(key))
    else:
        with pytest.raises(KafkaException) as ei:
            fs[name].result(30)
        assert outcome in ei.value.args[0].str(), ei.value.args[0].str()


@pytest.mark.parametrize("key,value", [("min.cleanable.dirty.ratio", "1.5"),
                                       ("max.compaction.lag.ms", "0"),
                                       ("min.compaction.lag.ms", "-1"),
                                       ("delete.retention.ms", "-5")])
def test_compaction_settings_out_of_kafkas_range_are_refused(module_broker, key, value):
    a = admin(module_broker.bootstrap)
    name = unique_topic("cfgbad")
    fs = a.create_topics([NewTopic(name, 1, 1, config={"cleanup.policy": "compact", key: value})],
                         validate_only=True)
    with pytest.raises(KafkaException) as ei:
        fs[name].result(30)
    msg = ei.value.args[0].str()
    assert key in msg and value in msg, msg


# Kafka 4's lower bounds (LogConfig's atLeast validators), checked against
# kafka-topics.sh 4.3's own client-side validation: each value just below is refused
# with Kafka's wording, the bound itself is accepted.
KAFKA_MINS = {"min.insync.replicas": 1, "max.message.bytes": 0, "segment.bytes": 1048576,
              "segment.ms": 1, "segment.jitter.ms": 0, "segment.index.bytes": 4,
              "flush.messages": 1, "flush.ms": 0, "retention.ms": -1,
              "index.interval.bytes": 0, "file.delete.delay.ms": 0,
              "message.timestamp.before.max.ms": 0, "message.timestamp.after.max.ms": 0,
              "local.retention.ms": -2, "local.retention.bytes": -2}


@pytest.mark.parametrize("key", sorted(KAFKA_MINS))
def test_values_below_kafkas_bound_are_refused(module_broker, key):
    a = admin(module_broker.bootstrap)
    low = KAFKA_MINS[key]
    name = unique_topic("cfgmin")
    fs = a.create_topics([NewTopic(name, 1, 1, config={key: str(low - 1)})], validate_only=True)
    with pytest.raises(KafkaException) as ei:
        fs[name].result(30)
    msg = ei.value.args[0].str()
    assert msg == "Invalid value %d for configuration %s: Value must be at least %d" % (
        low - 1, key, low), msg
    fs = a.create_topics([NewTopic(name, 1, 1, config={key: str(low)})], validate_only=True)
    fs[name].result(30)


def test_min_compaction_lag_above_max_is_refused(module_broker):
    a = admin(module_broker.bootstrap)
    name = unique_topic("cfglag")
    fs = a.create_topics([NewTopic(name, 1, 1, config={
        "cleanup.policy": "compact", "min.compaction.lag.ms": "5000",
        "max.compaction.lag.ms": "1000"})], validate_only=True)
    with pytest.raises(KafkaException) as ei:
        fs[name].result(30)
    msg = ei.value.args[0].str()
    assert "min.compaction.lag.ms" in msg and "max.compaction.lag.ms" in msg, msg
