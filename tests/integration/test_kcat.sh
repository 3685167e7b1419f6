#!/usr/bin/env bash
# kcat (librdkafka 2.0.x from Debian) against a running broker at
# $LS_TEST_BOOTSTRAP (tests/run.sh starts one via lsbroker.py).
# Prints "PASS name" / "FAIL name: why" per test; exits 1 if any failed.
set -uo pipefail

B=${LS_TEST_BOOTSTRAP:?LS_TEST_BOOTSTRAP is not set}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILED=0
# kcat -P waits for delivery before exiting; -e makes -C exit at the end.

pass() { echo "PASS kcat.$1"; }
fail() {
    echo "FAIL kcat.$1: $2"
    FAILED=1
}
uniq_topic() { echo "$1-$RANDOM$RANDOM"; }

# run_test NAME FUNCTION [ARGS]: runs the (exported) FUNCTION under set -e with
# a 120 s ceiling; its output goes to a file shown on failure.
run_test() {
    local name=$1 out="$TMP/$1.out"
    shift
    if timeout 120 bash -c 'set -euo pipefail; "$@"' _ "$@" >"$out" 2>&1; then
        pass "$name"
    else
        fail "$name" "exit $?; output:
$(sed 's/^/    /' "$out" | tail -20)"
    fi
}

# README.md "Try it with kcat", verbatim apart from the address. Keep in sync.
readme_example() {
    kcat -b "$B" -L >"$TMP/readme-L.txt"
    printf 'k1:hello\nk2:world\n' | kcat -b "$B" -P -t demo -K: -z zstd
    kcat -b "$B" -C -t demo -p 0 -o beginning -e -f '%o %k %s\n' >"$TMP/readme-C.txt"
    printf '0 k1 hello\n1 k2 world\n' | diff - "$TMP/readme-C.txt"
}

metadata_lists_broker_and_topic() {
    local t
    t=$(uniq_topic kcat-md)
    echo x | kcat -P -b "$B" -t "$t"
    kcat -L -b "$B" >"$TMP/md.txt"
    grep -q "broker 0 at ${B}" "$TMP/md.txt" || grep -Eq "broker [0-9]+ at ${B}" "$TMP/md.txt" ||
        { cat "$TMP/md.txt"; echo "broker ${B} not listed"; exit 1; }
    grep -q "topic \"$t\" with 1 partitions" "$TMP/md.txt" || { cat "$TMP/md.txt"; exit 1; }
    kcat -L -b "$B" -J -t "$t" >"$TMP/md.json"
    grep -q "\"topic\":\"$t\"" "$TMP/md.json" || { cat "$TMP/md.json"; exit 1; }
}

keys_headers_codec() {
    local codec=$1 t
    t=$(uniq_topic "kcat-$codec")
    : >"$TMP/in-$codec.txt"
    for i in $(seq 1 200); do
        echo "key$((i % 9)):value $i $codec $(printf 'x%.0s' $(seq 1 $((i % 13))))" >>"$TMP/in-$codec.txt"
    done
    kcat -P -b "$B" -t "$t" -p 0 -K: -z "$codec" -H "codec=$codec" -H "h2=two" \
        -X linger.ms=20 <"$TMP/in-$codec.txt"
    kcat -C -b "$B" -t "$t" -p 0 -o beginning -e -q -f '%k:%s|%h\n' >"$TMP/out-$codec.txt"
    sed "s/\$/|codec=$codec,h2=two/" "$TMP/in-$codec.txt" >"$TMP/want-$codec.txt"
    diff "$TMP/want-$codec.txt" "$TMP/out-$codec.txt"
    # offsets dense from 0
    kcat -C -b "$B" -t "$t" -p 0 -o beginning -e -q -f '%o\n' >"$TMP/offs-$codec.txt"
    seq 0 199 | diff - "$TMP/offs-$codec.txt"
}

consume_from_offset_and_tail() {
    local t
    t=$(uniq_topic kcat-off)
    seq 0 99 | kcat -P -b "$B" -t "$t" -p 0
    got=$(kcat -C -b "$B" -t "$t" -p 0 -o 95 -e -q | tr '\n' ' ')
    [ "$got" = "95 96 97 98 99 " ] || { echo "from 95: '$got'"; exit 1; }
    got=$(kcat -C -b "$B" -t "$t" -p 0 -o -3 -e -q | tr '\n' ' ')
    [ "$got" = "97 98 99 " ] || { echo "last 3: '$got'"; exit 1; }
    # -Q: offset by timestamp (far future -> end of log, -1)
    kcat -Q -b "$B" -t "$t:0:9999999999999" >"$TMP/q.txt"
    grep -Eq "offset -1|offset 100" "$TMP/q.txt" || { cat "$TMP/q.txt"; exit 1; }
}

null_values() {
    local t
    t=$(uniq_topic kcat-null)
    # -Z: empty value is sent as NULL
    printf 'k1:\nk2:v2\n' | kcat -P -b "$B" -t "$t" -p 0 -K: -Z
    got=$(kcat -C -b "$B" -t "$t" -p 0 -o beginning -e -q -f '%k=%S\n' | tr '\n' ' ')
    [ "$got" = "k1=-1 k2=2 " ] || { echo "got '$got'"; exit 1; }
}

export B TMP
export -f uniq_topic readme_example metadata_lists_broker_and_topic keys_headers_codec \
    consume_from_offset_and_tail null_values

run_test readme_example readme_example
run_test metadata_lists_broker_and_topic metadata_lists_broker_and_topic
for c in none gzip snappy lz4 zstd; do
    run_test "produce_consume_keys_headers_$c" keys_headers_codec "$c"
done
run_test consume_from_offset_and_tail consume_from_offset_and_tail
run_test null_values null_values

exit $FAILED
