"""`nvtxsim report A B ...`: per-rank tables, a merged table equal to the ranks' ranges together, the spread."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

from synth import make_export


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "nvtxsim", "report", *args], capture_output=True, text=True, timeout=300
    )


def test_many_exports_json_and_csv(tmp_path):
    paths = []
    for seed in (21, 22, 23):
        p = tmp_path / f"rank{seed}.sqlite"
        make_export(p, seed)
        paths.append(str(p))
    proc = _cli(*paths, "--domain", "all", "-f", "json", "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["ranks"]) == 3 and doc["source"]["ranks"] == 3
    singles = [
        {
            p["name"] + "@" + p["domain"]: p
            for p in json.loads(_cli(x, "--domain", "all", "-f", "json").stdout)["phases"]
        }
        for x in paths
    ]
    for p in doc["phases"]:
        key = p["name"] + "@" + p["domain"]
        assert p["instances"] == sum(s[key]["instances"] for s in singles if key in s)
        assert p["cpu_total_ns"] == sum(s[key]["cpu_total_ns"] for s in singles if key in s)
        assert p["gpu_proj_total_ns"] == sum(s[key]["gpu_proj_total_ns"] for s in singles if key in s)
        assert p["cpu_max_ns"] == max(s[key]["cpu_max_ns"] for s in singles if key in s)
    assert {row["phase"] for row in doc["spread"]} >= {"nvtxsim:iteration"}

    out = tmp_path / "ranks.csv"
    proc = _cli(*paths, "--domain", "all", "-f", "csv", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert {r["rank"] for r in rows} == {"0", "1", "2", "all"}


def test_many_exports_refuse_detail_formats(tmp_path):
    paths = []
    for seed in (31, 32):
        p = tmp_path / f"r{seed}.sqlite"
        make_export(p, seed)
        paths.append(str(p))
    proc = _cli(*paths, "-f", "html")
    assert proc.returncode == 2 and proc.stderr.startswith("nvtxsim: error: with several exports")
    assert "Traceback" not in proc.stderr
    proc = _cli(*paths, str(tmp_path / "missing.sqlite"))
    assert proc.returncode == 2 and "no such file" in proc.stderr and "Traceback" not in proc.stderr
