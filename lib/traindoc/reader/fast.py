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
others are counted in bulk (numpy over long stretches). Hot Megatron iteration lines that the
per-line path would read to the same row take the bulk lane instead (``reader.bulk``: one
compiled pattern per line shape, columns made at the sink's flush). A pending wrapped record or a block
parser inside a record (``section`` set) takes every following line of its writer through the
per-line code until it is done, so multi-line records see exactly the lines they would have
seen. A chunk is read in two steps: ``planner.plan`` (the scan and the candidate lines: no
stream state) and ``FastText.run`` (the lines, in order, with the stream's state); for a big
uncompressed file a forked child (``planner.Planner``) plans most chunks while the reader runs
them.

The scan uses Hyperscan (one pass for all patterns; compiled databases are cached on disk)
when the ``hyperscan`` package is installed, else a pure-Python scanner that finds the same
lines more slowly. The parts, bottom up: ``patterns`` (byte patterns, line flags, the database
cache), ``scanners``, ``registry`` (needles and masks of the parsers a load runs), ``planner``
(a chunk's plan, here or in a forked child), and this module, the engine. Exactness is
checked by ``tests/test_ingest.py`` against the reference on every sample under ``data/`` and
on generated adversarial logs, with both scanners, table subsets, tiny chunks and windows, and
a planner that dies or planned other bytes.

The block-parser contract this engine relies on is ``parse.base.BlockParser``: ``needles``
(one of them is in every line that can start a record or change its idle state) and, while idle
(``section`` None), no change of state on any line holding none of them. A block parser with
empty ``needles`` makes ``engine="auto"`` use the reference path
(``registry.fast_engine_status``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from ..parse.prefixes import (
    DETERMINED_SHORT_RE,
    HOST_MAY_FOLLOW_RE,
    LEAD_HEAD,
    SRUN_SHAPE_RE,
    demux,
    drop_inner_tags,
    line_time,
    split_physical,
    strip_ansi,
)
from .bulk import TABLE, Lane, batch_time
from .decode import GZIP_MAGIC, MAX_LINE_CHARS, Budget, bytes_read, file_size, open_bytes, spans
from .lines import LineReader, Stream, merge_origin
from .patterns import CTRL, ESC, ISO_B, NEEDLE, NONASCII, SPLIT, SUSP, YEARCAND, dated_years
from .planner import Plan, Planner, plan
from .registry import Registry

SKIP_WINDOW = 4096  # the first stretch ``FastText._skip`` splits into lines
HEAD = 24  # bytes of a line start that usually decide its launcher prefixes
NUMPY_FROM = 4096  # below this many bytes ``bytes.count`` is quicker than numpy's call
CACHE_ENTRIES = 8192  # a ``BoundedCache`` forgets everything past this many entries

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(dict[K, V], Generic[K, V]):
    """A memo that forgets everything once it holds ``limit`` entries (``CACHE_ENTRIES``):
    lines whose writer is not memoised give a new key each, and the memo stays bounded."""

    def __init__(self, limit: int | None = None) -> None:
        super().__init__()
        self.limit = CACHE_ENTRIES if limit is None else limit

    def keep(self, key: K, value: V) -> V:
        """``self[key] = value`` (after forgetting everything when full); returns ``value``."""
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value


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
def _rank_tag_later(line: bytes) -> bool:
    """Whether torch's rank tag stands past the start of ``line``'s head, where a lead before
    it (``prefixes.lead_before_rank``) may make it the line's prefix."""
    head = line[:LEAD_HEAD]
    return head.find(b"[rank") > 0 or head.find(b"[default") > 0


class PrefixCache:
    """``prefixes.demux`` memoised on the bytes of an ASCII line.

    demux matches its prefix patterns at a position, left to right, none looking behind, and
    past the start of a line it tries a pattern only at ``[``, ``(`` or a digit (a property
    ``tests/test_ingest.py`` checks). So a line that starts with the same consumed text and the
    same next character has the same prefixes and body when that character is none of those;
    after a digit only srun's ``\\d{1,6}: `` can match, which reads 8 characters; at ``[`` or
    ``(`` demux is run on what follows to confirm that it stops there. srun's prefix alone looks
    to the line's end (not before a bare list of names, ``prefixes.SRUN_RE``): a line where it
    was refused is not memoised, and a memo that took it is not trusted for a line ending in
    ``]``."""

    def __init__(self) -> None:
        self.by_len: dict[int, BoundedCache[bytes, tuple[int, Any, bool]]] = {}
        self.lens: list[int] = []

    def split(self, line: bytes) -> tuple[int, Any, int]:
        """(length of the prefixes demux strips, their Origin, and k > 0 when every line that
        starts with ``line[:k]`` has the same two) for an ASCII line."""
        for k in self.lens:
            hit = self.by_len[k].get(line[:k])
            if hit is not None:
                c, origin, check = hit
                if origin.task is not None and line.rstrip().endswith(b"]"):
                    break  # srun's prefix may stand before a list here: demux decides
                if c == 0 and _rank_tag_later(line):
                    break  # a lead before a rank tag ("18:00:35.575 [rank2]: "): demux decides
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
            elif ch.isdigit() and ch == "2" and (c == 0 or HOST_MAY_FOLLOW_RE.search(text[:c])):
                # a collector's time may stand here: its date and the letter after it decide
                if text[c + 10 : c + 11] == "T":
                    return c, origin, 0
                k, check = min(c + 11, len(text)), len(text) < c + 11
            elif ch.isdigit() and SRUN_SHAPE_RE.match(text, c):
                return c, origin, 0  # srun's shape refused before a list: not memoised
            elif ch.isdigit():
                k, check = min(c + 8, len(text)), len(text) < c + 8
            elif ch.isalpha() and (c == 0 or HOST_MAY_FOLLOW_RE.search(text[:c])):
                return c, origin, 0  # a host name may lead the text here: not memoised
            else:
                k, check = c + 1, False
            d = self.by_len.get(k)
            if d is None:
                d = self.by_len[k] = BoundedCache()
                self.lens = sorted(self.by_len, reverse=True)
            d.keep(line[:k], (c, origin, check))
            return c, origin, 0 if check else k
        return c, origin, 0


# --- the engine ----------------------------------------------------------------------------
class FastText:
    """Reads one text stream the fast way through a ``LineReader`` (same state, same
    results): ``reg`` the registry view of its parsers, ``prefixes`` the load's memo of who
    wrote a line (shared by its files)."""

    def __init__(self, lines: LineReader, stream: Stream, reg: Registry,
                 prefixes: PrefixCache, lane: Lane | None = None) -> None:
        self.lines = lines
        self.lane = lane
        self.st = stream
        self.reg = reg
        self.scan = reg.scanner
        self.lineno = 0
        self.prefixes = prefixes
        # id(Origin) -> (the Origin, its (rank, host) merged with the stream's)
        self._merged: BoundedCache[int, tuple[Any, tuple[Any, Any]]] = BoundedCache()
        self._keys: BoundedCache[bytes, tuple[Any, Any]] = BoundedCache()  # line head -> (rank, host)
        # first HEAD bytes -> (rank, host)
        self._heads: BoundedCache[bytes, tuple[Any, Any]] = BoundedCache()
        self.lineno_skipped = 0
        # id(Origin) -> (the Origin, the writer merged with the stream's); the prefix cache
        # makes a new Origin for each line it does not keep
        self._merged_origin: BoundedCache[int, tuple[Any, Any]] = BoundedCache()

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
                merged = self._merged_origin.keep(id(origin),
                                                  (origin, merge_origin(st.origin, origin)))
            writer = merged[1]
        else:  # (demux makes a new Origin each time: nothing to remember)
            body, origin = demux(text)
            c = len(text) - len(body)
            writer = merge_origin(st.origin, origin)
        reg = self.reg
        body = drop_inner_tags(text[c:])
        if mask:
            self.lines.record(st, body, lineno, writer, reg.incomplete(mask),
                              reg.parsers(mask), reg.blocks(mask))
        else:
            self.lines.record(st, body, lineno, writer, (), (), ())

    def _key(self, line: bytes) -> tuple[Any, Any]:
        """The (rank, host) whose block parsers an unflagged line would be fed to."""
        if line.endswith(b"\r"):
            line = line[:-1]
        _, origin, k = self.prefixes.split(line)
        key = self._origin_key(origin)
        if k:
            self._keys.keep(line[:k], key)
        return key

    def _origin_key(self, origin: Any) -> tuple[Any, Any]:
        got = self._merged.get(id(origin))
        if got is None or got[0] is not origin:
            m = merge_origin(self.st.origin, origin)
            got = self._merged.keep(id(origin), (origin, (m.rank, m.host)))
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
                self._heads.keep(head, key)
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
        self.run(chunk, plan(self.scan, chunk, start, n, self.lines.wants_unrecognized()))

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
        lane = self.lane
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
            if (lane is not None and flags & ~YEARCAND == NEEDLE and st.pending is None
                    and lane.takes(mask) and self._bulk(line, lineno, mask)):
                continue
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

    def _bulk(self, line: bytes, lineno: int, mask: int) -> bool:
        """Give a plain ASCII line whose needles only the Megatron parser reads, with nothing
        pending, to the bulk lane when it gives the row the per-line path would: no
        collector's time, a known shape, no other year; its writer's block parsers are fed it
        as ``dispatch`` feeds them (all of them while one is inside a record). Whether it
        took it (then the line is counted as read and parsed)."""
        if len(line) >= MAX_LINE_CHARS:
            return False
        c, origin, _ = self.prefixes.split(line)
        if origin.time is not None:
            return False
        merged = self._merged_origin.get(id(origin))
        st = self.st
        if merged is None or merged[0] is not origin:
            merged = self._merged_origin.keep(id(origin),
                                              (origin, merge_origin(st.origin, origin)))
        writer = merged[1]
        lane = self.lane
        assert lane is not None
        got = lane.match(line, c)
        if got is None:
            return False
        sid, m = got
        year = m.group(1)
        if year is not None and st.year and int(year) != st.year:
            return False  # (the per-line path sets the stream's year)
        values = m.groups()
        body = line[c:]
        text = ""
        others = lane.incomplete(mask)
        if others:
            text = body.decode("ascii")
            if any(any(map(text.__contains__, p.needles)) and p.incomplete(text)
                   for p in others):
                return False  # (it would wait for the next line)
        batch = lane.batch
        batch.add(sid, values, body, st.name, lineno, writer.rank, writer.host)
        lines = self.lines
        lines.sink.add_bulk(TABLE, batch, st.name)
        blocks = self.reg.blocks(mask)
        key = (writer.rank, writer.host)
        if blocks or key in st.busy or key not in st.blocks:  # (a busy writer's: all of them)
            ctx = (st.name, lineno, writer, batch_time(values))
            lines.feed_blocks(st, text or body.decode("ascii"), ctx, blocks, set())
        acc = lines.acc
        acc.lines += 1
        acc.parsed_lines += 1
        return True

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
        return (years - others) | dated_years(chunk, start, end, others)



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
def read_text(lines: LineReader, path: Path, head: bytes, stream: Stream, reg: Registry,
              prefixes: PrefixCache, lane: Lane | None = None, *, pipeline: bool = False,
              progress: Callable[[int], None] | None = None, budget: Budget | None = None,
              size: int = 0) -> None:
    """Read the text file ``path`` (``head``: its first bytes) through ``lines`` the fast way
    (``reg``: the registry view of ``lines``' parsers; ``prefixes``: the load's memo of line
    writers), ending ``stream``. ``pipeline``: a big uncompressed file's chunks are planned in a
    child process (``Planner``); ``progress`` is called with the bytes read so far; ``budget``
    and ``size`` (bytes on disk) limit what is read (``decode.spans``)."""
    fast = FastText(lines, stream, reg, prefixes, lane)
    planner = None
    if (pipeline and not head.startswith(GZIP_MAGIC)
            and Planner.available(reg.kind, file_size(path))):
        try:  # failure words are planned for as long as they may be sampled
            planner = Planner(str(path), reg.scanner, susp=lines.want is None)
        except OSError:
            planner = None
    try:
        with open_bytes(path, head) as fh:
            for buf, start, end in spans(fh, lines.acc, str(path), budget, size,
                                         head.startswith(GZIP_MAGIC)):
                if progress is not None and (done := bytes_read(fh)) is not None:
                    progress(done)
                got = planner.next(buf, start, end) if planner is not None else None
                if got is None:
                    fast.chunk(buf, start, end)
                else:
                    fast.run(buf, got)
    except OSError as e:
        lines.acc.warn(f"{path}: reading stopped at line {fast.lineno} ({e})")
    finally:
        if planner is not None:
            planner.close()
    lines.end(stream)
