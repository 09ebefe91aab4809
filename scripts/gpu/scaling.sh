#!/usr/bin/env bash
# Sweep of scripts/gpu/scaling_workload.py over the number of envs N, each run under nsys with the GPU
# memory trace, for `nvtxsim scaling` (tests/data/gpu/scaling/). On the GPU machine, from the checkout root:
#     source .gpu/env.sh && OUT=/some/dir bash scripts/gpu/scaling.sh
# Writes into $OUT: scaling_N.sqlite.gz for each N (a few hundred KB each) and scaling_log.txt
# (versions, the exact commands, timings, and the scaling table of the sweep). Under 3 minutes: a run
# that would start after SCALING_BUDGET seconds (default 150) is skipped and said so in the log.
# Knobs for a dry run elsewhere: SCALING_DEVICE (cuda), SCALING_NS, SCALING_PER_ENV, SCALING_ITERS.
set -uo pipefail
: "${NSYS:?source .gpu/env.sh first (NSYS unset)}" "${OUT:?OUT must name the folder for results}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
DEVICE=${SCALING_DEVICE:-cuda}
NS=(${SCALING_NS:-1024 2048 4096 8192 16384})
PER_ENV=${SCALING_PER_ENV:-4096}
ITERS=${SCALING_ITERS:-12}
BUDGET=${SCALING_BUDGET:-150}
log="$OUT/scaling_log.txt"
export PYTHONUNBUFFERED=1
# Every allocation goes to the driver, so the memory trace sees each tensor (not PyTorch's cache).
export PYTORCH_NO_CUDA_MEMORY_CACHING=1
{
  echo "nsys: $("$NSYS" --version 2>&1)"
  python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda); print("gpu", torch.cuda.get_device_name() if torch.cuda.is_available() else None)' 2>&1
  echo "device=$DEVICE per_env=$PER_ENV iterations=$ITERS PYTORCH_NO_CUDA_MEMORY_CACHING=1"
} > "$log"
runs=()
for n in "${NS[@]}"; do
  if [ "$SECONDS" -gt "$BUDGET" ]; then echo "skipped N=$n: ${SECONDS}s used (budget ${BUDGET}s)" >> "$log"; continue; fi
  name="scaling_$n"
  prof=("$NSYS" profile -t cuda,nvtx,osrt --cuda-memory-usage=true --sample=none --cpuctxsw=none --export=sqlite
        --force-overwrite=true -o "$work/$name"
        python3 scripts/gpu/scaling_workload.py --n "$n" --iterations "$ITERS" --per-env "$PER_ENV" --device "$DEVICE")
  t0=$SECONDS
  echo "\$NSYS ${prof[*]:1}" | sed -e "s#$work/##g" >> "$log"
  timeout 60 "${prof[@]}" > "$work/$name.out" 2>&1 || echo "N=$n: nsys profile failed (status $?)" >> "$log"
  tr '\r' '\n' < "$work/$name.out" | grep -v -e '%' -e '^$' | sed -e "s#$work/##g" | tail -n 15 >> "$log"  # no progress bars
  if [ -f "$work/$name.sqlite" ]; then
    gzip -9 -c "$work/$name.sqlite" > "$OUT/$name.sqlite.gz"
    runs+=("$OUT/$name.sqlite.gz=$n")
    echo "N=$n: $((SECONDS - t0)) s, sqlite $(stat -c %s "$work/$name.sqlite") B, gz $(stat -c %s "$OUT/$name.sqlite.gz") B" >> "$log"
  else
    echo "N=$n: no sqlite written" >> "$log"
  fi
  rm -f "$work/$name".*
done
if [ ${#runs[@]} -gt 0 ] && python3 -c "import nvtxsim.cli.commands.scaling" 2>/dev/null; then
  echo "== nvtxsim scaling" >> "$log"
  timeout 30 python3 -m nvtxsim scaling "${runs[@]}" --param num_envs --skip-first 2 >> "$log" 2>&1 || true
fi
echo "total ${SECONDS}s" >> "$log"
