"""Throughput families from blind intake (issue 26, round three), each with real lines of two
sources: the rate a healthy run holds (the baseline when nothing changed); the
interval's rate beside a running mean; BasicSR step lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import traindoc
from traindoc.diagnose import throughput as tp
from traindoc.diagnose import triage
from traindoc.diagnose.throughput.change import find_change, slow_episode, slow_starts
from traindoc.parse.metric_lines import parse_metric_line

# MXNet Speedometer lines of two healthy runs: (source, lines, the rate the run holds)
HEALTHY_RUNS = [
    ("kubeflow/kubeflow#68", [
        "INFO:root:Epoch[0] Batch [20]   Speed: 2015.42 samples/sec      accuracy=0.131696",
        "INFO:root:Epoch[0] Batch [40]   Speed: 2025.30 samples/sec      accuracy=0.191016",
        "INFO:root:Epoch[0] Batch [60]   Speed: 2018.21 samples/sec      accuracy=0.230273",
        "INFO:root:Epoch[0] Batch [80]   Speed: 2025.97 samples/sec      accuracy=0.258496",
        "INFO:root:Epoch[1] Batch [20]   Speed: 2016.25 samples/sec      accuracy=0.302920",
        "INFO:root:Epoch[1] Batch [40]   Speed: 2015.39 samples/sec      accuracy=0.334473",
        "INFO:root:Epoch[1] Batch [60]   Speed: 2008.51 samples/sec      accuracy=0.347852",
    ], (2008, 2026)),
    ("apache/mxnet#11480", [
        "INFO:root:Epoch[1] Batch [20]\tSpeed: 1375.76 samples/sec\taccuracy=0.519345",
        "INFO:root:Epoch[1] Batch [40]\tSpeed: 1374.71 samples/sec\taccuracy=0.515625",
        "INFO:root:Epoch[1] Batch [60]\tSpeed: 1371.57 samples/sec\taccuracy=0.521094",
        "INFO:root:Epoch[1] Batch [80]\tSpeed: 1376.55 samples/sec\taccuracy=0.533203",
        "INFO:root:Epoch[1] Batch [100]\tSpeed: 1375.78 samples/sec\taccuracy=0.548828",
        "INFO:root:Epoch[1] Batch [120]\tSpeed: 1370.05 samples/sec\taccuracy=0.544141",
        "INFO:root:Epoch[1] Batch [140]\tSpeed: 1375.61 samples/sec\taccuracy=0.566797",
        "INFO:root:Epoch[1] Batch [160]\tSpeed: 1372.94 samples/sec\taccuracy=0.571094",
        "INFO:root:Epoch[1] Batch [180]\tSpeed: 1328.99 samples/sec\taccuracy=0.566016",
    ], (1371, 1376)),
]


@pytest.mark.parametrize("source, lines, rate", HEALTHY_RUNS, ids=[r[0] for r in HEALTHY_RUNS])
def test_a_healthy_run_states_the_rate_it_holds(tmp_path: Path, source: str, lines: list[str],
                                                rate: tuple[float, float]) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    a = tp.analyse(traindoc.load(log))
    rep = tp.report(a)
    assert a.change is None, source
    assert rate[0] <= rep.facts["baseline"] <= rate[1], source
    assert rep.facts["drop_pct"] is None and rep.facts["change_iteration"] is None
    assert f"runs at {a.baseline:.4g} samples/s" in rep.verdict


# TF's ExamplesPerSecondHook prints the mean since the start, then the interval's rate in
# parentheses (its source: "Average examples/sec followed by current examples/sec",
# tensorflow/models#2057); AverageMeter-style lines print the value first, then the mean.
# (line, iteration, the interval's rate, source)
RUNNING_MEAN_FIRST = [
    ("INFO:tensorflow:Average examples/sec: 2841.23 (3118.56), step = 60", 60, 3118.56,
     "tensorflow/models#4090"),
    ("INFO:tensorflow:Average examples/sec: 354.236 (38.6479), step = 110", 110, 38.6479,
     "a cifar10_estimator log in a public repository (find_string, file id 9074086655)"),
]


@pytest.mark.parametrize("line, iteration, rate, source", RUNNING_MEAN_FIRST,
                         ids=[r[3][:30] for r in RUNNING_MEAN_FIRST])
def test_the_interval_rate_in_parentheses_after_a_running_mean(line: str, iteration: int,
                                                               rate: float, source: str) -> None:
    row = parse_metric_line(line.removeprefix("INFO:tensorflow:"))
    assert row is not None, source
    assert row["iteration"] == iteration and row["samples_per_s"] == pytest.approx(rate)


# BasicSR and its forks: the step with thousands separators, every loss term "l_<what>"
# (line, iteration, loss, source)
BASICSR_LINES = [
    ("24-09-18 14:57:21.217 - INFO: <epoch: 17, iter:   4,100, lr:2.999e-04> l_all: 4.5715e+00 ",
     4100, 4.5715, "hnmizuho/AT-BSN#1"),
    ("19-08-09 08:25:25.996 - INFO: <epoch: 86, iter: 107,200, lr:2.500e-05> l_g_pix: 1.4819e-03 "
     "l_g_fea: 1.0389e+00 l_g_gan: 7.2056e-02 l_d_real: 1.4378e-05 l_d_fake: 4.0903e-06 "
     "D_real: -2.5625e+01 D_fake: -4.0036e+01 ", 107200, 1.4819e-03, "XPixelGroup/BasicSR#204"),
    ("2022-12-29 10:44:45,100 INFO: [Retin..][epoch: 16, iter:   1,000, lr:(2.001e-04,)] "
     "[eta: 6:22:59, time (data): 0.142 (0.001)] l_pix: 1.0709e-01 ", 1000, 0.10709,
     "caiyuanhao1998/Retinexformer#6"),
]


@pytest.mark.parametrize("line, iteration, loss, source", BASICSR_LINES,
                         ids=[r[3] for r in BASICSR_LINES])
def test_basicsr_step_lines(tmp_path: Path, line: str, iteration: int, loss: float,
                            source: str) -> None:
    log = tmp_path / "train.log"
    log.write_text(line + "\n")
    it = traindoc.load(log).iterations
    assert len(it) == 1, source
    assert int(it["iteration"].iloc[0]) == iteration
    assert float(it["loss"].iloc[0]) == pytest.approx(loss)


def test_a_thousands_separator_is_no_field_separator() -> None:
    # "3,800" is one step; "5, 123" is a step and another field
    assert parse_metric_line("step 5, 123 loss 2.0")["iteration"] == 5
    assert parse_metric_line("iter: 12,3456 loss 2.0")["iteration"] == 12


# A short ramp into a slower level the run then keeps is a step (the 3 % floor), not a drift
# (the 10 % one). MMEngine's C3D run (CJL-sysu/mmaction2-train-log, 20241010_170931.log): epoch
# 15 slows over 8 of its 30 lines, then holds ~0.350 s/iter against 0.332 for 700 of 840
# lines. pytorch-CycleGAN-and-pix2pix#281: "the time taken per epoch is around 390s. Epoch 29
# takes 890s and then all subsequent epochs take 1200s".
def test_a_short_ramp_into_a_held_level_is_a_step() -> None:
    from traindoc.diagnose.throughput.change import find_change, material

    case = "throughput/throughput-mmaction2-train-log-20241010-170931"
    a = tp.analyse(traindoc.load(Path(__file__).parent.parent / "data" / "corpus" / case / "logs"))
    assert a.change is not None and a.change.shape == "step" and 5 <= a.drop_pct <= 6
    assert 0.331 <= a.baseline <= 0.333 and 0.349 <= a.degraded <= 0.352
    epochs = np.r_[np.full(28, 390.0), 890.0, np.full(12, 1200.0)]
    ch = find_change(epochs, higher_is_better=False)
    assert ch is not None and ch.shape == "step" and material(ch)
    assert ch.baseline == 390.0 and ch.degraded == 1200.0


def test_a_dip_at_the_end_of_a_run_stays_a_drift() -> None:

    # the same ramp held for a tenth of the run is a drift: under 10 %, no incident
    rng = np.random.default_rng(1)
    x = np.r_[100 + rng.normal(0, 0.3, 300), np.linspace(100, 92, 12), 92 + rng.normal(0, 0.3, 40)]
    ch = find_change(x, higher_is_better=True)
    assert ch is not None and ch.shape == "gradual"


# The training loop's bar is the one that ran longest, not the one that counted most: a
# dataset's tokenizing bar runs through more items in seconds. Real bars of two sources:
# (source, preprocessing bars, training bars, the s/it the run holds)
BARS_OF_TWO_KINDS = [
    ("CJL llama-sft train_completion_only_log.txt (batch f)", [
        "Tokenizing train dataset:   4%|▍         | 373/8939 [00:00<00:02, 3700.52 examples/s]",
        "Tokenizing train dataset:  49%|████▉     | 4381/8939 [00:00<00:00, 43643.87 examples/s]",
        "Tokenizing train dataset: 100%|██████████| 8939/8939 [00:00<00:00, 42690.91 examples/s]",
    ], [f" 30%|███       | {n}/1677 [{n // 35:02d}:{n * 17 // 10 % 60:02d}<33:04,  {r}s/it]"
        for n, r in zip(range(500, 520), [1.70, 1.69, 1.68, 1.70, 1.71] * 4, strict=True)],
     (1.68, 1.71)),
    ("2200xiaohu/LMSYS:train.log", [
        "  2%| | 1244/71514 [00:00<00:05, 12435.03it/s]",
        "  6%| | 3937/71514 [00:00<00:05, 12796.10it/s]",
        "  9%| | 6438/71514 [00:00<00:05, 11370.14it/s]",
    ], [f"  1%| | {n}/8264 [{n // 9:02d}:17<15:46:31,  {r}s/it]"
        for n, r in zip(range(10, 130, 10), [7.05, 6.81, 6.74, 6.97, 6.52, 6.91] * 2, strict=True)],
     (6.5, 7.1)),
]


@pytest.mark.parametrize("source, prep, train, level", BARS_OF_TWO_KINDS,
                         ids=[b[0] for b in BARS_OF_TWO_KINDS])
def test_the_training_bar_is_the_one_that_ran_longest(tmp_path: Path, source: str,
                                                      prep: list[str], train: list[str],
                                                      level: tuple[float, float]) -> None:
    (tmp_path / "train.log").write_text("\n".join(prep + train) + "\n")
    a = tp.analyse(traindoc.load(tmp_path))
    assert a.metric == "s_per_iteration" and a.change is None, source
    assert level[0] <= a.baseline <= level[1], source


# MLPerf RNN-T (NVIDIA's reference, DLLogger): the rate is logged once per epoch,
# "epoch N | avg train utts/s X | took Y s", beside sparse iteration lines without a usable one
# (mlcommons/training_results_v2.0 Lenovo/results/SD650-N_V2_4xA100-SXM-80GB/rnnt/result_4.txt)
RNNT_EPOCHS = [
    'DLL 2022-05-19 06:58:44.226906 - epoch   16 | avg train utts/s  4136 | took 67.21 s',
    'DLL 2022-05-19 06:59:23.501055 - epoch   17 | iter  104/181 | loss   33.83 | utts/s    40 | took 38.57 s | lrate 7.20e-03',
    'DLL 2022-05-19 06:59:52.088135 - epoch   17 | avg train utts/s  4136 | took 67.21 s',
    'DLL 2022-05-19 07:01:00.070997 - epoch   18 | avg train utts/s  4129 | took 67.33 s',
    'DLL 2022-05-19 07:02:08.003495 - epoch   19 | avg train utts/s  4132 | took 67.29 s',
    'DLL 2022-05-19 07:03:15.978104 - epoch   20 | avg train utts/s  4129 | took 67.33 s',
    'DLL 2022-05-19 07:04:23.865606 - epoch   21 | avg train utts/s  4135 | took 67.24 s',
    'DLL 2022-05-19 07:05:31.795662 - epoch   22 | avg train utts/s  4133 | took 67.27 s',
    'DLL 2022-05-19 07:05:39.142518 - epoch   23 | iter   18/181 | loss   28.16 | utts/s   231 | took  6.65 s | lrate 7.20e-03',
    'DLL 2022-05-19 07:06:39.773346 - epoch   23 | avg train utts/s  4129 | took 67.33 s',
    'DLL 2022-05-19 07:08:00.870998 - epoch   24 | avg train utts/s  3456 | took 80.45 s',
    'DLL 2022-05-19 07:09:08.818751 - epoch   25 | avg train utts/s  4131 | took 67.30 s',
    'DLL 2022-05-19 07:10:22.158782 - epoch   26 | avg train utts/s  3825 | took 72.68 s',
    'DLL 2022-05-19 07:11:56.080643 - epoch   27 | avg train utts/s  2983 | took 93.20 s',
    'DLL 2022-05-19 07:12:55.164466 - epoch   28 | iter  113/181 | loss   32.25 | utts/s    26 | took 58.14 s | lrate 7.20e-03',
    'DLL 2022-05-19 07:13:30.312748 - epoch   28 | avg train utts/s  2975 | took 93.46 s',
    'DLL 2022-05-19 07:15:04.029807 - epoch   29 | avg train utts/s  2990 | took 92.97 s',
    'DLL 2022-05-19 07:16:38.308102 - epoch   30 | avg train utts/s  2972 | took 93.55 s',
    'DLL 2022-05-19 07:18:11.145969 - epoch   31 | avg train utts/s  3018 | took 92.12 s',
    'DLL 2022-05-19 07:19:45.033567 - epoch   32 | avg train utts/s  2986 | took 93.10 s',
    'DLL 2022-05-19 07:21:18.791665 - epoch   33 | avg train utts/s  2988 | took 93.03 s',
    'DLL 2022-05-19 07:21:33.096064 - epoch   34 | iter   27/181 | loss   28.66 | utts/s   115 | took 13.40 s | lrate 5.61e-03',
    'DLL 2022-05-19 07:22:52.710332 - epoch   34 | avg train utts/s  2984 | took 93.16 s',
    'DLL 2022-05-19 07:24:27.137758 - epoch   35 | avg train utts/s  2968 | took 93.68 s',
    'DLL 2022-05-19 07:26:01.816175 - epoch   36 | avg train utts/s  2959 | took 93.95 s',
]


@pytest.mark.parametrize(("line", "epoch", "rate"), [
    (RNNT_EPOCHS[0], 16, 4136.0),
    # mlcommons/training_results_v3.0 Supermicro/results/AS-4125GS-TNRT_8_H100-PCIe-80GB/rnnt/
    # result_3.txt: another submitter, the same summary
    ("DLL 2023-05-19 02:23:21.184974 - epoch    1 | avg train utts/s  9623 | took 28.89 s", 1,
     9623.0),
])
def test_an_epoch_summary_with_a_rate_is_an_epoch_row(line: str, epoch: int, rate: float) -> None:
    row = parse_metric_line(line)
    assert row is not None and row["event"] == "epoch"
    assert (row["iteration"], row["samples_per_s"]) == (epoch, rate)


def test_the_epochs_rates_are_the_series_where_steps_carry_none(tmp_path: Path) -> None:
    log = tmp_path / "result_4.txt"
    log.write_text("\n".join(RNNT_EPOCHS) + "\n")
    rep = tp.report(tp.analyse(traindoc.load(log)))
    assert rep.facts["metric"] == "samples_per_s"
    assert 4120 <= rep.facts["baseline"] <= 4180 and 2940 <= rep.facts["degraded"] <= 3040
    assert rep.facts["change_iteration"] in (26, 27)


def _epoch_lines(rates: dict[int, int]) -> list[str]:
    """DLLogger epoch summaries as MLPerf RNN-T prints them."""
    return [f"DLL 2022-05-19 09:00:{e % 60:02d}.000000 - epoch {e:4d} | avg train utts/s  {r} | "
            f"took 67.30 s" for e, r in rates.items()]


# slow episodes in runs that recover: (source, rate of each logged epoch, first slow epoch,
# the episode's level)
EPISODES = [
    # mlcommons/training_results_v3.0 Supermicro/.../rnnt/result_3.txt: half speed at epochs
    # 28-31 and 38-40 of 51
    ("training_results_v3.0 Supermicro rnnt result_3", dict(enumerate(
        [9623, 9843, 9692, 9611, 9607, 9609, 9609, 9611, 9615, 9610, 9613, 9613, 9609, 9614, 9613,
         9614, 9611, 9614, 9611, 9612, 9611, 9613, 9610, 9610, 9616, 9616, 9623, 4755, 4763, 3164,
         4767, 9622, 9615, 9617, 9616, 9622, 9609, 4747, 4773, 4767, 9641, 9612, 9617, 9618, 9614,
         9610, 9611, 9614, 9616, 9614, 9610], start=1)), 28, (4740, 4780)),
    # mlcommons/training_results_v2.0 Lenovo/.../rnnt/result_6.txt (epochs 6-14, 22-30, 33-41 as
    # read): slower epochs 7-8 (a fifth), then epochs 23-28 at 2,177-2,858
    ("training_results_v2.0 Lenovo rnnt result_6", {
        6: 4103, 7: 3213, 8: 3334, 9: 4130, 10: 4129, 11: 4133, 12: 4007, 13: 4127, 14: 4102,
        22: 4027, 23: 2177, 24: 2501, 25: 2858, 26: 2308, 27: 2624, 28: 2308, 29: 3811, 30: 4030,
        33: 4131, 34: 4135, 35: 4129, 36: 4132, 37: 4137, 38: 4131, 39: 4132, 40: 4129, 41: 4132},
     23, (2300, 2510)),
]


@pytest.mark.parametrize("source, rates, first, level", EPISODES, ids=[e[0] for e in EPISODES])
def test_a_slow_episode_in_a_run_that_recovers(tmp_path: Path, source: str,
                                               rates: dict[int, int], first: int,
                                               level: tuple[float, float]) -> None:
    log = tmp_path / "result.txt"
    log.write_text("\n".join(_epoch_lines(rates)) + "\n")
    a = tp.analyse(traindoc.load(log))
    rep = tp.report(a)
    assert rep.facts["change_iteration"] == first, source
    assert level[0] <= rep.facts["degraded"] <= level[1], source
    assert a.change is not None and a.change.recovered


def test_periodic_pauses_are_no_episode() -> None:
    # HEISENYAN/openpi train_aloha_folding.out: a few slow lines after each of twelve
    # checkpoint saves, at 0.71 s/it between them
    x = np.full(240, 0.71)
    for start in range(15, 240, 20):
        x[start:start + 3] = (13.7, 3.8, 1.0)
    assert slow_episode(x, higher_is_better=False) is None


def test_a_smoothed_rate_decaying_after_an_eval_is_no_episode() -> None:
    # Ishihara-Masabumi/Llama_SFT train_completion_only_log.txt: tqdm's smoothed s/it after each
    # end-of-epoch evaluation, decaying back to 1.7 s/it
    x = np.full(1300, 1.70)
    x[616:624] = (11.06, 8.25, 6.28, 4.90, 3.93, 3.30, 2.82, 2.48)
    x[1232:1240] = (11.24, 8.37, 6.37, 4.96, 3.98, 3.29, 2.81, 2.52)
    assert slow_episode(x, higher_is_better=False) is None


# A run's slow first window (start-up: compilation, a cold cache, the reader's first fill) is
# set aside, not replaced by the level's median: a replaced point adds a noiseless point on
# the baseline's side and made PaddleSeg's 6 % wander at iters 120-140 a "drop".
# (source, lines, first logged iteration, the rate or time the run holds)
SLOW_STARTS = [
    ("PaddlePaddle/PaddleSeg#928", [
        "2021-03-30 06:55:57 [INFO]\t[TRAIN] epoch: 1, iter: 20/500, loss: 2.0859, lr: 0.009657, "
        "batch_cost: 0.5344, reader_cost: 0.07273, ips: 3.7425 samples/sec | ETA 00:04:16",
        "2021-03-30 06:56:04 [INFO]\t[TRAIN] epoch: 1, iter: 40/500, loss: 1.8769, lr: 0.009295, "
        "batch_cost: 0.3483, reader_cost: 0.00205, ips: 5.7421 samples/sec | ETA 00:02:40",
        "2021-03-30 06:56:11 [INFO]\t[TRAIN] epoch: 1, iter: 60/500, loss: 1.7455, lr: 0.008931, "
        "batch_cost: 0.3532, reader_cost: 0.00204, ips: 5.6622 samples/sec | ETA 00:02:35",
        "2021-03-30 06:56:18 [INFO]\t[TRAIN] epoch: 1, iter: 80/500, loss: 1.7786, lr: 0.008566, "
        "batch_cost: 0.3501, reader_cost: 0.00193, ips: 5.7133 samples/sec | ETA 00:02:27",
        "2021-03-30 06:56:25 [INFO]\t[TRAIN] epoch: 1, iter: 100/500, loss: 1.7679, lr: 0.008199, "
        "batch_cost: 0.3523, reader_cost: 0.00153, ips: 5.6774 samples/sec | ETA 00:02:20",
        "2021-03-30 06:56:33 [INFO]\t[TRAIN] epoch: 1, iter: 120/500, loss: 1.7884, lr: 0.007830, "
        "batch_cost: 0.3754, reader_cost: 0.00179, ips: 5.3281 samples/sec | ETA 00:02:22",
        "2021-03-30 06:56:40 [INFO]\t[TRAIN] epoch: 1, iter: 140/500, loss: 1.4884, lr: 0.007459, "
        "batch_cost: 0.3723, reader_cost: 0.00111, ips: 5.3722 samples/sec | ETA 00:02:14",
    ], 20, (5.3, 5.75)),
    ("tensorflow/models#2980", [
        "INFO:tensorflow:global step 1: loss = 79.3501 (57.126 sec/step)",
        "INFO:tensorflow:global step 2: loss = 72.8609 (17.053 sec/step)",
        "INFO:tensorflow:global step 3: loss = 67.3308 (16.534 sec/step)",
        "INFO:tensorflow:global step 4: loss = 64.2655 (16.926 sec/step)",
        "INFO:tensorflow:global step 5: loss = 62.5264 (20.205 sec/step)",
        "INFO:tensorflow:global step 6: loss = 60.8808 (17.060 sec/step)",
        "INFO:tensorflow:global step 7: loss = 59.8181 (16.456 sec/step)",
        "INFO:tensorflow:global step 8: loss = 57.9715 (16.765 sec/step)",
    ], 1, (16.5, 17.1)),
]


@pytest.mark.parametrize("source, lines, first, level", SLOW_STARTS, ids=[s[0] for s in SLOW_STARTS])
def test_a_slow_first_window_is_set_aside(tmp_path: Path, source: str, lines: list[str],
                                          first: int, level: tuple[float, float]) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    a = tp.analyse(traindoc.load(log))
    rep = tp.report(a)
    assert a.change is None and rep.facts["drop_pct"] is None, source
    assert first in set(a.set_aside()["iteration"]), source
    assert first not in set(a.series["iteration"].iloc[a.used]), source
    assert level[0] <= rep.facts["baseline"] <= level[1], source


def test_a_first_window_at_the_level_stays() -> None:
    x = np.array([5.70, 5.74, 5.66, 5.71, 5.68])
    starts = np.array([True, False, False, False, False])
    assert not slow_starts(x, x, starts, higher_is_better=True).any()
    # a first window faster than the level that replaced it is no start-up's
    assert not slow_starts(np.array([8.0, 5.7]), np.array([5.7, 5.7]), starts[:2], True).any()


# The actions print what fits where the job ran, as its logs show (``bisect.launch_scope``):
# SLURM commands only where a SLURM line is in the logs, one machine's checks otherwise.
CORPUS = Path(__file__).parent.parent / "data" / "corpus" / "throughput"
SLURM_WORDS = ("srun", "sacct", "SLURM_", "scontrol")
# (case, its scope, whether per-rank timing applies)
ONE_MACHINE_CASES = [
    ("throughput-ultralytics-7618", "process", False),  # Ultralytics on one GPU
    ("throughput-training-results-v3-0-supermicro-rnnt-result-3", "machine", True),
]


@pytest.mark.parametrize("case, scope, per_rank", ONE_MACHINE_CASES,
                         ids=[c[0] for c in ONE_MACHINE_CASES])
def test_a_run_without_slurm_gets_one_machines_checks(case: str, scope: str,
                                                       per_rank: bool) -> None:
    a = tp.analyse(traindoc.load(CORPUS / case / "logs"))
    rep = tp.report(a)
    assert a.change is not None and a.scope == scope, case
    acts = {x.id: x for x in rep.actions}
    assert not any(w in x.how for x in rep.actions for w in SLURM_WORDS), case
    assert acts["sweep_all_nodes"].how.startswith("nvidia-smi --query-gpu="), case
    assert "srun" not in acts["benchmark_all_nodes"].how
    assert "get_nodelist" not in acts
    assert ("per_rank_timing" in acts) is per_rank, case


def test_a_slurm_line_in_the_logs_brings_the_slurm_commands(tmp_path: Path) -> None:
    # the Ultralytics run's log with slurmstepd's line from HEISENYAN/openpi's
    # train_aloha_folding.out (corpus throughput-openpi-train-aloha-folding) appended
    src = CORPUS / "throughput-ultralytics-7618" / "logs"
    for f in src.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "slurm.out").write_text(
        "slurmstepd: error: *** JOB 334949 ON dgx-03 CANCELLED AT 2026-01-06T04:52:18 ***\n")
    openpi = tp.analyse(traindoc.load(CORPUS / "throughput-openpi-train-aloha-folding" / "logs"))
    assert openpi.scope == "slurm"
    a = tp.analyse(traindoc.load(tmp_path))
    acts = {x.id: x for x in tp.report(a).actions}
    assert a.scope == "slurm"
    assert acts["sweep_all_nodes"].how.startswith("srun --overlap --jobid $SLURM_JOB_ID")
    assert "get_nodelist" in acts


# A log whose only rate is the trainer's end-of-run summary (HF Trainer's train_samples_per_second,
# one per process that printed it) states the run's average and says why no drop can be judged.
# (source, lines, rate, processes)
SUMMARY_ONLY = [
    ("bigscience-workshop/bigscience hf_ds_gpt2_perf_n16 job.out (corpus "
     "throughput-bigscience-hf-ds-gpt2-perf-n16-bs4-mbs8)",
     ["{'train_runtime': 273.0148, 'train_samples_per_second': 3.663, 'train_steps_per_second': "
      "0.007, 'epoch': 1.0}",
      "{'train_runtime': 272.9369, 'train_samples_per_second': 3.664, 'train_steps_per_second': "
      "0.007, 'epoch': 1.0}",
      "{'train_runtime': 273.0143, 'train_samples_per_second': 3.663, 'train_steps_per_second': "
      "0.007, 'epoch': 1.0}"], 3.663, 3),
    ("tatsu-lab/stanford_alpaca#65",
     ["{'train_runtime': 119.8187, 'train_samples_per_second': 2.504, 'train_steps_per_second': "
      "0.075, 'train_loss': 1.2388523353470697, 'epoch': 2.57}"], 2.504, 1),
]


@pytest.mark.parametrize("source, lines, rate, n", SUMMARY_ONLY, ids=[s[0] for s in SUMMARY_ONLY])
def test_a_run_summary_alone_gives_the_average_rate(tmp_path: Path, source: str,
                                                    lines: list[str], rate: float, n: int) -> None:
    log = tmp_path / "job.out"
    log.write_text("\n".join(lines) + "\n")
    a = tp.analyse(traindoc.load(log))
    rep = tp.report(a)
    assert a.summary is not None and a.summary[2] == n, source
    assert rep.facts["metric"] == "samples_per_s" and rep.facts["baseline"] == pytest.approx(rate)
    assert rep.facts["change_iteration"] is None and rep.facts["drop_pct"] is None
    assert "end-of-run summary" in rep.verdict and f"{rate:.4g} samples/s" in rep.verdict


# One logged interval that lost an hour or more, then the old pace again: a pause that
# recovered (``change.mid_pause``), ten times slower than every other interval, or twice where
# the others hold a quiet level (within 10 %). (source, lines, the pause's iteration)
PAUSES = [
    ("MouseLand/cellpose#450", [  # the training clock since the start, one line per 10 epochs
        "2022-02-18 00:38:30,706 [INFO] Epoch 5, Time 4981.4s, Loss 0.5731, LR 0.1111",
        "2022-02-18 01:46:44,126 [INFO] Epoch 10, Time 9074.8s, Loss 0.5035, LR 0.2000",
        "2022-02-18 07:02:39,069 [INFO] Epoch 20, Time 28029.8s, Loss 0.4754, LR 0.2000",
        "2022-02-18 09:17:43,068 [INFO] Epoch 30, Time 36133.8s, Loss 0.4614, LR 0.2000",
        "2022-02-18 11:33:53,086 [INFO] Epoch 40, Time 44303.8s, Loss 0.4555, LR 0.2000",
        "2022-02-18 13:50:18,865 [INFO] Epoch 50, Time 52489.6s, Loss 0.4517, LR 0.2000",
        "2022-02-18 16:07:27,867 [INFO] Epoch 60, Time 60718.6s, Loss 0.4492, LR 0.2000",
        "2022-02-18 18:24:40,832 [INFO] Epoch 70, Time 68951.5s, Loss 0.4469, LR 0.2000",
    ], 20),
    ("ostris/ai-toolkit#595", [  # tqdm's s/it: 300 steps at ~28 s between steps at ~2 s
        "lokr-test-2:  10%|9         | 299/3000 [10:44<1:37:05,  2.16s/it, lr: 2.0e-04 loss: "
        "5.226e-01]",
        "lokr-test-2:  20%|#9        | 599/3000 [19:45<1:03:24,  1.58s/it, lr: 2.0e-04 loss: "
        "6.736e-01]",
        "lokr-test-2:  30%|##9       | 899/3000 [29:51<1:06:28,  1.90s/it, lr: 2.0e-04 loss: "
        "6.463e-01]",
        "lokr-test-2:  40%|###9      | 1199/3000 [2:49:04<14:04:18, 28.13s/it, lr: 2.0e-04 loss: "
        "7.353e-01]",
        "lokr-test-2:  50%|####9     | 1499/3000 [2:56:55<34:04,  1.36s/it, lr: 2.0e-04 loss: "
        "2.635e-01]",
    ], 1199),
]


@pytest.mark.parametrize("source, lines, at", PAUSES, ids=[p[0] for p in PAUSES])
def test_an_interval_that_lost_hours_is_a_pause(tmp_path: Path, source: str, lines: list[str],
                                                at: int) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    a = tp.analyse(traindoc.load(log))
    rep = tp.report(a)
    assert a.change is not None and a.change.shape == "pause" and a.change.recovered, source
    assert rep.facts["change_iteration"] == at, source


def test_twice_as_slow_is_no_pause_on_a_noisy_level_or_when_it_lost_minutes() -> None:
    from traindoc.diagnose.throughput.change import mid_pause
    # cellpose#450's seconds per epoch, the slow window 2.3x the others (quiet: 805-823 s)
    secs = np.array([818.68, 1895.5, 810.4, 817.0, 818.58, 822.9, 823.29, 805.76])
    its = np.array([10, 20, 30, 40, 50, 60, 70, 80])
    assert mid_pause(secs, its) is not None
    assert mid_pause(secs, its // 10) is None  # one epoch per point: 1,077 s lost, no hour
    noisy = secs.copy()
    noisy[3] = 1000.0  # the others spread by 24 %: twice is within a noisy run's reach
    assert mid_pause(noisy, its) is None


# cellpose 3-4's epoch line: the time is the clock since the start (``parse.iterations``'s
# ``cellpose_kv_epoch``), so a healthy run's seconds per epoch hold one level; the generic
# reader read it as each line's own time, which grew by 50 s a line (a slowdown that is none).
CELLPOSE_1377 = [  # MouseLand/cellpose#1377: every 10 epochs, a save between 400 and 410
    "2025-12-01 12:10:57,884 [INFO] 350, train_loss=0.2587, test_loss=0.0000, LR=0.000010, "
    "time 1736.08s",
    "2025-12-01 12:11:48,260 [INFO] 360, train_loss=0.2193, test_loss=0.0000, LR=0.000010, "
    "time 1786.45s",
    "2025-12-01 12:12:39,913 [INFO] 370, train_loss=0.2278, test_loss=0.0000, LR=0.000010, "
    "time 1838.11s",
    "2025-12-01 12:13:31,828 [INFO] 380, train_loss=0.2541, test_loss=0.0000, LR=0.000010, "
    "time 1890.02s",
    "2025-12-01 12:14:22,588 [INFO] 390, train_loss=0.2363, test_loss=0.0000, LR=0.000010, "
    "time 1940.78s",
    "2025-12-01 12:15:12,484 [INFO] 400, train_loss=0.2465, test_loss=0.0000, LR=0.000010, "
    "time 1990.68s",
    "2025-12-01 12:15:12,486 [INFO] saving network parameters to /Users/lsh27/Downloads/Cellpose "
    "RGB Training Images/models/RNascope_cells_12-01-25",
    "2025-12-01 12:16:03,036 [INFO] 410, train_loss=0.2427, test_loss=0.0000, LR=0.000010, "
    "time 2041.23s",
    "2025-12-01 12:16:52,860 [INFO] 420, train_loss=0.2323, test_loss=0.0000, LR=0.000010, "
    "time 2091.05s",
    "2025-12-01 12:17:42,961 [INFO] 430, train_loss=0.2169, test_loss=0.0000, LR=0.000010, "
    "time 2141.15s",
    "2025-12-01 12:18:33,350 [INFO] 440, train_loss=0.2465, test_loss=0.0000, LR=0.000010, "
    "time 2191.54s",
]


def test_cellpose_clock_since_start_is_a_healthy_level(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("\n".join(CELLPOSE_1377) + "\n")
    a = tp.analyse(traindoc.load(log))
    rep = tp.report(a)
    assert rep.facts["metric"] == "s_per_iteration" and a.change is None
    assert 4.9 <= rep.facts["baseline"] <= 5.2  # ~50 s per 10 epochs


# A level that wanders is no lasting change: the best two-level split of a healthy Megatron run
# whose TFLOPs slide 7.1 -> 6.35, come back to 7.3 for a hundred iterations, then slide to 6.4
# again called it a 4.9 % drop at iteration 57 (and triage named throughput on a healthy run).
# (case, its logs) — stark-sim/megatron-deepspeed-lock-clock's qwen7b_baseline_500.log
WANDERING = Path(__file__).parent.parent / "data" / "corpus" / "loss_spike" / (
    "loss_spike-megatron-deepspeed-lock-clock-qwen7b-baseline-500")


def test_a_wandering_level_is_no_lasting_change() -> None:
    a = tp.analyse(traindoc.load(WANDERING / "logs"))
    assert a.change is None and tp.report(a).facts["drop_pct"] is None


def test_a_return_to_the_baseline_midway_is_told_from_a_recovery() -> None:
    rng = np.random.default_rng(0)
    base, low = 7.0, 6.4

    def noisy(level: float, n: int) -> list[float]:
        return list(level + rng.normal(0, 0.03, n))

    # drop, back at the baseline for 40 values, drop again: the lasting change is the last
    # drop, never one whose degraded side holds the baseline for a long stretch
    ch = find_change(np.array(noisy(base, 60) + noisy(low, 40) + noisy(base, 40)
                              + noisy(low, 60)), True)
    assert ch is not None and ch.index == 140
    # drop, then back at the baseline to the end: a change that recovered (kept)
    ch = find_change(np.array(noisy(base, 60) + noisy(low, 60) + noisy(base, 20)), True)
    assert ch is not None and ch.index == 60
    # a lasting drop with a short return (5 values) inside it stays a change (MLPerf RNN-T)
    ch = find_change(np.array(noisy(base, 60) + noisy(low, 30) + noisy(base, 5)
                              + noisy(low, 30)), True)
    assert ch is not None and ch.index == 60


# mlcommons/hpc_results_v1.0 JUWELS cosmoflow result_6.txt (corpus
# throughput-mlperf-hpc-v1-0-juwels-cosmoflow-n1024-result-6): one MLLOG throughput a epoch,
# ':::MLLOG {"namespace": "", "time_ms": 1633642119849, "event_type": "POINT_IN_TIME", "key":
# "throughput", "value": 27333.175802169266, "metadata": {…, "epoch_num": 10}}'; epochs 10-11
# at 27.3k and 26.0k of a run at 48-50k
COSMOFLOW = [34311, 48677, 48960, 48810, 49704, 49510, 49103, 49608, 49015, 27333, 26023,
             50098, 49966, 48971, 49371, 49187, 48205, 49640, 49857, 50059, 49617, 50292, 50227,
             49820, 50259, 49801, 50226, 50075, 49517, 49697, 49740, 48628, 48352, 48713]


def test_two_slow_values_on_a_quiet_level_are_an_episode() -> None:
    ch = slow_episode(np.array(COSMOFLOW[1:], dtype=float), higher_is_better=True)
    assert ch is not None and ch.index == 8 and ch.recovered
    assert 26000 <= ch.degraded <= 27400 and 44 <= ch.drop_pct <= 48


def test_two_slow_values_need_a_quiet_level_and_a_large_drop() -> None:
    quiet = np.array(COSMOFLOW[1:], dtype=float)
    smaller = quiet.copy()
    smaller[8:10] = (40000, 39500)  # a fifth slower: two values of that are no episode
    assert slow_episode(smaller, higher_is_better=True) is None
    rng = np.random.default_rng(7)
    noisy = 49000 * (1 + 0.12 * rng.standard_normal(len(quiet)))
    noisy[8:10] = (27333, 26023)  # the same dip on a level that wanders by a tenth
    assert slow_episode(noisy, higher_is_better=True) is None


# MIC-DKFZ nnU-Net's "Epoch time: 335.55 s" on a condor node (corpus
# throughput-u-net-v2-rmis-nnunet-condor-steady, epochs 250-299): a level of ~317 s, single
# slow epochs at 330-382 s and three at 364-386 s, each back the next epoch
NNUNET_EPOCHS = [335.55, 307.09, 313.16, 330.13, 382.23, 335.38, 313.69, 316.82, 320.79, 314.03,
                 364.03, 384.48, 386.46, 318.76, 307.49, 313.83, 316.85, 313.18, 311.74, 306.36,
                 315.7, 314.67, 319.54, 315.89, 313.52, 321.27, 334.14, 320.77, 316.15, 328.9,
                 318.15, 314.33, 318.18, 313.59, 340.7, 335.37, 313.03, 316.44, 314.67, 316.12,
                 329.68, 315.88, 320.25, 313.07, 330.06, 316.41, 317.78, 317.37, 314.33, 319.2]


def test_a_few_slower_epochs_on_a_quiet_level_are_no_episode() -> None:
    assert slow_episode(np.array(NNUNET_EPOCHS), higher_is_better=False) is None
    longer = np.array(NNUNET_EPOCHS)
    longer[10:16] = (364.03, 384.48, 386.46, 371.2, 369.9, 380.1)  # six: an episode
    ch = slow_episode(longer, higher_is_better=False)
    assert ch is not None and ch.index == 10 and ch.recovered


# mlcommons/training_results_v5.0 Google/results/h200_n8_nemo/stable_diffusion/result_5.txt
# (corpus throughput-mlperf-v5-0-google-h200-n8-sd-result-5): MLLOG tracked_stats throughput
# every 100 steps; ~5,120 samples/s with a ~6,2xx reading every 500 steps, steps 2800-5200 slow
# by each window's own amount (one normal 5,110 at step 3400), back at ~5,090 from step 5300
SD_RESULT_5 = ([5979, 5120, 5120, 5117, 5124, 6154, 5185, 5122, 5118, 5120, 6212, 5104, 5119,
                5122, 4722, 6248, 5117, 5121, 5115, 5120, 6262, 5120, 5121, 5122, 5120, 6256,
                5120]
               + [2723, 426, 1050, 705, 800, 522, 5110, 2845, 1233, 3336, 2459, 1117, 1464,
                  1919, 2344, 2345, 3205, 2572, 2233, 1536, 2215, 2731, 1896, 2638, 2826]
               + [5091, 5091, 5091, 6232, 5085, 5087, 5092, 5084, 6217, 5088, 5088, 5086,
                  4967, 6230, 4913, 5294, 5094, 5098])


def test_an_erratic_slow_episode_with_one_normal_window_is_one_episode() -> None:
    ch = slow_episode(np.array(SD_RESULT_5, dtype=float), higher_is_better=True)
    assert ch is not None and ch.index == 27 and ch.recovered
    assert 1500 <= ch.degraded <= 2900 and 40 <= ch.drop_pct <= 70
    # the same windows slow in more than half the run: no level to read an episode against
    long = np.array(SD_RESULT_5[:20] + SD_RESULT_5[27:52] * 2 + SD_RESULT_5[52:], dtype=float)
    assert slow_episode(long, higher_is_better=True) is None


def test_a_decay_that_repeats_its_first_reading_is_no_episode() -> None:
    # Ishihara-Masabumi/Llama_SFT train_completion_only_log.txt (corpus
    # throughput-llama-sft-train-completion-only-log): tqdm redraws 11.06 s/it once before decaying
    x = np.full(200, 1.70)
    x[90:107] = (11.06, 11.06, 8.25, 6.28, 4.90, 3.93, 3.30, 2.82, 2.48, 2.24, 2.07, 1.95, 1.95,
                 1.87, 1.86, 1.81, 1.77)
    assert slow_episode(x, higher_is_better=False) is None


# One file, three launches of a 2-process DDP training appended to it while its author tried
# configurations (WayenVan/sign_language_rgb train_ddp.log, corpus
# timeout-sign-language-rgb-train-ddp): the first runs at 0.4 s/iteration, the later ones,
# another configuration, at 0.9. Each launch's counter starts again at 0.
SIGN_LANGUAGE_LAUNCHES = [
    "[2024-03-30 06:09:46,430][main.Trainner][INFO] - iteration index: 0, batch loss: 119.57241821289062",
    "[2024-03-30 06:10:26,458][main.Trainner][INFO] - iteration index: 100, batch loss: 69.121826171875",
    "[2024-03-30 06:11:04,008][main.Trainner][INFO] - iteration index: 200, batch loss: 82.67688751220703",
    "[2024-03-30 06:21:04,106][main.Trainner][INFO] - iteration index: 0, batch loss: 244.9021453857422",
    "[2024-03-30 06:22:30,503][main.Trainner][INFO] - iteration index: 100, batch loss: 63.44512176513672",
    "[2024-03-30 06:24:01,345][main.Trainner][INFO] - iteration index: 200, batch loss: 75.70539855957031",
    "[2024-03-30 06:26:30,728][main.Trainner][INFO] - iteration index: 0, batch loss: 244.9021453857422",
    "[2024-03-30 06:27:59,058][main.Trainner][INFO] - iteration index: 100, batch loss: 63.44512176513672",
    "[2024-03-30 06:29:31,420][main.Trainner][INFO] - iteration index: 200, batch loss: 75.70539855957031",
    "[2024-03-30 06:31:02,294][main.Trainner][INFO] - iteration index: 300, batch loss: 77.69943237304688",
]


def test_rates_of_two_launches_are_never_compared(tmp_path: Path) -> None:
    log = tmp_path / "train_ddp.log"
    log.write_text("\n".join(SIGN_LANGUAGE_LAUNCHES) + "\n")
    a = tp.analyse(traindoc.load(log))
    assert a.change is None
    assert list(a.series["iteration"]) == [100, 200, 300]  # the last launch's intervals only
    assert 0.85 <= tp.report(a).facts["baseline"] <= 0.95


def test_a_resume_from_a_checkpoint_is_the_same_launch() -> None:
    from traindoc.diagnose.throughput.series import last_launch, launches
    # a fresh start (back to the first step) begins a launch; a resume (back to a checkpoint
    # past the start) and per-epoch steps do not
    series = pd.DataFrame({"run": [0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2],
                           "iteration": [10, 20, 30, 40, 50, 30, 40, 50, 10, 20, 30]})
    assert list(launches(series)) == [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1]
    last = last_launch(series)
    assert list(last["iteration"]) == [10, 20, 30] and set(last["run"]) == {0}
    one = series.iloc[:8]
    assert last_launch(one) is one


def test_a_change_seen_only_across_a_gap_is_unknown() -> None:
    # a post's first 50 and last 50 steps of a 5,000-step GPT-2 run with the author's "..."
    # between them (corpus loss_spike-s21-gpt2-final-5000-steps-b): tokens/s 35,500 before,
    # 32,300 after, 4,900 steps unlogged: no drop can be dated or named
    a = tp.analyse(traindoc.load(CORPUS.parent / "loss_spike" /
                                 "loss_spike-s21-gpt2-final-5000-steps-b" / "logs"))
    rep = tp.report(a)
    assert a.change is None and a.across_gap is not None
    assert rep.facts["drop_pct"] is None and rep.facts["change_iteration"] is None
    assert rep.verdict.startswith("Unknown: the log has a gap") and rep.confidence.value == "low"
    assert "change_across_gap" in {f.id for f in rep.findings}
    tri = triage.report(triage.analyse(traindoc.load(
        CORPUS.parent / "loss_spike" / "loss_spike-s21-gpt2-final-5000-steps-b" / "logs")))
    assert tri.facts["classes"] == []
    assert any("gap" in n["reason"] for n in tri.facts["not_checked"])


def test_a_gap_no_longer_than_the_logged_spans_keeps_its_change() -> None:
    from traindoc.diagnose.throughput.change import Change, across_gap
    ch = Change(50, 100.0, 80.0, 20.0, 30.0, 1.0, 50, 50)
    long_sides = np.r_[np.arange(1, 51), np.arange(4950, 5000)]
    assert across_gap(ch, long_sides)
    # 500 logged steps, then 300 unlogged: the run's logged stretches are as long as the gap
    assert not across_gap(ch, np.r_[np.arange(0, 500, 10), np.arange(800, 1300, 10)])
    # two excerpts from the middle of a run (a reporter's before and after, the corpus's
    # throughput-megatron-llm-11: iterations 122-125 and 182-185) stay a change
    assert not across_gap(Change(4, 88.5, 127.4, 30.6, 36.5, 1.2, 4, 4),
                          np.array([122, 123, 124, 125, 182, 183, 184, 185]))
    assert not across_gap(ch, np.arange(100))  # no gap at all
    assert not across_gap(Change(50, 100.0, 80.0, 20.0, 30.0, 1.0, 50, 50, shape="stall"),
                          long_sides)


def test_an_epochs_counter_starting_again_is_the_same_launch(tmp_path: Path) -> None:
    # DINO's MetricLogger counts batches within each epoch (SongxiYoung/dino-main train.out,
    # corpus throughput-dino-main-train-out): [0/1562] of epoch 1 is the next epoch, not a
    # new launch, so both epochs stay in the series
    lines = [f"Epoch: [{e}/100]  [{i:4d}/1562]  eta: 0:00:21  loss: 7.117990 (9.594730)  "
             f"lr: 0.000012 (0.000006)  wd: 0.040083 (0.040028)  time: {t}  data: 0.000228  "
             "max mem: 11482"
             for e, i, t in [(0, 1520, 0.505517), (0, 1530, 0.507381), (0, 1540, 0.504397),
                             (0, 1550, 0.507968), (1, 0, 0.818535), (1, 10, 0.494988),
                             (1, 20, 0.504397), (1, 30, 0.507381)]]
    (tmp_path / "train.out").write_text("\n".join(lines) + "\n")
    a = tp.analyse(traindoc.load(tmp_path))
    assert len(a.series) == 8


def test_one_slow_step_seen_through_tqdm_average_is_no_episode() -> None:
    # corpus loss_spike-intelligence-degradation-qwen25-7b-zero3 (HF Trainer's tqdm bar, "88%|
    # ████████▊ | 502/573 [12:44:06<3:31:04, 178.38s/it]"): the save at step 500 slows one step;
    # tqdm's exponential average decays from it back to ~90 s/it
    x = np.full(80, 90.0) + np.tile([2.0, -3.0, 1.0, -1.0], 20)
    x[40:47] = (215.61, 178.38, 149.42, 126.24, 117.49, 107.56, 92.82)
    assert slow_episode(x, higher_is_better=False) is None
    # the same three slow values, back at once (a rate that is not smoothed): an episode
    y = x.copy()
    y[43:47] = 90.0
    ch = slow_episode(y, higher_is_better=False)
    assert ch is not None and ch.index == 40 and ch.recovered


def test_a_tail_no_longer_than_a_dip_the_run_came_back_from_is_no_change() -> None:

    # corpus loss_spike-tsai13-smollm2-continue-training ("step 5034 | loss: 0.0802 | dt:
    # 2248.96ms | tok/sec: 910.64 | norm: 0.41"): tok/sec dips to 975, 911, 1002 at steps
    # 5033-5035 and comes back; the log ends on five values at 996-1060
    tok = [1106.29, 1104.86, 1105.42, 1114.19, 1119.62, 1092.08, 1117.07, 1094.69, 1114.89,
           1124.26, 1114.26, 1101.11, 1118.49, 1116.88, 1116.71, 1127.52, 1124.18, 1038.61,
           1113.07, 1111.24, 1107.74, 1109.52, 1105.4, 1116.34, 1111.18, 1109.68, 1108.56,
           1105.08, 1117.4, 1102.02, 1116.27, 974.66, 910.64, 1002.39, 1089.16, 1115.85,
           1099.93, 1075.43, 1032.43, 1114.94, 1118.69, 1110.5, 1104.02, 1088.36, 1058.59,
           1060.46, 996.27, 1021.76, 1049.45]
    assert find_change(np.array(tok), higher_is_better=True) is None
    # a slow start of the series is no dip the run came back from (MLPerf v4.1 FlexAI BERT
    # result_1: 6,046 and 5,390 samples/s in its first blocks, 7,250-7,680 after, then 6,177,
    # 5,356, 6,151 at its end): the drop at the end stays a change
    bert = np.array([6045.89, 5390.27, 7657.78, 7440.13, 7661.64, 7399.02, 7659.77, 7425.83,
                     7676.39, 7326.92, 7248.36, 7293.87, 7671.10, 6177.17, 5355.61, 6151.46])
    ch = find_change(bert, higher_is_better=True)
    assert ch is not None and ch.index == 13
    # the same tail held for twelve values has outlasted the dip: a change
    longer = np.array(tok[:-5] + [1058.59, 1060.46, 996.27, 1021.76, 1049.45, 1040.0] * 2)
    ch = find_change(longer, higher_is_better=True)
    assert ch is not None and ch.index == 44


def test_a_small_step_after_the_runs_first_values_is_it_settling_in() -> None:
    from traindoc.diagnose.throughput.change import find_change, settling

    # corpus loss_spike-smollm2-135m-kd1994-readme-session1 (tok/s of a SmolLM2 run at every
    # step): 5,083 at step 2, sliding to ~4,700 by step 21, then 4,740-4,840 for 1,000 steps
    head = [5083.37, 5052.1, 5056.63, 4986.32, 4999.81, 4951.89, 4964.65, 4879.44, 4962.05,
            4915.44, 4883.83, 4825.65, 4856.59, 4842.64, 4792.93, 4758.66, 4772.45, 4752.17,
            4707.17, 4681.85, 4701.57, 4664.68, 4684.66, 4704.77]
    x = np.array(head + [4770.0 + 25 * ((i * 7) % 5 - 2) for i in range(1000)])
    its = np.arange(2, 2 + len(x))
    ch = find_change(x, higher_is_better=True)
    assert ch is not None and ch.drop_pct < 10 and settling(ch, its)
    # the same step in a log that starts mid-run, or one of 10 % or more, is a change
    assert not settling(ch, its + 5000)
    big = np.concatenate([np.array(head[:11]) * 1.2, x[11:]])
    ch2 = find_change(big, higher_is_better=True)
    assert ch2 is not None and not settling(ch2, its)


# Marian's display lines across a save at Up. 5000 and a resume from its checkpoint (corpus
# throughput-mtrss-marian-s2s-workspace-words-per-sec-drop, mtrss nmt-experiments-log-wat2021.txt):
# the window after the save is masked as the save's, but it already holds the lower level
MARIAN_RATES = [206.84, 207.52, 211.13, 215.16, 212.44, 211.63, 214.74, 206.28, 209.29, 208.98,
                149.86, 152.30, 152.22, 151.87, 154.43, 153.03, 155.35, 157.83, 155.38, 150.20]
MARIAN_LINE = ("[2021-04-16 07:21:44] Ep. 1 : Up. {up} : Sen. 87,802 : Cost 2.97858381 * 154,602 "
               "after 2,369,512 : Time 1031.62s : {rate} words/s")


def _marian_log(tmp_path: Path, save_rate: float | None = None) -> Path:
    log = tmp_path / "train.log"
    lines = []
    for i, rate in enumerate(MARIAN_RATES, start=1):
        lines.append(MARIAN_LINE.format(up=500 * i, rate=rate if i != 11 or save_rate is None
                                        else save_rate))
        if i == 10:
            lines.append("[2021-04-16 06:46:16] Saving model weights and runtime parameters to "
                         "model/model.iter5000.npz")
    log.write_text("\n".join(lines) + "\n")
    return log


def test_a_step_starts_at_the_masked_window_that_already_holds_its_level(tmp_path: Path) -> None:
    a = tp.analyse(traindoc.load(str(_marian_log(tmp_path))))
    assert a.change_iteration == 5500


def test_a_save_window_slower_than_the_new_level_is_not_the_steps_start(tmp_path: Path) -> None:
    # the save's own cost: far below both levels, so the step still starts after it
    a = tp.analyse(traindoc.load(str(_marian_log(tmp_path, save_rate=110.18))))
    assert a.change_iteration == 6000


def test_a_slow_episode_the_run_came_back_from_keeps_its_own_level() -> None:
    # an ICNet Paddle trainer (corpus throughput-icnet-paddle-resume-step-time-episode): 0.52 s
    # per iteration, 0.63 for 170 logged values (alternating 0.57-0.72), then 0.52 again; the
    # slow level is the episode's, not a median over the recovered tail too
    rng = np.random.default_rng(0)
    x = np.concatenate([0.517 + rng.uniform(-0.04, 0.04, 106),
                        np.tile([0.59, 0.67], 85), 0.518 + rng.uniform(-0.04, 0.04, 128)])
    ch = find_change(x, higher_is_better=False)
    assert ch is not None and ch.recovered and abs(ch.index - 106) <= 2
    assert 0.61 <= ch.degraded <= 0.65 and 15 <= ch.drop_pct <= 21


def test_loss_blips_the_run_came_back_from_do_not_come_before_its_slow_episode() -> None:
    # corpus throughput-icnet-paddle-resume-step-time-episode (blind batch 2026-11-29a): a
    # one-batch loss spike back at the next log, then an 18 % slow episode; the slowdown is the
    # incident, the blip no cause of it
    tri = triage.report(triage.analyse(traindoc.load(
        CORPUS / "throughput-icnet-paddle-resume-step-time-episode" / "logs")))
    assert [c["class"] for c in tri.facts["classes"]][:2] == ["throughput", "loss_spike"]
