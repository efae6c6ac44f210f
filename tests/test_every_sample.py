"""Every diagnosis on every bundled sample, whatever its class: it returns a Report with
the runbook's facts and never raises (a page does not say which failure it is)."""

from __future__ import annotations

import pytest

from conftest import SAMPLE_DIRS, load_once
from traindoc.report import Report
from traindoc.score import RUNBOOKS as CLASSES
from traindoc.score import diagnosis

SAMPLES = SAMPLE_DIRS


@pytest.fixture(scope="module")
def incidents() -> dict:
    """Every sample's load, shared with the sweeps of the same test process (``load_once``)."""
    return {p: load_once(p) for p in SAMPLES}


@pytest.mark.parametrize("cls", CLASSES)
def test_diagnosis_runs_on_every_sample(cls: str, incidents: dict) -> None:
    for path, inc in incidents.items():
        report = diagnosis(cls)(inc)
        assert isinstance(report, Report), path
        assert report.verdict and report.confidence in ("high", "medium", "low"), path
        report.summary(inc)  # JSON-able
