"""The fast engine's bulk lane: Megatron/DeepSpeed iteration lines (the hot lines of most
training logs) turned into table columns without the per-line path. The scan has found them
(their needle, ``planner.plan``); one compiled pattern per line shape (``Shape``: the fixed
lead, an optional ISO time, the step and the fields in the order a run prints them) matches a
line's body and keeps its values as strings; ``Batch`` makes them columns of the iterations
table when the sink flushes (``Sink.add_bulk``), never a dict per row. Where the sink also
holds rows of the per-line path, their order by reading position is kept.

A line takes the lane only where the per-line path would give the same row: the engine asks it
for plain ASCII lines (no escape, split, control byte or other year) whose needles are those of
the Megatron parser alone (``Lane.takes``), with nothing pending and its writer's block parsers
idle; a shape only reads what ``parse.iterations.parse_megatron`` reads the same way (plain
numbers, integer columns as digits, no field it would read another way), and every other line
of the format keeps the per-line path. ``tests/test_ingest.py`` checks the tables equal.
``TRAINDOC_BULK=0`` turns the lane off.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..linefacts import line_facts
from ..parse.iterations import INT_COLUMNS, field_spec, parse_megatron
from ..schema import SCHEMAS, same_files
from .registry import Registry

BULK_ENV = "TRAINDOC_BULK"  # "0": no bulk lane (the per-line path for every line)
PARSER = "megatron_iteration"  # the line parser whose rows the lane makes
TABLE = "iterations"
MAX_SHAPES = 8  # shapes learnt per load (a log prints one or two)

# A body's lead: spaces, an optional ISO time in brackets, the step and the total (the part
# ``MEGATRON_RE`` reads before its first "|").
LEAD = (rb" *(?:\[(20\d\d)-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\] *)?"
        rb"iteration +(\d{1,18})/ *(\d{1,18}) *\|")
LEAD_RE = re.compile(LEAD)
LEAD_GROUPS = 8  # the date's six, the step, the total
# a field's key: letters, spaces and punctuation, no digit (so that no time can be read there)
KEY_RE = re.compile(rb" *[A-Za-z][A-Za-z ()/_-]* *")
NUMBER = rb"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"  # what float() and to_float read alike
INTEGER = rb"\d{1,18}"
VALUE_RE = re.compile(rb" *(" + NUMBER + rb") *")
NAN_FIELD = b"number of nan iterations"  # a line without it is incomplete to the parser


class Shape(NamedTuple):
    """One line shape: its pattern, per field group the (column, scale) it fills, and the
    ``linefacts.line_facts`` of its lines. Those are the same for every line of a shape: they
    read words, and a shape's lines differ only in spaces and digits where ``MEGATRON_RE``'s
    lead and fields have them (no "nan"/"inf" value, no "{", no ":" or "=" in a key)."""

    rx: re.Pattern[bytes]
    columns: tuple[tuple[str, float], ...]
    facts: tuple[tuple[str, Any], ...] = ()


def learn(body: bytes) -> Shape | None:
    """The shape of an iteration line's body (None: a line the lane leaves to the parser)."""
    m = LEAD_RE.match(body)
    if m is None or NAN_FIELD not in body:
        return None
    fields = body[m.end():].split(b"|")
    if fields.pop():
        return None  # text after the last "|" (spaces there: metric_lines' cut_before_step)
    parts = [LEAD]
    columns: list[tuple[str, float]] = []
    seen: set[str] = set()
    for field in fields:
        key, sep, value = field.rpartition(b":")
        if not sep or not KEY_RE.fullmatch(key) or not VALUE_RE.fullmatch(value):
            return None
        spec = field_spec(key.decode("ascii"))
        if spec is not None and spec[0] not in seen:
            column, scale = spec
            if scale not in (1, 1e-3) or (column in INT_COLUMNS and scale != 1):
                return None
            seen.add(column)
            columns.append((column, scale))
            number = INTEGER if column in INT_COLUMNS else NUMBER
            parts.append(re.escape(key) + rb": *(" + number + rb") *\|")
        else:  # a field the parser does not keep (or keeps from an earlier one)
            parts.append(re.escape(key) + rb": *" + NUMBER + rb" *\|")
    return Shape(re.compile(b"".join(parts)), tuple(columns),
                 tuple(line_facts(body.decode("ascii")).items()))


class Batch:
    """The lane's rows not yet made into a DataFrame: per row its shape, values (strings),
    body, source and writer."""

    def __init__(self) -> None:
        self.shapes: list[Shape] = []
        self.clear()

    def clear(self) -> None:
        """Forget the rows (the shapes stay)."""
        self.sid: list[int] = []
        self.values: list[tuple[bytes | None, ...]] = []
        self.bodies: list[bytes] = []
        self.names: list[str] = []
        self.linenos: list[int] = []
        self.ranks: list[int | None] = []
        self.hosts: list[str | None] = []

    def __len__(self) -> int:
        return len(self.sid)

    def add(self, sid: int, values: tuple[bytes | None, ...], body: bytes, name: str,
            lineno: int, rank: int | None, host: str | None) -> None:
        """One row."""
        self.sid.append(sid)
        self.values.append(values)
        self.bodies.append(body)
        self.names.append(name)
        self.linenos.append(lineno)
        self.ranks.append(rank)
        self.hosts.append(host)

    def frame(self) -> pd.DataFrame:
        """The rows as the iterations table (the dtypes ``schema.frame`` gives them)."""
        shapes = sorted(set(self.sid))
        if len(shapes) == 1:
            return self._frame(shapes[0], range(len(self.sid)))
        parts = []
        order = np.empty(len(self.sid), dtype=np.int64)
        done = 0
        for s in shapes:
            idx = [i for i, x in enumerate(self.sid) if x == s]
            order[idx] = np.arange(done, done + len(idx))
            done += len(idx)
            parts.append(self._frame(s, idx))
        df = pd.concat(same_files(parts), ignore_index=True)
        return df.take(order).reset_index(drop=True)  # (row i of the batch is order[i])

    def _frame(self, sid: int, idx: Sequence[int]) -> pd.DataFrame:
        n = len(idx)
        one = len(idx) == len(self.sid)
        values = self.values if one else [self.values[i] for i in idx]
        cols = list(zip(*values, strict=True))
        got: dict[str, Any] = {
            "iteration": _numbers(cols[6], int, n),
            "total_iterations": _numbers(cols[7], int, n),
        }
        for (column, scale), col in zip(self.shapes[sid].columns, cols[LEAD_GROUPS:],
                                        strict=True):
            arr = _numbers(col, int if column in INT_COLUMNS else float, n)
            got[column] = arr * scale if scale != 1 else arr
        for column, value in self.shapes[sid].facts:
            got[column] = np.full(n, value)
        pick = (lambda xs: xs) if one else (lambda xs: [xs[i] for i in idx])
        names, linenos = pick(self.names), pick(self.linenos)
        out: dict[str, Any] = {}
        for column, dtype in SCHEMAS[TABLE].items():
            if column in got:
                out[column] = pd.Series(got[column]).astype(dtype)
            elif column == "time":
                out[column] = _times(cols[:6], n)
            elif column == "rank":
                out[column] = pd.Series(pick(self.ranks), dtype=object).astype(dtype)
            elif column == "host":
                out[column] = pd.Series(pick(self.hosts), dtype=object).astype(dtype)
            elif column == "file":
                out[column] = pd.Series(pd.Categorical(names))
            elif column == "lineno":
                out[column] = pd.Series(np.asarray(linenos, dtype=np.int64)).astype(dtype)
            elif column == "line":
                text = b"\n".join(pick(self.bodies)).decode("ascii").split("\n")
                out[column] = pd.Series(text, dtype=object).astype(dtype)
            elif dtype == "string":
                out[column] = pd.Series(np.full(n, None, dtype=object)).astype(dtype)
            else:
                out[column] = pd.Series(np.full(n, np.nan)).astype(dtype)
        return pd.DataFrame(out, columns=list(SCHEMAS[TABLE]), copy=False)

    def rows(self) -> list[dict[str, Any]]:
        """The rows as the per-line path makes them (dicts): for a flush that must build the
        table from rows of both paths at once."""
        out = []
        for i, body in enumerate(self.bodies):
            text = body.decode("ascii")
            row = parse_megatron(text)
            assert row is not None  # (the shape matched it)
            row["rank"] = self.ranks[i]
            row["host"] = self.hosts[i]
            row["time"] = batch_time(self.values[i])
            row["source"] = f"{self.names[i]}:{self.linenos[i]}"
            row["line"] = text
            out.append(row)
        return out


# what ``schema.frame`` makes of times read from lines (datetime objects, some None)
LINE_TIMES = pd.to_datetime(pd.Series([datetime(2000, 1, 1), None]), errors="coerce").dtype
DATE_PARTS = ("year", "month", "day", "hour", "minute", "second")


def _numbers(col: Sequence[bytes | None], kind: type, n: int) -> np.ndarray:
    """A column of the pattern's digits as int64 or float64 (``int``/``float`` of each: what
    the parser reads; twice as quick as numpy's own parse of a bytes array)."""
    dtype = np.int64 if kind is int else np.float64
    return np.fromiter(map(kind, col), dtype=dtype, count=n)  # type: ignore[arg-type]


def _times(parts: Sequence[tuple[bytes | None, ...]], n: int) -> pd.Series:
    """The time column of ``n`` rows from their leads' date groups (None where a row has
    none), as ``schema.frame`` gives it from ``batch_time``'s values: NaT for no time or an
    invalid date, and the dtype it infers (``datetime64[s]`` when no row has a time)."""
    year = parts[0]
    have = np.fromiter((y is not None for y in year), dtype=bool, count=n)
    got = None
    if have.any():
        cols = {k: _numbers([v if v is not None else b"1" for v in col], int, n)
                for k, col in zip(DATE_PARTS, parts, strict=True)}
        got = pd.to_datetime(pd.DataFrame(cols), errors="coerce").astype(LINE_TIMES)
        # (pandas adds the hours, minutes and seconds: 24:00 is the next day's, where
        # ``datetime`` refuses it)
        ok = have & (cols["hour"] < 24) & (cols["minute"] < 60) & (cols["second"] < 60)
        got[~ok] = pd.NaT
        if got.isna().all():
            got = None
    if got is None:  # (no time: what schema.frame infers from None alone)
        return pd.to_datetime(pd.Series([None] * n), errors="coerce")
    return got


def batch_time(values: tuple[bytes | None, ...]) -> datetime | None:
    """The time of a row's lead (None: none, or no valid date, as ``line_time`` gives)."""
    if values[0] is None:
        return None
    try:
        return datetime(*map(int, values[:6]))  # type: ignore[arg-type]
    except ValueError:
        return None


class Lane:
    """The bulk lane of one load: the shapes it learnt, the rows it holds (``batch``), and
    which needle masks let a line in (``reg``: the registry view of the load's parsers)."""

    def __init__(self, reg: Registry, parser: Any) -> None:
        self.parser = parser
        self.reg = reg
        self.batch = Batch()
        self._takes: dict[int, bool] = {}
        self._incomplete: dict[int, tuple[Any, ...]] = {}

    @classmethod
    def make(cls, reg: Registry, line_parsers: Sequence[Any]) -> Lane | None:
        """The lane for a load running ``line_parsers`` (None: no Megatron parser among them,
        or ``TRAINDOC_BULK=0``)."""
        if os.environ.get(BULK_ENV, "1") == "0":
            return None
        for p in line_parsers:
            if p.name == PARSER:
                return cls(reg, p)
        return None

    def takes(self, mask: int) -> bool:
        """Whether a line with these needles may take the lane: the Megatron parser is the
        only line parser that reads it (fallback parsers of its table never run after its
        row). Block parsers are fed it and other incomplete parsers asked, as ``dispatch``
        and ``record`` do (``incomplete``)."""
        got = self._takes.get(mask)
        if got is None:
            parsers = self.reg.parsers(mask)
            got = self._takes[mask] = self.parser in parsers and all(
                p is self.parser or (p.fallback and p.table == TABLE) for p in parsers)
        return got

    def incomplete(self, mask: int) -> tuple[Any, ...]:
        """The incomplete parsers that must be asked of a line with these needles: a shape's
        line is never incomplete to Megatron's parser, nor to one that declares it complete
        by its end, "|" (``LineParser.complete_ends``)."""
        got = self._incomplete.get(mask)
        if got is None:
            got = self._incomplete[mask] = tuple(
                p for p in self.reg.incomplete(mask)
                if p is not self.parser and "|" not in p.complete_ends)
        return got

    def match(self, line: bytes, start: int) -> tuple[int, re.Match[bytes]] | None:
        """The shape (its index) and match of the body ``line[start:]``, learning its shape
        when none of those known matches (None: the line keeps the per-line path)."""
        shapes = self.batch.shapes
        for sid, shape in enumerate(shapes):
            m = shape.rx.fullmatch(line, start)
            if m is not None:
                return sid, m
        if len(shapes) >= MAX_SHAPES:
            return None
        shape = learn(line[start:])
        if shape is None:
            return None
        m = shape.rx.fullmatch(line, start)
        if m is None:  # (a shape matches the line it was learnt from)
            return None
        shapes.append(shape)
        return len(shapes) - 1, m
