"""Our Parquet reader (src/table/parquet_reader.c) on files pyarrow wrote:
every type (flat, lists, maps, structs, nulls), dictionary on and off, data
pages v1 and v2, every codec we read, page CRCs, several row groups and
pages. The C side (tests/unit/table/test_parquet_reader.c with LS_PQR_DUMP) dumps
each file as JSON lines; here the expected Dremel triples are derived from
the rows pyarrow was given and compared value by value, with the schema
(levels, field ids) and the chunk statistics pyarrow reports. Files using
what we refuse (LZ4/BROTLI codecs, DELTA/BYTE_STREAM_SPLIT encodings) must
fail with an error naming it."""

import decimal
import json
import os
import struct
import subprocess

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN_DIR = os.path.join(os.path.dirname(os.environ.get("LAKESTREAM_BIN") or
                                       os.path.join(ROOT, "build", "lakestream")), "tests")
ROWS = 3000
RG_ROWS = 1100


def field(name, typ, fid, nullable=True):
    return pa.field(name, typ, nullable=nullable,
                    metadata={b"PARQUET:field_id": str(fid).encode()})


SCHEMA = pa.schema([
    field("b", pa.bool_(), 1),
    field("i8", pa.int8(), 2),
    field("i32", pa.int32(), 3),
    field("i64", pa.int64(), 4, nullable=False),
    field("f", pa.float32(), 5),
    field("d", pa.float64(), 6),
    field("s", pa.string(), 7),
    field("bin", pa.binary(), 8),
    field("day", pa.date32(), 9),
    field("ts", pa.timestamp("us", tz="UTC"), 10),
    field("fx", pa.binary(3), 17),
    field("dec", pa.decimal128(9, 2), 18),
    field("l", pa.list_(field("element", pa.int64(), 12)), 11),
    field("m", pa.map_(pa.string(), pa.int32()), 13),
    field("st", pa.struct([field("a", pa.int32(), 15),
                           field("t", pa.string(), 16, nullable=False)]), 14),
])


def row(i):
    return {
        "b": None if i % 7 == 0 else i % 3 == 0,
        "i8": None if i % 9 == 4 else (i % 256) - 128,
        "i32": None if i % 5 == 0 else i * 7919 - 2**30,
        "i64": i * 1000003 - 2**40,
        "f": None if i % 11 == 3 else (float("nan") if i == 17 else i * 0.25),
        "d": None if i % 13 == 1 else (float("-inf") if i == 19 else i * 1.5e100),
        "s": None if i % 4 == 1 else ("" if i % 9 == 0 else "s%d-é" % (i % 50)),
        "bin": None if i % 10 == 7 else bytes((i + k) % 256 for k in range(i % 23)),
        "day": None if i % 6 == 2 else 19000 + i,
        "ts": None if i % 8 == 5 else 1700000000000000 + i * 1000,
        "fx": None if i % 10 == 3 else bytes([i % 256, 0, (i * 7) % 256]),
        "dec": None if i % 12 == 5 else decimal.Decimal(i * 12345 - 10**7).scaleb(-2),
        "l": None if i % 6 == 0 else [None if (i + j) % 5 == 0 else i * 10 + j
                                      for j in range(i % 4)],
        "m": None if i % 5 == 0 else [("k%d" % j, None if j == 1 else i + j)
                                      for j in range(i % 3)],
        "st": None if i % 7 == 3 else {"a": None if i % 2 else i, "t": "t%d" % (i % 3)},
    }


def table():
    rows = [row(i) for i in range(ROWS)]
    cols = {f.name: pa.array([r[f.name] for r in rows], type=f.type) for f in SCHEMA}
    return pa.Table.from_pydict(cols, schema=SCHEMA), rows


# ---- Dremel shredding of the source rows (the expectation) ----------------

def leaves(t):
    if pa.types.is_struct(t):
        return sum((leaves(t.field(k).type) for k in range(t.num_fields)), [])
    if pa.types.is_map(t):
        return leaves(t.key_type) + leaves(t.item_type)
    if pa.types.is_list(t):
        return leaves(t.value_type)
    return [t]


def shred(v, typ, nullable, r, d, rl, out):
    """Appends (rep, def, value) per leaf of typ to out (a list of lists, one
    per leaf, in order). r: level to emit for the first leaf entry, d: the
    definition level so far, rl: the repetition depth so far."""
    def nulls(r, d):
        for k in range(len(leaves(typ))):
            out[k].append((r, d, None))
    if nullable:
        if v is None:
            nulls(r, d)
            return
        d += 1
    if pa.types.is_struct(typ):
        at = 0
        for k in range(typ.num_fields):
            f = typ.field(k)
            n = len(leaves(f.type))
            shred(v[f.name], f.type, f.nullable, r, d, rl, out[at:at + n])
            at += n
    elif pa.types.is_list(typ) or pa.types.is_map(typ):
        if not v:
            nulls(r, d)
            return
        for j, e in enumerate(v):
            rr = r if j == 0 else rl + 1
            if pa.types.is_map(typ):
                nk = len(leaves(typ.key_type))
                shred(e[0], typ.key_type, False, rr, d + 1, rl + 1, out[:nk])
                shred(e[1], typ.item_type, typ.item_field.nullable, rr, d + 1, rl + 1, out[nk:])
            else:
                shred(e, typ.value_type, typ.value_field.nullable, rr, d + 1, rl + 1, out)
    else:
        out[0].append((r, d, v))


def encode(v, typ):
    """A leaf value as the C dump prints it."""
    if pa.types.is_boolean(typ):
        return int(v)
    if pa.types.is_float32(typ):
        return struct.pack("<f", v).hex()
    if pa.types.is_float64(typ):
        return struct.pack("<d", v).hex()
    if pa.types.is_string(typ):
        return v.encode().hex()
    if pa.types.is_binary(typ) or pa.types.is_fixed_size_binary(typ):
        return v.hex()
    if pa.types.is_decimal(typ):  # FIXED_LEN_BYTE_ARRAY, big-endian two's complement
        return int(v.scaleb(typ.scale)).to_bytes(4, "big", signed=True).hex()
    return v  # ints, dates (days), timestamps (micros)


def expected_chunks(rows, lo, hi):
    cols = []
    for f in SCHEMA:
        ls = leaves(f.type)
        out = [[] for _ in ls]
        for rw in rows[lo:hi]:
            shred(rw[f.name], f.type, f.nullable, 0, 0, 0, out)
        for t, entries in zip(ls, out):
            cols.append([[r, d, None if v is None else encode(v, t)] for r, d, v in entries])
    return cols


def stat_hex(v, phys):
    if isinstance(v, bool):
        return "01" if v else "00"
    if phys == "INT32":
        return struct.pack("<i", v).hex()
    if phys == "INT64":
        return struct.pack("<q", v).hex()
    if phys == "FLOAT":
        return struct.pack("<f", v).hex()
    if phys == "DOUBLE":
        return struct.pack("<d", v).hex()
    if isinstance(v, str):
        return v.encode().hex()
    return bytes(v).hex()


VARIANTS = [(codec, dictionary, version)
            for codec in ("none", "snappy", "gzip", "zstd")
            for dictionary in (True, False)
            for version in ("1.0", "2.0")]

REFUSED = {
    "codec_lz4": (dict(compression="lz4"), "LZ4_RAW"),
    "codec_brotli": (dict(compression="brotli"), "BROTLI"),
    "enc_delta": (dict(use_dictionary=False, column_encoding={"i64": "DELTA_BINARY_PACKED"}),
                  "DELTA_BINARY_PACKED"),
    "enc_delta_length": (dict(use_dictionary=False,
                              column_encoding={"bin": "DELTA_LENGTH_BYTE_ARRAY"}),
                         "DELTA_LENGTH_BYTE_ARRAY"),
    "enc_byte_stream_split": (dict(use_dictionary=False, column_encoding={"d": "BYTE_STREAM_SPLIT"}),
                              "BYTE_STREAM_SPLIT"),
}


@pytest.fixture(scope="module")
def dumped(tmp_path_factory):
    d = tmp_path_factory.mktemp("pqr")
    t, rows = table()
    for codec, dictionary, version in VARIANTS:
        pq.write_table(t, str(d / ("%s_%s_v%s.parquet" % (codec, "dict" if dictionary else
                                                          "plain", version))),
                       compression=codec, use_dictionary=dictionary, data_page_version=version,
                       row_group_size=RG_ROWS, data_page_size=2048,
                       write_page_checksum=(codec == "zstd"))
    for name, (kw, _) in REFUSED.items():
        pq.write_table(t, str(d / (name + ".parquet")), **kw)
    path = os.path.join(BIN_DIR, "test_parquet_reader")
    if not os.access(path, os.X_OK):
        pytest.fail("%s not built (make all)" % path)
    res = subprocess.run([path], env=dict(os.environ, LS_PQR_DUMP=str(d)),
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return d, rows


def load(d, name):
    with open(d / (name + ".parquet.jsonl")) as f:
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("codec,dictionary,version", VARIANTS)
def test_pyarrow_files_read_value_by_value(dumped, codec, dictionary, version):
    d, rows = dumped
    name = "%s_%s_v%s" % (codec, "dict" if dictionary else "plain", version)
    lines = load(d, name)
    head, chunks = lines[0], lines[1:]
    assert "error" not in head, head
    assert head["rows"] == ROWS
    md = pq.ParquetFile(str(d / (name + ".parquet"))).metadata
    pschema = md.schema
    cols = [e for e in head["schema"] if e["column"] >= 0]
    ncols = md.num_columns
    assert len(cols) == len(pschema) == ncols == 17
    for i, e in enumerate(cols):
        c = pschema.column(i)
        assert e["path"] == c.path
        assert e["max_def"] == c.max_definition_level
        assert e["max_rep"] == c.max_repetition_level
    ids = {e["path"]: e["field_id"] for e in head["schema"]}
    assert ids["st"] == 14 and ids["st.a"] == 15 and ids["l.list.element"] == 12
    assert ids["ts"] == 10 and ids["i64"] == 4
    assert len(chunks) == md.num_row_groups * ncols
    lo = 0
    for g in range(md.num_row_groups):
        n = md.row_group(g).num_rows
        want = expected_chunks(rows, lo, lo + n)
        for c in range(ncols):
            got = chunks[g * ncols + c]
            assert got["rg"] == g and got["col"] == c and got["rg_rows"] == n
            assert "error" not in got, got
            col = pschema.column(c).path
            assert len(got["t"]) == len(want[c]), (col, g)
            for k, (a, b) in enumerate(zip(got["t"], want[c])):
                if a != b and col == "f" and b[2] == struct.pack("<f", float("nan")).hex():
                    continue  # NaN bit patterns may differ
                assert a == b, (col, g, k)
            st = md.row_group(g).column(c).statistics
            if st is not None and st.has_null_count:
                assert got["null_count"] == st.null_count, (col, g)
            if st is not None and st.has_min_max:
                phys = pschema.column(c).physical_type
                assert got["min"] == stat_hex(st.min_raw, phys), (col, g)
                assert got["max"] == stat_hex(st.max_raw, phys), (col, g)
        lo += n
    assert lo == ROWS and md.num_row_groups == 3


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_unsupported_features_are_refused_by_name(dumped, name):
    d, _ = dumped
    lines = load(d, name)
    errors = [ln for ln in lines if "error" in ln]
    assert errors, "file %s read without an error" % name
    for ln in errors:
        assert ln["status"] == "invalid argument", ln
        assert REFUSED[name][1] in ln["error"] and "not supported" in ln["error"], ln
    # the refusal is per chunk: the columns not using it still read
    if name.startswith("enc_"):
        assert any("t" in ln and "error" not in ln for ln in lines[1:])


def test_int96_timestamps_read_as_bytes(tmp_path):
    """Legacy INT96 timestamps come back as their 12 stored bytes
    (nanoseconds of the day, then the Julian day, little-endian)."""
    ns = [None if i % 4 == 1 else 1700000000123456789 + i * 86_400_000_000_007 for i in range(50)]
    t = pa.table({"ts": pa.array(ns, pa.timestamp("ns"))})
    pq.write_table(t, str(tmp_path / "int96.parquet"), use_deprecated_int96_timestamps=True,
                   use_dictionary=False)
    assert pq.ParquetFile(str(tmp_path / "int96.parquet")).schema.column(0).physical_type == "INT96"
    res = subprocess.run([os.path.join(BIN_DIR, "test_parquet_reader")],
                         env=dict(os.environ, LS_PQR_DUMP=str(tmp_path)),
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = load(tmp_path, "int96")
    assert lines[0]["schema"][1]["type"] == 3
    want = []
    for v in ns:
        if v is None:
            want.append([0, 0, None])
        else:
            day, nod = divmod(v, 86_400_000_000_000)
            want.append([0, 1, struct.pack("<qI", nod, day + 2440588).hex()])
    assert lines[1]["t"] == want
