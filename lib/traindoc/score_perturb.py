"""Metamorphic checks of the readers: a case's logs rewritten the way another launcher, logger
or collector would have written them, and the runbook's facts compared with its own facts on
the untouched logs (``traindoc score --perturb NAME``).

A transformation maps a case's log files (relative path → bytes) to new files. Each one below
says why it must not change what a runbook concludes — the same records, written by the same
processes, only wrapped differently — and which facts it may change, by construction
(``exempt``): a timestamp gives an untimed log times; a pdsh or Ray prefix names a host the
log did not. Those facts are not compared for that transformation; every other fact is.

Some rewritings cannot be exact (``preserving=False``): a logger's time goes only on the
lines a formatter writes, and no rewriting can tell those from a wrapped line's continuation
or from the lines NCCL or a launcher print past the logger; per-rank files lose the order
between ranks, which a log without times gives only by its interleaving. Their changes are
leads to read, not failures; ``SEMANTIC_PRESERVING`` names the others.

The facts compared are the runbook's own on the untouched log, not the case's expected facts,
so every case counts, whether the runbook gets it right or not. A transformation that leaves a
case's files as they are (no line it applies to) does not run that case.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from .parse import FILE_LOADERS
from .parse.prefixes import Origin, demux, line_time
from .score import Case, library_facts, pool_map

Files = dict[str, bytes]  # a case's logs: path under logs/ → contents

# Facts read from the lines' times: a timestamp added to an untimed log gives them values.
TIME_FACTS = frozenset({"first_failure_time", "lost_hours", "eta_days", "days_lost",
                        "eta_days_at_baseline"})
# Facts that name machines: a launcher prefix naming one host may add it to them (only them).
HOST_FACTS = frozenset({"failed_hosts", "suspect_hosts", "bisect_plan"})

ADDED_HOST = "node-17"  # the one host the pdsh and Ray transformations name
ADDED_IP = "10.0.0.2"
# Fixed times, one style each, all for the same instant (no file's own time is changed).
TIMESTAMP_STYLES = {
    "logging": "2024-03-01 12:00:00,123 - INFO - ",  # Python logging's default asctime format
    "bracket": "[2024-03-01 12:00:00] ",  # loguru/rich-style bracketed time
    "glog": "I0301 12:00:00.123456 1234 train.py:12] ",  # absl/glog header
}
RFC3339_STAMP = "2024-03-01T12:00:00.123456789Z "  # kubectl logs --timestamps, docker -t
SYSLOG_STAMP = f"Mar  1 12:00:00 {ADDED_HOST} python[1234]: "  # journald/syslog (names a host)

TEXT_LINE_RE = re.compile(rb"[^\n]*\n|[^\n]+$")  # physical lines with their line breaks
CRLF_RE = re.compile(rb"(?<!\r)\n")  # a line break not already a CRLF
PY_TRACEBACK_START = "Traceback (most recent call last)"
ANSI_ON, ANSI_OFF = "\x1b[0;32m", "\x1b[0m"


@dataclass(frozen=True)
class Perturbation:
    """One named rewriting of a case's logs, why it keeps the facts, and the facts it may
    change by construction."""

    name: str
    why: str
    apply: Callable[[Files], Files]
    exempt: frozenset[str] = field(default_factory=frozenset)
    # how the writer it adds is named in the facts → how the untouched log's writer is (a
    # regex and its replacement: "srun-task-0:123" → "?:123" for a process, "srun-task-0:f"
    # → "<logs>/f" for a file): the same process or file, named by its new prefix
    aliases: tuple[tuple[str, str], ...] = ()
    preserving: bool = True  # False: a change may be the rewriting's, not the reader's


# --- line helpers ----------------------------------------------------------------------------

def _lines(data: bytes) -> list[bytes]:
    """Physical lines of ``data``, each with its line break (the last one may have none)."""
    return TEXT_LINE_RE.findall(data)


def _text_file(name: str, data: bytes) -> bool:
    """Whether ``data`` is a text log this rewrites: not binary (gzip, a pickle) and no file
    a whole-file loader reads (a metrics CSV, a headerless table, a py-spy JSON: written by a
    program, never through a launcher's or a logger's prefixes)."""
    head = data[:4096]
    return (b"\x00" not in head and not data.startswith(b"\x1f\x8b")
            and not any(loader.sniff(PurePosixPath(name), head) for loader in FILE_LOADERS))


def _map_lines(files: Files, fn: Callable[[str], str]) -> Files:
    """Each text file's lines through ``fn`` (given and returning a line without its break)."""
    out: Files = {}
    for name, data in files.items():
        if not _text_file(name, data):
            out[name] = data
            continue
        parts = []
        for raw in _lines(data):
            line = raw.decode("utf-8", "surrogateescape")
            brk = "\n" if line.endswith("\n") else ""
            parts.append(fn(line[: len(line) - len(brk)]) + brk)
        out[name] = "".join(parts).encode("utf-8", "surrogateescape")
    return out


def _split_prefix(line: str) -> tuple[str, str, Any]:
    """A line's launcher prefixes (what ``demux`` strips), the rest, and who wrote it."""
    body, origin = demux(line)
    if origin == Origin():  # no prefix: its leading spaces are the text's own indentation
        return "", line, origin
    return line[: len(line) - len(body)], body, origin


def _indented(line: str, prefix: str) -> bool:
    """Whether the text after the prefixes is indented (two spaces or a tab after the
    prefixes' own separator)."""
    rest = line[len(prefix.rstrip(" ")):] if prefix else line
    return rest.startswith(("  ", "\t")) or (not prefix and rest.startswith(" "))


# --- the transformations ---------------------------------------------------------------------

def ansi(files: Files) -> Files:
    """Every non-empty line coloured from its first character to its last, as a colouring
    log handler or a terminal capture writes it."""
    return _map_lines(files, lambda s: f"{ANSI_ON}{s}{ANSI_OFF}" if s.strip() else s)


def crlf(files: Files) -> Files:
    """Every line break a CRLF, as a Windows editor or a paste from a browser saves it."""
    return {k: CRLF_RE.sub(b"\r\n", v) if _text_file(k, v) else v for k, v in files.items()}


def _record_starts(lines: list[str]) -> list[bool]:
    """Which lines a logger's formatter would have written as the first line of a record:
    lines whose text (after the launcher prefixes) starts at column 0 with a character and
    carries no time of its own, outside a Python traceback (whose lines a formatter never
    prefixes: from ``Traceback …`` to the exception line) and never a line that only
    continues one (indented)."""
    out = []
    in_tb = False
    for line in lines:
        prefix, body, _ = _split_prefix(line)
        indented = _indented(line, prefix)
        if in_tb:
            out.append(False)
            if body.strip() and not indented and not body.startswith(PY_TRACEBACK_START):
                in_tb = False  # the exception line ends it
            continue
        if PY_TRACEBACK_START in body:
            in_tb = True
            out.append(False)
            continue
        out.append(bool(body.strip()) and not indented and line_time(body, 2024) is None)
    return out


def _inner_stamp(stamp: str) -> Callable[[Files], Files]:
    def apply(files: Files) -> Files:
        out: Files = {}
        for name, data in files.items():
            if not _text_file(name, data):
                out[name] = data
                continue
            raws = [r.decode("utf-8", "surrogateescape") for r in _lines(data)]
            bodies = [r.rstrip("\n").rstrip("\r") for r in raws]
            starts = _record_starts(bodies)
            parts = []
            for raw, line, start in zip(raws, bodies, starts, strict=True):
                if start:
                    prefix, body, _ = _split_prefix(line)
                    raw = prefix + stamp + body + raw[len(line):]
                parts.append(raw)
            out[name] = "".join(parts).encode("utf-8", "surrogateescape")
        return out

    apply.__doc__ = (f"``{stamp.strip()}`` after the launcher prefixes of every line a "
                     "formatter writes first (``_record_starts``), as a logger inside the "
                     "process writes it.")
    return apply


def _outer(prefix: str) -> Callable[[Files], Files]:
    def apply(files: Files) -> Files:
        return _map_lines(files, lambda s: prefix + s)

    apply.__doc__ = f"``{prefix.strip()}`` before every line, as a collector outside it writes."
    return apply


def _ranked(tag: Callable[[int], str]) -> Callable[[Files], Files]:
    def one(line: str) -> str:
        prefix, _, origin = _split_prefix(line)
        if origin.rank is None or not origin.rank_global or not prefix.lstrip().startswith(
                f"[rank{origin.rank}]:"):
            return line
        return tag(origin.rank) + line

    def apply(files: Files) -> Files:
        return _map_lines(files, one)

    return apply


def gzip_files(files: Files) -> Files:
    """Every file gzip-compressed under ``NAME.gz`` (as log rotation or an upload keeps it)."""
    return {k if not _text_file(k, v) else k + ".gz":
            v if not _text_file(k, v) else gzip.compress(v, mtime=0)
            for k, v in files.items()}


def split_ranks(files: Files) -> Files:
    """A file whose lines name their rank by a ``[rankN]:`` prefix split into one file per
    rank (``STEM.rankN.log``, the prefix kept, as ``grep '^\\[rankN\\]'`` writes it) and one
    of the lines before any prefix (``STEM.log``). A line with no prefix continues the writer
    of the line before it (a wrapped line, a traceback) and goes with it."""
    out: Files = {}
    for name, data in files.items():
        if not _text_file(name, data):
            out[name] = data
            continue
        by_rank: dict[int | None, list[bytes]] = {}
        key: int | None = None
        for raw in _lines(data):
            line = raw.decode("utf-8", "surrogateescape").rstrip("\n")
            prefix, _, origin = _split_prefix(line)
            if prefix:
                key = origin.rank if origin.rank_global else None
            by_rank.setdefault(key, []).append(raw if raw.endswith(b"\n") else raw + b"\n")
        if len([k for k in by_rank if k is not None]) < 2:
            out[name] = data
            continue
        stem = name.rsplit(".", 1)[0] if "." in name.rsplit("/", 1)[-1] else name
        for rank, lines in by_rank.items():
            path = f"{stem}.log" if rank is None else f"{stem}.rank{rank}.log"
            out[path if path != name else f"{stem}.rest.log"] = b"".join(lines)
    return out


def _named(writer: str) -> tuple[tuple[str, str], ...]:
    """The aliases of a writer a prefix adds: its processes ``W:PID`` and files ``W:NAME``."""
    w = re.escape(writer)
    return ((rf"{w}:(\d+\b)", r"?:\1"), (rf"{w}:", "<logs>/"))


PERTURBATIONS: tuple[Perturbation, ...] = (
    Perturbation("ansi", "colour escapes are stripped before anything reads a line", ansi),
    Perturbation("crlf", "a line break is a line break, whichever the editor saved", crlf),
    *(Perturbation(
        f"timestamp-{style}",
        "a logger's time before a record's text says when, not what; only lines a formatter "
        "would write first get one (not tracebacks, indented or already-timed lines); the "
        "times it gives an untimed log are new facts", _inner_stamp(stamp), TIME_FACTS,
        preserving=False)
      for style, stamp in TIMESTAMP_STYLES.items()),
    Perturbation("timestamp-rfc3339",
                 "kubectl --timestamps stamps every line outside the process, tracebacks and "
                 "dumps too; only time facts may change", _outer(RFC3339_STAMP), TIME_FACTS),
    Perturbation("syslog", "journald/syslog stamps every line with the time, one host and the "
                 "process; only time and host facts may change", _outer(SYSLOG_STAMP),
                 TIME_FACTS | HOST_FACTS, aliases=_named(ADDED_HOST)),
    Perturbation("kubectl", "kubectl --prefix names a pod, not a machine (stripped, never a "
                 "host)", _outer("[pod/trainer-0/main] ")),
    Perturbation("srun-single", "srun -l's task id of a one-task step names the writer, never "
                 "a rank or a machine", _outer("0: "), aliases=_named("srun-task-0")),
    Perturbation("pdsh-single", "a single-host pdsh/DeepSpeed prefix says where every line "
                 "was written; only host facts may gain that host", _outer(f"{ADDED_HOST}: "),
                 HOST_FACTS, aliases=_named(ADDED_HOST)),
    Perturbation("ray-single", "a Ray worker's tag names its pid and node; only host facts may "
                 "gain that node", _outer(f"(RayTrainWorker pid=123, ip={ADDED_IP}) "),
                 HOST_FACTS, aliases=_named(ADDED_IP)),
    Perturbation("torchrun-rank", "torchrun --tee's [defaultN]: before a [rankN]: line names "
                 "the same rank (one node: local rank = global rank)",
                 _ranked(lambda r: f"[default{r}]:")),
    Perturbation("srun-rank", "srun -l's task id before a [rankN]: line, one task per GPU: "
                 "the same process", _ranked(lambda r: f"{r}: ")),
    Perturbation("gzip", "a compressed file holds the same lines", gzip_files),
    Perturbation("split-ranks", "per-rank files hold the lines their prefixes give them; "
                 "each rank's lines keep their order (the order between ranks is lost: what "
                 "came first is then read from times, or from the files' order)", split_ranks,
                 preserving=False),
)
BY_NAME = {p.name: p for p in PERTURBATIONS}
SEMANTIC_PRESERVING = tuple(p.name for p in PERTURBATIONS if p.preserving)


# --- running ---------------------------------------------------------------------------------

def read_files(logs: Path) -> Files:
    """A case's log files, by path under ``logs``."""
    return {str(p.relative_to(logs)): p.read_bytes()
            for p in sorted(logs.rglob("*")) if p.is_file()}


def write_files(files: Files, root: Path) -> None:
    """``files`` written under ``root``."""
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def changed_facts(before: dict[str, Any], after: dict[str, Any],
                  exempt: frozenset[str] = frozenset()) -> dict[str, tuple[Any, Any]]:
    """The facts that differ, not counting ``exempt`` ones: name → (before, after)."""
    return {k: (before.get(k), after.get(k)) for k in sorted(set(before) | set(after))
            if k not in exempt and not _same(before.get(k), after.get(k))}


def _facts_of(case: Case, folder: Path | None = None, names: dict[str, str] | None = None,
              aliases: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """The runbook's facts on ``case``'s logs, or on the logs under ``folder``/logs, with each
    path of a log file in them written ``<logs>/NAME`` (``names``: a rewritten file's name →
    the name of the file it came from)."""
    logs = case.logs if folder is None else folder / "logs"
    try:
        facts = library_facts(case if folder is None else
                              Case(case.id, case.runbook, folder, case.facts, case.source))
    except Exception as e:  # a crash is a change too
        return {"<error>": f"{type(e).__name__}: {e}"[:200]}
    text = json.dumps(facts, default=str)
    for root in {str(logs), str(logs.resolve())}:
        text = text.replace(json.dumps(root)[1:-1] + "/", "<logs>/")
    for new, old in sorted((names or {}).items(), key=lambda kv: -len(kv[0])):
        text = text.replace(f"<logs>/{new}", f"<logs>/{old}")
        text = text.replace(f":{new.rsplit('/', 1)[-1]}\"", f":{old.rsplit('/', 1)[-1]}\"")
    for new, old in aliases:
        text = re.sub(new, old, text)
    return json.loads(text)


def source_names(old: Files, new: Files) -> dict[str, str]:
    """Each file of ``new`` that ``old`` does not hold → the file of ``old`` it came from (a
    name ``OLD.gz``, or ``STEM.…`` of one ``STEM.ext``)."""
    out = {}
    for name in new:
        if name in old:
            continue
        if name.endswith(".gz") and name[:-3] in old:
            out[name] = name[:-3]
            continue
        for o in old:
            stem = o.rsplit(".", 1)[0]
            if name.startswith(stem + "."):
                out[name] = o
                break
    return out


@dataclass
class Change:
    """One case a transformation changed the facts of (``facts``: name → before, after)."""

    perturbation: str
    case: str
    facts: dict[str, tuple[Any, Any]]


def check_case(case: Case, names: Sequence[str]) -> tuple[list[str], list[Change]]:
    """Run ``case`` untouched and under each named transformation that changes its files;
    the transformations that applied, and the changes they made. Both runs read copies at
    paths of the same shape (``TMP/orig/ID/logs``, ``TMP/pert/ID/logs``): what a runbook
    orders by a file's path orders the same in both."""
    files = read_files(case.logs)
    before: dict[str, Any] | None = None
    applied: list[str] = []
    changes: list[Change] = []
    with tempfile.TemporaryDirectory(prefix="traindoc-perturb-") as tmp:
        for name in names:
            p = BY_NAME[name]
            new = p.apply(files)
            if new == files:
                continue
            applied.append(name)
            if before is None:
                write_files(files, Path(tmp) / "orig" / case.id / "logs")
                before = _facts_of(case, Path(tmp) / "orig" / case.id)
            folder = Path(tmp) / "pert" / case.id
            shutil.rmtree(folder, ignore_errors=True)
            write_files(new, folder / "logs")
            after = _facts_of(case, folder, source_names(files, new), p.aliases)
            diff = changed_facts(before, after, p.exempt)
            if diff:
                changes.append(Change(name, case.id, diff))
    return applied, changes


def _check_one(args: tuple[Case, tuple[str, ...]]) -> tuple[list[str], list[Change]]:
    return check_case(*args)


def check(cases: Sequence[Case], names: Sequence[str] | None = None,
          workers: int | None = None) -> tuple[dict[str, int], list[Change]]:
    """Every case under the named transformations (None: all): how many cases each applied
    to, and every change, in case order."""
    chosen = tuple(names or BY_NAME)
    unknown = [n for n in chosen if n not in BY_NAME]
    if unknown:
        raise ValueError(f"no transformation {', '.join(unknown)} (known: "
                         f"{', '.join(BY_NAME)})")
    jobs = [(c, chosen) for c in cases]
    results = pool_map(_check_one, jobs, workers, chunksize=1)
    applied = dict.fromkeys(chosen, 0)
    changes: list[Change] = []
    for names_run, ch in results:
        for name in names_run:
            applied[name] += 1
        changes.extend(ch)
    return applied, changes


def render(applied: dict[str, int], changes: Sequence[Change], limit: int = 160) -> str:
    """Per transformation: the cases it applied to and those whose facts it changed."""
    rows = [f"{'transformation':20} {'applied':>8} {'changed':>8}"]
    for name, n in applied.items():
        rows.append(f"{name:20} {n:8} {sum(c.perturbation == name for c in changes):8}")
    for c in changes:
        what = "; ".join(f"{k}: {json.dumps(a, default=str)} -> {json.dumps(b, default=str)}"
                         for k, (a, b) in c.facts.items())
        rows.append(f"~ {c.perturbation} {c.case}: {what[:limit]}")
    return "\n".join(rows)
