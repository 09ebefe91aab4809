#!/usr/bin/env bash
# Live GPU busy time from CUPTI (issue 25) on the H200: (a) cost, interleaved in one process, of plain / events-live /
# cupti-live (+ cupti 1-in-10) on a loop of 5k and 20k launches per iteration; (b) accuracy: the same loop once with
# NVTXSIM_LIVE_GPU=cupti, once with CUDA events, once under nsys; per-phase live busy time vs `nvtxsim report`'s GPU
# busy (+ the overlap view's other-thread work), with ratios. From the checkout root on the GPU machine, with
# cupti-python's wheel in .gpu/whl (../shared/tools/gpu-nsys/prepare.sh with EXTRA_WHEELS="cupti-python==13.0.1"):
#     source .gpu/env.sh && OUT=/tmp/lc bash scripts/gpu/live_cupti.sh
# Here (CPU, nsys 2022.4: plumbing only, no GPU numbers):   DRY_RUN=1 bash scripts/gpu/live_cupti.sh
# Knobs: LAUNCHES ("5000 20000": cost), ACC_LAUNCHES (10000), ITERATIONS (40), ROUNDS (6), BLOCK (10).
# Writes into $OUT: live_cupti.txt (everything printed), cupti.jsonl, events.jsonl, check.jsonl, report.json,
# nsys.sqlite.gz, nsys.log.
set -u
OUT=${OUT:-$PWD/gpu-live-cupti}
mkdir -p "$OUT"
exec > >(tee "$OUT/live_cupti.txt") 2>&1
PY=${PYTHON:-python3}
W=scripts/gpu/live_cupti_workload.py
export PYTHONUNBUFFERED=1
if [ -n "${DRY_RUN:-}" ]; then
  DRY=(--dry-run); NSYS=${NSYS:-nsys}; TRACE=nvtx; LAUNCHES=${LAUNCHES:-5000}; ROUNDS=${ROUNDS:-2}; BLOCK=${BLOCK:-3}
  ITERATIONS=${ITERATIONS:-6}
else
  DRY=()
  if [ -z "${NSYS:-}" ] && [ -f .gpu/env.sh ]; then source .gpu/env.sh; fi
  : "${NSYS:?source .gpu/env.sh first (NSYS unset)}"
  TRACE=cuda,nvtx,osrt
fi
LAUNCHES=${LAUNCHES:-5000 20000}; ROUNDS=${ROUNDS:-6}; BLOCK=${BLOCK:-10}; ITERATIONS=${ITERATIONS:-40}
ACC=${ACC_LAUNCHES:-10000}

echo "== $(date +%T) env"
nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"
"$PY" -c "import importlib.metadata as m; print('cupti-python', m.version('cupti-python'))" 2>&1 | tail -1
"$NSYS" --version 2>&1 | tail -1

if [ -z "${DRY_RUN:-}" ]; then
  echo "== $(date +%T) probe: do the markers come back? $PY $W probe"
  timeout 120 "$PY" "$W" probe; echo "probe rc=$?"
fi
# the marker live timing uses: cuDriverGetVersion, else cuDeviceGetCount when the first gave no kernels
if [ -z "${DRY_RUN:-}" ]; then
  timeout 120 "$PY" "$W" run --launches 2000 --iterations 4 --warmup 1 --live cupti "$OUT/check.jsonl"
  cat "$OUT/check.jsonl"
  if ! grep -q '"kernels"' "$OUT/check.jsonl" 2>/dev/null; then
    export NVTXSIM_LIVE_CUPTI_MARKER=cuDeviceGetCount
    echo "cuDriverGetVersion markers gave no kernels: NVTXSIM_LIVE_CUPTI_MARKER=$NVTXSIM_LIVE_CUPTI_MARKER from here on"
  fi
fi

for L in $LAUNCHES; do
  echo "== $(date +%T) cost: $PY $W cost --launches $L --block $BLOCK --rounds $ROUNDS ${DRY[*]}"
  timeout 400 "$PY" "$W" cost --launches "$L" --block "$BLOCK" --rounds "$ROUNDS" "${DRY[@]}"
  echo "cost rc=$?"
done

echo "== $(date +%T) accuracy: the same loop ($ACC launches per iteration, $ITERATIONS iterations) live with CUPTI, live with CUDA events, under nsys"
for mode in cupti events; do
  rm -f "$OUT/$mode.jsonl"
  timeout 300 "$PY" "$W" run --launches "$ACC" --iterations "$ITERATIONS" --live "$mode" "$OUT/$mode.jsonl" "${DRY[@]}"
  echo "run $mode rc=$?"
  timeout 60 "$PY" -m nvtxsim live "$OUT/$mode.jsonl"
done
rm -f "$OUT/nsys.sqlite" "$OUT/nsys.nsys-rep"
timeout 400 "$NSYS" profile -t "$TRACE" --sample=none --cpuctxsw=none --export=sqlite --force-overwrite=true \
  -o "$OUT/nsys" "$PY" "$W" run --launches "$ACC" --iterations "$ITERATIONS" "${DRY[@]}" > "$OUT/nsys.log" 2>&1
echo "nsys rc=$?"; grep -v '%' "$OUT/nsys.log" | tail -5
if [ -f "$OUT/nsys.sqlite" ]; then
  timeout 300 "$PY" -m nvtxsim report "$OUT/nsys.sqlite" --domain nvtxsim --view overlap --format json > "$OUT/report.json"
  echo "report rc=$?"
  timeout 60 "$PY" "$W" compare "$OUT/cupti.jsonl" "$OUT/report.json" --events "$OUT/events.jsonl"
  echo "compare rc=$?"
  gzip -9 -f "$OUT/nsys.sqlite" && rm -f "$OUT/nsys.nsys-rep"
  ls -l "$OUT"
else
  echo "no export written"
fi
echo "== $(date +%T) done"
