#!/usr/bin/env bash
# Planted-bottleneck captures for the report's findings (issue 14): scripts/gpu/findings_workload.py once
# with one known problem per phase and once --clean, each under nsys. On the GPU machine, from the
# checkout root:
#     source .gpu/env.sh && OUT=/some/dir bash scripts/gpu/findings.sh
# Writes into $OUT: findings_planted.sqlite.gz and findings_clean.sqlite.gz (a few MB each; commit them to
# tests/data/gpu/). Versions, the exact commands and timings go to stdout. Well under 3 minutes.
# Knobs for a dry run elsewhere: FINDINGS_DEVICE (cuda), FINDINGS_ARGS (extra workload arguments).
set -uo pipefail
: "${NSYS:?source .gpu/env.sh first (NSYS unset)}" "${OUT:?OUT must name the folder for results}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
DEVICE=${FINDINGS_DEVICE:-cuda}
export PYTHONUNBUFFERED=1
echo "nsys: $("$NSYS" --version 2>&1)"
python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda); print("gpu", torch.cuda.get_device_name() if torch.cuda.is_available() else None)' 2>&1
for variant in planted clean; do
  name="findings_$variant"
  flag=(); [ "$variant" = clean ] && flag=(--clean)
  prof=("$NSYS" profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --cuda-graph-trace=node --export=sqlite
        --force-overwrite=true -o "$work/$name"
        python3 scripts/gpu/findings_workload.py --device "$DEVICE" "${flag[@]}" ${FINDINGS_ARGS:-})
  t0=$SECONDS
  echo "\$NSYS ${prof[*]:1}" | sed -e "s#$work/##g"
  timeout 75 "${prof[@]}" > "$work/$name.out" 2>&1 || echo "$name: nsys profile failed (status $?)"
  tr '\r' '\n' < "$work/$name.out" | grep -v -e '%' -e '^$' | sed -e "s#$work/##g" | tail -n 12  # no progress bars
  if [ -f "$work/$name.sqlite" ]; then
    gzip -9 -c "$work/$name.sqlite" > "$OUT/$name.sqlite.gz"
    echo "$name: $((SECONDS - t0)) s, sqlite $(stat -c %s "$work/$name.sqlite") B, gz $(stat -c %s "$OUT/$name.sqlite.gz") B"
    python3 -c "import nvtxsim.analysis.findings" 2>/dev/null && timeout 30 python3 -m nvtxsim report "$work/$name.sqlite" --view iterations --skip-first 2 2>&1 | head -n 14
  else
    echo "$name: no sqlite written"
  fi
  rm -f "$work/$name".*
done
echo "total ${SECONDS}s"
