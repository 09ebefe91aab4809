#!/usr/bin/env bash
# Everything the first GPU round needs, in ONE device call (device time is scarce):
# machine facts, the three test exports, nsys's own stats scripts, and the overhead benchmarks.
# On the GPU machine, from the checkout root:  source .gpu/env.sh && bash scripts/gpu/run_all.sh
# Results go to $OUT (at most 8 files come back): log.txt, NAME.tar.gz per export, exports_meta.tar.gz,
# nsys_reports.tar.gz, bench.tar.gz.
set -uo pipefail
: "${NSYS:?source .gpu/env.sh first}" "${OUT:?OUT must name the folder for results}"
res=$(mktemp -d)
mkdir -p "$res/bench" "$res/nsys_reports"
step() { echo; echo "== $(date +%T) [$SECONDS s] $*"; }
export PYTHONUNBUFFERED=1
{
  step facts
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
  grep -m1 "model name" /proc/cpuinfo; nproc
  python3 -c 'import importlib.metadata as m, torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "nvtx", m.version("nvtx"), "gpu", torch.cuda.get_device_name())' 2>&1
  "$NSYS" --version

  step "exports (scripts/gpu/make_exports.sh)"
  timeout 240 bash scripts/gpu/make_exports.sh "$res/exports"

  step "nsys stats scripts"
  root=$(cd "$(dirname "$NSYS")/.." && pwd)
  echo "nsys install root: $root"
  timeout 30 find "$root" /opt/nvidia -maxdepth 7 \( -name 'nvtx_sum*' -o -name 'nvtx_gpu_proj_sum*' -o -name 'nvtx_gpu_proj_trace*' -o -name 'nsysstats.py' \) 2>/dev/null | sort -u | tee "$res/nsys_reports/found.txt"
  while read -r f; do
    d=$(dirname "$f"); tag=$(echo "${d#/}" | tr '/' '_')
    mkdir -p "$res/nsys_reports/$tag"
    if [ "$(basename "$d")" = reports ] || [ "$(basename "$f")" = nsysstats.py ]; then
      find "$d" -maxdepth 1 -type f \( -name '*.py' -o -name '*.sql' -o -name '*.txt' \) -size -400k -exec cp {} "$res/nsys_reports/$tag/" \;
    else
      cp -r "$f" "$res/nsys_reports/$tag/" 2>/dev/null
    fi
  done < "$res/nsys_reports/found.txt"
  grep -rln "create_aggregate\|create_function" "$root" --include='*.py' 2>/dev/null | head -20 | tee "$res/nsys_reports/sql_functions_defined_in.txt"
  du -sh "$res/nsys_reports"

  step "bench micro, plain"
  timeout 45 python3 scripts/bench_overhead.py --json "$res/bench/micro_plain.json" 2>&1 | tee "$res/bench/micro_plain.txt"

  step "bench micro, under nsys -t cuda,nvtx"
  timeout 75 "$NSYS" profile -t cuda,nvtx --sample=none --cpuctxsw=none --force-overwrite=true -o "$res/bench_micro" \
    python3 scripts/bench_overhead.py --json "$res/bench/micro_nsys.json" 2>&1 | grep -v '^\[\|^$' | tee "$res/bench/micro_nsys.txt"
  rm -f "$res/bench_micro".*

  step "bench e2e"
  timeout 140 python3 scripts/bench_overhead.py --e2e --json "$res/bench/e2e.json" 2>&1 | tee "$res/bench/e2e.txt"
  step done
} 2>&1 | tee "$OUT/log.txt"
for name in demo_h200 demo_h200_threads_graph demo_h200_graphlevel; do
  tar czf "$OUT/$name.tar.gz" -C "$res/exports" $(cd "$res/exports" && ls | grep -E "^${name}(\.|_(nvtx|cuda|profile))")
done
tar czf "$OUT/exports_meta.tar.gz" -C "$res/exports" commands.txt versions.txt
tar czf "$OUT/nsys_reports.tar.gz" -C "$res" nsys_reports
tar czf "$OUT/bench.tar.gz" -C "$res" bench
ls -l "$OUT"
