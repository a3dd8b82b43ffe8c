"""The durable store as an operator meets it: a real collector, real agent
streams (trainscope-loadgen), a data directory damaged while the collector is
stopped, and what the restarted collector's `trainscope status --json` says.

Issue 21: a deleted or emptied segment used to vanish with "0 corrupt records
skipped"; a damaged index.sqlite was noticed only by `trainscope alerts
--data-dir` failing with "cannot switch to WAL journal mode".
"""

import json
import os
import sqlite3
import stat
import subprocess

import pytest

from conftest import BIN_DIR, CLI_BIN, Collector

LOADGEN_BIN = BIN_DIR / "trainscope-loadgen"
JOB = "recovery-job"


def run_loadgen(collector: Collector, events: int = 150_000, streams: int = 2) -> list:
    # Paced: at full speed the agents' rings overflow and drop (counted, but
    # this test wants every event in the log).
    if not LOADGEN_BIN.exists():
        pytest.skip(f"{LOADGEN_BIN} is not built")
    result = subprocess.run(
        [str(LOADGEN_BIN), "--collector", collector.address, "--job", JOB, "--streams",
         str(streams), "--events", str(events), "--rate", "100000"],
        capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def indexed_segments(data_dir) -> dict:
    """{file name: (records, events, bytes)} as the stopped collector's index knows them."""
    db = sqlite3.connect(f"file:{data_dir / 'index.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT path, records, events, bytes FROM segments WHERE job_id = ?",
                          (JOB,)).fetchall()
    finally:
        db.close()
    return {os.path.basename(path): (records, events, size) for path, records, events, size in rows}


@pytest.fixture
def stopped_job(tmp_path):
    """A job of 2 ranks spread over several 1 MiB segments, its collector stopped."""
    for binary in (CLI_BIN,):
        if not binary.exists():
            pytest.skip(f"{binary} is not built")
    collector = Collector(tmp_path, extra_args=["--segment-mb=1"]).start()
    try:
        summaries = run_loadgen(collector)
        acked = sum(s["acked"] for s in summaries)
        assert acked > 0, summaries
        status = collector.status(JOB)
        assert int(status["summary"]["events_received"]) == acked
    finally:
        collector.stop()
    segments = indexed_segments(collector.data_dir)
    assert len(segments) >= 3, f"expected several segments, the index has {segments}"
    assert sum(events for _, events, _ in segments.values()) == acked, segments
    return collector, segments, acked


def restarted_status(collector: Collector) -> dict:
    collector.start()
    try:
        return collector.status(JOB)
    finally:
        collector.stop()


def test_deleted_segment_is_reported_with_the_events_it_held(stopped_job):
    collector, segments, acked = stopped_job
    name = sorted(segments)[1]
    records, events, size = segments[name]
    assert events > 0
    (collector.job_dir(JOB) / name).unlink()

    status = restarted_status(collector)
    recovery = status["recovery"]
    assert int(recovery["events_lost"]) == events, recovery
    assert int(recovery["records_lost"]) == records
    assert int(recovery["bytes_lost"]) == size
    assert int(recovery["segments_missing"]) == 1
    assert any(name in m for m in recovery["messages"]), recovery["messages"]
    assert int(status["summary"]["events_received"]) == acked - events
    assert sum(int(r["events_lost"]) for r in status["ranks"]) == events
    log = collector.output()
    assert f"{events} events" in log and "lost" in log, log[-2000:]
    assert "0 corrupt records skipped" not in log



def test_segment_truncated_to_zero_bytes_is_reported(stopped_job):
    collector, segments, acked = stopped_job
    name = sorted(segments)[-1]  # the last one: the collector appends to it again
    records, events, _ = segments[name]
    assert events > 0
    os.truncate(collector.job_dir(JOB) / name, 0)

    collector.start()
    try:
        status = collector.status(JOB)
        text = collector.cli("status", JOB).stdout
    finally:
        collector.stop()
    recovery = status["recovery"]
    assert int(recovery["events_lost"]) == events, recovery
    assert int(recovery["records_lost"]) == records
    assert int(status["summary"]["events_received"]) == acked - events
    assert f"LOST {events:,} events" in text, text


def test_damaged_index_is_rebuilt_at_start(stopped_job):
    collector, segments, acked = stopped_job
    index = collector.data_dir / "index.sqlite"
    index.write_bytes(b"not a database " * 512)
    for side in ("index.sqlite-wal", "index.sqlite-shm"):
        (collector.data_dir / side).unlink(missing_ok=True)

    status = restarted_status(collector)
    assert status["recovery"]["index_rebuilt"] is True, status["recovery"]
    assert int(status["recovery"]["events_lost"]) == 0
    assert int(status["summary"]["events_received"]) == acked
    assert list(collector.data_dir.glob("index.sqlite.damaged-*")), "the damaged file is kept"
    # What used to fail with "cannot switch to WAL journal mode":
    alerts = subprocess.run([str(CLI_BIN), "alerts", JOB, "--data-dir", str(collector.data_dir)],
                            capture_output=True, text=True, timeout=60)
    assert alerts.returncode == 0, alerts.stdout + alerts.stderr
    assert indexed_segments(collector.data_dir) == segments, "rows rebuilt from the segments"


def test_data_files_are_private_to_user_and_group(stopped_job):
    collector, _, _ = stopped_job
    for path in [collector.data_dir, *collector.data_dir.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        if path.is_dir():
            assert mode == 0o750, f"{path}: {oct(mode)}"
        elif path.name.startswith("token"):  # it grants control: the owner only
            assert mode == 0o600, f"{path}: {oct(mode)}"
        elif path.name != "ports" and path.parent != collector.work_dir:
            assert mode == 0o640, f"{path}: {oct(mode)}"


def test_a_reader_in_the_collectors_group_reads_a_stopped_collectors_data(tmp_path):
    """The operator's CLI, another user in the collector's group, opens the
    data directory once the collector has stopped (SQLite needs the index's
    -wal and -shm for that, which the collector keeps); a user outside the
    group is refused."""
    import shutil  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the CLI as another user")
    if not CLI_BIN.exists():
        pytest.skip(f"{CLI_BIN} is not built")
    work = tempfile.mkdtemp(prefix="trainscope-group-")  # traversable by others, unlike tmp_path
    os.chmod(work, 0o755)
    try:
        collector = Collector(type(tmp_path)(work)).start()
        try:
            run_loadgen(collector, events=20_000, streams=1)
        finally:
            collector.stop()
        group = os.stat(collector.data_dir).st_gid

        def as_user(gid, *args):
            return subprocess.run(["setpriv", "--reuid=65534", f"--regid={gid}", "--clear-groups",
                                   str(CLI_BIN), *args, "--data-dir", str(collector.data_dir)],
                                  capture_output=True, text=True, timeout=60)

        for args in (("alerts", JOB), ("steps", JOB)):
            member = as_user(group, *args)
            assert member.returncode == 0, f"{args}: {member.stdout}{member.stderr}"
        outsider = as_user(65534, "steps", JOB)
        assert outsider.returncode != 0
        assert "Permission denied" in outsider.stderr, outsider.stderr
    finally:
        shutil.rmtree(work, ignore_errors=True)
