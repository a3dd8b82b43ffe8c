"""Driver of bench/gpu/run.sh (see there): runs with the target interpreter,
whose torch the extension is built for; everything else comes from the bundle.

Prints one block per stage and a summary; writes OUT/results.json. Exits 1
when a check fails (the extension does not build or load, a run fails, the
2-process job's export lacks what it must show).
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent


def log(text):
    print(text, flush=True)


class Run:
    def __init__(self, args):
        self.args = args
        self.bundle = pathlib.Path(args.bundle).resolve()
        self.out = pathlib.Path(args.out).resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        # The collector's data and the exported traces stay out of OUT (whose
        # files travel back from a device machine): only results and logs go there.
        self.work = pathlib.Path(args.work).resolve()
        self.work.mkdir(parents=True, exist_ok=True)
        self.results = {"mode": args.mode, "checks": {}}
        self.failures = []
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(
            [str(self.bundle / "lib" / "trainscope" / "python")] +
            ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
        # Its own extension cache (outside OUT, whose files travel back): the
        # bundle's build of the extension, never another layout's.
        self.env["TRAINSCOPE_CACHE_DIR"] = args.cache or os.path.join(
            tempfile.gettempdir(), "trainscope-gpu-run-cache")
        self.collector = None

    def check(self, name, ok, detail=""):
        self.results["checks"][name] = {"ok": bool(ok), "detail": detail}
        log(f"  [{'ok' if ok else 'FAILED'}] {name}{': ' + detail if detail else ''}")
        if not ok:
            self.failures.append(name)
        return ok

    def cli(self, *argv, timeout=120):
        return subprocess.run([str(self.bundle / "bin" / "trainscope"), *argv, "--collector",
                               self.collector_address], capture_output=True, text=True,
                              timeout=timeout, env=self.env)

    # ---- stages --------------------------------------------------------------

    def build_extension(self):
        log("== the extension, built here for this torch")
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c",
             "import torch, trainscope; print(torch.__version__, torch.version.cuda, "
             "trainscope._C.__file__)"], capture_output=True, text=True, env=self.env,
            timeout=900)
        seconds = time.monotonic() - started
        log(done.stderr.strip())
        self.results["extension"] = {"seconds": round(seconds, 1), "stdout": done.stdout.strip()}
        return self.check("extension builds and loads", done.returncode == 0,
                          f"{seconds:.0f} s; {done.stdout.strip() or done.stderr[-500:]}")

    def start_collector(self):
        log("== collector (bundled)")
        data = self.work / "data"
        shutil.rmtree(data, ignore_errors=True)  # a fresh collector: jobs of this run only
        port_file = self.work / "ports"
        if port_file.exists():
            port_file.unlink()
        self.collector_log = open(self.out / "collector.log", "wb")
        self.collector = subprocess.Popen(
            [str(self.bundle / "bin" / "trainscope-collector"), "--listen=127.0.0.1:0",
             "--feed=tcp://127.0.0.1:*", "--snapshot=tcp://127.0.0.1:*", f"--data-dir={data}",
             f"--port-file={port_file}", "--fsync=false"],
            stdout=self.collector_log, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.monotonic() + 60
        while not port_file.exists():
            if self.collector.poll() is not None or time.monotonic() > deadline:
                return self.check("collector starts", False,
                                  (self.out / "collector.log").read_text(errors="replace")[-800:])
            time.sleep(0.05)
        ports = dict(line.split("=", 1) for line in port_file.read_text().split() if "=" in line)
        self.collector_address = ports["agents"]
        self.env["TRAINSCOPE_SNAPSHOT"] = ports["snapshot"]  # steps, export
        return self.check("collector starts", True, self.collector_address)

    def overhead(self, batch):
        log(f"== step time, batch {batch}: no agent / trainscope / torch.profiler")
        cmd = [sys.executable, str(HERE / "overhead.py"), "--mode", self.args.mode,
               "--batch", str(batch), "--collector", self.collector_address,
               "--steps", str(self.args.steps), "--rounds", str(self.args.rounds),
               "--warmup", str(self.args.warmup)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=self.env, timeout=1800)
        (self.out / f"overhead-b{batch}.log").write_text(done.stdout + done.stderr)
        result = None
        for line in done.stdout.splitlines():
            if line.startswith("RESULT "):
                result = json.loads(line[len("RESULT "):])
        if done.returncode != 0 or result is None:
            return self.check(f"overhead batch {batch}", False, done.stderr[-1500:])
        self.results[f"overhead_b{batch}"] = result
        med = result["step_ms"]
        log(f"  step ms (median of rounds): none {med['none']:.2f}  trainscope "
            f"{med['trainscope']:.2f}  torch.profiler {med['profiler']:.2f}")
        log(f"  trainscope x{result['ratio_trainscope']:.3f} of no agent, torch.profiler "
            f"x{result['ratio_profiler']:.3f}; trainscope / torch.profiler "
            f"x{result['trainscope_vs_profiler']:.3f}; {result['events_per_step']:.0f} events "
            f"per step recorded; GPU activity per round: {result['gpu_activity_per_round']}")
        # GPU events dropped out of order are lost kernels (a CUPTI buffer back
        # later than the reorder window): a failure, not a figure.
        late = result.get("gpu_events_out_of_order", 0)
        ok = result["events_per_step"] > 0 and result["events_dropped"] == 0 and late == 0
        self.check(f"overhead batch {batch}", ok,
                   f"ratio x{result['ratio_trainscope']:.3f}, dropped {result['events_dropped']}, "
                   f"GPU events out of order {late}")
        log(f"  GPU records lost (CUPTI without a buffer, or unfinished at a forced flush): "
            f"{result.get('gpu_records_lost', 0)}; GPU events dropped out of order: "
            f"{result.get('gpu_events_out_of_order', 0)}")
        self.hand_over(batch, result.get("handover") or {})
        # What the traced steps left at the collector: operators and kernels per step.
        counts = self.export_counts(result["jobs"][0], f"overhead-b{batch}-r0")
        if counts is not None:
            per_step = {k: round(v / result["traced_steps_per_job"], 1) for k, v in counts.items()}
            result["exported_per_step"] = per_step
            log(f"  exported per traced step (round 0): {per_step}")
            self.check(f"batch {batch}: operators exported", per_step.get("compute", 0) > 0)
            if self.args.mode == "gpu":
                self.check(f"batch {batch}: kernels exported", per_step.get("kernel", 0) > 0,
                           f"{per_step.get('kernel', 0)} kernels per step")
        return True

    def hand_over(self, batch, h):
        """torch.profiler started and stopped while attached (overhead.py's hand_over)."""
        log(f"  hand-over to torch.profiler: yields {h.get('yields')}, GPU activity "
            f"{h.get('gpu_activity_before')} -> {h.get('gpu_activity_after')}, "
            f"{h.get('operators_during', 0)} events recorded while it ran, "
            f"{h.get('profiler_cuda_events', 0)} CUDA events in its trace")
        self.check(f"batch {batch}: yields to torch.profiler once and keeps recording operators",
                   h.get("yields") == 1 and h.get("operators_during", 0) > 0, json.dumps(h))
        if self.args.mode != "gpu":
            return
        self.check(f"batch {batch}: GPU activity active again after torch.profiler",
                   h.get("gpu_activity_before") == "active" and
                   h.get("gpu_activity_after") == "active", json.dumps(h))
        self.check(f"batch {batch}: torch.profiler's trace has its CUDA kernels",
                   h.get("profiler_cuda_events", 0) > 0)
        counts = self.export_counts(h["job"], f"handover-b{batch}")
        if counts is not None:
            log(f"  hand-over job exported: {counts}")
            self.check(f"batch {batch}: kernels recorded around torch.profiler",
                       counts.get("kernel", 0) > 0, json.dumps(counts))

    def nccl_one_rank(self):
        """NCCL on this one GPU (a 1-rank group: NCCL refuses two ranks on one
        device): the c10d collectives and what NCCL launched for them."""
        job = "nccl-one-rank"
        log(f"== NCCL, one rank on this GPU: job {job}")
        done = subprocess.run(
            [sys.executable, str(HERE / "nccl_job.py"), "--collector", self.collector_address,
             "--job", job], capture_output=True, text=True, env=self.env, timeout=600)
        (self.out / "nccl.log").write_text(done.stdout + done.stderr)
        if not self.check("NCCL job runs", done.returncode == 0, (done.stdout + done.stderr)[-800:]):
            return
        trace = self.work / f"{job}.json"
        export = self.cli("export", job, "--format", "chrome", "--out", str(trace), timeout=300)
        if not self.check("NCCL job exports", export.returncode == 0 and trace.exists(),
                          (export.stdout + export.stderr)[-400:]):
            return
        events = json.loads(trace.read_text())
        events = events["traceEvents"] if isinstance(events, dict) else events
        host = [e for e in events if e.get("ph") == "X" and e.get("cat") == "collective"]
        nccl = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel" and
                "sequence" in e.get("args", {})]
        tied = [e for e in nccl if e["args"].get("sequence", 0) > 0 and
                e["args"].get("bytes", 0) > 0]
        sample = tied[0] if tied else (nccl[0] if nccl else None)
        log(f"  nccl: {len(host)} host collectives, {len(nccl)} NCCL kernels, {len(tied)} with "
            f"group/sequence/bytes; e.g. {json.dumps(sample)[:300] if sample else 'none'}")
        self.results["nccl"] = {"host": len(host), "kernels": len(nccl), "tied": len(tied)}
        # Hello.gpus, as the agent said it read them from the CUDA driver.
        devices = [line for line in (done.stdout + done.stderr).splitlines()
                   if "GPU devices: " in line]
        log(f"  {devices[0].strip() if devices else 'no GPU devices line from the agent'}")
        self.check("the agent lists this GPU (Hello.gpus)", bool(devices) and "SMs" in devices[0])
        self.check("NCCL host collectives recorded", len(host) > 0)
        # NCCL may run a 1-rank collective without a kernel of its own: said, not failed.
        if nccl:
            self.check("NCCL kernels carry their collective's group, sequence and bytes",
                       len(tied) == len(nccl), f"{len(tied)}/{len(nccl)}")

    def export_counts(self, job, name):
        """Complete ("X") events per category in the job's Chrome export, or None."""
        trace = self.work / f"{name}.json"
        export = self.cli("export", job, "--format", "chrome", "--out", str(trace), timeout=300)
        if export.returncode != 0 or not trace.exists():
            self.check(f"export {job}", False, (export.stdout + export.stderr)[-400:])
            return None
        events = json.loads(trace.read_text())
        events = events["traceEvents"] if isinstance(events, dict) else events
        counts = {}
        for e in events:
            if e.get("ph") == "X":
                counts[e.get("cat")] = counts.get(e.get("cat"), 0) + 1
        trace.unlink()  # large; the counts are what matters
        return counts

    def two_rank_job(self):
        job = f"two-ranks-{self.args.mode}"
        log(f"== 2-process job on one {'GPU' if self.args.mode == 'gpu' else 'CPU'} "
            f"(gloo), under `trainscope run`: job {job}")
        started = time.monotonic()
        done = subprocess.run(
            [str(self.bundle / "bin" / "trainscope"), "run", "--collector",
             self.collector_address, "--job", job, "--", sys.executable,
             str(HERE / "two_rank_job.py"), "--mode", self.args.mode, "--steps", "12"],
            capture_output=True, text=True, env=self.env, timeout=900)
        (self.out / "two-ranks.log").write_text(done.stdout + done.stderr)
        if not self.check("2-process job runs", done.returncode == 0,
                          f"{time.monotonic() - started:.0f} s" if done.returncode == 0
                          else (done.stdout + done.stderr)[-1500:]):
            return False
        # The collector has the job once both ranks said goodbye.
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline:
            r = self.cli("status", job, "--json")
            if r.returncode == 0:
                status = json.loads(r.stdout)
                ranks = status.get("ranks", [])
                if len(ranks) == 2 and all(x.get("said_goodbye") for x in ranks):
                    break
            time.sleep(0.5)
        self.check("both ranks streamed and said goodbye", status is not None and
                   len(status.get("ranks", [])) == 2 and
                   all(x.get("said_goodbye") for x in status["ranks"]),
                   json.dumps(status)[:400] if status else "no status")
        steps = self.cli("steps", job)
        (self.out / "steps.txt").write_text(steps.stdout + steps.stderr)
        log(steps.stdout.strip()[:3000])
        self.check("trainscope steps", steps.returncode == 0 and steps.stdout.strip(),
                   steps.stderr.strip()[-400:])
        trace = self.work / f"{job}.json"
        export = self.cli("export", job, "--format", "chrome", "--out", str(trace))
        if not self.check("trainscope export", export.returncode == 0 and trace.exists(),
                          (export.stdout + export.stderr).strip()[-400:]):
            return False
        events = json.loads(trace.read_text())
        events = events["traceEvents"] if isinstance(events, dict) else events
        by_cat = {}
        for e in events:
            if e.get("ph") == "X":
                key = (e.get("pid"), e.get("cat"))
                by_cat[key] = by_cat.get(key, 0) + 1
        summary = {f"rank{pid}:{cat}": n for (pid, cat), n in sorted(by_cat.items(),
                                                                      key=str)}
        self.results["two_ranks_export"] = summary
        log(f"  exported events per rank and category: {summary}")
        for rank in (0, 1):
            self.check(f"rank {rank}: operators", by_cat.get((rank, "compute"), 0) > 0)
            self.check(f"rank {rank}: collectives (gloo)", by_cat.get((rank, "collective"), 0) > 0)
            if self.args.mode == "gpu":
                launched = sum(1 for e in events if e.get("ph") == "X" and e.get("pid") == rank
                               and e.get("cat") == "kernel" and
                               e.get("args", {}).get("launched_by"))
                self.check(f"rank {rank}: kernels on the device tracks",
                           by_cat.get((rank, "kernel"), 0) > 0,
                           f"{by_cat.get((rank, 'kernel'), 0)} kernels, {launched} with their "
                           f"launching operator")
        return True

    def stop(self):
        if self.collector is not None and self.collector.poll() is None:
            self.collector.terminate()
            try:
                self.collector.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.collector.kill()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--mode", choices=["gpu", "cpu"], default="gpu")
    p.add_argument("--bundle", required=True)
    p.add_argument("--out", default=os.path.join(os.environ.get("OUT") or "/tmp",
                                                 "trainscope-gpu-run"))
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "trainscope-gpu-run-work"),
                   help="the collector's data and exported traces")
    p.add_argument("--cache", default=None, help="extension cache (TRAINSCOPE_CACHE_DIR)")
    p.add_argument("--batches", default=None, help="comma-separated (default 64,256; CPU: 8)")
    p.add_argument("--steps", type=int, default=None, help="measured steps per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=None)
    args = p.parse_args()
    gpu = args.mode == "gpu"
    args.batches = [int(b) for b in (args.batches or ("64,256" if gpu else "8")).split(",")]
    args.steps = args.steps or (15 if gpu else 4)
    args.warmup = args.warmup if args.warmup is not None else (5 if gpu else 2)
    if not (pathlib.Path(args.bundle) / "bin" / "trainscope-collector").exists():
        sys.exit(f"gpu_run: no bundle at {args.bundle}: run scripts/bundle_agent.sh "
                 f"(on the build machine) and carry .bundle/")
    run = Run(args)
    started = time.monotonic()
    try:
        if run.build_extension() and run.start_collector():
            for batch in args.batches:
                run.overhead(batch)
            if gpu:
                run.nccl_one_rank()
            run.two_rank_job()
    finally:
        run.stop()
    run.results["seconds"] = round(time.monotonic() - started, 1)
    (run.out / "results.json").write_text(json.dumps(run.results, indent=2))
    log(f"== {len(run.results['checks']) - len(run.failures)}/{len(run.results['checks'])} checks "
        f"held in {run.results['seconds']:.0f} s; results in {run.out / 'results.json'}")
    if run.failures:
        log("FAILED: " + ", ".join(run.failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
