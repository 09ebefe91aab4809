#!/usr/bin/env bash
# One capture of a real Isaac Lab 3.0 training, as a user makes it, plus nsys's own stats CSVs:
#   OUT=DIR bash scripts/gpu/isaaclab3/capture.sh NAME SECONDS [PROFILE_OPTIONS...] -- TRAIN_ARGS...
# runs  nvtxsim profile -o WORK/NAME PROFILE_OPTIONS -- python3 -m nvtxsim run scripts/gpu/isaaclab3/train.py TRAIN_ARGS
# and writes $OUT/NAME.tar: NAME.sqlite.gz, NAME_<report>.csv (nvtx_sum, nvtx_gpu_proj_sum, nvtx_gpu_proj_trace,
# nvtx_kern_sum; gzipped when over 1 MB), NAME.log (the program's and nvtxsim's output, the command).
set -uo pipefail
name=$1; secs=$2; shift 2
opts=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done; shift
work=/tmp/capture/$name; rm -rf "$work"; mkdir -p "$work"
cmd=(python3 -m nvtxsim profile -o "$work/$name" --no-report "${opts[@]}" -- python3 -m nvtxsim run "${CAPTURE_PROGRAM:-scripts/gpu/isaaclab3/train.py}" "$@")
t0=$SECONDS
{ echo "\$ ${cmd[*]}" | sed -e "s#$work/##g"; timeout "$secs" "${cmd[@]}" 2>&1 | tr '\r' '\n' | grep -v -e '%\]' -e '^$'; echo "exit ${PIPESTATUS[0]} after $((SECONDS - t0)) s"; } > "$work/$name.log"
tail -n 4 "$work/$name.log"
for f in "$work"/*.sqlite; do
  [ -f "$f" ] || { echo "$name: no sqlite"; continue; }
  b=$(basename "$f" .sqlite)
  (cd "$work" && timeout 120 "$NSYS" stats --format csv -o "$b" -r nvtx_sum,nvtx_gpu_proj_sum,nvtx_gpu_proj_trace,nvtx_kern_sum "$b.sqlite" > /dev/null 2>&1) || echo "$b: nsys stats failed"
  for c in "$work/$b"_*.csv; do [ -f "$c" ] && [ "$(stat -c %s "$c")" -gt 1000000 ] && gzip -9 "$c"; done
  timeout 60 python3 -m nvtxsim report "$f" 2>&1 | head -n 30 >> "$work/$name.log"
  gzip -9 "$f"
  echo "$b: sqlite.gz $(stat -c %s "$f.gz") B"
done
rm -f "$work"/*.nsys-rep
tar -C "$work" -cf "${CAPTURE_TAR_DIR:-$OUT}/$name.tar" .
echo "$name: $(du -h "${CAPTURE_TAR_DIR:-$OUT}/$name.tar" | cut -f1) in $((SECONDS - t0)) s"
