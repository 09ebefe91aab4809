#!/usr/bin/env bash
# rsl_rl 5.x PPO on a 4096-env torch task under nsys (issue 17): the step / learning-iteration views of
# docs/isaaclab.md. On the GPU machine, from the checkout root, with rsl-rl-lib and its pure-Python deps
# passed as wheels (EXTRA_WHEELS to prepare.sh: see /work/tools/GPU_QUEUE.md):
#     source .gpu/env.sh && OUT=/some/dir bash scripts/gpu/rsl_rl.sh
# Writes $OUT/rsl_rl_4096.sqlite.gz (commit it to tests/data/gpu/). Versions, the command, timings and the
# report's views go to stdout. About a minute. Knobs for a dry run elsewhere: RSL_RL_DEVICE (cuda),
# RSL_RL_ARGS (extra workload arguments, e.g. "--num-envs 64 --steps 4 --iterations 3").
set -uo pipefail
: "${NSYS:?source .gpu/env.sh first (NSYS unset)}" "${OUT:?OUT must name the folder for results}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
DEVICE=${RSL_RL_DEVICE:-cuda}
name=rsl_rl_4096
export PYTHONUNBUFFERED=1
echo "nsys: $("$NSYS" --version 2>&1)"
python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda); print("gpu", torch.cuda.get_device_name() if torch.cuda.is_available() else None)' 2>&1
python3 -c 'from importlib.metadata import version as v; print(*(f"{p} {v(p)}" for p in ("rsl-rl-lib", "tensordict", "nvtx")))' 2>&1
prof=("$NSYS" profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --export=sqlite --force-overwrite=true
      -o "$work/$name" python3 scripts/gpu/rsl_rl_4096.py --device "$DEVICE" ${RSL_RL_ARGS:-})
t0=$SECONDS
echo "\$NSYS ${prof[*]:1}" | sed -e "s#$work/##g"
timeout 150 "${prof[@]}" > "$work/$name.out" 2>&1 || echo "$name: nsys profile failed (status $?)"
tr '\r' '\n' < "$work/$name.out" | grep -v -e '%' -e '^$' -e '^ ' -e '^)' | sed -e "s#$work/##g" | tail -n 12
if [ -f "$work/$name.sqlite" ]; then
  gzip -9 -c "$work/$name.sqlite" > "$OUT/$name.sqlite.gz"
  echo "$name: $((SECONDS - t0)) s, sqlite $(stat -c %s "$work/$name.sqlite") B, gz $(stat -c %s "$OUT/$name.sqlite.gz") B"
  for by in step learning_iteration; do
    timeout 30 python3 -m nvtxsim report "$work/$name.sqlite" --view iterations,slowest --by "$by" --top 3 2>&1 | head -n 40
  done
else
  echo "$name: no sqlite written"
fi
rm -f "$work/$name".*
echo "total ${SECONDS}s"
