"""Throughput families from blind intake (issue 26, round four), each with real lines of two
sources: one large drop seen on a short series."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import traindoc
from traindoc.diagnose import throughput as tp
from traindoc.diagnose.throughput.change import find_change

_BAR = ("     {e}/400      16.4G     0.8859     0.6815      1.163         10       1280: 100%|"
        "██████████| 60/60 [{t}<00:00, {r}]")
# one large drop on a few logged points: (source, lines, baseline range, degraded range)
SHORT_DROPS = [
    # ultralytics/ultralytics#7618: Ultralytics epoch bars, 3.05 it/s, then 12.70 / 1.62 / 11.45
    # s/it (tqdm prints s/it below 1 it/s)
    ("ultralytics/ultralytics#7618", [
        _BAR.format(e=13, t="00:19", r="3.05it/s"), _BAR.format(e=14, t="00:19", r="3.05it/s"),
        _BAR.format(e=15, t="00:19", r="3.06it/s"), _BAR.format(e=26, t="12:41", r="12.70s/it"),
        _BAR.format(e=27, t="01:37", r="1.62s/it"), _BAR.format(e=28, t="11:27", r="11.45s/it"),
    ], (0.32, 0.34), (1.6, 12.7)),
    # XuyangBai/TransFusion#40: mmcv text logger, 0.57 and 0.63 s per iteration, then 279 and 69
    ("XuyangBai/TransFusion#40", [
        "2022-07-11 14:49:09,578 - mmdet - INFO - Epoch [1][23/15435]    lr: 1.000e-04, eta: "
        "3 days, 8:59:41, time: 0.571, data_time: 0.006, memory: 3081, loss: 76.1413",
        "2022-07-11 14:49:10,203 - mmdet - INFO - Epoch [1][24/15435]    lr: 1.000e-04, eta: "
        "3 days, 7:51:04, time: 0.625, data_time: 0.007, memory: 3081, loss: 52.6905",
        "2022-07-11 14:53:49,345 - mmdet - INFO - Epoch [1][25/15435]    lr: 1.000e-04, eta: "
        "43 days, 2:02:12, time: 279.142, data_time: 278.522, memory: 3081, loss: 79.6746",
        "2022-07-11 14:54:58,492 - mmdet - INFO - Epoch [1][26/15435]    lr: 1.000e-04, eta: "
        "50 days, 22:17:40, time: 69.147, data_time: 68.535, memory: 3081, loss: 76.6090",
    ], (0.55, 0.65), (69, 280)),
]


@pytest.mark.parametrize("source, lines, baseline, degraded", SHORT_DROPS,
                         ids=[d[0] for d in SHORT_DROPS])
def test_a_large_drop_on_a_short_series_is_a_change(tmp_path: Path, source: str,
                                                    lines: list[str],
                                                    baseline: tuple[float, float],
                                                    degraded: tuple[float, float]) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    rep = tp.report(tp.analyse(traindoc.load(log)))
    assert rep.facts["metric"] == "s_per_iteration", source
    assert baseline[0] <= rep.facts["baseline"] <= baseline[1], source
    assert degraded[0] <= rep.facts["degraded"] <= degraded[1], source
    assert rep.facts["drop_pct"] > 75, source
    assert rep.confidence == "medium", source  # a few points: no high confidence


def test_a_short_series_is_no_change_unless_every_point_is_far_worse() -> None:
    # one slow point among fast ones, or a slow level one of whose points is back: no claim
    assert find_change(np.array([0.6, 0.6, 20.0, 0.6]), higher_is_better=False) is None
    assert find_change(np.array([0.6, 0.6, 20.0, 0.9, 0.6]), higher_is_better=False) is None
    # warm-up (the first points slow) is no drop
    assert find_change(np.array([12.0, 11.0, 0.6, 0.6]), higher_is_better=False) is None
    # a rate: 430, 428 then 75, 80 samples/s
    ch = find_change(np.array([430.0, 428.0, 75.0, 80.0]), higher_is_better=True)
    assert ch is not None and ch.index == 2


# BasicTS/EasyTorch TSFormer on PEMS03 (corpus step-tsformer-pems03): train_time per epoch,
# epochs 1-60; ten epochs 11-21 % slower (33-42), the level around them within 1.5 %
TSFORMER_EPOCHS = [
    295.52, 294.12, 296.04, 293.30, 294.93, 292.52, 294.09, 293.56, 293.10, 293.26, 294.33,
    293.98, 292.84, 293.87, 294.56, 292.24, 295.09, 294.12, 294.44, 294.10, 295.09, 294.35,
    292.96, 293.50, 292.23, 293.10, 293.21, 293.32, 296.56, 296.17, 295.06, 293.97, 334.75,
    347.73, 357.69, 357.49, 355.68, 327.93, 347.38, 358.25, 357.71, 348.49, 295.78, 297.56,
    295.06, 296.63, 295.60, 294.95, 295.88, 296.37, 295.84, 295.98, 297.74, 297.20, 296.41,
    295.88, 296.54, 295.34, 296.55, 295.90]


def test_a_small_episode_on_a_quiet_level() -> None:
    from traindoc.diagnose.throughput.change import slow_episode

    ch = slow_episode(np.array(TSFORMER_EPOCHS), higher_is_better=False)
    assert ch is not None and ch.index == 32 and ch.recovered
    assert 327 <= ch.degraded <= 359 and 10 <= ch.drop_pct <= 18
    # the same episode on a level that wanders by ±6 % (nnUNet#640's epochs: 1252, 1145,
    # 1257 s) is within that level's noise: no episode below 30 %
    rng = np.random.default_rng(640)
    noisy = np.array(TSFORMER_EPOCHS) * (1 + rng.uniform(-0.06, 0.06, len(TSFORMER_EPOCHS)))
    assert slow_episode(noisy, higher_is_better=False) is None


# hnmizuho/AT-BSN#1 (a BasicSR fork): 100 iterations a minute, then an hour of validation and
# the save, then 100 iterations in 27.6 min
AT_BSN = [
    "24-09-18 13:27:08.905 - INFO: <epoch: 16, iter:   3,800, lr:2.999e-04> l_all: 3.4186e+00 ",
    "24-09-18 13:28:08.779 - INFO: <epoch: 16, iter:   3,900, lr:2.999e-04> l_all: 6.2904e+00 ",
    "24-09-18 13:29:08.672 - INFO: <epoch: 16, iter:   4,000, lr:2.999e-04> l_all: 4.8104e+00 ",
    "24-09-18 14:29:46.915 - INFO: # Validation of Pred # PSNR: 3.2174e+01. # SSIM: 8.1106e-01. "
    "|| Best PSNR: 3.2174e+01 at iter: 4000.",
    "24-09-18 14:29:46.916 - INFO: Saving best model and training states.",
    "24-09-18 14:29:46.947 - INFO: Saving models and training states.",
    "24-09-18 14:57:21.217 - INFO: <epoch: 17, iter:   4,100, lr:2.999e-04> l_all: 4.5715e+00 ",
    "24-09-18 15:25:12.590 - INFO: <epoch: 17, iter:   4,200, lr:2.999e-04> l_all: 6.9138e+00 ",
]


@pytest.mark.parametrize("line", [
    "24-09-18 14:29:46.947 - INFO: Saving models and training states.",  # hnmizuho/AT-BSN#1
    # xinntao/Real-ESRGAN#800 (BasicSR's train.py: the line names no step and no path)
    "2024-05-10 10:21:33,118 INFO: Saving models and training states.",
])
def test_basicsr_save_lines_are_saves(line: str) -> None:
    from traindoc.parse.checkpoints import parse_checkpoint

    row = parse_checkpoint(line)
    assert row is not None and row["kind"] == "save_start" and row["iteration"] is None


def test_a_timed_interval_starts_after_the_save_in_it(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(AT_BSN) + "\n")
    rep = tp.report(tp.analyse(traindoc.load(log)))
    assert 0.55 <= rep.facts["baseline"] <= 0.65
    # 14:29:46.947 -> 14:57:21.217 over 100 iterations, not the hour of validation before it
    assert 16.0 <= rep.facts["degraded"] <= 17.0
    assert rep.facts["change_iteration"] == 4100


_MASKRCNN = ("INFO: eta: 10:42:17  iter: {i}  loss: 1.4505 (1.5276)  time: {t} (0.4292)  "
             "data: 0.0137 (0.0163)  lr: 0.012533  max mem: 2957")
# a post's "before" and "after" blocks, one file each (the lines between never posted):
# (source, first block, second block, baseline range, degraded range, change iteration)
EXCERPTS = [
    # apache/mxnet#4804: one Speedometer line per block, 429.55 then 75.35 samples/sec
    ("apache/mxnet#4804",
     ["2017-01-26 20:50:44,995 Epoch[0] Batch [5450]   Speed: 429.55 samples/sec       "
      "Train-Accuracy=0.000000"],
     ["2017-01-26 20:58:24,362 Epoch[0] Batch [6250]   Speed: 75.35 samples/sec        "
      "Train-Accuracy=0.000000"], (429, 430), (75, 76), 6250),
    # facebookresearch/maskrcnn-benchmark#976: MetricLogger lines at iterations 220-260, then
    # 1420-1460; the step's time, not its running mean in parentheses, is the series
    ("facebookresearch/maskrcnn-benchmark#976",
     [_MASKRCNN.format(i=i, t=t) for i, t in ((220, 0.4373), (240, 0.4278), (260, 0.4475))],
     [_MASKRCNN.format(i=i, t=t) for i, t in ((1420, 0.5229), (1440, 0.4920), (1460, 0.4533))],
     (0.42, 0.45), (0.45, 0.53), 1420),
]


@pytest.mark.parametrize("source, first, second, baseline, degraded, at", EXCERPTS,
                         ids=[e[0] for e in EXCERPTS])
def test_a_step_between_two_excerpts_is_a_change(tmp_path: Path, source: str, first: list[str],
                                                 second: list[str],
                                                 baseline: tuple[float, float],
                                                 degraded: tuple[float, float], at: int) -> None:
    (tmp_path / "a-before.log").write_text("\n".join(first) + "\n")
    (tmp_path / "b-after.log").write_text("\n".join(second) + "\n")
    facts = tp.report(tp.analyse(traindoc.load(tmp_path))).facts
    assert baseline[0] <= facts["baseline"] <= baseline[1], source
    assert degraded[0] <= facts["degraded"] <= degraded[1], source
    assert facts["change_iteration"] == at, source


def test_excerpts_at_one_level_or_in_one_file_are_no_change(tmp_path: Path) -> None:
    first, second = EXCERPTS[1][1], EXCERPTS[1][2]
    # the same lines in one file: three points a side are too few for a split
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "train.log").write_text("\n".join(first + second) + "\n")
    assert tp.report(tp.analyse(traindoc.load(tmp_path / "one"))).facts["change_iteration"] is None
    # two excerpts whose values overlap: no step between them
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "a.log").write_text("\n".join(first) + "\n")
    (tmp_path / "two" / "b.log").write_text("\n".join(second[1:] + [first[1].replace(
        "iter: 240", "iter: 1480")]) + "\n")
    assert tp.report(tp.analyse(traindoc.load(tmp_path / "two"))).facts["change_iteration"] is None
    # one Speedometer line per excerpt, 10 % apart: too little for two single lines
    (tmp_path / "three").mkdir()
    (tmp_path / "three" / "a.log").write_text(EXCERPTS[0][1][0] + "\n")
    (tmp_path / "three" / "b.log").write_text(EXCERPTS[0][2][0].replace("75.35", "386.6") + "\n")
    facts = tp.report(tp.analyse(traindoc.load(tmp_path / "three"))).facts
    assert facts["change_iteration"] is None
