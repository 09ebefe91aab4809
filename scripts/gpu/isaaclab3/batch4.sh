#!/usr/bin/env bash
# A capture command on a fresh GPU host, after the first part has arrived (see README.md):
#   bash scripts/gpu/isaaclab3/batch4.sh   -> $OUT: batch4.log, il3_direct_live.tar, il3_direct_sweep.tar
# 1. Live timing and nsys in one run of a real training: `NVTXSIM_LIVE` (CUDA-event mode, every call timed)
#    under `nvtxsim profile`, so the live file and the report describe the same iterations.
# 2. A num_envs sweep of Isaac-Cartpole-Direct with PyTorch's default caching allocator and GPU memory
#    recorded (`--memory`), for `nvtxsim scaling`.
set -uo pipefail
exec > >(tee "$OUT/batch4.log") 2>&1
[ -d /tmp/il3site/isaaclab ] || bash scripts/gpu/isaaclab3/assemble.sh --unpack || exit 1
source scripts/gpu/isaaclab3/env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
t=scripts/gpu/isaaclab3
export CAPTURE_TAR_DIR=/tmp/capture
put() { local f=$1; if [ "$(stat -c %s "$f")" -gt 15728640 ]; then split -b 15M -d -a 1 "$f" "$OUT/$(basename "$f")."; else cp "$f" "$OUT/"; fi; }
echo "== $(date +%T) [$SECONDS s] warm-up run (kernel compilation), not recorded"
timeout 240 python3 $t/train.py --task Isaac-Cartpole-Direct --num_envs 16 --max_iterations 1 > "$OUT/warm.log" 2>&1
echo "warm exit $?"; tail -n 3 "$OUT/warm.log"
echo "== $(date +%T) [$SECONDS s] live timing + nsys, one run"
# capture.sh makes /tmp/capture/NAME before it starts the program: the live file lands in the tar.
NVTXSIM_LIVE=/tmp/capture/il3_direct_live/il3_direct_live.live.jsonl NVTXSIM_LIVE_EVERY=16 NVTXSIM_LIVE_SAMPLE=1 \
  bash $t/capture.sh il3_direct_live 170 -- --task Isaac-Cartpole-Direct --num_envs 4096 --max_iterations 15
put /tmp/capture/il3_direct_live.tar
echo "== $(date +%T) [$SECONDS s] num_envs sweep (Isaac-Cartpole-Direct), default caching allocator, --memory"
bash $t/capture.sh il3_direct_sweep 400 --sweep num_envs=1024,4096,16384,49152 --memory -- \
  --task Isaac-Cartpole-Direct --num_envs '{num_envs}' --max_iterations 6
put /tmp/capture/il3_direct_sweep.tar
echo "== $(date +%T) [$SECONDS s] done"; ls -la "$OUT"
