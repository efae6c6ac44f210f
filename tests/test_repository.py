"""The repository keeps its own rules: lint-clean library, tests and notebooks; notebooks
committed without outputs; runbooks that analyse once; no link that leaves the repository."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from traindoc.score import RUNBOOKS as CLASSES

RUNBOOKS = sorted((ROOT / "lib" / "traindoc" / "runbooks").glob("*.ipynb"))
NOTEBOOKS = RUNBOOKS + sorted((ROOT / "notebooks").glob("*.ipynb"))
# [text](target) in Markdown; a target that is a URL or climbs out of the repository leaves it
LINK_RE = re.compile(r"\]\(\s*<?([^)\s>]+)")
URL_RE = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def _cells(nb: Path, kind: str) -> list[str]:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == kind]


def _tracked(pattern: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", pattern], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:  # not a git checkout (an sdist): every file on disk
        return sorted(p for p in ROOT.rglob(pattern) if ".venv" not in p.parts)
    return [ROOT / p for p in out.stdout.splitlines()]


def test_ruff_is_clean_on_library_tests_and_notebooks() -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (pip install -e '.[dev]')")
    res = subprocess.run([ruff, "check", "lib", "tests", "benchmarks", "notebooks"], cwd=ROOT,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_are_committed_without_outputs(nb: Path) -> None:
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    dirty = [i for i, c in enumerate(cells) if c["cell_type"] == "code"
             and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{nb.name}: cells {dirty} carry outputs; clear them before committing"


@pytest.mark.parametrize("cls", CLASSES)
def test_runbook_analyses_once_and_displays_from_the_analysis(cls: str) -> None:
    code = "\n".join(_cells(ROOT / "lib" / "traindoc" / "runbooks" / f"{cls}.ipynb", "code"))
    assert len(re.findall(rf"\b{cls}\.analyse\(", code)) == 1, f"{cls}: call analyse once"
    assert not re.search(rf"\b{cls}\.diagnose\(", code), f"{cls}: report(analysis), not diagnose"
    assert re.search(rf"\b{cls}\.report\(", code)


@pytest.mark.parametrize("cls", CLASSES)
def test_bottom_line_comes_right_after_loading(cls: str) -> None:
    """Verdict, confidence and first action on the first screen, before the detail."""
    code = _cells(ROOT / "lib" / "traindoc" / "runbooks" / f"{cls}.ipynb", "code")
    at = [i for i, c in enumerate(code) if "bottom_line_html()" in c]
    analysed = [i for i, c in enumerate(code) if f"{cls}.analyse(" in c]
    assert at and analysed and at[0] <= analysed[0] + 1, f"{cls}: bottom line right after analyse"
    md = [c for c in _cells(ROOT / "lib" / "traindoc" / "runbooks" / f"{cls}.ipynb", "markdown")]
    before = md[:next(i for i, c in enumerate(md) if c.startswith("## Bottom line"))]
    assert len(before) == 1 and before[0].startswith("# ") and "\n" not in before[0].strip(), (
        f"{cls}: only the title above the bottom line, no prose section (issue 27)")


def test_no_link_leaves_the_repository() -> None:
    docs = [p for p in _tracked("*.md") if "corpus" not in p.relative_to(ROOT).parts[:2]]
    texts = [(p, p.read_text(encoding="utf-8")) for p in docs]
    texts += [(nb, "\n".join(_cells(nb, "markdown"))) for nb in NOTEBOOKS]
    bad = []
    for path, text in texts:
        for target in LINK_RE.findall(text):
            target = target.split("#", 1)[0]
            if URL_RE.match(target):
                bad.append(f"{path.relative_to(ROOT)}: {target}")
            elif target and not (path.parent / target).resolve().is_relative_to(ROOT):
                bad.append(f"{path.relative_to(ROOT)}: {target}")
    assert not bad, "links that leave the repository:\n" + "\n".join(bad)


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_parameter_is_read(nb: Path) -> None:
    """No parameter that does nothing (issue 27: the walkthrough's 'reserved' interactive):
    each name the parameters cell sets is read by another code cell."""
    cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
    params = next(c for c in cells if "parameters" in c["metadata"].get("tags", [])
                  or "".join(c["source"]).startswith("# Parameters"))
    names = re.findall(r"^(\w+) = ", "".join(params["source"]), re.M)
    rest = "\n".join("".join(c["source"]) for c in cells
                     if c["cell_type"] == "code" and c is not params)
    unread = [n for n in names if not re.search(rf"\b{n}\b", rest)]
    assert names and not unread, f"{nb.name}: parameters no code reads: {unread}"
