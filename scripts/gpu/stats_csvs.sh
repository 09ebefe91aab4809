#!/usr/bin/env bash
# nsys's own per-range reports (the anchors of tests/test_report_agreement.py) for committed GPU exports that
# lack them. On the GPU machine, from the checkout root:
#     source .gpu/env.sh && OUT=/some/dir bash scripts/gpu/stats_csvs.sh [EXPORT.sqlite.gz ...]
# Default: every tests/data/gpu/**/NAME.sqlite.gz without NAME_nvtx_sum.csv beside it. Writes into $OUT, per
# export, NAME_<report>.csv (gzipped when over 1 MB), as make_exports.sh does; commit them beside the export.
set -uo pipefail
: "${NSYS:?source .gpu/env.sh first (NSYS unset)}" "${OUT:?OUT must name the folder for results}"
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
reports=nvtx_sum,nvtx_gpu_proj_sum,nvtx_gpu_proj_trace,nvtx_kern_sum
if [ $# -eq 0 ]; then
  mapfile -t exports < <(find tests/data/gpu -name '*.sqlite.gz' | sort | while read -r gz; do
    [ -f "${gz%.sqlite.gz}_nvtx_sum.csv" ] || echo "$gz"; done)
else
  exports=("$@")
fi
echo "nsys: $("$NSYS" --version 2>&1)"
for gz in "${exports[@]}"; do
  name=$(basename "$gz" .sqlite.gz)
  gunzip -c "$gz" > "$work/$name.sqlite"
  echo "\$NSYS stats --format csv -o $name -r $reports $name.sqlite"
  "$NSYS" stats --format csv -o "$work/$name" -r "$reports" "$work/$name.sqlite" > "$work/$name.log" 2>&1 \
    || { echo "stats_csvs: $name: nsys stats failed"; tail -5 "$work/$name.log"; }
  for f in "$work/${name}"_*.csv; do
    [ -f "$f" ] || continue
    if [ "$(stat -c %s "$f")" -gt 1000000 ]; then gzip -9 -c "$f" > "$OUT/$(basename "$f").gz"; else cp "$f" "$OUT/"; fi
  done
  rm -f "$work/$name.sqlite"
done
ls -l "$OUT"
