"""Every runbook executed headless by papermill on every bundled sample, asserting its facts.

A sample is a folder ``data/<runbook>/<name>/`` holding ``expected.json`` (or a drill's
``drill.json``) with ``facts`` that the runbook's summary.json must match.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path

import papermill as pm
import pytest

from conftest import DATA, ROOT, runbook_kernel
from traindoc.answer import answer

RUNBOOKS = sorted(p.stem for p in (ROOT / "runbooks").glob("*.ipynb"))
COMMON = {"log_path", "output_dir", "interactive"}


def samples() -> list[tuple[str, Path, dict]]:
    out = []
    for runbook in RUNBOOKS:
        for d in sorted((DATA / runbook).glob("*/")) if (DATA / runbook).is_dir() else []:
            for name in ("expected.json", "drill.json"):
                if (d / name).exists():
                    spec = json.loads((d / name).read_text())
                    if spec.get("runbook", spec.get("class", runbook)) == runbook:
                        out.append((runbook, d, spec.get("facts", {})))
                    break
    return out


def execute(runbook: str, tmp_path: Path, **params) -> dict:
    """Run ``runbook`` headless by papermill (in the test process's kernel, its namespace
    emptied first) into ``tmp_path``; its summary.json. The executed notebook is written once,
    at the end or at the error (papermill's save after every cell, a JSON dump of the whole
    notebook each time, cost a fifth of a run's CPU)."""
    out = tmp_path / "out"
    pm.execute_notebook(
        str(ROOT / "runbooks" / f"{runbook}.ipynb"), str(tmp_path / f"{runbook}.ipynb"),
        parameters={"output_dir": str(out), **params}, kernel_name="python3",
        cwd=str(ROOT), progress_bar=False, km=runbook_kernel(),
        request_save_on_cell_execute=False)
    return json.loads((out / "summary.json").read_text())


def matches(expected, actual) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list) and expected and isinstance(expected[0], dict):
        return isinstance(actual, list) and len(actual) >= len(expected) and all(
            matches(e, a) for e, a in zip(expected, actual, strict=False))
    return expected == actual


@pytest.fixture(scope="session")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, Path], tuple[dict, Path]]:
    """``execute`` of a runbook on a sample once per test process: (summary, its folder)."""

    @functools.cache
    def run(runbook: str, sample: Path) -> tuple[dict, Path]:
        tmp = tmp_path_factory.mktemp(f"{runbook}-{sample.name}")
        return execute(runbook, tmp, log_path=str(sample)), tmp
    return run


@pytest.mark.notebooks
@pytest.mark.parametrize(("runbook", "sample", "facts"), samples(),
                         ids=[f"{r}-{d.name}" for r, d, _ in samples()])
def test_runbook_on_sample(runbook: str, sample: Path, facts: dict, executed) -> None:
    summary, tmp_path = executed(runbook, sample)
    assert summary["runbook"] == runbook
    # every figure saved as PNG is also shown in the executed notebook
    pngs = list((tmp_path / "out").rglob("*.png"))
    shown = (tmp_path / f"{runbook}.ipynb").read_text().count('"image/png"')
    assert shown >= len([p for p in pngs if p.parent == tmp_path / "out"]), (shown, pngs)
    assert summary["inputs"]["files"] >= 1
    assert summary["confidence"] in ("high", "medium", "low")
    for key, value in facts.items():
        assert key in summary["facts"], key
        assert matches(value, summary["facts"][key]), (key, value, summary["facts"][key])
    # "Seen before": the same cases in summary.json as in the notebook's section
    assert isinstance(summary["similar"], list) and len(summary["similar"]) <= 3
    # (tags out: a table cell keeps a hyphenated word whole in a span)
    text = re.sub(r"<[^>]+>", "", (tmp_path / f"{runbook}.ipynb").read_text())
    if runbook != "triage":
        assert "Seen before" in text
        assert all(s["source"] in text for s in summary["similar"]) if summary["similar"] else (
            "No similar public incident" in text)
    # what `traindoc run`/`triage` print before the notebook runs is what the notebook wrote
    early = answer(runbook, str(sample), {}, tmp_path / "out").summary
    assert early == summary


@pytest.mark.parametrize("runbook", RUNBOOKS)
def test_parameters_cell(runbook: str) -> None:
    params = pm.inspect_notebook(str(ROOT / "runbooks" / f"{runbook}.ipynb"))
    assert COMMON <= set(params), set(params)


@pytest.mark.notebooks
@pytest.mark.parametrize("runbook", RUNBOOKS)
def test_missing_input_fails_naming_log_path(runbook: str, tmp_path: Path) -> None:
    with pytest.raises(pm.PapermillExecutionError) as e:
        execute(runbook, tmp_path, log_path=str(tmp_path / "no-such.log"))
    assert "NoInputError" in str(e.value) and "log_path" in str(e.value)


@pytest.mark.notebooks
@pytest.mark.parametrize("runbook", RUNBOOKS)
def test_opened_without_log_path_asks_for_one(runbook: str, tmp_path: Path) -> None:
    """Issue 27: no bundled sample diagnosed as if it were the job; one sentence naming
    log_path and a sample to try, which exists."""
    assert pm.inspect_notebook(str(ROOT / "runbooks" / f"{runbook}.ipynb"))["log_path"][
        "default"] == "None"
    with pytest.raises(pm.PapermillExecutionError) as e:
        execute(runbook, tmp_path)
    assert e.value.ename == "NoInputError" and "log_path is not set" in e.value.evalue
    sample = e.value.evalue.split("log_path = ")[-1].strip(".'\"")
    assert (ROOT / sample).is_dir(), sample
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.notebooks
@pytest.mark.parametrize("runbook", RUNBOOKS)
@pytest.mark.parametrize("content", [b"", b"\x00\xff\xfe\x80" * 5000, b"nothing wrong here\n"],
                         ids=["empty", "binary", "no-failure"])
def test_bad_input_is_a_finding(runbook: str, content: bytes, tmp_path: Path) -> None:
    (tmp_path / "job.log").write_bytes(content)
    summary = execute(runbook, tmp_path, log_path=str(tmp_path / "job.log"))
    assert summary["confidence"] in ("high", "medium", "low")
    assert summary["findings"]


@pytest.mark.xdist_group("timeout/gemma3_seed")  # the sample's group: its execution is shared
def test_summary_keys_are_complete(executed) -> None:
    summary, _ = executed("timeout", DATA / "timeout" / "gemma3_seed")
    assert set(summary) == {"runbook", "version", "inputs", "verdict", "confidence", "facts",
                            "findings", "actions", "similar"}
    assert [a["priority"] for a in summary["actions"]] == list(range(1, len(summary["actions"]) + 1))
    for a in summary["actions"]:
        assert a["why"] and a["how"]
