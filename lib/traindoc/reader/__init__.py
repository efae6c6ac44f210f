"""``load(paths) -> Incident``: one streaming pass over every log file of an incident.

Paths may be files, directories (walked recursively), globs or a list of these; files may be
plain, gzip or UTF-16. Each physical line is split into logical lines (carriage returns, a
rank prefix behind a tqdm bar), stripped of ANSI colour, demultiplexed by its launcher prefixes
into rank/host, rejoined when a terminal or paste wrapped it, and handed to the parsers of
``traindoc.parse``. Bad bytes are replaced and counted; nothing here raises on bad input: every
problem becomes a warning in ``Incident.account``.

Two engines give the same tables and account: ``plain`` (``lines``: every line through every
step, the reference) and ``fast`` (``fast``: the lines no parser or open record can use are
counted in bulk). Many files are read by a process pool, this machine's or any executor's (a
Dask cluster's), and merged in file order; rows become DataFrames every ``FLUSH_ROWS`` rows so
memory stays near the size of the tables.

The modules, each importing only those listed before it:

- ``account``: what was read, skipped and warned about (``Incident.account``)
- ``decode``: paths and globs to files, gzip, chunks ending on a line break, UTF-8 decoding
- ``sink``: rows into tables (``Incident.tables``)
- ``lines``: the line pipeline, ``LineReader`` (the reference engine)
- ``fast``: the fast engine, on ``LineReader``'s public steps
- ``files``: one file of any kind (whole-file loaders, UTF-16, text by either engine)
- ``pool``: many files in worker processes, here or on an executor (a Dask scheduler)
- ``readback``: the text of iterations rows read back from their files and line numbers
- ``progress``: the progress bar
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..incident import Incident
from ..locations import CHECKOUT
from ..schema import TABLES
from .decode import MAX_BYTES, MAX_GZIP_RATIO, MAX_TOTAL_BYTES, Budget, expand_paths, file_size
from .files import FileReader
from .lines import LineReader, merge_origin, parsers_for
from .pool import (
    SCHEDULER_ENV,
    SchedulerError,
    pool_size,
    read_on_executor,
    read_pooled,
    scheduler_executor,
)
from .progress import progress_bar
from .readback import texts
from .registry import fast_engine_status

ENGINES = ("auto", "fast", "plain")

PathsLike = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]


class NoInputError(RuntimeError):
    """Nothing at all could be read from the paths a runbook was given."""


def load_or_fail(
    paths: PathsLike,
    *,
    parameter: str = "log_path",
    year: int | None = None,
    engine: str = "auto",
    progress: bool | None = None,
    tables: Iterable[str] | None = None,
    max_bytes: int = MAX_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    max_gzip_ratio: float = MAX_GZIP_RATIO,
    executor: Executor | None = None,
    scheduler: str | None = None,
) -> Incident:
    """``load(paths)``, falling back to the repository root for relative paths (so bundled
    samples load from any working directory); raises ``NoInputError`` naming ``parameter``
    when nothing could be read (``SchedulerError`` when ``scheduler`` cannot be used)."""
    kw = {"year": year, "engine": engine, "progress": progress, "tables": tables,
          "max_bytes": max_bytes, "max_total_bytes": max_total_bytes,
          "max_gzip_ratio": max_gzip_ratio}
    with _executor(executor, scheduler) as ex:  # one connection for both tries
        incident = load(paths, executor=ex, **kw)
        if not incident.readable:
            items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
            alt = [CHECKOUT / os.fspath(p) for p in items if not os.path.isabs(os.fspath(p))]
            if alt and len(alt) == len(items) and any(a.exists() for a in alt):
                incident = load(alt, executor=ex, **kw)
    if not incident.readable:
        why = "; ".join(incident.account.warnings[:3]) or "no file found"
        raise NoInputError(
            f"Nothing could be read from {parameter}={paths!r} ({why}): set {parameter} to a "
            "log file, a directory or a glob of the job's logs.")
    return incident


def load(
    paths: PathsLike,
    *,
    year: int | None = None,
    engine: str = "auto",
    progress: bool | None = None,
    workers: int | None = None,
    tables: Iterable[str] | None = None,
    max_bytes: int = MAX_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
    max_gzip_ratio: float = MAX_GZIP_RATIO,
    executor: Executor | None = None,
    scheduler: str | None = None,
) -> Incident:
    """Read every log and flight-recorder dump under ``paths`` into an ``Incident``.

    ``year`` dates glog-style timestamps (``[E708 01:47:23…]`` carry none); by default the
    year of an ISO timestamp in the same file, else of the file's modification time.

    ``engine``: ``"plain"`` reads every line through the parsers (the reference);
    ``"fast"`` (``traindoc.reader.fast``) gives the same tables and account while skipping, in
    bulk, the lines no parser can use; ``"auto"`` is ``"fast"`` where it is available.
    ``progress``: a progress bar (``tqdm.auto``) for loads that take more than a second;
    ``None`` shows it only on a terminal or in a notebook. ``workers``: processes reading
    files side by side when there are many files (``None``: one per CPU, up to 8; 1: none).
    ``tables``: fill only these tables (say ``["iterations"]`` for a loss or throughput
    question on a huge log): the other parsers do not run, the other tables stay empty, and
    failure-looking lines are not sampled as unrecognized.

    Limits (a file cut short by one is a warning in the account, so a finding; raise them to
    read more): ``max_bytes`` from one file, after decompression (16 GiB);
    ``max_total_bytes`` from all files together (64 GiB); ``max_gzip_ratio``: a gzip file
    stops expanding at this many times its size once it gave 128 MiB (100; a gzip bomb).
    Only regular files are read (a FIFO or a device is a warning), each real file once.

    Past one machine: ``executor``, any ``concurrent.futures.Executor`` (Dask's
    ``Client(...).get_executor()``, a ``ProcessPoolExecutor``), reads groups of consecutive
    files in its workers, which must see the same paths (a shared filesystem); the parts merge
    here in file order, giving the tables and account of a local load (``workers`` is then
    unused). Its workers share no byte counter, so each keeps the per-file limits and
    ``max_total_bytes`` is enforced here, at merge time: from the first group that would reach
    it, the files are read here with what is left, as a serial load would cut them.
    ``scheduler``: the address of a Dask scheduler (``"tcp://host:8786"``; empty or None:
    the environment variable ``TRAINDOC_SCHEDULER``, else this machine) whose executor is
    used; needs ``pip install 'traindoc[cluster]'``. ``SchedulerError`` (naming the parameter)
    when Dask is not installed, no scheduler answers within ``pool.SCHEDULER_TIMEOUT_S`` (the
    handshake included), or what answers is no Dask scheduler. A Dask scheduler can run code
    in the process that connects to it: name only a scheduler you control (``tls://``
    addresses use Dask's TLS settings, ``distributed.comm.tls.*`` in Dask's config).
    An executor's own failure (a lost worker) is raised, not read around.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
    if tables is not None:
        tables = sorted(set(tables) if not isinstance(tables, str) else {tables})
        unknown = [t for t in tables if t not in TABLES]
        if unknown:
            raise ValueError(f"unknown table(s) {unknown}: choose from {list(TABLES)}")
    if engine != "plain":
        ok, why = fast_engine_status(parsers_for(tables)[1])
        if engine == "fast" and not ok:
            raise ValueError(f"the fast engine is not available here: {why}")
        engine = "fast" if ok else "plain"
    budget = Budget(max_bytes, max_total_bytes, max_gzip_ratio)
    reader = FileReader(year, engine, tables=tables, pipeline=workers is None or workers > 1,
                        budget=budget)
    with _executor(executor, scheduler) as ex:
        files = expand_paths(paths, reader.acc)
        sizes = [file_size(p) for p in files]
        bar = progress_bar(progress, sum(sizes), len(files))
        try:
            if ex is not None:
                k = read_on_executor(reader, files, sizes, ex, bar)
                _read_serial(reader, files[k:], sizes[k:], bar)
            else:
                n = pool_size(workers, files, sizes)
                done = read_pooled(reader, files, sizes, n, bar) if n > 1 else False
                if not done:
                    _read_serial(reader, files, sizes, bar)
        finally:
            if bar is not None:
                bar.close()
    return _incident(reader)


@contextmanager
def _executor(executor: Executor | None, scheduler: str | None) -> Iterator[Executor | None]:
    """The executor a load reads on: ``executor``, else one on the Dask scheduler that
    ``scheduler`` or ``TRAINDOC_SCHEDULER`` names, else None (this machine)."""
    if scheduler is not None and not isinstance(scheduler, str):
        raise ValueError(f"scheduler must be a Dask scheduler's address, not {scheduler!r}")
    if executor is not None:
        if scheduler:
            raise ValueError("give executor or scheduler, not both")
        yield executor
        return
    name = "scheduler"
    if not (scheduler or "").strip():
        scheduler, name = os.environ.get(SCHEDULER_ENV, ""), SCHEDULER_ENV
    if not scheduler.strip():
        yield None
        return
    with scheduler_executor(scheduler.strip(), name) as ex:
        yield ex


def _incident(reader: FileReader) -> Incident:
    acc = reader.acc
    if acc.bad_bytes:
        acc.warn(f"{acc.bad_bytes} undecodable byte(s) replaced by U+FFFD")
    return Incident(
        reader.sink.tables(),
        account=acc.summary(None if reader.want is None else sorted(reader.want)),
        unrecognized=list(reader.lines.unrecognized),
        reread=texts,
    )


def _read_serial(reader: FileReader, files: list[Path], sizes: list[int], bar: Any) -> None:
    for path, size in zip(files, sizes, strict=True):
        if bar is not None:
            start = bar.n
            reader.progress = lambda done, start=start, size=size: bar.update(
                max(0, min(start + done, start + size) - bar.n))
        reader.read(path)
        if bar is not None:
            bar.update(max(0, start + size - bar.n))
    reader.progress = None


__all__ = ["ENGINES", "MAX_BYTES", "MAX_GZIP_RATIO", "MAX_TOTAL_BYTES", "SCHEDULER_ENV",
           "FileReader", "LineReader", "NoInputError", "SchedulerError", "expand_paths", "load",
           "load_or_fail", "merge_origin", "parsers_for"]
