"""The collector's Prometheus endpoint (`--metrics-port`), scraped over plain
HTTP while real 4-rank DDP jobs stream: job, rank and step metrics appear
for each job and move as jobs run.

Run: /usr/bin/python3 -m pytest tests/python/test_metrics.py
"""

from __future__ import annotations

import re
import urllib.request
import uuid

import pytest

from conftest import Collector
from jobs_util import run_job, trainscope_env

WORLD = 4


@pytest.fixture
def metrics_collector(tmp_path):
    c = Collector(tmp_path, extra_args=["--metrics-port=0"]).start()
    try:
        yield c
    finally:
        c.stop()


def scrape(collector) -> dict:
    """{'name{labels}': value} from GET /metrics."""
    with urllib.request.urlopen(f"http://{collector.metrics}/metrics", timeout=10) as reply:
        assert reply.status == 200
        assert reply.headers["Content-Type"].startswith("text/plain")
        text = reply.read().decode()
    samples = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r"^(\S+)\s+(\S+)$", line)
        assert m, f"not a Prometheus text line: {line!r}"
        samples[m.group(1)] = float(m.group(2))
    return samples


def run(collector, trainscope_module, tmp_path, job: str, steps: int) -> None:
    res = run_job("ddp_train.py", ["--world-size", str(WORLD), "--steps", str(steps),
                                   "--log-every", "0", "--no-eval", "--collector",
                                   collector.address, "--job", job], tmp_path,
                  env=trainscope_env(trainscope_module))
    assert res.rc == 0, res.describe()


def test_scrape_shows_job_rank_and_step_metrics_moving(metrics_collector, trainscope_module,
                                                        tmp_path):
    c = metrics_collector
    assert c.metrics, "the port file names no metrics endpoint"
    before = scrape(c)
    assert before["trainscope_collector_up"] == 1
    assert not any(k.startswith("trainscope_job_") for k in before)

    first = f"metrics-{uuid.uuid4().hex[:6]}"
    run(c, trainscope_module, tmp_path, first, 30)
    after = scrape(c)
    assert after["trainscope_collector_feed_updates_total"] > 0
    assert after[f'trainscope_job_events_received{{job="{first}"}}'] > 1000
    assert after[f'trainscope_step{{job="{first}"}}'] >= 25
    for rank in range(WORLD):
        labels = f'{{job="{first}",rank="{rank}"}}'
        assert after[f"trainscope_rank_events_received{labels}"] > 0
        assert after[f"trainscope_rank_agent_dropped_events{labels}"] == 0
        assert 0 < after[f"trainscope_step_time_seconds{labels}"] < 5
        assert after[f"trainscope_achieved_flops{labels}"] > 0
        assert after[f"trainscope_peak_memory_bytes{labels}"] > 0
        assert f"trainscope_collective_wait_seconds{labels}" in after
    # Traffic is summed by host pair: the 4 ranks share one host, so one
    # series however many rank pairs talk (DDP's all_reduce: a gloo ring).
    for family in ("trainscope_traffic_bytes_total", "trainscope_traffic_messages_total"):
        series = {k: v for k, v in after.items()
                  if k.startswith(family + "{") and f'job="{first}"' in k}
        assert len(series) == 1, series
        (key, value), = series.items()
        hosts = re.findall(r'(?:src|dst)_host="([^"]*)"', key)
        assert len(hosts) == 2 and hosts[0] == hosts[1] != "unknown", key
        assert value > 0, key

    second = f"metrics-{uuid.uuid4().hex[:6]}"
    run(c, trainscope_module, tmp_path, second, 10)
    later = scrape(c)
    assert later["trainscope_collector_feed_updates_total"] > \
        after["trainscope_collector_feed_updates_total"]
    assert later[f'trainscope_job_events_received{{job="{second}"}}'] > 0
    assert later[f'trainscope_job_events_received{{job="{first}"}}'] == \
        after[f'trainscope_job_events_received{{job="{first}"}}']
