"""Score the runbooks on a corpus of real incident logs (``data/corpus``, see its README).

A case is a folder holding ``case.json`` (source, runbook, expected facts) and ``logs/`` (the
excerpt). Scoring a case loads its logs and runs its runbook's diagnosis with the runbook's
defaults — the same library calls the notebook makes — then compares the facts with the rules
of ``matches``. A sample of cases can also go through the notebooks themselves (papermill), so
the runbooks are scored, not only the library.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .diagnose import NAMES, failure_class
from .execute import execute_runbook
from .incident import Incident
from .reader import load_or_fail
from .report import Report

if TYPE_CHECKING:
    from .diagnose.triage import TriageAnalysis

RUNBOOKS = (*NAMES, "triage")
CLASSES = NAMES  # the failure classes triage can name
REL_TOLERANCE = 0.02  # floats within 2 %
OPERATORS = ("any_of", "min", "max", "contains")
REQUIRED_KEYS = ("id", "runbook", "source", "summary", "facts")
NO_TRIAGE = "-"  # a case whose facts do not say which class triage should name first
# The facts that say a case shows its runbook's own failure (a non-empty value in any of them):
# such a case is one triage should name that class for first, unless the case says otherwise.
POSITIVE_FACTS = {
    "timeout": ("timed_out_ranks", "op_type", "seq_num", "timeout_ms", "first_mismatch"),
    "gpu_crash": ("failed_ranks", "failed_hosts", "error_kind", "error_message", "xid_codes"),
    "deadlock": ("processes_seen",),
    "throughput": ("change_iteration", "drop_pct"),
    "loss_spike": ("spikes", "nan_iterations"),
}


@dataclass
class Case:
    """One corpus case: where it is and what it expects."""

    id: str
    runbook: str
    path: Path
    facts: dict[str, Any]
    source: dict[str, Any]
    summary: str = ""
    features: list[str] = field(default_factory=list)
    batch: str | None = None  # the intake batch the case came in with (None: before batches)
    intake: dict[str, Any] | None = None  # its score when it came in (``record_intake``)
    triage: Any = NO_TRIAGE  # the class triage should name first (None: no class)

    @property
    def logs(self) -> Path:
        return self.path / "logs"

    @property
    def facts_sha256(self) -> str:
        """A hash of the expected facts, kept with the intake record: facts edited after the
        intake no longer match it."""
        return facts_sha256(self.facts)

    @property
    def expected_class(self) -> Any:
        """What triage should name first: the case's ``triage`` when it gives one, else its
        runbook when its facts show that runbook's failure, else ``NO_TRIAGE`` (not scored)."""
        if self.triage != NO_TRIAGE:
            return self.triage
        keys = POSITIVE_FACTS.get(self.runbook, ())
        if self.runbook == "timeout" and _positive(self.facts.get("pattern"), ("unknown",)):
            return "timeout"
        return self.runbook if any(_positive(self.facts.get(k)) for k in keys) else NO_TRIAGE


def facts_sha256(facts: dict[str, Any]) -> str:
    """sha256 of the facts as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(facts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _positive(v: Any, empty_values: tuple = ()) -> bool:
    """A fact value that says something is there (not null, [], 0 or an ``any_of`` allowing
    those)."""
    if isinstance(v, dict) and "any_of" in v:
        return all(_positive(x, empty_values) for x in v["any_of"])
    return not (_empty(v) or v == 0 or v in empty_values)


@dataclass
class Mismatch:
    """One fact the runbook got wrong."""

    fact: str
    expected: Any
    actual: Any


@dataclass
class Outcome:
    """How the runbook did on one case."""

    id: str
    runbook: str
    right: bool
    mismatches: list[Mismatch] = field(default_factory=list)
    error: str | None = None
    via: str = "library"  # "library" or "notebook"
    seconds: float = 0.0
    facts: dict[str, Any] = field(default_factory=dict)
    batch: str | None = None
    intake_right: bool | None = None  # the case's score when it came in (None: no record)
    blind_right: bool = False  # a runbook that read nothing would pass it
    triage_expected: Any = NO_TRIAGE
    triage_cause: str | None = None
    triage_right: bool | None = None  # None: not scored for triage
    summary: dict[str, Any] | None = None  # summary_of's records, when asked for

    def line(self) -> str:
        """One line for a failing case: what was expected, what came out."""
        if self.error:
            return f"✗ {self.id} [{self.runbook}]: {self.error}"
        parts = [f"{m.fact}: expected {_short(m.expected)}, got {_short(m.actual)}"
                 for m in self.mismatches]
        return f"✗ {self.id} [{self.runbook}]: " + "; ".join(parts)


# --- comparison ------------------------------------------------------------------------------

def _is_operator(v: Any) -> bool:
    return isinstance(v, dict) and bool(v) and set(v) <= set(OPERATORS)


def _empty(v: Any) -> bool:
    return v is None or v == [] or v == {} or (isinstance(v, float) and math.isnan(v))


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def matches(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` satisfies ``expected`` under the corpus rules (see the corpus README):
    null/[] mean none; lists of scalars are sets; ints exact, floats within 2 %; ``any_of``,
    ``min``/``max`` and ``contains`` operators; dicts compare the keys they give; lists of dicts
    compare in order and must be as long."""
    if _is_operator(expected):
        if "any_of" in expected:
            return any(matches(e, actual) for e in expected["any_of"])
        if "contains" in expected:
            return (isinstance(actual, str)
                    and str(expected["contains"]).lower() in actual.lower())
        if not _number(actual) or (isinstance(actual, float) and math.isnan(actual)):
            return False
        lo, hi = expected.get("min"), expected.get("max")
        return (lo is None or actual >= lo) and (hi is None or actual <= hi)
    if _empty(expected):
        return _empty(actual)
    if isinstance(expected, bool):
        return isinstance(actual, bool) and actual == expected
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            matches(v, _get(actual, k)) for k, v in expected.items())
    if isinstance(expected, list):
        if not isinstance(actual, list | tuple):
            return False
        if any(isinstance(e, dict) and not _is_operator(e) for e in expected):
            return len(expected) == len(actual) and all(
                matches(e, a) for e, a in zip(expected, actual, strict=True))
        return _same_set(expected, list(actual))
    if _number(expected):
        if not _number(actual):
            return False
        if isinstance(expected, int) and isinstance(actual, int):
            return expected == actual
        return math.isclose(float(actual), float(expected), rel_tol=REL_TOLERANCE,
                            abs_tol=1e-9)
    if isinstance(expected, str) and isinstance(actual, str):
        return expected == actual
    return bool(expected == actual)


def _get(d: dict, key: str) -> Any:
    """``d[key]``, also when JSON made an int key a string or the other way round."""
    if key in d:
        return d[key]
    alt: Any = int(key) if isinstance(key, str) and key.lstrip("-").isdigit() else str(key)
    return d.get(alt)


def _same_set(expected: list, actual: list) -> bool:
    """Every expected item matched by some actual one and the other way round."""
    return (all(any(matches(e, a) for a in actual) for e in expected)
            and all(any(matches(e, a) for e in expected) for a in actual))


def compare(expected: dict[str, Any], actual: dict[str, Any]) -> list[Mismatch]:
    """The facts of ``expected`` that ``actual`` does not satisfy."""
    return [Mismatch(k, v, actual.get(k)) for k, v in expected.items()
            if not matches(v, actual.get(k))]


# --- cases -----------------------------------------------------------------------------------

def read_case(path: Path) -> Case:
    """The case in folder ``path``; ``ValueError`` says what is wrong with its case.json."""
    cj = path / "case.json"
    try:
        raw = json.loads(cj.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"{cj}: {e}") from e
    missing = [k for k in REQUIRED_KEYS if k not in raw]
    if missing:
        raise ValueError(f"{cj}: missing {', '.join(missing)}")
    if raw["runbook"] not in RUNBOOKS:
        raise ValueError(f"{cj}: unknown runbook {raw['runbook']!r}")
    if not isinstance(raw["facts"], dict) or not raw["facts"]:
        raise ValueError(f"{cj}: facts must be a non-empty object")
    triage = raw.get("triage", NO_TRIAGE)
    if triage != NO_TRIAGE and not _class_expectation(triage):
        raise ValueError(f"{cj}: triage must be a class ({', '.join(CLASSES)}), null, or any_of")
    return Case(id=str(raw["id"]), runbook=raw["runbook"], path=path, facts=raw["facts"],
                source=raw["source"], summary=raw.get("summary", ""),
                features=list(raw.get("features", [])), batch=raw.get("batch"),
                intake=raw.get("intake"), triage=triage)


def _class_expectation(v: Any) -> bool:
    if isinstance(v, dict) and set(v) == {"any_of"}:
        return all(_class_expectation(x) for x in v["any_of"])
    return v is None or v in CLASSES


def find_cases(root: str | os.PathLike[str]) -> list[Case]:
    """Every case under ``root`` (a corpus, one runbook's folder, or one case), sorted by id."""
    base = Path(root)
    files = [base / "case.json"] if (base / "case.json").is_file() else sorted(
        base.rglob("case.json"))
    return sorted((read_case(f.parent) for f in files), key=lambda c: (c.runbook, c.id))


# --- running ---------------------------------------------------------------------------------

def diagnosis(runbook: str) -> Callable[[Incident], Report]:
    """The library call behind a runbook: a registered failure class's ``diagnose``, or
    triage's."""
    if runbook == "triage":
        from .diagnose import triage

        return triage.diagnose
    return failure_class(runbook).diagnose


def library_facts(case: Case, incident: Incident | None = None) -> dict[str, Any]:
    """The facts the runbook's own library calls give on ``case`` (its default knobs);
    ``incident``: its logs, when already loaded."""
    if incident is None:
        incident = load_or_fail(str(case.logs))
    return dict(diagnosis(case.runbook)(incident).facts)


def triage_cause(case: Case, incident: Incident | None = None) -> str | None:
    """The class ``traindoc triage`` names first on ``case``'s logs (None: no class);
    ``incident``: its logs, when already loaded."""
    from .diagnose import triage

    return triage.analyse(incident if incident is not None
                          else load_or_fail(str(case.logs))).cause


def nothing_facts(runbook: str) -> dict[str, Any]:
    """The facts a runbook gives when it read one file and understood nothing in it: what a
    case must not be satisfied by (every case needs a fact that such a runbook gets wrong)."""
    from .incident import Incident, ReadAccount

    incident = Incident.empty()
    incident.account = ReadAccount(files=1, lines=1, paths=["empty.log"])
    return json.loads(json.dumps(dict(diagnosis(runbook)(incident).facts), default=str))


def passes_blind(case: Case, nothing: dict[str, dict[str, Any]] | None = None) -> bool:
    """Whether a runbook that read nothing would get every fact of ``case`` right."""
    facts = (nothing or {}).get(case.runbook)
    if facts is None:
        facts = nothing_facts(case.runbook)
    return not compare(case.facts, facts)


def notebook_facts(case: Case, output_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The facts in the ``summary.json`` that the runbook notebook writes on ``case``."""
    params = {"run_runbooks": False} if case.runbook == "triage" else {}
    ex = execute_runbook(case.runbook, str(case.logs.resolve()), output_dir, params)
    if ex.summary is None:
        raise RuntimeError(ex.error or "the runbook wrote no summary.json")
    return dict(ex.summary.get("facts", {}))


def score_case(case: Case, via: str = "library", with_triage: bool = False,
               summary_in: str | None = None, incident: Incident | None = None,
               triaged: TriageAnalysis | None = None) -> Outcome:
    """Run ``case`` (through the library, or its notebook with ``via="notebook"``), and
    triage on it with ``with_triage`` where the case says what triage should name; never
    raises: a failure to run is a wrong case with its error. With ``summary_in`` (the
    checkout), the outcome also carries the case's ``summary_of`` records, made from the same
    load and reports. ``incident`` (``load_or_fail`` of the case's logs) and ``triaged``
    (``triage.analyse`` of it, which holds each class runbook's own ``diagnose`` of it): what
    the caller already has, used instead of computing them."""
    t0 = time.perf_counter()
    out = Outcome(case.id, case.runbook, right=False, via=via, batch=case.batch,
                  intake_right=(case.intake or {}).get("right"),
                  triage_expected=case.expected_class)
    made: dict[str, Report] = {}  # the reports made on it, for the summary
    if via != "notebook" and incident is None:  # loaded once for the runbook and triage alike
        try:
            incident = load_or_fail(str(case.logs))
        except Exception:  # said below, by whichever call loads it again
            incident = None
    if with_triage and case.expected_class != NO_TRIAGE:
        try:
            out.triage_cause = _triage_cause(case, incident, made, triaged)
        except Exception as e:  # a crash is a wrong answer
            out.triage_cause = f"{type(e).__name__}: {e}"[:200]
        out.triage_right = matches(case.expected_class, out.triage_cause)
    try:
        if via == "notebook":
            with tempfile.TemporaryDirectory(prefix="traindoc-score-") as tmp:
                facts = notebook_facts(case, tmp)
        else:
            if incident is None:
                incident = load_or_fail(str(case.logs))
            kept = triaged.runbooks.get(case.runbook) if triaged is not None else None
            made[case.runbook] = kept or diagnosis(case.runbook)(incident)
            facts = dict(made[case.runbook].facts)
    except Exception as e:  # a crash on a real log is a wrong answer, and a finding
        out.error = f"{type(e).__name__}: {e}"[:300]
    else:
        out.facts = json.loads(json.dumps(facts, default=str))
        out.mismatches = compare(case.facts, out.facts)
        out.right = not out.mismatches
    if summary_in is not None:
        if triaged is not None and "triage" not in made:  # (a case that names no class)
            made["triage"] = _triage_report(triaged)
        out.summary = summary_of(case.runbook, str(case.logs), summary_in, incident,
                                 {k: v for k, v in made.items() if v is not None})
    out.seconds = round(time.perf_counter() - t0, 2)
    return out


def _triage_cause(case: Case, incident: Incident | None, made: dict[str, Report],
                  triaged: TriageAnalysis | None = None) -> str | None:
    """``triage_cause``, its report kept in ``made`` when the logs were loaded (``triaged``:
    their triage analysis, when the caller has it)."""
    from .diagnose import triage

    if incident is None:
        return triage_cause(case)
    analysis = triaged if triaged is not None else triage.analyse(incident)
    made["triage"] = triage.report(analysis)
    return analysis.cause


def _triage_report(triaged: TriageAnalysis) -> Report | None:
    """``triage.report(triaged)``, None where it raises (``summary_of`` then runs triage
    again, and records the error)."""
    from .diagnose import triage

    try:
        return triage.report(triaged)
    except Exception:  # said by summary_of
        return None


def notebook_sample(cases: Sequence[Case], per_runbook: int) -> set[str]:
    """Ids of the cases that go through the notebooks: the first ``per_runbook`` of each
    runbook in a fixed order (a stable hash of the id), so the sample is the same every run."""
    import zlib

    chosen: set[str] = set()
    for rb in RUNBOOKS:
        mine = sorted((c for c in cases if c.runbook == rb),
                      key=lambda c: zlib.crc32(c.id.encode()))
        chosen.update(c.id for c in mine[:per_runbook])
    return chosen


def _score_one(args: tuple[Case, str, bool, str | None]) -> Outcome:
    return score_case(*args)


def score(cases: Sequence[Case], notebooks: int = 1, workers: int | None = None,
          progress: Callable[[Outcome], None] | None = None,
          with_triage: bool = True, summaries_of: str | os.PathLike[str] | None = None
          ) -> list[Outcome]:
    """Score every case, in parallel processes; ``notebooks`` cases of each runbook go through
    papermill (the rest through the same library calls in-process); with ``with_triage``,
    triage is scored on every case that says which class it should name. With
    ``summaries_of`` (the checkout), each outcome carries the case's summary records
    (``summaries`` gives the same, one more load and diagnosis a case)."""
    sample = notebook_sample(cases, notebooks)
    root = None if summaries_of is None else str(Path(summaries_of).resolve())
    jobs = [(c, "notebook" if c.id in sample else "library", with_triage, root) for c in cases]
    # notebooks first: they are the slow ones
    jobs.sort(key=lambda j: j[1] != "notebook")
    n = workers or max(1, min(len(jobs), os.cpu_count() or 1))
    results: dict[str, Outcome] = {}
    if n == 1:
        it: Iterable[Outcome] = map(_score_one, jobs)
        for o in it:
            results[o.id] = o
            if progress:
                progress(o)
    else:
        with ProcessPoolExecutor(max_workers=n) as pool:
            for o in pool.map(_score_one, jobs, chunksize=1):
                results[o.id] = o
                if progress:
                    progress(o)
    nothing = {rb: nothing_facts(rb) for rb in {c.runbook for c in cases}}
    for c in cases:
        results[c.id].blind_right = passes_blind(c, nothing)
    return [results[c.id] for c in cases]


# --- the summary guard -----------------------------------------------------------------------

def summary_record(report: Report, incident: Incident) -> dict[str, Any]:
    """What a restructuring must keep of one report: its summary.json facts, verdict,
    confidence, finding titles and action commands (as summary.json writes them)."""
    doc = report.summary(incident)
    return {"verdict": doc["verdict"], "confidence": doc["confidence"], "facts": doc["facts"],
            "findings": [f["title"] for f in doc["findings"]],
            "actions": [a["how"] for a in doc["actions"]]}


def summary_of(runbook: str, logs: str, checkout: str, incident: Incident | None = None,
               made: Mapping[str, Report] | None = None) -> dict[str, Any]:
    """One folder's records: its own runbook's and triage's (``{"error": …}`` on a crash),
    with the checkout's path written ``<checkout>`` (the same snapshot wherever it is).
    ``incident`` and ``made`` (reports by name): what the caller already has of them."""
    out: dict[str, Any] = {"runbook": runbook}
    if incident is None:
        try:
            incident = load_or_fail(logs)
        except Exception as e:  # a folder that cannot be read is recorded as such
            out["error"] = f"{type(e).__name__}: {e}"[:300]
    for name in dict.fromkeys((runbook, "triage")) if incident is not None else ():
        try:
            rep = (made or {}).get(name) or diagnosis(name)(incident)
            out[name] = summary_record(rep, incident)
        except Exception as e:  # a crash is part of the behaviour the guard keeps
            out[name] = {"error": f"{type(e).__name__}: {e}"[:300]}
    text = json.dumps(out, sort_keys=True, ensure_ascii=False, default=str)
    return json.loads(text.replace(json.dumps(checkout)[1:-1], "<checkout>"))


def _summaries_of(args: tuple[str, str, str, str]) -> tuple[str, dict[str, Any]]:
    key, runbook, logs, checkout = args
    return key, summary_of(runbook, logs, checkout)


def sample_dirs(checkout: str | os.PathLike[str]) -> list[Path]:
    """The bundled samples, ``data/<runbook>/<sample>/`` (the corpus aside)."""
    data = Path(checkout).resolve() / "data"
    return [p for p in sorted(data.glob("*/*/"))
            if p.is_dir() and p.parent.name != "corpus" and p.parent.name in RUNBOOKS]


def summaries(checkout: str | os.PathLike[str], workers: int | None = None,
              corpus: bool = True) -> dict[str, dict[str, Any]]:
    """Every bundled sample's (``data/<runbook>/<sample>``) and corpus case's summary record,
    by its folder relative to ``checkout``: the runbook's own report and triage's
    (``summary_record``). ``traindoc score --summaries OUT.json`` writes it; the slow test
    ``tests/test_summaries.py`` compares it with ``tests/data/summaries.json``; without
    ``corpus``, the samples' alone (``score(summaries_of=…)`` gives the corpus cases')."""
    root = Path(checkout).resolve()
    jobs = [(p.relative_to(root).as_posix(), p.parent.name, str(p), str(root))
            for p in sample_dirs(root)]
    if corpus:
        jobs += [(c.path.relative_to(root).as_posix(), c.runbook, str(c.logs), str(root))
                 for c in find_cases(root / "data" / "corpus")]
    return dict(pool_map(_summaries_of, jobs, workers))


# --- seen before -----------------------------------------------------------------------------

def _index_entry_of(case: Case) -> dict[str, Any]:
    """``case``'s entry of the similar-incidents index (``traindoc.similar.index_entry``)."""
    from . import similar

    doc = json.loads((case.path / "case.json").read_text(encoding="utf-8"))
    try:
        incident = load_or_fail(str(case.logs))
        facts = dict(diagnosis(case.runbook)(incident).facts)
        env = similar.environment(similar.incident_lines(incident))
    except Exception:  # a case the runbook cannot read has no signature beyond its class
        facts, env = {}, similar.Environment()
    return json.loads(json.dumps(similar.index_entry(case.id, case.runbook, doc, facts, env),
                                 default=str))


def pool_map(fn: Callable[[Any], Any], jobs: Sequence[Any], workers: int | None = None,
             chunksize: int = 4) -> list[Any]:
    """``fn`` over ``jobs`` in order, in ``workers`` processes (default one per core; one: in
    this process)."""
    n = workers or max(1, min(len(jobs), os.cpu_count() or 1))
    if n == 1:
        return list(map(fn, jobs))
    with ProcessPoolExecutor(max_workers=n) as pool:
        return list(pool.map(fn, jobs, chunksize=chunksize))


def similar_index(cases: Sequence[Case], workers: int | None = None) -> dict[str, Any]:
    """The index ``traindoc.similar`` ships: every case's entry, sorted by case id."""
    entries = pool_map(_index_entry_of, cases, workers)
    return {"about": "the corpus's incident signatures (traindoc score --similar-index)",
            "cases": sorted(entries, key=lambda e: e["case"])}


def similar_table(index: Sequence[dict[str, Any]], cases: Sequence[Case]) -> list[dict[str, Any]]:
    """``traindoc.similar.leave_one_out`` over ``index`` with the cases' expected facts."""
    from . import similar

    return similar.leave_one_out(index, {c.id: c.facts for c in cases})


# --- intake ----------------------------------------------------------------------------------

def head_commit(root: str | os.PathLike[str]) -> tuple[str, bool]:
    """The checkout's HEAD commit and whether its library has uncommitted changes
    (``("unknown", False)`` outside git)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()
    try:
        return git("rev-parse", "HEAD"), bool(git("status", "--porcelain", "--", "lib"))
    except (OSError, subprocess.SubprocessError):
        return "unknown", False


def record_intake(cases: Sequence[Case], outcomes: Sequence[Outcome], commit: str
                  ) -> list[str]:
    """Write each case's intake record (the commit scored, right or not, the facts' hash) into
    its case.json, once: a case that already has one keeps it. Returns the ids written."""
    by_id = {o.id: o for o in outcomes}
    written = []
    for c in cases:
        if c.intake is not None or c.id not in by_id:
            continue
        cj = c.path / "case.json"
        raw = json.loads(cj.read_text(encoding="utf-8"))
        raw["intake"] = {"commit": commit, "right": bool(by_id[c.id].right),
                         "facts_sha256": c.facts_sha256}
        cj.write_text(json.dumps(raw, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        c.intake = raw["intake"]
        written.append(c.id)
    return written


# --- the report ------------------------------------------------------------------------------

def table(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Per runbook: cases, right, percent; the last row is the total."""
    rows = []
    for rb in RUNBOOKS:
        mine = [o for o in outcomes if o.runbook == rb]
        if mine:
            right = sum(o.right for o in mine)
            rows.append({"runbook": rb, "cases": len(mine), "right": right,
                         "percent": round(100 * right / len(mine), 1)})
    right = sum(o.right for o in outcomes)
    rows.append({"runbook": "all", "cases": len(outcomes), "right": right,
                 "percent": round(100 * right / len(outcomes), 1) if outcomes else 0.0})
    return rows


def intake_table(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Per intake batch and runbook: cases with an intake record, right at intake, percent
    (the blind figure: how the runbooks did before anyone changed code for those cases)."""
    rows = []
    batches = sorted({o.batch for o in outcomes if o.intake_right is not None})
    for b in batches:
        mine = [o for o in outcomes if o.batch == b and o.intake_right is not None]
        for rb in [*RUNBOOKS, "all"]:
            sel = mine if rb == "all" else [o for o in mine if o.runbook == rb]
            if sel:
                right = sum(bool(o.intake_right) for o in sel)
                rows.append({"batch": b, "runbook": rb, "cases": len(sel), "right": right,
                             "percent": round(100 * right / len(sel), 1)})
    return rows


def triage_table(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """How triage did: the failing cases where it named the expected class first, and the
    healthy ones where it named none."""
    scored = [o for o in outcomes if o.triage_right is not None]
    failing = [o for o in scored if o.triage_expected is not None]
    healthy = [o for o in scored if o.triage_expected is None]

    def pct(sel: list[Outcome]) -> float:
        return round(100 * sum(bool(o.triage_right) for o in sel) / len(sel), 1) if sel else 0.0
    return {"failing": len(failing), "failing_right": sum(bool(o.triage_right) for o in failing),
            "failing_percent": pct(failing), "healthy": len(healthy),
            "healthy_right": sum(bool(o.triage_right) for o in healthy),
            "healthy_percent": pct(healthy)}


def render(outcomes: Sequence[Outcome]) -> str:
    """The scorer's text: a line per failing case, the per-runbook table, the blind-intake
    table, triage, the share a do-nothing runbook passes, and last ``K/N cases right``."""
    lines = [o.line() for o in outcomes if not o.right]
    lines += [f"✗ triage on {o.id}: expected {_short(o.triage_expected)}, got "
              f"{_short(o.triage_cause)}" for o in outcomes if o.triage_right is False]
    if lines:
        lines.append("")
    lines.append(f"{'runbook':<12} {'cases':>6} {'right':>6} {'%':>6}")
    for r in table(outcomes):
        lines.append(f"{r['runbook']:<12} {r['cases']:>6} {r['right']:>6} {r['percent']:>6.1f}")
    via_nb = sum(o.via == "notebook" for o in outcomes)
    lines.append(f"({via_nb} case(s) scored through the notebooks, the rest through the same "
                 "library calls)")
    intake = intake_table(outcomes)
    if intake:
        lines += ["", "blind intake (each case as scored when it came in, before any change "
                      "for it):", f"{'batch':<12} {'runbook':<12} {'cases':>6} {'right':>6} "
                                  f"{'%':>6}"]
        lines += [f"{r['batch']:<12} {r['runbook']:<12} {r['cases']:>6} {r['right']:>6} "
                  f"{r['percent']:>6.1f}" for r in intake]
    t = triage_table(outcomes)
    if t["failing"] or t["healthy"]:
        lines.append("")
        lines.append(f"triage names the expected class first on {t['failing_right']}/"
                     f"{t['failing']} failing cases ({t['failing_percent']:.1f} %) and no class "
                     f"on {t['healthy_right']}/{t['healthy']} healthy ones")
    blind = sum(o.blind_right for o in outcomes)
    lines.append(f"a runbook that read nothing would pass {blind}/{len(outcomes)} cases")
    lines.append(f"{sum(o.right for o in outcomes)}/{len(outcomes)} cases right")
    return "\n".join(lines)


def as_json(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """What ``--json`` writes."""
    return {"table": table(outcomes), "intake": intake_table(outcomes),
            "triage": triage_table(outcomes),
            "blind_right": sum(o.blind_right for o in outcomes),
            "right": sum(o.right for o in outcomes), "cases": len(outcomes),
            "outcomes": [asdict(o) for o in outcomes]}


def _short(v: Any, limit: int = 120) -> str:
    s = json.dumps(v, default=str, ensure_ascii=False)
    return s if len(s) <= limit else s[: limit - 1] + "…"
