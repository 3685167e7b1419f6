#!/bin/sh
# Profile or time one broker under Kafka's ProducerPerformance (issue 32): start
# BIN (default build/lakestream) on a fresh data dir under /tmp, create an
# 8-partition topic, run ProducerPerformance (jars in .cache/java/tools) with the
# Java producer's defaults (idempotent, acks=all, 5 in flight, linger 5 ms, batch
# 16 KiB) and print the tool's summary line, then the broker's CPU over the run
# (seconds and µs per record, for the whole process and for its loop thread), the
# WAL objects it wrote and its minor page faults. With PERF=1 the broker is
# recorded by `perf record $PERF_ARGS` (default: -F 2999 --call-graph dwarf,16384;
# the binary has no frame pointers) into OUT/perf.data (OUT default /tmp/lsprof);
# read it with `perf script -i OUT/perf.data | python3 bench/prof/attribute.py`.
# With METRICS=1 the broker also serves /metrics, and the mean Produce request
# time, WAL linger (open -> sealed) and flush (sealed -> committed), object PUT
# and metadata txn times over the run are printed from it. PRODUCER_PROPS adds
# producer settings to the defaults, e.g. the bench's tuned ones:
# PRODUCER_PROPS="linger.ms=5 batch.size=262144 enable.idempotence=false".
# BROKER_ARGS adds broker flags (e.g. --object.store.fsync=false).
#   bench/produce_profile.sh [BIN] [RECORDS (1000000)] [SIZE (100)]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/build/lakestream}
N=${2:-1000000}
SIZE=${3:-100}
OUT=${OUT:-/tmp/lsprof}
mkdir -p "$OUT"
DIR=$(mktemp -d /tmp/lsprof-broker-XXXXXX)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
HTTP=
[ "${METRICS:-0}" = 1 ] && HTTP=127.0.0.1:$(free_port)
CP="$ROOT/.cache/java/tools/*"
# shellcheck disable=SC2086  # BROKER_ARGS: flags, split on blanks
"$BIN" serve --data.dir="$DIR/data" --listeners=127.0.0.1:$PORT --http.listen=$HTTP \
    --schema.registry.listen= ${BROKER_ARGS:-} >"$DIR/broker.log" 2>&1 &
BPID=$!
trap 'kill $BPID 2>/dev/null; wait $BPID 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$PORT),1)" 2>/dev/null && break
    sleep 0.2
done
java -cp "$CP" org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:$PORT \
    --create --topic perf --partitions 8 --replication-factor 1 >/dev/null 2>&1
# utime + stime of the whole broker, and of its loop thread alone (the
# thread id equals the process id): the loop runs the produce path (socket
# reads, request decode, validation, WAL append, responses); PUTs and
# metadata commits run on worker threads, once per WAL object.
ticks() { awk '{print $14 + $15}' /proc/$BPID/stat; }
loop_ticks() { awk '{print $14 + $15}' /proc/$BPID/task/$BPID/stat; }
faults() { awk '{print $10}' /proc/$BPID/stat; } # minor page faults, all threads
T0=$(ticks)
L0=$(loop_ticks)
F0=$(faults)
if [ "${PERF:-0}" = 1 ]; then
    perf record ${PERF_ARGS:--F 2999 --call-graph dwarf,16384} -p $BPID -o "$OUT/perf.data" 2>"$OUT/perf-record.log" &
    PPID_=$!
    sleep 1
fi
java -Xmx512m -cp "$CP" org.apache.kafka.tools.ProducerPerformance --topic perf \
    --num-records "$N" --record-size "$SIZE" --throughput -1 \
    --producer-props bootstrap.servers=127.0.0.1:$PORT ${PRODUCER_PROPS:-} 2>/dev/null | tail -1
T1=$(ticks)
L1=$(loop_ticks)
F1=$(faults)
OBJS=$(find "$DIR/data" -name '*.wal' | wc -l)
if [ "${PERF:-0}" = 1 ]; then
    kill -INT $PPID_; wait $PPID_ || true
fi
HZ=$(getconf CLK_TCK)
awk -v t=$((T1 - T0)) -v l=$((L1 - L0)) -v f=$((F1 - F0)) -v hz="$HZ" -v n="$N" \
    -v objs="$OBJS" 'BEGIN {
    printf "broker CPU %.2f s, %.3f us per record (loop thread %.2f s, %.3f us); %d WAL objects; %d page faults\n",
           t / hz, t / hz / n * 1e6, l / hz, l / hz / n * 1e6, objs, f }'
if [ -n "$HTTP" ]; then
    curl -s "http://$HTTP/metrics" | awk '
        / / { v[$1] = $2 }
        END {
            m("Produce request", "lakestream_kafka_request_duration_seconds_%s{api=\"Produce\"}")
            m("WAL linger", "lakestream_wal_linger_seconds_%s")
            m("WAL flush", "lakestream_wal_flush_duration_seconds_%s")
            m("object PUT", "lakestream_object_store_operation_duration_seconds_%s{operation=\"put\"}")
            m("metadata txn", "lakestream_metadata_store_operation_duration_seconds_%s{operation=\"txn\"}")
        }
        function m(what, fmt,   s, c) {
            s = v[sprintf(fmt, "sum")]; c = v[sprintf(fmt, "count")]
            if (c > 0) printf "%s: %d, mean %.1f ms\n", what, c, s / c * 1000
        }'
fi
