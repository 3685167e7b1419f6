#!/usr/bin/env bash
# A throwaway Ceph radosgw (a real S3 server) on 127.0.0.1 for tests.
#
#   tools/s3/radosgw.sh start [DIR]   start mon + memstore OSD + radosgw under DIR
#                                     (default: a new temp dir); prints DIR.
#                                     DIR/env then holds, as shell assignments:
#                                       LS_TEST_S3_URL=s3://BUCKET?endpoint=...&region=...
#                                       AWS_ACCESS_KEY_ID=...  AWS_SECRET_ACCESS_KEY=...
#                                       LS_TEST_S3_ENDPOINT=http://127.0.0.1:PORT
#                                       LS_TEST_S3_DIR=DIR
#   tools/s3/radosgw.sh stop DIR      kill the daemons it started (by PID) and remove DIR
#   tools/s3/radosgw.sh stop-rgw DIR  kill only radosgw (the S3 endpoint goes away;
#                                     the cluster and its data stay)
#   tools/s3/radosgw.sh start-rgw DIR start radosgw again on the same port
#   tools/s3/radosgw.sh status DIR    exit 0 when the S3 endpoint answers
#
# The cluster (docs/OBJECT_STORES.md): 1 mon + 1 OSD with
# `osd objectstore = memstore`, auth none, pool size 1, everything bound to
# 127.0.0.1 on free ports, data and logs under DIR. Only PIDs recorded in
# DIR/pids are ever signalled. Startup takes ~15 s; memory ~200 MB + data.
set -euo pipefail

CMD=${1:-}
DIR=${2:-}
ACCESS_KEY=lakestreamtest
SECRET_KEY=lakestreamtestsecret0123456789
BUCKET=lakestream-test
REGION=us-east-1

say() { printf 'radosgw.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

need() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 ||
            die "$c not found; install Debian packages: apt-get install -y radosgw ceph-mon ceph-osd"
    done
}

free_port() {
    python3 - <<'EOF'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
EOF
}

# wait_for SECONDS WHAT CMD...: polls CMD until it succeeds.
wait_for() {
    local limit=$1 what=$2 i=0 delay=0.1
    shift 2
    local deadline=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        if [ $SECONDS -ge $deadline ]; then
            say "timed out after ${limit}s waiting for $what"
            return 1
        fi
        sleep $delay
        i=$((i + 1))
        if [ $i -gt 10 ]; then delay=0.3; fi
    done
    return 0
}

ceph_() { timeout 20 ceph -c "$DIR/ceph.conf" --connect-timeout 10 "$@"; }

# spawn NAME CMD...: starts a daemon in the foreground-mode, in the background,
# and records its PID.
spawn() {
    local name=$1
    shift
    "$@" >>"$DIR/log/$name.out" 2>&1 </dev/null &
    echo "$name $!" >>"$DIR/pids"
}

pid_of() { awk -v n="$1" '$1 == n { p = $2 } END { if (p) print p }' "$DIR/pids" 2>/dev/null; }

kill_named() {
    local name=$1 pid
    pid=$(pid_of "$name")
    [ -n "$pid" ] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
    # forget it
    awk -v n="$name" '$1 != n' "$DIR/pids" >"$DIR/pids.new" && mv "$DIR/pids.new" "$DIR/pids"
}

rgw_up() { curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$(cat "$DIR/rgw_port")/"; }

start_rgw() {
    spawn rgw radosgw -f -c "$DIR/ceph.conf" -n client.rgw.a
    wait_for 60 "radosgw on port $(cat "$DIR/rgw_port")" rgw_up ||
        { tail -20 "$DIR/log/"*rgw* >&2 || true; return 1; }
}

s3_curl() {
    # curl's own SigV4 signs no payload hash: the x-amz-content-sha256 header is added by hand
    curl -s --max-time 20 --aws-sigv4 "aws:amz:$REGION:s3" --user "$ACCESS_KEY:$SECRET_KEY" \
        -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}

start() {
    need ceph ceph-mon ceph-osd radosgw radosgw-admin monmaptool curl python3
    if [ -z "$DIR" ]; then
        DIR=$(mktemp -d "${TMPDIR:-/tmp}/lakestream-radosgw.XXXXXX")
    else
        mkdir -p "$DIR"
        [ -e "$DIR/pids" ] && die "$DIR already holds a cluster (stop it first)"
    fi
    DIR=$(cd "$DIR" && pwd)
    mkdir -p "$DIR/log" "$DIR/run" "$DIR/mon" "$DIR/osd" "$DIR/rgw"
    : >"$DIR/pids"
    local mon_port rgw_port fsid
    mon_port=$(free_port)
    rgw_port=$(free_port)
    echo "$rgw_port" >"$DIR/rgw_port"
    fsid=$(python3 -c 'import uuid; print(uuid.uuid4())')
    cat >"$DIR/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = v1:127.0.0.1:$mon_port
mon initial members = a
public addr = 127.0.0.1
ms bind msgr2 = false
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
osd objectstore = memstore
# RAM, taken only as objects are written. A full OSD blocks writes (requests
# hang rather than fail); make bench's S3 scenario wrote past 2 GiB in one run
memstore device bytes = 4294967296
osd data = $DIR/osd/\$cluster-\$id
osd max object name len = 460
osd max object namespace len = 64
mon data = $DIR/mon/\$cluster-\$id
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
pid file = $DIR/run/\$name.pid
log file = $DIR/log/\$name.log
keyring = $DIR/keyring
crash dir = $DIR/crash
exporter sock dir = $DIR/run
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$rgw_port tcp_nodelay=1
rgw data = $DIR/rgw
rgw enable usage log = false
rgw thread pool size = 64
EOF
    monmaptool --create --addv a "[v1:127.0.0.1:$mon_port]" --fsid "$fsid" "$DIR/monmap" >/dev/null
    ceph-mon -c "$DIR/ceph.conf" --mkfs -i a --monmap "$DIR/monmap" >/dev/null 2>&1 ||
        die "ceph-mon --mkfs failed"
    spawn mon ceph-mon -f -c "$DIR/ceph.conf" -i a
    wait_for 30 "ceph-mon" ceph_ mon stat || die "mon did not start (see $DIR/log)"
    local id
    id=$(ceph_ osd create)
    mkdir -p "$DIR/osd/ceph-$id"
    ceph-osd -c "$DIR/ceph.conf" -i "$id" --mkfs >"$DIR/log/osd-mkfs.out" 2>&1 ||
        die "ceph-osd --mkfs failed (see $DIR/log/osd-mkfs.out)"
    ceph_ osd crush add "osd.$id" 1.0 root=default host=localhost >/dev/null 2>&1
    spawn osd ceph-osd -f -c "$DIR/ceph.conf" -i "$id"
    osd_up() { ceph_ osd stat | grep -q '1 up'; }
    # 60 s was missed twice in a row by a make test run whose two ASan sessions
    # kept both cores busy (the OSD starts in seconds on an idle machine)
    wait_for 180 "the OSD to come up" osd_up || die "OSD did not come up (see $DIR/log)"
    start_rgw || die "radosgw did not start (see $DIR/log)"
    timeout 60 radosgw-admin -c "$DIR/ceph.conf" -n client.rgw.a user create --uid=lakestream \
        --display-name=lakestream --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" \
        >"$DIR/log/user-create.out" 2>&1 || die "radosgw-admin user create failed"
    local code
    code=$(s3_curl -o /dev/null -w '%{http_code}' -X PUT "http://127.0.0.1:$rgw_port/$BUCKET")
    [ "$code" = 200 ] || die "creating bucket $BUCKET failed (HTTP $code)"
    cat >"$DIR/env" <<EOF
LS_TEST_S3_URL='s3://$BUCKET?endpoint=http://127.0.0.1:$rgw_port&region=$REGION'
LS_TEST_S3_ENDPOINT='http://127.0.0.1:$rgw_port'
LS_TEST_S3_BUCKET='$BUCKET'
LS_TEST_S3_DIR='$DIR'
AWS_ACCESS_KEY_ID='$ACCESS_KEY'
AWS_SECRET_ACCESS_KEY='$SECRET_KEY'
AWS_REGION='$REGION'
EOF
    say "S3 endpoint http://127.0.0.1:$rgw_port bucket $BUCKET ready (state in $DIR)"
    echo "$DIR"
}

stop() {
    [ -n "$DIR" ] || die "usage: $0 stop DIR"
    [ -f "$DIR/pids" ] || die "$DIR holds no cluster started by this script"
    kill_named rgw
    kill_named osd
    kill_named mon
    rm -rf "$DIR"
}

case "$CMD" in
start) start ;;
stop) stop ;;
stop-rgw)
    [ -f "$DIR/pids" ] || die "usage: $0 stop-rgw DIR"
    kill_named rgw
    ;;
start-rgw)
    [ -f "$DIR/pids" ] || die "usage: $0 start-rgw DIR"
    [ -z "$(pid_of rgw)" ] || die "radosgw is already running"
    start_rgw
    ;;
status)
    [ -f "$DIR/rgw_port" ] || die "usage: $0 status DIR"
    rgw_up
    ;;
*)
    die "usage: $0 start [DIR] | stop DIR | stop-rgw DIR | start-rgw DIR | status DIR"
    ;;
esac
