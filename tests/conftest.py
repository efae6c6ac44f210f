from __future__ import annotations

import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
# CI checks out the repo with shared/ beside it; elsewhere point TRAINDOC_SEEDS at the seeds.
SEEDS = Path(os.environ.get("TRAINDOC_SEEDS", ROOT.parent / "shared" / "seeds"))
DATA = ROOT / "data"
# Bundled samples (data/<runbook>/<sample>/); data/corpus holds real logs, scored apart.
SAMPLE_DIRS = sorted(p for p in DATA.glob("*/*/") if p.is_dir() and p.parent.name != "corpus")
CORPUS = DATA / "corpus"

# Test tiers (issue 28): `make test-fast` runs neither `runbooks`, `drills` nor `slow`; `make test`
# runs everything, in parallel. A module is listed here when most of its tests execute notebooks
# (papermill, `traindoc run`, the HTML reports, JupyterLab) or take seconds each; single tests
# carry their own marker.
RUNBOOK_MODULES = {"test_runbooks", "test_bad_inputs", "test_cli", "test_output_dir",
                   "test_hostile_output", "test_lab", "test_report_html", "test_wheel"}
DRILL_MODULES = {"test_drills", "test_drills_e2e", "test_drills_live"}
SLOW_MODULES = {"test_cluster", "test_figures", "test_dump_bombs", "test_every_sample",
                "test_report_text"}
# sweeps over every sample and corpus case (hundreds of loads each)
SLOW_TESTS = {"test_triage_reports_every_class_a_runbook_reports",
              "test_every_action_command_exists"}


def pytest_collection_modifyitems(config, items) -> None:
    """Mark each test with its tier (see the module sets above)."""
    import pytest

    for item in items:
        mod = item.module.__name__.rsplit(".", 1)[-1]
        if mod in RUNBOOK_MODULES or item.get_closest_marker("notebooks"):
            item.add_marker(pytest.mark.runbooks)
        if mod in DRILL_MODULES:
            item.add_marker(pytest.mark.drills)
        if mod in SLOW_MODULES or item.originalname in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
