"""``Report``: what a diagnosis concluded, and how it is shown and written (summary.json).

Log text is data. Every value and table that becomes HTML passes one boundary here:
``display_text`` turns any value (str, list, dict, NA, number) into text with control
characters made visible (``\\x1b``), ``text_html`` escapes that text, ``escape_frame`` does both
for every cell, index label and column name of a table. Evidence lists are capped
(``MAX_EVIDENCE``) and say so when cut. Files are written atomically (``write_atomic``) or
created new (``create_new``/``write_new``), never through a link planted where they go;
process text written to a file or a terminal is one line (``line_text``).
"""

from __future__ import annotations

import errno
import html
import json
import math
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from enum import Enum, StrEnum
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

import numpy as np
import pandas as pd

from . import __version__, similar
from .hostlist import runs
from .incident import Incident
from .schema import sources, with_source

MAX_EVIDENCE = 20
MAX_EVIDENCE_CHARS = 400
MAX_TEXT_DEPTH = 20  # nesting shown of a list/dict cell; deeper levels show as "…"
PLAIN_NUMBERS = (int, float, np.integer, np.floating, np.bool_)
# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and
# isolates that reorder what a reader sees: shown as escapes, never passed on raw.
CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class Severity(StrEnum):
    """How much a finding matters (summary.json's ``severity``).

    CRITICAL: it is the failure, or what the verdict rests on.
    WARNING: it changes what to do or how far to trust the verdict.
    INFO: context.
    """

    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


class Confidence(StrEnum):
    """How sure a verdict is (summary.json's ``confidence``); ordered, ``LOW`` < ``HIGH``."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def rank(self) -> int:
        """0 for low, 1 for medium, 2 for high: for "never surer than" comparisons."""
        return (Confidence.LOW, Confidence.MEDIUM, Confidence.HIGH).index(self)


@dataclass
class Finding:
    """One thing the diagnosis established, with the log lines behind it (a ``severity``
    given as its text is made a ``Severity``; any other text raises ``ValueError``)."""

    id: str
    severity: Severity
    title: str
    evidence: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.severity = Severity(self.severity)


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
    """The result of one runbook's diagnosis (the body of summary.json; a ``confidence``
    given as its text is made a ``Confidence``)."""

    runbook: str
    verdict: str
    confidence: Confidence
    facts: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    # the last seen_before answer and the incident it was for: the runbook, summary.json and
    # watch each ask, and each answer reads every line of the incident once more
    _seen: tuple[Any, list[Any]] | None = field(default=None, init=False, repr=False,
                                                compare=False)

    def __post_init__(self) -> None:
        self.confidence = Confidence(self.confidence)

    def seen_before(self, incident: Incident | None = None) -> list[Any]:
        """The public incidents of the corpus nearest this one (``traindoc.similar``); none
        for triage (its cause's runbook shows them)."""
        if self.runbook == "triage":
            return []
        if self._seen is None or self._seen[0] is not incident:
            self._seen = (incident, similar.seen_before(self.runbook, self.facts, incident))
        return list(self._seen[1])

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
            "similar": similar.summary_records(self.seen_before(incident)),
        })

    def write(self, output_dir: str | Path, incident: Incident | None = None) -> Path:
        """Write ``output_dir/summary.json`` atomically (the old one or none stays if writing
        fails; the ``OSError`` propagates); return its path."""
        out = Path(output_dir)
        out.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.summary(incident), indent=2, ensure_ascii=False) + "\n"
        return write_atomic(out / "summary.json", text)

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
        parts = [f"<p><b>Verdict</b> (confidence: {text_html(self.confidence)}): "
                 f"{text_html(self.verdict)}</p>"]
        for f in self.findings:
            if f.severity == "critical" and f.evidence:
                parts.append(f"<p>{text_html(f.title)}</p>" + evidence_html(f.evidence))
        return "\n".join(parts)

    def bottom_line_html(self, cause: Report | None = None) -> str:
        """The first screen: verdict, confidence, where (the ranks and hosts the facts name,
        or ``cause``'s for triage) and the first action, before any detail."""
        acts = sorted(self.actions, key=lambda a: a.priority)
        first = (f"<p><b>First action:</b> {text_html(acts[0].title)}<br>"
                 f"<code>{text_html(acts[0].how)}</code></p>" if acts
                 else "<p><b>First action:</b> none recommended.</p>")
        here = where((cause or self).facts)
        at = f"<p><b>Where:</b> {text_html(here)}</p>" if here else ""
        return (f"<div class='traindoc-bottom-line'>"
                f"<p><b>Verdict</b> (confidence: {text_html(self.confidence)}): "
                f"{text_html(self.verdict)}</p>{at}{first}</div>")

    def actions_html(self) -> str:
        """Ranked actions as escaped HTML, each with why and how."""
        items = []
        for a in sorted(self.actions, key=lambda a: a.priority):
            items.append(
                f"<li><b>{text_html(a.title)}</b><br><i>why:</i> {text_html(a.why)}<br>"
                f"<i>how:</i> <code>{text_html(a.how)}</code></li>"
            )
        return "<ol>" + "".join(items) + "</ol>" if items else "<p>No action recommended.</p>"

    def _repr_html_(self) -> str:
        return self.verdict_html() + self.actions_html()


# facts that say where a failure is, in the order a reader wants them, and what each names
WHERE_FACTS = (("failed_ranks", "failed rank"), ("failed_hosts", "host"),
               ("timed_out_ranks", "timed out: rank"), ("lagging_ranks", "never arrived: rank"),
               ("outlier_members", "stuck: process"), ("suspect_ranks", "slow: rank"),
               ("suspect_hosts", "slow: host"))
MAX_WHERE_NAMES = 8  # host or process names listed before "and N more"


def rank_ranges(ranks: list[int]) -> str:
    """Ranks as ranges, readable for 384 of them: [0, 1, 2, 5] -> '0-2,5'."""
    return runs(sorted({int(r) for r in ranks})) if ranks else ""


def where(facts: Mapping[str, Any]) -> str:
    """Where the failure is, from the facts that name ranks, hosts or processes (ranks as
    ranges, names capped); '' when no fact names any."""
    parts = []
    for key, label in WHERE_FACTS:
        v = facts.get(key)
        if not isinstance(v, list) or not v:
            continue
        if all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            n = len(set(v))
            parts.append(f"{label}{'s' if n > 1 else ''} {rank_ranges(v)}")
        else:
            names = [str(x) for x in v]
            more = len(names) - MAX_WHERE_NAMES
            shown = ", ".join(names[:MAX_WHERE_NAMES]) + (f" and {more} more" if more > 0 else "")
            parts.append(f"{label}{'s' if len(names) > 1 else ''} {shown}")
    classes = facts.get("classes")
    if not parts and isinstance(classes, list) and classes and isinstance(classes[0], Mapping):
        c = classes[0]  # triage: the cause's entry names its ranks and hosts
        ranks = [r for r in c.get("ranks") or [] if isinstance(r, int)]
        hosts = [str(h) for h in c.get("hosts") or []]
        if ranks:
            parts.append(f"{c.get('class')}: rank{'s' if len(set(ranks)) > 1 else ''} "
                         f"{rank_ranges(ranks)}")
        if hosts:
            parts.append(f"host{'s' if len(hosts) > 1 else ''} {', '.join(hosts[:MAX_WHERE_NAMES])}")
    return "; ".join(parts)


def write_tables(incident: Incident, output_dir: str | Path) -> list[Path]:
    """Write every non-empty table as CSV under ``output_dir`` (notebooks show only heads),
    each atomically: a failed write leaves the old file or none, and its ``OSError`` propagates."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, table in incident.tables.items():
        if len(table):
            df = with_source(table)  # (the iterations table's source made as the others hold it)
            written.append(write_atomic(out / f"{name}.csv",
                                        lambda fh, df=df: df.to_csv(fh, index=False)))
    return written


# How traindoc creates every file it writes: a new file, never through a link (a folder the
# job's owner can write may hold one planted where traindoc's file goes).
NEW_FILE_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                  | getattr(os, "O_CLOEXEC", 0))


def create_new(path: str | os.PathLike[str], *, binary: bool = False, mode: int = 0o666,
               ) -> IO[Any]:
    """Open ``path`` for writing as a new file that no link redirects: a previous regular
    file there (traindoc's own, from an earlier run) is removed first; anything else there
    (a symbolic link, a folder, a device) raises ``FileExistsError`` and is left alone. The
    file is created with ``O_CREAT|O_EXCL|O_NOFOLLOW``, so a link planted between the two
    steps makes the open fail instead of being followed."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISREG(st.st_mode):
            raise FileExistsError(errno.EEXIST, "not a regular file (a link?): not written "
                                  "through", str(path))
        os.unlink(path)
    fd = os.open(path, NEW_FILE_FLAGS, mode)
    if binary:
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding="utf-8", newline="")


def write_new(path: str | os.PathLike[str], content: str | bytes) -> Path:
    """``content`` written to ``path`` through ``create_new`` (never through a link)."""
    with create_new(path, binary=isinstance(content, bytes)) as fh:
        fh.write(content)
    return Path(path)


def own_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as a folder to write into, made if missing; a symbolic link there (or
    anything but a folder) raises ``NotADirectoryError``: traindoc never writes through one."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or not stat.S_ISDIR(os.lstat(path).st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "a link or not a folder: not written into",
                                 str(path))
    return path


def line_text(value: Any) -> str:
    """Process text (a command line, a tool's message) as one line: control characters,
    newlines and tabs shown as escapes, never passed on raw."""
    return clean_text(str(value)).replace("\n", "\\n").replace("\t", "\\t")


def write_atomic(path: str | os.PathLike[str], content: str | Callable[[IO[str]], object],
                 ) -> Path:
    """Write ``content`` (text, or a function writing to a text handle) to ``path`` through a
    temporary file beside it, then rename it into place: a full disk or a kill leaves the old
    file or none, never a partial one; the rename replaces a link at ``path``, never follows
    it. An ``OSError`` propagates."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, NEW_FILE_FLAGS, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            if isinstance(content, str):
                fh.write(content)
            else:
                content(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def ranked(actions: list[Action]) -> list[Action]:
    """Actions sorted by priority, renumbered 1..n (stable: ties keep their order)."""
    out = sorted(actions, key=lambda a: a.priority)
    for i, a in enumerate(out, 1):
        a.priority = i
    return out


# -- reports as rules ----------------------------------------------------------------------------
# A class's report is three lists of rules over its analysis: findings (shown in list order),
# actions (ranked by their rule's priority) and verdicts (the firing one of highest priority
# wins). Adding a finding is adding a rule; which verdict wins is data, not statement order.

T = TypeVar("T")


@dataclass(frozen=True)
class Rule(Generic[T]):
    """One rule of a report: ``make(analysis)`` is its finding (or findings), action or
    verdict, or None when it does not fire; ``priority`` ranks actions and picks the verdict."""

    id: str
    make: Callable[[Any], T | None]
    priority: int = 0


def fired_findings(rules: Sequence[Rule[Finding | Sequence[Finding]]], analysis: Any
                   ) -> list[Finding]:
    """The findings the rules give, in the rules' order."""
    out: list[Finding] = []
    for rule in rules:
        got = rule.make(analysis)
        if isinstance(got, Finding):
            out.append(got)
        elif got:
            out.extend(got)
    return out


def fired_actions(rules: Iterable[Rule[Action]], analysis: Any) -> list[Action]:
    """The actions the rules give, each with its rule's priority, ranked (``ranked``)."""
    acts = []
    for rule in rules:
        act = rule.make(analysis)
        if act is not None:
            act.priority = rule.priority
            acts.append(act)
    return ranked(acts)


def verdict_of(rules: Iterable[Rule[tuple[str, Confidence]]], analysis: Any,
               ) -> tuple[str, Confidence]:
    """The verdict and confidence of the firing rule of highest priority (the first listed
    among equals); a rule list ends with one that always fires."""
    best: tuple[int, tuple[str, Confidence]] | None = None
    for rule in rules:
        if best is not None and rule.priority <= best[0]:
            continue
        got = rule.make(analysis)
        if got is not None:
            best = (rule.priority, (got[0], Confidence(got[1])))
    if best is None:
        raise ValueError("no verdict rule fired: the last rule must always fire")
    return best[1]


def action(id: str, title: str, why: str, how: str) -> Action:
    """An action whose priority its rule gives (``fired_actions``)."""
    return Action(id, 0, title, why, how)


def evidence(df: pd.DataFrame, limit: int = MAX_EVIDENCE) -> list[str]:
    """'source: line' strings for the rows of ``df`` (first ``limit``, plus a count of the rest)."""
    if df is None or not len(df):
        return []
    out = []
    for src, line in zip(sources(df.head(limit)), df["line"].head(limit), strict=False):
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
                   f"{len(kept)} kept; {incident.account.unparsed_lines} lines unparsed in all)")
    return out


def evidence_html(lines: list[str]) -> str:
    """Evidence lines as an escaped <pre> block, control characters made visible."""
    return "<pre>" + "\n".join(text_html(line) for line in lines) + "</pre>" if lines else ""


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def clean_text(text: str) -> str:
    """``text`` with every control character but tab and newline (C0, DEL, C1, so ESC and
    whole OSC/CSI sequences too, and bidirectional overrides) shown as an escape (``\\x1b``)."""
    return CONTROL_RE.sub(_visible, text)


def display_text(value: Any, _depth: int = 0) -> str:
    """Any value as the text a reader sees: str as is, lists/tuples/sets comma-separated,
    dicts as ``k: v``, NA/None/NaN as empty; control characters made visible."""
    if isinstance(value, str):
        return clean_text(value)
    if value is None or value is pd.NA or value is pd.NaT:
        return ""
    if isinstance(value, bytes | bytearray):
        return clean_text(bytes(value).decode("utf-8", errors="replace"))
    if _depth >= MAX_TEXT_DEPTH and isinstance(value, Mapping | list | tuple | set | frozenset):
        return "…"
    if isinstance(value, Mapping):
        return ", ".join(f"{display_text(k, _depth + 1)}: {display_text(v, _depth + 1)}"
                         for k, v in value.items())
    if isinstance(value, set | frozenset):
        value = sorted(value, key=str)
    if isinstance(value, list | tuple | pd.Series | pd.Index | np.ndarray):
        return ", ".join(display_text(v, _depth + 1) for v in value)
    try:
        if pd.isna(value):
            return ""
    except (TypeError, ValueError):
        pass
    return clean_text(str(value))


def text_html(value: Any) -> str:
    """``display_text(value)`` escaped for HTML (quotes too): safe in text and attributes."""
    return html.escape(display_text(value))


def _keeps_type(dtype: Any) -> bool:
    """Numbers, booleans, times: rendered by the Styler's formatting, never markup."""
    return (pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)
            or pd.api.types.is_datetime64_any_dtype(dtype)
            or pd.api.types.is_timedelta64_dtype(dtype))


def _cell(value: Any) -> Any:
    """A cell as a number (plain numbers keep the Styler's formatting) or as display text."""
    if isinstance(value, PLAIN_NUMBERS):
        return value
    return display_text(value)


def _labels(index: pd.Index) -> pd.Index:
    """Index or column labels as display text (numeric and time labels kept); their names
    already escaped, as the Styler renders names raw."""
    if isinstance(index, pd.MultiIndex):
        return pd.MultiIndex.from_tuples(
            [tuple(_cell(v) for v in t) for t in index],
            names=[None if n is None else text_html(n) for n in index.names])
    name = None if index.name is None else text_html(index.name)
    if _keeps_type(index.dtype):
        return index.rename(name)
    return pd.Index([_cell(v) for v in index], dtype=object, name=name)


def escape_frame(df: pd.DataFrame) -> Any:
    """A Styler that renders ``df`` with every cell, index label and column name as escaped
    text: lists, dicts and other objects become text first (log text is data); cells are
    never cut; an index of bare row numbers is not shown."""
    shown = df.copy()
    for i in range(shown.shape[1]):
        col = df.iloc[:, i]
        if not _keeps_type(col.dtype):
            shown.isetitem(i, pd.Series([_cell(v) for v in col], index=df.index, dtype=object))
    shown.index = _labels(df.index)
    shown.columns = _labels(df.columns)
    styler = (shown.style.format(escape="html", na_rep="")
              .format_index(escape="html", axis=0).format_index(escape="html", axis=1))
    text = [c for i, c in enumerate(shown.columns) if not _keeps_type(df.dtypes.iloc[i])]
    if text and shown.columns.is_unique:
        styler = styler.format(_hyphens_kept, subset=text, escape="html", na_rep="")
    if _row_numbers(df.index):  # pandas' 0, 1, 2 … column says nothing: not shown
        styler = styler.hide(axis="index")
    return styler.map(_unbroken)


# A word with a hyphen or slash, short enough never to need breaking (a repository, a host,
# a case id): a browser breaks after a hyphen, which reads as a word cut in two.
HYPHENATED_WORD_RE = re.compile(r"(?<!\S)(?=[^\s<>]*[-/])[^\s<>]{3,40}(?!\S)")


def _hyphens_kept(escaped: Any) -> str:
    """Already-escaped cell text with each short hyphenated word kept on one line."""
    return HYPHENATED_WORD_RE.sub(r'<span style="white-space: nowrap">\g<0></span>',
                                  str(escaped))


MAX_UNBROKEN = 40  # a one-word cell up to this long is never wrapped (at its hyphens, say)


def _unbroken(value: Any) -> str:
    """CSS that keeps a short one-word cell (a host ``node-2``, a path) on one line: a
    browser breaks after a hyphen, which reads as a word cut in two."""
    text = value if isinstance(value, str) else ""
    return ("white-space: nowrap" if text and len(text) <= MAX_UNBROKEN
            and not any(c.isspace() for c in text) else "")


def _row_numbers(index: pd.Index) -> bool:
    """Whether ``index`` is only row numbers (unnamed integers, a filter's subset included)."""
    return (not isinstance(index, pd.MultiIndex) and index.name is None
            and pd.api.types.is_integer_dtype(index.dtype))


def _jsonable(obj: Any) -> Any:
    """Plain JSON types only: numpy/pandas scalars, NA and NaN become ints/floats/None."""
    if isinstance(obj, Enum):
        return _jsonable(obj.value)
    if hasattr(obj, "_asdict"):  # a NamedTuple record is an object, not a list
        return _jsonable(obj._asdict())
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
