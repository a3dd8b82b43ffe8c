"""The PyTorch plugin in one process against a real collector.

Each test trains a small CNN for a few steps with trainscope attached, detaches
(which flushes everything to the collector) and reads the job's durable log
back through the extension's log reader.
"""

import os
import pathlib
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from conftest import PYTHON_DIR, free_port, wait_for

torch = pytest.importorskip("torch")

BATCH, SIDE, CHANNELS = 4, 8, 4
# 3x3 convolution, padding 1, 1 -> 4 channels on 4 x 1 x 8 x 8: 2 * N * O * H * W * C * k * k
CONV_FLOPS = 2 * BATCH * CHANNELS * SIDE * SIDE * 1 * 3 * 3
# Linear 256 -> 10 on 4 rows: 2 * rows * in * out
LINEAR_FLOPS = 2 * BATCH * (CHANNELS * SIDE * SIDE) * 10


def make_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, CHANNELS, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(CHANNELS * SIDE * SIDE, 10))
    return model, torch.optim.SGD(model.parameters(), lr=0.01)


def train(model, optimizer, steps):
    x = torch.randn(BATCH, 1, SIDE, SIDE)
    y = torch.randint(0, 10, (BATCH,))
    for _ in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()


def job_name(request):
    return f"py-{request.node.name}-{os.getpid()}".replace("[", "-").replace("]", "")


def of_kind(events, kind):
    return [e for e in events if e.kind == kind]


def test_operators_scopes_steps_phases_and_flops(trainscope_module, collector, request):
    ts = trainscope_module
    from trainscope import _logged_event as K
    job = job_name(request)
    model, optimizer = make_model()
    ts.attach(collector=collector.address, job=job, halt_grace_s=None)
    try:
        assert ts.is_attached()
        train(model, optimizer, 3)
        assert ts.stats()["step"] == 3
    finally:
        ts.detach()
    assert not ts.is_attached()
    final = ts.stats()
    assert final["events_recorded"] > 0 and final["events_acked"] == final["events_recorded"]

    events = collector.events(job)
    assert len(events) == final["events_acked"]
    ops = of_kind(events, K.OPERATOR)
    names = {e.name for e in ops}
    for expected in ("aten::conv2d", "aten::linear", "aten::addmm", "aten::relu"):
        assert expected in names, f"{expected} missing from {sorted(names)[:40]}"
    forward = [e for e in ops if e.detail == K.SCOPE_FORWARD]
    backward = [e for e in ops if e.detail == K.SCOPE_BACKWARD]
    assert {e.name for e in forward} >= {"aten::conv2d", "aten::linear"}
    assert any(e.name.startswith("autograd::engine::evaluate_function: ConvolutionBackward")
               for e in backward)
    assert any(e.name == "aten::convolution_backward" for e in backward)
    assert not any(e.name == "aten::conv2d" for e in backward)
    assert all(e.end_ns >= e.start_ns > 0 for e in ops)
    # Autograd sequence numbers (+1) tie a forward op to its backward node.
    forward_seqs = {e.value for e in forward if e.value > 0}
    assert any(e.value in forward_seqs for e in backward)

    # One step mark per optimizer step, numbering the step that starts.
    assert [e.value for e in of_kind(events, K.STEP_MARK)] == [1, 2, 3]

    phases = of_kind(events, K.PHASE_MARK)
    by_kind = {k: [e for e in phases if e.detail == k]
               for k in (K.PHASE_FORWARD, K.PHASE_BACKWARD, K.PHASE_OPTIMIZER)}
    for kind, marks in by_kind.items():
        assert [e.value for e in marks] == [0, 1, 2], (kind, marks)
    for step in range(3):
        fwd = by_kind[K.PHASE_FORWARD][step]
        bwd = by_kind[K.PHASE_BACKWARD][step]
        opt = by_kind[K.PHASE_OPTIMIZER][step]
        assert fwd.start_ns <= fwd.end_ns <= bwd.start_ns <= bwd.end_ns <= opt.start_ns

    # FLOPs: a "flops" counter right after each outermost conv2d / linear
    # (same thread, time == the operator's end), with the hand-computed value.
    counters = [e for e in of_kind(events, K.COUNTER) if e.name == "flops"]
    by_end = {(e.thread, e.start_ns): e for e in counters}
    for op_name, flops in (("aten::conv2d", CONV_FLOPS), ("aten::linear", LINEAR_FLOPS)):
        calls = [e for e in forward if e.name == op_name]
        assert len(calls) == 3
        for call in calls:
            counter = by_end.get((call.thread, call.end_ns))
            assert counter is not None, f"no flops counter at the end of {op_name}"
            assert counter.value == flops
    # addmm runs inside linear: counted once, as linear.
    assert not any((e.thread, e.end_ns) in by_end for e in ops if e.name == "aten::addmm")

    memory = [e for e in of_kind(events, K.COUNTER) if e.name == "memory.allocated_bytes"]
    assert len(memory) == 3 and all(e.value > 0 for e in memory)


def test_user_ranges_keep_their_names_when_addresses_are_reused(trainscope_module, collector,
                                                                 request):
    # User ranges name themselves with a string made per call, freed at its
    # end: the next range's name often has the same address. The observer's
    # pointer-keyed name cache must verify every hit (short names by their
    # bytes and NUL, long ones by strcmp), or a range takes the previous name.
    ts = trainscope_module
    from trainscope import _logged_event as K
    job = job_name(request)
    # Same prefixes, lengths around the cache's 8- and 16-byte word edges.
    names = ["r.a", "r.ab", "r.abcdef", "r.abcdefg", "r.abcdefgh", "r.abcdefghijklm",
             "r.abcdefghijklmn", "r.abcdefghijklmno", "r.abcdefghijklmnop-long"]
    rounds = 30
    a = torch.ones(2)
    ts.attach(collector=collector.address, job=job, halt_grace_s=None, shapes=False)
    try:
        for _ in range(rounds):
            for name in names + names[::-1]:
                with torch.autograd.profiler.record_function(name):
                    torch.add(a, a)
    finally:
        ts.detach()
    ops = of_kind(collector.events(job), K.OPERATOR)
    counts = {name: sum(1 for e in ops if e.name == name) for name in names}
    assert counts == {name: 2 * rounds for name in names}


def test_dormant_records_nothing_until_enabled(trainscope_module, collector, request):
    ts = trainscope_module
    from trainscope import _logged_event as K
    job = job_name(request)
    model, optimizer = make_model()
    # No token: the agent proves membership with the job's secret, derived
    # from the collector's default job key this user can read (so does the CLI).
    session = ts.attach(collector=collector.address, job=job, recording=False,
                        halt_grace_s=None)
    try:
        wait_for(lambda: ts.stats()["connected"], 10, "the agent to connect")
        train(model, optimizer, 2)
        assert ts.stats()["events_recorded"] == 0
        collector.cli("enable", job)
        wait_for(lambda: session.recording, 10, "recording to switch on")
        time.sleep(0.2)  # the plugin's control thread turns the callbacks on (20 ms tick)
        train(model, optimizer, 2)
        assert ts.stats()["events_recorded"] > 0
    finally:
        ts.detach()
    events = collector.events(job)
    assert [e.value for e in of_kind(events, K.STEP_MARK)] == [3, 4]
    assert len([e for e in of_kind(events, K.OPERATOR) if e.name == "aten::conv2d"]) == 2


def test_detach_removes_every_hook(trainscope_module, collector, request):
    ts = trainscope_module
    import torch.distributed as dist
    original_step_code = torch.optim.Optimizer.__dict__["_optimizer_step_code"]
    original_send = dist.send
    job = job_name(request)
    model, optimizer = make_model()
    ts.attach(collector=collector.address, job=job, halt_grace_s=None)
    assert ts._C._has_global_callbacks()
    assert torch.optim.Optimizer.__dict__["_optimizer_step_code"] is not original_step_code
    assert dist.send is not original_send
    train(model, optimizer, 1)
    ts.detach()
    assert not ts._C._has_global_callbacks()
    assert torch.optim.Optimizer.__dict__["_optimizer_step_code"] is original_step_code
    assert dist.send is original_send
    logged = len(collector.events(job))
    train(model, optimizer, 2)  # nothing reaches the (shut down) agent any more
    ts.step()
    assert len(collector.events(job)) == logged
    assert ts.stats()["step"] == 1 and not ts.stats()["attached"]
    # A second attach after detach is a fresh session.
    ts.attach(collector=collector.address, job=job + "-again", halt_grace_s=None)
    try:
        train(model, optimizer, 1)
    finally:
        ts.detach()
    assert ts.stats()["step"] == 1
    assert any(e.name == "aten::conv2d" for e in collector.events(job + "-again"))


def test_halt_raises_at_a_step_boundary_after_on_halt(trainscope_module, collector, request,
                                                      tmp_path):
    ts = trainscope_module
    job = job_name(request)
    # The job's token: its secret, which the collector writes to the job's dir.
    token_file = collector.job_dir(job) / "token"
    model, optimizer = make_model()
    reasons = []
    ts.attach(collector=collector.address, job=job, on_halt=reasons.append, halt_grace_s=30)
    try:
        train(model, optimizer, 2)
        wait_for(lambda: ts.stats()["connected"], 10, "the agent to connect")
        collector.cli("halt", job, "--reason", "r", "--token-file", str(token_file))
        wait_for(lambda: ts.session()._native.halt_pending, 10, "the halt to reach the agent")
        assert reasons == []  # nothing runs on the agent's thread
        arrived_at = ts.stats()["step"]
        # The collector picks the boundary (highest step mark + a margin of at
        # least 2 steps and 1 s of steps, or 0: the next one); steps before it
        # run on.
        halt_at = ts.session()._native.halt_info()["halt_at_step"]
        with pytest.raises(ts.HaltRequested) as raised:
            for _ in range(max(halt_at, arrived_at) + 5):
                train(model, optimizer, 1)
        assert raised.value.reason == "r"
        assert reasons == ["r"]
        assert ts.stats()["step"] == max(halt_at, arrived_at + 1)
        # Later steps run on without a second raise or on_halt call.
        train(model, optimizer, 2)
        assert reasons == ["r"]
    finally:
        ts.detach()


def run_python(code: str, timeout_s: float = 60, env=None):
    full_env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), **(env or {}))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout_s, env=full_env)


def test_halt_without_step_boundary_gets_sigterm(trainscope_module, collector, request, tmp_path):
    job = job_name(request)
    ready = tmp_path / "ready"
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import time, trainscope
            trainscope.attach(collector={collector.address!r}, job={job!r}, halt_grace_s=0.5)
            while not trainscope.stats()["connected"]:
                time.sleep(0.01)
            open({str(ready)!r}, "w").close()
            time.sleep(60)   # never reaches a step boundary
            """)],
        env=dict(os.environ, PYTHONPATH=str(PYTHON_DIR)))
    try:
        wait_for(ready.exists, 30, "the child to attach")
        collector.cli("halt", job, "--reason", "stuck")
        assert child.wait(timeout=30) == -15  # SIGTERM
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_version_mismatch_names_both_versions(trainscope_module, tmp_path):
    from trainscope import _loader
    with pytest.raises(ImportError) as raised:
        _loader.check_torch_version("1.12.1", torch.__version__)
    assert "1.12.1" in str(raised.value) and torch.__version__ in str(raised.value)
    _loader.check_torch_version(trainscope_module._C.TORCH_BUILD_VERSION, torch.__version__)
    # End to end: a package whose extension says it was built for another
    # torch, with building one for this torch forbidden.
    fake_other_torch = """
        import sys, types
        fake = types.ModuleType("trainscope._build_info"); fake.TORCH_VERSION = "9.8.7"
        sys.modules["trainscope._build_info"] = fake
        try:
            import trainscope
        except ImportError as e:
            print("IMPORT-ERROR", e)
        """
    result = run_python(fake_other_torch, env={"TRAINSCOPE_EXT_BUILD": "0",
                                               "TRAINSCOPE_CACHE_DIR": str(tmp_path)})
    assert "IMPORT-ERROR" in result.stdout, result.stdout + result.stderr
    assert "9.8.7" in result.stdout and torch.__version__ in result.stdout
    # Building allowed but no compiler or CMake: a clear message saying what is
    # missing and the documented way to build once, and nothing half-built.
    result = run_python(fake_other_torch, env={"PATH": str(tmp_path / "empty"),
                                               "TRAINSCOPE_CACHE_DIR": str(tmp_path)})
    assert "IMPORT-ERROR" in result.stdout, result.stdout + result.stderr
    message = result.stdout
    assert "cannot be built here" in message and "cmake" in message, message
    assert torch.__version__ in message and "docs/pytorch-plugin.md" in message, message
    assert not list(tmp_path.glob("ext/*/_C*.so"))


def test_extension_links_only_the_agent_c_api(trainscope_module):
    # The extension needs nothing of trainscope's C++ (Abseil, protobuf,
    # gRPC): one libtrainscope_agent.so serves every torch it is built for.
    so = pathlib.Path(trainscope_module._C.__file__)
    needed = subprocess.run(["readelf", "-d", str(so)], capture_output=True, text=True).stdout
    libs = [line.split("[")[1].rstrip("]") for line in needed.splitlines() if "(NEEDED)" in line]
    assert "libtrainscope_agent.so" in libs, libs
    assert not [lib for lib in libs if "absl" in lib or "grpc" in lib or "protobuf" in lib], libs
    from trainscope import _loader
    agent = _loader.layout()[1]
    exported = subprocess.run(["nm", "-D", "--defined-only", str(agent)], capture_output=True,
                              text=True).stdout
    symbols = [line.split()[-1] for line in exported.splitlines() if line.strip()]
    assert "trainscope_session_start" in symbols and "trainscope_agent_start" in symbols
    assert all(name.startswith("trainscope_") for name in symbols), [
        name for name in symbols if not name.startswith("trainscope_")][:5]


def test_unreachable_collector_counts_drops(trainscope_module, request):
    ts = trainscope_module
    model, optimizer = make_model()
    ts.attach(collector=f"127.0.0.1:{free_port()}", job=job_name(request), halt_grace_s=None,
              log_to_stderr=False)
    try:
        train(model, optimizer, 3)
        assert ts.stats()["step"] == 3
    finally:
        ts.detach(timeout_s=0.3)
    s = ts.stats()
    assert s["events_recorded"] > 0 and not s["connected"] and s["events_acked"] == 0
    assert s["events_recorded"] == s["dropped_shutdown"] + s["dropped_buffer_full"]


def test_explicit_steps_and_phases(trainscope_module, collector, request):
    ts = trainscope_module
    from trainscope import _logged_event as K
    job = job_name(request)
    model, _ = make_model()
    x = torch.randn(BATCH, 1, SIDE, SIDE)
    ts.attach(collector=collector.address, job=job, halt_grace_s=None)
    try:
        with pytest.raises(ValueError):
            ts.phase("lunch")
        for step in range(10, 12):
            with ts.phase("forward"):
                loss = model(x).sum()
            with ts.phase("backward"):
                loss.backward()
            ts.step(step)
    finally:
        ts.detach()
    events = collector.events(job)
    assert [e.value for e in of_kind(events, K.STEP_MARK)] == [11, 12]
    phases = of_kind(events, K.PHASE_MARK)
    assert [(e.detail, e.value) for e in phases] == [
        (K.PHASE_FORWARD, 0), (K.PHASE_BACKWARD, 0), (K.PHASE_FORWARD, 11),
        (K.PHASE_BACKWARD, 11)]


def _two_rank_worker(rank, port, address, job):
    import torch.distributed as dist
    import trainscope
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    # Rank 1 asks for GPU activity (unavailable here: no driver), so its
    # collectives also go through the GPU collective bracket; both ranks must
    # record the same.
    trainscope.attach(collector=address, job=job, halt_grace_s=None, gpu=rank == 1)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 4))
    model(torch.randn(3, 8)).sum().backward()   # DDP's bucket all-reduce
    t = torch.ones(10)
    dist.all_reduce(t)
    dist.barrier()
    if rank == 0:
        dist.send(t, 1)
        dist.isend(t, 1).wait()
    else:
        dist.recv(t, 0)
        dist.irecv(t, 0).wait()
    trainscope.detach()
    dist.destroy_process_group()


def test_collectives_and_point_to_point_two_ranks(trainscope_module, collector, request):
    from trainscope import _logged_event as K
    import torch.multiprocessing as mp
    job = job_name(request)
    sys.path.insert(0, os.path.dirname(__file__))
    mp.spawn(_two_rank_worker, args=(free_port(), collector.address, job), nprocs=2,
             join=True)
    events = collector.events(job)
    collectives = of_kind(events, K.COLLECTIVE)
    for rank in (0, 1):
        mine = sorted((e for e in collectives if e.rank == rank), key=lambda e: e.group_sequence)
        group = [e for e in mine if e.detail not in (K.SEND, K.RECV)]
        # DDP's construction checks parameters (all_gather) and broadcasts them; then
        # its bucket all-reduce (36 floats = 8*4+4), the explicit all-reduce of 10 floats
        # and the barrier, numbered in the order this rank issued them.
        assert all(e.group == "default_pg" and e.peer == -1 for e in group)
        assert [e.group_sequence for e in group] == list(range(1, len(group) + 1))
        assert [(e.name, e.detail, e.value) for e in group[-3:]] == [
            ("gloo:all_reduce", K.ALL_REDUCE, 36 * 4), ("gloo:all_reduce", K.ALL_REDUCE, 10 * 4),
            ("gloo:barrier", K.BARRIER, 0)]
        assert group[0].detail == K.ALL_GATHER and K.BROADCAST in {e.detail for e in group}
        p2p = [e for e in mine if e.detail in (K.SEND, K.RECV)]
        assert [e.name for e in p2p] == (["gloo:send"] * 2 if rank == 0 else ["gloo:recv"] * 2)
        assert all(e.peer == 1 - rank and e.value == 40 for e in p2p)
        assert [e.group_sequence for e in p2p] == [1, 2]
        assert all(e.end_ns >= e.start_ns for e in mine)
    # The same collective carries the same group sequence number on both ranks.
    names = {}
    for e in collectives:
        if e.detail not in (K.SEND, K.RECV):
            names.setdefault(e.group_sequence, set()).add((e.rank, e.name))
    assert all(len({name for _, name in pairs}) == 1 and len(pairs) == 2
               for pairs in names.values()), names


def test_attach_and_detach_from_another_thread_while_training(trainscope_module, collector,
                                                              request):
    """As `trainscope attach --pid` does through gdb: attach lands on some other
    thread while the training thread runs and its optimizer already exists."""
    ts = trainscope_module
    from trainscope import _logged_event as K
    job = job_name(request)
    model, optimizer = make_model()
    stop = threading.Event()
    steps = [0]

    def training():
        while not stop.is_set():
            train(model, optimizer, 1)
            steps[0] += 1

    trainer = threading.Thread(target=training)
    trainer.start()
    try:
        wait_for(lambda: steps[0] >= 2, 30, "training to run")
        ts.attach(collector=collector.address, job=job, halt_grace_s=None)
        wait_for(lambda: ts.stats()["step"] >= 3, 30, "three step marks")
        ts.detach()
    finally:
        stop.set()
        trainer.join(timeout=30)
    assert not trainer.is_alive()
    events = collector.events(job)
    marks = [e.value for e in of_kind(events, K.STEP_MARK)]
    assert marks[:3] == [1, 2, 3]
    assert any(e.name == "aten::conv2d" for e in of_kind(events, K.OPERATOR))


def test_attach_from_env_waits_for_the_rank(trainscope_module, collector, request, monkeypatch):
    ts = trainscope_module
    from trainscope import _logged_event as K
    job = job_name(request)
    monkeypatch.setenv("TRAINSCOPE_COLLECTOR", collector.address)
    monkeypatch.setenv("TRAINSCOPE_JOB", job)
    monkeypatch.delenv("RANK", raising=False)
    model, optimizer = make_model()
    try:
        # No rank known yet: attaching waits for init_process_group or, as
        # here, the first optimizer step.
        assert ts._attach_from_env() is None and not ts.is_attached()
        train(model, optimizer, 1)
        assert ts.is_attached() and ts.session().job == job
        train(model, optimizer, 2)
    finally:
        ts.detach()
    assert [e.value for e in of_kind(collector.events(job), K.STEP_MARK)] == [1, 2]
    # With a rank in the environment it attaches at once; TRAINSCOPE_DORMANT=1: dormant.
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("TRAINSCOPE_DORMANT", "1")
    monkeypatch.setenv("TRAINSCOPE_JOB", job + "-dormant")
    try:
        session = ts._attach_from_env()
        assert session is not None and not session.recording
    finally:
        ts.detach()


def test_torch_profiler_gets_cupti_and_operators_keep_being_recorded(trainscope_module,
                                                                    collector, request, capfd):
    """GPU activity yields CUPTI to torch.profiler (say so once) and takes it
    back when it stops; the plugin's own operator recording never pauses and
    the profiler's trace is whole. Here (no GPU) the agent's CUPTI side is
    unavailable: what runs is the real Python hand-over around a real
    torch.profiler, through the agent's yield/resume."""
    ts = trainscope_module
    from trainscope import _logged_event as K
    from torch.autograd import profiler as autograd_profiler
    original_prepare = autograd_profiler._prepare_profiler
    job = job_name(request)
    model, optimizer = make_model()
    ts.attach(collector=collector.address, job=job, halt_grace_s=None, gpu=True,
              log_to_stderr=False)
    try:
        assert autograd_profiler._prepare_profiler is not original_prepare
        train(model, optimizer, 1)
        for _ in range(2):
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                train(model, optimizer, 1)
        train(model, optimizer, 1)
        stats = ts.stats()
    finally:
        ts.detach()
    assert autograd_profiler._prepare_profiler is original_prepare
    err = capfd.readouterr().err
    assert err.count("torch.profiler is starting") == 1, err
    assert "takes it back when it stops" in err
    assert stats["gpu_profiler_yields"] == 2 and stats["step"] == 4, stats
    assert any(e.key == "aten::conv2d" for e in prof.key_averages())
    events = collector.events(job)
    assert [e.value for e in of_kind(events, K.STEP_MARK)] == [1, 2, 3, 4]
    assert len([e for e in of_kind(events, K.OPERATOR) if e.name == "aten::conv2d"]) == 4

    # Without GPU activity there is nothing to hand over and nothing is said.
    ts.attach(collector=collector.address, job=job + "-cpu", halt_grace_s=None, gpu=False,
              log_to_stderr=False)
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            train(model, optimizer, 1)
        stats = ts.stats()
    finally:
        ts.detach()
    assert stats["gpu_profiler_yields"] == 0
    assert "torch.profiler is starting" not in capfd.readouterr().err


class _FakeNative:
    """What Session asks of the extension's session for the CUPTI hand-over."""

    def __init__(self, gpu_activity):
        self.gpu_activity = gpu_activity
        self.calls = []

    def stats(self):
        return {"gpu_activity": self.gpu_activity}

    def yield_gpu(self):
        self.calls.append("yield")
        self.gpu_activity = "yielded"

    def resume_gpu(self):
        self.calls.append("resume")
        self.gpu_activity = "active"


def test_cupti_hand_over_rules(trainscope_module, monkeypatch, capfd):
    """The detection rules of Session's CUPTI hand-over (see _session.py)."""
    from trainscope import _identity, _patches, _session
    identity = _identity.resolve("127.0.0.1:1", "hand-over", 0, 1, 0, 0, None)
    monkeypatch.delenv("CUDA_INJECTION64_PATH", raising=False)
    active = {"now": False}
    monkeypatch.setattr(_patches, "profiler_active", lambda: active["now"])

    # A profiler stops while another still records: CUPTI stays with it.
    native = _FakeNative("active")
    session = _session.Session(native, identity, None, gpu=True)
    session._profiler_starting()
    session._profiler_starting()  # nested / a schedule's next cycle
    active["now"] = True
    session._profiler_stopped()
    assert native.calls == ["yield", "yield"]
    active["now"] = False
    session._profiler_stopped()
    assert native.calls == ["yield", "yield", "resume"]
    assert capfd.readouterr().err.count("torch.profiler is starting") == 1

    # At attach, CUPTI refused while no torch profiler records: the
    # subscription Kineto keeps after its first run; taken back.
    native = _FakeNative("yielded")
    _session.Session(native, identity, None, gpu=True)._take_cupti_from_a_finished_profiler()
    assert native.calls == ["resume"]
    # ... unless an injected CUDA tool (Nsight) may be the client.
    monkeypatch.setenv("CUDA_INJECTION64_PATH", "/opt/nsight/libToolsInjection64.so")
    native = _FakeNative("yielded")
    _session.Session(native, identity, None, gpu=True)._take_cupti_from_a_finished_profiler()
    assert native.calls == []
    monkeypatch.delenv("CUDA_INJECTION64_PATH")
    # ... and while a torch profiler records, it stays yielded until it stops.
    active["now"] = True
    native = _FakeNative("yielded")
    session = _session.Session(native, identity, None, gpu=True)
    session._take_cupti_from_a_finished_profiler()
    assert "resume" not in native.calls
    active["now"] = False
    session._profiler_stopped()
    assert native.calls[-1] == "resume"
    # GPU activity not asked for: never touched.
    native = _FakeNative("off")
    session = _session.Session(native, identity, None, gpu=False)
    session._profiler_starting()
    session._profiler_stopped()
    session._take_cupti_from_a_finished_profiler()
    assert native.calls == []


def test_gpu_memory_per_step_comes_from_the_device(trainscope_module, collector, request,
                                                   monkeypatch):
    """On a CUDA rank each step mark carries the caching allocator's allocated,
    peak and reserved bytes (torch.cuda, faked here: no GPU) instead of the
    process's resident set; a CPU rank reports its resident set and no
    reserved figure."""
    ts = trainscope_module
    from trainscope import _logged_event as K
    job = job_name(request)
    model, optimizer = make_model()
    calls = {"n": 0}

    def allocated(*args, **kwargs):
        calls["n"] += 1
        return 1_000_000 * calls["n"]

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "memory_allocated", allocated)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *a, **k: 7_000_000)
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a, **k: 9_000_000)
    ts.attach(collector=collector.address, job=job, halt_grace_s=None, gpu=False)
    try:
        assert ts.session().identity.device == "cuda:0"
        train(model, optimizer, 3)
    finally:
        ts.detach()
    monkeypatch.undo()
    counters = {}
    for e in of_kind(collector.events(job), K.COUNTER):
        counters.setdefault(e.name, []).append(e.value)
    assert counters["memory.allocated_bytes"] == [1_000_000, 2_000_000, 3_000_000], counters
    assert counters["memory.peak_bytes"] == [7_000_000] * 3
    assert counters["memory.reserved_bytes"] == [9_000_000] * 3

    ts.attach(collector=collector.address, job=job + "-cpu", halt_grace_s=None, gpu=False)
    try:
        train(model, optimizer, 2)
    finally:
        ts.detach()
    counters = {}
    for e in of_kind(collector.events(job + "-cpu"), K.COUNTER):
        counters.setdefault(e.name, []).append(e.value)
    assert len(counters["memory.allocated_bytes"]) == 2
    assert all(v > 10_000_000 for v in counters["memory.allocated_bytes"])  # a resident set
    assert "memory.reserved_bytes" not in counters
