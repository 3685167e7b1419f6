#!/usr/bin/env bash
# Installs what the benchmarks need, once, so `make bench` never downloads:
#   - gnuplot (Debian gnuplot-nox) for the PNG plots
#   - librdkafka headers for the load driver (Debian librdkafka-dev)
#   - Apache Kafka (bench/kafka/pom.xml, pinned) copied into .cache/bench/kafka/libs
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
echo "bench setup ok: $(ls "$LIBS" | wc -l) Kafka jars in .cache/bench/kafka/libs"
