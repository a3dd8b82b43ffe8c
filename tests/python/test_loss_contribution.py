"""trainscope.LossContribution without a collector: the per-item contribution
against hand computations, the maps' shapes and signs, the top-N over the whole
data set, and the runtime switch."""

import math

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture
def lc_module(trainscope_module):
    from trainscope import loss_contribution  # noqa: PLC0415
    return loss_contribution


class TinyNet(torch.nn.Module):
    """x -> W1 x -> ReLU ("act") -> W2 -> logits, no biases."""

    def __init__(self, w1, w2):
        super().__init__()
        self.fc1 = torch.nn.Linear(w1.shape[1], w1.shape[0], bias=False)
        self.act = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(w2.shape[1], w2.shape[0], bias=False)
        with torch.no_grad():
            self.fc1.weight.copy_(w1)
            self.fc2.weight.copy_(w2)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def run_batch(lc, model, x, y, index, reduction="mean"):
    lc.batch(torch.tensor(index), inputs=x, labels=y)
    loss = torch.nn.functional.cross_entropy(model(x), y, reduction=reduction)
    loss.backward()
    model.zero_grad()


def test_contribution_matches_a_hand_computation(lc_module):
    # f = relu(I x) = (1, 2); z = I f = (1, 2); p = softmax(z) = (0.2689, 0.7311);
    # label 0, the item's own loss (a mean loss's 1/B is undone): dL/df = W2^T (p - y) = (-0.7311, 0.7311);
    # f . dL/df = -0.7311 + 2 * 0.7311 = 0.7311 (= p_1).
    model = TinyNet(torch.eye(2), torch.eye(2))
    lc = lc_module.LossContribution(model, 3, selection="act", top_n=3, every=100)
    x = torch.tensor([[1.0, 2.0], [2.0, 1.0], [-1.0, -1.0]])
    y = torch.tensor([0, 0, 1])
    run_batch(lc, model, x, y, [0, 1, 2])
    scores = lc._scores.tolist()
    p1 = 1 / (1 + math.exp(-1))  # softmax((1, 2))[1]
    assert scores[0] == pytest.approx(p1, abs=1e-6)
    # Item 1: z = (2, 1), label 0: f . W2^T (p - y) = 2 (p0 - 1) + 1 p1 = -(1 - p0) = -(p1 of (1,2)).
    assert scores[1] == pytest.approx(-(1 - 1 / (1 + math.exp(-1))), abs=1e-6)
    # Item 2: ReLU kills both units: f = 0, no contribution.
    assert scores[2] == 0.0
    lc.close()
    assert [e["item"] for e in lc.reports[-1]["top"]] == [0, 2, 1]
    assert lc.reports[-1]["epoch_complete"] is True


def test_contribution_equals_the_logit_identity_for_a_bias_free_relu_net(lc_module):
    # For a bias-free piecewise-linear net, sum_h f_h b_h = sum_k (p_k - y_k) z_k
    # per item: the caveat DESIGN.md asks to measure.
    torch.manual_seed(0)
    model = TinyNet(torch.randn(16, 8), torch.randn(5, 16))
    lc = lc_module.LossContribution(model, 64, selection="act", top_n=8, every=100)
    x, y = torch.randn(64, 8), torch.randint(0, 5, (64,))
    run_batch(lc, model, x, y, list(range(64)), reduction="mean")
    with torch.no_grad():
        z = model(x)
        expected = ((z.softmax(1) - torch.nn.functional.one_hot(y, 5)) * z).sum(1)
    assert torch.allclose(lc._scores, expected, atol=1e-5)


def test_an_item_scores_the_same_in_a_small_batch_as_in_a_full_one(lc_module):
    # A mean-reduced loss divides b by the batch size; the score must not
    # depend on it, or an epoch's last, smaller batch crowds the top-N.
    torch.manual_seed(5)
    model = TinyNet(torch.randn(16, 8), torch.randn(5, 16))
    x, y = torch.randn(10, 8), torch.randint(0, 5, (10,))
    lc = lc_module.LossContribution(model, 10, selection="act", every=100)
    run_batch(lc, model, x, y, list(range(10)))
    full = lc._scores.clone()
    run_batch(lc, model, x[8:], y[8:], [8, 9])
    assert torch.allclose(lc._scores, full, atol=1e-5)
    # With a summed loss nothing is to be undone.
    summed = lc_module.LossContribution(model, 10, selection="act", loss_reduction="sum")
    lc.disable()
    run_batch(summed, model, x, y, list(range(10)), reduction="sum")
    assert torch.allclose(summed._scores, full, atol=1e-5)


class InPlaceAfterFc1(TinyNet):
    def forward(self, x):
        h = self.fc1(x)
        h.mul_(2)  # in place after the scored layer: f is no longer fc1's output
        return self.fc2(self.act(h))


def test_an_in_place_op_after_the_layer_is_warned_about_and_not_scored(lc_module):
    model = InPlaceAfterFc1(torch.eye(2), torch.eye(2))
    lc = lc_module.LossContribution(model, 2, selection="fc1", every=100)
    with pytest.warns(RuntimeWarning, match="changed in place"):
        run_batch(lc, model, torch.tensor([[1.0, 2.0], [2.0, 1.0]]), torch.tensor([0, 1]), [0, 1])
    assert lc._scores.isinf().all()
    # Training itself is untouched: the gradients are those without trainscope.
    lc.disable()
    x = torch.tensor([[1.0, 2.0]])
    torch.nn.functional.cross_entropy(model(x), torch.tensor([0])).backward()
    assert model.fc1.weight.grad is not None and torch.isfinite(model.fc1.weight.grad).all()


def test_non_finite_scores_do_not_crowd_out_the_top(lc_module):
    model = TinyNet(torch.eye(2), torch.eye(2))
    lc = lc_module.LossContribution(model, 4, selection="act", top_n=2, every=100)
    run_batch(lc, model, torch.tensor([[1.0, 2.0], [2.0, 1.0], [1.0, 3.0], [0.5, 2.0]]),
              torch.tensor([0, 0, 0, 0]), [0, 1, 2, 3])
    finite = lc._scores.clone()
    lc._scores[2] = float("inf")  # as a diverging step leaves them
    lc._scores[3] = float("nan")
    lc.close()
    expected = torch.topk(finite[:2], 2).indices.tolist()
    assert [e["item"] for e in lc.reports[-1]["top"]] == expected


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(4, 6, 3, padding=1, stride=2)
        self.head = torch.nn.Linear(6 * 4 * 4, 3)

    def forward(self, x):
        h = torch.relu(self.conv1(x))
        h = torch.relu(self.conv2(h))
        return self.head(h.flatten(1))


def test_maps_are_computed_for_selected_items_with_the_right_shapes_and_signs(lc_module):
    torch.manual_seed(1)
    model = ConvNet()
    n = 12
    x, y = torch.randn(n, 1, 8, 8), torch.randint(0, 3, (n,))
    lc = lc_module.LossContribution(model, n, selection="conv2", monitored=["conv1", "conv2"],
                                    top_n=4, every=1)
    # Iteration 1 scores every item; its report (at the next batch) selects the top 4.
    run_batch(lc, model, x, y, list(range(n)))
    run_batch(lc, model, x, y, list(range(n)))
    selected = {e["item"] for e in lc.reports[0]["top"]}
    assert len(selected) == 4
    # Iteration 2's maps arrive with the report made at the next batch.
    run_batch(lc, model, x[:1], y[:1], [0])
    snapshots = lc.reports[1]["snapshots"]
    assert {s["item"] for s in snapshots} == selected

    # Recompute f and b of conv2 for one selected item and check C - R = sum_c f.b.
    snap = snapshots[0]
    captured = {}
    model.conv2.register_forward_hook(lambda m, a, out: captured.setdefault("f", out))
    lc.disable()
    out = model(x)
    captured["f"].retain_grad()
    torch.nn.functional.cross_entropy(out, y, reduction="sum").backward()
    fb = (captured["f"] * captured["f"].grad)[snap["item"]].detach()

    import numpy as np  # noqa: PLC0415
    layers = {m[0]: m for m in snap["maps"]}
    assert list(layers) == ["conv1", "conv2"]
    name, h, w, c_bytes, r_bytes = layers["conv2"]
    assert (h, w) == (4, 4)
    c = torch.from_numpy(np.frombuffer(c_bytes, dtype=np.float16).astype("float32")).view(h, w)
    r = torch.from_numpy(np.frombuffer(r_bytes, dtype=np.float16).astype("float32")).view(h, w)
    assert (c >= 0).all() and (r >= 0).all()
    assert torch.allclose(c - r, fb.sum(0), atol=2e-3, rtol=2e-3)
    assert torch.allclose(c, fb.clamp(min=0).sum(0), atol=2e-3, rtol=2e-3)
    assert layers["conv1"][1:3] == (8, 8)
    # The whole map sums to the item's contribution at that layer.
    assert float((c - r).sum()) == pytest.approx(float(fb.sum()), rel=1e-2, abs=1e-3)
    h, w, ch, pixels = snap["input"]
    assert (h, w, ch) == (8, 8, 1) and len(pixels) == 64


def test_top_n_is_over_the_whole_data_set_not_a_batch(lc_module):
    torch.manual_seed(2)
    model = TinyNet(torch.randn(16, 8), torch.randn(5, 16))
    n = 40
    x, y = torch.randn(n, 8), torch.randint(0, 5, (n,))
    lc = lc_module.LossContribution(model, n, selection="act", top_n=5, every=1000)
    for start in range(0, n, 8):
        rows = list(range(start, start + 8))
        run_batch(lc, model, x[rows], y[rows], rows)
    all_scores = lc._scores.clone()
    lc.close()
    top = lc.reports[-1]["top"]
    assert [e["item"] for e in top] == torch.topk(all_scores, 5).indices.tolist()
    assert all(e["label"] == int(y[e["item"]]) for e in top)


def test_merged_top_of_four_ranks_equals_the_top_of_the_union(lc_module):
    torch.manual_seed(3)
    model = TinyNet(torch.randn(16, 8), torch.randn(5, 16))
    n = 64
    x, y = torch.randn(n, 8), torch.randint(0, 5, (n,))
    ranks = []
    for rank in range(4):
        lc = lc_module.LossContribution(model, n, selection="act", top_n=6, every=1000)
        rows = list(range(rank, n, 4))  # a DistributedSampler-like shard
        run_batch(lc, model, x[rows], y[rows], rows)
        lc.close()
        ranks.append(lc)
    union = torch.full((n,), float("-inf"))
    for lc in ranks:
        seen = lc._scores > float("-inf")
        union[seen] = lc._scores[seen]
    merged = lc_module.merge_top([lc.reports[-1]["top"] for lc in ranks], 6)
    assert [e["item"] for e in merged] == torch.topk(union, 6).indices.tolist()


def test_disable_removes_every_hook_and_scores_nothing(lc_module):
    model = TinyNet(torch.eye(2), torch.eye(2))
    lc = lc_module.LossContribution(model, 2, selection="act", top_n=2, every=1)
    lc.disable()
    assert not lc.enabled
    run_batch(lc, model, torch.ones(2, 2), torch.tensor([0, 1]), [0, 1])
    assert lc._scores is None
    lc.enable()
    run_batch(lc, model, torch.ones(2, 2), torch.tensor([0, 1]), [0, 1])
    assert lc._scores is not None and torch.isfinite(lc._scores).all()
    run_batch(lc, model, torch.ones(2, 2), torch.tensor([0, 1]), [0, 1])
    reports = len(lc.reports)
    assert reports == 1
    lc.disable()  # while off, the last top-N is not reported over and over
    for _ in range(3):
        run_batch(lc, model, torch.ones(2, 2), torch.tensor([0, 1]), [0, 1])
    assert len(lc.reports) == reports


def test_new_epoch_reports_the_last_one_as_final_and_starts_afresh(lc_module):
    model = TinyNet(torch.eye(2), torch.eye(2))
    lc = lc_module.LossContribution(model, 4, selection="act", top_n=2, every=1000)
    run_batch(lc, model, torch.tensor([[1.0, 2.0], [2.0, 1.0]]), torch.tensor([0, 0]), [0, 1])
    lc.set_epoch(0)  # the same epoch again (a loop that calls it every step): nothing happens
    assert len(lc.reports) == 0 and torch.isfinite(lc._scores).sum() == 2
    lc.set_epoch(1)
    assert lc.reports[-1]["epoch"] == 0 and lc.reports[-1]["epoch_complete"]
    assert lc._scores.isinf().all()
    run_batch(lc, model, torch.tensor([[1.0, 2.0]]), torch.tensor([0]), [3])
    lc.close()
    assert lc.reports[-1]["epoch"] == 1 and [e["item"] for e in lc.reports[-1]["top"]] == [3]


def test_the_environment_can_switch_it_off(lc_module, monkeypatch):
    model = TinyNet(torch.eye(2), torch.eye(2))
    monkeypatch.setenv("TRAINSCOPE_LOSS_CONTRIBUTION", "0")
    assert not lc_module.LossContribution(model, 2, selection="act").enabled
    assert lc_module.LossContribution(model, 2, selection="act", enabled=True).enabled


def test_local_reports_are_bounded(lc_module):
    model = TinyNet(torch.eye(2), torch.eye(2))
    lc = lc_module.LossContribution(model, 2, selection="act", top_n=1, every=1)
    for _ in range(lc_module.LossContribution.max_kept_reports + 5):
        run_batch(lc, model, torch.ones(2, 2), torch.tensor([0, 1]), [0, 1])
    assert len(lc.reports) == lc_module.LossContribution.max_kept_reports


def test_bad_configuration_names_what_is_wrong(lc_module):
    model = TinyNet(torch.eye(2), torch.eye(2))
    with pytest.raises(ValueError, match="no layer 'layer9'"):
        lc_module.LossContribution(model, 4, selection="layer9")
    with pytest.raises(ValueError, match="loss_reduction must be 'mean' or 'sum', got 'none'"):
        lc_module.LossContribution(model, 4, selection="act", loss_reduction="none")
    with pytest.raises(ValueError, match="top_n must be >= 1"):
        lc_module.LossContribution(model, 4, selection="act", top_n=0)
    with pytest.raises(TypeError, match="map-style data set"):
        lc_module.track(iter([1, 2]))


def test_the_first_listing_of_an_item_carries_its_thumbnail_from_the_data_set(lc_module):
    torch.manual_seed(4)
    model = TinyNet(torch.randn(16, 8), torch.randn(5, 16))
    n = 12
    images = torch.rand(n, 1, 2, 4)  # what the thumbnails show
    x, y = images.flatten(1), torch.randint(0, 5, (n,))
    data = lc_module.track(torch.utils.data.TensorDataset(images, y))
    lc = lc_module.LossContribution(model, data, selection="act", top_n=10, every=1)
    lc.max_thumbnails_per_report = 6
    run_batch(lc, model, x, y, list(range(n)))
    run_batch(lc, model, x, y, list(range(n)))
    run_batch(lc, model, x, y, list(range(n)))
    first, second = lc.reports[0]["top"], lc.reports[1]["top"]
    with_input = [e for e in first if "input" in e]
    assert [e["item"] for e in with_input] == [e["item"] for e in first[:6]]  # the bound
    h, w, c, pixels = with_input[0]["input"]
    assert (h, w, c) == (2, 4, 1)
    img = images[with_input[0]["item"], 0]
    expected = ((img - img.min()) / (img.max() - img.min()) * 255).round().to(torch.uint8)
    assert list(pixels) == expected.flatten().tolist()
    # The next report carries the rest, and none twice.
    assert [e["item"] for e in second if "input" in e] == [e["item"] for e in first[6:]]
    assert all("input" not in e for e in lc.last_top)


def test_a_failing_data_set_stops_thumbnails_not_training(lc_module):
    class Broken(torch.utils.data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, index):
            raise OSError("disk gone")

    model = TinyNet(torch.eye(2), torch.eye(2))
    lc = lc_module.LossContribution(model, Broken(), selection="act", top_n=2, every=1)
    run_batch(lc, model, torch.ones(2, 2), torch.tensor([0, 1]), [0, 1])
    with pytest.warns(RuntimeWarning, match=r"reading item \d of the data set .*OSError: disk gone"):
        run_batch(lc, model, torch.ones(2, 2), torch.tensor([0, 1]), [0, 1])
    run_batch(lc, model, torch.ones(2, 2), torch.tensor([0, 1]), [0, 1])
    assert len(lc.reports) == 2 and all("input" not in e for r in lc.reports for e in r["top"])


def test_track_appends_the_index(lc_module):
    data = lc_module.track([(10, 1), (20, 0)])
    assert len(data) == 2 and data[1] == (20, 0, 1)
    assert lc_module.track(data) is data
