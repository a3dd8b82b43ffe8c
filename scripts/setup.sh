#!/usr/bin/env bash
# Installs every Debian package trainscope needs. Idempotent: silent when all
# are present; runs `apt-get update` only when something must be installed.
set -euo pipefail

PACKAGES=(
  # toolchain and build
  cmake ninja-build pkg-config g++ git
  # wire, storage, feed
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  libzmq3-dev cppzmq-dev libsqlite3-dev prometheus-cpp-dev zlib1g-dev
  # viewer
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev libxkbcommon-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # PyTorch plugin and real training data
  python3-torch libtorch-dev pybind11-dev python3-dev python3-numpy python3-sklearn python3-pytest
  dataset-fashion-mnist gdb
  # the relocatable agent bundle (scripts/bundle_agent.sh)
  patchelf
  # fuzzing
  clang-14 libclang-rt-14-dev
  # security and deploy/ checks (test_security.py, test_deploy.py): certificates, manifests,
  # scripts, the systemd unit
  openssl python3-yaml shellcheck systemd
  # the collector tier on NATS JetStream (tier/, tests/python/test_tier.py)
  libnats-dev nats-server
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "setup: installing ${#missing[@]} Debian packages: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
