"""Every Python example in README.md and docs/ runs as written.

A fenced ``python`` block is executed; a block of ``>>>`` lines (``pycon``, or a bare fence) is a
doctest whose printed output must match. The blocks of one file run in order in one namespace, as a
reader would type them, in a scratch folder where ``run.sqlite`` (and ``huge.sqlite``) is a real
GPU export and ``tests/`` is the repository's. The free names an example stands for (the user's
``sim``, ``env``, ``policy``...) are the small stand-ins of :data:`STAND_INS`.

An example that cannot run here says so in the page itself, on the line before its fence:
``<!-- not run: <why> -->``. :data:`NOT_RUN` counts them per file, so a new unrunnable example is a
decision made in this test, never a silent skip.
"""

from __future__ import annotations

import doctest
import gzip
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GPU_EXPORT = ROOT / "tests" / "data" / "gpu" / "demo_h200.sqlite.gz"

#: Examples that need what this machine has not (Isaac Lab, a GPU, tensorboard/wandb), by page.
NOT_RUN = {"README.md": 1, "isaaclab.md": 1, "live.md": 1}

_FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->\s*$")


class Example:
    def __init__(self, page: Path, line: int, lang: str, code: str, not_run: str | None) -> None:
        self.page, self.line, self.lang, self.code, self.not_run = page, line, lang, code, not_run

    @property
    def doctest(self) -> bool:
        return self.code.lstrip().startswith(">>>")

    def __repr__(self) -> str:
        return f"{self.page.name}:{self.line}"


def examples(page: Path) -> list[Example]:
    """The page's Python examples (``python``/``py`` blocks and ``>>>`` blocks), in order."""
    text = page.read_text(encoding="utf-8")
    found = []
    for m in _FENCE.finditer(text):
        lang, code = m.group(1).lower(), m.group(2)
        if lang not in ("python", "py", "pycon") and not (lang == "" and code.lstrip().startswith(">>>")):
            continue
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _NOT_RUN.search(before)
        found.append(Example(page, text[: m.start()].count("\n") + 1, lang, code, marker and marker.group(1)))
    return found


class _Anything:
    """A stand-in for the user's objects: every attribute and call gives another stand-in."""

    def __getattr__(self, name: str) -> _Anything:
        return _Anything()

    def __call__(self, *args: object, **kwargs: object) -> _Anything:
        return _Anything()


class MyEnv:
    """The README's own environment class, with the two methods its example instruments."""

    def step(self, action: object) -> object:
        return self._get_observations()

    def _get_observations(self) -> object:
        return 0


def stand_ins() -> dict[str, object]:
    """The free names of the examples: the user's loop objects, as small as they can be."""
    return {
        "num_iterations": 3,
        "decimation": 2,
        "obs": 0,
        "sim": _Anything(),
        "camera": _Anything(),
        "env": _Anything(),
        "actor": lambda obs: obs,
        "policy": lambda obs: obs,
        "MyEnv": MyEnv,
    }


STAND_INS = stand_ins()


def _run(ex: Example, namespace: dict) -> None:
    if ex.doctest:
        test = doctest.DocTestParser().get_doctest(ex.code, namespace, repr(ex), str(ex.page), ex.line)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        out: list[str] = []
        runner.run(test, out=out.append, clear_globs=False)
        assert runner.failures == 0, f"{ex!r}: the printed output differs from the page\n" + "".join(out)
    else:
        exec(compile(ex.code, f"{ex.page.name}:{ex.line}", "exec"), namespace)


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    with gzip.open(GPU_EXPORT, "rb") as src, open(tmp_path / "run.sqlite", "wb") as dst:
        shutil.copyfileobj(src, dst)
    shutil.copyfile(tmp_path / "run.sqlite", tmp_path / "huge.sqlite")
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NVTXSIM_CACHE", "0")
    return tmp_path


@pytest.mark.parametrize("page", [p for p in PAGES if any(not e.not_run for e in examples(p))], ids=lambda p: p.name)
def test_page_examples_run(page: Path, scratch: Path) -> None:
    namespace: dict = {"__name__": "__doc_example__", **stand_ins()}
    for ex in examples(page):
        if not ex.not_run:
            _run(ex, namespace)


def test_unrunnable_examples_are_counted_and_say_why() -> None:
    skipped = {p.name: [e for e in examples(p) if e.not_run is not None] for p in PAGES}
    assert {k: len(v) for k, v in skipped.items() if v} == NOT_RUN
    for ex in (e for v in skipped.values() for e in v):
        assert len(ex.not_run or "") >= 10, f"{ex!r}: say why it is not run"


def test_the_runner_finds_every_python_block() -> None:
    """An independent count of the fences: a block the runner's pattern missed would go untested."""
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        fences = [i for i, s in enumerate(lines) if s.startswith("```python") or s.startswith("```pycon")]
        got = [e for e in examples(page) if e.lang in ("python", "pycon")]
        assert len(got) == len(fences), page.name
    assert sum(len(examples(p)) for p in PAGES) >= 10


def test_a_failing_example_fails(tmp_path: Path) -> None:
    """The runner can fail: a wrong printed value and a raising block are both caught."""
    page = tmp_path / "page.md"
    page.write_text("```pycon\n>>> 1 + 1\n3\n```\n\n```python\n[][:1]\nNone.kind\n```\n")
    bad_output, raising = examples(page)
    with pytest.raises(AssertionError, match="differs"):
        _run(bad_output, {})
    with pytest.raises(AttributeError):
        _run(raising, {})


def test_docs_describe_the_product_not_how_it_was_made():
    """No "issue 13", "round 3", "adversarial": the pages state what nvtxsim does and promises."""
    process = re.compile(r"\bissue \d+|\bround \d+\b|\badversarial\b|\bthe lead\b|\bhelpers?\b session", re.I)
    for page in PAGES:
        hits = [ln for ln in page.read_text(encoding="utf-8").splitlines() if process.search(ln)]
        assert not hits, (page.name, hits)


def test_numbered_sections_are_in_order():
    for page in PAGES:
        numbers = [int(m) for m in re.findall(r"^## (\d+)\.", page.read_text(encoding="utf-8"), re.M)]
        assert numbers == list(range(1, len(numbers) + 1)), (page.name, numbers)
    assert len(re.findall(r"^## \d+\.", (ROOT / "docs" / "reliability.md").read_text(), re.M)) >= 5
