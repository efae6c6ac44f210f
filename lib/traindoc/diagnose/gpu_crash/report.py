"""The gpu_crash report: findings, verdict and ranked actions (the prose) from a
``GpuCrashAnalysis``, as rules (``traindoc.report.Rule``). Nothing here reads the logs again."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

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
from ...shellsafe import hosts_arg, is_host_name, quote, rank_arg, reason_text, shown
from ...xid_catalog import XidInfo, xid_info
from ..common import (
    JOB_SCRIPT_VAR,
    NODE_VAR,
    count,
    input_findings,
    reading_words,
    script_note,
    when_text,
)
from .analysis import GpuCrashAnalysis
from .checkpoints import DEFAULT_MTBF_HOURS, expected_waste
from .events import (
    HOST_OOM_CODES,
    NOT_A_FAILURE_CODES,
    SCHEDULER_STOP_CODES,
    USER_STOP_SIGNALS,
    Crash,
)

HANG_WARN_S = 300.0  # a job that took longer than this to exit after the failure "hung"

# CUDA errors that usually mean the GPU (hardware, driver) rather than the program.
HARDWARE_CUDA_RE = re.compile(
    r"unknown error|uncorrectable ECC|ECC error|unspecified launch failure|"
    r"devices? (?:is |are )?unavailable|device not ready|GPU is lost|fallen off|"
    r"hardware stack error|launch timed out", re.IGNORECASE)
PROGRAM_CUDA_RE = re.compile(
    r"illegal memory access|device-side assert|misaligned address|invalid argument|"
    r"invalid configuration|illegal instruction|no kernel image", re.IGNORECASE)
# What a node is drained for: hardware evidence in the failure's own words (issue 27).
DRAIN_EVIDENCE_RE = re.compile(
    r"uncorrectable ECC|ECC error|row.?remap|fallen off|GPU is lost|"
    r"Unable to determine the device handle|NVLink|NVL error", re.IGNORECASE)
WATCHDOG_FRAME_RE = re.compile(r"workCleanupLoop|watchdogHandler|ncclCommWatchdog|"
                               r"finishedGPUExecution|CUDAEvent\.h")
# Signals a process raises on itself by faulting (not a kill from outside).
FAULT_SIGNALS = frozenset({"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE"})
# NCCL codes of a CUDA call failing inside NCCL (no proof of broken hardware by themselves).
NCCL_CUDA_CODES = ("nccl_unhandled_cuda", "nccl_warn_cuda")


def report(a: GpuCrashAnalysis) -> Report:
    """The findings, verdict, confidence and ranked actions for an analysed crash."""
    verdict, confidence = verdict_of(VERDICTS, a)
    report_facts = {k: list(v) if isinstance(v, list) else v for k, v in a.facts.items()}
    return Report("gpu_crash", verdict, confidence, report_facts, fired_findings(FINDINGS, a),
                  fired_actions(ACTIONS, a))


def _who(facts: dict[str, Any]) -> str:
    ranks, hosts = facts["failed_ranks"], facts["failed_hosts"]
    if ranks and hosts:
        return f"Rank {', '.join(map(str, ranks))} on {', '.join(hosts)}"
    if ranks:
        return f"Rank {', '.join(map(str, ranks))}"
    if hosts:
        return f"Host {', '.join(hosts)}"
    return "A process (no rank or host in its lines)"


# error_kind (a fact's value) in words for sentences (issue 15.10: no internal ids in prose)
KIND_WORDS = {"cuda_error": "a CUDA error", "xid": "an Xid from the GPU driver",
              "oom": "out of memory", "nccl_error": "an NCCL error", "ecc": "an ECC memory error",
              "mpi_error": "an MPI error", "signal": "a fatal signal", "python": "a Python error"}


def _at_first(facts: dict[str, Any]) -> str:
    """The first failure's time as a sentence's " at <time>"; "" where none is known."""
    return f" at {when_text(facts['first_failure_time'])}" if facts["first_failure_time"] else ""


def _first_title(crash: Crash, facts: dict[str, Any]) -> str:
    first = crash.first
    assert first is not None
    when = _at_first(facts)
    how = {"time": "the earliest timestamp", "root_cause": "torchrun's root-cause record",
           "line_order": "line order, the lines carry no timestamps",
           "silent": "the only rank that reported nothing while the others failed after it",
           "lone": "the only rank that reported an error; its peers in the logs reported none"}
    kind = KIND_WORDS.get(facts["error_kind"], facts["error_kind"]) or "cause unknown"
    note = first.get("rank_note")
    note = f" ({note})" if isinstance(note, str) and note else ""
    return (f"{_who(facts)}{note} failed first{when}: {kind} — {facts['error_message']}"
            f" [chosen by {how.get(crash.by, crash.by)}]")


def _first_evidence(crash: Crash) -> list[str]:
    rows = crash.cluster
    if not len(rows) and crash.first is not None and crash.first.get("source") is not None:
        rows = pd.DataFrame([crash.first])
    return evidence(rows, limit=12)


def _kind(a: GpuCrashAnalysis) -> str | None:
    """The first failure's kind (the ``error_kind`` fact)."""
    return a.facts["error_kind"]


def _msg(a: GpuCrashAnalysis) -> str:
    """The first failure's message ('' when none)."""
    return a.facts["error_message"] or ""


def _code(a: GpuCrashAnalysis) -> Any:
    """The first failure's code (None when no failure of a rank's own was found)."""
    return a.crash.first["code"] if a.crash.first is not None else None


# -- findings ------------------------------------------------------------------------------------

def _no_failure(a: GpuCrashAnalysis) -> Finding | None:
    crash = a.crash
    if crash.first is not None:
        return None
    return Finding(
        "no_failure", Severity.WARNING,
        ("No failure of a rank's own was found: the "
         f"{len(crash.cascade)} line(s) below are symptoms of a failure elsewhere (a peer "
         "that died, a collective that timed out, the launcher stopping the survivors)"
         if len(crash.cascade) else
         "No crash was found: no CUDA/Xid/ECC/OOM error, fatal signal, failed process or "
         "Python exception in these logs"),
        evidence(crash.cascade))


def _first_failure(a: GpuCrashAnalysis) -> Finding | None:
    if a.crash.first is None:
        return None
    return Finding("first_failure", Severity.CRITICAL, _first_title(a.crash, a.facts),
                   _first_evidence(a.crash))


def _frames(a: GpuCrashAnalysis) -> list[str]:
    """The stack frames logged with the first failure's lines (any error's, if no cluster)."""
    errs, cl = a.incident.errors, a.crash.cluster
    frames_rows = errs[errs["frames"].notna()] if "frames" in errs else errs.iloc[0:0]
    if len(cl):
        frames_rows = frames_rows[frames_rows["source"].isin(list(cl["source"]))]
    return [f for fl in frames_rows["frames"] for f in (fl or [])] if len(frames_rows) else []


def _async_cuda_error(a: GpuCrashAnalysis) -> Finding | None:
    frames = _frames(a) if a.crash.first is not None else []
    if not any(WATCHDOG_FRAME_RE.search(f) for f in frames):
        return None
    return Finding(
        "async_cuda_error", Severity.INFO,
        "The CUDA error surfaced in ProcessGroupNCCL's watchdog thread (it polls CUDA "
        "events of finished collectives): the fault happened earlier, in some kernel on "
        "this GPU, and was only noticed there — the frames do not point at the culprit",
        frames[:10])


def _hardware_suspect(a: GpuCrashAnalysis) -> Finding | None:
    msg = _msg(a)
    if a.crash.first is None or _kind(a) != "cuda_error" or not HARDWARE_CUDA_RE.search(msg):
        return None
    return Finding(
        "hardware_suspect", Severity.WARNING,
        f"'{msg}' is what a GPU that failed under the job looks like (an Xid in the "
        "node's kernel log usually says which): treat the node as suspect until a "
        "diagnostic passes", [])


def _program_suspect(a: GpuCrashAnalysis) -> Finding | None:
    msg = _msg(a)
    if (a.crash.first is None or _kind(a) != "cuda_error" or HARDWARE_CUDA_RE.search(msg)
            or not PROGRAM_CUDA_RE.search(msg)):
        return None
    return Finding(
        "program_suspect", Severity.WARNING,
        f"'{msg}' is usually the program (an out-of-bounds index, a bad kernel), not the "
        "hardware: rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel before blaming "
        "the node", [])


def _oom_figures(a: GpuCrashAnalysis) -> Finding | None:
    cl = a.crash.cluster
    if a.crash.first is None or _kind(a) != "oom":
        return None
    ooms = cl[cl["kind"] == "oom"] if len(cl) else cl
    figs = a.oom_figures
    if not figs:
        return None
    f0 = figs[0]
    frag = f0.get("reserved_unallocated")
    # each figure only where the message gave it (a pasted line is often cut before the end)
    parts = [f"tried to allocate {f0['tried']} GiB" if f0.get("tried") is not None else None,
             f"with {f0['free']} GiB free" if f0.get("free") is not None else None,
             f"of {f0['total']} GiB" if f0.get("total") is not None else None]
    held = (f"; PyTorch held {f0['allocated']} GiB" if f0.get("allocated") is not None else "")
    gpu = f"GPU {f0['gpu']}" if f0.get("gpu") is not None else "The GPU"
    return Finding(
        "oom_figures", Severity.INFO,
        f"{gpu}: {' '.join(p for p in parts if p)}{held}"
        + (f" and {frag} GiB reserved but unallocated (fragmentation)" if frag else ""),
        evidence(ooms, limit=4))


def _killed(a: GpuCrashAnalysis) -> Finding | None:
    if _kind(a) != "signal" or _code(a) != "SIGKILL":
        return None
    return Finding(
        "killed", Severity.WARNING,
        "Killed by SIGKILL with no error of its own: the kernel's OOM killer, the "
        "scheduler (time limit, preemption, scancel) or an operator; the node's dmesg and "
        "sacct tell which", [])


def _silent_rank(a: GpuCrashAnalysis) -> Finding | None:
    first = a.crash.first
    if first is None or a.crash.by != "silent":
        return None
    return Finding(
        "silent_rank", Severity.WARNING,
        f"Rank {int(first['rank'])} appears in the logs but reported no failure while every "
        "other rank failed after it: it most likely died first without a word (SIGKILL, "
        "node loss); its own stderr and the node's dmesg are missing", [])


def _xids(a: GpuCrashAnalysis) -> list[Finding]:
    out: list[Finding] = []
    xids = a.xid_events
    if not len(xids):
        return out
    for code, g in xids.groupby("code", sort=False):
        info = xid_info(int(code) if str(code).isdigit() else None)
        hosts = sorted({str(h) for h in g["host"].dropna()})
        sev = Severity.INFO if info.cascade or info.scope == "none" else Severity.CRITICAL
        out.append(Finding(
            f"xid_{code}", sev,
            f"Xid {code} ({info.mnemonic}): {info.meaning}"
            + (f" on {', '.join(hosts)}" if hosts else "")
            + f" — {info.origin}; NVIDIA's immediate action: {info.resolution}; "
              f"take out of service: {info.scope}; next: {info.next_step}",
            evidence(g, limit=6)))
    return out


def _cascade_words(a: GpuCrashAnalysis) -> tuple[int, str]:
    """How many other ranks failed after the first, and ' on N hosts' ('' if none known)."""
    hosts = len(a.cascade_hosts)
    return (a.crash.cascade["rank"].dropna().nunique(),
            f" on {count(hosts, 'host')}" if hosts else "")


def _cascade(a: GpuCrashAnalysis) -> Finding | None:
    if not len(a.crash.cascade):
        return None
    n_r, on = _cascade_words(a)
    delay = a.cascade["after_s"].dropna()
    who = f"{count(n_r, 'other rank')}{on}" if n_r else "Its peers"
    early = len(delay) and round(delay.min()) < 0
    return Finding(
        "cascade", Severity.INFO,
        f"{who} failed {'with' if early else 'after'} it: peers' NCCL/gloo errors, collective "
        "timeouts and launcher kills are symptoms of the first failure, not causes"
        + (f" ({_when(delay.min(), delay.max())})" if len(delay) else ""),
        evidence(a.crash.cascade, limit=12))


def _when(first: float, last: float) -> str:
    """When the cascade was logged relative to the first failure's line, in words. A peer's
    line can come first: torchrun and the DeepSpeed launcher signal the other workers before
    they write the dead worker's exit record, and another host's clock may differ."""
    def at(s: float) -> str:
        return "at the same second as" if round(s) == 0 else (
            f"{abs(s):.0f} s {'after' if s > 0 else 'before'}")
    if round(first) >= 0:
        return f"first {first:.0f} s, last {last:.0f} s after it"
    span = (f"logged {at(first)} the line that names it" if round(first) == round(last)
            else f"logged from {at(first)} to {at(last)} the line that names it")
    return (span + ": a launcher signals the other workers before it writes the dead one's "
            "exit record, and another host's clock may differ")


def _other_failures(a: GpuCrashAnalysis) -> Finding | None:
    ind = a.crash.independent
    if not len(ind):
        return None
    return Finding(
        "other_failures", Severity.WARNING,
        f"{len(ind)} other local failure(s) on other ranks/hosts, apart from "
        "the first one in time or place: check whether they are a second, independent "
        "problem", evidence(ind, limit=10))


def _exit_delay(a: GpuCrashAnalysis) -> Finding | None:
    hang = a.exit_delay_s
    if hang is None:
        return None
    return Finding(
        "exit_delay", Severity.WARNING if hang > HANG_WARN_S else Severity.INFO,
        f"The job's last failure line came {hang / 60:.1f} min after the first failure"
        + (": the survivors hung until a timeout instead of exiting" if hang > HANG_WARN_S
           else ""), [])


# a Python None printed where a save names its path ("Saved checkpoint to None...", ColBERT's
# train.out in corpus throughput-colbert-fork-train-out): no path to show
NO_PATH = frozenset({"None", "null"})


def _last_checkpoint(a: GpuCrashAnalysis) -> Finding:
    ck = a.checkpoints
    if ck.how in ("saved", "loaded"):
        what = "saved" if ck.how == "saved" else "loaded at start (no save after it)"
        return Finding(
            "last_checkpoint", Severity.INFO,
            f"Last checkpoint: iteration {ck.last_iteration} ({what})"
            + (f" at {ck.last_path}" if ck.last_path and ck.last_path not in NO_PATH else "")
            + (f"; saving took ~{ck.save_s:.0f} s ({ck.save_s_source})" if ck.save_s else "")
            + (f"; saves every {ck.interval} iterations" if ck.interval else ""), [])
    if ck.how == "inferred":
        return Finding(
            "last_checkpoint", Severity.INFO,
            f"No checkpoint line in the logs; with save_interval the last save was at iteration "
            f"{ck.last_iteration} (inferred, not seen)", [])
    return Finding(
        "no_checkpoint_lines", Severity.WARNING,
        "No checkpoint save or load line in these logs: the resume point is unknown (set "
        "save_interval to place it, or add the log that has the save lines)", [])


def _incomplete_save(a: GpuCrashAnalysis) -> Finding | None:
    if a.checkpoints.incomplete is None:
        return None
    return Finding(
        "incomplete_save", Severity.CRITICAL,
        f"The save of iteration {a.checkpoints.incomplete} started and never finished: that "
        "checkpoint is probably partial — do not resume from it", [])


def _lost_work(a: GpuCrashAnalysis) -> Finding | None:
    f, prog = a.facts, a.progress
    lost_it, lost_h = f["lost_iterations"], f["lost_hours"]
    if lost_it is None:
        return None
    if a.finished:
        return Finding("lost_work", Severity.INFO,
                       f"Work lost: none — the program had reported its run finished with success "
                       f"(last iteration {prog.step}) before it failed",
                       [f"{prog.source}: {prog.line}"] if prog.source else [])
    ckpt = f["last_checkpoint_iteration"]
    point = f"iteration {ckpt}" if ckpt is not None else "the start of training"
    hours = f" ≈ {lost_h:.2f} h of the whole job" if lost_h is not None else ""
    return Finding(
        "lost_work", Severity.WARNING if (lost_h or 0) >= 1 else Severity.INFO,
        f"Work lost: {lost_it} iteration(s){hours} (last iteration {prog.step}, resume "
        f"point {point})", [f"{prog.source}: {prog.line}"] if prog.source else [])


def _checkpoint_interval(a: GpuCrashAnalysis) -> Finding | None:
    f, yd, spi, cur = a.facts, a.young_daly, a.seconds_per_iteration, a.checkpoints.interval
    if f["checkpoint_interval_recommended"] is None and math.isnan(yd["young_s"]):
        return None
    return Finding(
        "checkpoint_interval", Severity.INFO,
        f"Young/Daly: τ = sqrt(2·δ·M) = sqrt(2 × {a.save_s:g} s × {a.mtbf_hours:g} h) = "
        f"{yd['young_s']:.0f} s ({yd['young_s'] / 3600:.2f} h)"
        + (f" = {f['checkpoint_interval_recommended']} iterations at {spi:.3g} s each"
           if f["checkpoint_interval_recommended"] else "")
        + f"; Daly's refinement {yd['daly_s']:.0f} s. Save cost: {a.save_source}; M: "
        f"mtbf_hours={a.mtbf_hours:g}"
        + (f". Current interval: {cur} iterations, expected waste "
           f"{100 * expected_waste(cur * spi, a.save_s, a.mtbf_s):.1f}% vs "
           f"{100 * expected_waste(yd['young_s'], a.save_s, a.mtbf_s):.1f}% at the optimum"
           if cur and spi else ""), [])


def _input(a: GpuCrashAnalysis) -> list[Finding]:
    return input_findings(a.incident)


FINDINGS: tuple[Rule[Finding | Sequence[Finding]], ...] = (
    Rule("no_failure", _no_failure), Rule("first_failure", _first_failure),
    Rule("async_cuda_error", _async_cuda_error), Rule("hardware_suspect", _hardware_suspect),
    Rule("program_suspect", _program_suspect), Rule("oom_figures", _oom_figures),
    Rule("killed", _killed), Rule("silent_rank", _silent_rank), Rule("xids", _xids),
    Rule("cascade", _cascade), Rule("other_failures", _other_failures),
    Rule("exit_delay", _exit_delay), Rule("last_checkpoint", _last_checkpoint),
    Rule("incomplete_save", _incomplete_save), Rule("lost_work", _lost_work),
    Rule("checkpoint_interval", _checkpoint_interval), Rule("input", _input))


# -- verdicts ------------------------------------------------------------------------------------

def _stopped_verdict(a: GpuCrashAnalysis) -> tuple[str, Confidence] | None:
    """Only workers saying they were stopped from outside (``analysis.stop_signals``): said as
    a stop, not as a peer's failure. Low: who stopped them, and why, is not in the logs."""
    f = a.facts
    if a.crash.first is not None or f["error_kind"] != "signal":
        return None
    if f["failed_ranks"]:  # one rank of several (``analysis.stopped_alone``)
        return (f"{_who(f)} alone was stopped from outside ({f['error_message']}); no process "
                "failed on its own before it and no other process of the job says it was "
                "stopped. Who sent the signal is not in these logs — that machine's journal, "
                "the scheduler's record (sacct) and whoever could run kill there say.",
                Confidence.LOW)
    return (f"The processes in these logs were stopped from outside ({f['error_message']}) and "
            "none of them failed on its own before it; who stopped them, and why, is not here — "
            "the launcher's output, the rank it watched (rank 0's log) and the scheduler's "
            "record (sacct) say.", Confidence.LOW)


def _symptoms_verdict(a: GpuCrashAnalysis) -> tuple[str, Confidence] | None:
    if a.crash.first is not None or not len(a.crash.cascade):
        return None
    return ("Only symptoms of a peer's failure (NCCL/gloo errors, timeouts, kills) are in "
            "these logs; the rank that failed first left no line here — add every "
            "rank's log and the nodes' dmesg.", Confidence.LOW)


def _no_crash_verdict(a: GpuCrashAnalysis) -> tuple[str, Confidence]:
    read = reading_words(a.incident)
    verdict = "No GPU crash, fatal error or failed process was found in these logs."
    return (verdict.rstrip(".") + f" ({read})." if read else verdict), Confidence.LOW


def _lost_words(a: GpuCrashAnalysis) -> str:
    """'; N iteration(s) lost since …' or '; last iteration N, …' ('' when neither is known);
    none lost where the run had said it finished with success."""
    f = a.facts
    if a.finished:
        return ("; it came after the program had reported its run finished with success, so "
                "no training work was lost")
    if f["lost_iterations"] is not None:
        base = (f"the checkpoint at iteration {f['last_checkpoint_iteration']}"
                if f["last_checkpoint_iteration"] is not None else "the start of training")
        return (f"; {f['lost_iterations']} iteration(s) lost since {base}"
                + (f" ({f['lost_hours']:.2f} h)" if f["lost_hours"] is not None else ""))
    if f["last_iteration"] is not None:
        return f"; last iteration {f['last_iteration']}, no checkpoint line to measure the loss"
    return ""


def _first_confidence(crash: Crash) -> Confidence:
    """High when the first failure is certain (a timestamp, torchrun's record, one cause)."""
    if crash.by in ("silent", "lone"):
        return Confidence.MEDIUM
    if crash.by in ("time", "root_cause"):
        return Confidence.HIGH
    causes = crash.events[crash.events["role"] == "cause"]
    return (Confidence.HIGH if len(crash.independent) == 0 and causes["rank"].nunique() <= 1
            else Confidence.MEDIUM)


def _first_failure_verdict(a: GpuCrashAnalysis) -> tuple[str, Confidence] | None:
    crash, f = a.crash, a.facts
    if crash.first is None:
        return None
    when = _at_first(f)
    casc = ""
    if len(crash.cascade):
        n_r, on = _cascade_words(a)
        casc = (f"; {count(n_r, 'other rank')}{on} failed after it "
                "as a cascade" if n_r else "; its peers' failures followed as a cascade")
    what = (f"with {KIND_WORDS.get(f['error_kind'], f['error_kind'])}: {f['error_message']}"
            if f["error_kind"] else f"({f['error_message']})")
    return (f"{_who(f)} failed first{when} {what}{casc}{_lost_words(a)}.",
            _first_confidence(crash))


def _outside_stop_verdict(a: GpuCrashAnalysis) -> tuple[str, Confidence] | None:
    """The launcher itself told to stop (``events._outside_stop_roles``): a kill from outside."""
    if _code(a) != "launcher_received_signal":
        return None
    f = a.facts
    when = _at_first(f)
    return (f"The launcher was stopped from outside the job{when} ({f['error_message']}) and "
            "shut its workers down; no worker failed on its own before it — whatever sent the "
            "signal (a closed terminal, the scheduler, an orchestrator or a crashed companion "
            f"process) is not in these logs{_lost_words(a)}.", Confidence.MEDIUM)


def _time_limit_verdict(a: GpuCrashAnalysis) -> tuple[str, Confidence] | None:
    """The scheduler's time limit ended the job (``NOT_A_FAILURE_CODES``): said as such, not as
    a host that failed. High: the scheduler's own line says why."""
    if _code(a) not in NOT_A_FAILURE_CODES:
        return None
    f = a.facts
    when = _at_first(f)
    where = f" ({_who(f)})" if f["failed_hosts"] or f["failed_ranks"] else ""
    return (f"The scheduler ended the job at its time limit{when}{where}: {f['error_message']}; "
            f"no crash of the program's before it{_lost_words(a)}.", Confidence.HIGH)


def _interrupted_verdict(a: GpuCrashAnalysis) -> tuple[str, Confidence] | None:
    """A worker interrupted from outside (``events._interrupted_worker_roles``): said as an
    interrupt, not a crash. Medium: the log does not say who sent the SIGINT."""
    if a.crash.first is None or _code(a) not in USER_STOP_SIGNALS:
        return None
    f = a.facts
    when = _at_first(f)
    return (f"{_who(f)} was interrupted{when} ({f['error_message']}) and the launcher stopped "
            "the other workers after it; no error of the program's came before it. A SIGINT "
            "comes from outside the program (a Ctrl-C in its terminal, kill -INT, a tool that "
            f"stops jobs that way) and these logs do not say who sent it{_lost_words(a)}.",
            Confidence.MEDIUM)


def _cancelled_verdict(a: GpuCrashAnalysis) -> tuple[str, Confidence] | None:
    """The scheduler cancelled the job with no reason given and nothing failed before it
    (``events._scheduler_cancel_roles``): said as a cancel, not as a host that failed or a
    peer's symptoms."""
    if a.crash.first is None or _code(a) not in SCHEDULER_STOP_CODES:
        return None
    f = a.facts
    when = _at_first(f)
    where = f" ({_who(f)})" if f["failed_hosts"] or f["failed_ranks"] else ""
    return (f"The scheduler cancelled the job{when}{where} ({f['error_message']}) and no process "
            "failed on its own before it; the line gives no reason (not its time limit), so "
            "someone or some policy cancelled it (scancel by the user or an admin, a dependency, "
            f"a reservation's end) — sacct shows who{_lost_words(a)}.", Confidence.MEDIUM)


# The firing rule of highest priority gives the verdict: a launcher stopped from outside, else
# the first failure when there is one, else only a peer's symptoms, else nothing found.
VERDICTS: tuple[Rule[tuple[str, Confidence]], ...] = (
    Rule("outside_stop", _outside_stop_verdict, 30), Rule("time_limit", _time_limit_verdict, 25),
    Rule("cancelled", _cancelled_verdict, 24), Rule("interrupted", _interrupted_verdict, 23),
    Rule("first_failure", _first_failure_verdict, 20), Rule("stopped", _stopped_verdict, 15),
    Rule("symptoms", _symptoms_verdict, 10),
    Rule("no_crash", _no_crash_verdict, 0))


# -- actions -------------------------------------------------------------------------------------

def _path_words(path: Any) -> str:
    """A path from the logs as it may stand in an action: shell-quoted, or escaped when it
    cannot be quoted (a control character)."""
    return quote(path) or shown(path)


def _unknown_host(f: dict[str, Any], refused: list[str]) -> str:
    """Where the failed node is to be found when no usable host name is in the logs: said in
    words, never guessed from the rank (a rank // GPUs-per-node is a guess the layout, srun's
    distribution or a restart on other nodes makes wrong)."""
    ranks = [r for r in (rank_arg(x) for x in f["failed_ranks"]) if r is not None]
    who = f"rank {ranks[0]}" if ranks else "the failed process"
    bad = (f"the logs name {', '.join(shown(h) for h in refused)}, which is not a host name, "
           "so it is not put into a command; " if refused else "")
    return (f"{bad}the logs do not name the host of {who}: find it (sacct -j $SLURM_JOB_ID -o "
            "NodeList; the node whose kernel log has the Xid; the launcher's log with srun -l "
            "or torchrun's host field), then drain it by hand")


def _hw_xids(a: GpuCrashAnalysis) -> list[XidInfo]:
    """The hardware Xids of the failed hosts (not a cascade; node or GPU out of service)."""
    xinfo = [xid_info(c) for c in a.facts["xid_codes"]]
    return [x for x in xinfo if not x.cascade and x.scope in ("node", "gpu")]


def _first_xid(a: GpuCrashAnalysis) -> XidInfo | None:
    """The first failure's Xid, when it is one. An Xid the catalogue calls an application
    fault (13, 31, 43…) takes nothing out of service: the drain advice must agree with the Xid
    table the runbook shows."""
    code = _code(a)
    return xid_info(int(code)) if _kind(a) == "xid" and str(code).isdigit() else None


def _program(a: GpuCrashAnalysis) -> bool:
    """A CUDA error of the program's kind, with no hardware Xid."""
    return (_kind(a) == "cuda_error" and bool(PROGRAM_CUDA_RE.search(_msg(a)))
            and not _hw_xids(a))


def _hardware(a: GpuCrashAnalysis) -> bool:
    """Drain only on hardware evidence (issue 27): an Xid of the hardware kind, ECC or a row
    remap, a GPU fallen off the bus, NVLink errors, the scheduler's own node failure. An NCCL
    "Cuda failure 'invalid argument'", an OOM or a Python error drains nothing."""
    kind, first_xid = _kind(a), _first_xid(a)
    hardware = bool(_hw_xids(a)) or kind == "ecc" or (
        kind == "xid" and (first_xid is None or first_xid.scope in ("node", "gpu"))) or (
        kind in ("cuda_error", "nccl_error") and bool(DRAIN_EVIDENCE_RE.search(_msg(a)))) or (
        _code(a) == "slurm_node_failure")
    return a.crash.first is not None and hardware and not _program(a)


def _suspect(a: GpuCrashAnalysis) -> bool:
    """A CUDA error that often means a failing GPU but proves nothing (no drain)."""
    msg = _msg(a)
    return (a.crash.first is not None and not _hardware(a) and _kind(a) == "cuda_error"
            and bool(HARDWARE_CUDA_RE.search(msg)) and not PROGRAM_CUDA_RE.search(msg))


def _application_xid(a: GpuCrashAnalysis) -> bool:
    """An Xid of the application's kind failed first (nothing to drain)."""
    return not _hardware(a) and not _suspect(a) and _first_xid(a) is not None


def _software(a: GpuCrashAnalysis, kind: str) -> bool:
    """The first failure is the program's, of ``kind``: no drain, check or Xid advice first."""
    return (a.crash.first is not None and _kind(a) == kind and not _hardware(a)
            and not _suspect(a) and _first_xid(a) is None)


def _drain_node(a: GpuCrashAnalysis) -> Action | None:
    if not _hardware(a):
        return None
    f, hw_xids = a.facts, _hw_xids(a)
    hosts = f["failed_hosts"]
    reason = (f"Xid {', '.join(str(x.code) for x in hw_xids)}" if hw_xids
              else reason_text(_msg(a) or _kind(a) or "GPU failure", 40))
    node = hosts_arg(hosts)
    if node is not None:
        how = (f"scontrol update nodename={node} state=drain reason=\"{reason} (job "
               f"$SLURM_JOB_ID)\"; restart with: sbatch --exclude={node} {JOB_SCRIPT_VAR}"
               + script_note(None))
    else:
        how = (_unknown_host(f, [h for h in hosts if not is_host_name(h)])
               + f"; set NODE to that host, then: scontrol update nodename={NODE_VAR} state=drain "
               f"reason=\"{reason}\" && sbatch --exclude={NODE_VAR} {JOB_SCRIPT_VAR}"
               + script_note(None))
    return action(
        "drain_node",
        f"Drain {', '.join(hosts) if node is not None else 'the failed node'} and exclude "
        "it from the restart",
        f"The first failure is a GPU/driver fault ({reason}); restarting on the same node "
        "invites the same crash, and draining keeps other jobs off it until it is checked.",
        how)


def _diagnose_gpu(a: GpuCrashAnalysis) -> Action | None:
    if not _hardware(a):
        return None
    hw_xids, hosts = _hw_xids(a), a.facts["failed_hosts"]
    diag = "; ".join(dict.fromkeys(x.next_step for x in hw_xids)) if hw_xids else (
        "no Xid in these logs: read the node's kernel log (sudo dmesg -T | grep -E "
        "'NVRM|Xid'; add it to log_path and rerun this runbook), nvidia-smi -q -d "
        "ECC,ROW_REMAPPER, then dcgmi diag -r 2 (-r 3 before returning it to service)")
    return action(
        "diagnose_gpu", "Run the diagnostic that fits the fault before returning the node",
        "The Xid/ECC/CUDA error says which kind of check settles it: "
        + (", ".join(f"Xid {x.code}: {x.meaning}" for x in hw_xids) or _msg(a) or _kind(a)),
        diag + (f"  (on {', '.join(hosts)})" if hosts_arg(hosts) is not None else ""))


def _check_node(a: GpuCrashAnalysis) -> Action | None:
    if not _suspect(a):
        return None
    hosts, msg = a.facts["failed_hosts"], _msg(a)
    node = hosts_arg(hosts)
    return action(
        "check_node",
        f"Check {', '.join(hosts) if node is not None else 'the failed node'} for a GPU "
        "fault before restarting on it",
        f"'{msg}' is how a failing GPU often shows itself, but it is not proof: drain the node "
        "only if its kernel log or nvidia-smi shows a hardware fault (an Xid, ECC or row-remap "
        "errors, a GPU fallen off the bus, NVLink errors).",
        ("on " + (node if node is not None else "its node") + ": sudo dmesg -T | grep -E "
         "'NVRM|Xid'; nvidia-smi -q -d ECC,ROW_REMAPPER; add the kernel log to log_path and "
         "rerun this runbook: it names the drain command when the fault is there")
        + ("" if node is not None else
           "; " + _unknown_host(a.facts, [h for h in hosts if not is_host_name(h)])))


def _debug_application_xid(a: GpuCrashAnalysis) -> Action | None:
    first_xid = _first_xid(a)
    if first_xid is None or not _application_xid(a):
        return None
    return action(
        "application_xid", f"Debug the program: Xid {first_xid.code} is an application "
        "fault, not a broken GPU",
        f"Xid {first_xid.code} ({first_xid.meaning}): {first_xid.next_step}. Nothing to "
        "drain: the same code on healthy hardware fails the same way.",
        "rerun the failing step with CUDA_LAUNCH_BLOCKING=1, or under compute-sanitizer "
        "(compute-sanitizer --tool memcheck python …)")


def _reduce_host_memory(a: GpuCrashAnalysis) -> Action | None:
    if not _software(a, "oom") or _code(a) not in HOST_OOM_CODES:
        return None
    return action(
        "reduce_memory", "Reduce host (CPU) memory before restarting",
        f"{_who(a.facts)} was killed by the out-of-memory killer ({_msg(a)[:120]}): host RAM, "
        "not GPU memory, ran out; the same step will fail again.",
        "sacct -j $SLURM_JOB_ID -o JobID,MaxRSS,ReqMem,NodeList; fewer DataLoader workers or "
        "prefetch, no full dataset in RAM per rank, CPU-offload buffers sized to the node; "
        "or ask for more memory (#SBATCH --mem=…)")


def _oversized(a: GpuCrashAnalysis) -> dict[str, Any] | None:
    """The first failure's OOM figures where one request exceeds the GPU's whole capacity."""
    return next((f for f in a.oom_figures if f.get("tried") is not None
                 and f.get("total") and f["tried"] > f["total"]), None)


def _oversized_allocation(a: GpuCrashAnalysis) -> Action | None:
    if not _software(a, "oom") or (f := _oversized(a)) is None:
        return None
    return action(
        "oversized_allocation", "Find the tensor that asks for more than the whole GPU",
        f"{_who(a.facts)} asked for {f['tried']:g} GiB in one allocation on a GPU of "
        f"{f['total']:g} GiB: no allocator setting or activation checkpointing makes that fit; "
        "the tensor is far larger than intended, and the same step will fail again.",
        "read the OOM's traceback for the allocating line and print the shapes there: a "
        "sequence length, vocabulary or image size far larger than intended (a config or a "
        "corrupted sample), or a seq×seq / seq×vocab tensor (attention mask, logits) that was "
        "meant to be chunked")


def _reduce_gpu_memory(a: GpuCrashAnalysis) -> Action | None:
    if not _software(a, "oom") or _code(a) in HOST_OOM_CODES or _oversized(a) is not None:
        return None
    return action(
        "reduce_memory", "Reduce peak GPU memory before restarting",
        f"{_who(a.facts)} ran out of GPU memory ({_msg(a)[:120]}); the same step will fail "
        "again.",
        "lower the micro-batch size or sequence length, enable activation checkpointing; "
        "if much memory is 'reserved but unallocated', "
        "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")


def _debug_kernel(a: GpuCrashAnalysis) -> Action | None:
    if not _software(a, "cuda_error"):
        return None
    return action(
        "debug_kernel", "Find the faulting kernel",
        f"'{_msg(a)}' usually comes from the program (bad index, kernel bug), reported "
        "asynchronously where it was noticed.",
        "rerun the failing step with CUDA_LAUNCH_BLOCKING=1 (or under compute-sanitizer); "
        "TORCH_USE_CUDA_DSA builds give device-side asserts")


def _fix_exception(a: GpuCrashAnalysis) -> Action | None:
    if not _software(a, "python"):
        return None
    first = a.crash.first
    assert first is not None
    return action(
        "fix_exception", "Fix the Python exception",
        f"{_who(a.facts)} raised it first ({_msg(a)[:160]}); every other failure followed "
        "from it.",
        f"read the traceback ending at {_path_words(first['source'])}")


def _debug_native_crash(a: GpuCrashAnalysis) -> Action | None:
    if not _software(a, "signal") or _code(a) not in FAULT_SIGNALS:
        return None
    first = a.crash.first
    assert first is not None
    return action(
        "debug_native_crash", "Find the native code that crashed",
        f"{_who(a.facts)} died of {first['code']} ({_msg(a)[:120]}): a fault in native code "
        "(a library, a driver, a custom kernel), not a kill from outside.",
        f"read the Python stack dumped at {_path_words(first['source'])} (faulthandler) for the call "
        "that crashed; for the native frames: ulimit -c unlimited, rerun, then gdb -batch "
        "-ex bt $(which python) core; check that the GPU driver and runtime match the torch "
        "build (python -m torch.utils.collect_env)")


def _time_limit(a: GpuCrashAnalysis) -> Action | None:
    """The scheduler ended the job at its time limit (``NOT_A_FAILURE_CODES``): nothing to
    repair, no node to drain; the run needs more time, from where it saved."""
    if a.crash.first is None or _code(a) not in NOT_A_FAILURE_CODES:
        return None
    return action(
        "time_limit", "Resubmit with a longer time limit, resuming from the last checkpoint",
        f"The scheduler stopped the job at its time limit ({_msg(a)[:120]}): no crash of the "
        "program's and no sign against the node.",
        "resubmit with more time (SLURM: sbatch --time=…; PBS: -l walltime=…; LSF: -W …) or split "
        "the run into chained jobs that each save before their limit (sbatch --signal=USR1@300 "
        "to get a warning), and resume from the newest complete checkpoint")


def _why_killed(a: GpuCrashAnalysis) -> Action | None:
    if not ((_software(a, "signal") and _code(a) not in FAULT_SIGNALS) or _software(a, "exit")):
        return None
    if _code(a) in NOT_A_FAILURE_CODES:  # the scheduler's time limit: _time_limit
        return None
    return action(
        "why_killed", "Find out who killed the process",
        f"{_who(a.facts)} was ended from outside without an error of its own "
        f"({(_msg(a) or 'terminated')[:160]}).",
        "on its node: sudo dmesg -T | grep -i -E 'killed process|out of memory|NVRM'; "
        "sacct -j $SLURM_JOB_ID -o JobID,State,ExitCode,MaxRSS,NodeList; look for "
        "scancel/preemption in the scheduler log")


def _debug_cuda_in_nccl(a: GpuCrashAnalysis) -> Action | None:
    # (hardware words in the message drain instead: _drain_node)
    if not _software(a, "nccl_error") or _code(a) not in NCCL_CUDA_CODES:
        return None
    return action(
        "debug_cuda_in_nccl", "Find the CUDA error NCCL hit",
        f"{_who(a.facts)} reported {_msg(a)[:120]}: a CUDA call inside NCCL failed; without an "
        "Xid, ECC or bus error that is no proof of broken hardware (an invalid argument or out "
        "of memory is the program's).",
        "rerun with NCCL_DEBUG=INFO CUDA_LAUNCH_BLOCKING=1 to see the failing call; read the "
        "node's kernel log (sudo dmesg -T | grep -E 'NVRM|Xid') and add it to log_path: the "
        "runbook names a drain when the fault is the GPU's")


def _check_network(a: GpuCrashAnalysis) -> Action | None:
    if not _software(a, "nccl_error") or _code(a) in NCCL_CUDA_CODES:
        return None
    return action(
        "check_network", "Check the network path of the failed rank",
        f"{_who(a.facts)} reported {_msg(a)[:120]} with no local cause in these logs.",
        "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET; ibstat / ibv_devinfo on its node; run "
        "nccl-tests all_reduce_perf across the nodes involved")


def _check_mpi_transport(a: GpuCrashAnalysis) -> Action | None:
    if not _software(a, "mpi_error"):
        return None
    return action(
        "check_mpi_transport", "Find why the MPI call failed on the failed rank",
        f"{_who(a.facts)} reported {_msg(a)[:120]}: an MPI call (or the UCX/verbs transport "
        "under it) failed there, and MPI then ended every process of the job.",
        "rerun with UCX_LOG_LEVEL=info (Open MPI: --mca pml_ucx_verbose 10; MPICH/Intel MPI: "
        "I_MPI_DEBUG=5) to see the transport chosen; on its node: ucx_info -d, ibv_devinfo; a "
        "GPU buffer that cannot be registered (ibv_reg_mr … Bad address) needs a CUDA-aware "
        "MPI/UCX build (ompi_info --parsable --all | grep mpi_built_with_cuda_support)")


def _resume(a: GpuCrashAnalysis) -> Action | None:
    ck = a.checkpoints
    if a.crash.first is None or a.finished:  # a finished run has nothing to resume
        return None
    resume = ck.last_iteration
    return action(
        "resume",
        f"Resume from the last checkpoint (iteration {resume})" if resume is not None
        else "Resume from the last complete checkpoint",
        ("Work since then is lost either way; resuming from the newest complete checkpoint "
         "loses the least." + (f" The save of iteration {ck.incomplete} never finished: "
                               "skip it." if ck.incomplete is not None else "")),
        ("Megatron: --load <save dir> (reads latest_checkpointed_iteration.txt); DeepSpeed: "
         "the 'latest' file names global_stepN; HF: trainer.train(resume_from_checkpoint="
         "'<dir>/checkpoint-N')" + (f"; path seen: {_path_words(ck.last_path)}" if ck.last_path else "")
         + (f"; remove the partial iteration {ck.incomplete} directory first"
            if ck.incomplete is not None else "")))


def _close_to_optimum(a: GpuCrashAnalysis) -> bool:
    """The job already saves within a third of the Young/Daly interval."""
    n, cur = a.facts["checkpoint_interval_recommended"], a.checkpoints.interval
    return bool(cur) and 0.75 <= cur / n <= 1.33


def _assumed(a: GpuCrashAnalysis) -> list[str]:
    """The Young/Daly inputs assumed rather than given or measured, in words."""
    return ([f"a save takes {a.save_s:g} s"] if a.save_source.startswith("assumed") else []) + (
        ["a GPU fails once a week"] if a.mtbf_hours == DEFAULT_MTBF_HOURS else [])


def _interval_action(a: GpuCrashAnalysis) -> Action:
    """Save every Young/Daly interval (capped at half of a job shorter than it)."""
    n, interval = a.facts["checkpoint_interval_recommended"], a.checkpoints.interval
    save_s, yd, spi = a.save_s, a.young_daly, a.seconds_per_iteration
    total, assumed = a.progress.total, _assumed(a)
    cur = f" (now {interval})" if interval else ""
    title = (f"Keep saving about every {interval} iterations (optimum {n})"
             if _close_to_optimum(a) else f"Save a checkpoint every {n} iterations{cur}")
    why = (f"Young/Daly: τ = sqrt(2·δ·M) with δ = {save_s:g} s per save and M = "
           f"{yd['young_s'] ** 2 / (2 * save_s) / 3600:g} h between failures gives "
           f"{yd['young_s']:.0f} s ≈ {n} iterations at {spi:.3g} s/iteration; more often "
           "wastes time saving, less often loses more work per crash.")
    if assumed:
        title += f", if {' and '.join(assumed)}"
        why += (" Assumed (BLOOM-176B's figures), not measured here: "
                + "; ".join(assumed) + " — set checkpoint_save_s / mtbf_hours.")
    if total and n >= total:  # the whole job is shorter than the optimum: cap by its length
        n = max(1, total // 2)
        title = (f"This job ({total} iterations) is shorter than the optimal checkpoint "
                 f"interval: save once halfway (every {n} iterations)")
        why += (f" The job has {total} iterations in all, fewer than the optimum: one save "
                "halfway bounds the loss to half the run.")
    return action(
        "save_interval", title, why,
        f"Megatron: --save-interval {n}; HF Trainer: save_steps={n}; torchtitan: "
        f"checkpoint.interval={n}; DeepSpeed: engine.save_checkpoint(dir) every {n} steps")


def _save_interval(a: GpuCrashAnalysis) -> Action | None:
    if not a.facts["checkpoint_interval_recommended"] or _close_to_optimum(a) or a.finished:
        return None
    return _interval_action(a)


def _keep_interval(a: GpuCrashAnalysis) -> Action | None:
    if not a.facts["checkpoint_interval_recommended"] or not _close_to_optimum(a):
        return None
    return _interval_action(a)


# cascade codes of survivors that waited for the failed rank until a timeout ended them
WAITED_CODES = frozenset({"collective_timeout", "watchdog_stuck", "heartbeat_timeout"})


def _waited_out(a: GpuCrashAnalysis) -> bool:
    """Survivors timed out waiting after the first failure (a collective or watchdog timeout
    among the cascade)."""
    casc = a.crash.cascade
    return bool(len(casc)) and bool(casc["code"].isin(list(WAITED_CODES)).any())


def _hung(a: GpuCrashAnalysis) -> bool:
    """The survivors hung after the first failure: its last line came long after it, or they
    timed out waiting for the failed rank."""
    return (a.exit_delay_s is not None and a.exit_delay_s > HANG_WARN_S) or _waited_out(a)


def _ended_promptly(a: GpuCrashAnalysis) -> bool:
    """The logs show the job ending soon after the first failure (a later failure line, the
    launcher's or scheduler's, within ``HANG_WARN_S``) and no survivor waiting it out."""
    return a.exit_delay_s is not None and a.exit_delay_s <= HANG_WARN_S and not _waited_out(a)


def _exit_action(a: GpuCrashAnalysis, known: bool) -> Action:
    hang = a.exit_delay_s
    said = (f" Here the last failure line came {hang / 60:.0f} min after the first."
            if known and hang and hang > HANG_WARN_S else
            " Here the survivors timed out waiting for the failed rank." if known else
            " Whether this job's survivors exited or hung is unknown: these logs do not show "
            "how long the job lived after the first failure.")
    nccl = ("" if _kind(a) == "mpi_error" else
            "export TORCH_NCCL_ASYNC_ERROR_HANDLING=1  # torch<2.2: NCCL_ASYNC_ERROR_HANDLING=1; ")
    return action(
        "exit_on_failure", "Make a crashed job exit instead of hanging" + (
            "" if known else " (if it hung: unknown from these logs)"),
        ("When one rank dies the others block in their next collective; without async error "
         "handling they wait there (BLOOM-176B lost hours this way), and without "
         "--kill-on-bad-exit srun keeps the step alive, so nothing restarts it." + said),
        nccl + "srun --kill-on-bad-exit=1 --wait=60 …  # end the step 60 s after the first task "
        "dies; #SBATCH --requeue (or a job array with %1) so the restart is automatic")


def _stopped_by_scheduler(a: GpuCrashAnalysis) -> bool:
    """The job's end is the scheduler's (its time limit, a plain cancel): no crash whose
    survivors could hang."""
    return _code(a) in NOT_A_FAILURE_CODES or _code(a) in SCHEDULER_STOP_CODES


def _exit_on_failure_hung(a: GpuCrashAnalysis) -> Action | None:
    if a.crash.first is None or _stopped_by_scheduler(a):
        return None
    return _exit_action(a, True) if _hung(a) else None


def _exit_on_failure(a: GpuCrashAnalysis) -> Action | None:
    """Where the logs cannot tell whether the job hung after its failure (no time after it);
    none where they show it ended promptly, or where the scheduler ended it."""
    if a.crash.first is None or _hung(a) or _ended_promptly(a) or _stopped_by_scheduler(a):
        return None
    return _exit_action(a, False)


# What the first failure calls for first (drain, check, debug: one of them fires), then its
# diagnostic, the resume point, and how the next crash costs less. Ties keep this order.
ACTIONS: tuple[Rule[Action], ...] = (
    Rule("drain_node", _drain_node, 1), Rule("diagnose_gpu", _diagnose_gpu, 2),
    Rule("check_node", _check_node, 1), Rule("application_xid", _debug_application_xid, 1),
    Rule("reduce_host_memory", _reduce_host_memory, 1),
    Rule("reduce_gpu_memory", _reduce_gpu_memory, 1),
    Rule("oversized_allocation", _oversized_allocation, 1), Rule("debug_kernel", _debug_kernel, 1),
    Rule("fix_exception", _fix_exception, 1),
    Rule("debug_native_crash", _debug_native_crash, 1), Rule("time_limit", _time_limit, 1),
    Rule("why_killed", _why_killed, 1),
    Rule("debug_cuda_in_nccl", _debug_cuda_in_nccl, 1), Rule("check_network", _check_network, 1),
    Rule("check_mpi_transport", _check_mpi_transport, 1),
    Rule("resume", _resume, 3), Rule("save_interval", _save_interval, 4),
    Rule("keep_interval", _keep_interval, 6),
    Rule("exit_on_failure_hung", _exit_on_failure_hung, 2),
    Rule("exit_on_failure", _exit_on_failure, 5))
