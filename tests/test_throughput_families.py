"""Throughput families from blind intake (issue 26, round three), each with real lines of two
sources: the rate a healthy run holds (the baseline when nothing changed); the
interval's rate beside a running mean; BasicSR step lines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import traindoc
from traindoc.diagnose import throughput as tp
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
    from traindoc.diagnose.throughput.change import find_change

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
