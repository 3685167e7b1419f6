#!/usr/bin/env bash
# Installs what Lakestream needs, and nothing twice.
#
#   tools/install-deps.sh build   Debian packages to compile the broker
#   tools/install-deps.sh run     + kcat (make run: the README's first examples)
#   tools/install-deps.sh client  kcat and .venv (make client-tools: the
#                                 Python clients of the README's examples)
#   tools/install-deps.sh test    + client tools and test dependencies:
#                                 kcat, librdkafka-dev, JDK 17, maven, node/npm,
#                                 Ceph radosgw/mon/osd (S3 server for tests),
#                                 etcd-server (metadata store for tests),
#                                 postgresql (metadata store for tests),
#                                 chromium + chromium-driver (the console's test),
#                                 .venv from tests/integration/requirements.txt,
#                                 tests/integration/js/node_modules (npm ci),
#                                 .cache/java/lib (kafka-clients and its deps),
#                                 .cache/java/apps (Kafka Connect + Kafka Streams),
#                                 .cache/java/tools (Kafka 4.4.0's command-line tools and server),
#                                 .cache/java/iceberg (Apache Iceberg Java + Hadoop client)
#                                 .cache/java/restcatalog (Iceberg REST catalog test server),
#                                 .cache/java/spark (Iceberg's Spark runtime)
#
# Every network access of the test suites happens here, never at test time.
# Each step is skipped when its stamp file holds the hash of its lockfile (and
# the tool version it was built with), so a second run takes well under a
# second. Not root and a Debian package is missing: prints the exact command
# and exits 1.
set -euo pipefail

MODE=${1:-build}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

BUILD_PKGS=(build-essential pkg-config libuv1-dev libjansson-dev libsqlite3-dev libzstd-dev
            liblz4-dev libsnappy-dev zlib1g-dev libssl-dev libcurl4-openssl-dev
            libmicrohttpd-dev libgnutls28-dev libpcre2-dev  # GnuTLS: HTTPS of the HTTP listeners
            libpq-dev)                       # libpq: the PostgreSQL metadata backend (src/meta/meta_pg.c)
TEST_PKGS=(kcat librdkafka-dev openjdk-17-jdk-headless maven
           radosgw ceph-mon ceph-osd curl   # Ceph: the S3 server of tests/s3/run.sh
           etcd-server                      # etcd: tools/etcd/etcd.sh (tests/run.sh etcd stage)
           postgresql                       # PostgreSQL: tools/pg/pg.sh (tests/run.sh postgresql stage)
           openssl                          # throwaway CAs and certificates of the TLS tests
           clang libclang-rt-dev            # libFuzzer (+ its runtime): make fuzz (tests/run.sh fuzz stage)
           clang-format                     # the format check (tools/lint/check-format.sh)
           chromium chromium-driver)        # headless browser: tests/integration/test_console.py

STAMPS="$ROOT/.cache/stamps"

say() { printf 'install-deps: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

missing_pkgs() {
    local p
    for p in "$@"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
            printf '%s\n' "$p"
    done
}

# apt_ensure PKG...: installs the packages that are not installed yet.
apt_ensure() {
    local missing
    mapfile -t missing < <(missing_pkgs "$@")
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" != 0 ]; then
        say "missing Debian packages: ${missing[*]}"
        say "run: sudo apt-get install -y ${missing[*]}"
        exit 1
    fi
    say "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Another apt (unattended-upgrades on a fresh box) may hold the dpkg
    # lock for minutes: wait for it rather than fail.
    local lock=(-o DPkg::Lock::Timeout=600)
    if ! apt-get "${lock[@]}" install -y --no-install-recommends "${missing[@]}"; then
        say "install failed; apt-get update and retry"
        apt-get "${lock[@]}" update
        apt-get "${lock[@]}" install -y --no-install-recommends "${missing[@]}"
    fi
}

hash_of() { cat "$@" | sha256sum | cut -c1-16; }

# stamp_ok NAME KEY: true when step NAME last succeeded with KEY.
stamp_ok() { [ -f "$STAMPS/$1" ] && [ "$(cat "$STAMPS/$1")" = "$2" ]; }
stamp_set() { mkdir -p "$STAMPS" && printf '%s\n' "$2" >"$STAMPS/$1"; }

install_build() {
    apt_ensure "${BUILD_PKGS[@]}"
}

install_test_system() {
    apt_ensure "${TEST_PKGS[@]}"
    # Node: any node >= 14 with npm will do (nodesource's nodejs ships npm;
    # Debian splits it into nodejs + npm).
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        apt_ensure nodejs npm
    fi
    command -v kcat >/dev/null || die "kcat not on PATH after install"
    command -v javac >/dev/null || die "javac not on PATH after install"
}

install_venv() {
    local req="tests/integration/requirements.txt" pyver key
    pyver=$(python3 -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
    python3 -c 'import sys; sys.exit(sys.version_info < (3, 9))' ||
        die "python3 $pyver is too old (need >= 3.9)"
    key="$(hash_of "$req") python$pyver"
    if stamp_ok venv "$key" && [ -x .venv/bin/python ]; then
        return 0
    fi
    # python3 -m venv: pyenv's interpreter has it built in; Debian's needs python3-venv.
    if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
        apt_ensure python3-venv
    fi
    say "creating .venv (python $pyver) from $req"
    rm -rf .venv
    python3 -m venv .venv
    .venv/bin/python -m pip install --disable-pip-version-check -q -r "$req"
    stamp_set venv "$key"
}

install_npm() {
    local dir="tests/integration/js" key
    key="$(hash_of "$dir/package-lock.json") node$(node --version)"
    if stamp_ok npm "$key" && [ -d "$dir/node_modules/kafkajs" ]; then
        return 0
    fi
    say "npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    stamp_set npm "$key"
}

# Fetches the runtime jars of a pinned pom into .cache/java/FOLDER, once per pom
# content: maven_jars STAMP POM FOLDER WHAT JAR...; each JAR is a name that must
# be there afterwards (as JAR-<version>.jar).
jars_there() {
    local lib="$1" j
    shift
    for j in "$@"; do ls "$lib/$j"-*.jar >/dev/null 2>&1 || return 1; done
}

maven_jars() {
    local stamp="$1" pom="$2" folder="$3" what="$4" lib key
    shift 4
    lib="$ROOT/.cache/java/$folder"
    key="$(hash_of "$pom")"
    if stamp_ok "$stamp" "$key" && jars_there "$lib" "$@"; then
        return 0
    fi
    say "fetching $what jars into .cache/java/$folder"
    rm -rf "$lib"
    # -C: fail on checksum mismatch against Maven Central's published sums.
    mvn -B -q -C -Dstyle.color=never -f "$pom" dependency:copy-dependencies \
        -DoutputDirectory="$lib" -DincludeScope=runtime
    jars_there "$lib" "$@" || die "$what jars missing after mvn"
    stamp_set "$stamp" "$key"
}

install_java() {
    maven_jars java tests/integration/java/pom.xml lib "Java client" kafka-clients
}

# Kafka Connect (distributed worker, FileStream connectors) and Kafka Streams
# for tests/integration/test_connect_streams.py, apart from the client jars.
install_java_apps() {
    maven_jars java-apps tests/integration/java/apps/pom.xml apps "Kafka Connect and Kafka Streams" \
        connect-runtime connect-file kafka-streams
}

# Kafka's command-line tools (kafka-transactions.sh's TransactionsCommand,
# kafka-configs.sh's ConfigCommand, the perf tools, ...) for the integration
# tests, and Kafka's core jar (the broker, the benchmark's peer).
install_java_tools() {
    maven_jars java-tools tests/integration/java/tools/pom.xml tools "Kafka command-line tools" \
        kafka-tools kafka_2.13
}

# The Apache Iceberg Java library (core, data, parquet) and the shaded Hadoop
# client it reads files with, for tests/integration/test_iceberg_java.py.
install_java_iceberg() {
    maven_jars java-iceberg tests/integration/java/iceberg/pom.xml iceberg \
        "Apache Iceberg and Hadoop client" iceberg-core iceberg-data iceberg-parquet \
        hadoop-client-api hadoop-client-runtime
}

# Apache Iceberg's Spark runtime for tests/integration/test_spark_tables.py
# (Spark itself is pyspark's, in .venv).
install_java_spark() {
    maven_jars java-spark tests/integration/java/spark/pom.xml spark \
        "Apache Iceberg's Spark runtime" iceberg-spark-runtime-4.0_2.13
}

# Apache Iceberg's REST catalog test server (the iceberg-open-api test fixture,
# a JdbcCatalog behind Iceberg's own REST handlers) for
# tests/integration/test_external_catalog.py: the external catalog tables are
# mirrored into.
install_java_restcatalog() {
    maven_jars java-restcatalog tests/integration/java/restcatalog/pom.xml restcatalog \
        "Apache Iceberg REST catalog server" iceberg-open-api iceberg-core jetty-servlet \
        sqlite-jdbc hadoop-client-api
}

case "$MODE" in
build)
    install_build
    ;;
run)
    install_build
    # kcat is for the README's first examples, not for serving: without root
    # a missing one is named, and the broker still starts
    if [ "$(id -u)" = 0 ]; then
        apt_ensure kcat
    elif [ -n "$(missing_pkgs kcat)" ]; then
        say "the README's examples use kcat: sudo apt-get install -y kcat"
    fi
    ;;
client)
    apt_ensure kcat
    install_venv
    ;;
test)
    install_build
    install_test_system
    install_venv
    install_npm
    install_java
    install_java_apps
    install_java_tools
    install_java_iceberg
    install_java_restcatalog
    install_java_spark
    ;;
*)
    die "usage: $0 build|run|client|test"
    ;;
esac
