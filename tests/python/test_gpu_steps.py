"""Per-step device time of real GPU traces (issue 19, part 4): every trace in
../shared/data/kineto-gpu/ with ProfilerStep marks is imported with the
built `trainscope import`, and `trainscope steps --json` is checked against
figures computed here independently, in plain Python over the same trace
JSON: per step and rank, the union of its compute kernels' intervals (GPU
busy), of its NCCL kernels' (collective time) and of its H2D, D2H and other
copies', and its kernel count. A GPU event belongs to the step whose CPU
launch made it: the runtime call with its correlation id, placed among the
ProfilerStep#N starts (step N runs from its start to step N+1's; launches
before the first mark are step first-1's); an event without a known launch
is placed by its own start. They must agree within 1 % or 1 us per step.

A second test makes a 4-rank job from one real rank trace: the ranks run the
same trace; from some step on one rank's backward pass is delayed, its peers'
NCCL kernels lengthened only by the wait that delay causes. The straggler and
collective-wait rules must each name the late rank, and no other.

Run: /usr/bin/python3 -m pytest tests/python/test_gpu_steps.py
"""

from __future__ import annotations

import copy
import gzip
import json
import pathlib
import subprocess

import pytest

from conftest import CLI_BIN

DATA = (pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "data" / "kineto-gpu")
# Files of one job are imported together (the trace_filter pair is two ranks
# of one job); every other file is a job of its own.
JOBS = {
    "trace_filter": ["trace_filter__sampled_rank-0.json.gz", "trace_filter__sampled_rank-1.json.gz"],
}
STEP_PREFIX = "ProfilerStep#"
RUNTIME_CATS = {"cuda_runtime", "cuda_driver"}
NS_PER_US = 1000


def cli(*args, timeout=300):
    result = subprocess.run([str(CLI_BIN), *args], capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"trainscope {' '.join(args)}:\n{result.stdout}{result.stderr}"
    return result.stdout


def load(path: pathlib.Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def ns(us) -> int:
    return round(float(us) * NS_PER_US)


def union(intervals) -> int:
    total, end = 0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def copy_kind(event: dict) -> str:
    if event.get("cat") == "gpu_memset":
        return "other"
    name = event.get("name", "")
    kind = str(event.get("args", {}).get("kind", ""))
    if "HtoD" in name or kind == "HtoD":
        return "h2d"
    if "DtoH" in name or kind == "DtoH":
        return "d2h"
    return "other"


def expected_steps(trace: dict) -> dict[int, dict]:
    """Per step number: busy, nccl, h2d, d2h, other copies (ns) and kernels."""
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    marks = sorted((ns(e["ts"]), int(e["name"][len(STEP_PREFIX):])) for e in events
                   if e.get("name", "").startswith(STEP_PREFIX)
                   and e.get("cat") in ("cpu_op", "user_annotation"))
    assert marks, "a trace with steps"
    launches = {}
    for e in events:
        if e.get("cat") in RUNTIME_CATS and "correlation" in e.get("args", {}):
            launches[e["args"]["correlation"]] = ns(e["ts"])

    def step_of(at: int) -> int:
        step = marks[0][1] - 1
        for start, n in marks:
            if at >= start:
                step = n
        return step

    steps: dict[int, dict] = {}
    for e in events:
        cat = e.get("cat")
        if cat not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        start, end = ns(e["ts"]), ns(e["ts"]) + ns(e.get("dur", 0))
        launch = launches.get(e.get("args", {}).get("correlation"), start)
        s = steps.setdefault(step_of(launch), {"busy": [], "nccl": [], "h2d": [], "d2h": [],
                                               "other": [], "kernels": 0})
        if cat == "kernel":
            s["kernels"] += 1
            s["nccl" if e["name"].startswith("nccl") else "busy"].append((start, end))
        else:
            s[copy_kind(e)].append((start, end))
    return {n: {k: (union(v) if isinstance(v, list) else v) for k, v in s.items()}
            for n, s in steps.items()}


def rank_of(trace: dict, fallback: int) -> int:
    info = trace.get("distributedInfo") or {}
    return int(info.get("rank", fallback))


def imported_steps(tmp_path, job: str, files: list[pathlib.Path]) -> list[dict]:
    data = tmp_path / "data"
    cli("import", "--job", job, "--data-dir", str(data), *map(str, files))
    out = cli("steps", job, "--data-dir", str(data), "--json")
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def trace_jobs():
    grouped = {f for files in JOBS.values() for f in files}
    jobs = [(job, files) for job, files in JOBS.items()]
    for path in sorted(DATA.glob("*.json.gz")):
        if path.name not in grouped:
            jobs.append((path.name[:-len(".json.gz")], [path.name]))
    return jobs


def has_steps(files: list[str]) -> bool:
    for name in files:
        events = load(DATA / name)["traceEvents"]
        if not any(e.get("name", "").startswith(STEP_PREFIX) for e in events):
            return False
    return True


@pytest.mark.parametrize("job,files", [j for j in trace_jobs() if has_steps(j[1])],
                         ids=[j[0] for j in trace_jobs() if has_steps(j[1])])
def test_device_time_per_step_matches_an_independent_count(tmp_path, job, files):
    if not CLI_BIN.exists():
        pytest.skip(f"{CLI_BIN} is not built")
    paths = [DATA / f for f in files]
    expected = {}  # (step, rank) -> figures
    for i, path in enumerate(paths):
        trace = load(path)
        for step, figures in expected_steps(trace).items():
            expected[(step, rank_of(trace, i))] = figures
    reports = imported_steps(tmp_path, job, paths)
    got = {(int(d["step"]), int(d["rank"])): d for r in reports for d in r["devices"]}

    fields = {"busy": "gpu_busy_ns", "nccl": "collective_ns", "h2d": "h2d_copy_ns",
              "d2h": "d2h_copy_ns", "other": "other_copy_ns"}
    checked = 0
    for key, want in sorted(expected.items()):
        step, rank = key
        assert key in got, f"step {step} rank {rank} has GPU work but no report: {sorted(got)}"
        d = got[key]
        assert d.get("has_gpu"), f"step {step} rank {rank}: has_gpu not set"
        assert int(d.get("kernels", 0)) == want["kernels"], \
            f"step {step} rank {rank}: kernels {d.get('kernels')} != {want['kernels']} (dropped?)"
        for name, field in fields.items():
            if name == "nccl" and want["nccl"] == 0:
                continue  # without NCCL kernels the host's collective figures stand
            value = int(d.get(field, 0))
            margin = max(0.01 * want[name], 1000)
            assert abs(value - want[name]) <= margin, \
                f"step {step} rank {rank}: {field} {value} != {want[name]} (+-{margin:.0f})"
        # compute_ns is device time whenever there is GPU work.
        assert int(d["compute_ns"]) == int(d.get("gpu_busy_ns", 0))
        assert int(d["start_ns"]) <= int(d["end_ns"]), f"step {step} rank {rank}: start > end"
        checked += 1
    assert checked > 0
    invented = sorted(k for k, d in got.items() if d.get("has_gpu") and k not in expected)
    assert not invented, f"GPU work in steps the trace launched none in: {invented}"


# --- A multi-rank job made from a real rank trace -------------------------

TEMPLATE = "nccl_parser_config__nccl_data.json.gz"  # NCCL all-reduces, record_param_comms
RANKS = 4
LATE_RANK = 2
STEPS = 16
DELAYED_FROM = 8  # rules judge nothing in a job's first 5 steps
DELAY_AT = 0.3  # of the step: the template's big all-reduces come after it
CORRELATION_STRIDE = 10_000_000


def one_step(trace: dict):
    """The template's second step: its events (GPU work by its launch) and period (us)."""
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"
              and e.get("cat") not in ("gpu_user_annotation",)]
    marks = sorted((float(e["ts"]), e) for e in events
                   if e.get("name", "").startswith(STEP_PREFIX) and e.get("cat") == "user_annotation")
    (start, mark), (end, _) = marks[1], marks[2]
    launch = {e["args"]["correlation"]: float(e["ts"]) for e in events
              if e.get("cat") in RUNTIME_CATS and "correlation" in e.get("args", {})}
    step = []
    for e in events:
        if e is mark:
            continue
        at = float(e["ts"])
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            at = launch.get(e.get("args", {}).get("correlation"), at)
        if start <= at < end:
            step.append(e)
    return mark, step, start, end - start


def make_rank(trace: dict, rank: int, delay_us: float) -> dict:
    """`rank`'s trace: the template's step STEPS times. From DELAYED_FROM on, the
    late rank's work from DELAY_AT of its step on (its backward pass: the
    gradient all-reduces) runs `delay_us` later, what spans that point lasting
    as much longer; its peers' first NCCL kernel after that point waits that
    long for it (their later NCCL kernels follow it), and every rank's next
    step starts that much later."""
    mark, step, start, period = one_step(trace)
    split = start + DELAY_AT * period
    launch = {e["args"]["correlation"]: float(e["ts"]) for e in step
              if e.get("cat") in RUNTIME_CATS and "correlation" in e.get("args", {})}

    def placed(e):  # GPU work by its launch, the rest by its start
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            return launch.get(e.get("args", {}).get("correlation"), float(e["ts"]))
        return float(e["ts"])

    nccl_after = sorted(float(e["ts"]) for e in step
                        if e.get("cat") == "kernel" and e["name"].startswith("nccl")
                        and placed(e) >= split)
    out = []
    for n in range(1, STEPS + 1):
        delayed = n >= DELAYED_FROM
        shift = (n - 1) * period + delay_us * max(0, n - DELAYED_FROM)
        m = copy.deepcopy(mark)
        m["name"] = f"{STEP_PREFIX}{n}"
        m["ts"] = float(m["ts"]) + shift
        m["dur"] = float(m["dur"]) + (delay_us if delayed else 0)
        out.append(m)
        for e in step:
            c = dict(e)
            c["args"] = dict(e.get("args", {}))
            for key in ("correlation", "External id"):
                if key in c["args"]:
                    c["args"][key] += n * CORRELATION_STRIDE
            if "Process Group Ranks" in c["args"]:
                c["args"]["Process Group Ranks"] = str(list(range(RANKS)))
                c["args"]["Group size"] = RANKS
            ts = float(c["ts"]) + shift
            if delayed and rank == LATE_RANK:
                if placed(e) >= split:
                    ts += delay_us
                elif float(e["ts"]) + float(e.get("dur", 0)) > split and \
                        e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
                    c["dur"] = float(c["dur"]) + delay_us  # holds the delay
            elif delayed and c.get("cat") == "kernel" and c["name"].startswith("nccl") \
                    and placed(e) >= split:
                if float(e["ts"]) == nccl_after[0]:
                    c["dur"] = float(c["dur"]) + delay_us  # waits for the late rank
                else:
                    ts += delay_us
            c["ts"] = ts
            out.append(c)
    info = dict(trace["distributedInfo"])
    info.update(rank=rank, world_size=RANKS,
                pg_config=[{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                            "pg_size": RANKS, "ranks": list(range(RANKS))}])
    meta = [e for e in trace["traceEvents"] if e.get("ph") == "M"]
    return {"schemaVersion": 1, "distributedInfo": info,
            "deviceProperties": trace.get("deviceProperties", []), "traceEvents": meta + out}


def test_a_late_rank_is_named_by_the_straggler_and_collective_wait_rules(tmp_path):
    if not CLI_BIN.exists():
        pytest.skip(f"{CLI_BIN} is not built")
    trace = load(DATA / TEMPLATE)
    _, _, _, period = one_step(trace)
    delay_us = period  # the late rank loses a whole step's time: half of the peers' step waits
    files = []
    for rank in range(RANKS):
        path = tmp_path / f"rank{rank}.json"
        path.write_text(json.dumps(make_rank(trace, rank, delay_us), separators=(",", ":")))
        files.append(path)
    data = tmp_path / "data"
    cli("import", "--job", "late", "--data-dir", str(data), *map(str, files))

    # The device-time figures: the peers wait for the late rank's NCCL kernels.
    reports = [json.loads(l) for l in cli("steps", "late", "--data-dir", str(data), "--json")
               .splitlines() if l.strip()]
    by_step = {int(r["step"]): {int(d["rank"]): d for d in r["devices"]} for r in reports}
    for n in range(DELAYED_FROM, STEPS):
        for rank, d in by_step[n].items():
            assert d.get("has_gpu"), f"step {n} rank {rank}"
            if rank == LATE_RANK:
                assert int(d.get("wait_ns", 0)) < 0.1 * delay_us * NS_PER_US, (n, d)
                assert int(d.get("lateness_ns", 0)) > 0.8 * delay_us * NS_PER_US, (n, d)
            else:
                assert int(d["waited_for_rank"]) == LATE_RANK, (n, rank, d["waited_for_rank"])
                assert int(d["wait_ns"]) > 0.8 * delay_us * NS_PER_US, (n, rank, d["wait_ns"])
    for n in range(2, DELAYED_FROM):
        for rank, d in by_step[n].items():
            assert int(d.get("wait_ns", 0)) < 0.1 * delay_us * NS_PER_US, (n, rank, d)

    alerts = [json.loads(l) for l in cli("alerts", "late", "--data-dir", str(data), "--json")
              .splitlines() if l.strip()]
    named = {}
    for a in alerts:
        if a.get("rule") in ("straggler", "collective_wait") and a.get("state") != "ALERT_STATE_CLEARED":
            named.setdefault(a["rule"], set()).add(int(a.get("cause_rank", -1)))
    for rule in ("straggler", "collective_wait"):
        assert named.get(rule) == {LATE_RANK}, \
            f"{rule} named {sorted(named.get(rule, []))}, not rank {LATE_RANK} alone: {alerts}"


def test_an_imported_cpu_bound_trace_is_named_launch_bound(tmp_path):
    """The finding a user of nccl_parser_config needs: its GPU idles about
    three quarters of each step because the host cannot launch work fast
    enough. The import's rules raise launch_bound for its one rank (and the
    import judges every recorded step: a profiler trace has no warm-up steps
    of its own to skip), and `trainscope steps` says so per device."""
    data = tmp_path / "data"
    path = DATA / "nccl_parser_config__nccl_data.json.gz"
    out = cli("import", "--job", "cpubound", "--data-dir", str(data), str(path))
    assert "the rules raised" in out, out
    alerts = [json.loads(line) for line in
              cli("alerts", "cpubound", "--data-dir", str(data), "--json").splitlines()]
    launch_bound = [a for a in alerts if a["rule"] == "launch_bound"]
    assert launch_bound and {tuple(a["ranks"]) for a in launch_bound} == {(0,)}, alerts
    table = cli("steps", "cpubound", "--data-dir", str(data))
    assert "launch-bound (the CPU does not launch work fast enough)" in table, table


def matrix_flops(name: str, dims: list) -> int:
    """2 x multiply-accumulates of a matrix product from Kineto's Input Dims
    (written here apart from trainscope::ops, the formulas under test)."""
    try:
        if name == "aten::mm":
            (n, k), (k2, m) = dims[0], dims[1]
        elif name == "aten::addmm":  # (bias, mat1, mat2, beta, alpha)
            (n, k), (k2, m) = dims[1], dims[2]
        elif name == "aten::bmm":
            (b, n, k), (b2, k2, m) = dims[0], dims[1]
            return 2 * b * n * k * m if b == b2 and k == k2 else 0
        else:
            return 0
    except (ValueError, IndexError, TypeError):
        return 0
    return 2 * n * k * m if k == k2 else 0


@pytest.mark.parametrize("trace_file", ["trace_diff__control__control.json.gz",
                                        "negative_queue_length_values_check__rank0.json.gz"])
def test_achieved_flops_come_from_the_launching_operators_shapes(tmp_path, trace_file):
    """Traces recorded with record_shapes carry each operator's Input Dims:
    the import gives each matrix product's FLOPs to its first kernel, so a
    step's FLOPs are those of the products whose first kernel launch ran in
    it (each counted once: linear/matmul only wrap them)."""
    trace = load(DATA / trace_file)
    events = sorted((e for e in trace["traceEvents"] if e.get("ph") == "X"),
                    key=lambda e: float(e["ts"]))
    marks = sorted((ns(e["ts"]), int(e["name"][len(STEP_PREFIX):])) for e in events
                   if e.get("name", "").startswith(STEP_PREFIX)
                   and e.get("cat") in ("cpu_op", "user_annotation"))
    launches = [(ns(e["ts"]), e["tid"]) for e in events
                if e.get("cat") in RUNTIME_CATS and e.get("name") == "cudaLaunchKernel"]
    expected: dict[int, int] = {}
    for e in events:
        if e.get("name") not in ("aten::mm", "aten::addmm", "aten::bmm"):
            continue
        start, end = ns(e["ts"]), ns(e["ts"]) + ns(e.get("dur", 0))
        first = next((t for t, tid in launches if tid == e["tid"] and start <= t <= end), None)
        flops = matrix_flops(e["name"], e.get("args", {}).get("Input Dims", []))
        if first is None or not flops:
            continue
        step = max((n for s, n in marks if s <= first), default=marks[0][1] - 1)
        expected[step] = expected.get(step, 0) + flops
    assert sum(expected.values()) > 10**9, "the trace's matrix products"
    got = {int(d["step"]): int(d.get("flops", 0)) for report in
           imported_steps(tmp_path, "flops", [DATA / trace_file]) for d in report["devices"]}
    for step, flops in expected.items():
        if step in got:  # the steps the import closed
            assert abs(got[step] - flops) <= 0.01 * flops, (step, got[step], flops)
    assert any(got.get(step, 0) > 0 for step in expected), (got, expected)
