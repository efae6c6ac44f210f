"""The fast engine's planner: what the scan of a chunk says about its lines (``plan``, a
``Plan``: the candidate lines, their flags and needles; no stream state is read), and
``Planner``, a forked child that plans a big uncompressed file's chunks while the reader runs
them.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from itertools import accumulate
from typing import Any, NamedTuple

from .account import Account
from .decode import spans
from .patterns import ESC, NEEDLE, NONASCII, NONASCII_RE
from .scanners import HsScanner, PyScanner

# a chunk with this many bytes and a stretch of half of them without a line break may hold a
# line longer than MAX_LINE_CHARS: the reference code reads that chunk
LONG_WINDOW = 512 * 1024
PIPELINE_MIN_BYTES = 32 * 1024 * 1024  # smaller files: a second process costs more than it saves
# Every READER_PLANS-th chunk is planned by the reader itself: planning is the larger half of
# the work, so the two processes finish together (measured on the benchmark's logs).
READER_PLANS = 5


class Plan(NamedTuple):
    """``plan``'s findings for one chunk (offsets into its buffer)."""

    start: int
    end: int
    cand: dict[int, int]  # candidate line start -> flags
    masks: dict[int, int]  # candidate line start -> the needles it holds (bits)
    years: set[int]  # years whose literals the scan met (a superset of real dates')
    esc_cold: list[int]  # starts of the lines whose escapes hide nothing
    long: bool  # a line may be longer than MAX_LINE_CHARS: the reference code reads it


def plan(scan: PyScanner | HsScanner, chunk: bytes, start: int, n: int, susp: bool) -> Plan:
    """What ``scan`` of ``chunk[start:n]`` says about its lines (``susp``: failure words count;
    True is always safe). No stream state is read, so another process may do it."""
    if n - start > LONG_WINDOW and has_long_line(chunk, start, n):
        return Plan(start, n, {}, {}, set(), [], True)
    whole = start == 0 and n == len(chunk)
    hits, years, esc_ends = scan.scan_lines(
        chunk if whole else memoryview(chunk)[start:n], susp, start)
    if not scan.reports_nonascii and not chunk.isascii():
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
    esc_cold = esc_lines(scan, chunk, start, esc_ends, cand, susp) if esc_ends else []
    return Plan(start, n, cand, masks, years, esc_cold, False)


def esc_lines(scan: PyScanner | HsScanner, chunk: bytes, start: int, ends: list[int],
              cand: dict[int, int], susp: bool) -> list[int]:
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
           for to in scan.esc_hits(b"\n".join(lines), susp)}  # (only HsScanner gives ends)
    if not hot:
        return lone
    for i in hot:
        cand[lone[i]] = ESC
    return [k for i, k in enumerate(lone) if i not in hot]


def has_long_line(chunk: bytes, start: int, end: int) -> bool:
    """True when some line may be longer than ``MAX_LINE_CHARS`` (a window of 256 KiB
    without a line break; such a line covers several)."""
    find = chunk.find
    w = LONG_WINDOW // 2
    return any(find(b"\n", k, k + w) < 0 for k in range(start, end - w + 1, w))


# --- planning in another process ------------------------------------------------------------
def _span_key(buf: bytes, start: int, end: int) -> tuple[int, bytes, bytes]:
    """Enough of a chunk to tell that two readers of a file met the same bytes there."""
    return end - start, buf[start:start + 64], buf[max(start, end - 64):end]


def _plan_file(path: str, scan: HsScanner, susp: bool, conn: Any) -> None:
    """The planner process: read ``path`` as the loader does and send each chunk's plan."""
    try:
        with open(path, "rb") as fh:
            for i, (buf, start, end) in enumerate(spans(fh, Account(), path)):
                mine = i % READER_PLANS != READER_PLANS - 1
                conn.send((_span_key(buf, start, end),
                           plan(scan, buf, start, end, susp) if mine else None))
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

    def __init__(self, path: str, scan: HsScanner, susp: bool) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        self.conn, child = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_plan_file, args=(path, scan, susp, child), daemon=True)
        self.proc.start()
        child.close()
        self.ok = True

    @staticmethod
    def available(kind: str, size: int) -> bool:
        """Whether a file of ``size`` bytes is worth a planner, and this machine and the
        scanner ``kind`` can plan in a child process."""
        import multiprocessing as mp

        return (size >= PIPELINE_MIN_BYTES and kind == "hyperscan" and (os.cpu_count() or 1) > 1
                and "fork" in mp.get_all_start_methods())

    def next(self, buf: bytes, start: int, end: int) -> Plan | None:
        """The plan for ``buf[start:end]``, or None."""
        if not self.ok:
            return None
        try:
            key, got = self.conn.recv()
        except (EOFError, OSError, ValueError, TypeError):
            self.ok = False
            return None
        if key != _span_key(buf, start, end):
            self.ok = False
            return None
        return got

    def close(self) -> None:
        """Stop the child (if still reading) and reap it."""
        self.ok = False
        self.conn.close()
        if self.proc.is_alive():
            self.proc.terminate()
        self.proc.join()
