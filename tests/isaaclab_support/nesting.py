"""Nesting checks over ranges (in-process records or an nsys export), shared by the Isaac Lab tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple


class Span(NamedTuple):
    name: str
    start: int
    end: int
    tid: int = 0


def from_export(path: str, domain: str = "nvtxsim") -> list[Span]:
    """The push/pop ranges of ``domain`` in an nsys SQLite export, via nvtxsim's loader."""
    from nvtxsim.export.reader import load

    r = load(path, cuda=False).ranges
    keep = [i for i in range(len(r)) if r.domain[i] == domain]
    spans = [Span(str(r.name[i]), int(r.start[i]), int(r.end[i]), int(r.global_tid[i])) for i in keep]
    return sorted(spans, key=lambda s: (s.start, -s.end))


def parents(spans: list[Span]) -> list[int | None]:
    """Index of each span's innermost enclosing span on the same thread (None at top level)."""
    out: list[int | None] = []
    open_by_tid: dict[int, list[int]] = {}
    for i, s in enumerate(spans):
        stack = open_by_tid.setdefault(s.tid, [])
        while stack and not (spans[stack[-1]].start <= s.start and s.end <= spans[stack[-1]].end):
            stack.pop()
        out.append(stack[-1] if stack else None)
        stack.append(i)
    return out


def ancestors(spans: list[Span], par: list[int | None], i: int) -> list[str]:
    names = []
    p = par[i]
    while p is not None:
        names.append(spans[p].name)
        p = par[p]
    return names


def children_count(
    spans: list[Span], par: list[int | None], parent_name: str, child_name: str, direct: bool = False
) -> list[int]:
    """For every ``parent_name`` span, how many ``child_name`` spans it contains (directly, or at any depth)."""
    counts = {i: 0 for i, s in enumerate(spans) if s.name == parent_name}
    for i, s in enumerate(spans):
        if s.name != child_name:
            continue
        p = par[i]
        while p is not None:
            if spans[p].name == parent_name:
                counts[p] += 1
                break
            if direct:
                break
            p = par[p]
    return [counts[i] for i in sorted(counts)]


def inside(spans: list[Span], par: list[int | None], name: str, outer: str) -> tuple[int, int]:
    """(how many ``name`` spans have an ``outer`` ancestor, how many ``name`` spans there are)."""
    total = hits = 0
    for i, s in enumerate(spans):
        if s.name == name:
            total += 1
            hits += outer in ancestors(spans, par, i)
    return hits, total


def self_nested(spans: list[Span], par: list[int | None]) -> list[str]:
    """Names that appear inside a span of the same name (the guard must prevent this)."""
    return sorted({s.name for i, s in enumerate(spans) if s.name in ancestors(spans, par, i)})


def names(spans: Iterable[Span]) -> Counter:
    return Counter(s.name for s in spans)
