"""Fault injection for the example training jobs: the faults a profiler
should find, switched on by flags (a slow rank, a rank at reduced FLOPS, a
slow link or transfer, a stalled data loader, a dead rank).

Kept apart from common.py so that the examples read as examples: a job
creates Faults(args, rank) and calls its hooks where the work happens
(compute, transfers, the loader, each step's start); with no fault flag
given every hook only runs the work.

Usage:
    p = argparse.ArgumentParser()
    add_fault_args(p)
    args = p.parse_args()
    check_fault_args(p, args)
    faults = Faults(args, rank)

Threading: one Faults per rank, used by its training thread (and the DDP
comm hook, which runs while that thread waits in backward()).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Callable, List, Optional

import torch

# Exit code of a rank killed by --kill-rank, so the launcher can name it.
KILLED_EXIT_CODE = 17


def add_fault_args(p: argparse.ArgumentParser) -> None:
    """Adds the "fault injection" flags (the same flags for every example job)."""
    f = p.add_argument_group("fault injection")
    f.add_argument("--slow-rank", type=int, default=-1, help="rank whose compute is slowed")
    f.add_argument("--slow-factor", type=float, default=3.0,
                   help="that rank's forward/backward take this many times as long")
    f.add_argument("--low-flops-rank", type=int, default=-1,
                   help="rank whose operators run at a reduced rate: its forward/backward take "
                        "--slow-factor times as long inside a profiler range (the extra time "
                        "counts as its operators' time, its FLOPs do not grow)")
    f.add_argument("--slow-link", default="",
                   help="A:B: every transfer from rank A to rank B takes --delay-ms longer. "
                        "Pipeline send/recv: inside the timed transfer, the bytes arrive late "
                        "while the sender is on time (the link's bytes/s drop); DDP all_reduce: "
                        "rank A enters it late (user space cannot slow a collective's wire)")
    f.add_argument("--slow-transfer", default="",
                   help="A:B: the pipeline's --slow-link (kept for older scripts)")
    f.add_argument("--delay-ms", type=float, default=50.0)
    f.add_argument("--loader-stall-ms", type=float, default=0.0,
                   help="every batch of the data loader waits this long")
    f.add_argument("--loader-stall-rank", type=int, default=-1,
                   help="stall only this rank's loader (default: every rank)")
    f.add_argument("--imbalance", action="store_true",
                   help="uneven work: pipeline: a much heavier stage 1; DDP: the last rank "
                        "gets a 4x larger batch")
    f.add_argument("--fault-onset", type=int, default=1,
                   help="the slow rank, slow link and loader stall begin at this step (1-based)")
    f.add_argument("--kill-rank", type=int, default=-1, help="this rank dies (os._exit) ...")
    f.add_argument("--at-step", type=int, default=-1, help="... when it starts this step (1-based)")


def check_fault_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Resolves --slow-link/--slow-transfer into args.slow_link_pair and
    args.slow_transfer_pair and refuses inconsistent fault flags (p.error)."""
    if args.slow_link:
        try:
            a, b = (int(x) for x in args.slow_link.split(":"))
        except ValueError:
            p.error(f"--slow-link expects A:B with two rank numbers, got {args.slow_link!r}")
        args.slow_link_pair = (a, b)
    else:
        args.slow_link_pair = None
    args.slow_transfer_pair = None
    if args.slow_transfer:
        try:
            a, b = (int(x) for x in args.slow_transfer.split(":"))
        except ValueError:
            p.error(f"--slow-transfer expects A:B with two rank numbers, got "
                    f"{args.slow_transfer!r}")
        args.slow_transfer_pair = (a, b)
    if args.fault_onset < 1:
        p.error(f"--fault-onset must be a step number >= 1, got {args.fault_onset}")
    if args.kill_rank >= 0 and args.at_step < 1:
        p.error("--kill-rank needs --at-step S with S >= 1")
    if args.slow_factor < 1.0:
        p.error(f"--slow-factor must be >= 1, got {args.slow_factor}")


class Faults:
    """The fault flags, resolved for one rank."""

    def __init__(self, args: argparse.Namespace, rank: int):
        self.rank = rank
        self.slow_factor = args.slow_factor if args.slow_rank == rank else 1.0
        self.low_flops_factor = args.slow_factor if args.low_flops_rank == rank else 1.0
        self.link = args.slow_link_pair
        self.transfer = args.slow_transfer_pair
        self.delay_s = args.delay_ms / 1000.0
        stalled = args.loader_stall_rank < 0 or args.loader_stall_rank == rank
        self.loader_stall_s = args.loader_stall_ms / 1000.0 if stalled else 0.0
        self.kill_at_step = args.at_step if args.kill_rank == rank else -1
        self.onset = args.fault_onset
        self.active = self.onset <= 1  # the timed faults act from step `onset` on
        self.injected_s = 0.0  # total sleep this rank injected, for the stats

    def begin_step(self, step: int) -> None:
        """Called as each step starts: switches the faults on at --fault-onset,
        and dies here on the --kill-rank rank."""
        self.active = step >= self.onset
        if step == self.kill_at_step:
            print(f"rank {self.rank}: --kill-rank: dying at step {step}", flush=True)
            os._exit(KILLED_EXIT_CODE)

    def loader_stall(self) -> float:
        """Seconds the data loader waits before its next batch."""
        return self.loader_stall_s if self.active else 0.0

    def compute(self, fn: Callable[[], Any], stats: "Optional[RankStats]" = None) -> Any:
        """Runs fn; on the slow rank, then waits (factor-1) x its duration.
        The total (with the wait) goes to stats' "compute" timer.

        Sleeping rather than computing more keeps the other ranks' CPU share
        unchanged on a small machine, so only the slow rank looks slow.
        """
        t0 = time.perf_counter()
        if self.low_flops_factor > 1.0 and self.active:
            # --low-flops-rank: the stretch lies inside a profiler range
            # (an operator to a profiler), so this rank's operators take
            # longer for the same FLOPs: a throttled device.
            with torch.autograd.profiler.record_function("example::reduced_rate"):
                out = fn()
                extra = (time.perf_counter() - t0) * (self.low_flops_factor - 1.0)
                self.injected_s += extra
                time.sleep(extra)
        else:
            out = fn()
        if self.slow_factor > 1.0 and self.active:
            extra = (time.perf_counter() - t0) * (self.slow_factor - 1.0)
            self.injected_s += extra
            time.sleep(extra)
        if stats is not None:
            stats.add_time("compute", time.perf_counter() - t0)
        return out

    def chunked(self, src: int, dst: int) -> bool:
        """Whether send/recv transfers from src to dst go in two parts (--slow-link,
        --slow-transfer): from the first step on, so that both ends always agree."""
        return (src, dst) in (self.link, self.transfer)

    def transfer_pause(self, src: int, dst: int) -> float:
        """Seconds the second part of a src->dst transfer takes on the wire,
        waited by the receiver inside its timed recv (--slow-link, --slow-transfer)."""
        if self.active and self.chunked(src, dst):
            self.injected_s += self.delay_s
            return self.delay_s
        return 0.0

    def before_all_reduce(self, group_ranks: List[int]) -> None:
        """Delays this rank's all_reduce when the slow link starts here and
        ends in the group (a ring all_reduce sends to every member)."""
        if (self.active and self.link and self.link[0] == self.rank
                and self.link[1] in group_ranks):
            self.injected_s += self.delay_s
            time.sleep(self.delay_s)
