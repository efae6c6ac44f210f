"""``load(paths) -> Incident``: one streaming pass over every log file of an incident.

Paths may be files, directories (walked recursively), globs or a list of these; files may be
plain, gzip or UTF-16. Each physical line is split into logical lines (carriage returns, a
rank prefix behind a tqdm bar), stripped of ANSI colour, demultiplexed by its launcher prefixes
into rank/host, rejoined when a terminal or paste wrapped it, and handed to the parsers of
``traindoc.parse``. Bad bytes are replaced and counted; nothing here raises on bad input: every
problem becomes a warning in ``Incident.account``.

Two engines give the same tables and account: ``plain`` (the reference below, every line
through every step) and ``fast`` (``traindoc.ingest``: the lines no parser or open record can
use are counted in bulk). Many files are read by a process pool and merged in file order; rows
become DataFrames every ``FLUSH_ROWS`` rows so memory stays near the size of the tables.
"""

from __future__ import annotations

import gc
import glob as _glob
import gzip
import math
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from .incident import Incident, drop_echoes
from .locations import CHECKOUT
from .parse import BLOCK_PARSERS, FILE_LOADERS, LINE_PARSERS, FileLoader, LineParser
from .parse.prefixes import Origin, demux, line_time, path_origin, split_physical, strip_ansi
from .schema import TABLES, frame

CHUNK_BYTES = 4 * 1024 * 1024
MAX_LINE_CHARS = 1024 * 1024  # a longer line is cut to this many characters (and reported)
MAX_WRAP_LINES = 8  # at most this many continuation lines are rejoined to one record
KEEP_UNRECOGNIZED = 50
FLUSH_ROWS = 65536  # rows of a table kept as dicts before they become a DataFrame
MERGE_PARTS = 32  # a whole-file loader's small DataFrames joined this many at a time
MAX_WARNINGS = 200
# A line no parser understood but that looks like a failure report is kept for the reader.
SUSPICIOUS_RE = re.compile(
    r"\b\w*(?:Error|Exception)\b:(?!:)|Traceback \(most recent call last\)|NCCL (?:WARN|ERROR)"
    r"|\bFAILED\b|[Tt]imed out|Signal \d+|\bKilled\b|terminate called|Fatal Python error"
    r"|\[E\d{3,4} ")
# In a walked directory, files that are never logs: a bundle's README, scripts, expectations.
SKIP_NAMES = {"drill.json", "expected.json"}
SKIP_SUFFIXES = (".md", ".py", ".sh", ".png", ".ipynb", ".pyc")
GZIP_MAGIC = b"\x1f\x8b"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


@dataclass
class _Account:
    paths: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    lines: int = 0
    parsed_lines: int = 0
    unparsed_lines: int = 0
    bad_bytes: int = 0
    truncated_lines: int = 0
    rejoined_lines: int = 0
    dumps: int = 0
    warnings: list[str] = field(default_factory=list)

    def warn(self, msg: str) -> None:
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(msg)
        elif len(self.warnings) == MAX_WARNINGS:
            self.warnings.append("… further warnings left out")


def expand_paths(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                 account: _Account | None = None) -> list[Path]:
    """Files named by ``paths`` (files, directories, globs), sorted, each once."""
    acc = account or _Account()
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    out: dict[str, Path] = {}
    for raw in paths:
        s = os.fspath(raw)
        acc.paths.append(s)
        if any(c in s for c in "*?[") and not os.path.exists(s):
            hits = sorted(_glob.glob(s, recursive=True))
            if not hits:
                acc.warn(f"{s}: the glob matched no file")
            candidates = [Path(h) for h in hits]
        else:
            candidates = [Path(s)]
        for p in candidates:
            if p.is_dir():
                found = False
                for root, dirs, names in os.walk(p):
                    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                    for n in sorted(names):
                        if n.startswith(".") or n.lower() in SKIP_NAMES or n.lower().endswith(
                            SKIP_SUFFIXES
                        ):
                            continue
                        q = Path(root) / n
                        found = True
                        out.setdefault(str(q), q)
                if not found:
                    acc.warn(f"{p}: the directory holds no file")
            elif p.is_symlink() and not p.exists():
                acc.warn(f"{p}: a broken symbolic link")
            elif not p.exists():
                acc.warn(f"{p}: no such file or directory")
            else:
                out.setdefault(str(p), p)
    return list(out.values())


def _open_bytes(path: Path, head: bytes) -> Any:
    if head.startswith(GZIP_MAGIC):
        return gzip.open(path, "rb")
    return open(path, "rb")  # noqa: SIM115


def _chunks(fh: Any, acc: _Account, name: str) -> Iterator[bytes]:
    """Raw byte chunks, ending on a line break where possible; gzip errors become warnings."""
    for buf, start, end in _spans(fh, acc, name):
        yield buf if start == 0 and end == len(buf) else buf[start:end]


def _spans(fh: Any, acc: _Account, name: str) -> Iterator[tuple[bytes, int, int]]:
    """Byte chunks ``buffer[start:end]`` ending on a line break where possible (a line
    longer than 4 ``MAX_LINE_CHARS`` is cut), without copying whole blocks: the line cut by a
    block's end comes as a small chunk of its own, then the rest of the next block in place (a
    line break just before ``start``). Gzip errors become warnings."""
    # read1: a gzip cut short raises only on the read that hits the cut, after the data before it
    rest = b""
    read = getattr(fh, "read1", fh.read)
    while True:
        try:
            block = read(CHUNK_BYTES)
        except (EOFError, OSError, zlib.error) as e:
            acc.warn(f"{name}: stopped reading early ({type(e).__name__}: {e}); "
                     "kept what came before (a gzip cut short?)")
            block = b""
        if not block:
            if rest:
                yield rest, 0, len(rest)
            return
        cut = block.rfind(b"\n")
        if cut < 0:
            block = rest + block
            if len(block) > MAX_LINE_CHARS * 4:
                yield block, 0, len(block)
                rest = b""
            else:
                rest = block
            continue
        start = 0
        if rest:
            first = block.find(b"\n") + 1
            joint = rest + block[:first]
            if len(joint) > MAX_LINE_CHARS * 4:  # a long line: read with what follows
                yield b"".join((rest, memoryview(block)[: cut + 1])), 0, len(rest) + cut + 1
                rest = block[cut + 1 :]
                continue
            yield joint, 0, len(joint)
            start = first
        if start <= cut:
            yield block, start, cut + 1
        rest = block[cut + 1 :]


def _decode(chunk: bytes, acc: _Account) -> str:
    try:
        return chunk.decode("utf-8")
    except UnicodeDecodeError:
        before = chunk.count("\ufffd".encode())
        text = chunk.decode("utf-8", errors="replace")
        acc.bad_bytes += max(text.count("\ufffd") - before, 1)
        return text


@dataclass
class _Pending:
    """A record a parser found incomplete, with the unprefixed lines that continue it.

    A terminal wraps at a fixed column, mid-word (``NumelI`` / ``n=71552``); a mail client or
    an editor wraps at a space and drops it (``before timing`` / ``out.``). One line cannot tell
    which, so both joins are kept (``text`` with a space, ``tight`` without one, where neither
    side had whitespace) and the one the record's parser reads more fields from wins."""

    parser: LineParser
    text: str
    ctx: tuple[str, int, Origin, datetime | None]
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


def _non_finite(row: dict[str, Any]) -> bool:
    """A step whose loss or grad norm was read as NaN or infinite."""
    for c in ("loss", "grad_norm"):
        v = row.get(c)
        if isinstance(v, float) and not math.isfinite(v):
            return True
    return False


def _fields(parser: LineParser, text: str) -> int:
    """How many values the parser reads from a line (0 when it reads none)."""
    rows = parser.parse(text)
    if rows is None:
        return 0
    rows = rows if isinstance(rows, list) else [rows]
    return sum(1 for r in rows for v in r.values() if v is not None and v == v)


class _Stream:
    """Per-file state: pending wrapped record, block parsers, the year for glog times."""

    def __init__(self, name: str, origin: Origin, year: int | None) -> None:
        self.name = name
        self.origin = origin
        self.year = year
        self.pending: _Pending | None = None
        self.blocks: dict[tuple[Any, ...], list[Any]] = {}
        self.busy: set[tuple[Any, ...]] = set()  # keys whose block parsers are inside a record


def parsers_for(tables: Iterable[str] | None) -> tuple[tuple[LineParser, ...],
                                                       tuple[Callable[[], Any], ...]]:
    """The line parsers and block-parser factories that fill ``tables`` (None: all), in
    registry order. A block parser without a ``tables`` attribute is always kept."""
    if tables is None:
        return LINE_PARSERS, BLOCK_PARSERS
    want = set(tables)
    return (tuple(p for p in LINE_PARSERS if p.table in want),
            tuple(f for f in BLOCK_PARSERS
                  if not getattr(f, "tables", None) or want & set(f.tables)))


class _Loader:
    def __init__(self, year: int | None, engine: str = "plain",
                 progress: Callable[[int], None] | None = None,
                 tables: Iterable[str] | None = None) -> None:
        self.acc = _Account()
        # ``tables``: only the parsers that fill these run (None: all of them)
        self.want = None if tables is None else frozenset(tables)
        self.line_parsers, self.block_factories = parsers_for(self.want)
        self.incomplete_parsers = tuple(p for p in self.line_parsers if p.incomplete)
        self.rows: dict[str, list[dict[str, Any]]] = {t: [] for t in TABLES}
        # rows already made into DataFrames (every FLUSH_ROWS rows: dicts cost ten times more)
        self.frames: dict[str, list[pd.DataFrame]] = {t: [] for t in TABLES}
        # per table, the text files that gave rows ("" for a whole-file loader's rows)
        self.sources: dict[str, set[str]] = {t: set() for t in TABLES}
        self.unrecognized: list[str] = []
        self.year = year
        self.engine = engine  # "plain" (the reference, line by line) or "fast" (ingest.py)
        self.progress = progress  # called with the bytes read so far of the current file
        self.pipeline = False  # a big file's chunks planned in a child process (ingest.Planner)

    # -- files ---------------------------------------------------------------------------
    def load_file(self, path: Path) -> None:
        name = str(path)
        try:
            with open(path, "rb") as fh:
                head = fh.read(4096)
            st = path.stat()
        except OSError as e:
            if path.is_symlink() and not path.exists():
                self.acc.warn(f"{name}: a broken symbolic link")
            else:
                self.acc.warn(f"{name}: cannot be read ({e.strerror or e})")
            return
        for loader in FILE_LOADERS:
            if loader.sniff(path, head):
                self._load_whole(loader, path)
                return
        self.acc.files.append(name)
        if not head:
            self.acc.warn(f"{name}: empty file")
            return
        year = self.year or datetime.fromtimestamp(st.st_mtime).year
        stream = _Stream(name, path_origin(name), year)
        if head.startswith(UTF16_BOMS) and head[2:400].count(b"\x00") * 3 > len(head[2:400]):
            self._load_utf16(path, stream)
            return
        if b"\x00" in head and not head.startswith(GZIP_MAGIC):
            self.acc.warn(f"{name}: holds NUL bytes (binary data?); read as text with NULs removed")
        if self.engine == "fast":
            self._load_fast(path, head, stream)
            return
        lineno = 0
        try:
            with _open_bytes(path, head) as fh:
                for chunk in _chunks(fh, self.acc, name):
                    self._read(fh)
                    lineno = self.read_chunk(stream, chunk, lineno)
        except OSError as e:
            self.acc.warn(f"{name}: reading stopped at line {lineno} ({e})")
        self._end(stream)

    def read_chunk(self, stream: _Stream, chunk: bytes, lineno: int) -> int:
        """Every line of ``chunk`` through ``_physical`` (the reference path); the number of
        the last line read."""
        text = _decode(chunk, self.acc)
        if "\x00" in text:
            text = text.replace("\x00", "")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for raw in lines:
            lineno += 1
            self._physical(stream, raw, lineno)
        return lineno

    def _load_fast(self, path: Path, head: bytes, stream: _Stream) -> None:
        """The same as the loop above, through ``ingest.FastText`` (see ingest.py)."""
        from .ingest import PIPELINE_MIN_BYTES, FastText, Planner, registry

        reg = registry(None, self.line_parsers, self.block_factories)
        fast = FastText(self, stream, reg)
        planner = None
        if (self.pipeline and not head.startswith(GZIP_MAGIC) and Planner.available(reg)
                and _size(path) >= PIPELINE_MIN_BYTES):
            try:  # failure words are planned for as long as they may be sampled
                planner = Planner(str(path), reg, susp=self.want is None)
            except OSError:
                planner = None
        try:
            with _open_bytes(path, head) as fh:
                for buf, start, end in _spans(fh, self.acc, str(path)):
                    self._read(fh)
                    plan = planner.next(buf, start, end) if planner is not None else None
                    if plan is None:
                        fast.chunk(buf, start, end)
                    else:
                        fast.run(buf, plan)
        except OSError as e:
            self.acc.warn(f"{path}: reading stopped at line {fast.lineno} ({e})")
        finally:
            if planner is not None:
                planner.close()
        self._end(stream)

    def _read(self, fh: Any) -> None:
        """Report progress: the compressed bytes read so far of this file."""
        if self.progress is not None:
            raw = getattr(fh, "fileobj", None) or fh
            try:
                self.progress(raw.tell())
            except (OSError, ValueError, AttributeError):
                pass

    def _load_utf16(self, path: Path, stream: _Stream) -> None:
        self.acc.warn(f"{path}: UTF-16 text, decoded as such")
        lineno = 0
        try:
            with open(path, encoding="utf-16", errors="replace", newline="") as fh:
                for raw in fh:
                    lineno += 1
                    self._physical(stream, raw.rstrip("\n"), lineno)
        except (OSError, UnicodeError) as e:
            self.acc.warn(f"{path}: reading stopped at line {lineno} ({e})")
        self._end(stream)

    def _load_whole(self, loader: FileLoader, path: Path) -> None:
        """A whole-file loader's tables: as DataFrames where it gives them (``load_frames``:
        flight-recorder dumps, no dict per row), else as rows."""
        load_frames = getattr(loader, "load_frames", None)
        try:
            got = load_frames(path) if load_frames is not None else loader.load(path)
        except (OSError, ValueError) as e:
            what = "flight-recorder dump" if loader.kind == "dump" else f"{loader.name} file"
            self.acc.warn(f"{path}: {what} not loaded: {e}")
            return
        if loader.kind == "dump":
            self.acc.dumps += 1
            if load_frames is None:
                no_rank = bool(got) and got[0][1].get("rank") is None
            else:
                first = next((df for df in got.values() if len(df)), None)
                no_rank = first is not None and "rank" in first and pd.isna(first["rank"].iloc[0])
            if no_rank:
                self.acc.warn(f"{path}: flight-recorder dump whose file name carries no rank")
        self.acc.files.append(str(path))
        if load_frames is not None:
            for table, df in got.items():
                self._add_frame(table, df)
            return
        for table, row in got:
            self.rows[table].append(row)
            self.sources[table].add("")
        for table, rows in self.rows.items():
            if len(rows) >= FLUSH_ROWS:
                self._flush(table)

    def _add_frame(self, table: str, df: pd.DataFrame) -> None:
        """A whole-file loader's rows of ``table`` as one DataFrame, after the rows before it."""
        if not len(df):
            return
        self._flush(table)  # rows read before this file stay before its rows
        parts = self.frames[table]
        parts.append(df)
        self.sources[table].add("")
        # many dumps make many small parts: join the trailing small ones (in order)
        # MERGE_PARTS at a time, so that ``tables`` joins a few large parts
        run = 0
        for p in reversed(parts):
            if len(p) >= FLUSH_ROWS // MERGE_PARTS or run == MERGE_PARTS:
                break
            run += 1
        if run == MERGE_PARTS:
            parts[-run:] = [pd.concat(parts[-run:], ignore_index=True)]

    def _flush(self, table: str) -> None:
        rows = self.rows[table]
        if rows:
            self.frames[table].append(frame(table, rows))
            self.rows[table] = []

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables of every row so far (``Incident.from_rows`` would build the same)."""
        out = {}
        for t in TABLES:
            self._flush(t)
            parts, self.frames[t] = self.frames[t], []
            if self.want is not None and t not in self.want:
                parts = []  # a whole-file loader's rows for a table not asked for
            if not parts:
                df = frame(t, [])
            elif len(parts) == 1:
                df = parts[0]
            else:
                df = _concat(parts)
            del parts
            names = self.sources[t]
            if len(names) == 1 and not any(n == "" or "#entry" in n for n in names):
                out[t] = df  # one text file: drop_echoes would find nothing to drop
            else:
                out[t] = drop_echoes(df)
        return out

    # -- lines ---------------------------------------------------------------------------
    def _physical(self, stream: _Stream, raw: str, lineno: int) -> None:
        if len(raw) > MAX_LINE_CHARS:
            self.acc.truncated_lines += 1
            self.acc.warn(f"{stream.name}:{lineno}: a line of {len(raw)} characters was cut to "
                          f"{MAX_LINE_CHARS}")
            raw = raw[:MAX_LINE_CHARS]
        if raw.endswith("\r"):
            raw = raw[:-1]
        for part in split_physical(raw):
            self.acc.lines += 1
            self._logical(stream, strip_ansi(part), lineno)

    def _logical(self, stream: _Stream, text: str, lineno: int) -> None:
        body, origin = demux(text)
        has_prefix = origin != Origin()
        p = stream.pending
        if p is not None:
            if (not has_prefix and body.strip() and p.parts < MAX_WRAP_LINES
                    and (p.parser.continues is None or p.parser.continues(p.text, body))):
                p.add(body)
                self.acc.rejoined_lines += 1
                self.acc.parsed_lines += 1
                if p.parser.incomplete and not p.parser.incomplete(p.text):
                    stream.pending = None
                    self._dispatch(stream, p.best(), p.ctx)
                return
            stream.pending = None
            self._dispatch(stream, p.best(), p.ctx)
        if stream.year and ("20" in body[:30]):
            t = line_time(body, None)
            if t is not None:
                stream.year = t.year
        ctx = (stream.name, lineno, self._merge(stream.origin, origin), line_time(body, stream.year))
        for parser in self.incomplete_parsers:
            if not any(n in body for n in parser.needles):
                continue
            if parser.incomplete(body):
                stream.pending = _Pending(parser, body, ctx)
                return
        self._dispatch(stream, body, ctx)

    @staticmethod
    def _merge(base: Origin, line: Origin) -> Origin:
        # srun -l's task id is a node under torchrun (one task per node) and a rank without
        # it (one task per GPU): it cannot be told from one line, so it names the writer
        # (host "srun-task-N") and never poses as a rank.
        rank = line.rank if line.rank is not None else base.rank
        host = line.host or base.host
        if host is None and line.task is not None:
            host = f"srun-task-{line.task}"
        return Origin(rank=rank, host=host, pid=line.pid, rank_global=line.rank_global)

    def _dispatch(self, stream: _Stream, text: str, ctx: tuple[Any, ...],
                  parsers: Iterable[LineParser] | None = None) -> None:
        """Parse one logical line; ``parsers`` (the fast engine's hint) are those of
        the loader's line parsers that can have a needle in ``text``, in registry order."""
        name, lineno, origin, when = ctx
        parsed = False
        for parser in self.line_parsers if parsers is None else parsers:
            if not any(n in text for n in parser.needles):
                continue
            row = parser.parse(text)
            if not row:
                continue
            parsed = True
            for r in row if isinstance(row, list) else (row,):
                self._add(parser.table, r, ctx, text)
        key = (origin.rank, origin.host)
        blocks = stream.blocks.get(key)
        if blocks is None:
            blocks = stream.blocks[key] = [factory() for factory in self.block_factories]
        busy = False
        for b in blocks:
            for table, row in b.feed(text, (name, lineno, origin, when, text)):
                self._add_block(table, row)
            if getattr(b, "section", None) is not None:
                parsed = busy = True
        if busy:
            stream.busy.add(key)
        elif stream.busy:
            stream.busy.discard(key)
        if parsed:
            self.acc.parsed_lines += 1
        else:
            self.acc.unparsed_lines += 1
            if self.wants_unrecognized() and SUSPICIOUS_RE.search(text):
                self.unrecognized.append(f"{name}:{lineno}: {text[:500]}")

    def wants_unrecognized(self) -> bool:
        """Whether failure-looking lines no parser read are still sampled (all tables loaded
        and the sample not yet full: with ``tables`` given, unread lines prove nothing)."""
        return self.want is None and len(self.unrecognized) < KEEP_UNRECOGNIZED

    def _add(self, table: str, row: dict[str, Any], ctx: tuple[Any, ...], text: str) -> None:
        name, lineno, origin, when = ctx
        if row.pop("_named_rank", False) and row.get("rank") is not None:
            pass  # the message names this rank (another rank than the writer's)
        elif row.get("rank") is None or (origin.rank_global and origin.rank is not None):
            row["rank"] = origin.rank
        if row.get("host") is None:
            row["host"] = origin.host
        if row.get("time") is None:
            row["time"] = when
        row["source"] = f"{name}:{lineno}"
        row["line"] = text
        if table == "iterations" and row.get("nan") is None and _non_finite(row):
            row["nan"] = 1  # a NaN read as a float becomes <NA> in the table: say it here
        rows = self.rows[table]
        rows.append(row)
        self.sources[table].add(name)
        if len(rows) >= FLUSH_ROWS:
            self._flush(table)

    def _add_block(self, table: str, row: dict[str, Any]) -> None:
        ctx = row.pop("_ctx", None)
        if ctx is None:
            ctx = ("?", 0, Origin(), None, "")
        name, lineno, origin, when, text = ctx
        self._add(table, row, (name, lineno, origin, when), text)

    def _end(self, stream: _Stream) -> None:
        if stream.pending is not None:
            p, stream.pending = stream.pending, None
            self._dispatch(stream, p.best(), p.ctx)
        # Records still open close in (rank, host) order: the same whichever lines were read.
        for key in sorted(stream.blocks, key=_key_order):
            for b in stream.blocks[key]:
                for table, row in b.close():
                    self._add_block(table, row)
        stream.busy.clear()


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """``pd.concat(parts, ignore_index=True)`` a column at a time, freeing each part's column
    as it goes: the peak is the table plus one column, not twice the table. Empties ``parts``
    (the columns are held apart from their frames, so that dropping one costs nothing)."""
    names = list(parts[0].columns)
    columns = [[p[c] for c in names] for p in parts]
    parts.clear()
    cols = {}
    for i, col in enumerate(names):
        cols[col] = pd.concat([pc[i] for pc in columns], ignore_index=True)
        for pc in columns:
            pc[i] = None
    return pd.DataFrame(cols, copy=False)


def _key_order(key: tuple[Any, ...]) -> tuple[Any, ...]:
    rank, host = key
    return (rank is None, rank if rank is not None else 0, host is None, host or "")


class NoInputError(RuntimeError):
    """Nothing at all could be read from the paths a runbook was given."""




def load_or_fail(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    parameter: str = "log_path",
    year: int | None = None,
    engine: str = "auto",
    progress: bool | None = None,
    tables: Iterable[str] | None = None,
) -> Incident:
    """``load(paths)``, falling back to the repository root for relative paths (so bundled
    samples load from any working directory); raises ``NoInputError`` naming ``parameter``
    when nothing could be read."""
    incident = load(paths, year=year, engine=engine, progress=progress, tables=tables)
    if not incident.readable:
        items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
        alt = [CHECKOUT / os.fspath(p) for p in items if not os.path.isabs(os.fspath(p))]
        if alt and len(alt) == len(items) and any(a.exists() for a in alt):
            incident = load(alt, year=year, engine=engine, progress=progress, tables=tables)
    if not incident.readable:
        why = "; ".join(incident.account.get("warnings", [])[:3]) or "no file found"
        raise NoInputError(
            f"Nothing could be read from {parameter}={paths!r} ({why}): set {parameter} to a "
            "log file, a directory or a glob of the job's logs.")
    return incident


ENGINES = ("auto", "fast", "plain")
# Below this many bytes (or files) a process pool costs more than it saves.
POOL_MIN_BYTES = 16 * 1024 * 1024
POOL_MIN_FILES = 4


def load(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    year: int | None = None,
    engine: str = "auto",
    progress: bool | None = None,
    workers: int | None = None,
    tables: Iterable[str] | None = None,
) -> Incident:
    """Read every log and flight-recorder dump under ``paths`` into an ``Incident``.

    ``year`` dates glog-style timestamps (``[E708 01:47:23…]`` carry none); by default the
    year of an ISO timestamp in the same file, else of the file's modification time.

    ``engine``: ``"plain"`` reads every line through the parsers (the reference);
    ``"fast"`` (``traindoc.ingest``) gives the same tables and account while skipping, in
    bulk, the lines no parser can use; ``"auto"`` is ``"fast"`` where it is available.
    ``progress``: a progress bar (``tqdm.auto``) for loads that take more than a second;
    ``None`` shows it only on a terminal or in a notebook. ``workers``: processes reading
    files side by side when there are many files (``None``: one per CPU, up to 8; 1: none).
    ``tables``: fill only these tables (say ``["iterations"]`` for a loss or throughput
    question on a huge log): the other parsers do not run, the other tables stay empty, and
    failure-looking lines are not sampled as unrecognized.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
    if tables is not None:
        tables = sorted(set(tables) if not isinstance(tables, str) else {tables})
        unknown = [t for t in tables if t not in TABLES]
        if unknown:
            raise ValueError(f"unknown table(s) {unknown}: choose from {list(TABLES)}")
    if engine != "plain":
        from .ingest import fast_engine_status

        ok, why = fast_engine_status(parsers_for(tables)[1])
        if engine == "fast" and not ok:
            raise ValueError(f"the fast engine is not available here: {why}")
        engine = "fast" if ok else "plain"
    loader = _Loader(year, engine, tables=tables)
    loader.pipeline = workers is None or workers > 1
    files = expand_paths(paths, loader.acc)
    sizes = [_size(p) for p in files]
    bar = _progress_bar(progress, sum(sizes), len(files))
    try:
        n = _pool_size(workers, files, sizes)
        done = _load_pooled(loader, files, sizes, n, bar) if n > 1 else False
        if not done:
            _load_serial(loader, files, sizes, bar)
    finally:
        if bar is not None:
            bar.close()
    return _incident(loader)


def _incident(loader: _Loader) -> Incident:
    acc = loader.acc
    if acc.bad_bytes:
        acc.warn(f"{acc.bad_bytes} undecodable byte(s) replaced by U+FFFD")
    return Incident(
        loader.tables(),
        account={
            "paths": acc.paths,
            "files": len(acc.files),
            "file_list": acc.files,
            "lines": acc.lines,
            "parsed_lines": acc.parsed_lines,
            "unparsed_lines": acc.unparsed_lines,
            "rejoined_lines": acc.rejoined_lines,
            "truncated_lines": acc.truncated_lines,
            "bad_bytes": acc.bad_bytes,
            "dumps": acc.dumps,
            "warnings": acc.warnings,
            **({} if loader.want is None else {"tables": sorted(loader.want)}),
        },
        unrecognized=list(loader.unrecognized),
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _load_serial(loader: _Loader, files: list[Path], sizes: list[int], bar: Any) -> None:
    for path, size in zip(files, sizes, strict=True):
        if bar is not None:
            start = bar.n
            loader.progress = lambda done, start=start, size=size: bar.update(
                max(0, min(start + done, start + size) - bar.n))
        loader.load_file(path)
        if bar is not None:
            bar.update(max(0, start + size - bar.n))
    loader.progress = None


# -- many files: a process pool, merged in file order (the same result as one by one) ----------
def _pool_size(workers: int | None, files: list[Path], sizes: list[int]) -> int:
    if workers is not None:
        return max(1, min(workers, len(files)))
    if len(files) < POOL_MIN_FILES or sum(sizes) < POOL_MIN_BYTES:
        return 1
    return max(1, min(os.cpu_count() or 1, 8, len(files)))


def _load_group(args: tuple[list[str], int | None, str, list[str] | None]) -> dict[str, Any]:
    """Some consecutive files read by a fresh loader in a worker process: what the parent
    merges (its first warnings and unrecognized lines are the first of the group's)."""
    paths, year, engine, tables = args
    ld = _Loader(year, engine, tables=tables)
    for path in paths:
        ld.load_file(Path(path))
    a = ld.acc
    for t in TABLES:
        ld._flush(t)
    return {"frames": {t: f for t, f in ld.frames.items() if f}, "sources": ld.sources,
            "unrecognized": ld.unrecognized,
            "files": a.files, "warnings": a.warnings, "lines": a.lines,
            "parsed_lines": a.parsed_lines, "unparsed_lines": a.unparsed_lines,
            "bad_bytes": a.bad_bytes, "truncated_lines": a.truncated_lines,
            "rejoined_lines": a.rejoined_lines, "dumps": a.dumps}


def _groups(files: list[Path], sizes: list[int], n: int) -> list[list[int]]:
    """Consecutive runs of file indices, about ``4 * n`` of them, of similar total size."""
    target = max(1, sum(sizes) // (4 * n))
    out: list[list[int]] = [[]]
    acc = 0
    for i, size in enumerate(sizes):
        if out[-1] and acc + size > target:
            out.append([])
            acc = 0
        out[-1].append(i)
        acc += size
    return out


def _merge(loader: _Loader, part: dict[str, Any]) -> None:
    acc = loader.acc
    for t, frames in part["frames"].items():
        loader._flush(t)
        loader.frames[t].extend(frames)
    for t, names in part["sources"].items():
        loader.sources[t] |= names
    room = KEEP_UNRECOGNIZED - len(loader.unrecognized)
    if room > 0:
        loader.unrecognized.extend(part["unrecognized"][:room])
    acc.files.extend(part["files"])
    for w in part["warnings"]:
        acc.warn(w)
    for k in ("lines", "parsed_lines", "unparsed_lines", "bad_bytes", "truncated_lines",
              "rejoined_lines", "dumps"):
        setattr(acc, k, getattr(acc, k) + part[k])


def _load_pooled(loader: _Loader, files: list[Path], sizes: list[int], n: int,
                 bar: Any) -> bool:
    """Read ``files`` in ``n`` processes; False (nothing merged) when no pool can be had."""
    import concurrent.futures as cf
    import multiprocessing as mp

    method = "fork" if "fork" in mp.get_all_start_methods() and os.name == "posix" and (
        os.uname().sysname == "Linux") else "spawn"
    if loader.engine == "fast":  # built once here, inherited by forked workers
        from .ingest import registry

        registry(None, loader.line_parsers, loader.block_factories)
    groups = _groups(files, sizes, n)
    want = None if loader.want is None else sorted(loader.want)
    args = [([str(files[i]) for i in g], loader.year, loader.engine, want) for g in groups]
    parts = []
    try:
        with cf.ProcessPoolExecutor(n, mp_context=mp.get_context(method)) as pool:
            results = pool.map(_load_group, args)  # (the workers are forked here)
            # The results unpickle into millions of small containers (frames lists, rows):
            # the cyclic collector would walk them again and again (7 s of a 27 s load of
            # 1024 flight-recorder dumps); they hold no cycles, so it waits until the end.
            was = gc.isenabled()
            gc.disable()
            try:
                for part, g in zip(results, groups, strict=True):
                    parts.append(part)
                    if bar is not None:
                        bar.update(sum(sizes[i] for i in g))
            finally:
                if was:
                    gc.enable()
    except Exception:  # noqa: BLE001 - no pool (or a worker died): read them here instead
        if bar is not None:
            bar.reset()
        return False
    for part in parts:
        _merge(loader, part)
    return True


# -- progress -----------------------------------------------------------------------------
def _in_notebook() -> bool:
    """True inside a Jupyter kernel with a front end (where tqdm.auto draws a widget)."""
    import sys

    ip = sys.modules.get("IPython")
    if ip is None:
        return False
    try:
        shell = ip.get_ipython()
    except Exception:  # noqa: BLE001
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _progress_bar(progress: bool | None, total: int, files: int) -> Any:
    """A tqdm bar over the input bytes, shown after a second; None when off."""
    import sys

    if progress is False or total <= 0:
        return None
    if progress is None and not (_in_notebook() or getattr(sys.stderr, "isatty", lambda: False)()):
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    desc = f"loading {files} file{'s' if files != 1 else ''}"
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc,
                delay=0 if progress else 1.0, leave=False, dynamic_ncols=True)
