"""Joining a job must prove membership, by default (issue 21 item 1: a local
process said Hello as rank 0 with a higher restart count and no token and
replaced the real rank's stream; a process that said Hello first with its own
token and another world size took the job id, locked the real job out and
could halt it).

A real collector started with no membership flag at all (its default job key,
made in the user's config directory), a real two-rank job started by
`trainscope run`, which hands the job's secret to its ranks, and intruder
processes (trainscope-loadgen) of "another user": they cannot read the
collector's key, and one holds a key of its own. Each attempt (squat first with
another world and its own secret, squat with a made-up token, take over rank 0
with a higher restart count, halt the job) is refused with a message naming
the job and what it lacks; every event of the real job arrives, it is not
halted, and a legitimate restart of rank 0 holding the proof is admitted.

The real job's own `trainscope status` (text and JSON) shows every refused
attempt, those made before the job existed included, and where the last came
from (issue 21: only the intruder saw its refusal). The ranks prove
membership by challenge (protocol 2): the secret is not in what they send.
"""

import json
import os
import subprocess

import pytest

from conftest import CLI_BIN, COLLECTOR_BIN, Collector, wait_for
from test_store_recovery import LOADGEN_BIN

JOB = "membership"
EVENTS = 60_000  # per rank


def _env_without_trainscope(config_home) -> dict:
    """This process' environment for a process of another user: no TRAINSCOPE_*
    variable and a config directory where the collector's key is not."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRAINSCOPE_")}
    env["XDG_CONFIG_HOME"] = str(config_home)
    return env


def intrude(collector: Collector, tmp_path, name: str, *args: str,
            job: str = JOB, config_home=None) -> tuple[dict, str]:
    """A loadgen rank of `job` started by someone else (who cannot read the
    collector's job key; `config_home`: the intruder's own config directory,
    default an empty one); its summary and stderr."""
    summary_path = tmp_path / f"{name}.json"
    env = _env_without_trainscope(config_home or tmp_path / "intruder-config")
    result = subprocess.run(
        [str(LOADGEN_BIN), "--collector", collector.address, "--job", job, "--events", "2000",
         "--rate", "2000", "--flush-timeout-ms", "1500", "--summary", str(summary_path), *args],
        capture_output=True, text=True, timeout=120, env=env)
    # 4: the collector refused the stream for good (an admitted one exits 0).
    assert result.returncode in (0, 4), result.stderr
    return json.loads(summary_path.read_text().splitlines()[0]), result.stderr


def _cli(collector: Collector, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLI_BIN), *args, "--collector", collector.address],
                          capture_output=True, text=True, timeout=60, env=env)


def test_without_any_flag_an_intruder_can_neither_squat_nor_take_over_nor_halt_a_job(
        tmp_path, monkeypatch):
    for binary in (COLLECTOR_BIN, CLI_BIN, LOADGEN_BIN):
        if not binary.exists():
            pytest.skip(f"{binary} is not built")
    # The job's user: the collector, `trainscope run` and the CLI read this
    # config directory, where the collector makes its default job key.
    user_config = tmp_path / "user-config"
    for name in list(os.environ):
        if name.startswith("TRAINSCOPE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user_config))
    # The squatter's own key: its secret for the job id is a valid-looking one.
    squatter_config = tmp_path / "squatter-config"
    (squatter_config / "trainscope").mkdir(parents=True)
    made = subprocess.run([str(CLI_BIN), "job-secret", "--new-key",
                           str(squatter_config / "trainscope" / "job.key")],
                          capture_output=True, text=True, timeout=30)
    assert made.returncode == 0, made.stderr

    collector = Collector(tmp_path)  # no membership flag: the default
    collector.start()
    try:
        key = user_config / "trainscope" / "job.key"
        assert key.exists(), collector.output()
        assert key.stat().st_mode & 0o777 == 0o600
        assert "made the job key" in collector.output()

        # First to say Hello, with another world and its own secret.
        first, first_log = intrude(collector, tmp_path, "first", "--rank", "0",
                                   "--world-size", "8", config_home=squatter_config)
        # ... or a made-up token, or nothing at all.
        mine, mine_log = intrude(collector, tmp_path, "mine", "--rank", "0", "--world-size", "8",
                                 "--token", "mine")
        bare, bare_log = intrude(collector, tmp_path, "bare", "--rank", "1", "--world-size", "2")
        jobs = collector.cli("jobs", "--json").stdout
        assert JOB not in jobs, jobs  # the refused Hellos created no job

        # The real job: `trainscope run` derives the job's secret from the key
        # and hands it to the ranks as TRAINSCOPE_TOKEN. The ranks themselves
        # cannot read the key (as on another host), so they join by it alone.
        summary_path = tmp_path / "job.json"
        job = subprocess.Popen(
            [str(CLI_BIN), "run", "--collector", collector.address, "--job", JOB, "--",
             "sh", "-c", f'test -n "$TRAINSCOPE_TOKEN" || exit 3; '
             f'XDG_CONFIG_HOME="{tmp_path}/rank-config" exec "{LOADGEN_BIN}" '
             f'--collector "$TRAINSCOPE_COLLECTOR" --job "$TRAINSCOPE_JOB" '
             f'--token "$TRAINSCOPE_TOKEN" --streams 2 --events {EVENTS} --rate 6000 '
             f'--memory-mb 256 --flush-timeout-ms 60000 --summary "{summary_path}"'],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

        def both_connected():
            try:
                ranks = collector.status(JOB).get("ranks", [])
            except AssertionError:
                return False
            return len(ranks) == 2 and all(r.get("connected") for r in ranks)

        wait_for(both_connected, 60, "both ranks of the real job to connect")

        # A restarted "rank 0" without the proof, then with the squatter's
        # secret: neither replaces it.
        hijack, hijack_log = intrude(collector, tmp_path, "hijack", "--rank", "0",
                                     "--world-size", "2", "--restart-count", "5")
        hijack_key, hijack_key_log = intrude(collector, tmp_path, "hijack-key", "--rank", "0",
                                             "--world-size", "2", "--restart-count", "6",
                                             config_home=squatter_config)
        # Another world again while the job runs, with the squatter's secret.
        during, during_log = intrude(collector, tmp_path, "during", "--rank", "0",
                                     "--world-size", "8", config_home=squatter_config)
        # The squatter's halt: with its own secret (what its CLI derives), and
        # with no token at all.
        squatter_env = _env_without_trainscope(squatter_config)
        halt_key = _cli(collector, squatter_env, "halt", JOB, "--reason", "squatter")
        halt_bare = _cli(collector, _env_without_trainscope(tmp_path / "intruder-config"),
                         "halt", JOB, "--reason", "squatter")
        mid = collector.status(JOB)

        _, job_log = job.communicate(timeout=180)
        assert job.returncode == 0, job_log
        summaries = [json.loads(line) for line in summary_path.read_text().splitlines()]
        status = collector.status(JOB)
        status_text = collector.cli("status", JOB).stdout

        # A legitimate restart of rank 0 (a launcher restarting it, with the
        # proof: here the key of the job's user) is admitted.
        restart_path = tmp_path / "restart.json"
        restart = subprocess.run(
            [str(LOADGEN_BIN), "--collector", collector.address, "--job", JOB, "--rank", "0",
             "--world-size", "2", "--restart-count", "1", "--events", "2000", "--rate", "4000",
             "--flush-timeout-ms", "60000", "--summary", str(restart_path)],
            capture_output=True, text=True, timeout=120)
        assert restart.returncode == 0, restart.stderr
        restarted = json.loads(restart_path.read_text().splitlines()[0])
        after = collector.status(JOB)
    finally:
        collector.stop()

    refused = ((first, first_log), (mine, mine_log), (bare, bare_log), (hijack, hijack_log),
               (hijack_key, hijack_key_log), (during, during_log))
    for attempt, log in refused:
        assert attempt["acked"] == 0, (attempt, log)
        assert f"trainscope-loadgen: job {JOB} rank" in log, log  # said last, and exit 4
        assert "refused the stream" in log and "PERMISSION_DENIED" in log, log
        assert f"job {JOB}" in log, log
        assert "TRAINSCOPE_JOB_SECRET" in log, log  # how to give the proof
    for log in (first_log, mine_log, hijack_key_log, during_log):
        assert "not the job's secret" in log, log
    for log in (bare_log, hijack_log):
        assert "presented no job secret" in log, log

    for halt in (halt_key, halt_bare):
        assert halt.returncode != 0, halt.stdout
    assert "wrong job token" in halt_key.stderr, halt_key.stderr
    assert "needs its token" in halt_bare.stderr, halt_bare.stderr
    assert not mid["summary"].get("halted", False), mid["summary"]
    assert not status["summary"].get("halted", False), status["summary"]
    # While the intruders tried, the real ranks stayed the job's.
    for rank in mid["ranks"]:
        assert int(rank.get("restart_count", 0)) == 0, mid
        assert int(rank.get("world_size", 0)) == 2, mid

    # Every event of the real job arrived; nothing else was stored.
    assert len(summaries) == 2
    by_rank = {int(r["rank"]): r for r in status["ranks"]}
    assert set(by_rank) == {0, 1}, status
    for summary in summaries:
        assert summary["reconnects"] == 0, summary
        assert summary["acked"] == summary["recorded"], summary
        assert summary["recorded"] + summary["dropped_ring_full"] == EVENTS, summary
        assert int(by_rank[summary["rank"]]["events_received"]) == summary["acked"], status
    assert int(status["summary"]["events_received"]) == sum(s["acked"] for s in summaries)

    # Where the job's user looks: every attempt above counted in the real
    # job's status, the three made before the job existed too (each intruder
    # says Hello at least once; none of the real ranks was refused).
    assert int(status["summary"].get("hellos_refused", 0)) >= len(refused), status["summary"]
    assert int(mid["summary"].get("hellos_refused", 0)) >= 3, mid["summary"]
    assert "not the job's secret" in status["summary"]["last_hello_refusal"], status["summary"]
    assert status["summary"]["last_hello_refusal_from"].startswith("peer "), status["summary"]
    assert "127.0.0.1" in status["summary"]["last_hello_refusal_from"], status["summary"]
    assert "hellos refused" in status_text and ", from peer " in status_text, status_text

    # The restart with the proof: admitted, every event of it stored.
    assert restarted["acked"] == restarted["recorded"] == 2000, (restarted, restart.stderr)
    rank0 = {int(r["rank"]): r for r in after["ranks"]}[0]
    assert int(rank0.get("restart_count", 0)) == 1, after
    assert int(after["summary"]["events_received"]) == (
        sum(s["acked"] for s in summaries) + restarted["acked"]), after


def test_a_collector_allowing_unauthenticated_jobs_says_so_and_admits_a_rank_without_proof(
        tmp_path, monkeypatch):
    """The explicit opt-out (--allow-unauthenticated-jobs): no key is made, and
    the first rank of a job fixes its token (trust on first use)."""
    for binary in (COLLECTOR_BIN, CLI_BIN, LOADGEN_BIN):
        if not binary.exists():
            pytest.skip(f"{binary} is not built")
    user_config = tmp_path / "user-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user_config))
    collector = Collector(tmp_path, extra_args=["--allow-unauthenticated-jobs"])
    collector.start()
    try:
        admitted, log = intrude(collector, tmp_path, "tofu", "--rank", "0", "--world-size", "1",
                                job="tofu")
    finally:
        collector.stop()
    assert not (user_config / "trainscope" / "job.key").exists()
    assert admitted["acked"] == admitted["recorded"] == 2000, (admitted, log)


def test_a_loadgen_the_collector_refuses_for_good_exits_at_once_with_the_reason(tmp_path,
                                                                               monkeypatch):
    """issue 21: trainscope-loadgen kept retrying a refused stream until its run
    time and flush timeout ran out (a hang for a long --run-for-ms). Refused
    for good (no job secret), it stops, says why on stderr and exits 4."""
    for binary in (COLLECTOR_BIN, CLI_BIN, LOADGEN_BIN):
        if not binary.exists():
            pytest.skip(f"{binary} is not built")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user-config"))
    collector = Collector(tmp_path)
    collector.start()
    try:
        summary_path = tmp_path / "refused.json"
        result = subprocess.run(
            [str(LOADGEN_BIN), "--collector", collector.address, "--job", "refused",
             "--run-for-ms", "600000", "--rate", "2000", "--flush-timeout-ms", "600000",
             "--summary", str(summary_path)],
            capture_output=True, text=True, timeout=120,
            env=_env_without_trainscope(tmp_path / "intruder-config"))
    finally:
        collector.stop()
    # Ten minutes of run and flush time asked for; a refusal ends it well
    # within the subprocess timeout above.
    assert result.returncode == 4, (result.returncode, result.stderr)
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("trainscope-loadgen: job refused rank 0: the collector refused the "
                           "stream: PERMISSION_DENIED"), result.stderr
    assert "presented no job secret" in last, last
    summary = json.loads(summary_path.read_text().splitlines()[0])
    assert summary["acked"] == 0, summary
    # Accounting stays exact: what was recorded and not acknowledged is counted.
    assert summary["recorded"] == summary["dropped_shutdown"] > 0, summary
