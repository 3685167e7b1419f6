"""Table formats written by Lakestream's own writers, read back by independent
readers: pyarrow and DuckDB (Parquet), fastavro (Avro manifests), PyIceberg
(Iceberg v2 tables from a metadata file).

The C unit tests write the files when LS_TABLE_OUT names a directory:
tests/unit/table/test_parquet.c (raw Kafka table files, every codec/encoding),
tests/unit/registry/test_avro.c and tests/unit/table/test_iceberg.c. Rows follow raw_row()
(mirrored from the C side), so every value is checked, not just counts.
"""

import datetime
import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN_DIR = os.path.join(os.path.dirname(os.environ.get("LAKESTREAM_BIN") or
                                       os.path.join(ROOT, "build", "lakestream")), "tests")

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
duckdb = pytest.importorskip("duckdb")

ROWS = 5000
TS0_US = 1700000000000 * 1000


def raw_row(i):
    """Row i of the generated raw table (tests/unit/table/test_parquet.c raw_row)."""
    headers = []
    for j in range(i % 4):
        headers.append({"key": "h%d" % j,
                        "value": None if j == 1 else ("v%d-%d" % (i, j)).encode()})
    return {
        "partition": i % 3,
        "offset": i,
        "ts_us": TS0_US + i * 1000 * 1000,
        "key": None if i % 5 == 0 else ("k%d" % (i % 7)).encode(),
        "value": None if i % 11 == 0 else ("value-%d" % i).encode(),
        "headers": headers,
    }


def emit(binary, outdir):
    """Runs a unit-test binary that writes its files into outdir."""
    path = os.path.join(BIN_DIR, binary)
    if not os.access(path, os.X_OK):
        pytest.fail("%s not built (make all)" % path)
    env = dict(os.environ, LS_TABLE_OUT=str(outdir))
    res = subprocess.run([path], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "FAIL" not in res.stdout, res.stdout + res.stderr
    return outdir


RAW_FILES = ["raw_uncompressed.parquet", "raw_snappy.parquet", "raw_gzip.parquet",
             "raw_zstd.parquet", "raw_plain.parquet", "raw_dict_fallback.parquet"]


@pytest.fixture(scope="module")
def parquet_dir(tmp_path_factory):
    return emit("test_parquet", tmp_path_factory.mktemp("parquet"))


@pytest.mark.parametrize("name", RAW_FILES)
def test_parquet_pyarrow_reads_every_value(parquet_dir, name):
    f = pq.ParquetFile(os.path.join(parquet_dir, name))
    # Iceberg field ids and logical types survive in the Parquet schema
    arrow_schema = f.schema_arrow
    ids = {fld.name: int(fld.metadata[b"PARQUET:field_id"]) for fld in arrow_schema}
    assert ids == {"partition": 1, "offset": 2, "timestamp": 3, "key": 4, "value": 5, "headers": 6}
    ts = arrow_schema.field("timestamp").type
    assert ts == pa.timestamp("us", tz="UTC")
    elem = arrow_schema.field("headers").type.value_field
    assert int(elem.metadata[b"PARQUET:field_id"]) == 7
    assert [int(c.metadata[b"PARQUET:field_id"]) for c in elem.type] == [8, 9]
    assert elem.type.field("key").type == pa.string()
    assert f.metadata.num_rows == ROWS
    rows = f.read().to_pylist()
    assert len(rows) == ROWS
    for i, got in enumerate(rows):
        want = raw_row(i)
        assert got["partition"] == want["partition"]
        assert got["offset"] == want["offset"]
        ts_us = int(got["timestamp"].timestamp()) * 1000000 + got["timestamp"].microsecond
        assert ts_us == want["ts_us"]
        assert got["key"] == want["key"]
        assert got["value"] == want["value"]
        assert got["headers"] == want["headers"], i


@pytest.mark.parametrize("name", RAW_FILES)
def test_parquet_statistics_match_data(parquet_dir, name):
    """Every row group's min/max/null_count agree with the rows it holds."""
    f = pq.ParquetFile(os.path.join(parquet_dir, name))
    start = 0
    for rg in range(f.metadata.num_row_groups):
        md = f.metadata.row_group(rg)
        rows = [raw_row(i) for i in range(start, start + md.num_rows)]
        start += md.num_rows
        by_path = {md.column(c).path_in_schema: md.column(c) for c in range(md.num_columns)}
        st = by_path["offset"].statistics
        assert (st.min, st.max, st.null_count) == (rows[0]["offset"], rows[-1]["offset"], 0)
        keys = [r["key"] for r in rows if r["key"] is not None]
        st = by_path["key"].statistics
        assert st.null_count == sum(1 for r in rows if r["key"] is None)
        assert (st.min, st.max) == (min(keys), max(keys))
        st = by_path["partition"].statistics
        assert (st.min, st.max) == (0, 2)
        codec = by_path["value"].compression
        want_codec = {"raw_uncompressed.parquet": "UNCOMPRESSED", "raw_gzip.parquet": "GZIP",
                      "raw_zstd.parquet": "ZSTD", "raw_dict_fallback.parquet": "ZSTD"}.get(
                          name, "SNAPPY")
        assert codec == want_codec
    assert start == ROWS
    encodings = f.metadata.row_group(0).column(0).encodings
    if name in ("raw_plain.parquet",):
        assert "RLE_DICTIONARY" not in encodings
    else:
        assert "RLE_DICTIONARY" in encodings


def test_parquet_duckdb_reads_all_files(parquet_dir):
    con = duckdb.connect()
    for name in RAW_FILES:
        path = os.path.join(parquet_dir, name)
        n, s_off, s_part, nkeys, nvals, nh, hnull = con.execute(
            "SELECT count(*), sum(\"offset\"), sum(\"partition\"), count(key), count(value), "
            "sum(len(headers)), sum(len(list_filter(headers, lambda h: h.value IS NULL))) "
            "FROM read_parquet(?)", [path]).fetchone()
        rows = [raw_row(i) for i in range(ROWS)]
        assert n == ROWS
        assert s_off == sum(r["offset"] for r in rows)
        assert s_part == sum(r["partition"] for r in rows)
        assert nkeys == sum(1 for r in rows if r["key"] is not None)
        assert nvals == sum(1 for r in rows if r["value"] is not None)
        assert nh == sum(len(r["headers"]) for r in rows)
        assert hnull == sum(1 for r in rows for h in r["headers"] if h["value"] is None)
        # point lookups through the typed columns
        got = con.execute(
            "SELECT \"partition\", epoch_us(\"timestamp\"), key, value, headers FROM read_parquet(?) "
            "WHERE \"offset\" = 4003", [path]).fetchone()
        want = raw_row(4003)
        assert got[0] == want["partition"] and got[1] == want["ts_us"]
        assert got[2] == want["key"] and got[3] == want["value"]
        assert [dict(h) for h in got[4]] == want["headers"]


def mixed_value(i):
    """Value i of raw_incompressible.parquet (tests/unit/table/test_parquet.c mixed_value)."""
    if (i // 600) % 2:
        return bytes(b"lakestream table page "[k % 22] for k in range(1024))
    x, out = i + 1, bytearray(1024)
    for k in range(1024):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        out[k] = x & 0xFF
    return bytes(out)


def test_parquet_incompressible_zstd_pages(parquet_dir):
    """zstd pages stored as raw-block frames (random values) beside compressed
    ones (text values) in one column chunk: pyarrow and DuckDB read every value."""
    path = os.path.join(parquet_dir, "raw_incompressible.parquet")
    f = pq.ParquetFile(path)
    assert f.metadata.row_group(0).column(4).compression == "ZSTD"
    want = [mixed_value(i) for i in range(3000)]
    got = f.read(columns=["offset", "value"]).to_pydict()
    assert got["offset"] == list(range(3000))
    assert got["value"] == want
    con = duckdb.connect()
    rows = con.execute("SELECT \"offset\", value FROM read_parquet(?) ORDER BY 1",
                       [path]).fetchall()
    assert [bytes(v) for _, v in rows] == want


def test_parquet_typed_columns(parquet_dir):
    """BOOLEAN / FLOAT / DOUBLE / DATE columns (tests/unit/table/test_parquet.c write_typed)."""
    import math
    path = os.path.join(parquet_dir, "typed.parquet")
    f = pq.ParquetFile(path)
    assert f.metadata.num_row_groups > 1
    rows = f.read().to_pylist()
    assert len(rows) == 1000
    for i, r in enumerate(rows):
        assert r["b"] == (None if i % 7 == 0 else i % 3 == 0)
        if i == 500:
            assert math.isnan(r["f"])
        else:
            assert r["f"] == i * 0.5
        assert r["d"] == (None if i % 4 == 0 else -i / 3.0)
        assert (r["n"] - datetime.date(1970, 1, 1)).days == i
    st = f.metadata.row_group(0).column(1).statistics
    assert st.min == 0.0 and math.copysign(1, st.min) == -1  # zero min written as -0.0
    for rg in range(f.metadata.num_row_groups):
        st = f.metadata.row_group(rg).column(1).statistics
        assert not math.isnan(st.max) and not math.isnan(st.min)
    con = duckdb.connect()
    nb, nt, sf, sd = con.execute(
        "SELECT count(b), count(*) FILTER (WHERE b), sum(f) FILTER (WHERE NOT isnan(f)), sum(d) "
        "FROM read_parquet(?)", [path]).fetchone()
    assert nb == sum(1 for i in range(1000) if i % 7)
    assert nt == sum(1 for i in range(1000) if i % 7 and i % 3 == 0)
    assert sf == sum(i * 0.5 for i in range(1000) if i != 500)
    assert abs(sd - sum(-i / 3.0 for i in range(1000) if i % 4)) < 1e-6


# ---- Avro object containers (fastavro) -------------------------------------

fastavro = pytest.importorskip("fastavro")


def avro_datum(i):
    """Datum i of tests/unit/registry/test_avro.c avro_datum()."""
    return {
        "id": i * 1000003,
        "small": (i % 1000) - 500,
        "name": "name-%d" % i,
        "blob": bytes([i & 0xff, 0, 0xff])[: i % 4],
        "flag": i % 2 == 0,
        "maybe": None if i % 3 == 0 else -i,
        "tags": ["t%d" % j for j in range(i % 3)],
        "props": {"p": str(i).encode()},
        "sizes": None if i % 5 == 0 else [{"key": 1, "value": i}, {"key": 2, "value": 2 * i}],
    }


@pytest.fixture(scope="module")
def avro_dir(tmp_path_factory):
    return emit("test_avro", tmp_path_factory.mktemp("avro"))


@pytest.mark.parametrize("name,codec", [("test_null.avro", "null"),
                                        ("test_deflate.avro", "deflate")])
def test_avro_fastavro_reads_every_datum(avro_dir, name, codec):
    with open(os.path.join(avro_dir, name), "rb") as fp:
        r = fastavro.reader(fp)
        meta = r.metadata
        schema = r.writer_schema
        got = list(r)
    assert meta["avro.codec"] == codec
    assert meta["format-version"] == "2" and meta["content"] == "data"
    # extra schema attributes reach the reader verbatim
    import json
    raw = json.loads(meta["avro.schema"])
    assert [f["field-id"] for f in raw["fields"]] == [1, 2, 3, 4, 5, 6, 7, 9, 12]
    assert raw["fields"][6]["type"]["element-id"] == 8
    assert raw["fields"][8]["type"][1]["logicalType"] == "map"
    assert schema["fields"][0]["field-id"] == 1
    assert len(got) == 3000
    for i, d in enumerate(got):
        assert d == avro_datum(i), i


def test_avro_bytes_metadata_and_empty_file(avro_dir):
    with open(os.path.join(avro_dir, "test_deflate.avro"), "rb") as fp:
        assert fastavro.reader(fp).metadata["utf8-meta"] == "\u00e9t\u00e9"
    with open(os.path.join(avro_dir, "test_empty.avro"), "rb") as fp:
        assert list(fastavro.reader(fp)) == []


# ---- Iceberg v2 tables (PyIceberg, fastavro, DuckDB) -----------------------
#
# tests/unit/table/test_iceberg.c writes two raw tables in the filesystem layout,
# each through three fast appends of rows [0,2000), [2000,3500), [3500,5000):
#   raw_unpart  unpartitioned, snappy, one file per append
#   raw_day     partitioned by day(timestamp), identity(partition); zstd;
#               files rolled at ~24 KiB
# Appends set lakestream.last-offset.p<k> (table properties; each snapshot's
# summary records what its commit set); the third append sets p0 only.
#   raw_merged  40 appends of 50 rows, identity(partition), manifests merged
#               every 4, snapshots expiring after 500 ms, 3 old metadata files

import json  # noqa: E402
import struct  # noqa: E402

pyiceberg_table = pytest.importorskip("pyiceberg.table")


def ice_row(i):
    r = raw_row(i)
    r["ts_us"] = TS0_US + i * 60 * 1000 * 1000
    return r


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    out = emit("test_iceberg", tmp_path_factory.mktemp("iceberg"))
    return os.path.join(str(out), "store", "warehouse", "ns")


def table_dir(warehouse, name):
    return os.path.join(warehouse, name)


def current_metadata(warehouse, name):
    md = os.path.join(table_dir(warehouse, name), "metadata")
    with open(os.path.join(md, "version-hint.text")) as fp:
        n = int(fp.read().strip())
    return os.path.join(md, "v%d.metadata.json" % n)


def load(warehouse, name):
    return pyiceberg_table.StaticTable.from_metadata("file://" + current_metadata(warehouse, name))


def ts_us(dt):
    return int(dt.timestamp()) * 1000000 + dt.microsecond


@pytest.mark.parametrize("name", ["raw_unpart", "raw_day"])
def test_iceberg_pyiceberg_scan_every_row(warehouse, name):
    t = load(warehouse, name)
    assert t.metadata.format_version == 2
    assert [f.field_id for f in t.schema().fields] == [1, 2, 3, 4, 5, 6]
    assert str(t.schema().find_field("timestamp").field_type) == "timestamptz"
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["offset"])
    assert len(rows) == ROWS
    for i, got in enumerate(rows):
        want = ice_row(i)
        assert got["offset"] == i
        assert got["partition"] == want["partition"]
        assert ts_us(got["timestamp"]) == want["ts_us"]
        assert got["key"] == want["key"] and got["value"] == want["value"]
        assert got["headers"] == want["headers"], i


@pytest.mark.parametrize("name", ["raw_unpart", "raw_day"])
def test_iceberg_snapshots_and_summary(warehouse, name):
    t = load(warehouse, name)
    snaps = t.metadata.snapshots
    assert len(snaps) == 3
    assert [s.sequence_number for s in snaps] == [1, 2, 3]
    assert t.metadata.last_sequence_number == 3
    assert snaps[1].parent_snapshot_id == snaps[0].snapshot_id
    assert t.metadata.current_snapshot_id == snaps[2].snapshot_id
    assert t.metadata.refs["main"].snapshot_id == snaps[2].snapshot_id
    assert len(t.metadata.snapshot_log) == 3 and len(t.metadata.metadata_log) == 3
    s = t.current_snapshot().summary
    assert s.operation.value == "append"
    assert s["total-records"] == "5000" and s["added-records"] == "1500"
    # the third append set p0 only; the table keeps p1/p2 from the second
    assert s["lakestream.last-offset.p0"] == "4998"
    assert "lakestream.last-offset.p1" not in s.additional_properties
    props = t.metadata.properties
    assert props["lakestream.last-offset.p0"] == "4998"
    assert props["lakestream.last-offset.p1"] == "3499"
    assert props["lakestream.last-offset.p2"] == "3497"
    # time travel to the first snapshot
    first = t.scan(snapshot_id=snaps[0].snapshot_id).to_arrow()
    assert first.num_rows == 2000
    assert sorted(first.column("offset").to_pylist()) == list(range(2000))


def test_iceberg_partition_and_bounds_pruning(warehouse):
    t = load(warehouse, "raw_day")
    spec = t.spec()
    assert [(f.field_id, str(f.transform), f.source_id) for f in spec.fields] == [
        (1000, "day", 3), (1001, "identity", 1)]
    all_files = list(t.scan().plan_files())
    part1 = list(t.scan(row_filter="partition = 1").plan_files())
    assert 0 < len(part1) < len(all_files)
    assert all(f.file.partition[1] == 1 for f in part1)
    got = t.scan(row_filter="partition = 1").to_arrow().column("partition").to_pylist()
    assert got == [1] * sum(1 for i in range(ROWS) if i % 3 == 1)
    # day filter prunes through the manifest's partition values
    day0 = list(t.scan(row_filter="timestamp < '2023-11-15T00:00:00+00:00'").plan_files())
    assert 0 < len(day0) < len(all_files)
    # column bounds prune the unpartitioned table's files (one per append)
    u = load(warehouse, "raw_unpart")
    assert len(list(u.scan().plan_files())) == 3
    assert len(list(u.scan(row_filter="offset < 100").plan_files())) == 1
    assert len(list(u.scan(row_filter="offset >= 3600").plan_files())) == 1


def test_iceberg_manifests_with_fastavro(warehouse):
    meta = json.load(open(current_metadata(warehouse, "raw_day")))
    snap = [s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"]][0]
    list_path = snap["manifest-list"][len("file://"):]
    with open(list_path, "rb") as fp:
        r = fastavro.reader(fp)
        lmeta = r.metadata
        schema = json.loads(lmeta["avro.schema"])
        manifests = list(r)
    assert lmeta["format-version"] == "2"
    assert lmeta["snapshot-id"] == str(snap["snapshot-id"])
    assert lmeta["sequence-number"] == "3"
    ids = {f["name"]: f["field-id"] for f in schema["fields"]}
    assert ids["manifest_path"] == 500 and ids["added_snapshot_id"] == 503
    assert ids["content"] == 517 and ids["partitions"] == 507
    assert [m["sequence_number"] for m in manifests] == [3, 2, 1]
    assert sum(m["added_rows_count"] for m in manifests) == ROWS
    total = 0
    for m in manifests:
        assert m["content"] == 0 and m["partition_spec_id"] == 0
        day = m["partitions"][0]
        lo, hi = struct.unpack("<i", day["lower_bound"])[0], struct.unpack("<i", day["upper_bound"])[0]
        path = m["manifest_path"][len("file://"):]
        assert os.path.getsize(path) == m["manifest_length"]
        with open(path, "rb") as fp:
            mr = fastavro.reader(fp)
            hm = mr.metadata
            entries = list(mr)
        assert hm["format-version"] == "2" and hm["content"] == "data"
        assert hm["partition-spec-id"] == "0" and hm["schema-id"] == "0"
        assert json.loads(hm["partition-spec"])[0]["transform"] == "day"
        assert json.loads(hm["schema"])["fields"][2]["type"] == "timestamptz"
        assert len(entries) == m["added_files_count"]
        for e in entries:
            assert e["status"] == 1 and e["snapshot_id"] == m["added_snapshot_id"]
            assert e["sequence_number"] is None
            df = e["data_file"]
            assert df["file_format"] == "PARQUET" and df["content"] == 0
            fpath = df["file_path"][len("file://"):]
            assert os.path.getsize(fpath) == df["file_size_in_bytes"]
            total += df["record_count"]
            day_value = df["partition"]["timestamp_day"]  # logicalType date
            assert lo <= (day_value - datetime.date(1970, 1, 1)).days <= hi
            lower = {kv["key"]: kv["value"] for kv in df["lower_bounds"]}
            upper = {kv["key"]: kv["value"] for kv in df["upper_bounds"]}
            # check the bounds against the file's own rows
            offs = pq.read_table(fpath, columns=["offset"]).column("offset").to_pylist()
            assert struct.unpack("<q", lower[2])[0] == min(offs)
            assert struct.unpack("<q", upper[2])[0] == max(offs)
            assert {kv["key"]: kv["value"] for kv in df["value_counts"]}[2] == len(offs)
            nulls = {kv["key"]: kv["value"] for kv in df["null_value_counts"]}
            assert nulls[5] == sum(1 for o in offs if o % 11 == 0)
            assert struct.unpack("<i", lower[1])[0] == df["partition"]["partition"]
    assert total == ROWS


def test_iceberg_data_files_with_duckdb(warehouse):
    t = load(warehouse, "raw_day")
    paths = [f.file.file_path[len("file://"):] for f in t.scan().plan_files()]
    con = duckdb.connect()
    n, s, mn, mx = con.execute(
        "SELECT count(*), sum(\"offset\"), min(epoch_us(\"timestamp\")), max(epoch_us(\"timestamp\")) "
        "FROM read_parquet(?)", [paths]).fetchone()
    assert n == ROWS and s == sum(range(ROWS))
    assert mn == ice_row(0)["ts_us"] and mx == ice_row(ROWS - 1)["ts_us"]


def test_iceberg_table_by_directory_and_version_hint(warehouse):
    """PyIceberg finds the current metadata through version-hint.text."""
    t = pyiceberg_table.StaticTable.from_metadata("file://" + table_dir(warehouse, "raw_unpart"))
    assert t.metadata_location.endswith("/metadata/v4.metadata.json")
    assert t.scan().to_arrow().num_rows == ROWS


def test_iceberg_snapshot_without_files(warehouse):
    """An append of no files moves the summary offsets; the rows stay."""
    t = load(warehouse, "raw_markers")
    snaps = t.metadata.snapshots
    assert len(snaps) == 2
    s = t.current_snapshot().summary
    assert s["added-data-files"] == "0" and s["total-records"] == "10"
    assert s["lakestream.last-offset.p0"] == "20"
    assert t.metadata.properties["lakestream.last-offset.p1"] == "7"
    rows = sorted(r["offset"] for r in t.scan().to_arrow().to_pylist())
    assert rows == list(range(10))


def test_iceberg_hour_partitions(warehouse):
    """raw_hour: hour(timestamp); one file per hour per append."""
    t = load(warehouse, "raw_hour")
    assert [(f.field_id, str(f.transform)) for f in t.spec().fields] == [(1000, "hour")]
    files = list(t.scan().plan_files())
    hours = {f.file.partition[0] for f in files}
    assert hours == {ice_row(i)["ts_us"] // 3600000000 for i in range(ROWS)}
    lo = ice_row(0)["ts_us"] // 3600000000
    # rows of the first hour only: 1 hour = 60 offsets
    sel = t.scan(row_filter="timestamp < '2023-11-14T23:00:00+00:00'")
    assert len(list(sel.plan_files())) == 1
    offs = sorted(sel.to_arrow().column("offset").to_pylist())
    assert offs == [i for i in range(ROWS) if ice_row(i)["ts_us"] // 3600000000 == lo]
    assert t.scan().to_arrow().num_rows == ROWS


def test_iceberg_rewritten_table(warehouse):
    """raw_rewritten: partition 0's twenty small files replaced by one (a
    "replace" snapshot, Iceberg's RewriteFiles), then an append. PyIceberg
    plans every row once with its values; the snapshot before the rewrite
    still reads the same rows through the old files."""
    t = load(warehouse, "raw_rewritten")
    rows = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["offset"])
    assert [r["offset"] for r in rows] == list(range(2100))
    for i, got in enumerate(rows):
        want = ice_row(i)
        assert got["partition"] == want["partition"] and got["value"] == want["value"], i
    files = [task.file for task in t.scan().plan_files()]
    assert len([f for f in files if f.partition[0] == 0]) == 2      # rewritten + the last append's
    assert len(files) == 2 + 2 * 21
    ops = [s.summary.operation.value for s in t.metadata.snapshots]
    assert ops == ["append"] * 20 + ["replace", "append"]
    replace = t.metadata.snapshots[20]
    assert replace.summary["deleted-data-files"] == "20"
    assert replace.summary["added-data-files"] == "1"
    assert replace.summary["total-records"] == "2000"
    before = t.metadata.snapshots[19].snapshot_id
    old = sorted(t.scan(snapshot_id=before).to_arrow().column("offset").to_pylist())
    assert old == list(range(2000))
    assert len(list(t.scan(snapshot_id=before).plan_files())) == 60


def test_iceberg_merged_and_expired_table(warehouse):
    """raw_merged: after merges and expiry PyIceberg plans every row exactly
    once; only recent snapshots, few manifests and a short metadata log stay,
    and the files expiry removed are gone."""
    t = load(warehouse, "raw_merged")
    offs = sorted(t.scan().to_arrow().column("offset").to_pylist())
    assert offs == list(range(2000))
    snaps = t.metadata.snapshots
    assert 2 <= len(snaps) <= 12
    assert len(t.metadata.snapshot_log) == len(snaps)
    assert len(t.metadata.metadata_log) == 3
    manifests = t.current_snapshot().manifests(t.io)
    assert len(manifests) <= 4
    # merged manifests hold EXISTING entries from earlier snapshots
    assert any(m.existing_files_count for m in manifests)
    # the oldest retained snapshot still reads (time travel within the age)
    first = t.scan(snapshot_id=snaps[0].snapshot_id).to_arrow().num_rows
    assert 0 < first < 2000
    md = os.path.join(table_dir(warehouse, "raw_merged"), "metadata")
    lists = [f for f in os.listdir(md) if f.startswith("snap-")]
    assert len(lists) == len(snaps)
    assert len([f for f in os.listdir(md) if f.endswith(".metadata.json")]) == 4
    # every data file the table references still exists and nothing else was lost
    for task in t.scan().plan_files():
        assert os.path.exists(task.file.file_path[len("file://"):])
