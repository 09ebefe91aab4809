#!/usr/bin/env bash
# GPU-machine check of `nvtxsim profile` / `nvtxsim doctor` with the nsys 2025.3 of Nsight Compute.
# Run from the checkout root after `source .gpu/env.sh` (sets NSYS, LD_LIBRARY_PATH, PYTHONPATH):
#     source .gpu/env.sh && bash scripts/gpu/check_profile.sh
# Writes into $OUT (default ./gpu-check-profile): doctor.{txt,json}, one log + report + gzipped
# SQLite per run, and summary.txt (also printed) with the counts that say whether it worked:
#   exitcode      the program's exit code 3 comes back from nvtxsim profile
#   full          all 60 demo iterations recorded (no window), setup kernels before the first one
#   window_nvtx   --iterations 10:20 through an NVTX capture range: exactly 10 iteration ranges
#   window_cuda   --iterations 10:20 through cudaProfilerStart/Stop: exactly 10 iteration ranges
set -u
OUT=${OUT:-$PWD/gpu-check-profile}
mkdir -p "$OUT"
if [ -z "${NSYS:-}" ] && [ -f .gpu/env.sh ]; then source .gpu/env.sh; fi
PY=${PYTHON:-python3}
NV=("$PY" -m nvtxsim)
T=${STEP_TIMEOUT:-300}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "NSYS=${NSYS:-unset}" | tee "$OUT/env.txt"
{ "$NSYS" --version; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; "$PY" -V; } >> "$OUT/env.txt" 2>&1

# The window counts nvtxsim.step() calls; if demo_env.py does not call it, call it before each DemoEnv.step.
demo=(scripts/demo_env.py)
if ! grep -q "nvtxsim.step()" scripts/demo_env.py; then
  cat > "$tmp/demo_stepped.py" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd() / "scripts"))
import nvtxsim
import demo_env
_step = demo_env.DemoEnv.step
def step(self):
    nvtxsim.step()
    return _step(self)
demo_env.DemoEnv.step = step
sys.exit(demo_env.main(sys.argv[1:]))
PY
  demo=("$tmp/demo_stepped.py")
  echo "demo_env.py has no nvtxsim.step(): wrapped DemoEnv.step (warm-up iterations count too)" | tee -a "$OUT/env.txt"
fi
DEMO_ARGS=(--device "${DEMO_DEVICE:-cuda}" --iterations 60)

timeout "$T" "${NV[@]}" doctor > "$OUT/doctor.txt" 2>&1; echo "doctor rc=$?" >> "$OUT/doctor.txt"
timeout "$T" "${NV[@]}" doctor --json > "$OUT/doctor.json" 2> "$OUT/doctor.json.err"

run() {  # run NAME ARGS... : nvtxsim profile, log, exit code
  local name=$1; shift
  timeout "$T" "${NV[@]}" profile -o "$OUT/$name" --force "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc" | tee -a "$OUT/rc.txt"
}
run exitcode --no-report -- "$PY" -c "import sys; sys.exit(3)"
run full -- "$PY" "${demo[@]}" "${DEMO_ARGS[@]}"
run window_nvtx --iterations 10:20 -- "$PY" "${demo[@]}" "${DEMO_ARGS[@]}"
run window_cuda --iterations 10:20 --window cuda -- "$PY" "${demo[@]}" "${DEMO_ARGS[@]}"

for name in full window_nvtx window_cuda; do
  [ -f "$OUT/$name.sqlite" ] && timeout "$T" "${NV[@]}" report --format json "$OUT/$name.sqlite" > "$OUT/$name.report.json" 2>&1
done

cat > "$tmp/summary.py" <<'PY'
import sqlite3, sys
from pathlib import Path
out = Path(sys.argv[1])
rcs = dict(l.split(" rc=") for l in (out / "rc.txt").read_text().split("\n") if " rc=" in l)
lines = [f"exitcode: nvtxsim profile returned {rcs.get('exitcode')} (want 3)"]
expect = {"full": 60, "window_nvtx": 10, "window_cuda": 10}
for name, want in expect.items():
    db = out / f"{name}.sqlite"
    if not db.exists():
        lines.append(f"{name}: rc={rcs.get(name)} NO SQLITE (see {name}.log)")
        continue
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
    def q(sql, default=None):
        try:
            return con.execute(sql).fetchone()
        except sqlite3.Error:
            return default
    name_of = "COALESCE(e.text, s.value)"
    nvtx = "NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId"
    counts = {r[0]: r[1] for r in con.execute(
        f"select {name_of}, count(*) from {nvtx} where e.eventType in (59, 60) group by 1")} if "NVTX_EVENTS" in tables else {}
    first, last = q(f"select min(e.start), max(e.end) from {nvtx} where e.eventType = 59 and {name_of} = 'iteration'", (None, None))
    k = "CUPTI_ACTIVITY_KIND_KERNEL"
    kernels = q(f"select count(*) from {k}", (0,))[0] if k in tables else 0
    before = q(f"select count(*) from {k} where start < {first}", (0,))[0] if (k in tables and first is not None) else 0
    after = q(f"select count(*) from {k} where start > {last}", (0,))[0] if (k in tables and last is not None) else 0
    rt = q("select count(*) from CUPTI_ACTIVITY_KIND_RUNTIME", (0,))[0] if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables else 0
    n_it = counts.get("iteration", 0)
    verdict = "OK" if n_it == want and kernels > 0 else "CHECK"
    lines.append(
        f"{name}: rc={rcs.get(name)} iteration ranges={n_it} (want {want}) sim_step={counts.get('sim_step', 0)} "
        f"policy_update={counts.get('policy_update', 0)} capture_window={counts.get('capture_window', 0)} "
        f"kernels={kernels} (before first iteration: {before}, after last: {after}) runtime calls={rt} "
        f"size={db.stat().st_size} B -> {verdict}"
    )
text = "\n".join(lines) + "\n"
(out / "summary.txt").write_text(text)
print(text, end="")
PY
"$PY" "$tmp/summary.py" "$OUT"
for f in "$OUT"/*.sqlite; do [ -f "$f" ] && gzip -f "$f"; done
rm -f "$OUT"/*.nsys-rep
echo "--- doctor"; cat "$OUT/doctor.txt"
echo "--- window_nvtx.log (tail)"; grep -v '%' "$OUT/window_nvtx.log" | tail -40
