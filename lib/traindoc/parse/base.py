"""What a parser is: the whole contract between ``traindoc.parse`` and the reader.

- ``LineParser``: stateless, one logical line at a time. Cheap substring ``needles``: the
  reader runs ``parse`` only on lines holding one of them. ``incomplete`` says a matching line
  was cut by a terminal or a paste and the next unprefixed lines belong to it (the reader
  rejoins them before parsing).
- ``BlockParser``: stateful, reads the lines of one writer (rank, host) of a stream in order
  (records over several lines). Declares ``needles``, ``tables`` and ``section``.
- ``FileLoader``: reads a whole file that is not a text log (tried before a file is read as
  text).

The registries in ``traindoc.parse`` (``LINE_PARSERS``, ``BLOCK_PARSERS``, ``FILE_LOADERS``)
list them; the reader reads these attributes directly.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

Row = dict[str, Any]


@dataclass(frozen=True)
class LineParser:
    """Parses one logical line into rows of ``table``: one row, a list of rows (a message
    about several ranks), or None. A row with ``_named_rank`` keeps the rank it names (the
    message speaks of another rank than the one that printed it)."""

    name: str
    table: str
    needles: tuple[str, ...]
    parse: Callable[[str], Row | list[Row] | None]
    incomplete: Callable[[str], bool] | None = None
    example: str = field(default="", repr=False)
    # whether an unprefixed line continues the incomplete record so far (None: any does)
    continues: Callable[[str, str], bool] | None = None
    # a fallback parser reads only a line that no other parser understood
    fallback: bool = False
    # line ends that make ``incomplete`` False whatever comes before them (the fast engine's
    # bulk lane asks ``incomplete`` only of the lines that may be incomplete)
    complete_ends: tuple[str, ...] = ()


class BlockParser(Protocol):
    """A stateful parser fed every logical line of one writer of a stream, in order. The
    registry (``BLOCK_PARSERS``) holds the classes: the reader makes one per writer and reads
    ``needles`` and ``tables`` off the class, ``section`` off the instance after each line.

    ``needles``: substrings, one of which is in every line that can start a record or change
    the parser's idle state. While idle (``section`` None) the parser must ignore any line
    holding none of them: return ``[]``, change no state, leave ``section`` None (the fast
    engine skips such lines without feeding them; empty ``needles`` make ``engine="auto"``
    fall back to the reference engine).

    ``tables``: the tables its rows go to; ``load(tables=…)`` leaves the parser out when none
    of them is asked for. Empty (the default): it always runs.

    ``section``: None while idle; anything else while inside a record, which tells the reader
    that the line was understood (not counted as unparsed) and that the writer's following
    lines belong to the record (the fast engine then reads them one by one). Default None.
    """

    needles: tuple[str, ...]
    tables: tuple[str, ...] = ()
    section: str | None = None

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return (table, row) pairs it completed, each with its start
        line's ``ctx`` under the key ``_ctx``."""
        ...

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: return what is still pending."""
        ...


@dataclass(frozen=True)
class FileLoader:
    """Reads a whole file that is not a text log (a flight-recorder dump, a metrics CSV, a
    py-spy --json dump). ``sniff(path, head)`` says whether it applies from the name and the
    first 4 KiB; ``load(path)`` returns (table, row) pairs (rows carry their own ``source`` and
    ``line``) and raises ValueError with a clear reason when the file cannot be used."""

    name: str
    sniff: Callable[[Any, bytes], bool]
    load: Callable[[Any], list[tuple[str, Row]]]
    kind: str = "file"  # what the account counts it as: "dump" or "file"
    # the same tables as DataFrames (taken instead of ``load``'s rows: no dict per row); None:
    # only ``load``
    load_frames: Callable[[Any], dict[str, pd.DataFrame]] | None = None


INT_RE = re.compile(r"-?\d+")
NUM_RE = re.compile(r"[-+]?(?:\d++\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)", re.IGNORECASE)


# A number read from a log but beyond int64: a table keeps its row with the value <NA> and the
# account says so (``reader.sink``); never the slow or failing ``int()`` of thousands of digits.
OUT_OF_RANGE = 2**63
NOT_A_COUNT = 2**64 - 1  # NumelIn of a coalesced op: "not a count", read as None silently


def digits_int(digits: str) -> int:
    """``int(digits)`` for an optionally signed run of digits a regex matched; ``OUT_OF_RANGE``
    when it does not fit in int64. (A table's cell is read by ``diagnose.common.as_int``.)"""
    if len(digits.lstrip("+-").lstrip("0")) > 19:
        return OUT_OF_RANGE
    v = int(digits)
    return v if -(2**63) <= v < 2**63 else OUT_OF_RANGE


def to_int(value: str | None) -> int | None:
    """An int from text (spaces removed), or None; ``OUT_OF_RANGE`` beyond int64."""
    if value is None:
        return None
    m = INT_RE.fullmatch("".join(value.split()))
    if not m:
        return None
    v = digits_int(m.group())
    if v == OUT_OF_RANGE and m.group().lstrip("+0") == str(NOT_A_COUNT):
        return None
    return v


def to_float(value: str | None) -> float | None:
    """A float from text (spaces removed; nan/inf allowed), or None."""
    if value is None:
        return None
    v = "".join(value.split())
    if not NUM_RE.fullmatch(v):
        return None
    try:
        return float(v)
    except ValueError:
        return None


def hms_to_s(value: str) -> float | None:
    """'08:49' or '1:02:03' or '2 days, 1:02:03' as seconds."""
    days = 0
    if "day" in value:
        d, _, value = value.partition(",")
        days = to_int(d.split()[0]) or 0
    parts = value.strip().split(":")
    try:
        nums = [float(p) for p in parts]
    except ValueError:
        return None
    total = 0.0
    for n in nums:
        total = total * 60 + n
    return total + days * 86400
