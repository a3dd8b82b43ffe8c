#!/usr/bin/python3
"""What LossContribution's hooks cost per training step, A/B in one process.

    /usr/bin/python3 bench/loss_contribution/overhead.py --naive    # CPU: ResNet-18, batch 32, 3x64x64
    python3 bench/loss_contribution/overhead.py --naive --device cuda --model resnet50 \\
        --batch 256 --dtype bf16 --image 224 --items 1281167 \\
        --warmup 20 --steps 20 --repeats 20                               # GPU, PyTorch 2.x

Method. One model, one optimizer, one process. The variants
  off    plain training, no hooks;
  ours   trainscope's LossContribution (H_s = layer4, H_m = layer1 and layer2,
         top_n N_s, a report every K iterations) switched on with enable() and
         off with disable();
  ours_selection_only  (--selection-only) the same without monitored
         layers: the per-item scores and reports, no maps;
  naive  (--naive) the straightforward implementation: a forward hook on
         layer4, a gradient hook that forms the full-size f*b tensor, sums it
         over the non-batch dims and copies the sums to the host every step;
run in blocks of --steps steps, all variants once per repetition, in an order
that rotates from one repetition to the next, after --warmup steps of each.
Drifting machine load thus hits every variant alike. A block's time per step
is taken between two synchronisations (torch.cuda.synchronize on a GPU), so
the naive variant's per-step host copy costs what it costs in training. For
each variant: the median over repetitions of the block's time per step; for
each pair: the ratio of the two blocks of the same repetition, as the median
with its interquartile range and its min-max over repetitions. On the CPU the
training thread's CPU time (time.thread_time) is reported too: with one torch
thread it holds all the work, and other processes on the machine do not
inflate it.

The data is synthetic: a few batches of random images reused, with item
indices taken in order from a fixed random permutation of --items items (the
data set size the score buffer is sized for), as a sampler would give them.
The model is a compact ResNet (basic blocks for resnet18, bottlenecks for
resnet50; --width scales the channels, 64 = the standard widths).
"""

import argparse
import contextlib
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from lc_module import load_loss_contribution


# -- model ---------------------------------------------------------------------

def conv_bn(inplanes: int, planes: int, kernel: int, stride: int = 1) -> torch.nn.Sequential:
    return torch.nn.Sequential(
        torch.nn.Conv2d(inplanes, planes, kernel, stride, kernel // 2, bias=False),
        torch.nn.BatchNorm2d(planes))


class BasicBlock(torch.nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int):
        super().__init__()
        self.body = torch.nn.Sequential(conv_bn(inplanes, planes, 3, stride),
                                        torch.nn.ReLU(inplace=True), conv_bn(planes, planes, 3))
        self.shortcut = (conv_bn(inplanes, planes, 1, stride)
                         if stride != 1 or inplanes != planes else torch.nn.Identity())
        self.relu = torch.nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.body(x) + self.shortcut(x))


class Bottleneck(torch.nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int):
        super().__init__()
        out = planes * self.expansion
        self.body = torch.nn.Sequential(
            conv_bn(inplanes, planes, 1), torch.nn.ReLU(inplace=True),
            conv_bn(planes, planes, 3, stride), torch.nn.ReLU(inplace=True),
            conv_bn(planes, out, 1))
        self.shortcut = (conv_bn(inplanes, out, 1, stride)
                         if stride != 1 or inplanes != out else torch.nn.Identity())
        self.relu = torch.nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.body(x) + self.shortcut(x))


class ResNet(torch.nn.Module):
    """stem (7x7/2 conv, 3x3/2 pool), layer1..layer4 (stride 1, 2, 2, 2), head."""

    def __init__(self, block, depths, width: int, classes: int):
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(3, width, 7, 2, 3, bias=False), torch.nn.BatchNorm2d(width),
            torch.nn.ReLU(inplace=True), torch.nn.MaxPool2d(3, 2, 1))
        inplanes = width
        for stage, depth in enumerate(depths):
            planes = width * 2 ** stage
            blocks = []
            for i in range(depth):
                blocks.append(block(inplanes, planes, 2 if stage > 0 and i == 0 else 1))
                inplanes = planes * block.expansion
            setattr(self, f"layer{stage + 1}", torch.nn.Sequential(*blocks))
        self.head = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                        torch.nn.Linear(inplanes, classes))

    def forward(self, x):
        x = self.stem(x)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.head(x)


MODELS = {"resnet18": (BasicBlock, [2, 2, 2, 2]), "resnet50": (Bottleneck, [3, 4, 6, 3])}


# -- the variants ----------------------------------------------------------------

class NaiveContribution:
    """The straightforward implementation: full-size f*b, summed per item, to the host per step."""

    def __init__(self, model: torch.nn.Module, layer: str, size: int):
        self.module = model.get_submodule(layer)
        self.scores = torch.full((size,), float("-inf"))
        self._index = None
        self._handle = None

    def enable(self):
        self._handle = self.module.register_forward_hook(self._on_forward)

    def disable(self):
        self._handle.remove()
        self._handle = None

    def batch(self, index, inputs=None, labels=None):
        self._index = index

    def _on_forward(self, module, args, output):
        forward = output.detach()
        index = self._index

        def on_grad(grad):
            sums = (forward * grad).sum(dim=tuple(range(1, grad.dim())))
            self.scores[index] = sums.float().cpu()

        output.register_hook(on_grad)


class NoHooks:
    def enable(self):
        pass

    def disable(self):
        pass

    def batch(self, index, inputs=None, labels=None):
        pass


# -- measurement ---------------------------------------------------------------------

class Trainer:
    """Training steps over synthetic batches; `hooks` is the variant in use."""

    def __init__(self, model, args, device):
        self.model = model
        self.device = device
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        generator = torch.Generator().manual_seed(0)
        memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
        self.batches = [
            (torch.randn(args.batch, 3, args.image, args.image, generator=generator)
             .to(device, memory_format=memory_format),
             torch.randint(0, args.classes, (args.batch,), generator=generator).to(device))
            for _ in range(4)]
        self.order = torch.randperm(args.items, generator=generator)
        if device.type == "cuda":
            self.order = self.order.pin_memory()  # as a DataLoader with pin_memory gives them
        self.batch_size = args.batch
        self.autocast = ((lambda: torch.autocast(device.type, dtype=torch.bfloat16))
                         if args.dtype == "bf16" else contextlib.nullcontext)
        self.step_count = 0
        self.hooks = NoHooks()

    def step(self):
        x, y = self.batches[self.step_count % len(self.batches)]
        start = self.step_count * self.batch_size % (len(self.order) - self.batch_size + 1)
        self.step_count += 1
        self.hooks.batch(self.order[start:start + self.batch_size], inputs=x, labels=y)
        with self.autocast():
            loss = F.cross_entropy(self.model(x), y)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()

    def synchronize(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def block(self, hooks, steps: int):
        """(wall seconds, thread CPU seconds) per step over `steps` steps with `hooks` on."""
        self.hooks = hooks
        hooks.enable()
        self.synchronize()
        wall, cpu = time.perf_counter(), time.thread_time()
        for _ in range(steps):
            self.step()
        self.synchronize()
        wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
        hooks.disable()
        return wall / steps, cpu / steps


def measure(trainer, variants: dict, args) -> dict:
    """{variant: {"wall": [s per step per repetition], "cpu": [...]}}."""
    for hooks in variants.values():
        trainer.block(hooks, args.warmup)
    times = {name: {"wall": [], "cpu": []} for name in variants}
    names = list(variants)
    for rep in range(args.repeats):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            wall, cpu = trainer.block(variants[name], args.steps)
            times[name]["wall"].append(wall)
            times[name]["cpu"].append(cpu)
        print(f"repetition {rep + 1}/{args.repeats}: " + ", ".join(
            f"{name} {times[name]['wall'][-1] * 1e3:.1f} ms" for name in names),
              file=sys.stderr, flush=True)
    return times


def ratio_summary(numerator, denominator) -> str:
    ratios = sorted(a / b for a, b in zip(numerator, denominator))
    if len(ratios) < 4:
        return f"x{statistics.median(ratios):.4f} (min-max {ratios[0]:.4f}-{ratios[-1]:.4f})"
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    return (f"x{statistics.median(ratios):.4f} (IQR {q1:.4f}-{q3:.4f}; "
            f"min-max {ratios[0]:.4f}-{ratios[-1]:.4f})")


def markdown_table(times: dict, clocks) -> str:
    lines = ["| variant | clock | median ms/step | ratio to off: median (IQR; min-max) "
             "over repetitions |", "|---|---|---|---|"]
    for clock in clocks:
        for name, by_clock in times.items():
            ratio = "1" if name == "off" else ratio_summary(by_clock[clock], times["off"][clock])
            lines.append(f"| {name} | {clock} | {statistics.median(by_clock[clock]) * 1e3:.2f} "
                         f"| {ratio} |")
        if "naive" in times:
            lines.append(f"| ours / naive | {clock} | | "
                         f"{ratio_summary(times['ours'][clock], times['naive'][clock])} |")
    return "\n".join(lines)


# -- driver -------------------------------------------------------------------------

def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Per-step overhead of trainscope's LossContribution hooks (A/B, one process).")
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default: cpu)")
    parser.add_argument("--model", choices=sorted(MODELS), default="resnet18",
                        help="default: resnet18")
    parser.add_argument("--width", type=int, default=64,
                        help="channels of the stem and layer1 (64 = standard; default: 64)")
    parser.add_argument("--batch", type=int, default=32, help="default: 32")
    parser.add_argument("--image", type=int, default=64, help="image side in pixels (default: 64)")
    parser.add_argument("--classes", type=int, default=1000, help="default: 1000")
    parser.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32",
                        help="bf16: autocast to bfloat16 (default: fp32)")
    parser.add_argument("--channels-last", action="store_true", help="channels-last inputs and model")
    parser.add_argument("--items", type=int, default=50000,
                        help="data set size (the score buffer's length; default: 50000)")
    parser.add_argument("--top-n", type=int, default=32, help="N_s (default: 32)")
    parser.add_argument("--every", type=int, default=50, help="K (default: 50)")
    parser.add_argument("--naive", action="store_true", help="also time the naive implementation")
    parser.add_argument("--selection-only", action="store_true",
                        help="also time LossContribution without monitored layers (no maps)")
    parser.add_argument("--steps", type=int, default=5, help="steps per block (default: 5)")
    parser.add_argument("--repeats", type=int, default=12,
                        help="repetitions, each one block per variant (default: 12)")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up steps per variant (default: 3)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: 1)")
    args = parser.parse_args(argv)
    for name in ("width", "batch", "image", "classes", "items", "top_n", "every", "steps",
                 "repeats", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.items < args.batch:
        parser.error(f"--items ({args.items}) must be at least --batch ({args.batch})")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    try:
        device = torch.device(args.device)
    except RuntimeError:
        sys.exit(f"--device {args.device}: expected cpu or cuda[:N]")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            sys.exit(f"--device {args.device}: this PyTorch ({torch.__version__}) sees no CUDA device")
        torch.backends.cudnn.benchmark = True
    elif device.type != "cpu":
        sys.exit(f"--device {args.device}: expected cpu or cuda[:N]")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    lc_mod = load_loss_contribution()

    block, depths = MODELS[args.model]
    model = ResNet(block, depths, args.width, args.classes).to(device)
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
    trainer = Trainer(model, args, device)
    variants = {
        "off": NoHooks(),
        "ours": lc_mod.LossContribution(model, args.items, selection="layer4",
                                        monitored=["layer1", "layer2"], top_n=args.top_n,
                                        every=args.every, enabled=False),
    }
    if args.selection_only:
        variants["ours_selection_only"] = lc_mod.LossContribution(
            model, args.items, selection="layer4", top_n=args.top_n, every=args.every,
            enabled=False)
    if args.naive:
        variants["naive"] = NaiveContribution(model, "layer4", args.items)

    started = time.time()
    times = measure(trainer, variants, args)
    elapsed = time.time() - started
    ours = variants["ours"]
    clocks = ["wall", "cpu"] if device.type == "cpu" else ["wall"]
    if device.type == "cuda":
        machine = torch.cuda.get_device_name(device)
    else:
        machine = f"CPU, {args.threads} torch thread(s)"
    print(f"Config: {args.model} (width {args.width}), "
          f"batch {args.batch} of 3x{args.image}x{args.image}, "
          f"{args.classes} classes, {args.dtype}{', channels-last' if args.channels_last else ''}, "
          f"SGD; H_s layer4, H_m layer1+layer2, N_s {args.top_n}, K {args.every}, {args.items} items; "
          f"{args.repeats} repetitions x {args.steps} steps per variant after {args.warmup} warm-up "
          f"steps; {machine}; torch {torch.__version__}; {ours.iteration} steps with ours on, "
          f"{len(ours.reports)} reports, {sum(len(r['snapshots']) for r in ours.reports)} "
          f"snapshots; measured in {elapsed:.0f} s.\n")
    print(markdown_table(times, clocks))


if __name__ == "__main__":
    main()
