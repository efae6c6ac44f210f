"""GPU crash: which rank and host failed first, how, what it cost, and how often to checkpoint.

One dead rank makes every other rank fail too: its peers' next collective fails (NCCL
``ncclRemoteError``, gloo ``Connection reset by peer``) or times out, and the launcher kills the
survivors. Those lines are loud and numerous; they are the *cascade*. The *cause* is the first
local failure in time: a driver Xid or ECC error, a CUDA error, an OOM, a crash signal, a Python
exception — or, when a rank was killed without a word, torchrun's "Root Cause (first observed
failure)" record.

Every failure line becomes an event (``failure_events``) with a role: ``cause`` (a local
failure), ``cascade`` (a symptom of someone else's failure) or ``context`` (an exit that only
repeats its rank's own error, an Xid that only follows another Xid). The first cause in time
(torchrun's root cause, then line order, when lines carry no time) is the primary failure; the
other causes on the same host or rank (an Xid and the CUDA error it caused) join it.

Checkpoint interval (Young 1974, Daly 2006): with save cost δ and mean time between failures M,
the interval that minimises expected lost time is τ ≈ sqrt(2·δ·M) (Daly's higher-order form:
τ = sqrt(2δM)·[1 + ⅓·sqrt(δ/2M) + ⅑·(δ/2M)] − δ). The expected fraction of time lost to saving
and recomputing is about δ/τ + τ/(2M).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..incident import Incident
from ..parse.errors import oom_figures
from ..parse.xid import xid_info
from ..report import Action, Finding, Report, evidence, ranked
from .common import input_findings, is_host, last_progress, rank_hosts

FACT_KEYS = ("failed_ranks", "failed_hosts", "error_kind", "error_message", "xid_codes",
             "first_failure_time", "last_iteration", "last_checkpoint_iteration",
             "lost_iterations", "lost_hours", "checkpoint_interval_recommended")

DEFAULT_SAVE_S = 40.0  # BLOOM-176B: "A checkpoint is saved in 40 secs"
DEFAULT_MTBF_HOURS = 168.0  # BLOOM-176B: "Every week or so … one of the gpus dies"
SAME_FAILURE_WINDOW_S = 120.0  # causes this close to the first one, on its host, are one failure
HANG_WARN_S = 300.0  # a job that took longer than this to exit after the failure "hung"

EVENT_COLUMNS = ["file", "lineno", "time", "rank", "host", "pid", "kind", "code", "message",
                 "role", "strength", "root_cause", "table", "source", "line"]

# nccl_error codes that are a local failure (the rank's own GPU or program), not a peer's.
LOCAL_NCCL_CODES = {"nccl_unhandled_cuda", "nccl_warn_cuda", "nccl_invalid_usage", "gloo_mismatch",
                    "nccl_last_error"}
# signal codes that are the launcher or scheduler tearing survivors down.
TEARDOWN_SIGNAL_CODES = {"launcher_sigterm", "launcher_received_signal", "launcher_kill",
                         "slurm_cancelled", "ray_actor_died"}
STRONG_SIGNAL_CODES = {"slurm_node_failure": 3, "slurm_time_limit": 1, "slurm_preemption": 1,
                       "terminate": 1, "ray_worker_died": 1}
TEARDOWN_SIGNALS = {"SIGTERM", "SIGINT", "SIGHUP"}
# A Python exception that reports a peer or the network rather than a local fault.
CASCADE_TEXT_RE = re.compile(
    r"Dist(?:Backend|Network|Store)Error|Connection (?:reset|closed|refused)|Broken pipe|"
    r"[Tt]imed out|Timeout|NCCL|[Gg]loo|recvValue|Socket|socket|peer|ProcessGroup|"
    r"TCPStore|rendezvous|ChildFailedError", )
# CUDA errors that usually mean the GPU (hardware, driver) rather than the program.
HARDWARE_CUDA_RE = re.compile(
    r"unknown error|uncorrectable ECC|ECC error|unspecified launch failure|"
    r"devices? (?:is |are )?unavailable|device not ready|GPU is lost|fallen off|"
    r"hardware stack error|launch timed out", re.IGNORECASE)
PROGRAM_CUDA_RE = re.compile(
    r"illegal memory access|device-side assert|misaligned address|invalid argument|"
    r"invalid configuration|illegal instruction|no kernel image", re.IGNORECASE)
WATCHDOG_FRAME_RE = re.compile(r"workCleanupLoop|watchdogHandler|ncclCommWatchdog|"
                               r"finishedGPUExecution|CUDAEvent\.h")
SOURCE_RE = re.compile(r"^(?P<file>.*?):(?P<line>\d+)(?:#.*)?$")


# --- events ------------------------------------------------------------------------------------

def _int(v: Any) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


def _str(v: Any) -> str | None:
    return None if v is None or v is pd.NA or pd.isna(v) else str(v)


def _split_source(src: str | None, files: dict[str, int]) -> tuple[int, int]:
    if not src:
        return (10**6, 0)
    m = SOURCE_RE.match(str(src))
    if not m:
        return (files.get(str(src), 10**6), 0)
    f = m["file"].split("#entry", 1)[0]
    return (files.setdefault(f, len(files)), int(m["line"]))


def _error_role(kind: str, code: str, message: str) -> tuple[str, int]:
    """(role, strength) of one ``errors`` row."""
    if kind == "xid":
        info = xid_info(_int(code) if code and code.isdigit() else None)
        return ("context", 0) if info.cascade else ("cause", 3)
    if kind == "ecc":
        return "cause", 3
    if kind in ("cuda_error", "oom"):
        return "cause", 2
    if kind == "nccl_error":
        return ("cause", 2) if code in LOCAL_NCCL_CODES else ("cascade", 0)
    if kind == "signal":
        if code in TEARDOWN_SIGNAL_CODES:
            return "cascade", 0
        return "cause", STRONG_SIGNAL_CODES.get(code, 2)
    if kind == "python":
        return ("cascade", 0) if CASCADE_TEXT_RE.search(f"{code} {message}") else ("cause", 2)
    return "cause", 1


# How launchers word an exit, to quote it as printed (people search for these words).
EXIT_WORDS_RE = re.compile(
    r"failed \(exitcode: -?\d+\)|exits with return code = -?\d+|Exited with exit code \d+|"
    r"exited on signal \d+ \([^)]*\)|died with <Signals\.\w+: \d+>|task \d+: [A-Z][\w ]+")


def _exit_message(exitcode: int | None, signal: str | None, line: str | None = None) -> str:
    """The launcher's own words for the exit (``failed (exitcode: -9)``, ``exits with return
    code = -11``), else torchrun's ``exitcode: N``; then the signal it means."""
    m = EXIT_WORDS_RE.search(line or "")
    said = m.group(0) if m else (f"exitcode: {exitcode}" if exitcode is not None else "exited")
    return f"{said} ({signal})" if signal and signal not in said else said


def failure_events(incident: Incident) -> pd.DataFrame:
    """Every failure line (errors, exits, collective timeouts) as one table, with its role
    (cause | cascade | context) and strength, ranks filled in from pids and hosts where a line
    names none. Sorted by time, then by position in its file."""
    files = {f: i for i, f in enumerate(incident.account.get("file_list", []))}
    rows: list[dict[str, Any]] = []
    for r in incident.errors.itertuples(index=False):
        f, ln = _split_source(r.source, files)
        role, strength = _error_role(str(r.kind), _str(r.code) or "", _str(r.message) or "")
        rows.append(dict(file=f, lineno=ln, time=r.time, rank=_int(r.rank), host=_str(r.host),
                         pid=_int(r.pid), kind=str(r.kind), code=_str(r.code),
                         message=_str(r.message), role=role, strength=strength,
                         root_cause=False, table="errors", source=r.source, line=r.line))
    c = incident.collectives
    for r in c[c["state"] == "timed_out"].itertuples(index=False):
        f, ln = _split_source(r.source, files)
        op = _str(r.op_type) or "a collective"
        rows.append(dict(file=f, lineno=ln, time=r.time, rank=_int(r.rank), host=_str(r.host),
                         pid=None, kind="nccl_error", code="collective_timeout",
                         message=f"timed out in {op}", role="cascade", strength=0,
                         root_cause=False, table="collectives", source=r.source, line=r.line))
    ex = incident.exits
    for r in ex.itertuples(index=False):
        f, ln = _split_source(r.source, files)
        code, sig = _int(r.exitcode), _str(r.signal)
        if code == 0 and not sig:
            continue
        rows.append(dict(file=f, lineno=ln, time=r.time, rank=_int(r.rank), host=_str(r.host),
                         pid=_int(r.pid), kind="signal" if sig else ("python" if code == 1
                                                                     else "exit"),
                         code=sig or f"exit_{code}", message=_exit_message(code, sig, _str(r.line)),
                         role="exit", strength=1,
                         root_cause=False if pd.isna(r.root_cause) else bool(r.root_cause),
                         table="exits", source=r.source, line=r.line,
                         local_rank=_int(r.local_rank)))
    ev = pd.DataFrame(rows, columns=[*EVENT_COLUMNS, "local_rank"])
    if not len(ev):
        return ev[EVENT_COLUMNS]
    _fill_ranks(ev, incident)
    _init_failure_roles(ev, incident)
    _cascade_xid_roles(ev)
    _exit_roles(ev)
    ev["time"] = pd.to_datetime(ev["time"], errors="coerce")
    ev = ev.sort_values(["time", "file", "lineno"], na_position="last", kind="stable")
    return ev[EVENT_COLUMNS].reset_index(drop=True)


INIT_NCCL_CODES = {"nccl_system", "nccl_internal"}


def _init_failure_roles(ev: pd.DataFrame, incident: Incident) -> None:
    """NCCL's 'unhandled system/internal error' usually follows a peer that died; before the
    first training step (no iteration or progress line) with no other cause, it is the failure
    itself: the communicator could not be set up (network, firewall, IB/RoCE config)."""
    if (ev["role"] == "cause").any() or len(incident.iterations) or len(incident.progress):
        return
    init = ev["code"].isin(list(INIT_NCCL_CODES))
    ev.loc[init, ["role", "strength"]] = ["cause", 1]


def _cascade_xid_roles(ev: pd.DataFrame) -> None:
    """Xids that follow another Xid (45: 'caused by previous Xid 149') are context; when the
    Xid they follow is not in the logs and nothing else failed, they are the GPU failure we
    have: the first of them stands for it."""
    if (ev["role"] == "cause").any():
        return
    xids = ev.index[(ev["kind"] == "xid") & (ev["role"] == "context")]
    if len(xids):
        ev.loc[xids[0], ["role", "strength"]] = ["cause", 1]


def _fill_ranks(ev: pd.DataFrame, incident: Incident) -> None:
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
    host_of = rank_hosts(incident)
    # one machine (or none named): torchrun's local rank is the rank
    one_node = len([h for h in incident.hosts if is_host(h)]) <= 1
    ranks, hosts = [], []
    for r in ev.itertuples(index=False):
        rank = int(r.rank) if known(r.rank) else None
        if rank is None and known(r.pid):
            rank = by_pid.get(int(r.pid))
        if rank is None and known(r.host) and known(r.local_rank):
            rank = by_local.get((str(r.host), int(r.local_rank)))
        if rank is None and known(r.local_rank) and one_node:
            rank = int(r.local_rank)
        host = str(r.host) if is_host(r.host) else None
        if host is None and rank is not None:
            host = host_of.get(rank)
        if host is None and known(r.host):
            host = str(r.host)  # an srun task id: who wrote it, never a host to drain
        ranks.append(rank)
        hosts.append(host)
    ev["rank"] = pd.array(ranks, dtype="Int64")
    ev["host"] = pd.array(hosts, dtype="string")


def _exit_roles(ev: pd.DataFrame) -> None:
    """An exit repeats its rank's own error (context), follows a peer's failure (cascade), or is
    the only thing known about a rank that died (cause: killed without a word)."""
    errs = ev[ev["role"] != "exit"]
    for i in ev.index[ev["role"] == "exit"]:
        e = ev.loc[i]
        if e["code"] in TEARDOWN_SIGNALS:
            ev.loc[i, ["role", "strength"]] = ["cascade", 0]
            continue
        same = errs.iloc[0:0]
        if not pd.isna(e["rank"]):
            same = errs[errs["rank"] == e["rank"]]
        elif e["host"] is not None and not pd.isna(e["host"]):
            same = errs[errs["host"] == e["host"]]
        if (same["role"] == "cause").any():
            ev.loc[i, ["role", "strength"]] = ["context", 0]
        elif (same["role"] == "cascade").any():
            ev.loc[i, ["role", "strength"]] = ["cascade", 0]
        else:
            ev.loc[i, ["role", "strength"]] = ["cause", 2 if e["root_cause"] else 1]


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
    (it was printed no later), else of the last timed line before it."""
    t = pd.to_datetime(events["time"], errors="coerce")
    if t.notna().all() or t.isna().all():
        return t
    order = events.assign(_t=t).sort_values(["file", "lineno"], kind="stable")
    filled = order.groupby("file", sort=False)["_t"].transform(lambda s: s.bfill().ffill())
    return filled.reindex(events.index)


def first_failure(events: pd.DataFrame, window_s: float = SAME_FAILURE_WINDOW_S,
                  ranks_seen: list[int] | None = None) -> Crash:
    """The first cause in time (torchrun's root cause, then line order, when times are
    missing); the causes on its host/rank within ``window_s`` join it; cascade events are the
    symptoms on other ranks. With no cause at all, a rank seen in the logs that reported
    nothing while every other rank reported a cascade is named (``by='silent'``)."""
    empty = events.iloc[0:0]
    if not len(events):
        return Crash(events, None, empty, empty, empty, "none")
    causes = events[events["role"] == "cause"]
    cascade_all = events[events["role"] == "cascade"]
    if not len(causes):
        silent = _silent_rank(events, ranks_seen or [])
        if silent is None:
            return Crash(events, None, empty, cascade_all, empty, "none")
        first = pd.Series({**{c: None for c in EVENT_COLUMNS}, "rank": silent, "kind": None,
                           "code": "silent", "time": pd.NaT, "role": "cause", "strength": 0,
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
    if killer is not None:  # SIGKILL by the OOM killer: the OOM is the failure
        first = killer
    reason = _abort_reason(first, key)
    if reason is not None:  # an abort is how a C++ error ends a process: the error is the failure
        first = reason
    first = _with_last_error(first, key)
    member = causes.apply(lambda e: _same_failure(e, first, window_s), axis=1) \
        if len(causes) else pd.Series([], dtype=bool)
    if first["code"] in HOST_OOM_CODES and len(causes):
        member |= causes.apply(lambda e: _oom_explains(first, e), axis=1)
    cluster = causes[member]
    independent = causes[~member]
    failed_ranks = set(cluster["rank"].dropna().astype(int))
    # Cascade: symptoms anywhere but on the failed ranks themselves.
    casc = cascade_all[~(cascade_all["rank"].isin(list(failed_ranks)) & cascade_all["rank"].notna())]
    return Crash(events, first, cluster, casc, independent, by)


# an abort, or a launcher saying a worker died: neither names the error that caused it
ABORT_CODES = {"SIGABRT", "terminate", "ray_worker_died"}
SPECIFIC_KINDS = ("cuda_error", "xid", "ecc", "oom", "nccl_error")


def _with_last_error(first: pd.Series, ordered: pd.DataFrame, lines: int = 6) -> pd.Series:
    """An 'unhandled cuda error' from NCCL with the CUDA error that torch prints under it
    ("Last error:" / "Cuda failure 2 'out of memory'") added to its message."""
    if first["code"] != "nccl_unhandled_cuda":
        return first
    after = ordered[(ordered["code"] == "nccl_last_error") & (ordered["file"] == first["file"])
                    & (ordered["lineno"] > first["lineno"])
                    & (ordered["lineno"] - first["lineno"] <= lines)]
    if not len(after):
        return first
    out = first.copy()
    out["message"] = f"{first['message']}; last error: {after.iloc[0]['message']}"
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
    # Every rank failing the same local way at once (e.g. all ranks OOM on one batch).
    if e["kind"] == first["kind"] == "oom" and near:
        return True
    # A line naming no rank or host, then the same error with a rank a few lines on (a Python
    # traceback, then "[Rank 1] NCCL watchdog thread terminated with exception: <same>").
    if (pd.isna(first["rank"]) and _str(first["host"]) is None and near
            and e["file"] == first["file"] and 0 < e["lineno"] - first["lineno"] <= 20
            and e["kind"] == first["kind"] and _same_words(e["message"], first["message"])):
        return True
    return False


def _same_words(a: Any, b: Any) -> bool:
    """Two error messages that say the same ("CUDA error: uncorrectable ECC error encountered"
    inside a longer one counts)."""
    a, b = str(a or "").strip(), str(b or "").strip()
    return bool(a and b) and (a in b or b in a)


HOST_OOM_CODES = {"host_oom_killer", "slurm_oom_kill", "srun_task_oom", "ray_oom"}


def _oom_killer_for(e: pd.Series, causes: pd.DataFrame) -> pd.Series | None:
    """The OOM-killer line that explains a SIGKILL exit: same pid, rank or host, or a line that
    names no process at all (slurmstepd's 'Detected 1 oom_kill event')."""
    if e["code"] != "SIGKILL":
        return None
    for _, o in causes[causes["code"].isin(HOST_OOM_CODES)].iterrows():
        if _oom_explains(o, e):
            return o[EVENT_COLUMNS]
    return None


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


def timeline_frame(crash: Crash) -> pd.DataFrame:
    """Events placed for the per-host timeline figure: lane (host, else rank), x (time, or line
    position when times are missing), role, label, and whether it is the first failure."""
    ev = crash.events
    cols = ["lane", "x", "time", "role", "label", "first"]
    if not len(ev):
        return pd.DataFrame(columns=cols)
    lane = ev["host"].fillna("rank " + ev["rank"].astype("string")).fillna("unknown host")
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
    label = label.where(ev["kind"] != "xid", "Xid " + label)
    out = pd.DataFrame({"lane": lane, "x": x, "time": ev["time"], "role": ev["role"],
                        "label": label, "first": first})
    if use_time:
        out = out[out["x"].notna()]
    return out.reset_index(drop=True)


# --- checkpoints and lost work -----------------------------------------------------------------

@dataclass
class Checkpoints:
    """What the logs say about checkpoints."""

    last_iteration: int | None  # the last checkpoint the job could resume from
    last_time: Any
    last_path: str | None
    how: str  # saved | loaded | inferred | none
    incomplete: int | None  # a save that started and never finished (died while saving)
    save_s: float | None  # measured cost of one save
    save_s_source: str
    interval: int | None  # measured iterations between saves


def checkpoint_state(incident: Incident, last_iteration: int | None,
                     save_interval: int | None = None) -> Checkpoints:
    """The checkpoint to resume from, the save cost and interval measured from save lines."""
    ck = incident.tables.get("checkpoints")
    if ck is None or not len(ck):
        ck = pd.DataFrame(columns=["iteration", "path", "kind", "duration_s", "time"])
    with_it = ck[ck["iteration"].notna()]
    saved = with_it[with_it["kind"] == "saved"]
    starts = with_it[with_it["kind"] == "save_start"]
    loaded = with_it[with_it["kind"] == "loaded"]
    done = set(int(i) for i in saved["iteration"])
    started = sorted(set(int(i) for i in starts["iteration"]))
    incomplete = None
    for s in started:
        if s in done:
            continue
        if last_iteration is not None and last_iteration > s:
            done.add(s)  # training went on past it: the save finished (its line is elsewhere)
        elif s == started[-1]:
            incomplete = s
    candidates = done | set(int(i) for i in loaded["iteration"])
    last = max(candidates) if candidates else None
    how = "none"
    last_time, last_path = None, None
    if last is not None:
        rows = with_it[with_it["iteration"] == last]
        how = "saved" if last in done else "loaded"
        pick = rows[rows["kind"] == ("saved" if how == "saved" else "loaded")]
        pick = pick if len(pick) else rows
        tm = pick["time"].dropna()
        last_time = tm.max() if len(tm) else None
        paths = pick["path"].dropna()
        last_path = str(paths.iloc[-1]) if len(paths) else None
    elif save_interval and last_iteration is not None:
        last = (last_iteration // save_interval) * save_interval
        how = "inferred"
    # Save cost: stated durations, else start -> saved time per iteration.
    save_s, src = None, "none"
    durs = ck["duration_s"].dropna() if "duration_s" in ck else pd.Series([], dtype=float)
    if len(durs):
        save_s, src = float(durs.median()), f"median of {len(durs)} save timing line(s)"
    else:
        pairs = []
        for _it, g in with_it.groupby("iteration"):
            t0 = g[g["kind"] == "save_start"]["time"].dropna()
            t1 = g[g["kind"] == "saved"]["time"].dropna()
            if len(t0) and len(t1) and t1.max() >= t0.min():
                pairs.append((t1.max() - t0.min()).total_seconds())
        if pairs:
            save_s = float(pd.Series(pairs).median())
            src = f"median start→saved time of {len(pairs)} save(s)"
    seq = sorted(done | set(int(i) for i in loaded["iteration"]))
    interval = None
    if len(seq) >= 2:
        diffs = pd.Series(seq).diff().dropna()
        interval = int(diffs.median())
    elif save_interval:
        interval = int(save_interval)
    return Checkpoints(last, last_time, last_path, how, incomplete, save_s, src, interval)


def iteration_seconds(incident: Incident) -> float | None:
    """Seconds per iteration: median of the last 50 'elapsed time per iteration' values, else
    the tqdm rate of the main bar."""
    it = incident.iterations
    if len(it) and it["elapsed_s"].notna().any():
        last = it.dropna(subset=["elapsed_s"]).sort_values("iteration").tail(50)
        v = float(last["elapsed_s"].median())
        return v if v > 0 else None
    prog = last_progress(incident)
    return prog.seconds_per_step


def young_daly(save_s: float, mtbf_s: float) -> dict[str, float]:
    """Optimal checkpoint interval in seconds: Young's sqrt(2·δ·M) and Daly's refinement."""
    if save_s <= 0 or mtbf_s <= 0:
        return {"young_s": float("nan"), "daly_s": float("nan")}
    young = math.sqrt(2.0 * save_s * mtbf_s)
    if save_s < 2.0 * mtbf_s:
        r = save_s / (2.0 * mtbf_s)
        daly = young * (1.0 + math.sqrt(r) / 3.0 + r / 9.0) - save_s
    else:
        daly = mtbf_s
    return {"young_s": young, "daly_s": daly}


def expected_waste(interval_s: float, save_s: float, mtbf_s: float) -> float:
    """Expected fraction of time lost to saving (δ/τ) plus recomputing after a failure
    (τ/2M, half an interval on average): first-order, restart time left out."""
    if interval_s <= 0 or mtbf_s <= 0:
        return float("nan")
    return save_s / interval_s + interval_s / (2.0 * mtbf_s)


def interval_table(save_s: float, mtbf_s: float, iteration_s: float | None,
                   current_iterations: int | None = None) -> pd.DataFrame:
    """Young/Daly inputs and result, and the expected waste of the current and recommended
    intervals: the numbers behind ``checkpoint_interval_recommended``."""
    yd = young_daly(save_s, mtbf_s)
    rows: list[tuple[str, str]] = [
        ("δ: seconds to save one checkpoint", f"{save_s:g}"),
        ("M: mean time between failures of the job", f"{mtbf_s / 3600:g} h"),
        ("Young: τ = sqrt(2·δ·M)", f"{yd['young_s']:.0f} s = {yd['young_s'] / 3600:.2f} h"),
        ("Daly: τ = sqrt(2δM)·[1 + ⅓·sqrt(δ/2M) + ⅑·δ/2M] − δ", f"{yd['daly_s']:.0f} s"),
    ]
    if iteration_s:
        rows.append(("seconds per iteration", f"{iteration_s:.3g}"))
        rows.append(("recommended: iterations between saves (Young)",
                     str(max(1, round(yd["young_s"] / iteration_s)))))
        rows.append(("expected time lost at the recommended interval",
                     f"{100 * expected_waste(yd['young_s'], save_s, mtbf_s):.2f}%"))
        if current_iterations:
            cur = current_iterations * iteration_s
            rows.append((f"expected time lost at the current {current_iterations} iterations",
                         f"{100 * expected_waste(cur, save_s, mtbf_s):.2f}%"))
    return pd.DataFrame(rows, columns=["quantity", "value"])


def save_cost(incident: Incident, checkpoint_save_s: float | None = None,
              save_interval: int | None = None) -> tuple[float, str]:
    """Seconds per checkpoint save and where the number comes from: given, measured from the
    save lines, or the BLOOM-176B figure (40 s) as a stated assumption."""
    if checkpoint_save_s:
        return float(checkpoint_save_s), "given (checkpoint_save_s)"
    ck = checkpoint_state(incident, last_progress(incident).step, save_interval)
    if ck.save_s:
        return ck.save_s, ck.save_s_source
    return DEFAULT_SAVE_S, (f"assumed ({DEFAULT_SAVE_S:g} s, the BLOOM-176B figure); set "
                            "checkpoint_save_s")


def interval_report(incident: Incident, checkpoint_save_s: float | None = None,
                    iteration_s: float | None = None, mtbf_hours: float = DEFAULT_MTBF_HOURS,
                    save_interval: int | None = None) -> pd.DataFrame:
    """``interval_table`` with the inputs measured from ``incident`` (or given), each input's
    source stated."""
    save_s, src = save_cost(incident, checkpoint_save_s, save_interval)
    spi = iteration_s or iteration_seconds(incident)
    ck = checkpoint_state(incident, last_progress(incident).step, save_interval)
    table = interval_table(save_s, float(mtbf_hours) * 3600.0, spi, ck.interval)
    notes = pd.DataFrame([("source of δ", src),
                          ("source of seconds per iteration",
                           "given (iteration_s)" if iteration_s else
                           "measured from the logs" if spi else "unknown: set iteration_s")],
                         columns=["quantity", "value"])
    return pd.concat([table, notes], ignore_index=True)


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


def cost_table(facts: dict[str, Any]) -> pd.DataFrame:
    """What the crash cost, from a report's facts, as a two-column text table."""
    keys = ("first_failure_time", "last_iteration", "last_checkpoint_iteration",
            "lost_iterations", "lost_hours", "checkpoint_interval_recommended")
    return pd.DataFrame([(k, "unknown" if facts.get(k) is None else str(facts[k])) for k in keys],
                        columns=["fact", "value"])


# --- the report --------------------------------------------------------------------------------

def diagnose(incident: Incident, checkpoint_save_s: float | None = None,
             iteration_s: float | None = None, mtbf_hours: float = DEFAULT_MTBF_HOURS,
             save_interval: int | None = None, gpus_per_node: int = 8,
             window_s: float = SAME_FAILURE_WINDOW_S) -> Report:
    """Diagnose a crashed job. ``checkpoint_save_s`` / ``iteration_s`` override what the logs
    measure; ``mtbf_hours`` is the job's mean time between failures; ``save_interval`` (the
    job's --save-interval) places the last checkpoint when no save line was logged;
    ``gpus_per_node`` turns a rank into a node index when no line names the host."""
    facts: dict[str, Any] = {k: None for k in FACT_KEYS}
    facts.update(failed_ranks=[], failed_hosts=[], xid_codes=[])
    findings: list[Finding] = []
    events = failure_events(incident)
    crash = first_failure(events, window_s, incident.ranks)
    prog = last_progress(incident)
    facts["last_iteration"] = prog.step
    spi = iteration_s or iteration_seconds(incident)
    ck = checkpoint_state(incident, prog.step, save_interval)
    first = crash.first

    if first is not None:
        fr = sorted({int(r) for r in crash.cluster["rank"].dropna()}
                    | ({int(first["rank"])} if pd.notna(first["rank"]) else set()))
        fh = sorted({str(h) for h in crash.cluster["host"].dropna() if is_host(h)}
                    | ({str(first["host"])} if is_host(first["host"]) else set()))
        facts.update(failed_ranks=fr, failed_hosts=fh, error_kind=first["kind"],
                     error_message=first["message"])
        if pd.notna(first["time"]):
            facts["first_failure_time"] = pd.Timestamp(first["time"]).isoformat()
    xids = events[events["kind"] == "xid"] if len(events) else events
    if len(xids) and facts["failed_hosts"]:
        on_failed = xids[xids["host"].isin(facts["failed_hosts"])]
        xids = on_failed if len(on_failed) else xids
    facts["xid_codes"] = sorted({int(c) for c in xids["code"].dropna() if str(c).isdigit()})

    # Lost work.
    facts["last_checkpoint_iteration"] = ck.last_iteration
    it = incident.iterations
    first_logged = int(it["iteration"].min()) if len(it) and it["iteration"].notna().any() \
        else None
    from_start = (ck.last_iteration is None and first_logged is not None and first_logged <= 1
                  and prog.step is not None)
    if prog.step is not None and ck.last_iteration is not None:
        facts["lost_iterations"] = max(0, prog.step - ck.last_iteration)
    elif from_start:
        facts["lost_iterations"] = prog.step
    if (ck.last_time is not None and first is not None and pd.notna(first["time"])
            and pd.notna(ck.last_time) and first["time"] >= ck.last_time):
        facts["lost_hours"] = round((first["time"] - ck.last_time).total_seconds() / 3600, 3)
    elif facts["lost_iterations"] is not None and spi:
        facts["lost_hours"] = round(facts["lost_iterations"] * spi / 3600, 3)

    # Checkpoint interval.
    save_s, save_src = save_cost(incident, checkpoint_save_s, save_interval)
    mtbf_s = float(mtbf_hours) * 3600.0
    yd = young_daly(save_s, mtbf_s)
    if spi and not math.isnan(yd["young_s"]):
        facts["checkpoint_interval_recommended"] = max(1, round(yd["young_s"] / spi))

    # Findings.
    if first is None:
        findings.append(Finding(
            "no_failure", "warning",
            "No crash was found: no CUDA/Xid/ECC/OOM error, fatal signal, failed process or "
            "Python exception in these logs" + (
                f" (only {len(crash.cascade)} symptom line(s) of a peer's failure)"
                if len(crash.cascade) else ""),
            evidence(crash.cascade)))
    else:
        findings.append(Finding("first_failure", "critical", _first_title(crash, facts),
                                _first_evidence(crash)))
        findings += _detail_findings(crash, facts, incident)
    findings += _xid_findings(xids)
    if len(crash.cascade):
        ct = cascade_table(crash)
        n_r = crash.cascade["rank"].dropna().nunique()
        hosts = crash.cascade["host"].dropna().nunique()
        delay = ct["after_s"].dropna()
        who = (f"{n_r} other rank(s){f' on {hosts} host(s)' if hosts else ''}" if n_r
               else "Its peers")
        findings.append(Finding(
            "cascade", "info",
            f"{who} failed after it: peers' NCCL/gloo errors, collective timeouts and launcher "
            "kills are symptoms of the first failure, not causes"
            + (f" (first {delay.min():.0f} s, last {delay.max():.0f} s after it)"
               if len(delay) else ""),
            evidence(crash.cascade, limit=12)))
    if len(crash.independent):
        findings.append(Finding(
            "other_failures", "warning",
            f"{len(crash.independent)} other local failure(s) on other ranks/hosts, apart from "
            "the first one in time or place: check whether they are a second, independent "
            "problem", evidence(crash.independent, limit=10)))
    hang = _exit_delay(crash, events)
    if hang is not None:
        findings.append(Finding(
            "exit_delay", "warning" if hang > HANG_WARN_S else "info",
            f"The job's last failure line came {hang / 60:.1f} min after the first failure"
            + (": the survivors hung until a timeout instead of exiting" if hang > HANG_WARN_S
               else ""), []))
    findings += _checkpoint_findings(ck, facts, spi, prog)
    if facts["checkpoint_interval_recommended"] is not None or not math.isnan(yd["young_s"]):
        cur = ck.interval
        findings.append(Finding(
            "checkpoint_interval", "info",
            f"Young/Daly: τ = sqrt(2·δ·M) = sqrt(2 × {save_s:g} s × {mtbf_hours:g} h) = "
            f"{yd['young_s']:.0f} s ({yd['young_s'] / 3600:.2f} h)"
            + (f" = {facts['checkpoint_interval_recommended']} iterations at {spi:.3g} s each"
               if facts["checkpoint_interval_recommended"] else "")
            + f"; Daly's refinement {yd['daly_s']:.0f} s. Save cost: {save_src}; M: "
            f"mtbf_hours={mtbf_hours:g}"
            + (f". Current interval: {cur} iterations, expected waste "
               f"{100 * expected_waste(cur * spi, save_s, mtbf_s):.1f}% vs "
               f"{100 * expected_waste(yd['young_s'], save_s, mtbf_s):.1f}% at the optimum"
               if cur and spi else ""), []))
    findings += input_findings(incident)

    assumed = ([f"a save takes {save_s:g} s"] if save_src.startswith("assumed") else []) + (
        ["a GPU fails once a week"] if mtbf_hours == DEFAULT_MTBF_HOURS else [])
    actions = ranked(_actions(crash, facts, ck, spi, save_s, yd, hang, gpus_per_node,
                              assumed=assumed, total=prog.total))
    verdict, confidence = _verdict(crash, facts)
    return Report("gpu_crash", verdict, confidence, facts, findings, actions)


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
              "signal": "a fatal signal", "python": "a Python error"}


def _first_title(crash: Crash, facts: dict[str, Any]) -> str:
    first = crash.first
    assert first is not None
    when = f" at {facts['first_failure_time']}" if facts["first_failure_time"] else ""
    how = {"time": "the earliest timestamp", "root_cause": "torchrun's root-cause record",
           "line_order": "line order, the lines carry no timestamps",
           "silent": "the only rank that reported nothing while the others failed after it"}
    kind = KIND_WORDS.get(facts["error_kind"], facts["error_kind"]) or "cause unknown"
    return (f"{_who(facts)} failed first{when}: {kind} — {facts['error_message']}"
            f" [chosen by {how.get(crash.by, crash.by)}]")


def _first_evidence(crash: Crash) -> list[str]:
    rows = crash.cluster
    if not len(rows) and crash.first is not None and crash.first.get("source") is not None:
        rows = pd.DataFrame([crash.first])
    return evidence(rows, limit=12)


def _detail_findings(crash: Crash, facts: dict[str, Any], incident: Incident) -> list[Finding]:
    out: list[Finding] = []
    first = crash.first
    assert first is not None
    kind, msg = facts["error_kind"], facts["error_message"] or ""
    errs = incident.errors
    cl = crash.cluster
    frames_rows = errs[errs["frames"].notna()] if "frames" in errs else errs.iloc[0:0]
    if len(cl):
        frames_rows = frames_rows[frames_rows["source"].isin(list(cl["source"]))]
    frames = [f for fl in frames_rows["frames"] for f in (fl or [])] if len(frames_rows) else []
    if kind == "cuda_error" or any(WATCHDOG_FRAME_RE.search(f) for f in frames):
        if frames and any(WATCHDOG_FRAME_RE.search(f) for f in frames):
            out.append(Finding(
                "async_cuda_error", "info",
                "The CUDA error surfaced in ProcessGroupNCCL's watchdog thread (it polls CUDA "
                "events of finished collectives): the fault happened earlier, in some kernel on "
                "this GPU, and was only noticed there — the frames do not point at the culprit",
                frames[:10]))
    if kind == "cuda_error":
        if HARDWARE_CUDA_RE.search(msg):
            out.append(Finding(
                "hardware_suspect", "warning",
                f"'{msg}' is what a GPU that failed under the job looks like (an Xid in the "
                "node's kernel log usually says which): treat the node as suspect until a "
                "diagnostic passes", []))
        elif PROGRAM_CUDA_RE.search(msg):
            out.append(Finding(
                "program_suspect", "warning",
                f"'{msg}' is usually the program (an out-of-bounds index, a bad kernel), not the "
                "hardware: rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel before blaming "
                "the node", []))
    if kind == "oom":
        ooms = cl[cl["kind"] == "oom"] if len(cl) else cl
        figs = [oom_figures(str(m)) for m in ooms["message"]] if len(ooms) else []
        figs = [f for f in figs if f]
        if figs:
            f0 = figs[0]
            frag = f0.get("reserved_unallocated")
            out.append(Finding(
                "oom_figures", "info",
                f"GPU {f0['gpu']}: tried to allocate {f0['tried']} GiB with {f0['free']} GiB free "
                f"of {f0['total']} GiB; PyTorch held {f0['allocated']} GiB"
                + (f" and {frag} GiB reserved but unallocated (fragmentation)" if frag else ""),
                evidence(ooms, limit=4)))
    if kind == "signal" and first["code"] == "SIGKILL":
        out.append(Finding(
            "killed", "warning",
            "Killed by SIGKILL with no error of its own: the kernel's OOM killer, the "
            "scheduler (time limit, preemption, scancel) or an operator; the node's dmesg and "
            "sacct tell which", []))
    if crash.by == "silent":
        out.append(Finding(
            "silent_rank", "warning",
            f"Rank {int(first['rank'])} appears in the logs but reported no failure while every "
            "other rank failed after it: it most likely died first without a word (SIGKILL, "
            "node loss); its own stderr and the node's dmesg are missing", []))
    return out


def _xid_findings(xids: pd.DataFrame) -> list[Finding]:
    out: list[Finding] = []
    if not len(xids):
        return out
    for code, g in xids.groupby("code", sort=False):
        info = xid_info(int(code) if str(code).isdigit() else None)
        hosts = sorted({str(h) for h in g["host"].dropna()})
        sev = "info" if info.cascade or info.scope == "none" else "critical"
        out.append(Finding(
            f"xid_{code}", sev,
            f"Xid {code} ({info.mnemonic}): {info.meaning}"
            + (f" on {', '.join(hosts)}" if hosts else "")
            + f" — {info.origin}; NVIDIA's immediate action: {info.resolution}; "
              f"take out of service: {info.scope}; next: {info.next_step}",
            evidence(g, limit=6)))
    return out


def _exit_delay(crash: Crash, events: pd.DataFrame) -> float | None:
    if crash.first is None or pd.isna(crash.first["time"]) or not len(events):
        return None
    later = events["time"].dropna()
    if not len(later):
        return None
    d = (later.max() - crash.first["time"]).total_seconds()
    return d if d > 0 else None


def _checkpoint_findings(ck: Checkpoints, facts: dict[str, Any], spi: float | None,
                         prog: Any) -> list[Finding]:
    out: list[Finding] = []
    lost_it, lost_h = facts["lost_iterations"], facts["lost_hours"]
    if ck.how in ("saved", "loaded"):
        what = "saved" if ck.how == "saved" else "loaded at start (no save after it)"
        out.append(Finding(
            "last_checkpoint", "info",
            f"Last checkpoint: iteration {ck.last_iteration} ({what})"
            + (f" at {ck.last_path}" if ck.last_path else "")
            + (f"; saving took ~{ck.save_s:.0f} s ({ck.save_s_source})" if ck.save_s else "")
            + (f"; saves every {ck.interval} iterations" if ck.interval else ""), []))
    elif ck.how == "inferred":
        out.append(Finding(
            "last_checkpoint", "info",
            f"No checkpoint line in the logs; with save_interval the last save was at iteration "
            f"{ck.last_iteration} (inferred, not seen)", []))
    else:
        out.append(Finding(
            "no_checkpoint_lines", "warning",
            "No checkpoint save or load line in these logs: the resume point is unknown (set "
            "save_interval to place it, or add the log that has the save lines)", []))
    if ck.incomplete is not None:
        out.append(Finding(
            "incomplete_save", "critical",
            f"The save of iteration {ck.incomplete} started and never finished: that "
            "checkpoint is probably partial — do not resume from it", []))
    if lost_it is not None:
        ckpt = facts["last_checkpoint_iteration"]
        point = f"iteration {ckpt}" if ckpt is not None else "the start of training"
        hours = f" ≈ {lost_h:.2f} h of the whole job" if lost_h is not None else ""
        out.append(Finding(
            "lost_work", "warning" if (lost_h or 0) >= 1 else "info",
            f"Work lost: {lost_it} iteration(s){hours} (last iteration {prog.step}, resume "
            f"point {point})", [f"{prog.source}: {prog.line}"] if prog.source else []))
    return out


def _node_lookup(rank: int, gpus_per_node: int) -> str:
    idx = rank // max(1, gpus_per_node)
    return (f"find the node of rank {rank}: with global ranks laid out node by node, it is node "
            f"{idx} at {gpus_per_node} GPUs per node (scontrol show hostnames "
            f"$SLURM_JOB_NODELIST | sed -n '{idx + 1}p'); a [default{rank}] prefix is torchrun's "
            "local rank, on every node, so grep each node's log (or srun -l's task prefix) for "
            "the crash instead")


def _actions(crash: Crash, f: dict[str, Any], ck: Checkpoints, spi: float | None, save_s: float,
             yd: dict[str, float], hang: float | None, gpus_per_node: int,
             assumed: list[str] | None = None, total: int | None = None) -> list[Action]:
    acts: list[Action] = []
    first = crash.first
    kind, msg = f["error_kind"], f["error_message"] or ""
    hosts = f["failed_hosts"]
    xinfo = [xid_info(c) for c in f["xid_codes"]]
    hw_xids = [x for x in xinfo if not x.cascade and x.scope in ("node", "gpu")]
    # An Xid the catalogue calls an application fault (13, 31, 43…) takes nothing out of
    # service: the drain advice must agree with the Xid table the runbook shows.
    first_xid = (xid_info(int(first["code"])) if first is not None and kind == "xid"
                 and str(first["code"]).isdigit() else None)
    hardware = bool(hw_xids) or kind == "ecc" or (
        kind == "xid" and (first_xid is None or first_xid.scope in ("node", "gpu"))) or (
        kind == "cuda_error" and bool(HARDWARE_CUDA_RE.search(msg))) or (
        first is not None and first["code"] in ("slurm_node_failure", "nccl_unhandled_cuda",
                                                "nccl_warn_cuda"))
    program = kind == "cuda_error" and bool(PROGRAM_CUDA_RE.search(msg)) and not hw_xids
    reason = (f"Xid {', '.join(str(x.code) for x in hw_xids)}" if hw_xids
              else (msg[:40] or kind or "GPU failure"))
    if first is not None and hardware and not program:
        if hosts:
            h = ",".join(hosts)
            how = (f"scontrol update nodename={h} state=drain reason=\"{reason} (job "
                   f"$SLURM_JOB_ID)\"; restart with: sbatch --exclude={h} <job script>")
        elif f["failed_ranks"]:
            how = (_node_lookup(f["failed_ranks"][0], gpus_per_node) + "; then scontrol update "
                   f"nodename=<node> state=drain reason=\"{reason}\" and sbatch "
                   "--exclude=<node> <job script>")
        else:
            how = ("find the node from the job's logs or sacct -j $SLURM_JOB_ID -o NodeList; "
                   "scontrol update nodename=<node> state=drain reason=\"GPU failure\"")
        acts.append(Action(
            "drain_node", 1,
            f"Drain {', '.join(hosts) if hosts else 'the failed node'} and exclude it from the "
            "restart",
            f"The first failure is a GPU/driver fault ({reason}); restarting on the same node "
            "invites the same crash, and draining keeps other jobs off it until it is checked.",
            how))
        diag = "; ".join(dict.fromkeys(x.next_step for x in hw_xids)) if hw_xids else (
            "no Xid in these logs: read the node's kernel log (sudo dmesg -T | grep -E "
            "'NVRM|Xid'; add it to log_path and rerun this runbook), nvidia-smi -q -d "
            "ECC,ROW_REMAPPER, then dcgmi diag -r 2 (-r 3 before returning it to service)")
        acts.append(Action(
            "diagnose_gpu", 2, "Run the diagnostic that fits the fault before returning the node",
            "The Xid/ECC/CUDA error says which kind of check settles it: "
            + (", ".join(f"Xid {x.code}: {x.meaning}" for x in hw_xids) or msg or kind),
            diag + (f"  (on {', '.join(hosts)})" if hosts else "")))
    elif first is not None and first_xid is not None:
        acts.append(Action(
            "application_xid", 1, f"Debug the program: Xid {first_xid.code} is an application "
            "fault, not a broken GPU",
            f"Xid {first_xid.code} ({first_xid.meaning}): {first_xid.next_step}. Nothing to "
            "drain: the same code on healthy hardware fails the same way.",
            "rerun the failing step with CUDA_LAUNCH_BLOCKING=1, or under compute-sanitizer "
            "(compute-sanitizer --tool memcheck python …)"))
    elif first is not None:
        acts += _software_actions(first, kind, msg, f)
    if first is not None:
        resume = ck.last_iteration
        acts.append(Action(
            "resume", 3,
            f"Resume from the last checkpoint (iteration {resume})" if resume is not None
            else "Resume from the last complete checkpoint",
            ("Work since then is lost either way; resuming from the newest complete checkpoint "
             "loses the least." + (f" The save of iteration {ck.incomplete} never finished: "
                                   "skip it." if ck.incomplete is not None else "")),
            ("Megatron: --load <save dir> (reads latest_checkpointed_iteration.txt); DeepSpeed: "
             "the 'latest' file names global_stepN; HF: trainer.train(resume_from_checkpoint="
             "'<dir>/checkpoint-N')" + (f"; path seen: {ck.last_path}" if ck.last_path else "")
             + (f"; remove the partial iteration {ck.incomplete} directory first"
                if ck.incomplete is not None else ""))))
    if f["checkpoint_interval_recommended"]:
        n = f["checkpoint_interval_recommended"]
        cur = f" (now {ck.interval})" if ck.interval else ""
        close = bool(ck.interval) and 0.75 <= ck.interval / n <= 1.33
        title = (f"Keep saving about every {ck.interval} iterations (optimum {n})" if close
                 else f"Save a checkpoint every {n} iterations{cur}")
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
        acts.append(Action(
            "save_interval", 6 if close else 4, title, why,
            f"Megatron: --save-interval {n}; HF Trainer: save_steps={n}; torchtitan: "
            f"checkpoint.interval={n}; DeepSpeed: engine.save_checkpoint(dir) every {n} steps"))
    if first is not None:
        hung = hang is not None and hang > HANG_WARN_S
        acts.append(Action(
            "exit_on_failure", 2 if hung else 5,
            "Make a crashed job exit instead of hanging",
            ("When one rank dies the others block in their next collective; without async error "
             "handling they wait there (BLOOM-176B lost hours this way), and without "
             "--kill-on-bad-exit srun keeps the step alive, so nothing restarts it."
             + (f" Here the last failure line came {hang / 60:.0f} min after the first."
                if hang else "")),
            "export TORCH_NCCL_ASYNC_ERROR_HANDLING=1  # torch<2.2: NCCL_ASYNC_ERROR_HANDLING=1; "
            "srun --kill-on-bad-exit=1 --wait=60 …  # end the step 60 s after the first task "
            "dies; #SBATCH --requeue (or a job array with %1) so the restart is automatic"))
    return acts


def _software_actions(first: pd.Series, kind: str, msg: str, f: dict[str, Any]) -> list[Action]:
    who = _who(f)
    if kind == "oom" and first["code"] in HOST_OOM_CODES:
        return [Action(
            "reduce_memory", 1, "Reduce host (CPU) memory before restarting",
            f"{who} was killed by the out-of-memory killer ({msg[:120]}): host RAM, not GPU "
            "memory, ran out; the same step will fail again.",
            "sacct -j $SLURM_JOB_ID -o JobID,MaxRSS,ReqMem,NodeList; fewer DataLoader workers or "
            "prefetch, no full dataset in RAM per rank, CPU-offload buffers sized to the node; "
            "or ask for more memory (#SBATCH --mem=…)")]
    if kind == "oom":
        return [Action(
            "reduce_memory", 1, "Reduce peak GPU memory before restarting",
            f"{who} ran out of GPU memory ({msg[:120]}); the same step will fail again.",
            "lower the micro-batch size or sequence length, enable activation checkpointing; "
            "if much memory is 'reserved but unallocated', "
            "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")]
    if kind == "cuda_error":
        return [Action(
            "debug_kernel", 1, "Find the faulting kernel",
            f"'{msg}' usually comes from the program (bad index, kernel bug), reported "
            "asynchronously where it was noticed.",
            "rerun the failing step with CUDA_LAUNCH_BLOCKING=1 (or under compute-sanitizer); "
            "TORCH_USE_CUDA_DSA builds give device-side asserts")]
    if kind == "python":
        return [Action(
            "fix_exception", 1, "Fix the Python exception",
            f"{who} raised it first ({msg[:160]}); every other failure followed from it.",
            f"read the traceback ending at {first['source']}")]
    if kind in ("signal", "exit"):
        return [Action(
            "why_killed", 1, "Find out who killed the process",
            f"{who} was {msg or 'terminated'} without an error of its own.",
            "on its node: sudo dmesg -T | grep -i -E 'killed process|out of memory|NVRM'; "
            "sacct -j $SLURM_JOB_ID -o JobID,State,ExitCode,MaxRSS,NodeList; look for "
            "scancel/preemption in the scheduler log")]
    if kind == "nccl_error":
        return [Action(
            "check_network", 1, "Check the network path of the failed rank",
            f"{who} reported {msg[:120]} with no local cause in these logs.",
            "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET; ibstat / ibv_devinfo on its node; run "
            "nccl-tests all_reduce_perf across the nodes involved")]
    return []


def _verdict(crash: Crash, f: dict[str, Any]) -> tuple[str, str]:
    if crash.first is None:
        if len(crash.cascade):
            return ("Only symptoms of a peer's failure (NCCL/gloo errors, timeouts, kills) are in "
                    "these logs; the rank that failed first left no line here — add every "
                    "rank's log and the nodes' dmesg.", "low")
        return ("No GPU crash, fatal error or failed process was found in these logs.", "low")
    when = f" at {f['first_failure_time']}" if f["first_failure_time"] else ""
    casc = ""
    if len(crash.cascade):
        n_r = crash.cascade["rank"].dropna().nunique()
        n_h = crash.cascade["host"].dropna().nunique()
        casc = (f"; {n_r} other rank(s){f' on {n_h} host(s)' if n_h else ''} failed after it "
                "as a cascade" if n_r else "; its peers' failures followed as a cascade")
    lost = ""
    if f["lost_iterations"] is not None:
        base = (f"the checkpoint at iteration {f['last_checkpoint_iteration']}"
                if f["last_checkpoint_iteration"] is not None else "the start of training")
        lost = (f"; {f['lost_iterations']} iteration(s) lost since {base}"
                + (f" ({f['lost_hours']:.2f} h)" if f["lost_hours"] is not None else ""))
    elif f["last_iteration"] is not None:
        lost = f"; last iteration {f['last_iteration']}, no checkpoint line to measure the loss"
    what = (f"with {KIND_WORDS.get(f['error_kind'], f['error_kind'])}: {f['error_message']}"
            if f["error_kind"] else f"({f['error_message']})")
    verdict = f"{_who(f)} failed first{when} {what}{casc}{lost}."
    if crash.by == "silent":
        conf = "medium"
    elif crash.by in ("time", "root_cause"):
        conf = "high"
    else:
        causes = crash.events[crash.events["role"] == "cause"]
        conf = "high" if len(crash.independent) == 0 and causes["rank"].nunique() <= 1 \
            else "medium"
    return verdict, conf


__all__ = ["Checkpoints", "Crash", "cascade_table", "checkpoint_state", "cost_table", "diagnose",
           "expected_waste", "failure_events", "first_failure", "interval_report",
           "interval_table", "iteration_seconds", "rank_hosts", "save_cost", "timeline_frame",
           "xid_table", "young_daly"]
