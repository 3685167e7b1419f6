"""`lakestream check` (server/check.c): the stores' connectivity report, and
with --latency their PUT and metadata-write latency. Runs against the object
store under test (the file store, or radosgw in the S3 stage)."""

import os
import re
import subprocess

import lsbroker

BIN = lsbroker.binary_path()
ENV = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}


def _check(tmp_path, *args):
    store = lsbroker.object_store_args("check")[:1]  # the S3 URL, when the stage has one
    return subprocess.run([BIN, "check", "--data.dir=%s" % (tmp_path / "data"), *store, *args],
                          capture_output=True, text=True, timeout=300, env=ENV)


def _leftovers(tmp_path):
    objects = tmp_path / "data" / "objects"
    return [os.path.join(d, f) for d, _, fs in os.walk(objects) for f in fs
            if "_lakestream" in d] if objects.exists() else []


def test_check_passes_every_step_and_leaves_nothing(tmp_path):
    r = _check(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    for step in ("put (create-only) probe object", "put (create-only) again: must be refused",
                 "get whole object", "get byte range", "head", "list", "delete",
                 "head after delete: must be gone", "write probe key", "delete probe key"):
        assert re.search(r"^  ok   %s" % re.escape(step), r.stdout, re.M), (step, r.stdout)
    assert r.stdout.rstrip().endswith("check passed")
    assert "latency" not in r.stdout
    assert _leftovers(tmp_path) == []


def test_latency_times_puts_of_the_size_asked_and_metadata_writes(tmp_path):
    r = _check(tmp_path, "--latency=7", "--latency-size=64KiB")
    assert r.returncode == 0, r.stdout + r.stderr
    put = re.search(r"^  ok   put latency, 7 x 65536 bytes\s+p50 ([0-9.]+) ms  p99 ([0-9.]+) ms  "
                    r"max ([0-9.]+) ms$", r.stdout, re.M)
    meta = re.search(r"^  ok   metadata write latency, 7 writes\s+p50 ([0-9.]+) ms  "
                     r"p99 ([0-9.]+) ms  max ([0-9.]+) ms$", r.stdout, re.M)
    assert put and meta, r.stdout
    for m in (put, meta):
        p50, p99, mx = (float(x) for x in m.groups())
        assert 0 < p50 <= p99 <= mx, m.group(0)
    assert r.stdout.rstrip().endswith("check passed")
    assert _leftovers(tmp_path) == []  # every timed object deleted


def test_latency_arguments_out_of_range_are_refused_by_name(tmp_path):
    for arg, want in (("--latency=0", "--latency=0: want a count of 1..100000"),
                      ("--latency=x", "--latency=x: want a count of 1..100000"),
                      ("--latency-size=2GiB", "--latency-size=2GiB: want a size up to 1GiB"),
                      ("--latency-size=10mb", "--latency-size=10mb: want a size up to 1GiB")):
        r = _check(tmp_path, arg)
        assert r.returncode == 2, (arg, r.stdout, r.stderr)
        assert want in r.stderr, (arg, r.stderr)
        assert r.stdout == "", (arg, r.stdout)
