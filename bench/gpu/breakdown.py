"""Where trainscope's step-time cost goes on a launch-bound GPU step: the
model of overhead.py (ResNet-50 bf16 on CUDA) timed, interleaved in one
process, under each layer of the recording switched on in turn:

  none         no agent
  ops          every operator, no shapes, no GPU activity
  ops+shapes   every operator with input shapes (FLOPs), no GPU activity
  gpu          every operator and every kernel (CUPTI), no shapes
  full         every operator with shapes and every kernel (the default)
  prof_cpu     torch.profiler, CPU activity only
  prof_full    torch.profiler, CPU+CUDA activities

Each traced variant runs --settle steps after attaching before it is timed,
so CUPTI's first launches of each kernel are not counted. Prints one line
per round and `RESULT {json}` with each variant's median step time and its
ratio to none. Needs a running collector (--collector) and the extension:

  PYTHONPATH=.bundle/trainscope/lib/trainscope/python \\
      python3 bench/gpu/breakdown.py --collector 127.0.0.1:PORT --batch 64
"""

import argparse
import json
import pathlib
import statistics
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from overhead import build, timed  # noqa: E402 (the one model and timer of the GPU run)

TRACED = {
    "ops": {"shapes": False, "gpu": False},
    "ops+shapes": {"shapes": True, "gpu": False},
    "gpu": {"shapes": False, "gpu": True},
    "full": {"shapes": True, "gpu": True},
}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--collector", required=True, help="the agents' address, HOST:PORT")
    p.add_argument("--mode", choices=["gpu", "cpu"], default="gpu")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=20, help="timed steps per variant and round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--settle", type=int, default=5, help="untimed steps after each attach")
    args = p.parse_args()

    import trainscope  # noqa: PLC0415 (after torch)

    step, sync = build(args.mode, args.batch)
    for _ in range(args.settle):
        step()
    cuda = [torch.profiler.ProfilerActivity.CUDA] if args.mode == "gpu" else []
    profilers = {"prof_cpu": [torch.profiler.ProfilerActivity.CPU],
                 "prof_full": [torch.profiler.ProfilerActivity.CPU] + cuda}
    times = {name: [] for name in ["none", *TRACED, *profilers]}
    for r in range(args.rounds):
        times["none"].append(timed(step, sync, args.steps))
        for name, options in TRACED.items():
            trainscope.attach(collector=args.collector, job=f"breakdown-{name}-r{r}",
                              halt_grace_s=None, log_to_stderr=False, **options)
            for _ in range(args.settle):
                step()
            times[name].append(timed(step, sync, args.steps))
            trainscope.detach(timeout_s=30)
        for name, activities in profilers.items():
            with torch.profiler.profile(activities=activities) as prof:
                for _ in range(args.settle):
                    step()
                times[name].append(timed(step, sync, args.steps))
            del prof
        print(f"round {r}: " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in times.items()) + " ms",
              file=sys.stderr, flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print("RESULT " + json.dumps({
        "batch": args.batch, "steps": args.steps, "rounds": args.rounds, "step_ms": med,
        "ratio": {k: v / med["none"] for k, v in med.items()}, "step_ms_all": times}), flush=True)


if __name__ == "__main__":
    main()
