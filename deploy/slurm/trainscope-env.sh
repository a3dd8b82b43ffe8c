#!/bin/sh
# Sourced by each task of a Slurm job step (see train.sbatch): points trainscope at the
# collector the prolog started on this node, hands the ranks that collector's job key (so
# they prove membership: docs/security.md), and gives torch.distributed its rank
# variables from Slurm's when the launcher has not set them.
#   srun sh -c '. /etc/trainscope/trainscope-env.sh && exec trainscope run -- python train.py'

_ts_dir="${TRAINSCOPE_SLURM_ROOT:-/var/lib/trainscope/slurm}/${SLURM_JOB_ID:?not in a Slurm job}"
_ts_ports="$_ts_dir/ports"
if [ -r "$_ts_ports" ]; then
  TRAINSCOPE_COLLECTOR=$(sed -n 's/^agents=//p' "$_ts_ports")
  TRAINSCOPE_FEED=$(sed -n 's/^feed=//p' "$_ts_ports")
  TRAINSCOPE_SNAPSHOT=$(sed -n 's/^snapshot=//p' "$_ts_ports")
  export TRAINSCOPE_COLLECTOR TRAINSCOPE_FEED TRAINSCOPE_SNAPSHOT
  if [ -r "$_ts_dir/job.key" ]; then
    TRAINSCOPE_JOB_KEY_FILE="$_ts_dir/job.key"
    export TRAINSCOPE_JOB_KEY_FILE
  fi
else
  echo "trainscope-env: no collector on $(hostname) ($_ts_ports missing: is the prolog installed?)" >&2
fi
: "${TRAINSCOPE_JOB:=slurm-$SLURM_JOB_ID}"
export TRAINSCOPE_JOB
# One task per rank (srun --ntasks-per-node=GPUS): Slurm's numbering is the job's.
if [ -z "${RANK:-}" ] && [ -n "${SLURM_PROCID:-}" ]; then
  RANK=$SLURM_PROCID
  WORLD_SIZE=${SLURM_NTASKS:?}
  LOCAL_RANK=${SLURM_LOCALID:-0}
  export RANK WORLD_SIZE LOCAL_RANK
fi
unset _ts_ports _ts_dir
