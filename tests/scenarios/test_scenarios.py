"""The scenario suite: real 4-rank gloo jobs from the plugin's examples, each
with one fault injected at a known step, streamed to a real collector whose
rules must raise the right alert naming the right device or link before the
job ends and blame no other cause after the onset, and name no cause on a
clean run. The last scenario lets the collector halt a job by itself
(`trainscope run --halt-when ... --for K`).

It runs in CI on a shared, loaded 2-core machine, so it asserts only what must
hold with a wide margin: who is named, that nothing else is blamed, that the
alert comes before the job ends. How fast (steps after the onset, seconds after
the step) and how often (recall, precision, false alarms per 1,000 clean
rank-steps) are bench/scenario_detection.py's figures, over several seeds,
fault magnitudes and world sizes.

Run: TRAINSCOPE_BUILD_DIR=build /usr/bin/python3 -m pytest tests/scenarios
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import time
import uuid

import pytest

from jobs_util import EXAMPLES, PYTHON, run_job, trainscope_env
from png_pixels import read_png

WORLD = 4
ONSET = 30  # the examples' --fault-onset (1-based step)
# StepReports count steps from 0: the examples' step s is analysis step s - 1.
ONSET_STEP = ONSET - 1
FAULT_STEPS = 70
# The viewer's colours (viewer/include/trainscope/viewer/draw_list.h).
ALERT_RED = (220, 30, 30)
COLLECTIVE_YELLOW = (240, 190, 30)
COMPUTE_GREENS = [(76, 175, 80), (46, 125, 50)]


def cli_json(collector, *args) -> list:
    """`trainscope <args> --json` against the live collector, one value per line."""
    out = collector.cli(*args, "--json", "--feed", collector.feed, "--snapshot",
                        collector.snapshot, timeout_s=60).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def closed_steps(collector, job: str) -> int:
    return len(cli_json(collector, "steps", job))


def settled_alerts(collector, job: str, steps: int, timeout_s: float = 60) -> list:
    """The job's alerts once its analysis has closed `steps` steps (or stopped
    making progress: a killed or halted job closes fewer)."""
    deadline = time.monotonic() + timeout_s
    last, last_change = -1, time.monotonic()
    while time.monotonic() < deadline:
        n = closed_steps(collector, job)
        if n >= steps:
            break
        if n != last:
            last, last_change = n, time.monotonic()
        elif time.monotonic() - last_change > 5:
            break
        time.sleep(0.3)
    return cli_json(collector, "alerts", job)


def raised(alerts: list) -> list:
    return [a for a in alerts if a.get("state") == "ALERT_STATE_RAISED"]


def describe(alerts: list) -> str:
    return "\n".join(f"#{a.get('alert_id')} {a.get('state', '')[12:]} {a.get('rule')} "
                     f"step {a.get('step')}: {a.get('message')}" for a in alerts) or "(none)"


def cause(alert: dict) -> int:
    return int(alert.get("cause_rank", -1))


# On two cores shared with other work, the OS can starve one rank for a dozen
# steps or more: it really is a straggler then, the rules say so, and the
# alert clears when the starvation moves on (seen under a parallel build:
# open 3 to 32 steps, in 18 runs of this suite). A fault pins its cause for the
# rest of the job. So a test counts a device as blamed by the timing rules
# only when their alerts on it stayed open this many steps (a fault's 40
# steps after its onset; a quarter of the clean run's 200); rules that judge
# no timing count at once.
PINNED_STEPS = 25
CLEAN_PINNED_STEPS = 50
TIMING_RULES = ("straggler", "collective_wait", "loader_stall", "step_time_regression")
# Rules that blame a pipeline stage (the device rules also fill in the stage
# of the device they blame).
STAGE_RULES = ("stage_flops_imbalance", "pipeline_bubble")


def open_steps(alerts: list, alert: dict, from_step: int, last_step: int) -> int:
    """Steps `alert` (a raise) stayed open from from_step on, until its clear
    or the job's last step."""
    ends = [int(a["step"]) for a in alerts
            if a["alert_id"] == alert["alert_id"] and a.get("state") == "ALERT_STATE_CLEARED"]
    end = min(ends) if ends else last_step
    return end - max(int(alert["step"]), from_step)


def blamed(alerts: list, from_step: int, last_step: int, pinned: int = PINNED_STEPS) -> set:
    """The devices alerts blame as causes from from_step on: raised since,
    or still open then. Effects filed under a cause (caused_by_alert_id) are
    not causes of their own; low_flops is not counted (on shared CPU cores a
    rank's FLOPS are its share of the CPU, see test_rules_fire.py for the rule
    itself); timing rules count only when pinned (PINNED_STEPS)."""
    out = set()
    for a in raised(alerts):
        if cause(a) < 0 or int(a.get("caused_by_alert_id", 0)) or a["rule"] == "low_flops":
            continue
        span = open_steps(alerts, a, from_step, last_step)
        if span < 0:
            continue  # cleared before from_step
        if a["rule"] not in TIMING_RULES or span >= pinned:
            out.add(cause(a))
    return out


def blamed_after(alerts: list, onset_step: int, last_step: int) -> set:
    """What a fault's test checks: the causes blamed from the fault's onset on
    (before it, the clean run's and the benchmark's business)."""
    return blamed(alerts, onset_step, last_step)


def blames_something(alerts: list, steps: int) -> list:
    """A clean run's alerts that blame a device, a link or a stage (a job's
    step-time regression with no cause found blames nothing: on a shared host
    a job's step time moves with the machine's load)."""
    devices = blamed(alerts, 0, steps, CLEAN_PINNED_STEPS)
    return [a for a in raised(alerts)
            if cause(a) in devices or int(a.get("link_src_rank", -1)) >= 0
            or a["rule"] in STAGE_RULES]


def run_scenario(collector, trainscope_module, tmp_path, script: str, args: list,
                 steps: int) -> tuple:
    job = f"scn-{uuid.uuid4().hex[:8]}"
    res = run_job(script, ["--world-size", str(WORLD), "--steps", str(steps), "--log-every", "0",
                           "--no-eval", "--collector", collector.address, "--job", job, *args],
                  tmp_path, env=trainscope_env(trainscope_module), timeout_s=300)
    return job, res


def assert_detected(alerts: list, rules, matches, onset_step: int, steps: int) -> dict:
    """The first raise of one of `rules` for which matches(alert) holds, at or
    after the fault's onset and before the job's last step."""
    rules = {rules} if isinstance(rules, str) else set(rules)
    hits = [a for a in raised(alerts) if a["rule"] in rules and matches(a)
            and int(a["step"]) >= onset_step]
    assert hits, f"no {'/'.join(sorted(rules))} alert for the fault; alerts:\n{describe(alerts)}"
    first = min(hits, key=lambda a: int(a["step"]))
    assert int(first["step"]) < steps, describe(alerts)
    return first


def test_clean_run_raises_no_alert(collector, trainscope_module, tmp_path):
    steps = 200
    job, res = run_scenario(collector, trainscope_module, tmp_path, "ddp_train.py", [], steps)
    assert res.rc == 0, res.describe()
    alerts = settled_alerts(collector, job, steps)
    assert closed_steps(collector, job) >= steps
    assert blames_something(alerts, steps) == [], describe(alerts)


def test_slow_rank_is_named_a_straggler(collector, trainscope_module, tmp_path):
    job, res = run_scenario(collector, trainscope_module, tmp_path, "ddp_train.py",
                            ["--slow-rank", "2", "--slow-factor", "3", "--fault-onset",
                             str(ONSET)], FAULT_STEPS)
    assert res.rc == 0, res.describe()
    alerts = settled_alerts(collector, job, FAULT_STEPS)
    assert_detected(alerts, "straggler", lambda a: cause(a) == 2, ONSET_STEP, FAULT_STEPS)
    # Waiting ranks are victims, never the cause.
    assert blamed_after(alerts, ONSET_STEP, FAULT_STEPS) - {2} == set(), describe(alerts)

    # The viewer, opened on the stored job: the red cross on the straggler's
    # axis only, the job's operators drawn, every view rendered.
    def render(view: str, *args) -> pathlib.Path:
        out = tmp_path / f"{view}{'-'.join(args).replace(',', '_')}.png"
        viewer = sys.modules["trainscope_python_test_support"].BIN_DIR / "trainscope-viewer"
        result = subprocess.run([str(viewer), "--data-dir", str(collector.data_dir), "--job", job,
                                 "--render", view, "--width", "800", "--height", "450", "--out",
                                 str(out), *args], capture_output=True, text=True, timeout=120,
                                env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
        assert result.returncode == 0, result.stdout + result.stderr
        return out

    def crosses_on_axes(path) -> int:
        """Alert-red pixels left of the plot, above the legend."""
        width, height, rows = read_png(path)
        return sum(1 for y in range(height - 30) for x in range(width // 4)
                   if rows[y][x] == ALERT_RED)

    assert crosses_on_axes(render("marey", "--ranks", "2")) > 0
    # No cross on a rank no alert blamed (noise before the onset may have
    # blamed one, for a while: that is the clean run's business).
    unblamed = sorted({0, 1, 3} - {cause(a) for a in raised(alerts)})
    if unblamed:
        ranks = ",".join(map(str, unblamed))
        assert crosses_on_axes(render("marey", "--ranks", ranks)) == 0, describe(alerts)
    _, _, rows = read_png(render("marey"))
    colours = [p for row in rows for p in row]
    assert colours.count(COLLECTIVE_YELLOW) > 500, "no collective bands"
    assert sum(colours.count(c) for c in COMPUTE_GREENS) > 100, "no compute bands"
    render("each")
    for view in ("overview", "marey", "alerts", "jobs"):
        _, _, rows = read_png(tmp_path / f"each-{view}.png")
        assert len({p for row in rows for p in row}) >= 10, f"the {view} view is blank"

    # The report without a display: the alerts, the views, the tables.
    report = tmp_path / "report"
    made = collector.cli("report", job, "--data-dir", str(collector.data_dir), "--out",
                         str(report), timeout_s=180)
    assert "4 views" in made.stdout, made.stdout + made.stderr
    page = (report / "index.html").read_text()
    assert "<td>straggler</td>" in page and "rank 2 is a straggler" in page
    for view in ("overview", "marey", "alerts", "jobs"):
        assert f'src="view-{view}.png"' in page
        assert (report / f"view-{view}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert page.count("<tr>") > FAULT_STEPS  # the per-step table


def test_slow_link_names_its_sending_rank(collector, trainscope_module, tmp_path):
    """--slow-link 1:2 delays rank 1 before each transfer to rank 2. On gloo the
    delay lies before rank 1 enters the all-reduce, so what is observable is
    rank 1 arriving late (the transfer itself is no slower): the alert must name
    rank 1 as the cause that everyone waits for, and blame no other rank."""
    job, res = run_scenario(collector, trainscope_module, tmp_path, "ddp_train.py",
                            ["--slow-link", "1:2", "--delay-ms", "20", "--fault-onset",
                             str(ONSET)], FAULT_STEPS)
    assert res.rc == 0, res.describe()
    alerts = settled_alerts(collector, job, FAULT_STEPS)
    assert_detected(alerts, ("collective_wait", "straggler"), lambda a: cause(a) == 1, ONSET_STEP,
                    FAULT_STEPS)
    assert blamed_after(alerts, ONSET_STEP, FAULT_STEPS) - {1} == set(), describe(alerts)


def test_loader_stall_is_named(collector, trainscope_module, tmp_path):
    job, res = run_scenario(collector, trainscope_module, tmp_path, "ddp_train.py",
                            ["--loader-stall-ms", "30", "--loader-stall-rank", "3",
                             "--fault-onset", str(ONSET)], FAULT_STEPS)
    assert res.rc == 0, res.describe()
    alerts = settled_alerts(collector, job, FAULT_STEPS)
    assert_detected(alerts, "loader_stall", lambda a: 3 in [int(r) for r in a.get("ranks", [])],
                    ONSET_STEP, FAULT_STEPS)
    assert blamed_after(alerts, ONSET_STEP, FAULT_STEPS) <= {3}, describe(alerts)


def test_imbalanced_pipeline_names_the_heavy_stage(collector, trainscope_module, tmp_path):
    steps = 50
    job, res = run_scenario(collector, trainscope_module, tmp_path, "pipeline_train.py",
                            ["--imbalance"], steps)
    assert res.rc == 0, res.describe()
    alerts = settled_alerts(collector, job, steps)
    stage_alerts = [a for a in raised(alerts)
                    if a["rule"] in ("pipeline_bubble", "stage_flops_imbalance")]
    assert stage_alerts, describe(alerts)
    assert all(int(a.get("stage", -1)) == 1 for a in stage_alerts), describe(alerts)
    assert min(int(a["step"]) for a in stage_alerts) < steps, describe(alerts)


def test_killed_rank_is_a_lost_device(collector, trainscope_module, tmp_path):
    kill_at = 40
    job, res = run_scenario(collector, trainscope_module, tmp_path, "ddp_train.py",
                            ["--kill-rank", "1", "--at-step", str(kill_at)], FAULT_STEPS)
    assert res.rc != 0, res.describe()
    alerts = settled_alerts(collector, job, kill_at)
    lost = {int(a["ranks"][0]): a for a in raised(alerts) if a["rule"] == "lost_device"}
    # Rank 1 is named; the peers that aborted in the collectives it broke,
    # milliseconds later, may be named with it (which went first cannot be
    # told); those the launcher kills seconds later followed it.
    assert 1 in lost, describe(alerts)
    # Its step is the last one rank 1 reported, around the kill.
    assert kill_at - 10 <= int(lost[1]["step"]) <= kill_at + 5, describe(alerts)


def test_halt_by_policy_stops_every_rank(collector, trainscope_module, tmp_path):
    """As a new user would: `trainscope run --halt-when straggler --for K`."""
    k = 5
    job = f"scn-halt-{uuid.uuid4().hex[:8]}"
    stats = tmp_path / "stats.json"
    env = dict(os.environ)
    for name in ("TRAINSCOPE_COLLECTOR", "TRAINSCOPE_JOB", "TRAINSCOPE_TOKEN"):
        env.pop(name, None)
    env.update(trainscope_env(trainscope_module))
    python_dir = trainscope_env(trainscope_module)["PYTHONPATH"].split(os.pathsep)[0]
    cmd = [str(sys.modules["trainscope_python_test_support"].CLI_BIN), "run", "--collector", collector.address, "--job", job, "--python-dir", python_dir,
           "--halt-when", "straggler", "--for", str(k), "--",
           PYTHON, str(EXAMPLES / "ddp_train.py"), "--world-size", str(WORLD), "--steps", "300",
           "--log-every", "0", "--no-eval", "--slow-rank", "2", "--slow-factor", "3",
           "--fault-onset", str(ONSET), "--stats-out", str(stats)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    ranks = json.loads(stats.read_text())["ranks"]
    assert len(ranks) == WORLD and all(r["halted"] for r in ranks), out[-4000:]
    halt_steps = {int(r["halt_step"]) for r in ranks}
    assert len(halt_steps) == 1, halt_steps
    halt_step = halt_steps.pop()
    assert halt_step < 300

    status = collector.status(job)
    halts = [c for c in status["commands"] if c["command"] == "halt"]
    assert len(halts) == 1 and halts[0]["requested_by"] == "halt policy", status["commands"]
    held = re.search(r"straggler held for (\d+) consecutive steps \(steps (\d+)-(\d+)\)",
                     halts[0]["reason"])
    assert held and int(held.group(1)) == k, halts[0]["reason"]
    first_holding = int(held.group(2))  # analysis numbering; the examples' is one more
    # The policy asked for the halt soon after the rule held K steps: K steps
    # of holding end one step before the policy knows (a step closes when the
    # next one starts): K+1 when the analysis is prompt, more when the machine
    # is loaded (the slack here is for that). The ranks stop the halt's margin
    # later (at least 2 steps and 1 s of steps past the furthest rank, so that
    # no rank passes the boundary before the command reaches it:
    # docs/alerts.md).
    stopped_at = halt_step - 1
    margin = int(halts[0]["halt_margin_steps"])
    assert margin >= 2, halts[0]
    asked_at = stopped_at - margin
    assert k - 2 <= asked_at - first_holding <= k + 6, (first_holding, halt_step, halts[0])
    alerts = cli_json(collector, "alerts", job)
    assert any(a["rule"] == "straggler" and a.get("halted_job") for a in alerts), describe(alerts)
    # Following a job that has ended prints what it raised, says so and exits.
    followed = collector.cli("alerts", job, "--follow", "--feed", collector.feed, "--snapshot",
                             collector.snapshot, timeout_s=30)
    lines = followed.stdout.splitlines()
    assert len(lines) == len(alerts), followed.stdout
    assert any("straggler" in line and "[halted the job]" in line for line in lines), lines
    assert f"job {job} ended" in followed.stderr
