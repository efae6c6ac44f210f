"""``traindoc watch``: follow the logs of a running job and raise an alert before the watchdog.

The watcher follows every file under LOGS (files, directories, globs: torchrun ``--log-dir``
layouts, per-rank files, SLURM output), including files that appear later. It reads only the
bytes added since the last poll, whole lines only (a partial last line waits for its line
break), and reads a file again from its start when it was rotated or truncated (another inode,
or smaller than what was read). The lines go through the same pipeline and parsers as
``traindoc.load`` (``reader.lines.LineReader``); files a whole-file loader reads (flight-recorder
dumps, metric exports) and gzip files are left to the runbooks.

From the rows it keeps an online picture of progress (iteration lines and tqdm bars, per rank
where the logs say) and raises alerts:

- ``deadlock`` (a stall): no progress for ``max(stall_factor × recent median step time,
  min_stall)`` while the job's processes are alive (``--pid``, or a ``pids.json`` in a watched
  folder that names a live process — a stale one is said and not used; without either the job
  is taken to be alive while it is watched). The step time is
  the time between two progress lines, as the lines say it (Megatron's elapsed time per
  iteration × the iterations between lines, tqdm's rate) or as observed;
- ``timeout`` / ``gpu_crash``: at once, any line the failure classes recognise, classed as
  triage classes it (``diagnose.triage.detect``: watchdog timeouts; CUDA/NCCL errors, Xid, a
  rank's exit that is no teardown);
- ``throughput`` / ``loss_spike``: the runbooks' own analyses (``diagnose.throughput.analyse``,
  ``diagnose.loss_spike.analyse``) on the recent window of steps, once it holds ``min_steps``;
  a condition alerts once, and again only after it cleared.

An alert is said first, then ``OUT/alert.json`` is written atomically and the notify command
runs; evidence (``--collect``), ``OUT/alerts.jsonl`` and the class's runbook on the logs so far
(``OUT/<class>/``; triage into ``OUT/triage/`` once several classes fired) come after, and a
write that fails (a full disk) is said, never fatal; then watching goes on. ``Watcher`` does the work
and never prints; ``main`` is the command line's glue.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import statistics
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from .collect import proc_stat, start_time
from .diagnose.common import as_float
from .incident import Incident, ReadAccount
from .parse import FILE_LOADERS
from .reader.account import Account
from .reader.decode import GZIP_MAGIC, MAX_LINE_BYTES, expand_paths
from .reader.files import file_origin
from .reader.lines import LineReader, Stream
from .reader.sink import Sink
from .report import evidence as evidence_lines
from .report import line_text, write_atomic
from .schema import TABLES, same_files, with_source

STALL_FACTOR = 5.0
MIN_STALL_S = 60.0
INTERVAL_S = 2.0
MIN_STEPS = 10  # logged training steps in the window before throughput or loss is judged
WINDOW_STEPS = 200  # the recent window of logged steps (per writer) the detectors judge
KEEP_ROWS = 5000  # failure rows (collectives, errors, exits) kept for triage's detection
STEP_SAMPLES = 50  # progress lines whose median gives the step time
READ_BYTES = 16 * 1024 * 1024  # read at most this much of one file per poll (a backlog)
QUIET_POLLS = 1  # a file this many polls without new bytes: its open records are closed
ONLINE_MIN_SEGMENT = 3  # a throughput drop must hold for this many logged iterations
ONLINE_MIN_DROP_PCT = 10.0  # … and cost at least this much throughput
NOTIFY_TIMEOUT_S = 60.0
MAX_EVIDENCE = 8
MAX_LISTED_FILES = 8  # new files named one by one in a poll; more are counted
PIDS_FILE = "pids.json"
ERROR_CLASSES = ("timeout", "gpu_crash")
EXIT_OK = 0  # watched to the end (--max-runtime, or the job's processes ended), no alert
EXIT_USAGE = 2
EXIT_OUTPUT = 5
EXIT_ALERT = 6  # at least one alert was raised (with --exit-on-alert: the first one)

EXIT_CODES = f"""exit codes:
  {EXIT_OK}  watched until --max-runtime or until the job's processes ended; no alert
  {EXIT_USAGE}  usage: a bad option, an empty -o, OUT inside a watched folder
  {EXIT_OUTPUT}  OUT cannot be written or another traindoc run is writing into it
  {EXIT_ALERT}  an alert was raised (with --exit-on-alert: right after the first)
  130 interrupted (Ctrl-C)
"""


def _iso(t: float | None) -> str | None:
    """A wall-clock time as ISO 8601 UTC (None for None)."""
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")


# -- following files -------------------------------------------------------------------------

@dataclass
class _Tail:
    """One followed file: what was read of it so far."""

    path: Path
    inode: int
    stream: Stream
    offset: int = 0
    lineno: int = 0
    partial: bytes = b""
    quiet: int = 0  # polls since it last gave bytes
    read_at: float | None = None  # when it was last read (wall clock)


class Follower:
    """Follows the files under ``paths`` through the reader's line pipeline.

    ``exclude``: folders whose files are never followed (the watcher's own output). Each
    ``poll`` reads what was added since the last one and returns the new rows, table by table.
    ``times`` maps each file's name to when the lines of its last read were written (its
    modification time, kept between the read before and now); ``notes`` says what happened to files (new, rotated, left to
    the runbooks)."""

    def __init__(self, paths: Sequence[str], exclude: Iterable[str | os.PathLike[str]] = (),
                 year: int | None = None) -> None:
        self.paths = list(paths)
        self.exclude = [os.path.realpath(p) for p in exclude]
        self.acc = Account()
        self.sink = Sink(None, self.acc.unreadable_value)
        self.lines = LineReader(self.acc, self.sink)
        self.year = year or datetime.now().year
        self.tails: dict[str, _Tail] = {}
        self.left: set[str] = set()  # files not followed (whole-file loaders, gzip)
        self.times: dict[str, float] = {}
        self.notes: list[str] = []
        self.behind = False  # the last poll left bytes unread (READ_BYTES per file)

    def files(self) -> list[Path]:
        """The regular files the paths name now, less the excluded folders."""
        found = expand_paths(self.paths, Account())
        out = []
        for p in found:
            real = os.path.realpath(p)
            if p.name == PIDS_FILE or any(real == x or real.startswith(x + os.sep) for x in self.exclude):
                continue
            out.append(p)
        return out

    def poll(self) -> dict[str, pd.DataFrame]:
        """Read every file's new whole lines; the rows they gave, per table (all tables)."""
        self.behind = False
        for path in self.files():
            name = str(path)
            if name in self.left:
                continue
            self._read(path, name)
        return self.sink.tables()

    def close(self) -> None:
        """End every stream: pending records are parsed, open block records close."""
        for t in self.tails.values():
            self._flush_partial(t)
            self.lines.end(t.stream)

    def _new_tail(self, path: Path, name: str, inode: int) -> _Tail:
        return _Tail(path, inode, Stream(name, file_origin(path, name), self.year))

    def _read(self, path: Path, name: str) -> None:
        try:
            fh = open(path, "rb")  # noqa: SIM115 (closed below)
        except OSError:
            return  # gone between the listing and the open: the next poll sees
        with fh:
            try:
                st = os.fstat(fh.fileno())
            except OSError:
                return
            tail = self.tails.get(name)
            if tail is None:
                tail = self.tails[name] = self._new_tail(path, name, st.st_ino)
                self.notes.append(f"following {name}")
            elif st.st_ino != tail.inode or st.st_size < tail.offset:
                why = "replaced (rotated)" if st.st_ino != tail.inode else "truncated"
                self.notes.append(f"{name} was {why}: read again from its start")
                self._flush_partial(tail)
                self.lines.end(tail.stream)
                tail = self.tails[name] = self._new_tail(path, name, st.st_ino)
            if st.st_size == tail.offset:
                self._quiet(tail)
                return
            if tail.offset == 0 and not tail.partial:
                head = fh.read(4096)
                if not head:
                    return
                if self._not_followed(path, name, head):
                    return
            fh.seek(tail.offset)
            data = fh.read(min(st.st_size - tail.offset, READ_BYTES))
        tail.offset += len(data)
        tail.quiet = 0
        if tail.offset < st.st_size:
            self.behind = True
        # When the new lines were written: the file's modification time, but never before the
        # last read (which did not see them) nor after now (a file server's clock may be off).
        now = time.time()
        lo = tail.read_at if tail.read_at is not None else float("-inf")
        self.times[name] = min(max(st.st_mtime, lo), now)
        tail.read_at = now
        data = tail.partial + data
        cut = data.rfind(b"\n")
        if cut < 0:
            tail.partial = data
            if len(data) > MAX_LINE_BYTES:  # an overlong line: read what came as one line
                self._flush_partial(tail)
            return
        tail.partial = data[cut + 1:]
        tail.lineno = self.lines.read_chunk(tail.stream, data[: cut + 1], tail.lineno)

    def _not_followed(self, path: Path, name: str, head: bytes) -> bool:
        """Whether the file is one to leave to the runbooks (said in ``notes``)."""
        loader = next((x for x in FILE_LOADERS if x.sniff(path, head)), None)
        if loader is None and not head.startswith(GZIP_MAGIC):
            return False
        what = "gzip file" if loader is None else f"{loader.name} file"
        self.notes.append(f"{name}: a {what}, not followed (the runbooks read it)")
        self.left.add(name)
        self.tails.pop(name, None)
        return True

    def _flush_partial(self, tail: _Tail) -> None:
        """Read the partial last line as a line (the file ended or was replaced)."""
        if tail.partial:
            tail.lineno += 1
            self.lines.read_line(tail.stream, tail.partial, tail.lineno)
            tail.partial = b""

    def _quiet(self, tail: _Tail) -> None:
        """No new bytes: a record left pending for its wrapped continuation is parsed; after
        ``QUIET_POLLS`` polls, block records still open (a c10 exception, torchrun's report)
        close, and later lines start new ones."""
        tail.quiet += 1
        s = tail.stream
        if s.pending is not None:
            p, s.pending = s.pending, None
            self.lines.dispatch(s, p.best(), p.ctx)
        if tail.quiet >= QUIET_POLLS and s.busy:
            self.lines.end(s)
            s.blocks.clear()


# -- progress --------------------------------------------------------------------------------

@dataclass
class RankProgress:
    """The last progress one writer (a rank, or the job when the line names none) logged."""

    step: int
    at: float  # wall-clock time the line was written (its file's modification time), seconds
    source: str
    line: str


@dataclass
class ProgressPicture:
    """Progress so far: the last step per writer and the recent times between progress lines."""

    ranks: dict[int | None, RankProgress] = field(default_factory=dict)
    periods: deque[float] = field(default_factory=lambda: deque(maxlen=STEP_SAMPLES))
    last_at: float | None = None  # the newest progress, any writer
    last: RankProgress | None = None
    seen: dict[int, float] = field(default_factory=dict)  # step -> when first written

    def first_seen(self, step: int | None) -> float | None:
        """When a line of ``step`` was first written (None: not seen or forgotten)."""
        return None if step is None else self.seen.get(int(step))

    def step_time(self) -> float | None:
        """The recent median time between progress lines, seconds (None before two)."""
        return statistics.median(self.periods) if self.periods else None

    def update(self, rows: pd.DataFrame, kind: str, times: dict[str, float]) -> bool:
        """Take new ``iterations`` (kind "iteration") or ``progress`` ("tqdm") rows; whether
        any writer advanced."""
        if not len(rows):
            return False
        col = "iteration" if kind == "iteration" else "step"
        if kind == "iteration" and "event" in rows:
            rows = rows[rows["event"].isna()]
        rows = rows[rows[col].notna()]
        advanced = False
        for r in rows.to_dict("records"):
            rank = None if r.get("rank") is None or r["rank"] is pd.NA else int(r["rank"])
            step = int(r[col])
            src = str(r["source"])
            at = times.get(src.rpartition(":")[0], time.time())
            prev = self.ranks.get(rank)
            if prev is not None and step == prev.step:
                continue  # a tqdm bar redrawn, an echo: no progress
            period = _stated_period(r, kind, step - prev.step if prev else None)
            if period is None and prev is not None and at > prev.at:
                period = at - prev.at
            if period is not None and period > 0:
                self.periods.append(period)
            cur = RankProgress(step, at, src, "" if r.get("line") is None else str(r["line"]))
            self.seen.setdefault(step, at)
            if len(self.seen) > 4 * WINDOW_STEPS:
                del self.seen[next(iter(self.seen))]
            self.ranks[rank] = cur
            if self.last_at is None or at >= self.last_at:
                self.last_at, self.last = at, cur
            advanced = True
        return advanced


def _num(v: Any) -> float | None:
    """A positive number, or None (``as_float`` for the rest)."""
    f = as_float(v)
    return f if f is not None and f > 0 else None


def _stated_period(row: dict[str, Any], kind: str, steps: int | None) -> float | None:
    """The time between this progress line and the one before, as the line says it."""
    n = steps if steps is not None and steps > 0 else 1
    if kind == "iteration":
        if (v := _num(row.get("interval_s"))) is not None:
            return v
        if (v := _num(row.get("elapsed_s"))) is not None:
            return v * n
        return None
    rate = _num(row.get("rate"))  # iterations per second
    return n / rate if rate is not None else None


# -- processes -------------------------------------------------------------------------------

def pids_in(data: Any) -> list[int]:
    """The job's process ids in a ``pids.json``: its ranks' (``{"ranks": {"0": {"pid": …}}}``,
    a live drill's), else every int under a ``pid``/``pids`` key."""
    if isinstance(data, dict) and isinstance(data.get("ranks"), dict):
        ranks = [_pids(v) for v in data["ranks"].values()]
        if any(ranks):
            return sorted({p for r in ranks for p in r})
    return sorted(set(_pids(data)))


def _pids(data: Any, key: str = "") -> list[int]:
    out: list[int] = []
    if isinstance(data, dict):
        for k, v in data.items():
            out += _pids(v, str(k))
    elif isinstance(data, list):
        for v in data:
            out += _pids(v, key)
    elif (isinstance(data, int) and not isinstance(data, bool) and key in ("pid", "pids")
          and data > 0):
        out.append(data)
    return out


def starts_in(data: Any) -> dict[int, str]:
    """The /proc start times a ``pids.json`` records beside its pids (``{"pid", "start"}``)."""
    out: dict[int, str] = {}
    if isinstance(data, dict):
        pid, start = data.get("pid"), data.get("start")
        if isinstance(pid, int) and not isinstance(pid, bool) and start is not None:
            out[pid] = str(start)
        for v in data.values():
            out.update(starts_in(v))
    elif isinstance(data, list):
        for v in data:
            out.update(starts_in(v))
    return out


def alive(pid: int, start: str | None = None) -> bool:
    """Whether process ``pid`` runs on this host (a zombie has ended); with ``start``, only
    while it is the same process (a pid the system gave to another one is no sign of life)."""
    fields = proc_stat(pid)
    if not fields or fields[0] in ("Z", "X"):
        return False
    return start is None or (len(fields) > 19 and fields[19] == start)


# -- alerts ----------------------------------------------------------------------------------

@dataclass
class Alert:
    """One alert: what ``alert.json`` says."""

    cls: str
    reason: str
    detected_at: float
    last_progress_at: float | None
    evidence: list[str]
    classes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    collected: list[str] = field(default_factory=list)
    runbook: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        """The alert as ``alert.json`` writes it."""
        since = (None if self.last_progress_at is None
                 else round(self.detected_at - self.last_progress_at, 3))
        return {"class": self.cls, "reason": self.reason, "detected_at": _iso(self.detected_at),
                "last_progress_at": _iso(self.last_progress_at),
                "seconds_since_progress": since, "evidence": self.evidence,
                "classes": self.classes or [self.cls], "collected": self.collected,
                "details": self.details, "runbook": self.runbook}

    def line(self) -> str:
        """The one line printed for it."""
        return f"ALERT {self.cls}: {self.reason}"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` so a reader never sees half of it, through a new
    temporary file (never a link; ``report.write_atomic``), removed if writing fails."""
    write_atomic(path, json.dumps(data, indent=1, default=str) + "\n")


@dataclass
class WatchOptions:
    """The knobs of a watch (the command line's options)."""

    stall_factor: float = STALL_FACTOR
    min_stall: float = MIN_STALL_S
    interval: float = INTERVAL_S
    max_runtime: float | None = None
    min_steps: int = MIN_STEPS
    exit_on_alert: bool = False
    collect: bool = False
    notify: str | None = None
    pids: list[int] = field(default_factory=list)
    runbooks: bool = True
    startup_stall: float | None = None  # no progress line at all this long: a hang at start


class Watcher:
    """Follows ``logs`` and raises alerts into ``out`` (see the module doc).

    ``say``: where the lines for a person go (the CLI prints them; the library never does).
    ``runner``: runs a runbook (name, log paths, output folder) -> a dict with ``summary``,
    ``verdict``, ``error`` (default: ``execute.execute_runbook``). ``collector``: collects
    evidence from the live processes into ``out/evidence`` (logs, pids, out) -> (files written,
    notes) (default: ``collect.collect``)."""

    def __init__(self, logs: Sequence[str], out: Path, options: WatchOptions,
                 say: Callable[[str], None] = lambda s: None,
                 runner: Callable[[str, list[str], Path], dict[str, Any]] | None = None,
                 collector: Callable[[list[str], list[int], Path],
                                     tuple[list[str], list[str]]] | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.logs = [os.path.abspath(x) for x in logs]
        self.out = out
        self.opt = options
        self.say = say
        self.runner = runner or run_runbook
        self.collector = collector or collect_evidence
        self.clock = clock
        self.follower = Follower(self.logs, exclude=[out])
        self.progress = ProgressPicture()
        self.tables: dict[str, pd.DataFrame] = {}
        self.alerts: list[Alert] = []
        self.fired: set[str] = set()  # error classes alerted
        self.armed = dict.fromkeys(("deadlock", *LIVE_JUDGES), True)
        self.judged_upto = dict.fromkeys(LIVE_JUDGES, -1)  # last iteration alerted at
        self.pids = list(options.pids)
        self.pids_from: str | None = "--pid" if self.pids else None
        self.starts = {p: t for p in self.pids if (t := start_time(p)) is not None}
        self.started = clock()
        self.noted = 0
        self.waiting_said = False
        self.stale_said: set[str] = set()  # pids.json files said to name no live process

    # -- the loop ----------------------------------------------------------------------------
    def run(self) -> int:
        """Watch until ``max_runtime``, the job's processes end, or (``exit_on_alert``) the
        first alert; the exit code."""
        try:
            while True:
                fresh = self.poll_once()
                if fresh and self.opt.exit_on_alert:
                    return EXIT_ALERT
                if self.pids and not self.job_alive():
                    self.poll_once()  # the last lines the job wrote
                    self.poll_once()  # (nothing new: records left open close and are judged)
                    self.say(f"traindoc watch: the job's processes ({self.pids_from}) ended")
                    break
                if (self.opt.max_runtime is not None
                        and self.clock() - self.started >= self.opt.max_runtime):
                    self.say(f"traindoc watch: --max-runtime {self.opt.max_runtime:g} s reached")
                    break
                if not self.follower.behind:  # a backlog is read without waiting
                    time.sleep(self.opt.interval)
        finally:
            self.follower.close()
        return EXIT_ALERT if self.alerts else EXIT_OK

    def poll_once(self) -> list[Alert]:
        """One poll: read, update the picture, judge; the alerts raised (already handled)."""
        new = self.follower.poll()
        self._tell(self.follower.notes[self.noted:])
        self.noted = len(self.follower.notes)
        self._find_pids()
        times = self.follower.times
        stepped = self.progress.update(with_source(new["iterations"]), "iteration", times)
        stepped |= self.progress.update(new["progress"], "tqdm", times)
        if stepped:
            self.armed["deadlock"] = True
        self._keep(new)
        found = self._errors(new)
        if len(new["iterations"]):
            found += self._metrics()
        stall = self._stall()
        if stall is not None:
            found.append(stall)
        if not found:
            return []
        return [self._raise(found)]

    def _keep(self, new: dict[str, pd.DataFrame]) -> None:
        """Add the new rows to the tables kept: the recent window of steps (``WINDOW_STEPS``
        per writer) and of the other metric tables, the last ``KEEP_ROWS`` failure rows."""
        for t in TABLES:
            if not len(new[t]):
                continue
            old = self.tables.get(t)
            df = new[t] if old is None or not len(old) else pd.concat(same_files([old, new[t]]),
                                                                     ignore_index=True)
            if t in ("collectives", "errors", "exits"):
                limit = KEEP_ROWS
            else:
                writers = df["rank"].nunique() if "rank" in df else 1
                limit = WINDOW_STEPS * max(1, writers)
            self.tables[t] = df.tail(limit).reset_index(drop=True) if len(df) > limit else df

    def _tell(self, notes: list[str]) -> None:
        """Say what happened to the files: new files one by one, or counted when many."""
        new = [n for n in notes if n.startswith("following ")]
        if len(new) > MAX_LISTED_FILES:
            self.say(f"traindoc watch: following {len(new)} new files "
                     f"({new[0].removeprefix('following ')}, …)")
            notes = [n for n in notes if not n.startswith("following ")]
        for note in notes:
            self.say(f"traindoc watch: {note}")
        if not self.waiting_said and not self.follower.tails and not self.follower.left:
            self.waiting_said = True
            self.say("traindoc watch: no file under LOGS yet; waiting for files to appear")

    # -- judging -----------------------------------------------------------------------------
    def incident(self) -> Incident:
        """The rows read so far (the recent window of iterations) as an Incident."""
        from .schema import frame

        tables = {t: self.tables.get(t, frame(t, [])) for t in TABLES}
        acc = ReadAccount(files=len(self.follower.acc.files),
                          file_list=list(self.follower.acc.files), paths=list(self.logs),
                          lines=self.follower.acc.lines)
        return Incident(tables, acc)

    def _errors(self, new: dict[str, pd.DataFrame]) -> list[Alert]:
        if not any(len(new[t]) for t in ("collectives", "errors", "exits")):
            return []
        from .diagnose import triage

        found, _ = triage.detect(self.incident(), modules={})
        out = []
        for s in triage.order(found):
            if s.cls not in ERROR_CLASSES or s.cls in self.fired:
                continue
            self.fired.add(s.cls)
            out.append(self._alert(s.cls, s.detail, evidence_lines(s.rows, MAX_EVIDENCE),
                                   {"ranks": s.ranks}))
        return out

    def _metrics(self) -> list[Alert]:
        from .diagnose.common import training_steps

        inc = self.incident()
        steps = training_steps(inc)
        if steps["iteration"].nunique() < self.opt.min_steps:
            return []
        last_it = int(steps["iteration"].max())
        out = []
        for cls, judge in LIVE_JUDGES.items():
            try:
                got = judge(inc, self.judged_upto[cls])
            except Exception as e:  # noqa: BLE001 (a detector's bug must not stop the watch)
                self.say(f"traindoc watch: the {cls} check failed: {type(e).__name__}: {e}")
                continue
            if got is None:
                self.armed[cls] = True
                continue
            if not self.armed[cls]:
                continue
            self.armed[cls] = False
            self.judged_upto[cls] = last_it
            reason, ev, details = got
            onset = self.progress.first_seen(details.get("onset_iteration"))
            details["onset_seen_at"] = _iso(onset)
            details["seconds_since_onset"] = (None if onset is None
                                              else round(self.clock() - onset, 3))
            out.append(self._alert(cls, reason, ev, details))
        return out

    def stall_threshold(self) -> float:
        """Seconds without progress that make a stall: max(factor × step time, min_stall)."""
        st = self.progress.step_time()
        return max(self.opt.stall_factor * st if st else 0.0, self.opt.min_stall)

    def _stall(self) -> Alert | None:
        p = self.progress
        if not self.armed["deadlock"]:
            return None
        if p.last_at is None:
            return self._startup_stall()
        now = self.clock()
        limit = self.stall_threshold()
        idle = now - p.last_at
        if idle < limit:
            return None
        if self.pids and not self.job_alive():
            return None  # the job ended: no hang
        self.armed["deadlock"] = False
        st = p.step_time()
        pace = f"{st:.3g} s" if st else "unknown"
        who = "; ".join(f"{'job' if r is None else f'rank {r}'} at step {x.step}"
                        for r, x in sorted(p.ranks.items(), key=lambda kv: (kv[0] is None,
                                                                            kv[0] or 0)))
        alive_txt = (f"{len(self.pids)} process(es) alive ({self.pids_from})" if self.pids
                     else "processes taken to be alive (no --pid or pids.json)")
        reason = (f"no progress for {idle:.1f} s (threshold {limit:.3g} s = max("
                  f"{self.opt.stall_factor:g} × step time {pace}, min {self.opt.min_stall:g} s)); "
                  f"{who}; {alive_txt}: a hang is suspected")
        ev = [f"{x.source}: {x.line}" for _, x in sorted(
            p.ranks.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))][:MAX_EVIDENCE]
        details = {"stall_threshold_s": round(limit, 3),
                   "step_time_s": None if st is None else round(st, 4),
                   "ranks": {("job" if r is None else str(r)): {
                       "step": x.step, "at": _iso(x.at), "source": x.source}
                       for r, x in p.ranks.items()},
                   "pids": self.pids}
        return self._alert("deadlock", reason, ev, details)

    def _startup_stall(self) -> Alert | None:
        """With ``startup_stall``: no progress line at all that long after watching began
        while the job's processes live (a hang in NCCL init, a rendezvous, the first batch)."""
        limit = self.opt.startup_stall
        if limit is None:
            return None
        waited = self.clock() - self.started
        if waited < limit or (self.pids and not self.job_alive()):
            return None
        self.armed["deadlock"] = False
        alive_txt = (f"{len(self.pids)} process(es) alive ({self.pids_from})" if self.pids
                     else "processes taken to be alive (no --pid or pids.json)")
        reason = (f"no progress line at all in {waited:.1f} s of watching (--startup-stall "
                  f"{limit:g} s); {alive_txt}: a hang before the first step is suspected "
                  "(NCCL init, rendezvous, the first batch)")
        return self._alert("deadlock", reason, [], {"startup_stall_s": limit, "pids": self.pids})

    def _alert(self, cls: str, reason: str, ev: list[str], details: dict[str, Any]) -> Alert:
        return Alert(cls, reason, self.clock(), self.progress.last_at, ev, details=details)

    # -- acting ------------------------------------------------------------------------------
    def _raise(self, found: list[Alert]) -> Alert:
        """Handle the alerts of one poll as one: the first is the alert, the others are named."""
        a = found[0]
        a.classes = list(dict.fromkeys(x.cls for x in found))
        for other in found[1:]:
            a.evidence += [e for e in other.evidence if e not in a.evidence][:MAX_EVIDENCE]
            a.details.setdefault("also", []).append({"class": other.cls, "reason": other.reason})
        self.alerts.append(a)
        # The page first: the line and --notify come before anything that writes to OUT or
        # takes time (evidence), so a full disk or a slow py-spy never holds the alert back.
        # Writing is reported when it fails, never fatal.
        self.say(a.line())
        path = self.out / "alert.json"
        self._write("alert.json", lambda: write_json_atomic(path, a.as_json()))
        if self.opt.notify:
            problem = notify(self.opt.notify, path)
            if problem:
                self.say(f"traindoc watch: --notify failed: {problem}")
        if self.opt.collect:
            try:
                a.collected, notes = self.collector(self.logs, self.pids, self.out)
                a.details["collect_notes"] = notes
            except Exception as e:  # noqa: BLE001 (collecting is best effort)
                a.details["collect_error"] = f"{type(e).__name__}: {e}"
                self.say(f"traindoc watch: collecting evidence failed: {type(e).__name__}: {e}")
            self._write("alert.json", lambda: write_json_atomic(path, a.as_json()))
        self._write("alerts.jsonl", lambda: _append_line(
            self.out / "alerts.jsonl", json.dumps(a.as_json(), default=str)))
        if self.opt.runbooks:
            seen = {c for x in self.alerts for c in x.classes}
            book = "triage" if len(seen) > 1 else a.cls
            logs = list(self.logs)
            if (self.out / "evidence").is_dir():
                logs.append(str(self.out / "evidence"))
            got = self.runner(book, logs, self.out / book)
            a.runbook = {"name": book, **got}
            self._write("alert.json", lambda: write_json_atomic(path, a.as_json()))
            if got.get("error"):
                self.say(f"traindoc watch: the {book} runbook failed: {got['error']}")
            else:
                self.say(f"traindoc watch: {book} runbook: {got.get('summary')} — "
                         f"{got.get('verdict')}")
        return a

    def _write(self, what: str, write: Callable[[], object]) -> None:
        """``write()``; an ``OSError`` (a full disk, a read-only OUT) is said, not raised."""
        try:
            write()
        except OSError as e:
            self.say(f"traindoc watch: could not write {what} into {self.out}: "
                     f"{e.strerror or e}")

    def _find_pids(self) -> None:
        if self.pids_from == "--pid":
            return
        for d in self.logs:
            f = Path(d) / PIDS_FILE
            if not f.is_file():
                continue
            try:
                data = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            pids = pids_in(data)
            if pids and pids != self.pids:
                recorded = starts_in(data)
                starts = {p: t for p in pids
                          if (t := recorded.get(p) or start_time(p)) is not None}
                if not any(alive(p, starts.get(p)) for p in pids):
                    # a stale file (an earlier run's): its pids never say the job ended
                    if str(f) not in self.stale_said:
                        self.stale_said.add(str(f))
                        self.say(f"traindoc watch: {f} names no live process (an earlier "
                                 "run's?): not used to tell whether the job runs")
                    continue
                self.pids, self.pids_from, self.starts = pids, str(f), starts

    def job_alive(self) -> bool:
        """Whether one of the job's processes (the very ones first seen) still runs."""
        return any(alive(p, self.starts.get(p)) for p in self.pids)


def _judge_throughput(inc: Incident, after: int) -> tuple[str, list[str], dict[str, Any]] | None:
    """A throughput drop in the window that began after iteration ``after``, or None."""
    from .diagnose import throughput
    from .diagnose.common import training_steps

    a = throughput.analyse(inc, min_segment=ONLINE_MIN_SEGMENT, min_drop_pct=ONLINE_MIN_DROP_PCT)
    if a.change is None or a.change_iteration is None or a.change_iteration <= after:
        return None
    steps = training_steps(inc)
    # the drop holds for ONLINE_MIN_SEGMENT logged steps before it is an alert: a one-step
    # "trailing stall" the runbook it launches would call no lasting drop (CI: the slow-rank
    # drill alerted on its first slow step, and the runbook on the same log said no change)
    if steps.loc[steps["iteration"] >= a.change_iteration, "iteration"].nunique() \
            < ONLINE_MIN_SEGMENT:
        return None
    rep = throughput.report(a)
    ev = evidence_lines(steps[steps["iteration"] == a.change_iteration], 2)
    ev += [e for f in rep.findings for e in f.evidence if e not in ev]
    ev = ev[:MAX_EVIDENCE]
    details = {"metric": a.metric, "baseline": a.baseline, "degraded": a.degraded,
               "drop_pct": a.drop_pct, "change_iteration": a.change_iteration,
               "onset_iteration": a.change_iteration,
               "suspect_ranks": a.suspect_ranks, "suspect_hosts": a.suspect_hosts}
    reason = (f"{a.metric} dropped {a.drop_pct:g}% at iteration {a.change_iteration} "
              f"({a.baseline:g} → {a.degraded:g})")
    if a.suspect_ranks:
        reason += f"; slow rank(s) {', '.join(map(str, a.suspect_ranks))}"
    return reason, ev, details


def _judge_loss(inc: Incident, after: int) -> tuple[str, list[str], dict[str, Any]] | None:
    """A loss spike or NaN in the window that began after iteration ``after``, or None."""
    from .diagnose import loss_spike

    a = loss_spike.analyse(inc)
    spikes = [s for s in a.spikes if int(s["start_iteration"]) > after]
    nans = [i for i in a.nan_iterations if i > after]
    if not spikes and not nans:
        return None
    it = with_source(inc.iterations)
    if spikes:
        sp = spikes[0]
        reason = (f"loss spike from iteration {sp['start_iteration']}: peak "
                  f"{sp['peak_loss']:.4g} at {sp['peak_iteration']} over a baseline of "
                  f"{sp['baseline_loss']:.4g}")
        at = [sp["start_iteration"], sp["peak_iteration"]]
    else:
        reason = f"NaN loss or grad norm at iteration {nans[0]}"
        at = nans[:1]
    rows = it[it["iteration"].isin(at)] if len(it) else it
    details = {"spikes": spikes, "nan_iterations": nans[:20],
               "onset_iteration": int(at[0]) if at else None}
    return reason, evidence_lines(rows, MAX_EVIDENCE), details


# The metric classes watch judges on each window of new steps (the others come from triage's
# detection of error rows and from stalls).
LIVE_JUDGES = {"throughput": _judge_throughput, "loss_spike": _judge_loss}


# -- side effects: runbooks, evidence, notify ------------------------------------------------

def run_runbook(name: str, logs: list[str], out: Path) -> dict[str, Any]:
    """Run runbook ``name`` headless on ``logs`` into ``out`` (``execute.execute_runbook``)."""
    from .execute import execute_runbook

    ex = execute_runbook(name, logs, out)
    s = ex.summary or {}
    return {"summary": str(ex.summary_path) if ex.summary else None,
            "verdict": s.get("verdict"), "confidence": s.get("confidence"), "error": ex.error}


def collect_evidence(logs: list[str], pids: list[int], out: Path) -> tuple[list[str], list[str]]:
    """Collect evidence from the job's live processes into ``out/evidence``
    (``collect.collect``: py-spy dumps, flight-recorder dumps, GPU state); the files written
    and the notes on what could not be taken."""
    from . import collect

    got = collect.collect(out, pids=pids, logs=logs)
    return [str(f) for f in got.saved], list(got.notes)


def notify(command: str, alert_path: Path) -> str | None:
    """Run ``command`` (split like a shell would, run without one) with the alert file's path
    as its last argument; what went wrong, or None. The wait is for the command itself, not
    for its output pipes: a child it leaves running (a backgrounded sender) holds no pipe of
    ours, so it neither blocks the watch nor makes a page that went out count as failed. Its
    stderr goes to an unnamed temporary file (memory when no file can be made)."""
    try:
        argv = shlex.split(command)
    except ValueError as e:
        return f"cannot split {command!r}: {e}"
    if not argv:
        return "the command is empty"
    try:
        err: Any = tempfile.TemporaryFile()
    except OSError:  # a full /tmp: no stderr tail, the command still runs
        err = None
    try:
        try:
            proc = subprocess.Popen([*argv, str(alert_path)], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL,
                                    stderr=err if err is not None else subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as e:
            return f"{argv[0]}: {e}"
        try:
            rc = proc.wait(timeout=NOTIFY_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return f"{argv[0]} did not finish within {NOTIFY_TIMEOUT_S:g} s: killed"
        if rc != 0:
            tail: list[str] = []
            if err is not None:
                err.seek(0)
                tail = err.read(64 * 1024).decode("utf-8", "replace").strip().splitlines()[-1:]
            return f"{argv[0]} exited with {rc}" + (f": {line_text(tail[0])}" if tail else "")
        return None
    finally:
        if err is not None:
            err.close()


def _append_line(path: Path, line: str) -> None:
    """One line appended to ``path`` (``alerts.jsonl``), never through a link."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0), 0o666)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


# -- the command line ------------------------------------------------------------------------

DESCRIPTION = """\
Follow the logs of a RUNNING job and raise an alert before the watchdog fires.

LOGS are the job's log files, folders (torchrun --log-dir, per-rank files, SLURM output) or
globs; files that appear later are followed too, a rotated or truncated file is read again.
Only new bytes are read; the lines go through the same parsers as 'traindoc run'.

Alerts (each one prints one line, writes OUT/alert.json, runs --notify, then collects
evidence and runs the matching runbook into OUT/<class>/; a write that fails is said, not
fatal; watching goes on unless --exit-on-alert):
  deadlock     no progress (iteration lines, tqdm bars) for
               max(--stall-factor x recent median step time, --min-stall) while the job's
               processes are alive: a hang, long before the NCCL watchdog's timeout (judged
               from the first progress line on; before it only with --startup-stall)
  timeout      a watchdog / gloo collective timeout line (at once)
  gpu_crash    a CUDA/NCCL error, an Xid, a rank that died (at once)
  throughput   the throughput runbook's change-point test finds a drop in the recent window
  loss_spike   the loss-spike runbook's detector finds a spike or a NaN in the recent window

alert.json: class, reason, detected_at, last_progress_at, seconds_since_progress, evidence
(file:line: text), collected (files --collect wrote), runbook (its summary.json and verdict).
Processes are checked in /proc: --pid, or DIR/pids.json of a live drill in a watched folder
(one that names no live process, an earlier run's, is said and not used); without either the
job is taken to be alive while watched. When they all end, the watch ends.
"""

EXAMPLES = """\
examples:
  traindoc watch /scratch/job-1234/logs -o ~/watch-1234 --notify ~/bin/page-oncall.sh
  traindoc watch 'logs/rank*.log' -o out --min-stall 120 --stall-factor 10 --pid 4242
  traindoc watch drill-hang -o out --collect --exit-on-alert --min-stall 5 --interval 0.5
"""


def _positive(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes a number, not {text!r}") from None
    if not v > 0 or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, not {text}")
    return v


def _pid(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes a process id, not {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive process id, not {text}")
    return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``traindoc watch`` (``p`` is its subparser)."""
    p.description = DESCRIPTION
    p.epilog = EXAMPLES + "\n" + EXIT_CODES
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("logs", nargs="+", metavar="LOGS",
                   help="log files, folders or globs of the running job")
    p.add_argument("-o", "--output-dir", default="traindoc-watch", metavar="OUT",
                   help="where alert.json, evidence and runbook results go (default: "
                        "traindoc-watch); must not lie inside a watched folder")
    p.add_argument("--stall-factor", type=_positive, default=STALL_FACTOR, metavar="F",
                   help=f"a stall is F x the recent median step time without progress "
                        f"(default {STALL_FACTOR:g})")
    p.add_argument("--min-stall", type=_positive, default=MIN_STALL_S, metavar="S",
                   help=f"... and at least S seconds (default {MIN_STALL_S:g})")
    p.add_argument("--interval", type=_positive, default=INTERVAL_S, metavar="S",
                   help=f"seconds between polls of the files (default {INTERVAL_S:g})")
    p.add_argument("--max-runtime", type=_positive, default=None, metavar="S",
                   help="stop watching after S seconds (default: until the job ends or Ctrl-C)")
    p.add_argument("--min-steps", type=int, default=MIN_STEPS, metavar="N",
                   help=f"logged steps before throughput and loss are judged (default "
                        f"{MIN_STEPS})")
    p.add_argument("--startup-stall", type=_positive, default=None, metavar="S",
                   help="also alert when no progress line at all came in the first S seconds "
                        "of watching (a hang in NCCL init or rendezvous; default: off, as "
                        "start-up time varies by job)")
    p.add_argument("--pid", type=_pid, action="append", default=[], metavar="PID",
                   help="a process of the job (repeat for each); the stall alert needs one "
                        "alive, and the watch ends when all have ended")
    p.add_argument("--collect", action="store_true",
                   help="on an alert, collect py-spy dumps and more from the live processes "
                        "into OUT/evidence (traindoc collect)")
    p.add_argument("--notify", default=None, metavar="CMD",
                   help="on an alert, run CMD with the path of alert.json as its last argument "
                        "(split like a shell would, run without one: a Slack or PagerDuty "
                        "webhook script); a failure is reported, not fatal")
    p.add_argument("--exit-on-alert", action="store_true",
                   help=f"stop after the first alert (exit {EXIT_ALERT})")
    p.add_argument("--no-runbook", dest="runbooks", action="store_false",
                   help="do not run the matching runbook on an alert")


def main(args: argparse.Namespace, stdout: Any, stderr: Any,
         clean: Callable[[object], str] = str) -> int:
    """``traindoc watch``: the exit code (``EXIT_CODES``). ``clean`` makes log text safe to
    print (the CLI's ``terminal_text``)."""
    from .execute import OutputDirError, claimed_output_dir

    def say(text: str) -> None:
        print(clean(text), file=stdout, flush=True)

    def err(text: str) -> None:
        print(clean(f"traindoc watch: {text}"), file=stderr, flush=True)

    if not args.output_dir.strip():
        err("-o OUT is empty (an unset variable?); give the folder to write into")
        return EXIT_USAGE
    if args.min_steps < 3:
        err(f"--min-steps must be at least 3, not {args.min_steps}")
        return EXIT_USAGE
    logs = [os.path.abspath(os.path.expanduser(x)) for x in args.logs]
    out = Path(args.output_dir).expanduser().resolve()
    for d in logs:
        if os.path.isdir(d) and (out == Path(d) or Path(d) in out.parents):
            err(f"the output folder {out} lies inside the watched folder {d}; choose -o "
                "outside it")
            return EXIT_USAGE
    opts = WatchOptions(stall_factor=args.stall_factor, min_stall=args.min_stall,
                        interval=args.interval, max_runtime=args.max_runtime,
                        min_steps=args.min_steps, exit_on_alert=args.exit_on_alert,
                        collect=args.collect, notify=args.notify, pids=list(args.pid),
                        runbooks=args.runbooks, startup_stall=args.startup_stall)
    try:
        with claimed_output_dir(out, logs) as claimed:
            say(f"traindoc watch: watching {', '.join(logs)} -> {claimed} (every "
                f"{opts.interval:g} s; stall after max({opts.stall_factor:g} x step time, "
                f"{opts.min_stall:g} s))")
            code = Watcher(logs, claimed, opts, say=say).run()
            with contextlib.suppress(OSError):
                if code == EXIT_OK:
                    say("traindoc watch: no alert")
            return code
    except OutputDirError as e:
        err(str(e))
        return EXIT_USAGE if e.usage else EXIT_OUTPUT


__all__ = ["EXIT_ALERT", "EXIT_CODES", "Alert", "Follower", "ProgressPicture", "RankProgress",
           "WatchOptions", "Watcher", "add_arguments", "alive", "collect_evidence", "main",
           "notify", "pids_in", "run_runbook", "write_json_atomic"]
