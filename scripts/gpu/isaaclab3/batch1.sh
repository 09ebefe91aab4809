#!/usr/bin/env bash
# The first capture command on a fresh GPU host (after the parts have arrived, see README.md):
#   bash scripts/gpu/isaaclab3/batch1.sh      -> $OUT: warm.log, one NAME.tar per capture, batch1.log
# Unpacks Isaac Lab 3.0, compiles the warp/Newton/MuJoCo-Warp kernels once (an unrecorded 16-env camera run,
# cached in ~/.cache/warp for the host's life), then records four trainings as a user would:
#   nvtxsim profile -o NAME -- python3 -m nvtxsim run train.py ...
set -uo pipefail
exec > >(tee "$OUT/batch1.log") 2>&1
bash scripts/gpu/isaaclab3/assemble.sh --unpack || exit 1
source scripts/gpu/isaaclab3/env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
t=scripts/gpu/isaaclab3
echo "== $(date +%T) [$SECONDS s] warm-up run (kernel compilation), not recorded"
timeout 300 python3 $t/train.py --task Isaac-Cartpole-Camera-Direct --num_envs 16 --renderer newton_renderer --max_iterations 1 > "$OUT/warm.log" 2>&1
echo "warm exit $?"; tail -n 5 "$OUT/warm.log"
echo "== $(date +%T) [$SECONDS s] captures"
bash $t/capture.sh il3_direct_rsl_rl 170 -- --task Isaac-Cartpole-Direct --num_envs 4096 --max_iterations 15
NVTXSIM_LIVE=/tmp/capture/il3_manager_rsl_rl.live.jsonl \
  bash $t/capture.sh il3_manager_rsl_rl 170 -- --task Isaac-Cartpole --num_envs 4096 --max_iterations 15
bash $t/capture.sh il3_camera_rsl_rl 200 -- --task Isaac-Cartpole-Camera-Direct --num_envs 1024 --renderer newton_renderer --max_iterations 8
bash $t/capture.sh il3_direct_skrl 170 -- --task Isaac-Cartpole-Direct --num_envs 4096 --library skrl --max_iterations 8
echo "== $(date +%T) [$SECONDS s] done"; ls -la "$OUT"
