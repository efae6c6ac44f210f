"""Throughput families from blind intake (issue 26, round four), each with real lines of two
sources: DeepSpeed's ThroughputTimer in its 0.7 wording; a slide the run's own configured
schedule causes (random-LTD, a sequence-length curriculum), which is no degradation; an epoch's
header line and its result line (easytorch); the first steps logged one by one before the
logging interval (parameter-golf), which are the start-up, not a level the run held."""

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
     # (the line cut after its first random_ltd keys and its braces closed)
     [("schedule:random_ltd", 1.0)],
     "microsoft/DeepSpeedExamples data_efficiency/vit_finetuning/out/cifar/training.log"),
    ("0 epoch at time 185.19143652915955s | reserved_length 48", [("schedule:seq_len", 48.0)],
     "microsoft/DeepSpeedExamples data_efficiency/vit_finetuning/out/cifar/training.log"),
    ("'step':10, 'ppl': 61.772465037680455, 'seq_len': 264, 'consume layer-tokens': 110912",
     [("schedule:seq_len", 264.0)],
     "microsoft/DeepSpeedExamples data_efficiency/gpt_finetuning/output/check_base/training.log"),
    # Megatron-DeepSpeed's step line and argument-dump line as its code writes them (not copied
    # from a log: megatron/training.py's ' curriculum seqlen: {:5d} |', the args dump's
    # "random_ltd ....... False" with the flag on)
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
    # a batch size that grows in stages, in the hyperparameters a run prints
    ("    train_bs_schedule: tuple = (8 * 2048 * 8, 16 * 2048 * 8, 24 * 2048 * 8)",
     [("schedule:batch_size_rampup", 1.0)],
     "KellerJordan/modded-nanogpt records/track_1_short/2025-11-29_BatchSizeSchedule/"
     "10e8f7c6-7175-4467-bdb0-a5de25d771a6.txt"),
    ("TRAIN_BS_SCHEDULE=18432,36864,55296 TRAIN_BS_EXTENSION=55296 \\",
     [("schedule:batch_size_rampup", 1.0)], "a modded-nanogpt fork's run script (its env line)"),
    ("    TrainingStage(duration=1/3, train_max_seq_len=896, batch_size=8 * 2048 * 8, "
     "window_sizes=(1, 3), lr_mul=1.0,", [("schedule:batch_size", 131072.0)],
     "KellerJordan/modded-nanogpt records/track_1_short/2026-06-11_RecursiveFromBest/"
     "baseline_pr299/0dd9e4b4-43ba-4beb-b041-b5ff694d678f.txt"),
    # a sequence length warmed up in stages
    ("    sequence_warmup_intervals: int = 1024", [("schedule:seq_len_warmup", 1.0)],
     "a JAX modded-nanogpt port's echoed Config (corpus loss_spike-modded-nanogpt-jax-sub10m)"),
    ("seq_length_warmup = SeqLengthWarmup(duration=0.5,", [("schedule:seq_len_warmup", 1.0)],
     "mosaicml/composer composer/algorithms/seq_length_warmup docstring"),
    ("    sequence_warmup_intervals: int = 0", [], "the same key, off"),
    ("    n_warmup_iters: int = 0", [], "a learning-rate warmup is no schedule of work"),
    # one size is no schedule; code that reads the schedule states none
    ("\tbatch_size_schedule: [8]", [], "magenta gansynth's printed hparams"),
    ("    bs_idx = int(len(args.train_bs_schedule) * x)", [], "modded-nanogpt's get_bs"),
    ("TRAIN_BS_SCHEDULE=55296,55296 TRAIN_BS_EXTENSION=55296", [], "a flat schedule"),
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
    assert list(it["total_iterations"]) == [int(header.rsplit("/", 1)[1])]  # the epochs
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
    # the header is not joined: the loss stays on 6312; a bare "Epoch: 11" may stand alone as the
    # epoch reached (event "epoch", no metric: metric_lines._epoch_begun), never with that loss
    assert list(it.loc[it["iteration"] == 6312, "eval_loss"]) == [pytest.approx(0.149928)]
    at_11 = it[it["iteration"] == 11]
    assert at_11[["loss", "eval_loss"]].isna().all().all() and set(at_11["event"]) <= {"epoch"}


# the first steps logged one by one, then every 500: (lines, the rate the run holds, source)
STARTUP = [
    (["1/20000 train_loss: 8.3164 train_time: 0.0m tok/s: 8671604",
      "2/20000 train_loss: 12.3549 train_time: 0.0m tok/s: 8494942",
      "3/20000 train_loss: 10.8857 train_time: 0.0m tok/s: 8391193",
      "4/20000 train_loss: 9.1183 train_time: 0.0m tok/s: 8330436",
      "5/20000 train_loss: 7.8761 train_time: 0.0m tok/s: 8296038",
      "500/20000 train_loss: 3.0237 train_time: 0.8m tok/s: 7997340",
      "1000/20000 train_loss: 3.0115 train_time: 1.6m tok/s: 7982554",
      "1500/20000 train_loss: 2.9233 train_time: 2.5m tok/s: 7976019",
      "2000/20000 train_loss: 2.7633 train_time: 3.3m tok/s: 7971600",
      "2500/20000 train_loss: 2.7678 train_time: 4.1m tok/s: 7968709",
      "3000/20000 train_loss: 2.7391 train_time: 4.9m tok/s: 7961596",
      "3500/20000 train_loss: 2.6642 train_time: 5.8m tok/s: 7956506",
      "4000/20000 train_loss: 2.6710 train_time: 6.6m tok/s: 7953531",
      "4500/20000 train_loss: 2.6286 train_time: 7.4m tok/s: 7952173",
      "5000/20000 train_loss: 2.5969 train_time: 8.2m tok/s: 7950026",
      "5500/20000 train_loss: 2.5668 train_time: 9.1m tok/s: 7948108"],
     (7.94e6, 7.99e6),
     "openai/parameter-golf records/track_10min_16mb/2026-04-01_Vocab4096_MLPMult4_WD085/"
     "train_seed1337.log"),
    (["step:3/20000 train_loss:9.9454 train_time:249ms step_avg:82.87ms",
      "step:4/20000 train_loss:9.2262 train_time:317ms step_avg:79.25ms",
      "step:5/20000 train_loss:8.5683 train_time:385ms step_avg:77.07ms",
      "step:6/20000 train_loss:8.3624 train_time:453ms step_avg:75.56ms",
      "step:7/20000 train_loss:8.0380 train_time:522ms step_avg:74.54ms",
      "step:8/20000 train_loss:7.5631 train_time:590ms step_avg:73.81ms",
      "step:9/20000 train_loss:7.5490 train_time:659ms step_avg:73.22ms",
      "step:10/20000 train_loss:7.3676 train_time:727ms step_avg:72.73ms",
      "step:500/20000 train_loss:3.4036 train_time:34678ms step_avg:69.36ms",
      "step:1000/20000 train_loss:3.1106 train_time:69389ms step_avg:69.39ms",
      "step:1500/20000 train_loss:3.3323 train_time:104038ms step_avg:69.36ms",
      "step:2000/20000 train_loss:3.1749 train_time:138742ms step_avg:69.37ms",
      "step:2500/20000 train_loss:3.3292 train_time:173467ms step_avg:69.39ms",
      "step:3000/20000 train_loss:3.0523 train_time:208181ms step_avg:69.39ms",
      "step:3500/20000 train_loss:3.2141 train_time:242894ms step_avg:69.40ms",
      "step:4000/20000 train_loss:3.1563 train_time:277617ms step_avg:69.40ms",
      "step:4500/20000 train_loss:3.2063 train_time:312361ms step_avg:69.41ms",
      "step:5000/20000 train_loss:3.0611 train_time:347087ms step_avg:69.42ms",
      "step:5500/20000 train_loss:3.1159 train_time:381824ms step_avg:69.42ms",
      "step:6000/20000 train_loss:3.0959 train_time:416539ms step_avg:69.42ms",
      "step:6500/20000 train_loss:3.0593 train_time:451276ms step_avg:69.43ms",
      "step:7000/20000 train_loss:2.9916 train_time:485995ms step_avg:69.43ms",
      "step:7500/20000 train_loss:3.0524 train_time:520711ms step_avg:69.43ms",
      "step:8000/20000 train_loss:3.0749 train_time:555541ms step_avg:69.44ms",
      "step:8500/20000 train_loss:2.9149 train_time:590583ms step_avg:69.48ms"],
     (0.0693, 0.0695),
     "a parameter-golf record's README transcript (seed 4, 8635 steps; its train lines)"),
]


@pytest.mark.parametrize("lines, rate, source", STARTUP, ids=[r[2] for r in STARTUP])
def test_the_steps_logged_one_by_one_at_the_start_are_set_aside(
        tmp_path: Path, lines: list[str], rate: tuple[float, float], source: str) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    a = tp.analyse(traindoc.load(log))
    rep = tp.report(a)
    early = a.series["iteration"] < 250
    assert early.sum() >= 2 and set(a.set_aside()["iteration"]) >= set(a.series["iteration"][early])
    assert a.change is None, source
    assert rate[0] <= rep.facts["baseline"] <= rate[1], source


def test_the_header_needle_reads_no_other_line(tmp_path: Path) -> None:
    # MLPerf v1.0 Dell ResNet result (corpus gpu_crash-training-results-v1-0-dell-2xxe8545-…):
    # MXNet's "Time cost" is the epoch's time, no loss, and no header follows it
    log = tmp_path / "train.log"
    log.write_text("2021-05-17 06:51:45,778 Node[0] Epoch[0] Time cost=50.022\n"
                   "2021-05-17 06:52:36,157 Node[0] Epoch[1] Time cost=50.379\n")
    assert not len(traindoc.load(str(log)).iterations)


# modded-nanogpt's staged batch size (8, 16, 24 x 2048 x 8 tokens): the step time climbs
# 29 -> 59 -> 84 ms at the stage boundaries, by design; without the stage table, a slowdown
STAGES = ["TRAINING_STAGES = [",
          "    TrainingStage(duration=1/3, train_max_seq_len=896, batch_size=8 * 2048 * 8, "
          "window_sizes=(1, 3), lr_mul=1.0,",
          "    TrainingStage(duration=1/3, train_max_seq_len=2048, batch_size=16 * 2048 * 8, "
          "window_sizes=(3, 7), lr_mul=1.52,  # (16/8)**0.6",
          "    TrainingStage(duration=1/3, train_max_seq_len=2048, batch_size=24 * 2048 * 8, "
          "window_sizes=(5, 11), lr_mul=1.73,  # (24/8)**0.5"]


@pytest.mark.parametrize("scheduled", [True, False])
def test_a_staged_batch_size_is_no_degradation(tmp_path: Path, scheduled: bool) -> None:
    lines = list(STAGES) if scheduled else []
    t = 0
    for step in range(1, 301):
        t += 29 + 3 * (step % 2) if step <= 100 else 59 + 2 * (step % 2) if step <= 200 else 84
        lines.append(f"step:{step}/300 train_time:{t}ms step_avg:{t / step:.2f}ms")
    log = tmp_path / "run.txt"
    log.write_text("\n".join(lines) + "\n")
    a = tp.analyse(traindoc.load(log))
    if scheduled:
        assert a.change is None and a.scheduled is not None
        assert any(f.id == "scheduled_slide" for f in tp.report(a).findings)
    else:
        assert a.change is not None and a.scheduled is None


def test_a_stage_boundary_is_a_step_the_schedule_makes(tmp_path: Path) -> None:
    # a JAX modded-nanogpt port (corpus loss_spike-modded-nanogpt-jax-sub10m): 3.07 s per ten
    # steps at seq_len 1024, 4.23 s from its one stage boundary at seq_len 2048
    head = ["    min_sequence_length: int = 1024", "    max_sequence_length: int = 2048",
            "    sequence_warmup_intervals: int = 1024"]
    for scheduled in (True, False):
        lines = list(head) if scheduled else []
        t = 0.0
        for step in range(9, 1000, 10):
            t += 3.07 if step < 500 else 4.23
            lines.append(f"[METRICS (1 step stale)] step: {step}  |  time: 2025-08-20 "
                         f"13:{40 + int(t) // 60:02d}:{t % 60:09.6f}  |  loss: 3.6")
        log = tmp_path / f"sub10m-{scheduled}.txt"
        log.write_text("\n".join(lines) + "\n")
        a = tp.analyse(traindoc.load(log))
        assert a.metric == "s_per_iteration"
        if scheduled:
            assert a.change is None and a.scheduled is not None and a.scheduled.shape == "step"
        else:
            assert a.change is not None and a.change.shape == "step"
