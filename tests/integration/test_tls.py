"""Kafka listeners (listeners / listener.security.protocol.map /
advertised.listeners, several at once) and TLS on SSL listeners, with real
clients at their defaults.

Certificates are made here with the openssl CLI (a throwaway CA, a server
certificate for 127.0.0.1/localhost, client certificates), never checked in.
"""

import os
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

import lsbroker


pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)

# ---------------------------------------------------------------- brokers

class Listeners:
    """A broker started with its own listener list. ports: name -> port
    (PLAINTEXT or the first name is the one the harness waits on)."""

    def __init__(self, tmp_path, request):
        self.tmp_path = tmp_path
        self.request = request
        self.made = []

    def start(self, listeners, *args, ready=None):
        """listeners: [(NAME, host)]; each gets a free port. ready: the name
        whose port the harness polls (default: the first). Returns (broker, ports)."""
        names = [n for n, _ in listeners]
        ports = lsbroker.free_ports(len(listeners) + 2)
        b = lsbroker.Broker(str(self.tmp_path / ("data%d" % len(self.made))),
                            str(self.tmp_path / "logs"), [])
        spec = ",".join("%s://%s:%d" % (n, h, p) for (n, h), p in zip(listeners, ports))
        b.extra_args += ["--listeners=" + spec] + list(args)
        first = names.index(ready) if ready else 0
        b.port = ports[first]
        b.http_port, b.registry_port = ports[-2], ports[-1]
        self.made.append(b)
        self.request.node._ls_brokers = self.made
        b.start()
        return b, dict(zip(names, ports))

    def finish(self):
        problems = []
        for b in self.made:
            if b.alive():
                b.stop()
            problems += b.final_check() or []
        return problems


@pytest.fixture
def listeners(tmp_path, request):
    ls = Listeners(tmp_path, request)
    yield ls
    problems = ls.finish()
    assert not problems, problems


def start_failure(tmp_path, *args):
    """Runs `lakestream serve` with args; returns (exit code, output) of a
    start expected to fail."""
    binary = lsbroker.binary_path()
    p = subprocess.run([binary, "serve", "--data.dir=%s" % (tmp_path / "fail"),
                        "--http.listen=", "--schema.registry.listen="] + list(args),
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
                       env={k: v for k, v in os.environ.items()
                            if not k.startswith("LAKESTREAM_")})  # the broker reads those
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace")


def metadata_brokers(conf):
    md = AdminClient(conf).list_topics(timeout=20)
    return sorted((b.host, b.port) for b in md.brokers.values())


def produce_consume(conf, n=20):
    """Produces n records to a new topic and reads them back through conf."""
    topic = "t-" + uuid.uuid4().hex[:8]
    p = Producer(dict(conf))
    for i in range(n):
        p.produce(topic, value=b"v%d" % i)
    assert p.flush(30) == 0
    c = Consumer(dict(conf, **{"group.id": "g-" + topic, "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    got = []
    try:
        while len(got) < n:
            m = c.poll(30)
            assert m is not None, "no record within 30 s (%d of %d)" % (len(got), n)
            assert m.error() is None, m.error()
            got.append(m.value())
    finally:
        c.close()
    assert got == [b"v%d" % i for i in range(n)]


# ---------------------------------------------------------------- listeners

def test_two_listeners_each_advertises_its_own(listeners):
    """Two PLAINTEXT listeners under their own names: Metadata answers each
    client with the addresses of the listener it connected through (Kafka's
    rule), and both carry produce and consume."""
    b, ports = listeners.start(
        [("INTERNAL", "127.0.0.1"), ("EXTERNAL", "127.0.0.1")],
        "--listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT")
    internal = {"bootstrap.servers": "127.0.0.1:%d" % ports["INTERNAL"]}
    external = {"bootstrap.servers": "127.0.0.1:%d" % ports["EXTERNAL"]}
    assert metadata_brokers(internal) == [("127.0.0.1", ports["INTERNAL"])]
    assert metadata_brokers(external) == [("127.0.0.1", ports["EXTERNAL"])]
    produce_consume(internal)
    produce_consume(external)


def test_advertised_listeners_per_name(listeners):
    """advertised.listeners names one listener: that one advertises the given
    address, the other its own."""
    ports = lsbroker.free_ports(1)
    b, ports2 = listeners.start(
        [("INTERNAL", "127.0.0.1"), ("EXTERNAL", "127.0.0.1")],
        "--listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        "--advertised.listeners=EXTERNAL://localhost:%d" % ports[0])
    md_ext = AdminClient({"bootstrap.servers": "127.0.0.1:%d" % ports2["EXTERNAL"]}).list_topics(
        timeout=20)
    assert [(x.host, x.port) for x in md_ext.brokers.values()] == [("localhost", ports[0])]
    assert metadata_brokers({"bootstrap.servers": "127.0.0.1:%d" % ports2["INTERNAL"]}) == \
        [("127.0.0.1", ports2["INTERNAL"])]


def test_default_listener_unchanged(broker):
    """No listener settings: one PLAINTEXT listener, as before."""
    assert metadata_brokers({"bootstrap.servers": broker.bootstrap}) == \
        [("127.0.0.1", broker.port)]


@pytest.mark.parametrize("args,want", [
    (["--listeners=SASL_SSL://127.0.0.1:0"],
     "ssl.keystore.location: required by a TLS listener"),
    (["--listeners=CLIENT://127.0.0.1:0"],
     "listener CLIENT has no security protocol in listener.security.protocol.map"),
    (["--listeners=PLAINTEXT://127.0.0.1:0", "--advertised.listeners=SSL://h:1"],
     "advertised.listeners: SSL is not a listener name in listeners"),
])
def test_bad_listener_settings_refused_at_start(tmp_path, args, want):
    rc, out = start_failure(tmp_path, *args)
    assert rc != 0 and want in out, out


# ---------------------------------------------------------------- certificates

def openssl(*args, cwd):
    p = subprocess.run(["openssl"] + list(args), cwd=cwd, capture_output=True)
    assert p.returncode == 0, p.stderr.decode()


class Pki:
    """A throwaway CA and certificates signed by it, in directory d."""

    def __init__(self, d, name="ca"):
        self.d = str(d)
        os.makedirs(self.d, exist_ok=True)
        self.name = name
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-nodes", "-keyout", name + ".key", "-out", name + ".pem", "-days", "2",
                "-subj", "/CN=Test CA %s" % name, cwd=self.d)
        self.ca = self.path(name + ".pem")

    def path(self, f):
        return os.path.join(self.d, f)

    def cert(self, name, subj, san=None, days=2):
        """(certificate, key) files of a certificate for subj signed by this CA."""
        openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", name + ".key", "-out", name + ".csr", "-subj", subj, cwd=self.d)
        ext = []
        if san:
            with open(self.path(name + ".ext"), "w") as f:
                f.write("subjectAltName=%s\n" % san)
            ext = ["-extfile", name + ".ext"]
        openssl("x509", "-req", "-in", name + ".csr", "-CA", self.name + ".pem", "-CAkey",
                self.name + ".key", "-CAcreateserial", "-out", name + ".pem", "-days", str(days),
                *ext, cwd=self.d)
        return self.path(name + ".pem"), self.path(name + ".key")

    def server(self, name="server"):
        """A keystore PEM file (key, then the chain) for 127.0.0.1 and localhost."""
        cert, key = self.cert(name, "/O=Lakestream Test/CN=localhost",
                              san="IP:127.0.0.1,DNS:localhost")
        keystore = self.path(name + "-keystore.pem")
        with open(keystore, "w") as out:
            for f in (key, cert, self.ca):
                out.write(open(f).read())
        return keystore


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


def ssl_conf(port, ca, **extra):
    c = {"bootstrap.servers": "127.0.0.1:%d" % port, "security.protocol": "SSL",
         "ssl.ca.location": ca}
    c.update(extra)
    return c


def connect_fails(conf, timeout=10):
    """True when a client with conf cannot get Metadata: the connection is
    refused by TLS or authentication, not hung. librdkafka reports the refusal
    through error_cb at once (so the answer comes in about a second, not after
    the whole timeout), or keeps failing until the timeout."""
    errors = []
    a = AdminClient(dict(conf, **{"socket.timeout.ms": 5000, "error_cb": errors.append}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            a.list_topics(timeout=0.5)
            return False
        except Exception:
            a.poll(0)  # serves error_cb
            if errors:
                return True
    return True


# ---------------------------------------------------------------- TLS

def test_ssl_and_plaintext_listeners_together(listeners, pki):
    """PLAINTEXT and SSL listeners at once: a TLS client with librdkafka's
    defaults (ssl.ca.location only, hostname verified) produces and consumes
    over SSL, and each listener's Metadata advertises its own port."""
    keystore = pki.server()
    b, ports = listeners.start([("PLAINTEXT", "127.0.0.1"), ("SSL", "127.0.0.1")],
                               "--ssl.keystore.location=" + keystore)
    tls = ssl_conf(ports["SSL"], pki.ca)
    assert metadata_brokers(tls) == [("127.0.0.1", ports["SSL"])]
    assert metadata_brokers({"bootstrap.servers": "127.0.0.1:%d" % ports["PLAINTEXT"]}) == \
        [("127.0.0.1", ports["PLAINTEXT"])]
    produce_consume(tls, n=200)


def test_plaintext_client_to_ssl_port_fails_fast(listeners, pki):
    """A plaintext Kafka client on the SSL port: the broker closes the
    connection at the first bytes, logs it once, and keeps serving."""
    b, ports = listeners.start([("PLAINTEXT", "127.0.0.1"), ("SSL", "127.0.0.1")],
                               "--ssl.keystore.location=" + pki.server())
    assert connect_fails({"bootstrap.servers": "127.0.0.1:%d" % ports["SSL"]})
    lsbroker.wait_until(lambda: "speaking plaintext to a TLS listener" in b.log_text(), 10,
                        what="the broker's line about the plaintext client")
    # raw garbage too: closed, no crash
    import socket
    with socket.create_connection(("127.0.0.1", ports["SSL"]), timeout=5) as s:
        s.sendall(b"\x00\x00\x00\x10" + os.urandom(64))
        s.settimeout(10)
        assert s.recv(100) is not None  # the alert or the close, never a hang
    produce_consume(ssl_conf(ports["SSL"], pki.ca))


def test_wrong_ca_fails_fast(listeners, pki, tmp_path):
    """A client trusting another CA refuses the broker's certificate."""
    b, ports = listeners.start([("PLAINTEXT", "127.0.0.1"), ("SSL", "127.0.0.1")],
                               "--ssl.keystore.location=" + pki.server())
    other = Pki(tmp_path / "other", "other")
    assert connect_fails(ssl_conf(ports["SSL"], other.ca))
    assert not connect_fails(ssl_conf(ports["SSL"], pki.ca))


def test_mtls_required(listeners, pki):
    """ssl.client.auth=required: a client with a certificate of the trusted CA
    is served (and acts as User:<its subject>, Kafka's DEFAULT rule); one
    without a certificate, or with an expired one, is refused."""
    cert, key = pki.cert("alice", "/O=Acme/CN=alice")
    old_cert, old_key = pki.cert("old", "/O=Acme/CN=old", days=-1)
    b, ports = listeners.start([("PLAINTEXT", "127.0.0.1"), ("SSL", "127.0.0.1")],
                               "--ssl.keystore.location=" + pki.server(),
                               "--ssl.truststore.location=" + pki.ca,
                               "--ssl.client.auth=required", "--diag.level=debug")
    mtls = ssl_conf(ports["SSL"], pki.ca, **{"ssl.certificate.location": cert,
                                             "ssl.key.location": key})
    produce_consume(mtls)
    assert "as User:CN=alice,O=Acme" in b.log_text()
    assert connect_fails(ssl_conf(ports["SSL"], pki.ca))
    expired = ssl_conf(ports["SSL"], pki.ca, **{"ssl.certificate.location": old_cert,
                                                "ssl.key.location": old_key})
    assert connect_fails(expired)

    # the broker's refusals share one rate-limited line (one per 10 s): the
    # expired certificate's reason shows with a refusal after the window ends
    def expired_logged():
        if "certificate has expired" in b.log_text():
            return True
        assert connect_fails(expired, timeout=2)
        return False

    lsbroker.wait_until(expired_logged, 30, what="the broker's line about the expired certificate")


def test_mtls_principal_mapping_rules(listeners, pki):
    """ssl.principal.mapping.rules as Kafka's: the first matching rule maps
    the subject (here to the lower-cased CN); a certificate no rule maps is
    refused."""
    cert, key = pki.cert("bob", "/O=Acme/CN=BOB")
    other_cert, other_key = pki.cert("carol", "/O=Elsewhere/CN=carol")
    b, ports = listeners.start(
        [("PLAINTEXT", "127.0.0.1"), ("SSL", "127.0.0.1")],
        "--ssl.keystore.location=" + pki.server(), "--ssl.truststore.location=" + pki.ca,
        "--ssl.client.auth=required", "--diag.level=debug",
        "--ssl.principal.mapping.rules=RULE:^CN=(.*?),O=Acme$/$1/L")
    produce_consume(ssl_conf(ports["SSL"], pki.ca, **{"ssl.certificate.location": cert,
                                                      "ssl.key.location": key}))
    assert "as User:bob" in b.log_text()
    assert connect_fails(ssl_conf(ports["SSL"], pki.ca, **{
        "ssl.certificate.location": other_cert, "ssl.key.location": other_key}))
    lsbroker.wait_until(lambda: "no rule of ssl.principal.mapping.rules applies to "
                                "'CN=carol,O=Elsewhere'" in b.log_text(), 10,
                        what="the broker's line about the unmapped certificate")


def test_sighup_reloads_certificate(listeners, pki, tmp_path):
    """SIGHUP: new connections get the new certificate (here from a new CA,
    so only clients trusting it connect); a broken file keeps the current
    one and the log says why."""
    import shutil
    import signal
    keystore = str(tmp_path / "keystore.pem")
    shutil.copy(pki.server(), keystore)
    b, ports = listeners.start([("PLAINTEXT", "127.0.0.1"), ("SSL", "127.0.0.1")],
                               "--ssl.keystore.location=" + keystore)
    assert not connect_fails(ssl_conf(ports["SSL"], pki.ca))
    new = Pki(tmp_path / "new", "newca")
    shutil.copy(new.server(), keystore)
    b.proc.send_signal(signal.SIGHUP)
    lsbroker.wait_until(lambda: "listener SSL: certificate and key reloaded" in b.log_text(), 10,
                        what="the reload line")
    assert connect_fails(ssl_conf(ports["SSL"], pki.ca))
    produce_consume(ssl_conf(ports["SSL"], new.ca))
    with open(keystore, "w") as f:
        f.write("not a certificate\n")
    b.proc.send_signal(signal.SIGHUP)
    lsbroker.wait_until(lambda: "listener SSL keeps its current certificate: "
                                "ssl.keystore.location" in b.log_text(), 10,
                        what="the failed reload line")
    produce_consume(ssl_conf(ports["SSL"], new.ca))


@pytest.mark.parametrize("args,want", [
    (["--ssl.keystore.type=JKS"], "ssl.keystore.type: 'JKS' is not supported"),
    (["--ssl.keystore.type=PKCS12"], "ssl.keystore.type: 'PKCS12' is not supported"),
    ([], "ssl.keystore.location: required by a TLS listener"),
    (["--ssl.enabled.protocols=TLSv1.1"], "ssl.enabled.protocols: 'TLSv1.1' is not supported"),
    (["--ssl.cipher.suites=TLS_NOPE"], "ssl.cipher.suites: unknown suite 'TLS_NOPE'"),
    (["--ssl.client.auth=required"], "ssl.client.auth=required needs the CA"),
    (["--ssl.principal.mapping.rules=RULE:x"], "ssl.principal.mapping.rules: invalid rule"),
])
def test_bad_tls_settings_refused_at_start(tmp_path, pki, args, want):
    keystore = [] if not args or "JKS" in args[0] or "PKCS12" in args[0] else \
        ["--ssl.keystore.location=" + pki.server("srv-" + uuid.uuid4().hex[:6])]
    rc, out = start_failure(tmp_path, "--listeners=SSL://127.0.0.1:0", *(keystore + args))
    assert rc != 0 and want in out, out


# ---------------------------------------------------------------- other clients

JLIB = os.path.join(lsbroker.ROOT, ".cache", "java", "lib")
JAVA_SRC = os.path.join(lsbroker.ROOT, "tests", "integration", "java", "tls", "TlsClient.java")
JS_TEST = os.path.join(lsbroker.ROOT, "tests", "integration", "js", "test_kafkajs_tls.js")


def run_client(argv, env, timeout=240):
    p = subprocess.run(argv, env=dict(os.environ, **env), capture_output=True, timeout=timeout)
    out = (p.stdout + p.stderr).decode(errors="replace")
    return p.returncode, out


@pytest.mark.skipif(not os.path.isdir(JLIB), reason="Java client jars not installed")
@pytest.mark.parametrize("mtls", [False, True], ids=["ssl", "mtls"])
def test_java_client_over_ssl_with_pem_truststore(listeners, pki, tmp_path, mtls):
    """Kafka's Java client with ssl.truststore.type=PEM (and, for mTLS,
    ssl.keystore.type=PEM) produces and consumes over SSL."""
    out = str(tmp_path / "classes")
    r = subprocess.run(["javac", "-nowarn", "-cp", JLIB + "/*", "-d", out, JAVA_SRC],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    args = ["--ssl.keystore.location=" + pki.server()]
    env = {"LS_TEST_CA": pki.ca}
    if mtls:
        cert, key = pki.cert("java-client", "/O=Acme/CN=java")
        ks = str(tmp_path / "java-client-keystore.pem")
        with open(ks, "w") as f:
            f.write(open(key).read() + open(cert).read())
        env["LS_TEST_KEYSTORE"] = ks
        args += ["--ssl.truststore.location=" + pki.ca, "--ssl.client.auth=required",
                 "--diag.level=debug"]
    b, ports = listeners.start([("PLAINTEXT", "127.0.0.1"), ("SSL", "127.0.0.1")], *args)
    env["LS_TEST_BOOTSTRAP"] = "127.0.0.1:%d" % ports["SSL"]
    rc, text = run_client(["java", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp",
                           out + ":" + JLIB + "/*", "TlsClient"], env)
    assert rc == 0 and "PASS tls" in text, text[-3000:]
    if mtls:
        assert "as User:CN=java,O=Acme" in b.log_text()


@pytest.mark.skipif(not os.path.isdir(os.path.join(lsbroker.ROOT, "tests", "integration", "js",
                                                   "node_modules", "kafkajs")),
                    reason="kafkajs not installed")
def test_kafkajs_over_ssl(listeners, pki):
    b, ports = listeners.start([("PLAINTEXT", "127.0.0.1"), ("SSL", "127.0.0.1")],
                               "--ssl.keystore.location=" + pki.server())
    rc, text = run_client(["node", JS_TEST], {"LS_TEST_BOOTSTRAP": "127.0.0.1:%d" % ports["SSL"],
                                              "LS_TEST_CA": pki.ca})
    assert rc == 0 and "PASS kafkajs_tls" in text, text[-3000:]


# ---------------------------------------------------------------- SASL_SSL

@pytest.mark.parametrize("mech", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_ssl_each_mechanism(listeners, pki, mech):
    """SASL over TLS (SASL_SSL) with librdkafka's defaults besides the
    credentials and the CA: each mechanism authenticates and the client
    produces and consumes; a wrong password fails fast; a plaintext SASL
    client to the TLS port fails fast."""
    keystore = pki.server("sasl-server")
    b, ports = listeners.start([("PLAINTEXT", "127.0.0.1"), ("SASL_SSL", "127.0.0.1")],
                               "--ssl.keystore.location=" + keystore,
                               "--sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512")
    r = subprocess.run([b.binary, "users", "add", "alice", "--data.dir=" + b.data_dir],
                       input=b"alice-secret\n", capture_output=True, timeout=60, env=b._env())
    assert r.returncode == 0, r.stderr
    conf = ssl_conf(ports["SASL_SSL"], pki.ca, **{"security.protocol": "SASL_SSL",
                                                  "sasl.mechanism": mech,
                                                  "sasl.username": "alice",
                                                  "sasl.password": "alice-secret"})
    assert metadata_brokers(conf) == [("127.0.0.1", ports["SASL_SSL"])]
    produce_consume(conf, n=50)
    assert connect_fails(dict(conf, **{"sasl.password": "wrong"}))
    assert connect_fails(dict(conf, **{"security.protocol": "SASL_PLAINTEXT"}))
    assert "alice-secret" not in b.log_text()
