"""What a newcomer reads first: hints that blame the right thing, and the report's opening lines."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

import nvtxsim

DATA = Path(__file__).resolve().parent / "data"
DEMO = DATA / "gpu" / "demo_h200.sqlite.gz"
CPU = DATA / "reliability" / "cpu_loop_2022_4.sqlite.gz"


def _without_cuda_tables(tmp: Path) -> Path:
    """The H200 demo export with its CUDA tables dropped: a GPU machine, captured without -t cuda."""
    out = tmp / "nocuda.sqlite"
    with gzip.open(DEMO, "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    con = sqlite3.connect(out)
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'CUPTI_%'")]
    for name in names:
        con.execute(f"DROP TABLE {name}")
    con.commit()
    con.close()
    assert names
    return out


def test_no_cuda_hint_names_the_missing_gpu_or_the_trace_flag(tmp_path):
    no_gpu = nvtxsim.report(CPU)  # captured by nsys 2022.4 on a machine without a GPU
    assert "export has no CUDA trace (the capturing machine reported no GPU): GPU columns are 0" in no_gpu.warnings
    assert not any("-t cuda" in w for w in no_gpu.warnings)
    assert no_gpu.findings is not None and "reported no GPU" in no_gpu.findings.notes[-1]
    gpu_box = nvtxsim.report(_without_cuda_tables(tmp_path))
    assert any("no CUDA trace (capture with nsys -t cuda" in w for w in gpu_box.warnings), gpu_box.warnings
