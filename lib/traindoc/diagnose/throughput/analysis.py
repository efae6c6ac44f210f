"""``analyse``: every table and value the throughput runbook shows and its report words —
the series, what was set aside, the change, what coincided with it, who is slow, the node
list and bisection plan, and what the drop costs — in one ``ThroughputAnalysis``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...hostlist import natural_key
from ...incident import Incident
from ..common import rank_hosts
from .bisect import (
    bisect_plan,
    fast_if,
    host_list,
    launch_scope,
    plan_frame,
    runs_by_spares,
)
from .change import (
    STALL_BEFORE,
    Change,
    across_gap,
    by_schedule,
    despike,
    excerpt_step,
    fading,
    find_change,
    material,
    mid_pause,
    schedule_rows,
    settling,
    short_creep,
    slow_episode,
    slow_starts,
    trailing_stall,
    within_resolution,
)
from .series import (
    METRICS,
    MetricSpec,
    choose_metric,
    discontinuities,
    events,
    last_launch,
    mask_events,
    metric_series,
    resumed_bar_head,
    startup_burst,
    steps_with_seconds,
    summary_rate,
    usable_points,
)
from .suspects import (
    arrival_lags,
    benchmark_outliers,
    named_suspects,
    peer_table,
    rank_step_times,
    slowest_straggler,
    straggler_reports,
    timer_outliers,
)

HOST_TIMING_COLUMNS = ["host", "rank", "metric", "value", "iteration"]
RECENT_POINTS = 50  # logged iterations whose median is the current pace when nothing changed
SPARE_OPTIONS = (1, 2, 3, 4, 8)  # spare-node counts compared with the plan's own


def eta_days(remaining_iterations: int, seconds_per_iteration: float) -> float:
    """Days to run ``remaining_iterations`` at ``seconds_per_iteration`` with no downtime (the
    seed's (115311-12695)*105/(3600*24) = 124.7)."""
    return remaining_iterations * seconds_per_iteration / 86400.0


def rounded(v: float | None, nd: int = 3) -> float | None:
    """``v`` rounded to ``nd`` decimals for a fact; None for None, NaN and infinities."""
    return None if v is None or not math.isfinite(v) else round(float(v), nd)


@dataclass(frozen=True)
class LastStep:
    """The last logged iteration that announced the total: where the job stands."""

    iteration: int
    total: int
    source: str
    line: str

    @property
    def remaining(self) -> int:
        """Iterations left to run."""
        return self.total - self.iteration

    def evidence(self) -> str:
        """The log line, as a finding's evidence."""
        return f"{self.source}: {self.line}"


@dataclass(frozen=True, eq=False)
class ThroughputAnalysis:
    """What ``analyse`` found: the tables the runbook shows and the values its report words.

    ``judged`` is False when no metric could be analysed (then only ``sparse_metric`` and the
    input matter); the change, coincidence, suspect, node-list and cost fields are empty then.
    """

    incident: Incident  # for evidence lines and the findings about the input
    requested: str  # the metric asked for
    metric: str | None  # the metric analysed
    spec: MetricSpec | None
    sparse_metric: str | None  # logged, but too rarely to analyse (only when metric is None)
    sparse_points: int  # how many values of sparse_metric
    series: pd.DataFrame  # one row per logged iteration
    used: np.ndarray  # positions analysed (not masked for eval/save)
    cleaned: np.ndarray  # analysed values after despiking
    replaced: np.ndarray  # positions (of the analysed ones) replaced as transients
    change: Change | None
    change_position: int | None  # position in ``series``
    schedule: pd.DataFrame  # host_timings rows of a configured schedule that grows each step's work
    scheduled: Change | None  # the gradual slide set aside as that schedule's doing
    across_gap: Change | None  # a shift seen only across a long gap in the logged steps
    steady: float | None  # with no change: the rate the run holds (``steady_rate``)
    events: pd.DataFrame  # evals and checkpoint saves
    discontinuities: pd.DataFrame  # restarts, gaps and pauses
    restarts_at_change: pd.DataFrame  # discontinuities between the last baseline point and the change
    events_at_change: pd.DataFrame  # evals/saves between the last baseline point and the change
    coincides: list[str]  # kinds of what happened at the change
    ranks: pd.DataFrame  # per-rank metric from iteration lines
    stragglers: pd.DataFrame  # Megatron straggler-detector reports per rank
    timers: pd.DataFrame  # per-rank Megatron timers
    benchmarks: pd.DataFrame  # per-host benchmark results
    lags: pd.DataFrame  # flight-recorder arrival lags per rank
    rank_hosts: dict[int, str]
    straggler_rank: int | None  # the rank the straggler detector names consistently
    suspect_ranks: list[int]
    suspect_hosts: list[str]
    node_list: list[str]  # the job's nodes
    nodes_from: str  # where node_list came from
    hosts_error: str | None  # why the hosts parameter could not be read
    bisect_plan: dict[str, Any] | None
    last_step: LastStep | None  # the last iteration that announced the total
    baseline_s_per_iteration: float | None
    current_s_per_iteration: float | None
    spare_nodes: int
    job_script: str | None  # the job's sbatch script, for the printed commands (None: $JOB_SCRIPT)
    scope: str  # where the job ran as its logs show: slurm, hosts, machine, process (``launch_scope``)
    summary: tuple[str, float, int] | None  # with no metric logged per step: the run's average
    # from the trainer's end-of-run summaries (metric, rate, how many; ``summary_rate``)

    # -- the change --------------------------------------------------------------------------
    @property
    def judged(self) -> bool:
        """Whether a metric was analysed (else there is nothing to say about a change)."""
        return self.spec is not None and len(self.series) > 0

    @property
    def change_iteration(self) -> int | None:
        """The first iteration at the degraded level."""
        if self.change is None or self.change_position is None:
            return None
        return int(self.series["iteration"].iloc[self.change_position])

    @property
    def onset_iteration(self) -> int | None:
        """Where a gradual decline began."""
        ch = self.change
        if ch is None or ch.onset is None:
            return None
        return int(self.series["iteration"].iloc[self.used[ch.onset]])

    @property
    def baseline(self) -> float | None:
        """The level before the change, as the facts give it; with no change, the rate the
        healthy run holds (``steady``)."""
        if self.change is not None:
            return rounded(self.change.baseline)
        return rounded(self.steady, 4) if self.steady is not None else None

    @property
    def degraded(self) -> float | None:
        """The level after the change, as the facts give it."""
        return rounded(self.change.degraded) if self.change is not None else None

    @property
    def drop_pct(self) -> float | None:
        """Throughput lost in percent, as the facts give it."""
        return rounded(self.change.drop_pct, 2) if self.change is not None else None

    def around_change(self, n: int = 3) -> pd.DataFrame:
        """The ``n`` analysed rows before the change and ``n`` from it on."""
        ch = self.change
        assert ch is not None
        before = self.series.iloc[self.used[max(0, ch.index - n) : ch.index]]
        after = self.series.iloc[self.used[ch.index : ch.index + n]]
        return pd.concat([before, after])

    @property
    def change_span(self) -> tuple[int, int] | None:
        """(last baseline iteration, first degraded iteration): where a cause must lie."""
        ch, p = self.change, self.change_position
        if ch is None or p is None:
            return None
        prev = int(self.used[ch.index - 1]) if ch.index >= 1 else p
        return int(self.series["iteration"].iloc[prev]), int(self.series["iteration"].iloc[p])

    def change_table(self) -> pd.DataFrame:
        """The change-point facts as a two-column table."""
        items = [("metric", self.metric or self.sparse_metric), ("baseline", self.baseline),
                 ("degraded", self.degraded), ("throughput lost (%)", self.drop_pct),
                 ("change at iteration", self.change_iteration),
                 ("shape", self.change.shape if self.change is not None else None),
                 ("coincides with", ", ".join(self.coincides) or "nothing")]
        return pd.DataFrame(items, columns=["what", "value"]).astype({"value": "string"})

    # -- transients --------------------------------------------------------------------------
    @property
    def n_set_aside(self) -> int:
        """Iterations masked for an eval or a save."""
        return int(len(self.series) - len(self.used))

    @property
    def n_replaced(self) -> int:
        """Isolated outliers replaced by the local median."""
        return int(self.replaced.sum())

    def replaced_rows(self) -> pd.DataFrame:
        """The series rows replaced as transients."""
        return self.series.iloc[self.used[self.replaced]]

    def set_aside(self) -> pd.DataFrame:
        """Series rows not used as they are: masked for eval/save, or replaced as transients."""
        if not len(self.series):
            return self.series
        keep = np.ones(len(self.series), dtype=bool)
        keep[self.used] = False
        keep[self.used[self.replaced]] = True
        return self.series[keep]

    # -- who is slow -------------------------------------------------------------------------
    def peers(self) -> pd.DataFrame:
        """Every per-rank / per-host comparison in one table (``suspects.peer_table``)."""
        return peer_table(self.ranks, self.stragglers, self.timers, self.benchmarks, self.lags,
                          self.spec)

    @property
    def one_view(self) -> bool:
        """Whether the logs carry no per-rank or per-host figure at all."""
        return (not len(self.ranks) and not len(self.stragglers) and not len(self.timers)
                and not len(self.benchmarks) and not len(self.lags))

    # -- bisection ---------------------------------------------------------------------------
    @property
    def wants_bisection(self) -> bool:
        """A change, nobody named, and at least two nodes to search."""
        return (self.change is not None and self.change.shape != "stall"
                and not self.suspect_hosts and len(self.node_list) >= 2)

    def plan_frame(self) -> pd.DataFrame:
        """The bisection steps as a table."""
        return plan_frame(self.bisect_plan)

    def runs_by_spares(self) -> pd.DataFrame:
        """Worst-case restarts of the bisection for a few numbers of spare nodes."""
        plan = self.bisect_plan
        if not plan:
            return runs_by_spares(0, [])
        n = plan["n_hosts"]
        return runs_by_spares(n, sorted({*SPARE_OPTIONS, plan["spares"], max(1, n // 2)}))

    # -- cost --------------------------------------------------------------------------------
    @property
    def remaining_iterations(self) -> int | None:
        """Iterations left to run (None when the logs announce no total)."""
        return self.last_step.remaining if self.last_step is not None else None

    @property
    def eta_days(self) -> float | None:
        """Days left at the current pace."""
        if self.remaining_iterations is None or self.current_s_per_iteration is None:
            return None
        return rounded(eta_days(self.remaining_iterations, self.current_s_per_iteration), 2)

    @property
    def eta_days_at_baseline(self) -> float | None:
        """Days left at the pace before the change (None without a change)."""
        if (self.change is None or self.eta_days is None or not self.remaining_iterations
                or self.baseline_s_per_iteration is None):
            return None
        return rounded(eta_days(self.remaining_iterations, self.baseline_s_per_iteration), 2)

    @property
    def days_lost(self) -> float | None:
        """What the slowdown costs in days if left alone."""
        if self.eta_days is None or self.eta_days_at_baseline is None:
            return None
        return rounded(self.eta_days - self.eta_days_at_baseline, 2)

    def cost_table(self) -> pd.DataFrame:
        """Remaining iterations and the days they take now and at the baseline."""
        items = [("remaining iterations", self.remaining_iterations),
                 ("s/iteration now", rounded(self.current_s_per_iteration, 4)),
                 ("s/iteration at baseline", rounded(self.baseline_s_per_iteration, 4)),
                 ("ETA (days) now", self.eta_days),
                 ("ETA (days) at baseline", self.eta_days_at_baseline),
                 ("days lost", self.days_lost)]
        return pd.DataFrame(items, columns=["what", "value"], dtype=object).astype(
            {"value": "string"})


def steady_rate(cleaned: np.ndarray) -> float | None:
    """The rate a run without a change holds: the median of its analysed values (transients
    already replaced), so a slow first window (warm-up, a cold cache) does not move it."""
    vals = np.asarray(cleaned, dtype=float)
    vals = vals[np.isfinite(vals)]
    return float(np.median(vals)) if len(vals) else None


def _stalled(incident: Incident, metric: str) -> bool:
    """Whether the logged values of ``metric``, events set aside, end in a ``trailing_stall``
    or are a ``short_creep``."""
    series = metric_series(incident, metric)
    if not len(series):
        return False
    masked = mask_events(series, events(incident)["iteration"].astype(int).tolist())
    vals = series["value"].to_numpy(dtype=float)[~masked]
    hib = METRICS[metric].higher_is_better
    return trailing_stall(vals, hib) is not None or short_creep(vals, hib) is not None


def excerpt_boundaries(series: pd.DataFrame) -> list[int]:
    """Positions where the series passes from one file to the next within one run, its
    iterations going on: the boundaries between a post's excerpts."""
    if len(series) < 2:
        return []
    files = series["source"].astype(str).str.rsplit(":", n=1).str[0].to_numpy()
    runs = series["run"].to_numpy()
    its = series["iteration"].to_numpy(dtype=float)
    return [i for i in range(1, len(series))
            if files[i] != files[i - 1] and runs[i] == runs[i - 1] and its[i] > its[i - 1]]


def _excerpts_step(incident: Incident, metric: str) -> bool:
    """Whether the logged values of ``metric``, events set aside, step down at a boundary
    between excerpts (``excerpt_step``)."""
    series = metric_series(incident, metric)
    if not len(series):
        return False
    masked = mask_events(series, events(incident)["iteration"].astype(int).tolist())
    kept = series[~masked]
    return excerpt_step(kept["value"].to_numpy(dtype=float), excerpt_boundaries(kept),
                        METRICS[metric].higher_is_better) is not None


def _seconds_per_iteration(incident: Incident, spec: MetricSpec | None, series: pd.DataFrame,
                           used: np.ndarray, cleaned: np.ndarray,
                           change: Change | None) -> tuple[float | None, float | None]:
    """Median seconds per iteration before and after the change; with no change, (None, the
    median of the last ``RECENT_POINTS`` logged iterations)."""
    if spec is not None and spec.column == "elapsed_s":
        spi = np.asarray(cleaned, dtype=float)
    else:
        steps = steps_with_seconds(incident)
        if "elapsed_s" not in steps or not steps["elapsed_s"].notna().any():
            return None, None
        per = steps[steps["elapsed_s"].notna()].groupby("iteration")["elapsed_s"].median()
        its = series["iteration"].to_numpy()[used]
        spi = per.reindex(its).to_numpy(dtype=float, na_value=np.nan)
    if not np.isfinite(spi).any():
        return None, None
    if change is None:
        recent = spi[-RECENT_POINTS:]
        return None, float(np.nanmedian(recent)) if np.isfinite(recent).any() else None
    before, after = spi[: change.index], spi[change.index :]
    b = float(np.nanmedian(before)) if np.isfinite(before).any() else None
    d = float(np.nanmedian(after)) if np.isfinite(after).any() else None
    return b, d


def _last_step(incident: Incident, series: pd.DataFrame) -> LastStep | None:
    """The last iteration that announced the total (the furthest one when the job never
    restarted), or None when none did or it ran past its total."""
    steps = steps_with_seconds(incident)
    with_total = steps[steps["total_iterations"].notna()]
    if not len(with_total):
        return None
    last = with_total.loc[with_total["iteration"].idxmax()] if series["run"].max() == 0 else \
        with_total.iloc[-1]
    step = LastStep(int(last["iteration"]), int(last["total_iterations"]), last["source"],
                    last["line"])
    return step if step.remaining >= 0 else None


def _at_change(series: pd.DataFrame, used: np.ndarray, change: Change | None,
               pos: int | None, disc: pd.DataFrame,
               ev: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The restarts/gaps and the evals/saves between the last baseline point and the change,
    and the kinds of both (restart kinds first)."""
    if change is None or pos is None:
        return disc.iloc[:0], ev.iloc[:0], []
    prev_pos = int(used[change.index - 1]) if change.index >= 1 else pos
    lo_it, hi_it = int(series["iteration"].iloc[prev_pos]), int(series["iteration"].iloc[pos])
    near = disc[(disc["position"] > prev_pos) & (disc["position"] <= pos)] if len(disc) else disc
    ev_near = ev[(ev["iteration"] >= lo_it - 1) & (ev["iteration"] <= hi_it)] if len(ev) else ev
    hits = list(near["kind"].unique()) if len(near) else []
    if len(ev_near):
        hits += sorted(set(ev_near["kind"]))
    return near, ev_near, hits


def _one_file(series: pd.DataFrame, used: np.ndarray, change: Change) -> bool:
    """Whether the values on both sides of a change come from one file (a gap between two
    files is a post's "before" and "after" excerpts, ``excerpt_step``)."""
    files = series["source"].astype(str).str.rsplit(":", n=1).str[0].to_numpy()[used]
    return bool(files[change.index - 1] == files[change.index])


def masked_onset(values: np.ndarray, masked: np.ndarray, used: np.ndarray,
                 change: Change) -> int:
    """The series position a step starts at: its first analysed point, or the points masked
    just before it (an eval's or a save's window, ``mask_events``) whose values already sit at
    the degraded level within its noise. A window an eval or a save slowed lies beyond that
    level, so it stays outside; one that holds the new level is where the step began (Marian's
    first display line after a resume from the save's checkpoint, corpus
    throughput-mtrss-marian-s2s-workspace-words-per-sec-drop: 208.98 words/s at Up. 5000, the
    save, then 149.86 at Up. 5500 and 152.30 at Up. 6000)."""
    pos = int(used[change.index])
    if change.shape != "step" or change.index < 1:
        return pos
    tol = max(3.0 * change.sigma, 0.01 * abs(change.degraded))
    start = pos
    for q in range(pos - 1, int(used[change.index - 1]), -1):
        v = values[q]
        if not masked[q] or not np.isfinite(v) or abs(v - change.degraded) > tol \
                or abs(v - change.degraded) >= abs(v - change.baseline):
            break
        start = q
    return start


def analyse(incident: Incident, metric: str = "auto", *, hosts: str | list[str] | None = None,
            spare_nodes: int = 3, min_segment: int = 2, threshold: float = 4.0,
            min_drop_pct: float = 1.0, min_lag_ms: float = 5.0,
            job_script: str | None = None) -> ThroughputAnalysis:
    """Series, change point, coincidences, per-rank/per-host comparisons, node list, bisection
    plan and cost (no verdict yet).

    Args:
        metric: "auto" or one of ``series.METRICS``.
        hosts: the job's nodes (hostlist expression or list) when the logs do not name them.
        spare_nodes: idle nodes that can stand in for excluded ones (the bisection excludes at
            most that many per restart).
        min_segment: the fewest logged points on each side of a change.
        threshold: robust standard errors a level shift must reach to be a change.
        min_drop_pct: the smallest drop, in percent of throughput, that is a change.
        min_lag_ms: the flight-recorder lag that makes a rank late.
        job_script: the job script named in the printed ``sbatch`` commands.
    """
    name = choose_metric(incident, metric, min_points=max(3, 2 * min_segment))
    if name is None:  # too few values for a change; enough for a stall in the last one?
        few = choose_metric(incident, metric, min_points=STALL_BEFORE + 1)
        if few is not None and _stalled(incident, few):
            name = few
        elif (two := choose_metric(incident, metric, min_points=2)) is not None \
                and _excerpts_step(incident, two):
            name = two  # a post's "before" and "after" lines, one block each
    spec = METRICS.get(name) if name else None
    sparse = choose_metric(incident, metric, min_points=1) if spec is None else None
    series = metric_series(incident, name) if name else metric_series(incident, "")
    series = last_launch(series)  # (rates of two launches are never compared)
    ev = events(incident)
    disc = discontinuities(series)
    masked = mask_events(series, ev["iteration"].astype(int).tolist())
    masked |= startup_burst(series)
    masked |= resumed_bar_head(series)
    used = np.nonzero(~masked)[0]
    vals = series["value"].to_numpy(dtype=float)[used] if len(series) else np.array([])
    cleaned, replaced = despike(vals, max_run=max(1, min_segment - 1))
    if spec is not None and len(used):
        # the job's first logged window only: after a restart (or an epoch whose counter
        # starts again) a smoothed rate carries the slow first step into the next windows
        # (LLaMA2-Accessory's MetricLogger: 5.87, then 4.73, 4.60, 4.58 s against 4.2), which
        # the replaced point keeps from reading as a level
        starts = np.arange(len(used)) == 0
        slow = slow_starts(vals, cleaned, starts, spec.higher_is_better)
        if slow.any():  # the slow first window is set aside, not replaced (``slow_starts``)
            masked[used[slow]] = True
            used = np.nonzero(~masked)[0]
            vals = series["value"].to_numpy(dtype=float)[used]
            cleaned, replaced = despike(vals, max_run=max(1, min_segment - 1))
    change = None
    pos = None
    ht = incident.tables.get("host_timings")
    if ht is None:
        ht = pd.DataFrame(columns=HOST_TIMING_COLUMNS)
    schedule = schedule_rows(ht)
    scheduled = gapped = None
    if spec is not None and len(cleaned):
        change = find_change(cleaned, spec.higher_is_better, min_segment, threshold,
                             min_drop_pct)
        if change is None:  # (the raw values: despiking would have smoothed the stall away)
            change = trailing_stall(vals, spec.higher_is_better)
        if change is None:
            change = short_creep(vals, spec.higher_is_better)
        if change is None and not spec.higher_is_better:  # (seconds: the wall time it lost)
            change = mid_pause(vals, series["iteration"].to_numpy(dtype=float)[used])
        if change is None:
            change = slow_episode(vals, spec.higher_is_better)
        if change is None:
            change = excerpt_step(vals, excerpt_boundaries(series.iloc[used]),
                                  spec.higher_is_better)
        if change is not None and (not material(change) or within_resolution(change, cleaned)
                                   or settling(change, series["iteration"].to_numpy()[used])
                                   or fading(change, vals, spec.higher_is_better)):
            change = None  # a healthy run's wander (warm-up settling, a mean converging),
            # one step of a coarse clock, or a smoothed rate fading back after one slow moment
        if by_schedule(change, schedule):
            scheduled, change = change, None
        if across_gap(change, series["iteration"].to_numpy()[used]) \
                and _one_file(series, used, change):
            gapped, change = change, None
        if change is not None:
            pos = masked_onset(series["value"].to_numpy(dtype=float), masked, used, change)
    steady = steady_rate(cleaned) if spec is not None and change is None and gapped is None \
        else None  # (across a gap no level is held: unknown)
    since = int(series["iteration"].iloc[pos]) if pos is not None else None
    ranks = rank_step_times(incident, spec, since, min_drop_pct) if spec else pd.DataFrame()
    stragglers = straggler_reports(ht, since)
    timers = timer_outliers(ht, since, min_drop_pct)
    benchmarks = benchmark_outliers(ht, min_drop_pct)
    lags = arrival_lags(incident.collectives, min_lag_ms)
    near, ev_near, coincides = _at_change(series, used, change, pos, disc, ev)

    judged = spec is not None and len(series) > 0
    r2h: dict[int, str] = {}
    sus_ranks: set[int] = set()
    sus_hosts: set[str] = set()
    node_list: list[str] = []
    nodes_from, hosts_error = "", None
    plan = None
    last = None
    base_spi = cur_spi = None
    if judged:
        assert spec is not None
        r2h = rank_hosts(incident)
        sus_ranks, sus_hosts = named_suspects(ranks, stragglers, timers, benchmarks, lags, r2h)
        try:
            node_list, nodes_from = host_list(incident, hosts)
        except ValueError as e:
            hosts_error = str(e)
        if change is not None and change.shape != "stall" and not sus_hosts and len(node_list) >= 2:
            plan = bisect_plan(node_list, spare_nodes, job_script, fast_if(spec, change))
        last = _last_step(incident, series)
        if last is not None:
            base_spi, cur_spi = _seconds_per_iteration(incident, spec, series, used, cleaned,
                                                       change)
    return ThroughputAnalysis(
        incident=incident, requested=metric, metric=name, spec=spec, sparse_metric=sparse,
        sparse_points=usable_points(incident, sparse) if sparse else 0, series=series,
        used=used, cleaned=cleaned, replaced=replaced, change=change, change_position=pos,
        schedule=schedule, scheduled=scheduled, across_gap=gapped,
        steady=steady, events=ev, discontinuities=disc, restarts_at_change=near, events_at_change=ev_near,
        coincides=coincides, ranks=ranks, stragglers=stragglers, timers=timers,
        benchmarks=benchmarks, lags=lags, rank_hosts=r2h,
        straggler_rank=slowest_straggler(stragglers), suspect_ranks=sorted(sus_ranks),
        suspect_hosts=sorted(sus_hosts, key=natural_key), node_list=node_list,
        nodes_from=nodes_from, hosts_error=hosts_error, bisect_plan=plan, last_step=last,
        baseline_s_per_iteration=base_spi, current_s_per_iteration=cur_spi,
        spare_nodes=spare_nodes, job_script=job_script,
        scope=launch_scope(incident, node_list),
        summary=summary_rate(incident, metric) if spec is None and sparse is None else None)


__all__ = ["LastStep", "ThroughputAnalysis", "analyse", "eta_days", "rounded", "steady_rate"]
