"""Joining a job must prove membership (issue 21: for a job whose token the
collector generated, a local process said Hello as rank 0 with a higher
restart count and no token, replaced the real rank's stream and had its
batches stored; a process that said Hello with another world size took the
job id).

A real collector, a real two-rank job started without any token (the
zero-configuration path), and an intruder process (trainscope-loadgen) that
tries both attacks while the job runs: each attempt is refused with a message
naming the job and what it lacks, and every event of the real job arrives.
"""

import json
import subprocess

import pytest

from conftest import CLI_BIN, COLLECTOR_BIN, Collector, wait_for
from test_store_recovery import LOADGEN_BIN

JOB = "membership"
EVENTS = 60_000  # per rank


def intrude(collector: Collector, tmp_path, name: str, *args: str,
            job: str = JOB) -> tuple[dict, str]:
    """A loadgen rank of `job` started by someone else; its summary and stderr."""
    summary_path = tmp_path / f"{name}.json"
    result = subprocess.run(
        [str(LOADGEN_BIN), "--collector", collector.address, "--job", job, "--events", "2000",
         "--rate", "2000", "--flush-timeout-ms", "1500", "--summary", str(summary_path), *args],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(summary_path.read_text().splitlines()[0]), result.stderr


def test_an_intruder_can_neither_replace_a_rank_nor_squat_the_job(tmp_path):
    for binary in (COLLECTOR_BIN, CLI_BIN, LOADGEN_BIN):
        if not binary.exists():
            pytest.skip(f"{binary} is not built")
    collector = Collector(tmp_path)
    collector.start()
    try:
        summary_path = tmp_path / "job.json"
        job = subprocess.Popen(
            [str(LOADGEN_BIN), "--collector", collector.address, "--job", JOB, "--streams", "2",
             "--events", str(EVENTS), "--rate", "6000", "--memory-mb", "256",
             "--flush-timeout-ms", "60000", "--summary", str(summary_path)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

        def both_connected():
            try:
                ranks = collector.status(JOB).get("ranks", [])
            except AssertionError:
                return False
            return len(ranks) == 2 and all(r.get("connected") for r in ranks)

        wait_for(both_connected, 60, "both ranks of the real job to connect")

        # A restarted "rank 0" without the job's token: must not replace it.
        hijack, hijack_log = intrude(collector, tmp_path, "hijack", "--rank", "0",
                                     "--world-size", "2", "--restart-count", "5")
        # Another world for the same job id, with a token of its own.
        squat, squat_log = intrude(collector, tmp_path, "squat", "--rank", "0",
                                   "--world-size", "8", "--token", "mine")
        mid = collector.status(JOB)

        _, job_log = job.communicate(timeout=120)
        assert job.returncode == 0, job_log
        summaries = [json.loads(line) for line in summary_path.read_text().splitlines()]
        status = collector.status(JOB)
    finally:
        collector.stop()

    for attempt, log in ((hijack, hijack_log), (squat, squat_log)):
        assert attempt["acked"] == 0, (attempt, log)
        assert "refused the stream" in log, log
        assert f"job {JOB}" in log, log
    assert "PERMISSION_DENIED" in hijack_log, hijack_log
    assert "TRAINSCOPE_TOKEN or --token" in hijack_log, hijack_log
    # The squatter is refused for its token (the job has another) or its
    # world size (8, the job's is 2): either names what does not match.
    assert "wrong job token" in squat_log or "world size 2" in squat_log, squat_log

    # Each refusal is counted where the user looks.
    assert int(mid["summary"]["hellos_refused"]) >= 2, mid["summary"]
    assert f"job {JOB}" in mid["summary"]["last_hello_refusal"], mid["summary"]
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
        assert int(by_rank[summary["rank"]]["events_received"]) == summary["acked"], (summary,
                                                                                       status)
    assert int(status["summary"]["events_received"]) == sum(s["acked"] for s in summaries)
