#!/usr/bin/env bash
# What nvtxsim costs on a real Isaac Lab 3.0 training: ms per rsl_rl learning iteration (train.py's own line,
# iterations after the first) for four configurations, interleaved round by round in one run:
#   plain          python3 train.py
#   run            python3 -m nvtxsim run train.py          (instrumented, no profiler attached)
#   nsys           nsys profile ... python3 train.py         (the profiler alone)
#   nsys+nvtxsim   nsys profile ... python3 -m nvtxsim run train.py
#   OUT=DIR ROUNDS=3 bash scripts/gpu/isaaclab3/overhead.sh [TRAIN_ARGS...]   -> $OUT/overhead.txt
set -uo pipefail
rounds=${ROUNDS:-3}
args=("$@"); [ ${#args[@]} -gt 0 ] || args=(--task Isaac-Cartpole-Direct --num_envs 4096 --max_iterations 12)
train=(scripts/gpu/isaaclab3/train.py "${args[@]}")
nsys=("$NSYS" profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --cuda-graph-trace=node --force-overwrite=true -o /tmp/overhead_rep)
declare -A cmd=(
  [plain]="python3 ${train[*]}"
  [run]="python3 -m nvtxsim run -q ${train[*]}"
  [nsys]="${nsys[*]} python3 ${train[*]}"
  [nsys+nvtxsim]="${nsys[*]} python3 -m nvtxsim run -q ${train[*]}"
)
order=(plain run nsys nsys+nvtxsim)
out="$OUT/overhead.txt"
{ echo "# ms per learning iteration, $rounds rounds interleaved; train args: ${args[*]}"; for k in "${order[@]}"; do echo "# $k: ${cmd[$k]}"; done; } > "$out"
for r in $(seq 1 "$rounds"); do
  for k in "${order[@]}"; do
    line=$(timeout 150 bash -c "${cmd[$k]}" 2>&1 | grep '^train:' | tail -1)
    echo "round=$r config=$k ${line#train: }" | tee -a "$out"
  done
done
python3 - "$out" <<'PY'
import re, statistics, sys
rows = [l for l in open(sys.argv[1]) if l.startswith("round=")]
by = {}
for l in rows:
    cfg = re.search(r"config=(\S+)", l).group(1)
    ms = re.search(r"ms_per_iteration=([\d.]+)", l)
    by.setdefault(cfg, []).append(float(ms.group(1)) if ms else float("nan"))
with open(sys.argv[1], "a") as f:
    for cfg, v in by.items():
        line = f"{cfg:14s} " + " / ".join(f"{x:.1f}" for x in v) + f"   median {statistics.median(v):.1f}"
        print(line); f.write(line + "\n")
PY
