"""The object store over HTTPS: a TLS front (its certificate signed by a
throwaway CA) before the test's radosgw. With `s3.ca.file` naming that CA the
broker stores and serves as usual; without it the certificate check fails
and the broker says so, naming the endpoint; `s3.tls.verify=false` is the
operator's explicit way out. Runs in the S3 stage (LS_TEST_S3_URL, set by
tools/s3/radosgw.sh); skipped otherwise."""
import os
import socket
import ssl
import subprocess
import threading
import urllib.parse

import pytest

from kafka_util import consume, create_topic, produce_all, producer, unique_topic
import lsbroker

pytestmark = pytest.mark.skipif(not os.environ.get("LS_TEST_S3_URL"),
                                reason="needs radosgw (the S3 stage sets LS_TEST_S3_URL)")


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


class TlsFront:
    """Terminates TLS on a free port and relays bytes to host:port."""

    def __init__(self, d, target):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                 "-subj", "/CN=front-ca", "-keyout", "ca.key", "-out", "ca.pem", cwd=d)
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                 "-keyout", "front.key", "-out", "front.csr", cwd=d)
        with open(os.path.join(d, "front.ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n")
        _openssl("x509", "-req", "-in", "front.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-extfile", "front.ext", "-out", "front.pem",
                 cwd=d)
        self.ca = os.path.join(d, "ca.pem")
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(os.path.join(d, "front.pem"), os.path.join(d, "front.key"))
        self.target = target
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            tc = self.ctx.wrap_socket(c, server_side=True)
        except (ssl.SSLError, OSError):
            c.close()  # e.g. the broker refused our certificate
            return
        up = socket.create_connection(self.target)

        def pump(a, b):
            try:
                while True:
                    data = a.recv(65536)
                    if not data:
                        break
                    b.sendall(data)
            except OSError:
                pass
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        threading.Thread(target=pump, args=(up, tc), daemon=True).start()
        pump(tc, up)

    def close(self):
        self.closed = True
        self.sock.close()


@pytest.fixture
def front(tmp_path):
    ep = urllib.parse.urlparse(os.environ["LS_TEST_S3_ENDPOINT"])
    d = tmp_path / "front"
    d.mkdir()
    f = TlsFront(str(d), (ep.hostname, ep.port))
    yield f
    f.close()


def _https_store_url(front, name):
    """A fresh prefix of the test bucket, reached through the TLS front."""
    loc, _, query = os.environ["LS_TEST_S3_URL"].partition("?")
    q = [kv for kv in query.split("&") if kv and not kv.startswith("endpoint=")]
    q.append("endpoint=https://127.0.0.1:%d" % front.port)
    return "%s/%s?%s" % (loc.rstrip("/"), name, "&".join(q))


def test_s3_over_https_with_the_ca_file(broker_factory, front):
    url = _https_store_url(front, "tls-" + os.urandom(4).hex())
    b = broker_factory("--object.store.url=" + url, "--s3.ca.file=" + front.ca,
                       "--wal.flush.min.interval.ms=0")
    topic = create_topic(b.bootstrap, unique_topic("s3tls"), partitions=2)
    dl = produce_all(producer(b.bootstrap), topic,
                     [{"value": b"v%d" % i, "partition": i % 2} for i in range(200)])
    assert len(dl.acked) == 200
    b.restart()
    got = consume(b.bootstrap, topic, [0, 1], timeout=60)
    assert sorted(m.value() for p in got for m in got[p]) == sorted(b"v%d" % i for i in range(200))


def test_s3_certificate_not_trusted_is_a_clear_error(tmp_path, front):
    url = _https_store_url(front, "tls-" + os.urandom(4).hex())
    b = lsbroker.Broker(str(tmp_path / "untrusted"),
                        extra_args=["--object.store.url=" + url, "--wal.flush.min.interval.ms=0"])
    try:
        b.start()
        started = True
    except lsbroker.BrokerError:
        started = False
    if started:  # the store is first used by the first produce: it fails, retriably
        topic = create_topic(b.bootstrap, unique_topic("s3untrusted"))
        results = []
        p = producer(b.bootstrap, **{"message.timeout.ms": 5000})
        p.produce(topic, b"x", partition=0, on_delivery=lambda err, msg: results.append(err))
        p.flush(30)
        assert results and results[0] is not None, "acknowledged without a trusted store"
        b.allow_errors(r"certificate|SSL")
        b.stop()
    # what the broker wrote (the harness's first line is the command line)
    log = "".join(line for line in open(b.log_paths[-1]) if not line.startswith("# "))
    assert "at https://127.0.0.1:%d: SSL peer certificate" % front.port in log, log[-3000:]
    # a failed handshake is no answer about conditional PUTs: the store was
    # not downgraded to non-atomic create-only writes
    assert "ignores If-None-Match" not in log
