#!/usr/bin/env bash
# One source for the metadata keyspace: every "/ls/..." key prefix is a
# macro of src/meta/meta_keys.h (docs/FORMATS.md "Metadata keyspace"). A
# "/ls/ string literal anywhere else in src/ fails the check (comments
# excepted). Prints one PASS or FAIL line and, on failure, each file:line.
#
#   tools/lint/check-meta-keys.sh [SRC_DIR]
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=${1:-$ROOT/src}
out=$(cd "$SRC" && grep -rn --include='*.[ch]' '"/ls/' . |
    grep -v '^\./meta/meta_keys\.h:' |
    grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/\*|\*|//)' | sed 's|^\./||')
if [ -z "$out" ]; then
    echo "PASS lint.meta_keys_one_source"
    exit 0
fi
printf '%s\n' "$out" | sed 's/^/  /'
echo "FAIL lint.meta_keys_one_source: a metadata key literal outside src/meta/meta_keys.h; add a LS_KEY_ macro there"
exit 1
