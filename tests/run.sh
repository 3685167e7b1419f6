#!/usr/bin/env bash
# Runs every test and ends with exactly one line "N passed, N failed".
#
#   tests/run.sh [--unit-only] BUILD_DIR      (BUILD_DIR: build or build-asan)
#
# 0. lint:   tools/lint/run.sh: the include matrix of src/ against the layer
#            table tools/lint/layers.txt (and that a wrong include is caught),
#            the clang-format check, and that Python test modules only use
#            helpers the modules they import define, one source for Kafka error
#            codes and metadata keys (each with its negative case);
#            codegen: tools/kgen/check.sh: the committed Kafka codecs and
#            dispatch rows are what BUILD_DIR/tools/kgen makes of
#            src/kafka/messages/.
# 1. unit:   every executable BUILD_DIR/tests/test_*; each prints "PASS name" /
#            "FAIL name: ..." lines. A binary that exits non-zero (crash,
#            sanitizer abort, timeout) without a FAIL line counts as 1 failure.
# 1b. etcd: tools/etcd/etcd.sh starts a throwaway etcd; BUILD_DIR/tests/test_meta
#            runs again with LS_TEST_ETCD_URL, so the shared metadata KV suite
#            (and the etcd-only tests) run against it, and so does the
#            transaction coordinator's store suite (test_txn) (LS_TEST_ETCD=0 skips).
# 1c. postgresql: tools/pg/pg.sh starts a throwaway PostgreSQL; test_meta runs
#            again with LS_TEST_PG_URL (the shared suite and the PostgreSQL-only
#            tests, in a fresh database), about 10 s (LS_TEST_PG=0 skips). Its
#            integration tests (test_metadata_postgres.py) start their own server.
# 2. pytest: tests/integration (confluent-kafka, kafka-python, raw sockets),
#            counted from its junit xml; with LS_TEST_ASAN_BUILD=DIR (make test
#            sets it) against DIR's ASan+UBSan broker (suite asan.pytest), so
#            one session covers both the suite and the sanitizers, and any
#            sanitizer report fails the test that triggered it.
# 3. kafkajs, Java kafka-clients, kcat: each run against a fresh broker by
#            tests/integration/lsbroker.py, counted from PASS/FAIL lines.
# 4. s3:     tests/s3/run.sh starts Ceph radosgw (tools/s3/radosgw.sh) and runs
#            the S3 unit tests and suites 2-3 again with S3 as the object store,
#            without the modules marked `store_agnostic` (protocol, security,
#            groups, admin: they reach the store as the file stage does).
# 5. fuzz:   every libFuzzer harness (tools/fuzz) for LS_TEST_FUZZ_TIME s (15).
# 6. tsan:   with LS_TEST_TSAN_BUILD=DIR (make test sets it), the threaded
#            modules' unit tests built with ThreadSanitizer.
# 7. asan:   with LS_TEST_ASAN_BUILD=DIR, the unit tests against DIR's build.
# The S3 and ASan-broker sessions leave out the tests marked `heavy`
# (tests/integration/pytest.ini): multi-process runs, run once against BUILD_DIR.
# So under make test every integration test runs once against the plain
# build (heavy, S3, kafkajs, Java, kcat) or the ASan one (stage 2), and every
# module that reaches the object store runs on both stores.
#
# Lanes: the integration tests mostly wait (on brokers, polls, commit
# intervals): one pytest session keeps about a quarter of one core busy
# (measured: 41 CPU s in its first 156 s). So two background lanes run beside
# the foreground's stages 2 (without the heavy tests), 3 and 6:
#   lane s3:   stage 2's heavy tests (suite pytest.heavy), then 4;
#   lane asan: stage 7's unit tests, the second half of stage 2's modules
#              against the ASan broker (the foreground runs the first), then 5.
# Every broker, etcd and radosgw takes its own free ports and its own
# directory under $WORK, so the lanes cannot collide. A lane's output is
# printed, whole, when it ends; its suites are counted like the others (their
# times are the lane's own). LS_TEST_LANES=0 runs them one after another.
#
# The integration suites start $LAKESTREAM_BIN (= BUILD_DIR/lakestream), so the
# sanitizer build is tested the same way. Dependencies come from
# `tools/install-deps.sh test`; nothing is downloaded here.
set -uo pipefail

UNIT_ONLY=0
if [ "${1:-}" = "--unit-only" ]; then
    UNIT_ONLY=1
    shift
fi
BUILD=${1:-build}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

PASSED=0
FAILED=0
SKIPPED=0
SUMMARY=()
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lakestream-tests.XXXXXX")
KEEP_WORK=0
declare -A LANE_PIDS=()
cleanup() {
    local pid
    # an interrupted run: stop the lanes still running (their own processes only)
    for pid in "${LANE_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    [ "$KEEP_WORK" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT

note() { SUMMARY+=("$1"); }

# add SUITE PASSED FAILED: counts a suite; its summary line also shows the
# seconds since the previous suite was counted (where make test's time goes).
LAST_ADD=$SECONDS
add() {
    PASSED=$((PASSED + $2))
    FAILED=$((FAILED + $3))
    note "$(printf '%-28s pass %-5d fail %-4d %5ds' "$1:" "$2" "$3" $((SECONDS - LAST_ADD)))"
    LAST_ADD=$SECONDS
}

# run_counted SUITE TIMEOUT CMD...: runs CMD, echoing its output, and counts
# "PASS " / "FAIL " line prefixes.
run_counted() {
    local suite=$1 limit=$2 log rc p f
    shift 2
    log="$WORK/$(echo "$suite" | tr -c 'A-Za-z0-9_.-' '_').log"
    echo "=== $suite"
    timeout -k 10 "$limit" "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    p=$(grep -c '^PASS ' "$log")
    f=$(grep -c '^FAIL ' "$log")
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
        if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
            echo "FAIL $suite: timed out after ${limit}s"
        else
            echo "FAIL $suite: exited with code $rc without a FAIL line"
        fi
        f=1
    elif [ "$rc" = 0 ] && [ "$p" = 0 ] && [ "$f" = 0 ]; then
        echo "FAIL $suite: ran no test (no PASS/FAIL line)"
        f=1
    fi
    add "$suite" "$p" "$f"
}

# start_lane NAME CMD...: runs CMD (a function of this script that counts its
# suites with add/run_counted/run_pytest) in the background, in a subshell
# with counts of its own; its output goes to $WORK/lane-NAME.out. With
# LS_TEST_LANES=0, CMD runs here, in the foreground.
start_lane() {
    local name=$1
    shift
    if [ "${LS_TEST_LANES:-1}" = 0 ]; then
        "$@"
        return
    fi
    (
        PASSED=0 FAILED=0 SKIPPED=0 SUMMARY=() LAST_ADD=$SECONDS
        "$@"
        printf '%s\n' "${SUMMARY[@]}" >"$WORK/lane-$name.summary"
        echo "$PASSED $FAILED $SKIPPED" >"$WORK/lane-$name.counts"
    ) >"$WORK/lane-$name.out" 2>&1 &
    LANE_PIDS[$name]=$!
    echo "=== lane $name started in the background (pid $!)"
}

# finish_lane NAME: waits for the lane, prints its output and adds its counts
# and summary lines to this run's.
finish_lane() {
    local name=$1 p f s line
    [ -n "${LANE_PIDS[$name]:-}" ] || return 0
    wait "${LANE_PIDS[$name]}"
    unset "LANE_PIDS[$name]"
    echo "=== lane $name (ran in the background; its output follows)"
    cat "$WORK/lane-$name.out"
    if read -r p f s 2>/dev/null <"$WORK/lane-$name.counts"; then
        PASSED=$((PASSED + p))
        FAILED=$((FAILED + f))
        SKIPPED=$((SKIPPED + s))
        while IFS= read -r line; do
            [ -n "$line" ] && note "$line"
        done <"$WORK/lane-$name.summary"
    else
        echo "FAIL lane $name: ended without its counts (killed?)"
        add "lane $name" 0 1
    fi
    LAST_ADD=$SECONDS
}

# run_pytest SUITE [PYTEST_ARGS...]: the Python integration suite against
# $LAKESTREAM_BIN, counted from its junit xml.
run_pytest() {
    local suite=$1 xml="$WORK/$1.xml" rc p f s
    shift
    echo "=== $suite: pytest ${PYTEST_PATHS:+$(echo "$PYTEST_PATHS" | wc -w) modules of }tests/integration $* ($LAKESTREAM_BIN)"
    # a guard against a hung session, not a budget (the ASan session took
    # 1885 s at 726 tests beside two other lanes); a session it stops ends as
    # on Ctrl-C (conftest.py): fixtures torn down, its report written with
    # what ran, and rc != 0 counts one failure more
    # shellcheck disable=SC2086 # PYTEST_PATHS: one module path per word
    timeout -k 30 3000 "$PY" -m pytest -p no:cacheprovider -q -rfE \
        --junitxml="$xml" --basetemp="$WORK/$suite-tmp" "$@" ${PYTEST_PATHS:-tests/integration}
    rc=$?
    if [ -s "$xml" ]; then
        read -r p f s < <("$PY" - "$xml" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
t = f = e = s = 0
for su in suites:
    t += int(su.get("tests", 0)); f += int(su.get("failures", 0))
    e += int(su.get("errors", 0)); s += int(su.get("skipped", 0))
print(t - f - e - s, f + e, s)
EOF
        )
        if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
            echo "FAIL $suite: exited with code $rc"
            f=1
        fi
        SKIPPED=$((SKIPPED + s))
        add "$suite" "$p" "$f"
        [ "$s" != 0 ] && note "$suite: $s skipped"
    else
        echo "FAIL $suite: no junit report (exit code $rc)"
        add "$suite" 0 1
    fi
}

# run_units PREFIX DIR: every unit-test binary in DIR/tests.
run_units() {
    local prefix=$1 dir=$2 t units=0
    for t in "$dir"/tests/test_*; do
        [ -f "$t" ] && [ -x "$t" ] || continue
        case "$t" in *.o | *.d) continue ;; esac
        units=$((units + 1))
        # unit tests read LAKESTREAM_* variables themselves: hide the harness's
        # (and a one-test filter left in the environment: the suite runs them all)
        run_counted "$prefix$(basename "$t")" 300 env -u LAKESTREAM_BIN -u LS_UNIT_TEST "$t"
    done
    [ "$units" = 0 ] && note "${prefix%/}: no test binaries in $dir/tests"
}

# ---------------------------------------------------------------- lint

# The layer check (tools/lint/layers.txt): includes between src/ folders; the
# format check; cross-module references of the Python tests.
run_counted lint 300 tools/lint/run.sh
# The generated Kafka codecs and dispatch rows are up to date (tools/kgen).
run_counted codegen 300 tools/kgen/check.sh "$BUILD"

# ---------------------------------------------------------------- unit

if [ ! -d "$BUILD" ]; then
    echo "FAIL setup: build directory '$BUILD' does not exist (run make first)"
    add setup 0 1
else
    BUILD=$(cd "$BUILD" && pwd)
    run_units unit/ "$BUILD"
fi

# ---------------------------------------------------------------- etcd

# run_etcd_meta BUILD_DIR: test_meta, test_txn and test_group_txn against a throwaway etcd.
run_etcd_meta() {
    local dir
    if ! command -v etcd >/dev/null 2>&1; then
        echo "FAIL etcd: etcd not installed; run tools/install-deps.sh test"
        add etcd 0 1
        return
    fi
    if ! dir=$(tools/etcd/etcd.sh start "$WORK/etcd"); then
        echo "FAIL etcd: tools/etcd/etcd.sh start failed"
        add etcd 0 1
        return
    fi
    local vars
    mapfile -t vars <"$dir/env"   # LS_TEST_ETCD_URL=... LS_TEST_ETCD_DIR=...
    run_counted etcd/test_meta 300 env "${vars[@]}" LS_TEST_META_ONLY=etcd "$1/tests/test_meta"
    run_counted etcd/test_txn 120 env "${vars[@]}" LS_TEST_TXN_ONLY=etcd "$1/tests/test_txn"
    run_counted etcd/test_group_txn 120 env "${vars[@]}" LS_TEST_GROUP_TXN_ONLY=etcd \
        "$1/tests/test_group_txn"
    tools/etcd/etcd.sh stop "$dir"
}

if [ "$UNIT_ONLY" = 0 ] && [ -x "$BUILD/tests/test_meta" ]; then
    if [ "${LS_TEST_ETCD:-1}" = 0 ]; then
        note "etcd: skipped (LS_TEST_ETCD=0)"
    else
        run_etcd_meta "$BUILD"
    fi
fi

# ---------------------------------------------------------------- postgresql

# run_pg_meta BUILD_DIR: test_meta against a throwaway PostgreSQL.
run_pg_meta() {
    local dir
    if ! dir=$(tools/pg/pg.sh start "$(mktemp -d "${TMPDIR:-/tmp}/lakestream-pg.XXXXXX")"); then
        echo "FAIL postgresql: tools/pg/pg.sh start failed (run tools/install-deps.sh test)"
        add postgresql 0 1
        return
    fi
    local vars
    mapfile -t vars <"$dir/env"   # LS_TEST_PG_URL=... LS_TEST_PG_DIR=...
    run_counted postgresql/test_meta 120 env "${vars[@]}" LS_TEST_META_ONLY=pg "$1/tests/test_meta"
    tools/pg/pg.sh stop "$dir"
}

if [ "$UNIT_ONLY" = 0 ] && [ -x "$BUILD/tests/test_meta" ]; then
    if [ "${LS_TEST_PG:-1}" = 0 ]; then
        note "postgresql: skipped (LS_TEST_PG=0)"
    else
        run_pg_meta "$BUILD"
    fi
fi

# ---------------------------------------------------------------- integration

if [ "$UNIT_ONLY" = 0 ]; then
    export LAKESTREAM_BIN="$BUILD/lakestream"
    PY="$ROOT/.venv/bin/python"
    LSB=("$PY" "$ROOT/tests/integration/lsbroker.py")

    # Lane "s3": the file-store pytest's tests marked heavy (stage 2's other
    # half: Java apps, chaos runs), then the object-store stage, then fuzzing.
    s3_lane() {
        run_pytest pytest.heavy -m heavy

        # -- S3: radosgw started, S3 unit tests, then the suites above again
        #    with S3 as the object store (LS_TEST_S3=0 skips this stage)
        if [ "${LS_TEST_S3:-1}" = 0 ]; then
            note "s3: skipped (LS_TEST_S3=0)"
        else
            run_counted s3 3000 tests/s3/run.sh "$BUILD" "$WORK/s3"
        fi
    }

    # -- fuzzing: every libFuzzer harness for a short time (make fuzz runs long)
    fuzz_stage() {
        if command -v clang >/dev/null 2>&1; then
            run_counted fuzz 900 make --no-print-directory fuzz FUZZ_TIME="${LS_TEST_FUZZ_TIME:-15}"
        else
            echo "FAIL fuzz: clang missing; run tools/install-deps.sh test"
            add fuzz 0 1
        fi
    }

    # With an ASan build named (make test), stage 2 runs against its broker, in
    # two sessions at once: the modules of odd place in name order here, the
    # even ones in lane asan (measured halves: 979 s and 894 s of 1873 s).
    ASAN_DIR=
    if [ -n "${LS_TEST_ASAN_BUILD:-}" ] && [ -x "$LS_TEST_ASAN_BUILD/lakestream" ]; then
        ASAN_DIR=$(cd "$LS_TEST_ASAN_BUILD" && pwd)
    fi
    pytest_modules() {
        local i=0 f
        for f in tests/integration/test_*.py; do
            i=$((i + 1))
            [ $((i % 2)) = $(($1 % 2)) ] && echo "$f"
        done
    }
    asan_pytest_half() {
        LAKESTREAM_BIN="$ASAN_DIR/lakestream" PYTEST_PATHS="$(pytest_modules "$1")" \
            run_pytest "asan.pytest.$1" -m "not heavy"
    }

    # Lane "asan" (stage 7): the unit tests against the ASan+UBSan build, the
    # second half of its Python session, then fuzzing.
    asan_lane() {
        if [ -n "$ASAN_DIR" ]; then
            run_units asan.unit/ "$ASAN_DIR"
            asan_pytest_half 2
            fuzz_stage
        else
            echo "FAIL asan: $LS_TEST_ASAN_BUILD/lakestream missing (make asan failed?)"
            add asan 0 1
        fi
    }

    if [ ! -x "$LAKESTREAM_BIN" ]; then
        echo "FAIL integration: broker binary $LAKESTREAM_BIN missing (build failed?)"
        add integration 0 1
    elif [ ! -x "$PY" ]; then
        echo "FAIL integration: .venv missing; run tools/install-deps.sh test"
        add integration 0 1
    else
        # the background lanes (see the top of this file)
        start_lane s3 s3_lane
        if [ -n "${LS_TEST_ASAN_BUILD:-}" ]; then
            start_lane asan asan_lane
        fi

        # stage 2 without the heavy tests; with an ASan build named (make test)
        # it is stage 7's Python suite too, against the ASan+UBSan broker
        # instead of one session per build (the plain build's share: the heavy
        # tests, the S3 stage, kafkajs, Java and kcat)
        if [ -n "$ASAN_DIR" ]; then
            asan_pytest_half 1
        else
            run_pytest pytest -m "not heavy"
            fuzz_stage
        fi

        # -- kafkajs
        if [ -d tests/integration/js/node_modules/kafkajs ]; then
            run_counted kafkajs 600 "${LSB[@]}" --name kafkajs -- node tests/integration/js/test_kafkajs.js
            run_counted kafkajs_groups 300 "${LSB[@]}" --name kafkajs_groups \
                --arg=--group.min.session.timeout.ms=500 -- node tests/integration/js/test_kafkajs_groups.js
            run_counted kafkajs_registry 300 "${LSB[@]}" --name kafkajs_registry \
                -- node tests/integration/js/test_kafkajs_registry.js
        else
            echo "FAIL kafkajs: tests/integration/js/node_modules missing; run tools/install-deps.sh test"
            add kafkajs 0 1
        fi

        # -- Java kafka-clients (compiled here, offline, against the cached jars)
        JLIB="$ROOT/.cache/java/lib"
        if ls "$JLIB"/kafka-clients-*.jar >/dev/null 2>&1; then
            mkdir -p "$WORK/java"
            if javac -nowarn -cp "$JLIB/*" -d "$WORK/java" tests/integration/java/LakestreamClientTest.java \
                >"$WORK/javac.log" 2>&1; then
                run_counted java 600 "${LSB[@]}" --name java -- \
                    java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$WORK/java:$JLIB/*" LakestreamClientTest
            else
                cat "$WORK/javac.log"
                echo "FAIL java: javac failed"
                add java 0 1
            fi
        else
            echo "FAIL java: no jars in .cache/java/lib; run tools/install-deps.sh test"
            add java 0 1
        fi

        # -- kcat
        run_counted kcat 600 "${LSB[@]}" --name kcat -- bash tests/integration/test_kcat.sh

        # -- ThreadSanitizer: the threaded modules' unit tests (make tsan builds them)
        if [ -n "${LS_TEST_TSAN_BUILD:-}" ]; then
            if [ -d "$LS_TEST_TSAN_BUILD/tests" ]; then
                TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" \
                    run_units tsan.unit/ "$(cd "$LS_TEST_TSAN_BUILD" && pwd)"
            else
                echo "FAIL tsan: $LS_TEST_TSAN_BUILD/tests missing (make tsan failed?)"
                add tsan 0 1
            fi
        fi

        # the background lanes, counted after the foreground stages
        finish_lane s3
        finish_lane asan
    fi
fi

echo
echo "=== summary"
for line in "${SUMMARY[@]}"; do echo "  $line"; done
if [ "$FAILED" != 0 ]; then
    echo "  (each failure is shown above with its output; broker log tails follow failed integration tests)"
fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
