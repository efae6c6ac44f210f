"""What the runbook shows of a hang: processes grouped by signature, the outliers and the rule
that named them, the flight recorder's first mismatch and last collective per rank, and the
known traps the stacks point at — gathered in one ``DeadlockAnalysis`` by ``analyse``."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ...incident import Incident
from ..collectives import detail_mismatch, entered_lag, first_mismatch, rank_positions
from ..common import nccl_processes, who, world_stated
from ..types import UNKNOWN_GROUP, Mismatch, MismatchKind
from .stacks import (
    REPORTED,
    Proc,
    _na,
    call_site,
    fatal_dump_rows,
    generic_wait,
    infer_ranks,
    key_leaf_index,
    n_procs,
    processes,
    reported_procs,
    shows_hang,
    split_frame,
)

DATALOADER_RE = re.compile(r"torch[/\\]utils[/\\]data[/\\]dataloader\.py$")
EVAL_FUNC_RE = re.compile(r"eval|valid", re.IGNORECASE)
PROCESS_COLUMNS = ["member", "rank", "host", "pid", "thread", "state", "leaf", "call_site",
                   "in_collective", "outlier", "helper_process", "snapshots", "moved",
                   "rank_inferred", "source"]
FLIGHT_RECORDER_COLUMNS = ["rank", "process_group", "last_seq", "last_op", "last_completed",
                           "stack_leaf"]


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
    """The processes the others wait for, and the rule that named them (from their stacks:
    ranks a report shows without one take no part)."""
    ranks = [p for p in procs if not p.helper and p.state != REPORTED]
    if n_procs(ranks) < 2:
        return [], "too_few"
    # py-spy could not attach to it (EPERM, "Failed to suspend process": a process in
    # uninterruptible sleep, D, cannot be stopped by ptrace) while the others could be read:
    # the one stuck in the kernel is the one the others wait for
    stuck = [p for p in ranks if p.state == "D"]
    if stuck and len(stuck) < len(ranks):
        return stuck, "uninterruptible"
    blind = [p for p in ranks if p.state == "dump_error"]
    if blind and len(blind) < len(ranks):
        return blind, "not_dumpable"
    ranks = [p for p in ranks if p.state != "dump_error"]
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


def _member_sort(members: list[Any]) -> list[Any]:
    return sorted(members, key=lambda m: (isinstance(m, str), str(m).zfill(12)))


def per_rank_sites(ranks: list[Proc], mm: Mismatch) -> str:
    """'; stacks: rank 0 in all_reduce (…) from worker (train.py:84), …' for the mismatch's ranks."""
    want = {int(r) for r in mm.ops}
    parts = []
    for p in sorted((p for p in ranks if p.rank in want and p.leaf), key=lambda p: p.rank):
        site = call_site(p.frames)
        parts.append(f"rank {p.rank} in {p.leaf}" + (f" called from {site}" if site else ""))
    return "; stacks: " + "; ".join(parts) if parts else ""


def _decisive(mm: Mismatch) -> bool:
    """A flight-recorder disagreement that names who is off: missing/unfinished ranks, or a
    strict minority issuing something else."""
    if mm.kind in (MismatchKind.MISSING_RANKS, MismatchKind.STATE):
        return bool(mm.ranks)
    return bool(mm.ranks) and 2 * len(mm.ranks) < len(mm.ops)


def members_text(members: list[Any], start: bool = True) -> str:
    """'Rank 3', 'Ranks 0-2, 5 and process a:12', … (capitalised unless ``start`` is False)."""
    ranks = [m for m in members if isinstance(m, int)]
    procs = [m for m in members if not isinstance(m, int)]
    parts = []
    if ranks:
        parts.append(who(ranks))
    if procs:
        parts.append(("process " if len(procs) == 1 else "processes ") + ", ".join(procs[:8]))
    text = " and ".join(parts) or "no process"
    return (text[0].upper() + text[1:]) if start else text[0].lower() + text[1:]


def absent_report(collectives: pd.DataFrame) -> Mismatch | None:
    """The first report that names ranks which never arrived (``absent`` rows: fr_trace's
    missing ranks, NCCL RAS, a barrier a rank never reached) as a mismatch of kind
    ``missing_ranks``; None without one."""
    c = collectives
    if not len(c):
        return None
    absent = c[(c["state"] == "absent").fillna(False) & c["rank"].notna()]
    if not len(absent):
        return None
    first = absent.iloc[0]
    pg, seq, op = _na(first["process_group"]), _na(first["seq_num"]), _na(first["op_type"])
    same = absent[(absent["process_group"].fillna(UNKNOWN_GROUP) == (pg or UNKNOWN_GROUP))
                  & (absent["seq_num"].fillna(-1) == (-1 if seq is None else seq))]
    there = c[(c["state"] == "started").fillna(False) & c["rank"].notna()
              & (c["process_group"].fillna(UNKNOWN_GROUP) == (pg or UNKNOWN_GROUP))]
    ops = {str(int(r)): str(op or "?") for r in sorted(set(there["rank"]))}
    return Mismatch(pg or UNKNOWN_GROUP, None if seq is None else int(seq), MismatchKind.MISSING_RANKS,
                    ops, sorted({int(r) for r in same["rank"]}))


def report_absent(collectives: pd.DataFrame) -> list[int]:
    """Every rank the first missing-ranks report names, in all its process groups (NVRx's
    attribution table lists one stuck collective per group: ranks 10 and 15 missing from groups
    73 and 74 are both behind); the rows of one printed report share its first line."""
    c = collectives
    absent = c[(c["state"] == "absent").fillna(False) & c["rank"].notna()] if len(c) else c
    if not len(absent):
        return []
    first = absent.iloc[0]
    same = absent[(absent["source"] == first["source"]) & (absent["line"] == first["line"])]
    return sorted({int(r) for r in same["rank"]})


MISMATCH_SOURCES = ("Flight recorder", "Report of the ranks that never arrived",
                    "Log of the collectives each rank entered (TORCH_DISTRIBUTED_DEBUG=DETAIL)")


def mismatch_title(mm: Mismatch, source: str = MISMATCH_SOURCES[0]) -> str:
    """The first mismatch in one sentence, said as ``source``'s (the flight recorder's, or a
    stall or missing-ranks report's: ``absent_report``; none: "") ranks that ran the same op
    together."""
    by_op: dict[str, list[str]] = {}
    for r, o in mm.ops.items():
        by_op.setdefault(o, []).append(r)
    ops = ", ".join(f"{who(rs)}: {o}" for o, rs in by_op.items())
    what = {MismatchKind.OP: "issued different collectives",
            MismatchKind.SIZE: "issued different sizes",
            MismatchKind.DTYPE: "issued different dtypes",
            MismatchKind.MISSING_RANKS: f"did not all reach it (missing: {who(mm.ranks)})",
            MismatchKind.STATE: f"did not all finish it (not completed on {who(mm.ranks)})",
            }[mm.kind]
    at = (f"at sequence number {mm.seq_num}" if mm.seq_num is not None
          else "at the collective or barrier")
    return (f"{source + ': ' if source else ''}{at} of process group "
            f"{mm.process_group} ranks {what}" + (f" — {ops}" if ops else ""))


def flight_recorder_table(collectives: pd.DataFrame, procs: list[Proc]) -> pd.DataFrame:
    """Per rank: the last collective its flight recorder saw, next to where its stack is
    (``procs`` with their ranks inferred already, as ``analyse`` leaves them)."""
    c = collectives
    fr = c[c["source"].str.contains("#entry", regex=False, na=False) & c["rank"].notna()
           & c["seq_num"].notna()]
    if not len(fr):
        return pd.DataFrame(columns=FLIGHT_RECORDER_COLUMNS)
    leaf_by_rank: dict[int, str | None] = {}
    for p in procs:
        if p.rank is not None and not p.helper:
            leaf_by_rank[int(p.rank)] = p.leaf
    pos = rank_positions(c)
    rows = []
    for (pg, rank), g in fr.assign(process_group=fr["process_group"].fillna(UNKNOWN_GROUP)).groupby(
            ["process_group", "rank"], sort=True):
        last = g.loc[g["seq_num"].idxmax()]
        p = pos[(pos["process_group"] == pg) & (pos["rank"] == rank)]
        rows.append({"rank": int(rank), "process_group": pg, "last_seq": int(last["seq_num"]),
                     "last_op": last["op_type"],
                     "last_completed": _na(p["last_completed"].iloc[0]) if len(p) else None,
                     "stack_leaf": leaf_by_rank.get(int(rank))})
    return pd.DataFrame(rows, columns=FLIGHT_RECORDER_COLUMNS)


# -- known traps ---------------------------------------------------------------------------------
def _has(procs: list[Proc], pattern: re.Pattern[str], part: str = "file") -> bool:
    return any(pattern.search(getattr(split_frame(f), part)) for p in procs for f in p.frames)


def known_traps(outliers: list[Proc], rest: list[Proc], mm: dict[str, Any] | None,
                rule: str) -> dict[str, str]:
    """Known causes the stacks point at: trap id -> the evidence in words."""
    traps: dict[str, str] = {}
    if outliers:
        o = outliers[0]
        leaf = o.leaf or "?"
        dataloader = _has(outliers, DATALOADER_RE)
        queue_wait = any(generic_wait(fr.func, fr.file)
                         for fr in map(split_frame, o.frames[:3]))
        eval_phase = _has(outliers, EVAL_FUNC_RE, "func")
        if dataloader or (queue_wait and eval_phase and not o.in_collective):
            what = ("waits for a batch from its DataLoader workers" if dataloader
                    else "waits on a data queue that is never filled")
            traps["eval_dataloader" if eval_phase else "dataloader"] = (
                f"{members_text([o.member])} {what} in {leaf}"
                + (" during evaluation" if eval_phase else ""))
        if o.in_collective and rest and rest[0].in_collective and o.leaf != rest[0].leaf:
            site_o, site_r = call_site(o.frames), call_site(rest[0].frames)
            traps["rank_conditional"] = (
                f"{members_text([o.member])} waits in {leaf}" + (f" called from {site_o}" if site_o else "")
                + f" while the others wait in {rest[0].leaf}"
                + (f" called from {site_r}" if site_r else ""))
        if (eval_phase or _has(rest, EVAL_FUNC_RE, "func")) and rule == "outside_collective":
            traps["barrier_before_eval"] = (
                f"The hang is in the evaluation phase: {members_text([o.member], start=False)} is in {leaf}, the "
                f"others in {rest[0].leaf if rest else '?'}")
    if mm and mm.kind.is_desync:
        traps.setdefault("rank_conditional",
                         mismatch_title(mm) + per_rank_sites(outliers + rest, mm))
    return traps


# -- the analysis --------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class DeadlockAnalysis:
    """Everything the deadlock report and runbook show, computed once by ``analyse``."""

    incident: Incident  # the report quotes its raw lines (dump errors, flight-recorder rows)
    thread: str
    depth: int | None
    procs: list[Proc]  # every process seen, helpers included, ranks inferred where possible
    inferred: dict[tuple[Any, ...], tuple[int, str]]  # process key -> (rank, how inferred)
    rule: str  # the rule the stacks named outliers by (see the package docstring)
    stack_outliers: list[Proc]  # the outliers the stacks alone name
    mismatch: Mismatch | None  # the flight recorder's first disagreement
    fr_named: bool  # the outliers come from a decisive flight-recorder mismatch, not the stacks
    # where ``mismatch`` comes from: the flight recorder, or (with no mismatch there) a report of
    # the ranks that never arrived (Horovod's stall inspector, fr_trace's text, NCCL RAS:
    # ``absent_report``), else the collectives each rank logged entering (``entered_lag``); one
    # of MISMATCH_SOURCES
    mismatch_source: str
    outliers: list[Proc]  # the processes the others wait for
    outlier_members: list[Any]
    outlier_leaf: str | None
    majority_leaf: str | None
    processes: pd.DataFrame  # one row per process (PROCESS_COLUMNS)
    groups: pd.DataFrame  # processes grouped by signature (``groups_table``)
    outlier_frames: pd.DataFrame  # the outliers' frames, innermost first (member, frame)
    flight_recorder: pd.DataFrame  # last collective per rank (FLIGHT_RECORDER_COLUMNS)
    traps: dict[str, str]  # known causes the stacks point at: trap id -> evidence in words
    hang_seen: bool  # a stack that waits, or ranks in the start-up barrier (``shows_hang``)
    fatal_dump: bool = False  # stacks a ``Fatal Python error`` printed (``fatal_dump_rows``)

    @property
    def ranks(self) -> list[Proc]:
        """The processes that are ranks (helpers left out)."""
        return [p for p in self.procs if not p.helper]

    @property
    def helpers(self) -> list[Proc]:
        """DataLoader worker / pin-memory / compile-worker processes."""
        return [p for p in self.procs if p.helper]

    @property
    def rest(self) -> list[Proc]:
        """The ranks that are not outliers."""
        members = {p.member for p in self.outliers}
        return [p for p in self.ranks if p.member not in members]

    @property
    def nccl_processes(self) -> int:
        """The processes NCCL's lines show (``common.nccl_processes``)."""
        return nccl_processes(self.incident)

    @property
    def world_stated(self) -> int | None:
        """The processes the job has in all, where the logs state it (``common.world_stated``)."""
        return world_stated(self.incident)

    @property
    def dump_errors(self) -> pd.DataFrame:
        """``stacks`` rows of processes py-spy failed to dump."""
        s = self.incident.stacks
        return s[s["state"].fillna("") == "dump_error"] if len(s) else s

    def tables(self) -> dict[str, pd.DataFrame]:
        """The runbook's tables by the names of their CSV files (``deadlock_<name>.csv``)."""
        return {"processes": self.processes, "groups": self.groups,
                "outliers": self.outlier_frames, "flight_recorder": self.flight_recorder}


def analyse(incident: Incident, thread: str = "MainThread",
            depth: int | None = None) -> DeadlockAnalysis:
    """Group the processes of ``incident`` by where a thread is, name the outliers, and read
    the flight recorder beside them.

    Args:
        thread: the thread compared ("MainThread", a thread name, or "*": every busy thread).
        depth: frames per signature from the leaf outwards (None or 0: all).
    """
    procs = processes(incident.stacks, thread=thread, depth=depth or None)
    procs += reported_procs(incident.collectives, procs)
    inferred = infer_ranks(procs, incident.collectives)
    for p in procs:
        if p.key in inferred:
            p.rank, p.rank_inferred = inferred[p.key]
    stack_outliers, rule = find_outliers(procs)
    c = incident.collectives
    recorded = first_mismatch(c) or detail_mismatch(c)
    absent = None if recorded else absent_report(c)
    mismatch = recorded or absent or entered_lag(c)
    ranks = [p for p in procs if not p.helper]
    outliers, fr_named = stack_outliers, False
    if not outliers and mismatch and _decisive(mismatch):
        want = set(mismatch.ranks)
        outliers = [p for p in ranks if p.rank in want]
        fr_named = True
    out_members = {p.member for p in outliers}
    out_keys = {p.key for p in outliers}
    if fr_named and not outliers and mismatch:
        outlier_members = list(mismatch.ranks)
        if absent is not None:  # the report's other groups' missing ranks are behind too
            outlier_members = sorted(set(outlier_members) | set(report_absent(c)))
    else:
        outlier_members = _member_sort(list(out_members))
    rest = [p for p in ranks if p.member not in out_members]
    sites: dict[tuple[str, ...], str | None] = {}  # thousands of processes, a few stacks
    for p in procs:
        if (key := tuple(p.frames)) not in sites:
            sites[key] = call_site(p.frames)
    rows = [{"member": str(p.member), "rank": p.rank, "host": p.host, "pid": p.pid,
             "thread": p.thread, "state": p.state, "leaf": p.leaf,
             "call_site": sites[tuple(p.frames)], "in_collective": p.in_collective,
             "outlier": p.key in out_keys, "helper_process": p.helper,
             "snapshots": p.snapshots, "moved": p.moved, "rank_inferred": p.rank_inferred,
             "source": p.source} for p in procs]
    frames = [{"member": str(p.member), "frame": f} for p in outliers
              for f in p.frames[: (key_leaf_index(p.frames) or 0) + 12]]
    return DeadlockAnalysis(
        hang_seen=shows_hang(incident),
        fatal_dump=bool(fatal_dump_rows(incident.stacks, incident.errors).any()),
        incident=incident, thread=thread, depth=depth, procs=procs, inferred=inferred, rule=rule,
        stack_outliers=stack_outliers, mismatch=mismatch, fr_named=fr_named,
        mismatch_source=MISMATCH_SOURCES[0 if recorded else 1 if absent else 2], outliers=outliers,
        outlier_members=outlier_members,
        outlier_leaf=_most_common([p.leaf for p in outliers], [p.count for p in outliers]),
        majority_leaf=_most_common([p.leaf for p in rest], [p.count for p in rest]),
        processes=pd.DataFrame(rows, columns=PROCESS_COLUMNS).astype(
            {"rank": "Int64", "pid": "Int64", "snapshots": "Int64"}),
        groups=groups_table(procs, out_members),
        outlier_frames=pd.DataFrame(frames, columns=["member", "frame"]),
        flight_recorder=flight_recorder_table(incident.collectives, procs),
        traps=known_traps(outliers, rest, mismatch, rule))
