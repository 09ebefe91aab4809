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
# A real terminal, 80 columns: the fitted tables (priorities, left-out columns, wrapped notes), bold headers.
tty() {  # tty NAME ARGS...: what a terminal 80 columns wide shows (stderr to a file: no progress display)
  local name="$1"; shift
  COLUMNS=80 script -eqc "stty cols 80; python3 -m nvtxsim $(printf '%q ' "$@") 2>$(printf '%q' "$out/$name.err")" \
    /dev/null >"$out/$name.tty"
  echo "$?" >"$out/$name.rc"
}
d=tests/data/gpu/demo_h200.sqlite.gz
p=tests/data/gpu/findings_planted.sqlite.gz
c=tests/data/gpu/findings_clean.sqlite.gz
t=tests/data/gpu/torch_nvtx_h200.sqlite.gz
runs=("$s/scaling_1024.sqlite.gz=1024" "$s/scaling_2048.sqlite.gz=2048" "$s/scaling_4096.sqlite.gz=4096"
  "$s/scaling_8192.sqlite.gz=8192" "$s/scaling_16384.sqlite.gz=16384")
live="$(ls reports/raw/live/*.jsonl | head -1)"
# Several ranks are named by their absolute paths (and fitted to the terminal by their length): copies at one
# fixed place, so that two checkouts print the same.
ranks=/tmp/nvtxsim-snapshot-ranks
mkdir -p "$ranks" && cp "$c" "$p" "$ranks/"
rc="$ranks/$(basename "$c")" rp="$ranks/$(basename "$p")"
tty "tty_report_demo" report "$d"
tty "tty_report_demo_all" report "$d" --view all
tty "tty_report_planted_views" report "$p" --view tree,kernels,findings
tty "tty_report_torch_all" report "$t" --domain all --view all
tty "tty_report_ranks" report "$rc" "$rp"
tty "tty_compare" compare "$c" "$p"
tty "tty_scaling" scaling --param num_envs "${runs[@]}"
tty "tty_scaling_predict" scaling --param num_envs "${runs[@]}" --predict 32768 --memory-budget 1GiB
tty "tty_live" live "$live"
# Every format of every command that is not above.
for f in "$d" "$p" "$t" tests/data/gpu/rsl_rl_4096.sqlite.gz; do
  b="$(basename "$f" .sqlite.gz)"
  run "report_${b}.html" report "$f" --format html
done
run "report_demo_h200.perfetto" report "$d" --format perfetto
run "report_planted_views.md" report "$p" --view tree,kernels,findings --format markdown
run "report_planted_views.txt" report "$p" --view tree,kernels,findings
run "report_planted_kernels.csv" report "$p" --view kernels --format csv
run "report_planted_two.csv" report "$p" --view tree,kernels --format csv
run "report_ranks.txt" report "$rc" "$rp"
run "report_ranks.md" report "$rc" "$rp" --format markdown
run "report_ranks.csv" report "$rc" "$rp" --format csv
run "report_ranks.json" report "$rc" "$rp" --format json
run "report_ranks.html" report "$rc" "$rp" --format html
for fmt in markdown csv html; do
  run "compare_planted.$fmt" compare "$c" "$p" --format "$fmt"
  run "scaling.$fmt" scaling --param num_envs "${runs[@]}" --format "$fmt"
  run "live.$fmt" live "$live" --format "$fmt"
done
for fmt in table json markdown html; do
  run "scaling_predict.$fmt" scaling --param num_envs "${runs[@]}" --predict 32768 --memory-budget 1GiB --format "$fmt"
done
run "scaling_two.txt" scaling --param num_envs "${runs[@]:0:2}"
run "report_bad_format.txt" report "$d" --format xml
run "compare_perfetto.txt" compare "$c" "$p" --format perfetto
echo "snapshot written to $out ($(ls "$out" | wc -l) files)"
