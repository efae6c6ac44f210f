"""Small facts every runbook needs: the last progress a job made, the findings about input."""

from __future__ import annotations

import itertools
import math
import re
import shlex
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..hostlist import runs
from ..incident import Incident
from ..linefacts import EPOCH_EVENT, NAN_TEXT_RE
from ..parse.errors import SPAWN_RAISED, SPAWN_RAISED_RE
from ..parse.iterations import bar_count
from ..report import Finding, evidence
from ..schema import SYNTHETIC_HOST_PREFIX, with_source


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
    """Iteration rows that are training steps: a numbered iteration, no eval/summary event
    (computed once an incident, ``Incident.once``: every class and triage read them; the frame
    is not to be changed in place)."""
    return incident.once("training_steps", _training_steps)


def _training_steps(incident: Incident) -> pd.DataFrame:
    """``training_steps`` computed."""
    return steps_of(with_source(incident.iterations), incident.progress)


def epoch_counted(iterations: pd.DataFrame, progress: pd.DataFrame | None = None,
                  losses: bool = False) -> pd.DataFrame:
    """The iterations table with its rows counted by epoch (``event="epoch"``: "Epoch 939 loss
    0.7634") as training steps where nothing counts steps, and without them where a step line
    or a progress bar does (an epoch's summary printed beside step lines or after each epoch's
    bar, "[Epoch 8] Loss: 1371.7, Epoch Time: 443.10s", is no step of its own). ``losses``:
    for the loss series, where only bars count steps and no step line has a loss, the epochs'
    losses are the series (a KGE trainer's bar of 300 batches per epoch with no loss, then
    "Epoch 0013 in static KGE | Ave Loss: 5.8641", lrlbbzl/llm_tkgc)."""
    it = with_source(iterations)
    if "event" not in it or not len(it):
        return it
    by_epoch = (it["event"] == EPOCH_EVENT).fillna(False).astype(bool)
    if not by_epoch.any():
        return it
    bars = progress is not None and "step" in progress and progress["step"].notna().any()
    steps = (it["iteration"].notna() & it["event"].isna()).any()
    if bars and not steps and losses and "loss" in it and it.loc[by_epoch, "loss"].notna().any():
        return it.assign(event=it["event"].mask(by_epoch, pd.NA))
    if bars or steps:
        return it[~by_epoch]
    batches = batch_counts(it[by_epoch])
    if batches is not None:  # per-batch lines: counted, the epoch's other lines its summaries
        return it[~by_epoch | it.index.isin(batches.index)].assign(
            iteration=it["iteration"].mask(it.index.isin(batches.index), batches.reindex(
                it.index)),
            event=it["event"].mask(by_epoch, pd.NA))
    return it.assign(event=it["event"].mask(by_epoch, pd.NA))


BATCH_LINES_MIN = 3  # lines of one wording per epoch, at the median, that are batches


def batch_counts(rows: pd.DataFrame) -> pd.Series | None:
    """The run's count of per-batch lines that name only their epoch (a custom loop's
    "Epoch 1 - Batch loss: 12.13" after every batch, no batch counter): in each file and rank,
    the lines of the wording that comes ``BATCH_LINES_MIN`` times or more in a row with the
    same epoch (at the median) are batches, counted 1, 2, 3 … in log order across epochs; a wording printed once
    an epoch ("Epoch 1 - Average Train Loss: 1.63") is the epoch's summary, no batch. None
    where no wording recurs so (one line per epoch: the epochs are the steps). The wording is
    the rows' ``wording`` (``linefacts.wording_id``)."""
    rows = with_source(rows)
    if "wording" not in rows or "source" not in rows:
        return None
    rows = rows[rows["iteration"].notna() & rows["wording"].notna()]
    if not len(rows):
        return None
    wording = rows["wording"]
    file = rows["source"].fillna("?").astype(str).str.rsplit(":", n=1).str[0]
    keys = [file, rows["rank"].fillna(-1), wording]
    out: list[pd.Series] = []
    for _, g in rows.groupby(keys, sort=False):
        # lines of one epoch one after another (a run of the same epoch), not the same epoch
        # printed again by another run appended to the log or another writer without a prefix
        # (Dual_D's twelve runs, each from "Epoch 001/100"; four msrun workers' epochs)
        ep = g["iteration"].to_numpy()
        runs = np.diff(np.flatnonzero(np.r_[True, ep[1:] != ep[:-1], True]))
        if np.median(runs) >= BATCH_LINES_MIN:
            out.append(pd.Series(np.arange(1, len(g) + 1), index=g.index, dtype="Int64"))
    return pd.concat(out) if out else None


def steps_of(iterations: pd.DataFrame, progress: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rows of an iterations table that are training steps (``training_steps``; rows
    counted by epoch as ``epoch_counted`` says, given the progress bars)."""
    it = epoch_counted(iterations, progress)
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
    kind: str  # "tqdm", "iteration", "checkpoint" (the step the last checkpoint names) or "none"

    def describe(self) -> str:
        """'step 21/6336 at ~25.6 s/step' or 'no progress line found'."""
        if self.step is None:
            return "no progress line found"
        total = f"/{self.total}" if self.total is not None else ""
        pace = f" at ~{self.seconds_per_step:.3g} s/step" if self.seconds_per_step else ""
        return f"step {self.step}{total}{pace}"


# a row's ``source``: "file:line"
SOURCE_RE = re.compile(r"^(?P<file>.*?):(?P<line>\d+)$")


def last_runs(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of each writer's last run: per file and rank, those after the last place where
    the step goes back in the file (a relaunch appended to the same log, a resume from an
    earlier checkpoint, a counter that restarts each epoch)."""
    rows = with_source(rows)
    src = rows["source"].astype("string").fillna("?:0")
    parts = src.str.rsplit(":", n=1)
    key = rows.assign(_file=parts.str[0], _lineno=pd.to_numeric(parts.str[1], errors="coerce"),
                      _rank=rows["rank"].astype("Float64").fillna(-1))
    key = key.sort_values(["_file", "_lineno"], kind="stable")
    groups = [key["_file"], key["_rank"]]
    back = (key.groupby(groups, sort=False)["iteration"].diff() < 0).fillna(False).astype(int)
    run = back.groupby(groups, sort=False).cumsum()
    last = run == run.groupby(groups, sort=False).transform("max")
    return rows.loc[key.index[last.to_numpy()]]


def fixed_batch_epochs(it: pd.DataFrame) -> pd.DataFrame:
    """Step lines that each name their epoch and a batch of the epoch that never moves (a line
    logged once an epoch, at its first batch: PVD's and pcdiff's "[101/5000][  0/  7]    loss:
    0.2454", a DCGAN-style loop printing only batch 0) count epochs: the epoch is the step, and
    the batch's total no length of the run. Other tables are returned as they are."""
    rows = it[it["iteration"].notna()] if "iteration" in it and len(it) else it
    if (len(rows) < 3 or "epoch" not in rows or rows["epoch"].isna().any()
            or rows["iteration"].nunique() != 1 or rows["epoch"].nunique() < 3):
        return it
    return it.assign(iteration=it["iteration"].mask(it["iteration"].notna(), it["epoch"]),
                     total_iterations=it["total_iterations"].mask(it["iteration"].notna()))


MLLOG_TAG = ":::MLLOG"


def without_mllog_counter(it: pd.DataFrame) -> pd.DataFrame:
    """The step rows without MLPerf's ``:::MLLOG`` events where the log's own progress lines
    count steps too: an event's "step" metadata counts what its benchmark chose (SSD's and
    RetinaNet's tracked_stats the epochs from 1, "step": 5 after "Epoch: [4]  [  20/3657]";
    ResNet's the epochs), not the iterations the progress lines count."""
    if not len(it) or "line" not in it:
        return it
    mllog = it["line"].astype("string").str.contains(MLLOG_TAG, regex=False).fillna(False)
    own = it["iteration"].notna() & ~mllog
    if not mllog.any() or not own.any():
        return it
    return it[~mllog]


def _last_step_index(it: pd.DataFrame) -> Any:
    """The row of the furthest step of the writers' last runs (``last_runs``); where every step
    line names its epoch and the counter restarts each epoch (``Epoch: [2]  [30/1504]``), the
    furthest step of the last epoch."""
    rows = last_runs(it[it["iteration"].notna()])
    ep = rows["epoch"]
    if ep.notna().all() and ep.nunique() > 1:
        last = rows[ep == ep.max()]
        if last["iteration"].max() < rows["iteration"].max():
            return _last_of_max(last["iteration"])
    return _last_of_max(rows["iteration"])


def _last_of_max(steps: pd.Series) -> Any:
    """The index of the last row at the furthest step: one step read twice (a Lightning bar's
    "Epoch 6: 13988/13988" and the next epoch's "Epoch 7: 0/13988" count the same step) is
    where the later line stands."""
    top = steps.max()
    return steps.index[(steps == top).to_numpy()][-1]


def _same_line(pr: pd.DataFrame, row: pd.Series) -> pd.Series:
    """The progress rows read from the iteration row's own line: the same source and text. A
    physical line split where a rank prefix is glued to it holds two lines under one source
    (torchrun --tee: rank 0's unfinished tqdm bar "Train:  33%|###3 | 4/12 [00:00<00:00,
    10.33it/s]" then "[default0]: iteration 5/12 | …", traindoc's drill_nccl_watchdog): the bar
    there is an earlier step, not the iteration line read twice."""
    same = pr["source"] == row["source"]
    return same & (pr["line"].astype("string").str.strip() == str(row["line"]).strip())


def _bar_after(pr: pd.DataFrame, row: pd.Series, total: Any) -> pd.DataFrame:
    """The same loop's bar printed after the last step line and further on: a bar the step
    reader could not take (cut before its closing bracket by the next message) with the
    same total and a greater step."""
    src = SOURCE_RE.match(str(row["source"] or ""))
    if src is None or total is None or pd.isna(total):
        return pr.iloc[0:0]
    where = pr["source"].astype(str).str.extract(SOURCE_RE)
    later = (where["file"] == src["file"]) & (pd.to_numeric(where["line"]) > int(src["line"]))
    return pr[later & (pr["total"] == total) & (pr["step"] > row["iteration"])]


# A bar of an evaluation loop or of the data's set-up, not the training's (its description):
# Ultralytics' and YOLOv5's validation header ("Class     Images  Instances      Box(P
# R      mAP50  mAP50-95): 100% ━━━━━━━━━━━━ 55/55 23.6it/s 2.3s") and label scan ("train:
# Scanning /…/labels/train... 38 images, 0 backgrounds, 0 corrupt: 100% ━━━━━━━━━━━━ 38/38",
# both QiuLiXiang/YOLO-DA26), Lightning's "Validation DataLoader 0:", "Evaluating:",
# "Validating:". Their counts are no step of training: the furthest step is read from the
# other bars where there are any.
EVAL_BAR_RE = re.compile(r"\s*(?:Class\s+Images\b|Validation\b|Validating\b|Evaluating\b|"
                         r"Evaluation\b|\w+: Scanning\b)", re.IGNORECASE)

# A training bar that names its epoch in its description: Ultralytics' and YOLOv5's "      40/40
# 2.25G     0.8215      0.516 …" (epoch/epochs, GPU memory, losses: X-7D1C11010/YOLO_DA26
# finetune_target_domain.log), "Epoch 3/10" (the common tqdm desc=f"Epoch {e}/{n}"); not one
# whose description says it evaluates ("Epoch 3/10 [Val]")
EPOCH_BAR_RE = re.compile(r"\s*(?:epoch\s*+:?\s*)?\d+/\d+(?:\s|:|$)", re.IGNORECASE)
EVAL_WORD_RE = re.compile(r"\b(?:val|valid|validation|validating|eval|evaluation|evaluating|"
                          r"test|testing)\b", re.IGNORECASE)


def last_progress(incident: Incident) -> Progress:
    """The furthest step in tqdm bars or iteration lines (iteration lines win when both; lines
    counted by epoch only where nothing counts steps, ``epoch_counted``; HF Trainer's stepless
    dicts at the step their epoch says where the log gives the run's length,
    ``place_by_epoch``: their count is the step only for logging_steps=1). Computed once an
    incident (``Incident.once``): four classes and triage ask for it."""
    return incident.once("last_progress", _last_progress)


def _last_progress(incident: Incident) -> Progress:
    """``last_progress`` computed."""
    it = epoch_counted(place_by_epoch(with_source(incident.iterations), incident.progress,
                                      incident.tables.get("host_timings")), incident.progress)
    it = without_mllog_counter(fixed_batch_epochs(it))
    if len(it) and it["iteration"].notna().any() and not _counted_beside_a_bar(incident):
        row = it.loc[_last_step_index(it)]
        step = int(row["iteration"])
        at_step = it[it["iteration"] == step]
        # the step's time from any line at that step (DeepSpeed's timer line, a rate alone,
        # comes before Megatron's train line with its time)
        times = at_step["elapsed_s"].dropna()
        spi = (row["elapsed_s"] if pd.notna(row["elapsed_s"])
               else times.iloc[-1] if len(times) else None)
        # any line at that step may state the run's length (Megatron's train line does, its
        # validation line at the same iteration does not)
        totals = at_step["total_iterations"].dropna()
        total = totals.max() if len(totals) else None
        pr = incident.progress
        bar = pr[_same_line(pr, row) & pr["step"].notna()] if len(pr) else pr
        length = bar.iloc[-1]["total"] if len(bar) and pd.notna(bar.iloc[-1]["total"]) else total
        after = _bar_after(pr, row, length) if len(pr) else pr
        if len(after):
            bar = after
        elif len(bar) and pd.isna(row["epoch"]) and int(bar.iloc[-1]["step"]) < step - 1:
            # the step a key of the bar's postfix names, ahead of the bar's count (fairseq's
            # "epoch 002:  10%|█ | 156/1563 […, num_updates=1719, …]"): the run's optimizer
            # steps counted on where the bar counts one epoch's batches: the step as its key
            # says, the bar's total no length of the run. (A step counted from the bar itself
            # names its epoch; NeMo's postfix "global_step=5.000" beside its bar's 7/15 lags
            # the bar by the steps since it was last logged: the bar as printed.)
            bar = bar.iloc[0:0]
        if len(bar):  # a progress bar (Lightning, NeMo) also read as an iteration: as printed
            b = bar.iloc[-1]
            step = int(b["step"])
            total = b["total"] if pd.notna(b["total"]) else total
        return Progress(step, None if total is None else int(total),
                        None if spi is None else float(spi), row["source"], row["line"],
                        "iteration")
    pr = incident.progress
    if len(pr) and pr["step"].notna().any():
        running = _bar_of_the_dicts(incident) if len(incident.iterations) else None
        if running is not None:
            rate = running["rate"] if pd.notna(running["rate"]) else None
            return Progress(int(running["step"]), int(running["total"]),
                            None if not rate else 1.0 / float(rate), running["source"],
                            running["line"], "tqdm")
        # The longest-running bar is the training loop; the furthest step of each writer's last
        # run of it is the last progress: a bar that starts again every epoch (Ultralytics'
        # "2/100 … 100/222" after epoch 1's "222/222", Keras's "120/500 [==>…] - ETA: 45s" after
        # "500/500 [====] - 60s") stopped in the epoch it last counted (``last_runs``).
        # Bars without a total (an iterable without len(): ``240it [05:55, 1.47s/it]``) restart
        # each epoch under a new description: the last bar printed is the one that stopped.
        pr = pr.dropna(subset=["step"])
        evaluating = pr["desc"].fillna("").astype(str).str.match(EVAL_BAR_RE)
        if not evaluating.all():
            pr = pr[~evaluating]
        # the data's set-up (datasets' "Map: … 50000/50000 [… examples/s]") counts no step,
        # however long its bar: where other bars ran, they are the training's; where none did,
        # the run stopped before its first step (a rank out of memory while DeepSpeed set up
        # after "Generating train split: 36718/36718", gnosia93/training-on-eks)
        pr = pr[~setup_bars(pr)]
        if not len(pr):
            return _checkpoint_progress(incident)
        totals = pr.dropna(subset=["total"])
        main = pr
        desc = totals["desc"].fillna("").astype(str)
        phases = totals[desc.str.match(EPOCH_BAR_RE) & ~desc.str.contains(EVAL_WORD_RE)]
        if len(phases):
            # bars that name their epoch are the training loop's; a run of several phases
            # (a fine-tune after a pre-train, each its own epochs and batches per epoch) is in
            # the phase of the last one printed, however few its batches
            main = pr[pr["total"] == phases["total"].iloc[-1]]
        elif len(totals):
            biggest = totals["total"].max()
            main = pr[pr["total"] == biggest]
        elif pr["desc"].notna().any():
            main = pr[pr["desc"] == pr["desc"].iloc[-1]] if pd.notna(pr["desc"].iloc[-1]) else pr
        if len(main) > 1:
            main = last_runs(main.rename(columns={"step": "iteration"})).rename(
                columns={"iteration": "step"})
        row = main.loc[main["step"].idxmax()]
        rate = row["rate"] if pd.notna(row["rate"]) else None
        total = row["total"] if pd.notna(row["total"]) else None
        return Progress(int(row["step"]), None if total is None else int(total),
                        None if not rate else 1.0 / float(rate), row["source"], row["line"],
                        "tqdm")
    return _checkpoint_progress(incident)


# HF Trainer's log dicts carry no step ("{'loss': 0.45, …, 'epoch': 1.22}"): the parser counts
# them (``hf_dict``: ``linefacts.HF_STEPLESS_DICT_RE``); the step is the trainer's tqdm bar
# printed beside them ("366/903 [5:15:39<…]")
PLAN_PREFIX = "plan:"  # host_timings rows of a trainer's header (``parse.benchmarks.parse_run_plan``)


def _counted_beside_a_bar(incident: Incident) -> bool:
    """Whether every iteration row is a counted HF dict (no step of its own) while a progress
    bar with a total was printed in the same files: the bar holds the steps."""
    it, pr = with_source(incident.iterations), incident.progress
    if not len(pr) or not pr["total"].notna().any():
        return False
    dicts = it.loc[it["iteration"].notna(), "hf_dict"]
    if not len(dicts) or not dicts.fillna(False).all():
        return False
    files = {str(s).rsplit(":", 1)[0] for s in it["source"].dropna()}
    return any(str(s).rsplit(":", 1)[0] in files for s in pr.loc[pr["total"].notna(), "source"])


def _checkpoint_progress(incident: Incident) -> Progress:
    """Where no step line or bar counts steps: the step the last checkpoint names (saved,
    being saved or loaded: the run had reached it), else none. DeepSpeed's "[Torch] Checkpoint
    global_step5000 is ready now!" just before rank 6's watchdog timeout (OneBit#8), a
    Trainer's "Saving model checkpoint to out/checkpoint-1000" after a loop that logs no step."""
    ck = with_source(incident.checkpoints)
    ck = ck[ck["iteration"].notna()] if "iteration" in ck else ck.iloc[0:0]
    if not len(ck):
        return Progress(None, None, None, None, None, "none")
    row = ck.loc[ck["iteration"].astype("int64").idxmax()]
    return Progress(int(row["iteration"]), None, None, row["source"], row["line"], "checkpoint")


def _bar_of_the_dicts(incident: Incident) -> pd.Series | None:
    """The training bar's last row where HF's stepless loss dicts are printed beside bars
    (``_counted_beside_a_bar``): the bar of the largest total among those still running at the
    last training dict, as last printed. A bar that had finished before it is over (a predict
    loop's 950/950, then the next launch's training); one that starts after it is no training
    bar either (the evaluation the dict's step set off, its 2500/5000 longer than the training's
    1000 steps). None when every bar had finished by then (the longest-running bar is the
    training's)."""
    if not _counted_beside_a_bar(incident):
        return None
    it = with_source(incident.iterations)
    dicts = it[it["iteration"].notna() & it["event"].isna()]
    where = [split_source(s) for s in dicts["source"]]
    last = max((w for w in where if w is not None), default=None)
    if last is None:
        return None
    pr = incident.progress.dropna(subset=["step", "total"])
    at = [split_source(s) for s in pr["source"]]
    same = [w is not None and w[0] == last[0] for w in at]
    pr = pr[same]
    lines = pd.Series([w[1] for w, s in zip(at, same, strict=True) if s], index=pr.index)
    before = pr[lines <= last[1]]
    if not len(before):
        return None
    # per bar (its total), whether its last row up to the dict had reached the total
    ends = before.groupby("total")["step"].last()
    running = ends[ends < ends.index.to_series()]
    if not len(running):
        return None
    rows = pr[pr["total"] == running.index.max()]
    return rows.iloc[-1]


def plan_values(host_timings: pd.DataFrame, key: str) -> pd.Series:
    """The values of a trainer's header rows ``plan:<key>`` in ``host_timings``, in order."""
    if not len(host_timings):
        return pd.Series(dtype="float64")
    rows = host_timings["metric"].astype("string") == f"{PLAN_PREFIX}{key}"
    return host_timings.loc[rows.fillna(False), "value"].dropna()


def _planned(plan: pd.DataFrame) -> tuple[float, float] | None:
    """(steps, epochs) a trainer's header states for one file (``plan:total_steps`` and
    ``plan:epochs`` rows of ``host_timings``, its last of each), or None: only where the steps
    divide by the epochs (a run set by epochs plans epochs x steps per epoch; with ``max_steps``
    HF prints the epochs rounded up, or sys.maxsize for a stream, and the quotient is no
    epoch's length)."""
    got = {}
    for key in ("total_steps", "epochs"):
        v = plan_values(plan, key)
        if len(v):
            got[key] = float(v.iloc[-1])
    steps, epochs = got.get("total_steps"), got.get("epochs")
    if not steps or not epochs or epochs > steps or steps % epochs:
        return None
    return steps, epochs


def _run_length(rows: pd.DataFrame, bars: pd.DataFrame,
                plan: pd.DataFrame | None = None) -> tuple[float, float] | None:
    """(steps, epochs) of the run one file's stepless HF dicts belong to: the steps are its
    longest progress bar's total (HF's training bar has no description; "Tokenizing train
    dataset" bars count examples), else the end-of-run summary's runtime x steps per second;
    the epochs are the summary's last ``epoch``, else the whole epochs the dicts reach (at
    least the share of the bar the last dict's epoch stands for: dicts buffered behind the
    bar come late, never early). With neither bar nor summary, the steps and epochs the
    trainer's start-up header states (``_planned``, from ``plan``: the file's ``plan:`` rows)."""
    summary = rows[rows["event"] == "train_summary"]
    steps = None
    bar = bars[bars["total"].notna() & bars["step"].notna()]
    if "desc" in bar:
        bar = bar[bar["desc"].isna()]
    if len(bar):
        steps = float(bar["total"].max())
    elif len(summary):
        # (its runtime x steps per second: ``linefacts.HF_SUMMARY_STEPS_RE``)
        got, err = summary["summary_steps"].iloc[-1], summary["summary_steps_err"].iloc[-1]
        steps = None if pd.isna(got) else _counted_steps(
            float(got), None if pd.isna(err) else float(err),
            int((rows["event"].isna() & rows["epoch"].notna()).sum()))
    if not steps:
        return _planned(plan) if plan is not None and len(plan) else None
    ends = summary["epoch"].dropna()
    if len(ends) and float(ends.iloc[-1]) > 0:
        return steps, float(ends.iloc[-1])
    last = float(rows.loc[rows["event"].isna(), "epoch"].max())
    epochs = float(np.ceil(last - 1e-9))
    if len(bar):
        reached = float(bar.loc[bar["total"] == bar["total"].max(), "step"].max())
        if reached > 0:
            epochs = max(epochs, float(np.ceil(steps * last / reached - 0.05)))
    return (steps, epochs) if epochs > 0 else None


def _counted_steps(steps: float, err: float | None, dicts: int) -> float:
    """The summary's steps (runtime x steps per second), or the training dicts' count where
    that is within the product's rounding (``err``): 11174.986 s at 0.081 steps/s is 900 to
    911 steps, and 900 dicts at one a step say which (LLaVA-Med's LoRA run, 'epoch' 10.0 on
    its last dict)."""
    if err is None or not dicts:
        return steps
    return float(dicts) if abs(dicts - steps) <= err else steps


def _decimals(x: float) -> int:
    """The decimals a printed float shows (0.0179 -> 4, 2.1 -> 1), at most 6."""
    text = f"{x:.6f}".rstrip("0")
    return len(text.partition(".")[2])


# logging intervals people set (``logging_steps``), largest first: where the epochs' rounding
# allows several intervals, the one among them that is a multiple of the largest of these
ROUND_INTERVALS = (100, 50, 25, 10, 5)
# ... and only where the rounding leaves the interval within this share of itself (the dicts'
# epochs tell it; a bar that counts something else than the dicts' steps leaves it wide)
ROUND_SPREAD = 0.05


def _interval(ep: np.ndarray, per_epoch: float) -> int | None:
    """The logging interval in steps that the dicts' epochs ``ep`` show (None: the rounding
    cannot tell it). The epoch is printed rounded (HF: to 2 decimals, later 4 significant
    digits), so the interval from the first and last dicts is known within
    ``unit x per_epoch / intervals``: to the step where that is under half a step; else the
    one round interval (``ROUND_INTERVALS``) the rounding allows, where it allows exactly one
    of the largest such kind (simple-trl's three dicts at 'epoch': 0.28, 0.57, 0.85 of 175
    steps: 49 to 50.75, so 50); two (two dicts at 'epoch': 0.01, 0.02 of 1233 steps: 10 and
    20, or 12 and 24) or none, and the placement would be a guess."""
    n = len(ep) - 1
    unit = 10.0 ** -max(_decimals(e) for e in ep)
    est = (ep[-1] - ep[0]) * per_epoch / n
    err = unit * per_epoch / n
    if err < 0.5:
        return max(1, round(est))
    lo, hi = math.ceil(est - err), math.floor(est + err)
    if lo < 1 or err > ROUND_SPREAD * est:
        return None
    for base in ROUND_INTERVALS:
        fits = range(-(-lo // base) * base, hi + 1, base)
        if len(fits) > 1:
            return None
        if len(fits) == 1:
            every = fits[0]
            # each dict one interval on from the one before, its epoch as printed within
            # a unit (the trainer's epoch counts batches, the bar optimizer steps)
            k0 = round(ep[0] * per_epoch / every)
            ok = all(abs(round((k0 + i) * every / per_epoch, _decimals(e)) - e) <= unit * 1.01
                     for i, e in enumerate(ep))
            return every if ok else None
    return None


def _counted_start(ep: np.ndarray, per_epoch: float, every: int) -> int | None:
    """The step of the first dict where the printed epochs ``ep`` are too coarse to place each
    dict on its own (one rounding unit spans more than the interval ``every``) and counting
    on works: the first step whose count ``start + i x every`` fits every printed epoch best,
    within one rounding unit of each (None otherwise: a dict missing in between, or an
    epoch that is not the step's).

    Why: snapping each dict to its own rounded epoch moves it by up to half a unit (0.005 of
    4361 steps: 22 steps) and the placement drifts; the transitions of the rounded epoch,
    taken together, pin the count's start to the step."""
    unit = 10.0 ** -max(_decimals(e) for e in ep)
    if unit * per_epoch <= every:
        return None
    offsets = ep * per_epoch - np.arange(len(ep)) * every
    lo, hi = offsets.min(), offsets.max()
    start = max(every, round((lo + hi) / 2))
    worst = np.abs((start + np.arange(len(ep)) * every) / per_epoch - ep).max()
    return start if worst <= unit * 1.01 else None


def _lines(df: pd.DataFrame) -> pd.Series:
    """Each row's line number in its file (-1: not given)."""
    got = df["source"].astype("string").str.extract(SOURCE_RE)["line"]
    return pd.to_numeric(got, errors="coerce").fillna(-1).astype(int)


# a job's two streams written to two files of one name (SLURM's "--output=train.log
# --error=train.err", "slurm-123.out"/"slurm-123.err", SGE's "job.o123"/"job.e123", a wrapper's
# "stdout.txt"/"stderr.txt"): the name without its stream's suffix
STREAM_SUFFIX_RE = re.compile(r"(?:\.(?:out|err|log|txt|o\d+|e\d+|stdout|stderr))+$|"
                              r"(?<![^/._-])std(?:out|err)(?=\.\w+$|$)")


def _stream_key(file: str) -> str:
    """A log file's path without its stream's suffix: the stdout and stderr of one job alike."""
    return STREAM_SUFFIX_RE.sub("", file)


def _sibling_bars(file: str, progress: pd.DataFrame | None,
                  bar_files: pd.Series | None) -> pd.DataFrame | None:
    """The progress bars of the one other file that is ``file``'s job's other stream
    (``_stream_key``), or None: tqdm writes its bar to stderr, HF Trainer's dicts go to stdout."""
    if progress is None or bar_files is None or not len(progress):
        return None
    key = _stream_key(file)
    others = [f for f in bar_files.dropna().unique() if f != file and _stream_key(f) == key]
    return progress[bar_files == others[0]] if len(others) == 1 else None


def _launches(rows: pd.DataFrame, files: pd.Series, progress: pd.DataFrame | None,
              bar_files: pd.Series | None, plans: pd.DataFrame | None,
              plan_files: pd.Series | None,
              ) -> list[tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]]:
    """HF's stepless dicts (``rows``) per file and per launch, each with its progress bars and
    ``plan:`` rows: a file whose training dicts' epoch goes back holds several launches (O-LoRA's
    loop of trainings, one per task, in one log: 'epoch': 0.9, then 0.06 of the next task).
    A launch after the first has the bars and plan rows printed after the launch before it
    logged its last dict, and of its bars only those still running at its own last dict (the
    launch before finishing its bar, a predict loop's 950/950, are not its training)."""
    empty = pd.DataFrame(columns=["step", "total"])
    out = []
    for file in files.dropna().unique():
        frows = rows[files == file]
        fbars = progress[bar_files == file] if bar_files is not None else empty
        fplan = plans[plan_files == file] if plans is not None else None
        train = frows[frows["event"].isna() & frows["epoch"].notna()]
        ep = train["epoch"].astype(float).to_numpy()
        back = np.flatnonzero(np.diff(ep) < 0) + 1 if len(ep) > 1 else np.array([], dtype=int)
        if not len(back):
            # one launch: its bars may be in the job's other stream (never several launches:
            # their bars are told apart by the lines of their own file)
            if not len(fbars) and (sib := _sibling_bars(file, progress, bar_files)) is not None:
                fbars = sib
            out.append((frows, fbars, fplan))
            continue
        lines, tlines = _lines(frows), _lines(train).to_numpy()
        starts = [int(tlines[0])] + [int(tlines[b]) for b in back]
        ends = [int(tlines[b - 1]) for b in back] + [int(tlines[-1])]
        for k, (first, last) in enumerate(zip(starts, ends, strict=True)):
            upto = starts[k + 1] if k + 1 < len(starts) else None
            seg = frows[(lines >= (first if k else -1))
                        & ((lines < upto) if upto is not None else True)]
            after = ends[k - 1] if k else -1
            bars = fbars
            if len(fbars):
                bl = _lines(fbars)
                bars = fbars[(bl > after) & (bl <= last)]
                running = bars.groupby("total")["step"].last()
                running = running[running < running.index.to_series()]
                if len(running):
                    bars = bars[bars["total"].isin(running.index)]
            plan = None
            if fplan is not None and len(fplan):
                pl = _lines(fplan)
                plan = fplan[(pl > after) & (pl <= last)]
            out.append((seg, bars, plan))
    return out


def place_by_epoch(iterations: pd.DataFrame, progress: pd.DataFrame | None = None,
                   host_timings: pd.DataFrame | None = None) -> pd.DataFrame:
    """The iterations table with HF Trainer's stepless log dicts ("{'loss': 0.45, …,
    'epoch': 1.22}", counted 1, 2, 3 by the parser) at their step: ``epoch`` x the run's
    steps per epoch (``_run_length``; ``host_timings`` gives the ``plan:`` rows of the
    trainer's header), snapped to the logging interval the dicts' epochs show; eval dicts
    follow the training dict they were counted after. A file whose epochs go back holds
    several launches, each placed by its own run (``_launches``). Files whose run length the
    log does not give keep the count.

    Why the epoch: the trainer writes it as ``step / steps_per_epoch``, so it is the one
    value in the dict that carries the step; the count is right only for logging_steps=1."""
    it = with_source(iterations)
    if not len(it) or "epoch" not in it or not it["epoch"].notna().any():
        return it
    stepless = it["iteration"].notna() & it["hf_dict"].fillna(False).astype(bool)
    if not stepless.any():
        return it
    files = it["source"].astype("string").str.extract(SOURCE_RE)["file"]
    bar_files = (progress["source"].astype("string").str.extract(SOURCE_RE)["file"]
                 if progress is not None and len(progress) else None)
    plans = (host_timings[host_timings["metric"].astype("string").str.startswith(
        PLAN_PREFIX, na=False)] if host_timings is not None and len(host_timings) else None)
    plan_files = (plans["source"].astype("string").str.extract(SOURCE_RE)["file"]
                  if plans is not None else None)
    out, exact = _on_each_redraw(it, stepless, files, progress)
    for rows, bars, plan in _launches(it[stepless], files[stepless], progress, bar_files, plans,
                                      plan_files):
        if rows.index.isin(exact).all():
            continue
        train = rows[rows["event"].isna() & rows["epoch"].notna()]
        ep = train["epoch"].astype(float).to_numpy()
        if len(train) < 2 or (np.diff(ep) < 0).any():
            continue
        length = _run_length(rows, bars, plan)
        if length is None:
            continue
        per_epoch = length[0] / length[1]
        every = _interval(ep, per_epoch)
        if every is None:
            continue
        placed: dict[int, int] = {}
        prev = 0
        start = _counted_start(ep, per_epoch, every)
        for i, (old, e) in enumerate(zip(train["iteration"].astype(int), ep, strict=True)):
            if start is not None:
                # the epoch is coarser than the interval: each dict one interval after the
                # one before, from the first step that fits every printed epoch
                placed[old] = prev = start + i * every
                continue
            # epochs printed to two decimals can round two dicts onto one interval: the
            # later one then takes the step its epoch says unsnapped, or the next one
            step = max(1, round(e * per_epoch / every) * every)
            prev = step if step > prev else max(prev + 1, round(e * per_epoch))
            placed[old] = prev
        if prev > length[0] + every:
            continue  # the dicts do not fit the run the log states: keep the count
        new = rows["iteration"].map(lambda v, p=placed: p.get(int(v), pd.NA))
        if out is it:
            out = it.copy()
        out.loc[new.index[new.notna()], "iteration"] = new[new.notna()].astype("Int64")
    # dicts the epoch could not place (its run length or precision unknown): the bar's count
    # before each, where the bar is redrawn between them (``_after_bars``)
    still = stepless & (out["iteration"] == it["iteration"]).fillna(False)
    return _after_bars(out, still, progress)[0] if still.any() else out


def _on_each_redraw(it: pd.DataFrame, stepless: pd.Series, files: pd.Series,
                    progress: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.Index]:
    """The stepless dicts of the files where the training bar is redrawn before each training
    dict at counts one logging interval apart (``_after_bars``, every gap the same): each at
    that count, the eval dicts counted after one at its step; and the rows so placed. The bar
    says the step exactly where the epoch estimates it: HF's epoch divides by the batches of
    an epoch, its bar counts optimizer steps (a ChatGLM p-tuning log: 'epoch': 66.1 printed at
    14260/21500 of 100 epochs, 50 steps past 66.1 x 215). Dicts buffered behind the bars come
    in bursts with no redraw between them and are not placed so."""
    by_bar, on_bar = _after_bars(it, stepless, progress)
    if not on_bar.any():
        return it, pd.Index([])
    out, done = it, []
    for file in files[on_bar].dropna().unique():
        mine = stepless & (files == file)
        train = mine & on_bar
        steps = by_bar.loc[train, "iteration"].astype("int64").to_numpy()
        if len(steps) < 2 or len(set(np.diff(steps))) != 1 or not (np.diff(steps) > 0).all():
            continue
        placed = dict(zip(it.loc[train, "iteration"].astype(int), steps, strict=True))
        new = it.loc[mine, "iteration"].map(lambda v, p=placed: p.get(int(v), pd.NA))
        if new.isna().any():
            continue  # an eval dict before the first training dict: leave the file as counted
        if out is it:
            out = it.copy()
        out.loc[new.index, "iteration"] = new.astype("Int64")
        done.append(new.index)
    return out, (done[0].append(done[1:]) if done else pd.Index([]))


def _after_bars(it: pd.DataFrame, stepless: pd.Series,
                progress: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.Series]:
    """HF Trainer's stepless training dicts each printed after the bar's redraw at its step (a
    training bar's count after the dict before it, on lines of their own: LLaVA's
    " 24%|██▍ | 2566/10485 [3:15:22<…]", then "{'loss': 4.2653, …, 'epoch': 0.24}",
    haotian-liu/LLaVA#918): the last count before the dict is its step. Only in a file where
    every training dict has a bar count after the one before it, counts going up; the rows
    placed so, and which they are."""
    placed = pd.Series(False, index=it.index)
    if progress is None or not len(progress):
        return it, placed
    bars = _training_bars(progress)
    where_bar = list(map(split_source, bars["source"]))
    train = it[stepless & it["event"].isna()]
    out = it
    for file, rows in train.groupby(train["source"].map(lambda s: (split_source(s) or ("",))[0])):
        lines = [(w[1], int(c)) for w, c in zip(where_bar, bars["step"], strict=True)
                 if w is not None and w[0] == file]
        if not lines or not file:
            continue
        lines.sort()
        at = [bl for bl, _ in lines]
        steps: list[int | None] = []
        prev_line, last, ok = 0, None, True
        for src, text in zip(rows["source"], rows["line"].astype(str), strict=True):
            ln = split_source(src)[1]  # type: ignore[index]  # grouped by a parsed source
            own = bar_count(text[:text.find("{'")])  # its own line's bar (the parser's count)
            # the last bar before the dict: on an earlier line, or redrawn on the dict's own
            # (tqdm's "\r" redraws, then the dict, its "\n" ending the physical line)
            j = bisect_right(at, ln) - 1
            seen = own if own is not None else (lines[j][1] if j >= 0 and at[j] > prev_line
                                                else None)
            if seen is None and last is None:
                steps.append(None)  # before the first bar the excerpt shows
            elif seen is None or (last is not None and seen <= last):
                ok = False
                break
            else:
                steps.append(seen)
                last = seen
            prev_line = ln
        lead = steps.count(None)
        gaps = set(np.diff([x for x in steps if x is not None]))
        if not ok or len(steps) - lead < 2 or (lead and len(gaps) != 1):
            continue
        if lead:  # the dicts before the first bar: one logging interval apart
            every, first = gaps.pop(), steps[lead]
            steps[:lead] = [first - every * (lead - i) for i in range(lead)]  # type: ignore[operator]
            if steps[0] < 1:  # type: ignore[operator]
                continue
        if out is it:
            out = it.copy()
        out.loc[rows.index, "iteration"] = pd.array(steps, dtype="Int64")
        placed.loc[rows.index] = True
    return out, placed


def step_totals_by_rank(incident: Incident) -> dict[int, int]:
    """Per rank, the largest step total its progress bars announced (ranks that disagree on
    the size of their data split show different totals)."""
    pr = incident.progress.dropna(subset=["rank", "total"])
    if not len(pr):
        return {}
    return {int(r): int(t) for r, t in pr.groupby("rank")["total"].max().items()}


RUN_DIR_RE = re.compile(r"(?<![^/\\])([^/\\]+)[/\\]attempt_\d+[/\\]")


def split_source(source: object) -> tuple[str, int] | None:
    """A row's ``source`` ("file:line") as (file, line), or None."""
    m = SOURCE_RE.match(str(source)) if isinstance(source, str) else None
    return (m["file"], int(m["line"])) if m else None


# Progress bars of the set-up, not of the training's steps (their description, lower case, starts
# so): transformers' "Loading checkpoint shards: 100%| 2/2", huggingface_hub's "Downloading
# shards" / "Downloading (…)of-00002.safetensors", "Loading weights", "Fetching 4 files";
# datasets' "Resolving data files", "Generating train split", "Map (num_proc=8)", "Filter",
# "Saving the dataset", the scripts' "Running tokenizer on dataset", TRL's "Tokenizing train
# dataset".
SETUP_BARS = ("loading", "downloading", "fetching", "resolving data", "generating", "map",
              "filter", "saving the dataset", "running tokenizer", "tokeniz")
# ... and bars that count data, not steps, by their rate's unit: datasets' "Map: 100%|██████████|
# 50000/50000 [00:05<00:00, 9000.00 examples/s]" (older: "ex/s", batched "ba/s"), a download's
# "B/s", "MB/s" (tqdm's unit_scale), "files/s"
SETUP_UNIT_RE = re.compile(r"[\d?]\s*(?:examples|ex|ba|files?|[kMGT]?i?B)/s\b")


# a step line or bar that shows its own loss (or grad norm) as NaN/inf: ``NAN_TEXT_RE`` (an
# iterations row's ``nan_text``); a NaN warning that stops the run: ``FATAL_NAN_RE`` (its
# ``fatal_nan``); both in ``linefacts``


def setup_bars(progress: pd.DataFrame) -> pd.Series:
    """Which progress rows are bars of the set-up (``SETUP_BARS``, ``SETUP_UNIT_RE``)."""
    desc = progress["desc"].fillna("").astype(str).str.strip().str.lower()
    return (desc.str.startswith(SETUP_BARS)
            | progress["line"].fillna("").astype(str).str.contains(SETUP_UNIT_RE))


def _training_bars(progress: pd.DataFrame) -> pd.DataFrame:
    """The numbered progress rows whose bar may count training steps (set-up bars out)."""
    pr = progress[progress["step"].notna()]
    if "desc" not in pr or not len(pr):
        return pr
    return pr[~setup_bars(pr)]


# tensorboardX's check on a scalar it is asked to log (x2num.check_nan): one warning per NaN/inf
# scalar, so several in a row with no step between are one logging point's
LOGGED_NAN_TEXT = "NaN or Inf found in input tensor"
# a step line's loss or grad norm printed as NaN/inf after a key and a space (Megatron's "lm loss
# NAN |", "grad norm inf |"): the step line shows it
STEP_NAN_RE = re.compile(r"(?:loss|grad[ _-]?norm)['\"]?\s*+[:=]?\s*+['\"]?[-+]?(?:nan|inf)\b",
                         re.IGNORECASE)


def place_unnumbered_skips(incident: Incident) -> pd.DataFrame:
    """The ``iterations`` table with a number for each skipped step (fp16 overflow) or NaN/inf
    warning (``Loss is nan, stopping training``) whose line names none: the step after the last one logged before it in the same file (a progress bar's
    count or an iteration line), one more for each overflow in between; with none before it,
    the steps up to the first one logged after it, one each (k overflows before step N are
    N-k+1 … N). Overflows with neither stay unnumbered. An overflow note right after a numbered
    overflow line ("Grad overflow on iteration: 38", then "[deepspeed] fp16 dynamic loss scale
    overflow! Skipping step"; DeepSpeed's fused optimizer: "Overflow detected. Skipping step")
    is that same overflow, on its step.

    Why those neighbours: the overflow is found inside an optimizer step, before the line that
    reports the step is written, so with a step line every iteration (Megatron+DeepSpeed:
    "OVERFLOW! Rank 0 Skipping step" then "iteration 17062/…") the step after the last one
    logged is the one whose line follows. Where the writer logs every N steps the overflow's
    step is only known to lie in the interval: each overflow is one skipped step, counted on
    from the interval's first step, or back from its last where nothing before it was logged
    (DeepSpeed's start-of-run loss-scale calibration: ten overflows, then "step=10,
    skipped=10"; all ten on step 10 would count one). A NaN warning is found the same way,
    when the step's loss is computed and before its line (if any) is written; overflows and
    NaN warnings are counted apart, since one step often logs both. HF Trainer's stepless
    dicts are first placed by their epoch (``place_by_epoch``). A set-up bar (``SETUP_BARS``:
    "Loading checkpoint shards 2/2") counts no step: its 2 would make the first overflow step 3.
    A training loop's stated start (``plan:start_step`` rows of ``host_timings``: torchtitan's
    "Training starts at step 1", DeepSpeed-Chat's "Beginning of Epoch 1/16") is logged before
    its first step: the overflows after it are that step and the ones after it, one each. A
    writer that logs no line for a skipped step (``_skips_unlogged``) has its first logged
    step after the overflows before it: k of them before step N are N-k … N-1."""
    it = place_by_epoch(with_source(incident.iterations), incident.progress,
                        incident.tables.get("host_timings"))
    skip = pd.to_numeric(it["skipped"], errors="coerce").fillna(0) > 0
    nan = pd.to_numeric(it["nan"], errors="coerce").fillna(0) > 0
    need = it["iteration"].isna() & (skip | nan)
    if not need.any():
        return it
    # (line, step, a numbered overflow, the step's line shows a NaN loss)
    marks: dict[str, list[tuple[int, int, bool, bool]]] = {}
    pr = incident.progress
    # a numbered overflow is an event line ("Grad overflow on iteration: 38"), not a step line
    # that counts skips (DeepSpeed's "step=20, skipped=12, lr=[…]": the overflow notes after
    # it are later steps)
    numbered_skip = it["iteration"].notna() & skip & it["loss"].isna() & it["lr"].isna()
    for df, col, flags in ((it[it["iteration"].notna()], "iteration", numbered_skip),
                           (_training_bars(pr), "step", None)):
        shown = (df["nan_text"].fillna(False).astype(bool) if "nan_text" in df
                 else df["line"].fillna("").astype(str).str.contains(NAN_TEXT_RE)
                 if "line" in df else pd.Series(False, index=df.index))
        if "nan" in df:  # the step's own row is NaN (its parser said so)
            shown = shown | (pd.to_numeric(df["nan"], errors="coerce").fillna(0) > 0)
        if "line" in df:  # Megatron's "lm loss NAN |": a key, a space, the value
            shown = shown | df["line"].fillna("").astype(str).str.contains(STEP_NAN_RE)
        for j, src, v in zip(df.index, df["source"], df[col], strict=True):
            where = split_source(src)
            if where:
                marks.setdefault(where[0], []).append(
                    (where[1], int(v), bool(flags is not None and flags.at[j]),
                     bool(shown.at[j])))
    # a training loop's start ("Training starts at step 1", DeepSpeed-Chat's "Beginning of
    # Epoch 1/16"): the step before the one it names was the last done
    ht = incident.tables.get("host_timings")
    if ht is not None and len(ht):
        starts = ht[(ht["metric"].astype("string") == f"{PLAN_PREFIX}start_step").fillna(False)
                    & ht["value"].notna()]
        for src, v in zip(starts["source"], starts["value"], strict=True):
            where = split_source(src)
            if where and v >= 1:
                marks.setdefault(where[0], []).append((where[1], int(v) - 1, False, False))
    for v in marks.values():
        v.sort()
    it = it.copy()
    run: dict[tuple[Any, ...], int] = {}
    scale_said: dict[tuple[Any, ...], float] = {}  # per run, the scale its last overflow fell to
    # per file and kind: the notes before its first logged step
    ahead: dict[tuple[str, bool], list[int]] = {}
    for i in it.index[need]:
        where = split_source(it.at[i, "source"])
        if where is None or where[0] not in marks:
            continue
        kind = bool(skip.at[i])  # an overflow and a NaN warning of one step are one step
        ms = marks[where[0]]
        before = [m for m in ms if m[0] <= where[1]]
        if before:
            # each writer counts its own (two ranks' overflow notes in one file are one step)
            rank = it.at[i, "rank"]
            key = (where[0], before[-1][0], kind, None if pd.isna(rank) else int(rank))
            scale = as_float(it.at[i, "loss_scale"]) if kind else None
            halving = kind and _states_new_scale(str(it.at[i, "line"]))
            again = halving and scale is not None and scale_said.get(key) == scale
            if scale is not None:
                scale_said[key] = scale
            if again:
                # apex's scaler halves on every overflow step: a second note falling to the
                # same scale is the same step (MEmoBert's two optimizers, "loss scaler 0
                # reducing loss scale to 4096.0" twice on each rank)
                pass
            elif kind and before[-1][2] and key not in run:
                # the note that follows a numbered overflow is that overflow's own ("Grad
                # overflow on iteration: 38" then "fp16 dynamic loss scale overflow! Skipping
                # step"): the same step, not the next one
                run[key] = 0
            elif not kind and before[-1][3]:
                # a NaN warning after a step line or bar that already shows that step's loss
                # as NaN is that NaN told again, by the line's own rank or by the other ranks
                # (six ranks' "Warning: loss is NaN, skipping this step" after each
                # "…| 1299/82400 [… loss=nan]"): that step, not one more per copy
                run[key] = 0
            elif not kind and key in run and (_said(it.at[i, "fatal_nan"])
                                              or LOGGED_NAN_TEXT in str(it.at[i, "line"])):
                pass  # the check that stopped the run, told again, or a logger's check on each
                # scalar it is given at one logging point: the same step
            else:
                run[key] = run.get(key, 0) + 1
            it.at[i, "iteration"] = before[-1][1] + run[key]
        else:
            ahead.setdefault((where[0], kind), []).append(i)
    for (file, kind), rows in ahead.items():
        first = marks[file][0][1]
        if kind and _skips_unlogged(marks[file], it, skip & need, file):
            first -= 1  # the step logged first is the one after the skipped ones
        back, after_logged, after_scale = 0, False, None
        for i in reversed(rows):
            logged = not kind and LOGGED_NAN_TEXT in str(it.at[i, "line"])
            scale = (as_float(it.at[i, "loss_scale"])
                     if kind and _states_new_scale(str(it.at[i, "line"])) else None)
            if (logged and after_logged) or (scale is not None and scale == after_scale):
                back -= 1  # one logging point's warnings (one per NaN scalar), or the ranks'
                # copies of one overflow falling to one scale: one step
            it.at[i, "iteration"] = max(first - back, 0)
            back, after_logged, after_scale = back + 1, logged, scale
    return it


# an overflow note that states the scale it falls to: apex's "Gradient overflow.  Skipping step,
# loss scaler 0 reducing loss scale to 4096.0", DeepSpeed's "[deepspeed] fp16 dynamic loss scale
# overflow! Skipping step. Attempted loss scale: 8192.0, reducing to 4096.0" (its ranks' copies
# without a prefix: wangshuai09/notebook's DeepSpeed CIFAR run on four Ascend NPUs)
NEW_SCALE_RE = re.compile(r"[Rr]educing (?:loss scale )?to \d")


def _states_new_scale(line: str) -> bool:
    """Whether an overflow note states the loss scale it falls to (``NEW_SCALE_RE``)."""
    return NEW_SCALE_RE.search(line) is not None


def _skips_unlogged(marks: list[tuple[int, int, bool, bool]], it: pd.DataFrame,
                    overflow: pd.Series, file: str) -> bool:
    """Whether a file's writer logs no line for a skipped step: between two logged steps
    a and b, the k overflows fill the gap exactly (b = a + k + 1), and nowhere does the step
    after k overflows come only k on (b = a + k, the skipped step's own line). NVIDIA's
    tacotron2/waveglow print "Train iter N" only ``if not is_overflow``: "Train iter 16",
    "OVERFLOW! Skipping step…", "Train iter 18" (tacotron2#54)."""
    lines = sorted(w[1] for src in it.loc[overflow, "source"]
                   if (w := split_source(src)) is not None and w[0] == file)
    gapped = False
    for (la, a, *_), (lb, b, *_) in itertools.pairwise(marks):
        k = sum(la < ln < lb for ln in lines)
        if not k:
            continue
        if b - a == k:
            return False
        gapped = gapped or b - a == k + 1
    return gapped


def _said(flag: Any) -> bool:
    """Whether a flag column's value (True or <NA>, ``linefacts``) says so."""
    return bool(pd.notna(flag) and flag)


def place_unnumbered_saves(incident: Incident) -> pd.DataFrame | None:
    """The ``checkpoints`` table with a number for each save whose line and path name none
    (Marian's "Saving model weights and runtime parameters to model.npz"): the step of the
    last numbered iterations row before it in the same file (a step line or an eval line).

    Why that neighbour: a trainer saves after the step (or the validation) it has just
    logged, before it logs the next (Marian: "[valid] Ep. 1 : Up. 50000 : …", then the save,
    then the next validation metric of update 50000). A save with no step logged before it
    in its file stays unnumbered.

    A save of the best model follows an evaluation: where the log states the evaluation
    schedule (``plan:eval_start``, ``plan:eval_every``: PaddleOCR's "an evaluation is run
    every 19 iterations") and one evaluation step lies between the step logged before the save
    and the one logged after it, that step (PaddleOCR logs every 10 steps and evaluates at 19:
    the best model saved there is no step-10 checkpoint).

    A line that says a save finished, with no number (torchtitan's "Finished saving the
    checkpoint … in 5.53 seconds" after "Saving a full checkpoint at last step, step 644."),
    finishes the save whose start its writer logged last, in the same file with no step
    logged in between: that save's step, not the step logged before it (640)."""
    ck = incident.tables.get("checkpoints")
    if ck is None or not len(ck) or not ck["iteration"].isna().any():
        return ck
    it = with_source(incident.iterations)
    marks: dict[str, list[tuple[int, int]]] = {}
    ends: dict[tuple[str, int], tuple[float, int]] = {}  # (file, line) -> the row's epoch, end
    has_end = "total_iterations" in it and "epoch" in it
    for k, (src, v) in enumerate(zip(it["source"], it["iteration"], strict=True)):
        where = split_source(src)
        if where and pd.notna(v):
            marks.setdefault(where[0], []).append((where[1], int(v)))
            if has_end and pd.notna(it["epoch"].iat[k]) and pd.notna(it["total_iterations"].iat[k]):
                ends[where] = (float(it["epoch"].iat[k]), int(it["total_iterations"].iat[k]))
    schedule = _eval_schedule(incident.tables.get("host_timings"))
    out = ck.copy()
    for i in ck.index[ck["iteration"].isna()]:
        where = split_source(ck.at[i, "source"])
        before = [m for m in marks.get(where[0], []) if m[0] < where[1]] if where else []
        started = _started_save(ck, i, where, before)
        if started is not None:
            out.at[i, "iteration"] = started
            continue
        if not before:
            continue
        last_line, step = max(before)
        step = _epoch_end(step, str(ck.at[i, "line"]), ends.get((where[0], last_line)),
                          [m[1] for m in before])
        after = [m for m in marks.get(where[0], []) if m[0] > where[1]] if where else []
        if schedule and after and BEST_SAVE_RE.search(str(ck.at[i, "line"])):
            start, every = schedule
            nxt = min(after)[1]
            first = start + max(1, (step - start) // every + 1) * every  # the first after step
            if step < first <= nxt < first + every:
                step = first
        out.at[i, "iteration"] = step
    return out


# a save that names the epoch it ends ("Saving checkpoint at 19 epochs": mmengine's
# CheckpointHook by epoch; "Saving model at epoch 19")
EPOCH_SAVE_RE = re.compile(r"\bat (?P<e>\d+) epochs?\b|\bepoch[ _:]*(?P<e2>\d+)\b", re.IGNORECASE)


def _epoch_end(step: int, line: str, end: tuple[float, int] | None, steps: list[int]) -> int:
    """The step a save after ``step`` stands for: the end of the epoch its line names, where
    the step line before it is of that epoch and states where the epoch ends (an epoch/batch
    counter's total, ``end``) within one logging interval after it (mmengine logs every 50
    batches of 2901: "[19][2900/2901]", then "Saving checkpoint at 19 epochs" is step 19 x
    2901, not 2900's); else ``step``."""
    m = EPOCH_SAVE_RE.search(line) if end is not None else None
    if m is None or end is None or float(m["e"] or m["e2"]) != end[0]:
        return step
    gap = min((b - a for a, b in zip(steps, steps[1:], strict=False) if b > a), default=0)
    return end[1] if step < end[1] <= step + gap else step


def _started_save(ck: pd.DataFrame, i: Any, where: tuple[str, int] | None,
                  steps_before: list[tuple[int, int]]) -> int | None:
    """The step of the save that row ``i`` (a "saved" line with no number) finishes: the
    numbered start its writer logged last before it in the same file, with no step line
    between them; else None."""
    if where is None or ck.at[i, "kind"] != "saved":
        return None
    rank = ck.at[i, "rank"] if "rank" in ck else pd.NA
    same = ck["source"].astype("string").str.startswith(f"{where[0]}:", na=False)
    if "rank" in ck:
        same &= ck["rank"].isna() if pd.isna(rank) else (ck["rank"] == rank).fillna(False)
    earlier = [(w[1], j) for j, src in ck.loc[same, "source"].items()
               if (w := split_source(src)) is not None and w[1] < where[1]]
    if not earlier:
        return None
    line, j = max(earlier)
    if ck.at[j, "kind"] != "save_start" or pd.isna(ck.at[j, "iteration"]):
        return None
    if any(line < m[0] for m in steps_before):
        return None  # a step was logged after the start: the finish may be another save's
    return int(ck.at[j, "iteration"])


# a save of the best model so far ("save best model is to …/best_accuracy", "Saving best model"):
# made right after an evaluation
BEST_SAVE_RE = re.compile(r"\bbest(?:\b|_)", re.IGNORECASE)


def _eval_schedule(host_timings: pd.DataFrame | None) -> tuple[int, int] | None:
    """(first step, period) of the evaluations a trainer's header states (``plan:eval_start``,
    ``plan:eval_every``; evaluations at first + k x period, k >= 1), or None: not stated, or
    stated two ways."""
    if host_timings is None or not len(host_timings):
        return None
    start = set(plan_values(host_timings, "eval_start").astype(int))
    every = set(plan_values(host_timings, "eval_every").astype(int))
    if len(start) != 1 or len(every) != 1 or min(every) < 1:
        return None
    return start.pop(), every.pop()


def is_host(name: object) -> bool:
    """Whether ``name`` is a machine read from the logs (not unknown, not an srun task id)."""
    return (name is not None and not pd.isna(name) and str(name) != ""
            and not str(name).startswith(SYNTHETIC_HOST_PREFIX))


def rank_hosts(incident: Incident) -> dict[int, str]:
    """The host each rank ran on (the most frequent), from any table row that names both
    (launcher-made ``srun-task-N`` names are not hosts). Computed once an incident (the
    gpu_crash, throughput and failure-event readings each ask); each caller gets its own
    dict."""
    return dict(incident.once("rank_hosts", _rank_hosts))


def _rank_hosts(incident: Incident) -> dict[int, str]:
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


def nccl_world_ranks(incident: Incident) -> dict[int, int]:
    """The rank of each pid whose NCCL communicator spans every process NCCL's lines show
    (``processes``: "comm 0x7f99613ad7b0 rank 1 nRanks 4", four pids in all, its NCCL
    errors' included): that communicator is the world's, and its rank the global one. A pid with two such ranks, or
    a log whose largest communicator leaves out some of its processes (a tensor-parallel
    group's), gives none (elastic-verl-spot: verl's workers under Ray print no rank of their
    own, only NCCL's)."""
    p = incident.tables.get("processes")
    if p is None or not len(p) or "comm_size" not in p:
        return {}
    e = incident.errors
    nccl = e.loc[e["kind"] == "nccl_error", "pid"].dropna() if len(e) else ()
    pids = len(set(p["pid"].dropna().astype(int)) | {int(x) for x in nccl})
    comms = p[p["pid"].notna() & p["comm_rank"].notna() & (p["comm_size"] == pids)]
    if pids < 2 or not len(comms):
        return {}
    ranks = comms.groupby("pid")["comm_rank"].unique()
    return {int(pid): int(r[0]) for pid, r in ranks.items() if len(r) == 1}


def nccl_world_size(incident: Incident) -> int | None:
    """The size of the largest communicator NCCL's init lines show ("comm 0x… rank 0 nranks 4
    cudaDev 0 …"): the default group's, the world (no subgroup is larger); None without
    them."""
    p = incident.tables.get("processes")
    if p is None or not len(p) or "comm_size" not in p:
        return None
    sizes = p["comm_size"].dropna()
    return int(sizes.max()) if len(sizes) and int(sizes.max()) > 1 else None


def nccl_processes(incident: Incident) -> int:
    """How many processes NCCL's ``host:pid:tid [dev]`` lines show (``processes``), one a
    machine and pid: the job's ranks where nothing else names them (BigScience's all-reduce
    benchmark prints "jean-zay-iam37:261379:261379 [0] NCCL INFO Bootstrap : …" once a
    process); 0 without such lines."""
    p = incident.tables.get("processes")
    if p is None or not len(p) or "pid" not in p:
        return 0
    known = p[p["pid"].notna()]
    return len({(str(h), int(pid)) for h, pid in zip(known["host"].fillna(""), known["pid"],
                                                      strict=True)})


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
    it = with_source(incident.iterations).dropna(subset=["total_iterations"])
    if "event" in it:  # (an epoch's total counts epochs: "[Train][Epoch 382/400][Avg]" beside
        it = it[(it["event"] != EPOCH_EVENT).fillna(True)]  # "[Iter: 400/1252]")
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
    for df in map(with_source, incident.tables.values()):
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
    parser understood (so a new format is never silently ignored). Computed once an incident
    (triage and each class's report read them); each call gets its own copies."""
    return [replace(f, evidence=list(f.evidence))
            for f in incident.once("input_findings", _input_findings)]


def _input_findings(incident: Incident) -> list[Finding]:
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


@dataclass(frozen=True)
class NodeLayout:
    """What a launcher said about the node layout (``layout:`` rows of ``host_timings``): each
    named host's node rank, the node rank of lines without a host, processes per node, nodes."""

    node_rank_of: dict[str, int]
    node_rank: int | None
    nproc_per_node: int | None
    nnodes: int | None


def node_layout(incident: Incident) -> NodeLayout:
    """The node layout the logs state; a value stated two different ways counts as not stated."""
    ht = incident.tables.get("host_timings")
    if ht is None or not len(ht):
        return NodeLayout({}, None, None, None)
    lay = ht[ht["metric"].astype("string").str.startswith("layout:", na=False)]

    def one(values: Iterable[Any]) -> int | None:
        vals = {int(v) for v in values if pd.notna(v)}
        return vals.pop() if len(vals) == 1 else None

    by_key = {k: g for k, g in lay.groupby(lay["metric"].astype(str).str[len("layout:"):])}
    nr = by_key.get("node_rank", lay.iloc[0:0])
    named = nr[nr["host"].notna()]
    node_rank_of: dict[str, int] = {}
    for h, g in named.groupby(named["host"].astype(str)):
        v = one(g["value"])
        if v is not None:
            node_rank_of[str(h)] = v
    return NodeLayout(
        node_rank_of, one(nr.loc[nr["host"].isna(), "value"]),
        one(by_key.get("nproc_per_node", lay.iloc[0:0])["value"]),
        one(by_key.get("nnodes", lay.iloc[0:0])["value"]))


def world_stated(incident: Incident) -> int | None:
    """The processes the job has in all, where the logs state it (a world size, or processes
    per node times nodes); None where they do not."""
    ht = incident.tables.get("host_timings")
    if ht is None or not len(ht):
        return None
    ws = ht.loc[ht["metric"].astype("string") == "layout:world_size", "value"].dropna()
    if len(ws) and ws.nunique() == 1:
        return int(ws.iloc[0])
    lay = node_layout(incident)
    if lay.nproc_per_node is not None and lay.nnodes is not None:
        return lay.nproc_per_node * lay.nnodes
    return None


def global_rank(local_rank: int | None, host: str | None, layout: NodeLayout,
                one_machine: bool = False) -> int | None:
    """A launcher's local rank (torchrun's ``failed (exitcode: N) local_rank: R``, DeepSpeed's
    ``--local_rank=R``) as a global rank: node rank × processes per node + R when the log states
    both for the record's node, R when it states one node. ``one_machine`` (the log names one
    machine at most) takes R as the rank only where the log states no layout at all: an
    assumption the caller must say it made. Else None: the record stays "local rank R on its
    host"."""
    if local_rank is None:
        return None
    if layout.nnodes == 1:
        return local_rank
    node = layout.node_rank_of.get(host) if host else None
    if node is None and not layout.node_rank_of:
        node = layout.node_rank  # lines without a host: the one node rank the log states
    if node is not None and layout.nproc_per_node is not None:
        return node * layout.nproc_per_node + local_rank \
            if local_rank < layout.nproc_per_node else None
    stated = layout.nnodes is not None or layout.node_rank is not None or bool(layout.node_rank_of)
    return local_rank if one_machine and not stated else None


def spawned_ranks(rows: pd.DataFrame, incident: Incident) -> pd.Series:
    """The ranks of ``rows``, each row without one given the rank of the spawned process whose
    traceback it lies in: after a launcher's "-- Process 1 terminated with the following
    error:" (``parse.errors.SPAWN_RAISED_RE``, an ``exits`` row) in the same file, before the
    next such header. The process index is a local rank: global by the node layout the log
    states, or the rank itself where the log names one machine at most (``global_rank``)."""
    ranks = rows["rank"].copy() if "rank" in rows else pd.Series(pd.NA, index=rows.index)
    ex = incident.exits
    if not len(rows) or not len(ex) or ranks.notna().all():
        return ranks
    heads = ex[ex["local_rank"].notna()
               & ex["line"].astype("string").str.contains(SPAWN_RAISED, regex=False, na=False)]
    heads = heads[heads["line"].map(lambda t: SPAWN_RAISED_RE.match(str(t)) is not None)]
    if not len(heads):
        return ranks
    by_file: dict[str, list[tuple[int, int, str | None]]] = {}
    for h in heads.itertuples(index=False):
        where = split_source(h.source)
        if where is not None:
            by_file.setdefault(where[0], []).append(
                (where[1], int(h.local_rank), as_str(h.host)))
    layout = node_layout(incident)
    one_machine = len([h for h in incident.hosts if is_host(h)]) <= 1
    for i, r in rows.iterrows():
        where = split_source(r["source"])
        if pd.notna(ranks[i]) or where is None or where[0] not in by_file:
            continue
        before = [h for h in by_file[where[0]] if h[0] < where[1]]
        if not before:
            continue
        _, local, host = max(before)
        rank = global_rank(local, host, layout)
        if rank is None:
            rank = global_rank(local, host, layout, one_machine)
        if rank is not None:
            ranks[i] = rank
    return ranks


# In a printed command, what the log cannot tell is a shell variable the engineer sets, never a
# placeholder to edit: the host they find (NODE) and the job's sbatch script (JOB_SCRIPT).
NODE_VAR = '"$NODE"'
JOB_SCRIPT_VAR = '"$JOB_SCRIPT"'


def job_script_arg(job_script: str | None) -> str:
    """The job script as a command's argument: shell-quoted when given, else ``"$JOB_SCRIPT"``
    (the command says to set it)."""
    return shlex.quote(job_script) if job_script else JOB_SCRIPT_VAR


def script_note(job_script: str | None) -> str:
    """The note a command that restarts the job carries when no job script was given."""
    return "" if job_script else "  # JOB_SCRIPT=your sbatch script (or pass -p job_script=…)"
