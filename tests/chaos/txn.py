"""Transaction checker for the chaos harness (`chaos.py --txn`).

Several transactional producers (librdkafka, one transactional.id each) run
transactions of random size over random partitions, committing or aborting
at random, while the nemesis of chaos.py kill -9s, pauses and cuts brokers
from etcd (and, with --faults, the stores fail underneath). Every record is
unique and names its transaction and the outcome its producer meant:

    tx|<producer>|<txn number>|<index>|<records in the txn>|<C or A>

Each transaction ends with one outcome as the client saw it:

  committed  commit_transaction returned
  aborted    abort_transaction returned, or the producer never asked for a
             commit (it meant to abort, or its instance died before asking)
  unknown    commit_transaction was called and did not return success (a
             fatal error, a timeout): either outcome is allowed, but all or
             nothing

At the end every transactional id is fenced by a new instance
(init_transactions: the coordinator finishes or aborts whatever is left),
then a read_committed and a read_uncommitted consumer read every partition
to its end and the checker counts:

  lost                  records of committed transactions not visible to
                        read_committed
  lost_uncommitted      records of committed transactions read_uncommitted
                        does not see
  aborted_visible       records of aborted transactions visible to
                        read_committed
  partial_txns          committed or unknown transactions only partly visible
  duplicated            a record visible twice (read_committed), or present
                        twice in the log (read_uncommitted)
  misplaced             a record on another partition than it was sent to
  non_monotonic         read_committed offsets not increasing in a partition
  reordered             a producer's transactions out of order in a partition
  offset_mismatch       read_committed and read_uncommitted disagree on the
                        record at an offset
  strangers             records no producer wrote

Beside them a consume-transform-produce loop (KIP-447, librdkafka's
send_offsets_to_transaction) runs through the same nemesis: one consumer in
a group reads an input topic (read_committed; filled beforehand, and fed
at about CTP_FEED_RATE records a second during the run, whatever of that
the nemesis lets through: only input offsets matter),
and per batch one transaction writes `ctp|<partition>|<offset>` for each
input record to the same partition of an output topic and commits the
group's offsets with it; a share of them abort (the consumer then rewinds to
the group's committed offsets), a failed one too. Output and offsets must
move together, whatever the client saw: after fencing, for every input
partition the read_committed output holds exactly the input offsets below
the group's committed offset, each once:

  ctp_lost              an input offset below the committed one with no output
  ctp_ahead             an output of an input offset at or past the committed
                        one (records committed without their offsets)
  ctp_duplicated        an input offset output twice
  ctp_misplaced         an output on another partition than its input
"""

import os
import random
import shutil
import threading
import time
from collections import Counter, defaultdict

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer,
                             TopicPartition)

import chaos
from kafka_util import create_topic

COMMIT_SHARE = 0.65        # transactions meant to commit; the rest abort
MAX_RECORDS = 12           # records per transaction: 1..MAX_RECORDS
MAX_PARTITIONS = 3         # partitions per transaction: 1..MAX_PARTITIONS
TXN_TIMEOUT_MS = 10000     # the sweep aborts a stalled transaction after this
END_TIMEOUT_S = 60         # a commit or abort is retried this long, then unknown

TRANSIENT = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT,
             KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
             KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.REQUEST_TIMED_OUT,
             KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION,
             KafkaError.KAFKA_STORAGE_ERROR, KafkaError.UNKNOWN_TOPIC_OR_PART}


class Txn:
    __slots__ = ("n", "intent", "parts", "outcome", "commit_attempted", "error")

    def __init__(self, n, intent, parts):
        self.n, self.intent, self.parts = n, intent, parts  # parts: index -> partition
        self.outcome = "open"
        self.commit_attempted = False
        self.error = None


def producer_conf(bootstrap, tid):
    conf = {"bootstrap.servers": bootstrap, "transactional.id": tid,
            "transaction.timeout.ms": TXN_TIMEOUT_MS, "linger.ms": 2,
            "retry.backoff.ms": 50, "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 500, "socket.timeout.ms": 10000}
    if os.environ.get("TXN_DEBUG"):   # e.g. TXN_DEBUG=eos: librdkafka's transaction log
        conf["debug"] = os.environ["TXN_DEBUG"]
    return conf


def init_producer(bootstrap, tid, deadline):
    """A new instance of `tid` with its transactions initialised (fences the
    previous one). Retries until `deadline`; None past it."""
    while time.monotonic() < deadline:
        p = Producer(producer_conf(bootstrap, tid))
        while time.monotonic() < deadline:
            try:
                p.init_transactions(20)
                return p
            except KafkaException as e:
                err = e.args[0]
                if err.fatal() or not err.retriable():
                    break       # a fresh instance
                time.sleep(0.1)
        time.sleep(0.2)
    return None


class Worker(threading.Thread):
    """One transactional id: transactions until `stop`, each recorded in
    self.txns {(producer, txn number): Txn}."""

    def __init__(self, idx, bootstrap, topic, partitions, seed, stop):
        super().__init__(daemon=True)
        self.idx, self.bootstrap, self.topic, self.partitions = idx, bootstrap, topic, partitions
        self.tid = "chaos-txn-%d-%d" % (seed, idx)
        self.rnd = random.Random(seed * 1000 + idx)
        self.stop = stop
        self.txns = {}
        self.instances = 0
        self.errors = Counter()

    def run(self):
        p, n = None, 0
        while not self.stop.is_set():
            if p is None:
                p = init_producer(self.bootstrap, self.tid, time.monotonic() + 120)
                self.instances += 1
                if p is None:
                    self.errors["init gave up"] += 1
                    continue
            n += 1
            k = self.rnd.randint(1, MAX_RECORDS)
            parts = self.rnd.sample(range(self.partitions),
                                    self.rnd.randint(1, min(MAX_PARTITIONS, self.partitions)))
            t = Txn(k, "C" if self.rnd.random() < COMMIT_SHARE else "A",
                    {i: parts[i % len(parts)] for i in range(k)})
            self.txns[(self.idx, n)] = t
            p = self.one(p, n, t)

    def one(self, p, n, t):
        """Runs transaction n; returns the producer to go on with (None: a new
        instance is needed)."""
        try:
            p.begin_transaction()
        except KafkaException as e:
            t.outcome, t.error = "aborted", "begin: %s" % e.args[0].name()
            self.errors[t.error] += 1
            return None
        commit = t.intent == "C"
        try:
            for i in range(t.n):
                v = b"tx|%d|%d|%d|%d|%s" % (self.idx, n, i, t.n, t.intent.encode())
                while True:
                    try:
                        p.produce(self.topic, v, partition=t.parts[i])
                        break
                    except BufferError:
                        p.poll(0.01)
            if not commit and self.rnd.random() < 0.5:
                p.flush(10)   # let the records reach the log before the abort
        except KafkaException as e:
            self.errors["produce: %s" % e.args[0].name()] += 1
            commit = False
        return self.end(p, t, commit)

    def end(self, p, t, commit):
        deadline = time.monotonic() + END_TIMEOUT_S
        while True:
            if commit:
                t.commit_attempted = True
            try:
                (p.commit_transaction if commit else p.abort_transaction)(20)
                t.outcome = "committed" if commit else "aborted"
                return p
            except KafkaException as e:
                err = e.args[0]
                what = "%s: %s" % ("commit" if commit else "abort", err.name())
                self.errors[what] += 1
                t.error = what
                if err.fatal():
                    t.outcome = "unknown" if t.commit_attempted else "aborted"
                    return None
                if err.txn_requires_abort():
                    commit = False
                    continue
                if err.retriable() and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                t.outcome = "unknown" if t.commit_attempted else "aborted"
                return None


CTP_INPUT = 2000          # records of the consume-transform-produce input, beforehand
CTP_FEED_RATE = 100       # and a second during the run
CTP_ABORT_SHARE = 0.2      # its transactions meant to abort
CTP_MAX_BATCH = 25         # input records per transaction: 1..CTP_MAX_BATCH


class Transformer(threading.Thread):
    """The consume-transform-produce loop of the module's docstring."""

    def __init__(self, bootstrap, topics, seed, stop):
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.input, self.output = topics
        self.tid = "chaos-ctp-%d" % seed
        self.group = "chaos-ctp-%d" % seed
        self.rnd = random.Random(seed * 7919)
        self.stop = stop
        self.instances = 0
        self.outcomes = Counter()
        self.errors = Counter()
        self.crashed = None

    def run(self):
        try:
            self.loop()
        except Exception as e:   # reported (ctp_crashed), and the run fails
            self.crashed = repr(e)

    def loop(self):
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                      "isolation.level": "read_committed", "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                      "socket.timeout.ms": 10000, "fetch.wait.max.ms": 100})
        c.subscribe([self.input])
        p = None
        try:
            while not self.stop.is_set():
                if p is None:
                    p = init_producer(self.bootstrap, self.tid, time.monotonic() + 120)
                    self.instances += 1
                    if p is None:
                        self.errors["init gave up"] += 1
                        continue
                    self.rewind(c)
                msgs = [m for m in c.consume(num_messages=self.rnd.randint(1, CTP_MAX_BATCH),
                                             timeout=0.5) if m.error() is None]
                if msgs:
                    p = self.one(c, p, msgs)
        finally:
            c.close()

    def rewind(self, c):
        """Back to the group's committed offsets: what a failed or aborted
        transaction consumed is read again."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not self.stop.is_set():
            try:
                parts = c.assignment()
                if not parts:
                    return
                for tp in c.committed(parts, timeout=10):
                    c.seek(TopicPartition(tp.topic, tp.partition,
                                          tp.offset if tp.offset >= 0 else OFFSET_BEGINNING))
                return
            except KafkaException as e:
                self.errors["rewind: %s" % e.args[0].name()] += 1
                time.sleep(0.2)

    def one(self, c, p, msgs):
        """One transaction over msgs; the producer to go on with (None: a
        new instance is needed)."""
        commit = self.rnd.random() >= CTP_ABORT_SHARE
        try:
            p.begin_transaction()
            nxt = {}
            for m in msgs:
                while True:
                    try:
                        p.produce(self.output, b"ctp|%d|%d" % (m.partition(), m.offset()),
                                  partition=m.partition())
                        break
                    except BufferError:
                        p.poll(0.01)
                nxt[m.partition()] = m.offset() + 1
            p.send_offsets_to_transaction(
                [TopicPartition(self.input, part, off) for part, off in sorted(nxt.items())],
                c.consumer_group_metadata(), 20)
        except KafkaException as e:
            err = e.args[0]
            self.errors["send: %s" % err.name()] += 1
            if err.fatal():
                self.outcomes["failed"] += 1
                return None
            commit = False
        deadline = time.monotonic() + END_TIMEOUT_S
        while True:
            try:
                (p.commit_transaction if commit else p.abort_transaction)(20)
                self.outcomes["committed" if commit else "aborted"] += 1
                if not commit:
                    self.rewind(c)
                return p
            except KafkaException as e:
                err = e.args[0]
                self.errors["%s: %s" % ("commit" if commit else "abort", err.name())] += 1
                if err.fatal():
                    self.outcomes["failed"] += 1
                    return None
                if err.txn_requires_abort():
                    commit = False
                    continue
                if err.retriable() and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                self.outcomes["failed"] += 1
                return None


def ctp_fill(bootstrap, topic, partitions):
    """The input of the loop, written before the nemesis starts."""
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    failed = []
    for i in range(CTP_INPUT):
        p.produce(topic, b"in|%d" % i, partition=i % partitions,
                  on_delivery=lambda err, _m: err and failed.append(err))
        p.poll(0)
    assert p.flush(60) == 0 and not failed, "filling %s: %s" % (topic, failed[:3])


class Feeder(threading.Thread):
    """More input for the loop while the nemesis runs; delivery failures
    are counted, not retried, and a producer that failed fatally (an
    idempotent producer can, under the faulty stores) is replaced."""

    def __init__(self, bootstrap, topic, partitions, stop):
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.partitions, self.stop = bootstrap, topic, partitions, stop
        self.sent = self.failed = self.producers = 0

    def delivered(self, err, _m):
        if err:
            self.failed += 1

    def new_producer(self):
        self.producers += 1
        return Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 30000,
                         "socket.timeout.ms": 10000})

    def run(self):
        p = self.new_producer()
        while not self.stop.is_set():
            try:
                for _ in range(CTP_FEED_RATE // 10):
                    p.produce(self.topic, b"in|f%d" % self.sent,
                              partition=self.sent % self.partitions, on_delivery=self.delivered)
                    self.sent += 1
                p.poll(0)
            except BufferError:
                p.poll(0.1)
            except KafkaException:
                p = self.new_producer()
            time.sleep(0.1)
        try:
            p.flush(30)
        except KafkaException:
            pass


def ctp_committed(bootstrap, topic, partitions, group):
    """{partition: the group's committed offset (0: none)}."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                got = c.committed([TopicPartition(topic, p) for p in range(partitions)],
                                  timeout=10)
                return {tp.partition: max(tp.offset, 0) for tp in got}
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        c.close()


def ctp_check(output, committed):
    """The ctp_* counts of the module's docstring (output: read_committed
    of the output topic), plus examples."""
    r = Counter()
    ex = defaultdict(list)

    def bad(kind, what):
        r[kind] += 1
        if len(ex[kind]) < 5:
            ex[kind].append(what)

    seen = defaultdict(Counter)   # input partition -> offset -> times output
    for part, msgs in output.items():
        for off, v in msgs:
            try:
                tag, ip, io = v.split(b"|")
                assert tag == b"ctp"
                ip, io = int(ip), int(io)
            except (ValueError, AssertionError):
                bad("ctp_strangers", v.decode(errors="replace"))
                continue
            r["ctp_output"] += 1
            if ip != part:
                bad("ctp_misplaced", "%s on p%d" % (v.decode(), part))
            seen[ip][io] += 1
    for part, upto in committed.items():
        r["ctp_committed_offsets"] += upto
        for off in range(upto):
            if not seen[part][off]:
                bad("ctp_lost", "p%d@%d" % (part, off))
        for off, n in seen[part].items():
            if n > 1:
                bad("ctp_duplicated", "p%d@%d x%d" % (part, off, n))
            if off >= upto:
                bad("ctp_ahead", "p%d@%d (committed %d)" % (part, off, upto))
    for kind in CTP_FAILURES + ("ctp_output", "ctp_committed_offsets"):
        r.setdefault(kind, 0)
    return dict(r), {k: v for k, v in ex.items() if v}


CTP_FAILURES = ("ctp_lost", "ctp_ahead", "ctp_duplicated", "ctp_misplaced", "ctp_strangers")


def read_to_end(bootstrap, topic, partitions, isolation, timeout=300):
    """{partition: [(offset, value)]} from the log start to the end (the LSO
    for read_committed), with partition EOF seen on every partition twice
    in a row a second apart (nothing arriving late)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-txn-unused",
                  "isolation.level": isolation, "enable.auto.commit": False,
                  "enable.partition.eof": True, "fetch.wait.max.ms": 100,
                  "socket.timeout.ms": 10000})
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        out = {p: [] for p in range(partitions)}
        eof = set()
        deadline = time.monotonic() + timeout
        quiet_since = None
        while time.monotonic() < deadline:
            got = False
            for m in c.consume(num_messages=1000, timeout=0.2):
                e = m.error()
                if e is not None:
                    if e.code() == KafkaError._PARTITION_EOF:
                        eof.add(m.partition())
                    elif e.code() not in TRANSIENT:
                        raise KafkaException(e)
                    continue
                got = True
                eof.discard(m.partition())
                out[m.partition()].append((m.offset(), m.value()))
            if got or len(eof) < partitions:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > 1.0:
                return out
        raise AssertionError("%s read of %s: no end after %d s (eof on %s)"
                             % (isolation, topic, timeout, sorted(eof)))
    finally:
        c.close()


def parse(v):
    try:
        tag, prod, n, i, k, intent = v.split(b"|")
        if tag != b"tx":
            return None
        return int(prod), int(n), int(i), int(k), intent.decode()
    except ValueError:
        return None


def check(txns, committed, uncommitted):
    """The counts of the module's docstring, plus examples of each."""
    r = Counter()
    ex = defaultdict(list)

    def bad(kind, what, n=1):
        r[kind] += n
        if len(ex[kind]) < 5:
            ex[kind].append(what)

    at = {}   # (partition, offset) -> value, read_uncommitted
    seen_log = Counter()
    for part, msgs in uncommitted.items():
        for off, v in msgs:
            at[(part, off)] = v
            seen_log[v] += 1
    visible = defaultdict(set)    # txn key -> indexes visible (read_committed)
    seen = Counter()
    for part, msgs in committed.items():
        last_off = -1
        last_txn = {}
        for off, v in msgs:
            r["read_committed"] += 1
            seen[v] += 1
            if off <= last_off:
                bad("non_monotonic", "p%d: %d after %d" % (part, off, last_off))
            last_off = off
            if at.get((part, off), v) != v:
                bad("offset_mismatch", "p%d@%d" % (part, off))
            f = parse(v)
            t = f and txns.get((f[0], f[1]))
            if not t:
                bad("strangers", v.decode(errors="replace"))
                continue
            prod, n, i, k, intent = f
            if t.parts.get(i) != part:
                bad("misplaced", v.decode())
            if n < last_txn.get(prod, 0):
                bad("reordered", "p%d@%d: txn %d after %d" % (part, off, n, last_txn[prod]))
            last_txn[prod] = max(n, last_txn.get(prod, 0))
            visible[(prod, n)].add(i)
    r["duplicated"] += sum(1 for v, c in seen.items() if c > 1)
    for v, c in seen.items():
        if c > 1 and len(ex["duplicated"]) < 5:
            ex["duplicated"].append(v.decode(errors="replace"))
    log_dups = [v for v, c in seen_log.items() if c > 1]
    r["duplicated_in_log"] = len(log_dups)
    ex["duplicated_in_log"] = [v.decode(errors="replace") for v in log_dups[:5]]
    r["read_uncommitted"] = sum(seen_log.values())
    for key, t in txns.items():
        r["txns_" + t.outcome] += 1
        r["records_" + t.outcome] += t.n
        vis = visible.get(key, set())
        name = "p%d/txn%d (%s, %d records, %s%s)" % (key[0], key[1], t.intent, t.n, t.outcome,
                                                    ", " + t.error if t.error else "")
        if t.outcome == "unknown" and vis:
            r["unknown_resolved_committed"] += 1
        if t.outcome == "committed":
            missing = t.n - len(vis)
            if missing:
                bad("lost", name + ": %d missing" % missing, missing)
                r["lost_txns"] += 1
            for i in range(t.n):
                v = b"tx|%d|%d|%d|%d|%s" % (key[0], key[1], i, t.n, t.intent.encode())
                if not seen_log[v]:
                    bad("lost_uncommitted", v.decode())
        elif t.outcome in ("aborted", "open") and vis:
            bad("aborted_visible", name + ": %d visible" % len(vis), len(vis))
            if t.commit_attempted:
                r["aborted_visible_after_commit_attempt"] += len(vis)
        if t.intent == "A" and vis and t.outcome != "aborted":
            bad("aborted_visible", name + ": meant to abort, %d visible" % len(vis), len(vis))
        if t.outcome in ("committed", "unknown") and 0 < len(vis) < t.n:
            bad("partial_txns", name + ": %d of %d visible" % (len(vis), t.n))
    for kind in ("lost", "lost_uncommitted", "aborted_visible", "partial_txns", "duplicated",
                 "duplicated_in_log", "misplaced", "non_monotonic", "reordered",
                 "offset_mismatch", "strangers", "txns_open", "txns_unknown",
                 "unknown_resolved_committed"):
        r.setdefault(kind, 0)
    return dict(r), {k: v for k, v in ex.items() if v}


MIN_COMMITTED_WAIT_S = 120

FAILURES = ("lost", "lost_uncommitted", "aborted_visible", "partial_txns", "duplicated",
            "duplicated_in_log", "misplaced", "non_monotonic", "reordered", "offset_mismatch",
            "strangers", "txns_open")


def run(cycles, partitions, faults, seed, work, log=print, cluster=3, producers=4,
        keep_logs=None, tail_s=2, ctp=True, min_committed=0, meta="etcd"):
    """tail_s: seconds of load after the last cycle (with cycles=0, a run
    with no nemesis); the load goes on past them until min_committed
    transactions have committed (at most MIN_COMMITTED_WAIT_S more), so a
    count-based check does not depend on the machine's speed. keep_logs: where to copy the brokers' logs when the check fails.
    ctp: run the consume-transform-produce loop too."""
    rnd = random.Random(seed)
    etcd = chaos.metadata_store(meta, work) if cluster else None  # meta: chaos.py --meta
    try:
        return _run(cycles, partitions, faults, rnd, seed, work, log, cluster, etcd, producers,
                    keep_logs, tail_s, ctp, min_committed)
    finally:
        if etcd:
            etcd.stop()


def _run(cycles, partitions, faults, rnd, seed, work, log, cluster, etcd, producers, keep_logs,
         tail_s, ctp, min_committed):
    started = time.monotonic()
    nodes = chaos.start_nodes(work, faults, cluster, etcd, extra_args=[
        "--transaction.abort.timed.out.transaction.cleanup.interval.ms=1000"])
    try:
        return _load_and_check(cycles, partitions, faults, rnd, seed, work, log, cluster, etcd,
                               producers, keep_logs, tail_s, ctp, min_committed, started, nodes)
    except BaseException:
        for b in nodes:   # a harness error must not leave brokers running
            if b.alive():
                b.kill9()
            if getattr(b, "etcd_proxy", None):
                b.etcd_proxy.stop()
        raise


def _load_and_check(cycles, partitions, faults, rnd, seed, work, log, cluster, etcd, producers,
                    keep_logs, tail_s, ctp, min_committed, started, nodes):
    bootstrap = ",".join(b.bootstrap for b in nodes)
    topic = "chaos-txn-%d" % seed
    create_topic(bootstrap, topic, partitions=partitions)
    ctp_topics = ("chaos-ctp-in-%d" % seed, "chaos-ctp-out-%d" % seed)
    stop = threading.Event()
    workers = [Worker(i, bootstrap, topic, partitions, seed, stop) for i in range(producers)]
    transformer = feeder = None
    loop = []   # the consume-transform-produce loop's threads
    if ctp:
        for t in ctp_topics:
            create_topic(bootstrap, t, partitions=partitions)
        ctp_fill(bootstrap, ctp_topics[0], partitions)
        transformer = Transformer(bootstrap, ctp_topics, seed, stop)
        feeder = Feeder(bootstrap, ctp_topics[0], partitions, stop)
        loop = [transformer, feeder]
    for w in workers + loop:
        w.start()
    nemesis = chaos.Nemesis(nodes, etcd, rnd, cluster)

    def progress():
        c = Counter(t.outcome for w in workers for t in list(w.txns.values()))
        out = ", ".join("%s %d" % kv for kv in sorted(c.items()))
        if transformer:
            out += "; ctp %s" % ", ".join("%s %d" % kv for kv in sorted(transformer.outcomes.items()))
        return out

    for cycle in range(cycles):
        time.sleep(rnd.uniform(1.0, 3.0))
        kind = nemesis.strike(cycle)
        log("cycle %d/%d (%s): %s" % (cycle + 1, cycles, kind, progress()))
    time.sleep(tail_s)
    deadline = time.monotonic() + MIN_COMMITTED_WAIT_S
    while (time.monotonic() < deadline and
           sum(t.outcome == "committed" for w in workers for t in list(w.txns.values()))
           < min_committed):
        time.sleep(0.2)
    stop.set()
    for w in workers + loop:
        w.join(3 * END_TIMEOUT_S)
    tids = workers + loop[:1]
    hung = [w.tid for w in tids if w.is_alive()]
    load_s = time.monotonic() - started
    # Fence every transactional id: what is left open is aborted, what was
    # decided is finished, before the LSO can reach the end of every log.
    unfenced = [w.tid for w in tids
                if init_producer(bootstrap, w.tid, time.monotonic() + 120) is None]
    txns = {}
    for w in workers:
        txns.update(w.txns)
    if faults:
        for b in nodes:
            b.allow_errors(r".")
    committed = read_to_end(bootstrap, topic, partitions, "read_committed")
    uncommitted = read_to_end(bootstrap, topic, partitions, "read_uncommitted")
    counts, examples = check(txns, committed, uncommitted)
    ctp_report = {"ctp": ctp}
    if ctp:
        ctp_counts, ctp_examples = ctp_check(
            read_to_end(bootstrap, ctp_topics[1], partitions, "read_committed"),
            ctp_committed(bootstrap, ctp_topics[0], partitions, transformer.group))
        examples.update(ctp_examples)
        ctp_report.update(ctp_counts)
        ctp_report.update({
            "ctp_txns": dict(transformer.outcomes), "ctp_instances": transformer.instances,
            "ctp_fed": feeder.sent, "ctp_feed_failed": feeder.failed,
            "ctp_feed_producers": feeder.producers, "ctp_crashed": transformer.crashed,
            "ctp_client_errors": dict(transformer.errors.most_common(8))})
    rcs = [b.stop() for b in nodes]
    for b in nodes:
        if getattr(b, "etcd_proxy", None):
            b.etcd_proxy.stop()
    rc = next((r for r in rcs if r not in (0, None)), rcs[0])
    exits = {b.name: b.exit_codes for b in nodes}
    problems = [l for b in nodes for l in b.problems()][:10] if rc not in (0, None) else []
    errors = Counter()
    for w in workers:
        errors.update(w.errors)
    report = {"mode": "txn", "broker_exit": rc, "brokers": len(nodes), "cycles": cycles,
              "partitions": partitions, "producers": producers, "faults": faults, "seed": seed,
              "kills": nemesis.kills, "pauses": nemesis.pauses,
              "etcd_partitions": nemesis.partitions_cut, "etcd_pauses": nemesis.etcd_pauses,
              "load_seconds": round(load_s, 1), "seconds": round(time.monotonic() - started, 1),
              "producer_instances": sum(w.instances for w in workers),
              "hung_producers": hung, "unfenced": unfenced, "exit_codes": exits,
              "broker_problems": problems,
              "client_errors": dict(errors.most_common(12)),
              **ctp_report, **counts, "examples": examples}
    if keep_logs and (not passed(report) or os.environ.get("CHAOS_KEEP_LOGS")):
        shutil.rmtree(keep_logs, ignore_errors=True)
        shutil.copytree(os.path.join(work, "logs"), keep_logs)
        report["logs"] = keep_logs
    return report


def passed(r):
    ok = (r["broker_exit"] in (0, None) and not r["hung_producers"] and not r["unfenced"]
          and r["txns_committed"] > 0 and all(r[k] == 0 for k in FAILURES))
    if r["ctp"]:
        ok = (ok and all(r[k] == 0 for k in CTP_FAILURES) and r["ctp_output"] > 0
              and not r["ctp_crashed"])
    return ok
