"""Who is slow: each source of per-rank or per-host figures (iteration lines of several ranks,
Megatron's straggler detector and timers, per-host benchmark tables, flight-recorder arrival
lags) compared against its peers with a robust z-score, and the suspects they name."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...incident import Incident
from ...parse.benchmarks import metric_direction
from ..types import UNKNOWN_GROUP
from .change import MAD_TO_SIGMA, MEDIAN_SE
from .series import MetricSpec, steps_with_seconds, usable

PEER_Z = 3.5  # robust z-score that makes a rank/host an outlier among its peers (Iglewicz-Hoaglin)
STRAGGLER_METRIC = r"[A-Za-z]+/(?:Mn|Mx|Bottom|Top)"  # host_timings rows of the straggler detector
STRAGGLER_MIN_REPORTS = 2  # detector reports needed before its slowest rank counts
STRAGGLER_MIN_SHARE = 0.6  # share of those reports that must name the same rank
STRAGGLER_MIN_SPREAD_PCT = 1.0  # max/min RTT spread below which nobody is really slow
PEER_COLUMNS = ["source", "measure", "who", "value", "z", "suspect"]


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
    steps = steps_with_seconds(incident)
    if spec.column not in steps:
        return pd.DataFrame()
    rows = steps[usable(steps[spec.column]) & steps["rank"].notna()]
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
           & ~ht["metric"].str.startswith(("layout:", "schedule:", "plan:"), na=False)
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
    fr = fr.assign(_pg=fr["process_group"].fillna(UNKNOWN_GROUP),
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


def slowest_straggler(stragglers: pd.DataFrame) -> int | None:
    """The rank Megatron's straggler detector names consistently (the slowest in at least
    ``STRAGGLER_MIN_SHARE`` of ``STRAGGLER_MIN_REPORTS`` or more reports, with a max/min RTT
    spread of at least ``STRAGGLER_MIN_SPREAD_PCT``), or None."""
    if not len(stragglers):
        return None
    top = stragglers.iloc[0]
    spread = float(top["spread_pct"]) if pd.notna(top["spread_pct"]) else 0.0
    if (int(top["reports"]) >= STRAGGLER_MIN_REPORTS and top["share"] >= STRAGGLER_MIN_SHARE
            and spread >= STRAGGLER_MIN_SPREAD_PCT):
        return int(top["rank"])
    return None


def named_suspects(ranks: pd.DataFrame, stragglers: pd.DataFrame, timers: pd.DataFrame,
                   benchmarks: pd.DataFrame, lags: pd.DataFrame,
                   rank_hosts: dict[int, str]) -> tuple[set[int], set[str]]:
    """The ranks and hosts the per-rank/per-host tables name as slow; a suspect rank's host
    (from ``rank_hosts``) is a suspect host too."""
    sus_ranks: set[int] = set()
    sus_hosts: set[str] = set()
    if len(ranks):
        sus_ranks |= {int(r) for r in ranks.loc[ranks["suspect"], "rank"]}
    top = slowest_straggler(stragglers)
    if top is not None:
        sus_ranks.add(top)
    if len(timers):
        sus_ranks |= {int(r) for r in timers.loc[timers["suspect"], "rank"]}
    if len(benchmarks):
        sus_hosts |= set(benchmarks.loc[benchmarks["suspect"], "host"])
    if len(lags):
        sus_ranks |= {int(r) for r in lags.loc[lags["suspect"], "rank"]}
    sus_hosts |= {rank_hosts[r] for r in sus_ranks if r in rank_hosts}
    return sus_ranks, sus_hosts


def peer_table(ranks: pd.DataFrame, stragglers: pd.DataFrame, timers: pd.DataFrame,
               benchmarks: pd.DataFrame, lags: pd.DataFrame,
               spec: MetricSpec | None) -> pd.DataFrame:
    """Every per-rank / per-host comparison in one table: source, measure, who, value, z,
    suspect (most telling source first: benchmarks, arrival lags, timers, iteration lines)."""
    frames = []
    if len(benchmarks):
        b = benchmarks
        frames.append(pd.DataFrame({"source": "benchmark table", "measure": b["metric"],
                                    "who": b["peer"], "value": b["value"], "z": b["z"],
                                    "suspect": b["suspect"]}))
    if len(lags):
        lg = lags
        frames.append(pd.DataFrame({"source": "flight recorder", "measure":
                                    "arrival lag (ms, recent median)",
                                    "who": "rank " + lg["rank"].astype(str), "value": lg["lag_ms"],
                                    "z": np.nan, "suspect": lg["suspect"]}))
    if len(timers):
        t = timers
        frames.append(pd.DataFrame({"source": "Megatron timers", "measure": "timer " + t["timer"]
                                    + " (ms)", "who": "rank " + t["rank"].astype(str),
                                    "value": t["value"], "z": t["z"], "suspect": t["suspect"]}))
    if len(stragglers):
        st = stragglers
        frames.append(pd.DataFrame({"source": "straggler detector", "measure":
                                    "share of reports as slowest", "who": "rank " +
                                    st["rank"].astype(str), "value": st["share"], "z": np.nan,
                                    "suspect": False}))
    if len(ranks) and spec is not None:
        r = ranks
        frames.append(pd.DataFrame({"source": "iteration lines", "measure": spec.label,
                                    "who": "rank " + r["rank"].astype(str), "value": r["value"],
                                    "z": r["z"], "suspect": r["suspect"]}))
    if not frames:
        return pd.DataFrame(columns=PEER_COLUMNS)
    return pd.concat(frames, ignore_index=True)


__all__ = ["PEER_Z", "STRAGGLER_METRIC", "arrival_lags", "benchmark_outliers", "named_suspects",
           "peer_outliers", "peer_table", "rank_step_times", "slowest_straggler",
           "straggler_reports", "timer_outliers"]
