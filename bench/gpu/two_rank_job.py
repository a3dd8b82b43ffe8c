"""A 2-rank DDP job that never mentions trainscope (bench/gpu/gpu_run.py runs
it under `trainscope run`): gloo, both ranks on one GPU (CUDA tensors: gloo
copies them through the host) or, with --mode cpu, on the CPU. A small CNN
on synthetic data, one optimizer step per iteration."""

import argparse
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, world, port, mode, steps):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    device = torch.device("cuda", 0) if mode == "gpu" else torch.device("cpu")
    torch.manual_seed(rank)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
        torch.nn.Flatten(), torch.nn.Linear(512, 10)).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[0] if mode == "gpu" else None)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(16, 3, 32, 32, device=device)
    y = torch.randint(0, 10, (16,), device=device)
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    total = torch.ones(4, device=device)
    dist.all_reduce(total)  # an explicit collective on a CUDA tensor too
    assert total.sum().item() == 4 * world
    if device.type == "cuda":
        torch.cuda.synchronize()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["gpu", "cpu"], default="gpu")
    p.add_argument("--steps", type=int, default=12)
    args = p.parse_args()
    if args.mode == "gpu" and not torch.cuda.is_available():
        raise SystemExit("two_rank_job: --mode gpu but torch sees no GPU")
    mp.spawn(rank_main, args=(2, free_port(), args.mode, args.steps), nprocs=2, join=True)
    print("two_rank_job: 2 ranks done")


if __name__ == "__main__":
    main()
