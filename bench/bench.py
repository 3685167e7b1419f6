#!/usr/bin/env python3
"""Lakestream benchmarks, side by side with Apache Kafka, in one run.

For each repetition, every target broker is started fresh on 127.0.0.1 (temp data
dir), the same load driver (build/bench/lsbench) runs every scenario against it
with the same settings, and the broker is stopped again (only the PIDs this
script started). Target order rotates per repetition so no target always runs
first. Figures are medians over the repetitions; ratios are lakestream / Kafka.

Scenarios (see bench/README.md):
  produce-throughput  max-throughput produce, 1 KiB, 16 partitions, acks=all, linger 5 ms
  produce-latency     produce at a fixed rate below saturation: p50/p99/p99.9
  e2e-latency         produce -> consume (assigned partitions) latency at a fixed rate
  consume-catchup     load a topic, restart lakestream (cold read cache: reads come
                      from WAL objects), then read it all back from the beginning
  s3-latency          (scenario 5) produce-latency with the objstore fault wrapper
                      injecting an S3-like PUT latency; p99 as a multiple of the injected p99
  s3-latency-reads    (5d) the same while a consumer catches up on another topic from
                      the store (its GETs slowed too): does produce wait behind reads?
  consume-catchup-compacted  (4b) the same catch-up once everything is in compacted objects
  s3-radosgw          (5b) produce-latency with the S3 backend against a throwaway radosgw
  pg-latency          (5c) produce-latency with the metadata on a throwaway PostgreSQL
                      (tools/pg/pg.sh) instead of the embedded SQLite
  materialization     (6) WAL -> committed Iceberg table, vs DuckDB COPY ... TO Parquet
  zero-etl            (7) CPU s and bytes written per GiB into a table: lakestream vs
                      Kafka + a PyIceberg consumer (bench/iceberg_consumer.py)
  table-freshness     (8) produce ack -> visible in the table's current snapshot
  upsert-freshness    (8b) the same into an upsert table (compacted topic, keyed
                      records, write.mode=upsert), beside scenario 8's append table
  key-compaction      (8c) key compaction throughput (compact/keycompact.c): a loaded
                      topic's compacted objects, once cleanup.policy=compact is set,
                      cleaned to the latest record per key; records/s
  txn-produce         (9) transactional produce throughput, transactions of 100
                      records (bench/txn_produce.py), beside the same producers
                      without transactions

Needs: bench/setup.sh run once (Kafka jars in .cache/bench/kafka/libs, gnuplot, .venv).
Runs under .venv's python (bench/run.sh): scenarios 6-8 import confluent-kafka,
PyIceberg and DuckDB. BENCH_LAKESTREAM_BIN / BENCH_LSBENCH_BIN pick the binaries (default build/);
BENCH_LAKESTREAM_BASE_BIN names an older build: the target lakestream-base runs it (as
lakestream), and the s3-latency scenarios add a "-base" row beside their broker,
interleaved in the same run.
"""
import argparse
import base64
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import multiprocessing
import tempfile
import time
import urllib.error
import urllib.request
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRIVER = os.environ.get("BENCH_LSBENCH_BIN") or os.path.join(ROOT, "build", "bench", "lsbench")
LAKESTREAM = os.environ.get("BENCH_LAKESTREAM_BIN") or os.path.join(ROOT, "build", "lakestream")
BASE_BIN = os.environ.get("BENCH_LAKESTREAM_BASE_BIN")
LAKESTREAM_BUILT = LAKESTREAM  # the build output (LAKESTREAM becomes a private copy)


def lakestream_env(extra=None):
    """The environment for the broker binary: the bench's own, less the
    LAKESTREAM_* variables (the broker reads those as its settings and
    refuses unknown ones, such as the test harness's LAKESTREAM_BIN)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}
    env.update(extra or {})
    return env
CONSUMER = os.path.join(ROOT, "bench", "iceberg_consumer.py")
RADOSGW = os.path.join(ROOT, "tools", "s3", "radosgw.sh")
# The Kafka peer: bench/setup.sh installs bench/kafka/pom.xml's version here;
# BENCH_KAFKA_LIBS points at another install (e.g. .cache/java/tools, Kafka's tools jars).
KAFKA_LIBS = os.environ.get("BENCH_KAFKA_LIBS") or os.path.join(ROOT, ".cache", "bench", "kafka",
                                                                "libs")
# The newest Kafka beside it (target kafka-4.4): the tests' tools and server jars
# (tests/integration/java/tools/pom.xml, installed by tools/install-deps.sh test).
KAFKA44_LIBS = os.path.join(ROOT, ".cache", "java", "tools")
RESULTS = os.path.join(ROOT, "bench", "results")

# Run order: latency first, then the scenarios that write the most.
SCENARIOS = ["produce-latency", "e2e-latency", "produce-throughput", "txn-produce",
             "consume-catchup",
             "s3-latency", "s3-latency-reads", "consume-catchup-compacted", "s3-radosgw",
             "pg-latency", "materialization",
             "typed-materialization",
             "zero-etl", "table-freshness", "upsert-freshness", "upsert-bytes", "key-compaction"]
# Scenarios on brokers of their own (a fresh broker with its own configuration per
# repetition, see solo_plan()); the others share one start of each main target.
SOLO = ["s3-latency", "s3-latency-reads", "consume-catchup-compacted", "s3-radosgw", "pg-latency", "materialization",
        "typed-materialization",
        "zero-etl", "table-freshness", "upsert-freshness", "upsert-bytes", "key-compaction"]
# Scenarios that need features still being built elsewhere; they slot in here
# (a function per scenario below, plus an entry in METRICS) when those land.
PENDING = {}
# The peer a scenario's ratios are taken against (default: kafka).
PEER = {"materialization": "duckdb", "typed-materialization": "kafka+fastavro",
        "zero-etl": "kafka+pyiceberg",
        "table-freshness": "kafka+pyiceberg", "upsert-freshness": "lakestream append (#8)",
        "upsert-bytes": "lakestream-cow", "key-compaction": "lakestream"}
# Rows a scenario borrows from another one of the same run (same measurement, so not
# repeated): scenario -> (source scenario, {source target: row name}).
BORROW = {
    "consume-catchup-compacted": ("consume-catchup", {"kafka": "kafka",
                                                      "lakestream": "lakestream-wal (#4)"}),
    "s3-radosgw": ("produce-latency", {"kafka": "kafka", "lakestream": "lakestream-file (#2)"}),
    "pg-latency": ("produce-latency", {"kafka": "kafka", "lakestream": "lakestream-sqlite (#2)"}),
    "upsert-freshness": ("table-freshness", {"lakestream": "lakestream append (#8)",
                                             "kafka+pyiceberg": "kafka+pyiceberg (#8)"}),
}

# metric name -> (path into the driver JSON, unit, higher_is_better)
METRICS = {
    "produce-throughput": {
        "mb_per_sec": (("produce", "mb_per_sec"), "MiB/s", True),
        "msgs_per_sec": (("produce", "msgs_per_sec"), "msg/s", True),
        "p50_ms": (("produce", "latency", "p50_ms"), "ms", False),
        "p99_ms": (("produce", "latency", "p99_ms"), "ms", False),
    },
    "produce-latency": {
        "p50_ms": (("produce", "latency", "p50_ms"), "ms", False),
        "p99_ms": (("produce", "latency", "p99_ms"), "ms", False),
        "p999_ms": (("produce", "latency", "p999_ms"), "ms", False),
        "max_ms": (("produce", "latency", "max_ms"), "ms", False),
    },
    "e2e-latency": {
        "p50_ms": (("e2e", "latency", "p50_ms"), "ms", False),
        "p99_ms": (("e2e", "latency", "p99_ms"), "ms", False),
        "p999_ms": (("e2e", "latency", "p999_ms"), "ms", False),
        "produce_p99_ms": (("produce", "latency", "p99_ms"), "ms", False),
    },
    "consume-catchup": {
        "mb_per_sec": (("consume", "mb_per_sec"), "MiB/s", True),
        "msgs_per_sec": (("consume", "msgs_per_sec"), "msg/s", True),
        "seconds": (("consume", "seconds"), "s", False),
    },
    "s3-latency": {
        "p50_ms": (("produce", "latency", "p50_ms"), "ms", False),
        "p99_ms": (("produce", "latency", "p99_ms"), "ms", False),
        "p999_ms": (("produce", "latency", "p999_ms"), "ms", False),
        "p99_over_store_p99": (("derived", "p99_over_store_p99"), "x", False),
    },
    "s3-latency-reads": {
        "p50_ms": (("produce", "latency", "p50_ms"), "ms", False),
        "p99_ms": (("produce", "latency", "p99_ms"), "ms", False),
        "p999_ms": (("produce", "latency", "p999_ms"), "ms", False),
        "p99_over_store_p99": (("derived", "p99_over_store_p99"), "x", False),
        "reader_mb_s": (("reader", "mb_per_sec"), "MiB/s", True),
    },
    "consume-catchup-compacted": {
        "mb_per_sec": (("consume", "mb_per_sec"), "MiB/s", True),
        "msgs_per_sec": (("consume", "msgs_per_sec"), "msg/s", True),
        "seconds": (("consume", "seconds"), "s", False),
        "compact_s": (("compact", "seconds"), "s", False),
        "rss_peak_mib": (("broker_mem", "rss_peak_mib"), "MiB", False),
        "store_read_mib": (("broker_mem", "read_mib"), "MiB", False),
    },
    "s3-radosgw": {
        "p50_ms": (("produce", "latency", "p50_ms"), "ms", False),
        "p99_ms": (("produce", "latency", "p99_ms"), "ms", False),
        "p999_ms": (("produce", "latency", "p999_ms"), "ms", False),
        "max_ms": (("produce", "latency", "max_ms"), "ms", False),
        "put_p50_ms": (("store_put", "p50_ms"), "ms", False),
        "put_p99_ms": (("store_put", "p99_ms"), "ms", False),
        "put_bytes": (("store_put", "bytes"), "B", False),
        "p99_over_put_p99": (("derived", "p99_over_put_p99"), "x", False),
    },
    "pg-latency": {
        "p50_ms": (("produce", "latency", "p50_ms"), "ms", False),
        "p99_ms": (("produce", "latency", "p99_ms"), "ms", False),
        "p999_ms": (("produce", "latency", "p999_ms"), "ms", False),
        "max_ms": (("produce", "latency", "max_ms"), "ms", False),
    },
    "materialization": {
        "records_per_sec": (("materialize", "records_per_sec"), "rec/s", True),
        "mb_per_sec": (("materialize", "mb_per_sec"), "MiB/s", True),
        "seconds": (("materialize", "seconds"), "s", False),
        "cpu_s": (("materialize", "cpu_s"), "CPU s", False),
    },
    "zero-etl": {
        "cpu_s_per_gib": (("zero_etl", "cpu_s_per_gib"), "CPU s/GiB", False),
        "written_gib_per_gib": (("zero_etl", "written_gib_per_gib"), "GiB/GiB", False),
        "metadata_bytes_per_gib": (("zero_etl", "metadata_bytes_per_gib"), "B/GiB", False),
        "broker_cpu_s": (("zero_etl", "broker_cpu_s"), "CPU s", False),
        "consumer_cpu_s": (("zero_etl", "consumer_cpu_s"), "CPU s", False),
        "seconds": (("zero_etl", "seconds"), "s", False),
    },
    "table-freshness": {
        "p50_ms": (("freshness", "p50_ms"), "ms", False),
        "p99_ms": (("freshness", "p99_ms"), "ms", False),
        "max_ms": (("freshness", "max_ms"), "ms", False),
        "produce_p99_ms": (("freshness", "ack_p99_ms"), "ms", False),
    },
}
METRICS["upsert-freshness"] = METRICS["table-freshness"]
METRICS["typed-materialization"] = {
    "records_per_sec": (("materialize", "records_per_sec"), "rec/s", True),
    "mb_per_sec": (("materialize", "mb_per_sec"), "MiB/s", True),
    "seconds": (("materialize", "seconds"), "s", False),
    "cpu_s": (("materialize", "cpu_s"), "CPU s", False),
}
METRICS["key-compaction"] = {
    "records_per_sec": (("keycompact", "records_per_sec"), "rec/s", True),
    "mb_per_sec": (("keycompact", "mb_per_sec"), "MiB/s", True),
    "e2e_records_per_sec": (("keycompact", "e2e_records_per_sec"), "rec/s", True),
    "clean_s": (("keycompact", "clean_s"), "s", False),
    "wall_s": (("keycompact", "wall_s"), "s", False),
}
METRICS["upsert-bytes"] = {
    "written_per_gib_1pct": (("upsert_bytes", "1", "written_per_gib"), "GiB/GiB", False),
    "written_per_gib_10pct": (("upsert_bytes", "10", "written_per_gib"), "GiB/GiB", False),
    "written_per_gib_100pct": (("upsert_bytes", "100", "written_per_gib"), "GiB/GiB", False),
    "written_per_gib_all": (("upsert_bytes", "all", "written_per_gib"), "GiB/GiB", False),
    "commit_s_10pct": (("upsert_bytes", "10", "commit_s"), "s", False),
}
METRICS["txn-produce"] = {
    "txn_msgs_per_sec": (("produce", "msgs_per_sec"), "msg/s", True),
    "txn_mb_per_sec": (("produce", "mb_per_sec"), "MiB/s", True),
    "txns_per_sec": (("txn", "txns_per_sec"), "txn/s", True),
    "commit_p50_ms": (("txn", "commit", "p50_ms"), "ms", False),
    "commit_p99_ms": (("txn", "commit", "p99_ms"), "ms", False),
    "plain_msgs_per_sec": (("plain", "msgs_per_sec"), "msg/s", True),
    "txn_over_plain": (("derived", "txn_over_plain"), "x", True),
}
TXN_DRIVER = os.path.join(ROOT, "bench", "txn_produce.py")


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"port {port} not listening after {timeout}s")


class Broker:
    """One broker process this script started (and only this one is ever killed)."""

    def __init__(self, name, kind, extra=None, rest=False, env=None, registry=False, ssl=None,
                 prepare=None, libs=None, bin=None):
        self.name, self.kind, self.extra = name, kind, extra or {}
        self.bin = bin  # lakestream: another binary than LAKESTREAM's
        self.libs = libs or KAFKA_LIBS  # kafka: the jars it runs
        self.prepare = prepare  # prepare(db): before each start, with the start's {db} name
        # make_pki(): also an SSL listener on ssl_port, and with its "scram" set a
        # SASL_SSL one (SCRAM-SHA-512, SCRAM_USER) on sasl_port
        self.ssl = ssl
        self.ssl_port = self.sasl_port = None
        self.rest = rest      # lakestream: serve the Iceberg REST catalog (tables)
        self.registry = registry  # lakestream: serve the schema registry (typed tables)
        self.registry_port = None
        self.env = env or {}  # extra environment (S3 credentials)
        self.proc = None
        self.dir = None
        self.port = None
        self.http_port = None
        self.ctl_port = None  # kafka: its KRaft controller listener

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.port}"

    @property
    def ssl_bootstrap(self):
        return f"127.0.0.1:{self.ssl_port}"

    @property
    def sasl_bootstrap(self):
        return f"127.0.0.1:{self.sasl_port}"

    def start(self):
        self.dir = tempfile.mkdtemp(prefix=f"lsbench-{self.name}-")
        self.port = free_port()
        self.ssl_port = free_port() if self.ssl else None
        self.sasl_port = free_port() if self.ssl and self.ssl.get("scram") else None
        if self.kind == "kafka":
            self._start_kafka()
        else:
            self._start_lakestream()
        log(f"{self.name}: pid {self.proc.pid} on {self.bootstrap}")

    def _start_lakestream(self):
        if self.rest and not self.http_port:
            self.http_port = free_port()
        # The Iceberg REST catalog only where a scenario reads tables through it.
        http = f"127.0.0.1:{self.http_port}" if self.rest else ""
        if self.registry and not self.registry_port:
            self.registry_port = free_port()
        reg = f"127.0.0.1:{self.registry_port}" if self.registry else ""
        listeners = f"127.0.0.1:{self.port}"
        if self.ssl:
            listeners = f"PLAINTEXT://{listeners},SSL://127.0.0.1:{self.ssl_port}"
        if self.sasl_port:
            listeners += f",SASL_SSL://127.0.0.1:{self.sasl_port}"
            subprocess.run([LAKESTREAM, "users", "add", SCRAM_USER[0], "--mechanism",
                            "SCRAM-SHA-512", f"--data.dir={self.dir}/data"],
                           input=SCRAM_USER[1] + "\n", text=True, check=True,
                           capture_output=True, env=lakestream_env(self.env))
        args = [self.bin or LAKESTREAM, "serve", f"--data.dir={self.dir}/data",
                f"--listeners={listeners}", f"--http.listen={http}",
                f"--schema.registry.listen={reg}"]
        if self.ssl:
            args.append(f"--ssl.keystore.location={self.ssl['keystore']}")
        db = os.path.basename(self.dir).replace("-", "_")  # unique per start
        if self.prepare:
            self.prepare(db)
        args += [f"--{k}={v.format(dir=self.dir, name=os.path.basename(self.dir), db=db)}"
                 for k, v in self.extra.items()]
        out = open(os.path.join(self.dir, "broker.log"), "a")
        self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=lakestream_env(self.env))
        try:
            wait_port(self.port, self.proc, 30)
        except RuntimeError as e:
            tail = open(os.path.join(self.dir, "broker.log")).read()[-1500:]
            raise RuntimeError(f"{self.name}: {e}; {' '.join(args)}\n{tail}") from None

    def _start_kafka(self):
        # a restart (keep_dir) keeps the controller's port and the formatted log dir
        ctl = self.ctl_port = self.ctl_port or free_port()
        logs = os.path.join(self.dir, "kafka-logs")
        props = os.path.join(self.dir, "server.properties")
        ssl_l, ssl_map, ssl_conf = "", "", ""
        if self.ssl:
            # The same PEM keystore (key + chain) Lakestream reads.
            ssl_l = f",SSL://127.0.0.1:{self.ssl_port}"
            ssl_map = ",SSL:SSL"
            ssl_conf = (f"ssl.keystore.type=PEM\nssl.keystore.location={self.ssl['keystore']}\n"
                        f"ssl.truststore.type=PEM\nssl.truststore.location={self.ssl['ca']}\n")
        if self.sasl_port:
            ssl_l += f",SASL_SSL://127.0.0.1:{self.sasl_port}"
            ssl_map += ",SASL_SSL:SASL_SSL"
            ssl_conf += ("sasl.enabled.mechanisms=SCRAM-SHA-512\n"
                         "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config="
                         "org.apache.kafka.common.security.scram.ScramLoginModule required;\n")
        with open(props, "w") as f:
            f.write(f"""process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{ctl}
listeners=PLAINTEXT://127.0.0.1:{self.port}{ssl_l},CONTROLLER://127.0.0.1:{ctl}
advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}{ssl_l}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT{ssl_map}
{ssl_conf}log.dirs={logs}
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
""")
        l4j = os.path.join(self.dir, "log4j2.properties")
        with open(l4j, "w") as f:
            f.write("""status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = STDOUT
""")
        cp = os.path.join(self.libs, "*")
        cluster = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode()[:22]
        java = ["java", f"-Dlog4j2.configurationFile={l4j}", "-cp", cp]
        scram = ["--add-scram", "SCRAM-SHA-512=[name={},password={}]".format(*SCRAM_USER)] \
            if self.sasl_port else []
        if not os.path.exists(os.path.join(logs, "meta.properties")):
            subprocess.run(java + ["kafka.tools.StorageTool", "format", "-t", cluster, "-c", props]
                           + scram,
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # Heap and GC flags as bin/kafka-server-start.sh and kafka-run-class.sh set them.
        jvm = ["-Xms1G", "-Xmx1G", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
               "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
               "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]
        out = open(os.path.join(self.dir, "broker.log"), "a")
        self.proc = subprocess.Popen(["java"] + jvm + java[1:] + ["kafka.Kafka", props],
                                     stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        wait_port(self.port, self.proc, 90)

    def restart(self):
        """A fresh process over the same stores (cold read cache), same ports."""
        self.stop(keep_dir=True)
        self.start_again()

    def start_again(self):
        """After stop(keep_dir=True): start over the same stores and ports."""
        self._start_kafka() if self.kind == "kafka" else self._start_lakestream()
        log(f"{self.name}: restarted, pid {self.proc.pid}")

    def cpu_s(self):
        """utime + stime of the broker process so far (all its threads)."""
        f = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def mem_io(self):
        """Peak and current resident memory (MiB) of the broker process since it
        started (/proc/PID/status VmHWM, VmRSS), and the bytes it read through
        read(2)/pread(2) (/proc/PID/io rchar: the file store's GETs, SQLite)."""
        st = {}
        for line in open(f"/proc/{self.proc.pid}/status"):
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS"):
                st[k] = int(v.split()[0]) / 1024
        rchar = 0
        for line in open(f"/proc/{self.proc.pid}/io"):
            if line.startswith("rchar:"):
                rchar = int(line.split()[1])
        return {"rss_peak_mib": round(st.get("VmHWM", 0), 1),
                "rss_mib": round(st.get("VmRSS", 0), 1), "read_mib": round(rchar / 2**20, 1)}

    def store_get_bytes(self):
        """Lakestream: bytes its store GETs returned since it started, from the
        read-path line it logs when it stops (restarts it to get the line)."""
        log_path = os.path.join(self.dir, "broker.log")
        self.restart()
        got = None
        for line in open(log_path, errors="replace"):
            m = re.search(r"read path: .* store GETs .* returning (\d+) bytes", line)
            if m:
                got = int(m.group(1))
        return got

    def write_bytes(self):
        """Bytes the broker process caused to be written to storage (/proc/PID/io)."""
        for line in open(f"/proc/{self.proc.pid}/io"):
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
        return 0

    def stop(self, keep_dir=False):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                log(f"{self.name}: pid {self.proc.pid} ignored SIGTERM, killing it")
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if not keep_dir and self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
            self.http_port = None
            self.ctl_port = None


METRIC_RE = re.compile(r'^([a-z_]+)(?:\{([^}]*)\})? ([0-9.eE+-]+)$')


def scrape_metrics(broker):
    """{(metric name, labels text): value} of a lakestream broker's /metrics
    (one started with rest=True, which serves HTTP)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{broker.http_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = METRIC_RE.match(line)
        if m:
            out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


PUT_LINE = re.compile(r"put latency, (\d+) x (\d+) bytes\s+p50 ([0-9.]+) ms  p99 ([0-9.]+) ms  "
                      r"max ([0-9.]+) ms")


def put_floor(broker, m0, samples=100):
    """The S3 path's floor (5b): `lakestream check --latency` times `samples`
    bare create-only PUTs, one at a time, of the mean size of the WAL objects
    the broker committed since the metrics m0 (scrape_metrics before the
    load), to the same store under a fresh prefix, right after the load (the
    broker idle beside it)."""
    m = scrape_metrics(broker)
    objects = m.get(("lakestream_wal_objects_total", ""), 0) - \
        m0.get(("lakestream_wal_objects_total", ""), 0)
    wal_bytes = m.get(("lakestream_wal_bytes_total", ""), 0) - \
        m0.get(("lakestream_wal_bytes_total", ""), 0)
    size = int(wal_bytes / objects) if objects else 1 << 20
    url = broker.extra["object.store.url"].format(name=f"putfloor-{uuid.uuid4().hex[:8]}")
    with tempfile.TemporaryDirectory(prefix="lsbench-putfloor-") as d:
        p = subprocess.run([LAKESTREAM, "check", f"--data.dir={d}", f"--object.store.url={url}",
                            f"--latency={samples}", f"--latency-size={size}"],
                           capture_output=True, text=True, timeout=600,
                           env=lakestream_env(broker.env))
    got = PUT_LINE.search(p.stdout)
    if p.returncode != 0 or not got:
        raise RuntimeError(f"lakestream check --latency failed: {p.stdout[-800:]}{p.stderr[-400:]}")
    return {"samples": int(got.group(1)), "bytes": int(got.group(2)),
            "p50_ms": float(got.group(3)), "p99_ms": float(got.group(4)),
            "max_ms": float(got.group(5)), "wal_objects": int(objects)}


def driver(mode, broker, topic, args, timeout):
    cmd = [DRIVER, mode, "--brokers", broker.bootstrap, "--topic", topic] + args
    t = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if p.returncode != 0 or not p.stdout.strip():
        raise RuntimeError(f"driver failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    out = json.loads(p.stdout)
    out["wall_s"] = round(time.time() - t, 2)
    out["cmd"] = " ".join(os.path.relpath(c, ROOT) if c == DRIVER else c for c in cmd)
    return out


def common_args(a):
    return ["--partitions", str(a.partitions), "--size", str(a.size), "--acks", a.acks,
            "--linger-ms", str(a.linger_ms), "--compression", a.compression,
            "--keys", a.keys, "--warmup", str(a.warmup)] + (["--idempotence"] if a.idempotence else [])


def run_scenario(sc, broker, a, rep):
    topic = f"bench-{sc}-{rep}"
    base = common_args(a) + ["--create"]
    if sc == "produce-throughput":
        return driver("produce", broker, topic, base + ["--duration", str(a.duration)], 600)
    if sc in ("produce-latency", "s3-latency"):
        return driver("produce", broker, topic,
                      base + ["--rate", str(a.rate), "--duration", str(a.duration)], 600)
    if sc == "s3-latency-reads":
        return latency_beside_reads(broker, topic, base, a)
    if sc == "e2e-latency":
        return driver("e2e", broker, topic,
                      base + ["--rate", str(a.rate), "--duration", str(a.duration)], 600)
    if sc == "consume-catchup":
        load = driver("produce", broker, topic,
                      base + ["--count", str(a.catchup_count), "--duration", "0",
                              "--warmup", "0"], 900)
        if broker.kind == "lakestream":
            broker.restart()
        out = driver("consume", broker, topic, ["--timeout", "600"], 900)
        out["load"] = {"msgs_per_sec": load["produce"]["msgs_per_sec"],
                       "acked": load["produce"]["acked"]}
        return out
    if sc in ("s3-radosgw", "pg-latency"):
        m0 = scrape_metrics(broker) if sc == "s3-radosgw" else None
        out = driver("produce", broker, topic,
                     base + ["--rate", str(a.rate), "--duration", str(a.duration)], 600)
        if sc == "s3-radosgw":
            out["store_put"] = put_floor(broker, m0)
            out["derived"] = {"p99_over_put_p99":
                              out["produce"]["latency"]["p99_ms"] / out["store_put"]["p99_ms"]}
        return out
    if sc == "consume-catchup-compacted":
        return catchup_compacted(broker, topic, base, a)
    if sc == "materialization":
        return materialization(broker, topic, base, a)
    if sc == "typed-materialization":
        return typed_materialization(broker, topic, a)
    if sc == "zero-etl":
        return zero_etl(broker, topic, base, a)
    if sc == "table-freshness":
        return table_freshness(broker, topic, a)
    if sc == "upsert-freshness":
        return table_freshness(broker, topic, a, upsert=True)
    if sc == "txn-produce":
        return txn_produce(broker, topic, a)
    if sc == "key-compaction":
        return key_compaction(broker, topic, a)
    if sc == "upsert-bytes":
        return upsert_bytes(broker, topic, a)
    raise ValueError(sc)


KC_LINE = re.compile(r"log ([0-9a-f]{16}): key compaction read (\d+) records \((\d+) bytes\), "
                     r"kept (\d+), dropped (\d+) superseded and (\d+) tombstones, wrote (\d+) "
                     r"bytes in ([0-9.]+) s")


def kc_lines(broker):
    with open(os.path.join(broker.dir, "broker.log"), errors="replace") as f:
        return KC_LINE.findall(f.read())


def key_compaction(broker, topic, a):
    """8c: load --kc-count keyed records (--kc-keys keys, --kc-size bytes) into a topic
    with cleanup.policy=delete, wait until they are all in compacted objects, then set
    cleanup.policy=compact and time the key compaction of every partition: each clean
    logs what it read and its own duration (compactor.c). records_per_sec = records read
    / the cleans' own seconds (the cleaner's speed, one thread); e2e_records_per_sec =
    records / wall time from the config change to the last clean (scheduling included)."""
    from confluent_kafka.admin import AdminClient, ConfigResource
    parts = a.kc_partitions
    load = driver("produce", broker, topic,
                  ["--partitions", str(parts), "--size", str(a.kc_size), "--acks", a.acks,
                   "--linger-ms", str(a.linger_ms), "--compression", a.compression,
                   "--keys", f"uniform:{a.kc_keys}", "--warmup", "0", "--create",
                   "--count", str(a.kc_count), "--duration", "0"], 900)
    wait_for("WAL objects to be compacted away",
             lambda: not object_files(broker, "wal") and object_files(broker, "co"), 900, 0.2)
    before = len(kc_lines(broker))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry
    res = ConfigResource("TOPIC", topic, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact",
                    incremental_operation=AlterConfigOpType.SET)])
    t0 = time.monotonic()
    admin.incremental_alter_configs([res])[res].result(30)
    lines = wait_for("every partition key-compacted",
                     lambda: (lambda ls: ls[before:] if len(ls) - before >= parts else None)(
                         kc_lines(broker)), 900, 0.05)
    wall = time.monotonic() - t0
    read = sum(int(l[1]) for l in lines)
    nbytes = sum(int(l[2]) for l in lines)
    kept = sum(int(l[3]) for l in lines)
    clean_s = sum(float(l[7]) for l in lines)
    return {"load": {"msgs_per_sec": load["produce"]["msgs_per_sec"],
                     "acked": load["produce"]["acked"], "cmd": load["cmd"]},
            "keycompact": {"cleans": len(lines), "records_read": read, "bytes_read": nbytes,
                           "records_kept": kept, "keys": a.kc_keys,
                           "clean_s": round(clean_s, 3), "wall_s": round(wall, 3),
                           "records_per_sec": read / clean_s if clean_s else None,
                           "mb_per_sec": nbytes / clean_s / 2**20 if clean_s else None,
                           "e2e_records_per_sec": read / wall if wall else None}}


def upsert_bytes_plan(a):
    """--upsert-bytes-commits as [(percent of keys per commit, commits)]."""
    return [tuple(int(x) for x in part.split(":")) for part in a.upsert_bytes_commits.split(",")]


def upsert_bytes(broker, topic, a):
    """8d: bytes an upsert table writes per GiB of updates, by its strategy
    (lakestream.table.upsert.strategy: copy-on-write on lakestream-cow,
    merge-on-read on lakestream-mor, merge-on-read at format version 3 (deletion
    vectors) on lakestream-mor-v3). A compacted topic of --upsert-bytes-keys keys
    (--size random bytes each, 4 partitions) is loaded and materialized in one
    commit; then, for 1 %, 10 % and 100 % of the keys updated per commit,
    --upsert-bytes-commits commits (40, 10 and 3) (the commit interval is held at a day while
    the updates are produced, then shortened: one pass, one commit). Written = the
    added-files-size of every snapshot since (data files, delete files, and the
    maintenance rewrites of rewrite.min.files=4, which fold merge-on-read's deletes
    into data files), over the bytes of the updated records."""
    import random
    from confluent_kafka import Producer
    from pyiceberg.table import StaticTable
    mor = "-mor" in broker.name
    hold = {"lakestream.table.commit.interval.ms": "86400000"}
    create_topics(broker, {topic: {
        "cleanup.policy": "compact", "lakestream.table.enabled": "true",
        "lakestream.table.write.mode": "upsert", "lakestream.table.rewrite.min.files": "4",
        "lakestream.table.upsert.strategy": "merge-on-read" if mor else "copy-on-write",
        "lakestream.table.format.version": "3" if broker.name.endswith("-v3") else "2",
        **hold}})
    keys, size = a.upsert_bytes_keys, a.size
    last = {}
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                  "enable.idempotence": True, "linger.ms": 20, "batch.size": 1 << 20})
    failed = []

    def cb(err, m):
        if err:
            failed.append(err)
        else:
            last[m.partition()] = max(last.get(m.partition(), -1), m.offset())

    def produce(ks):
        for k in ks:
            while True:
                try:
                    p.produce(topic, key=b"key-%08d" % k, value=os.urandom(size),
                              on_delivery=cb)
                    break
                except BufferError:
                    p.poll(0.05)
        if p.flush(300) or failed:
            raise RuntimeError(f"loading {topic}: {failed[:3]}")

    def commit():
        """Shortens the interval (a pass starts at once), waits for the table to
        cover every record produced, holds the interval again: seconds."""
        time.sleep(1.2)  # every entry older than the 1 s interval
        t0 = time.time()
        alter_topic(broker, topic, {"lakestream.table.commit.interval.ms": "1000"})
        want = sorted(last.values())
        wait_for("the upsert table to catch up",
                 lambda: sorted(table_marks(broker, topic).values()) == want, 900, 0.05)
        secs = time.time() - t0
        alter_topic(broker, topic, hold)
        return secs

    def snapshots():
        url = f"http://127.0.0.1:{broker.http_port}/v1/namespaces/default/tables/{topic}"
        with urllib.request.urlopen(url, timeout=10) as r:
            loc = json.load(r)["metadata-location"]
        return StaticTable.from_metadata(loc).metadata.snapshots

    def written_since(seq):
        snaps = [s for s in snapshots() if s.sequence_number > seq]
        size_of = lambda s: int(s.summary.get("added-files-size") or 0)
        return (sum(size_of(s) for s in snaps if s.summary.operation.value != "replace"),
                sum(size_of(s) for s in snaps if s.summary.operation.value == "replace"),
                max([seq] + [s.sequence_number for s in snaps]))

    produce(range(keys))
    commit()
    seq = max(s.sequence_number for s in snapshots())
    rnd = random.Random(8)
    out, total_w, total_u = {}, 0, 0
    for pct, ncommits in upsert_bytes_plan(a):
        n = max(1, keys * pct // 100)
        secs = []
        seq0 = seq
        for _ in range(ncommits):
            produce(rnd.sample(range(keys), n))
            secs.append(commit())
        commits_w, maint_w, seq = written_since(seq0)
        upd = ncommits * n * (size + 12)
        total_w += commits_w + maint_w
        total_u += upd
        out[str(pct)] = {"updated_keys_per_commit": n, "commits": ncommits, "update_bytes": upd,
                         "commit_bytes": commits_w, "maintenance_bytes": maint_w,
                         "written_per_gib": (commits_w + maint_w) / upd,
                         "commit_s": sorted(secs)[len(secs) // 2]}
    ops = {}
    for s in snapshots():
        op = s.summary.operation.value
        ops[op] = ops.get(op, 0) + 1
        if int(s.summary.get("removed-delete-files") or 0):
            ops["delete_files_folded"] = (ops.get("delete_files_folded", 0)
                                          + int(s.summary["removed-delete-files"]))
    out["all"] = {"written_per_gib": total_w / total_u, "table_bytes": keys * (size + 12),
                  "snapshots": ops}
    return {"upsert_bytes": out}


def txn_produce(broker, topic, a):
    """Scenario 9: bench/txn_produce.py in txn mode, then in plain mode (same
    producers, no transactions) on a second topic; one JSON with both."""
    def run(mode, t):
        cmd = [sys.executable, TXN_DRIVER, "--mode", mode, "--brokers", broker.bootstrap,
               "--topic", t, "--create", "--partitions", str(a.partitions), "--size", str(a.size),
               "--linger-ms", str(a.linger_ms), "--txn-records", str(a.txn_records),
               "--producers", str(a.txn_producers), "--duration", str(a.duration),
               "--warmup", str(a.warmup)]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=600)
        if p.returncode != 0 or not p.stdout.strip():
            raise RuntimeError(f"txn driver failed ({p.returncode}): {' '.join(cmd)}\n"
                               f"{p.stderr[-2000:]}")
        out = json.loads(p.stdout)
        out["cmd"] = " ".join(os.path.relpath(c, ROOT) if c == TXN_DRIVER else c for c in cmd)
        return out
    txn = run("txn", topic)
    plain = run("plain", topic + "-plain")
    out = {"produce": txn["produce"], "txn": txn["txn"], "plain": plain["produce"],
           "cmd": txn["cmd"], "plain_cmd": plain["cmd"]}
    pm = plain["produce"]["msgs_per_sec"]
    out["derived"] = {"txn_over_plain": txn["produce"]["msgs_per_sec"] / pm if pm else None}
    return out


def object_files(broker, prefix):
    """Files under the file object store's PREFIX/ (lakestream's objects dir)."""
    root = os.path.join(broker.dir, "data", "objects", prefix)
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]


def table_metadata_bytes(broker, table):
    """Lakestream: bytes of the table's metadata files (metadata.json, manifest
    lists, manifests) in the file store, each file once however many names it has
    (v<N>.metadata.json is a hard link of the catalog's file): what was written,
    as long as nothing was deleted yet (files stay lakestream.table.file.delete.delay.ms,
    5 min by default, after they stop being referenced)."""
    seen, total = set(), 0
    for f in object_files(broker, f"warehouse/default/{table}/metadata"):
        st = os.stat(f)
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            total += st.st_size
    return total


def wait_for(what, cond, timeout, every=0.1):
    deadline = time.time() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.time() > deadline:
            raise RuntimeError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(every)


def catchup_compacted(broker, topic, base, a):
    """4b: load on a broker with a zero hot window, wait until no WAL object is left
    (everything in compacted objects), restart (cold read cache), read it all back."""
    # lakestream-table: the topic is a raw table with table.cold.reads=table, so the
    # pass leaves its ranges only in the table's Parquet files and the read back is
    # rebuilt from those rows (no compacted object is written)
    tabled = broker.name == "lakestream-table"
    cfg = (["--topic-config", "lakestream.table.enabled=true",
            "--topic-config", "lakestream.table.commit.interval.ms=1000"] if tabled else [])
    load = driver("produce", broker, topic,
                  base + cfg + ["--count", str(a.catchup_count), "--duration", "0",
                                "--warmup", "0"], 900)
    t = time.time()
    wait_for("WAL objects to be compacted away",
             lambda: not object_files(broker, "wal") and (tabled or object_files(broker, "co")),
             900, 0.2)
    compact_s = time.time() - t
    cos = object_files(broker, "co")
    broker.restart()
    out = driver("consume", broker, topic, ["--timeout", "600"], 900)
    # the read cache's footprint: the restarted process did nothing but this read
    out["broker_mem"] = broker.mem_io()
    # store reads: the broker's own count (logged at shutdown), since ranges it
    # maps from the file store (objstore_fs.c) never pass through read(2)
    got = broker.store_get_bytes()
    if got is not None:
        out["broker_mem"]["read_mib"] = round(got / 2**20, 1)
    out["load"] = {"msgs_per_sec": load["produce"]["msgs_per_sec"],
                   "acked": load["produce"]["acked"]}
    out["compact"] = {"seconds": round(compact_s, 3), "after_load_s": round(compact_s, 3),
                      "objects": len(cos), "bytes": sum(os.path.getsize(f) for f in cos)}
    return out


def table_marks(broker, table):
    """Lakestream: {log id: last materialized offset} of the table (its properties),
    read through the broker's Iceberg REST catalog (what an engine sees); {} before
    the table exists."""
    url = f"http://127.0.0.1:{broker.http_port}/v1/namespaces/default/tables/{table}"
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            md = json.load(r)["metadata"]
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return {}
        raise
    # the table properties hold every log's last materialized offset
    return {k: int(v) for k, v in (md.get("properties") or {}).items()
            if k.startswith("lakestream.log.")}


def table_rows(marks):
    """Rows a table holds when every log's offsets are dense from 0 (fresh topics)."""
    return sum(v + 1 for v in marks.values())


def alter_topic(broker, topic, configs):
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource)
    res = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # alive until the answer
    admin.incremental_alter_configs([res])[res].result(30)


def materialization(broker, topic, base, a):
    """6: load a table-enabled topic whose commit interval keeps everything in WAL
    objects, then shorten the interval (a policy change starts a pass at once) and
    time until the table's current snapshot holds every record. DuckDB then writes
    the same rows (read from that table's Parquet into memory first) with COPY ... TO."""
    n = a.table_count
    cfg = ["--topic-config", "lakestream.table.enabled=true",
           "--topic-config", "lakestream.table.commit.interval.ms=86400000"]
    load = driver("produce", broker, topic,
                  base + cfg + ["--count", str(n), "--duration", "0", "--warmup", "0"], 900)
    time.sleep(1.5)  # every entry older than the 1 s interval set below
    cpu0, io0, t0 = broker.cpu_s(), broker.write_bytes(), time.time()
    alter_topic(broker, topic, {"lakestream.table.commit.interval.ms": "1000"})
    wait_for("the table to hold every record",
             lambda: table_rows(table_marks(broker, topic)) >= n, 900, 0.05)
    secs = time.time() - t0
    out = {"load": {"msgs_per_sec": load["produce"]["msgs_per_sec"]},
           "materialize": {"records": n, "seconds": round(secs, 3),
                           "records_per_sec": n / secs, "mb_per_sec": n * a.size / secs / 2**20,
                           "cpu_s": broker.cpu_s() - cpu0,
                           "write_bytes": broker.write_bytes() - io0}}
    out["peers"] = {"duckdb": duckdb_copy(broker, topic, n, a)}
    return out


def duckdb_copy(broker, topic, n, a):
    import duckdb
    from pyiceberg.table import StaticTable
    url = f"http://127.0.0.1:{broker.http_port}/v1/namespaces/default/tables/{topic}"
    with urllib.request.urlopen(url, timeout=10) as r:
        loc = json.load(r)["metadata-location"]
    files = [f.file.file_path.replace("file://", "")
             for f in StaticTable.from_metadata(loc).scan().plan_files()]
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM read_parquet(?)", [files])
    rows = con.execute("SELECT count(*) FROM t").fetchone()[0]
    if rows != n:
        raise RuntimeError(f"DuckDB read {rows} rows from the table, want {n}")
    dest = os.path.join(broker.dir, "duckdb.parquet")
    settle()
    r0, t0 = resource_self(), time.time()
    con.execute(f"COPY t TO '{dest}' (FORMAT parquet, COMPRESSION zstd)")
    secs = time.time() - t0
    con.close()
    return {"materialize": {"records": n, "seconds": round(secs, 3), "records_per_sec": n / secs,
                            "mb_per_sec": n * a.size / secs / 2**20,
                            "cpu_s": resource_self() - r0,
                            "parquet_bytes": os.path.getsize(dest),
                            "threads": os.cpu_count()},
            "cmd": "COPY t TO 'duckdb.parquet' (FORMAT parquet, COMPRESSION zstd)"}


def create_topics(broker, configs):
    """{topic: config}: creates them, 4 partitions each."""
    from confluent_kafka.admin import AdminClient, NewTopic
    adm = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in adm.create_topics([NewTopic(t, 4, 1, config=c) for t, c in configs.items()]).values():
        f.result(30)


def load_values(broker, topic, values):
    """Produces values with an idempotent acks=all producer."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                  "enable.idempotence": True, "linger.ms": 20, "batch.size": 1 << 20})
    failed = []
    for i, v in enumerate(values):
        while True:
            try:
                p.produce(topic, value=v, key=b"%d" % i,
                          on_delivery=lambda err, m: err and failed.append(err))
                break
            except BufferError:
                p.poll(0.05)
    if p.flush(300) or failed:
        raise RuntimeError(f"loading {topic}: {failed[:3]}")


def materialize_now(broker, topic, n, value_bytes):
    """Scenario 6's measurement: shorten the commit interval, time until the
    table covers n records."""
    time.sleep(1.5)
    before = table_rows(table_marks(broker, topic))
    if before:
        raise RuntimeError(f"table {topic} holds {before} rows before its interval was shortened")
    cpu0, t0 = broker.cpu_s(), time.time()
    alter_topic(broker, topic, {"lakestream.table.commit.interval.ms": "1000"})
    wait_for(f"table {topic} to hold every record",
             lambda: table_rows(table_marks(broker, topic)) >= n, 900, 0.05)
    secs = time.time() - t0
    return {"materialize": {"records": n, "seconds": round(secs, 3), "records_per_sec": n / secs,
                            "mb_per_sec": value_bytes / secs / 2**20,
                            "cpu_s": broker.cpu_s() - cpu0}}


def typed_materialization(broker, topic, a):
    """6t: the same Avro records materialized typed and raw (lakestream), or
    decoded by a Kafka consumer with fastavro into a typed PyIceberg table."""
    import typed_record
    n = a.typed_count
    if broker.kind == "kafka":
        values = typed_record.values(1, n)
        create_topics(broker, {topic: {}})
        load_values(broker, topic, values)
        vb = sum(len(v) for v in values)
        schema_file = os.path.join(broker.dir, "typed.avsc")
        with open(schema_file, "w") as f:
            json.dump(typed_record.SCHEMA, f)
        cons, _ = start_consumer(broker, topic, n, 10000, ["--avro-schema", schema_file])
        try:
            c = finish_consumer(cons, 900)
        finally:
            kill_consumer(cons)
        return {"materialize": {"records": n, "seconds": c["seconds"],
                                "records_per_sec": n / c["seconds"],
                                "mb_per_sec": vb / c["seconds"] / 2**20, "cpu_s": c["cpu_s"]},
                "consumer": c}
    req = urllib.request.Request(
        f"http://127.0.0.1:{broker.registry_port}/subjects/{topic}-value/versions",
        data=json.dumps({"schema": json.dumps(typed_record.SCHEMA)}).encode(), method="POST",
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        sid = json.load(r)["id"]
    values = typed_record.values(sid, n)
    vb = sum(len(v) for v in values)
    config = {"lakestream.table.enabled": "true",
              "lakestream.table.commit.interval.ms": "86400000"}
    # typed and raw on brokers of their own: any pass (a policy change starts
    # one) makes a table's first commit, whatever its interval
    if broker.name != "lakestream-raw":
        config["lakestream.table.value.format"] = "schema-registry"
    create_topics(broker, {topic: config})
    load_values(broker, topic, values)
    out = materialize_now(broker, topic, n, vb)
    out["value_bytes"] = vb
    return out


def resource_self():
    import resource
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def start_consumer(broker, topic, expect, commit_ms, extra=()):
    """Kafka's side of 7 and 8: the PyIceberg consumer (bench/iceberg_consumer.py)
    over a SQL catalog in the broker's temp dir; returns once it is ready."""
    d = os.path.join(broker.dir, "iceberg")
    p = subprocess.Popen([sys.executable, CONSUMER, "--brokers", broker.bootstrap, "--topic", topic,
                          "--dir", d, "--expect", str(expect),
                          "--commit-interval-ms", str(commit_ms)] + list(extra),
                         stdout=subprocess.PIPE, stderr=open(os.path.join(broker.dir, "consumer.log"), "a"),
                         stdin=subprocess.DEVNULL, text=True)
    p.log_path = os.path.join(broker.dir, "consumer.log")
    line = p.stdout.readline()
    if not line.strip():
        p.wait()
        raise RuntimeError(f"iceberg consumer exited ({p.returncode}): see {broker.dir}/consumer.log")
    return p, d


def kill_consumer(p):
    """After a failed run: the consumer this script started must not outlive it."""
    if p and p.poll() is None:
        p.kill()
        p.wait()


def finish_consumer(p, timeout):
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise RuntimeError("iceberg consumer did not finish in time")
    if p.returncode != 0:
        raise RuntimeError(f"iceberg consumer exited with {p.returncode}:\n"
                           + open(p.log_path).read()[-2000:])
    return json.loads(out.strip().splitlines()[-1])


def zero_etl(broker, topic, base, a):
    """7: CPU seconds and bytes written to storage to get N records into an Iceberg
    table: lakestream alone (table enabled) vs Kafka + the PyIceberg consumer.
    Window: from just before the load to the moment the table holds every record."""
    n = a.zero_etl_count
    commit_ms = a.zero_etl_commit_ms
    cons = None
    if broker.kind == "kafka":
        cons, _ = start_consumer(broker, topic, n, commit_ms)
        cfg = []
    else:
        cfg = ["--topic-config", "lakestream.table.enabled=true",
               "--topic-config", f"lakestream.table.commit.interval.ms={commit_ms}"]
    try:
        cpu0, io0, t0 = broker.cpu_s(), broker.write_bytes(), time.time()
        load = driver("produce", broker, topic,
                      base + cfg + ["--count", str(n), "--duration", "0", "--warmup", "0"], 900)
        if cons:
            c = finish_consumer(cons, 900)
        else:
            wait_for("the table to hold every record",
                     lambda: table_rows(table_marks(broker, topic)) >= n, 900, 0.1)
            c = {"cpu_s": 0.0, "write_bytes": 0, "rows": n}
    finally:
        kill_consumer(cons)
    secs = time.time() - t0
    bcpu, bio = broker.cpu_s() - cpu0, broker.write_bytes() - io0
    gib = n * a.size / 2**30
    meta = table_metadata_bytes(broker, topic) if broker.kind != "kafka" else None
    out = {"load": {"msgs_per_sec": load["produce"]["msgs_per_sec"]},
           "consumer": c,
           "zero_etl": {"records": n, "gib_ingested": gib, "seconds": round(secs, 3),
                        "broker_cpu_s": bcpu, "consumer_cpu_s": c["cpu_s"],
                        "cpu_s_per_gib": (bcpu + c["cpu_s"]) / gib,
                        "broker_write_bytes": bio, "consumer_write_bytes": c["write_bytes"],
                        "written_gib_per_gib": (bio + c["write_bytes"]) / 2**30 / gib}}
    if meta is not None:  # the peer's consumer writes its own layout: not measured
        out["zero_etl"]["metadata_bytes_per_gib"] = meta / gib
    return out


def pctl(sorted_vals, q):
    return sorted_vals[min(len(sorted_vals) - 1, int(q * len(sorted_vals)))]


def table_freshness(broker, topic, a, upsert=False):
    procs = []  # the consumer and the poller, stopped here whatever happens
    try:
        return measure_freshness(broker, topic, a, procs, upsert)
    finally:
        for pr in procs:
            if isinstance(pr, subprocess.Popen):
                kill_consumer(pr)
            elif pr.is_alive():
                pr.kill()
                pr.join()


def measure_freshness(broker, topic, a, procs, upsert=False):
    """8: produce at a low fixed rate (Python producer, acks=all, round-robin over the
    partitions), record each record's acknowledgement time, poll the table's current
    snapshot every --freshness-poll-ms, and report when each record became visible
    (the first poll whose snapshot covers its offset) minus its ack time. 8b (upsert):
    the same into an upsert table of a compacted topic, records keyed over
    --upsert-keys keys (each commit rewrites the files holding the keys it changes)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    parts, commit_ms = a.partitions, a.freshness_commit_ms
    n = int(a.freshness_rate * a.duration)
    seeds = parts * (parts + 1) // 2
    config = {}
    cons = None
    if broker.kind == "kafka":
        cons, d = start_consumer(broker, topic, seeds + n, commit_ms)
        procs.append(cons)
        from pyiceberg.catalog.sql import SqlCatalog
        cats = {}  # per process: the poller is a forked child, sqlite must not cross a fork

        def marks():
            if os.getpid() not in cats:
                cats[os.getpid()] = SqlCatalog("bench", uri=f"sqlite:///{d}/catalog.db",
                                               warehouse=f"file://{d}/warehouse")
            try:
                snap = cats[os.getpid()].load_table(f"default.{topic}").current_snapshot()
            except Exception:  # the consumer has not created it yet
                return {}
            props = snap.summary.additional_properties if snap else {}
            return {int(k[len("bench.p."):]): int(v) for k, v in props.items()
                    if k.startswith("bench.p.")}
    else:
        config = {"lakestream.table.enabled": "true",
                  "lakestream.table.commit.interval.ms": str(commit_ms)}
        if upsert:
            config.update({"cleanup.policy": "compact", "lakestream.table.write.mode": "upsert"})
        logs = {}

        def marks():
            return {logs[k]: v for k, v in table_marks(broker, topic).items() if k in logs}
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, parts, 1, config=config)])[topic].result(30)
    seed = Producer({"bootstrap.servers": broker.bootstrap, "acks": a.acks,
                     "linger.ms": a.linger_ms})
    # Seed p+1 records into partition p: a log's first mark then names its partition.
    for part in range(parts):
        for i in range(part + 1):
            seed.produce(topic, key=b"seed-%d-%d" % (part, i), value=b"seed", partition=part)
    if seed.flush(60):
        raise RuntimeError("seed records not acknowledged")
    if broker.kind != "kafka":
        seen = wait_for("the seed records in the table",
                        lambda: (lambda m: sorted(m.values()) == list(range(parts)) and m)(
                            table_marks(broker, topic)), 120, 0.1)
        logs.update(seen)  # log id -> its last offset = its partition
    else:
        wait_for("the seed records in the table",
                 lambda: sum(v + 1 for v in marks().values()) >= seeds, 120, 0.1)

    del seed
    acks = []  # (partition, offset, ack time, send slot)
    # The poller is a separate (forked) process, so reading the table never holds up
    # the producer's delivery callbacks (the GIL); CLOCK_MONOTONIC is system-wide.
    ctx = multiprocessing.get_context("fork")
    stop, q = ctx.Event(), ctx.Queue()

    def poll():
        polls, last = [], None  # (time, {partition: last visible offset}) on change
        while not stop.is_set():
            m = marks()
            if m != last:
                polls.append((time.monotonic(), m))
                last = m
            time.sleep(a.freshness_poll_ms / 1000)
        q.put(polls)

    def dr(err, msg, slot):
        if err is None:
            acks.append((msg.partition(), msg.offset(), time.monotonic(), slot))

    poller = ctx.Process(target=poll, daemon=True)
    poller.start()
    procs.append(poller)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": a.acks, "linger.ms": a.linger_ms})
    payload = os.urandom(a.size)
    t0 = time.monotonic()
    for i in range(n):
        slot = t0 + i / a.freshness_rate
        while True:
            now = time.monotonic()
            if now >= slot:
                break
            p.poll(min(slot - now, 0.005))
        p.produce(topic, key=b"k%d" % (i % a.upsert_keys) if upsert else None, value=payload,
                  partition=i % parts, on_delivery=lambda err, msg, s=slot: dr(err, msg, s))
        p.poll(0)
    p.flush(60)
    last_acked = {}
    for part, off, _, _ in acks:
        last_acked[part] = max(last_acked.get(part, -1), off)
    try:
        wait_for("every acknowledged record in the table",
                 lambda: (lambda m: all(m.get(q, -1) >= o for q, o in last_acked.items()))(marks()),
                 120, 0.2)
        time.sleep(2 * a.freshness_poll_ms / 1000)  # the poller sees it too
    finally:
        stop.set()
        polls = q.get(timeout=60)
        poller.join(10)
    if cons:
        cons_out = finish_consumer(cons, 120)
    lat = []
    for part, off, t_ack, _ in acks:
        t_vis = next(t for t, m in polls if m.get(part, -1) >= off)
        lat.append(max(0.0, t_vis - t_ack) * 1000)
    lat.sort()
    ack_lat = sorted((t - slot) * 1000 for _, _, t, slot in acks)
    out = {"freshness": {"records": len(acks), "rate": a.freshness_rate,
                         "commit_interval_ms": commit_ms, "poll_ms": a.freshness_poll_ms,
                         "p50_ms": pctl(lat, 0.5), "p99_ms": pctl(lat, 0.99), "max_ms": lat[-1],
                         "ack_p99_ms": pctl(ack_lat, 0.99), "snapshots_seen": len(polls)}}
    if cons:
        out["consumer"] = cons_out
    return out


def dig(d, path):
    for k in path:
        d = d[k]
    return d


def has(d, path):
    for k in path:
        if not isinstance(d, dict) or k not in d:
            return False
        d = d[k]
    return True


def machine_facts():
    facts = {"kernel": platform.release(), "cpus": os.cpu_count()}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                facts["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                facts["mem_gib"] = round(int(line.split()[1]) / 1048576, 1)
    except OSError:
        pass
    facts["tmp_fs"] = subprocess.run(["df", "-T", tempfile.gettempdir()], capture_output=True,
                                     text=True).stdout.splitlines()[-1].split()[1]
    facts["java"] = subprocess.run(["java", "-version"], capture_output=True,
                                   text=True).stderr.splitlines()[0]
    facts["librdkafka"] = subprocess.run(
        ["sh", "-c", "dpkg-query -W -f='${Version}' librdkafka-dev 2>/dev/null"],
        capture_output=True, text=True).stdout
    for name, libs in (("kafka", KAFKA_LIBS), ("kafka-4.4", KAFKA44_LIBS)):
        jars = [j for j in os.listdir(libs) if j.startswith("kafka_2.13-")] \
            if os.path.isdir(libs) else []
        facts[name] = jars[0][len("kafka_2.13-"):-4] if jars else "?"
    try:
        facts["lakestream_commit"] = subprocess.run(
            ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
            text=True).stdout.strip()
        facts["lakestream_tree_dirty"] = bool(subprocess.run(
            ["git", "-C", ROOT, "status", "--porcelain", "src"], capture_output=True,
            text=True).stdout.strip())
    except OSError:
        pass
    return facts


# perf-tools-sasl's SCRAM-SHA-512 user on both brokers (a throwaway broker's only user).
SCRAM_USER = ("bench", "bench-secret")


def make_pki():
    """A throwaway CA and a P-256 server certificate for 127.0.0.1/localhost, made with
    the openssl CLI: {"dir", "ca": CA PEM, "keystore": PEM of key + chain}."""
    d = tempfile.mkdtemp(prefix="lsbench-pki-")

    def ossl(*args):
        subprocess.run(["openssl"] + list(args), cwd=d, check=True, capture_output=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    ossl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
         "-subj", "/CN=lsbench CA")
    ossl("req", "-new", *ec, "-keyout", "server.key", "-out", "server.csr",
         "-subj", "/CN=localhost")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    ossl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext")
    ks = os.path.join(d, "keystore.pem")
    with open(ks, "w") as f:
        for part in ("server.key", "server.pem", "ca.pem"):
            f.write(open(os.path.join(d, part)).read())
    return {"dir": d, "ca": os.path.join(d, "ca.pem"), "keystore": ks}


def latency_beside_reads(broker, topic, base, a):
    """5d: load --reads-fill-mib MiB of records into another topic, restart the
    broker (cold read cache: the reader's fetches become store GETs), then measure
    produce latency as in 5 while one consumer reads that topic from the start. The
    reader is stopped when the measurement ends (it must still be reading then, or
    the run is refused); its rate is the broker's bytes read from the store over the
    measurement."""
    fill = topic + "-fill"
    count = a.reads_fill_mib * 2**20 // a.size
    driver("produce", broker, fill,
           common_args(a) + ["--create", "--count", str(count), "--duration", "0",
                             "--warmup", "0"], 900)
    broker.restart()
    reader = subprocess.Popen([DRIVER, "consume", "--brokers", broker.bootstrap, "--topic", fill,
                               "--timeout", "900"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2)  # the reader is reading before the measurement starts
        t0, read0 = time.time(), broker.mem_io()["read_mib"]
        out = driver("produce", broker, topic,
                     base + ["--rate", str(a.rate), "--duration", str(a.duration)], 600)
        t1, read1 = time.time(), broker.mem_io()["read_mib"]
    finally:
        still = reader.poll() is None
        reader.terminate()
        reader.communicate(timeout=30)
    if not still:
        raise RuntimeError(f"the reader finished before the measurement did: raise "
                           f"--reads-fill-mib above {a.reads_fill_mib}")
    # the file store's GETs are the broker's read(2) bytes (SQLite's are few)
    out["reader"] = {"mb_per_sec": round((read1 - read0) / (t1 - t0), 1),
                     "fill_mib": a.reads_fill_mib}
    return out


def settle():
    t = time.time()
    os.sync()
    time.sleep(max(0.0, 1.0 - (time.time() - t)))


def loadavg():
    return float(open("/proc/loadavg").read().split()[0])


def start_radosgw():
    """Scenario 5b's S3 server: a throwaway radosgw (tools/s3/radosgw.sh, ~15 s).
    Returns (its dir, the broker environment with the endpoint and credentials), or
    (None, {}) when Ceph is not installed (tools/install-deps.sh test installs it)."""
    for attempt in (1, 2):  # the OSD's start-up has a fixed timeout: a busy box can miss it
        d = os.path.join(tempfile.mkdtemp(prefix="lsbench-radosgw-"), "rgw")
        log(f"starting radosgw (tools/s3/radosgw.sh) for s3-radosgw, attempt {attempt}")
        p = subprocess.run([RADOSGW, "start", d], capture_output=True, text=True)
        if p.returncode == 0:
            break
        log(f"radosgw did not start: {p.stderr.strip()[-300:]}")
        if os.path.exists(os.path.join(d, "pids")):  # stop what it did start
            subprocess.run([RADOSGW, "stop", d], capture_output=True)
        shutil.rmtree(os.path.dirname(d), ignore_errors=True)
    else:
        log("s3-radosgw skipped")
        return None, {}
    env = {}
    for line in open(os.path.join(d, "env")):
        k, _, v = line.strip().partition("=")
        env[k] = v.strip("'")
    return d, env


PG = os.path.join(ROOT, "tools", "pg", "pg.sh")


def start_postgres():
    """Scenario 5c's metadata store: a throwaway PostgreSQL (tools/pg/pg.sh).
    Returns (its directory, its env) or (None, {}) when it cannot start. Not
    under another temp dir of root's: as root it runs as "postgres"."""
    d = tempfile.mkdtemp(prefix="lsbench-pg-")
    log("starting PostgreSQL (tools/pg/pg.sh) for pg-latency")
    p = subprocess.run([PG, "start", d], capture_output=True, text=True)
    if p.returncode != 0:
        log(f"PostgreSQL did not start: {p.stderr.strip()[-300:]}; pg-latency skipped")
        shutil.rmtree(d, ignore_errors=True)
        return None, {}
    env = dict(line.strip().split("=", 1) for line in open(os.path.join(d, "env")) if "=" in line)
    return d, env


def pg_database(pg_env):
    """A fresh database per broker start (each start is a new cluster)."""
    host, port = pg_env["LS_TEST_PG_ENDPOINT"].split(":")

    def prepare(name):
        subprocess.run(["createdb", "-h", host, "-p", port, "-U", pg_env["LS_TEST_PG_USER"],
                        name.replace("-", "_")], check=True, capture_output=True)
    return prepare


def solo_plan(scenarios, a, rgw_env, pg_env=None):
    """Per solo scenario, the fresh brokers it runs on: [(broker, [scenario], warm)]."""
    durable = {"object.store.fsync": "true"}
    # Table scenarios: warm-up topics (no table) must not be compacted mid-measurement;
    # table logs' hot window is their commit interval regardless.
    table = {**durable, "compaction.min.age.ms": "3600000"}
    with_kafka = "kafka" in a.targets.split(",")
    groups = []
    for sc in scenarios:
        if sc in ("s3-latency", "s3-latency-reads"):
            # Durable fs under the fault wrapper, latency on every store call (PUT,
            # GET, ...) — Kafka has no object store to slow down.
            url = ("faulty+file://{dir}/objects?latency_p50_ms=%g&latency_p99_ms=%g"
                   % (a.s3_p50_ms, a.s3_p99_ms))
            conf = {"object.store.url": url, **durable}
            if a.meta_p50_ms > 0:
                # the metadata commits slowed too (an etcd or PostgreSQL across a network)
                conf["metadata.url"] = ("faulty+sqlite://{dir}/meta.db?latency_p50_ms=%g"
                                        "&latency_p99_ms=%g" % (a.meta_p50_ms, a.meta_p99_ms))
            g = [(Broker("lakestream-s3lat", "lakestream", conf), [sc], True)]
            if BASE_BIN:  # the same broker from an older build, interleaved
                g.append((Broker("lakestream-s3lat-base", "lakestream", conf, bin=BASE_BIN),
                          [sc], True))
            groups.append(g)
        elif sc == "s3-radosgw":
            loc, _, query = rgw_env["LS_TEST_S3_URL"].partition("?")
            url = loc.rstrip("/") + "/{name}?" + query  # a fresh prefix per start
            env = {k: v for k, v in rgw_env.items() if k.startswith("AWS_")}
            # rest: its HTTP port serves /metrics (the WAL objects' mean size, put_floor).
            # lakestream-s3 flushes at S3's default cadence (at most one WAL object per
            # 200 ms: requests bounded by time); lakestream-s3-0ms as soon as data
            # arrives (wal.flush.min.interval.ms=0: latency first, a PUT per flush)
            conf = {"object.store.url": url, **durable}
            groups.append([(Broker("lakestream-s3", "lakestream", conf, env=env, rest=True),
                            [sc], True),
                           (Broker("lakestream-s3-0ms", "lakestream",
                                   {**conf, "wal.flush.min.interval.ms": "0"}, env=env, rest=True),
                            [sc], True)])
        elif sc == "pg-latency":
            url = "postgresql://%s@%s/{db}" % (pg_env["LS_TEST_PG_USER"],
                                                pg_env["LS_TEST_PG_ENDPOINT"])
            groups.append([(Broker("lakestream-pg", "lakestream", {"metadata.url": url, **durable},
                                   prepare=pg_database(pg_env)), [sc], True)])
        elif sc == "consume-catchup-compacted":
            zero_hot = {**durable, "compaction.min.age.ms": "0",
                        "compaction.interval.ms": "200", "wal.gc.grace.ms": "0"}
            groups.append([(Broker("lakestream-co", "lakestream",
                                   {**zero_hot, "table.cold.reads": "compacted-object"}),
                            [sc], False),
                           (Broker("lakestream-table", "lakestream",
                                   {**zero_hot, "table.cold.reads": "table"}), [sc], False)])
        elif sc == "materialization":
            groups.append([(Broker("lakestream", "lakestream", table, rest=True), [sc], False)])
        elif sc == "typed-materialization":
            g = [(Broker("lakestream", "lakestream", table, rest=True, registry=True), [sc], False),
                 (Broker("lakestream-raw", "lakestream", table, rest=True, registry=True), [sc],
                  False)]
            if with_kafka:
                g.append((Broker("kafka+fastavro", "kafka"), [sc], False))
            groups.append(g)
        elif sc == "upsert-freshness":
            groups.append([(Broker("lakestream", "lakestream", table, rest=True), [sc], True)])
        elif sc == "upsert-bytes":  # the topic's upsert.strategy follows the broker's name
            groups.append([(Broker(name, "lakestream", table, rest=True), [sc], False)
                           for name in ("lakestream-cow", "lakestream-mor",
                                        "lakestream-mor-v3")])
        elif sc == "key-compaction":
            groups.append([(Broker("lakestream", "lakestream",
                                   {**durable, "compaction.min.age.ms": "0",
                                    "compaction.interval.ms": "200", "wal.gc.grace.ms": "0"}),
                            [sc], False)])
        elif sc in ("zero-etl", "table-freshness"):
            g = [(Broker("lakestream", "lakestream", table, rest=True), [sc], True)]
            if sc == "zero-etl":
                # the same keeping a compacted object as well (the default serves
                # cold reads from the table's rows and writes none)
                g.append((Broker("lakestream-co", "lakestream",
                                 {**table, "table.cold.reads": "compacted-object"}, rest=True),
                          [sc], True))
            if with_kafka:
                g.append((Broker("kafka+pyiceberg", "kafka"), [sc], True))
            groups.append(g)
    return groups


def main():
    global LAKESTREAM
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS),
                    help="comma-separated subset of: " + ", ".join(SCENARIOS) +
                    ", perf-tools, perf-tools-tls, perf-tools-sasl, perf-tools-groups (Kafka's own perf "
                    "tools, bench/perftools.py), cost (dollars from measured requests, "
                    "bench/cost.py)")
    ap.add_argument("--targets", default="kafka,lakestream,lakestream-relaxed",
                    help="kafka (the pinned peer, bench/kafka/pom.xml), kafka-4.4 (.cache/java/tools), "
                         "lakestream (durable default), lakestream-relaxed "
                         "(object.store.fsync=false), lakestream-base (BENCH_LAKESTREAM_BASE_BIN, durable)")
    ap.add_argument("-n", "--repeat", type=int, default=int(os.environ.get("BENCH_N", 3)))
    ap.add_argument("--duration", type=float, default=float(os.environ.get("BENCH_DURATION", 10)))
    ap.add_argument("--warmup", type=float, default=2)
    ap.add_argument("--broker-warmup", type=float, default=10,
                    help="after each broker start: this many seconds of e2e at --rate, then "
                         "up to 3 s of max-rate produce; not measured")
    ap.add_argument("--rate", type=float, default=5000,
                    help="msgs/s for the fixed-rate scenarios (below saturation)")
    ap.add_argument("--catchup-count", type=int, default=int(os.environ.get("BENCH_CATCHUP", 1000000)))
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--acks", default="all")
    ap.add_argument("--linger-ms", type=int, default=5)
    ap.add_argument("--compression", default="none")
    ap.add_argument("--keys", default="uniform:100000")
    ap.add_argument("--idempotence", action="store_true")
    ap.add_argument("--s3-p50-ms", type=float, default=30)
    ap.add_argument("--s3-p99-ms", type=float, default=100)
    ap.add_argument("--meta-p50-ms", type=float, default=0,
                    help="s3-latency: also inject this median latency into the metadata "
                         "store's calls (0: none)")
    ap.add_argument("--meta-p99-ms", type=float, default=0)
    ap.add_argument("--reads-fill-mib", type=int, default=4096,
                    help="s3-latency-reads: MiB loaded for the reader to catch up on")
    ap.add_argument("--table-count", type=int, default=int(os.environ.get("BENCH_TABLE_COUNT", 300000)),
                    help="materialization: records loaded, then materialized")
    ap.add_argument("--typed-count", type=int, default=int(os.environ.get("BENCH_TYPED_COUNT", 300000)),
                    help="typed-materialization: Avro records loaded, then materialized")
    ap.add_argument("--zero-etl-count", type=int, default=int(os.environ.get("BENCH_ZERO_ETL_COUNT", 262144)),
                    help="zero-etl: records ingested into a table (262144 x 1 KiB = 256 MiB)")
    ap.add_argument("--zero-etl-commit-ms", type=int, default=10000,
                    help="zero-etl: table commit interval of both pipelines (lakestream's default)")
    ap.add_argument("--freshness-rate", type=float, default=500,
                    help="table-freshness: msgs/s produced for --duration s")
    ap.add_argument("--freshness-commit-ms", type=int, default=1000,
                    help="table-freshness: commit interval of both pipelines (lakestream's minimum)")
    ap.add_argument("--freshness-poll-ms", type=float, default=100,
                    help="table-freshness: how often the table's current snapshot is read")
    ap.add_argument("--upsert-keys", type=int, default=1000,
                    help="upsert-freshness: distinct record keys (the upsert table's rows)")
    ap.add_argument("--upsert-bytes-keys", type=int, default=20000,
                    help="upsert-bytes: keys in the table (--size bytes each)")
    ap.add_argument("--upsert-bytes-commits", default="1:40,10:10,100:3",
                    help="upsert-bytes: commits per share of keys updated (percent:commits,...)")
    ap.add_argument("--kc-count", type=int, default=1000000,
                    help="key-compaction: keyed records loaded, then key-compacted")
    ap.add_argument("--kc-keys", type=int, default=10000,
                    help="key-compaction: distinct keys (uniform random)")
    ap.add_argument("--kc-size", type=int, default=100, help="key-compaction: value bytes")
    ap.add_argument("--kc-partitions", type=int, default=4,
                    help="key-compaction: partitions (one clean each)")
    ap.add_argument("--txn-records", type=int, default=100,
                    help="txn-produce: records per transaction")
    ap.add_argument("--txn-producers", type=int, default=4,
                    help="txn-produce: concurrent producers (one transactional.id each)")
    ap.add_argument("--perf-records", type=int,
                    default=int(os.environ.get("BENCH_PERF_RECORDS", 200000)),
                    help="perf-tools: 1 KiB records per case")
    ap.add_argument("--perf-small-records", type=int,
                    default=int(os.environ.get("BENCH_PERF_SMALL_RECORDS", 1000000)),
                    help="perf-tools: 100 B records per case")
    ap.add_argument("--cost-records", type=int,
                    default=int(os.environ.get("BENCH_COST_RECORDS", 300000)),
                    help="cost: records produced in the ingest phase")
    ap.add_argument("--cost-size", type=int, default=1024, help="cost: record bytes")
    ap.add_argument("--cost-rate", type=int, default=20000,
                    help="cost: records/s the producer is held to (a steady rate, not a burst)")
    ap.add_argument("--cost-mb-s", type=lambda v: [float(x) for x in v.split(",")],
                    default=[100.0, 1000.0, 5000.0], help="cost: MB/s rows of the monthly table")
    ap.add_argument("--cost-retention-days", type=lambda v: [float(x) for x in v.split(",")],
                    default=[1.0, 7.0], help="cost: retention rows of the monthly table")
    ap.add_argument("--cost-fanout", type=float, default=1.0,
                    help="cost: times each byte is read")
    ap.add_argument("--cost-disk-fill", type=float, default=0.5,
                    help="cost: Kafka's disks kept at most this full")
    ap.add_argument("--tag", default="", help="suffix for result files (e.g. smoke)")
    ap.add_argument("--out", default=RESULTS)
    a = ap.parse_args()

    scenarios = [s for s in a.scenarios.split(",") if s]
    # perftools imports this module as "bench": the same one, with main()'s globals.
    sys.modules["bench"] = sys.modules[__name__]
    import perftools
    import cost
    # Kafka's own perf tools (bench/perftools.py) and the cost report (bench/cost.py):
    # after the driver's scenarios.
    perf = [s for s in scenarios if s in perftools.FAMILY]
    costs = [s for s in scenarios if s in cost.FAMILY]
    scenarios = [s for s in scenarios if s not in perftools.FAMILY + cost.FAMILY]
    for s in scenarios:
        if s not in SCENARIOS:
            sys.exit(f"unknown scenario {s}" +
                     (f"; pending (not runnable yet): {', '.join(PENDING)}" if PENDING else ""))
    for f in ([DRIVER] if scenarios else []) + [LAKESTREAM]:
        if not os.access(f, os.X_OK):
            sys.exit(f"{f} missing: run `make bench` (builds it)")
    wanted = a.targets.split(",")
    if "kafka" in wanted and not os.path.isdir(KAFKA_LIBS):
        sys.exit("Kafka jars missing: run bench/setup.sh once")
    if "kafka-4.4" in wanted and not os.path.isdir(KAFKA44_LIBS):
        sys.exit("Kafka 4.4 jars missing: run tools/install-deps.sh test once")
    have_faulty = os.path.exists(os.path.join(ROOT, "src", "objstore", "objstore_faulty.c"))
    for sc in ("s3-latency", "s3-latency-reads"):
        if sc in scenarios and not have_faulty:
            log(f"{sc} skipped: objstore fault wrapper not in this tree")
            scenarios.remove(sc)

    targets = {}
    for t in a.targets.split(","):
        if t == "kafka":
            targets[t] = Broker(t, "kafka")
        elif t == "kafka-4.4":
            targets[t] = Broker(t, "kafka", libs=KAFKA44_LIBS)
        elif t == "lakestream":
            targets[t] = Broker(t, "lakestream", {"object.store.fsync": "true"})
        elif t == "lakestream-relaxed":
            targets[t] = Broker(t, "lakestream", {"object.store.fsync": "false"})
        elif t == "lakestream-base":
            if not BASE_BIN:
                sys.exit("target lakestream-base needs BENCH_LAKESTREAM_BASE_BIN")
            targets[t] = Broker(t, "lakestream", {"object.store.fsync": "true"}, bin=BASE_BIN)
        else:
            sys.exit(f"unknown target {t}")
    rgw_dir, rgw_env = None, {}
    if "s3-radosgw" in scenarios:
        rgw_dir, rgw_env = start_radosgw()
        if not rgw_dir:
            scenarios.remove("s3-radosgw")
    pg_dir, pg_env = None, {}
    if "pg-latency" in scenarios:
        pg_dir, pg_env = start_postgres()
        if not pg_dir:
            scenarios.remove("pg-latency")
    solo = solo_plan(scenarios, a, rgw_env, pg_env)

    # Run a private copy of the broker binary: other people rebuilding build/ during
    # a long run must not change what the later repetitions measure.
    snap_dir = tempfile.mkdtemp(prefix="lsbench-bin-")
    snap = os.path.join(snap_dir, "lakestream")
    shutil.copy2(LAKESTREAM_BUILT, snap)
    LAKESTREAM = snap

    started = datetime.datetime.now(datetime.timezone.utc)
    stamp = started.strftime("%Y-%m-%d")
    if a.tag:
        stamp += "-" + a.tag
    facts = machine_facts()
    facts["lakestream_binary_sha1"] = subprocess.run(["sha1sum", snap], capture_output=True,
                                                     text=True).stdout.split()[0][:12]
    facts["lakestream_binary_built"] = time.strftime(
        "%Y-%m-%dT%H:%M:%S", time.localtime(os.path.getmtime(LAKESTREAM_BUILT)))
    cmdline = os.environ.get("BENCH_COMMAND") or ("python3 bench/bench.py " + " ".join(sys.argv[1:]))
    raw = {s: {} for s in scenarios}
    loads, failures = [], []
    main_scen = [s for s in scenarios if s not in SOLO]
    order = list(targets) if scenarios else []
    try:
        for rep in range(a.repeat if scenarios else 0):
            rot = order[rep % len(order):] + order[:rep % len(order)]
            plan = [(targets[t], main_scen, True) for t in rot if main_scen]
            for group in solo:  # a scenario's brokers, their order alternating per repetition
                plan += group[::-1] if rep % 2 else group
            for broker, scs, warm in plan:
                broker.start()
                try:
                    if warm and a.broker_warmup > 0:
                        # Same for every target, results discarded: JIT-compiles Kafka's
                        # hot paths (small fixed-rate batches, fetch, and large batches
                        # are different code paths) and fills both brokers' pools.
                        log(f"rep {rep + 1}/{a.repeat} {broker.name} warm-up")
                        w = common_args(a) + ["--create", "--warmup", "0", "--allow-errors"]
                        driver("e2e", broker, f"bench-warmup-e2e-{rep}",
                               w + ["--rate", str(a.rate), "--duration", str(a.broker_warmup)], 600)
                        driver("produce", broker, f"bench-warmup-{rep}",
                               w + ["--duration", str(min(a.broker_warmup, 3))], 600)
                    for sc in scs:
                        # Start every measurement with no dirty-page backlog: Kafka's
                        # page-cache writes from the previous scenario would otherwise
                        # be written back (and throttle writers) during this one.
                        settle()
                        la = loadavg()
                        loads.append(la)
                        log(f"rep {rep + 1}/{a.repeat} {broker.name} {sc} (load {la:.2f})")
                        try:
                            out = run_scenario(sc, broker, a, rep)
                        except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
                            # One failed run must not lose a long invocation: it is
                            # reported (summary and JSON), the others go on.
                            log(f"rep {rep + 1} {broker.name} {sc} FAILED: {e}")
                            failures.append(f"rep {rep + 1} {broker.name} {sc}: "
                                            f"{str(e).splitlines()[0][:300]}")
                            continue
                        out["loadavg_before"] = la
                        raw[sc].setdefault(broker.name, []).append(out)
                        for peer, pout in out.pop("peers", {}).items():
                            pout["loadavg_before"] = la
                            raw[sc].setdefault(peer, []).append(pout)
                finally:
                    broker.stop()
    except KeyboardInterrupt:
        log("interrupted: writing what was measured")
    finally:
        for b in list(targets.values()) + [b for g in solo for b, _, _ in g]:
            b.stop()
        if rgw_dir:
            subprocess.run([RADOSGW, "stop", rgw_dir], stdout=subprocess.DEVNULL)
            shutil.rmtree(os.path.dirname(rgw_dir), ignore_errors=True)
        if pg_dir:
            subprocess.run([PG, "stop", pg_dir], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)

    os.makedirs(a.out, exist_ok=True)
    perf_md = ""
    try:
        if perf:
            perf_failures = []
            perf_md = perftools.run(perf, a, stamp, facts, cmdline, perf_failures, loads)
            failures += perf_failures
        if costs:
            perf_md += cost.run(costs, a, stamp, facts, cmdline, failures, loads)
    finally:
        shutil.rmtree(snap_dir, ignore_errors=True)
    facts["loadavg_after_run"] = loadavg()
    summary = {}
    for sc in scenarios:
        runs = raw[sc]
        if sc in BORROW and BORROW[sc][0] in raw:
            src, rows = BORROW[sc]
            runs = {row: raw[src][t] for t, row in rows.items() if t in raw[src]}
            runs.update(raw[sc])
        res = summarize(sc, runs, a)
        res.update({"scenario": sc, "date": started.isoformat(timespec="seconds"),
                    "command": cmdline, "machine": facts, "repeat": a.repeat,
                    "settings": {k: v for k, v in vars(a).items() if k not in ("out", "tag")},
                    "loadavg_during_run": {"min": min(loads, default=0),
                                           "max": max(loads, default=0)},
                    "failed_runs": [f for f in failures if f.split(": ", 1)[0].endswith(" " + sc)]})
        with open(os.path.join(a.out, f"{stamp}-{sc}.json"), "w") as f:
            json.dump(res, f, indent=1)
        summary[sc] = res
    md = markdown(summary, facts, cmdline, a, stamp, loads, failures) + perf_md
    with open(os.path.join(a.out, f"{stamp}-summary.md"), "w") as f:
        f.write(md)
    plots(summary, a.out, stamp)
    print(md)


def summarize(sc, runs_by_target, a):
    out = {"targets": {}, "peer": PEER.get(sc, "kafka"), "ratios_vs_peer": {}, "noisy": {}}
    for t, runs in runs_by_target.items():
        med, spread = {}, {}
        for m, (path, unit, hib) in METRICS[sc].items():
            vals = [dig(r, path) for r in runs if has(r, path)]
            if not vals:  # derived, or a borrowed row without this figure
                continue
            med[m] = statistics.median(vals)
            spread[m] = [min(vals), max(vals)]
        if sc in ("s3-latency", "s3-latency-reads"):
            med["p99_over_store_p99"] = med["p99_ms"] / a.s3_p99_ms
        # Keep one histogram (the median run's by p99 or the first figure) for plots.
        key = "p99_ms" if "p99_ms" in med else next(iter(med))
        runs_sorted = sorted(runs, key=lambda r: dig(r, METRICS[sc][key][0]))
        rep_run = runs_sorted[len(runs_sorted) // 2]
        slim = []
        for orig in runs:
            r = json.loads(json.dumps(orig))
            for part in ("produce", "e2e"):
                if part in r and orig is not rep_run:
                    r[part].get("latency", {}).pop("buckets", None)
            slim.append(r)
        out["targets"][t] = {"median": med, "min_max": spread, "runs": slim,
                             "median_run_index": runs.index(rep_run)}
        # A run is noisy when its repetitions disagree by more than 25% of the median.
        out["noisy"][t] = sorted(m for m, (lo, hi) in spread.items()
                                 if med[m] and (hi - lo) / abs(med[m]) > 0.25)
    peer = PEER.get(sc, "kafka")
    k = out["targets"].get(peer)
    if k:
        for t, v in out["targets"].items():
            if t == peer:
                continue
            out["ratios_vs_peer"][t] = {m: (v["median"][m] / k["median"][m]
                                             if k["median"].get(m) else None)
                                         for m in v["median"] if m in k["median"]}
    return out


def fmt(v):
    if v is None:
        return "–"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def markdown(summary, facts, cmdline, a, stamp, loads, failures):
    L = [f"# Lakestream vs Apache Kafka — {stamp}", "",
         f"Command: `{cmdline}`  ",
         (f"Medians of {a.repeat} runs per target; each broker fresh per repetition, then "
          f"warmed up unmeasured ({a.broker_warmup:g} s e2e at the fixed rate, "
          f"{min(a.broker_warmup, 3):g} s max-rate produce); target order rotated. Ratio = lakestream / Kafka (for throughput higher is better, for "
          f"latency lower is better).  " if summary else
          "Kafka's perf tools only (see their section for how they run).  "),
         f"Machine: {facts.get('cpus')}× {facts.get('cpu', '?')}, {facts.get('mem_gib')} GiB, "
         f"kernel {facts.get('kernel')}, data dirs on {facts.get('tmp_fs')}; Kafka "
         f"{facts.get('kafka')}"
         f"{' and ' + facts.get('kafka-4.4', '?') if 'kafka-4.4' in a.targets.split(',') else ''}"
         f" ({facts.get('java')}); librdkafka {facts.get('librdkafka')}; "
         f"lakestream {facts.get('lakestream_commit')}"
         f"{' + uncommitted src changes' if facts.get('lakestream_tree_dirty') else ''}.  ",
         f"Load average before each measurement: {min(loads, default=0):.2f}–"
         f"{max(loads, default=0):.2f}, after the run {facts.get('loadavg_after_run', 0):.2f}, on "
         f"{facts.get('cpus')} CPUs (shared machine: other builds and tests ran concurrently)."
         + (" **Noisy run**: more runnable tasks than CPUs at some point, so every figure "
            "here shares the machine with unrelated work." if max(loads + [
                facts.get("loadavg_after_run", 0)], default=0) > (
                facts.get("cpus") or 1) else ""),
         "",
         "Targets: **kafka** = Apache Kafka KRaft, one broker, acks from the page cache (no "
         "fsync); **kafka-4.4** = the same with Kafka 4.4's jars; **lakestream** = durable default (WAL object fsync'd + SQLite commit before "
         "the ack); **lakestream-relaxed** = `object.store.fsync=false` (comparable to Kafka's "
         "page-cache acks).", ""]
    for sc, res in summary.items():
        L.append(f"## {sc}")
        L.append("")
        L.append(scenario_note(sc, a) + f" Ratios vs **{res['peer']}**.")
        L.append("")
        ms = list(METRICS[sc])
        hdr = "| target | " + " | ".join(f"{m} ({METRICS[sc][m][1]})" for m in ms) + " |"
        L += [hdr, "|" + "---|" * (len(ms) + 1)]
        for t, v in res["targets"].items():
            cells = []
            for m in ms:
                c = fmt(v["median"].get(m))
                r = res["ratios_vs_peer"].get(t, {}).get(m)
                if r is not None:
                    c += f" (**{r:.2f}×**)"
                if m in res["noisy"].get(t, []):
                    c += " ⚠"
                cells.append(c)
            L.append(f"| {t} | " + " | ".join(cells) + " |")
        L.append("")
        wal = res["targets"].get("lakestream-wal (#4)", {}).get("median", {}).get("mb_per_sec")
        co = res["targets"].get("lakestream-co", {}).get("median", {}).get("mb_per_sec")
        tb = res["targets"].get("lakestream-table", {}).get("median", {}).get("mb_per_sec")
        if sc == "consume-catchup-compacted" and wal and co:
            L += [f"From compacted objects / from WAL objects (#4): **{co / wal:.2f}×**.", ""]
        if sc == "consume-catchup-compacted" and co and tb:
            L += [f"From the table's Parquet rows / from compacted objects: **{tb / co:.2f}×**.",
                  ""]
        L.append(f"![{sc}]({stamp}-{sc}.png)")
        if sc in ("produce-latency", "e2e-latency", "s3-latency", "s3-latency-reads",
                  "s3-radosgw", "pg-latency"):
            L.append(f"![{sc} percentiles]({stamp}-{sc}-cdf.png)")
        L.append("")
    L += ["⚠ = the repetitions of that figure disagree by more than 25% of the median "
          "(min/max in the JSON): treat it as noisy.", ""]
    if failures:
        L += ["**Failed runs** (left out of the medians): " + "; ".join(failures), ""]
    if PENDING:
        L += ["Not run yet (features being built): " +
              "; ".join(f"{k} — {v}" for k, v in PENDING.items()), ""]
    return "\n".join(L)


def scenario_note(sc, a):
    common = (f"{a.size} B records, {a.partitions} partitions, acks={a.acks}, linger "
              f"{a.linger_ms} ms, compression {a.compression}, keys {a.keys}")
    return {
        "produce-throughput": f"Produce as fast as the client queue allows for {a.duration:g} s "
                              f"({a.warmup:g} s warm-up excluded); {common}. Latencies here are "
                              "queueing-dominated (saturation), shown for completeness.",
        "produce-latency": f"Produce at a fixed {a.rate:g} msg/s for {a.duration:g} s; {common}. "
                           "Latency from the scheduled send time to the delivery report.",
        "e2e-latency": f"Produce at {a.rate:g} msg/s and consume by assignment in the same "
                       f"process; {common}. Latency from scheduled send to receipt.",
        "consume-catchup": f"Load {a.catchup_count:,} records, restart lakestream (cold read cache, "
                           "reads from WAL objects; Kafka keeps its page cache either way), then "
                           "read everything from the beginning.",
        "s3-latency": f"produce-latency against lakestream whose object-store calls (PUT, GET, ...) get an "
                      f"injected log-normal latency (p50 {a.s3_p50_ms:g} ms, p99 "
                      f"{a.s3_p99_ms:g} ms, fault wrapper)"
                      + (f", metadata calls too (p50 {a.meta_p50_ms:g} ms, p99 "
                         f"{a.meta_p99_ms:g} ms)" if a.meta_p50_ms > 0 else "")
                      + "; ratio column vs Kafka at the same "
                      "rate; p99_over_store_p99 = produce p99 / injected PUT p99.",
        "s3-latency-reads": f"scenario 5 (the same injected latencies) while one consumer (lsbench "
                            f"consume) catches up on another topic of {a.reads_fill_mib} MiB "
                            "loaded before and read from the store after a restart (cold cache); "
                            "reader_mb_s = the broker's bytes read from the store per second "
                            "during the measurement; a -base row is the same broker built from "
                            "BENCH_LAKESTREAM_BASE_BIN, interleaved.",
        "consume-catchup-compacted": f"Load {a.catchup_count:,} records into a broker with a zero "
                                     "hot window (compaction.min.age.ms=0, interval 200 ms, "
                                     "wal.gc.grace.ms=0), wait until no WAL object is left "
                                     "(compact_s, from the end of the load), restart it (cold read "
                                     "cache) and read everything back: every byte from compacted "
                                     "objects. lakestream-table: the same into a raw table topic "
                                     "(commit interval 1 s) on a broker with "
                                     "table.cold.reads=table, so every byte read back is rebuilt "
                                     "from the table's Parquet rows. The kafka and lakestream-wal "
                                     "rows are scenario 4's "
                                     "runs of this invocation (same load; Kafka has no compaction).",
        "s3-radosgw": f"produce-latency ({a.rate:g} msg/s, {a.duration:g} s; {common}) against "
                      "durable lakestream on the S3 backend, a throwaway Ceph radosgw on "
                      "127.0.0.1 (tools/s3/radosgw.sh: memstore OSD, so no disk under it; a fresh "
                      "bucket prefix per start). The kafka and lakestream-file rows are "
                      "scenario 2's runs of this invocation. put_* = the floor measured right "
                      "after each run on the same radosgw: `lakestream check --latency=100` "
                      "times bare create-only PUTs, one at a time, of the run's mean WAL object "
                      "size (put_bytes); p99_over_put_p99 = produce p99 / that PUT p99.",
        "pg-latency": f"produce-latency ({a.rate:g} msg/s, {a.duration:g} s; {common}) against "
                      "durable lakestream with its metadata on a throwaway PostgreSQL on "
                      "127.0.0.1 (tools/pg/pg.sh; a fresh database per start) instead of the "
                      "embedded SQLite: every acks=all produce waits for the WAL object's index "
                      "commit there. The kafka and lakestream-sqlite rows are scenario 2's runs "
                      "of this invocation.",
        "materialization": f"Load {a.table_count:,} records into a topic with "
                           "lakestream.table.enabled=true and a 1-day commit interval (all in WAL "
                           "objects), then set lakestream.table.commit.interval.ms=1000: time "
                           "until the table's current snapshot (REST catalog) covers every record, "
                           "including reading the WAL objects, writing compacted objects, Parquet "
                           "(zstd) and the durable table commits; cpu_s = broker CPU. duckdb = "
                           "DuckDB, in memory, the same rows (read from that table's Parquet "
                           f"first), `COPY t TO … (FORMAT parquet, COMPRESSION zstd)` on "
                           f"{os.cpu_count()} threads, no fsync; MiB/s counts record values "
                           f"({a.size} B each) for both.",
        "typed-materialization": f"Load {a.typed_count:,} Avro records (bench/typed_record.py: "
                                 "10 fields, a nested struct, an array, a timestamp, a decimal; "
                                 "~100 B each, Confluent-framed) into a topic with a 1-day "
                                 "commit interval, typed (value.format=schema-registry; target "
                                 "lakestream) or raw (the same bytes as a binary column; target "
                                 "lakestream-raw, a broker of its own), then set the "
                                 "interval to 1 s and time until each table covers every record "
                                 "(as scenario 6). kafka+fastavro = the same bytes loaded into "
                                 "Kafka, then bench/iceberg_consumer.py --avro-schema: consume, "
                                 "decode with fastavro, append typed columns with PyIceberg + "
                                 "pyarrow (one append per 10 s), ready → every row committed. "
                                 "MiB/s counts record value bytes.",
        "zero-etl": f"Ingest {a.zero_etl_count:,} × {a.size} B records at max rate and get them "
                    f"into an Iceberg table committed every {a.zero_etl_commit_ms} ms: lakestream "
                    "with the topic's table enabled, vs Kafka + bench/iceberg_consumer.py (PyIceberg "
                    "0.12 + pyarrow, SQL catalog in sqlite, same schema and day partitioning, "
                    "one append per commit interval with each partition's last offset in the "
                    "snapshot). CPU = broker utime+stime (/proc/PID/stat) + the consumer's own "
                    "from ready to done; written = /proc/PID/io write_bytes of the same "
                    "processes; both over load start → every record in the table, per GiB of "
                    "record values. The load driver's CPU is not counted for either. "
                    "lakestream-co: the same with table.cold.reads=compacted-object (a "
                    "compacted object is written as well; the default serves cold Kafka reads "
                    "from the table's rows).",
        "table-freshness": f"Produce {a.freshness_rate:g} msg/s for {a.duration:g} s (Python "
                           f"producer, acks={a.acks}, linger {a.linger_ms} ms, {a.partitions} "
                           "partitions round-robin) into a table with a "
                           f"{a.freshness_commit_ms} ms commit interval; every "
                           f"{a.freshness_poll_ms:g} ms read the table's current snapshot "
                           "(lakestream: its REST catalog; Kafka pipeline: the consumer's SQL "
                           "catalog) and its per-partition last offsets; freshness = first poll "
                           "that covers a record − its acknowledgement. produce_p99 = ack latency.",
        "upsert-freshness": f"As table-freshness, into an upsert table: a compacted topic "
                            f"with lakestream.table.write.mode=upsert, records keyed over "
                            f"{a.upsert_keys} keys, so each commit rewrites the data files "
                            "holding the keys it changes (copy-on-write). Beside it, "
                            "scenario 8's rows of the same run (append table; Kafka + "
                            "PyIceberg consumer).",
        "upsert-bytes": f"An upsert table of {a.upsert_bytes_keys:,} keys ({a.size} B random "
                        "values, 4 partitions, compacted topic) loaded in one commit, "
                        "then commits updating a share of the keys ("
                        + ", ".join(f"{c} commits of {p} %" for p, c in upsert_bytes_plan(a))
                        + "; updates produced while the commit interval is held at a day, "
                        "then one pass): GiB the table wrote (added-files-size of every snapshot: "
                        "data files, copies, position delete files, and the maintenance rewrites "
                        "of rewrite.min.files=4) per GiB of updated records. lakestream-cow: "
                        "lakestream.table.upsert.strategy=copy-on-write (the default); "
                        "lakestream-mor: merge-on-read; lakestream-mor-v3: merge-on-read at "
                        "lakestream.table.format.version=3 (deletion vectors, one Puffin file "
                        "per data file). commit_s = median seconds from the "
                        "interval change to the table covering the updates.",
        "key-compaction": f"Load {a.kc_count:,} records ({a.kc_size} B values, keys uniform "
                          f"over {a.kc_keys:,}, {a.kc_partitions} partitions) into a topic with "
                          "cleanup.policy=delete on a broker with a zero hot window, wait until "
                          "every WAL object is compacted away, then set cleanup.policy=compact "
                          "and time the key compaction of every partition (one clean each, "
                          "compact/keycompact.c: map the keys, rewrite the log to the latest "
                          "record per key, swap). records_per_sec and mb_per_sec = what the "
                          "cleans read / their own seconds (each logs its figures, "
                          "compactor.c); e2e_records_per_sec = records / wall time from the "
                          "config change to the last clean (the pass schedule included). "
                          "Lakestream only: Kafka's log cleaner works on closed segments on "
                          "its own schedule, not comparable by this measure.",
        "txn-produce": f"{a.txn_producers} transactional producers (bench/txn_produce.py: "
                       "confluent-kafka, one transactional.id each, in threads of one process) "
                       f"run transactions of {a.txn_records} × {a.size} B records round-robin "
                       f"over {a.partitions} partitions, back to back (begin, produce, "
                       f"commit_transaction) for {a.duration:g} s after {a.warmup:g} s "
                       "warm-up; counted: records of transactions whose commit returned in the "
                       "window; commit = commit_transaction's duration (flush of the last "
                       "records, EndTxn, markers). plain = the same producers and records, "
                       "idempotent, no transactional.id, delivery reports in the window; "
                       f"txn_over_plain = txn / plain msg/s of the same broker. linger "
                       f"{a.linger_ms} ms, acks=all.",
    }[sc]


def plots(summary, out, stamp):
    if not shutil.which("gnuplot"):
        log("gnuplot missing (bench/setup.sh installs it): no plots")
        return
    for sc, res in summary.items():
        ms = [m for m in METRICS[sc] if not m.startswith(("p99_over_", "put_"))]
        if sc in ("produce-throughput", "consume-catchup", "consume-catchup-compacted",
                  "materialization"):
            ms = ["mb_per_sec"]
        elif sc == "zero-etl":
            ms = ["cpu_s_per_gib", "written_gib_per_gib"]
        elif sc == "txn-produce":
            ms = ["txn_msgs_per_sec", "plain_msgs_per_sec"]
        elif sc == "key-compaction":
            ms = ["records_per_sec", "e2e_records_per_sec"]
        elif sc == "typed-materialization":
            ms = ["records_per_sec"]
        elif sc == "upsert-bytes":
            ms = ["written_per_gib_1pct", "written_per_gib_10pct", "written_per_gib_100pct"]
        else:
            ms = [m for m in ("p50_ms", "p99_ms", "p999_ms") if m in ms]
        dat = os.path.join(out, f".{stamp}-{sc}.dat")
        with open(dat, "w") as f:
            f.write("target " + " ".join(ms) + "\n")
            for t, v in res["targets"].items():
                f.write(f'"{t}" ' + " ".join(str(v["median"].get(m, "NaN")) for m in ms) + "\n")
        png = os.path.join(out, f"{stamp}-{sc}.png")
        unit = METRICS[sc][ms[0]][1]
        logscale = "set logscale y\n" if unit in ("ms", "GiB/GiB") else ""
        script = f"""set terminal pngcairo size 800,450 noenhanced
set output '{png}'
set title '{sc} (median of runs)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel '{unit}'
set key top left
set grid ytics
{logscale}set yrange [{'*' if logscale else '0'}:*]
plot for [i=2:{len(ms) + 1}] '{dat}' using i:xtic(1) title columnheader(i)
"""
        p = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
        if p.returncode != 0:
            log(f"gnuplot {sc}: {p.stderr.strip()}")
        os.unlink(dat)
    # Latency CDFs (median run of each target) for the latency scenarios.
    for sc, part in (("produce-latency", "produce"), ("e2e-latency", "e2e"),
                     ("s3-latency", "produce"), ("s3-latency-reads", "produce"),
                     ("s3-radosgw", "produce"),
                     ("pg-latency", "produce")):
        if sc not in summary:
            continue
        series = []
        for t, v in summary[sc]["targets"].items():
            run = v["runs"][v["median_run_index"]]
            b = run[part]["latency"].get("buckets")
            if not b:
                continue
            dat = os.path.join(out, f".{stamp}-{sc}-{t}.cdf")
            total = sum(c for _, c in b)
            acc = 0
            with open(dat, "w") as f:
                for ub, c in b:
                    acc += c
                    frac = acc / total
                    # x = latency, y = 1/(1-q) on a log axis ("nines" plot)
                    f.write(f"{ub} {1 / max(1 - frac, 1e-5)}\n")
            series.append((t, dat))
        if not series:
            continue
        png = os.path.join(out, f"{stamp}-{sc}-cdf.png")
        plot = ", ".join(f"'{d}' using 1:2 with steps lw 2 title '{t}'" for t, d in series)
        script = f"""set terminal pngcairo size 800,450 noenhanced
set output '{png}'
set title '{sc}: latency by percentile (median run)'
set logscale xy
set xlabel 'latency (ms)'
set ylabel 'percentile'
set ytics ('p0' 1, 'p90' 10, 'p99' 100, 'p99.9' 1000, 'p99.99' 10000)
set grid
set key top left
set yrange [1:100000]
plot {plot}
"""
        p = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
        if p.returncode != 0:
            log(f"gnuplot cdf {sc}: {p.stderr.strip()}")
        for _, d in series:
            os.unlink(d)


if __name__ == "__main__":
    main()
