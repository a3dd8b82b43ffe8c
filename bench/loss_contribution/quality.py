#!/usr/bin/python3
"""How well does the loss contribution find flipped labels?

    /usr/bin/python3 bench/loss_contribution/quality.py            # full run (~12 min, 2 cores)
    /usr/bin/python3 bench/loss_contribution/quality.py --quick    # CI-sized (< 60 s)

Method. For each data set (sklearn's digits, 1797 8x8 images; a subset of
Fashion-MNIST's training set) and noise level, a fixed-seed random fraction of
the items get a uniformly random *different* class (symmetric label noise).
A small CNN with biases (block1 = conv-ReLU[-pool], block2 = conv-ReLU,
head = pool-linear-ReLU-linear) trains on the noisy labels with Adam, under
trainscope's LossContribution with H_s = block2 (the last conv block's output)
and H_m = block1. The same run scores every item, always in-sample at the
step that trained on it:

  lc            the plugin's per-item contribution sum(f*b) at H_s (lc._scores),
                mean over epochs
  lc_last       the same, last epoch only
  lc_top_epochs epochs the item was in the plugin's per-epoch top-N_s (its
                epoch-final reports); N_s = --budget
  lc_pos        sum(max(f*b, 0)) at H_s, from this script's own hooks, mean
                over epochs
  ce_ema        per-item cross-entropy, exponential moving average over epochs
                (ema = a * ce + (1 - a) * ema, a = --ema-alpha)
  logits_ctrl   the logits-only control sum_k (p_k - y_k) z_k (p = softmax(z),
                y = one-hot noisy label), mean over epochs. For a bias-free
                piecewise-linear network sum(f*b) over a layer equals it (the
                plugin undoes a mean loss's 1/B); here the head's biases
                make the two differ, and the table shows whether that matters.
  aum           minus the area under the margin (Pleiss et al. 2020): margin =
                z_assigned - max_{k != assigned} z_k, mean over epochs
  random        a seeded random score

Each score ranks the items (high = suspected flipped); the metrics against the
set of flipped items are AUROC, average precision (sklearn), precision@N with
N = the number of flipped items, and precision@N_s. Precision@k is tie-aware:
items tied at the cut count with the expected precision of a random order
among them (lc_top_epochs is an integer score). Figures are mean +- sample
standard deviation over the seeds; each seed draws its own noise, weights and
shuffling.

Results go to stdout as Markdown tables and to --out (quality.md, quality.json).
"""

import argparse
import gzip
import json
import pathlib
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.metrics import average_precision_score, roc_auc_score

from lc_module import load_loss_contribution

FASHION_DIR = pathlib.Path("/usr/share/datasets/fashion-mnist")
CLASSES = 10
DATASETS = ["digits", "fashion"]
SCORES = ["lc", "lc_last", "lc_top_epochs", "lc_pos", "ce_ema", "logits_ctrl", "aum", "random"]
METRICS = ["auroc", "ap", "p_at_n", "p_at_budget"]


# -- data -------------------------------------------------------------------

def read_idx(path: pathlib.Path) -> np.ndarray:
    """An IDX file (gzip) of unsigned bytes as an array of its shape."""
    if not path.exists():
        raise FileNotFoundError(f"Fashion-MNIST file {path} is missing; the Debian package "
                                f"dataset-fashion-mnist provides it (or pass --datasets digits)")
    data = gzip.decompress(path.read_bytes())
    if data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes "
                         f"(magic {data[:4].hex()}, expected 000008xx)")
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def load_dataset(name: str, fashion_items: int):
    """(images [n, 1, H, W] float32 standardised, labels [n] int64) of digits or fashion."""
    if name == "digits":
        digits = load_digits()
        images, labels = digits.images.astype(np.float32), digits.target
    else:
        images = read_idx(FASHION_DIR / "train-images-idx3-ubyte.gz")[:fashion_items]
        labels = read_idx(FASHION_DIR / "train-labels-idx1-ubyte.gz")[:fashion_items]
        images = images.astype(np.float32)
    images = (images - images.mean()) / images.std()
    return torch.from_numpy(images).unsqueeze(1), torch.from_numpy(labels.astype(np.int64))


def flip_labels(labels: torch.Tensor, fraction: float, seed: int):
    """Symmetric noise: round(fraction * n) items, chosen with `seed`, get a
    uniformly random class other than their own. Returns (noisy, flipped mask)."""
    rng = np.random.default_rng(seed)
    n = len(labels)
    flipped = rng.choice(n, size=round(fraction * n), replace=False)
    noisy = labels.numpy().copy()
    noisy[flipped] = (noisy[flipped] + rng.integers(1, CLASSES, size=len(flipped))) % CLASSES
    mask = np.zeros(n, dtype=bool)
    mask[flipped] = True
    return torch.from_numpy(noisy), mask


# -- model and probes ---------------------------------------------------------

class SmallCNN(torch.nn.Module):
    """block1: conv-ReLU (then a 2x2 pool for inputs over 16 px), block2:
    conv-ReLU (H_s), head: pool-linear-ReLU-linear. Ordinary biases throughout."""

    def __init__(self, side: int):
        super().__init__()
        layers = [torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU()]
        if side > 16:
            layers.append(torch.nn.MaxPool2d(2))
            side //= 2
        self.block1 = torch.nn.Sequential(*layers)
        self.block2 = torch.nn.Sequential(torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU())
        self.head = torch.nn.Sequential(
            torch.nn.MaxPool2d(2), torch.nn.Flatten(),
            torch.nn.Linear(32 * (side // 2) ** 2, 64), torch.nn.ReLU(), torch.nn.Linear(64, CLASSES))

    def forward(self, x):
        return self.head(self.block2(self.block1(x)))


class ContributionProbe:
    """After each backward: per item of the batch, sum(f*b) and sum(max(f*b, 0))
    over a module's output (computed here, independently of the plugin)."""

    def __init__(self, module: torch.nn.Module):
        self.total = None
        self.positive = None
        self._handle = module.register_forward_hook(self._on_forward)

    def _on_forward(self, module, args, output):
        if not output.requires_grad:
            return
        forward = output.detach()

        def on_grad(grad):
            # x B: undo the mean loss's 1/B, as the plugin does (loss_reduction="mean").
            fb = (forward * grad).flatten(1) * forward.shape[0]
            self.total = fb.sum(1)
            self.positive = fb.clamp(min=0).sum(1)

        output.register_hook(on_grad)

    def close(self):
        self._handle.remove()


def logit_scores(logits: torch.Tensor, labels: torch.Tensor):
    """Per item: cross-entropy, logits-only control sum_k (p_k - y_k) z_k, and
    the margin z_label - max_{k != label} z_k."""
    ce = F.cross_entropy(logits, labels, reduction="none")
    one_hot = F.one_hot(labels, CLASSES).float()
    control = ((logits.softmax(1) - one_hot) * logits).sum(1)
    assigned = logits.gather(1, labels[:, None]).squeeze(1)
    others = logits.masked_fill(one_hot.bool(), float("-inf")).amax(1)
    return ce, control, assigned - others


# -- one training run -----------------------------------------------------------

def train_and_score(lc_mod, images, noisy, clean, args, seed, progress_tag):
    """Trains on (images, noisy) and returns ({score name: [n] array}, run facts)."""
    torch.manual_seed(seed)
    n, epochs = len(noisy), args.epochs
    model = SmallCNN(images.shape[-1])
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    data = lc_mod.track(torch.utils.data.TensorDataset(images, noisy))
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch, shuffle=True,
                                         generator=torch.Generator().manual_seed(seed))
    lc = lc_mod.LossContribution(model, len(data), selection="block2", monitored=["block1"],
                                 top_n=args.budget, every=args.every)
    probe = ContributionProbe(model.block2)
    per_epoch = {name: np.zeros((epochs, n), dtype=np.float64)
                 for name in ("lc", "lc_pos", "ce", "control", "margin")}
    predictions = np.zeros(n, dtype=np.int64)
    worst_mismatch = 0.0
    start = time.time()
    for epoch in range(epochs):
        lc.set_epoch(epoch)
        total_loss = 0.0
        for x, y, index in loader:
            lc.batch(index, inputs=x, labels=y)
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total_loss += loss.item() * len(y)
            rows = index.numpy()
            ce, control, margin = (t.numpy() for t in logit_scores(logits.detach(), y))
            per_epoch["ce"][epoch, rows] = ce
            per_epoch["control"][epoch, rows] = control
            per_epoch["margin"][epoch, rows] = margin
            per_epoch["lc_pos"][epoch, rows] = probe.positive.numpy()
            # The plugin's value against this script's own sum(f*b), relative to the batch's scale.
            worst_mismatch = max(worst_mismatch, float(
                (lc._scores[index] - probe.total).abs().max() / probe.total.abs().max()))
            if epoch == epochs - 1:
                predictions[rows] = logits.detach().argmax(1).numpy()
        scores = lc._scores.numpy()   # this epoch's per-item values, before set_epoch resets them
        if not np.isfinite(scores).all():
            raise RuntimeError(f"{progress_tag}: epoch {epoch}: {int((~np.isfinite(scores)).sum())} "
                               "items have no finite contribution (unseen, or the run diverged)")
        per_epoch["lc"][epoch] = scores
        print(f"[{progress_tag}] epoch {epoch + 1}/{epochs} loss {total_loss / n:.3f} "
              f"{time.time() - start:.1f}s", file=sys.stderr, flush=True)
    lc.close()
    probe.close()

    final_reports = [report for report in lc.reports if report["epoch_complete"]]
    if len(final_reports) != epochs:
        raise RuntimeError(f"{progress_tag}: the plugin kept {len(final_reports)} epoch-final reports "
                           f"of {epochs} (it keeps the newest {lc.max_kept_reports}); raise --every")
    top_epochs = np.zeros(n)
    for report in final_reports:
        top_epochs[[entry["item"] for entry in report["top"]]] += 1
    ema = per_epoch["ce"][0].copy()
    for epoch in range(1, epochs):
        ema = args.ema_alpha * per_epoch["ce"][epoch] + (1 - args.ema_alpha) * ema
    scores = {
        "lc": per_epoch["lc"].mean(0),
        "lc_last": per_epoch["lc"][-1],
        "lc_top_epochs": top_epochs,
        "lc_pos": per_epoch["lc_pos"].mean(0),
        "ce_ema": ema,
        "logits_ctrl": per_epoch["control"].mean(0),
        "aum": -per_epoch["margin"].mean(0),
        "random": np.random.default_rng(seed).random(n),
    }
    flipped = (noisy != clean).numpy()
    facts = {
        "seconds": round(time.time() - start, 1),
        "plugin_vs_probe_max_rel_diff": worst_mismatch,
        "last_epoch_acc_clean": float((predictions == clean.numpy()).mean()),
        "flipped_fit_to_noisy_label": float((predictions[flipped] == noisy.numpy()[flipped]).mean()),
    }
    return scores, facts


# -- metrics ----------------------------------------------------------------------

def precision_at(scores: np.ndarray, positive: np.ndarray, k: int) -> float:
    """Precision of the k highest scores; items tied at the cut count with the
    expected precision of a random order among them."""
    threshold = np.sort(scores)[::-1][k - 1]
    above = scores > threshold
    tied = scores == threshold
    return float((positive[above].sum() + (k - above.sum()) * positive[tied].mean()) / k)


def detection_metrics(scores: np.ndarray, positive: np.ndarray, budget: int) -> dict:
    if not np.isfinite(scores).all():
        raise ValueError("a score has non-finite values")
    return {"auroc": float(roc_auc_score(positive, scores)),
            "ap": float(average_precision_score(positive, scores)),
            "p_at_n": precision_at(scores, positive, int(positive.sum())),
            "p_at_budget": precision_at(scores, positive, budget)}


def mean_std(values, decimals: int = 3) -> str:
    values = np.asarray(values)
    if len(values) < 2:
        return f"{values.mean():.{decimals}f}"
    return f"{values.mean():.{decimals}f} ± {values.std(ddof=1):.{decimals}f}"


def markdown_tables(results: list, budget: int) -> str:
    """The detection table (rows: data set, noise, score) and a table of the runs."""
    lines = [f"| data set | noise | score | AUROC | AP | P@N (N = flipped) | P@{budget} |",
             "|---|---|---|---|---|---|---|"]
    for group in results:
        for score in SCORES:
            cells = [mean_std([run["metrics"][score][m] for run in group["runs"]]) for m in METRICS]
            lines.append(f"| {group['dataset']} | {group['noise']:.0%} | {score} | "
                         + " | ".join(cells) + " |")
    lines += ["", "| data set | noise | items | flipped (N) | last-epoch acc. vs clean labels "
              "| flipped items fit to their noisy label | plugin vs probe max rel. diff "
              "| s per run |", "|---|---|---|---|---|---|---|---|"]
    for group in results:
        runs = group["runs"]
        lines.append(
            f"| {group['dataset']} | {group['noise']:.0%} | {group['items']} | {group['flipped']} | "
            f"{mean_std([r['facts']['last_epoch_acc_clean'] for r in runs])} | "
            f"{mean_std([r['facts']['flipped_fit_to_noisy_label'] for r in runs])} | "
            f"{max(r['facts']['plugin_vs_probe_max_rel_diff'] for r in runs):.1e} | "
            f"{mean_std([r['facts']['seconds'] for r in runs], 1)} |")
    return "\n".join(lines)


# -- driver -------------------------------------------------------------------------

def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Label-noise detection quality of trainscope's loss contribution against "
                    "cross-entropy, a logits-only control, AUM and chance.")
    parser.add_argument("--datasets", default="digits,fashion",
                        help="comma-separated: digits, fashion (default: %(default)s)")
    parser.add_argument("--noise", default="0.1,0.2,0.4",
                        help="comma-separated flip fractions (default: %(default)s)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per setting (default: 3)")
    parser.add_argument("--epochs", type=int, default=20, help="epochs per run (default: 20)")
    parser.add_argument("--fashion-items", type=int, default=10000,
                        help="first items of Fashion-MNIST's training set used (default: 10000)")
    parser.add_argument("--batch", type=int, default=64, help="batch size (default: 64)")
    parser.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (default: 1e-3)")
    parser.add_argument("--budget", type=int, default=64,
                        help="N_s: the plugin's top_n and the flagging budget (default: 64)")
    parser.add_argument("--every", type=int, default=50,
                        help="K: iterations between the plugin's reports (default: 50)")
    parser.add_argument("--ema-alpha", type=float, default=0.5,
                        help="weight of the newest epoch in ce_ema (default: 0.5)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: 1)")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("/tmp"),
                        help="directory for quality.md and quality.json (default: /tmp)")
    parser.add_argument("--quick", action="store_true",
                        help="CI-sized: digits, 20%% noise, 1 seed, 6 epochs")
    args = parser.parse_args(argv)
    if args.quick:
        args.datasets, args.noise, args.seeds, args.epochs = "digits", "0.2", 1, 6
    args.datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    for name in args.datasets:
        if name not in DATASETS:
            parser.error(f"--datasets: unknown data set {name!r} (expected {', '.join(DATASETS)})")
    try:
        args.noise = [float(v) for v in args.noise.split(",")]
    except ValueError:
        parser.error(f"--noise: expected comma-separated fractions, got {args.noise!r}")
    for fraction in args.noise:
        if not 0 < fraction < 1:
            parser.error(f"--noise: {fraction} is not a fraction in (0, 1)")
    for name, value in (("--seeds", args.seeds), ("--epochs", args.epochs),
                        ("--batch", args.batch), ("--budget", args.budget),
                        ("--fashion-items", args.fashion_items)):
        if value < 1:
            parser.error(f"{name} must be >= 1, got {value}")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    lc_mod = load_loss_contribution()
    started = time.time()
    results = []
    for dataset in args.datasets:
        images, clean = load_dataset(dataset, args.fashion_items)
        for noise in args.noise:
            group = {"dataset": dataset, "noise": noise, "items": len(clean), "runs": []}
            for seed in range(args.seeds):
                noisy, flipped = flip_labels(clean, noise, seed)
                tag = f"{dataset} noise={noise:.0%} seed={seed}"
                scores, facts = train_and_score(lc_mod, images, noisy, clean, args, seed, tag)
                metrics = {name: detection_metrics(values, flipped, args.budget)
                           for name, values in scores.items()}
                group["runs"].append({"seed": seed, "metrics": metrics, "facts": facts})
                group["flipped"] = int(flipped.sum())
                print(f"[{tag}] done in {facts['seconds']}s (total {time.time() - started:.0f}s): "
                      f"AUROC lc {metrics['lc']['auroc']:.3f}, ce_ema {metrics['ce_ema']['auroc']:.3f}, "
                      f"aum {metrics['aum']['auroc']:.3f}", file=sys.stderr, flush=True)
            results.append(group)
    elapsed = time.time() - started

    sizes = {group["dataset"]: group["items"] for group in results}
    datasets = ", ".join(f"{name} ({items} items)" for name, items in sizes.items())
    config = (f"Config: data sets {datasets}; "
              f"noise {', '.join(f'{v:.0%}' for v in args.noise)}; {args.seeds} seed(s); "
              f"{args.epochs} epochs; batch {args.batch}; Adam lr {args.lr}; N_s = {args.budget}; "
              f"K = {args.every}; ce_ema alpha {args.ema_alpha}; {args.threads} torch thread(s); "
              f"torch {torch.__version__}; wall time {elapsed:.0f} s.")
    report = config + "\n\n" + markdown_tables(results, args.budget) + "\n"
    print(report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "quality.md").write_text(report)
    settings = {k: (str(v) if isinstance(v, pathlib.Path) else v) for k, v in vars(args).items()}
    (args.out / "quality.json").write_text(json.dumps(
        {"config": settings, "torch": torch.__version__, "wall_seconds": round(elapsed, 1),
         "results": results}, indent=1))
    print(f"wrote {args.out / 'quality.md'} and {args.out / 'quality.json'}", file=sys.stderr)


if __name__ == "__main__":
    main()
