"""A job id is not first-come-first-served (issue 21 item 1): with
--job-key-file the collector derives each job's secret from its key, so a
process that says Hello first with a token of its own and another world size
neither takes the job id nor locks the real job out, and cannot halt it.

A real collector with a job key, an intruder (trainscope-loadgen) that says
Hello before the job exists and again while it runs, and the real two-rank job
started by `trainscope run --job-key-file`, which hands the job's secret to the
ranks as TRAINSCOPE_TOKEN. Every event of the real job arrives; the intruder's
attempts are refused naming the job and the job key; its halt is refused.
"""

import functools
import json
import subprocess

import pytest

from conftest import CLI_BIN, COLLECTOR_BIN, Collector, wait_for
from test_job_membership import intrude as membership_intrude
from test_store_recovery import LOADGEN_BIN

JOB = "keyed"
EVENTS = 40_000  # per rank
# A loadgen rank of this job started by someone else (the membership test's helper).
intrude = functools.partial(membership_intrude, job=JOB)


def test_a_squatter_without_the_job_secret_neither_takes_the_job_nor_halts_it(tmp_path):
    for binary in (COLLECTOR_BIN, CLI_BIN, LOADGEN_BIN):
        if not binary.exists():
            pytest.skip(f"{binary} is not built")
    key = tmp_path / "job.key"
    made = subprocess.run([str(CLI_BIN), "job-secret", "--new-key", str(key)],
                          capture_output=True, text=True, timeout=30)
    assert made.returncode == 0, made.stderr
    assert key.stat().st_mode & 0o777 == 0o600
    secret = subprocess.run([str(CLI_BIN), "job-secret", JOB, "--job-key-file", str(key)],
                            capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    assert len(secret) == 64

    collector = Collector(tmp_path, extra_args=[f"--job-key-file={key}"])
    collector.start()
    try:
        # First to say Hello, with a token of its own and a world of one.
        first, first_log = intrude(collector, tmp_path, "first", "--rank", "0", "--world-size",
                                   "1", "--token", "mine")
        # Nor does presenting nothing claim a rank slot.
        bare, bare_log = intrude(collector, tmp_path, "bare", "--rank", "0", "--world-size", "2")
        jobs = collector.cli("jobs", "--json").stdout
        assert JOB not in jobs, jobs  # the refused Hellos created no job

        summary_path = tmp_path / "job.json"
        job = subprocess.Popen(
            [str(CLI_BIN), "run", "--collector", collector.address, "--job", JOB,
             "--job-key-file", str(key), "--",
             "sh", "-c", f'exec "{LOADGEN_BIN}" --collector "$TRAINSCOPE_COLLECTOR" '
             f'--job "$TRAINSCOPE_JOB" --token "$TRAINSCOPE_TOKEN" --streams 2 '
             f'--events {EVENTS} --rate 5000 --memory-mb 256 --flush-timeout-ms 60000 '
             f'--summary "{summary_path}"'],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

        def both_connected():
            try:
                ranks = collector.status(JOB).get("ranks", [])
            except AssertionError:
                return False
            return len(ranks) == 2 and all(r.get("connected") for r in ranks)

        wait_for(both_connected, 60, "both ranks of the real job to connect")
        # While the job runs: another world again, then a halt with its own token.
        during, during_log = intrude(collector, tmp_path, "during", "--rank", "0",
                                     "--world-size", "8", "--token", "mine")
        halt = collector.cli("halt", JOB, "--reason", "squatter", "--token", "mine", check=False)
        mid = collector.status(JOB)

        _, job_log = job.communicate(timeout=180)
        assert job.returncode == 0, job_log
        summaries = [json.loads(line) for line in summary_path.read_text().splitlines()]
        status = collector.status(JOB)
    finally:
        collector.stop()

    for attempt, log in ((first, first_log), (bare, bare_log), (during, during_log)):
        assert attempt["acked"] == 0, (attempt, log)
        assert "PERMISSION_DENIED" in log, log
        assert f"job {JOB}" in log and "--job-key-file" in log, log
    assert "not the job's secret" in first_log, first_log
    assert "presented no job secret" in bare_log, bare_log

    assert halt.returncode != 0, halt.stdout
    assert "wrong job token" in halt.stderr, halt.stderr
    assert not mid["summary"].get("halted", False), mid["summary"]
    for rank in mid["ranks"]:
        assert int(rank.get("world_size", 0)) == 2, mid

    # Every event of the real job arrived, under the secret run derived.
    assert len(summaries) == 2
    by_rank = {int(r["rank"]): r for r in status["ranks"]}
    assert set(by_rank) == {0, 1}, status
    for summary in summaries:
        assert summary["reconnects"] == 0, summary
        assert summary["acked"] == summary["recorded"], summary
        assert summary["recorded"] + summary["dropped_ring_full"] == EVENTS, summary
        assert int(by_rank[summary["rank"]]["events_received"]) == summary["acked"], status
    token_file = collector.job_dir(JOB) / "token"
    assert token_file.read_text().strip() == secret


def test_the_collector_refuses_a_job_key_others_can_read(tmp_path):
    if not COLLECTOR_BIN.exists():
        pytest.skip(f"{COLLECTOR_BIN} is not built")
    key = tmp_path / "job.key"
    key.write_text("0123456789abcdef0123456789abcdef\n")
    key.chmod(0o644)
    collector = Collector(tmp_path, extra_args=[f"--job-key-file={key}"])
    with pytest.raises(RuntimeError) as refused:
        collector.start()
    assert "--job-key-file" in str(refused.value) and "chmod 600" in str(refused.value)
