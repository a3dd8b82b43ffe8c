"""The cluster views on a real 4-rank job (the pipeline example, 2 stages x 2
replicas, gloo) with a slow link injected (--slow-link 0:2: every activation
from rank 0 arrives --delay-ms late inside rank 2's timed recv, rank 0 on
time) and each rank's rack given as its TRAINSCOPE_RACK (--racks, as a
launcher sets it per node):

* the collector raises slow_link naming the link 0 -> 2 (its measured
  bytes/s far below the other send/recv links', most of the step);
* every rank's status carries the rack its agent said in Hello;
* the job's stored log renders in every cluster view and in the Marey graph
  with the link selected (--render ... --select-link 0:2), and the viewer's
  own checks on it (viewer_tests' ClusterViewsRealJobTest, pointed at the
  stored job: the link the heaviest cell, its alert selecting it in the
  Marey graph, overview and alerts list, ranks 0-1 and 2-3 in two racks)
  pass.

Run: /usr/bin/python3 -m pytest tests/python/test_cluster_views.py
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid

import pytest

from conftest import BUILD_DIR
from jobs_util import run_job, trainscope_env, wait_until

VIEWER = BUILD_DIR / "bin" / "trainscope-viewer"
VIEWER_TESTS = BUILD_DIR / "bin" / "viewer_tests"
RACKS = ["rack-a", "rack-a", "rack-b", "rack-b"]


def cli_json(collector, *args) -> list:
    out = collector.cli(*args, "--json", "--feed", collector.feed, "--snapshot",
                        collector.snapshot, timeout_s=60).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def describe(alerts) -> str:
    return "\n".join(f"{a.get('rule')} {a.get('state')} step {a.get('step')} ranks "
                     f"{a.get('ranks')}: {a.get('message', '')}" for a in alerts)


def test_real_slow_link_is_named_and_shows_in_every_view(trainscope_module, collector, tmp_path):
    if not VIEWER.exists() or not VIEWER_TESTS.exists():
        pytest.skip("trainscope-viewer / viewer_tests are not built")
    job = f"cluster-{uuid.uuid4().hex[:6]}"
    res = run_job("pipeline_train.py",
                  ["--world-size", "4", "--batch-size", "32", "--dataset", "digits",
                   "--steps", "24", "--micro-batches", "2", "--no-eval",
                   "--slow-link", "0:2", "--delay-ms", "40", "--racks", ",".join(RACKS),
                   "--collector", collector.address, "--job", job], tmp_path,
                  env=trainscope_env(trainscope_module), timeout_s=300)
    assert res.rc == 0, res.describe()

    # The collector names the link, and only that link.
    def slow_links():
        alerts = cli_json(collector, "alerts", job)
        raised = [a for a in alerts
                  if a.get("rule") == "slow_link" and a.get("state") == "ALERT_STATE_RAISED"]
        return (raised, alerts) if raised else None
    raised, alerts = wait_until(slow_links, 60, "a slow_link alert")
    for a in raised:
        assert (int(a.get("link_src_rank", -1)), int(a.get("link_dst_rank", -1))) == (0, 2), \
            describe(alerts)
        assert sorted(int(r) for r in a["ranks"]) == [0, 2], describe(alerts)

    # Each rank's rack, as its agent said it.
    status = collector.status(job)
    assert {int(r["rank"]): r.get("rack", "") for r in status["ranks"]} == dict(enumerate(RACKS))

    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    out_dir = os.environ.get("CLUSTER_VIEWS_SAVE", str(tmp_path))
    renders = [(v, ["--level", "device"]) for v in
               ["topology", "trend", "chord", "hilbert-ring", "traffic-matrix"]]
    renders += [("marey", ["--select-link", "0:2"]), ("topology", ["--level", "rack"])]
    for view, extra in renders:
        name = f"real-slow-link-{view}{'-rack' if 'rack' in extra else ''}.png"
        out = os.path.join(out_dir, name)
        r = subprocess.run([str(VIEWER), "--data-dir", str(collector.data_dir), "--job", job,
                            *extra, "--render", view, "--out", out,
                            "--width", "1400", "--height", "1000"],
                           capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, (view, r.stdout, r.stderr)
        assert os.path.getsize(out) > 10_000, view
    env.update(TRAINSCOPE_REAL_JOB_DATA_DIR=str(collector.data_dir), TRAINSCOPE_REAL_JOB=job)
    r = subprocess.run([str(VIEWER_TESTS), "--gtest_filter=ClusterViewsRealJobTest.*"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert "[  PASSED  ] 1 test" in r.stdout, r.stdout[-3000:]
