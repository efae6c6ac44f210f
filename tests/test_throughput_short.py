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
