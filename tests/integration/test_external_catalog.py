"""Tables mirrored into an external Iceberg REST catalog (issue 35):
lakestream.table.catalog=<name> with catalog.<name>.* broker settings.

The external catalog is Apache Iceberg's own REST catalog server (the
iceberg-open-api test fixture: Iceberg's REST handlers over a JdbcCatalog on
SQLite), started here from the jars tools/install-deps.sh fetched into
.cache/java/restcatalog. PyIceberg reads the tables through it, as any engine
configured with that catalog would. Checked: every produced row is readable
through the external catalog, and a later produce becomes a new snapshot there
(ack -> visible time printed); another writer's snapshot in the external
catalog is reported as a conflict (metric, log line, `tables show`) and never
overwritten; OAuth2 client credentials work through a proxy that enforces
bearer tokens, and a catalog configured without them fails visibly; an outage
(503) is retried and the snapshots made meanwhile caught up."""

import glob
import http.server
import json
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import iceberg_util
import lsbroker
from kafka_util import unique_topic, wait_topic

pa = pytest.importorskip("pyarrow")
pyiceberg_catalog = pytest.importorskip("pyiceberg.catalog")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
JARS = os.path.join(ROOT, ".cache", "java", "restcatalog")
FAST = ("--compaction.interval.ms=200",)


@pytest.fixture(autouse=True)
def _local_store_only():
    # the catalog server reads our metadata files from the local object directory
    iceberg_util.local_store_only()


@pytest.fixture(scope="module")
def rest_catalog(tmp_path_factory):
    """URL of a running Iceberg REST catalog server (stopped after the module)."""
    if not glob.glob(os.path.join(JARS, "iceberg-open-api-*.jar")):
        pytest.fail("Iceberg REST catalog jars missing in %s (tools/install-deps.sh test)" % JARS)
    d = tmp_path_factory.mktemp("restcatalog")
    port = lsbroker.free_port()
    env = dict(os.environ,
               CATALOG_URI="jdbc:sqlite:file:%s/catalog.db" % d,
               CATALOG_WAREHOUSE="file://%s/warehouse" % d,
               CATALOG_REST_PORT=str(port))
    log = open(os.path.join(d, "server.log"), "wb")
    proc = subprocess.Popen(["java", "-Xmx256m", "-cp", os.path.join(JARS, "*"),
                             "org.apache.iceberg.rest.RESTCatalogServer"],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    url = "http://127.0.0.1:%d" % port

    def up():
        if proc.poll() is not None:
            raise AssertionError("catalog server exited %s: %s"
                                 % (proc.returncode, open(log.name).read()[-2000:]))
        try:
            with urllib.request.urlopen(url + "/v1/config", timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, ConnectionError):
            return False
    try:
        lsbroker.wait_until(up, 60, what="the REST catalog server")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _catalog(url, name="ext"):
    return pyiceberg_catalog.load_catalog(name, type="rest", uri=url)


def _create(b, topic, catalog, **config):
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    a.create_topics([NewTopic(topic, 1, 1, config=dict({
        "lakestream.table.enabled": "true",
        "lakestream.table.catalog": catalog,
        "lakestream.table.commit.interval.ms": "1000"}, **config))])[topic].result(30)
    wait_topic(b.bootstrap, topic, 1)


def _produce(bootstrap, topic, values):
    """Produces values; returns the monotonic time the last one was acked."""
    acked = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 1})
    for v in values:
        p.produce(topic, value=v, partition=0,
                  on_delivery=lambda err, msg: acked.append((err, time.monotonic())))
    assert p.flush(30) == 0
    assert len(acked) == len(values) and all(e is None for e, _ in acked), acked
    return max(t for _, t in acked)


def _external_rows(url, topic, want, timeout=60):
    """Waits until the external catalog's copy of default.<topic> holds `want`
    rows; returns (table, arrow rows)."""
    cat = _catalog(url)
    seen = [None]

    def ready():
        try:
            t = cat.load_table(("default", topic))
        except Exception as e:   # NoSuchTableError until registered
            seen[0] = repr(e)
            return None
        rows = t.scan().to_arrow()
        seen[0] = rows.num_rows
        return (t, rows) if rows.num_rows >= want else None
    try:
        return lsbroker.wait_until(ready, timeout, interval=0.1,
                                   what="%d rows in the external catalog" % want)
    except TimeoutError:
        raise AssertionError("external catalog copy of %s: %s, want %d rows"
                             % (topic, seen[0], want))


def _metric(b, name, **labels):
    with urllib.request.urlopen(b.http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        m = re.match(r"^%s\{([^}]*)\} (\S+)$" % re.escape(name), line)
        if not m:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(m.group(2))
    return total


def test_rows_and_new_snapshots_visible_through_external_catalog(broker_factory, rest_catalog):
    b = broker_factory(*FAST, "--catalog.ext.type=rest", "--catalog.ext.uri=" + rest_catalog)
    topic = unique_topic("ext")
    _create(b, topic, "ext")
    values = [b"row-%d" % i for i in range(200)]
    _produce(b.bootstrap, topic, values)
    t, rows = _external_rows(rest_catalog, topic, 200)
    assert sorted(rows.column("value").to_pylist()) == sorted(values)
    # registered, not created: our table's uuid, field ids and snapshot
    local = iceberg_util.current_metadata(iceberg_util.table_dir(b, topic))
    ours = json.load(open(local))
    assert t.metadata.table_uuid.hex == ours["table-uuid"].replace("-", "")
    assert [f.field_id for f in t.schema().fields] == \
        [f["id"] for f in ours["schemas"][-1]["fields"]]
    # data files stay in our object store
    assert all(f.file.file_path.startswith("file://" + b.data_dir)
               for f in t.scan().plan_files())

    delays = []
    for round_ in range(3):
        first = t.current_snapshot().snapshot_id
        more = [b"more-%d-%d" % (round_, i) for i in range(10)]
        t_ack = _produce(b.bootstrap, topic, more)
        t, rows = _external_rows(rest_catalog, topic, 210 + 10 * round_, timeout=60)
        delays.append(time.monotonic() - t_ack)
        assert t.current_snapshot().snapshot_id != first
        assert set(more) <= set(rows.column("value").to_pylist())
    print("\nexternal catalog, commit interval 1 s: ack -> visible through it in %s s"
          % ", ".join("%.2f" % d for d in delays))
    assert max(delays) < 20, delays
    assert _metric(b, "lakestream_table_catalog_commits_total", catalog="ext") >= 4
    assert _metric(b, "lakestream_table_catalog_failures_total", catalog="ext") == 0


def _one_row(schema):
    """A row of the arrow schema (any values of the right types)."""
    def value(t):
        if pa.types.is_struct(t):
            return {t.field(i).name: value(t.field(i).type) for i in range(t.num_fields)}
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
            return []
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return "other"
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            return b"other"
        if pa.types.is_boolean(t):
            return False
        if pa.types.is_floating(t):
            return 0.0
        return 0   # integers, timestamps, dates
    return {f.name: value(f.type) for f in schema}


def test_other_writers_snapshot_is_reported_never_overwritten(broker_factory, rest_catalog):
    b = broker_factory(*FAST, "--catalog.ext.type=rest", "--catalog.ext.uri=" + rest_catalog)
    topic = unique_topic("conflict")
    # unpartitioned: PyIceberg computes partition transforms only with pyiceberg-core
    _create(b, topic, "ext", **{"lakestream.table.partition": "none"})
    _produce(b.bootstrap, topic, [b"a-%d" % i for i in range(20)])
    t, _ = _external_rows(rest_catalog, topic, 20)
    # another writer appends through the external catalog
    schema = t.schema().as_arrow()
    t.append(pa.Table.from_pylist([_one_row(schema)], schema=schema))
    theirs = _catalog(rest_catalog).load_table(("default", topic)).current_snapshot()
    assert theirs.snapshot_id != t.metadata.snapshots[0].snapshot_id

    # our next commit: reported as a conflict, their snapshot stays main
    _produce(b.bootstrap, topic, [b"b-%d" % i for i in range(5)])
    lsbroker.wait_until(lambda: _metric(b, "lakestream_table_catalog_failures_total",
                                        catalog="ext", reason="conflict") >= 1,
                        60, what="a conflict reported")
    assert re.search(r"catalog ext is behind this table \(conflict.*another writer committed",
                     b.log_text()), b.log_tail(20)
    assert _metric(b, "lakestream_table_catalog_behind", catalog="ext", table=topic) == 1
    # and `lakestream tables show` says so (DescribeConfigs lakestream.table.catalog.status)
    def shown():
        out = subprocess.run([lsbroker.binary_path(), "tables", "--bootstrap", b.bootstrap, "show",
                              topic], capture_output=True, text=True, timeout=60,
                             env={k: v for k, v in os.environ.items()
                                  if not k.startswith("LAKESTREAM_")})
        return re.search(r"^external catalog behind: catalog ext behind since "
                         r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(conflict, \d+ attempts\): "
                         r"the catalog's main branch is snapshot \d+",
                         out.stdout, re.M) and out.stdout
    lsbroker.wait_until(shown, 30, interval=0.3, what="tables show reporting the conflict")
    now = _catalog(rest_catalog).load_table(("default", topic))
    assert now.current_snapshot().snapshot_id == theirs.snapshot_id
    assert now.scan().to_arrow().num_rows == 21
    # the built-in table has every record all the same
    iceberg_util.wait_rows(iceberg_util.table_dir(b, topic), 25)


class _AuthProxy(http.server.ThreadingHTTPServer):
    """Forwards to the catalog server; serves /v1/oauth/tokens (client
    credentials CLIENT:SECRET only) and answers 401 to any other request
    without the bearer token it issued."""
    daemon_threads = True
    TOKEN = "tok-9f8e7d"
    CLIENT, SECRET = "lakestream", "s3cret"

    def __init__(self, upstream, auth=True):
        self.upstream = upstream
        self.auth = auth
        self.down = False  # answer 503 to everything (an outage)
        self.commit_409 = 0  # answer 409 to that many table commits (a writer won the race)
        self.seen = []  # (path, authorized)
        super().__init__(("127.0.0.1", 0), _AuthHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]


class _AuthHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def _answer(self, code, body, ctype="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        srv = self.server
        if srv.down:
            srv.seen.append((self.path, None))
            return self._answer(503, {"error": {"message": "down for maintenance",
                                                "type": "ServiceUnavailableException",
                                                "code": 503}})
        if method == "POST" and re.match(r"^/v1/namespaces/[^/]+/tables/[^/]+$", self.path) \
                and srv.commit_409 > 0:
            srv.commit_409 -= 1
            srv.seen.append((self.path, 409))
            return self._answer(409, {"error": {"message": "Requirement failed: branch main has "
                                                "changed", "type": "CommitFailedException",
                                                "code": 409}})
        if self.path == "/v1/oauth/tokens":
            form = urllib.parse.parse_qs((body or b"").decode())
            ok = (form.get("grant_type") == ["client_credentials"] and
                  form.get("client_id") == [srv.CLIENT] and form.get("client_secret") == [srv.SECRET])
            srv.seen.append((self.path, ok))
            if not ok:
                return self._answer(401, {"error": "invalid_client",
                                          "error_description": "bad client credentials"})
            return self._answer(200, {"access_token": srv.TOKEN, "token_type": "bearer",
                                      "expires_in": 3600})
        authorized = not srv.auth or self.headers.get("Authorization") == "Bearer " + srv.TOKEN
        srv.seen.append((self.path, authorized))
        if not authorized:
            return self._answer(401, {"error": {"message": "Not authorized: bearer token missing "
                                                "or wrong", "type": "NotAuthorizedException",
                                                "code": 401}})
        req = urllib.request.Request(srv.upstream + self.path, data=body, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return self._answer(r.status, r.read())
        except urllib.error.HTTPError as e:
            return self._answer(e.code, e.read())

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_HEAD(self):
        self._handle("HEAD")


def test_oauth2_credentials_and_unauthenticated_catalog_fails_visibly(tmp_path, rest_catalog):
    proxy = _AuthProxy(rest_catalog)
    b = lsbroker.Broker(str(tmp_path / "data"), str(tmp_path / "logs"), list(FAST) + [
        "--catalog.auth.type=rest", "--catalog.auth.uri=" + proxy.url,
        "--catalog.noauth.type=rest", "--catalog.noauth.uri=" + proxy.url])
    # a secret: from the environment (never a flag)
    b.env_extra = {"LAKESTREAM_CATALOG_AUTH_CREDENTIAL": "%s:%s" % (proxy.CLIENT, proxy.SECRET)}
    b.start()
    try:
        good, bad = unique_topic("auth"), unique_topic("noauth")
        _create(b, good, "auth")
        _create(b, bad, "noauth")
        _produce(b.bootstrap, good, [b"g-%d" % i for i in range(7)])
        _produce(b.bootstrap, bad, [b"n-%d" % i for i in range(3)])
        _, rows = _external_rows(rest_catalog, good, 7)
        assert rows.num_rows == 7
        assert ("/v1/oauth/tokens", True) in proxy.seen
        assert any(p.endswith("/register") and ok for p, ok in proxy.seen), proxy.seen
        # without credentials: refused by the catalog, reported, and the
        # built-in table is written all the same
        lsbroker.wait_until(lambda: _metric(b, "lakestream_table_catalog_failures_total",
                                            catalog="noauth", reason="error") >= 1,
                            60, what="the unauthenticated catalog's failure reported")
        assert re.search(r"table default\.%s: catalog noauth is behind this table \(error.*"
                         r"HTTP 401: Not authorized" % re.escape(bad), b.log_text()), b.log_tail(20)
        iceberg_util.wait_rows(iceberg_util.table_dir(b, bad), 3)
        with pytest.raises(Exception):
            _catalog(rest_catalog).load_table(("default", bad))
        # a token flag is refused: secrets never on the command line
        out = subprocess.run([lsbroker.binary_path(), "serve", "--catalog.x.type=rest",
                              "--catalog.x.uri=http://127.0.0.1:1", "--catalog.x.token=t"],
                             capture_output=True, text=True, timeout=30,
                             env={k: v for k, v in os.environ.items()
                                  if not k.startswith("LAKESTREAM_")})
        assert out.returncode != 0 and "catalog.x.token: secrets are not accepted" in out.stderr
    finally:
        failures = b.final_check()
        proxy.shutdown()
        assert not failures, failures


def test_unknown_catalog_name_refused(broker_factory, rest_catalog):
    b = broker_factory("--catalog.ext.type=rest", "--catalog.ext.uri=" + rest_catalog)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    topic = unique_topic("unknown")
    with pytest.raises(Exception) as e:
        a.create_topics([NewTopic(topic, 1, 1, config={
            "lakestream.table.enabled": "true",
            "lakestream.table.catalog": "glue"})])[topic].result(30)
    err = e.value.args[0]
    assert err.code() == 40 and "no catalog named 'glue' is configured (configured: builtin, ext)" \
        in err.str(), err.str()
    # the CLI leaves the name to the broker, which knows its catalogs
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}
    a.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    ok = subprocess.run([lsbroker.binary_path(), "tables", "--bootstrap", b.bootstrap, "set", topic,
                         "catalog=ext"], capture_output=True, text=True, timeout=60, env=env)
    assert ok.returncode == 0 and re.search(r"^lakestream.table.catalog\s+ext\s+stream", ok.stdout,
                                            re.M), ok.stdout + ok.stderr
    bad = subprocess.run([lsbroker.binary_path(), "tables", "--bootstrap", b.bootstrap, "set", topic,
                          "catalog=glue"], capture_output=True, text=True, timeout=60, env=env)
    assert bad.returncode != 0 and "no catalog named 'glue'" in bad.stdout + bad.stderr, \
        bad.stdout + bad.stderr
    # a broker configured with an unknown catalog field does not start
    out = subprocess.run([lsbroker.binary_path(), "serve", "--catalog.ext.type=rest",
                          "--catalog.ext.urii=http://x"], capture_output=True, text=True,
                         timeout=30, env={k: v for k, v in os.environ.items()
                                          if not k.startswith("LAKESTREAM_")})
    assert out.returncode != 0 and "catalog.ext.urii: unknown key" in out.stderr, out.stderr


def test_catalog_outage_is_retried_and_caught_up(broker_factory, rest_catalog):
    """The catalog answers 503 for a while: the broker's own table goes on,
    the failures count as unavailable, and once the catalog is back every
    snapshot made meanwhile reaches it in one catch-up."""
    proxy = _AuthProxy(rest_catalog, auth=False)
    try:
        b = broker_factory(*FAST, "--catalog.ext.type=rest", "--catalog.ext.uri=" + proxy.url)
        topic = unique_topic("outage")
        _create(b, topic, "ext")
        _produce(b.bootstrap, topic, [b"x-%d" % i for i in range(5)])
        t, _ = _external_rows(rest_catalog, topic, 5)
        before = len(t.metadata.snapshots)
        proxy.down = True
        for round_ in range(3):   # three commits of the built-in table meanwhile
            _produce(b.bootstrap, topic, [b"y-%d-%d" % (round_, i) for i in range(4)])
            iceberg_util.wait_rows(iceberg_util.table_dir(b, topic), 5 + 4 * (round_ + 1))
        lsbroker.wait_until(lambda: _metric(b, "lakestream_table_catalog_failures_total",
                                            catalog="ext", reason="unavailable") >= 1,
                            30, what="the outage counted")
        assert re.search(r"catalog ext is behind this table \(unavailable.*HTTP 503: down for "
                         r"maintenance", b.log_text()), b.log_tail(20)
        assert _metric(b, "lakestream_table_catalog_behind", catalog="ext", table=topic) == 1
        proxy.down = False
        t, rows = _external_rows(rest_catalog, topic, 17, timeout=60)
        assert len(t.metadata.snapshots) >= before + 3
        local = json.load(open(iceberg_util.current_metadata(iceberg_util.table_dir(b, topic))))
        assert t.current_snapshot().snapshot_id == local["current-snapshot-id"]
        lsbroker.wait_until(lambda: _metric(b, "lakestream_table_catalog_behind", catalog="ext",
                                            table=topic) == 0, 30, what="behind cleared")
    finally:
        proxy.shutdown()


def test_schema_evolution_reaches_external_catalog(broker_factory, rest_catalog):
    """A JSON table whose inferred columns grow: the catalog's copy gets the
    new schema (add-schema, set-current-schema) with our field ids."""
    b = broker_factory(*FAST, "--catalog.ext.type=rest", "--catalog.ext.uri=" + rest_catalog)
    topic = unique_topic("evolve")
    _create(b, topic, "ext", **{"lakestream.table.value.format": "json"})
    _produce(b.bootstrap, topic, [json.dumps({"a": i}).encode() for i in range(3)])
    t, _ = _external_rows(rest_catalog, topic, 3)
    assert "b" not in [f.name for f in t.schema().fields]
    _produce(b.bootstrap, topic, [json.dumps({"a": 10 + i, "b": "x%d" % i}).encode()
                                  for i in range(2)])
    t, rows = _external_rows(rest_catalog, topic, 5)
    local = json.load(open(iceberg_util.current_metadata(iceberg_util.table_dir(b, topic))))
    ours = next(s for s in local["schemas"] if s["schema-id"] == local["current-schema-id"])
    assert t.schema().schema_id == ours["schema-id"]
    assert {f.name: f.field_id for f in t.schema().fields} == \
        {f["name"]: f["id"] for f in ours["fields"]}
    assert sorted(v for v in rows.column("b").to_pylist() if v) == ["x0", "x1"]


def test_commit_refused_with_409_is_reported_then_replanned(broker_factory, rest_catalog):
    """A commit the catalog refuses with 409 (its requirements failed: a writer
    committed between our load and our commit) is a conflict: reported, not
    forced; the next attempt reloads, and with nothing of theirs in the way,
    commits."""
    proxy = _AuthProxy(rest_catalog, auth=False)
    try:
        b = broker_factory(*FAST, "--catalog.ext.type=rest", "--catalog.ext.uri=" + proxy.url)
        topic = unique_topic("race")
        _create(b, topic, "ext")
        _produce(b.bootstrap, topic, [b"r-%d" % i for i in range(3)])
        _external_rows(rest_catalog, topic, 3)
        proxy.commit_409 = 1
        _produce(b.bootstrap, topic, [b"s-%d" % i for i in range(3)])
        _external_rows(rest_catalog, topic, 6)
        assert any(ok == 409 for _, ok in proxy.seen), proxy.seen
        assert _metric(b, "lakestream_table_catalog_failures_total", catalog="ext",
                       reason="conflict") == 1
        assert re.search(r"catalog ext is behind this table \(conflict.*HTTP 409: Requirement "
                         r"failed", b.log_text()), b.log_tail(20)
        assert re.search(r"catalog ext has its latest snapshot again", b.log_text())
    finally:
        proxy.shutdown()


def test_snapshots_we_expire_leave_the_external_catalog(broker_factory, rest_catalog):
    """Snapshot retention expires snapshots (and later their files) in our
    table; the external catalog's copy drops them too (remove-snapshots), so
    it never lists a snapshot whose manifest list is gone."""
    b = broker_factory(*FAST, "--catalog.ext.type=rest", "--catalog.ext.uri=" + rest_catalog)
    topic = unique_topic("expire")
    _create(b, topic, "ext", **{"lakestream.table.snapshot.retention.ms": "1000",
                                "lakestream.table.snapshot.retention.min": "1"})
    cat = _catalog(rest_catalog)
    rows = 0
    for round_ in range(8):
        _produce(b.bootstrap, topic, [b"e-%d-%d" % (round_, i) for i in range(3)])
        rows += 3
        _external_rows(rest_catalog, topic, rows)
        ours = json.load(open(iceberg_util.current_metadata(iceberg_util.table_dir(b, topic))))
        mine = {s["snapshot-id"] for s in ours["snapshots"]}
        theirs = {s.snapshot_id for s in cat.load_table(("default", topic)).metadata.snapshots}
        if round_ >= 3 and theirs <= mine and len(theirs) < round_ + 1:
            break
        time.sleep(1.1)   # past the retention, so the next commit expires the older ones
    else:
        raise AssertionError("external catalog keeps expired snapshots: theirs %s, ours %s"
                             % (sorted(theirs), sorted(mine)))
    t = cat.load_table(("default", topic))
    assert t.scan().to_arrow().num_rows == rows


def test_idle_table_expiry_reaches_the_external_catalog(broker_factory, rest_catalog):
    """A table that stops taking data still expires its snapshots (the idle
    maintenance's own commit), and that commit reaches the external catalog
    without waiting for new data: its copy ends with our one retained
    snapshot, and reads every row."""
    b = broker_factory(*FAST, "--catalog.ext.type=rest", "--catalog.ext.uri=" + rest_catalog)
    topic = unique_topic("idleexp")
    _create(b, topic, "ext", **{"lakestream.table.snapshot.retention.ms": "2000",
                                "lakestream.table.snapshot.retention.min": "1"})
    cat = _catalog(rest_catalog)
    rows = 0
    for round_ in range(3):   # three commits, then nothing more
        _produce(b.bootstrap, topic, [b"i-%d-%d" % (round_, i) for i in range(3)])
        rows += 3
        _external_rows(rest_catalog, topic, rows)
    assert len(cat.load_table(("default", topic)).metadata.snapshots) >= 2
    deadline = time.monotonic() + 60
    while True:
        ours = json.load(open(iceberg_util.current_metadata(iceberg_util.table_dir(b, topic))))
        theirs = cat.load_table(("default", topic)).metadata
        if len(ours["snapshots"]) == 1 and \
                {s.snapshot_id for s in theirs.snapshots} == {ours["snapshots"][0]["snapshot-id"]}:
            break
        assert time.monotonic() < deadline, \
            "the catalog keeps snapshots our idle table expired: %s" % theirs.snapshots
        time.sleep(0.5)
    assert cat.load_table(("default", topic)).scan().to_arrow().num_rows == rows
    # our table properties are there too (the last materialized offsets
    # included), never our bookkeeping of files awaiting deletion
    props = cat.load_table(("default", topic)).metadata.properties
    assert props["lakestream.log.%016x.last-offset" % 0x100000] == str(rows - 1), props
    assert props.get("lakestream.stream") == topic
    assert "lakestream.pending-deletes" not in props
