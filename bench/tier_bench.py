#!/usr/bin/python3
"""The collector tier on NATS JetStream, end to end (docs/scale.md).

Real processes on loopback: a nats-server with JetStream, N node collectors
(--publish) each fed by a trainscope-loadgen with S streams, and a job-level
collector (--upstream). Measures, in one run:

  throughput  events/s from the loadgens' start until the job-level collector
              holds every acknowledged event, against the baseline of the same
              loadgens into one collector directly (ratio in the same run);
              also with --publish-events=summary
  latency     (a) node log -> durable at the job level, per batch (the job
              level's upstream.status, sampled), (b) a job-wide step: when the
              job-level feed publishes it minus when the last node's feed did
              (what the tier adds to a step summary over a single collector)
  recovery    nats-server killed and restarted, and a node collector killed and
              restarted, mid-run: seconds from the restart until the job level
              again holds every event the nodes hold

    /usr/bin/python3 bench/tier_bench.py [--build build] [--nodes 4] [--streams 2]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[1]


def by_rank(collector, job, field="events_received"):
    r = collector.cli("status", job, "--json", check=False)
    if r.returncode != 0:
        return {}
    return {int(x["rank"]): int(x.get(field, 0)) for x in json.loads(r.stdout)["ranks"]}


def events_by_rank(collector, job):
    return by_rank(collector, job)


def wait_caught_up(job_level, nodes, job, timeout_s=300, field="events_received"):
    """Seconds until the job level holds, per rank, what the nodes hold (events, or
    batches with --publish-events=summary, whose batches carry fewer events)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        want = {}
        for n in nodes:
            want.update(by_rank(n, job, field))
        got = by_rank(job_level, job, field)
        if want and got == want:
            return time.monotonic() - start, sum(want.values())
        time.sleep(0.1)
    raise RuntimeError(f"job level not caught up in {timeout_s} s: {got} vs {want}")


def run_loadgens(tu, addresses, job, streams, events, rate, tmp, run_for_ms=0):
    procs = []
    for i, address in enumerate(addresses):
        procs.append(tu.start_loadgen(address, job, i * streams, streams,
                                      len(addresses) * streams, events, rate,
                                      tmp / f"lg-{job}-{i}.json", run_for_ms=run_for_ms))
    return procs


def wait_all(procs):
    for p in procs:
        out, err = p.communicate(timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"loadgen failed: {out}\n{err}")


def throughput(tu, conftest, tmp, nodes_n, streams, events, summary):
    job = "bench-summary" if summary else "bench-all"
    # Baseline: the same load into one collector.
    (tmp / f"single-{job}").mkdir()
    single = conftest.Collector(tmp / f"single-{job}").start()
    t0 = time.monotonic()
    wait_all(run_loadgens(tu, [single.address] * nodes_n, job, streams, events, 0, tmp))
    base_s = time.monotonic() - t0
    base_events = sum(events_by_rank(single, job).values())
    single.stop()
    # The tier.
    nats = tu.NatsServer(tmp / f"nats-{job}").start()
    extra = ["--publish-events=summary"] if summary else []
    jl = tu.job_level_collector(tmp / f"jl-{job}", nats.url).start()
    nodes = [tu.node_collector(tmp / f"n{i}-{job}", nats.url, f"n{i}", extra=extra).start()
             for i in range(nodes_n)]
    t0 = time.monotonic()
    wait_all(run_loadgens(tu, [n.address for n in nodes], job, streams, events, 0, tmp))
    nodes_s = time.monotonic() - t0
    wait_caught_up(jl, nodes, job, field="last_sequence" if summary else "events_received")
    tier_s = time.monotonic() - t0
    node_events = sum(sum(events_by_rank(n, job).values()) for n in nodes)
    jl_events = sum(events_by_rank(jl, job).values())
    jl_log = sum(f.stat().st_size for f in jl.job_dir(job).glob("*") if f.is_file())
    node_log = sum(f.stat().st_size for n in nodes for f in n.job_dir(job).glob("*") if f.is_file())
    for c in [*nodes, jl]:
        c.stop()
    nats.stop()
    return {"mode": "summary" if summary else "all", "baseline_events_per_s": base_events / base_s,
            "tier_node_events_per_s": node_events / nodes_s,
            "tier_end_to_end_events_per_s": node_events / tier_s,
            "ratio_end_to_end_vs_baseline": (node_events / tier_s) / (base_events / base_s),
            "events": node_events, "job_level_events": jl_events,
            "node_log_bytes": node_log, "job_level_log_bytes": jl_log}


def tail_steps(collector, job, seconds, out):
    """Step updates on a collector's feed: {step: (arrival, step end)}, both on
    the wall clock: the aligned clock of a job whose ranks all run on this host
    is the agents' CLOCK_MONOTONIC mapped to the wall clock."""
    p = subprocess.Popen([str(REPO / "build/bin/trainscope"), "tail", job, "--kinds", "step",
                          "--json", "--for", str(seconds), "--collector", collector.address,
                          "--feed", collector.feed, "--snapshot", collector.snapshot],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in p.stdout:
        now = time.time_ns()
        try:
            update = json.loads(line).get("update") or {}
        except ValueError:
            continue
        step = update.get("step") or {}
        if "step" in step and int(step["step"]) not in out:
            out[int(step["step"])] = (now, int(step.get("end_ns", 0)))
    p.wait()


def step_latencies_ms(steps):
    return [(arrival - end) / 1e6 for arrival, end in steps.values() if end > 0]


def baseline_step_latency(tu, conftest, tmp, nodes_n, streams, rate):
    """Step-summary latency of one collector serving every rank directly."""
    job = "bench-live-single"
    (tmp / "single-live").mkdir()
    single = conftest.Collector(tmp / "single-live").start()
    procs = run_loadgens(tu, [single.address] * nodes_n, job, streams, 0, rate, tmp,
                         run_for_ms=14000)
    steps = {}
    tail_steps(single, job, 12, steps)
    wait_all(procs)
    single.stop()
    return step_latencies_ms(steps)


def latency_and_recovery(tu, tmp, nodes_n, streams, rate):
    job = "bench-live"
    nats = tu.NatsServer(tmp / "nats-live").start()
    jl = tu.job_level_collector(tmp / "jl-live", nats.url).start()
    nodes = [tu.node_collector(tmp / f"n{i}-live", nats.url, f"live{i}").start()
             for i in range(nodes_n)]
    procs = run_loadgens(tu, [n.address for n in nodes], job, streams, 0, rate, tmp,
                         run_for_ms=30000)
    jl_steps = {}
    tails = [threading.Thread(target=tail_steps, args=(jl, job, 12, jl_steps))]
    for t in tails:
        t.start()
    batch_lat = []
    t_end = time.monotonic() + 10
    while time.monotonic() < t_end:
        v = int(tu.read_status(jl.data_dir / "tier" / "upstream.status").get("last_latency_ns", 0))
        if v > 0:
            batch_lat.append(v / 1e6)
        time.sleep(0.1)
    for t in tails:
        t.join()
    tier_steps = step_latencies_ms(jl_steps)
    # Recovery: NATS killed for 2 s, then a node collector killed and restarted,
    # while the ranks go on: seconds from each restart until the job level holds
    # every event the nodes held at that moment.
    def total(c, ranks=None):
        return sum(v for r, v in events_by_rank(c, job).items() if ranks is None or r in ranks)

    def wait_reach(target, ranks=None, timeout_s=120):
        t = time.monotonic()
        while total(jl, ranks) < target:
            if time.monotonic() - t > timeout_s:
                raise RuntimeError("job level did not catch up")
            time.sleep(0.05)
        return time.monotonic() - t

    nats.kill()
    time.sleep(2.0)
    nats.start()
    t0 = time.monotonic()
    held = sum(total(n) for n in nodes)
    nats_recovery = (time.monotonic() - t0) + wait_reach(held)
    killed_ranks = set(range(streams, 2 * streams))
    nodes[1].kill()
    nodes[1].start()
    t0 = time.monotonic()
    held = total(nodes[1])
    node_recovery = (time.monotonic() - t0) + wait_reach(held, killed_ranks)
    wait_all(procs)
    _, total_events = wait_caught_up(jl, nodes, job)
    for c in [*nodes, jl]:
        c.stop()
    nats.stop()
    q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")
    return {"batch_latency_ms_median": statistics.median(batch_lat) if batch_lat else None,
            "batch_latency_ms_p95": q(batch_lat, 0.95),
            "step_latency_ms_median": statistics.median(tier_steps) if tier_steps else None,
            "step_latency_ms_p95": q(tier_steps, 0.95),
            "steps": len(tier_steps),
            "nats_restart_to_caught_up_s": nats_recovery,
            "node_restart_to_caught_up_s": node_recovery,
            "events_equal_at_end": total_events}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--streams", type=int, default=2)
    ap.add_argument("--events", type=int, default=200000, help="per stream, throughput runs")
    ap.add_argument("--rate", type=float, default=5000, help="events/s per stream, latency run")
    args = ap.parse_args()
    os.environ["TRAINSCOPE_BUILD_DIR"] = str(pathlib.Path(args.build).resolve())
    sys.path.insert(0, str(REPO / "tests/python"))
    import conftest  # noqa: PLC0415
    import tier_util as tu  # noqa: PLC0415
    with tempfile.TemporaryDirectory(prefix="tier-bench-") as d:
        tmp = pathlib.Path(d)
        results = {"nodes": args.nodes, "streams_per_node": args.streams,
                   "events_per_stream": args.events}
        results["throughput"] = [throughput(tu, conftest, tmp, args.nodes, args.streams,
                                            args.events, summary) for summary in (False, True)]
        base = baseline_step_latency(tu, conftest, tmp, args.nodes, args.streams, args.rate)
        results["single_collector_step_latency_ms"] = {
            "median": statistics.median(base) if base else None,
            "p95": sorted(base)[int(0.95 * len(base))] if base else None, "steps": len(base)}
        results["live"] = latency_and_recovery(tu, tmp, args.nodes, args.streams, args.rate)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
