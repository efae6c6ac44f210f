"""Many files read side by side: consecutive groups of files, each read by a fresh
``FileReader`` in a worker process, merged in file order (the same result as one by one).

The worker processes are this machine's (``read_pooled``, the default) or any
``concurrent.futures.Executor``'s (``read_on_executor``: Dask distributed, a
``ProcessPoolExecutor``); ``scheduler_executor`` connects to a Dask scheduler by its address.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import gc
import multiprocessing as mp
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..schema import SCHEMAS
from .account import Account
from .decode import Budget
from .files import FileReader
from .lines import KEEP_UNRECOGNIZED

# Below this many bytes (or files) a process pool costs more than it saves.
POOL_MIN_BYTES = 16 * 1024 * 1024
POOL_MIN_FILES = 4
_TOTAL: Any = None  # in a worker: the bytes all workers read so far (``Budget.total``)
# On a foreign executor a task reads consecutive files up to this many bytes or files.
TASK_BYTES = 32 * 1024 * 1024
TASK_FILES = 64
_ONE_READER = threading.Lock()  # (``read_group``: one group at a time in a process)
SCHEDULER_TIMEOUT_S = 10.0  # how long to wait for a Dask scheduler to answer
SCHEDULER_ENV = "TRAINDOC_SCHEDULER"  # a Dask scheduler's address when ``scheduler`` is not given

Job = tuple[list[str], int | None, str, list[str] | None, tuple[int, int, float]]  # a group's read


class SchedulerError(RuntimeError):
    """A Dask scheduler was asked for and cannot be used (not installed, not answering)."""


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


def _read_group(args: Job) -> dict[str, Any]:
    """Some consecutive files read by a fresh reader in a worker process: what the parent
    merges (its first warnings and unrecognized lines are the first of the group's)."""
    return _read(args, _TOTAL)


def read_group(args: Job) -> dict[str, Any]:
    """``_read_group`` on any executor: nothing shared with the parent or other workers (the
    total limit counts this group's bytes alone, in ``"used"``; the parent holds the total;
    ``"schema"``: the tables as this worker's traindoc knows them).
    One group at a time in a process: a worker's threads would gain little (the reader holds
    the GIL; the flight-recorder reader also takes turns for the process's address-space
    limit, ``parse.flight_recorder``)."""
    with _ONE_READER:
        return {**_read(args, None), "schema": SCHEMAS}


def _read(args: Job, total: Any) -> dict[str, Any]:
    paths, year, engine, tables, limits = args
    budget = Budget(*limits, total=total)
    reader = FileReader(year, engine, tables=tables, budget=budget)
    for path in paths:
        reader.read(Path(path))
    frames, sources = reader.sink.parts()
    return {"frames": frames, "sources": sources, "unrecognized": reader.lines.unrecognized,
            "account": reader.acc, "used": budget.used}


def _runs(sizes: list[int], max_bytes: int, max_files: int | None = None) -> list[list[int]]:
    """Consecutive runs of file indices of at most ``max_bytes`` (or one file) and
    ``max_files`` files (None: any number)."""
    out: list[list[int]] = [[]]
    acc = 0
    for i, size in enumerate(sizes):
        if out[-1] and (acc + size > max_bytes
                        or (max_files is not None and len(out[-1]) >= max_files)):
            out.append([])
            acc = 0
        out[-1].append(i)
        acc += size
    return out


def _groups(sizes: list[int], n: int) -> list[list[int]]:
    """Consecutive runs of file indices, about ``4 * n`` of them, of similar total size."""
    return _runs(sizes, max(1, sum(sizes) // (4 * n)))


def _task_groups(sizes: list[int]) -> list[list[int]]:
    """Consecutive runs of file indices of at most ``TASK_BYTES`` (or one file) and
    ``TASK_FILES`` files: one task each on a foreign executor."""
    out = _runs(sizes, TASK_BYTES, TASK_FILES)
    return out if out[0] else []


def _jobs(reader: FileReader, files: list[Path], groups: list[list[int]]) -> list[Job]:
    want = None if reader.want is None else sorted(reader.want)
    limits = reader.budget.args()
    return [([str(files[i]) for i in g], reader.year, reader.engine, want, limits)
            for g in groups]


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
    groups = _groups(sizes, n)
    args = _jobs(reader, files, groups)
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


def read_on_executor(reader: FileReader, files: list[Path], sizes: list[int],
                     executor: cf.Executor, bar: Any) -> int:
    """Read ``files`` into ``reader`` by tasks on ``executor`` (anything with
    ``concurrent.futures.Executor.submit``), merged in file order; returns how many files were
    merged: the rest are for the caller to read here, one by one.

    No counter can be shared with a foreign executor's workers, so each task keeps the
    per-file limits and counts its own bytes, and the total limit is held here, at merge time:
    the first task whose bytes would reach ``max_total_bytes`` is not merged; from its first
    file on the caller reads with what is left of the total, exactly as a serial load cuts.
    An executor's error (a worker lost, a task cancelled) is raised, not read around, and so
    is a worker whose traindoc has other tables."""
    groups = _task_groups(sizes)
    jobs = _jobs(reader, files, groups)
    futures: list[Any] = [executor.submit(read_group, job) for job in jobs]
    done = 0
    was = gc.isenabled()
    gc.disable()  # (the results unpickle into many small containers with no cycles)
    try:
        for k, g in enumerate(groups):
            part = futures[k].result()
            futures[k] = None  # (a cluster may drop the result now)
            if part.get("schema") != SCHEMAS:
                raise RuntimeError(
                    "the executor's workers run another version of traindoc (their tables "
                    "differ from this one's): install the same traindoc on the workers")
            if reader.budget.used + part["used"] >= reader.budget.max_total_bytes:
                break
            reader.budget.used += part["used"]
            _merge(reader, part)
            done += len(g)
            if bar is not None:
                bar.update(sum(sizes[i] for i in g))
    finally:
        for future in futures:
            if future is not None and not future.done():
                future.cancel()
        if was:
            gc.enable()
    return done


HANDSHAKE_SLACK_S = 2.0  # past the timeout, how long a started connection may still take


def _connect(client_cls: Any, address: str, name: str, timeout: float) -> Any:
    """A Dask ``Client`` on ``address`` made within ``timeout`` s (and a little slack) in all
    cases: Dask's own timeout covers the TCP connect, not the handshake, so an address that
    accepts and never answers held the load for minutes, and one that answers junk raised
    ``MemoryError``. The client is made in a thread that is waited for with a deadline; one
    that comes too late is closed there. Every failure is one ``SchedulerError`` naming
    ``name``."""
    box: dict[str, Any] = {}
    done = threading.Event()
    lock = threading.Lock()

    def make() -> None:
        try:
            got = client_cls(address, timeout=timeout, set_as_default=False)
        except BaseException as e:  # noqa: BLE001 (MemoryError on junk, anything on a stranger)
            box["error"] = e
        else:
            with lock:
                late = box.get("abandoned", False)
                box["client"] = got
            if late:
                with contextlib.suppress(Exception):
                    got.close()
        done.set()

    threading.Thread(target=make, name="traindoc-dask-connect", daemon=True).start()
    finished = done.wait(timeout + HANDSHAKE_SLACK_S)
    with lock:
        if not finished:
            box["abandoned"] = True
    if not finished:
        raise SchedulerError(
            f"{name}={address!r}: something accepted the connection but no Dask scheduler "
            f"answered within {timeout:g} s; check the address (tcp://host:8786), or leave it "
            "empty to read on this machine")
    err = box.get("error")
    if isinstance(err, OSError | TimeoutError):
        raise SchedulerError(
            f"{name}={address!r}: no Dask scheduler answered there within {timeout:g} s "
            f"({err}); check the address (tcp://host:8786), or leave it empty to read on this "
            "machine") from err
    if err is not None:
        raise SchedulerError(
            f"{name}={address!r}: what answered there is not a Dask scheduler "
            f"({type(err).__name__}); check the address (tcp://host:8786), or leave it empty "
            "to read on this machine") from None
    return box["client"]


@contextmanager
def scheduler_executor(address: str, name: str = "scheduler",
                       timeout: float | None = None) -> Iterator[cf.Executor]:
    """An executor on the Dask scheduler at ``address`` (``tcp://host:8786``) while the block
    runs; ``SchedulerError`` naming ``name`` (the parameter or variable that gave the address)
    when Dask's distributed is not installed or no scheduler answers within ``timeout`` s
    (None: ``SCHEDULER_TIMEOUT_S``)."""
    timeout = SCHEDULER_TIMEOUT_S if timeout is None else timeout
    try:
        from distributed import Client
        from distributed.comm.addressing import parse_address, parse_host_port
    except ImportError as e:
        raise SchedulerError(
            f"{name}={address!r} needs Dask's distributed, which is not installed here: "
            "pip install 'traindoc[cluster]', or leave it empty to read on this machine") from e
    try:  # (a Client made with a bad address is slow to go: 20 s at exit)
        scheme, where = parse_address(address)
        if scheme in ("tcp", "tls"):
            parse_host_port(where)
    except ValueError as e:
        raise SchedulerError(f"{name}={address!r} is not a Dask scheduler's address ({e}): "
                             "give it as tcp://host:8786") from e
    client = _connect(Client, address, name, timeout)
    try:
        yield client.get_executor()
    finally:
        client.close()
