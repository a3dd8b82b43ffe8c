"""A real 4-rank DDP job with trainscope attached, against a real collector:
what the collector stored must match what the job says it did.

Uses conftest's `collector` and `trainscope_module` fixtures (skipped, with the
reason, until the plugin and the collector are built in $TRAINSCOPE_BUILD_DIR).
Run: /usr/bin/python3 -m pytest tests/python/test_ddp_job.py
"""

from __future__ import annotations

import json
import uuid

import pytest

from jobs_util import (COLLECTIVE_KIND, KIND_COLLECTIVE, KIND_OPERATOR, KIND_OPERATOR_BEGIN,
                       KIND_PHASE_MARK, KIND_STEP_MARK, PHASE, events_per_step, run_job,
                       start_job, stop_job, streaming_ranks, trainscope_env, wait_until)

STEPS = 20


def new_job(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_ddp_job_events_match_what_the_job_did(collector, trainscope_module, tmp_path):
    job = new_job("ddp")
    res = run_job("ddp_train.py", ["--world-size", "4", "--steps", str(STEPS), "--batch-size", "32",
                                   "--log-every", "10", "--collector", collector.address,
                                   "--job", job], tmp_path, env=trainscope_env(trainscope_module))
    assert res.rc == 0, res.describe()
    assert all(d["trainscope"]["attached"] for d in res.ranks)

    status = collector.status(job)
    assert status["summary"]["world_size"] == 4
    ranks = {r["rank"]: r for r in status["ranks"]}
    assert sorted(ranks) == [0, 1, 2, 3]
    for r in ranks.values():
        assert int(r["events_received"]) > 0, r
        assert r["said_goodbye"], r
        assert r["framework"] == "pytorch"

    events = collector.events(job)
    for d in res.ranks:
        rank = d["rank"]
        mine = [e for e in events if e.rank == rank]
        # Operators were recorded, and one step mark per optimizer step, numbered 1..N.
        assert any(e.kind in (KIND_OPERATOR, KIND_OPERATOR_BEGIN) for e in mine), rank
        marks = sorted((e.start_ns, e.value) for e in mine if e.kind == KIND_STEP_MARK)
        assert [v for _, v in marks] == list(range(1, d["steps_completed"] + 1)), (rank, marks)
        assert d["steps_completed"] == STEPS
        # The phases the job marked with trainscope.phase: one forward per step.
        forwards = [e for e in mine if e.kind == KIND_PHASE_MARK and e.detail == PHASE["forward"]]
        assert len(forwards) == STEPS, rank
        # Every gradient all_reduce the job's comm hook issued, in the step it issued it.
        logged = events_per_step(events, rank, KIND_COLLECTIVE, COLLECTIVE_KIND["all_reduce"])
        issued = [s["all_reduce"] for s in d["collectives_per_step"]]
        assert logged == issued, (rank, logged, issued)

    # The same collectives on every rank, step by step (all_reduce and DDP's broadcasts).
    for kind in ("all_reduce", "broadcast"):
        per_rank = [events_per_step(events, r, KIND_COLLECTIVE, COLLECTIVE_KIND[kind])
                    for r in range(4)]
        assert all(p == per_rank[0] for p in per_rank), (kind, per_rank)

    # Nothing was lost on the way: every event recorded was acknowledged.
    for d in res.ranks:
        s = d["trainscope"]["stats"]
        assert s["events_acked"] == s["events_recorded"] > 0, s


@pytest.mark.slow
def test_job_finishes_when_the_collector_is_killed(collector, trainscope_module, tmp_path):
    job = new_job("ddp-kill")
    stats = tmp_path / "stats.json"
    log = tmp_path / "job.log"
    proc = start_job("ddp_train.py", ["--world-size", "4", "--steps", "150", "--batch-size", "32",
                                      "--log-every", "25", "--no-eval", "--collector",
                                      collector.address, "--job", job, "--stats-out", str(stats)],
                     env=trainscope_env(trainscope_module), log_path=log)
    try:
        wait_until(lambda: streaming_ranks(collector, job) == 4, 60,
                   f"4 ranks of {job} streaming events")
        collector.kill()
        rc = proc.wait(timeout=120)
    finally:
        stop_job(proc)
    assert rc == 0, log.read_text()[-4000:]
    result = json.loads(stats.read_text())
    assert len(result["ranks"]) == 4
    for d in result["ranks"]:
        assert d["steps_completed"] == 150
        s = d["trainscope"]["stats"]
        dropped = s["dropped_buffer_full"] + s["dropped_shutdown"]
        # Exact accounting: each event taken into a ring was acknowledged, refused or dropped.
        assert s["events_acked"] + s["events_refused"] + dropped == s["events_recorded"], s
        assert s["events_acked"] > 0 and s["events_acked"] < s["events_recorded"], s


@pytest.mark.slow
def test_pipeline_job_sends_and_receives_are_logged_per_step(collector, trainscope_module,
                                                             tmp_path):
    job = new_job("pipe")
    res = run_job("pipeline_train.py", ["--world-size", "4", "--steps", "10", "--batch-size", "32",
                                        "--micro-batches", "4", "--log-every", "5",
                                        "--collector", collector.address, "--job", job],
                  tmp_path, env=trainscope_env(trainscope_module))
    assert res.rc == 0, res.describe()
    events = collector.events(job)
    for d in res.ranks:
        for kind in ("send", "recv", "all_reduce"):
            logged = events_per_step(events, d["rank"], KIND_COLLECTIVE, COLLECTIVE_KIND[kind])
            issued = [s[kind] for s in d["collectives_per_step"]]
            assert logged == issued, (d["rank"], kind, logged, issued)
