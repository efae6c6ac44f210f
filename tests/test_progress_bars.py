"""Progress bars as the throughput metric when no step line gives one (parse/progress.py,
diagnose/throughput/series.py): tqdm bars without a bar (no tty), Keras epoch lines, and bars
that start again every epoch. Each wording with two real lines and their sources."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import traindoc
from traindoc.diagnose import throughput as tp
from traindoc.diagnose.throughput import change as tp_change
from traindoc.parse.progress import parse_keras, parse_tqdm


def _analysed(tmp_path: Path, lines: list[str], sep: str = "\n") -> tp.ThroughputAnalysis:
    """The throughput analysis of a log of ``lines`` (joined by ``sep``: a bar's ``\r``)."""
    log = tmp_path / "job.log"
    log.write_text(sep.join(lines) + "\n")
    return tp.analyse(traindoc.load(str(log)))

# (line, step, total, seconds per step, source)
NO_TTY_BARS = [
    ("   154/239     15.7G    0.0236   0.04801 0.0004782       365       640: 100% 42/42 "
     "[01:09<00:00,  1.65s/it]", 42, 42, 1.65, "dnth/yolov5-deepsparse-blogpost#11"),
    ("      1/499      10.2G    0.08632    0.03235    0.03949         23        640: 100% 15/15 "
     "[00:08<00:00,  1.79it/s]", 15, 15, 1 / 1.79,
     "camilacorreamelo/especializa-o_cesar README.md (a YOLOv5 Colab run)"),
]
# Keras rounds both the epoch's time and the time per step (one clock) to whole units: the
# figure printed with more digits gives the rate (1873 s over 1000 steps, not "2s/step").
KERAS_LINES = [
    ("1490/1490 - 106s - loss: 1.9500e-05 - val_loss: 2.0626e-05 - lr: 1.0000e-04 - 106s/epoch "
     "- 71ms/step", 1490, 1490, 106 / 1490, "talmolab/sleap#2230"),
    ("1000/1000 [==============================] - 1873s 2s/step - loss: 3.6317 - val_loss: 3.3623",
     1000, 1000, 1.873, "pierluigiferrari/ssd_keras#344"),
    ("128/128 - 0s - loss: 2.9102 - accuracy: 0.1586 - 358ms/epoch - 3ms/step", 128, 128,
     0.358 / 128, "ttukei/Twitter-language-models-about-Ukraine TCSS456_NLP_FinalProject/ReadMe.txt"),
    ("5/5 [==============================] - 2s 613ms/step - loss: 0.3212 - val_loss: 0.1224",
     5, 5, 0.613, "keras-team/keras#16286"),
    # Keras 3: a bar of box characters, no dash before the seconds (keras-team/keras
    # keras/src/utils/progbar.py)
    (" 125/125 ━━━━━━━━━━━━━━━━━━━━ 5s 21ms/step - accuracy: 0.7338 - loss: 1.5405 - "
     "val_accuracy: 0.7138 - val_loss: 1.0745", 125, 125, 0.021,
     "keras-team/keras-io examples/nlp/md/lstm_seq2seq.md"),
    (" 8/8 ━━━━━━━━━━━━━━━━━━━━ 0s 4ms/step - loss: 0.9237", 8, 8, 0.004,
     "keras-team/keras-io guides/md/distribution.md"),
]


@pytest.mark.parametrize("line, step, total, spi, source", NO_TTY_BARS,
                         ids=[r[4] for r in NO_TTY_BARS])
def test_bar_without_a_bar(line: str, step: int, total: int, spi: float, source: str) -> None:
    row = parse_tqdm(line)
    assert row is not None, source
    assert (row["step"], row["total"]) == (step, total)
    assert 1 / row["rate"] == pytest.approx(spi, rel=1e-3)


@pytest.mark.parametrize("line, step, total, spi, source", KERAS_LINES,
                         ids=[r[4] for r in KERAS_LINES])
def test_keras_epoch_line(line: str, step: int, total: int, spi: float, source: str) -> None:
    row = parse_keras(line)
    assert row is not None, source
    assert (row["step"], row["total"]) == (step, total)
    assert 1 / row["rate"] == pytest.approx(spi, rel=1e-3)


@pytest.mark.parametrize("line", [
    "Epoch 12/200",
    "step 5/10 - loss: 2.0",  # no time per step
    "   10%|#         | 5/50 [00:01<00:09]",  # a tqdm bar, not Keras
])
def test_not_keras(line: str) -> None:
    assert parse_keras(line) is None


def test_a_keras_epoch_in_progress_has_no_rate() -> None:
    # Keras 3 before the epoch's end: the seconds are the time left (keras-team/keras
    # keras/src/utils/progbar.py, its ETA branch): the batch reached, no time of the epoch
    row = parse_keras("416/418 ━━━━━━━━━━━━━━━━━━━━ 0s 9ms/step - loss: 0.0415 - mae: 0.1430")
    assert row is not None and (row["step"], row["total"]) == (416, 418)
    assert row.get("rate") is None and row.get("elapsed_s") is None


def test_epoch_bars_make_one_series(tmp_path: Path) -> None:
    """A bar that restarts each epoch counts on across epochs; validation bars (smaller total)
    are not the training loop."""
    lines = []
    for epoch, secs in zip(range(5), (1.65, 1.71, 1.64, 1.66, 1.70), strict=True):
        lines.append(f"   {epoch}/239     15.7G    0.0236   0.04801 0.0004782       365       "
                     f"640: 100% 42/42 [01:09<00:00,  {secs}s/it]")
        lines.append("               Class     Images     Labels          P          R     "
                     "mAP@.5 mAP@.5:.95: 100% 2/2 [00:02<00:00,  1.37s/it]")
    log = tmp_path / "job.log"
    log.write_text("\n".join(lines) + "\n")
    inc = traindoc.load(str(log))
    a = tp.analyse(inc)
    assert a.metric == "s_per_iteration"
    assert list(a.series["iteration"]) == [42, 84, 126, 168, 210]
    assert a.change is None


# Pein2017/CoordExp progress/diagnostics/.../control_smallfrac_launch.log: tqdm draws the bar's
# state again after each loss dict and server line printed through it
COORDEXP_BAR = ["Train:  12%|█▎        | 1/8 [01:30<10:30, 90.13s/it]",
                "Train:  12%|█▎        | 1/8 [01:30<10:30, 90.13s/it]",
                "Train:  25%|██▌       | 2/8 [05:20<17:15, 172.52s/it]",
                "Train:  25%|██▌       | 2/8 [05:20<17:15, 172.52s/it]",
                "Train:  38%|███▊      | 3/8 [09:05<16:23, 196.71s/it]",
                "Train:  38%|███▊      | 3/8 [09:05<16:23, 196.71s/it]"]


def test_a_bar_drawn_again_is_the_same_step(tmp_path: Path) -> None:
    """A row repeating the one before (step, elapsed, rate) is a redraw, not the next epoch:
    CoordExp's 8-step bar stays steps 1-3, not 1, 9, 17 ..."""
    a = _analysed(tmp_path, COORDEXP_BAR)
    assert list(a.series["iteration"]) == [1, 2, 3]


def test_an_epoch_bar_ending_at_its_total_again_is_the_next_epoch(tmp_path: Path) -> None:
    """The same step with its clock started again or another rate is the next epoch's bar
    (YOLO's 42/42)."""
    lines = [f"   {e}/239     15.7G    0.0236   0.04801 0.0004782       365       640: 100% "
             f"42/42 [01:{s:02d}<00:00,  {r}s/it]"
             for e, (s, r) in enumerate(((9, 1.65), (8, 1.65), (9, 1.71), (10, 1.64)))]
    a = _analysed(tmp_path, lines)
    assert list(a.series["iteration"]) == [42, 84, 126, 168]


# vivsn289/Benchmarking-vanilla-llm-to-validate-forgetting finetune.log: HF Trainer resumed
# from checkpoint-1626, its bar jumping to 1627 in one update; tqdm's smoothed rate averages
# the jump in and takes ~40 steps to climb to the 4.1-4.8 s/it the run holds
VANILLA_RESUMED_BAR = [
    "50%|█████     | 1627/3252 [00:05<00:05, 305.36it/s]",
    "50%|█████     | 1630/3252 [00:19<00:05, 305.36it/s]",
    "50%|█████     | 1631/3252 [00:21<00:28, 56.78it/s]",
    "50%|█████     | 1636/3252 [00:43<01:26, 18.59it/s]",
    "50%|█████     | 1640/3252 [01:06<03:27,  7.78it/s]",
    "51%|█████     | 1645/3252 [01:28<07:34,  3.54it/s]",
    "51%|█████     | 1650/3252 [01:52<14:55,  1.79it/s]",
    "51%|█████     | 1655/3252 [02:17<38:33,  1.45s/it]",
    "51%|█████     | 1659/3252 [02:34<1:08:01,  2.56s/it]",
    "51%|█████     | 1662/3252 [02:48<1:35:34,  3.61s/it]",
    "51%|█████     | 1665/3252 [03:01<1:45:10,  3.98s/it]",
    "51%|█████     | 1666/3252 [03:05<1:48:51,  4.12s/it]",
    "51%|█████▏    | 1667/3252 [03:09<1:48:54,  4.12s/it]",
    "51%|█████▏    | 1668/3252 [03:15<2:02:37,  4.64s/it]",
    "51%|█████▏    | 1670/3252 [03:23<1:54:30,  4.34s/it]",
    "51%|█████▏    | 1672/3252 [03:31<1:51:00,  4.22s/it]",
    "52%|█████▏    | 1675/3252 [03:43<1:47:42,  4.10s/it]",
    "52%|█████▏    | 1680/3252 [04:07<1:54:57,  4.39s/it]",
    "52%|█████▏    | 1685/3252 [04:30<2:04:46,  4.78s/it]",
    "52%|█████▏    | 1690/3252 [04:51<1:49:56,  4.22s/it]",
    "52%|█████▏    | 1695/3252 [05:13<1:52:32,  4.34s/it]",
    "52%|█████▏    | 1700/3252 [05:35<1:54:47,  4.44s/it]",
    "53%|█████▎    | 1710/3252 [06:18<1:46:39,  4.15s/it]",
    "53%|█████▎    | 1720/3252 [07:04<2:01:52,  4.77s/it]",
    "53%|█████▎    | 1730/3252 [07:50<1:58:05,  4.66s/it]",
    "54%|█████▎    | 1740/3252 [08:36<1:47:59,  4.29s/it]",
    "54%|█████▍    | 1750/3252 [09:19<1:46:42,  4.26s/it]",
    "54%|█████▍    | 1760/3252 [10:04<1:57:29,  4.72s/it]",
]


def test_a_resumed_bars_averaged_rate_is_set_aside(tmp_path: Path) -> None:
    """The head of a resumed bar, its rate still averaging the jump, is no level: no drop."""
    a = _analysed(tmp_path, VANILLA_RESUMED_BAR, "\r")
    assert a.change is None
    assert int(a.series["iteration"].iloc[a.used[0]]) == 1667
    assert 4.1 <= a.baseline <= 4.8


def test_a_fresh_bar_slowing_down_is_kept(tmp_path: Path) -> None:
    """A bar counted from its first step is no resume: its fast first rows stay a level."""
    lines = [f"{k:3d}%| | {k}/100 [00:{k:02d}<00:10,  1.00it/s]" for k in range(1, 11)]
    lines += [f"{k:3d}%| | {k}/100 [{(10 + 3 * (k - 10)) // 60:02d}:"
              f"{(10 + 3 * (k - 10)) % 60:02d}<01:00,  3.00s/it]" for k in range(11, 21)]
    a = _analysed(tmp_path, lines)
    assert a.n_set_aside == 0
    assert a.change is not None and a.change.baseline == pytest.approx(1.0)


AI_TOOLKIT_595 = [  # ostris/ai-toolkit#595: 300 steps at ~28 s each between steps at ~2 s
    "lokr-test-2:  10%|9         | 299/3000 [10:44<1:37:05,  2.16s/it, lr: 2.0e-04 loss: 5.226e-01]",
    "lokr-test-2:  20%|#9        | 599/3000 [19:45<1:03:24,  1.58s/it, lr: 2.0e-04 loss: 6.736e-01]",
    "lokr-test-2:  30%|##9       | 899/3000 [29:51<1:06:28,  1.90s/it, lr: 2.0e-04 loss: 6.463e-01]",
    "lokr-test-2:  40%|###9      | 1199/3000 [2:49:04<14:04:18, 28.13s/it, lr: 2.0e-04 loss: "
    "7.353e-01]",
    "lokr-test-2:  50%|####9     | 1499/3000 [2:56:55<34:04,  1.36s/it, lr: 2.0e-04 loss: 2.635e-01]",
]


def test_a_long_pause_mid_run_is_a_change_that_recovered(tmp_path: Path) -> None:
    a = _analysed(tmp_path, AI_TOOLKIT_595)
    assert a.change is not None and a.change.shape == "pause" and a.change.recovered
    assert int(a.series["iteration"].iloc[a.change_position]) == 1199
    assert a.change.degraded == pytest.approx(28.13)


def test_one_slow_step_is_no_pause() -> None:
    """begeekmyfriend/tacotron2#9: steps at ~1.5 s/iter, step 320 at 15 s, then normal again:
    10x slower, but 13.5 s lost is a blip (a blocked loader thread), not a pause."""
    secs = np.array([1.5, 1.52, 1.48, 1.5, 1.51, 15.0, 1.5, 1.49, 1.5])
    its = np.arange(315, 324)
    assert tp_change.mid_pause(secs, its) is None
    secs[5] = 16.0  # (over ten times the slowest other step)
    assert tp_change.mid_pause(secs, its) is None
    assert tp_change.mid_pause(secs, its * 1000) is not None  # the same over 1000 steps a point
