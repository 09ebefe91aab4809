#!/usr/bin/env bash
# The second capture command, on the same host right after the first (Isaac Lab stays unpacked in /tmp):
#   bash scripts/gpu/isaaclab3/batch2.sh   -> $OUT: planted diagnosis loops, two ranks on one GPU, the CUPTI and
#                                             Python-sampling probes, the num_envs sweep, overhead (most needed first;
#                                             files over 15 MiB split into parts)
set -uo pipefail
exec > >(tee "$OUT/batch2.log") 2>&1
[ -d /tmp/il3site/isaaclab ] || bash scripts/gpu/isaaclab3/assemble.sh --unpack || exit 1
source scripts/gpu/isaaclab3/env.sh
t=scripts/gpu/isaaclab3
put() { local f=$1; if [ "$(stat -c %s "$f")" -gt 15728640 ]; then split -b 15M -d -a 1 "$f" "$OUT/$(basename "$f")."; else cp "$f" "$OUT/"; fi; }
[ -f /tmp/capture/il3_camera_rsl_rl/il3_camera_rsl_rl.log ] && tar -C /tmp/capture/il3_camera_rsl_rl -cf /tmp/il3_camera_rsl_rl.tar . && put /tmp/il3_camera_rsl_rl.tar
echo "== $(date +%T) [$SECONDS s] planted diagnosis loops, two ranks, probes"
d=/tmp/capture/diag; mkdir -p $d
prof=("$NSYS" profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --cuda-graph-trace=node --export=sqlite --force-overwrite=true)
run() { local name=$1 secs=$2; shift 2; echo "-- $name: $*"; timeout "$secs" "${prof[@]}" -o "$d/$name" "$@" > "$d/$name.out" 2>&1; echo "exit $?"; grep '^truth:' "$d/$name.out" | tee "$d/$name.truth"; rm -f "$d/$name.nsys-rep"; (cd $d && timeout 60 "$NSYS" stats --format csv -o "$name" -r nvtx_sum,nvtx_gpu_proj_sum,nvtx_gpu_proj_trace,nvtx_kern_sum "$name.sqlite" >/dev/null 2>&1); gzip -9f "$d/$name.sqlite" 2>/dev/null; }
w=scripts/gpu/diagnosis_workload.py
run diag_lazy_stalls 50 python3 $w --warmup lazy --stall-every 25 --spike-at 30,62,95
run diag_compile 90 python3 $w --warmup compile
run diag_graphs 50 python3 $w --warmup graphs
run diag_clean 50 python3 $w --warmup none
run ranks_gloo_1gpu 60 python3 -m torch.distributed.run --nproc_per_node=2 scripts/gpu/ranks_workload.py --device cuda --backend gloo
timeout 60 python3 scripts/gpu/probes/cupti_probe.py --autograd > $d/cupti_probe.txt 2>&1; tail -n 8 $d/cupti_probe.txt
timeout 60 "$NSYS" profile -t cuda,nvtx --sample=none --cpuctxsw=none --force-overwrite=true -o /tmp/cupti_nsys python3 scripts/gpu/probes/cupti_probe.py --iterations 10 > $d/cupti_probe_nsys.txt 2>&1; grep probe: $d/cupti_probe_nsys.txt | head -n 6
OUT=$d timeout 60 bash scripts/gpu/probes/python_sampling.sh
tar -C $d -cf /tmp/diag.tar . && put /tmp/diag.tar
echo "== $(date +%T) [$SECONDS s] num_envs sweep, default caching allocator, GPU memory recorded"
CAPTURE_TAR_DIR=/tmp/capture bash $t/capture.sh il3_camera_sweep 200 --sweep num_envs=1024,4096,16384 --memory -- \
  --task Isaac-Cartpole-Camera-Direct --num_envs '{num_envs}' --renderer newton_renderer --max_iterations 3
rm -f "$OUT/il3_camera_sweep.tar"; put /tmp/capture/il3_camera_sweep.tar 2>/dev/null || { tar -C /tmp/capture/il3_camera_sweep -cf /tmp/capture/il3_camera_sweep.tar . && put /tmp/capture/il3_camera_sweep.tar; }
echo "== $(date +%T) [$SECONDS s] overhead"
OUT=$OUT ROUNDS=2 timeout 150 bash $t/overhead.sh --task Isaac-Cartpole-Direct --num_envs 4096 --max_iterations 8
echo "== $(date +%T) [$SECONDS s] done"; ls -la "$OUT"
