"""In-situ loss contribution (Lee): which training items resist learning, and where.

    data = trainscope.track(train_set)              # items become (x, y, index)
    lc = trainscope.LossContribution(model, data, selection="layer4",
                                     monitored=["layer1", "layer2"], top_n=32, every=50)
    for epoch in range(epochs):
        lc.set_epoch(epoch)
        for x, y, index in loader:                  # a DataLoader over `data`
            lc.batch(index, inputs=x, labels=y)     # before the forward pass
            loss = F.cross_entropy(model(x), y)
            loss.backward(); opt.step(); opt.zero_grad()
    lc.close()

The contribution of an element h of a hidden variable to the loss is f_h * b_h:
its forward value times the loss's derivative with respect to it. Both exist
anyway during training, so a forward hook keeps a reference to the selection
layer's output and a gradient hook on that output reduces f * b to one number
per item with a batched dot product (one fused kernel; no full-size f * b
tensor is kept). The per-item sums go into a score buffer the size of the data
set on the training device, so the top-N is over the whole data set, not a
batch, and nothing is copied to the host per step.

Every `every` iterations and when an epoch ends, the rank's top-N of the epoch
goes to the collector (through the attached trainscope session), which merges
the ranks' lists into the job-wide top-N. The items of that list are
"selected": when one of them is in a batch, the monitored layers' contribution
map C(x,y) = sum_c max(f*b, 0) and reduction map R(x,y) = -sum_c min(f*b, 0)
are computed for that item only and shipped as half floats with a thumbnail of
its input, its label and the prediction.

Threading: one training thread calls batch/set_epoch/close; the hooks run on
autograd's threads of the same backward pass.
"""

import collections
import math
import os
import warnings
from typing import Deque, Dict, Iterable, List, Optional, Sequence

import torch

__all__ = ["track", "TrackedDataset", "LossContribution", "item_contributions",
           "contribution_maps"]

_MAX_THUMBNAIL = 32  # pixels per side: enough to recognise an item, ~1 KiB

try:
    from ._session import session as _attached_session
except ImportError:  # loaded on its own, without the extension (benchmarks)
    def _attached_session():
        return None


class TrackedDataset(torch.utils.data.Dataset):
    """A map-style data set whose items are `(*item, index)`: the index names
    the item across epochs, ranks and shuffles."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        item = self.dataset[index]
        if isinstance(item, tuple):
            return (*item, index)
        return item, index


def track(dataset) -> TrackedDataset:
    """Wraps a map-style data set so that each item carries its index."""
    if isinstance(dataset, TrackedDataset):
        return dataset
    if not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__"):
        raise TypeError(f"trainscope.track: expected a map-style data set (with __len__ and "
                        f"__getitem__), got {type(dataset).__name__}")
    return TrackedDataset(dataset)


def item_contributions(forward: torch.Tensor, backward: torch.Tensor) -> torch.Tensor:
    """Per item (dim 0): sum over its elements of forward * backward, as one
    batched dot product (no full-size product tensor)."""
    n = forward.shape[0]
    f = forward.reshape(n, 1, -1)
    b = backward.reshape(n, -1, 1)
    if f.dtype != b.dtype:
        b = b.to(f.dtype)
    return torch.bmm(f, b).reshape(n).float()


def contribution_maps(forward: torch.Tensor, backward: torch.Tensor):
    """For items [k, C, H, W]: (C_h, R_h), each [k, H, W]: the channel sums of
    the positive part of f*b and of the negated negative part."""
    fb = forward.float() * backward.float()
    return fb.clamp(min=0).sum(1), (-fb).clamp(min=0).sum(1)


def _thumbnail(image: torch.Tensor):
    """uint8 HWC bytes of one input image ([C,H,W] or [H,W]), scaled to its
    own range and shrunk to at most _MAX_THUMBNAIL pixels per side."""
    x = image.detach().float()
    if x.dim() == 2:
        x = x.unsqueeze(0)
    if x.dim() != 3:
        return None
    if x.shape[0] not in (1, 3) and x.shape[-1] in (1, 3):
        x = x.permute(2, 0, 1)
    if x.shape[0] not in (1, 3):
        return None
    h, w = x.shape[1], x.shape[2]
    if max(h, w) > _MAX_THUMBNAIL:
        scale = _MAX_THUMBNAIL / max(h, w)
        size = (max(1, int(h * scale)), max(1, int(w * scale)))
        x = torch.nn.functional.adaptive_avg_pool2d(x.unsqueeze(0), size)[0]
    lo, hi = x.min(), x.max()
    x = (x - lo) / (hi - lo).clamp(min=1e-12) * 255
    x = x.round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0).contiguous().cpu()
    return (int(x.shape[0]), int(x.shape[1]), int(x.shape[2]), x.numpy().tobytes())


def _module(model: torch.nn.Module, name: str) -> torch.nn.Module:
    for candidate in (name, f"module.{name}"):  # module.: inside DistributedDataParallel
        try:
            return model.get_submodule(candidate)
        except AttributeError:
            pass
    names = [n for n, _ in model.named_modules() if n][:20]
    raise ValueError(f"trainscope.LossContribution: the model has no layer {name!r}; "
                     f"its layers include {names}")


class LossContribution:
    """Measures the loss contribution of every training item at one layer and
    maps it over the spatial layers `monitored` for the most difficult items.

    model: the module being trained (its output is taken as the logits, for
        the prediction). dataset: the map-style data set the indices refer to
        (a trainscope.track() one, say), or just its length. With a data set,
        the first report that lists an item carries a thumbnail of its input
        (dataset[item][0]), so every listed item has a picture, not only those
        that came by in a batch since.
    selection: the layer H_s whose output is scored (a name from
        model.named_modules()). monitored: layers H_m with [N, C, H, W] outputs.
    top_n: N_s, the items kept (per rank, then job-wide). every: K, iterations
        between reports. session: the trainscope session to report to (default:
        the attached one; None and nothing attached: reports stay local, see
        `reports`). enabled: hooks on at start (see enable/disable); default:
        on unless the environment sets TRAINSCOPE_LOSS_CONTRIBUTION=0. While
        attached, the job's switch at the collector (`trainscope enable|disable
        JOB --loss-contribution`) turns the hooks on or off at the next batch.
        keep_reports: also keep sent reports in `reports` (the newest
        max_kept_reports are kept either way).
    loss_reduction: how the training loss reduces over the batch's items.
        "mean" (the default of torch's losses) divides every item's gradient
        by the batch size, so the scores are multiplied back by it: an item's
        score is then its contribution to its own loss, whatever the size of
        the batch it came in (an epoch's last, smaller batch is not favoured).
        "sum": scores are taken as they are.
    """

    max_kept_reports = 256
    # Items whose thumbnail one report reads from the data set: bounds what a
    # slow data set (decoding from disk) can add to a report.
    max_thumbnails_per_report = 8

    def __init__(self, model: torch.nn.Module, dataset, selection: str,
                 monitored: Sequence[str] = (), top_n: int = 32, every: int = 50,
                 session=None, enabled: Optional[bool] = None, keep_reports: bool = False,
                 loss_reduction: str = "mean"):
        if top_n < 1:
            raise ValueError(f"trainscope.LossContribution: top_n must be >= 1, got {top_n}")
        if every < 1:
            raise ValueError(f"trainscope.LossContribution: every must be >= 1, got {every}")
        if loss_reduction not in ("mean", "sum"):
            raise ValueError(f"trainscope.LossContribution: loss_reduction must be 'mean' or "
                             f"'sum', got {loss_reduction!r}")
        size = dataset if isinstance(dataset, int) else len(dataset)
        self._dataset = None if isinstance(dataset, int) else dataset
        self._thumbnailed = set()  # items whose listing carried a thumbnail (or tried)
        if size < 1:
            raise ValueError("trainscope.LossContribution: the data set is empty")
        self.model = model
        self.size = size
        self.selection = selection
        self.monitored = list(monitored)
        self.top_n = min(top_n, size)
        self.every = every
        self._per_item_scale = loss_reduction == "mean"
        self._session = session
        self._selection_module = _module(model, selection)
        self._monitored_modules = [_module(model, name) for name in self.monitored]
        self.epoch = 0
        self.iteration = 0
        self._device = None
        self._scores = None   # [size] float32 on the device: this epoch's per-item sums
        self._labels = None   # [size] int32
        self._preds = None    # [size] int32
        self._seen_in_epoch = False
        # The last report's top-N: whose maps are taken when they are in a batch.
        self._selected_mask = torch.zeros(size, dtype=torch.bool)
        self._any_selected = False
        self._batch_index = None
        self._batch_rows = None     # rows of the batch holding selected items (CPU LongTensor)
        self._batch_inputs = None
        self._batch_labels = None
        self._pending_snapshots: List[dict] = []
        self._handles = []
        # The reports made: kept when not sent (or when asked), newest last, bounded.
        self.reports: Deque[dict] = collections.deque(maxlen=self.max_kept_reports)
        self._keep_reports = keep_reports
        self.last_top: List[dict] = []
        self._collector_serial = 0  # the last collector switch applied (its serial)
        self._warned_mismatch = False
        self._warned_in_place = False
        self._warned_layers = set()
        if enabled is None:
            enabled = os.environ.get("TRAINSCOPE_LOSS_CONTRIBUTION", "1") not in ("0", "false", "off")
        if enabled:
            self.enable()

    # -- configuration at runtime ----------------------------------------

    @property
    def enabled(self) -> bool:
        return bool(self._handles)

    def enable(self) -> None:
        """Installs the hooks (idempotent)."""
        if self._handles:
            return
        self._handles.append(self._selection_module.register_forward_hook(self._on_selection))
        for name, module in zip(self.monitored, self._monitored_modules):
            self._handles.append(module.register_forward_hook(self._monitor_hook(name)))
        self._handles.append(self.model.register_forward_hook(self._on_output))

    def disable(self) -> None:
        """Removes the hooks: training runs exactly as without trainscope."""
        for handle in self._handles:
            handle.remove()
        self._handles = []

    # -- the training loop ------------------------------------------------

    def set_epoch(self, epoch: int) -> None:
        """Starts epoch `epoch`; the previous one's top-N is reported as final."""
        if epoch == self.epoch:
            return
        if self._seen_in_epoch:
            self._report(epoch_complete=True)
        self.epoch = int(epoch)
        self._seen_in_epoch = False
        if self._scores is not None:
            self._scores.fill_(float("-inf"))

    def batch(self, index, inputs: Optional[torch.Tensor] = None,
              labels: Optional[torch.Tensor] = None) -> None:
        """Names the items of the next forward/backward pass (dataset indices,
        one per row) and optionally their inputs (for thumbnails) and labels."""
        self._follow_collector()
        if not self._handles:  # disabled: nothing is measured, so nothing new to report
            self.iteration += 1
            self._batch_index = None
            return
        if self.iteration > 0 and self.iteration % self.every == 0 and self._seen_in_epoch:
            self._report(epoch_complete=False)
        self.iteration += 1
        index = torch.as_tensor(index)
        self._batch_index = index
        self._batch_inputs = inputs
        self._batch_labels = labels
        cpu_index = index if index.device.type == "cpu" else None
        if cpu_index is not None and self._any_selected:
            rows = self._selected_mask[cpu_index].nonzero().flatten()
            self._batch_rows = rows if rows.numel() else None
        else:
            self._batch_rows = None
        if labels is not None and self._labels is not None:
            self._labels.index_copy_(0, self._device_index(), labels.to(
                self._labels.device, torch.int32, non_blocking=True))

    def close(self) -> None:
        """Reports the epoch's final top-N and removes the hooks."""
        if self._seen_in_epoch:
            self._report(epoch_complete=True)
            self._seen_in_epoch = False
        self.disable()

    # -- hooks ------------------------------------------------------------

    def _device_index(self) -> torch.Tensor:
        index = self._batch_index
        if index.device != self._device:
            index = index.to(self._device, non_blocking=True)
            self._batch_index = index
        return index

    def _allocate(self, device) -> None:
        self._device = device
        self._scores = torch.full((self.size,), float("-inf"), device=device)
        self._labels = torch.full((self.size,), -1, dtype=torch.int32, device=device)
        self._preds = torch.full((self.size,), -1, dtype=torch.int32, device=device)
        if self._batch_labels is not None:
            self._labels.index_copy_(0, self._device_index(), self._batch_labels.to(
                device, torch.int32))

    def _on_selection(self, module, args, output) -> None:
        if self._batch_index is None or not isinstance(output, torch.Tensor):
            return
        if not output.requires_grad:
            return
        if output.shape[0] != self._batch_index.shape[0]:
            # Another pass than the one batch() named (say a regulariser's):
            # not scored, and training goes on.
            if not self._warned_mismatch:
                self._warned_mismatch = True
                warnings.warn(
                    f"trainscope.LossContribution: layer {self.selection!r} gave "
                    f"{output.shape[0]} rows but batch() named {self._batch_index.shape[0]} "
                    "items; such passes are not scored", RuntimeWarning, stacklevel=2)
            return
        if self._scores is None:
            self._allocate(output.device)
        forward = output.detach()  # shares output's version counter
        version = output._version
        index = self._device_index()
        scale = output.shape[0] if self._per_item_scale else 1

        def on_grad(grad: torch.Tensor) -> None:
            if forward._version != version:
                # An in-place op after the layer (say ReLU(inplace=True)) has
                # overwritten f: a score from it would be wrong, so none is made.
                self._warn_in_place()
                return
            scores = item_contributions(forward, grad)
            if scale != 1:
                scores.mul_(scale)
            self._scores.index_copy_(0, index, scores)

        output.register_hook(on_grad)
        self._seen_in_epoch = True

    def _monitor_hook(self, name: str):
        def hook(module, args, output) -> None:
            rows = self._batch_rows
            if rows is None or not isinstance(output, torch.Tensor) or not output.requires_grad:
                return
            if output.dim() != 4 or output.shape[0] != self._batch_index.shape[0]:
                if name not in self._warned_layers:
                    self._warned_layers.add(name)
                    warnings.warn(f"trainscope.LossContribution: monitored layer {name!r} must "
                                  f"give [N, C, H, W] with one row per item, gave "
                                  f"{list(output.shape)}; it is not mapped", RuntimeWarning,
                                  stacklevel=2)
                return
            device_rows = rows.to(output.device, non_blocking=True)
            forward = output.detach().index_select(0, device_rows)
            probe = output.detach()  # shares output's version counter, not a cycle through it
            version = probe._version
            scale = output.shape[0] if self._per_item_scale else 1
            entry = self._snapshot_entry()

            def on_grad(grad: torch.Tensor) -> None:
                if probe._version != version:
                    self._warn_in_place()
                    return
                c, r = contribution_maps(forward, grad.index_select(0, device_rows) * scale)
                entry["maps"][name] = (c.half(), r.half())

            output.register_hook(on_grad)
        return hook

    def _warn_in_place(self) -> None:
        if not self._warned_in_place:
            self._warned_in_place = True
            warnings.warn(
                "trainscope.LossContribution: a scored layer's output was changed in place after "
                "the layer (an inplace activation?); its items are not scored: choose the layer "
                "after the in-place op", RuntimeWarning, stacklevel=2)

    def _snapshot_entry(self) -> dict:
        """The pending snapshot of this iteration (made by its first monitored layer)."""
        if self._pending_snapshots and self._pending_snapshots[-1]["iteration"] == self.iteration:
            return self._pending_snapshots[-1]
        rows = self._batch_rows
        entry = {"iteration": self.iteration, "epoch": self.epoch,
                 "items": self._batch_index.index_select(
                     0, rows.to(self._batch_index.device)).tolist(),
                 "rows": rows, "maps": {}, "thumbs": None}
        if self._batch_inputs is not None:
            inputs = self._batch_inputs
            entry["thumbs"] = inputs.detach().index_select(0, rows.to(inputs.device))
        self._pending_snapshots.append(entry)
        return entry

    def _on_output(self, module, args, output) -> None:
        if self._batch_index is None or self._preds is None:
            return
        logits = output[0] if isinstance(output, (tuple, list)) else output
        if not isinstance(logits, torch.Tensor) or logits.dim() != 2 or not logits.requires_grad:
            return  # not a training pass (evaluation under no_grad), or not logits
        if logits.shape[0] != self._batch_index.shape[0]:
            return
        self._preds.index_copy_(0, self._device_index(),
                                logits.detach().argmax(1).to(torch.int32))

    # -- reports ----------------------------------------------------------

    def _target_session(self):
        if self._session is not None:
            return self._session
        return _attached_session()

    def _follow_collector(self) -> None:
        """Applies a new switch from the collector (a local enable() or
        disable() after it stands until the next one)."""
        session = self._target_session()
        if session is None or not session.attached:
            return
        switch = session._native.loss_contribution_switch
        if switch is None or switch[1] == self._collector_serial:
            return
        wanted, self._collector_serial = switch
        if wanted:
            self.enable()
        else:
            self.disable()

    def _report(self, epoch_complete: bool) -> None:
        if self._scores is None:
            return
        k = self.top_n
        # A diverging step's NaN or inf must not crowd out the real scores.
        inf = float("inf")
        values, items = torch.topk(
            torch.nan_to_num(self._scores, nan=-inf, posinf=-inf, neginf=-inf), k)
        labels = self._labels.index_select(0, items)
        preds = self._preds.index_select(0, items)
        values, items, labels, preds = (t.cpu().tolist() for t in (values, items, labels, preds))
        top = [{"item": i, "contribution": v, "label": lab, "prediction": p}
               for v, i, lab, p in zip(values, items, labels, preds) if math.isfinite(v)]
        self.last_top = [dict(entry) for entry in top]  # without the thumbnails' bytes
        self._add_thumbnails(top)
        report = {"epoch": self.epoch, "iteration": self.iteration,
                  "epoch_complete": epoch_complete, "selection_layer": self.selection,
                  "monitored_layers": self.monitored, "top_n": self.top_n, "top": top,
                  "snapshots": self._take_snapshots()}
        self._selected_mask.zero_()
        self._any_selected = bool(top)
        if top:
            self._selected_mask[torch.tensor([entry["item"] for entry in top])] = True
        session = self._target_session()
        sent = False
        if session is not None and session.attached:
            sent = session._native.submit_loss_report(report)
        if not sent or self._keep_reports:
            self.reports.append(report)

    def _add_thumbnails(self, top: List[dict]) -> None:
        """Puts the input's thumbnail on the first listing of each item, read
        from the data set (up to max_thumbnails_per_report a report)."""
        budget = self.max_thumbnails_per_report
        for entry in top:
            if self._dataset is None or budget == 0:
                return
            item = entry["item"]
            if item in self._thumbnailed:
                continue
            self._thumbnailed.add(item)
            budget -= 1
            try:
                sample = self._dataset[item]
            except Exception as e:  # noqa: BLE001 (the user's data set code must not stop training)
                warnings.warn(f"trainscope.LossContribution: reading item {item} of the data set "
                              f"for its thumbnail failed ({type(e).__name__}: {e}); no more "
                              "thumbnails are read from it", RuntimeWarning, stacklevel=3)
                self._dataset = None
                return
            x = sample[0] if isinstance(sample, (tuple, list)) else sample
            if not isinstance(x, torch.Tensor):
                try:
                    x = torch.as_tensor(x)
                except (TypeError, ValueError, RuntimeError):
                    continue  # not an array (a PIL image, text...): no thumbnail
            thumbnail = _thumbnail(x)
            if thumbnail is not None:
                entry["input"] = thumbnail

    def _take_snapshots(self) -> List[dict]:
        out = []
        if not self._pending_snapshots:
            return out
        # One gather (and one host copy) per buffer for all the snapshots' items.
        all_items = [item for entry in self._pending_snapshots for item in entry["items"]]
        index = torch.tensor(all_items, device=self._scores.device)
        scores, labels, preds = (t.index_select(0, index).cpu().tolist()
                                 for t in (self._scores, self._labels, self._preds))
        k = 0
        for entry in self._pending_snapshots:
            thumbs = entry["thumbs"]
            for row, item in enumerate(entry["items"]):
                score = scores[k] if math.isfinite(scores[k]) else 0.0
                snap = {"item": item, "epoch": entry["epoch"], "iteration": entry["iteration"],
                        "label": labels[k], "prediction": preds[k],
                        "contribution": score, "maps": []}
                k += 1
                if thumbs is not None:
                    snap["input"] = _thumbnail(thumbs[row])
                # Backward fills the maps last layer first; ship them as configured.
                for layer in self.monitored:
                    if layer not in entry["maps"]:
                        continue
                    c, r = entry["maps"][layer]
                    c_row, r_row = c[row].cpu().contiguous(), r[row].cpu().contiguous()
                    snap["maps"].append((layer, int(c_row.shape[0]), int(c_row.shape[1]),
                                         c_row.numpy().tobytes(), r_row.numpy().tobytes()))
                out.append(snap)
        self._pending_snapshots = []
        return out


def merge_top(lists: Iterable[List[dict]], top_n: int) -> List[dict]:
    """The job-wide top-N from the ranks' lists (what the collector does; tests)."""
    best: Dict[int, dict] = {}
    for entries in lists:
        for entry in entries:
            kept = best.get(entry["item"])
            if kept is None or entry["contribution"] > kept["contribution"]:
                best[entry["item"]] = entry
    return sorted(best.values(), key=lambda e: (-e["contribution"], e["item"]))[:top_n]
