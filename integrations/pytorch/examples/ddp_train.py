#!/usr/bin/python3
"""Data-parallel training (DistributedDataParallel) of a small CNN on real data.

    /usr/bin/python3 integrations/pytorch/examples/ddp_train.py \
        --dataset digits --world-size 4 --steps 300 --batch-size 32 \
        [--collector 127.0.0.1:7070 --job my-job] [fault flags] [--stats-out FILE]

Spawns --world-size ranks (gloo on CPU, NCCL with CUDA), or runs as one rank
under `python3 -m torch.distributed.run --redirects 1 --tee 1 ...`. Every
rank trains on its shard; rank 0 prints progress and the held-out accuracy.
With --collector each rank attaches trainscope; a halt from the collector
checkpoints every rank and stops them all at the same step.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import fault_injection  # noqa: E402


def counting_allreduce_hook(stats: common.RankStats, faults: fault_injection.Faults,
                            group_ranks):
    """DDP comm hook: the default bucket all_reduce, counted (and delayed by
    --slow-link on its source rank). Runs on the autograd thread."""

    def hook(state, bucket):
        stats.count("all_reduce")
        t0 = time.perf_counter()
        faults.before_all_reduce(group_ranks)
        stats.add_time("comm", time.perf_counter() - t0)
        return default_hooks.allreduce_hook(state, bucket)

    return hook


def evaluate(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor,
             device: torch.device) -> float:
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(y), 1000):
            pred = model(common.to_input(x[i:i + 1000], device)).argmax(dim=1).cpu()
            correct += int((pred == y[i:i + 1000]).sum())
    model.train()
    return correct / len(y)


def worker(args: argparse.Namespace) -> None:
    rank, world, _, device = common.setup_rank(args)
    common.seed_all(args.seed)  # identical initial weights (DDP broadcasts rank 0's anyway)
    data = common.load_dataset(args.dataset, args.data_dir)
    x_train, y_train = data["x_train"], data["y_train"]
    if args.train_limit:
        x_train, y_train = x_train[:args.train_limit], y_train[:args.train_limit]
    flipped = flip_labels(y_train, args.label_noise, args.seed) if args.label_noise else None
    hw = x_train.shape[-1]
    faults = fault_injection.Faults(args, rank)
    stats = common.RankStats("ddp", rank, world, args)
    batch = args.batch_size * (4 if args.imbalance and rank == world - 1 else 1)
    stats.d["batch_size"] = batch
    loader = common.ShardLoader(x_train, y_train, batch, rank, world, args.seed,
                                faults.loader_stall)

    features = common.cnn_features(hw)
    model = torch.nn.Sequential(
        features,
        common.cnn_classifier(int(torch.tensor(common.feature_shape(features, hw)).prod()),
                              data["classes"])).to(device)
    ddp = DDP(model, device_ids=[device] if device.type == "cuda" else None)
    ddp.register_comm_hook(None, counting_allreduce_hook(stats, faults, list(range(world))))
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)

    def on_halt(reason: str) -> None:
        step = stats.d["steps_completed"] + 1  # called inside the step being completed
        stats.d["on_halt_calls"] += 1
        stats.d["halt_reason"] = reason
        stats.d["checkpoint"] = common.save_checkpoint(
            args, stats, {"model": model.state_dict(), "optimizer": opt.state_dict()}, step, reason)

    ts = common.maybe_attach_trainscope(args, stats, on_halt)
    lc = None
    if args.loss_contribution:
        from trainscope.loss_contribution import LossContribution  # noqa: PLC0415
        # The features' output (H_s); its first ReLU and itself as maps (H_m).
        # The data set gives each listed item its thumbnail.
        train_set = torch.utils.data.TensorDataset(x_train, y_train)
        lc = LossContribution(ddp, train_set, selection="0", monitored=["0.1", "0"],
                              top_n=args.lc_top_n, every=args.lc_every)

    for step in range(1, args.steps + 1):
        faults.begin_step(step)
        common.offer_on_halt(on_halt)  # for a trainscope attached from outside
        stats.begin_step()
        t0 = time.perf_counter()
        with stats.phase("data_wait"):
            xb, yb = next(loader)
            xb, yb = common.to_input(xb, device), yb.to(device)
        if lc is not None:
            lc.set_epoch(loader.epoch - 1)
            lc.batch(loader.last_index, inputs=xb, labels=yb)
        with stats.phase("forward"):
            loss = faults.compute(lambda: F.cross_entropy(ddp(xb), yb), stats)
        with stats.phase("backward"):
            faults.compute(loss.backward, stats)
        try:
            with stats.phase("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
        except common.halt_exception_types(ts) as e:  # raised after this step's optimizer step
            stats.end_step(time.perf_counter() - t0, loss.item())
            reason = stats.d["halt_reason"] or getattr(e, "reason", str(e))
            stats.d.update(halted=True, halt_step=step, halt_reason=reason)
            print(f"rank {rank} halted at step {step}: {stats.d['halt_reason']}", flush=True)
            break
        stats.end_step(time.perf_counter() - t0, loss.item())
        if rank == 0 and args.log_every and (step % args.log_every == 0 or step == args.steps):
            print(f"ddp[{args.dataset}] step {step}/{args.steps} loss {loss.item():.4f} "
                  f"step {stats.d['timers']['step'][-1] * 1000:.1f} ms", flush=True)

    if lc is not None:
        lc.close()
        stats.d["loss_contribution"] = {
            "flipped": int(flipped.numel()) if flipped is not None else 0,
            # The ground truth for trainscope's difficult_item alerts.
            "flipped_items": sorted(flipped.tolist()) if flipped is not None else [],
            "final_top": [{**e, "flipped": bool(flipped is not None and e["item"] in set(
                flipped.tolist()))} for e in lc.last_top],
            "epochs": lc.epoch + 1}
    if rank == 0 and not stats.d["halted"] and not args.no_eval:
        stats.d["accuracy"] = evaluate(model, data["x_test"], data["y_test"], device)
        print(f"ddp[{args.dataset}] held-out accuracy {stats.d['accuracy']:.4f} "
              f"on {len(data['y_test'])} samples", flush=True)
    common.end_rank(args, stats, ts, faults)  # never returns


def flip_labels(y: torch.Tensor, fraction: float, seed: int) -> torch.Tensor:
    """Symmetric label noise: a seeded `fraction` of the labels, each moved to
    a different class chosen uniformly. Changes y in place; returns the indices."""
    gen = torch.Generator().manual_seed(seed + 7919)
    classes = int(y.max()) + 1
    flipped = torch.randperm(len(y), generator=gen)[:int(round(fraction * len(y)))]
    shift = torch.randint(1, classes, (len(flipped),), generator=gen)
    y[flipped] = (y[flipped] + shift) % classes
    return flipped


def add_ddp_args(p) -> None:
    g = p.add_argument_group("loss contribution (trainscope.LossContribution)")
    g.add_argument("--loss-contribution", action="store_true",
                   help="measure every item's loss contribution; the collector shows the "
                        "difficult items (`trainscope items JOB`, the viewer's Selection view)")
    g.add_argument("--lc-top-n", type=int, default=32, help="items kept (N_s)")
    g.add_argument("--lc-every", type=int, default=20, help="iterations between reports (K)")
    g.add_argument("--label-noise", type=float, default=0.0,
                   help="flip this fraction of the training labels (seeded) to another class")


def main(argv=None) -> int:
    args = common.parse_args("Data-parallel (DDP) CNN training on digits or Fashion-MNIST.", argv,
                             add_ddp_args)
    if not 0.0 <= args.label_noise < 1.0:
        raise SystemExit(f"--label-noise must be in [0, 1), got {args.label_noise}")
    return common.launch(worker, args, lambda results: common.summary_line("ddp", results))


if __name__ == "__main__":
    sys.exit(main())
