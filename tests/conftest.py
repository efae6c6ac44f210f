"""Shared fixtures, the test tiers and how ``make test`` spreads the suite over its workers.

A new test stays cheap when it computes nothing another test of the same worker has computed:
- a sweep over samples or corpus cases takes the case's folder as a ``Path`` parameter (it is
  then in the case's xdist group, ``_case_group``) and reads ``load_once``, ``analysis_once``,
  ``triage_once`` or ``reports_once``, never ``traindoc.load`` or a class's ``analyse`` itself;
- a notebook runs in the worker's kernel (``runbook_kernel``; ``cli_in_test_kernel`` for
  ``traindoc run``) unless starting a kernel is what it tests;
- a drill's bundle comes from ``drill_bundle``, the test in ``drill_group(name)``;
- a module-scoped fixture that takes seconds is listed in ``COSTLY_MODULE_FIXTURES``, so that
  its tests run on one worker;
- it waits for what it checks (a line, a process's end), never a fixed sleep.
"""

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
              # every sample and corpus class read for the iterations alone, one test each, its
              # full load the engine sweep's (test_ingest: same group)
              "test_iterations_alone_are_the_iterations_of_a_full_load",
              # every sample through the flight-recorder paths, every log through each action
              "test_comparison_on_every_sample", "test_samples_load_as_before",
              "test_no_action_runs_what_the_logs_say",
              # the corpus sweep, one case a test (its floor test gathers them)
              "test_corpus_case_is_scored",
              # the deadlock advice over every corpus case, one case a test
              "test_transport_advice_only_where_every_stack_waits_in_one_collective",
              # both engines over generated multi-MB logs at several chunk and flush sizes
              # (test_ingest: 196 of the fast tier's 605 test-seconds at f3d98776, -n 2)
              "test_the_bulk_lane_reads_what_the_parser_reads",
              "test_the_interleaved_mix_reads_the_same", "test_adversarial_logs_read_the_same",
              "test_a_big_generated_log_reads_the_same", "test_the_hot_mix_reads_the_same",
              "test_a_table_subset_reads_the_same_through_both_engines"}


# Module-scoped fixtures that take seconds to set up (a subprocess, a cluster, a kernel run,
# every sample loaded): the tests that use one run on one worker (``_module_fixture_group``).
# A new costly module fixture belongs here; a cheap one (a folder of stubs) does not, so that
# its tests still spread over the workers.
COSTLY_MODULE_FIXTURES = {
    "test_wheel": {"installed"},  # a wheel built, a venv made, the wheel installed
    "test_cluster": {"client", "ranks512"},  # a Dask LocalCluster; 512 rank files written
    "test_report_html": {"report", "timeout_report"},  # `traindoc triage --html`, `run --html`
    "test_every_sample": {"incidents"},  # every sample loaded
}


# The tests that took a minute or more each (`pytest -n 2 --durations=60` at 4f0d5a1 on the
# 2-core machine, load 10-13): started first, so that no worker of `make test` is left running
# one of them at the end while the other has nothing to do.
LONGEST_TESTS = {"test_a_bomb_of_parsed_lines_by_default_limits_stays_bounded",
                 "test_512_rank_files_on_a_local_cluster", "test_no_action_runs_what_the_logs_say",
                 "test_comparison_on_every_sample",
                 "test_triage_names_the_gpu_crash_as_cause_of_the_timeouts",
                 "test_markup_in_any_cell_of_any_shown_table_is_text"}
# The tests that gather the corpus sweep's per-case outcomes (``CorpusSweep``): last, when the
# cases' own tests have scored nearly every case on both workers.
GATHERING_TESTS = {"test_runbooks_on_the_corpus_stay_above_the_floor",
                   "test_every_summary_equals_the_snapshot"}


def _case_group(item: Any) -> str | None:
    """The sample or corpus case a parametrized sweep's test reads (its folder under data/,
    without ``logs``), or None."""
    for v in getattr(getattr(item, "callspec", None), "params", {}).values():
        if isinstance(v, Path) and DATA in v.parents:
            parts = (v.parent if v.name == "logs" else v).relative_to(DATA).parts
            if len(parts) == (3 if parts[0] == "corpus" else 2):
                return "/".join(parts)
    return None


def _module_fixture_group(item: Any) -> str | None:
    """``module:<test module>`` for a test that uses one of ``COSTLY_MODULE_FIXTURES``, else
    None: with ``--dist loadgroup`` one worker sets the fixture up once for all of the module's
    tests, instead of every worker that runs one of them."""
    mod = item.module.__name__.rsplit(".", 1)[-1]
    if COSTLY_MODULE_FIXTURES.get(mod, set()) & set(getattr(item, "fixturenames", ())):
        return f"module:{mod}"
    return None


def pytest_configure(config: pytest.Config) -> None:
    """``--dist loadgroup`` hands out the tests in this file's order (the longest first; see
    ``pytest_collection_modifyitems``), not its default of the largest groups first."""
    if getattr(config.option, "dist", None) == "loadgroup":
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items) -> None:
    """Mark each test with its tier (see the module sets above), and order them longest tier
    first (drills, the longest tests, notebooks, slow, the rest; each in its own order), so
    that pytest-xdist hands out the long ones while there is other work to balance them; the
    corpus sweep's gathering tests come last.
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
        if (group := _case_group(item) or _module_fixture_group(item)) and \
                not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(group))
        if item.originalname in GATHERING_TESTS:
            return 5
        if item.get_closest_marker("drills"):
            return 0
        if item.originalname in LONGEST_TESTS:
            return 1
        return 2 if item.get_closest_marker("runbooks") else 3 if item.get_closest_marker(
            "slow") else 4

    items[:] = sorted(items, key=rank)  # (stable: each tier keeps the collection order)
    if getattr(config.option, "loadgroup", False):  # a pytest-xdist worker of loadgroup
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


@pytest.fixture
def cli_in_test_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """``traindoc run`` (``cli.main``) executes its runbook in the test process's kernel
    (``runbook_kernel``, its namespace emptied) instead of starting a kernel a run: for the
    tests of what the command says and writes on many inputs, not of starting a kernel (a
    fresh kernel costs more than the runbook). Logs and output folder reach it absolute."""
    from traindoc import cli
    from traindoc.execute import execute_runbook

    def in_test_kernel(*args: Any, **kwargs: Any) -> Any:
        return execute_runbook(*args, **{"km": runbook_kernel(), **kwargs})

    monkeypatch.setattr(cli, "execute_runbook", in_test_kernel)


@functools.cache
def load_once(path: Path) -> Any:
    """``traindoc.load(path)``, once per test process: the sweeps over every sample and corpus
    case (actions, triage, report text, figures, deadlock advice) share one load of each. The
    library is pure: no test changes an Incident it is given."""
    import traindoc

    return traindoc.load(path, progress=False)


@functools.cache
def analysis_once(path: Path, name: str) -> Any:
    """Class ``name``'s ``analyse(load_once(path))``, once per test process: the analysis that
    ``triage_once`` reports for that class is the one the figure and advice sweeps read (an
    analysis is frozen). One that raises is computed again by each caller, and raises there."""
    from traindoc.diagnose import failure_class

    return failure_class(name).analyse(load_once(path))


class _AnalysedOnce:
    """Class ``fc`` as triage runs it (``triage.analyse``'s ``modules``): its ``diagnose`` is
    ``fc.diagnose`` (``report(analyse(incident))``) of ``analysis_once``'s analysis."""

    def __init__(self, fc: Any, path: Path) -> None:
        self.fc, self.path = fc, path

    def diagnose(self, incident: Any) -> Any:
        assert incident is load_once(self.path)
        return self.fc.report(analysis_once(self.path, self.fc.NAME))


@functools.cache
def triage_once(path: Path) -> Any:
    """``triage.analyse(load_once(path))``, once per test process (every class's diagnosis,
    each of ``analysis_once``'s analysis)."""
    from traindoc.diagnose import CLASSES, triage

    return triage.analyse(load_once(path),
                          modules={fc.NAME: _AnalysedOnce(fc, path) for fc in CLASSES})




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


def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder of this session that every pytest-xdist worker shares (the workers' base
    folders are siblings in the session's), made once."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    folder.mkdir(exist_ok=True)
    return folder


class CorpusSweep:
    """``score.score`` over every corpus case (one notebook a runbook, triage scored, each
    outcome with its summary records), split by case: ``tests/test_corpus.py`` scores each
    case as one test in the case's xdist group, where the other sweeps load and triage it
    (``load_once``, ``triage_once``), and keeps its outcome in a folder the workers share;
    ``outcomes`` gathers them for the floor test and the summary guard, scoring here any case
    whose outcome is not there (yet)."""

    def __init__(self, folder: Path) -> None:
        from traindoc import score

        self.folder = folder
        self.cases = score.find_cases(CORPUS) if CORPUS.is_dir() else []
        self.by_notebook = score.notebook_sample(self.cases, 1)
        self._gathered: list[Any] | None = None

    def _file(self, case: Any) -> Path:
        return self.folder / f"{case.runbook}--{case.id}.pickle"

    @functools.cache  # noqa: B019 (one sweep a test process, kept for the session)
    def outcome(self, path: Path) -> Any:
        """The outcome of the case at ``path`` as ``score.score`` makes it, kept for the
        gathering (a file written whole, then renamed)."""
        import pickle

        from traindoc import score

        case = next(c for c in self.cases if c.path == path)
        via = "notebook" if case.id in self.by_notebook else "library"
        incident = load_once(case.logs)
        known = incident.readable  # else ``score_case`` loads it and says why it cannot
        out = score.score_case(case, via, with_triage=True, summary_in=str(ROOT),
                               incident=incident if known else None,
                               triaged=triage_once(case.logs) if known else None)
        part = self._file(case).with_suffix(f".{os.getpid()}.part")
        part.write_bytes(pickle.dumps(out))
        part.replace(self._file(case))
        return out

    def outcomes(self) -> list[Any]:
        """Every case's outcome, in ``score.score``'s order and with its ``blind_right``."""
        import pickle

        from traindoc import score

        if self._gathered is None:
            got = []
            for c in self.cases:
                f = self._file(c)
                got.append(pickle.loads(f.read_bytes()) if f.exists() else self.outcome(c.path))
            nothing = {rb: score.nothing_facts(rb) for rb in {c.runbook for c in self.cases}}
            for c, o in zip(self.cases, got, strict=True):
                o.blind_right = score.passes_blind(c, nothing)
            self._gathered = got
        return self._gathered


@pytest.fixture(scope="session")
def corpus_sweep(tmp_path_factory: pytest.TempPathFactory) -> CorpusSweep:
    """The session's corpus sweep (``CorpusSweep``), its outcomes in a folder every worker
    shares."""
    return CorpusSweep(shared_folder(tmp_path_factory, "corpus-outcomes"))


CORPUS_SWEEP = "corpus-sweep"


def drill_group(name: str) -> str:
    """The xdist group of the tests that read drill ``name``'s bundle (``drill_bundle``): one
    worker runs the drill once for all of them."""
    return f"drill-{name}"


@functools.cache
def _cuda_seen() -> bool:
    """Whether the drills' torch sees a CUDA GPU, asked once per test process (each question
    starts a Python that imports torch: 1.7 CPU-s, five CUDA drills)."""
    from traindoc.drills.runner import _find_python, cuda_devices

    return bool(cuda_devices(_find_python(None)))


@pytest.fixture(scope="session")
def drill_bundle(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """A drill's bundle (``traindoc.drills.run``), run once per test process: the drill's own
    checks (tests/test_drills.py) and its runbook's (tests/test_drills_e2e.py) read the same
    real run, in one xdist group (``drill_group``). No test writes into a bundle. A drill that
    trains on a CUDA GPU is a skip where torch sees none."""

    @functools.cache
    def run(name: str) -> Path:
        from traindoc.drills import SPECS
        from traindoc.drills import run as run_drill

        if SPECS[name].needs_cuda and not _cuda_seen():
            pytest.skip(f"drill {name} trains on a CUDA GPU; torch sees none here")
        return Path(run_drill(name, tmp_path_factory.mktemp(f"drill-{name}") / "b"))
    return run

