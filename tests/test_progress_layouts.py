"""The last step before a hang, from every tqdm layout and from HF Trainer dicts: each family on
real lines from two sources."""

from __future__ import annotations

from pathlib import Path

import pytest

import traindoc
from traindoc.diagnose.common import last_progress
from traindoc.parse.progress import parse_metric_logger_eval, parse_tqdm


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
