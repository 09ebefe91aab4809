"""``nvtxsim report``: per-phase CPU/GPU tables from an nsys export."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Optional, TextIO

from nvtxsim.analysis.projection import DEFAULT_DOMAIN, Report, resolve_domain, summarize
from nvtxsim.cli.output import PLAIN, Layout, check_writable, deliver, layout
from nvtxsim.errors import int_option
from nvtxsim.reporting.escaping import printable
from nvtxsim.reporting.findings import before_markdown, before_table
from nvtxsim.reporting.summary import RENDERERS, outside_warnings, render_markdown, render_table
from nvtxsim.cli.progress import progress_after
from nvtxsim.reporting.pipeline import DETAIL_FORMATS, DetailRequest, add_detail_arguments, attach_findings, failed_findings, load_with_progress, render_detail, request_from_args

FORMATS = tuple(RENDERERS) + DETAIL_FORMATS


def make_report(
    path: "str | Path", *, domain: Optional[str] = DEFAULT_DOMAIN, progress: Optional[bool] = False, domain_given: bool = False, request: Optional[DetailRequest] = None
) -> Report:
    """Load → analyse one export (the programmatic form of ``nvtxsim report``).

    ``domain_given``: the user named ``domain``, so its absence is an error; otherwise an export
    without it is reported over every domain (see :func:`~nvtxsim.analysis.projection.resolve_domain`).
    ``request``: its findings settings (the findings are computed when it asks for them).
    """
    from nvtxsim.analysis.selection import Detail
    from nvtxsim.analysis.gpu import graph_hints

    export = load_with_progress(path, progress=progress)
    domain, widened = resolve_domain(export, domain, given=domain_given)
    detail = Detail(export, domain=domain)
    if request is not None and (request.findings or request.fail_on):
        from nvtxsim.analysis.findings import prefetch

        prefetch(detail)  # a streamed export: its few sync/memcpy calls are read while the projection runs
    report = summarize(export, detail.gpu, domain=domain)
    detail.__dict__["report"] = report
    if widened:
        report.warnings.insert(0, widened)
    report.warnings.extend(graph_hints(detail) + outside_warnings(detail, in_memory_only=True))
    if request is not None:
        attach_findings(detail, request)
    return report


def render(report: Report, fmt: str, *, to: Layout = PLAIN) -> str:
    if fmt == "table":
        return render_table(report, color=to.color, width=to.width, before=before_table(report, to.width))
    if fmt == "markdown":
        return render_markdown(report, before=before_markdown(report))
    return RENDERERS[fmt](report)


def run_report(
    path: "str | Path",
    *,
    fmt: str = "table",
    domain: Optional[str] = DEFAULT_DOMAIN,
    out: "str | Path | None" = None,
    force: bool = False,
    stream: Optional[TextIO] = None,
    request: Optional[DetailRequest] = None,
    wide: bool = False,
    domain_given: bool = False,
) -> int:
    """Report on ``path`` to ``out`` (a file, written atomically) or ``stream`` (default stdout).

    ``request`` asks for views, filters and the html/perfetto formats (see :mod:`nvtxsim.reporting.pipeline`);
    ``wide``: on a terminal too, every column and whole names (lines may be wider than the terminal).
    """
    if out is not None:
        check_writable(out, force=force, protect=[path])
    request = request or DetailRequest()
    if fmt in ("csv", "perfetto") and request.findings:  # neither shows them: computed only for --fail-on
        request = dataclasses.replace(request, findings=False)
    stream = stream or sys.stdout
    to = layout(out, wide=wide, stream=stream)
    # One progress display (stderr, terminals only, after 1 s) over load, analysis and rendering.
    with progress_after(f"loading {Path(path).name}") as progress:
        if request.is_classic and fmt in RENDERERS:
            report = make_report(path, domain=domain, progress=False, domain_given=domain_given, request=request)
            progress.stage("rendering")
            text = render(report, fmt, to=to)
        else:
            export = load_with_progress(path, progress=False)
            progress.stage("analysing")
            text = render_detail(export, fmt, request, domain=domain, domain_given=domain_given, color=to.color, width=to.width, progress=False)
    deliver(text, out, force=force, protect=[path], stream=stream)
    failed = failed_findings(request)
    if failed:
        sys.stderr.write("".join(f"nvtxsim: --fail-on {printable(line)}\n" for line in failed))  # names are data
        return 1
    return 0


def domain_from_args(args: argparse.Namespace) -> tuple[Optional[str], bool]:
    """``--domain``: (the domain, None for all; whether it was given)."""
    name = args.domain or DEFAULT_DOMAIN
    return (None if name == "all" else name), args.domain is not None


def run(args: argparse.Namespace) -> int:
    domain, given = domain_from_args(args)
    if args.cache is not None:  # read by load(), also in rank worker processes
        os.environ["NVTXSIM_CACHE"] = "1" if args.cache else "0"
    if len(args.paths) > 1 or args.dask:
        return run_ranks(args.paths, fmt=args.format, domain=domain, out=args.output, force=args.force, jobs=args.jobs, dask=args.dask, request=request_from_args(args), wide=args.wide, domain_given=given)
    return run_report(
        args.paths[0], fmt=args.format, domain=domain, out=args.output, force=args.force, request=request_from_args(args), wide=args.wide, domain_given=given
    )


def run_ranks(
    paths: "list[str]",
    *,
    fmt: str = "table",
    domain: Optional[str] = "nvtxsim",
    out: "str | Path | None" = None,
    force: bool = False,
    jobs: Optional[int] = None,
    dask: Optional[str] = None,
    request: Optional[DetailRequest] = None,
    wide: bool = False,
    domain_given: bool = False,
) -> int:
    """Several exports (one per rank): per-rank tables, the merged table and the spread across ranks."""
    from nvtxsim.errors import NvtxsimError
    from nvtxsim.analysis.ranks import rank_spread, report_many
    from nvtxsim.reporting.summary import render_ranks

    if fmt in DETAIL_FORMATS or (request is not None and not request.is_classic):
        raise NvtxsimError(f"with several exports only the summary is available (formats {', '.join(RENDERERS)}); report one file for views, html or perfetto")
    if request is not None and request.fail_on:
        raise NvtxsimError("--fail-on looks at the findings of one export: report each rank's file on its own")
    if out is not None:
        check_writable(out, force=force, protect=paths)
    reports, merged = report_many(paths, domain=domain, workers=jobs, dask=dask, domain_given=domain_given)
    to = layout(out, wide=wide)
    text = render_ranks(reports, merged, rank_spread(reports), fmt, color=to.color, width=to.width)
    deliver(text, out, force=force, protect=paths)
    return 0


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = sub.add_parser(
        "report",
        help="per-phase CPU/GPU timing table of an nsys export",
        description="Per-phase CPU and GPU timing of an Nsight Systems export (.sqlite, or .nsys-rep when nsys is installed).",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="nsys export (.sqlite, .sqlite.gz or .nsys-rep); several: one per rank, reported per rank and merged")
    p.add_argument("--format", "-f", choices=FORMATS, default="table", help="output format (default: table)")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    p.add_argument("--wide", action="store_true", help="on a terminal too, show every column and whole names (default: fit the terminal's width)")
    p.add_argument(
        "--cache",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep parsed columns in .nvtxsim-cache/ beside the export for faster repeated reports (default: NVTXSIM_CACHE, off)",
    )
    p.add_argument("--jobs", "-j", type=int_option("--jobs", low=1, high=4096), metavar="N", help="with several exports (one per rank): processes to load them in (default: one per file, up to the cores)")
    p.add_argument("--dask", metavar="ADDRESS", help="with several exports: run the per-file work on the Dask scheduler at ADDRESS (pip install 'nvtxsim[dask]')")
    p.add_argument(
        "--domain",
        metavar="NAME",
        help="NVTX domain to report: a name, 'default' for the unnamed domain, or 'all' "
        "(default: nvtxsim; every domain when the export has no range in nvtxsim)",
    )
    add_detail_arguments(p)
    p.set_defaults(func=run)
