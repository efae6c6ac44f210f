"""The fast text engine of ``traindoc.load``: the same tables and account as the line-by-line
reference path (``engine="plain"``, ``reader.lines``), without running Python over lines
nothing reads. It is built on the line pipeline: the lines that matter go through
``LineReader``'s public steps; the others are only counted.

Most lines of a big log are chatter no parser understands; the reference path still splits,
strips, demultiplexes and tests each of them against every parser's needles before counting it
as not parsed. Here each 4 MiB chunk is scanned once for every reason a line could matter:

- a needle of any line parser, or a start needle of any block parser (``needles``), of
  the parsers the load runs (``load(tables=…)`` runs only those that fill the tables asked for);
- something that changes how the line splits or decodes: a carriage return inside it, a glued
  ``[rankN]:``/``[defaultN]:`` prefix, non-ASCII bytes, NUL or the control characters that
  Python counts as white space;
- ANSI escapes: the lines holding them are joined and scanned once more for what their
  stripped text may hold (escape-tolerant needles, failure words, a date an escape cuts);
  only those go through the per-line strip and rescan (``_esc_mask``);
- a failure-looking phrase while the loader still samples unrecognized lines;
- a date whose year differs from the stream's current year (glog times borrow it): literals
  ``20yy-M`` / ``20yy/M``, then real dates checked in place.

Only those lines ("hot") go through the reference per-line code (``LineReader.physical``); the
others are counted in bulk (numpy over long stretches). A pending wrapped record or a block
parser inside a record (``section`` set) takes every following line of its writer through the
per-line code until it is done, so multi-line records see exactly the lines they would have
seen. A chunk is read in two steps: ``plan`` (the scan and the candidate lines: no stream state)
and ``run`` (the lines, in order, with the stream's state); for a big uncompressed file a
forked child (``Planner``) plans most chunks while the reader runs them.

The scan uses Hyperscan (one pass for all patterns; compiled databases are cached on disk)
when the ``hyperscan`` package is installed, else a pure-Python scanner that finds the same
lines more slowly. Exactness is checked by ``tests/test_ingest.py`` against the reference on
every sample under ``data/`` and on generated adversarial logs, with both scanners, table
subsets, tiny chunks and windows, and a planner that dies or planned other bytes.

The block-parser contract this engine relies on is ``parse.base.BlockParser``: ``needles``
(one of them is in every line that can start a record or change its idle state) and, while idle
(``section`` None), no change of state on any line holding none of them. A block parser with
empty ``needles`` makes ``engine="auto"`` use the reference path (see ``fast_engine_status``).
"""

from __future__ import annotations

import hashlib
import os
import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..parse import BLOCK_PARSERS, LINE_PARSERS
from ..parse.prefixes import DETERMINED_SHORT_RE, demux, line_time, split_physical, strip_ansi
from .account import Account
from .decode import (
    GZIP_MAGIC,
    MAX_LINE_CHARS,
    Budget,
    bytes_read,
    file_size,
    open_bytes,
    spans,
)
from .lines import LineReader, Stream, merge_origin

try:  # optional: one native pass over the chunk for all patterns
    import hyperscan as _hs
except Exception:  # noqa: BLE001 - a broken native install must not break loading
    _hs = None

# Line flags from the scan.
NEEDLE, ESC, SUSP, SPLIT, CTRL, NONASCII, YEARCAND = 1, 2, 4, 8, 16, 32, 64

ISO_TAIL = rb"[-/]\d\d[-/]\d\d[ T_]\d\d[:\-]\d\d[:\-]\d\d"
ISO_B = re.compile(rb"20(\d\d)" + ISO_TAIL)  # prefixes.ISO_TIME_RE, on bytes
# Byte patterns; each matches only inside one line. Supersets of what they stand for.
# split_physical's glued prefix: after a character that is neither white space nor ":" (so
# "[default2]:[rank2]:" stacked at a line's start is no split)
MIDLINE_PAT = rb"[^\s:]\[(?:rank|default)[0-9]"
CR_PAT = rb"\r[^\n]"  # a carriage return that is not the end of a CRLF line
CTRL_PAT = rb"[\x00\x1c-\x1f]"  # NUL (removed) and what str regexes treat as white space
SUSP_PATS = (rb"\b\w*(?:Error|Exception)\b:", rb"Traceback \(most recent call last\)",
             rb"NCCL (?:WARN|ERROR)", rb"\bFAILED\b", rb"[Tt]imed out", rb"Signal [0-9]",
             rb"\bKilled\b", rb"terminate called", rb"Fatal Python error", rb"\[E[0-9]{3}")
# For lines with ANSI escapes (see ``_HsScanner.esc_hits``): a superset of one escape that
# ``prefixes.ANSI_RE`` removes, then what a needle, a failure phrase or a date may hold once
# escapes are stripped.
ESC_ONE = rb"(?:\x1b[\x20-\x7e][\x20-\x3f]*[\x20-\x7e]?)"
SUSP_WORDS = (b"Error", b"Exception", b"Traceback", b"NCCL", b"FAILED", b"imed out", b"Signal",
              b"Killed", b"terminate called", b"Fatal Python error", b"[E")  # one per SUSP_PATS
DATE_TOKENS = (b"2", b"0", rb"\d", rb"\d", b"[-/]", rb"\d", rb"\d", b"[-/]", rb"\d", rb"\d",
               b"[ T_]", rb"\d", rb"\d", rb"[:\-]", rb"\d", rb"\d", rb"[:\-]", rb"\d", rb"\d")
LONG_WINDOW = 512 * 1024
SKIP_WINDOW = 4096  # the first stretch ``FastText._skip`` splits into lines
HEAD = 24  # bytes of a line start that usually decide its launcher prefixes


def _lit(b: bytes) -> bytes:
    return b"".join(b"\\x%02x" % c for c in b)


def tolerant(tokens: Sequence[bytes]) -> bytes:
    """A pattern for ``tokens`` in a row with any escapes between them."""
    return (ESC_ONE + b"*").join(tokens)


def tolerant_split(tokens: Sequence[bytes]) -> bytes:
    """A pattern for ``tokens`` in a row with at least one escape between two of them."""
    if len(tokens) < 2:
        return b"(?!)"
    rest = ESC_ONE + b"+" + tolerant(tokens[1:])
    if len(tokens) > 2:
        rest += b"|" + tolerant_split(tokens[1:])
    return tokens[0] + b"(?:" + rest + b")"


def _cache_dir() -> Path:
    base = os.environ.get("TRAINDOC_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "traindoc")
    return Path(base)


def _compile_cached(exprs: list[bytes], flags: list[int]) -> Any:
    """A Hyperscan block-mode database for ``exprs``, kept on disk (``$TRAINDOC_CACHE``, else
    ``~/.cache/traindoc``) so a process compiles it once per machine, not once per load.
    Hyperscan checks a loaded database's checksum; anything wrong means a fresh compile."""
    assert _hs is not None
    key = hashlib.sha256(repr((getattr(_hs, "__version__", ""), exprs, flags)).encode())
    path = _cache_dir() / f"hs-{key.hexdigest()[:32]}.db"
    try:
        db = _hs.loadb(path.read_bytes(), _hs.HS_MODE_BLOCK)
        db.scratch = _hs.Scratch(db)
        return db
    except Exception:  # noqa: BLE001 - no cache yet, or an unusable one: compile
        pass
    db = _hs.Database()
    db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=flags)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(_hs.dumpb(db))
        os.replace(tmp, path)
    except Exception:  # noqa: BLE001 - a read-only home: compile each time
        pass
    return db


def block_needles(factories: Sequence[Any] = BLOCK_PARSERS) -> tuple[tuple[str, ...], list[str]]:
    """The block parsers' start needles, and the parsers that declare none."""
    out: list[str] = []
    missing: list[str] = []
    for factory in factories:
        if not factory.needles:
            missing.append(f"{factory.__module__}.{factory.__qualname__}")
        else:
            out.extend(factory.needles)
    return tuple(out), missing


def fast_engine_status(factories: Sequence[Any] = BLOCK_PARSERS) -> tuple[bool, str]:
    """Whether ``engine="auto"`` can use this engine with these block parsers, and which
    scanner (or why not)."""
    _, missing = block_needles(factories)
    if missing:
        return False, ("block parser(s) without start needles: " + ", ".join(missing))
    return True, SCANNER or ("hyperscan" if _hs is not None else "python")


def all_needles(line_parsers: Sequence[Any] = LINE_PARSERS,
                factories: Sequence[Any] = BLOCK_PARSERS) -> list[str]:
    """Every substring that makes a line worth the per-line path, each once, in order."""
    seen: dict[str, None] = {}
    for p in line_parsers:
        for n in p.needles:
            seen.setdefault(n, None)
    for n in block_needles(factories)[0]:
        seen.setdefault(n, None)
    return [n for n in seen if n]


# --- scanners --------------------------------------------------------------------------------
# A hit is (offset inside the line, code): code is a flag, or NEEDLE | index << 8 for a needle.
class _PyScanner:
    """The scan in pure Python: one ``bytes.find`` walk per needle, ``re`` for the rest."""

    reports_nonascii = False

    def __init__(self, needles: list[bytes]) -> None:
        self.needles = needles
        self.others = [(re.compile(MIDLINE_PAT), SPLIT), (re.compile(CR_PAT), SPLIT),
                       (re.compile(CTRL_PAT), CTRL), (re.compile(rb"\x1b"), ESC)]
        self.susp = re.compile(b"|".join(SUSP_PATS))

    def scan(self, chunk: bytes, susp: bool) -> tuple[list[tuple[int, int]], set[int]]:
        hits: list[tuple[int, int]] = []
        for k, n in enumerate(self.needles):
            code = NEEDLE | k << 8
            i = chunk.find(n)
            while i >= 0:
                hits.append((i, code))
                i = chunk.find(n, i + 1)
        for rx, flag in self.others:
            hits.extend((m.start(), flag) for m in rx.finditer(chunk))
        if susp:
            hits.extend((m.start(), SUSP) for m in self.susp.finditer(chunk))
        years = {2000 + int(m.group(1)) for m in ISO_B.finditer(chunk)}
        return hits, years

    def scan_lines(self, chunk: bytes, susp: bool, base: int = 0) -> tuple[
            list[tuple[int, int]], set[int], list[int] | None]:
        """``scan`` (of a whole chunk: ``base`` is 0), and None: escapes are among the hits."""
        hits, years = self.scan(chunk, susp)
        return hits, years, None


class _HsScanner:
    """The scan with Hyperscan: every pattern in one pass; years reported once per chunk."""

    reports_nonascii = True

    def __init__(self, needles: list[bytes]) -> None:
        assert _hs is not None
        exprs: list[bytes] = []
        flags: list[int] = []
        codes: list[int] = []

        def add(expr: bytes, code: int, flag: int = 0) -> None:
            exprs.append(expr)
            flags.append(flag)
            codes.append(code)

        for k, n in enumerate(needles):
            add(_lit(n), NEEDLE | k << 8)
        # one report per line (at its end) for what can repeat inside a line
        ml = _hs.HS_FLAG_MULTILINE
        add(MIDLINE_PAT + rb"[^\n]*$", SPLIT, ml)
        add(CR_PAT + rb"[^\n]*$", SPLIT, ml)
        add(CTRL_PAT + rb"[^\n]*$", CTRL, ml)
        add(rb"\x1b[^\n]*$", ESC, ml)
        add(rb"[\x80-\xff][^\n]*$", NONASCII, ml)
        for yy in range(100):  # code -1-yy: "20yy-M" or "20yy/M" (M: 0 or 1) in the chunk
            for sep in (b"-0", b"-1", b"/0", b"/1"):  # (literals: cheaper than a date pattern)
                add(b"20%02d%s" % (yy, sep), -1 - yy, _hs.HS_FLAG_SINGLEMATCH)
        base = len(exprs)
        for pat in SUSP_PATS:
            add(pat, SUSP)
        self.codes = codes
        self.db = self._compile(exprs[:base], flags[:base])
        self.db_susp = self._compile(exprs, flags)
        self.needles = needles
        self._esc_dbs: dict[bool, Any] = {}

    @staticmethod
    def _compile(exprs: list[bytes], flags: list[int]) -> Any:
        return _compile_cached(exprs, flags)

    def scan(self, chunk: bytes, susp: bool) -> tuple[list[tuple[int, int]], set[int]]:
        hits, years, esc = self.scan_lines(chunk, susp)
        hits.extend((e - 1 if e else 0, ESC) for e in esc)
        return hits, years

    def scan_lines(self, chunk: bytes | memoryview, susp: bool, base: int = 0) -> tuple[
            list[tuple[int, int]], set[int], list[int]]:
        """``scan``, but lines with escapes apart: the offsets where they end; every offset
        plus ``base`` (``chunk`` is a view that starts there). Years are the literals' (a
        superset: ``20yy/`` may be no date)."""
        hits: list[tuple[int, int]] = []
        esc: list[int] = []
        years: set[int] = set()
        codes = self.codes
        add = hits.append
        add_esc = esc.append

        def on_match(i: int, frm: int, to: int, flags: int, ctx: Any) -> None:
            c = codes[i]
            if c == ESC:
                add_esc(base + to)
            elif c < 0:
                years.add(1999 - c)
            else:
                add((base + to - 1 if to else base, c))

        (self.db_susp if susp else self.db).scan(chunk, match_event_handler=on_match)
        return hits, years, esc

    def esc_hits(self, buf: bytes, susp: bool) -> list[int]:
        """End offsets in ``buf`` (lines that hold escapes and no needle) where, escapes
        aside, a needle, a failure word (``susp``) or a date cut by an escape may stand: a
        superset of the lines whose stripped text holds one. Compiled on first use."""
        db = self._esc_dbs.get(susp)
        if db is None:
            exprs = [tolerant([_lit(n[i:i + 1]) for i in range(len(n))]) for n in self.needles]
            if susp:
                exprs += [tolerant([_lit(w[i:i + 1]) for i in range(len(w))])
                          for w in SUSP_WORDS]
            exprs.append(tolerant_split(DATE_TOKENS))
            db = self._esc_dbs[susp] = _compile_cached(exprs, [0] * len(exprs))
        ends: list[int] = []
        add = ends.append
        db.scan(buf, match_event_handler=lambda i, frm, to, fl, ctx: add(to))
        return ends


class Plan(NamedTuple):
    """``FastText.plan``'s findings for one chunk (offsets into its buffer)."""

    start: int
    end: int
    cand: dict[int, int]  # candidate line start -> flags
    masks: dict[int, int]  # candidate line start -> the needles it holds (bits)
    years: set[int]  # years whose literals the scan met (a superset of real dates')
    esc_cold: list[int]  # starts of the lines whose escapes hide nothing
    long: bool  # a line may be longer than MAX_LINE_CHARS: the reference code reads it


class Registry:
    """What the fast engine derives from the parser registries: needles, masks, scanner."""

    def __init__(self, kind: str, line_parsers: Sequence[Any] = LINE_PARSERS,
                 factories: Sequence[Any] = BLOCK_PARSERS) -> None:
        self.needles = all_needles(line_parsers, factories)
        index = {n: k for k, n in enumerate(self.needles)}
        bneedles = [n.encode("utf-8") for n in self.needles]
        self.scanner = _HsScanner(bneedles) if kind == "hyperscan" else _PyScanner(bneedles)
        self.kind = kind
        # per line parser: the bit mask of its needles (a line's mask says which can match)
        self.parser_masks = [(p, sum(1 << index[n] for n in p.needles if n in index))
                             for p in line_parsers]
        self.incomplete_masks = [(p, m) for p, m in self.parser_masks if p.incomplete]
        # per block parser (by its index in ``factories``): the bit mask of its needles
        self.block_masks = [(i, sum(1 << index[n] for n in f.needles if n in index))
                            for i, f in enumerate(factories)]
        self._parsers: dict[int, tuple[Any, ...]] = {}
        self._incomplete: dict[int, tuple[Any, ...]] = {}
        self._blocks: dict[int, tuple[int, ...]] = {}

    def parsers(self, mask: int) -> tuple[Any, ...]:
        """Line parsers (registry order) that have a needle in ``mask``."""
        got = self._parsers.get(mask)
        if got is None:
            got = self._parsers[mask] = tuple(p for p, m in self.parser_masks if m & mask)
        return got

    def blocks(self, mask: int) -> tuple[int, ...]:
        """Indices of the block parsers that have a needle in ``mask``."""
        got = self._blocks.get(mask)
        if got is None:
            got = self._blocks[mask] = tuple(i for i, m in self.block_masks if m & mask)
        return got

    def incomplete(self, mask: int) -> tuple[Any, ...]:
        """Line parsers with ``incomplete`` (registry order) that have a needle in ``mask``."""
        got = self._incomplete.get(mask)
        if got is None:
            got = self._incomplete[mask] = tuple(
                p for p, m in self.incomplete_masks if m & mask)
        return got


_REGISTRIES: dict[tuple[Any, ...], Registry] = {}


SCANNER: str | None = None  # "hyperscan" or "python"; None: hyperscan where installed


def registry(kind: str | None = None, line_parsers: Sequence[Any] = LINE_PARSERS,
             factories: Sequence[Any] = BLOCK_PARSERS) -> Registry:
    """The registry view of these parsers for the scanner ``kind`` ("hyperscan" or
    "python"; None: hyperscan where installed), built once per process."""
    kind = kind or SCANNER or ("hyperscan" if _hs is not None else "python")
    key = (kind, tuple(map(id, line_parsers)), tuple(map(id, factories)))
    r = _REGISTRIES.get(key)
    if r is None:
        r = _REGISTRIES[key] = Registry(kind, line_parsers, factories)
    return r


# --- the year a line sets ----------------------------------------------------------------------
def year_effect(raw: str) -> int | None:
    """The year ``LineReader.record`` would take from this physical line (None: none)."""
    raw = raw[:MAX_LINE_CHARS]
    if raw.endswith("\r"):
        raw = raw[:-1]
    year = None
    for part in split_physical(raw):
        body, _ = demux(strip_ansi(part))
        if "20" in body[:30]:
            t = line_time(body, None)
            if t is not None:
                year = t.year
    return year


# --- who wrote a line, memoised ------------------------------------------------------------
class PrefixCache:
    """``prefixes.demux`` memoised on the bytes of an ASCII line.

    demux matches its prefix patterns at a position, left to right, none looking behind, and
    past the start of a line it tries a pattern only at ``[``, ``(`` or a digit (a property
    ``tests/test_ingest.py`` checks). So a line that starts with the same consumed text and the
    same next character has the same prefixes and body when that character is none of those;
    after a digit only srun's ``\\d{1,6}: `` can match, which reads 8 characters; at ``[`` or
    ``(`` demux is run on what follows to confirm that it stops there."""

    MAX = 8192

    def __init__(self) -> None:
        self.by_len: dict[int, dict[bytes, tuple[int, Any, bool]]] = {}
        self.lens: list[int] = []

    def split(self, line: bytes) -> tuple[int, Any, int]:
        """(length of the prefixes demux strips, their Origin, and k > 0 when every line that
        starts with ``line[:k]`` has the same two) for an ASCII line."""
        for k in self.lens:
            hit = self.by_len[k].get(line[:k])
            if hit is not None:
                c, origin, check = hit
                if not check:
                    return c, origin, k
                rest = line[c:].decode("ascii")
                if demux(" " + rest)[0] == rest:
                    return c, origin, 0
        text = line.decode("ascii")
        body, origin = demux(text)
        c = len(text) - len(body)
        if c and DETERMINED_SHORT_RE.match(text):
            return c, origin, 0  # a host prefix may follow the container tag: not memoised
        if c < len(text):
            ch = text[c]
            if ch in "[(":
                k, check = c + 1, True
            elif ch.isdigit():
                k, check = min(c + 8, len(text)), len(text) < c + 8
            elif c == 0 and ch.isalpha():
                return c, origin, 0  # a host name may lead the line: not memoised
            else:
                k, check = c + 1, False
            d = self.by_len.get(k)
            if d is None:
                d = self.by_len[k] = {}
                self.lens = sorted(self.by_len, reverse=True)
            if len(d) >= self.MAX:
                d.clear()
            d[line[:k]] = (c, origin, check)
            return c, origin, 0 if check else k
        return c, origin, 0


PREFIXES = PrefixCache()


# --- the engine ----------------------------------------------------------------------------
class FastText:
    """Reads one text stream the fast way through a ``LineReader`` (same state, same
    results)."""

    def __init__(self, lines: LineReader, stream: Stream, reg: Registry) -> None:
        self.lines = lines
        self.st = stream
        self.reg = reg
        self.scan = reg.scanner
        self.lineno = 0
        self.prefixes = PREFIXES
        self._merged: dict[int, Any] = {}
        self._keys: dict[bytes, tuple[Any, Any]] = {}  # line head -> (rank, host)
        self._heads: dict[bytes, tuple[Any, Any]] = {}  # first HEAD bytes -> (rank, host)
        self.lineno_skipped = 0
        self._merged_origin: dict[int, Any] = {}

    # Lines through the reference code -----------------------------------------------------
    def _plain(self, chunk: bytes) -> None:
        self.lineno = self.lines.read_chunk(self.st, chunk, self.lineno)

    # Lines through the same steps, with what the scan learnt -------------------------------
    def _fast(self, b: bytes, lineno: int, flags: int, mask: int) -> None:
        """``LineReader.physical`` for a line whose needles are in ``mask``: split only where
        the scan saw a split, stripped only where it saw escapes."""
        lines, st = self.lines, self.st
        ascii_ = not flags & NONASCII
        if flags & CTRL:
            lines.read_line(st, b, lineno)
            return
        if ascii_:
            text = b.decode("ascii")
        else:
            try:  # valid UTF-8 without NUL: what ``decode`` gives, nothing to count
                text = b.decode("utf-8")
            except UnicodeDecodeError:
                lines.read_line(st, b, lineno)
                return
        text = lines.cut(st, text, lineno)
        parts = split_physical(text) if flags & SPLIT else (text,)
        acc = lines.acc
        for part in parts:
            acc.lines += 1
            if flags & ESC:
                part = strip_ansi(part)
            if st.pending is not None:
                lines.logical(st, part, lineno)
            else:
                self._logical(part, lineno, mask, ascii_)

    def _logical(self, text: str, lineno: int, mask: int, ascii_: bool = True) -> None:
        """``LineReader.logical`` with nothing pending: the writer from the prefix cache (an
        ASCII line) or ``demux``, and only the parsers that can have a needle in the line."""
        st = self.st
        if ascii_:
            c, origin, _ = self.prefixes.split(text.encode("ascii"))
            merged = self._merged_origin.get(id(origin))
            if merged is None or merged[0] is not origin:
                if len(self._merged_origin) >= PrefixCache.MAX:  # (the cache makes a new
                    self._merged_origin.clear()  # Origin for each line it does not keep)
                merged = self._merged_origin[id(origin)] = (origin,
                                                            merge_origin(st.origin, origin))
            writer = merged[1]
        else:  # (demux makes a new Origin each time: nothing to remember)
            body, origin = demux(text)
            c = len(text) - len(body)
            writer = merge_origin(st.origin, origin)
        reg = self.reg
        if mask:
            self.lines.record(st, text[c:], lineno, writer, reg.incomplete(mask),
                              reg.parsers(mask), reg.blocks(mask))
        else:
            self.lines.record(st, text[c:], lineno, writer, (), (), ())

    def _busy(self) -> bool:
        return self.st.pending is not None or bool(self.st.busy)

    def _key(self, line: bytes) -> tuple[Any, Any]:
        """The (rank, host) whose block parsers an unflagged line would be fed to."""
        if line.endswith(b"\r"):
            line = line[:-1]
        _, origin, k = self.prefixes.split(line)
        key = self._origin_key(origin)
        if k:
            if len(self._keys) >= PrefixCache.MAX:
                self._keys.clear()
            self._keys[line[:k]] = key
        return key

    def _origin_key(self, origin: Any) -> tuple[Any, Any]:
        got = self._merged.get(id(origin))
        if got is None or got[0] is not origin:
            if len(self._merged) >= PrefixCache.MAX:
                self._merged.clear()
            m = merge_origin(self.st.origin, origin)
            got = self._merged[id(origin)] = (origin, (m.rank, m.host))
        return got[1]

    def _skip(self, chunk: bytes, pos: int, end: int, n: int) -> int:
        """Count the lines from ``pos`` up to ``end`` (a line start, or ``n``, the chunk's end) that
        belong to no open record as read and not parsed; return where the first line that may
        belong to one starts (``end`` if none). Lines are told apart by their first ``HEAD``
        bytes where those decide who wrote them (``_heads``), else one by one; they are split
        off in windows that double, so a record's next line close by costs little."""
        busy, heads = self.st.busy, self._heads
        find = chunk.find
        skipped = 0
        window = SKIP_WINDOW
        while pos < end:
            stop = end if end - pos <= window else (find(b"\n", pos + window, end) + 1 or end)
            lines = chunk[pos:stop].split(b"\n")
            if lines[-1] == b"" and (stop < n or chunk[n - 1:n] == b"\n"):
                lines.pop()
            keys = list(map(heads.get, [x[:HEAD] for x in lines]))
            esc = find(b"\x1b", pos, stop) >= 0  # escapes: the key of the stripped line
            for idx, key in enumerate(keys):
                if esc and b"\x1b" in lines[idx]:
                    key = self._key_esc(lines[idx])
                elif key is None:
                    key = self._head_key(lines[idx])
                if key in busy:
                    skipped += idx
                    pos += sum(len(x) for x in lines[:idx]) + idx
                    break
            else:
                skipped += len(lines)
                pos = stop
                window *= 2
                continue
            break
        acc = self.lines.acc
        acc.lines += skipped
        acc.unparsed_lines += skipped
        self.lineno_skipped = skipped
        return min(pos, end)

    def _head_key(self, line: bytes) -> tuple[Any, Any]:
        """The (rank, host) of a line, and remember it for its first ``HEAD`` bytes when they
        decide it (the line holds no carriage return there, and demux stops within them)."""
        key = self._key(line)
        head = line[:HEAD]
        if b"\r" not in head:
            _, _, k = self.prefixes.split(line)
            if 0 < k <= len(head) and (len(head) == HEAD or len(line) == len(head)):
                if len(self._heads) >= PrefixCache.MAX:
                    self._heads.clear()
                self._heads[head] = key
        return key

    # A chunk --------------------------------------------------------------------------------
    def chunk(self, chunk: bytes, start: int = 0, end: int | None = None) -> None:
        """Consume ``chunk[start:end]`` (ending on a line break, or the stream's end; when
        ``start`` > 0 a line break comes just before it)."""
        n = len(chunk) if end is None else end
        if start >= n:
            return
        if not self.scan.reports_nonascii and (start or n < len(chunk)):
            chunk, start, n = chunk[start:n], 0, n - start  # the pure-Python scanner: a copy
        self.run(chunk, self.plan(chunk, start, n, self.lines.wants_unrecognized()))

    def plan(self, chunk: bytes, start: int, n: int, susp: bool) -> Plan:
        """What the scan of ``chunk[start:n]`` says about its lines: no stream state is read
        (``susp``: failure words count; True is always safe), so another process may do it."""
        if n - start > LONG_WINDOW and self._has_long_line(chunk, start, n):
            return Plan(start, n, {}, {}, set(), [], True)
        whole = start == 0 and n == len(chunk)
        hits, years, esc_ends = self.scan.scan_lines(
            chunk if whole else memoryview(chunk)[start:n], susp, start)
        if not self.scan.reports_nonascii and not chunk.isascii():
            for b0 in range(0, n, 4096):
                if not chunk[b0:b0 + 4096].isascii():
                    hits.extend((m.start(), NONASCII)
                                for m in NONASCII_RE.finditer(chunk, b0, b0 + 4096))
        # candidate lines: start offset -> flags, and the needles each holds
        cand: dict[int, int] = {}
        masks: dict[int, int] = {}
        rfind = chunk.rfind
        lo = start - 1 if start else 0  # where a line break before the first line would be
        for off, code in hits:
            s = rfind(b"\n", lo, off) + 1 or start
            if code & NEEDLE:
                masks[s] = masks.get(s, 0) | 1 << (code >> 8)
                code = NEEDLE
            cand[s] = cand.get(s, 0) | code
        # Lines with escapes that hide nothing are no candidates: like lines without escapes,
        # they count in bulk unless a record is open (then they are read, stripped, one by one).
        esc_cold = self._esc_lines(chunk, start, esc_ends, cand, susp) if esc_ends else []
        return Plan(start, n, cand, masks, years, esc_cold, False)

    def run(self, chunk: bytes, plan: Plan) -> None:
        """Read the lines of ``chunk[plan.start:plan.end]`` as ``plan`` says."""
        start, n, cand, masks, years, esc_cold, long = plan
        if long:
            self._plain(chunk[start:n])  # a line to cut: the reference code, for the chunk
            return
        st = self.st
        acc = self.lines.acc
        years = self._real_years(chunk, start, n, years)
        precise = False  # True: every ISO date is a candidate (its year may change the stream's)
        if years - {st.year}:  # and every line with escapes (one may cut a date)
            self._add_year_candidates(chunk, start, n, cand)
            for k in esc_cold:
                cand[k] = cand.get(k, 0) | ESC
            precise = True
        order = sorted(cand)
        year_seen = st.year
        pos = start
        lineno = self.lineno
        count = _line_counter(chunk)
        find = chunk.find
        busy = st.busy
        i = 0
        while True:
            if i < len(order):
                nxt = order[i]
                if nxt < pos:
                    i += 1
                    continue
            elif pos >= n:
                break
            else:
                nxt = n
            # Lines before the next candidate. While a record is open they may belong to it
            # (a pending wrapped line takes any line, a block parser its own rank's lines).
            while pos < nxt and (st.pending is not None or busy):
                if st.pending is None:
                    pos = self._skip(chunk, pos, nxt, n)
                    lineno += self.lineno_skipped
                    if pos >= nxt:
                        break
                e = find(b"\n", pos)
                e = n if e < 0 else e
                lineno += 1
                line = chunk[pos:e]
                pos = e + 1
                self._fast(line, lineno, ESC if b"\x1b" in line else 0, 0)
            if pos < nxt:
                k = count(pos, nxt)
                if nxt == n and chunk[n - 1:n] != b"\n":
                    k += 1
                lineno += k
                acc.lines += k
                acc.unparsed_lines += k
                pos = nxt
            if i >= len(order):
                break
            i += 1
            flags = cand[nxt]
            e = find(b"\n", nxt)
            e = n if e < 0 else e
            lineno += 1
            line = chunk[nxt:e]
            pos = e + 1
            mask = masks.get(nxt, 0)
            if flags & ESC and not flags & (NONASCII | CTRL):
                got = self._esc_mask(line)
                if got is None and not flags & SPLIT:  # nothing in it once stripped
                    if st.pending is None and (not busy or self._key_esc(line) not in busy):
                        acc.lines += 1
                        acc.unparsed_lines += 1
                        continue
                mask = got or 0
            elif not flags & (NEEDLE | SPLIT | CTRL | NONASCII) and not self._hot(line, flags):
                if st.pending is None and (not busy or self._key(line) not in busy):
                    acc.lines += 1
                    acc.unparsed_lines += 1
                    continue
            self._fast(line, lineno, flags, mask)
            if st.year != year_seen:
                year_seen = st.year
                if not precise and years - {st.year}:
                    # a year other than the chunk's dates: every date from here is a candidate,
                    # and so is every line with escapes (one may cut a date)
                    self._add_year_candidates(chunk, pos, n, cand)
                    for k in esc_cold:
                        if k >= pos:
                            cand[k] = cand.get(k, 0) | ESC
                    order = order[:i] + sorted(k for k in cand if k >= pos)
                    precise = True
                elif precise and not years - {st.year}:
                    # back to the only year the chunk's dates hold: dates alone cannot change it
                    order = order[:i] + [k for k in order[i:] if cand[k] != YEARCAND]
                    precise = False
        self.lineno = lineno

    def _esc_lines(self, chunk: bytes, start: int, ends: list[int], cand: dict[int, int],
                   susp: bool) -> list[int]:
        """Flag the lines with escapes (they end at ``ends``) in ``cand`` where they may matter:
        when they are candidates anyway, or when their stripped text may hold a needle, a
        failure word (``susp``) or a date an escape cut (one scan of those lines, joined).
        Return the starts of the others, in order."""
        rfind = chunk.rfind
        lo = start - 1 if start else 0
        starts = [rfind(b"\n", lo, e) + 1 or start for e in ends]
        lone: list[int] = []
        lone_ends: list[int] = []
        for k, e in zip(starts, ends, strict=True):
            f = cand.get(k)
            if f is None:
                lone.append(k)
                lone_ends.append(e)
            else:
                cand[k] = f | ESC
        if not lone:
            return []
        lines = [chunk[k:e] for k, e in zip(lone, lone_ends, strict=True)]
        offs = list(accumulate([len(x) + 1 for x in lines], initial=0))
        hot = {bisect_right(offs, to - 1) - 1
               for to in self.scan.esc_hits(b"\n".join(lines), susp)}
        if not hot:
            return lone
        for i in hot:
            cand[lone[i]] = ESC
        return [k for i, k in enumerate(lone) if i not in hot]

    def _esc_mask(self, line: bytes) -> int | None:
        """For a line with ANSI escapes: the needles of the stripped line (0: none, but it must
        be read all the same), or None when nothing in it matters."""

        need_susp = self.lines.wants_unrecognized()
        stripped = strip_ansi(line.decode("ascii")).encode("ascii")
        hits, years = self.scan.scan(stripped, need_susp)
        mask = 0
        hot = False
        for _, code in hits:
            if code & NEEDLE:
                mask |= 1 << (code >> 8)
            if code & (NEEDLE | SUSP | CTRL | SPLIT):
                hot = True
        if hot:
            return mask
        if years - {self.st.year} and self._changes_year(line):
            return 0
        return None

    def _key_esc(self, line: bytes) -> tuple[Any, Any]:
        text = strip_ansi(line.decode("ascii"))
        if text.endswith("\r"):
            text = text[:-1]
        return self._origin_key(self.prefixes.split(text.encode("ascii"))[1])

    def _hot(self, line: bytes, flags: int) -> bool:
        """For an otherwise cold line flagged SUSP / YEARCAND: must it be read?"""

        if flags & SUSP and self.lines.wants_unrecognized():
            return True
        if flags & YEARCAND:
            years = {2000 + int(m.group(1)) for m in ISO_B.finditer(line)}
            return bool(years - {self.st.year}) and self._changes_year(line)
        return False

    def _changes_year(self, line: bytes) -> bool:
        y = year_effect(line.decode("utf-8", errors="replace"))
        return y is not None and y != self.st.year

    @staticmethod
    def _add_year_candidates(chunk: bytes, start: int, end: int, cand: dict[int, int]) -> None:
        rfind = chunk.rfind
        lo = start - 1 if start else 0
        for m in ISO_B.finditer(chunk, start, end):
            s = rfind(b"\n", lo, m.start()) + 1 or start
            cand[s] = cand.get(s, 0) | YEARCAND

    def _real_years(self, chunk: bytes, start: int, end: int, years: set[int]) -> set[int]:
        """``years`` less the years other than the stream's that no real date in
        ``chunk[start:end]`` has (the scan's literals may be no date: ``iteration 2000/``)."""
        others = years - {self.st.year}
        if not others:
            return years
        return (years - others) | {y for y in others if _has_date(chunk, start, end, y)}

    @staticmethod
    def _has_long_line(chunk: bytes, start: int, end: int) -> bool:
        """True when some line may be longer than ``MAX_LINE_CHARS`` (a window of 256 KiB
        without a line break; such a line covers several)."""
        find = chunk.find
        w = LONG_WINDOW // 2
        return any(find(b"\n", k, k + w) < 0 for k in range(start, end - w + 1, w))


# --- planning in another process ------------------------------------------------------------
PIPELINE_MIN_BYTES = 32 * 1024 * 1024  # smaller files: a second process costs more than it saves
# Every READER_PLANS-th chunk is planned by the reader itself: planning is the larger half of
# the work, so the two processes finish together (measured on the benchmark's logs).
READER_PLANS = 5


def _span_key(buf: bytes, start: int, end: int) -> tuple[int, bytes, bytes]:
    """Enough of a chunk to tell that two readers of a file met the same bytes there."""
    return end - start, buf[start:start + 64], buf[max(start, end - 64):end]


def _plan_file(path: str, reg: Registry, susp: bool, conn: Any) -> None:
    """The planner process: read ``path`` as the loader does and send each chunk's plan."""
    ft = FastText(None, None, reg)  # type: ignore[arg-type]  # plan() reads no stream
    try:
        with open(path, "rb") as fh:
            for i, (buf, start, end) in enumerate(spans(fh, Account(), path)):
                mine = i % READER_PLANS != READER_PLANS - 1
                conn.send((_span_key(buf, start, end),
                           ft.plan(buf, start, end, susp) if mine else None))
    except (OSError, EOFError, BrokenPipeError):
        pass  # the reader plans what it gets no plan for
    finally:
        conn.close()


class Planner:
    """Plans the chunks of one uncompressed file in a child process while this one reads
    them (two cores: the scan and the per-line work side by side). ``next`` gives the plan of
    the chunk the reader is at; None for the chunks left to the reader (``READER_PLANS``),
    and from the first chunk the child did not see the same (a file that changed in between)
    or when the child is gone: the reader then plans itself. Plans read no stream state, so
    the result is the same either way."""

    def __init__(self, path: str, reg: Registry, susp: bool) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        self.conn, child = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_plan_file, args=(path, reg, susp, child), daemon=True)
        self.proc.start()
        child.close()
        self.ok = True

    @staticmethod
    def available(reg: Registry) -> bool:
        """Whether this machine and scanner can plan in a child process."""
        import multiprocessing as mp

        return (reg.kind == "hyperscan" and (os.cpu_count() or 1) > 1
                and "fork" in mp.get_all_start_methods())

    def next(self, buf: bytes, start: int, end: int) -> Plan | None:
        """The plan for ``buf[start:end]``, or None."""
        if not self.ok:
            return None
        try:
            key, plan = self.conn.recv()
        except (EOFError, OSError, ValueError, TypeError):
            self.ok = False
            return None
        if key != _span_key(buf, start, end):
            self.ok = False
            return None
        return plan

    def close(self) -> None:
        """Stop the child (if still reading) and reap it."""
        self.ok = False
        self.conn.close()
        if self.proc.is_alive():
            self.proc.terminate()
        self.proc.join()


NONASCII_RE = re.compile(rb"[\x80-\xff]+")


def _has_date(chunk: bytes, start: int, end: int, year: int) -> bool:
    """Whether ``chunk[start:end]`` holds an ISO date (``ISO_B``) of ``year``: each ``yyyy-M``
    and ``yyyy/M`` found (memchr speed; M a month's first digit) is matched in place."""
    match = ISO_B.match
    for lit in (b"%d-0" % year, b"%d-1" % year, b"%d/0" % year, b"%d/1" % year):
        i = chunk.find(lit, start, end)
        while i >= 0:
            m = match(chunk, i, end)
            if m and m.end() <= end:
                return True
            i = chunk.find(lit, i + 1, end)
    return False
NUMPY_FROM = 4096  # below this many bytes ``bytes.count`` is quicker than numpy's call


def _line_counter(chunk: bytes) -> Any:
    """``count(i, j)``: the line breaks in ``chunk[i:j]`` (numpy for long stretches: a compare
    and count over the bytes is about three times quicker than ``bytes.count``)."""
    arr = np.frombuffer(chunk, dtype=np.uint8)
    nl = np.uint8(10)
    count_b = chunk.count

    def count(i: int, j: int) -> int:
        if j - i < NUMPY_FROM:
            return count_b(b"\n", i, j)
        return int(np.count_nonzero(arr[i:j] == nl))
    return count


# --- one file ---------------------------------------------------------------------------------
def read_text(lines: LineReader, path: Path, head: bytes, stream: Stream, *,
              pipeline: bool = False, progress: Callable[[int], None] | None = None,
              budget: Budget | None = None, size: int = 0) -> None:
    """Read the text file ``path`` (``head``: its first bytes) through ``lines`` the fast way,
    ending ``stream``. ``pipeline``: a big uncompressed file's chunks are planned in a child
    process (``Planner``); ``progress`` is called with the bytes read so far; ``budget`` and
    ``size`` (bytes on disk) limit what is read (``decode.spans``)."""
    reg = registry(None, lines.line_parsers, lines.block_factories)
    fast = FastText(lines, stream, reg)
    planner = None
    if (pipeline and not head.startswith(GZIP_MAGIC) and Planner.available(reg)
            and file_size(path) >= PIPELINE_MIN_BYTES):
        try:  # failure words are planned for as long as they may be sampled
            planner = Planner(str(path), reg, susp=lines.want is None)
        except OSError:
            planner = None
    try:
        with open_bytes(path, head) as fh:
            for buf, start, end in spans(fh, lines.acc, str(path), budget, size,
                                         head.startswith(GZIP_MAGIC)):
                if progress is not None and (done := bytes_read(fh)) is not None:
                    progress(done)
                plan = planner.next(buf, start, end) if planner is not None else None
                if plan is None:
                    fast.chunk(buf, start, end)
                else:
                    fast.run(buf, plan)
    except OSError as e:
        lines.acc.warn(f"{path}: reading stopped at line {fast.lineno} ({e})")
    finally:
        if planner is not None:
            planner.close()
    lines.end(stream)
