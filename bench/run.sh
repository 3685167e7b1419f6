#!/usr/bin/env bash
# `make bench`: build lakestream and the load driver, then run the scenarios side by
# side with Apache Kafka (bench/bench.py; arguments pass through, e.g.
# `make bench BENCH_ARGS="-n 5 --scenarios produce-latency"`).
# bench/setup.sh installs the Kafka jars and gnuplot once; here it only checks.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
bench/setup.sh
# BENCH_BUILD: the build directory to build and measure (default build/; `make bench
# BUILD=build-x` passes its BUILD), so people sharing the tree can keep their own.
BENCH_BUILD="${BENCH_BUILD:-build}"
case "$BENCH_BUILD" in /*) BUILD_DIR="$BENCH_BUILD" ;; *) BUILD_DIR="$ROOT/$BENCH_BUILD" ;; esac
# The tree is shared with people editing src/: retry a broken build a few times.
for i in 1 2 3; do
    make -s all BUILD="$BENCH_BUILD" && break
    [ "$i" = 3 ] && { echo "bench: lakestream does not build" >&2; exit 1; }
    echo "bench: build failed, retrying in 30 s" >&2
    sleep 30
done
make -s -C bench/driver OUT="$BUILD_DIR/bench"
export BENCH_LAKESTREAM_BIN="$BUILD_DIR/lakestream" BENCH_LSBENCH_BIN="$BUILD_DIR/bench/lsbench"
# Recorded in the results as "the exact command".
if [ -z "${BENCH_COMMAND:-}" ]; then
    if [ -n "${MAKELEVEL:-}" ]; then
        build_arg=""
        if [ "$BENCH_BUILD" != build ]; then build_arg=" BUILD=$BENCH_BUILD"; fi
        BENCH_COMMAND="make bench$build_arg${*:+ BENCH_ARGS=\"$*\"}"
    else
        BENCH_COMMAND="bench/run.sh $*"
    fi
fi
export BENCH_COMMAND
# .venv (tools/install-deps.sh test + bench/requirements.txt, see bench/setup.sh):
# DuckDB, PyIceberg and confluent-kafka for scenarios 6-8.
exec "$ROOT/.venv/bin/python" bench/bench.py "$@"
