"""Small facts every runbook needs: the last progress a job made, the findings about input."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..hostlist import runs
from ..incident import Incident
from ..report import Finding, evidence
from ..schema import SYNTHETIC_HOST_PREFIX


def as_int(v: Any) -> int | None:
    """An int, or None for None/NA/NaN/non-numbers (floats are truncated)."""
    f = as_float(v)
    return None if f is None else int(f)


def as_float(v: Any) -> float | None:
    """A finite-or-infinite float, or None for None/NA/NaN/non-numbers."""
    if v is None or v is pd.NA:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if f != f else f


def as_str(v: Any) -> str | None:
    """A str, or None for None/NA/NaN."""
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return None
    return str(v)


def who(ranks: Iterable[Any], none: str = "a rank (no rank tag)", cap: bool = False) -> str:
    """Ranks as people write them: 'rank 3', 'ranks 0-2, 5' (``none`` when there are none)."""
    nums = sorted({int(r) for r in ranks if as_int(r) is not None})
    text = (none if not nums else f"rank {nums[0]}" if len(nums) == 1
            else f"ranks {runs(nums, sep=', ')}")
    return text[:1].upper() + text[1:] if cap else text


def when_text(t: Any) -> str:
    """A moment as every sentence writes it: '2024-07-08 01:36:12' (ISO stays for JSON)."""
    ts = pd.Timestamp(t)
    return f"{ts:%Y-%m-%d %H:%M:%S}" if pd.notna(ts) else ""


def count(n: int, word: str) -> str:
    """'1 host', '4 hosts'."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def training_steps(incident: Incident) -> pd.DataFrame:
    """Iteration rows that are training steps: a numbered iteration, no eval/summary event."""
    return steps_of(incident.iterations)


def steps_of(iterations: pd.DataFrame) -> pd.DataFrame:
    """The rows of an iterations table that are training steps (``training_steps``)."""
    it = iterations
    if "event" in it:
        it = it[it["event"].isna()]
    return it[it["iteration"].notna()]


@dataclass(frozen=True)
class Progress:
    """The last step the job reported before the incident, and its pace."""

    step: int | None
    total: int | None
    seconds_per_step: float | None
    source: str | None
    line: str | None
    kind: str  # "tqdm", "iteration" or "none"

    def describe(self) -> str:
        """'step 21/6336 at ~25.6 s/step' or 'no progress line found'."""
        if self.step is None:
            return "no progress line found"
        total = f"/{self.total}" if self.total is not None else ""
        pace = f" at ~{self.seconds_per_step:.3g} s/step" if self.seconds_per_step else ""
        return f"step {self.step}{total}{pace}"


def last_progress(incident: Incident) -> Progress:
    """The furthest step in tqdm bars or iteration lines (iteration lines win when both)."""
    it = incident.iterations
    if len(it) and it["iteration"].notna().any():
        row = it.loc[it["iteration"].idxmax()]
        spi = row["elapsed_s"] if pd.notna(row["elapsed_s"]) else None
        total = row["total_iterations"] if pd.notna(row["total_iterations"]) else None
        step = int(row["iteration"])
        pr = incident.progress
        bar = pr[(pr["source"] == row["source"]) & pr["step"].notna()] if len(pr) else pr
        if len(bar):  # a progress bar (Lightning, NeMo) also read as an iteration: as printed
            b = bar.iloc[-1]
            step = int(b["step"])
            total = b["total"] if pd.notna(b["total"]) else total
        return Progress(step, None if total is None else int(total),
                        None if spi is None else float(spi), row["source"], row["line"],
                        "iteration")
    pr = incident.progress
    if len(pr) and pr["step"].notna().any():
        # The longest-running bar is the training loop; its furthest step is the last progress.
        # Bars without a total (an iterable without len(): ``240it [05:55, 1.47s/it]``) restart
        # each epoch under a new description: the last bar printed is the one that stopped.
        pr = pr.dropna(subset=["step"])
        totals = pr.dropna(subset=["total"])
        main = pr
        if len(totals):
            biggest = totals["total"].max()
            main = pr[pr["total"] == biggest]
        elif pr["desc"].notna().any():
            main = pr[pr["desc"] == pr["desc"].iloc[-1]] if pd.notna(pr["desc"].iloc[-1]) else pr
        row = main.loc[main["step"].idxmax()]
        rate = row["rate"] if pd.notna(row["rate"]) else None
        total = row["total"] if pd.notna(row["total"]) else None
        return Progress(int(row["step"]), None if total is None else int(total),
                        None if not rate else 1.0 / float(rate), row["source"], row["line"],
                        "tqdm")
    return Progress(None, None, None, None, None, "none")


def step_totals_by_rank(incident: Incident) -> dict[int, int]:
    """Per rank, the largest step total its progress bars announced (ranks that disagree on
    the size of their data split show different totals)."""
    pr = incident.progress.dropna(subset=["rank", "total"])
    if not len(pr):
        return {}
    return {int(r): int(t) for r, t in pr.groupby("rank")["total"].max().items()}


RUN_DIR_RE = re.compile(r"([^/\\]+)[/\\]attempt_\d+[/\\]")


SOURCE_RE = re.compile(r"^(?P<file>.*?):(?P<line>\d+)$")


def split_source(source: object) -> tuple[str, int] | None:
    """A row's ``source`` ("file:line") as (file, line), or None."""
    m = SOURCE_RE.match(str(source)) if isinstance(source, str) else None
    return (m["file"], int(m["line"])) if m else None


def place_unnumbered_skips(incident: Incident) -> pd.DataFrame:
    """The ``iterations`` table with a number for each skipped step (fp16 overflow) whose line
    names none: the step after the last one logged before it in the same file (a progress bar's
    count or an iteration line), one more for each overflow in between; with none before it,
    the first step logged after it. Overflows with neither stay unnumbered.

    Why that neighbour: the overflow is found inside an optimizer step, before the line that
    reports the step is written, so with a step line every iteration (Megatron+DeepSpeed:
    "OVERFLOW! Rank 0 Skipping step" then "iteration 17062/…") the step after the last one
    logged is the one whose line follows. Where the writer logs every N steps the overflow's
    step is only known to lie in the interval, and the first step of it is taken."""
    it = incident.iterations
    need = it["iteration"].isna() & (pd.to_numeric(it["skipped"], errors="coerce").fillna(0) > 0)
    if not need.any():
        return it
    marks: dict[str, list[tuple[int, int]]] = {}
    pr = incident.progress
    for df, col in ((it[it["iteration"].notna()], "iteration"), (pr[pr["step"].notna()], "step")):
        for src, v in zip(df["source"], df[col], strict=True):
            where = split_source(src)
            if where:
                marks.setdefault(where[0], []).append((where[1], int(v)))
    for v in marks.values():
        v.sort()
    it = it.copy()
    run: dict[tuple[str, int], int] = {}
    for i in it.index[need]:
        where = split_source(it.at[i, "source"])
        if where is None or where[0] not in marks:
            continue
        ms = marks[where[0]]
        before = [m for m in ms if m[0] <= where[1]]
        if before:
            key = (where[0], before[-1][0])
            run[key] = run.get(key, 0) + 1
            it.at[i, "iteration"] = before[-1][1] + run[key]
        else:
            it.at[i, "iteration"] = ms[0][1]
    return it




def is_host(name: object) -> bool:
    """Whether ``name`` is a machine read from the logs (not unknown, not an srun task id)."""
    return (name is not None and not pd.isna(name) and str(name) != ""
            and not str(name).startswith(SYNTHETIC_HOST_PREFIX))


def rank_hosts(incident: Incident) -> dict[int, str]:
    """The host each rank ran on (the most frequent), from any table row that names both
    (launcher-made ``srun-task-N`` names are not hosts)."""
    frames = [df.loc[df["rank"].notna() & df["host"].notna(), ["rank", "host"]]
              for df in incident.tables.values() if "rank" in df and "host" in df and len(df)]
    frames = [f for f in frames if len(f)]
    if not frames:
        return {}
    both = pd.concat(frames, ignore_index=True)
    both = both[~both["host"].astype(str).str.startswith(SYNTHETIC_HOST_PREFIX)]
    return {int(r): str(g.mode().iloc[0]) for r, g in both.groupby("rank")["host"]}


def pid_hosts(incident: Incident) -> dict[int, str]:
    """The host of each pid that NCCL's init lines tie to one machine (``processes``; a pid
    seen on two machines is left out)."""
    p = incident.tables.get("processes")
    if p is None or not len(p):
        return {}
    both = p[p["pid"].notna() & p["host"].notna()]
    hosts = both.groupby("pid")["host"].unique()
    return {int(pid): str(h[0]) for pid, h in hosts.items() if len(h) == 1 and is_host(h[0])}


def task_hosts(incident: Incident) -> dict[str, str]:
    """The machine behind each srun task name (``srun-task-1`` -> ``node-b``), from srun's own
    exit lines ("srun: error: node-b: task 1: Exited …")."""
    x = incident.exits
    if not len(x) or "task" not in x:
        return {}
    both = x[x["task"].notna() & x["host"].notna()]
    both = both[~both["host"].astype(str).str.startswith(SYNTHETIC_HOST_PREFIX)]
    return {f"{SYNTHETIC_HOST_PREFIX}{int(t)}": str(g.mode().iloc[0])
            for t, g in both.groupby("task")["host"]}


def mixed_jobs(incident: Incident) -> list[str]:
    """Evidence that the input holds logs of more than one job: several torchrun run
    directories, or iteration lines announcing different total iteration counts."""
    evidence: list[str] = []
    runs = sorted({m.group(1) for f in incident.account.file_list
                   if (m := RUN_DIR_RE.search(str(f)))})
    if len(runs) > 1:
        evidence.append(f"torchrun run directories: {', '.join(runs[:8])}")
    it = incident.iterations.dropna(subset=["total_iterations"])
    if len(it) and it["total_iterations"].nunique() > 1:
        for total, g in it.groupby("total_iterations"):
            evidence.append(f"total iterations {int(total)}: {g['source'].iloc[0]}")
    return evidence


CLOCK_BACK_S = 300.0  # a file's timestamps going back by more than this is a clock jump


def clock_jumps(incident: Incident, back_s: float = CLOCK_BACK_S) -> list[str]:
    """Evidence of clocks going backwards: within one file and writer (rank, host), a line
    stamped more than ``back_s`` earlier than the line before it (an NTP step, a reboot, a
    node with a wrong clock) — then "first" by time can be wrong."""
    frames = []
    for df in incident.tables.values():
        if "time" in df and "source" in df and len(df) and df["time"].notna().any():
            frames.append(df.loc[df["time"].notna(), ["time", "source", "line", "rank", "host"]])
    if not frames:
        return []
    rows = pd.concat(frames, ignore_index=True)
    where = rows["source"].astype(str).str.rsplit(":", n=1, expand=True)
    if where.shape[1] < 2:
        return []
    rows = rows.assign(file=where[0], lineno=pd.to_numeric(where[1], errors="coerce"))
    rows = rows.dropna(subset=["lineno"]).sort_values(["file", "lineno"], kind="stable")
    out: list[str] = []
    for _, g in rows.groupby(["file", rows["rank"].fillna(-1), rows["host"].fillna("")],
                             sort=False):
        back = g["time"].diff().dt.total_seconds() < -back_s
        for i in np.flatnonzero(back.to_numpy())[:3]:
            prev, cur = g.iloc[i - 1], g.iloc[i]
            out.append(f"{cur['source']}: stamped {when_text(cur['time'])}, after "
                       f"{prev['source']} stamped {when_text(prev['time'])}")
    return out[:10]


# what varies between lines of one form: numbers, hex ids, paths (a template keeps the rest)
TEMPLATE_RE = re.compile(r"0x[0-9a-fA-F]+|(?:/[\w.+-]+){2,}/?|\d+(?:\.\d+)?")
UNRECOGNIZED_RE = re.compile(r"^(?P<where>.+?:\d+): (?P<text>.*)$", re.S)


def unplaced_forms(lines: Iterable[str], limit: int = 12) -> list[tuple[int, str, str]]:
    """Lines no parser placed (``file:line: text``), grouped by their form (numbers, hex ids
    and paths taken out): ``(count, first place, first line)`` per form, most frequent first."""
    groups: dict[str, list[Any]] = {}
    for entry in lines:
        m = UNRECOGNIZED_RE.match(entry)
        where, text = (m["where"], m["text"]) if m else ("?", entry)
        key = TEMPLATE_RE.sub("#", text.strip())[:200]
        g = groups.setdefault(key, [0, where, text.strip()])
        g[0] += 1
    ranked = sorted(groups.values(), key=lambda g: -g[0])
    return [(int(n), where, text) for n, where, text in ranked[:limit]]


def reading_words(incident: Incident) -> str:
    """How much of the input was understood, for a verdict that found nothing: ``N lines read,
    none understood`` or ``N lines read, K understood`` (empty when nothing was read)."""
    lines, parsed = incident.account.lines, incident.account.parsed_lines
    if not lines:
        return ""
    return (f"{lines} line(s) read, none of them understood by any parser" if not parsed
            else f"{lines} line(s) read, {parsed} understood")


def input_findings(incident: Incident) -> list[Finding]:
    """Findings about the input itself: warnings, and lines that look like errors but that no
    parser understood (so a new format is never silently ignored)."""
    out: list[Finding] = []
    warnings = incident.account.warnings
    if warnings:
        out.append(Finding("input_warnings", "info",
                           f"{len(warnings)} warning(s) while reading the input", list(warnings[:20])))
    mixed = mixed_jobs(incident)
    if mixed:
        out.append(Finding(
            "mixed_jobs", "warning",
            "These logs seem to come from more than one job (different runs or iteration plans); "
            "point log_path at one job's logs, or read each finding's evidence with care", mixed))
    jumps = clock_jumps(incident)
    if jumps:
        out.append(Finding(
            "clock_went_back", "warning",
            "Timestamps go backwards within a file (a clock jump): ordering by time, and so "
            "which failure came first, may be wrong here; check the nodes' clocks (chronyc "
            "tracking)", jumps))
    if incident.unrecognized:
        forms = unplaced_forms(incident.unrecognized)
        out.append(Finding(
            "unrecognized_error_lines", "info",
            f"{len(incident.unrecognized)} line(s) in {len(forms)}"
            f"{'+' if len(forms) == 12 else ''} form(s) mention errors or timeouts in a way no "
            "parser knows; read them yourself (count × first place: first line)",
            [f"{n} × {where}: {text[:400]}" for n, where, text in forms]))
    return out


__all__ = ["Progress", "evidence", "input_findings", "last_progress", "reading_words",
           "step_totals_by_rank", "unplaced_forms"]
