#!/usr/bin/env bash
# The main demo: installs what is missing, builds, starts a collector, runs a real
# 4-rank PyTorch job attached to it, shows the live feed and ends with per-rank counts.
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
NOISE=0.05  # the fraction of training labels the job flips on purpose
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

echo "== starting a real 4-rank PyTorch DDP job '$JOB' (CNN on sklearn's digits, gloo on CPU;"
echo "   5 % of its labels flipped on purpose, trainscope.LossContribution on every rank)"
PYTHONPATH="$PWD/build/python" /usr/bin/python3 integrations/pytorch/examples/ddp_train.py \
  --dataset digits --world-size 4 --steps 150 --batch-size 32 --collector "$AGENTS" --job "$JOB" \
  --loss-contribution --label-noise "$NOISE" --lc-top-n 24 --stats-out "$WORK/stats.json" \
  >"$WORK/job.log" 2>&1 &
job_pid=$!
pids+=($job_pid)

echo "== live feed (trainscope tail $JOB, 8 s)"
"$BIN/trainscope" tail "$JOB" --for 8 --kinds job,command || true

wait "$job_pid" || { echo "the training job failed:"; tail -20 "$WORK/job.log"; exit 1; }
echo "== the job's own output (last lines)"
tail -4 "$WORK/job.log"
echo
echo "== trainscope status $JOB"
"$BIN/trainscope" status "$JOB"
echo
echo "== trainscope jobs"
"$BIN/trainscope" jobs
echo
echo "== trainscope steps $JOB --first 100 --last 101  (clocks aligned, steps assembled across devices)"
"$BIN/trainscope" steps "$JOB" --first 100 --last 101
echo
echo "== trainscope clocks $JOB"
"$BIN/trainscope" clocks "$JOB"
echo
echo "== trainscope items $JOB  (the job-wide top items by loss contribution, merged from 4 ranks)"
"$BIN/trainscope" items "$JOB" | head -14
echo
echo "== trainscope alerts $JOB  (the performance rules raise none for this clean run; difficult_item"
echo "   names items that stayed in the top for 3 epochs: candidates for the flipped labels)"
"$BIN/trainscope" alerts "$JOB" | head -20
echo
echo "== the difficult items against the labels the job flipped (its ground truth, in $WORK/stats.json)"
"$BIN/trainscope" alerts "$JOB" --json | /usr/bin/python3 -c '
import json, sys
flipped = set(json.load(open(sys.argv[1]))["ranks"][0]["loss_contribution"]["flipped_items"])
noise = float(sys.argv[2])
raised = {int(a["item"]) for a in map(json.loads, filter(str.strip, sys.stdin))
          if a["rule"] == "difficult_item" and a["state"] == "ALERT_STATE_RAISED"}
hits = len(raised & flipped)
print(f"{len(raised)} items raised as difficult_item, {hits} of them with a flipped label: "
      f"precision {hits / max(len(raised), 1):.2f} against {noise:.2f} by chance "
      f"({len(flipped)} labels flipped)")' "$WORK/stats.json" "$NOISE"
if [ -x "$BIN/trainscope-viewer" ]; then
  echo
  echo "== the viewer's report, rendered offscreen from the live collector"
  for view in overview marey selection monitoring; do
    QT_QPA_PLATFORM=offscreen "$BIN/trainscope-viewer" --feed "$FEED" --snapshot "$SNAPSHOT" \
      --job "$JOB" --render "$view" --out "$WORK/$view.png" 2>/dev/null | grep -v XDG || true
  done
  echo "open $WORK/overview.png, $WORK/marey.png, $WORK/selection.png (the difficult items)"
  echo "and $WORK/monitoring.png (the top item's contribution and reduction maps)"
fi
