"""One process, one GPU, a 1-rank NCCL group (NCCL refuses two ranks on one
device), trainscope attached: all-reduces of CUDA tensors, one per step, so
the export shows each c10d collective (host) and what NCCL launched for it,
with the collective's group, sequence and bytes (bench/gpu/gpu_run.py)."""

import argparse
import os
import socket

import torch
import torch.distributed as dist


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--collector", required=True)
    p.add_argument("--job", required=True)
    p.add_argument("--steps", type=int, default=6)
    args = p.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1)
    import trainscope  # noqa: PLC0415
    trainscope.attach(collector=args.collector, job=args.job, halt_grace_s=None)
    x = torch.ones(1 << 20, device="cuda")
    y = torch.ones(1 << 18, device="cuda", dtype=torch.bfloat16)
    for _ in range(args.steps):
        dist.all_reduce(x)
        dist.all_reduce(y)
        (x * 2).sum()
        trainscope.step()
    torch.cuda.synchronize()
    stats = trainscope.stats()
    trainscope.detach(timeout_s=30)
    dist.destroy_process_group()
    print(f"nccl_job: {args.steps} steps, GPU activity {stats.get('gpu_activity')}, "
          f"{stats.get('events_recorded')} events")


if __name__ == "__main__":
    main()
