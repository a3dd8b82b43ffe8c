"""Process-group names with their ranks, the pipeline stage counter, and
attach(on_halt=...) on a session that is already attached.

Uses conftest's `collector` and `trainscope_module` fixtures (skipped, with the
reason, until the plugin and the collector are built in $TRAINSCOPE_BUILD_DIR).
Run: /usr/bin/python3 -m pytest tests/python/test_groups_and_stage.py
"""

import os
import re
import sys
import uuid

import pytest

from conftest import free_port, wait_for
from jobs_util import run_job, trainscope_env

torch = pytest.importorskip("torch")

# trainscope.v1 enum values (as trainscope._logged_event names them).
KIND_COLLECTIVE, KIND_COUNTER = 4, 7
SEND, RECV = 6, 7
SUBGROUP = re.compile(r"^pg:[^\[\]]+\[(\d+(?:,\d+)*)\]$")


def new_job(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def stage_counters(events, rank=None):
    return [e.value for e in events if e.kind == KIND_COUNTER and e.name == "pipeline.stage"
            and (rank is None or e.rank == rank)]


def train(steps: int) -> None:
    model = torch.nn.Linear(8, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        optimizer.zero_grad()
        model(torch.randn(4, 8)).sum().backward()
        optimizer.step()


# ------------------------------------------------------------ group names


def _subgroup_worker(rank, port, address, job):
    import torch.distributed as dist
    import trainscope
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=3)
    trainscope.attach(collector=address, job=job, halt_grace_s=None)
    # Every rank creates every group in the same order (new_group's contract);
    # the ranks are given unordered on purpose.
    pair = dist.new_group([2, 0])
    everyone = dist.new_group([1, 2, 0])
    t = torch.ones(4)
    if rank in (0, 2):
        dist.all_reduce(t, group=pair)
        dist.broadcast(t, src=2, group=pair)
        if rank == 0:
            dist.send(t, 2, group=pair)
        else:
            dist.recv(t, 0, group=pair)
    dist.all_reduce(t, group=everyone)
    dist.all_reduce(t)  # the default group
    trainscope.detach()
    dist.destroy_process_group()


def test_subgroup_names_list_their_global_ranks(trainscope_module, collector):
    import torch.multiprocessing as mp
    job = new_job("groups")
    sys.path.insert(0, os.path.dirname(__file__))
    mp.spawn(_subgroup_worker, args=(free_port(), collector.address, job), nprocs=3, join=True)
    collectives = [e for e in collector.events(job) if e.kind == KIND_COLLECTIVE]
    by_rank = {r: [e for e in collectives if e.rank == r] for r in range(3)}

    def groups_of(rank, ranks_text):
        return {e.group for e in by_rank[rank] if (m := SUBGROUP.match(e.group))
                and m.group(1) == ranks_text}

    # The pair [2, 0] is named with its ranks ascending, the same on both members.
    pair_names = groups_of(0, "0,2")
    assert len(pair_names) == 1, {e.group for e in by_rank[0]}
    assert groups_of(2, "0,2") == pair_names
    assert groups_of(1, "0,2") == set()  # not a member: nothing issued
    (pair_name,) = pair_names
    for rank in (0, 2):
        in_pair = [e for e in by_rank[rank] if e.group == pair_name]
        non_p2p = [e for e in in_pair if e.detail not in (SEND, RECV)]
        assert [e.group_sequence for e in non_p2p] == [1, 2], (rank, in_pair)
        p2p = [e for e in in_pair if e.detail in (SEND, RECV)]
        assert [(e.detail, e.peer) for e in p2p] == [(SEND, 2) if rank == 0 else (RECV, 0)]

    # A subgroup of every rank is still a group of its own, not the default one.
    everyone = groups_of(1, "0,1,2")
    assert len(everyone) == 1 and everyone != pair_names
    for rank in range(3):
        assert groups_of(rank, "0,1,2") == everyone
        names = {e.group for e in by_rank[rank]}
        assert "default_pg" in names
        assert all(g == "default_pg" or SUBGROUP.match(g) for g in names), names


def test_group_name_is_cached_per_group_object(trainscope_module):
    from trainscope import _patches

    class FakeGroup:  # weak-referenceable, unknown to c10d: named by its id
        pass

    g = FakeGroup()
    first = _patches._group_name(g)
    assert first.startswith("pg:@") and _patches._group_name(g) is first
    assert _patches._group_name(None) == ""
    other = FakeGroup()
    assert _patches._group_name(other) != first


# ------------------------------------------------------------ pipeline stage


def test_set_stage_records_the_counter_now_and_at_every_step(trainscope_module, collector,
                                                            monkeypatch):
    ts = trainscope_module
    monkeypatch.delenv("TRAINSCOPE_STAGE", raising=False)
    monkeypatch.setattr(ts._session._state, "stage", None)
    job = new_job("stage")
    ts.attach(collector=collector.address, job=job, halt_grace_s=None)
    try:
        assert ts.session().stage is None
        train(1)  # a boundary before any stage: no counter
        ts.set_stage(1)
        assert ts.session().stage == 1
        train(3)
    finally:
        ts.detach()
    # Once at set_stage, then once per step boundary.
    assert stage_counters(collector.events(job)) == [1] * 4
    with pytest.raises(ValueError):
        ts.set_stage(-1)


def test_stage_from_environment_or_set_before_attach(trainscope_module, collector, monkeypatch):
    ts = trainscope_module
    monkeypatch.setattr(ts._session._state, "stage", None)
    monkeypatch.setenv("TRAINSCOPE_STAGE", "3")
    job = new_job("stage-env")
    ts.attach(collector=collector.address, job=job, halt_grace_s=None)
    try:
        assert ts.session().stage == 3
        train(2)
    finally:
        ts.detach()
    assert stage_counters(collector.events(job)) == [3] * 3

    # set_stage before attaching wins over the environment.
    ts.set_stage(2)
    job = new_job("stage-early")
    ts.attach(collector=collector.address, job=job, halt_grace_s=None)
    try:
        train(1)
    finally:
        ts.detach()
    assert stage_counters(collector.events(job)) == [2] * 2

    monkeypatch.setattr(ts._session._state, "stage", None)
    monkeypatch.setenv("TRAINSCOPE_STAGE", "first")
    with pytest.raises(ValueError, match="TRAINSCOPE_STAGE"):
        ts.attach(collector=collector.address, job=new_job("stage-bad"), halt_grace_s=None)
    assert not ts.is_attached()


def test_pipeline_example_reports_each_ranks_stage_and_stage_groups(trainscope_module,
                                                                    collector, tmp_path):
    job = new_job("pipe")
    res = run_job("pipeline_train.py",
                  ["--world-size", "4", "--batch-size", "32", "--dataset", "digits", "--steps",
                   "4", "--micro-batches", "2", "--no-eval", "--collector", collector.address,
                   "--job", job], tmp_path, env=trainscope_env(trainscope_module))
    assert res.rc == 0, res.describe()
    events = collector.events(job)
    for d in res.ranks:
        rank, stage = d["rank"], d["stage"]
        counters = stage_counters(events, rank)
        # At attach (TRAINSCOPE_STAGE), at set_stage, and at each of the 4 steps.
        assert counters == [stage] * 6, (rank, counters)
        # The data-parallel all_reduce runs in the stage's own group: its two ranks.
        members = ",".join(str(r) for r in range(2 * stage, 2 * stage + 2))
        groups = {e.group for e in events if e.rank == rank and e.kind == KIND_COLLECTIVE}
        assert any((m := SUBGROUP.match(g)) and m.group(1) == members for g in groups), groups


# ------------------------------------------------------------ on_halt


def test_attach_with_on_halt_after_auto_attach_installs_the_callback(trainscope_module,
                                                                     collector, monkeypatch):
    ts = trainscope_module
    job = new_job("late-on-halt")
    monkeypatch.setenv("TRAINSCOPE_COLLECTOR", collector.address)
    monkeypatch.setenv("TRAINSCOPE_JOB", job)
    monkeypatch.setenv("RANK", "0")
    auto = ts._attach_from_env()  # what the sitecustomize does at start-up
    try:
        assert auto is not None and auto.on_halt is None
        calls = []
        # The script's own attach, as the examples do: same session, its callback.
        assert ts.attach(collector=collector.address, on_halt=calls.append) is auto
        assert auto.on_halt == calls.append
        assert ts.attach() is auto and auto.on_halt == calls.append  # None keeps it
        train(1)
        wait_for(lambda: ts.stats()["connected"], 10, "the agent to connect")
        # The job's token is its secret, derived from the collector's default
        # job key by the agent and by the CLI alike.
        collector.cli("halt", job, "--reason", "late")
        wait_for(lambda: auto._native.halt_pending, 10, "the halt to reach the agent")
        with pytest.raises(ts.HaltRequested):
            for _ in range(50):
                train(1)
        assert calls == ["late"]
        # A later attach replaces the callback.
        again = []
        ts.attach(on_halt=again.append)
        assert auto.on_halt == again.append
    finally:
        ts.detach()
