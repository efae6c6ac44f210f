"""Throughput families from blind intake (issue 26, round four), each with real lines of two
sources: DeepSpeed's ThroughputTimer in its 0.7 wording, and a slide the run's own configured
schedule causes (random-LTD, a sequence-length curriculum), which is no degradation."""

from __future__ import annotations

from pathlib import Path

import pytest

import traindoc
from traindoc.diagnose import throughput as tp
from traindoc.parse.benchmarks import parse_schedule
from traindoc.parse.iterations import parse_deepspeed_timer

# "E/M, RunningAvgSamplesPerSec=…, CurrSamplesPerSec=…": the interval's rate, at micro-step M
# (line, iteration, samples/s, source)
DS_TIMER_07 = [
    ("[2022-12-20 08:26:26,325] [INFO] [timer.py:197:stop] 0/18, RunningAvgSamplesPerSec="
     "157.41495682912333, CurrSamplesPerSec=145.0889530760849, MemAllocated=1.75GB, "
     "MaxMemAllocated=2.6GB", 18, 145.0889530760849, "deepspeedai/DeepSpeed#2629"),
    ("[2022-11-22 10:03:37,042] [INFO] [timer.py:198:stop] 0/200, RunningAvgSamplesPerSec="
     "90.31663802675355, CurrSamplesPerSec=82.74966845933933, MemAllocated=0.72GB, "
     "MaxMemAllocated=7.0GB", 200, 82.74966845933933,
     "microsoft/DeepSpeedExamples data_efficiency/vit_finetuning/out/cifar/training.log"),
    # the older wording and the newer one still read
    ("[2022-03-11 02:06:58,985] [INFO] [timer.py:189:stop] 0/40, SamplesPerSec=83.48609168106144,"
     " MemAllocated=0.26GB, MaxMemAllocated=9.02GB", 40, 83.48609168106144,
     "deepspeedai/DeepSpeed#1825"),
]


@pytest.mark.parametrize("line, iteration, rate, source", DS_TIMER_07,
                         ids=[r[3] for r in DS_TIMER_07])
def test_deepspeed_timer_reads_the_interval_rate(line: str, iteration: int, rate: float,
                                                 source: str) -> None:
    row = parse_deepspeed_timer(line)
    assert row == {"iteration": iteration, "samples_per_s": rate}, source


# lines that show a configured schedule: (line, the schedule rows, source)
SCHEDULE_LINES = [
    ("[2022-11-22 10:02:19,893] [INFO] [config.py:999:print]   data_efficiency_config ....... "
     "{'enabled': True, 'seed': 1234, 'data_sampling': {'enabled': False, 'num_epochs': 1000, "
     "'num_workers': 0, 'curriculum_learning': {'enabled': False}}, 'data_routing': {'enabled': "
     "True, 'random_ltd': {'enabled': True, 'layer_token_lr_schedule': {'enabled': False}}}}",
     [("schedule:random_ltd", 1.0)],
     "microsoft/DeepSpeedExamples data_efficiency/vit_finetuning/out/cifar/training.log"),
    ("0 epoch at time 185.19143652915955s | reserved_length 48", [("schedule:seq_len", 48.0)],
     "microsoft/DeepSpeedExamples data_efficiency/vit_finetuning/out/cifar/training.log"),
    ("'step':10, 'ppl': 61.772465037680455, 'seq_len': 264, 'consume layer-tokens': 110912",
     [("schedule:seq_len", 264.0)],
     "microsoft/DeepSpeedExamples data_efficiency/gpt_finetuning/output/check_base/training.log"),
    # Megatron-DeepSpeed's step line as its format string writes it, and its argument dump
    # (megatron/training.py, megatron/arguments.py)
    (" iteration      200/  500000 | consumed samples:        51200 | elapsed time per iteration "
     "(ms): 612.3 | learning rate: 1.000E-04 | global batch size:   256 | lm loss: 7.102E+00 | "
     "loss scale: 65536.0 | curriculum seqlen:    80 | number of skipped iterations:   0 |",
     [("schedule:seq_len", 80.0)], "microsoft/Megatron-DeepSpeed megatron/training.py"),
    ("  random_ltd ...................................... True", [("schedule:random_ltd", 1.0)],
     "microsoft/Megatron-DeepSpeed megatron/arguments.py"),
    # a schedule turned off is none
    ("  random_ltd ...................................... False", [], "Megatron-DeepSpeed args"),
    ("  rampup_batch_size ............................... None", [], "NVIDIA/Megatron-LM args"),
    ("[2022-11-24 00:51:45,965] [INFO] [config.py:999:print]   curriculum_enabled_legacy .... "
     "False", [], "microsoft/DeepSpeedExamples check_base"),
]


@pytest.mark.parametrize("line, rows, source", SCHEDULE_LINES, ids=[r[2] for r in SCHEDULE_LINES])
def test_schedule_lines(line: str, rows: list[tuple[str, float]], source: str) -> None:
    got = parse_schedule(line) or []
    assert [(r["metric"], r["value"]) for r in got] == rows, source


def _timer(step: int, rate: float) -> str:
    return (f"[2022-11-22 10:03:37,042] [INFO] [timer.py:198:stop] 0/{step}, "
            f"RunningAvgSamplesPerSec={rate + 5}, CurrSamplesPerSec={rate}, MemAllocated=0.72GB")


# the same gradual slide, with and without the schedule that explains it
SLIDE = [82.7, 74.4, 68.0, 63.9, 59.2, 56.1, 51.9, 48.9, 47.3, 43.9, 41.7, 40.6, 37.2, 36.0,
         35.4, 34.1, 31.8, 31.3, 29.1, 28.0, 28.2, 28.1, 28.3, 28.0, 28.2, 28.1, 28.2]


@pytest.mark.parametrize("scheduled", [True, False])
def test_a_slide_the_schedule_causes_is_no_degradation(tmp_path: Path, scheduled: bool) -> None:
    lines = []
    for i, rate in enumerate(SLIDE):
        lines.append(_timer(200 * (i + 1), rate))
        if scheduled and i % 2 == 0:
            lines.append(f"{i // 2} epoch at time 185.1s | reserved_length {min(48 + 16 * i, 197)}")
    log = tmp_path / "training.log"
    log.write_text("\n".join(lines) + "\n")
    a = tp.analyse(traindoc.load(log))
    rep = tp.report(a)
    assert a.metric == "samples_per_s"
    if scheduled:
        assert a.change is None and a.scheduled is not None
        assert rep.facts["change_iteration"] is None and rep.facts["drop_pct"] is None
        assert any(f.id == "scheduled_slide" for f in rep.findings)
    else:
        assert a.change is not None and a.scheduled is None
        assert rep.facts["drop_pct"] is not None


# an epoch's header line, then its result line with no counter of its own (easytorch, the
# trainer of BasicTS and its descendants): one record, numbered by the epoch, the time its
# training took the epoch's time. (header, result, epoch, seconds, loss, source)
EPOCH_HEADED = [
    ("2023-08-27 17:28:46,620 - easytorch-training - INFO - Epoch 1 / 200",
     "2023-08-27 17:33:42,144 - easytorch-training - INFO - Result <train>: [train_time: 295.52 "
     "(s), lr: 1.00e-03, train_MAE: 49.8610, train_RMSE: 71.9285, train_MAPE: 0.8201]",
     1, 295.52, None, "GestaltCogTeam/STEP training_logs/TSFormer_PEMS03.log"),
    ("2022-02-28 23:42:10,273 - easytorch-training - INFO - epoch 2 / 100",
     "2022-02-28 23:52:18,158 - easytorch-training - INFO - train:: [train_time: 607.88 (s), lr: "
     "1.00e-02, train_MAE: 0.8641, train_RMSE: 1.5699, train_MAPE: 0.0164]",
     2, 607.88, None, "GestaltCogTeam/BasicTS results/DCRNN/DCRNN_PEMS-BAY_training_log"),
    ("2025-06-15 18:30:12,136 - easytorch-training - INFO - Epoch 1 / 100",
     "2025-06-15 18:36:14,116 - easytorch-training - INFO - Result <train>: [train/time: 361.98 "
     "(s), train/lr: 1.00e-03, train/loss: 3.7662, train/MAE: 3.7662, train/MAPE: 10.8994, "
     "train/RMSE: 7.3284]", 1, 361.98, 3.7662,
     "a committed BasicTS log of GraphLLM on METR-LA (2025-06-15)"),
]


@pytest.mark.parametrize("engine", ["plain", "fast"])
@pytest.mark.parametrize("header, result, epoch, seconds, loss, source", EPOCH_HEADED,
                         ids=[r[5] for r in EPOCH_HEADED])
def test_an_epoch_header_numbers_the_result_line_after_it(
        tmp_path: Path, engine: str, header: str, result: str, epoch: int, seconds: float,
        loss: float | None, source: str) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join([header, result, "2023-08-27 17:33:42,146 - easytorch-training - "
                              "INFO - Start validation."]) + "\n")
    it = traindoc.load(str(log), engine=engine).iterations
    assert list(it["iteration"]) == [epoch], source
    assert it["elapsed_s"].iloc[0] == pytest.approx(seconds)
    assert (it["loss"].iloc[0] == pytest.approx(loss)) if loss else it["loss"].isna().all()


# a header followed by a line with a counter or a bar of its own is no record with it (Keras)
KERAS_EPOCH = ["Epoch 1/10",
               "1490/1490 [==============================] - 25s 17ms/step - loss: 0.3125 - "
               "accuracy: 0.9093"]


def test_a_header_is_not_joined_to_a_line_with_its_own_counter(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(KERAS_EPOCH) + "\n")
    inc = traindoc.load(str(log))
    assert len(inc.progress) == 1 and int(inc.progress["step"].iloc[0]) == 1490


def test_a_header_is_not_joined_to_a_validation_line(tmp_path: Path) -> None:
    # NVIDIA/apex#493 (corpus loss_spike-apex-493): the validation line names its own iteration
    log = tmp_path / "train.log"
    log.write_text("Epoch: 11\nValidation loss 6312:  0.149928  \nEpoch 11 time 30.503 lr 0.001\n")
    it = traindoc.load(str(log)).iterations
    assert 11 not in set(it["iteration"].dropna().astype(int))
