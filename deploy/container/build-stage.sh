#!/usr/bin/env bash
# The Containerfile's build stage, also runnable on a development machine (the tests run
# its --runtime-packages step against build/bin):
#   build-stage.sh SRC OUT           configure and build the collector, the CLI and the
#                                    CURVE key tool in SRC, install them under OUT/usr/local
#                                    with the list of Debian packages they need at run time
#   build-stage.sh --runtime-packages BINARY...
#                                    print the Debian packages whose shared libraries the
#                                    binaries load (ldd + dpkg -S), one per line, sorted
set -euo pipefail

runtime_packages() {
  local binary libs
  for binary in "$@"; do
    ldd "$binary" >/dev/null 2>&1 || {
      echo "build-stage: $binary is not a dynamic executable ldd can read" >&2
      return 1
    }
  done
  libs=$(ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u)
  [ -n "$libs" ] || { echo "build-stage: no shared libraries found in $*" >&2; return 1; }
  local lib real owner
  for lib in $libs; do
    real=$(readlink -f "$lib")
    # dpkg knows a library by the path it shipped; merged /usr means /lib/... or /usr/lib/...
    owner=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$real" 2>/dev/null ||
            dpkg -S "${real#/usr}" 2>/dev/null || true)
    if [ -z "$owner" ]; then
      echo "build-stage: no Debian package owns $lib (needed by $*)" >&2
      return 1
    fi
    echo "${owner%%:*}"
  done | sed 's/,.*//' | sort -u
}

if [ "${1:-}" = "--runtime-packages" ]; then
  shift
  [ $# -gt 0 ] || { echo "usage: build-stage.sh --runtime-packages BINARY..." >&2; exit 2; }
  runtime_packages "$@"
  exit 0
fi

[ $# -eq 2 ] || { echo "usage: build-stage.sh SRC OUT | --runtime-packages BINARY..." >&2; exit 2; }
src=$1
out=$2
cmake -S "$src" -B "$src/build-container" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DTRAINSCOPE_BUILD_TESTS=OFF -DTRAINSCOPE_BUILD_BENCH=OFF -DTRAINSCOPE_BUILD_VIEWER=OFF \
  -DTRAINSCOPE_BUILD_PYTORCH=OFF
cmake --build "$src/build-container" --target trainscope-collector trainscope trainscope-curve-keygen
bin="$src/build-container/bin"
install -d "$out/usr/local/bin" "$out/usr/local/share/trainscope"
install -m 0755 -s "$bin/trainscope-collector" "$bin/trainscope" "$bin/trainscope-curve-keygen" \
  "$out/usr/local/bin/"
runtime_packages "$bin/trainscope-collector" "$bin/trainscope" "$bin/trainscope-curve-keygen" \
  > "$out/usr/local/share/trainscope/runtime-packages.txt"
install -m 0755 "$src/deploy/container/runtime-stage.sh" "$out/usr/local/share/trainscope/"
"$bin/trainscope-collector" --print-default-rules > "$out/usr/local/share/trainscope/rules.textproto"
