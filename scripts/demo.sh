#!/usr/bin/env bash
# The main demo: installs what is missing, builds, starts a collector, streams a
# 4-rank job into it, shows the live feed and ends with per-rank counts.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
BIN=build/bin

PORT=${TRAINSCOPE_DEMO_PORT:-7070}
AGENTS=127.0.0.1:$PORT
FEED=tcp://127.0.0.1:$((PORT + 1))
SNAPSHOT=tcp://127.0.0.1:$((PORT + 2))
WORK=$(mktemp -d /tmp/trainscope-demo.XXXXXX)
JOB=demo
export TRAINSCOPE_COLLECTOR=$AGENTS TRAINSCOPE_FEED=$FEED TRAINSCOPE_SNAPSHOT=$SNAPSHOT

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

echo "== starting trainscope-collector (data in $WORK/data)"
"$BIN/trainscope-collector" --listen="$AGENTS" --feed="$FEED" --snapshot="$SNAPSHOT" \
  --data-dir="$WORK/data" --port-file="$WORK/ports" >"$WORK/collector.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -f "$WORK/ports" ] && break; sleep 0.1; done
[ -f "$WORK/ports" ] || { echo "collector did not start:"; cat "$WORK/collector.log"; exit 1; }
head -1 "$WORK/collector.log"

echo "== starting a 4-rank job '$JOB' (agents stream to the collector)"
for rank in 0 1 2 3; do
  "$BIN/trainscope-loadgen" --collector "$AGENTS" --job "$JOB" --rank "$rank" --world-size 4 \
    --events 150000 --rate 30000 --summary "$WORK/rank-$rank.json" >"$WORK/rank-$rank.log" 2>&1 &
  pids+=($!)
done

echo "== live feed (trainscope tail $JOB, 6 s)"
"$BIN/trainscope" tail "$JOB" --for 6 || true

for rank in 0 1 2 3; do wait "${pids[$((rank + 1))]}" || true; done
echo
echo "== trainscope status $JOB"
"$BIN/trainscope" status "$JOB"
echo
echo "== trainscope jobs"
"$BIN/trainscope" jobs
