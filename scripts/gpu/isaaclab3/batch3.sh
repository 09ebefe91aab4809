#!/usr/bin/env bash
# The third command on the same host: the CUPTI probe, the sweep's middle points (16384 envs ran out of memory:
# its export stays the sweep's upper end), the second overhead round.
set -uo pipefail
exec > >(tee "$OUT/batch3.log") 2>&1
source scripts/gpu/isaaclab3/env.sh
t=scripts/gpu/isaaclab3
timeout 50 python3 scripts/gpu/probes/cupti_probe.py --autograd --iterations 20 > $OUT/cupti_probe.txt 2>&1; tail -n 9 $OUT/cupti_probe.txt
CAPTURE_TAR_DIR=/tmp/capture bash $t/capture.sh il3_camera_sweep_mid 150 --sweep num_envs=2048,8192 --memory -- \
  --task Isaac-Cartpole-Camera-Direct --num_envs '{num_envs}' --renderer newton_renderer --max_iterations 3
f=/tmp/capture/il3_camera_sweep_mid.tar; if [ "$(stat -c %s $f)" -gt 15728640 ]; then split -b 15M -d -a 1 $f "$OUT/$(basename $f)."; else cp $f $OUT/; fi
OUT=$OUT ROUNDS=1 timeout 100 bash $t/overhead.sh --task Isaac-Cartpole-Direct --num_envs 4096 --max_iterations 8
ls -la $OUT
