"""TLS and authentication on the HTTP listeners (issue 30): http.ssl.* /
http.authentication on http.listen (Iceberg REST catalog, /metrics, the REST
API, the console) and schema.registry.ssl.* / schema.registry.authentication
on the schema registry, with real clients at their defaults: requests,
pyiceberg's REST catalog, DuckDB reading a table it loaded, confluent-kafka's
SchemaRegistryClient. Certificates come from test_tls's throwaway CA.
"""

import os
import ssl
import subprocess
import time
import uuid

import pytest
import requests
from confluent_kafka import Producer

import lsbroker
from kafka_util import create_topic, wait_topic
from test_tls import Pki, start_failure

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


rest = pytest.importorskip("pyiceberg.catalog")
pyiceberg_exc = pytest.importorskip("pyiceberg.exceptions")

USER, PASSWORD = "alice", "alice-secret"
TABLE_TIMEOUT = 90


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


def add_user(b, name, password):
    p = subprocess.run([b.binary, "users", "add", name, "--data.dir=" + b.data_dir],
                       input=(password + "\n").encode(), capture_output=True, timeout=60,
                       env=b._env())
    assert p.returncode == 0, (p.stdout + p.stderr).decode(errors="replace")


def https_broker(broker_factory, pki, *args):
    keystore = pki.server()
    b = broker_factory("--http.ssl.keystore.location=" + keystore,
                       "--http.authentication=basic",
                       "--schema.registry.ssl.keystore.location=" + keystore,
                       "--schema.registry.authentication=basic",
                       "--compaction.min.age.ms=0", "--compaction.interval.ms=200", *args)
    add_user(b, USER, PASSWORD)
    b.allow_errors(r"unauthenticated request")  # refusals are logged (warnings)
    return b


def url(b, path=""):
    return "https://127.0.0.1:%d%s" % (b.http_port, path)


def reg_url(b):
    return "https://127.0.0.1:%d" % b.registry_port


def test_https_basic_on_metrics_api_and_health(broker_factory, pki):
    b = https_broker(broker_factory, pki)
    ca = pki.ca
    # /health stays open for load balancers
    r = requests.get(url(b, "/health"), verify=ca, timeout=30)
    assert r.status_code == 200 and r.json()["status"] == "ok"
    for path in ("/metrics", "/api/v1/namespaces", "/v1/config", "/"):
        r = requests.get(url(b, path), verify=ca, timeout=30)
        assert r.status_code == 401, (path, r.status_code, r.text)
        assert r.headers["WWW-Authenticate"].startswith('Basic realm="lakestream"'), r.headers
        r = requests.get(url(b, path), verify=ca, auth=(USER, "wrong"), timeout=30)
        assert r.status_code == 401, (path, r.status_code)
        r = requests.get(url(b, path), verify=ca, auth=("nobody", PASSWORD), timeout=30)
        assert r.status_code == 401, (path, r.status_code)
        r = requests.get(url(b, path), verify=ca, auth=(USER, PASSWORD), timeout=30)
        assert r.status_code == 200, (path, r.status_code, r.text)
    # the catalog's refusal is an Iceberg ErrorModel
    err = requests.get(url(b, "/v1/config"), verify=ca, timeout=30).json()["error"]
    assert err["code"] == 401 and err["type"] == "NotAuthorizedException" and err["message"]
    # Prometheus-style scrape with basic auth gets the text format
    r = requests.get(url(b, "/metrics"), verify=ca, auth=(USER, PASSWORD), timeout=30)
    assert "lakestream" in r.text
    # a deleted user is refused at once (the cache never outlives the credential)
    p = subprocess.run([b.binary, "users", "delete", USER, "--data.dir=" + b.data_dir],
                       capture_output=True, timeout=60, env=b._env())
    assert p.returncode == 0, p.stderr
    r = requests.get(url(b, "/metrics"), verify=ca, auth=(USER, PASSWORD), timeout=30)
    assert r.status_code == 401


def test_plaintext_http_to_https_port_fails_cleanly(broker_factory, pki):
    b = https_broker(broker_factory, pki)
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get("http://127.0.0.1:%d/health" % b.http_port, timeout=30)
    # an untrusted server certificate is refused by the client, the broker serves on
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(url(b, "/health"), timeout=30)  # system CAs only
    assert requests.get(url(b, "/health"), verify=pki.ca, timeout=30).status_code == 200


def _produce(bootstrap, topic, n):
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=b"v%d" % i)
    assert p.flush(60) == 0


def test_pyiceberg_and_duckdb_through_https_basic_catalog(broker_factory, pki, monkeypatch):
    # requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE override a session's
    # CA bundle (pyiceberg's ssl.cabundle): a client environment must not set them
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    b = https_broker(broker_factory, pki)
    topic = "sec-" + uuid.uuid4().hex[:8]
    create_topic(b.bootstrap, topic, 1, config={"lakestream.table.enabled": "true"})
    wait_topic(b.bootstrap, topic, 1)
    _produce(b.bootstrap, topic, 50)
    cat = rest.load_catalog("ls", type="rest", uri=url(b), ssl={"cabundle": pki.ca},
                            auth={"type": "basic",
                                  "basic": {"username": USER, "password": PASSWORD}})
    deadline = time.monotonic() + TABLE_TIMEOUT
    rows = None
    while time.monotonic() < deadline:
        try:
            t = cat.load_table(("default", topic))
            rows = t.scan().to_arrow()
            if rows.num_rows >= 50:
                break
        except pyiceberg_exc.NoSuchTableError:
            pass
        time.sleep(0.2)
    assert rows is not None and rows.num_rows == 50
    assert ("default", topic) in cat.list_tables("default")
    # DuckDB reads the table the authenticated catalog loaded
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.register("t", t.scan().to_arrow())
    assert con.execute("select count(*) from t").fetchone()[0] == 50
    # a wrong password: the catalog refuses, pyiceberg says not authorized
    with pytest.raises(pyiceberg_exc.UnauthorizedError):
        rest.load_catalog("bad", type="rest", uri=url(b), ssl={"cabundle": pki.ca},
                          auth={"type": "basic",
                                "basic": {"username": USER, "password": "wrong"}})


def test_schema_registry_over_https_with_basic_auth(broker_factory, pki):
    sr = pytest.importorskip("confluent_kafka.schema_registry")
    b = https_broker(broker_factory, pki)
    schema = sr.Schema('{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}',
                       "AVRO")
    client = sr.SchemaRegistryClient({"url": reg_url(b), "ssl.ca.location": pki.ca,
                                      "basic.auth.user.info": "%s:%s" % (USER, PASSWORD)})
    sid = client.register_schema("sec-value", schema)
    assert client.get_schema(sid).schema_str.replace(" ", "") == \
        schema.schema_str.replace(" ", "")
    bad = sr.SchemaRegistryClient({"url": reg_url(b), "ssl.ca.location": pki.ca,
                                   "basic.auth.user.info": "%s:wrong" % USER})
    with pytest.raises(sr.error.SchemaRegistryError) as e:
        bad.get_subjects()
    assert e.value.http_status_code == 401 and e.value.error_code == 40101
    r = requests.get(reg_url(b) + "/subjects", verify=pki.ca, timeout=30)
    assert r.status_code == 401 and r.json()["error_code"] == 40101
    assert "Basic" in r.headers["WWW-Authenticate"]


def test_mtls_required_refuses_requests_without_a_trusted_certificate(broker_factory, pki,
                                                                       tmp_path):
    keystore = pki.server("mtls-server")
    b = broker_factory("--http.ssl.keystore.location=" + keystore,
                       "--http.ssl.truststore.location=" + pki.ca,
                       "--http.ssl.client.auth=required")
    r = requests.get(url(b, "/metrics"), verify=pki.ca, timeout=30)
    assert r.status_code == 403 and "certificate" in r.json()["error"]["message"]
    cert, key = pki.cert("http-client", "/CN=http-client")
    r = requests.get(url(b, "/metrics"), verify=pki.ca, cert=(cert, key), timeout=30)
    assert r.status_code == 200
    # a certificate from another CA is not trusted
    other = Pki(tmp_path / "other", name="other")
    ocert, okey = other.cert("stranger", "/CN=stranger")
    try:
        r = requests.get(url(b, "/metrics"), verify=pki.ca, cert=(ocert, okey), timeout=30)
        assert r.status_code == 403
    except requests.exceptions.SSLError:
        pass  # refused in the handshake: refused all the same
    assert requests.get(url(b, "/health"), verify=pki.ca, timeout=30).status_code == 200


@pytest.mark.parametrize("args,want", [
    (["--http.authentication=digest"], "http.authentication: 'digest'"),
    (["--schema.registry.ssl.client.auth=maybe"], "schema.registry.ssl.client.auth"),
    (["--http.ssl.client.auth=required"], "http.ssl.client.auth"),
    (["--http.ssl.truststore.location=/nonexistent"], "http.ssl.truststore.location"),
    (["--http.ssl.keystore.location=/nonexistent/ks.pem"], "http.ssl.keystore.location: /nonexistent/ks.pem"),
    (["--http.authentication=basic,token"], "http.authentication: 'token'"),
    (["--schema.registry.authentication=bearer"],
     "schema.registry.authentication=bearer: needs sasl.oauthbearer.jwks.endpoint.url"),
    (["--sasl.oauthbearer.jwks.endpoint.url=file:///nonexistent"],
     "no HTTP listener takes bearer"),
])
def test_bad_http_security_settings_refused_at_start(tmp_path, args, want):
    binary = lsbroker.binary_path()
    port = lsbroker.free_port()
    p = subprocess.run([binary, "serve", "--data.dir=%s" % (tmp_path / "fail"),
                        "--listeners=127.0.0.1:%d" % port,
                        "--http.listen=127.0.0.1:0", "--schema.registry.listen="] + args,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
                       env={k: v for k, v in os.environ.items()
                            if not k.startswith("LAKESTREAM_")})  # the harness's own
    out = (p.stdout + p.stderr).decode(errors="replace")
    assert p.returncode != 0 and want in out, out


AUTHZ = "--authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def _wait_tables(cat, topics):
    deadline = time.monotonic() + TABLE_TIMEOUT
    while time.monotonic() < deadline:
        have = {t for _, t in cat.list_tables("default")}
        if set(topics) <= have:
            return
        time.sleep(0.2)
    raise AssertionError("tables %s not all in the catalog" % topics)


def test_catalog_applies_topic_acls_to_the_authenticated_user(broker_factory, pki,
                                                              monkeypatch):
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType,
                                       AdminClient, ResourcePatternType, ResourceType)
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    # the PLAINTEXT listener is the operator's (User:ANONYMOUS a super user); HTTP users are not
    b = https_broker(broker_factory, pki, AUTHZ, "--super.users=User:ANONYMOUS;User:admin")
    b.allow_errors(r"\[audit\]")
    add_user(b, "admin", "admin-secret")
    ta, tb = "acl-a-" + uuid.uuid4().hex[:6], "acl-b-" + uuid.uuid4().hex[:6]
    for t in (ta, tb):
        create_topic(b.bootstrap, t, 1, config={"lakestream.table.enabled": "true"})
        wait_topic(b.bootstrap, t, 1)
        _produce(b.bootstrap, t, 10)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    acl = AclBinding(ResourceType.TOPIC, ta, ResourcePatternType.LITERAL, "User:" + USER, "*",
                     AclOperation.READ, AclPermissionType.ALLOW)
    for f in a.create_acls([acl], request_timeout=30).values():
        f.result(timeout=30)

    def catalog(user, pw):
        return rest.load_catalog(user, type="rest", uri=url(b), ssl={"cabundle": pki.ca},
                                 auth={"type": "basic",
                                       "basic": {"username": user, "password": pw}})
    admin = catalog("admin", "admin-secret")
    _wait_tables(admin, [ta, tb])
    alice = catalog(USER, PASSWORD)
    seen = {t for _, t in alice.list_tables("default")}
    assert ta in seen and tb not in seen, seen
    assert alice.load_table(("default", ta)).scan().to_arrow().num_rows >= 0
    with pytest.raises(pyiceberg_exc.ForbiddenError):
        alice.load_table(("default", tb))
    # the super user sees both
    assert alice.table_exists(("default", ta))
    assert admin.load_table(("default", tb)) is not None
    assert "IcebergLoadTable" in b.log_text() and "User:" + USER in b.log_text()


def test_schema_registry_applies_topic_acls(broker_factory, pki):
    sr = pytest.importorskip("confluent_kafka.schema_registry")
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType,
                                       AdminClient, ResourcePatternType, ResourceType)
    b = https_broker(broker_factory, pki, AUTHZ, "--super.users=User:ANONYMOUS;User:admin")
    b.allow_errors(r"\[audit\]")
    add_user(b, "admin", "admin-secret")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    acls = [AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL,
                       "User:" + USER, "*", op, AclPermissionType.ALLOW)
            for op in (AclOperation.WRITE, AclOperation.READ)]
    for f in a.create_acls(acls, request_timeout=30).values():
        f.result(timeout=30)
    schema = sr.Schema('{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}',
                       "AVRO")

    def client(user, pw):
        return sr.SchemaRegistryClient({"url": reg_url(b), "ssl.ca.location": pki.ca,
                                        "basic.auth.user.info": "%s:%s" % (user, pw)})
    admin, alice = client("admin", "admin-secret"), client(USER, PASSWORD)
    admin.register_schema("payments-value", schema)
    # alice may write and read her topic's subject
    alice.register_schema("orders-value", schema)
    assert alice.get_latest_version("orders-value").version == 1
    # and sees only it
    assert alice.get_subjects() == ["orders-value"]
    assert sorted(admin.get_subjects()) == ["orders-value", "payments-value"]
    for call in (lambda: alice.get_latest_version("payments-value"),
                 lambda: alice.register_schema("payments-value", schema)):
        with pytest.raises(sr.error.SchemaRegistryError) as e:
            call()
        assert e.value.http_status_code == 403 and e.value.error_code == 40301, e.value
    # the registry-wide config needs the cluster's ALTER
    r = requests.put(reg_url(b) + "/config", json={"compatibility": "NONE"}, verify=pki.ca,
                     auth=(USER, PASSWORD), timeout=30)
    assert r.status_code == 403 and r.json()["error_code"] == 40301
    r = requests.put(reg_url(b) + "/config", json={"compatibility": "NONE"}, verify=pki.ca,
                     auth=("admin", "admin-secret"), timeout=30)
    assert r.status_code == 200, r.text


def test_rest_api_checks_the_http_users_acls_before_acting(broker_factory, pki):
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType,
                                       AdminClient, ResourcePatternType, ResourceType)
    b = https_broker(broker_factory, pki, AUTHZ, "--super.users=User:ANONYMOUS;User:admin")
    b.allow_errors(r"\[audit\]")
    add_user(b, "admin", "admin-secret")
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    acl = AclBinding(ResourceType.TOPIC, "alice-", ResourcePatternType.PREFIXED,
                     "User:" + USER, "*", AclOperation.ALL, AclPermissionType.ALLOW)
    for f in a.create_acls([acl], request_timeout=30).values():
        f.result(timeout=30)
    api = url(b, "/api/v1/streams")

    def call(method, path="", user=USER, pw=PASSWORD, **kw):
        return requests.request(method, api + path, verify=pki.ca, auth=(user, pw),
                                timeout=60, **kw)
    # alice may create and delete in her prefix, not elsewhere
    r = call("POST", json={"name": "alice-s", "partitions": 1})
    assert r.status_code in (200, 201), r.text
    r = call("POST", json={"name": "other-s", "partitions": 1})
    assert r.status_code == 403 and r.json()["error"]["code"] == 403, r.text
    r = call("POST", json={"name": "other-s", "partitions": 1}, user="admin", pw="admin-secret")
    assert r.status_code in (200, 201), r.text
    assert call("GET", "/other-s").status_code == 403
    assert call("DELETE", "/other-s").status_code == 403
    assert call("GET", "/alice-s").status_code == 200
    assert call("GET", "/other-s", user="admin", pw="admin-secret").status_code == 200
    assert call("DELETE", "/alice-s").status_code in (200, 204)
    assert "RestApi" in b.log_text()


def test_bearer_tokens_on_the_http_listeners(broker_factory, pki, tmp_path, monkeypatch):
    """http.authentication=basic,bearer: a JWT signed by the identity
    provider's key (the SASL/OAUTHBEARER validator, here without SASL) is a
    principal like a Basic user; the catalog applies its ACLs and pyiceberg's
    `token` reaches it; a bad token is 401 offering both schemes."""
    from test_oauthbearer import Idp
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    idp = Idp()
    (tmp_path / "jwks.json").write_text(idp.jwks())
    keystore = pki.server()
    b = broker_factory("--http.ssl.keystore.location=" + keystore,
                       "--http.authentication=basic,bearer",
                       "--schema.registry.authentication=bearer",
                       "--sasl.oauthbearer.jwks.endpoint.url=file://%s" % (tmp_path / "jwks.json"),
                       "--sasl.oauthbearer.expected.audience=kafka",
                       "--sasl.oauthbearer.expected.issuer=https://idp.test",
                       AUTHZ, "--super.users=User:ANONYMOUS",
                       "--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    b.allow_errors(r"unauthenticated request|\[audit\]")
    add_user(b, USER, PASSWORD)
    ta, tb = "bearer-a-" + uuid.uuid4().hex[:6], "bearer-b-" + uuid.uuid4().hex[:6]
    for t in (ta, tb):
        create_topic(b.bootstrap, t, 1, config={"lakestream.table.enabled": "true"})
        wait_topic(b.bootstrap, t, 1)
        _produce(b.bootstrap, t, 10)
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType,
                                       AdminClient, ResourcePatternType, ResourceType)
    a = AdminClient({"bootstrap.servers": b.bootstrap})
    acls = [AclBinding(ResourceType.TOPIC, ta, ResourcePatternType.LITERAL, "User:svc-etl", "*",
                       AclOperation.READ, AclPermissionType.ALLOW),
            AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL,
                       "User:svc-etl", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW)]
    for f in a.create_acls(acls, request_timeout=30).values():
        f.result(timeout=30)
    good = idp.token("svc-etl")

    def get(path, **kw):
        return requests.get(url(b, path), verify=pki.ca, timeout=30, **kw)
    # no credentials: 401 offering both schemes
    r = get("/metrics")
    assert r.status_code == 401, r.text
    challenge = r.headers["WWW-Authenticate"]
    assert 'Basic realm="lakestream"' in challenge and 'Bearer realm="lakestream"' in challenge
    # a valid token is a principal; Basic still works beside it
    assert get("/metrics", headers={"Authorization": "Bearer " + good}).status_code == 200
    assert get("/metrics", auth=(USER, PASSWORD)).status_code == 200
    # expired, wrong audience, signed by another key, garbage: refused
    other = Idp()
    for bad in (idp.token("svc-etl", lifetime=-3600), idp.token("svc-etl", aud="other"),
                other.token("svc-etl"), "not.a.jwt"):
        r = get("/metrics", headers={"Authorization": "Bearer " + bad})
        assert r.status_code == 401, (bad[:20], r.status_code)
        assert "invalid bearer token" in r.json()["error"]["message"]
    # the catalog applies the token's principal's ACLs; pyiceberg sends `token`
    admin = rest.load_catalog("admin", type="rest", uri=url(b), ssl={"cabundle": pki.ca},
                              auth={"type": "basic",
                                    "basic": {"username": USER, "password": PASSWORD}})
    with pytest.raises(pyiceberg_exc.ForbiddenError):
        admin.load_table(("default", ta))  # alice has no ACL: the Basic user is checked too
    etl = rest.load_catalog("etl", type="rest", uri=url(b), ssl={"cabundle": pki.ca}, token=good)
    deadline = time.time() + TABLE_TIMEOUT
    while True:
        seen = {t for _, t in etl.list_tables("default")}
        if ta in seen or time.time() > deadline:
            break
        time.sleep(0.5)
    assert ta in seen and tb not in seen, seen
    assert etl.load_table(("default", ta)) is not None
    with pytest.raises(pyiceberg_exc.ForbiddenError):
        etl.load_table(("default", tb))
    # the registry listener takes Bearer only: Basic is refused there
    reg = "http://127.0.0.1:%d/subjects" % b.registry_port
    assert requests.get(reg, auth=(USER, PASSWORD), timeout=30).status_code == 401
    r = requests.get(reg, timeout=30)
    assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Bearer ")
    r = requests.get(reg, headers={"Authorization": "Bearer " + good}, timeout=30)
    assert r.status_code == 200, r.text
    from confluent_kafka.schema_registry import SchemaRegistryClient
    src = SchemaRegistryClient({"url": "http://127.0.0.1:%d" % b.registry_port,
                                "bearer.auth.credentials.source": "STATIC_TOKEN",
                                "bearer.auth.token": good, "bearer.auth.logical.cluster": "any",
                                "bearer.auth.identity.pool.id": "any"})
    assert isinstance(src.get_subjects(), list)


def test_sighup_reloads_the_http_certificates(broker_factory, pki, tmp_path):
    """SIGHUP: new HTTPS connections to the catalog and the registry get the
    new certificate (from a new CA here), a connection opened before keeps
    being served, and a broken keystore keeps the current one with a log
    line naming the setting."""
    import shutil
    import signal
    keystore = str(tmp_path / "keystore.pem")
    shutil.copy(pki.server(), keystore)
    b = broker_factory("--http.ssl.keystore.location=" + keystore,
                       "--schema.registry.ssl.keystore.location=" + keystore)
    reg = "https://127.0.0.1:%d/subjects" % b.registry_port
    kept = requests.Session()  # keep-alive: one connection across the reload
    assert kept.get(url(b, "/health"), verify=pki.ca, timeout=30).status_code == 200
    assert requests.get(reg, verify=pki.ca, timeout=30).status_code == 200
    new = Pki(tmp_path / "new", "newca")
    shutil.copy(new.server(), keystore)
    b.proc.send_signal(signal.SIGHUP)
    lsbroker.wait_until(lambda: "schema.registry.listen: certificate and key reloaded"
                        in b.log_text() and "http.listen: certificate and key reloaded"
                        in b.log_text(), 10, what="the reload lines")
    for u in (url(b, "/v1/config"), reg):
        with pytest.raises(requests.exceptions.SSLError):
            requests.get(u, verify=pki.ca, timeout=30)
        assert requests.get(u, verify=new.ca, timeout=30).status_code == 200
    # the connection opened before the reload is still served (old certificate)
    assert kept.get(url(b, "/v1/config"), verify=pki.ca, timeout=30).status_code == 200
    with open(keystore, "w") as f:
        f.write("not a certificate\n")
    b.proc.send_signal(signal.SIGHUP)
    lsbroker.wait_until(lambda: "http.listen keeps its current certificate: "
                                "http.ssl.keystore.location" in b.log_text(), 10,
                        what="the failed reload line")
    b.allow_errors(r"keeps its current certificate")
    for u in (url(b, "/v1/config"), reg):
        assert requests.get(u, verify=new.ca, timeout=30).status_code == 200
    # many reloads: retired daemons are stopped, the listener keeps serving
    shutil.copy(new.server("again"), keystore)
    for _ in range(20):
        b.proc.send_signal(signal.SIGHUP)
        assert requests.get(reg, verify=new.ca, timeout=30).status_code == 200
