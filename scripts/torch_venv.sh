#!/usr/bin/env bash
# Creates (or reuses) the virtual environment with a pip PyTorch that the
# plugin is also built and tested against, beside Debian's torch 1.13: the
# version pinned to the GPU machine's (2.11), from PyPI (its default Linux
# wheel is a CUDA build; it runs on the CPU here).
#
#   scripts/torch_venv.sh            # prints the venv's python on its last line
#
# Where: $TRAINSCOPE_TORCH_VENV, default ~/.cache/trainscope/venv-torch-<ver>
# (outside the clone, so a fresh clone on the same machine reuses it). The
# downloads stay in pip's cache (~/.cache/pip), so a venv removed or created
# for another python reinstalls without the network. Idempotent: a venv whose
# torch already has the pinned version is used as it is.
set -euo pipefail
TORCH_VERSION="${TRAINSCOPE_TORCH_VERSION:-2.11.0}"
VENV="${TRAINSCOPE_TORCH_VENV:-$HOME/.cache/trainscope/venv-torch-$TORCH_VERSION}"
BASE_PYTHON="${TRAINSCOPE_VENV_BASE_PYTHON:-/usr/bin/python3}"
# Extra pip arguments, e.g. --index-url https://download.pytorch.org/whl/cpu
# for the CPU-only wheel (a tenth of the download) where that index is reachable.
read -r -a EXTRA <<<"${TRAINSCOPE_TORCH_PIP_ARGS:-}"

# What the tests import beside torch (the example jobs use sklearn's digits).
EXTRAS=(numpy pytest scikit-learn)

have_torch() {
  [ -x "$VENV/bin/python" ] &&
    "$VENV/bin/python" - "$TORCH_VERSION" <<'PY' 2>/dev/null
import sys, torch
sys.exit(0 if torch.__version__.split("+")[0] == sys.argv[1] else 1)
PY
}
have() { have_torch && "$VENV/bin/python" -c "import numpy, pytest, sklearn" 2>/dev/null; }

if have_torch && ! have; then
  "$VENV/bin/python" -m pip install --progress-bar off -q "${EXTRAS[@]}" >&2
fi
if ! have; then
  start=$(date +%s)
  echo "torch_venv: creating $VENV (torch $TORCH_VERSION from PyPI; pip cache ~/.cache/pip)" >&2
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  "$BASE_PYTHON" -m venv "$VENV"
  # Quiet but not silent: a large download prints its progress once per file.
  "$VENV/bin/python" -m pip install --progress-bar off -q "${EXTRA[@]}" \
    "torch==$TORCH_VERSION" "${EXTRAS[@]}" >&2
  have || { echo "torch_venv: $VENV has no usable torch $TORCH_VERSION after install" >&2; exit 1; }
  echo "torch_venv: ready in $(( $(date +%s) - start )) s" >&2
fi
echo "$VENV/bin/python"
