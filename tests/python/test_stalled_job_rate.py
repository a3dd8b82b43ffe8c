"""A stalled job's events/s falls to 0 (issue 21 item 1: eleven minutes after
its last event, a stuck job's status still read 89,536 events/s, because the
rate was only resampled when a summary was due, which needed new events).

A real collector and a real job (trainscope-loadgen) that sends, then is
stopped with SIGSTOP: stuck, connected, no goodbye. Its status must show a
nonzero rate while it sends and 0 events/s soon after it stops. The rate's
window is 5 s; the test allows 60 s and asserts nothing else about time.
"""

import json
import os
import signal
import subprocess
import time

import pytest

from conftest import COLLECTOR_BIN, CLI_BIN, Collector
from test_store_recovery import LOADGEN_BIN

JOB = "stalled"


def _rate(collector):
    """The job's events/s; None until the collector knows the job."""
    result = collector.cli("status", JOB, "--json", check=False)
    if result.returncode != 0:
        return None
    return float(json.loads(result.stdout)["summary"].get("events_per_second", 0))


def _wait_for(predicate, timeout_s: float):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    return predicate()


def test_a_stalled_jobs_rate_falls_to_zero(tmp_path):
    for binary in (COLLECTOR_BIN, CLI_BIN, LOADGEN_BIN):
        if not binary.exists():
            pytest.skip(f"{binary} is not built")
    collector = Collector(tmp_path).start()
    loadgen = subprocess.Popen(
        [str(LOADGEN_BIN), "--collector", collector.address, "--job", JOB,
         "--run-for-ms", "600000", "--rate", "20000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert _wait_for(lambda: (_rate(collector) or 0) > 0, 60), collector.status(JOB)
        os.kill(loadgen.pid, signal.SIGSTOP)  # stuck: connected, silent, no goodbye
        assert _wait_for(lambda: _rate(collector) == 0, 60), collector.status(JOB)
        summary = collector.status(JOB)["summary"]
        assert int(summary["events_received"]) > 0, summary
    finally:
        loadgen.kill()
        loadgen.wait(timeout=30)
        collector.stop()
