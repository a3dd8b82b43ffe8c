#!/usr/bin/python3
"""Instructions per operator of the trainscope PyTorch plugin under
valgrind --tool=callgrind: stable where timings on a shared machine swing.

    TRAINSCOPE_BUILD_DIR=build /usr/bin/python3 bench/pytorch_callgrind.py [--calls 3000]

Runs ONE python process under callgrind (importing torch under valgrind takes
about a minute) that goes through the variants in turn: no observer, the
empty RecordFunction callback (the floor), trainscope recording with and
without shapes, trainscope dormant. Collection is on only inside
at::_ops::add_Tensor::call (--toggle-collect), i.e. inside each torch.add
call including the RecordFunction callbacks it runs, on the training thread
only (callgrind's collection state is per thread: the agent's sender and
control threads are not counted). A torch.mul call between variants dumps the
counters (--dump-before), so each dump holds one variant's add loop.

The sender's cost per event is measured in a second callgrind run
(--mode sender): instructions of the whole process with --separate-threads=yes,
the sender thread's share divided by the events it sent.

Prints Ir per torch.add call, the added Ir against no observer, and the
ratio of added Ir to the floor's added Ir (goal: <= 1.3).
"""

import argparse
import glob
import os
import pathlib
import re
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", REPO / "build"))

VARIANTS = ["no observer", "empty callback (floor)", "trainscope recording",
            "trainscope recording shapes=False", "trainscope dormant"]

# The program run under valgrind: argv = calls.
CHILD = r"""
import os, sys, time, socket
sys.path.insert(0, os.environ["TRAINSCOPE_PY"])
import torch
import trainscope
from trainscope import _C
torch.set_num_threads(1)
calls = int(sys.argv[1])
a, b = torch.ones(4), torch.ones(4)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    closed = "127.0.0.1:%d" % s.getsockname()[1]  # events buffered, then dropped

def attach(**kw):
    def enter():
        trainscope.attach(collector=closed, job="cg-%d" % os.getpid(), halt_grace_s=None,
                          log_to_stderr=False, **kw)
        want = kw.get("recording", True)
        deadline = time.monotonic() + 120
        while trainscope.session().recording != want and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # the control thread switches the callbacks (20 ms tick, slow here)
        for _ in range(50):  # warm: names interned, rings made, caches filled
            torch.add(a, b)
    return enter

variants = [
    (lambda: None, lambda: None),
    (lambda: _C._bench_empty_callback(True), lambda: _C._bench_empty_callback(False)),
    (attach(), lambda: trainscope.detach(timeout_s=30.0)),
    (attach(shapes=False), lambda: trainscope.detach(timeout_s=30.0)),
    (attach(recording=False), lambda: trainscope.detach(timeout_s=30.0)),
]
for enter, leave in variants:
    enter()
    for _ in range(50):
        torch.add(a, b)
    torch.mul(a, b)  # dump: what came before (setup, warm-up) is set apart
    for _ in range(calls):
        torch.add(a, b)
    torch.mul(a, b)  # dump: this variant's loop
    leave()
"""

# Sender run: records `events` operators while the sender ships them to a
# real collector, then detaches (which drains the rings).
SENDER_CHILD = r"""
import os, sys, time, subprocess, pathlib, tempfile
sys.path.insert(0, os.environ["TRAINSCOPE_PY"])
import torch
import trainscope
calls = int(sys.argv[1])
address = sys.argv[2]
a, b = torch.ones(4), torch.ones(4)
trainscope.attach(collector=address, job="cg-sender-%d" % os.getpid(), halt_grace_s=None,
                  log_to_stderr=False, shapes=False)
deadline = time.monotonic() + 120
while not trainscope.session().recording and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(1.0)
for _ in range(calls):
    torch.add(a, b)
time.sleep(3.0)
st = trainscope.stats()
trainscope.detach(timeout_s=60.0)
print("EVENTS", st["events_recorded"], flush=True)
"""


def valgrind(args, out_pattern, child, child_args, env):
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_pattern}", *args,
           "/usr/bin/python3", "-c", child, *child_args]
    return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, check=False)


def totals(path):
    for line in open(path, errors="replace"):
        if line.startswith("totals:") or line.startswith("summary:"):
            return int(line.split()[1])
    return 0


def per_op(args, env):
    work = tempfile.mkdtemp(prefix="trainscope-cg-")
    r = valgrind(["--collect-atstart=no", "--toggle-collect=at::_ops::add_Tensor::call*",
                  "--dump-before=at::_ops::mul_Tensor::call*"],
                 f"{work}/cg.out", CHILD, [str(args.calls)], env)
    if r.returncode != 0:
        sys.exit(f"callgrind run failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
    dumps = sorted(glob.glob(f"{work}/cg.out.*"), key=lambda p: int(p.rsplit(".", 1)[1]))
    # Dumps per variant: [setup+warm-up, loop]; the final dump at exit follows.
    loops = [totals(dumps[2 * i + 1]) for i in range(len(VARIANTS))]
    ir = {name: loop / args.calls for name, loop in zip(VARIANTS, loops)}
    base = ir["no observer"]
    floor = ir["empty callback (floor)"] - base
    print(f"(a) Ir per torch.add call inside at::_ops::add_Tensor::call "
          f"({args.calls} calls per variant, training thread only)")
    print(f"  {'variant':36s} {'Ir/call':>9s} {'added':>8s} {'x floor':>8s}")
    for name in VARIANTS:
        added = ir[name] - base
        print(f"  {name:36s} {ir[name]:9.1f} {added:+8.1f} {added / floor:8.2f}")
    print("  goal: trainscope recording <= 1.3 x the floor's added Ir")
    print(f"  per-function detail: callgrind_annotate --inclusive=no {dumps[1].rsplit('.', 1)[0]}.N,"
          f" N = 2 x variant + 2 (the loop of the i-th variant above, from 0)")


def sender(args, env):
    binary = BUILD / "bin" / "trainscope-collector"
    work = pathlib.Path(tempfile.mkdtemp(prefix="trainscope-cg-sender-"))
    port_file = work / "ports"
    import time
    proc = subprocess.Popen(
        [str(binary), "--listen=127.0.0.1:0", "--feed=tcp://127.0.0.1:*",
         "--snapshot=tcp://127.0.0.1:*", f"--data-dir={work / 'data'}",
         f"--port-file={port_file}", "--fsync=false"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not port_file.exists():
            if proc.poll() is not None:
                sys.exit("collector failed to start")
            time.sleep(0.05)
        ports = dict(l.split("=", 1) for l in port_file.read_text().split() if "=" in l)
        r = valgrind(["--separate-threads=yes"], f"{work}/cg.out", SENDER_CHILD,
                     [str(args.sender_calls), ports["agents"]], env)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    if r.returncode != 0:
        sys.exit(f"callgrind run failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
    events = int(re.search(r"EVENTS (\d+)", r.stdout).group(1))
    # The sender thread is the one whose profile has the Sender's loop in it.
    best = None
    for path in glob.glob(f"{work}/cg.out*-*"):
        text = open(path, errors="replace").read()
        if "Sender::Run" in text:
            ir = totals(path)
            if best is None or ir > best[1]:
                best = (path, ir)
    if best is None:
        sys.exit("no sender thread profile found")
    print(f"(b) sender thread: {best[1]} Ir for {events} events sent: "
          f"{best[1] / max(events, 1):.1f} Ir per event (goal: <= 0.1 us of CPU per event)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=3000, help="torch.add calls per variant")
    parser.add_argument("--mode", choices=["ops", "sender", "both"], default="ops",
                        help="per-operator Ir (ops), the sender's Ir per event, or both")
    parser.add_argument("--sender-calls", type=int, default=200000)
    args = parser.parse_args()
    env = dict(os.environ, TRAINSCOPE_PY=str(BUILD / "python"))
    if args.mode in ("ops", "both"):
        per_op(args, env)
    if args.mode in ("sender", "both"):
        sender(args, env)


if __name__ == "__main__":
    main()
