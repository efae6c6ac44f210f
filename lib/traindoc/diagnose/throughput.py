"""Throughput drop: when it started, by how much, which rank or node, and how to find it fast.

The method, step by step (each a pure function below, unit-tested):

1. ``metric_series``: one value per logged iteration of the chosen metric (TFLOPs, tokens/s,
   samples/s, or seconds per iteration), the median across ranks when several ranks log it;
   tqdm's s/it when no iteration line carries a metric. Iteration numbers going back start a
   new *run* (a restart from a checkpoint).
2. ``mask_events``: the logged iteration at and right after each eval (``validation loss at
   iteration N``) or checkpoint save is set aside — eval and save time lands in the next
   logged iteration's elapsed time, and those slow points are expected, not a change.
3. ``despike``: a Hampel filter (window median ± k·MAD) replaces isolated outliers by the local
   median; a run of ``min_segment`` or more outliers on the same side is kept (it may be the
   start of a real change, e.g. a drop in the last few iterations).
4. ``find_change``: the best two-segment split (the one minimising the sum of absolute
   deviations from each segment's median), over splits where the second segment is *worse*,
   each segment at least ``min_segment`` points. It is a change only if the level shift is at
   least ``threshold`` robust standard errors (noise scale: 1.4826 · the median absolute
   residual, standard error of a median difference 1.2533·σ·√(1/n₁+1/n₂)) **and** at least
   ``min_drop_pct`` of throughput — or, for short noisy series, when the two segments do not
   overlap at all, each at least ``SEPARATED_MIN`` points long and ``SEPARATED_DROP_PCT`` apart
   (every point after worse than every point before: by chance at most one in C(n, k) per
   split; Pythia's 5 intervals at 268-308 s then 4 at 324-356 s). Medians make the split blind to short transients, so eval and
   save slowdowns in the middle of a series never make a change; the minimum segment length of
   2 lets a drop in the last two logged iterations count (the BLOOM seed: 3 points at ~149, 2
   at ~141.7), while a single slow last iteration does not.
5. Who is slow: per-rank iteration times, Megatron's straggler detector and per-rank timers,
   per-host benchmark tables, and flight-recorder arrival lags (the rank that enqueues each
   collective last), each compared against its peers with a robust z-score.
6. Without a named culprit: a bisection plan over the node list — the sequence of ``sbatch
   --exclude=`` sets, at most ``spare_nodes`` at a time, that finds one slow node in the fewest
   restarts in the worst case (optimal by dynamic programming; checked against brute force).
7. What it costs: the remaining iterations at the baseline and at the degraded rate.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..hostlist import compress, expand, natural_key
from ..incident import Incident
from ..parse.benchmarks import metric_direction
from ..report import Action, Finding, Report, evidence, ranked
from .common import SYNTHETIC_HOST_PREFIX, input_findings, rank_hosts

FACT_KEYS = ("metric", "baseline", "degraded", "drop_pct", "change_iteration", "suspect_ranks",
             "suspect_hosts", "remaining_iterations", "eta_days", "bisect_plan")
MAD_TO_SIGMA = 1.4826
MEDIAN_SE = 1.2533  # sd of a sample median / (sigma / sqrt(n)) for normal noise
PEER_Z = 3.5  # robust z-score that makes a rank/host an outlier among its peers (Iglewicz-Hoaglin)
DP_LIMIT = 2_000_000  # candidate-size x spares pairs the bisection planner searches exhaustively
STRAGGLER_METRIC = r"[A-Za-z]+/(?:Mn|Mx|Bottom|Top)"  # host_timings rows of the straggler detector


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


# ---------------------------------------------------------------------------------------------
# 1. the series
# ---------------------------------------------------------------------------------------------
def _steps(incident: Incident) -> pd.DataFrame:
    """Iteration rows that are training steps (no eval/summary event)."""
    it = incident.iterations
    if "event" in it:
        it = it[it["event"].isna()]
    it = it[it["iteration"].notna()]
    if "interval_s" in it and it["interval_s"].notna().any():
        it = it.assign(elapsed_s=it["elapsed_s"].fillna(per_iteration_from_intervals(it)))
    return it


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


def per_iteration_from_intervals(it: pd.DataFrame) -> pd.Series:
    """``per_iteration_seconds`` for each file and rank of an iterations table, in log order."""
    out = pd.Series(pd.NA, index=it.index, dtype="Float64")
    rows = it[it["interval_s"].notna()]
    keys = [rows["source"].fillna("?").astype(str).str.rsplit(":", n=1).str[0],
            rows["rank"].fillna(-1)]
    for _, g in rows.groupby(keys, sort=False):
        vals = per_iteration_seconds([int(x) for x in g["iteration"]],
                                     [float(x) for x in g["interval_s"]])
        out.loc[g.index] = pd.array(vals, dtype="Float64")
    return out


def _order(df: pd.DataFrame) -> pd.DataFrame:
    """Rows in log order: by file, then line number."""
    src = df["source"].fillna("?:0").astype(str)
    parts = src.str.rsplit(":", n=1)
    return df.assign(_file=parts.str[0], _lineno=pd.to_numeric(parts.str[1], errors="coerce")
                     .fillna(0)).sort_values(["_file", "_lineno"], kind="stable")


def _usable(values: pd.Series) -> pd.Series:
    v = values.astype("Float64")
    return v.notna() & (v > 0)


def choose_metric(incident: Incident, metric: str = "auto", min_points: int = 3) -> str | None:
    """The metric to analyse: ``metric`` if it has data, else the first of ``AUTO_ORDER`` with
    at least ``min_points`` positive values (a column of zeros, like TFLOPs 0.00 printed by a
    job that cannot count its FLOPs, does not count); None when nothing has."""
    steps = _steps(incident)
    names = ([metric] if metric in METRICS else []) + list(AUTO_ORDER)
    for name in names:
        col = METRICS[name].column
        if col in steps and int(_usable(steps[col]).sum()) >= min_points:
            return name
    # no iteration line carries a metric: tqdm's rate, as seconds per step
    if len(_main_bar(incident.progress)) >= min_points:
        return "s_per_iteration"
    return None


def _main_bar(progress: pd.DataFrame) -> pd.DataFrame:
    """The training loop's tqdm rows (the bar with the largest total) that carry a rate."""
    pr = progress[progress["step"].notna() & progress["rate"].notna() & (progress["rate"] > 0)]
    if not len(pr):
        return pr
    if pr["total"].notna().any():
        pr = pr[pr["total"] == pr["total"].max()]
    return pr


def metric_series(incident: Incident, metric: str) -> pd.DataFrame:
    """One row per logged iteration: run (restart count), iteration, value (median across the
    ranks that logged it), ranks (how many), source, line, time. Ordered as the job ran."""
    cols = ["run", "iteration", "value", "ranks", "source", "line", "time"]
    spec = METRICS.get(metric)
    if spec is None:
        return pd.DataFrame(columns=cols)
    steps = _steps(incident)
    if spec.column in steps and _usable(steps[spec.column]).any():
        rows = steps[_usable(steps[spec.column])]
        rows = rows.assign(value=rows[spec.column].astype(float))
    else:
        pr = _main_bar(incident.progress)
        if not len(pr) or metric != "s_per_iteration":
            return pd.DataFrame(columns=cols)
        rows = pr.assign(iteration=pr["step"], value=1.0 / pr["rate"].astype(float))
    rows = _order(rows)
    rows = rows.assign(_rank=rows["rank"].fillna(-1).astype(int))
    rows = rows.assign(iteration=rows["iteration"].astype("int64"))
    back = (rows.groupby(["_file", "_rank"], sort=False)["iteration"].diff() < 0).astype(int)
    rows = rows.assign(run=back.groupby([rows["_file"], rows["_rank"]]).cumsum())
    g = rows.groupby(["run", "iteration"], sort=True)
    out = g.agg(value=("value", "median"), ranks=("_rank", "nunique"), source=("source", "first"),
                line=("line", "first"), time=("time", "first")).reset_index()
    out["iteration"] = out["iteration"].astype(int)
    return out[cols].reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# 2./3. events and transients
# ---------------------------------------------------------------------------------------------
def events(incident: Incident) -> pd.DataFrame:
    """Eval and checkpoint-save events: iteration, kind ("eval"/"save"), source, line."""
    frames = []
    it = incident.iterations
    if "event" in it:
        ev = it[(it["event"] == "eval") & it["iteration"].notna()]
        frames.append(ev.assign(kind="eval")[["iteration", "kind", "source", "line"]])
    ck = incident.tables.get("checkpoints")
    if ck is not None and len(ck) and "kind" in ck and "iteration" in ck:
        sv = ck[ck["kind"].fillna("").str.contains("save") & ck["iteration"].notna()]
        frames.append(sv.assign(kind="save")[["iteration", "kind", "source", "line"]])
    if not frames:
        return pd.DataFrame(columns=["iteration", "kind", "source", "line"])
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


# ---------------------------------------------------------------------------------------------
# 4. the change point
# ---------------------------------------------------------------------------------------------
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
    shape: str = "step"  # "step" or "gradual"
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
    z = abs(mb - ma) / se
    pct = drop_pct(ma, mb, higher_is_better)
    if pct < min_drop_pct or (z < threshold and not _separated(a, b2, higher_is_better, pct)):
        return None
    mid = (ma + mb) / 2  # each level must hold for min_segment points, not just its median
    if int(((a - mid) * (ma - mid) > 0).sum()) < m or int(((b2 - mid) * (mb - mid) > 0).sum()) < m:
        return None
    ch = Change(s, ma, mb, pct, z, sigma, len(a), len(b2))
    _shape(x, ch, m, higher_is_better)
    return ch


SEPARATED_MIN = 4  # points on each side for a clean separation to count as a change
SEPARATED_DROP_PCT = 5.0


def _separated(a: np.ndarray, b: np.ndarray, higher_is_better: bool, pct: float) -> bool:
    """Every point of ``b`` worse than every point of ``a``, both long enough, and far apart."""
    if min(len(a), len(b)) < SEPARATED_MIN or pct < SEPARATED_DROP_PCT:
        return False
    return bool(b.max() < a.min()) if higher_is_better else bool(b.min() > a.max())


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
    ch.shape = "gradual" if settle - onset > max(2, 2 * w + 1) else "step"
    tail = x[-max(m, min(20, ch.n_after // 4)) :]
    t = float(np.median(tail))
    ch.recovered = ch.n_after >= 4 * m and abs(t - ch.baseline) < abs(t - ch.degraded)
    if ch.shape == "gradual" and not ch.recovered and abs(t - ch.baseline) > abs(ch.degraded - ch.baseline):
        # still getting worse at the end (a staircase, a leak): the level it reached is the
        # degraded one, not the median over the whole slide
        ch.degraded = t
        ch.drop_pct = drop_pct(ch.baseline, t, higher_is_better)

# ---------------------------------------------------------------------------------------------
# restarts and gaps
# ---------------------------------------------------------------------------------------------
def discontinuities(series: pd.DataFrame, gap_factor: float = 3.0) -> pd.DataFrame:
    """Restarts (iterations going back) and gaps (iterations or time jumping far beyond the
    usual step) between consecutive logged iterations: position (of the row after), kind,
    from_iteration, to_iteration, source, line."""
    cols = ["position", "kind", "from_iteration", "to_iteration", "source", "line"]
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


# ---------------------------------------------------------------------------------------------
# 5. who is slow
# ---------------------------------------------------------------------------------------------
def peer_outliers(values: pd.Series, worse: int, z_threshold: float = PEER_Z,
                  min_rel_pct: float = 1.0) -> pd.DataFrame:
    """Robust z-score of each peer (index: rank or host) against the others. ``worse`` is +1
    when a larger value is slower (a time), -1 when smaller is slower (a rate). A suspect is at
    least ``z_threshold`` robust sigmas and ``min_rel_pct`` percent on the slow side of the
    median; with fewer than 3 peers nobody is (the odd one out is not defined)."""
    v = values.dropna().astype(float)
    out = pd.DataFrame({"value": v})
    out["z"] = np.nan
    out["rel_pct"] = np.nan
    out["suspect"] = False
    if len(v) < 3 or worse == 0:
        return out
    med = float(v.median())
    scale = MAD_TO_SIGMA * float((v - med).abs().median())
    if scale == 0:
        scale = MEDIAN_SE * float((v - med).abs().mean())
    if scale == 0 or med == 0:
        return out
    out["z"] = worse * (v - med) / scale
    out["rel_pct"] = worse * (v - med) / abs(med) * 100.0
    out["suspect"] = (out["z"] >= z_threshold) & (out["rel_pct"] >= min_rel_pct)
    return out


def rank_step_times(incident: Incident, spec: MetricSpec, since: int | None,
                    min_rel_pct: float) -> pd.DataFrame:
    """Per-rank median of the metric (from ``since`` on) where several ranks log iterations,
    with each rank's robust z against the others."""
    steps = _steps(incident)
    if spec.column not in steps:
        return pd.DataFrame()
    rows = steps[_usable(steps[spec.column]) & steps["rank"].notna()]
    if since is not None:
        rows = rows[rows["iteration"] >= since]
    if rows["rank"].nunique() < 2:
        return pd.DataFrame()
    per = rows.groupby(rows["rank"].astype(int))[spec.column].median().astype(float)
    out = peer_outliers(per, -1 if spec.higher_is_better else 1, min_rel_pct=min_rel_pct)
    out.index.name = "rank"
    return out.reset_index()


def straggler_reports(host_timings: pd.DataFrame, since: int | None) -> pd.DataFrame:
    """Megatron straggler-detector reports: per rank, how often it was the slowest (``Rtt/Mx``)
    or the lowest-throughput one (``Etpt/Mn``), and the median spread max/min RTT in percent."""
    ht = host_timings
    rep = ht[ht["metric"].isin(["Rtt/Mx", "Rtt/Mn", "Etpt/Mn"])]
    if since is not None:
        rep = rep[rep["iteration"].isna() | (rep["iteration"] >= since)]
    if not len(rep):
        return pd.DataFrame()
    mx = rep[rep["metric"] == "Rtt/Mx"].reset_index(drop=True)
    mn = rep[rep["metric"] == "Rtt/Mn"].reset_index(drop=True)
    n = min(len(mx), len(mn))
    spread = ((mx["value"].head(n).to_numpy(dtype=float) / mn["value"].head(n).to_numpy(dtype=float))
              - 1.0) * 100.0 if n else np.array([])
    reports = max(len(mx), int((rep["metric"] == "Etpt/Mn").sum()))
    slow = pd.concat([mx, rep[rep["metric"] == "Etpt/Mn"]])
    counts = slow.groupby(slow["rank"].astype(int))["metric"].value_counts().unstack(fill_value=0)
    out = pd.DataFrame({
        "slowest_rtt": counts.get("Rtt/Mx", 0), "lowest_tflops": counts.get("Etpt/Mn", 0)})
    out["reports"] = reports
    out["share"] = out[["slowest_rtt", "lowest_tflops"]].max(axis=1) / max(reports, 1)
    out["spread_pct"] = float(np.median(spread)) if len(spread) else np.nan
    out.index.name = "rank"
    return out.reset_index().sort_values("share", ascending=False, kind="stable")


def timer_outliers(host_timings: pd.DataFrame, since: int | None,
                   min_rel_pct: float) -> pd.DataFrame:
    """Per-rank Megatron timers (``--timing-log-option all``): each timer's per-rank median and
    robust z against the other ranks (a larger time is slower)."""
    ht = host_timings
    t = ht[ht["metric"].str.startswith("timer:", na=False) & ht["rank"].notna()]
    t = t[~t["metric"].str.endswith((":min", ":max"))]
    if since is not None:
        t = t[t["iteration"].isna() | (t["iteration"] >= since)]
    frames = []
    for name, g in t.groupby("metric"):
        per = g.groupby(g["rank"].astype(int))["value"].median()
        o = peer_outliers(per, 1, min_rel_pct=min_rel_pct)
        o.index.name = "rank"
        frames.append(o.reset_index().assign(timer=str(name)[len("timer:"):]))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def benchmark_outliers(host_timings: pd.DataFrame, min_rel_pct: float) -> pd.DataFrame:
    """Per-host benchmark results (CSV tables): per metric, each host's (or host:gpu's) value and
    robust z against the others, the slow side read from the metric's name."""
    ht = host_timings
    b = ht[ht["host"].notna() & ~ht["metric"].isin(["nodelist"])
           & ~ht["metric"].str.startswith("timer:", na=False)
           & ~ht["metric"].str.fullmatch(STRAGGLER_METRIC, na=False)]
    frames = []
    for name, g in b.groupby("metric"):
        key = g["host"].astype(str)
        if g["rank"].notna().any():
            key = key + ":" + g["rank"].astype("string").fillna("")
        per = g.groupby(key)["value"].median()
        o = peer_outliers(per, metric_direction(str(name)), min_rel_pct=min_rel_pct)
        o.index.name = "peer"
        o = o.reset_index().assign(metric=str(name), direction=metric_direction(str(name)))
        o["host"] = o["peer"].str.split(":", n=1).str[0]
        frames.append(o)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def arrival_lags(collectives: pd.DataFrame, min_lag_ms: float = 5.0) -> pd.DataFrame:
    """From flight-recorder dumps: for each collective (process group, sequence number) seen
    by several ranks, how long after the first rank each rank enqueued it. A rank that keeps
    arriving last is the one the others wait for. Per rank: collectives, median lag over its
    last third (ms), share of collectives it entered last, and whether it is a suspect (its
    recent lag at least ``min_lag_ms`` and 3x the other ranks'). Clock skew between hosts adds
    to lags across hosts; within a host the clock is shared."""
    c = collectives
    fr = c[c["source"].str.contains("#entry", regex=False, na=False) & c["time"].notna()
           & c["rank"].notna() & c["seq_num"].notna()]
    cols = ["rank", "collectives", "lag_ms", "last_share", "suspect", "first_late_seq"]
    if fr["rank"].nunique() < 2:
        return pd.DataFrame(columns=cols)
    fr = fr.assign(_pg=fr["process_group"].fillna("?"),
                   _t=pd.to_datetime(fr["time"]).astype("datetime64[ns]").astype("int64"))
    fr = fr.drop_duplicates(["_pg", "seq_num", "rank"])
    grp = fr.groupby(["_pg", "seq_num"])
    fr = fr.assign(_n=grp["rank"].transform("nunique"))
    fr = fr[fr["_n"] >= 2]
    if not len(fr):
        return pd.DataFrame(columns=cols)
    first = fr.groupby(["_pg", "seq_num"])["_t"].transform("min")
    last = fr.groupby(["_pg", "seq_num"])["_t"].transform("max")
    fr = fr.assign(lag_ms=(fr["_t"] - first) / 1e6, is_last=(fr["_t"] == last) & (last > first))
    rows = []
    for rank, g in fr.sort_values(["_t"]).groupby(fr["rank"].astype(int)):
        lags = g["lag_ms"].to_numpy(dtype=float)
        recent = lags[-max(1, len(lags) // 3) :]
        on_time = np.nonzero(lags < min_lag_ms)[0]
        start = None  # where its current run of late arrivals began
        if lags[-1] >= min_lag_ms:
            start = int(g["seq_num"].iloc[on_time[-1] + 1 if len(on_time) else 0])
        rows.append((rank, len(lags), float(np.median(recent)), float(g["is_last"].mean()),
                     start))
    out = pd.DataFrame(rows, columns=cols[:4] + ["first_late_seq"])
    others = [float(np.median(out["lag_ms"].drop(i))) if len(out) > 1 else 0.0
              for i in out.index]
    out["suspect"] = (out["lag_ms"] >= min_lag_ms) & (out["lag_ms"] >= 3 * np.array(others))
    if len(out) >= 3:
        z = peer_outliers(out.set_index("rank")["lag_ms"], 1, min_rel_pct=0.0)
        out["suspect"] &= z["suspect"].reindex(out["rank"]).fillna(False).to_numpy(dtype=bool)
    return out[cols]


# ---------------------------------------------------------------------------------------------
# 6. bisection
# ---------------------------------------------------------------------------------------------
def plan_table(n: int, spares: int) -> tuple[list[int], list[float], list[int]]:
    """Dynamic programme over candidate-set sizes 0..n: worst-case runs W[c], expected runs E[c]
    (slow node uniformly likely) and the exclusion size K[c] that achieves them (lexicographic
    minimum of worst, then expected). One run excludes k <= spares candidates: a fast run puts
    the slow node among the k, a slow run among the other c - k."""
    s = max(1, int(spares))
    w = [0] * (n + 1)
    e = [0.0] * (n + 1)
    k_best = [0] * (n + 1)
    # W is non-decreasing in c, so k = min(s, c // 2) is always worst-case optimal; the full
    # search (which also minimises the expected runs) is kept for plans of a usual size.
    full = n * min(s, n) <= DP_LIMIT
    for c in range(2, n + 1):
        best: tuple[int, float, int] | None = None
        ks = range(1, min(s, c - 1) + 1) if full else (min(s, c // 2),)
        for k in ks:
            wc = 1 + max(w[k], w[c - k])
            ec = 1 + (k * e[k] + (c - k) * e[c - k]) / c
            if best is None or wc < best[0] or (wc == best[0] and ec < best[1] - 1e-12):
                best = (wc, ec, k)
        assert best is not None
        w[c], e[c], k_best[c] = best
    return w, e, k_best


def worst_case_runs(n: int, spares: int) -> int:
    """Fewest restarts that always find one slow node among ``n`` with ``spares`` spare nodes."""
    if n <= 1:
        return 0
    return plan_table(n, spares)[0][n]


@dataclass
class _Node:
    candidates: list[str]
    exclude: list[str] = field(default_factory=list)
    fast: _Node | None = None
    slow: _Node | None = None
    step: int = 0


def _build(candidates: list[str], k_best: list[int]) -> _Node:
    node = _Node(candidates)
    if len(candidates) > 1:
        k = k_best[len(candidates)]
        node.exclude = candidates[:k]
        node.fast = _build(candidates[:k], k_best)
        node.slow = _build(candidates[k:], k_best)
    return node


def bisect_plan(hosts: list[str] | str, spares: int, job_script: str = "<job script>",
                fast_if: str | None = None) -> dict[str, Any] | None:
    """The restart plan that finds one slow node among ``hosts`` (a list or a hostlist
    expression) excluding at most ``spares`` nodes per run, with the fewest restarts in the
    worst case. Steps are numbered; each says what to exclude (compressed hostlist, quoted for
    the shell), and where to go next if the run is fast (the slow node was excluded) or slow.
    None when there are fewer than 2 hosts or no spare."""
    names = expand(hosts) if isinstance(hosts, str) else list(dict.fromkeys(hosts))
    names = sorted(names, key=natural_key)
    if len(names) < 2 or spares < 1:
        return None
    w, e, k_best = plan_table(len(names), spares)
    root = _build(names, k_best)
    order: list[_Node] = []

    def visit(node: _Node | None) -> None:  # the "still slow" chain first, then sub-plans
        chain = []
        while node is not None and node.exclude:
            chain.append(node)
            node = node.slow
        for c in chain:
            c.step = len(order) + 1
            order.append(c)
        for c in chain:
            visit(c.fast)

    visit(root)

    def outcome(node: _Node | None) -> int | str:
        assert node is not None
        return node.step if node.exclude else f"found: {node.candidates[0]}"

    steps = []
    for node in order:
        excl = compress(node.exclude)
        steps.append({
            "step": node.step,
            "candidates": compress(node.candidates),
            "exclude": excl,
            "sbatch": f"sbatch --exclude='{excl}' {job_script}",
            "if_fast": outcome(node.fast),
            "if_slow": outcome(node.slow),
        })
    return {"hosts": compress(names), "n_hosts": len(names), "spares": int(spares),
            "worst_case_runs": w[len(names)], "expected_runs": round(e[len(names)], 2),
            "fast_if": fast_if, "steps": steps}


def runs_by_spares(n: int, spares: list[int]) -> pd.DataFrame:
    """Worst-case restarts to find one slow node among ``n`` for each number of spares."""
    return pd.DataFrame([(s, worst_case_runs(n, s)) for s in spares],
                        columns=["spare nodes", "worst-case restarts"])


# ---------------------------------------------------------------------------------------------
# 7. cost
# ---------------------------------------------------------------------------------------------
def eta_days(remaining_iterations: int, seconds_per_iteration: float) -> float:
    """Days to run ``remaining_iterations`` at ``seconds_per_iteration`` with no downtime (the
    seed's (115311-12695)*105/(3600*24) = 124.7)."""
    return remaining_iterations * seconds_per_iteration / 86400.0


# ---------------------------------------------------------------------------------------------
# the diagnosis
# ---------------------------------------------------------------------------------------------
@dataclass
class Analysis:
    """Everything the runbook shows: the series, what was set aside, the change, suspects."""

    metric: str | None
    spec: MetricSpec | None
    series: pd.DataFrame
    used: np.ndarray  # positions analysed (not masked for eval/save)
    cleaned: np.ndarray  # analysed values after despiking
    replaced: np.ndarray  # positions (of the analysed ones) replaced as transients
    change: Change | None
    change_position: int | None  # position in ``series``
    events: pd.DataFrame
    discontinuities: pd.DataFrame
    ranks: pd.DataFrame
    stragglers: pd.DataFrame
    timers: pd.DataFrame
    benchmarks: pd.DataFrame
    lags: pd.DataFrame
    requested: str = "auto"  # the metric asked for


def analyse(incident: Incident, metric: str = "auto", min_segment: int = 2,
            threshold: float = 4.0, min_drop_pct: float = 1.0,
            min_lag_ms: float = 5.0) -> Analysis:
    """Series, change point and per-rank/per-host comparisons (no verdict yet)."""
    name = choose_metric(incident, metric, min_points=max(3, 2 * min_segment))
    spec = METRICS.get(name) if name else None
    series = metric_series(incident, name) if name else metric_series(incident, "")
    ev = events(incident)
    disc = discontinuities(series)
    masked = mask_events(series, ev["iteration"].astype(int).tolist())
    used = np.nonzero(~masked)[0]
    vals = series["value"].to_numpy(dtype=float)[used] if len(series) else np.array([])
    cleaned, replaced = despike(vals, max_run=max(1, min_segment - 1))
    change = None
    pos = None
    if spec is not None and len(cleaned):
        change = find_change(cleaned, spec.higher_is_better, min_segment, threshold,
                             min_drop_pct)
        if change is not None:
            pos = int(used[change.index])
    since = int(series["iteration"].iloc[pos]) if pos is not None else None
    ht = incident.tables.get("host_timings")
    if ht is None:
        ht = pd.DataFrame(columns=["host", "rank", "metric", "value", "iteration"])
    ranks = rank_step_times(incident, spec, since, min_drop_pct) if spec else pd.DataFrame()
    return Analysis(name, spec, series, used, cleaned, replaced, change, pos, ev, disc, ranks,
                    straggler_reports(ht, since), timer_outliers(ht, since, min_drop_pct),
                    benchmark_outliers(ht, min_drop_pct),
                    arrival_lags(incident.collectives, min_lag_ms), metric)


def host_list(incident: Incident, hosts: str | list[str] | None) -> tuple[list[str], str]:
    """The job's nodes: the ``hosts`` parameter, else the last SLURM node list in the logs,
    else the real host names the logs carry. Returns (hosts, where they came from); raises
    ValueError for a malformed ``hosts`` expression."""
    if hosts:
        return sorted(expand(hosts), key=natural_key), "the hosts parameter"
    ht = incident.tables.get("host_timings")
    if ht is not None and len(ht):
        nl = ht[ht["metric"] == "nodelist"]
        if len(nl):
            row = nl.iloc[-1]
            try:
                return sorted(expand(str(row["host"])), key=natural_key), f"{row['source']}"
            except ValueError:
                pass
    real = [h for h in incident.hosts if not h.startswith(SYNTHETIC_HOST_PREFIX)]
    return (sorted(real, key=natural_key), "host names in the logs") if len(real) >= 2 else ([], "")


def _r(v: float | None, nd: int = 3) -> float | None:
    return None if v is None or not math.isfinite(v) else round(float(v), nd)


def _seconds_per_iteration(incident: Incident, a: Analysis) -> tuple[float | None, float | None]:
    """Median seconds per iteration before and after the change; with no change, (None, the
    median of the last 50 logged iterations)."""
    if a.spec is not None and a.spec.column == "elapsed_s":
        spi = np.asarray(a.cleaned, dtype=float)
    else:
        steps = _steps(incident)
        if "elapsed_s" not in steps or not steps["elapsed_s"].notna().any():
            return None, None
        per = steps[steps["elapsed_s"].notna()].groupby("iteration")["elapsed_s"].median()
        its = a.series["iteration"].to_numpy()[a.used]
        spi = per.reindex(its).to_numpy(dtype=float, na_value=np.nan)
    if not np.isfinite(spi).any():
        return None, None
    if a.change is None:
        recent = spi[-50:]
        return None, float(np.nanmedian(recent)) if np.isfinite(recent).any() else None
    before, after = spi[: a.change.index], spi[a.change.index :]
    b = float(np.nanmedian(before)) if np.isfinite(before).any() else None
    d = float(np.nanmedian(after)) if np.isfinite(after).any() else None
    return b, d


def diagnose(incident: Incident, metric: str = "auto", hosts: str | list[str] | None = None,
             spare_nodes: int = 3, min_segment: int = 2, threshold: float = 4.0,
             min_drop_pct: float = 1.0, min_lag_ms: float = 5.0,
             job_script: str = "<job script>") -> Report:
    """Diagnose a throughput drop. ``metric``: "auto" or one of ``METRICS``; ``hosts``: the
    job's nodes (hostlist expression or list) when the logs do not name them; ``spare_nodes``:
    idle nodes that can stand in for excluded ones (the bisection excludes at most that many
    per restart); ``min_segment``, ``threshold``, ``min_drop_pct``: the change-point rule."""
    return report_from(analyse(incident, metric, min_segment, threshold, min_drop_pct,
                               min_lag_ms), incident, hosts, spare_nodes, job_script)


def report_from(a: Analysis, incident: Incident, hosts: str | list[str] | None = None,
                spare_nodes: int = 3, job_script: str = "<job script>") -> Report:
    """The Report for an ``analyse`` result (``diagnose`` is both in one call)."""
    facts: dict[str, Any] = {k: None for k in FACT_KEYS}
    facts.update(suspect_ranks=[], suspect_hosts=[], metric=a.metric)
    facts.update(eta_days_at_baseline=None, days_lost=None, shape=None, coincides=[])
    findings: list[Finding] = []
    actions: list[Action] = []
    spec, ch, s = a.spec, a.change, a.series
    if a.requested != "auto" and a.requested != a.metric:
        findings.append(Finding(
            "metric_unavailable", "warning",
            f"metric={a.requested!r} " + ("is not one of " + ", ".join(METRICS)
                                          if a.requested not in METRICS else
                                          "has no data in these logs")
            + (f"; analysed {a.metric} instead" if a.metric else ""), []))

    few = choose_metric(incident, a.requested, min_points=1) if spec is None else None
    if few is not None:  # a metric is logged, too rarely to find a change in it
        facts["metric"] = few
        col = METRICS[few].column
        n = int(_usable(_steps(incident)[col]).sum()) if col in _steps(incident) else 0
        findings.append(Finding(
            "too_few_points", "warning",
            f"Only {n} logged value(s) of {METRICS[few].label}: too few to tell a change from "
            "noise (a change needs a level held over several logged iterations on each side)",
            evidence(incident.iterations.head(5))))
        findings += input_findings(incident)
        actions.append(_log_throughput_action(1))
        return Report("throughput", f"Only {n} logged value(s) of {METRICS[few].label}: too few "
                      "to say whether the job slowed down; log throughput more often or point "
                      "log_path at the whole training log.", "low", facts, findings,
                      ranked(actions))
    if spec is None or not len(s):
        findings.append(Finding(
            "no_metric", "warning",
            "No throughput metric in these logs: no iteration line with TFLOPs, tokens/s, "
            "samples/s or seconds per iteration, and no tqdm bar with a rate",
            evidence(incident.iterations.head(5))))
        findings += input_findings(incident)
        actions.append(_log_throughput_action(1))
        return Report("throughput", "No throughput figures found in the logs; point log_path at "
                      "the training log (the one with the iteration lines).", "low", facts,
                      findings, ranked(actions))

    label = spec.label
    its = s["iteration"].to_numpy(dtype=np.int64)
    # -- the change ------------------------------------------------------------------------
    if ch is not None and a.change_position is not None:
        p = a.change_position
        facts.update(baseline=_r(ch.baseline), degraded=_r(ch.degraded),
                     drop_pct=_r(ch.drop_pct, 2), change_iteration=int(its[p]), shape=ch.shape)
        before = s.iloc[a.used[max(0, ch.index - 3) : ch.index]]
        after = s.iloc[a.used[ch.index : ch.index + 3]]
        onset_it = int(s["iteration"].iloc[a.used[ch.onset]]) if ch.onset is not None else None
        title = (f"{label} fell {ch.drop_pct:.1f}% from {ch.baseline:.4g} to {ch.degraded:.4g} "
                 f"at iteration {its[p]} ({ch.n_before} logged iterations before, {ch.n_after} "
                 f"after; shift {ch.z:.1f} robust standard errors)")
        if ch.shape == "gradual" and onset_it is not None:
            title += f"; a gradual decline that began around iteration {onset_it}"
        findings.append(Finding("throughput_drop", "critical", title,
                                evidence(pd.concat([before, after]))))
        if ch.recovered:
            findings.append(Finding(
                "recovered", "info",
                f"The last logged iterations are back near the baseline ({label}): the slowdown "
                "did not last to the end of the logs", evidence(s.tail(3))))
    else:
        v = a.cleaned
        level = float(np.median(v)) if len(v) else float("nan")
        spread = MAD_TO_SIGMA * float(np.median(np.abs(v - level))) if len(v) else float("nan")
        findings.append(Finding(
            "no_change", "info",
            f"No lasting change in {label}: {len(v)} logged iterations "
            f"({its[0]}–{its[-1]}) stay at {level:.4g} ± {spread:.2g}", evidence(s.tail(3))))

    # -- what coincided ----------------------------------------------------------------------
    _coincidences(a, facts, findings)

    # -- who is slow -------------------------------------------------------------------------
    r2h = rank_hosts(incident)
    suspect_ranks, suspect_hosts = _suspects(a, incident, findings, r2h)
    facts["suspect_ranks"] = sorted(suspect_ranks)
    facts["suspect_hosts"] = sorted(suspect_hosts, key=natural_key)

    # -- bisection ---------------------------------------------------------------------------
    plan = None
    try:
        node_list, where = host_list(incident, hosts)
    except ValueError as e:
        node_list, where = [], ""
        findings.append(Finding("bad_hosts", "warning", f"The hosts parameter is not a valid "
                                f"hostlist: {e}", []))
    if ch is not None and not suspect_hosts and len(node_list) >= 2:
        fast_if = _fast_if(spec, ch)
        plan = bisect_plan(node_list, spare_nodes, job_script, fast_if)
        if plan is None:
            findings.append(Finding(
                "no_spares", "warning", f"{len(node_list)} nodes but spare_nodes={spare_nodes}: "
                "no node can be excluded without shrinking the job", []))
        else:
            findings.append(Finding(
                "bisect_plan", "info",
                f"Bisection over {plan['n_hosts']} nodes ({plan['hosts']}, from {where}) with "
                f"{plan['spares']} spare node(s): at most {plan['worst_case_runs']} restarts "
                f"(~{plan['expected_runs']} on average); a run is fast if {fast_if}", []))
    facts["bisect_plan"] = plan

    # -- cost --------------------------------------------------------------------------------
    _cost(a, incident, facts, findings)

    if ch is not None and not suspect_ranks and not suspect_hosts and _one_view(a, incident):
        findings.append(Finding(
            "one_view", "warning",
            "These logs carry the job's throughput as one number per iteration (one rank "
            "prints it): nothing in them names the slow GPU. Per-rank timing (Megatron "
            "--log-straggler, --timing-log-option all), flight-recorder dumps of every rank, or "
            "a per-node benchmark table would; else bisect the nodes", []))
    findings += input_findings(incident)
    actions = _actions(a, facts, node_list, r2h, job_script, spare_nodes)
    verdict, confidence = _verdict(a, facts)
    return Report("throughput", verdict, confidence, facts, findings, ranked(actions))


def _fast_if(spec: MetricSpec, ch: Change) -> str:
    mid = (ch.baseline + ch.degraded) / 2
    op = ">=" if spec.higher_is_better else "<="
    return f"{spec.label} {op} {mid:.4g} (midway between {ch.baseline:.4g} and {ch.degraded:.4g})"


def _one_view(a: Analysis, incident: Incident) -> bool:
    return (not len(a.ranks) and not len(a.stragglers) and not len(a.timers)
            and not len(a.benchmarks) and not len(a.lags))


def _coincidences(a: Analysis, facts: dict[str, Any], findings: list[Finding]) -> None:
    s, ch = a.series, a.change
    disc = a.discontinuities
    ev = a.events
    if ch is None or a.change_position is None:
        if len(disc):
            findings.append(Finding(
                "discontinuities", "info",
                f"{len(disc)} restart(s)/gap(s) in the iteration numbers: "
                + ", ".join(f"{k} {f}→{t}" for k, f, t in
                            list(zip(disc["kind"], disc["from_iteration"], disc["to_iteration"],
                                     strict=False))[:5]), evidence(disc)))
        return
    p = a.change_position
    prev_pos = int(a.used[ch.index - 1]) if ch.index >= 1 else p
    lo_it, hi_it = int(s["iteration"].iloc[prev_pos]), int(s["iteration"].iloc[p])
    near = disc[(disc["position"] > prev_pos) & (disc["position"] <= p)] if len(disc) else disc
    hits = []
    if len(near):
        for kind in near["kind"].unique():
            hits.append(kind)
        findings.append(Finding(
            "change_at_restart", "warning",
            f"The change coincides with a {'/'.join(near['kind'].unique())} between iterations "
            f"{lo_it} and {hi_it}: a restart can land on different nodes — compare the node "
            "lists of the two allocations", evidence(near)))
    ev_near = ev[(ev["iteration"] >= lo_it - 1) & (ev["iteration"] <= hi_it)] if len(ev) else ev
    if len(ev_near):
        kinds = sorted(set(ev_near["kind"]))
        hits += kinds
        findings.append(Finding(
            "change_at_event", "warning",
            f"An {' and '.join(kinds)} happened at the change (iteration "
            f"{int(ev_near['iteration'].iloc[0])}): check that the slowdown outlasts it",
            evidence(ev_near)))
    facts["coincides"] = hits
    if not hits:
        parts = []
        run_ok = not len(disc) or not len(disc[disc["position"] <= p + ch.n_after])
        parts.append("no restart or gap in the iteration numbers" if run_ok
                     else "no restart or gap at the change")
        if len(ev):
            parts.append(f"no eval or checkpoint save at the change (the logs show "
                         f"{len(ev)} of them elsewhere)")
        else:
            parts.append("no eval or checkpoint line in these logs (so none can be ruled in or "
                         "out)")
        findings.append(Finding("nothing_coincides", "info",
                                "Nothing coincides with the change: " + "; ".join(parts), []))
    n_set_aside = int(len(s) - len(a.used))
    n_replaced = int(a.replaced.sum())
    if n_set_aside or n_replaced:
        findings.append(Finding(
            "transients", "info",
            f"{n_set_aside} iteration(s) right after eval/save and {n_replaced} isolated slow "
            "iteration(s) were set aside as transients (not a lasting change)",
            evidence(s.iloc[a.used[a.replaced]], limit=5)))


def _suspects(a: Analysis, incident: Incident, findings: list[Finding],
              r2h: dict[int, str]) -> tuple[set[int], set[str]]:
    ranks: set[int] = set()
    hosts: set[str] = set()
    spec = a.spec
    assert spec is not None
    if len(a.ranks):
        sus = a.ranks[a.ranks["suspect"]]
        if len(sus):
            ranks |= set(int(r) for r in sus["rank"])
            findings.append(Finding(
                "slow_ranks_iterations", "critical",
                "Per-rank iteration figures: rank(s) "
                + ", ".join(f"{int(r)} ({v:.4g} {spec.label}, z={z:.1f})" for r, v, z in
                            zip(sus["rank"], sus["value"], sus["z"], strict=False))
                + " are slower than their peers", []))
    if len(a.stragglers):
        st = a.stragglers
        top = st.iloc[0]
        reports = int(top["reports"])
        spread = float(top["spread_pct"]) if pd.notna(top["spread_pct"]) else 0.0
        if reports >= 2 and top["share"] >= 0.6 and spread >= 1.0:
            ranks.add(int(top["rank"]))
            findings.append(Finding(
                "straggler_detector", "critical",
                f"Megatron's straggler detector names rank {int(top['rank'])} the slowest in "
                f"{top['share']:.0%} of {reports} reports (max/min RTT spread {spread:.1f}%)",
                evidence(_ht_rows(incident, "Rtt/Mx"), limit=5)))
        else:
            findings.append(Finding(
                "straggler_detector", "info",
                f"Megatron's straggler detector: no rank is consistently the slowest "
                f"({reports} report(s), top rank {int(top['rank'])} in {top['share']:.0%}, "
                f"spread {spread:.1f}%)", []))
    if len(a.timers):
        sus = a.timers[a.timers["suspect"]]
        if len(sus):
            ranks |= set(int(r) for r in sus["rank"])
            findings.append(Finding(
                "slow_ranks_timers", "critical",
                "Per-rank Megatron timers: "
                + "; ".join(f"rank {int(r)} {t} {v:.1f} ms (z={z:.1f})" for r, t, v, z in
                            zip(sus["rank"], sus["timer"], sus["value"], sus["z"], strict=False)),
                []))
    if len(a.benchmarks):
        sus = a.benchmarks[a.benchmarks["suspect"]]
        if len(sus):
            hosts |= set(sus["host"])
            findings.append(Finding(
                "slow_hosts_benchmark", "critical",
                "Benchmark: "
                + "; ".join(f"{p} {m} {v:.4g} ({rel:+.1f}% slower than the median, z={z:.1f})"
                            for p, m, v, rel, z in zip(sus["peer"], sus["metric"], sus["value"],
                                                       sus["rel_pct"], sus["z"], strict=False)),
                evidence(_benchmark_rows(incident, set(sus["host"])), limit=10)))
        undirected = a.benchmarks[a.benchmarks["direction"] == 0]["metric"].unique()
        if len(undirected):
            findings.append(Finding(
                "benchmark_metric_unknown", "info",
                f"Benchmark column(s) {', '.join(map(str, undirected))}: the name does not say "
                "whether larger is slower; name it seconds/time or tflops/throughput", []))
    if len(a.lags):
        sus = a.lags[a.lags["suspect"]]
        if len(sus):
            ranks |= set(int(r) for r in sus["rank"])
            findings.append(Finding(
                "late_ranks", "critical",
                "Flight recorder: "
                + "; ".join(f"rank {int(r)} enqueues collectives {lag:.0f} ms after the first "
                            f"rank (last in {share:.0%} of {n})" + (
                                f", from collective #{int(first)} on" if pd.notna(first) else "")
                            for r, lag, share, n, first in
                            zip(sus["rank"], sus["lag_ms"], sus["last_share"],
                                sus["collectives"], sus["first_late_seq"], strict=False))
                + ": the other ranks wait for it", []))
    hosts |= {r2h[r] for r in ranks if r in r2h}
    return ranks, hosts


def _ht_rows(incident: Incident, metric: str) -> pd.DataFrame:
    ht = incident.tables.get("host_timings")
    return ht[ht["metric"] == metric] if ht is not None else pd.DataFrame()


def _benchmark_rows(incident: Incident, hosts: set[str]) -> pd.DataFrame:
    ht = incident.tables.get("host_timings")
    return ht[ht["host"].isin(list(hosts))] if ht is not None else pd.DataFrame()


def _cost(a: Analysis, incident: Incident, facts: dict[str, Any],
          findings: list[Finding]) -> None:
    steps = _steps(incident)
    with_total = steps[steps["total_iterations"].notna()]
    if not len(with_total):
        return
    last = with_total.loc[with_total["iteration"].idxmax()] if a.series["run"].max() == 0 else \
        with_total.iloc[-1]
    remaining = int(last["total_iterations"]) - int(last["iteration"])
    if remaining < 0:
        return
    facts["remaining_iterations"] = remaining
    base_spi, cur_spi = _seconds_per_iteration(incident, a)
    if cur_spi is None:
        return
    facts["eta_days"] = _r(eta_days(remaining, cur_spi), 2)
    if remaining == 0:
        findings.append(Finding("eta", "info", f"The job reached its last iteration "
                                f"({int(last['iteration'])}): nothing remains to lose",
                                [f"{last['source']}: {last['line']}"]))
        return
    text = (f"{remaining} iterations remain (of {int(last['total_iterations'])}): "
            f"{facts['eta_days']} days at the current {cur_spi:.4g} s/iteration")
    if a.change is not None and base_spi is not None:
        facts["eta_days_at_baseline"] = _r(eta_days(remaining, base_spi), 2)
        facts["days_lost"] = _r(facts["eta_days"] - facts["eta_days_at_baseline"], 2)
        text += (f", {facts['eta_days_at_baseline']} at the baseline {base_spi:.4g} s/iteration: "
                 f"the slowdown costs {facts['days_lost']} days if left alone")
    findings.append(Finding("eta", "info", text, [f"{last['source']}: {last['line']}"]))


def _verdict(a: Analysis, f: dict[str, Any]) -> tuple[str, str]:
    spec, ch = a.spec, a.change
    assert spec is not None
    if ch is None:
        n = len(a.cleaned)
        return (f"No lasting throughput drop in {n} logged iterations ({spec.label} steady); "
                "if the job feels slow, compare with an earlier healthy run's figures.",
                "medium" if n >= 20 else "low")
    what = (f"{spec.label} dropped {ch.drop_pct:.1f}% ({ch.baseline:.4g} → {ch.degraded:.4g}) at "
            f"iteration {f['change_iteration']}")
    what += " and recovered later" if ch.recovered else ""
    if f["coincides"]:
        what += f", coinciding with {'/'.join(f['coincides'])}"
    who = ""
    if f["suspect_hosts"] or f["suspect_ranks"]:
        names = [f"node {h}" for h in f["suspect_hosts"]] or [f"rank {r}" for r in
                                                            f["suspect_ranks"]]
        who = f"; slow: {', '.join(names)}"
    elif f["bisect_plan"]:
        bp = f["bisect_plan"]
        who = (f"; nothing names the slow node — bisect {bp['n_hosts']} nodes in at most "
               f"{bp['worst_case_runs']} restarts ({bp['spares']} spares), starting with "
               f"--exclude='{bp['steps'][0]['exclude']}'")
    else:
        who = "; nothing in these logs names the slow rank or node"
    cost = ""
    if f["days_lost"] is not None and f["remaining_iterations"]:
        cost = f"; it costs {f['days_lost']} days over the remaining {f['remaining_iterations']} iterations"
    strong = ch.z >= 2 * 4.0 and ch.n_after >= 5
    named = bool(f["suspect_hosts"] or f["suspect_ranks"])
    confidence = "high" if strong and (named or not f["coincides"]) else "medium"
    return what + who + cost + ".", confidence


def _log_throughput_action(prio: int) -> Action:
    return Action(
        "log_throughput", prio, "Log throughput per iteration (and per rank) next time",
        "Without per-iteration throughput the drop cannot be dated or sized; without per-rank "
        "figures the slow GPU cannot be named.",
        "Megatron: --log-interval 1 --log-throughput --log-straggler --straggler-minmax-count 4 "
        "--timing-log-option all; torchtitan: --metrics.log_freq 1; HF Trainer: logging_steps=1")


def _actions(a: Analysis, f: dict[str, Any], node_list: list[str], r2h: dict[int, str],
             job_script: str, spares: int) -> list[Action]:
    acts: list[Action] = []
    ch = a.change
    if ch is None:
        acts.append(Action(
            "compare_baseline", 1, "Compare with a healthy run before hunting a slow node",
            "The logs show no lasting drop; a job that is uniformly slow from the start points "
            "at configuration (batch size, parallelism, data loader) rather than a sick GPU.",
            "compare TFLOPs/tokens-per-s with the last good run of the same config; check "
            "dataloader workers and host CPU with py-spy dump on one rank"))
        acts.append(_log_throughput_action(2))
        return acts
    sus_hosts, sus_ranks = f["suspect_hosts"], f["suspect_ranks"]
    nodes = compress(sus_hosts) if sus_hosts else None
    if nodes:
        acts.append(Action(
            "exclude_suspect", 1, f"Exclude {nodes} and restart from the last checkpoint",
            f"{nodes} is slower than its peers (see the findings): with synchronous training "
            "every rank waits for the slowest, so one slow GPU slows the whole job.",
            f"sbatch --exclude='{nodes}' {job_script}  # then check {a.spec.label if a.spec else ''}"
            f" is back near {f['baseline']}"))
        acts.append(Action(
            "check_clocks_suspect", 2, f"Check clocks and throttling on {nodes}",
            "A GPU that throttles (thermal, power brake, HW slowdown) or runs at reduced clocks "
            "is the usual cause of one slow node with a healthy network.",
            f"srun -w '{nodes}' --ntasks-per-node=1 nvidia-smi -q -d PERFORMANCE,CLOCK  # look at "
            "'Clocks Event Reasons' (HW Slowdown, HW Thermal Slowdown, HW Power Brake) and SM "
            "clocks below the others"))
        acts.append(Action(
            "burn_suspect", 3, f"Benchmark {nodes}'s GPUs against a healthy node",
            "Confirms the hardware fault before handing the node to the admins (BLOOM's slow GPU "
            "showed 303.6 s vs ~296.5 s on a node benchmark: 2.5%).",
            f"srun -w '{nodes}' --ntasks-per-node=1 dcgmi diag -r 3  # or gpu_burn -d 120 on each "
            "GPU; report the node with the numbers"))
    elif sus_ranks:
        r = sus_ranks[0]
        acts.append(Action(
            "locate_rank", 1, f"Find the node of rank {r} and exclude it",
            f"Rank(s) {sus_ranks} are slower than their peers but the logs do not say which node "
            "ran them.",
            f"with srun's block distribution rank {r} runs on node number {r} // GPUS_PER_NODE "
            "of `scontrol show hostnames $SLURM_JOB_NODELIST`; or grep the launcher log for "
            f"'[rank{r}]'/hostname; then sbatch --exclude=<that node> {job_script}"))
        acts.append(Action(
            "check_clocks_rank", 2, f"Check clocks and throttling on rank {r}'s GPU",
            "A throttling or down-clocked GPU is the usual cause of one slow rank.",
            "on its node: nvidia-smi -q -d PERFORMANCE,CLOCK -i <local GPU index>  # Clocks Event "
            "Reasons, SM clock vs the others"))
    else:
        n = len(node_list)
        acts.append(Action(
            "sweep_all_nodes", 1, "Check every node's GPU clocks and throttle reasons in one go",
            "One command on all nodes usually finds a throttling or down-clocked GPU without a "
            "single restart (the bisection below costs one restart per step).",
            ("srun --overlap --jobid $SLURM_JOB_ID --ntasks-per-node=1 --output=smi-%N.out "
             "nvidia-smi --query-gpu=index,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,"
             "clocks_throttle_reasons.active --format=csv,noheader  # a GPU whose SM clock is "
             "below its peers' or whose reasons mask is not 0x0000000000000000 (idle excepted) is "
             "the suspect; newer drivers name the field clocks_event_reasons.active; then on that "
             "node: nvidia-smi -q -d PERFORMANCE,CLOCK")))
        acts.append(Action(
            "benchmark_all_nodes", 2, "Benchmark all nodes in parallel and rerun this runbook "
            "with the table",
            "A per-node benchmark (same matmul on every GPU) names the slow node in one run; "
            "feed its CSV (host,seconds) to log_path together with the training log.",
            "(echo host,seconds; srun --nodes=$SLURM_NNODES --ntasks-per-node=1 python -m "
            "traindoc.gpubench) > bench.csv  # the slowest GPU's seconds per node; --per-gpu "
            "for one line per GPU"))
        bp = f["bisect_plan"]
        if bp:
            first = bp["steps"][0]
            acts.append(Action(
                "bisect", 3, f"Bisect the {n} nodes: restart with {first['sbatch']}",
                f"Nothing names the slow node; excluding at most {bp['spares']} node(s) per "
                f"restart finds it in at most {bp['worst_case_runs']} restarts. A run is fast if "
                f"{bp['fast_if']} after warm-up.",
                "; ".join(f"step {st['step']}: {st['sbatch']} -> fast: {st['if_fast']}, slow: "
                          f"{st['if_slow']}" for st in bp["steps"][:4])
                + (" … (all steps in summary.json facts.bisect_plan)" if len(bp["steps"]) > 4
                   else "")))
        elif not node_list:
            acts.append(Action(
                "get_nodelist", 3, "Get the job's node list to plan a bisection",
                "The logs name no nodes; the runbook needs them (parameter hosts) to plan which "
                "nodes to exclude on each restart.",
                "sacct -j $SLURM_JOB_ID -o NodeList%400 -X  # then rerun with "
                "hosts='<that list>' spare_nodes=<idle nodes you can use>"))
        acts.append(Action(
            "per_rank_timing", 4, "Turn on per-rank timing so the next drop names its rank",
            "One rank's throughput line cannot say which GPU is slow; per-rank timings can.",
            "Megatron: --log-straggler --straggler-minmax-count 4 and --timing-log-option all; "
            "any job: TORCH_NCCL_TRACE_BUFFER_SIZE=2000 and dump the flight recorder from every "
            "rank (its enqueue times show who arrives last)"))
    if f["coincides"]:
        acts.append(Action(
            "check_coincidence", 5, "Rule out the event at the change",
            f"The change coincides with {'/'.join(f['coincides'])}: a restart may have landed on "
            "other nodes; an eval or a save is a transient slowdown.",
            "sacct -j <old>,<new> -o JobID,NodeList%400  # compare the node lists; and watch the "
            "next iterations for recovery"))
    return acts


# ---------------------------------------------------------------------------------------------
# small tables for the runbook
# ---------------------------------------------------------------------------------------------
def change_table(report: Report) -> pd.DataFrame:
    """The change-point facts as a two-column table."""
    f = report.facts
    items = [("metric", f["metric"]), ("baseline", f["baseline"]), ("degraded", f["degraded"]),
             ("throughput lost (%)", f["drop_pct"]), ("change at iteration", f["change_iteration"]),
             ("shape", f.get("shape")), ("coincides with", ", ".join(f.get("coincides") or [])
                                         or "nothing")]
    return pd.DataFrame(items, columns=["what", "value"]).astype({"value": "string"})


def set_aside(a: Analysis) -> pd.DataFrame:
    """Series rows not used as they are: masked for eval/save, or replaced as transients."""
    if not len(a.series):
        return a.series
    keep = np.ones(len(a.series), dtype=bool)
    keep[a.used] = False
    keep[a.used[a.replaced]] = True
    return a.series[keep]


def peers(a: Analysis) -> pd.DataFrame:
    """Every per-rank / per-host comparison in one table: source, measure, who, value, z,
    suspect (most telling source first: benchmarks, arrival lags, timers, iteration lines)."""
    frames = []
    if len(a.benchmarks):
        b = a.benchmarks
        frames.append(pd.DataFrame({"source": "benchmark table", "measure": b["metric"],
                                    "who": b["peer"], "value": b["value"], "z": b["z"],
                                    "suspect": b["suspect"]}))
    if len(a.lags):
        lg = a.lags
        frames.append(pd.DataFrame({"source": "flight recorder", "measure":
                                    "arrival lag (ms, recent median)",
                                    "who": "rank " + lg["rank"].astype(str), "value": lg["lag_ms"],
                                    "z": np.nan, "suspect": lg["suspect"]}))
    if len(a.timers):
        t = a.timers
        frames.append(pd.DataFrame({"source": "Megatron timers", "measure": "timer " + t["timer"]
                                    + " (ms)", "who": "rank " + t["rank"].astype(str),
                                    "value": t["value"], "z": t["z"], "suspect": t["suspect"]}))
    if len(a.stragglers):
        st = a.stragglers
        frames.append(pd.DataFrame({"source": "straggler detector", "measure":
                                    "share of reports as slowest", "who": "rank " +
                                    st["rank"].astype(str), "value": st["share"], "z": np.nan,
                                    "suspect": False}))
    if len(a.ranks) and a.spec is not None:
        r = a.ranks
        frames.append(pd.DataFrame({"source": "iteration lines", "measure": a.spec.label,
                                    "who": "rank " + r["rank"].astype(str), "value": r["value"],
                                    "z": r["z"], "suspect": r["suspect"]}))
    if not frames:
        return pd.DataFrame(columns=["source", "measure", "who", "value", "z", "suspect"])
    return pd.concat(frames, ignore_index=True)


def plan_frame(plan: dict[str, Any] | None) -> pd.DataFrame:
    """The bisection steps as a table."""
    if not plan:
        return pd.DataFrame(columns=["step", "exclude", "sbatch", "if_fast", "if_slow"])
    return pd.DataFrame(plan["steps"])[["step", "exclude", "sbatch", "if_fast", "if_slow"]]


__all__ = ["AUTO_ORDER", "Analysis", "Change", "FACT_KEYS", "METRICS", "MetricSpec", "analyse",
           "arrival_lags", "benchmark_outliers", "bisect_plan", "choose_metric", "despike",
           "diagnose", "discontinuities", "drop_pct", "eta_days", "events", "find_change",
           "host_list", "mask_events", "metric_series", "peer_outliers", "plan_table",
           "peers", "plan_frame", "rank_hosts", "rank_step_times", "report_from", "runs_by_spares",
           "set_aside", "change_table", "straggler_reports",
           "timer_outliers", "worst_case_runs"]
