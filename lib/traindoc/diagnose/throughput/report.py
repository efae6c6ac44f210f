"""``report``: the throughput analysis in words — findings, verdict, confidence and ranked
actions — and ``diagnose``, analysis and report in one call."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...hostlist import compress
from ...incident import Incident
from ...report import Action, Finding, Report, evidence, ranked
from ...shellsafe import hosts_arg, shown
from ..common import input_findings, reading_words, who
from .analysis import ThroughputAnalysis, analyse
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
             job_script: str = "<job script>") -> Report:
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
    """The Report for an ``analyse`` result: findings, verdict, confidence, actions."""
    incident = a.incident
    facts: dict[str, Any] = {k: None for k in FACT_KEYS}
    facts.update(suspect_ranks=[], suspect_hosts=[], metric=a.metric)
    facts.update(eta_days_at_baseline=None, days_lost=None, shape=None, coincides=[])
    findings: list[Finding] = []
    if a.requested != "auto" and a.requested != a.metric:
        findings.append(Finding(
            "metric_unavailable", "warning",
            f"metric={a.requested!r} " + ("is not one of " + ", ".join(METRICS)
                                          if a.requested not in METRICS else
                                          "has no data in these logs")
            + (f"; analysed {a.metric} instead" if a.metric else ""), []))
    if not a.judged:
        return _unjudged(a, facts, findings)

    spec, ch, s = a.spec, a.change, a.series
    assert spec is not None
    label = spec.label
    its = s["iteration"].to_numpy(dtype=np.int64)
    # -- the change ------------------------------------------------------------------------
    if ch is not None and a.change_position is not None:
        p = a.change_position
        facts.update(baseline=a.baseline, degraded=a.degraded, drop_pct=a.drop_pct,
                     change_iteration=a.change_iteration, shape=ch.shape)
        onset_it = a.onset_iteration
        title = (f"{label} fell {ch.drop_pct:.1f}% from {ch.baseline:.4g} to {ch.degraded:.4g} "
                 f"at iteration {its[p]} ({ch.n_before} logged iterations before, {ch.n_after} "
                 f"after; shift {ch.z:.1f} robust standard errors)")
        if ch.shape == "gradual" and onset_it is not None:
            title += f"; a gradual decline that began around iteration {onset_it}"
        if ch.shape == "pause":
            title = (f"One logged interval, ending at iteration {its[p]}, is {_times(ch):.0f}× "
                     f"slower than the {ch.n_before + ch.n_after - 1} others ({label} "
                     f"{ch.baseline:.4g} → {ch.degraded:.4g}); the iterations after it run at "
                     "the old pace again: the job paused or crawled for a long while, then "
                     "recovered")
        if ch.shape == "stall":
            title = (f"The last logged interval is {_times(ch):.0f}× slower than the "
                     f"{ch.n_before} before it ({label} {ch.baseline:.4g} → {ch.degraded:.4g} at "
                     f"iteration {its[p]}): the job stalled or crawled there. One interval "
                     "cannot tell a pause from the start of a hang or a lasting slowdown")
        findings.append(Finding("throughput_drop", "critical", title,
                                evidence(a.around_change())))
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

    findings += _coincidence_findings(a)
    facts["coincides"] = list(a.coincides)
    findings += _suspect_findings(a)
    facts["suspect_ranks"] = list(a.suspect_ranks)
    facts["suspect_hosts"] = list(a.suspect_hosts)
    findings += _plan_findings(a)
    facts["bisect_plan"] = a.bisect_plan
    findings += _cost_findings(a)
    facts.update(remaining_iterations=a.remaining_iterations, eta_days=a.eta_days,
                 eta_days_at_baseline=a.eta_days_at_baseline, days_lost=a.days_lost)

    if ch is not None and not a.suspect_ranks and not a.suspect_hosts and a.one_view:
        findings.append(Finding(
            "one_view", "warning",
            "These logs carry the job's throughput as one number per iteration (one rank "
            "prints it): nothing in them names the slow GPU. Per-rank timing (Megatron "
            "--log-straggler, --timing-log-option all), flight-recorder dumps of every rank, or "
            "a per-node benchmark table would; else bisect the nodes", []))
    findings += input_findings(incident)
    actions = _actions(a, facts)
    verdict, confidence = _verdict(a, facts)
    return Report("throughput", verdict, confidence, facts, findings, ranked(actions))


def _unjudged(a: ThroughputAnalysis, facts: dict[str, Any],
              findings: list[Finding]) -> Report:
    """The Report when no metric could be analysed: too few values, or none at all."""
    incident = a.incident
    if a.sparse_metric is not None:  # a metric is logged, too rarely to find a change in it
        facts["metric"] = a.sparse_metric
        n = a.sparse_points
        label = METRICS[a.sparse_metric].label
        findings.append(Finding(
            "too_few_points", "warning",
            f"Only {n} logged value(s) of {label}: too few to tell a change from "
            "noise (a change needs a level held over several logged iterations on each side)",
            evidence(incident.iterations.head(5))))
        findings += input_findings(incident)
        return Report("throughput", f"Only {n} logged value(s) of {label}: too few "
                      "to say whether the job slowed down; log throughput more often or point "
                      "log_path at the whole training log.", "low", facts, findings,
                      ranked([_log_throughput_action(1)]))
    findings.append(Finding(
        "no_metric", "warning",
        "No throughput metric in these logs: no iteration line with TFLOPs, tokens/s, "
        "samples/s or seconds per iteration, and no tqdm bar with a rate",
        evidence(incident.iterations.head(5))))
    findings += input_findings(incident)
    read = reading_words(incident)
    return Report("throughput", "No throughput figures in these logs" + (f" ({read})" if read
                  else "") + ": no iteration line or progress bar with a rate was recognised; "
                  "if the job's step lines are in another file, add it to log_path.", "low",
                  facts, findings, ranked([_log_throughput_action(1)]))


def _coincidence_findings(a: ThroughputAnalysis) -> list[Finding]:
    """What happened at the change (restarts, gaps, evals, saves), or that nothing did; and
    the transients set aside."""
    out: list[Finding] = []
    ch, disc, ev = a.change, a.discontinuities, a.events
    span = a.change_span
    if ch is None or a.change_position is None or span is None:
        if len(disc):
            out.append(Finding(
                "discontinuities", "info",
                f"{len(disc)} restart(s)/gap(s) in the iteration numbers: "
                + ", ".join(f"{k} {f}→{t}" for k, f, t in
                            list(zip(disc["kind"], disc["from_iteration"], disc["to_iteration"],
                                     strict=False))[:5]), evidence(disc)))
        return out
    p = a.change_position
    lo_it, hi_it = span
    near, ev_near = a.restarts_at_change, a.events_at_change
    if len(near):
        out.append(Finding(
            "change_at_restart", "warning",
            f"The change coincides with a {'/'.join(near['kind'].unique())} between iterations "
            f"{lo_it} and {hi_it}: a restart can land on different nodes — compare the node "
            "lists of the two allocations", evidence(near)))
    if len(ev_near):
        kinds = sorted(set(ev_near["kind"]))
        out.append(Finding(
            "change_at_event", "warning",
            f"An {' and '.join(kinds)} happened at the change (iteration "
            f"{int(ev_near['iteration'].iloc[0])}): check that the slowdown outlasts it",
            evidence(ev_near)))
    if not a.coincides:
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
        out.append(Finding("nothing_coincides", "info",
                           "Nothing coincides with the change: " + "; ".join(parts), []))
    if a.n_set_aside or a.n_replaced:
        out.append(Finding(
            "transients", "info",
            f"{a.n_set_aside} iteration(s) right after eval/save and {a.n_replaced} isolated "
            "slow iteration(s) were set aside as transients (not a lasting change)",
            evidence(a.replaced_rows(), limit=5)))
    return out


def _suspect_findings(a: ThroughputAnalysis) -> list[Finding]:
    """What each per-rank / per-host source says about who is slow."""
    out: list[Finding] = []
    spec = a.spec
    assert spec is not None
    if len(a.ranks):
        sus = a.ranks[a.ranks["suspect"]]
        if len(sus):
            out.append(Finding(
                "slow_ranks_iterations", "critical",
                "Per-rank iteration figures: "
                + ", ".join(f"rank {int(r)} ({v:.4g} {spec.label}, z={z:.1f})" for r, v, z in
                            zip(sus["rank"], sus["value"], sus["z"], strict=False))
                + (" is" if len(sus) == 1 else " are") + " slower than the other ranks", []))
    if len(a.stragglers):
        top = a.stragglers.iloc[0]
        reports = int(top["reports"])
        spread = float(top["spread_pct"]) if pd.notna(top["spread_pct"]) else 0.0
        if a.straggler_rank is not None:
            out.append(Finding(
                "straggler_detector", "critical",
                f"Megatron's straggler detector names rank {int(top['rank'])} the slowest in "
                f"{top['share']:.0%} of {reports} reports (max/min RTT spread {spread:.1f}%)",
                evidence(_host_timing_rows(a.incident, metric="Rtt/Mx"), limit=5)))
        else:
            out.append(Finding(
                "straggler_detector", "info",
                f"Megatron's straggler detector: no rank is consistently the slowest "
                f"({reports} report(s), top rank {int(top['rank'])} in {top['share']:.0%}, "
                f"spread {spread:.1f}%)", []))
    if len(a.timers):
        sus = a.timers[a.timers["suspect"]]
        if len(sus):
            out.append(Finding(
                "slow_ranks_timers", "critical",
                "Per-rank Megatron timers: "
                + "; ".join(f"rank {int(r)} {t} {v:.1f} ms (z={z:.1f})" for r, t, v, z in
                            zip(sus["rank"], sus["timer"], sus["value"], sus["z"], strict=False)),
                []))
    if len(a.benchmarks):
        sus = a.benchmarks[a.benchmarks["suspect"]]
        if len(sus):
            out.append(Finding(
                "slow_hosts_benchmark", "critical",
                "Benchmark: "
                + "; ".join(f"{p} {m} {v:.4g} ({rel:+.1f}% slower than the median, z={z:.1f})"
                            for p, m, v, rel, z in zip(sus["peer"], sus["metric"], sus["value"],
                                                       sus["rel_pct"], sus["z"], strict=False)),
                evidence(_host_timing_rows(a.incident, hosts=set(sus["host"])), limit=10)))
        undirected = a.benchmarks[a.benchmarks["direction"] == 0]["metric"].unique()
        if len(undirected):
            out.append(Finding(
                "benchmark_metric_unknown", "info",
                f"Benchmark column(s) {', '.join(map(str, undirected))}: the name does not say "
                "whether larger is slower; name it seconds/time or tflops/throughput", []))
    if len(a.lags):
        sus = a.lags[a.lags["suspect"]]
        if len(sus):
            out.append(Finding(
                "late_ranks", "critical",
                "Flight recorder: "
                + "; ".join(f"rank {int(r)} enqueues collectives {lag:.0f} ms after the first "
                            f"rank (last in {share:.0%} of {n})" + (
                                f", from collective #{int(first)} on" if pd.notna(first) else "")
                            for r, lag, share, n, first in
                            zip(sus["rank"], sus["lag_ms"], sus["last_share"],
                                sus["collectives"], sus["first_late_seq"], strict=False))
                + ": the other ranks wait for it", []))
    return out


def _host_timing_rows(incident: Incident, metric: str | None = None,
                      hosts: set[str] | None = None) -> pd.DataFrame:
    """``host_timings`` rows of one metric, or of some hosts, as evidence."""
    ht = incident.tables.get("host_timings")
    if ht is None:
        return pd.DataFrame()
    if metric is not None:
        return ht[ht["metric"] == metric]
    return ht[ht["host"].isin(list(hosts or ()))]


def _plan_findings(a: ThroughputAnalysis) -> list[Finding]:
    """A hosts parameter that could not be read, and the bisection plan (or why none)."""
    out: list[Finding] = []
    if a.hosts_error is not None:
        out.append(Finding("bad_hosts", "warning", f"The hosts parameter is not a valid "
                           f"hostlist: {a.hosts_error}", []))
    if not a.wants_bisection:
        return out
    plan = a.bisect_plan
    if plan is None:
        out.append(Finding(
            "no_spares", "warning", f"{len(a.node_list)} nodes but spare_nodes={a.spare_nodes}: "
            "no node can be excluded without shrinking the job", []))
    else:
        out.append(Finding(
            "bisect_plan", "info",
            f"Bisection over {plan['n_hosts']} nodes ({plan['hosts']}, from {a.nodes_from}) with "
            f"{plan['spares']} spare node(s): at most {plan['worst_case_runs']} restarts "
            f"(~{plan['expected_runs']} on average); a run is fast if {plan['fast_if']}", []))
    return out


def _cost_findings(a: ThroughputAnalysis) -> list[Finding]:
    """What the remaining iterations take at the current and at the baseline pace."""
    last, cur_spi = a.last_step, a.current_s_per_iteration
    if last is None or cur_spi is None:
        return []
    if last.remaining == 0:
        return [Finding("eta", "info", f"The job reached its last iteration ({last.iteration}): "
                        "nothing remains to lose", [last.evidence()])]
    text = (f"{last.remaining} iterations remain (of {last.total}): "
            f"{a.eta_days} days at the current {cur_spi:.4g} s/iteration")
    base_spi = a.baseline_s_per_iteration
    if a.change is not None and base_spi is not None:
        text += (f", {a.eta_days_at_baseline} at the baseline {base_spi:.4g} s/iteration: "
                 f"the slowdown costs {a.days_lost} days if left alone")
    return [Finding("eta", "info", text, [last.evidence()])]


def _verdict(a: ThroughputAnalysis, f: dict[str, Any]) -> tuple[str, str]:
    """One sentence and its confidence."""
    spec, ch = a.spec, a.change
    assert spec is not None
    if ch is None:
        n = len(a.cleaned)
        return (f"No lasting throughput drop in {n} logged iterations ({spec.label} steady); "
                "if the job feels slow, compare with an earlier healthy run's figures.",
                "medium" if n >= STEADY_POINTS else "low")
    if ch.shape == "pause":
        return (f"The job paused or crawled in the interval ending at iteration "
                f"{f['change_iteration']} ({spec.label} {ch.baseline:.4g} → {ch.degraded:.4g}, "
                f"{_times(ch):.0f}× worse) and then ran at its old pace again; look at what the "
                "host did in that interval rather than for a slow node.", "medium")
    if ch.shape == "stall":
        return (f"The job stalled in its last logged interval: {spec.label} {_times(ch):.0f}× "
                f"worse ({ch.baseline:.4g} → {ch.degraded:.4g}) at iteration "
                f"{f['change_iteration']} after {ch.n_before} steady ones; find out whether it "
                "still makes progress before hunting a slow node.", "medium")
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
    strong = ch.z >= STRONG_Z and ch.n_after >= STRONG_AFTER
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


def _times(ch: Any) -> float:
    """How many times worse the degraded level is than the baseline."""
    lo, hi = sorted((abs(ch.baseline), abs(ch.degraded)))
    return hi / lo if lo else float("inf")


def _actions(a: ThroughputAnalysis, f: dict[str, Any]) -> list[Action]:
    """The ranked next steps: exclude a named node, else sweep, benchmark or bisect; after a
    stall, whether the job still moves first."""
    acts: list[Action] = []
    ch = a.change
    if ch is not None and ch.shape == "pause":
        acts.append(Action(
            "check_pause", 1, "Find what the host did while the job paused",
            "One long slow interval between normal ones is a pause of the host or its storage "
            "(swapping, a slow checkpoint write, another job or process competing, the machine "
            "sleeping), not a slow GPU: the iterations after it are back at the baseline.",
            "compare the pause's time window (the log's timestamps or elapsed times) with the "
            "host's memory and swap use, disk writes and other processes; sudo dmesg -T for "
            "that time"))
        acts.append(_log_throughput_action(2))
        return acts
    if ch is not None and ch.shape == "stall":
        acts.append(Action(
            "check_stall", 1, "Find out whether the job is hung before hunting a slow node",
            "One logged interval many times slower than all before it is how a hang or a dying "
            "collective starts (the watchdog fires only after its timeout); a slow node slows "
            "every interval alike.",
            "while it runs: traindoc collect --from-logs <training log> -o evidence/  (py-spy "
            "stacks of every rank on this host), then traindoc run deadlock evidence/; once it "
            "has failed: traindoc run triage <the job's logs>"))
        acts.append(_log_throughput_action(2))
        return acts
    job_script = a.job_script
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
    excl = hosts_arg(sus_hosts, hostlist=True) if sus_hosts else None
    if nodes and excl is None:  # a suspect the logs name by something that is no host name
        acts.append(Action(
            "exclude_suspect", 1, "Exclude the slow node and restart from the last checkpoint",
            f"The logs name {shown(nodes)} as slower than its peers, but that is not a host name: "
            "it is not put into a command.",
            "find the node's real name (sacct -j $SLURM_JOB_ID -o NodeList%400), then by hand: "
            f"sbatch --exclude=<that node> {job_script}"))
    elif nodes:
        acts.append(Action(
            "exclude_suspect", 1, f"Exclude {nodes} and restart from the last checkpoint",
            f"{nodes} is slower than its peers (see the findings): with synchronous training "
            "every rank waits for the slowest, so one slow GPU slows the whole job.",
            f"sbatch --exclude={excl} {job_script}  # then check {a.spec.label if a.spec else ''}"
            f" is back near {f['baseline']}"))
        acts.append(Action(
            "check_clocks_suspect", 2, f"Check clocks and throttling on {nodes}",
            "A GPU that throttles (thermal, power brake, HW slowdown) or runs at reduced clocks "
            "is the usual cause of one slow node with a healthy network.",
            f"srun -w {excl} --ntasks-per-node=1 nvidia-smi -q -d PERFORMANCE,CLOCK  # look at "
            "'Clocks Event Reasons' (HW Slowdown, HW Thermal Slowdown, HW Power Brake) and SM "
            "clocks below the others"))
        acts.append(Action(
            "burn_suspect", 3, f"Benchmark {nodes}'s GPUs against a healthy node",
            "Confirms the hardware fault before handing the node to the admins (BLOOM's slow GPU "
            "showed 303.6 s vs ~296.5 s on a node benchmark: 2.5%).",
            f"srun -w {excl} --ntasks-per-node=1 dcgmi diag -r 3  # or gpu_burn -d 120 on each "
            "GPU; report the node with the numbers"))
    elif sus_ranks:
        r = sus_ranks[0]
        acts.append(Action(
            "locate_rank", 1, f"Find the node of rank {r} and exclude it",
            f"{who(sus_ranks, cap=True)} {'is' if len(sus_ranks) == 1 else 'are'} slower than their peers but the logs do not say which node "
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
        n = len(a.node_list)
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
                          f"{st['if_slow']}" for st in bp["steps"][:PLAN_STEPS_SHOWN])
                + (" … (all steps in summary.json facts.bisect_plan)"
                   if len(bp["steps"]) > PLAN_STEPS_SHOWN else "")))
        elif not a.node_list:
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


__all__ = ["FACT_KEYS", "diagnose", "report"]
