"""The soak's Kafka Streams application on a streams group (KIP-1071).

Two instances of tests/integration/java/apps/WordCountApp.java (Kafka
Streams 4.3.1, group.protocol=streams, exactly_once_v2, two stream threads
each) count the words of sentences a feeder produces all along; the second
instance is killed with -9 and restarted every CHURN_S seconds, so the
broker's streams-group coordinator moves tasks back and forth dozens of times
(thousands of heartbeats, each change stored) while transactions are open.
At the end, once the feeder stopped, a read_committed reader of the output
must see every word's counts 1..total exactly once each: nothing lost,
nothing counted twice, through every rebalance and kill.
"""

import collections
import os
import random
import signal
import struct
import subprocess
import tempfile
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

HERE = os.path.dirname(os.path.abspath(__file__))
APPS_LIB = os.path.join(HERE, "..", "..", ".cache", "java", "apps", "*")
APP_SRC = os.path.join(HERE, "..", "integration", "java", "apps", "WordCountApp.java")
CHURN_S = 20
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]


class StreamsSoak:
    def __init__(self, bootstrap, input_topic, output_topic, partitions, rate=20):
        self.bootstrap = bootstrap
        self.input, self.output, self.partitions = input_topic, output_topic, partitions
        self.rate = rate
        self.app_id = "soak-streams"
        self.work = tempfile.mkdtemp(prefix="soak-streams-")
        self.classes = os.path.join(self.work, "classes")
        subprocess.run(["javac", "-nowarn", "-cp", APPS_LIB, "-d", self.classes, APP_SRC],
                       check=True, capture_output=True, timeout=300)
        self.procs = [None, None]
        self.starts = [0, 0]
        self.lines = []          # acknowledged sentences
        self.errors = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._feed), threading.Thread(target=self._churn)]

    def _argv(self, i):
        return ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp", self.classes + os.pathsep + APPS_LIB, "WordCountApp", self.bootstrap,
                self.app_id, self.input, self.output, os.path.join(self.work, "state-%d" % i),
                "600000", "exactly_once_v2", "streams", "2"]

    def _start(self, i):
        self.starts[i] += 1
        # to a file, not a pipe (a full pipe would stall the JVM)
        log = open(os.path.join(self.work, "instance-%d.%d.log" % (i, self.starts[i])), "wb")
        self.procs[i] = subprocess.Popen(self._argv(i), stdin=subprocess.PIPE, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def start(self):
        self._start(0)
        self._start(1)
        for t in self.threads:
            t.start()

    def _feed(self):
        rng = random.Random(5)
        p = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True})

        def cb(err, msg):
            if err is not None:
                self.errors.append("produce: %s" % err)
            else:
                self.lines.append(msg.value().decode())
        while not self.stop.is_set():
            line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))
            p.produce(self.input, value=line.encode(), on_delivery=cb)
            p.poll(0)
            time.sleep(1.0 / self.rate)
        p.flush(60)

    def _churn(self):
        while not self.stop.wait(CHURN_S):
            os.killpg(self.procs[1].pid, signal.SIGKILL)
            self.procs[1].wait()
            self._start(1)

    def finish(self, timeout=180):
        """Stops feeding and churning, waits for the counts, stops the apps;
        returns the checks."""
        self.stop.set()
        for t in self.threads:
            t.join()
        want = collections.Counter(w for line in self.lines for w in line.split())
        seen = collections.defaultdict(list)
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "soak-streams-check",
                      "isolation.level": "read_committed", "enable.auto.commit": False})
        c.assign([TopicPartition(self.output, p, OFFSET_BEGINNING)
                  for p in range(self.partitions)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in c.consume(1000, timeout=0.5):
                if m.error() is None:
                    seen[m.key().decode()].append(struct.unpack(">q", m.value())[0])
                elif m.error().code() != KafkaError._PARTITION_EOF:
                    self.errors.append("consume: %s" % m.error())
            if {w: v[-1] for w, v in seen.items() if v} == dict(want):
                break
        c.close()
        alive = [p.poll() is None for p in self.procs]
        for p in self.procs:
            try:
                p.stdin.close()
                p.wait(60)
            except Exception:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        wrong = {w: (seen[w][-5:] if seen[w] else [], n) for w, n in want.items()
                 if seen[w] != list(range(1, n + 1))}
        checks = {"streams_sentences": len(self.lines), "streams_words": sum(want.values()),
                  "streams_restarts": self.starts[1] - 1,
                  "streams_instances_alive_at_end": alive,
                  "streams_words_wrong": dict(list(wrong.items())[:10]),
                  "streams_errors": self.errors[:5], "streams_logs": self.work}
        checks["streams_ok"] = (not wrong and not self.errors and all(alive)
                                and len(self.lines) > 0)
        return checks
