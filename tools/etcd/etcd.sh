#!/usr/bin/env bash
# A throwaway single-member etcd on 127.0.0.1 for tests.
#
#   tools/etcd/etcd.sh start [DIR]   start etcd with its data under DIR (default: a
#                                    new temp dir); prints DIR. DIR/env then holds,
#                                    as shell assignments:
#                                      LS_TEST_ETCD_URL=etcd://127.0.0.1:PORT/lakestream-test
#                                      LS_TEST_ETCD_ENDPOINT=127.0.0.1:PORT
#                                      LS_TEST_ETCD_DIR=DIR
#   tools/etcd/etcd.sh stop DIR      kill the etcd it started (by recorded PID) and
#                                    remove DIR
#   tools/etcd/etcd.sh restart DIR   stop etcd and start it again on the same ports
#                                    and data (clients see a broken connection)
#   tools/etcd/etcd.sh status DIR    exit 0 when the endpoint answers
#
# Client and peer ports are free ports picked on 127.0.0.1. Raft timing is
# shortened (heartbeat 10 ms, election 100 ms) so the minimum lease TTL is 1 s
# instead of 2 s and tests that await lease expiry finish sooner. Only the PID
# recorded in DIR/pid is ever signalled. Startup takes about a second.
set -euo pipefail

CMD=${1:-}
DIR=${2:-}

say() { printf 'etcd.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

free_port() {
    python3 - <<'PY'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

# launch: starts etcd on the ports in DIR/ports and waits until it answers.
launch() {
    local CPORT PPORT deadline
    read -r CPORT PPORT <"$DIR/ports"
    etcd --name ls-test --data-dir "$DIR/data" \
        --listen-client-urls "http://127.0.0.1:$CPORT" --advertise-client-urls "http://127.0.0.1:$CPORT" \
        --listen-peer-urls "http://127.0.0.1:$PPORT" --initial-advertise-peer-urls "http://127.0.0.1:$PPORT" \
        --initial-cluster "ls-test=http://127.0.0.1:$PPORT" --initial-cluster-state new \
        --heartbeat-interval 10 --election-timeout 100 \
        --log-outputs "$DIR/etcd.log" --logger zap \
        >>"$DIR/etcd.out" 2>&1 </dev/null &
    echo $! >"$DIR/pid"
    deadline=$((SECONDS + 20))
    until answers; do
        if ! alive; then
            tail -20 "$DIR/etcd.out" "$DIR/etcd.log" >&2 2>/dev/null || true
            die "etcd exited during startup (logs in $DIR)"
        fi
        if [ $SECONDS -ge $deadline ]; then
            kill_etcd
            die "etcd did not answer within 20 s (logs in $DIR)"
        fi
        sleep 0.1
    done
}

kill_etcd() {
    local pid
    alive || return 0
    pid=$(cat "$DIR/pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$DIR/pid"
}

alive() { [ -f "$DIR/pid" ] && kill -0 "$(cat "$DIR/pid")" 2>/dev/null; }

answers() {
    # shellcheck disable=SC1091
    . "$DIR/env"
    curl -sf -m 2 -X POST -d '{"key":"AA=="}' "http://$LS_TEST_ETCD_ENDPOINT/v3/kv/range" >/dev/null
}

case "$CMD" in
start)
    command -v etcd >/dev/null 2>&1 || die "etcd not found; install the Debian package: apt-get install -y etcd-server"
    if [ -z "$DIR" ]; then DIR=$(mktemp -d "${TMPDIR:-/tmp}/lakestream-etcd.XXXXXX"); fi
    mkdir -p "$DIR"
    DIR=$(cd "$DIR" && pwd)
    CPORT=$(free_port)
    PPORT=$(free_port)
    while [ "$PPORT" = "$CPORT" ]; do PPORT=$(free_port); done
    cat >"$DIR/env" <<ENV
LS_TEST_ETCD_URL=etcd://127.0.0.1:$CPORT/lakestream-test
LS_TEST_ETCD_ENDPOINT=127.0.0.1:$CPORT
LS_TEST_ETCD_DIR=$DIR
ENV
    echo "$CPORT $PPORT" >"$DIR/ports"
    launch
    echo "$DIR"
    ;;
stop)
    [ -n "$DIR" ] || die "usage: $0 stop DIR"
    [ -d "$DIR" ] || exit 0
    kill_etcd
    rm -rf "$DIR"
    ;;
restart)
    [ -n "$DIR" ] && [ -f "$DIR/ports" ] || die "usage: $0 restart DIR (a DIR from start)"
    kill_etcd
    launch
    ;;
status)
    [ -n "$DIR" ] || die "usage: $0 status DIR"
    alive && answers
    ;;
*)
    die "usage: $0 start [DIR] | stop DIR | restart DIR | status DIR"
    ;;
esac
