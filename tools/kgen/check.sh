#!/usr/bin/env bash
# The codegen stage of `make test`: the committed Kafka codecs
# (src/kafka/msg_gen.{h,c}) must be byte for byte what tools/kgen makes of
# src/kafka/messages/, and the check must catch a description changed without
# regenerating (shown on a copy). One PASS/FAIL line each.
#
#   tools/kgen/check.sh BUILD_DIR        (BUILD_DIR/tools/kgen is the generator)
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KGEN="${1:-build}/tools/kgen"
case "$KGEN" in /*) ;; *) KGEN="$ROOT/$KGEN" ;; esac
cd "$ROOT" || exit 1
if [ ! -x "$KGEN" ]; then
    echo "FAIL codegen.up_to_date: $KGEN missing (run make)"
    exit 1
fi
rc=0
if out=$("$KGEN" --check src/kafka/messages src/kafka/msg_gen.h src/kafka/msg_gen.c 2>&1); then
    echo "PASS codegen.up_to_date"
else
    printf '%s\n' "$out"
    echo "FAIL codegen.up_to_date: run \`make gen\` and commit src/kafka/msg_gen.{h,c}"
    rc=1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ls-kgen.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp -r src/kafka/messages "$tmp/messages"
printf '  ExtraField int32 v99+\n' >>"$tmp/messages/Heartbeat.msg"
if "$KGEN" --check "$tmp/messages" src/kafka/msg_gen.h src/kafka/msg_gen.c >"$tmp/out" 2>&1; then
    echo "FAIL codegen.catches_stale_output: a changed description passed the check"
    rc=1
elif grep -q 'msg_gen.h is not what' "$tmp/out"; then
    echo "PASS codegen.catches_stale_output"
else
    cat "$tmp/out"
    echo "FAIL codegen.catches_stale_output: failed without naming msg_gen.h"
    rc=1
fi
exit $rc
