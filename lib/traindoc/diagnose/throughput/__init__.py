"""Throughput drop: when it started, by how much, which rank or node, and how to find it fast.

The method, step by step (each a pure function, unit-tested; the modules are named at the end):

1. ``metric_series``: one value per logged iteration of the chosen metric (TFLOPs, tokens/s,
   samples/s, or seconds per iteration), the median across ranks when several ranks log it;
   tqdm's s/it when no iteration line carries a metric, or the step lines' own times when
   they are at least 10 s apart (``series.timed_seconds``). Iteration numbers going back start a
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
   ``min_drop_pct`` of throughput, and ``material`` (a step of ``STEP_MIN_DROP_PCT``, 3 %, a
   gradual slide of ``DRIFT_MIN_DROP_PCT``, 10 %: below them a healthy run settling after
   warm-up or a running mean converging is no incident) — or, for short noisy series, when the two segments do not
   overlap at all, each at least ``SEPARATED_MIN`` points long and ``SEPARATED_DROP_PCT`` apart
   (every point after worse than every point before: by chance at most one in C(n, k) per
   split; Pythia's 5 intervals at 268-308 s then 4 at 324-356 s), or with two points
   on each side when every point after is ``FAR_FACTOR`` (3) times worse than every point before
   (``_far_apart``: Ultralytics at 0.33 s/it, then 12.7, 1.62, 11.45 s/it). A split whose
   worse side comes back to the baseline for a long stretch (``WANDER_MIN`` values and
   ``WANDER_SHARE`` of it) and falls again is a wandering level, no change
   (``_returns_midway``: a healthy Megatron run's TFLOPs 7.1 → 6.35 → 7.3 → 6.4). Medians make the split blind to short transients, so eval and
   save slowdowns in the middle of a series never make a change; the minimum segment length of
   2 lets a drop in the last two logged iterations count (the BLOOM seed: 3 points at ~149, 2
   at ~141.7), while a single slow last iteration does not — unless it is a *stall*
   (``trailing_stall``): the last logged value ``STALL_FACTOR`` (10) times worse than every
   one before it, those holding one level (RVC#1882: 124 s, 123 s, then 7311 s per 200
   steps). Then the first question is whether the job still moves, not which node is slow.
   Three logged values or fewer cannot be split into two levels of two; they are a change
   when each is worse than the one before by 10 % and the last than the first by 25 %
   (``short_creep``: Megatron-LLM#22, 84.6 → 142.5 → 202.4 s per iteration, a leak). One
   interval in the middle ten times slower than all others (twice, where the others hold
   within 10 %), that lost an hour or more, is a *pause* that recovered (``mid_pause``:
   ai-toolkit#595, 300 steps at 28 s between steps at 2 s; cellpose#450, ten epochs at 1,896 s
   each between epochs at 805-823 s); a single slow step that lost seconds stays a blip. Three or more values in a row
   each 30 % worse than the level the rest holds (10 % where that level's noise is a fifth of
   that at most: TSFormer's epochs 33-42 at 328-358 s among 292-298 s), the run back at it after
   them, are a slow *episode* that recovered (``slow_episode``: MLPerf RNN-T at half speed for
   epochs 28-31 of 51); slow values recurring in more than three runs are periodic pauses (saves), none.
5. Who is slow: per-rank iteration times, Megatron's straggler detector and per-rank timers,
   per-host benchmark tables, and flight-recorder arrival lags (the rank that enqueues each
   collective last), each compared against its peers with a robust z-score.
6. Without a named culprit: a bisection plan over the node list — the sequence of ``sbatch
   --exclude=`` sets, at most ``spare_nodes`` at a time, that finds one slow node in the fewest
   restarts in the worst case (optimal by dynamic programming; checked against brute force).
7. What it costs: the remaining iterations at the baseline and at the degraded rate.

Where it lives: ``series`` (steps 1-2, restarts and gaps), ``change`` (3-4), ``suspects`` (5),
``bisect`` (6), ``analysis`` (``analyse`` → ``ThroughputAnalysis``: every table the runbook
shows, and 7) and ``report`` (``report``: findings, verdict, actions; ``diagnose`` = both).
"""

from __future__ import annotations

from .analysis import ThroughputAnalysis, analyse
from .report import FACT_KEYS, diagnose, report

NAME = "throughput"
RUNBOOK = "throughput.ipynb"  # in traindoc/runbooks/
# the incident tables ``analyse`` reads
TABLES = ("iterations", "progress", "collectives", "host_timings", "checkpoints")

__all__ = ["FACT_KEYS", "NAME", "RUNBOOK", "TABLES", "ThroughputAnalysis", "analyse",
           "diagnose", "report"]
