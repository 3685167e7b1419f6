"""Table formats written by Lakestream's own writers, read back by independent
readers: pyarrow and DuckDB (Parquet), fastavro (Avro manifests), PyIceberg
(Iceberg v2 tables from a metadata file).

The C unit tests write the files when LS_TABLE_OUT names a directory:
tests/unit/test_parquet.c (raw Kafka table files, every codec/encoding),
tests/unit/test_avro.c and tests/unit/test_iceberg.c. Rows follow raw_row()
(mirrored from the C side), so every value is checked, not just counts.
"""

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
    """Row i of the generated raw table (tests/unit/test_parquet.c raw_row)."""
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


# ---- Avro object containers (fastavro) -------------------------------------

fastavro = pytest.importorskip("fastavro")


def avro_datum(i):
    """Datum i of tests/unit/test_avro.c avro_datum()."""
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
