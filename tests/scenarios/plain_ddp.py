"""A plain 4-rank DDP training loop (gloo, CPU, torch.multiprocessing.spawn)
that never mentions the profiler: no import, no phase marks, no step marks.
tests/scenarios/test_rules_fire.py runs it under `trainscope run`, so what the
collector sees comes from the unmarked path (phases inferred from operators,
steps from optimizer steps).

    plain_ddp.py PORT STEPS SLOW_RANK FACTOR ONSET

From step ONSET (1-based) on, rank SLOW_RANK's forward and backward take
FACTOR times as long (it sleeps (FACTOR-1) x the measured compute after each);
SLOW_RANK -1: no slow rank.
"""
import sys, time
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

WORLD = 4


def run(rank, port, steps, slow_rank, factor, onset):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=WORLD)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32 * 4 * 4, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(rank)
    x = torch.randn(512, 1, 8, 8, generator=gen)
    y = torch.randint(0, 10, (512,), generator=gen)

    def timed(fn, slow):
        t0 = time.perf_counter()
        out = fn()
        if slow:
            time.sleep((time.perf_counter() - t0) * (factor - 1))
        return out

    for step in range(1, steps + 1):
        slow = rank == slow_rank and step >= onset
        i = (step * 32) % 480
        xb, yb = x[i:i + 32], y[i:i + 32]
        opt.zero_grad()
        loss = timed(lambda: F.cross_entropy(ddp(xb), yb), slow)
        timed(loss.backward, slow)
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    port, steps, slow_rank, factor, onset = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                             float(sys.argv[4]), int(sys.argv[5]))
    mp.spawn(run, args=(port, steps, slow_rank, factor, onset), nprocs=WORLD, join=True)
    print("plain ddp: done", flush=True)
