#!/usr/bin/env bash
# Live GPU busy time from CUPTI (issue 25) on the H200, self-diagnosing: every step prints its result and exit code.
#  1 probe (scripts/gpu/live_cupti_probe.py): libcupti found; ctypes buffers parsed = CUPTI's own walk; marker memsets
#    come back with value + correlation id; kernels between markers = those launched there (this thread, another
#    thread); µs per launch with CUPTI off / the mode's kinds / + RUNTIME + EXTERNAL_CORRELATION; µs per marker
#  2 check: a short live cupti run (attribution fraction, the collector's counters), exit code (139 = the old segfault)
#  3 cost, interleaved in one process: plain / events / cupti / cupti 1-in-10 / cupti + runtime API records, 5k and
#    20k launches per iteration (ms per iteration, median of the blocks, % over plain; goal <= 2 %)
#  4 accuracy: the same loop live with CUPTI, live with events, under nsys; per-phase live busy vs the report's
#    (+ nsys stats nvtx_gpu_proj_sum, head); attribution fraction of the cupti run
# From the checkout root on the GPU machine:   source .gpu/env.sh && OUT=/tmp/lc bash scripts/gpu/live_cupti.sh
# Here (CPU, nsys 2022.4: plumbing only, no GPU numbers):   DRY_RUN=1 bash scripts/gpu/live_cupti.sh
# Knobs: LAUNCHES ("5000 20000": cost), ACC_LAUNCHES (10000), ITERATIONS (30), ROUNDS (6), BLOCK (10).
# Writes into $OUT (7 files): live_cupti.txt (everything printed), check.jsonl, cupti.jsonl, events.jsonl,
# report.json, nsys.sqlite.gz, nsys.log.
set -u
OUT=${OUT:-$PWD/gpu-live-cupti}
mkdir -p "$OUT"
exec > >(tee "$OUT/live_cupti.txt") 2>&1
PY=${PYTHON:-python3}
W=scripts/gpu/live_cupti_workload.py
P=scripts/gpu/live_cupti_probe.py
export PYTHONUNBUFFERED=1 NVTXSIM_LIVE_CUPTI_EXPERIMENTAL=1  # the flag: read only by checkouts from before its removal
unset CUDA_INJECTION64_PATH
if [ -n "${DRY_RUN:-}" ]; then
  DRY=(--dry-run); NSYS=${NSYS:-nsys}; TRACE=nvtx; LAUNCHES=${LAUNCHES:-5000}; ROUNDS=${ROUNDS:-2}; BLOCK=${BLOCK:-3}
  ITERATIONS=${ITERATIONS:-6}
else
  DRY=()
  if [ -z "${NSYS:-}" ] && [ -f .gpu/env.sh ]; then source .gpu/env.sh; fi
  : "${NSYS:?source .gpu/env.sh first (NSYS unset)}"
  TRACE=cuda,nvtx,osrt
fi
LAUNCHES=${LAUNCHES:-5000 20000}; ROUNDS=${ROUNDS:-6}; BLOCK=${BLOCK:-10}; ITERATIONS=${ITERATIONS:-30}
ACC=${ACC_LAUNCHES:-10000}
rc_line() { echo "$1 rc=$2$([ "$2" = 139 ] && echo ' (SEGFAULT)')$([ "$2" = 124 ] && echo ' (TIMEOUT)')"; }

echo "== $(date +%T) env ($(git rev-parse --short HEAD 2>/dev/null))"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
"$PY" -c "import importlib.metadata as m
for d in ('cupti-python', 'torch', 'nvidia-cuda-cupti', 'nvidia-cuda-cupti-cu12'):
    try: print(d, m.version(d))
    except Exception as e: print(d, 'not installed')" 2>&1 | tail -4
"$NSYS" --version 2>&1 | tail -1

if [ -z "${DRY_RUN:-}" ]; then
  echo "== $(date +%T) 1 probe: $PY $P probe"
  timeout 180 "$PY" "$P" probe; rc_line probe $?
  timeout 60 "$PY" "$P" layouts; rc_line layouts $?
  echo "== $(date +%T) 2 check: a short live cupti run"
  rm -f "$OUT/check.jsonl"
  timeout 120 "$PY" "$W" run --launches 2000 --iterations 6 --warmup 1 --every 3 --live cupti "$OUT/check.jsonl"
  rc_line check $?
  head -c 1500 "$OUT/check.jsonl"; echo
fi

for L in $LAUNCHES; do
  B=$BLOCK; [ "$L" -ge 20000 ] && B=$(( (BLOCK + 1) / 2 ))
  echo "== $(date +%T) 3 cost: $PY $W cost --launches $L --block $B --rounds $ROUNDS ${DRY[*]}"
  timeout 300 "$PY" "$W" cost --launches "$L" --block "$B" --rounds "$ROUNDS" "${DRY[@]}"
  rc_line "cost $L" $?
done

echo "== $(date +%T) 4 accuracy: $ACC launches per iteration, $ITERATIONS iterations: live CUPTI, live events, nsys"
for mode in cupti events; do
  rm -f "$OUT/$mode.jsonl"
  timeout 200 "$PY" "$W" run --launches "$ACC" --iterations "$ITERATIONS" --every 10 --live "$mode" "$OUT/$mode.jsonl" \
    "${DRY[@]}"
  rc_line "run $mode" $?
  timeout 60 "$PY" -m nvtxsim live "$OUT/$mode.jsonl"
done
rm -f "$OUT/nsys.sqlite" "$OUT/nsys.nsys-rep"
timeout 300 "$NSYS" profile -t "$TRACE" --sample=none --cpuctxsw=none --export=sqlite --force-overwrite=true \
  -o "$OUT/nsys" "$PY" "$W" run --launches "$ACC" --iterations "$ITERATIONS" "${DRY[@]}" > "$OUT/nsys.log" 2>&1
rc_line nsys $?; grep -v '%' "$OUT/nsys.log" | tail -4
if [ -f "$OUT/nsys.sqlite" ]; then
  timeout 240 "$PY" -m nvtxsim report "$OUT/nsys.sqlite" --domain nvtxsim --view overlap --format json > "$OUT/report.json"
  rc_line report $?
  timeout 60 "$PY" "$W" compare "$OUT/cupti.jsonl" "$OUT/report.json" --events "$OUT/events.jsonl"
  rc_line compare $?
  if [ -z "${DRY_RUN:-}" ] && [ "$SECONDS" -lt 420 ]; then
    echo "-- nsys stats nvtx_gpu_proj_sum (ns; the whole run, warm-up excluded by no ranges)"
    timeout 120 "$NSYS" stats --report nvtx_gpu_proj_sum --format csv -o - "$OUT/nsys.sqlite" 2>&1 | head -14 | cut -c1-220
  fi
  gzip -9 -f "$OUT/nsys.sqlite" && rm -f "$OUT/nsys.nsys-rep"
else
  echo "no export written"
fi
ls -l "$OUT"
echo "== $(date +%T) done"
