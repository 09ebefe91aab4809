#!/usr/bin/env bash
# Made this session's exports: run_batch.sh findings:150 rsl_rl:150 live_accuracy:200; scaling:300; torch_nvtx:120 live_accuracy:240 bench_findings:180; stats_csvs:200 bench_findings:180 live_accuracy:200; live_accuracy:150 (SKIP_ACCURACY=1) bench_findings:180; bench_ab:330 bench_findings:180.
# run queued scripts/gpu/*.sh jobs, each into its own folder, tar each folder into $OUT.
#   source .gpu/env.sh && bash scripts/gpu/run_batch.sh JOB[:SECONDS] ...
set -uo pipefail
FINAL=$OUT
export PYTHONUNBUFFERED=1
{
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
for spec in "$@"; do
  job=${spec%%:*}; secs=${spec#*:}; [ "$secs" = "$spec" ] && secs=200
  d=$(mktemp -d); echo; echo "== $(date +%T) [$SECONDS s] $job (limit $secs s)"
  OUT=$d timeout "$secs" bash scripts/gpu/$job.sh; echo "== $job exit $?"
  ls -la "$d"
  tar czf "$FINAL/$job.tar.gz" -C "$d" .
done
echo "== done [$SECONDS s]"
} 2>&1 | tee "$FINAL/batch_log.txt"
