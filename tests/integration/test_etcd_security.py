"""The metadata store on an etcd that asks for TLS, client certificates and
authentication (etcd's own --client-cert-auth and auth enable): the broker
speaks https with the CA it is given, presents its client certificate,
authenticates as a user whose role covers only its prefix, and serves; a
wrong password, a missing CA or an unknown URL parameter stop it at start
with an error naming the cause and never the password."""
import base64
import json
import os
import shutil
import socket
import ssl
import subprocess
import time
import urllib.request

import pytest

from kafka_util import consume, create_topic, produce_all, producer, unique_topic
import lsbroker

pytestmark = [pytest.mark.store_agnostic,  # the S3 stage leaves it out (pytest.ini)
              pytest.mark.skipif(shutil.which("etcd") is None, reason="etcd not installed")]

PASSWORD = "s3cret-etcd-pw"


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _certs(d):
    """A CA, a server certificate for 127.0.0.1 and a client certificate.
    The client's has no CommonName: with auth on, etcd 3.4's JSON gateway
    refuses a certificate that has one ("CommonName of client sending a
    request against gateway will be ignored"), docs/OPERATIONS.md."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test-ca",
             "-keyout", "ca.key", "-out", "ca.pem", cwd=d)
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
                      ("client", "extendedKeyUsage=clientAuth")):
        subj = "/CN=server" if name == "server" else "/O=lakestream-broker"
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subj,
                 "-keyout", name + ".key", "-out", name + ".csr", cwd=d)
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write(ext + "\n")
        _openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-extfile", name + ".ext",
                 "-out", name + ".pem", cwd=d)


def _b64(s):
    return base64.b64encode(s.encode()).decode()


class SecureEtcd:
    def __init__(self, d):
        self.dir = d
        _certs(d)
        self.port, peer = _free_port(), _free_port()
        self.log = open(os.path.join(d, "etcd.log"), "w")
        self.proc = subprocess.Popen(
            ["etcd", "--name", "sec", "--data-dir", os.path.join(d, "data"),
             "--listen-client-urls", "https://127.0.0.1:%d" % self.port,
             "--advertise-client-urls", "https://127.0.0.1:%d" % self.port,
             "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
             "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
             "--initial-cluster", "sec=http://127.0.0.1:%d" % peer,
             "--cert-file", os.path.join(d, "server.pem"),
             "--key-file", os.path.join(d, "server.key"),
             "--trusted-ca-file", os.path.join(d, "ca.pem"), "--client-cert-auth",
             "--heartbeat-interval", "10", "--election-timeout", "100"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.pem"))
        self.ctx.load_cert_chain(os.path.join(d, "client.pem"), os.path.join(d, "client.key"))
        deadline = time.monotonic() + 30
        while True:
            try:
                self.call("/v3/kv/range", {"key": "AA=="})
                break
            except Exception:
                assert time.monotonic() < deadline, "secure etcd did not start"
                time.sleep(0.2)
        # etcd auth: root (required to enable it) and a user for our prefix
        for user, pw in (("root", "root-pw"), ("lakestream", PASSWORD)):
            self.call("/v3/auth/user/add", {"name": user, "password": pw})
        self.call("/v3/auth/role/add", {"name": "root"})
        self.call("/v3/auth/user/grant", {"user": "root", "role": "root"})
        self.call("/v3/auth/role/add", {"name": "ls"})
        self.call("/v3/auth/role/grant", {"name": "ls", "perm": {
            "permType": "READWRITE", "key": _b64("sec/"), "range_end": _b64("sec0")}})
        self.call("/v3/auth/user/grant", {"user": "lakestream", "role": "ls"})
        self.call("/v3/auth/enable", {})
        self.pwfile = os.path.join(d, "password")
        with open(self.pwfile, "w") as f:
            f.write(PASSWORD + "\n")

    def call(self, path, body, token=None):
        req = urllib.request.Request("https://127.0.0.1:%d%s" % (self.port, path),
                                     data=json.dumps(body).encode(), method="POST")
        if token:
            req.add_header("Authorization", token)
        with urllib.request.urlopen(req, context=self.ctx, timeout=10) as r:
            return json.loads(r.read())

    def url(self, **params):
        q = {"cacert": os.path.join(self.dir, "ca.pem"),
             "cert": os.path.join(self.dir, "client.pem"),
             "key": os.path.join(self.dir, "client.key"),
             "user": "lakestream", "password-file": self.pwfile}
        q.update(params)
        return "etcd://127.0.0.1:%d/sec?%s" % (
            self.port, "&".join("%s=%s" % kv for kv in q.items() if kv[1] is not None))

    def stop(self):
        self.proc.terminate()
        self.proc.wait(20)
        self.log.close()


@pytest.fixture
def secure_etcd_dir(tmp_path):
    d = tmp_path / "etcd"
    d.mkdir()
    return str(d)


def test_broker_on_etcd_with_tls_client_certs_and_auth(broker_factory, tmp_path, secure_etcd_dir):
    e = SecureEtcd(secure_etcd_dir)
    try:
        store = "file://" + str(tmp_path / "objects")
        b = broker_factory("--metadata.url=" + e.url(), "--object.store.url=" + store,
                           "--diag.level=debug")
        topic = create_topic(b.bootstrap, unique_topic("etcdsec"), partitions=2)
        dl = produce_all(producer(b.bootstrap), topic,
                         [{"value": b"v%d" % i, "partition": i % 2} for i in range(100)])
        assert len(dl.acked) == 100
        # the metadata is in etcd under the prefix, readable only with a token
        tok = e.call("/v3/auth/authenticate", {"name": "lakestream", "password": PASSWORD})["token"]
        r = e.call("/v3/kv/range", {"key": _b64("sec/"), "range_end": _b64("sec0"),
                                    "count_only": True}, token=tok)
        assert int(r.get("count", 0)) > 0
        # etcd's tokens are forgotten when it restarts: the broker takes a new one
        e.proc.terminate()
        e.proc.wait(20)
        e.log.close()
        _restart(e)
        # the running broker's token died with etcd: its next calls take a new one
        dl = produce_all(producer(b.bootstrap), topic,
                         [{"value": b"v%d" % i, "partition": i % 2} for i in range(100, 200)])
        assert len(dl.acked) == 100
        assert "invalid auth token" in b.log_text()  # refused once, then authenticated again
        b.restart()
        got = consume(b.bootstrap, topic, [0, 1], timeout=60)
        assert sorted(m.value() for p in got for m in got[p]) == sorted(b"v%d" % i for i in range(200))
        assert PASSWORD not in b.log_text()
    finally:
        e.stop()


def _restart(e):
    peer = _free_port()
    e.log = open(os.path.join(e.dir, "etcd.log"), "a")
    e.proc = subprocess.Popen(
        ["etcd", "--name", "sec", "--data-dir", os.path.join(e.dir, "data"),
         "--listen-client-urls", "https://127.0.0.1:%d" % e.port,
         "--advertise-client-urls", "https://127.0.0.1:%d" % e.port,
         "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
         "--cert-file", os.path.join(e.dir, "server.pem"),
         "--key-file", os.path.join(e.dir, "server.key"),
         "--trusted-ca-file", os.path.join(e.dir, "ca.pem"), "--client-cert-auth",
         "--heartbeat-interval", "10", "--election-timeout", "100"],
        stdout=e.log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while True:
        try:
            e.call("/v3/auth/authenticate", {"name": "lakestream", "password": PASSWORD})
            return
        except Exception:
            assert time.monotonic() < deadline, "secure etcd did not restart"
            time.sleep(0.2)


def _start_fails(tmp_path, url, name):
    b = lsbroker.Broker(str(tmp_path / name), extra_args=["--metadata.url=" + url])
    with pytest.raises(lsbroker.BrokerError):
        b.start()
    b.stop()
    # what the broker wrote (the harness's first line is the command line)
    return "".join(line for line in open(b.log_paths[-1]) if not line.startswith("# "))


def test_wrong_password_missing_ca_and_unknown_parameters_stop_the_start(tmp_path,
                                                                          secure_etcd_dir):
    e = SecureEtcd(secure_etcd_dir)
    try:
        bad = tmp_path / "bad-password"
        bad.write_text("not-the-password\n")
        log = _start_fails(tmp_path, e.url(**{"password-file": str(bad)}), "wrongpw")
        assert "authenticating as 'lakestream' failed" in log, log[-2000:]
        assert "not-the-password" not in log and PASSWORD not in log
        log = _start_fails(tmp_path, e.url(cacert=None), "noca")  # the system CAs do not know it
        assert "certificate" in log.lower(), log[-2000:]
        log = _start_fails(tmp_path, e.url(password=PASSWORD), "pwinurl")
        assert "password-file" in log and PASSWORD not in log, log[-2000:]
        log = _start_fails(tmp_path, e.url(tsl="true"), "typo")
        assert "unknown or empty parameter 'tsl'" in log, log[-2000:]
        log = _start_fails(tmp_path, e.url(tls="false"), "tlsoff")  # with cacert/cert/key
        assert "tls=false with cacert/cert/key" in log, log[-2000:]
    finally:
        e.stop()
