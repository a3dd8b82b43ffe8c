#!/bin/sh
# Slurm prolog: a trainscope collector on every node of the job, for the job's ranks on that
# node (they stream to it over loopback, so no certificates are needed for them).
# slurm.conf:  Prolog=/etc/slurm/trainscope-prolog.sh  Epilog=/etc/slurm/trainscope-epilog.sh
#              PrologFlags=Alloc   (run on every allocated node when the job starts)
# Runs as root. The collector runs as the job's user, with its logs in
# $TRAINSCOPE_SLURM_ROOT/<job id> (kept after the job for `trainscope --data-dir`), on free
# loopback ports written to its port file, which trainscope-env.sh reads in the job.
set -eu

: "${SLURM_JOB_ID:?the prolog runs under Slurm}"
: "${SLURM_JOB_USER:?the prolog runs under Slurm}"
root=${TRAINSCOPE_SLURM_ROOT:-/var/lib/trainscope/slurm}
collector=${TRAINSCOPE_COLLECTOR_BIN:-/usr/local/bin/trainscope-collector}
dir="$root/$SLURM_JOB_ID"

mkdir -p "$root"
install -d -m 0700 -o "$SLURM_JOB_USER" "$dir"
rm -f "$dir/ports"
# The job key (docs/security.md "Who belongs to a job"): one per job and node, private to
# the job's user, so that only the job's own ranks prove membership to this collector
# (trainscope-env.sh hands them its path) and nothing is written to the user's home (the
# transient unit below sees the file system read-only but for $dir).
if [ ! -s "$dir/job.key" ]; then
  (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$dir/job.key" && echo >>"$dir/job.key")
fi
chown "$SLURM_JOB_USER" "$dir/job.key"
chmod 0600 "$dir/job.key"
unit="trainscope-collector-$SLURM_JOB_ID"

if command -v systemd-run >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  # A transient unit: the epilog stops it by name, and it is hardened like the packaged unit.
  systemd-run --quiet --unit="$unit" --uid="$SLURM_JOB_USER" \
    --property=NoNewPrivileges=yes --property=ProtectSystem=strict \
    --property=ReadWritePaths="$dir" --property=PrivateTmp=yes \
    "$collector" --listen=127.0.0.1:0 --feed=tcp://127.0.0.1:* --snapshot=tcp://127.0.0.1:* \
    --data-dir="$dir/data" --port-file="$dir/ports" --job-key-file="$dir/job.key"
else
  # No systemd: a session of its own, its pid for the epilog.
  su -s /bin/sh "$SLURM_JOB_USER" -c "exec setsid '$collector' --listen=127.0.0.1:0 \
    --feed='tcp://127.0.0.1:*' --snapshot='tcp://127.0.0.1:*' --data-dir='$dir/data' \
    --port-file='$dir/ports' --job-key-file='$dir/job.key' >'$dir/collector.log' 2>&1 \
    </dev/null & echo \$! >'$dir/pid'"
fi

# The job starts once the collector listens (its port file appears), or fails here.
tries=0
while [ ! -s "$dir/ports" ]; do
  tries=$((tries + 1))
  if [ "$tries" -gt 100 ]; then
    echo "trainscope prolog: the collector did not start on $(hostname) (see $dir)" >&2
    exit 1
  fi
  sleep 0.1
done
