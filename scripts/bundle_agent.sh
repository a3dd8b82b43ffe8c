#!/usr/bin/env bash
# Bundles what a machine without Debian's packages needs to trace PyTorch
# training into one relocatable folder (default .bundle/trainscope, ignored
# by git), stripped:
#
#   lib/libtrainscope_agent.so     the agent + the plugin's torch-free half (C API),
#                                  its runtime libraries beside it (RUNPATH $ORIGIN)
#   lib/glibc/                     this machine's C library, used only by the two
#                                  programs below (an older glibc elsewhere runs them)
#   libexec/                       trainscope-collector and trainscope (RUNPATH $ORIGIN/../lib)
#   bin/trainscope-collector,      wrappers that start them through lib/glibc's loader
#   bin/trainscope
#   include/                       trainscope_agent.h, trainscope_session.h
#   src/integrations/pytorch/      the torch extension's sources (built on the target
#                                  by `import trainscope`, for its own torch and Python)
#   lib/trainscope/python/         the trainscope package (its _layout.py points at the
#                                  above) and the sitecustomize of `trainscope run`
#
# Usage: scripts/bundle_agent.sh [OUT_DIR]     (after scripts/build.sh; builds what it needs)
# The library loaded into Python uses the target's own glibc and libstdc++:
# the highest symbol versions it needs are printed and written to MANIFEST.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${1:-$ROOT/.bundle/trainscope}"
BUILD="${TRAINSCOPE_BUILD_DIR:-$ROOT/build}"
LIMIT_MB="${TRAINSCOPE_BUNDLE_LIMIT_MB:-60}"

command -v patchelf >/dev/null || { echo "bundle_agent: patchelf is missing (scripts/setup.sh installs it)" >&2; exit 1; }
[ -f "$BUILD/build.ninja" ] || { echo "bundle_agent: no build in $BUILD: run scripts/build.sh first" >&2; exit 1; }
if ! log="$(cmake --build "$BUILD" --target trainscope_agent_shared trainscope trainscope-collector \
      trainscope_python 2>&1)"; then
  echo "$log" | tail -30 >&2
  echo "bundle_agent: building the bundled targets in $BUILD failed" >&2
  exit 1
fi

rm -rf "$OUT"
mkdir -p "$OUT"/{bin,libexec,lib/glibc,include,lib/trainscope/python}

# The C library and the loader stay the target's for anything loaded into
# its processes; the programs get this machine's through lib/glibc.
GLIBC_RE='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|libnsl|libanl|libmvec|ld-linux-x86-64)\.so'

copy_deps() {  # copy_deps FILE: every library FILE needs, resolved here
  ldd "$1" | awk '/=> \//{print $3} /^\t\/lib/{print $1}' | while read -r dep; do
    name="$(basename "$dep")"
    if [[ "$name" =~ $GLIBC_RE ]]; then
      [ -f "$OUT/lib/glibc/$name" ] || cp -L "$dep" "$OUT/lib/glibc/$name"
    else
      [ -f "$OUT/lib/$name" ] || cp -L "$dep" "$OUT/lib/$name"
    fi
  done
}

cp -L "$BUILD/lib/libtrainscope_agent.so" "$OUT/lib/"
copy_deps "$OUT/lib/libtrainscope_agent.so"
for prog in trainscope trainscope-collector; do
  cp -L "$BUILD/bin/$prog" "$OUT/libexec/"
  copy_deps "$OUT/libexec/$prog"
done

chmod u+w "$OUT"/lib/*.so* "$OUT"/lib/glibc/* "$OUT"/libexec/*
strip --strip-unneeded "$OUT"/lib/*.so* "$OUT"/libexec/* 2>/dev/null || true
for lib in "$OUT"/lib/*.so*; do patchelf --set-rpath '$ORIGIN' "$lib"; done
for prog in "$OUT"/libexec/*; do patchelf --set-rpath '$ORIGIN/../lib' "$prog"; done

for prog in trainscope trainscope-collector; do
  cat >"$OUT/bin/$prog" <<EOF
#!/bin/sh
# Runs $prog with the C library it was built with (bundle_agent.sh), so an
# older glibc on this machine does not matter. The plugin's Python package
# is told where it is (the program cannot see this folder through ld.so).
here="\$(cd "\$(dirname "\$0")/.." && pwd)"
TRAINSCOPE_PYTHON_DIR="\${TRAINSCOPE_PYTHON_DIR:-\$here/lib/trainscope/python}"
export TRAINSCOPE_PYTHON_DIR
exec "\$here/lib/glibc/ld-linux-x86-64.so.2" --library-path "\$here/lib/glibc:\$here/lib" \\
  "\$here/libexec/$prog" "\$@"
EOF
  chmod +x "$OUT/bin/$prog"
done

cp agent/include/trainscope_agent.h integrations/pytorch/include/trainscope_session.h "$OUT/include/"
SRC="$OUT/src/integrations/pytorch"
mkdir -p "$SRC/extension" "$SRC/csrc"
cp integrations/pytorch/extension/CMakeLists.txt integrations/pytorch/extension/probe_torch.py "$SRC/extension/"
# The torch-facing sources only (extension/CMakeLists.txt lists them).
for f in collective_tag empty_callback loss_report_binding record_function_observer; do
  cp "integrations/pytorch/csrc/$f.h" "integrations/pytorch/csrc/$f.cc" "$SRC/csrc/"
done
# ... and the FLOP formulas they compile in (trainscope::ops), at the same
# place relative to extension/ as in the tree (../../../ops).
mkdir -p "$OUT/src/ops/include/trainscope/ops" "$OUT/src/ops/src"
cp ops/include/trainscope/ops/flop_formulas.h "$OUT/src/ops/include/trainscope/ops/"
cp ops/src/flop_formulas.cc "$OUT/src/ops/src/"
cp integrations/pytorch/csrc/python_module.cc integrations/pytorch/csrc/op_name_cache.h "$SRC/csrc/"

PY="$OUT/lib/trainscope/python"
mkdir -p "$PY/trainscope" "$PY/sitecustomize"
cp integrations/pytorch/trainscope/*.py "$PY/trainscope/"
cp integrations/pytorch/sitecustomize/sitecustomize.py "$PY/sitecustomize/"
cat >"$PY/trainscope/_layout.py" <<'EOF'
# Written by scripts/bundle_agent.sh: where this package finds the sources and
# the agent library to build its extension with (relative to this folder).
EXTENSION_SOURCE_DIR = "../../../../src/integrations/pytorch"
AGENT_LIBRARY = "../../../libtrainscope_agent.so"
AGENT_INCLUDE_DIRS = ["../../../../include"]
EOF

# What the library loaded into Python asks of the target.
# libstdc++ and libgcc_s are the process's own there (torch loaded them), so
# what the bundled copies need does not count.
need() {  # need PREFIX: the highest symbol version of PREFIX any bundled library needs
  find "$OUT/lib" -maxdepth 1 -name '*.so*' ! -name 'libstdc++*' ! -name 'libgcc_s*' \
    -exec objdump -T {} + 2>/dev/null | grep -o "($1_[0-9.]*)" | tr -d '()' |
    sed "s/$1_//" | sort -V | tail -1
}
GLIBC_NEED="$(need GLIBC)"
GLIBCXX_NEED="$(need GLIBCXX)"
SIZE_MB=$(( $(du -sk "$OUT" | cut -f1) / 1024 ))
cat >"$OUT/MANIFEST" <<EOF
trainscope bundle, $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%dT%H:%MZ)
size: ${SIZE_MB} MB
libtrainscope_agent.so and its libraries need glibc >= ${GLIBC_NEED} and libstdc++ (GLIBCXX) >= ${GLIBCXX_NEED}
in the Python process that loads them; bin/ runs with the bundled glibc.
EOF
echo "bundle_agent: $OUT: ${SIZE_MB} MB; the agent library needs glibc >= $GLIBC_NEED, GLIBCXX >= $GLIBCXX_NEED"
if [ "$SIZE_MB" -gt "$LIMIT_MB" ]; then
  echo "bundle_agent: $OUT is ${SIZE_MB} MB, over the ${LIMIT_MB} MB limit" >&2
  exit 1
fi
