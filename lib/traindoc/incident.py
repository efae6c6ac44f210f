"""``Incident``: the tables read from one incident's logs, and an account of the reading."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .hostlist import runs
from .schema import SYNTHETIC_HOST_PREFIX, TABLES, empty, frame


@dataclass
class Incident:
    """Tables of schema.py (``iterations``, ``collectives``, ``errors``, ``stacks``,
    ``progress``, ``exits``) plus what was read and what could not be parsed."""

    tables: dict[str, pd.DataFrame]
    account: dict[str, Any] = field(default_factory=dict)
    unrecognized: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if "exits" in self.tables:
            self.tables["exits"] = srun_tasks_as_ranks(self.tables["exits"])

    @classmethod
    def from_rows(
        cls,
        rows: Mapping[str, list[dict[str, Any]]],
        account: dict[str, Any] | None = None,
        unrecognized: list[str] | None = None,
    ) -> Incident:
        """Build the tables from parser rows (see ``traindoc.schema``)."""
        tables = {t: drop_echoes(frame(t, rows.get(t, []))) for t in TABLES}
        return cls(tables, dict(account or {}), list(unrecognized or []))

    @classmethod
    def empty(cls) -> Incident:
        """An incident with no rows and nothing read."""
        return cls({t: empty(t) for t in TABLES}, {"files": 0, "lines": 0, "warnings": []})

    def __getattr__(self, name: str) -> pd.DataFrame:
        tables = self.__dict__.get("tables", {})
        if name in tables:
            return tables[name]
        raise AttributeError(name)

    @property
    def readable(self) -> bool:
        """True when at least one file or dump could be read."""
        return bool(self.account.get("files"))

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
        return {
            "paths": list(a.get("paths", [])),
            "files": int(a.get("files", 0)),
            "lines": int(a.get("lines", 0)),
            "unparsed_lines": int(a.get("unparsed_lines", 0)),
            "warnings": list(a.get("warnings", [])),
        }

    def overview(self) -> pd.DataFrame:
        """A two-column table of what was read, for the top of a runbook."""
        a = self.account
        machines = [h for h in self.hosts if not h.startswith(SYNTHETIC_HOST_PREFIX)]
        tasks = [h for h in self.hosts if h.startswith(SYNTHETIC_HOST_PREFIX)]
        items = [
            ("paths", ", ".join(map(str, a.get("paths", [])))),
            ("files read", a.get("files", 0)),
            ("flight-recorder dumps", a.get("dumps", 0)),
            ("lines", a.get("lines", 0)),
            ("lines parsed", a.get("parsed_lines", 0)),
            ("lines not parsed", a.get("unparsed_lines", 0)),
            ("wrapped lines rejoined", a.get("rejoined_lines", 0)),
            ("undecodable bytes", a.get("bad_bytes", 0)),
            ("ranks seen", _span(self.ranks)),
            ("hosts seen", _names(machines)),
            *([("srun tasks (machine not named)", _names(tasks))] if tasks else []),
            ("warnings", len(a.get("warnings", []))),
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
    one file echoes the n-th occurrence in an earlier file; repeats within a file are kept."""
    if len(df) < 2 or "line" not in df or "source" not in df:
        return df
    line = df["line"].fillna("")
    # only a row whose line occurs again can echo (or be echoed): most rows are ruled out by
    # one hash of the line column, and the files are worked out for the others only
    cand = line.duplicated(keep=False).to_numpy()
    if not cand.any():
        return df
    sub = df.loc[cand]
    file = sub["source"].str.rsplit(":", n=1).str[0].str.split("#entry", n=1).str[0]
    if file.nunique() < 2:
        return df
    host = sub["host"].fillna("") if "host" in sub else ""
    key = pd.DataFrame({"f": file, "r": sub["rank"].fillna(-1), "h": host, "l": line[cand]})
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
