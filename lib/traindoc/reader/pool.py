"""Many files read side by side: consecutive groups of files, each read by a fresh
``FileReader`` in a worker process, merged in file order (the same result as one by one).
"""

from __future__ import annotations

import concurrent.futures as cf
import gc
import multiprocessing as mp
import os
from pathlib import Path
from typing import Any

from .account import Account
from .decode import Budget
from .fast import registry
from .files import FileReader
from .lines import KEEP_UNRECOGNIZED

# Below this many bytes (or files) a process pool costs more than it saves.
POOL_MIN_BYTES = 16 * 1024 * 1024
POOL_MIN_FILES = 4
_TOTAL: Any = None  # in a worker: the bytes all workers read so far (``Budget.total``)


def _init_worker(total: Any) -> None:
    global _TOTAL
    _TOTAL = total


def pool_size(workers: int | None, files: list[Path], sizes: list[int]) -> int:
    """How many processes read ``files`` (``workers``: as asked; None: one per CPU, up to 8,
    when there are enough files and bytes; 1: no pool)."""
    if workers is not None:
        return max(1, min(workers, len(files)))
    if len(files) < POOL_MIN_FILES or sum(sizes) < POOL_MIN_BYTES:
        return 1
    return max(1, min(os.cpu_count() or 1, 8, len(files)))


def _read_group(args: tuple[list[str], int | None, str, list[str] | None,
                              tuple[int, int, float]]) -> dict[str, Any]:
    """Some consecutive files read by a fresh reader in a worker process: what the parent
    merges (its first warnings and unrecognized lines are the first of the group's)."""
    paths, year, engine, tables, limits = args
    reader = FileReader(year, engine, tables=tables, budget=Budget(*limits, total=_TOTAL))
    for path in paths:
        reader.read(Path(path))
    frames, sources = reader.sink.parts()
    return {"frames": frames, "sources": sources, "unrecognized": reader.lines.unrecognized,
            "account": reader.acc}


def _groups(sizes: list[int], n: int) -> list[list[int]]:
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


def _merge(reader: FileReader, part: dict[str, Any]) -> None:
    reader.sink.absorb(part["frames"], part["sources"])
    unrecognized = reader.lines.unrecognized
    room = KEEP_UNRECOGNIZED - len(unrecognized)
    if room > 0:
        unrecognized.extend(part["unrecognized"][:room])
    acc: Account = part["account"]
    reader.acc.absorb(acc)


def read_pooled(reader: FileReader, files: list[Path], sizes: list[int], n: int,
                bar: Any) -> bool:
    """Read ``files`` in ``n`` processes into ``reader``; False (nothing merged) when no pool
    can be had."""
    method = "fork" if "fork" in mp.get_all_start_methods() and os.name == "posix" and (
        os.uname().sysname == "Linux") else "spawn"
    if reader.engine == "fast":  # built once here, inherited by forked workers
        registry(None, reader.lines.line_parsers, reader.lines.block_factories)
    groups = _groups(sizes, n)
    want = None if reader.want is None else sorted(reader.want)
    limits = reader.budget.args()
    args = [([str(files[i]) for i in g], reader.year, reader.engine, want, limits)
            for g in groups]
    parts = []
    try:
        ctx = mp.get_context(method)
        total = ctx.Value("q", reader.budget.used)  # the total limit holds across workers
        with cf.ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker,
                                    initargs=(total,)) as pool:
            results = pool.map(_read_group, args)  # (the workers are forked here)
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
    reader.budget.used = total.value
    for part in parts:
        _merge(reader, part)
    return True
