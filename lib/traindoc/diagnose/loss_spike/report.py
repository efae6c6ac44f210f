"""``report``: the loss-spike diagnosis in words — findings, verdict and ranked actions for a
``LossSpikeAnalysis``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...report import (
    Action,
    Confidence,
    Finding,
    Report,
    Rule,
    Severity,
    action,
    evidence,
    fired_actions,
    fired_findings,
    verdict_of,
)
from ..common import input_findings, reading_words
from .analysis import LossSpikeAnalysis, span_text, spikes_frame
from .series import rollback_point

FACT_KEYS = ("spikes", "grad_norm_leads", "nan_iterations", "skipped_iterations",
             "zero_loss_from", "rollback_iteration", "last_iteration")


# -- wording -----------------------------------------------------------------------------------
def _g(v: float | None) -> str:
    if v is None:
        return "?"
    return f"{v:.4g}" if abs(v) < 1e5 else f"{v:.3g}"


def _p(v: float | None) -> str:
    """A logged value as printed (up to 7 significant digits)."""
    return "?" if v is None else f"{v:.7g}"


def _its(n: int | None) -> str:
    return f"{n} iteration" + ("" if n == 1 else "s")


def grad_path(s: pd.DataFrame, first: int, peak: int, limit: int = 8) -> str:
    """'0.242 → 0.947 → … → 960.4': grad norms from ``first - 1`` up to their peak."""
    w = s[(s["iteration"] >= first - 1) & (s["iteration"] <= peak)]["grad_norm"].dropna()
    if not len(w):
        return ""
    vals = list(w.to_numpy(dtype=float)[: int(np.argmax(w.to_numpy(dtype=float))) + 1])
    if len(vals) > limit:
        vals = vals[: limit // 2] + [None] + vals[-(limit // 2) :]
    return " → ".join("…" if v is None else _g(v) for v in vals)


def _rollback_text(r: int | None, first_bad: int) -> str:
    return (f"checkpoint iteration {r} (global_step{r})" if r is not None else
            f"the last checkpoint saved before iteration {first_bad}")


def _tracker(r: int | None) -> str:
    """How to make a job resume from checkpoint iteration ``r``."""
    it = r if r is not None else "<iteration>"
    return (f"point the checkpoint directory's tracker at it: Megatron echo {it} > "
            f"<save>/latest_checkpointed_iteration.txt, DeepSpeed echo global_step{it} > "
            "<save>/latest")


# -- the report ------------------------------------------------------------------------------
def report(analysis: LossSpikeAnalysis) -> Report:
    """The findings, verdict and ranked actions for ``analysis``: keep going, or roll back
    and skip data (or restore the learning rate)."""
    a = analysis
    findings, actions, verdicts = ((FINDINGS, ACTIONS, VERDICTS) if a.has_metrics else
                                   (NO_METRICS_FINDINGS, NO_METRICS_ACTIONS, NO_METRICS_VERDICTS))
    verdict, confidence = verdict_of(verdicts, a)
    return Report("loss_spike", verdict, confidence, facts(a), fired_findings(findings, a),
                  fired_actions(actions, a))


def facts(a: LossSpikeAnalysis) -> dict[str, Any]:
    """The report's facts (``FACT_KEYS``; what cannot be known is None or [])."""
    f: dict[str, Any] = {k_: None for k_ in FACT_KEYS}
    f.update(spikes=[], nan_iterations=[], skipped_iterations=[])
    if not a.has_metrics:
        if len(a.series):  # steps counted, no loss among their values: how far the log goes
            f["last_iteration"] = a.last_iteration
        return f
    # every NaN and skipped step, however many: a list cut at some length would tell a run
    # NaN from its first step to its last (llm.c's 902 "loss nan" lines) as one that recovered
    f.update(spikes=a.spikes, nan_iterations=list(a.nan_iterations),
             skipped_iterations=list(a.skipped_iterations),
             last_iteration=a.last_iteration,  # what the verdict covers: the logs read to here
             rollback_iteration=a.rollback_iteration)
    if a.spikes:
        f["grad_norm_leads"] = a.spikes[0]["grad_norm_leads"]
    f["zero_loss_from"] = a.zero_loss_from
    return f


# -- findings ------------------------------------------------------------------------------------

def _no_iterations(a: LossSpikeAnalysis) -> Finding:
    if len(a.series):  # steps read, none with a value the runbook knows as the loss
        return Finding(
            "no_iterations", Severity.WARNING,
            f"{len(a.series)} step line(s) read (iterations {a.first_iteration}–"
            f"{a.last_iteration}), none with a loss or grad norm the runbook knows by name "
            "(a loss column named otherwise, or several losses and none the run's)",
            evidence(a.series.tail(3)))
    return Finding(
        "no_iterations", Severity.WARNING,
        "No loss or grad-norm values in these logs (no Megatron/DeepSpeed iteration lines, "
        "HF Trainer logs or TensorBoard/W&B metric exports were recognised)", [])


def _spike_finding(a: LossSpikeAnalysis, sp: dict[str, Any]) -> Finding:
    s, last_it = a.series, a.last_iteration
    first = sp["data_window"]["iterations"][0]
    rows = s[(s["iteration"] >= first - 1) & (s["iteration"] <= (sp["recovered_iteration"]
                                                                 or last_it))]
    if sp["recovered_iteration"] is not None:
        how = (f"back within tolerance of the baseline by iteration {sp['recovered_iteration']}"
               f" ({_its(sp['recovery_iterations'])})")
        if not sp["recovery_confirmed"]:
            how += ", where the log ends (recovery not yet sustained)"
    else:
        how = f"not recovered by the end of the log (iteration {last_it})"
    return Finding(
        f"loss_spike_{sp['start_iteration']}",
        Severity.WARNING if sp["recovered_iteration"] is not None else Severity.CRITICAL,
        f"Loss spike from iteration {sp['start_iteration']}: loss {_g(sp['baseline_loss'])} "
        f"(baseline) → {_p(sp['peak_loss'])} at {sp['peak_iteration']}"
        + (f", grad norm peak {_p(sp['peak_grad_norm'])}" if sp["peak_grad_norm"] else "")
        + f"; {how}", evidence(rows))


def _gap_finding(a: LossSpikeAnalysis, sp: dict[str, Any]) -> Finding | None:
    gap = a.spike_gaps(sp)
    if not gap:
        return None
    return Finding(
        f"log_gap_{sp['start_iteration']}", Severity.INFO,
        "The log has no lines for iteration(s) "
        + ", ".join(f"{lo}–{hi}" if lo != hi else f"{lo}" for lo, hi in gap[:5])
        + " inside this spike: the recovery (or more of the spike) happened there, so "
        "recovered_iteration is an upper bound", [])


def _spikes(a: LossSpikeAnalysis) -> list[Finding]:
    """Each of the first ten spikes, with the gap in the log inside it, if any."""
    out: list[Finding] = []
    for sp in a.spikes[:10]:
        gap = _gap_finding(a, sp)
        out += [_spike_finding(a, sp), *([gap] if gap else [])]
    return out


def _more_spikes(a: LossSpikeAnalysis) -> Finding | None:
    if len(a.spikes) <= 10:
        return None
    return Finding("more_spikes", Severity.WARNING,
                   f"{len(a.spikes) - 10} more loss spike(s) not listed", [])


def _grad_rows(a: LossSpikeAnalysis) -> tuple[dict[str, Any], int, str, pd.DataFrame] | None:
    """The head spike, where its grad norm left its baseline, the path up, and those rows."""
    head, s = a.head_spike, a.series
    if head is None or head["grad_norm_start_iteration"] is None:
        return None
    gs = head["grad_norm_start_iteration"]
    rows = s[(s["iteration"] >= gs - 1) & (s["iteration"] <= head["peak_iteration"])]
    return head, gs, grad_path(s, gs, head["peak_iteration"]), rows


def _grad_norm_leads(a: LossSpikeAnalysis) -> Finding | None:
    got = _grad_rows(a)
    if got is None or not got[0]["grad_norm_leads"]:
        return None
    head, gs, path, rows = got
    return Finding(
        "grad_norm_leads", Severity.WARNING,
        f"Grad norm led the loss: it left its baseline at iteration {gs}, "
        f"{_its(head['start_iteration'] - gs)} before the loss did "
        f"({path}) while the loss peaked at {_p(head['peak_loss'])} at "
        f"{head['peak_iteration']} — an optimizer instability building up, not a "
        "single bad batch", evidence(rows))


def _grad_norm_with_loss(a: LossSpikeAnalysis) -> Finding | None:
    got = _grad_rows(a)
    if got is None or got[0]["grad_norm_leads"]:
        return None
    head, _, path, rows = got
    return Finding(
        "grad_norm_with_loss", Severity.INFO,
        f"Grad norm rose in the same iteration as the loss or after it ({path}): "
        "consistent with a bad batch (or a learning-rate change) hitting the model at "
        f"iteration {head['start_iteration']}", evidence(rows))


def _data_window(a: LossSpikeAnalysis) -> Finding | None:
    if a.head_spike is None:
        return None
    w = a.head_spike["data_window"]
    return Finding(
        "data_window", Severity.INFO,
        f"The batches that led into the spike: iterations {span_text(w['iterations'])}"
        + (f", consumed samples [{span_text(w['samples'])})" if None not in w["samples"] else "")
        + (f", consumed tokens [{span_text(w['tokens'])})" if None not in w["tokens"] else ""),
        [])


def _lr_jump(a: LossSpikeAnalysis) -> Finding | None:
    jump, s = a.lr_jump, a.series
    if a.head_spike is None or not jump:
        return None
    rows = s[(s["iteration"] >= jump["iteration"] - 1) & (s["iteration"] <= jump["iteration"])]
    return Finding(
        "lr_jump", Severity.CRITICAL,
        f"The learning rate jumped ×{jump['ratio']:.3g} ({_g(jump['from'])} → "
        f"{_g(jump['to'])}) at iteration {jump['iteration']}, as the spike began: the "
        "schedule, not the data, is the first suspect", evidence(rows))


def _grad_norm_spikes(a: LossSpikeAnalysis) -> list[Finding]:
    s = a.series
    return [Finding(
        f"grad_norm_spike_{g['start_iteration']}", Severity.INFO,
        f"Grad-norm spike without a loss spike from iteration {g['start_iteration']}: "
        f"{_g(g['baseline_grad_norm'])} → {_g(g['peak_grad_norm'])} at "
        f"{g['peak_iteration']}" + (f", back by {g['recovered_iteration']}"
                                    if g["recovered_iteration"] is not None else ""),
        evidence(s[(s["iteration"] >= g["start_iteration"])
                   & (s["iteration"] <= g["peak_iteration"])]))
        for g in a.grad_norm_spikes[:5]]


def _nan_iterations(a: LossSpikeAnalysis) -> Finding | None:
    nans, at_end = a.nan_iterations, a.nan_at_end
    if not nans:
        return None
    return Finding(
        "nan_iterations", Severity.CRITICAL if at_end else Severity.WARNING,
        f"{len(nans)} iteration line(s) with a NaN/inf loss or grad norm, first at "
        f"{nans[0]}" + (", still NaN at the end of the log" if at_end else ""),
        evidence(a.series[a.series["is_nan"]]))


def _skipped_iterations(a: LossSpikeAnalysis) -> Finding | None:
    skipped, s = a.skipped_iterations, a.series
    if not skipped:
        return None
    sk = s[pd.to_numeric(s["skipped"], errors="coerce").fillna(0) > 0]
    total = int(pd.to_numeric(sk["skipped"], errors="coerce").sum())
    return Finding(
        "skipped_iterations", Severity.WARNING,
        f"{total} optimizer step(s) skipped (fp16 overflow) on {len(skipped)} logged "
        f"line(s), first at {skipped[0]}", evidence(sk))


def _loss_scale_collapses(a: LossSpikeAnalysis) -> list[Finding]:
    s = a.series
    return [Finding(
        f"loss_scale_collapse_{c['start_iteration']}", Severity.CRITICAL,
        f"fp16 loss scale collapsed from {_g(c['from'])} to {_g(c['to'])} "
        f"({c['halvings']:g} halvings) between iterations {c['start_iteration']} and "
        f"{c['end_iteration']}: gradients overflow on step after step",
        evidence(s[(s["iteration"] >= c["start_iteration"])
                   & (s["iteration"] <= c["end_iteration"])]))
        for c in a.loss_scale_collapses[:3]]


# skipped steps to the end of the log that say the run is not training: this many at least (a
# trainer's guard rejecting the last few gradients is watched, not called a stalled run), with no
# loss-scale collapse printed to say it more precisely
SKIPPING_MIN = 20


def _skipping_run(a: LossSpikeAnalysis) -> tuple[int, int] | None:
    """The first step and the length of the run of skipped steps to the end of the log
    (``skipping_from``) when it says the run is not training (``SKIPPING_MIN``), else None."""
    k = a.skipping_from
    if k is None or a.loss_scale_collapses or a.nan_at_end:
        return None
    n = sum(1 for i in a.skipped_iterations if i >= k)
    return (k, n) if n >= SKIPPING_MIN else None


def _skipping(a: LossSpikeAnalysis) -> Finding | None:
    run = _skipping_run(a)
    if run is None:
        return None
    k, n = run
    s = a.series
    return Finding(
        "skipping", Severity.CRITICAL,
        f"Every optimizer step from iteration {k} to the end of the log ({a.last_iteration}) "
        f"was skipped ({n} steps): no update has been applied since {k}",
        evidence(s[s["iteration"] >= k].tail(3)))


def _quiet(a: LossSpikeAnalysis) -> bool:
    """No spike, NaN, skipped step, loss-scale collapse or loss stuck at exactly 0."""
    return not (a.spikes or a.nan_iterations or a.skipped_iterations or a.loss_scale_collapses
                or a.zero_loss_from is not None)


def _zero_rows(a: LossSpikeAnalysis) -> pd.DataFrame:
    """The logged losses from the last non-zero one through the zero run's first three."""
    lf = a.series[a.series["loss"].notna()]
    z = a.zero_loss_from
    before = lf[lf["iteration"] < z].tail(1) if z is not None else lf.iloc[0:0]
    return pd.concat([before, lf[lf["iteration"] >= z].head(3)]) if z is not None else before


def _zero_loss(a: LossSpikeAnalysis) -> Finding | None:
    z = a.zero_loss_from
    if z is None:
        return None
    lf = a.series[a.series["loss"].notna()]
    n = int((lf["iteration"] >= z).sum())
    return Finding(
        "zero_loss", Severity.CRITICAL,
        f"The loss is exactly 0 from iteration {z} to the end of the log ({n} logged "
        f"iterations, to {a.last_iteration}): no model's loss is exactly zero on every batch — "
        "the loss stopped measuring anything", evidence(_zero_rows(a)))


def _loss_drop(a: LossSpikeAnalysis) -> str:
    lf = a.series.dropna(subset=["loss"])
    if len(lf) < 2:
        return ""
    return (f"; the loss went from {_g(float(lf['loss'].iloc[0]))} to "
            f"{_g(float(lf['loss'].iloc[-1]))}")


def _no_spike(a: LossSpikeAnalysis) -> Finding | None:
    if not _quiet(a):
        return None
    return Finding(
        "no_spike", Severity.INFO,
        f"No loss spike, NaN or skipped iteration in {len(a.series)} logged iteration(s) "
        f"({a.first_iteration}–{a.last_iteration}){_loss_drop(a)}", evidence(a.series.tail(3)))


def _input(a: LossSpikeAnalysis) -> list[Finding]:
    return input_findings(a.incident)


FINDINGS: tuple[Rule[Finding | Sequence[Finding]], ...] = (
    Rule("spikes", _spikes), Rule("more_spikes", _more_spikes),
    Rule("grad_norm_leads", _grad_norm_leads), Rule("grad_norm_with_loss", _grad_norm_with_loss),
    Rule("data_window", _data_window), Rule("lr_jump", _lr_jump),
    Rule("grad_norm_spikes", _grad_norm_spikes), Rule("nan_iterations", _nan_iterations),
    Rule("skipped_iterations", _skipped_iterations),
    Rule("loss_scale_collapses", _loss_scale_collapses), Rule("zero_loss", _zero_loss),
    Rule("skipping", _skipping), Rule("no_spike", _no_spike),
    Rule("input", _input))
NO_METRICS_FINDINGS: tuple[Rule[Finding | Sequence[Finding]], ...] = (
    Rule("no_iterations", _no_iterations), Rule("input", _input))


# -- verdicts ------------------------------------------------------------------------------------

def _no_metrics_verdict(a: LossSpikeAnalysis) -> tuple[str, Confidence]:
    if len(a.series):
        return (f"The logs count steps to iteration {a.last_iteration}, but no loss or grad "
                "norm the runbook can tell is the training loss: nothing to say about spikes.",
                Confidence.LOW)
    read = reading_words(a.incident)
    return ("No loss or grad-norm values in these logs" + (f" ({read})" if read else "")
            + ": nothing to say about spikes; if the job's step lines or a metrics export are "
            "elsewhere, add them to log_path.", Confidence.LOW)


def _head_words(a: LossSpikeAnalysis) -> tuple[str, Confidence]:
    """'Loss spike: loss 2.1 → 9.3 at iteration 120 (spike from 118…)' and its confidence."""
    head, n = a.head_spike, len(a.spikes)
    assert head is not None
    lead = ""
    if head["grad_norm_leads"]:
        lead = (f"; grad norm led, rising from iteration "
                f"{head['grad_norm_start_iteration']} to {_p(head['peak_grad_norm'])}")
    elif head["peak_grad_norm"]:
        lead = f"; grad norm peak {_p(head['peak_grad_norm'])}"
    count = f"{n} loss spike(s); " if n > 1 else "Loss spike: "
    conf = (Confidence.HIGH if (head["history_points"] >= 8
                                or head["peak_loss"] >= 1.5 * head["baseline_loss"])
            else Confidence.MEDIUM)
    return (f"{count}loss {_g(head['baseline_loss'])} → {_p(head['peak_loss'])} at iteration "
            f"{head['peak_iteration']} (spike from {head['start_iteration']}{lead})"), conf


def _where(a: LossSpikeAnalysis) -> str:
    r = a.rollback_iteration
    return (f"checkpoint {r}" if r is not None
            else f"the last checkpoint before iteration {a.first_bad}")


def _lr_jump_verdict(a: LossSpikeAnalysis) -> tuple[str, Confidence] | None:
    jump = a.lr_jump
    if a.head_spike is None or a.main_spike is None or not jump:
        return None
    what, conf = _head_words(a)
    return (f"{what} has not recovered by the end of the log (iteration "
            f"{a.last_iteration}); the learning rate jumped ×{jump['ratio']:.3g} "
            f"({_g(jump['from'])} → {_g(jump['to'])}) at iteration "
            f"{jump['iteration']}, as it began: roll back to {_where(a)} and restore the "
            "learning-rate schedule.", conf)


def _rollback_verdict(a: LossSpikeAnalysis) -> tuple[str, Confidence] | None:
    if a.head_spike is None or a.main_spike is None:
        return None
    what, conf = _head_words(a)
    w = a.main_spike["data_window"]
    return (f"{what} has not recovered by the end of the log (iteration "
            f"{a.last_iteration}): roll back to {_where(a)} and skip iterations "
            f"{w['iterations'][0]}–{w['iterations'][1]}"
            + (f" (consumed samples [{span_text(w['samples'])}))"
               if w["samples"][0] is not None else "") + ".", conf)


def _broken_at_end(a: LossSpikeAnalysis) -> bool:
    """The log ends in NaN, in a loss of exactly 0 or in skipped steps: a spike that recovered
    before that is no reason to keep training."""
    return a.nan_at_end or a.zero_loss_from is not None or _skipping_run(a) is not None


def _doubtful_recovery_verdict(a: LossSpikeAnalysis) -> tuple[str, Confidence] | None:
    head = a.head_spike
    doubt = (a.recovery_doubts(head) if head is not None and a.main_spike is None
             and not _broken_at_end(a) else [])
    if not doubt:  # a gap in the data or the log's end: the recovery is likely, not seen
        return None
    return (f"{_head_words(a)[0]} looks recovered by iteration {head['recovered_iteration']} "
            f"({'; '.join(doubt)}): keep training, and confirm on the next logged iterations.",
            Confidence.MEDIUM)


def _recovered_verdict(a: LossSpikeAnalysis) -> tuple[str, Confidence] | None:
    head = a.head_spike
    if head is None or a.main_spike is not None or _broken_at_end(a):
        return None
    what, conf = _head_words(a)
    return (f"{what} recovered by itself by iteration {head['recovered_iteration']}, "
            f"{_its(head['recovery_iterations'])} after it began: keep training.", conf)


def _nan_verdict(a: LossSpikeAnalysis) -> tuple[str, Confidence] | None:
    if not a.nan_at_end:
        return None
    r = a.rollback_iteration
    return (f"The loss/grad norm became NaN at iteration {a.nan_run_start} and "
            f"stayed NaN to the end of the log ({a.end_iteration}): roll back "
            + (f"to checkpoint {r}." if r is not None else "to the last checkpoint before it."),
            Confidence.HIGH)


def _collapse_verdict(a: LossSpikeAnalysis) -> tuple[str, Confidence] | None:
    if not a.loss_scale_collapses:
        return None
    c = a.loss_scale_collapses[0]
    return (f"No loss spike, but the fp16 loss scale collapsed from {_g(c['from'])} to "
            f"{_g(c['to'])} between iterations {c['start_iteration']} and "
            f"{c['end_iteration']}.", Confidence.HIGH)


def _zero_loss_verdict(a: LossSpikeAnalysis) -> tuple[str, Confidence] | None:
    z = a.zero_loss_from
    if z is None or a.nan_at_end:
        return None
    return (f"The loss fell to exactly 0 at iteration {z} and stayed there to the end of the "
            f"log ({a.last_iteration}): the run is not learning. A loss of exactly zero on "
            "every batch is a loss with nothing to measure — every label masked (-100: a chat "
            "template or a cut-off that drops the answer), or a half-precision overflow the "
            "loss function turns into zero; roll back before it and check a batch's labels.",
            Confidence.MEDIUM)


def _skipping_verdict(a: LossSpikeAnalysis) -> tuple[str, Confidence] | None:
    run = _skipping_run(a)
    if run is None:
        return None
    k = run[0]
    return (f"Every optimizer step from iteration {k} to the end of the log "
            f"({a.last_iteration}) was skipped: no update has been applied since, the run is "
            "not training. A loss scaler skips a step when the gradients hold an inf or NaN; on "
            "every step, that is an fp16 overflow it cannot scale away or a NaN already in the "
            "weights or the inputs. Roll back before it and train in bf16, or find the layer "
            "that overflows.", Confidence.MEDIUM)


def _went_on_verdict(a: LossSpikeAnalysis) -> tuple[str, Confidence] | None:
    nans, skipped = a.nan_iterations, a.skipped_iterations
    if not (nans or skipped):
        return None
    return (f"No loss spike in iterations {a.first_iteration}–{a.last_iteration}; {len(nans)} "
            f"NaN and {len(skipped)} skipped-step line(s), the run went on after them: keep "
            "training, watch the loss scale.", Confidence.MEDIUM)


def _quiet_verdict(a: LossSpikeAnalysis) -> tuple[str, Confidence]:
    n = int(a.series["loss"].notna().sum())
    return (f"No loss spike, NaN or skipped step in {len(a.series)} logged iteration(s) "
            f"({a.first_iteration}–{a.last_iteration}){_loss_drop(a)}.",
            Confidence.HIGH if n >= 20 else Confidence.MEDIUM)


# The firing rule of highest priority gives the verdict: the head spike (unrecovered with an LR
# jump, unrecovered, recovered but not fully seen, recovered: the last two only where the log
# does not end in NaN, zero loss or skipped steps), then NaN to the end, a loss-scale
# collapse, NaN or skipped steps the run survived, and last a quiet run.
VERDICTS: tuple[Rule[tuple[str, Confidence]], ...] = (
    Rule("lr_jump", _lr_jump_verdict, 70), Rule("rollback", _rollback_verdict, 60),
    Rule("doubtful_recovery", _doubtful_recovery_verdict, 50),
    Rule("recovered", _recovered_verdict, 40), Rule("nan_at_end", _nan_verdict, 30),
    Rule("zero_loss", _zero_loss_verdict, 25), Rule("skipping", _skipping_verdict, 22),
    Rule("loss_scale_collapse", _collapse_verdict, 20), Rule("went_on", _went_on_verdict, 10),
    Rule("quiet", _quiet_verdict, 0))
NO_METRICS_VERDICTS: tuple[Rule[tuple[str, Confidence]], ...] = (
    Rule("no_iterations", _no_metrics_verdict),)


# -- actions -------------------------------------------------------------------------------------

def _point_at_metrics(a: LossSpikeAnalysis) -> Action:
    if len(a.series):
        return action(
            "point_at_metrics", "Give the runbook the run's loss",
            f"The logs count steps to iteration {a.last_iteration} but print no loss the "
            "runbook can tell is the training loss.",
            "log the training loss as 'loss' (or export it: a TensorBoard scalar CSV, a W&B "
            "history CSV/JSONL) and run this runbook on that")
    return action(
        "point_at_metrics", "Point log_path at the training log or a metrics export",
        "Spikes are read from per-iteration loss and grad norm; none was found here.",
        "log_path = the rank that prints iteration lines (Megatron: the last pipeline stage), "
        "or a TensorBoard scalar CSV (run-…-tag-lm loss.csv), a W&B history CSV/JSONL, or "
        "HF trainer_state.json")


def _restore_lr(a: LossSpikeAnalysis) -> Action | None:
    jump, main, r = a.lr_jump, a.main_spike, a.rollback_iteration
    if not jump:
        return None
    where = _rollback_text(r, a.first_bad or jump["iteration"])
    back = f"roll back to {where} ({_tracker(r)}) and " if main is not None else ""
    return action(
        "restore_lr", "Restore the learning-rate schedule"
        + (f" and roll back to {where}" if main is not None else ""),
        f"The LR jumped ×{jump['ratio']:.3g} ({_g(jump['from'])} → {_g(jump['to'])}) at "
        f"iteration {jump['iteration']} as the spike began: a scheduler reset or an "
        "overridden LR on resume, not the data.",
        f"{back}resume with the schedule from the checkpoint: Megatron-DeepSpeed "
        "--use-checkpoint-lr-scheduler / Megatron-LM --use-checkpoint-opt_param-scheduler "
        "(and no --override-… flag), then check 'learning rate' in the first lines after the "
        "restart; HF Trainer: resume_from_checkpoint=<dir> restores the scheduler state")


def _skip_after_lr(a: LossSpikeAnalysis) -> Action | None:
    if a.main_spike is None or not a.lr_jump:
        return None
    lo, hi = a.main_spike["data_window"]["iterations"]
    return action(
        "rollback_skip_data", f"If it spikes again with the LR restored: skip iterations "
        f"{lo}–{hi}", "Then the data, not the schedule, drove it.",
        f"Megatron-DeepSpeed: --skip-train-iteration-range {lo}-{hi}; other loops: advance the "
        "data sampler past those batches")


def _unrecovered(a: LossSpikeAnalysis) -> dict[str, Any] | None:
    """The spike that has not recovered, when no LR jump explains it."""
    return a.main_spike if not a.lr_jump else None


def _rollback_skip_data(a: LossSpikeAnalysis) -> Action | None:
    main = _unrecovered(a)
    if main is None:
        return None
    w = main["data_window"]
    lo, hi = w["iterations"]
    known = w["samples"][0] is not None
    samples = f"consumed samples [{span_text(w['samples'])})" if known else (
        "the batches of those iterations")
    return action(
        "rollback_skip_data",
        f"Roll back to {_rollback_text(a.rollback_iteration, lo)} and skip the data of "
        f"iterations {lo}–{hi}",
        f"The loss spike from iteration {main['start_iteration']} (peak "
        f"{_g(main['peak_loss'])} at {main['peak_iteration']}) has not recovered; the "
        f"batches of iterations {lo}–{hi} ({samples}) drove it. PaLM restarted ~100 steps "
        "before such spikes and skipped 200–500 batches; widen the range if it recurs.",
        f"{_tracker(a.rollback_iteration)}; restart with Megatron-DeepSpeed's "
        f"--skip-train-iteration-range {lo}-{hi}; other loops: advance the data sampler past "
        + (f"samples {w['samples'][0]}..{w['samples'][1]} " if known
           else f"the batches of iterations {lo}..{hi} ")
        + "(e.g. accelerate's accelerator.skip_first_batches(dataloader, n) for the "
        "batches after the checkpoint)")


def _lower_lr(a: LossSpikeAnalysis) -> Action | None:
    main = _unrecovered(a)
    if main is None:
        return None
    return action(
        "lower_lr", "If it spikes again at the same point: lower the learning rate",
        "A spike that recurs on other data is an optimizer instability: a smaller LR (or "
        "tighter clipping) is the fix, as in the BLOOM-104B and OPT logbooks."
        + (" Grad norm led the loss here, which points that way already."
           if main["grad_norm_leads"] else ""),
        "restart from the same checkpoint with the LR scaled down (e.g. ×0.5 to ×0.8): "
        "Megatron --lr/--min-lr with --override-opt_param-scheduler (Megatron-LM) / "
        "--override-lr-scheduler (Megatron-DeepSpeed); HF learning_rate=…; and/or "
        "--clip-grad 1.0 (max_grad_norm=1.0)")


def _inspect_data(a: LossSpikeAnalysis) -> Action | None:
    main = _unrecovered(a)
    if main is None:
        return None
    w = main["data_window"]
    lo, hi = w["iterations"]
    return action(
        "inspect_data", f"Inspect the data of iterations {lo}–{hi}",
        "A spike that follows one batch is often garbage text, repeated tokens or very "
        "long documents; finding it lets the data pipeline drop it for good.",
        (f"dump samples {w['samples'][0]}..{w['samples'][1]}: build the train dataset as the "
         "job does (Megatron: build_train_valid_test_datasets) and print "
         f"tokenizer.detokenize(train_ds[i]['text']) for i in range({w['samples'][0]}, "
         f"{w['samples'][1]})") if w["samples"][0] is not None else
        f"replay the data loader to iterations {lo}..{hi} with the job's seed and dump "
        "those batches")


def _rollback_nan(a: LossSpikeAnalysis) -> Action | None:
    if a.main_spike is not None or not a.nan_at_end:
        return None
    first_bad = a.first_bad
    return action(
        "rollback_nan",
        f"Roll back to {_rollback_text(a.rollback_iteration, first_bad or 0)} before the NaNs",
        f"The loss/grad norm is NaN from iteration {first_bad} to the end of the log: the "
        "weights or optimizer state are poisoned and training will not come back.",
        "restart from that checkpoint with a lower LR (×0.5) or bf16 instead of fp16; if "
        "NaN recurs at the same iteration, skip its data (Megatron-DeepSpeed: "
        f"--skip-train-iteration-range {first_bad}-{first_bad}; other loops: advance the data "
        "sampler past that batch)")


def _loss_scale(a: LossSpikeAnalysis) -> Action | None:
    if not a.loss_scale_collapses:
        return None
    c = a.loss_scale_collapses[0]
    return action(
        "loss_scale", "Stop the fp16 loss-scale collapse",
        f"The loss scale fell from {_g(c['from'])} to {_g(c['to'])} between iterations "
        f"{c['start_iteration']} and {c['end_iteration']}: every step overflows, so "
        "updates are skipped and the model stalls or diverges.",
        "roll back before the collapse and train in bf16 (--bf16) or set a floor: Megatron "
        "--min-loss-scale 1 --initial-loss-scale 65536; DeepSpeed \"fp16\": "
        "{\"min_loss_scale\": 1, \"loss_scale_window\": 1000}; find the layer that "
        "overflows with a forward hook")


def _stop_skipping(a: LossSpikeAnalysis) -> Action | None:
    run = _skipping_run(a)
    if run is None:
        return None
    k = run[0]
    return action(
        "stop_skipping", f"Roll back before iteration {k} and stop the overflow on every step",
        f"Every optimizer step from {k} on was skipped: the weights have not changed since, "
        "and more steps will not change them.",
        "restart from the last checkpoint before it in bf16 (--bf16; DeepSpeed \"bf16\": "
        "{\"enabled\": true}) or with a lower initial loss scale (DeepSpeed \"fp16\": "
        "{\"initial_scale_power\": 16}); check the first batch and the loaded weights for "
        "inf/NaN (torch.isfinite) and find the layer that overflows with a forward hook")


def _keep_going(a: LossSpikeAnalysis) -> Action | None:
    head = a.head_spike
    if head is None or a.main_spike is not None or _broken_at_end(a):
        return None
    before = rollback_point(head["data_window"]["iterations"][0], a.checkpoints,
                            a.checkpoint_interval)
    keep = (f"keep global_step{before} (the last one before the spike) and the first "
            "one after it for study, as BLOOM did (global_step31200 and 31259)"
            if before is not None else "keep the checkpoints around the spike for study, as "
            "BLOOM did (global_step31200 and 31259)")
    doubt = a.recovery_doubts(head)
    return action(
        "keep_going", ("Keep training, and confirm the recovery on the next iterations"
                       if doubt else "Keep training: the spike recovered by itself"),
        f"The loss came back to its pre-spike baseline by iteration "
        f"{head['recovered_iteration']}, {head['recovery_iterations']} iterations after the "
        "spike began; rolling back would cost time for nothing."
        + (f" Not fully seen: {'; '.join(doubt)}." if doubt else ""),
        f"no change to the job; {keep}; page again if the loss leaves its baseline for "
        "longer or spikes repeat")


def _repeated_spikes(a: LossSpikeAnalysis) -> Action | None:
    if _keep_going(a) is None or len(a.spikes) < 3:
        return None
    return action(
        "repeated_spikes", "Spikes keep coming: lower the LR or tighten clipping",
        f"{len(a.spikes)} spikes in this log, even if each recovered: the run sits at "
        "the edge of stability.",
        "at the next restart scale the LR down (×0.8) or set --clip-grad 1.0; consider "
        "Adam beta2 0.95")


def _check_labels(a: LossSpikeAnalysis) -> Action | None:
    z = a.zero_loss_from
    if z is None or a.nan_at_end:
        return None
    return action(
        "check_labels", f"Check what the loss is computed on from iteration {z}",
        "A loss of exactly 0 on every logged step is no learning: the batches carry no label "
        "the loss counts, or the forward pass overflows and the loss comes out as 0.",
        "decode one batch of the job's data collator and count labels != -100 (HF: "
        "sum((b['labels'] != -100).sum() for b in loader)); if there are labels, run one "
        "step in fp32 (or bf16) and compare the loss; restart from a checkpoint before "
        f"iteration {z} once fixed")


def _nothing_to_act_on(a: LossSpikeAnalysis) -> Action | None:
    if any(r.make(a) for r in ACTIONS if r.id not in ("keep_going_quiet", "watch_skips")):
        return None
    return action(
        "keep_going", "Keep training: no spike to act on",
        "The loss followed its baseline in this log.",
        "no change; run this runbook again on the next alert (or on a longer stretch of the "
        "log) with a TensorBoard/W&B export of the whole run if the text log is partial")


def _watch_skips(a: LossSpikeAnalysis) -> Action | None:
    if not a.skipped_iterations or a.loss_scale_collapses or _skipping_run(a) is not None:
        return None
    return action(
        "watch_skips", "Watch the skipped (overflowed) steps",
        f"{len(a.skipped_iterations)} logged line(s) counted skipped steps: "
        "occasional fp16 overflows are normal, a run of them is a loss-scale collapse.",
        "grep 'number of skipped iterations' / 'OVERFLOW' in the log; alert when more than "
        "a few in a row")


ACTIONS: tuple[Rule[Action], ...] = (
    Rule("restore_lr", _restore_lr, 1), Rule("rollback_skip_data_lr", _skip_after_lr, 2),
    Rule("rollback_skip_data", _rollback_skip_data, 2), Rule("lower_lr", _lower_lr, 3),
    Rule("inspect_data", _inspect_data, 4), Rule("rollback_nan", _rollback_nan, 2),
    Rule("loss_scale", _loss_scale, 3), Rule("stop_skipping", _stop_skipping, 2),
    Rule("keep_going", _keep_going, 1),
    Rule("repeated_spikes", _repeated_spikes, 2), Rule("check_labels", _check_labels, 2),
    Rule("keep_going_quiet", _nothing_to_act_on, 1), Rule("watch_skips", _watch_skips, 5))
NO_METRICS_ACTIONS: tuple[Rule[Action], ...] = (Rule("point_at_metrics", _point_at_metrics, 1),)


def spikes_table(report: Report) -> pd.DataFrame:
    """The spikes of a report as a table (one row per spike)."""
    return spikes_frame(report.facts.get("spikes") or [])
