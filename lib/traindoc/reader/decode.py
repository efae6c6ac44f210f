"""Where the bytes come from: paths, directories and globs to regular files (each real file
once, however many links lead to it), gzip or plain, read in chunks that end on a line break,
within the byte limits of a load (``Budget``), decoded as UTF-8 (bad bytes replaced and counted).

Above ``account`` only: it knows nothing of lines or parsers.
"""

from __future__ import annotations

import errno
import glob as _glob
import gzip
import os
import re
import stat
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .account import Account

CHUNK_BYTES = 4 * 1024 * 1024
MAX_LINE_CHARS = 1024 * 1024  # a longer line is cut to this many characters (and reported)
# A physical line longer than this many bytes is read up to here; the rest of it is skipped.
MAX_LINE_BYTES = 4 * MAX_LINE_CHARS
# In a walked directory, files that are never logs: a bundle's README, scripts, expectations.
SKIP_NAMES = {"drill.json", "expected.json"}
SKIP_SUFFIXES = (".md", ".py", ".sh", ".png", ".ipynb", ".pyc")
# Of those, the text a log is pasted into: read when a directory holds nothing else.
NOTE_SUFFIXES = (".md",)
GZIP_MAGIC = b"\x1f\x8b"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")

# The byte limits of a load (``load(max_bytes=…, max_total_bytes=…, max_gzip_ratio=…)``).
MAX_BYTES = 16 * 1024**3  # read from one file (after decompression)
MAX_TOTAL_BYTES = 64 * 1024**3  # read from all files together
MAX_GZIP_RATIO = 100  # a compressed file may expand this many times its size …
GZIP_RATIO_FROM = 128 * 1024**2  # … once it gave this many bytes (small files expand freely)
GLOB_MAGIC_RE = re.compile(r"[*?[]")


class Budget:
    """The bytes a load may still read: ``max_bytes`` from one file, ``max_total_bytes`` from
    all (``total``: a counter shared with worker processes, a ``multiprocessing.Value``; None:
    this process alone), and a gzip file at most ``max_gzip_ratio`` times its size (past
    ``GZIP_RATIO_FROM``). A file cut short is reported in the account's warnings."""

    def __init__(self, max_bytes: int = MAX_BYTES, max_total_bytes: int = MAX_TOTAL_BYTES,
                 max_gzip_ratio: float = MAX_GZIP_RATIO, total: Any = None) -> None:
        for name, v in (("max_bytes", max_bytes), ("max_total_bytes", max_total_bytes),
                        ("max_gzip_ratio", max_gzip_ratio)):
            if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
                raise ValueError(f"{name} must be a positive number, not {v!r}")
        self.max_bytes = int(max_bytes)
        self.max_total_bytes = int(max_total_bytes)
        self.max_gzip_ratio = float(max_gzip_ratio)
        self.total = total
        self.used = 0  # read by this process (when there is no shared counter)

    def args(self) -> tuple[int, int, float]:
        """The limits, to make the same budget in a worker process."""
        return self.max_bytes, self.max_total_bytes, self.max_gzip_ratio

    def file_limit(self, size: int, compressed: bool) -> tuple[int, str]:
        """The most bytes one file of ``size`` bytes on disk may give, and the limit's name."""
        if compressed:
            by_ratio = max(GZIP_RATIO_FROM, int(size * self.max_gzip_ratio))
            if by_ratio < self.max_bytes:
                return by_ratio, (f"it expands more than max_gzip_ratio={self.max_gzip_ratio:g} "
                                  "times its size (a gzip bomb?)")
        return self.max_bytes, f"the per-file limit max_bytes={self.max_bytes}"

    def take(self, n: int) -> int:
        """Count ``n`` bytes against the total; how many of them are within it."""
        if self.total is None:
            room = self.max_total_bytes - self.used
            self.used += max(0, min(n, room))
            return max(0, min(n, room))
        with self.total.get_lock():
            room = self.max_total_bytes - self.total.value
            got = max(0, min(n, room))
            self.total.value += got
        return got


def _is_magic(s: str) -> bool:
    return GLOB_MAGIC_RE.search(s) is not None


def _component_re(part: str) -> re.Pattern[str]:
    """One path component of a glob (``*``, ``?``, ``[…]``) as a regex; a name starting with a
    dot matches only a pattern starting with one (as ``glob`` does)."""
    out = []
    i = 0
    while i < len(part):
        c = part[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = part.find("]", i + 2 if part[i + 1 : i + 2] in ("!", "]") else i + 1)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = part[i + 1 : j].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    lead = "" if part.startswith(".") else "(?!\\.)"
    return re.compile(lead + "".join(out) + r"\Z", re.DOTALL)


def walk(top: str, seen: set[str] | None = None, warn: Callable[[str], None] | None = None,
         ) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top)`` top-down with sorted names (the caller may prune ``dirs``), following
    links to directories but entering each real directory once: a link to ``..`` cannot make it
    loop, nor a link to a sibling read its files twice (``seen``: real directories already
    walked, shared between walks). A folder that cannot be listed (no permission, a path over
    the system's length limit in a deep tree) is skipped, and said through ``warn``."""
    seen = set() if seen is None else seen
    stack = [top]
    while stack:
        d = stack.pop()
        real = os.path.realpath(d)
        if real in seen:
            continue
        seen.add(real)
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            if warn is not None:
                what = ("its path is over the system's length limit"
                        if e.errno == errno.ENAMETOOLONG else (e.strerror or str(e)))
                warn(f"{d[:200]}{'…' if len(d) > 200 else ''}: a folder that cannot be read "
                     f"({what}); skipped with what it holds")
            continue
        dirs, names = [], []
        for e in entries:
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else names).append(e.name)
        yield d, dirs, names
        stack.extend(os.path.join(d, x) for x in reversed(dirs))


def glob_paths(pattern: str) -> list[str]:
    """``glob.glob(pattern, recursive=True)``, sorted, but ``**`` walks each real directory
    once (``walk``) instead of growing with every link to a directory above it."""
    if "**" not in pattern:
        return sorted(_glob.glob(pattern))
    dir_only = pattern.endswith(os.sep)
    parts = pattern.rstrip(os.sep).split(os.sep)
    first = next(i for i, p in enumerate(parts) if _is_magic(p))
    root = os.sep.join(parts[:first]) or ("" if not pattern.startswith(os.sep) else os.sep)
    rest = parts[first:]
    top = root or os.curdir
    hits: set[str] = set()
    if not os.path.isdir(top):
        return []
    if root and _match(rest, []):
        hits.add(os.path.join(root, ""))
    for d, dirs, names in walk(top):
        rel = os.path.relpath(d, top)
        rel_parts = [] if rel == os.curdir else rel.split(os.sep)
        for n in dirs if dir_only else dirs + names:
            if _match(rest, [*rel_parts, n]):
                q = os.path.join(root, *rel_parts, n) if root else os.path.join(*rel_parts, n)
                hits.add(os.path.join(q, "") if dir_only else q)
    return sorted(hits)


def _match(pattern: list[str], names: list[str]) -> bool:
    """Whether the path ``names`` matches the glob components ``pattern`` (``**``: any number
    of components, none starting with a dot)."""
    if not pattern:
        return not names
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        for k in range(len(names) + 1):
            if k and names[k - 1].startswith("."):
                break
            if _match(rest, names[k:]):
                return True
        return False
    if not names:
        return False
    ok = (_component_re(head).match(names[0]) is not None if _is_magic(head)
          else head == names[0])
    return ok and _match(rest, names[1:])


# Kernel interfaces that look like regular files but never end or block a read for ever
# (/proc/kmsg waits for the next kernel message): never opened, wherever a link points.
# (/dev is judged by the file's type: /dev/shm holds regular files that may be logs.)
KERNEL_DIRS = ("/proc/", "/sys/")

# Binary files that sit beside logs (core dumps, executables, checkpoints, images, archives),
# recognised from their first bytes: (magic, offset, what it is).
BINARY_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"\x7fELF", 0, "an ELF file (a core dump, an executable or a library)"),
    (b"PK\x03\x04", 0, "a zip archive (a torch checkpoint, a wheel)"),
    (b"\x93NUMPY", 0, "a NumPy array"),
    (b"\x89HDF\r\n\x1a\n", 0, "an HDF5 file"),
    (b"\x89PNG\r\n\x1a\n", 0, "a PNG image"),
    (b"\xff\xd8\xff", 0, "a JPEG image"),
    (b"GIF8", 0, "a GIF image"),
    (b"%PDF-", 0, "a PDF document"),
    (b"SQLite format 3\x00", 0, "an SQLite database"),
    (b"\xfd7zXZ\x00", 0, "an xz archive"),
    (b"\x28\xb5\x2f\xfd", 0, "a zstd archive"),
    (b"7z\xbc\xaf\x27\x1c", 0, "a 7-zip archive"),
    (b"1AY&SY", 4, "a bzip2 archive"),
    (b"ustar", 257, "a tar archive"),
    (b"\xcf\xfa\xed\xfe", 0, "a Mach-O file"),
    (b"\x7fCUDA", 0, "a CUDA core dump"),
)


def binary_kind(head: bytes) -> str | None:
    """What binary file ``head`` (a file's first bytes) starts, or None for anything that may
    be text. Only signatures: a log with NUL bytes (a hole after a crash) is still read."""
    for magic, at, what in BINARY_MAGIC:
        if head[at:at + len(magic)] == magic:
            return what
    if len(head) >= 3 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "a Python pickle (not a flight-recorder dump)"
    if len(head) >= 10 and head[8:10] == b'{"' and int.from_bytes(head[:8], "little") < 2**27:
        return "a safetensors file"
    return None


def not_regular(path: Path) -> str | None:
    """Why ``path`` is no regular file to read (a FIFO, a device, a socket, a kernel
    interface under /proc, /sys or /dev, also through a link), or None. Never opens it."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # missing or unreadable: said when it is read
    real = os.path.realpath(path)
    if real.startswith(KERNEL_DIRS):
        return (f"{path}: {'a link to ' if real != os.path.abspath(path) else ''}{real}, a kernel "
                "interface, not a log; skipped (never opened)")
    if stat.S_ISREG(mode):
        return None
    kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket"
            if stat.S_ISSOCK(mode) else "not a regular file")
    return f"{path}: {kind}; skipped (only regular files are read)"


def expand_paths(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                 account: Account | None = None) -> list[Path]:
    """Regular files named by ``paths`` (files, directories, globs), sorted, each real file
    once; anything else is a warning in ``account``."""
    acc = account or Account()
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    out: dict[str, Path] = {}
    real: set[str] = set()

    walked: set[str] = set()

    def add(q: Path) -> None:
        r = os.path.realpath(q)
        if str(q) in out or r in real:
            return
        real.add(r)
        why = not_regular(q)
        if why is not None:
            acc.warn(why)
            return
        out[str(q)] = q

    for raw in paths:
        s = os.fspath(raw)
        acc.paths.append(s)
        if _is_magic(s) and not os.path.exists(s):
            hits = glob_paths(s)
            if not hits:
                acc.warn(f"{s}: the glob matched no file")
            candidates = [Path(h) for h in hits]
        else:
            candidates = [Path(s)]
        for p in candidates:
            if p.is_dir():
                if os.path.realpath(p) in walked:
                    continue  # walked already (named twice, or reached through a link)
                found = False
                notes: list[Path] = []
                for root, dirs, names in walk(str(p), walked, acc.warn):
                    dirs[:] = [d for d in dirs if not d.startswith(".")]
                    for n in names:
                        if n.startswith(".") or n.lower() in SKIP_NAMES or n.lower().endswith(
                            SKIP_SUFFIXES
                        ):
                            if n.lower().endswith(NOTE_SUFFIXES) and not n.startswith("."):
                                notes.append(Path(root) / n)
                            continue
                        found = True
                        add(Path(root) / n)
                if not found and notes:
                    # a log pasted into a note (error.md) when nothing else is there
                    acc.warn(f"{p}: the directory holds no log file; read "
                             f"{', '.join(q.name for q in notes)} as the log")
                    for q in notes:
                        add(q)
                elif not found:
                    acc.warn(f"{p}: the directory holds no file")
            elif p.is_symlink() and not p.exists():
                acc.warn(f"{p}: a broken symbolic link")
            elif not p.exists():
                acc.warn(f"{p}: no such file or directory")
            else:
                add(p)
    return list(out.values())


def open_bytes(path: Path, head: bytes) -> Any:
    """A binary file object for ``path``: gunzipped when ``head`` starts like gzip."""
    if head.startswith(GZIP_MAGIC):
        return gzip.open(path, "rb")
    return open(path, "rb")  # noqa: SIM115


def chunks(fh: Any, acc: Account, name: str, budget: Budget | None = None,
           size: int = 0, compressed: bool = False) -> Iterator[bytes]:
    """Raw byte chunks, ending on a line break where possible (``spans``, copied out)."""
    for buf, start, end in spans(fh, acc, name, budget, size, compressed):
        yield buf if start == 0 and end == len(buf) else buf[start:end]


def _char_start(data: bytes) -> bytes:
    """``data`` less a UTF-8 character cut at its end."""
    for k in range(1, min(4, len(data)) + 1):
        b = data[-k]
        if b < 0x80:
            return data
        if b >= 0xC0:  # the lead byte of the last character: whole if it has all its bytes
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            return data if k >= need else data[:-k]
    return data


def spans(fh: Any, acc: Account, name: str, budget: Budget | None = None, size: int = 0,
          compressed: bool = False) -> Iterator[tuple[bytes, int, int]]:
    """Byte chunks ``buffer[start:end]`` ending on a line break where possible, without
    copying whole blocks: the line cut by a block's end comes as a small chunk of its own, then
    the rest of the next block in place (a line break just before ``start``).

    A line longer than ``MAX_LINE_BYTES`` comes as its first ``MAX_LINE_BYTES`` and the rest of
    it is skipped (one line still, reported). ``budget``: reading stops, on a line break, at
    the file's limit (``size``: its bytes on disk; ``compressed``: gzip) or the load's total,
    reported. Gzip errors become warnings."""
    # read1: a gzip cut short raises only on the read that hits the cut, after the data before it
    rest = b""
    read = getattr(fh, "read1", fh.read)
    limit, why = budget.file_limit(size, compressed) if budget is not None else (0, "")
    used = 0
    cut_short = False  # the budget stopped the reading
    skipped: int | None = None  # inside an overlong line: how many of its bytes were skipped
    while True:
        try:
            block = read(CHUNK_BYTES)
        except (EOFError, OSError, zlib.error) as e:
            acc.warn(f"{name}: stopped reading early ({type(e).__name__}: {e}); "
                     "kept what came before (a gzip cut short?)")
            block = b""
        final = not block
        if budget is not None and block:
            want = min(len(block), max(0, limit - used))
            got = budget.take(want)
            used += got
            if got < len(block):  # stop at the last whole line within the limit
                final = cut_short = True
                if got < want:
                    why = f"the limit for all files together, max_total_bytes={budget.max_total_bytes}"
                block = block[: block.rfind(b"\n", 0, got) + 1]
                if not block:
                    rest = b""
        if skipped is not None:
            nl = block.find(b"\n")
            skipped += len(block) if nl < 0 else nl
            if nl < 0 and not final:
                continue
            acc.warn(f"{name}: a line of {MAX_LINE_BYTES + skipped} bytes: only its first "
                     f"{MAX_LINE_BYTES} bytes were read")
            skipped = None
            block = block[nl + 1 :] if nl >= 0 else b""
            if not block and not final:
                continue
        if not block:
            if rest:
                yield rest, 0, len(rest)
            break
        cut = block.rfind(b"\n")
        if cut < 0:  # (not final: a final block ends on a line break or is empty)
            block = rest + block
            rest = b""
            if len(block) > MAX_LINE_BYTES:  # its head is the line; the rest of it is skipped
                head = _char_start(block[:MAX_LINE_BYTES])
                skipped = len(block) - MAX_LINE_BYTES
                yield head, 0, len(head)
            else:
                rest = block
            continue
        start = 0
        if rest:
            first = block.find(b"\n") + 1
            joint = rest + block[:first]
            if len(joint) > MAX_LINE_BYTES:  # a long line: read with what follows
                yield b"".join((rest, memoryview(block)[: cut + 1])), 0, len(rest) + cut + 1
                start = cut + 1
            else:
                yield joint, 0, len(joint)
                start = first
        if start <= cut:
            yield block, start, cut + 1
        rest = block[cut + 1 :]
        if final:
            break
    if cut_short:
        acc.warn(f"{name}: only its first {used} bytes were read: {why} (raise it to read "
                 "the rest)")


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
