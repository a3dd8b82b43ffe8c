"""trainscope-loadgen --distinct-names N (issue 21.2): the job's operators
cycle through N distinct names, split among all streams and threads, and the
collector's analysis sees every one of them (status' analysis_memory.names),
while the agents say how many went out (names_interned) and how many their
string tables had no room for (names_over_agent_cap). Without the flag the
summary and the names are those of the fixed aten:: list.
"""

import json
import subprocess
import time

import pytest

from test_store_recovery import LOADGEN_BIN

NAMES = 5000
# Besides the operators' names, the analysis interns the few fixed names of
# the workload (optimizer operator, all_reduce, its group, ...).
FIXED_NAMES_AT_MOST = 20


def run_loadgen(collector, job, *flags):
    if not LOADGEN_BIN.exists():
        pytest.skip(f"{LOADGEN_BIN} is not built")
    result = subprocess.run(
        [str(LOADGEN_BIN), "--collector", collector.address, "--job", job,
         "--flush-timeout-ms", "30000", *flags],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def names_in_status(collector, job, at_least):
    """The job's analysis_memory once it holds `at_least` names (or after 60 s)."""
    deadline = time.monotonic() + 60
    while True:
        memory = collector.status(job).get("analysis_memory", {})
        if int(memory.get("names", 0)) >= at_least or time.monotonic() > deadline:
            return memory
        time.sleep(0.2)


def test_distinct_names_reach_the_collector(collector):
    # 2 streams x 2 threads, 4,000 calls a stream: 44 of 50 main-thread calls
    # and every helper call name an operator, enough to name each name once.
    summaries = run_loadgen(collector, "distinct", "--streams", "2", "--threads", "2",
                            "--events", "8000", "--distinct-names", str(NAMES))
    assert len(summaries) == 2
    assert sum(s["names_interned"] for s in summaries) == NAMES, summaries
    assert all(s["names_over_agent_cap"] == 0 for s in summaries), summaries
    assert sum(s["acked"] for s in summaries) == sum(s["attempted"] for s in summaries)
    memory = names_in_status(collector, "distinct", NAMES)
    assert NAMES <= int(memory.get("names", 0)) <= NAMES + FIXED_NAMES_AT_MOST, memory
    assert int(memory.get("names_over_budget", 0)) == 0, memory


def test_without_the_flag_the_fixed_names_and_summary_stay(collector):
    summaries = run_loadgen(collector, "fixed", "--streams", "2", "--events", "8000")
    assert all("names_interned" not in s for s in summaries), summaries
    memory = names_in_status(collector, "fixed", 1)
    time.sleep(1.0)  # let the analysis fold every batch
    memory = collector.status("fixed").get("analysis_memory", {})
    assert 1 <= int(memory.get("names", 0)) <= FIXED_NAMES_AT_MOST, memory


def test_the_collector_name_budget_counts_the_names_past_it(tmp_path):
    from conftest import CLI_BIN, COLLECTOR_BIN, Collector  # noqa: PLC0415
    for binary in (COLLECTOR_BIN, CLI_BIN):
        if not binary.exists():
            pytest.skip(f"{binary} is not built")
    c = Collector(tmp_path, ["--max-job-names=1000"]).start()
    try:
        run_loadgen(c, "budget", "--events", "8000", "--distinct-names", str(NAMES))
        deadline = time.monotonic() + 60
        while True:
            memory = c.status("budget").get("analysis_memory", {})
            if int(memory.get("names_over_budget", 0)) >= NAMES - 1000 or \
                    time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert int(memory.get("names", 0)) <= 1000 + 1, memory
        # Every name past the budget is counted (at least once; once per batch
        # string table it appears in).
        assert int(memory.get("names_over_budget", 0)) >= NAMES - 1000, memory
    finally:
        c.stop()
