"""One file of any kind into tables: a whole-file loader's (a flight-recorder dump, a metrics
export, a py-spy JSON or benchmark CSV: ``parse.FILE_LOADERS``, tried first by their sniff), or a
text log (plain, gzip or UTF-16) through the line pipeline, by the reference engine
(``lines.LineReader``) or the fast one (``fast.read_text``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path

import pandas as pd

from ..parse import FILE_LOADERS, FileLoader
from ..parse.prefixes import Origin, path_origin
from .account import Account
from .bulk import Lane
from .decode import (
    GZIP_MAGIC,
    MAX_LINE_BYTES,
    UTF16_BOMS,
    Budget,
    binary_kind,
    bytes_read,
    chunks,
    not_regular,
    open_bytes,
)
from .fast import PrefixCache, read_text
from .lines import LineReader, Stream
from .registry import Registry
from .sink import Sink

# the first date with a time of day in a file's head: the year its glog/absl times (which carry
# none) are of, where a line before the first dated one would otherwise take the file's
# modification year (a torchrun warning "W0710 16:55:26.227000 105975 …" above srun's
# "CANCELLED AT 2025-07-10T16:55:26")
DATED_RE = re.compile(rb"(?<!\d)(20\d\d)[-/](?:0[1-9]|1[0-2])[-/][0-3]\d[ T_][0-2]\d:[0-5]\d:[0-5]\d")
YEAR_SCAN_BYTES = 1 << 20


def dated_year(path: Path, head: bytes) -> int | None:
    """The year of the first ISO-style date and time in the file's first ``YEAR_SCAN_BYTES``
    (gunzipped), or None."""
    try:
        with open_bytes(path, head) as fh:
            m = DATED_RE.search(fh.read(YEAR_SCAN_BYTES))
    except (OSError, EOFError):
        return None
    return int(m[1]) if m else None



def file_origin(path: Path | str, name: str) -> Origin:
    """The writer a log file's path implies (``path_origin``), with the one sibling that
    matters: ``X.rank1`` beside ``X`` makes ``X`` rank 0's (detectron2's ``log.txt``)."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    beside = (f"{base}.rank1",) if os.path.exists(f"{path}.rank1") else ()
    return path_origin(name, beside)


class FileReader:
    """Reads files, one after the other, into one ``sink`` and ``acc``.

    ``year`` dates glog-style times (None: each file's own); ``engine``: "plain" (the
    reference, line by line) or "fast"; ``tables``: only the parsers that fill these run (None:
    all); ``pipeline``: a big file's chunks may be planned in a child process (fast engine);
    ``budget``: the bytes the files may give (``decode.Budget``; None: the default limits)."""

    def __init__(self, year: int | None, engine: str = "plain",
                 tables: Iterable[str] | None = None, pipeline: bool = False,
                 budget: Budget | None = None) -> None:
        self.acc = Account()
        self.want = None if tables is None else frozenset(tables)
        self.sink = Sink(self.want, self.acc.unreadable_value)
        self.lines = LineReader(self.acc, self.sink, self.want)
        self.year = year
        self.engine = engine
        # the fast engine's view of the parsers and memo of line writers, for every file read
        # (and the bulk lane of its iteration lines)
        reg = Registry(None, self.lines.line_parsers, self.lines.block_factories) \
            if engine == "fast" else None
        self.fast = (reg, PrefixCache(), Lane.make(reg, self.lines.line_parsers)) \
            if reg is not None else None
        self.pipeline = pipeline
        self.budget = budget if budget is not None else Budget()
        self.progress: Callable[[int], None] | None = None  # called with the bytes read so far

    def read(self, path: Path) -> None:
        """Read one file (problems become warnings in ``acc``)."""
        name = str(path)
        why = not_regular(path)
        if why is not None:  # a FIFO would block the open, a device never end
            self.acc.warn(why)
            return
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
                self._whole(loader, path, st.st_size)
                return
        what = binary_kind(head)
        if what is not None:  # a multi-GiB core dump read as text took hours
            self.acc.warn(f"{name}: {what}, recognised from its first bytes; skipped (not text)")
            return
        self.acc.files.append(name)
        if not head:
            self.acc.warn(f"{name}: empty file")
            return
        year = self.year or dated_year(path, head) or datetime.fromtimestamp(st.st_mtime).year
        stream = Stream(name, file_origin(path, name), year)
        if head.startswith(UTF16_BOMS) and head[2:400].count(b"\x00") * 3 > len(head[2:400]):
            self._utf16(path, stream, st.st_size)
            return
        if b"\x00" in head and not head.startswith(GZIP_MAGIC):
            self.acc.warn(f"{name}: holds NUL bytes (binary data?); read as text with NULs removed")
        if self.fast is not None:
            read_text(self.lines, path, head, stream, *self.fast, pipeline=self.pipeline,
                      progress=self.progress, budget=self.budget, size=st.st_size)
            return
        lineno = 0
        try:
            with open_bytes(path, head) as fh:
                for chunk in chunks(fh, self.acc, name, self.budget, st.st_size,
                                    head.startswith(GZIP_MAGIC)):
                    if self.progress is not None and (done := bytes_read(fh)) is not None:
                        self.progress(done)
                    lineno = self.lines.read_chunk(stream, chunk, lineno)
        except OSError as e:
            self.acc.warn(f"{name}: reading stopped at line {lineno} ({e})")
        self.lines.end(stream)

    def _utf16(self, path: Path, stream: Stream, size: int) -> None:
        self.acc.warn(f"{path}: UTF-16 text, decoded as such")
        lineno = 0
        limit, why = self.budget.file_limit(size, False)
        used = 0
        try:
            with open(path, encoding="utf-16", errors="replace", newline="") as fh:
                while raw := fh.readline(MAX_LINE_BYTES // 2):
                    n = 2 * len(raw)
                    if not raw.endswith("\n"):  # an overlong line: the rest of it is skipped
                        while more := fh.readline(MAX_LINE_BYTES // 2):
                            n += 2 * len(more)
                            if more.endswith("\n"):
                                break
                    got = self.budget.take(min(n, max(0, limit - used)))
                    used += got
                    if got < n:
                        if used >= limit:
                            self.acc.warn(f"{path}: only its first {used} bytes were read: {why} "
                                          "(raise it to read the rest)")
                        else:
                            self.acc.warn(f"{path}: only its first {used} bytes were read: the "
                                          "limit for all files together, max_total_bytes="
                                          f"{self.budget.max_total_bytes} (raise it to read the "
                                          "rest)")
                        break
                    lineno += 1
                    self.lines.physical(stream, raw.rstrip("\n"), lineno)
        except (OSError, UnicodeError) as e:
            self.acc.warn(f"{path}: reading stopped at line {lineno} ({e})")
        self.lines.end(stream)

    def _whole(self, loader: FileLoader, path: Path, size: int) -> None:
        """A whole-file loader's tables: as DataFrames where it gives them (``load_frames``:
        flight-recorder dumps, no dict per row), else as rows. A file over the budget's limits
        is not loaded (said in a warning)."""
        what = "flight-recorder dump" if loader.kind == "dump" else f"{loader.name} file"
        if size > self.budget.max_bytes:
            self.acc.warn(f"{path}: {what} not loaded: {size} bytes is over the per-file limit "
                          f"max_bytes={self.budget.max_bytes} (raise it to read the file)")
            return
        if self.budget.take(size) < size:
            self.acc.warn(f"{path}: {what} not loaded: over the limit for all files together, "
                          f"max_total_bytes={self.budget.max_total_bytes} (raise it to read the "
                          "file)")
            return
        try:
            got = loader.load_frames(path) if loader.load_frames is not None else loader.load(path)
        except (OSError, ValueError, RecursionError, OverflowError) as e:  # (never a traceback)
            why = "nested too deep to read" if isinstance(e, RecursionError) else str(e)
            self.acc.warn(f"{path}: {what} not loaded: {why}")
            return
        if loader.kind == "dump":
            self.acc.dumps += 1
            if loader.load_frames is None:
                no_rank = bool(got) and got[0][1].get("rank") is None
            else:
                first = next((df for df in got.values() if len(df)), None)
                no_rank = first is not None and "rank" in first and pd.isna(first["rank"].iloc[0])
            if no_rank:
                self.acc.warn(f"{path}: flight-recorder dump whose file name carries no rank")
        self.acc.files.append(str(path))
        if loader.load_frames is not None:
            for table, df in got.items():
                self.sink.add_frame(table, df)
            return
        self.sink.add_rows(got)
