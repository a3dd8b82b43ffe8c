"""Helpers for the tests that run the example training jobs
(integrations/pytorch/examples) as real multi-process jobs.

run_job() starts a job in its own process group with a deadline, so a hung
rank can never hang the test run; the job's --stats-out JSON (every rank's
timers and the collectives it issued) comes back parsed.
"""

from __future__ import annotations

import bisect
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "integrations" / "pytorch" / "examples"
# The interpreter running the tests: /usr/bin/python3 for Debian's torch (it
# imports only there), a virtual environment's for a pip torch (scripts/test.sh).
PYTHON = sys.executable


@dataclass
class JobResult:
    rc: int
    stdout: str
    stderr: str
    seconds: float
    stats: Optional[Dict[str, Any]] = None
    ranks: List[Dict[str, Any]] = field(default_factory=list)

    def rank(self, r: int) -> Dict[str, Any]:
        for d in self.ranks:
            if d["rank"] == r:
                return d
        raise KeyError(f"no stats for rank {r}; have {[d['rank'] for d in self.ranks]}\n"
                       f"stdout:\n{self.stdout}\nstderr:\n{self.stderr}")

    def describe(self) -> str:
        return (f"rc={self.rc} after {self.seconds:.1f}s\n--- stdout ---\n{self.stdout[-4000:]}"
                f"\n--- stderr ---\n{self.stderr[-4000:]}")


def run_job(script: str, args: Sequence[str], tmp_path: Path, *, timeout_s: float = 120,
            env: Optional[Dict[str, str]] = None, stats: bool = True) -> JobResult:
    """Runs integrations/pytorch/examples/<script> and waits at most timeout_s."""
    cmd = [PYTHON, str(EXAMPLES / script), *args]
    stats_path = None
    if stats:
        stats_path = tmp_path / f"stats-{script.split('.')[0]}-{time.monotonic_ns()}.json"
        cmd += ["--stats-out", str(stats_path)]
    full_env = dict(os.environ)
    # A collector in the caller's environment must not leak into jobs meant to run without one.
    for k in ("TRAINSCOPE_COLLECTOR", "TRAINSCOPE_JOB", "TRAINSCOPE_TOKEN", "TRAINSCOPE_DORMANT"):
        full_env.pop(k, None)
    full_env.update(env or {})
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=full_env, cwd=str(REPO), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the job's own group: launcher + its ranks
        out, err = proc.communicate(timeout=30)
        raise AssertionError(f"{' '.join(cmd)} still running after {timeout_s}s\n"
                             f"stdout:\n{out[-4000:]}\nstderr:\n{err[-4000:]}")
    res = JobResult(proc.returncode, out, err, time.monotonic() - t0)
    if stats_path is not None and stats_path.exists():
        res.stats = json.loads(stats_path.read_text())
        res.ranks = sorted(res.stats["ranks"], key=lambda d: d["rank"])
    return res


def start_job(script: str, args: Sequence[str], *, env: Optional[Dict[str, str]] = None,
              log_path: Optional[Path] = None) -> subprocess.Popen:
    """Starts a job without waiting (stdout+stderr to log_path); stop it with stop_job."""
    full_env = dict(os.environ)
    for k in ("TRAINSCOPE_COLLECTOR", "TRAINSCOPE_JOB", "TRAINSCOPE_TOKEN", "TRAINSCOPE_DORMANT"):
        full_env.pop(k, None)
    full_env.update(env or {})
    out = open(log_path, "w") if log_path else subprocess.DEVNULL
    try:
        return subprocess.Popen([PYTHON, str(EXAMPLES / script), *args], stdout=out,
                                stderr=subprocess.STDOUT, text=True, env=full_env, cwd=str(REPO),
                                start_new_session=True)
    finally:
        if log_path:
            out.close()


def stop_job(proc: subprocess.Popen) -> None:
    """Kills a job started by start_job (its whole process group) if still running."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def med(xs: Sequence[float]) -> float:
    """Median of a rank's per-step timer, skipping the first (warm-up) step."""
    xs = list(xs)[1:] if len(xs) > 3 else list(xs)
    assert xs, "no samples"
    return float(np.median(xs))


def torch_importable() -> bool:
    r = subprocess.run([PYTHON, "-c", "import torch, numpy"], capture_output=True)
    return r.returncode == 0


def python_path_with(pydir: Path) -> str:
    old = os.environ.get("PYTHONPATH", "")
    return f"{pydir}{os.pathsep}{old}" if old else str(pydir)


# ---------------------------------------------------------------- trainscope


def trainscope_env(trainscope_module) -> dict:
    """PYTHONPATH for the job's ranks: the build's python/ dir the tests import from."""
    return {"PYTHONPATH": python_path_with(Path(trainscope_module.__file__).parents[1])}


def streaming_ranks(collector, job: str) -> int:
    """How many ranks of the job the collector has received events from (0 if unknown yet)."""
    r = collector.cli("status", job, "--json", check=False)
    if r.returncode != 0:
        return 0
    return sum(1 for rk in json.loads(r.stdout)["ranks"] if int(rk["events_received"]) > 0)


def wait_until(predicate, timeout_s: float, what: str, interval_s: float = 0.2):
    """Polls predicate() until it returns something truthy; fails naming `what`."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(interval_s)


# Event kinds of agent.proto (EventKind) and the collective kinds used here.
KIND_OPERATOR, KIND_OPERATOR_BEGIN, KIND_OPERATOR_END = 1, 2, 3
KIND_COLLECTIVE, KIND_STEP_MARK, KIND_PHASE_MARK = 4, 5, 6
COLLECTIVE_KIND = {"all_reduce": 1, "broadcast": 4, "barrier": 5, "send": 6, "recv": 7}
PHASE = {"data_wait": 1, "forward": 2, "backward": 3, "optimizer": 4}


def events_per_step(events, rank: int, kind: int, detail: int) -> List[int]:
    """Counts one rank's events (trainscope LoggedEvent tuples, as the conftest
    collector's .events(job) returns them) of (kind, detail) per step, steps told apart by
    the step marks: events before the mark with value k belong to step k
    (1-based, like the examples' own counts); events after the last mark are
    dropped (work after the last optimizer step, e.g. evaluation)."""
    mine = [e for e in events if e.rank == rank]
    marks = sorted(e.start_ns for e in mine if e.kind == KIND_STEP_MARK)
    counts = [0] * len(marks)
    for e in mine:
        if e.kind == kind and e.detail == detail:
            i = bisect.bisect_left(marks, e.start_ns)
            if i < len(marks):
                counts[i] += 1
    return counts


