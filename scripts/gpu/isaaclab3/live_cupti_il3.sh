#!/usr/bin/env bash
# Live GPU busy time from CUPTI (issue 25) on a real Isaac Lab 3.0 training: Isaac-Cartpole-Direct, rsl_rl PPO,
# 4096 envs, kitless (train.py), zero-edit instrumentation (`python3 -m nvtxsim run train.py`). On the H200, from
# the checkout root, after scripts/gpu/isaaclab3/assemble.sh (the parts; see README.md):
#   OUT=/tmp/lci bash scripts/gpu/isaaclab3/live_cupti_il3.sh
# 1 warm-up: a 16-env run, not timed (compiles warp/Newton/MuJoCo-Warp kernels on a fresh host, ~100 s; cached)
# 2 nsys: the same training under `nvtxsim profile`, live timing asked for with NVTXSIM_LIVE_GPU=cupti (it must step
#   aside: one line, CUDA events; the events column of 4); `nvtxsim report --view overlap --format json`
# 3 cost, interleaved in this one invocation, ROUNDS rounds (ABCD, then DCBA): off (`nvtxsim run`, no live timing),
#   events (NVTXSIM_LIVE, CUDA events), cupti (NVTXSIM_LIVE_GPU=cupti, its default 2 % cost budget), cupti-full
#   (the same, NVTXSIM_LIVE_GPU_BUDGET=off: CUPTI on every iteration):
#   train.py's ms per learning iteration (the iterations after the first) and the median's % over off (goal: 2 %)
# 4 accuracy: the first round's cupti run vs the nsys run, phase by phase (scripts/gpu/live_cupti_workload.py
#   compare --all-phases: live busy per range vs the report's busy + other-thread overlap per range; the nsys run's
#   CUDA-event live file for contrast)
# Every step prints `date`, its exit code (rc=124: its timeout; 139: a segfault). $OUT gets 6 files: live_cupti_il3.txt
# (all printed), cupti.jsonl, events.jsonl, report.json, il3_nsys.sqlite.gz (split .0 .1 past 15 MiB), nsys.log. Under 9 minutes on the H200
# (a round is skipped when it would end past 530 s, judged by the one before).
# Knobs: ITERS (12 learning iterations), ENVS (4096), ROUNDS (2), EVERY (16 env steps per live line), CONFIGS (the
# cost rounds' configs, default "off events cupti cupti-full"), FIRST (configs of round 1 only, e.g. cupti-naive:
# CUPTI switched at every step, no lead or trail), DUMP=1 (CUPTI configs under scripts/gpu/probes/budget_dump.py:
# the budget's states per step and each timed range's busy time, in $OUT/dumps.tar.gz), SKIP_NSYS=1 (cost only).
# Here (no GPU, no Isaac Lab): DRY_RUN=1 OUT=/tmp/lci bash scripts/gpu/isaaclab3/live_cupti_il3.sh  runs the same
# plumbing on a CPU stand-in for train.py (nsys 2022.4, NVTX only): no GPU numbers.
set -uo pipefail
OUT=${OUT:-$PWD/gpu-live-cupti-il3}
mkdir -p "$OUT"
exec > >(tee "$OUT/live_cupti_il3.txt") 2>&1
t=scripts/gpu/isaaclab3
W=scripts/gpu/live_cupti_workload.py
ITERS=${ITERS:-12}; ENVS=${ENVS:-4096}; ROUNDS=${ROUNDS:-2}; EVERY=${EVERY:-16}
work=/tmp/lci_work; rm -rf "$work"; mkdir -p "$work"
unset NVTXSIM_LIVE NVTXSIM_LIVE_GPU NVTXSIM_LIVE_SAMPLE NVTXSIM_LIVE_EVERY CUDA_INJECTION64_PATH
export PYTHONUNBUFFERED=1
rc_line() { echo "$1 rc=$2$([ "$2" = 139 ] && echo ' (SEGFAULT)')$([ "$2" = 124 ] && echo ' (TIMEOUT)')"; }
stamp() { echo "== $(date -u +%T) [$SECONDS s] $*"; }

if [ -n "${DRY_RUN:-}" ]; then
  prog=$work/stand_in.py
  cat > "$prog" <<'PY'
"""A CPU stand-in for train.py (plumbing only): phases per env step, a 'train:' line like train.py's."""
import sys, time
import nvtxsim
n = int(sys.argv[sys.argv.index("--max_iterations") + 1]) if "--max_iterations" in sys.argv else 4
stamps = []
for it in range(n):
    for _ in range(16):
        nvtxsim.step()
        for name in ("policy", "sim_step", "reward"):
            with nvtxsim.phase(name):
                sum(i * i for i in range(20000))
    with nvtxsim.phase("policy_update"):
        sum(i * i for i in range(200000))
    stamps.append(time.perf_counter())
print(f"train: task=stand-in iterations={n} ms_per_iteration={(stamps[-1] - stamps[0]) / (n - 1) * 1e3:.1f}")
PY
  train=("$prog" --max_iterations "$ITERS")
  warm=(); NSYS=${NSYS:-nsys}; PROFILE_OPTS=(--trace nvtx)
else
  [ -d /tmp/il3site/isaaclab ] || bash $t/assemble.sh --unpack || exit 1
  source $t/env.sh
  train=($t/train.py --task Isaac-Cartpole-Direct --num_envs "$ENVS" --max_iterations "$ITERS")
  warm=($t/train.py --task Isaac-Cartpole-Direct --num_envs 16 --max_iterations 1)
  PROFILE_OPTS=()
fi
stamp "env ($(git rev-parse --short HEAD 2>/dev/null)) train: ${train[*]}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
python3 -c "import importlib.metadata as m
for d in ('torch', 'nvidia-cuda-cupti', 'isaaclab', 'rsl-rl-lib'):
    try: print(d, m.version(d))
    except Exception: print(d, 'not installed')" 2>&1 | tail -4

if [ ${#warm[@]} -gt 0 ]; then
  stamp "1 warm-up (kernel compilation), not timed"
  timeout 240 python3 "${warm[@]}" > "$work/warm.log" 2>&1; rc_line warm $?; grep '^train:' "$work/warm.log" | tail -1
fi

# live timing asked for with CUPTI under nsys: it must step aside (one line) and time with CUDA events, the
# same ranges as the export: the events column of step 4
if [ -z "${SKIP_NSYS:-}" ]; then
stamp "2 nsys: NVTXSIM_LIVE_GPU=cupti python3 -m nvtxsim profile -o il3_nsys --no-report -- python3 -m nvtxsim run ${train[*]}"
NVTXSIM_LIVE="$work/nsys_live.jsonl" NVTXSIM_LIVE_EVERY="$EVERY" NVTXSIM_LIVE_GPU=cupti NVTXSIM_LIVE_CUPTI_EXPERIMENTAL=1 \
  timeout 200 python3 -m nvtxsim profile -o "$work/il3_nsys" --no-report "${PROFILE_OPTS[@]}" -- \
  python3 -m nvtxsim run "${train[@]}" 2>&1 | tr '\r' '\n' | grep -v -e '%\]' -e '^$' > "$OUT/nsys.log"
rc_line nsys "${PIPESTATUS[0]}"; grep -e '^train:' -e rror -e CUPTI -e 'live timing' "$OUT/nsys.log" | tail -4
python3 -c "import sys; from nvtxsim.analysis.live import load, gpu_modes
w = load(sys.argv[1]).windows; print(f'under nsys: {len(w)} live windows, gpu modes {gpu_modes(w)} (wanted: events)')" \
  "$work/nsys_live.jsonl" 2>&1 | tail -1
sq=$(ls "$work"/il3_nsys*.sqlite 2>/dev/null | head -1)
if [ -n "$sq" ]; then
  stamp "2 report: nvtxsim report $(basename "$sq") --domain nvtxsim --view overlap --format json"
  timeout 150 python3 -m nvtxsim report "$sq" --domain nvtxsim --view overlap --format json > "$OUT/report.json"
  rc_line report $?
else
  echo "nsys: no export written"
fi
else sq=""; fi

# NVTXSIM_LIVE_CUPTI_EXPERIMENTAL is read only by checkouts before the gate was removed (kept: either runs)
declare -A env_of=(
  [off]=""
  [events]="NVTXSIM_LIVE_GPU=events"
  [cupti]="NVTXSIM_LIVE_GPU=cupti NVTXSIM_LIVE_CUPTI_EXPERIMENTAL=1"
  [cupti-full]="NVTXSIM_LIVE_GPU=cupti NVTXSIM_LIVE_CUPTI_EXPERIMENTAL=1 NVTXSIM_LIVE_GPU_BUDGET=off"
  [cupti-naive]="NVTXSIM_LIVE_GPU=cupti NVTXSIM_LIVE_GPU_BLOCK=0,1,0"
)
# CONFIGS: the cost rounds' configs (ABC.., then ..CBA); FIRST: configs run in round 1 only (accuracy, not cost)
read -r -a order <<< "${CONFIGS:-off events cupti cupti-full}"
read -r -a first_only <<< "${FIRST:-}"
one() {  # one timed training: config, round. With DUMP=1 the CUPTI configs run under the budget probe
  local k=$1 r=$2 live=() line rc run=(-m nvtxsim run -q)
  [ "$k" != off ] && live=(NVTXSIM_LIVE="$work/${k}_r$r.jsonl" NVTXSIM_LIVE_EVERY="$EVERY" ${env_of[$k]})
  if [ -n "${DUMP:-}" ] && [[ $k == cupti* ]]; then
    run=(scripts/gpu/probes/budget_dump.py "$work/${k}_r$r.dump.json" -- -q)
  fi
  env "${live[@]}" timeout 100 python3 "${run[@]}" "${train[@]}" > "$work/${k}_r$r.out" 2> "$work/${k}_r$r.err"
  rc=$?
  line=$(grep '^train:' "$work/${k}_r$r.out" | tail -1)
  echo "round=$r config=$k rc=$rc ${line#train: }" | tee -a "$work/cost.txt"
  grep -h -i -e cupti -e 'live timing' -e budget_dump "$work/${k}_r$r.err" | head -24
  [ "$rc" = 0 ] || tail -n 4 "$work/${k}_r$r.err"
}
last=0
for r in $(seq 1 "$ROUNDS"); do
  if [ "$r" -gt 1 ] && [ $((SECONDS + last + 30)) -gt 530 ]; then
    echo "round $r skipped: $SECONDS s gone, a round takes $last s (9-minute budget)"; break
  fi
  stamp "3 cost round $r/$ROUNDS"; t_round=$SECONDS
  if [ $((r % 2)) = 1 ]; then seq_=("${order[@]}"); else seq_=(); for ((i=${#order[@]}-1; i>=0; i--)); do seq_+=("${order[i]}"); done; fi
  [ "$r" = 1 ] && seq_+=("${first_only[@]}")
  for k in "${seq_[@]}"; do one "$k" "$r"; done
  last=$((SECONDS - t_round))
  if [ "$r" = 1 ]; then
    cp -f "$work/cupti_r1.jsonl" "$OUT/cupti.jsonl" 2>/dev/null; cp -f "$work/events_r1.jsonl" "$OUT/events.jsonl" 2>/dev/null
    cp -f "$work/cupti-full_r1.jsonl" "$OUT/cupti_full.jsonl" 2>/dev/null
    cp -f "$work/cupti-naive_r1.jsonl" "$OUT/cupti_naive.jsonl" 2>/dev/null
    [ -n "${DUMP:-}" ] && (cd "$work" && tar czf "$OUT/dumps.tar.gz" ./*.dump.json 2>/dev/null)
    stamp "4 accuracy: live cupti (round 1) vs nsys, per phase"
    if [ -s "$OUT/cupti.jsonl" ] && [ -s "$OUT/report.json" ]; then
      timeout 60 python3 -m nvtxsim live "$OUT/cupti.jsonl" | cut -c1-240; rc_line live $?
      ev=$OUT/events.jsonl; [ -s "$work/nsys_live.jsonl" ] && ev=$work/nsys_live.jsonl  # events of the nsys run's ranges
      echo "events column: $ev"
      timeout 60 python3 "$W" compare "$OUT/cupti.jsonl" "$OUT/report.json" --events "$ev" --all-phases
      rc_line compare $?
      for f in cupti_full cupti_naive; do
        [ -s "$OUT/$f.jsonl" ] || continue
        echo "the same for $f (cupti_full: every iteration GPU-timed; cupti_naive: switched at every step, NVTXSIM_LIVE_GPU_BLOCK=0,1,0):"
        timeout 60 python3 "$W" compare "$OUT/$f.jsonl" "$OUT/report.json" --events "$ev" --all-phases | tail -n 22
      done
    else
      echo "accuracy skipped: cupti.jsonl or report.json missing or empty"
    fi
  fi
done

stamp "3 cost summary: ms per learning iteration (train.py), median, % over off"
python3 - "$work/cost.txt" <<'PY'
import re, statistics, sys
by = {}
for line in open(sys.argv[1]):
    cfg = re.search(r"config=(\S+)", line).group(1)
    ms = re.search(r"ms_per_iteration=([\d.]+)", line)
    by.setdefault(cfg, []).append(float(ms.group(1)) if ms else float("nan"))
med = {c: statistics.median(v) for c, v in by.items()}
base = med.get("off")
for cfg in ("off", "events", "cupti", "cupti-full", "cupti-naive"):
    if cfg not in by:
        continue
    pct = f"{100 * (med[cfg] - base) / base:+.1f} %" if base and base == base else "-"
    print(f"cost {cfg:10s} runs " + " / ".join(f"{x:.1f}" for x in by[cfg]) + f"   median {med[cfg]:.1f} ms   over off {pct}")
PY

if [ -n "$sq" ] && [ -f "$sq" ]; then  # a file comes back only under 16 MiB: split past 15 MiB (cat the parts)
  gzip -6 -c "$sq" > "$work/il3_nsys.sqlite.gz"
  if [ "$(stat -c %s "$work/il3_nsys.sqlite.gz")" -gt 15728640 ]; then
    split -b 15M -d -a 1 "$work/il3_nsys.sqlite.gz" "$OUT/il3_nsys.sqlite.gz."
  else
    mv "$work/il3_nsys.sqlite.gz" "$OUT/"
  fi
fi
ls -l "$OUT"
stamp done
