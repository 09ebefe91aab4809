#!/usr/bin/env bash
# Report speed before/after a change, in one run on the quiet H200 host: scripts/bench_ab.py with tree A
# ($BEFORE, default .lead/before: the nvtxsim/ package of the older commit, carried) and tree B (this checkout).
# This session: A = 4a5a303 (before the stage refactor), B = main. On the GPU machine, from the checkout root:
#     OUT=/some/dir bash scripts/gpu/bench_ab.sh        (writes $OUT/bench_ab.txt)
set -uo pipefail
: "${OUT:?OUT must name the folder for results}"
mkdir -p "$OUT"
A=${BEFORE:-.lead/before}
{
  nproc; grep -m1 "model name" /proc/cpuinfo; uptime
  echo "== summary report (B without its findings block: the same output as A)"
  python3 scripts/bench_ab.py --a "$A" --b . --sizes "${SIZES:-1,10,100}" --pairs "${PAIRS:-7}" --b-args "--format json --no-findings"
  echo "== summary report, B with findings (the default)"
  python3 scripts/bench_ab.py --a "$A" --b . --sizes "${SIZES:-1,10,100}" --pairs "${PAIRS:-7}"
  echo "== every view"
  python3 scripts/bench_ab.py --a "$A" --b . --sizes 1,10 --pairs 5 --a-args "--view all --format json" --b-args "--view all --format json --no-findings"
} 2>&1 | tee "$OUT/bench_ab.txt"
