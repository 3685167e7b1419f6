#!/usr/bin/env bash
# Installs what the benchmarks need, once, so `make bench` never downloads:
#   - gnuplot (Debian gnuplot-nox) for the PNG plots
#   - librdkafka headers for the load driver (Debian librdkafka-dev)
#   - Apache Kafka (bench/kafka/pom.xml, pinned) copied into .cache/bench/kafka/libs
#   - .venv (tools/install-deps.sh test: DuckDB, PyIceberg, pyarrow, confluent-kafka,
#     and Ceph radosgw for scenario 5b) plus bench/requirements.txt (SQLAlchemy, for the
#     zero-ETL consumer's PyIceberg SQL catalog)
# Idempotent: re-running it with everything present does nothing.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
LIBS="$ROOT/.cache/bench/kafka/libs"

need_apt=()
command -v gnuplot >/dev/null || need_apt+=(gnuplot-nox)
[ -f /usr/include/librdkafka/rdkafka.h ] || need_apt+=(librdkafka-dev)
command -v java >/dev/null || need_apt+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || need_apt+=(maven)
if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "bench/setup.sh: run as root: apt-get install -y ${need_apt[*]}" >&2
        exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi

stamp="$LIBS/.pom.sha"
want="$(sha1sum "$ROOT/bench/kafka/pom.xml" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    rm -rf "$LIBS"
    mkdir -p "$LIBS"
    mvn -q -B -f "$ROOT/bench/kafka/pom.xml" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$LIBS"
    echo "$want" >"$stamp"
fi
ls "$LIBS"/kafka_2.13-*.jar >/dev/null

# The test environment (.venv, radosgw) is the project's own install step; it is a
# no-op when its stamps match. bench/requirements.txt goes on top of that .venv, keyed
# by both files (a recreated .venv gets the bench packages again).
"$ROOT/tools/install-deps.sh" test >/dev/null
bstamp="$ROOT/.cache/stamps/bench-venv"
bwant="$(cat "$ROOT/bench/requirements.txt" "$ROOT/tests/integration/requirements.txt" | sha1sum | cut -d' ' -f1)"
if [ ! -f "$bstamp" ] || [ "$(cat "$bstamp")" != "$bwant" ] ||
    ! "$ROOT/.venv/bin/python" -c 'import sqlalchemy, pyiceberg, duckdb' 2>/dev/null; then
    "$ROOT/.venv/bin/python" -m pip install --disable-pip-version-check -q \
        -r "$ROOT/bench/requirements.txt"
    mkdir -p "$(dirname "$bstamp")"
    echo "$bwant" >"$bstamp"
fi
echo "bench setup ok: $(ls "$LIBS" | wc -l) Kafka jars in .cache/bench/kafka/libs"
