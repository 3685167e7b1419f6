"""SASL on Kafka listeners (SASL_PLAINTEXT): PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512 with real clients at their defaults, the gate before
authentication, failures that end at once with Kafka's errors, users managed
by `lakestream users`, AlterUserScramCredentials / DescribeUserScramCredentials
and Kafka's own kafka-configs, re-authentication (connections.max.reauth.ms),
and users shared by the brokers of a cluster.
"""

import os
import socket
import struct
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialDeletion, UserScramCredentialUpsertion)

import lsbroker

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


MECHS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"


class SaslBroker:
    """A broker whose only listener is SASL_PLAINTEXT."""

    def __init__(self, tmp_path, request, *args, name="sasl", meta_url=None, objects=None):
        port, http, reg = lsbroker.free_ports(3)
        self.b = lsbroker.Broker(str(tmp_path / ("data-" + name)), str(tmp_path / "logs"), [],
                                 name=name)
        self.store_args = []
        if meta_url:
            self.store_args += ["--metadata.url=" + meta_url]
        if objects:
            self.store_args += ["--object.store.url=" + objects]
        self.b.extra_args += ["--listeners=SASL_PLAINTEXT://127.0.0.1:%d" % port] + \
            self.store_args + list(args)
        self.b.port, self.b.http_port, self.b.registry_port = port, http, reg
        # failed logins are warnings, not errors; nothing else is allowed
        made = getattr(request.node, "_ls_brokers", [])
        made.append(self.b)
        request.node._ls_brokers = made
        self.b.start()

    @property
    def bootstrap(self):
        return self.b.bootstrap

    def users(self, *args, password=None):
        """Runs `lakestream users ARGS` on this broker's metadata store."""
        p = subprocess.run([self.b.binary, "users"] + list(args) +
                           ["--data.dir=" + self.b.data_dir] + self.store_args,
                           input=(password + "\n").encode() if password is not None else b"",
                           capture_output=True, timeout=60, env=self.b._env())
        return p.returncode, (p.stdout + p.stderr).decode(errors="replace")

    def add_user(self, name, password, *mechs):
        args = ["add", name]
        for m in mechs:
            args += ["--mechanism", m]
        rc, out = self.users(*args, password=password)
        assert rc == 0, out


@pytest.fixture
def sasl_broker(tmp_path, request):
    made = []

    def start(*args, **kw):
        sb = SaslBroker(tmp_path, request, *args, **kw)
        made.append(sb)
        return sb
    yield start
    problems = []
    for sb in made:
        problems += sb.b.final_check() or []
    assert not problems, problems


def client_conf(sb, mech, user, password, **extra):
    conf = {"bootstrap.servers": sb.bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mech, "sasl.username": user, "sasl.password": password}
    conf.update(extra)
    return conf


def produce_consume(conf, n=20):
    topic = "t-" + uuid.uuid4().hex[:8]
    p = Producer(conf)
    for i in range(n):
        p.produce(topic, value=b"v%d" % i)
    assert p.flush(30) == 0
    c = Consumer(dict(conf, **{"group.id": "g-" + topic, "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    assert got == [b"v%d" % i for i in range(n)]


# ------------------------------------------------------------- the clients

@pytest.mark.parametrize("mech", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_each_mechanism_produces_and_consumes(sasl_broker, mech):
    sb = sasl_broker("--sasl.enabled.mechanisms=" + MECHS)
    sb.add_user("alice", "alice-secret")
    produce_consume(client_conf(sb, mech, "alice", "alice-secret"))


def test_default_mechanisms_are_scram(sasl_broker):
    """sasl.enabled.mechanisms unset: SCRAM-SHA-256 and -512, not PLAIN."""
    sb = sasl_broker()
    sb.add_user("alice", "pw")
    produce_consume(client_conf(sb, "SCRAM-SHA-512", "alice", "pw"), n=3)
    err = auth_error(client_conf(sb, "PLAIN", "alice", "pw"))
    assert "Unsupported SASL mechanism" in err.str(), err.str()
    assert "SCRAM-SHA-256,SCRAM-SHA-512" in err.str(), err.str()


def auth_error(conf):
    """The error a client reports on connecting (it must come: no hang)."""
    errs = []
    p = Producer(dict(conf, error_cb=errs.append))
    deadline = time.monotonic() + 30
    while not errs and time.monotonic() < deadline:
        p.poll(0.1)  # serves error_cb
    assert errs, "no error reported"
    return errs[0]


@pytest.mark.parametrize("mech", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_wrong_password_fails_with_authentication_error(sasl_broker, mech):
    sb = sasl_broker("--sasl.enabled.mechanisms=" + MECHS)
    right, wrong = "R1ght-pw-7c3", "Wr0ng-pw-9d1"
    sb.add_user("alice", right)
    for user, pw in (("alice", wrong), ("nobody", right)):
        err = auth_error(client_conf(sb, mech, user, pw))
        assert err.code() == KafkaError._AUTHENTICATION, err
        assert "Authentication failed" in err.str(), err.str()
        assert wrong not in err.str() and right not in err.str()
    # the broker logged the failure as a warning, never the password
    log = sb.b.log_text()
    assert "failed authentication from" in log
    assert right not in log and wrong not in log


# ------------------------------------------------------- the wire, by hand

def _str(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class Wire:
    """One raw connection: requests in non-flexible versions, replies parsed
    just enough for these tests."""

    def __init__(self, sb):
        self.s = socket.create_connection(("127.0.0.1", sb.b.port), timeout=20)
        self.corr = 0

    def send(self, key, version, body):
        self.corr += 1
        payload = struct.pack(">hhi", key, version, self.corr) + _str("raw-sasl-test") + body
        self.s.sendall(struct.pack(">i", len(payload)) + payload)

    def send_raw(self, token):
        self.s.sendall(struct.pack(">i", len(token)) + token)

    def recv(self):
        """The next frame, or None when the broker closed the connection."""
        head = self._read(4)
        if head is None:
            return None
        return self._read(struct.unpack(">i", head)[0])

    def _read(self, n):
        out = b""
        while len(out) < n:
            try:
                chunk = self.s.recv(n - len(out))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            out += chunk
        return out

    def handshake(self, mech, version=1):
        self.send(17, version, _str(mech))
        r = self.recv()
        err, n = struct.unpack(">hi", r[4:10])
        mechs, p = [], 10
        for _ in range(n):
            ln = struct.unpack(">h", r[p:p + 2])[0]
            mechs.append(r[p + 2:p + 2 + ln].decode())
            p += 2 + ln
        return err, mechs

    def authenticate(self, token, version=1):
        """(error, message, token, session lifetime) of SaslAuthenticate v0/v1."""
        self.send(36, version, struct.pack(">i", len(token)) + token)
        r = self.recv()
        if r is None:
            return None
        err, mlen = struct.unpack(">hh", r[4:8])
        p = 8
        msg = None
        if mlen >= 0:
            msg, p = r[p:p + mlen].decode(), p + mlen
        tlen = struct.unpack(">i", r[p:p + 4])[0]
        tok = r[p + 4:p + 4 + tlen]
        p += 4 + tlen
        life = struct.unpack(">q", r[p:p + 8])[0] if version >= 1 else None
        return err, msg, tok, life

    def metadata(self):
        """Metadata v1 for all topics: the reply, or None if the connection closed."""
        self.send(3, 1, struct.pack(">i", -1))
        return self.recv()

    def api_versions(self):
        self.send(18, 0, b"")
        r = self.recv()
        return struct.unpack(">h", r[4:6])[0]

    def close(self):
        self.s.close()


def plain(user, pw):
    return b"\0" + user.encode() + b"\0" + pw.encode()


def test_requests_before_authentication_are_refused(sasl_broker):
    sb = sasl_broker("--sasl.enabled.mechanisms=" + MECHS)
    sb.add_user("alice", "pw-a")
    # ApiVersions is served; anything else closes the connection unanswered
    w = Wire(sb)
    assert w.api_versions() == 0
    assert w.metadata() is None
    # SaslAuthenticate before a handshake: ILLEGAL_SASL_STATE, then closed
    w = Wire(sb)
    err, msg, _, _ = w.authenticate(plain("alice", "pw-a"))
    assert err == 34 and "SaslHandshake" in msg
    assert w.recv() is None
    # a mechanism we do not offer: UNSUPPORTED_SASL_MECHANISM listing ours, then closed
    w = Wire(sb)
    assert w.handshake("GSSAPI") == (33, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
    assert w.recv() is None
    # a failed authentication: SASL_AUTHENTICATION_FAILED with Kafka's message,
    # then closed; a request sent behind it is never served
    w = Wire(sb)
    assert w.handshake("PLAIN") == (0, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
    w.send(36, 1, struct.pack(">i", 11) + plain("alice", "nope!"))
    w.send(3, 1, struct.pack(">i", -1))
    r = w.recv()
    assert struct.unpack(">h", r[4:6])[0] == 58
    assert b"Invalid username or password" in r
    assert w.recv() is None
    # the right password: served, as User:alice
    w = Wire(sb)
    assert w.handshake("PLAIN")[0] == 0
    assert w.authenticate(plain("alice", "pw-a"))[0] == 0
    assert w.metadata() is not None
    # a second SaslAuthenticate after success: ILLEGAL_SASL_STATE, connection kept
    err, msg, _, _ = w.authenticate(plain("alice", "pw-a"))
    assert err == 34 and "after successful authentication" in msg
    assert w.metadata() is not None
    w.close()


def test_v0_handshake_then_bare_tokens(sasl_broker):
    """SaslHandshake v0 (kafka-python before 2.1, Sarama, old clients): the
    tokens follow as bare frames without request headers."""
    sb = sasl_broker("--sasl.enabled.mechanisms=" + MECHS)
    sb.add_user("alice", "pw-a")
    w = Wire(sb)
    assert w.handshake("PLAIN", version=0)[0] == 0
    w.send_raw(plain("alice", "pw-a"))
    assert w.recv() == b""  # PLAIN's empty server token
    assert w.metadata() is not None
    w = Wire(sb)
    assert w.handshake("PLAIN", version=0)[0] == 0
    w.send_raw(plain("alice", "bad"))
    assert w.recv() is None  # v0 has no error to carry: closed


def test_session_lifetime_and_reauthentication(sasl_broker):
    """connections.max.reauth.ms: SaslAuthenticate v1 tells the lifetime; a
    connection that did not re-authenticate in time is closed at its next
    request; one that did keeps working, as the same principal only."""
    life = 1500
    sb = sasl_broker("--sasl.enabled.mechanisms=" + MECHS, "--connections.max.reauth.ms=%d" % life)
    sb.add_user("alice", "pw-a")
    sb.add_user("bob", "pw-b")
    stale, fresh, other = Wire(sb), Wire(sb), Wire(sb)
    for w, who in ((stale, "alice"), (fresh, "alice"), (other, "alice")):
        assert w.handshake("PLAIN")[0] == 0
        err, _, _, got_life = w.authenticate(plain(who, "pw-" + who[0]))
        assert err == 0 and got_life == life
        assert w.metadata() is not None
    time.sleep(life / 1000.0 + 0.3)  # let the sessions expire (no timing asserted)
    # re-authenticated: served again
    assert fresh.handshake("PLAIN")[0] == 0
    assert fresh.authenticate(plain("alice", "pw-a"))[0] == 0
    assert fresh.metadata() is not None
    # not re-authenticated: closed at the next request
    assert stale.metadata() is None
    # re-authentication as someone else: refused and closed
    assert other.handshake("PLAIN")[0] == 0
    err, msg, _, _ = other.authenticate(plain("bob", "pw-b"))
    assert err == 58 and "Cannot change principals" in msg
    assert other.recv() is None
    assert "SASL session expired" in sb.b.log_text()


def test_librdkafka_reauthenticates(sasl_broker):
    """librdkafka at its defaults re-authenticates within the lifetime the
    broker gives, so its connections are never closed for it."""
    life = 2000
    sb = sasl_broker("--connections.max.reauth.ms=%d" % life)
    sb.add_user("alice", "pw-a")
    conf = client_conf(sb, "SCRAM-SHA-256", "alice", "pw-a")
    topic = "t-" + uuid.uuid4().hex[:8]
    p = Producer(conf)
    deadline = time.monotonic() + 3 * life / 1000.0
    n = 0
    while time.monotonic() < deadline:
        p.produce(topic, value=b"x")
        n += 1
        assert p.flush(30) == 0
        time.sleep(0.2)
    assert n > 10
    assert "SASL session expired" not in sb.b.log_text()


# ------------------------------------------------------------- the users

def alter(admin, changes):
    """{user: None or the KafkaError of its result}."""
    out = {}
    for user, fut in admin.alter_user_scram_credentials(changes).items():
        try:
            fut.result(30)
            out[user] = None
        except KafkaException as e:
            out[user] = e.args[0]
    return out


def logs_in(sb, mech, user, pw):
    """Whether a client at its defaults gets authenticated (else the error)."""
    errs = []
    p = Producer(dict(client_conf(sb, mech, user, pw), error_cb=errs.append))
    md = None
    deadline = time.monotonic() + 30
    while md is None and not errs and time.monotonic() < deadline:
        try:
            md = p.list_topics(timeout=1)
        except KafkaException:
            pass
        p.poll(0)
    return md is not None and not errs


def test_alter_and_describe_user_scram_credentials(sasl_broker):
    """The AdminClient (KIP-554) as Kafka answers it; users created this way
    log in with every mechanism; every change is an audit line."""
    sb = sasl_broker("--sasl.enabled.mechanisms=" + MECHS)
    sb.add_user("admin", "admin-pw")
    a = AdminClient(client_conf(sb, "SCRAM-SHA-512", "admin", "admin-pw"))
    s256 = ScramMechanism.SCRAM_SHA_256
    s512 = ScramMechanism.SCRAM_SHA_512
    assert alter(a, [UserScramCredentialUpsertion("bob", ScramCredentialInfo(s256, 8192),
                                                  b"Bob-pw-42", b"some-salt")]) == {"bob": None}
    d = a.describe_user_scram_credentials(["bob"])["bob"].result(30)
    assert [(c.mechanism, c.iterations) for c in d.scram_credential_infos] == [(s256, 8192)]
    assert logs_in(sb, "SCRAM-SHA-256", "bob", "Bob-pw-42")
    assert logs_in(sb, "PLAIN", "bob", "Bob-pw-42")  # PLAIN checks the SCRAM credential
    assert not logs_in(sb, "SCRAM-SHA-512", "bob", "Bob-pw-42")  # none for -512
    # Kafka's errors
    res = alter(a, [UserScramCredentialUpsertion("carol", ScramCredentialInfo(s256, 1000), b"x"),
                    UserScramCredentialUpsertion("dave", ScramCredentialInfo(s512, 20000), b"x"),
                    UserScramCredentialDeletion("bob", s512)])
    assert res["carol"].code() == KafkaError.UNACCEPTABLE_CREDENTIAL
    assert res["dave"].code() == KafkaError.UNACCEPTABLE_CREDENTIAL
    assert res["bob"].code() == KafkaError.RESOURCE_NOT_FOUND
    with pytest.raises(KafkaException) as e:
        a.describe_user_scram_credentials(["nobody"])["nobody"].result(30)
    assert e.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND
    everyone = a.describe_user_scram_credentials().result(30)
    assert sorted(everyone) == ["admin", "bob"]
    # a credential for each mechanism, then delete one: the other still works
    assert alter(a, [UserScramCredentialUpsertion("bob", ScramCredentialInfo(s512, 4096),
                                                  b"Bob-pw-43")]) == {"bob": None}
    assert logs_in(sb, "SCRAM-SHA-512", "bob", "Bob-pw-43")
    assert alter(a, [UserScramCredentialDeletion("bob", s256)]) == {"bob": None}
    assert not logs_in(sb, "SCRAM-SHA-256", "bob", "Bob-pw-42")
    assert logs_in(sb, "SCRAM-SHA-512", "bob", "Bob-pw-43")
    # the CLI sees the same users
    rc, out = sb.users("list")
    assert rc == 0 and "bob" in out and "SCRAM-SHA-512(iterations=4096)" in out, out
    log = sb.b.log_text()
    assert "User:admin from 127.0.0.1: upsert SCRAM credential user=bob mechanism=SCRAM-SHA-256 " \
           "iterations=8192: done" in log
    assert "delete SCRAM credential user=bob mechanism=SCRAM-SHA-512: Attempt to delete" in log
    assert "Bob-pw" not in log


def test_users_cli(sasl_broker, tmp_path):
    sb = sasl_broker("--sasl.enabled.mechanisms=" + MECHS)
    # never a password argument
    rc, out = sb.users("add", "eve", "--password=x")
    assert rc == 2 and "--password-file" in out
    pwfile = tmp_path / "pw"
    pwfile.write_text("Eve-pw-1\n")
    rc, out = sb.users("add", "eve", "--mechanism", "SCRAM-SHA-256", "--iterations", "5000",
                       "--password-file", str(pwfile))
    assert rc == 0, out
    assert "upsert SCRAM credential user=eve mechanism=SCRAM-SHA-256 iterations=5000" in out
    assert "Eve-pw-1" not in out
    assert logs_in(sb, "SCRAM-SHA-256", "eve", "Eve-pw-1")
    rc, out = sb.users("add", "eve", "--iterations", "100", password="x")
    assert rc == 2 and "4096..16384" in out
    rc, out = sb.users("delete", "eve", "--mechanism", "SCRAM-SHA-512")
    assert rc == 1 and "no SCRAM-SHA-512 credential" in out
    rc, out = sb.users("delete", "eve")  # every credential
    assert rc == 0 and "delete SCRAM credential user=eve mechanism=SCRAM-SHA-256" in out, out
    assert "mechanism=SCRAM-SHA-512" not in out
    rc, out = sb.users("delete", "eve")
    assert rc == 1 and "user eve has no credentials" in out
    assert not logs_in(sb, "SCRAM-SHA-256", "eve", "Eve-pw-1")
    rc, out = sb.users("list")
    assert rc == 0 and "eve" not in out


# ------------------------------------------------- other clients and tools

HERE = os.path.dirname(os.path.abspath(__file__))
JAVA_LIB = os.path.join(lsbroker.ROOT, ".cache", "java", "lib")
TOOLS_LIB = os.path.join(lsbroker.ROOT, ".cache", "java", "tools")
JVM = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


@pytest.fixture(scope="module")
def java_client(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("sasl_java"))
    cp = os.path.join(JAVA_LIB, "*")
    r = subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", out,
                        os.path.join(HERE, "java", "sasl", "SaslClient.java")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr

    def run(*args):
        r = subprocess.run(JVM + ["-cp", out + os.pathsep + cp, "SaslClient"] + list(args),
                           capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout.strip().splitlines()[-1]
    return run


@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_java_client(sasl_broker, java_client, mech):
    sb = sasl_broker()
    sb.add_user("alice", "Alice-pw-1")
    topic = "t-" + uuid.uuid4().hex[:8]
    assert java_client(sb.bootstrap, mech, "alice", "Alice-pw-1", topic, "10") == "OK 10"
    out = java_client(sb.bootstrap, mech, "alice", "nope", topic + "x", "1")
    assert out.startswith("AUTH SaslAuthenticationException: Authentication failed"), out


def kafkajs(*args):
    r = subprocess.run(["node", os.path.join(HERE, "js", "sasl_client.js")] + list(args),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.strip().splitlines()[-1]


def test_kafkajs_scram_sha_256(sasl_broker):
    sb = sasl_broker()
    sb.add_user("alice", "Alice-pw-1")
    topic = "t-" + uuid.uuid4().hex[:8]
    assert kafkajs(sb.bootstrap, "scram-sha-256", "alice", "Alice-pw-1", topic, "10") == "OK 10"
    out = kafkajs(sb.bootstrap, "scram-sha-256", "alice", "nope", topic, "1")
    assert out.startswith("AUTH KafkaJSSASLAuthenticationError"), out


def test_kafka_python(sasl_broker):
    """kafka-python's own SCRAM and PLAIN at its defaults."""
    from kafka import KafkaConsumer, KafkaProducer
    sb = sasl_broker("--sasl.enabled.mechanisms=" + MECHS)
    sb.add_user("alice", "Alice-pw-1")
    for mech in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        topic = "t-" + uuid.uuid4().hex[:8]
        conf = dict(bootstrap_servers=sb.bootstrap, security_protocol="SASL_PLAINTEXT",
                    sasl_mechanism=mech, sasl_plain_username="alice",
                    sasl_plain_password="Alice-pw-1")
        p = KafkaProducer(**conf)
        for i in range(5):
            p.send(topic, b"v%d" % i)
        p.flush(30)
        p.close()
        c = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=20000, **conf)
        got = []
        for m in c:
            got.append(m.value)
            if len(got) == 5:
                break
        c.close()
        assert got == [b"v%d" % i for i in range(5)], mech


def kafka_configs(sb, tmp_path, user, password, *args):
    props = tmp_path / "admin.properties"
    props.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        "username=\"%s\" password=\"%s\";\n" % (user, password))
    r = subprocess.run(JVM + ["-cp", os.path.join(TOOLS_LIB, "*"), "org.apache.kafka.tools.ConfigCommand",
                              "--bootstrap-server", sb.bootstrap, "--command-config", str(props)]
                       + list(args), capture_output=True, text=True, timeout=180)
    return r.returncode, r.stdout + r.stderr


def test_kafka_configs_manages_scram_users(sasl_broker, tmp_path):
    """Kafka's own tool: kafka-configs --alter --add-config
    'SCRAM-SHA-256=[password=...]' --entity-type users (ConfigCommand, which
    sends AlterUserScramCredentials), then --describe and --delete-config."""
    if not os.path.exists(TOOLS_LIB) or not any(f.startswith("kafka_2.13-")
                                                for f in os.listdir(TOOLS_LIB)):
        pytest.fail("kafka_2.13 (ConfigCommand) missing from .cache/java/tools: run "
                    "tools/install-deps.sh test", pytrace=False)
    sb = sasl_broker("--sasl.enabled.mechanisms=" + MECHS)
    sb.add_user("admin", "Admin-pw-1")
    rc, out = kafka_configs(sb, tmp_path, "admin", "Admin-pw-1", "--alter", "--add-config",
                            "SCRAM-SHA-256=[iterations=8192,password=Alice-pw-1],"
                            "SCRAM-SHA-512=[password=Alice-pw-1]",
                            "--entity-type", "users", "--entity-name", "alice")
    assert rc == 0, out
    assert logs_in(sb, "SCRAM-SHA-256", "alice", "Alice-pw-1")
    assert logs_in(sb, "SCRAM-SHA-512", "alice", "Alice-pw-1")
    rc, out = kafka_configs(sb, tmp_path, "admin", "Admin-pw-1", "--describe",
                            "--entity-type", "users", "--entity-name", "alice")
    assert rc == 0, out
    assert "SCRAM-SHA-256=iterations=8192" in out and "SCRAM-SHA-512=iterations=4096" in out, out
    rc, out = kafka_configs(sb, tmp_path, "admin", "Admin-pw-1", "--alter", "--delete-config",
                            "SCRAM-SHA-512", "--entity-type", "users", "--entity-name", "alice")
    assert rc == 0, out
    assert not logs_in(sb, "SCRAM-SHA-512", "alice", "Alice-pw-1")
    assert logs_in(sb, "SCRAM-SHA-256", "alice", "Alice-pw-1")
    # below Kafka's minimum: refused with its error
    rc, out = kafka_configs(sb, tmp_path, "admin", "Admin-pw-1", "--alter", "--add-config",
                            "SCRAM-SHA-256=[iterations=1024,password=x]",
                            "--entity-type", "users", "--entity-name", "bob")
    assert rc != 0 and "iterations" in out.lower(), out


def test_users_shared_by_the_brokers_of_a_cluster(sasl_broker, etcd, tmp_path):
    """A user created through AlterUserScramCredentials on one broker logs in
    on another broker of the cluster at once (one metadata store); a user
    deleted there is refused everywhere."""
    meta = "etcd://%s/sasl-%s" % (etcd, uuid.uuid4().hex[:8])
    objects = lsbroker.shared_object_store_url("sasl", str(tmp_path / "objects"))
    b1 = sasl_broker("--broker.id=1", name="node1", meta_url=meta, objects=objects)
    b2 = sasl_broker("--broker.id=2", name="node2", meta_url=meta, objects=objects)
    b1.add_user("admin", "Admin-pw-1")
    a = AdminClient(client_conf(b1, "SCRAM-SHA-256", "admin", "Admin-pw-1",
                                **{"bootstrap.servers": b1.bootstrap}))
    assert alter(a, [UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"Carol-pw-1")]) == \
        {"carol": None}
    assert logs_in(b2, "SCRAM-SHA-512", "carol", "Carol-pw-1")
    produce_consume(client_conf(b2, "SCRAM-SHA-512", "carol", "Carol-pw-1",
                                **{"bootstrap.servers": b2.bootstrap}), n=5)
    assert alter(a, [UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_512)]) == \
        {"carol": None}
    assert not logs_in(b2, "SCRAM-SHA-512", "carol", "Carol-pw-1")


def test_sasl_principals_meet_the_authorizer(sasl_broker):
    """The principal a SASL login sets is the one ACLs name: with the
    authorizer on and User:admin the only super user, alice sees no topic and
    cannot produce until admin grants her WRITE and DESCRIBE on it."""
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType,
                                       NewTopic, ResourcePatternType, ResourceType)
    sb = sasl_broker("--authorizer.class.name=org.apache.kafka.metadata.authorizer."
                     "StandardAuthorizer", "--super.users=User:admin")
    sb.b.allow_errors(r"audit")
    sb.add_user("admin", "Admin-pw-1")
    sb.add_user("alice", "Alice-pw-1")
    admin = AdminClient(client_conf(sb, "SCRAM-SHA-256", "admin", "Admin-pw-1"))
    topic = "t-" + uuid.uuid4().hex[:8]
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    alice = client_conf(sb, "SCRAM-SHA-256", "alice", "Alice-pw-1")
    assert topic not in AdminClient(alice).list_topics(timeout=30).topics
    p = Producer(dict(alice, **{"message.timeout.ms": 5000}))
    errs = []
    p.produce(topic, b"x", on_delivery=lambda e, m: errs.append(e))
    p.flush(30)
    assert errs and errs[0] is not None and \
        errs[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errs
    for op in (AclOperation.WRITE, AclOperation.DESCRIBE):
        b = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice", "*",
                       op, AclPermissionType.ALLOW)
        admin.create_acls([b])[b].result(30)
    assert topic in AdminClient(alice).list_topics(timeout=30).topics
    p = Producer(alice)
    errs = []
    p.produce(topic, b"y", on_delivery=lambda e, m: errs.append(e))
    p.flush(30)
    assert errs == [None]
    assert "audit" in sb.b.log_text() and "User:alice" in sb.b.log_text()
