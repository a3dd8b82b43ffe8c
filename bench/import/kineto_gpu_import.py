#!/usr/bin/python3
"""Import speed and peak memory of `trainscope import` on a generated Kineto
GPU trace (the JSON object torch.profiler's Kineto writes: CPU operators,
cuda_runtime launches, kernels on GPU streams linked by correlation and ac2g
flows, NCCL kernels under record_param_comms, memcpys; the CPU events first
and the device events after them, as Kineto orders them).

    /usr/bin/python3 bench/import/kineto_gpu_import.py [--mb 40] [--build build]
        [--sort-budget N] [--no-baseline]

Prints the trace's size, the import's MB/s (uncompressed JSON) and events/s,
its peak RSS: of the importer alone (build/bin/import_bench) and of the
whole `trainscope import` command (from /usr/bin/time -v; it also runs the
rules over the imported job, whose analysis holds per-step state), and the
same figures for a baseline
measured in the same run: Python's json.load of the same file (what a
Python analysis such as HTA starts with), skipped above 400 MB. A second
import of a quarter of the trace shows whether RSS grows with the trace (the
importer sorts in memory up to a budget, then spills runs to /tmp).
Anchor: HTA ~4.7 s and ~390 MB RAM per rank file of an 8-rank trace.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

KERNELS = [
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float> > >",
]
OPS = ["aten::mm", "aten::add", "aten::mean"]


def write_trace(path, target_bytes, rank=0):
    """Steps of 60 launched operators, an all-reduce and a copy, until large enough."""
    cpu, gpu = [], []
    t = 1_700_000_000_000_000.0 + rank * 13.0  # Unix microseconds
    corr = 1
    step = 0
    size = 0
    kernels = 0
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100", '
                '"totalGlobalMem": 85000000000, "computeMajor": 9, "computeMinor": 0, '
                '"numSms": 132}], "distributedInfo": {"backend": "nccl", "rank": %d, '
                '"world_size": 8}, "traceEvents": [\n' % rank)
        first = True
        while size < target_bytes:
            start = t
            parts = []
            gparts = []
            for i in range(60):
                op_ts = t + 5 + i * 50
                parts.append('{"ph": "X", "cat": "cpu_op", "name": "%s", "pid": 100, "tid": 100, '
                             '"ts": %.3f, "dur": 40, "args": {"External id": %d, "flops": %d}}'
                             % (OPS[i % 3], op_ts, corr, 1000000 * (i % 5)))
                parts.append('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", '
                             '"pid": 100, "tid": 100, "ts": %.3f, "dur": 8, "args": '
                             '{"External id": %d, "cbid": 211, "correlation": %d}}'
                             % (op_ts + 10, corr, corr))
                parts.append('{"ph": "s", "id": %d, "pid": 100, "tid": 100, "ts": %.3f, '
                             '"cat": "ac2g", "name": "ac2g"}' % (corr, op_ts + 10))
                k_ts = op_ts + 30
                gparts.append('{"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 7, '
                              '"ts": %.3f, "dur": 35, "args": {"External id": %d, "queued": 0, '
                              '"device": 0, "context": 1, "stream": 7, "correlation": %d, '
                              '"registers per thread": 90, "shared memory": 49152, '
                              '"blocks per SM": 1.2, "warps per SM": 4.8, "grid": [8, 8, 1], '
                              '"block": [128, 1, 1], "est. achieved occupancy %%": 25}}'
                              % (KERNELS[i % 3], k_ts, corr, corr))
                gparts.append('{"ph": "f", "id": %d, "pid": 0, "tid": 7, "ts": %.3f, '
                              '"cat": "ac2g", "name": "ac2g", "bp": "e"}' % (corr, k_ts))
                corr += 1
                kernels += 1
            # The all-reduce: record_param_comms > nccl:all_reduce > launch.
            ar = t + 3100
            parts.append('{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 100, '
                         '"tid": 100, "ts": %.3f, "dur": 60, "args": {"Collective name": '
                         '"allreduce", "Process Group Name": "0", "In msg nelems": 1048576, '
                         '"Out msg nelems": 1048576, "dtype": "Float"}}' % ar)
            parts.append('{"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", '
                         '"pid": 100, "tid": 100, "ts": %.3f, "dur": 50}' % (ar + 2))
            parts.append('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", '
                         '"pid": 100, "tid": 100, "ts": %.3f, "dur": 10, "args": '
                         '{"correlation": %d}}' % (ar + 5, corr))
            gparts.append('{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_'
                          'RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "pid": 0, "tid": 20, '
                          '"ts": %.3f, "dur": 400, "args": {"device": 0, "stream": 20, '
                          '"correlation": %d}}' % (ar + 40, corr))
            corr += 1
            kernels += 1
            parts.append('{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", '
                         '"pid": 100, "tid": 100, "ts": %.3f, "dur": 10, "args": '
                         '{"correlation": %d}}' % (ar + 70, corr))
            gparts.append('{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> '
                          'Device)", "pid": 0, "tid": 7, "ts": %.3f, "dur": 20, "args": '
                          '{"device": 0, "stream": 7, "correlation": %d, "bytes": 1048576}}'
                          % (ar + 500, corr))
            corr += 1
            parts.insert(0, '{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", '
                            '"pid": 100, "tid": 100, "ts": %.3f, "dur": 3600}' % (step, start))
            chunk = ",\n".join(parts)
            f.write(("" if first else ",\n") + chunk)
            first = False
            gpu.append(",\n".join(gparts))
            size += len(chunk) + sum(len(g) for g in gparts)
            t += 4000
            step += 1
            if len(gpu) >= 200:  # device events after the CPU's, as Kineto writes them
                spill = path + ".gpu"
                with open(spill, "a") as g:
                    g.write(",\n" + ",\n".join(gpu))
                gpu = []
        spill = path + ".gpu"
        if os.path.exists(spill):
            with open(spill) as g:
                shutil.copyfileobj(g, f)
            os.remove(spill)
        if gpu:
            f.write(",\n" + ",\n".join(gpu))
        f.write('\n], "traceName": "synthetic"}\n')
    return step, kernels


def peak_rss_mb(stderr):
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(m.group(1)) / 1024 if m else float("nan")


def run_import(binary, trace, data, job, extra):
    cmd = ["/usr/bin/time", "-v", binary, "import", "--job", job, "--data-dir", data, trace] + extra
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    secs = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("import failed:\n" + p.stdout + p.stderr)
    return secs, peak_rss_mb(p.stderr), p.stdout


def run_importer_alone(binary, trace):
    p = subprocess.run([binary, trace], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("import_bench failed:\n" + p.stdout + p.stderr)
    return p.stdout.strip()


def run_baseline(trace):
    code = "import json,sys; json.load(open(sys.argv[1]))"
    cmd = ["/usr/bin/time", "-v", sys.executable, "-c", code, trace]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    return time.monotonic() - t0, peak_rss_mb(p.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=40, help="trace size in MB (uncompressed)")
    ap.add_argument("--build", default="build")
    ap.add_argument("--no-baseline", action="store_true")
    args = ap.parse_args()
    binary = os.path.join(args.build, "bin", "trainscope")
    work = tempfile.mkdtemp(prefix="trainscope-kineto-bench-")
    try:
        results = []
        for label, mb in (("quarter", args.mb / 4), ("full", args.mb)):
            trace = os.path.join(work, "rank0_%s.json" % label)
            steps, kernels = write_trace(trace, int(mb * 1e6))
            size_mb = os.path.getsize(trace) / 1e6
            secs, rss, out = run_import(binary, trace, os.path.join(work, "data"), label, [])
            events = int(re.search(r": (\d+) events", out).group(1))
            gpu_line = next((l.strip() for l in out.splitlines() if l.strip().startswith("GPU:")), "")
            print("%-7s %7.1f MB, %d steps, %d kernels: trainscope import %.2f s, %.1f MB/s, "
                  "%.0f events/s, peak RSS %.0f MB" % (label, size_mb, steps, kernels, secs, size_mb / secs,
                                        events / secs, rss))
            print("        " + gpu_line)
            print("        " + run_importer_alone(os.path.join(args.build, "bin", "import_bench"),
                                                 trace))
            results.append((size_mb, secs, rss, trace))
        size_mb, secs, rss, trace = results[-1]
        print("trainscope import's RSS growth with 4x the trace: %.2fx" % (rss / results[0][2]))
        if not args.no_baseline and size_mb <= 400:
            bsecs, brss = run_baseline(trace)
            print("baseline json.load (same file, same run): %.2f s, %.1f MB/s, peak RSS %.0f MB"
                  % (bsecs, size_mb / bsecs, brss))
            print("ratio import/json.load: time %.2fx, peak RSS %.2fx" % (secs / bsecs, rss / brss))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
