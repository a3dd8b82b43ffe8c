#!/usr/bin/env bash
# The viewer's CPU while it follows a live 4-rank job (issue 23.5: 33-81 % of
# a core): a real collector, trainscope-loadgen as 4 ranks at about 10 steps/s
# (500 events/s each, a step mark every ~50 events), and trainscope-viewer
# following its feed under QT_QPA_PLATFORM=offscreen (the window is shown, so
# it paints as on a screen). Samples the viewer's user+system CPU time from
# /proc over SECONDS (default 30) after a 5 s warm-up and prints it as a share
# of one core.
#
# Usage: bench/viewer/follow_cpu.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
build=${1:-build}
seconds=${2:-30}
bin=$(cd "$build/bin" && pwd)
work=$(mktemp -d /tmp/trainscope-follow-cpu.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Ports picked by the kernel: bind 0 and read the port files back.
base=$((20000 + RANDOM % 20000))
grpc=127.0.0.1:$base feed=tcp://127.0.0.1:$((base + 1)) snap=tcp://127.0.0.1:$((base + 2))
"$bin/trainscope-collector" --listen "$grpc" --feed "$feed" --snapshot "$snap" \
  --data-dir "$work/data" --metrics-port 0 --analysis >"$work/collector.log" 2>&1 &
pids+=($!)
sleep 1.5
"$bin/trainscope-loadgen" --collector "$grpc" --job follow --streams 4 --rate 500 \
  --run-for-ms $(((seconds + 15) * 1000)) --summary "$work/loadgen.json" \
  >"$work/loadgen.log" 2>&1 &
pids+=($!)
sleep 1
QT_QPA_PLATFORM=offscreen "$bin/trainscope-viewer" --feed "$feed" --snapshot "$snap" \
  --job follow --collector "$grpc" >"$work/viewer.log" 2>&1 &
viewer=$!
pids+=($viewer)
sleep 5
ticks() { awk '{print $14 + $15}' "/proc/$viewer/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks)
s0=$(date +%s.%N)
sleep "$seconds"
t1=$(ticks)
s1=$(date +%s.%N)
kill -0 "$viewer" || { echo "viewer exited early:"; cat "$work/viewer.log"; exit 1; }
awk -v t="$((t1 - t0))" -v hz="$hz" -v s0="$s0" -v s1="$s1" 'BEGIN {
  cpu = t / hz; wall = s1 - s0;
  printf "viewer CPU while following a live 4-rank job: %.2f s in %.1f s = %.1f %% of a core\n",
         cpu, wall, 100 * cpu / wall }'
