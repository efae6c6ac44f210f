"""The last step before a hang, from every tqdm layout and from HF Trainer dicts: each family on
real lines from two sources."""

from __future__ import annotations

from pathlib import Path

import pytest

import traindoc
from traindoc.diagnose import gpu_crash
from traindoc.diagnose.common import last_progress
from traindoc.parse.progress import parse_keras, parse_metric_logger_eval, parse_tqdm


@pytest.mark.parametrize(("line", "step", "total", "desc"), [
    # horovod/horovod#334: the bar's block characters lost in the paste, a warning glued after it
    ("''' Train Epoch     #73:  82% 1025/1252 [35:04<13:48,  3.65s/it, loss=0.946, accuracy=77]"
     "WARNING: One or more tensors were submitted to be reduced", 1025, 1252, "Train Epoch     #73"),
    # ultralytics/yolov5#4409: a narrow console, no bar after a long description
    ("               Class     Images     Labels          P          R     mAP@.5 mAP@.5:.95:  72%"
     " 23/32 [01:07<00:25,  2.80s/it]", 23, 32, None),
])
def test_bar_without_the_bar(line: str, step: int, total: int, desc: str | None) -> None:
    row = parse_tqdm(line)
    assert row is not None and (row["step"], row["total"]) == (step, total)
    if desc is not None:
        assert row["desc"].endswith(desc)


@pytest.mark.parametrize(("line", "step", "desc"), [
    # lancedb/lance-distributed-training README.md: an iterable without len(), NCCL glued after
    ("Epoch 10/10: 240it [05:55,  1.47s/it, loss=5.46][rank0]:[E709 17:05:38.162555850 "
     "ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout", 240,
     "Epoch 10/10"),
    # tqdm/tqdm#750: journald's prefix and a literal ^M, the rate not yet known
    ("May 23 17:34:32 python[15522]: ^MLoading persons: 0it [00:00, ?it/s]", 0, None),
])
def test_bar_without_a_total(line: str, step: int, desc: str | None) -> None:
    row = parse_tqdm(line)
    assert row is not None and row["step"] == step and row["total"] is None
    if desc is not None:
        assert row["desc"] == desc


@pytest.mark.parametrize(("line", "step", "total", "rate", "desc"), [
    # HEISENYAN/openpi train_aloha_folding.out: openpi's headless bar, s/it while it warms up
    ("02:03:13.439 [I] Progress on: 5.00it/200kit rate:1.3s/it remaining:71:35:34 elapsed:00:10 "
     "postfix:- (8428:tqdm_logging.py:145)", 5, 200_000, 1 / 1.3, None),
    ("02:03:24.025 [I] Progress on: 20.0it/200kit rate:1.4it/s remaining:39:21:56 elapsed:00:20 "
     "postfix:- (8428:tqdm_logging.py:145)", 20, 200_000, 1.4, None),
    # tradingstrategy-ai/tqdm-loggable README.md: a description, a thousands comma in the rate
    ("tqdm_logging.py     :139  2022-09-21 12:13:56,307 Progress on:Sample progress "
     "21.0kit/60.0kit rate:1,982.9it/s remaining:00:19 elapsed:00:10 postfix:Current "
     "time=2022-09-21 10:13:55.801787", 21_000, 60_000, 1982.9, "Sample progress"),
])
def test_tqdm_loggable_record(line: str, step: int, total: int, rate: float,
                              desc: str | None) -> None:
    row = parse_tqdm(line)
    assert row is not None and (row["step"], row["total"], row["desc"]) == (step, total, desc)
    assert row["rate"] == pytest.approx(rate)


def test_tqdm_loggable_record_before_the_first_step() -> None:
    # tradingstrategy-ai/tqdm-loggable README.md: no count and no rate yet
    assert parse_tqdm("Progress on:Sample progress -/60000 rate:- remaining:? elapsed:00:00 "
                      "postfix:-") is None


def test_other_counters_are_no_bar() -> None:
    # a datasets/vLLM counter in other units is not a training loop's bar
    assert parse_tqdm("Generating train split: 1000 examples [00:00, 2000.0 examples/s]") is None
    assert parse_tqdm("loss 82% of 10/20 [done]") is None


def test_the_last_bar_without_total_is_the_one_that_stopped(tmp_path: Path) -> None:
    # lancedb/lance-distributed-training README.md: epoch 9 ran 300 batches, epoch 10 stopped
    p = tmp_path / "job.log"
    p.write_text("Epoch 9/10: 300it [07:24,  1.48s/it, loss=2.29]\n"
                 "Epoch 10/10: 240it [05:55,  1.47s/it, loss=5.46]\n"
                 "Epoch 10/10: 241it [15:55, 181.19s/it, loss=5.09]\n")
    prog = last_progress(traindoc.load(p))
    assert (prog.step, prog.total) == (241, None)


@pytest.mark.parametrize("summary", [
    # bigscience-workshop/bigscience experiments/gpt2-hf-ds/hf_ds_gpt2_base_n8-1832573.out
    "{'train_runtime': 896.0007, 'train_samples_per_second': 1.116, 'train_steps_per_second': "
    "0.009, 'epoch': 1.0}",
    # a README's "Training output" block (search index file 35357560349; the index names no repo)
    "{'train_runtime': 11.8075, 'train_samples_per_second': 42.431, 'train_steps_per_second': "
    "5.336, 'train_loss': 0.9835215977260044, 'epoch': 3.0}",
])
def test_a_summary_dict_alone_is_no_step_zero(tmp_path: Path, summary: str) -> None:
    """A run that logged no training dict: its end-of-run summary has no step, and the bar
    says how far it went."""
    p = tmp_path / "job.log"
    p.write_text(f"100%|██████████| 8/8 [14:56<00:00, 111.95s/it]\n{summary}\n")
    inc = traindoc.load(p)
    assert inc.iterations["iteration"].isna().all()
    prog = last_progress(inc)
    assert (prog.step, prog.total) == (8, 8)


CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus"


@pytest.mark.parametrize(("case", "step", "total"), [
    # O-LoRA's train_and_infer_accumulation.log: round 2's predict bar ends at 950/950, round 3's
    # training bar (its loss dicts beside it) stops at 41/156 when the launcher kills the job
    ("timeout/timeout-o-lora-train-and-infer-accumulation", 41, 156),
    # 2200xiaohu/LMSYS train.log: a 71514-item bar of the data preparation finished, the training bar with
    # its dicts reaches 200/8264, then the step-200 evaluation starts
    ("throughput/throughput-lmsys-train", 200, 8264),
    # a TRL SFTTrainer log (loss_spike-llama-sft-train-log): 1580 of 1677 steps after the finished
    # 8939-example "Tokenizing train dataset" bar
    ("loss_spike/loss_spike-llama-sft-train-log", 1580, 1677),
])
def test_the_bar_beside_the_loss_dicts_is_the_training_bar(case: str, step: int,
                                                           total: int) -> None:
    # a bar that had finished before the last training dict is over: the training bar is the
    # one still running beside the dicts, whatever the finished one's total
    prog = last_progress(traindoc.load(CORPUS / case / "logs"))
    assert (prog.step, prog.total) == (step, total)


# -- MetricLogger.log_every's evaluation loop: its counter is how far the run got, no training step

@pytest.mark.parametrize(("line", "step", "total", "desc"), [
    # salesforce/MUST#7 (corpus timeout-must-7): DeiT's "Test:" header, no loss meter
    ("Test:  [ 2090/10010]  eta: 1:53:32  acc1: 73.3203 (76.6279)  ema_acc1: 77.7734 (76.4956)  "
     "time: 0.8568  data: 0.0001  max mem: 14135", 2090, 10010, "Test"),
    # torchvision's references/classification (train.py --test-only), its expected output as a
    # port's README quotes it (PaddlePaddle's torchvision-to-paddle model docs), cut there
    ("Test:  [1500/1563]  eta: 0:00:05  loss: 1.2878 (1.9196)  acc1: 0.7344 (0.5639) ",
     1500, 1563, "Test"),
    # an MAE-derived fine-tune evaluating (its logger puts "[HH:MM:SS.us]" first)
    ("[18:22:55.447027] Test:  [ 300/1197]  eta: 0:02:06    time: 0.1402  data: 0.0001  max mem: "
     "1046", 300, 1197, "Test"),
])
def test_metric_logger_evaluation_counter(line: str, step: int, total: int, desc: str) -> None:
    row = parse_metric_logger_eval(line)
    assert row == {"step": step, "total": total, "desc": desc}


def test_metric_logger_training_lines_are_no_evaluation() -> None:
    # the training loop's header is a step line (parse.metric_lines), not this counter
    assert parse_metric_logger_eval("Epoch: [1]  [2352/2353]  eta: 0:00:00  time: 0.3439  "
                                    "data: 0.0003  max mem: 1847") is None


def test_an_evaluation_counter_alone_is_the_last_progress(tmp_path: Path) -> None:
    # salesforce/MUST#7: the terminal wrapped the line mid-number
    (tmp_path / "job.log").write_text(
        "Test:  [ 2090/10010]  eta: 1:53:32  acc1: 73.3203 (76.6279)  ema_acc1: 77.7734 (76.4956)"
        "  time: 0.8568  data: 0.0\n001  max mem: 14135\n")
    prog = last_progress(traindoc.load(str(tmp_path / "job.log"), workers=1))
    assert (prog.step, prog.total) == (2090, 10010)


# --- Ultralytics' own bar (utils.tqdm.TQDM, no tqdm) ----------------------------------------

@pytest.mark.parametrize(("line", "step", "total", "rate"), [
    # QiuLiXiang/YOLO-DA26 train_det.log (corpus gpu_crash-yolo-da26-ultralytics-train-det)
    ("      1/100      6.15G      3.439      11.21    0.02921         33        544: 0% "
     "──────────── 1/6848 1.3s/it 1.6s<2:26:31", 1, 6848, 1 / 1.3),
    ("      1/100      15G      3.566      8.982    0.02247         57        640: 9% "
     "━━─────────── 609/6848 2.7it/s 3:40<38:10WARNING ⚠️ CUDA OutOfMemoryError in "
     "TaskAlignedAssigner, using CPU", 609, 6848, 2.7),
    # QiuLiXiang/YOLO-DA26 finetune_target_domain.log: the bar's end, no time left
    ("                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): "
     "100% ━━━━━━━━━━━━ 55/55 23.6it/s 2.3s", 55, 55, 23.6),
])
def test_ultralytics_own_bar(line: str, step: int, total: int, rate: float) -> None:
    row = parse_tqdm(line)
    assert row is not None and (row["step"], row["total"]) == (step, total)
    assert row["rate"] == pytest.approx(rate)


def test_validation_and_label_scan_bars_are_no_training_step(tmp_path: Path) -> None:
    """Ultralytics' validation bar (longer than an epoch of a small fine-tune) and its label
    scan are not the training loop: the furthest step is the training bar's."""
    train = ("     40/40      2.25G     0.8794     0.5666   0.004283         36        768: "
             "100% ━━━━━━━━━━━━ 4/4 3.1it/s 1.3s")
    scan = ("train: Scanning /data/labels/train... 38 images, 0 backgrounds, 0 corrupt: 100% "
            "━━━━━━━━━━━━ 38/38 674.0it/s 0.1s")
    val = ("                 Class     Images  Instances      Box(P          R      mAP50  "
           "mAP50-95): 100% ━━━━━━━━━━━━ 55/55 23.6it/s 2.3s")
    log = tmp_path / "train.log"
    log.write_text("\n".join([scan, train, val]) + "\n")
    p = last_progress(traindoc.load(log))
    assert (p.step, p.total) == (4, 4)


# --- a bar that starts again every epoch: the run stopped in the epoch it last counted --------

# keras-team/keras#8169 (its "After" output): Keras prints each epoch's closing line, then the
# batches of the epoch in progress with the time left ("ETA"), no rate; the run was cut in epoch 3
KERAS_8169 = [
    "Epoch 1/12",
    "60000/60000 [==============================] - 5s 87us/step - loss: 0.3437 - acc: 0.8957 - "
    "val_loss: 0.0759 - val_acc: 0.9771",
    "Epoch 2/12",
    "60000/60000 [==============================] - 5s 77us/step - loss: 0.1145 - acc: 0.9671 - "
    "val_loss: 0.0518 - val_acc: 0.9837",
    "Epoch 3/12",
    "29312/60000 [=============>................] - ETA: 2s - loss: 0.0891 - acc: 0.9733",
]
# ultralytics/ultralytics#18642: Ultralytics' bar, each epoch counting its 500 batches afresh (an
# epoch's closing bar, then the next epoch's first lines; the wording of the lines)
ULTRALYTICS_18642 = [
    "       1/25      14.5G      1.102      1.711      1.801        125       1920: 100%|██████████|"
    " 500/500 [01:25<00:00,  5.85it/s]",
    "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): "
    "100%|██████████| 63/63 [00:12<00:00,  5.20it/s]",
    "       2/25      13.1G      1.714      3.239      2.478        228       1920:   9%|▉         "
    "| 45/500 [00:08<01:21,  5.58it/s]",
    "       2/25      13.1G      1.459      2.705      2.169        174       1920:  18%|█▊        "
    "| 88/500 [00:16<01:09,  5.93it/s]",
]


@pytest.mark.parametrize(("line", "step", "total"), [
    ("29312/60000 [=============>................] - ETA: 2s - loss: 0.0891 - acc: 0.9733",
     29312, 60000),  # keras-team/keras#8169
    # a mid-epoch line from a notebook's output (search index file 10108864979; no repo named)
    (" 16/148 [==>...........................] - ETA: 3s - loss: 2.7482 - accuracy: 0.2676",
     16, 148),
    # tensorflow/tensorflow#36332: a tty's redraws on one line once the carriage returns are
    # lost: the last one is where the epoch stood
    (" - ETA: 38s - loss: 0.6116 - accuracy: 0.9248 61/82 [=====================>........] - ETA:"
     " 37s - loss: 0.6016 - accuracy: 0.9260 62/82 [=====================>........] - ETA: 35s - "
     "loss: 0.5919 - accuracy: 0.9272", 62, 82),
    # Keras 3 before the epoch's end: its seconds are the time left (keras-team/keras
    # keras/src/utils/progbar.py, its ETA branch)
    ("416/418 ━━━━━━━━━━━━━━━━━━━━ 0s 9ms/step - loss: 0.0415 - mae: 0.1430", 416, 418),
])
def test_a_keras_epoch_in_progress(line: str, step: int, total: int) -> None:
    row = parse_keras(line)
    assert row == {"step": step, "total": total, "desc": "keras"}  # no time: no rate


@pytest.mark.parametrize(("lines", "step", "total"), [
    (KERAS_8169, 29312, 60000),
    (ULTRALYTICS_18642, 88, 500),
])
def test_a_bar_restarting_each_epoch_stopped_in_its_last_epoch(
        tmp_path: Path, lines: list[str], step: int, total: int) -> None:
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n" + OOM_TAIL)
    inc = traindoc.load(p)
    prog = last_progress(inc)
    assert (prog.step, prog.total) == (step, total)
    assert gpu_crash.analyse(inc).facts["last_iteration"] == step


OOM_TAIL = ("Traceback (most recent call last):\n  File \"train.py\", line 120, in <module>\n"
            "    loss.backward()\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
            "2.00 GiB. GPU 0 has a total capacity of 14.75 GiB of which 1.03 GiB is free.\n")


# --- a step named in a bar's postfix: the optimizer's, where the bar counts an epoch's batches --

# fairseq's --log-format tqdm (fairseq/logging/progress_bar.py TqdmProgressBar: the bar of the
# epoch's batches, "epoch 002" its description, the stats in its postfix; num_updates counts the
# run's optimizer updates): the wording of tests/test_writer_lines.py's fairseq-tqdm line, in a
# second epoch of 1563 batches
FAIRSEQ_TQDM = [
    "epoch 001: 100%|██████████| 1563/1563 [10:00<00:00, 2.60it/s, loss=7.100, nll_loss=6.9, "
    "ppl=119.4, wps=20474, ups=2.6, wpb=12110, bsz=402, num_updates=1563, lr=1e-05, gnorm=1.3, "
    "loss_scale=64, train_wall=600, wall=602]",
    "epoch 002:  10%|█         | 156/1563 [01:00<09:00, 2.60it/s, loss=6.600, nll_loss=6.1, "
    "ppl=68.6, wps=20474, ups=2.6, wpb=12110, bsz=402, num_updates=1719, lr=1e-05, gnorm=1.1, "
    "loss_scale=64, train_wall=660, wall=662]",
]


def test_a_postfix_step_counts_on_where_the_bar_restarts(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text("\n".join(FAIRSEQ_TQDM) + "\n" + OOM_TAIL)
    inc = traindoc.load(p)
    prog = last_progress(inc)
    assert (prog.step, prog.total) == (1719, None)  # the bar's 1563 is an epoch's, no run's
    assert gpu_crash.analyse(inc).facts["last_iteration"] == 1719


@pytest.mark.parametrize(("line", "step", "total"), [
    # NeMo's bar, its postfix's global_step counted from 0 (a guide's example output, search
    # index file 48067291200; the index names no repo)
    ("Epoch 0:   0%|          | 190/301501 [59:30<1572:41:13, 18.79s/it, loss=7.74, v_num=3-16, "
     "reduced_train_loss=7.560, global_step=189.0, consumed_samples=24192.0]", 190, 301501),
    # the postfix as last logged, behind the bar (an A3 Mega guide's output, search index file
    # 26222585779; the index names no repo)
    ("Epoch 0: :  47%|████▋     | 7/15 [06:19<07:13, reduced_train_loss=11.50, global_step=5.000, "
     "consumed_samples=12288.0, train_step_timing in s=49.50]", 7, 15),
])
def test_a_postfix_step_behind_its_bar_keeps_the_bar(tmp_path: Path, line: str, step: int,
                                                     total: int) -> None:
    p = tmp_path / "train.log"
    p.write_text(line + "\n")
    prog = last_progress(traindoc.load(p))
    assert (prog.step, prog.total) == (step, total)


# --- a bar of the data's set-up counts examples, no step -----------------------------------

@pytest.mark.parametrize("setup", [
    # a guide's expected output of a datasets pipeline (search index file 6048088258; the index
    # names no repo): its bars count examples and bytes, far more than the training's steps
    ["Downloading data: 100%|██████████| 1.35G/1.35G [02:49<00:00, 7.94MB/s] ",
     "Generating train split: 100%|██████████| 1359146/1359146 [01:11<00:00, 19139.43 examples/s]",
     "Running tokenizer on dataset: 100%|██████████| 1359146/1359146 [07:13<00:00, 3132.18 "
     "examples/s]",
     "Grouping texts in chunks of 8192: 100%|██████████| 1359146/1359146 [10:19<00:00, 2194.09 "
     "examples/s]"],
    # a TRL SFT run's set-up (search index file 69059084908; the index names no repo)
    ["Loading weights: 100%|██████████████████████| 434/434 [00:01<00:00, 278.94it/s]",
     "Truncating train dataset: 100%|█| 48222/48222 [00:05<00:00, 8640.42 examples/s]"],
])
def test_a_data_bar_is_no_training_step(tmp_path: Path, setup: list[str]) -> None:
    # then the training loop's bar (HF Trainer's, no description), cut by a crash before its
    # first logging step
    train = [" 11%|█         | 110/1000 [01:50<14:50,  1.00it/s]",
             " 12%|█▏        | 120/1000 [02:00<14:40,  1.00it/s]"]
    p = tmp_path / "train.log"
    p.write_text("\n".join(setup + train) + "\n" + OOM_TAIL)
    inc = traindoc.load(p)
    prog = last_progress(inc)
    assert (prog.step, prog.total) == (120, 1000)
    assert gpu_crash.analyse(inc).facts["last_iteration"] == 120


def test_a_data_bar_alone_counts_no_step(tmp_path: Path) -> None:
    # a run that stops in its set-up: the set-up's bar counts examples, no training step (round
    # k: gnosia93/training-on-eks's rank 3 out of memory after "Generating train split:
    # 36718/36718", koko0000000/elastic-verl-spot's ENOSPC under "Filtering prompts … 0/7473";
    # before, the runbooks said "last iteration 36718")
    p = tmp_path / "train.log"
    p.write_text("Map: 100%|██████████| 10000/10000 [00:07<00:00, 1423.42 examples/s]\n")
    assert last_progress(traindoc.load(p)).step is None


def test_an_evaluation_longer_than_the_training_is_no_training_bar(tmp_path: Path) -> None:
    # HF Trainer's ProgressCallback (transformers trainer_callback.py): the training bar, its
    # loss dicts, then the prediction bar of the evaluation the logging step set off (no
    # description either; here 5000 batches of a run of 1000 steps), then the training again
    lines = [" 10%|█         | 100/1000 [00:20<03:00,  4.90it/s]",
             "{'loss': 2.1, 'grad_norm': 1.1, 'learning_rate': 4.8e-05, 'epoch': 0.1}",
             " 50%|█████     | 2500/5000 [00:10<00:10, 250.00it/s]",
             "{'eval_loss': 2.0, 'eval_runtime': 20.1, 'eval_samples_per_second': 95.2, "
             "'eval_steps_per_second': 9.5, 'epoch': 0.1}",
             " 11%|█         | 110/1000 [00:25<03:00,  4.90it/s]"]
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n" + OOM_TAIL)
    prog = last_progress(traindoc.load(p))
    assert (prog.step, prog.total) == (110, 1000)


def test_a_bar_glued_before_the_iteration_line_is_an_earlier_step(tmp_path: Path) -> None:
    """torchrun --tee: rank 0's unfinished tqdm bar (no newline) and its next iteration line
    share one physical line (traindoc's drill_nccl_watchdog on an H200, torch 2.11): the bar's
    4/12 is the step before, not the iteration line read twice."""
    p = tmp_path / "torchrun.log"
    p.write_text(
        "[default0]:Train:  25%|##5       | 3/12 [00:00<00:01,  8.03it/s]\n"
        "[default0]:Train:  33%|###3      | 4/12 [00:00<00:00, 10.33it/s][default0]: iteration"
        "        5/      12 | consumed samples:         20 | elapsed time per iteration (ms): "
        "53.9 | learning rate: 1.000E-02 | global batch size:     4 | lm loss: 2.542121E+00 |\n"
        "[default0]:[rank0]:[E1128 01:37:22.786692386 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog"
        " caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=3153,"
        " NumelOut=3153, Timeout(ms)=10000) ran for 10087 milliseconds before timing out.\n")
    prog = last_progress(traindoc.load(p))
    assert (prog.step, prog.total) == (5, 12)
