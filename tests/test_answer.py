"""The answer ``traindoc run``/``triage`` print before the notebook runs: the notebook's own
library calls in this process (test_runbooks checks it equals the notebook's summary.json)."""

from __future__ import annotations

import json

import papermill as pm
import pytest

from conftest import DATA, ROOT
from traindoc.answer import RUNBOOK_CALLS, answer
from traindoc.execute import available_runbooks, parameters_cell
from traindoc.report import rank_ranges, where

RUNBOOKS = sorted(available_runbooks())


@pytest.mark.parametrize("runbook", RUNBOOKS)
def test_parameters_cell_reads_what_papermill_reads(runbook: str) -> None:
    nb = ROOT / "runbooks" / f"{runbook}.ipynb"
    ours = parameters_cell(nb)
    theirs = pm.inspect_notebook(str(nb))
    assert ours == {k: v["default"] for k, v in theirs.items()}


@pytest.mark.parametrize("runbook", RUNBOOKS)
def test_every_analyse_knob_is_a_notebook_parameter(runbook: str) -> None:
    params = parameters_cell(ROOT / "runbooks" / f"{runbook}.ipynb")
    assert set(RUNBOOK_CALLS[runbook].knobs.values()) <= set(params)
    assert ("year" in params) >= RUNBOOK_CALLS[runbook].year


def test_answer_on_the_gemma3_sample() -> None:
    ans = answer("timeout", str(DATA / "timeout" / "gemma3_seed"))
    expected = json.loads((DATA / "timeout" / "gemma3_seed" / "expected.json").read_text())
    for key, value in expected["facts"].items():
        assert ans.summary["facts"][key] == value, key
    lines = ans.lines()
    assert lines[0] == f"verdict ({ans.summary['confidence']}): {ans.summary['verdict']}"
    assert "where: timed out: rank 3" in lines
    assert any(x.startswith("first action: ") for x in lines)


def test_triage_answer_names_the_cause_and_where(tmp_path) -> None:
    ans = answer("triage", str(DATA / "triage" / "crash_then_timeouts"), {}, tmp_path)
    classes = ans.summary["facts"]["classes"]
    assert [c["class"] for c in classes[:2]] == ["gpu_crash", "timeout"]
    assert classes[0]["summary"] == str(tmp_path.resolve() / "gpu_crash" / "summary.json")
    assert "where: failed rank 3; host node-a" in ans.lines()


def test_ranks_are_ranges_for_a_big_job() -> None:
    ranks = [r for r in range(384) if r != 128]
    assert rank_ranges(ranks) == "0-127,129-383"
    assert where({"timed_out_ranks": ranks}) == "timed out: ranks 0-127,129-383"
    hosts = [f"node{i:03d}" for i in range(48)]
    assert where({"failed_hosts": hosts}).endswith("node007 and 40 more")
    assert where({"failed_ranks": [], "failed_hosts": []}) == ""
