"""The soak's security and observability side: the broker runs as a team
would deploy it, and what they would watch is watched for the whole run.

  - Two listeners: PLAINTEXT (the soak's many clients, as User:ANONYMOUS) and
    SASL_PLAINTEXT (SCRAM users), Kafka's StandardAuthorizer on, deny by
    default. User:ANONYMOUS holds ACLs on what the load needs (topics
    prefixed "soak-", groups, transactional ids, the cluster), not super-user
    rights, so every request of the load passes the authorizer;
    connections.max.reauth.ms is short so SASL sessions re-authenticate
    (KIP-368) many times over the run.
  - A SCRAM-SHA-512 reader (User:soak-reader, READ on one topic and its group
    only) consumes a plain topic to its end: every acknowledged record must
    reach it.
  - A prober asks, every few seconds, for what must stay refused: User:ANONYMOUS
    reading a topic it is DENY'd, a login with a wrong password. A single
    answer other than a refusal fails the run.
  - A scraper reads /metrics every 2 s (prometheus_client's parser), and the
    console's /, /api/v1/cluster and /api/v1/groups every 10 s: every scrape
    parses, no counter goes backwards, the number of series stays bounded
    (label sets must not grow with time), and the broker's RSS is sampled.
    At the end the table gauges are held against the tables read back.
"""

import logging
import subprocess
import threading
import time
import urllib.request

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType)
from prometheus_client.parser import text_string_to_metric_families

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ADMIN, ADMIN_PW = "soak-admin", "soak-admin-secret"
READER, READER_PW = "soak-reader", "soak-reader-secret"
SECRET_TOPIC = "soak-secret"
REAUTH_MS = 10000
SCRAPE_S = 2
CONSOLE_S = 10


def broker_args(host, port, sasl_port):
    """The listener, SASL and authorizer settings of the soak's broker."""
    return ["--listeners=PLAINTEXT://%s:%d,SASL://%s:%d" % (host, port, host, sasl_port),
            "--listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT",
            "--sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
            "--authorizer.class.name=" + AUTHORIZER,
            "--super.users=User:" + ADMIN,
            "--connections.max.reauth.ms=%d" % REAUTH_MS]


def add_users(b):
    """Creates the SCRAM users in the broker's metadata store (before start)."""
    for name, pw in ((ADMIN, ADMIN_PW), (READER, READER_PW)):
        p = subprocess.run([b.binary, "users", "add", name, "--data.dir=" + b.data_dir],
                           input=(pw + "\n").encode(), capture_output=True, timeout=60,
                           env=b._env())
        if p.returncode != 0:
            raise RuntimeError("lakestream users add %s: %s" % (name, (p.stdout + p.stderr)
                                                                  .decode(errors="replace")))


def sasl_conf(bootstrap, user, pw, **extra):
    c = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": pw}
    c.update(extra)
    return c


def grant(sasl_bootstrap, reader_topic, reader_group):
    """The ACLs of the run, created by the super user over SASL."""
    anon, host = "User:ANONYMOUS", "*"
    allow, deny = AclPermissionType.ALLOW, AclPermissionType.DENY
    lit, pre = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
    bindings = [
        AclBinding(ResourceType.TOPIC, "soak-", pre, anon, host, AclOperation.ALL, allow),
        AclBinding(ResourceType.GROUP, "*", lit, anon, host, AclOperation.ALL, allow),
        AclBinding(ResourceType.TRANSACTIONAL_ID, "*", lit, anon, host, AclOperation.ALL, allow),
        AclBinding(ResourceType.BROKER, "kafka-cluster", lit, anon, host, AclOperation.ALL,
                   allow),
        AclBinding(ResourceType.TOPIC, SECRET_TOPIC, lit, anon, host, AclOperation.READ, deny),
        AclBinding(ResourceType.TOPIC, reader_topic, lit, "User:" + READER, host,
                   AclOperation.READ, allow),
        AclBinding(ResourceType.GROUP, reader_group, lit, "User:" + READER, host,
                   AclOperation.READ, allow)]
    a = AdminClient(sasl_conf(sasl_bootstrap, ADMIN, ADMIN_PW))
    for f in a.create_acls(bindings, request_timeout=30).values():
        f.result(timeout=60)


class SaslReader(threading.Thread):
    """User:soak-reader consuming one topic over SCRAM-SHA-512 with a group."""

    def __init__(self, sasl_bootstrap, topic, group, stop):
        super().__init__(name="sasl-reader")
        self.conf = sasl_conf(sasl_bootstrap, READER, READER_PW, **{
            "group.id": group, "auto.offset.reset": "earliest"})
        self.topic, self.stop, self.values, self.errors = topic, stop, set(), []

    def run(self):
        c = Consumer(self.conf)
        c.subscribe([self.topic])
        while not self.stop.is_set():
            for m in c.consume(num_messages=1000, timeout=0.2):
                if m.error() is None:
                    self.values.add(m.value())
                elif m.error().code() != KafkaError._PARTITION_EOF:
                    self.errors.append(str(m.error()))
        c.close()


class Prober(threading.Thread):
    """What must stay refused, asked again every few seconds."""

    def __init__(self, bootstrap, sasl_bootstrap, stop, every_s=5):
        super().__init__(name="denial-prober")
        self.bootstrap, self.sasl_bootstrap, self.stop = bootstrap, sasl_bootstrap, stop
        self.every_s, self.probes, self.unexpected = every_s, 0, []

    def _denied_read(self):
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "soak-prober",
                      "enable.auto.commit": False})
        c.assign([TopicPartition(SECRET_TOPIC, 0, 0)])
        got = None
        deadline = time.monotonic() + 30
        while got is None and time.monotonic() < deadline:
            for m in c.consume(num_messages=10, timeout=0.5):
                got = m.error().code() if m.error() else "read a record"
                break
        c.close()
        if got != KafkaError.TOPIC_AUTHORIZATION_FAILED:
            self.unexpected.append("anonymous read of %s: %s" % (SECRET_TOPIC, got))

    def _wrong_password(self):
        errs = []
        quiet = logging.getLogger("soak.prober")
        quiet.addHandler(logging.NullHandler())
        quiet.propagate = False
        p = Producer(sasl_conf(self.sasl_bootstrap, READER, "not-the-password",
                               error_cb=lambda e: errs.append(e.code()), logger=quiet))
        deadline = time.monotonic() + 30
        while not errs and time.monotonic() < deadline:
            p.poll(0.1)
        del p  # no retries beyond the first answer
        if KafkaError._AUTHENTICATION not in errs:
            self.unexpected.append("wrong password: errors %s" % errs[:3])

    def run(self):
        while not self.stop.wait(self.every_s):
            self._denied_read()
            self._wrong_password()
            self.probes += 1


def _rss_bytes(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def scrape(http_url):
    """{(name, labels tuple): value} of one /metrics scrape."""
    with urllib.request.urlopen(http_url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _monotonic_series(name):
    return name.endswith(("_total", "_count", "_sum", "_bucket"))


class Scraper(threading.Thread):
    """/metrics every SCRAPE_S, the console's pages every CONSOLE_S."""

    def __init__(self, http_url, pid, stop):
        super().__init__(name="metrics-scraper")
        self.http_url, self.pid, self.stop = http_url, pid, stop
        self.samples = []          # (t, series count, rss bytes)
        self.failures, self.backwards, self.console_failures = [], [], []
        self.last = {}
        self.console_reads = 0

    def _scrape_once(self, t):
        try:
            cur = scrape(self.http_url)
        except Exception as e:  # a failed or unparsable scrape fails the run
            self.failures.append("%.0f s: %s" % (t, e))
            return
        for k, v in cur.items():
            if _monotonic_series(k[0]) and k in self.last and v < self.last[k]:
                self.backwards.append((k[0], dict(k[1]), self.last[k], v))
        self.last = cur
        self.samples.append((round(t, 1), len(cur), _rss_bytes(self.pid)))

    def _console_once(self, t):
        for path in ("/", "/api/v1/cluster", "/api/v1/groups"):
            try:
                with urllib.request.urlopen(self.http_url + path, timeout=30) as r:
                    r.read()
                    if r.status != 200:
                        self.console_failures.append("%s: %d" % (path, r.status))
            except Exception as e:
                self.console_failures.append("%.0f s %s: %s" % (t, path, e))
        self.console_reads += 1

    def run(self):
        t0 = time.monotonic()
        next_console = 0.0
        while not self.stop.wait(SCRAPE_S):
            t = time.monotonic() - t0
            self._scrape_once(t)
            if t >= next_console:
                self._console_once(t)
                next_console = t + CONSOLE_S


def checks(seconds, reader, reader_want, prober, scraper, http_url, table_rows):
    """The run's verdicts on this side, as (dict for the report, ok)."""
    c = {}
    c["sasl_reader_records"] = len(reader.values)
    c["sasl_reader_missing"] = len(reader_want - reader.values)
    c["sasl_reader_errors"] = reader.errors[:5]
    c["denial_probes"] = prober.probes
    c["denial_unexpected"] = prober.unexpected[:5]
    c["metrics_scrapes"] = len(scraper.samples)
    c["metrics_scrape_failures"] = scraper.failures[:5]
    c["metrics_counters_backwards"] = scraper.backwards[:5]
    c["console_reads"] = scraper.console_reads
    c["console_failures"] = scraper.console_failures[:5]
    # bounded: series and RSS at the end against the first half's highest
    # (after the first minute, when every topic, table and API has appeared)
    half = [s for s in scraper.samples if 60 <= s[0] <= seconds / 2] or scraper.samples[:1]
    end = scraper.samples[-1] if scraper.samples else None
    series_ok = rss_ok = True
    if half and end:
        ref_series = max(s[1] for s in half)
        c["metrics_series_first_half_max"], c["metrics_series_at_end"] = ref_series, end[1]
        series_ok = end[1] <= 1.25 * ref_series + 100
        rss = [s[2] for s in half if s[2]]
        if rss and end[2]:
            c["rss_mib_first_half_max"] = round(max(rss) / 2**20, 1)
            c["rss_mib_at_end"] = round(end[2] / 2**20, 1)
            rss_ok = end[2] <= 1.5 * max(rss) + 64 * 2**20
    c["metrics_series_bounded"], c["rss_bounded"] = series_ok, rss_ok
    # the table gauges tell the truth: rows of each table's current snapshot
    gauges_ok = True
    try:
        final = scrape(http_url)
        wrong = {}
        for table, rows in table_rows.items():
            got = final.get(("lakestream_table_rows",
                             (("namespace", "default"), ("table", table))))
            if got != rows:
                wrong[table] = (got, rows)
        c["table_rows_gauge_wrong"] = wrong
        gauges_ok = not wrong
    except Exception as e:
        c["table_rows_gauge_wrong"] = str(e)
        gauges_ok = False
    ok = (c["sasl_reader_missing"] == 0 and not reader.errors and prober.probes > 0
          and not prober.unexpected and not scraper.failures and not scraper.backwards
          and not scraper.console_failures and len(scraper.samples) >= seconds / SCRAPE_S / 2
          and series_ok and rss_ok and gauges_ok)
    return c, ok
