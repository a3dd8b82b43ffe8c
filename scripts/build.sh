#!/usr/bin/env bash
# Configures and builds trainscope (release preset) into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  cmake --preset release >/dev/null
fi
cmake --build --preset release -j "$(nproc)"
