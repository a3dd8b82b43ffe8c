#!/usr/bin/python3
"""Detection quality of the collector's alert rules over real faulty gloo jobs
(the long variant of tests/scenarios), at 4 and 8 ranks.

For every world size and seed: clean jobs (the false-alarm rate) and one job
per fault and magnitude (slow rank x1.2..x3, loader stalls, a delay before one
rank's transfers), each fault starting at --onset. Prints one line per run,
then per fault: recall within 3 and within 20 steps of onset, precision (the
alerts that name the fault's cause, over all alerts of the faulty jobs),
false alerts per 1,000 clean rank-steps per world size, and the time from a
step's close to its alert.

The jobs are kept in --data-dir with a manifest, so that rules can be tuned
offline: `--evaluate DIR [--rules FILE]` replays the stored jobs through the
rules of this build (`trainscope alerts JOB --data-dir DIR --evaluate`)
instead of running new jobs.

Usage:
  TRAINSCOPE_BUILD_DIR=build /usr/bin/python3 bench/scenario_detection.py [--seeds 2]
      [--ranks 4,8] [--only "slow rank"] [--data-dir DIR]
  TRAINSCOPE_BUILD_DIR=build /usr/bin/python3 bench/scenario_detection.py --evaluate DIR
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
from collections import defaultdict

REPO = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", REPO / "build")).resolve()
PYTHON = "/usr/bin/python3"
EXAMPLES = REPO / "integrations" / "pytorch" / "examples"
CLI = BUILD / "bin" / "trainscope"

SLOW_RANK = 2
STALL_RANK = 3
# The slow link starts here: its sender is late into each all-reduce.
LINK_SRC = 1
# Rules that name the fault's cause as a right answer, per fault kind.
CAUSE_RULES = {
    "slow": {"straggler", "collective_wait"},
    "link": {"collective_wait", "straggler"},
    "stall": {"loader_stall"},
}

# (name, kind, example flags, cause rank)
FAULTS = [
    *[(f"slow rank x{f}", "slow", ["--slow-rank", str(SLOW_RANK), "--slow-factor", str(f)],
       SLOW_RANK) for f in (1.2, 1.4, 1.5, 2, 3)],
    *[(f"loader stall {ms} ms", "stall",
       ["--loader-stall-ms", str(ms), "--loader-stall-rank", str(STALL_RANK)], STALL_RANK)
      for ms in (10, 30)],
    *[(f"link delay {ms} ms", "link", ["--slow-link", f"{LINK_SRC}:2", "--delay-ms", str(ms)],
       LINK_SRC) for ms in (1, 5, 20)],
]


def alert_cause(a: dict) -> int:
    if int(a.get("cause_rank", -1)) >= 0:
        return int(a["cause_rank"])
    ranks = [int(r) for r in a.get("ranks", [])]
    return ranks[0] if len(ranks) == 1 else -1


def raised(alerts: list) -> list:
    return [a for a in alerts if a.get("state") == "ALERT_STATE_RAISED"]


class Collector:
    def __init__(self, work: pathlib.Path, data_dir: pathlib.Path):
        ports = work / "ports"
        self.proc = subprocess.Popen(
            [str(BUILD / "bin" / "trainscope-collector"), "--listen=127.0.0.1:0",
             "--feed=tcp://127.0.0.1:*", "--snapshot=tcp://127.0.0.1:*",
             f"--data-dir={data_dir}", f"--port-file={ports}", "--fsync=false"],
            stdout=open(work / "collector.log", "w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not ports.exists():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                sys.exit(f"collector did not start; see {work / 'collector.log'}")
            time.sleep(0.05)
        p = dict(line.split("=", 1) for line in ports.read_text().split())
        self.address, self.feed, self.snapshot = p["agents"], p["feed"], p["snapshot"]

    def cli(self, *args) -> list:
        out = subprocess.run([str(CLI), *args, "--json", "--collector", self.address, "--feed",
                              self.feed, "--snapshot", self.snapshot],
                             capture_output=True, text=True, timeout=120)
        return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)


def run_job(c: Collector, job: str, world: int, flags: list, steps: int, seed: int) -> None:
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    subprocess.run([PYTHON, str(EXAMPLES / "ddp_train.py"), "--world-size", str(world), "--steps",
                    str(steps), "--seed", str(seed), "--log-every", "0", "--no-eval",
                    "--collector", c.address, "--job", job, *flags], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
    # The analysis closes the last steps shortly after the job ends: wait
    # until the count reaches the job's or stops moving.
    deadline = time.monotonic() + 60
    last, last_change = -1, time.monotonic()
    while time.monotonic() < deadline:
        closed = len(c.cli("steps", job))
        if closed >= steps - 1 or time.monotonic() - last_change > 3:
            break
        if closed != last:
            last, last_change = closed, time.monotonic()
        time.sleep(0.3)


def stored_alerts(data_dir: pathlib.Path, job: str, rules: str) -> list:
    args = [str(CLI), "alerts", job, "--data-dir", str(data_dir), "--evaluate", "--json"]
    if rules:
        args += ["--rules", rules]
    out = subprocess.run(args, capture_output=True, text=True, timeout=600, check=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def stored_steps(data_dir: pathlib.Path, job: str) -> dict:
    out = subprocess.run([str(CLI), "steps", job, "--data-dir", str(data_dir), "--json"],
                         capture_output=True, text=True, timeout=600, check=True)
    return {int(s["step"]): s for s in map(json.loads, filter(str.strip, out.stdout.splitlines()))}


class Tally:
    """Per (fault, world): runs, detections within 3 and 20 steps, latencies."""

    def __init__(self):
        self.runs = 0
        self.within = defaultdict(int)  # budget -> detected
        self.eventually = 0
        self.lags = []
        self.seconds = []


def judge(entry: dict, alerts: list, steps: dict, onset_step: int, budgets: tuple,
          tallies: dict, totals: dict) -> str:
    """Scores one run; returns its printed line."""
    world, job = entry["world"], entry["job"]
    up = raised(alerts)
    if entry["kind"] == "clean":
        rank_steps = world * max(len(steps), 1)
        totals["clean_alerts", world] += len(up)
        totals["clean_rank_steps", world] += rank_steps
        others = "; ".join(f"{a['rule']} rank {alert_cause(a)} step {a['step']}" for a in up)
        return f"{job:<30} {'(none)':<28} {'-':>5} {'-':>5} {'-':>7}  {len(up)} {others}"
    cause = entry["cause"]
    rules = CAUSE_RULES[entry["kind"]]
    right = [a for a in up if alert_cause(a) == cause and int(a["step"]) >= onset_step]
    hits = [a for a in right if a["rule"] in rules]
    totals["alerts"] += len(up)
    totals["right"] += len(right)
    t = tallies[entry["fault"], world]
    t.runs += 1
    cell = ("-", "-", "-")
    if hits:
        first = min(hits, key=lambda a: int(a["step"]))
        lag = int(first["step"]) - onset_step
        closed = steps.get(int(first["step"]))
        # From the end of the step (its last device's end mark, on the
        # reference clock: Unix time) to the alert.
        secs = ((int(first["raised_unix_ns"]) - int(closed["end_ns"])) / 1e9
                if closed else float("nan"))
        cell = (first["step"], str(lag), f"{secs:.3f}")
        t.eventually += 1
        for b in budgets:
            t.within[b] += lag <= b
        t.lags.append(lag)
        if secs == secs:
            t.seconds.append(secs)
    wrong = [a for a in up if a not in right]
    others = "; ".join(f"{a['rule']} rank {alert_cause(a)} step {a['step']}" for a in wrong)
    expected = f"{'/'.join(sorted(rules))[:20]} rank {cause}"
    return f"{job:<30} {expected:<28} {cell[0]:>5} {cell[1]:>5} {cell[2]:>7}  {len(wrong)} {others}"


def report(tallies: dict, totals: dict, budgets: tuple, worlds: list) -> None:
    print(f"\n{'fault':<20} {'ranks':>5} " + " ".join(f"{'<=' + str(b):>6}" for b in budgets) +
          f" {'by end':>7} {'lag median/max':>15}")
    for (fault, world), t in sorted(tallies.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        lag = (f"{statistics.median(t.lags):g}/{max(t.lags)}" if t.lags else "-")
        print(f"{fault:<20} {world:>5} " +
              " ".join(f"{t.within[b]:>3}/{t.runs:<2}" for b in budgets) +
              f" {t.eventually:>4}/{t.runs:<2} {lag:>15}")
    print(f"\nprecision (alerts of faulty jobs naming the fault's cause after onset / all): "
          f"{totals['right']}/{totals['alerts']} = {totals['right'] / max(totals['alerts'], 1):.2f}")
    for w in worlds:
        n, a = totals["clean_rank_steps", w], totals["clean_alerts", w]
        if n:
            print(f"false alerts on clean jobs, {w} ranks: {a} in {n} rank-steps = "
                  f"{1000 * a / n:.2f} per 1,000 rank-steps")
    secs = [s for t in tallies.values() for s in t.seconds]
    if secs:
        print(f"time from a step's close to its alert: median {statistics.median(secs):.3f} s, "
              f"max {max(secs):.3f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--ranks", default="4,8", help="world sizes, comma-separated")
    ap.add_argument("--steps", type=int, default=80, help="steps of each faulty job")
    ap.add_argument("--clean-steps", type=int, default=200)
    ap.add_argument("--clean-jobs", type=int, default=1, help="clean jobs per world size and seed")
    ap.add_argument("--onset", type=int, default=30, help="fault onset (the examples' 1-based step)")
    ap.add_argument("--only", default="", help="run only the faults whose name contains this")
    ap.add_argument("--data-dir", default="", help="keep the jobs here (default: a temp dir)")
    ap.add_argument("--evaluate", default="", metavar="DIR",
                    help="replay the jobs stored in DIR through this build's rules")
    ap.add_argument("--rules", default="", help="with --evaluate: the rules file to try")
    args = ap.parse_args()
    onset_step = args.onset - 1  # StepReports count from 0
    budgets = (3, 20)
    tallies = defaultdict(Tally)
    totals = defaultdict(int)

    if args.evaluate:
        data_dir = pathlib.Path(args.evaluate)
        manifest = [json.loads(l) for l in (data_dir / "manifest.jsonl").read_text().splitlines()]
        worlds = sorted({e["world"] for e in manifest})
        for e in manifest:
            if args.only and args.only not in e["fault"]:
                continue
            alerts = stored_alerts(data_dir, e["job"], args.rules)
            print(judge(e, alerts, stored_steps(data_dir, e["job"]), e["onset_step"], budgets,
                        tallies, totals), flush=True)
        report(tallies, totals, budgets, worlds)
        return

    worlds = [int(w) for w in args.ranks.split(",")]
    work = pathlib.Path(tempfile.mkdtemp(prefix="trainscope-scenarios-"))
    data_dir = pathlib.Path(args.data_dir) if args.data_dir else work / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    c = Collector(work, data_dir)
    manifest = open(data_dir / "manifest.jsonl", "a")
    print(f"jobs kept in {data_dir}")
    print(f"{'run':<30} {'expected':<28} {'step':>5} {'lag':>5} {'seconds':>7}  other alerts")
    try:
        for seed in range(args.seeds):
            for world in worlds:
                runs = [(f"clean-{i}", "clean", [], -1) for i in range(args.clean_jobs)]
                runs += [f for f in FAULTS if not args.only or args.only in f[0]]
                for name, kind, flags, cause in runs:
                    job = f"w{world}-{name.replace(' ', '-').replace('.', '_')}-s{seed}"
                    steps_n = args.clean_steps if kind == "clean" else args.steps
                    if kind != "clean":
                        flags = [*flags, "--fault-onset", str(args.onset)]
                    run_job(c, job, world, flags, steps_n, seed)
                    entry = {"job": job, "world": world, "fault": name if kind != "clean" else
                             "clean", "kind": kind, "cause": cause, "onset_step": onset_step,
                             "steps": steps_n}
                    manifest.write(json.dumps(entry) + "\n")
                    manifest.flush()
                    steps = {int(s["step"]): s for s in c.cli("steps", job)}
                    print(judge(entry, c.cli("alerts", job), steps, onset_step, budgets, tallies,
                                totals), flush=True)
    finally:
        c.stop()
    report(tallies, totals, budgets, worlds)


if __name__ == "__main__":
    main()
