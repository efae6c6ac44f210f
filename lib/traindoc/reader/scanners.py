"""The fast engine's scanners: one pass over a chunk for every needle and every flag of
``patterns``, with Hyperscan (``HsScanner``) where it is installed, else in pure Python
(``PyScanner``: the same lines, more slowly). ``TRAINDOC_SCANNER`` (``hyperscan`` or
``python``) picks one; by default Hyperscan where installed.
"""

from __future__ import annotations

import os
import re
from typing import Any

from .patterns import (
    CR_PAT,
    CTRL,
    CTRL_PAT,
    DATE_TOKENS,
    ESC,
    ISO_B,
    MIDLINE_PAT,
    NEEDLE,
    NONASCII,
    SPLIT,
    SUSP,
    SUSP_PATS,
    SUSP_WORDS,
    compile_cached,
    hs,
    literal,
    tolerant,
    tolerant_split,
)

SCANNER_ENV = "TRAINDOC_SCANNER"
SCANNERS = ("hyperscan", "python")


def scanner_kind(kind: str | None = None) -> str:
    """``kind``, else ``$TRAINDOC_SCANNER``, else ``hyperscan`` where installed, else
    ``python``."""
    kind = kind or os.environ.get(SCANNER_ENV) or ("hyperscan" if hs is not None else "python")
    if kind not in SCANNERS:
        raise ValueError(f"the scanner ({SCANNER_ENV}) must be one of {SCANNERS}, not {kind!r}")
    return kind


class PyScanner:
    """The scan in pure Python: one ``bytes.find`` walk per needle, ``re`` for the rest."""

    reports_nonascii = False  # the planner finds non-ASCII bytes itself (``NONASCII_RE``)

    def __init__(self, needles: list[bytes]) -> None:
        self.needles = needles
        self.others = [(re.compile(MIDLINE_PAT), SPLIT), (re.compile(CR_PAT), SPLIT),
                       (re.compile(CTRL_PAT), CTRL), (re.compile(rb"\x1b"), ESC)]
        self.susp = re.compile(b"|".join(SUSP_PATS))

    def scan(self, chunk: bytes, susp: bool) -> tuple[list[tuple[int, int]], set[int]]:
        """The hits in ``chunk`` (failure phrases too when ``susp``) and the years of its dates."""
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


class HsScanner:
    """The scan with Hyperscan: every pattern in one pass; years reported once per chunk."""

    reports_nonascii = True

    def __init__(self, needles: list[bytes]) -> None:
        exprs: list[bytes] = []
        flags: list[int] = []
        codes: list[int] = []

        def add(expr: bytes, code: int, flag: int = 0) -> None:
            exprs.append(expr)
            flags.append(flag)
            codes.append(code)

        for k, n in enumerate(needles):
            add(literal(n), NEEDLE | k << 8)
        # one report per line (at its end) for what can repeat inside a line
        ml = hs.HS_FLAG_MULTILINE
        add(MIDLINE_PAT + rb"[^\n]*$", SPLIT, ml)
        add(CR_PAT + rb"[^\n]*$", SPLIT, ml)
        add(CTRL_PAT + rb"[^\n]*$", CTRL, ml)
        add(rb"\x1b[^\n]*$", ESC, ml)
        add(rb"[\x80-\xff][^\n]*$", NONASCII, ml)
        for yy in range(100):  # code -1-yy: "20yy-M" or "20yy/M" (M: 0 or 1) in the chunk
            for sep in (b"-0", b"-1", b"/0", b"/1"):  # (literals: cheaper than a date pattern)
                add(b"20%02d%s" % (yy, sep), -1 - yy, hs.HS_FLAG_SINGLEMATCH)
        base = len(exprs)
        for pat in SUSP_PATS:
            add(pat, SUSP)
        self.codes = codes
        self.db = compile_cached(exprs[:base], flags[:base])
        self.db_susp = compile_cached(exprs, flags)
        self.needles = needles
        self._esc_dbs: dict[bool, Any] = {}

    def scan(self, chunk: bytes, susp: bool) -> tuple[list[tuple[int, int]], set[int]]:
        """The hits in ``chunk`` (failure phrases too when ``susp``) and the years its date
        literals name."""
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
            exprs = [tolerant([literal(n[i:i + 1]) for i in range(len(n))]) for n in self.needles]
            if susp:
                exprs += [tolerant([literal(w[i:i + 1]) for i in range(len(w))])
                          for w in SUSP_WORDS]
            exprs.append(tolerant_split(DATE_TOKENS))
            db = self._esc_dbs[susp] = compile_cached(exprs, [0] * len(exprs))
        ends: list[int] = []
        add = ends.append
        db.scan(buf, match_event_handler=lambda i, frm, to, fl, ctx: add(to))
        return ends



def make_scanner(kind: str, needles: list[bytes]) -> PyScanner | HsScanner:
    """The scanner ``kind`` (``scanner_kind``'s answer) for ``needles``."""
    return HsScanner(needles) if kind == "hyperscan" else PyScanner(needles)
