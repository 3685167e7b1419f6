#!/usr/bin/env python3
"""Crash-consistency checker with a nemesis loop.

Idempotent producers (acks=all) write records with unique ids while the
nemesis kill -9s and restarts the broker, optionally with fault-injecting
stores underneath (failed and lost-acknowledgement object PUTs and metadata
commits). Afterwards an independent consumer reads every partition and checks:

  lost        acknowledged records missing, or different, at their acked offset
  duplicated  records present more than once (acknowledged or not)
  reordered   records of one producer on one partition out of send order
  strangers   records never produced

  chaos.py --cycles N [--records R] [--partitions P] [--faults] [--cluster N] [--json OUT]

With --cluster N, N brokers share a throwaway etcd (--meta postgresql: a
throwaway PostgreSQL, whose pause stops the server and its backends) and one
object store, each
reaching etcd through its own TCP proxy; the nemesis takes turns per cycle:
kill -9 of a random broker (sometimes pausing etcd, SIGSTOP, while it is
down), a pause of one (SIGSTOP) longer than its session timeout, and a
network partition of one from etcd (its proxy stops forwarding for longer than
the session timeout, then resets its connections) while it keeps serving
clients. A committer thread meanwhile commits a
growing offset for a consumer group through the cluster and reads it back:

  commits_backwards  a read-back committed offset below the highest commit
                     already acknowledged (a stale coordinator answering)

With --txn (`make chaos TXN=1`) the load is transactional instead: several
transactional producers commit and abort random multi-partition transactions
under the same nemesis, and read_committed / read_uncommitted consumers check
that committed transactions are whole and aborted ones invisible (txn.py).

`make chaos CYCLES=N` runs it long; tests/integration/test_chaos.py runs a
short version inside `make test`. Exit status 1 on any loss, duplicate,
reordering or stranger."""

import argparse
import json
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

import lsbroker  # noqa: E402
from kafka_util import consume, create_topic  # noqa: E402

# object store: some PUTs fail, some succeed but report failure
FAULTY_STORE = "?put_error_rate=0.03&lost_ack_rate=0.02&ops=put"
# metadata: some commits fail, some are applied but report failure
FAULTY_META = "?txn_error_rate=0.02&lost_ack_rate=0.02"


class Etcd:
    """A throwaway etcd (tools/etcd/etcd.sh) the nemesis can pause."""

    script = os.path.join(lsbroker.ROOT, "tools", "etcd", "etcd.sh")

    def __init__(self, work):
        self.dir = os.path.join(work, "etcd")
        subprocess.run([self.script, "start", self.dir], check=True, capture_output=True)
        env = dict(l.split("=", 1) for l in open(os.path.join(self.dir, "env")).read().split())
        self.endpoint = env["LS_TEST_ETCD_ENDPOINT"]
        self.pid = int(open(os.path.join(self.dir, "pid")).read())

    def pause(self, seconds):
        os.kill(self.pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            os.kill(self.pid, signal.SIGCONT)

    def stop(self):
        subprocess.run([self.script, "stop", self.dir], capture_output=True)

    @staticmethod
    def url(endpoint):
        """The metadata URL of a broker reaching the store at endpoint."""
        return "etcd://%s/chaos" % endpoint


class Postgres:
    """A throwaway PostgreSQL (tools/pg/pg.sh) the nemesis can pause, with
    Etcd's interface. Its directory is not under the run's (as root the
    server runs as "postgres", which cannot enter a 0700 directory of root)."""

    script = os.path.join(lsbroker.ROOT, "tools", "pg", "pg.sh")

    def __init__(self, work):
        self.dir = tempfile.mkdtemp(prefix="lakestream-chaos-pg-")
        subprocess.run([self.script, "start", self.dir], check=True, capture_output=True)
        env = dict(l.split("=", 1) for l in open(os.path.join(self.dir, "env")).read().split())
        self.endpoint = env["LS_TEST_PG_ENDPOINT"]
        self.user = env["LS_TEST_PG_USER"]

    def pause(self, seconds):
        subprocess.run([self.script, "pause", self.dir], check=True, capture_output=True)
        try:
            time.sleep(seconds)
        finally:
            subprocess.run([self.script, "resume", self.dir], capture_output=True)

    def stop(self):
        subprocess.run([self.script, "stop", self.dir], capture_output=True)

    def url(self, endpoint):
        return "postgresql://%s@%s/lakestream" % (self.user, endpoint)


def metadata_store(meta, work):
    """The cluster's throwaway metadata store: "etcd" or "postgresql"."""
    return Postgres(work) if meta == "postgresql" else Etcd(work)


class EtcdProxy:
    """A TCP proxy between one broker and etcd that the nemesis can cut: while
    partitioned nothing is forwarded either way (requests hang as behind a
    dropped link), and at the end every connection is reset, as a client's
    TCP timeout would; new connections then go through again."""

    def __init__(self, endpoint):
        host, port = endpoint.rsplit(":", 1)
        self.target = (host, int(port))
        self.srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(64)
        self.endpoint = "127.0.0.1:%d" % self.srv.getsockname()[1]
        self.cut = threading.Event()
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.socks = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping.is_set():
            try:
                a, _ = self.srv.accept()
            except OSError:
                return
            try:
                b = socket.create_connection(self.target, timeout=5)
            except OSError:
                a.close()
                continue
            with self.lock:
                self.socks += [a, b]
            threading.Thread(target=self._pump, args=(a, b), daemon=True).start()
            threading.Thread(target=self._pump, args=(b, a), daemon=True).start()

    def _pump(self, src, dst):
        try:
            while not self.stopping.is_set():
                if self.cut.is_set():
                    time.sleep(0.05)
                    continue
                r, _, _ = select.select([src], [], [], 0.1)
                if not r or self.cut.is_set():
                    continue
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except (OSError, ValueError):   # the other pump or a partition closed it
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass

    def partition(self, seconds):
        self.cut.set()
        try:
            time.sleep(seconds)
        finally:
            with self.lock:
                socks, self.socks = self.socks, []
            for s in socks:
                try:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    s.close()
                except OSError:
                    pass
            self.cut.clear()

    def stop(self):
        self.stopping.set()
        self.srv.close()


def start_nodes(work, faults, cluster, etcd, extra_args=()):
    """One broker, or a cluster of `cluster` brokers over etcd and one shared
    file store. Returns the brokers (started)."""
    data = os.path.join(work, "data")
    args = ["--wal.gc.grace.ms=2000"] + list(extra_args)
    objects, meta = os.path.join(data, "objects"), "sqlite://" + os.path.join(data, "meta.db")
    if cluster:
        args += ["--broker.session.timeout.ms=2000", "--http.listen="]
    os.makedirs(data, exist_ok=True)
    store_url, meta_url = "file://" + objects, meta
    if faults:
        store_url = "faulty+" + store_url + FAULTY_STORE
        meta_url = "faulty+" + meta_url + FAULTY_META
    if faults or cluster:
        args += ["--object.store.url=" + store_url]
    if not cluster:
        args += ["--metadata.url=" + meta_url]
    nodes = []
    for i in range(max(cluster, 1)):
        node_args = list(args)
        if cluster:
            proxy = EtcdProxy(etcd.endpoint)   # each broker reaches etcd through its own
            node_meta = etcd.url(proxy.endpoint)
            if faults:
                node_meta = "faulty+" + node_meta + FAULTY_META
            node_args += ["--broker.id=%d" % (i + 1), "--metadata.url=" + node_meta]
        name = "node%d" % (i + 1) if cluster else "chaos"
        b = lsbroker.Broker(os.path.join(work, name) if cluster else data,
                            os.path.join(work, "logs"), node_args, name=name)
        if faults:
            # injected faults are logged as errors by design
            b.allow_errors(r"injected|failed|commit|PUT|corrupt|reading")
        if cluster:
            # brokers and etcd dying are logged by the survivors
            b.allow_errors(r"etcd|postgresql|lease|watch|unreachable|metadata|reading|GET|"
                           r"timed out|connection")
        if cluster:
            b.etcd_proxy = proxy
        b.start()
        nodes.append(b)
    return nodes


class Nemesis:
    """Once per cycle: with one broker, kill -9 and restart it; on a cluster,
    in turn a kill -9 of a random broker (etcd paused meanwhile half the
    time), a pause (SIGSTOP) past its session, or a cut from etcd past its
    session while it keeps serving clients."""

    def __init__(self, nodes, etcd, rnd, cluster):
        self.nodes, self.etcd, self.rnd, self.cluster = nodes, etcd, rnd, cluster
        self.kills = self.pauses = self.partitions_cut = self.etcd_pauses = 0

    def strike(self, cycle):
        rnd = self.rnd
        victim = rnd.choice(self.nodes)
        kind = ("kill", "pause", "partition")[cycle % 3] if self.cluster else "kill"
        if kind == "pause":
            # a pause longer than the session: the others take over its groups
            # and partitions; it resumes believing nothing happened
            os.kill(victim.pid, signal.SIGSTOP)
            time.sleep(rnd.uniform(2.5, 4.0))
            os.kill(victim.pid, signal.SIGCONT)
            self.pauses += 1
            return kind
        if kind == "partition":
            # cut from etcd longer than the session while it keeps serving
            # clients: its lease expires and the others take over; it must
            # notice before it writes anything stale
            victim.etcd_proxy.partition(rnd.uniform(2.5, 4.0))
            self.partitions_cut += 1
            return kind
        victim.kill9()
        self.kills += 1
        if self.etcd and rnd.random() < 0.5:
            self.etcd.pause(rnd.uniform(0.2, 1.5))
            self.etcd_pauses += 1
        time.sleep(rnd.random() * 0.2)
        victim.start()
        return kind


def run(cycles, records, partitions, faults, seed, work, log=print, cluster=0, meta="etcd"):
    """cluster: 0 for one broker, else that many brokers over a throwaway etcd
    (meta "postgresql": PostgreSQL); the nemesis then kills a random broker
    per cycle and pauses the store."""
    rnd = random.Random(seed)
    etcd = metadata_store(meta, work) if cluster else None
    try:
        return _run(cycles, records, partitions, faults, rnd, seed, work, log, cluster, etcd)
    finally:
        if etcd:
            etcd.stop()


def _run(cycles, records, partitions, faults, rnd, seed, work, log, cluster, etcd):
    nodes = start_nodes(work, faults, cluster, etcd)
    bootstrap = ",".join(b.bootstrap for b in nodes)
    topic = "chaos-%d" % seed
    create_topic(bootstrap, topic, partitions=partitions)
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 2, "message.timeout.ms": 300000, "retry.backoff.ms": 50,
                  "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 500,
                  "socket.timeout.ms": 10000})
    acked, failed = {}, []

    def on_delivery(err, msg):
        if err is not None:
            failed.append((str(err), msg.value()))
        else:
            acked[msg.value()] = (msg.partition(), msg.offset())

    produced = 0

    nemesis = Nemesis(nodes, etcd, rnd, cluster)

    def crash(cycle):
        nemesis.strike(cycle)

    commit_stop = threading.Event()
    commit_stats = {"acknowledged": 0, "backwards": []}

    def committer():
        """Commits 1, 2, 3, ... for one group and partition through any broker;
        every read-back must be at least the highest acknowledged commit."""
        group = "chaos-commits-%d" % seed
        n = best = 0
        while not commit_stop.is_set():
            c = None
            try:
                c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "enable.auto.commit": False, "socket.timeout.ms": 5000})
                n += 1
                c.commit(offsets=[TopicPartition(topic, 0, n)], asynchronous=False)
                best = n
                commit_stats["acknowledged"] += 1
                got = c.committed([TopicPartition(topic, 0)], timeout=5)[0].offset
                if 0 <= got < best:
                    commit_stats["backwards"].append((best, got))
            except Exception:
                pass   # retriable while brokers die; an unacknowledged commit proves nothing
            finally:
                if c is not None:
                    c.close()
            commit_stop.wait(0.1)

    commit_thread = threading.Thread(target=committer) if cluster else None
    if commit_thread:
        commit_thread.start()

    for cycle in range(cycles):
        # crash once per cycle, after a random share of this cycle's records
        # were acknowledged, with more in flight
        kill_at = len(acked) + rnd.randint(records // 10, records * 3 // 4)
        target = produced + records
        killed = False
        while produced < target:
            for _ in range(min(100, target - produced)):
                value = b"rid=%09d" % produced
                while True:
                    try:
                        p.produce(topic, value=value, partition=produced % partitions,
                                  on_delivery=on_delivery)
                        break
                    except BufferError:
                        p.poll(0.01)
                produced += 1
            p.poll(0.005)
            if not killed and len(acked) >= kill_at:
                crash(cycle)
                killed = True
        if not killed:
            crash(cycle)
        p.flush(300)
        log("cycle %d/%d: produced %d, acked %d, failed %d" % (cycle + 1, cycles, produced,
                                                                len(acked), len(failed)))
    left = p.flush(300)
    if commit_thread:
        commit_stop.set()
        commit_thread.join()
    if faults:
        for b in nodes:
            b.allow_errors(r".")
    got = consume(bootstrap, topic, list(range(partitions)), timeout=300, ignore_transient=True)
    seen = {}
    reordered = 0
    for part, msgs in got.items():
        last_rid = -1
        for m in msgs:
            seen.setdefault(m.value(), []).append((part, m.offset()))
            rid = int(m.value()[4:])
            if rid < last_rid:
                reordered += 1
            last_rid = max(last_rid, rid)
    lost = [v for v, where in acked.items() if where not in seen.get(v, [])]
    dups = [v for v, where in seen.items() if len(where) > 1]
    strangers = [v for v in seen if not v.startswith(b"rid=") or int(v[4:]) >= produced]
    rcs = [b.stop() for b in nodes]
    for b in nodes:
        if getattr(b, "etcd_proxy", None):
            b.etcd_proxy.stop()
    rc = next((r for r in rcs if r not in (0, None)), rcs[0])
    report = {"broker_exit": rc, "brokers": len(nodes), "cycles": cycles, "produced": produced, "acknowledged": len(acked),
              "failed": len(failed), "unflushed": left, "read": sum(len(v) for v in got.values()),
              "lost": len(lost), "duplicated": len(dups), "reordered": reordered,
              "strangers": len(strangers), "faults": faults, "seed": seed,
              "pauses": nemesis.pauses, "etcd_partitions": nemesis.partitions_cut,
              "group_commits": commit_stats["acknowledged"],
              "commits_backwards": len(commit_stats["backwards"]),
              "examples": {"lost": [v.decode() for v in lost[:5]],
                           "duplicated": [v.decode() for v in dups[:5]]}}
    return report


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=5)
    ap.add_argument("--records", type=int, default=3000, help="records per cycle")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--faults", action="store_true", help="fault-injecting stores underneath")
    ap.add_argument("--cluster", type=int, default=0,
                    help="run N brokers over a throwaway etcd; per cycle kill, pause or cut "
                         "from etcd a random one (and sometimes pause etcd)")
    ap.add_argument("--meta", choices=("etcd", "postgresql"), default="etcd",
                    help="--cluster's metadata store")
    ap.add_argument("--txn", action="store_true",
                    help="transactional producers and the transaction checker (txn.py); "
                         "--cluster defaults to 3, --records is not used")
    ap.add_argument("--producers", type=int, default=4,
                    help="--txn: transactional producers (one transactional.id each)")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--json", help="write the report here")
    a = ap.parse_args(argv)
    if a.txn:
        return main_txn(a)
    with tempfile.TemporaryDirectory(prefix="lakestream-chaos-") as work:
        r = run(a.cycles, a.records, a.partitions, a.faults, a.seed, work, cluster=a.cluster,
                meta=a.meta)
    print(json.dumps(r, indent=2))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=2)
    ok = (r["broker_exit"] in (0, None) and r["lost"] == 0 and r["duplicated"] == 0
          and r["reordered"] == 0 and r["strangers"] == 0 and r["commits_backwards"] == 0)
    print("chaos: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


def main_txn(a):
    import txn
    with tempfile.TemporaryDirectory(prefix="lakestream-chaos-txn-") as work:
        r = txn.run(a.cycles, a.partitions, a.faults, a.seed, work,
                    cluster=a.cluster or 3, producers=a.producers, meta=a.meta,
                    keep_logs=os.path.join(lsbroker.ROOT, "build", "chaos-txn-logs"))
    print(json.dumps(r, indent=2))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=2)
    ok = txn.passed(r)
    print("chaos txn: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
