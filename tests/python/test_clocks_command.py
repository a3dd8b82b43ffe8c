"""`trainscope clocks` as a new user meets it, on real GPU traces: the
2-rank Kineto pair in ../shared/data/kineto-gpu/trace_filter__sampled_rank-0/1
(two GPUs of one host, "pyper:trainer:0:0" and ":1", no host name in the
files) imported with `trainscope import`.

- Imported as they are, the files of one import read one clock: rank 1 is
  exactly the reference clock (offset 0, drift 0, "same clock as rank 0"),
  nothing fitted, nothing invented.
- Told apart (--separate-clocks, as if from two hosts), rank 1 is aligned on
  what the traces hold (NCCL kernel ends, else the collectives' CPU records,
  else its own wall clock) with its uncertainty stated; the truth (one host,
  offset 0) lies within it, and no drift is clamped: a fit on too little
  evidence says "insufficient evidence" with drift 0.
- The table prints offsets against the reference rank in human units, never
  the epoch-sized offset onto Unix time; --json keeps the raw fields; --help
  explains the columns; a job that does not exist is a clear error.

Run: /usr/bin/python3 -m pytest tests/python/test_clocks_command.py
"""

from __future__ import annotations

import json
import pathlib
import subprocess

import pytest

from conftest import CLI_BIN, REPO

DATA = (REPO.parent / "shared" / "data" / "kineto-gpu").resolve()
PAIR = [DATA / f"trace_filter__sampled_rank-{r}.json.gz" for r in (0, 1)]

pytestmark = pytest.mark.skipif(not CLI_BIN.exists(), reason=f"{CLI_BIN} is not built")


def cli(*args, check=True):
    result = subprocess.run([str(CLI_BIN), *map(str, args)], capture_output=True, text=True,
                            timeout=120)
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def import_pair(tmp_path: pathlib.Path, job: str, *flags: str) -> pathlib.Path:
    if not all(p.exists() for p in PAIR):
        pytest.skip(f"the shared GPU traces are not in {DATA}")
    data = tmp_path / "data"
    out = cli("import", "--job", job, "--data-dir", data, *flags, *PAIR).stdout
    assert f"imported job {job}" in out, out
    return data


def clocks_json(data: pathlib.Path, job: str) -> dict[int, dict]:
    report = json.loads(cli("clocks", job, "--data-dir", data, "--json").stdout)
    return {int(d.get("rank", 0)): d for d in report["devices"]}


def test_help_explains_the_columns():
    out = cli("clocks", "--help").stdout
    assert "Usage: trainscope clocks JOB" in out, out
    for words in ("--data-dir", "--json", "reference", "insufficient evidence", "OFFSET",
                  "UNCERTAINTY"):
        assert words in out, (words, out)


def test_a_job_that_does_not_exist_is_a_clear_error(tmp_path):
    result = cli("clocks", "no-such-job", "--data-dir", tmp_path, check=False)
    assert result.returncode != 0
    assert "no-such-job" in result.stderr, result.stderr
    assert str(tmp_path) in result.stderr, result.stderr
    bad = cli("clocks", "..", "--data-dir", tmp_path, check=False)
    assert bad.returncode == 2 and "JOB" in bad.stderr, bad.stderr


def test_ranks_of_one_import_read_one_clock(tmp_path):
    data = import_pair(tmp_path, "pair")
    clocks = clocks_json(data, "pair")
    assert sorted(clocks) == [0, 1], clocks
    assert clocks[0].get("reference") is True, clocks
    one = clocks[1]
    assert one.get("source") == "CLOCK_SOURCE_CLOCK_DOMAIN", one
    assert one.get("clock_domain") == clocks[0].get("clock_domain"), clocks
    assert int(one.get("offset_to_reference_device_ns", 0)) == 0, one
    assert float(one.get("drift_to_reference_device_ppm", 0)) == 0, one
    assert not one.get("insufficient_evidence", False), one

    table = cli("clocks", "pair", "--data-dir", data).stdout
    assert "Against rank 0's clock" in table, table
    row = next(line for line in table.splitlines() if line.lstrip().startswith("1 "))
    assert "same clock as rank 0" in row and "exact" in row, table
    assert "insufficient evidence" not in row, table
    assert "1682725" not in table and "e+12" not in table, table  # no epoch-sized numbers


def test_ranks_told_apart_are_aligned_with_their_uncertainty_and_no_clamped_drift(tmp_path):
    data = import_pair(tmp_path, "apart", "--separate-clocks")
    clocks = clocks_json(data, "apart")
    assert sorted(clocks) == [0, 1], clocks
    one = clocks[1]
    assert one.get("clock_domain") != clocks[0].get("clock_domain"), clocks
    assert one.get("source") in ("CLOCK_SOURCE_GPU_COLLECTIVES", "CLOCK_SOURCE_COLLECTIVES",
                                 "CLOCK_SOURCE_NOMINAL"), one
    # The NCCL kernels of the pair reach the aligner, as kernels.
    assert int(one.get("gpu_collective_samples", 0)) > 0, one
    uncertainty = float(one.get("uncertainty_ns", 0))
    drift = float(one.get("drift_to_reference_device_ppm", 0))
    offset = int(one.get("offset_to_reference_device_ns", 0))
    assert uncertainty > 0, one  # stated, never silently exact
    assert abs(drift) < 1000, one  # never the clamp
    if one.get("insufficient_evidence", False):
        assert drift == 0, one
    # Both GPUs sit on one host: the true offset is 0, and the stated
    # uncertainty must cover it (an invented skew would not be).
    assert abs(offset) <= 3 * uncertainty, one

    table = cli("clocks", "apart", "--data-dir", data).stdout
    row = next(line for line in table.splitlines() if line.lstrip().startswith("1 "))
    assert "+/-" in row, table
    if one.get("insufficient_evidence", False):
        assert "insufficient evidence" in row, table
    assert "1682725" not in table, table
