#!/usr/bin/env bash
# Regenerate the example reports under reports/ from the shipped H200 export.
set -euo pipefail
cd "$(dirname "$0")/.."
src=tests/data/gpu/demo_h200.sqlite.gz
for fmt in table markdown json csv; do
  ext=$fmt; [ "$fmt" = table ] && ext=txt; [ "$fmt" = markdown ] && ext=md
  python3 -m nvtxsim report "$src" --format "$fmt" -o "reports/demo_h200_report.$ext" --force
done
# What an 80- and a 120-column terminal show (a real pty; colour codes and CRs removed).
for cols in 80 120; do
  script -qec "stty cols $cols rows 60; python3 -m nvtxsim report $src" /dev/null | sed 's/\x1b\[[0-9;]*m//g; s/\r$//' > "reports/terminal-$cols.txt"
done
echo "wrote reports/demo_h200_report.{txt,md,json,csv} and reports/terminal-{80,120}.txt"
