#!/usr/bin/env bash
# Layer check: every `#include "dir/..."` in src/ must be allowed by
# tools/lint/layers.txt. Prints one PASS or FAIL line (tests/run.sh counts it)
# and, on failure, each offending file:line.
#
#   tools/lint/check-layers.sh [SRC_DIR [TABLE]]
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC=${1:-$ROOT/src}
TABLE=${2:-$ROOT/tools/lint/layers.txt}

awk -v src="$SRC" '
    FNR == NR {
        sub(/#.*/, "")
        if ($1 == "exception:") { exc[$2 " " $4] = 0; next }
        if ($1 ~ /:$/) {
            m = substr($1, 1, length($1) - 1); known[m] = 1
            for (i = 2; i <= NF; i++) allow[m " " $i] = 1
        }
        next
    }
    match($0, /^[ \t]*#[ \t]*include[ \t]+"[a-z_]+\//) {
        inc = substr($0, RSTART, RLENGTH); sub(/.*"/, "", inc); sub(/\/$/, "", inc)
        f = FILENAME; rel = substr(f, length(src) + 2)
        mod = (rel ~ /\//) ? rel : "main.c"; sub(/\/.*/, "", mod); sub(/\.c$/, "", mod)
        if (!(mod in known)) { printf "  %s: module %s is not in the layer table\n", rel, mod; bad++; next }
        if (inc == mod || (mod " " inc) in allow) next
        if ((mod " " inc) in exc) { exc[mod " " inc]++; next }
        printf "  %s:%d: %s includes %s (not allowed by tools/lint/layers.txt)\n", rel, FNR, mod, inc
        bad++
    }
    END {
        for (e in exc) if (exc[e] == 0) {
            split(e, p, " ")
            printf "  exception %s -> %s is no longer needed: remove it from the table\n", p[1], p[2]
            bad++
        }
        exit bad > 0
    }
' "$TABLE" $(find "$SRC" -name '*.[ch]' | sort)
rc=$?
if [ $rc = 0 ]; then echo "PASS lint.layers"; else echo "FAIL lint.layers: includes against the layer table (above)"; fi
exit $rc
