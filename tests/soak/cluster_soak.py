#!/usr/bin/env python3
"""Cluster soak: three brokers over etcd and a real S3 server under steady load
and a nemesis, checked for exactness, table freshness and event-loop lag.

Starts a throwaway etcd (tools/etcd/etcd.sh) and Ceph radosgw
(tools/s3/radosgw.sh), a TCP proxy in front of radosgw (the store outage cuts
it), and three brokers with default settings over them (one etcd prefix, one
fresh bucket prefix). One topic, 16 partitions, with a table
(lakestream.table.enabled=true, commit interval 1 s), is fed for --seconds by
an idempotent acks=all producer (librdkafka's defaults otherwise) at --rate
records of --record-bytes each, bootstrapped on all three brokers; a consumer
group (auto-commit) reads it. The nemesis strikes once each, at 1/4, 1/2 and
3/4 of the run:

  kill     kill -9 of node1, restarted at once (the fault lasts until it
           serves again)
  pause    SIGSTOP of node2 for --pause-seconds (20), then SIGCONT
  store    the S3 proxy stops forwarding for --outage-seconds (15), then
           resets every connection (requests hang, as behind a dead link)

Every --sample-seconds it records: the table's row count (the REST catalog's
current snapshot, through a broker not under a fault) and from it the table's
lag, measured by the client: the age of the oldest acknowledged record the
table cannot hold yet, taking the table's rows as the oldest acknowledged
records (a table commit takes every partition up to its stable end, so it is
that prefix to within one produce round trip); each broker's event-loop lag
from GET /health's "loop" object (null when the broker does not report it) and
its own table lag (`lakestream tables show`); and the round trip of an
ApiVersions request to each broker (the loop as a client sees it).

At the end (the producer flushed, the table and the group given time to catch
up) it checks, and reports in JSON (--json) with exit status 1 on a failure:

  log exact      every acknowledged record is in the log at its acknowledged
                 offset, once; nothing in the log was never produced
  table = log    the table holds exactly the log's records (partition, offset,
                 value), each once
  group          the group consumed every acknowledged record
  table lag      at most --max-table-lag-ms (5 000: five commit intervals) at
                 every sample outside the fault windows
  loop lag       each broker's loop lag_ms below --max-loop-lag-ms (100) at
                 every sample outside the fault windows (skipped, with a note,
                 when the brokers do not report it)
  reported lag   each broker's own table lag is within
                 --max-lag-disagreement-ms (5 000) of the client's measure at
                 every sample outside the fault windows (the same on every
                 broker, and true)
  faults         all three struck (the killed broker served again)
  brokers        every broker exits 0 on SIGTERM at the end

A fault window runs from the strike to the end of the fault plus
--recovery-seconds (30: room for a restarted broker's first passes, the
paused broker's backlog and the store's retries); for the loop lag also plus
20 s, because /health's lag_ms is the longest iteration of the last 10-20 s.
The first --warmup-seconds (30) are not checked either (topic creation, the
table's first commit). Reported without a limit: produce latency (p50, p99,
max) in and outside the fault windows, the ApiVersions round trips, the
restart's time to serve, the
catch-up time after the producer stops, radosgw's requests per GB of
acknowledged payload by kind (from its access log, over the produce phase:
PUT, GET, LIST, HEAD, DELETE, multi-object DELETE), broker ERROR lines in and
outside the fault windows and the machine's load average.

  cluster_soak.py [--seconds S] [--rate R] [--json OUT] [--broker-arg=--k=v ...]
`make soak-cluster SOAK_SECONDS=S SOAK_RATE=R` runs it (defaults 600 s at
2 000 records/s)."""

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "chaos"))

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402

import lsbroker  # noqa: E402
from chaos import Etcd, EtcdProxy  # noqa: E402
from kafka_util import create_topic, watermarks  # noqa: E402

RADOSGW = os.path.join(lsbroker.ROOT, "tools", "s3", "radosgw.sh")
TOPIC = "soak-cluster"
PARTITIONS = 16
COMMIT_MS = 1000
BROKERS = 3
# /health's loop lag_ms covers the last 10-20 s: a sample shows a fault's
# iterations for up to 20 s after it ended
LOOP_WINDOW_S = 20


# ---- the store outage: a TCP proxy in a process of its own ---------------

def proxy_main(target):
    """--proxy-to HOST:PORT: forwards a free local port to target, prints
    its host:port, then obeys stdin: `cut S` stops forwarding for S seconds
    and resets every connection (chaos.py's EtcdProxy.partition), answering
    `restored`; end of input stops it. A process of its own, so that S3
    traffic never waits on the soak's own Python threads."""
    proxy = EtcdProxy(target)
    print(proxy.endpoint, flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["cut"]:
            proxy.partition(float(words[1]))
            print("restored", flush=True)
    proxy.stop()
    return 0


class StoreProxy:
    def __init__(self, target):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--proxy-to",
                                      target], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self.endpoint = self.proc.stdout.readline().strip()
        if not self.endpoint:
            raise RuntimeError("the S3 proxy did not start")

    def cut(self, seconds):
        self.proc.stdin.write("cut %g\n" % seconds)
        self.proc.stdin.flush()
        if self.proc.stdout.readline().strip() != "restored":
            raise RuntimeError("the S3 proxy died during the outage")

    def stop(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


# ---- radosgw ---------------------------------------------------------------

def start_radosgw(work):
    """A throwaway radosgw under work/radosgw; (dir, env). Up to three tries,
    as tests/s3/run.sh retries: on a busy machine (another Ceph cluster
    starting beside it) the OSD has been seen to miss its start deadline
    twice in a row."""
    d = os.path.join(work, "radosgw")
    err = ""
    for _attempt in range(3):
        r = subprocess.run([RADOSGW, "start", d], capture_output=True, text=True)
        if r.returncode == 0:
            env = {}
            for line in open(os.path.join(d, "env")):
                for word in shlex.split(line):
                    k, _, v = word.partition("=")
                    env[k] = v
            return d, env
        err = r.stderr.strip()[-400:]
        if os.path.exists(os.path.join(d, "pids")):
            subprocess.run([RADOSGW, "stop", d], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)
    raise RuntimeError("radosgw did not start: " + err)


ACCESS_RE = re.compile(r' beast: \S+ \S+ - \S+ \[([^\]]+)\] "(\w+) (\S+) HTTP/[\d.]+" (\d+) (\d+)')


def store_requests(rgw_dir, since, until):
    """radosgw's requests between two wall-clock times (its access log,
    `beast:` lines, one per request), by kind, with response bytes."""
    out = {}
    path = os.path.join(rgw_dir, "log", "client.rgw.a.log")
    try:
        f = open(path, errors="replace")
    except OSError:
        return None
    with f:
        for line in f:
            m = ACCESS_RE.search(line)
            if not m:
                continue
            when = datetime.datetime.strptime(m.group(1), "%d/%b/%Y:%H:%M:%S.%f %z").timestamp()
            if not since <= when <= until:
                continue
            method, target = m.group(2), m.group(3)
            path_part, _, query = target.partition("?")
            if method == "GET" and path_part.strip("/").count("/") == 0:
                kind = "LIST"
            elif method == "POST" and re.search(r"(^|&)delete(=|&|$)", query):
                kind = "DELETE_MULTI"
            else:
                kind = method
            k = out.setdefault(kind, {"requests": 0, "response_bytes": 0, "errors": 0})
            k["requests"] += 1
            k["response_bytes"] += int(m.group(5))
            if int(m.group(4)) >= 500:
                k["errors"] += 1
    return out


# ---- sampling ----------------------------------------------------------------

def http_json(url, timeout):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


def table_rows_now(brokers, skip):
    """The table's row count from its current snapshot, via the REST catalog
    of the first broker not under a fault; None when none answers."""
    for b in brokers:
        if b.name in skip or not b.alive():
            continue
        try:
            lt = http_json("%s/v1/namespaces/default/tables/%s" % (b.http_url, TOPIC), 5)
        except Exception:  # noqa: BLE001 - no table yet, or this broker cannot answer
            continue
        md = lt.get("metadata", {})
        cur = md.get("current-snapshot-id")
        if cur is None or cur < 0:
            return 0
        for s in md.get("snapshots", []):
            if s.get("snapshot-id") == cur:
                return int(s.get("summary", {}).get("total-records", 0))
    return None


def loop_lag(b):
    """GET /health's "loop" object ({"lag_ms", "max_lag_ms", ...}); None when
    the broker reports no loop lag, "unreachable" when it does not answer."""
    try:
        h = http_json(b.http_url + "/health", 2)
    except Exception:  # noqa: BLE001
        return "unreachable"
    return h.get("loop") if isinstance(h, dict) else None


class Probe:
    """A client's view of one broker's event loop: an ApiVersions request
    (answered on the loop, no store or metadata work) on a connection of its
    own, timed from send to the whole answer; reconnects after an error."""

    def __init__(self, b):
        self.b, self.sock, self.corr = b, None, 0

    def rtt_ms(self):
        self.corr += 1
        body = struct.pack(">hhih", 18, 0, self.corr, 5) + b"probe"
        try:
            if self.sock is None:
                self.sock = socket.create_connection((self.b.host, self.b.port), timeout=5)
            t = time.monotonic()
            self.sock.sendall(struct.pack(">i", len(body)) + body)
            need, got = None, b""
            while need is None or len(got) < need:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise OSError("closed")
                got += chunk
                if need is None and len(got) >= 4:
                    need = 4 + struct.unpack(">i", got[:4])[0]
            if struct.unpack(">i", got[4:8])[0] != self.corr:
                raise OSError("answer to another request")
            return round((time.monotonic() - t) * 1000, 1)
        except OSError:
            self.close()
            return None

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def reported_table_lag_ms(b):
    """The broker's own table lag (`lakestream tables show`), or None."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}
    try:
        out = subprocess.run([lsbroker.binary_path(), "tables", "--bootstrap", b.bootstrap,
                              "show", TOPIC], capture_output=True, text=True, timeout=5,
                             env=env).stdout
    except subprocess.TimeoutExpired:
        return None
    m = re.search(r"table lag: (\d+) ms", out)
    return int(m.group(1)) if m else None


# ---- checks ----------------------------------------------------------------

def in_windows(t, windows):
    return any(a <= t <= b for a, b in windows)


def percentile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def read_log(bootstrap, parts, timeout):
    """{(partition, offset): value} of every record up to the high
    watermarks, read from the start; and whether every partition got there."""
    wm = watermarks(bootstrap, TOPIC, parts)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-cluster-verify",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in parts if wm[p][1] > 0])
    log, left = {}, {p for p in parts if wm[p][1] > 0}
    deadline = time.monotonic() + timeout
    try:
        while left and time.monotonic() < deadline:
            for m in c.consume(num_messages=1000, timeout=1):
                if m.error():
                    continue
                log[(m.partition(), m.offset())] = m.value()
                if m.offset() + 1 >= wm[m.partition()][1]:
                    left.discard(m.partition())
    finally:
        c.close()
    return log, not left


def read_table(http_url, creds):
    from pyiceberg.catalog import load_catalog
    cat = load_catalog("ls", type="rest", uri=http_url, **creds)
    rows = cat.load_table(("default", TOPIC)).scan(
        selected_fields=("partition", "offset", "value")).to_arrow()
    return list(zip(rows.column("partition").to_pylist(), rows.column("offset").to_pylist(),
                    rows.column("value").to_pylist()))


def error_lines(b):
    """(seconds since the epoch, line) of each ERROR line in the broker's logs."""
    out = []
    for line in b.log_text().splitlines():
        if lsbroker.DIAG_ERROR_RE.search(line):
            try:
                when = datetime.datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                    tzinfo=datetime.timezone.utc).timestamp()
            except ValueError:
                when = None
            out.append((when, line))
    return out


def stop_broker(b, log_dir, wait=60):
    """SIGTERM; the exit code, or what went wrong. A broker still running
    after `wait` seconds has its threads' stacks written next to its log
    (gdb, when installed) before it is killed: a hung stop is a finding."""
    if b.alive():
        b.proc.send_signal(signal.SIGTERM)
        try:
            b.proc.wait(wait)
        except subprocess.TimeoutExpired:
            path = os.path.join(log_dir, "%s-stacks-at-hung-stop.txt" % b.name)
            try:
                out = subprocess.run(["gdb", "-p", str(b.pid), "-batch", "-ex",
                                      "thread apply all bt"], capture_output=True, text=True,
                                     timeout=120).stdout
                with open(path, "w") as f:
                    f.write(out)
            except (OSError, subprocess.TimeoutExpired):
                path = None
            b.kill9()
            return "no exit within %d s of SIGTERM (killed; stacks: %s)" % (
                wait, os.path.basename(path) if path else "gdb not available")
    try:
        return b.stop()
    except lsbroker.BrokerError as e:
        return str(e)


def judge(report, a):
    """The checks on the samples (table lag, loop lag, the brokers' own
    lags) against report["faults"]; also run by --judge on a saved report."""
    checks, m, samples = report["checks"], report["measured"], report["samples"]
    t_end = m["produce_phase_s"]
    names = sorted({n for s in samples for n in s["brokers"]})
    # fault windows: strike .. end + recovery; the loop lag's 20 s look-back on top
    warm = (-1.0, a.warmup_seconds)
    windows = [warm] + [(f["start"], f["end"] + a.recovery_seconds) for f in report["faults"]]
    loop_windows = [warm] + [(f["start"], f["end"] + a.recovery_seconds + LOOP_WINDOW_S)
                             for f in report["faults"]]
    report["fault_windows"] = {"table": windows, "loop": loop_windows}
    clean = [s for s in samples if not in_windows(s["t"], windows) and s["t"] <= t_end]

    def reported(s, name):
        v = s["brokers"].get(name)
        return v.get("reported_table_lag_ms") if isinstance(v, dict) else None

    # table lag: the client's lower bound, or a broker's own figure if higher
    # (one partition behind the others shows there, not in the row count)
    over, lags, unanswered = [], [], 0
    for s in clean:
        if s.get("table_lag_ms") is None:
            unanswered += 1
            continue
        lag = max([s["table_lag_ms"]] + [r for r in (reported(s, n) for n in names)
                                         if r is not None])
        lags.append(lag)
        if lag > a.max_table_lag_ms:
            over.append({"t": s["t"], "lag_ms": lag, "client_ms": s["table_lag_ms"],
                         "load1": s["load1"]})
    if not lags:
        report["notes"].append("table lag: no sample outside the fault windows (a run shorter "
                               "than ~240 s has none); not a pass")
    checks["table_lag"] = {
        "ok": bool(lags) and not over and unanswered == 0,
        "max_ms_outside_faults": max(lags, default=None),
        "client_max_ms_outside_faults": max((s["table_lag_ms"] for s in clean
                                             if s.get("table_lag_ms") is not None), default=None),
        "samples_outside_faults": len(lags), "unanswered_outside_faults": unanswered,
        "over_limit": over[:20],
        "client_max_ms_in_fault_windows": max((s["table_lag_ms"] for s in samples
                                               if in_windows(s["t"], windows)
                                               and s.get("table_lag_ms") is not None),
                                              default=None)}
    # each broker's own lag: reported at every clean sample, within the limit
    # of the other brokers', never below the client's lower bound by more
    agree, spread_over = {}, []
    for name in names:
        unreported, below = 0, []
        for s in clean:
            if not isinstance(s["brokers"].get(name), dict) or s.get("table_lag_ms") is None:
                continue
            r = reported(s, name)
            if r is None:
                unreported += 1
            elif r < s["table_lag_ms"] - a.max_lag_disagreement_ms:
                below.append({"t": s["t"], "reported_ms": r, "client_ms": s["table_lag_ms"]})
        agree[name] = {"max_reported_ms_outside_faults": max(
            (r for r in (reported(s, name) for s in clean) if r is not None), default=None),
            "unreported_outside_faults": unreported, "below_client_measure": below[:10]}
    for s in clean:
        rs = [r for r in (reported(s, n) for n in names) if r is not None]
        if len(rs) > 1 and max(rs) - min(rs) > a.max_lag_disagreement_ms:
            spread_over.append({"t": s["t"], "reported_ms": {n: reported(s, n) for n in names}})
    checks["reported_table_lag_agrees"] = {
        "ok": not spread_over and all(v["unreported_outside_faults"] == 0
                                      and not v["below_client_measure"]
                                      for v in agree.values()),
        "brokers": agree, "spread_over_limit": spread_over[:10]}
    # loop lag from /health
    loop, measured = {}, False
    for name in names:
        outside, inside, unreachable, over = [], [], 0, []
        for s in samples:
            v = s["brokers"].get(name)
            if not isinstance(v, dict):
                continue
            lv, faulty = v.get("loop"), in_windows(s["t"], loop_windows) or s["t"] > t_end
            if lv == "unreachable":
                unreachable += 0 if faulty else 1
                continue
            if not isinstance(lv, dict) or "lag_ms" not in lv:
                continue
            measured = True
            (inside if faulty else outside).append(lv["lag_ms"])
            if not faulty and lv["lag_ms"] >= a.max_loop_lag_ms:
                over.append({"t": s["t"], "lag_ms": lv["lag_ms"], "load1": s["load1"]})
        loop[name] = {"max_lag_ms_outside_faults": max(outside, default=None),
                      "max_lag_ms_in_fault_windows": max(inside, default=None),
                      "samples_outside_faults": len(outside),
                      "health_unreachable_outside_faults": unreachable, "over_limit": over[:10]}
    if measured:
        checks["loop_lag"] = {"ok": all(v["samples_outside_faults"] > 0 and not v["over_limit"]
                                        and v["health_unreachable_outside_faults"] == 0
                                        for v in loop.values()), "brokers": loop}
    else:
        checks["loop_lag"] = {"ok": None, "brokers": loop,
                              "note": "not measured: GET /health of this broker build has no "
                                      "\"loop\" object"}
    rtt = {}
    for name in names:
        vals = {True: [], False: []}
        for s in samples:
            v = s["brokers"].get(name)
            if isinstance(v, dict) and v.get("apiversions_rtt_ms") is not None:
                vals[in_windows(s["t"], loop_windows)].append(v["apiversions_rtt_ms"])
        rtt[name] = {"outside_faults": {"n": len(vals[False]),
                                        "p50_ms": percentile(vals[False], 0.5),
                                        "max_ms": max(vals[False], default=None)},
                     "in_fault_windows_max_ms": max(vals[True], default=None)}
    m["apiversions_round_trip"] = rtt
    report["ok"] = all(c["ok"] is not False for c in checks.values())


# ---- the run -------------------------------------------------------------------

def run(a, work):
    report = {"seconds": a.seconds, "rate": a.rate, "record_bytes": a.record_bytes,
              "partitions": PARTITIONS, "brokers": BROKERS, "commit_interval_ms": COMMIT_MS,
              "broker_args": a.broker_arg, "binary": lsbroker.binary_path(),
              "limits": {"table_lag_ms": a.max_table_lag_ms, "loop_lag_ms": a.max_loop_lag_ms,
                         "recovery_s": a.recovery_seconds, "warmup_s": a.warmup_seconds},
              "faults": [], "checks": {}, "measured": {}, "notes": [], "samples": []}
    cleanup = []
    try:
        return _run(a, work, report, cleanup)
    finally:
        for fn in reversed(cleanup):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - stop everything else regardless
                report["notes"].append("cleanup: %r" % e)


def _run(a, work, report, cleanup):
    t_setup = time.monotonic()
    etcd = Etcd(work)
    cleanup.append(etcd.stop)
    rgw_dir, rgw = start_radosgw(work)
    cleanup.append(lambda: subprocess.run([RADOSGW, "stop", rgw_dir], capture_output=True))
    proxy = StoreProxy(rgw["LS_TEST_S3_ENDPOINT"].split("//", 1)[1])
    cleanup.append(proxy.stop)
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        os.environ[k] = rgw[k]
    run_id = uuid.uuid4().hex[:8]
    store_url = "s3://%s/soak-cluster-%s?endpoint=http://%s&region=%s" % (
        rgw["LS_TEST_S3_BUCKET"], run_id, proxy.endpoint, rgw["AWS_REGION"])
    meta_url = "etcd://%s/soak-cluster-%s" % (etcd.endpoint, run_id)
    nodes = []
    for i in range(1, BROKERS + 1):
        b = lsbroker.Broker(os.path.join(work, "node%d" % i), os.path.join(work, "logs"),
                            ["--broker.id=%d" % i, "--metadata.url=" + meta_url,
                             "--object.store.url=" + store_url] + a.broker_arg,
                            name="node%d" % i)
        b.startup_timeout = 180.0   # a restart after kill -9 was seen taking 33 s on S3
        nodes.append(b)
        cleanup.append(b.kill9)      # whatever is still running at the end (reaped, by PID)
        b.start()
    bootstrap = ",".join(b.bootstrap for b in nodes)
    report["setup_s"] = round(time.monotonic() - t_setup, 1)
    create_topic(bootstrap, TOPIC, partitions=PARTITIONS,
                 config={"lakestream.table.enabled": "true",
                         "lakestream.table.commit.interval.ms": str(COMMIT_MS)})

    acked = {}             # value -> (partition, offset)
    ack_times = []         # seconds since t0 of each acknowledgement, in order
    latencies = []         # (ack time, produce latency s)
    failed = []
    consumed = set()
    faults = report["faults"]
    faulted = set()        # brokers the sampler must not wait on
    probes = {b.name: Probe(b) for b in nodes}
    stop = threading.Event()
    t0 = time.monotonic()
    wall0 = time.time()

    def rel():
        return time.monotonic() - t0

    def on_delivery(err, msg):
        if err is not None:
            failed.append(str(err))
            return
        now = rel()
        acked[msg.value()] = (msg.partition(), msg.offset())
        ack_times.append(now)
        latencies.append((now, msg.latency()))

    def consumer_loop():
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-cluster-group",
                      "auto.offset.reset": "earliest"})
        c.subscribe([TOPIC])
        while not stop.is_set():
            for m in c.consume(num_messages=1000, timeout=0.5):
                if m.error() is None:
                    consumed.add(m.value())
        c.close()

    def sampler_loop():
        while not stop.wait(a.sample_seconds):
            s = {"t": round(rel(), 1), "load1": round(os.getloadavg()[0], 2)}
            n = table_rows_now(nodes, faulted)
            now, acks = rel(), len(ack_times)
            s["acked"], s["consumed"], s["table_rows"] = acks, len(consumed), n
            if n is not None:
                s["table_lag_ms"] = 0 if n >= acks else int((now - ack_times[n]) * 1000)
            s["brokers"] = {}
            for b in nodes:
                if b.name in faulted or not b.alive():
                    s["brokers"][b.name] = "faulted"
                    probes[b.name].close()
                    continue
                s["brokers"][b.name] = {"apiversions_rtt_ms": probes[b.name].rtt_ms(),
                                        "loop": loop_lag(b),
                                        "reported_table_lag_ms": reported_table_lag_ms(b),
                                        "rss_mb": round(lsbroker.rss_mb(b.pid) or 0, 1)}
            report["samples"].append(s)

    def nemesis_loop():
        plan = [(a.seconds / 4, "kill", nodes[0]), (a.seconds / 2, "pause", nodes[1]),
                (a.seconds * 3 / 4, "store", None)]
        for at, kind, victim in plan:
            if stop.wait(max(0.0, at - rel())):
                return
            f = {"kind": kind, "start": round(rel(), 1)}
            if victim is not None:
                f["broker"] = victim.name
                faulted.add(victim.name)
            try:
                if kind == "kill":
                    victim.kill9()
                    t_kill = rel()
                    try:
                        victim.start()
                    except lsbroker.BrokerError as e:
                        f["error"] = str(e)[:500]
                    f["restart_to_serving_s"] = round(rel() - t_kill, 1)
                elif kind == "pause":
                    os.kill(victim.pid, signal.SIGSTOP)
                    try:
                        time.sleep(a.pause_seconds)
                    finally:
                        os.kill(victim.pid, signal.SIGCONT)
                else:
                    proxy.cut(a.outage_seconds)
            finally:
                if victim is not None:
                    faulted.discard(victim.name)
                f["end"] = round(rel(), 1)
                faults.append(f)
                print("nemesis: %s" % json.dumps(f), flush=True)

    threads = [threading.Thread(target=consumer_loop), threading.Thread(target=sampler_loop),
               threading.Thread(target=nemesis_loop)]
    for t in threads:
        t.start()
    try:
        p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
        pad = b"x" * max(0, a.record_bytes - 13)
        i = 0
        while rel() < a.seconds:
            value = b"cs-%09d-" % i + pad
            while True:
                try:
                    p.produce(TOPIC, value=value, on_delivery=on_delivery)
                    break
                except BufferError:
                    p.poll(0.05)
            i += 1
            p.poll(0)
            ahead = i / a.rate - rel()
            if ahead > 0:
                time.sleep(ahead)
        produced = i
        unflushed = p.flush(300)
        t_end = rel()
        report["measured"]["produce_phase_s"] = round(t_end, 1)

        # the table and the group catch up (the samples go on meanwhile)
        deadline = time.monotonic() + a.catch_up_seconds
        caught_up = None
        while time.monotonic() < deadline:
            last = report["samples"][-1] if report["samples"] else {}
            if (last.get("t", 0) > t_end and (last.get("table_rows") or 0) >= len(acked)
                    and len(consumed) >= len(acked)):
                caught_up = round(last["t"] - t_end, 1)
                break
            time.sleep(0.5)
        report["measured"]["table_and_group_caught_up_after_s"] = caught_up
    finally:
        stop.set()
        for t in threads:
            t.join()

    # ---- checks ----
    checks, m = report["checks"], report["measured"]
    m["produced"], m["acknowledged"], m["produce_failures"] = produced, len(acked), len(failed)
    m["unflushed"] = unflushed
    m["acknowledged_payload_bytes"] = sum(len(v) for v in acked)
    log, complete = read_log(bootstrap, list(range(PARTITIONS)), 300)
    m["log_records"] = len(log)
    lost = [v for v, where in acked.items() if log.get(where) != v]
    values = list(log.values())
    dups = len(values) - len(set(values))
    strangers = [v for v in values if not v.startswith(b"cs-") or int(v[3:12]) >= produced]
    checks["log_exact"] = {"ok": complete and not lost and dups == 0 and not strangers,
                           "read_to_end": complete, "lost": len(lost), "duplicated": dups,
                           "never_produced": len(strangers),
                           "lost_examples": [v[:12].decode() for v in lost[:5]]}
    creds = {"s3.access-key-id": rgw["AWS_ACCESS_KEY_ID"],
             "s3.secret-access-key": rgw["AWS_SECRET_ACCESS_KEY"]}
    try:
        rows = read_table(nodes[0].http_url, creds)
        keys = [(r[0], r[1]) for r in rows]
        table_dups = len(keys) - len(set(keys))
        want = {k: v for k, v in log.items()}
        got = {(pp, o): v for pp, o, v in rows}
        checks["table_equals_log"] = {
            "ok": table_dups == 0 and got == want, "rows": len(rows), "duplicated": table_dups,
            "missing": sum(1 for k in want if k not in got),
            "unexpected": sum(1 for k, v in got.items() if want.get(k) != v)}
    except Exception as e:  # noqa: BLE001 - a table that cannot be read fails the check
        checks["table_equals_log"] = {"ok": False, "error": repr(e)[:500]}
    checks["group"] = {"ok": all(v in consumed for v in acked),
                       "missing": sum(1 for v in acked if v not in consumed)}

    for b in nodes:
        m.setdefault("slow_iteration_warnings", {})[b.name] = len(
            re.findall(r"event loop lag:", b.log_text()))
    judge(report, a)
    windows = [tuple(w) for w in report["fault_windows"]["table"]]
    samples = report["samples"]

    def lat_summary(xs):
        return {"n": len(xs), "p50_ms": round(percentile(xs, 0.5) * 1000, 1) if xs else None,
                "p99_ms": round(percentile(xs, 0.99) * 1000, 1) if xs else None,
                "max_ms": round(max(xs) * 1000, 1) if xs else None}
    m["produce_latency_outside_faults"] = lat_summary(
        [lat for t, lat in latencies if not in_windows(t, windows)])
    m["produce_latency_in_fault_windows"] = lat_summary(
        [lat for t, lat in latencies if in_windows(t, windows) and t > a.warmup_seconds])
    m["max_load_average_1m"] = max((s["load1"] for s in samples), default=None)
    m["max_rss_mb"] = {b.name: max((s["brokers"][b.name]["rss_mb"] for s in samples
                                    if isinstance(s["brokers"].get(b.name), dict)), default=None)
                       for b in nodes}

    # store requests per GB of acknowledged payload, over the produce phase
    reqs = store_requests(rgw_dir, wall0, wall0 + t_end)
    gb = m["acknowledged_payload_bytes"] / 1e9
    if reqs is not None and gb > 0:
        m["store_requests_per_gb"] = {k: round(v["requests"] / gb) for k, v in sorted(reqs.items())}
        m["store_requests_per_gb"]["all"] = round(sum(v["requests"] for v in reqs.values()) / gb)
        m["store_requests"] = reqs
        report["notes"].append(
            "store requests: radosgw's access log over the produce phase (the brokers count "
            "none themselves); the sampler's REST-catalog loads add about one metadata GET per "
            "sample")
    else:
        report["notes"].append("store requests: radosgw's access log not readable; skipped")

    # errors the brokers logged, in and outside the fault windows
    errs_in, errs_out = [], []
    for b in nodes:
        for when, line in error_lines(b):
            t = None if when is None else when - wall0
            (errs_in if t is not None and in_windows(t, windows) else errs_out).append(
                "%s: %s" % (b.name, line[:300]))
    m["broker_error_lines_in_fault_windows"] = len(errs_in)
    m["broker_error_lines_outside_faults"] = len(errs_out)
    report["broker_errors_outside_faults"] = errs_out[:20]
    report["broker_errors_in_fault_windows"] = errs_in[:20]

    rcs = {}
    for b in nodes:
        rcs[b.name] = stop_broker(b, os.path.join(work, "logs"))
    checks["brokers_exit_0"] = {"ok": all(rc == 0 for rc in rcs.values()), "exit_codes": rcs}
    for f in faults:
        if f.get("error"):
            report["notes"].append("fault %s: %s" % (f["kind"], f["error"]))
    checks["all_faults_struck"] = {"ok": len(faults) == 3 and not any(f.get("error") for f in faults),
                                   "struck": [f["kind"] for f in faults]}
    report["ok"] = all(c["ok"] is not False for c in checks.values())
    report["log_dir"] = os.path.join(work, "logs")
    return report


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--rate", type=float, default=2000, help="records per second")
    ap.add_argument("--record-bytes", type=int, default=100)
    ap.add_argument("--pause-seconds", type=float, default=20)
    ap.add_argument("--outage-seconds", type=float, default=15)
    ap.add_argument("--recovery-seconds", type=float, default=30)
    ap.add_argument("--warmup-seconds", type=float, default=30)
    ap.add_argument("--sample-seconds", type=float, default=3)
    ap.add_argument("--catch-up-seconds", type=float, default=180)
    ap.add_argument("--max-table-lag-ms", type=int, default=5 * COMMIT_MS)
    ap.add_argument("--max-loop-lag-ms", type=int, default=100)
    ap.add_argument("--max-lag-disagreement-ms", type=int, default=5000,
                    help="how far a broker's own table lag may be from the client's measure")
    ap.add_argument("--broker-arg", action="append", default=[],
                    help="extra broker flag for every broker (repeatable), e.g. "
                         "--broker-arg=--wal.flush.min.interval.ms=200")
    ap.add_argument("--json", help="write the report (with every sample) here")
    ap.add_argument("--keep-logs", default=os.path.join(lsbroker.ROOT, "build",
                                                         "soak-cluster-logs"),
                    help="where the brokers' logs go when a check fails")
    ap.add_argument("--judge", metavar="REPORT",
                    help="no run: the checks on the samples of a saved report (--json) "
                         "again, with this run's limits")
    ap.add_argument("--proxy-to", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.proxy_to:
        return proxy_main(a.proxy_to)
    if a.judge:
        with open(a.judge) as f:
            r = json.load(f)
        r["notes"] = [n for n in r["notes"] if not n.startswith("table lag: no sample")]
        judge(r, a)
        print(json.dumps({k: v for k, v in r.items() if k != "samples"}, indent=2))
        print("cluster soak (judged again): %s" % ("PASS" if r["ok"] else "FAIL"))
        return 0 if r["ok"] else 1
    work = tempfile.mkdtemp(prefix="lakestream-soak-cluster.")
    try:
        r = run(a, work)
    except BaseException:
        if os.path.isdir(os.path.join(work, "logs")):
            shutil.rmtree(a.keep_logs, ignore_errors=True)
            shutil.copytree(os.path.join(work, "logs"), a.keep_logs, dirs_exist_ok=True)
            print("cluster soak: broker logs in %s" % a.keep_logs, file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)
        raise
    if not r["ok"]:
        shutil.rmtree(a.keep_logs, ignore_errors=True)
        shutil.copytree(r["log_dir"], a.keep_logs, dirs_exist_ok=True)
        r["log_dir"] = a.keep_logs
    else:
        r["log_dir"] = None
    shutil.rmtree(work, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=2)
    summary = {k: v for k, v in r.items() if k not in ("samples",)}
    print(json.dumps(summary, indent=2))
    print("cluster soak: %s" % ("PASS" if r["ok"] else "FAIL"))
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
