"""The change point: transients filtered out (``despike``), then the best two-level split and
whether it is a lasting change for the worse (``find_change``), its shape and recovery."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

MAD_TO_SIGMA = 1.4826
MEDIAN_SE = 1.2533  # sd of a sample median / (sigma / sqrt(n)) for normal noise


def _rolling(values: np.ndarray, half: int, fn: Any) -> np.ndarray:
    """``fn`` over the centred window of ``2*half+1`` points (cut at the ends)."""
    padded = np.concatenate([np.full(half, np.nan), values, np.full(half, np.nan)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN windows at the very ends
        return fn(windows, axis=1)


def _side_medians(x: np.ndarray, half: int) -> tuple[np.ndarray, np.ndarray]:
    """Median of the ``half`` points before and after each point (NaN where there are none)."""
    pad = np.full(half, np.nan)
    padded = np.concatenate([pad, x, pad])
    windows = np.lib.stride_tricks.sliding_window_view(padded, half)
    n = len(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        left = np.nanmedian(windows[:n], axis=1)
        right = np.nanmedian(windows[half + 1 : half + 1 + n], axis=1)
    return left, right


def despike(values: np.ndarray, half_window: int = 5, k: float = 3.0,
            max_run: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Hampel filter, two-sided: a point is an outlier when it is more than ``k`` robust sigmas
    away from the median of the points before it *and* of the points after it, on the same side
    (a point next to a level shift agrees with one side, so it is not flagged). Outliers are
    replaced by the window median — but only in runs of at most ``max_run`` consecutive
    outliers on the same side (a longer run may be a real level shift). Returns (cleaned
    values, replaced mask)."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n < 3:
        return x.copy(), np.zeros(n, dtype=bool)
    med = _rolling(x, half_window, np.nanmedian)
    mad = _rolling(np.abs(x - med), half_window, np.nanmedian)
    left, right = _side_medians(x, half_window)
    floor = max(noise_sigma(x), 1e-3 * abs(float(np.nanmedian(x))), 1e-12)
    scale = np.maximum(MAD_TO_SIGMA * np.nan_to_num(mad), floor)
    dl = x - left
    dr = x - right
    # An end point has one side only: it must also differ from its neighbour, else the last two
    # points agreeing with each other (a drop in the last iterations) would count as a spike.
    dr[-1] = x[-1] - x[-2]
    dl[0] = x[0] - x[1]
    up = np.fmin(dl, dr)  # both sides (or the only side) below x
    down = np.fmax(dl, dr)
    sign = np.where(up > k * scale, 1, np.where(down < -k * scale, -1, 0))
    # ... unless that neighbour is itself as far out on the same side (a slide still going in
    # the last iterations: 98 → 46 → 23 samples/s is no spike at 23)
    for end, nb in ((n - 1, n - 2), (0, 1)):
        base = left[end] if end else right[end]
        if sign[end] and np.isfinite(base) and (x[nb] - base) * sign[end] > k * scale[end]:
            sign[end] = 0
    out = x.copy()
    replaced = np.zeros(n, dtype=bool)
    i = 0
    while i < n:
        if sign[i] == 0:
            i += 1
            continue
        j = i
        while j + 1 < n and sign[j + 1] == sign[i]:
            j += 1
        if j - i + 1 <= max_run:
            out[i : j + 1] = med[i : j + 1]
            replaced[i : j + 1] = True
        i = j + 1
    return out, replaced


def slow_starts(values: np.ndarray, replaced: np.ndarray, starts: np.ndarray,
                higher_is_better: bool) -> np.ndarray:
    """Which analysed positions are a run's slow first window: the first value of a run (a
    position of ``starts``; the analysis passes the job's first only) that ``despike`` replaced as a transient and that is worse than
    the value that replaced it (PaddleSeg's iter 20 at 3.74 samples/s, then 5.3-5.7; nanoGPT's
    step 0, TF1's step 1: compilation, a cold cache, the reader's first fill). Such a window is
    the start-up's, not a point of the run's level: it is set aside, never replaced by the
    level's median, which would add a point of no noise on the baseline's side and make a 6 %
    wander after it look certain. ``values`` are the raw analysed values, ``replaced`` the
    despiked ones."""
    x = np.asarray(values, dtype=float)
    r = np.asarray(replaced, dtype=float)
    out = np.zeros(len(x), dtype=bool)
    for i in np.flatnonzero(np.asarray(starts, dtype=bool)):
        if i < len(x) and np.isfinite(x[i]) and np.isfinite(r[i]) and x[i] != r[i]:
            out[i] = x[i] < r[i] if higher_is_better else x[i] > r[i]
    return out


@dataclass
class Change:
    """A lasting level shift found by ``find_change`` (positions index the analysed values)."""

    index: int  # first position of the degraded segment
    baseline: float
    degraded: float
    drop_pct: float  # throughput lost, percent (positive: slower)
    z: float  # shift in robust standard errors
    sigma: float  # robust per-point noise
    n_before: int
    n_after: int
    shape: str = "step"  # "step", "gradual", or "stall" (the last logged value alone)
    onset: int | None = None  # first position of the departure from baseline (gradual)
    recovered: bool = False  # the last points are back near the baseline


def drop_pct(baseline: float, degraded: float, higher_is_better: bool) -> float:
    """Throughput lost in percent: for a rate (baseline-degraded)/baseline; for a time per
    iteration 1 - baseline/degraded (the rate is its inverse)."""
    if higher_is_better:
        return (baseline - degraded) / baseline * 100.0 if baseline else 0.0
    return (1.0 - baseline / degraded) * 100.0 if degraded else 0.0


def _sad(a: np.ndarray) -> tuple[float, float]:
    m = float(np.median(a))
    return m, float(np.abs(a - m).sum())


def _best_split(x: np.ndarray, higher_is_better: bool, m: int,
                candidates: range | list[int]) -> tuple[int, float] | None:
    best: tuple[int, float] | None = None
    for s in candidates:
        ma, ca = _sad(x[:s])
        mb, cb = _sad(x[s:])
        worse = mb < ma if higher_is_better else mb > ma
        if not worse:
            continue
        if best is None or ca + cb < best[1]:
            best = (s, ca + cb)
    return best


def noise_sigma(x: np.ndarray, split: int | None = None) -> float:
    """Robust per-point noise: the larger of 1.4826·MAD of first differences / √2 (blind to a
    level shift, which moves one difference) and 1.4826·median |residual| about each segment's
    median (the residuals of the best split alone are biased low: the split minimises them)."""
    x = np.asarray(x, dtype=float)
    d = np.diff(x)
    s_diff = MAD_TO_SIGMA * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2) if len(
        d) else 0.0
    if split is None:
        resid = x - np.median(x)
    else:
        resid = np.concatenate([x[:split] - np.median(x[:split]), x[split:] - np.median(x[split:])])
    s_res = MAD_TO_SIGMA * float(np.median(np.abs(resid))) if len(resid) else 0.0
    return max(s_diff, s_res)


OWN_NOISE_MIN = 5  # points a segment needs before its own noise is estimated
MEDIAN_CI_MIN = 20  # points a segment needs before its median's spread is read from its order
MEDIAN_CI_Z = 1.96  # statistics (``median_se``), at the 95 % level


def median_se(x: np.ndarray) -> float:
    """The standard error of ``x``'s median from its order statistics (the distribution-free
    95 % interval of the median, the values of rank n/2 ± 0.98·√n, over 2 × 1.96), 0 for fewer
    than ``MEDIAN_CI_MIN`` points: where the values fall in two modes (a translator's batches
    bucketed by sentence length, fast and slow in turn: GNMT's Tok/s at 80-87k and 93-101k)
    the median of a segment jumps between them with the mix, an uncertainty σ/√n misses."""
    n = len(x)
    if n < MEDIAN_CI_MIN:
        return 0.0
    s = np.sort(np.asarray(x, dtype=float))
    half = MEDIAN_CI_Z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half))
    return float(s[hi] - s[lo]) / (2 * MEDIAN_CI_Z)


def find_change(values: np.ndarray, higher_is_better: bool, min_segment: int = 2,
                threshold: float = 4.0, min_drop_pct: float = 1.0,
                coarse_above: int = 3000) -> Change | None:
    """The lasting change for the worse in ``values`` (positions in order), or None when the
    best two-segment split is not significant (see the module docstring)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = len(x)
    m = max(1, int(min_segment))
    if n < 2 * m:
        return None
    if n > coarse_above:  # coarse pass on block medians, then refine around the best block
        b = math.ceil(n / (coarse_above // 2))
        nb = n // b
        blocks = np.median(x[: nb * b].reshape(nb, b), axis=1)
        mb_ = max(1, math.ceil(m / b))
        coarse = _best_split(blocks, higher_is_better, mb_, range(mb_, nb - mb_ + 1))
        if coarse is None:
            return None
        lo = max(m, (coarse[0] - 2) * b)
        hi = min(n - m, (coarse[0] + 2) * b)
        best = _best_split(x, higher_is_better, m, range(lo, hi + 1))
    else:
        best = _best_split(x, higher_is_better, m, range(m, n - m + 1))
    if best is None:
        return None
    s = best[0]
    a, b2 = x[:s], x[s:]
    ma, mb = float(np.median(a)), float(np.median(b2))
    sigma = noise_sigma(x, s)
    sigma = max(sigma, 1e-3 * abs(ma), 1e-12)
    se = MEDIAN_SE * sigma * math.sqrt(1.0 / len(a) + 1.0 / len(b2))
    # each level with its own noise as well: a short, coarse segment (warm-up steps timed to
    # the whole millisecond, 42-44 ms) must not borrow the precision of a long smooth one
    # (43.6-43.8 ms) and make a 1.5 % difference of medians look certain
    # (a segment too short to know its own noise keeps the pooled one)
    sa = max(noise_sigma(a), 1e-3 * abs(ma), 1e-12) if len(a) >= OWN_NOISE_MIN else sigma
    sb = max(noise_sigma(b2), 1e-3 * abs(mb), 1e-12) if len(b2) >= OWN_NOISE_MIN else sigma
    se = max(se, MEDIAN_SE * math.sqrt(sa * sa / len(a) + sb * sb / len(b2)),
             math.hypot(median_se(a), median_se(b2)))
    z = abs(mb - ma) / se
    pct = drop_pct(ma, mb, higher_is_better)
    if pct < min_drop_pct or (z < threshold and not _separated(a, b2, higher_is_better, pct)):
        return None
    mid = (ma + mb) / 2  # each level must hold for min_segment points, not just its median
    # (levels far apart hold by their separation: 279 and 69 s are both the slow level of 0.6 s)
    if not _far_apart(a, b2, higher_is_better) and (
            int(((a - mid) * (ma - mid) > 0).sum()) < m
            or int(((b2 - mid) * (mb - mid) > 0).sum()) < m):
        return None
    if _returns_midway(b2, ma, higher_is_better) or _dipped_before(a, b2, mb, higher_is_better):
        return None
    ch = Change(s, ma, mb, pct, z, sigma, len(a), len(b2))
    _shape(x, ch, m, higher_is_better)
    return ch


WANDER_MIN = 10  # logged values, at least, back at the baseline inside the degraded segment ...
WANDER_SHARE = 0.2  # ... and this share of it at least: the level wandered, no lasting change


def _returns_midway(b: np.ndarray, baseline: float, higher_is_better: bool) -> bool:
    """Whether the degraded segment ``b`` comes back to the ``baseline`` level for a long
    stretch (``WANDER_MIN`` values and ``WANDER_SHARE`` of it, smoothed by a rolling median)
    and then falls again before its end: a level that wanders (a Megatron run's TFLOPs sliding
    7.1 → 6.35, back to 7.3 for a hundred iterations, then down to 6.4 again) rather than a
    lasting change. A return that lasts to the end is a recovery (``_shape``), not this."""
    n = len(b)
    if n < WANDER_MIN:
        return False
    w = max(1, n // 40)
    sm = _rolling(b, w, np.nanmedian) if n > 2 * w else b
    back = sm >= baseline if higher_is_better else sm <= baseline
    return any(e < n and e - s >= max(WANDER_MIN, WANDER_SHARE * n) for s, e in _runs(back))


def _dipped_before(a: np.ndarray, b: np.ndarray, degraded: float, higher_is_better: bool) -> bool:
    """Whether the level ``b`` settled at (``degraded``, its median) is one the run already
    dipped to and came back from before it: a run of consecutive values of ``a`` at least as
    bad, between values of the run's own level (a slow start of the series is no dip: the run
    had no level yet), half as long as ``b`` at least (two values or more). Such a level has
    not yet lasted longer than the series' own excursions, so it is not yet a lasting change (a
    SmolLM2 run's tok/sec of 1,110 dipping to 975, 911, 1,002 and back, then ending on five
    values at 1,000-1,060)."""
    bad = a <= degraded if higher_is_better else a >= degraded
    longest = max((e - s for s, e in _runs(bad) if s > 0 and e < len(a)), default=0)
    return longest >= max(2, len(b) / 2)


STALL_FACTOR = 10.0  # the last interval this many times slower than every one before: a stall
STALL_BEFORE = 2  # logged iterations before it, at least
STALL_SPREAD = 2.0  # those agree within this factor (a level, not noise)


def trailing_stall(values: np.ndarray, higher_is_better: bool) -> Change | None:
    """The last logged value ``STALL_FACTOR`` times worse than every value before it, those
    holding one level: the job stalled or crawled in its last logged interval (a change of one
    point, which ``find_change`` never claims; shape "stall"). None otherwise."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    if len(x) < STALL_BEFORE + 1:
        return None
    before, last = x[:-1], float(x[-1])
    if before.max() > STALL_SPREAD * before.min():
        return None
    worst = before.min() if higher_is_better else before.max()
    if (worst / last if higher_is_better else last / worst) < STALL_FACTOR:
        return None
    base = float(np.median(before))
    sigma = max(noise_sigma(before), 1e-3 * abs(base), 1e-12)
    z = abs(last - base) / sigma
    return Change(len(x) - 1, base, last, drop_pct(base, last, higher_is_better), z, sigma,
                  len(before), 1, shape="stall")


PAUSE_MIN_LOST_S = 3600.0  # wall time a mid-run interval must lose to be a pause, not a blip
PAUSE_QUIET_SPREAD = 1.1  # the other intervals within this factor of each other: a quiet level
PAUSE_QUIET_FACTOR = 2.0  # ... against which an interval this many times slower stands out


def mid_pause(seconds: np.ndarray, iterations: np.ndarray) -> Change | None:
    """One logged interval in the middle of the run ``STALL_FACTOR`` times slower than every
    other, those holding one level (or ``PAUSE_QUIET_FACTOR`` times, those holding a quiet
    level: within ``PAUSE_QUIET_SPREAD``), that lost at least ``PAUSE_MIN_LOST_S`` of wall time
    (its excess seconds per iteration times the iterations it covers): the job paused or
    crawled for a long while and then ran at its old pace again (ai-toolkit#595: 300 steps at
    28 s each between steps at 1.6-2.2 s; cellpose#450: epochs 11-20 at 1,896 s each between
    epochs at 805-823 s; shape "pause", recovered). A checkpoint save or an eval inside one
    logging interval loses minutes, not an hour. ``seconds`` are seconds per iteration in log
    order, ``iterations`` the logged iteration of each. None otherwise."""
    x = np.asarray(seconds, dtype=float)
    its = np.asarray(iterations, dtype=float)
    ok = np.isfinite(x) & (x > 0)
    x, its = x[ok], its[ok]
    if len(x) < STALL_BEFORE + 2:
        return None
    k = int(np.argmax(x))
    if k == len(x) - 1 or k == 0:
        return None  # the last interval is ``trailing_stall``'s; the first has no level before
    rest = np.delete(x, k)
    quiet = rest.max() <= PAUSE_QUIET_SPREAD * rest.min()
    factor = PAUSE_QUIET_FACTOR if quiet else STALL_FACTOR
    if rest.max() > STALL_SPREAD * rest.min() or x[k] < factor * rest.max():
        return None
    base = float(np.median(rest))
    covered = its[k] - its[k - 1]
    if not covered > 0 or (x[k] - base) * covered < PAUSE_MIN_LOST_S:
        return None
    sigma = max(noise_sigma(rest), 1e-3 * base, 1e-12)
    return Change(k, base, float(x[k]), drop_pct(base, float(x[k]), False),
                  abs(float(x[k]) - base) / sigma, sigma, k, len(x) - k, shape="pause",
                  onset=k, recovered=True)


EPISODE_MIN = 3  # consecutive logged values, at least, that make a slow episode
EPISODE_MIN_DROP_PCT = 30.0  # each of them this much worse than the run's level ...
EPISODE_QUIET_DROP_PCT = 10.0  # ... or, where none is, this much on a quiet level:
EPISODE_QUIET_NOISE = 5.0  # this many times its robust per-point noise, at most
EPISODE_LEVEL_PCT = 10.0  # ... which the values outside the episodes hold within this ...
EPISODE_LEVEL_SHARE = 0.8  # ... this share of them at least
EPISODE_MAX_SHARE = 1 / 2  # the slow values are fewer than this share of the run's values (the
# median the level is read from then lies among the level's own values) ...
EPISODE_MAX_RUNS = 3  # ... in this many runs at most (more: a periodic pause, a save or an eval)
EPISODE_AROUND = 5  # values at the run's level before the first episode and after it, at least
EPISODE_QUIET_MIN = 2  # consecutive values that make an episode on a quiet level when each is
# ``EPISODE_MIN_DROP_PCT`` worse (CosmoFlow's two epochs at 27.3k and 26.0k samples/s in 69 at
# 48-50k)
EPISODE_QUIET_LONG = 5  # consecutive values, at least, of an episode read on a quiet level by
# the smaller drop (``EPISODE_QUIET_DROP_PCT``): TSFormer's ten slow epochs are one; nnU-Net's
# three epochs at 364-386 s on a level of 317 s (a shared condor node, back the next epoch,
# with other single epochs at 330-382 s around them) are the level's own excursions
EPISODE_HOLD_PCT = 25.0  # half the episode's values within this of its median: a level, not
# the decay of a smoothed rate after one pause (tqdm after an eval: 11.1, 8.3, 6.3, 4.9 … s/it);
# an episode that holds no level but does not decay either (each window slow by its own amount:
# MLPerf v5.0 Stable Diffusion's 426-3,336 samples/s against 5,120) is one too
EPISODE_GAP_MAX = 1  # level values, at most, inside one episode (one normal window among slow
# ones does not end it: the same MLPerf run's 5,110 at step 3400 between 521 and 2,845)


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """The (start, end) of each run of consecutive true values."""
    edges = np.diff(np.concatenate([[0], mask.astype(int), [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(),
                    strict=True))


def _joined(runs: list[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    """``runs`` with those apart by ``gap`` values or fewer joined into one."""
    out: list[tuple[int, int]] = []
    for i, j in runs:
        if out and i - out[-1][1] <= gap:
            out[-1] = (out[-1][0], j)
        else:
            out.append((i, j))
    return out


def _decays(x: np.ndarray, higher_is_better: bool) -> bool:
    """Whether ``x`` gets better at every step but one at most: a smoothed rate recovering
    from one slow moment, not an episode (a value repeated, a bar redrawn before its next
    update, is no step back: Llama_SFT's tqdm 11.06, 11.06, 8.25, 6.28 … s/it after an eval)."""
    d = np.diff(x) if higher_is_better else -np.diff(x)
    return int((d < 0).sum()) <= 1


FADE_AFTER = 2  # values after a decaying episode still on their way back: a smoothed rate


def _fades(x: np.ndarray, i: int, j: int, base: float, higher_is_better: bool) -> bool:
    """Whether the episode ``x[i:j]`` is one slow moment seen through a smoothed rate: it
    decays (``_decays``) and goes on decaying after it, ``FADE_AFTER`` values or more still
    ``EPISODE_LEVEL_PCT`` worse than ``base`` on their way back to it. tqdm's s/it is an
    exponential average: one step slowed by an eval or a save shows as 215.6, 178.4, 149.4,
    126.2, 117.5, 107.6, 92.8 s/it against 90 (a Qwen2.5-7B ZeRO-3 fine-tune after its
    step-500 save), however long the decay holds above the episode's threshold; a slow
    episode logged by a rate that is not smoothed comes back at once."""
    tail = []
    for v in x[j:]:
        if drop_pct(base, float(v), higher_is_better) <= EPISODE_LEVEL_PCT:
            break
        tail.append(float(v))
    return len(tail) >= FADE_AFTER and _decays(np.concatenate([x[i:j], tail]), higher_is_better)


def slow_episode(values: np.ndarray, higher_is_better: bool) -> Change | None:
    """The first slow episode of a run that recovers: ``EPISODE_MIN`` or more consecutive
    values each ``EPISODE_MIN_DROP_PCT`` worse than the level the other values hold, the run
    back at that level for ``EPISODE_AROUND`` values after it (MLPerf RNN-T at half speed for
    epochs 28-31 and 38-40 of 51, at full speed between: a two-level split finds no lasting
    change in it). One normal value inside does not end it (``EPISODE_GAP_MAX``). The episode
    holds a level (``EPISODE_HOLD_PCT``) or at least does not decay back to the run's one (a
    smoothed rate after one pause, ``_fades``); slow values recurring in more than ``EPISODE_MAX_RUNS`` runs
    are a periodic pause (checkpoint saves), no episode.
    Where none is found and the level is quiet (``EPISODE_QUIET_NOISE`` times its noise within
    ``EPISODE_QUIET_DROP_PCT``), ``EPISODE_QUIET_LONG`` or more values that much worse make
    one too (TSFormer's epochs at 292-298 s, ten of them at 328-358 s). Shape "step",
    recovered. None otherwise."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    n = len(x)
    if n < 2 * EPISODE_AROUND + EPISODE_MIN:
        return None
    base = float(np.median(x))
    if not base > 0:
        return None
    worse = np.array([drop_pct(base, v, higher_is_better) for v in x])
    found = _episode(x, worse, worse >= EPISODE_MIN_DROP_PCT, higher_is_better)
    if found is None and EPISODE_QUIET_NOISE * noise_sigma(x) / base * 100 <= EPISODE_QUIET_DROP_PCT:
        found = _episode(x, worse, worse >= EPISODE_QUIET_DROP_PCT, higher_is_better,
                         EPISODE_QUIET_LONG)
        if found is None:
            found = _episode(x, worse, worse >= EPISODE_MIN_DROP_PCT, higher_is_better,
                             EPISODE_QUIET_MIN)
    return found


def _episode(x: np.ndarray, worse: np.ndarray, slow: np.ndarray,
             higher_is_better: bool, shortest: int = EPISODE_MIN) -> Change | None:
    """``slow_episode``'s test with the values it counts as slow, in runs of ``shortest``
    values at least."""
    n = len(x)
    level = ~slow
    runs = _joined(_runs(slow), EPISODE_GAP_MAX)
    if (slow.sum() >= EPISODE_MAX_SHARE * n or len(runs) > EPISODE_MAX_RUNS
            or (np.abs(worse[level]) <= EPISODE_LEVEL_PCT).mean() < EPISODE_LEVEL_SHARE):
        return None
    for i, j in runs:
        if j - i < shortest:
            continue
        if level[:i].sum() < EPISODE_AROUND or level[j:].sum() < EPISODE_AROUND:
            return None  # at the start or the end: the other rules' (warm-up, a stall)
        base = float(np.median(x[level]))
        degraded = float(np.median(x[i:j]))
        if ((np.abs(x[i:j] - degraded) <= EPISODE_HOLD_PCT / 100 * degraded).mean() < 0.5
                and _decays(x[i:j], higher_is_better)) or _fades(x, i, j, base,
                                                                  higher_is_better):
            return None
        sigma = max(noise_sigma(x[level]), 1e-3 * base, 1e-12)
        return Change(i, base, degraded, drop_pct(base, degraded, higher_is_better),
                      abs(degraded - base) / sigma, sigma, i, n - i, shape="step",
                      onset=i, recovered=True)
    return None


SHORT_MAX = 3  # a series this short has no two levels of two points: the creep rule reads it
SHORT_STEP_PCT = 10.0  # each logged value this much worse than the one before ...
SHORT_MIN_DROP_PCT = 25.0  # ... and the last this much worse than the first


def short_creep(values: np.ndarray, higher_is_better: bool) -> Change | None:
    """A series of ``SHORT_MAX`` values or fewer (three Megatron lines: 84.6 → 142.5 → 202.4 s
    per iteration) that gets worse at every logged point by ``SHORT_STEP_PCT`` and in all by
    ``SHORT_MIN_DROP_PCT``: a slowdown going on (a leak, a growing queue), which two-level
    splitting cannot see in so few points. Baseline the first value, degraded the last, the
    change at the second (shape "gradual"). None otherwise, and for longer series."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x) & (x > 0)]
    if not 3 <= len(x) <= SHORT_MAX:
        return None
    steps = [drop_pct(float(a), float(b), higher_is_better) for a, b in zip(x[:-1], x[1:],
                                                                         strict=True)]
    total = drop_pct(float(x[0]), float(x[-1]), higher_is_better)
    if min(steps) < SHORT_STEP_PCT or total < SHORT_MIN_DROP_PCT:
        return None
    sigma = max(noise_sigma(x), 1e-3 * abs(float(x[0])), 1e-12)
    return Change(1, float(x[0]), float(x[-1]), total, abs(float(x[-1] - x[0])) / sigma, sigma,
                  1, len(x) - 1, shape="gradual", onset=1)


GAP_FACTOR = 3.0  # a jump of this many logging intervals between logged steps is a gap ...
GAP_SPAN_FACTOR = 10.0  # ... and one this many times the logged span on either side of it
# hides more than the log shows: what the rate did in it (a step, a slow drift, a change of
# settings) is unknown


def _stretch(its: np.ndarray, at: int, step: float, way: int) -> int:
    """Iterations the log covers without a gap or a step back from position ``at`` going
    ``way`` (-1: back, +1: on)."""
    j = at
    while 0 <= j + way < len(its):
        d = its[max(j, j + way)] - its[min(j, j + way)]
        if d <= 0 or d > GAP_FACTOR * step:
            break
        j += way
    return int(abs(its[j] - its[at]))


def across_gap(change: Change | None, iterations: np.ndarray) -> bool:
    """Whether a level shift is seen only between a run's head and its tail: its first logged
    steps (from the start, within one logging interval of step 0) and its last, with a gap in
    the logged steps between them far longer than the logged span on either side
    (``GAP_SPAN_FACTOR``): a post's first and last 50 steps of a 5,000-step run with "..."
    between them. The head's rate is a run settling in, the tail's a rate thousands of steps
    on: such a change is no incident on its own, the data has a gap. (Two excerpts from the
    middle of a run, a reporter's "before" and "after", stay a change.) ``iterations``: the
    analysed values' steps."""
    if change is None or change.shape in ("stall", "pause") or change.index < 1:
        return False
    if change.onset is not None and change.onset != change.index:
        return False
    its = np.asarray(iterations, dtype=float)
    d = np.diff(its)
    if not (d > 0).any():
        return False
    step = float(np.median(d[d > 0]))
    i = change.index
    gap = its[i] - its[i - 1]
    if gap <= GAP_FACTOR * step:
        return False
    spans = (_stretch(its, i - 1, step, -1), _stretch(its, i, step, 1))
    head = its[i - 1] - spans[0] <= step  # the span before the gap starts the run
    return bool(head and gap > GAP_SPAN_FACTOR * max(*spans, step))


EXCERPT_MIN_DROP_PCT = 5.0  # the later excerpt's median this much worse than the earlier's ...
EXCERPT_FEW = 3  # ... when each excerpt holds this many values at least; with fewer, ...
EXCERPT_FEW_DROP_PCT = 25.0  # ... this much (one line per excerpt: the drop must be plain)


def excerpt_step(values: np.ndarray, boundaries: list[int],
                 higher_is_better: bool) -> Change | None:
    """A step at the boundary between two excerpts of one run (a post's "before" and "after"
    blocks, one file each: mxnet#4804's Speedometer at batch 5450, then 6250; the lines at
    iterations 220-260, then 1420-1460 of maskrcnn-benchmark#976): every value after the
    boundary worse than every value before, their medians ``EXCERPT_MIN_DROP_PCT`` apart
    (``EXCERPT_FEW_DROP_PCT`` where an excerpt holds fewer than ``EXCERPT_FEW`` values). The
    lines between the excerpts were never posted, so the levels of two blocks are all a
    reader has: two-level splitting asks for more points than a post gives. The latest such
    boundary wins; None without one."""
    x = np.asarray(values, dtype=float)
    for b in sorted(boundaries, reverse=True):
        a, c = x[:b], x[b:]
        if not len(a) or not len(c) or not (np.isfinite(x).all() and (x > 0).all()):
            continue
        worse = c.max() < a.min() if higher_is_better else c.min() > a.max()
        ma, mc = float(np.median(a)), float(np.median(c))
        pct = drop_pct(ma, mc, higher_is_better)
        floor = EXCERPT_MIN_DROP_PCT if min(len(a), len(c)) >= EXCERPT_FEW \
            else EXCERPT_FEW_DROP_PCT
        if worse and pct >= floor:
            sigma = max(noise_sigma(x, b), 1e-3 * abs(ma), 1e-12)
            return Change(b, ma, mc, pct, abs(mc - ma) / sigma, sigma, len(a), len(c))
    return None


# a healthy run's throughput wanders: it settles over the first iterations after warm-up
# (Megatron-DeepSpeed's TFLOPs 5.6 -> 5.3 over a 50-iteration benchmark), a running mean
# printed as the time per step still converges (detectron2's "time:" +1.5 %), a slow drift
# comes back. Below these floors a change is no throughput incident, whatever its z.
STEP_MIN_DROP_PCT = 3.0  # a step to a lower level
DRIFT_MIN_DROP_PCT = 10.0  # a gradual slide


def material(ch: Change) -> bool:
    """Whether a change costs enough throughput to be an incident (``STEP_MIN_DROP_PCT`` for a
    step, ``DRIFT_MIN_DROP_PCT`` for a gradual slide; stalls, pauses and creeps are large by
    their own rules). A step must also clear the series' own per-point spread, up to the
    slide's floor: a GRPO run's step times scatter ±10 % with the answers' lengths, and a 4 %
    shift of their median over 1,900 steps is that wander, however many points make it certain
    (ning-guo/hotpotqa-agent's nohup log, 62-90 s a step)."""
    if ch.shape == "gradual":
        return ch.drop_pct >= DRIFT_MIN_DROP_PCT
    spread = 100.0 * ch.sigma / abs(ch.baseline) if ch.baseline else 0.0
    return ch.drop_pct >= max(STEP_MIN_DROP_PCT, min(spread, DRIFT_MIN_DROP_PCT))


FADE_MIN = 10  # values, at least, of a degraded segment that fades back (``fading``): on
# fewer, three excerpted lines easing off (maskrcnn-benchmark#976), the fade is no pattern


def fading(ch: Change, values: np.ndarray, higher_is_better: bool) -> bool:
    """Whether the change's degraded segment is one slow moment seen through a smoothed rate:
    it starts at its worst, gets better at every logged value but one at most (``_decays``)
    and ends back more than halfway to the baseline. tqdm's s/it after a 91 s pause in a
    2.05 s/it GAN loop (corpus gpu_crash-sttn-gait-tensorboardx-teardown-oserror-healthy: "98%|
    █████████▊| 19620/20000 [12:01:55<18:34,  2.93s/it]", then 2.92, 2.91 … 2.06 s/it over
    the last 380 steps) is no lasting change; a slowdown seen through a smoothed rate rises
    and holds, a running mean since the start rises."""
    x = np.asarray(values, dtype=float)[ch.index:ch.index + ch.n_after]
    x = x[np.isfinite(x)]
    if len(x) < FADE_MIN or not _decays(x, higher_is_better):
        return False
    first = drop_pct(ch.baseline, float(x[0]), higher_is_better)
    last = drop_pct(ch.baseline, float(x[-1]), higher_is_better)
    return bool(first > 0 and last <= first / 2)


SETTLE_SHARE = 0.05  # a level held by fewer than this share of the run's first logged values
# ... and by fewer than this share, a start-up at any size of step (a tqdm bar's first refreshes
# at 6,000 step/s for 1.5 s, then 540 step/s for 14 minutes, 3,500 refreshes)
BURST_SHARE = 0.01


def settling(ch: Change, iterations: np.ndarray) -> bool:
    """Whether a step smaller than ``DRIFT_MIN_DROP_PCT`` comes after the run's first logged
    values alone (fewer than ``SETTLE_SHARE`` of them, the first logged within two logging
    intervals of the run's start) and holds to the end: the rate settling in after warm-up
    (clocks, caches, the allocator, a prefetch queue emptied), a slide of the start seen as a
    step. The short head's level is no baseline (a SmolLM2 run's tok/s of 5,083 at step 2,
    4,700-4,850 from step 13 over 1,000 steps). A head of fewer than ``BURST_SHARE`` of them is
    the start-up's at any size of step (asteriscrack/BipedRobot's D4PG: 13 tqdm refreshes at
    6,000 step/s in the first 1.5 s, then 540 step/s). ``iterations``: the analysed values'
    steps."""
    its = np.asarray(iterations, dtype=float)
    if ch.shape != "step" or ch.recovered or len(its) < 2:
        return False
    share = SETTLE_SHARE if ch.drop_pct < DRIFT_MIN_DROP_PCT else BURST_SHARE
    interval = float(np.median(np.diff(its))) if len(its) > 1 else 0.0
    if ch.n_before > 1:  # (the head's own interval: a bar refreshed on time, not on steps)
        interval = max(interval, float(np.median(np.diff(its[:ch.n_before]))))
    start = interval > 0 and its[0] <= 2 * interval
    return bool(start and ch.n_before < share * (ch.n_before + ch.n_after))


RESOLUTION_MIN_PCT = 1.0  # a series whose values step by at least this much of its level is coarse


def resolution(values: np.ndarray) -> float:
    """The step between a series' values: the smallest difference between two distinct values
    (a clock of whole seconds read every 10 steps gives multiples of 0.1 s per step); 0.0 with
    fewer than three distinct values (two levels are a change, not a clock's rounding)."""
    x = np.unique(np.round(values[np.isfinite(values)], 9))
    return float(np.min(np.diff(x))) if len(x) > 2 else 0.0


def within_resolution(ch: Change, values: np.ndarray) -> bool:
    """Whether a change is no more than one step of a coarse series (``resolution`` at least
    ``RESOLUTION_MIN_PCT`` of the baseline): the medians on either side differ by the clock's
    rounding, not by a change of speed (LLaMA-Factory's "elapsed_time": "0:00:24" every 10
    steps: 2.3 against 2.4 s per step)."""
    q = resolution(values)
    return (q > 0 and ch.baseline > 0 and q >= ch.baseline * RESOLUTION_MIN_PCT / 100
            and abs(ch.degraded - ch.baseline) <= q * (1 + 1e-6))


SEPARATED_MIN = 4  # points on each side for a clean separation to count as a change
SEPARATED_DROP_PCT = 5.0
FAR_MIN = 2  # points on each side, at least, for a separation by ``FAR_FACTOR`` to count
FAR_FACTOR = 3.0  # every point after this many times worse than every point before


def _far_apart(a: np.ndarray, b: np.ndarray, higher_is_better: bool) -> bool:
    """Every point of ``b`` ``FAR_FACTOR`` times worse than every point of ``a`` (positive
    values, at least ``FAR_MIN`` on each side): a drop that large needs no noise estimate, the
    few points of a short series show it (ultralytics#7618: three epochs at 0.33 s/it, then
    12.7, 1.62, 11.45 s/it; TransFusion#40: 0.57, 0.63, then 279, 69 s per iteration)."""
    if min(len(a), len(b)) < FAR_MIN or not (a > 0).all() or not (b > 0).all():
        return False
    if higher_is_better:
        return bool(a.min() >= FAR_FACTOR * b.max())
    return bool(b.min() >= FAR_FACTOR * a.max())


def _separated(a: np.ndarray, b: np.ndarray, higher_is_better: bool, pct: float) -> bool:
    """Every point of ``b`` worse than every point of ``a``, both long enough, and far apart
    (or ``_far_apart``)."""
    if _far_apart(a, b, higher_is_better):
        return True
    if min(len(a), len(b)) < SEPARATED_MIN or pct < SEPARATED_DROP_PCT:
        return False
    return bool(b.max() < a.min()) if higher_is_better else bool(b.min() > a.max())


STEP_HOLD_RATIO = 10  # a level held this many times as long as its ramp took (and over half
# the run) is a step


EPISODE_SPLIT_MAX = 3000  # values after a change, at most, split again for the return


def _episode_level(x: np.ndarray, ch: Change, m: int,
                   higher_is_better: bool) -> None:
    """A change the run came back from: its degraded level is the median between the change
    and the return (the best split of what follows the change into a slow and a recovered
    part, ``_best_split`` the other way round), not over
    the recovered tail as well (ICNet's 0.52 s/iteration, 0.63 for 1,670 iterations, then 0.52
    again read 0.57: an 18 % loss of rate said as 9 %)."""
    rest = x[ch.index:]
    if len(rest) < 2 * m or len(rest) > EPISODE_SPLIT_MAX:
        return
    split = _best_split(rest, not higher_is_better, m, range(m, len(rest) - m + 1))
    if split is None:
        return
    level = float(np.median(rest[:split[0]]))
    pct = drop_pct(ch.baseline, level, higher_is_better)
    if pct > ch.drop_pct:
        ch.degraded, ch.drop_pct = level, pct


def _shape(x: np.ndarray, ch: Change, m: int, higher_is_better: bool = True) -> None:
    """Step or gradual, where the departure began, and whether the tail recovered."""
    w = max(1, m // 2)
    sm = _rolling(x, w, np.nanmedian) if len(x) > 2 * w else x
    frac = (sm - ch.baseline) / (ch.degraded - ch.baseline)
    onset = ch.index
    while onset > 0 and frac[onset - 1] > 0.25:
        onset -= 1
    settle = ch.index
    while settle < len(x) - 1 and frac[settle] < 0.75:
        settle += 1
    ch.onset = onset
    ramp, held = settle - onset, len(x) - settle
    tail = x[-max(m, min(20, ch.n_after // 4)) :]
    t = float(np.median(tail))
    # a short ramp into a level the run then keeps for most of its length is a step that took
    # a few logs to show (MMEngine's epoch 15 slows over 8 of its 30 lines, then holds 0.350 s
    # for 700 of 840); a dip over the last tenth of a run, or a level still getting worse at
    # the end (a staircase), stays gradual
    stepped = (ramp * STEP_HOLD_RATIO <= held and 2 * held >= len(x)
               and abs(t - ch.baseline) <= abs(ch.degraded - ch.baseline))
    ch.shape = "gradual" if ramp > max(2, 2 * w + 1) and not stepped else "step"
    ch.recovered = ch.n_after >= 4 * m and abs(t - ch.baseline) < abs(t - ch.degraded)
    if ch.recovered:
        _episode_level(x, ch, m, higher_is_better)
    if ch.shape == "gradual" and not ch.recovered and abs(t - ch.baseline) > abs(ch.degraded - ch.baseline):
        # still getting worse at the end (a staircase, a leak): the level it reached is the
        # degraded one, not the median over the whole slide
        ch.degraded = t
        ch.drop_pct = drop_pct(ch.baseline, t, higher_is_better)


__all__ = ["GAP_SPAN_FACTOR", "MAD_TO_SIGMA", "MEDIAN_SE", "SEPARATED_DROP_PCT", "SEPARATED_MIN", "STALL_FACTOR",
           "Change", "across_gap", "despike", "drop_pct", "find_change", "mid_pause", "noise_sigma", "resolution",
           "fading", "settling", "short_creep", "slow_episode", "slow_starts", "within_resolution",
           "trailing_stall"]


# -- a slide the run's own schedule causes ---------------------------------------------------
SCHEDULE_PREFIX = "schedule:"  # host_timings rows of ``parse.benchmarks.parse_schedule``


def schedule_rows(host_timings: pd.DataFrame) -> pd.DataFrame:
    """The lines that show a configured schedule growing each step's work (random-LTD, a
    sequence-length curriculum, a batch-size ramp-up or stages): turned on in a config dump, or
    a kept length or stage's batch that grows over the run. Empty when the log shows none (or a
    length that never grows)."""
    ht = host_timings
    if not len(ht) or "metric" not in ht:
        return ht.iloc[0:0]
    rows = ht[ht["metric"].astype("string").str.startswith(SCHEDULE_PREFIX, na=False)]
    keep = []
    for _, g in rows.groupby(rows["metric"].astype(str), sort=False):
        vals = g["value"].astype(float)
        if (vals == 1.0).all() or vals.iloc[-1] > vals.iloc[0]:  # on, or a length that grew
            keep.append(g)
    return pd.concat(keep) if keep else rows.iloc[0:0]


# schedules that change the batch's shape at a few points (a batch size in stages, a sequence
# length warmed up by intervals): one stage boundary is a step of the rate, not a slide
STAGED_SCHEDULES = frozenset({"schedule:batch_size", "schedule:batch_size_rampup",
                              "schedule:seq_len_warmup"})


def by_schedule(ch: Change | None, schedule: pd.DataFrame) -> bool:
    """Whether a change is the slide the run's configured schedule makes: a gradual, lasting
    fall in a run whose log shows such a schedule, or a lasting step where the schedule moves
    in stages (``STAGED_SCHEDULES``). Every step does more work as the kept sequence or the
    batch grows, so the rate falls with it and holds once the schedule is done; a recovery
    (or a stall, a pause) is no schedule's doing."""
    if ch is None or not len(schedule) or ch.recovered:
        return False
    staged = bool(set(schedule["metric"].astype(str)) & STAGED_SCHEDULES)
    return ch.shape == "gradual" or (staged and ch.shape == "step")
