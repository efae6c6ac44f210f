"""Issue 27: no sentence of any report says ``None``, ``-1 s``, ``nan`` or a literal
placeholder such as ``<output dir>`` — on every bundled sample (data/<class>/<sample>) and every
corpus case (data/corpus/<class>/<case>/logs), for every class's report and triage's; and the
numbers triage states about a timeout are the timeout runbook's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import CORPUS, SAMPLE_DIRS, reports_once, triage_once
from traindoc.report import Report

LOGS = sorted([*SAMPLE_DIRS, *CORPUS.glob("*/*/logs")])
# Case-sensitive: "NaN" is the word for a NaN loss and "none" is English; "None" and "nan" are
# Python's missing values printed into a sentence.
BAD = re.compile(r"\bNone\b|(?<![\w.])-1 s\b|\bnan\b|<output dir>|<output directory>")


def _id(p: Path) -> str:
    return "/".join(p.parts[-3:-1]) if p.name == "logs" else "/".join(p.parts[-2:])


def sentences(r: Report) -> list[tuple[str, str]]:
    """(where, text) of every sentence a report shows: verdict, findings, actions."""
    out = [("verdict", r.verdict)]
    out += [(f"finding {f.id}", f.title) for f in r.findings]
    for a in r.actions:
        out += [(f"action {a.id} title", a.title), (f"action {a.id} why", a.why),
                (f"action {a.id} how", a.how)]
    return out


def _quoted(text: str, m: re.Match[str], logs: str) -> bool:
    """Whether the match is part of a message the report quotes from the logs (a Fatal Python
    error 'deallocating None' says None; the report repeats it, it did not print a missing
    value): the match with the 20 characters before it is in the logs' text."""
    return text[max(0, m.start() - 20):m.end()] in logs


def _log_text(path: Path) -> str:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return "\n".join(f.read_text(encoding="utf-8", errors="replace") for f in files)


@pytest.mark.parametrize("path", LOGS, ids=_id)
def test_no_missing_value_or_placeholder_in_any_sentence(path: Path) -> None:
    reports = reports_once(path)  # every class's diagnose and triage's, shared with the others
    # the logs' own path (an action's command names it) may hold the words: a case named "-nan"
    found = [(cls, where, m, text) for cls, r in reports.items() for where, text in sentences(r)
             for m in BAD.finditer((text or "").replace(str(path), "<logs>"))]
    logs = _log_text(path) if found else ""
    bad = [(cls, where, m[0], text[:200]) for cls, where, m, text in found
           if not _quoted(text.replace(str(path), "<logs>"), m, logs)]
    assert not bad, bad


def test_a_value_quoted_from_the_logs_is_no_missing_value() -> None:
    text = "failed first: Fatal Python error: none_dealloc: deallocating None"
    [m] = BAD.finditer(text)
    assert _quoted(text, m, "Fatal Python error: none_dealloc: deallocating None (bug)")
    assert not _quoted("rank None failed", next(BAD.finditer("rank None failed")),
                       "Fatal Python error: none_dealloc: deallocating None")


@pytest.mark.parametrize("path", [p for p in LOGS if "timeout" in p.parts], ids=_id)
def test_triage_states_the_timeout_runbooks_numbers(path: Path) -> None:
    a = triage_once(path)
    t = next((s for s in a.sightings if s.cls == "timeout"), None)
    if t is None:
        return
    f = a.runbooks["timeout"].facts
    allowed = {f"{ms / 1000:.0f}" for ms in (f["ran_for_ms"], f["timeout_ms"]) if ms}
    for n in re.findall(r"after (?:the )?(\d+) s\b", t.detail):
        assert n in allowed, (t.detail, f["ran_for_ms"], f["timeout_ms"])


# A "nothing found" finding whose evidence shows what its title denies (issue 27: "No sign of a
# crashed or killed rank" with an NCCL error line as its evidence): (what the title denies,
# what the evidence must then not show unless the title explains it, the explanation).
DENIALS = [
    (re.compile(r"\bno\b[^.;]*\bPython exception", re.I), re.compile(r"\w(?:Error|Exception): "),
     None),
    (re.compile(r"\bno\b[^.;]*\bNCCL error|No sign of", re.I), re.compile(r"NCCL|CUDA error"),
     None),
    (re.compile(r"^No collective timeout"), re.compile(r"timed out|[Tt]imeout"),
     re.compile(r"name no timed-out collective")),
]


@pytest.mark.parametrize("path", LOGS, ids=_id)
def test_a_nothing_found_finding_does_not_contradict_its_evidence(path: Path) -> None:
    for r in reports_once(path).values():
        for f in r.findings:
            if not f.id.startswith("no_") or not f.evidence:
                continue
            for denied, shown, unless in DENIALS:
                lines = [e.split(": ", 1)[-1] for e in f.evidence]  # without 'file:line: '
                if denied.search(f.title) and any(shown.search(e) for e in lines):
                    assert unless is not None and unless.search(f.title), (r.runbook, f)
