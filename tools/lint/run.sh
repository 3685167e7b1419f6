#!/usr/bin/env bash
# The lint stage of `make test`: the layer check on src/, and the same check
# on a copy of src/ with a deliberately wrong include (log/ including kafka/),
# which must fail. One PASS/FAIL line each.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"$ROOT/tools/lint/check-layers.sh"
rc=$?

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ls-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp -r "$ROOT/src" "$tmp/src"
printf '#include "kafka/api.h"\n' >>"$tmp/src/log/logstore.c"
if out=$("$ROOT/tools/lint/check-layers.sh" "$tmp/src" 2>&1); then
    echo "FAIL lint.layers_catches_wrong_include: log/ including kafka/ passed the check"
    rc=1
elif grep -q 'log/logstore.c:[0-9]*: log includes kafka' <<<"$out"; then
    echo "PASS lint.layers_catches_wrong_include"
else
    printf '%s\n' "$out"
    echo "FAIL lint.layers_catches_wrong_include: failed without naming log/logstore.c"
    rc=1
fi
exit $rc
