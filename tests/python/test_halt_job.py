"""`trainscope halt` on a running 4-rank job: every rank checkpoints (on_halt)
and stops at the same step, and the job exits cleanly.

Uses conftest's `collector` and `trainscope_module` fixtures (skipped, with the
reason, until the plugin and the collector are built in $TRAINSCOPE_BUILD_DIR).
Run: /usr/bin/python3 -m pytest tests/python/test_halt_job.py
"""

from __future__ import annotations

import json
import os
import re
import uuid

import pytest

from jobs_util import (KIND_STEP_MARK, start_job, stop_job, streaming_ranks, trainscope_env,
                       wait_until)

LONG = 5000  # steps: far more than the test waits for


@pytest.mark.parametrize("script", ["ddp_train.py",
                                    pytest.param("pipeline_train.py", marks=pytest.mark.slow)])
def test_halt_stops_every_rank_at_the_same_step(collector, trainscope_module, tmp_path, script):
    job = f"halt-{uuid.uuid4().hex[:8]}"
    stats_path = tmp_path / "stats.json"
    ckpt = tmp_path / "ckpt"
    log = tmp_path / "job.log"
    proc = start_job(script, ["--world-size", "4", "--steps", str(LONG), "--batch-size", "32",
                              "--log-every", "50", "--collector", collector.address, "--job", job,
                              "--checkpoint-dir", str(ckpt), "--stats-out", str(stats_path)],
                     env=trainscope_env(trainscope_module), log_path=log)
    try:
        wait_until(lambda: streaming_ranks(collector, job) == 4, 60,
                   f"4 ranks of {job} streaming events")
        r = collector.cli("halt", job, "--reason", "test halt", "--token-file",
                          str(collector.job_dir(job) / "token"), check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        rc = proc.wait(timeout=60)
    finally:
        stop_job(proc)
    out = log.read_text()
    assert rc == 0, out[-4000:]

    halted = {int(m.group(1)): int(m.group(2))
              for m in re.finditer(r"rank (\d+) halted at step (\d+): test halt", out)}
    assert sorted(halted) == [0, 1, 2, 3], out[-4000:]
    step = halted[0]
    assert set(halted.values()) == {step}, halted
    assert 0 < step < LONG
    assert re.search(rf"job halted: 4/4 ranks stopped at step\(s\) \[{step}\], reason 'test halt', "
                     r"on_halt called on 4 rank\(s\)", out), out[-2000:]

    ranks = json.loads(stats_path.read_text())["ranks"]
    assert len(ranks) == 4
    for d in ranks:
        assert d["halted"] and d["halt_step"] == step and d["steps_completed"] == step, d["rank"]
        assert d["on_halt_calls"] == 1 and d["halt_reason"] == "test halt"
        # on_halt's checkpoint holds the weights of the step it was called at.
        assert os.path.exists(d["checkpoint"]), d["checkpoint"]
        import torch  # noqa: PLC0415 (only this test reads torch files)
        saved = torch.load(d["checkpoint"])
        assert saved["step"] == step and saved["reason"] == "test halt"

    # The log agrees: the same number of step marks on every rank.
    events = collector.events(job)
    marks = {r: sum(1 for e in events if e.rank == r and e.kind == KIND_STEP_MARK)
             for r in range(4)}
    assert len(set(marks.values())) == 1 and marks[0] >= step - 1, marks
