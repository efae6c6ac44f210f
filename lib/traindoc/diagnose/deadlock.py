"""A hang with no timeout: group every process by where its main thread is, name the one(s)
that are somewhere else, and tie that to the flight recorder when dumps are there.

Rules (documented because the runbook's facts depend on them):

- **Processes.** One per (host, pid); else per rank; else per dump file. DataLoader worker and
  pin-memory processes (``torch/utils/data/_utils/worker.py`` …) are helpers, not ranks: they
  are counted apart. When one process was dumped several times, the last snapshot counts and
  the others say whether it moved.
- **Thread.** ``MainThread`` by default (``pt_main_thread`` in faulthandler's OS names; a
  process with one unnamed thread uses it); ``thread="*"`` takes every thread except idle
  helpers (pt_autograd, tqdm's monitor, pin_memory, and non-main threads parked in a stdlib
  wait).
- **Leaf.** The innermost *Python* frame that is not in the standard library's generic
  blocking primitives (``threading``, ``queue``, ``selectors``, ``multiprocessing`` queues /
  connections / locks, ``concurrent.futures``), printed as py-spy prints it,
  ``function (file:line)``. Those primitives say *that* a thread waits, not *for what*; their
  line numbers even change with the Python version (``wait (threading.py:306)`` on 3.8,
  ``Condition.wait (threading.py:327)`` on 3.11). So the BLOOM eval hang's leaf is
  ``_try_get_data (torch/utils/data/dataloader.py:1011)``, not the ``wait``/``get`` under it.
  Native frames (``--native``) are skipped the same way. The ``stacks`` table's own ``leaf``
  column stays the innermost frame as printed.
- **Signature.** The leaf and the Python frames outside it (``depth`` of them; 0 = all): two
  processes share a signature when they wait at the same place reached the same way.
- **Outliers.** When some processes wait inside a collective (``torch.distributed`` /
  DeepSpeed comm) and no more of them are outside one, those outside are the outliers: a
  collective only finishes when every rank calls it, so the ranks outside it are the ones
  everyone waits for. Otherwise (all, none or only a few in collectives — NCCL ranks often
  block later, in ``.item()`` or a CUDA sync), the members of the strictly smallest group(s)
  are. When the
  stacks single out no one, a decisive flight-recorder disagreement (ranks missing from a
  collective, or a minority that issued a different one) names them.
- **Ranks** come from the logs (prefixes, per-rank files, ``trace-<host>-rank<N>.out``). When a
  dump names no rank and flight-recorder dumps exist, a process whose Python call chain (torch
  frames aside) equals a rank's last recorded collective's stack is that rank; one process and
  one rank left over are matched by elimination. Either is reported as an inference.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, NamedTuple

import pandas as pd

from ..incident import Incident
from ..report import Action, Finding, Report, ranked
from .collectives import first_mismatch, rank_positions
from .common import input_findings, last_progress

FACT_KEYS = ("processes_seen", "groups", "outlier_members", "outlier_leaf", "majority_leaf",
             "first_mismatch")

FRAME_RE = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]+?)(?::(?P<line>\d+))?\)$")
# The standard library's blocking primitives: py-spy prints them relative to the stdlib
# directory (``threading.py``), faulthandler with the full path (``…/lib/python3.11/…``).
_STDLIB_DIR = r"(?:^|[/\\]lib(?:[/\\]python\d[\d.]*t?)?[/\\])"
_WAIT_MODULES = (r"threading|queue|selectors|multiprocessing[/\\](?:queues|connection|synchronize"
                 r"|pool)|concurrent[/\\]futures[/\\](?:_base|thread)")
GENERIC_WAIT_RE = re.compile(rf"{_STDLIB_DIR}(?:{_WAIT_MODULES})\.py$", re.IGNORECASE)
# Where a helper thread parks: the generic primitives plus signal.sigwait and socket waits.
HELPER_WAIT_RE = re.compile(rf"{_STDLIB_DIR}(?:{_WAIT_MODULES}|signal|socket|socketserver)\.py$",
                            re.IGNORECASE)
HELPER_THREAD_RE = re.compile(
    r"^(?:pt_autograd|pt_thread_pool|pt_tensorpipe|QueueFeederThread|TMonitor|tqdm)"
    r"|pin_memory|_monitor|tqdm", re.IGNORECASE)
HELPER_PROCESS_RE = re.compile(
    r"torch[/\\]utils[/\\]data[/\\]_utils[/\\](?:worker|pin_memory)\.py"
    r"|torch[/\\]_inductor[/\\]compile_worker")
COLLECTIVE_RE = re.compile(
    r"torch[/\\]distributed[/\\](?:distributed_c10d|_functional_collectives|c10d_logger)\.py$"
    r"|deepspeed[/\\]comm[/\\](?:comm|torch|ccl)\.py$")
TORCH_FILE_RE = re.compile(r"(?:^|[/\\])torch[/\\]")
DATALOADER_RE = re.compile(r"torch[/\\]utils[/\\]data[/\\]dataloader\.py$")
EVAL_FUNC_RE = re.compile(r"eval|valid", re.IGNORECASE)
HEX_ADDR_RE = re.compile(r"^0x[0-9a-fA-F]+$")
MAIN_THREAD_NAMES = ("MainThread", "pt_main_thread")
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
    for i, p in enumerate(parts):
        if p.python and not GENERIC_WAIT_RE.search(p.file):
            return i
    for i, p in enumerate(parts):
        if p.python:
            return i
    for i, p in enumerate(parts):
        if not HEX_ADDR_RE.match(p.func):
            return i
    return 0 if frames else None


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
    """True when a frame is inside a torch.distributed / DeepSpeed collective."""
    return any(COLLECTIVE_RE.search(split_frame(f).file) for f in frames)


def is_helper_process(frames: list[str]) -> bool:
    """A DataLoader worker / pin-memory / compile-worker process (not a rank)."""
    return any(HELPER_PROCESS_RE.search(split_frame(f).file) for f in frames)


def is_idle_helper_thread(name: str | None, frames: list[str]) -> bool:
    """A non-main thread that is a known helper or parked in a stdlib wait."""
    if name in MAIN_THREAD_NAMES:
        return False
    if name and HELPER_THREAD_RE.search(name):
        return True
    py = [split_frame(f) for f in frames if split_frame(f).python]
    return not py or bool(HELPER_WAIT_RE.search(py[0].file))


def _na(v: Any) -> Any:
    return None if v is None or v is pd.NA or (isinstance(v, float) and pd.isna(v)) else v


def _file_of(source: Any) -> str:
    s = str(source or "?")
    s = s.split("#", 1)[0]
    return s.rsplit(":", 1)[0] if re.search(r":\d+$", s) else s


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

    @property
    def member(self) -> Any:
        """The rank, else ``host:pid``, else the dump file."""
        if self.rank is not None:
            return self.rank
        if self.pid is not None:
            return f"{self.host or '?'}:{self.pid}"
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

    def signature(self, row: _Row) -> str:
        key = _frame_key(row)
        sig = self._sig.get(key)
        if sig is None:
            sig = self._sig[key] = signature(list(key), self.depth)
        return sig

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
    """One ``Proc`` per process seen in the ``stacks`` table (dump errors left out)."""
    if not len(stacks):
        return []
    df = stacks[stacks["state"].fillna("") != "dump_error"]
    if not len(df):
        return []
    # Plain Python lists and a dict of rows per process, in table order: a DataFrame groupby
    # with a sub-frame per process costs far more than the work done on each.
    cols = [list(df[c]) if c in df else [None] * len(df) for c in _Row._fields]
    groups: dict[tuple[Any, ...], list[_Row]] = {}
    for row in map(_Row._make, zip(*cols, strict=True)):
        host, pid, rank = _na(row.host), _na(row.pid), _na(row.rank)
        if pid is not None:
            key: tuple[Any, ...] = ("pid", host, int(pid))
        elif rank is not None:
            key = ("rank", host, int(rank))
        else:
            key = ("file", host, _file_of(row.source))
        groups.setdefault(key, []).append(row)
    memo = _FrameMemo(depth)
    leaf_memo: dict[tuple[str, ...], tuple[str | None, bool, bool]] = {}
    out: list[Proc] = []
    for key, rows in groups.items():
        chosen = _choose_threads(rows, thread, memo)
        if not chosen:
            continue
        snaps = _snapshots(chosen)
        last = snaps[-1]
        mains = [r for r in last if _na(r.thread) in MAIN_THREAD_NAMES]
        first = mains[0] if mains else last[0]
        fkey = _frame_key(first)
        if fkey not in leaf_memo:
            frames = list(fkey)
            leaf_memo[fkey] = (key_leaf(frames), in_collective(frames), is_helper_process(frames))
        leaf, coll, helper = leaf_memo[fkey]
        sigs = [" ‖ ".join(sorted(memo.signature(r) for r in s)) for s in snaps]
        out.append(Proc(
            key=key, rank=_int(first.rank), host=_na(first.host), pid=_int(first.pid),
            frames=list(fkey), leaf=leaf, signature=sigs[-1],
            in_collective=coll, helper=helper,
            source=str(first.source), line=str(_na(first.line) or ""),
            thread=_na(first.thread), state=_na(first.state), cmd=_na(first.cmd),
            snapshots=len(snaps), moved=len(set(sigs)) > 1, count=_int(first.count) or 1,
            threads=[str(_na(r.thread) or _na(r.tid) or "?") for r in last]))
    return out


def _int(v: Any) -> int | None:
    v = _na(v)
    return None if v is None else int(v)


def _choose_threads(rows: list[_Row], thread: str, memo: _FrameMemo) -> list[_Row]:
    if thread == "*":
        keep = [r for r in rows if not memo.idle_helper(r)]
        return keep or [r for r in rows if _na(r.thread) in MAIN_THREAD_NAMES]
    names = MAIN_THREAD_NAMES if thread in MAIN_THREAD_NAMES else (thread,)
    chosen = [r for r in rows if _na(r.thread) in names]
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


# -- diagnosis ----------------------------------------------------------------------------------
def groups_table(procs: list[Proc], outliers: set[Any] | None = None) -> pd.DataFrame:
    """Processes grouped by signature: count, leaf, members, and whether they are outliers."""
    cols = ["count", "leaf", "call_site", "in_collective", "outlier", "members", "signature"]
    ranks = [p for p in procs if not p.helper]
    if not ranks:
        return pd.DataFrame(columns=cols)
    by: dict[str, list[Proc]] = {}
    for p in ranks:
        by.setdefault(p.signature, []).append(p)
    rows = []
    for sig, ps in by.items():
        members = sorted((p.member for p in ps), key=lambda m: (isinstance(m, str), str(m).zfill(12)))
        rows.append({"count": n_procs(ps), "leaf": ps[0].leaf, "call_site": call_site(ps[0].frames),
                     "in_collective": ps[0].in_collective,
                     "outlier": bool(outliers) and ps[0].member in outliers,
                     "members": members, "signature": sig})
    df = pd.DataFrame(rows, columns=cols)
    df["_first"] = df["members"].map(lambda m: str(m[0]).zfill(12) if m else "")
    return df.sort_values(["count", "_first"], ascending=[False, True]).drop(
        columns="_first").reset_index(drop=True)


def find_outliers(procs: list[Proc]) -> tuple[list[Proc], str]:
    """The processes the others wait for, and the rule that named them."""
    ranks = [p for p in procs if not p.helper]
    if n_procs(ranks) < 2:
        return [], "too_few"
    inside = [p for p in ranks if p.in_collective]
    outside = [p for p in ranks if not p.in_collective]
    if inside and outside and n_procs(outside) <= n_procs(inside):
        return outside, "outside_collective"
    counts: Counter[str] = Counter()
    for p in ranks:
        counts[p.signature] += p.count
    if len(counts) < 2:
        return [], "all_same"
    low, high = min(counts.values()), max(counts.values())
    if low == high:
        return [], "tie"
    small = {s for s, n in counts.items() if n == low}
    return [p for p in ranks if p.signature in small], "smallest_group"


def _most_common(values: list[str | None], weights: list[int] | None = None) -> str | None:
    """The most common value (each counted ``weights`` times); None when two or more share the
    top count (no majority)."""
    tally: Counter[str] = Counter()
    for v, w in zip(values, weights or [1] * len(values), strict=True):
        if v:
            tally[v] += w
    top = tally.most_common(2)
    if not top or (len(top) > 1 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


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


def _member_sort(members: list[Any]) -> list[Any]:
    return sorted(members, key=lambda m: (isinstance(m, str), str(m).zfill(12)))


def analyse(incident: Incident, thread: str = "MainThread",
            depth: int | None = None) -> tuple[list[Proc], list[Proc], str, dict[tuple[Any, ...], tuple[int, str]]]:
    """Processes (ranks inferred where the flight recorder allows), the outliers, the rule
    that named them, and the inferred ranks."""
    procs = processes(incident.stacks, thread=thread, depth=depth or None)
    inferred = infer_ranks(procs, incident.collectives)
    for p in procs:
        if p.key in inferred:
            p.rank, p.rank_inferred = inferred[p.key]
    outliers, rule = find_outliers(procs)
    return procs, outliers, rule, inferred


def tables(incident: Incident, thread: str = "MainThread",
           depth: int | None = None) -> dict[str, pd.DataFrame]:
    """What the runbook shows: ``processes`` (one row per process), ``groups`` (by signature),
    ``outliers`` (with their frames) and ``flight_recorder`` (last collective per rank)."""
    procs, outliers, _, _ = analyse(incident, thread, depth)
    mm = first_mismatch(incident.collectives)
    if not outliers and mm and _decisive(mm):
        outliers = [p for p in procs if not p.helper and p.rank in set(mm["ranks"])]
    out_keys = {p.key for p in outliers}
    rows = [{"member": str(p.member), "rank": p.rank, "host": p.host, "pid": p.pid,
             "thread": p.thread, "state": p.state, "leaf": p.leaf, "call_site": call_site(p.frames),
             "in_collective": p.in_collective, "outlier": p.key in out_keys,
             "helper_process": p.helper, "snapshots": p.snapshots, "moved": p.moved,
             "rank_inferred": p.rank_inferred, "source": p.source} for p in procs]
    proc_cols = ["member", "rank", "host", "pid", "thread", "state", "leaf", "call_site",
                 "in_collective", "outlier", "helper_process", "snapshots", "moved",
                 "rank_inferred", "source"]
    frames = [{"member": str(p.member), "frame": f} for p in outliers
              for f in p.frames[: (key_leaf_index(p.frames) or 0) + 12]]
    return {
        "processes": pd.DataFrame(rows, columns=proc_cols).astype(
            {"rank": "Int64", "pid": "Int64", "snapshots": "Int64"}),
        "groups": groups_table(procs, {p.member for p in outliers}),
        "outliers": pd.DataFrame(frames, columns=["member", "frame"]),
        "flight_recorder": _fr_view(incident, procs),
    }


def diagnose(incident: Incident, thread: str = "MainThread", depth: int | None = None) -> Report:
    """Diagnose a hang from stack dumps (and flight-recorder dumps when there are any).
    ``thread``: the thread to compare ("MainThread", a thread name, or "*" for all busy
    threads); ``depth``: frames per signature from the leaf outwards (None or 0: all)."""
    facts: dict[str, Any] = {k: None for k in FACT_KEYS}
    facts.update(processes_seen=0, groups=[], outlier_members=[])
    findings: list[Finding] = []
    stacks = incident.stacks
    procs, outliers, rule, inferred = analyse(incident, thread, depth)
    mismatch = first_mismatch(incident.collectives)
    facts["first_mismatch"] = mismatch
    if inferred:
        findings.append(Finding(
            "ranks_inferred", "info",
            "Ranks inferred for dumps that named none: " + "; ".join(
                f"{p.host or '?'}:{p.pid} is rank {p.rank} ({p.rank_inferred})"
                for p in procs if p.rank_inferred), []))

    ranks = [p for p in procs if not p.helper]
    helpers = [p for p in procs if p.helper]
    facts["processes_seen"] = n_procs(ranks)
    errors = stacks[stacks["state"].fillna("") == "dump_error"] if len(stacks) else stacks

    fr_named = False
    if not outliers and mismatch and _decisive(mismatch):
        want = set(mismatch["ranks"])
        outliers = [p for p in ranks if p.rank in want]
        fr_named = True
    out_members = {p.member for p in outliers}
    table = groups_table(procs, out_members)
    facts["groups"] = [{"signature": r["signature"], "leaf": r["leaf"], "members": r["members"],
                        "count": int(r["count"])} for _, r in table.iterrows()]
    if fr_named and not outliers and mismatch:
        facts["outlier_members"] = list(mismatch["ranks"])
    else:
        facts["outlier_members"] = _member_sort(list(out_members))
    facts["outlier_leaf"] = _most_common([p.leaf for p in outliers], [p.count for p in outliers])
    rest = [p for p in ranks if p.member not in out_members]
    facts["majority_leaf"] = _most_common([p.leaf for p in rest], [p.count for p in rest])

    # Findings.
    if not ranks:
        findings.append(Finding(
            "no_stacks", "warning",
            "No stack dumps (py-spy or faulthandler) were found: a hang without a timeout can "
            "only be located from every rank's stack" + (
                "; the flight-recorder dumps are read below" if mismatch else ""), []))
    else:
        findings.append(Finding(
            "stack_groups", "info",
            f"{n_procs(ranks)} process(es) in {len(table)} group(s) by where their "
            f"{'threads are' if thread == '*' else thread + ' is'}: " + "; ".join(
                f"{r['count']} in {r['leaf']}" for _, r in table.head(8).iterrows()),
            [f"{len(g['members'])} × {g['signature'][:300]}" for g in facts["groups"][:8]]))
    if outliers:
        why = {"outside_collective": "outside any collective while the others wait in one",
               "smallest_group": "in a state no larger group shares",
               }.get(rule, "named by the flight recorder")
        findings.append(Finding(
            "outliers", "critical",
            f"{_who(facts['outlier_members'])} {'is' if len(outliers) == 1 else 'are'} {why}: "
            f"{facts['outlier_leaf']}" + (
                f" (the others: {facts['majority_leaf']})" if facts["majority_leaf"] else ""),
            _stack_evidence(outliers)))
    elif ranks and rule == "all_same":
        where = "inside the same collective" if ranks[0].in_collective else "at the same place"
        findings.append(Finding(
            "all_same", "warning",
            f"All {n_procs(ranks)} processes are {where}: {ranks[0].leaf}", _stack_evidence(ranks[:2])))
    if mismatch:
        findings.append(Finding(
            "first_mismatch", "critical", _mismatch_title(mismatch),
            _mismatch_evidence(incident, mismatch)))
    fr = _fr_view(incident, procs)
    if len(fr):
        findings.append(Finding(
            "flight_recorder", "info",
            "Flight recorder, last collective per rank: " + "; ".join(
                f"rank {r.rank}: seq {r.last_seq} {r.last_op}" for r in fr.head(16).itertuples()),
            []))
    moved = [p for p in ranks if p.moved]
    multi = [p for p in ranks if p.snapshots > 1]
    if multi:
        findings.append(Finding(
            "snapshots", "warning" if moved else "info",
            (f"{len(moved)} of {len(multi)} processes dumped more than once moved between "
             "snapshots: the job may be slow rather than hung" if moved else
             f"{len(multi)} process(es) dumped more than once did not move: stuck, not slow"),
            _stack_evidence(moved[:4])))
    if helpers:
        findings.append(Finding(
            "helper_processes", "info",
            f"{len(helpers)} DataLoader worker / helper process(es) left out of the grouping "
            f"(they are not ranks): " + "; ".join(sorted({str(p.leaf) for p in helpers})[:4]),
            _stack_evidence(helpers[:4])))
    if len(errors):
        findings.append(Finding(
            "dump_errors", "warning",
            f"py-spy failed on {len(errors)} process(es): those ranks' stacks are missing",
            [f"{s}: {ln}" for s, ln in zip(errors["source"].head(10), errors["line"].head(10),
                                            strict=False)]))
    findings += input_findings(incident)

    traps = _traps(outliers, rest, mismatch, rule)
    actions = ranked(_actions(traps, facts, incident, bool(ranks)))
    verdict, confidence = _verdict(facts, outliers, rest, rule, mismatch, traps, ranks, fr_named)
    prog = last_progress(incident)
    if prog.step is not None:
        findings.append(Finding("last_progress", "info",
                                f"Last progress before the hang: {prog.describe()}",
                                [f"{prog.source}: {prog.line}"]))
    return Report("deadlock", verdict, confidence, facts, findings, actions)


def _per_rank_sites(ranks: list[Proc], mm: dict[str, Any]) -> str:
    """'; stacks: rank 0 in all_reduce (…) from worker (train.py:84), …' for the mismatch's ranks."""
    want = {int(r) for r in mm["ops"]}
    parts = []
    for p in sorted((p for p in ranks if p.rank in want), key=lambda p: p.rank):
        site = call_site(p.frames)
        parts.append(f"rank {p.rank} in {p.leaf}" + (f" called from {site}" if site else ""))
    return "; stacks: " + "; ".join(parts) if parts else ""


def _decisive(mm: dict[str, Any]) -> bool:
    """A flight-recorder disagreement that names who is off: missing/unfinished ranks, or a
    strict minority issuing something else."""
    if mm["kind"] in ("missing_ranks", "state"):
        return bool(mm["ranks"])
    return bool(mm["ranks"]) and 2 * len(mm["ranks"]) < len(mm["ops"])


def _who(members: list[Any], start: bool = True) -> str:
    ranks = [m for m in members if isinstance(m, int)]
    procs = [m for m in members if not isinstance(m, int)]
    parts = []
    if ranks:
        parts.append(("Rank " if len(ranks) == 1 else "Ranks ") + ", ".join(map(str, ranks[:16])))
    if procs:
        parts.append(("process " if len(procs) == 1 else "processes ") + ", ".join(procs[:8]))
    text = " and ".join(parts) or "no process"
    return (text[0].upper() + text[1:]) if start else text[0].lower() + text[1:]


def _stack_evidence(procs: list[Proc], frames: int = 6) -> list[str]:
    out = []
    for p in procs[:6]:
        out.append(f"{p.source}: {p.line}")
        i = key_leaf_index(p.frames) or 0
        out += [f"    {f}" for f in p.frames[:i + frames] if split_frame(f).python][:frames + i]
    return out


def _mismatch_title(mm: dict[str, Any]) -> str:
    ops = ", ".join(f"rank {r}: {o}" for r, o in mm["ops"].items())
    what = {"op": "issued different collectives", "size": "issued different sizes",
            "dtype": "issued different dtypes",
            "missing_ranks": f"did not all reach it (missing: ranks {mm['ranks']})",
            "state": f"did not all finish it (not completed on ranks {mm['ranks']})"}[mm["kind"]]
    return (f"Flight recorder: at sequence number {mm['seq_num']} of process group "
            f"{mm['process_group']} ranks {what} — {ops}")


def _mismatch_evidence(incident: Incident, mm: dict[str, Any]) -> list[str]:
    c = incident.collectives
    rows = c[(c["seq_num"] == mm["seq_num"]) & (c["process_group"].fillna("?") == mm["process_group"])]
    return [f"{s}: {ln}" for s, ln in zip(rows["source"].head(16), rows["line"].head(16), strict=False)]


def fr_view(incident: Incident, thread: str = "MainThread") -> pd.DataFrame:
    """Per rank: the last collective its flight recorder saw, next to where its stack is."""
    return _fr_view(incident, analyse(incident, thread)[0])


def _fr_view(incident: Incident, procs: list[Proc]) -> pd.DataFrame:
    cols = ["rank", "process_group", "last_seq", "last_op", "last_completed", "stack_leaf"]
    c = incident.collectives
    fr = c[c["source"].str.contains("#entry", regex=False, na=False) & c["rank"].notna()
           & c["seq_num"].notna()]
    if not len(fr):
        return pd.DataFrame(columns=cols)
    inferred = infer_ranks(procs, c)
    leaf_by_rank: dict[int, str | None] = {}
    for p in procs:
        r = p.rank if p.rank is not None else inferred.get(p.key, (None,))[0]
        if r is not None and not p.helper:
            leaf_by_rank[int(r)] = p.leaf
    pos = rank_positions(c)
    rows = []
    for (pg, rank), g in fr.assign(process_group=fr["process_group"].fillna("?")).groupby(
            ["process_group", "rank"], sort=True):
        last = g.loc[g["seq_num"].idxmax()]
        p = pos[(pos["process_group"] == pg) & (pos["rank"] == rank)]
        rows.append({"rank": int(rank), "process_group": pg, "last_seq": int(last["seq_num"]),
                     "last_op": last["op_type"],
                     "last_completed": _na(p["last_completed"].iloc[0]) if len(p) else None,
                     "stack_leaf": leaf_by_rank.get(int(rank))})
    return pd.DataFrame(rows, columns=cols)


# -- known traps and actions ---------------------------------------------------------------------
def _has(procs: list[Proc], pattern: re.Pattern[str], part: str = "file") -> bool:
    return any(pattern.search(getattr(split_frame(f), part)) for p in procs for f in p.frames)


def _traps(outliers: list[Proc], rest: list[Proc], mm: dict[str, Any] | None,
           rule: str) -> dict[str, str]:
    """Known causes the stacks point at: trap id -> the evidence in words."""
    traps: dict[str, str] = {}
    if outliers:
        o = outliers[0]
        leaf = o.leaf or "?"
        dataloader = _has(outliers, DATALOADER_RE)
        queue_wait = any(GENERIC_WAIT_RE.search(split_frame(f).file) for f in o.frames[:3])
        eval_phase = _has(outliers, EVAL_FUNC_RE, "func")
        if dataloader or (queue_wait and eval_phase and not o.in_collective):
            what = ("waits for a batch from its DataLoader workers" if dataloader
                    else "waits on a data queue that is never filled")
            traps["eval_dataloader" if eval_phase else "dataloader"] = (
                f"{_who([o.member])} {what} in {leaf}"
                + (" during evaluation" if eval_phase else ""))
        if o.in_collective and rest and rest[0].in_collective and o.leaf != rest[0].leaf:
            site_o, site_r = call_site(o.frames), call_site(rest[0].frames)
            traps["rank_conditional"] = (
                f"{_who([o.member])} waits in {leaf}" + (f" called from {site_o}" if site_o else "")
                + f" while the others wait in {rest[0].leaf}"
                + (f" called from {site_r}" if site_r else ""))
        if (eval_phase or _has(rest, EVAL_FUNC_RE, "func")) and rule == "outside_collective":
            traps["barrier_before_eval"] = (
                f"The hang is in the evaluation phase: {_who([o.member], start=False)} is in {leaf}, the "
                f"others in {rest[0].leaf if rest else '?'}")
    if mm and mm["kind"] in ("op", "size", "dtype"):
        traps.setdefault("rank_conditional",
                         _mismatch_title(mm) + _per_rank_sites(outliers + rest, mm))
    return traps


def _actions(traps: dict[str, str], facts: dict[str, Any], incident: Incident,
             have_stacks: bool) -> list[Action]:
    acts: list[Action] = []
    if "eval_dataloader" in traps or "dataloader" in traps:
        ev = traps.get("eval_dataloader") or traps["dataloader"]
        acts.append(Action(
            "eval_loader_num_workers_0", 1,
            "Load eval data in the main process (num_workers=0), or give the DataLoader a timeout",
            f"{ev}, while its peers wait in {facts['majority_leaf']}. A worker that never "
            "delivers — a worker deadlock (pytorch/pytorch#25158) or a read that never returns — "
            "hangs every rank, and no collective timeout fires for the rank outside the "
            "collective. BLOOM-176B lost ~11 h to this and fixed it with num_workers=0 for the "
            "validation loaders (bigscience-workshop/Megatron-DeepSpeed#282).",
            "DataLoader(eval_dataset, batch_size=…, num_workers=0)  # eval loaders only; or keep "
            "workers and set DataLoader(..., num_workers=2, timeout=600) so a stuck worker "
            "raises instead of hanging; inspect the workers: py-spy dump --pid <worker pid>"))
    if "rank_conditional" in traps:
        acts.append(Action(
            "rank_conditional_collective", 1,
            "Find the collective that not every rank calls (a rank-conditional branch)",
            f"{traps['rank_conditional']}. Every rank must issue the same collectives in the same "
            "order; a collective under `if rank == 0:` (or a branch on data a rank alone sees) "
            "leaves the others waiting for ever.",
            "grep -nE 'get_rank\\(\\)|rank ?==|is_main_process|local_rank' around the call sites "
            "above; rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL (checks that ranks agree on each "
            "collective and names the first mismatch)"))
    if "barrier_before_eval" in traps:
        acts.append(Action(
            "barrier_before_eval", 2,
            "Synchronise all ranks before evaluation starts",
            f"{traps['barrier_before_eval']}. Ranks that enter eval out of step race on "
            "eval-only collectives; BLOOM-176B's eval hang at iteration 45000 was fixed by a "
            "dist.barrier() before eval (microsoft/DeepSpeed#1944).",
            "torch.distributed.barrier()  # first line of evaluate(), on every rank"))
    if have_stacks and not facts["outlier_members"] and not facts["first_mismatch"]:
        acts.append(Action(
            "check_transport", 2,
            "Test the interconnect and GPUs of the nodes involved",
            "Every process waits inside the same collective: all arrived and it never finished, "
            "which points at the transport (network, NVLink, a sick GPU) rather than the program.",
            "NCCL_DEBUG=INFO; nccl-tests all_reduce_perf -b 8 -e 1G -f 2 -g 8 per node and across "
            "nodes; dmesg | grep -i xid on every node"))
    n = len(acts) + 3
    acts.append(Action(
        "py_spy_all_ranks", n,
        "Next hang: dump every rank's stack on every node, tagged with its rank",
        "Stacks of all ranks are what locates a hang with no timeout: the process not where the "
        "others are is the culprit. Rank-tagged file names let this runbook name ranks; two "
        "rounds a minute apart tell stuck from slow; `timeout` keeps a wedged py-spy from "
        "hanging the collection (BLOOM's py-spy over srun once sat doing nothing).",
        "srun --overlap --jobid $SLURM_JOB_ID --ntasks-per-node=1 bash -c 'for p in $(pgrep -f "
        "\"[t]rain.py\"); do r=$(tr \"\\0\" \"\\n\" < /proc/$p/environ | sed -n \"s/^RANK=//p\"); "
        "timeout 120 py-spy dump --pid $p > trace-$(hostname)${r:+-rank$r}-$p.out 2>&1; done'  "
        "# as root or with CAP_SYS_PTRACE; [t]rain.py: your script, bracketed so pgrep skips this "
        "shell; DataLoader workers are dumped too and set apart; then log_path=<that directory>"))
    acts.append(Action(
        "flight_recorder", n + 1,
        "Record collectives in the flight recorder, and dump it on demand",
        "The flight recorder says which collective (sequence number, op, sizes) each rank "
        "issued last, and names the first disagreement; a hang with no timeout never triggers "
        "dump-on-timeout, so arm the on-demand pipe too (a FIFO per rank, local to its node).",
        "export TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_FR_BUFFER_SIZE=2000 "
        "TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/shared/fr/nccl_trace_rank_ "
        "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/tmp/fr_pipe_rank_  # on a hang: srun --overlap --jobid "
        "$SLURM_JOB_ID --ntasks-per-node=1 bash -c 'for f in /tmp/fr_pipe_rank_*.pipe; do echo 1 "
        "> $f; done'; then torchfrtrace /shared/fr -p nccl_trace_rank_ (and log_path=/shared/fr)"))
    acts.append(Action(
        "make_hangs_fail", n + 2,
        "Turn a silent hang into an error: async error handling and a finite timeout",
        "No rank timed out here. With NCCL async error handling and a collective timeout the "
        "watchdog tears the job down after the timeout (so it can restart) and, with "
        "TORCH_NCCL_DUMP_ON_TIMEOUT=1, leaves the dumps this runbook reads. BLOOM-176B added "
        "NCCL_ASYNC_ERROR_HANDLING=1 after its hangs.",
        "export TORCH_NCCL_ASYNC_ERROR_HANDLING=1  # older torch reads NCCL_ASYNC_ERROR_HANDLING; "
        "dist.init_process_group(..., timeout=datetime.timedelta(minutes=30)); srun --wait=60 "
        "--kill-on-bad-exit=1"))
    if incident.account.get("dumps"):
        acts.append(Action(
            "torchfrtrace", n + 3,
            "Cross-check the flight-recorder dumps with torch's own analyser",
            "torchfrtrace reports missing ranks and mismatched collectives from the same dumps. "
            "On gloo dumps from torch 2.13 it raises KeyError (their pg_config keys do not match "
            "the entries' process-group names); this runbook's reading does not depend on it.",
            "torchfrtrace <dump dir> -p <file prefix before the rank, e.g. nccl_trace_rank_>"))
    return acts


def _verdict(facts: dict[str, Any], outliers: list[Proc], rest: list[Proc], rule: str,
             mm: dict[str, Any] | None, traps: dict[str, str], ranks: list[Proc],
             fr_named: bool) -> tuple[str, str]:
    n_rest = n_procs(rest)
    fr_part = ""
    if mm:
        fr_part = (f"; the flight recorder agrees: at sequence {mm['seq_num']} "
                   + ", ".join(f"rank {r}: {o}" for r, o in mm["ops"].items())
                   + (f" (missing: ranks {mm['ranks']})" if mm["kind"] == "missing_ranks" else ""))
    if outliers and not fr_named:
        trap = ""
        if "eval_dataloader" in traps or "dataloader" in traps:
            trap = " — blocked on eval data, not in the collective"
        elif "rank_conditional" in traps:
            trap = " — a different collective from its peers'"
        if rest and all(p.in_collective for p in rest):
            others = (f"the other {n_rest} wait in collectives" if n_rest > 1 else
                      "the other one waits in a collective")
            tally: Counter[str | None] = Counter()
            for p in rest:
                tally[p.leaf] += p.count
            common = tally.most_common(1)[0][1]
            others += (f" ({common} of them in {facts['majority_leaf']})" if n_rest > 1 and common < n_rest
                       else f" ({facts['majority_leaf']})")
        else:
            others = f"the other {n_rest} are mostly in {facts['majority_leaf']}"
        verdict = (f"{_who(facts['outlier_members'])} {'is' if len(outliers) == 1 else 'are'} "
                   f"stuck in {facts['outlier_leaf']}{trap}, while {others}{fr_part}.")
        conf = "high" if rule == "outside_collective" or mm else "medium"
        return verdict, conf
    if mm:
        ops = ", ".join(f"rank {r} issued {o}" for r, o in mm["ops"].items())
        if mm["kind"] in ("op", "size", "dtype"):
            kind = {"op": "different collectives", "size": "different sizes",
                    "dtype": "different dtypes"}[mm["kind"]]
            where = _per_rank_sites(ranks, mm)
            return (f"Desync: at sequence number {mm['seq_num']} of process group "
                    f"{mm['process_group']} ranks issued {kind} ({ops}) — each waits in a "
                    f"collective its peers never issue{where}.", "high")
        return (f"Rank(s) {mm['ranks']} never reached collective {mm['seq_num']} of process group "
                f"{mm['process_group']} that the others issued ({ops}).",
                "high" if ranks else "medium")
    if ranks and rule == "all_same":
        where = "inside" if ranks[0].in_collective else "at"
        return (f"All {n_procs(ranks)} processes are {where} {ranks[0].leaf}: no rank is elsewhere"
                + (" — the collective itself is stuck (suspect the transport or a GPU)"
                   if ranks[0].in_collective else "") + ".", "medium")
    if ranks:
        return (f"{n_procs(ranks)} processes in {len(facts['groups'])} groups and no clear outlier; "
                "compare the groups' stacks below.", "low")
    return ("No stack dumps found: collect py-spy dumps of every rank while the job hangs "
            "(see actions).", "low")


__all__ = ["Proc", "analyse", "call_site", "diagnose", "tables", "find_outliers", "fr_view", "groups_table", "in_collective",
           "infer_ranks", "key_leaf", "processes", "signature"]
