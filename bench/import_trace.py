#!/usr/bin/python3
"""Import speed and peak memory of `trainscope import` on a generated
multi-rank PyTorch profiler trace (the legacy Chrome JSON format torch
writes: one file per rank, ~150 bytes per event), and export speed of the
imported job.

    /usr/bin/python3 bench/import_trace.py [--mb 1024] [--ranks 8] [--build build]

Prints MB/s, events/s and the importer's peak RSS (from /usr/bin/time):
bounded memory means the RSS does not grow with the trace.
Anchors: HTA ~4.65 s and ~390 MB RAM per rank file of an 8-rank ViT trace; a
200 GB trace needing 950 GB RAM in HTA.
"""
import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time


def write_rank(path, rank, target_bytes):
    """Steps of 40 operators and an all-reduce each, until the file is large enough."""
    t = rank * 37.0  # each rank's clock starts elsewhere
    events = 0
    with open(path, "w") as f:
        f.write("[")
        step = 0
        first = True
        while f.tell() < target_bytes:
            parts = [f'{{"name": "ProfilerStep#{step}", "ph": "X", "ts": {t:.3f}, "dur": 4000, '
                     f'"tid": 1, "pid": "CPU functions", "args": {{}}}}']
            for i in range(40):
                parts.append(f'{{"name": "aten::op_{i % 7}", "ph": "X", "ts": {t + 10 + i * 90:.3f}, '
                             f'"dur": 80, "tid": 1, "pid": "CPU functions", "args": {{}}}}')
            parts.append(f'{{"name": "gloo:all_reduce", "ph": "X", "ts": {t + 3700:.3f}, '
                         f'"dur": 250, "tid": 2, "pid": "CPU functions", "args": {{}}}}')
            f.write(("" if first else ",\n") + ",\n".join(parts))
            first = False
            events += len(parts)
            t += 4000
            step += 1
        f.write("]\n")
    return events


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=1024, help="total trace size in MB (default 1024)")
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--build", default=os.environ.get("TRAINSCOPE_BUILD_DIR", "build"))
    args = ap.parse_args()
    cli = os.path.join(args.build, "bin", "trainscope")
    work = tempfile.mkdtemp(prefix="trainscope-import-bench-")
    try:
        t0 = time.monotonic()
        files, events = [], 0
        for r in range(args.ranks):
            path = os.path.join(work, f"trace_rank{r}.json")
            events += write_rank(path, r, args.mb * 1_000_000 // args.ranks)
            files.append(path)
        size = sum(os.path.getsize(f) for f in files)
        print(f"generated {args.ranks} rank files, {size / 1e6:.0f} MB, {events:,} events "
              f"in {time.monotonic() - t0:.1f} s", flush=True)
        data = os.path.join(work, "data")
        t0 = time.monotonic()
        run = subprocess.run(["/usr/bin/time", "-v", cli, "import", "--job", "bench", "--data-dir",
                              data, *files], capture_output=True, text=True)
        seconds = time.monotonic() - t0
        if run.returncode != 0:
            raise SystemExit(run.stdout + run.stderr)
        rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr).group(1))
        print(run.stdout.strip())
        print(f"import: {size / 1e6 / seconds:.1f} MB/s, {events / seconds:,.0f} events/s, "
              f"peak RSS {rss_kb / 1024:.0f} MiB for {size / 1e6:.0f} MB of trace "
              f"({rss_kb * 1024 / size:.3f} bytes of RAM per byte of trace)")
        out = os.path.join(work, "export.json")
        t0 = time.monotonic()
        run = subprocess.run(["/usr/bin/time", "-v", cli, "export", "bench", "--data-dir", data,
                              "--format", "chrome", "--out", out], capture_output=True, text=True)
        seconds = time.monotonic() - t0
        if run.returncode != 0:
            raise SystemExit(run.stdout + run.stderr)
        rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr).group(1))
        exported = int(re.search(r"(\d+) operators", run.stdout).group(1))
        print(f"export (analysis of the stored job + Chrome JSON): {exported:,} operators in "
              f"{seconds:.1f} s ({exported / seconds:,.0f} operators/s), "
              f"{os.path.getsize(out) / 1e6:.0f} MB written, peak RSS {rss_kb / 1024:.0f} MiB "
              f"(the analysis keeps the newest 4 M operators)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
