"""A full disk under a real collector and a real agent stream (issue 21: after
ENOSPC a job refused every append until the collector restarted, and counted
events durable that were never written).

The data directory is a small tmpfs with a ballast file: the job fills it,
the ballast is removed while the agent keeps sending, and the job must go on
without a restart, with every acknowledged event in the log and what the
log refused counted in `trainscope status`. Mounting needs root: skipped
elsewhere, with the reason.
"""

import json
import os
import subprocess
import tempfile
import time

import pytest

from conftest import CLI_BIN, COLLECTOR_BIN, Collector, wait_for
from test_store_recovery import LOADGEN_BIN

JOB = "disk-full"


@pytest.fixture
def small_tmpfs():
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill up needs root")
    path = tempfile.mkdtemp(prefix="trainscope-tmpfs-")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", path],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        os.rmdir(path)
        pytest.skip(f"cannot mount a tmpfs on {path}: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", path], check=False)
        os.rmdir(path)


def test_job_goes_on_when_space_returns(small_tmpfs, tmp_path):
    for binary in (COLLECTOR_BIN, CLI_BIN, LOADGEN_BIN):
        if not binary.exists():
            pytest.skip(f"{binary} is not built")
    ballast = os.path.join(small_tmpfs, "ballast")
    with open(ballast, "wb") as f:
        f.write(b"\0" * (6 << 20))
    collector = Collector(tmp_path, extra_args=["--segment-mb=1"])
    collector.data_dir = type(tmp_path)(small_tmpfs) / "data"
    collector.start()
    try:
        summary_path = tmp_path / "loadgen.json"
        loadgen = subprocess.Popen(
            [str(LOADGEN_BIN), "--collector", collector.address, "--job", JOB, "--events",
             "300000", "--rate", "100000", "--memory-mb", "256", "--flush-timeout-ms", "30000",
             "--summary", str(summary_path)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def refused():
            try:
                ranks = collector.status(JOB).get("ranks", [])
            except AssertionError:
                return 0
            return sum(int(r.get("store_refused_batches", 0)) for r in ranks)

        wait_for(refused, 60, "the log to refuse a batch for the full disk")
        os.unlink(ballast)  # space comes back; the collector is not restarted
        assert loadgen.wait(timeout=120) == 0
        summary = json.loads(summary_path.read_text().splitlines()[0])
        status = collector.status(JOB)
    finally:
        collector.stop()
    rank = status["ranks"][0]
    assert int(rank["store_refused_batches"]) > 0
    assert int(rank["store_refused_events"]) > 0
    # Every event acknowledged is in the log, and nothing more is counted.
    assert summary["acked"] == int(rank["events_received"]), (summary, rank)
    assert summary["acked"] == summary["attempted"], f"space came back: all delivered {summary}"
    # A restarted collector finds exactly the acknowledged events on disk.
    collector.start()
    try:
        again = collector.status(JOB)
    finally:
        collector.stop()
    assert int(again["summary"]["events_received"]) == summary["acked"]
    assert int(again["recovery"]["events_lost"]) == 0
