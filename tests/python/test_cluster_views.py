"""The viewer's cluster views on a real 4-rank job (the pipeline example, 2
stages x 2 replicas, gloo) with a slow link injected (--slow-link 0:2): the
job's stored log renders in every cluster view (--render topology, trend,
chord, hilbert-ring, traffic-matrix) and the viewer's own pixel checks on it
(viewer_tests' ClusterViewsRealJobTest, pointed at the stored job) pass.
The example delays rank 0's sends in user space, so the collector blames
rank 0 (straggler, collective_wait), not the link: the views are checked
for that (see the C++ test's comment).

Run: /usr/bin/python3 -m pytest tests/python/test_cluster_views.py
"""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest

from conftest import BUILD_DIR
from jobs_util import run_job, trainscope_env

VIEWER = BUILD_DIR / "bin" / "trainscope-viewer"
VIEWER_TESTS = BUILD_DIR / "bin" / "viewer_tests"


def test_real_slow_link_job_renders_in_every_cluster_view(trainscope_module, collector, tmp_path):
    if not VIEWER.exists() or not VIEWER_TESTS.exists():
        pytest.skip("trainscope-viewer / viewer_tests are not built")
    job = f"cluster-{uuid.uuid4().hex[:6]}"
    res = run_job("pipeline_train.py",
                  ["--world-size", "4", "--batch-size", "32", "--dataset", "digits",
                   "--steps", "14", "--micro-batches", "2", "--no-eval",
                   "--slow-link", "0:2", "--delay-ms", "40",
                   "--collector", collector.address, "--job", job], tmp_path,
                  env=trainscope_env(trainscope_module))
    assert res.rc == 0, res.describe()
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    out_dir = os.environ.get("CLUSTER_VIEWS_SAVE", str(tmp_path))
    for view in ["topology", "trend", "chord", "hilbert-ring", "traffic-matrix"]:
        out = os.path.join(out_dir, f"real-slow-link-{view}.png")
        r = subprocess.run([str(VIEWER), "--data-dir", str(collector.data_dir), "--job", job,
                            "--level", "device", "--render", view, "--out", out,
                            "--width", "1400", "--height", "1000"],
                           capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, (view, r.stdout, r.stderr)
        assert os.path.getsize(out) > 10_000, view
    env.update(TRAINSCOPE_REAL_JOB_DATA_DIR=str(collector.data_dir), TRAINSCOPE_REAL_JOB=job)
    r = subprocess.run([str(VIEWER_TESTS), "--gtest_filter=ClusterViewsRealJobTest.*"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert "[  PASSED  ] 1 test" in r.stdout, r.stdout[-3000:]
