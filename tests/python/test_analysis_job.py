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

import pytest

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


# Offsets up to +-50 ms and drift up to +-100 ppm, from one origin so the truth is exact.
SKEWS = [(0, 0.0), (37_000_000, 80.0), (-50_000_000, -100.0), (12_500_000, 0.0)]


# Kept out of CI (slow marker): on this oversubscribed 2-core host the probe
# fit of a 30-step job still misses injected drift by up to ~1 ms now and then
# (see the closing note of issue 5); the synthetic budget tests are in
# tests/collector/analysis/clock_aligner_test.cc.
@pytest.mark.slow
def test_a_perturbed_job_aligns_onto_the_shared_clock(collector, trainscope_module, tmp_path):
    """Every rank runs on this host's CLOCK_MONOTONIC, so the truth is known:
    the agents perturb what they record by known offsets and drifts, and once
    aligned every rank must land back on rank 0's clock."""
    job = f"skew-{uuid.uuid4().hex[:8]}"
    origin = time.monotonic_ns()
    env = trainscope_env(trainscope_module)
    env["TRAINSCOPE_TEST_CLOCK_ORIGIN_NS"] = str(origin)
    skew = ",".join(f"{o}:{d}" for o, d in SKEWS)
    res = run_job("ddp_train.py", ["--world-size", str(WORLD), "--steps", "30", "--batch-size",
                                   "32", "--log-every", "0", "--no-eval", "--collector",
                                   collector.address, "--job", job, "--test-clock-skew", skew],
                  tmp_path, env=env)
    assert res.rc == 0, res.describe()
    wait_for_steps(collector, job, 30)
    out = collector.cli("ops", job, "--data-dir", str(collector.data_dir), "--timeout", "60",
                        timeout_s=120).stdout
    ops = json.loads(out)["operators"]["operators"]

    def truth(rank, t):
        offset, ppm = SKEWS[rank]
        d = ppm * 1e-6
        return (t - offset + d * origin) / (1 + d)

    errors = {}
    for rank in range(WORLD):
        # "Once aligned": operators of the steps after the first probes and
        # collectives (earlier steps closed on the agents' wall-clock prior).
        mine = [o for o in ops if int(o["rank"]) == rank and int(o["step"]) >= 10]
        assert len(mine) > 100, rank
        errors[rank] = statistics.median(int(o["start_ns"]) - truth(rank, int(o["raw_start_ns"]))
                                         for o in mine)
    clocks = {int(c["rank"]): c for c in analysis(collector, "clocks", job)[0]["devices"]}
    report = {r: round((errors[r] - errors[0]) / 1e3, 1) for r in range(WORLD)}
    print(f"alignment error vs rank 0 (us): {report}; sources: "
          f"{ {r: c['source'] for r, c in clocks.items()} }")
    for rank in range(1, WORLD):
        # The injected skews are tens of milliseconds; once aligned what is
        # left must be within the device's own reported uncertainty (x3) and
        # never above 1 ms.
        bound = min(1e6, max(50e3, 3 * float(clocks[rank]["uncertainty_ns"])))
        assert abs(errors[rank] - errors[0]) <= bound, (rank, report, clocks[rank])
