"""The Lakestream REST API (/api/v1 on http.listen) against a real broker.

Every response of every test goes through `Api.call`, which checks it
against docs/api/openapi.json — the document the broker serves at
/api/v1/openapi.json, itself validated as OpenAPI 3 — using the operation's
schema for that status (the document's $refs resolved; OpenAPI 3.0's
`nullable` honoured by openapi-schema-validator's OAS30Validator). A method a
path does not define must answer 405 with the error body.

What a user of the API relies on, checked with real clients:
- a stream created by the API is a Kafka topic: confluent-kafka's Metadata
  shows it with the partitions, DescribeConfigs with the configs given, and
  records produced to it are consumed back; PATCH grows it and changes its
  configs as Kafka sees them; DELETE removes it from Kafka's Metadata;
- a policy set by the API is the one `lakestream tables show` prints (and
  one set by the CLI is the one the API returns), and it materializes the
  table: the API's table state and the Iceberg REST catalog (PyIceberg) see
  the produced rows;
- a bad body is a 400 whose error names the field, and changes nothing;
- the records endpoint returns the partition's records decoded.
"""

import json
import os
import subprocess
import urllib.error
import urllib.request

import pytest
from confluent_kafka import OFFSET_BEGINNING, Producer
from confluent_kafka.admin import AdminClient, ConfigResource

import lsbroker
from kafka_util import consume, unique_topic, wait_topic

pytestmark = pytest.mark.store_agnostic  # the S3 stage leaves it out (pytest.ini)


openapi_spec_validator = pytest.importorskip("openapi_spec_validator")
openapi_schema_validator = pytest.importorskip("openapi_schema_validator")
rest_catalog = pytest.importorskip("pyiceberg.catalog")

SPEC_PATH = os.path.join(lsbroker.ROOT, "docs", "api", "openapi.json")
FAST = ("--compaction.interval.ms=200",)
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def _spec():
    with open(SPEC_PATH) as f:
        return json.load(f)


def _match(spec, path):
    """The path template of the document that matches a concrete path."""
    segs = path.split("/")
    for tmpl in spec["paths"]:
        t = tmpl.split("/")
        if len(t) == len(segs) and all(a == b or (a.startswith("{") and a.endswith("}"))
                                       for a, b in zip(t, segs)):
            return tmpl
    return None


class Api:
    """Calls the API and validates every answer against the OpenAPI document."""

    def __init__(self, broker):
        self.base = broker.http_url
        self.spec = _spec()
        self.calls = 0

    def schema_check(self, schema, body, what):
        full = dict(schema)
        full["components"] = self.spec["components"]  # $refs resolve within the document
        openapi_schema_validator.validate(body, full, cls=openapi_schema_validator.OAS30Validator)

    def call(self, method, path, body=None, raw=None, expect=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None
                                            else None)
        req = urllib.request.Request(self.base + path, method=method, data=data,
                                     headers={"Content-Type": "application/json"} if data else {})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, text, ctype = r.status, r.read(), r.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            status, text, ctype = e.code, e.read(), e.headers.get("Content-Type", "")
        parsed = json.loads(text) if text else None
        self.calls += 1
        tmpl = _match(self.spec, path.split("?")[0])
        assert tmpl, "no path of the document matches %s" % path
        op = self.spec["paths"][tmpl].get(method.lower())
        if op is None:  # a method the path does not define
            assert status == 405, (method, path, status, parsed)
            self.schema_check({"$ref": "#/components/schemas/Error"}, parsed, path)
        else:
            resp = op["responses"].get(str(status))
            assert resp, "%s %s answered %d, not in the document: %s" % (method, path, status,
                                                                         parsed)
            content = resp.get("content")
            if content:
                assert ctype.startswith("application/json"), ctype
                self.schema_check(content["application/json"]["schema"], parsed,
                                  "%s %s %d" % (method, path, status))
            else:
                assert not text, text
        if expect is not None:
            assert status == expect, (method, path, status, parsed)
        return status, parsed


def _error(answer, code, field=None):
    status, body = answer
    assert status == code, answer
    assert body["error"]["code"] == code and body["error"]["message"], body
    if field is not None:
        assert body["error"].get("field") == field, body
    return body["error"]


def _cli(*args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKESTREAM_")}
    out = subprocess.run([lsbroker.binary_path(), "tables"] + list(args), capture_output=True,
                         text=True, timeout=60, env=env)
    return out.returncode, out.stdout, out.stderr


def _cli_row(text, key):
    return next(ln for ln in text.splitlines() if ln.startswith(key + " ")).split()


def _topic_configs(bootstrap, topic):
    a = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource("topic", topic)
    return {k: v.value for k, v in a.describe_configs([res])[res].result(30).items()}


def _kafka_topics(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics


def test_openapi_document_is_valid_and_served(broker):
    spec = _spec()
    openapi_spec_validator.validate(spec)  # raises on any violation of OpenAPI 3
    api = Api(broker)
    status, served = api.call("GET", "/api/v1/openapi.json", expect=200)
    assert served == spec, "the broker serves the document kept in the repository"
    api.call("GET", "/api/v1/layouts", expect=200)
    api.call("DELETE", "/api/v1/openapi.json", expect=405)
    req = urllib.request.Request(broker.http_url + "/api/v1/nothing")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 404 and json.loads(e.value.read())["error"]["code"] == 404


def test_stream_lifecycle_is_kafka_topic_lifecycle(broker):
    api = Api(broker)
    topic = unique_topic("api")
    _, s = api.call("POST", "/api/v1/streams", {
        "name": topic, "partitions": 3, "replicationFactor": 3,
        "configs": {"retention.ms": "3600000", "cleanup.policy": "delete"}}, expect=201)
    assert s["name"] == topic and s["partitions"] == 3 and s["replicationFactor"] == 3
    assert s["configs"] == {"retention.ms": "3600000", "cleanup.policy": "delete"}
    assert s["layout"]["type"] == "indexed" and s["table"]["enabled"] is False

    # Kafka sees the topic as created: partitions, configs, id
    wait_topic(broker.bootstrap, topic, 3)
    md = _kafka_topics(broker.bootstrap)[topic]
    assert len(md.partitions) == 3
    cfg = _topic_configs(broker.bootstrap, topic)
    assert cfg["retention.ms"] == "3600000" and cfg["cleanup.policy"] == "delete"

    # usable by a Kafka client
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(30):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 3)
    assert p.flush(30) == 0
    got = consume(broker.bootstrap, topic, [0, 1, 2], start=OFFSET_BEGINNING, expect={0: 10, 1: 10, 2: 10})
    assert sum(len(v) for v in got.values()) == 30

    _, s = api.call("GET", "/api/v1/streams/" + topic, expect=200)
    assert [(o["partition"], o["earliestOffset"], o["latestOffset"]) for o in
            s["partitionOffsets"]] == [(0, 0, 10), (1, 0, 10), (2, 0, 10)]
    _, lst = api.call("GET", "/api/v1/streams", expect=200)
    assert topic in [x["name"] for x in lst["streams"]]

    # PATCH: more partitions, a config changed and one deleted, as Kafka sees them
    _, s = api.call("PATCH", "/api/v1/streams/" + topic, {
        "partitions": 5, "configs": {"retention.ms": "7200000", "cleanup.policy": None}},
        expect=200)
    assert s["partitions"] == 5 and s["configs"] == {"retention.ms": "7200000"}
    wait_topic(broker.bootstrap, topic, 5)
    cfg = _topic_configs(broker.bootstrap, topic)
    assert cfg["retention.ms"] == "7200000" and cfg["cleanup.policy"] == "delete"

    # methods a path does not take
    api.call("PUT", "/api/v1/streams/" + topic, {"partitions": 6}, expect=405)
    api.call("DELETE", "/api/v1/streams", expect=405)

    # DELETE is DeleteTopics: gone from Kafka's Metadata, 404 afterwards
    api.call("DELETE", "/api/v1/streams/" + topic, expect=204)
    assert topic not in _kafka_topics(broker.bootstrap)
    _error(api.call("GET", "/api/v1/streams/" + topic), 404)
    _error(api.call("DELETE", "/api/v1/streams/" + topic), 404)
    _error(api.call("GET", "/api/v1/streams/%s/policy" % topic), 404)


def test_bad_bodies_are_400_naming_the_field_and_change_nothing(broker):
    api = Api(broker)
    topic = unique_topic("bad")
    before = sorted(_kafka_topics(broker.bootstrap))
    cases = [
        ({"name": topic, "partitions": 0}, "partitions"),
        ({"name": topic, "partitions": "three"}, "partitions"),
        ({"name": topic, "partitions": 2000000000}, "partitions"),
        ({"name": topic, "replicationFactor": 0}, "replicationFactor"),
        ({"name": topic, "configs": {"retention.mss": "1"}}, "configs.retention.mss"),
        ({"name": topic, "configs": {"retention.ms": "soon"}}, "configs.retention.ms"),
        ({"name": topic, "configs": {"retention.ms": 5}}, "configs.retention.ms"),
        ({"name": topic, "configs": {"retention.ms": "1000", "cleanup.policy": "shred"}},
         "configs.cleanup.policy"),
        ({"name": topic, "policy": {"compression": "lzma"}}, "policy.compression"),
        ({"name": topic, "policy": {"no.such.field": "1"}}, "policy.no.such.field"),
        ({"name": topic, "partitons": 3}, "partitons"),
        ({"partitions": 3}, "name"),
        ({"name": "bad/name"}, "name"),
        ({"name": "a" * 250}, "name"),
    ]
    for body, field in cases:
        err = _error(api.call("POST", "/api/v1/streams", body), 400, field)
        if field.startswith(("configs.", "policy.")) and "member" not in err["message"]:
            assert field.split(".", 1)[1].split("lakestream.table.")[-1] in err["message"], err
    _error(api.call("POST", "/api/v1/streams", raw=b'{"name": "x",'), 400, "body")
    _error(api.call("POST", "/api/v1/streams", raw=b'["x"]'), 400, "body")
    _error(api.call("POST", "/api/v1/streams", raw=b'{"name":"a","name":"b"}'), 400, "body")
    # over the HTTP server's body limit (1 MiB)
    big = json.dumps({"name": topic, "configs": {"x": "y" * (1 << 20)}}).encode()
    _error(api.call("POST", "/api/v1/streams", raw=big), 413)
    assert sorted(_kafka_topics(broker.bootstrap)) == before, "nothing was created"
    _, lst = api.call("GET", "/api/v1/streams", expect=200)
    assert topic not in [x["name"] for x in lst["streams"]]

    # a refused PATCH changes neither the configs nor the partitions
    api.call("POST", "/api/v1/streams", {"name": topic, "partitions": 2,
                                         "configs": {"retention.ms": "60000"}}, expect=201)
    _error(api.call("POST", "/api/v1/streams", {"name": topic}), 409, "name")
    _error(api.call("PATCH", "/api/v1/streams/" + topic,
                    {"partitions": 4, "configs": {"retention.ms": "never"}}), 400,
           "configs.retention.ms")
    _error(api.call("PATCH", "/api/v1/streams/" + topic,
                    {"partitions": 1, "configs": {"retention.ms": "120000"}}), 400, "partitions")
    _, s = api.call("GET", "/api/v1/streams/" + topic, expect=200)
    assert s["partitions"] == 2 and s["configs"] == {"retention.ms": "60000"}
    assert _topic_configs(broker.bootstrap, topic)["retention.ms"] == "60000"
    _error(api.call("PATCH", "/api/v1/streams/" + topic, {"configs": []}), 400, "configs")

    # a refused policy change leaves the policy as it was
    _error(api.call("PATCH", "/api/v1/streams/%s/policy" % topic,
                    {"policy": {"enabled": "true", "commit.interval.ms": "5"}}), 400,
           "policy.commit.interval.ms")
    _error(api.call("PATCH", "/api/v1/streams/%s/policy" % topic,
                    {"policy": {"primary.key": "id"}}), 400, "policy.primary.key")
    _error(api.call("PATCH", "/api/v1/streams/%s/policy" % topic, {"enabled": "true"}), 400,
           "enabled")
    _error(api.call("PUT", "/api/v1/streams/%s/policy" % topic, {"policy": {"enabled": None}}),
           400, "policy.enabled")
    _, pol = api.call("GET", "/api/v1/streams/%s/policy" % topic, expect=200)
    assert pol["policy"]["enabled"] == "false" and pol["policy"]["commit.interval.ms"] != "5"

    # namespaces: a bad default, or a primary key as a default, is refused
    _error(api.call("PATCH", "/api/v1/namespaces/default/policy",
                    {"policy": {"compression": "zip"}}), 400, "policy.compression")
    _error(api.call("POST", "/api/v1/namespaces", {"name": "ns_pk",
                                                   "policy": {"primary.key": "id"}}),
           400, "policy.primary.key")
    _error(api.call("GET", "/api/v1/namespaces/ns_pk"), 404)
    _error(api.call("POST", "/api/v1/namespaces", {"name": "../x"}), 400, "name")
    _error(api.call("GET", "/api/v1/streams?limit=0"), 400, "limit")
    _error(api.call("GET", "/api/v1/tables?limit=x"), 400, "limit")


def test_policy_set_by_api_shows_in_cli_and_materializes(broker_factory):
    b = broker_factory(*FAST)
    api = Api(b)
    topic = unique_topic("pol")
    api.call("POST", "/api/v1/streams", {"name": topic, "partitions": 2}, expect=201)
    _, pol = api.call("PATCH", "/api/v1/streams/%s/policy" % topic,
                      {"policy": {"enabled": "true", "lakestream.table.commit.interval.ms": "1000",
                                  "partition": "identity(partition)"}}, expect=200)
    rows = {f["key"]: (f["value"], f["source"]) for f in pol["fields"]}
    assert rows["lakestream.table.enabled"] == ("true", "stream")
    assert rows["lakestream.table.partition"] == ("identity(partition)", "stream")
    assert rows["lakestream.table.compression"] == ("zstd", "default")
    assert rows["lakestream.table.enabled.since"][1] == "broker"

    # the CLI shows the very same policy (one code path: admin/table_policy.c)
    rc, out, err = _cli("--bootstrap", b.bootstrap, "show", topic)
    assert rc == 0, err
    assert _cli_row(out, "lakestream.table.enabled")[1:] == ["true", "stream"]
    assert _cli_row(out, "lakestream.table.partition")[1:] == ["identity(partition)", "stream"]
    # ... and a change made with the CLI is the one the API returns
    rc, out, err = _cli("--bootstrap", b.bootstrap, "set", topic, "compression=snappy")
    assert rc == 0, err
    _, pol = api.call("GET", "/api/v1/streams/%s/policy" % topic, expect=200)
    assert pol["policy"]["compression"] == "snappy"
    # PUT replaces the stream's own keys: those left out return to their inherited value
    _, pol = api.call("PUT", "/api/v1/streams/%s/policy" % topic,
                      {"policy": {"enabled": "true", "commit.interval.ms": "1000"}}, expect=200)
    rows = {f["key"]: (f["value"], f["source"]) for f in pol["fields"]}
    assert rows["lakestream.table.compression"] == ("zstd", "default")
    assert rows["lakestream.table.partition"] == ("day", "default")
    rc, out, err = _cli("--bootstrap", b.bootstrap, "show", topic)
    assert _cli_row(out, "lakestream.table.compression")[1:] == ["zstd", "default"]

    p = Producer({"bootstrap.servers": b.bootstrap})
    for i in range(40):
        p.produce(topic, value=b"row-%d" % i, partition=i % 2)
    assert p.flush(30) == 0

    def materialized():
        st, t = api.call("GET", "/api/v1/tables/default/" + topic)
        return st == 200 and t["rows"] == 40 and t.get("lagMs") == 0 and t
    t = lsbroker.wait_until(materialized, 90, interval=0.2,
                              what="the table's 40 rows and lag 0 in the API")
    assert t["stream"] == topic and t["snapshots"] >= 1 and t["dataFiles"] >= 1 and t["bytes"] > 0
    assert sorted((o["partition"], o["committedOffset"]) for o in t["committedOffsets"]) == \
        [(0, 20), (1, 20)]
    _, lst = api.call("GET", "/api/v1/tables", expect=200)
    assert ("default", topic) in [(x["namespace"], x["name"]) for x in lst["tables"]]
    _, pol = api.call("GET", "/api/v1/streams/%s/policy" % topic, expect=200)
    assert pol["status"].get("lagMs") == 0
    _, s = api.call("GET", "/api/v1/streams/" + topic, expect=200)
    assert s["table"] == {"enabled": True, "namespace": "default", "name": topic}

    # the Iceberg REST catalog serves the same table with the same rows
    cat = rest_catalog.load_catalog("ls", type="rest", uri=b.http_url)
    assert cat.load_table(("default", topic)).scan().to_arrow().num_rows == 40
    _error(api.call("GET", "/api/v1/tables/default/no_such_table"), 404)


def test_namespace_policy_defaults(broker):
    api = Api(broker)
    _, ns = api.call("POST", "/api/v1/namespaces",
                     {"name": "analytics", "policy": {"commit.interval.ms": "5000"}}, expect=201)
    assert ns == {"name": "analytics", "policy": {"commit.interval.ms": "5000"}, "streams": 0}
    _error(api.call("POST", "/api/v1/namespaces", {"name": "analytics"}), 409, "name")
    api.call("POST", "/api/v1/namespaces", {"name": "empty_ns"}, expect=201)
    api.call("GET", "/api/v1/namespaces/empty_ns", expect=200)
    _, got = api.call("PATCH", "/api/v1/namespaces/analytics/policy",
                      {"policy": {"compression": "gzip", "commit.interval.ms": None}}, expect=200)
    assert got == {"namespace": "analytics", "policy": {"compression": "gzip"}}
    _, got = api.call("PUT", "/api/v1/namespaces/analytics/policy",
                      {"policy": {"snapshot.retention.min": "3"}}, expect=200)
    assert got["policy"] == {"snapshot.retention.min": "3"}
    _error(api.call("GET", "/api/v1/namespaces/nope/policy"), 404)
    api.call("DELETE", "/api/v1/namespaces/analytics", expect=405)

    # a default of the namespace the streams live in applies to them
    topic = unique_topic("nsd")
    api.call("POST", "/api/v1/streams", {"name": topic}, expect=201)
    api.call("PATCH", "/api/v1/namespaces/default/policy",
             {"policy": {"compression": "gzip"}}, expect=200)
    _, pol = api.call("GET", "/api/v1/streams/%s/policy" % topic, expect=200)
    rows = {f["key"]: (f["value"], f["source"]) for f in pol["fields"]}
    assert rows["lakestream.table.compression"] == ("gzip", "namespace")
    # the CLI's namespace command reads the same record
    rc, out, err = _cli("namespace", "default", "--data.dir=" + broker.data_dir)
    assert rc == 0, err
    assert _cli_row(out, "lakestream.table.compression")[1:3] == ["gzip", "namespace"]

    # every namespace, paged
    names, token = [], None
    while True:
        _, page = api.call("GET", "/api/v1/namespaces?limit=1" +
                           ("&pageToken=" + token if token else ""), expect=200)
        assert len(page["namespaces"]) <= 1
        names += [n["name"] for n in page["namespaces"]]
        token = page.get("nextPageToken")
        if not token:
            break
    assert names == ["analytics", "default", "empty_ns"]


def test_stream_list_pages(broker):
    api = Api(broker)
    prefix = unique_topic("page")
    want = sorted("%s_%02d" % (prefix, i) for i in range(7))
    for n in want:
        api.call("POST", "/api/v1/streams", {"name": n, "partitions": 1}, expect=201)
    got, token = [], None
    while True:
        _, page = api.call("GET", "/api/v1/streams?namespace=default&limit=3" +
                           ("&pageToken=" + token if token else ""), expect=200)
        assert len(page["streams"]) <= 3
        got += [s["name"] for s in page["streams"]]
        token = page.get("nextPageToken")
        if not token:
            break
    assert [n for n in got if n.startswith(prefix)] == want


def test_records_are_returned_decoded(broker):
    api = Api(broker)
    topic = unique_topic("rec")
    api.call("POST", "/api/v1/streams", {"name": topic, "partitions": 1}, expect=201)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(50):
        value = b"\xff\x00bin" if i % 5 == 0 else json.dumps({"n": i}).encode()
        p.produce(topic, key=b"k%d" % i, value=value, partition=0, headers=[("h", b"x%d" % i)])
    p.produce(topic, key=None, value=None, partition=0)
    assert p.flush(30) == 0

    _, r = api.call("GET", "/api/v1/streams/%s/partitions/0/records" % topic, expect=200)
    assert r["earliestOffset"] == 0 and r["latestOffset"] == 51
    assert [x["offset"] for x in r["records"]] == list(range(31, 51)), "the latest 20 by default"
    last = r["records"][-1]
    assert last["key"] is None and last["value"] is None
    _, r = api.call("GET", "/api/v1/streams/%s/partitions/0/records?offset=4&limit=3" % topic,
                    expect=200)
    assert [x["offset"] for x in r["records"]] == [4, 5, 6] and r["nextOffset"] == 7
    v4, v5 = r["records"][0], r["records"][1]
    assert v4["value"]["json"] == {"n": 4} and v4["key"]["text"] == "k4"
    assert v4["headers"] == [{"key": "h", "value": {"size": 2, "truncated": False,
                                                    "encoding": "text", "text": "x4"}}]
    assert v5["value"]["encoding"] == "base64" and v5["value"]["base64"] == "/wBiaW4="
    _error(api.call("GET", "/api/v1/streams/%s/partitions/0/records?limit=501" % topic), 400,
           "limit")
    _error(api.call("GET", "/api/v1/streams/%s/partitions/0/records?offset=99" % topic), 400,
           "offset")
    _error(api.call("GET", "/api/v1/streams/%s/partitions/1/records" % topic), 404)
    _error(api.call("GET", "/api/v1/streams/nope/partitions/0/records"), 404)


def test_every_broker_of_a_cluster_serves_the_same_catalog(cluster):
    brokers = [cluster.add(*FAST) for _ in range(3)]
    apis = [Api(b) for b in brokers]
    topic = unique_topic("clu")
    apis[0].call("POST", "/api/v1/streams", {"name": topic, "partitions": 2,
                                             "configs": {"retention.ms": "600000"}}, expect=201)
    apis[1].call("PATCH", "/api/v1/streams/%s/policy" % topic, {"policy": {"enabled": "true"}},
                 expect=200)

    def same_everywhere():
        views = []
        for a in apis:
            st, s = a.call("GET", "/api/v1/streams/" + topic)
            if st != 200:
                return False
            s.pop("partitionOffsets")
            views.append(s)
        return all(v == views[0] for v in views) and views[0]["configs"].get(
            "lakestream.table.enabled") == "true" and views[0]
    view = lsbroker.wait_until(same_everywhere, 60, interval=0.2, what="the stream on every broker")
    assert view["partitions"] == 2 and view["configs"]["retention.ms"] == "600000"
    apis[2].call("DELETE", "/api/v1/streams/" + topic, expect=204)

    def gone_everywhere():
        return all(a.call("GET", "/api/v1/streams/" + topic)[0] == 404 for a in apis)
    lsbroker.wait_until(gone_everywhere, 60, interval=0.2, what="the deletion on every broker")
