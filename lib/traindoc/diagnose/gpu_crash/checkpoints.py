"""Checkpoints and lost work: the resume point, the save cost, and how often to save.

Checkpoint interval (Young 1974, Daly 2006): with save cost δ and mean time between failures M,
the interval that minimises expected lost time is τ ≈ sqrt(2·δ·M) (Daly's higher-order form:
τ = sqrt(2δM)·[1 + ⅓·sqrt(δ/2M) + ⅑·(δ/2M)] − δ). The expected fraction of time lost to saving
and recomputing is about δ/τ + τ/(2M).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ...incident import Incident
from ...schema import with_source
from ..common import last_progress, place_unnumbered_saves, plan_values

DEFAULT_SAVE_S = 40.0  # BLOOM-176B: "A checkpoint is saved in 40 secs"
DEFAULT_MTBF_HOURS = 168.0  # BLOOM-176B: "Every week or so … one of the gpus dies"


@dataclass
class Checkpoints:
    """What the logs say about checkpoints."""

    last_iteration: int | None  # the last checkpoint the job could resume from
    last_time: Any
    last_path: str | None
    how: str  # saved | loaded | inferred | none
    incomplete: int | None  # a save that started and never finished (died while saving)
    save_s: float | None  # measured cost of one save
    save_s_source: str
    interval: int | None  # measured iterations between saves


def checkpoint_state(incident: Incident, last_iteration: int | None,
                     save_interval: int | None = None) -> Checkpoints:
    """The checkpoint to resume from, the save cost and interval measured from save lines."""
    ck = place_unnumbered_saves(incident)
    if ck is None or not len(ck):
        ck = pd.DataFrame(columns=["iteration", "path", "kind", "duration_s", "time"])
    with_it = ck[ck["iteration"].notna()]
    saved = with_it[with_it["kind"] == "saved"]
    starts = with_it[with_it["kind"] == "save_start"]
    loaded = with_it[with_it["kind"] == "loaded"]
    done = set(int(i) for i in saved["iteration"])
    started = sorted(set(int(i) for i in starts["iteration"]))
    incomplete = None
    # the program said its run reached its end (``parse.benchmarks.RUN_FINISHED_METRIC``:
    # MLPerf's run_stop, BasicSR's "End of training.")
    finished = bool(len(plan_values(incident.host_timings, "finished")))
    for s in started:
        if s in done:
            continue
        if last_iteration is not None and last_iteration > s:
            done.add(s)  # training went on past it: the save finished (its line is elsewhere)
        elif finished:
            done.add(s)  # the program said its run reached its end: its last save was made
        elif s == started[-1]:
            incomplete = s
    candidates = done | set(int(i) for i in loaded["iteration"])
    last = max(candidates) if candidates else None
    how = "none"
    last_time, last_path = None, None
    if last is not None:
        rows = with_it[with_it["iteration"] == last]
        how = "saved" if last in done else "loaded"
        pick = rows[rows["kind"] == ("saved" if how == "saved" else "loaded")]
        pick = pick if len(pick) else rows
        tm = pick["time"].dropna()
        last_time = tm.max() if len(tm) else None
        paths = pick["path"].dropna()
        last_path = str(paths.iloc[-1]) if len(paths) else None
    elif save_interval and last_iteration is not None:
        last = (last_iteration // save_interval) * save_interval
        how = "inferred"
    # Save cost: stated durations, else start -> saved time per iteration.
    save_s, src = None, "none"
    durs = ck["duration_s"].dropna() if "duration_s" in ck else pd.Series([], dtype=float)
    if len(durs):
        save_s, src = float(durs.median()), f"median of {len(durs)} save timing line(s)"
    else:
        pairs = []
        for _it, g in with_it.groupby("iteration"):
            t0 = g[g["kind"] == "save_start"]["time"].dropna()
            t1 = g[g["kind"] == "saved"]["time"].dropna()
            if len(t0) and len(t1) and t1.max() >= t0.min():
                pairs.append((t1.max() - t0.min()).total_seconds())
        if pairs:
            save_s = float(pd.Series(pairs).median())
            src = f"median start→saved time of {len(pairs)} save(s)"
    seq = sorted(done | set(int(i) for i in loaded["iteration"]))
    interval = None
    if len(seq) >= 2:
        diffs = pd.Series(seq).diff().dropna()
        interval = int(diffs.median())
    elif save_interval:
        interval = int(save_interval)
    return Checkpoints(last, last_time, last_path, how, incomplete, save_s, src, interval)


def iteration_seconds(incident: Incident) -> float | None:
    """Seconds per iteration: median of the last 50 'elapsed time per iteration' values, else
    the tqdm rate of the main bar."""
    it = with_source(incident.iterations)
    if len(it) and it["elapsed_s"].notna().any():
        last = it.dropna(subset=["elapsed_s"]).sort_values("iteration").tail(50)
        v = float(last["elapsed_s"].median())
        return v if v > 0 else None
    prog = last_progress(incident)
    return prog.seconds_per_step


def young_daly(save_s: float, mtbf_s: float) -> dict[str, float]:
    """Optimal checkpoint interval in seconds: Young's sqrt(2·δ·M) and Daly's refinement."""
    if save_s <= 0 or mtbf_s <= 0:
        return {"young_s": float("nan"), "daly_s": float("nan")}
    young = math.sqrt(2.0 * save_s * mtbf_s)
    if save_s < 2.0 * mtbf_s:
        r = save_s / (2.0 * mtbf_s)
        daly = young * (1.0 + math.sqrt(r) / 3.0 + r / 9.0) - save_s
    else:
        daly = mtbf_s
    return {"young_s": young, "daly_s": daly}


def expected_waste(interval_s: float, save_s: float, mtbf_s: float) -> float:
    """Expected fraction of time lost to saving (δ/τ) plus recomputing after a failure
    (τ/2M, half an interval on average): first-order, restart time left out."""
    if interval_s <= 0 or mtbf_s <= 0:
        return float("nan")
    return save_s / interval_s + interval_s / (2.0 * mtbf_s)


def interval_table(save_s: float, mtbf_s: float, iteration_s: float | None,
                   current_iterations: int | None = None) -> pd.DataFrame:
    """Young/Daly inputs and result, and the expected waste of the current and recommended
    intervals: the numbers behind ``checkpoint_interval_recommended``."""
    yd = young_daly(save_s, mtbf_s)
    rows: list[tuple[str, str]] = [
        ("δ: seconds to save one checkpoint", f"{save_s:g}"),
        ("M: mean time between failures of the job", f"{mtbf_s / 3600:g} h"),
        ("Young: τ = sqrt(2·δ·M)", f"{yd['young_s']:.0f} s = {yd['young_s'] / 3600:.2f} h"),
        ("Daly: τ = sqrt(2δM)·[1 + ⅓·sqrt(δ/2M) + ⅑·δ/2M] − δ", f"{yd['daly_s']:.0f} s"),
    ]
    if iteration_s:
        rows.append(("seconds per iteration", f"{iteration_s:.3g}"))
        rows.append(("recommended: iterations between saves (Young)",
                     str(max(1, round(yd["young_s"] / iteration_s)))))
        rows.append(("expected time lost at the recommended interval",
                     f"{100 * expected_waste(yd['young_s'], save_s, mtbf_s):.2f}%"))
        if current_iterations:
            cur = current_iterations * iteration_s
            rows.append((f"expected time lost at the current {current_iterations} iterations",
                         f"{100 * expected_waste(cur, save_s, mtbf_s):.2f}%"))
    return pd.DataFrame(rows, columns=["quantity", "value"])



def lost_work(incident: Incident, last_iteration: int | None, ck: Checkpoints,
              failure_time: Any, iteration_s: float | None) -> tuple[int | None, float | None]:
    """Iterations and hours lost since the resume point: from the checkpoint's and the
    failure's timestamps when both are known, else lost iterations × seconds per iteration;
    with no checkpoint, from the start of training when the logs begin there."""
    lost_it: int | None = None
    lost_h: float | None = None
    it = with_source(incident.iterations)
    first_logged = int(it["iteration"].min()) if len(it) and it["iteration"].notna().any() \
        else None
    from_start = (ck.last_iteration is None and first_logged is not None and first_logged <= 1
                  and last_iteration is not None)
    if last_iteration is not None and ck.last_iteration is not None:
        lost_it = max(0, last_iteration - ck.last_iteration)
    elif from_start:
        lost_it = last_iteration
    if (ck.last_time is not None and failure_time is not None and pd.notna(failure_time)
            and pd.notna(ck.last_time) and failure_time >= ck.last_time):
        lost_h = round((failure_time - ck.last_time).total_seconds() / 3600, 3)
    elif lost_it is not None and iteration_s:
        lost_h = round(lost_it * iteration_s / 3600, 3)
    return lost_it, lost_h


def save_cost(incident: Incident, checkpoint_save_s: float | None = None,
              save_interval: int | None = None) -> tuple[float, str]:
    """Seconds per checkpoint save and where the number comes from: given, measured from the
    save lines, or the BLOOM-176B figure (40 s) as a stated assumption."""
    return save_cost_of(checkpoint_state(incident, last_progress(incident).step, save_interval),
                        checkpoint_save_s)


def save_cost_of(ck: Checkpoints, checkpoint_save_s: float | None = None) -> tuple[float, str]:
    """``save_cost`` from an already measured checkpoint state."""
    if checkpoint_save_s:
        return float(checkpoint_save_s), "given (checkpoint_save_s)"
    if ck.save_s:
        return ck.save_s, ck.save_s_source
    return DEFAULT_SAVE_S, (f"assumed ({DEFAULT_SAVE_S:g} s, the BLOOM-176B figure); set "
                            "checkpoint_save_s")


def interval_report(incident: Incident, checkpoint_save_s: float | None = None,
                    iteration_s: float | None = None, mtbf_hours: float = DEFAULT_MTBF_HOURS,
                    save_interval: int | None = None) -> pd.DataFrame:
    """``interval_table`` with the inputs measured from ``incident`` (or given), each input's
    source stated."""
    ck = checkpoint_state(incident, last_progress(incident).step, save_interval)
    save_s, src = save_cost_of(ck, checkpoint_save_s)
    spi = iteration_s or iteration_seconds(incident)
    return interval_sources_table(save_s, src, float(mtbf_hours) * 3600.0, spi, ck.interval,
                                  iteration_given=bool(iteration_s))


def interval_sources_table(save_s: float, save_source: str, mtbf_s: float,
                           iteration_s: float | None, current_iterations: int | None,
                           iteration_given: bool) -> pd.DataFrame:
    """``interval_table`` followed by where δ and the seconds per iteration come from."""
    table = interval_table(save_s, mtbf_s, iteration_s, current_iterations)
    notes = pd.DataFrame([("source of δ", save_source),
                          ("source of seconds per iteration",
                           "given (iteration_s)" if iteration_given else
                           "measured from the logs" if iteration_s else "unknown: set iteration_s")],
                         columns=["quantity", "value"])
    return pd.concat([table, notes], ignore_index=True)


def cost_table(facts: dict[str, Any]) -> pd.DataFrame:
    """What the crash cost, from the facts, as a two-column text table."""
    keys = ("first_failure_time", "last_iteration", "last_checkpoint_iteration",
            "lost_iterations", "lost_hours", "checkpoint_interval_recommended")
    return pd.DataFrame([(k, "unknown" if facts.get(k) is None else str(facts[k])) for k in keys],
                        columns=["fact", "value"])
