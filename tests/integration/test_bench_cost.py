"""bench/cost.py (make bench's cost scenario): the requests a real Lakestream broker
makes while a table-enabled topic is produced, compacted and read back, turned into
dollars with bench/prices.json. Checks that the calls were counted from the broker's
own metrics, that the table was complete before the ingest phase closed, and that the
monthly arithmetic follows the stated model."""
import glob
import json
import os
import subprocess
import sys

import pytest

from test_bench_perftools import ROOT, TOOLS


@pytest.mark.heavy
@pytest.mark.timeout(600)
@pytest.mark.skipif(not glob.glob(os.path.join(TOOLS, "kafka-tools-*.jar")),
                    reason="Kafka tools jars not installed")
def test_cost_report_from_measured_requests(tmp_path):
    out = tmp_path / "results"
    env = dict(os.environ)
    env.setdefault("BENCH_LAKESTREAM_BIN", os.path.join(ROOT, "build", "lakestream"))
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "bench.py"),
                        "--scenarios", "cost", "--targets", "lakestream", "-n", "1",
                        "--cost-records", "20000", "--cost-rate", "5000",
                        "--cost-mb-s", "100", "--cost-retention-days", "7",
                        "--tag", "t", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=540)
    assert p.returncode == 0, p.stderr[-2000:]
    [report] = glob.glob(str(out / "*-cost.json"))
    rep = json.load(open(report))
    m = rep["measured"]
    assert m["records"] == 20000 and m["produce"]["records"] == 20000
    assert m["consume"]["records"] >= 20000
    # WAL objects were PUT and compaction read them back, counted by the broker
    assert m["ingest_object_calls"].get("put", 0) > 0
    assert m["ingest_object_calls"].get("get", 0) > 0
    assert sum(m["ingest_metadata_ops"].values()) > 0
    assert m["stored_bytes_after_ingest"] > m["gb"] * 1e9 * 0.5  # the log and the table

    prices = json.load(open(os.path.join(ROOT, "bench", "prices.json")))
    [row] = rep["monthly"].values()
    gb_month = 100 * 30 * 86400 / 1e3
    kafka = row["Kafka, 3 AZ, RF=3, gp3"]
    assert kafka["inter_az"] == pytest.approx(gb_month * (2 / 3 + 2 + 2 / 3) *
                                              prices["inter_az_per_gb"])
    assert kafka["storage"] == pytest.approx(3 * 100 * 86400 * 7 / 1e3 / 0.5 *
                                             prices["ebs_gp3_gb_month"])
    std = row["Lakestream, S3 Standard"]
    puts = sum(v for k, v in m["ingest_object_calls"].items() if k in ("put", "list", "copy"))
    assert std["requests"] >= puts / m["gb"] * gb_month * 0.005 / 1000
    assert std["inter_az"] == 0
    for v in row.values():
        assert v["total"] == pytest.approx(v["requests"] + v["transfer"] + v["inter_az"] +
                                           v["storage"])
    summary = open(glob.glob(str(out / "*-summary.md"))[0]).read()
    assert "## Cost from measured requests" in summary and "| 100 | 7 d | Kafka" in summary
