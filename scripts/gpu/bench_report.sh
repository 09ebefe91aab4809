#!/usr/bin/env bash
# ONE device call on the H200: `nvtxsim profile` check (scripts/gpu/check_profile.sh, if present), then the
# report benchmark (scripts/bench_report.py against nsys 2025.3). From the checkout root:
#     source .gpu/env.sh && bash scripts/gpu/bench_report.sh
# Results in $OUT: log.txt, bench_report.json, profile/summary.txt, profile/profile.tar.gz.
set -uo pipefail
: "${NSYS:?source .gpu/env.sh first}" "${OUT:?OUT must name the folder for results}"
export PYTHONUNBUFFERED=1
mkdir -p "$OUT/profile"
step() { echo; echo "== $(date +%T) [$SECONDS s] $*"; }
{
  step facts
  nproc; grep -m1 "model name" /proc/cpuinfo; free -g | head -2; df -h /tmp | tail -1
  python3 -c 'import numpy, sqlite3, sys; print("python", sys.version.split()[0], "numpy", numpy.__version__, "sqlite", sqlite3.sqlite_version)'
  "$NSYS" --version
  if [ -f scripts/gpu/check_profile.sh ]; then
    step "check_profile.sh (nvtxsim profile under nsys 2025.3)"
    OUT=/tmp/profile STEP_TIMEOUT=${PROFILE_STEP_S:-90} timeout "${PROFILE_S:-170}" bash scripts/gpu/check_profile.sh > /tmp/profile.log 2>&1
    echo "check_profile.sh rc=$?"
    cp /tmp/profile/summary.txt "$OUT/profile/" 2>/dev/null
    tail -25 /tmp/profile.log
    tar czf "$OUT/profile/profile.tar.gz" -C /tmp profile profile.log 2>/dev/null
  fi
  step "bench_report.py"
  timeout "${BENCH_S:-330}" python3 scripts/bench_report.py --sizes "${SIZES:-1,10,100,1000}" --nsys-timeout "${NSYS_TIMEOUT:-120}" \
    --cache --cache-max 100 --ranks "${RANKS:-4}" --rank-size "${RANK_SIZE:-50}" --work /tmp/bench --json "$OUT/bench_report.json"
  echo "bench rc=$?"
  step done
} 2>&1 | tee "$OUT/log.txt"
