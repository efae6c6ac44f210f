"""The excursion detector (rolling robust baseline, onset, confirmation, recovery) and the
loss spikes it finds in a series, with the grad norm's lead and the data window behind each."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from .series import data_window, finite_float

MAD_TO_SIGMA = 1.4826
TALLER = 2.0  # an excursion that never came back but settled under the midpoint of its baseline
# and peak gives way to a rise this many times taller than its own: a new spike on its new level
STATS_CHUNK = 65536
TREND_MIN_POINTS = 5  # points in the recent half-window before the baseline follows it


@dataclass(frozen=True)
class Detector:
    """Thresholds of the excursion detector (``relative``: margins are fractions of the
    baseline; else absolute, as for log grad norms)."""

    window: int = 50  # preceding logged points in the rolling baseline
    min_history: int = 1  # points needed before a point can open an excursion
    k: float = 6.0  # confirm: peak above baseline + k·scale ...
    rel: float = 0.10  # ... and above baseline·(1 + rel)
    onset_k: float = 4.0  # open: above baseline + onset_k·scale ...
    onset_rel: float = 0.03  # ... and above baseline·(1 + onset_rel)
    recover_k: float = 3.0  # back within max(recover_k·scale, recover_rel·baseline) ...
    recover_rel: float = 0.05
    patience: int = 3  # ... for this many consecutive points: recovered
    recover_frac: float = 0.02  # ... or back down 98 % of the spike's height (a 1.5 → 2443 →
    # 2.3 spike is over at 2.3 even when the history is too short to know the noise)
    floor: float = 0.01  # scale floor (fraction of the baseline, or absolute)
    small_n: float = 4.0  # confirm margin ×(1 + small_n / history points)
    relative: bool = True


LOSS = Detector()
GRAD_NORM = Detector(rel=math.log(4.0), onset_rel=math.log(2.0), recover_rel=math.log(1.5),
                     floor=0.05, relative=False, recover_frac=0.0)


@dataclass(frozen=True)
class Excursion:
    """Indices into the detector's input of one excursion."""

    start: int
    peak: int
    end: int | None  # first point back within tolerance; None: not recovered
    baseline: float
    scale: float
    history: int
    confirmed: bool
    tentative: bool  # the log ended before ``patience`` points confirmed the recovery
    stop: int | None = None  # unrecovered, it gave way here to a taller excursion (``TALLER``)

    @property
    def over(self) -> int | None:
        """The first point no longer inside it (None: it lasts to the end of the series)."""
        return self.end if self.end is not None else self.stop


# -- the detector ----------------------------------------------------------------------------
def rolling_stats(y: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each point: median, 1.4826·MAD and count of the finite values among the ``window``
    points before it (NaN entries are left out). The MAD of one value is NaN, not 0: it says
    nothing of the spread (one step between two logged losses is no noise scale)."""
    n = len(y)
    med = np.full(n, np.nan)
    mad = np.full(n, np.nan)
    cnt = np.zeros(n, dtype=int)
    if n == 0 or window < 1:
        return med, mad, cnt
    pad = np.concatenate([np.full(window, np.nan), np.asarray(y, dtype=float)])
    wins = sliding_window_view(pad, window)[:n]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for a in range(0, n, STATS_CHUNK):
            w = wins[a : a + STATS_CHUNK]
            cnt[a : a + len(w)] = np.sum(~np.isnan(w), axis=1)
            m = np.nanmedian(w, axis=1)
            med[a : a + len(w)] = m
            mad[a : a + len(w)] = MAD_TO_SIGMA * np.nanmedian(np.abs(w - m[:, None]), axis=1)
    mad[cnt < 2] = np.nan
    return med, mad, cnt


def rolling_trend(y: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """For each point, from the ``window`` points before it: the median of the recent half
    (NaN with too few points), which on a falling curve lags a quarter window behind instead of
    half; and the noise scale from the steps, 1.4826·MAD(steps)/√2, which a steady fall does
    not inflate. (Carrying a median down the slope to the point would lag less, but overshoots
    at the knee of a fast early fall and turns the flattening into false spikes.)"""
    y = np.asarray(y, dtype=float)
    n = len(y)
    recent, _, cnt = rolling_stats(y, max(window // 2, 1))
    carried = np.where(cnt >= TREND_MIN_POINTS, recent, np.nan)
    d = np.full(n, np.nan)
    if n > 1:
        d[1:] = np.diff(y)  # d[j] = y[j] - y[j-1]: NaN next to a left-out point
    _, dmad, _ = rolling_stats(d, max(window - 1, 1))
    return carried, dmad / math.sqrt(2.0)


def _baseline(med: np.ndarray, carried: np.ndarray) -> np.ndarray:
    """The rolling median, following a falling curve with the recent half's median (never up:
    a slow rise stays visible)."""
    with np.errstate(invalid="ignore"):
        return np.where(carried < med, carried, med)


def _scan(y: np.ndarray, det: Detector, med: np.ndarray, mad: np.ndarray,
          cnt: np.ndarray, carried: np.ndarray, dscale: np.ndarray) -> list[Excursion]:
    med = _baseline(med, carried)
    unit = np.abs(med) if det.relative else np.ones_like(med)
    scale = np.fmax(np.fmin(mad, dscale), det.floor * unit)
    onset = med + np.maximum(det.onset_k * scale, det.onset_rel * unit)
    with np.errstate(invalid="ignore"):
        cands = np.flatnonzero((cnt >= max(det.min_history, 1)) & (y > onset))
    out: list[Excursion] = []
    n = len(y)
    resume = 0
    for c in cands:
        if c < resume:
            continue
        b, s, h, u = float(med[c]), float(scale[c]), int(cnt[c]), float(unit[c])
        widen = 1.0 + det.small_n / h  # few points of history: the noise is barely known
        tol = b + max(det.recover_k * s, det.recover_rel * u) * widen
        # with fewer than ``small_n`` points of history (the tolerance more than doubled), the
        # run of points that confirms the recovery is over at its first point back within the
        # unwidened tolerance, where one is: a point the widening takes in while still well
        # above where the loss came from is no recovery yet (Megatron's 12.1 → 26.5 → 13.8 →
        # 10.2 after one logged point is back at 10.2, not at 13.8)
        tight = b + max(det.recover_k * s, det.recover_rel * u) if h < det.small_n else tol
        strict = b + max(det.k * s, det.rel * u) * widen
        peak, run, first, end, stop = int(c), 0, None, None, None
        below = 0  # consecutive points back under the midpoint of the baseline and the peak
        reopen = None  # back to its baseline, unconfirmed, then a top ``TALLER`` times its
        # rise: it opens there. A point back within tolerance but still above the baseline is
        # no end (BLOOM's 2.60 at 31216 over 2.21, then 2.24, 2.35 and 5.10 at 31219 are one
        # excursion, the grad norm climbing all along), nor is a next top barely taller
        # (deepspeech.pytorch's per-batch CTC loss 3.22, 3.69, 3.86, 1.99, 4.20, 10.1: a swing)
        j = int(c) + 1
        while j < n:
            v = y[j]
            if v > y[peak]:
                if below >= det.patience and v - b > TALLER * (y[peak] - b):
                    stop = j  # a taller excursion on the level this one settled at
                    break
                if (run > 0 and y[j - 1] <= b and y[peak] <= strict
                        and v - b > TALLER * (y[peak] - b)):
                    reopen = j
                    break
                peak, below = j, 0
            elif v < b + (y[peak] - b) / 2:
                below += 1
            else:
                below = 0
            if v <= max(tol, b + det.recover_frac * (y[peak] - b)):
                if run == 0:
                    first = j
                run += 1
                if run >= det.patience:
                    end = next((k for k in range(first, j + 1) if y[k] <= max(
                        tight, b + det.recover_frac * (y[peak] - b))), first)
                    break
            else:
                run = 0
            j += 1
        if reopen is not None:  # a bump that came back (DETR's epoch 265, 1.97 over 1.72,
            # 1.62 and 1.60 after it): the rise at ``reopen`` (3.04 at 268) is a new one
            out.append(Excursion(int(c), peak, first, b, s, h, False, True))
            resume = reopen
            continue
        tentative = end is None and stop is None and run > 0
        if tentative:
            end = first
        out.append(Excursion(int(c), peak, end, b, s, h, bool(y[peak] > strict), tentative, stop))
        resume = j + 1 if end is not None else stop if stop is not None else n
    return out


def excursions(y: np.ndarray, det: Detector = LOSS) -> list[Excursion]:
    """Excursions of the finite series ``y`` above its rolling baseline (confirmed or not).
    Two passes: the second recomputes baselines with the first pass's spikes left out."""
    y = np.asarray(y, dtype=float)
    if len(y) < 2:
        return []
    found = _scan(y, det, *rolling_stats(y, det.window), *rolling_trend(y, det.window))
    spikes = [e for e in found if e.confirmed]
    if not spikes:
        return found
    masked = y.copy()
    for e in spikes:
        masked[e.start : (e.over if e.over is not None else len(y))] = np.nan
    return _scan(y, det, *rolling_stats(masked, det.window), *rolling_trend(masked, det.window))


# -- the series' own noise -------------------------------------------------------------------
NOISE_HISTORY = 5  # points before an excursion needed to know how far the series' noise reaches
NOISE_REACH = 2.0  # a spike rises above its baseline more than this times that reach (as
# triage stands one spike out of several that came back: STAND_OUT)
BLIP_POINTS = 4  # an excursion back within this many logged points is a blip ...
NOISE_BLIPS = 5  # ... and this many blips, one per ``window`` points at least, are the noise


def noise_blips(found: list[Excursion], n: int, det: Detector = LOSS) -> list[Excursion]:
    """The confirmed excursions of ``found`` (over ``n`` points) that are the series' own noise:
    its blips (back within ``BLIP_POINTS`` points) when they come ``NOISE_BLIPS`` times or more
    and once per ``det.window`` points on average — a converged per-batch loss of 1e-4 whose
    odd batch reads 1e-2 all run long (Paddle's ``batch_loss``). None otherwise. A spike of
    such a series rises ``NOISE_REACH`` times higher than every other blip (``_above_blips``)."""
    blips = [e for e in found if e.confirmed and e.end is not None
             and e.end - e.start <= BLIP_POINTS]
    return blips if len(blips) >= max(NOISE_BLIPS, n / det.window) else []


def _above_baseline(y: np.ndarray, found: list[Excursion], det: Detector) -> np.ndarray:
    """Each point's rise above its own rolling baseline, with the points inside the confirmed
    excursions of ``found`` left out (NaN) of the points and of the baselines."""
    masked = np.asarray(y, dtype=float).copy()
    n = len(masked)
    for e in found:
        if e.confirmed:
            masked[e.start : (e.over if e.over is not None else n)] = np.nan
    med, _, _ = rolling_stats(masked, det.window)
    carried, _ = rolling_trend(masked, det.window)
    return masked - _baseline(med, carried)


def noise_reach(y: np.ndarray, found: list[Excursion], det: Detector = LOSS) -> np.ndarray:
    """For each point: how far above its own rolling baseline the series rose at most among the
    ``det.window`` points before it (NaN with fewer than ``NOISE_HISTORY`` of them). Points
    inside the confirmed excursions of ``found`` (``excursions(y, det)``) are left out: an
    earlier spike is no measure of the noise."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    reach = np.full(n, np.nan)
    if n < 2:
        return reach
    above = _above_baseline(y, found, det)
    pad = np.concatenate([np.full(det.window, -np.inf), np.where(np.isnan(above), -np.inf, above)])
    wins = sliding_window_view(pad, det.window)[:n]
    for a in range(0, n, STATS_CHUNK):
        w = wins[a : a + STATS_CHUNK]
        top = np.max(w, axis=1)
        known = np.sum(np.isfinite(w), axis=1) >= NOISE_HISTORY
        reach[a : a + len(w)] = np.where(known, top, np.nan)
    return reach


def reach_after(y: np.ndarray, found: list[Excursion], e: Excursion,
                det: Detector = LOSS) -> float:
    """How far above its own rolling baseline the series rose at most among the ``det.window``
    points after excursion ``e`` came back (NaN: it did not, or fewer than ``NOISE_HISTORY``
    points follow): the noise of a run whose spike came too early for ``noise_reach`` to know
    it. Confirmed excursions of ``found`` are left out, as there."""
    if e.end is None:
        return math.nan
    after = _above_baseline(y, found, det)[e.end : e.end + det.window]
    after = after[np.isfinite(after)]
    return float(after.max()) if len(after) >= NOISE_HISTORY else math.nan


def top_rise_outside(y: np.ndarray, start: int, end: int, det: Detector = LOSS) -> float:
    """The largest rise of any point of ``y`` above its own rolling baseline, with the points
    ``start`` to ``end`` (exclusive; an excursion's) left out of the points and of the
    baselines: how far the rest of the run's loss ever strayed above its level (NaN with fewer
    than ``NOISE_HISTORY`` points left)."""
    masked = np.asarray(y, dtype=float).copy()
    masked[start:end] = np.nan
    med, _, _ = rolling_stats(masked, det.window)
    carried, _ = rolling_trend(masked, det.window)
    above = masked - _baseline(med, carried)
    above = above[np.isfinite(above)]
    return float(above.max()) if len(above) >= NOISE_HISTORY else math.nan


def _above_blips(y: np.ndarray, e: Excursion, blips: list[Excursion]) -> bool:
    """Whether an excursion rose ``NOISE_REACH`` times higher above its baseline than every
    blip of the series' noise (``noise_blips``) other than itself."""
    rise = float(y[e.peak]) - e.baseline
    return all(rise > NOISE_REACH * (float(y[b.peak]) - b.baseline) for b in blips if b != e)


def _rel_rise(y: np.ndarray, e: Excursion) -> float:
    """How far an excursion's peak rose above its baseline, as a share of the baseline."""
    return (float(y[e.peak]) - e.baseline) / abs(e.baseline) if e.baseline else math.inf


def _like_unconfirmed_blips(y: np.ndarray, e: Excursion, found: list[Excursion]) -> bool:
    """Whether a blip (back within ``BLIP_POINTS`` points) is one of many like it that the
    detector did not confirm: ``NOISE_BLIPS`` or more unconfirmed blips of the run, before it or
    after, rose at least 1/``NOISE_REACH`` as high over their own baselines (PaddleSeg's
    per-batch ``loss=`` of a segmentation run, 0.2 with one batch in a hundred at 0.35-0.44:
    the one the local noise scale confirmed is no taller than the others)."""
    if e.end is None or e.end - e.start > BLIP_POINTS:
        return False
    rise = _rel_rise(y, e)
    like = [b for b in found if not b.confirmed and b.end is not None
            and b.end - b.start <= BLIP_POINTS and _rel_rise(y, b) >= rise / NOISE_REACH]
    return len(like) >= NOISE_BLIPS


def _within_noise(y: np.ndarray, e: Excursion, reach: float) -> bool:
    """Whether an excursion's rise is within ``NOISE_REACH`` times how far the series' own
    noise rose above its baseline (``noise_reach`` before it; ``reach_after`` when too few
    points came before): a per-batch loss printed unsmoothed (timm's first ``Loss:`` value,
    one batch's) swings by as much every few points, and the rolling MAD of a few points can
    miss that (howardhsu/BERT-for-RRC-ABSA#2)."""
    if not math.isfinite(reach) or reach <= 0:
        return False
    return bool(float(y[e.peak]) - e.baseline <= NOISE_REACH * reach)


# -- spikes ----------------------------------------------------------------------------------
RANGE_HISTORY = 20  # finite losses before an excursion needed to know the run's loss range
MIN_RISE_OF_RANGE = 0.02  # a spike rises by at least this share of that range


def _off_one_value(y: np.ndarray, e: Excursion) -> bool:
    """Whether an excursion rose off a baseline of one logged value, never came back by the
    detector's measure, yet after its peak the loss is that small again (in magnitude: a
    signed loss counts by its size): the run's first loss was one low draw of its noise, not
    its level (a distillation's 0.52 at step 1, then 0.3-3.4 all run long; a GRPO loss of
    -0.0027, then 0.0 ± 0.003). A divergence stays far from it (a DQN's TD error swinging
    between -1e8 and 1e9 after 0.065)."""
    return (e.history < 2 and e.end is None
            and bool((np.abs(y[e.peak:]) <= abs(e.baseline)).any()))


def _within_run_range(y: np.ndarray, e: Excursion) -> bool:
    """Whether an excursion's rise is too small for the run to call a spike: under
    ``MIN_RISE_OF_RANGE`` of the range the loss has covered before it (lowest to second
    highest value: one absurd logged value does not set the scale). The rolling baseline measures noise on its last ``window`` points only, so a
    slow wobble of a smoothed loss (0.44 → 0.53 after a fall from 8.9) or a blip of a memorised
    fine-tune (0.003 → 0.008 after a fall from 3.6) passes the relative thresholds; against
    the whole run such a rise is noise. With fewer than ``RANGE_HISTORY`` points before it the
    range is unknown and the excursion stands."""
    prior = y[: e.start]
    if len(prior) < RANGE_HISTORY:
        return False
    ordered = np.sort(prior)
    lo, hi = float(ordered[0]), float(ordered[-2])
    return bool(float(y[e.peak]) - e.baseline < MIN_RISE_OF_RANGE * (hi - lo))


def _above_noise(y: np.ndarray, spikes: list[Excursion], found: list[Excursion],
                 det: Detector) -> list[Excursion]:
    """The ``spikes`` that rise above the series' noise (``_within_noise``), in two passes: the
    excursions of ``found`` the first pass finds to be noise are no longer left out of the
    noise the second measures (a slow early hump that is noise no longer hides the noise
    after it)."""
    kept = spikes
    for _ in range(2):
        known = [e for e in found if not e.confirmed or e in kept]
        reach = noise_reach(y, known, det)
        kept = [e for e in kept if not _within_noise(y, e, r if math.isfinite(
            r := float(reach[e.start])) else reach_after(y, known, e, det))]
    return kept


GRAD_JUMP = 10.0  # a grad norm this many times its recent level leads a loss spike
GRAD_JUMP_LOOKBACK = 5  # logged points before a spike's start searched for that jump


def grad_jump(its: np.ndarray, grad: np.ndarray, start: int) -> int | None:
    """The first logged iteration at or before ``start`` (within ``GRAD_JUMP_LOOKBACK`` points)
    whose grad norm is ``GRAD_JUMP`` times the median of the norms logged before it: the
    optimizer blew up before the loss showed it (too few points for the excursion detector)."""
    upto = int(np.searchsorted(its, start, side="right"))
    for j in range(max(1, upto - GRAD_JUMP_LOOKBACK), upto):
        before = grad[max(0, j - 50):j]
        if len(before) and grad[j] >= GRAD_JUMP * float(np.median(before)):
            return int(its[j])
    return None


def find_spikes(s: pd.DataFrame, loss_det: Detector = LOSS,
                grad_det: Detector = GRAD_NORM) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Loss spikes (dicts with the facts' keys plus grad-norm lead, data window and
    recovery detail) and grad-norm excursions that came with no loss spike."""
    its = s["iteration"].to_numpy()
    loss = s["loss"].to_numpy(dtype=float)
    grad = s["grad_norm"].to_numpy(dtype=float)
    lf = np.isfinite(loss)
    li, ly = its[lf], loss[lf]
    with np.errstate(divide="ignore", invalid="ignore"):
        gf = np.isfinite(grad) & (grad > 0)
        gi, gy = its[gf], np.log(grad[gf])
    found = excursions(ly, loss_det)
    lex = [e for e in found if e.confirmed and not _within_run_range(ly, e)
           and not _off_one_value(ly, e)]
    if lex:
        blips = noise_blips(found, len(ly), loss_det)
        lex = [e for e in lex if _above_blips(ly, e, blips)
               and not _like_unconfirmed_blips(ly, e, found)]
        lex = _above_noise(ly, lex, found, loss_det)
    gex = [e for e in excursions(gy, grad_det) if e.confirmed]
    last_it = int(its[-1]) if len(its) else None
    spikes: list[dict[str, Any]] = []
    used: set[int] = set()
    for e in lex:
        start, peak = int(li[e.start]), int(li[e.peak])
        rec = int(li[e.end]) if e.end is not None else None
        g_start, leads = None, False
        for k, g in enumerate(gex):
            gs = int(gi[g.start])
            ge = int(gi[g.end]) if g.end is not None else None
            if gs <= peak and (ge is None or ge > start):
                g_start, leads = gs, gs < start
                used.add(k)
                break
        if not leads:
            jump = grad_jump(gi, np.exp(gy) if len(gy) else gy, start)
            if jump is not None and jump < start:  # at the same step they coincide
                g_start, leads = jump, True
        first = min(start, g_start) if g_start is not None else start
        upto = rec if rec is not None else last_it
        win = s[(s["iteration"] >= first) & (s["iteration"] <= upto)]
        # an overflowed grad norm (fairseq's "gnorm=inf") is no peak to report, but the grad
        # norm was logged: whether it led is still known from the finite ones
        wg = win["grad_norm"].to_numpy(dtype=float)
        logged = bool(np.isfinite(wg).any())
        gmax = finite_float(np.nanmax(wg[np.isfinite(wg)])) if logged else None
        spikes.append({
            "start_iteration": start,
            "peak_iteration": peak,
            "peak_loss": float(ly[e.peak]),
            "baseline_loss": round(float(e.baseline), 6),
            "peak_grad_norm": gmax,
            "recovered_iteration": rec,
            "recovery_iterations": rec - start if rec is not None else None,
            "recovery_confirmed": rec is not None and not e.tentative,
            "grad_norm_start_iteration": g_start,
            "grad_norm_leads": leads if logged else None,
            "history_points": e.history,
            "data_window": data_window(s, first, peak),
        })
    lonely = []
    for k, g in enumerate(gex):
        if k in used:
            continue
        lonely.append({
            "start_iteration": int(gi[g.start]), "peak_iteration": int(gi[g.peak]),
            "peak_grad_norm": float(np.exp(gy[g.peak])),
            "baseline_grad_norm": round(float(np.exp(g.baseline)), 6),
            "recovered_iteration": int(gi[g.end]) if g.end is not None else None,
        })
    return spikes, lonely


# -- an epoch's running mean, reset at each epoch's start ------------------------------------
# A trainer that prints the mean of the epoch's batches so far (losses = 0 at the epoch's start,
# print(losses / (batch_idx + 1)): DSFD's train.py, AverageMeter-style loops) shows one batch's
# loss at an epoch's first logged point, an average of a few at the next ones, then a mean that
# barely moves. Its noise shrinks through the epoch; a per-batch loss's does not. The rule:
#   where the series is such a mean (its step-to-step moves early in an epoch are RESET_SHRINK
#   times or more its moves late in the same epoch, in most epochs logged at RESET_POINTS or more
#   points a side), a rise that starts at an epoch's first logged point, peaks there and is back
#   before the epoch ends is the mean's reset, no spike.
# A real spike in such a series drags the mean up for the rest of the epoch (no recovery inside
# it) or starts later than the first point, and stays a spike.
RESET_POINTS = 5  # logged points early and late in an epoch compared
RESET_SHRINK = 4.0  # early moves this many times the late ones: the noise shrinks as a mean's


def epoch_running_mean(s: pd.DataFrame) -> bool:
    """Whether the series' loss is each epoch's running mean (the rule above)."""
    if "epoch" not in s or not s["epoch"].notna().any():
        return False
    votes = []
    for _, g in s[s["epoch"].notna()].groupby("epoch", sort=True):
        y = g.sort_values("iteration")["loss"].to_numpy(dtype=float)
        y = y[np.isfinite(y)]
        if len(y) < 2 * RESET_POINTS + 2:
            continue
        moves = np.abs(np.diff(y[1:]))  # (the first point's jump is what is asked about)
        early, late = np.median(moves[:RESET_POINTS]), np.median(moves[-RESET_POINTS:])
        votes.append(bool(early >= RESET_SHRINK * late) if late > 0 else early > 0)
    return len(votes) >= 2 and sum(votes) > len(votes) / 2


def epoch_reset(s: pd.DataFrame, spike: dict[str, Any]) -> bool:
    """Whether a spike is a running mean's reset at an epoch's first logged point (the rule
    above; ``epoch_running_mean`` is asked of the series by the caller)."""
    start, rec = spike["start_iteration"], spike["recovered_iteration"]
    if rec is None or spike["peak_iteration"] != start or "epoch" not in s:
        return False
    its = s["iteration"].to_numpy()
    ep = s["epoch"].to_numpy(dtype=float, na_value=np.nan)
    k = int(np.searchsorted(its, start))
    if k == 0 or k >= len(its) or its[k] != start or not np.isfinite(ep[k]):
        return False
    first = not ep[k - 1] == ep[k]  # the epoch changed since the point before
    r = int(np.searchsorted(its, rec))
    return first and r < len(its) and ep[r] == ep[k]
