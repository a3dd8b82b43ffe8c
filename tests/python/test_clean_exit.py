"""Clean exits: ranks that end normally say goodbye without any trainscope
call in the script, and the collector shows a finished job with no alert.

Real jobs through `trainscope run` against a real collector: an unmodified
4-rank gloo script started by torch.multiprocessing.spawn (its workers leave
through os._exit, where atexit never runs), the same started by fork, and a
torchrun-style worker (RANK/WORLD_SIZE set) ending in sys.exit(0). An
exception on the way out is not a normal end: the rank says goodbye with the
error (it failed, it did not vanish: no lost_device), the job is lost.

Timing-based rules are off in this collector (--rules): on a loaded 2-core
machine they judge noise; what is asserted here is how the job ends, and
every rule left on (lost_device among them) must stay silent.
"""

import json
import os
import subprocess
import textwrap

import pytest

from conftest import CLI_BIN, Collector, free_port, wait_for
from test_run import clean_env, python_dir  # noqa: F401  (fixture)

PYTHON = "/usr/bin/python3"
WORLD = 4

# No trainscope anywhere: what a user runs.
SPAWN_SCRIPT = textwrap.dedent("""
    import sys, torch, torch.distributed as dist, torch.multiprocessing as mp

    def run(rank, port, world):
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                                rank=rank, world_size=world)
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(32, 8))
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(20):
            opt.zero_grad(); model(torch.randn(16, 32)).sum().backward(); opt.step()
        dist.destroy_process_group()

    if __name__ == "__main__":
        port, world, method = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
        mp.start_processes(run, args=(port, world), nprocs=world, join=True,
                           start_method=method)
        print("all ranks done", flush=True)
""")

# A torchrun worker's view: RANK and WORLD_SIZE in the environment.
WORKER_SCRIPT = textwrap.dedent("""
    import os, sys, torch
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(10):
        opt.zero_grad(); model(torch.randn(8, 16)).sum().backward(); opt.step()
    if sys.argv[1] == "fork":  # a forked child that exits must neither hang nor speak for it
        pid = os.fork()
        if pid == 0:
            sys.exit(0)
        _, status = os.waitpid(pid, 0)
        print("child exit status", status, flush=True)
    if sys.argv[1] == "raise":
        raise RuntimeError("the training failed")
    sys.exit(0)
""")

# Only the rules that judge how ranks end (and items) stay on.
QUIET_RULES = "\n".join(f"{rule} {{ enabled: false }}" for rule in (
    "low_flops", "stage_flops_imbalance", "straggler", "collective_wait", "slow_link",
    "pipeline_bubble", "loader_stall", "step_time_regression"))


@pytest.fixture
def quiet_collector(tmp_path):
    for binary in (CLI_BIN,):
        if not binary.exists():
            pytest.skip(f"{binary} is not built")
    rules = tmp_path / "rules.txtpb"
    rules.write_text(QUIET_RULES + "\n")
    # A short grace: a rank that failed to say goodbye while its peers are
    # still there is raised within a second, so the test would see it.
    c = Collector(tmp_path, [f"--rules={rules}", "--lost_device_grace_s=1"]).start()
    try:
        yield c
    finally:
        c.stop()


def trainscope_run(collector, python_dir, job, argv, env=None, timeout_s=240):  # noqa: F811
    return subprocess.run(
        [str(CLI_BIN), "run", "--collector", collector.address, "--job", job, "--python-dir",
         str(python_dir), "--", PYTHON, *argv],
        capture_output=True, text=True, timeout=timeout_s, env=env or clean_env())


def ended(collector, job, ranks):
    """The job's status once `ranks` ranks connected and none is connected any more."""
    def settled():
        result = collector.cli("status", job, "--json", check=False)
        if result.returncode != 0:
            return None
        status = json.loads(result.stdout)
        seen = status.get("ranks", [])
        if len(seen) != ranks or any(r.get("connected") for r in seen):
            return None
        if status["summary"].get("state") == "JOB_STATE_RUNNING":
            return None
        return status
    return wait_for(settled, 60, f"{ranks} ranks of {job} to end", interval_s=0.2)


def job_alerts(collector, job):
    out = collector.cli("alerts", job, "--json", "--feed", collector.feed, "--snapshot",
                        collector.snapshot, timeout_s=60).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def describe(status, alerts, result):
    ranks = [(r.get("rank", 0), r.get("said_goodbye", False)) for r in status.get("ranks", [])]
    return (f"state {status['summary'].get('state')}, (rank, said_goodbye) {ranks}, alerts "
            f"{[(a.get('rule'), a.get('message')) for a in alerts]}\n"
            f"{result.stdout[-3000:]}{result.stderr[-3000:]}")


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_ranks_that_end_normally_say_goodbye_and_the_job_finishes(quiet_collector, python_dir,
                                                                   tmp_path, method):
    collector = quiet_collector
    job = f"clean-{method}-{os.getpid()}"
    script = tmp_path / "train.py"
    script.write_text(SPAWN_SCRIPT)
    result = trainscope_run(collector, python_dir, job,
                            [str(script), str(free_port()), str(WORLD), method])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all ranks done" in result.stdout
    assert "trainscope:" not in result.stderr, result.stderr  # no warning, no failed close
    status = ended(collector, job, WORLD)
    alerts = job_alerts(collector, job)
    what = describe(status, alerts, result)
    assert sorted(int(r.get("rank", 0)) for r in status["ranks"]) == list(range(WORLD)), what
    assert all(r.get("said_goodbye") for r in status["ranks"]), what
    assert status["summary"]["state"] == "JOB_STATE_FINISHED", what
    assert alerts == [], what


def test_a_torchrun_worker_that_calls_sys_exit_says_goodbye(quiet_collector, python_dir,
                                                            tmp_path):
    collector = quiet_collector
    job = f"worker-{os.getpid()}"
    script = tmp_path / "worker.py"
    script.write_text(WORKER_SCRIPT)
    env = clean_env(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    result = trainscope_run(collector, python_dir, job, [str(script), "fork"], env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "child exit status 0" in result.stdout, result.stdout + result.stderr
    status = ended(collector, job, 1)
    alerts = job_alerts(collector, job)
    what = describe(status, alerts, result)
    assert status["ranks"][0].get("said_goodbye"), what
    assert status["summary"]["state"] == "JOB_STATE_FINISHED", what
    assert alerts == [], what


def test_a_worker_that_dies_of_an_exception_says_why(quiet_collector, python_dir, tmp_path):
    collector = quiet_collector
    job = f"failed-{os.getpid()}"
    script = tmp_path / "worker.py"
    script.write_text(WORKER_SCRIPT)
    env = clean_env(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    result = trainscope_run(collector, python_dir, job, [str(script), "raise"], env=env)
    assert result.returncode != 0, result.stdout + result.stderr
    status = ended(collector, job, 1)
    what = describe(status, [], result)
    assert status["ranks"][0].get("exit_error") == "RuntimeError: the training failed", what
    assert status["summary"]["state"] == "JOB_STATE_LOST", what
