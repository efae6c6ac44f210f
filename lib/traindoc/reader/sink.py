"""Where rows go: each table's rows, kept as dicts and made into DataFrames every
``FLUSH_ROWS`` rows of all tables together (memory stays near the size of the tables), then
the Incident's tables.

Knows rows and tables, not lines or files; imports no other reader module.
"""

from __future__ import annotations

import ctypes
import math
import sys
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from ..incident import Unreadable, drop_echoes
from ..parse.prefixes import Origin
from ..schema import (
    SCHEMAS,
    SYNTHETIC_HOST_PREFIX,
    TABLES,
    compact,
    frame,
    join_files,
    missing,
    same_files,
)

# rows kept as dicts, all tables together, before they become DataFrames: a dict row costs
# ten times its DataFrame row, and the memory its values took stays the process's (65,536 of
# each table: the 256 MiB hot mix's rows in flight came to ~60 MiB more peak RSS; 8,192 saves
# little more, and each DataFrame made costs a few milliseconds)
FLUSH_ROWS = 16384
MERGE_PARTS = 32  # a whole-file loader's small DataFrames joined this many at a time

# Where a line came from: (file, line number, writer, time).
LineContext = tuple[str, int, Origin, datetime | None]


class Sink:
    """The rows of every table read so far, in reading order. ``want``: the tables asked for
    (None: all); a whole-file loader's rows of the others are dropped at the end.
    ``unreadable``: where a value no table column can hold is reported (it becomes <NA>)."""

    def __init__(self, want: frozenset[str] | None = None,
                 unreadable: Callable[[Unreadable], None] | None = None) -> None:
        self.want = want
        self.unreadable = unreadable
        self.rows: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
        self.kept = 0  # rows in ``rows``, all tables together
        # rows already made into DataFrames (every FLUSH_ROWS rows: dicts cost ten times more)
        self.frames: dict[str, list[pd.DataFrame]] = {t: [] for t in TABLES}
        # per table, the text files that gave rows ("" for a whole-file loader's rows)
        self.sources: dict[str, set[str]] = {t: set() for t in TABLES}
        # the bulk lane's rows (``add_bulk``): per table the object holding them, and their
        # places among the rows not yet made into DataFrames
        self.bulk: dict[str, Any] = {}
        self.bulk_pos: dict[str, list[int]] = {t: [] for t in TABLES}

    def add(self, table: str, row: dict[str, Any], ctx: LineContext, text: str) -> None:
        """A parser's row from the line ``text``: rank, host, time and source from ``ctx``
        where the row does not say them."""
        name, lineno, origin, when = ctx
        if row.pop("_named_rank", False) and row.get("rank") is not None:
            pass  # the message names this rank (another rank than the writer's)
        elif row.get("rank") is None or (origin.rank_global and origin.rank is not None):
            row["rank"] = origin.rank
        if row.get("host") is None:
            row["host"] = origin.host
        elif table == "errors" and origin.host and origin.host.startswith(SYNTHETIC_HOST_PREFIX):
            row["task"] = int(origin.host[len(SYNTHETIC_HOST_PREFIX):])  # (the line's own host)
        if row.get("time") is None:
            row["time"] = when
        row["source"] = f"{name}:{lineno}"
        row["line"] = text
        if table == "iterations" and row.get("nan") is None and _non_finite(row):
            row["nan"] = 1  # a NaN read as a float becomes <NA> in the table: say it here
        self.rows[table].append(row)
        self.sources[table].add(name)
        self.kept += 1
        if self.kept >= FLUSH_ROWS:
            self.flush_all()

    def add_bulk(self, table: str, batch: Any, name: str) -> None:
        """One more row of ``table`` held by ``batch`` (the bulk lane's columns, the row just
        appended to them; ``name``: its file), in its place after the rows added so far.
        ``batch`` has ``len``, ``frame()`` (its rows as the table, schema dtypes), ``rows()``
        (the same as row dicts) and ``clear()``."""
        pos = self.bulk_pos[table]
        if self.bulk.get(table) is not batch:
            if pos:  # another lane's rows first
                self.flush(table)
                pos = self.bulk_pos[table]
            self.bulk[table] = batch
        pos.append(len(self.rows[table]) + len(pos))
        self.sources[table].add(name)
        self.kept += 1
        if self.kept >= FLUSH_ROWS:
            self.flush_all()

    def add_block(self, table: str, row: dict[str, Any]) -> None:
        """A block parser's row, with the context of its first line under ``_ctx``."""
        ctx = row.pop("_ctx", None)
        if ctx is None:
            ctx = ("?", 0, Origin(), None, "")
        name, lineno, origin, when, text = ctx
        self.add(table, row, (name, lineno, origin, when), text)

    def add_rows(self, rows: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """A whole-file loader's (table, row) pairs (they carry their own source and line)."""
        for table, row in rows:
            self.rows[table].append(row)
            self.sources[table].add("")
            self.kept += 1
            if self.kept >= FLUSH_ROWS:
                self.flush_all()

    def add_frame(self, table: str, df: pd.DataFrame) -> None:
        """A whole-file loader's rows of ``table`` as one DataFrame, after the rows before it."""
        if not len(df):
            return
        self.flush(table)  # rows read before this file stay before its rows
        parts = self.frames[table]
        parts.append(df)
        self.sources[table].add("")
        # many dumps make many small parts: join the trailing small ones (in order)
        # MERGE_PARTS at a time, so that ``tables`` joins a few large parts
        run = 0
        for p in reversed(parts):
            if len(p) >= FLUSH_ROWS // MERGE_PARTS or run == MERGE_PARTS:
                break
            run += 1
        if run == MERGE_PARTS:
            parts[-run:] = [pd.concat(same_files(parts[-run:]), ignore_index=True)]

    def flush(self, table: str) -> None:
        """Make the rows of ``table`` kept as dicts (and the bulk lane's) into a DataFrame."""
        rows = self.rows[table]
        pos = self.bulk_pos[table]
        if pos:
            batch = self.bulk[table]
            df = batch.frame() if not rows else self._merged(table, rows, batch, pos)
            batch.clear()
            self.frames[table].append(compact(df))
            self.rows[table] = []
            self.bulk_pos[table] = []
            self.kept -= len(rows) + len(pos)
        elif rows:
            self.frames[table].append(self._frame(table, rows))
            self.rows[table] = []
            self.kept -= len(rows)

    def _frame(self, table: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
        try:
            return frame(table, rows)
        except (OverflowError, ValueError, TypeError):  # a number beyond int64, say
            _clean_ints(table, rows, self.unreadable)
            return frame(table, rows)

    def _merged(self, table: str, rows: list[dict[str, Any]], batch: Any,
                pos: list[int]) -> pd.DataFrame:
        """The rows of both paths as one DataFrame, in reading order (``pos``: the bulk rows'
        places): two frames joined where their dtypes agree (``_same_times``), else one frame
        of all rows as dicts (``schema.frame`` infers a time column's unit from the values it
        is given)."""
        ours, theirs = self._frame(table, rows), batch.frame()
        n = len(rows) + len(pos)
        if _same_times(ours, theirs):
            src = np.empty(n, dtype=np.int64)
            bulk = np.zeros(n, dtype=bool)
            bulk[pos] = True
            src[~bulk] = np.arange(len(rows))
            src[bulk] = np.arange(len(rows), n)
            return (pd.concat(same_files([ours, theirs]), ignore_index=True).take(src)
                    .reset_index(drop=True))
        got = iter(batch.rows())
        at = iter(rows)
        every = set(pos)
        return self._frame(table, [next(got) if i in every else next(at) for i in range(n)])

    def flush_all(self) -> None:
        """Make every table's rows kept as dicts into DataFrames (their memory is not handed
        back here: the next rows take it again; ``_release`` at each flush made the 1 GiB hot
        mix load in 105 s instead of 91, in page faults, for the same peak)."""
        for t in TABLES:
            self.flush(t)

    def parts(self) -> tuple[dict[str, list[pd.DataFrame]], dict[str, set[str]]]:
        """Every row as DataFrames (the non-empty tables) and the sources: what a worker
        process hands back (``absorb``)."""
        for t in TABLES:
            self.flush(t)
        return {t: f for t, f in self.frames.items() if f}, self.sources

    def absorb(self, frames: dict[str, list[pd.DataFrame]], sources: dict[str, set[str]]) -> None:
        """Another sink's ``parts``, read after every row here."""
        for t, got in frames.items():
            self.flush(t)  # (a part from another process holds its empty columns anew)
            self.frames[t].extend(compact(df) for df in got)
        for t, names in sources.items():
            self.sources[t] |= names

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables of every row so far (``Incident.from_rows`` would build the same)."""
        out = {}
        for t in TABLES:
            self.flush(t)
            parts, self.frames[t] = self.frames[t], []
            if self.want is not None and t not in self.want:
                parts = []  # a whole-file loader's rows for a table not asked for
            if not parts:
                df = frame(t, [])
            elif len(parts) == 1:
                df = parts[0]
            else:
                df = _concat(parts)
            del parts
            names = self.sources[t]
            if len(names) == 1 and not any(n == "" or "#entry" in n for n in names):
                out[t] = df  # one text file: drop_echoes would find nothing to drop
            else:  # (its rows taken anew: an empty column's view becomes an array)
                out[t] = compact(drop_echoes(df))
        return out


def _same_times(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Whether ``a`` and ``b`` (two frames of a table) have the same dtypes, once a time
    column with no time in one of them takes the other's (``schema.frame`` infers the unit
    of all rows' times from the times there are: ``datetime64[s]`` when there are none)."""
    for col in a.columns:
        x, y = a[col], b[col]
        if x.dtype == y.dtype or (isinstance(x.dtype, pd.CategoricalDtype)
                                  and isinstance(y.dtype, pd.CategoricalDtype)):
            continue  # (categories are joined: ``same_files``)
        if x.dtype.kind != "M" or y.dtype.kind != "M":
            return False
        if x.isna().all():
            a[col] = x.astype(y.dtype)
        elif y.isna().all():
            b[col] = y.astype(x.dtype)
        else:
            return False
    return True


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _clean_ints(table: str, rows: list[dict[str, Any]],
                unreadable: Callable[[Unreadable], None] | None) -> None:
    """Set to None (and report) the values of ``table``'s integer columns that are no int64:
    numbers beyond its range (``[rank99999999999999999999]:``, a 23-digit SeqNum) or not whole
    numbers at all. The row stays: the rest of it was read."""
    cols = [c for c, dtype in SCHEMAS[table].items() if dtype == "Int64"]
    for r in rows:
        for c in cols:
            v = r.get(c)
            if v is None or isinstance(v, bool):
                continue
            if isinstance(v, int):
                if INT64_MIN <= v <= INT64_MAX:
                    continue
                what = "a number too large for a count"
            elif isinstance(v, float):
                if v != v or (v.is_integer() and INT64_MIN <= v <= INT64_MAX):
                    continue
                what = f"{v!r}, not a whole number"
            else:
                what = f"{type(v).__name__} {str(v)[:40]!r}, not a number"
            r[c] = None
            if unreadable is not None:
                unreadable(Unreadable.at(str(r.get("source", "?")), table, c, what))


def _non_finite(row: dict[str, Any]) -> bool:
    """A step whose loss or grad norm was read as NaN or infinite."""
    for c in ("loss", "grad_norm"):
        v = row.get(c)
        if isinstance(v, float) and not math.isfinite(v):
            return True
    return False


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """``pd.concat(parts, ignore_index=True)`` a column at a time, freeing each part's column
    as it goes (and giving its memory back: ``_release``): the peak is the table plus one
    column, not twice the table. Empties ``parts`` (the columns are held apart from their
    frames, so that dropping one costs nothing)."""
    names = list(parts[0].columns)
    columns = [[p[c] for c in names] for p in parts]
    parts.clear()
    n = sum(len(pc[0]) for pc in columns)
    cols = {}
    for i, col in enumerate(names):
        got = [pc[i] for pc in columns]
        dtype = got[0].dtype
        empty = all(c.dtype == dtype and c.isna().all() for c in got)
        held = missing(dtype, n) if empty else None  # (a column no part fills: no storage)
        if held is None and isinstance(dtype, pd.CategoricalDtype):
            held = join_files(got)
        cols[col] = held if held is not None else pd.concat(got, ignore_index=True)
        del got
        for pc in columns:
            pc[i] = None
        _release()
    return pd.DataFrame(cols, copy=False)


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None (another C library, another system)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):  # musl, say
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_MALLOC_TRIM = _malloc_trim()


def _release() -> None:
    """Give the system back the free pages inside glibc's heap. A part's arrays (a few hundred
    KiB each) are allocated inside the heap, not mapped apart, and freeing them leaves holes
    that the process keeps: without this, joining the parts held every numeric column twice
    (the 1 GiB hot mix peaked 320 MiB higher at the join). A heap walk: about a millisecond."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
