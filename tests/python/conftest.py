"""Fixtures for the Python tests of trainscope (run: /usr/bin/python3 -m pytest tests/python).

The build directory is $TRAINSCOPE_BUILD_DIR (default: <repo>/build); its
python/ folder (the trainscope package with its C++ extension) goes first on
sys.path, its bin/ (or $TRAINSCOPE_BIN_DIR) holds trainscope-collector and the
trainscope CLI. Tests that need what is missing there are skipped with the
reason.

Fixtures and helpers others reuse:
  trainscope_module  the imported package (skips without the extension)
  collector          a real trainscope-collector on free loopback ports with a
                     temporary data dir: .address .feed .snapshot .data_dir
                     .job_dir(job) .cli(*args) .status(job) .events(job)
                     .stop() .kill()
  free_port()        an unused TCP port on 127.0.0.1
  wait_for(pred, timeout_s, what)  polls until pred() is truthy or fails the test
"""

import atexit
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD_DIR = pathlib.Path(os.environ.get("TRAINSCOPE_BUILD_DIR", REPO / "build")).resolve()
PYTHON_DIR = BUILD_DIR / "python"
BIN_DIR = pathlib.Path(os.environ.get("TRAINSCOPE_BIN_DIR", BUILD_DIR / "bin")).resolve()
COLLECTOR_BIN = BIN_DIR / "trainscope-collector"
CLI_BIN = BIN_DIR / "trainscope"
DUMP_LOG_EVENTS_BIN = BIN_DIR / "dump_log_events"

if (PYTHON_DIR / "trainscope").is_dir() and str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))

# Collectors make their default job key under XDG_CONFIG_HOME, and agents and
# the CLI derive each job's secret from it (docs/security.md "Who belongs to a
# job"): one directory per test session, so the tests need no writable home
# and never touch the user's own key. Every process they start inherits it;
# one that imports this module again (torch.multiprocessing's spawned ranks)
# keeps the session's.
if "TRAINSCOPE_TEST_CONFIG_HOME" not in os.environ:
    os.environ["TRAINSCOPE_TEST_CONFIG_HOME"] = tempfile.mkdtemp(
        prefix="trainscope-test-config-")
    atexit.register(shutil.rmtree, os.environ["TRAINSCOPE_TEST_CONFIG_HOME"], True)
os.environ["XDG_CONFIG_HOME"] = os.environ["TRAINSCOPE_TEST_CONFIG_HOME"]


def extension_built() -> bool:
    return any((PYTHON_DIR / "trainscope").glob("_C*.so"))


# Appended to a certificate script that defined key() and made ca.pem/ca.key:
# expired.pem/.key, signed by ca but valid only 2020-01-01 to 2020-01-02
# (`openssl x509 -days` cannot go back in time, `openssl ca -startdate` can).
EXPIRED_CERT_SCRIPT = r"""
key expired.key
openssl req -new -key expired.key -subj "/CN=expired" -out expired.csr
mkdir -p ca.d; : > ca.d/index.txt; echo 01 > ca.d/serial
printf '[ca]\ndefault_ca=d\n[d]\ndir=./ca.d\ndatabase=$dir/index.txt\nnew_certs_dir=$dir\nserial=$dir/serial\ndefault_md=sha256\npolicy=p\nx509_extensions=ext\n[p]\ncommonName=supplied\n[ext]\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n' > ca.cnf
openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr -out expired.pem \
  -startdate 20200101000000Z -enddate 20200102000000Z -notext 2>/dev/null
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout_s: float, what: str, interval_s: float = 0.02):
    """Returns predicate()'s first truthy value; fails the test after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)


class Collector:
    """A trainscope-collector process on free ports (see the module docstring)."""

    def __init__(self, work_dir: pathlib.Path, extra_args=()):
        self.work_dir = work_dir
        self.extra_args = list(extra_args)
        self.data_dir = work_dir / "data"
        self.port_file = work_dir / "ports"
        self.log_path = work_dir / "collector.log"
        self.address = self.feed = self.snapshot = self.metrics = None
        self.process = None

    def start(self, timeout_s: float = 30.0) -> "Collector":
        if self.port_file.exists():
            self.port_file.unlink()
        self._log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            [str(COLLECTOR_BIN), "--listen=127.0.0.1:0", "--feed=tcp://127.0.0.1:*",
             "--snapshot=tcp://127.0.0.1:*", f"--data-dir={self.data_dir}",
             f"--port-file={self.port_file}", "--fsync=false", "--probe_interval_ms=200",
             *self.extra_args],
            stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while not self.port_file.exists():
            if self.process.poll() is not None:
                raise RuntimeError(f"collector exited at start:\n{self.output()}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"collector not ready in {timeout_s} s:\n{self.output()}")
            time.sleep(0.02)
        ports = dict(line.split("=", 1) for line in self.port_file.read_text().split() if "=" in line)
        self.address, self.feed, self.snapshot = ports["agents"], ports["feed"], ports["snapshot"]
        self.metrics = ports.get("metrics")  # with --metrics-port
        return self

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def job_dir(self, job: str) -> pathlib.Path:
        return self.data_dir / "jobs" / job

    def cli(self, *args, timeout_s: float = 30.0, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run([str(CLI_BIN), *args, "--collector", self.address],
                                capture_output=True, text=True, timeout=timeout_s)
        if check and result.returncode != 0:
            raise AssertionError(f"trainscope {' '.join(args)} failed ({result.returncode}):\n"
                                 f"{result.stdout}{result.stderr}")
        return result

    def status(self, job: str) -> dict:
        return json.loads(self.cli("status", job, "--json").stdout)

    def events(self, job: str):
        """The job's logged events as trainscope LoggedEvent tuples (read by the
        dump_log_events tool: the extension does not link the store)."""
        from trainscope._logged_event import LoggedEvent  # noqa: PLC0415
        result = subprocess.run([str(DUMP_LOG_EVENTS_BIN), str(self.job_dir(job))],
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(result.stderr.strip() or f"dump_log_events failed: {result}")
        return [LoggedEvent(*json.loads(line)) for line in result.stdout.splitlines()]

    def stop(self, timeout_s: float = 10.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture(scope="session")
def trainscope_module():
    if not extension_built():
        pytest.skip(f"no trainscope extension under {PYTHON_DIR} (build the trainscope_torch "
                    f"target; TRAINSCOPE_BUILD_DIR selects the build dir)")
    import trainscope  # noqa: PLC0415
    return trainscope


@pytest.fixture
def collector(tmp_path):
    for binary in (COLLECTOR_BIN, CLI_BIN):
        if not binary.exists():
            pytest.skip(f"{binary} is not built (TRAINSCOPE_BUILD_DIR selects the build dir)")
    c = Collector(tmp_path).start()
    try:
        yield c
    finally:
        c.stop()


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: multi-process jobs that take tens of seconds")
