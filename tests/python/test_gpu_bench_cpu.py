"""bench/gpu/run.sh in its CPU mode, so the GPU run's one command cannot rot:
the bundle (scripts/bundle_agent.sh) builds the extension for this torch,
its collector takes a traced tiny-CNN run beside torch.profiler, and a
2-process gloo job under the bundle's `trainscope run` exports operators and
collectives for both ranks. Timings here mean nothing; what is checked is
that every stage ran and said so.

Run (scripts/test.sh does, with the pip torch's venv):
  scripts/bundle_agent.sh && VENV/bin/python -m pytest tests/python/test_gpu_bench_cpu.py
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest
import torch

from conftest import REPO

BUNDLE = REPO / ".bundle" / "trainscope"
TORCH_DIR = pathlib.Path(torch.__file__).parent
WHEEL = (TORCH_DIR / "include" / "torch" / "extension.h").is_file() and not (
    TORCH_DIR / "include" / "torch").is_symlink()


@pytest.mark.skipif(not WHEEL, reason="runs with a pip torch (scripts/test.sh's venv), as on "
                                      "the GPU machine")
def test_gpu_run_command_in_cpu_mode(tmp_path):
    if not (BUNDLE / "bin" / "trainscope-collector").exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"no bundle at {BUNDLE}: scripts/test.sh runs scripts/bundle_agent.sh")
        pytest.skip(f"no bundle at {BUNDLE} (scripts/bundle_agent.sh)")
    out = tmp_path / "out"
    done = subprocess.run(
        [str(REPO / "bench" / "gpu" / "run.sh"), "--cpu", "--python", sys.executable,
         "--out", str(out), "--cache", str(tmp_path / "cache"), "--work", str(tmp_path / "work"), "--steps", "2", "--rounds", "1",
         "--warmup", "1"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())
    checks = results["checks"]
    assert checks and all(c["ok"] for c in checks.values()), checks
    for name in ("extension builds and loads", "collector starts", "overhead batch 8",
                 "2-process job runs", "trainscope export", "rank 1: collectives (gloo)"):
        assert name in checks, sorted(checks)
    overhead = results["overhead_b8"]
    assert overhead["events_per_step"] > 20 and overhead["events_dropped"] == 0
    assert overhead["exported_per_step"]["compute"] > 20
    assert "batch 8: operators exported" in checks
    assert set(overhead["step_ms"]) == {"none", "trainscope", "profiler"}
    assert results["two_ranks_export"]["rank0:compute"] > 0
    assert results["two_ranks_export"]["rank1:collective"] > 0
    assert "x" in done.stdout and "torch.profiler" in done.stdout
