"""Kafka Connect and Kafka Streams keep their state in compacted topics
(issue 11 §2).

Both frameworks store what they must never lose in cleanup.policy=compact
topics: Connect its connector configs, source offsets and statuses; Streams
the changelog of every state store. Kafka never applies retention.ms to a
compact-only topic. Here each of them runs (as a Java subprocess, Kafka
4.x jars from .cache/java/apps, see tools/install-deps.sh) against one
broker whose retention and compaction passes run every few hundred ms; their
compacted topics carry retention.ms=3000. The app is stopped, the broker is
given time past that retention and a couple of passes (proved by a delete
topic with the same retention being trimmed), then the app starts again and
must carry on from the state it stored:

- Connect (distributed worker, FileStreamSource connector created over its
  REST API): the restarted worker lists the connector again and resumes from
  its stored source offset: no line copied twice, new lines copied.
- Streams (a KTable word count, tests/integration/java/apps/WordCountApp.java):
  its local state dir is deleted before the restart, so the store is
  restored from the changelog; the counts after more input must be the
  totals over both runs.
"""

import collections
import http.client
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import time
import urllib.error
import urllib.request
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition
from confluent_kafka.admin import ConfigResource

import lsbroker
from kafka_util import admin, consumer, create_topic, produce_all, producer, unique_topic, watermarks

pytestmark = pytest.mark.heavy

APPS_LIB = os.path.join(lsbroker.ROOT, ".cache", "java", "apps")
APPS_SRC = os.path.join(lsbroker.HERE, "java", "apps")

RETENTION_MS = 3000
# retention and compaction passes several times a second
FAST = ("--log.retention.check.interval.ms=100", "--compaction.interval.ms=200",
        "--compaction.min.age.ms=0", "--wal.gc.grace.ms=0")
JVM = ["java", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
       "-Dorg.slf4j.simpleLogger.showDateTime=true",
       "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS"]


def _apps_classpath(extra=None):
    if not os.path.isdir(APPS_LIB) or not any(f.startswith("connect-runtime-")
                                              for f in os.listdir(APPS_LIB)):
        pytest.fail("no Kafka Connect/Streams jars in %s; run tools/install-deps.sh test" % APPS_LIB,
                    pytrace=False)
    cp = os.path.join(APPS_LIB, "*")
    return cp if extra is None else extra + os.pathsep + cp


def _tail(path, n=60):
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
    except FileNotFoundError:
        return "(no %s)" % path
    return "\n".join(lines[-n:])


def _poll(cond, timeout, what, interval=0.2, on_timeout=None):
    """lsbroker.wait_until, with on_timeout()'s context (e.g. a log tail) in
    the failure."""
    try:
        return lsbroker.wait_until(cond, timeout, interval=interval, what=what)
    except TimeoutError as e:
        raise AssertionError(str(e) + (on_timeout() if on_timeout else ""))


class JavaProc:
    """One JVM subprocess with its output in a log file; stopped by the test
    or, at the latest, at teardown (by its own pid)."""

    def __init__(self, argv, log_path, stdin=subprocess.DEVNULL):
        self.log_path = log_path
        self.logf = open(log_path, "ab")
        self.proc = subprocess.Popen(argv, stdin=stdin, stdout=self.logf, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def alive(self):
        return self.proc.poll() is None

    def text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("%s did not exit within %ss (killed); log tail:\n%s"
                                 % (self.proc.args[-1], timeout, _tail(self.log_path)))

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.logf.close()


@pytest.fixture
def java_procs():
    procs = []
    yield procs
    for p in procs:
        p.kill()


def _describe(bootstrap, topic):
    a = admin(bootstrap)
    r = ConfigResource(ConfigResource.Type.TOPIC, topic)
    res = a.describe_configs([r])[r].result(30)
    return {k: v.value for k, v in res.items()}


def _partitions(bootstrap, topic):
    md = admin(bootstrap).list_topics(topic=topic, timeout=10)
    t = md.topics.get(topic)
    assert t is not None and t.error is None, "topic %s: %r" % (topic, t and t.error)
    return sorted(t.partitions)


def _assert_compact_with_retention(bootstrap, topic):
    cfg = _describe(bootstrap, topic)
    assert cfg.get("cleanup.policy") == "compact", (topic, cfg.get("cleanup.policy"))
    assert cfg.get("retention.ms") == str(RETENTION_MS), (topic, cfg.get("retention.ms"))


def _sit_out_retention(bootstrap, ctl_slow, ctl_fast):
    """Returns once the broker has run retention passes past RETENTION_MS
    for everything written so far, and another pass after that: a record
    written now to ctl_slow (cleanup.policy=delete, retention.ms=RETENTION_MS)
    must be trimmed, then one written to ctl_fast (retention.ms=1)."""
    t0 = time.monotonic()
    for topic, limit in ((ctl_slow, 30 + RETENTION_MS / 1000), (ctl_fast, 30)):
        dl = produce_all(producer(bootstrap), topic, [{"value": b"tick", "partition": 0}])
        end = dl.acked[0][1] + 1
        _poll(lambda: watermarks(bootstrap, topic, [0])[0][0] >= end, limit,
              "retention to trim %s up to %d" % (topic, end),
              on_timeout=lambda: " (watermarks %s)" % (watermarks(bootstrap, topic, [0]),))
    waited = time.monotonic() - t0
    assert waited >= RETENTION_MS / 1000 * 0.9, "retention trimmed %s after only %.1fs" % (ctl_slow, waited)
    return waited


def _control_topics(bootstrap):
    slow = create_topic(bootstrap, unique_topic("ctl-slow"),
                        config={"cleanup.policy": "delete", "retention.ms": str(RETENTION_MS)})
    fast = create_topic(bootstrap, unique_topic("ctl-fast"),
                        config={"cleanup.policy": "delete", "retention.ms": "1"})
    return slow, fast


def _all_watermarks(bootstrap, topics):
    out = {}
    for t in topics:
        for p, wm in watermarks(bootstrap, t, _partitions(bootstrap, t)).items():
            out[(t, p)] = wm
    return out


# ---------------------------------------------------------------- Connect

class ConnectWorker:
    def __init__(self, tmp, bootstrap, name, topics, java_procs):
        self.bootstrap = bootstrap
        self.tmp = tmp
        self.name = name
        self.topics = topics      # config, offset, status
        self.java_procs = java_procs
        self.port = None
        self.proc = None
        self.starts = 0

    def _props(self):
        cfg, off, st = self.topics
        props = {
            "bootstrap.servers": self.bootstrap,
            "group.id": "connect-" + self.name,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "config.storage.topic": cfg,
            "offset.storage.topic": off,
            "status.storage.topic": st,
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "offset.storage.partitions": "3",
            "status.storage.partitions": "2",
            # topic configs Connect puts on its internal topics when it creates
            # them (besides cleanup.policy=compact, which it insists on)
            "config.storage.retention.ms": str(RETENTION_MS),
            "offset.storage.retention.ms": str(RETENTION_MS),
            "status.storage.retention.ms": str(RETENTION_MS),
            "offset.flush.interval.ms": "300",
            "scheduled.rebalance.max.delay.ms": "0",
            "listeners": "http://127.0.0.1:%d" % self.port,
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.port),
            "plugin.discovery": "service_load",
        }
        return "".join("%s=%s\n" % kv for kv in props.items())

    def start(self):
        for attempt in range(3):
            self.starts += 1
            self.port = lsbroker.free_port()
            path = os.path.join(self.tmp, "worker-%d.properties" % self.starts)
            with open(path, "w") as f:
                f.write(self._props())
            log = os.path.join(self.tmp, "worker-%d.log" % self.starts)
            self.proc = JavaProc(JVM + ["-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
                                        "-cp", _apps_classpath(),
                                        "org.apache.kafka.connect.cli.ConnectDistributed", path], log)
            self.java_procs.append(self.proc)

            def up():
                if not self.proc.alive():
                    return "exited"
                try:
                    return self.get("/") is not None and "up"
                except (OSError, http.client.HTTPException):
                    return None
            state = _poll(up, 60, "the Connect worker's REST API on port %d" % self.port,
                          on_timeout=lambda: "; log tail:\n" + _tail(log))
            if state == "up":
                return
            if "Address already in use" not in self.proc.text():
                raise AssertionError("Connect worker exited with %s; log tail:\n%s"
                                     % (self.proc.proc.returncode, _tail(log)))
        raise AssertionError("no free REST port for the Connect worker after 3 attempts")

    def stop(self):
        """SIGTERM: the worker stops its tasks (committing their offsets),
        leaves the group and exits."""
        self.proc.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(60)
        assert rc in (0, 128 + signal.SIGTERM, -signal.SIGTERM), \
            "Connect worker exited with %s; log tail:\n%s" % (rc, self.log_tail())
        self.proc.kill()

    def log_tail(self, n=60):
        return _tail(self.proc.log_path, n) if self.proc else ""

    def request(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data,
                                     method=method, headers={"Content-Type": "application/json",
                                                             "Accept": "application/json"})
        with urllib.request.urlopen(req, timeout=20) as r:
            raw = r.read()
            return json.loads(raw) if raw else {}

    def get(self, path):
        return self.request("GET", path)

    def get_or_none(self, path):
        """GET; None on a 404/409 (not there yet, or a rebalance in progress)."""
        try:
            return self.get(path)
        except urllib.error.HTTPError as e:
            if e.code in (404, 409, 500, 503):
                return None
            raise

    def wait_running(self, connector, timeout=45):
        def running():
            st = self.get_or_none("/connectors/%s/status" % connector)
            if not st:
                return None
            tasks = st.get("tasks") or []
            for t in tasks:
                assert t.get("state") != "FAILED", "task failed: %s" % t.get("trace", t)
            if st["connector"]["state"] == "RUNNING" and tasks and \
                    all(t["state"] == "RUNNING" for t in tasks):
                return st
            return None
        return _poll(running, timeout, "connector %s and its task RUNNING" % connector,
                     on_timeout=lambda: "; worker log tail:\n" + self.log_tail())

    def source_position(self, connector, path):
        """The FileStreamSource offset (byte position in the file) stored
        in Connect's offset topic, or None."""
        got = self.get_or_none("/connectors/%s/offsets" % connector)
        for o in (got or {}).get("offsets", []):
            if o.get("partition", {}).get("filename") == path:
                return o.get("offset", {}).get("position")
        return None


def _lines(first, n):
    return ["line-%04d %s" % (i, uuid.uuid4().hex[:8]) for i in range(first, first + n)]


def _append(path, lines):
    with open(path, "a") as f:
        f.write("".join(l + "\n" for l in lines))
    return os.path.getsize(path)


def _data_values(bootstrap, topic, want, timeout=45):
    """Reads partition 0 of topic from the beginning until `want` records
    arrived and the high watermark is reached; returns the values."""
    c = consumer(bootstrap)
    got = []
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])

        def enough():
            for m in c.consume(num_messages=500, timeout=0.2):
                if m.error() is None:
                    got.append(m.value().decode())
                elif m.error().code() != KafkaError._PARTITION_EOF:
                    raise AssertionError("consume %s: %s" % (topic, m.error()))
            return len(got) >= want
        _poll(enough, timeout, "%d records in %s" % (want, topic), interval=0,
              on_timeout=lambda: " (got %d)" % len(got))
        # and nothing beyond them
        assert watermarks(bootstrap, topic, [0])[0][1] == len(got), \
            "%s holds %s records, read %d" % (topic, watermarks(bootstrap, topic, [0])[0], len(got))
    finally:
        c.close()
    return got


def test_connect_distributed_keeps_connectors_and_offsets_past_retention(broker_factory, tmp_path,
                                                                         java_procs):
    b = broker_factory(*FAST)
    bs = b.bootstrap
    t0 = time.monotonic()
    tag = uuid.uuid4().hex[:8]
    internal = ("connect-configs-" + tag, "connect-offsets-" + tag, "connect-status-" + tag)
    data = create_topic(bs, "connect-data-" + tag)
    ctl_slow, ctl_fast = _control_topics(bs)
    src = str(tmp_path / "source.txt")
    first = _lines(0, 50)
    size1 = _append(src, first)

    w = ConnectWorker(str(tmp_path), bs, tag, internal, java_procs)
    w.start()
    # Connect created its topics compacted, with our retention.ms on them
    for t in internal:
        _assert_compact_with_retention(bs, t)
    connector = "file-source-" + tag
    w.request("PUT", "/connectors/%s/config" % connector, {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1",
        "file": src,
        "topic": data,
    })
    w.wait_running(connector)
    assert _data_values(bs, data, len(first)) == first
    # the task's position reached the end of the file and was committed
    _poll(lambda: w.source_position(connector, src) == size1, 30,
          "stored source offset %d" % size1,
          on_timeout=lambda: " (have %s)" % w.source_position(connector, src))
    w.stop()

    before = _all_watermarks(bs, internal)
    for t in internal:
        assert sum(hi for (tt, _p), (_lo, hi) in before.items() if tt == t) > 0, (t, before)
    waited = _sit_out_retention(bs, ctl_slow, ctl_fast)
    # retention passed over the compacted topics and left every record
    after = _all_watermarks(bs, internal)
    assert after == before, "compacted topics changed while the worker was down: %s -> %s" % (before, after)
    assert all(lo == 0 for lo, _hi in after.values()), after

    w.start()
    _poll(lambda: connector in (w.get_or_none("/connectors") or []), 45,
          "the restarted worker to list %s" % connector,
          on_timeout=lambda: "; worker log tail:\n" + w.log_tail())
    cfg = w.get("/connectors/%s/config" % connector)
    assert cfg.get("file") == src and cfg.get("topic") == data, cfg
    w.wait_running(connector)
    pos = _poll(lambda: w.source_position(connector, src), 20, "the stored source offset",
                on_timeout=lambda: "; worker log tail:\n" + w.log_tail())
    assert pos == size1, "stored source offset %s after the restart, want %d" % (pos, size1)
    second = _lines(len(first), 30)
    size2 = _append(src, second)
    assert _data_values(bs, data, len(first) + len(second)) == first + second
    _poll(lambda: w.source_position(connector, src) == size2, 30,
          "stored source offset %d" % size2,
          on_timeout=lambda: " (have %s)" % w.source_position(connector, src))
    w.stop()
    # nothing copied twice, even after the final offset commit
    assert watermarks(bs, data, [0])[0] == (0, len(first) + len(second))
    print("connect test: %.1fs (retention wait %.1fs)" % (time.monotonic() - t0, waited))


# ---------------------------------------------------------------- Streams

@pytest.fixture(scope="module")
def wordcount_classes(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("wordcount-classes"))
    r = subprocess.run(["javac", "-nowarn", "-cp", _apps_classpath(), "-d", out,
                        os.path.join(APPS_SRC, "WordCountApp.java")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, "javac WordCountApp failed:\n%s%s" % (r.stdout, r.stderr)
    return out


class WordCount:
    """WordCountApp in a JVM; protocol is its group.protocol (classic or
    streams), name tells the logs of several instances apart."""

    def __init__(self, classes, bootstrap, app_id, input_topic, output_topic, state_dir, tmp,
                 java_procs, guarantee="at_least_once", protocol="classic", threads=1,
                 name="wordcount"):
        self.argv = JVM + ["-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                           "-cp", _apps_classpath(classes), "WordCountApp", bootstrap, app_id,
                           input_topic, output_topic, state_dir, str(RETENTION_MS), guarantee,
                           protocol, str(threads)]
        self.name = name
        self.tmp = tmp
        self.java_procs = java_procs
        self.proc = None
        self.starts = 0

    def start(self):
        self.starts += 1
        self.proc = JavaProc(self.argv, os.path.join(self.tmp, "%s-%d.log" % (self.name, self.starts)),
                             stdin=subprocess.PIPE)
        self.java_procs.append(self.proc)
        _poll(lambda: not self.proc.alive() or "STATE RUNNING" in self.proc.text(), 60,
              "Kafka Streams to reach RUNNING", on_timeout=lambda: "; log tail:\n" + self.log_tail())
        assert self.proc.alive(), "WordCountApp exited with %s; log tail:\n%s" % (
            self.proc.proc.returncode, self.log_tail())

    def stop(self):
        self.proc.proc.stdin.close()
        rc = self.proc.wait(60)
        assert rc == 0, "WordCountApp exited with %s; log tail:\n%s" % (rc, self.log_tail())
        self.proc.kill()

    def log_tail(self, n=60):
        return _tail(self.proc.log_path, n) if self.proc else ""

    def restored(self):
        """{changelog partition: records restored} from RESTORED lines."""
        out = {}
        for line in self.proc.text().splitlines():
            if line.startswith("RESTORED "):
                _, tp, n = line.split()
                out[tp] = out.get(tp, 0) + int(n)
        return out


class LatestCounts:
    """Follows the output topic (all partitions) and keeps each word's
    latest count."""

    def __init__(self, bootstrap, topic, partitions):
        self.c = consumer(bootstrap)
        self.c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        self.counts = {}

    def poll(self):
        for m in self.c.consume(num_messages=1000, timeout=0.2):
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise AssertionError("consume output: %s" % m.error())
            self.counts[m.key().decode()] = struct.unpack(">q", m.value())[0]
        return self.counts

    def wait_for(self, want, app, timeout=45):
        _poll(lambda: self.poll() == want, timeout, "word counts %s" % dict(want), interval=0,
              on_timeout=lambda: " (have %s); app log tail:\n%s" % (self.counts, app.log_tail()))

    def close(self):
        self.c.close()


def _sentences(rng, n):
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 6))) for _ in range(n)]


def _word_totals(lines):
    return collections.Counter(w for line in lines for w in line.split())


def test_streams_ktable_restored_from_changelog_past_retention(broker_factory, tmp_path, java_procs,
                                                                wordcount_classes):
    b = broker_factory(*FAST)
    bs = b.bootstrap
    t0 = time.monotonic()
    tag = uuid.uuid4().hex[:8]
    app_id = "wordcount-" + tag
    changelog = app_id + "-word-counts-changelog"
    input_topic = create_topic(bs, "words-in-" + tag, partitions=2)
    output_topic = create_topic(bs, "words-out-" + tag, partitions=2)
    ctl_slow, ctl_fast = _control_topics(bs)
    state_dir = str(tmp_path / "state")
    rng = random.Random(11)
    out = LatestCounts(bs, output_topic, [0, 1])
    app = WordCount(wordcount_classes, bs, app_id, input_topic, output_topic, state_dir,
                    str(tmp_path), java_procs)
    try:
        app.start()
        first = _sentences(rng, 60)
        produce_all(producer(bs), input_topic, [{"value": l.encode()} for l in first])
        out.wait_for(dict(_word_totals(first)), app)
        app.stop()
        assert os.listdir(state_dir), "no local state written"

        # the changelog: compacted by Streams' choice, with our retention.ms
        _assert_compact_with_retention(bs, changelog)
        before = _all_watermarks(bs, [changelog])
        assert sum(hi for _lo, hi in before.values()) > 0, before
        waited = _sit_out_retention(bs, ctl_slow, ctl_fast)
        after = _all_watermarks(bs, [changelog])
        assert after == before, "changelog changed while the app was down: %s -> %s" % (before, after)
        assert all(lo == 0 for lo, _hi in after.values()), after

        # no local state: the store must come back from the changelog
        shutil.rmtree(state_dir)
        app.start()
        second = _sentences(rng, 40)
        produce_all(producer(bs), input_topic, [{"value": l.encode()} for l in second])
        out.wait_for(dict(_word_totals(first + second)), app)
        restored = app.restored()
        assert sum(restored.values()) >= len(_word_totals(first)), \
            "store not restored from %s: %s" % (changelog, restored)
        app.stop()
    finally:
        out.close()
    print("streams test: %.1fs (retention wait %.1fs)" % (time.monotonic() - t0, waited))


@pytest.mark.parametrize("protocol", ["classic", "streams"])
def test_streams_exactly_once_through_broker_kills(cluster, tmp_path, java_procs,
                                                   wordcount_classes, protocol):
    """Kafka Streams with processing.guarantee=exactly_once_v2 (a word count
    with a repartition topic and a state store) on three brokers over etcd,
    each killed with -9 and restarted in turn while it runs: a read_committed
    reader of the output sees, for every word, each count from 1 to its total
    exactly once, in order: nothing lost, nothing counted twice. With the
    classic group protocol and with the streams one (KIP-1071: the group's
    coordinator, which assigns the tasks and fences commits by member epoch,
    is among the brokers killed)."""
    brokers = [cluster.add("--broker.session.timeout.ms=2000",
                           "--transaction.abort.timed.out.transaction.cleanup.interval.ms=1000",
                           "--group.streams.heartbeat.interval.ms=1000",
                           "--group.streams.min.heartbeat.interval.ms=1000")
               for _ in range(3)]
    bs = cluster.bootstrap
    tag = uuid.uuid4().hex[:8]
    app_id = "wordcount-eos-" + tag
    input_topic = create_topic(bs, "eos-in-" + tag, partitions=2)
    output_topic = create_topic(bs, "eos-out-" + tag, partitions=2)
    rng = random.Random(16)
    app = WordCount(wordcount_classes, bs, app_id, input_topic, output_topic,
                    str(tmp_path / "state"), str(tmp_path), java_procs, "exactly_once_v2",
                    protocol=protocol)
    reader = consumer(bs, **{"isolation.level": "read_committed"})
    reader.assign([TopicPartition(output_topic, p, OFFSET_BEGINNING) for p in (0, 1)])
    seen = collections.defaultdict(list)

    def poll():
        for m in reader.consume(num_messages=1000, timeout=0.2):
            if m.error() is None:
                seen[m.key().decode()].append(struct.unpack(">q", m.value())[0])
            elif m.error().code() != KafkaError._PARTITION_EOF:
                raise AssertionError("consume output: %s" % m.error())
    lines = []
    try:
        app.start()
        p = producer(bs, **{"enable.idempotence": True})
        for round_ in range(4):
            batch = _sentences(rng, 50)
            produce_all(p, input_topic, [{"value": l.encode()} for l in batch])
            lines += batch
            victim = brokers[round_ % 3]
            time.sleep(0.5)
            victim.kill9()
            time.sleep(1.5)
            victim.start()
            poll()
        want = _word_totals(lines)
        _poll(lambda: (poll(), {w: c[-1] for w, c in seen.items() if c} == dict(want))[1], 120,
              "exact word counts", on_timeout=lambda: " (have %s, want %s); app log tail:\n%s" % (
                  {w: c[-1] for w, c in seen.items()}, dict(want), app.log_tail()))
        for w, counts in seen.items():
            assert counts == list(range(1, want[w] + 1)), "%s: counts %s" % (w, counts)
        app.stop()
        # kafka-clients 4.x run transaction version 2 here: every commit bumped the
        # epoch of the app's transactional id (version 1 moves it only at an init,
        # once here); each of the four rounds' input is committed at least once
        epochs = _txn_epochs(bs, app_id)
        print("streams eos: epochs of the app's transactional ids %s" % epochs)
        assert epochs and max(epochs.values()) >= 4, epochs
    finally:
        reader.close()


def _txn_epochs(bootstrap, prefix):
    """{transactional id: producer epoch} of the ids starting with prefix
    (`lakestream transactions list`, then `describe` each)."""
    def cli(*args):
        r = subprocess.run([lsbroker.binary_path(), "transactions", "--bootstrap",
                            bootstrap.split(",")[0]]
                           + list(args), capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout
    out = {}
    for line in cli("list").splitlines()[1:]:
        tid = line.split()[0] if line.split() else ""
        if not tid.startswith(prefix):
            continue
        for d in cli("describe", tid).splitlines():
            if d.strip().startswith("producer"):
                out[tid] = int(d.rsplit("epoch", 1)[1])
    return out
