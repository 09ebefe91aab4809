#!/usr/bin/env bash
# Does nsys's Python sampling put Python frames into the SQLite export? (nsys 2025.3 on the GPU host)
#   source .gpu/env.sh && OUT=DIR bash scripts/gpu/probes/python_sampling.sh
# Captures a loop whose hot function is known (hot_helper, two calls deep in phase "reward") with
# --sample=process-tree --python-sampling=true, then lists the export's tables and row counts, the StringIds
# that name the workload's functions, and every integer column of every table that holds one of those ids.
set -uo pipefail
work=$(mktemp -d)
cat > "$work/hot.py" <<'PY'
import time, nvtxsim
def hot_helper(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def middle(n):
    return hot_helper(n)
reward = nvtxsim.phase("reward")
for it in range(200):
    with nvtxsim.phase("iteration"):
        with reward:
            middle(20000)
        time.sleep(0.001)
PY
timeout 120 "$NSYS" profile -t nvtx,osrt --sample=process-tree --python-sampling=true --python-sampling-frequency=1000 \
  --cpuctxsw=none --export=sqlite --force-overwrite=true -o "$work/pysample" python3 "$work/hot.py" > "$work/log" 2>&1
echo "nsys exit $?"; tail -n 5 "$work/log"
python3 - "$work/pysample.sqlite" <<'PY' | tee "$OUT/python_sampling.txt"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
tables = [r[0] for r in c.execute("select name from sqlite_master where type='table'")]
print("tables with rows:")
for t in tables:
    n = c.execute(f'select count(*) from "{t}"').fetchone()[0]
    if n:
        print(f"  {t}: {n}")
ids = {i: v for i, v in c.execute("select id, value from StringIds where value like '%hot_helper%' or value like '%middle%' or value like '%hot.py%'")}
print("StringIds naming the workload:", ids)
for t in tables:
    cols = [r[1] for r in c.execute(f'pragma table_info("{t}")') if (r[2] or "").upper().startswith("INT")]
    for col in cols:
        if not ids:
            break
        n = c.execute(f'select count(*) from "{t}" where "{col}" in ({",".join(map(str, ids))})').fetchone()[0]
        if n:
            print(f"  referenced: {t}.{col}: {n} rows")
print("done")
PY
gzip -9 -c "$work/pysample.sqlite" > "$OUT/python_sampling.sqlite.gz"
rm -rf "$work"
