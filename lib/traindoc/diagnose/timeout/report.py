"""Collective timeout, the prose: facts, findings, verdict and actions from a ``TimeoutAnalysis``."""

from __future__ import annotations

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
    evidence,
    fired_actions,
    fired_findings,
    verdict_of,
)
from ...shellsafe import quote_all
from ..common import as_int, as_str, input_findings, is_host, reading_words, when_text, who
from ..types import UNKNOWN_GROUP, Mismatch, MismatchKind, Pattern
from .analysis import TimeoutAnalysis, is_store_barrier

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
    and what to do (the rules below, or the no-timeout rules when none was found)."""
    findings, actions, verdicts = ((FINDINGS, ACTIONS, VERDICTS) if a.found else
                                   (NO_TIMEOUT_FINDINGS, EVIDENCE_ACTIONS, NO_TIMEOUT_VERDICTS))
    verdict, confidence = verdict_of(verdicts, a)
    return Report("timeout", verdict, confidence, facts(a), fired_findings(findings, a),
                  fired_actions(actions, a))


# -- findings ------------------------------------------------------------------------------------

def _no_timeout(a: TimeoutAnalysis) -> Finding:
    said = a.incident.errors["line"].fillna("").str.contains(r"timed out|timeout", case=False)
    return Finding(
        "no_timeout", Severity.WARNING,
        "No collective timeout (NCCL watchdog or gloo) was found in these logs" + (
            "; the lines below that mention a timeout name no timed-out collective (torch "
            "prints 'failed or timed out' after any NCCL failure)" if said.any() else ""),
        evidence(a.incident.errors))


def _earlier_failure(a: TimeoutAnalysis) -> Finding | None:
    crash = a.earlier_failure
    if crash is None:
        return None
    return Finding("earlier_failure", Severity.CRITICAL,
                   f"{_crash_words(crash)} before the first timeout: the timeouts are its "
                   "consequence (its peers waited in a collective it never reached)",
                   [f"{crash['source']}: {crash['line']}"])


def _ranks_without_logs(a: TimeoutAnalysis) -> Finding | None:
    if not (a.world_size and a.unseen_ranks):
        return None
    return Finding(
        "ranks_without_logs", Severity.WARNING,
        f"{len(a.unseen_ranks)} of {a.world_size} ranks left no line in these logs: "
        f"{who(a.unseen_ranks)}; they may be the lagging ones, or their logs are missing", [])


def _collective_timeout(a: TimeoutAnalysis) -> Finding:
    return Finding("collective_timeout", Severity.CRITICAL,
                   timeout_title(facts(a), _reported_only(a)), evidence(a.timeouts))


def _first_mismatch(a: TimeoutAnalysis) -> Finding | None:
    mm = a.first_mismatch
    if mm is None:
        return None
    return Finding(
        "first_mismatch", Severity.CRITICAL,
        (f"Ranks disagree at sequence number {mm.seq_num}" if mm.seq_num is not None
         else "Ranks disagree in the collective each timed out in (no sequence number printed)")
        + f" of process group {mm.process_group} ({mm.kind}): "
        + ", ".join(f"rank {r}: {o}" for r, o in mm.ops.items())
        + (f"; differing or missing: {mm.ranks}" if mm.ranks else ""),
        evidence(_mismatch_rows(a.collectives, mm)))


def _lagging_ranks(a: TimeoutAnalysis) -> Finding | None:
    if not a.lagging_ranks:
        return None
    return Finding(
        "lagging_ranks", Severity.CRITICAL,
        f"{who(a.lagging_ranks, cap=True)} never entered {_collective_words(facts(a))}; the "
        f"others waited for {'it' if len(a.lagging_ranks) == 1 else 'them'}"
        + ("" if _reported_only(a) else " until the timeout")
        + (" (a monitoredBarrier report names the ranks that failed to pass; the rank that "
           "printed it is the monitor, not a culprit)" if a.op_type == "MONITORED_BARRIER"
           else ""),
        evidence(_status_rows(a.incident, a.lagging_candidates)))


def _one_view(a: TimeoutAnalysis) -> Finding | None:
    if a.lagging_ranks or a.pattern != Pattern.UNKNOWN or len(a.timed_out_ranks) > 1:
        return None
    return Finding(
        "one_view", Severity.WARNING,
        "Only one rank's view of the timeout is in these logs (or the lines carry no rank): "
        "the rank(s) that never arrived cannot be named from it", [])


def _uneven_data(a: TimeoutAnalysis) -> Finding | None:
    totals = a.step_totals
    if len(set(totals.values())) <= 1:
        return None
    last = a.incident.progress.dropna(subset=["rank"]).drop_duplicates("rank", keep="last")
    return Finding(
        "uneven_data", Severity.CRITICAL,
        "Ranks disagree on the number of steps in their data: "
        + ", ".join(f"rank {r}: {t}" for r, t in sorted(totals.items()))
        + " — the ranks with fewer batches finish early and wait in a collective the others"
        " never reach", evidence(last))


def _last_progress(a: TimeoutAnalysis) -> Finding | None:
    prog = a.progress
    if prog.step is None:
        return None
    sat = a.ran_for_ms or a.timeout_ms
    return Finding(
        "last_progress", Severity.INFO,
        f"Last progress before the hang: {prog.describe()}"
        + (f"; then it sat {sat / 1000:.0f} s ({sat / 60000:.1f} min) in the collective "
           "before timing out" if sat else ""),
        [f"{prog.source}: {prog.line}"])


def _teardown(a: TimeoutAnalysis) -> Finding | None:
    teardown = a.incident.errors[a.incident.errors["code"].isin(TEARDOWN_CODES)]
    if not len(teardown):
        return None
    return Finding("teardown", Severity.INFO,
                   "The watchdog took the process(es) down after the timeout",
                   evidence(teardown, limit=6))


def _exits(a: TimeoutAnalysis) -> Finding | None:
    exits = a.incident.exits
    if not len(exits):
        return None
    rc = exits[exits["root_cause"].fillna(False)]
    return Finding(
        "exits", Severity.INFO,
        "torchrun reported failed workers" + (_root_cause_text(rc.iloc[0]) if len(rc) else ""),
        evidence(exits))


def _root_cause_text(r: pd.Series) -> str:
    """'; root cause: rank R exit C (SIGNAL)', without what the record does not say (Open MPI's
    first-exit record names the rank, its exit code on a line not read)."""
    who = f"rank {as_int(r['rank'])}" if as_int(r["rank"]) is not None else "a worker"
    code = as_int(r["exitcode"])
    sig = as_str(r["signal"])
    how = (f"exit {code} ({sig or 'no signal'})" if code is not None
           else f"died of {sig}" if sig else "exited")
    return f"; root cause: {who} {how}"


def _group_size(a: TimeoutAnalysis) -> Finding | None:
    ratio = a.group_size
    if not ratio:
        return None
    return Finding("group_size", Severity.INFO,
                   f"NumelOut/NumelIn = {ratio}: the process group of this {a.op_type} has "
                   f"{ratio} ranks", [])


def _finished_early(a: TimeoutAnalysis) -> Finding | None:
    if not a.finished_early:
        return None
    prog = a.progress
    return Finding(
        "finished_early", Severity.WARNING,
        f"The last progress line is the end of the data ({prog.describe()}) while "
        f"{who(a.lagging_ranks)} had not arrived: ranks ran out of data at different "
        "steps (uneven or unseeded data split)", [f"{prog.source}: {prog.line}"])


def _watchdog_stuck(a: TimeoutAnalysis) -> Finding | None:
    if not len(a.stuck):
        return None
    return Finding(
        "watchdog_stuck", Severity.CRITICAL,
        f"The NCCL watchdog of {who(a.stuck['rank'].dropna())} stopped "
        "making progress (heartbeat monitor): the process hung inside an NCCL/CUDA call or "
        "under the GIL, not only in a collective's wait", evidence(a.stuck))


def _seq_num_unreadable(a: TimeoutAnalysis) -> Finding | None:
    unreadable = _unreadable_seq_ranks(a)
    if not unreadable or a.seq_num is None:
        return None
    return Finding(
        "seq_num_unreadable", Severity.WARNING,
        f"The sequence number of {who(unreadable)} could not be read (a number beyond 64 "
        f"bits): {'it' if len(unreadable) == 1 else 'they'} may be at another collective "
        f"than #{a.seq_num}, so the ranks may disagree",
        [str(u) for u in a.unreadable_seq_nums][:5])


def _input(a: TimeoutAnalysis) -> list[Finding]:
    return input_findings(a.incident)


# In the order the report lists them (the earlier failure first: the timeouts follow from it).
FINDINGS: tuple[Rule[Finding | Sequence[Finding]], ...] = (
    Rule("earlier_failure", _earlier_failure), Rule("ranks_without_logs", _ranks_without_logs),
    Rule("collective_timeout", _collective_timeout), Rule("first_mismatch", _first_mismatch),
    Rule("lagging_ranks", _lagging_ranks), Rule("one_view", _one_view),
    Rule("uneven_data", _uneven_data), Rule("last_progress", _last_progress),
    Rule("teardown", _teardown), Rule("exits", _exits), Rule("input", _input),
    Rule("group_size", _group_size), Rule("finished_early", _finished_early),
    Rule("watchdog_stuck", _watchdog_stuck), Rule("seq_num_unreadable", _seq_num_unreadable),
)
NO_TIMEOUT_FINDINGS: tuple[Rule[Finding | Sequence[Finding]], ...] = (
    Rule("no_timeout", _no_timeout), Rule("input", _input))


# -- verdicts ------------------------------------------------------------------------------------

def _no_timeout_verdict(a: TimeoutAnalysis) -> tuple[str, Confidence]:
    prog, read = a.progress, reading_words(a.incident)
    return ("No collective timeout found in the logs; " + (
        f"last progress: {prog.describe()}." if prog.step is not None
        else (f"{read}; " if read else "") + "check that log_path holds the failing job's "
        "logs (every rank's, and the launcher's)."), Confidence.LOW)


def _stuck_verdict(a: TimeoutAnalysis) -> tuple[str, Confidence] | None:
    if not len(a.stuck) or a.op_type is not None or a.seq_num is not None:
        return None
    return (f"The NCCL watchdog of {who(a.timed_out_ranks)} got stuck (heartbeat "
            "monitor): the process hung inside NCCL/CUDA or under the GIL; no collective is "
            "named — take py-spy dumps of the hung ranks (py-spy dump --native --pid …).",
            Confidence.MEDIUM)


def _consequence_verdict(a: TimeoutAnalysis) -> tuple[str, Confidence] | None:
    crash = a.earlier_failure
    if crash is None:
        return None
    return (f"{timeout_title(facts(a))} — the consequence of an earlier failure: "
            f"{_crash_words(crash)}. Diagnose that failure with the gpu_crash runbook.",
            Confidence.HIGH if pd.notna(crash["time"]) else Confidence.MEDIUM)


def _capped(a: TimeoutAnalysis, confidence: Confidence) -> Confidence:
    """High confidence drops to medium when a timed-out rank's sequence number was unreadable."""
    unsure = _unreadable_seq_ranks(a) and confidence == Confidence.HIGH
    return Confidence.MEDIUM if unsure else confidence


def _desync_verdict(a: TimeoutAnalysis) -> tuple[str, Confidence] | None:
    mm = a.first_mismatch
    if a.pattern != Pattern.DESYNC or mm is None:
        return None
    f = facts(a)
    base = timeout_title(f, _reported_only(a))
    if not f["timed_out_ranks"] and not f["timeout_ms"] and not f["ran_for_ms"]:
        # 'Detected mismatch between collectives' (TORCH_DISTRIBUTED_DEBUG=DETAIL): the
        # check stopped the job; no rank is known to have timed out
        seq = f" #{f['seq_num']}" if f["seq_num"] is not None else ""
        base = f"{f['op_type'] or 'A collective'}{seq} (no timeout line in these logs)"
    return (f"{base}: a desync — ranks issued {desync_words(mm)} {at_sequence(mm)} "
            f"({', '.join(f'rank {r}: {o}' for r, o in mm.ops.items())}).",
            _capped(a, Confidence.HIGH))


def _tail(a: TimeoutAnalysis) -> str:
    progress = a.progress.describe()
    return "" if progress.startswith("no ") else f"; last progress {progress}"


def _straggler_verdict(a: TimeoutAnalysis) -> tuple[str, Confidence] | None:
    if a.pattern != Pattern.STRAGGLER:
        return None
    return (f"{timeout_title(facts(a), _reported_only(a))}: {who(a.lagging_ranks)} never "
            f"entered it (straggler){_tail(a)}.",
            _capped(a, Confidence.HIGH if a.timed_out_ranks else Confidence.MEDIUM))


def _all_stuck_verdict(a: TimeoutAnalysis) -> tuple[str, Confidence] | None:
    if a.pattern != Pattern.ALL_STUCK:
        return None
    return (f"{timeout_title(facts(a), _reported_only(a))}: every rank entered it and it never "
            "completed — suspect the transport (network, NVLink, a sick GPU) rather than the "
            "program.", Confidence.MEDIUM)


def _startup_verdict(a: TimeoutAnalysis) -> tuple[str, Confidence] | None:
    """A start-up timeout that names no collective: what did not complete, not 'a collective'."""
    if a.pattern != Pattern.UNKNOWN or a.op_type or a.seq_num is not None or a.startup is None:
        return None
    limit = f" after {a.timeout_ms / 1000:.0f} s" if a.timeout_ms else ""
    ranks = who(a.timed_out_ranks, none="the job", cap=True)
    return (f"{ranks} timed out at start-up{limit}, before any collective: {a.startup}; the "
            "logs do not show which rank or node never joined.", Confidence.MEDIUM)


def _unknown_verdict(a: TimeoutAnalysis) -> tuple[str, Confidence]:
    return (f"{timeout_title(facts(a), _reported_only(a))}; the logs do not show which rank(s) "
            f"never arrived{_tail(a)}.", Confidence.MEDIUM if a.op_type or a.store_barrier else Confidence.LOW)


# The firing rule of highest priority gives the verdict: a stuck watchdog that names no
# collective, then an earlier failure (the timeouts are its consequence), then the pattern.
VERDICTS: tuple[Rule[tuple[str, Confidence]], ...] = (
    Rule("watchdog_stuck", _stuck_verdict, 50), Rule("earlier_failure", _consequence_verdict, 40),
    Rule("desync", _desync_verdict, 30), Rule("straggler", _straggler_verdict, 20),
    Rule("all_stuck", _all_stuck_verdict, 10), Rule("startup", _startup_verdict, 5),
    Rule("unknown", _unknown_verdict, 0))
NO_TIMEOUT_VERDICTS: tuple[Rule[tuple[str, Confidence]], ...] = (
    Rule("no_timeout", _no_timeout_verdict),)


DESYNC_WORDS = {MismatchKind.OP: "different collectives",
                MismatchKind.SIZE: "the same collective with different sizes",
                MismatchKind.DTYPE: "the same collective with different dtypes"}


def at_sequence(mm: Mismatch) -> str:
    """Where ranks disagree: "at sequence N", or, where the watchdog printed no sequence number
    (torch before 1.10), in the collective each timed out in."""
    return (f"at sequence {mm.seq_num}" if mm.seq_num is not None
            else "in the collective each timed out in (no sequence number printed)")


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
    bad = {u.source for u in a.unreadable_seq_nums}
    if not len(t) or not bad:
        return []
    rows = t[t["seq_num"].isna() & t["source"].astype(str).isin(bad)]
    return sorted({int(r) for r in rows["rank"].dropna()})


def _reported_only(a: TimeoutAnalysis) -> bool:
    """No rank printed a timeout: a report (fr_trace, NCCL RAS, a stall inspector) names the
    ranks missing from a collective that has not completed."""
    return not len(a.timeouts) and not len(a.status)


def barrier_facts(f: dict[str, Any]) -> bool:
    """The facts are of init_process_group's store-based barrier: no op, its key the group."""
    return f.get("op_type") is None and is_store_barrier(f.get("process_group"))


def collective_name(f: dict[str, Any]) -> str:
    """What the ranks waited in: the op as printed, the store-based barrier with its key, or
    'a collective'."""
    if barrier_facts(f):
        return f"init_process_group's store-based barrier ({f['process_group']})"
    return f["op_type"] or "a collective"


def _collective_words(f: dict[str, Any]) -> str:
    """``ALLREDUCE #241``, ``barrier:PjRT_Client_Connect`` or ``the collective``."""
    seq = f" #{f['seq_num']}" if f["seq_num"] is not None else ""
    return f"{f['op_type']}{seq}" if f["op_type"] else (
        f"collective{seq}" if seq else "the collective")


def timeout_title(f: dict[str, Any], reported_only: bool = False) -> str:
    """The timeout in one phrase from the facts: who timed out in which collective, after how
    long (with ``reported_only``: which collective a hang report says never completed)."""
    ranks = who(f["timed_out_ranks"], cap=True)
    what = collective_name(f)
    seq = f" #{f['seq_num']}" if f["seq_num"] is not None else ""
    if reported_only and barrier_facts(f):
        limit = f" (timeout {f['timeout_ms'] / 1000:.0f} s)" if f["timeout_ms"] else ""
        return (f"init_process_group's store-based barrier has not completed{limit}: ranks "
                "are still waiting in it")
    if reported_only:
        return (f"{_collective_words(f)} has not completed: a hang report names the ranks "
                "missing from it")
    size = ""
    if f["numel_in"] is not None:
        size = f" (NumelIn={f['numel_in']}, NumelOut={f['numel_out']})"
    ran = f" after {f['ran_for_ms'] / 1000:.0f} s" if f["ran_for_ms"] else (
        f" after the {f['timeout_ms'] / 1000:.0f} s timeout" if f["timeout_ms"] else "")
    if what == "MONITORED_BARRIER":
        # rank 0 monitors the barrier: it names the ranks that never came; any other rank that
        # timed out waited for rank 0's answer (then rank 0's log names the late rank)
        return f"{ranks} timed out in a monitoredBarrier (rank 0 is its monitor){ran}"
    return f"{ranks} timed out in {what}{seq}{size}{ran}"


# -- actions -------------------------------------------------------------------------------------

def _diagnose_crash(a: TimeoutAnalysis) -> Action | None:
    crash = a.earlier_failure
    if crash is None:
        return None
    return action(
        "diagnose_crash", "Diagnose the earlier failure, not the timeouts",
        f"{_crash_words(crash)}; the ranks that timed out were waiting for it. The gpu_crash "
        "runbook names the failure, its host and whether to drain it.",
        "traindoc run gpu_crash " + (quote_all(a.incident.account.paths)
                                     or "LOGS") + " -o gpu_crash-out")


def _uneven(a: TimeoutAnalysis) -> bool:
    return len(set(a.step_totals.values())) > 1 or a.finished_early


def _seed_data_split(a: TimeoutAnalysis, uneven: bool) -> Action:
    return action(
        "seed_data_split",
        "Seed every data split and shuffle so all ranks get the same number of batches",
        ("Ranks disagree on their number of steps, so some finish early and wait in a "
         "collective the others never reach." if uneven else
         f"A timeout in {a.op_type} at the end of training or at save time is the classic "
         "sign of ranks with different amounts of data (unseeded train/test split)."),
        "ds.train_test_split(test_size=..., seed=1234); np.random.seed(seed); "
        "torch.manual_seed(seed); use DistributedSampler(drop_last=True)")


def _seed_uneven(a: TimeoutAnalysis) -> Action | None:
    return _seed_data_split(a, True) if _uneven(a) else None


def _seed_fsdp(a: TimeoutAnalysis) -> Action | None:
    fsdp_gather = (a.op_type or "").upper() in FSDP_GATHER_OPS
    if _uneven(a) or not fsdp_gather or a.pattern not in (Pattern.STRAGGLER, Pattern.UNKNOWN):
        return None
    return _seed_data_split(a, False)


def _fix_desync(a: TimeoutAnalysis) -> Action | None:
    mm = a.first_mismatch
    if a.pattern != Pattern.DESYNC or mm is None:
        return None
    return action(
        "fix_desync", "Find the code path where ranks issue different collectives",
        f"The ranks called {desync_words(mm)} {at_sequence(mm)} "
        f"({', '.join(f'rank {r}: {o}' for r, o in mm.ops.items())}); look for a "
        "collective under a rank-conditional branch or data-dependent control flow.",
        "grep -n 'if .*rank' in the training step; rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL, "
        "which checks that every rank issues the same collective")


def _inspect_lagging(a: TimeoutAnalysis) -> Action | None:
    lag = a.lagging_ranks
    if a.pattern != Pattern.STRAGGLER or a.earlier_failure is not None:
        return None
    return action(
        "inspect_lagging", f"Find where {who(lag)} {'was' if len(lag) == 1 else 'were'} instead",
        "They never entered the collective the others waited in; their stacks or last log "
        "lines show what they were doing (data loading, eval, a branch that skips a "
        "collective).",
        f"py-spy dump --pid <pid of rank {lag[0]}> on its host while it hangs; "
        "or read its last log lines")


def _check_transport(a: TimeoutAnalysis) -> Action | None:
    if a.pattern != Pattern.ALL_STUCK:
        return None
    return action(
        "check_transport", "Test the interconnect and the GPUs of the nodes involved",
        "Every rank entered the collective and none finished: the transport, not the "
        "program, stalled.",
        "NCCL_DEBUG=INFO; run nccl-tests (all_reduce_perf -b 8 -e 1G -f 2 -g 8) per node and "
        "across nodes; check dmesg for Xid and link errors")


def _check_startup(a: TimeoutAnalysis) -> Action | None:
    if not a.at_startup:
        return None
    return action(
        "check_startup", "Find the ranks that never joined the job's start-up",
        "The timeout came before any collective: init_process_group's barrier or its store "
        "waited for ranks that had not started, could not reach the store, or were still busy "
        "before init (a download, data preprocessing on one rank).",
        "check that the launcher started world_size processes (squeue / kubectl get pods); "
        "nc -zv $MASTER_ADDR $MASTER_PORT from every node; read the missing ranks' first "
        "log lines")


def _flight_recorder(a: TimeoutAnalysis) -> Action | None:
    if a.incident.account.dumps or a.jax:  # JAX has no flight recorder
        return None
    return action(
        "flight_recorder", "Turn on the flight recorder and dump-on-timeout",
        "Without per-rank dumps the runbook cannot see which collective each rank was in "
        "when the job stopped.",
        "export TORCH_FR_BUFFER_SIZE=2000 TORCH_NCCL_TRACE_BUFFER_SIZE=2000 "
        "TORCH_NCCL_DUMP_ON_TIMEOUT=1 TORCH_FR_DUMP_TEMP_FILE=/shared/fr/nccl_trace_rank_ "
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/shared/fr/nccl_trace_rank_  # newer torch reads the "
        "TORCH_FR_ names, older the TORCH_NCCL_ ones; then point log_path at the job's logs "
        "and /shared/fr")


def _py_spy_all(a: TimeoutAnalysis) -> Action:
    return action(
        "py_spy_all", "Next time it hangs, take py-spy dumps of every rank",
        "Stacks show where each rank is — the one not in the collective is the culprit.",
        "srun --overlap --jobid $SLURM_JOBID --ntasks-per-node=1 --output=trace-%N.out "
        "sh -c 'pgrep -f train | xargs -I{} py-spy dump --pid {}'")


def _nccl_debug(a: TimeoutAnalysis) -> Action:
    if a.jax:
        return action(
            "nccl_debug", "Rerun with the JAX coordination service's logging",
            "Logs each task's connection to the coordination service and its barrier calls: "
            "the tasks that never connected, or never reached the barrier, show in it.",
            "export TF_CPP_MIN_LOG_LEVEL=0 "
            "TF_CPP_VMODULE=coordination_service=1,coordination_service_agent=1 NCCL_DEBUG=INFO")
    return action(
        "nccl_debug", "Rerun with NCCL and torch.distributed debug logging",
        "Logs which collective each rank issues, and checks that ranks agree on it.",
        "export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL TORCH_CPP_LOG_LEVEL=INFO "
        "TORCH_DISTRIBUTED_DEBUG=DETAIL")


def _longer_timeout(a: TimeoutAnalysis) -> Action | None:
    if a.jax:  # only the start-up barrier's limit is the user's to set
        if not a.jax_connect:
            return None
        return action(
            "longer_timeout_experiment", "Only as an experiment: give the tasks longer to connect",
            "If every task connects with a longer limit they were slow to start (image pulls, "
            "scheduling); if not, a task never started or cannot reach the coordinator. Not a "
            "fix.",
            "jax.distributed.initialize(..., initialization_timeout=900)")
    return action(
        "longer_timeout_experiment", "Only as an experiment: a longer timeout tells slow from stuck",
        "If the collective completes with a longer timeout the job is slow (bandwidth, "
        "stragglers); if it still times out it is stuck. Not a fix.",
        "dist.init_process_group(..., timeout=datetime.timedelta(minutes=30))")


# More evidence for next time: after whatever the logs already point at.
EVIDENCE_ACTIONS: tuple[Rule[Action], ...] = (
    Rule("flight_recorder", _flight_recorder, 10), Rule("py_spy_all", _py_spy_all, 11),
    Rule("nccl_debug", _nccl_debug, 12))
ACTIONS: tuple[Rule[Action], ...] = (
    Rule("diagnose_crash", _diagnose_crash, 1), Rule("seed_uneven", _seed_uneven, 1),
    Rule("seed_fsdp", _seed_fsdp, 3), Rule("fix_desync", _fix_desync, 1),
    Rule("inspect_lagging", _inspect_lagging, 1), Rule("check_transport", _check_transport, 1),
    Rule("check_startup", _check_startup, 1), *EVIDENCE_ACTIONS,
    Rule("longer_timeout_experiment", _longer_timeout, 13))
