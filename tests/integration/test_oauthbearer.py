"""SASL/OAUTHBEARER on a SASL_PLAINTEXT listener: JWTs minted here (RS256
with the cryptography package) checked against a JWKS file and a JWKS served
over HTTP; librdkafka with its default token method and an oauth_cb;
kafka-python with a token provider; Kafka's Java client with a login
callback handler; the principal (sub) meeting the
authorizer; an expired or foreign token failing cleanly with
SASL_AUTHENTICATION_FAILED; the session lifetime capped by the token's exp
and a re-authentication with a fresh token.
"""

import base64
import http.server
import json
import os
import socket
import subprocess
import threading
import time
import uuid

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

import lsbroker
from test_sasl import HERE, JAVA_LIB, JVM, SaslBroker, Wire, auth_error, produce_consume


pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def int_b64u(n):
    return b64u(n.to_bytes((n.bit_length() + 7) // 8, "big"))


class Idp:
    """An identity provider: an RSA key, its JWKS and tokens it signs."""

    def __init__(self, kid="k1"):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = kid

    def jwks(self):
        pub = self.key.public_key().public_numbers()
        return json.dumps({"keys": [{"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.kid,
                                     "n": int_b64u(pub.n), "e": int_b64u(pub.e)}]})

    def token(self, sub, lifetime=600, **claims):
        now = int(time.time())
        body = {"sub": sub, "iat": now, "exp": now + lifetime, "iss": "https://idp.test",
                "aud": "kafka", "scope": "kafka"}
        body.update(claims)
        head = b64u(json.dumps({"alg": "RS256", "typ": "JWT", "kid": self.kid}).encode())
        data = head + "." + b64u(json.dumps(body).encode())
        sig = self.key.sign(data.encode(), padding.PKCS1v15(), hashes.SHA256())
        return data + "." + b64u(sig)


OAUTH_ARGS = ["--sasl.oauthbearer.expected.audience=kafka",
              "--sasl.oauthbearer.expected.issuer=https://idp.test"]


@pytest.fixture
def oauth_broker(tmp_path, request):
    made = []

    def start(jwks_url, *args):
        sb = SaslBroker(tmp_path, request, "--sasl.enabled.mechanisms=OAUTHBEARER,SCRAM-SHA-256",
                        "--sasl.oauthbearer.jwks.endpoint.url=" + jwks_url, *(OAUTH_ARGS +
                                                                               list(args)),
                        name="oauth%d" % len(made))
        sb.b.allow_errors(r"failed authentication|audit|JWKS")
        made.append(sb)
        return sb
    yield start
    problems = []
    for sb in made:
        problems += sb.b.final_check() or []
    assert not problems, problems


@pytest.fixture
def idp(tmp_path):
    i = Idp()
    path = tmp_path / "jwks.json"
    path.write_text(i.jwks())
    i.url = "file://" + str(path)
    return i


def conf_for(sb, token_fn, **extra):
    """librdkafka at its defaults (sasl.oauthbearer.method=default) with an
    oauth_cb handing it the token."""
    def cb(_config):
        tok = token_fn()
        return tok, time.time() + 600
    conf = {"bootstrap.servers": sb.bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "oauth_cb": cb}
    conf.update(extra)
    return conf


def test_confluent_kafka_with_jwks_file(oauth_broker, idp):
    sb = oauth_broker(idp.url)
    produce_consume(conf_for(sb, lambda: idp.token("alice")))


def test_confluent_kafka_with_jwks_over_http(oauth_broker):
    i = Idp(kid="http-key")

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = i.jwks().encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        sb = oauth_broker("http://127.0.0.1:%d/jwks" % srv.server_address[1])
        produce_consume(conf_for(sb, lambda: i.token("bob")), n=5)
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize("bad", ["expired", "foreign key", "wrong audience"])
def test_bad_tokens_fail_authentication(oauth_broker, idp, bad):
    sb = oauth_broker(idp.url)
    other = Idp()
    tok = {"expired": lambda: idp.token("alice", lifetime=-120),
           "foreign key": lambda: other.token("alice"),
           "wrong audience": lambda: idp.token("alice", aud="web")}[bad]
    err = auth_error(conf_for(sb, tok))
    assert err.code() == KafkaError._AUTHENTICATION, err.str()
    # on the wire: Kafka's error challenge, then SASL_AUTHENTICATION_FAILED
    w = Wire(sb)
    assert w.handshake("OAUTHBEARER")[0] == 0
    first = b"n,,\x01auth=Bearer " + tok().encode() + b"\x01\x01"
    e, _, challenge, _ = w.authenticate(first)
    assert e == 0 and json.loads(challenge) == {"status": "invalid_token"}
    e, msg, _, _ = w.authenticate(b"\x01")
    assert e == 58 and "Authentication failed" in msg, msg
    assert w.recv() is None


def test_session_lifetime_capped_by_exp_and_reauthentication(oauth_broker, idp):
    sb = oauth_broker(idp.url, "--connections.max.reauth.ms=3600000")
    w = Wire(sb)
    assert w.handshake("OAUTHBEARER")[0] == 0
    e, _, _, life = w.authenticate(b"n,,\x01auth=Bearer " + idp.token("alice", lifetime=120).encode()
                                   + b"\x01\x01")
    assert e == 0 and 0 < life <= 120 * 1000
    assert w.metadata() is not None
    # a fresh token re-authenticates the same principal
    assert w.handshake("OAUTHBEARER")[0] == 0
    e, _, _, life = w.authenticate(b"n,,\x01auth=Bearer " + idp.token("alice", lifetime=900).encode()
                                   + b"\x01\x01")
    assert e == 0 and 120 * 1000 < life <= 900 * 1000
    assert w.metadata() is not None
    w.close()


def test_librdkafka_reauthenticates_before_the_token_expires(oauth_broker, idp):
    """With connections.max.reauth.ms on, a token living a few seconds caps
    the session; librdkafka refreshes its token and re-authenticates, so its
    connection keeps producing."""
    sb = oauth_broker(idp.url, "--connections.max.reauth.ms=3600000")
    minted = []

    def cb(_config):
        minted.append(1)
        return idp.token("alice", lifetime=12), time.time() + 12
    p = Producer({"bootstrap.servers": sb.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "OAUTHBEARER", "oauth_cb": cb})
    topic = "t-" + uuid.uuid4().hex[:8]
    deadline = time.monotonic() + 60
    while len(minted) < 2 and time.monotonic() < deadline:
        p.produce(topic, value=b"x")
        assert p.flush(30) == 0
        p.poll(0.2)
    assert len(minted) >= 2
    # produce on past the first token's expiry
    end = time.monotonic() + 5
    while time.monotonic() < end:
        p.produce(topic, value=b"x")
        assert p.flush(30) == 0
        p.poll(0.2)
    assert "SASL session expired" not in sb.b.log_text()


def test_oauth_principals_meet_the_authorizer(oauth_broker, idp):
    """sub is the principal: alice may write one topic, not another."""
    sb = oauth_broker(idp.url, "--authorizer.class.name=org.apache.kafka.metadata.authorizer."
                      "StandardAuthorizer", "--super.users=User:admin")
    admin = AdminClient(conf_for(sb, lambda: idp.token("admin")))
    allowed, denied = "ok-" + uuid.uuid4().hex[:8], "no-" + uuid.uuid4().hex[:8]
    for t in (allowed, denied):
        admin.create_topics([NewTopic(t, 1)])[t].result(30)
    for op in (AclOperation.WRITE, AclOperation.DESCRIBE):
        b = AclBinding(ResourceType.TOPIC, allowed, ResourcePatternType.LITERAL, "User:alice", "*",
                       op, AclPermissionType.ALLOW)
        admin.create_acls([b])[b].result(30)
    p = Producer(conf_for(sb, lambda: idp.token("alice"), **{"message.timeout.ms": 10000}))
    errs = {}
    for t in (allowed, denied):
        p.produce(t, b"x", on_delivery=lambda e, m, t=t: errs.__setitem__(t, e))
    p.flush(30)
    assert errs[allowed] is None, errs
    assert errs[denied] is not None and \
        errs[denied].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errs


def test_kafka_python_token_provider(oauth_broker, idp):
    import kafka
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class Provider(AbstractTokenProvider):
        def token(self):
            return idp.token("carol")
    sb = oauth_broker(idp.url)
    topic = "t-" + uuid.uuid4().hex[:8]
    p = kafka.KafkaProducer(bootstrap_servers=sb.bootstrap, security_protocol="SASL_PLAINTEXT",
                            sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=Provider())
    p.send(topic, b"hello").get(timeout=30)
    p.close()


@pytest.fixture(scope="module")
def java_oauth(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("oauth_java"))
    cp = os.path.join(JAVA_LIB, "*")
    r = subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", out,
                        os.path.join(HERE, "java", "oauth", "OAuthClient.java")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr

    def run(token_file, *args):
        r = subprocess.run(JVM + ["-Doauth.token.file=" + str(token_file),
                                  "-cp", out + os.pathsep + cp, "OAuthClient"] + list(args),
                           capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout.strip().splitlines()[-1]
    return run


def test_java_client(oauth_broker, idp, java_oauth, tmp_path):
    """Kafka's Java client with a login callback handing it our RS256 token;
    an expired one fails with SaslAuthenticationException."""
    sb = oauth_broker(idp.url)
    tok = tmp_path / "token"
    tok.write_text(idp.token("erin"))
    topic = "t-" + uuid.uuid4().hex[:8]
    assert java_oauth(tok, sb.bootstrap, topic, "5") == "OK 5"
    tok.write_text(idp.token("erin", lifetime=-120))
    out = java_oauth(tok, sb.bootstrap, topic, "1")
    assert out.startswith("AUTH SaslAuthenticationException"), out


def test_unreachable_jwks_fails_logins_not_the_broker(oauth_broker, idp):
    """A JWKS nobody serves: the broker starts, logs the URL, and tokens fail
    with SASL_AUTHENTICATION_FAILED (no hang, no crash)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    url = "http://127.0.0.1:%d/jwks" % s.getsockname()[1]  # bound, never listening
    try:
        sb = oauth_broker(url)
        err = auth_error(conf_for(sb, lambda: idp.token("alice")))
        assert err.code() == KafkaError._AUTHENTICATION, err.str()
        assert "JWKS %s could not be loaded" % url in sb.b.log_text()
    finally:
        s.close()


def serve_fails(tmp_path, *args):
    """`lakestream serve` with args: its stderr, asserting it refused to start."""
    b = lsbroker.Broker(str(tmp_path / "data-refused"), str(tmp_path / "logs"), [],
                        name="refused")
    r = subprocess.run([b.binary, "serve", "--data.dir=" + str(tmp_path / "data-refused"),
                        "--listeners=SASL_PLAINTEXT://127.0.0.1:0", "--http.listen=",
                        "--schema.registry.listen="] + list(args),
                       capture_output=True, text=True, timeout=60, env=b._env())
    assert r.returncode != 0, r.stdout + r.stderr
    return r.stderr


@pytest.mark.parametrize("args,named", [
    (["--sasl.enabled.mechanisms=OAUTHBEARER"], "sasl.oauthbearer.jwks.endpoint.url"),
    (["--sasl.oauthbearer.jwks.endpoint.url=file:///x.json"], "OAUTHBEARER is not in"),
    (["--sasl.enabled.mechanisms=OAUTHBEARER", "--sasl.oauthbearer.jwks.endpoint.url=ldap://x"],
     "sasl.oauthbearer.jwks.endpoint.url"),
    (["--sasl.enabled.mechanisms=OAUTHBEARER", "--sasl.oauthbearer.jwks.endpoint.url=file:///x",
      "--listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class="
      "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"],
     "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class"),
])
def test_settings_not_applied_are_refused(tmp_path, args, named):
    err = serve_fails(tmp_path, *args)
    assert named in err, err


def test_readme_properties_block_is_accepted(idp, tmp_path, request):
    """README's OAUTHBEARER properties block, with the JWKS URL pointed at the
    test's file and the issuer at the test's, configures a broker that logs a
    client in."""
    text = open(os.path.join(lsbroker.ROOT, "README.md"), encoding="utf-8").read()
    block = text.split("#### OAUTHBEARER")[1].split("```properties\n")[1].split("```")[0]
    assert "sasl.oauthbearer.jwks.endpoint.url=https://idp.example.com" in block
    block = block.replace("https://idp.example.com/.well-known/jwks.json", idp.url)
    props = tmp_path / "broker.properties"
    props.write_text(block.replace("https://idp.example.com", "https://idp.test"))
    sb = SaslBroker(tmp_path, request, "--config", str(props), name="readme")
    produce_consume(conf_for(sb, lambda: idp.token("alice")), n=3)
    assert not sb.b.final_check()
