#!/usr/bin/env bash
# What the findings cost (issues 14, 21): scripts/bench_report.py --findings-ab on an export ×10 and ×100 (BASE,
# default the demo export), the default report (findings, warm-up detection, steady state) against --no-findings
# and against --keep-warm-up, interleaved triples in one run, on a quiet machine
# (no GPU needed; the H200 host is the quiet one). From the checkout root:
#     source .gpu/env.sh && OUT=/some/dir bash scripts/gpu/bench_findings.sh
# Writes into $OUT: bench_findings.txt (the log and tables) and bench_findings.json. About 2-5 minutes.
set -uo pipefail
: "${OUT:?OUT must name the folder for results}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1
{
  nproc; grep -m1 "model name" /proc/cpuinfo; uptime
  timeout "${BENCH_S:-400}" python3 scripts/bench_report.py --sizes "${SIZES:-10,100}" --nsys-max 0 --repeat 1 \
    ${BASE:+--base "$BASE"} \
    --findings-ab "${PAIRS:-7}" --work /tmp/bench_findings --json "$OUT/bench_findings.json"
  echo "bench rc=$?"
} 2>&1 | tee "$OUT/bench_findings.txt"
rm -rf /tmp/bench_findings
