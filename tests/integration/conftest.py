"""pytest fixtures: a real Lakestream broker per test.

    def test_x(broker):            # fresh data dir, free port, default settings
        broker.host, broker.port, broker.bootstrap, broker.data_dir
        broker.http_url            # http://127.0.0.1:<free port> (Iceberg REST at /v1)
        host, port, data_dir, ctl = broker   # the same, unpacked
        broker.restart()           # SIGTERM (must exit 0) + start on same dir/port
        broker.kill9(); broker.start()   # crash + recover
        broker.allow_errors(r"regex")    # ERROR lines this test expects

    def test_y(broker_factory):    # several brokers or extra flags
        b = broker_factory("--message.max.bytes=4194304")

On teardown every broker is sent SIGTERM; the test fails (as a teardown error)
if the broker does not exit 0, or if its stderr holds ERROR lines it did not
allow, or any sanitizer report. When a test fails, the tail of each broker's
log is attached to the report.

Set LS_TEST_EXTERNAL_BOOTSTRAP=host:port to run against a server started
elsewhere (restart/kill tests then skip).
"""

import os
import re
import uuid
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lsbroker  # noqa: E402


def pytest_configure(config):
    """A session stopped by SIGTERM (tests/run.sh's guard `timeout`) ends as
    Ctrl-C does: the running test's finalizers run (brokers stopped, a radosgw
    a test stopped started again), then every fixture's, and the junit report
    is written with what ran, instead of a killed session leaving brokers
    behind and no report at all."""
    import signal

    def on_term(signum, frame):
        # `timeout` signals the session and then its whole process group:
        # the second SIGTERM must not cut the teardown the first started
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, on_term)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)
    if rep.when == "call" and rep.failed:
        for b in getattr(item, "_ls_brokers", []):
            rep.sections.append(("broker log tail (%s)" % (", ".join(b.log_paths) or b.bootstrap),
                                 b.log_tail(60)))


class _Factory:
    def __init__(self, base_dir, item):
        self.base_dir = base_dir
        self.item = item
        self.brokers = []

    def __call__(self, *extra_args, name=None):
        ext = lsbroker.external_bootstrap()
        if ext:
            if extra_args:
                pytest.skip("needs broker flags %s; external broker in use" % (extra_args,))
            b = lsbroker.ExternalBroker(ext)
        else:
            n = len(self.brokers)
            name = name or ("broker%d" % n if n else "broker")
            b = lsbroker.Broker(os.path.join(self.base_dir, name + "-data"),
                                os.path.join(self.base_dir, name + "-logs"),
                                extra_args, name=name)
        self.brokers.append(b)
        self.item._ls_brokers = self.brokers
        b.start()
        return b

    def finish(self):
        failures = []
        for b in self.brokers:
            for f in b.final_check():
                failures.append("[%s] %s" % (getattr(b, "name", "external"), f))
        return failures


@pytest.fixture
def broker_factory(tmp_path, request):
    f = _Factory(str(tmp_path), request.node)
    yield f
    failures = f.finish()
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)


@pytest.fixture
def own_broker(tmp_path, request):
    """make(*args, nofile=None): a broker with these arguments, optionally
    under a descriptor limit (RLIMIT_NOFILE), stopped after the test."""
    made = []

    def make(*args, nofile=None):
        b = lsbroker.Broker(str(tmp_path / "data"), str(tmp_path / "logs"), list(args))
        b.nofile = nofile
        made.append(b)
        request.node._ls_brokers = made
        b.start()
        return b
    yield make
    for b in made:
        if b.alive():
            b.stop()


@pytest.fixture
def broker(broker_factory):
    return broker_factory()


@pytest.fixture(scope="module")
def module_broker(tmp_path_factory, request):
    """One broker shared by a module's tests (test_malformed uses it to show
    that bad input on earlier connections does not hurt later ones)."""
    f = _Factory(str(tmp_path_factory.mktemp("modbroker")), request.node)
    b = f()
    yield b
    failures = f.finish()
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)


@pytest.fixture(scope="session")
def etcd(tmp_path_factory):
    """A throwaway etcd on 127.0.0.1 (tools/etcd/etcd.sh), shared by the
    session's cluster tests; every cluster uses its own key prefix. Yields
    the client endpoint host:port."""
    d = str(tmp_path_factory.mktemp("etcd"))
    script = os.path.join(lsbroker.ROOT, "tools", "etcd", "etcd.sh")
    r = subprocess.run([script, "start", d], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail("starting etcd failed (run tools/install-deps.sh test): %s" % r.stderr,
                    pytrace=False)
    env = dict(line.split("=", 1) for line in open(os.path.join(d, "env")).read().split())
    yield env["LS_TEST_ETCD_ENDPOINT"]
    subprocess.run([script, "stop", d], capture_output=True)


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory):
    """A throwaway PostgreSQL on 127.0.0.1 (tools/pg/pg.sh) for the session's
    clusters when LS_TEST_CLUSTER_META=postgresql. Yields a function giving a
    fresh database's metadata URL."""
    import tempfile
    # not under pytest's tmp dir: as root the server runs as "postgres", which
    # cannot enter root's 0700 pytest directories
    d = tempfile.mkdtemp(prefix="lakestream-pg-")
    script = os.path.join(lsbroker.ROOT, "tools", "pg", "pg.sh")
    r = subprocess.run([script, "start", d], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail("starting PostgreSQL failed (run tools/install-deps.sh test): %s" % r.stderr,
                    pytrace=False)
    env = dict(line.split("=", 1) for line in open(os.path.join(d, "env")).read().split())
    host, port = env["LS_TEST_PG_ENDPOINT"].split(":")

    def new_database(name):
        db = "c_" + re.sub(r"[^a-z0-9]", "_", name.lower())[:30] + "_" + uuid.uuid4().hex[:8]
        subprocess.run(["createdb", "-h", host, "-p", port, "-U", env["LS_TEST_PG_USER"], db],
                       check=True, capture_output=True)
        return "postgresql://%s@%s/%s" % (env["LS_TEST_PG_USER"], env["LS_TEST_PG_ENDPOINT"], db)
    yield new_database
    subprocess.run([script, "stop", d], capture_output=True)


class Cluster:
    """Brokers sharing one metadata store (an etcd prefix, or a PostgreSQL
    database with LS_TEST_CLUSTER_META=postgresql) and one object store."""

    def __init__(self, factory, meta_url, base_dir, name):
        self.factory = factory
        self.meta_url = meta_url
        self.store_url = lsbroker.shared_object_store_url(name, os.path.join(base_dir, "objects"))
        self.brokers = []

    def add(self, *extra_args):
        i = len(self.brokers) + 1
        b = self.factory("--broker.id=%d" % i, "--metadata.url=" + self.meta_url,
                         "--object.store.url=" + self.store_url, *extra_args,
                         name="node%d" % i)
        self.brokers.append(b)
        return b

    @property
    def bootstrap(self):
        return ",".join(b.bootstrap for b in self.brokers if b.alive())


@pytest.fixture
def cluster(broker_factory, tmp_path, request):
    """cluster.add(*flags) starts one more broker of a fresh cluster, over
    etcd, or over PostgreSQL with LS_TEST_CLUSTER_META=postgresql (make
    test-cluster-postgres)."""
    name = re.sub(r"[^A-Za-z0-9]", "-", request.node.name)[:40]
    if os.environ.get("LS_TEST_CLUSTER_META", "etcd") == "postgresql":
        meta_url = request.getfixturevalue("postgres_server")(name)
    else:
        meta_url = "etcd://%s/%s-%s" % (request.getfixturevalue("etcd"), name,
                                        uuid.uuid4().hex[:8])
    return Cluster(broker_factory, meta_url, str(tmp_path), name)
