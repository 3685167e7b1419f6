#!/usr/bin/env bash
# Files stay reviewable: no source file under src/ longer than 1 500 lines,
# generated code (src/kafka/msg_gen.*) excepted. A file past it is cut along
# its seams (docs/STYLE.md). Prints one PASS or FAIL line and, on failure,
# each file with its length.
#
#   tools/lint/check-file-size.sh [SRC_DIR]
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=${1:-$ROOT/src}
MAX=1500
out=$(cd "$SRC" && find . -name '*.[ch]' ! -name 'msg_gen.*' -print0 | xargs -0 wc -l |
    awk -v max=$MAX '$2 != "total" && $1 > max { sub(/^\.\//, "", $2); print "  " $2 ": " $1 " lines" }')
if [ -z "$out" ]; then
    echo "PASS lint.file_size"
    exit 0
fi
printf '%s\n' "$out"
echo "FAIL lint.file_size: a source file over $MAX lines; cut it along its seams"
exit 1
