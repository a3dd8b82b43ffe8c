"""Idle and garbage TCP connections do not stall the collector's read ports
(issue 21 item 6: one idle connection blocked `/metrics` for 30 s; after
garbage connections the snapshot port left the next real request unanswered).

A real collector with a real job (trainscope-loadgen); connections that send
nothing, random bytes, half a ZeroMQ greeting, an HTTP request, or a complete
ZeroMQ handshake followed by a malformed request are opened and left open,
then real requests are made: a Prometheus scrape and `trainscope steps` (which
reads the snapshot port). Each must be answered; the timeouts are wide (20 s
scrape, the CLI's own 10 s) and nothing else about time is asserted.
"""

import json
import os
import socket
import struct
import subprocess
import urllib.request

import pytest

from conftest import CLI_BIN, COLLECTOR_BIN, Collector
from test_store_recovery import LOADGEN_BIN

JOB = "idle"


def zmtp_handshake_then_garbage() -> bytes:
    """A ZMTP 3.0 NULL greeting and READY as a REQ peer, then a request whose
    body is not a SnapshotRequest, and the first frame of a second one (the
    rest never comes)."""
    greeting = b"\xff" + b"\x00" * 8 + b"\x7f" + bytes([3, 0]) + b"NULL".ljust(20, b"\x00")
    greeting += b"\x00" + b"\x00" * 31
    prop = bytes([len(b"Socket-Type")]) + b"Socket-Type" + struct.pack(">I", 3) + b"REQ"
    ready = b"\x05READY" + prop
    body = os.urandom(40)
    return (greeting + bytes([0x04, len(ready)]) + ready + b"\x01\x00" +
            bytes([0x00, len(body)]) + body + b"\x01\x00" + b"\x00\xff")


def open_garbage(host: str, port: int) -> list:
    payloads = [b"", os.urandom(300), b"\xff\x00\x00\x00\x00\x00\x00\x00\x01\x7f",
                b"GET / HTTP/1.1\r\nHost: x\r\n", zmtp_handshake_then_garbage()]
    sockets = []
    for payload in payloads:
        s = socket.create_connection((host, port), timeout=10)
        if payload:
            s.sendall(payload)
        sockets.append(s)
    return sockets


def scrape(collector) -> str:
    with urllib.request.urlopen(f"http://{collector.metrics}/metrics", timeout=20) as reply:
        assert reply.status == 200
        return reply.read().decode()


def test_idle_and_garbage_connections_do_not_stall_metrics_or_snapshots(tmp_path):
    for binary in (COLLECTOR_BIN, CLI_BIN, LOADGEN_BIN):
        if not binary.exists():
            pytest.skip(f"{binary} is not built")
    collector = Collector(tmp_path, extra_args=["--metrics-port=0"]).start()
    held = []
    try:
        summary = tmp_path / "job.json"
        subprocess.run(
            [str(LOADGEN_BIN), "--collector", collector.address, "--job", JOB, "--events",
             "20000", "--rate", "20000", "--summary", str(summary)],
            capture_output=True, text=True, timeout=120, check=True)
        acked = json.loads(summary.read_text().splitlines()[0])["acked"]
        assert acked > 0

        metrics_host, metrics_port = collector.metrics.rsplit(":", 1)
        snap_host, snap_port = collector.snapshot.split("//", 1)[1].rsplit(":", 1)
        for round_ in range(3):
            # Idle and garbage connections to the metrics port, kept open.
            held += open_garbage(metrics_host, int(metrics_port))
            text = scrape(collector)
            assert "trainscope_collector_up 1" in text, text[:500]

            # The same to the snapshot port, then a real snapshot request.
            held += open_garbage(snap_host, int(snap_port))
            steps = collector.cli("steps", JOB, "--json", "--snapshot", collector.snapshot,
                                  timeout_s=60, check=False)
            assert steps.returncode == 0, (round_, steps.stdout, steps.stderr)
            assert json.loads(steps.stdout.splitlines()[0]), steps.stdout
    finally:
        for s in held:
            s.close()
        collector.stop()
