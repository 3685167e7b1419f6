"""Consumer offsets inside transactions (KIP-447) with librdkafka
(confluent-kafka): send_offsets_to_transaction makes the offsets the group's
committed offsets only when the transaction commits, an aborted transaction
leaves them as they were, and a read_committed consumer's committed() (an
OffsetFetch with RequireStable) waits while the group has offsets pending in
an open transaction, then returns the committed ones; OffsetDelete
(kafka-python's admin) deletes an offset only a transaction's marker wrote."""

import threading
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_util import create_topic, unique_topic


def txn_producer(bootstrap, tid):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                  "transaction.timeout.ms": 60000})
    p.init_transactions(30)
    return p


def group_consumer(bootstrap, group, topic, isolation="read_committed"):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    deadline = time.monotonic() + 30
    while not c.assignment() and time.monotonic() < deadline:
        c.poll(0.2)
    assert c.assignment(), "the consumer never joined its group"
    return c


def committed(bootstrap, group, topic, partitions, isolation="read_committed", timeout=30):
    """The group's committed offsets. read_committed asks with RequireStable,
    so it waits for the transaction's marker (written after EndTxn answers,
    as in Kafka)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "isolation.level": isolation, "enable.auto.commit": False})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=timeout)
        return [tp.offset for tp in tps]
    finally:
        c.close()


def send_offsets(p, consumer, topic, offsets):
    p.send_offsets_to_transaction(
        [TopicPartition(topic, part, off) for part, off in offsets.items()],
        consumer.consumer_group_metadata(), 30)


def test_offsets_commit_and_abort_with_their_transaction(broker):
    src = create_topic(broker.bootstrap, unique_topic("txo-in"), partitions=2)
    out = create_topic(broker.bootstrap, unique_topic("txo-out"), partitions=1)
    group = "txo-" + uuid.uuid4().hex
    c = group_consumer(broker.bootstrap, group, src)
    p = txn_producer(broker.bootstrap, "txo-" + uuid.uuid4().hex)
    try:
        p.begin_transaction()
        p.produce(out, b"a")
        send_offsets(p, c, src, {0: 5, 1: 7})
        p.commit_transaction(30)
        assert committed(broker.bootstrap, group, src, 2) == [5, 7]

        p.begin_transaction()
        p.produce(out, b"b")
        send_offsets(p, c, src, {0: 9})
        p.abort_transaction(30)
        assert committed(broker.bootstrap, group, src, 2) == [5, 7]

        p.begin_transaction()
        send_offsets(p, c, src, {1: 11})
        p.commit_transaction(30)
        assert committed(broker.bootstrap, group, src, 2) == [5, 11]
    finally:
        c.close()


def test_read_committed_fetch_waits_for_pending_offsets(broker):
    src = create_topic(broker.bootstrap, unique_topic("txo-st"), partitions=1)
    group = "txo-" + uuid.uuid4().hex
    c = group_consumer(broker.bootstrap, group, src)
    p = txn_producer(broker.bootstrap, "txo-" + uuid.uuid4().hex)
    try:
        p.begin_transaction()
        send_offsets(p, c, src, {0: 3})
        p.commit_transaction(30)

        p.begin_transaction()
        send_offsets(p, c, src, {0: 8})
        # pending now: read_uncommitted answers the committed offset at once
        assert committed(broker.bootstrap, group, src, 1, "read_uncommitted") == [3]
        got = {}
        t = threading.Thread(target=lambda: got.update(
            v=committed(broker.bootstrap, group, src, 1)))
        t.start()
        t.join(2)
        assert t.is_alive(), "a RequireStable fetch answered while offsets were pending"
        p.commit_transaction(30)
        t.join(30)
        assert got["v"] == [8]
    finally:
        c.close()


def test_offset_delete_removes_offsets_a_transaction_committed(broker):
    """The coordinator learns of a marker by rereading the group; OffsetDelete
    must reread too, or it would not see an offset only the marker wrote."""
    from kafka import TopicPartition as KTP
    from kafka.admin import KafkaAdminClient
    src = create_topic(broker.bootstrap, unique_topic("txo-del"), partitions=2)
    group = "txo-" + uuid.uuid4().hex
    c = group_consumer(broker.bootstrap, group, src)
    p = txn_producer(broker.bootstrap, "txo-" + uuid.uuid4().hex)
    p.begin_transaction()
    send_offsets(p, c, src, {1: 5})
    p.commit_transaction(30)
    assert committed(broker.bootstrap, group, src, 2) == [-1001, 5]
    p.begin_transaction()
    send_offsets(p, c, src, {0: 6})  # committed by its marker, unseen by any fetch
    p.commit_transaction(30)
    p.begin_transaction()
    send_offsets(p, c, src, {1: 9})  # waits (CONCURRENT_TRANSACTIONS) for that marker
    p.abort_transaction(30)
    c.close()  # the group is Empty: its offsets may be deleted
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        r = a.delete_group_offsets(group, [KTP(src, 0)])
        assert r[KTP(src, 0)].__name__ == "NoError", r
    finally:
        a.close()
    assert committed(broker.bootstrap, group, src, 2) == [-1001, 5]
