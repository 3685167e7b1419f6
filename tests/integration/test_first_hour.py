"""A newcomer's first hour: what the command line, start-up and the Makefile
say when something is off (issue 29, "A newcomer's first hour").

Each test runs the real binary (or make / tools/install-deps.sh with stand-in
commands) and checks what a user reads."""

import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile

import pytest

import lsbroker

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


BIN = lsbroker.binary_path()
# LAKESTREAM_* variables are configuration to the binary (LAKESTREAM_BIN is the test's)
ENV = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}


def _run(*args, **kw):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60, env=ENV,
                          **kw)


@pytest.mark.parametrize("cmd", [["serve", "--help"], ["serve", "-h"], ["check", "--help"],
                                 ["serve", "--broker.id=3", "--help"]])
def test_help_of_serve_and_check_lists_the_keys(cmd):
    r = _run(*cmd)
    assert r.returncode == 0, r.stderr
    assert "usage: lakestream serve" in r.stdout
    assert "data.dir" in r.stdout and "listeners" in r.stdout, r.stdout[:500]
    assert "error" not in r.stderr.lower(), r.stderr


def test_unknown_command_says_so():
    r = _run("bogus")
    assert r.returncode == 2
    assert "unknown command 'bogus'" in r.stderr, r.stderr
    assert "usage: lakestream serve" in r.stderr


def test_health_probe_connections_are_not_warnings(broker):
    """A TCP health probe connects and hangs up (with a FIN, or a reset as
    load balancers do) without sending a byte: nothing to warn about. A
    request cut short still is, saying how much of it came."""
    before = broker.log_text()
    s = socket.create_connection((broker.host, broker.port))
    s.close()
    s = socket.create_connection((broker.host, broker.port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    s = socket.create_connection((broker.host, broker.port))
    s.sendall(b"\x00\x00")
    s.close()
    lsbroker.wait_until(lambda: "ended mid-request" in broker.log_text(), 30,
                        what="the cut request's warning")
    new = broker.log_text()[len(before):]
    warns = [ln for ln in new.splitlines() if " WARN " in ln]
    assert len(warns) == 1, warns
    assert "ended mid-request (2 of the 4 size bytes read)" in warns[0], warns


def _serve(data_dir, *extra, **kw):
    return _run("serve", "--data.dir=" + data_dir, "--http.listen=127.0.0.1:0",
                "--schema.registry.listen=127.0.0.1:0", *extra, **kw)


def test_port_clash_leaves_no_data_dir_and_ends_with_the_error(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    data = str(tmp_path / "fresh" / "data")
    try:
        r = _serve(data, "--listeners=127.0.0.1:%d" % taken.getsockname()[1])
    finally:
        taken.close()
    assert r.returncode == 1
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert re.search(r"ERROR .*cannot listen on 127\.0\.0\.1:\d+: Address already in use",
                     lines[-1]), lines[-3:]
    assert not os.path.exists(str(tmp_path / "fresh")), os.listdir(str(tmp_path))


def test_port_clash_keeps_an_existing_data_dir(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "keep").write_text("mine")
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        r = _serve(str(data), "--listeners=127.0.0.1:%d" % taken.getsockname()[1])
    finally:
        taken.close()
    assert r.returncode == 1
    assert (data / "keep").read_text() == "mine"


def _as_other_user():
    """A way to run the broker as a user that cannot write a root-owned
    folder (root itself can write anywhere)."""
    if os.geteuid() != 0:
        return None
    setpriv = shutil.which("setpriv")
    if not setpriv:
        pytest.skip("running as root without setpriv: cannot make a folder unwritable")
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


def test_unwritable_data_dir_says_permission_denied(tmp_path):
    prefix = _as_other_user()
    # as root: a folder the other user can reach (pytest's are private to root)
    top = tempfile.mkdtemp(prefix="ls-ro-") if prefix else str(tmp_path)
    data = os.path.join(top, "ro")
    os.mkdir(data)
    if prefix:
        os.chmod(top, 0o755)
        os.chmod(data, 0o755)  # root's: the other user may enter, not write
    else:
        os.chmod(data, 0o555)
    try:
        r = subprocess.run((prefix or []) + [BIN, "serve", "--data.dir=" + data,
                                             "--listeners=127.0.0.1:0", "--http.listen=",
                                             "--schema.registry.listen="],
                           capture_output=True, text=True, timeout=60, env=ENV)
    finally:
        os.chmod(data, 0o755)
        if prefix:
            shutil.rmtree(top)
    assert r.returncode != 0
    assert os.path.join(data, "meta.db") in r.stderr and "Permission denied" in r.stderr, \
        r.stderr


def test_make_run_builds_only_the_broker_in_parallel():
    """`make run` starts the broker as soon as it is built: the unit tests,
    the generator and the bench tool wait for `make all` / `make test`, and the
    compile runs one job per core. (Dry run: prints, builds nothing.)"""
    r = subprocess.run(["make", "-n", "-C", lsbroker.ROOT, "run", "BUILD=build-dryrun-never"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "build-dryrun-never/lakestream serve" in out
    assert "tests/unit/" not in out and "kgen" not in out and "cold_read_bench" not in out
    # nproc counts the CPUs this process may run on
    assert re.search(r"-j ?%d\b" % len(os.sched_getaffinity(0)), out), out[:2000]


def test_install_deps_waits_for_the_dpkg_lock(tmp_path):
    """Another apt holding the dpkg lock must make `make run` wait, not fail:
    apt-get gets DPkg::Lock::Timeout. Stand-ins for dpkg-query (nothing
    installed), id (root) and apt-get (records its arguments)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    log = tmp_path / "apt.log"
    (fake / "dpkg-query").write_text("#!/bin/sh\nexit 1\n")
    (fake / "id").write_text("#!/bin/sh\necho 0\n")
    (fake / "apt-get").write_text("#!/bin/sh\necho \"$*\" >> %s\n" % log)
    for f in fake.iterdir():
        f.chmod(0o755)
    env = dict(os.environ, PATH=str(fake) + os.pathsep + os.environ["PATH"])
    r = subprocess.run([os.path.join(lsbroker.ROOT, "tools", "install-deps.sh"), "build"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    calls = [ln for ln in log.read_text().splitlines() if " install " in " %s " % ln]
    assert calls, log.read_text()
    for c in calls:
        assert re.search(r"-o DPkg::Lock::Timeout=\d+", c), c
