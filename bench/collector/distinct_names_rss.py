#!/usr/bin/env python3
"""Collector memory under a flood of distinct operator names (issue 21.2).

A real collector, a real job (trainscope-loadgen --distinct-names N: the
operators cycle through N distinct names "op_<i>"), the collector's RSS
(/proc/PID/status VmRSS) sampled every 0.5 s: idle, peak while the job runs,
and after the job ended and the collector released its analysis
(--release-finished-after-s, shortened here). Also what the collector's
status says it kept (analysis_memory.names, name_bytes) and counted past its
name budget (names_over_budget), and what the agents say went out
(names_interned, names_over_agent_cap in loadgen's summary). One run per
configuration: default flags, and --memory-limit-mib=128.

  bench/collector/distinct_names_rss.py                     # 5 M names, 5 streams
  bench/collector/distinct_names_rss.py --names 200000 --events-per-stream 60000

An agent interns at most 1,048,576 strings, so the names are spread over
--streams agents (5 M names need at least 5). Prints a table, then one JSON
object.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

# The /proc reading and the collector's start and stop are stream_accounting.py's (same folder).
from stream_accounting import (job_status, proc_status_mib, start_collector,  # noqa: E402
                               stop_collector)

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_one(args, label: str, extra_flags: list) -> dict:
    build = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", ROOT / "build"))
    collector_bin, cli_bin = build / "bin/trainscope-collector", build / "bin/trainscope"
    loadgen_bin = build / "bin/trainscope-loadgen"
    work = pathlib.Path(tempfile.mkdtemp(prefix="ts-names-rss-"))
    collector, address = start_collector(
        collector_bin, work, [f"--release-finished-after-s={args.release_after_s}", *extra_flags])
    try:
        time.sleep(1.0)
        rss_idle = proc_status_mib(collector.pid, "VmRSS")

        def status():
            return job_status(cli_bin, args.job, address)

        summary = work / "summary.json"
        start = time.monotonic()
        job = subprocess.Popen(
            [str(loadgen_bin), "--collector", address, "--job", args.job, "--streams",
             str(args.streams), "--events", str(args.events_per_stream), "--distinct-names",
             str(args.names), "--flush-timeout-ms", "60000", "--summary", str(summary)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        samples = []  # (seconds since the job started, RSS MiB)
        while job.poll() is None:
            samples.append((round(time.monotonic() - start, 1),
                            proc_status_mib(collector.pid, "VmRSS")))
            time.sleep(0.5)
        job_s = time.monotonic() - start
        _, job_err = job.communicate()
        rss_at_end = proc_status_mib(collector.pid, "VmRSS")
        # Wait for the finished-job release (status says released), then a
        # little longer for the trim that follows it.
        released, final = False, {}
        deadline = time.monotonic() + args.release_after_s + 120
        while time.monotonic() < deadline:
            samples.append((round(time.monotonic() - start, 1),
                            proc_status_mib(collector.pid, "VmRSS")))
            final = status() or final
            if final.get("analysis_memory", {}).get("released"):
                released = True
                break
            time.sleep(0.5)
        time.sleep(2.0)
        final = status() or final
        rss_after = proc_status_mib(collector.pid, "VmRSS")
        anon_after = proc_status_mib(collector.pid, "Anonymous", "smaps_rollup")
        text = summary.read_text() if summary.exists() else ""
        streams = [json.loads(l) for l in text.splitlines() if l.strip()]
        memory = final.get("analysis_memory", {})
        ranks = final.get("ranks", [])
        result = dict(
            config=label, collector_flags=extra_flags, names=args.names, streams=args.streams,
            events_per_stream=args.events_per_stream, loadgen_exit=job.returncode,
            job_s=round(job_s, 1),
            rss_idle_mib=round(rss_idle, 1),
            rss_peak_mib=round(max([r for _, r in samples] +
                                   [proc_status_mib(collector.pid, "VmHWM")]), 1),
            rss_at_job_end_mib=round(rss_at_end, 1),
            rss_after_release_mib=round(rss_after, 1), released=released,
            # What stays: mapped code and libraries (files) against heap (anon).
            rss_after_release_anon_mib=round(anon_after, 1),
            rss_after_release_files_mib=round(rss_after - anon_after, 1),
            agent_names_interned=sum(int(s.get("names_interned", 0)) for s in streams),
            agent_names_over_cap=sum(int(s.get("names_over_agent_cap", 0)) for s in streams),
            events_attempted=sum(int(s["attempted"]) for s in streams),
            events_acked=sum(int(s["acked"]) for s in streams),
            events_refused=sum(int(s["refused"]) for s in streams),
            events_received=int(final.get("summary", {}).get("events_received", 0)),
            collector_names_kept=int(memory.get("names", 0)),
            collector_name_bytes=int(memory.get("name_bytes", 0)),
            collector_name_budget=int(memory.get("name_budget", 0)),
            collector_names_over_budget=int(memory.get("names_over_budget", 0)),
            collector_batches_refused=sum(int(r.get("batches_refused", 0)) for r in ranks),
            rss_samples=samples if args.samples else None)
        if job.returncode != 0:
            result["loadgen_stderr"] = job_err[-2000:]
        return result
    finally:
        stop_collector(collector, work, args.keep)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--names", type=int, default=5_000_000)
    p.add_argument("--streams", type=int, default=5)
    # 44 of each 50 calls are operators: 1.2 M calls a stream name 1,056,000
    # operators, so 5 streams send each of 5 M names at least once.
    p.add_argument("--events-per-stream", type=int, default=1_200_000)
    p.add_argument("--job", default="names-rss")
    p.add_argument("--release-after-s", type=int, default=5)
    p.add_argument("--memory-limit-mib", type=int, default=128)
    p.add_argument("--only", choices=["default", "limit"])
    p.add_argument("--samples", action="store_true", help="include every RSS sample")
    p.add_argument("--keep", action="store_true", help="keep the data directory")
    args = p.parse_args()
    configs = [("default", []),
               (f"--memory-limit-mib={args.memory_limit_mib}",
                [f"--memory-limit-mib={args.memory_limit_mib}"])]
    if args.only:
        configs = [configs[0] if args.only == "default" else configs[1]]
    results = [run_one(args, label, flags) for label, flags in configs]
    cols = [("config", "config"), ("idle", "rss_idle_mib"), ("peak", "rss_peak_mib"),
            ("job end", "rss_at_job_end_mib"), ("released", "rss_after_release_mib"),
            ("of it heap", "rss_after_release_anon_mib"),
            ("names sent", "agent_names_interned"), ("kept", "collector_names_kept"),
            ("over budget", "collector_names_over_budget"), ("acked", "events_acked"),
            ("refused", "events_refused")]
    print(f"{args.names:,} distinct names, {args.streams} streams x "
          f"{args.events_per_stream:,} events (RSS in MiB)")
    print(" | ".join(name for name, _ in cols))
    for r in results:
        print(" | ".join(f"{r[key]:,}" if isinstance(r[key], int) else str(r[key])
                         for _, key in cols))
    print(json.dumps(results))
    return 0 if all(r["loadgen_exit"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
