#!/usr/bin/python3
"""End-to-end collector ingest benchmark.

Starts the real trainscope-collector and trainscope-loadgen processes carrying
64 agent streams on loopback, and reports events/s that were received,
validated, written to the durable log and acknowledged, plus the collector's
peak memory. Runs with fsync on (the default durability) and off, and with the
live analysis (clock alignment, step assembly) on and off, in one go, and
prints the analysis-on / analysis-off ratios of that run.

    /usr/bin/python3 bench/collector_ingest.py [--build build] [--streams 64] [--repeat 5]
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peak_rss_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def cpu_seconds(pid):
    """User + system CPU time of a live process, from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return float("nan")


def run_once(bin_dir, streams, processes, rate, seconds, fsync, analysis, work):
    data = os.path.join(work, f"data-fsync-{fsync}-analysis-{analysis}")
    port_file = os.path.join(work, "ports")
    if os.path.exists(port_file):
        os.remove(port_file)
    agents = f"127.0.0.1:{free_port()}"
    collector = subprocess.Popen(
        [os.path.join(bin_dir, "trainscope-collector"), f"--listen={agents}",
         f"--feed=tcp://127.0.0.1:{free_port()}", f"--snapshot=tcp://127.0.0.1:{free_port()}",
         f"--data-dir={data}", f"--port-file={port_file}", f"--fsync={'true' if fsync else 'false'}",
         f"--analysis={'true' if analysis else 'false'}"],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "collector.err"), "w"))
    deadline = time.time() + 30
    while not os.path.exists(port_file):
        if collector.poll() is not None or time.time() > deadline:
            sys.exit("collector did not start; see " + os.path.join(work, "collector.err"))
        time.sleep(0.05)

    per_proc = streams // processes
    start = time.time()
    gens = []
    for p in range(processes):
        summary = os.path.join(work, f"summary-{fsync}-{analysis}-{p}.jsonl")
        gens.append((summary, subprocess.Popen(
            [os.path.join(bin_dir, "trainscope-loadgen"), "--collector", agents, "--job", "bench",
             "--rank", str(p * per_proc), "--streams", str(per_proc), "--world-size", str(streams),
             "--run-for-ms", str(int(seconds * 1000)), "--rate", str(rate), "--summary", summary,
             "--flush-timeout-ms", "120000"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, f"loadgen-{p}.err"), "w"))))
    for _, g in gens:
        g.wait(timeout=600)
    elapsed = time.time() - start
    rss = peak_rss_mib(collector.pid)
    collector_cpu = cpu_seconds(collector.pid)
    collector.send_signal(signal.SIGTERM)
    collector.wait(timeout=60)

    acked = attempted = dropped = 0
    for summary, _ in gens:
        with open(summary) as f:
            for line in f:
                s = json.loads(line)
                acked += s["acked"]
                attempted += s["attempted"]
                dropped += s["dropped_ring_full"] + s["dropped_buffer_full"] + s["dropped_shutdown"]
    log_bytes = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(data) for f in fs)
    # The next run with the same settings starts from an empty data dir.
    shutil.rmtree(data, ignore_errors=True)
    return dict(fsync=fsync, analysis=analysis, elapsed=elapsed, acked=acked, attempted=attempted, dropped=dropped,
                rate=acked / elapsed, rss=rss, log_mib=log_bytes / 2**20, cpu=collector_cpu,
                per_cpu=acked / collector_cpu if collector_cpu > 0 else float("nan"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="build directory (default: build)")
    ap.add_argument("--streams", type=int, default=64, help="agent streams (default: 64)")
    ap.add_argument("--processes", type=int, default=2, help="load generator processes (default: 2)")
    ap.add_argument("--rate", type=int, default=80000,
                    help="events/s offered per stream (default: 80000, i.e. 5.1 M/s for 64 streams)")
    ap.add_argument("--seconds", type=float, default=6.0, help="how long the agents record (default: 6)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="analysis on/off pairs (fsync off) run back to back after the first round; "
                         "the ratios are the medians over all pairs (default: 1). On a shared "
                         "machine one pair is noisy: other load lands on either side")
    args = ap.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    for b in ("trainscope-collector", "trainscope-loadgen"):
        if not os.access(os.path.join(bin_dir, b), os.X_OK):
            sys.exit(f"missing {bin_dir}/{b}: build first (scripts/build.sh)")
    work = tempfile.mkdtemp(prefix="trainscope-ingest-")
    try:
        offered = args.streams * args.rate
        print(f"collector ingest: {args.streams} agent streams in {args.processes} processes, "
              f"{offered:,} events/s offered for {args.seconds:g} s, on {os.cpu_count()} cores "
              f"shared with the agents")
        print(f"{'fsync':>6} {'analysis':>8} {'events acked':>14} {'seconds':>8} {'events/s':>12} {'vs 5M/s':>8} "
              f"{'dropped':>11} {'collector CPU s':>16} {'events/CPU-s':>13} {'peak RSS MiB':>13} "
              f"{'log MiB':>8}")
        def run_and_print(fsync, analysis):
            r = run_once(bin_dir, args.streams, args.processes, args.rate, args.seconds, fsync,
                         analysis, work)
            print(f"{str(r['fsync']):>6} {str(r['analysis']):>8} {r['acked']:>14,} {r['elapsed']:>8.2f} {r['rate']:>12,.0f} "
                  f"{r['rate'] / 5e6:>7.2f}x {r['dropped']:>11,} {r['cpu']:>16.2f} "
                  f"{r['per_cpu']:>13,.0f} {r['rss']:>13.1f} {r['log_mib']:>8.1f}", flush=True)
            return r

        pairs = []
        for round_ in range(max(1, args.repeat)):
            if round_ == 0:
                run_and_print(True, True)
            # Alternate which side goes first so that a trend in the machine's
            # other load does not always favour the same side.
            order = (True, False) if round_ % 2 == 0 else (False, True)
            results = {analysis: run_and_print(False, analysis) for analysis in order}
            pairs.append((results[True], results[False]))
        rate = statistics.median(on["rate"] / off["rate"] for on, off in pairs)
        per_cpu = statistics.median(on["per_cpu"] / off["per_cpu"] for on, off in pairs)
        print(f"analysis on / off (fsync off{f', median of {len(pairs)} pairs' if len(pairs) > 1 else ''}): "
              f"end-to-end events/s {rate:.2f}x, events per collector CPU-s {per_cpu:.2f}x "
              f"(budget: no more than 20 % lower)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
