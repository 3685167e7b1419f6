"""Start, stop, kill and restart the real `lakestream` binary for black-box tests.

Used by conftest.py (pytest fixtures) and, as a command-line wrapper, by
tests/run.sh for the non-Python suites:

    python lsbroker.py --name kafkajs [--arg=--key=value ...] -- node test.js

starts a broker on a free 127.0.0.1 port (and a free HTTP port) with a fresh
data.dir, runs the command with LS_TEST_BOOTSTRAP=127.0.0.1:PORT (and
LS_TEST_HTTP_URL, LS_TEST_REGISTRY_URL, LS_TEST_DATA_DIR) in its environment, then stops the broker with SIGTERM and prints one
"PASS <name>.broker_clean_shutdown" or "FAIL <name>.broker_clean_shutdown: ..."
line (exit code 0 and no ERROR / sanitizer lines in the broker's stderr).
The wrapper exits with the command's exit code, or 1 if the broker check failed.

The binary is $LAKESTREAM_BIN (default build/lakestream). If
$LS_TEST_EXTERNAL_BOOTSTRAP is set (host:port of an already running
Kafka-protocol server, e.g. librdkafka's mock cluster or a real Kafka), no
process is started; tests that need to restart or kill the broker skip.

LS_TEST_OBJECT_STORE=s3 (with LS_TEST_S3_URL and AWS_* from
tools/s3/radosgw.sh) runs every broker on a fresh prefix of that S3 bucket
instead of the local file store.

Nothing here sleeps for a fixed time: readiness and exit are polled.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# A diag line is "2025-01-01T00:00:00.000Z ERROR [module] message".
DIAG_ERROR_RE = re.compile(r"^\S+\s+ERROR\s")
SANITIZER_RES = [
    re.compile(r"ERROR: AddressSanitizer"),
    re.compile(r"ERROR: LeakSanitizer"),
    re.compile(r"runtime error: "),  # UBSan
    re.compile(r"SUMMARY: (Address|Undefined|Leak|Thread)Sanitizer"),
    re.compile(r"WARNING: ThreadSanitizer"),
]


def object_store_args(name):
    """Broker flags selecting the object store under test. LS_TEST_OBJECT_STORE
    unset or "file": none (the default file store under data.dir). "s3": a
    fresh prefix under $LS_TEST_S3_URL (tools/s3/radosgw.sh writes it and the
    AWS_* credentials, which the broker reads from its environment)."""
    kind = os.environ.get("LS_TEST_OBJECT_STORE", "file")
    if kind in ("", "file"):
        return []
    # flushes at once, as on the file store, so the suites keep their timing:
    # the S3 default batches for 200 ms (docs/OBJECT_STORES.md), which a test
    # gets back with --wal.flush.min.interval.ms=-1 (test_admin.py checks it)
    return ["--object.store.url=%s" % s3_store_url(name), "--wal.flush.min.interval.ms=0"]


def shared_object_store_url(name, directory):
    """One object store for several brokers (a cluster): a directory for the
    file store, a fresh S3 prefix when LS_TEST_OBJECT_STORE=s3."""
    if os.environ.get("LS_TEST_OBJECT_STORE", "file") in ("", "file"):
        os.makedirs(directory, exist_ok=True)
        return "file://" + os.path.abspath(directory)
    return s3_store_url(name)


def s3_store_url(name):
    kind = os.environ.get("LS_TEST_OBJECT_STORE")
    if kind != "s3":
        raise BrokerError("LS_TEST_OBJECT_STORE=%s: expected file or s3" % kind)
    base = os.environ.get("LS_TEST_S3_URL")
    if not base:
        raise BrokerError("LS_TEST_OBJECT_STORE=s3 needs LS_TEST_S3_URL (tools/s3/radosgw.sh)")
    loc, q, query = base.partition("?")
    url = "%s/%s-%s%s%s" % (loc.rstrip("/"), re.sub(r"[^A-Za-z0-9._-]", "-", name),
                            uuid.uuid4().hex[:12], q, query)
    return url


def rss_mb(pid):
    """Resident memory of a process in MiB (None once it is gone)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except (FileNotFoundError, TypeError):
        return None
    return None


def binary_path():
    b = os.environ.get("LAKESTREAM_BIN") or os.path.join(ROOT, "build", "lakestream")
    return os.path.abspath(b)


def sanitized_build(path):
    return "asan" in path


def free_ports(n, host="127.0.0.1"):
    """n distinct free ports. The sockets are held until all are bound: with
    many ports in TIME_WAIT the kernel hands the same free port to each
    bind of a closed socket, and a broker's three listeners then collide."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.bind((host, 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port(host="127.0.0.1"):
    return free_ports(1, host)[0]


def wait_until(cond, timeout, interval=0.01, what="condition"):
    """Polls cond() until it returns a truthy value; returns it or raises."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise TimeoutError("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(interval)
        interval = min(interval * 1.5, 0.2)


class BrokerError(Exception):
    pass


class Broker:
    """One broker process over one data dir. Survives restarts: start() may
    be called again after stop() or kill9() and reuses data dir and port."""

    host = "127.0.0.1"
    external = False

    def __init__(self, data_dir, log_dir=None, extra_args=(), binary=None, name="broker"):
        self.binary = binary or binary_path()
        self.data_dir = data_dir
        self.log_dir = log_dir or data_dir + ".logs"
        # the store flags come first so a test's own --object.store.url wins
        self.extra_args = object_store_args(name) + list(extra_args)
        self.name = name
        self.port = None
        self.http_port = None  # the HTTP server (Iceberg REST catalog); see http_url
        self.registry_port = None  # the schema registry; see registry_url
        self.proc = None
        self.starts = 0
        self.log_paths = []
        self.exit_codes = []
        self.allowed_error_res = []
        self.env_extra = {}    # e.g. {"LS_CRASH_AT": "wal.committed"} for the next start
        self.nofile = None     # RLIMIT_NOFILE (soft = hard) for the next start
        self._checked = {}  # log path -> bytes already checked
        slow = sanitized_build(self.binary)
        self.startup_timeout = 90.0 if slow else 30.0
        self.stop_timeout = 120.0 if slow else 60.0
        os.makedirs(self.log_dir, exist_ok=True)

    # ---- lifecycle -------------------------------------------------------

    @property
    def bootstrap(self):
        return "%s:%d" % (self.host, self.port)

    @property
    def http_url(self):
        """Base URL of the broker's HTTP server (Iceberg REST catalog at /v1).
        A test that passes --http.listen itself gets that address instead."""
        return "http://%s:%d" % (self.host, self.http_port)

    @property
    def registry_url(self):
        """Base URL of the broker's schema registry (schema.registry.listen).
        A test that passes --schema.registry.listen itself gets that address instead."""
        return "http://%s:%d" % (self.host, self.registry_port)

    def __iter__(self):
        """host, port, data_dir, broker = broker"""
        return iter((self.host, self.port, self.data_dir, self))

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1:abort_on_error=0")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        env.update(self.env_extra)
        return env

    def argv(self):
        return [self.binary, "serve",
                "--data.dir=%s" % self.data_dir,
                "--listeners=%s:%d" % (self.host, self.port),
                # every broker gets its own free HTTP ports, so parallel tests never
                # collide; a test's own --http.listen / --schema.registry.listen
                # (later) wins
                "--http.listen=%s:%d" % (self.host, self.http_port),
                "--schema.registry.listen=%s:%d" % (self.host, self.registry_port)] + self.extra_args

    def start(self):
        if self.alive():
            raise BrokerError("broker already running (pid %d)" % self.proc.pid)
        if not os.path.exists(self.binary):
            raise BrokerError("broker binary %s does not exist (build it first)" % self.binary)
        fixed_port = self.port is not None
        for attempt in range(5):
            if not fixed_port:
                self.port, self.http_port, self.registry_port = free_ports(3, self.host)
            self._spawn()
            try:
                self._wait_ready()
                return self
            except BrokerError:
                if not fixed_port and self.proc.poll() is not None and \
                        re.search(r"(?i)address already in use|EADDRINUSE", self.log_tail(20)):
                    # lost the race for the port: forget this attempt, pick another
                    self.exit_codes.pop()
                    self.log_paths.pop()
                    continue
                raise
        raise BrokerError("could not bind a free port after 5 attempts")

    def _spawn(self):
        self.starts += 1
        path = os.path.join(self.log_dir, "%s-%d.log" % (self.name, self.starts))
        self.log_paths.append(path)
        with open(path, "wb") as logf:
            logf.write(("# %s\n" % " ".join(self.argv())).encode())
            logf.flush()
            preexec = None
            if self.nofile:
                import resource
                n = self.nofile
                preexec = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=logf,
                                         stderr=logf, env=self._env(), cwd=self.log_dir,
                                         start_new_session=True, preexec_fn=preexec)

    def _wait_ready(self):
        deadline = time.monotonic() + self.startup_timeout
        interval = 0.005
        while True:
            rc = self.proc.poll()
            if rc is not None:
                self.exit_codes.append(rc)
                raise BrokerError("broker exited with code %d during startup; log tail:\n%s"
                                  % (rc, self.log_tail(30)))
            try:
                # accepting is not enough: the broker registers in the cluster
                # after its listener binds, and says so once it is done
                with socket.create_connection((self.host, self.port), timeout=1.0):
                    if self._started_line():
                        return
            except OSError:
                pass
            if time.monotonic() >= deadline:
                self.kill9()
                raise BrokerError("broker did not accept connections on %s within %.0fs; log tail:\n%s"
                                  % (self.bootstrap, self.startup_timeout, self.log_tail(30)))
            time.sleep(interval)
            interval = min(interval * 1.5, 0.1)

    def _started_line(self):
        """True once this start's log has the broker's "serving Kafka" line,
        the last step of its startup (cluster registration included)."""
        try:
            with open(self.log_paths[-1], "rb") as f:
                return b" serving Kafka on " in f.read()
        except OSError:
            return False

    def stop(self, timeout=None):
        """SIGTERM and wait; returns the exit code (None if it was not running).
        A broker that does not exit in time is killed and BrokerError raised."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout or self.stop_timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.exit_codes.append("hung")
                self.proc = None
                raise BrokerError("broker did not exit within %.0fs of SIGTERM (killed)"
                                  % (timeout or self.stop_timeout))
        rc = self.proc.returncode
        self.exit_codes.append(rc)
        self.proc = None
        return rc

    def kill9(self):
        """SIGKILL and reap. The data dir is left as the crash left it."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                # the broker runs in its own session: take any helper
                # processes it may have started down with it
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        self.exit_codes.append("killed")
        self.proc = None

    def wait_crashed(self, timeout=60):
        """Waits for the broker to die by SIGKILL on its own (a crash point);
        the exit is recorded like kill9's."""
        if self.proc is None:
            raise BrokerError("broker is not running")
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise BrokerError("broker did not crash within %ss; log tail:\n%s"
                              % (timeout, self.log_tail(30)))
        if rc != -signal.SIGKILL:
            self.exit_codes.append(rc)
            raise BrokerError("broker exited with %s, not by SIGKILL; log tail:\n%s"
                              % (rc, self.log_tail(30)))
        self.exit_codes.append("killed")
        self.proc = None

    def restart(self, graceful=True):
        """Stops (SIGTERM, asserting exit 0) or kill -9s, then starts again on
        the same data dir and port."""
        if graceful:
            rc = self.stop()
            if rc not in (0, None):
                raise BrokerError("broker exited with code %s on SIGTERM; log tail:\n%s"
                                  % (rc, self.log_tail(30)))
        else:
            self.kill9()
        return self.start()

    # ---- logs ------------------------------------------------------------

    def allow_errors(self, pattern):
        """Tells the teardown check that ERROR lines matching pattern are expected."""
        self.allowed_error_res.append(re.compile(pattern))

    def object_location(self, sub):
        """Where `sub` (e.g. "warehouse/default/t") of this broker's object
        store is for a reader that opens it itself, and the options a delta-rs
        (object_store) reader needs there: a local path on the file store;
        s3://bucket/prefix/sub with radosgw's endpoint and credentials on S3."""
        url = None
        for a in self.extra_args:
            if a.startswith("--object.store.url="):
                url = a.split("=", 1)[1]
        if url is None or url.startswith("file://"):
            return os.path.join(url[len("file://"):] if url else
                                os.path.join(self.data_dir, "objects"), sub), {}
        import urllib.parse
        u = urllib.parse.urlparse(url)
        q = dict(urllib.parse.parse_qsl(u.query))
        loc = "s3://%s/%s" % (u.netloc, "/".join(x for x in (u.path.strip("/"), sub.strip("/"))
                                                  if x))
        return loc, {"aws_endpoint": q["endpoint"], "aws_allow_http": "true",
                     "aws_region": q.get("region", "us-east-1"),
                     "aws_access_key_id": os.environ["AWS_ACCESS_KEY_ID"],
                     "aws_secret_access_key": os.environ["AWS_SECRET_ACCESS_KEY"],
                     "aws_virtual_hosted_style_request": "false"}

    def object_keys(self, sub):
        """The keys under `sub` (e.g. "warehouse/default/t") of this broker's
        object store, relative to `sub`: the directory under data.dir for
        the file store, a listing of the bucket prefix for S3."""
        url = None
        for a in self.extra_args:
            if a.startswith("--object.store.url="):
                url = a.split("=", 1)[1]
        if url is None or url.startswith("file://"):
            root = os.path.join(url[len("file://"):] if url else
                                os.path.join(self.data_dir, "objects"), sub)
            return {os.path.relpath(os.path.join(d, f), root)
                    for d, _, fs in os.walk(root) for f in fs}
        import urllib.parse
        from pyarrow import fs
        u = urllib.parse.urlparse(url)
        q = dict(urllib.parse.parse_qsl(u.query))
        ep = urllib.parse.urlparse(q["endpoint"])
        s3 = fs.S3FileSystem(access_key=os.environ["AWS_ACCESS_KEY_ID"],
                             secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
                             endpoint_override=ep.netloc, scheme=ep.scheme,
                             region=q.get("region", "us-east-1"))
        base = "%s/%s/%s" % (u.netloc, u.path.strip("/"), sub.strip("/"))
        base = base.replace("//", "/")
        sel = fs.FileSelector(base, recursive=True, allow_not_found=True)
        return {os.path.relpath(i.path, base) for i in s3.get_file_info(sel)
                if i.type == fs.FileType.File}

    def log_text(self):
        out = []
        for p in self.log_paths:
            try:
                with open(p, "rb") as f:
                    out.append(f.read().decode("utf-8", "replace"))
            except FileNotFoundError:
                pass
        return "".join(out)

    def log_tail(self, n=40):
        lines = self.log_text().splitlines()
        return "\n".join(lines[-n:])

    def problems(self, only_new=False):
        """ERROR lines (not allowed) and sanitizer reports in the logs.
        only_new: just what was written since the last only_new call."""
        found = []
        for p in self.log_paths:
            try:
                with open(p, "rb") as f:
                    start = self._checked.get(p, 0) if only_new else 0
                    f.seek(start)
                    data = f.read()
            except FileNotFoundError:
                continue
            if only_new:
                # only look at complete lines
                cut = data.rfind(b"\n") + 1
                data = data[:cut]
                self._checked[p] = start + cut
            for line in data.decode("utf-8", "replace").splitlines():
                if any(r.search(line) for r in SANITIZER_RES):
                    found.append(line)
                elif DIAG_ERROR_RE.search(line) and not any(r.search(line) for r in self.allowed_error_res):
                    found.append(line)
        return found

    def final_check(self):
        """Stops the broker if running and returns a list of failure strings
        (empty when it exited 0 every time it was stopped and logged no errors)."""
        failures = []
        if self.proc is not None:
            try:
                self.stop()
            except BrokerError as e:
                failures.append(str(e))
        bad_rcs = [rc for rc in self.exit_codes if rc not in (0, "killed")]
        if bad_rcs:
            failures.append("broker exit codes %s (want 0 on SIGTERM)" % (self.exit_codes,))
        probs = self.problems()
        if probs:
            failures.append("broker logged %d error/sanitizer line(s):\n  %s"
                            % (len(probs), "\n  ".join(probs[:20])))
        if failures:
            failures.append("broker log tail (%s):\n%s" % (", ".join(self.log_paths), self.log_tail(40)))
        return failures


class ExternalBroker:
    """A server someone else runs ($LS_TEST_EXTERNAL_BOOTSTRAP)."""

    external = True
    proc = None
    pid = None
    http_url = None  # unknown: tests of the HTTP server skip
    registry_url = None  # unknown: tests of the schema registry skip

    def __init__(self, bootstrap):
        self.host, port = bootstrap.rsplit(":", 1)
        self.port = int(port)
        self.data_dir = None
        self.log_paths = []

    @property
    def bootstrap(self):
        return "%s:%d" % (self.host, self.port)

    def __iter__(self):
        return iter((self.host, self.port, self.data_dir, self))

    def alive(self):
        return True

    def start(self):
        return self

    def allow_errors(self, pattern):
        pass

    def problems(self, only_new=False):
        return []

    def final_check(self):
        return []

    def log_tail(self, n=40):
        return "(external broker: no log)"

    def _unsupported(self, *a, **k):
        import pytest
        pytest.skip("needs a broker process this harness controls")

    stop = kill9 = restart = _unsupported


def external_bootstrap():
    return os.environ.get("LS_TEST_EXTERNAL_BOOTSTRAP") or None


def _main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", default="suite")
    ap.add_argument("--arg", action="append", default=[], help="extra broker argument")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("no command")
    check = "%s.broker_clean_shutdown" % a.name
    ext = external_bootstrap()
    tmp = None
    if ext:
        broker = ExternalBroker(ext)
    else:
        tmp = tempfile.mkdtemp(prefix="lakestream-%s-" % a.name)
        broker = Broker(os.path.join(tmp, "data"), os.path.join(tmp, "logs"), a.arg, name=a.name)
        try:
            broker.start()
        except BrokerError as e:
            print("FAIL %s: %s" % (check, str(e).replace("\n", "\n    ")), flush=True)
            return 1
    # A suite cut by its guard's `timeout` (SIGTERM to this process group) must
    # not leave the broker, which runs in its own session, serving on.
    def on_term(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # timeout sends two
        print("FAIL %s: stopped by SIGTERM (suite timed out?)" % a.name, flush=True)
        if not ext:
            broker.kill9()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    env = dict(os.environ)
    env["LS_TEST_BOOTSTRAP"] = broker.bootstrap
    if broker.http_url:
        env["LS_TEST_HTTP_URL"] = broker.http_url
    if broker.registry_url:
        env["LS_TEST_REGISTRY_URL"] = broker.registry_url
    if broker.data_dir:
        env["LS_TEST_DATA_DIR"] = broker.data_dir
    try:
        rc = subprocess.call(cmd, env=env)
    except OSError as e:
        print("FAIL %s: cannot run %s: %s" % (a.name, cmd[0], e), flush=True)
        rc = 1
    if not broker.alive():
        print("FAIL %s.broker_alive: broker died during the suite; log tail:\n%s"
              % (a.name, broker.log_tail(30)), flush=True)
    failures = broker.final_check()
    if failures:
        print("FAIL %s: %s" % (check, "\n    ".join(failures)), flush=True)
        rc = rc or 1
    elif not ext:
        print("PASS %s" % check, flush=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
