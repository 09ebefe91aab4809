#!/usr/bin/env bash
# What the findings cost (issue 14): scripts/bench_report.py --findings-ab on the demo export ×10 and ×100,
# the default report (findings on) against --no-findings, interleaved pairs in one run, on a quiet machine
# (no GPU needed; the H200 host is the quiet one). From the checkout root:
#     source .gpu/env.sh && OUT=/some/dir bash scripts/gpu/bench_findings.sh
# Writes into $OUT: bench_findings.txt (the log and tables) and bench_findings.json. About 1-2 minutes.
set -uo pipefail
: "${OUT:?OUT must name the folder for results}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1
{
  nproc; grep -m1 "model name" /proc/cpuinfo; uptime
  timeout "${BENCH_S:-170}" python3 scripts/bench_report.py --sizes "${SIZES:-10,100}" --nsys-max 0 --repeat 1 \
    --findings-ab "${PAIRS:-7}" --work /tmp/bench_findings --json "$OUT/bench_findings.json"
  echo "bench rc=$?"
} 2>&1 | tee "$OUT/bench_findings.txt"
rm -rf /tmp/bench_findings
