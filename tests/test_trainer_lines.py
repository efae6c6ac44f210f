"""Step lines of trainers the corpus holds few cases of, read through the whole load (the
parser that wins a line matters, not only the generic reader's answer): the iterations row of
each real line, with its source (issue 26, item 1)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from traindoc import load

# (trainer, source, log lines, the columns of the last row)
TRAINERS = [
    ("MaxText (absl)", "AI-Hypercomputer/maxtext#4847",
     ["I0811 21:55:06.119312 138304841739136 metric_logger.py:226] completed step: 2, seconds: "
      "10.228, TFLOP/s/device: 350.869, Tokens/s/device: 19222.175, total_weights: 1572864, "
      "loss: 12.980, lm_loss: 12.980, perplexity: 433463.719"],
     {"iteration": 2, "loss": 12.98, "elapsed_s": 10.228, "tflops": 350.869,
      "tokens_per_s_per_gpu": 19222.175}),
    ("nanotron", "huggingface/nanotron#390",
     ["10/17/2025 16:31:56 [INFO|DP=0|PP=0|TP=0]: iteration: 327281 / 378950 | consumed_tokens: "
      "85.8G | elapsed_time_per_iteration_ms: 11.5K | tokens_per_sec: 22.8K | "
      "tokens_per_sec_per_gpu: 11.4K | global_batch_size: 64 | lm_loss: 2.38 | lr: 1e-05 | "
      "model_tflops_per_gpu: 38.3 | hardware_tflops_per_gpu: 38.3 | grad_norm: 1.25"],
     {"iteration": 327281, "total_iterations": 378950, "loss": 2.38, "grad_norm": 1.25,
      "elapsed_s": 11.5, "tokens_per_s": 22800.0, "tokens_per_s_per_gpu": 11400.0}),
    ("verl", "verl-project/verl#2060 (cut; timing and throughput keys from its "
     "compute_throughout_metrics)",
     ["step:1 - global_seqlen/min:484245.000 - actor/entropy:0.323 - actor/pg_loss:0.001 - "
      "actor/grad_norm:0.020 - perf/mfu/actor:0.343 - actor/lr:0.000 - "
      "training/global_step:1.000 - training/epoch:0.000"],
     {"iteration": 1, "grad_norm": 0.02, "mfu": 34.3}),
    ("MMEngine (mmdet 3)", "open-mmlab/mmdetection#11893",
     ["08/03 22:09:24 - mmengine - INFO - Epoch(train)  [1][ 500/2931]  lr: 2.0000e-02  eta: "
      "0:39:15  time: 0.0578  data_time: 0.0017  memory: 2389  loss: nan  loss_rpn_cls: nan  "
      "loss_rpn_bbox: nan  loss_cls: nan  acc: 0.0000  loss_bbox: nan"],
     {"iteration": 500, "epoch": 1.0, "nan": 1, "elapsed_s": 0.0578, "lr": 0.02}),
    ("mmcv (mmdet 2)", "open-mmlab/mmdetection#3446",
     ["2020-08-01 01:10:31,475 - mmdet - INFO - Epoch [3][50/1749]\tlr: 2.000e-02, eta: 0:52:33, "
      "time: 1.899, data_time: 0.046, memory: 5280, loss_rpn_cls: 0.2532, loss_rpn_bbox: 0.0409, "
      "s0.loss_cls: 0.2136, s0.acc: 94.4818, loss: 0.7339, grad_norm: 0.0668"],
     # (mmcv counts epochs from 1: epoch 3's batch 50 is the run's step 2 x 1749 + 50)
     {"iteration": 2 * 1749 + 50, "epoch": 3.0, "loss": 0.7339, "grad_norm": 0.0668,
      "elapsed_s": 1.899}),
    ("detectron2", "facebookresearch/d2go#524",
     ["[04/05 01:30:24 d2.utils.events]:  eta: 0:03:35  iter: 19  total_loss: 1.36  loss_cls: "
      "0.6522  loss_box_reg: 0.5817  loss_rpn_cls: 0.07138  loss_rpn_loc: 0.003773  time: 0.3636"
      "  data_time: 0.1102  lr: 3.8077e-06  max_mem: 433M"],
     {"iteration": 19, "loss": 1.36, "elapsed_s": 0.3636, "lr": 3.8077e-06}),
    ("maskrcnn-benchmark", "facebookresearch/maskrcnn-benchmark#976",
     ["INFO: eta: 11:21:28  iter: 1120  loss: 1.4617 (1.4511)  loss_box_reg: 0.1761 (0.1431)  "
      "loss_classifier: 0.5327 (0.4516)  time: 0.5088 (0.4600)  data: 0.0164 (0.0177)  lr: "
      "0.020000  max mem: 3150"],
     {"iteration": 1120, "loss": 1.4617, "elapsed_s": 0.5088}),
    ("fairseq < 0.6", "facebookresearch/fairseq#301",
     ["| epoch 010  2000 / 8223 loss=1.27 (1.50), wps=962, wpb=908, bsz=32, lr=0.001, "
      "clip=100%, gnorm=2.1427"],
     {"iteration": 9 * 8223 + 2000, "loss": 1.27, "grad_norm": 2.1427, "tokens_per_s": 962.0}),
    ("PaddleSeg", "PaddlePaddle/PaddleSeg#928",
     ["2021-03-30 06:55:57 [INFO]\t[TRAIN] epoch: 1, iter: 20/500, loss: 2.0859, lr: 0.009657, "
      "batch_cost: 0.5344, reader_cost: 0.07273, ips: 3.7425 samples/sec | ETA 00:04:16"],
     {"iteration": 20, "loss": 2.0859, "elapsed_s": 0.5344, "samples_per_s": 3.7425}),
    # PaddleOCR's and OpenOCR's step line: the kv_step parser's global_step format read no rate
    ("PaddleOCR", "YunSungJu/OderformKIE log/workerlog.0 (corpus gpu_crash-oderformkie-workerlog)",
     ["[2023/12/19 01:52:40] ppocr INFO: epoch: [1/5], global_step: 10, lr: 0.000000, loss: "
      "3.620109, avg_reader_cost: 0.09819 s, avg_batch_cost: 7.95479 s, avg_samples: 4.0, ips: "
      "0.50284 samples/s, eta: 0:52:22"],
     {"iteration": 10, "epoch": 1.0, "loss": 3.620109, "elapsed_s": 7.95479,
      "samples_per_s": 0.50284}),
    ("OpenOCR", "Topdu/OpenOCR#9",
     ["[2024/08/06 18:03:31] openrec INFO: epoch: [1/2], global_step: 100, lr: 0.000005, loss: "
      "69.376022, avg_reader_cost: 0.00971 s, avg_batch_cost: 0.18023 s, avg_samples: 64.0, ips: "
      "355.10891 samples/s, eta: 0:32:33"],
     {"iteration": 100, "loss": 69.376022, "elapsed_s": 0.18023, "samples_per_s": 355.10891}),
    ("TeleChat (DeepSpeed loop)", "Tele-AI/TeleChat-52B#8",
     ["epoch:1, global_step:4, step:16, cur_batch_loss: 7.40625"],
     {"iteration": 4, "loss": 7.40625}),
    # MindSpore's TimeMonitor wording on mindocr's step line: "per step time"
    ("mindocr (MindSpore)", "mindspore-lab/mindocr#670",
     ["[2024-03-04 12:02:42] mindocr.utils.callbacks INFO - epoch: [12/20] step: [700/4468], "
      "loss: 19.327375, lr: 0.000793, per step time: 223.489 ms, fps per card: 4.47 img/s"],
     {"iteration": 700, "epoch": 12.0, "loss": 19.327375, "elapsed_s": 0.223489,
      "samples_per_s": 4.47}),
    ("ClearerVoice-Studio", "modelscope/ClearerVoice-Studio#4",
     ["Train Epoch: 0/100 Step: 10/965 | 2.057s/batch | lr 5.0000e-04 || Mask_Loss 1.6780"],
     {"iteration": 10, "loss": 1.678, "elapsed_s": 2.057}),
    ("TensorFlow cifar10 example", "tensorflow/models#1264",
     ["2017-03-28 14:49:10.061204: step 10, loss = 4.59 (821.9 examples/sec; 0.156 sec/batch)"],
     {"iteration": 10, "loss": 4.59, "samples_per_s": 821.9, "elapsed_s": 0.156}),
    ("TF-Slim", "tensorflow/models#2980",
     ["INFO:tensorflow:global step 2: loss = 72.8609 (17.053 sec/step)"],
     {"iteration": 2, "loss": 72.8609, "elapsed_s": 17.053}),
    ("PaddleSpeech", "PaddlePaddle/PaddleSpeech#675",
     ["[INFO 2021/06/19 16:01:34 model.py:61] Train: Rank: 0, epoch: 1, step: 5310, batch : "
      "1559/1876, lr: 0.00000000, data time: 0.000s, train time: 3.019s, batch size: 64, "
      "train_loss: 16.030918"],
     {"iteration": 5310, "loss": 16.030918}),
    ("MetricLogger (RTM3D)", "maudzung/RTM3D#4",
     ["Train - Epoch: [127/300][ 35/464]\tTime  0.738 ( 0.738)\tData  0.000 ( 0.014)\tLoss "
      "2.1274e+00 (1.5406e+00)"],
     {"iteration": 35, "epoch": 127.0, "loss": 2.1274, "elapsed_s": 0.738}),
    ("nanoGPT", "karpathy/nanoGPT#110", ["iter 1631: loss 4.0863, time 561.94ms"],
     {"iteration": 1631, "loss": 4.0863, "elapsed_s": 0.56194}),
    ("mmsegmentation (mmcv, by iteration)", "open-mmlab/mmsegmentation#308",
     ["2020-12-18 19:36:37,584 - mmseg - INFO - Iter [1100/40000]\tlr: 9.755e-03, eta: 4:23:27, "
      "time: 0.402, data_time: 0.003, memory: 19873, decode.loss_seg: 0.1186, decode.acc_seg: "
      "81.4285, aux.loss_seg: 0.0466, aux.acc_seg: 81.5205, loss: 0.1652"],
     {"iteration": 1100, "total_iterations": 40000, "loss": 0.1652, "elapsed_s": 0.402}),
    ("mmcv log.json", "open-mmlab/mmsegmentation#271",
     ['{"mode": "train", "epoch": 5, "iter": 11950, "lr": 0.00446, "memory": 6912, "data_time": '
      '0.00874, "decode.loss_seg": 0.71687, "decode.acc_seg": 70.43675, "aux.loss_seg": 0.38568, '
      '"aux.acc_seg": 63.78304, "loss": 1.10256, "time": 1.43798}'],
     {"iteration": 11950, "loss": 1.10256, "elapsed_s": 1.43798}),
    ("torchtitan (grad norm)", "pytorch/torchtitan#2389",
     ["[titan] 2026-02-24 19:46:17,508 - root - INFO - step:  4  loss:  7.62585  grad_norm: "
      "26.6250  memory: 66.91GiB(37.51%)  tps: 10,050  tflops: 314.71  mfu: 13.99%"],
     {"iteration": 4, "loss": 7.62585, "grad_norm": 26.625, "tokens_per_s_per_gpu": 10050.0,
      "tflops": 314.71, "mfu": 13.99}),
    ("prime-rl", "PrimeIntellect-ai/prime-rl#20",
     ["03:26:55 [INFO] [TRAIN] [Rank 0] step: 8, loss: 975.9991, tokens_per_second: 76957.79, "
      "mfu: 42.46"],
     {"iteration": 8, "loss": 975.9991, "tokens_per_s": 76957.79, "mfu": 42.46}),
    ("litgpt", "Lightning-AI/litgpt#689", ["iter 77 step 39: loss 10.8259, iter time: 214.40ms "
                                           "(optimizer.step)"],
     {"iteration": 77, "loss": 10.8259, "elapsed_s": 0.2144}),
    # monodepth2's log_time ("epoch {:>3} | batch {:>6} | examples/s: …") and its forks: the
    # batch of the epoch, between "|" fields
    ("monodepth2 (Lite-Mono)", "noahzn/Lite-Mono#98",
     ["epoch   0 | lr 0.000100 |lr_p 0.000100 | batch    250 | examples/s:  22.1 | loss: 0.13400 "
      "| time elapsed: 00h03m34s | time left: 23h42m04s"],
     {"iteration": 250, "epoch": 0.0, "loss": 0.134, "samples_per_s": 22.1}),
    # OpenPCDet forks: the run's accumulated iteration beside the epoch's ("cur_iter")
    ("OpenPCDet (LION fork)", "a LION fork's committed nohup.out (corpus case "
     "timeout-lion-openpcdet-2gpu-still-running)",
     ["2025-02-19 19:26:19,312   INFO  epoch: 17/36, acc_iter=242500, cur_iter=3394/14065, "
      "batch_size=1, time_cost(epoch): 20:11/1:03:29, time_cost(all): 23:48:35/26:09:47, "
      "loss=2.5910249161720276, d_time=0.00(0.01), f_time=0.31(0.35), b_time=0.31(0.36), "
      "norm=3.8721683025360107, lr=0.002873731094116699"],
     {"iteration": 242500, "epoch": 17.0, "loss": 2.5910249161720276}),
    ("scepter", "modelscope/scepter#48",
     ["scepter [INFO] 2024-10-06 20:19:51,817 [File: log.py Function: _print_iter_log at line 71]"
      "  Stage [train] iter: [10/500], data_time: 1.0402(1.0402), time: 1.4696(1.4696), loss: "
      "0.0978(0.0978), nvidia-smi: 9885.4000(9885.4000), pg0_lr: 0.000100, scale: 65536.000000, "
      "[35secs 2.00%(29mins 15secs)]"],
     {"iteration": 10, "loss": 0.0978, "elapsed_s": 1.4696}),
    ("Composer (one line)", "llm-foundry-style README (find_string: '[batch=1/40]:   Train "
     "loss/train/total')",
     ["[batch=10/40]:  Train loss/train/total: 0.6773    Train metrics/train/LanguagePerplexity: "
      "1.9369"],
     {"iteration": 10, "loss": 0.6773}),
    ("kohya sd-scripts (bar postfix NaN)", "kohya-ss/sd-scripts#2137",
     ["steps:   1%|▋                                                        | 41/3280 "
      "[00:50<1:06:54,  1.24s/it, avr_loss=nan]"],
     {"iteration": 41, "nan": 1, "elapsed_s": 1.24}),
    # fairseq-lua: the optimizer's updates over the run, named by their unit
    ("fairseq-lua", "facebookresearch/fairseq-lua#26",
     ["| epoch 019 | 0161656 updates | words/s   14482| trainloss     1.94 | train ppl     3.84"],
     {"iteration": 161656, "loss": 1.94, "tokens_per_s": 14482.0}),
    ("fairseq (train_inner)", "facebookresearch/fairseq#2338",
     ["2020-07-17 07:11:02 | INFO | train_inner | epoch 001:   2800 / 160368 loss=9.255, "
      "ppl=611.12, wps=57.3, ups=0.04, wpb=1613, bsz=80, num_updates=2800, lr=2.8e-05, "
      "gnorm=3.23, train_wall=13, wall=1236"],
     {"iteration": 2800, "loss": 9.255, "grad_norm": 3.23, "tokens_per_s": 57.3}),
    ("PaddleDetection (static)", "PaddlePaddle/PaddleDetection#5337",
     ["2022-03-09 15:20:50,962-INFO: iter: 20, lr: 0.000085, 'loss': 'nan', eta: 5 days, "
      "18:42:12, batch_cost: 1.24839 sec, ips: 1.60206 images/sec"],
     {"iteration": 20, "nan": 1, "elapsed_s": 1.24839, "samples_per_s": 1.60206}),
    ("PaddleDetection (dygraph)", "PaddlePaddle/PaddleDetection#4272",
     ["[10/08 00:43:11] ppdet.engine INFO: Epoch: [0] [  560/21947] learning_rate: 0.000060 "
      "loss_rpn_cls: 0.677536 loss_rpn_reg: 0.017564 loss_bbox_cls: 0.030547 loss_bbox_reg: "
      "0.006676 loss: 0.740015 eta: 1 day, 10:42:49 batch_cost: 0.4942 data_cost: 0.0003 ips: "
      "4.0471 images/s"],
     {"iteration": 560, "epoch": 0.0, "loss": 0.740015, "elapsed_s": 0.4942,
      "samples_per_s": 4.0471}),
    ("DeepSpeed-Chat step 3", "deepspeedai/DeepSpeedExamples#444",
     ["epoch: 0|step: 3184|ppo_ep: 1|act_loss: inf|cri_loss: inf|unsuper_loss: 0.0"],
     {"iteration": 3184, "nan": 1}),
    ("CLTR (one line per epoch)", "dk-liang/CLTR#15",
     ["2023-06-23 17:01:31,824 - CLTR - INFO - Training Epoch:[541/1500]\t loss=10.21882\t "
      "lr=0.000100\t epoch_time=143.918"],
     {"iteration": 541, "loss": 10.21882, "elapsed_s": 143.918}),
]


def _same(a: object, b: object) -> bool:
    if isinstance(b, float) and math.isnan(b):
        return isinstance(a, float) and math.isnan(a)
    return a is not None and a == pytest.approx(b)


@pytest.mark.parametrize(("trainer", "source", "lines", "expected"), TRAINERS,
                         ids=[t[0] for t in TRAINERS])
def test_a_trainers_step_line(tmp_path: Path, trainer: str, source: str, lines: list[str],
                              expected: dict) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    it = load([str(log)]).iterations
    rows = it[it["iteration"].notna()]
    assert len(rows), (trainer, source)
    row = rows.iloc[-1]
    for col, value in expected.items():
        got = None if pd.isna(row[col]) else float(row[col])
        assert _same(got, value), (trainer, col, row[col])


# ultralytics YOLOv8+: a header of column names, then each epoch's row and its bar
YOLO_NAN = (  # ultralytics/ultralytics#1149 (the header and first epoch as posted)
    "      Epoch    GPU_mem   box_loss   seg_loss   cls_loss   dfl_loss  Instances       Size\n"
    "      1/100      2.37G        nan        nan        nan        nan         16        640: "
    "100%|██████████| 1/1 [00:02<00:00,  2.42s/it]\n")
YOLO_EPOCHS = (  # ultralytics/ultralytics#21765 (two epochs and the validation between them)
    "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
    "       8/55      9.03G     0.1321      8.032      3.308         22        640: "
    "100%|██████████| 954/954 [11:41<00:00,  1.36it/s]\n"
    "                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): "
    "100%|██████████| 66/66 [00:36<00:00,  1.79it/s]\n"
    "                   all       1049       1164          0          0          0          0\n"
    "\n"
    "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
    "       9/55      9.02G     0.1295      7.585      3.256         16        640: "
    "100%|██████████| 954/954 [11:32<00:00,  1.38it/s]\n")
# ultralytics 8.3's own bar, redrawn after "\r\x1b[K" (YOLO_DA's finetune log, corpus
# gpu_crash-yolo-da26-finetune-target-domain)
YOLO_83 = (
    "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
    "\r\x1b[K       1/40      2.06G      1.851      2.655   0.009752         52        768: 0% "
    "──────────── 0/5  0.3s\r\x1b[K       1/40      2.12G      2.033      2.407    0.01258     "
    "    28        768: 20% ━━────────── 1/5 2.6it/s 0.5s<1.5s\n")


def _rows(tmp_path: Path, text: str) -> pd.DataFrame:
    log = tmp_path / "train.log"
    log.write_text(text)
    it = load([str(log)]).iterations
    return it[it["iteration"].notna()]


def test_a_yolo_table_row_is_a_step_counted_over_the_run(tmp_path: Path) -> None:
    rows = _rows(tmp_path, YOLO_EPOCHS)
    # the epoch's batches printed (954), epochs from 1: epoch 8's end is step 7 x 954 + 954
    assert list(rows["iteration"]) == [7632, 8586]
    assert list(rows["loss"]) == [0.1321, 0.1295]  # the first loss column, as for loss parts
    assert list(rows["epoch"]) == [8.0, 9.0]


def test_a_yolo_table_row_of_nan_losses_is_a_nan_step(tmp_path: Path) -> None:
    from traindoc.diagnose import loss_spike

    log = tmp_path / "train.log"
    log.write_text(YOLO_NAN)
    facts = loss_spike.report(loss_spike.analyse(load([str(log)]))).facts
    assert facts["nan_iterations"] == [1] and facts["last_iteration"] == 1


def test_a_yolo_table_from_epoch_0(tmp_path: Path) -> None:
    # ultralytics/yolov5#10314 (YOLOv5 v7.0 prints its epochs from 0, the bar without brackets)
    rows = _rows(tmp_path, (
        "      Epoch    GPU_mem   box_loss   obj_loss   cls_loss  Instances       Size\n"
        "        0/1      22.4G    0.07281    0.08384    0.06359        199        640: "
        "100%|██████████| 1849/1849 13:15\n"))
    assert list(rows["iteration"]) == [1849] and list(rows["loss"]) == [0.07281]


def test_ultralytics_own_bar_redrawn(tmp_path: Path) -> None:
    rows = _rows(tmp_path, YOLO_83)
    assert list(rows["iteration"]) == [0, 1] and list(rows["loss"]) == [1.851, 2.033]


@pytest.mark.parametrize("text", [
    # YOLOv5 before v7.0 names no column a loss (ultralytics/yolov5#2965): its rows are left
    # to the progress parser
    " Epoch   gpu_mem       box       obj       cls     total    labels  img_size\n"
    "     0/299      5.2G      0.11    0.1612   0.03867    0.3099        28      1280:   1%|▌"
    "                                           | 1/78 [00:04<05:27,  4.26s/it]\n",
    # a line that does not fit the header ends the table: the validation row is no step
    "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
    "                   all       1049       1164          0          0          0          0\n",
])
def test_lines_that_are_no_table_row(tmp_path: Path, text: str) -> None:
    assert not len(_rows(tmp_path, text))
