"""Stack dumps read as processes: frames split, the leaf a thread waits in, signatures, one
``Proc`` per process (helpers set apart, the last snapshot counting), and ranks inferred from
flight-recorder stacks when a dump names none (rules: the package docstring)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, NamedTuple

import pandas as pd

from ...parse.collectives import MONITORED_BARRIER_OP, STORE_BARRIER_OP
from ...parse.errors import EXCEPTION_IGNORED_CODE
from ...parse.missing_ranks import is_jax_barrier
from ...parse.stacks import TRACEBACK_STATES
from ..collectives import entered_rows
from ..common import as_int

FRAME_RE = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]+?)(?::(?P<line>\d+))?\)$")
# The standard library's blocking primitives: py-spy prints them relative to the stdlib
# directory (``threading.py``), faulthandler with the full path (``…/lib/python3.11/…``).
_STDLIB_DIR = r"(?:^|[/\\]lib(?:[/\\]python\d[\d.]*t?)?[/\\])"
_WAIT_MODULES = (r"threading|queue|selectors|multiprocessing[/\\](?:queues|connection|synchronize"
                 r"|pool|process|popen_\w+)|concurrent[/\\]futures[/\\](?:_base|thread)")
GENERIC_WAIT_RE = re.compile(rf"{_STDLIB_DIR}(?:{_WAIT_MODULES})\.py$", re.IGNORECASE)
# concurrent.futures' waits where the dump prints bare file names (a PyInstaller bundle:
# "result (_base.py:427)" under "wait (threading.py:295)"): the file alone could be any package's
FUTURE_WAIT_FUNC_RE = re.compile(r"^(?:Future\.)?(?:result|exception|wait|as_completed)$")
# Where a helper thread parks: the generic primitives plus signal.sigwait and socket waits.
HELPER_WAIT_RE = re.compile(rf"{_STDLIB_DIR}(?:{_WAIT_MODULES}|signal|socket|socketserver)\.py$",
                            re.IGNORECASE)
HELPER_THREAD_RE = re.compile(
    r"^(?:pt_autograd|pt_thread_pool|pt_tensorpipe|QueueFeederThread|TMonitor|tqdm)"
    r"|pin_memory|_monitor|tqdm", re.IGNORECASE)
HELPER_PROCESS_RE = re.compile(
    r"torch[/\\]utils[/\\]data[/\\]_utils[/\\](?:worker|pin_memory)\.py"
    r"|torch[/\\]_inductor[/\\]compile_worker")
# torch <= 0.4 kept the worker's loop in dataloader.py itself (pytorch/examples#148,
# deepspeech.pytorch#287): "_worker_loop (…/torch/utils/data/dataloader.py:50)"
HELPER_LOOP_RE = re.compile(
    r"^_(?:worker|pin_memory)_loop \(.*torch[/\\]utils[/\\]data[/\\]dataloader\.py(?::\d+)?\)$")
# The frames of a launcher's own traceback, printed after its worker's when the job is stopped
# (``python -m torch.distributed.run``: runpy's module runner, then torch's run/launch and the
# elastic agent; DeepSpeed's and accelerate's launchers): no worker's stack
LAUNCHER_FRAME_RE = re.compile(
    r"(?:^|[/\\])runpy\.py$|torch[/\\]distributed[/\\](?:run|launch|launcher[/\\]api)\.py$"
    r"|torch[/\\]distributed[/\\]elastic[/\\]|deepspeed[/\\]launcher[/\\]"
    r"|accelerate[/\\]commands[/\\]")
COLLECTIVE_RE = re.compile(
    r"torch[/\\]distributed[/\\](?:distributed_c10d|_functional_collectives|c10d_logger)\.py$"
    r"|deepspeed[/\\]comm[/\\](?:comm|torch|ccl)\.py$")
# DDP's own collectives, called from its forward: the buffers' and parameters' broadcasts and the
# unused-parameter all-reduce (torch/nn/parallel/distributed.py; its forward itself computes)
DDP_FILE_RE = re.compile(r"torch[/\\]nn[/\\]parallel[/\\]distributed\.py$")
DDP_COLLECTIVE_FUNC_RE = re.compile(
    r"^(?:_sync_(?:module_)?buffers|_sync_params(?:_and_buffers)?|_distributed_broadcast_coalesced"
    r"|_default_broadcast_coalesced|_check_global_requires_backward_grad_sync"
    r"|_match_all_reduce_for_bwd_pass|_sync_final_model)$")
TORCH_FILE_RE = re.compile(r"(?:^|[/\\])torch[/\\]")
HEX_ADDR_RE = re.compile(r"^0x[0-9a-fA-F]+$")
# Native frames that say only that a thread waits, as gdb's ``bt`` and py-spy --native print
# them: the C library's and the kernel's (libc, libpthread, the vDSO, glibc's own sources) and
# unknown functions (``??``); the first native frame outside them says for what.
NATIVE_WAIT_FILE_RE = re.compile(
    r"(?:^|[/\\])(?:libc|libpthread|ld-linux[\w-]*|linux-vdso)[.\-]|(?:^|[/\\])sysdeps[/\\]"
    r"|(?:^|[/\\])nptl[/\\]|^pthread_\w+\.c$|^\?$")
# Where Ctrl-C lands in a process that waits: the calls that block and still take the signal
# (a lock, a queue, select/poll, a socket, a sleep, a child or a collective).
WAIT_FUNC_RE = re.compile(r"^(?:_?wait\w*|join|e?poll\w*|select|recv\w*|accept|_?acquire\w*"
                          r"|sleep|get|result|barrier|_?synchronize|_?read\w*|communicate)$")
# Code a debugger or an injector ran inside the live process to print its stack (gdb's
# ``call PyRun_SimpleString("import traceback; traceback.print_stack()")``, pyrasite's
# ``exec(open(payload).read())``): module-level code of a string, innermost under the frame the
# thread really waits in (pytorch/pytorch#16654). Outermost it is ``python -c`` or a spawned
# child's start, real frames.
INJECTED_FRAME_RE = re.compile(r"^<module> \(<(?:string|stdin)>(?::\d+)?\)$")
LINE_SUFFIX_RE = re.compile(r":\d+$")  # ``file:123``: a source's line number
MAIN_THREAD_NAMES = ("MainThread", "pt_main_thread")
# rows that carry no stack: a py-spy error, a ps row of a process in uninterruptible sleep
NO_STACK_STATES = ("dump_error", "D")
# (a Python traceback the process printed, ``TRACEBACK_STATES``: a sample of its stack where
# no dump is)
CONTAINER_PID = 1  # every container's first process: pid 1 on no named host is no one process
ARROW = " ← "


@dataclass
class Frame:
    """One printed frame, split."""

    text: str
    func: str
    file: str
    line: int | None

    @property
    def python(self) -> bool:
        """A Python frame (py-spy marks native ones by their library, e.g. ``libc.so.6``)."""
        return self.file.endswith((".py", ".pyx", ".pyw")) or self.file.startswith("<")


def split_frame(text: str) -> Frame:
    """``function (file:line)`` into its parts (the whole text as function when it is not)."""
    m = FRAME_RE.match(text)
    if not m:
        return Frame(text, text, "", None)
    return Frame(text, m["func"], m["file"], int(m["line"]) if m["line"] else None)


def key_leaf_index(frames: list[str]) -> int | None:
    """Index of the frame that names where a thread waits (see the module's rules)."""
    parts = [split_frame(f) for f in frames]
    skip = injected_frames(frames)
    for i, p in enumerate(parts[skip:], skip):
        if p.python and not generic_wait(p.func, p.file):
            return i
    for i, p in enumerate(parts[skip:], skip):
        if p.python:
            return i
    for i, p in enumerate(parts):
        if not (HEX_ADDR_RE.match(p.func) or p.func == "??" or NATIVE_WAIT_FILE_RE.search(p.file)):
            return i
    for i, p in enumerate(parts):
        if not HEX_ADDR_RE.match(p.func):
            return i
    return 0 if frames else None


def injected_frames(frames: list[str]) -> int:
    """How many innermost frames are code injected to print the stack (none when all are)."""
    n = 0
    while n < len(frames) and INJECTED_FRAME_RE.match(frames[n].strip()):
        n += 1
    return 0 if n == len(frames) else n


def generic_wait(func: str, file: str) -> bool:
    """Whether a Python frame is one of the standard library's generic blocking primitives."""
    return bool(GENERIC_WAIT_RE.search(file)) or (
        file == "_base.py" and bool(FUTURE_WAIT_FUNC_RE.match(func)))


def key_leaf(frames: list[str]) -> str | None:
    """The leaf a deadlock report names: ``function (file:line)``."""
    i = key_leaf_index(frames)
    return None if i is None else frames[i]


def signature(frames: list[str], depth: int | None = None) -> str:
    """The leaf and the Python frames outside it (``depth`` frames; None/0: all), joined."""
    i = key_leaf_index(frames)
    if i is None:
        return ""
    python = [f for f in frames[i:] if split_frame(f).python]
    chain = python or [f for f in frames[i:] if not HEX_ADDR_RE.match(split_frame(f).func)]
    if depth:
        chain = chain[:depth]
    return ARROW.join(chain)


def in_collective(frames: list[str]) -> bool:
    """True when a frame is inside a torch.distributed / DeepSpeed collective, or one of DDP's
    own (``DDP_COLLECTIVE_FUNC_RE``)."""
    for f in frames:
        p = split_frame(f)
        if COLLECTIVE_RE.search(p.file) or (DDP_COLLECTIVE_FUNC_RE.match(p.func)
                                            and DDP_FILE_RE.search(p.file)):
            return True
    return False


def is_helper_process(frames: list[str]) -> bool:
    """A DataLoader worker / pin-memory / compile-worker process (not a rank)."""
    return any(HELPER_PROCESS_RE.search(split_frame(f).file) or HELPER_LOOP_RE.match(f)
               for f in frames)


def is_idle_helper_thread(name: str | None, frames: list[str]) -> bool:
    """A non-main thread that is a known helper or parked in a stdlib wait."""
    if name in MAIN_THREAD_NAMES:
        return False
    if name and HELPER_THREAD_RE.search(name):
        return True
    py = [split_frame(f) for f in frames if split_frame(f).python]
    return not py or bool(HELPER_WAIT_RE.search(py[0].file))


def _na(v: Any) -> Any:
    """The value itself, None when it is missing (None, NA, NaN)."""
    return None if v is None or v is pd.NA or (isinstance(v, float) and pd.isna(v)) else v


def _file_of(source: Any) -> str:
    s = str(source or "?")
    s = s.split("#", 1)[0]
    return s.rsplit(":", 1)[0] if LINE_SUFFIX_RE.search(s) else s


@dataclass
class Proc:
    """One process's state, as the runbook groups it."""

    key: tuple[Any, ...]
    rank: int | None
    host: str | None
    pid: int | None
    frames: list[str]
    leaf: str | None
    signature: str
    in_collective: bool
    helper: bool
    source: str
    line: str
    thread: str | None = None
    state: str | None = None
    cmd: str | None = None
    snapshots: int = 1
    moved: bool = False
    rank_inferred: str | None = None  # how the rank was inferred, when it was
    threads: list[str] = field(default_factory=list)
    count: int = 1  # processes it stands for (a condensed listing's "6 processes are in:")
    several: bool = False  # one of several processes in one file that names none of them

    @property
    def member(self) -> Any:
        """The rank, else ``host:pid``, else the dump file (``file:line`` of its dump where the
        file holds several processes' dumps)."""
        if self.rank is not None:
            return self.rank
        if self.pid is not None:
            return f"{self.host or '?'}:{self.pid}"
        if self.several:
            return f"{self.host}:{PurePath(self.source).name}" if self.host else self.source
        return f"{self.host}:{PurePath(_file_of(self.source)).name}" if self.host else _file_of(
            self.source)


class _Row(NamedTuple):
    """The ``stacks`` columns a process is built from, one row."""

    host: Any
    pid: Any
    rank: Any
    tid: Any
    thread: Any
    state: Any
    cmd: Any
    frames: Any
    source: Any
    line: Any
    count: Any


def n_procs(procs: list[Proc]) -> int:
    """How many processes these stand for (a condensed listing's row counts for several)."""
    return sum(p.count for p in procs)


class _FrameMemo:
    """Per-call caches of what a frame list yields: thousands of processes share a handful of
    stacks, so each distinct stack is split and matched once."""

    def __init__(self, depth: int | None) -> None:
        self.depth = depth
        self._sig: dict[tuple[str, ...], str] = {}
        self._idle: dict[tuple[Any, tuple[str, ...]], bool] = {}
        self._python: dict[tuple[str, ...], bool] = {}

    def signature(self, row: _Row) -> str:
        key = _frame_key(row)
        sig = self._sig.get(key)
        if sig is None:
            sig = self._sig[key] = signature(list(key), self.depth)
        return sig

    def has_python(self, row: _Row) -> bool:
        key = _frame_key(row)
        python = self._python.get(key)
        if python is None:
            python = self._python[key] = any(split_frame(f).python for f in key)
        return python

    def idle_helper(self, row: _Row) -> bool:
        key = (_na(row.thread), _frame_key(row))
        idle = self._idle.get(key)
        if idle is None:
            idle = self._idle[key] = is_idle_helper_thread(key[0], list(key[1]))
        return idle


def _frame_key(row: _Row) -> tuple[str, ...]:
    return tuple(row.frames) if isinstance(row.frames, list) else ()


def processes(stacks: pd.DataFrame, thread: str = "MainThread",
              depth: int | None = None) -> list[Proc]:
    """One ``Proc`` per process seen in the ``stacks`` table: dump errors only where the log
    names the process py-spy failed on (a pid or rank); a listed leaf (``state`` ``listed``)
    is one process each, and a full stack whose innermost frame is a listed name stands for
    one of those entries (``merge_listed``)."""
    if not len(stacks):
        return []
    state = stacks["state"].fillna("")
    tracebacks = state.isin(TRACEBACK_STATES)
    if tracebacks.any() and not tracebacks.all():  # dumps were taken: they say more
        stacks, state = stacks[~tracebacks], state[~tracebacks]
    elif tracebacks.any() and stacks["rank"].notna().any():
        # ranks' tracebacks beside unranked ones: those are the launcher's (its own, or its
        # copy of a rank's in the ChildFailedError report), not processes of their own
        keep = stacks["rank"].notna() | stacks["pid"].notna()
        stacks, state = stacks[keep], state[keep]
    named = stacks["pid"].notna() | stacks["rank"].notna() if "pid" in stacks else state == ""
    df = stacks[~state.isin(NO_STACK_STATES) | named]
    if not len(df):
        return []
    # Plain Python lists and a dict of rows per process, in table order: a DataFrame groupby
    # with a sub-frame per process costs far more than the work done on each.
    cols = [list(df[c]) if c in df else [None] * len(df) for c in _Row._fields]
    groups: dict[tuple[Any, ...], list[_Row]] = {}
    seen_threads: set[Any] = set()
    dumps = 0  # dumps of pid 1 on no named host: each one another container's process
    current: dict[tuple[Any, Any], list[Any]] = {}  # a file's "Current thread" ids, in order
    interrupted = _interrupted_files(df)
    # tracebacks in files that show a Ctrl-C: each one another process's; [index, whether the
    # current one has a stack of its own] per file
    tb_at: dict[tuple[Any, str], list[Any]] = {}
    for row in map(_Row._make, zip(*cols, strict=True)):
        host, pid, rank = _na(row.host), _na(row.pid), _na(row.rank)
        if _na(row.state) == "listed":
            key: tuple[Any, ...] = ("listed", host, str(row.source))  # one process per entry
        elif pid == CONTAINER_PID and host is None and rank is None:
            ident = (_na(row.tid), _na(row.thread))
            if ident in seen_threads:
                dumps, seen_threads = dumps + 1, set()
            seen_threads.add(ident)
            key = ("pid", host, CONTAINER_PID, dumps)
        elif pid is not None:
            key = ("pid", host, int(pid))
        elif rank is not None:
            key = ("rank", host, int(rank))
        elif _na(row.state) in TRACEBACK_STATES and (host, _file_of(row.source)) in interrupted:
            key = ("file", host, _file_of(row.source), "traceback",
                   _traceback_of(row, tb_at.setdefault((host, _file_of(row.source)), [0, False])))
        else:
            file = _file_of(row.source)
            key = ("file", host, file, _dump_of(row, (host, file), current))
        groups.setdefault(key, []).append(row)
    memo = _FrameMemo(depth)
    leaf_memo: dict[tuple[str, ...], tuple[str | None, bool, bool]] = {}
    out: list[Proc] = []
    no_main: list[tuple[tuple[Any, ...], list[_Row], _Row | None]] = []
    for key, rows in groups.items():
        stuck = next((r for r in rows if _na(r.state) == "D"), None)
        if len(rows) > 1 and any(_na(r.state) in NO_STACK_STATES for r in rows):
            # dumped after all (another try, another thread): the stack says more than the error
            # or the ps row (whose D state the process keeps)
            rows = [r for r in rows if _na(r.state) not in NO_STACK_STATES] or rows[:1]
        chosen = _choose_threads(rows, thread, memo)
        if not chosen:
            if thread in MAIN_THREAD_NAMES and all(
                    isinstance(_na(r.tid), str) and FH_TID_RE.match(r.tid) for r in rows):
                no_main.append((key, rows, stuck))
            continue
        picked = {id(r) for r in chosen}
        out.append(_proc(key, chosen, stuck, memo, leaf_memo,
                         [r for r in rows if id(r) not in picked]))
    if not out:
        # faulthandler threads that threading started, and no main thread anywhere (a paste
        # cut it off): the dump still shows its process, by its last listed thread; beside
        # another file's process they are a piece of its dump, not one more
        out = [_proc(key, rows[-1:], stuck, memo, leaf_memo) for key, rows, stuck in no_main]
    per_file = Counter(p.key[:3] for p in out if p.key[0] == "file")
    for p in out:
        p.several = p.key[0] == "file" and per_file[p.key[:3]] > 1
    if out and all(p.helper for p in out):  # a helper's own dump, no rank beside it: the
        for p in out:                       # process looked at
            p.helper = False
    return merge_listed(out)


def _proc(key: tuple[Any, ...], chosen: list[_Row], stuck: _Row | None, memo: _FrameMemo,
          leaf_memo: dict[tuple[str, ...], tuple[str | None, bool, bool]],
          others: list[_Row] | None = None) -> Proc:
    """One process from its chosen threads' rows (the last snapshot counting, unless it shows
    no Python frame where an earlier one does: ``_telling``; a launcher's traceback after a
    worker's is no snapshot of it: ultralytics#1662's KeyboardInterrupt in DDP's _sync_buffers,
    then torch.distributed.run's own traceback, cut after runpy's frame); where the chosen thread shows
    only the standard library's waits, its leaf is read from the process's ``others`` threads
    (``continued_leaf``)."""
    snaps = _snapshots(chosen)
    if len(snaps) > 1 and _launcher_only(snaps[-1]):  # the launcher's traceback: another process
        snaps = [s for s in snaps if not _launcher_only(s)] or snaps
    native = [_native_only(snap, memo) for snap in snaps]
    at = _telling(snaps, native, memo)
    last = snaps[at]
    mains = [r for r in last if _na(r.thread) in MAIN_THREAD_NAMES]
    first = mains[0] if mains else last[0]
    fkey = _frame_key(first)
    if fkey not in leaf_memo:
        frames = list(fkey)
        leaf_memo[fkey] = (key_leaf(frames), in_collective(frames), is_helper_process(frames))
    leaf, coll, helper = leaf_memo[fkey]
    sig_at = None
    at_leaf = split_frame(leaf) if leaf else None
    if (others and at_leaf is not None and at_leaf.python
            and generic_wait(at_leaf.func, at_leaf.file)):  # only the stdlib's waits
        cont = continued_leaf(list(fkey), [list(_frame_key(r)) for r in others
                                           if not HELPER_THREAD_RE.search(str(_na(r.thread) or ""))])
        if cont is not None:
            leaf, coll = key_leaf(cont), coll or in_collective(cont)
            sig_at = signature(cont, memo.depth)
    if _na(first.state) == "dump_error":  # named by what py-spy said instead of a frame
        leaf = f"not dumped: {str(_na(first.line) or 'py-spy error').strip()}"
    elif _na(first.state) == "D" and not fkey:
        leaf = f"uninterruptible sleep (D): {_na(first.cmd) or 'no stack'}"
    sigs = [" ‖ ".join(sorted(memo.signature(r) for r in s)) for s in snaps]
    # a native backtrace beside a py-spy dump is the same moment seen lower, not a move
    moving = [sig for sig, n in zip(sigs, native, strict=True) if not n] or sigs
    return Proc(
        key=key, rank=as_int(first.rank), host=_na(first.host), pid=as_int(first.pid),
        frames=list(fkey), leaf=leaf, signature=sig_at or sigs[at],
        in_collective=coll, helper=helper,
        source=str(first.source), line=str(_na(first.line) or ""),
        thread=_na(first.thread), state="D" if stuck is not None else _na(first.state),
        cmd=_na(first.cmd),
        snapshots=len(snaps), moved=len(set(moving)) > 1,
        count=as_int(first.count) or 1,
        threads=[str(_na(r.thread) or _na(r.tid) or "?") for r in last])


def only_waits(frames: list[str]) -> bool:
    """Whether a stack's Python frames are all the standard library's generic waits: it says
    that its thread waits, not for what (a paste cut it below them)."""
    py = [p for p in map(split_frame, frames) if p.python]
    return bool(py) and all(generic_wait(p.func, p.file) for p in py)


def continued_leaf(frames: list[str], others: list[list[str]]) -> list[str] | None:
    """The stack a thread that shows only the standard library's waits (``only_waits``) stands
    for, read from its process's other threads: the most common of those whose innermost
    frames are its own, line for line (the same wait reached the same way, printed whole),
    else of those at work (no stdlib wait innermost, ``is_idle_helper_thread``) — the thread
    that does the work. None where no such thread, or two leaves tie."""
    full = [o for o in others if len(o) > len(frames) and o[:len(frames)] == frames
            and not only_waits(o)]
    pool = full or [o for o in others if o and not only_waits(o)
                    and not is_idle_helper_thread(None, o)]
    tally = Counter(key_leaf(o) for o in pool)
    top = tally.most_common(2)
    if not top or (len(top) > 1 and top[0][1] == top[1][1]):
        return None
    return next(o for o in pool if key_leaf(o) == top[0][0])


def _interrupted_files(df: pd.DataFrame) -> set[tuple[Any, str]]:
    """The (host, file) pairs whose unnamed tracebacks include a Ctrl-C's (``interrupted``): the
    signal reaches every process of the terminal's group at once, and each prints its own
    traceback, so each separate traceback there is another process (a chained one is read
    into the same row)."""
    if "state" not in df or not len(df):
        return set()
    unnamed = df["pid"].isna() & df["rank"].isna() if "pid" in df and "rank" in df else None
    rows = df[(df["state"] == "interrupted") & (unnamed if unnamed is not None else True)]
    return {(_na(h), _file_of(src)) for h, src in zip(rows["host"] if "host" in rows else
                                                      [None] * len(rows), rows["source"],
                                                      strict=True)}


def _traceback_of(row: _Row, at: list[Any]) -> int:
    """Which process of a Ctrl-C'd file a traceback belongs to: one of two frames or more is
    another process's once the current one has such a stack; a one-frame fragment (a post cut
    short, a traceback another writer's line broke) stays with the current one."""
    full = len(row.frames) > 1 if isinstance(row.frames, list | tuple) else False
    if full and at[1]:
        at[0] += 1
    at[1] = at[1] or full
    return int(at[0])


def _dump_of(row: _Row, file: tuple[Any, Any], current: dict[tuple[Any, Any], list[Any]]) -> int:
    """Which process of a file that names none a row belongs to: faulthandler marks the thread
    that dumped as ``Current thread``, once per dump, so each new id there is another process's
    dump (four ranks aborting into one log print four); a repeat of an id is that process
    dumped again. Rows before the first such line, and after, stay with the last one seen."""
    ids = current.setdefault(file, [])
    tid = _na(row.tid)
    if _na(row.state) == "current" and tid is not None:
        if tid not in ids:
            ids.append(tid)
        return ids.index(tid)
    return len(ids) - 1 if ids else 0


def merge_listed(procs: list[Proc]) -> list[Proc]:
    """A condensed listing names each process by its innermost frame's function alone; a full
    stack shown beside it is one of those processes (the one the poster singled out). Each full
    stack whose innermost frame's function is a listed name on its host (any host when its own
    is unknown) takes the place of one such entry, so no process is counted twice."""
    listed = [p for p in procs if p.state == "listed"]
    if not listed:
        return procs
    drop: set[int] = set()
    for p in procs:
        if p.state == "listed" or not p.frames:
            continue
        func = split_frame(p.frames[0]).func.rsplit(".", 1)[-1]
        for q in listed:
            if id(q) not in drop and q.leaf == func and (p.host is None or p.host == q.host):
                drop.add(id(q))
                break
    return [p for p in procs if id(p) not in drop]


def _choose_threads(rows: list[_Row], thread: str, memo: _FrameMemo) -> list[_Row]:
    if thread == "*":
        keep = [r for r in rows if not memo.idle_helper(r)]
        return keep or [r for r in rows if _na(r.thread) in MAIN_THREAD_NAMES]
    names = MAIN_THREAD_NAMES if thread in MAIN_THREAD_NAMES else (thread,)
    chosen = [r for r in rows if _na(r.thread) in names]
    if chosen:
        return chosen
    if names == MAIN_THREAD_NAMES:  # on Linux the main thread's id is the process id
        chosen = [r for r in rows if _na(r.pid) is not None and str(_na(r.tid)) == str(_na(r.pid))]
        if chosen:
            return chosen
    tids = {_na(r.tid) for r in rows}
    if all(_na(r.thread) is None for r in rows):
        if len(tids) == 1:
            return rows  # a one-thread process that printed no thread name
        # no names at all (old py-spy, `ray stack`): the main thread runs the script's <module>
        mains = [r for r in rows if isinstance(r.frames, list) and r.frames
                 and str(r.frames[-1]).startswith("<module> ")]
        if len({_na(r.tid) for r in mains}) == 1:
            return mains
    return []


def _native_only(snap: list[_Row], memo: _FrameMemo) -> bool:
    """A snapshot with frames, none of them Python's (gdb's native backtrace)."""
    return (any(_frame_key(r) for r in snap)
            and not any(memo.has_python(r) for r in snap))


def _launcher_only(snap: list[_Row]) -> bool:
    """Whether every frame of a snapshot is a launcher's (``LAUNCHER_FRAME_RE``)."""
    frames = [f for r in snap for f in _frame_key(r)]
    return bool(frames) and all(LAUNCHER_FRAME_RE.search(split_frame(f).file) for f in frames)


def _telling(snaps: list[list[_Row]], native: list[bool], memo: _FrameMemo) -> int:
    """The snapshot that stands for the process (``native``: which are native-only): the last,
    unless it is native-only and an earlier one holds Python frames (py-spy's dump, then gdb's
    native backtrace of the same pid, which ``thread apply all bt`` prints after it: the Python
    frames say which call the native ones wait under)."""
    last = len(snaps) - 1
    if not native[last]:
        return last
    return next((i for i in range(last - 1, -1, -1)
                 if any(memo.has_python(r) for r in snaps[i])), last)


def _snapshots(rows: list[_Row]) -> list[list[_Row]]:
    """Rows of the same thread seen again start a new snapshot of the process."""
    snaps: list[list[_Row]] = []
    seen: set[Any] = set()
    for r in rows:  # already in table order
        tid = (_na(r.tid), _na(r.thread))
        if tid in seen or not snaps:
            snaps.append([])
            seen = set()
        seen.add(tid)
        snaps[-1].append(r)
    return snaps


# -- processes a hang report shows without a stack --------------------------------------------
# rows of hang reports that show a rank alive and waiting: the store-based barrier's waiting
# lines, the ranks a DETAIL mismatch report compares
REPORTED_STATES = ("started", "mismatch")
REPORTED = "reported"  # a Proc's state: seen in a hang report, no stack


def reported_procs(collectives: pd.DataFrame, procs: list[Proc]) -> list[Proc]:
    """Ranks a hang report shows waiting (the store-based barrier's ``Waiting in store based
    barrier … for rank: N``, the ready ranks of Horovod's stalled op, a rank whose own watchdog
    timed out in a collective), lacking (the ranks a stall report names as missing from its op:
    Horovod's coordinator lists only ranks of the running job, which have submitted other
    tensors), printing it (the stall report's own rank) or compares (a DETAIL ``Detected
    mismatch between collectives``), that no stack shows: one ``Proc`` each, no frames,
    ``state`` ``reported``. A JAX barrier's tasks that never arrived may never have started:
    not counted."""
    c = collectives
    if not len(c) or "state" not in c:
        return []
    barrier = (c["op_type"] == STORE_BARRIER_OP) & (c["state"] == "started")
    timed = _timed(c)
    report = _report(c)
    stalled = c["op_type"][(c["state"] == "timed_out").fillna(False) & report]
    in_stall = c["op_type"].isin(set(stalled.dropna()))
    ready = in_stall & (c["state"] == "started")
    lacking = in_stall & (c["state"] == "absent") & ~c["op_type"].map(lambda o: is_jax_barrier(_na(o)))
    printer = in_stall & (c["state"] == "timed_out") & report
    watchdog = (c["state"] == "timed_out") & timed  # a rank's own watchdog: it waited there
    rows = c[(barrier.fillna(False) | ready.fillna(False) | (c["state"] == "mismatch").fillna(False)
              | watchdog.fillna(False) | lacking.fillna(False) | printer.fillna(False))
             & c["rank"].notna()]
    # the collective each rank logged entering last (TORCH_DISTRIBUTED_DEBUG=DETAIL)
    entered = entered_rows(c).groupby("rank", sort=False).tail(1)
    rows = pd.concat([rows, entered]) if len(entered) else rows
    known = {p.rank for p in procs if p.rank is not None}
    out: dict[int, Proc] = {}
    # a rank the report shows ready or missing says more than that it printed the report
    rows = pd.concat([rows[~printer.reindex(rows.index).fillna(False)],
                      rows[printer.reindex(rows.index).fillna(False)]])
    for r in rows.itertuples(index=False):
        rank = int(r.rank)
        if rank in known or rank in out:
            continue
        op = _na(r.op_type)  # a watchdog line may name no op (a paste mangled it)
        what = ("waiting in the store-based barrier" if op == STORE_BARRIER_OP
                else f"in {op} (DETAIL mismatch report)" if r.state == "mismatch"
                else f"timed out in {op or 'a collective'} (watchdog)"
                if r.state == "timed_out" and not (pd.isna(r.timeout_ms) and pd.isna(r.ran_for_ms))
                else f"reported the stall of {op}" if r.state == "timed_out"
                else f"missing from {op} (stall report)" if r.state == "absent"
                else f"entered {op} #{int(r.seq_num)} last (DETAIL)" if not pd.isna(r.seq_num)
                else f"ready in {op} (stall report)")
        out[rank] = Proc(key=("rank", None, rank), rank=rank, host=_na(r.host), pid=None,
                         frames=[], leaf=None, signature=f"({what})", in_collective=False,
                         helper=False, source=str(r.source), line=str(_na(r.line) or ""),
                         state=REPORTED)
    return list(out.values())


# -- ranks from the flight recorder --------------------------------------------------------
def _user_chain(frames: list[tuple[str, int | None]]) -> list[tuple[str, int | None]]:
    return [(f, ln) for f, ln in frames if not TORCH_FILE_RE.search(f) and f]


def _same_site(a: str, b: str) -> bool:
    a, b = a.replace("\\", "/"), b.replace("\\", "/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def infer_ranks(procs: list[Proc], collectives: pd.DataFrame) -> dict[tuple[Any, ...], tuple[int, str]]:
    """Ranks for rank-less processes from flight-recorder stacks (see the module's rules):
    process key -> (rank, how)."""
    todo = [p for p in procs if p.rank is None and not p.helper]
    c = collectives
    if not todo or not len(c) or "frames" not in c:
        return {}
    fr = c[c["source"].str.contains("#entry", regex=False, na=False) & c["rank"].notna()]
    if not len(fr):
        return {}
    known = {p.rank for p in procs if p.rank is not None}
    last: dict[int, list[tuple[str, int | None]]] = {}
    for rank, g in fr.groupby("rank"):
        if int(rank) in known:
            continue
        row = g.iloc[-1]
        frames = row["frames"] if isinstance(row["frames"], list) else []
        last[int(rank)] = _user_chain([(split_frame(f).file, split_frame(f).line) for f in frames])
    cand: dict[int, list[Proc]] = {r: [] for r in last}
    for p in todo:
        chain = _user_chain([(split_frame(f).file, split_frame(f).line) for f in p.frames
                             if split_frame(f).python])
        for r, fchain in last.items():
            if fchain and len(fchain) == len(chain) and all(
                    _same_site(a, b) and la == lb for (a, la), (b, lb) in zip(fchain, chain, strict=True)):
                cand[r].append(p)
    out: dict[tuple[Any, ...], tuple[int, str]] = {}
    for r, ps in cand.items():
        if len(ps) == 1 and sum(ps[0] in v for v in cand.values()) == 1:
            out[ps[0].key] = (r, f"its stack is rank {r}'s last recorded collective's call stack")
    left_p = [p for p in todo if p.key not in out]
    left_r = [r for r in last if r not in {v[0] for v in out.values()}]
    if out and len(left_p) == 1 and len(left_r) == 1 and len(todo) == len(last):
        out[left_p[0].key] = (left_r[0], "by elimination: the one process and the one "
                                         "flight-recorder rank not matched otherwise")
    return out


def call_site(frames: list[str]) -> str | None:
    """The first frame outside torch.distributed / DeepSpeed comm beyond the leaf: the line of
    the program that issued the collective (or the wait)."""
    i = key_leaf_index(frames)
    if i is None:
        return None
    for f in frames[i + 1:]:
        p = split_frame(f)
        if p.python and not COLLECTIVE_RE.search(p.file) and not TORCH_FILE_RE.search(p.file):
            return f
    return None



# stacks rows that show a hang without frames: py-spy could not dump it, uninterruptible sleep
# (ps, the kernel's hung-task report), a listed leaf
HANG_STATES = ("D", "dump_error", "listed")
# faulthandler's thread ids ("Current thread 0x00007f…"); gdb's current thread is an LWP number
FH_TID_RE = re.compile(r"^0x[0-9a-fA-F]+$")
# a current thread that asked for the dump itself (a Python signal handler, a test harness's
# listener calling faulthandler.dump_traceback): a dump on request, not a fatal error's
FATAL_ERROR_TEXT = "Fatal Python error"  # the header faulthandler's dump of a fatal error has
DUMPER_FUNC_RE = re.compile(r"handler|dump|signal|stack|trace|listener|watchdog", re.IGNORECASE)


def crash_dumps(stacks: pd.DataFrame) -> pd.DataFrame:
    """The current threads of faulthandler dumps that show a crash, not a hang. faulthandler
    marks ``Current thread`` only in a fatal error's dump (the thread the signal hit) or in one
    a thread asked for (``dump_traceback``, a registered signal); its periodic dumps, and the
    NCCL watchdog's abort from a C++ thread, mark none. So a current thread that was computing
    (``interrupted_waiting`` false, not a dumper's own function) while every other thread of its
    file and writer sat in a standard-library wait is where a process crashed, when the
    ``Fatal Python error`` header was cut off (mamba#725's segfault in a Triton layer norm,
    yolov5#12655's abort inside numpy ``dot``). A dump a registered signal took of a process
    hung in a call no frame shows as a wait (``.item()`` in user code) reads the same: the
    limit of a dump without its header."""
    if not len(stacks) or "state" not in stacks:
        return stacks.iloc[0:0]
    fh = stacks["tid"].map(lambda t: isinstance(t, str) and bool(FH_TID_RE.match(t)))
    current = fh & (stacks["state"].fillna("") == "current")
    if not current.any():
        return stacks.iloc[0:0]
    keep = []
    for i, row in stacks[current].iterrows():
        frames = row["frames"] if isinstance(row["frames"], list) else []
        py = [p for p in map(split_frame, frames) if p.python]
        if not py or interrupted_waiting(frames) or DUMPER_FUNC_RE.search(py[0].func):
            continue
        same = (fh & ~current & (stacks["source"].map(_file_of) == _file_of(row["source"]))
                & _same_writer(stacks, row))
        others = stacks[same]
        if all(is_idle_helper_thread(None, f if isinstance(f, list) else [])
               for f in others["frames"]):
            keep.append(i)
    return stacks.loc[keep]


def _same_writer(stacks: pd.DataFrame, row: pd.Series) -> pd.Series:
    """Rows whose host, pid and rank are the row's (missing ones equal)."""
    same = pd.Series(True, index=stacks.index)
    for col in ("host", "pid", "rank"):
        v = _na(row[col]) if col in row else None
        same &= stacks[col].isna() if v is None else (stacks[col] == v).fillna(False)
    return same


def fatal_dump_rows(stacks: pd.DataFrame, errors: pd.DataFrame | None) -> pd.Series:
    """faulthandler's threads (``Thread 0x…``) in a file where the same writer's ``Fatal Python
    error`` line stands: the dump that error printed, a crash's diagnostics, not a hang's.
    faulthandler prints the header first, but two processes aborting together interleave
    their output, and the header can land after the dump or inside one of its frame lines
    (sglang#10407: ``…/_contextlib.pyFatal Python error: Aborted``)."""
    out = pd.Series(False, index=stacks.index)
    if not len(stacks) or errors is None or not len(errors) or "message" not in errors:
        return out
    fatal = errors[errors["message"].fillna("").str.contains(FATAL_ERROR_TEXT, regex=False)]
    if not len(fatal):
        return out
    fh = stacks["tid"].map(lambda t: isinstance(t, str) and bool(FH_TID_RE.match(t)))
    files = stacks["source"].map(_file_of)
    for _, row in fatal.iterrows():
        same = fh & (files == _file_of(row["source"]))
        for col in ("host", "rank"):
            v = _na(row[col]) if col in row else None
            same &= stacks[col].isna() if v is None else (stacks[col] == v).fillna(False)
        out |= same
    return out


def crashed_rows(stacks: pd.DataFrame, errors: pd.DataFrame | None = None) -> pd.Series:
    """Rows that belong to a crash's dump: a fatal error's (``fatal_dump_rows``, when the
    ``errors`` are given), or one whose header was lost (``crash_dumps``): its current thread,
    and the faulthandler threads of no named process beside an unnamed one's crash (a fatal
    error prints every thread, whichever file a paste put them in)."""
    dumps = crash_dumps(stacks)
    out = fatal_dump_rows(stacks, errors)
    if not len(dumps):
        return out
    out.loc[dumps.index] = True
    fh = stacks["tid"].map(lambda t: isinstance(t, str) and bool(FH_TID_RE.match(t)))
    for _, row in dumps.iterrows():
        out |= fh & _same_writer(stacks, row)
    return out


def hang_stacks(stacks: pd.DataFrame, alone: bool = True,
                errors: pd.DataFrame | None = None) -> pd.DataFrame:
    """The ``stacks`` rows that show a process hung: a stack (not the traceback of a crash,
    ``raised``, nor a watchdog's dump the process went on after, ``progress``, nor a Ctrl-C that
    stopped a process at work, ``interrupted_waiting``, nor a crash's faulthandler dump,
    ``crashed_rows``, a fatal error's among them when ``errors`` are given), or a state that says so (``HANG_STATES``); an idle thread with no frame is a
    process doing nothing, no hang. A traceback with no exception line (``traceback``: pasted
    as a stack; ``cut``: its header, then the output cut), or frames with no header at all (no thread, no pid: the tail of a
    crash's faulthandler dump), counts only when it is ``alone``: no error, exit or collective
    beside it, which it would be a piece of."""
    if not len(stacks):
        return stacks
    state = stacks["state"].fillna("")
    framed = stacks["frames"].map(lambda f: isinstance(f, list) and len(f) > 0)
    headless = (state == "") & stacks["thread"].isna() & stacks["tid"].isna() & stacks["pid"].isna()
    # (a traceback cut before its exception's line may be a hang's Ctrl-C pasted without its
    # KeyboardInterrupt line, pytorch#26072, or a crash's: counted only alone, as pasted frames)
    unsure = state.isin(("traceback", "cut")) | headless
    busy = (state == "interrupted") & ~stacks["frames"].map(interrupted_waiting)
    busy |= crashed_rows(stacks, errors)
    keep = framed & ~state.isin(("raised", "progress")) & (alone | ~unsure) & ~busy
    return stacks[keep | state.isin(HANG_STATES)]


def interrupted_waiting(frames: Any) -> bool:
    """Whether a Ctrl-C traceback (``interrupted``) caught its process waiting: the signal
    lands where a blocked call takes it (``WAIT_FUNC_RE``, a stdlib wait, a collective); one that
    lands in computing code (``forward``, ``backward``, a loop) stopped a process that ran."""
    if not isinstance(frames, list) or not frames:
        return False
    leaf = next((p for p in map(split_frame, frames) if p.python), split_frame(frames[0]))
    return bool(WAIT_FUNC_RE.match(leaf.func) or HELPER_WAIT_RE.search(leaf.file)
                or in_collective(frames))


def stacks_alone(incident: Any) -> bool:
    """No error, exit or collective beside the stacks: a headless or exception-less traceback
    is then a stack pasted on its own, not a piece of a crash (``hang_stacks``). Python's
    "Exception ignored in …" header is no error: an atexit hook's wait that timed out
    (pytorch#162199) is the hang's own sample."""
    e = incident.errors
    own = e[e["code"] != EXCEPTION_IGNORED_CODE] if len(e) and "code" in e else e
    return not (len(own) or len(incident.exits) or len(incident.collectives))


def barrier_waits(collectives: pd.DataFrame) -> pd.DataFrame:
    """Ranks waiting in init_process_group's store-based barrier (``started`` rows), when the
    barrier did not time out (a start-up barrier that timed out is the timeout's)."""
    c = collectives
    waiting = c[(c["op_type"] == STORE_BARRIER_OP).fillna(False)] if len(c) else c
    if not len(waiting) or (waiting["state"] == "timed_out").any():
        return waiting.iloc[0:0]
    return waiting[waiting["state"] == "started"]


def _timed(c: pd.DataFrame) -> pd.Series:
    """Rows that say how long a rank waited (a watchdog's or gloo's timeout, its elapsed time)."""
    return c["timeout_ms"].notna() | c["ran_for_ms"].notna()


def _report(c: pd.DataFrame) -> pd.Series:
    """Rows of a stall report's op (Horovod's): no timeout, elapsed time, sequence number or
    group, and the printer's rank or none (a watchdog's line says how long its rank waited)."""
    return c["rank"].isna() | (c["seq_num"].isna() & c["process_group"].isna() & ~_timed(c))


def stall_reports(collectives: pd.DataFrame) -> pd.DataFrame:
    """The rows of a stall warning that names ranks while nothing has timed out (Horovod's
    stall inspector: ``HorovodBroadcast_w_0 [missing ranks: 1]``, ``allreduce.w [ready ranks:
    0, 2]``, ``Stalled ranks:`` / ``Missing ranks:`` then ``R: [op, …]``): each stalled op's
    ``timed_out`` row with no timeout, elapsed time, sequence number or group, and the ranks it
    names ready or missing in that op. A barrier is not one: the start-up and JAX barriers have
    their own rules, and gloo's monitored barrier raises when its timeout runs out. Where
    anything timed out (a row with a timeout, an elapsed time, a sequence number or a group:
    a watchdog's, gloo's), the warning is that timeout's prelude: none."""
    c = collectives
    if not len(c) or "state" not in c:
        return c.iloc[0:0]
    out = (c["state"] == "timed_out").fillna(False)
    barrier = c["op_type"].isin([STORE_BARRIER_OP, MONITORED_BARRIER_OP]).fillna(False) | c[
        "op_type"].map(lambda o: is_jax_barrier(_na(o)))
    timed = _timed(c) | c["seq_num"].notna() | c["process_group"].notna()
    if (out & (timed.fillna(False) | barrier)).any():
        return c.iloc[0:0]
    named = c["state"].isin(["absent", "started"]).fillna(False) & c["rank"].notna()
    ops = set(c["op_type"][out & ~barrier].dropna()) & set(c["op_type"][named].dropna())
    return c[c["op_type"].isin(ops).fillna(False) & (out | named) & ~barrier]


def shows_hang(incident: Any) -> bool:
    """Whether the incident shows a process hung: a stack that waits (``hang_stacks``) or ranks
    waiting in the start-up barrier; a crash's traceback or an idle thread is no hang."""
    return bool(len(hang_stacks(incident.stacks, stacks_alone(incident), incident.errors))
                or len(barrier_waits(incident.collectives)))
