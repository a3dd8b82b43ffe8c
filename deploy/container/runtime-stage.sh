#!/usr/bin/env bash
# The Containerfile's runtime stage: installs the Debian packages build-stage.sh listed
# (the libraries the binaries load, nothing else) and the collector's own user.
set -euo pipefail
list=/usr/local/share/trainscope/runtime-packages.txt
[ -s "$list" ] || { echo "runtime-stage: $list is missing or empty" >&2; exit 1; }
mapfile -t packages < "$list"
apt-get update -qq
apt-get install -y -qq --no-install-recommends ca-certificates "${packages[@]}" >/dev/null
rm -rf /var/lib/apt/lists/*
# A fixed uid, so Kubernetes can check runAsNonRoot against the image (USER 999).
useradd --system --uid 999 --home-dir /var/lib/trainscope --shell /usr/sbin/nologin trainscope
install -d -o trainscope -g trainscope -m 0750 /var/lib/trainscope
# The binaries must find every library now: a missing one fails the image build here.
if ldd /usr/local/bin/trainscope-collector /usr/local/bin/trainscope | grep -q 'not found'; then
  echo "runtime-stage: libraries missing:" >&2
  ldd /usr/local/bin/trainscope-collector /usr/local/bin/trainscope | grep 'not found' >&2
  exit 1
fi
