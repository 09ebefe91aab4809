#!/usr/bin/env bash
# The second capture command, on the same host within ~30 s of the first (Isaac Lab stays unpacked in /tmp):
#   bash scripts/gpu/isaaclab3/batch2.sh     -> $OUT: the num_envs sweep, overhead, planted diagnosis loops,
#                                              two ranks on one GPU, the CUPTI and Python-sampling probes
set -uo pipefail
exec > >(tee "$OUT/batch2.log") 2>&1
[ -d /tmp/il3site/isaaclab ] || bash scripts/gpu/isaaclab3/assemble.sh --unpack || exit 1
source scripts/gpu/isaaclab3/env.sh
t=scripts/gpu/isaaclab3
echo "== $(date +%T) [$SECONDS s] num_envs sweep, default caching allocator, GPU memory recorded"
bash $t/capture.sh il3_camera_sweep 330 --sweep num_envs=1024,4096,16384 --memory -- \
  --task Isaac-Cartpole-Camera-Direct --num_envs '{num_envs}' --renderer newton_renderer --max_iterations 5
echo "== $(date +%T) [$SECONDS s] overhead"
OUT=/tmp/capture ROUNDS=2 timeout 240 bash $t/overhead.sh --task Isaac-Cartpole-Direct --num_envs 4096 --max_iterations 10
echo "== $(date +%T) [$SECONDS s] planted diagnosis loops, two ranks, probes"
mkdir -p /tmp/capture/diag && cp /tmp/capture/overhead.txt /tmp/capture/diag/ 2>/dev/null
d=/tmp/capture/diag
prof=("$NSYS" profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --cuda-graph-trace=node --export=sqlite --force-overwrite=true)
run() { local name=$1 secs=$2; shift 2; echo "-- $name: $*"; timeout "$secs" "${prof[@]}" -o "$d/$name" "$@" > "$d/$name.out" 2>&1; echo "exit $?"; grep '^truth:' "$d/$name.out" | tee "$d/$name.truth"; rm -f "$d/$name.nsys-rep"; gzip -9f "$d/$name.sqlite" 2>/dev/null; }
w=scripts/gpu/diagnosis_workload.py
run diag_lazy_stalls 60 python3 $w --warmup lazy --stall-every 25 --spike-at 30,62,95
run diag_compile 120 python3 $w --warmup compile
run diag_graphs 60 python3 $w --warmup graphs
run diag_clean 60 python3 $w --warmup none
run ranks_gloo_1gpu 90 python3 -m torch.distributed.run --nproc_per_node=2 scripts/gpu/ranks_workload.py --device cuda --backend gloo
for f in $d/*.sqlite.gz; do b=$(basename "$f" .sqlite.gz); (cd $d && gunzip -kf "$b.sqlite.gz" && timeout 60 "$NSYS" stats --format csv -o "$b" -r nvtx_sum,nvtx_gpu_proj_sum,nvtx_gpu_proj_trace,nvtx_kern_sum "$b.sqlite" >/dev/null 2>&1; rm -f "$b.sqlite"); done
timeout 90 python3 scripts/gpu/probes/cupti_probe.py --autograd > $d/cupti_probe.txt 2>&1; tail -n 12 $d/cupti_probe.txt
echo "-- cupti under nsys"; timeout 90 "$NSYS" profile -t cuda,nvtx --sample=none --cpuctxsw=none --force-overwrite=true -o /tmp/cupti_nsys python3 scripts/gpu/probes/cupti_probe.py --iterations 10 > $d/cupti_probe_nsys.txt 2>&1; grep probe: $d/cupti_probe_nsys.txt | head -n 8
OUT=$d timeout 100 bash scripts/gpu/probes/python_sampling.sh
tar -C $d -cf "$OUT/diag.tar" .
echo "== $(date +%T) [$SECONDS s] done"; ls -la "$OUT"
