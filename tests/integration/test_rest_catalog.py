"""The broker's built-in Iceberg REST catalog, read by an unmodified client.

A topic created with lakestream.table.enabled=true is materialized by the
compaction pass; PyIceberg then finds it through
load_catalog("ls", type="rest", uri=broker.http_url) — namespaces, tables,
load_table, scan — and every produced record is there once, with its
partition, offset, key, value, headers and timestamp. Errors follow the
spec's ErrorModel: 404 for unknown namespaces and tables, 406 for write
endpoints (tables are the broker's to create), 400 for malformed paths; and
the broker keeps serving Kafka afterwards. With http.listen empty there is no
HTTP server at all.
"""

import json
import os
import socket
import time
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Producer

from kafka_util import consume, create_topic, unique_topic, wait_topic

rest = pytest.importorskip("pyiceberg.catalog")
pyiceberg_exc = pytest.importorskip("pyiceberg.exceptions")

PARTS = 3
N = 300
TS0 = 1_700_000_000_000
# table commits follow compaction; a table policy's commit interval (default
# 10 s) may bound them too: wait generously, assert on the rows
TABLE_TIMEOUT = 90


def _store_kind():
    return os.environ.get("LS_TEST_OBJECT_STORE", "file") or "file"


def _client_props():
    """Client-side FileIO settings: on S3 the credentials come from the test's
    environment (the catalog never hands them out)."""
    if _store_kind() != "s3":
        return {}
    return {"s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
            "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"]}


def _catalog(b, **props):
    return rest.load_catalog("ls", type="rest", uri=b.http_url, **_client_props(), **props)


def _http(method, url, body=None):
    """(status, parsed JSON body or None) of one request; never raises on 4xx/5xx."""
    req = urllib.request.Request(url, method=method, data=body,
                                 headers={"Content-Type": "application/json"} if body else {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            data = r.read()
            return r.status, (json.loads(data) if data else None)
    except urllib.error.HTTPError as e:
        data = e.read()
        return e.code, (json.loads(data) if data else None)


def _assert_error(status_body, code, etype):
    status, body = status_body
    assert status == code, (status, body)
    err = body["error"]
    assert err["code"] == code and err["type"] == etype, body
    assert isinstance(err["message"], str) and err["message"], body


def _produce(bootstrap, topic):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
                  "enable.idempotence": True})
    for i in range(N):
        p.produce(topic, key=None if i % 7 == 0 else b"k%d" % i,
                  value=None if i % 11 == 0 else b"value-%d" % i, partition=i % PARTS,
                  headers=[("src", b"rest"), ("i", b"%d" % i)], timestamp=TS0 + i)
    assert p.flush(60) == 0


def _table_enabled_topic(b, prefix):
    topic = unique_topic(prefix)
    create_topic(b.bootstrap, topic, PARTS, config={"lakestream.table.enabled": "true"})
    wait_topic(b.bootstrap, topic, PARTS)
    _produce(b.bootstrap, topic)
    return topic


def _wait_table(cat, ident, want):
    """Polls the catalog until the table scans to `want` rows; returns (table, rows)."""
    deadline = time.monotonic() + TABLE_TIMEOUT
    last = "table not in the catalog yet"
    while time.monotonic() < deadline:
        try:
            t = cat.load_table(ident)
            rows = t.scan().to_arrow()
            if rows.num_rows >= want:
                return t, rows
            last = "%d rows" % rows.num_rows
        except pyiceberg_exc.NoSuchTableError:
            pass
        time.sleep(0.2)
    raise AssertionError("%s: %s after %ds, want %d rows" % (ident, last, TABLE_TIMEOUT, want))


def test_pyiceberg_reads_topic_table_through_rest_catalog(broker_factory):
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = _table_enabled_topic(b, "rest")
    cat = _catalog(b)
    t0 = time.monotonic()
    t, rows = _wait_table(cat, ("default", topic), N)
    print("table visible through the REST catalog %.2fs after produce" % (time.monotonic() - t0))

    assert ("default",) in cat.list_namespaces()
    assert ("default", topic) in cat.list_tables("default")
    assert cat.namespace_exists("default") and cat.table_exists(("default", topic))

    loc = t.metadata_location
    if _store_kind() == "file":
        assert loc.startswith("file://") and os.path.exists(loc[len("file://"):]), loc
    else:
        assert loc.startswith("s3://"), loc

    assert rows.num_rows == N, "table holds %d rows, produced %d" % (rows.num_rows, N)
    d = rows.to_pylist()
    assert len({(r["partition"], r["offset"]) for r in d}) == N, "duplicate rows"
    by_i = {int(r["headers"][1]["value"]): r for r in d}
    assert sorted(by_i) == list(range(N))
    for i in range(N):
        r = by_i[i]
        assert r["headers"] == [{"key": "src", "value": b"rest"}, {"key": "i", "value": b"%d" % i}]
        assert r["partition"] == i % PARTS
        assert r["offset"] == i // PARTS  # round-robin over partitions, dense from 0
        assert r["key"] == (None if i % 7 == 0 else b"k%d" % i)
        assert r["value"] == (None if i % 11 == 0 else b"value-%d" % i)
        assert int(r["timestamp"].timestamp() * 1000) == TS0 + i

    # the prefixed form: warehouse=lakestream makes the client use /v1/lakestream/...
    cat2 = _catalog(b, warehouse="lakestream")
    assert cat2.properties.get("prefix") == "lakestream"
    assert cat2.load_table(("default", topic)).scan().to_arrow().num_rows == N

    # the catalog hands out store settings readers need, never credentials
    status, cfg = _http("GET", b.http_url + "/v1/config")
    assert status == 200 and "endpoints" in cfg
    # the commit an engine's write ends with is advertised, so Iceberg's Java
    # client sends it and shows the 406 below instead of refusing on its own
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}" in cfg["endpoints"]
    status, lt = _http("GET", "%s/v1/namespaces/default/tables/%s" % (b.http_url, topic))
    assert status == 200 and lt["metadata-location"] == loc
    assert lt["metadata"]["format-version"] == 2
    everything = json.dumps([cfg, lt["config"]]).lower()
    for secret in ("secret", "access-key", "session-token", "token"):
        assert secret not in everything, everything
    if _store_kind() == "s3":
        assert lt["config"].get("s3.endpoint"), lt["config"]


def test_errors_follow_the_spec_and_kafka_keeps_serving(broker_factory):
    b = broker_factory("--compaction.min.age.ms=0", "--compaction.interval.ms=200")
    topic = _table_enabled_topic(b, "resterr")
    cat = _catalog(b)
    _wait_table(cat, ("default", topic), N)
    u = b.http_url + "/v1"

    # unknown namespace / table: 404 with the ErrorModel body
    _assert_error(_http("GET", u + "/namespaces/nope"), 404, "NoSuchNamespaceException")
    _assert_error(_http("GET", u + "/namespaces/nope/tables"), 404, "NoSuchNamespaceException")
    _assert_error(_http("GET", u + "/namespaces/default/tables/nope"), 404, "NoSuchTableException")
    # a metadata table as Spark asks for it first (namespace "default.<topic>",
    # table "snapshots"): NoSuchTableException, so the Java client then loads
    # the table and serves its snapshots table (issue 11 §5)
    for mt in ("snapshots", "files", "manifests", "history", "partitions"):
        _assert_error(_http("GET", "%s/namespaces/default%%1F%s/tables/%s" % (u, topic, mt)), 404,
                      "NoSuchTableException")
    _assert_error(_http("GET", u + "/namespaces/nope/tables/x"), 404, "NoSuchTableException")
    assert _http("HEAD", u + "/namespaces/default/tables/nope")[0] == 404
    assert _http("HEAD", "%s/namespaces/default/tables/%s" % (u, topic))[0] == 204
    with pytest.raises(pyiceberg_exc.NoSuchTableError):
        cat.load_table(("default", "nope"))
    with pytest.raises(pyiceberg_exc.NoSuchNamespaceError):
        cat.list_tables("nope")

    # write endpoints: 406, the catalog is read-only
    body = json.dumps({"name": "x", "schema": {"type": "struct", "fields": []}}).encode()
    _assert_error(_http("POST", u + "/namespaces/default/tables", body), 406,
                  "UnsupportedOperationException")
    _assert_error(_http("POST", u + "/namespaces", json.dumps({"namespace": ["n"]}).encode()),
                  406, "UnsupportedOperationException")
    _assert_error(_http("DELETE", "%s/namespaces/default/tables/%s" % (u, topic)), 406,
                  "UnsupportedOperationException")
    # the table is untouched
    assert _http("HEAD", "%s/namespaces/default/tables/%s" % (u, topic))[0] == 204

    # malformed paths: 400
    _assert_error(_http("GET", u + "/namespaces/bad%ZZ"), 400, "BadRequestException")
    _assert_error(_http("GET", u + "/namespaces/default/tables/%"), 400, "BadRequestException")
    _assert_error(_http("GET", u + "/namespaces/a%00b/tables"), 400, "BadRequestException")
    _assert_error(_http("GET", u + "/namespaces/%1Fdefault"), 400, "BadRequestException")
    # a raw request line with bytes a client library would refuse to send
    with socket.create_connection((b.host, b.http_port), timeout=10) as s:
        s.sendall(b"GET /v1/namespaces/\xff\xfe/tables HTTP/1.1\r\nHost: x\r\n"
                  b"Connection: close\r\n\r\n")
        reply = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            reply += chunk
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 404"), head
    assert json.loads(payload)["error"]["type"] == "NoSuchNamespaceException"

    # the broker still serves Kafka and HTTP
    code, health = _http("GET", b.http_url + "/health")
    assert code == 200 and health["status"] == "ok", health
    msgs = consume(b.bootstrap, topic, list(range(PARTS)))
    assert sum(len(v) for v in msgs.values()) == N


def test_http_disabled(broker_factory):
    b = broker_factory("--http.listen=")
    with pytest.raises(OSError):
        socket.create_connection((b.host, b.http_port), timeout=2).close()
    topic = unique_topic("nohttp")
    create_topic(b.bootstrap, topic, 1)
    wait_topic(b.bootstrap, topic, 1)


def test_slowloris_from_one_address_leaves_health_reachable(broker_factory):
    """Regression (issue 17 §7): 300 connections that trickle a request line
    and never finish it took every HTTP slot, so /health and the catalog timed
    out for as long as they lasted. One client address now gets at most
    LS_HTTP_MAX_CONNECTIONS_PER_IP (16) connections: the flood comes from
    127.0.0.2 (still loopback), /health from 127.0.0.1 answers at once."""
    b = broker_factory()
    socks = []
    try:
        for _ in range(300):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.2", 0))
            s.settimeout(5)
            try:
                s.connect((b.host, b.http_port))
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            except OSError:
                s.close()
                continue
            socks.append(s)
        time.sleep(0.5)
        for s in socks[:50]:           # keep trickling: the idle timeout never fires
            try:
                s.sendall(b"a")
            except OSError:
                pass
        t0 = time.monotonic()
        code, health = _http("GET", b.http_url + "/health")
        assert code == 200 and health["status"] == "ok", health
        assert time.monotonic() - t0 < 5
        # the flood got at most its per-address share: the others were closed
        open_count = 0
        for s in socks:
            try:
                s.settimeout(0.2)
                if s.recv(1) == b"":
                    continue       # closed by the server
            except socket.timeout:
                open_count += 1    # still held open
            except OSError:
                continue
        assert open_count <= 16, open_count
    finally:
        for s in socks:
            s.close()
