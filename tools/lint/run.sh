#!/usr/bin/env bash
# The lint stage of `make test`: the layer check on src/, and the same check
# on a copy of src/ with a deliberately wrong include (log/ including kafka/),
# which must fail; the format check (.clang-format), and the same check on a
# copy with one misformatted line, which must fail; the check that Python test
# modules only use helpers other modules define, and the same check on a copy
# with a missing helper, which must fail; the check that Kafka error codes
# are only defined by the generator (src/kafka/messages/errors.txt), and the
# same check on a copy with a hand-kept define, which must fail; the check
# that metadata key prefixes are only spelled in src/meta/meta_keys.h, and
# the same check on a copy with a key literal, which must fail; the check
# that no source file passes 1 500 lines, and the same check on a copy with
# one that does, which must fail; the check that tests/unit mirrors src/ with
# unique test names, and the same check on a copy with a duplicate, which
# must fail; the check that error buffers are `char *err, size_t errlen`
# beside an ls_status (or pointer) result, and the same check on a copy with
# an int-returning declaration, which must fail. One PASS/FAIL line each.
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

"$ROOT/tools/lint/check-format.sh" || rc=1
mkdir -p "$tmp/fmt"
cp -r "$ROOT/src" "$tmp/fmt/src"
mkdir -p "$tmp/fmt/tests/unit" "$tmp/fmt/tools" "$tmp/fmt/bench"
printf 'int  ls_misformatted (void){return 0;}\n' >>"$tmp/fmt/src/base/url.c"
if out=$("$ROOT/tools/lint/check-format.sh" "$tmp/fmt" 2>&1); then
    echo "FAIL lint.format_catches_misformatted_line: a misformatted line passed the check"
    rc=1
elif grep -q 'not formatted: src/base/url.c' <<<"$out"; then
    echo "PASS lint.format_catches_misformatted_line"
else
    printf '%s\n' "$out"
    echo "FAIL lint.format_catches_misformatted_line: failed without naming src/base/url.c"
    rc=1
fi
# Python test modules that use each other's helpers: every name resolves
PYDIRS=(tests/integration tests/soak tests/chaos bench)
if out=$(cd "$ROOT" && python3 tools/lint/check-test-refs.py "${PYDIRS[@]}" 2>&1); then
    echo "PASS lint.test_refs_resolve"
else
    printf '%s\n' "$out"
    echo "FAIL lint.test_refs_resolve: a test module uses a name its source module does not define"
    rc=1
fi
mkdir -p "$tmp/refs"
for d in "${PYDIRS[@]}"; do mkdir -p "$tmp/refs/$d" && cp "$ROOT/$d"/*.py "$tmp/refs/$d/"; done
printf '\ndef _lint_probe():\n    import iceberg_util as iu\n    return iu.no_such_helper_for_lint\n' \
    >>"$tmp/refs/tests/integration/test_tables.py"
if out=$(cd "$tmp/refs" && python3 "$ROOT/tools/lint/check-test-refs.py" "${PYDIRS[@]}" 2>&1); then
    echo "FAIL lint.test_refs_catches_missing_helper: a missing helper passed the check"
    rc=1
elif grep -q 'test_tables.py:[0-9]*: iceberg_util does not define no_such_helper_for_lint' <<<"$out"; then
    echo "PASS lint.test_refs_catches_missing_helper"
else
    printf '%s\n' "$out"
    echo "FAIL lint.test_refs_catches_missing_helper: failed without naming test_tables.py"
    rc=1
fi
"$ROOT/tools/lint/check-kafka-errors.sh" || rc=1
mkdir -p "$tmp/kerr/src"
cp -r "$ROOT/src/kafka" "$tmp/kerr/src/kafka"
printf '#define LS_KERR_HAND_KEPT 70\n' >>"$tmp/kerr/src/kafka/h_fetch.c"
if out=$("$ROOT/tools/lint/check-kafka-errors.sh" "$tmp/kerr" 2>&1); then
    echo "FAIL lint.kafka_errors_catches_hand_define: a hand-kept LS_KERR_ define passed the check"
    rc=1
elif grep -q 'src/kafka/h_fetch.c:[0-9]*:#define LS_KERR_HAND_KEPT' <<<"$out"; then
    echo "PASS lint.kafka_errors_catches_hand_define"
else
    printf '%s\n' "$out"
    echo "FAIL lint.kafka_errors_catches_hand_define: failed without naming src/kafka/h_fetch.c"
    rc=1
fi
"$ROOT/tools/lint/check-meta-keys.sh" || rc=1
mkdir -p "$tmp/keys"
cp -r "$ROOT/src" "$tmp/keys/src"
printf 'static const char *const probe_key = "/ls/probe/";\n' >>"$tmp/keys/src/log/log_meta.c"
if out=$("$ROOT/tools/lint/check-meta-keys.sh" "$tmp/keys/src" 2>&1); then
    echo "FAIL lint.meta_keys_catches_literal: a /ls/ key literal passed the check"
    rc=1
elif grep -q 'log/log_meta.c:[0-9]*:' <<<"$out"; then
    echo "PASS lint.meta_keys_catches_literal"
else
    printf '%s\n' "$out"
    echo "FAIL lint.meta_keys_catches_literal: failed without naming log/log_meta.c"
    rc=1
fi
"$ROOT/tools/lint/check-file-size.sh" || rc=1
mkdir -p "$tmp/size"
cp -r "$ROOT/src" "$tmp/size/src"
yes '/* padding */' | head -n 1501 >>"$tmp/size/src/base/url.c"
if out=$("$ROOT/tools/lint/check-file-size.sh" "$tmp/size/src" 2>&1); then
    echo "FAIL lint.file_size_catches_long_file: a file over 1 500 lines passed the check"
    rc=1
elif grep -q 'base/url.c: [0-9]* lines' <<<"$out"; then
    echo "PASS lint.file_size_catches_long_file"
else
    printf '%s\n' "$out"
    echo "FAIL lint.file_size_catches_long_file: failed without naming base/url.c"
    rc=1
fi

"$ROOT/tools/lint/check-unit-layout.sh" || rc=1
mkdir -p "$tmp/layout/tests"
cp -r "$ROOT/src" "$tmp/layout/src"
cp -r "$ROOT/tests/unit" "$tmp/layout/tests/unit"
cp "$tmp/layout/tests/unit/log/test_logstore.c" "$tmp/layout/tests/unit/meta/test_logstore.c"
if out=$("$ROOT/tools/lint/check-unit-layout.sh" "$tmp/layout" 2>&1); then
    echo "FAIL lint.unit_layout_catches_duplicate_name: two test_logstore.c passed the check"
    rc=1
elif grep -q 'test_logstore.c: in more than one folder' <<<"$out"; then
    echo "PASS lint.unit_layout_catches_duplicate_name"
else
    printf '%s\n' "$out"
    echo "FAIL lint.unit_layout_catches_duplicate_name: failed without naming test_logstore.c"
    rc=1
fi

# One error convention: ls_status (or a pointer) and a size_t error length
"$ROOT/tools/lint/check-error-convention.sh" || rc=1
mkdir -p "$tmp/errconv"
cp -r "$ROOT/src" "$tmp/errconv/src"
printf 'int ls_logstore_probe(const char *x, char *err, int errlen);\n' >>"$tmp/errconv/src/log/logstore.h"
if out=$("$ROOT/tools/lint/check-error-convention.sh" "$tmp/errconv/src" 2>&1); then
    echo "FAIL lint.error_convention_catches_int_result: an int result beside an error buffer passed the check"
    rc=1
elif grep -q 'log/logstore.h:[0-9]*: ls_logstore_probe: returns int' <<<"$out" &&
    grep -q 'log/logstore.h:[0-9]*: ls_logstore_probe: error length of err is int' <<<"$out"; then
    echo "PASS lint.error_convention_catches_int_result"
else
    printf '%s\n' "$out"
    echo "FAIL lint.error_convention_catches_int_result: failed without naming log/logstore.h"
    rc=1
fi
exit $rc
