#!/usr/bin/python3
"""Overhead of the trainscope PyTorch plugin, against an empty RecordFunction
callback (the floor: what torch charges any observer) and torch.profiler.

    PYTHONPATH=build/python /usr/bin/python3 bench/pytorch_overhead.py [--rounds 5]

One process, variants interleaved round by round (so drifting machine load
hits every variant alike); the least sample over the rounds is reported
(noise only adds time), with the median of rounds beside it:
  (a) per operator: a torch.add loop on tiny tensors (one RecordFunction event
      per call);
  (b) per training step: a small CNN (batch 64, 1x28x28) on CPU.
Times are CPU time of the training thread (time.thread_time: robust to other
processes taking the core) and, in brackets, CPU time of the whole process
(includes the agent's sender thread). torch runs with one intra-op thread.
Nothing is asserted; the budgets are printed next to the numbers.

The recording variants stream to a real trainscope-collector started from
$TRAINSCOPE_BUILD_DIR/bin (default build/) when there is one, else to a
closed port (events are then buffered and dropped, as with a dead collector).
"""

import argparse
import os
import pathlib
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import torch

REPO = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", REPO / "build"))
sys.path.insert(0, str(BUILD / "python"))
import trainscope  # noqa: E402
from trainscope import _C  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_collector():
    binary = BUILD / "bin" / "trainscope-collector"
    if not binary.exists():
        return None, f"127.0.0.1:{free_port()}", "no collector binary: events go to a closed port", None
    work = pathlib.Path(tempfile.mkdtemp(prefix="trainscope-bench-"))
    port_file = work / "ports"
    proc = subprocess.Popen(
        [str(binary), "--listen=127.0.0.1:0", "--feed=tcp://127.0.0.1:*",
         "--snapshot=tcp://127.0.0.1:*", f"--data-dir={work / 'data'}",
         f"--port-file={port_file}", "--fsync=false"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            return None, f"127.0.0.1:{free_port()}", "collector failed to start: closed port", work
        time.sleep(0.02)
    ports = dict(l.split("=", 1) for l in port_file.read_text().split() if "=" in l)
    return proc, ports["agents"], f"collector {ports['agents']}", work


class Variant:
    def __init__(self, name, enter, leave):
        self.name, self.enter, self.leave = name, enter, leave


def make_variants(collector_address):
    job_counter = [0]

    def attach(**kw):
        def enter():
            job_counter[0] += 1
            trainscope.attach(collector=collector_address, job=f"bench-{os.getpid()}-{job_counter[0]}",
                              halt_grace_s=None, log_to_stderr=False, **kw)
            if kw.get("recording", True):
                deadline = time.monotonic() + 2
                while not trainscope.session().recording and time.monotonic() < deadline:
                    time.sleep(0.005)
            time.sleep(0.05)  # the control thread switches the callbacks (20 ms tick)
        return enter

    def detach():
        trainscope.detach(timeout_s=2.0)

    profiler = {}

    def profiler_enter():
        profiler["p"] = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        profiler["p"].__enter__()

    def profiler_leave():
        profiler.pop("p").__exit__(None, None, None)

    return [
        Variant("no agent", lambda: None, lambda: None),
        Variant("empty callback (floor)", lambda: _C._bench_empty_callback(True),
                lambda: _C._bench_empty_callback(False)),
        Variant("trainscope recording", attach(), detach),
        Variant("trainscope recording shapes=False", attach(shapes=False), detach),
        Variant("trainscope dormant", attach(recording=False), detach),
        Variant("torch.profiler (CPU)", profiler_enter, profiler_leave),
    ]


def timed(fn):
    t0, p0 = time.thread_time(), time.process_time()
    fn()
    return time.thread_time() - t0, time.process_time() - p0


def per_op_sample(calls, samples):
    """Least thread CPU per torch.add call over `samples` loops (noise only adds)."""
    a, b = torch.ones(4), torch.ones(4)

    def loop():
        for _ in range(calls):
            torch.add(a, b)

    loop()  # warm
    best = min((timed(loop) for _ in range(samples)), key=lambda t: t[0])
    return best[0] / calls * 1e6, best[1] / calls * 1e6


def make_cnn():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32 * 7 * 7, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))
    return model, opt, x, y


def step_sample(cnn, steps):
    """Least thread CPU per training step over `steps` steps."""
    model, opt, x, y = cnn

    def one():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    one()  # warm
    best = min((timed(one) for _ in range(steps)), key=lambda t: t[0])
    return best[0] * 1e3, best[1] * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--calls", type=int, default=5000, help="torch.add calls per loop")
    parser.add_argument("--samples", type=int, default=3, help="torch.add loops per round")
    parser.add_argument("--steps", type=int, default=6, help="CNN steps per round")
    args = parser.parse_args()
    torch.set_num_threads(1)
    proc, address, note, work = start_collector()
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; {note}")
    variants = make_variants(address)
    cnn = make_cnn()
    op = {v.name: [] for v in variants}
    step = {v.name: [] for v in variants}
    events_per_add = None
    try:
        for r in range(args.rounds):
            for v in variants:
                v.enter()
                if v.name == "trainscope recording" and events_per_add is None:
                    e0 = trainscope.stats()["events_recorded"]
                    a = torch.ones(4)
                    for _ in range(1000):
                        torch.add(a, a)
                    events_per_add = (trainscope.stats()["events_recorded"] - e0) / 1000
                try:
                    op[v.name].append(per_op_sample(args.calls, args.samples))
                    step[v.name].append(step_sample(cnn, args.steps))
                finally:
                    v.leave()
            if (r + 1) % 5 == 0:
                print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)

    # Noise on a shared machine only ever adds time: the least sample over the
    # interleaved rounds estimates each variant's own cost; the median of the
    # rounds is printed too, to show the spread.
    low = lambda xs, i: min(x[i] for x in xs)  # noqa: E731
    med = lambda xs, i: statistics.median(x[i] for x in xs)  # noqa: E731
    base_op, floor_op = low(op["no agent"], 0), low(op["empty callback (floor)"], 0)
    floor_added = floor_op - base_op
    print(f"\n(a) torch.add on 4 floats: {events_per_add} trainscope event(s) per call; "
          f"least thread CPU in us per call (median of rounds; process CPU)")
    print(f"  {'variant':36s} {'us/call':>8s} {'added':>7s} {'x floor':>8s} {'median':>8s} "
          f"{'process':>8s}")
    for v in variants:
        t = low(op[v.name], 0)
        added = t - base_op
        ratio = added / floor_added if floor_added > 0 else float("nan")
        print(f"  {v.name:36s} {t:8.3f} {added:+7.3f} {ratio:8.2f} {med(op[v.name], 0):8.3f} "
              f"{low(op[v.name], 1):8.3f}")
    print("  budget: trainscope recording <= 1.3 x the floor's added cost, "
          "<= 0.3 us added per operator")

    base_step = low(step["no agent"], 0)
    print("\n(b) small CNN training step, batch 64, 1x28x28, CPU, 1 thread: least thread CPU "
          "in ms per step (median of rounds; process CPU)")
    print(f"  {'variant':36s} {'ms/step':>8s} {'x none':>8s} {'median':>8s} {'process':>8s}")
    for v in variants:
        t = low(step[v.name], 0)
        print(f"  {v.name:36s} {t:8.3f} {t / base_step:8.4f} {med(step[v.name], 0):8.3f} "
              f"{low(step[v.name], 1):8.3f}")
    print("  budget: trainscope dormant <= x1.002")


if __name__ == "__main__":
    main()
