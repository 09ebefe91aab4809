#!/usr/bin/env bash
# Live timing (issue 16) against nsys on the H200: the demo loop (CUDA) with NVTXSIM_LIVE under nsys 2025.3.
# From the checkout root on the GPU machine:
#     source .gpu/env.sh && OUT=/some/dir bash scripts/gpu/live_accuracy.sh
# Writes into $OUT (default ./gpu-live): live_accuracy.jsonl (the live lines), live_accuracy.sqlite.gz
# (the export of the same run) and live_accuracy.txt (what it prints: the demo's log tail, the comparison of live vs `nvtxsim report`
# (scripts/live_vs_report.py) and the overhead benchmark (scripts/bench_live.py, off/on/sampled on CUDA)).
# Knobs (for a dry run elsewhere): DEMO_DEVICE (cuda), ITERATIONS (100), SKIP_BENCH=1.
set -u
OUT=${OUT:-$PWD/gpu-live}
mkdir -p "$OUT"
exec > >(tee "$OUT/live_accuracy.txt") 2>&1
if [ -z "${NSYS:-}" ] && [ -f .gpu/env.sh ]; then source .gpu/env.sh; fi
: "${NSYS:?source .gpu/env.sh first (NSYS unset)}"
PY=${PYTHON:-python3}
DEV=${DEMO_DEVICE:-cuda}
ITERS=${ITERATIONS:-100}
export PYTHONUNBUFFERED=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
demo=("$PY" scripts/demo_env.py --device "$DEV" --num-envs 512 --camera 32x32 --decimation 4 --update-every 16
      --warmup 10 --seed 0 --iterations "$ITERS")

echo "== $(date +%T) nsys $("$NSYS" --version 2>&1 | tail -1)"
echo "\$NSYS profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --cuda-graph-trace=node --export=sqlite -o live_accuracy ${demo[*]}   (NVTXSIM_LIVE=live_accuracy.jsonl NVTXSIM_LIVE_EVERY=20)"
rm -f "$OUT/live_accuracy.jsonl"
NVTXSIM_LIVE="$OUT/live_accuracy.jsonl" NVTXSIM_LIVE_EVERY=20 timeout 150 \
  "$NSYS" profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --cuda-graph-trace=node --export=sqlite \
  --force-overwrite=true -o "$tmp/live_accuracy" "${demo[@]}" > "$tmp/profile.log" 2>&1
echo "profile rc=$?"; grep -v '%' "$tmp/profile.log" | tail -15
if [ -f "$tmp/live_accuracy.sqlite" ]; then
  gzip -9 -c "$tmp/live_accuracy.sqlite" > "$OUT/live_accuracy.sqlite.gz"
  ls -l "$OUT"
  echo "== $(date +%T) live vs report"
  timeout 120 "$PY" scripts/live_vs_report.py "$OUT/live_accuracy.jsonl" "$OUT/live_accuracy.sqlite.gz"
  echo "live_vs_report rc=$?"
else
  echo "no export written"
fi
if [ -z "${SKIP_BENCH:-}" ]; then
  echo "== $(date +%T) overhead: python scripts/bench_live.py --demo-args '--device $DEV --num-envs 512 --camera 32x32 --decimation 4 --update-every 16' --iterations 50 --repeats 7 --sample 10"
  timeout 150 "$PY" scripts/bench_live.py --demo-args "--device $DEV --num-envs 512 --camera 32x32 --decimation 4 --update-every 16" \
    --iterations 50 --repeats 7 --sample 10
  echo "bench rc=$?"
fi
echo "== $(date +%T) done"
