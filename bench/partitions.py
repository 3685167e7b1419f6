#!/usr/bin/env python3
"""Partition scaling: what an idle partition costs one broker.

Starts one lakestream broker (file store, SQLite, embedded defaults) and grows
it to each step of --steps partitions (topics of --per-topic partitions), and
at each step measures, after --settle seconds idle:
  rss_mib                 the broker's resident memory
  idle_cpu_pct            its CPU use over --idle seconds with no traffic
                          (what the background passes cost per partition)
  metadata_ms             a full Metadata request (v1, all topics) on one
                          connection, raw bytes in and out: median and max of 20
  produce_p99_ms          acks=all produce latency to ONE partition of a fresh
                          topic at 200 records/s for 5 s: p50, p99
  startup_s               after a graceful stop, process start until a full
                          Metadata answer lists every partition
and reports per-partition deltas (memory per idle partition between steps).
Writes <out>/<stamp>-partition-scaling.json and .svg.

  bench/partitions.py [--steps 100,1000,10000] [--out bench/results] [--tag T]

`make bench-partitions` runs it. Nothing here asserts timings: the figures are
for the record (bench/README.md)."""

import argparse
import datetime
import json
import os
import socket
import statistics
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "soak"))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import lsbroker  # noqa: E402
from svgplot import write_plot  # noqa: E402


def metadata_request(host, port, timeout=60):
    """One Metadata v1 request for all topics; returns (seconds, partitions
    in the answer)."""
    body = struct.pack(">hhih", 3, 1, 7, 5) + b"bench" + struct.pack(">i", -1)
    t0 = time.monotonic()
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        n = struct.unpack(">i", _recv(s, 4))[0]
        resp = _recv(s, n)
    dt = time.monotonic() - t0
    return dt, _count_partitions(resp)


def _recv(s, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(min(1 << 20, n - len(buf)))
        if not chunk:
            raise OSError("connection closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return bytes(buf)


def _count_partitions(r):
    """Partitions listed in a Metadata v1 response (correlation id first)."""
    pos = 4

    def i16():
        nonlocal pos
        v = struct.unpack_from(">h", r, pos)[0]
        pos += 2
        return v

    def i32():
        nonlocal pos
        v = struct.unpack_from(">i", r, pos)[0]
        pos += 4
        return v

    def string():
        nonlocal pos
        n = i16()
        pos += max(n, 0)

    for _ in range(i32()):           # brokers: node, host, port, rack
        i32(), string(), i32(), string()
    i32()                            # controller id
    total = 0
    for _ in range(i32()):           # topics
        i16(), string()              # error code, name
        pos += 1                     # is_internal
        for _ in range(i32()):       # partitions
            i16(), i32(), i32()
            for _ in range(2):       # replicas, isr
                k = i32()
                pos += 4 * k
            total += 1
    return total


def wait_metadata(b, want, timeout):
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, n = metadata_request("127.0.0.1", b.port)
            if n >= want:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("metadata lists fewer than %d partitions after %ds" % (want, timeout))
        time.sleep(0.05)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce_latency(bootstrap, topic):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    lat = []

    def cb(err, msg, t0):
        if err is None:
            lat.append(time.monotonic() - t0)
    start = time.monotonic()
    for i in range(1000):
        t0 = time.monotonic()
        p.produce(topic, value=b"x" * 100, partition=0, on_delivery=lambda e, m, t0=t0: cb(e, m, t0))
        p.poll(0)
        ahead = (i + 1) / 200.0 - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)
    p.flush(60)
    lat.sort()
    return {"p50_ms": round(1000 * lat[len(lat) // 2], 2),
            "p99_ms": round(1000 * lat[int(len(lat) * 0.99)], 2), "n": len(lat)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", default="100,1000,10000")
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--settle", type=float, default=10)
    ap.add_argument("--idle", type=float, default=20)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    steps = [int(x) for x in a.steps.split(",")]
    work = tempfile.mkdtemp(prefix="lakestream-partitions.")
    binary = os.environ.get("BENCH_LAKESTREAM_BIN") or lsbroker.binary_path()
    b = lsbroker.Broker(os.path.join(work, "data"), os.path.join(work, "logs"), binary=binary)
    b.start()
    results = []
    made = 0
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        base_rss = None
        for target in steps:
            t0 = time.monotonic()
            while made < target:
                n = min(a.per_topic, target - made)
                topic = "scale-%06d" % made
                admin.create_topics([NewTopic(topic, n, 1)])[topic].result(120)
                made += n
            create_s = time.monotonic() - t0
            wait_metadata(b, made, 120)
            time.sleep(a.settle)
            c0, w0 = cpu_seconds(b.pid), time.monotonic()
            time.sleep(a.idle)
            idle_cpu = 100 * (cpu_seconds(b.pid) - c0) / (time.monotonic() - w0)
            rss = lsbroker.rss_mb(b.pid)
            if base_rss is None:
                base_rss = rss
            md = sorted(metadata_request("127.0.0.1", b.port)[0] for _ in range(20))
            probe = "probe-%06d" % made
            admin.create_topics([NewTopic(probe, 1, 1)])[probe].result(60)
            wait_metadata(b, made + 1, 60)
            prod = produce_latency(b.bootstrap, probe)
            b.stop()
            t1 = time.monotonic()
            b.start()
            wait_metadata(b, made + 1, 300)
            startup = time.monotonic() - t1
            made += 1     # the probe topic stays
            row = {"partitions": made, "create_s": round(create_s, 1),
                   "rss_mib": round(rss, 1), "idle_cpu_pct": round(idle_cpu, 1),
                   "metadata_ms": {"median": round(1000 * statistics.median(md), 2),
                                   "max": round(1000 * md[-1], 2)},
                   "produce_one_partition": prod, "startup_s": round(startup, 2)}
            if results:
                prev = results[-1]
                row["rss_kib_per_added_partition"] = round(
                    1024 * (rss - prev["rss_mib"]) / (made - prev["partitions"]), 2)
            results.append(row)
            print(json.dumps(row), flush=True)
    finally:
        b.stop()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    name = "%s-%spartition-scaling" % (stamp, a.tag + "-" if a.tag else "")
    os.makedirs(a.out, exist_ok=True)
    report = {"command": " ".join([os.path.relpath(sys.argv[0], os.path.join(HERE, ".."))]
                                  + sys.argv[1:]),
              "binary": binary, "loadavg_end": os.getloadavg(), "steps": results}
    with open(os.path.join(a.out, name + ".json"), "w") as f:
        json.dump(report, f, indent=2)
    xs = [r["partitions"] for r in results]
    write_plot(os.path.join(a.out, name + ".svg"), xs, "", [
        ("RSS MiB", [r["rss_mib"] for r in results]),
        ("idle CPU %", [r["idle_cpu_pct"] for r in results]),
        ("Metadata ms (median)", [r["metadata_ms"]["median"] for r in results]),
        ("produce p99 ms, one partition", [r["produce_one_partition"]["p99_ms"] for r in results]),
        ("startup s", [r["startup_s"] for r in results])],
        "one broker, idle partitions (x: partitions, log scale; each series scaled to its max)",
        log_x=True)
    print("wrote %s.{json,svg}" % os.path.join(a.out, name))


if __name__ == "__main__":
    main()
