from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
import pytest

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
              "test_every_action_command_exists",
              # every sample and every corpus class read twice (a minute and more)
              "test_iterations_alone_are_the_iterations_of_a_full_load",
              # every sample through the flight-recorder paths, every log through each action
              "test_comparison_on_every_sample", "test_samples_load_as_before",
              "test_no_action_runs_what_the_logs_say"}


# The tests that took a minute or more each (`pytest -n 2 --durations=60` at 4f0d5a1 on the
# 2-core machine, load 10-13): started first, so that no worker of `make test` is left running
# one of them at the end while the other has nothing to do.
LONGEST_TESTS = {"test_runbooks_on_the_corpus_stay_above_the_floor",
                 "test_a_bomb_of_parsed_lines_by_default_limits_stays_bounded",
                 "test_512_rank_files_on_a_local_cluster", "test_no_action_runs_what_the_logs_say",
                 "test_comparison_on_every_sample",
                 "test_triage_names_the_gpu_crash_as_cause_of_the_timeouts",
                 "test_markup_in_any_cell_of_any_shown_table_is_text"}


def _case_group(item: Any) -> str | None:
    """The sample or corpus case a parametrized sweep's test reads (its folder under data/,
    without ``logs``), or None."""
    for v in getattr(getattr(item, "callspec", None), "params", {}).values():
        if isinstance(v, Path) and DATA in v.parents:
            parts = (v.parent if v.name == "logs" else v).relative_to(DATA).parts
            if len(parts) == (3 if parts[0] == "corpus" else 2):
                return "/".join(parts)
    return None


def pytest_configure(config: pytest.Config) -> None:
    """``--dist loadgroup`` hands out the tests in this file's order (the longest first; see
    ``pytest_collection_modifyitems``), not its default of the largest groups first."""
    if config.getvalue("dist") == "loadgroup":
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items) -> None:
    """Mark each test with its tier (see the module sets above), and order them longest tier
    first (drills, the longest tests, notebooks, slow, the rest; each in its own order), so
    that pytest-xdist hands out the long ones while there is other work to balance them.
    The sweeps' tests of one sample or corpus case form one xdist group: with ``--dist
    loadgroup`` (``make test``) one worker loads and diagnoses each case once for all of
    them (``load_once``, ``reports_once``), instead of every worker loading most cases."""
    def rank(item: Any) -> int:
        mod = item.module.__name__.rsplit(".", 1)[-1]
        if mod in RUNBOOK_MODULES or item.get_closest_marker("notebooks"):
            item.add_marker(pytest.mark.runbooks)
        if mod in DRILL_MODULES:
            item.add_marker(pytest.mark.drills)
        if mod in SLOW_MODULES or item.originalname in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        if (group := _case_group(item)) and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(group))
        if item.get_closest_marker("drills"):
            return 0
        if item.originalname in LONGEST_TESTS:
            return 1
        return 2 if item.get_closest_marker("runbooks") else 3 if item.get_closest_marker(
            "slow") else 4

    items[:] = sorted(items, key=rank)  # (stable: each tier keeps the collection order)
    if config.getvalue("loadgroup"):  # a pytest-xdist worker of ``--dist loadgroup``
        for item in items:
            _carry_xdist_group(item)


def _carry_xdist_group(item: Any) -> None:
    """Put the item's ``xdist_group`` in its node id as pytest-xdist does (``id@group``), where
    pytest-xdist cannot: from pytest 9.2 a node id is a structured ``NodeId`` and the string
    that pytest-xdist 3.8 rewrites (``_nodeid``) is no longer read, so every test was
    scheduled alone (pytest-xdist issue 1386). Older pytest: nothing to do here."""
    import dataclasses

    names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                    for m in item.iter_markers("xdist_group")})
    node_id = getattr(item, "_id", None)
    if not names or hasattr(item, "_nodeid") or not dataclasses.is_dataclass(node_id):
        return
    grouped = dataclasses.replace(node_id)
    object.__setattr__(grouped, "_str_cache", f"{node_id}@{'_'.join(names)}")
    item._id = grouped


@functools.cache
def _runbook_kernel() -> Any:
    """One kernel per test process (its ``KernelManager``), started in the repository, shut
    down when the process exits."""
    import atexit

    from jupyter_client.manager import KernelManager

    from traindoc.execute import KERNEL, KERNEL_ARGS

    km = KernelManager(kernel_name=KERNEL)
    km.start_kernel(extra_arguments=KERNEL_ARGS, cwd=str(ROOT))
    atexit.register(km.shutdown_kernel, now=True)
    return km


def runbook_kernel() -> Any:
    """The test process's kernel for papermill (``km=``), its namespace emptied: a runbook run
    there sees none of the last one's names, as in ``traindoc.execute.shared_kernel``, and the
    tests that execute hundreds of runbooks start one kernel, not hundreds. A kernel that died
    is restarted."""
    from traindoc.execute import reset_kernel

    km = _runbook_kernel()
    if not km.is_alive():
        km.restart_kernel(now=True)
    reset_kernel(km)
    return km


@functools.cache
def load_once(path: Path) -> Any:
    """``traindoc.load(path)``, once per test process: the sweeps over every sample and corpus
    case (actions, triage, report text, figures, deadlock advice) share one load of each. The
    library is pure: no test changes an Incident it is given."""
    import traindoc

    return traindoc.load(path, progress=False)


@functools.cache
def triage_once(path: Path) -> Any:
    """``triage.analyse(load_once(path))``, once per test process (every class's diagnosis)."""
    from traindoc.diagnose import triage

    return triage.analyse(load_once(path))


@functools.cache
def reports_once(path: Path) -> dict[str, Any]:
    """Every class's ``diagnose`` of ``load_once(path)``, and triage's report (``"triage"``),
    once per test process. Triage runs each class's ``diagnose`` on the same load and keeps
    its report (``TriageAnalysis.runbooks``): those are used; a class whose diagnosis failed
    there (None) is diagnosed again, to raise here."""
    from traindoc.diagnose import CLASSES, triage

    inc = load_once(path)
    triaged = triage_once(path)
    out = {fc.NAME: triaged.runbooks.get(fc.NAME) or fc.diagnose(inc) for fc in CLASSES}
    out["triage"] = triage.report(triaged)
    return out


@functools.cache
def corpus_outcomes() -> list[Any]:
    """``score.score`` over every corpus case (one notebook a runbook, triage scored), each
    outcome with its summary records: the floor test and the summary guard share this one
    sweep (one load and one diagnosis a case). Both are in the xdist group ``CORPUS_SWEEP``
    so that one worker runs them (``make test`` distributes by ``--dist loadgroup``)."""
    from traindoc import score

    cases = score.find_cases(CORPUS) if CORPUS.is_dir() else []
    return score.score(cases, notebooks=1, summaries_of=ROOT)


CORPUS_SWEEP = "corpus-sweep"


def drill_group(name: str) -> str:
    """The xdist group of the tests that read drill ``name``'s bundle (``drill_bundle``): one
    worker runs the drill once for all of them."""
    return f"drill-{name}"


@pytest.fixture(scope="session")
def drill_bundle(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """A drill's bundle (``traindoc.drills.run``), run once per test process: the drill's own
    checks (tests/test_drills.py) and its runbook's (tests/test_drills_e2e.py) read the same
    real run, in one xdist group (``drill_group``). No test writes into a bundle."""

    @functools.cache
    def run(name: str) -> Path:
        from traindoc.drills import run as run_drill

        return Path(run_drill(name, tmp_path_factory.mktemp(f"drill-{name}") / "b"))
    return run

