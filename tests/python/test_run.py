"""`trainscope run` and TRAINSCOPE_COLLECTOR: auto-attach with no code change.

Training scripts that never mention trainscope run under `trainscope run` (or
with TRAINSCOPE_COLLECTOR and the sitecustomize dir on PYTHONPATH) and their
events reach a real collector; spawned ranks attach with their own rank; the
sitecustomize chains to the one it shadows and never breaks the interpreter.

The package comes from the build under test (conftest's PYTHON_DIR); when
that build has no current sitecustomize/ next to it, a layout with the source
tree's sitecustomize is made in a temporary directory.
"""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from conftest import CLI_BIN, PYTHON_DIR, REPO, free_port, wait_for
from test_attach import rank_events

PYTHON = sys.executable  # /usr/bin/python3, or a pip torch's venv (scripts/test.sh)
SITECUSTOMIZE_SRC = REPO / "integrations" / "pytorch" / "sitecustomize" / "sitecustomize.py"

# A few optimizer steps; no trainscope anywhere.
TRAIN = textwrap.dedent("""
    import sys, torch
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(30):
        opt.zero_grad(); model(torch.randn(8, 16)).sum().backward(); opt.step()
    print("trained; trainscope imported:", "trainscope" in sys.modules, flush=True)
""")

# Two ranks via torch.multiprocessing.spawn: neither knows its rank before
# init_process_group, so they must attach after it, each as itself.
TRAIN_SPAWN = textwrap.dedent("""
    import sys, torch, torch.distributed as dist, torch.multiprocessing as mp

    def run(rank, port):
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                                rank=rank, world_size=2)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 4))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(30):
            opt.zero_grad(); model(torch.randn(8, 16)).sum().backward(); opt.step()
        dist.destroy_process_group()

    if __name__ == "__main__":
        mp.spawn(run, args=(int(sys.argv[1]),), nprocs=2, join=True)
        ts = sys.modules.get("trainscope")
        print("parent attached:", bool(ts and ts.is_attached()), flush=True)
""")


@pytest.fixture
def python_dir(trainscope_module, tmp_path):
    """A directory with trainscope/ and sitecustomize/sitecustomize.py."""
    built = PYTHON_DIR / "sitecustomize" / "sitecustomize.py"
    if built.exists() and built.read_text() == SITECUSTOMIZE_SRC.read_text():
        return PYTHON_DIR  # the build's own copy, current
    layout = tmp_path / "python"
    (layout / "sitecustomize").mkdir(parents=True)
    (layout / "trainscope").symlink_to(PYTHON_DIR / "trainscope")
    (layout / "sitecustomize" / "sitecustomize.py").write_text(SITECUSTOMIZE_SRC.read_text())
    return layout


@pytest.fixture
def run_ready(collector):
    probe = subprocess.run([str(CLI_BIN), "run", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"{CLI_BIN} has no run command (rebuild the trainscope target)")
    return collector


def clean_env(**extra):
    # TRAINSCOPE_CACHE_DIR stays: where a pip torch's extension was built.
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith("TRAINSCOPE_") or k == "TRAINSCOPE_CACHE_DIR") and
           k != "PYTHONPATH"}
    env.update(extra)
    return env


def test_run_attaches_a_script_that_never_mentions_trainscope(run_ready, python_dir, tmp_path):
    collector = run_ready
    job = f"run-{os.getpid()}"
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    result = subprocess.run(
        [str(CLI_BIN), "run", "--collector", collector.address, "--job", job, "--python-dir",
         str(python_dir), "--", PYTHON, str(script)],
        capture_output=True, text=True, timeout=120, env=clean_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "trained; trainscope imported: True" in result.stdout
    assert "trainscope:" not in result.stderr, result.stderr  # no warning
    events = wait_for(lambda: rank_events(collector, job).get(0), 30, "events from rank 0")
    assert events > 0


def test_run_passes_the_programs_exit_code_and_arguments(run_ready, python_dir, tmp_path):
    result = subprocess.run(
        [str(CLI_BIN), "run", "--collector", run_ready.address, "--python-dir", str(python_dir),
         "--", PYTHON, "-c", "import sys; print(sys.argv[1:]); sys.exit(7)", "--flag", "--"],
        capture_output=True, text=True, timeout=60, env=clean_env())
    assert result.returncode == 7
    assert "['--flag', '--']" in result.stdout


def test_collector_variable_with_the_sitecustomize_dir_attaches_too(run_ready, python_dir,
                                                                    tmp_path):
    collector = run_ready
    job = f"env-{os.getpid()}"
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    result = subprocess.run(
        [PYTHON, str(script)], capture_output=True, text=True, timeout=120,
        env=clean_env(TRAINSCOPE_COLLECTOR=collector.address, TRAINSCOPE_JOB=job,
                      PYTHONPATH=f"{python_dir / 'sitecustomize'}:{python_dir}"))
    assert result.returncode == 0, result.stdout + result.stderr
    wait_for(lambda: rank_events(collector, job).get(0), 30, "events from rank 0")


def test_spawned_ranks_attach_as_themselves_and_the_launcher_never_does(run_ready, python_dir,
                                                                        tmp_path):
    collector = run_ready
    job = f"spawn-{os.getpid()}"
    script = tmp_path / "spawn.py"
    script.write_text(TRAIN_SPAWN)
    result = subprocess.run(
        [str(CLI_BIN), "run", "--collector", collector.address, "--job", job, "--python-dir",
         str(python_dir), "--", PYTHON, str(script), str(free_port())],
        capture_output=True, text=True, timeout=180, env=clean_env())
    assert result.returncode == 0, result.stdout + result.stderr
    # The parent imported torch (and so the hook) but never became a rank.
    assert "parent attached: False" in result.stdout
    events = wait_for(lambda: (lambda e: len(e) == 2 and all(e.values()) and e)(
        rank_events(collector, job)), 30, "events from ranks 0 and 1")
    assert sorted(events) == [0, 1]
    status = collector.status(job)
    assert status["summary"]["world_size"] == 2


def test_without_the_collector_variable_nothing_is_loaded_and_the_shadowed_one_runs(
        python_dir, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import os\nos.environ['SHADOWED_RAN'] = '1'\n")
    code = ("import os, sys, torch; print(os.environ.get('SHADOWED_RAN'), "
            "'trainscope' in sys.modules)")
    for collector_env in ({}, {"TRAINSCOPE_COLLECTOR": "127.0.0.1:1"}):
        result = subprocess.run(
            [PYTHON, "-c", code], capture_output=True, text=True, timeout=120,
            env=clean_env(PYTHONPATH=f"{python_dir / 'sitecustomize'}:{python_dir}:{other}",
                          **collector_env))
        assert result.returncode == 0, result.stderr
        # The shadowed sitecustomize ran either way; trainscope loads only when asked
        # (and then only once torch is imported and the process is a rank: a
        # bare `import torch` without a step does not attach).
        assert result.stdout.split() == ["1", "True" if collector_env else "False"], \
            result.stdout + result.stderr


def test_a_broken_plugin_costs_one_warning_line_and_never_the_program(tmp_path):
    broken = tmp_path / "python"
    (broken / "sitecustomize").mkdir(parents=True)
    (broken / "trainscope").mkdir()
    (broken / "trainscope" / "__init__.py").write_text("raise RuntimeError('plugin is broken')\n")
    (broken / "sitecustomize" / "sitecustomize.py").write_text(SITECUSTOMIZE_SRC.read_text())
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    result = subprocess.run(
        [PYTHON, str(script)], capture_output=True, text=True, timeout=120,
        env=clean_env(TRAINSCOPE_COLLECTOR="127.0.0.1:1",
                      PYTHONPATH=f"{broken / 'sitecustomize'}:{broken}"))
    assert result.returncode == 0, result.stderr
    assert "trained;" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if line.startswith("trainscope:")]
    assert len(warnings) == 1, result.stderr
    assert "plugin is broken" in warnings[0]
    assert "the program goes on without trainscope" in warnings[0]
