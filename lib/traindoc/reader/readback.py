"""The text of an iterations row read back from its file and line number (``file``,
``lineno``), for the handful of rows a finding shows: the same ``line`` the load gave it.

A text file is read in one sequential pass (gzip included): only the chunks that hold a wanted
line are decoded, and each wanted line, with the ``BEFORE`` lines before it and the
``MAX_WRAP_LINES`` after it (a wrapped record's continuations), goes through a ``LineReader``
of its own, whose row at that line gives the text (prefixes demultiplexed, ANSI stripped, wraps
rejoined, as the load did). A file a whole-file loader reads, UTF-16 text, or a file with a row
the windows did not give again (one its writer's earlier lines made) is read again whole.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ..parse import FILE_LOADERS
from .account import Account
from .decode import GZIP_MAGIC, UTF16_BOMS, Budget, chunks, decode, open_bytes
from .files import FileReader, file_origin
from .lines import MAX_WRAP_LINES, LineReader, Stream
from .sink import Sink

TABLE = "iterations"
BEFORE = 8  # lines read before a wanted one, for the record or header that leads to its row
Place = tuple[str, int | None]  # (file, line number): a row's ``file`` and ``lineno``


def texts(places: Iterable[Place]) -> dict[Place, str]:
    """The ``line`` of the iterations row at each place (file, line number), for the places
    whose file still holds a row there (a file gone or changed since the load: left out)."""
    wanted = set(places)
    by_file: dict[str, set[int | None]] = {}
    for name, lineno in wanted:
        # (a metric export's row names its entry after the path: "log.json#[0]")
        path = name if lineno is not None else name.split("#", 1)[0]
        by_file.setdefault(path, set()).add(lineno)
    out: dict[Place, str] = {}
    for path, linenos in by_file.items():
        got = _file_texts(path, {n for n in linenos if n is not None}, None in linenos)
        out.update({p: t for p, t in got.items() if p in wanted})
    return out


def _file_texts(name: str, linenos: set[int], whole: bool) -> dict[Place, str]:
    """The iterations rows' texts of file ``name`` at ``linenos`` (``whole``: every row's)."""
    path = Path(name)
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return {}
    if (any(loader.sniff(path, head) for loader in FILE_LOADERS)
            or head.startswith(UTF16_BOMS) or whole):
        return _whole(path)
    got = _windows(path, head, linenos)
    if any((name, n) not in got for n in linenos):
        # a row that its writer's earlier lines made (a block parser's record, a Keras bar
        # counted under the "Epoch 3/10" line before it): the file read again whole
        got = _whole(path)
    return got


def _whole(path: Path) -> dict[Place, str]:
    """Every iterations row's text of one file read again whole (by the reference engine)."""
    reader = FileReader(None, "plain", (TABLE,))
    reader.read(path)
    return _rows_texts(reader.sink)


def _windows(path: Path, head: bytes, linenos: set[int]) -> dict[Place, str]:
    """The texts at ``linenos`` of one text file: each wanted line and the lines that may
    continue it, through a fresh ``LineReader`` per run of such lines."""
    name = str(path)
    window: set[int] = {n + k for n in linenos for k in range(-BEFORE, MAX_WRAP_LINES + 1)}
    order = sorted(window)
    last = order[-1]
    acc = Account()
    sink = Sink(frozenset({TABLE}))
    lines = LineReader(acc, sink, (TABLE,))
    stream: Stream | None = None
    lineno = 0
    try:
        with open_bytes(path, head) as fh:
            for chunk in chunks(fh, acc, name, Budget(), 0, head.startswith(GZIP_MAGIC)):
                n = chunk.count(b"\n") + (0 if chunk.endswith(b"\n") else 1)
                if bisect_right(order, lineno + n) == bisect_right(order, lineno):  # none here
                    lineno += n
                    if stream is not None:
                        lines.end(stream)
                        stream = None
                    if lineno >= last:
                        break
                    continue
                raws = decode(chunk, acc).split("\n")
                if raws and raws[-1] == "":
                    raws.pop()
                for raw in raws:
                    lineno += 1
                    if lineno in window:
                        if stream is None:
                            stream = Stream(name, file_origin(path, name), None)
                        lines.physical(stream, raw, lineno)
                    elif stream is not None:
                        lines.end(stream)
                        stream = None
                if lineno >= last:
                    break
    except OSError:
        pass  # (what was read before is kept)
    if stream is not None:
        lines.end(stream)
    return _rows_texts(sink)


def _rows_texts(sink: Sink) -> dict[Place, str]:
    """The first text of each place among the sink's iterations rows."""
    df = sink.tables()[TABLE]
    out: dict[Place, str] = {}
    for f, n, text in zip(df["file"], df["lineno"], df["line"], strict=True):
        if isinstance(f, str) and isinstance(text, str):
            out.setdefault((f, None if n is None or n is pd.NA else int(n)), text)
    return out
