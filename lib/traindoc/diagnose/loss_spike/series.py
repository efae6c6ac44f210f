"""The per-iteration series a spike is read from, and what else it says: NaN and skipped
iterations, fp16 loss-scale collapses, learning-rate jumps, gaps in the log, the data a run of
iterations consumed, and the checkpoints to roll back to."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ...incident import Incident
from ..common import as_float, epoch_counted, fixed_batch_epochs, place_unnumbered_skips

SERIES_COLUMNS = ("iteration", "loss", "grad_norm", "lr", "loss_scale", "skipped", "nan",
                  "consumed_samples", "consumed_tokens", "global_batch_size", "epoch", "source",
                  "line")
# A loss or grad norm printed as nan/inf ("lm loss: NAN", "'loss': nan"): the nullable table
# keeps NaN as <NA>, so the line's text says whether the value was NaN or simply not logged
# (the row's ``nan_text``, ``linefacts.NAN_TEXT_RE``); Megatron's counters likewise
# (``megatron_counters``, ``linefacts.MEGATRON_COUNTERS_RE``).
TEXT_FLAGS = ("nan_text", "megatron_counters")


# -- the series ------------------------------------------------------------------------------
def across_epochs(it: pd.DataFrame) -> pd.DataFrame:
    """The iterations table with a step counter that restarts every epoch counted on across
    epochs: in one file where a step line's iteration goes back while its ``epoch`` went up
    ("Epoch 0 | Step 6500/6501" then "Epoch 1 | Step 0/6501"), every step is
    ``(epoch - first epoch number) × steps per epoch + step`` instead of overwriting the epoch
    before as a rerun would. Steps per epoch: the line's total, else read from the first wrap
    (the last step before it, one more for a counter that restarts at 0); the first epoch
    number is 0 where the file shows an epoch 0, else 1 (a log that begins at epoch 333 is
    counted from the run's start, not from its own first line). An iteration that goes back
    with no higher epoch stays a restart. Evaluation and epoch rows between the steps are no
    steps of the counter (demucs: "Valid | Epoch 1 | 1/3" after "Train | Epoch 1 | 572/573")."""
    if "epoch" not in it or not it["epoch"].notna().any():
        return it
    rows = it[it["iteration"].notna() & it["epoch"].notna()]
    if "event" in rows:  # (an eval's own counter, an epoch's row numbered by its epoch: no steps)
        rows = rows[~rows["event"].isin(["eval", "epoch"])]
    if not len(rows):
        return it
    files = rows["source"].fillna("?").astype(str).str.rsplit(":", n=1).str[0]
    new = it["iteration"].copy()
    for _, g in rows.groupby(files, sort=False):
        its = [int(v) for v in g["iteration"]]
        eps = [float(v) for v in g["epoch"]]
        wrap = next((j for j in range(1, len(its))
                     if its[j] < its[j - 1] and eps[j] > eps[j - 1]), None)
        if wrap is None or any(e != int(e) for e in eps):
            continue
        tot = g["total_iterations"].dropna()
        per = int(tot.iloc[0]) if len(tot) else its[wrap - 1] + (1 if its[wrap] == 0 else 0)
        base = 0 if min(eps) == 0 else 1
        for idx, itv, ep in zip(g.index, its, eps, strict=True):
            new.loc[idx] = (int(ep) - base) * per + itv
    return it.assign(iteration=new)


def counted_on(it: pd.DataFrame) -> pd.DataFrame:
    """The iterations table with a loss's step counter that restarts in a file while the
    trainer's own counter in the same file goes on counted on across the restart: an epoch of
    one process, not a relaunch (a relaunch restarts every counter, a resume takes the other
    back to its checkpoint). DeepSpeedExamples' random-LTD fine-tune prints its own "Step at
    262 with Perplexity: 102.18" then "Step at 1 with Perplexity: 102.18" for its second epoch,
    while DeepSpeed's timer goes on "0/262", "0/264". The loss rows after each restart are
    numbered on from the step before it (one more for a counter that restarts at 0) where the
    other counter goes on, never back, from its last step before the loss's last step to its
    first step after the loss's restart."""
    if not len(it) or "loss" not in it or "source" not in it:
        return it
    rows = it[it["iteration"].notna()]
    if "event" in rows:
        rows = rows[rows["event"].isna()]
    if not len(rows):
        return it
    src = rows["source"].fillna("?:0").astype(str).str.rsplit(":", n=1)
    rank = rows["rank"].astype("Float64").fillna(-1) if "rank" in rows else 0
    rows = rows.assign(_file=src.str[0], _rank=rank,
                       _lineno=pd.to_numeric(src.str[1], errors="coerce"))
    new = it["iteration"].copy()
    for _, g in rows.groupby(["_file", "_rank"], sort=False):
        g = g.sort_values("_lineno", kind="stable")
        lossy = g["loss"].notna().to_numpy()
        other = g.loc[~lossy]
        lo = g.loc[lossy]
        if len(other) < 2 or len(lo) < 3:
            continue
        its = [int(v) for v in lo["iteration"]]
        lines = other["_lineno"].to_numpy()
        steps = other["iteration"].to_numpy(dtype=float)
        offset = 0
        for j, idx in enumerate(lo.index):
            if j and its[j] < its[j - 1]:
                prev, at = float(lo["_lineno"].iloc[j - 1]), float(lo["_lineno"].iloc[j])
                before, after = lines < prev, lines > at
                if not (before.any() and after.any()):
                    break  # the other counter says nothing of the restart
                span = steps[int(np.flatnonzero(before)[-1]):int(np.flatnonzero(after)[0]) + 1]
                if (np.diff(span) <= 0).any():
                    break  # it went back too (around the loss's restart): a relaunch
                offset += its[j - 1] + (1 if its[j] == 0 else 0)
            new.loc[idx] = its[j] + offset
    return it.assign(iteration=new)


def _bar_nan_to_bar_step(incident: Incident, df: pd.DataFrame,
                         text_nan: pd.Series) -> tuple[pd.DataFrame, pd.Series]:
    """A note that names no step fused onto a progress bar's line ("| 2/8614 [00:00<…,
    loss=nan][deepscale] OVERFLOW! …") is placed after the bar's step
    (``place_unnumbered_skips``), but the line's ``loss=nan`` is the bar's own: a NaN row at
    the bar's step instead."""
    pr = incident.progress
    if not len(pr) or not text_nan.any():
        return df, text_nan
    bar = dict(zip(pr.loc[pr["step"].notna(), "source"], pr.loc[pr["step"].notna(), "step"],
                   strict=True))
    placed = incident.iterations["iteration"].isna().reindex(df.index, fill_value=False)
    moved = text_nan & placed & df["source"].isin(list(bar))
    if not moved.any():
        return df, text_nan
    extra = pd.DataFrame({"iteration": [int(bar[s]) for s in df.loc[moved, "source"]],
                          "nan": 1, "source": df.loc[moved, "source"].to_numpy(),
                          "megatron_counters": df.loc[moved, "megatron_counters"].to_numpy(),
                          "line": df.loc[moved, "line"].to_numpy()})
    extra = extra.reindex(columns=df.columns).astype(df.dtypes.to_dict())
    extra.index = range(int(df.index.max()) + 1, int(df.index.max()) + 1 + len(extra))
    return (pd.concat([df, extra]),
            pd.concat([text_nan & ~moved, pd.Series(False, index=extra.index)]))


def series(incident: Incident) -> pd.DataFrame:
    """One row per iteration: the metrics of every line or export row for it, the last value
    logged winning (a restarted job's rerun replaces the first attempt; per-tag exports merge);
    ``loss``/``grad_norm`` are float with NaN for not logged, ``is_nan`` flags NaN/inf,
    ``placed`` an iteration only lines without a step of their own were placed at. Computed
    once an incident (``Incident.once``): the analysis and triage read it; the frame is not to
    be changed in place."""
    return incident.once("loss_series", _series)


def _series(incident: Incident) -> pd.DataFrame:
    """``series`` computed."""
    it = counted_on(across_epochs(fixed_batch_epochs(epoch_counted(
        place_unnumbered_skips(incident), incident.progress, losses=True))))
    cols = list(SERIES_COLUMNS)
    evals = it["iteration"].notna() & (it["event"] == "eval").fillna(False) \
        & it["eval_loss"].notna() if len(it) and "event" in it.columns else None
    if not len(it) or it["iteration"].notna().sum() == 0 or (
            "event" in it.columns and not (it["iteration"].notna() & it["event"].isna()).any()
            and not (evals is not None and evals.any())):
        out = pd.DataFrame({c: pd.Series(dtype="float64") for c in cols})
        out["iteration"] = out["iteration"].astype("int64")
        out["is_nan"] = pd.Series(dtype=bool)
        out["placed"] = pd.Series(dtype=bool)
        return out
    steps = it["iteration"].notna()
    if "event" in it.columns:  # eval results and end-of-run summaries are not steps
        steps &= it["event"].isna()
        if evals is not None and evals.any() and not it.loc[steps, ["loss", "grad_norm"]].notna().any(axis=None):
            # a log whose only loss is the validation's (Tacotron 2: "Validation loss 8416:
            # 0.711720" once per epoch, no training loss printed): that is the series
            it = it.assign(loss=it["loss"].where(~evals, it["eval_loss"]))
            steps = evals
    df = it.loc[steps, [*cols, *TEXT_FLAGS]].copy()
    text_nan = df["nan_text"].fillna(False).astype(bool)
    df, text_nan = _bar_nan_to_bar_step(incident, df, text_nan)
    inf = pd.Series(False, index=df.index)
    for c in ("loss", "grad_norm"):
        v = df[c].astype("Float64")
        inf |= v.notna().to_numpy() & ~np.isfinite(v.to_numpy(dtype=float, na_value=0.0))
    # a NaN read from text arrives as <NA> (not logged): the line's own words tell them apart
    # Megatron prints no "lm loss" for an interval whose steps all failed: with no step
    # skipped (fp16 overflow), the missing loss is the NaN (its counters can miss it)
    no_loss = (df["loss"].isna() & (df["skipped"].fillna(0) == 0)
               & df["megatron_counters"].fillna(False).astype(bool))
    df["_nan"] = ((text_nan & (df["loss"].isna() | df["grad_norm"].isna())) | inf | no_loss
                  | (df["nan"].fillna(0) > 0))
    # a row the log gave no step of its own (a NaN warning placed at the next step,
    # ``place_unnumbered_skips``): an event in the run, not a logged iteration
    unnumbered = incident.iterations["iteration"].isna()
    df["_placed"] = unnumbered.reindex(df.index, fill_value=False).astype(bool).to_numpy()
    df["_order"] = np.arange(len(df))
    df = df.sort_values(["iteration", "_order"], kind="stable")
    g = df.groupby("iteration", sort=True)
    out = g[[c for c in cols if c != "iteration"]].last().reset_index()
    # a skipped step placed at an iteration (DeepSpeed's unnumbered "OVERFLOW! … Skipping
    # step", ``place_unnumbered_skips``) stays skipped when that iteration's own line, logged
    # after it, counts none (Megatron's "number of skipped iterations: 0" does not see
    # DeepSpeed's skips)
    out["skipped"] = g["skipped"].max().to_numpy()
    out["is_nan"] = g["_nan"].any().to_numpy()
    out["placed"] = g["_placed"].all().to_numpy()
    out["iteration"] = out["iteration"].astype("int64")
    for c in ("loss", "grad_norm", "lr", "loss_scale"):
        out[c] = out[c].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    return out


# -- the data behind a run of iterations ------------------------------------------------------
def finite_float(v: Any) -> float | None:
    """A finite float, or None for missing values, non-numbers and ±inf (an overflowed grad
    norm is no peak to report, nor an inf count of samples a bound)."""
    f = as_float(v)
    return f if f is not None and math.isfinite(f) else None


def finite_int(v: Any) -> int | None:
    """``finite_float`` truncated to an int."""
    f = finite_float(v)
    return None if f is None else int(f)


def _at(s: pd.DataFrame, iteration: int, col: str) -> Any:
    row = s.loc[s["iteration"] == iteration, col]
    return row.iloc[0] if len(row) else None


def consumed_before(s: pd.DataFrame, iteration: int, col: str) -> int | None:
    """``col`` (consumed_samples / consumed_tokens) just before ``iteration``'s batch: the
    previous iteration's value, else this one's less one batch."""
    prev = finite_int(_at(s, iteration - 1, col))
    if prev is not None:
        return prev
    here = finite_int(_at(s, iteration, col))
    gbs = finite_int(_at(s, iteration, "global_batch_size"))
    if here is None or gbs is None:
        return None
    if col == "consumed_samples":
        return here - gbs
    samples = finite_int(_at(s, iteration, "consumed_samples"))
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
                    finite_int(_at(s, last, "consumed_samples"))],
        "tokens": [consumed_before(s, first, "consumed_tokens"),
                   finite_int(_at(s, last, "consumed_tokens"))],
    }


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
    if in_warmup(lr, int(its[k + 1])):
        return None
    return {"iteration": int(its[k + 1]), "from": float(v[k]), "to": float(v[k + 1]),
            "ratio": float(ratio[k])}


def in_warmup(lr: pd.DataFrame, iteration: int, after: int = 2) -> bool:
    """The step up to ``iteration`` is part of a warm-up ramp: from the first logged point to
    ``after`` points past it the learning rate never falls, and it rises at some other step
    too (a reset on resume jumps from a flat or decaying rate and stays)."""
    its = lr["iteration"].to_numpy()
    j = int(np.searchsorted(its, iteration))
    v = lr["lr"].to_numpy(dtype=float)[: j + after + 1]
    if j < 1 or len(v) < 2:
        return False
    d = np.diff(v)
    if (d < 0).any():
        return False
    others = np.delete(d, j - 1)
    return bool((others > 0).any())


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


# -- views -----------------------------------------------------------------------------------
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
