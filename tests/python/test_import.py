"""`trainscope import` on traces written by Debian's torch.profiler in a real
4-rank gloo DDP job (one Chrome trace file per rank, the legacy profiler's
format: each rank's clock counts from its own profiler's start): the stored
job has every rank in every step, its clocks aligned on the all-reduces.

Run: /usr/bin/python3 -m pytest tests/python/test_import.py
"""

from __future__ import annotations

import json
import subprocess
import textwrap

from conftest import CLI_BIN
from jobs_util import PYTHON

WORLD = 4
STEPS = 25

SCRIPT = textwrap.dedent("""
    import os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.profiler import profile, ProfilerActivity, record_function

    def run(rank, world, port, out):
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        torch.set_num_threads(1)
        dist.init_process_group("gloo", rank=rank, world_size=world)
        torch.manual_seed(0)
        model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                        torch.nn.Linear(64, 10)))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for step in range(int(sys.argv[2])):
                with record_function(f"ProfilerStep#{step}"):
                    loss = model(torch.randn(32, 64)).sum()
                    loss.backward()
                    opt.step()
                    opt.zero_grad()
        prof.export_chrome_trace(os.path.join(out, f"trace_rank{rank}.json"))
        dist.destroy_process_group()

    if __name__ == "__main__":
        import socket
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
        mp.spawn(run, args=(int(sys.argv[1]), port, sys.argv[3]), nprocs=int(sys.argv[1]))
""")


def cli(*args, check=True):
    result = subprocess.run([str(CLI_BIN), *args], capture_output=True, text=True, timeout=120)
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_import_torch_profiler_traces_of_a_real_4_rank_job(tmp_path):
    script = tmp_path / "profiled_ddp.py"
    script.write_text(SCRIPT)
    traces = tmp_path / "traces"
    traces.mkdir()
    job = subprocess.run([PYTHON, str(script), str(WORLD), str(STEPS), str(traces)],
                         capture_output=True, text=True, timeout=300)
    assert job.returncode == 0, job.stdout[-2000:] + job.stderr[-4000:]
    files = sorted(str(p) for p in traces.glob("trace_rank*.json"))
    assert len(files) == WORLD

    data = tmp_path / "data"
    out = cli("import", "--job", "profiled", "--data-dir", str(data), *files).stdout
    assert "imported job profiled" in out and f"from {WORLD} files" in out, out
    assert "the rules raised" in out, out  # the alerts are in the data dir's index
    collectives = int(out.split(" collectives")[0].split("(")[-1])
    assert collectives >= WORLD * STEPS, out  # DDP's bucket all-reduce, every step

    steps = [json.loads(line) for line in
             cli("steps", "profiled", "--data-dir", str(data), "--json").stdout.splitlines()]
    assert len(steps) >= STEPS - 2, len(steps)
    for step in steps[1:-1]:
        assert sorted(int(d["rank"]) for d in step["devices"]) == list(range(WORLD)), step
    clocks = json.loads(cli("clocks", "profiled", "--data-dir", str(data), "--json").stdout)
    for device in clocks["devices"]:
        assert int(device.get("collective_samples", 0)) > 0, clocks

    listed = cli("alerts", "profiled", "--data-dir", str(data))
    assert listed.returncode == 0

    # Importing again into the same job is refused; a broken file names itself.
    again = cli("import", "--job", "profiled", "--data-dir", str(data), *files, check=False)
    assert again.returncode != 0 and "already exists" in again.stderr
    broken = traces / "trace_rank9.json"
    broken.write_text(open(files[0]).read()[:5000])
    cut = cli("import", "--job", "cut", "--data-dir", str(data), str(broken), check=False)
    assert cut.returncode == 1 and "truncated at byte" in cut.stderr, cut.stderr
