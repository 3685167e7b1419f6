#!/usr/bin/env python3
"""Partition scaling: what partitions cost one broker and a three-broker cluster,
beside Apache Kafka on one broker where it can run here.

Each setup is grown to each step of --steps partitions (topics of --per-topic
partitions; the last partition of a step is a fresh one-partition "probe" topic)
and at each step, after --settle seconds idle, measures:
  rss_mib                 resident memory (summed over a cluster's brokers;
                          rss_mib_max_broker is the largest one)
  idle_cpu_pct            CPU over --idle seconds with no traffic (the
                          background passes), summed over the brokers
  metadata_ms             a full Metadata request (v1, all topics) on one
                          connection, raw bytes in and out: median and max of 20
  produce                 acks=all produce latency to the probe partition at
                          200 records/s for 5 s (librdkafka defaults): p50, p99
  fetch                   for the same records, produce -> a consumer's receipt
                          (librdkafka's defaults, the partition assigned): p50,
                          p99; what a reader waits for a record
  metadata_store_ops_s    Lakestream: metadata-store operations per second, idle
                          and under the probe load (from /metrics, all brokers),
                          in total and by operation
  probe_wal_compacted_s   Lakestream: the probe's WAL objects (one a record)
                          compacted and deleted this long after the load ended
                          (compaction.min.age.ms, 60 s, included); the next step
                          waits for it, so its idle window is idle
  startup_s               one broker: after a graceful stop, start until a full
                          Metadata answer lists every partition
  failover (cluster)      kill -9 of the broker Metadata names leader of the
                          probe partition while a producer (bootstrapped to all
                          three, librdkafka defaults) sends to it every 5 ms:
                          first_ack_s = kill -> first acknowledgement of a record
                          sent after the kill; leader_moved_s = kill -> a
                          survivor's Metadata names another leader; then
                          rejoin_s = the killed broker's start until it answers
                          Metadata with every partition
Lakestream runs on embedded defaults (one broker: file store + SQLite; cluster:
one file store directory + one etcd started here, tools/etcd/etcd.sh). Kafka (the
bench's pinned peer, KRaft, one broker) runs the steps its memory maps allow:
every partition's active segment maps two index files, and a step needing more
than vm.max_map_count maps is recorded as not run, with that reason.
Writes <out>/<stamp>-[<tag>-]partition-scaling.json, .svg and .md.

  bench/partitions.py [--steps 1000,10000,50000] [--setups one,cluster,kafka]
                      [--out bench/results] [--tag T]

`make bench-partitions` runs it. Nothing here asserts timings: the figures are
for the record (bench/README.md)."""

import argparse
import datetime
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "soak"))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import bench  # noqa: E402
import lsbroker  # noqa: E402
from svgplot import write_plot  # noqa: E402

ETCD_SH = os.path.join(HERE, "..", "tools", "etcd", "etcd.sh")
META_OPS = "lakestream_metadata_store_operation_duration_seconds_count"


# ---- probes on the wire --------------------------------------------------

def metadata_request(port, timeout=120):
    """One Metadata v1 request for all topics; returns (seconds, partitions
    in the answer)."""
    body = struct.pack(">hhih", 3, 1, 7, 5) + b"bench" + struct.pack(">i", -1)
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
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
    """Partitions listed in a Metadata v1 response (correlation id first),
    internal topics left out."""
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
        internal = r[pos]
        pos += 1
        for _ in range(i32()):       # partitions
            i16(), i32(), i32()
            for _ in range(2):       # replicas, isr
                k = i32()
                pos += 4 * k
            total += 0 if internal else 1
    return total


def wait_metadata(port, want, timeout):
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, n = metadata_request(port)
            if n >= want:
                return
        except (OSError, struct.error):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("metadata lists fewer than %d partitions after %ds" % (want, timeout))
        time.sleep(0.05)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(sorted_vals, q):
    return round(1000 * sorted_vals[min(len(sorted_vals) - 1, int(len(sorted_vals) * q))], 2)


def produce_and_fetch(bootstrap, topic, n=1000, rate=200):
    """acks=all produce latency to partition 0 of topic, and produce -> receipt
    by a consumer assigned to it (both librdkafka's defaults)."""
    cons = Consumer({"bootstrap.servers": bootstrap, "group.id": "partition-scaling",
                     "enable.auto.commit": False, "auto.offset.reset": "latest"})
    cons.assign([TopicPartition(topic, 0, -1)])   # -1: the end
    got, done = [], threading.Event()

    def read():
        while not done.is_set() and len(got) < n:
            m = cons.poll(0.2)
            if m is not None and not m.error():
                got.append(time.monotonic() - struct.unpack(">d", m.value()[:8])[0])
    # the consumer has its position before the first record goes out
    for _ in range(50):
        cons.poll(0.1)
        if cons.position([TopicPartition(topic, 0)])[0].offset >= 0:
            break
    reader = threading.Thread(target=read)
    reader.start()
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    acks = []

    def cb(err, msg, t0):
        if err is None:
            acks.append(time.monotonic() - t0)
    start = time.monotonic()
    for i in range(n):
        t0 = time.monotonic()
        p.produce(topic, value=struct.pack(">d", t0) + b"x" * 92, partition=0,
                  on_delivery=lambda e, m, t0=t0: cb(e, m, t0))
        p.poll(0)
        ahead = (i + 1) / rate - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)
    p.flush(60)
    reader.join(30)
    done.set()
    reader.join()
    cons.close()
    acks.sort()
    got.sort()
    out = {"produce": {"p50_ms": pct(acks, 0.5), "p99_ms": pct(acks, 0.99), "n": len(acks)}}
    out["fetch"] = ({"p50_ms": pct(got, 0.5), "p99_ms": pct(got, 0.99), "n": len(got)}
                    if got else {"n": 0})
    return out


# ---- the setups ----------------------------------------------------------

class Lakestream:
    """One broker, or three over one etcd and one object-store directory."""

    def __init__(self, work, brokers):
        self.work, self.etcd_dir = work, None
        binary = os.environ.get("BENCH_LAKESTREAM_BIN") or lsbroker.binary_path()
        common = []
        if brokers > 1:
            self.etcd_dir = os.path.join(work, "etcd")
            subprocess.run([ETCD_SH, "start", self.etcd_dir], check=True, capture_output=True)
            env = dict(line.split("=", 1) for line in
                       open(os.path.join(self.etcd_dir, "env")).read().split())
            store = lsbroker.shared_object_store_url("scale", os.path.join(work, "objects"))
            common = ["--metadata.url=etcd://%s/scale" % env["LS_TEST_ETCD_ENDPOINT"],
                      "--object.store.url=" + store]
        self.nodes = []
        for i in range(1, brokers + 1):
            args = common + (["--broker.id=%d" % i] if brokers > 1 else [])
            self.nodes.append(lsbroker.Broker(os.path.join(work, "data%d" % i),
                                              os.path.join(work, "logs"), args, binary=binary,
                                              name="node%d" % i))

    def start(self):
        for b in self.nodes:
            b.start()

    def stop(self):
        for b in self.nodes:
            if b.alive():
                b.stop()
        if self.etcd_dir:
            subprocess.run([ETCD_SH, "stop", self.etcd_dir], capture_output=True)

    @property
    def bootstrap(self):
        return ",".join(b.bootstrap for b in self.nodes if b.alive())

    def pids(self):
        return [b.pid for b in self.nodes]

    def port(self):
        return self.nodes[0].port

    def meta_ops(self):
        """{operation: count so far} of the metadata store, all brokers."""
        ops = {}
        for b in self.nodes:
            for (name, labels), v in bench.scrape_metrics(b).items():
                if name == META_OPS and labels.startswith('operation="'):
                    op = labels.split('"')[1]
                    ops[op] = ops.get(op, 0) + v
        return ops

    def wal_objects(self):
        """WAL objects in the object store(s) (the file store's wal/ keys)."""
        roots = [os.path.join(self.work, "objects")] if self.etcd_dir else \
            [os.path.join(b.data_dir, "objects") for b in self.nodes]
        return sum(f.endswith(".wal") for r in roots for _, _, fs in os.walk(r) for f in fs)

    def restart_one(self):
        b = self.nodes[0]
        b.stop()
        t = time.monotonic()
        b.start()
        return t


class Kafka:
    """The bench's pinned Apache Kafka, one KRaft broker (bench.Broker)."""

    def __init__(self):
        self.b = bench.Broker("kafka", "kafka")
        self.nodes = []

    def start(self):
        self.b.start()

    def stop(self):
        self.b.stop()

    @property
    def bootstrap(self):
        return self.b.bootstrap

    def pids(self):
        return [self.b.proc.pid]

    def port(self):
        return self.b.port

    def meta_ops(self):
        return None

    def wal_objects(self):
        return None

    def restart_one(self):
        self.b.stop(keep_dir=True)
        t = time.monotonic()
        self.b.start_again()
        return t


def admin_client(bootstrap):
    """An AdminClient that keeps quiet while the brokers it knows restart (its
    failures reach the caller through the futures)."""
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})


def max_map_count():
    try:
        return int(open("/proc/sys/vm/max_map_count").read())
    except OSError:
        return None


def rate(ops0, ops1, seconds):
    """Operations per second between two meta_ops() readings: the total, and
    by operation."""
    by = {k: round((v - ops0.get(k, 0)) / seconds, 1) for k, v in ops1.items()
          if v != ops0.get(k, 0)}
    total = (sum(ops1.values()) - sum(ops0.values())) / seconds
    return {"total": round(total, 1), "by_operation": by}


def grow(admin, made, target, per_topic):
    """Creates topics until made == target - 1; returns (made, seconds)."""
    t0 = time.monotonic()
    while made < target - 1:
        n = min(per_topic, target - 1 - made)
        topic = "scale-%06d" % made
        admin.create_topics([NewTopic(topic, n, 1)])[topic].result(300)
        made += n
    return made, time.monotonic() - t0


def failover(setup, probe):
    """Kill -9 the probe partition's leader while producing to it; see the
    module's docstring. Leaves the killed broker running again."""
    admin = admin_client(setup.bootstrap)
    leader = admin.list_topics(probe, timeout=30).topics[probe].partitions[0].leader
    victim = setup.nodes[leader - 1]
    survivor = next(b for b in setup.nodes if b is not victim)
    p = Producer({"bootstrap.servers": setup.bootstrap, "acks": "all", "linger.ms": 0})
    acked = []
    stop = threading.Event()

    def cb(err, msg, t0):
        if err is None:
            acked.append((t0, time.monotonic()))

    def send():
        while not stop.is_set():
            t0 = time.monotonic()
            p.produce(probe, value=b"f" * 100, partition=0,
                      on_delivery=lambda e, m, t0=t0: cb(e, m, t0))
            p.poll(0)
            time.sleep(0.005)
    sender = threading.Thread(target=send)
    sender.start()
    time.sleep(2)
    t_kill = time.monotonic()
    victim.kill9()
    moved = None
    sadmin = admin_client(survivor.bootstrap)
    deadline = t_kill + 120
    first = None
    while time.monotonic() < deadline and (moved is None or first is None):
        if moved is None:
            try:
                md = sadmin.list_topics(probe, timeout=5)
                if md.topics[probe].partitions[0].leader not in (leader, -1):
                    moved = time.monotonic() - t_kill
            except Exception:
                pass
        after = [a for t0, a in list(acked) if t0 > t_kill]
        if after and first is None:
            first = min(after) - t_kill
        time.sleep(0.02)
    stop.set()
    sender.join()
    p.flush(60)
    t_start = time.monotonic()
    victim.start()
    return {"killed_broker": leader,
            "first_ack_s": round(first, 2) if first is not None else None,
            "leader_moved_s": round(moved, 2) if moved is not None else None,
            "t_start": t_start, "victim": victim}


def run_setup(name, setup, steps, a, results):
    """Grows one setup through the steps, appending a row per step."""
    setup.start()
    made = 0
    try:
        admin = admin_client(setup.bootstrap)
        maps = max_map_count()
        for target in steps:
            if name == "kafka" and maps is not None and 2 * target > maps:
                row = {"setup": name, "partitions": target, "not_run":
                       "needs ~%d memory maps (two index files per partition's active "
                       "segment); vm.max_map_count is %d here" % (2 * target, maps)}
                results.append(row)
                print(json.dumps(row), flush=True)
                continue
            made, create_s = grow(admin, made, target, a.per_topic)
            wait_metadata(setup.port(), made, 300)
            time.sleep(a.settle)
            m0 = setup.meta_ops()
            c0, w0 = sum(cpu_seconds(p) for p in setup.pids()), time.monotonic()
            time.sleep(a.idle)
            idle_s = time.monotonic() - w0
            idle_cpu = 100 * (sum(cpu_seconds(p) for p in setup.pids()) - c0) / idle_s
            m1 = setup.meta_ops()
            rss = [lsbroker.rss_mb(p) for p in setup.pids()]
            md = sorted(metadata_request(setup.port())[0] for _ in range(20))
            probe = "probe-%06d" % made
            admin.create_topics([NewTopic(probe, 1, 1)])[probe].result(60)
            made += 1
            wait_metadata(setup.port(), made, 60)
            m2, l0 = setup.meta_ops(), time.monotonic()
            lat = produce_and_fetch(setup.bootstrap, probe)
            m3, l1 = setup.meta_ops(), time.monotonic()
            row = {"setup": name, "partitions": made, "brokers": len(setup.pids()),
                   "create_s": round(create_s, 1),
                   "rss_mib": round(sum(rss), 1), "rss_mib_max_broker": round(max(rss), 1),
                   "idle_cpu_pct": round(idle_cpu, 1),
                   "metadata_ms": {"median": round(1000 * statistics.median(md), 2),
                                   "max": round(1000 * md[-1], 2)}}
            row.update(lat)
            if m0 is not None:
                row["metadata_store_ops_s"] = {"idle": rate(m0, m1, idle_s),
                                               "probe_load": rate(m2, m3, l1 - l0)}
                # the probe's WAL objects (one a record: acks=all, linger 0) compacted
                # and deleted before the next step, whose idle window they would
                # otherwise fill with compaction's reads
                wal0, t = setup.wal_objects(), time.monotonic()
                while setup.wal_objects() and time.monotonic() - t < 300:
                    time.sleep(0.5)
                row["probe_wal_objects"] = wal0
                row["probe_wal_compacted_s"] = round(time.monotonic() - t, 1)
                row["wal_objects_left"] = setup.wal_objects()
            if name == "cluster":
                fo = failover(setup, probe)
                victim = fo.pop("victim")
                wait_metadata(victim.port, made, 300)
                fo["rejoin_s"] = round(time.monotonic() - fo.pop("t_start"), 2)
                row["failover"] = fo
                admin = admin_client(setup.bootstrap)
            else:
                t = setup.restart_one()
                wait_metadata(setup.port(), made, 300)
                row["startup_s"] = round(time.monotonic() - t, 2)
                admin = admin_client(setup.bootstrap)
            prev = [r for r in results if r["setup"] == name and "rss_mib" in r]
            if prev:
                row["rss_kib_per_added_partition"] = round(
                    1024 * (row["rss_mib"] - prev[-1]["rss_mib"])
                    / (made - prev[-1]["partitions"]), 2)
            results.append(row)
            print(json.dumps(row), flush=True)
    finally:
        setup.stop()


def fmt(v, key=None):
    if v is None:
        return "–"
    if key:
        v = v.get(key) if isinstance(v, dict) else None
        return "–" if v is None else str(v)
    return str(v)


def markdown(report):
    lines = ["# Partition scaling — %s" % report["stamp"], "",
             "Command: `%s`  " % report["command"],
             "Binary: %s; Kafka: %s; load average at the end: %s" % (
                 report["binary"], report["kafka_libs"],
                 " ".join("%.2f" % x for x in report["loadavg_end"])), "",
             "| setup | partitions | RSS MiB (largest broker) | KiB per added partition | idle CPU % "
             "| Metadata median / max ms | produce p50 / p99 ms | fetch p50 / p99 ms "
             "| metadata-store ops/s idle / under load | probe's WAL compacted s | restart s "
             "| fail-over: first ack / leader moved / rejoin s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["steps"]:
        if "not_run" in r:
            lines.append("| %s | %d | not run: %s ||||||||||" % (r["setup"], r["partitions"],
                                                               r["not_run"]))
            continue
        fo = r.get("failover")
        ops = r.get("metadata_store_ops_s")
        lines.append("| %s | %d | %s (%s) | %s | %s | %s / %s | %s / %s | %s / %s | %s | %s | %s | %s |" % (
            r["setup"], r["partitions"], r["rss_mib"], r["rss_mib_max_broker"],
            fmt(r.get("rss_kib_per_added_partition")), r["idle_cpu_pct"],
            r["metadata_ms"]["median"], r["metadata_ms"]["max"],
            fmt(r["produce"], "p50_ms"), fmt(r["produce"], "p99_ms"),
            fmt(r["fetch"], "p50_ms"), fmt(r["fetch"], "p99_ms"),
            "%s / %s" % (ops["idle"]["total"], ops["probe_load"]["total"]) if ops else "–",
            fmt(r.get("probe_wal_compacted_s")),
            fmt(r.get("startup_s")),
            "%s / %s / %s" % (fo["first_ack_s"], fo["leader_moved_s"], fo["rejoin_s"])
            if fo else "–"))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", default="1000,10000,50000")
    ap.add_argument("--setups", default="one,cluster,kafka",
                    help="one (Lakestream, one broker), cluster (three over etcd), kafka")
    ap.add_argument("--per-topic", type=int, default=100)
    ap.add_argument("--settle", type=float, default=10)
    ap.add_argument("--idle", type=float, default=20)
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    steps = [int(x) for x in a.steps.split(",")]
    results = []
    for name in a.setups.split(","):
        work = tempfile.mkdtemp(prefix="lakestream-partitions.")
        setup = {"one": lambda: Lakestream(work, 1), "cluster": lambda: Lakestream(work, 3),
                 "kafka": Kafka}[name]()
        try:
            run_setup(name, setup, steps, a, results)
        except Exception as e:   # one setup failing does not lose the others' rows
            row = {"setup": name, "partitions": -1, "not_run": "failed: %s" % e}
            results.append(row)
            print(json.dumps(row), flush=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    name = "%s-%spartition-scaling" % (stamp, a.tag + "-" if a.tag else "")
    os.makedirs(a.out, exist_ok=True)
    binary = os.environ.get("BENCH_LAKESTREAM_BIN") or lsbroker.binary_path()
    rev = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    report = {"command": " ".join([os.path.relpath(sys.argv[0], os.path.join(HERE, ".."))]
                                  + sys.argv[1:]),
              "stamp": stamp, "binary": "%s at %s" % (os.path.relpath(binary), rev),
              "kafka_libs": os.path.relpath(bench.KAFKA_LIBS),
              "loadavg_end": os.getloadavg(), "steps": results}
    with open(os.path.join(a.out, name + ".json"), "w") as f:
        json.dump(report, f, indent=2)
    with open(os.path.join(a.out, name + ".md"), "w") as f:
        f.write(markdown(report))
    ran = [r for r in results if "rss_mib" in r]
    xs = sorted({r["partitions"] for r in ran})

    def series(setup, f):
        by = {r["partitions"]: f(r) for r in ran if r["setup"] == setup}
        return [by.get(x) for x in xs]
    plots = []
    for setup in a.setups.split(","):
        plots += [("%s: produce p99 ms" % setup, series(setup, lambda r: r["produce"].get("p99_ms"))),
                  ("%s: fetch p99 ms" % setup, series(setup, lambda r: r["fetch"].get("p99_ms")))]
    if xs:
        write_plot(os.path.join(a.out, name + ".svg"), xs, "", plots,
                   "produce and fetch p99 to one partition as partitions grow "
                   "(x: partitions, log scale; each series scaled to its max)", log_x=True)
    print("wrote %s.{json,md,svg}" % os.path.join(a.out, name))


if __name__ == "__main__":
    main()
