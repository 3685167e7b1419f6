#!/usr/bin/env python3
"""Soak: minutes of steady load on every stateful background process at once.

One broker (file store, SQLite) with a 1 s hot window; for --seconds:
  - table topics (lakestream.table.enabled, commit interval 1 s, snapshots
    expiring after 60 s), four of them typed: value.format=schema-registry
    with Avro, JSON Schema and Protobuf values framed with an id from the
    built-in registry, and value.format=json (schemaless JSON objects),
  - plain topics,
  - a compacted topic (cleanup.policy=compact, keyed records, retention.ms=1000
    so the retention checks run against it and must not expire anything; key
    compaction removes superseded records, and the latest of each key stays)
    with an upsert table (write.mode=upsert: one row per key, copy-on-write),
    and a second one whose upsert table is merge-on-read (position delete
    files, folded and merged by the maintenance every 4 commits), and a
    third merge-on-read one at Iceberg format version 3 (deletion vectors,
    row lineage),
each fed by an idempotent acks=all producer at --rate records/s over all of
them; plus a topic written only in transactions (--txn-rate transactions/s of
1-8 records over its partitions, every fourth aborted after its records reached
the log; retention.ms 60 s so trims run against its aborted index) with a table;
Kafka's own ProducerPerformance (Java client defaults: idempotent, 5 requests
in flight, linger 5 ms) writing in 100 ms transactions to a topic of its own;
a transactional compacted topic (delete.retention.ms 2 s, so aborted data and
then markers are compacted away during the run) fed by a librdkafka
transactional producer with its defaults, commits and aborts of values and
tombstones over 50 keys;
while a consumer group reads everything and commits (auto-commit), a group of
the KIP-848 consumer protocol (two librdkafka members, group.protocol=consumer,
heartbeats every 500 ms) reads one plain topic, commits synchronously and
replaces one member every 5 s (so the coordinator runs thousands of heartbeats
and hundreds of rebalances, each stored), a share group (KIP-932: two Java
KafkaShareConsumers with explicit acknowledgement, one replaced every 5 s,
every 50th record released once) reads the same topic, a Kafka Streams word
count on a streams group (KIP-1071: two instances, exactly_once_v2, one killed
with -9 and restarted every 20 s; tests/soak/streams_app.py) runs, and a
sampler records WAL object count, metadata size and each table's lag
(`lakestream tables show`) every few seconds. The broker runs with SASL users
and the authorizer on, a SCRAM reader, a prober of what must stay refused and
a scraper of /metrics and the console beside the load (tests/soak/operate.py
says how and what it checks).

At the end it checks, and reports in JSON (--json):
  lost / duplicated   every acknowledged record is in its log exactly once (the
                      compacted topic: the latest acknowledged record of each key
                      is, and every record it holds is an acknowledged one at its
                      offset)
  table = log         each table holds exactly its log's records (offset, value;
                      a typed table's value rebuilt from its columns, every
                      one compared); each upsert
                      table holds exactly the latest record of each key
  group               the group consumed every record; its committed offsets
                      never went backwards; the KIP-848 group consumed every
                      acknowledged record of its topic, rebalanced, and its
                      commits never went backwards; the share group accepted
                      every acknowledged record of that topic, released ones
                      came back, no record went past the delivery-count limit
                      (accepted twice is counted: at-least-once, reported);
                      the Streams app's output holds every word's counts
                      1..total exactly once (read_committed)
  transactions        a read_committed reader sees every committed record still
                      in the log once and no aborted one; the transactional
                      topic's table holds exactly the committed records (none
                      aborted, none twice); no transaction failed;
                      ProducerPerformance exits 0 having sent every record, and
                      read_committed reads exactly that many; on the
                      transactional compacted topic read_committed ends with
                      the latest committed value of every key (a committed
                      tombstone: none), read_uncommitted reaches the end
  bounded             WAL objects stay below a limit that does not grow with the
                      run's length; table manifests and lists stay within 10 x
                      table data and, once expired snapshots' files are deleted
                      (runs of 300 s and more: 60 s retention + 90 s delay,
                      twice), grow less than 25 % over the second half of the
                      run; no metadata.json outlives the log's 10 commits plus
                      the 90 s delay (+30 s), and each table keeps at most
                      10 + 2 x 90 of them (a delay's worth of commits, data
                      and expiry/maintenance ones); so do the
                      live bytes of each metadata key family (/ls/log/ index
                      entries, /ls/walobj/, /ls/group/, ...: read from the
                      SQLite store), plus 64 KB of slack;
                      table lag stayed below max(3 commit intervals, 10 s) after
                      the first minute; the event loop's lag (GET /health:
                      the longest iteration, iterations of 50 ms or more, and
                      the worst 10-20 s window after the first minute) is
                      reported, not judged
  table maintenance   each table's live data files (small files rewritten into
                      bigger ones) and retained snapshots stay flat over the second
                      half of the run (at most 25 % more, plus one rewrite run's
                      worth of files; runs of 300 s and more); its data
                      directory holds at most 3 x its
                      live data once replaced files have had time to expire and
                      be swept (runs of 600 s and more); a PyIceberg reader scans
                      a table over and over during the run and never fails, never
                      sees a duplicate row and never sees rows go away;
                      another loads a table, holds it 60 s and then reads every
                      file it references (all must be there: unreferenced files
                      stay lakestream.table.file.delete.delay.ms, 90 s here);
                      the data files under each table's location stay within
                      4 x those its retained snapshots reference (runs of 150 s
                      and more); the JSON reports the location's bytes, data
                      and metadata apart, against the live ones

  soak.py [--seconds S] [--rate R] [--txn-rate T] [--json OUT] [--plot OUT.svg]
`make soak SOAK_SECONDS=S` runs it. Exit status 1 on any failed check."""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition  # noqa: E402

import iceberg_util  # noqa: E402
import lsbroker  # noqa: E402
import operate  # noqa: E402
from streams_app import StreamsSoak  # noqa: E402
from svgplot import write_plot  # noqa: E402
from kafka_util import consume, create_topic, produce_all, producer  # noqa: E402

PARTS = 3
COMMIT_MS = 1000
SNAPSHOT_AGE_MS = 60000
HOLD_S = 60            # the holding reader keeps a loaded table this long
FILE_DELAY_MS = 90000  # lakestream.table.file.delete.delay.ms of the tables: above HOLD_S
# a metadata.json older than this and not in the metadata log should be gone:
# 10 commits in the log, the delay, a pass and a sample's slack
STALE_JSON_S = 10 * COMMIT_MS / 1000 + FILE_DELAY_MS / 1000 + 30
LOCATION_FACTOR = 4    # bytes under a table's location <= this x its live bytes


def _latest_per_key(acked):
    """{(partition, offset): value} -> the entries holding each (partition,
    key)'s latest record; the key is k<i % 997> of the value's sequence i."""
    last = {}
    for (part, off), v in acked.items():
        key = (part, int(v.rsplit(b"-", 1)[1]) % 997)
        if key not in last or last[key][0] < off:
            last[key] = (off, v)
    return {(part, off): v for (part, _k), (off, v) in last.items()}


TYPED_SCHEMA = json.dumps({"type": "record", "name": "SoakRecord", "fields": [
    {"name": "seq", "type": "long"}, {"name": "text", "type": "string"}]})
JSON_SCHEMA = json.dumps({"type": "object", "additionalProperties": False,
                          "required": ["seq", "text"],
                          "properties": {"seq": {"type": "integer"}, "text": {"type": "string"}}})
PROTO_SCHEMA = """syntax = "proto3";
package soak;

message SoakRecord {
  int64 seq = 1;
  string text = 2;
}
"""


def register_schema(registry_url, subject, schema, schema_type="AVRO"):
    import urllib.request
    req = urllib.request.Request(
        "%s/subjects/%s/versions" % (registry_url, subject),
        data=json.dumps({"schema": schema, "schemaType": schema_type}).encode(), method="POST",
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)["id"]


def _varint(n):
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def _zigzag(n):
    return _varint((n << 1) ^ (n >> 63))


def typed_value(schema_id, seq, text):
    """A SoakRecord in the Confluent wire format (magic 0, id, Avro datum)."""
    return (b"\x00" + schema_id.to_bytes(4, "big") + _zigzag(seq) + _zigzag(len(text)) + text)


def json_typed_value(schema_id, seq, text):
    """A SoakRecord as JSON Schema-framed JSON (magic 0, id, JSON text)."""
    return b"\x00" + schema_id.to_bytes(4, "big") + json_value(seq, text)


def proto_typed_value(schema_id, seq, text):
    """A soak.SoakRecord in the Confluent Protobuf wire format: magic 0, id,
    message indexes [0] (one zero byte), then the message: field 1 (varint),
    field 2 (length-delimited)."""
    return (b"\x00" + schema_id.to_bytes(4, "big") + b"\x00" + b"\x08" + _varint(seq) +
            b"\x12" + _varint(len(text)) + text)


def json_value(seq, text):
    """A schemaless JSON object (value.format=json), compact and in key order."""
    return json.dumps({"seq": seq, "text": text.decode()}, separators=(",", ":")).encode()


def table_rows(data_dir, table, encode=None):
    """(partition, offset, value) of every row; a typed table's value is
    rebuilt from its columns seq and text by encode(seq, text bytes)."""
    from pyiceberg.table import StaticTable
    mds = glob.glob(os.path.join(data_dir, "objects", "warehouse", "default", table, "metadata",
                                 "v*.metadata.json"))
    if not mds:
        return []
    md = max(mds, key=lambda f: int(re.search(r"v(\d+)\.metadata\.json$", f).group(1)))
    rows = StaticTable.from_metadata("file://" + md).scan().to_arrow()
    if encode is None:
        return sorted(zip(rows.column("partition").to_pylist(), rows.column("offset").to_pylist(),
                          rows.column("value").to_pylist()))
    values = [encode(seq, text.encode()) for seq, text in
              zip(rows.column("seq").to_pylist(), rows.column("text").to_pylist())]
    return sorted(zip(rows.column("_kafka_partition").to_pylist(),
                      rows.column("_kafka_offset").to_pylist(), values))


def dir_bytes(path, metadata_json=None):
    """Bytes of the files under path, a file with several names (hard links:
    v<N>.metadata.json) once; metadata_json True/False: only / all but the
    *.metadata.json files."""
    total, seen = 0, set()
    for d, _, files in os.walk(path):
        for f in files:
            if metadata_json is not None and f.endswith(".metadata.json") != metadata_json:
                continue
            try:
                st = os.stat(os.path.join(d, f))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def metadata_json_files(data_dir, table):
    """(files, stale): how many metadata.json files the table's location
    holds (each once), and how many of them outlived their keep: older than
    STALE_JSON_S but not among the metadata log's newest 10 + 1. A metadata
    file leaves the log 10 commits after it is written, is kept
    lakestream.table.file.delete.delay.ms more, and goes at the next commit;
    expiry and maintenance commit too, so the count alone is no measure."""
    mdir = os.path.join(data_dir, "objects", "warehouse", "default", table, "metadata")
    seen = {}
    for f in glob.glob(os.path.join(mdir, "*.metadata.json")):
        try:
            st = os.stat(f)
        except OSError:
            continue
        seen[(st.st_dev, st.st_ino)] = st.st_mtime
    ages = sorted((time.time() - m for m in seen.values()))
    return len(seen), sum(1 for a in ages[11:] if a > STALE_JSON_S)


def meta_live_bytes(data_dir):
    """Live metadata bytes (key + value) per key family (/ls/<family>/), and
    the most index entries any one log has."""
    import sqlite3
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(data_dir, "meta.db"), uri=True,
                         timeout=30)
    try:
        out, per_log = {}, {}
        for key, n in db.execute("SELECT key, length(key) + length(val) FROM kv"):
            parts = bytes(key).split(b"/")
            fam = parts[2].decode(errors="replace") if len(parts) > 2 else "?"
            out[fam] = out.get(fam, 0) + n
            if fam == "log" and len(parts) > 4 and parts[4] == b"idx":
                per_log[parts[3]] = per_log.get(parts[3], 0) + 1
        return out, max(per_log.values(), default=0)
    finally:
        db.close()


def newest_metadata(data_dir, table):
    mds = glob.glob(os.path.join(data_dir, "objects", "warehouse", "default", table, "metadata",
                                 "v*.metadata.json"))
    if not mds:
        return None
    return max(mds, key=lambda f: int(re.search(r"v(\d+)\.metadata\.json$", f).group(1)))


def table_shape(data_dir, table):
    """(live data files, live data bytes, retained snapshots) of the newest
    table version, from its metadata file's current snapshot summary."""
    md = newest_metadata(data_dir, table)
    if md is None:
        return 0, 0, 0
    try:
        with open(md) as f:
            m = json.load(f)
    except (OSError, ValueError):   # deleted or being replaced under us: next sample
        return None
    cur = m.get("current-snapshot-id")
    summary = next((s.get("summary", {}) for s in m.get("snapshots", [])
                    if s["snapshot-id"] == cur), {})
    return (int(summary.get("total-data-files", 0)), int(summary.get("total-files-size", 0)),
            len(m.get("snapshots", [])))


def reader_loop(data_dir, table, stop, out):
    """Scans the newest version of `table` until stopped (a reader during
    maintenance): each scan must succeed, hold distinct (partition, offset)
    rows, and never fewer rows than the scan before."""
    import pyarrow.compute as pc
    from pyiceberg.table import StaticTable
    last = 0
    while not stop.wait(5):
        md = newest_metadata(data_dir, table)
        if md is None:
            continue
        try:
            rows = StaticTable.from_metadata("file://" + md).scan(
                selected_fields=("partition", "offset")).to_arrow()
        except FileNotFoundError:
            out["retries"] += 1   # that version was superseded and deleted: pick again
            continue
        except Exception as e:  # noqa: BLE001 - any other failure is the finding
            out["errors"].append("%s: %r" % (os.path.basename(md), e))
            continue
        keys = pc.add(pc.multiply(pc.cast(rows.column("partition"), "int64"), 1 << 40),
                      rows.column("offset"))
        n = rows.num_rows
        if len(pc.unique(keys)) != n:
            out["errors"].append("%s: duplicate rows" % os.path.basename(md))
        if n < last:
            out["errors"].append("%s: %d rows after %d" % (os.path.basename(md), n, last))
        last = max(last, n)
        out["scans"] += 1


def holding_reader_loop(data_dir, table, stop, out):
    """An engine that caches a loaded table (Spark: 30 s): loads the newest
    version, holds it HOLD_S, then opens and reads every file it references
    (metadata, manifest lists, manifests, data files) and scans it; again
    until stopped. Every file must still be there: the broker keeps what it
    unreferences for lakestream.table.file.delete.delay.ms."""
    from pyiceberg.table import StaticTable
    while not stop.wait(1):
        md = newest_metadata(data_dir, table)
        if md is None:
            continue
        try:
            t = StaticTable.from_metadata("file://" + md)
            files = iceberg_util.referenced_files(t)
        except FileNotFoundError:
            continue   # superseded and deleted between listing and loading: next
        if stop.wait(HOLD_S):
            return
        for f in sorted(files):
            try:
                with open(f, "rb") as fh:
                    while fh.read(1 << 20):
                        pass
                out["files_read"] += 1
            except OSError as e:
                out["missing"].append("%s: %s" % (os.path.relpath(f, data_dir), e.strerror))
        try:
            t.scan(selected_fields=("partition", "offset")).to_arrow()
        except Exception as e:  # noqa: BLE001 - any failure is the finding
            out["missing"].append("scan of %s: %r" % (os.path.basename(md), e))
        out["holds"] += 1


def location_bytes(data_dir, table):
    """{"data": (on disk, live), "metadata": (on disk, live)}: the bytes of
    every file under the table's location (a file with two names once),
    Parquet data files apart from the rest, against those its newest metadata
    references (data files of retained snapshots; their manifests and lists,
    the metadata file and those of its log)."""
    from pyiceberg.table import StaticTable
    tdir = os.path.join(data_dir, "objects", "warehouse", "default", table)
    t = StaticTable.from_metadata("file://" + newest_metadata(data_dir, table))
    live = iceberg_util.referenced_files(t)
    live |= {iceberg_util.local_path(e.metadata_file) for e in t.metadata.metadata_log}

    def total(paths):
        seen, out = set(), {"data": 0, "metadata": 0}
        for f in paths:
            try:
                st = os.stat(f)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                out["data" if f.endswith(".parquet") else "metadata"] += st.st_size
        return out
    on_disk = total(os.path.join(d, f) for d, _, fs in os.walk(tdir) for f in fs)
    held = total(live)
    return {k: (on_disk[k], held[k]) for k in on_disk}


def txn_loop(bootstrap, topic, rate, stop, out):
    """Transactions back to back at `rate` per second until stop: 1-8 records
    over the topic's partitions, every fourth aborted after a flush (so its
    records reach the log). out: committed {value: (partition, offset)},
    aborted {value}, errors [str]."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "soak-txn",
                  "transaction.timeout.ms": 30000, "linger.ms": 5})
    p.init_transactions(60)
    delivered = {}

    def cb(err, msg):
        if err is None:
            delivered[msg.value()] = (msg.partition(), msg.offset())
    n = 0
    start = time.monotonic()
    while not stop.is_set():
        commit = n % 4 != 3
        vals = [b"txn-%07d-%d-%s" % (n, i, b"c" if commit else b"a") for i in range(1 + n % 8)]
        try:
            p.begin_transaction()
            for i, v in enumerate(vals):
                p.produce(topic, v, partition=(n + i) % PARTS, on_delivery=cb)
            if commit:
                p.commit_transaction(60)
                for v in vals:
                    out["committed"][v] = delivered.pop(v)
            else:
                p.flush(60)
                p.abort_transaction(60)
                out["aborted"].update(vals)
        except Exception as e:  # noqa: BLE001 - every failure is reported
            out["errors"].append("transaction %d: %s" % (n, e))
            return
        n += 1
        ahead = n / rate - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)


def java_txn_perf(bootstrap, topic, seconds, rate):
    """Kafka's ProducerPerformance in 100 ms transactions with the Java
    client's defaults (5 requests in flight: pipelined transactional batches);
    returns (Popen, number of records)."""
    jars = os.path.join(HERE, "..", "..", ".cache", "java", "tools", "*")
    n = max(1, int(seconds * rate))
    cmd = ["java", "-cp", jars, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
           "--num-records", str(n), "--record-size", "100", "--throughput", str(rate),
           "--transactional-id", "soak-java-txn", "--transaction-duration-ms", "100",
           "--producer-props", "bootstrap.servers=" + bootstrap]
    # output to a file: a pipe read only at the end fills on long runs and
    # stalls the producer's threads that log
    proc_log = os.path.join(tempfile.mkdtemp(prefix="soak-java-txn-"), "out.log")
    with open(proc_log, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    proc.log_path = proc_log
    return proc, n


def txn_compacted_loop(bootstrap, topic, rate, stop, out):
    """Transactions of 1-8 updates (every fifth a tombstone) over 50 keys on a
    compacted topic's partition 0, every fourth aborted after a flush, with
    librdkafka's defaults; out["latest"]: key -> last committed value (None: a
    tombstone), out["errors"]."""
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "soak-txn-compacted"})
    p.init_transactions(60)
    n = 0
    start = time.monotonic()
    while not stop.is_set():
        commit = n % 4 != 3
        ups = [(b"k%02d" % ((n * 7 + i) % 50),
                None if (n + i) % 5 == 0 else b"v%07d-%d-%s" % (n, i, b"c" if commit else b"a"))
               for i in range(1 + n % 8)]
        try:
            p.begin_transaction()
            for k, v in ups:
                p.produce(topic, key=k, value=v, partition=0)
            if commit:
                p.commit_transaction(60)
                out["latest"].update(ups)
            else:
                p.flush(60)
                p.abort_transaction(60)
        except Exception as e:  # noqa: BLE001 - every failure is reported
            out["errors"].append("transaction %d: %s" % (n, e))
            return
        n += 1
        out["transactions"] = n
        ahead = n / rate - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)


def read_latest(bootstrap, topic, isolation):
    """Partition 0 from the start to its end at an isolation level: (key ->
    latest value, tombstones removing the key; whether the end was reached)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-latest-" + isolation,
                  "isolation.level": isolation, "enable.partition.eof": True,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, -2)])
    out, deadline = {}, time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                return out, True
            if m.value() is None:
                out.pop(m.key(), None)
            else:
                out[m.key()] = m.value()
        return out, False
    finally:
        c.close()


def read_values(bootstrap, topic, isolation):
    """Every value of the topic's partitions, start to end, at an isolation level."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-read-" + isolation,
                  "isolation.level": isolation, "enable.partition.eof": True,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, part, -2) for part in range(PARTS)])
    out, eof = [], set()
    deadline = time.monotonic() + 120
    while len(eof) < PARTS and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            eof.add(m.partition())
            continue
        eof.discard(m.partition())
        out.append(m.value())
    low = [c.get_watermark_offsets(TopicPartition(topic, part), timeout=10)[0]
           for part in range(PARTS)]
    c.close()
    return out, low


def loop_lag(http_url):
    """The broker's event-loop lag from GET /health (docs/OPERATIONS.md), or None."""
    try:
        with urllib.request.urlopen(http_url + "/health", timeout=10) as r:
            return json.load(r).get("loop")
    except (OSError, ValueError):
        return None


def table_lag_ms(bootstrap, topic):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}
    out = subprocess.run([lsbroker.binary_path(), "tables", "--bootstrap", bootstrap, "show", topic],
                         capture_output=True, text=True, timeout=30, env=env).stdout
    m = re.search(r"table lag: (\d+) ms", out)
    return int(m.group(1)) if m else None


def share_group_reader(bootstrap, topic, seconds, outfile):
    """The share group's members (tests/integration/java/ShareGroupTest.java,
    scenario soak), compiled into a temporary directory; returns the Popen."""
    lib = os.path.join(HERE, "..", "..", ".cache", "java", "lib", "*")
    classes = tempfile.mkdtemp(prefix="soak-share-")
    subprocess.run(["javac", "-nowarn", "-cp", lib, "-d", classes,
                    os.path.join(HERE, "..", "integration", "java", "ShareGroupTest.java")],
                   check=True, capture_output=True, timeout=300)
    env = dict(os.environ, LS_TEST_BOOTSTRAP=bootstrap)
    cmd = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", classes + ":" + lib, "ShareGroupTest",
           "soak", topic, "soak-share", str(seconds), outfile]
    # to a file, not a pipe: the client logs a lot, and a full pipe nobody
    # reads until the end would stall every thread of the JVM that logs
    with open(outfile + ".client.log", "w") as log:
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)


def share_group_checks(proc, outfile, acked_values, limit=5):
    """What the share group accepted against the topic's acknowledged records."""
    proc.wait(timeout=300)
    with open(outfile + ".client.log") as f:
        text = f.read()
    res = [ln for ln in text.splitlines() if ln.startswith(("RESULT ", "FAIL "))]
    result = json.loads(res[-1][7:]) if res and res[-1].startswith("RESULT ") else {}
    accepted, counts = {}, {}
    if os.path.exists(outfile):
        with open(outfile, "rb") as f:
            for ln in f:
                count, _, value = ln.rstrip(b"\n").partition(b" ")
                accepted[value] = accepted.get(value, 0) + 1
                counts[int(count)] = counts.get(int(count), 0) + 1
    checks = {"share_exit": proc.returncode, "share_result": result or text[-2000:],
              "share_client_log": outfile + ".client.log",
              "share_client_notes": [ln for ln in text.splitlines() if ln.startswith("soak: ")][-20:],
              "share_accepted_records": len(accepted),
              "share_missing": sum(1 for v in acked_values if v not in accepted),
              "share_accepted_twice": sum(1 for n in accepted.values() if n > 1),
              "share_delivery_counts": {str(k): v for k, v in sorted(counts.items())}}
    checks["share_ok"] = (proc.returncode == 0 and checks["share_missing"] == 0
                          and result.get("released", 0) > 0 and result.get("replacements", 0) > 0
                          and max(counts, default=0) <= limit
                          and any(k > 1 for k in counts))
    return checks


def kip848_loop(bootstrap, topic, stop, out, churn_s=5):
    """A consumer-protocol group whose members are replaced one at a time."""
    def member():
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-kip848",
                      "group.protocol": "consumer", "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        c.subscribe([topic])
        return c
    members = [member(), member()]
    last_churn = time.monotonic()
    while not stop.is_set():
        for c in members:
            msgs = [m for m in c.consume(500, timeout=0.1) if m.error() is None]
            for m in msgs:
                out["consumed"].add(m.value())
            if msgs:
                try:
                    for tp in c.commit(asynchronous=False) or []:
                        k = (tp.topic, tp.partition)
                        if tp.error is None and tp.offset >= 0:
                            if tp.offset < out["committed"].get(k, -1):
                                out["backwards"].append((k, out["committed"][k], tp.offset))
                            out["committed"][k] = max(tp.offset, out["committed"].get(k, -1))
                except KafkaException as e:  # a commit racing a rebalance: retried later
                    out["commit_errors"].append(str(e))
        if time.monotonic() - last_churn > churn_s:
            last_churn = time.monotonic()
            members.pop(0).close()
            members.append(member())
            out["churns"] += 1
    for c in members:
        c.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=300)
    ap.add_argument("--rate", type=int, default=500, help="records per second, all topics")
    ap.add_argument("--txn-rate", type=float, default=10,
                    help="transactions per second on the transactional topic")
    ap.add_argument("--json", help="write the report here")
    ap.add_argument("--plot", help="write an SVG of table files, snapshots and metadata here")
    args = ap.parse_args(argv)

    work = tempfile.mkdtemp(prefix="lakestream-soak.")
    b = lsbroker.Broker(os.path.join(work, "data"), os.path.join(work, "logs"),
                        ["--compaction.min.age.ms=1000", "--compaction.interval.ms=1000",
                         "--log.retention.check.interval.ms=2000", "--wal.gc.grace.ms=0",
                         "--table.orphan.grace.ms=120000",
                         "--group.consumer.heartbeat.interval.ms=500",
                         "--group.consumer.min.heartbeat.interval.ms=500",
                         "--group.streams.heartbeat.interval.ms=500",
                         "--group.streams.min.heartbeat.interval.ms=500",
                         "--group.streams.session.timeout.ms=6000",
                         "--group.streams.min.session.timeout.ms=6000"])
    # deployed as a team would: SASL users, the authorizer on (tests/soak/operate.py)
    b.port, b.http_port, b.registry_port, sasl_port = lsbroker.free_ports(4)
    b.extra_args += operate.broker_args(b.host, b.port, sasl_port)
    sasl_bootstrap = "%s:%d" % (b.host, sasl_port)
    operate.add_users(b)
    b.start()
    report = {"seconds": args.seconds, "rate": args.rate, "checks": {}, "samples": []}
    try:
        operate.grant(sasl_bootstrap, "soak-plain-0", "soak-reader-group")
        tables = [create_topic(b.bootstrap, "soak-table-%d" % i, partitions=PARTS,
                               config={"lakestream.table.enabled": "true",
                                       "lakestream.table.commit.interval.ms": str(COMMIT_MS),
                                       "lakestream.table.snapshot.retention.ms":
                                           str(SNAPSHOT_AGE_MS),
                                       "lakestream.table.file.delete.delay.ms":
                                           str(FILE_DELAY_MS)})
                  for i in range(2)]
        # typed topics: name -> encode(seq, text) giving the value produced,
        # which the check rebuilds from the table's columns seq and text
        typed = {}
        for name, fmt, schema, stype, enc in [
                ("soak-typed", "schema-registry", TYPED_SCHEMA, "AVRO", typed_value),
                ("soak-typed-jsonschema", "schema-registry", JSON_SCHEMA, "JSON",
                 json_typed_value),
                ("soak-typed-protobuf", "schema-registry", PROTO_SCHEMA, "PROTOBUF",
                 proto_typed_value),
                ("soak-typed-json", "json", None, None, None)]:
            t = create_topic(b.bootstrap, name, partitions=PARTS,
                             config={"lakestream.table.enabled": "true",
                                     "lakestream.table.commit.interval.ms": str(COMMIT_MS),
                                     "lakestream.table.snapshot.retention.ms": str(SNAPSHOT_AGE_MS),
                                     "lakestream.table.file.delete.delay.ms": str(FILE_DELAY_MS),
                                     "lakestream.table.value.format": fmt})
            if schema is None:
                typed[t] = json_value
            else:
                sid = register_schema(b.registry_url, t + "-value", schema, stype)
                typed[t] = (lambda e, i: lambda seq, text: e(i, seq, text))(enc, sid)
            tables.append(t)
        plains = [create_topic(b.bootstrap, "soak-plain-%d" % i, partitions=PARTS)
                  for i in range(2)]
        secret = create_topic(b.bootstrap, operate.SECRET_TOPIC, partitions=1)
        produce_all(producer(b.bootstrap), secret, [{"value": b"kept from User:ANONYMOUS"}])
        compacted = create_topic(b.bootstrap, "soak-compacted", partitions=PARTS,
                                 config={"cleanup.policy": "compact", "retention.ms": "1000",
                                         "lakestream.table.enabled": "true",
                                         "lakestream.table.commit.interval.ms": str(COMMIT_MS),
                                         "lakestream.table.write.mode": "upsert"})
        compacted_mor = create_topic(b.bootstrap, "soak-compacted-mor", partitions=PARTS,
                                     config={"cleanup.policy": "compact", "retention.ms": "1000",
                                             "lakestream.table.enabled": "true",
                                             "lakestream.table.commit.interval.ms": str(COMMIT_MS),
                                             "lakestream.table.write.mode": "upsert",
                                             "lakestream.table.upsert.strategy": "merge-on-read",
                                             "lakestream.table.rewrite.min.files": "4"})
        # format version 3: deletion vectors and row lineage
        compacted_v3 = create_topic(b.bootstrap, "soak-compacted-v3", partitions=PARTS,
                                    config={"cleanup.policy": "compact", "retention.ms": "1000",
                                            "lakestream.table.enabled": "true",
                                            "lakestream.table.commit.interval.ms": str(COMMIT_MS),
                                            "lakestream.table.write.mode": "upsert",
                                            "lakestream.table.upsert.strategy": "merge-on-read",
                                            "lakestream.table.format.version": "3",
                                            "lakestream.table.rewrite.min.files": "4"})
        upserts = {compacted: "", compacted_mor: "_mor", compacted_v3: "_v3"}  # check suffixes
        topics = tables + plains + [compacted, compacted_mor, compacted_v3]
        txn_topic = create_topic(b.bootstrap, "soak-txn", partitions=PARTS,
                                 config={"retention.ms": "60000",
                                         "lakestream.table.enabled": "true",
                                         "lakestream.table.commit.interval.ms": str(COMMIT_MS)})

        java_topic = create_topic(b.bootstrap, "soak-txn-java", partitions=PARTS)
        java_perf, java_n = java_txn_perf(b.bootstrap, java_topic, args.seconds,
                                          max(1, args.rate // 5))
        kc_topic = create_topic(b.bootstrap, "soak-txn-compacted", partitions=1,
                                config={"cleanup.policy": "compact",
                                        "delete.retention.ms": "2000",
                                        "min.compaction.lag.ms": "0",
                                        "max.compaction.lag.ms": "5000",
                                        "min.cleanable.dirty.ratio": "0.1"})
        kc_txns = {"latest": {}, "errors": [], "transactions": 0}

        acked = {t: {} for t in topics}          # topic -> {(partition, offset): value}
        failed = []
        lock = threading.Lock()
        stop = threading.Event()
        consumed = {t: {} for t in topics}       # topic -> {value: count}
        commits_backwards = []

        def consumer_loop():
            c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "soak-group",
                          "auto.offset.reset": "earliest", "enable.auto.commit": True,
                          "auto.commit.interval.ms": 1000})
            c.subscribe(topics)
            last_committed = {}
            last_check = time.monotonic()
            while not stop.is_set():
                for m in c.consume(num_messages=1000, timeout=0.2):
                    if m.error() is None:
                        with lock:
                            d = consumed[m.topic()]
                            d[m.value()] = d.get(m.value(), 0) + 1
                if time.monotonic() - last_check > 5:
                    last_check = time.monotonic()
                    try:
                        got = c.committed([TopicPartition(t, p) for t in topics
                                           for p in range(PARTS)], timeout=10)
                    except Exception:
                        got = []
                    for tp in got:
                        k = (tp.topic, tp.partition)
                        if tp.offset >= 0:
                            if tp.offset < last_committed.get(k, -1):
                                commits_backwards.append((k, last_committed[k], tp.offset))
                            last_committed[k] = tp.offset
            c.close()

        def sampler_loop():
            t0 = time.monotonic()
            while not stop.wait(5):
                live, idx_max = meta_live_bytes(b.data_dir)
                s = {"t": round(time.monotonic() - t0, 1),
                     "wal_objects": len(glob.glob(os.path.join(b.data_dir, "objects", "wal", "*"))),
                     "meta_bytes": sum(os.path.getsize(f) for f in
                                       glob.glob(os.path.join(b.data_dir, "meta.db*"))),
                     "meta_live": live,
                     "max_index_entries_per_log": idx_max,
                     # manifest lists and manifests; metadata.json files are
                     # counted apart (a file delay's worth of them is kept)
                     "table_metadata_bytes": sum(dir_bytes(os.path.join(
                         b.data_dir, "objects", "warehouse", "default", t, "metadata"), False)
                         for t in tables),
                     "table_metadata_json_bytes": sum(dir_bytes(os.path.join(
                         b.data_dir, "objects", "warehouse", "default", t, "metadata"), True)
                         for t in tables),
                     "table_metadata_json_files": {t: metadata_json_files(b.data_dir, t)
                                                   for t in tables},
                     "table_data_bytes": sum(dir_bytes(os.path.join(
                         b.data_dir, "objects", "warehouse", "default", t, "data"))
                         for t in tables),
                     "table_lag_ms": {t: table_lag_ms(b.bootstrap, t) for t in tables},
                     "loop": loop_lag(b.http_url),
                     "table_shape": {t: table_shape(b.data_dir, t) for t in tables}}
                report["samples"].append(s)

        reader = {"scans": 0, "retries": 0, "errors": []}
        holder = {"holds": 0, "files_read": 0, "missing": []}
        txns = {"committed": {}, "aborted": set(), "errors": []}
        txn_stop = threading.Event()
        txn_thread = threading.Thread(target=txn_loop, args=(b.bootstrap, txn_topic, args.txn_rate,
                                                             txn_stop, txns))
        kc_thread = threading.Thread(target=txn_compacted_loop,
                                     args=(b.bootstrap, kc_topic, args.txn_rate, txn_stop, kc_txns))
        kc_thread.start()
        kip848 = {"consumed": set(), "committed": {}, "backwards": [], "commit_errors": [],
                  "churns": 0}
        share_out = os.path.join(tempfile.mkdtemp(prefix="soak-share-out-"), "accepted.txt")
        share_proc = share_group_reader(b.bootstrap, plains[1], args.seconds, share_out)
        streams = StreamsSoak(b.bootstrap,
                              create_topic(b.bootstrap, "soak-streams-in", partitions=PARTS),
                              create_topic(b.bootstrap, "soak-streams-out", partitions=PARTS),
                              PARTS)
        streams.start()
        threads = [threading.Thread(target=consumer_loop), threading.Thread(target=sampler_loop),
                   threading.Thread(target=kip848_loop, args=(b.bootstrap, plains[1], stop, kip848)),
                   threading.Thread(target=reader_loop, args=(b.data_dir, tables[0], stop, reader)),
                   threading.Thread(target=holding_reader_loop,
                                    args=(b.data_dir, tables[0], stop, holder))]
        sasl_reader = operate.SaslReader(sasl_bootstrap, plains[0], "soak-reader-group", stop)
        prober = operate.Prober(b.bootstrap, sasl_bootstrap, stop)
        scraper = operate.Scraper(b.http_url, b.pid, stop)
        threads += [sasl_reader, prober, scraper]
        txn_thread.start()
        for t in threads:
            t.start()
        p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 5})

        def cb(err, msg):
            if err is not None:
                failed.append(str(err))
            else:
                with lock:
                    acked[msg.topic()][(msg.partition(), msg.offset())] = msg.value()
        start = time.monotonic()
        i = 0
        while time.monotonic() - start < args.seconds:
            t = topics[i % len(topics)]
            key = b"k%d" % (i % 997)
            value = b"%s-%09d" % (t.encode(), i)
            if t in typed:
                value = typed[t](i, value)
            while True:
                try:
                    p.produce(t, key=key, value=value, on_delivery=cb)
                    break
                except BufferError:
                    p.poll(0.05)
            i += 1
            p.poll(0)
            ahead = i / args.rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)
        p.flush(120)
        produced = i
        txn_stop.set()
        txn_thread.join()
        kc_thread.join()
        try:
            java_perf.wait(timeout=max(120, args.seconds))
            killed = ""
        except subprocess.TimeoutExpired:
            java_perf.kill()
            java_perf.wait()
            killed = "\n(killed: still running)"
        with open(java_perf.log_path) as f:
            java_out = f.read() + killed

        # let the group and the tables catch up
        total_acked = sum(len(v) for v in acked.values())
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with lock:
                n = sum(len(v) for v in consumed.values())
            if n >= total_acked and set(acked[plains[0]].values()) <= sasl_reader.values:
                break
            time.sleep(1)
        time.sleep(3 * COMMIT_MS / 1000 + 2)
        stop.set()
        for t in threads:
            t.join()

        checks = report["checks"]
        checks["produced"] = produced
        checks["acked"] = total_acked
        checks["produce_failures"] = len(failed)
        lost = dup = 0
        for t in topics:
            got = consume(b.bootstrap, t, list(range(PARTS)), timeout=120)
            log = {(part, m.offset()): m.value() for part, msgs in got.items() for m in msgs}
            values = [m.value() for msgs in got.values() for m in msgs]
            dup += len(values) - len(set(values))
            if t in upserts:
                sfx = upserts[t]
                latest = _latest_per_key(acked[t])
                lost += sum(1 for k, v in latest.items() if log.get(k) != v)
                checks["compacted_unexpected" + sfx] = sum(1 for k, v in log.items()
                                                           if acked[t].get(k) != v)
                checks["compacted_kept" + sfx] = len(log)
                checks["compacted_acked" + sfx] = len(acked[t])
                # its upsert table: exactly the latest record of each key
                rows = table_rows(b.data_dir, t)
                checks["upsert_table_rows" + sfx] = len(rows)
                checks["upsert_table_equals_latest" + sfx] = rows == sorted(
                    (part, off, v) for (part, off), v in latest.items())
                continue
            lost += sum(1 for k, v in acked[t].items() if log.get(k) != v)
            if t in tables:
                rows = table_rows(b.data_dir, t, typed.get(t))
                want = sorted((part, off, v) for (part, off), v in log.items())
                checks["table_equals_log_" + t] = rows == want
                checks["table_rows_" + t] = len(rows)
        checks["lost"] = lost
        checks["duplicated"] = dup
        # the secure and observed side (tests/soak/operate.py)
        op, op_ok = operate.checks(args.seconds, sasl_reader, set(acked[plains[0]].values()),
                                   prober, scraper, b.http_url,
                                   {t: checks["table_rows_" + t] for t in tables})
        checks.update(op)
        # transactions: read_committed sees the committed records still in the
        # log once, never an aborted one; the table holds every committed one
        rc, low = read_values(b.bootstrap, txn_topic, "read_committed")
        ru, low_ru = read_values(b.bootstrap, txn_topic, "read_uncommitted")
        # retention keeps trimming: each read counts what its log start kept
        kept = {v for v, (part, off) in txns["committed"].items() if off >= low[part]}
        kept_ru = {v for v, (part, off) in txns["committed"].items() if off >= low_ru[part]}
        checks["txn_committed"] = len(txns["committed"])
        checks["txn_aborted_records"] = len(txns["aborted"])
        checks["txn_errors"] = txns["errors"][:5]
        checks["txn_aborted_visible"] = sum(1 for v in rc if v in txns["aborted"])
        checks["txn_committed_missing"] = len(kept - set(rc))
        checks["txn_duplicated"] = len(rc) - len(set(rc))
        checks["txn_uncommitted_missing"] = len(kept_ru - set(ru))
        trows = [r[2] for r in table_rows(b.data_dir, txn_topic)]
        checks["txn_table_rows"] = len(trows)
        checks["txn_table_equals_committed"] = sorted(trows) == sorted(txns["committed"])
        # Kafka's ProducerPerformance, transactional with the Java defaults
        sent = re.findall(r"^(\d+) records sent", java_out, re.M)  # the last: the total
        checks["java_txn_exit"] = java_perf.returncode
        checks["java_txn_records_sent"] = int(sent[-1]) if sent else None
        checks["java_txn_errors"] = [l for l in java_out.splitlines()
                                     if "Exception" in l and not l.startswith("\tat")][:5]
        jrc, _low = read_values(b.bootstrap, java_topic, "read_committed")
        checks["java_txn_read_committed"] = len(jrc)
        java_ok = (java_perf.returncode == 0 and checks["java_txn_records_sent"] == java_n
                   and len(jrc) == java_n)
        checks["java_txn_ok"] = java_ok
        # the transactional compacted topic, read across compactions
        want = {k: v for k, v in kc_txns["latest"].items() if v is not None}
        got, rc_end = read_latest(b.bootstrap, kc_topic, "read_committed")
        _ru, ru_end = read_latest(b.bootstrap, kc_topic, "read_uncommitted")
        checks["txn_compacted_transactions"] = kc_txns["transactions"]
        checks["txn_compacted_errors"] = kc_txns["errors"][:5]
        checks["txn_compacted_keys_wrong"] = sorted(
            k.decode() for k in set(want) | set(got) if want.get(k) != got.get(k))[:20]
        checks["txn_compacted_reached_end"] = rc_end and ru_end
        markers = [int(x) for x in re.findall(r"and (\d+) transaction markers", b.log_text())]
        checks["txn_compacted_markers_dropped"] = sum(markers)
        kc_ok = (not kc_txns["errors"] and rc_end and ru_end and kc_txns["transactions"] > 0
                 and not checks["txn_compacted_keys_wrong"])
        checks["txn_compacted_ok"] = kc_ok
        txn_ok = (not txns["errors"] and checks["txn_aborted_visible"] == 0
                  and checks["txn_committed_missing"] == 0 and checks["txn_duplicated"] == 0
                  and checks["txn_uncommitted_missing"] == 0
                  and checks["txn_table_equals_committed"] and len(txns["committed"]) > 0)
        with lock:
            # a consumer behind key compaction never sees superseded records
            checks["group_missing"] = sum(
                1 for t in topics
                for v in (_latest_per_key(acked[t]) if t in upserts else acked[t]).values()
                if v not in consumed[t])
        checks["group_commits_backwards"] = len(commits_backwards)
        with lock:
            checks["kip848_missing"] = sum(1 for v in acked[plains[1]].values()
                                           if v not in kip848["consumed"])
        checks["kip848_member_replacements"] = kip848["churns"]
        checks["kip848_commits_backwards"] = kip848["backwards"][:5]
        checks["kip848_commit_errors"] = len(kip848["commit_errors"])
        checks["kip848_commit_error_examples"] = sorted(set(kip848["commit_errors"]))[:3]
        kip848_ok = (checks["kip848_missing"] == 0 and not kip848["backwards"]
                     and (kip848["churns"] > 0 or args.seconds < 30))
        with lock:
            share_values = list(acked[plains[1]].values())
        checks.update(share_group_checks(share_proc, share_out, share_values))
        if not checks["share_ok"]:
            checks["share_broker_log"] = [ln for ln in b.log_text().splitlines()
                                          if "share" in ln][-20:]
        checks.update(streams.finish())
        late = [s for s in report["samples"] if s["t"] > 60]
        lags = [lag for s in late for lag in s["table_lag_ms"].values() if lag is not None]
        checks["max_table_lag_ms_after_60s"] = max(lags) if lags else None
        checks["max_wal_objects"] = max((s["wal_objects"] for s in report["samples"]), default=0)
        # reported, not judged (yet): the longest event-loop iteration of the run
        # and the worst per sampling window after the first minute
        end_loop = loop_lag(b.http_url) or {}
        checks["max_loop_lag_ms"] = end_loop.get("max_lag_ms")
        checks["loop_slow_iterations"] = end_loop.get("slow_iterations")
        checks["max_loop_lag_ms_after_60s"] = max(
            (s["loop"]["lag_ms"] for s in late if s.get("loop")), default=None)
        checks["max_meta_bytes"] = max((s["meta_bytes"] for s in report["samples"]), default=0)
        last = report["samples"][-1] if report["samples"] else {}
        checks["table_metadata_bytes"] = last.get("table_metadata_bytes")
        checks["table_data_bytes"] = last.get("table_data_bytes")
        # bounded: table metadata at most 10 x its data (issue 13 asks for 10 %)
        meta_ok = not last or last["table_metadata_bytes"] <= 10 * max(last["table_data_bytes"], 1)
        # metadata.json files: none outlives the metadata log plus the file
        # delay (STALE_JSON_S), and their number stays within the log's 10
        # plus a delay's worth of commits: one a COMMIT_MS, and as many again
        # for the commits of snapshot expiry and table maintenance
        keep_json = 10 + 2 * FILE_DELAY_MS // COMMIT_MS
        checks["table_metadata_json_bytes"] = last.get("table_metadata_json_bytes")
        checks["max_table_metadata_json_files"] = max(
            (n[0] for s in report["samples"] for n in s["table_metadata_json_files"].values()),
            default=0)
        checks["max_stale_metadata_json_files"] = max(
            (n[1] for s in report["samples"] for n in s["table_metadata_json_files"].values()),
            default=0)
        meta_ok = (meta_ok and checks["max_table_metadata_json_files"] <= keep_json
                   and checks["max_stale_metadata_json_files"] == 0)
        # flat: with snapshots expiring after 60 s and their files deleted
        # FILE_DELAY_MS later, metadata stops growing. Expiry makes it
        # saw-tooth (every table expires in the same pass), so the end is held
        # against the highest sample between the first deletions and the half
        # of the run, not against one sample that may sit in a trough; growth
        # that goes on still doubles it by the end.
        steady = (SNAPSHOT_AGE_MS + FILE_DELAY_MS) / 1000
        mid = [s for s in report["samples"] if s["t"] >= args.seconds / 2]
        settled = [s for s in report["samples"]
                   if steady <= s["t"] <= args.seconds / 2] or mid[:1]
        if args.seconds >= 2 * steady and mid and last:
            checks["table_metadata_bytes_at_half"] = mid[0]["table_metadata_bytes"]
            ref = max(s["table_metadata_bytes"] for s in settled)
            checks["table_metadata_bytes_first_half_max"] = ref
            meta_ok = meta_ok and last["table_metadata_bytes"] <= 1.25 * ref
        checks["table_metadata_bounded"] = meta_ok
        # the metadata store's live bytes, per key family, stay flat too
        live_ok = True
        if args.seconds >= 150 and mid and last:
            half, end = mid[0]["meta_live"], last["meta_live"]
            checks["meta_live_at_half"], checks["meta_live_at_end"] = half, end
            grown = {f: (half.get(f, 0), n) for f, n in end.items()
                     if n > 1.25 * half.get(f, 0) + 65536}
            checks["meta_live_grown"] = grown
            live_ok = not grown
        checks["meta_live_bounded"] = live_ok
        checks["max_index_entries_per_log"] = [s["max_index_entries_per_log"]
                                               for s in report["samples"][::6]]
        # table maintenance: live files and snapshots flat over the second half
        maint_ok = True
        shaped = [s for s in report["samples"] if all(v for v in s["table_shape"].values())]
        mid_s = [s for s in shaped if s["t"] >= args.seconds / 2]
        if args.seconds >= 2 * steady and mid_s:
            half, end = mid_s[0]["table_shape"], shaped[-1]["table_shape"]
            checks["table_files_snapshots_at_half"] = {t: half[t][::2] for t in tables}
            checks["table_files_snapshots_at_end"] = {t: end[t][::2] for t in tables}
            checks["table_max_files"] = {t: max(s["table_shape"][t][0] for s in shaped)
                                         for t in tables}
            # retained snapshots saw-tooth with expiry: against the first
            # half's highest count once expiry runs (as the metadata above)
            snaps = {t: max([s["table_shape"][t][2] for s in shaped
                             if steady <= s["t"] <= args.seconds / 2]
                            or [half[t][2]]) for t in tables}
            checks["table_snapshots_first_half_max"] = snaps
            # a run of small files is 2 x 16 - 1 at most: one may be waiting
            grown = {t: (half[t], end[t]) for t in tables
                     if end[t][0] > 1.25 * half[t][0] + 31 or end[t][2] > 1.25 * snaps[t] + 5}
            checks["table_maintenance_grown"] = grown
            maint_ok = not grown
        if args.seconds >= 600 and shaped:
            end = shaped[-1]["table_shape"]
            on_disk = {t: dir_bytes(os.path.join(b.data_dir, "objects", "warehouse", "default",
                                                 t, "data")) for t in tables}
            checks["table_data_on_disk_vs_live"] = {t: round(on_disk[t] / max(end[t][1], 1), 2)
                                                    for t in tables}
            maint_ok = maint_ok and all(on_disk[t] <= 3 * max(end[t][1], 1) for t in tables)
        checks["table_maintenance_bounded"] = maint_ok
        checks["table_reader_scans"] = reader["scans"]
        checks["table_reader_retries"] = reader["retries"]
        checks["table_reader_errors"] = reader["errors"][:5]
        reader_ok = not reader["errors"] and reader["scans"] >= min(10, args.seconds // 20)
        # a reader that held a loaded table for HOLD_S found every file it referenced
        checks["holding_reader_holds"] = holder["holds"]
        checks["holding_reader_files_read"] = holder["files_read"]
        checks["holding_reader_missing"] = holder["missing"][:5]
        holder_ok = not holder["missing"] and (holder["holds"] > 0 or args.seconds < 2 * HOLD_S)
        # bytes under each table's location within a small factor of its live
        # bytes: expired snapshots' files and replaced data files go once their
        # delay is over (runs long enough for deletions to start)
        # the merge-on-read upsert table's maintenance folded and merged its
        # position delete files (log lines of compact/compactor_tables.c)
        # (and the version 3 table's deletion vectors, counted in the same line)
        mor_ok = True
        for t, sfx in ((compacted_mor, "mor"), (compacted_v3, "v3")):
            folded = [int(m.group(1)) for m in re.finditer(
                r"table default\.%s: rewrote .*; (\d+) position delete files applied" % t,
                b.log_text())]
            checks[sfx + "_delete_files_folded"] = sum(folded)
            checks[sfx + "_maintenance_rewrites"] = len(folded)
            mor_ok = mor_ok and (sum(folded) > 0 or args.seconds < 60)
        # (and the merge-on-read upsert tables: their folded delete files go too)
        loc = {t: location_bytes(b.data_dir, t) for t in tables + [compacted_mor, compacted_v3]}
        checks["table_location_bytes"] = loc
        checks["table_location_vs_live"] = {
            t: {k: round(v[0] / max(v[1], 1), 2) for k, v in d.items()} for t, d in loc.items()}
        location_ok = True
        if args.seconds >= (SNAPSHOT_AGE_MS + FILE_DELAY_MS) / 1000:
            # data files: live ones plus those replaced within the delay;
            # metadata: live plus a delay's worth of commits' (metadata.json
            # files are counted above)
            location_ok = all(v[0] <= LOCATION_FACTOR * max(v[1], 1)
                              for d in loc.values() for k, v in d.items() if k == "data")
        checks["table_location_bounded"] = location_ok
        ok = (not failed and lost == 0 and dup == 0 and checks["group_missing"] == 0
              and checks.get("compacted_unexpected", 0) == 0
              and checks.get("compacted_unexpected_mor", 0) == 0
              and checks.get("compacted_unexpected_v3", 0) == 0
              and not commits_backwards
              and all(v for k, v in checks.items() if k.startswith("table_equals_log_"))
              and checks.get("upsert_table_equals_latest", False)
              and checks.get("upsert_table_equals_latest_mor", False) and mor_ok
              and checks.get("upsert_table_equals_latest_v3", False)
              and (not lags or max(lags) <= max(3 * COMMIT_MS, 10000))
              and checks["max_wal_objects"] < 20000 and meta_ok and live_ok and maint_ok
              and reader_ok and txn_ok and java_ok and kc_ok and holder_ok and location_ok
              and op_ok and kip848_ok and checks["share_ok"] and checks["streams_ok"])
        checks["ok"] = ok
    finally:
        b.stop()
        report["broker_log_errors"] = b.problems()[:20]
    if args.plot and report["samples"]:
        t0 = tables[0] if report["samples"][0].get("table_shape") else None
        shape = (lambda s, i: (s["table_shape"].get(t0) or (None,) * 3)[i])
        write_plot(args.plot, [s["t"] for s in report["samples"]], "s", [
            ("live data files, %s" % t0, [shape(s, 0) for s in report["samples"]]),
            ("retained snapshots, %s" % t0, [shape(s, 2) for s in report["samples"]]),
            ("table metadata bytes, all tables",
             [s["table_metadata_bytes"] for s in report["samples"]]),
            ("table data bytes on disk, all tables",
             [s["table_data_bytes"] for s in report["samples"]]),
            ("max index entries per log",
             [s["max_index_entries_per_log"] for s in report["samples"]])],
            "soak: %d s at %d records/s (each series scaled to its max)"
            % (args.seconds, args.rate))
    text = json.dumps(report, indent=2)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    print(json.dumps(report["checks"], indent=2))
    print("soak: %s" % ("PASS" if report["checks"].get("ok") else "FAIL"))
    return 0 if report["checks"].get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
