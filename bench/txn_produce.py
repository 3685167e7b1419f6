#!/usr/bin/env python3
"""Load driver of the txn-produce scenario: transactional produce throughput.

  txn_produce.py --brokers B --topic T [--mode txn|plain] [options]

txn:   --producers threads, each a transactional producer (librdkafka through
       confluent-kafka, its own transactional.id) running transactions of
       --txn-records records spread over the topic's partitions, each
       committed with commit_transaction, back to back for --duration s.
plain: the same producers with the same settings but no transactional.id
       (idempotent, acks=all), producing the same records with no
       transactions — the ratio txn / plain is the cost of transactions.

Only records acknowledged (txn: of transactions whose commit returned) after
the first --warmup s count. One JSON object on stdout, as bench/driver's:
{"mode", "produce": {"msgs_per_sec", "mb_per_sec", "acked", "seconds"},
 "txn": {"txns_per_sec", "commit": {"p50_ms", "p99_ms", "max_ms"}}}.
"""
import argparse
import json
import sys
import threading
import time
import uuid

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def pctl(vals, q):
    if not vals:
        return None
    vals = sorted(vals)
    return vals[min(len(vals) - 1, int(q * len(vals)))]


def create(brokers, topic, partitions):
    a = AdminClient({"bootstrap.servers": brokers})
    f = a.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    try:
        f[topic].result(30)
    except KafkaException as e:
        if "already exists" not in str(e).lower() and "TOPIC_ALREADY_EXISTS" not in str(e):
            raise
    deadline = time.time() + 30   # until every partition has a leader
    while time.time() < deadline:
        md = a.list_topics(topic, timeout=10).topics.get(topic)
        if md and not md.error and len(md.partitions) == partitions and \
                all(p.leader >= 0 for p in md.partitions.values()):
            return
        time.sleep(0.2)
    raise RuntimeError("topic %s not ready" % topic)


def worker(i, a, t0, res, stop):
    conf = {"bootstrap.servers": a.brokers, "acks": "all", "linger.ms": a.linger_ms,
            "enable.idempotence": True, "compression.type": "none"}
    txn = a.mode == "txn"
    if txn:
        conf["transactional.id"] = "bench-txn-%s-%d" % (uuid.uuid4().hex[:8], i)
    p = Producer(conf)
    if txn:
        p.init_transactions(30)
    value = b"x" * a.size
    warm_end = t0 + a.warmup
    end = warm_end + a.duration
    acked = [0]

    def dr(err, msg):
        if err is None and not txn and warm_end <= time.monotonic() <= end:
            acked[0] += 1
        elif err is not None:
            res["errors"] += 1

    part = i
    commits = []
    n_txn = 0
    while not stop.is_set():
        if txn:
            p.begin_transaction()
        for _ in range(a.txn_records):
            while True:
                try:
                    p.produce(a.topic, value, partition=part % a.partitions,
                              on_delivery=None if txn else dr)
                    break
                except BufferError:
                    p.poll(0.005)
            part += 1
        if txn:
            c0 = time.monotonic()
            p.commit_transaction(60)
            c1 = time.monotonic()
            if warm_end <= c1 <= end:
                acked[0] += a.txn_records
                n_txn += 1
                commits.append((c1 - c0) * 1000)
        else:
            p.poll(0)
    if not txn:
        p.flush(60)
    with res["lock"]:
        res["acked"] += acked[0]
        res["txns"] += n_txn
        res["commit_ms"] += commits


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--mode", choices=("txn", "plain"), default="txn")
    ap.add_argument("--create", action="store_true")
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--linger-ms", type=int, default=5)
    ap.add_argument("--txn-records", type=int, default=100)
    ap.add_argument("--producers", type=int, default=4)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=2)
    a = ap.parse_args()
    if a.create:
        create(a.brokers, a.topic, a.partitions)
    res = {"lock": threading.Lock(), "acked": 0, "txns": 0, "commit_ms": [], "errors": 0}
    stop = threading.Event()
    t0 = time.monotonic()
    ths = [threading.Thread(target=worker, args=(i, a, t0, res, stop)) for i in range(a.producers)]
    for t in ths:
        t.start()
    time.sleep(a.warmup + a.duration)
    stop.set()
    for t in ths:
        t.join(120)
    secs = a.duration
    out = {"mode": a.mode,
           "settings": {k: v for k, v in vars(a).items()},
           "produce": {"acked": res["acked"], "seconds": secs,
                       "msgs_per_sec": res["acked"] / secs,
                       "mb_per_sec": res["acked"] * a.size / secs / 1048576,
                       "errors": res["errors"]}}
    if a.mode == "txn":
        c = res["commit_ms"]
        out["txn"] = {"txns": res["txns"], "txns_per_sec": res["txns"] / secs,
                      "commit": {"p50_ms": pctl(c, 0.5), "p99_ms": pctl(c, 0.99),
                                 "max_ms": max(c) if c else None}}
    print(json.dumps(out))
    return 0 if res["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
