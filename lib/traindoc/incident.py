"""``Incident``: the tables read from one incident's logs, and an account of the reading."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

import pandas as pd

from .hostlist import runs
from .schema import SYNTHETIC_HOST_PREFIX, TABLES, empty, frame

T = TypeVar("T")


@dataclass(frozen=True)
class Unreadable:
    """A value a parser read that no column of its table can hold (a number beyond int64, a
    float where a count goes): the row is kept, the value is <NA>. ``line`` is None where the
    source names no line (a whole-file loader's row)."""

    table: str
    column: str
    file: str
    line: int | None
    what: str  # what the value was, in words ("a number too large for a count")

    @property
    def source(self) -> str:
        """``file:line`` (the rows' ``source``)."""
        return self.file if self.line is None else f"{self.file}:{self.line}"

    def __str__(self) -> str:
        return (f"{self.source}: {self.table}.{self.column} was {self.what}; read as <NA> (the "
                "row is kept)")

    @classmethod
    def at(cls, source: str, table: str, column: str, what: str) -> Unreadable:
        """The value of ``table.column`` in the row whose ``source`` is ``file:line``."""
        file, sep, line = source.rpartition(":")
        if sep and line.isdigit():
            return cls(table, column, file, int(line), what)
        return cls(table, column, source, None, what)


@dataclass(frozen=True)
class ReadAccount(Mapping[str, Any]):
    """What a load read, skipped and warned about (``Incident.account``). Read as attributes;
    it is also a read-only mapping of the same names (``account["lines"]``), without
    ``unreadable`` (so ``dict(account)`` is JSON) and without ``tables`` when every table was
    filled."""

    paths: list[str] = field(default_factory=list)
    files: int = 0  # files and dumps read
    file_list: list[str] = field(default_factory=list)
    lines: int = 0
    parsed_lines: int = 0
    unparsed_lines: int = 0
    rejoined_lines: int = 0
    truncated_lines: int = 0
    bad_bytes: int = 0
    dumps: int = 0
    warnings: list[str] = field(default_factory=list)
    tables: list[str] | None = None  # the tables the load filled, when not all
    unreadable: list[Unreadable] = field(default_factory=list)  # each also a warning

    @classmethod
    def of(cls, account: Mapping[str, Any] | None) -> ReadAccount:
        """``account`` itself, or an account of a mapping's known keys (``{"files": 1}``)."""
        if isinstance(account, ReadAccount):
            return account
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (account or {}).items() if k in names})

    def unreadable_in(self, table: str, column: str) -> list[Unreadable]:
        """The values of ``table.column`` that could not be kept, in reading order."""
        return [u for u in self.unreadable if u.table == table and u.column == column]

    def _keys(self) -> list[str]:
        return [f.name for f in fields(self)
                if f.name != "unreadable" and (f.name != "tables" or self.tables is not None)]

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())


@dataclass
class Incident:
    """Tables of schema.py (``iterations``, ``collectives``, ``errors``, ``stacks``,
    ``progress``, ``exits``) plus what was read and what could not be parsed."""

    tables: dict[str, pd.DataFrame]
    account: ReadAccount = field(default_factory=ReadAccount)  # a mapping is made one
    unrecognized: list[str] = field(default_factory=list)
    # reads the text of iterations rows back from their files: (file, lineno) pairs to the
    # text at each (``reader.readback.texts``; None: an incident not read from files)
    reread: Callable[[Iterable[tuple[str, int | None]]], dict[tuple[str, int | None], str]] \
        | None = field(default=None, repr=False, compare=False)
    # what once() computed, each with the objects it was computed from (not a field of a copy)
    _memo: dict[str, tuple[tuple[Any, ...], tuple[Any, ...], Any]] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.account = ReadAccount.of(self.account)
        if "exits" in self.tables:
            self.tables["exits"] = srun_tasks_as_ranks(self.tables["exits"])

    @classmethod
    def from_rows(
        cls,
        rows: Mapping[str, list[dict[str, Any]]],
        account: Mapping[str, Any] | None = None,
        unrecognized: list[str] | None = None,
    ) -> Incident:
        """Build the tables from parser rows (see ``traindoc.schema``)."""
        tables = {t: drop_echoes(frame(t, rows.get(t, []))) for t in TABLES}
        return cls(tables, ReadAccount.of(account), list(unrecognized or []))

    @classmethod
    def empty(cls) -> Incident:
        """An incident with no rows and nothing read."""
        return cls({t: empty(t) for t in TABLES}, ReadAccount())

    def __getattr__(self, name: str) -> pd.DataFrame:
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(name)

    def text(self, rows: pd.DataFrame, reread: bool = False) -> pd.Series:
        """The text of each of ``rows`` (rows of a table, its index kept): their ``line``,
        or, for rows that hold their place as ``file`` and ``lineno`` (the iterations
        table's) and no line or ``reread``, read back from their files (``reread``; <NA>
        where it cannot be)."""
        if "line" in rows.columns and not reread:
            return rows["line"]
        if "file" not in rows.columns or self.reread is None or not len(rows):
            return pd.Series(pd.NA, index=rows.index, dtype="string")
        places = [(f, None if n is pd.NA else int(n)) if isinstance(f, str) else None
                  for f, n in zip(rows["file"], rows["lineno"], strict=True)]
        got = self.reread([p for p in places if p is not None])
        return pd.Series([got.get(p, pd.NA) for p in places], index=rows.index, dtype="string")

    def once(self, name: str, compute: Callable[[Incident], T]) -> T:
        """``compute(self)``, computed again only when a table, the account or the unrecognized
        lines were replaced or grew since (as ``watch`` replaces tables): for a derived value
        that several classes' reports read (the input's findings). Tables changed in place,
        keeping their object and length, are not noticed."""
        objects = (self.account, self.unrecognized, *self.tables.values())
        sizes = (len(self.account.warnings), len(self.unrecognized), *self.tables,
                 *map(len, self.tables.values()))
        got = self._memo.get(name)
        if got is not None and got[0] == sizes and len(got[1]) == len(objects) \
                and all(map(operator.is_, got[1], objects)):
            return got[2]
        value = compute(self)
        self._memo[name] = (sizes, objects, value)
        return value

    @property
    def readable(self) -> bool:
        """True when at least one file or dump could be read."""
        return bool(self.account.files)

    @property
    def ranks(self) -> list[int]:
        """Every rank seen in any table."""
        seen: set[int] = set()
        for df in self.tables.values():
            if "rank" in df and len(df):
                seen.update(int(r) for r in df["rank"].dropna().unique())
        return sorted(seen)

    @property
    def hosts(self) -> list[str]:
        """Every host seen in any table."""
        seen: set[str] = set()
        for df in self.tables.values():
            if "host" in df and len(df):
                seen.update(str(h) for h in df["host"].dropna().unique())
        return sorted(seen)

    def inputs(self) -> dict[str, Any]:
        """The ``inputs`` block of summary.json."""
        a = self.account
        return {"paths": list(a.paths), "files": int(a.files), "lines": int(a.lines),
                "unparsed_lines": int(a.unparsed_lines), "warnings": list(a.warnings)}

    def overview(self) -> pd.DataFrame:
        """A two-column table of what was read, for the top of a runbook."""
        a = self.account
        machines = [h for h in self.hosts if not h.startswith(SYNTHETIC_HOST_PREFIX)]
        tasks = [h for h in self.hosts if h.startswith(SYNTHETIC_HOST_PREFIX)]
        items = [
            ("paths", ", ".join(map(str, a.paths))),
            ("files read", a.files),
            ("flight-recorder dumps", a.dumps),
            ("lines", a.lines),
            ("lines parsed", a.parsed_lines),
            ("lines not parsed", a.unparsed_lines),
            ("wrapped lines rejoined", a.rejoined_lines),
            ("undecodable bytes", a.bad_bytes),
            ("ranks seen", _span(self.ranks)),
            ("hosts seen", _names(machines)),
            *([("srun tasks (machine not named)", _names(tasks))] if tasks else []),
            ("warnings", len(a.warnings)),
        ]
        items += [(f"{t} rows", len(df)) for t, df in self.tables.items()]
        return pd.DataFrame(items, columns=["what", "value"]).astype({"value": "string"})


def srun_tasks_as_ranks(exits: pd.DataFrame) -> pd.DataFrame:
    """``exits`` with an srun task's rank cleared when a launcher ran under srun: then exits
    with a ``local_rank`` (torchrun's "failed (exitcode: -6) local_rank: 3", deepspeed's
    ``--local_rank=3``) are in the logs, and srun's "task 0" is the first node's agent, not
    rank 0."""
    if "task" not in exits or not len(exits) or not exits["task"].notna().any():
        return exits
    if not exits["local_rank"].notna().any():
        return exits
    out = exits.copy()
    out.loc[out["task"].notna(), "rank"] = pd.NA
    return out


def drop_echoes(df: pd.DataFrame) -> pd.DataFrame:
    """Drop rows that echo another file's rows: torchrun ``--tee`` writes each rank's lines both
    to its own file and, prefixed, to the combined log. The n-th occurrence of a (rank, line) in
    one file echoes the n-th occurrence in an earlier file; repeats within a file are kept. A
    row with frames echoes only a row with the same frames: two py-spy snapshots of one process
    in two files share the thread header line, not the stack."""
    if len(df) < 2 or "line" not in df or ("source" not in df and "file" not in df):
        return df
    line = df["line"].fillna("")
    # only a row whose line occurs again can echo (or be echoed): most rows are ruled out by
    # one hash of the line column, and the files are worked out for the others only
    cand = line.duplicated(keep=False).to_numpy()
    if not cand.any():
        return df
    sub = df.loc[cand]
    file = (sub["file"].astype("string") if "file" in sub
            else sub["source"].str.rsplit(":", n=1).str[0]).str.split("#entry", n=1).str[0]
    if file.nunique() < 2:
        return df
    host = sub["host"].fillna("") if "host" in sub else ""
    said = line[cand]
    if "frames" in sub:
        said = said + "\n" + sub["frames"].map(
            lambda f: "\n".join(map(str, f)) if isinstance(f, list) else "")
    key = pd.DataFrame({"f": file, "r": sub["rank"].fillna(-1), "h": host, "l": said})
    key["n"] = key.groupby(["f", "r", "h", "l"]).cumcount()
    dup = key.duplicated(["r", "h", "l", "n"], keep="first").to_numpy()
    if not dup.any():
        return df
    drop = cand.copy()
    drop[cand] = dup
    return df.loc[~drop].reset_index(drop=True)


def _names(names: list[str], limit: int = 8) -> str:
    return ", ".join(names[:limit]) + (" …" if len(names) > limit else "")


def _span(ranks: list[int]) -> str:
    """'0-7, 9' for [0..7, 9]."""
    return runs(ranks, sep=", ") if ranks else ""
