"""The deadlock report's prose: facts, findings, the verdict and the ranked actions, from a
``DeadlockAnalysis``; and ``diagnose``, the two in one call."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ...incident import Incident
from ...report import (
    Action,
    Confidence,
    Finding,
    Report,
    Rule,
    Severity,
    action,
    fired_actions,
    fired_findings,
    verdict_of,
)
from ...shellsafe import quote_all
from ..common import input_findings, last_progress, who
from ..types import UNKNOWN_GROUP, Mismatch, MismatchKind
from .analysis import DeadlockAnalysis, analyse, members_text, mismatch_title, per_rank_sites
from .stacks import Proc, crash_dumps, key_leaf_index, n_procs, split_frame

FACT_KEYS = ("processes_seen", "groups", "outlier_members", "outlier_leaf", "majority_leaf",
             "first_mismatch")


def report(analysis: DeadlockAnalysis) -> Report:
    """The deadlock report from an analysis: facts, findings, verdict and ranked actions."""
    a = analysis
    verdict, confidence = verdict_of(VERDICTS, a)
    return Report("deadlock", verdict, confidence, facts(a), fired_findings(FINDINGS, a),
                  fired_actions(ACTIONS, a))


def facts(a: DeadlockAnalysis) -> dict[str, Any]:
    """The report's facts (``FACT_KEYS``)."""
    return {"processes_seen": processes_seen(a),
            "groups": [{"signature": r["signature"], "leaf": r["leaf"],
                        "members": r["members"], "count": int(r["count"])}
                       for _, r in a.groups.iterrows()],
            "outlier_members": _outlier_members(a), "outlier_leaf": a.outlier_leaf,
            "majority_leaf": a.majority_leaf,
            "first_mismatch": a.mismatch.as_fact() if a.mismatch else None}


def processes_seen(a: DeadlockAnalysis) -> int:
    """How many rank processes the logs show: those with a stack (or named by a hang report);
    with none of either, the ranks the logs name elsewhere (per-rank files, rank prefixes), else
    the processes NCCL's lines show, else the world size the logs state (one writer's log of a
    run: DLcomm's "World Size : 8") — a healthy run's or a stackless hang's processes are still
    its ranks."""
    return (n_procs(a.ranks) or len(a.incident.ranks) or a.nccl_processes
            or a.world_stated or 0)


def _stopped_outliers(a: DeadlockAnalysis) -> list[str]:
    """The processes py-spy could not suspend, when they are the outliers (nothing else is,
    or the stacks' outlier is one that could not be dumped, and no mismatch names others)."""
    stopped = unsuspendable(a)
    if stopped and not a.mismatch and (not a.outliers or a.rule == "not_dumpable"):
        return stopped
    return []


def _outlier_members(a: DeadlockAnalysis) -> list[Any]:
    """The outliers' members; none where the stacks show no hang (``_crashed_not_hung``: a
    crash's dumps, whose stacks differ below one leaf, name no process that holds the others
    up: AlgoPerf's eight 'Fatal Python error: Aborted' dumps inside backend_compile)."""
    if _crashed_not_hung(a):
        return []
    return _stopped_outliers(a) or list(a.outlier_members)


# -- findings ------------------------------------------------------------------------------------

def _ranks_inferred(a: DeadlockAnalysis) -> Finding | None:
    if not a.inferred:
        return None
    return Finding(
        "ranks_inferred", Severity.INFO,
        "Ranks inferred for dumps that named none: " + "; ".join(
            f"{p.host or '?'}:{p.pid} is rank {p.rank} ({p.rank_inferred})"
            for p in a.procs if p.rank_inferred), [])


def _no_stacks(a: DeadlockAnalysis) -> Finding | None:
    if a.ranks:
        return None
    return Finding(
        "no_stacks", Severity.WARNING,
        "No stack dumps (py-spy or faulthandler) were found: a hang without a timeout can "
        "only be located from every rank's stack" + (
            "; the flight-recorder dumps are read below" if a.mismatch else ""), [])


def _crashed_not_hung(a: DeadlockAnalysis) -> bool:
    """Stacks seen, none of a process that waits (only a crash's traceback, an idle thread with
    no frame), and no report of a collective the ranks disagree on: no hang to diagnose."""
    return bool(a.ranks) and not a.hang_seen and a.mismatch is None


def _no_hang(a: DeadlockAnalysis) -> Finding | None:
    if not _crashed_not_hung(a):
        return None
    states = sorted({str(p.state) for p in a.ranks if p.state})
    what = ("the traceback of an exception that was raised (a crash, not a wait)"
            if "raised" in states else "the faulthandler dump a fatal error printed ('Fatal "
            "Python error': a crash dump, where the process was when it died, not a hang)"
            if a.fatal_dump else "a fatal error's faulthandler dump (its current thread "
            "was computing when the process died, not waiting)"
            if len(crash_dumps(a.incident.stacks)) else "no process waiting (an idle thread with no frame, or a "
            "traceback that is a piece of a crash)")
    return Finding("no_hang", Severity.WARNING,
                   f"No hang in these stacks: {n_procs(a.ranks)} process(es), and what they show "
                   f"is {what}; a deadlock is diagnosed from stacks taken while processes wait",
                   [])


def _stack_groups(a: DeadlockAnalysis) -> Finding | None:
    if not a.ranks:
        return None
    table, thread = a.groups, a.thread
    return Finding(
        "stack_groups", Severity.INFO,
        f"{n_procs(a.ranks)} process(es) in {len(table)} group(s) by where their "
        f"{'threads are' if thread == '*' else thread + ' is'}: " + "; ".join(
            f"{r['count']} in {r['leaf'] if isinstance(r['leaf'], str) and r['leaf'] else 'no stack (named by a hang report)'}"
            for _, r in table.head(8).iterrows()),
        [f"{len(g['members'])} × {g['signature'][:300]}" for g in facts(a)["groups"][:8]])


def _named_outliers(a: DeadlockAnalysis) -> bool:
    """The outliers the stacks or the flight recorder name are the finding."""
    return bool(a.outliers) and not (unsuspendable(a) and a.rule == "not_dumpable")


def _outliers(a: DeadlockAnalysis) -> Finding | None:
    if not _named_outliers(a):
        return None
    why = {"outside_collective": "outside any collective while the others wait in one",
           "smallest_group": "in a state no larger group shares",
           "not_dumpable": "the process py-spy could not attach to (stuck in the kernel?)",
           "uninterruptible": "in uninterruptible sleep (D in ps): stuck in the kernel",
           }.get(a.rule, f"named by the {a.mismatch_source[:1].lower()}{a.mismatch_source[1:]}")
    # a rank the flight recorder names may have no stack (a watchdog line saw it): then its
    # place is the mismatch itself
    where = a.outlier_leaf or (mismatch_title(a.mismatch, "") if a.mismatch else "no stack")
    return Finding(
        "outliers", Severity.CRITICAL,
        f"{members_text(_outlier_members(a))} {'is' if len(a.outliers) == 1 else 'are'} "
        f"{why}: {where}" + (
            f" (the others: {a.majority_leaf})" if a.majority_leaf else ""),
        _stack_evidence(a.outliers))


def _unsuspendable(a: DeadlockAnalysis) -> Finding | None:
    stopped = unsuspendable(a)
    if _named_outliers(a) or not stopped or a.mismatch:
        return None
    errors = a.dump_errors
    return Finding(
        "unsuspendable", Severity.CRITICAL,
        f"{members_text(stopped)} could not be dumped: py-spy failed to suspend "
        f"{'it' if len(stopped) == 1 else 'them'} (EPERM) — the outlier. A process py-spy "
        "cannot stop is usually in uninterruptible sleep (D in ps: blocked in the kernel, on "
        "the GPU driver, a file system or the network) while the others wait for it"
        + (f" ({a.majority_leaf})" if a.majority_leaf else ""),
        [f"{s}: {ln}" for s, ln in zip(errors["source"].head(6), errors["line"].head(6),
                                        strict=False)])


def _all_same(a: DeadlockAnalysis) -> Finding | None:
    ranks = a.ranks
    if _named_outliers(a) or _unsuspendable(a) or not ranks or a.rule != "all_same":
        return None
    where = "inside the same collective" if ranks[0].in_collective else "at the same place"
    text = (f"All {n_procs(ranks)} processes are {where}: {ranks[0].leaf}" if ranks[0].leaf
            else f"No stack of the {n_procs(ranks)} processes has a frame to compare (no Python frame "
                 "in any dump: processes that crashed, or native-only stacks), so no process "
                 "stands out")
    return Finding("all_same", Severity.WARNING, text, _stack_evidence(ranks[:2]))


def _first_mismatch(a: DeadlockAnalysis) -> Finding | None:
    if not a.mismatch:
        return None
    return Finding("first_mismatch", Severity.CRITICAL, mismatch_title(a.mismatch, a.mismatch_source),
                   _mismatch_evidence(a.incident, a.mismatch))


def _flight_recorder(a: DeadlockAnalysis) -> Finding | None:
    fr = a.flight_recorder
    if not len(fr):
        return None
    return Finding(
        "flight_recorder", Severity.INFO,
        "Flight recorder, last collective per rank: " + "; ".join(
            f"rank {r.rank}: seq {r.last_seq} {r.last_op}" for r in fr.head(16).itertuples()),
        [])


def _snapshots(a: DeadlockAnalysis) -> Finding | None:
    moved = [p for p in a.ranks if p.moved]
    multi = [p for p in a.ranks if p.snapshots > 1]
    if not multi:
        return None
    return Finding(
        "snapshots", Severity.WARNING if moved else Severity.INFO,
        (f"{len(moved)} of {len(multi)} processes dumped more than once moved between "
         "snapshots: the job may be slow rather than hung" if moved else
         f"{len(multi)} process(es) dumped more than once did not move: stuck, not slow"),
        _stack_evidence(moved[:4]))


def _helper_processes(a: DeadlockAnalysis) -> Finding | None:
    helpers = a.helpers
    if not helpers:
        return None
    return Finding(
        "helper_processes", Severity.INFO,
        f"{len(helpers)} DataLoader worker / helper process(es) left out of the grouping "
        f"(they are not ranks): " + "; ".join(sorted({str(p.leaf) for p in helpers})[:4]),
        _stack_evidence(helpers[:4]))


def _dump_errors(a: DeadlockAnalysis) -> Finding | None:
    errors = a.dump_errors
    if not len(errors):
        return None
    return Finding(
        "dump_errors", Severity.WARNING,
        f"py-spy failed on {len(errors)} process(es): those ranks' stacks are missing",
        [f"{s}: {ln}" for s, ln in zip(errors["source"].head(10), errors["line"].head(10),
                                        strict=False)])


def _input(a: DeadlockAnalysis) -> list[Finding]:
    return input_findings(a.incident)


def _last_progress(a: DeadlockAnalysis) -> Finding | None:
    prog = last_progress(a.incident)
    if prog.step is None:
        return None
    return Finding("last_progress", Severity.INFO,
                   f"Last progress before the hang: {prog.describe()}",
                   [f"{prog.source}: {prog.line}"])


FINDINGS: tuple[Rule[Finding | Sequence[Finding]], ...] = (
    Rule("ranks_inferred", _ranks_inferred), Rule("no_stacks", _no_stacks),
    Rule("no_hang", _no_hang),
    Rule("stack_groups", _stack_groups), Rule("outliers", _outliers),
    Rule("unsuspendable", _unsuspendable), Rule("all_same", _all_same),
    Rule("first_mismatch", _first_mismatch), Rule("flight_recorder", _flight_recorder),
    Rule("snapshots", _snapshots), Rule("helper_processes", _helper_processes),
    Rule("dump_errors", _dump_errors), Rule("input", _input),
    Rule("last_progress", _last_progress))


def diagnose(incident: Incident, thread: str = "MainThread", depth: int | None = None) -> Report:
    """Diagnose a hang from stack dumps (and flight-recorder dumps when there are any).
    ``thread``: the thread to compare ("MainThread", a thread name, or "*" for all busy
    threads); ``depth``: frames per signature from the leaf outwards (None or 0: all)."""
    return report(analyse(incident, thread=thread, depth=depth))


# -- verdicts ------------------------------------------------------------------------------------

def _stopped_verdict(a: DeadlockAnalysis) -> tuple[str, Confidence] | None:
    stopped = _stopped_outliers(a)
    if not stopped:
        return None
    return (f"{members_text(stopped)} could not be dumped (py-spy: Failed to suspend "
            "process) — the outlier: a process py-spy cannot suspend is usually in "
            "uninterruptible sleep (D in ps), blocked in the kernel"
            + (f"; the {n_procs(a.ranks)} dumped wait in {a.majority_leaf}"
               if a.ranks and a.majority_leaf else "") + ".", Confidence.MEDIUM)


def _file_baton_verdict(a: DeadlockAnalysis) -> tuple[str, Confidence] | None:
    if wait_site(a.ranks) != "file_baton" or a.outliers or a.mismatch:
        return None
    n = n_procs(a.ranks)
    return (f"{'The dumped process waits' if n == 1 else f'{n} processes wait'} in "
            f"{a.majority_leaf or 'torch/utils/file_baton.py'}: the lock of "
            "torch's C++-extension build (FileBaton), which a build killed mid-way leaves "
            "behind and nobody releases — remove the stale lock file "
            "(~/.cache/torch_extensions/*/*/lock, or under $TORCH_EXTENSIONS_DIR) and "
            "restart.", Confidence.MEDIUM)


def _fr_part(mm: Mismatch | None) -> str:
    if not mm:
        return ""
    return (f"; the flight recorder agrees: at sequence {mm.seq_num} "
            + ", ".join(f"rank {r}: {o}" for r, o in mm.ops.items())
            + (f" (missing: {who(mm.ranks)})" if mm.kind == MismatchKind.MISSING_RANKS else ""))


def _others(a: DeadlockAnalysis) -> str:
    """Where the processes other than the outliers wait."""
    rest, n_rest = a.rest, n_procs(a.rest)
    if not (rest and all(p.in_collective for p in rest)):
        return f"the other {n_rest} are mostly in {a.majority_leaf}"
    others = (f"the other {n_rest} wait in collectives" if n_rest > 1 else
              "the other one waits in a collective")
    tally: Counter[str | None] = Counter()
    for p in rest:
        tally[p.leaf] += p.count
    common = tally.most_common(1)[0][1]
    return others + (f" ({common} of them in {a.majority_leaf})"
                     if n_rest > 1 and common < n_rest else f" ({a.majority_leaf})")


def _outlier_verdict(a: DeadlockAnalysis) -> tuple[str, Confidence] | None:
    if not a.outliers or a.fr_named:
        return None
    trap = ""
    if "eval_dataloader" in a.traps or "dataloader" in a.traps:
        trap = " — blocked on eval data, not in the collective"
    elif "rank_conditional" in a.traps:
        trap = " — a different collective from its peers'"
    return (f"{members_text(_outlier_members(a))} "
            f"{'is' if len(a.outliers) == 1 else 'are'} stuck in {a.outlier_leaf}{trap}, "
            f"while {_others(a)}{_fr_part(a.mismatch)}.",
            Confidence.HIGH if a.rule == "outside_collective" or a.mismatch
            else Confidence.MEDIUM)


def _desync_verdict(a: DeadlockAnalysis) -> tuple[str, Confidence] | None:
    mm = a.mismatch
    if not mm or not mm.kind.is_desync:
        return None
    ops = ", ".join(f"rank {r} issued {o}" for r, o in mm.ops.items())
    kind = {"op": "different collectives", "size": "different sizes",
            "dtype": "different dtypes"}[mm.kind]
    return (f"Desync: at sequence number {mm.seq_num} of process group "
            f"{mm.process_group} ranks issued {kind} ({ops}) — each waits in a "
            f"collective its peers never issue{per_rank_sites(a.ranks, mm)}.", Confidence.HIGH)


def _missing_verdict(a: DeadlockAnalysis) -> tuple[str, Confidence] | None:
    mm = a.mismatch
    if not mm or mm.kind.is_desync:
        return None
    ops = ", ".join(f"rank {r} issued {o}" for r, o in mm.ops.items())
    what = (f"collective {mm.seq_num}" if mm.seq_num is not None
            else "the collective or barrier")
    group = ("" if mm.process_group == UNKNOWN_GROUP
             else f" of process group {mm.process_group}")
    return (f"{who(mm.ranks, cap=True)} never reached {what}{group} that the others "
            f"issued" + (f" ({ops})" if ops else "") + ".",
            Confidence.HIGH if a.ranks else Confidence.MEDIUM)


def _all_same_verdict(a: DeadlockAnalysis) -> tuple[str, Confidence] | None:
    ranks = a.ranks
    if not ranks or a.rule != "all_same":
        return None
    where = "inside" if ranks[0].in_collective else "at"
    return (f"All {n_procs(ranks)} processes are {where} {ranks[0].leaf}: no rank is elsewhere"
            + (" — the collective itself is stuck (suspect the transport or a GPU)"
               if ranks[0].in_collective else "") + ".", Confidence.MEDIUM)


def _no_hang_verdict(a: DeadlockAnalysis) -> tuple[str, Confidence] | None:
    if not _crashed_not_hung(a):
        return None
    if a.fatal_dump:
        return ("No hang found: the stacks in these logs are a crash dump, the faulthandler "
                "dump a 'Fatal Python error' printed, not processes waiting; the gpu_crash "
                "runbook names the failure (see actions).", Confidence.LOW)
    if _raised(a):
        return ("No hang found: the stacks in these logs are a crash's traceback (an exception "
                "was raised), not processes waiting; the gpu_crash runbook names the failure "
                "(see actions).", Confidence.LOW)
    return ("No hang found: the stacks in these logs show no process waiting (idle threads with "
            "no frame, or pieces of a crash's output); dump every rank while the job hangs "
            "(see actions).", Confidence.LOW)


def _raised(a: DeadlockAnalysis) -> bool:
    """Some process's stack is the traceback of an exception it raised."""
    return any(p.state in ("raised", "traceback", "cut") for p in a.ranks)


def _one_process_verdict(a: DeadlockAnalysis) -> tuple[str, Confidence] | None:
    if not a.ranks or n_procs(a.ranks) != 1:
        return None
    return (f"One process was dumped, waiting in "
            f"{a.majority_leaf or 'the frames below'}: with one stack no outlier can "
            "be named — dump every rank to see which one is elsewhere.", Confidence.LOW)


def _no_outlier_verdict(a: DeadlockAnalysis) -> tuple[str, Confidence] | None:
    if not a.ranks:
        return None
    return (f"{n_procs(a.ranks)} processes in {len(a.groups)} groups and no clear outlier; "
            "compare the groups' stacks below.", Confidence.LOW)


def _no_stacks_verdict(a: DeadlockAnalysis) -> tuple[str, Confidence]:
    return ("No stack dumps found: collect py-spy dumps of every rank while the job hangs "
            "(see actions).", Confidence.LOW)


# The firing rule of highest priority gives the verdict: processes py-spy could not suspend,
# the stale lock of an extension build, then the outliers the stacks name, the flight
# recorder's mismatch, all processes at one place, one process, no outlier, no stacks.
VERDICTS: tuple[Rule[tuple[str, Confidence]], ...] = (
    Rule("no_hang", _no_hang_verdict, 95), Rule("unsuspendable", _stopped_verdict, 90), Rule("file_baton", _file_baton_verdict, 80),
    Rule("outliers", _outlier_verdict, 60), Rule("desync", _desync_verdict, 50),
    Rule("missing_ranks", _missing_verdict, 50), Rule("all_same", _all_same_verdict, 40),
    Rule("one_process", _one_process_verdict, 30),
    Rule("no_outlier", _no_outlier_verdict, 20), Rule("no_stacks", _no_stacks_verdict, 0))


# -- actions -------------------------------------------------------------------------------------

def _unsuspendable_process(a: DeadlockAnalysis) -> Action | None:
    stopped = unsuspendable(a)
    if not stopped:
        return None
    pid = stopped[0].rsplit(":", 1)[-1]
    return action(
        "unsuspendable_process",
        f"Look at {members_text(stopped, start=False)}, which py-spy could not suspend",
        "A process py-spy cannot stop (Failed to suspend process, EPERM, as root) is in "
        "uninterruptible sleep: blocked in the kernel — the GPU driver, a file system (NFS, "
        "Lustre), the network. The others wait for it in their collective.",
        f"ps -o pid,stat,wchan:32,cmd -p {pid}  # STAT D = uninterruptible sleep; as root: "
        f"cat /proc/{pid}/stack; dmesg -T | grep -iE 'xid|hung_task|blocked for more than'; "
        "a process that stays in D does not die to kill -9: the node needs a reboot")


def _leaf(a: DeadlockAnalysis) -> str:
    return a.majority_leaf or "the frame shown"


def _stale_extension_lock(a: DeadlockAnalysis) -> Action | None:
    if wait_site(a.ranks) != "file_baton":
        return None
    return action(
        "stale_extension_lock", "Remove the stale lock of torch's C++-extension build",
        f"The process waits in {_leaf(a)}: torch's FileBaton, polling for a lock file that a "
        "build killed mid-way (an earlier run, a crashed rank) left behind. No one will "
        "ever release it; every rank that loads the extension waits for ever.",
        "ls ~/.cache/torch_extensions/*/*/lock  # or $TORCH_EXTENSIONS_DIR/<extension>/lock; "
        "the path is ~/.cache/torch_extensions/py<python>_cu<cuda>/<extension>/lock — stop "
        "the job, rm that lock file (or the whole <extension> directory to rebuild), restart")


def _blocked_logging(a: DeadlockAnalysis) -> Action | None:
    if wait_site(a.ranks) != "logging":
        return None
    return action(
        "blocked_logging", "Find what blocks the logging call",
        f"The process waits in a logging call ({_leaf(a)}): a handler's lock held by a thread "
        "that no longer runs (copied into a fork()ed child, e.g. a DataLoader worker, while "
        "another thread logged), or a full stdout/stderr pipe nobody reads.",
        "py-spy dump --native --pid <pid> (which lock, which write); use the 'spawn' or "
        "'forkserver' start method (multiprocessing_context='spawn' for DataLoaders); make "
        "sure the launcher drains the process's output (no pipe left unread)")


def _loader_trap(a: DeadlockAnalysis) -> str | None:
    """The known trap of an (eval) DataLoader worker that never delivers, when found."""
    return a.traps.get("eval_dataloader") or a.traps.get("dataloader")


def _dataloader_queue(a: DeadlockAnalysis) -> Action | None:
    if wait_site(a.ranks) != "dataloader" or _loader_trap(a):
        return None
    return action(
        "dataloader_queue", "Look at the DataLoader's workers: the process waits for a batch",
        f"The process waits on its DataLoader's queue ({_leaf(a)}): a worker is stuck (a read "
        "that never returns, a worker deadlock, pytorch/pytorch#25158) or died without the "
        "loader noticing.",
        "py-spy dump --pid <worker pid> for each worker (pgrep -P <pid>); DataLoader(..., "
        "timeout=600) so a stuck worker raises; num_workers=0 to confirm")


def _read_wait_site(a: DeadlockAnalysis) -> Action | None:
    if wait_site(a.ranks) != "elsewhere" or _outlier_members(a) or a.mismatch:
        return None
    leaf = _leaf(a)
    return action(
        "read_wait_site", f"Find what {leaf} waits on",
        f"The processes wait in {leaf}, not inside a collective: the hang is in that code "
        "(or in what it waits on: the GPU, a queue, a remote service), not in the "
        "interconnect.",
        "py-spy dump --native --pid <pid> twice a minute apart (stuck or slow); read the "
        "frames above the leaf")


def _eval_loader(a: DeadlockAnalysis) -> Action | None:
    ev = _loader_trap(a)
    if not ev:
        return None
    return action(
        "eval_loader_num_workers_0",
        "Load eval data in the main process (num_workers=0), or give the DataLoader a timeout",
        f"{ev}, while its peers wait in {a.majority_leaf}. A worker that never "
        "delivers — a worker deadlock (pytorch/pytorch#25158) or a read that never returns — "
        "hangs every rank, and no collective timeout fires for the rank outside the "
        "collective. BLOOM-176B lost ~11 h to this and fixed it with num_workers=0 for the "
        "validation loaders (bigscience-workshop/Megatron-DeepSpeed#282).",
        "DataLoader(eval_dataset, batch_size=…, num_workers=0)  # eval loaders only; or keep "
        "workers and set DataLoader(..., num_workers=2, timeout=600) so a stuck worker "
        "raises instead of hanging; inspect the workers: py-spy dump --pid <worker pid>")


def _rank_conditional(a: DeadlockAnalysis) -> Action | None:
    if "rank_conditional" not in a.traps:
        return None
    return action(
        "rank_conditional_collective",
        "Find the collective that not every rank calls (a rank-conditional branch)",
        f"{a.traps['rank_conditional']}. Every rank must issue the same collectives in the same "
        "order; a collective under `if rank == 0:` (or a branch on data a rank alone sees) "
        "leaves the others waiting for ever.",
        "grep -nE 'get_rank\\(\\)|rank ?==|is_main_process|local_rank' around the call sites "
        "above; rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL (checks that ranks agree on each "
        "collective and names the first mismatch)")


def _barrier_before_eval(a: DeadlockAnalysis) -> Action | None:
    if "barrier_before_eval" not in a.traps:
        return None
    return action(
        "barrier_before_eval", "Synchronise all ranks before evaluation starts",
        f"{a.traps['barrier_before_eval']}. Ranks that enter eval out of step race on "
        "eval-only collectives; BLOOM-176B's eval hang at iteration 45000 was fixed by a "
        "dist.barrier() before eval (microsoft/DeepSpeed#1944).",
        "torch.distributed.barrier()  # first line of evaluate(), on every rank")


def _check_transport(a: DeadlockAnalysis) -> Action | None:
    if (not a.ranks or wait_site(a.ranks) != "collective" or _outlier_members(a)
            or a.mismatch):
        return None
    return action(
        "check_transport", "Test the interconnect and GPUs of the nodes involved",
        "Every process waits inside the same collective: all arrived and it never finished, "
        "which points at the transport (network, NVLink, a sick GPU) rather than the program.",
        "NCCL_DEBUG=INFO; nccl-tests all_reduce_perf -b 8 -e 1G -f 2 -g 8 per node and across "
        "nodes; dmesg | grep -i xid on every node")


def _diagnose_crash(a: DeadlockAnalysis) -> Action | None:
    if not (_crashed_not_hung(a) and (_raised(a) or a.fatal_dump)):
        return None
    return action(
        "diagnose_crash", "Diagnose the failure the traceback shows, not a hang",
        "A raised exception's traceback, or the dump a fatal error printed, is where a process "
        "died, not where it waited; the "
        "gpu_crash runbook names the first failure, its rank and host, and what to do.",
        "traindoc run gpu_crash " + (quote_all(a.incident.account.paths) or "LOGS")
        + " -o gpu_crash-out")


def _py_spy_all_ranks(a: DeadlockAnalysis) -> Action:
    return action(
        "py_spy_all_ranks",
        "Next hang: dump every rank's stack on every node, tagged with its rank",
        "Stacks of all ranks are what locates a hang with no timeout: the process not where the "
        "others are is the culprit. Rank-tagged file names let this runbook name ranks; two "
        "rounds a minute apart tell stuck from slow; `timeout` keeps a wedged py-spy from "
        "hanging the collection (BLOOM's py-spy over srun once sat doing nothing).",
        "srun --overlap --jobid $SLURM_JOB_ID --ntasks-per-node=1 bash -c 'for p in $(pgrep -f "
        "\"[t]rain.py\"); do r=$(tr \"\\0\" \"\\n\" < /proc/$p/environ | sed -n \"s/^RANK=//p\"); "
        "timeout 120 py-spy dump --pid $p > trace-$(hostname)${r:+-rank$r}-$p.out 2>&1; done'  "
        "# as root or with CAP_SYS_PTRACE; [t]rain.py: your script, bracketed so pgrep skips this "
        "shell; DataLoader workers are dumped too and set apart; then log_path=<that directory>")


def _flight_recorder_action(a: DeadlockAnalysis) -> Action:
    return action(
        "flight_recorder", "Record collectives in the flight recorder, and dump it on demand",
        "The flight recorder says which collective (sequence number, op, sizes) each rank "
        "issued last, and names the first disagreement; a hang with no timeout never triggers "
        "dump-on-timeout, so arm the on-demand pipe too (a FIFO per rank, local to its node).",
        "export TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_FR_BUFFER_SIZE=2000 "
        "TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE=/shared/fr/nccl_trace_rank_ "
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/shared/fr/nccl_trace_rank_ "
        "TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/tmp/fr_pipe_rank_  # on a hang: srun --overlap --jobid "
        "$SLURM_JOB_ID --ntasks-per-node=1 bash -c 'for f in /tmp/fr_pipe_rank_*.pipe; do echo 1 "
        "> $f; done'; then torchfrtrace /shared/fr -p nccl_trace_rank_ (and log_path=/shared/fr)")


def _make_hangs_fail(a: DeadlockAnalysis) -> Action:
    return action(
        "make_hangs_fail",
        "Turn a silent hang into an error: async error handling and a finite timeout",
        "No rank timed out here. With NCCL async error handling and a collective timeout the "
        "watchdog tears the job down after the timeout (so it can restart) and, with "
        "TORCH_NCCL_DUMP_ON_TIMEOUT=1, leaves the dumps this runbook reads. BLOOM-176B added "
        "NCCL_ASYNC_ERROR_HANDLING=1 after its hangs.",
        "export TORCH_NCCL_ASYNC_ERROR_HANDLING=1  # older torch reads NCCL_ASYNC_ERROR_HANDLING; "
        "dist.init_process_group(..., timeout=datetime.timedelta(minutes=30)); srun --wait=60 "
        "--kill-on-bad-exit=1")


def _torchfrtrace(a: DeadlockAnalysis) -> Action | None:
    if not a.incident.account.dumps:
        return None
    return action(
        "torchfrtrace", "Cross-check the flight-recorder dumps with torch's own analyser",
        "torchfrtrace reports missing ranks and mismatched collectives from the same dumps. "
        "On gloo dumps from torch 2.13 it raises KeyError (their pg_config keys do not match "
        "the entries' process-group names); this runbook's reading does not depend on it.",
        "torchfrtrace <dump dir> -p <file prefix before the rank, e.g. nccl_trace_rank_>")


# What the stacks point at first; then, for the next hang, more evidence (priorities 10-13).
ACTIONS: tuple[Rule[Action], ...] = (
    Rule("diagnose_crash", _diagnose_crash, 0),
    Rule("unsuspendable_process", _unsuspendable_process, 1),
    Rule("stale_extension_lock", _stale_extension_lock, 1),
    Rule("blocked_logging", _blocked_logging, 1), Rule("dataloader_queue", _dataloader_queue, 1),
    Rule("read_wait_site", _read_wait_site, 1), Rule("eval_loader_num_workers_0", _eval_loader, 1),
    Rule("rank_conditional_collective", _rank_conditional, 1),
    Rule("barrier_before_eval", _barrier_before_eval, 2),
    Rule("check_transport", _check_transport, 2),
    Rule("py_spy_all_ranks", _py_spy_all_ranks, 10),
    Rule("flight_recorder", _flight_recorder_action, 11),
    Rule("make_hangs_fail", _make_hangs_fail, 12), Rule("torchfrtrace", _torchfrtrace, 13))


SUSPEND_FAILED_RE = re.compile(r"suspend process|EPERM|Operation not permitted", re.IGNORECASE)
FILE_BATON_RE = re.compile(r"file_baton\.py|cpp_extension\.py|torch_extensions")
LOGGING_RE = re.compile(r"[/(]logging/(?:__init__|handlers)\.py")
LOADER_RE = re.compile(r"torch/utils/data/|_try_get_data|data/iterators\.py|_next_data")


def unsuspendable(a: DeadlockAnalysis) -> list[str]:
    """``host:pid`` of the processes py-spy could not suspend ("Error: Failed to suspend
    process", EPERM): a process in uninterruptible sleep cannot be stopped to be read."""
    e = a.dump_errors
    if not len(e):
        return []
    e = e[e["line"].fillna("").str.contains(SUSPEND_FAILED_RE)]
    out = []
    for r in e.itertuples(index=False):
        pid = getattr(r, "pid", None)
        if pid is not None and not pd.isna(pid):
            out.append(f"{r.host if isinstance(r.host, str) else '?'}:{int(pid)}")
    return sorted(set(out))


def wait_site(ranks: list[Proc]) -> str | None:
    """Where the dumped processes wait, for the advice: ``collective`` (every one inside the
    same collective), ``file_baton`` (the lock of torch's C++-extension build), ``logging``
    (a logging call), ``dataloader`` (a DataLoader's queue), ``elsewhere``; None: no stacks."""
    if not ranks:
        return None
    frames = [f for p in ranks for f in p.frames[:12]]
    if any(FILE_BATON_RE.search(f) for f in frames):
        return "file_baton"
    leaves = {p.leaf for p in ranks}
    if all(p.in_collective for p in ranks) and len(leaves) == 1:
        # one process's stack cannot say the others arrived too
        return "collective" if n_procs(ranks) > 1 else "one_in_collective"
    if any(LOGGING_RE.search(str(p.leaf)) or any(LOGGING_RE.search(f) for f in p.frames[:4])
           for p in ranks):
        return "logging"
    if any(LOADER_RE.search(str(p.leaf)) for p in ranks):
        return "dataloader"
    return "elsewhere"


def _stack_evidence(procs: list[Proc], frames: int = 6) -> list[str]:
    out = []
    for p in procs[:6]:
        out.append(f"{p.source}: {p.line}")
        i = key_leaf_index(p.frames) or 0
        out += [f"    {f}" for f in p.frames[:i + frames] if split_frame(f).python][:frames + i]
    return out


def _mismatch_evidence(incident: Incident, mm: Mismatch) -> list[str]:
    c = incident.collectives
    rows = c[(c["seq_num"] == mm.seq_num)
             & (c["process_group"].fillna(UNKNOWN_GROUP) == mm.process_group)]
    return [f"{s}: {ln}" for s, ln in zip(rows["source"].head(16), rows["line"].head(16), strict=False)]
