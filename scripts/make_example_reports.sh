#!/usr/bin/env bash
# Regenerate the example reports under reports/ from the shipped H200 export.
set -euo pipefail
cd "$(dirname "$0")/.."
src=tests/data/gpu/demo_h200.sqlite.gz
for fmt in table markdown json csv; do
  ext=$fmt; [ "$fmt" = table ] && ext=txt; [ "$fmt" = markdown ] && ext=md
  python3 -m nvtxsim report "$src" --format "$fmt" -o "reports/demo_h200_report.$ext" --force
done
echo "wrote reports/demo_h200_report.{txt,md,json,csv}"
