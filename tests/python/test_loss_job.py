"""Loss contribution end to end: a real 4-rank DDP job on digits with 10 %
label noise and trainscope.LossContribution on every rank, against a real
collector. The collector's job-wide top-N must equal the top-N of the union of
the ranks' own lists, selected items must come with their maps, the
difficult_item rule must raise, and the stored run must answer the same
offline (what the viewer and `trainscope items --data-dir` read).

Run: /usr/bin/python3 -m pytest tests/python/test_loss_job.py
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import uuid

import pytest

from conftest import BIN_DIR, CLI_BIN, COLLECTOR_BIN, Collector, wait_for
from jobs_util import run_job, trainscope_env

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "scenarios"))
from png_pixels import read_png  # noqa: E402

TOP_N = 16
STEPS = 120  # 11 steps per epoch per rank on digits: 10 epochs


@pytest.fixture(scope="module")
def loss_job(trainscope_module, tmp_path_factory):
    """One job for every test here (it takes ~15 s): the collector, the job id
    and the ranks' own account of what they measured."""
    for binary in (COLLECTOR_BIN, CLI_BIN):
        if not binary.exists():
            pytest.skip(f"{binary} is not built (TRAINSCOPE_BUILD_DIR selects the build dir)")
    tmp = tmp_path_factory.mktemp("loss_job")
    collector = Collector(tmp).start()
    try:
        yield from _run(collector, trainscope_module, tmp)
    finally:
        collector.stop()


def _run(collector, trainscope_module, tmp):
    job = f"lc-{uuid.uuid4().hex[:8]}"
    res = run_job("ddp_train.py", ["--world-size", "4", "--steps", str(STEPS), "--batch-size", "32",
                                   "--log-every", "0", "--no-eval", "--collector", collector.address,
                                   "--job", job, "--loss-contribution", "--label-noise", "0.1",
                                   "--lc-top-n", str(TOP_N), "--lc-every", "5"],
                  tmp, env=trainscope_env(trainscope_module))
    assert res.rc == 0, res.describe()
    yield collector, job, res


def items(collector, job, *extra, offline=False):
    where = (["--data-dir", str(collector.data_dir)] if offline else
             ["--feed", collector.feed, "--snapshot", collector.snapshot])
    out = subprocess.run([str(CLI_BIN), "items", job, "--json", *where, *extra],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


def test_job_wide_top_n_is_the_top_n_of_the_ranks_union(loss_job):
    collector, job, res = loss_job
    state = items(collector, job)["state"]
    epochs = {d["loss_contribution"]["epochs"] for d in res.ranks}
    assert len(epochs) == 1, epochs
    last_epoch = epochs.pop() - 1
    assert state.get("epoch", 0) == last_epoch and state.get("last_complete_epoch", 0) == last_epoch
    union = {}
    for d in res.ranks:
        for entry in d["loss_contribution"]["final_top"]:
            union[entry["item"]] = max(entry["contribution"], union.get(entry["item"], -1e300))
    expected = sorted(union, key=lambda i: (-union[i], i))[:TOP_N]
    got = [int(i["item"]) for i in state["items"]]
    assert got == expected
    ranks_of = {e["item"]: d["rank"] for d in res.ranks for e in d["loss_contribution"]["final_top"]}
    for item in state["items"]:
        assert int(item.get("rank", 0)) == ranks_of[int(item["item"])]
        assert 0 <= int(item.get("label", 0)) < 10
        assert item["history"], item  # at least the last epoch's place
        # Read from the data set with the item's first listing, snapshots or not.
        assert (item["input"]["height"], item["input"]["width"]) == (8, 8), item


def test_selected_items_come_with_contribution_and_reduction_maps(loss_job):
    collector, job, _ = loss_job
    listed = items(collector, job)["state"]["items"]
    with_maps = [i for i in listed if int(i.get("snapshots", 0)) > 0]
    assert with_maps, "no selected item came with map snapshots"
    answer = items(collector, job, "--item", str(with_maps[0]["item"]))
    snaps = answer["snapshots"]
    assert len(snaps) == int(with_maps[0]["snapshots"])
    import base64  # noqa: PLC0415
    for snap in snaps:
        assert [m["layer"] for m in snap["maps"]] == ["0.1", "0"]
        for m, side in zip(snap["maps"], (8, 4)):
            assert (m["height"], m["width"]) == (side, side)
            c, r = base64.b64decode(m["contribution"]), base64.b64decode(m["reduction"])
            assert len(c) == len(r) == 2 * side * side
            assert any(c) or any(r), "an all-zero map"
        thumb = snap["input"]
        assert (thumb["height"], thumb["width"], thumb["channels"]) == (8, 8, 1)


def test_items_in_the_top_for_three_epochs_raise_difficult_item(loss_job):
    collector, job, _ = loss_job
    out = collector.cli("alerts", job, "--json", "--feed", collector.feed, "--snapshot",
                        collector.snapshot)
    alerts = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    raised = [a for a in alerts if a["rule"] == "difficult_item" and a["state"] == "ALERT_STATE_RAISED"]
    assert raised, [a["rule"] for a in alerts]
    assert "candidate mislabeled or ambiguous item" in raised[0]["message"]
    assert raised[0]["observed"] >= 3
    assert f"item {raised[0]['item']} " in raised[0]["message"]  # Alert.item names it
    table = collector.cli("alerts", job, "--feed", collector.feed, "--snapshot",
                          collector.snapshot).stdout
    assert re.search(rf"raised\s+difficult_item\s+\d+\s+\d+\s+item {raised[0]['item']}\s", table), table


def test_the_difficult_items_are_the_flipped_labels(loss_job):
    # 10 % of the labels are flipped: a random pick would hit 0.1 of them.
    collector, job, res = loss_job
    flipped = set(res.rank(0)["loss_contribution"]["flipped_items"])
    assert flipped
    out = collector.cli("alerts", job, "--json", "--feed", collector.feed, "--snapshot",
                        collector.snapshot)
    raised = {int(a["item"]) for a in map(json.loads, filter(str.strip, out.stdout.splitlines()))
              if a["rule"] == "difficult_item" and a["state"] == "ALERT_STATE_RAISED"}
    assert len(raised) >= 3, raised
    precision = len(raised & flipped) / len(raised)
    assert precision >= 0.8, (precision, sorted(raised - flipped))


def test_the_stored_run_answers_the_same_offline(loss_job):
    collector, job, _ = loss_job
    live = items(collector, job)["state"]
    offline = items(collector, job, offline=True)["state"]
    assert [i["item"] for i in offline["items"]] == [i["item"] for i in live["items"]]
    text = subprocess.run([str(CLI_BIN), "items", job, "--data-dir", str(collector.data_dir)],
                          capture_output=True, text=True, timeout=60).stdout
    assert f"top {TOP_N} by loss contribution at layer 0" in text
    assert "HISTORY" in text


def test_the_report_lists_the_difficult_items(loss_job, tmp_path):
    collector, job, _ = loss_job
    top = items(collector, job, offline=True)["state"]["items"][0]
    out = subprocess.run([str(CLI_BIN), "report", job, "--data-dir", str(collector.data_dir),
                          "--out", str(tmp_path / "report")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    html = (tmp_path / "report" / "index.html").read_text()
    assert "<h2>Difficult items</h2>" in html
    assert f"<td>1</td><td>{top['item']}</td>" in html
    if (BIN_DIR / "trainscope-viewer").exists():
        assert '<img src="view-selection.png"' in html and '<img src="view-monitoring.png"' in html


CANDIDATE_RED = (215, 25, 28)  # LossModel::kCandidateColor


def render(collector, job, view, out, *extra):
    viewer = BIN_DIR / "trainscope-viewer"
    if not viewer.exists():
        pytest.skip(f"{viewer} is not built (Qt6 missing?)")
    result = subprocess.run([str(viewer), "--data-dir", str(collector.data_dir), "--job", job,
                             "--render", view, "--out", str(out), *extra],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 0, result.stdout + result.stderr
    return read_png(out)


def test_the_viewer_renders_both_views_from_the_recorded_run(loss_job, tmp_path):
    collector, job, _ = loss_job
    state = items(collector, job, offline=True)["state"]
    # Selection: one cell per item; items whose prediction differs from their
    # label are framed in the candidate red.
    _, _, rows = render(collector, job, "selection", tmp_path / "selection.png")
    red = sum(1 for row in rows for px in row if px == CANDIDATE_RED)
    wrong = sum(1 for i in state["items"] if i.get("label", 0) != i.get("prediction", 0))
    assert (red > 0) == (wrong > 0), (red, wrong)
    # Monitoring: the C maps are drawn with the red ramp, the R maps with the
    # blue one, and the slider's first position shows other pixels than its last.
    with_maps = [i for i in state["items"] if int(i.get("snapshots", 0)) > 1]
    assert with_maps, "no item with two snapshots to slide through"
    item = str(with_maps[0]["item"])
    _, _, last = render(collector, job, "monitoring", tmp_path / "last.png", "--item", item)
    reddish = sum(1 for row in last for r, g, b in row if r > 150 and g < 120 and b < 120)
    bluish = sum(1 for row in last for r, g, b in row if b > 150 and r < 120)
    assert reddish > 100 and bluish > 100, (reddish, bluish)
    oldest = items(collector, job, "--item", item, offline=True)["snapshots"][0]["iteration"]
    _, _, first = render(collector, job, "monitoring", tmp_path / "first.png", "--item", item,
                         "--iteration", str(oldest))
    assert first != last


def test_the_collector_switches_the_hooks_off_and_on_at_runtime(trainscope_module, collector):
    """`trainscope disable JOB --loss-contribution` reaches a running process's
    LossContribution (at its next batch) and leaves operator recording on."""
    import torch  # noqa: PLC0415
    from trainscope import loss_contribution  # noqa: PLC0415
    ts = trainscope_module
    job = f"lc-switch-{uuid.uuid4().hex[:8]}"
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    x, y = torch.randn(6, 4), torch.randint(0, 3, (6,))
    # No token: agent and CLI derive the job's secret from the collector's default job key.
    session = ts.attach(collector=collector.address, job=job, halt_grace_s=None)
    try:
        # A command before the first rank attached finds no job token yet.
        wait_for(lambda: ts.stats()["connected"], 10, "the agent to connect")
        lc = loss_contribution.LossContribution(model, 6, selection="1", every=1000)

        def step():
            lc.batch(torch.arange(6), labels=y)
            torch.nn.functional.cross_entropy(model(x), y).backward()
            model.zero_grad()

        step()
        assert lc.enabled
        out = collector.cli("disable", job, "--loss-contribution")
        assert f"loss contribution off for job {job}: " in out.stdout
        wait_for(lambda: session._native.loss_contribution_switch == (False, 1), 10,
                 "the switch to reach the agent")
        step()
        assert not lc.enabled and session.recording
        lc.enable()  # a local switch stands until the collector's changes again
        step()
        assert lc.enabled
        # A quick off-on between two batches still reaches the plugin as "on".
        lc.disable()
        collector.cli("disable", job, "--loss-contribution")
        collector.cli("enable", job, "--loss-contribution")
        wait_for(lambda: session._native.loss_contribution_switch == (True, 3), 10,
                 "both switches to reach the agent")
        step()
        assert lc.enabled
        status = json.loads(collector.cli("status", job, "--json").stdout)
        assert [c["command"] for c in status["commands"]][-2:] == [
            "disable-loss-contribution", "enable-loss-contribution"]
    finally:
        ts.detach()
