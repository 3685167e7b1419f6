"""bench/perftools.py (make bench's perf-tools family): Kafka's own
ProducerPerformance, ConsumerPerformance (classic and KIP-848 groups) and
ShareConsumerPerformance (a share group) run against a real Lakestream broker,
plaintext, over a TLS listener from a throwaway CA and over SASL_SSL with a
SCRAM-SHA-512 user made by `lakestream users add`, and every case lands in the
report with the records the tool was asked for. Kafka peer left out (its start costs
a minute here); bench.py runs it the same way."""
import glob
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, ".cache", "java", "tools")


@pytest.mark.heavy
@pytest.mark.timeout(600)
@pytest.mark.skipif(not glob.glob(os.path.join(TOOLS, "kafka-tools-*.jar")),
                    reason="Kafka tools jars not installed")
def test_perf_tools_family_reports_every_case(tmp_path):
    out = tmp_path / "results"
    env = dict(os.environ, BENCH_PERF_RECORDS="3000", BENCH_PERF_SMALL_RECORDS="5000")
    env.setdefault("BENCH_LAKESTREAM_BIN", os.path.join(ROOT, "build", "lakestream"))
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "bench.py"),
                        "--scenarios", "perf-tools,perf-tools-tls,perf-tools-sasl,perf-tools-groups",
                        "--targets", "lakestream",
                        "-n", "1", "--tag", "t", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=540)
    assert p.returncode == 0, p.stderr[-2000:]
    [report] = glob.glob(str(out / "*-perf-tools.json"))
    rep = json.load(open(report))
    assert rep["failed_runs"] == []
    want = {"produce-default-100B": 5000, "produce-tuned-100B": 5000, "consume-100B": 5000,
            "produce-default-1024B": 3000, "produce-tuned-1024B": 3000, "consume-1024B": 3000,
            "produce-default-1024B-tls": 3000, "produce-tuned-1024B-tls": 3000,
            "consume-1024B-tls": 3000, "produce-default-1024B-sasl_ssl": 3000,
            "produce-tuned-1024B-sasl_ssl": 3000, "consume-1024B-sasl_ssl": 3000,
            "consume-848-100B": 5000, "share-consume-100B": 5000,
            "consume-848-1024B": 3000, "share-consume-1024B": 3000}
    assert set(rep["cases"]) == set(want)
    for name, n in want.items():
        [run] = rep["cases"][name]["targets"]["lakestream"]["runs"]
        assert run["records"] == n, name
        assert run["mb_per_s"] > 0 and run["records_per_s"] > 0, name
    for name in ("produce-default-1024B-tls", "consume-1024B-sasl_ssl"):
        assert rep["cases"][name]["targets"]["lakestream"]["secure_over_plaintext"] > 0
    summary = open(glob.glob(str(out / "*-summary.md"))[0]).read()
    assert "| produce-default-1024B-tls | 3,000 |" in summary
