"""``Report``: what a diagnosis concluded, and how it is shown and written (summary.json).

Log text is data: everything rendered as HTML goes through ``html.escape``; evidence lists
are capped (``MAX_EVIDENCE``) and say so when cut.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from . import __version__
from .incident import Incident

MAX_EVIDENCE = 20
MAX_EVIDENCE_CHARS = 400
SEVERITIES = ("critical", "warning", "info")
CONFIDENCES = ("high", "medium", "low")


@dataclass
class Finding:
    """One thing the diagnosis established, with the log lines behind it."""

    id: str
    severity: str
    title: str
    evidence: list[str] = field(default_factory=list)


@dataclass
class Action:
    """One recommended step: what, why (tied to a finding) and how (command or setting)."""

    id: str
    priority: int
    title: str
    why: str
    how: str


@dataclass
class Report:
    """The result of one runbook's diagnosis (the body of summary.json)."""

    runbook: str
    verdict: str
    confidence: str
    facts: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)

    def summary(self, incident: Incident | None = None) -> dict[str, Any]:
        """The summary.json document (ARCHITECTURE.md, "The runbook contract")."""
        inputs = incident.inputs() if incident is not None else {
            "paths": [], "files": 0, "lines": 0, "unparsed_lines": 0, "warnings": []}
        return _jsonable({
            "runbook": self.runbook,
            "version": __version__,
            "inputs": inputs,
            "verdict": self.verdict,
            "confidence": self.confidence,
            "facts": self.facts,
            "findings": [asdict(f) for f in self.findings],
            "actions": [asdict(a) for a in sorted(self.actions, key=lambda a: a.priority)],
        })

    def write(self, output_dir: str | Path, incident: Incident | None = None) -> Path:
        """Write ``output_dir/summary.json``; return its path."""
        out = Path(output_dir)
        out.mkdir(parents=True, exist_ok=True)
        path = out / "summary.json"
        path.write_text(json.dumps(self.summary(incident), indent=2, ensure_ascii=False) + "\n")
        return path

    def findings_table(self) -> pd.DataFrame:
        """Findings as a table (severity, title, number of evidence lines)."""
        return pd.DataFrame(
            [(f.severity, f.id, f.title, len(f.evidence)) for f in self.findings],
            columns=["severity", "id", "finding", "evidence lines"],
        )

    def actions_table(self) -> pd.DataFrame:
        """Actions as a table, most urgent first."""
        acts = sorted(self.actions, key=lambda a: a.priority)
        return pd.DataFrame(
            [(a.priority, a.title, a.why, a.how) for a in acts],
            columns=["priority", "action", "why", "how"],
        )

    def verdict_html(self) -> str:
        """The verdict with its confidence and evidence, escaped, as HTML."""
        parts = [f"<p><b>Verdict</b> (confidence: {html.escape(self.confidence)}): "
                 f"{html.escape(self.verdict)}</p>"]
        for f in self.findings:
            if f.severity == "critical" and f.evidence:
                parts.append(f"<p>{html.escape(f.title)}</p>" + evidence_html(f.evidence))
        return "\n".join(parts)

    def bottom_line_html(self) -> str:
        """The first screen: verdict, confidence and the first action, before any detail."""
        acts = sorted(self.actions, key=lambda a: a.priority)
        first = (f"<p><b>First action:</b> {html.escape(acts[0].title)}<br>"
                 f"<code>{html.escape(acts[0].how)}</code></p>" if acts
                 else "<p><b>First action:</b> none recommended.</p>")
        return (f"<div class='traindoc-bottom-line'><h3>Bottom line</h3>"
                f"<p><b>Verdict</b> (confidence: {html.escape(self.confidence)}): "
                f"{html.escape(self.verdict)}</p>{first}"
                f"<p><i>The sections below show the evidence behind it.</i></p></div>")

    def actions_html(self) -> str:
        """Ranked actions as escaped HTML, each with why and how."""
        items = []
        for a in sorted(self.actions, key=lambda a: a.priority):
            items.append(
                f"<li><b>{html.escape(a.title)}</b><br><i>why:</i> {html.escape(a.why)}<br>"
                f"<i>how:</i> <code>{html.escape(a.how)}</code></li>"
            )
        return "<ol>" + "".join(items) + "</ol>" if items else "<p>No action recommended.</p>"

    def _repr_html_(self) -> str:
        return self.verdict_html() + self.actions_html()


def write_tables(incident: Incident, output_dir: str | Path) -> list[Path]:
    """Write every non-empty table as CSV under ``output_dir`` (notebooks show only heads)."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, df in incident.tables.items():
        if len(df):
            path = out / f"{name}.csv"
            df.to_csv(path, index=False)
            written.append(path)
    return written


def ranked(actions: list[Action]) -> list[Action]:
    """Actions sorted by priority, renumbered 1..n (stable: ties keep their order)."""
    out = sorted(actions, key=lambda a: a.priority)
    for i, a in enumerate(out, 1):
        a.priority = i
    return out


def evidence(df: pd.DataFrame, limit: int = MAX_EVIDENCE) -> list[str]:
    """'source: line' strings for the rows of ``df`` (first ``limit``, plus a count of the rest)."""
    if df is None or not len(df):
        return []
    out = []
    for src, line in zip(df["source"].head(limit), df["line"].head(limit), strict=False):
        text = "" if line is None or line is pd.NA else str(line)
        if len(text) > MAX_EVIDENCE_CHARS:
            text = text[:MAX_EVIDENCE_CHARS] + " …"
        out.append(f"{src}: {text}")
    if len(df) > limit:
        out.append(f"… and {len(df) - limit} more line(s)")
    return out


def unrecognized_lines(incident: Incident, limit: int = 20) -> list[str]:
    """Lines that look like failures but that no parser understood (the first ``limit``, then
    "… and N more"), so nothing that might matter is silently dropped."""
    kept = list(incident.unrecognized)
    out = kept[:limit]
    if len(kept) > limit:
        out.append(f"… and {len(kept) - limit} more (the first "
                   f"{len(kept)} kept; {incident.account.get('unparsed_lines', 0)} lines unparsed in all)")
    return out


def evidence_html(lines: list[str]) -> str:
    """Evidence lines as an escaped <pre> block."""
    return "<pre>" + html.escape("\n".join(lines)) + "</pre>" if lines else ""


def escape_frame(df: pd.DataFrame) -> Any:
    """A Styler that renders ``df`` with every cell HTML-escaped (log text is data)."""
    return df.style.format(escape="html", na_rep="")


def _jsonable(obj: Any) -> Any:
    """Plain JSON types only: numpy/pandas scalars, NA and NaN become ints/floats/None."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set):
        return [_jsonable(v) for v in obj]
    if obj is None or obj is pd.NA or obj is pd.NaT:
        return None
    if isinstance(obj, bool | str):
        return obj
    if isinstance(obj, datetime | date | pd.Timestamp):
        return obj.isoformat()
    if hasattr(obj, "item"):
        obj = obj.item()
    if isinstance(obj, float):
        return None if math.isnan(obj) or math.isinf(obj) else obj
    if isinstance(obj, int):
        return obj
    return str(obj)
