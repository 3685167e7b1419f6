#!/usr/bin/env bash
# `make bench`: build lakestream and the load driver, then run the scenarios side by
# side with Apache Kafka (bench/bench.py; arguments pass through, e.g.
# `make bench BENCH_ARGS="-n 5 --scenarios produce-latency"`).
# bench/setup.sh installs the Kafka jars and gnuplot once; here it only checks.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
bench/setup.sh
make -s all
make -s -C bench/driver
exec python3 bench/bench.py "$@"
