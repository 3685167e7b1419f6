"""SASL on Kafka listeners (SASL_PLAINTEXT): PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512 with real clients at their defaults, the gate before
authentication, failures that end at once with Kafka's errors, users managed
by `lakestream users`, AlterUserScramCredentials / DescribeUserScramCredentials
and Kafka's own kafka-configs, re-authentication (connections.max.reauth.ms),
and users shared by the brokers of a cluster.
"""

import os
import socket
import struct
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialDeletion, UserScramCredentialUpsertion)

import lsbroker

MECHS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"


class SaslBroker:
    """A broker whose only listener is SASL_PLAINTEXT."""

    def __init__(self, tmp_path, request, *args, name="sasl", meta_url=None, objects=None):
        port, http, reg = lsbroker.free_ports(3)
        self.b = lsbroker.Broker(str(tmp_path / ("data-" + name)), str(tmp_path / "logs"), [],
                                 name=name)
        self.store_args = []
        if meta_url:
            self.store_args += ["--metadata.url=" + meta_url]
        if objects:
            self.store_args += ["--object.store.url=" + objects]
        self.b.extra_args += ["--listeners=SASL_PLAINTEXT://127.0.0.1:%d" % port] + \
            self.store_args + list(args)
        self.b.port, self.b.http_port, self.b.registry_port = port, http, reg
        # failed logins are warnings, not errors; nothing else is allowed
        made = getattr(request.node, "_ls_brokers", [])
        made.append(self.b)
        request.node._ls_brokers = made
        self.b.start()

    @property
    def bootstrap(self):
        return self.b.bootstrap

    def users(self, *args, password=None):
        """Runs `lakestream users ARGS` on this broker's metadata store."""
        p = subprocess.run([self.b.binary, "users"] + list(args) +
                           ["--data.dir=" + self.b.data_dir] + self.store_args,
                           input=(password + "\n").encode() if password is not None else b"",
                           capture_output=True, timeout=60)
        return p.returncode, (p.stdout + p.stderr).decode(errors="replace")

    def add_user(self, name, password, *mechs):
        args = ["add", name]
        for m in mechs:
            args += ["--mechanism", m]
        rc, out = self.users(*args, password=password)
        assert rc == 0, out


@pytest.fixture
def sasl_broker(tmp_path, request):
    made = []

    def start(*args, **kw):
        sb = SaslBroker(tmp_path, request, *args, **kw)
        made.append(sb)
        return sb
    yield start
    problems = []
    for sb in made:
        problems += sb.b.final_check() or []
    assert not problems, problems


def client_conf(sb, mech, user, password, **extra):
    conf = {"bootstrap.servers": sb.bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mech, "sasl.username": user, "sasl.password": password}
    conf.update(extra)
    return conf


def produce_consume(conf, n=20):
    topic = "t-" + uuid.uuid4().hex[:8]
    p = Producer(conf)
    for i in range(n):
        p.produce(topic, value=b"v%d" % i)
    assert p.flush(30) == 0
    c = Consumer(dict(conf, **{"group.id": "g-" + topic, "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    assert got == [b"v%d" % i for i in range(n)]


# ------------------------------------------------------------- the clients

@pytest.mark.parametrize("mech", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_each_mechanism_produces_and_consumes(sasl_broker, mech):
    sb = sasl_broker("--sasl.enabled.mechanisms=" + MECHS)
    sb.add_user("alice", "alice-secret")
    produce_consume(client_conf(sb, mech, "alice", "alice-secret"))


def test_default_mechanisms_are_scram(sasl_broker):
    """sasl.enabled.mechanisms unset: SCRAM-SHA-256 and -512, not PLAIN."""
    sb = sasl_broker()
    sb.add_user("alice", "pw")
    produce_consume(client_conf(sb, "SCRAM-SHA-512", "alice", "pw"), n=3)
    err = auth_error(client_conf(sb, "PLAIN", "alice", "pw"))
    assert "Unsupported SASL mechanism" in err.str(), err.str()
    assert "SCRAM-SHA-256,SCRAM-SHA-512" in err.str(), err.str()


def auth_error(conf):
    """The error a client reports on connecting (it must come: no hang)."""
    errs = []
    p = Producer(dict(conf, error_cb=errs.append))
    deadline = time.monotonic() + 30
    while not errs and time.monotonic() < deadline:
        p.poll(0.1)  # serves error_cb
    assert errs, "no error reported"
    return errs[0]


@pytest.mark.parametrize("mech", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_wrong_password_fails_with_authentication_error(sasl_broker, mech):
    sb = sasl_broker("--sasl.enabled.mechanisms=" + MECHS)
    right, wrong = "R1ght-pw-7c3", "Wr0ng-pw-9d1"
    sb.add_user("alice", right)
    for user, pw in (("alice", wrong), ("nobody", right)):
        err = auth_error(client_conf(sb, mech, user, pw))
        assert err.code() == KafkaError._AUTHENTICATION, err
        assert "Authentication failed" in err.str(), err.str()
        assert wrong not in err.str() and right not in err.str()
    # the broker logged the failure as a warning, never the password
    log = sb.b.log_text()
    assert "failed authentication from" in log
    assert right not in log and wrong not in log
