"""Idle metadata-store load of a cluster whose partitions hold data.

Three brokers over a throwaway etcd (bench/partitions.py's setup) get one topic
of P partitions with one record each; once compaction has taken every record
(compaction.min.age.ms, 60 s, plus a pass) nothing happens for W seconds, and
the brokers' metadata-store operations per second over that window are
printed by operation, as JSON. An idle partition should cost nothing: the
figure should match an empty cluster's whatever P.

    .venv/bin/python bench/idle_metadata.py [--partitions 64] [--settle 100] [--window 30]

BENCH_LAKESTREAM_BIN picks another build (e.g. an older one, to compare).
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import partitions  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=64)
    ap.add_argument("--settle", type=float, default=100.0)
    ap.add_argument("--window", type=float, default=30.0)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ls-idle-") as work:
        s = partitions.Lakestream(work, 3)
        s.start()
        try:
            admin = AdminClient({"bootstrap.servers": s.bootstrap, "log_level": 2})
            admin.create_topics([NewTopic("idle", a.partitions, 1)])["idle"].result()
            p = Producer({"bootstrap.servers": s.bootstrap, "log_level": 2})
            for i in range(a.partitions):
                p.produce("idle", b"x", partition=i)
            if p.flush(30):
                sys.exit("records not acknowledged")
            time.sleep(a.settle)
            m0 = s.meta_ops()
            time.sleep(a.window)
            m1 = s.meta_ops()
        finally:
            s.stop()
    rates = {k: round((m1[k] - m0.get(k, 0)) / a.window, 2) for k in sorted(m1)}
    print(json.dumps({"binary": os.environ.get("BENCH_LAKESTREAM_BIN", "build/lakestream"),
                      "brokers": 3, "partitions": a.partitions, "settle_s": a.settle,
                      "window_s": a.window, "ops_per_s": rates}))


if __name__ == "__main__":
    main()
