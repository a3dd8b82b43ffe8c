"""Helpers for the collector tier's tests and bench (docs/scale.md): a real
nats-server with JetStream on a free port and a store in a temporary folder,
node and job-level collectors, trainscope-loadgen runs, and the job-level view
compared with the union of the nodes' logs.
"""

import collections
import json
import pathlib
import shutil
import signal
import subprocess
import time

from conftest import BIN_DIR, DUMP_LOG_EVENTS_BIN, Collector, free_port

NATS_SERVER = shutil.which("nats-server") or "/usr/sbin/nats-server"
LOADGEN_BIN = BIN_DIR / "trainscope-loadgen"
STEP_MARK = 5  # trainscope.v1.EVENT_KIND_STEP_MARK


class NatsServer:
    """nats-server -js on 127.0.0.1:<port>, its store under work_dir (kept across restarts)."""

    def __init__(self, work_dir: pathlib.Path, port: int = 0, extra=()):
        self.work_dir = work_dir
        self.extra = list(extra)
        self.port = port or free_port()
        self.store = work_dir / "jetstream"
        self.log_path = work_dir / "nats.log"
        self.process = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 20.0) -> "NatsServer":
        self.work_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [NATS_SERVER, "-js", "-sd", str(self.store), "-a", "127.0.0.1", "-p", str(self.port),
             *self.extra],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while "Server is ready" not in self.log_path.read_text(errors="replace").split(
                "Starting nats-server")[-1]:
            if self.process.poll() is not None:
                raise RuntimeError(f"nats-server exited:\n{self.log_path.read_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"nats-server not ready:\n{self.log_path.read_text()}")
            time.sleep(0.05)
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


def node_collector(work_dir: pathlib.Path, nats_url: str, name: str, port: int = 0,
                   extra=()) -> Collector:
    """A node collector on a fixed agent port (its ranks reconnect to it after a restart)."""
    port = port or free_port()
    work_dir.mkdir(parents=True, exist_ok=True)
    return Collector(work_dir, extra_args=[f"--listen=127.0.0.1:{port}", f"--publish={nats_url}",
                                           f"--node-name={name}", *extra])


def job_level_collector(work_dir: pathlib.Path, nats_url: str, extra=()) -> Collector:
    work_dir.mkdir(parents=True, exist_ok=True)
    return Collector(work_dir, extra_args=[f"--upstream={nats_url}", "--node-name=job-level",
                                           *extra])


def start_loadgen(collector_address: str, job: str, first_rank: int, streams: int,
                  world_size: int, events: int, rate: float, summary: pathlib.Path,
                  run_for_ms: int = 0, restart_count: int = 0,
                  clock_offset_ms: int = 0) -> subprocess.Popen:
    args = [str(LOADGEN_BIN), "--collector", collector_address, "--job", job,
            "--rank", str(first_rank), "--streams", str(streams), "--world-size",
            str(world_size), "--rate", str(rate),
            "--memory-mb", "128", "--flush-timeout-ms", "60000", "--summary", str(summary)]
    args += ["--run-for-ms", str(run_for_ms)] if run_for_ms else ["--events", str(events)]
    if restart_count:
        args += ["--restart-count", str(restart_count)]
    if clock_offset_ms:
        args += ["--clock-offset-ms", str(clock_offset_ms)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def logged_events(job_dir: pathlib.Path):
    """The job's logged events: (rank, kind, name, start_ns, end_ns, value, ...) tuples."""
    if not job_dir.exists():
        return []
    result = subprocess.run([str(DUMP_LOG_EVENTS_BIN), str(job_dir)], capture_output=True,
                            text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip())
    return [tuple(json.loads(line)) for line in result.stdout.splitlines()]


def view(events):
    """What the comparison checks: per rank, the events (as a multiset), the step marks."""
    by_rank = collections.defaultdict(collections.Counter)
    steps = collections.defaultdict(set)
    for e in events:
        by_rank[e[0]][e] += 1
        if e[1] == STEP_MARK:
            steps[e[0]].add(e[5])
    return by_rank, steps


def read_status(path: pathlib.Path) -> dict:
    """A tier status file (<data-dir>/tier/publisher.status or upstream.status)."""
    out = {}
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            out[key] = value
    except OSError:
        pass
    return out
