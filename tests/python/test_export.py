"""`trainscope export` on a real 4-rank DDP job: the Chrome trace JSON holds
every operator the analysis aligned (one process per rank, collectives
linked by flows, same counts as `trainscope ops`), live and from the data
dir, and imports back (`trainscope import --rank-from-pid`) to the same
operators; the Perfetto trace is a Trace message of packets. The writers'
formats are checked in detail by tests/collector/export.

Uses conftest's `collector` and `trainscope_module` fixtures.
Run: /usr/bin/python3 -m pytest tests/python/test_export.py
"""

from __future__ import annotations

import collections
import json
import subprocess
import uuid

from conftest import CLI_BIN
from jobs_util import run_job, trainscope_env
from test_analysis_job import analysis, wait_for_steps

STEPS = 20
WORLD = 4


def test_export_chrome_and_perfetto_of_a_real_job(collector, trainscope_module, tmp_path):
    job = f"export-{uuid.uuid4().hex[:8]}"
    res = run_job("ddp_train.py", ["--world-size", str(WORLD), "--steps", str(STEPS),
                                   "--log-every", "0", "--no-eval", "--collector",
                                   collector.address, "--job", job], tmp_path,
                  env=trainscope_env(trainscope_module))
    assert res.rc == 0, res.describe()
    wait_for_steps(collector, job, STEPS)
    view = analysis(collector, "ops", job, "--data-dir", str(collector.data_dir))[0]
    operators = view["operators"]["operators"]
    strings = view["operators"]["strings"]
    by_class = collections.Counter(op.get("op_class", "") for op in operators)
    assert by_class["OPERATOR_CLASS_COLLECTIVE"] >= STEPS * WORLD, by_class

    for source in (["--data-dir", str(collector.data_dir)],
                   ["--feed", collector.feed, "--snapshot", collector.snapshot]):
        out = tmp_path / "trace.json"
        result = collector.cli("export", job, "--format", "chrome", "--out", str(out), *source)
        assert f"wrote {out} (chrome)" in result.stdout, result.stdout
        trace = json.loads(out.read_text())
        events = trace["traceEvents"]
        slices = [e for e in events if e["ph"] == "X"]
        if source[0] == "--data-dir":
            assert len(slices) == len(operators)
            names = collections.Counter(strings[int(op.get("name", 0))] for op in operators)
            assert collections.Counter(e["name"] for e in slices) == names
        assert {e["pid"] for e in slices} == set(range(WORLD))
        collectives = [e for e in slices if e["cat"] == "collective"]
        starts = sum(1 for e in events if e["ph"] == "s")
        finishes = sum(1 for e in events if e["ph"] == "f")
        # Every participant but an instance's first is the end of one flow.
        assert starts == finishes >= len(collectives) * (WORLD - 1) // WORLD - WORLD
        assert min(e["ts"] for e in slices) == 0
        assert trace["otherData"]["job"] == job

    pftrace = tmp_path / "trace.pftrace"
    result = collector.cli("export", job, "--format", "perfetto", "--out", str(pftrace),
                           "--data-dir", str(collector.data_dir))
    assert f"{len(operators)} slices on" in result.stdout, result.stdout
    data = pftrace.read_bytes()
    assert data[:1] == b"\x0a", "a Trace message: field 1, length-delimited packets"

    # Round trip: the Chrome export imported back (every rank in one file)
    # and exported again holds the same operators, per rank and class.
    chrome = tmp_path / "trace.json"
    collector.cli("export", job, "--format", "chrome", "--out", str(chrome), "--data-dir",
                  str(collector.data_dir))
    back = tmp_path / "back"
    imported = subprocess.run([str(CLI_BIN), "import", "--job", "back", "--data-dir", str(back),
                               "--rank-from-pid", str(chrome)], capture_output=True, text=True,
                              timeout=120)
    assert f"{len(operators)} events" in imported.stdout, imported.stdout + imported.stderr
    again = tmp_path / "again.json"
    collector.cli("export", "back", "--format", "chrome", "--out", str(again), "--data-dir",
                  str(back))

    def kinds(path):
        return collections.Counter((e["pid"], e["cat"], e["name"])
                                   for e in json.loads(path.read_text())["traceEvents"]
                                   if e["ph"] == "X")
    assert kinds(again) == kinds(chrome)
    steps_back = analysis(collector, "steps", "back", "--data-dir", str(back))
    assert len(steps_back) >= STEPS - 2
    # Most steps hold every rank (under load one step now and then closes
    # before a rank's events of it are merged in: seen once in five runs).
    full = [s for s in steps_back[1:-1] if len(s["devices"]) == WORLD]
    assert len(full) >= 0.8 * len(steps_back[1:-1]), \
        [(s["step"], len(s["devices"])) for s in steps_back]

    bad = collector.cli("export", job, "--format", "svg", "--out", str(tmp_path / "x"),
                        check=False)
    assert bad.returncode == 2 and "expected chrome or perfetto" in bad.stderr
