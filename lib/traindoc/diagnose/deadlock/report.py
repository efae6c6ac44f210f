"""The deadlock report's prose: facts, findings, the verdict and the ranked actions, from a
``DeadlockAnalysis``; and ``diagnose``, the two in one call."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pandas as pd

from ...incident import Incident
from ...report import Action, Finding, Report, ranked
from ..common import input_findings, last_progress, who
from ..types import UNKNOWN_GROUP, Mismatch, MismatchKind
from .analysis import DeadlockAnalysis, analyse, members_text, mismatch_title, per_rank_sites
from .stacks import Proc, key_leaf_index, n_procs, split_frame

FACT_KEYS = ("processes_seen", "groups", "outlier_members", "outlier_leaf", "majority_leaf",
             "first_mismatch")


def report(analysis: DeadlockAnalysis) -> Report:
    """The deadlock report from an analysis: facts, findings, verdict and ranked actions."""
    a = analysis
    incident, thread, procs, outliers = a.incident, a.thread, a.procs, a.outliers
    ranks, helpers, rest, mismatch = a.ranks, a.helpers, a.rest, a.mismatch
    facts: dict[str, Any] = {k: None for k in FACT_KEYS}
    facts.update(processes_seen=0, groups=[], outlier_members=[])
    findings: list[Finding] = []
    facts["first_mismatch"] = mismatch.as_fact() if mismatch else None
    if a.inferred:
        findings.append(Finding(
            "ranks_inferred", "info",
            "Ranks inferred for dumps that named none: " + "; ".join(
                f"{p.host or '?'}:{p.pid} is rank {p.rank} ({p.rank_inferred})"
                for p in procs if p.rank_inferred), []))
    facts["processes_seen"] = n_procs(ranks)
    table = a.groups
    facts["groups"] = [{"signature": r["signature"], "leaf": r["leaf"], "members": r["members"],
                        "count": int(r["count"])} for _, r in table.iterrows()]
    facts["outlier_members"] = list(a.outlier_members)
    facts["outlier_leaf"] = a.outlier_leaf
    facts["majority_leaf"] = a.majority_leaf
    stopped = unsuspendable(a)
    if stopped and not mismatch and (not outliers or a.rule == "not_dumpable"):
        facts["outlier_members"] = stopped

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
    if outliers and not (stopped and a.rule == "not_dumpable"):
        why = {"outside_collective": "outside any collective while the others wait in one",
               "smallest_group": "in a state no larger group shares",
               "not_dumpable": "the process py-spy could not attach to (stuck in the kernel?)",
               "uninterruptible": "in uninterruptible sleep (D in ps): stuck in the kernel",
               }.get(a.rule, "named by the flight recorder")
        findings.append(Finding(
            "outliers", "critical",
            f"{members_text(facts['outlier_members'])} {'is' if len(outliers) == 1 else 'are'} {why}: "
            f"{facts['outlier_leaf']}" + (
                f" (the others: {facts['majority_leaf']})" if facts["majority_leaf"] else ""),
            _stack_evidence(outliers)))
    elif stopped and not mismatch:
        findings.append(Finding(
            "unsuspendable", "critical",
            f"{members_text(stopped)} could not be dumped: py-spy failed to suspend "
            f"{'it' if len(stopped) == 1 else 'them'} (EPERM) — the outlier. A process py-spy "
            "cannot stop is usually in uninterruptible sleep (D in ps: blocked in the kernel, on "
            "the GPU driver, a file system or the network) while the others wait for it"
            + (f" ({facts['majority_leaf']})" if facts["majority_leaf"] else ""),
            [f"{s}: {ln}" for s, ln in zip(a.dump_errors["source"].head(6),
                                            a.dump_errors["line"].head(6), strict=False)]))
    elif ranks and a.rule == "all_same":
        where = "inside the same collective" if ranks[0].in_collective else "at the same place"
        findings.append(Finding(
            "all_same", "warning",
            f"All {n_procs(ranks)} processes are {where}: {ranks[0].leaf}", _stack_evidence(ranks[:2])))
    if mismatch:
        findings.append(Finding(
            "first_mismatch", "critical", mismatch_title(mismatch),
            _mismatch_evidence(incident, mismatch)))
    fr = a.flight_recorder
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
    errors = a.dump_errors
    if len(errors):
        findings.append(Finding(
            "dump_errors", "warning",
            f"py-spy failed on {len(errors)} process(es): those ranks' stacks are missing",
            [f"{s}: {ln}" for s, ln in zip(errors["source"].head(10), errors["line"].head(10),
                                            strict=False)]))
    findings += input_findings(incident)

    site = wait_site(ranks)
    actions = ranked(_actions(a.traps, facts, incident, bool(ranks), site, stopped))
    verdict, confidence = _verdict(facts, outliers, rest, a.rule, mismatch, a.traps, ranks,
                                   a.fr_named)
    if site == "file_baton" and not outliers and not mismatch:
        n = n_procs(ranks)
        verdict = (f"{'The dumped process waits' if n == 1 else f'{n} processes wait'} in "
                   f"{facts['majority_leaf'] or 'torch/utils/file_baton.py'}: the lock of "
                   "torch's C++-extension build (FileBaton), which a build killed mid-way leaves "
                   "behind and nobody releases — remove the stale lock file "
                   "(~/.cache/torch_extensions/*/*/lock, or under $TORCH_EXTENSIONS_DIR) and "
                   "restart.")
        confidence = "medium"
    if stopped and not mismatch and (not outliers or a.rule == "not_dumpable"):
        verdict = (f"{members_text(stopped)} could not be dumped (py-spy: Failed to suspend "
                   "process) — the outlier: a process py-spy cannot suspend is usually in "
                   "uninterruptible sleep (D in ps), blocked in the kernel"
                   + (f"; the {n_procs(ranks)} dumped wait in {facts['majority_leaf']}"
                      if ranks and facts["majority_leaf"] else "") + ".")
        confidence = "medium"
    prog = last_progress(incident)
    if prog.step is not None:
        findings.append(Finding("last_progress", "info",
                                f"Last progress before the hang: {prog.describe()}",
                                [f"{prog.source}: {prog.line}"]))
    return Report("deadlock", verdict, confidence, facts, findings, actions)


def diagnose(incident: Incident, thread: str = "MainThread", depth: int | None = None) -> Report:
    """Diagnose a hang from stack dumps (and flight-recorder dumps when there are any).
    ``thread``: the thread to compare ("MainThread", a thread name, or "*" for all busy
    threads); ``depth``: frames per signature from the leaf outwards (None or 0: all)."""
    return report(analyse(incident, thread=thread, depth=depth))


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


def _actions(traps: dict[str, str], facts: dict[str, Any], incident: Incident,
             have_stacks: bool, site: str | None = None,
             stopped: list[str] | None = None) -> list[Action]:
    acts: list[Action] = []
    if stopped:
        pid = stopped[0].rsplit(":", 1)[-1]
        acts.append(Action(
            "unsuspendable_process", 1,
            f"Look at {members_text(stopped, start=False)}, which py-spy could not suspend",
            "A process py-spy cannot stop (Failed to suspend process, EPERM, as root) is in "
            "uninterruptible sleep: blocked in the kernel — the GPU driver, a file system (NFS, "
            "Lustre), the network. The others wait for it in their collective.",
            f"ps -o pid,stat,wchan:32,cmd -p {pid}  # STAT D = uninterruptible sleep; as root: "
            f"cat /proc/{pid}/stack; dmesg -T | grep -iE 'xid|hung_task|blocked for more than'; "
            "a process that stays in D does not die to kill -9: the node needs a reboot"))
    leaf = facts["majority_leaf"] or "the frame shown"
    if site == "file_baton":
        acts.append(Action(
            "stale_extension_lock", 1,
            "Remove the stale lock of torch's C++-extension build",
            f"The process waits in {leaf}: torch's FileBaton, polling for a lock file that a "
            "build killed mid-way (an earlier run, a crashed rank) left behind. No one will "
            "ever release it; every rank that loads the extension waits for ever.",
            "ls ~/.cache/torch_extensions/*/*/lock  # or $TORCH_EXTENSIONS_DIR/<extension>/lock; "
            "the path is ~/.cache/torch_extensions/py<python>_cu<cuda>/<extension>/lock — stop "
            "the job, rm that lock file (or the whole <extension> directory to rebuild), restart"))
    elif site == "logging":
        acts.append(Action(
            "blocked_logging", 1, "Find what blocks the logging call",
            f"The process waits in a logging call ({leaf}): a handler's lock held by a thread "
            "that no longer runs (copied into a fork()ed child, e.g. a DataLoader worker, while "
            "another thread logged), or a full stdout/stderr pipe nobody reads.",
            "py-spy dump --native --pid <pid> (which lock, which write); use the 'spawn' or "
            "'forkserver' start method (multiprocessing_context='spawn' for DataLoaders); make "
            "sure the launcher drains the process's output (no pipe left unread)"))
    elif site == "dataloader" and not ("eval_dataloader" in traps or "dataloader" in traps):
        acts.append(Action(
            "dataloader_queue", 1, "Look at the DataLoader's workers: the process waits for a batch",
            f"The process waits on its DataLoader's queue ({leaf}): a worker is stuck (a read "
            "that never returns, a worker deadlock, pytorch/pytorch#25158) or died without the "
            "loader noticing.",
            "py-spy dump --pid <worker pid> for each worker (pgrep -P <pid>); DataLoader(..., "
            "timeout=600) so a stuck worker raises; num_workers=0 to confirm"))
    elif site == "elsewhere" and not facts["outlier_members"] and not facts["first_mismatch"]:
        acts.append(Action(
            "read_wait_site", 1, f"Find what {leaf} waits on",
            f"The processes wait in {leaf}, not inside a collective: the hang is in that code "
            "(or in what it waits on: the GPU, a queue, a remote service), not in the "
            "interconnect.",
            "py-spy dump --native --pid <pid> twice a minute apart (stuck or slow); read the "
            "frames above the leaf"))
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
    if (have_stacks and site == "collective" and not facts["outlier_members"]
            and not facts["first_mismatch"]):
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
             mm: Mismatch | None, traps: dict[str, str], ranks: list[Proc],
             fr_named: bool) -> tuple[str, str]:
    n_rest = n_procs(rest)
    fr_part = ""
    if mm:
        fr_part = (f"; the flight recorder agrees: at sequence {mm.seq_num} "
                   + ", ".join(f"rank {r}: {o}" for r, o in mm.ops.items())
                   + (f" (missing: {who(mm.ranks)})"
                      if mm.kind == MismatchKind.MISSING_RANKS else ""))
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
        verdict = (f"{members_text(facts['outlier_members'])} {'is' if len(outliers) == 1 else 'are'} "
                   f"stuck in {facts['outlier_leaf']}{trap}, while {others}{fr_part}.")
        conf = "high" if rule == "outside_collective" or mm else "medium"
        return verdict, conf
    if mm:
        ops = ", ".join(f"rank {r} issued {o}" for r, o in mm.ops.items())
        if mm.kind.is_desync:
            kind = {"op": "different collectives", "size": "different sizes",
                    "dtype": "different dtypes"}[mm.kind]
            where = per_rank_sites(ranks, mm)
            return (f"Desync: at sequence number {mm.seq_num} of process group "
                    f"{mm.process_group} ranks issued {kind} ({ops}) — each waits in a "
                    f"collective its peers never issue{where}.", "high")
        return (f"{who(mm.ranks, cap=True)} never reached collective {mm.seq_num} of "
                f"process group {mm.process_group} that the others issued ({ops}).",
                "high" if ranks else "medium")
    if ranks and rule == "all_same":
        where = "inside" if ranks[0].in_collective else "at"
        return (f"All {n_procs(ranks)} processes are {where} {ranks[0].leaf}: no rank is elsewhere"
                + (" — the collective itself is stuck (suspect the transport or a GPU)"
                   if ranks[0].in_collective else "") + ".", "medium")
    if ranks and n_procs(ranks) == 1:
        return (f"One process was dumped, waiting in "
                f"{facts['majority_leaf'] or 'the frames below'}: with one stack no outlier can "
                "be named — dump every rank to see which one is elsewhere.", "low")
    if ranks:
        return (f"{n_procs(ranks)} processes in {len(facts['groups'])} groups and no clear outlier; "
                "compare the groups' stacks below.", "low")
    return ("No stack dumps found: collect py-spy dumps of every rank while the job hangs "
            "(see actions).", "low")

