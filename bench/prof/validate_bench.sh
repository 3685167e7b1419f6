#!/bin/sh
# Builds bench/prof/validate_bench.c against BUILD_DIR's liblakestream.a (default
# build; the headers of the checkout BUILD_DIR belongs to) and runs it 3 times.
#   bench/prof/validate_bench.sh [BUILD_DIR] [ITERATIONS]
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${1:-$ROOT/build}
SRC=$(cd "$B/.." && pwd)/src
OUT=$(mktemp /tmp/validate_bench-XXXXXX)
trap 'rm -f "$OUT"' EXIT
cc -std=c11 -D_GNU_SOURCE -O2 -I"$SRC" "$ROOT/bench/prof/validate_bench.c" "$B/liblakestream.a" \
    -lzstd -llz4 -lz -lsnappy -lpthread -lm -o "$OUT"
for _ in 1 2 3; do "$OUT" "${2:-20000}"; done
