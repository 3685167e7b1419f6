#!/usr/bin/env bash
# The codegen stage of `make test`: the committed Kafka codecs
# (src/kafka/msg_gen.{h,c}) and dispatch rows (src/kafka/api_gen.h) must be
# byte for byte what tools/kgen makes of src/kafka/messages/, and the check
# must catch a description changed without regenerating (shown on a copy).
# One PASS/FAIL line each.
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
OUT=(src/kafka/msg_gen.h src/kafka/msg_gen.c src/kafka/api_gen.h)
rc=0
if out=$("$KGEN" --check src/kafka/messages "${OUT[@]}" 2>&1); then
    echo "PASS codegen.up_to_date"
else
    printf '%s\n' "$out"
    echo "FAIL codegen.up_to_date: run \`make gen\` and commit src/kafka/msg_gen.{h,c} and api_gen.h"
    rc=1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ls-kgen.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp -r src/kafka/messages "$tmp/messages"
printf '  ExtraField int32 v99+\n' >>"$tmp/messages/Heartbeat.msg"
if "$KGEN" --check "$tmp/messages" "${OUT[@]}" >"$tmp/out" 2>&1; then
    echo "FAIL codegen.catches_stale_output: a changed description passed the check"
    rc=1
elif grep -q 'msg_gen.h is not what' "$tmp/out"; then
    echo "PASS codegen.catches_stale_output"
else
    cat "$tmp/out"
    echo "FAIL codegen.catches_stale_output: failed without naming msg_gen.h"
    rc=1
fi
# A served api's handler changed (or made serial) without regenerating: only
# the dispatch rows differ.
cp -r src/kafka/messages "$tmp/served"
sed -i 's/^handler ls_kafka_handle_heartbeat.*/handler ls_kafka_handle_heartbeat serial/' \
    "$tmp/served/Heartbeat.msg"
if "$KGEN" --check "$tmp/served" "${OUT[@]}" >"$tmp/out" 2>&1; then
    echo "FAIL codegen.catches_stale_dispatch: a changed handler line passed the check"
    rc=1
elif grep -q 'api_gen.h is not what' "$tmp/out"; then
    echo "PASS codegen.catches_stale_dispatch"
else
    cat "$tmp/out"
    echo "FAIL codegen.catches_stale_dispatch: failed without naming api_gen.h"
    rc=1
fi

# Mistakes in a description are refused with the file, line and what is wrong.
bad() { # NAME LINE EXPECTED
    rm -rf "$tmp/bad" && cp -r src/kafka/messages "$tmp/bad"
    printf '%s\n' "$2" >>"$tmp/bad/Heartbeat.msg"
    if "$KGEN" "$tmp/bad" "$tmp/h" "$tmp/c" "$tmp/a" >"$tmp/out" 2>&1; then
        echo "FAIL codegen.refuses_$1: accepted '$2'"
        rc=1
    elif grep -q "Heartbeat.msg:[0-9]*: .*$3" "$tmp/out"; then
        echo "PASS codegen.refuses_$1"
    else
        cat "$tmp/out"
        echo "FAIL codegen.refuses_$1: no line naming Heartbeat.msg and '$3'"
        rc=1
    fi
}
bad unknown_type '  Extra int33' "unknown type 'int33'"
bad bad_versions '  Extra int32 v7-3' "bad version range"
bad nullable_int '  Extra int32 nullable' "only strings, bytes, records, structs and arrays can be nullable"
bad odd_indent '   Extra int32' "indent with an even number of spaces"
bad duplicate_field '  ErrorCode int16' "field ErrorCode twice"
# How an api is served (tools/kgen/serve.c): one handler, one row, rows 0..N-1.
bad handler_twice 'handler ls_kafka_handle_other' "handler twice"
bad handler_name 'handler heartbeat' "handler 'heartbeat' is not a C name starting ls_kafka_handle_"
bad row_twice 'row 3' "row twice"
served_bad() { # NAME SED EXPECTED: Heartbeat.msg edited by SED is refused
    rm -rf "$tmp/bad" && cp -r src/kafka/messages "$tmp/bad"
    sed -i "$2" "$tmp/bad/Heartbeat.msg"
    if "$KGEN" "$tmp/bad" "$tmp/h" "$tmp/c" "$tmp/a" >"$tmp/out" 2>&1; then
        echo "FAIL codegen.refuses_$1: accepted Heartbeat.msg edited by '$2'"
        rc=1
    elif grep -q "Heartbeat.msg:[0-9]*: .*$3" "$tmp/out"; then
        echo "PASS codegen.refuses_$1"
    else
        cat "$tmp/out"
        echo "FAIL codegen.refuses_$1: no line naming Heartbeat.msg and '$3'"
        rc=1
    fi
}
served_bad row_missing '/^row /d' "a served api needs its 'row N'"
served_bad row_without_handler '/^handler /d' "'row' without a 'handler' line"
served_bad row_taken 's/^row .*/row 6/' "row 6 twice (also FindCoordinator.msg)"
served_bad row_past_last 's/^row .*/row 64/' "row 64 past the last"
# errors.txt: codes in increasing order, each once, retriable yes or no.
bad_err() { # NAME LINE EXPECTED
    rm -rf "$tmp/bad" && cp -r src/kafka/messages "$tmp/bad"
    printf '%s\n' "$2" >>"$tmp/bad/errors.txt"
    if "$KGEN" "$tmp/bad" "$tmp/h" "$tmp/c" "$tmp/a" >"$tmp/out" 2>&1; then
        echo "FAIL codegen.refuses_$1: accepted '$2'"
        rc=1
    elif grep -q "errors.txt:[0-9]*: .*$3" "$tmp/out"; then
        echo "PASS codegen.refuses_$1"
    else
        cat "$tmp/out"
        echo "FAIL codegen.refuses_$1: no line naming errors.txt and '$3'"
        rc=1
    fi
}
bad_err error_code_twice '3 UNKNOWN_TOPIC_OR_PARTITION yes' "error code 3 not above"
bad_err error_retriable_word '9000 SOME_NEW_ERROR maybe' "retriable must be yes or no"
exit $rc
