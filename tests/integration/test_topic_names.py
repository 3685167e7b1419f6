"""Topic names that read alike, and dotted names in the Iceberg catalog.

Kafka refuses a new topic whose name equals an existing one's once '.' is
read as '_' (both map to the same metric names): CreateTopics answers
INVALID_TOPIC_EXCEPTION "Topic 'a_b' collides with existing topic: a.b",
and auto-creation refuses it likewise. A topic with dots is one table name in
the one-level namespaces of the REST catalog: PyIceberg's "default.a.b" splits
at every dot, and the catalog's answer says which identifier names the table,
readably."""

import uuid

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import NewTopic

from kafka_util import admin, create_topic
from lsbroker import wait_until


pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


def _base():
    return "n%s" % uuid.uuid4().hex[:8]


def _create_error(bootstrap, name, validate_only=False):
    a = admin(bootstrap)  # kept: a destroyed client fails its futures
    fs = a.create_topics([NewTopic(name, 1, 1)], validate_only=validate_only)
    with pytest.raises(KafkaException) as ei:
        fs[name].result(30)
    return ei.value.args[0]


@pytest.mark.parametrize("first,second", [("%s.b", "%s_b"), ("%s_b", "%s.b"),
                                          ("%s.b_c", "%s_b.c")])
def test_create_refuses_a_name_that_collides(broker, first, second):
    base = _base()
    first, second = first % base, second % base
    create_topic(broker.bootstrap, first)
    for validate_only in (True, False):
        err = _create_error(broker.bootstrap, second, validate_only)
        assert err.code() == KafkaError.TOPIC_EXCEPTION, err
        assert err.str() == "Topic '%s' collides with existing topic: %s" % (second, first), err
    md = admin(broker.bootstrap).list_topics(timeout=10)
    assert first in md.topics and second not in md.topics
    # the existing one is still "already exists", and unrelated names are fine
    assert _create_error(broker.bootstrap, first).code() == KafkaError.TOPIC_ALREADY_EXISTS
    create_topic(broker.bootstrap, base + "_c")


def test_auto_create_refuses_a_name_that_collides(broker):
    base = _base()
    create_topic(broker.bootstrap, base + ".b")
    p = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 10000})
    errs = []
    p.produce(base + "_b", b"v", on_delivery=lambda e, m: errs.append(e))
    p.flush(30)
    assert len(errs) == 1 and errs[0] is not None, errs
    md = admin(broker.bootstrap).list_topics(timeout=10)
    assert base + "_b" not in md.topics, sorted(md.topics)


def test_dotted_table_name_in_the_rest_catalog(broker):
    rest = pytest.importorskip("pyiceberg.catalog")
    exc = pytest.importorskip("pyiceberg.exceptions")
    topic = _base() + ".b"
    create_topic(broker.bootstrap, topic, config={"lakestream.table.enabled": "true",
                                                  "lakestream.table.commit.interval.ms": "1000"})
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce(topic, b"v")
    assert p.flush(30) == 0
    cat = rest.load_catalog("ls", type="rest", uri=broker.http_url)

    def loaded():
        try:
            return cat.load_table(("default", topic))
        except exc.NoSuchTableError:
            return None
    wait_until(loaded, 120, what="table default/%s committed" % topic)
    with pytest.raises(exc.NoSuchTableError) as ei:
        cat.load_table("default." + topic)
    msg = str(ei.value)
    assert "\x1f" not in msg and "\\u001f" not in msg, msg
    assert '("default", "%s")' % topic in msg, msg
