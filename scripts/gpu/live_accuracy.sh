#!/usr/bin/env bash
# Live timing (issue 16) against nsys on the H200: the demo loop (CUDA) with NVTXSIM_LIVE under nsys 2025.3.
# From the checkout root on the GPU machine:
#     source .gpu/env.sh && OUT=/some/dir bash scripts/gpu/live_accuracy.sh
# Writes into $OUT (default ./gpu-live), for the demo (live_accuracy) and a heavier demo (live_heavy):
# NAME.jsonl (the live lines), NAME.sqlite.gz (the export of the same run); and live_accuracy.txt
# (what it prints: the demos' log tails, the comparison of live vs `nvtxsim report`
# (scripts/live_vs_report.py) and the overhead benchmark (scripts/bench_live.py, off/on/sampled on CUDA)).
# Knobs (for a dry run elsewhere): DEMO_DEVICE (cuda), ITERATIONS (100), SKIP_ACCURACY=1 (both demos),
# SKIP_HEAVY=1, SKIP_BENCH=1.
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
# accuracy NAME DEMO_ARGS...: the demo under nsys with live timing, then live vs report
accuracy() {
  local name=$1; shift
  local demo=("$PY" scripts/demo_env.py --device "$DEV" "$@" --decimation 4 --update-every 16 --warmup 10 --seed 0)
  echo "== $(date +%T) $name: \$NSYS profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --cuda-graph-trace=node --export=sqlite -o $name ${demo[*]}   (NVTXSIM_LIVE=$name.jsonl NVTXSIM_LIVE_EVERY=20)"
  rm -f "$OUT/$name.jsonl"
  NVTXSIM_LIVE="$OUT/$name.jsonl" NVTXSIM_LIVE_EVERY=20 timeout 100 \
    "$NSYS" profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --cuda-graph-trace=node --export=sqlite \
    --force-overwrite=true -o "$tmp/$name" "${demo[@]}" > "$tmp/$name.log" 2>&1
  echo "profile rc=$?"; grep -v '%' "$tmp/$name.log" | tail -8
  if [ -f "$tmp/$name.sqlite" ]; then
    gzip -9 -c "$tmp/$name.sqlite" > "$OUT/$name.sqlite.gz"
    ls -l "$OUT/$name".*
    timeout 120 "$PY" scripts/live_vs_report.py "$OUT/$name.jsonl" "$OUT/$name.sqlite.gz"
    echo "live_vs_report rc=$?"
  else
    echo "no export written"
  fi
}

echo "== $(date +%T) nsys $("$NSYS" --version 2>&1 | tail -1)"
# The demo of the other GPU runs (launch-bound: the GPU mostly waits for the CPU's launches) ...
[ -z "${SKIP_ACCURACY:-}" ] && accuracy live_accuracy --num-envs 512 --camera 32x32 --iterations "$ITERS"
# ... and a heavier one (more envs, larger camera tiles: more of the GPU time is work, less is waiting).
[ -z "${SKIP_ACCURACY:-}${SKIP_HEAVY:-}" ] && accuracy live_heavy --num-envs 16384 --camera 64x64 --iterations 40
if [ -z "${SKIP_BENCH:-}" ]; then
  echo "== $(date +%T) overhead: python scripts/bench_live.py --demo-args '--device $DEV --num-envs 512 --camera 32x32 --decimation 4 --update-every 16' --iterations 20 --repeats 40 --sample 10"
  timeout 150 "$PY" scripts/bench_live.py --demo-args "--device $DEV --num-envs 512 --camera 32x32 --decimation 4 --update-every 16" \
    --iterations 20 --repeats 40 --sample 10
  echo "bench rc=$?"
fi
echo "== $(date +%T) done"
