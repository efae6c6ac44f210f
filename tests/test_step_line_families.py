"""Step-line families of intake batch 2026-11-26e, each with a real line of the corpus case and
one of another source: a log record fused after a tqdm bar, a step printed as a float, an epoch
that is a line's only counter (a step only where the log counts no steps), PaddlePaddle's
ips/batch_cost, LeRobot's abbreviated step and update time, LLaMA-Factory's "H:MM:SS" clock,
and a coarse clock's one-step wander."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from traindoc.diagnose.common import epoch_counted
from traindoc.diagnose.throughput.change import Change, resolution, within_resolution
from traindoc.parse.metric_lines import parse_metric_line

NAN = float("nan")

# (line, expected columns, source)
LINES = [
    # a log record written while a tqdm bar was on screen: the record after the bar's "]"
    ("  4%|▍         | 4/100 [00:04<01:12,  1.32it/s][2024-04-02 01:59:46][INFO][trainer:837] - "
     "step=5 loss=3.6606 dt=108.1093 dtf=4.6110 dtb=100.7493 sps=73.9992 mtps=1.2124 "
     "mfu=-100.0000 train_loss=4.2922 val_loss=4.2905",
     {"iteration": 5, "loss": 3.6606}, "kharelb/ai-science-training-series homework_6.md (corpus)"),
    ("Training LSTM:   5%|███████          | 1/20 [00:02<00:41,  2.17s/it]Epoch 02 | "
     "train_loss=0.4739 train_acc=0.7368 | val_loss=0.4487 val_acc=0.7676",
     {"iteration": 2, "epoch": 2.0, "loss": 0.4739, "eval_loss": 0.4487, "event": "epoch"},
     "a committed LSTM classifier run log (code search)"),
    # a whole step printed as a float
    ("[2023-01-11 13:28:14,036][mlprof.trainers.pytorch.trainer][INFO] - [0] [1/10: 1280/1875 "
     "(62%)] epoch=1.0000 step=6.0000 dt=0.0025 batch_acc=0.5469 batch_loss=0.0063 acc=0.2709 "
     "running_loss=0.0066", {"iteration": 6, "loss": 0.0063},
     "saforem2/vault train-deepspeed-thetaGPU.md (corpus)"),
    # the epoch as the only counter
    ("Epoch 1081 loss 1.2608 | train 2.1s", {"iteration": 1081, "loss": 1.2608, "event": "epoch"},
     "gaggenwaschke/NoProp logs/log_cifar100.md (corpus)"),
    ("Time: 2024-10-31 18:32:24; Epoch: 69; LR, 2.9999999999999997e-05; pid_loss: nan;  "
     "pid_loss_proj: nan;  triplet_loss: nan;", {"iteration": 69, "loss": NAN, "event": "epoch"},
     "nengdong96/CSDN#6 (corpus; a date is no time per step)"),
    ("Epoch 1/20, Loss: 6.3214, Accuracy: 10.32%, Time: 2.31s",
     {"iteration": 1, "loss": 6.3214, "elapsed_s": 2.31, "event": "epoch"},
     "anshumansharma0512/Deep-Learning-Lab Experiment4/output.md"),
    # the time an epoch's training took, on a row counted by its epoch, is its time
    ("epoch=0/250,total_loss=1.870129, 1 epoch time=61.985902, left time=4.304577",
     {"iteration": 0, "loss": 1.870129, "elapsed_s": 61.985902, "event": "epoch"},
     "the ABO part-segmentation DGCNN nohup.log (corpus throughput-abo-partseg-dgcnn-chair-nohup)"),
    ("[Epoch 8] Loss: 1371.7, Epoch Time: 443.10s",
     {"iteration": 8, "loss": 1371.7, "elapsed_s": 443.1, "event": "epoch"},
     "lancedb/lance-distributed-training README (corpus; beside its bars no step, epoch_counted)"),
    ("epoch: 3451 loss: nan", {"iteration": 3451, "loss": NAN, "event": "epoch"},
     "GradNorm (TF) #17 (corpus; a kept pattern before the generic reader took the epoch)"),
    ("Epoch [5/50], Train Loss: 0.6917, Val Loss: 0.6491",
     {"iteration": 5, "loss": 0.6917, "eval_loss": 0.6491, "event": "epoch"},
     "jimchen2/indoor_localization_oxford_dataset docs/easy_lstm.md"),
    # PaddlePaddle: ips is samples per second (tokens where its unit says so), batch_cost the step
    ("[2021/02/23 22:53:39] root INFO: epoch: [5/500], iter: 11560, lr: 0.001000, loss: 5.114486, "
     "acc: 0.604167, norm_edit_dis: 0.869732, reader_cost: 3.18704 s, batch_cost: 3.77421 s, "
     "samples: 960, ips: 25.43577",
     {"iteration": 11560, "samples_per_s": 25.43577, "elapsed_s": 3.77421},
     "PaddlePaddle/PaddleOCR#2083 (corpus)"),
    ("2021-12-27 23:13:18,619 - Tiny-Face-Paddle/trainer.py[line:27] - INFO: Epoch: [0][0/1074]\t"
     "avg_reader_cost: 25.66170 sec\tavg_batch_cost: 29.31611 sec\tavg_samples: 12.0 samples\t"
     "avg_ips 0.40933 images/sec\tloss_cls: 101.686981\tloss_reg: 1.730689",
     {"iteration": 0, "samples_per_s": 0.40933, "elapsed_s": 29.31611},
     "WenmuZhou/Tiny-Face-Paddle README.md"),
    ("[2022-09-21 05:42:27,492] [    INFO] - [train] epoch: 0, batch: 1, loss: 10.997043610, "
     "avg_batch_cost: 0.51164 sec, speed: 1.95 step/s, ips_total: 16011 tokens/s, ips: 16011 "
     "tokens/s, learning rate: 2.77778e-08",
     {"loss": 10.99704361, "tokens_per_s": 16011.0, "samples_per_s": None},
     "PaddlePaddle/PaddleFleetX GPT pretraining docs"),
    # LeRobot: "step:1K" (thousands, rounded), "grdn" the grad norm, "updt_s" the update's time
    ("INFO 2026-06-12 10:58:46 ot_train.py:357 step:1K smpl:32K ep:101 epch:2.53 loss:1.226 "
     "grdn:34.825 lr:1.0e-05 updt_s:0.502 data_s:0.010",
     {"iteration": 1000, "grad_norm": 34.825, "elapsed_s": 0.502},
     "lerobot training_err.txt (corpus throughput-lerobot-training-err)"),
    ("INFO 2024-08-14 13:35:12 ts/train.py:192 step:0 smpl:64 ep:1 epch:0.00 loss:1.112 "
     "grdn:15.387 lr:2.0e-07 updt_s:1.738 data_s:4.774",
     {"iteration": 0, "loss": 1.112, "grad_norm": 15.387, "elapsed_s": 1.738},
     "huggingface/lerobot training tutorial (examples, 'Typical logs and metrics')"),
    # LLaMA-Factory's trainer_log.jsonl: the clock "H:MM:SS" is the training time so far
    ('{"current_steps": 10, "total_steps": 8660, "loss": 2.4977, "learning_rate": '
     '5.773672055427253e-07, "epoch": 0.004618937644341801, "percentage": 0.12, "elapsed_time": '
     '"0:00:24", "remaining_time": "5:58:33", "throughput": "0.00", "total_tokens": 0}',
     {"iteration": 10, "train_time_s": 24.0, "tokens_per_s": None, "samples_per_s": None},
     "syGOAT/Mistral-v0.2-Translator-bf16 trainer_log.jsonl (corpus)"),
    ('{"current_steps": 3210, "total_steps": 3235, "loss": 4.4577, "eval_loss": null, '
     '"predict_loss": null, "reward": null, "learning_rate": 7.367495402210711e-09, "epoch": 0.99, '
     '"percentage": 99.23, "elapsed_time": "5:14:24", "remaining_time": "0:02:26"}',
     {"iteration": 3210, "train_time_s": 5 * 3600 + 14 * 60 + 24.0, "loss": 4.4577},
     "hiyouga/LlamaFactory#774"),
]


@pytest.mark.parametrize("line, expected, source", LINES, ids=[r[2] for r in LINES])
def test_family_lines(line: str, expected: dict, source: str) -> None:
    row = parse_metric_line(line)
    assert row is not None
    for k, v in expected.items():
        got = row.get(k)
        if isinstance(v, float) and math.isnan(v):
            assert got is not None and math.isnan(got), k
        elif isinstance(v, float):
            assert got == pytest.approx(v), k
        else:
            assert got == v, k


def test_an_epoch_summary_is_an_epoch_row_not_a_step() -> None:
    # a row marked "epoch": a step only where the log counts no steps (``epoch_counted``)
    assert parse_metric_line("Epoch 3 finished, loss 2.31") == {
        "iteration": 3, "epoch": 3.0, "loss": 2.31, "event": "epoch"}


def test_a_bar_alone_is_no_step_line() -> None:
    assert parse_metric_line("270/9847 [05:50<3:17:42, 1.24s/it]") is None
    assert parse_metric_line(" 40%|████      | 4/10 [00:04<00:06,  1.01it/s][INFO] saving") is None


def _table(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["iteration", "loss", "event"]).astype(
        {"iteration": "Int64", "loss": "Float64", "event": "string"})


def test_epoch_rows_are_steps_only_where_nothing_counts_steps() -> None:
    by_epoch = _table([{"iteration": 1, "loss": 2.0, "event": "epoch"},
                       {"iteration": 2, "loss": 1.5, "event": "epoch"}])
    assert epoch_counted(by_epoch)["event"].isna().all()
    mixed = _table([{"iteration": 100, "loss": 2.0}, {"iteration": 1, "loss": 1.9, "event": "epoch"},
                    {"iteration": 200, "loss": 1.8}])
    assert epoch_counted(mixed)["iteration"].tolist() == [100, 200]


def test_per_batch_lines_naming_only_their_epoch_are_counted(tmp_path: Path) -> None:
    import traindoc
    from traindoc.diagnose.common import training_steps

    # 1025378573/T5-Finetune train.log (the corpus's throughput-t5-finetune-train-log): a
    # custom loop's line after every batch, the epoch its only counter, then the epoch's
    # summary in another wording (no batch of its own)
    rows = [("05:16:20,962", 1, "Batch loss: 12.1336"), ("05:16:22,229", 1, "Batch loss: 14.9769"),
            ("05:16:23,493", 1, "Batch loss: 12.9075"), ("05:16:24,763", 1, "Batch loss: 10.1722"),
            ("05:16:24,764", 1, "Average Train Loss: 1.6334"),
            ("05:16:25,027", 2, "Batch loss: 13.5579"), ("05:16:26,293", 2, "Batch loss: 10.9222"),
            ("05:16:27,566", 2, "Batch loss: 11.9728"), ("05:16:28,836", 2, "Batch loss: 10.8892"),
            ("05:16:28,837", 2, "Average Train Loss: 1.0334")]
    (tmp_path / "train.log").write_text("".join(
        f"2025-03-02 {t} - INFO - Epoch {e} - {msg}\n" for t, e, msg in rows))
    steps = training_steps(traindoc.load(tmp_path / "train.log"))
    assert steps["iteration"].tolist() == list(range(1, 9))
    assert steps["epoch"].tolist() == [1.0] * 4 + [2.0] * 4
    # one line per epoch ("Epoch: 0, Loss: 0.68, Accuracy: 0.57"): the epochs are the steps
    (tmp_path / "epochs.log").write_text("".join(
        f"Epoch: {e}, Loss: 0.{68 - e}, Accuracy: 0.57\n" for e in range(5)))
    assert training_steps(traindoc.load(tmp_path / "epochs.log"))["iteration"].tolist() == [
        0, 1, 2, 3, 4]


def test_one_step_of_a_coarse_clock_is_no_change() -> None:
    # whole seconds every 10 steps: 2.3 against 2.4 s per step is the clock's rounding
    values = np.array([2.3, 2.4, 2.3, 2.4, 2.4, 2.5, 2.4, 2.4, 2.3, 2.4])
    assert resolution(values) == pytest.approx(0.1)
    assert within_resolution(Change(5, 2.3, 2.4, 4.2, 5.0, 0.05, 5, 5), values)
    assert not within_resolution(Change(5, 2.3, 4.6, 50.0, 5.0, 0.05, 5, 5), values)
    fine = np.array([2.301, 2.312, 2.297, 2.405, 2.398, 2.41])
    assert not within_resolution(Change(3, 2.30, 2.40, 4.2, 5.0, 0.05, 3, 3), fine)


def test_an_epochs_time_is_the_series_only_where_no_bar_counts_steps(tmp_path: Path) -> None:
    import traindoc
    from traindoc.diagnose.throughput.series import steps_with_seconds

    # the lance README's training output (corpus timeout-lance-distributed-training-readme):
    # each epoch's bar at 1.48 s/it, then "[Epoch N] Loss: …, Epoch Time: 443.10s"
    lance = ["Epoch 1/10: 300it [07:12,  1.44s/it, loss=1.07]",
             "[Epoch 0] Loss: 980.4352, Epoch Time: 432.61s",
             "Epoch 2/10: 300it [07:24,  1.48s/it, loss=2.49]",
             "[Epoch 1] Loss: 1200.9648, Epoch Time: 444.51s",
             "Epoch 3/10: 300it [07:22,  1.48s/it, loss=3.24]",
             "[Epoch 2] Loss: 1324.9992, Epoch Time: 442.84s"]
    (tmp_path / "lance.log").write_text("\n".join(lance) + "\n")
    assert not len(steps_with_seconds(traindoc.load(str(tmp_path / "lance.log"),
                                                    progress=False)))
    # the same epoch lines alone (ABO part-seg's nohup.log): the epochs are the steps
    abo = ["epoch=0/250,total_loss=1.870129, 1 epoch time=61.985902, left time=4.304577",
           "epoch=1/250,total_loss=1.270303, 1 epoch time=61.482063, left time=4.252509",
           "epoch=2/250,total_loss=1.120862, 1 epoch time=61.579580, left time=4.242149"]
    (tmp_path / "nohup.log").write_text("\n".join(abo) + "\n")
    it = steps_with_seconds(traindoc.load(str(tmp_path / "nohup.log"), progress=False))
    assert list(it["elapsed_s"].astype(float).round(2)) == [61.99, 61.48, 61.58]
