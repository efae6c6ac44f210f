"""The throughput series: which metric, one value per logged iteration, and what to set aside
(eval and checkpoint-save events, restarts and gaps in the iteration numbers)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...incident import Incident
from ...schema import with_source
from ..common import EPOCH_EVENT, setup_bars, training_steps


@dataclass(frozen=True)
class MetricSpec:
    """One throughput metric: its column in ``iterations``, label and direction."""

    name: str
    column: str
    label: str
    higher_is_better: bool


METRICS: dict[str, MetricSpec] = {
    "tflops": MetricSpec("tflops", "tflops", "TFLOPs per GPU", True),
    "tokens_per_s_per_gpu": MetricSpec("tokens_per_s_per_gpu", "tokens_per_s_per_gpu",
                                       "tokens/s per GPU", True),
    "tokens_per_s": MetricSpec("tokens_per_s", "tokens_per_s", "tokens/s", True),
    "samples_per_s": MetricSpec("samples_per_s", "samples_per_s", "samples/s", True),
    "s_per_iteration": MetricSpec("s_per_iteration", "elapsed_s", "s/iteration", False),
    "mfu": MetricSpec("mfu", "mfu", "MFU %", True),
}
AUTO_ORDER = ("tflops", "tokens_per_s_per_gpu", "tokens_per_s", "samples_per_s",
              "s_per_iteration", "mfu")
SERIES_COLUMNS = ["run", "iteration", "value", "ranks", "source", "line", "time"]
EVENT_COLUMNS = ["iteration", "kind", "source", "line"]
DISCONTINUITY_COLUMNS = ["position", "kind", "from_iteration", "to_iteration", "source", "line"]


# Ticks of the clock a log prints (a whole second, a tenth, a millisecond) that the interval
# between two logged steps must span for the line times to stand for its wall time: 10 s where
# the times are whole seconds; 10 ms where they carry milliseconds (python logging's
# "2025-03-02 05:16:20,962 - INFO - Epoch 1 - Batch loss: 12.13", a T5 fine-tune's one line per
# batch every 1.29 s, its only speed signal).
MIN_TIMED_TICKS = 10


def _rated(rows: pd.DataFrame) -> bool:
    """Whether any row carries a throughput figure of ``METRICS``."""
    return any(spec.column in rows and rows[spec.column].notna().any()
               for spec in METRICS.values())


def epoch_rates(iterations: pd.DataFrame, progress: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rows counted by their epoch that carry a rate (MLPerf RNN-T's DLLogger summary
    "epoch 27 | avg train utts/s 2975 | took 93.11 s") or the time the epoch took (a
    per-epoch loop's "epoch=3/250,total_loss=1.02, 1 epoch time=61.76"), as steps numbered by
    the epoch. Where progress bars count the steps (``progress``), an epoch's time is no step's:
    the bars' rate is the series (the lance README's "[Epoch 3] Loss: 1371.7, Epoch Time:
    443.10s" after each epoch's bar at 1.48 s/it)."""
    iterations = with_source(iterations)
    if "event" not in iterations or not len(iterations):
        return iterations.iloc[:0]
    rows = iterations[(iterations["event"] == EPOCH_EVENT).fillna(False).astype(bool)
                      & iterations["iteration"].notna()]
    if progress is not None and "step" in progress and progress["step"].notna().any() \
            and "elapsed_s" in rows:
        rows = rows.assign(elapsed_s=pd.Series(pd.NA, index=rows.index, dtype="Float64"))
    return rows.assign(event=pd.NA) if _rated(rows) else rows.iloc[:0]


SNAPSHOTS = 2  # rated step lines per epoch, at most, that are snapshots of it
SUMMARISED = 0.8  # the share of those epochs, at least, that a rated summary closes


def snapshots(steps: pd.DataFrame, epochs: pd.DataFrame) -> bool:
    """Whether the rated step lines are a few snapshots of each epoch (``SNAPSHOTS``) whose
    epochs each end in a summary with the epoch's rate (``SUMMARISED``): the summaries are
    then the series. PaddleVideo logs steps 0 and 100 of each epoch, step 0 always waiting on
    the reader ("train step:0 … ips: 15.53727 instance/sec.", "train step:100 … ips: 86.72617
    instance/sec."), and closes it with "END epoch:14  train … avg_ips: 77.99324
    instance/sec.": two snapshots say less of the epoch than its average."""
    cols = [m.column for m in METRICS.values() if m.column in steps]
    if "epoch" not in steps or not len(steps) or not cols:
        return False
    rated = steps[steps[cols].notna().any(axis=1) & steps["epoch"].notna()]
    if len(rated) < len(steps) / 2 or rated["epoch"].nunique() < 3:
        return False
    per_epoch = rated.groupby("epoch").size()
    closed = per_epoch.index.isin(epochs["epoch"].dropna().unique()) if "epoch" in epochs \
        else np.zeros(len(per_epoch), dtype=bool)
    return bool(per_epoch.median() <= SNAPSHOTS and closed.mean() >= SUMMARISED)


def steps_with_seconds(incident: Incident) -> pd.DataFrame:
    """Training-step rows (``common.training_steps``) whose missing ``elapsed_s`` is filled
    from the logging interval's wall time where the logs give one (``interval_s``); when no
    step line carries any throughput figure at all, the epochs' rates where the log gives
    those alone (``epoch_rates``), else from the times of the step lines themselves
    (``timed_seconds``). Computed once an incident (``Incident.once``): the metric's choice,
    the analysis, the suspects and triage read it; the frame is not to be changed in place."""
    return incident.once("steps_with_seconds", _steps_with_seconds)


def _steps_with_seconds(incident: Incident) -> pd.DataFrame:
    """``steps_with_seconds`` computed."""
    it = training_steps(incident)
    epochs = epoch_rates(with_source(incident.iterations), incident.progress)
    if len(epochs) and (not _rated(it) or snapshots(it, epochs)):
        it = epochs
    if (clock := elapsed_clock(it)).any():
        since = it["elapsed_s"].where(clock)
        it = it.assign(train_time_s=it["train_time_s"].where(~clock, since)
                       if "train_time_s" in it else since, elapsed_s=it["elapsed_s"].mask(clock))
    if "train_time_s" in it and it["train_time_s"].notna().sum() >= 2:
        clocked = per_iteration_from_clock(it)
        it = it.assign(elapsed_s=clocked.where(it["train_time_s"].notna(), it["elapsed_s"]))
    if "interval_s" in it and it["interval_s"].notna().any():
        it = it.assign(elapsed_s=it["elapsed_s"].fillna(per_iteration_from_intervals(it)))
    elif not _rated(it):
        it = it.assign(elapsed_s=timed_seconds(it, save_times(incident)))
    if not _rated(it) and len(evals := eval_rates(incident.iterations)):
        it = evals
    return it


def eval_rates(iterations: pd.DataFrame) -> pd.DataFrame:
    """The evaluations that carry their own rate (HF Trainer's ``{"eval_loss": 0.57,
    "eval_runtime": 99.96, "eval_samples_per_second": 12.805, …, "step": 60}``), as steps
    numbered by the step they ran at: the series where no training line gives a rate or a
    time (the same eval set at the same cost each time measures the machine as well as a
    training step does); no rows where none carries one."""
    iterations = with_source(iterations)
    if "event" not in iterations or not len(iterations):
        return iterations.iloc[:0]
    rows = iterations[(iterations["event"] == "eval").fillna(False).astype(bool)
                      & iterations["iteration"].notna()]
    return rows.assign(event=pd.NA) if _rated(rows) else rows.iloc[:0]


def save_times(incident: Incident) -> pd.DataFrame:
    """The file (``source`` less its line number) and time of each timed checkpoint-save line."""
    ck = incident.tables.get("checkpoints")
    if ck is None or not len(ck) or "time" not in ck or "kind" not in ck:
        return pd.DataFrame({"file": pd.Series(dtype=str), "time": pd.Series(
            dtype="datetime64[ns]")})
    sv = ck[ck["kind"].fillna("").str.startswith("save") & ck["time"].notna()]
    return pd.DataFrame({"file": sv["source"].fillna("?").astype(str).str.rsplit(":", n=1)
                         .str[0], "time": sv["time"]}).reset_index(drop=True)


def timed_seconds(it: pd.DataFrame, saves: pd.DataFrame | None = None) -> pd.Series:
    """Seconds per iteration read off the step lines' own times: the time since the previous
    step line of the same file and rank over the iterations between them (<NA> for the first,
    and everywhere when the lines are less than ``MIN_TIMED_TICKS`` of their clock apart at the
    median: the times are then too coarse, ``clock_tick``), or over windows of lines that
    span that many where the steps go on without a restart (``_clock_windows``). An interval with a checkpoint save of the same file in it
    (``save_times``) starts at the last save: what ran before it (the save, the validation a
    trainer runs before saving) is no training (AT-BSN's hour of validation between iters
    4,000 and 4,100, then "Saving models and training states.")."""
    out = pd.Series(pd.NA, index=it.index, dtype="Float64")
    if "time" not in it or it["time"].notna().sum() < 2:
        return out
    rows = it[it["time"].notna() & it["iteration"].notna()]
    for key, g in rows.groupby(_file_and_rank(rows), sort=False):
        g = _clock_windows(g)
        gaps = g["time"].diff().dt.total_seconds()
        if saves is not None and len(saves):
            mine = saves.loc[saves["file"] == key[0], "time"].sort_values().to_numpy()
            if len(mine):
                t = g["time"].to_numpy()
                k = np.searchsorted(mine, t, side="left") - 1  # the last save before each line
                last = pd.Series(mine[np.clip(k, 0, None)], index=g.index)
                prev = g["time"].shift()
                inside = (k >= 0) & (last > prev).to_numpy()
                gaps = gaps.where(~inside, (g["time"] - last).dt.total_seconds())
        steps = g["iteration"].astype("Float64").diff()
        gaps = gaps.where(steps > 0)  # a restart or a repeated step: no interval
        if gaps.notna().any() and gaps.median() >= MIN_TIMED_TICKS * clock_tick(g["time"]):
            out.loc[g.index] = pd.array(gaps / steps, dtype="Float64")
    return out


def _clock_windows(g: pd.DataFrame) -> pd.DataFrame:
    """One file's step lines as far apart as its clock can time: every line where they are
    ``MIN_TIMED_TICKS`` ticks apart at the median, else every k-th line, k lines spanning that
    many on average (ColBERT's line per 0.74 s step stamped to the second: one point per 14
    steps); all of them where the steps ever go back (a restart) or fewer than three such
    windows fit."""
    if len(g) < 3:
        return g
    tick = clock_tick(g["time"])
    span = (g["time"].iloc[-1] - g["time"].iloc[0]).total_seconds()
    if (g["time"].diff().dt.total_seconds().median() >= MIN_TIMED_TICKS * tick or span <= 0
            or not (g["iteration"].astype("Float64").diff().iloc[1:] > 0).all()):
        return g
    k = math.ceil(MIN_TIMED_TICKS * tick / (span / (len(g) - 1)))
    return g.iloc[::k] if (len(g) - 1) // k >= 3 else g


def clock_tick(times: pd.Series) -> float:
    """The resolution of the times a log prints, in seconds: 1.0 where they are whole seconds
    (or could be), 0.1, 0.01 or 0.001 where their fractions show that many digits at most."""
    us = pd.to_datetime(times.dropna()).dt.microsecond.to_numpy()
    for tick in (1.0, 0.1, 0.01, 0.001):
        if not (us % round(tick * 1e6)).any():
            return tick
    return 1e-6


def per_iteration_seconds(iterations: list[int], interval_s: list[float | None]) -> list[float | None]:
    """Seconds per iteration from the wall time of each logging interval: the interval's time
    over the iterations since the previous logged one. The first row's interval starts at 0
    when its iteration equals the next gap (``iter: 100`` then ``iter: 200``), else is unknown."""
    out: list[float | None] = []
    for i, (it, t) in enumerate(zip(iterations, interval_s, strict=True)):
        if i:
            gap = it - iterations[i - 1]
        else:
            gap = it if len(iterations) > 1 and iterations[1] - it == it else 0
        out.append(t / gap if t is not None and gap > 0 else None)
    return out


def per_iteration_from_clock(it: pd.DataFrame) -> pd.Series:
    """Seconds per iteration from a training clock the step lines state (``train_time_s``):
    the clock's advance since the previous step line of the same file and rank over the
    iterations between them (<NA> for the first line and after a restart). A running average
    since the start (modded-nanogpt's step_avg) is no rate of the steps it ends: a slowdown at
    step 3000 of 5000 moves it by a fraction, late; the clock's differences move at once."""
    out = pd.Series(pd.NA, index=it.index, dtype="Float64")
    rows = it[it["train_time_s"].notna() & it["iteration"].notna()]
    for _, g in rows.groupby(_file_and_rank(rows), sort=False):
        if not runs_forward(g["iteration"].astype(float).to_numpy(),
                            g["train_time_s"].astype(float).to_numpy()):
            continue
        out.loc[g.index] = pd.array(clock_seconds(g["iteration"].astype(float).tolist(),
                                                  g["train_time_s"].astype(float).tolist()),
                                    dtype="Float64")
    return out


CLOCK_FORWARD = 0.9  # the share of advancing steps, at least, over which a clock advances too
# a step line's bare seconds are the time since the start, not the step's, when they run forward
# (``runs_forward``), grow this many times over the file, and advance at a steady pace per step
# (the spread of the per-step advance under ``CLOCK_STEADY`` of its median)
CLOCK_GROWTH = 3.0
CLOCK_STEADY = 0.5
MIN_CLOCK_LINES = 5


def elapsed_clock(it: pd.DataFrame) -> pd.Series:
    """Which rows' ``elapsed_s`` is a clock since the start rather than the step's own time:
    the rows of a file and rank whose seconds run forward with the steps, grow
    ``CLOCK_GROWTH`` times and advance at a steady pace per step (tiny-shrek's "iter   1400 |
    loss 0.9925 | lr 4.78e-04 | 245s", 23 s at iter 0 and 454 s at 2700: 0.16 s a step, not a
    slowdown from 23 s to 454 s). A step time that creeps up goes up and down with the
    noise, its advance per step no steady pace."""
    out = pd.Series(False, index=it.index)
    if "elapsed_s" not in it or not len(it):
        return out
    rows = it[it["elapsed_s"].notna() & it["iteration"].notna()]
    for _, g in rows.groupby(_file_and_rank(rows), sort=False):
        if len(g) < MIN_CLOCK_LINES:
            continue
        steps = g["iteration"].astype(float).to_numpy()
        secs = g["elapsed_s"].astype(float).to_numpy()
        if (not runs_forward(steps, secs) or secs.min() <= 0
                or secs.max() < CLOCK_GROWTH * secs.min()):
            continue
        gaps = np.diff(steps)
        ahead = gaps > 0
        pace = np.diff(secs)[ahead] / gaps[ahead]
        mid = float(np.median(pace)) if len(pace) else 0.0
        if mid > 0 and float(np.median(np.abs(pace - mid))) <= CLOCK_STEADY * mid:
            out.loc[g.index] = True
    return out


def runs_forward(iterations: np.ndarray, clock: np.ndarray) -> bool:
    """Whether a value printed on each step line is a clock since the start: between lines
    whose step advances it advances too (``CLOCK_FORWARD`` of them, at least). A time that
    goes up and down with the steps ("elapsed: 0.23" of each step) is no clock."""
    ahead = np.diff(iterations) > 0
    if not ahead.any():
        return False
    return bool((np.diff(clock)[ahead] > 0).mean() >= CLOCK_FORWARD)


CLOCK_WRITERS = 8  # the clocks, at most, followed at once in one file (writers, resumes)


def clock_seconds(iterations: list[float], clock: list[float]) -> list[float | None]:
    """Seconds per iteration from the clock of each step line, in log order: each line goes on
    from the latest earlier line whose iteration and clock are both behind it (the furthest
    iteration among them; None where none is: the first line, a restart, a clock reset). Two
    processes writing one file (LLaMA-Factory's trainer_log.jsonl from two launches into one
    output_dir: every step twice, the second writer's clock minutes behind) are two clocks:
    the difference to the other writer's line before it is no step's time."""
    out: list[float | None] = []
    ends: list[tuple[float, float]] = []  # each clock's last (iteration, time)
    for i, t in zip(iterations, clock, strict=True):
        behind = [k for k, (ei, et) in enumerate(ends) if ei < i and et <= t]
        if behind:
            k = max(behind, key=lambda k: ends[k])
            ei, et = ends.pop(k)
            out.append((t - et) / (i - ei))
        else:
            out.append(None)
        ends.append((i, t))
        del ends[:-CLOCK_WRITERS]
    return out


def per_iteration_from_intervals(it: pd.DataFrame) -> pd.Series:
    """``per_iteration_seconds`` for each file and rank of an iterations table, in log order."""
    out = pd.Series(pd.NA, index=it.index, dtype="Float64")
    rows = it[it["interval_s"].notna()]
    for _, g in rows.groupby(_file_and_rank(rows), sort=False):
        vals = per_iteration_seconds([int(x) for x in g["iteration"]],
                                     [float(x) for x in g["interval_s"]])
        out.loc[g.index] = pd.array(vals, dtype="Float64")
    return out


def _file_and_rank(rows: pd.DataFrame) -> list[pd.Series]:
    """Group keys for step rows: the file each came from (its ``source`` less the line number)
    and its rank (-1 for none)."""
    return [rows["source"].fillna("?").astype(str).str.rsplit(":", n=1).str[0],
            rows["rank"].fillna(-1)]


def _order(df: pd.DataFrame) -> pd.DataFrame:
    """Rows in log order: by file, then line number."""
    src = df["source"].fillna("?:0").astype(str)
    parts = src.str.rsplit(":", n=1)
    return df.assign(_file=parts.str[0], _lineno=pd.to_numeric(parts.str[1], errors="coerce")
                     .fillna(0)).sort_values(["_file", "_lineno"], kind="stable")


def usable(values: pd.Series) -> pd.Series:
    """Which values can be analysed: present and positive (a printed 0.00 is no reading)."""
    v = values.astype("Float64")
    return v.notna() & (v > 0)


def usable_points(incident: Incident, metric: str) -> int:
    """How many iteration lines carry a usable value of ``metric``."""
    steps = steps_with_seconds(incident)
    col = METRICS[metric].column
    return int(usable(steps[col]).sum()) if col in steps else 0


# a metric logged this many times as often as the first of ``AUTO_ORDER`` is the step's own;
# the sparse one a block's summary (MLPerf NeMo's tracked_stats: "train_step_time" every
# step, "throughput" only beside each evaluation)
DENSER_FACTOR = 10


def choose_metric(incident: Incident, metric: str = "auto", min_points: int = 3) -> str | None:
    """The metric to analyse: ``metric`` if it has data, else the first of ``AUTO_ORDER`` with
    at least ``min_points`` positive values (a column of zeros, like TFLOPs 0.00 printed by a
    job that cannot count its FLOPs, does not count) unless a later one is logged
    ``DENSER_FACTOR`` times as often; None when nothing has."""
    counts, bar_points = incident.once("metric_points", _metric_points)
    if metric in METRICS and counts.get(metric, 0) >= min_points:
        return metric
    enough = [name for name in AUTO_ORDER if counts.get(name, 0) >= min_points]
    if enough:
        first = enough[0]
        return next((name for name in enough[1:]
                     if counts[name] >= DENSER_FACTOR * counts[first]), first)
    # no iteration line carries a metric: tqdm's rate, as seconds per step
    if bar_points >= min_points:
        return "s_per_iteration"
    return None


def _metric_points(incident: Incident) -> tuple[dict[str, int], int]:
    """How many usable values each metric with a column has (``usable``), and how many rows
    the training loop's tqdm bar has (``_main_bar``): what ``choose_metric`` weighs, counted
    once an incident (the throughput analysis asks it up to four times)."""
    steps = steps_with_seconds(incident)
    counts = {name: int(usable(steps[m.column]).sum()) for name, m in METRICS.items()
              if m.column in steps}
    return counts, len(_main_bar(incident.progress))


def series_points(incident: Incident) -> int:
    """The most values the throughput runbook can read of any one metric: a step line's figure
    or the training loop's tqdm rate (``_metric_points``)."""
    counts, bar = _metric_points(incident)
    return max([bar, *counts.values()])


def _main_bar(progress: pd.DataFrame) -> pd.DataFrame:
    """The training loop's tqdm rows that carry a rate: the bar (its total) that ran longest,
    then the largest total. A dataset's tokenizing or map bar counts more items (8,939 examples,
    71,514 rows) but runs seconds, the training loop minutes to days."""
    pr = progress[progress["step"].notna() & progress["rate"].notna() & (progress["rate"] > 0)]
    if len(pr) and "desc" in pr:
        pr = pr[~setup_bars(pr)]  # (transformers' "Loading checkpoint shards": 16.99s/it)
    if not len(pr):
        return pr
    if pr["total"].notna().any():
        bars = pr[pr["total"].notna()]
        ran = bars["elapsed_s"].astype(float).fillna(-1.0).groupby(bars["total"]).max()
        longest = ran[ran == ran.max()].index.max()
        longest = _inner_bar(bars, longest)
        pr = pr[pr["total"] == longest]
    return pr


NESTED_PACE = 2.0  # an outer bar's step takes the inner bar's whole run, within this factor


def _inner_bar(bars: pd.DataFrame, outer: float) -> float:
    """The total of the bar nested in bar ``outer``, else ``outer``: a bar that runs to its
    end once for each step of the outer bar (twice or more), the outer bar's one step taking
    about its whole run (``NESTED_PACE``): pytorch-transformers' ``trange`` of epochs over each
    epoch's "Iteration" bar ("Epoch:  20%| 1/5 [3:33:53<14:15:32, 12833.22s/it]" over "498/498
    [3:33:53<00:00, 25.77s/it]"). The outer bar's rate is the epoch's; the inner one's the
    step's, its counts the steps across its restarts (``bar_steps``)."""
    spi = 1.0 / bars["rate"].astype(float)
    out_rows = _order(bars[bars["total"] == outer])
    if (out_rows.groupby(_file_and_rank(out_rows), sort=False)["step"].diff() < 0).any():
        return outer  # a bar that starts again (YOLO's epoch bar, its val bar after each) is
        # no bar of the whole run over the others
    outer_spi = float(spi.loc[out_rows.index].median())
    outer_steps = out_rows["step"].nunique()
    best, gap = outer, None
    for total, g in bars[bars["total"] != outer].groupby("total"):
        ends = g.loc[g["step"] == total, "source"].nunique()  # (its close redraws the end)
        if total <= 1 or ends < 2 or abs(ends - outer_steps) > 1:
            continue  # one run of the inner bar each step of the outer one
        ratio = outer_spi / (float(total) * float(spi.loc[g.index].median()))
        if 1 / NESTED_PACE <= ratio <= NESTED_PACE and (gap is None or abs(np.log(ratio)) < gap):
            best, gap = total, abs(np.log(ratio))
    return best


def bar_steps(progress: pd.DataFrame) -> pd.Series:
    """The step of each bar row counted across the bar's restarts: a bar that starts again at
    every epoch (YOLO's ``42/42``, Keras's ``1490/1490``) goes on from the total of the epoch
    before, so that epoch after epoch is a series in order (a row not past the previous one of
    its file and rank starts a new epoch) — unless it is the row before drawn again (``redrawn``)."""
    pr = _order(progress)
    out = pd.Series(0, index=pr.index, dtype="int64")
    again = redrawn(pr)
    for _, g in pr.groupby(_file_and_rank(pr), sort=False):
        offset, prev = 0, None
        for idx, step, total, src in zip(g.index, g["step"], g["total"], g["source"],
                                         strict=True):
            step = int(step)
            # tqdm's close draws the last count once more on its physical line, its rate the
            # whole run's average: no new epoch either
            if prev is not None and step <= prev[0] and not again.loc[idx] and not (
                    step == prev[0] and src == prev[2]):
                offset += int(prev[1]) if pd.notna(prev[1]) else prev[0]
            out.loc[idx] = offset + step
            prev = (step, total, src)
    return out.reindex(progress.index)


# a bar's first row whose step its own later pace could not have reached in this many times
# its elapsed time: the count jumped (a resume), the rate then averages the jump in
RESUME_JUMP = 10
ECHO_FACTOR = 2  # a rate this many times faster than the bar's clock is the jump's echo


def _clock_ahead(steps: np.ndarray, elapsed: np.ndarray, i: int, ticks: float) -> float | None:
    """Seconds per step the bar's clock measures from row ``i`` to the first row at least
    ``ticks`` seconds later; None when the bar ends before."""
    later = np.nonzero((elapsed >= elapsed[i] + ticks) & (steps > steps[i]))[0]
    if not len(later):
        return None
    j = later[0]
    return float((elapsed[j] - elapsed[i]) / (steps[j] - steps[i]))


def resumed_head(progress: pd.DataFrame) -> pd.Series:
    """Whether each bar row belongs to the head of a resumed bar whose rate still averages in
    the steps skipped at once: the bar's first row is further than its own later pace could
    have gone in the time shown (``RESUME_JUMP``; HF Trainer resumed from checkpoint-1626:
    "1627/3252 [00:05<00:05, 305.36it/s]", then 4.4 s/it), and the rows from it on claim a
    rate ``ECHO_FACTOR`` times faster than the bar's clock over the next ``MIN_TIMED_TICKS``
    seconds, then go on slowing step after step to the level (tqdm's smoothed rate decaying
    from 305 it/s over 40 steps: ... 3.61, 3.74, 3.85, 3.98, 4.12 s/it, then 4.1-4.8)."""
    out = pd.Series(False, index=progress.index)
    if not len(progress) or not {"elapsed_s", "rate", "step"} <= set(progress.columns):
        return out
    pr = _order(progress)
    for _, g in pr.groupby(_file_and_rank(pr), sort=False):
        g = g[g["elapsed_s"].notna() & g["rate"].notna() & (g["rate"] > 0)]
        if len(g) < 2:
            continue
        steps = g["step"].to_numpy(dtype=float)
        elapsed = g["elapsed_s"].to_numpy(dtype=float)
        spi = 1.0 / g["rate"].to_numpy(dtype=float)
        first = _clock_ahead(steps, elapsed, 0, MIN_TIMED_TICKS)
        if first is None or steps[0] * first <= RESUME_JUMP * max(elapsed[0], 1.0):
            continue
        i, echo = 0, True
        while i < len(g):
            if i and steps[i] == steps[i - 1]:  # the step drawn again: as the row before
                out.loc[g.index[i]] = out.loc[g.index[i - 1]]
                i += 1
                continue
            if echo:
                clock = _clock_ahead(steps, elapsed, i, MIN_TIMED_TICKS)
                echo = clock is not None and spi[i] * ECHO_FACTOR <= clock
            if not echo and not (i and spi[i] > spi[i - 1] and out.loc[g.index[i - 1]]):
                break
            out.loc[g.index[i]] = True
            i += 1
    return out


def redrawn(progress: pd.DataFrame) -> pd.Series:
    """Whether each bar row is the row before it of its file and rank drawn again: the same
    step and rate, no earlier elapsed time. tqdm draws its state again after a line printed
    through it (HF Trainer's loss dict every ``logging_steps``: "1700/3252 [05:35<1:54:47,
    4.44s/it]" twice; a second later, "1677/1677 [49:11<00:00, 1.56s/it]" then "[49:12<00:00,
    1.56s/it]": the rate changes only with a step); the next epoch's bar starts its clock
    again, its rate its own (YOLO's "42/42 [01:09<00:00, 1.65s/it]", then 1.71 s/it in the
    same time). Rows without an elapsed time are never a redraw."""
    if not {"step", "elapsed_s", "rate"} <= set(progress.columns):
        return pd.Series(False, index=progress.index)
    keys = _file_and_rank(progress)

    def before(col: str) -> pd.Series:
        return progress[col].groupby(keys, sort=False).shift()

    def same(a: pd.Series, b: pd.Series) -> pd.Series:
        return (a.notna() & b.notna() & (a == b)).fillna(False).astype(bool)

    el, el0 = progress["elapsed_s"], before("elapsed_s")
    later = (el.notna() & el0.notna() & (el >= el0)).fillna(False).astype(bool)
    return same(progress["step"], before("step")) & same(progress["rate"], before("rate")) \
        & later


# the event of a trainer's end-of-run summary row (HF Trainer's "{'train_runtime': 273.01,
# 'train_samples_per_second': 3.663, …}", ``parse.iterations``)
SUMMARY_EVENT = "train_summary"


def summary_rate(incident: Incident, metric: str = "auto") -> tuple[str, float, int] | None:
    """The run's average rate from its trainer's end-of-run summaries (one per process that
    printed one): (metric, their median, how many), the first of ``AUTO_ORDER`` (or
    ``metric``) they carry; None when the logs hold none. A whole run's average: no series."""
    it = with_source(incident.iterations)
    if "event" not in it or not len(it):
        return None
    rows = it[(it["event"] == SUMMARY_EVENT).fillna(False).astype(bool)]
    for name in ([metric] if metric in METRICS else []) + list(AUTO_ORDER):
        col = METRICS[name].column
        if col in rows and (ok := usable(rows[col])).any():
            vals = rows.loc[ok, col].astype(float)
            return name, float(vals.median()), int(len(vals))
    return None


def metric_series(incident: Incident, metric: str) -> pd.DataFrame:
    """One row per logged iteration: run (restart count), iteration, value (median across the
    ranks that logged it), ranks (how many), source, line, time. Ordered as the job ran."""
    cols = SERIES_COLUMNS
    spec = METRICS.get(metric)
    if spec is None:
        return pd.DataFrame(columns=cols)
    head: set[tuple[str, int]] = set()
    steps = steps_with_seconds(incident)
    if spec.column in steps and usable(steps[spec.column]).any():
        rows = steps[usable(steps[spec.column])]
        rows = rows.assign(value=rows[spec.column].astype(float))
    else:
        pr = _main_bar(incident.progress)
        if not len(pr) or metric != "s_per_iteration":
            return pd.DataFrame(columns=cols)
        rows = pr.assign(iteration=bar_steps(pr), value=1.0 / pr["rate"].astype(float))
        h = rows[resumed_head(pr)]
        head = set(zip(h["source"].astype(str), h["iteration"].astype(int), strict=True))
    rows = _order(rows)
    rows = rows.assign(_rank=rows["rank"].fillna(-1).astype(int))
    rows = rows.assign(iteration=rows["iteration"].astype("int64"))
    back = (rows.groupby(["_file", "_rank"], sort=False)["iteration"].diff() < 0).astype(int)
    rows = rows.assign(run=back.groupby([rows["_file"], rows["_rank"]]).cumsum())
    ep = pd.to_numeric(rows["epoch"], errors="coerce") if "epoch" in rows else None
    wraps = [] if ep is None else sorted(set(rows["run"][(back > 0) & (
        ep.groupby([rows["_file"], rows["_rank"]]).diff() > 0)].astype(int)))
    g = rows.groupby(["run", "iteration"], sort=True)
    out = g.agg(value=("value", "median"), ranks=("_rank", "nunique"), source=("source", "first"),
                line=("line", "first"), time=("time", "first")).reset_index()
    out["iteration"] = out["iteration"].astype(int)
    out = out[cols].reset_index(drop=True)
    out.attrs["epoch_runs"] = wraps  # runs begun by an epoch's counter starting again
    out.attrs["resumed_head"] = sorted(head)  # (source, iteration) of ``resumed_head``'s rows
    return out


def launches(series: pd.DataFrame) -> np.ndarray:
    """The launch of each series row, counted 0, 1, 2 ...: a run (``metric_series``) whose
    step goes back to (near) the start of the first one — no further than one logging interval
    past the first logged step, the first run's or its own — is the job started afresh (a new
    launch appended to the same log, maybe of another configuration), not a resume from a
    checkpoint nor the next epoch of a counter that restarts each epoch (its line's epoch went
    up). Rates of two launches are never compared: a change is looked for within one."""
    n = len(series)
    if not n:
        return np.zeros(0, dtype=int)
    its = series["iteration"].to_numpy(dtype=np.int64)
    runs = series["run"].to_numpy()
    d = np.diff(its)
    step = int(np.median(d[d > 0])) if (d > 0).any() else 1
    start = int(its[runs == runs[0]].min())
    first_of_run = np.r_[True, runs[1:] != runs[:-1]]
    # a launch of another configuration may log at another interval: its own counts too
    # (GluonCV's simple-pose log: every 20 batches on 8 GPUs, then every 100 on one), where its
    # first two intervals agree (a launch's regular logging, not an evaluation's counter
    # interleaved with the training's lines: mtcnn-paddle's log)
    own = np.zeros(n, dtype=np.int64)
    if n >= 3:
        first, second = d[:-1], d[1:]  # each row's next two intervals
        same_run = (runs[1:-1] == runs[:-2]) & (runs[2:] == runs[:-2])
        own[:-2] = np.where((first > 0) & same_run & (first == second), first, 0)
    fresh = first_of_run & (its <= start + np.maximum(step, own)) & ~np.isin(runs, series.attrs.get(
        "epoch_runs", []))  # (an epoch's counter starting again is no new launch)
    fresh[0] = False
    return np.cumsum(fresh)


def last_launch(series: pd.DataFrame) -> pd.DataFrame:
    """The rows of the series' last launch (``launches``), their runs counted from 0."""
    n = launches(series)
    if not len(n) or n[-1] == 0:
        return series
    out = series[n == n[-1]].reset_index(drop=True)
    return out.assign(run=out["run"] - out["run"].min())


def events(incident: Incident) -> pd.DataFrame:
    """Eval and checkpoint-save events: iteration, kind ("eval"/"save"), source, line."""
    frames = []
    it = with_source(incident.iterations)
    if "event" in it:
        ev = it[(it["event"] == "eval") & it["iteration"].notna()]
        # an evaluation that is itself a point of the series (``eval_rates``) is no event
        # around it
        ev = ev[~ev["source"].isin(steps_with_seconds(incident)["source"])]
        frames.append(ev.assign(kind="eval")[EVENT_COLUMNS])
    ck = incident.tables.get("checkpoints")
    if ck is not None and len(ck) and "kind" in ck and "iteration" in ck:
        sv = ck[ck["kind"].fillna("").str.contains("save") & ck["iteration"].notna()]
        frames.append(sv.assign(kind="save")[EVENT_COLUMNS])
    if not frames:
        return pd.DataFrame(columns=EVENT_COLUMNS)
    out = pd.concat(frames, ignore_index=True)
    out = out.drop_duplicates(["iteration", "kind"]).sort_values("iteration", kind="stable")
    return out.reset_index(drop=True)


def mask_events(series: pd.DataFrame, event_iterations: list[int],
                max_fraction: float = 0.4) -> np.ndarray:
    """Boolean mask of series positions at an event's iteration or the first logged iteration
    after it (where Megatron books eval and save time). Nothing is masked when that would hide
    more than ``max_fraction`` of the series."""
    n = len(series)
    mask = np.zeros(n, dtype=bool)
    if not n or not event_iterations:
        return mask
    its = series["iteration"].to_numpy(dtype=np.int64)
    for e in set(int(e) for e in event_iterations):
        mask |= its == e
        after = np.nonzero(its > e)[0]
        if len(after):
            mask[after[0]] = True
    return mask if mask.sum() <= max_fraction * n else np.zeros(n, dtype=bool)


def resumed_bar_head(series: pd.DataFrame) -> np.ndarray:
    """Boolean mask of the series rows read from a resumed bar's head (``resumed_head``):
    a rate that averages in the steps skipped at the resume, not one the run held."""
    head = series.attrs.get("resumed_head", [])
    if not len(series) or not head:
        return np.zeros(len(series), dtype=bool)
    keys = set(head)
    return np.array([(str(s), int(i)) in keys for s, i in zip(
        series["source"], series["iteration"], strict=True)], dtype=bool)


def startup_burst(series: pd.DataFrame, min_points: int = 2, max_fraction: float = 0.4) -> np.ndarray:
    """Boolean mask of the first steps a trainer logs one by one before its logging interval
    (parameter-golf and modded-nanogpt: steps 1, 2, 3, 4, 5, then every 500): the positions,
    in the first run, whose iteration is below half the interval (the median gap between logged
    iterations). Their rate is the start-up's (compilation, warm-up, a running mean over a few
    steps), not a level the run held. Nothing is masked for fewer than ``min_points`` of them,
    or more than ``max_fraction`` of the series."""
    n = len(series)
    mask = np.zeros(n, dtype=bool)
    if n < 4:
        return mask
    first = series["run"].to_numpy() == series["run"].iloc[0]
    its = series["iteration"].to_numpy(dtype=np.int64)[first]
    gaps = np.diff(its)
    gaps = gaps[gaps > 0]
    if not len(gaps):
        return mask
    early = np.nonzero(its < np.median(gaps) / 2)[0]
    if len(early) < min_points or len(early) > max_fraction * n or early[-1] != len(early) - 1:
        return mask
    mask[early] = True
    return mask


def discontinuities(series: pd.DataFrame, gap_factor: float = 3.0) -> pd.DataFrame:
    """Restarts (iterations going back) and gaps (iterations or time jumping far beyond the
    usual step) between consecutive logged iterations: position (of the row after), kind,
    from_iteration, to_iteration, source, line."""
    cols = DISCONTINUITY_COLUMNS
    if len(series) < 2:
        return pd.DataFrame(columns=cols)
    its = series["iteration"].to_numpy(dtype=np.int64)
    runs = series["run"].to_numpy()
    d = np.diff(its)
    step = float(np.median(d[d > 0])) if (d > 0).any() else 1.0
    t = pd.to_datetime(series["time"], errors="coerce")
    dt = t.diff().dt.total_seconds().to_numpy()
    typical_dt = float(np.nanmedian(dt[1:][dt[1:] > 0])) if np.isfinite(dt[1:]).any() and (
        dt[1:] > 0).any() else None
    rows = []
    for i in range(1, len(series)):
        kind = None
        if runs[i] != runs[i - 1] or its[i] < its[i - 1]:
            kind = "restart"
        elif its[i] - its[i - 1] > gap_factor * step:
            kind = "gap"
        elif typical_dt and np.isfinite(dt[i]) and dt[i] > max(gap_factor * 3 * typical_dt, 600):
            kind = "pause"
        if kind:
            rows.append((i, kind, int(its[i - 1]), int(its[i]), series["source"].iloc[i],
                         series["line"].iloc[i]))
    return pd.DataFrame(rows, columns=cols)


__all__ = ["AUTO_ORDER", "METRICS", "MetricSpec", "choose_metric", "discontinuities", "eval_rates", "events", "last_launch", "launches",
           "mask_events", "metric_series", "per_iteration_from_intervals",
           "per_iteration_seconds", "series_points", "steps_with_seconds", "summary_rate",
           "usable", "usable_points"]
