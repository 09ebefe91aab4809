#!/usr/bin/env bash
# Exports for the benchmark of compare's regression gate on the GPU host: many runs of one loop, unchanged
# (pairs of identical code) and with a planted slowdown of policy (0.08, 0.15, 0.3 ms: 9, 17, 34 % of the
# 0.89 ms iteration measured, reports/compare-gate.md), four captures at a time (a shared, noisy host).  -> $OUT/gate_runs.tar
set -uo pipefail
d=/tmp/gate; rm -rf $d; mkdir -p $d
jobs=(); for i in $(seq -w 1 24); do jobs+=("base_$i 0"); done
for ms in 0.08 0.15 0.3; do for i in $(seq -w 1 8); do jobs+=("slow${ms}_$i $ms"); done; done
one() { set -- $1; timeout 60 "$NSYS" profile -t cuda,nvtx --sample=none --cpuctxsw=none --export=sqlite --force-overwrite=true \
  -o /tmp/gate/$1 python3 scripts/gpu/diagnosis_workload.py --warmup none --iterations 80 --num-envs 1024 --update-every 0 \
  --slow-policy-ms $2 > /tmp/gate/$1.out 2>&1; rm -f /tmp/gate/$1.nsys-rep; gzip -9 /tmp/gate/$1.sqlite; }
export -f one
printf '%s\n' "${jobs[@]}" | xargs -P 4 -I{} bash -c 'one "$@"' _ {}
ls $d/*.sqlite.gz | wc -l; du -sh $d
tar -C $d -cf $OUT/gate_runs.tar .
