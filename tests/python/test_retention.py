"""Retention and `trainscope delete` with a real collector (issue 21: nothing
ever removed old jobs from the data directory)."""

import os
import subprocess
import time

import pytest

from conftest import CLI_BIN, COLLECTOR_BIN, Collector
from test_store_recovery import LOADGEN_BIN

DAY_S = 24 * 3600


def loadgen(collector: Collector, job: str) -> None:
    if not LOADGEN_BIN.exists():
        pytest.skip(f"{LOADGEN_BIN} is not built")
    result = subprocess.run(
        [str(LOADGEN_BIN), "--collector", collector.address, "--job", job, "--events", "2000",
         "--rate", "100000"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def age(path, seconds: float) -> None:
    when = time.time() - seconds
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.utime(os.path.join(root, name), (when, when))
    os.utime(path, (when, when))


def delete(data_dir, job: str, *flags) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLI_BIN), "delete", job, "--data-dir", str(data_dir), *flags],
                          capture_output=True, text=True, timeout=60)


def test_old_jobs_are_removed_at_start_and_live_ones_never_deleted(tmp_path):
    for binary in (COLLECTOR_BIN, CLI_BIN):
        if not binary.exists():
            pytest.skip(f"{binary} is not built")
    collector = Collector(tmp_path).start()
    try:
        loadgen(collector, "old-run")
        loadgen(collector, "new-run")
    finally:
        collector.stop()
    age(collector.job_dir("old-run"), 40 * DAY_S)
    age(collector.job_dir("new-run"), 2 * DAY_S)

    collector.extra_args = ["--retain-days=30"]
    collector.start()
    try:
        jobs = collector.cli("jobs").stdout
        assert "new-run" in jobs and "old-run" not in jobs, jobs
        assert not collector.job_dir("old-run").exists()
        assert "retention: removed job old-run" in collector.output()
        assert "last written 40 days ago (over --retain-days=30)" in collector.output()

        # The collector has new-run open: `trainscope delete` refuses it.
        refused = delete(collector.data_dir, "new-run", "--yes")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "open by a running trainscope-collector" in refused.stderr
        assert collector.job_dir("new-run").exists()
    finally:
        collector.stop()

    asked = delete(collector.data_dir, "new-run")
    assert asked.returncode == 1 and "pass --yes" in asked.stderr, asked.stderr
    assert collector.job_dir("new-run").exists()
    deleted = delete(collector.data_dir, "new-run", "--yes")
    assert deleted.returncode == 0, deleted.stderr
    assert not collector.job_dir("new-run").exists()

    collector.extra_args = []
    collector.start()
    try:
        assert "new-run" not in collector.cli("jobs").stdout
    finally:
        collector.stop()


def test_bad_retention_flags_are_refused(tmp_path):
    if not COLLECTOR_BIN.exists():
        pytest.skip(f"{COLLECTOR_BIN} is not built")
    result = subprocess.run([str(COLLECTOR_BIN), f"--data-dir={tmp_path}", "--retain-days=-1"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--retain-days -1" in result.stderr and "expected numbers >= 0" in result.stderr
