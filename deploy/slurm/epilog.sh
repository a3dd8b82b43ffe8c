#!/bin/sh
# Slurm epilog: stops the job's collector on this node (SIGTERM: it drains and syncs its
# logs first). The logs stay in $TRAINSCOPE_SLURM_ROOT/<job id>/data for
# `trainscope steps JOB --data-dir ...`; remove them with your retention policy.
set -eu

: "${SLURM_JOB_ID:?the epilog runs under Slurm}"
root=${TRAINSCOPE_SLURM_ROOT:-/var/lib/trainscope/slurm}
dir="$root/$SLURM_JOB_ID"
unit="trainscope-collector-$SLURM_JOB_ID"

if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$unit" 2>/dev/null; then
  systemctl stop "$unit"
elif [ -s "$dir/pid" ]; then
  pid=$(cat "$dir/pid")
  kill -TERM "$pid" 2>/dev/null || true
  # Up to 60 s to drain, as the systemd unit allows.
  tries=0
  while kill -0 "$pid" 2>/dev/null && [ "$tries" -lt 600 ]; do
    tries=$((tries + 1))
    sleep 0.1
  done
  rm -f "$dir/pid"
fi
rm -f "$dir/ports"
