#!/usr/bin/python3
"""Pipeline-parallel training: 2 stages x (world/2) data-parallel replicas.

    /usr/bin/python3 integrations/pytorch/examples/pipeline_train.py \
        --dataset digits --world-size 4 --steps 200 --batch-size 32 \
        [--micro-batches 4] [--schedule gpipe|1f1b] [--collector HOST:PORT] [fault flags]

Ranks 0..R-1 hold stage 0 (the convolutions), ranks R..2R-1 stage 1 (the
classifier and the loss), R = world/2; rank r of stage 0 feeds rank r+R
(with 4 ranks: 0->2, 1->3): activations go forward with send/recv, their
gradients come back. Each stage's replicas all_reduce their gradients once
per step in their own process group. The batch is split into micro-batches
run with a GPipe schedule (all forwards, then all backwards) or 1F1B.
--imbalance makes stage 1 much heavier, so stage 0 waits on it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import List

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import fault_injection  # noqa: E402


def add_pipeline_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--micro-batches", type=int, default=4,
                   help="micro-batches per step (must divide --batch-size)")
    p.add_argument("--schedule", choices=["gpipe", "1f1b"], default="gpipe")


def split_point(numel: int) -> int:
    """Where --slow-link splits a transfer: an eighth of it goes first."""
    return max(1, numel // 8)


class PipelineRank:
    """One rank's half of the model and its side of the send/recv protocol."""

    def __init__(self, args: argparse.Namespace, rank: int, world: int, device: torch.device,
                 stats: common.RankStats, faults: fault_injection.Faults, hw: int,
                 classes: int):
        if world < 2 or world % 2:
            raise ValueError(f"pipeline needs an even world size >= 2, got {world}")
        if args.batch_size % args.micro_batches:
            raise ValueError(f"--micro-batches {args.micro_batches} must divide "
                             f"--batch-size {args.batch_size}")
        self.args, self.rank, self.device = args, rank, device
        self.stats, self.faults = stats, faults
        self.replicas = world // 2
        self.stage = rank // self.replicas
        self.replica = rank % self.replicas
        self.peer = rank + self.replicas if self.stage == 0 else rank - self.replicas
        # Every rank creates every group, in the same order (new_group's contract).
        groups = [list(range(s * self.replicas, (s + 1) * self.replicas)) for s in (0, 1)]
        made = [dist.new_group(g) for g in groups]
        self.group_ranks = groups[self.stage]
        self.group = made[self.stage]

        # Same seed everywhere: both halves, and every replica, start identical.
        common.seed_all(args.seed)
        features = common.cnn_features(hw)
        self.act_shape = common.feature_shape(features, hw)
        in_features = int(torch.tensor(self.act_shape).prod())
        classifier = (common.cnn_classifier(in_features, classes, extra_layers=2, extra_width=512)
                      if args.imbalance else common.cnn_classifier(in_features, classes))
        self.module = (features if self.stage == 0 else classifier).to(device)
        self.opt = torch.optim.SGD(self.module.parameters(), lr=args.lr, momentum=0.9)
        self.micro = args.batch_size // args.micro_batches
        self.pending_sends: List[dist.Work] = []

    # -- transfers -----------------------------------------------------------

    def send(self, t: torch.Tensor) -> None:
        self.stats.count("send")
        t = t.contiguous()
        if self.faults.chunked(self.rank, self.peer):
            # --slow-link: a small head, then the rest; both posted now
            # (the sender is on time), the receiver takes the rest slowly.
            flat = t.view(-1)
            head = split_point(flat.numel())
            self.pending_sends.append(dist.isend(flat[:head], self.peer))
            self.pending_sends.append(dist.isend(flat[head:], self.peer))
        else:
            self.pending_sends.append(dist.isend(t, self.peer))

    def recv(self, shape) -> torch.Tensor:
        buf = torch.empty(shape, device=self.device)
        self.stats.count("recv")
        t0 = time.perf_counter()
        if self.faults.chunked(self.peer, self.rank):
            # --slow-link: the head's recv waits for the sender as any
            # recv does; once it is in, both ends have started the rest, and
            # the rest arrives --delay-ms later (inside its timed recv, so the
            # link's bytes/s drop and nobody is waiting for a late peer).
            flat = buf.view(-1)
            head = split_point(flat.numel())
            dist.irecv(flat[:head], self.peer).wait()
            rest = dist.irecv(flat[head:], self.peer)
            pause = self.faults.transfer_pause(self.peer, self.rank)
            if pause > 0:
                time.sleep(pause)
            rest.wait()
        else:
            dist.irecv(buf, self.peer).wait()
        self.stats.add_time("recv_wait", time.perf_counter() - t0)
        return buf

    def wait_sends(self) -> None:
        for w in self.pending_sends:
            w.wait()
        self.pending_sends.clear()

    # -- one step ------------------------------------------------------------

    def train_step(self, xb: torch.Tensor, yb: torch.Tensor) -> float:
        """Runs the schedule for one batch; returns the loss (stage 1) or nan."""
        xs = xb.chunk(self.args.micro_batches)
        ys = yb.chunk(self.args.micro_batches)
        mb_shape = (self.micro,) + self.act_shape
        saved = []  # per micro-batch: (output to backprop, input activation or None)
        losses: List[float] = []

        def forward(m: int) -> None:
            with self.stats.phase("forward"):
                if self.stage == 0:
                    out = self.faults.compute(lambda: self.module(xs[m]), self.stats)
                    self.send(out.detach())
                    saved.append((out, None))
                else:
                    act = self.recv(mb_shape).requires_grad_()
                    loss = self.faults.compute(
                        lambda: F.cross_entropy(self.module(act), ys[m]) / self.args.micro_batches,
                        self.stats)
                    losses.append(loss.item())
                    saved.append((loss, act))

        def backward(m: int) -> None:
            with self.stats.phase("backward"):
                out, act = saved[m]
                if self.stage == 0:
                    grad = self.recv(mb_shape)
                    self.faults.compute(lambda: out.backward(grad), self.stats)
                else:
                    self.faults.compute(out.backward, self.stats)
                    self.send(act.grad)
                saved[m] = (None, None)

        m_count = self.args.micro_batches
        if self.args.schedule == "gpipe":
            for m in range(m_count):
                forward(m)
            for m in range(m_count):
                backward(m)
        elif self.stage == 1:  # 1F1B on the last stage: each forward is followed by its backward
            for m in range(m_count):
                forward(m)
                backward(m)
        else:  # 1F1B on stage 0: one micro-batch of warm-up, then alternate
            forward(0)
            for m in range(1, m_count):
                forward(m)
                backward(m - 1)
            backward(m_count - 1)
        self.wait_sends()
        self.all_reduce_grads()
        return sum(losses) if losses else float("nan")

    def all_reduce_grads(self) -> None:
        """Averages gradients over this stage's replicas with one flat all_reduce."""
        if self.replicas == 1:
            return
        t0 = time.perf_counter()
        grads = [p.grad for p in self.module.parameters()]
        flat = torch.cat([g.reshape(-1) for g in grads])
        self.faults.before_all_reduce(self.group_ranks)
        self.stats.count("all_reduce")
        dist.all_reduce(flat, group=self.group)
        flat /= self.replicas
        offset = 0
        for g in grads:
            g.copy_(flat[offset:offset + g.numel()].view_as(g))
            offset += g.numel()
        self.stats.add_time("comm", time.perf_counter() - t0)

    # -- held-out accuracy (replica 0's pair only, after training) -------------

    def evaluate(self, x: torch.Tensor, y: torch.Tensor, chunk: int = 500):
        """Stage 0 streams test activations to its peer; stage 1 returns accuracy."""
        self.module.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(y), chunk):
                n = min(chunk, len(y) - i)
                if self.stage == 0:
                    out = self.module(common.to_input(x[i:i + n], self.device))
                    dist.send(out.contiguous(), self.peer)
                else:
                    act = torch.empty((n,) + self.act_shape, device=self.device)
                    dist.recv(act, self.peer)
                    pred = self.module(act).argmax(dim=1).cpu()
                    correct += int((pred == y[i:i + n]).sum())
        self.module.train()
        return correct / len(y) if self.stage == 1 else None


def worker(args: argparse.Namespace) -> None:
    rank, world, _, device = common.setup_rank(args)
    data = common.load_dataset(args.dataset, args.data_dir)
    x_train, y_train = data["x_train"], data["y_train"]
    if args.train_limit:
        x_train, y_train = x_train[:args.train_limit], y_train[:args.train_limit]
    faults = fault_injection.Faults(args, rank)
    stats = common.RankStats("pipeline", rank, world, args)
    pr = PipelineRank(args, rank, world, device, stats, faults, x_train.shape[-1], data["classes"])
    stats.d.update(stage=pr.stage, replica=pr.replica, peer=pr.peer, schedule=args.schedule,
                   micro_batches=args.micro_batches, batch_size=args.batch_size)
    # Both ranks of a pair draw the same batches: stage 1 takes its labels from its own copy.
    loader = common.ShardLoader(x_train, y_train, args.batch_size, pr.replica, pr.replicas,
                                args.seed, faults.loader_stall)

    def on_halt(reason: str) -> None:
        step = stats.d["steps_completed"] + 1
        stats.d["on_halt_calls"] += 1
        stats.d["halt_reason"] = reason
        stats.d["checkpoint"] = common.save_checkpoint(
            args, stats, {"stage": pr.stage, "module": pr.module.state_dict(),
                          "optimizer": pr.opt.state_dict()}, step, reason)

    # This rank's pipeline stage for trainscope, however it gets in: a later
    # `trainscope attach --pid` reads it from the environment; a trainscope
    # already loaded (--collector, or TRAINSCOPE_COLLECTOR's auto-attach, done
    # or still waiting for the rank) is told directly.
    os.environ["TRAINSCOPE_STAGE"] = str(pr.stage)
    ts = common.maybe_attach_trainscope(args, stats, on_halt)
    loaded = ts or sys.modules.get("trainscope")
    if loaded is not None and hasattr(loaded, "set_stage"):
        loaded.set_stage(pr.stage)
    log_rank = pr.replicas  # replica 0 of the last stage sees the loss

    for step in range(1, args.steps + 1):
        faults.begin_step(step)
        common.offer_on_halt(on_halt)  # for a trainscope attached from outside
        stats.begin_step()
        t0 = time.perf_counter()
        with stats.phase("data_wait"):
            xb, yb = next(loader)
            xb, yb = common.to_input(xb, device), yb.to(device)
        loss = pr.train_step(xb, yb)
        loss_value = loss if pr.stage == 1 else None
        try:
            with stats.phase("optimizer"):
                pr.opt.step()
                pr.opt.zero_grad(set_to_none=True)
        except common.halt_exception_types(ts) as e:
            stats.end_step(time.perf_counter() - t0, loss_value)
            reason = stats.d["halt_reason"] or getattr(e, "reason", str(e))
            stats.d.update(halted=True, halt_step=step, halt_reason=reason)
            print(f"rank {rank} halted at step {step}: {stats.d['halt_reason']}", flush=True)
            break
        stats.end_step(time.perf_counter() - t0, loss_value)
        if rank == log_rank and args.log_every and (step % args.log_every == 0
                                                     or step == args.steps):
            print(f"pipeline[{args.dataset},{args.schedule}] step {step}/{args.steps} "
                  f"loss {loss:.4f} step {stats.d['timers']['step'][-1] * 1000:.1f} ms", flush=True)

    if pr.replica == 0 and not stats.d["halted"] and not args.no_eval:
        acc = pr.evaluate(data["x_test"], data["y_test"])
        if acc is not None:
            stats.d["accuracy"] = acc
            print(f"pipeline[{args.dataset}] held-out accuracy {acc:.4f} "
                  f"on {len(data['y_test'])} samples", flush=True)
    common.end_rank(args, stats, ts, faults)  # never returns


def main(argv=None) -> int:
    args = common.parse_args("Pipeline-parallel (2 stages x data-parallel) CNN training.", argv,
                             add_pipeline_args)
    return common.launch(worker, args, lambda results: common.summary_line("pipeline", results))


if __name__ == "__main__":
    sys.exit(main())
