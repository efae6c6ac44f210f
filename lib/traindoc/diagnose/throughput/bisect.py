"""Finding one slow node without a named culprit: the job's node list, and the plan of
``sbatch --exclude=`` restarts (at most ``spares`` nodes excluded at a time) that finds it in
the fewest restarts in the worst case (optimal by dynamic programming)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ...hostlist import compress, expand, natural_key
from ...incident import Incident
from ...schema import SYNTHETIC_HOST_PREFIX
from ...shellsafe import hosts_arg, is_host_name
from ..common import job_script_arg
from .change import Change
from .series import MetricSpec

DP_LIMIT = 2_000_000  # candidate-size x spares pairs the bisection planner searches exhaustively
PLAN_COLUMNS = ["step", "exclude", "sbatch", "if_fast", "if_slow"]


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


def bisect_plan(hosts: list[str] | str, spares: int, job_script: str | None = None,
                fast_if: str | None = None) -> dict[str, Any] | None:
    """The restart plan that finds one slow node among ``hosts`` (a list or a hostlist
    expression) excluding at most ``spares`` nodes per run, with the fewest restarts in the
    worst case. Steps are numbered; each says what to exclude (compressed hostlist, quoted for
    the shell), and where to go next if the run is fast (the slow node was excluded) or slow.
    None when there are fewer than 2 hosts or no spare."""
    names = expand(hosts) if isinstance(hosts, str) else list(dict.fromkeys(hosts))
    names = [n for n in names if is_host_name(n)]  # a name that is no host is not excluded
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
            "sbatch": f"sbatch --exclude={hosts_arg(node.exclude, hostlist=True)} "
                      f"{job_script_arg(job_script)}",
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


def plan_frame(plan: dict[str, Any] | None) -> pd.DataFrame:
    """The bisection steps of a ``bisect_plan`` as a table."""
    if not plan:
        return pd.DataFrame(columns=PLAN_COLUMNS)
    return pd.DataFrame(plan["steps"])[PLAN_COLUMNS]


def fast_if(spec: MetricSpec, ch: Change) -> str:
    """How to tell a fast run from a slow one: the metric past the midpoint of the two levels."""
    mid = (ch.baseline + ch.degraded) / 2
    op = ">=" if spec.higher_is_better else "<="
    return f"{spec.label} {op} {mid:.4g} (midway between {ch.baseline:.4g} and {ch.degraded:.4g})"


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


# What the logs show of where the job ran (``launch_scope``): the actions print SLURM commands
# only where the logs show SLURM, a command over hosts only where they name two or more, and
# the checks of one machine otherwise (an Ultralytics or PaddleSeg run on one GPU).
SCOPE_SLURM = "slurm"
SCOPE_HOSTS = "hosts"
SCOPE_NODES = "nodes"
SCOPE_MACHINE = "machine"
SCOPE_PROCESS = "process"
# a line that shows SLURM ran the job: srun's own lines, slurmstepd, its environment, scontrol,
# a job's state with its partition (BigScience's PULSE: "(1528763 on 'gpu_p5' partition (…)")
SLURM_LINE_RE = re.compile(r"^srun: |\bslurmstepd\b|\bSLURM_[A-Z_]+\b|\bNodeList=|"
                           r"\bscontrol\b|\bsbatch\b|\bsalloc\b|\bon '[\w.-]+' partition\b")
# tables of step lines hold no launcher's line; the others are scanned
SCOPE_SKIP_TABLES = frozenset(("iterations", "progress"))


def shows_slurm(incident: Incident) -> bool:
    """Whether any line the logs' parsers kept (step lines aside) shows SLURM
    (``SLURM_LINE_RE``)."""
    for name, df in incident.tables.items():
        if name in SCOPE_SKIP_TABLES or "line" not in df or not len(df):
            continue
        if df["line"].dropna().astype(str).str.contains(SLURM_LINE_RE).any():
            return True
    return False


def _layout(incident: Incident, key: str) -> float:
    """The largest ``layout:<key>`` a launcher stated (``parse.benchmarks``), 0 for none."""
    ht = incident.tables.get("host_timings")
    if ht is None or not len(ht) or "metric" not in ht:
        return 0.0
    vals = ht.loc[ht["metric"] == f"layout:{key}", "value"].dropna()
    return float(vals.max()) if len(vals) else 0.0


def launch_scope(incident: Incident, node_list: list[str]) -> str:
    """Where the job ran, as far as its logs show: ``SCOPE_SLURM`` (a SLURM line), else
    ``SCOPE_HOSTS`` (two or more nodes named), ``SCOPE_NODES`` (a launcher states two or more
    nodes, none named), ``SCOPE_MACHINE`` (several ranks, or a launcher's several processes
    per node, on nodes not known to be more than one), else ``SCOPE_PROCESS`` (one process:
    no rank above 0)."""
    if shows_slurm(incident):
        return SCOPE_SLURM
    if len(node_list) >= 2:
        return SCOPE_HOSTS
    if _layout(incident, "nnodes") >= 2:
        return SCOPE_NODES
    if len(incident.ranks) >= 2 or _layout(incident, "nproc_per_node") >= 2:
        return SCOPE_MACHINE
    return SCOPE_PROCESS


__all__ = ["DP_LIMIT", "SCOPE_HOSTS", "SCOPE_MACHINE", "SCOPE_NODES", "SCOPE_PROCESS",
           "SCOPE_SLURM", "bisect_plan", "fast_if",
           "host_list", "launch_scope", "plan_frame", "plan_table", "runs_by_spares",
           "shows_slurm", "worst_case_runs"]
