"""Security end to end: a real trainscope-collector with mutual TLS on its gRPC
port, CURVE with a client list on its feed and snapshot ports and a read
token; real agents (trainscope-loadgen, TLS from TRAINSCOPE_TLS_* alone) and
the real CLI. Certificates come from `openssl`, CURVE keys from
trainscope-curve-keygen (libzmq's zmq_curve_keypair), all made here, under
the test's temporary folder.

Checks: a fully configured agent and CLI work end to end; on every port a
client without the right credentials is refused with an error that names
what is missing; a collector bound beyond loopback without encryption does
not start unless --insecure.

Run: /usr/bin/python3 -m pytest tests/python/test_security.py
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import ssl
import subprocess

import pytest

from conftest import BIN_DIR, CLI_BIN, COLLECTOR_BIN, EXPIRED_CERT_SCRIPT, Collector

LOADGEN_BIN = BIN_DIR / "trainscope-loadgen"
KEYGEN_BIN = BIN_DIR / "trainscope-curve-keygen"

# EC P-256: quick to generate on a loaded machine.
CERT_SCRIPT = r"""set -e
cd "$1"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() { key "$1.key"; openssl req -x509 -new -key "$1.key" -subj "/CN=$1" -days 2 -out "$1.pem"; }
leaf() {
  key "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$1" -out "$1.csr"
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
ca ca; ca other-ca
leaf server ca; leaf client ca; leaf stranger other-ca
""" + EXPIRED_CERT_SCRIPT


class Secrets:
    """Certificates, CURVE keys and the read token of one test."""

    def __init__(self, root: pathlib.Path):
        self.dir = root / "secrets"
        self.dir.mkdir()
        subprocess.run(["sh", "-c", CERT_SCRIPT, "make-certs", str(self.dir)], check=True,
                       capture_output=True, timeout=60)
        for name in ("collector", "viewer", "intruder"):
            subprocess.run([str(KEYGEN_BIN), str(self.dir / name)], check=True,
                           capture_output=True, timeout=30)
        viewer_public = (self.dir / "viewer.pub").read_text()
        (self.dir / "clients").write_text("# the viewers and CLIs allowed\n" + viewer_public)
        token = subprocess.run(["openssl", "rand", "-hex", "32"], check=True, capture_output=True,
                               text=True, timeout=30).stdout.strip()
        (self.dir / "read-token").write_text(token + "\n")

    def path(self, name: str) -> str:
        return str(self.dir / name)

    def collector_args(self) -> list[str]:
        return [f"--tls-cert={self.path('server.pem')}", f"--tls-key={self.path('server.key')}",
                f"--tls-client-ca={self.path('ca.pem')}",
                f"--curve-secret-key={self.path('collector.key')}",
                f"--curve-client-keys={self.path('clients')}",
                f"--read-token-file={self.path('read-token')}"]

    def agent_env(self) -> dict:
        return {"TRAINSCOPE_TLS_CA": self.path("ca.pem"),
                "TRAINSCOPE_TLS_CERT": self.path("client.pem"),
                "TRAINSCOPE_TLS_KEY": self.path("client.key")}

    def client_env(self) -> dict:
        return {**self.agent_env(), "TRAINSCOPE_READ_TOKEN_FILE": self.path("read-token"),
                "TRAINSCOPE_CURVE_SERVER_KEY": self.path("collector.pub"),
                "TRAINSCOPE_CURVE_KEY": self.path("viewer.key")}


def base_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINSCOPE_")}
    env.update(extra)
    return env


@pytest.fixture
def secure(tmp_path):
    for binary in (COLLECTOR_BIN, CLI_BIN, LOADGEN_BIN, KEYGEN_BIN):
        if not binary.exists():
            pytest.skip(f"{binary} is not built (TRAINSCOPE_BUILD_DIR selects the build dir)")
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command (scripts/setup.sh installs it)")
    secrets = Secrets(tmp_path)
    collector = Collector(tmp_path, extra_args=secrets.collector_args()).start()
    try:
        yield collector, secrets
    finally:
        collector.stop()


def cli(collector, env: dict, *args, timeout_s: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLI_BIN), *args, "--collector", collector.address, "--timeout", "5"],
                          capture_output=True, text=True, timeout=timeout_s,
                          env=base_env(TRAINSCOPE_FEED=collector.feed,
                                       TRAINSCOPE_SNAPSHOT=collector.snapshot, **env))


def loadgen(collector, env: dict, job: str, events: int, flush_timeout_ms: int = 10000):
    result = subprocess.run(
        [str(LOADGEN_BIN), "--collector", collector.address, "--job", job, "--streams", "2",
         "--events", str(events), "--flush-timeout-ms", str(flush_timeout_ms)],
        capture_output=True, text=True, timeout=120, env=base_env(**env))
    streams = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return result, streams


def test_a_configured_agent_and_cli_work_end_to_end(secure):
    collector, secrets = secure
    result, streams = loadgen(collector, secrets.agent_env(), "secure-job", events=3000)
    assert result.returncode == 0, result.stderr
    assert len(streams) == 2
    acked = sum(s["acked"] for s in streams)
    assert acked == sum(s["recorded"] for s in streams) and acked > 0, streams

    jobs = cli(collector, secrets.client_env(), "jobs", "--json")
    assert jobs.returncode == 0, jobs.stderr
    assert "secure-job" in jobs.stdout
    status = cli(collector, secrets.client_env(), "status", "secure-job", "--json")
    assert status.returncode == 0, status.stderr
    ranks = json.loads(status.stdout)["ranks"]
    assert sum(int(r.get("events_received", 0)) for r in ranks) == acked, ranks
    # The snapshot port (CURVE, listed key): the assembled steps come back.
    steps = cli(collector, secrets.client_env(), "steps", "secure-job", "--json")
    assert steps.returncode == 0, steps.stderr
    lines = [json.loads(line) for line in steps.stdout.splitlines() if line.strip()]
    assert lines and {d["rank"] for d in lines[0]["devices"]} == {0, 1}, steps.stdout[:500]


def test_every_port_refuses_a_client_without_its_credentials(secure):
    collector, secrets = secure
    full = secrets.client_env()

    # gRPC, commands: plaintext; TLS without the client certificate; no read token.
    plain = cli(collector, {}, "jobs")
    assert plain.returncode != 0
    assert "refuses plaintext clients" in plain.stderr and "--tls-ca" in plain.stderr
    no_cert = cli(collector, {"TRAINSCOPE_TLS_CA": secrets.path("ca.pem")}, "jobs")
    assert no_cert.returncode != 0 and "check --tls-ca, --tls-cert" in no_cert.stderr
    stranger = cli(collector, {**full, "TRAINSCOPE_TLS_CERT": secrets.path("stranger.pem"),
                               "TRAINSCOPE_TLS_KEY": secrets.path("stranger.key")}, "jobs")
    assert stranger.returncode != 0 and "cannot reach the collector" in stranger.stderr
    no_token = cli(collector, {k: v for k, v in full.items()
                               if k != "TRAINSCOPE_READ_TOKEN_FILE"}, "jobs")
    assert no_token.returncode != 0 and "give its read token" in no_token.stderr

    # gRPC, agents: a loadgen without TLS never gets a batch acknowledged.
    result, streams = loadgen(collector, {}, "plaintext-job", events=200, flush_timeout_ms=1500)
    assert streams and all(s["acked"] == 0 for s in streams), (streams, result.stderr)
    jobs = cli(collector, full, "jobs", "--json")
    assert jobs.returncode == 0, jobs.stderr
    assert "plaintext-job" not in jobs.stdout

    # ZeroMQ snapshot port: no CURVE, then a key the collector does not list.
    no_curve = cli(collector, {k: v for k, v in full.items() if "CURVE" not in k},
                   "steps", "any-job")
    assert no_curve.returncode != 0
    assert "security mechanisms differ" in no_curve.stderr, no_curve.stderr
    intruder = cli(collector, {**full, "TRAINSCOPE_CURVE_KEY": secrets.path("intruder.key")},
                   "steps", "any-job")
    assert intruder.returncode != 0
    assert "not on the collector's --curve-client-keys" in intruder.stderr, intruder.stderr
    # ... while the listed key gets the collector's own answer.
    allowed = cli(collector, full, "steps", "any-job")
    assert "unknown job" in allowed.stderr + allowed.stdout, allowed.stderr


def test_an_expired_client_certificate_is_refused_and_named(secure):
    collector, secrets = secure
    expired = {**secrets.client_env(), "TRAINSCOPE_TLS_CERT": secrets.path("expired.pem"),
               "TRAINSCOPE_TLS_KEY": secrets.path("expired.key")}
    said = (f"--tls-cert (TRAINSCOPE_TLS_CERT): the certificate in '{secrets.path('expired.pem')}'"
            " (/CN=expired) expired on Jan  2 00:00:00 2020 GMT; expected one valid now: renew it")
    # Our own clients name it before connecting: the CLI and an agent.
    jobs = cli(collector, expired, "jobs")
    assert jobs.returncode != 0 and said in jobs.stderr, jobs.stderr
    result, streams = loadgen(collector, expired, "expired-job", events=200, flush_timeout_ms=1500)
    assert said in result.stderr, result.stderr
    assert all(s["acked"] == 0 for s in streams), streams
    # The agent port itself refuses it: a TLS client that does not check its
    # own certificate (Python's ssl), signed by the collector's CA, only its
    # dates wrong, is closed on; the valid client gets the HTTP/2 SETTINGS.
    def first_bytes(name: str) -> bytes:
        context = ssl.create_default_context(cafile=secrets.path("ca.pem"))
        context.set_alpn_protocols(["h2"])
        context.load_cert_chain(secrets.path(f"{name}.pem"), secrets.path(f"{name}.key"))
        host, port = collector.address.rsplit(":", 1)
        try:
            with socket.create_connection((host, int(port)), timeout=20) as raw:
                with context.wrap_socket(raw, server_hostname=host) as tls:
                    tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                                b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")  # preface, SETTINGS
                    return tls.recv(64)
        except (ssl.SSLError, ConnectionError):
            return b""
    assert first_bytes("client")[3:4] == b"\x04"  # a SETTINGS frame
    assert first_bytes("expired") == b""
    assert "certificate verify failed" in collector.output()
    still = cli(collector, secrets.client_env(), "jobs", "--json")
    assert still.returncode == 0 and "expired-job" not in still.stdout, still.stdout


def test_beyond_loopback_needs_encryption_or_insecure(tmp_path):
    if not COLLECTOR_BIN.exists():
        pytest.skip(f"{COLLECTOR_BIN} is not built")
    refused = subprocess.run(
        [str(COLLECTOR_BIN), "--listen=0.0.0.0:0", "--feed=tcp://127.0.0.1:*",
         "--snapshot=tcp://127.0.0.1:*", f"--data-dir={tmp_path / 'data'}"],
        capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2
    assert "--listen 0.0.0.0:0 is beyond loopback" in refused.stderr
    assert "--insecure" in refused.stderr and "--tls-cert" in refused.stderr
    refused = subprocess.run(
        [str(COLLECTOR_BIN), "--listen=127.0.0.1:0", "--feed=tcp://*:*",
         "--snapshot=tcp://127.0.0.1:*", f"--data-dir={tmp_path / 'data'}"],
        capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2 and "--curve-secret-key" in refused.stderr
    # --insecure: starts (and the loopback default needs nothing, as the other tests show).
    insecure = Collector(tmp_path / "insecure", extra_args=["--listen=0.0.0.0:0", "--insecure"])
    (tmp_path / "insecure").mkdir()
    insecure.start()
    try:
        assert insecure.process.poll() is None
    finally:
        insecure.stop()
