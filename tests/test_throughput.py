"""Throughput diagnosis: change points with known answers, the bisection plan against brute
force, hostlists, suspects from per-rank/per-host data, and the BLOOM seed."""

from __future__ import annotations

import itertools
import math
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traindoc
from conftest import DATA
from traindoc.diagnose import throughput as tp
from traindoc.diagnose.throughput import analysis as tp_analysis
from traindoc.diagnose.throughput import bisect as tp_bisect
from traindoc.diagnose.throughput import change as tp_change
from traindoc.diagnose.throughput import series as tp_series
from traindoc.diagnose.throughput import suspects as tp_suspects
from traindoc.hostlist import compress, expand

SEED = DATA / "throughput" / "bloom_seed"
DRILL = DATA / "throughput" / "drill_slow_rank"


def megatron_line(it: int, total: int, secs: float, tflops: float) -> str:
    """A BigScience Megatron-DeepSpeed iteration line (format of seed 001)."""
    return (f"[default7]: iteration {it}/ {total} | consumed samples: {it * 2048} | elapsed time "
            f"per iteration (s): {secs:.2f} | learning rate: 4.475E-05 | global batch size: 2048 "
            f"| lm loss: 2.117073E+00 | grad norm: 0.150 | num zeros: 0.0 | number of skipped "
            f"iterations: 0 | number of nan iterations: 0 | samples per second: "
            f"{2048 / secs:.3f} | TFLOPs: {tflops:.2f} |")


def detect(values, higher_is_better: bool = True, **kw) -> tp_change.Change | None:
    cleaned, _ = tp_change.despike(np.asarray(values, dtype=float))
    return tp_change.find_change(cleaned, higher_is_better, **kw)


# -- change points on synthetic series with known answers --------------------------------------
def test_step_is_found_where_it_is() -> None:
    rng = np.random.default_rng(1)
    x = np.r_[149 + rng.normal(0, 0.5, 500), 141 + rng.normal(0, 0.5, 500)]
    ch = detect(x)
    assert ch is not None and ch.index == 500 and ch.shape == "step"
    assert ch.baseline == pytest.approx(149, abs=0.1) and ch.degraded == pytest.approx(141, abs=0.1)
    assert ch.drop_pct == pytest.approx(100 * 8 / 149, abs=0.2)


def test_step_in_seconds_per_iteration() -> None:
    rng = np.random.default_rng(2)
    t = np.r_[105 + rng.normal(0, 0.4, 300), 111 + rng.normal(0, 0.4, 200)]
    ch = detect(t, higher_is_better=False)
    assert ch is not None and ch.index == 300
    assert ch.drop_pct == pytest.approx(100 * (1 - 105 / 111), abs=0.3)
    assert detect(t[::-1], higher_is_better=False) is None  # getting faster is not a drop


def test_ramp_is_a_gradual_change() -> None:
    rng = np.random.default_rng(3)
    x = np.r_[149 + rng.normal(0, 0.5, 300), np.linspace(149, 141, 100) + rng.normal(0, 0.5, 100),
              141 + rng.normal(0, 0.5, 300)]
    ch = detect(x)
    assert ch is not None and ch.shape == "gradual"
    assert 300 <= ch.index <= 400 and 300 <= ch.onset <= 350


@pytest.mark.parametrize("n", [5, 8, 30, 200, 2000, 6000])
@pytest.mark.parametrize("seed", range(5))
def test_noise_only_has_no_change(n: int, seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    assert detect(149 + rng.normal(0, 0.6, n)) is None
    assert detect(105 + rng.standard_t(3, n) * 0.5, higher_is_better=False) is None


def periodic_seconds(n: int, rng: np.random.Generator) -> np.ndarray:
    """BLOOM's cadence: ~105 s/iteration, a save every 100 iterations (+40 s on the next
    logged iteration), an eval every 1000 (+720 s)."""
    its = np.arange(1, n + 1)
    t = 105 + rng.normal(0, 0.4, n)
    t[its % 100 == 1] += 40
    t[its % 1000 == 1] += 720
    return t


@pytest.mark.parametrize("seed", range(3))
def test_periodic_eval_and_save_slowdowns_are_not_a_change(seed: int) -> None:
    rng = np.random.default_rng(seed)
    t = periodic_seconds(3001, rng)  # ends right after an eval
    assert detect(t, higher_is_better=False) is None
    assert detect(2048 / t * 7.3, higher_is_better=True) is None


def test_periodic_slowdowns_do_not_hide_a_real_step() -> None:
    t = periodic_seconds(3000, np.random.default_rng(7))
    t[1800:] += 5.5
    ch = detect(t, higher_is_better=False)
    assert ch is not None and ch.index == 1800


def test_minimum_segment_rule() -> None:
    base = [149.1, 149.0, 149.2, 149.1, 148.9, 149.0]
    assert detect(base + [141.2]) is None  # one slow iteration at the end is not a change
    ch = detect(base + [141.2, 141.4])
    assert ch is not None and ch.n_after == 2
    assert detect(base + [141.2, 141.4], min_segment=3) is None


def test_the_seeds_five_points() -> None:
    ch = detect([149.10, 149.09, 147.58, 142.32, 141.09])
    assert ch is not None and ch.index == 3
    assert ch.baseline == pytest.approx(149.09) and ch.degraded == pytest.approx(141.705)


def test_despike_replaces_isolated_points_only() -> None:
    x = np.r_[np.full(20, 100.0), 150.0, np.full(20, 100.0), 130.0, 131.0]
    x = x + np.random.default_rng(0).normal(0, 0.2, len(x))
    cleaned, replaced = tp_change.despike(x)
    assert replaced[20] and cleaned[20] == pytest.approx(100, abs=1)
    assert not replaced[-2:].any()  # a run of two at the end is kept


def test_mask_events_sets_aside_the_event_and_the_next_logged_iteration() -> None:
    s = pd.DataFrame({"iteration": [98, 99, 100, 101, 102]})
    assert tp_series.mask_events(s, [100]).tolist() == [False, False, True, True, False]
    assert not tp_series.mask_events(s, [98, 99, 100, 101]).any()  # too much: nothing masked


# -- the BLOOM seed -----------------------------------------------------------------------------
def test_seed_done_when() -> None:
    inc = traindoc.load(SEED)
    r = tp.diagnose(inc)
    f = r.facts
    assert set(tp.FACT_KEYS) <= set(f)
    assert f["metric"] == "tflops" and f["change_iteration"] == 42783
    assert 148.5 <= f["baseline"] <= 149.5 and 141 <= f["degraded"] <= 142
    assert f["remaining_iterations"] == 115311 - 42784
    assert f["suspect_ranks"] == [] and f["suspect_hosts"] == []
    bp = f["bisect_plan"]
    assert bp["n_hosts"] == 48 and bp["spares"] == 3 and bp["worst_case_runs"] == 17
    assert bp["steps"][0]["sbatch"] == "sbatch --exclude='jean-zay-iam[01-03]' \"$JOB_SCRIPT\""
    assert "42783" in r.verdict and r.confidence == "medium"


def test_eta_matches_the_seeds_arithmetic() -> None:
    assert round(tp_analysis.eta_days(115311 - 12695, 105), 1) == 124.7


# -- bisection ------------------------------------------------------------------------------------
@cache
def brute_force(candidates: frozenset[int], spares: int) -> int:
    """Worst-case restarts, trying every exclusion set of at most ``spares`` candidates."""
    if len(candidates) <= 1:
        return 0
    best = math.inf
    items = sorted(candidates)
    for k in range(1, min(spares, len(items) - 1) + 1):
        for excl in itertools.combinations(items, k):
            e = frozenset(excl)
            best = min(best, 1 + max(brute_force(e, spares), brute_force(candidates - e, spares)))
    return int(best)


@pytest.mark.parametrize("n", range(1, 9))
@pytest.mark.parametrize("spares", [1, 2, 3, 4])
def test_plan_is_optimal_against_brute_force(n: int, spares: int) -> None:
    assert tp_bisect.worst_case_runs(n, spares) == brute_force(frozenset(range(n)), spares)


def follow(plan: dict, slow: str) -> tuple[str, int]:
    """Play the plan against a job whose slow node is ``slow``."""
    steps = {s["step"]: s for s in plan["steps"]}
    cur, runs = 1, 0
    while True:
        st_ = steps[cur]
        runs += 1
        excluded = set(expand(st_["exclude"]))
        assert len(excluded) <= plan["spares"]
        assert st_["sbatch"].startswith(f"sbatch --exclude='{st_['exclude']}' ")
        nxt = st_["if_fast"] if slow in excluded else st_["if_slow"]
        if isinstance(nxt, str):
            return nxt.removeprefix("found: "), runs
        cur = nxt


@pytest.mark.parametrize(("expr", "spares"), [("n[1-7]", 2), ("jean-zay-iam[01-34,36-49]", 3),
                                              ("gpu[001-016]", 1), ("a[1-10]", 10)])
def test_plan_finds_every_node_within_the_worst_case(expr: str, spares: int) -> None:
    plan = tp_bisect.bisect_plan(expr, spares, "job.slurm")
    for host in expand(expr):
        found, runs = follow(plan, host)
        assert found == host and runs <= plan["worst_case_runs"]
    assert max(follow(plan, h)[1] for h in expand(expr)) == plan["worst_case_runs"]
    assert len(plan["steps"]) == len(expand(expr)) - 1


def test_large_plans_use_the_worst_case_optimal_split(monkeypatch) -> None:
    full = tp_bisect.plan_table(200, 7)[0]
    monkeypatch.setattr("traindoc.diagnose.throughput.bisect.DP_LIMIT", 0)
    assert tp_bisect.plan_table(200, 7)[0] == full


def test_plan_edge_cases() -> None:
    assert tp_bisect.bisect_plan(["only"], 3) is None
    assert tp_bisect.bisect_plan("n[1-4]", 0) is None
    assert tp_bisect.worst_case_runs(48, 3) == 17  # 15 groups of 3 cleared, then 2 halvings
    assert tp_bisect.worst_case_runs(48, 24) == 6  # plain binary search: ceil(log2 48)


# -- hostlists ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("expr", "n"), [
    ("jean-zay-iam[01-34,36-49]", 48), ("node[9-11]", 3), ("rack[1-2]-n[01-02]", 4),
    ("a1,b[2-3],c", 4), ("gpu-st-[1-4]", 4)])
def test_hostlist_round_trip(expr: str, n: int) -> None:
    hosts = expand(expr)
    assert len(hosts) == n
    assert sorted(expand(compress(hosts))) == sorted(hosts)


def test_hostlist_canonical_and_errors() -> None:
    assert compress(expand("jean-zay-iam[01-34,36-49]")) == "jean-zay-iam[01-34,36-49]"
    assert compress(["n9", "n10", "n11", "n01"]) in ("n01,n[9-11]", "n[01,10-11],n9")
    assert expand("n[01-03]") == ["n01", "n02", "n03"]
    for bad in ("n[1-3", "n[3-1]", "n[a-b]", "n[[1]]"):
        with pytest.raises(ValueError):
            expand(bad)


@settings(max_examples=200, deadline=None)
@given(st.sets(st.tuples(st.sampled_from(["node", "gpu-", "r1n"]), st.integers(0, 300),
                         st.sampled_from([0, 2, 3])), min_size=1, max_size=40))
def test_hostlist_property(names: set[tuple[str, int, int]]) -> None:
    hosts = {f"{p}{str(i).zfill(w) if w else i}" for p, i, w in names}
    assert set(expand(compress(hosts))) == hosts


# -- suspects from per-rank and per-host data -------------------------------------------------------
def seed_like_log(tmp_path: Path) -> Path:
    lines = [megatron_line(42700 + i, 115311, 105.2 + 0.1 * (i % 3), 149.1 - 0.1 * (i % 3))
             for i in range(40)]
    lines += [megatron_line(42740 + i, 115311, 110.6 + 0.1 * (i % 2), 141.7 - 0.1 * (i % 2))
              for i in range(20)]
    p = tmp_path / "main_log.txt"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize("slurm", [True, False], ids=["slurm-line", "no-scheduler"])
def test_benchmark_table_names_the_slow_node(tmp_path: Path, slurm: bool) -> None:
    seed_like_log(tmp_path)
    if slurm:  # slurmstepd's line from HEISENYAN/openpi's train_aloha_folding.out
        (tmp_path / "slurm.out").write_text(
            "slurmstepd: error: *** JOB 334949 ON dgx-03 CANCELLED AT 2026-01-06T04:52:18 ***\n")
    hosts = expand("jean-zay-iam[01-34,36-49]")
    rng = np.random.default_rng(0)
    rows = [f"{h},{296.5 + rng.normal(0, 0.4):.1f}" for h in hosts]
    rows[hosts.index("jean-zay-iam27")] = "jean-zay-iam27,303.6"
    (tmp_path / "bench.csv").write_text("host,seconds\n" + "\n".join(rows) + "\n")
    r = tp.diagnose(traindoc.load(tmp_path), hosts="jean-zay-iam[01-34,36-49]")
    assert r.facts["change_iteration"] == 42740
    assert r.facts["suspect_hosts"] == ["jean-zay-iam27"]
    assert r.facts["bisect_plan"] is None
    # the restart follows what the logs show of the launcher: sbatch only where SLURM shows
    how = r.actions[0].how
    assert how.startswith("sbatch --exclude='jean-zay-iam27'") is slurm
    assert slurm or ("without jean-zay-iam27: take it out of the launcher's host list" in how
                     and not any(w in x.how for x in r.actions
                                 for w in ("sbatch", "srun", "sacct", "scontrol")))
    assert r.confidence == "high"
    assert "slow_hosts_benchmark" in {f.id for f in r.findings}
    assert [a.id for a in r.actions[:3]] == ["exclude_suspect", "check_clocks_suspect",
                                             "burn_suspect"]


def test_straggler_detector_names_the_slow_rank(tmp_path: Path) -> None:
    log = seed_like_log(tmp_path)
    text = log.read_text()
    rep = ("[2024-03-14 23:07:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: {mx:.2f}ms/{r} | "
           "MnEtpt/Rnk: 288.02TF/{r} | MxEtpt/Rnk: 297.32TF/8\n")
    extra = "".join(rep.format(mx=3560 + i, r=13) for i in range(5))
    log.write_text(text + extra)
    r = tp.diagnose(traindoc.load(log))
    assert r.facts["suspect_ranks"] == [13]
    assert "straggler_detector" in {f.id for f in r.findings}


def test_per_rank_step_lines_name_the_slow_rank(tmp_path: Path) -> None:
    lines = []
    for step in range(1, 41):
        for rank in range(8):
            tps = 5800.0 + 10 * ((step + rank) % 3)
            if step > 20:
                tps -= 600
                if rank == 5:
                    tps -= 900
            lines.append(f"[rank{rank}]:[titan] 2025-06-16 22:30:50,322 - root - INFO - step: "
                         f"{step}  loss:  6.1384  memory: 49.66GiB(52.28%)  tps: {tps:,.0f}  "
                         "tflops: 339.16  mfu: 34.29%")
    (tmp_path / "titan.log").write_text("\n".join(lines) + "\n")
    r = tp.diagnose(traindoc.load(tmp_path), metric="tokens_per_s_per_gpu")
    assert r.facts["change_iteration"] == 21
    assert r.facts["suspect_ranks"] == [5]
    assert "slow_ranks_iterations" in {f.id for f in r.findings}


def test_arrival_lags_name_the_rank_the_others_wait_for() -> None:
    t0 = pd.Timestamp("2025-01-01")
    rows = []
    for seq in range(30):
        for rank in range(4):
            late = 0.25 if (rank == 2 and seq >= 15) else 0.0002 * rank
            rows.append({"rank": rank, "process_group": "0", "seq_num": seq,
                         "time": t0 + pd.Timedelta(seconds=seq * 0.3 + late),
                         "source": f"fr/rank{rank}.pkl#entry{seq}"})
    lags = tp_suspects.arrival_lags(pd.DataFrame(rows))
    assert lags[lags["suspect"]]["rank"].tolist() == [2]
    assert lags.set_index("rank").loc[2, "first_late_seq"] == 15


@pytest.mark.skipif(not DRILL.is_dir(), reason="drill bundle not generated")
def test_drill_slow_rank() -> None:
    r = tp.diagnose(traindoc.load(DRILL))
    assert r.facts["change_iteration"] == 20 and r.facts["suspect_ranks"] == [1]


def test_restart_at_the_change_is_reported(tmp_path: Path) -> None:
    lines = [megatron_line(1000 + i, 5000, 105.2, 149.1 - 0.1 * (i % 3)) for i in range(30)]
    lines += [megatron_line(1020 + i, 5000, 110.6, 141.7 - 0.1 * (i % 2)) for i in range(30)]
    (tmp_path / "log.txt").write_text("\n".join(lines) + "\n")
    r = tp.diagnose(traindoc.load(tmp_path))
    assert r.facts["change_iteration"] == 1020
    assert "restart" in r.facts["coincides"]
    assert any(f.id == "change_at_restart" for f in r.findings)


def test_eval_line_is_set_aside(tmp_path: Path) -> None:
    lines = [megatron_line(44990 + i, 115311, 105.2, 149.1 - 0.1 * (i % 3)) for i in range(11)]
    lines.append("[default7]:valid loss at iteration 45000 | lm loss value: 2.327091E+00 | lm "
                 "loss PPL: 1.024808E+01 |")
    lines.append(megatron_line(45001, 115311, 825.2, 18.9))
    lines.append(megatron_line(45002, 115311, 105.3, 149.0))
    (tmp_path / "log.txt").write_text("\n".join(lines) + "\n")
    inc = traindoc.load(tmp_path)
    a = tp.analyse(inc)
    assert a.events["iteration"].tolist() == [45000]
    assert len(a.used) == len(a.series) - 2
    assert tp.report(a).facts["change_iteration"] is None


def test_no_metric_is_a_finding_with_all_keys() -> None:
    r = tp.diagnose(traindoc.Incident.empty())
    assert set(tp.FACT_KEYS) <= set(r.facts) and r.facts["suspect_ranks"] == []
    assert r.findings and r.findings[0].id == "no_metric" and r.confidence == "low"


def test_progress_bar_fallback(tmp_path: Path) -> None:
    bars = [f"Train:  {i}%|#   | {i}/100 [00:{i:02d}<00:10, {1.0 if i <= 50 else 0.8:.2f}it/s]"
            for i in range(1, 100)]
    (tmp_path / "tqdm.log").write_text("\r".join(bars) + "\n")
    r = tp.diagnose(traindoc.load(tmp_path))
    assert r.facts["metric"] == "s_per_iteration" and r.facts["change_iteration"] == 51


def test_two_readings_name_the_metric_and_claim_no_change(tmp_path) -> None:
    # deepspeedai/DeepSpeed#1825: the ThroughputTimer printed twice in the excerpt
    p = tmp_path / "job.log"
    p.write_text("[2022-03-11 02:06:58,985] [INFO] [timer.py:189:stop] 0/40, SamplesPerSec="
                 "83.48609168106144, MemAllocated=0.26GB, MaxMemAllocated=9.02GB\n"
                 "[2022-03-11 02:07:14,130] [INFO] [timer.py:189:stop] 0/50, SamplesPerSec="
                 "83.73838805358588, MemAllocated=0.26GB, MaxMemAllocated=9.02GB\n")
    r = tp.diagnose(traindoc.load(p))
    assert r.facts["metric"] == "samples_per_s" and r.facts["change_iteration"] is None
    assert r.confidence == "low" and "too few" in r.verdict


def test_interval_times_become_seconds_per_iteration() -> None:
    from traindoc.diagnose.throughput.series import per_iteration_seconds

    assert per_iteration_seconds([100, 200, 400], [300.0, 270.0, 600.0]) == [3.0, 2.7, 3.0]
    # the first interval's start is unknown unless the gaps say it began at 0
    assert per_iteration_seconds([150, 200, 250], [10.0, 5.0, 5.0]) == [None, 0.1, 0.1]


def test_step_lines_without_a_rate_are_timed_by_their_own_times(tmp_path: Path) -> None:
    from traindoc.diagnose.throughput.series import steps_with_seconds

    # RVC-Project/Retrieval-based-Voice-Conversion-WebUI#1882's wording, every 200 steps
    line = "2024-04-10 {} | INFO | logs | Total loss at epoch 5, step at {}, loss=31.05"
    (tmp_path / "a.log").write_text("\n".join(line.format(t, s) for t, s in [
        ("04:59:03", 58400), ("05:01:07", 58600), ("05:03:10", 58800), ("07:05:01", 59000)]))
    got = steps_with_seconds(traindoc.load(tmp_path / "a.log"))["elapsed_s"].tolist()
    assert got[0] is pd.NA and got[1:] == [0.62, 0.615, 36.555]
    # lines a second apart: whole-second times are too coarse to time a step
    (tmp_path / "b.log").write_text("\n".join(line.format(f"05:00:{s:02d}", s) for s in range(9)))
    assert steps_with_seconds(traindoc.load(tmp_path / "b.log"))["elapsed_s"].isna().all()


def test_times_with_milliseconds_time_a_step_a_second_long(tmp_path: Path) -> None:
    from traindoc.diagnose.throughput.series import clock_tick, steps_with_seconds

    # a T5 fine-tune's custom loop, one line per batch, python logging's %(asctime)s (corpus
    # throughput-t5-finetune-train-log): its times are the only speed signal
    lines = ["2025-03-02 05:16:20,962 - INFO - Epoch 1 - Batch loss: 12.1336",
             "2025-03-02 05:16:22,229 - INFO - Epoch 1 - Batch loss: 14.9769",
             "2025-03-02 05:16:23,493 - INFO - Epoch 1 - Batch loss: 12.9075",
             "2025-03-02 05:16:24,763 - INFO - Epoch 1 - Batch loss: 10.1722",
             "2025-03-02 05:16:26,027 - INFO - Epoch 1 - Batch loss: 13.5579"]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    inc = traindoc.load(tmp_path / "train.log")
    assert clock_tick(inc.iterations["time"]) == 0.001
    got = steps_with_seconds(inc)["elapsed_s"].tolist()
    assert got[0] is pd.NA and got[1:] == pytest.approx([1.267, 1.264, 1.27, 1.264])
    # the clock's tick is what the fractions show: tenths, or whole seconds
    assert clock_tick(pd.Series(pd.to_datetime(["2025-01-01 00:00:01.5", "2025-01-01 00:00:02.0"]))) == 0.1
    assert clock_tick(pd.Series(pd.to_datetime(["2025-01-01 00:00:01", "2025-01-01 00:00:02"]))) == 1.0


def test_a_last_interval_many_times_slower_is_a_stall_and_asks_whether_the_job_moves(
        tmp_path: Path) -> None:
    from traindoc.diagnose.throughput.change import trailing_stall

    # RVC#1882: 124 s and 123 s per 200 steps, then 7311 s
    ch = trailing_stall(np.array([0.62, 0.615, 36.555]), higher_is_better=False)
    assert ch is not None and ch.shape == "stall" and ch.index == 2 and ch.drop_pct > 98
    assert trailing_stall(np.array([100.0, 98.0, 5.0]), higher_is_better=True) is not None
    # three times slower is no stall; nor is a last value after scattered ones; nor one point
    assert trailing_stall(np.array([0.62, 0.615, 1.9]), higher_is_better=False) is None
    assert trailing_stall(np.array([0.3, 1.0, 36.0]), higher_is_better=False) is None
    assert trailing_stall(np.array([0.6, 36.0]), higher_is_better=False) is None
    line = "2024-04-10 {} | INFO | logs | Total loss at epoch 5, step at {}, loss=31.05"
    (tmp_path / "a.log").write_text("\n".join(line.format(t, s) for t, s in [
        ("04:59:03", 58400), ("05:01:07", 58600), ("05:03:10", 58800), ("07:05:01", 59000)]))
    r = tp.diagnose(traindoc.load(tmp_path / "a.log"))
    assert r.facts["shape"] == "stall" and r.facts["change_iteration"] == 59000
    assert r.facts["bisect_plan"] is None and r.confidence == "medium"
    assert r.actions[0].id == "check_stall" and "traindoc collect --from-logs" in r.actions[0].how


def test_short_series_cleanly_separated_is_a_change_overlapping_is_not() -> None:
    from traindoc.diagnose.throughput.change import find_change

    # mmf#27: 5 intervals at 268-308 s per 100 iterations, then 4 at 324-356 s
    x = np.array([307.7, 268.5, 282.1, 299.6, 285.3, 329.9, 356.2, 324.3, 335.9])
    ch = find_change(x, higher_is_better=False)
    assert ch is not None and ch.index == 5 and 12 < ch.drop_pct < 16
    # the same spread with one after-point back among the before-points: no claim
    y = x.copy()
    y[7] = 290.0
    assert find_change(y, higher_is_better=False) is None


def test_a_slide_still_going_at_the_end_is_no_spike() -> None:
    from traindoc.diagnose.throughput.change import despike, find_change

    # apache/mxnet#75 (SSD): ~95 samples/s, then 46.5 and 23.5 in the last two reports
    x = np.array([95.71, 94.49, 94.29, 90.31, 89.77, 97.99, 46.48, 23.47])
    cleaned, replaced = despike(x)
    assert not replaced.any()
    ch = find_change(cleaned, higher_is_better=True)
    assert ch is not None and ch.index == 6
    # one low last point after a steady run is still a spike
    _, replaced = despike(np.array([95.0, 94.0, 96.0, 95.0, 94.5, 95.5, 30.0]))
    assert replaced[-1]


def test_a_staircase_reports_the_level_it_reached() -> None:
    from traindoc.diagnose.throughput.change import find_change

    # SeanNaren/deepspeech.pytorch#127: batch time 0.40 s → 0.54 → 0.66 → 0.81 → 0.93 s
    x = np.array([0.470, 0.407, 0.393, 0.403, 0.538, 0.538, 0.663, 0.664, 0.663, 0.806, 0.818,
                  0.817, 0.815, 0.943, 0.929, 0.935, 0.931])
    ch = find_change(x, higher_is_better=False)
    assert ch is not None and ch.shape == "gradual"
    assert 0.92 <= ch.degraded <= 0.95 and 50 <= ch.drop_pct <= 62


def test_report_of_the_analysis_is_the_diagnosis() -> None:
    # the runbook calls analyse once and report on it: the same Report as diagnose
    import dataclasses

    inc = traindoc.load(SEED)
    a = tp.analyse(inc, hosts="jean-zay-iam[01-48]", spare_nodes=2, job_script="tr11.slurm")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.metric = "mfu"  # type: ignore[misc]
    r = tp.diagnose(inc, hosts="jean-zay-iam[01-48]", spare_nodes=2, job_script="tr11.slurm")
    assert tp.report(a).summary(inc) == r.summary(inc)
    # the notebook's tables come from the analysis and agree with the facts
    table = dict(zip(a.change_table()["what"], a.change_table()["value"], strict=True))
    assert table["change at iteration"] == str(r.facts["change_iteration"])
    assert a.bisect_plan == r.facts["bisect_plan"] and a.bisect_plan["spares"] == 2
    assert len(a.plan_frame()) == len(a.bisect_plan["steps"])
    assert a.plan_frame()["sbatch"].iloc[0].endswith("tr11.slurm")
    cost = dict(zip(a.cost_table()["what"], a.cost_table()["value"], strict=True))
    assert cost["days lost"] == str(r.facts["days_lost"])
    assert a.suspect_hosts == r.facts["suspect_hosts"] == []



@pytest.mark.parametrize("case, found", [
    # healthy runs: TFLOPs settling 5.6 -> 5.3 over a 50-iteration Megatron-DeepSpeed benchmark
    # (a gradual 5 %), detectron2's running-average "time:" rising 1.5 % as warm-up dilutes
    ("timeout/timeout-megatron-deepspeed-lock-clock-tp1pp2dp8-base50-retry-alloc", False),
    ("gpu_crash/gpu_crash-tx2dl-r50-fpn-log", False),
    ("loss_spike/loss_spike-dp-opensub-src0tgt0-cz-train-trans", False),  # an 8.6 % drift
    # real small steps stay changes (mxnet#223: 5.4 %; bigscience tr11: 5 %)
    ("throughput/throughput-mxnet-223", True),
    ("throughput/throughput-bigscience-tr11-176b-42780-d", True),
])
def test_a_healthy_runs_wander_is_no_change(case: str, found: bool) -> None:
    a = tp.analyse(traindoc.load(DATA / "corpus" / case / "logs"))
    assert (a.change is not None) == found, a.change


def _bench_log(tmp_path: Path, header: str, slow: str) -> Path:
    """The seed's log and a per-node benchmark table whose ``slow`` row is 2.5% slower."""
    seed_like_log(tmp_path)
    hosts = expand("jean-zay-iam[01-34,36-49]")
    rng = np.random.default_rng(0)
    rows = [f"{h},{296.5 + rng.normal(0, 0.4):.1f}" for h in hosts]
    rows[hosts.index("jean-zay-iam27")] = f"{slow},303.6"
    (tmp_path / "bench.csv").write_text(header + "\n" + "\n".join(rows) + "\n")
    return tmp_path


def test_a_benchmark_column_of_unknown_direction_is_said(tmp_path: Path) -> None:
    r = tp.diagnose(traindoc.load(_bench_log(tmp_path, "host,widgets", "jean-zay-iam27")))
    assert r.facts["suspect_hosts"] == []
    assert "benchmark_metric_unknown" in {f.id for f in r.findings}


def test_a_slow_node_that_is_no_host_name_is_excluded_by_hand(tmp_path: Path) -> None:
    r = tp.diagnose(traindoc.load(_bench_log(tmp_path, "host,seconds", "jean zay;iam27")))
    assert r.facts["suspect_hosts"] == ["jean zay;iam27"]
    first = r.actions[0]
    assert first.id == "exclude_suspect" and first.title.startswith("Exclude the slow node")
    assert "jean zay" not in first.how
    # no SLURM line in these logs: the launcher's host list, no sbatch (that, with $NODE, where
    # the logs show SLURM)
    assert "launcher's host list" in first.how and "sbatch" not in first.how
    (tmp_path / "slurm.out").write_text(  # slurmstepd's line from HEISENYAN/openpi
        "slurmstepd: error: *** JOB 334949 ON dgx-03 CANCELLED AT 2026-01-06T04:52:18 ***\n")
    first = tp.diagnose(traindoc.load(tmp_path)).actions[0]
    assert "jean zay" not in first.how and '--exclude="$NODE"' in first.how


def test_input_findings_are_kept_when_no_metric_is_found(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text("hello\nFATAL: widget frobnication failed badly\n"
                                      "something Error: zorp\n")
    r = tp.diagnose(traindoc.load(tmp_path))
    ids = [f.id for f in r.findings]
    assert ids[0] == "no_metric" and "unrecognized_error_lines" in ids


def test_an_eval_at_the_change_is_said(tmp_path: Path) -> None:
    lines = [megatron_line(44990 + i, 115311, 105.2, 149.1 - 0.1 * (i % 3)) for i in range(11)]
    lines.append("[default7]:valid loss at iteration 45000 | lm loss value: 2.327091E+00 | lm "
                 "loss PPL: 1.024808E+01 |")
    lines += [megatron_line(45001 + i, 115311, 112.0, 140.0 - 0.1 * (i % 3)) for i in range(11)]
    (tmp_path / "log.txt").write_text("\n".join(lines) + "\n")
    r = tp.diagnose(traindoc.load(tmp_path))
    assert r.facts["coincides"] == ["eval"]
    assert "change_at_event" in {f.id for f in r.findings}
    assert r.actions[-1].id == "check_coincidence"


def test_per_rank_timers_name_the_slow_rank(tmp_path: Path) -> None:
    out = []
    for i in range(24):
        slow = i >= 12
        out.append(megatron_line(100 + i, 115311, 112.0 if slow else 105.2,
                                 (140.0 if slow else 149.1) - 0.1 * (i % 3)))
        out += ["times across ranks (ms):", "  forward-compute:"]
        ms = [3600.0 + 5 * ((r + i) % 3) + (900.0 if r == 5 and slow else 0) for r in range(8)]
        out += [f"     rank {r:2d}: {v:.2f}" for r, v in enumerate(ms)]
    (tmp_path / "log.txt").write_text("\n".join(out) + "\n")
    r = tp.diagnose(traindoc.load(tmp_path))
    assert r.facts["change_iteration"] == 112 and r.facts["suspect_ranks"] == [5]
    assert "slow_ranks_timers" in {f.id for f in r.findings}
    assert r.actions[0].id == "locate_rank"


def test_two_mode_noise_is_no_change() -> None:
    # GNMT's Tok/s (mlcommons/training_results_v0.6 NVIDIA dgx1 gnmt result_0.txt, corpus
    # loss_spike-training-results-v06-nvidia-dgx1-gnmt-result-0): batches bucketed by sentence
    # length run fast (93-101k) or slow (79-87k) in turn; the median of a stretch that happens
    # to hold more slow ones is no lasting drop
    rng = np.random.default_rng(3)
    fast = rng.random(800) < np.r_[np.full(700, 0.55), np.full(100, 0.4)]
    x = np.where(fast, rng.uniform(93_000, 101_000, 800), rng.uniform(79_000, 87_000, 800))
    assert detect(x) is None
    # a real step of the same size on the same noise is still found
    y = np.where(fast, rng.uniform(93_000, 101_000, 800), rng.uniform(79_000, 87_000, 800))
    y[500:] *= 0.75
    ch = detect(y)
    assert ch is not None and abs(ch.index - 500) <= 5


def test_median_se_reads_the_order_statistics() -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(0, 1, 4000)
    assert tp_change.median_se(x) == pytest.approx(1.2533 / math.sqrt(4000), rel=0.2)
    assert tp_change.median_se(x[:10]) == 0.0  # too few to read
