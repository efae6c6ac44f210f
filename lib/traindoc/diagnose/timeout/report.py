"""Collective timeout, the prose: facts, findings, verdict and actions from a ``TimeoutAnalysis``."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ...incident import Incident
from ...parse.collectives import SOCKET_TIMEOUT_RE, STORE_BARRIER_OP
from ...report import Action, Finding, Report, evidence, ranked
from ...shellsafe import quote_all
from ..common import as_int, as_str, input_findings, is_host, reading_words, when_text, who
from ..types import UNKNOWN_GROUP, Mismatch, MismatchKind, Pattern
from .analysis import TimeoutAnalysis

FSDP_GATHER_OPS = {"_ALLGATHER_BASE", "ALLGATHER", "_ALLGATHER_INTO_TENSOR_COALESCED",
                   "ALLGATHER_COALESCED", "_REDUCE_SCATTER_BASE", "REDUCE_SCATTER"}

FACT_KEYS = ("timed_out_ranks", "op_type", "seq_num", "timeout_ms", "ran_for_ms", "numel_in",
             "numel_out", "process_group", "lagging_ranks", "last_step", "total_steps",
             "pattern", "first_mismatch")

TEARDOWN_CODES = ["nccl_teardown", "process_taken_down", "heartbeat_timeout", "watchdog_stuck"]


def facts(a: TimeoutAnalysis) -> dict[str, Any]:
    """The report's facts (``FACT_KEYS``, in that order)."""
    return {"timed_out_ranks": list(a.timed_out_ranks), "op_type": a.op_type, "seq_num": a.seq_num,
            "timeout_ms": a.timeout_ms, "ran_for_ms": a.ran_for_ms, "numel_in": a.numel_in,
            "numel_out": a.numel_out, "process_group": a.process_group,
            "lagging_ranks": list(a.lagging_ranks), "last_step": a.progress.step,
            "total_steps": a.progress.total, "pattern": a.pattern,
            "first_mismatch": a.first_mismatch.as_fact() if a.first_mismatch else None}


def report(a: TimeoutAnalysis) -> Report:
    """The timeout ``Report``: which ranks timed out in which collective, who never came, why,
    and what to do."""
    incident, prog = a.incident, a.progress
    f = facts(a)
    have_dumps = bool(incident.account.get("dumps"))
    if not a.found:
        findings = [Finding(
            "no_timeout", "warning",
            "No collective timeout (NCCL watchdog or gloo) was found in these logs" + (
                "; the lines below that mention a timeout name no timed-out collective (torch "
                "prints 'failed or timed out' after any NCCL failure)"
                if incident.errors["line"].fillna("").str.contains(
                    r"timed out|timeout", case=False).any() else ""),
            evidence(incident.errors)), *input_findings(incident)]
        read = reading_words(incident)
        verdict = "No collective timeout found in the logs; " + (
            f"last progress: {prog.describe()}." if prog.step is not None
            else (f"{read}; " if read else "") + "check that log_path holds the failing job's "
            "logs (every rank's, and the launcher's).")
        return Report("timeout", verdict, "low", f, findings,
                      ranked(_evidence_actions(have_dumps, prio=1)))

    findings: list[Finding] = []
    if a.world_size and a.unseen_ranks:
        findings.append(Finding(
            "ranks_without_logs", "warning",
            f"{len(a.unseen_ranks)} of {a.world_size} ranks left no line in these logs: "
            f"{who(a.unseen_ranks)}; they may be the lagging ones, or their logs are missing",
            []))
    findings.append(Finding("collective_timeout", "critical", timeout_title(f, _reported_only(a)),
                            evidence(a.timeouts)))
    mm = a.first_mismatch
    if mm:
        findings.append(Finding(
            "first_mismatch", "critical",
            f"Ranks disagree at sequence number {mm.seq_num} of process group "
            f"{mm.process_group} ({mm.kind}): "
            + ", ".join(f"rank {r}: {o}" for r, o in mm.ops.items())
            + (f"; differing or missing: {mm.ranks}" if mm.ranks else ""),
            evidence(_mismatch_rows(a.collectives, mm))))
    if a.lagging_ranks:
        findings.append(Finding(
            "lagging_ranks", "critical",
            f"{who(a.lagging_ranks, cap=True)} never entered {_collective_words(f)}; the others "
            f"waited for {'it' if len(a.lagging_ranks) == 1 else 'them'}"
            + ("" if _reported_only(a) else " until the timeout")
            + (" (a monitoredBarrier report names the ranks that failed to pass; the rank that "
               "printed it is the monitor, not a culprit)" if a.op_type == "MONITORED_BARRIER"
               else ""),
            evidence(_status_rows(incident, a.lagging_candidates))))
    elif a.pattern == Pattern.UNKNOWN and len(a.timed_out_ranks) <= 1:
        findings.append(Finding(
            "one_view", "warning",
            "Only one rank's view of the timeout is in these logs (or the lines carry no rank): "
            "the rank(s) that never arrived cannot be named from it", []))
    totals = a.step_totals
    if len(set(totals.values())) > 1:
        findings.append(Finding(
            "uneven_data", "critical",
            "Ranks disagree on the number of steps in their data: "
            + ", ".join(f"rank {r}: {t}" for r, t in sorted(totals.items()))
            + " — the ranks with fewer batches finish early and wait in a collective the others"
            " never reach", evidence(incident.progress.dropna(subset=["rank"])
                                     .drop_duplicates("rank", keep="last"))))
    if prog.step is not None:
        sat = a.ran_for_ms or a.timeout_ms
        findings.append(Finding(
            "last_progress", "info",
            f"Last progress before the hang: {prog.describe()}"
            + (f"; then it sat {sat / 1000:.0f} s ({sat / 60000:.1f} min) in the collective "
               "before timing out" if sat else ""),
            [f"{prog.source}: {prog.line}"]))
    teardown = incident.errors[incident.errors["code"].isin(TEARDOWN_CODES)]
    if len(teardown):
        findings.append(Finding(
            "teardown", "info", "The watchdog took the process(es) down after the timeout",
            evidence(teardown, limit=6)))
    if len(incident.exits):
        rc = incident.exits[incident.exits["root_cause"].fillna(False)]
        findings.append(Finding(
            "exits", "info",
            "torchrun reported failed workers" + (
                f"; root cause: rank {as_int(rc.iloc[0]['rank'])} exit "
                f"{as_int(rc.iloc[0]['exitcode'])} ({as_str(rc.iloc[0]['signal']) or 'no signal'})"
                if len(rc) else ""),
            evidence(incident.exits)))
    findings += input_findings(incident)
    ratio = a.group_size
    if ratio:
        findings.append(Finding(
            "group_size", "info",
            f"NumelOut/NumelIn = {ratio}: the process group of this {a.op_type} has "
            f"{ratio} ranks", []))
    if a.finished_early:
        findings.append(Finding(
            "finished_early", "warning",
            f"The last progress line is the end of the data ({prog.describe()}) while "
            f"{who(a.lagging_ranks)} had not arrived: ranks ran out of data at different "
            "steps (uneven or unseeded data split)", [f"{prog.source}: {prog.line}"]))
    if len(a.stuck):
        findings.append(Finding(
            "watchdog_stuck", "critical",
            f"The NCCL watchdog of {who(a.stuck['rank'].dropna())} stopped "
            "making progress (heartbeat monitor): the process hung inside an NCCL/CUDA call or "
            "under the GIL, not only in a collective's wait", evidence(a.stuck)))
    crash = a.earlier_failure
    if crash is not None:
        findings.insert(0, Finding(
            "earlier_failure", "critical",
            f"{_crash_words(crash)} before the first timeout: the timeouts are its "
            "consequence (its peers waited in a collective it never reached)",
            [f"{crash['source']}: {crash['line']}"]))
    unreadable = _unreadable_seq_ranks(a)
    if unreadable and f["seq_num"] is not None:
        findings.append(Finding(
            "seq_num_unreadable", "warning",
            f"The sequence number of {who(unreadable)} could not be read (a number beyond 64 "
            f"bits): {'it' if len(unreadable) == 1 else 'they'} may be at another collective "
            f"than #{f['seq_num']}, so the ranks may disagree",
            [w for w in a.incident.account.get("warnings", []) if ".seq_num was" in w][:5]))
    actions = ranked(_actions(f, a))
    verdict, confidence = _verdict(f, a.first_mismatch, prog.describe(), _reported_only(a))
    if unreadable and confidence == "high":
        confidence = "medium"
    if crash is not None:
        verdict = (f"{timeout_title(f)} — the consequence of an earlier failure: "
                   f"{_crash_words(crash)}. Diagnose that failure with the gpu_crash runbook.")
        confidence = "high" if pd.notna(crash["time"]) else "medium"
    if len(a.stuck) and a.op_type is None and a.seq_num is None:
        verdict = (f"The NCCL watchdog of {who(a.timed_out_ranks)} got stuck (heartbeat "
                   "monitor): the process hung inside NCCL/CUDA or under the GIL; no collective is "
                   "named — take py-spy dumps of the hung ranks (py-spy dump --native --pid …).")
        confidence = "medium"
    return Report("timeout", verdict, confidence, f, findings, actions)


DESYNC_WORDS = {MismatchKind.OP: "different collectives",
                MismatchKind.SIZE: "the same collective with different sizes",
                MismatchKind.DTYPE: "the same collective with different dtypes"}


def desync_words(mm: Mismatch) -> str:
    """What the ranks disagree on at the first mismatch, in words."""
    return DESYNC_WORDS.get(mm.kind, "different collectives")


def _crash_words(crash: pd.Series) -> str:
    culprit = f"rank {as_int(crash['rank'])}" if pd.notna(crash["rank"]) else "a process"
    host = f" on {crash['host']}" if is_host(crash["host"]) else ""
    when = f" at {when_text(crash['time'])}" if pd.notna(crash["time"]) else ""
    msg = str(crash["message"] or crash["code"] or "").strip().splitlines()[0][:160] if (
        as_str(crash["message"]) or as_str(crash["code"])) else "an error"
    return f"{culprit}{host} failed first{when} ({msg})"


def _status_rows(incident: Incident, ranks: list[int]) -> pd.DataFrame:
    c = incident.collectives
    rows = c[c["rank"].isin(ranks) & c["state"].isin(["status"])]
    if not len(rows):
        rows = incident.exits[incident.exits["rank"].isin(ranks)]
    return rows


def _mismatch_rows(c: pd.DataFrame, mm: Mismatch) -> pd.DataFrame:
    return c[(c["seq_num"] == mm.seq_num)
             & (c["process_group"].fillna(UNKNOWN_GROUP) == mm.process_group)]


def _unreadable_seq_ranks(a: TimeoutAnalysis) -> list[int]:
    """Timed-out ranks whose SeqNum the reader could not keep (out of range: read as <NA>)."""
    t = a.timeouts
    bad = {w.split(": ", 1)[0] for w in a.incident.account.get("warnings", [])
           if ".seq_num was" in w}
    if not len(t) or not bad:
        return []
    rows = t[t["seq_num"].isna() & t["source"].astype(str).isin(bad)]
    return sorted({int(r) for r in rows["rank"].dropna()})


def _reported_only(a: TimeoutAnalysis) -> bool:
    """No rank printed a timeout: a report (fr_trace, NCCL RAS, a stall inspector) names the
    ranks missing from a collective that has not completed."""
    return not len(a.timeouts) and not len(a.status)


def _collective_words(f: dict[str, Any]) -> str:
    """``ALLREDUCE #241``, ``barrier:PjRT_Client_Connect`` or ``the collective``."""
    seq = f" #{f['seq_num']}" if f["seq_num"] is not None else ""
    return f"{f['op_type']}{seq}" if f["op_type"] else (
        f"collective{seq}" if seq else "the collective")


def timeout_title(f: dict[str, Any], reported_only: bool = False) -> str:
    """The timeout in one phrase from the facts: who timed out in which collective, after how
    long (with ``reported_only``: which collective a hang report says never completed)."""
    ranks = who(f["timed_out_ranks"], cap=True)
    what = f["op_type"] or "a collective"
    seq = f" #{f['seq_num']}" if f["seq_num"] is not None else ""
    if reported_only:
        return (f"{_collective_words(f)} has not completed: a hang report names the ranks "
                "missing from it")
    size = ""
    if f["numel_in"] is not None:
        size = f" (NumelIn={f['numel_in']}, NumelOut={f['numel_out']})"
    ran = f" after {f['ran_for_ms'] / 1000:.0f} s" if f["ran_for_ms"] else (
        f" after the {f['timeout_ms'] / 1000:.0f} s timeout" if f["timeout_ms"] else "")
    if what == "MONITORED_BARRIER":
        return f"{ranks} (the monitor of a monitoredBarrier) timed out waiting for its peers{ran}"
    return f"{ranks} timed out in {what}{seq}{size}{ran}"


def _verdict(f: dict[str, Any], mm: Mismatch | None, progress: str, reported_only: bool = False,
             ) -> tuple[str, str]:
    base = timeout_title(f, reported_only)
    if f["pattern"] == Pattern.DESYNC and mm is not None:
        if not f["timed_out_ranks"] and not f["timeout_ms"] and not f["ran_for_ms"]:
            # 'Detected mismatch between collectives' (TORCH_DISTRIBUTED_DEBUG=DETAIL): the
            # check stopped the job; no rank is known to have timed out
            seq = f" #{f['seq_num']}" if f["seq_num"] is not None else ""
            base = f"{f['op_type'] or 'A collective'}{seq} (no timeout line in these logs)"
        return (f"{base}: a desync — ranks issued {desync_words(mm)} at sequence "
                f"{mm.seq_num} ({', '.join(f'rank {r}: {o}' for r, o in mm.ops.items())}).",
                "high")
    if f["pattern"] == Pattern.STRAGGLER:
        tail = "" if progress.startswith("no ") else f"; last progress {progress}"
        return (f"{base}: {who(f['lagging_ranks'])} never entered it (straggler){tail}.",
                "high" if f["timed_out_ranks"] else "medium")
    if f["pattern"] == Pattern.ALL_STUCK:
        return (f"{base}: every rank entered it and it never completed — suspect the transport "
                "(network, NVLink, a sick GPU) rather than the program.", "medium")
    tail = "" if progress.startswith("no ") else f"; last progress {progress}"
    return (f"{base}; the logs do not show which rank(s) never arrived{tail}.",
            "medium" if f["op_type"] else "low")


def _startup_timeout(f: dict[str, Any], a: TimeoutAnalysis) -> bool:
    """A timeout at start-up: the store-based barrier of init_process_group, or the c10d client
    socket that never reached the store."""
    lines = a.timeouts["line"].dropna().astype(str) if len(a.timeouts) else []
    return f["op_type"] == STORE_BARRIER_OP or any(SOCKET_TIMEOUT_RE.search(ln) for ln in lines)


def _evidence_actions(have_dumps: bool, prio: int) -> list[Action]:
    acts = []
    if not have_dumps:
        acts.append(Action(
            "flight_recorder", prio, "Turn on the flight recorder and dump-on-timeout",
            "Without per-rank dumps the runbook cannot see which collective each rank was in "
            "when the job stopped.",
            "export TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
            "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/shared/fr/nccl_trace_rank_  # then point log_path "
            "at the job's logs and /shared/fr"))
    acts.append(Action(
        "py_spy_all", prio + 1, "Next time it hangs, take py-spy dumps of every rank",
        "Stacks show where each rank is — the one not in the collective is the culprit.",
        "srun --overlap --jobid $SLURM_JOBID --ntasks-per-node=1 --output=trace-%N.out "
        "sh -c 'pgrep -f train | xargs -I{} py-spy dump --pid {}'"))
    acts.append(Action(
        "nccl_debug", prio + 2, "Rerun with NCCL and torch.distributed debug logging",
        "Logs which collective each rank issues, and checks that ranks agree on it.",
        "export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL TORCH_CPP_LOG_LEVEL=INFO "
        "TORCH_DISTRIBUTED_DEBUG=DETAIL"))
    return acts


def _actions(f: dict[str, Any], a: TimeoutAnalysis) -> list[Action]:
    acts: list[Action] = []
    crash = a.earlier_failure
    if crash is not None:
        acts.append(Action(
            "diagnose_crash", 1, "Diagnose the earlier failure, not the timeouts",
            f"{_crash_words(crash)}; the ranks that timed out were waiting for it. The gpu_crash "
            "runbook names the failure, its host and whether to drain it.",
            "traindoc run gpu_crash " + (quote_all(a.incident.account.get("paths", []))
                                         or "LOGS") + " -o gpu_crash-out"))
    uneven = len(set(a.step_totals.values())) > 1 or a.finished_early
    fsdp_gather = (f["op_type"] or "").upper() in FSDP_GATHER_OPS
    if uneven or (fsdp_gather and f["pattern"] in (Pattern.STRAGGLER, Pattern.UNKNOWN)):
        acts.append(Action(
            "seed_data_split", 1 if uneven else 3,
            "Seed every data split and shuffle so all ranks get the same number of batches",
            ("Ranks disagree on their number of steps, so some finish early and wait in a "
             "collective the others never reach." if uneven else
             f"A timeout in {f['op_type']} at the end of training or at save time is the classic "
             "sign of ranks with different amounts of data (unseeded train/test split)."),
            "ds.train_test_split(test_size=..., seed=1234); np.random.seed(seed); "
            "torch.manual_seed(seed); use DistributedSampler(drop_last=True)"))
    mm = a.first_mismatch
    if f["pattern"] == Pattern.DESYNC and mm is not None:
        acts.append(Action(
            "fix_desync", 1, "Find the code path where ranks issue different collectives",
            f"At sequence {mm.seq_num} the ranks called {desync_words(mm)} "
            f"({', '.join(f'rank {r}: {o}' for r, o in mm.ops.items())}); look for a "
            "collective under a rank-conditional branch or data-dependent control flow.",
            "grep -n 'if .*rank' in the training step; rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL, "
            "which checks that every rank issues the same collective"))
    if f["pattern"] == Pattern.STRAGGLER and crash is None:
        acts.append(Action(
            "inspect_lagging", 1, f"Find where {who(f['lagging_ranks'])} "
            f"{'was' if len(f['lagging_ranks']) == 1 else 'were'} instead",
            "They never entered the collective the others waited in; their stacks or last log "
            "lines show what they were doing (data loading, eval, a branch that skips a "
            "collective).",
            f"py-spy dump --pid <pid of rank {f['lagging_ranks'][0]}> on its host while it hangs; "
            "or read its last log lines"))
    if f["pattern"] == Pattern.ALL_STUCK:
        acts.append(Action(
            "check_transport", 1, "Test the interconnect and the GPUs of the nodes involved",
            "Every rank entered the collective and none finished: the transport, not the "
            "program, stalled.",
            "NCCL_DEBUG=INFO; run nccl-tests (all_reduce_perf -b 8 -e 1G -f 2 -g 8) per node and "
            "across nodes; check dmesg for Xid and link errors"))
    if _startup_timeout(f, a):
        acts.append(Action(
            "check_startup", 1, "Find the ranks that never joined the job's start-up",
            "The timeout came before any collective: init_process_group's barrier or its store "
            "waited for ranks that had not started, could not reach the store, or were still busy "
            "before init (a download, data preprocessing on one rank).",
            "check that the launcher started world_size processes (squeue / kubectl get pods); "
            "nc -zv $MASTER_ADDR $MASTER_PORT from every node; read the missing ranks' first "
            "log lines"))
    have_dumps = bool(a.incident.account.get("dumps"))
    acts += _evidence_actions(have_dumps, prio=len(acts) + 2)
    acts.append(Action(
        "longer_timeout_experiment", len(acts) + 3,
        "Only as an experiment: a longer timeout tells slow from stuck",
        "If the collective completes with a longer timeout the job is slow (bandwidth, "
        "stragglers); if it still times out it is stuck. Not a fix.",
        "dist.init_process_group(..., timeout=datetime.timedelta(minutes=30))"))
    return acts
