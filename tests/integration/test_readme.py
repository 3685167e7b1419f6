"""Every example of README.md runs as written.

The fenced ```sh and ```python blocks are taken from README.md in order and
run the way a newcomer runs them after `make run`: against a broker started
as `make run` starts it (`build/lakestream serve`, default ports and
./data), from the folder it runs in; the Python blocks in one session (later
blocks use names earlier ones define, as a reader's interpreter would), the
sh blocks with sh -e. Examples name the default ports (9092, 8181, 8081,
etcd's 2379), so everything runs in a network namespace of its own
(`unshare -rn`): nothing else on the machine can hold those ports, and test
lanes running at once never meet.

A block may be marked by an HTML comment on the line before its fence:
  <!-- readme-test: skip (why) -->     not run; the reason is required
  <!-- readme-test: cluster (...) -->  starts brokers in the background: run
      alone, after the others, with an etcd on 127.0.0.1:2379, until every
      broker it starts (each --broker.id=N) is listed in Metadata; then they
      are stopped.
Keep skips few: each says which test covers what it shows."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import lsbroker  # noqa: E402

README = os.path.join(lsbroker.ROOT, "README.md")
MARK_RE = re.compile(r"^<!-- readme-test: (skip|cluster) \((.+)\) -->$")
FENCE_RE = re.compile(r"^```(\w*)\s*$")
TIMEOUT = 240  # the Python session (the walk through the README); it takes seconds


def readme_blocks(path=README):
    """[(line, lang, mark, code)] of the README's fenced sh/python blocks;
    line is the fence's line number, mark None, "skip" or "cluster"."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = FENCE_RE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        prev = lines[start - 1] if start > 0 else ""
        mm = MARK_RE.match(prev)
        if prev.startswith("<!-- readme-test") and not mm:
            raise AssertionError("README.md:%d: malformed marker %r" % (start, prev))
        if lang in ("sh", "python"):
            out.append((start + 1, lang, mm.group(1) if mm else None,
                        "\n".join(lines[start + 1:j]) + "\n"))
        i = j + 1
    return out


def test_readme_blocks_are_found_and_marked_sparingly():
    blocks = readme_blocks()
    assert sum(1 for b in blocks if b[1] == "python" and not b[2]) >= 4, blocks
    assert sum(1 for b in blocks if b[1] == "sh" and not b[2]) >= 2, blocks
    assert sum(1 for b in blocks if b[2] == "skip") <= 2, [b[0] for b in blocks if b[2]]


def _netns_prefix():
    unshare = shutil.which("unshare")
    if not unshare:
        return None
    r = subprocess.run([unshare, "-rn", "true"], capture_output=True)
    return [unshare, "-rn"] if r.returncode == 0 else None


@pytest.mark.timeout(TIMEOUT + 120)  # above the runner's own bounds, so it stops what it started
def test_every_readme_example_runs_as_written(tmp_path):
    prefix = _netns_prefix()
    if not prefix:
        pytest.skip("unshare -rn (a network namespace of our own) is not permitted here")
    r = subprocess.run(prefix + [sys.executable, os.path.abspath(__file__), str(tmp_path)],
                       capture_output=True, text=True, timeout=TIMEOUT + 100)
    report = r.stdout[-12000:] + "\n--- stderr ---\n" + r.stderr[-4000:]
    assert r.returncode == 0, report
    assert "README OK" in r.stdout, report


# ------------------------------------------------ inside the namespace


def _bring_loopback_up():
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


def _wait_port(port, proc, what, timeout=60):
    def up():
        if proc.poll() is not None:
            raise AssertionError("%s exited with %s" % (what, proc.returncode))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False
    lsbroker.wait_until(up, timeout, what=what)


def _stop(proc, what):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError("%s did not stop within 60 s of SIGTERM" % what)
    return proc.returncode


def _workdir(base, name):
    d = os.path.join(base, name)
    os.makedirs(d)
    # the examples say build/lakestream: the binary under test
    os.symlink(os.path.dirname(lsbroker.binary_path()), os.path.join(d, "build"))
    return d


def _session_program(blocks):
    """One Python program: the README's Python blocks at top level, in
    order, with its sh blocks run where they stand."""
    parts = ["import subprocess as _sp, sys as _sys\n"
             "def _sh(_code, _line):\n"
             "    print('### README.md:%d (sh)' % _line, flush=True)\n"
             "    _r = _sp.run(['sh', '-ec', _code])\n"
             "    if _r.returncode:\n"
             "        print('### FAILED README.md:%d: exit %d' % (_line, _r.returncode), flush=True)\n"
             "        _sys.exit(1)\n"]
    for line, lang, mark, code in blocks:
        if mark:
            continue
        if lang == "sh":
            parts.append("_sh(%r, %d)\n" % (code, line))
        else:
            parts.append("print('### README.md:%d (python)', flush=True)\n" % line)
            parts.append(code)
    return "".join(parts)


def _run_examples(base, blocks, env):
    d = _workdir(base, "single")
    log = open(os.path.join(base, "broker.log"), "w")
    broker = subprocess.Popen(["build/lakestream", "serve"], cwd=d, env=env, stdout=log,
                              stderr=subprocess.STDOUT)
    try:
        _wait_port(9092, broker, "the broker make run starts")
        for port in (8181, 8081):
            _wait_port(port, broker, "the broker's HTTP listener on %d" % port)
        prog = os.path.join(base, "session.py")
        with open(prog, "w") as f:
            f.write(_session_program(blocks))
        r = subprocess.run([sys.executable, prog], cwd=d, env=env, timeout=TIMEOUT,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        sys.stdout.write(r.stdout)
        if r.returncode != 0:
            raise AssertionError("a README example failed (the last ### line above names it)")
    finally:
        rc = _stop(broker, "the broker")
        log.close()
    text = open(os.path.join(base, "broker.log")).read()
    errors = [ln for ln in text.splitlines() if lsbroker.DIAG_ERROR_RE.match(ln) or
              any(r.search(ln) for r in lsbroker.SANITIZER_RES)]
    if rc != 0 or errors:
        raise AssertionError("broker exit %s, ERROR lines: %s\n%s" % (rc, errors, text[-3000:]))


def _start_etcd(base):
    d = os.path.join(base, "etcd")
    os.makedirs(d)
    out = open(os.path.join(d, "out"), "w")
    p = subprocess.Popen(["etcd", "--data-dir", os.path.join(d, "data"),
                          "--listen-peer-urls", "http://127.0.0.1:2380"],
                         stdout=out, stderr=subprocess.STDOUT)
    _wait_port(2379, p, "etcd on 127.0.0.1:2379")
    return p


def _broker_ids(bootstrap):
    from confluent_kafka.admin import AdminClient
    try:
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5)
    except Exception:  # noqa: BLE001 (not up yet)
        return None
    return sorted(md.brokers)


def _run_cluster(base, line, code, env):
    if not shutil.which("etcd"):
        raise AssertionError("README.md:%d needs etcd (tools/install-deps.sh test)" % line)
    ids = sorted(int(x) for x in re.findall(r"--broker\.id=(\d+)", code))
    ports = [int(x) for x in re.findall(r"--listeners=127\.0\.0\.1:(\d+)", code)]
    print("### README.md:%d (sh, cluster of brokers %s)" % (line, ids), flush=True)
    etcd = _start_etcd(base)
    d = _workdir(base, "cluster-%d" % line)
    out = open(os.path.join(base, "cluster-%d.log" % line), "w")
    sh = subprocess.Popen(["sh", "-ec", code + "wait\n"], cwd=d, env=env, stdout=out,
                          stderr=subprocess.STDOUT, start_new_session=True)
    try:
        for port in ports:
            def listed(port=port):
                if sh.poll() is not None:
                    raise AssertionError("every broker exited (sh exit %s)" % sh.returncode)
                return _broker_ids("127.0.0.1:%d" % port) == ids
            lsbroker.wait_until(listed, 60, what="brokers %s in Metadata from :%d" % (ids, port))
    except Exception:
        out.flush()
        sys.stdout.write(open(out.name).read()[-4000:])
        raise
    finally:
        try:
            os.killpg(sh.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            sh.wait(60)
        finally:
            _stop(etcd, "etcd")
            out.close()
    text = open(out.name).read()
    errors = [ln for ln in text.splitlines() if lsbroker.DIAG_ERROR_RE.match(ln) or
              any(r.search(ln) for r in lsbroker.SANITIZER_RES)]
    if errors:
        raise AssertionError("README.md:%d: ERROR lines: %s" % (line, errors))


def main(base):
    _bring_loopback_up()
    blocks = readme_blocks()
    # LAKESTREAM_* variables are configuration to the binary (LAKESTREAM_BIN
    # is the test's): a newcomer's shell has none
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}
    # the Python of the examples is this interpreter (.venv/bin/python)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    _run_examples(base, blocks, env)
    for line, lang, mark, code in blocks:
        if mark == "cluster":
            _run_cluster(base, line, code, env)
    print("README OK", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="ls-readme-"))
