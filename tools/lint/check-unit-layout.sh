#!/usr/bin/env bash
# tests/unit mirrors src/ (docs/STYLE.md "Tests"): every folder under
# tests/unit/ names a folder of src/, test file names are unique across
# folders (the binaries are flat: build/tests/test_<x>), and every Kafka
# handler file src/kafka/h_<x>.c has its tests/unit/kafka/test_h_<x>.c. Prints one PASS or
# FAIL line and, on failure, what is wrong.
#
#   tools/lint/check-unit-layout.sh [ROOT]
set -uo pipefail
ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
out=""
for d in "$ROOT"/tests/unit/*/; do
    name=$(basename "$d")
    [ -d "$ROOT/src/$name" ] || out+="  tests/unit/$name/: no src/$name/ folder"$'\n'
done
dups=$(cd "$ROOT/tests/unit" && find . -name 'test_*.c' | xargs -n1 basename | sort | uniq -d)
for f in $dups; do
    out+="  $f: in more than one folder ($(cd "$ROOT/tests/unit" && find . -name "$f" | sed 's|^\./||' | tr '\n' ' '))"$'\n'
done
for h in "$ROOT"/src/kafka/h_*.c; do
    b=$(basename "$h" .c)
    [ -f "$ROOT/tests/unit/kafka/test_$b.c" ] || out+="  src/kafka/$b.c: no tests/unit/kafka/test_$b.c"$'\n'
done
if [ -z "$out" ]; then
    echo "PASS lint.unit_layout"
    exit 0
fi
printf '%s' "$out"
echo "FAIL lint.unit_layout: tests/unit must mirror src/ with unique test names"
exit 1
