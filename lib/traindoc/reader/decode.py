"""Where the bytes come from: paths, directories and globs to files, gzip or plain, read in
chunks that end on a line break, decoded as UTF-8 (bad bytes replaced and counted).

Above ``account`` only: it knows nothing of lines or parsers.
"""

from __future__ import annotations

import glob as _glob
import gzip
import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .account import Account

CHUNK_BYTES = 4 * 1024 * 1024
MAX_LINE_CHARS = 1024 * 1024  # a longer line is cut to this many characters (and reported)
# In a walked directory, files that are never logs: a bundle's README, scripts, expectations.
SKIP_NAMES = {"drill.json", "expected.json"}
SKIP_SUFFIXES = (".md", ".py", ".sh", ".png", ".ipynb", ".pyc")
GZIP_MAGIC = b"\x1f\x8b"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def expand_paths(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                 account: Account | None = None) -> list[Path]:
    """Files named by ``paths`` (files, directories, globs), sorted, each once."""
    acc = account or Account()
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


def open_bytes(path: Path, head: bytes) -> Any:
    """A binary file object for ``path``: gunzipped when ``head`` starts like gzip."""
    if head.startswith(GZIP_MAGIC):
        return gzip.open(path, "rb")
    return open(path, "rb")  # noqa: SIM115


def chunks(fh: Any, acc: Account, name: str) -> Iterator[bytes]:
    """Raw byte chunks, ending on a line break where possible; gzip errors become warnings."""
    for buf, start, end in spans(fh, acc, name):
        yield buf if start == 0 and end == len(buf) else buf[start:end]


def spans(fh: Any, acc: Account, name: str) -> Iterator[tuple[bytes, int, int]]:
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


def decode(data: bytes, acc: Account) -> str:
    """``data`` as UTF-8 text with NULs removed; undecodable bytes become U+FFFD, counted in
    ``acc.bad_bytes`` (at least one per piece that had any)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        before = data.count("\ufffd".encode())
        text = data.decode("utf-8", errors="replace")
        acc.bad_bytes += max(text.count("\ufffd") - before, 1)
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text


def file_size(path: Path) -> int:
    """The size of ``path`` in bytes (0 when it cannot be read)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def bytes_read(fh: Any) -> int | None:
    """How many bytes of the file under ``fh`` were read so far (the compressed bytes of a
    gzip file); None when it cannot tell."""
    raw = getattr(fh, "fileobj", None) or fh
    try:
        return raw.tell()
    except (OSError, ValueError, AttributeError):
        return None
