"""Step time of one model and batch size under three variants, interleaved in
one process so that they share the warm caches, clocks and allocator:
no agent, trainscope (every operator; every kernel where GPU activity runs)
and torch.profiler (CPU+CUDA activities). Run by bench/gpu/gpu_run.py.

GPU: torchvision's ResNet-50, bf16 autocast, channels_last, SGD, synthetic
data on the device. CPU: a tiny CNN on 32x32 inputs (CI keeps the command
from rotting; its timings mean nothing). Prints `RESULT {json}`: the median
per-step time of each variant over the rounds and the ratios.
"""

import argparse
import json
import statistics
import sys
import time

import torch


def build(mode, batch):
    if mode == "gpu":
        import torchvision  # noqa: PLC0415 (only the GPU mode needs it)
        device = torch.device("cuda")
        torch.backends.cudnn.benchmark = True
        model = torchvision.models.resnet50().to(device, memory_format=torch.channels_last)
        x = torch.randn(batch, 3, 224, 224, device=device).to(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (batch,), device=device)
    else:
        device = torch.device("cpu")
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
            torch.nn.Flatten(), torch.nn.Linear(256, 10))
        x = torch.randn(batch, 3, 32, 32)
        y = torch.randint(0, 10, (batch,))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=mode == "gpu"):
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    return step, sync


def timed(step, sync, steps):
    sync()
    started = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return (time.perf_counter() - started) / steps * 1e3


def hand_over(args, step, sync, activities, trainscope):
    """torch.profiler (CPU+CUDA) starts and stops while trainscope is attached
    with GPU activity asked for: trainscope must yield CUPTI (the profiler's
    trace has its CUDA kernels), say so once, keep recording operators, and
    record kernels again after the profiler stopped (the job's export)."""
    job = f"handover-{args.mode}-b{args.batch}"
    trainscope.attach(collector=args.collector, job=job, halt_grace_s=None, log_to_stderr=False,
                      gpu=True)
    try:
        step()
        sync()
        before = trainscope.stats()
        with torch.profiler.profile(activities=activities) as prof:
            step()
            step()
            sync()
        during = trainscope.stats()
        step()
        step()
        sync()
        after = trainscope.stats()
    finally:
        trainscope.detach(timeout_s=30)
    cuda_events = 0
    try:
        cuda_events = sum(1 for e in prof.events()
                          if str(getattr(e, "device_type", "")).endswith("CUDA"))
    except Exception:
        pass
    return {"job": job, "yields": after.get("gpu_profiler_yields", 0),
            "gpu_activity_before": before.get("gpu_activity"),
            "gpu_activity_after": after.get("gpu_activity"),
            "operators_during": during["events_recorded"] - before["events_recorded"],
            "profiler_cuda_events": cuda_events, "steps": 4}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["gpu", "cpu"], required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--collector", required=True)
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=5)
    args = p.parse_args()

    import trainscope  # noqa: PLC0415 (after torch; the extension is built already)

    step, sync = build(args.mode, args.batch)
    for _ in range(args.warmup):
        step()
    sync()

    activities = [torch.profiler.ProfilerActivity.CPU]
    if args.mode == "gpu":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    times = {"none": [], "trainscope": [], "profiler": []}
    recorded = dropped = records_lost = out_of_order = 0
    gpu_states = []
    traced_steps = 0
    for r in range(args.rounds):
        times["none"].append(timed(step, sync, args.steps))

        trainscope.attach(collector=args.collector, job=f"overhead-{args.mode}-b{args.batch}-r{r}",
                          halt_grace_s=None, log_to_stderr=False)
        step()  # the first traced step interns every name: not measured
        before = trainscope.stats()
        times["trainscope"].append(timed(step, sync, args.steps))
        after = trainscope.stats()
        trainscope.detach(timeout_s=30)
        final = trainscope.stats()
        recorded += after["events_recorded"] - before["events_recorded"]
        gpu_states.append(after.get("gpu_activity", "n/a"))
        records_lost += final.get("gpu_records_lost", 0)
        out_of_order += final.get("gpu_events_out_of_order", 0)
        dropped += final["dropped_ring_full"] + final["dropped_buffer_full"] + \
            final["dropped_shutdown"]
        traced_steps += args.steps

        with torch.profiler.profile(activities=activities) as prof:
            step()  # as above: the profiler's first step sets up
            times["profiler"].append(timed(step, sync, args.steps))
        del prof  # its trace is processed on exit, outside the measured steps
        print(f"round {r}: " + ", ".join(f"{k} {v[-1]:.2f} ms" for k, v in times.items()),
              file=sys.stderr, flush=True)

    handover = hand_over(args, step, sync, activities, trainscope)

    med = {k: statistics.median(v) for k, v in times.items()}
    result = {
        "batch": args.batch, "steps_per_round": args.steps, "rounds": args.rounds,
        "step_ms": med, "step_ms_all": times,
        "ratio_trainscope": med["trainscope"] / med["none"],
        "ratio_profiler": med["profiler"] / med["none"],
        "trainscope_vs_profiler": med["trainscope"] / med["profiler"],
        # Host-side and GPU events alike (the agent counts both as recorded).
        "events_per_step": recorded / traced_steps,
        "gpu_activity_per_round": gpu_states,
        "gpu_records_lost": records_lost,
        "gpu_events_out_of_order": out_of_order,
        "handover": handover,
        "jobs": [f"overhead-{args.mode}-b{args.batch}-r{r}" for r in range(args.rounds)],
        "traced_steps_per_job": args.steps + 1,
        "events_dropped": dropped,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if args.mode == "gpu" else "cpu",
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
