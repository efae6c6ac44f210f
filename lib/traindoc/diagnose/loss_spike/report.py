"""``report``: the loss-spike diagnosis in words — findings, verdict and ranked actions for a
``LossSpikeAnalysis``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...report import Action, Finding, Report, evidence, ranked
from ..common import input_findings, reading_words
from .analysis import LossSpikeAnalysis, span_text, spikes_frame
from .series import rollback_point

FACT_KEYS = ("spikes", "grad_norm_leads", "nan_iterations", "skipped_iterations",
             "rollback_iteration", "last_iteration")
MAX_LISTED = 500  # nan/skipped iterations listed in facts (the findings give the totals)


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


# -- the report ------------------------------------------------------------------------------
def report(analysis: LossSpikeAnalysis) -> Report:
    """The findings, verdict and ranked actions for ``analysis``: keep going, or roll back
    and skip data (or restore the learning rate)."""
    a = analysis
    facts: dict[str, Any] = {k_: None for k_ in FACT_KEYS}
    facts.update(spikes=[], nan_iterations=[], skipped_iterations=[])
    findings: list[Finding] = []
    actions: list[Action] = []
    incident, s = a.incident, a.series
    if not a.has_metrics:
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
        read = reading_words(incident)
        return Report("loss_spike", "No loss or grad-norm values in these logs" + (
                      f" ({read})" if read else "") + ": nothing to say about spikes; if the "
                      "job's step lines or a metrics export are elsewhere, add them to "
                      "log_path.", "low", facts, findings, ranked(actions))

    spikes, lonely = a.spikes, a.grad_norm_spikes
    nans, skipped = a.nan_iterations, a.skipped_iterations
    collapses = a.loss_scale_collapses
    facts["spikes"] = spikes
    facts["nan_iterations"] = nans[:MAX_LISTED]
    facts["skipped_iterations"] = skipped[:MAX_LISTED]
    last_it, first_it = a.last_iteration, a.first_iteration
    facts["last_iteration"] = last_it  # (what the verdict covers: the logs were read to here)
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
        gap = a.spike_gaps(sp)
        if gap:
            findings.append(Finding(
                f"log_gap_{sp['start_iteration']}", "info",
                "The log has no lines for iteration(s) "
                + ", ".join(f"{lo}–{hi}" if lo != hi else f"{lo}" for lo, hi in gap[:5])
                + " inside this spike: the recovery (or more of the spike) happened there, so "
                "recovered_iteration is an upper bound", []))
    if len(spikes) > 10:
        findings.append(Finding("more_spikes", "warning",
                                f"{len(spikes) - 10} more loss spike(s) not listed", []))
    head, jump = a.head_spike, a.lr_jump
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
    if head is not None:
        w = head["data_window"]
        findings.append(Finding(
            "data_window", "info",
            f"The batches that led into the spike: iterations {span_text(w['iterations'])}"
            + (f", consumed samples [{span_text(w['samples'])})" if None not in w["samples"] else "")
            + (f", consumed tokens [{span_text(w['tokens'])})" if None not in w["tokens"] else ""),
            []))
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
    nan_at_end = a.nan_at_end
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

    facts["rollback_iteration"] = a.rollback_iteration

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

    actions = _actions(a, facts)
    verdict, confidence = _verdict(a, facts, lf)
    return Report("loss_spike", verdict, confidence, facts, findings, ranked(actions))


def _rollback_text(r: int | None, first_bad: int) -> str:
    return (f"checkpoint iteration {r} (global_step{r})" if r is not None else
            f"the last checkpoint saved before iteration {first_bad}")


def _tracker(r: int | None) -> str:
    """How to make a job resume from checkpoint iteration ``r``."""
    it = r if r is not None else "<iteration>"
    return (f"point the checkpoint directory's tracker at it: Megatron echo {it} > "
            f"<save>/latest_checkpointed_iteration.txt, DeepSpeed echo global_step{it} > "
            "<save>/latest")


def _actions(a: LossSpikeAnalysis, f: dict[str, Any]) -> list[Action]:
    """What to do, most urgent first (``f``: the facts, with the rollback iteration)."""
    main, head, jump = a.main_spike, a.head_spike, a.lr_jump
    nan_at_end, collapses, first_bad = a.nan_at_end, a.loss_scale_collapses, a.first_bad
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
        samples = f"consumed samples [{span_text(w['samples'])})" if w["samples"][0] is not None else (
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
        before = rollback_point(head["data_window"]["iterations"][0], a.checkpoints,
                                a.checkpoint_interval)
        keep = (f"keep global_step{before} (the last one before the spike) and the first "
                "one after it for study, as BLOOM did (global_step31200 and 31259)"
                if before is not None else "keep the checkpoints around the spike for study, as "
                "BLOOM did (global_step31200 and 31259)")
        doubt = a.recovery_doubts(head)
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


def _verdict(a: LossSpikeAnalysis, f: dict[str, Any], lf: pd.DataFrame) -> tuple[str, str]:
    """The verdict sentence and its confidence (``lf``: the iterations with a logged loss)."""
    s, main, head, jump = a.series, a.main_spike, a.head_spike, a.lr_jump
    nans, skipped, collapses = a.nan_iterations, a.skipped_iterations, a.loss_scale_collapses
    first_it, last_it, first_bad = a.first_iteration, a.last_iteration, a.first_bad
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
                    + (f" (consumed samples [{span_text(w['samples'])}))"
                       if w["samples"][0] is not None else "") + ".", conf)
        rec = head["recovered_iteration"]
        doubt = a.recovery_doubts(head)
        if doubt:  # a gap in the data or the log's end: the recovery is likely, not seen
            return (f"{count}{what} looks recovered by iteration {rec} ({'; '.join(doubt)}): "
                    "keep training, and confirm on the next logged iterations.", "medium")
        return (f"{count}{what} recovered by itself by iteration {rec}, "
                f"{_its(head['recovery_iterations'])} after it began: keep training.", conf)
    if a.nan_at_end:
        return (f"The loss/grad norm became NaN at iteration {a.nan_run_start} and "
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
    return spikes_frame(report.facts.get("spikes") or [])
