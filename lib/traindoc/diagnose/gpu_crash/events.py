"""Failure events and the first-failure rules: which line is the cause, which the cascade.

Every failure line becomes an event (``failure_events``) with a role: ``cause`` (a local
failure), ``cascade`` (a symptom of someone else's failure) or ``context`` (an exit that only
repeats its rank's own error, an Xid that only follows another Xid). The first cause in time
(torchrun's root cause, then line order, when lines carry no time) is the primary failure; the
other causes on the same host or rank (an Xid and the CUDA error it caused) join it
(``first_failure``). ``cascade_table``, ``timeline_frame`` and ``xid_table`` are the tables the
runbook shows about them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ...incident import Incident
from ...parse.benchmarks import RUN_FINISHED_METRIC
from ...parse.errors import EXCEPTION_IGNORED_CODE, oom_figures
from ...parse.stacks import TRACEBACK_STATES
from ...schema import SYNTHETIC_HOST_PREFIX, with_source
from ...xid_catalog import xid_info
from ..common import (
    NodeLayout,
    as_int,
    as_str,
    global_rank,
    is_host,
    nccl_world_ranks,
    node_layout,
    pid_hosts,
    rank_hosts,
    setup_bars,
    spawned_ranks,
)
from ..deadlock.stacks import hang_stacks, interrupted_waiting
from ..types import Strength

SAME_FAILURE_WINDOW_S = 120.0  # causes this close to the first one, on its host, are one failure

EVENT_COLUMNS = ["file", "lineno", "time", "rank", "host", "pid", "kind", "code", "message",
                 "role", "strength", "root_cause", "table", "source", "line", "rank_note"]

# nccl_error codes that are a local failure (the rank's own GPU or program), not a peer's.
LOCAL_NCCL_CODES = {"nccl_unhandled_cuda", "nccl_warn_cuda", "nccl_invalid_usage", "gloo_mismatch",
                    "nccl_last_error", "nccl_warn_system"}
# signal codes that are the launcher or scheduler tearing survivors down.
TEARDOWN_SIGNAL_CODES = {"launcher_sigterm", "launcher_received_signal", "launcher_kill", "parent_exit",
                         "launcher_sigkill", "slurm_cancelled", "ray_actor_died"}
# The launcher's own words (torchrun's agent, DeepSpeed's launch.py): never a worker's, so a
# rank the line's prefix gave them is another line's, fused with it ("[default0]:Train: 50%|…
# W1121 … Received 15 death signal, shutting down workers")
LAUNCHER_LINE_CODES = {"launcher_received_signal", "launcher_sigterm", "launcher_kill",
                       "launcher_sigkill"}
STRONG_SIGNAL_CODES = {"slurm_node_failure": Strength.HARDWARE, "slurm_preemption": Strength.WEAK,
                       "lsf_preempt": Strength.WEAK,
                       "terminate": Strength.WEAK, "ray_worker_died": Strength.WEAK}
# mpi_error codes of a program that asked MPI to end the job (MPI_Abort): its reason, when
# printed, is another line
MPI_ABORT_CODES = {"mpi_abort"}
# mpi_error rows that only say who reported the error (Open MPI's "reported by process [j,r]")
MPI_CONTEXT_CODES = {"mpi_reported_by"}
# nccl_error rows that explain another NCCL error (the text under torch's "Last error:"):
# added to that error's message (``_with_last_error``), never a failure of their own
NCCL_CONTEXT_CODES = {"nccl_last_error_text"}
# A job the scheduler ended at its time limit (SLURM's "*** JOB 3658512 ON bessemer-node030
# CANCELLED AT 2024-10-21T17:00:20 DUE TO TIME LIMIT ***", PBS's "=>> PBS: job killed: walltime
# 604842 exceeded limit 604800"): no crash of the program's; the SIGTERM/SIGKILL flood that
# follows is its teardown.
NOT_A_FAILURE_CODES = {"slurm_time_limit", "pbs_walltime", "moab_wallclock", "lsf_runlimit",
                       "k8s_deadline_exceeded"}
# Of those, the ones that are what stopped the run, so its failure (weak: a signal from the
# scheduler, on the host it names; the report's action is a resubmission with more time): SLURM's
# (the corpus' label since batch y). The others stay context until their cases are relabelled
# (corpus loss_spike-monarch-readme-mlp, a PBS walltime, is labelled no failure).
TIME_LIMIT_CAUSE_CODES = {"slurm_time_limit"}
# torchrun (elastic's ``_close``: SIGTERM, then SIGKILL after 30 s) and SLURM (KillWait, 30 s by
# default) escalate to SIGKILL about this long after the teardown began.
KILL_ESCALATION_S = (25.0, 45.0)
# Signals a launcher or scheduler sends to every rank (the survivors) when it ends the job.
TEARDOWN_SIGNALS = frozenset({"SIGTERM", "SIGINT", "SIGHUP"})
# A Python exception that reports a peer or the network rather than a local fault (a wait that
# timed out: "RuntimeError: Time out when prefetcher wait for the sampled batch at 600 seconds.",
# MLPerf's R-GAT loader, training_results_v5.1 Dell result_7.txt).
CASCADE_TEXT_RE = re.compile(
    r"Dist(?:Backend|Network|Store)Error|Connection (?:reset|closed|refused)|Broken pipe|"
    r"[Tt]imed out|Timeout|\bTime out\b|NCCL|[Gg]loo|recvValue|Socket|socket|peer|ProcessGroup|"
    r"TCPStore|rendezvous|ChildFailedError", )
# Exceptions that are the program's or its environment's own fault, never a peer's or the
# network's, whatever names their message quotes: Paddle's Windows build lacking NCCL,
# "AttributeError: module 'paddle.fluid.core_avx' has no attribute 'NCCLParallelContext'"
# (corpus gpu_crash-robustscanner-paddle-windows-2-workers-1-gpu and -uie-fundmanager-…), an
# "ImportError: … libnccl.so.2: cannot open shared object file", a "TypeError: barrier() got an
# unexpected keyword argument 'device_ids'" from an older torch.
PROGRAM_ERROR_CLASSES = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError",
                                   "NameError", "SyntaxError", "IndentationError", "TypeError"})
# A port this host could not bind because something on it already holds the port (a second job,
# a leftover worker) is a local setup fault, though its words name a socket or the TCPStore: it
# stays out of the causes (a launcher's own bind failure in a log whose workers then time out
# says nothing of the timeout: corpus timeout-cirkd-kd-cityscapes-2gpu), but is what a worker's
# 'exitcode: 1' record means when its traceback printed nothing else. torch >= 2.3 "The server
# socket has failed to listen on any local network address. useIpv6: 0, code: -98, name:
# EADDRINUSE, message: address already in use" (JVrabel/LLM_KD logs/training.log;
# vllm-project/vllm#39015 as DistNetworkError); torch 1.11-2.2 "... failed to
# bind to [::]:29500 (errno: 98 - Address already in use)" (meta-pytorch/torchtune#392); older
# torch "RuntimeError: Address already in use" (pytorch/pytorch#72816); Python's own socket
# "OSError: [Errno 98] Address already in use".
LOCAL_BIND_TEXT_RE = re.compile(r"EADDRINUSE|[Aa]ddress already in use|\b[Ee]rrno:? 98\b")
SOURCE_RE = re.compile(r"^(?P<file>.*?):(?P<line>\d+)(?:#.*)?$")


# --- events ------------------------------------------------------------------------------------

def _split_source(src: str | None, files: dict[str, int]) -> tuple[int, int]:
    if not src:
        return (10**6, 0)
    m = SOURCE_RE.match(str(src))
    if not m:
        return (files.get(str(src), 10**6), 0)
    f = m["file"].split("#entry", 1)[0]
    return (files.setdefault(f, len(files)), int(m["line"]))


def _places(sources: Any, files: dict[str, int]) -> list[tuple[int, int]]:
    """(file id, line) of each ``file:line`` source, as the events number them (a file no
    event comes from gets an id of its own, numbered on a copy: ``files`` stays as it is)."""
    known = dict(files)
    return [_split_source(src, known) for src in sources]


# The job script's environment set-up failing before the program (conda's CLI: "CommandNotFoundError:
# Your shell has not been properly configured to use 'conda activate'." in a batch job's .err,
# corpus gpu_crash-smilesvae-midway3-conda-error-time-limit, whose job then ran to its time
# limit): the shell's complaint, no failure of the run, which reports its own if it fails
SHELL_SETUP_RE = re.compile(r"CommandNotFoundError: Your shell has not been properly configured")


def _error_role(kind: str, code: str, message: str) -> tuple[str, Strength]:
    """(role, strength) of one ``errors`` row."""
    if kind == "python" and (code in ("ray_task_error", EXCEPTION_IGNORED_CODE)
                             or SHELL_SETUP_RE.search(message)):
        return "context", Strength.NONE
    if kind == "xid":
        info = xid_info(as_int(code) if code and code.isdigit() else None)
        return ("context", Strength.NONE) if info.cascade else ("cause", Strength.HARDWARE)
    if kind == "ecc":
        return "cause", Strength.HARDWARE
    if kind in ("cuda_error", "oom"):
        return "cause", Strength.LOCAL
    if kind == "nccl_error":
        if code in NCCL_CONTEXT_CODES:
            return "context", Strength.NONE
        return (("cause", Strength.LOCAL) if code in LOCAL_NCCL_CODES
                else ("cascade", Strength.NONE))
    if kind == "mpi_error":  # the process that prints it had an MPI call fail; an abort it
        # asked for says that it ended, not why
        if code in MPI_CONTEXT_CODES:
            return "context", Strength.NONE
        return "cause", (Strength.WEAK if code in MPI_ABORT_CODES else Strength.LOCAL)
    if kind == "signal":
        if code in TIME_LIMIT_CAUSE_CODES:
            return "cause", Strength.WEAK
        if code in NOT_A_FAILURE_CODES:
            return "context", Strength.NONE
        # a process reporting the SIGTERM/SIGINT/SIGHUP it got (Paddle's "FatalError:
        # `Termination signal` is detected by the operating system."): stopped from outside
        if code in TEARDOWN_SIGNAL_CODES or code in TEARDOWN_SIGNALS:
            return "cascade", Strength.NONE
        return "cause", STRONG_SIGNAL_CODES.get(code, Strength.LOCAL)
    if kind == "python":
        if code.rpartition(".")[2] in PROGRAM_ERROR_CLASSES:
            return "cause", Strength.LOCAL  # whatever words it quotes
        return (("cascade", Strength.NONE) if CASCADE_TEXT_RE.search(f"{code} {message}")
                else ("cause", Strength.LOCAL))
    return "cause", Strength.WEAK


# How launchers word an exit, to quote it as printed (people search for these words).
EXIT_WORDS_RE = re.compile(
    r"failed \(exitcode: -?\d+\)|exits with return code = -?\d+|Exited with exit code \d+|"
    # Paddle's old launcher, no exit code ("ABORT!!! Out of all 4 trainers, the trainer process
    # with rank=[1, 2, 3] was aborted. Please check its log.", PaddlePaddle/PaddleClas#727)
    r"ABORT!!! Out of all \d+ trainers, the trainer process with rank=?\[[\d,\s]*\] was aborted|"
    r"exited on signal \d+ \([^)]*\)|died with <Signals\.\w+: \d+>|task \d+: [A-Z][\w ]+|"
    # torchrun's Root Cause record: "traceback : Signal 9 (SIGKILL) received by PID 3908423"
    r"[Ss]ignal \d+ \(SIG\w+\) received by PID \d+|"
    r"(?<![A-Za-z])(?:[Ee]xit(?:ed)?(?: with)?(?: error| status)? [Cc]ode|exit status|[Ee]xit_code)"
    r"[:=]?\s*\d+|"
    # the shell's "Killed" alone on its line, or glued to a bar left without its newline
    r"^\s*Killed(?=\s*$)|(?<=\])Killed(?=\s*$)|"
    # a shell's status of its job after the job's pid ("bash: line 1: 80675 Segmentation fault
    # ( local/chain/tuning/model/1d.py … )", Kaldi's run.pl under pkwrap: idiap/pkwrap#4;
    # "slurm_script: line 12: 4567 Aborted (core dumped) python train.py"); a "Killed" there
    # is left to a runtime's exit status printed with it ("Exit code: 137", _with_exit_status)
    r"(?<=\d )(?:Segmentation fault|Bus error|Aborted|Illegal instruction|Floating point "
    r"exception)(?: \(core dumped\))?(?=\s)")


def _exit_message(exitcode: int | None, signal: str | None, line: str | None = None) -> str:
    """The launcher's own words for the exit (``failed (exitcode: -9)``, ``exits with return
    code = -11``), else torchrun's ``exitcode: N``; then the signal it means."""
    m = EXIT_WORDS_RE.search(line or "")
    said = m.group(0) if m else (f"exitcode: {exitcode}" if exitcode is not None else "exited")
    return f"{said} ({signal})" if signal and signal not in said else said


def failure_events(incident: Incident, host_of: dict[int, str] | None = None) -> pd.DataFrame:
    """Every failure line (errors, exits, collective timeouts) as one table, with its role
    (cause | cascade | context) and strength, ranks filled in from pids and hosts where a line
    names none. Sorted by time, then by position in its file. ``host_of``: each rank's host,
    when not ``rank_hosts``'s. Computed once an incident (``Incident.once``: the gpu_crash
    analysis and the timeout analysis's ``earlier_failure`` both read it); each caller gets
    its own copy."""
    if host_of is None:
        return incident.once("failure_events", _failure_events).copy()
    return _failure_events(incident, host_of)


def _failure_events(incident: Incident, host_of: dict[int, str] | None = None) -> pd.DataFrame:
    files = {f: i for i, f in enumerate(incident.account.file_list)}
    rows: list[dict[str, Any]] = []
    # a line inside a spawned process's re-raised traceback is that process's
    err_ranks = spawned_ranks(incident.errors, incident)
    for r, spawned in zip(incident.errors.itertuples(index=False), err_ranks, strict=True):
        f, ln = _split_source(r.source, files)
        role, strength = _error_role(str(r.kind), as_str(r.code) or "", as_str(r.message) or "")
        rank = None if as_str(r.code) in LAUNCHER_LINE_CODES else as_int(spawned)
        rows.append(dict(file=f, lineno=ln, time=r.time, rank=rank, host=as_str(r.host),
                         pid=as_int(r.pid), kind=str(r.kind), code=as_str(r.code),
                         message=as_str(r.message), role=role, strength=strength,
                         root_cause=False, table="errors", source=r.source, line=r.line,
                         local_rank=as_int(getattr(r, "local_rank", None)),
                         task=as_int(getattr(r, "task", None))))
    c = incident.collectives
    timed = c[c["state"] == "timed_out"]
    for r, spawned in zip(timed.itertuples(index=False), spawned_ranks(timed, incident),
                          strict=True):
        f, ln = _split_source(r.source, files)
        op = as_str(r.op_type) or "a collective"
        rows.append(dict(file=f, lineno=ln, time=r.time, rank=as_int(spawned), host=as_str(r.host),
                         pid=None, kind="nccl_error", code="collective_timeout",
                         message=f"timed out in {op}", role="cascade", strength=Strength.NONE,
                         root_cause=False, table="collectives", source=r.source, line=r.line))
    ex = incident.exits
    for r in ex.itertuples(index=False):
        f, ln = _split_source(r.source, files)
        code, sig = as_int(r.exitcode), as_str(r.signal)
        if code == 0 and not sig:
            continue
        rows.append(dict(file=f, lineno=ln, time=r.time, rank=as_int(r.rank), host=as_str(r.host),
                         pid=as_int(r.pid), kind="signal" if sig else ("python" if code == 1
                                                                     else "exit"),
                         code=sig or f"exit_{code}", message=_exit_message(code, sig, as_str(r.line)),
                         role="exit", strength=Strength.WEAK,
                         root_cause=False if pd.isna(r.root_cause) else bool(r.root_cause),
                         table="exits", source=r.source, line=r.line,
                         local_rank=as_int(r.local_rank),
                         traceback_end=as_int(getattr(r, "traceback_end", None))))
    rows += _cut_tracebacks(incident, files, rows)
    ev = pd.DataFrame(rows, columns=[*EVENT_COLUMNS, "local_rank", "traceback_end", "task"])
    if not len(ev):
        return ev[EVENT_COLUMNS]
    _record_error_ranks(ev)
    _ray_task_places(ev)
    ev = _kernel_assert_runs(ev, incident, files)
    _fill_ranks(ev, incident, host_of)
    _restated_ranks(ev)
    _wrapper_roles(ev)
    _reader_killed_roles(ev)
    _init_failure_roles(ev, incident)
    _cascade_xid_roles(ev)
    _kernel_assert_roles(ev)
    _recovered_roles(ev, incident, files)
    _continued_roles(ev, incident, files)
    _ucx_detail_roles(ev)
    _peer_closed_roles(ev)
    _after_success_roles(ev, incident, files)
    _before_success_roles(ev, incident, files)
    _after_timeout_roles(ev)
    _c10d_abort_roles(ev)
    _signal_handler_roles(ev, incident, files)
    _thread_exception_roles(ev, incident, files)
    _ignored_exception_roles(ev)
    _exit_roles(ev)
    _dead_actor_roles(ev)
    _mpi_abort_roles(ev)
    ev["time"] = pd.to_datetime(ev["time"], errors="coerce")
    _escalation_roles(ev)
    _hydra_report_roles(ev)
    _bind_failure_roles(ev)
    _scheduler_cancel_roles(ev, incident)
    _outside_stop_roles(ev, incident, files)
    ev = ev.sort_values(["time", "file", "lineno"], na_position="last", kind="stable")
    return ev[EVENT_COLUMNS].reset_index(drop=True)


# The agent's "Received 15 death signal" / "Received Signals.SIGHUP death signal": the signal
# it got, as a number or a name. SIGINT (2) is someone's Ctrl-C, often on a hung job
# (MCG-NJU/RTD-Action#31): a choice, not a failure.
# DeepSpeed's launcher says it the other way round: "Main process received SIGTERM, exiting"
# (launch.py's sigkill_handler; "received SIGINT" after a Ctrl-C).
AGENT_RECEIVED_RE = re.compile(r"Received (?:(?P<num>\d+)|Signals\.(?P<name>SIG[A-Z]+)) death signal|"
                               r"Main process received (?P<ds>SIG[A-Z]+), exiting")
USER_STOP_SIGNALS = {"2", "SIGINT"}
# A scheduler that ended the job on request (SLURM's "*** JOB 1809579 ON r8i3n1 CANCELLED AT …
# ***" with no reason: scancel) sent the SIGTERM the launcher reports: a choice, not a failure
# (bigscience-workshop/bigscience's meg_gpt2_base_n4 benchmark logs).
SCHEDULER_STOP_CODES = {"slurm_cancelled"}
# Ctrl-C in the terminal reaches every worker (one process group) and each prints its
# KeyboardInterrupt traceback just before the launcher's teardown (Megatron-DeepSpeed's
# random-ltd example logs: interleaved tracebacks, then "Killing subprocess …" and "Main process
# received SIGTERM, exiting" from the runner's relay); a SIGTERM from outside makes no traceback.
INTERRUPT_TRACEBACK_LINES = 300  # tracebacks this close above the stop line are the interrupt's
# a worker that itself exited on one of these with nothing failing before it was stopped from
# outside the job (DeepSpeed: "[… '--local_rank=6' …] exits with return code = -15")
OUTSIDE_STOP_EXIT_SIGNALS = {"SIGTERM", "SIGHUP"}


# Hydra's "Error executing job with overrides: […]": the task raised; its exception, printed
# after it, is the failure when the log shows one
HYDRA_REPORT_CODES = {"hydra_job_error"}


CUT_TRACEBACK_WORDS = "a traceback cut before its exception's line"


def _cut_tracebacks(incident: Incident, files: dict[str, int],
                    rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Python traceback the log ends in before its exception's line (``cut``: the header and
    the frames, then nothing of its file but blank lines; a paste cut at the end of a post,
    Stable-Pix2Seq#14's "losses.backward()"): the process raised there, what is not known. One
    event, a weak cause, only where it is the logs' one sign of a failure (no error, exit or
    timeout anywhere: a launcher's own traceback after its SIGHUP is not), the run had logged
    steps before it in its file and nothing of its file after it. A hang's stack pasted
    without its KeyboardInterrupt line looks the same: at start-up (a JIT compile waiting on
    its lock, DeepSpeedExamples#302) or in a wait it stays the hang's."""
    st = incident.stacks
    if rows or not len(st) or "state" not in st:
        return []
    cut = st[st["state"] == "cut"]
    if not len(cut):
        return []
    steps: dict[int, list[int]] = {}
    for t in (with_source(incident.iterations), incident.progress):
        for f, ln in _places(t["source"], files):
            steps.setdefault(f, []).append(ln)
    r = cut.iloc[-1]
    f, ln = _split_source(r["source"], files)
    mine = steps.get(f, [])
    # (a bar on the traceback's own physical line came before it: "…2.14it/s][rank1]: Traceback")
    if not any(at <= ln for at in mine) or any(at > ln for at in mine):
        return []
    frames = r["frames"] if isinstance(r["frames"], list) else []
    if interrupted_waiting(frames):  # stopped in a wait: a Ctrl-C's, its last line not pasted
        return []
    leaf = f" (innermost frame: {frames[0]})" if frames else ""
    return [dict(file=f, lineno=ln, time=r.get("time"), rank=as_int(r["rank"]),
                 host=as_str(r["host"]), pid=as_int(r["pid"]), kind="python",
                 code="cut_traceback", message=f"{CUT_TRACEBACK_WORDS}{leaf}", role="cause",
                 strength=Strength.WEAK, root_cause=False, table="stacks", source=r["source"],
                 line=r["line"])]


def _hydra_report_roles(ev: pd.DataFrame) -> None:
    """Hydra's report that the job raised is the failure only when no other cause shows: with
    the exception it reports in the log, it is context."""
    hydra = ev["code"].isin(list(HYDRA_REPORT_CODES))
    if hydra.any() and ((ev["role"] == "cause") & ~hydra).any():
        ev.loc[hydra, ["role", "strength"]] = ["context", Strength.NONE]


def _bind_failure_roles(ev: pd.DataFrame) -> None:
    """A port the job could not bind (``LOCAL_BIND_TEXT_RE``) when nothing else failed — no
    cause, no collective timed out: the job never started (torch.distributed.launch's TCPStore
    on port 29500 already taken, before any worker was spawned: s2s-train's train_SI_2.out).
    The first such Python exception becomes the cause; it names no rank, the launcher's own."""
    if (ev["role"] == "cause").any() or (ev["code"] == "collective_timeout").any():
        return
    bind = ev.index[(ev["kind"] == "python") & (ev["table"] == "errors")
                    & ev["message"].astype(str).str.contains(LOCAL_BIND_TEXT_RE)]
    if len(bind):
        ev.loc[bind[0], ["role", "strength"]] = ["cause", Strength.LOCAL]


def _scheduler_cancel_roles(ev: pd.DataFrame, incident: Incident) -> None:
    """A scheduler's cancel with no reason (SLURM's "slurmstepd: error: *** JOB 25883692 ON
    gr015 CANCELLED AT 2022-10-13T04:10:12 ***": scancel by the user, an admin or a policy, a
    SIGTERM to every task) when nothing else failed — no cause, no collective timed out, no time
    limit, no stack dump of a hung process (a hang someone cancelled is the hang) — is how the
    job ended: its first such line becomes the cause (weak, on the host it names, no rank: no
    worker failed on its own)."""
    if (ev["role"] == "cause").any() or ev["code"].isin(
            ["collective_timeout", *NOT_A_FAILURE_CODES]).any():
        return
    cancels = ev.index[ev["code"].isin(list(SCHEDULER_STOP_CODES))]
    if not len(cancels) or len(hang_stacks(incident.stacks, alone=False, errors=incident.errors)):
        return
    ev.loc[cancels[0], ["role", "strength"]] = ["cause", Strength.WEAK]
    ev.at[cancels[0], "rank"] = None


def _outside_stop_roles(ev: pd.DataFrame, incident: Incident, files: dict[str, int]) -> None:
    """A launcher told to stop from outside the job (torchrun's agent: "Received 15 death
    signal, shutting down workers", then SIGTERM/SIGHUP to its workers; DeepSpeed's "Main
    process received SIGTERM, exiting"), or a worker that exited on SIGTERM/SIGHUP, when nothing
    else failed — no cause, no collective timed out, no scheduler's time limit or cancellation,
    no Ctrl-C, no stack dump of a hung process (a hang someone killed is the hang) — is how the
    job ended: its first such line becomes the cause (weak, no rank: no worker failed on its
    own). The killer (an orchestrator, a closed terminal, the scheduler) is outside these
    logs."""
    if (ev["role"] == "cause").any() or ev["code"].isin(
            ["collective_timeout", *NOT_A_FAILURE_CODES, *SCHEDULER_STOP_CODES]).any():
        return
    if len(hang_stacks(incident.stacks, alone=False, errors=incident.errors)):
        return
    # (a launcher's record of the exit, not the shell's bare "Terminated": that may be anyone's
    # stop of a run whose own words are elsewhere)
    stops = ev.index[(ev["code"] == "launcher_received_signal")
                     | ((ev["table"] == "exits") & ev["code"].isin(OUTSIDE_STOP_EXIT_SIGNALS)
                        & ~ev["message"].astype(str).str.startswith("exited"))]
    said = [m for i in stops if (m := AGENT_RECEIVED_RE.search(str(ev.at[i, "message"] or "")))]
    if any((m["num"] or m["name"] or m["ds"]) in USER_STOP_SIGNALS for m in said) \
            or _interrupted(ev.loc[stops], incident, files):
        return  # someone's Ctrl-C: the workers' SIGTERM is the launcher passing it on
    if not len(stops):
        _interrupted_worker_roles(ev)
        return
    for i in stops:
        ev.loc[i, ["role", "strength"]] = ["cause", Strength.WEAK]
        if ev.at[i, "table"] == "exits":  # DeepSpeed names the last-spawned worker's command
            # whichever worker it was, torchrun the worker: the signal came from outside
            ev.at[i, "rank"] = None
        return


def _interrupted_worker_roles(ev: pd.DataFrame) -> None:
    """A worker the launcher records ending by SIGINT (torchrun's "failed (exitcode: -2)
    local_rank: 0", its root cause "Signal 2 (SIGINT) received by PID …"), the launcher's
    closing SIGTERM going to the others: that worker was interrupted from outside (a Ctrl-C,
    a ``kill -INT``) and the job ended there; its exits become the (weak) cause, with their
    rank and host. Several ranks interrupted at once are the terminal's Ctrl-C to them all."""
    sigint = ev.index[(ev["table"] == "exits") & ev["code"].isin(list(USER_STOP_SIGNALS))
                      & ev["rank"].notna()]
    if not len(sigint) or not (ev["code"] == "launcher_sigterm").any():
        return
    ranks = set(ev.loc[sigint, "rank"].astype(int))
    same = ev.index[ev["code"].isin(list(USER_STOP_SIGNALS)) & ev["rank"].isin(list(ranks))]
    ev.loc[same, ["role", "strength"]] = ["cause", Strength.WEAK]


def _interrupted(stops: pd.DataFrame, incident: Incident, files: dict[str, int]) -> bool:
    """Whether the workers were interrupted (Ctrl-C): a KeyboardInterrupt traceback anywhere,
    or Python tracebacks just above a stop line in its file."""
    st = incident.stacks
    if not len(stops) or not len(st):
        return False
    if (st["state"] == "interrupted").any():
        return True
    tb = _places(st.loc[st["state"].isin(TRACEBACK_STATES), "source"], files)
    return any(sf == f and 0 <= ln - sl <= INTERRUPT_TRACEBACK_LINES
               for f, ln in zip(stops["file"], stops["lineno"], strict=True) for sf, sl in tb)


# torch's ExceptionWrapper re-raising what a DataParallel replica or a DataLoader worker raised
# ("torch.OutOfMemoryError: Caught OutOfMemoryError in replica 0 on device 0.", "RuntimeError:
# Caught RuntimeError in DataLoader worker process 0."): the original error and its traceback
# follow ("Original Traceback (most recent call last): …"); Paddle's operator wrapper, its content
# after "The exception content is" ("SystemError: (Fatal) Operator batch_norm raises an
# paddle::memory::allocation::BadAlloc exception." then "Out of memory error on GPU 0. Cannot
# allocate 24.500244MB …", hutuxian/RSPNet's workerlog.0; "SystemError: (Fatal) Operator
# uniform_random raises an thrust::system::system_error exception." then its content, a Paddle
# issue's report of a GPU its build has no kernel for)
# Ray's error of a remote task or actor call, the remote traceback and its own last line after it
# ("ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=399789, ip=10.128.0.9)"
# then "torch.OutOfMemoryError: CUDA out of memory …", a verl user's log; vLLM's "Exception: Call
# to collective_rpc method failed: ray::RayWorkerWrapper.execute_method() (pid=1117,
# ip=10.0.29.169, …)" then "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_REMOTE_ERROR: …",
# NVIDIA/JAX-Toolbox's jax-vllm offloading logs). Paddle's static graph names the user code
# its error came from, then the error indented under the frames ("RuntimeError: In user code:",
# then "    PreconditionNotMetError: Tensor not initialized yet when Tensor::place() is called.",
# Yanxing-Shi/PaddleNLP's CUDA-graph run; dy2static's "… In transformed code:").
EXCEPTION_WRAPPER_RE = re.compile(
    r"Caught \w+ in (?:replica \d+ on device \d+|DataLoader worker process \d+|pin memory thread)"
    r"|Operator \w+ raises an? [\w:]+ exception|\bray::\S+\(\) \(pid=\d+, ip="
    r"|: In (?:user|transformed) code:\s*$")
WRAPPED_ERROR_LINES = 400  # the original traceback ends this close below the wrapper's line


RESTATED_LINES = 40  # an error's own process restates it this close below, with its rank


def _restated_ranks(ev: pd.DataFrame) -> None:
    """An error no line prefix gives a rank, restated below it in the same file, within
    ``RESTATED_LINES``, by one rank only: that rank's. C++'s "terminate called after throwing
    an instance of 'c10::Error'" / "what():  CUDA error: an illegal memory access was
    encountered" has no prefix; the same process's watchdog then prints "[rank1]:[E409 …] …
    Process group watchdog thread terminated with exception: CUDA error: an illegal memory
    access was encountered" (ljm565/universal-llm-trainer's docs/bugs.md). Two ranks restating it
    name neither."""
    bare = ev.index[ev["rank"].isna() & (ev["role"] == "cause") & ev["message"].notna()]
    if not len(bare):
        return
    ranked = ev[ev["rank"].notna() & ev["message"].notna()]
    if not len(ranked):
        return
    for i in bare:
        f, ln, msg = ev.at[i, "file"], ev.at[i, "lineno"], ev.at[i, "message"]
        near = ranked[(ranked["file"] == f) & (ranked["lineno"] > ln)
                      & (ranked["lineno"] - ln <= RESTATED_LINES) & (ranked["message"] == msg)]
        ranks = {int(r) for r in near["rank"]}
        if len(ranks) == 1:
            ev.at[i, "rank"] = ranks.pop()


def _wrapper_roles(ev: pd.DataFrame) -> None:
    """The wrapper's line only says where the error was caught: when the original error follows
    it in the same file, that error is the failure and the wrapper is context."""
    py = ev.index[(ev["kind"] == "python") & (ev["role"] == "cause") & (ev["table"] == "errors")]
    for i in py:
        if not EXCEPTION_WRAPPER_RE.search(str(ev.at[i, "message"] or "")):
            continue
        f, ln = ev.at[i, "file"], ev.at[i, "lineno"]
        # (the wrapped error may be NCCL's report of a peer: a cascade, still the error itself)
        after = ev[(ev["table"] == "errors") & (ev["file"] == f) & (ev["lineno"] > ln)
                   & (ev["lineno"] <= ln + WRAPPED_ERROR_LINES)
                   & ((ev["role"] == "cause")
                      | ((ev["role"] == "cascade") & (ev["kind"] == "nccl_error")))]
        if len(after):
            ev.loc[i, ["role", "strength"]] = ["context", Strength.NONE]


# Paddle's DataLoader main loop once its reader thread died ("SystemError: (Fatal) Blocking queue
# is killed because the data reader raises an exception.", linhandev/iann log/workerlog.0;
# older: "paddle.fluid.core_avx.EnforceNotMet: Blocking queue is killed because the data reader
# raises an exception"): the reader's own traceback is printed above it
READER_KILLED_RE = re.compile(r"Blocking queue is killed because the data reader raises")
READER_ERROR_LINES = 100  # the reader thread's traceback ends this close above the main loop's


def _reader_killed_roles(ev: pd.DataFrame) -> None:
    """The main loop's restatement of a data reader's exception is context when that exception
    stands above it in the same file: the reader's error is the failure."""
    py = ev.index[(ev["kind"] == "python") & (ev["role"] == "cause") & (ev["table"] == "errors")]
    for i in py:
        if not READER_KILLED_RE.search(str(ev.at[i, "message"] or "")):
            continue
        f, ln = ev.at[i, "file"], ev.at[i, "lineno"]
        before = ev[(ev["table"] == "errors") & (ev["file"] == f) & (ev["lineno"] < ln)
                    & (ev["lineno"] >= ln - READER_ERROR_LINES) & (ev["role"] == "cause")]
        if len(before):
            ev.loc[i, ["role", "strength"]] = ["context", Strength.NONE]


INIT_NCCL_CODES = {"nccl_system", "nccl_internal"}
# torchelastic's agent told to stop from outside ("SignalException: Process 9570 got signal:
# 15"): the launcher or scheduler tearing the job down, not a failure of the program.
AGENT_SIGNAL_RE = re.compile(r"SignalException: Process \d+ got signal: (?:15|2|1|9)\b")


# An abort on c10d's own exception: torch's watchdog rethrowing a collective's failure ("terminate
# called after throwing an instance of 'c10::DistBackendError'", huggingface/accelerate#3861).
C10D_ABORT_RE = re.compile(r"instance of '?c10::Dist(?:Backend|Network|Store)?Error")


def _c10d_abort_roles(ev: pd.DataFrame) -> None:
    """With a collective timed out in the logs, an abort on c10d's own exception is that
    timeout's teardown, wherever it is printed (another rank's dump, interleaved, can put it
    above the timeout's line)."""
    if not (ev["code"] == "collective_timeout").any():
        return
    abort = (ev["role"] == "cause") & ev["code"].isin(list(ABORT_CODES)) \
        & ev["line"].astype(str).str.contains(C10D_ABORT_RE)
    ev.loc[abort, ["role", "strength"]] = ["cascade", Strength.NONE]


def _after_timeout_roles(ev: pd.DataFrame) -> None:
    """A Python exception raised after a collective timed out, by the code that runs then (the
    timeout's own RuntimeError, a monitoredBarrier's report, a dump helper, a teardown), is a
    consequence of the timeout, not the failure: same rank (or a line without one), later in the
    same file or at a later time. So is the agent's SignalException when it is told to stop."""
    timeouts = ev[ev["code"] == "collective_timeout"]
    py = ev.index[(ev["kind"] == "python") & (ev["role"] == "cause") & (ev["table"] == "errors")]
    for i in py:
        e = ev.loc[i]
        if AGENT_SIGNAL_RE.search(str(e["message"] or "")):
            ev.loc[i, ["role", "strength"]] = ["cascade", Strength.NONE]
            continue
        if not len(timeouts):
            continue
        rank_ok = timeouts["rank"].isna() | pd.isna(e["rank"]) | (timeouts["rank"] == e["rank"])
        t, te = pd.to_datetime(timeouts["time"], errors="coerce"), pd.to_datetime(e["time"])
        before = ((timeouts["file"] == e["file"]) & (timeouts["lineno"] <= e["lineno"])) | (
            t.notna() & pd.notna(te) & (t <= te))
        if (rank_ok.fillna(False).astype(bool) & before.astype(bool)).any():
            ev.loc[i, ["role", "strength"]] = ["cascade", Strength.NONE]


# A signal handler's name as Python tracebacks show it: DeepSpeed runner's "sigkill_handler",
# "signal_handler", "_sigint_handler", "handle_kill" (webknossos-libs#851), "on_sigterm"
SIGNAL_HANDLER_RE = re.compile(
    r"^(?:\w*_)?(?:sig[a-z]*|signal|kill|interrupt|term[a-z]*)_?handler\b|"
    r"^(?:handle|on)_(?:sig[a-z]*|signal|kill|interrupt|term[a-z]*)\b")
HANDLER_ERROR_LINES = 40  # a handler's traceback ends this close before its exception line


def _signal_handler_roles(ev: pd.DataFrame, incident: Incident, files: dict[str, int]) -> None:
    """A Python exception raised inside a signal handler (a launcher's sigkill_handler failing
    while it tears the job down after Ctrl-C or a kill) is the teardown's, not the failure: the
    traceback just before it, in the same file, ends in a handler."""
    py = ev.index[(ev["kind"] == "python") & (ev["role"] == "cause") & (ev["table"] == "errors")]
    st = incident.stacks
    if not len(py) or not len(st):
        return
    raised = st[st["state"] == "raised"]
    ends = [(*place, str(leaf or ""))
            for place, leaf in zip(_places(raised["source"], files), raised["leaf"], strict=True)]
    for i in py:
        f, ln = ev.at[i, "file"], ev.at[i, "lineno"]
        near = [(sl, leaf) for sf, sl, leaf in ends if sf == f and 0 <= ln - sl <= HANDLER_ERROR_LINES]
        if near and SIGNAL_HANDLER_RE.search(max(near)[1]):
            ev.loc[i, ["role", "strength"]] = ["cascade", Strength.NONE]


# The outermost frame of a traceback raised in a thread other than the main one (Python prints
# "Exception in thread Thread-3:" and the thread ends; the process goes on): threading's
# "_bootstrap_inner (…/threading.py:1016)" (Python 3), "__bootstrap_inner (…/threading.py:801)"
# (Python 2)
THREAD_ROOT_RE = re.compile(r"^_{1,2}bootstrap(?:_inner)? \([^()]*threading\.py:\d+\)$")
# a frame of Python's own library or an installed package, no program's own file
LIBRARY_FRAME_RE = re.compile(r"[/\\](?:lib[/\\]python\d[\d.]*|site-packages|dist-packages)[/\\]")
# the thread a data loader reads in (Paddle's DataLoader: "_thread_loop (…/paddle/fluid/dataloader/
# dataloader_iter.py:212)", JFrankLee/AI's PaddleSeg workerlog.0, then the launcher's SIGTERM;
# torch's pin-memory thread): the training waits on it, so its exception stops the run
LOADER_THREAD_FRAME_RE = re.compile(
    r"^(?:_thread_loop|_pin_memory_loop) \([^()]*dataloader|^_pin_memory_loop \(")
# a thread's exception a main-program error says it died of: that error restates it
THREAD_RESTATED_RE = re.compile(rf"{READER_KILLED_RE.pattern}|{EXCEPTION_WRAPPER_RE.pattern}|"
                                r"thread exited unexpectedly")


def _thread_exception_roles(ev: pd.DataFrame, incident: Incident,
                            files: dict[str, int]) -> None:
    """A Python exception raised in a thread is no failure of the process (threading's
    excepthook prints it and the thread ends): tensorboardX's writer thread raising 'OSError:
    handle is closed' at exit (sttn-gait's train.out). It stays the failure where the main
    program says it died of it (Paddle's 'Blocking queue is killed because the data reader
    raises', torch's 'Caught … in pin memory thread')."""
    py = ev.index[(ev["kind"] == "python") & (ev["role"] == "cause") & (ev["table"] == "errors")]
    st = incident.stacks
    if not len(py) or not len(st):
        return
    raised = st[st["state"] == "raised"]
    starts = [(*place, frames[-1] if isinstance(frames, list) and frames else "",
               isinstance(frames, list) and any(LOADER_THREAD_FRAME_RE.match(str(x))
                                                for x in frames),
               isinstance(frames, list) and bool(frames)
               and all(LIBRARY_FRAME_RE.search(str(x)) for x in frames))
              for place, frames in zip(_places(raised["source"], files), raised["frames"],
                                       strict=True)]
    threads = [place for place, frames in zip(_places(st["source"], files), st["frames"],
                                              strict=True)
               if isinstance(frames, list) and any(THREAD_ROOT_RE.match(str(x)) for x in frames)]
    said = ev[ev["message"].astype(str).str.contains(THREAD_RESTATED_RE)]
    for i in py:
        f, ln = ev.at[i, "file"], ev.at[i, "lineno"]
        near = [(sl, root, feeds, library) for sf, sl, root, feeds, library in starts
                if sf == f and 0 <= ln - sl <= HANDLER_ERROR_LINES]
        if not near:
            continue
        _, root, feeds, library = max(near)
        if not THREAD_ROOT_RE.match(str(root)) and not (
                library and any(tf == f and 0 <= ln - tl <= HANDLER_ERROR_LINES
                                for tf, tl in threads)):
            # (threads that raise at once print their tracebacks line by line into each
            # other: a traceback of library frames alone, beside a thread's, is one of them —
            # three tensorboardX writers' 'OSError: handle is closed' in STTN's convlstm.out)
            continue
        if feeds:
            continue  # the data loader's own thread: the training waits on it and stops
        if ((said["file"] == f) & (said["lineno"] > ln)).any():
            continue
        ev.loc[i, ["role", "strength"]] = ["context", Strength.NONE]


# Python's "Exception ignored in …" header (``parse.errors.EXCEPTION_IGNORED_CODE``): its
# traceback's exception line ends it this close below the header
IGNORED_TRACEBACK_LINES = 60


def _dead_actor_roles(ev: pd.DataFrame) -> None:
    """Ray's word that an actor died, naming the worker (its rank in verl's worker name), is
    that worker's failure where the logs hold no cause of their own: the driver's view of a
    worker killed without a word (RL-Factory#8: "ActorDiedError: The actor died unexpectedly
    before finishing this task", name Zap04XWorkerDict_0:1), else the first dead actor, named by
    its machine (Agent-R1#33: verl's TaskRunner on 10.44.139.116, "Worker exits with an exit code
    None. The worker may have exceeded K8s pod memory limits"); beside a worker's own error it
    stays the teardown that error caused."""
    if (ev["role"] == "cause").any():
        return
    died = ev["code"] == "ray_actor_died"
    dead = ev.index[died & ev["rank"].notna()].append(ev.index[died & ev["rank"].isna()])
    if len(dead):
        ev.loc[dead[:1], ["role", "strength"]] = ["cause", Strength.WEAK]


def _ignored_exception_roles(ev: pd.DataFrame) -> None:
    """The exception of a traceback under Python's "Exception ignored in …" header (an atexit
    callback's, a destructor's) is no failure: the interpreter printed it and went on
    (DeepSpeed's Triton autotune cache racing at exit in bigyang's two-node ulysses runs,
    after the run's summary). The first exception line after the header, in its file and of
    its writer, is the traceback's."""
    heads = ev[ev["code"] == EXCEPTION_IGNORED_CODE]
    if not len(heads):
        return
    py = ev[(ev["kind"] == "python") & (ev["role"] == "cause") & (ev["table"] == "errors")]
    for _, h in heads.iterrows():
        cand = py[(py["file"] == h["file"]) & (py["lineno"] > h["lineno"])
                  & (py["lineno"] - h["lineno"] <= IGNORED_TRACEBACK_LINES)]
        if pd.notna(h["rank"]):
            cand = cand[cand["rank"].isna() | (cand["rank"] == h["rank"])]
        if len(cand):
            ev.loc[cand["lineno"].idxmin(), ["role", "strength"]] = ["context", Strength.NONE]


def _init_failure_roles(ev: pd.DataFrame, incident: Incident) -> None:
    """NCCL's 'unhandled system/internal error' usually follows a peer that died; before the
    first training step (no iteration or progress line) with no other cause, it is the failure
    itself: the communicator could not be set up (network, firewall, IB/RoCE config). An abort
    that names no error of its own (the SIGABRT of torch's watchdog rethrowing the NCCL error,
    'terminate called …') is how that error ends the process, not another cause."""
    own = (ev["role"] == "cause") & ~ev["code"].isin(list(ABORT_CODES))
    if own.any() or len(incident.iterations) or len(incident.progress):
        return
    init = ev["code"].isin(list(INIT_NCCL_CODES))
    ev.loc[init, ["role", "strength"]] = ["cause", Strength.WEAK]


def _cascade_xid_roles(ev: pd.DataFrame) -> None:
    """Xids that follow another Xid (45: 'caused by previous Xid 149') are context; when the
    Xid they follow is not in the logs and nothing else failed, they are the GPU failure we
    have: the first of them stands for it."""
    if (ev["role"] == "cause").any():
        return
    xids = ev.index[(ev["kind"] == "xid") & (ev["role"] == "context")]
    if len(xids):
        ev.loc[xids[0], ["role", "strength"]] = ["cause", Strength.WEAK]


def _record_error_ranks(ev: pd.DataFrame) -> None:
    """The error lines inside a torchrun record's ``traceback`` field (the worker's error file,
    embedded in the report: ``parse.torchrun`` marks where it ends) are that record's worker's:
    its rank, host and time where the line names none (the agent prints them unprefixed)."""
    recs = ev[(ev["table"] == "exits") & ev["traceback_end"].notna()]
    for j in recs.index:
        f, start, end = ev.at[j, "file"], ev.at[j, "lineno"], ev.at[j, "traceback_end"]
        inside = (ev["table"] == "errors") & (ev["file"] == f) & (ev["lineno"] >= start) \
            & (ev["lineno"] <= end)
        for col in ("rank", "host", "time"):
            val = ev.at[j, col]
            if val is None or pd.isna(val):
                continue
            empty = inside & ev[col].isna()
            ev.loc[empty, col] = val


KERNEL_ASSERT_CODE = "cuda_kernel_assert"
# the error torch raises once a kernel's assertion failed (CUDA's cudaErrorAssert; THC's
# "cuda runtime error (59) : device-side assert triggered")
DEVICE_ASSERT_RE = re.compile(r"device-side assert(?:ion)? triggered|cudaErrorAssert|CUDA_ERROR_ASSERT")


def _kernel_assert_runs(ev: pd.DataFrame, incident: Incident,
                        files: dict[str, int]) -> pd.DataFrame:
    """A failed kernel assertion is printed once per GPU thread, a run of lines with nothing
    between them: one event, its first line. The device prints them without the launcher's
    rank prefix; the process's traceback that starts on the line right after the run names
    the rank (``[rank104]: Traceback (most recent call last):``)."""
    asserts = ev.index[(ev["code"] == KERNEL_ASSERT_CODE) & (ev["table"] == "errors")]
    if not len(asserts):
        return ev
    st = incident.stacks
    starts: dict[tuple[int, int], tuple[Any, Any]] = {}
    for place, rank, host in zip(_places(st["source"], files), st["rank"], st["host"], strict=True):
        if not pd.isna(rank):
            starts.setdefault(place, (rank, host))
    drop: list[int] = []
    run: list[int] = []
    for i in [*asserts, None]:
        if i is not None and run and ev.at[i, "file"] == ev.at[run[-1], "file"] \
                and ev.at[i, "lineno"] == ev.at[run[-1], "lineno"] + 1:
            run.append(i)
            continue
        if run:
            first = run[0]
            after = starts.get((ev.at[first, "file"], ev.at[run[-1], "lineno"] + 1))
            if after is not None and pd.isna(ev.at[first, "rank"]) \
                    and all(pd.isna(ev.at[j, "rank"]) for j in run):
                ev.at[first, "rank"] = after[0]
                if pd.isna(ev.at[first, "host"]) and not pd.isna(after[1]):
                    ev.at[first, "host"] = after[1]
            drop += run[1:]
        run = [i] if i is not None else []
    return ev.drop(index=drop)


def _kernel_assert_roles(ev: pd.DataFrame) -> None:
    """A kernel's failed assertion says why the rank's 'device-side assert triggered' error
    was raised: with that error in the logs (same rank, or no rank on either), the assertion
    is its context and the error stays the failure; without it, the assertion is."""
    raised = ev[(ev["kind"] == "cuda_error") & (ev["code"] != KERNEL_ASSERT_CODE)
                & ev["message"].astype(str).str.contains(DEVICE_ASSERT_RE)]
    if not len(raised):
        return
    for i in ev.index[(ev["code"] == KERNEL_ASSERT_CODE) & (ev["role"] == "cause")]:
        r = ev.at[i, "rank"]
        same = raised["rank"].isna() | (raised["rank"] == r) if not pd.isna(r) \
            else pd.Series(True, index=raised.index)
        if same.fillna(False).astype(bool).any():
            ev.loc[i, ["role", "strength"]] = ["context", Strength.NONE]


# errors a run may go on after: an OOM the code works around (moving the work to the CPU), a
# UCX transport error UCX or MPI recovers from (another transport, a retried connection)
RECOVERED_CODES = {"oom_fallback", "ucx_error"}


def _recovered_roles(ev: pd.DataFrame, incident: Incident, files: dict[str, int]) -> None:
    """An OOM the program caught and worked around (or a UCX error the transport got past) is
    no failure when the run went on: a step or progress line after it in the same file. Where
    nothing came after it, it is the last thing the run said before it ended, and the failure
    it has."""
    recovered = ev.index[ev["code"].isin(list(RECOVERED_CODES)) & (ev["role"] == "cause")]
    if not len(recovered):
        return
    last: dict[int, int] = {}
    for t in (with_source(incident.iterations), incident.progress):
        for f, ln in _places(t["source"], files):
            last[f] = max(last.get(f, 0), ln)
    for i in recovered:
        if last.get(ev.at[i, "file"], 0) > ev.at[i, "lineno"]:
            ev.loc[i, ["role", "strength"]] = ["context", Strength.NONE]
        else:
            ev.at[i, "strength"] = Strength.WEAK


# How many different steps a file must report after a Python exception for the run to have gone
# on past it: a peer of a rank that died finishes at most the step in flight before it blocks in
# the next collective, so two further steps are a run that went on, not its last breath.
CONTINUED_STEPS = 2


def _continued_roles(ev: pd.DataFrame, incident: Incident, files: dict[str, int]) -> None:
    """A Python exception the run went on after is no failure: its words printed inside a
    warning (Numba's "Compilation is falling back to object mode … TypingError: …", SA-SSD
    nohup.out) or a traceback a library caught and printed, followed in the same file by step or
    progress lines of ``CONTINUED_STEPS`` different steps before any process's exit record."""
    cand = ev.index[(ev["table"] == "errors") & (ev["kind"] == "python")
                    & (ev["role"] == "cause")]
    if not len(cand):
        return
    steps: dict[int, list[tuple[int, Any]]] = {}
    its = with_source(incident.iterations)
    # (a data set's "Map" or download bar is no run going on: other ranks still preparing
    # their data while one raised, bigyang's grouped ulysses run)
    pr = incident.progress
    pr = pr[~setup_bars(pr)] if len(pr) else pr
    for t, col in ((its, "iteration"), (pr, "step")):
        for (f, ln), v in zip(_places(t["source"], files), t[col], strict=True):
            if pd.notna(v):
                steps.setdefault(f, []).append((ln, v))
    # a process's exit recorded after the exception ends the run it was in: steps after that
    # are a relaunch's (an srun job retrying its torchrun), not this run going on
    exits = ev[ev["table"] == "exits"]
    for i in cand:
        f, ln = ev.at[i, "file"], ev.at[i, "lineno"]
        ended = exits.loc[(exits["file"] == f) & (exits["lineno"] > ln), "lineno"]
        stop = ended.min() if len(ended) else float("inf")
        later = {v for at, v in steps.get(f, []) if ln < at < stop}
        if len(later) >= CONTINUED_STEPS:
            ev.loc[i, ["role", "strength"]] = ["context", Strength.NONE]
    _recurring_roles(ev, cand, exits)


def _signature(message: str | None) -> str:
    """An exception's words without their numbers, the first ``SIGNATURE_CHARS`` of them."""
    return DIGITS_RE.sub("#", message or "")[:SIGNATURE_CHARS]


DIGITS_RE = re.compile(r"\d+")
SIGNATURE_CHARS = 60


def _recurring_roles(ev: pd.DataFrame, cand: pd.Index, exits: pd.DataFrame) -> None:
    """The same exception again (its type and words, numbers aside) after the run went on past
    it is the same caught error recurring, not the failure, unless a process's exit is recorded
    after it in its file (gui-cursor's verl agent loop: workers log "ValueError: step 3 -
    extract action failed from: …" through every rollout, the last ones after the last step
    the log holds)."""
    survived = {(ev.at[i, "code"], _signature(ev.at[i, "message"]))
                for i in cand if ev.at[i, "role"] == "context"}
    if not survived:
        return
    for i in cand:
        if ev.at[i, "role"] != "cause" or (
                ev.at[i, "code"], _signature(ev.at[i, "message"])) not in survived:
            continue
        f, ln = ev.at[i, "file"], ev.at[i, "lineno"]
        if not ((exits["file"] == f) & (exits["lineno"] > ln)).any():
            ev.loc[i, ["role", "strength"]] = ["context", Strength.NONE]


# NCCL's words for the far end of a connection going away: the rank that prints them lost a peer
PEER_CLOSED_RE = re.compile(r"closed by remote peer|remote process exited", re.IGNORECASE)
PEER_CLOSED_LINES = 40  # how far below that warning the rank's own NCCL error comes


def _peer_closed_roles(ev: pd.DataFrame) -> None:
    """A rank's NCCL error below its own NCCL warning that the remote peer closed the
    connection is how it lost that peer, not a failure of its own (sparticlesteve's
    nersc-pytorch-testing on Perlmutter: ranks 3 and 7 fail to create an InfiniBand completion
    queue, then ranks 0 and 4 print "NET : Connection closed by remote peer" and the same
    "unhandled system error")."""
    warned = ev[(ev["code"] == "nccl_warn_net") & ev["rank"].notna()
                & ev["message"].astype(str).str.contains(PEER_CLOSED_RE)]
    for w in warned.itertuples():
        mine = ((ev["rank"] == w.rank) & (ev["file"] == w.file) & (ev["role"] == "cause")
                & (ev["kind"] == "nccl_error") & (ev["lineno"] > w.lineno)
                & (ev["lineno"] <= w.lineno + PEER_CLOSED_LINES)).fillna(False)
        ev.loc[mine, ["role", "strength"]] = ["cascade", Strength.NONE]


UCX_DETAIL_LINES = 40  # how far below UCX's error lines the process's own report of it comes


def _ucx_detail_roles(ev: pd.DataFrame) -> None:
    """UCX's error lines are the detail of a failure the same process reports next, within
    ``UCX_DETAIL_LINES`` lines: MPI's error ("pml_ucx.c:775  Error: ucx send failed", "*** An
    error occurred in MPI_Bcast") or the signal UCX's fatal error raised ("Caught signal 11
    (Segmentation fault …)", ucs_fatal's "rndv.c:943  Fatal: …" and its abort). That report is the failure;
    the UCX lines are its context."""
    ucx = ev.index[(ev["code"] == "ucx_error") & (ev["role"] == "cause")]
    if not len(ucx):
        return
    own = ev[(ev["table"] == "errors") & (ev["role"] == "cause") & (ev["code"] != "ucx_error")]
    for i in ucx:
        e = ev.loc[i]
        later = own[(own["file"] == e["file"]) & (own["lineno"] > e["lineno"])
                    & (own["lineno"] - e["lineno"] <= UCX_DETAIL_LINES)]
        if pd.notna(e["pid"]):
            later = later[later["pid"] == e["pid"]]
        elif as_str(e["host"]) is not None:
            later = later[later["host"] == e["host"]]
        if len(later):
            ev.loc[i, ["role", "strength"]] = ["context", Strength.NONE]


def finished_before(incident: Incident, first: pd.Series | None) -> bool:
    """Whether the program said its run finished with success (MLPerf's run_stop, a
    ``plan:finished`` row) before its first failure, in the same file: the work was done, a
    failure at teardown loses none of it."""
    if first is None:
        return False
    files = {f: i for i, f in enumerate(incident.account.file_list)}
    stop = _run_finished_at(incident, files).get(first["file"])
    return stop is not None and stop < first["lineno"]


def _run_finished_at(incident: Incident, files: dict[str, int]) -> dict[int, int]:
    """Per file id (as the events number them), the first line where the program said its run
    finished with success (a ``plan:finished`` row of ``host_timings``)."""
    ht = incident.tables.get("host_timings")
    if ht is None or not len(ht):
        return {}
    done = ht[ht["metric"].astype("string") == RUN_FINISHED_METRIC]
    first: dict[int, int] = {}
    for f, ln in _places(done["source"], files):
        first[f] = min(first.get(f, ln), ln)
    return first


def _after_success_roles(ev: pd.DataFrame, incident: Incident, files: dict[str, int]) -> None:
    """An error printed after the program said its run finished with success (MLPerf's
    run_stop, ``plan:finished`` rows), later in the same file, is its teardown at exit
    (multiprocessing finalizers failing to unlink a semaphore), not a failure of the run;
    except a device or communication error and the abort it causes (``SPECIFIC_KINDS``,
    ``ABORT_CODES``): a process that dies after the run (Supermicro's seven ranks aborting
    on an NCCL communicator they create for a barrier, "only 4 vNics have been created";
    HPE's rank 30 failing NCCL's Close) failed, whatever the run had reached."""
    first = _run_finished_at(incident, files)
    if not first:
        return
    fatal = ev["kind"].isin(SPECIFIC_KINDS) | ev["code"].isin(list(ABORT_CODES))
    for i in ev.index[(ev["table"] == "errors") & (ev["role"] == "cause") & ~fatal]:
        stop = first.get(ev.at[i, "file"])
        if stop is not None and ev.at[i, "lineno"] > stop:
            ev.loc[i, ["role", "strength"]] = ["context", Strength.NONE]


def _before_success_roles(ev: pd.DataFrame, incident: Incident, files: dict[str, int]) -> None:
    """An error or a process's exit before the run that then trained (``CONTINUED_STEPS``
    different steps after it) and said it finished with success, in the same file, was a step
    of the job script, not the run's failure (Fujitsu's MLPerf LoRA job: "srun: error:
    mlperf-h100-0208: task 0: Exited with exit code 1" from its mlperf-sysjson.sh helper, then
    the 4-rank run to its run_stop and RESULT line); a device or communication error still is
    one (``SPECIFIC_KINDS``, ``ABORT_CODES``)."""
    done = _run_finished_at(incident, files)
    if not done:
        return
    fatal = ev["kind"].isin(SPECIFIC_KINDS) | ev["code"].isin(list(ABORT_CODES))
    cand = ev.index[ev["role"].isin(["cause", "exit"]) & ~fatal & ev["file"].isin(list(done))]
    if not len(cand):
        return
    steps: dict[int, list[tuple[int, Any]]] = {}
    its = with_source(incident.iterations)
    for (f, ln), v in zip(_places(its["source"], files), its["iteration"], strict=True):
        if pd.notna(v):
            steps.setdefault(f, []).append((ln, v))
    for i in cand:
        f, ln = ev.at[i, "file"], ev.at[i, "lineno"]
        stop = done[f]
        if ln < stop and len({v for at, v in steps.get(f, []) if ln < at < stop}) >= CONTINUED_STEPS:
            ev.loc[i, ["role", "strength"]] = ["context", Strength.NONE]


RAY_TASK_LINES = 80  # how far below a RayTaskError's header its traceback's last line comes


def _ray_task_places(ev: pd.DataFrame) -> None:
    """The Python error that ends a re-raised Ray task's traceback happened in the worker its
    header names ("RayTaskError(RuntimeError): ray_Train:train() (pid=8861, host=cryoem-
    gpu50)"): the first such error below the header in its file takes the header's pid and
    machine where it names none."""
    heads = ev[(ev["code"] == "ray_task_error") & ev["host"].notna()]
    for h in heads.itertuples():
        below = ev[(ev["file"] == h.file) & (ev["lineno"] > h.lineno)
                   & (ev["lineno"] <= h.lineno + RAY_TASK_LINES) & (ev["kind"] == "python")
                   & (ev["code"] != "ray_task_error") & ev["host"].isna()]
        if len(below):
            i = below["lineno"].idxmin()
            ev.loc[i, ["host", "pid"]] = [h.host, h.pid]


def _node_block_hosts(ev: pd.DataFrame) -> dict[int, str]:
    """The machine of every rank that a record naming a rank, its local rank and its host
    places there: ranks are numbered node by node, so global rank R with local rank L on host
    H puts ranks R-L … R on H (torchrun's "rank : 3 (local_rank: 3)" with "host :
    nid008493-hsn0": rank 0 too, shiminzhang/llm-sat). A rank two records place on two
    machines is left out."""
    out: dict[int, str] = {}
    clash: set[int] = set()
    for r in ev.itertuples(index=False):
        if pd.isna(r.rank) or pd.isna(r.local_rank) or not is_host(r.host):
            continue
        rank, local = int(r.rank), int(r.local_rank)
        if not 0 <= local <= rank:
            continue
        for k in range(rank - local, rank + 1):
            if out.setdefault(k, str(r.host)) != str(r.host):
                clash.add(k)
    return {k: h for k, h in out.items() if k not in clash}


def _fill_ranks(ev: pd.DataFrame, incident: Incident,
                host_of: dict[int, str] | None = None) -> None:
    """Ranks from pids (torchrun's records name both) and from host + local rank; hosts from
    ranks (any table that names both)."""
    def known(v: Any) -> bool:
        return v is not None and not pd.isna(v)

    by_pid: dict[int, int] = {}
    by_local: dict[tuple[str, int], int] = {}
    for r in ev.itertuples(index=False):
        if known(r.rank):
            if known(r.pid):
                by_pid.setdefault(int(r.pid), int(r.rank))
            if known(r.host) and known(r.local_rank):
                by_local.setdefault((str(r.host), int(r.local_rank)), int(r.rank))
    for pid, rank in _closed_worker_rank(ev).items():
        by_pid.setdefault(pid, rank)
    by_task = srun_task_ranks(incident)
    if not by_pid and not by_task and not ev["rank"].notna().any() and not ev["task"].notna().any():
        # only where nothing else names a rank: NCCL's world communicator's
        by_pid.update(nccl_world_ranks(incident))
    if host_of is None:
        host_of = rank_hosts(incident)
    by_pid_host = pid_hosts(incident)
    by_pid_device = device_local_ranks(incident)
    layout = node_layout(incident)
    # one machine (or none) named and no layout stated: the local rank is taken as the rank
    machines = [h for h in incident.hosts if is_host(h)]
    one_machine = len(machines) <= 1
    # the launcher states one node and the log names one machine: every rank ran there
    sole_machine = machines[0] if layout.nnodes == 1 and len(machines) == 1 else None
    # (a record's short host name as the machine's full one where the log names it so)
    node_block = {k: next((m for m in machines if m.startswith(f"{h}.")), h)
                  for k, h in _node_block_hosts(ev).items()}
    data_parallel = _data_parallel_alone(ev, incident, layout)
    no_peer = not data_parallel and _no_peer_shown(ev, incident, layout)
    one_process = (layout.nnodes == 1 and layout.nproc_per_node == 1) or data_parallel \
        or no_peer
    ranks, hosts, notes = [], [], []
    # srun task -> machine, where a line that task wrote names a pid NCCL places (a launcher's
    # children run on its own machine); a task seen on two machines is left as it is
    task_machine: dict[str, set[str]] = {}
    for r in ev.itertuples(index=False):
        rank = int(r.rank) if known(r.rank) else None
        from_task = False
        if rank is None and known(r.host):
            rank = by_task.get(str(r.host))
            from_task = rank is not None and not len(incident.exits)
        if rank is None and known(r.task):  # srun's label on a line naming its own host
            rank = by_task.get(f"{SYNTHETIC_HOST_PREFIX}{int(r.task)}")
        if rank is None and known(r.pid):
            rank = by_pid.get(int(r.pid))
        if rank is None and known(r.host) and known(r.local_rank):
            rank = by_local.get((str(r.host), int(r.local_rank)))
        assumed = False
        local = int(r.local_rank) if known(r.local_rank) else None
        from_device = False
        if rank is None and local is None and known(r.pid):
            local = by_pid_device.get(int(r.pid))
            from_device = local is not None
        alone = False
        if rank is None and local is None and one_process:
            local = 0  # the log states one process in all: whatever failed is rank 0
            alone = layout.nproc_per_node is None  # told by DataParallel, not by a layout
        one_per_node = False
        if rank is None and local is None and layout.nproc_per_node == 1 \
                and r.table == "errors":
            # one process on each node (Lightning's one visible device): what failed on a node
            # is its local rank 0; global only by the layout, or as the one machine's rank
            local, one_per_node = 0, True
        from_oom = False
        if rank is None and local is None and r.kind == "oom":
            local = _oom_device_local_rank(as_str(r.line) or "", layout.nproc_per_node)
            from_oom = local is not None
        if rank is None and local is not None:
            rank = global_rank(local, as_str(r.host), layout)
            if rank is None:
                rank = global_rank(local, as_str(r.host), layout, one_machine)
                assumed = rank is not None
        host = str(r.host) if is_host(r.host) else None
        if host is None and rank is not None:
            host = host_of.get(rank) or node_block.get(rank) or sole_machine
        if host is None and known(r.pid):
            host = by_pid_host.get(int(r.pid))  # NCCL's init lines: this pid's machine
            if host is not None and known(r.host):
                task_machine.setdefault(str(r.host), set()).add(host)
        if host is None and known(r.host):
            host = str(r.host)  # an srun task id: who wrote it, never a host to drain
        ranks.append(rank)
        hosts.append(host)
        if rank is None and local is not None:
            where = f" on {host}" if host else ""
            notes.append(f"local rank {local}{where}: the log does not give its "
                         "node rank and processes per node, so no global rank")
        elif from_task:
            notes.append(f"srun task {rank} taken as rank {rank}: srun started the processes "
                         "itself (no launcher under it shows in the log)")
        elif from_oom:
            notes.append(f"the OOM names GPU {local}, taken as local rank {local}: the launcher "
                         f"starts {layout.nproc_per_node} processes on a node, one per device")
        elif alone and no_peer:
            notes.append("nothing in the log shows a second process (no launcher record, rank "
                         "tag, NCCL line or node layout): taken as rank 0 of a one-process run")
        elif alone:
            notes.append("one DataParallel process and no rank named anywhere: taken as rank 0")
        elif assumed and from_device:
            notes.append(f"pid {int(r.pid)} drives GPU {rank} (its NCCL lines), taken as local "
                         f"rank {rank} and rank {rank}: the log names one machine at most and "
                         "states no node layout")
        elif assumed and one_per_node:
            notes.append("one process on its machine (the log states one per node) and no rank "
                         "named: taken as rank 0, the log names one machine at most and no node "
                         "count")
        elif assumed:
            notes.append(f"local rank {rank} taken as rank {rank}: the log names one machine at "
                         "most and states no node layout")
        else:
            notes.append(None)
    for i, h in enumerate(hosts):
        machines = task_machine.get(h) if h is not None else None
        if machines is not None and len(machines) == 1:
            hosts[i] = next(iter(machines))
    ev["rank"] = pd.array(ranks, dtype="Int64")
    ev["rank_note"] = pd.array(notes, dtype="string")
    ev["host"] = pd.array(hosts, dtype="string")


def srun_task_ranks(incident: Incident) -> dict[str, int]:
    """The rank behind each srun task name (``srun-task-7``, what ``srun -l``'s ``7: ``
    prefix gives a line), where srun's own exit lines make its tasks the ranks ("srun: error:
    tnasnt5: task 7: Exited with exit code 1" with no launcher under srun: ``Incident`` keeps
    the task as the rank there), or where no launcher shows at all (``_tasks_without_launcher``);
    else none: under a launcher a task is a node's agent."""
    x = incident.exits
    if not len(x) or "task" not in x:
        return _tasks_without_launcher(incident)
    paired = x[x["task"].notna() & x["rank"].notna()]
    paired = paired[paired["task"] == paired["rank"]]
    return {f"{SYNTHETIC_HOST_PREFIX}{int(t)}": int(t) for t in paired["task"].unique()}


def _tasks_without_launcher(incident: Incident) -> dict[str, int]:
    """Each srun task name as its rank where the log shows srun starting the job's processes
    itself: its ``N: `` labels on the lines, and no launcher's record, no launcher's own line and
    no layout of several processes per node anywhere (pytorch/PiPPy#259: "15: terminate called
    after throwing an instance of 'c10::CUDAError'", srun -l over one task per GPU). A task
    under a launcher is a node's agent, so any sign of one gives none."""
    tasks = [h for h in incident.hosts if h.startswith(SYNTHETIC_HOST_PREFIX)]
    if not tasks or len(incident.exits):
        return {}
    if (node_layout(incident).nproc_per_node or 1) > 1:
        return {}
    errs = incident.errors
    if len(errs) and errs["code"].isin(list(LAUNCHER_LINE_CODES)).any():
        return {}
    return {t: int(t[len(SYNTHETIC_HOST_PREFIX):]) for t in tasks
            if t[len(SYNTHETIC_HOST_PREFIX):].isdigit()}


# srun's task list on its exit line ("tasks 0-1,3"): single ids and ranges
SRUN_TASK_SPAN_RE = re.compile(r"(?P<lo>\d+)(?:-(?P<hi>\d+))?")
# srun's record of tasks that exited with a status of their own (not "Killed"/"Terminated": the
# step's teardown): "srun: error: nid006742: tasks 32-33: Exited with exit code 1"
# (elena-lyulina/Megatron-LM-Attention-Benchmark attn_bench/logs; EveryVoiceTTS/EveryVoice#178;
# picongpu#198: "srun: error: taurusi2031: tasks 10-11: Exited with exit code 1")
SRUN_OWN_EXIT_RE = re.compile(r"srun: error: (?P<host>[A-Za-z0-9][\w.\-]*): tasks? "
                              r"(?P<tasks>[\d,\-]+): Exited with exit code (?P<code>[1-9]\d*)")


def srun_failed_tasks(incident: Incident) -> tuple[list[str], list[int]]:
    """The machines srun reports tasks of exiting with a non-zero status of their own, and
    those tasks as ranks where srun started the job's processes itself (no launcher record,
    launcher line or layout of several processes per node: a task under a launcher is a node's
    agent); ([], []) when srun reports none."""
    x = incident.exits
    if not len(x) or "line" not in x:
        return [], []
    hosts: list[str] = []
    tasks: list[int] = []
    for line in x["line"].dropna().astype(str):
        m = SRUN_OWN_EXIT_RE.search(line)
        if m is None:
            continue
        hosts.append(m["host"])
        for span in SRUN_TASK_SPAN_RE.finditer(m["tasks"]):
            lo = int(span["lo"])
            hi = int(span["hi"]) if span["hi"] else lo
            tasks.extend(range(lo, min(hi, lo + 4096) + 1))
    launched = (("local_rank" in x and x["local_rank"].notna().any())
                or (node_layout(incident).nproc_per_node or 1) > 1
                or (len(incident.errors)
                    and incident.errors["code"].isin(list(LAUNCHER_LINE_CODES)).any()))
    return sorted(set(hosts)), ([] if launched else sorted(set(tasks)))


# DataParallel's ExceptionWrapper: one process caught what one of its replicas (threads, one per
# GPU) raised ("torch.cuda.OutOfMemoryError: Caught OutOfMemoryError in replica 0 on device 0.")
DATA_PARALLEL_RE = re.compile(r"Caught \w+ in replica \d+ on device \d+")


def _data_parallel_alone(ev: pd.DataFrame, incident: Incident, layout: NodeLayout) -> bool:
    """Whether the log is one DataParallel process: it re-raised a replica's error and nothing
    names a rank, a node layout or a launcher's worker (a DataParallel process drives all its
    GPUs itself; with no torch.distributed around it, it is rank 0)."""
    if incident.ranks or layout.nnodes is not None or layout.nproc_per_node is not None:
        return False
    errs = ev[ev["table"] == "errors"]
    if not errs["message"].astype(str).str.contains(DATA_PARALLEL_RE.pattern).any():
        return False
    exits = ev[ev["table"] == "exits"]
    return not (exits["rank"].notna() | exits["local_rank"].notna()).any()


# The kinds of error one process raises on its own; any other (NCCL, a signal, an Xid, MPI)
# or any launcher record tells of a job with more to it than the process that printed it.
ALONE_KINDS = frozenset(("python", "oom", "cuda_error"))
# a traceback through the code of a job of several processes: Ray Train's workers
# ("ray/train/_internal/utils.py … check_for_failure"), torch.distributed and its launchers,
# DDP's forward (torch/nn/parallel/distributed.py), mp.spawn, Horovod, DeepSpeed's engine,
# accelerate's multi-GPU launcher
DISTRIBUTED_FRAME_RE = re.compile(
    r"[/\\](?:ray|horovod|deepspeed)[/\\]|torch[/\\](?:distributed|multiprocessing)[/\\]"
    r"|torch[/\\]nn[/\\]parallel[/\\]distributed\.py|multi_gpu_launcher|deepspeed_launcher")


def _no_peer_shown(ev: pd.DataFrame, incident: Incident, layout: NodeLayout) -> bool:
    """Whether the log shows one process and nothing beside it: a script's own traceback
    (``python train.py`` on one GPU, a notebook's cell) with no rank tag, no launcher record,
    no node layout, at most one machine, no NCCL set-up or collective, no second pid, no error
    printed twice. The one process that failed is then rank 0."""
    if incident.ranks or layout.nnodes is not None or layout.nproc_per_node is not None:
        return False
    ht = incident.tables.get("host_timings")
    if ht is not None and ht["metric"].astype("string").str.startswith("layout:", na=False).any():
        return False  # a world of several processes stated (``layout:world_size``), or devices
    if len(incident.hosts):
        return False  # a host named (pdsh's or DeepSpeed's multi-node runner's "gr064: " label,
        # srun -l, a scheduler line): a job placed on nodes, whose other processes the excerpt
        # may not show (bigscience-workshop/Megatron-DeepSpeed#318's pdsh-labelled trace)
    if any(len(incident.tables.get(t, ())) for t in ("collectives", "processes")):
        return False
    if len(ev) == 0 or (ev["table"] != "errors").any():
        return False
    if not ev["kind"].astype(str).isin(ALONE_KINDS).all():
        return False
    if ev["message"].astype(str).duplicated().any():
        return False  # the same failure printed twice: more than one process hit it (a pool of
        # workers, one per GPU: HEISENYAN/openpi rollout.out's four tasks' CUDA OOMs)
    stacks = incident.tables.get("stacks")
    pids = set(ev["pid"].dropna().astype(int))
    if stacks is not None and len(stacks):
        pids |= set(stacks["pid"].dropna().astype(int))
        frames = " ".join(" ".join(map(str, f)) for f in stacks["frames"]
                          if isinstance(f, list | tuple))
        if DISTRIBUTED_FRAME_RE.search(frames):
            return False
    return len(pids) <= 1


# The agent's own teardown of a worker: the pid it names is one of its workers.
AGENT_CLOSE_CODES = {"launcher_sigterm", "launcher_sigkill"}


def _closed_worker_rank(ev: pd.DataFrame) -> dict[int, int]:
    """The rank of the one worker torchrun's agent closed (``Sending process 227 closing
    signal SIGTERM``) that its failure records do not list, by elimination: the agent's
    workers are the pids of its records and of its closing lines, their local ranks 0..N-1;
    where exactly one pid and one local rank are left, on one machine, with every record's
    rank its local rank plus one offset, that pid is that rank. Else nothing."""
    recs = ev[(ev["table"] == "exits") & ev["pid"].notna() & ev["local_rank"].notna()
              & ev["rank"].notna()]
    closed = ev[ev["code"].isin(list(AGENT_CLOSE_CODES)) & ev["pid"].notna()]
    if not len(recs) or not len(closed):
        return {}
    hosts = {str(h) for h in pd.concat([recs["host"], closed["host"]]).dropna()}
    pairs = {(int(p), int(lr), int(r)) for p, lr, r in
             zip(recs["pid"], recs["local_rank"], recs["rank"], strict=True)}
    pid_local = {p: lr for p, lr, _ in pairs}
    offsets = {r - lr for _, lr, r in pairs}
    if len(hosts) > 1 or len(offsets) != 1 or len(pid_local) != len(pairs) \
            or len(set(pid_local.values())) != len(pid_local):
        return {}
    workers = set(pid_local) | {int(p) for p in closed["pid"]}
    left_pids = workers - set(pid_local)
    left_locals = set(range(len(workers))) - set(pid_local.values())
    if len(left_pids) != 1 or len(left_locals) != 1 or max(pid_local.values()) >= len(workers):
        return {}
    return {left_pids.pop(): left_locals.pop() + offsets.pop()}


def _oom_device_local_rank(line: str, nproc_per_node: int | None) -> int | None:
    """The local rank a CUDA OOM's device tells ("Tried to allocate 3.91 GiB (GPU 0; …)",
    torch ≥ 2.1: "… GPU 0 has a total capacity of …"), where the launcher states it starts
    several processes on the node (torchrun's ``--nproc_per_node``, DeepSpeed's
    ``num_local_procs``): each sees the node's devices and drives the one of its local rank.
    One process per node (it may drive several GPUs), or none stated: None."""
    if nproc_per_node is None or nproc_per_node < 2:
        return None
    gpu = oom_figures(line).get("gpu")
    return gpu if gpu is not None and gpu < nproc_per_node else None


def device_local_ranks(incident: Incident) -> dict[int, int]:
    """The local rank of each pid whose NCCL lines name one CUDA device, where the pids of its
    machine (two at least) each drive a device of their own: the launcher's ``set_device(
    local_rank)`` numbering (one process driving several GPUs, or every process seeing its GPU
    as device 0, gives none)."""
    p = incident.tables.get("processes")
    if p is None or not len(p):
        return {}
    p = p[p["pid"].notna() & p["device"].notna()]
    devices = p.groupby("pid")["device"].unique()
    machine = p.groupby("pid")["host"].first()
    out: dict[int, int] = {}
    groups: dict[str, list[tuple[int, int]]] = {}
    for pid, devs in devices.items():
        if len(devs) == 1:
            host = machine.get(pid)
            groups.setdefault("" if pd.isna(host) else str(host), []).append(
                (int(pid), int(devs[0])))
    for members in groups.values():
        devs = [d for _, d in members]
        if len(members) >= 2 and len(set(devs)) == len(devs):
            out.update(members)
    return out


def _exit_roles(ev: pd.DataFrame) -> None:
    """An exit repeats its rank's own error (context), follows a peer's failure (cascade), or is
    the only thing known about a rank that died (cause: killed without a word). DeepSpeed's
    'Killing subprocess' lines are its launcher's answer to that very exit (sigkill_handler
    kills the siblings, then reports the dead child's code), not a peer's failure before it;
    so are torchrun's 'Sending process 18895 closing signal SIGTERM' lines on the exit's host
    (it closes the siblings of the worker whose exit it then records)."""
    errs = ev[(ev["role"] != "exit") & (ev["code"] != "launcher_kill")]
    # (a launcher's closing SIGTERM to this very worker still makes its exit the teardown)
    errs_on_host = errs[~errs["code"].isin(LAUNCHER_LINE_CODES)]
    for i in ev.index[ev["role"] == "exit"]:
        e = ev.loc[i]
        if e["code"] in TEARDOWN_SIGNALS:
            ev.loc[i, ["role", "strength"]] = ["cascade", Strength.NONE]
            continue
        said = _restated_exception(e, errs)
        if said is not None:
            ev.loc[i, ["role", "strength"]] = (["context", Strength.NONE] if said == "cause"
                                               else ["cascade", Strength.NONE])
            continue
        same = errs.iloc[0:0]
        if not pd.isna(e["rank"]):
            same = errs[errs["rank"] == e["rank"]]
        elif e["host"] is not None and not pd.isna(e["host"]):
            same = errs_on_host[errs_on_host["host"] == e["host"]]
        if (same["role"] == "cause").any():
            ev.loc[i, ["role", "strength"]] = ["context", Strength.NONE]
        elif (same["role"] == "cascade").any():
            ev.loc[i, ["role", "strength"]] = ["cascade", Strength.NONE]
        else:
            ev.loc[i, ["role", "strength"]] = ["cause", (Strength.LOCAL if e["root_cause"]
                                                         else Strength.WEAK)]


def _mpi_abort_roles(ev: pd.DataFrame) -> None:
    """After an MPI error on a known rank, MPI ends every process of the job (Open MPI's
    MPI_ERRORS_ARE_FATAL: "processes in this communicator will now abort", MPI_Abort; then
    srun's "task 1: Killed" for each): a later exit of another rank, in the same file, with no
    error of its own is that abort, a cascade."""
    mpi = ev[(ev["kind"] == "mpi_error") & (ev["role"] == "cause") & ev["rank"].notna()]
    if not len(mpi):
        return
    first = mpi.groupby("file")["lineno"].min()
    own = set(mpi["rank"].astype(int))
    bare = ev.index[(ev["table"] == "exits") & (ev["role"] == "cause") & ev["rank"].notna()
                    & (ev["strength"] == Strength.WEAK)]
    for i in bare:
        start = first.get(ev.at[i, "file"])
        if start is not None and ev.at[i, "lineno"] > start and int(ev.at[i, "rank"]) not in own:
            ev.loc[i, ["role", "strength"]] = ["cascade", Strength.NONE]


RESTATED_EXIT_LINES = 10  # an anonymous exit 1 this close below a Python exception is its exit


def _restated_exception(e: pd.Series, errs: pd.DataFrame) -> str | None:
    """The role of the Python exception an anonymous ``exit 1`` restates (no rank, host, pid or
    local rank: Hydra's 'Set the environment variable HYDRA_FULL_ERROR=1 …' line, after which
    run_and_report exits 1): the exception printed just above it in the same file; None when
    the exit names its process or no exception stands there."""
    if e["code"] != "exit_1" or any(not pd.isna(e[c]) for c in ("rank", "pid", "local_rank")) \
            or not (e["host"] is None or pd.isna(e["host"])):
        return None
    above = errs[(errs["kind"] == "python") & (errs["file"] == e["file"])
                 & (errs["lineno"] <= e["lineno"])
                 & (errs["lineno"] >= e["lineno"] - RESTATED_EXIT_LINES)]
    if not len(above):
        return None
    return str(above.sort_values("lineno").iloc[-1]["role"])


def _escalation_roles(ev: pd.DataFrame) -> None:
    """A SIGKILL exit about 30 s (``KILL_ESCALATION_S``) after another failure, in a teardown
    that sent SIGTERM, is the launcher's or scheduler's escalation (the worker ignored SIGTERM),
    not a failure of its own: cascade. A SIGKILL with nothing failing before it stays a cause
    (most often the host's OOM killer)."""
    kill = ev.index[(ev["table"] == "exits") & (ev["code"] == "SIGKILL")
                    & (ev["role"] == "cause") & ev["time"].notna()]
    if not len(kill):
        return
    sigterm = ev["code"].isin(["SIGTERM", "launcher_sigterm", "launcher_received_signal",
                               "launcher_sigkill", "slurm_cancelled", *NOT_A_FAILURE_CODES])
    if not sigterm.any():
        return
    lo, hi = KILL_ESCALATION_S
    before = ev[(ev["code"] != "SIGKILL") & ev["time"].notna()
                & (ev["role"].isin(["cause", "context"]) | sigterm)]
    for i in kill:
        dt = (ev.at[i, "time"] - before["time"]).dt.total_seconds()
        if ((dt >= lo) & (dt <= hi)).any():
            ev.loc[i, ["role", "strength"]] = ["cascade", Strength.NONE]


# --- the first failure and its cascade ---------------------------------------------------------

@dataclass
class Crash:
    """The primary failure (``first``), the causes that belong to it (``cluster``), the
    cascade, and causes that look independent of it."""

    events: pd.DataFrame
    first: pd.Series | None
    cluster: pd.DataFrame
    cascade: pd.DataFrame
    independent: pd.DataFrame
    by: str  # how the first failure was chosen: time | root_cause | line_order | silent | none


def effective_times(events: pd.DataFrame) -> pd.Series:
    """Each event's time, or for a line with none the time of the next timed line of its file
    (it was printed no later), else the latest time of the lines before it (no earlier).
    The latest, not the last: torchrun's failure record prints its time to the second
    ("time : 2025-10-25_02:04:00"), before lines of that second timed to the millisecond; a
    line after the record is no earlier than them (nilsblank/LLaMA-Factory-RoboG's job
    3598170: the CLI's CalledProcessError after the record is no failure before the OOMs)."""
    t = pd.to_datetime(events["time"], errors="coerce")
    if t.notna().all() or t.isna().all():
        return t
    order = events.assign(_t=t).sort_values(["file", "lineno"], kind="stable")
    filled = order.groupby("file", sort=False)["_t"].transform(_no_later_no_earlier)
    return filled.reindex(events.index)


def _no_later_no_earlier(s: pd.Series) -> pd.Series:
    """One file's times in line order, each missing one filled (``effective_times``)."""
    return s.bfill().fillna(s.cummax().ffill())


def first_failure(events: pd.DataFrame, window_s: float = SAME_FAILURE_WINDOW_S,
                  ranks_seen: list[int] | None = None, writers_seen: int = 0) -> Crash:
    """The first cause in time (torchrun's root cause, then line order, when times are
    missing); the causes on its host/rank within ``window_s`` join it; cascade events are the
    symptoms on other ranks. With no cause at all, a rank seen in the logs that reported
    nothing while every other rank reported a cascade is named (``by='silent'``), else one
    rank's own NCCL error that no other of the ``writers_seen`` (ranks or srun tasks) shared
    (``by='lone'``)."""
    empty = events.iloc[0:0]
    if not len(events):
        return Crash(events, None, empty, empty, empty, "none")
    events = _aborts_after_a_symptom(events)
    causes = events[events["role"] == "cause"]
    cascade_all = events[events["role"] == "cascade"]
    if len(causes) and causes["code"].isin(list(TIME_LIMIT_CAUSE_CODES)).all():
        # a time limit ends a job that one rank's network or NCCL error had hung before it
        # (sparticlesteve/pytorch-nccl-test: task 10's "NET/IB : Got completion with error 12",
        # then nothing until SLURM's "CANCELLED … DUE TO TIME LIMIT"): that error is the failure
        lone = _lone_reporter(events, writers_seen, LONE_NCCL_CODES | HUNG_NCCL_CODES)
        limit = effective_times(events).loc[causes.index].min()
        if lone is not None and (pd.isna(limit) or pd.isna(lone["time"]) or lone["time"] < limit):
            first = _with_last_error(lone, events)
            return Crash(events, first, events.loc[[lone.name]], empty, empty, "lone")
    if not len(causes):
        silent = _silent_rank(events, ranks_seen or [])
        if silent is None:
            lone = _lone_reporter(events, writers_seen)
            if lone is None:
                return Crash(events, None, empty, cascade_all, empty, "none")
            first = _with_last_error(lone, events)
            return Crash(events, first, events.loc[[lone.name]], empty, empty, "lone")
        first = pd.Series({**{c: None for c in EVENT_COLUMNS}, "rank": silent, "kind": None,
                           "code": "silent", "time": pd.NaT, "role": "cause",
                           "strength": Strength.NONE,
                           "message": "left no error of its own while every other rank failed "
                                      "after it"})
        return Crash(events, first, empty, cascade_all, empty, "silent")
    timed = causes[causes["time"].notna()]
    eff = effective_times(events).loc[causes.index]
    key = causes.assign(_t=eff, _nat=eff.isna(), _nrc=~causes["root_cause"].astype(bool),
                        _neg=-causes["strength"].astype(int))
    key = key.sort_values(["_nat", "_t", "_nrc", "file", "lineno", "_neg"], kind="stable")
    first = key.iloc[0][EVENT_COLUMNS]
    if len(timed) and pd.notna(first["time"]):
        by = "time"
    elif bool(first["root_cause"]):
        by = "root_cause"
    else:
        by = "line_order"
    killer = _oom_killer_for(first, causes)
    if killer is not None:  # SIGKILL by the OOM killer: the OOM is the failure, and the
        first = _with_victim(killer, first)  # process it killed is said with it
    reason = _abort_reason(first, key)
    if reason is not None:  # an abort is how a C++ error ends a process: the error is the failure
        first = reason
    worker = _worker_error(first, key, events)
    if worker is not None:  # a Python exit whose error the worker printed above the record
        first = worker
    first = _with_ranked_report(first, key)
    first = _with_last_error(first, events)
    first = _with_warned_cause(first, events)
    first = _with_stated_message(first, key)
    first = _with_exit_status(first, key)
    first = _with_task_oom(first, key)
    first = _with_cancelled_host(first, events)
    # (each with torch's "Last error:" text and the NCCL WARN its process printed before it,
    # as the first one's message has them: the same failure on two ranks says the same twice)
    member = causes.apply(lambda e: _same_failure(
        _with_warned_cause(_with_last_error(e, events), events), first, window_s), axis=1) \
        if len(causes) else pd.Series([], dtype=bool)
    if first["code"] in HOST_OOM_CODES and len(causes):
        member |= causes.apply(lambda e: _oom_explains(first, e), axis=1)
    cluster = _without_launcher_command_rank(causes[member], first)
    independent = causes[~member]
    first = _with_sibling_code(first, cluster)
    failed_ranks = set(cluster["rank"].dropna().astype(int))
    # Cascade: symptoms anywhere but on the failed ranks themselves.
    casc = cascade_all[~(cascade_all["rank"].isin(list(failed_ranks)) & cascade_all["rank"].notna())]
    return Crash(events, first, cluster, casc, independent, by)


# an abort, or a launcher saying a worker died: neither names the error that caused it
ABORT_CODES = {"SIGABRT", "terminate", "ray_worker_died"}
SPECIFIC_KINDS = ("cuda_error", "xid", "ecc", "oom", "nccl_error", "mpi_error")


def _without_launcher_command_rank(cluster: pd.DataFrame, first: pd.Series) -> pd.DataFrame:
    """DeepSpeed's launcher prints the return code of the process that died with ``cmd``, the
    loop variable of its spawn loop, i.e. its *last* local rank's command (launch.py's
    sigkill_handler): when the failure names its own rank, that command's rank is not a
    failed rank."""
    if pd.isna(first["rank"]) or not len(cluster):
        return cluster
    said = cluster["line"].astype(str).str.contains(" exits with return code = ", regex=False)
    other = said & cluster["rank"].notna() & (cluster["rank"] != first["rank"])
    if not other.any():
        return cluster
    out = cluster.copy()
    out.loc[other, "rank"] = pd.NA
    return out


# how far under an NCCL error torch's "Last error:" text may be printed: another rank's
# traceback can interleave with it in a launcher's one stream (2 ranks: 8 lines in
# drill_nccl_duplicate_gpu's torchrun.log)
LAST_ERROR_LINES = 12


def _with_last_error(first: pd.Series, ordered: pd.DataFrame,
                     lines: int = LAST_ERROR_LINES) -> pd.Series:
    """An NCCL error ("unhandled cuda error", "ncclInvalidUsage: This usually reflects invalid
    usage of NCCL library.") with the text torch prints under it after "Last error:" ("Cuda
    failure 2 'out of memory'", "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device
    60") added to its message: the same writer's, or one of no known rank."""
    if first["kind"] != "nccl_error" or first["code"] in ("nccl_last_error", *NCCL_CONTEXT_CODES):
        return first
    same_rank = ordered["rank"].isna() | pd.isna(first["rank"]) | (ordered["rank"] == first["rank"])
    after = ordered[ordered["code"].isin(["nccl_last_error", *NCCL_CONTEXT_CODES])
                    & (ordered["file"] == first["file"]) & same_rank.fillna(False)
                    & (ordered["lineno"] > first["lineno"])
                    & (ordered["lineno"] - first["lineno"] <= lines)]
    if not len(after) or str(after.iloc[0]["message"]) in str(first["message"]):
        return first
    out = first.copy()
    out["message"] = f"{first['message']}; last error: {after.iloc[0]['message']}"
    return out


# NCCL's generic results, whose cause its own WARN line printed before them
GENERIC_NCCL_CODES = frozenset({"nccl_system", "nccl_internal", "nccl_unhandled_cuda"})
WARNED_BEFORE_LINES = 400  # how far before the generic error the process's WARN may be


def _with_warned_cause(first: pd.Series, ordered: pd.DataFrame,
                       lines: int = WARNED_BEFORE_LINES) -> pd.Series:
    """NCCL's generic "unhandled system error" with the WARN its process printed before it
    (same host and pid, NCCL's "host:pid:tid" prefix) added to its message: "NET/OFI Unable to
    register memory (type = 2) for device 3. RC: -22" (sparticlesteve/podman-nccl-testing, a
    Slingshot provider that cannot register GPU memory) says what failed."""
    if first["kind"] != "nccl_error" or str(first["code"]) not in GENERIC_NCCL_CODES:
        return first
    warns = ordered[ordered["code"].astype(str).str.startswith("nccl_warn")
                    & (ordered["file"] == first["file"])
                    & (ordered["lineno"] < first["lineno"])
                    & (first["lineno"] - ordered["lineno"] <= lines)]
    if pd.notna(first["pid"]):
        warns = warns[warns["pid"] == first["pid"]]
    elif pd.notna(first["host"]):
        warns = warns[warns["host"] == first["host"]]
    elif warns["message"].nunique() != 1:
        return first  # an unprefixed error: the one WARN every process before it printed
    if not len(warns) or str(warns.iloc[-1]["message"]) in str(first["message"]):
        return first
    out = first.copy()
    out["message"] = f"{first['message']}; NCCL WARN {warns.iloc[-1]['message']}"
    return out


# how far from an exception's bare class line its stated message may be printed: other
# processes' tracebacks interleave with it (torchrun's workers writing to one stream)
STATED_MESSAGE_LINES = 20


def _with_stated_message(first: pd.Series, ordered: pd.DataFrame,
                         lines: int = STATED_MESSAGE_LINES) -> pd.Series:
    """An exception line that is its class alone ("FileNotFoundError", its message torn off
    by interleaved output) with the message the same exception states nearby in the same
    file ("FileNotFoundError: [Errno 2] No such file or directory: …")."""
    if first["kind"] != "python" or first["message"] != first["code"]:
        return first
    near = ordered[(ordered["kind"] == "python") & (ordered["code"] == first["code"])
                   & (ordered["message"] != first["code"]) & (ordered["file"] == first["file"])
                   & ((ordered["lineno"] - first["lineno"]).abs() <= lines)]
    if not len(near):
        return first
    stated = near.iloc[(near["lineno"] - first["lineno"]).abs().argsort().iloc[0]]
    out = first.copy()
    out["message"], out["line"] = stated["message"], stated["line"]
    return out


NO_CODE_ERROR_LINES = 10


def _errors_before(first: pd.Series, rows: pd.DataFrame, near: pd.Series) -> pd.DataFrame:
    """The error rows of ``first``'s file where ``near``, on its rank or on no named rank."""
    out = rows[(rows["table"] == "errors") & (rows["file"] == first["file"]) & near]
    if pd.notna(first["rank"]):
        out = out[out["rank"].isna() | (out["rank"] == first["rank"])]
    return out


def _worker_log_errors(first: pd.Series, rows: pd.DataFrame) -> pd.DataFrame:
    """The errors of the worker a launcher's exit record names, printed after the record:
    Paddle's launcher prints the failed worker's log tail below its 'Container rank 0 status
    failed … code 1 log log/workerlog.0' line (PaddlePaddle/PaddleDetection#7380), or the
    worker's own log is another file of the bundle. On the record's rank or on no named rank."""
    out = rows[(rows["table"] == "errors") & ((rows["file"] != first["file"])
                                              | (rows["lineno"] > first["lineno"]))]
    if pd.notna(first["rank"]):
        out = out[out["rank"].isna() | (out["rank"] == first["rank"])]
    return out


def _worker_error(first: pd.Series, ordered: pd.DataFrame,
                  events: pd.DataFrame | None = None) -> pd.Series | None:
    """For a launcher's record of a worker that exited with code 1 (a Python exception):
    the specific error (a CUDA OOM, a CUDA/NCCL/ECC error) the worker's traceback printed
    earlier in the same file, on that rank or on no named rank — that is what failed; with
    none, the first local Python exception it printed there (``ZeroDivisionError: …``, a
    ``RuntimeError: … INTERNAL ASSERT FAILED``); with none, a port it could not bind, from
    all ``events``. The record's rank and host are kept where the error line names none."""
    if first["table"] != "exits" or first["code"] not in ("exit_1", "exit_2", "exit_None"):
        return None
    if first["code"] == "exit_None" and not bool(first["root_cause"]):  # a record without
        # the code (torchelastic's FAILED event): the worker's error file is logged just after
        # it as often as before; a launcher's "first process to do so" (Open MPI, Horovod)
        # after the job ended, below everything its worker printed
        near = (ordered["lineno"] - first["lineno"]).abs() <= NO_CODE_ERROR_LINES
    else:
        near = ordered["lineno"] < first["lineno"]
    before = _errors_before(first, ordered, near)
    if not len(before) and first["code"] == "exit_1":
        before = _worker_log_errors(first, ordered)
    specific = before[before["kind"].isin(SPECIFIC_KINDS)]
    if not len(specific):
        specific = before[(before["kind"] == "python") & (before["role"] == "cause")]
    if not len(specific) and events is not None and first["code"] == "exit_1":
        before = _errors_before(first, events, events["lineno"] < first["lineno"])
        specific = before[(before["kind"] == "python")
                          & before["message"].astype(str).str.contains(LOCAL_BIND_TEXT_RE)]
    if not len(specific):
        return None
    err = specific.sort_values("lineno", kind="stable").iloc[0][EVENT_COLUMNS].copy()
    for col in ("rank", "host", "time"):
        if pd.isna(err[col]) and pd.notna(first[col]):
            err[col] = first[col]
    return err


# torch's DataLoader worker on the signal that kills it (torch/csrc/DataLoader.cpp's handlers:
# "ERROR: Unexpected bus error encountered in worker. …", "… segmentation fault encountered in
# worker.", "… floating-point exception encountered in worker.")
WORKER_OWN_TEXT = "encountered in worker"


def _with_ranked_report(first: pd.Series, ordered: pd.DataFrame) -> pd.Series:
    """A signal that names no rank or host, printed by a rank's child process (a DataLoader
    worker's own "ERROR: Unexpected bus error encountered in worker. This might be caused by
    insufficient shared memory (shm)."), as the first rank that reports the same signal after
    it in that file ("DataLoader worker (pid 48170) is killed by signal: Bus error."), the
    child's words kept (chrisindris/LLaMA-Factory-LFS's kn171 job: five ranks' workers)."""
    if (first["kind"] != "signal" or first["table"] != "errors" or pd.notna(first["rank"])
            or as_str(first["host"]) is not None
            or WORKER_OWN_TEXT not in str(first["message"] or "")):
        return first
    same = ordered[(ordered["code"] == first["code"]) & ordered["rank"].notna()
                   & (ordered["file"] == first["file"]) & (ordered["lineno"] > first["lineno"])]
    if not len(same):
        return first
    ranked = same.sort_values("lineno", kind="stable").iloc[0][EVENT_COLUMNS].copy()
    if str(first["message"]) not in str(ranked["message"]):
        ranked["message"] = f"{ranked['message']}; its worker: {first['message']}"
    return ranked


def _with_exit_status(first: pd.Series, ordered: pd.DataFrame, lines: int = 5) -> pd.Series:
    """A process reported killed with no exit code (a shell's "Killed") with the exit status
    the next lines give for it ("Exit code: 137"): the launcher's words are the message."""
    if first["table"] != "exits" or not str(first["message"] or "").startswith("exited"):
        return first
    after = ordered[(ordered["table"] == "exits") & (ordered["code"] == first["code"])
                    & (ordered["file"] == first["file"]) & (ordered["lineno"] > first["lineno"])
                    & (ordered["lineno"] - first["lineno"] <= lines)
                    & ~ordered["message"].astype(str).str.startswith("exited")]
    if not len(after):
        return first
    out = first.copy()
    out["message"] = after.sort_values("lineno").iloc[0]["message"]
    return out


def _with_task_oom(first: pd.Series, ordered: pd.DataFrame, lines: int = 10) -> pd.Series:
    """slurmstepd's count of OOM kills in a step ("Detected 1 oom-kill event(s) in
    StepId=…") with srun's line naming the task it killed ("srun: error: HOST: task 0: Out Of
    Memory", printed with it): one failure; srun's line names where, so it leads."""
    if first["code"] != "slurm_oom_kill":
        return first
    near = ordered[(ordered["code"] == "srun_task_oom") & (ordered["file"] == first["file"])
                   & ((ordered["lineno"] - first["lineno"]).abs() <= lines)]
    if as_str(first["host"]) is not None:
        near = near[near["host"].isna() | (near["host"] == first["host"])]
    if not len(near):
        return first
    out = near.iloc[0][EVENT_COLUMNS].copy()
    out["message"] = f"{out['message']} ({first['message']})"
    return out


JOB_ID_RE = re.compile(r"(?:Job |Step |StepId=|JOB |STEP )(?P<id>\d+)")


def _with_cancelled_host(first: pd.Series, events: pd.DataFrame, lines: int = 5) -> pd.Series:
    """slurmstepd's memory-limit kill of a job ("Job 7518 exceeded memory limit …, being
    killed"), which names no host, with the host of the same job's "*** JOB 7518 ON HOST
    CANCELLED ***" line printed just after it: that is where the job was killed."""
    if first["code"] != "slurm_mem_limit" or as_str(first["host"]) is not None:
        return first
    job = JOB_ID_RE.search(str(first["message"] or ""))
    near = events[(events["code"] == "slurm_cancelled") & (events["file"] == first["file"])
                  & (events["lineno"] > first["lineno"])
                  & (events["lineno"] - first["lineno"] <= lines) & events["host"].notna()]
    for _, c in near.sort_values("lineno", kind="stable").iterrows():
        said = JOB_ID_RE.search(str(c["message"] or ""))
        if job and said and said["id"] == job["id"]:
            out = first.copy()
            out["host"] = c["host"]
            return out
    return first


def _with_sibling_code(first: pd.Series, cluster: pd.DataFrame) -> pd.Series:
    """A launcher's record cut before its exit code (torchrun's Root Cause pasted without its
    ``exitcode`` line) takes the kind of the exit recorded at the same time in the same failure
    (torchrun's other record of that second), and says so."""
    if first["table"] != "exits" or first["code"] != "exit_None" or pd.isna(first["time"]):
        return first
    same = cluster[(cluster["table"] == "exits") & (cluster["time"] == first["time"])
                   & (cluster["code"] != "exit_None")]
    if not len(same):
        return first
    sib = same.iloc[0]
    out = first.copy()
    out["kind"] = sib["kind"]
    who = f"rank {int(sib['rank'])}" if pd.notna(sib["rank"]) else "another worker"
    out["message"] = f"exit code not shown; {who} at the same time: {sib['message']}"
    return out


def _abort_reason(first: pd.Series, ordered: pd.DataFrame, lines: int = 40) -> pd.Series | None:
    """For an abort (SIGABRT, 'Fatal Python error: Aborted', 'terminate called') that names
    no error of its own: the specific error (CUDA, Xid, ECC, OOM, a local NCCL error) printed
    within ``lines`` lines of it in the same file, on the same rank or on no named rank."""
    if first["code"] not in ABORT_CODES:
        return None
    near = ordered[ordered["kind"].isin(SPECIFIC_KINDS) & (ordered["file"] == first["file"])
                   & ((ordered["lineno"] - first["lineno"]).abs() <= lines)]
    if pd.notna(first["rank"]):
        near = near[near["rank"].isna() | (near["rank"] == first["rank"])]
    return near.iloc[0][EVENT_COLUMNS] if len(near) else None


def _aborts_after_a_symptom(events: pd.DataFrame, lines: int = 40) -> pd.DataFrame:
    """An abort ('terminate called after throwing …', SIGABRT) that names no error of its own,
    printed within ``lines`` lines after a peer's symptom in the same file and process (NCCL's
    'remote process exited or there was a network error'), is how that symptom ended the
    process: a cascade event too, not the first failure (stanford_alpaca#207)."""
    causes = events[(events["role"] == "cause") & events["code"].isin(list(ABORT_CODES))]
    symptoms = events[events["role"] == "cascade"]
    if not len(causes) or not len(symptoms):
        return events
    demote = []
    for idx, e in causes.iterrows():
        if _abort_reason(e, events[events["role"] == "cause"], lines) is not None:
            continue  # a local error it names: that error is the failure
        near = symptoms[(symptoms["file"] == e["file"]) & (symptoms["lineno"] <= e["lineno"])
                        & (e["lineno"] - symptoms["lineno"] <= lines)]
        if pd.notna(e["rank"]):
            near = near[near["rank"].isna() | (near["rank"] == e["rank"])]
        if len(near):
            demote.append(idx)
    if not demote:
        return events
    events = events.copy()
    events.loc[demote, "role"] = "cascade"
    return events


SAME_ERROR_KINDS = ("python", "cuda_error", "nccl_error")


def _same_failure(e: pd.Series, first: pd.Series, window_s: float) -> bool:
    if e["source"] == first["source"] and e["line"] == first["line"]:
        return True
    near = True
    if pd.notna(e["time"]) and pd.notna(first["time"]):
        dt = (e["time"] - first["time"]).total_seconds()
        near = -window_s <= dt <= window_s
    if pd.notna(e["rank"]) and pd.notna(first["rank"]) and int(e["rank"]) == int(first["rank"]):
        return near
    same_host = (e["host"] is not None and first["host"] is not None and not pd.isna(e["host"])
                 and not pd.isna(first["host"]) and e["host"] == first["host"])
    if same_host:
        return near
    # The scheduler lost a node ("srun: error: Node failure on HOST") and the failure itself
    # names no host: that node is where it happened.
    if (e["code"] == "slurm_node_failure" and as_str(e["host"]) is not None and near
            and pd.isna(first["rank"]) and as_str(first["host"]) is None):
        return True
    # Every rank failing the same local way at once (e.g. all ranks OOM on one batch).
    if e["kind"] == first["kind"] == "oom" and near:
        return True
    # Every rank raising the same Python exception at once: a deterministic error of the code
    # or its data on each of them (Paddle workerlogs' ReshapeOp ValueError on all four ranks),
    # which nothing in the logs orders. So with the same local CUDA or NCCL error word for word
    # (Paddle's "Nccl error, unhandled cuda error (at …collective_helper.cc:80)" on two ranks
    # building the communicator). Word for word but each rank's own numbers: its device in
    # "Expected all tensors to be on the same device, but found at least two devices, cpu and
    # cuda:6!" (ILoveSorasakiHina/miles-credit train_log.txt, all eight ranks).
    if (e["kind"] == first["kind"] and e["kind"] in SAME_ERROR_KINDS and near
            and pd.notna(e["rank"]) and pd.notna(first["rank"]) and e["message"]
            and _numbers_out(e["message"]) == _numbers_out(first["message"])):
        return True
    # A Python exception naming no rank or host, then a launcher's record, later in the same
    # file, of a worker that exited with code 1 (how a Python exception ends a worker): that
    # worker raised it (DeepSpeed's "[…'--local_rank=15'…] exits with return code = 1",
    # torchrun's "failed (exitcode: 1) local_rank: 0"). So with the CUDA, NCCL or OOM error
    # torch raises as one (Z-Zheng/ChangeStar#5: "RuntimeError: NCCL error in: …
    # ProcessGroupNCCL.cpp:911, unhandled system error", then "failed (exitcode: 1)
    # local_rank: 0 (pid: 31335)"), where the record names its worker's pid (DeepSpeed's
    # names the command of its last local rank, whichever failed: an OOM's device says more).
    if ((first["kind"] == "python" or (_raised(first) and pd.notna(e["pid"])))
            and pd.isna(first["rank"]) and as_str(first["host"]) is None
            and e["table"] == "exits" and e["code"] == "exit_1" and near
            and e["file"] == first["file"] and e["lineno"] > first["lineno"]):
        return True
    # A line naming no rank or host, then the same error with a rank a few lines on (a Python
    # traceback, then "[Rank 1] NCCL watchdog thread terminated with exception: <same>").
    if (pd.isna(first["rank"]) and as_str(first["host"]) is None and near
            and e["file"] == first["file"] and 0 < e["lineno"] - first["lineno"] <= 20
            and e["kind"] == first["kind"] and _same_words(e["message"], first["message"])):
        return True
    return False


# the last line of a Python traceback: the exception's (dotted) class, then its message
# ("RuntimeError: NCCL error in: …", "torch.cuda.OutOfMemoryError: CUDA out of memory. …",
# "torch.distributed.DistBackendError: NCCL error in: …")
EXCEPTION_LINE_RE = re.compile(r"^\s*(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception):\s")
# the kinds of error torch raises as a Python exception in the worker
RAISED_KINDS = ("python", "nccl_error", "cuda_error", "oom")


def _raised(e: pd.Series) -> bool:
    """Whether an error is a Python exception the worker raised: a CUDA, NCCL or OOM error on
    its traceback's exception line (or any of ``python`` kind)."""
    return e["kind"] in RAISED_KINDS and EXCEPTION_LINE_RE.match(str(e["line"] or "")) is not None


NUMBER_RE = re.compile(r"\d+")


def _numbers_out(message: Any) -> str:
    """An error message with its numbers blanked: what two ranks' copies of one error share."""
    return NUMBER_RE.sub("#", str(message or ""))


def _same_words(a: Any, b: Any) -> bool:
    """Two error messages that say the same ("CUDA error: uncorrectable ECC error encountered"
    inside a longer one counts)."""
    a, b = str(a or "").strip(), str(b or "").strip()
    return bool(a and b) and (a in b or b in a)


HOST_OOM_CODES = {"host_oom_killer", "slurm_oom_kill", "slurm_mem_limit", "srun_task_oom",
                  "ray_oom"}


def _oom_killer_for(e: pd.Series, causes: pd.DataFrame) -> pd.Series | None:
    """The OOM-killer line that explains a SIGKILL exit: same pid, rank or host, or a line that
    names no process at all (slurmstepd's 'Detected 1 oom_kill event')."""
    if e["code"] != "SIGKILL":
        return None
    for _, o in causes[causes["code"].isin(HOST_OOM_CODES)].iterrows():
        if _oom_explains(o, e):
            return o[EVENT_COLUMNS]
    return None


VICTIM_WORDS = 3  # words, at most, of a kill line that says only the signal ("Killed (SIGKILL)")


def _with_victim(killer: pd.Series, killed: pd.Series) -> pd.Series:
    """The OOM killer's event with the line of the process it killed added to its message
    where that line says more than the signal ("Detected 1 oom_kill event in StepId=…;
    killed: DataLoader worker (pid 933394) is killed by signal: Killed.")."""
    said, victim = str(killer["message"] or ""), str(killed["message"] or "").strip()
    if victim in said or len(victim.split()) <= VICTIM_WORDS:
        return killer
    out = killer.copy()
    out["message"] = f"{said}; killed: {victim}" if said else victim
    return out


def _oom_explains(o: pd.Series, e: pd.Series) -> bool:
    """OOM-killer line ``o`` names the process that exit ``e`` reports killed by SIGKILL."""
    if e["code"] != "SIGKILL":
        return False
    if pd.notna(o["pid"]) and pd.notna(e["pid"]):
        return int(o["pid"]) == int(e["pid"])
    if pd.notna(o["rank"]) and pd.notna(e["rank"]):
        return int(o["rank"]) == int(e["rank"])
    if pd.notna(o["host"]) and pd.notna(e["host"]):
        return bool(o["host"] == e["host"])
    return pd.isna(o["host"]) and pd.isna(o["pid"]) and pd.isna(o["rank"])


# NCCL WARN lines that name the far end of a link that failed: the peer refused the connection
# (nothing listens there: that machine is the broken one, stas00/ml-engineering's
# slurm-users.md, pytorch#38702), or InfiniBand gave up retrying to it (status 12,
# IBV_WC_RETRY_EXC_ERR: the link between the reporting host and the peer, NVIDIA/nccl#1405,
# #1814).
PEER_REFUSED_RE = re.compile(r"Connect to (?P<peer>[\w.\-]+)<\d+> failed ?: Connection refused")
IB_RETRY_RE = re.compile(r"Got completion from peer (?P<peer>[\w.\-]+)<\d+> with "
                         r"(?:error |status=)12\b")
NCCL_WARN_CODES = ("nccl_warn", "nccl_warn_net")


def link_fault_hosts(events: pd.DataFrame) -> list[str]:
    """The machines NCCL's own WARN lines name at a failed link: a peer that refused the
    connection; for an InfiniBand retry error, the reporting host and its peer. [] if none."""
    if not len(events):
        return []
    warns = events[(events["table"] == "errors") & events["code"].isin(NCCL_WARN_CODES)]
    hosts: list[str] = []
    for _, e in warns.iterrows():
        msg = str(e["message"] or "")
        if m := PEER_REFUSED_RE.search(msg):
            hosts.append(m["peer"])
        elif (m := IB_RETRY_RE.search(msg)) and is_host(e["host"]):
            hosts += [str(e["host"]), m["peer"]]
        elif LOCAL_DEVICE_FAULT_RE.search(msg) and is_host(e["host"]):
            hosts.append(str(e["host"]))
    return sorted(dict.fromkeys(hosts))


# a verbs or fabric call that failed on the reporting machine's own device: "Call to
# ibv_modify_qp failed with error No such device" (turingaicloud/quickstart#6, both nodes), "NET/OFI
# Unable to register memory (type = 2) for device 3" (sparticlesteve/podman-nccl-testing)
LOCAL_DEVICE_FAULT_RE = re.compile(
    r"Call to ibv_\w+ failed with error|NET/OFI Unable to register memory")


# NCCL errors of a process's own call (a system call, NCCL's internals), which a peer's loss
# also causes on every rank that talks to it: a cascade, unless one rank alone reports them
LONE_NCCL_CODES = {"nccl_system", "nccl_internal"}
# a transport's failure NCCL reports before a hang (an InfiniBand completion error): the one
# rank reporting it is the failure where a time limit then ended the hung job
HUNG_NCCL_CODES = {"nccl_warn_net"}


def _lone_reporter(events: pd.DataFrame, writers_seen: int,
                   codes: set[str] = LONE_NCCL_CODES) -> pd.Series | None:
    """With no cause: the first of one rank's own NCCL errors (``LONE_NCCL_CODES``) where the
    logs show other ranks and none of them reported anything (HPE's MLPerf n4 run: rank 30's
    proxy failing NCCL's Close while its 31 peers finished), else None. A peer that died
    would have left its peers' symptoms too."""
    if writers_seen < 2:
        return None
    # (the scheduler's cancel is no rank's report, whatever task prefix its line bears)
    ranked = events[events["rank"].notna()
                    & ~events["code"].isin([*TIME_LIMIT_CAUSE_CODES, *SCHEDULER_STOP_CODES])]
    if not len(ranked):  # no rank named: one machine's NCCL lines (its "host:pid:tid" prefix)
        nccl = events[(events["kind"] == "nccl_error") & events["host"].notna()]
        if not len(nccl) or nccl["host"].nunique() != 1:
            return None
        ranked = nccl
    elif ranked["rank"].nunique() != 1:
        return None
    own = ranked[(ranked["kind"] == "nccl_error") & ranked["code"].isin(list(codes))]
    return own.iloc[0].copy() if len(own) else None


def writers_seen(incident: Incident) -> int:
    """How many processes the logs show writing: ranks, or srun tasks (``srun -l``'s ``N: ``)."""
    tasks = [h for h in incident.hosts if h.startswith(SYNTHETIC_HOST_PREFIX)]
    return max(len(incident.ranks), len(tasks))


def _silent_rank(events: pd.DataFrame, ranks_seen: list[int]) -> int | None:
    if len(ranks_seen) < 2:
        return None
    reported = set(events["rank"].dropna().astype(int))
    silent = [r for r in ranks_seen if r not in reported]
    if len(silent) == 1 and len(reported) >= len(ranks_seen) - 1:
        return silent[0]
    return None


def cascade_table(crash: Crash) -> pd.DataFrame:
    """Per rank (or host, when lines carry no rank) of the cascade: its first symptom, how long
    after the first failure, and what it said."""
    casc = crash.cascade
    cols = ["rank", "host", "first_time", "after_s", "kind", "code", "message", "lines"]
    if not len(casc):
        return pd.DataFrame(columns=cols)
    lane = casc["rank"].astype("string").fillna("host " + casc["host"].fillna("?"))
    t0 = crash.first["time"] if crash.first is not None else pd.NaT
    out = []
    for _, g in casc.groupby(lane, sort=False):
        e = g.iloc[0]
        after = (e["time"] - t0).total_seconds() if pd.notna(e["time"]) and pd.notna(t0) else None
        out.append((e["rank"], e["host"], e["time"], after, e["kind"], e["code"], e["message"],
                    len(g)))
    df = pd.DataFrame(out, columns=cols)
    return df.sort_values(["first_time", "rank"], na_position="last").reset_index(drop=True)


# A failure kind in a figure's label: a few words, not the fact id.
KIND_LABELS = {"cuda_error": "CUDA error", "oom": "out of memory", "nccl_error": "NCCL error",
               "mpi_error": "MPI error",
               "ecc": "ECC error", "signal": "fatal signal", "python": "Python error",
               "collective_timeout": "collective timeout", "nccl_teardown": "NCCL teardown",
               "process_taken_down": "process taken down",
               "watchdog_terminated": "watchdog terminated"}


def _lane(host: Any, rank: Any, rank_host: dict[int, str], alias: dict[str, str]) -> str:
    """A host read from the logs (an srun task's through ``alias``); else the host its rank
    ran on; else 'rank N'."""
    if is_host(host):
        return str(host)
    if as_str(host) in alias:
        return alias[str(host)]
    r = as_int(rank)
    if r is not None:
        return rank_host.get(r, f"rank {r}")
    return "unknown host"


def timeline_frame(crash: Crash, rank_host: dict[int, str] | None = None,
                   task_host: dict[str, str] | None = None) -> pd.DataFrame:
    """Events placed for the per-host timeline figure: lane (a real host — an srun task name
    through ``task_host``, else the rank's host from ``rank_host``, else the rank), x (time, or
    line position when times are missing), role, label (a few words), and whether it is the
    first failure."""
    ev = crash.events
    cols = ["lane", "x", "time", "role", "label", "first"]
    if not len(ev):
        return pd.DataFrame(columns=cols)
    hosts, alias = rank_host or {}, task_host or {}
    lane = pd.Series([_lane(h, r, hosts, alias)
                      for h, r in zip(ev["host"], ev["rank"], strict=True)],
                     index=ev.index, dtype="string")
    timed = ev["time"].dropna()
    use_time = timed.nunique() >= 2 and len(timed) * 2 >= len(ev)
    if use_time:
        x = ev["time"]
    else:  # position in the logs: file, then line
        x = ev[["file", "lineno"]].apply(tuple, axis=1).rank(method="dense").astype(float)
    first = pd.Series(False, index=ev.index)
    if crash.first is not None and crash.first.get("source") is not None:
        first = (ev["source"] == crash.first["source"]) & (ev["line"] == crash.first["line"])
    label = ev["code"].fillna(ev["kind"]).astype(str)
    label = label.map(lambda v: KIND_LABELS.get(v, v))
    label = label.where(ev["kind"] != "xid", "Xid " + ev["code"].astype(str))
    out = pd.DataFrame({"lane": lane, "x": x, "time": ev["time"], "role": ev["role"],
                        "label": label, "first": first})
    if use_time:
        out = out[out["x"].notna()]
    return out.reset_index(drop=True)



def xid_table(incident: Incident) -> pd.DataFrame:
    """One row per (host, Xid code): when first seen, how often, and the catalog's meaning,
    origin, NVIDIA's immediate action, what to take out of service and what to run next."""
    e = incident.errors
    x = e[e["kind"] == "xid"]
    cols = ["host", "xid", "first_time", "lines", "meaning", "origin", "nvidia_action",
            "take_out", "next_step"]
    if not len(x):
        return pd.DataFrame(columns=cols)
    out = []
    for (host, code), g in x.groupby([x["host"].fillna("?"), x["code"]], sort=False):
        info = xid_info(int(code) if str(code).isdigit() else None)
        t = g["time"].dropna()
        out.append((host, int(code) if str(code).isdigit() else code,
                    t.min() if len(t) else pd.NaT, len(g), info.meaning, info.origin,
                    info.resolution, info.scope, info.next_step))
    return pd.DataFrame(out, columns=cols)
