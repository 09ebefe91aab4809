#!/usr/bin/env bash
# Make the GPU exports of tests/data/gpu/: profile scripts/demo_env.py under Nsight Systems, export
# SQLite, run `nsys stats` reports as CSV, gzip the SQLite and drop the .nsys-rep.
# Run ON the GPU machine, from the checkout root, after `source .gpu/env.sh` (which sets NSYS):
#     bash scripts/gpu/make_exports.sh DEST
# Writes into DEST, per export NAME: NAME.sqlite.gz, NAME_<report>.csv (.csv.gz when over 1 MB),
# NAME_profile.log; plus
# commands.txt (the exact commands) and versions.txt. Env knobs (for a dry run elsewhere):
# DEMO_DEVICE (cuda), REPORTS (nsys 2025 report names), MAX_GZ_BYTES (3 MB: above it, halve the iterations).
set -uo pipefail
: "${NSYS:?source .gpu/env.sh first (NSYS unset)}"
DEST=${1:?usage: make_exports.sh DEST}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
DEMO_DEVICE=${DEMO_DEVICE:-cuda}
MAX_GZ_BYTES=${MAX_GZ_BYTES:-3000000}
wanted=(${REPORTS:-nvtx_sum nvtx_gpu_proj_sum nvtx_gpu_proj_trace nvtx_kern_sum cuda_gpu_trace})

# Only ask for reports this nsys knows (names as `nsys stats --help-reports` lists them).
help=$("$NSYS" stats --help-reports 2>&1)
reports=()
for r in "${wanted[@]}"; do
  if grep -Eq "^[[:space:]]*${r}([[:space:]]|\[|$)" <<<"$help"; then reports+=("$r"); else echo "make_exports: nsys has no report '$r'" >&2; fi
done
[ ${#reports[@]} -gt 0 ] || reports=("${wanted[@]}")
report_list=$(IFS=,; echo "${reports[*]}")

demo=(python3 scripts/demo_env.py --device "$DEMO_DEVICE" --num-envs 512 --camera 32x32 --decimation 4
      --update-every 16 --warmup 10 --seed 0)

{
  echo "nsys: $("$NSYS" --version 2>&1)"
  python3 -c 'import importlib.metadata, torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "nvtx", importlib.metadata.version("nvtx")); print("gpu", torch.cuda.get_device_name() if torch.cuda.is_available() else None)' 2>&1
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
} > "$DEST/versions.txt"

# export NAME GRAPH_TRACE ITERATIONS [demo args...]
export_one() {
  local name=$1 graph=$2 iters=$3; shift 3
  local prof=("$NSYS" profile -t cuda,nvtx,osrt --sample=none --cpuctxsw=none --cuda-graph-trace="$graph"
              --export=sqlite --force-overwrite=true -o "$work/$name" "${demo[@]}" --iterations "$iters" "$@")
  local stats=("$NSYS" stats --format csv -o "$work/$name" -r "$report_list" "$work/$name.sqlite")
  local t0=$SECONDS
  timeout "${EXPORT_TIMEOUT:-100}" "${prof[@]}" > "$DEST/${name}_profile.log" 2>&1 || { echo "make_exports: $name: profile failed" >&2; return 1; }
  [ -f "$work/$name.sqlite" ] || { echo "make_exports: $name: no sqlite" >&2; return 1; }
  "${stats[@]}" >> "$DEST/${name}_profile.log" 2>&1 || echo "make_exports: $name: stats failed" >&2
  gzip -9 -c "$work/$name.sqlite" > "$work/$name.sqlite.gz"
  local size; size=$(stat -c %s "$work/$name.sqlite.gz")
  echo "make_exports: $name: $((SECONDS - t0)) s, sqlite $(stat -c %s "$work/$name.sqlite") B, gz $size B" >&2
  if [ "$size" -gt "$MAX_GZ_BYTES" ] && [ "$iters" -gt 20 ]; then
    echo "make_exports: $name: over $MAX_GZ_BYTES B gzipped, again with $((iters / 2)) iterations" >&2
    rm -f "$work/$name"*
    export_one "$name" "$graph" $((iters / 2)) "$@"
    return
  fi
  # Commands as run, with machine-specific paths written as $NSYS and NAME.
  printf '%s\n' "$name:" "  \$NSYS ${prof[*]:1}" "  \$NSYS ${stats[*]:1}" "  gzip -9 $name.sqlite; rm $name.nsys-rep" \
    | sed -e "s#$work/##g" >> "$DEST/commands.txt"
  mv "$work/$name.sqlite.gz" "$DEST/"
  for r in "${reports[@]}"; do
    [ -f "$work/${name}_$r.csv" ] || continue
    mv "$work/${name}_$r.csv" "$DEST/"
    # Per-kernel traces run to 10+ MB of text: keep them gzipped in the repository.
    [ "$(stat -c %s "$DEST/${name}_$r.csv")" -gt 1000000 ] && gzip -9f "$DEST/${name}_$r.csv"
  done
  rm -f "$work/$name.nsys-rep" "$work/$name.sqlite"
}

: > "$DEST/commands.txt"
export_one demo_h200 node "${ITER_A:-150}"
export_one demo_h200_threads_graph node "${ITER_B:-120}" --side-thread --cuda-graph-policy
export_one demo_h200_graphlevel graph "${ITER_B:-120}" --side-thread --cuda-graph-policy
ls -l "$DEST"
