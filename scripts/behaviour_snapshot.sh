#!/usr/bin/env bash
# Write what every command prints on the committed exports into DIR, so that two trees (before and after a
# refactor) can be compared byte for byte:  bash scripts/behaviour_snapshot.sh DIR && diff -r OLD DIR
#
# Run it from the checkout whose nvtxsim you want to snapshot (PYTHONPATH is set to it).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: behaviour_snapshot.sh DIR}"
mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" NVTXSIM_CACHE=0 COLUMNS=120
nv() { python3 -m nvtxsim "$@"; }
run() {  # run NAME ARGS...: stdout, stderr and the exit code of one command
  local name="$1"; shift
  nv "$@" >"$out/$name.out" 2>"$out/$name.err"
  echo "$?" >"$out/$name.rc"
}
exports=(tests/data/gpu/*.sqlite.gz tests/data/reliability/*.sqlite.gz)
for f in "${exports[@]}"; do
  b="$(basename "$f" .sqlite.gz)"
  run "report_${b}_all.json" report "$f" --view all --format json
  run "report_${b}_all.md" report "$f" --view all --format markdown
  run "report_${b}_summary.csv" report "$f" --format csv
  run "report_${b}_80.txt" report "$f"
  run "report_${b}_skip2.json" report "$f" --view iterations,findings,slowest --skip-first 2 --format json
done
run "report_rsl_by_learning.json" report tests/data/gpu/rsl_rl_4096.sqlite.gz --by learning_iteration --view all --format json
run "report_all_domains.json" report tests/data/gpu/torch_nvtx_h200.sqlite.gz --domain all --view all --format json
run "compare_planted.json" compare tests/data/gpu/findings_clean.sqlite.gz tests/data/gpu/findings_planted.sqlite.gz --format json
run "compare_planted.txt" compare tests/data/gpu/findings_clean.sqlite.gz tests/data/gpu/findings_planted.sqlite.gz
run "compare_demo_by.json" compare tests/data/gpu/demo_h200.sqlite.gz tests/data/gpu/demo_h200_threads_graph.sqlite.gz --by iteration --format json
s=tests/data/gpu/scaling
run "scaling.json" scaling --param num_envs "$s/scaling_1024.sqlite.gz=1024" "$s/scaling_2048.sqlite.gz=2048" \
  "$s/scaling_4096.sqlite.gz=4096" "$s/scaling_8192.sqlite.gz=8192" "$s/scaling_16384.sqlite.gz=16384" --format json
run "scaling.txt" scaling --param num_envs "$s/scaling_1024.sqlite.gz=1024" "$s/scaling_2048.sqlite.gz=2048" \
  "$s/scaling_4096.sqlite.gz=4096" "$s/scaling_8192.sqlite.gz=8192" "$s/scaling_16384.sqlite.gz=16384"
for f in reports/raw/live/*.jsonl; do
  b="$(basename "$f" .jsonl)"
  run "live_${b}.json" live "$f" --format json
  run "live_${b}.txt" live "$f"
done
echo "snapshot written to $out ($(ls "$out" | wc -l) files)"
