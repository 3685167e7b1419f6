#!/usr/bin/env bash
# A throwaway PostgreSQL server on 127.0.0.1 for tests.
#
#   tools/pg/pg.sh start [DIR]    initdb + pg_ctl start with data under DIR (default:
#                                 a new temp dir); prints DIR. DIR/env then holds,
#                                 as shell assignments:
#                                   LS_TEST_PG_URL=postgresql://USER@127.0.0.1:PORT/lakestream
#                                   LS_TEST_PG_ENDPOINT=127.0.0.1:PORT
#                                   LS_TEST_PG_USER=USER
#                                   LS_TEST_PG_DIR=DIR
#   tools/pg/pg.sh stop DIR       stop the server it started and remove DIR
#   tools/pg/pg.sh kill DIR       stop it at once (immediate shutdown), keep the data
#   tools/pg/pg.sh restart DIR    start it again on the same port and data
#   tools/pg/pg.sh pause DIR      SIGSTOP the server and its backends (connections stay
#                                 open but nothing answers); resume DIR: SIGCONT them
#   tools/pg/pg.sh status DIR     exit 0 when the server answers
#
# PostgreSQL refuses to run as root, so as root the server runs as the
# "postgres" system user (DIR is handed to it); otherwise as the current user.
# Authentication is "trust" on 127.0.0.1 only: a test server, never a real one.
# The database "lakestream" is created at start.
set -euo pipefail

CMD=${1:-}
DIR=${2:-}

say() { printf 'pg.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

BIN=$(pg_config --bindir 2>/dev/null || true)
[ -x "$BIN/pg_ctl" ] || BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)

if [ "$(id -u)" = 0 ]; then
    RUNAS=(runuser -u postgres --)
    DBUSER=postgres
else
    RUNAS=()
    DBUSER=$(id -un)
fi

free_port() {
    python3 - <<'PY'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

launch() {
    local PORT
    PORT=$(cat "$DIR/port")
    "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 30 \
        -o "-h 127.0.0.1 -p $PORT -k $DIR/sock -c fsync=off -c max_connections=200" start >/dev/null ||
        { tail -20 "$DIR/server.log" >&2 || true; die "postgres did not start (log in $DIR)"; }
}

answers() { "$BIN/pg_isready" -q -h 127.0.0.1 -p "$(cat "$DIR/port")"; }

case "$CMD" in
start)
    [ -x "$BIN/pg_ctl" ] || die "PostgreSQL server not found; install the Debian package: apt-get install -y postgresql"
    if [ -z "$DIR" ]; then DIR=$(mktemp -d "${TMPDIR:-/tmp}/lakestream-pg.XXXXXX"); fi
    mkdir -p "$DIR/sock"
    DIR=$(cd "$DIR" && pwd)
    [ ${#RUNAS[@]} -eq 0 ] || chown -R postgres "$DIR"
    PORT=$(free_port)
    echo "$PORT" >"$DIR/port"
    "${RUNAS[@]}" "$BIN/initdb" -D "$DIR/data" -U "$DBUSER" --auth=trust -E UTF8 >"$DIR/initdb.log" 2>&1 ||
        { tail -20 "$DIR/initdb.log" >&2; die "initdb failed (log in $DIR)"; }
    launch
    "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U "$DBUSER" lakestream
    cat >"$DIR/env" <<ENV
LS_TEST_PG_URL=postgresql://$DBUSER@127.0.0.1:$PORT/lakestream
LS_TEST_PG_ENDPOINT=127.0.0.1:$PORT
LS_TEST_PG_USER=$DBUSER
LS_TEST_PG_DIR=$DIR
ENV
    echo "$DIR"
    ;;
stop)
    [ -n "$DIR" ] || die "usage: $0 stop DIR"
    [ -d "$DIR" ] || exit 0
    [ -f "$DIR/data/postmaster.pid" ] && "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$DIR"
    ;;
kill)
    [ -n "$DIR" ] || die "usage: $0 kill DIR"
    "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w stop >/dev/null
    ;;
restart)
    [ -n "$DIR" ] && [ -f "$DIR/port" ] || die "usage: $0 restart DIR (a DIR from start)"
    [ -f "$DIR/data/postmaster.pid" ] && "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
    launch
    ;;
pause | resume)
    [ -n "$DIR" ] && [ -f "$DIR/data/postmaster.pid" ] || die "usage: $0 $CMD DIR (a running DIR)"
    PID=$(head -1 "$DIR/data/postmaster.pid")
    SIG=$([ "$CMD" = pause ] && echo STOP || echo CONT)
    # the postmaster first on pause (no new backends), last on resume
    [ "$CMD" = pause ] && kill -"$SIG" "$PID"
    for c in $(pgrep -P "$PID" || true); do kill -"$SIG" "$c" 2>/dev/null || true; done
    [ "$CMD" = resume ] && kill -"$SIG" "$PID"
    exit 0
    ;;
status)
    [ -n "$DIR" ] || die "usage: $0 status DIR"
    answers
    ;;
*)
    die "usage: $0 start [DIR] | stop DIR | kill DIR | restart DIR | pause DIR | resume DIR | status DIR"
    ;;
esac
