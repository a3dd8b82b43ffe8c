"""The loss-contribution benchmarks (bench/loss_contribution) at their smallest
sizes: they still run against the current plugin, and the quality run still
finds the flipped labels (which would catch a plugin that scores the wrong
thing even where the unit tests' small nets agree)."""

import json
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench" / "loss_contribution"


def run(script, *args):
    done = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_quick_quality_run_finds_the_flipped_labels(tmp_path):
    out = run("quality.py", "--quick", "--out", str(tmp_path))
    assert "| digits | 20% | lc |" in out
    result = json.loads((tmp_path / "quality.json").read_text())["results"][0]
    metrics = result["runs"][0]["metrics"]
    facts = result["runs"][0]["facts"]
    # The plugin's per-item values are the script's own sum(f*b), scaled alike.
    assert facts["plugin_vs_probe_max_rel_diff"] < 1e-4
    assert metrics["lc"]["auroc"] > 0.95, metrics["lc"]
    assert metrics["lc"]["p_at_budget"] > 0.9, metrics["lc"]
    assert metrics["random"]["auroc"] < 0.7, metrics["random"]


def test_tiny_overhead_run_times_every_variant_and_makes_maps():
    out = run("overhead.py", "--naive", "--selection-only", "--width", "8", "--image", "32",
              "--items", "64", "--every", "2", "--repeats", "2", "--steps", "4", "--warmup", "1")
    for variant in ("| off | wall |", "| ours | wall |", "| ours_selection_only | wall |",
                    "| naive | wall |"):
        assert variant in out
    # 64 items and K = 2: selected items come by, so the maps path ran too.
    facts = next(line for line in out.splitlines() if line.startswith("Config:"))
    snapshots = int(facts.split(" snapshots")[0].rsplit(" ", 1)[1])
    assert snapshots > 0, facts
