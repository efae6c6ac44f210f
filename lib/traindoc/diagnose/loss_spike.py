"""Loss and grad-norm spikes, NaN and skipped iterations, fp16 loss-scale collapses.

The loss of a healthy run falls, noisily. A spike is measured against a robust baseline that
follows that fall: the median of the preceding ``window`` logged points, or of their recent
half when that is lower (on a falling curve the full median lags half a window behind), with
a scale of 1.4826·MAD (the standard deviation, were the noise Gaussian) of the values or of
the steps (/√2; a steep fall inflates the former, not the latter), whichever is smaller,
floored at a small fraction of the baseline. A point above ``baseline + max(onset_k·scale, onset_rel·baseline)`` opens an
excursion; the baseline is then frozen; the excursion ends (recovered) when ``patience``
consecutive points are back within ``max(recover_k·scale, recover_rel·baseline)`` of that
pre-spike baseline (the log ending on such points counts, flagged). It is a spike when
its peak clears ``baseline + max(k·scale, rel·baseline)``; both margins are widened while the
history is short (few points, wider margin), and a spike is also over once the loss is back
down ``recover_frac`` of its height. Points inside spikes are left out of later baselines.

Grad norms run the same detector on ``log(grad norm)`` with factor thresholds (2× opens,
4× confirms); a grad-norm excursion that opened before the loss's and was still open when the
loss left its baseline *led* the loss — the usual sign of an optimizer instability (Adam's
second moment too small for a sudden large gradient) rather than of one bad batch, which moves
both in the same iteration.

What to do follows PaLM (Chowdhery et al. 2022, §5.1: restart ~100 steps before the spike and
skip 200–500 batches) and the BigScience runs (``--skip-train-iteration-range``): keep going
when the spike recovered; otherwise roll back to the last checkpoint before its first sign and
skip the batches that led into it.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from ..incident import Incident
from ..report import Action, Finding, Report, evidence, ranked
from .common import input_findings, place_unnumbered_skips

FACT_KEYS = ("spikes", "grad_norm_leads", "nan_iterations", "skipped_iterations",
             "rollback_iteration")
SERIES_COLUMNS = ("iteration", "loss", "grad_norm", "lr", "loss_scale", "skipped", "nan",
                  "consumed_samples", "consumed_tokens", "global_batch_size", "source", "line")
# A loss or grad norm printed as nan/inf ("lm loss: NAN", "'loss': nan"): the nullable table
# keeps NaN as <NA>, so the line's text says whether the value was NaN or simply not logged.
NAN_TEXT_RE = re.compile(
    r"(?:loss|grad[ _-]?norm)['\"]?\s*[:=]\s*['\"]?[-+]?(?:nan|inf)", re.IGNORECASE)
MEGATRON_COUNTERS_RE = re.compile(r"\biteration\s+\d+\s*/.*number of nan iterations")
MAX_LISTED = 500  # nan/skipped iterations listed in facts (the findings give the totals)
MAD_TO_SIGMA = 1.4826
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


# -- the series ------------------------------------------------------------------------------
def series(incident: Incident) -> pd.DataFrame:
    """One row per iteration: the metrics of every line or export row for it, the last value
    logged winning (a restarted job's rerun replaces the first attempt; per-tag exports merge);
    ``loss``/``grad_norm`` are float with NaN for not logged, ``is_nan`` flags NaN/inf."""
    it = place_unnumbered_skips(incident)
    cols = list(SERIES_COLUMNS)
    if not len(it) or it["iteration"].notna().sum() == 0 or (
            "event" in it.columns and not (it["iteration"].notna() & it["event"].isna()).any()):
        out = pd.DataFrame({c: pd.Series(dtype="float64") for c in cols})
        out["iteration"] = out["iteration"].astype("int64")
        out["is_nan"] = pd.Series(dtype=bool)
        return out
    steps = it["iteration"].notna()
    if "event" in it.columns:  # eval results and end-of-run summaries are not steps
        steps &= it["event"].isna()
    df = it.loc[steps, cols].copy()
    text_nan = df["line"].fillna("").str.contains(NAN_TEXT_RE)
    inf = pd.Series(False, index=df.index)
    for c in ("loss", "grad_norm"):
        v = df[c].astype("Float64")
        inf |= v.notna().to_numpy() & ~np.isfinite(v.to_numpy(dtype=float, na_value=0.0))
    # a NaN read from text arrives as <NA> (not logged): the line's own words tell them apart
    # Megatron prints no "lm loss" for an interval whose steps all failed: with no step
    # skipped (fp16 overflow), the missing loss is the NaN (its counters can miss it)
    no_loss = (df["loss"].isna() & (df["skipped"].fillna(0) == 0)
               & df["line"].fillna("").str.contains(MEGATRON_COUNTERS_RE))
    df["_nan"] = ((text_nan & (df["loss"].isna() | df["grad_norm"].isna())) | inf | no_loss
                  | (df["nan"].fillna(0) > 0))
    df["_order"] = np.arange(len(df))
    df = df.sort_values(["iteration", "_order"], kind="stable")
    g = df.groupby("iteration", sort=True)
    out = g[[c for c in cols if c != "iteration"]].last().reset_index()
    out["is_nan"] = g["_nan"].any().to_numpy()
    out["iteration"] = out["iteration"].astype("int64")
    for c in ("loss", "grad_norm", "lr", "loss_scale"):
        out[c] = out[c].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    return out


# -- the detector ----------------------------------------------------------------------------
def rolling_stats(y: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each point: median, 1.4826·MAD and count of the finite values among the ``window``
    points before it (NaN entries are left out)."""
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


def _scan(y: np.ndarray, det: Detector, med: np.ndarray, mad: np.ndarray,
          cnt: np.ndarray, carried: np.ndarray, dscale: np.ndarray) -> list[Excursion]:
    # Follow a falling curve with the recent half's median (never up: a slow rise stays visible).
    with np.errstate(invalid="ignore"):
        med = np.where(carried < med, carried, med)
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
        strict = b + max(det.k * s, det.rel * u) * widen
        peak, run, first, end = int(c), 0, None, None
        j = int(c) + 1
        while j < n:
            v = y[j]
            if v > y[peak]:
                peak = j
            if v <= max(tol, b + det.recover_frac * (y[peak] - b)):
                if run == 0:
                    first = j
                run += 1
                if run >= det.patience:
                    end = first
                    break
            else:
                run = 0
            j += 1
        tentative = end is None and run > 0
        if tentative:
            end = first
        out.append(Excursion(int(c), peak, end, b, s, h, bool(y[peak] > strict), tentative))
        resume = j + 1 if end is not None else n
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
        masked[e.start : (e.end if e.end is not None else len(y))] = np.nan
    return _scan(y, det, *rolling_stats(masked, det.window), *rolling_trend(masked, det.window))


# -- spikes ----------------------------------------------------------------------------------
def _num(v: Any) -> float | None:
    if v is None or v is pd.NA:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _int(v: Any) -> int | None:
    f = _num(v)
    return None if f is None else int(f)


def _at(s: pd.DataFrame, iteration: int, col: str) -> Any:
    row = s.loc[s["iteration"] == iteration, col]
    return row.iloc[0] if len(row) else None


def consumed_before(s: pd.DataFrame, iteration: int, col: str) -> int | None:
    """``col`` (consumed_samples / consumed_tokens) just before ``iteration``'s batch: the
    previous iteration's value, else this one's less one batch."""
    prev = _int(_at(s, iteration - 1, col))
    if prev is not None:
        return prev
    here = _int(_at(s, iteration, col))
    gbs = _int(_at(s, iteration, "global_batch_size"))
    if here is None or gbs is None:
        return None
    if col == "consumed_samples":
        return here - gbs
    samples = _int(_at(s, iteration, "consumed_samples"))
    earlier = s[(s["iteration"] < iteration) & s["consumed_samples"].notna()
                & s["consumed_tokens"].notna()]
    if len(earlier) and samples is not None:
        p = earlier.iloc[-1]
        ds = samples - int(p["consumed_samples"])
        per = (here - int(p["consumed_tokens"])) / ds if ds > 0 else None
    else:
        per = here / samples if samples else None
    return None if per is None else int(round(here - gbs * per))


def data_window(s: pd.DataFrame, first: int, last: int) -> dict[str, Any]:
    """Iterations ``first..last`` and the consumed samples/tokens their batches span, as
    half-open ranges ``[start, end)``; a bound that cannot be known is None."""
    return {
        "iterations": [first, last],
        "samples": [consumed_before(s, first, "consumed_samples"),
                    _int(_at(s, last, "consumed_samples"))],
        "tokens": [consumed_before(s, first, "consumed_tokens"),
                   _int(_at(s, last, "consumed_tokens"))],
    }


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
    lex = [e for e in excursions(ly, loss_det) if e.confirmed]
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
        gmax = _num(win["grad_norm"].max()) if win["grad_norm"].notna().any() else None
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
            "grad_norm_leads": leads if gmax is not None else None,
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


# -- NaN, skipped, loss scale, learning rate, gaps -------------------------------------------
def nan_iterations(s: pd.DataFrame) -> list[int]:
    """Iterations whose loss or grad norm was NaN/inf, or that Megatron counted as NaN."""
    return [int(i) for i in s.loc[s["is_nan"], "iteration"]]


def skipped_iterations(s: pd.DataFrame) -> list[int]:
    """Iterations whose line counted skipped iterations (fp16 overflow: the optimizer step
    was skipped and the loss scale lowered). A line that counts every iteration of its
    logging interval as skipped (Megatron's "number of skipped iterations: 10" at iteration 10
    after 0) stands for all of them; otherwise which ones is unknown and the line's own
    iteration is listed."""
    sk = pd.to_numeric(s["skipped"], errors="coerce").fillna(0).astype(int).tolist()
    its = [int(i) for i in s["iteration"]]
    out: list[int] = []
    for j, (it, k) in enumerate(zip(its, sk, strict=True)):
        if k <= 0:
            continue
        prev = its[j - 1] if j else 0
        out.extend(range(it - k + 1, it + 1) if k > 1 and it - prev == k else [it])
    return out


def loss_scale_collapses(s: pd.DataFrame, halvings: int = 4,
                         floor: float = 1.0) -> list[dict[str, Any]]:
    """Runs where the fp16 loss scale only fell, by ``2**halvings`` or more or down to
    ``floor``: overflows on every step, the scaler halving without ever growing back."""
    ls = s[["iteration", "loss_scale"]].dropna()
    ls = ls[ls["loss_scale"] > 0]
    out: list[dict[str, Any]] = []
    if len(ls) < 2:
        return out
    it, v = ls["iteration"].to_numpy(), ls["loss_scale"].to_numpy(dtype=float)
    a = 0
    for i in range(1, len(v) + 1):
        if i < len(v) and v[i] <= v[i - 1]:
            continue
        while a + 1 < i and v[a + 1] >= v[a]:  # the collapse starts where the plateau ends
            a += 1
        lo = v[i - 1]
        if v[a] > lo and (v[a] / lo >= 2 ** halvings or lo <= floor):
            out.append({"start_iteration": int(it[a]), "end_iteration": int(it[i - 1]),
                        "from": float(v[a]), "to": float(lo),
                        "halvings": round(math.log2(v[a] / lo), 2)})
        a = i
    return out


def lr_jump(s: pd.DataFrame, first: int, peak: int, factor: float = 1.5,
            before: int = 3) -> dict[str, Any] | None:
    """A learning-rate step up by ``factor`` or more between consecutive logged points, from
    ``before`` points ahead of ``first`` to ``peak`` (a scheduler reset or a wrong LR on
    resume); warmup's gentle ramp does not qualify."""
    lr = s[["iteration", "lr"]].dropna()
    lr = lr[lr["lr"] > 0]
    if len(lr) < 2:
        return None
    pos = int(np.searchsorted(lr["iteration"].to_numpy(), first))
    sub = lr.iloc[max(pos - before, 0) :]
    sub = sub[sub["iteration"] <= peak]
    if len(sub) < 2:
        return None
    v, its = sub["lr"].to_numpy(dtype=float), sub["iteration"].to_numpy()
    ratio = v[1:] / v[:-1]
    k = int(np.argmax(ratio))
    if ratio[k] < factor:
        return None
    return {"iteration": int(its[k + 1]), "from": float(v[k]), "to": float(v[k + 1]),
            "ratio": float(ratio[k])}


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


def gaps(s: pd.DataFrame, first: int, last: int) -> list[tuple[int, int]]:
    """Runs of iterations missing from the log between ``first`` and ``last`` (wider than
    twice the usual logging stride), as (first missing, last missing)."""
    its = s["iteration"].to_numpy()
    if len(its) < 2:
        return []
    d = np.diff(its)
    stride = max(int(np.median(d)), 1)
    out = []
    for k in np.flatnonzero(d > 2 * stride):
        a, b = int(its[k]) + 1, int(its[k + 1]) - 1
        if b >= first and a <= last:
            out.append((a, b))
    return out


# -- checkpoints -----------------------------------------------------------------------------
def checkpoint_iterations(incident: Incident) -> list[int]:
    """Iterations with a saved (or loaded) checkpoint, from the ``checkpoints`` table when
    the logs had checkpoint lines; failed saves are left out."""
    ck = incident.tables.get("checkpoints")
    if ck is None or not isinstance(ck, pd.DataFrame) or not len(ck):
        return []
    col = next((c for c in ("iteration", "step", "global_step") if c in ck.columns), None)
    if col is None:
        return []
    rows = ck
    if "kind" in ck.columns:  # save_start | saved | loaded: a started save may never finish
        kind = ck["kind"].astype("string")
        rows = ck[~kind.str.contains("fail|error|abort", case=False, na=False, regex=True)]
        done = rows[~rows["kind"].astype("string").str.contains("start", case=False, na=False)]
        rows = done if len(done) else rows
    vals = pd.to_numeric(rows[col], errors="coerce").dropna()
    return sorted({int(v) for v in vals if v >= 0})


def rollback_point(first_bad: int, checkpoints: list[int],
                   checkpoint_interval: int | None = None) -> int | None:
    """The last checkpoint strictly before ``first_bad`` (the state before its batch): from
    the checkpoint lines, else the last multiple of ``checkpoint_interval``."""
    before = [c for c in checkpoints if c < first_bad]
    if before:
        return max(before)
    if checkpoint_interval and checkpoint_interval > 0:
        r = ((first_bad - 1) // checkpoint_interval) * checkpoint_interval
        return r if r > 0 else None
    return None


# -- the diagnosis ---------------------------------------------------------------------------
def _g(v: float | None) -> str:
    if v is None:
        return "?"
    return f"{v:.4g}" if abs(v) < 1e5 else f"{v:.3g}"


def _p(v: float | None) -> str:
    """A logged value as printed (up to 7 significant digits)."""
    return "?" if v is None else f"{v:.7g}"


def _its(n: int | None) -> str:
    return f"{n} iteration" + ("" if n == 1 else "s")


def _range(r: list[Any]) -> str:
    return f"{r[0]}–{r[1]}" if r[0] is not None and r[1] is not None else "unknown"


def grad_path(s: pd.DataFrame, first: int, peak: int, limit: int = 8) -> str:
    """'0.242 → 0.947 → … → 960.4': grad norms from ``first - 1`` up to their peak."""
    w = s[(s["iteration"] >= first - 1) & (s["iteration"] <= peak)]["grad_norm"].dropna()
    if not len(w):
        return ""
    vals = list(w.to_numpy(dtype=float)[: int(np.argmax(w.to_numpy(dtype=float))) + 1])
    if len(vals) > limit:
        vals = vals[: limit // 2] + [None] + vals[-(limit // 2) :]
    return " → ".join("…" if v is None else _g(v) for v in vals)


def diagnose(incident: Incident, *, window: int = 50, k: float = 6.0, rel_threshold: float = 0.10,
             patience: int = 3, checkpoint_interval: int | None = None,
             loss_scale_halvings: int = 4) -> Report:
    """Find loss spikes (and NaNs, skipped steps, loss-scale collapses) and say whether to keep
    going or to roll back and skip data. ``window``/``k``/``rel_threshold``/``patience`` tune
    the detector (see the module doc); ``checkpoint_interval`` (iterations) gives the rollback
    point when the logs have no checkpoint lines."""
    facts: dict[str, Any] = {k_: None for k_ in FACT_KEYS}
    facts.update(spikes=[], nan_iterations=[], skipped_iterations=[])
    findings: list[Finding] = []
    actions: list[Action] = []
    s = series(incident)
    has_metric = len(s) and (s["loss"].notna().any() or s["grad_norm"].notna().any()
                             or s["is_nan"].any()
                             or (pd.to_numeric(s["skipped"], errors="coerce") > 0).any())
    if not has_metric:
        findings.append(Finding(
            "no_iterations", "warning",
            "No loss or grad-norm values in these logs (no Megatron/DeepSpeed iteration lines, "
            "HF Trainer logs or TensorBoard/W&B metric exports were recognised)", []))
        findings += input_findings(incident)
        actions.append(Action(
            "point_at_metrics", 1, "Point log_path at the training log or a metrics export",
            "Spikes are read from per-iteration loss and grad norm; none was found here.",
            "log_path = the rank that prints iteration lines (Megatron: the last pipeline stage), "
            "or a TensorBoard scalar CSV (run-…-tag-lm loss.csv), a W&B history CSV/JSONL, or "
            "HF trainer_state.json"))
        return Report("loss_spike", "No loss or grad-norm values found in the logs: nothing to "
                      "say about spikes; check that log_path points at the training log or a "
                      "metrics export.", "low", facts, findings, ranked(actions))

    det = replace(LOSS, window=window, k=k, rel=rel_threshold, patience=patience)
    gdet = replace(GRAD_NORM, window=window, k=k, patience=patience)
    spikes, lonely = find_spikes(s, det, gdet)
    nans, skipped = nan_iterations(s), skipped_iterations(s)
    collapses = loss_scale_collapses(s, loss_scale_halvings)
    ckpts = checkpoint_iterations(incident)
    facts["spikes"] = spikes
    facts["nan_iterations"] = nans[:MAX_LISTED]
    facts["skipped_iterations"] = skipped[:MAX_LISTED]
    last_it = int(s["iteration"].iloc[-1])
    first_it = int(s["iteration"].iloc[0])
    lf = s.dropna(subset=["loss"])

    # Spikes.
    for sp in spikes[:10]:
        first = sp["data_window"]["iterations"][0]
        upto = sp["recovered_iteration"] or last_it
        rows = s[(s["iteration"] >= first - 1) & (s["iteration"] <= upto)]
        if sp["recovered_iteration"] is not None:
            how = (f"back within tolerance of the baseline by iteration {sp['recovered_iteration']}"
                   f" ({_its(sp['recovery_iterations'])})")
            if not sp["recovery_confirmed"]:
                how += ", where the log ends (recovery not yet sustained)"
        else:
            how = f"not recovered by the end of the log (iteration {last_it})"
        findings.append(Finding(
            f"loss_spike_{sp['start_iteration']}",
            "warning" if sp["recovered_iteration"] is not None else "critical",
            f"Loss spike from iteration {sp['start_iteration']}: loss {_g(sp['baseline_loss'])} "
            f"(baseline) → {_p(sp['peak_loss'])} at {sp['peak_iteration']}"
            + (f", grad norm peak {_p(sp['peak_grad_norm'])}" if sp["peak_grad_norm"] else "")
            + f"; {how}", evidence(rows)))
        gap = gaps(s, first, upto)
        if gap:
            findings.append(Finding(
                f"log_gap_{sp['start_iteration']}", "info",
                "The log has no lines for iteration(s) "
                + ", ".join(f"{a}–{b}" if a != b else f"{a}" for a, b in gap[:5])
                + " inside this spike: the recovery (or more of the spike) happened there, so "
                "recovered_iteration is an upper bound", []))
    if len(spikes) > 10:
        findings.append(Finding("more_spikes", "warning",
                                f"{len(spikes) - 10} more loss spike(s) not listed", []))
    main = next((sp for sp in spikes if sp["recovered_iteration"] is None), None)
    head = main or (max(spikes, key=lambda sp: sp["peak_loss"] - sp["baseline_loss"])
                    if spikes else None)
    if spikes:
        facts["grad_norm_leads"] = spikes[0]["grad_norm_leads"]
    if head is not None and head["grad_norm_start_iteration"] is not None:
        gs = head["grad_norm_start_iteration"]
        path = grad_path(s, gs, head["peak_iteration"])
        rows = s[(s["iteration"] >= gs - 1) & (s["iteration"] <= head["peak_iteration"])]
        if head["grad_norm_leads"]:
            findings.append(Finding(
                "grad_norm_leads", "warning",
                f"Grad norm led the loss: it left its baseline at iteration {gs}, "
                f"{_its(head['start_iteration'] - gs)} before the loss did "
                f"({path}) while the loss peaked at {_p(head['peak_loss'])} at "
                f"{head['peak_iteration']} — an optimizer instability building up, not a "
                "single bad batch", evidence(rows)))
        else:
            findings.append(Finding(
                "grad_norm_with_loss", "info",
                f"Grad norm rose in the same iteration as the loss or after it ({path}): "
                "consistent with a bad batch (or a learning-rate change) hitting the model at "
                f"iteration {head['start_iteration']}", evidence(rows)))
    jump = None
    if head is not None:
        w = head["data_window"]
        findings.append(Finding(
            "data_window", "info",
            f"The batches that led into the spike: iterations {_range(w['iterations'])}"
            + (f", consumed samples [{_range(w['samples'])})" if None not in w["samples"] else "")
            + (f", consumed tokens [{_range(w['tokens'])})" if None not in w["tokens"] else ""),
            []))
        jump = lr_jump(s, w["iterations"][0], head["peak_iteration"])
        if jump:
            rows = s[(s["iteration"] >= jump["iteration"] - 1) & (s["iteration"] <= jump["iteration"])]
            findings.append(Finding(
                "lr_jump", "critical",
                f"The learning rate jumped ×{jump['ratio']:.3g} ({_g(jump['from'])} → "
                f"{_g(jump['to'])}) at iteration {jump['iteration']}, as the spike began: the "
                "schedule, not the data, is the first suspect", evidence(rows)))
    for g in lonely[:5]:
        findings.append(Finding(
            f"grad_norm_spike_{g['start_iteration']}", "info",
            f"Grad-norm spike without a loss spike from iteration {g['start_iteration']}: "
            f"{_g(g['baseline_grad_norm'])} → {_g(g['peak_grad_norm'])} at "
            f"{g['peak_iteration']}" + (f", back by {g['recovered_iteration']}"
                                        if g["recovered_iteration"] is not None else ""),
            evidence(s[(s["iteration"] >= g["start_iteration"])
                       & (s["iteration"] <= g["peak_iteration"])])))

    # NaN, skipped, loss scale.
    nan_at_end = bool(len(nans)) and bool(s["is_nan"].iloc[-1])
    if nans:
        findings.append(Finding(
            "nan_iterations", "critical" if nan_at_end else "warning",
            f"{len(nans)} iteration line(s) with a NaN/inf loss or grad norm, first at "
            f"{nans[0]}" + (", still NaN at the end of the log" if nan_at_end else ""),
            evidence(s[s["is_nan"]])))
    if skipped:
        sk = s[pd.to_numeric(s["skipped"], errors="coerce").fillna(0) > 0]
        total = int(pd.to_numeric(sk["skipped"], errors="coerce").sum())
        findings.append(Finding(
            "skipped_iterations", "warning",
            f"{total} optimizer step(s) skipped (fp16 overflow) on {len(skipped)} logged "
            f"line(s), first at {skipped[0]}", evidence(sk)))
    for c in collapses[:3]:
        findings.append(Finding(
            f"loss_scale_collapse_{c['start_iteration']}", "critical",
            f"fp16 loss scale collapsed from {_g(c['from'])} to {_g(c['to'])} "
            f"({c['halvings']:g} halvings) between iterations {c['start_iteration']} and "
            f"{c['end_iteration']}: gradients overflow on step after step",
            evidence(s[(s["iteration"] >= c["start_iteration"])
                       & (s["iteration"] <= c["end_iteration"])])))

    # What went wrong first, and the rollback point.
    first_bad = None
    if main is not None:
        first_bad = main["data_window"]["iterations"][0]
        if jump:  # the update with the new LR already changed the weights
            first_bad = min(first_bad, jump["iteration"])
    elif nan_at_end:
        first_bad = _first_of_last_run(s, s["is_nan"].to_numpy())
    elif collapses:
        first_bad = collapses[0]["start_iteration"]
    if first_bad is not None:
        facts["rollback_iteration"] = rollback_point(first_bad, ckpts, checkpoint_interval)

    if not (spikes or nans or skipped or collapses):
        drop = ""
        if len(lf) >= 2:
            drop = (f"; the loss went from {_g(float(lf['loss'].iloc[0]))} to "
                    f"{_g(float(lf['loss'].iloc[-1]))}")
        findings.append(Finding(
            "no_spike", "info",
            f"No loss spike, NaN or skipped iteration in {len(s)} logged iteration(s) "
            f"({first_it}–{last_it}){drop}", evidence(s.tail(3))))
    findings += input_findings(incident)

    actions = _actions(s, facts, main, head, jump, nan_at_end, collapses, ckpts,
                       checkpoint_interval, first_bad)
    verdict, confidence = _verdict(s, facts, main, head, nans, nan_at_end, skipped, collapses,
                                   jump, first_it, last_it, lf, first_bad)
    return Report("loss_spike", verdict, confidence, facts, findings, ranked(actions))


def _first_of_last_run(s: pd.DataFrame, flags: np.ndarray) -> int:
    k = len(flags) - 1
    while k > 0 and flags[k - 1]:
        k -= 1
    return int(s["iteration"].iloc[k])


def _rollback_text(r: int | None, first_bad: int) -> str:
    return (f"checkpoint iteration {r} (global_step{r})" if r is not None else
            f"the last checkpoint saved before iteration {first_bad}")


def _tracker(r: int | None) -> str:
    """How to make a job resume from checkpoint iteration ``r``."""
    it = r if r is not None else "<iteration>"
    return (f"point the checkpoint directory's tracker at it: Megatron echo {it} > "
            f"<save>/latest_checkpointed_iteration.txt, DeepSpeed echo global_step{it} > "
            "<save>/latest")


def _actions(s: pd.DataFrame, f: dict[str, Any], main: dict[str, Any] | None,
             head: dict[str, Any] | None, jump: dict[str, Any] | None, nan_at_end: bool,
             collapses: list[dict[str, Any]], ckpts: list[int], interval: int | None,
             first_bad: int | None) -> list[Action]:
    acts: list[Action] = []
    r = f["rollback_iteration"]
    if jump:
        back = (f"roll back to {_rollback_text(r, first_bad or jump['iteration'])} "
                f"({_tracker(r)}) and " if main is not None else "")
        acts.append(Action(
            "restore_lr", 1, "Restore the learning-rate schedule"
            + (f" and roll back to {_rollback_text(r, first_bad or jump['iteration'])}"
               if main is not None else ""),
            f"The LR jumped ×{jump['ratio']:.3g} ({_g(jump['from'])} → {_g(jump['to'])}) at "
            f"iteration {jump['iteration']} as the spike began: a scheduler reset or an "
            "overridden LR on resume, not the data.",
            f"{back}resume with the schedule from the checkpoint: Megatron-DeepSpeed "
            "--use-checkpoint-lr-scheduler / Megatron-LM --use-checkpoint-opt_param-scheduler "
            "(and no --override-… flag), then check 'learning rate' in the first lines after the "
            "restart; HF Trainer: resume_from_checkpoint=<dir> restores the scheduler state"))
    if main is not None and jump:
        w = main["data_window"]
        a, b = w["iterations"]
        acts.append(Action(
            "rollback_skip_data", 2, f"If it spikes again with the LR restored: skip iterations "
            f"{a}–{b}", "Then the data, not the schedule, drove it.",
            f"Megatron-DeepSpeed: --skip-train-iteration-range {a}-{b}; other loops: advance the "
            "data sampler past those batches"))
    elif main is not None:
        w = main["data_window"]
        a, b = w["iterations"]
        samples = f"consumed samples [{_range(w['samples'])})" if w["samples"][0] is not None else (
            "the batches of those iterations")
        acts.append(Action(
            "rollback_skip_data", 2,
            f"Roll back to {_rollback_text(r, a)} and skip the data of iterations {a}–{b}",
            f"The loss spike from iteration {main['start_iteration']} (peak "
            f"{_g(main['peak_loss'])} at {main['peak_iteration']}) has not recovered; the "
            f"batches of iterations {a}–{b} ({samples}) drove it. PaLM restarted ~100 steps "
            "before such spikes and skipped 200–500 batches; widen the range if it recurs.",
            f"{_tracker(r)}; restart with Megatron-DeepSpeed's --skip-train-iteration-range "
            f"{a}-{b}; other loops: advance the data sampler past "
            + (f"samples {w['samples'][0]}..{w['samples'][1]} " if w["samples"][0] is not None
               else f"the batches of iterations {a}..{b} ")
            + "(e.g. accelerate's accelerator.skip_first_batches(dataloader, n) for the "
            "batches after the checkpoint)"))
        acts.append(Action(
            "lower_lr", 3, "If it spikes again at the same point: lower the learning rate",
            "A spike that recurs on other data is an optimizer instability: a smaller LR (or "
            "tighter clipping) is the fix, as in the BLOOM-104B and OPT logbooks."
            + (" Grad norm led the loss here, which points that way already."
               if main["grad_norm_leads"] else ""),
            "restart from the same checkpoint with the LR scaled down (e.g. ×0.5 to ×0.8): "
            "Megatron --lr/--min-lr with --override-opt_param-scheduler (Megatron-LM) / "
            "--override-lr-scheduler (Megatron-DeepSpeed); HF learning_rate=…; and/or "
            "--clip-grad 1.0 (max_grad_norm=1.0)"))
        acts.append(Action(
            "inspect_data", 4, f"Inspect the data of iterations {a}–{b}",
            "A spike that follows one batch is often garbage text, repeated tokens or very "
            "long documents; finding it lets the data pipeline drop it for good.",
            (f"dump samples {w['samples'][0]}..{w['samples'][1]}: build the train dataset as the "
             "job does (Megatron: build_train_valid_test_datasets) and print "
             f"tokenizer.detokenize(train_ds[i]['text']) for i in range({w['samples'][0]}, "
             f"{w['samples'][1]})") if w["samples"][0] is not None else
            f"replay the data loader to iterations {a}..{b} with the job's seed and dump "
            "those batches"))
    elif nan_at_end:
        acts.append(Action(
            "rollback_nan", 2, f"Roll back to {_rollback_text(r, first_bad or 0)} before the NaNs",
            f"The loss/grad norm is NaN from iteration {first_bad} to the end of the log: the "
            "weights or optimizer state are poisoned and training will not come back.",
            "restart from that checkpoint with a lower LR (×0.5) or bf16 instead of fp16; if "
            "NaN recurs at the same iteration, skip its data "
            f"(--skip-train-iteration-range {first_bad}-{first_bad})"))
    if collapses:
        c = collapses[0]
        acts.append(Action(
            "loss_scale", 3, "Stop the fp16 loss-scale collapse",
            f"The loss scale fell from {_g(c['from'])} to {_g(c['to'])} between iterations "
            f"{c['start_iteration']} and {c['end_iteration']}: every step overflows, so "
            "updates are skipped and the model stalls or diverges.",
            "roll back before the collapse and train in bf16 (--bf16) or set a floor: Megatron "
            "--min-loss-scale 1 --initial-loss-scale 65536; DeepSpeed \"fp16\": "
            "{\"min_loss_scale\": 1, \"loss_scale_window\": 1000}; find the layer that "
            "overflows with a forward hook"))
    if head is not None and main is None:
        before = rollback_point(head["data_window"]["iterations"][0], ckpts, interval)
        keep = (f"keep global_step{before} (the last one before the spike) and the first "
                "one after it for study, as BLOOM did (global_step31200 and 31259)"
                if before is not None else "keep the checkpoints around the spike for study, as "
                "BLOOM did (global_step31200 and 31259)")
        doubt = recovery_doubts(s, head)
        acts.append(Action(
            "keep_going", 1, ("Keep training, and confirm the recovery on the next iterations"
                              if doubt else "Keep training: the spike recovered by itself"),
            f"The loss came back to its pre-spike baseline by iteration "
            f"{head['recovered_iteration']}, {head['recovery_iterations']} iterations after the "
            "spike began; rolling back would cost time for nothing."
            + (f" Not fully seen: {'; '.join(doubt)}." if doubt else ""),
            f"no change to the job; {keep}; page again if the loss leaves its baseline for "
            "longer or spikes repeat"))
        if len(f["spikes"]) >= 3:
            acts.append(Action(
                "repeated_spikes", 2, "Spikes keep coming: lower the LR or tighten clipping",
                f"{len(f['spikes'])} spikes in this log, even if each recovered: the run sits at "
                "the edge of stability.",
                "at the next restart scale the LR down (×0.8) or set --clip-grad 1.0; consider "
                "Adam beta2 0.95"))
    if not acts:
        acts.append(Action(
            "keep_going", 1, "Keep training: no spike to act on",
            "The loss followed its baseline in this log.",
            "no change; run this runbook again on the next alert (or on a longer stretch of the "
            "log) with a TensorBoard/W&B export of the whole run if the text log is partial"))
    if f["skipped_iterations"] and not collapses:
        acts.append(Action(
            "watch_skips", 5, "Watch the skipped (overflowed) steps",
            f"{len(f['skipped_iterations'])} logged line(s) counted skipped steps: occasional "
            "fp16 overflows are normal, a run of them is a loss-scale collapse.",
            "grep 'number of skipped iterations' / 'OVERFLOW' in the log; alert when more than "
            "a few in a row"))
    return acts


def _verdict(s: pd.DataFrame, f: dict[str, Any], main: dict[str, Any] | None,
             head: dict[str, Any] | None, nans: list[int], nan_at_end: bool,
             skipped: list[int], collapses: list[dict[str, Any]], jump: dict[str, Any] | None,
             first_it: int, last_it: int, lf: pd.DataFrame,
             first_bad: int | None) -> tuple[str, str]:
    n = len(f["spikes"])
    if head is not None:
        lead = ""
        if head["grad_norm_leads"]:
            lead = (f"; grad norm led, rising from iteration "
                    f"{head['grad_norm_start_iteration']} to {_p(head['peak_grad_norm'])}")
        elif head["peak_grad_norm"]:
            lead = f"; grad norm peak {_p(head['peak_grad_norm'])}"
        what = (f"loss {_g(head['baseline_loss'])} → {_p(head['peak_loss'])} at iteration "
                f"{head['peak_iteration']} (spike from {head['start_iteration']}{lead})")
        conf = "high" if (head["history_points"] >= 8
                          or head["peak_loss"] >= 1.5 * head["baseline_loss"]) else "medium"
        count = f"{n} loss spike(s); " if n > 1 else "Loss spike: "
        if main is not None:
            w = main["data_window"]
            where = (f"checkpoint {f['rollback_iteration']}" if f["rollback_iteration"] is not None
                     else f"the last checkpoint before iteration {first_bad}")
            if jump:
                return (f"{count}{what} has not recovered by the end of the log (iteration "
                        f"{last_it}); the learning rate jumped ×{jump['ratio']:.3g} "
                        f"({_g(jump['from'])} → {_g(jump['to'])}) at iteration "
                        f"{jump['iteration']}, as it began: roll back to {where} and restore the "
                        "learning-rate schedule.", conf)
            return (f"{count}{what} has not recovered by the end of the log (iteration "
                    f"{last_it}): roll back to {where} and skip iterations "
                    f"{w['iterations'][0]}–{w['iterations'][1]}"
                    + (f" (consumed samples [{_range(w['samples'])}))"
                       if w["samples"][0] is not None else "") + ".", conf)
        rec = head["recovered_iteration"]
        doubt = recovery_doubts(s, head)
        if doubt:  # a gap in the data or the log's end: the recovery is likely, not seen
            return (f"{count}{what} looks recovered by iteration {rec} ({'; '.join(doubt)}): "
                    "keep training, and confirm on the next logged iterations.", "medium")
        return (f"{count}{what} recovered by itself by iteration {rec}, "
                f"{_its(head['recovery_iterations'])} after it began: keep training.", conf)
    if nan_at_end:
        return (f"The loss/grad norm became NaN at iteration {_first_of_last_run(s, s['is_nan'].to_numpy())} and "
                f"stayed NaN to the end of the log ({last_it}): roll back "
                + (f"to checkpoint {f['rollback_iteration']}." if f["rollback_iteration"] is not None
                   else "to the last checkpoint before it."), "high")
    if collapses:
        c = collapses[0]
        return (f"No loss spike, but the fp16 loss scale collapsed from {_g(c['from'])} to "
                f"{_g(c['to'])} between iterations {c['start_iteration']} and "
                f"{c['end_iteration']}.", "high")
    if nans or skipped:
        return (f"No loss spike in iterations {first_it}–{last_it}; {len(nans)} NaN and "
                f"{len(skipped)} skipped-step line(s), the run went on after them: keep "
                "training, watch the loss scale.", "medium")
    drop = ""
    if len(lf) >= 2:
        drop = (f"; the loss went from {_g(float(lf['loss'].iloc[0]))} to "
                f"{_g(float(lf['loss'].iloc[-1]))}")
    return (f"No loss spike, NaN or skipped step in {len(s)} logged iteration(s) "
            f"({first_it}–{last_it}){drop}.", "high" if len(lf) >= 20 else "medium")


def spikes_table(report: Report) -> pd.DataFrame:
    """The spikes of a report as a table (one row per spike)."""
    rows = []
    for sp in report.facts.get("spikes") or []:
        w = sp["data_window"]
        rows.append({
            "start": sp["start_iteration"], "peak": sp["peak_iteration"],
            "baseline loss": sp["baseline_loss"], "peak loss": sp["peak_loss"],
            "peak grad norm": sp["peak_grad_norm"],
            "grad norm from": sp["grad_norm_start_iteration"],
            "grad norm led": sp["grad_norm_leads"],
            "recovered at": sp["recovered_iteration"],
            "recovery (iterations)": sp["recovery_iterations"],
            "data iterations": _range(w["iterations"]),
            "consumed samples [start, end)": _range(w["samples"]),
        })
    return pd.DataFrame(rows)


def spike_rows(s: pd.DataFrame, spike: dict[str, Any], before: int = 3,
               after: int = 3) -> pd.DataFrame:
    """The iterations around one spike: ``before`` logged points ahead of its first sign to
    ``after`` points past its recovery (or peak)."""
    first = spike["data_window"]["iterations"][0]
    last = spike["recovered_iteration"] or spike["peak_iteration"]
    its = s["iteration"].to_numpy()
    a = max(int(np.searchsorted(its, first)) - before, 0)
    b = int(np.searchsorted(its, last, side="right")) + after
    cols = ["iteration", "loss", "grad_norm", "lr", "loss_scale", "consumed_samples", "source"]
    return s.iloc[a:b][cols]
