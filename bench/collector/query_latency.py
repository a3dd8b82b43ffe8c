#!/usr/bin/env python3
"""How long `trainscope jobs` and `trainscope status` take while a connection
storm hits the collector (issue 21.6: `jobs` took 9-11 s under load).

Two real collectors on this machine: A takes a storm (trainscope-loadgen
--streams K, default 1,024 ranks connecting at once, then streaming), B stays
idle; both hold rank 0 of the job first. Each query is timed against A before
the storm (baseline), and against A and B in turn while the storm runs
(both read what the job's pipeline thread published), so one run separates
what the machine's CPU contention costs every process (B's latency: the CLI
itself and any collector are starved alike) from what A adds by being the
collector under the storm; `trainscope --version` (no RPC at all) in the same loop times
the CLI process alone. Once the storm's ranks are gone, each query is timed
against A again (after_storm: the job now has 1,025 ranks to list, and no
storm), which tells what a bigger answer costs from what the storm adds.
Prints percentiles and the ratios to the baseline; --json for one object.

  bench/collector/query_latency.py                      # 1,024 streams
  bench/collector/query_latency.py --streams 256 --json
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

# The collector's start and stop: stream_accounting.py's (same folder).
from stream_accounting import start_collector, stop_collector  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", ROOT / "build"))


def start_named_collector(name: str):
    work = pathlib.Path(tempfile.mkdtemp(prefix=f"ts-query-{name}-"))
    process, address = start_collector(BUILD / "bin/trainscope-collector", work, [])
    return process, work, address


def time_cli(*args: str) -> float:
    start = time.monotonic()
    r = subprocess.run([str(BUILD / "bin/trainscope"), *args], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"trainscope {' '.join(args)} failed: {r.stderr}")
    return time.monotonic() - start


# What each query asks of the collector: `jobs` reads every job's published
# summary, `status` the job's published status (with every rank).
QUERIES = {"jobs": ["jobs", "--json"], "status": ["status", "storm", "--json"]}


def time_query(kind: str, address: str) -> float:
    return time_cli(*QUERIES[kind], "--collector", address)


def loadgen(address: str, work: pathlib.Path, world: int, rank: int, streams: int, events: int,
            rate: int) -> subprocess.Popen:
    return subprocess.Popen(
        [str(BUILD / "bin/trainscope-loadgen"), "--collector", address, "--job", "storm",
         "--world-size", str(world), "--rank", str(rank), "--streams", str(streams),
         "--events", str(events), "--rate", str(rate), "--memory-mb", "4",
         "--flush-timeout-ms", "60000", "--summary", str(work / f"summary-{rank}.json")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def percentiles(samples: list) -> dict:
    s = sorted(samples)
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))] if s else 0.0
    return dict(n=len(s), p50_s=round(pick(0.5), 3), p90_s=round(pick(0.9), 3),
                max_s=round(s[-1] if s else 0.0, 3))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--streams", type=int, default=1024)
    p.add_argument("--events", type=int, default=2000, help="events per stream")
    p.add_argument("--rate", type=int, default=500, help="events/s per stream")
    p.add_argument("--baseline-queries", type=int, default=20)
    p.add_argument("--storm-s", type=float, default=10.0,
                   help="query for this long after the storm starts")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    a, a_work, a_address = start_named_collector("storm")
    b, b_work, b_address = start_named_collector("idle")
    world = args.streams + 1
    job = None
    samples = {kind: dict(baseline=[], storm=[], idle_collector_during_storm=[], after_storm=[])
               for kind in QUERIES}
    no_rpc = []
    try:
        # Rank 0 of the job on both collectors first, so `status storm` has a
        # job to show on each; the storm is ranks 1..streams on A.
        for address, work in ((a_address, a_work), (b_address, b_work)):
            if loadgen(address, work, world, 0, 1, 100, 0).wait(timeout=120) != 0:
                raise RuntimeError("trainscope-loadgen could not run rank 0")
        for kind in QUERIES:
            samples[kind]["baseline"] = [time_query(kind, a_address)
                                         for _ in range(args.baseline_queries)]
        job = loadgen(a_address, a_work, world, 1, args.streams, args.events, args.rate)
        start = time.monotonic()
        while time.monotonic() - start < args.storm_s:
            for kind in QUERIES:
                samples[kind]["storm"].append(time_query(kind, a_address))
                samples[kind]["idle_collector_during_storm"].append(time_query(kind, b_address))
            no_rpc.append(time_cli("--version"))
        job.wait(timeout=600)
        for kind in QUERIES:
            samples[kind]["after_storm"] = [time_query(kind, a_address)
                                            for _ in range(args.baseline_queries)]
    finally:
        if job is not None and job.poll() is None:
            job.kill()
        stop_collector(a, a_work, False)
        stop_collector(b, b_work, False)
    result = dict(streams=args.streams, events=args.events, rate=args.rate,
                  cli_version_during_storm=percentiles(no_rpc))
    for kind, series in samples.items():
        result[kind] = {name: percentiles(values) for name, values in series.items()}
        base = result[kind]["baseline"]
        for name in ("storm", "idle_collector_during_storm", "after_storm"):
            for q in ("p50_s", "p90_s", "max_s"):
                result[kind][name][q.replace("_s", "_ratio")] = (
                    round(result[kind][name][q] / base[q], 1) if base[q] > 0 else None)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"Query latency, {args.streams} streams storming collector A "
          f"(seconds; ratio to A's baseline)")
    rows = [(f"{kind} on A before the storm", result[kind]["baseline"]) for kind in QUERIES]
    for kind in QUERIES:
        rows.append((f"{kind} on A during the storm", result[kind]["storm"]))
        rows.append((f"{kind} on idle B meanwhile", result[kind]["idle_collector_during_storm"]))
        rows.append((f"{kind} on A after the storm", result[kind]["after_storm"]))
    rows.append(("`trainscope --version` then", result["cli_version_during_storm"]))
    for label, r in rows:
        ratios = (f"  (x{r['p50_ratio']} / x{r['p90_ratio']} / x{r['max_ratio']})"
                  if "p50_ratio" in r else "")
        print(f"  {label:30s} n={r['n']:3d} p50 {r['p50_s']:.3f}  p90 {r['p90_s']:.3f}  "
              f"max {r['max_s']:.3f}{ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
