"""`trainscope traffic` on the real pipeline example (2 stages x 2 replicas,
gloo): the pair traffic the collector's analysis derives, read live and from
the stored log (--data-dir).

Send/recv is counted exactly: each stage-0 rank r sends its activations to
r+2 and gets their gradients back, micro-batches per step, each message
micro x the activation shape x 4 bytes (float32) — the counts the example
itself records and the size its model gives. The stage groups' all_reduce
is modelled (gloo's ring over 2 ranks: the whole buffer each way, in 2
messages per all_reduce).

Run: /usr/bin/python3 -m pytest tests/python/test_traffic.py
"""

from __future__ import annotations

import json
import math
import sys
import uuid

from jobs_util import EXAMPLES, run_job, trainscope_env
from trainscope._logged_event import ALL_REDUCE, COLLECTIVE, SEND

BATCH, MICRO_BATCHES, STEPS = 32, 2, 6


def activation_bytes() -> int:
    """One micro-batch's activations as the example shapes them (float32)."""
    sys.path.insert(0, str(EXAMPLES))
    import common  # noqa: PLC0415
    hw = 8  # sklearn's digits
    shape = common.feature_shape(common.cnn_features(hw), hw)
    return (BATCH // MICRO_BATCHES) * math.prod(shape) * 4


def pairs(stdout: str) -> dict:
    out = {}
    for line in stdout.splitlines():
        p = json.loads(line)
        out[(int(p["src_rank"]), int(p["dst_rank"]))] = p
    return out


def test_pipeline_send_recv_is_counted_exactly_and_all_reduce_modelled(trainscope_module,
                                                                        collector, tmp_path):
    job = f"traffic-{uuid.uuid4().hex[:6]}"
    res = run_job("pipeline_train.py",
                  ["--world-size", "4", "--batch-size", str(BATCH), "--dataset", "digits",
                   "--steps", str(STEPS), "--micro-batches", str(MICRO_BATCHES), "--no-eval",
                   "--collector", collector.address, "--job", job], tmp_path,
                  env=trainscope_env(trainscope_module))
    assert res.rc == 0, res.describe()
    per_message = activation_bytes()
    events = collector.events(job)

    offline = collector.cli("traffic", job, "--data-dir", str(collector.data_dir), "--json")
    got = pairs(offline.stdout)
    for src, dst in [(0, 2), (2, 0), (1, 3), (3, 1)]:
        sent = sum(step.get("send", 0) for step in res.rank(src)["collectives_per_step"])
        assert sent == STEPS * MICRO_BATCHES, res.rank(src)["collectives_per_step"]
        p = got[(src, dst)]
        assert p["exact_messages"] == sent, p
        assert p["exact_bytes"] == sent * per_message, (p, per_message)
        assert p["modelled_bytes"] == 0, p
        assert p["locality"] == "same_host", p
        assert p["src_host"] and p["src_host"] == p["dst_host"], p
        assert p["duration_ns"] > 0, p
        # The agent's own record of the sends says the same.
        logged = [e for e in events if e.rank == src and e.kind == COLLECTIVE
                  and e.detail == SEND and e.peer == dst]
        assert len(logged) == sent and sum(e.value for e in logged) == sent * per_message

    # The stage groups' all_reduce: gloo's ring of 2 ranks sends the whole
    # buffer to the other rank in 2 messages per call; stages never all_reduce
    # with each other.
    for a, b in [(0, 1), (1, 0), (2, 3), (3, 2)]:
        reduces = [e for e in events if e.rank == a and e.kind == COLLECTIVE
                   and e.detail == ALL_REDUCE]
        assert len(reduces) == STEPS
        p = got[(a, b)]
        assert p["exact_bytes"] == 0, p
        assert p["modelled_bytes"] == sum(e.value for e in reduces), p
        assert p["messages"] == 2 * STEPS, p
        assert p["backends"] == ["gloo"], p
        assert len(p["groups"]) == 1 and p["groups"][0].endswith(f"[{min(a, b)},{max(a, b)}]"), p
    assert (0, 3) not in got and (1, 2) not in got, sorted(got)

    # A step range counts only its steps: each step sends MICRO_BATCHES
    # messages each way.
    some = pairs(collector.cli("traffic", job, "--data-dir", str(collector.data_dir), "--json",
                               "--first", "2", "--last", "3").stdout)
    for key in [(0, 2), (2, 0), (1, 3), (3, 1)]:
        assert some[key]["steps"] == 2, some[key]
        assert some[key]["exact_messages"] == 2 * MICRO_BATCHES, some[key]
        assert some[key]["exact_bytes"] == 2 * MICRO_BATCHES * per_message, some[key]

    # One group: stage 0's all_reduce group holds ranks 0 and 1 only.
    stage0 = got[(0, 1)]["groups"][0]
    only = pairs(collector.cli("traffic", job, "--data-dir", str(collector.data_dir), "--json",
                               "--group", stage0).stdout)
    assert sorted(only) == [(0, 1), (1, 0)], sorted(only)
    assert only[(0, 1)]["bytes"] == got[(0, 1)]["bytes"]

    # Live, the collector answers the same.
    live = pairs(collector.cli("traffic", job, "--json", "--snapshot", collector.snapshot).stdout)
    assert live.keys() == got.keys()
    for key, p in got.items():
        assert live[key]["bytes"] == p["bytes"] and live[key]["messages"] == p["messages"], key

    # The table: the matrix and a row per pair.
    text = collector.cli("traffic", job, "--data-dir", str(collector.data_dir)).stdout
    assert "steps " in text and "SRC\\DST" in text and "same_host" in text, text
