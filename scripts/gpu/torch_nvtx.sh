#!/usr/bin/env bash
# A PyTorch loop annotated with torch.cuda.nvtx, nvtx.annotate (own domain) and emit_nvtx, none of it in
# nvtxsim's domain (issue 12: any NVTX export is reported without flags, names on one line). On the GPU
# machine, from the checkout root:
#     source .gpu/env.sh && OUT=/some/dir bash scripts/gpu/torch_nvtx.sh
# Writes $OUT/torch_nvtx_h200.sqlite.gz (commit it to tests/data/gpu/); versions, the command, timings and
# nvtxsim's report go to stdout. Well under a minute. Dry run elsewhere: TORCH_NVTX_DEVICE=cpu.
set -uo pipefail
: "${NSYS:?source .gpu/env.sh first (NSYS unset)}" "${OUT:?OUT must name the folder for results}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
DEVICE=${TORCH_NVTX_DEVICE:-cuda}
name=torch_nvtx_h200
export PYTHONUNBUFFERED=1
echo "nsys: $("$NSYS" --version 2>&1)"
python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
prof=("$NSYS" profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --export=sqlite --force-overwrite=true
      -o "$work/$name" python3 scripts/gpu/torch_nvtx_workload.py --device "$DEVICE")
echo "\$NSYS ${prof[*]:1}" | sed -e "s#$work/##g"
t0=$SECONDS
timeout 120 "${prof[@]}" > "$work/$name.out" 2>&1 || echo "nsys profile failed (status $?)"
tr '\r' '\n' < "$work/$name.out" | grep -v -e '%' -e '^$' | sed -e "s#$work/##g" | tail -n 8
if [ -f "$work/$name.sqlite" ]; then
  gzip -9 -c "$work/$name.sqlite" > "$OUT/$name.sqlite.gz"
  echo "$((SECONDS - t0)) s, sqlite $(stat -c %s "$work/$name.sqlite") B, gz $(stat -c %s "$OUT/$name.sqlite.gz") B"
  timeout 60 python3 -m nvtxsim report "$OUT/$name.sqlite.gz" 2>&1 | cut -c1-220 | head -n 40
else
  echo "no sqlite written"
fi
echo "total ${SECONDS}s"
