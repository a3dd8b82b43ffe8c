#!/usr/bin/env python3
"""Accounting at scale: K agent streams (trainscope-loadgen) into a real
collector, then, rank by rank, what each agent attempted against what the
collector stored plus the drops it was told of. Prints the collector's RSS
(peak and after the job), the status' events/s while the job runs, and the
accounting; exits 1 when a rank's events do not add up.

  bench/collector/stream_accounting.py --streams 1024 --events 20000 --rate 500
  bench/collector/stream_accounting.py --streams 256 ... --json   # one JSON object

Per rank: attempted = events_received (stored) + ring_full + buffer_full +
shutdown drops (+ refused batches' events), where the drops are those the
collector's status reports (sent in each batch and in Goodbye), and the
agent's own summary must say the same. A rank that could not say goodbye (its
flush deadline passed) is listed: its last drops may never reach the
collector, which is what the agent summary's figures show.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def proc_status_mib(pid: int, key: str, file: str = "status") -> float:
    """A /proc/PID/status size (VmRSS, VmHWM, ...) in MiB, or one of another
    file of that form (file="smaps_rollup": Rss, Anonymous, ...); 0 when absent."""
    with open(f"/proc/{pid}/{file}") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def rss_mib(pid: int) -> float:
    return proc_status_mib(pid, "VmRSS")


def hwm_mib(pid: int) -> float:
    return proc_status_mib(pid, "VmHWM")


def start_collector(collector_bin: pathlib.Path, work: pathlib.Path, flags: list):
    """Starts a collector on loopback ports of its own choosing (--fsync=false),
    its data and log in `work`; returns (process, agents address) once it wrote
    its port file. A collector that dies or takes 30 s is killed, its log raised."""
    ports = work / "ports"
    log = open(work / "collector.log", "wb")
    collector = subprocess.Popen(
        [str(collector_bin), "--listen=127.0.0.1:0", "--feed=tcp://127.0.0.1:*",
         "--snapshot=tcp://127.0.0.1:*", f"--data-dir={work / 'data'}",
         f"--port-file={ports}", "--fsync=false", *flags],
        stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while not ports.exists():
        if collector.poll() is not None or time.monotonic() > deadline:
            collector.kill()
            raise RuntimeError((work / "collector.log").read_text())
        time.sleep(0.05)
    return collector, dict(l.split("=", 1) for l in ports.read_text().split())["agents"]


def stop_collector(collector: subprocess.Popen, work: pathlib.Path, keep: bool) -> None:
    """Ends a collector started by a bench and removes its work folder unless kept."""
    collector.terminate()
    try:
        collector.wait(timeout=60)
    except subprocess.TimeoutExpired:
        collector.kill()
    if not keep:
        subprocess.run(["rm", "-rf", str(work)])


def job_status(cli_bin: pathlib.Path, job: str, address: str):
    """`trainscope status JOB --json` against `address`, parsed; None when it fails."""
    r = subprocess.run([str(cli_bin), "status", job, "--json", "--collector", address],
                       capture_output=True, text=True, timeout=120)
    return json.loads(r.stdout) if r.returncode == 0 else None


def account(status: dict, summaries: list) -> dict:
    """Rank-by-rank accounting; returns totals and the ranks that do not add up."""
    by_rank = {int(r["rank"]): r for r in status.get("ranks", [])}
    bad, no_goodbye = [], []
    totals = dict(attempted=0, stored=0, collector_drops=0, agent_drops=0, refused=0)
    for s in summaries:
        rank = int(s["rank"])
        r = by_rank.get(rank)
        agent_drops = s["dropped_ring_full"] + s["dropped_buffer_full"] + s["dropped_shutdown"]
        totals["attempted"] += s["attempted"] - s["sampled_out"]
        totals["agent_drops"] += agent_drops
        totals["refused"] += s["refused"]
        if r is None:
            bad.append((rank, "not in the collector's status", s))
            continue
        stored = int(r.get("events_received", 0))
        d = r.get("agent_drops", {})
        collector_drops = sum(int(d.get(k, 0)) for k in ("ring_full", "buffer_full", "shutdown"))
        totals["stored"] += stored
        totals["collector_drops"] += collector_drops
        if not r.get("said_goodbye"):
            no_goodbye.append(rank)
        expected = s["attempted"] - s["sampled_out"]
        if stored != s["acked"] or stored + collector_drops + s["refused"] != expected:
            bad.append((rank, dict(attempted=expected, acked=s["acked"], stored=stored,
                                   collector_drops=collector_drops, agent_drops=agent_drops,
                                   refused=s["refused"], goodbye=r.get("said_goodbye"))))
    return dict(totals=totals, ranks=len(summaries), bad=bad, no_goodbye=no_goodbye)


def run(args) -> dict:
    build = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", ROOT / "build"))
    collector_bin, cli_bin = build / "bin/trainscope-collector", build / "bin/trainscope"
    loadgen_bin = build / "bin/trainscope-loadgen"
    work = pathlib.Path(tempfile.mkdtemp(prefix="ts-accounting-"))
    collector, address = start_collector(collector_bin, work, args.collector_arg)
    try:
        rss_idle = rss_mib(collector.pid)

        def status():
            return job_status(cli_bin, args.job, address)

        summary = work / "summary.json"
        start = time.monotonic()
        job = subprocess.Popen(
            [str(loadgen_bin), "--collector", address, "--job", args.job, "--streams",
             str(args.streams), "--events", str(args.events), "--rate", str(args.rate),
             "--memory-mb", str(args.memory_mb), "--flush-timeout-ms",
             str(args.flush_timeout_ms), "--summary", str(summary)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        rates, peak = [], 0.0
        while job.poll() is None:
            time.sleep(1.0)
            peak = max(peak, rss_mib(collector.pid))
            s = status()
            if s is not None and job.poll() is None:
                rates.append(float(s.get("summary", {}).get("events_per_second", 0) or 0))
        elapsed = time.monotonic() - start
        _, job_err = job.communicate()
        time.sleep(args.settle_s)
        final = status() or {}
        # A loadgen that died (or was killed) leaves no summary: every rank is off.
        text = summary.read_text() if summary.exists() else ""
        summaries = [json.loads(l) for l in text.splitlines() if l.strip()]
        result = account(final, summaries)
        result.update(
            streams=args.streams, events_per_stream=args.events, rate=args.rate,
            loadgen_exit=job.returncode, elapsed_s=round(elapsed, 1),
            collector_rss_idle_mib=round(rss_idle, 1),
            collector_rss_peak_mib=round(max(peak, hwm_mib(collector.pid)), 1),
            collector_rss_after_mib=round(rss_mib(collector.pid), 1),
            status_events_per_second=rates,
            summary_events_received=int(final.get("summary", {}).get("events_received", 0)))
        if job.returncode not in (0,):
            result["loadgen_stderr"] = job_err[-2000:]
        return result
    finally:
        stop_collector(collector, work, args.keep)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--streams", type=int, default=256)
    p.add_argument("--events", type=int, default=20000, help="events per stream")
    p.add_argument("--rate", type=int, default=500, help="events/s per stream (0: flat out)")
    p.add_argument("--memory-mb", type=int, default=16, help="each agent's memory budget")
    p.add_argument("--flush-timeout-ms", type=int, default=60000)
    p.add_argument("--settle-s", type=float, default=2.0)
    p.add_argument("--job", default="accounting")
    p.add_argument("--collector-arg", action="append", default=[])
    p.add_argument("--keep", action="store_true")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    result = run(args)
    if args.json:
        print(json.dumps(result))
    else:
        t = result["totals"]
        print(f"{result['streams']} streams x {result['events_per_stream']} events "
              f"@ {result['rate']}/s: {result['elapsed_s']} s, loadgen exit {result['loadgen_exit']}")
        print(f"  attempted {t['attempted']:,} = stored {t['stored']:,} + drops told to the "
              f"collector {t['collector_drops']:,} + refused {t['refused']:,}"
              f"  (agents' own drops {t['agent_drops']:,})")
        print(f"  ranks that do not add up: {len(result['bad'])}; without goodbye: "
              f"{len(result['no_goodbye'])}")
        for b in result["bad"][:10]:
            print("   ", b)
        nz = [r for r in result["status_events_per_second"] if r > 0]
        print(f"  status events/s while running: {len(nz)} of "
              f"{len(result['status_events_per_second'])} samples > 0, max "
              f"{max(nz) if nz else 0:,.0f}")
        print(f"  collector RSS: idle {result['collector_rss_idle_mib']} MiB, peak "
              f"{result['collector_rss_peak_mib']} MiB, after {result['collector_rss_after_mib']} MiB")
    return 1 if result["bad"] or result["loadgen_exit"] != 0 or not result["ranks"] else 0


if __name__ == "__main__":
    sys.exit(main())
