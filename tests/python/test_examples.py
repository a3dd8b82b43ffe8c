"""The example training jobs, run for real without trainscope: 4 ranks on gloo,
real data, and every fault flag visible in the ranks' own timers.

Timing checks compare medians within one run with generous margins: they
show that a fault has its effect, they are not performance assertions.
Run: /usr/bin/python3 -m pytest tests/python/test_examples.py  (-m "not slow" to skip the longer jobs)
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import jobs_util
from jobs_util import EXAMPLES, med, run_job

pytestmark = pytest.mark.skipif(not jobs_util.torch_importable(),
                                reason="/usr/bin/python3 cannot import torch (python3-torch)")

# Small, CI-sized runs: a handful of seconds of training each.
BASE = ["--world-size", "4", "--batch-size", "32", "--log-every", "10"]


def import_common():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import common  # noqa: PLC0415
    finally:
        sys.path.remove(str(EXAMPLES))
    return common


def others(res, exclude):
    return [d for d in res.ranks if d["rank"] not in exclude]


# ---------------------------------------------------------------- data


def test_digits_are_sklearns_digits():
    common = import_common()
    from sklearn.datasets import load_digits
    images, target = common.load_digits_arrays()
    ref = load_digits()
    assert (images == ref.images).all() and (target == ref.target).all()
    d = common.load_dataset("digits")
    assert d["x_train"].shape[1:] == (1, 8, 8) and d["x_test"].shape[1:] == (1, 8, 8)
    assert len(d["y_train"]) + len(d["y_test"]) == 1797
    assert set(d["y_test"].tolist()) == set(range(10))


def test_fashion_mnist_idx_files_load_with_expected_shapes():
    common = import_common()
    d = common.load_dataset("fashion-mnist")
    assert tuple(d["x_train"].shape) == (60000, 1, 28, 28)
    assert tuple(d["x_test"].shape) == (10000, 1, 28, 28)
    assert tuple(d["y_train"].shape) == (60000,) and tuple(d["y_test"].shape) == (10000,)
    assert str(d["x_train"].dtype) == "torch.uint8"
    # Balanced classes 0..9: 6000 each in train, 1000 each in test.
    assert d["y_train"].bincount().tolist() == [6000] * 10
    assert d["y_test"].bincount().tolist() == [1000] * 10
    assert 0 < float(d["x_train"][:100].float().mean()) < 255


def test_read_idx_rejects_a_truncated_file(tmp_path):
    common = import_common()
    bad = tmp_path / "bad-idx1-ubyte"
    bad.write_bytes(bytes([0, 0, 0x08, 1]) + (10).to_bytes(4, "big") + bytes(5))
    with pytest.raises(ValueError, match="header says"):
        common.read_idx(str(bad))


def test_shard_loaders_with_the_same_replica_draw_the_same_batches():
    common = import_common()
    import torch
    x, y = torch.arange(100).view(100, 1), torch.arange(100)
    a = common.ShardLoader(x, y, 8, replica=1, num_replicas=2, seed=3)
    b = common.ShardLoader(x, y, 8, replica=1, num_replicas=2, seed=3)
    c = common.ShardLoader(x, y, 8, replica=0, num_replicas=2, seed=3)
    for _ in range(10):  # crosses an epoch boundary (50 samples per shard)
        (xa, ya), (xb, yb), (_, yc) = next(a), next(b), next(c)
        assert torch.equal(ya, yb) and torch.equal(xa, xb)
        assert (ya % 2 == 1).all() and (yc % 2 == 0).all()  # disjoint shards


def test_faults_start_at_the_onset_step():
    common = import_common()
    args = common.parse_args("t", ["--slow-rank", "0", "--slow-factor", "2",
                                   "--loader-stall-ms", "25", "--fault-onset", "3"])
    faults = common.fault_injection.Faults(args, rank=0)
    stalls = []
    for step in range(1, 6):
        faults.begin_step(step)
        stalls.append(faults.loader_stall())
    assert stalls == [0.0, 0.0, 0.025, 0.025, 0.025]
    assert faults.active
    r = subprocess.run([jobs_util.PYTHON, str(EXAMPLES / "ddp_train.py"), "--fault-onset", "0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--fault-onset must be a step number >= 1" in r.stderr


# ---------------------------------------------------------------- jobs


def test_ddp_digits_trains_on_four_ranks(tmp_path):
    res = run_job("ddp_train.py", [*BASE, "--dataset", "digits", "--steps", "30"], tmp_path)
    assert res.rc == 0, res.describe()
    assert "ddp: job finished: 4 ranks, steps [30]" in res.stdout
    assert [d["rank"] for d in res.ranks] == [0, 1, 2, 3]
    for d in res.ranks:
        assert d["steps_completed"] == 30
        losses = d["losses"]
        assert sum(losses[-5:]) / 5 < 0.8 * sum(losses[:5]) / 5, losses
        # One gradient bucket per step for this small model, the same on every rank.
        assert [s["all_reduce"] for s in d["collectives_per_step"]] == \
            [s["all_reduce"] for s in res.ranks[0]["collectives_per_step"]]
        assert all(s["all_reduce"] >= 1 for s in d["collectives_per_step"])
    assert res.rank(0)["accuracy"] is not None and res.rank(0)["accuracy"] > 0.3


PIPELINE_ARGS = [*BASE, "--dataset", "digits", "--steps", "10", "--micro-batches", "4"]


@pytest.fixture(scope="module")
def gpipe_run(tmp_path_factory):
    return run_job("pipeline_train.py", [*PIPELINE_ARGS, "--schedule", "gpipe"],
                   tmp_path_factory.mktemp("gpipe"))


def test_pipeline_trains_on_two_stages_by_two_replicas(gpipe_run):
    res = gpipe_run
    assert res.rc == 0, res.describe()
    assert "pipeline: job finished: 4 ranks, steps [10]" in res.stdout
    for d in res.ranks:
        assert d["stage"] == d["rank"] // 2 and d["peer"] == (d["rank"] + 2) % 4
        # Per step: 4 micro-batches out, 4 gradients (or activations) in, one DP all_reduce.
        for s in d["collectives_per_step"]:
            assert (s["send"], s["recv"], s["all_reduce"]) == (4, 4, 1)
    stage1 = [d for d in res.ranks if d["stage"] == 1]
    assert all(len(d["losses"]) == 10 for d in stage1)
    assert all(not d["losses"] for d in res.ranks if d["stage"] == 0)
    assert stage1[0]["losses"][-1] < stage1[0]["losses"][0]
    assert res.rank(2)["accuracy"] is not None


@pytest.mark.slow
def test_pipeline_1f1b_trains_exactly_like_gpipe(gpipe_run, tmp_path):
    assert gpipe_run.rc == 0, gpipe_run.describe()
    ofob = run_job("pipeline_train.py", [*PIPELINE_ARGS, "--schedule", "1f1b"], tmp_path)
    assert ofob.rc == 0, ofob.describe()
    # 1F1B reorders the micro-batches' work, not the maths: the same losses.
    for a, b in zip(gpipe_run.ranks, ofob.ranks):
        assert a["losses"] == pytest.approx(b["losses"], rel=1e-4, abs=1e-5)
        assert a["collectives_per_step"] == b["collectives_per_step"]


@pytest.mark.slow
def test_fashion_mnist_ddp_short_run(tmp_path):
    res = run_job("ddp_train.py", [*BASE, "--dataset", "fashion-mnist", "--steps", "15"],
                  tmp_path)
    assert res.rc == 0, res.describe()
    assert all(d["steps_completed"] == 15 and d["dataset"] == "fashion-mnist" for d in res.ranks)
    losses = res.rank(0)["losses"]
    assert min(losses[-5:]) < losses[0], losses
    assert res.rank(0)["accuracy"] > 0.2  # 10 classes: better than chance after 15 steps


# ---------------------------------------------------------------- faults


@pytest.fixture(scope="module")
def ddp_local_faults(tmp_path_factory):
    """One DDP run with a slow rank (2, x4) and a stalled loader (rank 3, 60 ms)."""
    return run_job("ddp_train.py", [*BASE, "--steps", "25", "--slow-rank", "2",
                                    "--slow-factor", "4", "--loader-stall-ms", "60",
                                    "--loader-stall-rank", "3"],
                   tmp_path_factory.mktemp("ddp-faults"))


def test_slow_rank_computes_factor_times_longer(ddp_local_faults):
    res = ddp_local_faults
    assert res.rc == 0, res.describe()
    slow = med(res.rank(2)["timers"]["forward"])
    normal = max(med(d["timers"]["forward"]) for d in others(res, {2, 3}))
    # Factor 4 asked; half of it is plenty to tell the rank apart on a busy machine.
    assert slow >= 2.0 * normal, (slow, normal)
    assert res.rank(2)["injected_s"] > 0 and res.rank(0)["injected_s"] == 0


def test_loader_stall_shows_in_data_wait(ddp_local_faults):
    res = ddp_local_faults
    assert res.rc == 0, res.describe()
    assert med(res.rank(3)["timers"]["data_wait"]) >= 0.055
    for d in others(res, {3}):
        assert med(d["timers"]["data_wait"]) < 0.03, d["rank"]


def test_ddp_slow_link_delays_every_step(tmp_path):
    res = run_job("ddp_train.py", [*BASE, "--steps", "15", "--slow-link", "1:0",
                                   "--delay-ms", "80"], tmp_path)
    assert res.rc == 0, res.describe()
    # Rank 1 holds back its all_reduce; every rank's step waits for it.
    for d in res.ranks:
        assert med(d["timers"]["step"]) >= 0.075, d["rank"]
    assert med(res.rank(1)["timers"]["comm"]) >= 0.075
    assert med(res.rank(0)["timers"]["comm"]) < 0.01


def test_pipeline_slow_link_delays_only_that_pair(tmp_path):
    res = run_job("pipeline_train.py", [*BASE, "--steps", "12", "--slow-link", "0:2",
                                        "--delay-ms", "40"], tmp_path)
    assert res.rc == 0, res.describe()
    # 4 micro-batch activations per step from 0 to 2, each 40 ms late.
    delayed = med(res.rank(2)["timers"]["recv_wait"])
    other_pair = med(res.rank(3)["timers"]["recv_wait"])
    assert delayed >= 0.8 * 4 * 0.040, delayed
    assert other_pair < 0.5 * delayed, (other_pair, delayed)


@pytest.mark.slow
def test_pipeline_imbalance_makes_stage_one_heavier(tmp_path):
    def stage_ratio(res):
        s0 = max(med(d["timers"]["compute"]) for d in res.ranks if d["stage"] == 0)
        s1 = min(med(d["timers"]["compute"]) for d in res.ranks if d["stage"] == 1)
        return s1 / s0
    args = [*BASE, "--steps", "10", "--no-eval"]
    heavy = run_job("pipeline_train.py", [*args, "--imbalance"], tmp_path)
    assert heavy.rc == 0, heavy.describe()
    balanced = run_job("pipeline_train.py", args, tmp_path)
    assert balanced.rc == 0, balanced.describe()
    assert stage_ratio(heavy) >= 3.0, stage_ratio(heavy)
    assert stage_ratio(heavy) >= 2.0 * stage_ratio(balanced), (stage_ratio(heavy),
                                                               stage_ratio(balanced))
    # The light stage waits for the heavy one.
    assert min(med(d["timers"]["recv_wait"]) for d in heavy.ranks if d["stage"] == 0) > \
        max(med(d["timers"]["recv_wait"]) for d in heavy.ranks if d["stage"] == 1)


def test_ddp_imbalance_gives_the_last_rank_more_work(tmp_path):
    res = run_job("ddp_train.py", [*BASE, "--steps", "20", "--imbalance", "--no-eval"], tmp_path)
    assert res.rc == 0, res.describe()
    assert res.rank(3)["batch_size"] == 4 * res.rank(0)["batch_size"]
    # 4x the samples; on 2 shared cores the forward time grows by less than that.
    heavy = med(res.rank(3)["timers"]["forward"])
    assert heavy >= 1.5 * max(med(d["timers"]["forward"]) for d in others(res, {3}))


@pytest.mark.parametrize("script,rank,step", [("ddp_train.py", 1, 5),
                                              ("pipeline_train.py", 2, 4)])
def test_kill_rank_fails_the_job_with_a_clear_message(tmp_path, script, rank, step):
    res = run_job(script, [*BASE, "--steps", "40", "--kill-rank", str(rank),
                           "--at-step", str(step), "--timeout-s", "20"], tmp_path, timeout_s=90)
    assert res.rc != 0, res.describe()
    assert (f"launcher: job FAILED: rank {rank} exited first "
            f"(killed by --kill-rank at step {step})") in res.stderr, res.describe()
    # The survivors wrote nothing past the failure: no rank completed the job.
    assert all(d["steps_completed"] < 40 for d in res.ranks)
    assert res.stats["exit_codes"][rank] != 0


def test_bad_flags_are_refused_with_the_reason(tmp_path):
    r = subprocess.run([jobs_util.PYTHON, str(EXAMPLES / "ddp_train.py"), "--slow-link", "1-0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--slow-link expects A:B" in r.stderr
    r = subprocess.run([jobs_util.PYTHON, str(EXAMPLES / "pipeline_train.py"), "--kill-rank", "1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--kill-rank needs --at-step" in r.stderr


@pytest.mark.slow
def test_runs_under_torch_distributed_run(tmp_path):
    """One rank per process under torchrun (which needs --redirects 1 --tee 1 here)."""
    stats = tmp_path / "stats.json"
    r = subprocess.run([jobs_util.PYTHON, "-m", "torch.distributed.run", "--standalone",
                        "--nproc_per_node", "2", "--redirects", "1", "--tee", "1",
                        str(EXAMPLES / "ddp_train.py"), "--steps", "8", "--log-every", "4",
                        "--stats-out", str(stats)],
                       capture_output=True, text=True, timeout=120, cwd=str(jobs_util.REPO))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    import json
    for rank in (0, 1):
        d = json.loads((tmp_path / f"stats.json.rank{rank}.json").read_text())
        assert d["world_size"] == 2 and d["steps_completed"] == 8
