"""`nvtxsim.analysis.ranks.report_many`: per-rank reports plus a merged report equal to one process over all ranks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from committed import committed
from synth import make_export

from nvtxsim.analysis import ranks
from nvtxsim.analysis.projection import RangeGpu, project, select_ranges, summarize
from nvtxsim.analysis.ranks import rank_spread, report_many
from nvtxsim.errors import NvtxsimError
from nvtxsim.export.reader import Export, Ranges, load
from nvtxsim.reporting.pipeline import report
from nvtxsim.schema import SUMMARY_DIRECTIONS as DIRECTIONS

GPU_DATA = Path(__file__).resolve().parent / "data" / "gpu"


@pytest.fixture(scope="module")
def rank_files(tmp_path_factory):
    """Four 'ranks' of different shapes: processes, graphs, syncs, several GPUs, and a real H200 export when shipped."""
    tmp = tmp_path_factory.mktemp("ranks")
    paths = []
    for i, kw in enumerate([{}, dict(processes=3, threads=2), dict(graphs="node", syncs=True, devices=2)]):
        p = tmp / f"rank{i}.sqlite"
        make_export(p, 40 + i, **kw)
        paths.append(p)
    paths.append(committed(GPU_DATA / "demo_h200.sqlite.gz"))
    return paths


def _single_process(paths, domain):
    """Reference: all ranks' ranges in one export (threads of different ranks kept apart), summarized once."""
    labels: list[tuple[str, str]] = []
    where: dict[tuple[str, str], int] = {}
    parts: dict[str, list] = {
        k: [] for k in ("start", "end", "tid", "cross", "unclosed", "label", "ps", "pe", "ops", "kernels", "busy")
    }
    copies: dict[str, list] = {d: [] for d in DIRECTIONS}
    for rank, path in enumerate(paths):
        ex = load(path)
        g = project(ex)
        idx = select_ranges(ex, domain)
        r = ex.ranges
        remap = np.array([where.setdefault(lab, len(where)) for lab in ex.labels], dtype=np.int32)
        for lab in ex.labels:
            if lab not in labels:
                labels.append(lab)
        _, tid_code = np.unique(r.global_tid[idx], return_inverse=True)
        parts["start"].append(r.start[idx])
        parts["end"].append(r.end[idx])
        parts["tid"].append((np.int64(rank) << 32) + tid_code.reshape(-1))
        parts["cross"].append(r.cross_thread[idx])
        parts["unclosed"].append(r.unclosed[idx])
        parts["label"].append(remap[r.label[idx]] if len(remap) else np.zeros(0, dtype=np.int32))
        for k, v in (
            ("ps", g.proj_start),
            ("pe", g.proj_end),
            ("ops", g.ops),
            ("kernels", g.kernels),
            ("busy", g.busy),
        ):
            parts[k].append(v[idx])
        for d in DIRECTIONS:
            copies[d].append(g.copy_bytes[d][idx])
    labels = sorted(where, key=where.get)
    cat = {k: np.concatenate(v) for k, v in parts.items()}
    n = len(cat["start"])
    combined = Export(
        path=Path("all"),
        meta={},
        tables=frozenset(),
        labels=labels,
        api=None,
        gpu=None,
        capture_end=None,
        warnings=[],
        ranges=Ranges(
            row=np.arange(n),
            start=cat["start"],
            end=cat["end"],
            global_tid=cat["tid"],
            cross_thread=cat["cross"],
            unclosed=cat["unclosed"],
            style=np.zeros(n, dtype=np.int8),
            label=cat["label"],
            payload=np.full(n, np.nan),
        ),
    )
    gpu = RangeGpu(
        cat["ps"], cat["pe"], cat["ops"], cat["kernels"], cat["busy"], {d: np.concatenate(v) for d, v in copies.items()}
    )
    return summarize(combined, gpu, domain=None)


@pytest.mark.parametrize("domain", [None, "nvtxsim"])
def test_merged_equals_single_process_and_ranks_equal_their_reports(rank_files, domain):
    per, merged = report_many(rank_files, domain=domain, workers=2)
    assert len(per) == len(rank_files)
    for path, rep in zip(rank_files, per):
        one = report(path, domain=domain or "all", findings=False).summary
        assert rep.as_dict()["phases"] == one.as_dict()["phases"], path
    ref = _single_process(rank_files, domain)
    assert [p.as_dict() for p in merged.phases] == [p.as_dict() for p in ref.phases]
    assert len(merged.phases) > 5
    assert merged.source["ranks"] == len(rank_files)
    assert merged.source["ranges"] == sum(r.source["ranges"] for r in per)
    # Merged totals are the ranks' sums; percentiles come from all ranges together.
    for p in merged.phases:
        mine = [q for r in per for q in r.phases if q.label == p.label]
        assert p.instances == sum(q.instances for q in mine)
        assert p.cpu_total_ns == sum(q.cpu_total_ns for q in mine)
        assert p.gpu_ops == sum(q.gpu_ops for q in mine)
        assert p.threads == sum(q.threads for q in mine)
        assert p.cpu_min_ns == min(q.cpu_min_ns for q in mine) and p.cpu_max_ns == max(q.cpu_max_ns for q in mine)


def test_one_rank_merged_is_that_rank(rank_files):
    for path in rank_files:
        per, merged = report_many([path], domain=None, workers=1)
        assert [p.as_dict() for p in merged.phases] == [p.as_dict() for p in per[0].phases]


def test_in_process_and_process_pool_agree(rank_files):
    a_per, a = report_many(rank_files, domain=None, workers=1)
    b_per, b = report_many(rank_files, domain=None, workers=3)
    assert a.as_dict()["phases"] == b.as_dict()["phases"]
    assert [r.as_dict() for r in a_per] == [r.as_dict() for r in b_per]


def test_rank_spread_names_the_slowest_rank(rank_files):
    per, _ = report_many(rank_files[:3], domain=None, workers=1)
    rows = {r["phase"]: r for r in rank_spread(per)}
    assert rows
    for row in rows.values():
        totals = row["cpu_total_ns"]
        assert len(totals) == 3 and totals[row["slowest_rank"]] == max(totals)


def test_bad_rank_is_a_one_line_error(rank_files, tmp_path):
    with pytest.raises(NvtxsimError, match="no such file"):
        report_many([rank_files[0], tmp_path / "missing.sqlite"], workers=2)
    with pytest.raises(NvtxsimError):
        report_many([], workers=1)
    with pytest.raises(NvtxsimError, match="--jobs"):
        report_many(rank_files, workers=0)


def test_dask_local_cluster_gives_the_same_numbers(rank_files):
    distributed = pytest.importorskip("distributed")
    local_per, local = report_many(rank_files, domain=None, workers=1)
    with distributed.LocalCluster(
        n_workers=1, processes=False, threads_per_worker=2, protocol="tcp", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        per, merged = report_many(rank_files, domain=None, dask=cluster.scheduler_address)
    assert merged.as_dict()["phases"] == local.as_dict()["phases"]
    assert [r.as_dict() for r in per] == [r.as_dict() for r in local_per]


def test_dask_unreachable_scheduler_is_a_one_line_error(rank_files, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(ranks, "DASK_TIMEOUT", "1s")
    with pytest.raises(NvtxsimError, match="Dask scheduler"):
        report_many(rank_files[:1], dask="tcp://127.0.0.1:9")
