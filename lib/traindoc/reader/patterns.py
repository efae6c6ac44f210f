"""The fast engine's byte patterns and line flags, and the on-disk cache of compiled Hyperscan
databases (``compile_cached``).

Each pattern matches only inside one line and is a superset of what it stands for: a line it
flags is read by the per-line code, which decides.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

try:  # optional: one native pass over the chunk for all patterns
    import hyperscan as hs
except Exception:  # noqa: BLE001 - a broken native install must not break loading
    hs = None

# Line flags from the scan. A hit is (offset, code): a flag, or NEEDLE | index << 8 for a needle.
NEEDLE, ESC, SUSP, SPLIT, CTRL, NONASCII, YEARCAND = 1, 2, 4, 8, 16, 32, 64

# prefixes.ISO_TIME_RE, on bytes (the year a line's date may set)
ISO_B = re.compile(rb"20(\d\d)[-/]\d\d[-/]\d\d[ T_]\d\d[:\-]\d\d[:\-]\d\d")
# split_physical's glued prefix: after a character that is neither white space nor ":" (so
# "[default2]:[rank2]:" stacked at a line's start is no split)
MIDLINE_PAT = rb"[^\s:]\[(?:rank|default)[0-9]"
CR_PAT = rb"\r[^\n]"  # a carriage return that is not the end of a CRLF line
CTRL_PAT = rb"[\x00\x1c-\x1f]"  # NUL (removed) and what str regexes treat as white space
NONASCII_RE = re.compile(rb"[\x80-\xff]+")  # (the Hyperscan scanner reports these itself)
# failure-looking phrases, read while the loader still samples unrecognized lines
SUSP_PATS = (rb"\b\w*(?:Error|Exception)\b:", rb"Traceback \(most recent call last\)",
             rb"NCCL (?:WARN|ERROR)", rb"\bFAILED\b", rb"[Tt]imed out", rb"Signal [0-9]",
             rb"\bKilled\b", rb"terminate called", rb"Fatal Python error", rb"\[E[0-9]{3}")
SUSP_WORDS = (b"Error", b"Exception", b"Traceback", b"NCCL", b"FAILED", b"imed out", b"Signal",
              b"Killed", b"terminate called", b"Fatal Python error", b"[E")  # one per SUSP_PATS
# For lines with ANSI escapes (``scanners.HsScanner.esc_hits``): a superset of one escape that
# ``prefixes.ANSI_RE`` removes; ``tolerant`` puts it between the bytes of a needle, a failure
# word or a date (``DATE_TOKENS``, ``ISO_B``'s pieces) to find them once escapes are stripped.
ESC_ONE = rb"(?:\x1b[\x20-\x7e][\x20-\x3f]*[\x20-\x7e]?)"
DATE_TOKENS = (b"2", b"0", rb"\d", rb"\d", b"[-/]", rb"\d", rb"\d", b"[-/]", rb"\d", rb"\d",
               b"[ T_]", rb"\d", rb"\d", rb"[:\-]", rb"\d", rb"\d", rb"[:\-]", rb"\d", rb"\d")


def literal(b: bytes) -> bytes:
    """A pattern matching the bytes ``b`` and nothing else."""
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


def has_date(chunk: bytes, start: int, end: int, year: int) -> bool:
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


def dated_years(chunk: bytes, start: int, end: int, years: set[int]) -> set[int]:
    """Those of ``years`` that an ISO date in ``chunk[start:end]`` has (what ``has_date`` says
    of each): one pass over every place a date may start, however many years are asked (a
    tqdm counter "12005/115311" holds the literal of year 2005: a chunk's counters may name a
    hundred years, and ``has_date`` went through the chunk for each)."""
    found: set[int] = set()
    search = ISO_B.search
    m = search(chunk, start, end)
    while m is not None and found != years:
        y = 2000 + int(m.group(1))
        if y in years and chunk[m.start() + 5] in b"01":  # (has_date's literals: month 0x/1x)
            found.add(y)
        m = search(chunk, m.start() + 1, end)
    return found


def cache_dir() -> Path:
    """Where compiled databases are kept: ``$TRAINDOC_CACHE``, else ``~/.cache/traindoc``."""
    base = os.environ.get("TRAINDOC_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "traindoc")
    return Path(base)


def compile_cached(exprs: list[bytes], flags: list[int]) -> Any:
    """A Hyperscan block-mode database for ``exprs``, kept on disk (``cache_dir``) so a process
    compiles it once per machine, not once per load. Hyperscan checks a loaded database's
    checksum; anything wrong means a fresh compile."""
    if hs is None:
        raise RuntimeError("compile_cached needs the hyperscan package")
    key = hashlib.sha256(repr((getattr(hs, "__version__", ""), exprs, flags)).encode())
    path = cache_dir() / f"hs-{key.hexdigest()[:32]}.db"
    try:
        db = hs.loadb(path.read_bytes(), hs.HS_MODE_BLOCK)
        db.scratch = hs.Scratch(db)
        return db
    except Exception:  # noqa: BLE001 - no cache yet, or an unusable one: compile
        pass
    db = hs.Database()
    db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=flags)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(hs.dumpb(db))
        os.replace(tmp, path)
    except Exception:  # noqa: BLE001 - a read-only home: compile each time
        pass
    return db
