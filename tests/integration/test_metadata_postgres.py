"""The metadata store on PostgreSQL (metadata.url=postgresql://...): a broker
produces and consumes with it and keeps everything over a restart; three
brokers on one database act as one cluster, and a killed broker's session
lease expires there; a broker over TLS with a password file; a PostgreSQL outage mid-run gives clean errors and loses
no acknowledged record; a bad URL stops the broker at start naming the cause.
The server is a throwaway one from tools/pg/pg.sh (one per module; every test
has its own database)."""
import os
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest

from kafka_util import admin, consume, create_topic, produce_all, producer, unique_topic
import lsbroker

SCRIPT = os.path.join(lsbroker.ROOT, "tools", "pg", "pg.sh")
BIN = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True).stdout.strip() \
    if shutil.which("pg_config") else ""

pytestmark = [pytest.mark.store_agnostic,  # the S3 stage leaves it out (pytest.ini)
              pytest.mark.skipif(not BIN or not os.path.exists(os.path.join(BIN, "pg_ctl")),
                                 reason="PostgreSQL server not installed")]


@pytest.fixture(scope="module")
def pg():
    # not under pytest's tmp dir: as root the server runs as "postgres", which
    # cannot enter root's 0700 pytest directories
    d = tempfile.mkdtemp(prefix="lakestream-pg-")
    r = subprocess.run([SCRIPT, "start", d], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail("starting PostgreSQL failed (run tools/install-deps.sh test): %s" % r.stderr,
                    pytrace=False)
    env = dict(line.split("=", 1) for line in open(os.path.join(d, "env")).read().split())
    env["DIR"] = d
    yield env
    subprocess.run([SCRIPT, "stop", d], capture_output=True)


def _database(pg):
    """A fresh database; its metadata URL."""
    name = "t_" + uuid.uuid4().hex[:10]
    host, port = pg["LS_TEST_PG_ENDPOINT"].split(":")
    subprocess.run([os.path.join(BIN, "createdb"), "-h", host, "-p", port,
                    "-U", pg["LS_TEST_PG_USER"], name], check=True)
    return "postgresql://%s@%s/%s" % (pg["LS_TEST_PG_USER"], pg["LS_TEST_PG_ENDPOINT"], name)


def _records(n, tag):
    return [{"key": b"k%d" % i, "value": b"%s-%d" % (tag.encode(), i)} for i in range(n)]


def _values(msgs):
    return [m.value() for p in sorted(msgs) for m in msgs[p]]


def test_broker_on_postgres_produces_consumes_and_restarts(pg, broker_factory):
    url = _database(pg)
    b = broker_factory("--metadata.url=" + url)
    t = unique_topic("pg")
    create_topic(b.bootstrap, t, partitions=2)
    p = producer(b.bootstrap)
    produce_all(p, t, _records(200, "one"))
    b.restart()
    produce_all(producer(b.bootstrap), t, _records(100, "two"))
    got = _values(consume(b.bootstrap, t, [0, 1]))
    assert sorted(got) == sorted(r["value"] for r in _records(200, "one") + _records(100, "two"))


def test_three_brokers_on_one_database_are_one_cluster(pg, broker_factory, tmp_path):
    url = _database(pg)
    store = lsbroker.shared_object_store_url("pgc", str(tmp_path / "objects"))
    common = ["--metadata.url=" + url, "--object.store.url=" + store,
              "--broker.session.timeout.ms=3000"]
    nodes = [broker_factory("--broker.id=%d" % i, *common, name="node%d" % i)
             for i in (1, 2, 3)]
    b1, b2, b3 = nodes
    t = unique_topic("pgc")
    create_topic(b1.bootstrap, t, partitions=3)
    produce_all(producer(b1.bootstrap), t, _records(150, "b1"))
    produce_all(producer(b3.bootstrap), t, _records(90, "b3"))
    # the topic made on node1 is served by node2, with node1's and node3's records
    want = sorted(r["value"] for r in _records(150, "b1") + _records(90, "b3"))
    assert sorted(_values(consume(b2.bootstrap, t, [0, 1, 2]))) == want

    def brokers_seen():
        a = admin(b2.bootstrap)
        return sorted(a.list_topics(timeout=10).brokers)

    deadline = time.monotonic() + 30
    while brokers_seen() != [1, 2, 3]:
        assert time.monotonic() < deadline, brokers_seen()
        time.sleep(0.2)
    # node1 dies without revoking its session lease: another backend reaps it
    b1.kill9()
    deadline = time.monotonic() + 60
    while brokers_seen() != [2, 3]:
        assert time.monotonic() < deadline, "node1 still registered: %s" % brokers_seen()
        time.sleep(0.2)
    # the survivors still serve everything acknowledged
    assert sorted(_values(consume(b3.bootstrap, t, [0, 1, 2]))) == want


def test_postgres_outage_loses_no_acknowledged_record(pg, broker_factory):
    url = _database(pg)
    b = broker_factory("--metadata.url=" + url)
    b.allow_errors(r"postgresql 127\.0\.0\.1:\d+")
    t = unique_topic("pgo")
    create_topic(b.bootstrap, t, partitions=1)
    acked = []
    p = producer(b.bootstrap, **{"message.timeout.ms": 60000})

    def cb(err, msg):
        if err is None:
            acked.append(msg.value())

    for i in range(50):
        p.produce(t, value=b"pre-%d" % i, on_delivery=cb)
    assert p.flush(60) == 0
    subprocess.run([SCRIPT, "kill", pg["DIR"]], check=True)
    try:
        for i in range(50):
            p.produce(t, value=b"during-%d" % i, on_delivery=cb)
        p.poll(3)  # the broker meets the outage: errors, not acks it cannot keep
    finally:
        subprocess.run([SCRIPT, "restart", pg["DIR"]], check=True)
    assert p.flush(90) == 0
    assert b.alive()
    got = set(_values(consume(b.bootstrap, t, [0], ignore_transient=True)))
    assert set(acked) <= got, "acknowledged but lost: %d" % len(set(acked) - got)
    assert len(acked) >= 50


def test_bad_postgres_urls_stop_the_broker_naming_the_cause(pg, tmp_path):
    url = _database(pg)
    cases = [
        (url.replace("@", ":pw@", 1), "password-file"),
        (url + "?sslmode=disable&bogus=1", "bogus"),
        ("postgresql://u@127.0.0.1:1/db", "127.0.0.1:1"),
    ]
    for i, (bad, want) in enumerate(cases):
        b = lsbroker.Broker(str(tmp_path / ("d%d" % i)), str(tmp_path / ("l%d" % i)),
                            ["--metadata.url=" + bad])
        with pytest.raises(lsbroker.BrokerError) as ei:
            b.start()
        errors = [ln for ln in str(ei.value).splitlines() if " ERROR " in ln]
        assert errors and want in errors[-1], str(ei.value)
        # the broker's own words never repeat the password (the tail's first
        # line is the harness's echo of the command line)
        assert not any(":pw@" in ln for ln in errors)


def _psql(pg, *sql, env=None):
    host, port = pg["LS_TEST_PG_ENDPOINT"].split(":")
    argv = [os.path.join(BIN, "psql"), "-h", host, "-p", port, "-U", pg["LS_TEST_PG_USER"],
            "-d", "lakestream", "-v", "ON_ERROR_STOP=1", "-qAt"]
    for s in sql:
        argv += ["-c", s]  # one transaction each: ALTER SYSTEM refuses a block
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)


def test_postgres_over_tls_with_a_password_file(pg, broker_factory, tmp_path):
    """The broker's own connection to PostgreSQL: TLS with the server's
    certificate checked (sslmode=verify-full, a private CA), a SCRAM password
    read from a file, never from the URL; an untrusted server certificate or a
    plaintext attempt the server refuses stop the broker naming the cause."""
    from test_tls import Pki
    pki = Pki(tmp_path / "pki")
    cert, key = pki.cert("pgserver", "/CN=localhost", san="IP:127.0.0.1,DNS:localhost")
    data = os.path.join(pg["DIR"], "data")
    for src, name in ((cert, "server.crt"), (key, "server.key")):
        dst = os.path.join(data, name)
        shutil.copy(src, dst)
        os.chmod(dst, 0o600)
        if os.getuid() == 0:
            shutil.chown(dst, "postgres")
    user, pw = "ls_tls", "tls-" + uuid.uuid4().hex[:8]
    db = "tls_" + uuid.uuid4().hex[:8]
    hba = os.path.join(data, "pg_hba.conf")
    rules = open(hba).read()
    with open(hba, "w") as f:  # this user: a password, and over TLS only
        f.write("hostssl all %s 127.0.0.1/32 scram-sha-256\n"
                "host all %s 127.0.0.1/32 reject\n" % (user, user) + rules)
    r = _psql(pg, "CREATE ROLE %s LOGIN PASSWORD '%s'" % (user, pw),
              "CREATE DATABASE %s OWNER %s" % (db, user),
              "ALTER SYSTEM SET ssl = on", "SELECT pg_reload_conf()")
    assert r.returncode == 0, r.stderr
    lsbroker.wait_until(lambda: _psql(pg, "SHOW ssl").stdout.strip() == "on", 30,
                        what="PostgreSQL serving TLS")
    pwfile = tmp_path / "pg-password"
    pwfile.write_text(pw + "\n")
    os.chmod(pwfile, 0o600)
    base = "postgresql://%s@%s/%s?password-file=%s" % (user, pg["LS_TEST_PG_ENDPOINT"], db,
                                                      pwfile)
    b = broker_factory("--metadata.url=%s&sslmode=verify-full&sslrootcert=%s" % (base, pki.ca))
    t = unique_topic("pgtls")
    create_topic(b.bootstrap, t, partitions=1)
    produce_all(producer(b.bootstrap), t, _records(50, "tls"))
    b.restart()
    assert sorted(_values(consume(b.bootstrap, t, [0]))) == \
        sorted(r["value"] for r in _records(50, "tls"))
    assert pw not in b.log_text()
    # the session really is TLS (pg_stat_ssl of the broker's connections)
    r = _psql(pg, "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) "
                  "WHERE a.usename = '%s' AND s.ssl" % user)
    assert r.returncode == 0 and int(r.stdout.strip()) >= 1, (r.stdout, r.stderr)
    other = Pki(tmp_path / "other", "otherca")
    for i, (extra, want) in enumerate([
            ("&sslmode=verify-full&sslrootcert=%s" % other.ca, "certificate verify failed"),
            ("&sslmode=disable", "pg_hba.conf rejects connection")]):
        bad = lsbroker.Broker(str(tmp_path / ("bad%d" % i)), str(tmp_path / ("badlog%d" % i)),
                              ["--metadata.url=" + base + extra])
        with pytest.raises(lsbroker.BrokerError) as ei:
            bad.start()
        errors = [ln for ln in str(ei.value).splitlines() if " ERROR " in ln]
        assert errors and want in errors[-1], str(ei.value)
