#!/usr/bin/env bash
# The GPU run of issue 20, one command: builds the extension from the bundle
# for this machine's torch, starts the bundled collector, measures ResNet-50
# bf16 step times at batch 64 and 256 with every operator traced (and every
# kernel, with GPU activity) against no agent and against torch.profiler
# (CPU+CUDA) in the same process, then runs a 2-process gloo job on CUDA
# tensors under `trainscope run` and checks its exported data shows kernels.
#
#   bench/gpu/run.sh                 # GPU: /opt/torch/.venv/bin/python3, .bundle/trainscope
#   bench/gpu/run.sh --cpu           # CPU mode (CI): a tiny CNN, the venv's pip torch
#
# Flags: --python PY, --bundle DIR (scripts/bundle_agent.sh), --out DIR
# (default ${OUT:-/tmp}/trainscope-gpu-run: results.json, logs, steps.txt;
# the collector's data and the traces go to --work, default in /tmp),
# --steps N / --rounds N (measured steps per round, rounds per variant).
# Exit status 0 when every check held. Needs no network and no Debian package.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
mode=gpu
python=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) mode=cpu ;;
    --python) python="$2"; shift ;;
    *) args+=("$1") ;;
  esac
  shift
done
if [ -z "$python" ]; then
  if [ "$mode" = gpu ]; then
    python=/opt/torch/.venv/bin/python3
  else
    python="$("$repo/scripts/torch_venv.sh")"
  fi
fi
[ -x "$python" ] || { echo "run.sh: no python at $python (give --python)" >&2; exit 2; }
exec "$python" "$here/gpu_run.py" --mode "$mode" --bundle "$repo/.bundle/trainscope" "${args[@]}"
