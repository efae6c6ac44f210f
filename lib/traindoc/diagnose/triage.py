"""Triage: which failure classes an incident shows, in which order, and which came first.

A page does not say what failed. Triage runs every class's own diagnosis
(``traindoc.diagnose.<class>``) and reports each class its runbook reports; a class it could
not judge (too few logged steps, no data, a diagnosis that failed) is listed under
``not_checked`` with the reason, and its confidence is never above the cause's runbook's.

- ``timeout``: wherever the timeout runbook finds one: collective rows in state ``timed_out``
  (NCCL watchdog, gloo), and also a desync ('Detected mismatch between collectives'), a
  flight-recorder straggler or a stuck watchdog (heartbeat monitor).
- ``gpu_crash``: errors of kind cuda_error, xid, oom, ecc or signal, any error row whose text
  carries a CUDA error (a watchdog that died of one), worker exits by a signal, and the first
  failure the gpu_crash runbook names when it is a GPU, NCCL or signal failure. Teardown is not
  a crash: the SIGTERM/SIGKILL a launcher or scheduler sends to the survivors, and the abort of
  a rank whose watchdog had already timed out. A Python exception is a program error, named in
  its own finding, unless it took its process down (the launcher recorded the exit: torchrun's
  ChildFailedError; or its traceback runs up to a script's ``<module>`` frame, under runpy's
  for ``python -m``, so nothing caught it and the interpreter exited on it) — then the job
  crashed, and the class is
  gpu_crash (error_kind python). A launcher stopped from outside with no failure of its own
  (the runbook's outside stop: torchrun's "Received 15 death signal", DeepSpeed's "Main process
  received SIGTERM, exiting") is how the job ended: ordered after any other class seen (the
  runbook leaves a hang someone killed to the hang), but for a slower rate the run kept stepping
  at or loss spikes it came back from before it was stopped.
  NCCL's report of a peer or the network failing under a process, with no collective timed
  out, is a crash seen from the victim's side. So is a fatal error's faulthandler dump whose
  ``Fatal Python error`` header the log lost: its current thread was computing, not waiting
  (``deadlock.stacks.crash_dumps``). So is one rank of several stopped from outside while no
  other says it was (Lightning's "[rank: 2] Received SIGTERM: 15" in a job of five); a stop
  every worker reports names no class, as a scheduler's cancel does not.
- ``deadlock``: stack dumps (py-spy, faulthandler) in the bundle, taken while processes wait
  (not a crash's traceback or faulthandler dump: ``deadlock.stacks.hang_stacks``); ranks still
  waiting in the start-up barrier; a stall warning that names the ranks a collective waits for
  while nothing has timed out (Horovod's stall inspector: ``deadlock.stacks.stall_reports``) —
  a warning, not a timeout: its timeout view is the same hang, and a watchdog that did time out
  beside it makes it a timeout's prelude.
- ``throughput`` / ``loss_spike``: present when the class's own diagnosis finds something,
  whatever the number of logged steps; below ``MIN_SERIES`` steps, a diagnosis that finds
  nothing is listed under ``not_checked``. Loss spikes that are the series' own noise (three
  or more blips, each over within ``BLIP_POINTS`` logged points; three or more spikes back by
  themselves, none standing out of the others; a rise no larger than the loss's own moves
  between logged points) are no finding; nor are, once back by themselves, the first updates'
  overshoot of the untrained model's loss (a spike at the second logged loss of a log starting
  at step 1) and slow humps (``HUMP_POINTS`` or more logged points of climb); nor a lone
  one-point spike under twice its baseline, back at once (``BLIP_RATIO``), nor a spike on fewer
  than ``FEW_HISTORY`` logged losses that never came back but whose loss falls back nearer its
  baseline than its peak (a swing of a noise the log is too short to measure). A change or
  spike that starts at the first step of a job whose iteration plan differs from the job
  logged before it (``common.mixed_jobs``) compares two jobs: listed under ``not_checked``.
  So is a throughput change seen only between a run's head and its tail, across a gap in the
  logged steps far longer than the logged span on either side (``GAP_FINDING``, ``throughput.change.across_gap``): the data has
  a gap, what the rate did in it is unknown.

The classes are then ordered: by the earliest time of their evidence where both have one;
otherwise torchrun's root-cause record decides (its failed rank belongs to one class), and
then the order of the lines in the files. The first class is the likely cause, the rest its
cascade — a dead rank leaves its peers waiting in a collective until their watchdogs fire.
A timeout read only from the flight recorder or status lines (no watchdog fired) and stack
dumps are one hang: the dumps, which say where each process waits, come first. A throughput
change the run went on stepping through (a step or a gradual slide, not a stall or a pause) is
no cause of a crash: the crash comes first, the slowdown is reported as one of its own. Nor
are loss spikes the run came back from by themselves a cause of a slower rate: the throughput
change comes first.

``analyse`` reads the incident once into a ``TriageAnalysis`` (the classes found, ordered, the
root-cause record, the lines no parser understood, the timeline's table); ``report`` writes
the prose; ``diagnose`` is both, ``triage`` both plus the ordered sightings. All are pure;
``with_runbooks`` adds each class's runbook verdict through a runner the caller passes
(``traindoc.execute.runbook_runner`` runs the notebooks with papermill). The timeline figure is
``traindoc.plots.triage_timeline(analysis.timeline)``.
"""

from __future__ import annotations

import functools
import html
import math
import re
import statistics
from bisect import bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from ..hostlist import runs
from ..incident import Incident
from ..parse.benchmarks import LOOP_RAISED_METRIC, SHUTDOWN_METRIC
from ..parse.collectives import STORE_BARRIER_OP
from ..report import (
    Action,
    Confidence,
    Finding,
    Report,
    escape_frame,
    evidence,
    ranked,
    unrecognized_lines,
)
from ..schema import with_source
from ..shellsafe import quote_all
from . import NAMES as CLASSES
from . import failure_class
from .collectives import entered_lag, entered_rows, with_status_pg
from .common import input_findings, mixed_jobs, training_steps, when_text, who
from .deadlock.stacks import barrier_waits, crash_dumps, hang_stacks, stacks_alone, stall_reports
from .gpu_crash.events import (
    C10D_ABORT_RE,
    CUT_TRACEBACK_WORDS,
    KERNEL_ASSERT_CODE,
    NOT_A_FAILURE_CODES,
    SCHEDULER_STOP_CODES,
    TEARDOWN_SIGNALS,
)
from .loss_spike.analysis import skipping_start
from .timeout.analysis import STUCK_CODES, barrier_wait_rows, startup_of, status_rows, timeout_rows
from .timeout.report import at_sequence, barrier_facts, collective_name, desync_words, timeout_title
from .types import UNKNOWN_GROUP, Mismatch, Pattern

# Classes judged by their own diagnosis module; the others are read straight off the tables.
METRIC_CLASSES = ("throughput", "loss_spike")
# ... or any skipped step at a loss scale under this: a dynamic scaler starts at 2**15 to 2**32,
# so one that halved below 1 is past any calibration, its gradients overflowing even shrunk (a
# loss problem at whatever step: PaddleNLP#7537's "optimizer not run, scale_before: 0.25,
# scale_after: 0.125" at global step 18)
SUB_UNIT_SCALE = 1.0
# A loss spike back within tolerance this many logged points after it opened is a blip; a run
# with NOISE_BLIPS or more of them has a heavy-tailed per-batch loss (a diffusion MSE, a short
# speedrun's small batches), and triage reads its blips as that noise, not an incident.
BLIP_POINTS = 4
NOISE_BLIPS = 3
# A spike that opens at the run's second logged loss when the first is the run's own first step
# (at most FIRST_STEP) rests on one point, the untrained model's loss: the first updates
# overshooting it and coming back by themselves are the start of training, not an incident
# (openai/parameter-golf's 'step:1 … 6.94', 'step:2 … 12.37', 'step:3 … 9.1').
FIRST_STEP = 1
# A spike whose loss climbed for this many logged points or more to its peak and came back by
# itself is a slow hump (a warm-up schedule's; a smoothing logger's window), not a spike.
HUMP_POINTS = 20
# NOISE_BLIPS or more spikes that came back by themselves, however long each took, are the
# series' own excursions (a per-batch loss printed unsmoothed: Paddle's VinVL retrieval loss,
# 0.004 with a rise to ~0.1 every few hundred steps); one stays an incident only where its rise
# is STAND_OUT times every other one's (noprop's CIFAR-100 log: 0.66 -> 1.26 among rises of
# 0.10 and 0.19).
STAND_OUT = 2.0
# A spike whose rise above its baseline is under NOISE_RISE times the median move between
# consecutive logged losses outside it (NOISE_MOVES of them at least) is the loss moving as it
# always does (an HF Trainer fine-tune logging every step of a tiny batch: 2393, 1391, 2080,
# 2559, 1194, 1769, …), not a spike.
NOISE_RISE = 3.0
NOISE_MOVES = 3
# A lone spike of one logged point, back at the very next one, whose peak is under BLIP_RATIO
# times its baseline (the loss did not even double) is one batch's loss and did the run no harm:
# the runbook shows it, triage names no incident for it (build-nanogpt's per-step 3.04 -> 3.40
# -> 3.05 at step 17632; ViCLIP's loss logged every 10 iterations, 1.24 -> 1.93 -> 1.13) —
# unless its rise is BLIP_STANDS_OUT times the most any other logged loss of the run rose above
# its own level: a loss that never strays by more than a tenth and jumps by 0.9 for one line
# (MLPerf Llama-2 LoRA's train_loss 1.33 -> 2.21 -> 1.23) or a pre-training loss whose noise
# reaches 0.5 and jumps by 1.76 (torchtitan's 4.09 -> 5.87 -> 4.05 at step 8490) is a batch
# the model failed on as it failed on no other: worth paging. The blips let go rise about 2x
# their run's noise (ViCLIP 2.1x, build-nanogpt 1.8x).
BLIP_RATIO = 2.0
BLIP_STANDS_OUT = 3.0
# A spike that never came back and rests on fewer than FEW_HISTORY logged losses before it is
# known only by the level it holds: where the loss, once past the midpoint of its baseline and
# peak, falls back below it, the log shows a swing of a noise it is too short to measure, not
# a spike (AT-BSN's per-batch loss 3.42, 6.29, 4.81, 4.57, 6.91; deepspeech.pytorch's
# per-batch CTC loss 3.2, 3.7, 3.9, 2.0, 4.2, 10.1, 10.0, 12.4, 8.1, 5.8 …). A climb (TF's
# Faster R-CNN 0.14 -> 2.5e4 … 1.2e6) or a jump to a level held (BLOOM's 2.67 -> 4.37, 4.37,
# 4.39, … 4.10) stays.
FEW_HISTORY = 5
CRASH_KINDS = frozenset({"cuda_error", "xid", "oom", "ecc", "signal"})
# error kinds of the gpu_crash runbook's first failure that triage calls a GPU crash on its own
# word (a Python exception is one only when it took its process down; see ``_gpu_crash``).
RUNBOOK_CRASH_KINDS = frozenset({"cuda_error", "xid", "oom", "ecc", "signal", "nccl_error",
                                 "mpi_error"})
# A scheduler taking its nodes back from a healthy job (SchedMD/slurm slurmstepd/req.c: "*** JOB
# … CANCELLED AT … DUE TO PREEMPTION ***" / "DUE TO JOB REQUEUE ***"; LSF's "TERM_PREEMPT: job
# killed after preemption."): no crash of the job's own.
SCHEDULER_TAKEBACK_CODES = frozenset({"slurm_preemption", "slurm_job_requeue", "lsf_preempt"})
# A scheduler's end of the job that is no crash, like SLURM's (every "slurm_" code): its time
# limit (PBS/Torque, Moab, LSF, a Kubernetes Job's deadline) or its preemption (LSF)
SCHEDULER_END_CODES = frozenset({"pbs_walltime", "moab_wallclock", "lsf_runlimit", "lsf_preempt",
                                 "k8s_deadline_exceeded"})
# errors.code of lines that are a launcher or scheduler tearing the job down, not a crash.
TEARDOWN_CODES = frozenset({"launcher_sigterm", "launcher_received_signal", "launcher_kill"})
# errors.code of lines saying a peer went away: a rank that then exits with an exception is
# the cascade of that peer's failure, not a crash of its own.
PEER_LOST_CODES = frozenset({"gloo_connection_reset", "gloo_connection_closed", "nccl_remote"})
RECORD_HEADER_RE = re.compile(r"^\s*\[\d+\]:\s*$")
# the record's row stands at its traceback line where that names the signal (parse.torchrun)
RECORD_SIGNAL_RE = re.compile(r"^\s*traceback\s*:\s*[Ss]ignal \d+ \(SIG\w+\) received by PID \d+\s*$")
# A CUDA failure, whatever parser filed the line (torch>=2.2 words a GPU fault seen by the NCCL
# watchdog as "Process group watchdog thread terminated with exception: CUDA error: …").
CUDA_TEXT_RE = re.compile(r"CUDA error: |CUDA out of memory|NVRM: Xid|uncorrectable ECC")
# An error line that reports a peer or the network, not a failure of its own.
PEER_TEXT_RE = re.compile(r"NCCL|[Gg]loo|[Cc]onnection (?:reset|closed|refused)|remote process|"
                          r"[Nn]etwork|[Bb]roken pipe|socket|Socket")
SIGNAL_NAME_RE = re.compile(r"\bSIG[A-Z]{2,}\b")
# A Python exception saying a worker process died under the rank, with no exception of its own
# (killed: shared memory, the OOM killer): torch's DataLoader (dataloader.py _try_get_data,
# suprosanna/relationformer#18, facebookresearch/detectron2#384). Not "… with exit code 1":
# the worker's own exception.
WORKER_DIED_RE = re.compile(r"DataLoader worker \(pid\(s\) [\d, ]+\) exited unexpectedly(?! with)")
# Hydra's report that the @hydra.main task raised ("Error executing job with overrides: […]",
# hydra/core/utils.py): run_and_report then exits 1, so the process went down with it
HYDRA_REPORT_RE = re.compile(r"^Error executing job with overrides:")
# errors.code of argparse's parser.error line, after which the program exits 2
ARGPARSE_CODE = "argparse_error"
# The outermost frame of a traceback that reached the main script's top level ("<module>
# (/path/train.py:195)"): nothing caught the exception, the interpreter exited on it.
TOP_LEVEL_FRAME_RE = re.compile(r"^<module> \(")
# runpy's frames above a module run by ``python -m`` ("_run_module_as_main (<frozen runpy>:198)",
# Python < 3.11: "_run_module_as_main (/usr/lib/python3.8/runpy.py:194)"): the module's own
# ``<module>`` frame is the top level under them
RUNPY_FRAME_RE = re.compile(r"\((?:<frozen runpy>|[^()]*[/\\]runpy\.py):\d+\)$")
# Throughput changes the run went on stepping through: a slower level is no failure that kills
# a process, so a crash logged after it is named first (a data loader's exception a day after a
# 13 % creep, linhandev/iann's workerlog.0); a stall or a pause (progress stopped) still counts
# by its time, as the hang a watchdog's abort may follow.
LIVED_WITH_SHAPES = frozenset({"step", "gradual"})
GAP_FINDING = "change_across_gap"  # a metric runbook's change seen only across a gap in the log
# a failure message quoted in triage's cause is cut after this many characters
MESSAGE_CHARS = 140
MIN_SERIES = 8  # logged iterations needed before throughput or loss can be judged
MAX_LINES = 8  # evidence lines kept per class
MAX_UNPARSED = 20  # failure-looking lines no parser understood, shown before a count
POSITION_STRIDE = 1_000_000  # a timeline position: file index * stride + line number
TIMELINE_COLUMNS = ["class", "role", "time", "position", "who"]


def _clip(msg: str) -> str:
    """``msg`` as triage's cause quotes it: cut after ``MESSAGE_CHARS``, marked with an ellipsis."""
    return msg if len(msg) <= MESSAGE_CHARS else msg[:MESSAGE_CHARS] + " …"


@dataclass
class Sighting:
    """One failure class seen in the incident: its evidence rows and where it starts."""

    cls: str
    rows: pd.DataFrame
    detail: str
    ranks: list[int] = field(default_factory=list)
    first_seen: datetime | None = None
    position: tuple[int, int] = (1 << 30, 0)  # (file index, line) of the first evidence row
    report: Report | None = None
    # a timeout read without a watchdog/gloo timeout line (flight recorder, status lines): a
    # view of the same hang the stack dumps show, which the dumps place better
    hang_view: bool = False
    # the launcher stopped from outside with no failure of its own (gpu_crash's outside stop):
    # how the job ended, ordered after any other class seen
    outside_stop: bool = False
    # a lower rate the run kept stepping at (throughput's step or gradual change, not a stall
    # or a pause): no cause of a crash, ordered after one (``LIVED_WITH_SHAPES``)
    lived_with: bool = False
    # loss spikes that all came back by themselves: the run went on, so a stop from outside
    # after them is how it ended, not their consequence
    recovered: bool = False
    # a stall warning (nothing timed out): where it comes before the launcher's first-exit
    # record, the job hung first, and the exit is the hang's consequence
    stall: bool = False
    # ``first_seen`` is a bound, not a logged time: the class's first evidence carries no
    # time and was printed before a timed line of its file (``_first``)
    bounded: bool = False


def _row_positions(incident: Incident, df: pd.DataFrame) -> list[tuple[int, int]]:
    """(file index, line number) of each row's ``source`` ('file:lineno' or 'file#entryN')."""
    files = {f: i for i, f in enumerate(incident.account.file_list)}
    out = []
    for src in df["source"].fillna(""):
        name, _, num = str(src).rpartition(":")
        if "#entry" in src:
            name, _, num = str(src).partition("#entry")
        if not name:
            name, num = str(src), "0"
        out.append((files.get(name, len(files)), int(num) if num.isdigit() else 0))
    return out


def _ordered(incident: Incident, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` sorted by time (rows without one last), then by file position."""
    if not len(df):
        return df
    pos = _row_positions(incident, df)
    key = df.assign(_t=df["time"] if "time" in df else pd.NaT,
                    _f=[p[0] for p in pos], _l=[p[1] for p in pos])
    key = key.sort_values(["_t", "_f", "_l"], na_position="last", kind="stable")
    return key.drop(columns=["_t", "_f", "_l"])


def _first(incident: Incident, df: pd.DataFrame
           ) -> tuple[datetime | None, tuple[int, int], bool]:
    """Earliest evidence time (None when no row has one), the earliest file position, and
    whether that time is a bound: an evidence row without a time was printed before the next
    timed line of its file, so it happened no later than that line's time (rank 6's
    OutOfMemoryError traceback, untimed, printed above the other ranks' watchdog timeouts at
    18:39:29, while torchrun's record of rank 6's exit says 18:40:21; AlgoPerf's
    schedule-free AdamW run)."""
    t = None
    if "time" in df and df["time"].notna().any():
        t = pd.Timestamp(df["time"].min()).to_pydatetime()
    positions = _row_positions(incident, df)
    pos = min(positions, default=(1 << 30, 0))
    untimed = (df["time"].isna() if "time" in df else pd.Series(True, index=df.index)).to_numpy()
    marks = _timed_lines(incident)
    bound = None
    for (f, line), no_time in zip(positions, untimed, strict=True):
        after = marks.get(f)
        if not no_time or not after:
            continue
        i = bisect_right(after, (line, pd.Timestamp.max))
        if i < len(after):
            b = after[i][1]
            bound = b if bound is None or b < bound else bound
    if bound is not None and (t is None or bound < pd.Timestamp(t)):
        return bound.to_pydatetime(), pos, True
    return t, pos, False


# the tables whose rows carry a logged time and a place: what bounds an untimed line's time
TIMED_TABLES = ("errors", "exits", "collectives", "iterations", "checkpoints")


def _timed_lines(incident: Incident) -> dict[int, list[tuple[int, pd.Timestamp]]]:
    """Per file index, the (line, time) of every row of ``TIMED_TABLES`` with a logged time,
    in line order (computed once an incident, ``Incident.once``)."""
    return incident.once("timed_lines", _timed_lines_of)


def _timed_lines_of(incident: Incident) -> dict[int, list[tuple[int, pd.Timestamp]]]:
    """``_timed_lines`` computed."""
    out: dict[int, list[tuple[int, pd.Timestamp]]] = {}
    for name in TIMED_TABLES:
        t = with_source(incident.tables.get(name, pd.DataFrame()))
        if not len(t) or "time" not in t or "source" not in t:
            continue
        t = t[t["time"].notna()]
        for (f, line), when in zip(_row_positions(incident, t), t["time"], strict=True):
            out.setdefault(f, []).append((line, pd.Timestamp(when)))
    for marks in out.values():
        marks.sort()
    return out


def _true(v: Any) -> bool:
    """True for a true value; False for false, None and <NA>."""
    return False if v is None or v is pd.NA else bool(v)


def _ranks(df: pd.DataFrame) -> list[int]:
    return sorted({int(r) for r in df["rank"].dropna()}) if "rank" in df else []




# -- detection, one function per class --------------------------------------------------------

def _timeouts(incident: Incident) -> pd.DataFrame:
    """One timeout row per rank and collective: the watchdog line and its 'terminated with
    exception' wrapper are one timeout once the status line names the process group."""
    pg = Incident({**incident.tables, "collectives": with_status_pg(incident.collectives)},
                  incident.account, incident.unrecognized)
    return timeout_rows(pg)


def _timeout_evidence(incident: Incident, mm: Mismatch | None) -> pd.DataFrame:
    """What the timeout runbook reads as a timeout: the watchdog/gloo lines, else the status
    lines naming the failed work, the collectives of the first mismatch (flight recorder,
    'Detected mismatch between collectives') and the heartbeat monitor's 'watchdog got stuck'
    lines."""
    rows = _timeouts(incident)
    if len(rows):
        return rows
    c = with_status_pg(incident.collectives)
    e = incident.errors
    parts = [status_rows(c),
             e[e["code"].isin(list(STUCK_CODES)) & e["rank"].notna()]]
    if mm:
        parts.append(c[(c["seq_num"] == mm.seq_num)
                       & (c["process_group"].fillna(UNKNOWN_GROUP) == mm.process_group)])
    parts.append(c[c["state"].isin(["mismatch", "absent"])])  # desync and hang reports
    parts.append(barrier_wait_rows(c))  # ranks still waiting in the start-up barrier
    parts = [p for p in parts if len(p)]
    if not parts:
        return rows
    cols = ["rank", "host", "time", "source", "line"]
    out = pd.concat([p[[k for k in cols if k in p]] for p in parts], ignore_index=True)
    return out.drop_duplicates(["source", "line"])


def _timeout(incident: Incident, rep: Report | None) -> Sighting | None:
    """A timeout wherever the timeout runbook reports one (its facts say what and when)."""
    if rep is None or any(f.id == "no_timeout" for f in rep.findings):
        return None
    f = rep.facts
    mm = Mismatch.from_fact(f.get("first_mismatch"))
    rows = _timeout_evidence(incident, mm)
    if not len(rows):
        return None
    ranks = sorted({int(r) for r in f.get("timed_out_ranks") or []})
    # a stall warning (Horovod's) names waiting ranks before anything times out: a hang's view
    timed_out = bool(len(_timeouts(incident))) and not len(stall_reports(incident.collectives))
    what = collective_name(f) + (
        f" #{f['seq_num']}" if f.get("seq_num") is not None else "")
    if f.get("pattern") == Pattern.DESYNC and mm:
        ops = ", ".join(f"rank {r}: {o}" for r, o in mm.ops.items())
        detail = f"a desync — ranks issued {desync_words(mm)} {at_sequence(mm)} ({ops})"
    elif f.get("pattern") == Pattern.STRAGGLER and f.get("lagging_ranks"):
        detail = f"{who(f['lagging_ranks'])} never entered {what}, which the others waited in"
    elif f.get("pattern") == Pattern.ALL_STUCK:
        detail = f"every rank entered {what} and it never completed"
    elif (not timed_out and not f.get("op_type") and f.get("seq_num") is None
          and not barrier_facts(f)):
        detail = (f"the NCCL watchdog of {who(ranks)} got stuck (heartbeat monitor): the process "
                  "hung inside NCCL/CUDA")
    else:
        detail = ""
    if timed_out or not detail:
        # Nothing timed out yet (a hang report, ranks still waiting in the start-up barrier):
        # the title says what has not completed, never that a rank timed out.
        reported_only = not timed_out and not len(status_rows(incident.collectives))
        title = timeout_title(f, reported_only=reported_only)
        start = None if f.get("op_type") or barrier_facts(f) else startup_of(rows)
        if start is not None:  # the c10d socket, the TCPStore, the rendezvous: no collective
            title = f"{who(ranks)} timed out at start-up, before any collective: {start}"
        title = title[:1].lower() + title[1:]
        detail = f"{title}: {detail}" if detail else title
    return Sighting("timeout", rows, detail, ranks or _ranks(rows), report=rep,
                    hang_view=not timed_out)


def _signal_of(row: Mapping[str, Any]) -> str | None:
    for col in ("signal", "code", "message", "line"):
        v = row.get(col)
        if isinstance(v, str):
            m = SIGNAL_NAME_RE.search(v)
            if m:
                return m.group(0)
    return None


def _follows_timeout(incident: Incident, rows: pd.DataFrame, timeouts: pd.DataFrame) -> pd.Series:
    """Rows that are a timed-out rank's own teardown: same rank, or no rank and later in the
    same file than a timeout line."""
    if not len(timeouts) or not len(rows):
        return pd.Series(False, index=rows.index)
    out_ranks = set(_ranks(timeouts))
    same_rank = rows["rank"].isin(list(out_ranks)).fillna(False).astype(bool)
    tpos = _row_positions(incident, timeouts)
    first_in_file: dict[int, int] = {}
    for f, line in tpos:
        first_in_file[f] = min(line, first_in_file.get(f, line))
    later = [f in first_in_file and line > first_in_file[f]
             for f, line in _row_positions(incident, rows)]
    no_rank = rows["rank"].isna().to_numpy()
    return same_rank | pd.Series(later, index=rows.index) & pd.Series(no_rank, index=rows.index)


def crash_rows(incident: Incident) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(errors, exits) that are crashes rather than teardown (see the module doc)."""
    e, x = incident.errors, incident.exits
    timeouts = _timeouts(incident)
    kind = e["kind"].fillna("")
    cuda_text = e["line"].fillna("").str.contains(CUDA_TEXT_RE)
    err = e[kind.isin(list(CRASH_KINDS)) | cuda_text]
    if len(err):
        sig = pd.Series([_signal_of(r) for r in err.to_dict("records")], index=err.index)
        is_signal = err["kind"].fillna("") == "signal"
        teardown = is_signal & (err["code"].fillna("").isin(list(TEARDOWN_CODES))
                                | err["code"].fillna("").str.startswith("slurm_")
                                | err["code"].fillna("").isin(list(SCHEDULER_END_CODES))
                                | sig.isin(list(TEARDOWN_SIGNALS)))
        # A timed-out rank's abort is the watchdog's doing, not a crash (keep its GPU errors).
        teardown |= is_signal & _follows_timeout(incident, err, timeouts)
        if len(timeouts):  # an abort on c10d's exception: the timeout's, wherever printed
            teardown |= is_signal & err["line"].fillna("").str.contains(C10D_ABORT_RE)
        err = err[~teardown.astype(bool)]
    x = worker_exits(x)
    if len(x):
        sig = x["signal"].fillna("")
        # a record with neither code nor signal still says the worker failed (torchelastic's
        # FAILED event, a ChildFailedError record cut before its exitcode)
        failed = (sig != "") | (x["exitcode"].fillna(1) != 0)
        teardown = sig.isin(list(TEARDOWN_SIGNALS)) | _follows_timeout(incident, x, timeouts)
        lost = e[e["code"].fillna("").isin(list(PEER_LOST_CODES))]
        teardown |= (sig == "") & x["rank"].isin(_ranks(lost)).fillna(False).astype(bool)
        x = x[failed.astype(bool) & ~teardown.astype(bool)]
    return err, x


def uncaught(stacks: pd.DataFrame) -> bool:
    """Whether a raised traceback runs up to a script's top level (its outermost frame is
    ``<module>``): an exception nothing caught, which ended its interpreter."""
    if not len(stacks):
        return False
    raised = stacks[stacks["state"].fillna("") == "raised"]
    return any(TOP_LEVEL_FRAME_RE.match(_outermost(f)) for f in raised["frames"])


def _outermost(frames: Any) -> str:
    """A traceback's outermost frame below runpy's (``RUNPY_FRAME_RE``); '' when none."""
    own = [str(f) for f in frames if not RUNPY_FRAME_RE.search(str(f))] \
        if isinstance(frames, list) else []
    return own[-1] if own else ""


def worker_exits(x: pd.DataFrame) -> pd.DataFrame:
    """One exit row per worker. A worker torchrun reported twice (its 'failed (exitcode: …)'
    line and its ChildFailedError record, same pid) keeps the record, which names the global
    rank. When torchrun reported its workers, the scheduler's per-task exits ('srun: error: …
    task 0: Exited with exit code 1': no pid, no local rank) are its agents' exits, which
    restate them, and are dropped."""
    if not len(x):
        return x
    record = x["root_cause"].notna()
    if not record.any():
        return x
    pids = set(x.loc[record, "pid"].dropna())
    restated = ~record & x["pid"].isin(list(pids)).fillna(False).astype(bool)
    agent = ~record & x["pid"].isna() & x["local_rank"].isna()
    return x[~(restated | agent)]


def exit_evidence(x: pd.DataFrame) -> pd.DataFrame:
    """Exit rows whose ``line`` is only torchrun's record header ('[0]:') with the record
    spelled out, so the evidence says who died and how."""
    if not len(x):
        return x
    x = x.copy()
    lines = x["line"].fillna("")
    header = lines.str.match(RECORD_HEADER_RE) | lines.str.match(RECORD_SIGNAL_RE)
    for i in x.index[header]:
        r = x.loc[i]
        who = "rank ?" if pd.isna(r["rank"]) else f"rank {int(r['rank'])}"
        if pd.notna(r.get("local_rank")):
            who += f" (local_rank {int(r['local_rank'])})"
        if pd.notna(r.get("host")):
            who += f" on {r['host']}"
        code = "?" if pd.isna(r["exitcode"]) else int(r["exitcode"])
        sig = f" ({r['signal']})" if pd.notna(r["signal"]) else ""
        rc = ", torchrun's root cause" if _true(r.get("root_cause")) else ""
        sep = " " if RECORD_HEADER_RE.match(str(r["line"])) else " — "
        x.loc[i, "line"] = f"{str(r['line']).strip()}{sep}{who}: exitcode {code}{sig}{rc}"
    return x


HEADLINE_KINDS = ("cuda_error", "ecc", "oom", "xid", "signal")


def headline_error(incident: Incident, err: pd.DataFrame) -> pd.Series:
    """The error that best says what happened: a GPU error over an Xid over a signal, a row
    that names its rank over one that does not, the error over a kernel's failed assertion
    printed before it (its detail: the gpu_crash runbook names the error), then the earliest."""
    kind = err["kind"].fillna("")
    rank_of = {k: i for i, k in enumerate(HEADLINE_KINDS)}
    key = err.assign(_k=[rank_of.get(k, len(HEADLINE_KINDS)) for k in kind],
                     _r=err["rank"].isna().astype(int),
                     _a=(err["code"] == KERNEL_ASSERT_CODE).fillna(False).astype(int))
    key = _ordered(incident, key)
    return key.sort_values(["_k", "_r", "_a"], kind="stable").iloc[0]


def _gpu_crash(incident: Incident, rep: Report | None = None) -> Sighting | None:
    """A crashed or killed rank: a GPU/NCCL error, a fatal signal, or the exit of a rank that
    died without a Python exception (see ``crash_rows``). A Python exception is a program error,
    not a GPU crash (``program_error``); a GPU/NCCL failure the gpu_crash runbook names first
    is one even where the lines fit no rule above (NCCL's 'unhandled cuda error')."""
    err, x = crash_rows(incident)
    kind = (rep.facts.get("error_kind") if rep is not None else None) or ""
    # a Python exception that took its process down (the launcher recorded the exit): the job
    # crashed, and the corpus names that a gpu_crash whose error_kind is python
    # (not a collective's own failure: a desync's RuntimeError, a timeout's abort)
    # (so is one that says a worker process under it died: torch's DataLoader)
    coll = incident.collectives
    message = str((rep.facts.get("error_message") if rep is not None else None) or "")
    died = (kind == "python" and (bool(len(x)) or bool(WORKER_DIED_RE.search(message))
                                  or bool(HYDRA_REPORT_RE.match(message))
                                  or uncaught(incident.stacks) or _argparse_exit(incident, message)
                                  or _shut_down_on(incident, message)
                                  or _loop_raised(incident, message)
                                  or _stopped_after(incident, message)
                                  # (the log ends inside the traceback: nothing came after it)
                                  or message.startswith(CUT_TRACEBACK_WORDS))
            and not coll["state"].isin(["timed_out", "mismatch", "absent"]).any())
    if len(x) and not len(err) and kind in ("python", ""):
        # only exits with a code: the rank's own Python exception, or nothing said it crashed
        x = x[x["signal"].notna()]
    if not len(err) and not len(x):
        if kind in RUNBOOK_CRASH_KINDS or died:
            return _runbook_crash(incident, rep)
        return _dump_crash(incident)
    # a kernel's failed assertion is printed once per GPU thread: its first line says it all
    err = err[(err["code"] != KERNEL_ASSERT_CODE).fillna(True)
              | ~err.duplicated(subset=["code", "message", "rank"])]
    cols = ["rank", "host", "time", "source", "line"]
    rows = pd.concat([_ordered(incident, err)[cols], exit_evidence(_ordered(incident, x))[cols]],
                     ignore_index=True)
    ranks = _ranks(rows)
    parts = []
    if len(err):
        first = headline_error(incident, err)
        culprit = who([int(first["rank"])] if pd.notna(first["rank"]) else [])
        msg = str(first["message"]) if pd.notna(first["message"]) else str(first["kind"])
        parts.append(f"{culprit}: {_clip(msg)}")
    if len(x):
        rc = x[x["root_cause"].fillna(False).astype(bool)]
        first = (_ordered(incident, rc) if len(rc) else _ordered(incident, x)).iloc[0]
        how = (f"died of {first['signal']}" if pd.notna(first["signal"])
               else f"exited with code {int(first['exitcode'])}" if pd.notna(first["exitcode"])
               else "exited")  # (a launcher that names the process but not its status)
        code = f" (exit {int(first['exitcode'])})" if pd.notna(first["exitcode"]) and pd.notna(
            first["signal"]) else ""
        tail = ", torchrun's root cause" if _true(first["root_cause"]) else ""
        r = who([int(first["rank"])] if pd.notna(first["rank"]) else [])
        parts.append(f"{r} {how}{code}{tail}")
    return Sighting("gpu_crash", rows, "; ".join(parts), ranks)


def _raised_rows(incident: Incident, message: str) -> pd.DataFrame:
    """The ``errors`` rows of the Python exception ``message`` (none for no message)."""
    errs = incident.errors
    if not message or not len(errs):
        return errs.iloc[0:0]
    return errs[(errs["kind"] == "python") & (errs["message"] == message)]


def _stopped_after(incident: Incident, message: str) -> bool:
    """Whether the process that raised ``message`` was then stopped (a SIGTERM it reports, its
    launcher gone: gpu_crash's stop codes) in the same file: the exception ended its run
    (Paddle's DataLoader thread raising, then "FatalError: `Termination signal` is detected
    by the operating system" as the launcher tears the worker down)."""
    from .gpu_crash.analysis import STOPPED_CODES

    failed = _raised_rows(incident, message)
    stops = incident.errors[incident.errors["code"].isin(list(STOPPED_CODES))]
    if not len(failed) or not len(stops):
        return False
    at = _row_positions(incident, failed.head(1))[0]
    return any(f == at[0] and ln > at[1] for f, ln in _row_positions(incident, stops))


def _loop_raised(incident: Incident, message: str) -> bool:
    """Whether a training loop said it stopped on the exception ``message`` and raised it
    again (``exit:loop_raised``, detectron2's "Exception during training:" just before the
    traceback, in the same file): the training ended on it."""
    ht, failed = incident.host_timings, _raised_rows(incident, message)
    marks = ht[ht["metric"] == LOOP_RAISED_METRIC] if len(ht) else ht
    if not len(marks) or not len(failed):
        return False
    at = set(_row_positions(incident, failed))
    return any(f == ef and ln < el and el - ln <= LOOP_RAISED_REACH
               for f, ln in _row_positions(incident, marks) for ef, el in at)


# the lines a traceback may take between a loop's "Exception during training:" and the
# exception's own line
LOOP_RAISED_REACH = 400


def _shut_down_on(incident: Incident, message: str) -> bool:
    """Whether the interpreter shut down on the exception ``message``: the resource tracker's
    warning at shutdown (``exit:shutdown``) comes after its line in the same file with no step
    logged in between (an exception in a thread, a DataLoader's feeder, leaves no top-level
    traceback: ROPADet's ENOSPC in multiprocessing's queue feeder, then "There appear to be 662
    leaked semaphore objects to clean up at shutdown"). A run that went on stepping after the
    exception, or ended with no exception before the warning, shut down on something else."""
    ht, failed = incident.host_timings, _raised_rows(incident, message)
    marks = ht[ht["metric"] == SHUTDOWN_METRIC] if len(ht) else ht
    if not len(marks) or not len(failed):
        return False
    (ef, el), = _row_positions(incident, failed.head(1))
    ends = [ln for f, ln in _row_positions(incident, marks) if f == ef and ln > el]
    if not ends:
        return False
    it = incident.iterations
    if len(it):
        files = incident.account.file_list
        name = files[ef] if ef < len(files) else None
        lines = it.loc[(it["file"].astype("string") == name).fillna(False), "lineno"]
        if ((lines > el) & (lines < min(ends))).fillna(False).any():
            return False
    return True


def _argparse_exit(incident: Incident, message: str) -> bool:
    """Whether the failure is argparse's ``prog: error: …`` (``parser.error``): the program
    exits 2 on it, with no traceback, whether or not a launcher records the exit (an mpirun's
    ranks under sbatch: gpu_crash-pbl-sambanova-measure-perf-args)."""
    errs = incident.errors
    if not message or not len(errs):
        return False
    return bool(((errs["code"] == ARGPARSE_CODE) & (errs["message"] == message)).any())


def _dump_crash(incident: Incident) -> Sighting | None:
    """A fatal error's faulthandler dump whose ``Fatal Python error`` header the log lost: the
    thread that was computing when the process died (``crash_dumps``)."""
    dumps = crash_dumps(incident.stacks)
    if not len(dumps):
        return None
    leaf = str(dumps.iloc[0]["leaf"])
    return Sighting("gpu_crash", dumps, "a process crashed: faulthandler's dump of a fatal "
                    f"error shows its current thread computing in {leaf}, not waiting",
                    _ranks(dumps))


def _evidence_rows(df: pd.DataFrame) -> pd.DataFrame:
    """A sighting's evidence: the rows' rank, host, time (as times), source and line."""
    rows = df[["rank", "host", "time", "source", "line"]].reset_index(drop=True)
    rows["time"] = pd.to_datetime(rows["time"], errors="coerce")
    return rows


def _runbook_crash(incident: Incident, rep: Report) -> Sighting | None:
    """The gpu_crash runbook's first failure as a sighting (its cluster's lines)."""
    from .gpu_crash import analyse as crash_analyse  # the runbook's own reading

    crash = crash_analyse(incident).crash
    if crash.first is None:
        return _victim_crash(incident, crash.cascade, rep) or _stopped_rank(crash.cascade, rep)
    if str(crash.first["code"]) in SCHEDULER_TAKEBACK_CODES | SCHEDULER_STOP_CODES:
        # the scheduler took the node back, or cancelled the job on someone's word: no crash
        # (what follows may be a failure)
        return None
    rows = _evidence_rows(crash.cluster if len(crash.cluster) else crash.first.to_frame().T)
    f = rep.facts
    if f.get("error_kind") == "signal" and _follows_timeout(incident, rows, _timeouts(incident)).all():
        return None  # a timed-out rank's abort: the watchdog's teardown, not a crash
    ranks = [int(r) for r in f.get("failed_ranks") or []]
    where = who(ranks) if ranks else (
        f"host {f['failed_hosts'][0]}" if f.get("failed_hosts") else "a process (no rank tag)")
    msg = str(f.get("error_message") or f.get("error_kind"))
    kind = {"nccl_error": "an NCCL error", "mpi_error": "an MPI error",
            "cuda_error": "a CUDA error", "xid": "an Xid",
            "ecc": "an ECC error", "oom": "out of memory", "signal": "a fatal signal",
            "python": "a Python exception"}.get(
        str(f.get("error_kind")), str(f.get("error_kind")))
    if str(crash.first["code"]) in NOT_A_FAILURE_CODES:  # a time limit: no failure of a host
        return Sighting("gpu_crash", rows, f"the scheduler ended the job at its time limit "
                        f"({_clip(msg)})", ranks, report=rep)
    if str(crash.first["code"]) == "launcher_received_signal":
        return Sighting("gpu_crash", rows, f"the launcher was stopped from outside the job "
                        f"({msg}): no worker failed on its own", ranks, report=rep,
                        outside_stop=True)
    return Sighting("gpu_crash", rows, f"{where} failed with {kind}: "
                    f"{_clip(msg)}", ranks, report=rep)


def _stopped_rank(cascade: pd.DataFrame, rep: Report) -> Sighting | None:
    """One rank of several stopped from outside while no other said so (gpu_crash's
    ``stopped_alone``: Lightning's "[rank: 2] Received SIGTERM: 15" in a job of five): how the
    job ended, on that rank. A stop every worker reports names no class (``_runbook_crash``)."""
    from .gpu_crash.analysis import stop_signals

    ranks = [int(r) for r in rep.facts.get("failed_ranks") or []]
    if not ranks or rep.facts.get("error_kind") != "signal":
        return None
    stops = stop_signals(cascade)
    stops = stops[stops["rank"].isin(ranks)]
    if not len(stops):
        return None
    return Sighting("gpu_crash", _evidence_rows(stops), f"{who(ranks)} alone was stopped from outside "
                    f"({_clip(str(rep.facts.get('error_message')))})", ranks, report=rep)


def _victim_crash(incident: Incident, cascade: pd.DataFrame, rep: Report) -> Sighting | None:
    """A process taken down by NCCL's report of a peer or the network failing under it (the
    remote side exited, a socket broke, a peer refused or an InfiniBand link gave up), with no
    collective timed out: a crash seen from the victim's side (the corpus's reading of
    NVIDIA/nccl#795, #1405, LlamaFactory#6849)."""
    from .gpu_crash.analysis import peer_errors

    peer = peer_errors(cascade)
    if not len(peer) or rep.facts.get("error_kind") != "nccl_error" or len(_timeouts(incident)):
        return None
    rows = _evidence_rows(peer)
    msg = str(rep.facts.get("error_message") or "an NCCL error")
    return Sighting("gpu_crash", rows, "a peer or the network failed under these processes "
                    f"(NCCL: {_clip(msg)})", _ranks(rows),
                    report=rep)


def program_error(rep: Report | None) -> dict[str, Any] | None:
    """The gpu_crash runbook's first failure when it is a Python exception: a program error,
    which triage names but does not call a GPU crash."""
    if rep is None or rep.facts.get("error_kind") != "python":
        return None
    f = rep.facts
    return {"ranks": list(f.get("failed_ranks") or []), "hosts": list(f.get("failed_hosts") or []),
            "message": str(f.get("error_message") or "a Python exception").strip().splitlines()[0],
            "time": f.get("first_failure_time")}


def _deadlock(incident: Incident, rep: Report | None = None) -> Sighting | None:  # noqa: ARG001
    s = hang_stacks(incident.stacks, stacks_alone(incident), incident.errors)
    if not len(s):
        waiting = barrier_waits(incident.collectives)
        if not len(waiting):
            return _stalled(incident, rep) or _entered_lag(incident)
        ranks = sorted({int(r) for r in waiting["rank"].dropna()})
        return Sighting("deadlock", waiting.head(1), f"{len(ranks)} rank(s) waiting in "
                        "init_process_group's store-based barrier, which never completes",
                        ranks)
    # a process is its pid on its host, else its rank (a roll call's or a dumper's rank sections)
    procs = s.assign(_h=s["host"].fillna("?"), _p=s["pid"].fillna(-1),
                     _r=s["rank"].where(s["pid"].isna()).fillna(-1)).drop_duplicates(["_h", "_p", "_r"])
    return Sighting("deadlock", s, f"stack dumps of {len(procs)} process(es) in the bundle "
                    "(taken while the job hung)", _ranks(s))


def _stalled(incident: Incident, rep: Report | None) -> Sighting | None:
    """A stall warning that names the ranks a collective waits for, nothing timed out yet
    (Horovod's stall inspector): the job hangs there, which the deadlock runbook reads."""
    s = stall_reports(incident.collectives)
    if not len(s):
        return None
    behind = (rep.facts.get("outlier_members") if rep else None) or []
    named = s[s["state"].isin(["absent", "started"])]
    detail = (f"a stall warning: {who(behind)} never submitted the collectives the others wait in "
              "(nothing timed out yet)" if who(behind, "") else
              f"a stall warning: {who(_ranks(named))} wait in collectives other ranks have not "
              "submitted (nothing timed out yet)")
    return Sighting("deadlock", s, detail, _ranks(named), stall=True)


def _entered_lag(incident: Incident) -> Sighting | None:
    """Ranks whose last logged collective (TORCH_DISTRIBUTED_DEBUG=DETAIL's ``Running
    collective``) is behind the others', with no timeout or error beside them and no step or
    progress line after them in their files (a run that went on did not hang there): a hang."""
    c = incident.collectives
    lag = entered_lag(c)
    if lag is None or len(incident.errors) or (c["state"] == "timed_out").fillna(False).any():
        return None
    rows = entered_rows(c)
    last: dict[int, int] = {}
    for f, ln in _row_positions(incident, rows):
        last[f] = max(last.get(f, 0), ln)
    for t in ("iterations", "progress"):
        if any(ln > last.get(f, 1 << 62) for f, ln in _row_positions(incident, with_source(getattr(incident, t)))):
            return None
    rows = rows[rows["rank"].isin(lag.ranks)].groupby("rank", sort=True).tail(1)
    return Sighting("deadlock", rows, f"{who(lag.ranks)} behind the others' collective "
                    f"#{lag.seq_num} (the collectives each rank logged entering)", list(lag.ranks))


def _metric_found(cls: str, facts: Mapping[str, Any]) -> int | None:
    """The iteration where the class's diagnosis saw its problem start (None: nothing found)."""
    if cls == "loss_spike":
        spikes = facts.get("spikes") or []
        if spikes:
            return int(spikes[0].get("start_iteration") or spikes[0].get("peak_iteration") or 0)
        nans = facts.get("nan_iterations") or []
        if nans:
            return int(nans[0])
        if facts.get("zero_loss_from") is not None:
            return int(facts["zero_loss_from"])
        return skipping_start(facts.get("skipped_iterations") or [], facts.get("last_iteration"))
    it = facts.get("change_iteration")
    if it is None or not facts.get("drop_pct"):
        return None
    return int(it)


def _loss_points(incident: Incident) -> tuple[list[int], dict[int, float]]:
    """The logged training steps that have a loss, in order, numbered as the loss_spike
    runbook numbers its spikes (epoch-counted steps run on across epochs), and the finite
    loss at each (the last one logged for a step)."""
    from .loss_spike.series import series  # the runbook's own series: its spikes' steps

    s = series(incident)
    s = s[s["loss"].notna()]
    finite = {int(i): float(v) for i, v in zip(s["iteration"], s["loss"], strict=True)
              if math.isfinite(float(v))}
    return sorted({int(x) for x in s["iteration"]}), finite


def _scale_exhausted(incident: Incident) -> int | None:
    """The first skipped step at a loss scale under ``SUB_UNIT_SCALE`` (None: none)."""
    from .loss_spike.series import series  # the runbook's own series: its skipped steps

    s = series(incident)
    low = s[(s["skipped"].fillna(0) > 0) & (s["loss_scale"] < SUB_UNIT_SCALE)]
    return int(low["iteration"].iloc[0]) if len(low) else None


def _loss_iterations(incident: Incident) -> list[int]:
    """The logged training steps that have a loss (``_loss_points``)."""
    return _loss_points(incident)[0]


def _without_noise(facts: Mapping[str, Any], steps: list[int],
                   losses: Mapping[int, float] | None = None) -> Mapping[str, Any]:
    """``facts`` without the loss spikes that are no incident: the series' own noise (when
    ``NOISE_BLIPS`` or more spikes each recovered within ``BLIP_POINTS`` logged points
    (``steps``) of their start, those blips; when ``NOISE_BLIPS`` or more came back at all,
    those that do not stand out (``STAND_OUT``); given the finite ``losses`` by step, a rise
    within the loss's own moves, ``NOISE_RISE``), the first updates' overshoot of the untrained
    model's loss (``FIRST_STEP``), slow humps (``HUMP_POINTS``), an unrecovered swing on few
    points (``FEW_HISTORY``) and a lone one-batch blip (``BLIP_RATIO``) that does not stand
    out of the run's other losses (``BLIP_STANDS_OUT``); other spikes stay."""
    raw = list(facts.get("spikes") or [])
    spikes = [s for s in raw if not _start_or_hump(s, steps)]

    def blip(s: Mapping[str, Any]) -> bool:
        a, b = s.get("start_iteration"), s.get("recovered_iteration")
        if a is None or b is None:
            return False
        n = sum(1 for x in steps if int(a) < x <= int(b))
        return 1 <= n <= BLIP_POINTS

    if sum(1 for s in spikes if blip(s)) >= NOISE_BLIPS:
        spikes = [s for s in spikes if not blip(s)]
    back = [s for s in raw if s.get("recovered_iteration") is not None]
    if len(back) >= NOISE_BLIPS:
        spikes = [s for s in spikes if s.get("recovered_iteration") is None
                  or _stands_out(s, back)]
    if losses is not None:
        spikes = [s for s in spikes if not _within_moves(s, losses)
                  and not _swing_unmeasured(s, losses)]
    if len(spikes) == 1 and _one_batch(spikes[0], steps) and not (
            losses is not None and _blip_stands_out(spikes[0], losses)):
        spikes = []
    if len(spikes) == len(raw):
        return facts
    return {**facts, "spikes": spikes}


def _rise(spike: Mapping[str, Any]) -> float | None:
    """A spike's peak loss above its baseline (None: not given)."""
    p, b = spike.get("peak_loss"), spike.get("baseline_loss")
    return None if p is None or b is None else float(p) - float(b)


def _stands_out(spike: Mapping[str, Any], back: list[Mapping[str, Any]]) -> bool:
    """Whether ``spike`` rose ``STAND_OUT`` times higher than every other spike in ``back``
    (the spikes that came back by themselves); a rise not given is kept."""
    r = _rise(spike)
    others = [_rise(s) for s in back if s is not spike]
    if r is None or any(o is None for o in others):
        return True
    return all(r >= STAND_OUT * float(o) for o in others if o is not None)


def _within_moves(spike: Mapping[str, Any], losses: Mapping[int, float]) -> bool:
    """Whether ``spike`` rose less than ``NOISE_RISE`` times the median move between
    consecutive logged losses (``losses`` by step) outside it (before its start, from its
    recovery on), given ``NOISE_MOVES`` such moves at least."""
    r, a = _rise(spike), spike.get("start_iteration")
    if r is None or a is None:
        return False
    b = spike.get("recovered_iteration")

    def outside(x: int) -> bool:
        return x < int(a) or (b is not None and x >= int(b))

    pts = sorted(losses.items())
    moves = [abs(y1 - y0) for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False)
             if outside(x0) and outside(x1) and (x1 < int(a) or x0 >= int(a))]
    if len(moves) < NOISE_MOVES:
        return False
    return r < NOISE_RISE * statistics.median(moves)


def _one_batch(spike: Mapping[str, Any], steps: list[int]) -> bool:
    """Whether ``spike`` is one logged point (``steps``), back at the very next one (its
    recovery confirmed), whose peak is under ``BLIP_RATIO`` times a positive baseline."""
    a, b = spike.get("start_iteration"), spike.get("recovered_iteration")
    p, base = spike.get("peak_loss"), spike.get("baseline_loss")
    if a is None or b is None or p is None or base is None or not spike.get("recovery_confirmed"):
        return False
    if float(base) <= 0 or float(p) >= BLIP_RATIO * float(base):
        return False
    return sum(1 for x in steps if int(a) < x <= int(b)) == 1


def _blip_stands_out(spike: Mapping[str, Any], losses: Mapping[int, float]) -> bool:
    """Whether a one-batch blip's rise above its baseline is ``BLIP_STANDS_OUT`` times the
    most any other finite logged loss (``losses`` by step) rose above its own rolling baseline
    (``loss_spike.detect.top_rise_outside``); unknown (too few points, or fewer than
    ``FEW_HISTORY`` logged before it: the first updates of Megatron's GPT-2, 12.03 -> 22.48 ->
    12.56 at iteration 30 of a log every 10, fall too fast for a noise to be known): False."""
    from .loss_spike.detect import top_rise_outside

    r, a, b = _rise(spike), spike.get("start_iteration"), spike.get("recovered_iteration")
    h = spike.get("history_points")
    if r is None or a is None or b is None or h is None or int(h) < FEW_HISTORY:
        return False
    xs = sorted(losses)
    lo, hi = int(np.searchsorted(xs, int(a))), int(np.searchsorted(xs, int(b)))
    top = top_rise_outside(np.array([losses[x] for x in xs], dtype=float), lo, hi)
    return math.isfinite(top) and top > 0 and r >= BLIP_STANDS_OUT * top


def _swing_unmeasured(spike: Mapping[str, Any], losses: Mapping[int, float]) -> bool:
    """Whether ``spike`` never came back, rests on fewer than ``FEW_HISTORY`` logged losses
    before it, and the finite ``losses`` (by step), once past the midpoint of its baseline and
    peak, fall back below it (a climb or a held level never does)."""
    a, base, p = spike.get("start_iteration"), spike.get("baseline_loss"), spike.get("peak_loss")
    h = spike.get("history_points")
    if (a is None or base is None or p is None or h is None or int(h) >= FEW_HISTORY
            or spike.get("recovered_iteration") is not None):
        return False
    mid = (float(base) + float(p)) / 2
    above = False
    for _, v in sorted((x, v) for x, v in losses.items() if x >= int(a)):
        if v >= mid:
            above = True
        elif above:
            return True
    return False


def _start_or_hump(spike: Mapping[str, Any], steps: list[int]) -> bool:
    """A spike that came back by itself and either opened at the run's second logged loss
    after its first step (the first updates' overshoot) or climbed for ``HUMP_POINTS`` or more
    logged points (``steps``) to its peak (a slow hump)."""
    a, p = spike.get("start_iteration"), spike.get("peak_iteration")
    if a is None or spike.get("recovered_iteration") is None or not spike.get("recovery_confirmed"):
        return False
    first_update = len(steps) > 1 and steps[0] <= FIRST_STEP and int(a) == steps[1]
    rise = sum(1 for x in steps if int(a) <= x <= int(p if p is not None else a))
    return first_update or rise >= HUMP_POINTS


def _crashed_after_one_step(incident: Incident, facts: Mapping[str, Any]) -> bool:
    """Whether the loss runbook's only finding is a NaN/inf on a series of a single logged step
    in a job that then crashed of its own (an OOM, a CUDA/Xid/ECC error: ``crash_rows``):
    Megatron's first iteration of a GPT-175B run, 'grad norm: inf' at loss scale 1.0, then
    'CUDA out of memory' on every rank (corpus gpu_crash-megatron-lm-a800-gpt175b-oom). One
    point measures no divergence; the crash is the incident."""
    if facts.get("spikes") or not facts.get("nan_iterations") or \
            _series_len(incident, "loss_spike") > 1:
        return False
    err, _ = crash_rows(incident)
    return bool(err["kind"].isin(["oom", "cuda_error", "xid", "ecc"]).any())


def _series_len(incident: Incident, cls: str) -> int:
    """The most values any of the class's series has: for loss, among the logged training
    steps; for throughput, what its runbook reads (``series_points``: the step lines' figures
    and seconds, or the training loop's tqdm rate)."""
    if cls == "throughput":
        from .throughput.series import series_points  # the runbook's own count

        return series_points(incident)
    it = training_steps(incident)
    return max((int(it[c].notna().sum()) for c in ("loss", "grad_norm", "nan") if c in it),
               default=0)


def _module(cls: str, modules: Mapping[str, Any] | None) -> Any:
    """The class's diagnosis module: ``modules`` (tests) for the metric classes when given
    (None: missing), else the registered class."""
    if modules is not None and (cls in METRIC_CLASSES or cls in modules):
        return modules.get(cls)
    return failure_class(cls)


def run_class(incident: Incident, cls: str, modules: Mapping[str, Any] | None,
              not_checked: list[dict[str, str]]) -> Report | None:
    """The class runbook's own diagnosis of ``incident`` (None, with the reason added to
    ``not_checked``, when it is missing or fails)."""
    mod = _module(cls, modules)
    if mod is None or not hasattr(mod, "diagnose"):
        n = len(training_steps(incident))
        not_checked.append({"class": cls, "reason": f"traindoc.diagnose.{cls} is not available"
                            + (f"; {n} iteration row(s) were not judged" if cls in METRIC_CLASSES
                               else "")})
        return None
    try:
        return mod.diagnose(incident)
    except Exception as exc:  # another class's bug must not take triage down
        not_checked.append({"class": cls, "reason": f"traindoc.diagnose.{cls} failed: "
                            f"{type(exc).__name__}: {exc}"})
        return None


def _metric(incident: Incident, cls: str, rep: Report | None,
            not_checked: list[dict[str, str]]) -> Sighting | None:
    if rep is None:
        return None
    facts = (_without_noise(rep.facts, *_loss_points(incident)) if cls == "loss_spike"
             else rep.facts)
    start = _metric_found(cls, facts)
    if start is None and cls == "loss_spike" and facts.get("skipped_iterations"):
        start = _scale_exhausted(incident)
    if start is not None and cls == "loss_spike" and _crashed_after_one_step(incident, facts):
        not_checked.append({"class": cls, "reason": (
            f"the only logged step ({start}) shows a NaN/inf, and the job then crashed of its "
            "own (out of memory, a GPU error): one point is no series to call a divergence")})
        return None
    if start is not None and _between_jobs(incident, start):
        not_checked.append({"class": cls, "reason": (
            f"what its runbook found starts at iteration {start}, the first step of a job whose "
            "iteration plan differs from the job logged before it: two jobs are not compared")})
        return None
    if start is None and (gap := next((f for f in rep.findings if f.id == GAP_FINDING), None)):
        not_checked.append({"class": cls, "reason": (
            f"the log has a gap: {gap.title}")})  # (a change seen only across it: unknown)
        return None
    if start is None:
        n = _series_len(incident, cls)
        what = "loss or grad-norm values" if cls == "loss_spike" else "throughput figures"
        if n < MIN_SERIES:
            not_checked.append({"class": cls, "reason": (
                f"no {what} in these logs" if not n else
                f"only {n} logged step(s) with {what}, too few to judge (the runbook found "
                f"nothing in them; {MIN_SERIES} or more are needed to rule it out)")})
        return None
    it = training_steps(incident)
    rows = it[it["iteration"] >= start].head(1)
    if not len(rows):
        rows = it.tail(1)
    spikes = facts.get("spikes") or []
    return Sighting(cls, rows, rep.verdict, _ranks(rows), report=rep,
                    lived_with=cls == "throughput" and facts.get("shape") in LIVED_WITH_SHAPES,
                    recovered=cls == "loss_spike" and bool(spikes) and not facts.get("nan_iterations")
                    and all(sp.get("recovered_iteration") is not None for sp in spikes))


def _between_jobs(incident: Incident, start: int) -> bool:
    """Whether a metric class's problem starts at the first logged step of another job than
    the step logged before it (a relaunch with another iteration plan appended to the same log:
    Paddle's workerlog.N after a smoke run), so that its baseline is another job's. Totals that
    grow by one epoch's length as the epoch goes up are one job counted on: epoch-batch readers
    give each epoch's end as the total, T, 2T, 3T … (mmengine's "Epoch(train) [17][ 50/290]"
    after epoch 16's "[16][250/290]" reads 4690 of 4930, epochs counted from 1)."""
    if not mixed_jobs(incident):
        return False
    it = training_steps(incident)
    totals, steps = it["total_iterations"], it["iteration"]
    known = totals.dropna()
    epochs = it["epoch"] if "epoch" in it else pd.Series(pd.NA, index=it.index)

    def counted_on(i: int) -> bool:
        e0, e1 = epochs.iloc[i - 1], epochs.iloc[i]
        if not (pd.notna(e0) and pd.notna(e1) and e1 == e0 + 1):
            return False
        grew, end = totals.iloc[i] - totals.iloc[i - 1], totals.iloc[i]
        # one epoch's length: the first total where counted from the log's first epoch, the
        # total over the epoch where counted from epoch 1 (mmengine's: [17] ends at 17 x 290)
        return grew == known.iloc[0] or (e1 > 0 and end % e1 == 0 and grew == end // e1)

    # (a step number each job logs: any of them where a job starts)
    return any(pd.notna(totals.iloc[i - 1]) and pd.notna(totals.iloc[i])
               and totals.iloc[i - 1] != totals.iloc[i] and not counted_on(i)
               for i in np.flatnonzero(steps.to_numpy() == start) if i > 0)


DETECTORS: dict[str, Callable[[Incident, Report | None], Sighting | None]] = {
    "timeout": _timeout, "gpu_crash": _gpu_crash, "deadlock": _deadlock}


def detect(incident: Incident, modules: Mapping[str, Any] | None = None,
           ) -> tuple[list[Sighting], list[dict[str, str]]]:
    """Every class present (unordered), and the classes that could not be judged.
    ``modules`` replaces the lazy import of the metric classes' diagnoses (tests)."""
    found, not_checked, _ = _detect(incident, modules)
    return found, not_checked


def _detect(incident: Incident, modules: Mapping[str, Any] | None = None,
            ) -> tuple[list[Sighting], list[dict[str, str]], dict[str, Report | None]]:
    """``detect``, plus each class runbook's own report (None: not run)."""
    found: list[Sighting] = []
    not_checked: list[dict[str, str]] = []
    reports: dict[str, Report | None] = {}
    for cls in CLASSES:
        rep = reports[cls] = run_class(incident, cls, modules, not_checked)
        s = (_metric(incident, cls, rep, not_checked) if cls in METRIC_CLASSES
             else DETECTORS[cls](incident, rep))
        if s is None:
            continue
        s.report = rep
        s.first_seen, s.position, s.bounded = _first(incident, s.rows)
        s.rows = _ordered(incident, s.rows)
        found.append(s)
    return found, not_checked, reports


# -- ordering ---------------------------------------------------------------------------------

def root_cause_exit(incident: Incident) -> pd.Series | None:
    """torchrun's earliest 'Root Cause (first observed failure)' record, if any."""
    x = incident.exits
    rc = x[x["root_cause"].fillna(False).astype(bool)] if len(x) else x
    return _ordered(incident, rc).iloc[0] if len(rc) else None


def root_cause_class(incident: Incident, found: list[Sighting]) -> str | None:
    """The class torchrun's root-cause record belongs to: the one whose evidence holds that
    exit, else the first (crash, timeout, deadlock, …) with evidence from the same rank."""
    rc = root_cause_exit(incident)
    if rc is None:
        return None
    for s in found:
        if (s.rows["source"] == rc["source"]).any():
            return s.cls
    if pd.isna(rc["rank"]):
        return None
    for s in sorted(found, key=lambda s: CLASSES.index(s.cls)):
        if int(rc["rank"]) in s.ranks:
            return s.cls
    return None


# a time that is only a bound (``Sighting.bounded``) orders against another by the file's order
# where the two are this close: writers' clocks and buffers differ by that much
BOUND_SKEW = timedelta(seconds=1)


def order(found: list[Sighting], root_cls: str | None = None) -> list[Sighting]:
    """Earliest first: by time where both classes have one, else the root-cause class first,
    else by file position."""
    def cmp(a: Sighting, b: Sighting) -> int:
        if {a.cls, b.cls} == {"timeout", "deadlock"} and (a.hang_view or b.hang_view):
            return -1 if a.cls == "deadlock" else 1  # one hang: the stacks say where
        if {a.cls, b.cls} == {"gpu_crash", "throughput"} and (a.lived_with or b.lived_with):
            # a slower rate the run lived with: not the cause, not even of a stop from outside
            # (the run kept stepping after it, then was killed: the kill is what ended it)
            return 1 if a.lived_with else -1
        if {a.cls, b.cls} == {"loss_spike", "throughput"} and (a.recovered or b.recovered):
            # spikes the run came back from by themselves are no cause of a slower rate (an
            # ICNet run's one-batch blips before its 18 % slow episode)
            return 1 if a.recovered else -1
        if a.outside_stop != b.outside_stop and (a.recovered or b.recovered):
            return 1 if a.recovered else -1  # spikes the run came back from, then the stop
        if a.outside_stop != b.outside_stop:  # how the job ended, after whatever else it shows
            return 1 if a.outside_stop else -1
        if a.first_seen is not None and b.first_seen is not None and a.first_seen != b.first_seen \
                and not ((a.bounded or b.bounded)
                         and abs(a.first_seen - b.first_seen) <= BOUND_SKEW):
            return -1 if a.first_seen < b.first_seen else 1
        if (a.stall or b.stall) and a.cls != b.cls and a.position != b.position:
            return -1 if a.position < b.position else 1  # a hang's warning, then its exit
        if root_cls in (a.cls, b.cls) and a.cls != b.cls:
            return -1 if a.cls == root_cls else 1
        if a.position != b.position:
            return -1 if a.position < b.position else 1
        return CLASSES.index(a.cls) - CLASSES.index(b.cls)
    return sorted(found, key=functools.cmp_to_key(cmp))


def _earlier(a: Sighting, b: Sighting) -> bool:
    """Whether ``a``'s evidence starts before ``b``'s: by time where both have one, else by
    position in the files."""
    if a.first_seen is not None and b.first_seen is not None:
        return a.first_seen < b.first_seen
    return a.position < b.position


def _how_ordered(ordered: list[Sighting], root_cls: str | None) -> str:
    """'time', 'root_cause', 'same_hang', 'crash_over_slowdown' or 'file_order': what put the
    first class first."""
    if len(ordered) < 2:
        return "only_class"
    a = ordered[0]
    if a.cls == "deadlock" and any(s.cls == "timeout" and s.hang_view for s in ordered):
        return "same_hang"
    if a.cls == "gpu_crash" and any(s.lived_with and _earlier(s, a) for s in ordered[1:]):
        return "crash_over_slowdown"
    if a.first_seen is not None and all(
            b.first_seen is not None and a.first_seen < b.first_seen for b in ordered[1:]):
        return "time"
    if root_cls == a.cls:
        return "root_cause"
    return "file_order"


# -- the report -------------------------------------------------------------------------------

def _when(t: datetime | None, before: str = "", after: str = "") -> str:
    """'<before>2024-07-08 01:37:10<after>', or '' when the time was not logged."""
    return f"{before}{t:%Y-%m-%d %H:%M:%S}{after}" if t else ""


def _entry(s: Sighting, part: str) -> dict[str, Any]:
    return {"class": s.cls, "first_seen": s.first_seen.isoformat() if s.first_seen else None,
            "role": part, "ranks": s.ranks, "detail": s.detail,
            "evidence": evidence(s.rows, limit=MAX_LINES), "summary": None, "verdict": None}


@dataclass(frozen=True, eq=False)
class TriageAnalysis:
    """What the triage runbook shows, computed once by ``analyse``: the classes found, cause
    first, and why they are in that order."""

    incident: Incident
    sightings: list[Sighting]  # ordered: the likely cause first, then its cascade
    not_checked: list[dict[str, str]]  # classes that could not be judged, with the reason
    root_class: str | None  # the class torchrun's root-cause record belongs to
    root_cause_exit: pd.Series | None  # torchrun's earliest root-cause record
    ordered_by: str | None  # only_class, time, root_cause, same_hang, crash_over_slowdown or
    # file_order; None: none
    series_judged: bool  # loss and throughput were judged (neither is under not_checked)
    unparsed_lines: list[str]  # failure-looking lines no parser understood (capped, counted)
    timeline: pd.DataFrame  # ``timeline_frame``: each class's evidence for the timeline figure
    # each class runbook's own report (None: not run); triage is never surer than the cause's
    runbooks: dict[str, Report | None] = field(default_factory=dict)
    # the gpu_crash runbook's first failure when it is a Python exception (``program_error``)
    program_error: dict[str, Any] | None = None

    @property
    def cause(self) -> str | None:
        """The likely cause: the first class, None when none was found."""
        return self.sightings[0].cls if self.sightings else None


def analyse(incident: Incident, modules: Mapping[str, Any] | None = None) -> TriageAnalysis:
    """Every failure class in ``incident``, ordered, the first the likely cause. ``modules``
    replaces the lazy import of the metric classes' diagnoses (tests)."""
    found, not_checked, reports = _detect(incident, modules)
    root_cls = root_cause_class(incident, found)
    ordered = order(found, root_cls)
    how = _how_ordered(ordered, root_cls) if ordered else None
    return TriageAnalysis(
        incident=incident, sightings=ordered, not_checked=not_checked, root_class=root_cls,
        root_cause_exit=root_cause_exit(incident),
        ordered_by=how,
        series_judged=not any(n["class"] in METRIC_CLASSES for n in not_checked),
        unparsed_lines=unrecognized_lines(incident, limit=MAX_UNPARSED),
        timeline=timeline_frame(incident, ordered, how), runbooks=reports,
        program_error=None if any(s.cls == "gpu_crash" for s in found)
        else program_error(reports.get("gpu_crash")))


def report(analysis: TriageAnalysis) -> Report:
    """The triage ``Report``: the classes found in order, the cause named, what to do first."""
    a = analysis
    findings = [*_class_findings(a), *_not_checked_findings(a), *_program_error_findings(a),
                *_no_failure_findings(a), *input_findings(a.incident)]
    verdict, confidence = _verdict_and_confidence(a)
    logs = quote_all(a.incident.account.paths) or "LOGS"
    actions = ranked(_actions(a.sightings, a.not_checked, logs, a.program_error))
    return Report("triage", verdict, confidence, _facts(a), findings, actions)


def _facts(a: TriageAnalysis) -> dict[str, Any]:
    """The report's facts: each class found with its role, the cause, why in that order, what
    was not checked and torchrun's root-cause record."""
    rc = a.root_cause_exit
    return {
        "classes": [_entry(s, role(i, s, a.ordered_by)) for i, s in enumerate(a.sightings)],
        "cause": a.cause,
        "ordered_by": a.ordered_by,
        "not_checked": a.not_checked,
        "root_cause_exit": None if rc is None else {
            "rank": rc["rank"], "host": rc["host"], "exitcode": rc["exitcode"],
            "signal": rc["signal"], "time": rc["time"] if pd.notna(rc["time"]) else None},
    }


def _class_findings(a: TriageAnalysis) -> list[Finding]:
    """One finding a class found, in order: the cause critical, the cascade warnings."""
    return [Finding(
        f"class_{s.cls}", "critical" if i == 0 else "warning",
        f"{s.cls} ({role(i, s, a.ordered_by)}"
        f"{_when(s.first_seen, ', first seen by ' if s.bounded else ', first seen ')}): {s.detail}",
        evidence(s.rows, limit=MAX_LINES)) for i, s in enumerate(a.sightings)]


def _not_checked_findings(a: TriageAnalysis) -> list[Finding]:
    """The classes that could not be judged, with why (none: no finding)."""
    if not a.not_checked:
        return []
    return [Finding(
        "not_checked", "info",
        "Not checked: " + "; ".join(f"{n['class']} ({n['reason']})" for n in a.not_checked), [])]


def _program_error_findings(a: TriageAnalysis) -> list[Finding]:
    """The gpu_crash runbook's Python exception, critical when it came before the first class."""
    pe, ordered = a.program_error, a.sightings
    if pe is None:
        return []
    first = _program_error_first(pe, ordered)
    return [Finding(
        "program_error", "critical" if first else "info",
        f"{_program_error_text(pe)}: a program error, not a GPU crash (no GPU or NCCL "
        "error, fatal signal or kill in these logs)" + (
            "" if not ordered else
            f"; it came before the {ordered[0].cls}, which is likely its consequence" if first
            else f"; it is not known to come before the {ordered[0].cls} (a Python error "
            "raised after a collective timed out, by a dump helper or a teardown, is a "
            "consequence)"),
        _program_error_evidence(a))]


def _no_failure_findings(a: TriageAnalysis) -> list[Finding]:
    """Where no class was found: the error lines there are, said to be a peer's symptoms or
    none of the classes (a class found: no finding)."""
    if a.sightings:
        return []
    errs = a.incident.errors
    kinds = sorted({str(k) for k in errs["kind"].dropna()}) if len(errs) else []
    peer = errs["line"].fillna("").str.contains(PEER_TEXT_RE) if len(errs) else errs
    if len(errs) and peer.any():
        title = (f"No failure of a rank's own in these logs: the {int(peer.sum())} NCCL/network "
                 "line(s) below are symptoms of a peer that failed (a remote process exited "
                 "or the network broke); the rank that failed first left no line here")
    else:
        title = ("No collective timeout, GPU or NCCL error, fatal signal, killed rank or "
                 "hang (stack dumps) in these logs" + (
                     f"; the {len(errs)} error line(s) below ({', '.join(kinds)}) are none "
                     "of these" if len(errs) else ""))
    return [Finding(
        "no_failure_class", "warning",
        title + ("; throughput and loss were checked and look normal"
                 if a.series_judged else ""),
        evidence(errs, limit=MAX_LINES))]


def _verdict_and_confidence(a: TriageAnalysis) -> tuple[str, Confidence]:
    """``_verdict``, with a program error that came first named before the classes (then at
    most medium), never surer than the cause's own runbook (``_capped``)."""
    ordered, pe = a.sightings, a.program_error
    verdict, confidence = _verdict(ordered, a.ordered_by, a.not_checked, pe)
    if pe is not None and ordered and _program_error_first(pe, ordered):
        verdict += (f" Before it, {_program_error_text(pe)[:1].lower()}"
                    f"{_program_error_text(pe)[1:]}: likely the failure the others waited for.")
        confidence = min(Confidence(confidence), Confidence.MEDIUM, key=lambda c: c.rank)
    return verdict, _capped(confidence, ordered, a.runbooks)


def _capped(confidence: str, ordered: list[Sighting], runbooks: Mapping[str, Report | None],
            ) -> Confidence:
    """Triage is never surer than the cause's own runbook."""
    rep = (runbooks.get(ordered[0].cls) or ordered[0].report) if ordered else None
    own = getattr(rep, "confidence", None)
    if own not in set(Confidence):
        return Confidence(confidence)
    return min(Confidence(confidence), Confidence(own), key=lambda c: c.rank)


EXIT_ONLY_RE = re.compile(r"exit ?code:? ?=? ?(-?\d+)|return code = (-?\d+)", re.IGNORECASE)


def _program_error_text(pe: Mapping[str, Any]) -> str:
    """'Rank 1 exited with code 1 at …' (only the exit is logged) or 'Rank 1 failed at … with
    a Python exception (TypeError: …)'."""
    where = (who(pe["ranks"], cap=True) if pe["ranks"] else
             f"A process on {pe['hosts'][0]}" if pe["hosts"] else "A process (no rank tag)")
    when = f" at {when_text(pe['time'])}" if pe.get("time") else ""
    m = EXIT_ONLY_RE.search(pe["message"])
    if m and len(pe["message"]) < 40:
        return (f"{where} exited with code {m.group(1) or m.group(2)}{when} (no traceback in "
                "these logs: most likely a Python exception, printed in that rank's own output)")
    msg = pe["message"] if len(pe["message"]) <= 160 else pe["message"][:160] + " …"
    return f"{where} failed{when} with a Python exception ({msg})"


def _program_error_first(pe: Mapping[str, Any] | None, ordered: list[Sighting]) -> bool:
    """The program error came before the first class (by the times the lines carry): it is the
    failure the others followed. One after it (a dump helper, a teardown) is a consequence."""
    if pe is None or not ordered:
        return pe is not None
    t, first = pe.get("time"), ordered[0].first_seen
    return bool(t and first and pd.Timestamp(t) < pd.Timestamp(first))


def _program_error_evidence(a: TriageAnalysis) -> list[str]:
    rep = a.runbooks.get("gpu_crash")
    f = next((f for f in (rep.findings if rep else []) if f.id == "first_failure"), None)
    return list(f.evidence)[:MAX_LINES] if f else []


def diagnose(incident: Incident, modules: Mapping[str, Any] | None = None) -> Report:
    """Which failure classes are present, ordered, the first named the cause."""
    return report(analyse(incident, modules))


def triage(incident: Incident, modules: Mapping[str, Any] | None = None,
           ) -> tuple[Report, list[Sighting]]:
    """``diagnose``, plus the ordered sightings behind it."""
    a = analyse(incident, modules)
    return report(a), a.sightings


def _verdict(ordered: list[Sighting], how: str | None, not_checked: list[dict[str, str]],
             pe: Mapping[str, Any] | None = None) -> tuple[str, str]:
    if not ordered:
        tail = (" (not checked: " + ", ".join(n["class"] for n in not_checked) + ")"
                if not_checked else "")
        if pe is not None:
            return (f"{_program_error_text(pe)}: a program error, not a GPU crash, timeout or "
                    "hang; no known failure class found" + tail + " — read its traceback.",
                    "medium")
        return ("No known failure class found in these logs" + tail + "; check that log_path "
                "holds every rank's output and the launcher's.", "low")

    def said(s: Sighting) -> str:
        return f"{_when(s.first_seen, 'by ' if s.bounded else '', ': ')}{s.detail.rstrip('. ')}"

    a = ordered[0]
    if len(ordered) == 1:
        return f"{a.cls}: {said(a)}; no other failure class found.", "high"
    lived = [s for s in ordered[1:] if s.lived_with and how == "crash_over_slowdown"]
    later = [s for s in ordered[1:] if s not in lived]
    why = {"time": "it came first", "root_cause": "torchrun's root-cause record names it",
           "file_order": "its lines come first in the files (no timestamps to compare)",
           "same_hang": _same_hang_why(a),
           "crash_over_slowdown": "the run crashed; the slower rate it kept stepping at before "
                                  "is no failure that kills a process"}[how or ""]
    conf = {"time": "high", "root_cause": "medium", "file_order": "low",
            "same_hang": "medium", "crash_over_slowdown": "medium"}[how or ""]
    parts = []
    if later:
        rest = "; ".join(f"then {s.cls} ({said(s)})" for s in later)
        parts.append(f"{rest} — {'its consequences' if len(later) > 1 else 'its consequence'}")
    parts += [f"before it, {s.cls} ({said(s)}): a slowdown of its own, not the crash's cause"
              for s in lived]
    return f"{a.cls} is the likely cause ({why}; {said(a)}); {'; '.join(parts)}.", conf


def _same_hang_why(a: Sighting) -> str:
    """Why the deadlock leads a timeout that is a view of the same hang."""
    if "op_type" in a.rows and (a.rows["op_type"] == STORE_BARRIER_OP).all():
        return ("the ranks are still waiting in the start-up barrier, which has not timed out: "
                "a hang before the first collective")
    if "state" in a.rows and len(a.rows) and a.rows["state"].isin(
            ["timed_out", "absent", "started"]).all():
        return ("a stall warning names the ranks the others wait for before any timeout: the job "
                "hangs there")
    return "the stack dumps say where the job hangs; the collectives' record shows the same hang"


def _actions(ordered: list[Sighting], not_checked: list[dict[str, str]],
             logs: str = "LOGS", pe: Mapping[str, Any] | None = None) -> list[Action]:
    acts: list[Action] = []
    if pe is not None and _program_error_first(pe, ordered):
        acts.append(Action(
            "read_traceback", 1, "Read the failed rank's traceback and fix the program",
            f"{_program_error_text(pe)}" + (
                f", before the {ordered[0].cls}: the others likely waited for it" if ordered
                else "") + ". A Python exception is the program's own error: no node to drain, "
            "no GPU to test; the gpu_crash runbook shows the traceback's frames.",
            f"traindoc run gpu_crash {logs} -o gpu_crash-out"))
    if ordered:
        a = ordered[0]
        acts.append(Action(
            f"start_with_{a.cls}", len(acts) + 1, f"Start with the {a.cls} runbook: it is the likely cause",
            f"{a.cls} came first ({a.detail}); what followed is usually its cascade. (`traindoc "
            f"triage` with an output directory has already run it there: {a.cls}/{a.cls}.ipynb.)",
            f"traindoc run {a.cls} {logs} -o {a.cls}-out"))
        if len(ordered) > 1:
            rest = ", ".join(s.cls for s in ordered[1:])
            acts.append(Action(
                "cascade", len(acts) + 1, f"Do not chase {rest} before the cause is fixed",
                f"{rest} began after {a.cls}: ranks waiting for a dead or broken peer time out or "
                "abort; fixing them alone will not keep the job up.",
                "after the fix, rerun the job and `traindoc triage` on its logs; a class that "
                "persists is then a problem of its own"))
    else:
        acts += _no_class_actions(len(acts) + 1)
    for n in not_checked:
        if n["reason"].startswith("no "):
            continue  # nothing to judge: the class's runbook would have nothing either
        acts.append(Action(
            f"check_{n['class']}", len(acts) + 1, f"Check {n['class']} yourself",
            n["reason"], f"traindoc run {n['class']} {logs} -o {n['class']}-out"))
    return acts


def _no_class_actions(first: int) -> list[Action]:
    """Where no class was found: collect all of the job's output, and stacks if it hangs again
    (numbered from ``first``)."""
    return [
        Action(
            "collect_logs", first, "Point log_path at all of the job's output",
            "Nothing in these logs matched a known failure class.",
            "include every rank's stdout/stderr (torchrun --log-dir, srun -l output), the "
            "launcher's output, `dmesg -T` of each node, flight-recorder dumps and py-spy dumps"),
        Action(
            "stacks_next_time", first + 1, "If the job hangs, take py-spy dumps of every rank",
            "A hang without a timeout leaves no error line; stacks show where each rank is.",
            "py-spy dump --pid <pid> for every training process on every node"),
    ]


def with_runbooks(report: Report, runner: Callable[[str], Mapping[str, Any]],
                  top_actions: int = 2) -> Report:
    """``report`` with each class's runbook run by ``runner(cls)``, which returns
    ``{"summary": path|None, "verdict": str|None, "confidence", "actions": [...], "error":
    str|None}``; the cause's first actions are added to the triage's own."""
    classes = []
    findings = list(report.findings)
    actions = list(report.actions)
    for entry in report.facts.get("classes", []):
        res = dict(runner(entry["class"]) or {})
        e = {**entry, "summary": res.get("summary"), "verdict": res.get("verdict")}
        if res.get("confidence"):
            e["confidence"] = res["confidence"]
        if res.get("error"):
            e["error"] = res["error"]
            findings.append(Finding(f"runbook_{entry['class']}", "info",
                                    f"{entry['class']} runbook not run: {res['error']}", []))
        if entry["role"] == "cause":
            for a in (res.get("actions") or [])[:top_actions]:
                actions.append(Action(f"{entry['class']}_{a.get('id', 'action')}", len(actions) + 1,
                                      f"{entry['class']}: {a.get('title', '')}",
                                      a.get("why", ""), a.get("how", "")))
        classes.append(e)
    # The cause's own actions go right after "start with the cause runbook".
    if actions and classes:
        cause = classes[0]["class"]
        own = [a for a in actions if a.id.startswith(f"{cause}_")]
        rest = [a for a in actions if not a.id.startswith(f"{cause}_")]
        actions = rest[:1] + own + rest[1:]
        for i, a in enumerate(actions, 1):
            a.priority = i
    return replace(report, facts={**report.facts, "classes": classes}, findings=findings,
                   actions=ranked(actions))


def report_links_html(report: Report) -> str:
    """Links to each class's own report and notebook, relative to the triage output directory
    (``<class>/<class>.html`` exists when the run was asked for ``--html``)."""
    items = []
    for c in report.facts.get("classes", []):
        if not c.get("summary"):
            continue
        cls = html.escape(str(c["class"]))
        items.append(f'<li><b>{cls}</b> ({html.escape(str(c["role"]))}): '
                     f'<a href="{cls}/{cls}.html">report</a> · '
                     f'<a href="{cls}/{cls}.ipynb">notebook</a> · '
                     f'<a href="{cls}/summary.json">summary.json</a></li>')
    return "<ul>" + "".join(items) + "</ul>" if items else ""


def classes_table(report: Report) -> pd.DataFrame:
    """The classes found, in order, as a small table."""
    rows = [(c["class"], c["role"], (c["first_seen"] or "")[:19].replace("T", " "),
             runs(c["ranks"], sep=", ") if c.get("ranks") else "", c["detail"], c.get("verdict") or "")
            for c in report.facts.get("classes", [])]
    return pd.DataFrame(rows, columns=["class", "role", "first seen", "ranks", "what",
                                       "runbook verdict"])


def styled(df: pd.DataFrame) -> Any:
    """``df`` for display: every cell escaped (log text is data), left-aligned, no index."""
    return (escape_frame(df).hide(axis="index")
            .set_properties(**{"text-align": "left", "vertical-align": "top"})
            .set_table_styles([{"selector": "th", "props": [("text-align", "left")]}]))


def role(i: int, s: Sighting, how: str | None) -> str:
    """The role of the ``i``-th class ``s`` of the order ``how`` made: ``cause`` (the first),
    ``separate`` (a slowdown the run lived with before the crash named first), else
    ``consequence``."""
    if i == 0:
        return "cause"
    return "separate" if s.lived_with and how == "crash_over_slowdown" else "consequence"


def timeline_frame(incident: Incident, ordered: list[Sighting], how: str | None = None,
                   ) -> pd.DataFrame:
    """Each class's evidence rows for the timeline, likely cause first: ``class``, ``role``
    (cause, consequence or separate: ``role``, of the order ``how`` made), ``time`` as logged
    (NaT without one), ``position`` in the files (file index * POSITION_STRIDE + line) and
    ``who`` (its ranks; '' without rank tags)."""
    parts = []
    for i, s in enumerate(ordered):
        rows = s.rows
        times = rows["time"] if "time" in rows else pd.Series(pd.NaT, index=rows.index)
        parts.append(pd.DataFrame({
            "class": s.cls, "role": role(i, s, how),
            "time": times.to_numpy(),
            "position": [f * POSITION_STRIDE + line for f, line in _row_positions(incident, rows)],
            "who": who(s.ranks) if s.ranks else ""}, columns=TIMELINE_COLUMNS))
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype="datetime64[ns]" if c == "time" else object)
                             for c in TIMELINE_COLUMNS})
    return pd.concat(parts, ignore_index=True)


__all__ = ["CLASSES", "Sighting", "TriageAnalysis", "analyse", "classes_table", "crash_rows",
           "detect", "diagnose", "order", "report", "report_links_html", "root_cause_class",
           "root_cause_exit", "styled", "timeline_frame", "triage", "with_runbooks"]
