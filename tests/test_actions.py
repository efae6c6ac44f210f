"""Every script an action runs is in this repository (issue 15.5: a "python gpu_bench.py" that
existed nowhere): every runbook on every sample and corpus case, each action's command."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from conftest import CORPUS, ROOT, SAMPLE_DIRS, reports_once
from traindoc.diagnose import NAMES

RUNBOOKS = NAMES

SCRIPT_RE = re.compile(r"\bpython3? (?:-u )?(?P<script>[\w./-]+\.py)\b")
MODULE_RE = re.compile(r"\bpython3? -m (?P<module>traindoc(?:\.\w+)*)")


def _cases() -> list[tuple[str, Path]]:
    out = []
    for d in SAMPLE_DIRS:
        rb = d.parent.name
        if rb in RUNBOOKS:
            out.append((rb, d))
    for cj in sorted(CORPUS.glob("*/*/case.json")):
        out.append((cj.parent.parent.name, cj.parent / "logs"))
    return out


def _check(how: str) -> list[str]:
    bad = []
    for m in SCRIPT_RE.finditer(how):
        script = m["script"]
        if not (ROOT / script).exists() and not list(ROOT.glob(f"**/{Path(script).name}")):
            bad.append(f"script {script} is not in this repository")
    for m in MODULE_RE.finditer(how):
        if importlib.util.find_spec(m["module"]) is None:
            bad.append(f"module {m['module']} does not exist")
    return bad


@pytest.mark.parametrize(("runbook", "path"), _cases(), ids=lambda v: str(v)[-60:])
def test_every_action_command_exists(runbook: str, path: Path) -> None:
    for a in reports_once(path)[runbook].actions:
        assert not _check(a.how), (a.id, a.how)


def test_gpubench_runs_on_cpu(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    from traindoc import gpubench

    assert gpubench.main(["--device", "cpu", "--size", "64", "--repeats", "2"]) == 0
    host, seconds = capsys.readouterr().out.strip().split(",")
    assert host and float(seconds) >= 0
