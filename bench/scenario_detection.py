#!/usr/bin/python3
"""Detection latency and precision/recall of the collector's alert rules over
real faulty 4-rank gloo jobs (the long variant of tests/scenarios).

Runs a real collector and, for every seed, a clean job plus one job per fault
and magnitude (slow rank 1.2x..3x, loader stall, a delay before one rank's
transfers of 1..50 ms), each fault starting at --onset. Prints per run the
expected alert, when it was raised (steps after onset, and seconds after the
step closed), then recall (faults detected within the budget), precision
(alerts that name the fault's cause, over all alerts) and the latencies.

Usage: TRAINSCOPE_BUILD_DIR=build /usr/bin/python3 bench/scenario_detection.py [--seeds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", REPO / "build")).resolve()
PYTHON = "/usr/bin/python3"
EXAMPLES = REPO / "integrations" / "pytorch" / "examples"

# (name, example flags, expected rule, expected cause rank)
FAULTS = [
    *[(f"slow rank x{f}", ["--slow-rank", "2", "--slow-factor", str(f)], "straggler", 2)
      for f in (1.2, 1.5, 2, 3)],
    *[(f"loader stall {ms} ms", ["--loader-stall-ms", str(ms), "--loader-stall-rank", "3"],
       "loader_stall", 3) for ms in (10, 30)],
    *[(f"link delay {ms} ms", ["--slow-link", "1:2", "--delay-ms", str(ms)], "collective_wait", 1)
      for ms in (1, 5, 20, 50)],
]


class Collector:
    def __init__(self, work: pathlib.Path):
        ports = work / "ports"
        self.proc = subprocess.Popen(
            [str(BUILD / "bin" / "trainscope-collector"), "--listen=127.0.0.1:0",
             "--feed=tcp://127.0.0.1:*", "--snapshot=tcp://127.0.0.1:*",
             f"--data-dir={work / 'data'}", f"--port-file={ports}", "--fsync=false"],
            stdout=open(work / "collector.log", "w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not ports.exists():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                sys.exit(f"collector did not start; see {work / 'collector.log'}")
            time.sleep(0.05)
        p = dict(line.split("=", 1) for line in ports.read_text().split())
        self.address, self.feed, self.snapshot = p["agents"], p["feed"], p["snapshot"]

    def cli(self, *args) -> list:
        out = subprocess.run([str(BUILD / "bin" / "trainscope"), *args, "--json", "--collector",
                              self.address, "--feed", self.feed, "--snapshot", self.snapshot],
                             capture_output=True, text=True, timeout=120)
        return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


def run_job(c: Collector, job: str, flags: list, steps: int, seed: int) -> None:
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    subprocess.run([PYTHON, str(EXAMPLES / "ddp_train.py"), "--world-size", "4", "--steps",
                    str(steps), "--seed", str(seed), "--log-every", "0", "--no-eval",
                    "--collector", c.address, "--job", job, *flags], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    # The analysis closes the last steps shortly after the job ends (the very
    # last one may never close: no rank starts the next): wait until the
    # count reaches the job's or stops moving.
    deadline = time.monotonic() + 60
    last, last_change = -1, time.monotonic()
    while time.monotonic() < deadline:
        closed = len(c.cli("steps", job))
        if closed >= steps or time.monotonic() - last_change > 2:
            break
        if closed != last:
            last, last_change = closed, time.monotonic()
        time.sleep(0.3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=80, help="steps of each faulty job")
    ap.add_argument("--clean-steps", type=int, default=200)
    ap.add_argument("--onset", type=int, default=30, help="fault onset (the examples' 1-based step)")
    ap.add_argument("--budget-steps", type=int, default=3)
    args = ap.parse_args()
    onset_step = args.onset - 1  # StepReports count from 0

    work = pathlib.Path(tempfile.mkdtemp(prefix="trainscope-scenarios-"))
    c = Collector(work)
    detected = eventually = faults = 0
    true_alerts = all_alerts = 0
    step_lat, sec_lat = [], []
    print(f"{'run':<28} {'expected':<26} {'raised':>6} {'steps':>6} {'seconds':>8}  other alerts")
    try:
        for seed in range(args.seeds):
            job = f"clean-{seed}"
            run_job(c, job, [], args.clean_steps, seed)
            raised = [a for a in c.cli("alerts", job) if a["state"] == "ALERT_STATE_RAISED"]
            all_alerts += len(raised)
            print(f"{job:<28} {'(none)':<26} {'-':>6} {'-':>6} {'-':>8}  {len(raised)}")
            for name, flags, rule, rank in FAULTS:
                job = f"{name.replace(' ', '-').replace('.', '_')}-{seed}"
                run_job(c, job, [*flags, "--fault-onset", str(args.onset)], args.steps, seed)
                steps = {int(s["step"]): s for s in c.cli("steps", job)}
                raised = [a for a in c.cli("alerts", job) if a["state"] == "ALERT_STATE_RAISED"]
                hits = [a for a in raised if a["rule"] == rule and int(a.get("cause_rank", -1)) == rank
                        and int(a["step"]) >= onset_step]
                good = [a for a in raised if int(a.get("cause_rank", -1)) == rank
                        and int(a["step"]) >= onset_step]
                all_alerts += len(raised)
                true_alerts += len(good)
                faults += 1
                cell = ("-", "-", "-")
                if hits:
                    first = min(hits, key=lambda a: int(a["step"]))
                    lag = int(first["step"]) - onset_step
                    closed = steps.get(int(first["step"]))
                    secs = ((int(first["raised_unix_ns"]) - int(closed["end_ns"])) / 1e9
                            if closed else float("nan"))
                    cell = (first["step"], str(lag), f"{secs:.3f}")
                    eventually += 1
                    if lag <= args.budget_steps:
                        detected += 1
                    step_lat.append(lag)
                    sec_lat.append(secs)
                print(f"{job:<28} {rule + ' rank ' + str(rank):<26} {cell[0]:>6} {cell[1]:>6} "
                      f"{cell[2]:>8}  {len(raised) - len(good)}")
    finally:
        c.stop()
    print(f"\nrecall (within {args.budget_steps} steps of onset): {detected}/{faults} = "
          f"{detected / max(faults, 1):.2f}")
    print(f"recall (by the job's end, {args.steps} steps): {eventually}/{faults} = "
          f"{eventually / max(faults, 1):.2f}")
    print(f"precision (alerts naming the fault's cause after onset / all alerts): "
          f"{true_alerts}/{all_alerts} = {true_alerts / max(all_alerts, 1):.2f}")
    if step_lat:
        print(f"latency: steps after onset median {statistics.median(step_lat)} max {max(step_lat)}; "
              f"seconds after the step closed median {statistics.median(sec_lat):.3f} "
              f"max {max(sec_lat):.3f}")


if __name__ == "__main__":
    main()
