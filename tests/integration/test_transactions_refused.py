"""Until transactions exist, a transactional producer must fail at once with a
message that says so (issue 11 §4): librdkafka used to retry the refused
InitProducerId forever, so init_transactions() hung until its timeout. The
Java client is checked in tests/integration/java (transactions_refused)."""

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer


def test_init_transactions_fails_fast_with_a_reason(broker):
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-1"})
    t0 = time.monotonic()
    with pytest.raises(KafkaException) as ei:
        p.init_transactions(60)
    took = time.monotonic() - t0
    err = ei.value.args[0]
    assert err.fatal(), err
    assert err.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, err
    assert "does not support Kafka transactions" in err.str(), err.str()
    assert took < 30, "init_transactions took %.1fs to fail" % took


def test_idempotent_producer_still_works(broker):
    from kafka_util import create_topic, produce_all, unique_topic
    t = create_topic(broker.bootstrap, unique_topic("idem"))
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    dl = produce_all(p, t, [{"value": b"x", "partition": 0}])
    assert len(dl.acked) == 1
