"""``report``: the throughput analysis in words — findings, verdict, confidence and ranked
actions, as rules (``traindoc.report.Rule``) — and ``diagnose``, analysis and report in one
call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ...hostlist import compress
from ...incident import Incident
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
from ...schema import with_source
from ...shellsafe import hosts_arg, shown
from ..common import (
    NODE_VAR,
    input_findings,
    job_script_arg,
    reading_words,
    script_note,
    who,
)
from .analysis import ThroughputAnalysis, analyse
from .bisect import SCOPE_HOSTS, SCOPE_NODES, SCOPE_PROCESS, SCOPE_SLURM
from .change import MAD_TO_SIGMA
from .series import METRICS

FACT_KEYS = ("metric", "baseline", "degraded", "drop_pct", "change_iteration", "suspect_ranks",
             "suspect_hosts", "remaining_iterations", "eta_days", "bisect_plan")
STRONG_Z = 8.0  # a shift of this many robust standard errors is beyond doubt
STRONG_AFTER = 5  # ... when held for this many logged iterations
STEADY_POINTS = 20  # logged iterations with no change that make "no drop" a medium-confidence call
PLAN_STEPS_SHOWN = 4  # bisection steps spelled out in the action


def diagnose(incident: Incident, metric: str = "auto", hosts: str | list[str] | None = None,
             spare_nodes: int = 3, min_segment: int = 2, threshold: float = 4.0,
             min_drop_pct: float = 1.0, min_lag_ms: float = 5.0,
             job_script: str | None = None) -> Report:
    """Diagnose a throughput drop. ``metric``: "auto" or one of ``METRICS``; ``hosts``: the
    job's nodes (hostlist expression or list) when the logs do not name them; ``spare_nodes``:
    idle nodes that can stand in for excluded ones (the bisection excludes at most that many
    per restart); ``min_segment``, ``threshold``, ``min_drop_pct``: the change-point rule;
    ``min_lag_ms``: the flight-recorder lag that makes a rank late."""
    return report(analyse(incident, metric, hosts=hosts, spare_nodes=spare_nodes,
                          min_segment=min_segment, threshold=threshold,
                          min_drop_pct=min_drop_pct, min_lag_ms=min_lag_ms,
                          job_script=job_script))


def report(a: ThroughputAnalysis) -> Report:
    """The Report for an ``analyse`` result: findings, verdict, confidence, actions (when no
    metric could be analysed, the ``UNJUDGED_`` rules)."""
    if not a.judged:
        verdict, confidence = verdict_of(UNJUDGED_VERDICTS, a)
        return Report("throughput", verdict, confidence, facts(a),
                      fired_findings(UNJUDGED_FINDINGS, a), fired_actions(UNJUDGED_ACTIONS, a))
    verdict, confidence = verdict_of(VERDICTS, a)
    return Report("throughput", verdict, confidence, facts(a), fired_findings(FINDINGS, a),
                  fired_actions(ACTIONS, a))


def facts(a: ThroughputAnalysis) -> dict[str, Any]:
    """The report's facts (``FACT_KEYS``, and the shape, the coincidences and the cost)."""
    f: dict[str, Any] = {k: None for k in FACT_KEYS}
    f.update(suspect_ranks=[], suspect_hosts=[], metric=a.metric)
    f.update(eta_days_at_baseline=None, days_lost=None, shape=None, coincides=[])
    if not a.judged:
        if a.sparse_metric is not None:
            f["metric"] = a.sparse_metric
        elif a.summary is not None:  # the run's average, from its end-of-run summary
            f.update(metric=a.summary[0], baseline=round(a.summary[1], 4))
        return f
    if a.change is not None and a.change_position is not None:
        f.update(baseline=a.baseline, degraded=a.degraded, drop_pct=a.drop_pct,
                 change_iteration=a.change_iteration, shape=a.change.shape)
    elif a.change is None and a.steady is not None:
        f["degraded"] = False  # judged: the run holds its rate (None: unknown, as across a gap)
    f.update(baseline=a.baseline, coincides=list(a.coincides), suspect_ranks=list(a.suspect_ranks),
             suspect_hosts=list(a.suspect_hosts), bisect_plan=a.bisect_plan,
             remaining_iterations=a.remaining_iterations, eta_days=a.eta_days,
             eta_days_at_baseline=a.eta_days_at_baseline, days_lost=a.days_lost)
    return f


def _times(ch: Any) -> float:
    """How many times worse the degraded level is than the baseline."""
    lo, hi = sorted((abs(ch.baseline), abs(ch.degraded)))
    return hi / lo if lo else float("inf")


def _label(a: ThroughputAnalysis) -> str:
    """The analysed metric's label (a judged analysis has one)."""
    assert a.spec is not None
    return a.spec.label


# -- findings ------------------------------------------------------------------------------------

def _metric_unavailable(a: ThroughputAnalysis) -> Finding | None:
    if a.requested == "auto" or a.requested == a.metric:
        return None
    return Finding(
        "metric_unavailable", Severity.WARNING,
        f"metric={a.requested!r} " + ("is not one of " + ", ".join(METRICS)
                                      if a.requested not in METRICS else
                                      "has no data in these logs")
        + (f"; analysed {a.metric} instead" if a.metric else ""), [])


def _too_few_points(a: ThroughputAnalysis) -> Finding | None:
    if a.sparse_metric is None:  # a metric is logged, too rarely to find a change in it
        return None
    return Finding(
        "too_few_points", Severity.WARNING,
        f"Only {a.sparse_points} logged value(s) of {METRICS[a.sparse_metric].label}: too few "
        "to tell a change from noise (a change needs a level held over several logged "
        "iterations on each side)",
        evidence(with_source(a.incident.iterations).head(5)))


def _no_metric(a: ThroughputAnalysis) -> Finding | None:
    if a.sparse_metric is not None:
        return None
    return Finding(
        "no_metric", Severity.WARNING,
        "No throughput metric in these logs: no iteration line with TFLOPs, tokens/s, "
        "samples/s or seconds per iteration, and no tqdm bar with a rate",
        evidence(with_source(a.incident.iterations).head(5)))


def _input(a: ThroughputAnalysis) -> list[Finding]:
    return input_findings(a.incident)


def _iterations(a: ThroughputAnalysis) -> np.ndarray:
    return a.series["iteration"].to_numpy(dtype=np.int64)


def _drop_title(a: ThroughputAnalysis) -> str:
    """The change in one sentence: a drop (gradual or not), a pause or a stall."""
    ch, p, label, its = a.change, a.change_position, _label(a), _iterations(a)
    assert ch is not None and p is not None
    if ch.shape == "pause":
        return (f"One logged interval, ending at iteration {its[p]}, is {_times(ch):.0f}× "
                f"slower than the {ch.n_before + ch.n_after - 1} others ({label} "
                f"{ch.baseline:.4g} → {ch.degraded:.4g}); the iterations after it run at "
                "the old pace again: the job paused or crawled for a long while, then "
                "recovered")
    if ch.shape == "stall":
        return (f"The last logged interval is {_times(ch):.0f}× slower than the "
                f"{ch.n_before} before it ({label} {ch.baseline:.4g} → {ch.degraded:.4g} at "
                f"iteration {its[p]}): the job stalled or crawled there. One interval "
                "cannot tell a pause from the start of a hang or a lasting slowdown")
    title = (f"{label} fell {ch.drop_pct:.1f}% from {ch.baseline:.4g} to {ch.degraded:.4g} "
             f"at iteration {its[p]} ({ch.n_before} logged iterations before, {ch.n_after} "
             f"after; shift {ch.z:.1f} robust standard errors)")
    if ch.shape == "gradual" and a.onset_iteration is not None:
        title += f"; a gradual decline that began around iteration {a.onset_iteration}"
    return title


def _changed(a: ThroughputAnalysis) -> bool:
    """A change was found and placed in the series."""
    return a.change is not None and a.change_position is not None


def _throughput_drop(a: ThroughputAnalysis) -> Finding | None:
    if not _changed(a):
        return None
    return Finding("throughput_drop", Severity.CRITICAL, _drop_title(a),
                   evidence(a.around_change()))


def _recovered(a: ThroughputAnalysis) -> Finding | None:
    ch = a.change
    if ch is None or a.change_position is None or not ch.recovered:
        return None
    return Finding(
        "recovered", Severity.INFO,
        f"The last logged iterations are back near the baseline ({_label(a)}): the slowdown "
        "did not last to the end of the logs", evidence(a.series.tail(3)))


def _no_change(a: ThroughputAnalysis) -> Finding | None:
    if _changed(a) or a.across_gap is not None:
        return None
    v, its = a.cleaned, _iterations(a)
    level = float(np.median(v)) if len(v) else float("nan")
    spread = MAD_TO_SIGMA * float(np.median(np.abs(v - level))) if len(v) else float("nan")
    return Finding(
        "no_change", Severity.INFO,
        f"No lasting change in {_label(a)}: {len(v)} logged iterations "
        f"({its[0]}–{its[-1]}) stay at {level:.4g} ± {spread:.2g}", evidence(a.series.tail(3)))


def _scheduled(a: ThroughputAnalysis) -> Finding | None:
    ch = a.scheduled
    if ch is None:
        return None
    kinds = ", ".join(sorted({str(m)[len("schedule:"):] for m in a.schedule["metric"]}))
    return Finding(
        "scheduled_slide", Severity.INFO,
        f"{_label(a)} slides from {ch.baseline:.4g} to {ch.degraded:.4g} as the run's own "
        f"schedule ({kinds}) gives each step more work: by design, not a degradation",
        [f"{r.source}: {r.line}" for r in a.schedule.head(3).itertuples()])


def _gap_ends(a: ThroughputAnalysis) -> tuple[int, int] | None:
    """The logged steps on either side of the gap a change was seen across (``across_gap``)."""
    ch = a.across_gap
    if ch is None:
        return None
    its = a.series["iteration"].to_numpy()[a.used]
    return int(its[ch.index - 1]), int(its[ch.index])


def _across_gap(a: ThroughputAnalysis) -> Finding | None:
    ends, ch = _gap_ends(a), a.across_gap
    if ends is None or ch is None:
        return None
    rows = a.series.iloc[a.used[[ch.index - 1, ch.index]]]
    return Finding(
        "change_across_gap", Severity.INFO,
        f"{_label(a)} is {ch.baseline:.4g} before iteration {ends[0]} and {ch.degraded:.4g} "
        f"after {ends[1]}, but the {ends[1] - ends[0]:,} steps between them are not in the log: "
        "whether the rate stepped, drifted or the settings changed there is unknown",
        evidence(rows))


def _spanned(a: ThroughputAnalysis) -> bool:
    """A change placed in the series, with the iterations around it known."""
    return _changed(a) and a.change_span is not None


def _discontinuities(a: ThroughputAnalysis) -> Finding | None:
    disc = a.discontinuities
    if _spanned(a) or not len(disc):
        return None
    return Finding(
        "discontinuities", Severity.INFO,
        f"{len(disc)} restart(s)/gap(s) in the iteration numbers: "
        + ", ".join(f"{k} {f}→{t}" for k, f, t in
                    list(zip(disc["kind"], disc["from_iteration"], disc["to_iteration"],
                             strict=False))[:5]), evidence(disc))


def _change_at_restart(a: ThroughputAnalysis) -> Finding | None:
    near, span = a.restarts_at_change, a.change_span
    if not _changed(a) or span is None or not len(near):
        return None
    lo_it, hi_it = span
    return Finding(
        "change_at_restart", Severity.WARNING,
        f"The change coincides with a {'/'.join(near['kind'].unique())} between iterations "
        f"{lo_it} and {hi_it}: a restart can land on different nodes — compare the node "
        "lists of the two allocations", evidence(near))


def _change_at_event(a: ThroughputAnalysis) -> Finding | None:
    ev_near = a.events_at_change
    if not _spanned(a) or not len(ev_near):
        return None
    kinds = sorted(set(ev_near["kind"]))
    return Finding(
        "change_at_event", Severity.WARNING,
        f"An {' and '.join(kinds)} happened at the change (iteration "
        f"{int(ev_near['iteration'].iloc[0])}): check that the slowdown outlasts it",
        evidence(ev_near))


def _nothing_coincides(a: ThroughputAnalysis) -> Finding | None:
    ch, p, disc, ev = a.change, a.change_position, a.discontinuities, a.events
    if ch is None or p is None or a.change_span is None or a.coincides:
        return None
    run_ok = not len(disc) or not len(disc[disc["position"] <= p + ch.n_after])
    parts = ["no restart or gap in the iteration numbers" if run_ok
             else "no restart or gap at the change"]
    if len(ev):
        parts.append(f"no eval or checkpoint save at the change (the logs show "
                     f"{len(ev)} of them elsewhere)")
    else:
        parts.append("no eval or checkpoint line in these logs (so none can be ruled in or "
                     "out)")
    return Finding("nothing_coincides", Severity.INFO,
                   "Nothing coincides with the change: " + "; ".join(parts), [])


def _transients(a: ThroughputAnalysis) -> Finding | None:
    if not _spanned(a) or not (a.n_set_aside or a.n_replaced):
        return None
    return Finding(
        "transients", Severity.INFO,
        f"{a.n_set_aside} iteration(s) right after eval/save and {a.n_replaced} isolated "
        "slow iteration(s) were set aside as transients (not a lasting change)",
        evidence(a.replaced_rows(), limit=5))


def _suspects(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of a per-rank or per-host table marked suspect (none of an empty table)."""
    return df[df["suspect"]] if len(df) else df


def _slow_ranks_iterations(a: ThroughputAnalysis) -> Finding | None:
    sus = _suspects(a.ranks)
    if not len(sus):
        return None
    return Finding(
        "slow_ranks_iterations", Severity.CRITICAL,
        "Per-rank iteration figures: "
        + ", ".join(f"rank {int(r)} ({v:.4g} {_label(a)}, z={z:.1f})" for r, v, z in
                    zip(sus["rank"], sus["value"], sus["z"], strict=False))
        + (" is" if len(sus) == 1 else " are") + " slower than the other ranks", [])


def _host_timing_rows(incident: Incident, metric: str | None = None,
                      hosts: set[str] | None = None) -> pd.DataFrame:
    """``host_timings`` rows of one metric, or of some hosts, as evidence."""
    ht = incident.tables.get("host_timings")
    if ht is None:
        return pd.DataFrame()
    if metric is not None:
        return ht[ht["metric"] == metric]
    return ht[ht["host"].isin(list(hosts or ()))]


def _straggler_detector(a: ThroughputAnalysis) -> Finding | None:
    if not len(a.stragglers):
        return None
    top = a.stragglers.iloc[0]
    reports = int(top["reports"])
    spread = float(top["spread_pct"]) if pd.notna(top["spread_pct"]) else 0.0
    if a.straggler_rank is not None:
        return Finding(
            "straggler_detector", Severity.CRITICAL,
            f"Megatron's straggler detector names rank {int(top['rank'])} the slowest in "
            f"{top['share']:.0%} of {reports} reports (max/min RTT spread {spread:.1f}%)",
            evidence(_host_timing_rows(a.incident, metric="Rtt/Mx"), limit=5))
    return Finding(
        "straggler_detector", Severity.INFO,
        f"Megatron's straggler detector: no rank is consistently the slowest "
        f"({reports} report(s), top rank {int(top['rank'])} in {top['share']:.0%}, "
        f"spread {spread:.1f}%)", [])


def _slow_ranks_timers(a: ThroughputAnalysis) -> Finding | None:
    sus = _suspects(a.timers)
    if not len(sus):
        return None
    return Finding(
        "slow_ranks_timers", Severity.CRITICAL,
        "Per-rank Megatron timers: "
        + "; ".join(f"rank {int(r)} {t} {v:.1f} ms (z={z:.1f})" for r, t, v, z in
                    zip(sus["rank"], sus["timer"], sus["value"], sus["z"], strict=False)),
        [])


def _slow_hosts_benchmark(a: ThroughputAnalysis) -> Finding | None:
    sus = _suspects(a.benchmarks)
    if not len(sus):
        return None
    return Finding(
        "slow_hosts_benchmark", Severity.CRITICAL,
        "Benchmark: "
        + "; ".join(f"{p} {m} {v:.4g} ({rel:+.1f}% slower than the median, z={z:.1f})"
                    for p, m, v, rel, z in zip(sus["peer"], sus["metric"], sus["value"],
                                               sus["rel_pct"], sus["z"], strict=False)),
        evidence(_host_timing_rows(a.incident, hosts=set(sus["host"])), limit=10))


def _benchmark_metric_unknown(a: ThroughputAnalysis) -> Finding | None:
    if not len(a.benchmarks):
        return None
    undirected = a.benchmarks[a.benchmarks["direction"] == 0]["metric"].unique()
    if not len(undirected):
        return None
    return Finding(
        "benchmark_metric_unknown", Severity.INFO,
        f"Benchmark column(s) {', '.join(map(str, undirected))}: the name does not say "
        "whether larger is slower; name it seconds/time or tflops/throughput", [])


def _late_ranks(a: ThroughputAnalysis) -> Finding | None:
    sus = _suspects(a.lags)
    if not len(sus):
        return None
    return Finding(
        "late_ranks", Severity.CRITICAL,
        "Flight recorder: "
        + "; ".join(f"rank {int(r)} enqueues collectives {lag:.0f} ms after the first "
                    f"rank (last in {share:.0%} of {n})" + (
                        f", from collective #{int(first)} on" if pd.notna(first) else "")
                    for r, lag, share, n, first in
                    zip(sus["rank"], sus["lag_ms"], sus["last_share"],
                        sus["collectives"], sus["first_late_seq"], strict=False))
        + ": the other ranks wait for it", [])


def _bad_hosts(a: ThroughputAnalysis) -> Finding | None:
    if a.hosts_error is None:
        return None
    return Finding("bad_hosts", Severity.WARNING, f"The hosts parameter is not a valid "
                   f"hostlist: {a.hosts_error}", [])


def _no_spares(a: ThroughputAnalysis) -> Finding | None:
    if not a.wants_bisection or a.bisect_plan is not None:
        return None
    return Finding(
        "no_spares", Severity.WARNING, f"{len(a.node_list)} nodes but "
        f"spare_nodes={a.spare_nodes}: no node can be excluded without shrinking the job", [])


def _bisect_plan(a: ThroughputAnalysis) -> Finding | None:
    plan = a.bisect_plan
    if not a.wants_bisection or plan is None:
        return None
    return Finding(
        "bisect_plan", Severity.INFO,
        f"Bisection over {plan['n_hosts']} nodes ({plan['hosts']}, from {a.nodes_from}) with "
        f"{plan['spares']} spare node(s): at most {plan['worst_case_runs']} restarts "
        f"(~{plan['expected_runs']} on average); a run is fast if {plan['fast_if']}", [])


def _eta(a: ThroughputAnalysis) -> Finding | None:
    last, cur_spi = a.last_step, a.current_s_per_iteration
    if last is None or cur_spi is None:
        return None
    if last.remaining == 0:
        return Finding("eta", Severity.INFO, f"The job reached its last iteration "
                       f"({last.iteration}): nothing remains to lose", [last.evidence()])
    text = (f"{last.remaining} iterations remain (of {last.total}): "
            f"{a.eta_days} days at the current {cur_spi:.4g} s/iteration")
    base_spi = a.baseline_s_per_iteration
    if a.change is not None and base_spi is not None:
        text += (f", {a.eta_days_at_baseline} at the baseline {base_spi:.4g} s/iteration: "
                 f"the slowdown costs {a.days_lost} days if left alone")
    return Finding("eta", Severity.INFO, text, [last.evidence()])


def _one_view(a: ThroughputAnalysis) -> Finding | None:
    if a.change is None or a.suspect_ranks or a.suspect_hosts or not a.one_view:
        return None
    return Finding(
        "one_view", Severity.WARNING,
        "These logs carry the job's throughput as one number per iteration (one rank "
        "prints it): nothing in them names the slow GPU. Per-rank timing (Megatron "
        "--log-straggler, --timing-log-option all), flight-recorder dumps of every rank, or "
        "a per-node benchmark table would; else bisect the nodes", [])


FINDINGS: tuple[Rule[Finding | Sequence[Finding]], ...] = (
    Rule("metric_unavailable", _metric_unavailable), Rule("throughput_drop", _throughput_drop),
    Rule("recovered", _recovered), Rule("no_change", _no_change),
    Rule("scheduled_slide", _scheduled), Rule("change_across_gap", _across_gap),
    Rule("discontinuities", _discontinuities), Rule("change_at_restart", _change_at_restart),
    Rule("change_at_event", _change_at_event), Rule("nothing_coincides", _nothing_coincides),
    Rule("transients", _transients), Rule("slow_ranks_iterations", _slow_ranks_iterations),
    Rule("straggler_detector", _straggler_detector),
    Rule("slow_ranks_timers", _slow_ranks_timers),
    Rule("slow_hosts_benchmark", _slow_hosts_benchmark),
    Rule("benchmark_metric_unknown", _benchmark_metric_unknown),
    Rule("late_ranks", _late_ranks), Rule("bad_hosts", _bad_hosts),
    Rule("no_spares", _no_spares), Rule("bisect_plan", _bisect_plan), Rule("eta", _eta),
    Rule("one_view", _one_view), Rule("input", _input))
# When no metric could be analysed (``judged`` is False).
UNJUDGED_FINDINGS: tuple[Rule[Finding | Sequence[Finding]], ...] = (
    Rule("metric_unavailable", _metric_unavailable), Rule("too_few_points", _too_few_points),
    Rule("no_metric", _no_metric), Rule("input", _input))


# -- verdicts ------------------------------------------------------------------------------------

def _sparse_verdict(a: ThroughputAnalysis) -> tuple[str, Confidence] | None:
    if a.sparse_metric is None:
        return None
    return (f"Only {a.sparse_points} logged value(s) of {METRICS[a.sparse_metric].label}: too "
            "few to say whether the job slowed down; log throughput more often or point "
            "log_path at the whole training log.", Confidence.LOW)


def _summary_verdict(a: ThroughputAnalysis) -> tuple[str, Confidence] | None:
    if a.summary is None:
        return None
    name, rate, n = a.summary
    return (f"No per-step throughput figures: the trainer's end-of-run summary says the run "
            f"averaged {rate:.4g} {METRICS[name].label}" + (f" ({n} processes' summaries)"
                                                             if n > 1 else "")
            + "; an average over the whole run cannot date or size a slowdown: log "
            "throughput per step to find one.", Confidence.LOW)


def _no_metric_verdict(a: ThroughputAnalysis) -> tuple[str, Confidence]:
    read = reading_words(a.incident)
    return ("No throughput figures in these logs" + (f" ({read})" if read else "")
            + ": no iteration line or progress bar with a rate was recognised; if the job's "
            "step lines are in another file, add it to log_path.", Confidence.LOW)


def _steady_verdict(a: ThroughputAnalysis) -> tuple[str, Confidence]:
    n = len(a.cleaned)
    at = f"runs at {a.baseline:.4g} {_label(a)}" if a.baseline is not None else f"{_label(a)} steady"
    return (f"No lasting throughput drop in {n} logged iterations ({at}); "
            "if the job feels slow, compare with an earlier healthy run's figures.",
            Confidence.MEDIUM if n >= STEADY_POINTS else Confidence.LOW)


def _gap_verdict(a: ThroughputAnalysis) -> tuple[str, Confidence] | None:
    ends, ch = _gap_ends(a), a.across_gap
    if ends is None or ch is None:
        return None
    return (f"Unknown: the log has a gap: {_label(a)} is {ch.baseline:.4g} up to iteration "
            f"{ends[0]} and {ch.degraded:.4g} from {ends[1]}, with the {ends[1] - ends[0]:,} "
            "steps between not logged; a change seen only across the gap is no drop on its "
            "own: log the steps in between to tell a slowdown from a drift.", Confidence.LOW)


def _pause_verdict(a: ThroughputAnalysis) -> tuple[str, Confidence] | None:
    ch = a.change
    if ch is None or ch.shape != "pause":
        return None
    return (f"The job paused or crawled in the interval ending at iteration "
            f"{facts(a)['change_iteration']} ({_label(a)} {ch.baseline:.4g} → "
            f"{ch.degraded:.4g}, {_times(ch):.0f}× worse) and then ran at its old pace again; "
            "look at what the host did in that interval rather than for a slow node.",
            Confidence.MEDIUM)


def _stall_verdict(a: ThroughputAnalysis) -> tuple[str, Confidence] | None:
    ch = a.change
    if ch is None or ch.shape != "stall":
        return None
    return (f"The job stalled in its last logged interval: {_label(a)} {_times(ch):.0f}× "
            f"worse ({ch.baseline:.4g} → {ch.degraded:.4g}) at iteration "
            f"{facts(a)['change_iteration']} after {ch.n_before} steady ones; find out whether "
            "it still makes progress before hunting a slow node.", Confidence.MEDIUM)


def _who_is_slow(f: dict[str, Any]) -> str:
    """The slow nodes or ranks, else the bisection that finds them, in the verdict's words."""
    if f["suspect_hosts"] or f["suspect_ranks"]:
        names = [f"node {h}" for h in f["suspect_hosts"]] or [f"rank {r}" for r in
                                                            f["suspect_ranks"]]
        return f"; slow: {', '.join(names)}"
    if f["bisect_plan"]:
        bp = f["bisect_plan"]
        return (f"; nothing names the slow node — bisect {bp['n_hosts']} nodes in at most "
                f"{bp['worst_case_runs']} restarts ({bp['spares']} spares), starting with "
                f"--exclude='{bp['steps'][0]['exclude']}'")
    return "; nothing in these logs names the slow rank or node"


def _drop_verdict(a: ThroughputAnalysis) -> tuple[str, Confidence] | None:
    ch, f = a.change, facts(a)
    if ch is None:
        return None
    what = (f"{_label(a)} dropped {ch.drop_pct:.1f}% ({ch.baseline:.4g} → {ch.degraded:.4g}) "
            f"at iteration {f['change_iteration']}")
    what += " and recovered later" if ch.recovered else ""
    if f["coincides"]:
        what += f", coinciding with {'/'.join(f['coincides'])}"
    cost = ""
    if f["days_lost"] is not None and f["remaining_iterations"]:
        cost = (f"; it costs {f['days_lost']} days over the remaining "
                f"{f['remaining_iterations']} iterations")
    strong = ch.z >= STRONG_Z and ch.n_after >= STRONG_AFTER
    named = bool(f["suspect_hosts"] or f["suspect_ranks"])
    confidence = (Confidence.HIGH if strong and (named or not f["coincides"])
                  else Confidence.MEDIUM)
    return what + _who_is_slow(f) + cost + ".", confidence


# The firing rule of highest priority gives the verdict: a pause or a stall (no slow node to
# hunt), else the drop (any other change), else a steady metric.
VERDICTS: tuple[Rule[tuple[str, Confidence]], ...] = (
    Rule("pause", _pause_verdict, 30), Rule("stall", _stall_verdict, 20),
    Rule("drop", _drop_verdict, 10), Rule("gap", _gap_verdict, 5),
    Rule("steady", _steady_verdict, 0))
UNJUDGED_VERDICTS: tuple[Rule[tuple[str, Confidence]], ...] = (
    Rule("too_few_points", _sparse_verdict, 10), Rule("run_summary", _summary_verdict, 5),
    Rule("no_metric", _no_metric_verdict, 0))


# -- actions -------------------------------------------------------------------------------------

def _shape(a: ThroughputAnalysis) -> str | None:
    """The change's shape ('pause', 'stall', …), None when there is no change."""
    return a.change.shape if a.change is not None else None


def _hunt(a: ThroughputAnalysis) -> bool:
    """A lasting change, neither a pause nor a stall: hunt the slow node or rank."""
    return a.change is not None and _shape(a) not in ("pause", "stall")


def _log_throughput(a: ThroughputAnalysis) -> Action | None:
    if _hunt(a):
        return None
    return action(
        "log_throughput", "Log throughput per iteration (and per rank) next time",
        "Without per-iteration throughput the drop cannot be dated or sized; without per-rank "
        "figures the slow GPU cannot be named.",
        "Megatron: --log-interval 1 --log-throughput --log-straggler --straggler-minmax-count 4 "
        "--timing-log-option all; torchtitan: --metrics.log_freq 1; HF Trainer: logging_steps=1")


def _check_pause(a: ThroughputAnalysis) -> Action | None:
    if _shape(a) != "pause":
        return None
    return action(
        "check_pause", "Find what the host did while the job paused",
        "One long slow interval between normal ones is a pause of the host or its storage "
        "(swapping, a slow checkpoint write, another job or process competing, the machine "
        "sleeping), not a slow GPU: the iterations after it are back at the baseline.",
        "compare the pause's time window (the log's timestamps or elapsed times) with the "
        "host's memory and swap use, disk writes and other processes; sudo dmesg -T for "
        "that time")


def _check_stall(a: ThroughputAnalysis) -> Action | None:
    if _shape(a) != "stall":
        return None
    return action(
        "check_stall", "Find out whether the job is hung before hunting a slow node",
        "One logged interval many times slower than all before it is how a hang or a dying "
        "collective starts (the watchdog fires only after its timeout); a slow node slows "
        "every interval alike.",
        "while it runs: traindoc collect --from-logs <training log> -o evidence/  (py-spy "
        "stacks of every rank on this host), then traindoc run deadlock evidence/; once it "
        "has failed: traindoc run triage <the job's logs>")


def _compare_baseline(a: ThroughputAnalysis) -> Action | None:
    if a.change is not None:
        return None
    return action(
        "compare_baseline", "Compare with a healthy run before hunting a slow node",
        "The logs show no lasting drop; a job that is uniformly slow from the start points "
        "at configuration (batch size, parallelism, data loader) rather than a sick GPU.",
        "compare TFLOPs/tokens-per-s with the last good run of the same config; check "
        "dataloader workers and host CPU with py-spy dump on one rank")


def _suspect_nodes(a: ThroughputAnalysis) -> tuple[str | None, str | None]:
    """The suspect hosts as a hostlist for prose, and as a command argument (None when they
    are no host names, or when no host is suspect)."""
    hosts = list(a.suspect_hosts)
    if not _hunt(a) or not hosts:
        return None, None
    return compress(hosts), hosts_arg(hosts, hostlist=True)


# how a job the logs show no scheduler for is restarted without a node: its launcher's own
# host list (torchrun, DeepSpeed/pdsh, mpirun, a Kubernetes job), never an sbatch command
LAUNCHER_RESTART = ("take it out of the launcher's host list (DeepSpeed's hostfile or "
                    "deepspeed --exclude, mpirun -H, the nodes torchrun is started on; under "
                    "Kubernetes, kubectl cordon the node) and restart from the last checkpoint")


def _restart_without(a: ThroughputAnalysis, excl: str, nodes: str) -> str:
    """The restart without ``nodes`` (``excl``: them as a command argument) as far as the logs
    show how the job was launched: ``sbatch --exclude=`` where they show SLURM
    (``bisect.launch_scope``), else the launcher's host list (``LAUNCHER_RESTART``)."""
    if a.scope == SCOPE_SLURM:
        return f"sbatch --exclude={excl} {job_script_arg(a.job_script)}"
    return f"without {nodes}: {LAUNCHER_RESTART}"


def _exclude_unnamed(a: ThroughputAnalysis) -> Action | None:
    nodes, excl = _suspect_nodes(a)
    if not nodes or excl is not None:  # a suspect the logs name by something no host name
        return None
    how = ("find the node's real name (sacct -j $SLURM_JOB_ID -o NodeList%400), set NODE to "
           f"it, then: sbatch --exclude={NODE_VAR} {job_script_arg(a.job_script)}"
           + script_note(a.job_script) if a.scope == SCOPE_SLURM else
           f"find the node's real name in the launcher's log or host list, then {LAUNCHER_RESTART}")
    return action(
        "exclude_suspect", "Exclude the slow node and restart from the last checkpoint",
        f"The logs name {shown(nodes)} as slower than its peers, but that is not a host name: "
        "it is not put into a command.", how)


def _exclude_suspect(a: ThroughputAnalysis) -> Action | None:
    nodes, excl = _suspect_nodes(a)
    if not nodes or excl is None:
        return None
    return action(
        "exclude_suspect", f"Exclude {nodes} and restart from the last checkpoint",
        f"{nodes} is slower than its peers (see the findings): with synchronous training "
        "every rank waits for the slowest, so one slow GPU slows the whole job.",
        f"{_restart_without(a, excl, nodes)}"
        f"{'  # then' if a.scope == SCOPE_SLURM else '; then'} check "
        f"{a.spec.label if a.spec else ''} is back near {facts(a)['baseline']}")


def _check_clocks_suspect(a: ThroughputAnalysis) -> Action | None:
    nodes, excl = _suspect_nodes(a)
    if not nodes or excl is None:
        return None
    return action(
        "check_clocks_suspect", f"Check clocks and throttling on {nodes}",
        "A GPU that throttles (thermal, power brake, HW slowdown) or runs at reduced clocks "
        "is the usual cause of one slow node with a healthy network.",
        f"{_on_hosts(a, excl)} nvidia-smi -q -d PERFORMANCE,CLOCK  # look at "
        "'Clocks Event Reasons' (HW Slowdown, HW Thermal Slowdown, HW Power Brake) and SM "
        "clocks below the others")


def _burn_suspect(a: ThroughputAnalysis) -> Action | None:
    nodes, excl = _suspect_nodes(a)
    if not nodes or excl is None:
        return None
    return action(
        "burn_suspect", f"Benchmark {nodes}'s GPUs against a healthy node",
        "Confirms the hardware fault before handing the node to the admins (BLOOM's slow GPU "
        "showed 303.6 s vs ~296.5 s on a node benchmark: 2.5%).",
        f"{_on_hosts(a, excl)} dcgmi diag -r 3  # or gpu_burn -d 120 on each "
        "GPU; report the node with the numbers")


def _slow_rank(a: ThroughputAnalysis) -> int | None:
    """The first suspect rank, when no host is suspect (the node to find is its)."""
    if not _hunt(a) or _suspect_nodes(a)[0] or not a.suspect_ranks:
        return None
    return a.suspect_ranks[0]


def _locate_rank(a: ThroughputAnalysis) -> Action | None:
    r, ranks = _slow_rank(a), a.suspect_ranks
    if r is None:
        return None
    how = (f"with srun's block distribution rank {r} runs on node number {r} // GPUS_PER_NODE "
           "of `scontrol show hostnames $SLURM_JOB_NODELIST`; or grep the launcher log for "
           f"'[rank{r}]'/hostname; set NODE to that host, then: sbatch --exclude={NODE_VAR} "
           f"{job_script_arg(a.job_script)}" + script_note(a.job_script)
           if a.scope == SCOPE_SLURM else  # (no scheduler in the logs: its launcher's hosts)
           f"grep the launcher log for '[rank{r}]'/hostname to find the node that ran rank "
           f"{r}; then {LAUNCHER_RESTART}")
    return action(
        "locate_rank", f"Find the node of rank {r} and exclude it",
        f"{who(ranks, cap=True)} {'is' if len(ranks) == 1 else 'are'} slower than their peers "
        "but the logs do not say which node ran them.", how)


def _check_clocks_rank(a: ThroughputAnalysis) -> Action | None:
    r = _slow_rank(a)
    if r is None:
        return None
    return action(
        "check_clocks_rank", f"Check clocks and throttling on rank {r}'s GPU",
        "A throttling or down-clocked GPU is the usual cause of one slow rank.",
        "on its node: nvidia-smi -q -d PERFORMANCE,CLOCK -i <local GPU index>  # Clocks Event "
        "Reasons, SM clock vs the others")


def _nobody_named(a: ThroughputAnalysis) -> bool:
    """A lasting change and no suspect host or rank: every node is to be checked."""
    return _hunt(a) and not _suspect_nodes(a)[0] and not a.suspect_ranks


SMI_QUERY = ("nvidia-smi --query-gpu=index,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,"
             "clocks_throttle_reasons.active --format=csv,noheader")
SMI_READ = ("a GPU whose SM clock is below its peers' (or its clocks.max.sm) or whose reasons "
            "mask is not 0x0000000000000000 (idle excepted) is the suspect; newer drivers name "
            "the field clocks_event_reasons.active; then: nvidia-smi -q -d PERFORMANCE,CLOCK")


def _on_hosts(a: ThroughputAnalysis, hosts: str) -> str:
    """The prefix that runs a command once on each of ``hosts`` (already a command argument):
    srun where the logs show SLURM, else pdsh (DeepSpeed's multi-node launcher's own)."""
    if a.scope == SCOPE_SLURM:
        return f"srun -w {hosts} --ntasks-per-node=1"
    return f"pdsh -w {hosts}"


def _node_hosts(a: ThroughputAnalysis) -> str | None:
    """The job's nodes as a pdsh argument, where the logs name two or more without SLURM."""
    return hosts_arg(a.node_list) if a.scope == SCOPE_HOSTS else None


def _sweep_all_nodes(a: ThroughputAnalysis) -> Action | None:
    if not _nobody_named(a):
        return None
    if a.scope == SCOPE_SLURM:
        how = (f"srun --overlap --jobid $SLURM_JOB_ID --ntasks-per-node=1 --output=smi-%N.out "
               f"{SMI_QUERY}  # {SMI_READ}")
    elif (hosts := _node_hosts(a)) is not None:
        how = f"pdsh -w {hosts} {SMI_QUERY}  # {SMI_READ}"
    elif a.scope == SCOPE_NODES:  # nodes the logs count but do not name
        how = f"on each node: {SMI_QUERY}  # {SMI_READ}"
    else:  # one machine as far as the logs show: its own GPUs, while the job runs
        return action(
            "sweep_all_nodes", "Check the GPU clocks and throttle reasons while it trains",
            "The logs name no second machine: a GPU that throttles (heat, power cap) or runs "
            "at reduced clocks slows the job without an error; the other usual causes of one "
            "slow machine are its data loading and other processes on it.",
            f"{SMI_QUERY} -l 10  # every 10 s while it trains; {SMI_READ}; and top / "
            "nvidia-smi pmon -c 1 for other processes on the GPU or the CPU")
    return action(
        "sweep_all_nodes", "Check every node's GPU clocks and throttle reasons in one go",
        "One command on all nodes usually finds a throttling or down-clocked GPU without a "
        "single restart (the bisection below costs one restart per step).", how)


def _benchmark_all_nodes(a: ThroughputAnalysis) -> Action | None:
    if not _nobody_named(a):
        return None
    why = ("A per-node benchmark (same matmul on every GPU) names the slow node in one run; "
           "feed its CSV (host,seconds) to log_path together with the training log.")
    if a.scope == SCOPE_SLURM:
        how = ("(echo host,seconds; srun --nodes=$SLURM_NNODES --ntasks-per-node=1 python -m "
               "traindoc.gpubench) > bench.csv  # the slowest GPU's seconds per node; "
               "--per-gpu for one line per GPU")
    elif (hosts := _node_hosts(a)) is not None:
        how = (f"(echo host,seconds; pdsh -N -w {hosts} python -m traindoc.gpubench) > "
               "bench.csv  # the slowest GPU's seconds per node; --per-gpu for one line per GPU")
    elif a.scope == SCOPE_NODES:
        how = ("on each node: python -m traindoc.gpubench >> bench.csv  # one host,seconds "
               "line per node (the slowest GPU; --per-gpu for each); put host,seconds on top")
    else:
        return action(
            "benchmark_all_nodes", "Benchmark this machine's GPUs against a healthy machine",
            "The same matmul on each GPU says whether the GPUs themselves are slow: compare "
            "its seconds with the same command on a healthy machine with the same GPU model.",
            "(echo host,seconds; python -m traindoc.gpubench --per-gpu) > bench.csv  # one "
            "line per GPU")
    return action(
        "benchmark_all_nodes", "Benchmark all nodes in parallel and rerun this runbook "
        "with the table", why, how)


def _bisect(a: ThroughputAnalysis) -> Action | None:
    bp = a.bisect_plan
    if not _nobody_named(a) or not bp:
        return None
    slurm = a.scope == SCOPE_SLURM  # (else the launcher's host list: ``_restart_without``)
    first = bp["steps"][0]
    return action(
        "bisect", f"Bisect the {len(a.node_list)} nodes: restart with "
        + (first["sbatch"] if slurm else f"{first['exclude']} left out"),
        f"Nothing names the slow node; excluding at most {bp['spares']} node(s) per "
        f"restart finds it in at most {bp['worst_case_runs']} restarts. A run is fast if "
        f"{bp['fast_if']} after warm-up."
        + ("" if slurm else f" To leave nodes out: {LAUNCHER_RESTART}."),
        "; ".join(f"step {st['step']}: "
                  + (st["sbatch"] if slurm else f"restart without {st['exclude']}")
                  + f" -> fast: {st['if_fast']}, slow: {st['if_slow']}"
                  for st in bp["steps"][:PLAN_STEPS_SHOWN])
        + (" … (all steps in summary.json facts.bisect_plan)"
           if len(bp["steps"]) > PLAN_STEPS_SHOWN else ""))


def _get_nodelist(a: ThroughputAnalysis) -> Action | None:
    if not _nobody_named(a) or a.bisect_plan or a.node_list or a.scope != SCOPE_SLURM:
        return None  # (sacct only where the logs show SLURM)
    return action(
        "get_nodelist", "Get the job's node list to plan a bisection",
        "The logs name no nodes; the runbook needs them (parameter hosts) to plan which "
        "nodes to exclude on each restart.",
        "sacct -j $SLURM_JOB_ID -o NodeList%400 -X  # then rerun with "
        "hosts='<that list>' spare_nodes=<idle nodes you can use>")


def _per_rank_timing(a: ThroughputAnalysis) -> Action | None:
    if not _nobody_named(a) or a.scope == SCOPE_PROCESS:
        return None  # (one process has no peer to compare)
    return action(
        "per_rank_timing", "Turn on per-rank timing so the next drop names its rank",
        "One rank's throughput line cannot say which GPU is slow; per-rank timings can.",
        "Megatron: --log-straggler --straggler-minmax-count 4 and --timing-log-option all; "
        "any job: TORCH_FR_BUFFER_SIZE=2000 (older torch: TORCH_NCCL_TRACE_BUFFER_SIZE) and dump "
        "the flight recorder from every "
        "rank (its enqueue times show who arrives last)")


def _check_coincidence(a: ThroughputAnalysis) -> Action | None:
    if not _hunt(a) or not a.coincides:
        return None
    how = ("sacct -j <old>,<new> -o JobID,NodeList%400  # compare the node lists; and watch "
           "the next iterations for recovery" if a.scope == SCOPE_SLURM else
           "compare the machines and GPUs the restarted run got with the first run's (the "
           "launcher's start-up lines, nvidia-smi -L on each); and watch the next iterations "
           "for recovery")
    return action(
        "check_coincidence", "Rule out the event at the change",
        f"The change coincides with {'/'.join(a.coincides)}: a restart may have landed on "
        "other nodes; an eval or a save is a transient slowdown.", how)


# A pause, a stall or no change: what to look at, then better logging. A lasting drop: exclude
# a named node (or find a named rank's), else sweep, benchmark and bisect every node; then rule
# out what coincides with the change.
ACTIONS: tuple[Rule[Action], ...] = (
    Rule("check_pause", _check_pause, 1), Rule("check_stall", _check_stall, 1),
    Rule("compare_baseline", _compare_baseline, 1), Rule("log_throughput", _log_throughput, 2),
    Rule("exclude_unnamed", _exclude_unnamed, 1), Rule("exclude_suspect", _exclude_suspect, 1),
    Rule("check_clocks_suspect", _check_clocks_suspect, 2),
    Rule("burn_suspect", _burn_suspect, 3), Rule("locate_rank", _locate_rank, 1),
    Rule("check_clocks_rank", _check_clocks_rank, 2),
    Rule("sweep_all_nodes", _sweep_all_nodes, 1),
    Rule("benchmark_all_nodes", _benchmark_all_nodes, 2), Rule("bisect", _bisect, 3),
    Rule("get_nodelist", _get_nodelist, 3), Rule("per_rank_timing", _per_rank_timing, 4),
    Rule("check_coincidence", _check_coincidence, 5))
# When no metric could be analysed: only better logging.
UNJUDGED_ACTIONS: tuple[Rule[Action], ...] = (
    Rule("log_throughput", _log_throughput, 1),)


__all__ = ["FACT_KEYS", "diagnose", "report"]
