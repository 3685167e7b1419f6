"""Disk full on the local store: the data dir lives on a small tmpfs that
fills up mid-stream. Producers must get errors (never an acknowledgement for
data that was not stored), the broker must stay up and say why in its log,
and once space is freed producing resumes and every acknowledged record is
readable at its offset."""

import os
import subprocess

import pytest
from confluent_kafka import Producer

from kafka_util import DeliveryLog, consume, create_topic, unique_topic


@pytest.fixture
def small_fs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    if os.environ.get("LS_TEST_OBJECT_STORE", "file") not in ("", "file"):
        pytest.skip("exercises the local-directory store")
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("cannot mount tmpfs: %s" % r.stderr.strip())
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_disk_full_fails_produces_then_recovers(broker_factory, small_fs):
    b = broker_factory("--data.dir=%s" % (small_fs / "data"), "--wal.gc.grace.ms=1000")
    b.allow_errors(r"(?i)space|full|disk|commit|PUT|sqlite")
    topic = create_topic(b.bootstrap, unique_topic("full"), partitions=2)
    filler = small_fs / "filler"
    # leave ~3 MiB free
    st = os.statvfs(small_fs)
    free = st.f_bavail * st.f_frsize
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - 3 * 1024 * 1024))
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5,
                  "message.timeout.ms": 4000, "retries": 2, "retry.backoff.ms": 100})
    dl = DeliveryLog()
    value = os.urandom(1024)
    for i in range(8000):          # ~8 MiB: more than fits
        while True:
            try:
                p.produce(topic, value=b"%06d" % i + value, partition=i % 2, on_delivery=dl)
                break
            except BufferError:
                p.poll(0.05)
        if i % 200 == 0:
            p.poll(0.01)
    p.flush(60)
    assert dl.failed, "the store filled up but no produce failed"
    assert dl.acked, "nothing was stored before the disk filled"
    assert b.alive(), "broker died on a full disk"
    assert "no space" in b.log_text().lower() or "full" in b.log_text().lower()

    os.unlink(filler)              # operator frees space
    dl2 = DeliveryLog()
    for i in range(200):
        p.produce(topic, value=b"after-%d" % i, partition=i % 2, on_delivery=dl2)
    p.flush(60)
    assert not dl2.failed, "producing did not resume after space was freed: %r" % dl2.failed[:3]

    got = consume(b.bootstrap, topic, [0, 1], timeout=120)
    stored = {(part, m.offset()): m.value() for part, msgs in got.items() for m in msgs}
    for part, off, _k, v in dl.acked + dl2.acked:
        assert stored.get((part, off)) == v, "acknowledged record missing at %d/%d" % (part, off)
