"""The test-only clock perturbation from the environment
(TRAINSCOPE_TEST_CLOCK_OFFSET_NS / _DRIFT_PPM / _ORIGIN_NS, see agent_options.h):
what the plugin sends carries t' = t + offset + drift_ppm * 1e-6 * (t - origin)."""

import uuid

import pytest

torch = pytest.importorskip("torch")

KIND_STEP_MARK = 5
DAY_NS = 86_400 * 10**9


def test_environment_perturbs_every_logged_time(trainscope_module, collector, monkeypatch):
    ts = trainscope_module
    job = f"clock-{uuid.uuid4().hex[:8]}"
    origin = ts._C.now_ns()
    monkeypatch.setenv("TRAINSCOPE_TEST_CLOCK_OFFSET_NS", str(DAY_NS))
    monkeypatch.setenv("TRAINSCOPE_TEST_CLOCK_DRIFT_PPM", "500")
    monkeypatch.setenv("TRAINSCOPE_TEST_CLOCK_ORIGIN_NS", str(origin))
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ts.attach(collector=collector.address, job=job, halt_grace_s=None)
    try:
        before = ts._C.now_ns()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        after = ts._C.now_ns()
        with ts.phase("forward"):
            pass
    finally:
        ts.detach()

    def perturbed(t):
        return t + DAY_NS + round(500e-6 * (t - origin))

    events = collector.events(job)
    marks = [e for e in events if e.kind == KIND_STEP_MARK]
    assert len(marks) == 1
    assert perturbed(before) <= marks[0].start_ns <= perturbed(after)
    # Every event, whatever recorded it (operators, counters, phases), moved by a day.
    assert all(perturbed(origin) <= e.start_ns <= e.end_ns <= perturbed(ts._C.now_ns())
               for e in events), [e for e in events if e.start_ns < DAY_NS][:3]


def test_a_malformed_value_is_refused_at_attach(trainscope_module, collector, monkeypatch):
    ts = trainscope_module
    monkeypatch.setenv("TRAINSCOPE_TEST_CLOCK_DRIFT_PPM", "fast")
    with pytest.raises(ValueError, match="TRAINSCOPE_TEST_CLOCK_DRIFT_PPM"):
        ts.attach(collector=collector.address, job="clock-bad", halt_grace_s=None)
    assert not ts.is_attached()
