"""A materialized table read by JavaScript readers that share no code with our
writers or with the Python/DuckDB stack: hyparquet (every data file of the
current snapshot) and icebird (the Iceberg table: version hint, metadata,
manifest list, manifests, data files, over HTTP). tests/integration/js/
read_table.js does the reading; here we produce records with null and empty
keys and values, bytes that are not UTF-8, repeated and null-valued headers and
explicit timestamps over three days, once per Parquet codec the table policy
accepts, and check that both readers return exactly what was produced, field by
field.

icebird decodes every BYTE_ARRAY column as UTF-8 text (it calls hyparquet with
its default utf8=true and offers no option), although Iceberg `binary` is an
unannotated BYTE_ARRAY (Parquet LogicalTypes: only STRING/ENUM/JSON mark text).
So icebird's keys, values and header values are compared with the produced
bytes decoded as UTF-8 with U+FFFD replacement — exact for UTF-8 payloads,
lossy by the reader's design otherwise; hyparquet, asked for bytes, must
return them exactly."""

import json
import os
import random
import shutil
import subprocess
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import iceberg_util
from kafka_util import unique_topic, wait_topic

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "tests", "integration", "js", "read_table.js")
NODE_MODULES = os.path.join(ROOT, "tests", "integration", "js", "node_modules")

PARTS = 3
N = 300
TS0_MS = 1_700_000_000_000          # 2023-11-14; +10 min per record spans three days

# Large distinct values, all in partition 0 on 2023-11-15: 1.5 MB in one column
# chunk when they land in one data file, beyond the writer's 1 MiB dictionary
# and page limits (PLAIN fallback, several pages); each in its own file otherwise.
BIG = range(30, 45, 3)
BIG_BYTES = 300_000

# lakestream.table.compression value → the codec name in the Parquet footer
CODECS = {"zstd": "ZSTD", "snappy": "SNAPPY", "gzip": "GZIP", "none": "UNCOMPRESSED"}


def record(i):
    """Record i as produced (and as every reader must return it)."""
    if i % 7 == 0:
        key = None
    elif i % 13 == 0:
        key = b""                                        # empty, not null
    elif i % 5 == 0:
        key = b"\xff\x00k%d" % i                         # not UTF-8
    else:
        key = b"k%d" % i
    if i in BIG:
        value = random.Random(i).randbytes(BIG_BYTES // 2).hex().encode()
    elif i % 11 == 0:
        value = None                                     # tombstone
    elif i % 17 == 0:
        value = b""
    elif i % 3 == 0:
        value = bytes([i % 256, 0xfe, 0x80]) + b"bin"   # not UTF-8
    elif i % 10 == 1:
        value = ("value-%d " % i).encode() * 300         # ~3 KB, compressible
    else:
        value = ("value-%d é€" % i).encode()
    headers = []
    for j in range(i % 4):
        hv = None if j == 1 else b"v%d-%d" % (i, j)
        headers.append(("h%d" % (j % 2) if i % 8 else "ключ", hv))   # keys may repeat
    return {"partition": i % PARTS, "offset": i // PARTS, "ts_ms": TS0_MS + i * 600_000,
            "key": key, "value": value, "headers": headers}


def produce(bootstrap, topic):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
                  "enable.idempotence": True})
    for i in range(N):
        r = record(i)
        p.produce(topic, key=r["key"], value=r["value"], partition=r["partition"],
                  headers=r["headers"], timestamp=r["ts_ms"])
    assert p.flush(60) == 0


def hex_of(b):
    return None if b is None else {"hex": b.hex()}


def text_of(b):
    return None if b is None else {"utf8": b.decode("utf-8", "replace")}


def expected_row(i, binary):
    """Row i as read_table.js prints it: binary=hex_of for hyparquet (bytes
    kept), text_of for icebird (bytes decoded as UTF-8 by the reader)."""
    r = record(i)
    return {
        "partition": {"int": str(r["partition"])},
        "offset": {"int": str(r["offset"])},
        "key": binary(r["key"]),
        "value": binary(r["value"]),
        "headers": [{"key": {"utf8": k}, "value": binary(v)} for k, v in r["headers"]],
    }


def check_rows(reader, got, binary, timestamp):
    """got (read_table.js rows) holds exactly records 0..N-1, field by field."""
    by_pos = {}
    for row in got:
        pos = (int(row["partition"]["int"]), int(row["offset"]["int"]))
        assert pos not in by_pos, "%s: row (partition, offset) %s twice" % (reader, pos)
        by_pos[pos] = row
    want_pos = {(i % PARTS, i // PARTS) for i in range(N)}
    assert set(by_pos) == want_pos, "%s: rows %s missing, %s unexpected" % (
        reader, sorted(want_pos - set(by_pos))[:10], sorted(set(by_pos) - want_pos)[:10])
    for i in range(N):
        row = dict(by_pos[(i % PARTS, i // PARTS)])
        assert timestamp(row.pop("timestamp")) == record(i)["ts_ms"], (reader, i)
        assert row == expected_row(i, binary), "%s: record %d" % (reader, i)


def micros_as_ms(t):
    """hyparquet, asked for raw micros: exact, so it must be a whole ms."""
    us = int(t["int"])
    assert us % 1000 == 0, us
    return us // 1000


def date_ms(t):
    """icebird returns a JS Date (ms precision, which is all Kafka has)."""
    return t["ms"]


def wait_version_hint(tdir, metadata_path, timeout=10):
    """version-hint.text is rewritten after v<N>.metadata.json is copied;
    waits until it names the metadata PyIceberg read, so icebird (which
    follows the hint) reads the same snapshot."""
    want = os.path.basename(metadata_path)[1:].split(".")[0]
    hint = os.path.join(tdir, "metadata", "version-hint.text")
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        with open(hint) as f:
            got = f.read().strip()
        if got == want:
            return
        time.sleep(0.1)
    raise AssertionError("version-hint.text says %s, newest metadata is v%s" % (got, want))


@pytest.mark.parametrize("compression", sorted(CODECS))
def test_js_readers_read_every_record(broker_factory, compression):
    iceberg_util.local_store_only()
    if shutil.which("node") is None or not os.path.isdir(os.path.join(NODE_MODULES, "icebird")):
        pytest.fail("node or tests/integration/js/node_modules missing: run tools/install-deps.sh test",
                    pytrace=False)
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = unique_topic("readers")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    config = {"lakestream.table.enabled": "true", "lakestream.table.commit.interval.ms": "1000",
              "lakestream.table.compression": compression}
    a.create_topics([NewTopic(topic, PARTS, 1, config=config)])[topic].result(30)
    wait_topic(b.bootstrap, topic, PARTS)
    tdir = iceberg_util.table_dir(b, topic)

    t0 = time.monotonic()
    produce(b.bootstrap, topic)
    table, rows, md = iceberg_util.wait_rows(tdir, N)
    fresh_s = time.monotonic() - t0
    assert rows.num_rows == N
    wait_version_hint(tdir, md)

    t0 = time.monotonic()
    res = subprocess.run(["node", SCRIPT, tdir], capture_output=True, text=True, timeout=120)
    read_s = time.monotonic() - t0
    assert res.stdout, "read_table.js printed nothing (exit %d): %s" % (res.returncode, res.stderr)
    out = json.loads(res.stdout)
    for reader in ("hyparquet", "icebird"):
        assert "error" not in out[reader], "%s failed:\n%s" % (reader, out[reader]["error"])
    assert res.returncode == 0, res.stderr
    assert out["metadata_file"] == os.path.basename(md)

    # the data files icebird's manifest reader lists are PyIceberg's, with the
    # same record counts, and each is written with the policy's codec
    planned = {f.file.file_path: f.file.record_count for f in table.scan().plan_files()}
    assert {f["path"]: f["record_count"] for f in out["files"]} == planned
    assert all(f["content"] == 0 for f in out["files"])
    assert {c for f in out["files"] for c in f["codecs"]} == {CODECS[compression]}

    check_rows("hyparquet", out["hyparquet"]["rows"], hex_of, micros_as_ms)
    check_rows("icebird", out["icebird"]["rows"], text_of, date_ms)
    encodings = sorted({e for f in out["files"] for e in f["encodings"]})
    print("compression=%s: %d data files (encodings %s), table complete %.1fs after produce "
          "start; read_table.js %.2fs, %d HTTP requests, %d bytes served"
          % (compression, len(out["files"]), ",".join(encodings), fresh_s, read_s,
             out["http_requests"], out["http_bytes"]))
