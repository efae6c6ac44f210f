"""``analyse``: everything the loss-spike runbook shows, before any prose — the series, the
spikes and grad-norm excursions, NaN and skipped iterations, loss-scale collapses, a learning-rate
jump, checkpoints and the rollback point (``LossSpikeAnalysis``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ...incident import Incident
from ..common import last_progress
from .detect import GRAD_NORM, LOSS, Detector, epoch_reset, epoch_running_mean, find_spikes
from .series import (
    checkpoint_iterations,
    gaps,
    loss_scale_collapses,
    lr_jump,
    nan_iterations,
    rollback_point,
    series,
    skipped_iterations,
    spike_rows,
)

# a loss of exactly 0 on this many logged steps or more, to the end of the log, after one of
# at least ZERO_AFTER_LOSS: a degenerate loss (``LossSpikeAnalysis.zero_loss_from``)
ZERO_RUN_MIN = 5
ZERO_AFTER_LOSS = 0.05


def zero_loss_start(series: pd.DataFrame) -> int | None:
    """The first step of a run of losses of exactly 0 that lasts to the end of the log
    (``ZERO_RUN_MIN`` logged steps or more, or fewer with a NaN/inf gradient norm on each) after
    a loss of ``ZERO_AFTER_LOSS`` or more: a
    loss that stopped measuring anything (every label masked, a broken half-precision path),
    not a model that learned everything. A loss that hovers about 0 (a policy gradient's
    surrogate) never reached that size before."""
    lf = series[series["loss"].notna()]
    loss = lf["loss"].to_numpy(dtype=float)
    k = len(loss)
    while k and loss[k - 1] == 0.0:
        k -= 1
    if k == 0 or k == len(loss):
        return None
    # a shorter run counts where its gradient norm is NaN/inf on every step: a loss of exactly
    # 0 with a non-finite gradient measured nothing (HF Trainer's "{'loss': 0.0, 'grad_norm':
    # nan, …}" after a half-precision overflow: LLaMA-Factory#4202, #5627)
    nan_grad = ("is_nan" in lf.columns and "grad_norm" in lf.columns
                and bool(lf["is_nan"].iloc[k:].all()) and not lf["grad_norm"].iloc[k:].notna().any())
    if len(loss) - k < ZERO_RUN_MIN and not nan_grad:
        return None
    if not (abs(loss[:k][np.isfinite(loss[:k])]) >= ZERO_AFTER_LOSS).any():
        return None
    return int(lf["iteration"].iloc[k])


@dataclass(frozen=True, eq=False)
class LossSpikeAnalysis:
    """The loss-spike diagnosis before its prose: tables, spikes and the rollback point."""

    incident: Incident  # for the findings about the input itself
    series: pd.DataFrame  # one row per iteration (``series``)
    loss_detector: Detector
    grad_detector: Detector
    checkpoint_interval: int | None
    loss_scale_halvings: int
    spikes: list[dict[str, Any]]  # loss spikes, in order (the facts' ``spikes``)
    grad_norm_spikes: list[dict[str, Any]]  # grad-norm excursions with no loss spike
    nan_iterations: list[int]  # all of them (the facts list them all)
    skipped_iterations: list[int]
    loss_scale_collapses: list[dict[str, Any]]
    checkpoints: list[int]  # iterations with a saved or loaded checkpoint
    lr_jump: dict[str, Any] | None  # a learning-rate step up as the head spike began
    first_bad: int | None  # the first iteration to undo: spike, NaN run or collapse
    rollback_iteration: int | None  # the checkpoint before ``first_bad``
    zero_loss_from: int | None = None  # a loss stuck at exactly 0 from here (``zero_loss_start``)
    skipping_from: int | None = None  # every step skipped from here to the end (``skipping_start``)

    @property
    def has_metrics(self) -> bool:
        """Whether the logs gave any loss, grad norm, NaN or skipped step to judge."""
        s = self.series
        return bool(len(s) and (s["loss"].notna().any() or s["grad_norm"].notna().any()
                                or s["is_nan"].any()
                                or (pd.to_numeric(s["skipped"], errors="coerce") > 0).any()))

    @property
    def first_iteration(self) -> int:
        """The first iteration in the series."""
        return int(self.series["iteration"].iloc[0])

    @property
    def last_iteration(self) -> int:
        """The last iteration that logged a loss or a grad norm (NaN counts) or its own step
        line (Megatron prints no grad norm for a skipped step: "iteration 3634/ 8000 | … |
        number of skipped iterations: 1 |"); a skipped step placed after it from an
        unnumbered overflow note (fairseq's "NOTE: overflow detected" after update 700,
        apex's "Gradient overflow.  Skipping step") is no logged iteration, nor is a NaN
        warning's (TF's "Model diverged with loss = NaN." after "loss = 1.63497, step =
        97601")."""
        s = self.series
        values = [c for c in ("lr", "consumed_samples", "consumed_tokens", "global_batch_size")
                  if c in s]
        own = ~s["placed"] if "placed" in s else True
        skipped = pd.to_numeric(s["skipped"], errors="coerce").fillna(0).gt(0)
        # an overflow line that numbers its own step logged that step, after the last step line
        # too (DeepSpeed's "Grad overflow on iteration: 93732" after "step=14000, …, lr=…")
        numbered = s.loc[skipped & own, "iteration"]

        def or_numbered(last: int) -> int:
            return max(last, int(numbered.max())) if len(numbered) else last

        logged = s["loss"].notna() | s["grad_norm"].notna() | (s["is_nan"] & own) | s[
            values].notna().any(axis=1)
        if logged.any():
            return or_numbered(int(s.loc[logged, "iteration"].iloc[-1]))
        # no value anywhere (yolact's "[  1]    1530 || B: … | T: 18.442 || timer: 0.321"):
        # the last step line, not an overflow placed after it (nor one numbered, unless last)
        placed = skipped
        if "placed" in s:  # a NaN warning placed after it is none either
            placed = placed | s["placed"].fillna(False).astype(bool)
        if not (~placed).any():
            # only events placed after a progress bar's count (MEmoBert: "34081/300000",
            # then apex's overflows): the bar's count is the last step the log shows
            step = last_progress(self.incident).step
            if step is not None and step < int(s["iteration"].min()):
                return int(step)
        rows = s[~placed] if (~placed).any() else s
        return or_numbered(int(rows["iteration"].iloc[-1]))

    @property
    def main_spike(self) -> dict[str, Any] | None:
        """The first spike that has not recovered (the one to roll back for), if any."""
        return next((sp for sp in self.spikes if sp["recovered_iteration"] is None), None)

    @property
    def head_spike(self) -> dict[str, Any] | None:
        """The spike the verdict is about: the unrecovered one, else the tallest."""
        return self.main_spike or (
            max(self.spikes, key=lambda sp: sp["peak_loss"] - sp["baseline_loss"])
            if self.spikes else None)

    @property
    def nan_at_end(self) -> bool:
        """Whether the loss/grad norm is still NaN on the last logged iteration."""
        return bool(len(self.nan_iterations)) and bool(self.series["is_nan"].iloc[-1])

    @property
    def end_iteration(self) -> int:
        """The last iteration in the series, an event placed after the last step line (a NaN
        warning's) included."""
        return int(self.series["iteration"].iloc[-1])

    @property
    def nan_run_start(self) -> int | None:
        """The first iteration of the NaN run that lasts to the end of the log, if any."""
        return first_of_last_run(self.series, self.series["is_nan"].to_numpy()) if (
            self.nan_at_end) else None

    def spike_gaps(self, spike: dict[str, Any]) -> list[tuple[int, int]]:
        """Iterations missing from the log from ``spike``'s first sign to its recovery (or
        the end of the log)."""
        return gaps(self.series, spike["data_window"]["iterations"][0],
                    spike["recovered_iteration"] or self.last_iteration)

    def recovery_doubts(self, spike: dict[str, Any]) -> list[str]:
        """Why ``spike``'s recovery is not fully seen (``recovery_doubts``)."""
        return recovery_doubts(self.series, spike)

    def spikes_table(self) -> pd.DataFrame:
        """The spikes as a table (one row per spike)."""
        return spikes_frame(self.spikes)

    def spike_rows(self, spike: dict[str, Any]) -> pd.DataFrame:
        """The iterations around ``spike`` (``spike_rows``)."""
        return spike_rows(self.series, spike)

    def collapses_table(self) -> pd.DataFrame:
        """The loss-scale collapses as a table (one row per collapse)."""
        return pd.DataFrame(self.loss_scale_collapses)


def analyse(incident: Incident, *, window: int = 50, k: float = 6.0,
            rel_threshold: float = 0.10, patience: int = 3,
            checkpoint_interval: int | None = None,
            loss_scale_halvings: int = 4) -> LossSpikeAnalysis:
    """Read the series and find its spikes, NaNs, skipped steps, loss-scale collapses and
    rollback point (the detector: see the package's doc).

    Args:
        window: logged points in the rolling baseline.
        k: robust standard deviations a peak must clear to be a spike.
        rel_threshold: the fraction of the baseline a peak must also clear.
        patience: consecutive points back near the baseline that end an excursion.
        checkpoint_interval: iterations between checkpoints: the rollback point when the logs
            have no checkpoint lines.
        loss_scale_halvings: a loss scale that only fell, by 2**this or more, is a collapse.
    """
    s = series(incident)
    det = replace(LOSS, window=window, k=k, rel=rel_threshold, patience=patience)
    gdet = replace(GRAD_NORM, window=window, k=k, patience=patience)
    a = LossSpikeAnalysis(incident, s, det, gdet, checkpoint_interval, loss_scale_halvings,
                          [], [], [], [], [], [], None, None, None)
    if not a.has_metrics:
        return a
    spikes, lonely = find_spikes(s, det, gdet)
    if spikes and epoch_running_mean(s):
        spikes = [sp for sp in spikes if not epoch_reset(s, sp)]
    a = replace(a, spikes=spikes, grad_norm_spikes=lonely, nan_iterations=nan_iterations(s),
                skipped_iterations=skipped_iterations(s),
                loss_scale_collapses=loss_scale_collapses(s, loss_scale_halvings),
                checkpoints=checkpoint_iterations(incident), zero_loss_from=zero_loss_start(s))
    a = replace(a, skipping_from=skipping_start(a.skipped_iterations, a.last_iteration))
    head, main = a.head_spike, a.main_spike
    jump = (lr_jump(s, head["data_window"]["iterations"][0], head["peak_iteration"])
            if head is not None else None)
    first_bad = None
    if main is not None:
        first_bad = main["data_window"]["iterations"][0]
        if jump:  # the update with the new LR already changed the weights
            first_bad = min(first_bad, jump["iteration"])
    elif a.nan_at_end:
        first_bad = a.nan_run_start
    elif a.loss_scale_collapses:
        first_bad = a.loss_scale_collapses[0]["start_iteration"]
    rollback = (rollback_point(first_bad, a.checkpoints, checkpoint_interval)
                if first_bad is not None else None)
    return replace(a, lr_jump=jump, first_bad=first_bad, rollback_iteration=rollback)


# skipped optimizer steps that are a loss problem: a run of this many consecutive ones (the loss
# scale halving step after step, or a trainer's guard rejecting one gradient after another)
# starting after the start-of-run loss-scale calibration, which ends well before this step, or
# running on past it from the start
SKIP_RUN = 3
CALIBRATION_STEPS = 50


def skipping_start(skipped: list[int], last: int | None) -> int | None:
    """The first step of a run of at least ``SKIP_RUN`` consecutive skipped steps that the log
    never got past (``last``: its last logged step) and that is no start-of-run calibration: it
    starts after ``CALIBRATION_STEPS``, or lasts longer than that (DeepSpeed's "step=250,
    skipped=250": every step since the first skipped, ourboros-alignment-team/RWKV-RM-Copilot);
    None: none. A run the training went on after is the loss scaler finding its level."""
    steps = sorted({int(x) for x in skipped})
    start = 0
    for i in range(1, len(steps) + 1):
        if i < len(steps) and steps[i] == steps[i - 1] + 1:
            continue
        run = steps[start:i]
        if (len(run) >= SKIP_RUN and (run[0] > CALIBRATION_STEPS or len(run) > CALIBRATION_STEPS)
                and (last is None or run[-1] >= last - 1)):
            return run[0]
        start = i
    return None


def first_of_last_run(s: pd.DataFrame, flags: Any) -> int:
    """The iteration where the run of true ``flags`` that ends the series begins."""
    k = len(flags) - 1
    while k > 0 and flags[k - 1]:
        k -= 1
    return int(s["iteration"].iloc[k])


def recovery_doubts(s: pd.DataFrame, spike: dict[str, Any]) -> list[str]:
    """Why a spike's recovery is not fully seen: the log ends before it was sustained, or
    iterations inside the spike are missing from the log."""
    out = []
    if not spike["recovery_confirmed"]:
        out.append("the log ends before the recovery was sustained")
    rec = spike["recovered_iteration"]
    gap = gaps(s, spike["start_iteration"], rec) if rec is not None else []
    if gap:
        out.append("iterations " + ", ".join(f"{a}–{b}" if a != b else f"{a}" for a, b in gap[:3])
                   + " are missing from the log")
    return out


def span_text(r: list[Any]) -> str:
    """'a–b' for a range whose both ends are known, else 'unknown'."""
    return f"{r[0]}–{r[1]}" if r[0] is not None and r[1] is not None else "unknown"


def spikes_frame(spikes: list[dict[str, Any]]) -> pd.DataFrame:
    """Spikes (the facts' dicts) as a table, one row per spike."""
    rows = []
    for sp in spikes:
        w = sp["data_window"]
        rows.append({
            "start": sp["start_iteration"], "peak": sp["peak_iteration"],
            "baseline loss": sp["baseline_loss"], "peak loss": sp["peak_loss"],
            "peak grad norm": sp["peak_grad_norm"],
            "grad norm from": sp["grad_norm_start_iteration"],
            "grad norm led": sp["grad_norm_leads"],
            "recovered at": sp["recovered_iteration"],
            "recovery (iterations)": sp["recovery_iterations"],
            "data iterations": span_text(w["iterations"]),
            "consumed samples [start, end)": span_text(w["samples"]),
        })
    return pd.DataFrame(rows)
