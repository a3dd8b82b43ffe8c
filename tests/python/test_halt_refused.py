"""`trainscope halt` refuses a job it cannot stop (issue 23.5: a halt of a
finished job "succeeded" with 0 ranks): a finished job and a job halted
already are refused with an error that names the job and its state, and
nothing of the refused halt is logged.

A real collector (conftest's `collector`) and trainscope-loadgen as the job's
ranks. Run: /usr/bin/python3 -m pytest tests/python/test_halt_refused.py
"""

from __future__ import annotations

import subprocess
import uuid

import pytest

from conftest import BIN_DIR, wait_for

LOADGEN_BIN = BIN_DIR / "trainscope-loadgen"


def _loadgen(collector, job, *args):
    if not LOADGEN_BIN.exists():
        pytest.skip(f"{LOADGEN_BIN} is not built")
    return subprocess.Popen([str(LOADGEN_BIN), "--collector", collector.address, "--job", job,
                             "--streams", "2", "--rate", "500", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _state(collector, job):
    try:
        return collector.status(job)["summary"].get("state", "")
    except AssertionError:  # not known yet
        return ""


def _halt(collector, job, reason):
    return collector.cli("halt", job, "--reason", reason, "--token-file",
                         str(collector.job_dir(job) / "token"), check=False)


def _halts_logged(collector, job):
    return sum(1 for c in collector.status(job).get("commands", []) if c.get("command") == "halt")


def test_a_halt_of_a_finished_job_is_refused(collector):
    job = f"done-{uuid.uuid4().hex[:8]}"
    ranks = _loadgen(collector, job, "--events", "2000")
    try:
        assert ranks.wait(timeout=60) == 0, ranks.stderr.read()
    finally:
        if ranks.poll() is None:
            ranks.kill()
    wait_for(lambda: _state(collector, job) == "JOB_STATE_FINISHED", 30,
             f"{job} to be finished")
    r = _halt(collector, job, "too late")
    assert r.returncode != 0, r.stdout
    assert f"job {job} is finished (every rank said goodbye)" in r.stderr, r.stderr
    assert _state(collector, job) == "JOB_STATE_FINISHED"  # not turned into "halted"
    assert _halts_logged(collector, job) == 0


def test_a_second_halt_of_a_halted_job_is_refused(collector):
    job = f"halt-twice-{uuid.uuid4().hex[:8]}"
    ranks = _loadgen(collector, job, "--run-for-ms", "60000")
    try:
        wait_for(lambda: _state(collector, job) == "JOB_STATE_RUNNING", 30, f"{job} to run")
        first = _halt(collector, job, "first")
        assert first.returncode == 0, first.stdout + first.stderr
        again = _halt(collector, job, "second")
        assert again.returncode != 0, again.stdout
        assert f"job {job} is already halted: halt 1" in again.stderr, again.stderr
        assert "(first)" in again.stderr, again.stderr  # it says which halt stands
        assert _halts_logged(collector, job) == 1
    finally:
        ranks.kill()
        ranks.wait(timeout=30)
