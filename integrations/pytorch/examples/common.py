"""Shared parts of the example training jobs: arguments, data, timers, the
multi-process launcher and the optional trainscope attachment (the fault
flags and their effects are in fault_injection.py).

The jobs (ddp_train.py, pipeline_train.py) train for real on real data with
several processes (gloo on CPU, NCCL when CUDA is present) and can inject the
faults a profiler should find: a slow rank, a slow link, a stalled data
loader, uneven work, a dead rank. Every rank records what it did (timers per
step, the collectives it issued) into a JSON file so that tests can compare
those numbers with what trainscope recorded.

Threading: each rank is one process with one training thread; the DDP comm
hook runs on the autograd thread, so the counters it bumps are plain ints
read only after backward() has returned (backward joins that thread).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gzip
import json
import os
import random
import socket
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np
import torch
import torch.distributed as dist

import fault_injection
from fault_injection import KILLED_EXIT_CODE

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"


# --------------------------------------------------------------------------
# Arguments


def parse_args(description: str, argv: Optional[List[str]] = None,
               add_job_args: Optional[Callable[[argparse.ArgumentParser], None]] = None
               ) -> argparse.Namespace:
    """Parses the flags both jobs share; add_job_args adds a job's own."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--dataset", choices=["digits", "fashion-mnist"], default="digits")
    p.add_argument("--world-size", type=int, default=4,
                   help="ranks to spawn (ignored when RANK/WORLD_SIZE are set by a launcher)")
    p.add_argument("--steps", type=int, default=200, help="optimizer steps per rank")
    p.add_argument("--batch-size", type=int, default=32, help="samples per rank per step")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=20,
                   help="progress line every N steps (0: none)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                   help="auto: CUDA (NCCL) when available, else CPU (gloo)")
    p.add_argument("--timeout-s", type=float, default=30.0,
                   help="collective timeout, so a dead peer cannot hang the job forever")
    p.add_argument("--data-dir", default=FASHION_MNIST_DIR,
                   help="directory of the Fashion-MNIST IDX files (*-idx?-ubyte[.gz])")
    p.add_argument("--train-limit", type=int, default=0,
                   help="use at most this many training samples (0: all)")
    p.add_argument("--no-eval", action="store_true", help="skip the held-out accuracy at the end")
    p.add_argument("--stats-out", default="",
                   help="write every rank's timers and counts here (JSON); ranks also write "
                        "FILE.rank<R>.json")
    # trainscope
    p.add_argument("--collector", default=os.environ.get("TRAINSCOPE_COLLECTOR", ""),
                   help="HOST:PORT of a trainscope collector: attach trainscope on every rank "
                        "(default: env TRAINSCOPE_COLLECTOR; empty: run without trainscope)")
    p.add_argument("--job", default=os.environ.get("TRAINSCOPE_JOB", ""),
                   help="trainscope job name (default: the plugin's choice)")
    p.add_argument("--token", default=os.environ.get("TRAINSCOPE_TOKEN", ""),
                   help="trainscope job token (default: env TRAINSCOPE_TOKEN, else the "
                        "collector's)")
    p.add_argument("--dormant", action="store_true",
                   help="attach with recording off (switch on with `trainscope enable JOB`)")
    p.add_argument("--test-clock-skew", default="",
                   help="TEST ONLY: OFFSET_NS[:DRIFT_PPM] per rank, comma-separated, applied to "
                        "what trainscope records (checks clock alignment on a real job)")
    p.add_argument("--racks", default="",
                   help="RACK per rank, comma-separated: each rank's TRAINSCOPE_RACK, as a "
                        "launcher sets it per node (the viewer groups hosts by rack)")
    p.add_argument("--checkpoint-dir", default="",
                   help="where on_halt saves a checkpoint (default: a temp dir)")
    fault_injection.add_fault_args(p)
    if add_job_args:
        add_job_args(p)
    args = p.parse_args(argv)
    fault_injection.check_fault_args(p, args)
    return args


# --------------------------------------------------------------------------
# Data


def load_dataset(name: str, data_dir: str = FASHION_MNIST_DIR) -> Dict[str, Any]:
    """Returns uint8/float images (N,1,H,W) and int64 labels, split train/test.

    digits: sklearn's 8x8 digits (1797 images, values 0..16), 80/20 split with
    a fixed permutation; fashion-mnist: the IDX files of Debian's
    dataset-fashion-mnist (60000 train, 10000 test, 28x28, uint8).
    """
    if name == "digits":
        images, target = load_digits_arrays()
        x = torch.from_numpy((images * (255.0 / 16.0)).round().astype(np.uint8)).unsqueeze(1)
        y = torch.from_numpy(target.astype(np.int64))
        perm = torch.from_numpy(np.random.RandomState(1234).permutation(len(y)))
        x, y = x[perm], y[perm]
        n_test = len(y) // 5
        return {"x_train": x[n_test:], "y_train": y[n_test:],
                "x_test": x[:n_test], "y_test": y[:n_test], "classes": 10}
    if name == "fashion-mnist":
        def idx(stem: str) -> torch.Tensor:
            for candidate in (stem + ".gz", stem):
                path = os.path.join(data_dir, candidate)
                if os.path.exists(path):
                    return read_idx(path)
            raise FileNotFoundError(f"{stem}[.gz] not found in {data_dir} (Debian package "
                                    f"dataset-fashion-mnist, or --data-dir)")
        return {"x_train": idx("train-images-idx3-ubyte").unsqueeze(1),
                "y_train": idx("train-labels-idx1-ubyte").long(),
                "x_test": idx("t10k-images-idx3-ubyte").unsqueeze(1),
                "y_test": idx("t10k-labels-idx1-ubyte").long(),
                "classes": 10}
    raise ValueError(f"unknown dataset {name!r}: expected 'digits' or 'fashion-mnist'")


def load_digits_arrays() -> Tuple[np.ndarray, np.ndarray]:
    """sklearn's digits as (images (1797,8,8) float 0..16, target (1797,) int).

    Reads the CSV that sklearn bundles (what sklearn.datasets.load_digits
    parses) without importing sklearn, which costs each rank ~1.5 s of CPU;
    falls back to load_digits() if the file is not where expected.
    """
    import importlib.util
    spec = importlib.util.find_spec("sklearn")
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(root, "datasets", "data", "digits.csv.gz")
        if os.path.exists(path):
            table = np.loadtxt(path, delimiter=",")
            return table[:, :-1].reshape(-1, 8, 8), table[:, -1].astype(np.int64)
    from sklearn.datasets import load_digits
    d = load_digits()
    return d.images, d.target


_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str) -> torch.Tensor:
    """Reads an IDX file (LeCun's MNIST format), gzipped or not."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: not an IDX file (magic bytes {data[:4]!r})")
    type_code, ndim = data[2], data[3]
    if type_code not in _IDX_DTYPES:
        raise ValueError(f"{path}: unknown IDX element type 0x{type_code:02x}")
    header = 4 + 4 * ndim
    dims = tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    arr = np.frombuffer(data, dtype=_IDX_DTYPES[type_code], offset=header)
    if arr.size != int(np.prod(dims)):
        raise ValueError(f"{path}: header says {dims} ({int(np.prod(dims))} elements), "
                         f"file holds {arr.size}")
    return torch.from_numpy(arr.reshape(dims).astype(arr.dtype.newbyteorder("=")).copy())


def to_input(x_uint8: torch.Tensor, device: torch.device) -> torch.Tensor:
    return (x_uint8.to(device=device, dtype=torch.float32) / 255.0 - 0.5) / 0.5


class ShardLoader:
    """Endless batches from this replica's shard, reshuffled every epoch.

    Replicas with the same (seed, replica, num_replicas) draw the same batches,
    which is how a pipeline's last stage gets the labels that match the
    activations its peer sends. stall() gives the --loader-stall-ms fault's
    wait before each batch.
    """

    def __init__(self, x: torch.Tensor, y: torch.Tensor, batch_size: int, replica: int,
                 num_replicas: int, seed: int, stall: Callable[[], float] = lambda: 0.0):
        self.x, self.y = x, y
        self.batch_size = batch_size
        self.indices = torch.arange(replica, len(y), num_replicas)
        if len(self.indices) < batch_size:
            raise ValueError(f"shard of replica {replica} has {len(self.indices)} samples, "
                             f"fewer than --batch-size {batch_size}")
        self.gen = torch.Generator().manual_seed(seed * 1000003 + replica)
        self.stall = stall
        self._order = torch.empty(0, dtype=torch.long)
        self._pos = 0
        self.epoch = 0
        self.last_index = torch.empty(0, dtype=torch.long)

    def __iter__(self) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        return self

    def __next__(self) -> Tuple[torch.Tensor, torch.Tensor]:
        if self._pos + self.batch_size > len(self._order):
            self._order = self.indices[torch.randperm(len(self.indices), generator=self.gen)]
            self._pos = 0
            self.epoch += 1
        idx = self._order[self._pos:self._pos + self.batch_size]
        self.last_index = idx  # the items' data set indices (trainscope.LossContribution)
        self._pos += self.batch_size
        stall_s = self.stall()
        if stall_s > 0:
            time.sleep(stall_s)
        return self.x[idx], self.y[idx]


# --------------------------------------------------------------------------
# Models


def cnn_features(hw: int) -> torch.nn.Sequential:
    """Convolutional front: 1xHxW -> 32 x (H/2 or H/4)^2."""
    layers: List[torch.nn.Module] = [torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU()]
    if hw >= 16:  # Fashion-MNIST: pool twice; digits (8x8): once
        layers.append(torch.nn.MaxPool2d(2))
    layers += [torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2)]
    return torch.nn.Sequential(*layers)


def cnn_classifier(in_features: int, classes: int, hidden: int = 128,
                   extra_layers: int = 0, extra_width: int = 0) -> torch.nn.Sequential:
    """Flatten + MLP head; extra_layers of extra_width make it deliberately heavy."""
    layers: List[torch.nn.Module] = [torch.nn.Flatten()]
    width = in_features
    if extra_layers > 0:
        layers += [torch.nn.Linear(width, extra_width), torch.nn.ReLU()]
        width = extra_width
        for _ in range(extra_layers - 1):
            layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    layers += [torch.nn.Linear(width, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, classes)]
    return torch.nn.Sequential(*layers)


def feature_shape(features: torch.nn.Module, hw: int) -> Tuple[int, ...]:
    with torch.no_grad():
        return tuple(features(torch.zeros(1, 1, hw, hw)).shape[1:])


# --------------------------------------------------------------------------
# Timers and stats


class RankStats:
    """What one rank did: per-step timers and the collectives it issued."""

    PHASES = ("data_wait", "forward", "backward", "optimizer")

    def __init__(self, kind: str, rank: int, world_size: int, args: argparse.Namespace):
        self.d: Dict[str, Any] = {
            "kind": kind, "rank": rank, "world_size": world_size, "dataset": args.dataset,
            "pid": os.getpid(), "steps_requested": args.steps, "steps_completed": 0,
            "halted": False, "halt_step": None, "halt_reason": None, "on_halt_calls": 0,
            "checkpoint": None, "killed": False,
            "timers": {k: [] for k in ("step",) + self.PHASES + ("compute", "recv_wait", "comm")},
            "collectives": {"all_reduce": 0, "send": 0, "recv": 0, "broadcast": 0, "barrier": 0},
            "collectives_per_step": [], "losses": [], "accuracy": None,
            "injected_s": 0.0, "trainscope": {"attached": False},
        }
        self._step_counts: Dict[str, int] = {}
        self._step_timers: Dict[str, float] = {}
        self.ts = None  # the trainscope module when attached

    def begin_step(self) -> None:
        self._step_counts = {k: 0 for k in self.d["collectives"]}
        self._step_timers = {k: 0.0 for k in self.d["timers"] if k != "step"}

    def count(self, kind: str, n: int = 1) -> None:
        self.d["collectives"][kind] += n
        self._step_counts[kind] = self._step_counts.get(kind, 0) + n

    def add_time(self, name: str, seconds: float) -> None:
        self._step_timers[name] = self._step_timers.get(name, 0.0) + seconds

    @contextlib.contextmanager
    def phase(self, name: str):
        """Times a phase of the step; also marks it in trainscope when attached."""
        cm = self.ts.phase(name) if self.ts is not None and name in self.PHASES else None
        t0 = time.perf_counter()
        try:
            if cm is None:
                yield
            else:
                with cm:
                    yield
        finally:
            self.add_time(name, time.perf_counter() - t0)

    def end_step(self, step_seconds: float, loss: Optional[float]) -> None:
        self.d["steps_completed"] += 1
        self.d["timers"]["step"].append(step_seconds)
        for k, v in self._step_timers.items():
            self.d["timers"][k].append(v)
        self.d["collectives_per_step"].append(dict(self._step_counts))
        if loss is not None:
            self.d["losses"].append(loss)

    def write(self, path: str) -> None:
        write_json_atomic(path, self.d)


def rank_stats_path(stats_out: str, rank: int) -> str:
    return f"{stats_out}.rank{rank}.json"


def write_json_atomic(path: str, obj: Any) -> None:
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-stats-")
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


# --------------------------------------------------------------------------
# Process group, device, trainscope


def setup_rank(args: argparse.Namespace) -> Tuple[int, int, int, torch.device]:
    """Initialises the process group from RANK/WORLD_SIZE/MASTER_* (env://)."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    torch.set_num_threads(1)
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if use_cuda:
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if use_cuda else "gloo", init_method="env://",
                            rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.timeout_s))
    return rank, world, local_rank, device


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def maybe_attach_trainscope(args: argparse.Namespace, stats: RankStats,
                            on_halt: Callable[[str], None]):
    """Attaches trainscope when a collector is named; returns the module or None.

    Imported lazily: the examples run without trainscope installed.
    """
    if not args.collector:
        return None
    if args.test_clock_skew:
        skews = args.test_clock_skew.split(",")
        rank = stats.d["rank"]
        offset, _, drift = (skews[rank] if rank < len(skews) else "0").partition(":")
        os.environ["TRAINSCOPE_TEST_CLOCK_OFFSET_NS"] = offset or "0"
        os.environ["TRAINSCOPE_TEST_CLOCK_DRIFT_PPM"] = drift or "0"
    if args.racks:
        racks = args.racks.split(",")
        rank = stats.d["rank"]
        if rank < len(racks):
            os.environ["TRAINSCOPE_RACK"] = racks[rank]  # the agent reads it as it starts
    import trainscope  # noqa: PLC0415 (optional dependency)
    kwargs: Dict[str, Any] = {"collector": args.collector, "on_halt": on_halt}
    if args.job:
        kwargs["job"] = args.job
    if args.token:
        kwargs["token"] = args.token
    if args.dormant:
        kwargs["recording"] = False
    trainscope.attach(**kwargs)
    stats.ts = trainscope
    stats.d["trainscope"] = {"attached": True, "collector": args.collector, "job": args.job}
    return trainscope


def halt_exception_types(ts=None) -> Tuple[type, ...]:
    """(trainscope.HaltRequested,) once trainscope is loaded in this process,
    however it came (--collector, TRAINSCOPE_COLLECTOR, or `trainscope attach
    --pid` from outside, after the job started), else (). Meant for the
    except clause itself, which is evaluated only when something is raised."""
    ts = ts if ts is not None else sys.modules.get("trainscope")
    halt = getattr(ts, "HaltRequested", None)
    return (halt,) if halt is not None else ()


def offer_on_halt(on_halt: Callable[[str], None]) -> None:
    """Hands the rank's checkpointing on_halt to a trainscope session that has
    none, i.e. one attached from outside (`trainscope attach --pid`). Called
    once per step: without trainscope it costs one dict lookup."""
    ts = sys.modules.get("trainscope")
    session = ts.session() if ts is not None and hasattr(ts, "session") else None
    if session is not None and getattr(session, "on_halt", on_halt) is None:
        session.on_halt = on_halt


def finish_trainscope(ts, stats: RankStats) -> None:
    """Detaches (which flushes) and records the agent's final delivery counters;
    also a trainscope attached from outside (`trainscope attach --pid`)."""
    if ts is None:
        ts = sys.modules.get("trainscope")
        if ts is None or not getattr(ts, "is_attached", lambda: False)():
            return
    try:
        before = ts.stats()
    except Exception as e:  # keep the job's result even if stats() is unavailable
        before = {"error": repr(e)}
    ts.detach()
    try:
        after = ts.stats()
    except Exception as e:
        after = {"error": repr(e)}
    stats.d["trainscope"]["stats_before_detach"] = _jsonable(before)
    stats.d["trainscope"]["stats"] = _jsonable(after)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (int, float, str, bool)) or obj is None:
        return obj
    return repr(obj)


def save_checkpoint(args: argparse.Namespace, stats: RankStats, state: Dict[str, Any],
                    step: int, reason: str) -> str:
    d = args.checkpoint_dir or os.path.join(tempfile.gettempdir(), "trainscope-example-ckpt")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"rank{stats.d['rank']}-step{step}.pt")
    torch.save({"step": step, "reason": reason, **state}, path)
    return path


# --------------------------------------------------------------------------
# Launcher


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def end_rank(args: argparse.Namespace, stats: RankStats, ts,
            faults: fault_injection.Faults) -> None:
    """Ends a rank that finished its work: records what the faults injected,
    detaches trainscope, writes the rank's stats, destroys the process group,
    then leaves with os._exit(0) while the model is still referenced.

    Why: on torch 1.13 a DDP Reducer freed at the end of the worker (or at
    interpreter teardown) joins gloo's worker threads while holding the GIL,
    and a gloo thread that is releasing the Python comm hook's objects waits
    for the GIL: the rank hangs forever (seen about 1 run in 10 here). Call
    only after stdout has been flushed.
    """
    stats.d["injected_s"] = faults.injected_s
    finish_trainscope(ts, stats)
    if args.stats_out:
        stats.write(rank_stats_path(args.stats_out, stats.d["rank"]))
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _rank_entry(worker: Callable, args: argparse.Namespace) -> None:
    try:
        worker(args)
    except SystemExit:
        raise
    except BaseException:
        rank = os.environ.get("RANK", "?")
        sys.stderr.write(f"rank {rank} failed:\n{traceback.format_exc()}")
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.flush()
    sys.stderr.flush()


def launch(worker: Callable[[argparse.Namespace], None], args: argparse.Namespace,
           summarize: Callable[[List[Dict[str, Any]]], str]) -> int:
    """Runs worker(args) on every rank and returns the job's exit code.

    Launched by torch.distributed.run (RANK set): this process is one rank.
    Otherwise spawns --world-size processes (spawn start method) with
    RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT in their environment
    from interpreter start, so anything that attaches early sees them too.
    If a rank fails, the others get a few seconds to notice, then are
    terminated; the launcher names the first rank that failed and exits 1.
    """
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        _rank_entry(worker, args)
        return 0

    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    world = args.world_size
    own_stats_dir = None
    if not args.stats_out:  # the final summary line is made from the ranks' stats
        own_stats_dir = tempfile.mkdtemp(prefix="trainscope-example-stats-")
        args.stats_out = os.path.join(own_stats_dir, "stats.json")
    try:
        return _spawn_and_wait(ctx, worker, args, world, summarize)
    finally:
        if own_stats_dir:
            for name in os.listdir(own_stats_dir):
                os.unlink(os.path.join(own_stats_dir, name))
            os.rmdir(own_stats_dir)


def _spawn_and_wait(ctx, worker, args, world, summarize) -> int:
    port = free_port()
    saved = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                            "MASTER_ADDR", "MASTER_PORT")}
    procs = []
    try:
        for r in range(world):
            os.environ.update(RANK=str(r), WORLD_SIZE=str(world), LOCAL_RANK=str(r),
                              LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                              MASTER_PORT=str(port))
            p = ctx.Process(target=_rank_entry, args=(worker, args), name=f"rank{r}")
            p.start()
            procs.append(p)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    # What `trainscope attach --pid` needs to enter the ranks from outside.
    print(f"launcher: {world} ranks started, pids {' '.join(str(p.pid) for p in procs)}",
          flush=True)
    first_failure: Optional[Tuple[int, int]] = None
    failure_seen_at = 0.0
    grace_s = 5.0
    try:
        while any(p.is_alive() for p in procs):
            if first_failure is None:
                failed = [(r, p.exitcode) for r, p in enumerate(procs)
                          if p.exitcode not in (None, 0)]
                if failed:
                    first_failure = failed[0]
                    failure_seen_at = time.monotonic()
            if first_failure is not None and time.monotonic() - failure_seen_at > grace_s:
                break
            time.sleep(0.05)
    except KeyboardInterrupt:
        print("launcher: interrupted, terminating ranks", file=sys.stderr, flush=True)
    terminated = []
    for r, p in enumerate(procs):
        if p.is_alive():
            p.terminate()
            terminated.append(r)
    for p in procs:
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
            p.join(timeout=5)
    for r, p in enumerate(procs):
        if first_failure is None and p.exitcode not in (None, 0):
            first_failure = (r, p.exitcode)
    # A deliberately killed rank is the cause even when a peer's broken
    # connection made the peer exit before the launcher saw the killed one.
    killed = [r for r, p in enumerate(procs) if p.exitcode == KILLED_EXIT_CODE]
    if killed:
        first_failure = (killed[0], KILLED_EXIT_CODE)

    results = []
    if args.stats_out:
        for r in range(world):
            path = rank_stats_path(args.stats_out, r)
            if os.path.exists(path):
                with open(path) as f:
                    results.append(json.load(f))
        write_json_atomic(args.stats_out, {
            "world_size": world, "master_port": port,
            "exit_codes": [p.exitcode for p in procs], "ranks": results})

    if first_failure is not None:
        r, code = first_failure
        why = (f"killed by --kill-rank at step {args.at_step}" if code == KILLED_EXIT_CODE
               else f"exit code {code}")
        print(f"launcher: job FAILED: rank {r} exited first ({why}); "
              f"exit codes {[p.exitcode for p in procs]}; "
              f"terminated ranks {terminated if terminated else 'none'}",
              file=sys.stderr, flush=True)
        return 1
    print(summarize(results), flush=True)
    return 0


def summary_line(kind: str, results: List[Dict[str, Any]]) -> str:
    """The job's final line, from the ranks' stats (empty without --stats-out)."""
    if not results:
        return f"{kind}: job finished"
    halted = [r for r in results if r["halted"]]
    if halted:
        steps = sorted({r["halt_step"] for r in halted})
        return (f"{kind}: job halted: {len(halted)}/{len(results)} ranks stopped at step(s) "
                f"{steps}, reason {halted[0]['halt_reason']!r}, on_halt called on "
                f"{sum(1 for r in halted if r['on_halt_calls'] > 0)} rank(s)")
    acc = [r["accuracy"] for r in results if r.get("accuracy") is not None]
    steps = sorted({r["steps_completed"] for r in results})
    loss = next((r["losses"][-1] for r in results if r["losses"]), float("nan"))
    acc_s = f", held-out accuracy {acc[0]:.4f}" if acc else ""
    return f"{kind}: job finished: {len(results)} ranks, steps {steps}, last loss {loss:.4f}{acc_s}"
