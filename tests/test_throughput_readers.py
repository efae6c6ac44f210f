"""Throughput readers of round y: rates and times in wordings the blind intakes met (a rate
named by words joined with ``per``, Stable-Baselines3's ``time/`` table, a cumulative clock
printed every N steps), each with its real line and source."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import traindoc
from traindoc.diagnose import throughput as tp
from traindoc.parse.metric_lines import parse_line

# aalexchengg/llmsys_s25_hw4 out/dp.out (corpus throughput-llmsys-s25-hw4-dp-2rank-healthy):
# a course's own per-epoch line, the rate named "Tokens_per_sec" with no "/" in it
LLMSYS_LINES = [
    "Epoch 0 on Rank 0: Training Time = 36.07007098197937, Tokens_per_sec = 104113.63863666085",
    "Epoch 1 on Rank 0: Training Time = 35.7384078502655, Tokens_per_sec = 105198.0141620345",
    "Epoch 2 on Rank 0: Training Time = 35.77734112739563, Tokens_per_sec = 105123.83041715014",
    "Epoch 3 on Rank 0: Training Time = 35.80731105804443, Tokens_per_sec = 105086.8",
]


def test_a_rate_named_with_per_is_read_without_a_slash() -> None:
    row = parse_line(LLMSYS_LINES[0])
    assert row is not None and row["tokens_per_s"] == 104113.63863666085 and row["iteration"] == 0


def test_per_epoch_tokens_per_sec_lines_give_the_rate_a_run_holds(tmp_path: Path) -> None:
    log = tmp_path / "dp.out"
    log.write_text("\n".join(LLMSYS_LINES) + "\n")
    rep = tp.report(tp.analyse(traindoc.load(log)))
    assert rep.facts["metric"] == "tokens_per_s"
    assert 104000 <= rep.facts["baseline"] <= 105300 and rep.facts["change_iteration"] is None
    assert rep.facts["degraded"] is False  # judged, no drop (None: not judged)


def _sb3_table(it: int, elapsed: int, total: int, loss: float) -> list[str]:
    """One Stable-Baselines3 table as HumanOutputFormat prints it (values of
    hill-a/stable-baselines#1204's table, the counters advanced)."""
    return ["-----------------------------------------",
            "| time/                   |             |",
            "|    fps                  | 26          |",
            f"|    iterations           | {it:<11d} |",
            f"|    time_elapsed         | {elapsed:<11d} |",
            f"|    total_timesteps      | {total:<11d} |",
            "| train/                  |             |",
            "|    approx_kl            | 0.010918302 |",
            "|    entropy_loss         | -14.2       |",
            f"|    loss                 | {loss:<11.4g} |",
            "|    n_updates            | 18          |",
            "|    value_loss           | 36.8        |",
            "-----------------------------------------"]


def test_stable_baselines3_tables_are_step_rows(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    lines = [x for i in range(7, 13) for x in _sb3_table(i, 136 + 20 * (i - 7), 512 * i, 20.1)]
    log.write_text("\n".join(lines) + "\n")
    it = traindoc.load(log).iterations
    assert it["iteration"].tolist() == list(range(7, 13))
    assert it["samples_per_s"].tolist() == [26.0] * 6 and it["train_time_s"].iloc[0] == 136
    assert it["loss"].iloc[0] == 20.1
    rep = tp.report(tp.analyse(traindoc.load(log)))
    assert rep.facts["metric"] == "samples_per_s" and rep.facts["baseline"] == 26


# the flat tables of OpenAI baselines and Stable Baselines 2: PPO2 (hill-a/stable-baselines#121,
# its leading space as pasted), TRPO's CamelCase keys (#164)
FLAT_TABLES = [
    ("hill-a/stable-baselines#121", [
        " --------------------------------------",
        " | approxkl                 | 0.00069229305 |",
        " | explained_variance | 0.847         |",
        " | fps                           | 142           |",
        " | nupdates                 | 782           |",
        " | policy_loss              | -0.011813248  |",
        " | serial_timesteps     | 100096        |",
        " | time_elapsed          | 656           |",
        " | total_timesteps      | 100096        |",
        " | value_loss               | 0.4478733     |",
        " --------------------------------------"], 782, 142.0, 656.0),
    ("hill-a/stable-baselines#164", [
        "----------------------------------",
        "| EpLenMean       | 128          |",
        "| EpRewMean       | -840         |",
        "| EpisodesSoFar   | 1            |",
        "| TimeElapsed     | 18.3         |",
        "| TimestepsSoFar  | 128          |",
        "| entloss         | 0.04307969   |",
        "----------------------------------"], 128, None, 18.3),
]


def test_flat_logger_tables_are_step_rows(tmp_path: Path) -> None:
    for source, lines, step, fps, clock in FLAT_TABLES:
        log = tmp_path / "flat.log"
        log.write_text("\n".join(lines) + "\n")
        it = traindoc.load(log).iterations
        assert it["iteration"].tolist() == [step], source
        assert it["train_time_s"].iloc[0] == clock, source
        if fps is not None:
            assert it["samples_per_s"].iloc[0] == fps, source


# a cumulative clock on each step line, differenced into seconds per step: PaddlePaddle's PredNet
# loop (corpus throughput-prednet-paddle-train: the step restarts every epoch, the clock does not)
PREDNET_LINES = [
    "Epoch 0, Step 25, total used time 7.178124904632568 (s), avg loss so far is 0.10979227721691132",
    "Epoch 0, Step 50, total used time 14.059857845306396 (s), avg loss so far is 0.08230332285165787",
    "Epoch 0, Step 75, total used time 20.90472412109375 (s), avg loss so far is 0.07053857296705246",
    "Epoch 0, Step 100, total used time 27.7766170501709 (s), avg loss so far is 0.06483017653226852",
    "Epoch 1, Step 25, total used time 47.9 (s), avg loss so far is 0.041",
    "Epoch 1, Step 50, total used time 54.8 (s), avg loss so far is 0.040",
    "Epoch 1, Step 75, total used time 61.7 (s), avg loss so far is 0.039",
    "Epoch 1, Step 100, total used time 68.6 (s), avg loss so far is 0.038",
]


def test_a_clock_since_the_start_gives_the_time_per_step(tmp_path: Path) -> None:
    assert parse_line(PREDNET_LINES[0])["train_time_s"] == 7.178124904632568
    log = tmp_path / "train.log"
    log.write_text("\n".join(PREDNET_LINES) + "\n")
    rep = tp.report(tp.analyse(traindoc.load(log)))
    assert rep.facts["metric"] == "s_per_iteration"
    assert 0.27 <= rep.facts["baseline"] <= 0.28 and rep.facts["change_iteration"] is None


def test_a_time_that_goes_up_and_down_is_no_clock(tmp_path: Path) -> None:
    # "elapsed" of each step, not since the start: never differenced
    lines = [f"step {i}, loss 2.{i}, elapsed: {0.3 + 0.05 * (i % 3):.2f}s" for i in range(1, 13)]
    assert parse_line(lines[0])["train_time_s"] == 0.35
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    rep = tp.report(tp.analyse(traindoc.load(log)))
    assert rep.facts["metric"] is None


def test_a_smoothed_rate_fading_back_after_one_pause_is_no_change() -> None:
    from traindoc.diagnose.throughput.change import fading, find_change

    # corpus gpu_crash-sttn-gait-tensorboardx-teardown-oserror-healthy: tqdm's s/it at 2.05,
    # a 91 s pause at step 19620 ("19620/20000 [12:01:55<18:34,  2.93s/it]"), then the average
    # fading back, 2.92, 2.91 … 2.06 s/it, to the end of the run
    flat = np.full(400, 2.05)
    fade = np.round(2.05 + 0.88 * np.exp(-np.arange(380) / 60.0), 2)
    x = np.concatenate([flat, fade])
    ch = find_change(x, higher_is_better=False)
    assert ch is not None and fading(ch, x, higher_is_better=False)
    # a slowdown seen through the same average rises and holds: a change
    rise = np.round(2.93 - 0.88 * np.exp(-np.arange(380) / 60.0), 2)
    y = np.concatenate([flat, rise])
    ch = find_change(y, higher_is_better=False)
    assert ch is not None and not fading(ch, y, higher_is_better=False)


# PaddleVideo's evaluation lines (its docs' tutorials/summarize, and YOWO under it): the step of
# a "val" loop and the epoch's validation summary are evaluations, not training
PADDLEVIDEO_EVAL = [
    ("PaddleVideo docs", "[12/28 17:31:32] epoch:[ 80/80 ] val step:0    loss: 0.20538 top1: "
     "0.88281 top5: 0.99219 elapse: 1.589 reader: 0.000s ips: 20.14003 instance/sec."),
    ("PaddleVideo yowo docs", "[05/15 23:47:15] epoch:[  5/5  ] val step:17100 loss_avg: 0.00000 "
     "recall_avg: 0.86527 precision_avg: 0.91334 fscore_avg: 0.87903 batch_cost: 0.73636 sec, "
     "reader_cost: 0.00000 sec, ips: 10.86423 instance/sec."),
    ("corpus throughput-paddlevideo-3d-resnets-reader-stall", "[12/25 15:05:27] END epoch:14  val "
     "loss_avg: 2.92463 top1_avg: 0.37344 top5_avg: 0.65238 avg_batch_cost: 0.03583 sec, "
     "avg_reader_cost: 0.00000 sec, batch_cost_sum: 41.05409 sec, avg_ips: 93.53513 instance/sec."),
]


def test_an_evaluation_loops_step_is_an_eval_row() -> None:
    for source, line in PADDLEVIDEO_EVAL:
        row = parse_line(line)
        assert row is None or (row["event"] == "eval" and "samples_per_s" not in row), source


def _paddlevideo_epoch(e: int, step0: float, step100: float, avg: float) -> list[str]:
    """One epoch of PaddleVideo's log (corpus throughput-paddlevideo-3d-resnets-reader-stall's
    wording): two step snapshots, then the epoch's summary with its average rate."""
    return [f"[12/25 15:02:48] epoch:[ {e}/25 ] train step:0    loss: 0.37917 lr: 0.010000 top1: "
            f"0.93750 top5: 1.00000 batch_cost: 4.11913 sec, reader_cost: 3.69170 sec, ips: "
            f"{step0:.5f} instance/sec.",
            f"[12/25 15:04:07] epoch:[ {e}/25 ] train step:100  loss: 0.38291 lr: 0.010000 top1: "
            f"0.92188 top5: 1.00000 batch_cost: 0.73795 sec, reader_cost: 0.32746 sec, ips: "
            f"{step100:.5f} instance/sec.",
            f"[12/25 15:04:46] END epoch:{e}  train loss_avg: 0.57100  top1_avg: 0.84931 "
            f"top5_avg: 0.97546 avg_batch_cost: 0.40776 sec, avg_reader_cost: 0.00012 sec, "
            f"batch_cost_sum: 122.26700 sec, avg_ips: {avg:.5f} instance/sec."]


def test_two_snapshots_an_epoch_give_way_to_the_epochs_average(tmp_path: Path) -> None:
    avgs = [76.8, 77.5, 77.2, 78.0, 76.7, 77.1, 61.6, 59.1, 62.0, 61.5, 63.4, 60.2]
    snaps = [(15.5, 86.7), (18.3, 46.0), (17.2, 35.4), (18.4, 107.7)] * 3
    lines = [x for e, (avg, (s0, s100)) in enumerate(zip(avgs, snaps, strict=True), start=1)
             for x in _paddlevideo_epoch(e, s0, s100, avg)]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    rep = tp.report(tp.analyse(traindoc.load(log)))
    assert rep.facts["metric"] == "samples_per_s" and 76 <= rep.facts["baseline"] <= 78
    assert 60 <= rep.facts["degraded"] <= 62 and rep.facts["change_iteration"] == 7
