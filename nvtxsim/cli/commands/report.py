"""``nvtxsim report``: per-phase CPU/GPU tables from an nsys export.

A thin command: the arguments become a :class:`~nvtxsim.reporting.model.ReportRequest`; the
export is loaded, analysed and rendered by :mod:`nvtxsim.reporting.pipeline` (the same path as
``nvtxsim.report()``); the text goes to stdout or, atomically, to ``-o FILE``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

from nvtxsim.cli.arguments import add_view_arguments, domain_from_args, request_from_args
from nvtxsim.cli.output import add_output_arguments, check_writable, deliver, layout
from nvtxsim.cli.progress import load_with_progress, progress_after
from nvtxsim.errors import int_option
from nvtxsim.reporting.escaping import printable
from nvtxsim.reporting.model import ReportRequest
from nvtxsim.reporting.renderers import DEFAULT_FORMAT, formats_for, renderer

__all__ = ["run", "run_report", "run_ranks", "add_parser", "domain_from_args"]


def run_report(
    path: str | os.PathLike[str],
    *,
    fmt: str = DEFAULT_FORMAT,
    out: str | Path | None = None,
    force: bool = False,
    stream: TextIO | None = None,
    request: ReportRequest | None = None,
    wide: bool = False,
) -> int:
    """Report on ``path`` to ``out`` (a file, written atomically) or ``stream`` (default stdout).

    ``wide``: on a terminal too, every column and whole names (lines may be wider than the terminal)."""
    from nvtxsim.reporting.pipeline import analyse, render

    if out is not None:
        check_writable(out, force=force, protect=[path])
    request = request or ReportRequest()
    stream = stream or sys.stdout
    to = layout(out, wide=wide, stream=stream)
    # One progress display (stderr, terminals only, after 1 s) over load, analysis and rendering.
    with progress_after(f"loading {Path(path).name}") as progress:
        export = load_with_progress(path, progress=False)
        progress.stage("analysing")
        model = analyse(export, request, fmt=fmt)
        progress.stage("rendering")
        text = render(model, fmt, width=to.width, color=to.color)
    deliver(text, out, force=force, protect=[path], stream=stream)
    failed = model.failed_findings() if request.fail_on else []
    if failed:
        sys.stderr.write("".join(f"nvtxsim: --fail-on {printable(line)}\n" for line in failed))  # names are data
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    if args.cache is not None:  # read by load(), also in rank worker processes
        os.environ["NVTXSIM_CACHE"] = "1" if args.cache else "0"
    request = request_from_args(args)
    if args.ranks:
        if len(args.paths) != 1 or args.dask:
            from nvtxsim.errors import NvtxsimError

            raise NvtxsimError(
                "--ranks splits one export of several processes by pid; several exports are already one per rank"
                if len(args.paths) != 1
                else "--ranks reads one export here: --dask is for several exports"
            )
        return run_ranks(
            args.paths, fmt=args.format, out=args.output, force=args.force, request=request, wide=args.wide, split=True
        )
    if len(args.paths) > 1 or args.dask:
        return run_ranks(
            args.paths,
            fmt=args.format,
            out=args.output,
            force=args.force,
            jobs=args.jobs,
            dask=args.dask,
            request=request,
            wide=args.wide,
        )
    return run_report(
        args.paths[0], fmt=args.format, out=args.output, force=args.force, request=request, wide=args.wide
    )


def run_ranks(
    paths: list[str],
    *,
    fmt: str = DEFAULT_FORMAT,
    out: str | Path | None = None,
    force: bool = False,
    jobs: int | None = None,
    dask: str | None = None,
    request: ReportRequest | None = None,
    wide: bool = False,
    split: bool = False,
) -> int:
    """Several exports (one per rank): per-rank tables, the merged table and the spread across ranks.

    ``split``: ``paths`` is one export of several processes (``nsys profile torchrun ...``), one rank
    per pid in pid order (nsys does not record the rank; ``--ranks``)."""
    from nvtxsim.analysis.findings import Findings
    from nvtxsim.analysis.findings.rank_skew import detect_ranks, note
    from nvtxsim.analysis.ranks import analyse_many, collective_waits, merge, rank_spread, split_by_pid
    from nvtxsim.errors import NvtxsimError
    from nvtxsim.reporting.ranks import ranks_document
    from nvtxsim.reporting.renderers import render

    request = request or ReportRequest()
    if not renderer(fmt).renders("ranks") or not request.is_classic:
        several = formats_for("ranks")
        one = " or ".join(f for f in formats_for("report") if f not in several)
        raise NvtxsimError(
            f"with several exports only the summary is available (formats {', '.join(several)}); report one file for views, {one}"
        )
    if request.fail_on:
        raise NvtxsimError("--fail-on looks at the findings of one export: report each rank's file on its own")
    if out is not None:
        check_writable(out, force=force, protect=paths)
    notes: list[str] = []
    if split:
        results = split_by_pid(paths[0], domain=request.domain, domain_given=request.domain_given)
        pids = ", ".join(f"rank {i} = pid {r.report.source['pid']}" for i, r in enumerate(results))
        notes.append(f"ranks taken in pid order (nsys does not record the rank): {pids}")
    else:
        results = analyse_many(paths, domain=request.domain, workers=jobs, dask=dask, domain_given=request.domain_given)
    reports, merged = [r.report for r in results], merge(results)
    waits = collective_waits(results)
    refs = [r.reference_ns for r in results]
    found = detect_ranks(reports, waits, refs, [r.self_ns for r in results])
    said = note(waits, found)
    reference = int(sum(refs) / len(refs)) if refs else 0
    findings = Findings(found, None, reference, [said] if said else []) if request.findings else None
    to = layout(out, wide=wide)
    doc = ranks_document(reports, merged, rank_spread(reports), notes=notes, waits=waits, findings=findings)
    text = render(doc, fmt, color=to.color, width=to.width)
    deliver(text, out, force=force, protect=paths)
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report",
        help="per-phase CPU/GPU timing table of an nsys export",
        description="Per-phase CPU and GPU timing of an Nsight Systems export (.sqlite, or .nsys-rep when nsys is installed).",
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="nsys export (.sqlite, .sqlite.gz, .sqlite.xz or .nsys-rep); several: one per rank, reported per rank and merged",
    )
    add_output_arguments(p, formats_for("report"))
    p.add_argument(
        "--cache",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep parsed columns in .nvtxsim-cache/ beside the export for faster repeated reports (default: NVTXSIM_CACHE, off)",
    )
    p.add_argument(
        "--jobs",
        "-j",
        type=int_option("--jobs", low=1, high=4096),
        metavar="N",
        help="with several exports (one per rank): processes to load them in (default: one per file, up to the cores)",
    )
    p.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="with several exports: run the per-file work on the Dask scheduler at ADDRESS (pip install 'nvtxsim[dask]')",
    )
    p.add_argument(
        "--ranks",
        action="store_true",
        help="one export of several processes (nsys profile torchrun ...): one rank per process, in pid order, "
        "reported like one export per rank",
    )
    p.add_argument(
        "--domain",
        metavar="NAME",
        help="NVTX domain to report: a name, 'default' for the unnamed domain, or 'all' "
        "(default: nvtxsim; every domain when the export has no range in nvtxsim)",
    )
    add_view_arguments(p)
    p.set_defaults(func=run)
