"""Flight-recorder dumps (``TORCH_NCCL_TRACE_BUFFER_SIZE`` / ``TORCH_FR_BUFFER_SIZE``).

One file per rank, pickle (``_dump_fr_trace``) or JSON (``_dump_fr_trace_json``). Pickles are
read by ``SafeUnpickler``, which builds plain containers and scalars only: any opcode that
would import or call something (GLOBAL, STACK_GLOBAL, REDUCE, …) is refused, so no code from
the file ever runs. The rank is taken from the file name (torch writes ``<prefix><rank>``).

A dump may not explode. While it is unpickled the process may grow by ``MAX_DUMP_MEMORY`` at
most: checked at each read of the file, with a pickle frame over ``MAX_FRAME_BYTES`` refused
(the unpickler would build all of it unchecked) and the address-space limit lowered meanwhile
(one absurd allocation fails instead of being written out). A JSON dump is refused when its
brackets and separators alone could build more than that. Before entries become rows, what
turning them into text would cost is added up, a shared reference counted each time it is
reached (``MAX_DUMP_EXPANSION``, ``MAX_DEPTH``). Each is a ``DumpTooLarge`` (a ValueError): the
file is skipped with a warning. Raise the module's caps to read a dump beyond them.

A dump becomes ``collectives`` rows column by column (``dump_frame``): a thousand ranks of
thousands of entries each are read in seconds. ``dump_rows`` gives the same rows as dicts.
"""

from __future__ import annotations

import gc
import json
import math
import os
import pickle
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..schema import SCHEMAS
from .base import FileLoader, Row

MAX_DUMP_BYTES = 512 * 1024 * 1024
MAX_DUMP_MEMORY = 1024**3  # how much the process may grow while one dump is read
MAX_DUMP_EXPANSION = 1024**3  # what its entries may cost as text and rows (about bytes)
MAX_DEPTH = 100  # lists and dicts within each other (torch writes five levels)
MAX_FRAME_BYTES = 1024**2  # a pickle frame (pickle writes 64 KiB ones)
SLACK_BYTES = 256 * 1024**2  # address space beyond MAX_DUMP_MEMORY (the allocator's own)
READ_CHUNK = 1024**2  # the unpickler is handed this much at a time; memory is checked between
ROW_COST = 512  # a table row's own cost in the expansion count
FRAME_OP = 0x95
RANK_IN_NAME_RE = re.compile(r"(\d+)(?:\.\w+)?$")
PICKLE_MAGIC = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
# datetime's range (years 1..9999) in whole seconds from the epoch: a time outside is <NA>
SECONDS_MIN, SECONDS_MAX = -62_135_596_800, 253_402_300_799
COLUMNS = tuple(SCHEMAS["collectives"])


class RefusedPickle(pickle.UnpicklingError):
    """A dump asked to import or call something; it was not loaded."""


class DumpTooLarge(ValueError):
    """A dump that would grow beyond one of the caps: it is skipped, not loaded."""


class SafeUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists, tuples, strings, numbers, bools and None; refuses all else."""

    def find_class(self, module: str, name: str) -> Any:  # noqa: D102
        raise RefusedPickle(f"refused to import {module}.{name}: dumps hold plain data only")

    def persistent_load(self, pid: Any) -> Any:  # noqa: D102
        raise RefusedPickle("refused a persistent id: dumps hold plain data only")


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic collector off while a dump's many small containers are built: it would
    otherwise walk them again and again (plain data; any cycle is collected afterwards)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def looks_like_dump(path: Path, head: bytes) -> bool:
    """True for a file that is a flight-recorder dump by its first bytes or its name."""
    if head.startswith(PICKLE_MAGIC):
        return True
    name = path.name.lower()
    return head.lstrip()[:1] == b"{" and ("trace" in name or "fr" in name or "dump" in name) and (
        b'"entries"' in head or b'"pg_config"' in head or b'"version"' in head
    )


PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _resident() -> int:
    """The process's resident memory in bytes (0 where the system does not tell)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return 0


# The address-space limit is the process's, not a thread's: one reader at a time lowers and
# restores it (two at once could restore each other's lowered limit and leave it so).
_ADDRESS_SPACE = threading.RLock()


@contextmanager
def _address_space_capped(extra: int) -> Iterator[None]:
    """The process's address-space limit lowered, for the block, to what it holds now plus
    ``extra``: one allocation the unpickler makes at once for a number in the file (a memo
    index: 8 GiB from 5 bytes) then fails with MemoryError instead of being written out. Where
    the system has no such limit (or no ``/proc``), nothing changes. Threads take turns."""
    with _ADDRESS_SPACE:
        with _address_space_capped_unlocked(extra):
            yield


@contextmanager
def _address_space_capped_unlocked(extra: int) -> Iterator[None]:
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm", "rb") as fh:
            cap = int(fh.read().split()[0]) * PAGE_SIZE + extra
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        lower = soft == resource.RLIM_INFINITY or soft > cap
        if lower:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, OSError, ValueError, IndexError, AttributeError):
        lower = False
    try:
        yield
    finally:
        if lower:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _mib(n: int) -> str:
    return f"{n / 1024**2:,.0f} MiB"


class _BoundedInput:
    """A pickle's bytes as the unpickler reads them (``peek``, ``read``, ``readline``), with
    the process's growth checked at each read: it sees at most ``READ_CHUNK`` bytes, or one
    frame, between two checks."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.view = memoryview(data)
        self.pos = 0
        self.base = _resident()

    def _check(self) -> None:
        if self.base and _resident() - self.base > MAX_DUMP_MEMORY:
            raise DumpTooLarge(f"exceeds the {_mib(MAX_DUMP_MEMORY)} a dump may take while it "
                               f"is read (at byte {self.pos:,} of {len(self.data):,}); skipped")

    def peek(self, n: int = 0) -> memoryview:  # noqa: D102
        self._check()
        return self.view[self.pos:self.pos + READ_CHUNK]

    def read(self, n: int = -1) -> bytes:  # noqa: D102
        start = self.pos
        if n is None or n < 0:
            n = len(self.data) - start
        if n > MAX_FRAME_BYTES and start >= 9 and self.data[start - 9] == FRAME_OP \
                and int.from_bytes(self.data[start - 8:start], "little") == n:
            raise DumpTooLarge(f"holds a pickle frame of {n:,} bytes, over the "
                               f"{_mib(MAX_FRAME_BYTES)} cap (pickle writes 64 KiB frames); "
                               "skipped")
        self._check()
        self.pos = min(start + n, len(self.data))
        return self.data[start:self.pos]

    def readline(self) -> bytes:  # noqa: D102
        self._check()
        start = self.pos
        end = self.data.find(b"\n", start)
        self.pos = len(self.data) if end < 0 else end + 1
        return self.data[start:self.pos]


# What one byte of JSON can build at most, by the byte that starts or separates it: a list
# or dict, an item of one (its slot and a small object), a dict entry, a string.
JSON_COSTS = ((b"[", 64), (b"{", 72), (b",", 48), (b":", 64), (b'"', 32))


def check_json_size(data: bytes, what: str = "a dump") -> None:
    """Raise ``DumpTooLarge`` when parsing ``data`` as JSON could build more than
    ``MAX_DUMP_MEMORY``, by a count of its brackets and separators (strings included)."""
    cost = len(data) * (1 if data.isascii() else 4) + sum(
        data.count(ch) * n for ch, n in JSON_COSTS)
    if cost > MAX_DUMP_MEMORY:
        raise DumpTooLarge(f"exceeds the {_mib(MAX_DUMP_MEMORY)} {what} may take once parsed "
                           f"(its {len(data):,} bytes of JSON could build about {_mib(cost)}); "
                           "skipped")


def read_dump(path: Path) -> dict[str, Any]:
    """Load one dump as plain data. Raises ValueError with a clear reason when it cannot
    (``DumpTooLarge`` when it exceeds a cap)."""
    size = path.stat().st_size
    if size == 0:
        raise ValueError("empty file (0 bytes): the rank was probably killed while dumping")
    if size > MAX_DUMP_BYTES:
        raise ValueError(f"{size} bytes is larger than the {MAX_DUMP_BYTES} byte cap for a dump")
    data = path.read_bytes()
    try:
        if data.startswith(PICKLE_MAGIC):
            with _address_space_capped(MAX_DUMP_MEMORY + SLACK_BYTES):
                obj = SafeUnpickler(_BoundedInput(data)).load()
        else:
            check_json_size(data)
            obj = json.loads(data.decode("utf-8", errors="replace"))
    except DumpTooLarge:
        raise
    except RefusedPickle as e:
        raise ValueError(str(e)) from None
    except RecursionError:
        raise ValueError("nests lists or dicts too deeply to read (deeper than Python's "
                         "recursion limit)") from None
    except MemoryError:
        raise DumpTooLarge(f"exceeds the {_mib(MAX_DUMP_MEMORY)} a dump may take while it is "
                           "read (it asked for more at once: an absurd length or index in a "
                           "truncated or corrupt dump); skipped") from None
    except Exception as e:  # BUILD on a dict, a bad opcode, a cut-off file: all corrupt data
        raise ValueError(f"truncated or corrupt dump ({type(e).__name__}: {e})") from None
    if not isinstance(obj, dict) or "entries" not in obj:
        raise ValueError("not a flight-recorder dump (no 'entries' key)")
    return obj


def rank_from_name(path: Path) -> int | None:
    """The rank torch appended to the dump's file name."""
    m = RANK_IN_NAME_RE.search(path.name)
    return int(m.group(1)) if m else None


def _numel(sizes: Any) -> int | None:
    """The elements of all shapes in ``sizes``; None when it is not a list of lists of ints
    or a shape's product grows beyond int64 (it would be <NA> in the table all the same)."""
    if not isinstance(sizes, list | tuple):
        return None
    total = 0
    for shape in sizes:
        if not isinstance(shape, list | tuple):
            return None
        n = 1
        huge = False
        for d in shape:
            if not isinstance(d, int):
                return None
            if huge:  # no more multiplying out: only a zero still decides the product
                n = 0 if d == 0 else n
                huge = huge and d != 0
                continue
            n *= d
            huge = not I64_MIN <= n <= I64_MAX
        if huge:
            return None
        total += n
    return total


def _pg_label(entry: dict[str, Any]) -> str | None:
    pg = entry.get("process_group")
    if isinstance(pg, list | tuple) and pg:
        name = pg[1] if len(pg) > 1 else ""
        return f"{pg[0]} ({name})" if name else str(pg[0])
    pg_id = entry.get("pg_id")
    return None if pg_id is None else str(pg_id)


def _time(t: Any) -> Any:
    """``time_created_ns`` as a naive UTC datetime (microseconds, as datetime rounds them);
    None when it is not an int or lies outside datetime's years."""
    if not isinstance(t, int):
        return None
    try:
        return datetime.fromtimestamp(t / 1e9, tz=UTC).replace(tzinfo=None)
    except (OverflowError, ValueError, OSError):
        return None


def dump_rows(dump: dict[str, Any], rank: int | None, source: str) -> list[Row]:
    """One ``collectives`` row (a dict) per recorded entry: ``dump_frame``'s rows."""
    df = dump_frame(dump, rank, source)
    cols = {c: df[c].astype(object).where(df[c].notna(), None).tolist() for c in COLUMNS
            if c != "frames"}
    cols["time"] = [None if t is None else t.to_pydatetime() for t in cols["time"]]
    cols["frames"] = df["frames"].tolist()
    return [dict(zip(cols, vals, strict=True)) for vals in zip(*cols.values(), strict=True)]


def _ints(values: list[Any]) -> pd.api.extensions.ExtensionArray:
    """An Int64 array of ints and Nones (bools count as 0/1; an int beyond int64 is <NA>)."""
    n = len(values)
    try:
        return pd.arrays.IntegerArray(np.array(values, dtype=np.int64), np.zeros(n, dtype=bool))
    except (TypeError, ValueError, OverflowError):
        pass
    clean = [v if v is not None and I64_MIN <= v <= I64_MAX else None for v in values]
    mask = np.fromiter((v is None for v in clean), dtype=bool, count=n)
    data = np.fromiter((0 if v is None else int(v) for v in clean), dtype=np.int64, count=n)
    return pd.arrays.IntegerArray(data, mask)


def _status_int(v: Any) -> int | None:
    """A ``pg_status`` sequence number: an int (or a whole float) within int64; anything
    else (text, a fraction, a number too large) is unknown."""
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        v = int(v)
    if isinstance(v, int) and I64_MIN <= v <= I64_MAX:
        return int(v)
    return None


def _only_ints(values: list[Any]) -> list[Any]:
    """``values`` with anything but an int (or bool) as None."""
    if set(map(type, values)) <= {int}:
        return values
    return [v if isinstance(v, int) else None for v in values]


def _texts_of(values: list[Any]) -> list[str]:
    """``str(v or "")`` of each value."""
    if set(map(type, values)) <= {str}:
        return values  # str(s or "") is s itself
    return [str(v or "") for v in values]


def _field(ents: list[dict[str, Any]], key: str) -> list[Any]:
    """``e.get(key)`` of each entry."""
    try:
        return list(map(itemgetter(key), ents))
    except KeyError:
        return [e.get(key) for e in ents]


def _strings(values: list[Any]) -> pd.api.extensions.ExtensionArray:
    return pd.array(values, dtype="string")


def _no_strings(n: int) -> pd.api.extensions.ExtensionArray:
    # (the "string" dtype's own storage: a pyarrow one where pyarrow is installed, which a
    # python StringArray cannot be concatenated with)
    return pd.array(np.full(n, None, dtype=object), dtype="string")


def _no_ints(n: int) -> pd.api.extensions.ExtensionArray:
    return pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))


def _times(values: list[Any]) -> np.ndarray:
    """``time_created_ns`` values as datetime64[us] (NaT where ``_time`` gives None): the
    arithmetic of ``datetime.fromtimestamp(t / 1e9)``, rounding half to even, on arrays."""
    n = len(values)
    if set(map(type, values)) <= {int}:
        try:
            ns = np.array(values, dtype=np.int64)
        except OverflowError:
            ns = None
        if ns is not None:
            frac, whole = np.modf(ns.astype(np.float64) / 1e9)
            us = np.rint(frac * 1e6)
            up, down = us >= 1e6, us < 0
            us[up] -= 1e6
            whole[up] += 1.0
            us[down] += 1e6
            whole[down] -= 1.0
            ok = (whole >= SECONDS_MIN) & (whole <= SECONDS_MAX)
            sec = np.where(ok, whole, 0).astype(np.int64)
            out = (sec * 1_000_000 + us.astype(np.int64)).view("datetime64[us]")
            out[~ok] = np.datetime64("NaT", "us")
            return out
    out = np.empty(n, dtype="datetime64[us]")
    for i, t in enumerate(values):
        when = _time(t)
        out[i] = np.datetime64("NaT", "us") if when is None else np.datetime64(when, "us")
    return out


def _texts(values: list[Any], *, json_text: bool = True,
           numel: bool = True) -> tuple[list[str], list[str | None], list[int | None]]:
    """``str``, and (where asked) ``json.dumps`` and ``_numel``, of each sizes/dtypes value:
    the last two once per distinct value (entries repeat the same few), told apart by type
    and ``str``, which differ between different plain-data values."""
    strs = list(map(str, values))
    if set(map(type, values)) <= {list}:
        keys: list[Any] = strs  # lists alike: their ``str`` alone tells them apart
    else:
        keys = list(zip(map(type, values), strs, strict=True))
    firsts = dict(zip(keys, values, strict=True))
    out_json: list[str | None] = []
    out_numel: list[int | None] = []
    if json_text:
        try:
            texts = {k: None if v is None else json.dumps(v) for k, v in firsts.items()}
        except TypeError as e:  # a dict keyed by something JSON cannot name
            raise ValueError(f"an entry's sizes or dtypes are not plain data ({e})") from None
        out_json = list(map(texts.__getitem__, keys))
    if numel:
        counts = {k: _numel(v) for k, v in firsts.items()}
        out_numel = list(map(counts.__getitem__, keys))
    return strs, out_json, out_numel


TRY_SHARED_FRAMES = 64  # entries looked at for frame dicts shared between entries


def _frame_text(f: dict[str, Any]) -> str:
    return f"{f.get('name')} ({f.get('filename')}:{f.get('line')})"


def _frame_texts(values: list[Any]) -> list[list[str]]:
    """Each entry's frames as ``name (file:line)`` strings, innermost first; equal lists are
    one shared list (read-only, as every ``frames`` value is), and a list that entries share
    is formatted once. Torch shares frame dicts between entries: where the first entries show
    that, a list of the same dicts (by identity: they are alive, so their ids are theirs) is
    formatted once too."""
    values = [fr if fr and isinstance(fr, list | tuple) else () for fr in values]
    empty: list[str] = []
    lists: dict[tuple[str, ...], list[str]] = {(): empty}
    seen: set[int] = set()
    shared = False
    for fr in values[:TRY_SHARED_FRAMES]:
        ids = set(map(id, fr))
        if seen & ids:
            shared = True
            break
        seen |= ids
    out: list[list[str]] = []
    if not shared:
        done: dict[int, list[str]] = {id(()): empty}
        for fr in values:
            got = done.get(id(fr))
            if got is None:
                try:  # every frame a dict with the three keys (else a TypeError or KeyError)
                    t = [f"{f['name']} ({f['filename']}:{f['line']})" for f in fr]
                except (TypeError, KeyError):
                    t = [_frame_text(f) for f in fr if isinstance(f, dict)]
                got = done[id(fr)] = lists.setdefault(tuple(t), t)
            out.append(got)
        return out
    by_ids: dict[tuple[int, ...], list[str]] = {}
    for fr in values:
        ids = tuple(map(id, fr))
        got = by_ids.get(ids)
        if got is None:
            t = [_frame_text(f) for f in fr if isinstance(f, dict)]
            got = by_ids[ids] = lists.setdefault(tuple(t), t)
        out.append(got)
    return out


# --- what an entry costs once turned into text: shared references counted each time --------
TEXT_KEYS = ("profiling_name", "state", "pg_id", "collective_seq_id", "p2p_seq_id")
SIZE_KEYS = ("input_sizes", "input_dtypes", "output_sizes")  # str, json.dumps and the line
FRAME_KEYS = ("name", "filename", "line")
STR_COST = 56  # a str object's own bytes
ITEM_COST = 64  # a container, or a frame's text, before its contents


class _Expansion:
    """Adds up what ``dump_frame`` builds from a dump's entries, in about bytes: the text
    ``str``, ``json.dumps`` and f-strings make of each value (a value reached twice costs
    twice), the frame texts and the rows. ``DumpTooLarge`` beyond ``MAX_DUMP_EXPANSION`` or
    ``MAX_DEPTH``."""

    def __init__(self) -> None:
        self.total = 0
        self.memo: dict[int, int] = {}  # id -> cost of a container; -1 while inside it

    def add(self, cost: int) -> None:
        self.total += cost
        if self.total > MAX_DUMP_EXPANSION:
            raise DumpTooLarge(
                f"exceeds the {_mib(MAX_DUMP_EXPANSION)} its entries may expand to as text "
                "and rows (shared references count each time they are used); skipped")

    def scalar(self, v: Any) -> int:
        """The text of ``str(v)`` (a value as it is, not nested)."""
        if type(v) is str:
            return len(v)
        if type(v) is int:
            return v.bit_length() // 3 + 1
        return self.nested(v, 0)

    def nested(self, v: Any, depth: int) -> int:
        """``repr`` of ``v`` inside a container, and its JSON: twelve bytes a character at most
        (``\\ud83d\\ude00``)."""
        t = type(v)
        if t is str:
            return STR_COST + 12 * len(v)
        if t is int:
            return v.bit_length() // 3 + 2
        if t is bytes or t is bytearray:
            return STR_COST + 4 * len(v)
        if t not in (list, tuple, dict, set, frozenset):
            return ITEM_COST
        got = self.memo.get(id(v))
        if got is not None:
            if got < 0:
                raise DumpTooLarge("holds a list or dict that contains itself; skipped")
            return got
        if depth >= MAX_DEPTH:
            raise DumpTooLarge(f"nests lists or dicts deeper than {MAX_DEPTH}; skipped")
        self.memo[id(v)] = -1
        cost = ITEM_COST + 8 * len(v)
        for x in chain(v.keys(), v.values()) if t is dict else v:
            cost += self.nested(x, depth + 1)
            if cost > MAX_DUMP_EXPANSION:
                self.add(cost)
        self.memo[id(v)] = cost
        return cost

    def column(self, values: list[Any], times: int) -> None:
        """``times`` texts of each value."""
        kinds = set(map(type, values))
        if kinds <= {str}:
            self.add(times * (sum(map(len, values)) + STR_COST * len(values)))
        else:
            self.add(times * (sum(map(self.scalar, values)) + STR_COST * len(values)))

    def frames(self, values: list[Any]) -> None:
        """Each entry's look at its frames, and each distinct list's texts."""
        lists = [fr for fr in values if fr and isinstance(fr, list | tuple)]
        self.add(8 * sum(map(len, lists)))
        done: set[int] = set()
        dicts: dict[int, int] = {}
        for fr in lists:
            if id(fr) in done:
                continue
            done.add(id(fr))
            cost = 0
            for f in fr:
                c = dicts.get(id(f))
                if c is None:
                    c = dicts[id(f)] = ITEM_COST + (
                        sum(self.scalar(f.get(k)) for k in FRAME_KEYS) if isinstance(f, dict)
                        else 0)
                cost += c
                if cost > MAX_DUMP_EXPANSION:
                    self.add(cost)
            self.add(cost)


def _check_expansion(ents: list[dict[str, Any]]) -> None:
    """Raise ``DumpTooLarge`` when turning ``ents`` into rows would build too much."""
    exp = _Expansion()
    exp.add(ROW_COST * len(ents))
    for key in TEXT_KEYS:
        exp.column(_field(ents, key), 2)
    for key in SIZE_KEYS:
        exp.column(_field(ents, key), 3)
    pgs = _field(ents, "process_group")
    if not set(map(type, pgs)) <= {type(None)}:
        exp.column(pgs, 2)
    exp.frames(_field(ents, "frames"))


def dump_frame(dump: dict[str, Any], rank: int | None, source: str) -> pd.DataFrame:
    """The ``collectives`` table of one dump: one row per recorded entry (the schema's columns
    and dtypes). Raises ValueError when an entry's data cannot be read as plain data
    (``DumpTooLarge`` when the rows would build more than the caps allow)."""
    try:
        with _gc_paused():
            return _dump_frame(dump, rank, source)
    except RecursionError:
        raise ValueError("an entry nests lists or dicts too deeply to read") from None
    except MemoryError:
        raise DumpTooLarge("exceeds the memory there is while its entries become rows; "
                           "skipped") from None


def _dump_frame(dump: dict[str, Any], rank: int | None, source: str) -> pd.DataFrame:
    raw = dump.get("entries") or []
    if not isinstance(raw, list | tuple):
        raw = []  # a dict, a string, a number: no entry records in it
    index = [i for i, e in enumerate(raw) if isinstance(e, dict)]
    ents = raw if len(index) == len(raw) else [raw[i] for i in index]
    n = len(ents)
    _check_expansion(ents)

    status = dump.get("pg_status") or {}
    pg_keys = list(map(str, _field(ents, "pg_id")))
    enq: dict[str, int | None] = {}
    comp: dict[str, int | None] = {}
    for key in set(pg_keys):
        st = status.get(key) if isinstance(status, dict) else None
        st = st if isinstance(st, dict) else {}
        enq[key] = _status_int(st.get("last_enqueued_collective"))
        comp[key] = _status_int(st.get("last_completed_collective"))

    p2p = list(map(bool, _field(ents, "is_p2p")))
    if any(p2p):
        seqs = [e.get("p2p_seq_id") if p else e.get("collective_seq_id")
                for e, p in zip(ents, p2p, strict=True)]
    else:
        seqs = _field(ents, "collective_seq_id")
    ops = _texts_of(_field(ents, "profiling_name"))
    states = _texts_of(_field(ents, "state"))
    names: dict[str | None, str | None] = {}
    pgs = [names.setdefault(pg, pg) for pg in map(_pg_label, ents)]  # one str per group

    size_str, size_json, numel_in = _texts(_field(ents, "input_sizes"))
    dtype_str, dtype_json, _ = _texts(_field(ents, "input_dtypes"), numel=False)
    _, _, numel_out = _texts(_field(ents, "output_sizes"), json_text=False)

    prefix = f"rank {rank} pg "
    lines = [
        f"{prefix}{pg} seq {seq} {op} sizes {s} {d} state {state}" + (" (p2p)" if p else "")
        for pg, seq, op, s, d, state, p in zip(pgs, seqs, ops, size_str, dtype_str, states,
                                                 p2p, strict=True)
    ]
    cols: dict[str, Any] = {
        "rank": _no_ints(n) if rank is None else _ints([rank] * n),
        "host": _no_strings(n),
        "process_group": _strings(pgs),
        "seq_num": _ints(_only_ints(seqs)),
        "op_type": _strings([op or None for op in ops]),
        "numel_in": _ints(numel_in),
        "numel_out": _ints(numel_out),
        "timeout_ms": _ints(_only_ints(_field(ents, "timeout_ms"))),
        "ran_for_ms": _no_ints(n),
        "state": _strings([s or None for s in states]),
        "last_enqueued": _ints([enq[k] for k in pg_keys]),
        "last_completed": _ints([comp[k] for k in pg_keys]),
        "sizes": _strings(size_json),
        "dtypes": _strings(dtype_json),
        "frames": _frame_texts(_field(ents, "frames")),
        "time": _times(_field(ents, "time_created_ns")),
        "source": _strings([f"{source}#entry{i}" for i in index]),
        "line": _strings(lines),
    }
    if not n or bool(np.isnat(cols["time"]).all()):
        # no time at all: the unit pandas gives a column of Nones (as ``schema.frame`` does)
        cols["time"] = cols["time"].astype("datetime64[s]")
    return pd.DataFrame(cols, columns=list(COLUMNS))


def load_frames(path: Path) -> dict[str, pd.DataFrame]:
    """A dump as its ``collectives`` table (ValueError when it cannot be read)."""
    with _gc_paused():
        dump = read_dump(path)
        df = dump_frame(dump, rank_from_name(path), str(path))
        del dump  # freed while the collector is off: it has nothing left to walk
    return {"collectives": df}


def load_rows(path: Path) -> list[tuple[str, Row]]:
    """A dump as ``collectives`` rows (ValueError when it cannot be read)."""
    dump = read_dump(path)
    return [("collectives", r) for r in dump_rows(dump, rank_from_name(path), str(path))]


@dataclass(frozen=True)
class FrameLoader(FileLoader):
    """A ``FileLoader`` that also gives its tables as DataFrames (``load_frames``), which the
    loader takes instead of row dicts."""

    load_frames: Callable[[Any], dict[str, pd.DataFrame]] | None = None


LOADER = FrameLoader("flight_recorder", looks_like_dump, load_rows, kind="dump",
                     load_frames=load_frames)
