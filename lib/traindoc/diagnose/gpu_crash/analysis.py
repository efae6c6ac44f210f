"""``GpuCrashAnalysis``: every table and value the gpu_crash report and runbook show, from one
``analyse`` call (failure events, the first failure and its cascade, Xids, checkpoints, lost
work, the Young/Daly interval, and the facts of summary.json)."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ...hostlist import expand, fold_domains
from ...incident import Incident
from ...parse.errors import oom_figures
from ...parse.xid import pci_bus_id
from ...xid_catalog import xid_info
from ..common import Progress, is_host, last_progress, rank_hosts, task_hosts, world_stated
from .checkpoints import (
    DEFAULT_MTBF_HOURS,
    Checkpoints,
    checkpoint_state,
    cost_table,
    interval_sources_table,
    iteration_seconds,
    lost_work,
    save_cost_of,
    young_daly,
)
from .events import (
    PEER_REFUSED_RE,
    SAME_FAILURE_WINDOW_S,
    Crash,
    cascade_table,
    failure_events,
    finished_before,
    first_failure,
    link_fault_hosts,
    srun_failed_tasks,
    timeline_frame,
    writers_seen,
    xid_table,
)

FACT_KEYS = ("failed_ranks", "failed_hosts", "error_kind", "error_message", "xid_codes",
             "pci_bus_ids", "first_failure_time", "last_iteration", "last_checkpoint_iteration",
             "lost_iterations", "lost_hours", "checkpoint_interval_recommended")

INCIDENT_GAP_S = 3600.0  # failure lines further apart than this belong to different incidents

CHECKPOINT_LINE_COLUMNS = ["iteration", "kind", "path", "duration_s", "time", "source"]


@dataclass(frozen=True, eq=False)
class GpuCrashAnalysis:
    """What one incident says about a crash: the tables the runbook shows and the values
    (and knobs) the report's prose needs."""

    incident: Incident  # raw lines: input findings, stack frames of the failure
    events: pd.DataFrame  # every failure line with its role (failure_events)
    crash: Crash  # the first failure, its cluster, the cascade, independent causes
    cascade: pd.DataFrame  # per rank of the cascade: first symptom, delay (cascade_table)
    timeline: pd.DataFrame  # events placed for the per-host timeline figure (timeline_frame)
    xids: pd.DataFrame  # per (host, Xid code): the catalogue's meaning and advice (xid_table)
    xid_events: pd.DataFrame  # Xid events on the failed hosts (all Xid events if none there)
    progress: Progress  # the last iteration the job reported
    checkpoints: Checkpoints  # resume point, incomplete save, measured save cost and interval
    seconds_per_iteration: float | None  # given (iteration_s) or measured
    save_s: float  # δ: seconds per save, given, measured or assumed
    save_source: str  # where save_s comes from
    young_daly: dict[str, float]  # optimal interval in seconds: young_s, daly_s
    interval: pd.DataFrame  # Young/Daly inputs, result and each input's source
    exit_delay_s: float | None  # first failure to the last failure line
    facts: dict[str, Any]  # the facts of summary.json (FACT_KEYS)
    checkpoint_save_s: float | None
    iteration_s: float | None
    mtbf_hours: float
    save_interval: int | None
    gpus_per_node: int
    window_s: float
    oom_figures: list[dict[str, Any]]  # the allocator's numbers (GiB) of the first failure's OOM lines
    finished: bool = False  # the run said it finished with success before it failed (finished_before)

    @property
    def cost(self) -> pd.DataFrame:
        """What the crash cost (first failure, last iteration and checkpoint, lost work)."""
        return cost_table(self.facts)

    @property
    def checkpoint_lines(self) -> pd.DataFrame:
        """The checkpoint save/load lines read from the logs."""
        ck = self.incident.checkpoints
        return ck[CHECKPOINT_LINE_COLUMNS] if len(ck) else ck

    @property
    def cascade_hosts(self) -> list[str]:
        """The machines the cascade ran on (srun task names and ranks resolved to hosts where
        the logs tell; otherwise not counted as a host)."""
        tl = self.timeline
        lanes = tl.loc[tl["role"] == "cascade", "lane"].dropna().astype(str) if len(tl) else []
        return sorted({h for h in lanes if not h.startswith(("rank ", "unknown host"))})

    @property
    def mtbf_s(self) -> float:
        """M: the job's mean time between failures, in seconds."""
        return float(self.mtbf_hours) * 3600.0


def analyse(incident: Incident, checkpoint_save_s: float | None = None,
            iteration_s: float | None = None, mtbf_hours: float = DEFAULT_MTBF_HOURS,
            save_interval: int | None = None, gpus_per_node: int = 8,
            window_s: float = SAME_FAILURE_WINDOW_S) -> GpuCrashAnalysis:
    """Analyse a crashed job: its first failure and cascade, lost work, checkpoint interval.

    Args:
        checkpoint_save_s: seconds one checkpoint save takes, overriding what the logs measure.
        iteration_s: seconds per iteration, overriding what the logs measure.
        mtbf_hours: the job's mean time between failures (the Young/Daly interval).
        save_interval: the job's --save-interval: places the last checkpoint when no save line
            was logged.
        gpus_per_node: turns a rank into a node index when no line names the host.
        window_s: failures this close to the first are one failure (its cluster).

    With every argument at its default the analysis is computed once an incident
    (``Incident.once``): triage's gpu_crash diagnosis and its reading of the runbook's first
    failure (``triage._runbook_crash``) share it. The analysis is frozen; no reader changes
    its tables.
    """
    args = (checkpoint_save_s, iteration_s, mtbf_hours, save_interval, gpus_per_node, window_s)
    if args == _DEFAULT_ARGS:
        return incident.once("gpu_crash.analyse", _analyse)
    return _analyse(incident, *args)


# ``analyse``'s defaults, in its order (read from its signature, so that a new knob cannot
# be left out): the analysis that ``Incident.once`` keeps
_DEFAULT_ARGS = tuple(p.default for p in list(inspect.signature(analyse).parameters.values())[1:])


def _analyse(incident: Incident, checkpoint_save_s: float | None = None,
             iteration_s: float | None = None, mtbf_hours: float = DEFAULT_MTBF_HOURS,
             save_interval: int | None = None, gpus_per_node: int = 8,
             window_s: float = SAME_FAILURE_WINDOW_S) -> GpuCrashAnalysis:
    """``analyse``, computed."""
    facts: dict[str, Any] = {k: None for k in FACT_KEYS}
    facts.update(failed_ranks=[], failed_hosts=[], xid_codes=[], pci_bus_ids=[])
    host_of = rank_hosts(incident)
    events = failure_events(incident)
    crash = first_failure(events, window_s, incident.ranks, writers_seen(incident))
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
        fh = sorted(set(fh) | set(hardware_fault_hosts(crash.independent)))
        if not fh:  # the failure's own lines name no machine: srun's record of the tasks
            # that exited on their own does (their ranks too, where srun's tasks are ranks)
            fh, tasks = srun_failed_tasks(incident)
            if not fr:
                fr = tasks
        machines = job_hosts(incident)
        if not fh and len(machines) == 1:  # a job on one machine (node list, log header)
            fh = machines
        facts.update(failed_ranks=fr, failed_hosts=fh, error_kind=first["kind"],
                     error_message=first["message"])
        if pd.notna(first["time"]):
            facts["first_failure_time"] = pd.Timestamp(first["time"]).isoformat()
    elif len(peer := peer_errors(crash.cascade)):
        # only a victim's view (a peer went away, the network broke): the kind and words of
        # what this side saw; no rank or host to blame
        facts.update(error_kind="nccl_error", error_message=peer.iloc[0]["message"])
    elif len(stops := stop_signals(crash.cascade)):
        # only the processes stopped from outside (Paddle's workers reporting the SIGTERM
        # their launcher sent, "main proc … exit, kill process group …"): the signal is what
        # the logs show ending the job; who stopped it, and why, is not in them
        facts.update(error_kind="signal", error_message=stops.iloc[0]["message"],
                     failed_ranks=stopped_alone(stops, incident))
    if not facts["failed_hosts"] and facts["error_kind"] == "nccl_error":
        facts["failed_hosts"] = link_fault_hosts(events)
    xids = events[events["kind"] == "xid"] if len(events) else events
    if len(xids) and facts["failed_hosts"]:
        on_failed = xids[xids["host"].isin(facts["failed_hosts"])]
        xids = on_failed if len(on_failed) else xids
    facts["xid_codes"] = sorted({int(c) for c in xids["code"].dropna() if str(c).isdigit()})
    # the GPU's locator on its host (8 GPUs a node: the bus id says which), in order of first
    # appearance
    buses = (pci_bus_id(str(m)) for m in xids["message"]) if len(xids) else ()
    facts["pci_bus_ids"] = list(dict.fromkeys(b for b in buses if b))

    facts["last_checkpoint_iteration"] = ck.last_iteration
    finished = finished_before(incident, first)
    if finished:  # the run had done its work (MLPerf's run_stop: success): nothing to redo
        facts["lost_iterations"], facts["lost_hours"] = 0, 0.0
    elif facts["error_kind"] is not None:  # a log with no failure lost nothing (it may have
        # finished: DeepSpeed's 'Process N exits successfully' after the last save)
        # (a step known only from the last checkpoint says nothing of the work after it)
        facts["lost_iterations"], facts["lost_hours"] = lost_work(
            incident, None if prog.kind == "checkpoint" else prog.step, ck,
            first["time"] if first is not None else None, spi)

    save_s, save_src = save_cost_of(ck, checkpoint_save_s)
    mtbf_s = float(mtbf_hours) * 3600.0
    yd = young_daly(save_s, mtbf_s)
    if spi and not math.isnan(yd["young_s"]):
        facts["checkpoint_interval_recommended"] = max(1, round(yd["young_s"] / spi))

    return GpuCrashAnalysis(
        incident=incident, events=events, crash=crash, cascade=cascade_table(crash),
        timeline=timeline_frame(crash, host_of, task_hosts(incident)),
        xids=xid_table(incident), xid_events=xids,
        progress=prog, checkpoints=ck, seconds_per_iteration=spi, save_s=save_s,
        save_source=save_src, young_daly=yd,
        interval=interval_sources_table(save_s, save_src, mtbf_s, spi, ck.interval,
                                        iteration_given=bool(iteration_s)),
        exit_delay_s=_exit_delay(crash, events), facts=facts,
        checkpoint_save_s=checkpoint_save_s, iteration_s=iteration_s, mtbf_hours=mtbf_hours,
        save_interval=save_interval, gpus_per_node=gpus_per_node, window_s=window_s,
        oom_figures=_oom_figures(crash), finished=finished)


def _oom_figures(crash: Crash) -> list[dict[str, Any]]:
    """The caching allocator's figures of each OOM line in the first failure's cluster."""
    cl = crash.cluster
    if crash.first is None or not len(cl):
        return []
    ooms = cl[cl["kind"] == "oom"]
    return [f for f in (oom_figures(str(m)) for m in ooms["message"]) if f]


# NCCL's own words for a peer or the network failing under this process (the remote side went
# away, a socket broke): a victim's view, the only failure a log may show
PEER_NCCL_CODES = ("nccl_remote", "nccl_warn_net")


def stop_signals(cascade: pd.DataFrame) -> pd.DataFrame:
    """The cascade's lines of workers that say they were stopped from outside (the SIGTERM
    they received, their launcher gone: ``STOPPED_CODES``), when nothing else failed. A
    launcher's own teardown lines ("Killing subprocess …" after a Ctrl-C) are not: they say
    what it did, not that the job was stopped."""
    if not len(cascade):
        return cascade
    return cascade[(cascade["table"] == "errors") & cascade["code"].isin(list(STOPPED_CODES))]


STOPPED_CODES = ("SIGTERM", "parent_exit")


def stopped_alone(stops: pd.DataFrame, incident: Incident) -> list[int]:
    """The one rank a stop reached, where the job shows several processes (ranks or srun tasks
    writing, a world size stated) and no other says it was stopped (Lightning's "[rank: 2]
    Received SIGTERM: 15" in a job of five): ``[rank]``; else ``[]`` (a stop every worker
    reports, or one whose peers the logs do not show, names no rank of its own)."""
    ranks = set(stops["rank"].dropna().astype(int))  # (a DataLoader worker's names no rank)
    if len(ranks) != 1:
        return []
    world = max(writers_seen(incident), world_stated(incident) or 0)
    return sorted(ranks) if world >= 2 else []


def peer_errors(cascade: pd.DataFrame) -> pd.DataFrame:
    """The cascade's NCCL lines that report a peer or the network failing (a peer that refused
    the connection included); else the watchdog's teardown of a failure it caught, when no
    collective timed out."""
    if not len(cascade):
        return cascade
    refused = cascade["message"].astype(str).map(lambda m: PEER_REFUSED_RE.search(m) is not None)
    peers = cascade[(cascade["table"] == "errors")
                    & (cascade["code"].isin(PEER_NCCL_CODES) | refused)]
    if len(peers) or (cascade["code"] == "collective_timeout").any():
        return peers
    # with none, and no collective timed out: the watchdog's "Some NCCL operations have failed
    # or timed out" (UniWorld#46: socket errors under it at INFO), or the process group's "NCCL
    # communicator was aborted", is all this side saw of it
    return cascade[(cascade["table"] == "errors")
                   & cascade["code"].isin(["nccl_teardown", "nccl_comm_aborted"])]


def hardware_fault_hosts(causes: pd.DataFrame) -> list[str]:
    """The hosts of failures independent of the first one that are the GPU's own hardware (an
    ECC error, an Xid of NVIDIA's hardware or ECC category): each is a machine to check too."""
    if not len(causes):
        return []
    hosts: set[str] = set()
    for _, e in causes.iterrows():
        if not is_host(e["host"]):
            continue
        if e["kind"] == "ecc":
            hosts.add(str(e["host"]))
        elif e["kind"] == "xid" and str(e["code"]).isdigit():
            info = xid_info(int(e["code"]))
            if info.origin == "hardware" or info.category == "ecc":
                hosts.add(str(e["host"]))
    return sorted(hosts)


def job_hosts(incident: Incident) -> list[str]:
    """The machines the job's node lists and log headers name (``SLURM_JOB_NODELIST=``,
    ``# Running on r7n01``), sorted; else the one machine NCCL's ``host:pid:tid [dev]`` lines
    name, when they name one only (``job-1111-2222-0:293:763 [0] NCCL INFO comm …``: a pod's
    own log); [] when none does. A machine named both by its short and its full name is one
    (``hostlist.fold_domains``)."""
    ht = incident.host_timings
    if not len(ht):
        return _nccl_machine(incident)
    hosts: set[str] = set()
    for expr in ht.loc[ht["metric"] == "nodelist", "host"].dropna().astype(str):
        try:
            hosts.update(expand(expr))
        except ValueError:
            continue
    return sorted(fold_domains(hosts)) if hosts else _nccl_machine(incident)


def _nccl_machine(incident: Incident) -> list[str]:
    """The machine of NCCL's process lines, when they all name the same one; else []."""
    p = incident.tables.get("processes")
    if p is None or not len(p):
        return []
    hosts = {str(h) for h in p["host"].dropna() if is_host(h)}
    return sorted(hosts) if len(hosts) == 1 else []


def _exit_delay(crash: Crash, events: pd.DataFrame) -> float | None:
    """Seconds from the first failure to the job's last failure line of the same incident, when
    positive. Kernel lines (Xid) are the host's, not the job's, and a gap of more than
    ``INCIDENT_GAP_S`` between failure lines starts another incident (a dmesg spanning days
    holds several; the survivors did not hang that long)."""
    if crash.first is None or pd.isna(crash.first["time"]) or not len(events):
        return None
    t0 = crash.first["time"]
    last = t0
    for t in sorted(t for t in events.loc[events["kind"] != "xid", "time"].dropna() if t >= t0):
        if (t - last).total_seconds() > INCIDENT_GAP_S:
            break
        last = t
    d = (last - t0).total_seconds()
    return d if d > 0 else None
