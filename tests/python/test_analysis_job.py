"""The collector's live analysis on a real 4-rank DDP job: the step metrics it
assembles across devices must agree with the job's own timers, and every
device must get a clock estimate.

Uses conftest's `collector` and `trainscope_module` fixtures.
Run: /usr/bin/python3 -m pytest tests/python/test_analysis_job.py
"""

from __future__ import annotations

import json
import statistics
import time
import uuid

from jobs_util import run_job, trainscope_env

STEPS = 40
WORLD = 4


def analysis(collector, *args) -> list:
    """`trainscope <args> --json` against the live collector, one JSON value per line."""
    out = collector.cli(*args, "--json", "--feed", collector.feed, "--snapshot",
                        collector.snapshot).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def wait_for_steps(collector, job: str, count: int, timeout_s: float = 30) -> list:
    deadline = time.monotonic() + timeout_s
    steps = []
    while time.monotonic() < deadline:
        steps = analysis(collector, "steps", job)
        if len(steps) >= count:
            return steps
        time.sleep(0.2)
    raise AssertionError(f"only {len(steps)} of {count} steps closed for {job} in {timeout_s} s:\n"
                         f"{collector.output()[-3000:]}")


def ms(ns) -> float:
    return int(ns) / 1e6


def test_step_metrics_match_the_jobs_own_timers(collector, trainscope_module, tmp_path):
    job = f"steps-{uuid.uuid4().hex[:8]}"
    res = run_job("ddp_train.py", ["--world-size", str(WORLD), "--steps", str(STEPS),
                                   "--batch-size", "32", "--log-every", "0", "--no-eval",
                                   "--collector", collector.address, "--job", job], tmp_path,
                  env=trainscope_env(trainscope_module))
    assert res.rc == 0, res.describe()

    # Steps 0..STEPS-1 close as each device marks the next one; the last step
    # closes when the ranks disconnect.
    steps = {int(s["step"]): s for s in wait_for_steps(collector, job, STEPS)}
    for step in range(STEPS):
        assert step in steps, (step, sorted(steps))
        ranks = sorted(int(d["rank"]) for d in steps[step]["devices"])
        assert ranks == list(range(WORLD)), (step, ranks)

    # The job times each step from the top of its loop to the end of the
    # optimizer; trainscope from one optimizer step's end to the next. The two
    # windows are shifted but, summed over the steady steps, measure the same
    # time. Phases are marked by the job with trainscope.phase, so they must
    # agree closely too.
    steady = range(2, STEPS - 2)
    for d in res.ranks:
        rank = d["rank"]
        timers = d["timers"]
        mine = [next(x for x in steps[s]["devices"] if int(x["rank"]) == rank)
                for s in steady]
        job_step = sum(timers["step"][s] for s in steady) * 1e3
        ts_step = sum(ms(x["step_time_ns"]) for x in mine)
        assert abs(ts_step - job_step) <= 0.05 * job_step, (rank, ts_step, job_step)
        for phase, field in (("forward", "forward_ns"), ("backward", "backward_ns")):
            job_phase = sum(timers[phase][s] for s in steady) * 1e3
            ts_phase = sum(ms(x[field]) for x in mine)
            assert abs(ts_phase - job_phase) <= 0.05 * job_phase, (rank, phase, ts_phase,
                                                                    job_phase)
        # Each part fits in the step (DDP's all-reduces overlap the backward
        # pass, so compute and communication may together exceed it).
        for x in mine:
            for part in ("compute_ns", "collective_ns", "idle_ns", "data_wait_ns"):
                assert 0 <= int(x[part]) <= int(x["step_time_ns"]), (part, x)
            assert int(x["wait_ns"]) + int(x["transfer_ns"]) == \
                int(x["collective_ns"]), x
        # DDP all-reduces every step: some collective time on every device.
        assert statistics.median(ms(x["collective_ns"]) for x in mine) > 0, rank
        assert sum(int(x["flops"]) for x in mine) > 0, rank

    clocks = analysis(collector, "clocks", job)[0]
    devices = {int(c["rank"]): c for c in clocks["devices"]}
    assert sorted(devices) == list(range(WORLD)), clocks
    for rank, c in devices.items():
        if rank != 0:
            assert int(c["collective_samples"]) >= STEPS, c
