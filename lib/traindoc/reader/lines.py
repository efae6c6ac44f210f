"""The line pipeline: physical lines -> logical lines -> parsers -> rows.

A physical line is cut to ``MAX_LINE_CHARS`` and split where a carriage return or a glued
``[rankN]:`` prefix starts another (``split_physical``); each logical line is stripped of ANSI
colour, demultiplexed by its launcher prefixes into rank/host (``demux``), rejoined with the
unprefixed lines that continue it when a terminal or a paste wrapped it (``Pending``), and
handed to the line parsers whose needles it holds and to its writer's block parsers. Rows go
into a ``Sink``; counts and warnings into an ``Account``. Nothing here raises on bad input.

``LineReader`` is the reference (``engine="plain"``: every line through every step); the fast
engine (``reader.fast``) calls the same public steps for the lines that matter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..parse import BLOCK_PARSERS, LINE_PARSERS, BlockParser, LineParser
from ..parse.prefixes import (
    Origin,
    demux,
    drop_inner_tags,
    line_time,
    split_physical,
    strip_ansi,
)
from ..schema import SYNTHETIC_HOST_PREFIX
from .account import Account
from .decode import MAX_LINE_CHARS, decode
from .sink import LineContext, Sink

MAX_WRAP_LINES = 8  # at most this many continuation lines are rejoined to one record
KEEP_UNRECOGNIZED = 50
# A line no parser understood but that looks like a failure report is kept for the reader.
SUSPICIOUS_RE = re.compile(
    r"\b\w*(?:Error|Exception)\b:(?!:)|Traceback \(most recent call last\)|NCCL (?:WARN|ERROR)"
    r"|\bFAILED\b|[Tt]imed out|Signal \d+|\bKilled\b|terminate called|Fatal Python error"
    r"|\[E\d{3,4} ")


@dataclass
class Pending:
    """A record a parser found incomplete, with the unprefixed lines that continue it.

    A terminal wraps at a fixed column, mid-word (``NumelI`` / ``n=71552``); a mail client or
    an editor wraps at a space and drops it (``before timing`` / ``out.``). One line cannot tell
    which, so both joins are kept (``text`` with a space, ``tight`` without one, where neither
    side had whitespace) and the one the record's parser reads more fields from wins."""

    parser: LineParser
    text: str
    ctx: LineContext
    parts: int = 1
    tight: str | None = None  # the same parts joined with no space at the wrap points

    def add(self, body: str) -> None:
        """Append one continuation line."""
        raw = body.rstrip()
        piece = raw.strip()
        tight = self.text if self.tight is None else self.tight
        if raw[:1].isspace() or tight[-1:].isspace():
            self.tight = f"{tight} {piece}" if self.tight is not None else None
        else:
            self.tight = f"{tight}{piece}"
        self.text = f"{self.text} {piece}"
        self.parts += 1

    def best(self) -> str:
        """The join the parser reads more fields from (the spaced one on a tie)."""
        if self.tight is None or self.tight == self.text:
            return self.text
        return self.tight if _fields(self.parser, self.tight) > _fields(self.parser, self.text) \
            else self.text


def _fields(parser: LineParser, text: str) -> int:
    """How many values the parser reads from a line (0 when it reads none)."""
    try:
        rows = parser.parse(text)
    except (ValueError, OverflowError, RecursionError):
        return 0  # (said when the chosen join is dispatched)
    if rows is None:
        return 0
    rows = rows if isinstance(rows, list) else [rows]
    return sum(1 for r in rows for v in r.values() if v is not None and v == v)


class Stream:
    """Per-file state: pending wrapped record, block parsers, the year for glog times."""

    def __init__(self, name: str, origin: Origin, year: int | None) -> None:
        self.name = name
        self.origin = origin
        self.year = year
        self.pending: Pending | None = None
        self.blocks: dict[tuple[Any, ...], list[BlockParser]] = {}
        self.busy: set[tuple[Any, ...]] = set()  # keys whose block parsers are inside a record


def parsers_for(tables: Iterable[str] | None) -> tuple[tuple[LineParser, ...],
                                                       tuple[type[BlockParser], ...]]:
    """The line parsers and block-parser classes that fill ``tables`` (None: all), in
    registry order. A block parser whose ``tables`` is empty is always kept, and so is every
    line parser that joins wrapped lines (``incomplete``): which physical lines make one
    logical line must not depend on the tables asked for (a tqdm bar's join decides what the
    generic step reader sees); ``LineReader`` keeps only the rows of the tables asked for."""
    if tables is None:
        return LINE_PARSERS, BLOCK_PARSERS
    want = set(tables)
    return (tuple(p for p in LINE_PARSERS if p.table in want or p.incomplete),
            tuple(f for f in BLOCK_PARSERS if not f.tables or want & set(f.tables)))


def merge_origin(base: Origin, line: Origin) -> Origin:
    """Who wrote a line: the prefixes it carries (``line``) over those of its file (``base``)."""
    # srun -l's task id is a node under torchrun (one task per node) and a rank without
    # it (one task per GPU): it cannot be told from one line, so it names the writer
    # (host "srun-task-N") and never poses as a rank.
    rank = line.rank if line.rank is not None else base.rank
    host = line.host or base.host
    if host is None and line.task is not None:
        host = f"{SYNTHETIC_HOST_PREFIX}{line.task}"
    return Origin(rank=rank, host=host, pid=line.pid, rank_global=line.rank_global,
                  time=line.time)


def _starts_anew(pending: Pending, body: str) -> bool:
    """Whether a line of the pending record's own writer starts another record of its parser:
    it holds one of the parser's needles and is not what the parser says continues the record
    (torch_npu's "worker-1: [ERROR] … RankID:16) … PTA call acl api failed." is continued by
    "worker-1: EI9999: … hccl fftsplus task timeout occurred …", a needle of the same parser)."""
    parser = pending.parser
    return (any(map(body.__contains__, parser.needles))
            and (parser.continues is None or not parser.continues(pending.text, body)))


def same_writer(line: Origin, record: Origin) -> bool:
    """Whether a line's prefixes may be those of the process that wrote ``record``: every
    rank, host or pid they name is the record's (``[rank0]:`` stands only on the first of the
    physical lines srun prefixes with ``0: ``)."""
    return all(v is None or v == w for v, w in ((line.rank, record.rank),
                                                (line.host, record.host),
                                                (line.pid, record.pid)))


def _key_order(key: tuple[Any, ...]) -> tuple[Any, ...]:
    rank, host = key
    return (rank is None, rank if rank is not None else 0, host is None, host or "")


class LineReader:
    """Reads the lines of text streams through the parsers into ``sink``, counting into
    ``acc``. ``tables``: only the parsers that fill these run (None: all of them). Each step
    is a public method so that the fast engine can enter the pipeline where its scan says."""

    def __init__(self, acc: Account, sink: Sink, tables: Iterable[str] | None = None) -> None:
        self.acc = acc
        self.sink = sink
        self.want = None if tables is None else frozenset(tables)
        self.line_parsers, self.block_factories = parsers_for(self.want)
        self.incomplete_parsers = tuple(p for p in self.line_parsers if p.incomplete)
        self.unrecognized: list[str] = []

    def wants_unrecognized(self) -> bool:
        """Whether failure-looking lines no parser read are still sampled (all tables loaded
        and the sample not yet full: with ``tables`` given, unread lines prove nothing)."""
        return self.want is None and len(self.unrecognized) < KEEP_UNRECOGNIZED

    # -- physical lines ----------------------------------------------------------------------
    def read_chunk(self, stream: Stream, chunk: bytes, lineno: int) -> int:
        """Every line of ``chunk`` (bytes ending on a line break, or the stream's end) through
        ``physical``; the number of the last line read (``lineno``: the one before)."""
        lines = decode(chunk, self.acc).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for raw in lines:
            lineno += 1
            self.physical(stream, raw, lineno)
        return lineno

    def read_line(self, stream: Stream, line: bytes, lineno: int) -> None:
        """One physical line's bytes (no line break) through ``physical``."""
        self.physical(stream, decode(line, self.acc), lineno)

    def physical(self, stream: Stream, raw: str, lineno: int) -> None:
        """One physical line: cut, split into logical lines, each through ``logical``."""
        raw = self.cut(stream, raw, lineno)
        for part in split_physical(raw):
            self.acc.lines += 1
            self.logical(stream, strip_ansi(part), lineno)

    def cut(self, stream: Stream, raw: str, lineno: int) -> str:
        """A physical line cut to ``MAX_LINE_CHARS`` (counted and reported), less its CR."""
        if len(raw) > MAX_LINE_CHARS:
            self.acc.truncated_lines += 1
            self.acc.warn(f"{stream.name}:{lineno}: a line of {len(raw)} characters was cut to "
                          f"{MAX_LINE_CHARS}")  # (its first MAX_LINE_BYTES: decode.spans)
            raw = raw[:MAX_LINE_CHARS]
        if raw.endswith("\r"):
            raw = raw[:-1]
        return raw

    # -- logical lines -----------------------------------------------------------------------
    def logical(self, stream: Stream, text: str, lineno: int) -> None:
        """One logical line (ANSI stripped): its writer, then ``rejoin`` or ``record``."""
        body, origin = demux(text)
        body = drop_inner_tags(body)
        writer = merge_origin(stream.origin, origin)
        if stream.pending is not None and self.rejoin(
                stream, body, origin.writer() != Origin()
                and (not same_writer(writer, stream.pending.ctx[2])
                     or _starts_anew(stream.pending, body))):
            return
        self.record(stream, body, lineno, writer)

    def rejoin(self, stream: Stream, body: str, other_writer: bool) -> bool:
        """With a record pending: True when ``body`` continues it (and was added to it);
        otherwise the pending record is parsed first and False is returned.
        ``other_writer``: the line's prefixes name another writer than the record's, or name
        it and the line starts a record of the same parser. A line with no prefix, or with
        the record's own (a launcher prefixes every physical line a process writes, rich and
        loguru wrap a long one; a collector's time names no writer), may continue it."""
        p = stream.pending
        assert p is not None
        if (not other_writer and body.strip() and p.parts < MAX_WRAP_LINES
                and (p.parser.continues is None or p.parser.continues(p.text, body))):
            p.add(body)
            self.acc.rejoined_lines += 1
            self.acc.parsed_lines += 1
            if p.parser.incomplete and not p.parser.incomplete(p.text):
                stream.pending = None
                self.dispatch(stream, p.best(), p.ctx)
            return True
        stream.pending = None
        self.dispatch(stream, p.best(), p.ctx)
        return False

    def record(self, stream: Stream, body: str, lineno: int, origin: Origin,
               incomplete: Sequence[LineParser] | None = None,
               parsers: Sequence[LineParser] | None = None,
               blocks: Sequence[int] | None = None) -> None:
        """A logical line with nothing pending, its writer known: the stream's year, then
        either the start of a wrapped record or ``dispatch``. ``incomplete`` and ``parsers``
        (the fast engine's hints) are the parsers that can have a needle in ``body``, in
        registry order (None: all of them); ``blocks`` likewise the block parsers (indices)."""
        when = None
        if stream.year and ("20" in body[:30]):
            when = line_time(body, None)  # an ISO time: the same with any year given
            if when is not None:
                stream.year = when.year
        if origin.time is not None and stream.year:
            stream.year = origin.time.year
        ctx = (stream.name, lineno, origin, when or line_time(body, stream.year) or origin.time)
        for parser in self.incomplete_parsers if incomplete is None else incomplete:
            if not any(map(body.__contains__, parser.needles)):
                continue
            if parser.incomplete(body):  # type: ignore[misc]  # incomplete parsers have one
                stream.pending = Pending(parser, body, ctx)
                return
        self.dispatch(stream, body, ctx, parsers, blocks)

    def dispatch(self, stream: Stream, text: str, ctx: LineContext,
                 parsers: Iterable[LineParser] | None = None,
                 blocks: Sequence[int] | None = None) -> None:
        """Parse one complete logical line: the line parsers (``parsers``: those of them that
        can have a needle in ``text``; None: all), then its writer's block parsers
        (``blocks``: the indices of those that can have a needle in ``text``, fed only while
        the writer has no record open, as ``BlockParser`` allows; None: all)."""
        name, lineno, origin, when = ctx
        candidates = self.line_parsers if parsers is None else parsers
        fallbacks = [p for p in candidates if p.fallback]
        filled: set[str] = set()  # the tables the line's rows went to
        parsed = self.parse_with(candidates, text, ctx, False, filled)
        if self.feed_blocks(stream, text, ctx, blocks, filled):
            parsed = True
        if fallbacks and "*" not in filled:
            # a fallback parser reads a line no parser of its table understood (whatever other
            # tables took from it: a load of one table reads the same rows as a full one)
            mine = [p for p in fallbacks if p.table not in filled]
            parsed = self.parse_with(mine, text, ctx, True, filled) or parsed
        if parsed:
            self.acc.parsed_lines += 1
        else:
            self.acc.unparsed_lines += 1
            if self.wants_unrecognized() and SUSPICIOUS_RE.search(text):
                self.unrecognized.append(f"{name}:{lineno}: {text[:500]}")

    def feed_blocks(self, stream: Stream, text: str, ctx: LineContext,
                    blocks: Sequence[int] | None, filled: set[str]) -> bool:
        """Feed a complete logical line to its writer's block parsers (``blocks``: as in
        ``dispatch``), adding the tables they filled to ``filled``; whether one of them is now
        inside a record (the writer is then busy)."""
        name, lineno, origin, when = ctx
        key = (origin.rank, origin.host)
        mine = stream.blocks.get(key)
        if mine is None:
            mine = stream.blocks[key] = [factory() for factory in self.block_factories]
        if blocks is not None and key not in stream.busy:
            mine = [mine[i] for i in blocks]  # idle: the others ignore this line
        busy = False
        for b in mine:
            try:
                got = b.feed(text, (name, lineno, origin, when, text))
            except (ValueError, OverflowError, RecursionError) as e:
                self.unreadable(name, lineno, e)
                got = []
            for table, row in got:
                self.sink.add_block(table, row)
                filled.add(table)
            if b.section is not None:
                busy = True
                filled.update(b.tables or ("*",))
        if busy:
            stream.busy.add(key)
        elif stream.busy:
            stream.busy.discard(key)
        return busy

    def parse_with(self, parsers: Iterable[LineParser], text: str, ctx: LineContext,
                   fallback: bool, filled: set[str]) -> bool:
        """Run the line parsers (the fallback ones, or the others) whose needles ``text``
        holds, adding the tables they filled to ``filled``; whether any gave a row."""
        parsed = False
        for parser in parsers:
            if parser.fallback is not fallback or not any(map(text.__contains__,
                                                               parser.needles)):
                continue
            if self.want is not None and parser.table not in self.want:
                continue  # a joiner kept for its joins (``parsers_for``), not its rows
            try:
                row = parser.parse(text)
            except (ValueError, OverflowError, RecursionError) as e:  # a number no int holds
                self.unreadable(ctx[0], ctx[1], e)
                continue
            if not row:
                continue
            parsed = True
            filled.add(parser.table)
            for r in row if isinstance(row, list) else (row,):
                self.sink.add(parser.table, r, ctx, text)
        return parsed

    def unreadable(self, name: str, lineno: int, e: Exception) -> None:
        """A parser failed on a line (a number of thousands of digits, say): reported, and
        the line counts as not parsed by it."""
        why = ("a number of thousands of digits" if "digits" in str(e)
               else f"{type(e).__name__}: {str(e)[:80]}")
        self.acc.warn(f"{name}:{lineno}: a value could not be read ({why}); the parser that "
                      "failed on it skipped the line")

    def end(self, stream: Stream) -> None:
        """The stream's end: the pending record is parsed, open block records close."""
        if stream.pending is not None:
            p, stream.pending = stream.pending, None
            self.dispatch(stream, p.best(), p.ctx)
        # Records still open close in (rank, host) order: the same whichever lines were read.
        for key in sorted(stream.blocks, key=_key_order):
            for b in stream.blocks[key]:
                try:
                    got = b.close()
                except (ValueError, OverflowError, RecursionError) as e:
                    self.unreadable(stream.name, 0, e)
                    continue
                for table, row in got:
                    self.sink.add_block(table, row)
        stream.busy.clear()
