"""The generic step-line reader: any trainer's ``step … loss …`` line into ``iterations``.

The per-trainer patterns of ``iterations`` each know one wording. Most trainers say the same
few things in the same few syntaxes, so this reader knows the syntaxes and two vocabularies
instead, and reads a line that no other parser understood (it is a *fallback* line parser):

- **syntaxes** of one field: ``key: value``, ``key=value``, ``key = value``, quoted keys of a
  JSON or Python dict (``"loss": NaN``, ``'grad_norm': inf``), ``key value`` for a known
  one-word key (``loss 2.31``), and ``value unit`` (``9.8it/s``, ``2.3 s/it``, ``2.057s/batch``, ``5123 tokens/s``,
  ``812 samples/sec``); fields may sit between ``|``, ``,``, ``;``, `` - `` or spaces.
  Values may carry ``ms``/``s``/``%`` units, thousands separators, and ``K``/``M``/``G``
  suffixes; ``nan``/``NaN``/``inf``/``Infinity`` are values. Also ``key is value`` (BigDL's
  ``Loss is 1.72``), a multi-word key known whole before a bare value (``train loss nan``), and
  a parenthesised time per step after the metrics (``loss = nan (2.34 sec/step)``,
  ``loss=0.45 (1.35s)``).
- **step keys** (``STEP_RANK``, in order of preference; Marian NMT's ``Up.`` too): ``global_step``, ``opt_step``,
  ``num_updates``, ``iteration``, ``iter``, ``step``, ``Global Step``…, with an optional
  ``/total`` (``step 120/5000``, ``Iter [120/5000]``); ``batch`` only with its total
  (``[Epoch 0/30, Batch 323/1313]``: a batch size has none).
- **step markers**: a line that names the optimizer's step by a key no other counter uses
  (``global_step``, ``opt_step``, ``num_updates``) and no metric is a row of ``event="step"``
  (``step_marker``): the run's progress, no point of any series.
- **metric keys** (``METRIC_KEYS``): a key is lower-cased, a ``train/``-style prefix and
  spaces/underscores/dashes dropped, then looked up; a key of several words is looked up by its
  longest known suffix (``INFO train loss`` is ``train loss``). A key that is no known one but
  names a loss (``loss_net``, ``step_loss``, ``Train Loss ce``) is a *part* of the loss: the
  first such part is the row's loss only when the line has no loss key of its own (an eval
  part, ``val mse loss``, the eval loss alike); BasicSR's ``l_pix``, ``l_all`` are parts too. Rates per step (``Steps/Sec``) are inverted
  into seconds per step. A running mean since the start printed beside the interval's rate
  (``Rate=… GlobalRate=…``, ``RunningAvgSamplesPerSec=…, CurrSamplesPerSec=…``) is the rate
  only where the line prints no other; ``learning-rate`` is no rate. TF's ``Average
  examples/sec: A (B)`` is such a mean, with the interval's rate B in parentheses after it
  (the other way round from AverageMeter's ``Time 0.427 (2.773)``: the value, then the mean).
- **epochs**: a whole epoch number before the step (``Epoch 1 | Step 6500/6501``) goes to
  ``epoch``; the loss runbook counts a step counter that restarts each epoch on across epochs.
  An epoch that is the line's only counter (``Epoch 939 loss 0.7634 | train 2.1s``, ``Time:
  …; Epoch: 69; …; pid_loss: nan``) numbers a row with a training loss marked
  ``event="epoch"``: a step only where the log counts no steps
  (``diagnose.common.epoch_counted``). A header that no result line completes (nnU-Net's
  ``Epoch 453``, its losses printed only at the epoch's end) is such a row with no metric: the
  epoch the run has reached.
- **an epoch's header line and the result line after it** (easytorch, BasicTS: ``… - INFO -
  Epoch 1 / 200`` then ``… - INFO - Result <train>: [train_time: 295.52 (s), lr: …, train_MAE:
  …]``): one record, joined by the reader, numbered by the epoch (``event="epoch"``), the time
  the epoch's training took (``train_time``) its time; a next line with a counter or a bar of
  its own (Keras's ``1490/1490 [====…]``) is no part of it.
- **steps as printed by loggers of floats or big numbers**: ``step=6.0000`` is step 6,
  LeRobot's ``step:2K`` step 2000 (rounded as printed).
- **a log record fused after a tqdm bar** (``4/100 [00:04<01:12,  1.32it/s][2024-04-02 …]
  - step=5 loss=3.6606``): the record after the bar's bracket, read on its own.
- **a count named by its unit** when no step key is on the line (PyTorch's
  word_language_model: ``| epoch   1 |   200/ 2983 batches | … | ms/batch 45.68 | loss  7.63``):
  ``N/ M batches`` or ``N iter`` (batches, iters, steps) is the step; ``ms/batch`` a time per
  step.
- **bare counters at the start of the line** when nothing else names the step: ``N`` or
  ``N/M`` before keyed metrics is the step (char-rnn's ``268/446 (epoch 0), train_loss =
  2.097``), two numbers are the epoch and the step (``333 154 Loss=nan Time=0.040``), also
  before a ``|`` (llama2.c: ``590 | loss 6.1569 | lr …``) and after a bracketed epoch
  (yolact: ``[  1]    1530 || B: 5.557 | … || timer: 0.321``).
- **the MetricLogger counter** (torchvision's references, DLRM: ``Epoch: [0]  [ 0/84]``,
  ``Epoch:[0/1] [592/75869]``) when no step key is on the line: the batch of the epoch; a
  count of the whole run named by its unit before it, of a larger total (PaddleDetection's
  semi-supervised ``SemiLogPrinter``: ``5063/130860 iters Epoch: [6] [700/727]``), is the step.
- **a phase's counter** (NVIDIA's GNMT: ``TRAIN [3][1930/1938]  …  Loss/tok 3.0178 (3.1454)``,
  ``VALIDATION [0][0/3]``, ``TEST [3][0/3]``), before any step key (its ``Decoder iters`` is a
  metric): the batch of the epoch; a phase other than training is an evaluation.
- **a phase's word and its step of a total in one bracket** (JAX-CFD's absl lines: ``[Train
  10/1882] {'grads_finite': 1.0, …, 'train_loss': 0.0077}``) when no step key is on the line:
  the step; a phase other than training is an evaluation.
- **PaddlePaddle's pass counter** (``Pass 0, Batch 100, Cost 2.26``, ``[Pass 0, train batch
  10]``, ``Train Pass 2, batch 220, …, speed 26454.34``) when no step key is on the line: the
  batch of the pass (the epoch); ``speed`` without a unit is samples per second.
- **the PyTorch examples' counter** (``Train Epoch: 1 [51200/490871 (10%)]``) when no step key
  is on the line: the sample position counted across epochs; a time over a window of
  iterations (``198.8s(100 iters)``) is divided by it. The same bracket without the word
  before it, its percentage the tell: the epoch of a total inside it (ALCF's ai4sci trainer:
  ``[0/1: 2560 / 160145 (2%)] epoch=0.0000 dt=0.2999``) or in a bracket before it (``Train
  Epoch: [1/10] [2560/60000 (4%)]``), else none.
- **JSON lines** (``trainer_log.jsonl``): every scalar field by the same vocabularies; a
  ``total_steps``-like field is the total, not a reason to skip the line; an ``elapsed_time``
  clock ``"H:MM:SS"`` (LLaMA-Factory) is ``train_time_s``, and its ``"throughput": "0.00"``
  (token counting off) is no rate. MLPerf's ``:::MLLOG``
  events are flattened first: the step from the metadata (``step``, ``step_num``, else
  ``epoch_num``, else the run's ``samples_count``; an end-of-run event whose metadata step is a list has none), the
  value's fields (``tracked_stats`` ``{"throughput": …}``, samples per second) or the value
  under the event's key (``"key": "train_loss"``).
- **llm.c's log file** (``s:120 trl:3.28`` / ``s:128 tel:3.30``): ``s:`` directly before the
  digits is a step, ``trl``/``tel`` are the train and val loss.
- **llm.c's console line** (``step 1/74 | train loss 11.01 | norm 15.3 | lr 6.00e-06 | (345.67 ms
  | 1516543 tok/s)``, ``… | 345.12 ms | 42.1% bf16 MFU | …``): a field that is only a time is
  the step's time; a percentage before ``MFU`` is the MFU; ``norm`` (a whole key) the grad norm.
- **timm's counter** (``Train: 1 [  50/500 ( 10%)]  Loss: 4.234 (4.301)  Time: 0.512s,
  500.12/s  (0.520s,  492.31/s)``): read like the PyTorch examples' one; a bare ``/s`` rate is
  samples per second, and beside it the time is the step's (the values in parentheses are
  running means, never read).
- **a step's memory report between its phases** (ColossalAI's examples: ``[3/1000] Forward GPU
  memory usage: 8367.72 MB, CPU memory usage: 44096.98 MB``): a row of ``event="step"`` with no
  metric, the step of a total the run reached.
- **clu's LoggingWriter** (t5x, flax: ``[1000] collection=train accuracy=…, loss=2.3,
  timing/steps_per_second=8.1``): the bracketed number is the step.
- **the step between a loss's name and its value** when no step key is on the line (Tacotron 2
  and its descendants: ``Validation loss 8416:  0.711720``, ``Train loss 2300 0.412345 Grad
  Norm …``); Marian NMT's one-metric validation line (``[valid] Ep. 1 : Up. 50000 :
  ce-mean-words : 2.62238``) is an eval row when its metric is a loss.
- **a tqdm bar's postfix that names a loss** (also a bar printed without its bar, ``0% 420/788222
  [28:47<…, 3.71s/it, loss=nan, …]``) (fairseq ``--log-format tqdm``, NeMo, OpenRLHF:
  ``156/1563 [01:00<09:00, 2.60it/s, loss=9.600, …, num_updates=156, …]``): the step a postfix
  key names (``num_updates``, ``global_step=5.000``), else the bar's count (and the epoch its
  description names); the rate as the time per step. A bar without one is the progress
  parser's alone.
- **a table of metrics under a header of column names** (ultralytics: ``Epoch GPU_mem box_loss
  …`` then ``8/55 9.03G 0.1321 …: 100%|…| 954/954 […]``; ``MetricsTableParser``, a block
  parser): the values in the header's order, the step counted over the run from the epoch and
  the bar's count of its total.
- **evaluation lines** (fairseq's ``| valid | epoch 001 | valid on 'valid' subset | loss 9.1 |
  …``, clu's ``collection=eval``): an ``event="eval"`` row whose loss is the eval loss.
- JSON string values that are numbers are numbers (fairseq's ``--log-format json`` writes
  ``"loss": "16.195"``).

- **a table under a header row** (a block parser, ``HeadedTableParser``: fastai's ``epoch
  train_loss valid_loss accuracy time`` and its rows, minai's ``accuracy | loss | epoch | train
  | time``): the counter's column, the metrics' columns by the same vocabulary as a line's keys,
  a ``time`` of ``00:21`` in minutes and seconds.
- **a logger's table of keys and values** (a block parser, ``LoggerTableParser``:
  Stable-Baselines3's ``| time/ |`` section with ``fps``, ``iterations``, ``time_elapsed``;
  baselines' flat ``| nupdates | 782 |``): one row per table.
- **a clock since the start** on a step line (``total used time 7.18 (s)``, ``time_elapsed``,
  ``elapsed``): ``train_time_s``, which the throughput runbook differences into seconds per
  step only where it advances with the steps.
- **a federated loop's rounds** (a block parser, ``RoundParser``: ``[Round 10/100]`` then
  ``Averaged Train Loss: 0.5390``, PFLlib's ``Round number: N``, FedML's ``Communication round :
  N``, ``Round 1, Global Loss: 0.0333``): the round is the step, its first training loss the
  round's row.

A row needs a step and one of loss, eval loss, grad norm, a rate, seconds per step, TFLOPs or
MFU; a line with only an eval loss is an ``event="eval"`` row. Tested on real lines of trainers
that have no pattern of their own (``tests/test_metric_lines.py``).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

from .base import LineParser, Row, hms_to_s
from .iterations import HAPI_STEP_RE, KERAS_EPOCH_RE, KV_SUFFIX, counter_growth
from .progress import BARLESS_RE, LOGGABLE_RE, TQDM_FORMATS, TQDM_RE

_NUM = r"[-+]?(?:\d(?:\d*+,)*\d*+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|NaN|NAN|inf|Inf|INF|Infinity)\b"

# the step: a key of STEP_KEYS, an optional separator, the number, an optional total
STEP_RE = re.compile(
    r"(?<![\w/.])(?P<k>global[ _]?step|opt[ _]step|training[ _]step|train[ _]step|num_updates|"
    r"acc(?:umulated)?[ _]iter|"
    r"updates|up(?=\.)|iteration|iter|step|s(?=:\d)|tick(?=\s+\d+\s+kimg\b)|"
    r"(?<!this )(?<!per )(?<!each )episode|"
    r"batch(?=\s*+[:=#]?\s*+\[?\s*+\d+\s*+/\s*+\d|\s*+[:=]\s*+\d+\s*+,|\s+\d+\s*+\|)|batch_id(?=\s*+[:=]\s*+\d+\s*+,))"
    r"s?(?:[ _](?:index|idx))?(?![\w/])"
    r"(?:(?<=\w)['\"](?=\s*:))?"
    r"(?:\s+at(?=\s+\d))?"
    r"\.?\s*+[:=#]?\s*+\[?\s*+"
    r"(?P<n>\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.0+(?!\d))?(?P<sfx>[KM](?![A-Za-z]))?\s*"
    r"(?:/\s*+(?P<tot>\d+))?(?![\d%]|\.\d)(?!(?:[mu\u00b5]?s|sec|min)(?:\b|\d))"
    r"(?!\s(?:[mu\u00b5]?s|sec|min)\b)",
    re.IGNORECASE)  # (a percentage is no step, nor a decimal, but a sentence's full stop ends
# one: GLIA-Net's "train iter 3010. epoch 1/200. total_loss: 0.2283", MeteorsHub/GLIA-Net#17;
# nor a duration: kuangliu/pytorch-cifar's
# progress_bar and its copies print the step's time, "Step: 88ms | Tot: 34s394ms | Loss: …"
# (glued to its unit, or a unit word after a space: "Step: 12 s"; a key after a space that
# starts with "s" and a digit is none, the multi-stage losses of CPM/OpenPose trainers under
# their step: "S1 loss: 0.02 | S2 loss: …", yaoqi-zd/FashionAI_KeyPoint_Detection_Challenge_Keras#2); a
# key may call the step an index: "iteration index: 200, batch loss: 82.67", "step_idx: 5"; BasicSR
# writes thousands separators: "iter:   3,800"; PaddleRec's trainer names the batch of the epoch
# "batch_id" ("epoch: 0, batch_id: 500, AUC:0.788134, …, loss:0.18541333, …, ips: 1822.08655
# ins/s", BamLubi/Paddle-SIGN train.log); a logger that formats every value as a float
# writes a whole step with zeros after the point: "step=6.0000"; LeRobot abbreviates it:
# "step:2K", thousands rounded, ``STEP_SUFFIX``; a keyed batch is a step only after its epoch,
# with its total, before a comma or between "|" fields: monodepth2's trainer and its forks,
# "epoch   0 | lr 0.000100 |lr_p 0.000100 | batch    250 | examples/s:  22.1 | loss: 0.13400 |
# …", noahzn/Lite-Mono#98); OpenPCDet and its forks count the run's iterations as the
# accumulated iter beside the epoch's: "epoch: 17/36, acc_iter=242500, cur_iter=3394/14065, …"
# (OpenPCDet's train_utils' accumulated_iter; a LION fork's committed nohup.out); a reinforcement
# learning loop counts episodes, ranked below every other counter: "Episode 112 - Steps this
# episode 78332 - … - Mean Loss nan - …" (isaacbilsel/PyBoy-RL's DQN; "this episode" is none)
STEP_SUFFIX = {"K": 1000, "M": 1000000}
# a whole epoch number before the step ("Epoch 1 | Step 6500/6501", "Epoch: 0   Global Step: 20"):
# kept in ``epoch`` so that a step counter that restarts every epoch can be counted on
# ("ep: 0, batch: 20, …, loss: 10.98": "ep" only with its separator)
EPOCH_RE = re.compile(r"(?<![\w/.])(?:epoch\s*+[:=#]?|ep\s*+[:=])\s*+\[?\s*+(?P<e>\d+)(?![\d.])",
                      re.IGNORECASE)
# the epochs in all right after an epoch counter ("End of epoch 134 / 500000 	 Time Taken: …")
EPOCH_TOTAL_RE = re.compile(r"\s*+/\s*+(?P<tot>\d+)\b")
# an epoch of its total right after the step's counter, when none stands before it: "[batch
# 10/152, epoch 1/15]: loss_rmse:0.1309 …" (ShadowDet's logger, corpus
# gpu_crash-fgsd-shadowdet-healthy), "[Batch %d/%d] [Epoch %d/%d] [G pixel: %f]" (ESRGAN
# trainers after eriklindernoren/PyTorch-GAN); the total tells it from a bare number
EPOCH_AFTER_RE = re.compile(
    r"(?:\s*+(?:\]\s*+\[|[,;|])|\s)\s*+epoch\s*+[:=#]?\s*+\[?\s*+(?P<e>\d+)\s*+/\s*+\d+(?![\d.])",
    re.IGNORECASE)
# the event of a row whose only counter is its epoch (``diagnose.common.epoch_counted``)
EPOCH_EVENT = "epoch"
# the PyTorch examples' counter, when no step key is on the line: "Train Epoch: 1 [51200/490871
# (10%)]" (samples of the epoch); its iteration is epoch × total + count
# timm's train.py: "Train: 1 [  50/500 ( 10%)]  Loss: 4.234 (4.301)  Time: 0.512s,  500.12/s  (0.520s,
#  492.31/s)  LR: 1.000e-03" (batches of the epoch; the values in parentheses are running means)
# the same counter without the word, its percentage the tell, the epoch of a total inside the
# bracket or none (ALCF's ai4sci trainer: "[0/1: 2560 / 160145 (2%)] epoch=0.0000 dt=0.2999
# running_loss=0.0005"), or an epoch of its own before it ("Train Epoch: [1/10] [2560/60000 (4%)]")
EXAMPLE_STEP_RE = re.compile(
    r"(?<![\w/.])(?:epoch|train):?\s*(?P<e>\d+)\s*\[\s*(?P<n>\d+)\s*/\s*(?P<tot>\d+)\s*"
    r"(?:\(\s*\d+%\s*\))?\s*\]"
    r"|\[\s*(?:(?P<be>\d+)\s*/\s*\d+\s*:\s*)?(?P<bn>\d+)\s*/\s*(?P<btot>\d+)\s*"
    r"\(\s*\d+(?:\.\d+)?\s*%\s*\)\s*\]", re.IGNORECASE)
# the MetricLogger counter of torchvision's references and the trainers that copied it, when
# no step key is on the line: "Epoch: [0]  [ 0/84]  eta: 0:02:17  lr: …  loss: 1.6518 (1.6518)",
# DLRM's "Epoch:[0/1] [592/75869]  eta: 0:31:32  loss: 0.1604  step_time: 25.1425 ms": the
# batch of the epoch (the loss runbook counts it on across epochs)
BRACKET_STEP_RE = re.compile(
    r"(?<![\w/.])epoch\s*+:?\s*\[\s*(?P<e>\d+)(?:\s*/\s*\d+)?\s*\]\s*"
    r"\[\s*(?P<n>\d+)\s*/\s*(?P<tot>\d+)\s*\]"
    # the same two counters without the word, at the start of the line (the DCGAN example and
    # its descendants: "[24/25][937/938] Loss_D: 0.0120 Loss_G: 6.1335", NVIDIA/nccl#293's
    # "[2/20][4084/7614] Loss: 9.590029"): the epoch of a total, then the batch of a total;
    # logging's asctime may stand before them (PVD's and its descendants' '%(asctime)s :
    # %(message)s': "2026-04-06 07:01:11,957 : [101/5000][  0/  7]    loss:     0.2454,
    # grad_norm:     0.1428", corpus timeout-pcdiff-implant-8gpu-healthy)
    # Swin Transformer's logger and its descendants (Video Swin, SimMIM, X-CLIP) put "Train: "
    # before them: "INFO Train: [19/30][1750/1819]	eta 0:00:41 lr 0.000002 …	tot_loss 0.0718"
    r"|(?:^\s*(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d+)?\s*+[:|-]?\s*)?|\btrain(?:ing)?:\s*+)"
    r"\[\s*(?P<pe>\d+)\s*/\s*\d+\s*\]\s*\[\s*(?P<pn>\d+)\s*/\s*(?P<ptot>\d+)\s*\]",
    re.IGNORECASE)
# the epoch and the batch in one bracket, at the start of the line or of a logger's message:
# PyTorch's CIFAR-10 tutorial, print(f'[{epoch + 1}, {i + 1:5d}] loss: …') ("[1,  2000] loss:
# 2.186") and the loops written from it; I-JEPA's logger ("INFO:root:[137,   520] loss: 0.186
# masks: 68.5 44.3 [wd: 1.94e-01] …", FalsoMoralista/ijepa)
EPOCH_COMMA_BATCH_RE = re.compile(r"(?:^\s*+|(?<=:))\[\s*+(?P<e>\d+),\s*+(?P<n>\d+)\]\s+(?=\S)")
# the MetricLogger counter under a header of the trainer's own words and no epoch (EPFL-VILAB's
# 4M and nano4M: "Training  [38140/38147]  eta: 0:00:03  lr: 0.000001  loss: 3.5230 (3.8986)
# …", corpus timeout-nano4m-2node-healthy): the run's step of its total; an evaluation's header
# ("Test:  [ 0/40]  eta: …") counts no training step
LOGGER_COUNTER_RE = re.compile(
    r"^\s*+(?P<h>[A-Za-z][\w ]{0,40}?)?\s*+:?\s*+\[\s*+(?P<n>\d++)\s*+/\s*+(?P<tot>\d++)\s*+\]"
    r"\s++eta:")
EVAL_HEADER_RE = re.compile(r"\b(?:test|val|valid|validation|eval|evaluation)\b", re.IGNORECASE)
# the run's counter, bare at the start of the line (an opening bracket before it), before the
# MetricLogger counter (carpedm20/DCGAN-tensorflow model.py and its forks: "[%8d Epoch:[%2d/%2d]
# [%4d/%4d] time: %4.4f, d_loss: %.8f, g_loss: %.8f" % (counter, epoch, …, idx, batch_idxs, …),
# "[     393 Epoch:[ 1/25] [ 119/ 273] time: 299.8392, d_loss: 1.39557624, g_loss: 0.69223416"):
# the counter runs on across epochs, the batch restarts each one
LEAD_RUN_COUNTER_RE = re.compile(r"^\s*+\[?\s*(?P<n>\d+)\s+(?=epoch\s*+:?\s*\[)", re.IGNORECASE)
# the phase's counter of NVIDIA's GNMT (MLPerf's rnn_translator, DeepLearningExamples'
# GNMT/PyTorch seq2seq/train/trainer.py: "0: TRAIN [3][1930/1938]\tTime 0.178 (0.158)\t…\tLoss/tok
# 3.0178 (3.1454)\tLR 5.000e-04", "0: VALIDATION [0][0/3]\t… Loss/tok 4.39 (4.39)", "0: TEST
# [3][0/3]\tTime 0.676 (0.676)\tDecoder iters 110.0 (110.0)\tTok/s 24259 (24259)"): the phase,
# its epoch, the batch of the epoch; it wins over any key ("Decoder iters" is a metric); a phase
# other than training is an evaluation
PHASE_STEP_RE = re.compile(
    r"(?<![\w/.])(?P<phase>TRAIN(?:ING)?|VALID(?:ATION)?|EVAL(?:UATION)?|TEST)\s*"
    r"\[\s*(?P<e>\d+)\s*\]\s*\[\s*(?P<n>\d+)\s*/\s*(?P<tot>\d+)\s*\]")
# the same three between "|" in the progress lines of facebookresearch's LogProgress (demucs,
# denoiser: name=f"Train | Epoch {epoch + 1}", then "{index}/{total} | {speed} | {metrics}"):
# "- Train | Epoch 8 | 286/573 | 1.43 it/sec | Loss 0.1167 | Reco 0.1139 | Grad 0.0902" (corpus
# loss_spike-audio-sep-demucs-musdb-healthy), "Valid | Epoch 1 | 1/3 | 0.31 it/sec | Loss 0.2213"
PIPE_PHASE_STEP_RE = re.compile(
    r"(?:^|\s|\]|:)(?P<phase>train(?:ing)?|valid(?:ation)?|eval(?:uation)?|test)\s*\|\s*"
    r"epoch\s*+[:#]?\s*(?P<e>\d+)\s*\|\s*(?P<n>\d+)\s*/\s*(?P<tot>\d+)\s*\|", re.IGNORECASE)
# a phase's word and its step of a total inside one bracket, when no step key is on the line
# (ML4HPC/JAX-CFD logs/train_log.txt, absl: "[Train 10/1882] {'grads_finite': 1.0, …,
# 'train_loss': 0.0077}"; the batch of an epoch after it: "[Epoch %d/%d][Train %d/%d] loss: %.4f
# acc: %.4f lr: %.6f"): the step, the epoch a bracket before it names; a phase other than
# training is an evaluation
PHASE_BRACKET_RE = re.compile(
    r"\[\s*(?P<phase>train(?:ing)?|eval(?:uation)?|valid(?:ation)?|val|test)\s*:?\s+"
    r"(?P<n>\d+)\s*/\s*(?P<tot>\d+)\s*\]", re.IGNORECASE)
# a count (of a total) named by its unit, when no step key is on the line (PyTorch's
# word_language_model: "| epoch   1 |   200/ 2983 batches | lr 20.00 | ms/batch 45.68 | …";
# HAKE-Action: "000 epoch, 06000 iter, average time 0.6359, loss 37.2266"; fairseq-lua, its
# optimizer's updates over the run: "| epoch 019 | 0161656 updates | words/s   14482| trainloss
#     1.94 | train ppl     3.84", facebookresearch/fairseq-lua#26): the step
COUNTER_STEP_RE = re.compile(
    r"(?<![\w/.(])(?P<n>\d+)(?:\s*/\s*(?P<tot>\d+))?\s+(?:batch(?:es)?|iters?|iterations|steps|updates)\b",
    re.IGNORECASE)
# PaddlePaddle's pass counter, when no step key is on the line: the batch of the pass (its
# epoch), "Pass 0, Batch 100, Cost 2.261713, {…}" (v2 API: PaddlePaddle/Paddle#5473), "[Pass 0,
# train batch 10]  loss 21.68535, …" (PaddlePaddle/models#4882), "Train Pass 2, batch 220,
# rtime 0.1222, time 0.1234, speed 26454.34" (its MLPerf ResNet-50)
PASS_STEP_RE = re.compile(
    r"(?<![\w/.])pass\s*+[:=]?\s*(?P<e>\d+)\s*,\s*(?:train\s+)?batch\s*+[:=]?\s*(?P<n>\d+)\b",
    re.IGNORECASE)
# an epoch, then the batch of that epoch, when no step key is on the line: MXNet's Speedometer
# ("Epoch[0] Batch [100]\tSpeed: 13736.09 samples/sec\tTrain-accuracy=0.78"; since MXNet 1.2 the
# window it measured, "Epoch[0] Batch [80-100]\tSpeed: 6.30 samples/sec\tLoss=25.10",
# BigDeviltjj/mxnet-cornernet#1: the window's end is the batch), gluon-cv's scripts ("[Epoch 1
# Batch 300] Training: accuracy=0.985", dmlc/gluon-cv#1663): the batch, counted on across epochs
# by the loss runbook like every per-epoch counter; a batch of an unknown number ("EPOCH 1 BATCH
# 80/inf(0.00%): train_loss=0.07478", an iterable dataset under Lightning, Lightning-AI/litData#340)
EPOCH_BATCH_RE = re.compile(
    r"(?<![\w/.])epoch\s*+[:=]?\s*+\[?\s*(?P<e>\d+)\s*+\]?\s*+[,|]?\s*batch\s*+[:=]?\s*+\[?\s*"
    r"(?:\d+\s*-\s*)?(?P<n>\d+)(?![\d.]|/(?!inf\b))", re.IGNORECASE)
# the same with the counters glued to their units, the epoch's before it: ESPnet2's trainer
# (espnet2/train/reporter.py, every recipe's train.log: "1epoch:train:6376-6750batch:
# iter_time=0.001, forward_time=0.005, loss=2.386, …", espnet/espnet#2674): the window's end is
# the batch; its "1epoch results: [train] … loss=2.853" is the epoch's mean, no step
EPOCH_GLUED_BATCH_RE = re.compile(
    r"(?<![\w/.])(?P<e>\d+)epoch:train:(?:\d+-)?(?P<n>\d+)batch\b")
# ESPnet2's epoch summary names how many batches the epoch trained ("1epoch results: [train]
# iter_time=0.001, …, loss=2.853, …, total_count=7507, [valid] loss=2.387, …, total_count=240"):
# the epoch's last batch, the run's progress (``event="step"``), whose count the next epoch's
# windows go on from; its loss is the epoch's mean, no point of the series
EPOCH_RESULTS_RE = re.compile(
    r"(?<![\w/.])(?P<e>\d+)epoch results: \[train\][^\[]*?\btotal_count=(?P<n>\d+)")
EPOCH_RESULTS_NEEDLE = "epoch results: [train]"
# bare counters at the start of a line, before its keyed metrics, when nothing else names the
# step: "268/446 (epoch 0), train_loss = 2.097" (the step of a total), "333 154 Loss=nan
# Time=0.040" (epoch, then the step), "590 | loss 6.1569 | lr …" (llama2.c and its forks: a
# "|" or "||" after the counter), "[  1]    1530 || B: 5.495 | … || timer: 0.321" (yolact: the
# epoch in brackets); the next token must be a word, so that a clock or a table row
# ("76930 2.6496577") is no step
LEAD_STEP_RE = re.compile(
    r"^\s*(?:\[\s*(?P<be>\d+)\s*\]\s*|(?P<e>\d+)\s+)?(?P<n>\d+)(?:\s*/\s*(?P<tot>\d+))?"
    r"(?=\s*(?:[,(]|\|\|?)?\s*[A-Za-z(])")
# the step of its total in brackets at the start of a line, before its "|"-separated fields
# (DA-AT-VFI's unified trainer: "[000500/50000] X4K    | loss 0.0488 | VRAM 9.8/15.9GB (62%) |
# GPU 0% | 3.04 it/s | ETA 271.3 min | batch 16"); a word next, as after a bare counter
LEAD_BRACKET_STEP_RE = re.compile(
    r"^\s*+\[\s*+(?P<n>\d++)\s*+/\s*+(?P<tot>\d++)\s*+\](?=\s*+(?:\|\|?)?\s*+[A-Za-z(])")
# a bare counter as the first " - " field of a record, after facebookresearch's LogFormatter
# prefix (XLM, UnsupervisedMT, SymbolicMathematics, TransCoder: "INFO - 03/11/25 12:39:30 -
# 0:00:47 -     200 -  256.73 equations/s -  4584.27 words/s - ARITHMETIC:  0.5819 - LR:
# 1.0000e-04", the step printed "%6i - "): a word or a rate with its unit next
LEAD_DASH_STEP_RE = re.compile(
    r"^(?:[A-Z]++ - \d\d/\d\d/\d\d \d\d:\d\d:\d\d - (?:\d+ days?, )?\d++:\d\d:\d\d - )?"
    r"\s*+(?P<n>\d++) - (?=\s*+(?:[A-Za-z]|\d++(?:\.\d++)?\s*+[A-Za-z]++/s\b))")
# counters joined by " : " at the start of a line, before its keyed metrics: the epoch, the
# epoch's batch of its total, then the run's step (ecmwf/WeatherGenerator trainer.py, '{:03d} :
# {:05d}/{:05d} : {:06d} : loss = {:.4E} (lr={:.2E}, s/sec={:.3f})' with epoch, batch, batches
# per epoch, istep: "000 : 00110/00239 : 000110 : loss = 1.1995E-01 (lr=1.59E-04, s/sec=0.514)")
COLON_COUNTERS_RE = re.compile(
    r"^\s*(?P<e>\d+) : \d+/\d+ : (?P<n>\d+) : (?=[A-Za-z])")
# the step between a loss's name and its value, when no step key is on the line (Tacotron 2
# and its descendants, Mellotron, Flowtron, WaveGlow: "Validation loss 8416:  0.711720  ",
# "Train loss 8416 0.711720 Grad Norm 1.23 1.50s/it"): a whole number, then a colon or a
# number with a point
LOSS_STEP_RE = re.compile(
    r"(?<![\w/.])(?P<k>[A-Za-z][A-Za-z_]*(?: [A-Za-z_]+)?) (?P<n>\d+)"
    r"(?=\s*:\s*[-+\d.]|\s+[-+]?(?:\d*\.\d|nan\b|inf\b))")
# the step alone, so that the loss's name stays on the line to be read with its value
STEP_NUMBER_RE = re.compile(r"(?P<n>\d+)")
# clu's LoggingWriter (t5x, flax examples, big_vision): logging.info("[%d]%s %s", step,
# " collection=train", "k=v, …"): "[1000] collection=train accuracy=0.51, loss=2.4, …"
CLU_STEP_RE = re.compile(
    r"(?:^|\]\s*)\[(?P<n>\d+)\](?=\s+(?:collection=\S+\s+)?[A-Za-z_][\w/.]*=)")
# a time over a window of iterations: "Elapsed time: 198.7967s(100 iters)"
WINDOW_TIME_RE = re.compile(r"(?P<v>\d+(?:\.\d+)?)\s?s\s*\(\s*(?P<n>\d+)\s*iters?\s*\)")
# preference among step keys on one line (a global step beats an epoch-local step)
# (Marian NMT's "Up. 405500" is its update counter)
STEP_RANK = {"globalstep": 0, "optstep": 0, "trainingstep": 0, "trainstep": 1, "numupdates": 0,
             "numofupdates": 0,
             "acciter": 0, "accumulatediter": 0, "totalit": 0,
             "updates": 1, "up": 1,
             "iteration": 2, "iter": 2, "step": 3, "s": 3, "currentsteps": 1, "currentstep": 1,
             "stepnum": 3, "epochnum": 4, "batch": 4, "batchid": 4, "episode": 5}
# a JSON string value that is a step of a total ("global_step/max_steps": "1/10000")
STEP_OF_TOTAL_RE = re.compile(r"(?P<n>\d+)/(?P<tot>\d+)")
# a JSON string value that is a number (fairseq's json log format writes every stat as one:
# {"epoch": 1, "update": 0.004, "loss": "16.195", …, "num_updates": "100", "gnorm": "5.155"})
NUMBER_STR_RE = re.compile(r"[-+]?(?:\d++\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)", re.IGNORECASE)
# MLPerf's logging (":::MLLOG {…, "key": "tracked_stats", "value": {"throughput": 56479.9},
# "metadata": {…, "step": 2}}"): an event's fields, the step in its metadata, and the names
# its benchmarks give a rate (samples per second: images, sequences)
MLLOG_FIELDS = frozenset(("key", "value", "metadata"))
MLLOG_STEP_KEYS = ("step", "step_num", "epoch_num")
# the run's position in samples (mlperf_logging's SAMPLES_COUNT), the step of a one-value event
# whose metadata names no other: llama2_70b_lora's '"key": "train_loss", …, "metadata": {…, "samples_count":
# 1680, "lr": …}', whose tracked_stats name the same count "step"
# (mlcommons/training_results_v4.1 Supermicro llama2_70b_lora result_10.txt)
MLLOG_SAMPLES_KEY = "samples_count"
MLLOG_KEYS = {"throughput": "samples_per_second"}
# JSON fields that give the training clock as "H:MM:SS" (LLaMA-Factory's trainer_log.jsonl:
# "elapsed_time": "0:00:24", "remaining_time": "5:58:33"): the run's time so far, ``train_time_s``
CLOCK_KEYS = frozenset(("elapsed_time", "elapsed", "time_elapsed"))
CLOCK_RE = re.compile(r"(?:\d+ days?, )?\d+:\d\d:\d\d(?:\.\d+)?")
# the prefix of fairseq's end-of-epoch JSON stats ("train_num_updates"): its step key behind it
JSON_TRAIN_PREFIX = "train_"
# JSON fields that give the run's total steps
TOTAL_KEYS = ("total_steps", "max_steps", "totalsteps", "total_iterations", "train_iters")

# key [:=] value, or a quoted key (JSON, a Python dict); a key's words may be joined by a
# spaced slash (MLPerf SSD's "avg. samples / sec: 4425.19")
PAIR_RE = re.compile(
    r"(?:(?P<q>[\"'])(?P<qk>[A-Za-z_][\w ./()-]{0,60}?)(?P=q)\s*:\s*[\"']?"
    r"|(?<![\w/.])(?P<k>[A-Za-z_][\w./()]*(?:(?: / | )[A-Za-z_][\w./()]*){0,4}?)"
    r"(?:\s?\((?P<pu>[A-Za-z%][\w/%]*)\))?"  # a unit in parentheses after the key, DGL's
    # "Speed (samples/sec) 43672.97", "Time (ms) 12.3" (``UNIT_KEYS``)
    r"\s*(?:[:=]| is (?=[-+.\dnNiI])|(?P<sp> ))\s*)(?P<ob>\[(?=[-+.\dnNiI]))?"
    rf"(?P<v>{_NUM})(?(ob)\])(?:\s?(?P<u>ms\b|s\b|%|[KMGT]\b))?(?![:\d]|-\d\d-|[dhm]\b|s \d)")
# (a date is no value: "Time: 2024-10-31 18:32:24; Epoch: 69; …"; nor a clock in days, hours,
# minutes: StyleGAN/EDM's "time 6d 23h 59m", "time 1m 19s", "time 33s 220ms"). A value may be
# a one-element array as Paddle and numpy print it: "loss: [10.000229]" (PaddleSlim#1582),
# "Loss = [1.1742566]" (jina-ai/finetuner#2)
# value unit: "9.8it/s", "2.3 s/it", "5123 tokens/s", "812.5 samples/sec", "2942 ms/iter"; a
# thousands or millions suffix before a rate ("throughput=60.65K wps", GluonNLP's transformer
# script: words per second)
UNIT_RE = re.compile(
    rf"(?<![\w.])(?<!\d,)(?P<v>{_NUM})(?P<mult>[KM](?= ?(?:wps|tok|tokens|words|samples)\b))?"
    r"\s?(?P<unit>it/s|s/it|tokens/s(?:ec)?|tok/s(?:ec)?|words/s(?:ec)?|wps|"
    r"samples/s(?:ec)?|examples/s(?:ec)?|records/s(?:ec(?:ond)?)?|img/s(?:ec)?|images/s(?:ec)?|"
    r"TFLOPS|TFLOP/s|secs?/step|s/step|secs?/batch|s/batch|secs?/iter|s/iter|"
    r"ms/(?:iter|it|step|batch)|(?<=\d)/s)(?![\w/])",
    re.IGNORECASE)

# any unit word right after a "speed" value ("1.95 step/s", "3.1 batches/s"): only a bare speed
# (PaddlePaddle's "speed 26454.34") is read as samples per second
SPEED_UNIT_RE = re.compile(r"\s?[A-Za-z(]")

# a field that is only a time, between "|"/"(" and "|"/")"/the end (llm.c: "| lr 6.00e-06 | (345.67 ms |
# 1516543 tok/s)", "| 345.12 ms | 42.1% bf16 MFU |"): the time of the step
FIELD_TIME_RE = re.compile(r"(?:^|[|(])\s*(?P<v>\d+(?:\.\d+)?)\s?(?P<u>ms|s)\s*(?=[|)]|$)")
# a percentage before the word MFU (llm.c's "42.1% bf16 MFU")
MFU_BEFORE_RE = re.compile(r"(?P<v>\d+(?:\.\d+)?)%\s*(?:[A-Za-z0-9]+\s+)?MFU\b")
# a time per step in parentheses after the metrics: "(2.34 sec/step)", "(1.349622s)"
PAREN_TIME_RE = re.compile(r"\((?P<v>\d+(?:\.\d+)?)\s?(?P<u>ms|s|secs?)(?:/(?:step|it|iter))?\)")

# a unit of tokens right after a rate's value: the rate is of tokens, whatever its key says
# (PaddleFleetX: "ips: 3001 tokens/s")
TOKENS_AFTER_RE = re.compile(r"\s*(?:tokens|tok|words)/s", re.IGNORECASE)
# the pseudo-column of a samples-per-second running mean (see METRIC_KEYS)
RUNNING_MEAN = "samples_per_s_mean"
# the interval's value in parentheses right after a running mean's ("A (B)")
PAREN_CURRENT_RE = re.compile(rf"\s*\(\s*(?P<v>{_NUM})\s*\)")
# normalised key -> column (see ``_norm``)
METRIC_KEYS: dict[str, str] = {
    **dict.fromkeys(("loss", "trainloss", "lmloss", "totalloss", "totloss", "losstotal", "trainlmloss",
                     "reducedtrainloss", "curbatchloss", "lossavg", "avgloss", "trainavgloss",
                     "batchloss", "pertokenloss", "trl", "cost",
                     # RETURNN names each loss by its layer: "ce 7.114" (cross entropy)
                     "ce",
                     # Marian's validation metrics: "ce-mean-words", "cross-entropy"
                     "cemeanwords", "crossentropy",
                     # MLPerf SSD's "Loss function: 22.825, Average Loss: 0.023" (the step's
                     # loss; the average beside it is an EMA started at zero)
                     "lossfunction",
                     # LBANN: "Model 0 training epoch 2 objective function : 1.80915"
                     "objectivefunction"), "loss"),
    **dict.fromkeys(("evalloss", "valloss", "validloss", "validationloss", "testloss",
                     "devloss", "evallmloss", "vallmloss", "tel"), "eval_loss"),
    **dict.fromkeys(("gradnorm", "gnorm", "gradientnorm", "totalgradnorm", "globalgradnorm",
                     "gradnormtotal", "gradnormbeforeclip", "norm", "grdn"), "grad_norm"),
    **dict.fromkeys(("lr", "learningrate", "lrate"), "lr"),
    **dict.fromkeys(("lossscale", "curscale"), "loss_scale"),
    **dict.fromkeys(("samples/s", "samples/sec", "samplespersecond", "samplespersec",
                     "trainsamplespersecond", "examples/sec", "examples/s", "ex/s", "img/s", "img/sec",
                     "images/s", "images/sec", "samplespers", "throughput(samples/s)", "rate",
                     "currsamplespersec", "seqspersecond",
                     # PaddlePaddle's trainers (PaddleOCR, PaddleDetection, PaddleClas): "ips:
                     # 16.05686" is samples (images) per second; "ips: 3001 tokens/s" is
                     # tokens (``TOKENS_AFTER_RE``)
                     "ips", "avgips",
                     # MXNet's Speedometer ("Speed: 429.55 samples/sec"), PaddlePaddle's MLPerf
                     # ResNet-50 ("speed 26454.34": images per second); a speed printed with a
                     # unit of its own is read by the unit (``UNIT_RE``)
                     "speed",
                     # NVIDIA's speech recognisers (RNN-T, Jasper): utterances per second
                     "avgtrainutts/s", "trainutts/s",
                     # MLPerf SSD (NVIDIA v0.6-v0.7): "avg. samples / sec: 4425.19" is the rate
                     # over the print interval (its sample count is reset at each print)
                     "avg.samples/sec",
                     # NVIDIA's MXNet ResNet-50 MLPerf results: tracked_stats {"imgs_sec": …}
                     "imgssec", "imgs/sec", "imgs/s"),
                    "samples_per_s"),
    # running means since the start printed beside the interval's rate (torch_xla's and
    # Cerebras' "Rate=… GlobalRate=…", DeepSpeed's "RunningAvgSamplesPerSec=…,
    # CurrSamplesPerSec=…"): the rate only when the line prints no interval rate
    # TF's ExamplesPerSecondHook ("Average examples/sec: 2841.23 (3118.56), step = 60"): the
    # mean since the start, then the interval's rate in parentheses (``PAREN_CURRENT_RE``)
    **dict.fromkeys(("globalrate", "runningavgsamplespersec", "averageexamples/sec",
                     "averagesamples/sec", "avgexamples/sec", "avgsamples/sec"), RUNNING_MEAN),
    **dict.fromkeys(("tokens/s", "tokens/sec", "tok/s", "tok/sec", "tokenspersec",
                     "tokenspersecond", "tokens_per_sec", "wps", "words/s",
                     "targettokenspersecond"), "tokens_per_s"),
    **dict.fromkeys(("tokens/s/gpu", "tokens/sec/gpu", "tokenspersecpergpu",
                     "tokenspersecondpergpu", "tgs", "tokens/s/device", "tokenspersecperdevice",
                     "tokspersecpergpu", "throughput(tokens/s/gpu)"), "tokens_per_s_per_gpu"),
    **dict.fromkeys(("tflops", "tflop/s", "tflops/gpu", "tflop/s/gpu", "modeltflops",
                     "tflopspergpu", "modeltflopspergpu", "tflop/s/device"), "tflops"),
    **dict.fromkeys(("mfu", "modelflopsutilization"), "mfu"),
    **dict.fromkeys(("steps/sec", "steps/s", "stepspersec", "stepspersecond", "it/sec"),
                    "steps_per_s"),
    **dict.fromkeys(("steptime", "itertime", "timeperstep", "time/iter", "time/step",
                     "sec/step", "s/step", "batchtime", "dt", "time", "timeperiteration",
                     "elapsedtimeperiteration", "secperstep", "stepduration", "s/iter",
                     "ms/batch", "ms/step", "ms/iter", "ms/it", "time/batch", "timer",
                     "trainsteptime", "trainsteptiming", "trainsteptimingins",
                     # PaddlePaddle's "batch_cost: 5.97875 s" / "avg_batch_cost: 0.51164 sec"
                     # (the step's time, its reader_cost included)
                     "batchcost", "avgbatchcost",
                     # LeRobot's "updt_s:0.501" (the update's time; its "data_s" is the wait)
                     "updts",
                     # MindSpore's TimeMonitor and the suites built on it (mindocr, mindcv,
                     # mindformers): "per step time: 223.489 ms"
                     "persteptime",
                     # StyleGAN2-ADA/StyleGAN3/EDM's training loop: "tick 1939  kimg 97043.1
                     # time 6d 23h 59m  sec/tick 306.7  sec/kimg 6.13 …" (the tick is its step)
                     "sec/tick",
                     # BasicSR's trainers (ESRGAN, mmsr, traiNNer) at an epoch's end: "End of
                     # epoch 134 / 500000 	 Time Taken: 4.9714 sec" (victorca25/traiNNer#72)
                     "timetaken"),
                    "elapsed_s"),
    # the run's wall time since its start, printed on every logged step: ``train_time_s``, a
    # clock the throughput runbook differences into seconds per step (PaddlePaddle's PredNet
    # loop: "Epoch 0, Step 25, total used time 7.178 (s), avg loss so far is 0.1098"; TF 1.x's
    # speech_commands: "Elapsed 5976.983817, Step #10825: rate 0.000200, …, cross entropy
    # 0.098157", tensorflow/tensorflow#31032; Stable-Baselines3's "time_elapsed"). Not "Elapsed
    # time": CosFace's "Elapsed time: 198.7967s(100 iters)" is the time of its interval
    **dict.fromkeys(("totalusedtime", "timeelapsed", "elapsed", "totalelapsedtime",
                     "wallclocktime"), "train_time_s"),
}
TRAIN_PREFIXES = ("train/", "training/", "trainer/", "perf/", "throughput/", "optim/", "timing/")
# columns that make a line a step line (a learning rate or loss scale alone does not)
SIGNAL_COLUMNS = ("loss", "eval_loss", "grad_norm", "samples_per_s", "tokens_per_s",
                  "tokens_per_s_per_gpu", "tflops", "mfu", "elapsed_s")
# what the reader needs in a line before it looks (the fast engine's needles)
NEEDLES = ("loss", "Loss", "LOSS", "it/s", "s/it", "/s", "/sec", "tflop", "TFLOP", "mfu",
           "MFU", "gnorm", "grad_norm", " trl:", " tel:", ":::MLLOG", "timer:", " l_",
           "[valid] Ep. ", "speed", "Cost ", "objective function",
           # a perplexity where no loss is printed (``PERPLEXITY_RE``)
           "erplexity", "ppl:", "ppl=", "ppl'", 'ppl"', "ppl ", "PPL",
           # a bare total as the loss (``TOTAL_KEY``)
           " total: ", " total=",
           # TF2 Object Detection API since TF 2.4: "Step 1000 per-step time 17.001s" (no loss)
           "per-step time",
           # StyleGAN2-ADA/StyleGAN3/EDM's progress line: "tick 12  kimg 48.0  time 1h 02m
           # sec/tick 301.2  sec/kimg 6.27 …" (NVlabs' training_loop.py)
           "sec/tick",
           # the MetricLogger counter's line with its time and no loss (DeiT/DINO-style trainers:
           # naver/unic#1 "Training - Epoch: [0/10]  [ 40/117]  eta: 0:04:18    time: 3.160756
           # data: 0.000113  max mem: 9312")
           "eta: ",
           # a rate named by words joined with "per" and no "/" (aalexchengg/llmsys_s25_hw4
           # out/dp.out: "Epoch 0 on Rank 0: Training Time = 36.07, Tokens_per_sec = 104113.6";
           # "samples_per_second", "Tokens Per Sec", DeepSpeed's "tokensPerSec")
           "_per_s", "per sec", "Per Sec", "PerSec",
           # BasicSR's epoch end, its time and no loss ("End of epoch 134 / 500000 	 Time Taken:
           # 4.9714 sec", victorca25/traiNNer#72): the epoch, where nothing else counts steps
           "Time Taken")
# a line that reports an evaluation whatever its keys say: fairseq's "| valid | epoch 001 | valid on
# 'valid' subset | loss 9.1 | … | num_updates 1563", clu's "[1000] collection=eval loss=…"
# (also PaddleClas's phase tag, "[Eval][Epoch 382][Iter: 0/98]… ips: 34.09 images/sec",
# justld/CycleMlp_paddle: the evaluation loader's rate, not training's)
EVAL_LINE_RE = re.compile(r"\bvalid(?:ation)? on '|\|\s*valid\s*\||\bcollection=(?:eval|valid|validation|test)\b"
                          r"|\[(?:Eval|Val|Valid|Test)\]\[")
# Marian NMT's validation line, one metric each, its name hyphenated ("[valid] Ep. 1 : Up.
# 50000 : ce-mean-words : 2.62238 : new best"; "cross-entropy", "bleu-detok"): an eval row
# when the metric's name is a loss of METRIC_KEYS
MARIAN_VALID_RE = re.compile(
    rf"\[valid\] Ep\. \d+ : Up\. (?P<n>\d+) : (?P<k>[A-Za-z][\w-]*) : (?P<v>{_NUM})")
# a line that states a setting or a summary, not a step
NOT_A_STEP_RE = re.compile(r"\b(?:max|warmup|total|save|eval|logging|num_train)_steps\b|"
                           r"Namespace\(|\bargs\b|\bconfig\b", re.IGNORECASE)


# a key naming a loss that is not one of METRIC_KEYS: a part of the loss ("loss_net", "Train
# Loss ce"); an eval part when it starts with one of EVAL_WORDS
# (BasicSR and its forks name every loss term "l_<what>": "l_pix", "l_g_total", "l_all"; a
# regression or diffusion loop names its objective by the error it is, "MSE": thunder-1's bar
# "816/2500 [07:24<13:12,  2.12it/s, MSE=0.6866, RND=N/A]", AdrianTuci1/thunder-1
# training_prefixlm.log; "val_mse" is an eval part)
LOSS_PART_RE = re.compile(r"loss|^l_[a-z]|(?:^|[\s_\-/.])mse(?:$|[\s_\-/.])", re.IGNORECASE)
# a perplexity (exp of the loss) where a line prints no loss: the series that diverges, read in
# its own units ("ppl", an eval part "val_ppl"; DeepSpeedExamples' random-LTD GPT fine-tune,
# "Step at 84 with Perplexity: 378.4", and its data-efficiency one, "'step':10, 'ppl': 61.77,
# 'seq_len': 264"): a stand-in, taken after any loss or loss part of the line. An evaluation's
# perplexity is none: the eval loss beside a training loss is in the loss's units
PERPLEXITY_RE = re.compile(r"(?:^|[\s_\-/.])(?:ppl|perplexity)$", re.IGNORECASE)
# a step line's bare "total", its only loss-like key, is the loss its parts add up to (fer-ssl's
# "[epoch: 144/200, iter: 175/640] total: 1.013207"): a stand-in like the perplexity, after it
TOTAL_KEY = "total"
STAND_INS = {"ppl": "loss", TOTAL_KEY: "loss"}
EVAL_WORDS = ("eval", "val", "valid", "validation", "test", "dev")
# (and a comparison of two measures, "accept_vs_ppl": a correlation printed beside the step,
# nips-specquant's "Rhos: {'accept_vs_ppl': 'nan', …}", no loss of the step)
NOT_LOSS_PARTS = ("scale", "scaler", "weight", "coef", "type", "fn", "func", "vs")

# keys that name another thing as the tail of a hyphenated key ("learning-rate")
GLUED_KEYS = frozenset(("rate",))
# columns a key may reach by dropping its leading words ("INFO train loss" is a loss; "elapsed
# time" is no time per step)
SUFFIX_COLUMNS = ("loss", "eval_loss", "grad_norm", "steps_per_s")
# keys known only whole: llm.c's "norm" is the grad norm, a "weight norm" is not
# (RETURNN's "ce" is its loss; Bagel's "Train Loss ce" is one part of a loss); Marian's "Cost"
# is its loss, MXNet's "Epoch[0] Time cost=2.097635" (gluon-cv, kubeflow's MXNet examples) and
# verl's "update_weights done, time cost: 2.19s" are a duration
WHOLE_KEYS = frozenset(("norm", "ce", "cost"))


@lru_cache(maxsize=4096)
def _norm(key: str) -> str | None:
    """The column of a raw key, trying its longest known suffix of words (memoised)."""
    words = key.split()
    for i in range(len(words)):
        k = " ".join(words[i:]).lower()
        for p in TRAIN_PREFIXES:
            if k.startswith(p):
                k = k[len(p):]
                break
        col = METRIC_KEYS.get(re.sub(r"[\s_\-]", "", k))
        if col is not None and (i == 0 or (col in SUFFIX_COLUMNS and k not in WHOLE_KEYS)):
            if col == "loss" and any(w.lower() in EVAL_WORDS for w in words[:i]):
                return "eval_loss"  # "val mse loss"
            return col
    return None


@lru_cache(maxsize=4096)
def _known_whole(key: str) -> bool:
    """Whether a multi-word key is a metric key as a whole (``step time``, ``grad norm``), not
    only by its last words (memoised)."""
    k = key.lower()
    for p in TRAIN_PREFIXES:
        if k.startswith(p):
            k = k[len(p):]
            break
    return re.sub(r"[\s_\-]", "", k) in METRIC_KEYS


# a unit in parentheses after a key that says what its value is: a rate's unit names the
# column whatever the key ("Speed (samples/sec)", "Throughput (tokens/s)"); a time's unit
# (s, sec, ms) only scales a key that is a time ("Time (ms)")
TIME_UNITS = frozenset(("s", "sec", "secs", "ms"))
RATE_COLUMNS = frozenset(("samples_per_s", "tokens_per_s", "tokens_per_s_per_gpu", "tflops",
                          "steps_per_s"))


def _unit_key(col: str | None, unit: str) -> tuple[str | None, str | None]:
    """The column of a key with a unit in parentheses after it (``PAIR_RE``'s ``pu``), and
    the time unit that scales it (``ms``), if any."""
    low = unit.lower()
    if (ucol := METRIC_KEYS.get(low)) in RATE_COLUMNS:
        return ucol, None
    if low in TIME_UNITS:
        return (col, low) if col == "elapsed_s" else (None, None)
    return col, None


@lru_cache(maxsize=4096)
def _loss_part(key: str) -> str | None:
    """``loss`` or ``eval_loss`` for a key that names a part of a loss (``loss_net``,
    ``step_loss``, ``Train Loss ce``, ``val mse loss``), ``ppl`` for a training perplexity
    (``PERPLEXITY_RE``), else None (memoised)."""
    low = key.lower()
    ppl = PERPLEXITY_RE.search(low) is not None
    if not ppl and not LOSS_PART_RE.search(low):
        return None
    words = re.split(r"[\s_\-/.]+", low)
    if any(w in NOT_LOSS_PARTS for w in words):
        return None
    part = "eval_loss" if words and words[0] in EVAL_WORDS else "loss"
    return ("ppl" if part == "loss" else None) if ppl else part


# a rate key behind an evaluation's word (HF Trainer's "eval_samples_per_second", "eval/samples_per_second",
# "test_samples_per_second", "val samples/s"): the evaluation's rate, never training's; an
# eval row carries it (``_finish``), a training row does not
EVAL_RATE_RE = re.compile(r"^(?:eval|val|valid|validation|test|dev)[\s_/.-]+(?P<rest>\S.*)$",
                          re.IGNORECASE)
EVAL_RATE_COLUMNS = ("samples_per_s", "tokens_per_s")


@lru_cache(maxsize=4096)
def _eval_rate(key: str) -> str | None:
    """The rate column of an evaluation's rate key (``EVAL_RATE_RE``), else None (memoised)."""
    m = EVAL_RATE_RE.match(key.strip())
    if m is None:
        return None
    col = _norm(m["rest"])
    return col if col in EVAL_RATE_COLUMNS else None


def _number(v: str, unit: str | None) -> float | None:
    text = v.replace(",", "")
    low = text.lower().lstrip("+-")
    try:
        x = float(text) if low not in ("infinity",) else float(text.replace("inity", ""))
    except ValueError:
        return None
    if unit in KV_SUFFIX:
        x *= KV_SUFFIX[unit]
    return x


# an evaluation's word right before the step key: the step of an evaluation loop, not of
# training (PaddleVideo: "epoch:[ 80/80 ] val step:0    loss: 0.20538 top1: 0.88281 … ips:
# 20.14003 instance/sec." beside "epoch:[ 14/25 ] train step:100 …", its docs'
# tutorials/summarize; YOWO under PaddleVideo: "epoch:[  5/5  ] val step:17100 loss_avg: …";
# torchtitan's validator: "validate step:  5  loss:  3.7874  memory: 30.50GiB(97.27%)  tps: 8,143")
EVAL_BEFORE_STEP_RE = re.compile(
    r"\b(?:val|valid|validation|validate|eval|evaluation|evaluate|test|dev)[\s_]+$",
    re.IGNORECASE)


# how many different values of one step key make a line a summary of several steps (AlgoPerf's
# closing "Metrics: {'eval_results': [(1, {…, 'global_step': 1, …}), (245, {…}), …],
# 'global_step': 32839}"), no step line
SUMMARY_STEPS = 3


def _step(text: str) -> re.Match[str] | None:
    best: re.Match[str] | None = None
    seen: dict[str, set[str]] = {}
    for m in STEP_RE.finditer(text):
        values = seen.setdefault(m["k"].lower(), set())
        values.add(m["n"])
        if len(values) >= SUMMARY_STEPS:
            return None
        if m["k"].lower() in ("batch", "batch_id") and not m["tot"] \
                and not EPOCH_RE.search(text, 0, m.start()):
            continue  # a keyed batch with no total is a step only after the epoch it counts in
        if best is None or (STEP_RANK[re.sub(r"[ _]", "", m["k"].lower())]
                            < STEP_RANK[re.sub(r"[ _]", "", best["k"].lower())]):
            best = m
    return best


def _mllog_fields(obj: dict) -> dict:
    """An MLPerf ``:::MLLOG`` event as flat fields: its metadata (the step), then its value —
    a dict's fields, or one field named by the event's key — with MLPerf's names renamed."""
    meta = obj["metadata"] if isinstance(obj["metadata"], dict) else {}
    value = obj["value"]
    fields = {k: v for k, v in meta.items() if k in MLLOG_STEP_KEYS}
    if not fields and MLLOG_SAMPLES_KEY in meta and not isinstance(value, dict):
        # (a tracked_stats dict keyed only by samples sits among events that count steps by
        # "step": llama31_8b's '{"train_step_time": …}, …{"samples_count": 12288}' after step
        # 191, mlcommons/training_results_v5.1 NVIDIA llama31_8b result_8.txt: no step of them)
        fields["step"] = meta[MLLOG_SAMPLES_KEY]
    if isinstance(value, dict):  # a position inside the value is no step ("epoch_num" of
        # BERT's end-of-run average, whose metadata "step" is a list)
        fields.update({k: v for k, v in value.items() if k not in MLLOG_STEP_KEYS})
    else:
        fields[str(obj["key"])] = value
    return {MLLOG_KEYS.get(k, k): v for k, v in fields.items()}


def _json_pairs(text: str) -> dict[str, str] | None:
    """The scalar fields of a JSON object on the line (NaN/Infinity allowed), or None."""
    start, end = text.find("{\""), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        obj = json.loads(text[start:end + 1])
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    if MLLOG_FIELDS <= obj.keys():
        obj = _mllog_fields(obj)
    return {str(k): str(v) for k, v in obj.items()
            if (isinstance(v, int | float) and not isinstance(v, bool))
            or (isinstance(v, str) and (STEP_OF_TOTAL_RE.fullmatch(v)
                                        or NUMBER_STR_RE.fullmatch(v)
                                        or (str(k).lower() in CLOCK_KEYS and CLOCK_RE.fullmatch(v))))}


def _json_step_rank(key: str) -> int | None:
    """The rank (``STEP_RANK``) of a JSON field that names the step, or None: a step key, also
    behind the ``train_`` prefix of fairseq's end-of-epoch stats (``--log-format json``:
    ``{"epoch": 73, "train_loss": "nan", …, "train_num_updates": "9291", …}``)."""
    low = key.lower()
    low = low.removeprefix(JSON_TRAIN_PREFIX)
    for p in TRAIN_PREFIXES:  # W&B's "train/global_step" (HF Trainer's report_to="wandb")
        low = low.removeprefix(p)
    if low == "steps":
        return STEP_RANK["step"]
    return STEP_RANK.get(re.sub(r"[ _]", "", low))


def _json_step_field(pairs: dict[str, str]) -> str | None:
    """The JSON field that gives the step: the step key of the lowest rank (MLPerf's metadata
    ``{"epoch_num": 8, "step_num": 464}`` counts steps by ``step_num``), a field valued as a
    step of a total (``"global_step/max_steps": "57/176"``) as a global step; ties in order."""
    ranked: list[tuple[int, str]] = []
    for k, v in pairs.items():
        rank = _json_step_rank(k)
        if rank is None and STEP_OF_TOTAL_RE.fullmatch(v):
            rank = STEP_RANK["globalstep"]
        if rank is not None:
            ranked.append((rank, k))
    return min(ranked, key=lambda rk: rk[0])[1] if ranked else None


# keys in brackets, then their values in brackets: "Epoch 160   [Avg. Loss, Loss]: [6.0917,
# 6.0791], 0" (erikdengerud/GPTime-Series' trainer); read as "Avg. Loss: 6.0917, Loss: 6.0791"
ZIPPED_PAIRS_RE = re.compile(
    r"\[(?P<keys>[A-Za-z][\w. /-]{0,40}(?:,\s*[A-Za-z][\w. /-]{0,40}){1,9})\]\s*[:=]\s*"
    rf"\[(?P<vals>(?:{_NUM})(?:,\s*(?:{_NUM})){{1,9}})\]")


def _unzipped(text: str) -> str:
    """``text`` with a bracket of keys and a bracket of as many values written as pairs."""
    m = ZIPPED_PAIRS_RE.search(text)
    if m is None:
        return text
    keys = [k.strip() for k in m["keys"].split(",")]
    vals = [v.strip() for v in m["vals"].split(",")]
    if len(keys) != len(vals):
        return text
    return text[:m.start()] + ", ".join(f"{k}: {v}" for k, v in zip(keys, vals, strict=True)) \
        + text[m.end():]


def _clock_key(key: str) -> bool:
    """Whether a key names the run's clock (``CLOCK_KEYS``, words joined by spaces or "_")."""
    return key.lower().replace(" ", "_") in CLOCK_KEYS


def pairs_row(pairs: dict[str, str]) -> Row | None:
    """The row of a record's keys and values (a JSON line's scalar fields, a vertical record's
    lines): its step (``_json_step_field``), total, clock and known metrics, or None."""
    row: Row = {}
    step_key = _json_step_field(pairs)
    if step_key is None:
        return None
    if (frac := STEP_OF_TOTAL_RE.fullmatch(pairs[step_key])) is not None:
        # ms-swift's "global_step/max_steps": "57/176"
        row["total_iterations"] = int(frac["tot"])
        pairs[step_key] = frac["n"]
    it = _number(pairs[step_key], None)
    if it is None or it != it or it < 0 or it != int(it):
        return None
    row["iteration"] = int(it)
    parts: Row = {}
    evals: Row = {}
    for k, v in pairs.items():
        if _clock_key(k) and CLOCK_RE.fullmatch(v):
            row["train_time_s"] = hms_to_s(v)
            continue
        if k.lower() in TOTAL_KEYS:
            total = _number(v, None)
            if total is not None and total == total and total > 0:
                row.setdefault("total_iterations", int(total))
            continue
        col = _norm(k)
        if col and col not in row:
            row[col] = _number(v, None)
        elif col is None and (rate := _eval_rate(k)):
            evals.setdefault(rate, _number(v, None))
        elif col is None and k != step_key and (part := _loss_part(k)):
            parts.setdefault(part, _number(v, None))
    return _finish(_with_parts(row, parts), evals)


# a value printed as the repr of a one-element tensor or array: torch's "loss: tensor(2.3456,
# device='cuda:0', grad_fn=<AddBackward0>)", numpy's "array(2.5, dtype=float32)", and the list
# of one array PaddleFleetX's GPT example prints, "step:  301 loss_print:  [array([9.164496],
# dtype=float32)]" (a committed workerlog.0): the number alone
TENSOR_REPR_RE = re.compile(
    rf"\[?\s*+(?:tensor|array)\(\s*+\[?\s*+(?P<v>{_NUM})\s*+\]?\s*+(?:,[^()\[\]]*+)?\)\s*+\]?")
TENSOR_REPR_NEEDLES = ("tensor(", "array(")


def parse_metric_line(text: str) -> Row | None:
    """A step line in any of the syntaxes above: iteration, total, and the known metrics. A
    line holding a tqdm bar is the progress parser's, whichever tables a load asks for (a
    fused "270/9847 [05:50<3:17:42, 1.24s/it]Invalidate trace cache @ step 1" is no step 1)."""
    if any(map(text.__contains__, TENSOR_REPR_NEEDLES)):
        text = TENSOR_REPR_RE.sub(lambda t: t["v"], text)
    if "Progress on:" in text and (rec := LOGGABLE_RE.search(text)) is not None:
        return _loggable_postfix(text, rec)
    if ("%|" in text or "%\\|" in text or "% " in text) and (bar := _last_bar(text)) is not None:
        if (row := _bar_postfix(text, bar)) is not None or (after := _after_bar(text, bar)) is None:
            return row
        text = after  # a log record fused after the bar is read on its own
    if (joined := _epoch_result_row(text)) is not None:
        return joined
    if "]" in text and ("]:" in text or "] :" in text or "]=" in text):
        text = _unzipped(text)
    row: Row = {}
    by_epoch = False
    pairs = _json_pairs(text) if "{\"" in text else None
    if pairs is not None:
        return pairs_row(pairs)
    if NOT_A_STEP_RE.search(text):
        return None
    if "[valid] Ep. " in text and (v := MARIAN_VALID_RE.search(text)) is not None:
        loss = _number(v["v"], None) if _norm(v["k"]) == "loss" else None
        return None if loss is None else {"iteration": int(v["n"]), "event": "eval",
                                          "eval_loss": loss}
    phase = PHASE_STEP_RE.search(text) or (
        PIPE_PHASE_STEP_RE.search(text) if "|" in text else None)
    m = phase or _step(text)
    if phase is not None:
        row["iteration"] = int(phase["n"])
        row["total_iterations"] = int(phase["tot"])
        row["epoch"] = float(phase["e"])
    elif m is None and (m := _run_counter(text)) is not None:
        # the run's count beside the epoch's batch counter: the run's is the step
        row["iteration"] = int(m["n"])
        if m.re is COUNTER_STEP_RE:
            row["total_iterations"] = int(m["tot"])
    elif m is None and (m := EPOCH_BATCH_RE.search(text) or EPOCH_GLUED_BATCH_RE.search(text)) is not None:
        row["iteration"] = int(m["n"])
        row["epoch"] = float(m["e"])
    elif m is None and (m := BRACKET_STEP_RE.search(text)) is not None:
        row["iteration"] = int(m["n"] or m["pn"])
        row["total_iterations"] = int(m["tot"] or m["ptot"])
        row["epoch"] = float(m["e"] or m["pe"])
    elif m is None and (m := _logger_counter(text)) is not None:
        row["iteration"] = int(m["n"])
        row["total_iterations"] = int(m["tot"])
    elif m is None and (m := EPOCH_COMMA_BATCH_RE.search(text)) is not None:
        row["iteration"] = int(m["n"])
        row["epoch"] = float(m["e"])
    elif m is None and (m := EXAMPLE_STEP_RE.search(text)) is not None:
        # PyTorch examples: the sample counter of the epoch, counted on across epochs
        # (the bare bracket's epoch may stand before it: "Train Epoch: [1/10] [2560/60000 (4%)]")
        ep = m["e"] or m["be"] or ((e := EPOCH_RE.search(text, 0, m.start())) and e["e"])
        tot = int(m["tot"] or m["btot"])
        row["iteration"] = int(ep or 0) * tot + int(m["n"] or m["bn"])
        if ep:
            row["epoch"] = float(ep)
    elif m is None and (m := PHASE_BRACKET_RE.search(text)) is not None:
        phase = m
        row["iteration"] = int(m["n"])
        row["total_iterations"] = int(m["tot"])
        if (ep := EPOCH_RE.search(text, 0, m.start())) is not None:
            row["epoch"] = float(ep["e"])
    elif m is None and (m := PASS_STEP_RE.search(text)) is not None:
        row["iteration"] = int(m["n"])
        row["epoch"] = float(m["e"])
    elif m is None and (m := COUNTER_STEP_RE.search(text)) is not None:
        row["iteration"] = int(m["n"])
        if m["tot"]:
            row["total_iterations"] = int(m["tot"])
        if (ep := EPOCH_RE.search(text, 0, m.start())) is not None:
            row["epoch"] = float(ep["e"])
    elif m is None and (m := CLU_STEP_RE.search(text)) is not None:
        row["iteration"] = int(m["n"])
    elif m is None and (m := _loss_step(text)) is not None:
        row["iteration"] = int(m["n"])
    elif m is None and (m := COLON_COUNTERS_RE.match(text)) is not None:
        row["iteration"] = int(m["n"])
        row["epoch"] = float(m["e"])
    elif m is None and " - " in text and (m := LEAD_DASH_STEP_RE.match(text)) is not None:
        row["iteration"] = int(m["n"])
    elif m is None and (m := LEAD_STEP_RE.match(text)) is not None:
        row["iteration"] = int(m["n"])
        if m["tot"]:
            row["total_iterations"] = int(m["tot"])
        if m["e"] or m["be"]:
            row["epoch"] = float(m["e"] or m["be"])
    elif m is None and (m := LEAD_BRACKET_STEP_RE.match(text)) is not None:
        row["iteration"] = int(m["n"])
        row["total_iterations"] = int(m["tot"])
    elif m is None and (m := _epoch_counter(text)) is not None:
        # the epoch is the only counter ("Epoch 939 loss 0.7634 | train 2.1s"): an epoch row,
        # a step only where the log counts no steps (``diagnose.common.epoch_counted``)
        row["iteration"] = int(m["e"])
        row["epoch"] = float(m["e"])
        if (tot := EPOCH_TOTAL_RE.match(text, m.end())) is not None:
            row["total_iterations"] = int(tot["tot"])  # "End of epoch 134 / 500000"
        by_epoch = True
    elif m is None:
        return None
    else:
        row["iteration"] = int(m["n"].replace(",", "")) * STEP_SUFFIX.get((m["sfx"] or "").upper(), 1)
        if m["tot"]:
            row["total_iterations"] = int(m["tot"])
        if (ep := EPOCH_RE.search(text, 0, m.start())) is not None:
            row["epoch"] = float(ep["e"])
        elif m["tot"] and (ep := EPOCH_AFTER_RE.match(text, m.end())) is not None:
            row["epoch"] = float(ep["e"])
    rest = text[:m.start()] + " " * (m.end() - m.start()) + text[m.end():]
    if m.re is STEP_RE and EVAL_BEFORE_STEP_RE.search(text, 0, m.start()):
        fields = _step_fields(text, rest, m, row)  # "val step:0": an evaluation's step
        return None if fields is None else _as_eval(fields)
    if by_epoch:  # an epoch's row: the time its training took is its time ("1 epoch time=61.98")
        rest = EPOCH_TIME_RE.sub(lambda t: "time".rjust(len(t[0])), rest)
    if phase is not None and not phase["phase"].upper().startswith("TRAIN"):
        fields = _step_fields(text, rest, m, row)
        return None if fields is None else _as_eval(fields)
    return _by_epoch(_step_fields(text, rest, m, row), by_epoch,
                     by_epoch and EPOCH_ENDED_RE.search(text) is not None)


def _run_counter(text: str) -> re.Match[str] | None:
    """A count of the whole run named by its unit (``5063/130860 iters``) printed before an
    epoch's batch counter (``Epoch: [6] [700/727]``) of a smaller total, or a bare counter
    leading the line before it (``LEAD_RUN_COUNTER_RE``) no smaller than its batch, or None:
    the batch counter restarts every epoch, the run's count does not."""
    if (c := LEAD_RUN_COUNTER_RE.match(text)) is not None:
        b = BRACKET_STEP_RE.match(text, c.end())
        return c if b is not None and b["n"] is not None and int(c["n"]) >= int(b["n"]) else None
    c = COUNTER_STEP_RE.search(text)
    if c is None or not c["tot"] or c["n"] is None:
        return None
    b = BRACKET_STEP_RE.search(text, c.end())
    if b is None or int(c["tot"]) <= int(b["tot"] or b["ptot"]):
        return None
    return c


def _logger_counter(text: str) -> re.Match[str] | None:
    """A MetricLogger counter under a training header (``LOGGER_COUNTER_RE``), or None."""
    m = LOGGER_COUNTER_RE.search(text)
    return None if m is None or (m["h"] and EVAL_HEADER_RE.search(m["h"])) else m


def _loss_step(text: str) -> re.Match[str] | None:
    """The step a loss's name is followed by (``LOSS_STEP_RE``), when the name is a loss."""
    for m in LOSS_STEP_RE.finditer(text):
        if _norm(m["k"]) in ("loss", "eval_loss"):
            return STEP_NUMBER_RE.match(text, m.start("n"))
    return None


def _epoch_counter(text: str) -> re.Match[str] | None:
    """The epoch of a line that no other counter numbers, or None (also on a tqdm bar of any
    layout: "Epoch 10/10: 240it [05:55,  1.47s/it, loss=5.46]" counts the bar's steps)."""
    if any(bar.search(text) for bar in TQDM_FORMATS[1:]):
        return None
    return EPOCH_RE.search(text)


# what makes a row counted by its epoch a training epoch: a training loss, or a rate over
# the epoch (MLPerf RNN-T's DLLogger summary "epoch 1 | avg train utts/s 4137 | took 67.21 s")
EPOCH_SIGNALS = ("loss", "samples_per_s", "tokens_per_s")
# ... or the epoch's own time where the line says the epoch ended: BasicSR's "End of epoch 134 /
# 500000 	 Time Taken: 4.9714 sec" (victorca25/traiNNer#72), "Epoch 3 finished, time: 61.9 s";
# not a bar's rate ("Epoch 0: | | 4540/? [07:57<00:00,  9.51it/s]" counts 4540 steps)
EPOCH_ENDED_RE = re.compile(r"\bend of epoch\b|\bepoch\s*+\d+\s*+(?:done|finished|completed|ended)\b",
                            re.IGNORECASE)


def _by_epoch(row: Row | None, by_epoch: bool, ended: bool = False) -> Row | None:
    """A row counted by its epoch: one with a training loss or rate (``EPOCH_SIGNALS``),
    marked ``event="epoch"``; none without (word_language_model's "| end of epoch   1 | time:
    24.19s | valid loss  5.15" is the epoch's validation, not a step)."""
    if row is None or not by_epoch:
        return row
    if row.get("event") is None and row.get("loss") is None and row.get("eval_loss") is not None:
        return None  # the epoch's validation, its rate the evaluation's (PaddleVideo's "END
        # epoch:14  val loss_avg: 2.92463 … avg_ips: 93.53513 instance/sec.")
    signals = (*EPOCH_SIGNALS, "elapsed_s") if ended else EPOCH_SIGNALS
    if row.get("event") is not None or all(row.get(c) is None for c in signals):
        return None
    row["event"] = EPOCH_EVENT
    return row


def _step_fields(text: str, rest: str, m: re.Match[str], row: Row) -> Row | None:
    """The metrics of a step line whose counter ``m`` was read into ``row``; ``rest`` is the
    line with the counter blanked."""
    parts: Row = {}
    evals: Row = {}
    plain_time: float | None = None
    step_rate = False  # a rate printed bare ("500.12/s") is the step's own: samples / its time
    for p in PAIR_RE.finditer(rest):
        key = p["qk"] or p["k"]
        col = _norm(key)
        unit = None
        if p["pu"]:
            col, unit = _unit_key(col, p["pu"])
        if p["sp"] and " " in key and (col is None or (_norm(key.split()[-1]) == col
                                                       and not _known_whole(key))) \
                and not _loss_part(key):
            continue  # "key value" only for a one-word key or a multi-word key known whole
            # (TF2 Object Detection API's "Step 100 per-step time 0.813s": "step time")
        if p["sp"] and p["k"] and rest[p.start("k") - 1:p.start("k")] == ":":
            continue  # the tail of a "a:b value" key (RETURNN's "max_size:time 291200")
        if p["k"] and rest[p.start("k") - 1:p.start("k")] == "-" and key.lower() in GLUED_KEYS:
            continue  # the tail of a hyphenated key ("learning-rate 1e-06" is no rate)
        if col is None:
            if (rate := _eval_rate(key)) is not None:
                evals.setdefault(rate, _number(p["v"], p["u"]))
                continue
            part = _loss_part(key) or (TOTAL_KEY if key.lower() == TOTAL_KEY and not p["u"]
                                       and not p["pu"] else None)
            if part and part not in parts:
                parts[part] = _number(p["v"], p["u"])
            continue
        if key.lower() == "speed" and (UNIT_RE.match(rest, p.start("v"))
                                       or SPEED_UNIT_RE.match(rest, p.end("v"))
                                       or rest.startswith("(", p.end())):
            continue  # "speed: 1.2 it/s", "Speed: 429.55 samples/sec": the unit says what;
            # "speed: 1.95 step/s" (PaddleFleetX) is no sample rate, whatever its unit;
            # "speed: 0.72(0.65s …)s/itr" (Pose2Mesh) is a time
        if col == "samples_per_s" and TOKENS_AFTER_RE.match(rest, p.end()):
            col = "tokens_per_s"
        if col in row:
            continue
        value = _number(p["v"], p["u"])
        if value is not None and col == "elapsed_s" and (
                p["u"] == "ms" or unit == "ms" or key.lower().endswith("ms")
                or key.lower().startswith("ms/")):
            value /= 1000.0
        if col == "elapsed_s" and key.lower() == "time":
            plain_time = value
        row[col] = value
        if col == "elapsed_s" and value is not None and (
                mean := PAREN_CURRENT_RE.match(rest, p.end())):
            # an AverageMeter's "Time 0.427 (2.561)": the value, then its mean since the start
            scale = value / _number(p["v"], p["u"]) if _number(p["v"], p["u"]) else 1.0
            row["elapsed_mean_s"] = (_number(mean["v"], None) or 0.0) * scale
        if col == RUNNING_MEAN and (cur := PAREN_CURRENT_RE.match(rest, p.end())):
            row.setdefault("samples_per_s", _number(cur["v"], None))
    steps_per_s = row.pop("steps_per_s", None)
    if steps_per_s:
        row.setdefault("elapsed_s", 1.0 / steps_per_s)
    for u in UNIT_RE.finditer(rest):
        value = _number(u["v"], None)
        unit = u["unit"].lower()
        if value is None:
            continue
        value *= STEP_SUFFIX.get(u["mult"] or "", 1)
        if unit == "it/s":
            row.setdefault("elapsed_s", 1.0 / value if value else None)
        elif unit.startswith("ms/"):  # nanoGPT's forks: "[train] iter 4100: loss 2.5266 2942
            # ms/iter" (ethellight565/nanoGPT-seis)
            row.setdefault("elapsed_s", value / 1000.0)
        elif unit == "s/it" or unit.endswith(("/step", "/batch", "/iter")):  # RETURNN: "0.504
            # sec/step"; ClearerVoice-Studio: "Step: 10/965 | 2.057s/batch |"
            row.setdefault("elapsed_s", value)
        elif unit.startswith(("tok", "words", "wps")):
            row.setdefault("tokens_per_s", value)
        elif unit.startswith("tflop"):
            row.setdefault("tflops", value)
        else:
            step_rate = step_rate or ("samples_per_s" not in row and unit == "/s")
            row.setdefault("samples_per_s", value)
    if plain_time is not None and row.get("elapsed_s") == plain_time and not step_rate and any(
            row.get(c) is not None for c in ("tokens_per_s", "samples_per_s")):
        # a bare "Time 1327.50s" beside a words/s or samples/s rate is the logging interval's
        # wall time (Marian NMT prints it every --disp-freq updates), not one step's
        row["interval_s"] = row.pop("elapsed_s")
    if "elapsed_s" not in row and (w := WINDOW_TIME_RE.search(rest)) and int(w["n"]) > 0:
        row["elapsed_s"] = float(w["v"]) / int(w["n"])
    if "elapsed_s" not in row and (t := PAREN_TIME_RE.search(rest)) and t.start() > m.start():
        secs = float(t["v"])
        row["elapsed_s"] = secs / 1000.0 if t["u"] == "ms" else secs
    if "elapsed_s" not in row and "|" in rest and (t := FIELD_TIME_RE.search(rest)):
        secs = float(t["v"])
        row["elapsed_s"] = secs / 1000.0 if t["u"] == "ms" else secs
    if "mfu" not in row and (f := MFU_BEFORE_RE.search(rest)):
        row["mfu"] = float(f["v"])
    if EVAL_LINE_RE.search(text):
        return _as_eval(_with_parts(row, parts))
    return _finish(_with_parts(row, parts), evals)


def _as_eval(row: Row) -> Row | None:
    """An evaluation line's row: its step and its loss as the eval loss (its rates are the
    evaluation's, not training's)."""
    loss = row["eval_loss"] if row.get("eval_loss") is not None else row.get("loss")
    if loss is None:
        return None
    out: Row = {"iteration": row["iteration"], "eval_loss": loss, "event": "eval"}
    if row.get("epoch") is not None:
        out["epoch"] = row["epoch"]
    return out


def _after_bar(text: str, bar: re.Match[str]) -> str | None:
    """The text a tqdm bar's redraw left on the line after the bar's closing bracket (a log
    record written while the bar was on screen: ``4/100 [00:04<01:12,  1.32it/s][2024-04-02
    01:59:46][INFO] - step=5 loss=3.6606``), or None when nothing follows it."""
    close = text.find("]", bar.end())
    if close < 0 or not text[close + 1:].strip():
        return None
    return text[close + 1:]


def _last_bar(text: str) -> re.Match[str] | None:
    """The last tqdm bar of a line (a redrawn bar repeats), or None; a bar printed without
    its bar (ColossalAI's rich console: "0% 420/788222 [28:47<810:51:33, 3.71s/it, loss=nan,
    …]") where the line has no bar with one."""
    last = None
    for m in TQDM_RE.finditer(text):
        last = m
    if last is None and "% " in text:
        for m in BARLESS_RE.finditer(text):
            last = m
    return last


# (``progress.BARLESS_RE``: tqdm's line without the bar itself, "0% 420/788222 [28:47<…]")
# the postfix of a tqdm bar: ", loss=9.600, nll_loss=9.1, …, num_updates=156, …]" after the rate
POSTFIX_RE = re.compile(r"\s*,(?P<post>[^\]]*)\]")


def _bar_postfix(text: str, bar: re.Match[str]) -> Row | None:
    """A tqdm bar whose postfix names a loss (fairseq's ``--log-format tqdm``, NeMo's
    ``reduced_train_loss=…, global_step=19.00``, OpenRLHF's ``gpt_loss=…``): the step a postfix
    key names, else the bar's count; the loss and grad norm of the postfix; the bar's rate as
    the time per step. A bar without such a postfix is the progress parser's alone."""
    post = POSTFIX_RE.match(text, bar.end())
    if post is None:
        return _bar_description(text, bar)
    row: Row = {}
    parts: Row = {}
    global_step = None
    for p in PAIR_RE.finditer(post["post"]):
        key = p["qk"] or p["k"]
        if p["sp"]:
            continue
        if (rank := STEP_RANK.get(re.sub(r"[ _]", "", key.lower()))) is not None:
            value = _number(p["v"], None)
            if value is not None and value == value and value >= 0 and "iteration" not in row:
                row["iteration"] = int(value)
                global_step = int(value) if rank == 0 else None
            continue
        col = _norm(key)
        if col is None:
            if (part := _loss_part(key)) and part not in parts:
                parts[part] = _number(p["v"], p["u"])
        elif col not in row:
            row[col] = _number(p["v"], p["u"])
    row = _with_parts(row, parts)
    if row.get("loss") is None and row.get("grad_norm") is None:
        # a bar whose postfix names only the run's global step: the step it reached, no
        # metric (OpenPCDet's inner bar, "train:  12%|█▏ | 211/1767 [02:40<14:42, 1.76it/s,
        # total_it=14347]", its loss on the outer bar of the epochs)
        if global_step is not None and len(row) == 1:
            return {"iteration": global_step, "event": STEP_EVENT}
        return None
    if "iteration" not in row:
        n = _number(bar["n"], None)
        if n is None or n != int(n):
            return None
        row["iteration"] = int(n)
        # a bar that restarts every epoch under the epoch's name ("Train step of epoch 1: …",
        # "Epoch [2/3]: …"): the loss runbook counts it on across epochs
        if (ep := EPOCH_RE.search(text, 0, bar.start("n"))) is not None:
            row["epoch"] = float(ep["e"])
        elif EPOCHS_BAR_RE.search(text, 0, bar.start("n")):
            # the bar of the epochs (OpenPCDet's "epochs:  20%|██ | 3/15 [1:27:15<…, loss=3.71,
            # lr=0.01]", tqdm.trange(…, desc='epochs')): its count is the epoch, no step
            row["epoch"] = float(n)
            row["event"] = EPOCH_EVENT
    rate = _number(bar["rate"], None) if bar["rate"] not in (None, "?") else None
    if rate and bar["unit"] in ("it/s", "s/it"):
        row["elapsed_s"] = rate if bar["unit"] == "s/it" else 1.0 / rate
    elif row.get("elapsed_s") is None:
        row.pop("elapsed_s", None)
    return _finish(row)


# a bar described as the epochs' ("epochs:  20%|…| 3/15": a trange over the epochs); not a bare
# "Epoch:", which some loops give their bar of an epoch's batches
EPOCHS_BAR_RE = re.compile(r"(?:^|[^\w ])\s*epochs\s*+:?\s*(?=\d{1,3}%)", re.IGNORECASE)


# a loss in a bar's description, where the postfix names none: torchtune's recipes
# (pbar.set_description(f"{curr_epoch + 1}|{self.global_step}|Loss: {loss_to_log}")): "1|1|Loss:
# 1.7553404569625854:   0%|    | 0/13000 [00:03<?, ?it/s]", the epoch, the optimizer's step and
# the loss before the bar; a custom loop's "loss: 2.3456: 100%|…| 10/10 […]" (the bar's count the
# step, as a postfix's)
DESC_LOSS_RE = re.compile(
    rf"(?:(?P<e>\d+)\|(?P<n>\d+)\|)?(?P<k>[A-Za-z_][A-Za-z_ ]{{0,30}}?)\s*[:=]\s*(?P<v>{_NUM})\s*+:?\s*$")


def _bar_description(text: str, bar: re.Match[str]) -> Row | None:
    """A bar with no postfix whose description ends in a loss (``DESC_LOSS_RE``): the step the
    description names (torchtune's ``epoch|step|``), else the bar's count; the bar's rate as
    the time per step; None for any other bar."""
    pct = bar.start("pct") if "pct" in bar.re.groupindex and bar["pct"] is not None else None
    m = DESC_LOSS_RE.search(text, 0, pct) if pct is not None else None
    if m is None or _norm(m["k"].strip()) != "loss":
        return None
    row: Row = {"loss": _number(m["v"], None)}
    if m["n"] is not None:
        row["iteration"] = int(m["n"])
        row["epoch"] = float(m["e"])
    else:
        n = _number(bar["n"], None)
        if n is None or n != int(n):
            return None
        row["iteration"] = int(n)
        if (ep := EPOCH_RE.search(text, 0, m.start())) is not None:
            row["epoch"] = float(ep["e"])
    rate = _number(bar["rate"], None) if bar["rate"] not in (None, "?") else None
    if rate and bar["unit"] in ("it/s", "s/it"):
        row["elapsed_s"] = rate if bar["unit"] == "s/it" else 1.0 / rate
    return _finish(row)


# tqdm-loggable's log record of a bar (``progress.LOGGABLE_RE``), its postfix at the end as
# tqdm formats it ("k=v, k2=v2"): Levanter's training bar, "Progress on:train 11.0it/18.0it
# rate:34.5s/it remaining:04:01 elapsed:17:46 postfix:loss=15.5"
LOGGABLE_POSTFIX_RE = re.compile(r"\spostfix:(?P<post>.*)$")
COUNT_SUFFIX = {"k": 1e3, "M": 1e6, "G": 1e9}


def _loggable_postfix(text: str, rec: re.Match[str]) -> Row | None:
    """A tqdm-loggable record whose postfix names a loss: the bar's count as the step, the
    postfix's loss and grad norm, the rate as the time per step; None for any other."""
    post = LOGGABLE_POSTFIX_RE.search(text, rec.end())
    if post is None:
        return None
    row: Row = {}
    for p in PAIR_RE.finditer(post["post"]):
        if p["sp"]:
            continue
        col = _norm(p["qk"] or p["k"])
        if col in ("loss", "grad_norm") and col not in row:
            row[col] = _number(p["v"], p["u"])
    if row.get("loss") is None and row.get("grad_norm") is None:
        return None
    count = rec["n"]
    scale = COUNT_SUFFIX.get(count[-1], 1.0)
    n = _number(count.rstrip("kMG"), None)
    if n is None or n != n or n * scale != int(n * scale):
        return None
    row["iteration"] = int(n * scale)
    rate = _number(rec["rate"].replace(",", ""), None)
    if rate:
        row["elapsed_s"] = rate if rec["unit"] == "s/it" else 1.0 / rate
    return _finish(row)


def _with_parts(row: Row, parts: Row) -> Row:
    """The row with a loss part as its loss (and an eval part as its eval loss) where the line
    named no loss of its own; a perplexity where it named no loss part either."""
    for col, value in parts.items():
        if col not in STAND_INS:
            row.setdefault(col, value)
    for part, col in STAND_INS.items():  # a perplexity only where no loss (part) was
        if part in parts:
            row.setdefault(col, parts[part])
    return row


def _finish(row: Row, evals: Row | None = None) -> Row | None:
    """The row a step line gives, or None without a signal: a running mean as the rate where
    the line has no other; an eval loss alone makes an eval row, which carries the
    evaluation's rates (``evals``, ``EVAL_RATE_RE``: a training row never does)."""
    mean = row.pop(RUNNING_MEAN, None)
    if mean is not None:
        row.setdefault("samples_per_s", mean)
    if not any(row.get(c) is not None for c in SIGNAL_COLUMNS):
        return None
    if row.get("loss") is None and row.get("eval_loss") is not None and not any(
            row.get(c) is not None for c in SIGNAL_COLUMNS if c not in ("eval_loss", "loss")):
        row["event"] = "eval"
        for col, value in (evals or {}).items():
            if value is not None and value == value:
                row.setdefault(col, value)
    return row


# an epoch's header line, the counter alone after the logger's prefix ("2023-08-27 17:28:46,620 -
# easytorch-training - INFO - Epoch 1 / 200"), whose result line follows with no counter of its
# own ("… - Result <train>: [train_time: 295.52 (s), lr: 1.00e-03, train_MAE: 49.86, …]"):
# the two are one record (``epoch_header``, ``epoch_result``); the phase may name it (st-gcn's
# processor: "[03.24.23|13:31:31] Training epoch: 0", then "[03.24.23|13:31:51] \tmean_loss: nan")
EPOCH_HEADER_RE = re.compile(
    r"(?:^|\s-\s|\]\s*|:\s)\s*(?:train(?:ing)?\s++)?epoch\s*+[:#]?\s*(?P<e>\d+)\s*(?:/\s*(?P<tot>\d+))?\s*$",
    re.IGNORECASE)
EPOCH_NEEDLES = ("Epoch", "epoch", "EPOCH")
# the same header with its result line joined after it
# (the reader also tries the join without a space, "epoch 2 / 1002022-02-28 …": no header then)
EPOCH_JOINED_RE = re.compile(EPOCH_HEADER_RE.pattern.removesuffix(r"\s*$") + r"\s+(?=[^\s/])",
                             re.IGNORECASE)
# a result line's own counter or bar, which makes it no continuation of a header (Keras:
# "Epoch 1/10" then "1490/1490 [====…] - 25s 17ms/step - loss: 0.31")
OWN_COUNTER_RE = re.compile(r"\d\s*/\s*\d|\[=|%\||/step\b|\bepoch\b", re.IGNORECASE)
# the time of one epoch's training, which numbers a row by its epoch without a loss
# (also the train phase's seconds alone, "Epoch 01 loss 12.9351 | train 3.2s": NoProp's log)
EPOCH_TIME_RE = re.compile(r"\b(?:train(?:ing)?[_/ ]?time|epoch[_ ]time|train(?:ing)?(?=\s++\d++"
                           r"(?:\.\d++)?\s?s\b))\b", re.IGNORECASE)
# a result line that is the epoch's loss and nothing else, its key padded like the header's
# (apoorvnandan/speech-recognition-primer#2: "Epoch    :  8" then "LOSS     :  nan"; a custom
# loop's print("Epoch:", e) / print("Train loss:", l))
LONE_LOSS_RE = re.compile(
    r"\s*(?:(?:train(?:ing)?|avg|average|mean|total|epoch|batch|step)[ _])?loss\s*[:=]\s*"
    rf"(?:{NUMBER_STR_RE.pattern})\s*", re.IGNORECASE)


# a step's header, the counter alone on its line, whose loss the next line prints alone
# (``LONE_LOSS_RE``): a TF 1.x loop's print("current step: %dth step") / print("batch loss:%s")
# (BAI-Yeqi/TI_SV train.py, corpus loss_spike-ti-sv-ge2e-tf-healthy: "current step: 5168th step"
# then "batch loss:0.94814676"); the two are one record, like an epoch's header and its result
STEP_HEADER_RE = re.compile(
    r"(?:^|\s-\s|\]\s*)\s*(?:current\s+|global\s+)?(?:step|iter(?:ation)?)\s*+[:#]?\s*"
    r"(?P<n>\d+)(?:st|nd|rd|th)?(?:\s+step)?\s*+:?\s*$", re.IGNORECASE)
STEP_HEADER_NEEDLES = ("step", "Step", "STEP", "iter", "Iter", "ITER")


def step_header(text: str) -> bool:
    """Whether a line is only a step's header (``STEP_HEADER_RE``)."""
    return STEP_HEADER_RE.search(text) is not None


def epoch_header(text: str) -> bool:
    """Whether a line is only an epoch's header (``EPOCH_HEADER_RE``)."""
    return EPOCH_HEADER_RE.search(text) is not None


# a result line's own time stamp in brackets, as its header has one (st-gcn's "[03.24.23|13:31:51]
# \tmean_loss: nan"): no part of the result
LEAD_STAMP_RE = re.compile(r"^\s*+\[[\d.:|/\- ]{8,30}\]\s*+")


def epoch_result(body: str) -> bool:
    """Whether ``body`` is the result line of the epoch header before it: its loss alone
    (``LONE_LOSS_RE``), or the time the epoch's training took, with no counter or bar of its
    own (a validation line after an "Epoch: 11" header, apex#493's "Validation loss 6312:
    0.149928", is read on its own); ``body`` without its own stamp (``LEAD_STAMP_RE``)."""
    if LONE_LOSS_RE.fullmatch(body) is not None:
        return True
    return (EPOCH_TIME_RE.search(body) is not None and OWN_COUNTER_RE.search(body) is None
            and _step(body) is None
            and parse_metric_line(f"step 1 {EPOCH_TIME_RE.sub('time', body)}") is not None)


def _epoch_result_row(text: str) -> Row | None:
    """An epoch's header joined to its result line (``record_continues``): the epoch numbers
    a row of the result's metrics, the time its training took (``train_time``) the epoch's
    time; None for any other line."""
    h = EPOCH_JOINED_RE.search(text)
    if h is None or not epoch_result(body := LEAD_STAMP_RE.sub("", text[h.end():], count=1)):
        return None
    row = parse_metric_line(f"step {h['e']} {EPOCH_TIME_RE.sub('time', body)}")
    if row is None or (row.get("loss") is None and row.get("elapsed_s") is None):
        return None
    if h["tot"]:
        row["total_iterations"] = int(h["tot"])
    return {**row, "epoch": float(h["e"]), "event": EPOCH_EVENT}


def _epoch_begun(text: str) -> Row | None:
    """An epoch's header that no result line completes (nnU-Net prints "Epoch 453", then its
    learning rate, then the epoch's losses only when it ends): the run has reached that epoch,
    a row of ``event="epoch"`` with no metric (a step only where nothing counts steps,
    ``diagnose.common.epoch_counted``); None for any other line."""
    h = EPOCH_HEADER_RE.search(text) if any(map(text.__contains__, EPOCH_NEEDLES)) else None
    if h is None:
        return None
    return {"iteration": int(h["e"]), "epoch": float(h["e"]), "event": EPOCH_EVENT}


# the optimizer's own step, named by a key no other counter uses (m4's "After activation tracker
# at opt_step 235", DeepSpeed's "global_step=10", fairseq's "num_updates 100"): a line that names
# it and no metric is the run's progress, not a point of any series (``event="step"``); "step",
# "iter" or "batch" alone may count evaluation, data loading, an epoch's batches or an
# environment's steps, and give no such row; a name glued to its number is a checkpoint's
# (DeepSpeed's "Checkpoint global_step1971 is about to be saved!"), and a line holding a tqdm bar
# the progress parser's (fairseq's bar postfix "…, num_updates=0, lr=1e-07")
OPT_STEP_RE = re.compile(
    r"(?<![\w/.])(?<!max )(?<!total )(?<!warmup )(?:global[ _]step|opt[ _]step|num_updates)s?(?:\s*[:=#]\s*|\s+)(?P<n>\d+)(?![\w.%/])",
    re.IGNORECASE)
OPT_STEP_NEEDLES = ("global_step", "global step", "Global Step", "opt_step", "num_updates")
# the event of a row that only says which optimizer step the run reached
STEP_EVENT = "step"


def step_marker(text: str) -> Row | None:
    """The optimizer step a line names without any metric (``OPT_STEP_RE``): a row of
    ``event="step"``, or None (a line of a setting, "max global_step", is none)."""
    if NOT_A_STEP_RE.search(text):
        return None
    steps = {int(m["n"]) for m in OPT_STEP_RE.finditer(text)}
    if len(steps) != 1:  # two different optimizer steps on one line: which is the run's?
        return None
    return {"iteration": steps.pop(), "event": STEP_EVENT}


# what follows an epoch's batch counter on a line that reports only metrics no column holds
# (gluon-cv's "[Epoch 1 Batch 300] Training: accuracy=0.985000"): a keyed number
KEYED_NUMBER_RE = re.compile(r"[A-Za-z][\w-]*\s*[=:]\s*[-+]?\d")


# detectron2's CommonMetricPrinter (d2.utils.events; LiBai's libai.utils.events) printing the
# iteration it reached with no metric yet: "[02/25 03:02:13] d2.utils.events INFO:  iter: 0
# lr: N/A  max_mem: 51M" after a crash in the first step (vaishnavmohit/imageclassification-
# detectron, AsrarH/detectron's DenseCL): the step the run reached
EVENTS_LOGGER = "utils.events INFO:"
EVENTS_STEP_RE = re.compile(r"\butils\.events INFO:\s.*?\biter: (?P<n>\d+)\b")


# a step's memory report between its phases, no metric of its own: ColossalAI's examples
# (get_mem_info(prefix=f"[{n + 1}/{NUM_STEPS}] Forward "), copied across its gpt, opt, palm and
# auto-parallel demos; hpcaitech/ColossalAI#3172): "[3/1000] Forward GPU memory usage: 8367.72
# MB, CPU memory usage: 44096.98 MB", then "Backward …", "Optimizer step …": the step the run
# reached (a step that died between its phases logs no loss line)
PHASE_MEMORY_STEP_RE = re.compile(
    r"\[(?P<n>\d+)/(?P<tot>\d+)\]\s+(?:[A-Za-z]+\s+){1,3}GPU memory usage:\s*[\d.]+")
PHASE_MEMORY_NEEDLES = ("GPU memory usage:",)


def phase_memory_marker(text: str) -> Row | None:
    """The step of a total a step's memory report names (``PHASE_MEMORY_STEP_RE``): a row of
    ``event="step"``, like ``step_marker``; None for any other line."""
    m = PHASE_MEMORY_STEP_RE.search(text)
    if m is None or int(m["n"]) > int(m["tot"]):
        return None
    return {"iteration": int(m["n"]), "total_iterations": int(m["tot"]), "event": STEP_EVENT}


def epoch_batch_marker(text: str) -> Row | None:
    """An epoch's batch counter (``EPOCH_BATCH_RE``) on a line whose metrics no column holds
    (an accuracy, a metric name a trainer chose): the run's progress, ``event="step"`` with
    the epoch, like ``step_marker``; None for any other line."""
    m = EPOCH_BATCH_RE.search(text)
    if m is None or NOT_A_STEP_RE.search(text) or not KEYED_NUMBER_RE.search(text, m.end()):
        return None
    return {"iteration": int(m["n"]), "epoch": float(m["e"]), "event": STEP_EVENT}


# an evaluation's banner alone on a line, the evaluation's result on the next (DeepSpeedExamples'
# data-efficiency GPT fine-tune: "***** Evaluating perplexity, Epoch 1/2 *****" then "'step':10,
# 'ppl': 61.77, 'seq_len': 264, …"; HF Trainer's "***** Running Evaluation *****" banner, its
# "  Num examples = 500" after it no result): one record, an evaluation, whose perplexity is no
# point of the training loss (``PERPLEXITY_RE``) and whose loss is the eval loss
EVAL_BANNER_RE = re.compile(
    r"^\s*\*{3,}\s*(?:Running\s+)?Evaluat(?:ing|ion)\b[^*]*\*{3,}\s*",
    re.IGNORECASE)
EVAL_BANNER_NEEDLES = ("valuat",)


def eval_banner(text: str) -> bool:
    """Whether a line is only an evaluation's banner (``EVAL_BANNER_RE``)."""
    m = EVAL_BANNER_RE.match(text)
    return m is not None and m.end() == len(text)


def _eval_result(body: str) -> Row | None:
    """The row of an evaluation's result line after its banner: its loss the eval loss, its
    perplexity none; None where it has neither."""
    row = parse_metric_line(body)
    if row is None:
        return None
    loss = row.pop("loss", None)
    if loss is not None and LOSS_WORD_RE.search(body):
        row.setdefault("eval_loss", loss)
    if row.get("eval_loss") is None:
        return None
    row["event"] = "eval"
    return row


def parse_line(text: str) -> Row | None:
    """The generic parser's line: ``parse_metric_line`` where a metric needle is on it, else
    only an epoch's header joined to its result line (the header's needle, ``EPOCH_NEEDLES``,
    reads nothing else: "Epoch[0] Time cost=50.022" is no loss) or an epoch's batch counter
    (``epoch_batch_marker``); a line naming the optimizer's step and no metric is a
    ``step_marker``, a step's memory report a ``phase_memory_marker``, ESPnet2's epoch
    summary its epoch's last batch (``EPOCH_RESULTS_RE``)."""
    if "valuat" in text and (m := EVAL_BANNER_RE.match(text)) is not None and m.end() < len(text):
        return _eval_result(text[m.end():])
    row = (parse_metric_line(text) if any(map(text.__contains__, NEEDLES))
           else _epoch_result_row(text) or _epoch_begun(text) or epoch_batch_marker(text))
    if row is None and any(map(text.__contains__, OPT_STEP_NEEDLES)) and not any(
            bar.search(text) for bar in TQDM_FORMATS):
        row = step_marker(text)
    if row is None and PHASE_MEMORY_NEEDLES[0] in text:
        row = phase_memory_marker(text)
    if row is None and EVENTS_LOGGER in text and (m := EVENTS_STEP_RE.search(text)):
        row = {"iteration": int(m["n"]), "event": STEP_EVENT}
    if row is None and EPOCH_RESULTS_NEEDLE in text and (m := EPOCH_RESULTS_RE.search(text)):
        row = {"iteration": int(m["n"]), "epoch": float(m["e"]), "event": STEP_EVENT}
    return row


# Informer's training loop and the time-series repositories that copied it (Autoformer,
# FEDformer, PatchTST, Time-Series-Library, …) print the step's loss, then its pace on a line of
# its own: "\titers: 800, epoch: 1 | loss: 0.0180395" / "\tspeed: 0.2666s/iter; left time:
# 18680.4594s" (zhouhaoyi/Informer2020 exp/exp_informer.py); the two are one record
TS_ITERS_RE = re.compile(r"\s*iters: \d+, epoch: \d+ \| loss: [-+\d.eEnaif]+\s*")
TS_SPEED_RE = re.compile(r"\s*speed: [\d.]+s/iter; left time: [-\d.]+s\s*")
TS_NEEDLES = ("iters: ",)


def incomplete_record(text: str) -> bool:
    """A line the next one completes: a step line cut before its step (``cut_before_step``),
    an epoch's or a step's header (``epoch_header``, ``step_header``), a JSON object a paste
    wrapped (``open_json``), a step line whose loss indented lines after it print
    (``lossless_step``), an evaluation's banner (``eval_banner``) or Informer's step line,
    its pace on the next (``TS_ITERS_RE``)."""
    return (epoch_header(text) or step_header(text) or cut_before_step(text) or open_json(text)
            or lossless_step(text) or eval_banner(text) or TS_ITERS_RE.fullmatch(text) is not None)


def record_continues(record: str, body: str) -> bool:
    """Whether ``body`` completes ``record`` (``incomplete_record``)."""
    if TS_ITERS_RE.fullmatch(record) is not None:
        return TS_SPEED_RE.fullmatch(body) is not None
    if epoch_header(record):
        return epoch_result(LEAD_STAMP_RE.sub("", body, count=1))
    if step_header(record):
        return LONE_LOSS_RE.fullmatch(body) is not None
    if open_json(record):
        return json_continues(body)
    if eval_banner(record):
        return parse_metric_line(body) is not None
    if lossless_step(record):
        return indented_metrics(body)
    return step_continues(record, body)


# a step line that prints its step and its timing but no loss, the loss and the learning rate
# following on lines of their own, indented: Knover's trainer (PaddlePaddle/Knover
# knover/scripts/train.py, run by PaddleFleetX examples/moe, corpus
# loss_spike-fleetx-knover-moe-4rank-healthy): "[train][1] progress: 1/1 step: 130, time: 8.307,
# queue size: 64, speed: 1.204 steps/s", then "\tcurrent lr: 0.0000163", then "\tlm_loss: 7.2077,
# ppl: 1349.7974, aux_loss: 0.0000, loss: 7.2077, loss_scaling: 32768.0000"; the lines are one
# record, joined by the reader while the record has no loss
LOSS_WORD_RE = re.compile(r"loss", re.IGNORECASE)
# the learning rate alone on an indented line, which a loss line may still follow
LONE_LR_RE = re.compile(
    rf"\s+(?:current\s+|cur[_ ])?(?:lr|learning[_ ]rate)\s*[:=]\s*(?:{NUMBER_STR_RE.pattern})\s*",
    re.IGNORECASE)


def lossless_step(text: str) -> bool:
    """Whether a line names a step but no loss (``indented_metrics`` may complete it); a line
    ending in ``|`` is a step line's whole end (``complete_ends``)."""
    return (not text.endswith("|") and LOSS_WORD_RE.search(text) is None
            and _step(text) is not None)


def indented_metrics(body: str) -> bool:
    """Whether ``body`` is an indented line of a step's metrics with no counter of its own: a
    loss, or the learning rate alone."""
    if not body[:1].isspace() or _step(body) is not None:
        return False
    if LONE_LR_RE.fullmatch(body) is not None:
        return True
    row = parse_metric_line(f"step 1 {body.strip()}")
    if row is None or row.get("event") is not None:
        return False
    return row.get("loss") is not None


# a line that goes on with a JSON object's fields: '…", "key": …' (fairseq's epoch stats as a
# GitHub paste wraps them mid-key: '…, "t' / 'rain_nll_loss": "nan", …')
JSON_FIELDS_RE = re.compile(r"\"\s*[:,]\s*[\"\d{\[nt-]")


def open_json(text: str) -> bool:
    """Whether a line opens a JSON object (``{"``) that it does not close; a line ending in
    ``|`` is a step line's whole end, never a wrapped object (``complete_ends``)."""
    start = text.find("{\"")
    return (start >= 0 and not text.endswith("|")
            and text.count("{", start) > text.count("}", start))


def json_continues(body: str) -> bool:
    """Whether ``body`` is more of a wrapped JSON object's fields, not a record of its own."""
    return "{\"" not in body and JSON_FIELDS_RE.search(body) is not None


def cut_before_step(text: str) -> bool:
    """Whether a line is the first part of a step line a paste broke at a field separator:
    metrics (a loss or a rate) and trailing blanks, but no step key, which the next line
    brings (insightface: "…Speed 2178.40 samples/sec   Loss nan   LearningRate 0.001000   " /
    "Epoch: 0   Global Step: 20   …")."""
    if not text[-1:].isspace() or "{" in text or _step(text) is not None \
            or _loss_step(text) is not None:  # ("Validation loss 8416:  0.711720  ")
        return False
    return bool(UNIT_RE.search(text)) or bool(re.search(r"\bloss\b", text, re.IGNORECASE))


def step_continues(record: str, body: str) -> bool:
    """Whether ``body`` is the rest of a ``cut_before_step`` line: it names a step but no
    metric of its own."""
    return _step(body) is not None and parse_metric_line(body) is None


PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "generic_step",
        "iterations",
        (*NEEDLES, *EPOCH_NEEDLES, *OPT_STEP_NEEDLES, *PHASE_MEMORY_NEEDLES, *STEP_HEADER_NEEDLES,
         *EVAL_BANNER_NEEDLES, *TS_NEEDLES),
        parse_line,
        incomplete=incomplete_record,
        continues=record_continues,
        fallback=True,
        # an epoch header ends in its number, a cut step line in a blank
        complete_ends=("|",),
        # tenstorrent/tt-metal#45335, a trainer with no pattern of its own
        example="Step: 4970, Loss: 0.189453, Time: 1638.07 ms, TPS: 6251, TFLOPS: 43.28, "
        "MFU: 29.1%",
    ),
)


# -- a skip counter that counts since the start ------------------------------------------------
# A step line that prints the skipped optimizer steps since the run started, not per interval,
# in any syntax the reader knows: NVIDIA's BERT (MLPerf training_results v0.7 and later,
# run_pretraining.py: "{'training_steps': 207, …, 'global_steps': 199, …, 'skipped_steps': 8,
# …}"). DeepSpeed's own "step=20, skipped=12, lr=[…]" is ``iterations.DeepSpeedStepParser``.
CUMULATIVE_SKIP_RE = re.compile(r"(?<![\w/.])['\"]?skipped_steps['\"]?\s*[:=]\s*(?P<n>\d+)\b")


class CumulativeSkipParser:
    """Step lines with a cumulative skip counter (``CUMULATIVE_SKIP_RE``), one stream each: the
    line's row as the generic reader reads it, its ``skipped`` the counter's growth since the
    stream's previous line (``iterations.counter_growth``, as DeepSpeed's ``skipped=``)."""

    needles = ("skipped_steps",)
    tables = ("iterations",)
    section: str | None = None  # always None: each line is a record of its own

    def __init__(self) -> None:
        self.section: str | None = None
        self.count: int | None = None

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the step's row for a step line with the counter."""
        m = CUMULATIVE_SKIP_RE.search(text)
        row = parse_metric_line(text) if m is not None else None
        if m is None or row is None or row.get("event") is not None:
            return []
        count = int(m["n"])
        grew = counter_growth(self.count, count, row["iteration"])
        self.count = count
        return [("iterations", {**row, "skipped": grew or None, "_ctx": ctx})]

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: nothing pending."""
        return []



# -- federated rounds --------------------------------------------------------------------------
# A federated-learning loop counts communication rounds, not steps, and prints the round as a
# header with the loss of that round on its own line after it, or on the round's line itself:
# "[Round 10/100]" then "Averaged Train Loss: 0.5390" (corpus
# loss_spike-fedact-uci-alie-federated-healthy, lidengjiajia/DecisionSupportSystem-FedACT);
# PFLlib's servers, "-------------Round number: 10-------------", "Evaluate global model", then
# "Averaged Train Loss: 0.3112" (TsingZ0/PFLlib system/flcore/servers/serverbase.py); FedML's
# "################Communication round : 5" (FedML simulation/sp_api fedavg_api.py); a Flower
# server's "INFO :      [ROUND 1]" … "After 1 Round: loss = 0.4630947411060333, accuracy: …"
# (zafaryabZhcet/DesignnTest README.md); "Round 1, Global Loss: 0.0333" (rosfi12/
# AdvanceML_FederatedLearning results.py). The round is the step; one loss per round.
ROUND_RE = re.compile(
    r"(?<![\w/.])(?:(?:global\s+)?communication\s+|global\s+|federated\s+)?round"
    r"(?:\s+number)?\s*+[:#]?\s*+\[?\s*+(?P<n>\d+)(?:\s*+/\s*+(?P<tot>\d+))?(?![\d.%])"
    r"|\bafter\s+(?P<an>\d+)\s+(?:global\s+)?rounds?\b", re.IGNORECASE)
ROUND_NEEDLES = ("round", "Round", "ROUND")
ROUND_LOSS_NEEDLES = ("loss", "Loss", "LOSS")


def headed_loss_row(rnd: int, text: str) -> Row | None:
    """The training loss ``text`` prints for round (or step) ``rnd``, as the generic reader
    reads it with that as its step; None for a line with no training loss or a counter of its
    own."""
    if (_step(text) is not None or any(bar.search(text) for bar in TQDM_FORMATS)
            or parse_metric_line(text) is not None):
        return None  # (a line the generic reader numbers itself: "Epoch 1, Loss: 0.1108")
    row = parse_metric_line(f"step {rnd} {text}")
    if row is None or row.get("loss") is None or row.get("event") is not None:
        return None
    return row


class RoundParser:
    """Losses of a federated loop numbered by its round (``ROUND_RE``), one writer each: a
    round's header sets the round, the first line after it with a training loss (or the
    round's own line) is that round's row."""

    needles = (*ROUND_NEEDLES, *ROUND_LOSS_NEEDLES)
    tables = ("iterations",)
    section: str | None = None  # always None: the round is carried between records

    def __init__(self) -> None:
        self.section: str | None = None
        self.round: int | None = None  # the last round's number, while its loss is unread

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the row of a round's loss."""
        m = ROUND_RE.search(text) if any(map(text.__contains__, ROUND_NEEDLES)) else None
        if m is not None:
            rnd = int(m["n"] or m["an"])
            row = headed_loss_row(rnd, text[:m.start()] + " " + text[m.end():])
            self.round = None if row is not None else rnd
        elif self.round is not None and any(map(text.__contains__, ROUND_LOSS_NEEDLES)):
            row = headed_loss_row(self.round, text)
            if row is not None:
                self.round = None
        else:
            return []
        if row is None:
            return []
        if m is not None and m["tot"]:
            row["total_iterations"] = int(m["tot"])
        return [("iterations", {**row, "_ctx": ctx})]

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: nothing pending."""
        return []


# -- a step's header, its metrics on a later line of their own ---------------------------------
# A loop that prints its step as a header and the step's loss on a line of its own after it,
# with no counter: a hand-written GRPO trainer's "2025-09-23 08:59:11,896 - train - INFO -
# rollout batch 0 generated, length: 256" then "… - INFO - rl_loss: -0.0027, time: 109.08,
# l2_norm: 0.141, …" (corpus loss_spike-cs336-a5-grpo-rl-log-healthy); an RL optimizer's
# "2019-02-03 08:03:36,767 INFO     iteration 9/10000", four "epoch k/4" lines, then
# "… INFO     steps_per_s=443.39, avg_weight_age=4.9, …, loss=0.2225, entropy=7.487"
# (corpus throughput-dotaclient-34); an epoch's "[Epoch 7/50]" then "Train Loss: nan, Train Acc:
# 0.0379" (othmaneechc/SpeedTransformer, the loss the epoch's); a CPM/OpenPose-style trainer's
# "Step: 682/800000 ----- Cur_lr: 0.4000000 ----- Time: 0.82 sec." then its stages' losses
# "S1 loss:     nan | … | S6 loss:   25.47 | Total loss: nan" (FashionAI_KeyPoint_Detection_
# Challenge_Keras#2: fields between dashes, a time with its unit). The header is the counter after a logger's prefix
# (``HEAD_PREFIX_RE``: times, levels, bracketed tags, a logger's name before " - "), with at
# most a verb and a few key/value fields after it and no loss; the first line with a training
# loss and no counter of its own within ``HEAD_REACH`` lines is that step's row. A header
# directly followed by its lone loss is the generic reader's joined record (``step_header``).
STEP_HEAD_RE = re.compile(
    r"(?<![\w/.])(?:\[(?=epoch)|(?:rollout|train(?:ing)?|global|current|outer)\s++)?"
    r"(?P<word>iteration|iter|step|update|rollout\s++batch|episode|epoch)\s*+[:#=]?\s*+(?P<n>\d++)"
    r"(?:\s*+/\s*+(?P<tot>\d++))?(?![\d.%/])"
    r"(?:\s++(?:generated|done|started|finished|begins?|starts?|completed?|begin|start)\b)?"
    r"[\s:,;.!=\-\]*>#]*+(?:[A-Za-z_]\w*+(?: [A-Za-z_]\w*+)?\s*+[:=]\s*+[^\s,;|]++"
    r"(?:\s*+(?:ms|s|secs?|seconds)\b\.?)?(?:[\s,;]|-{2,})*+)*+$",
    re.IGNORECASE)
HEAD_PREFIX_RE = re.compile(
    r"(?:\s++|[-|:>*=#,]++|\[[^\]]{0,80}\]|\([^)]{0,80}\)|\d[\d\-/:.,T+Z]*+|[IWEF]\d{4}"
    r"|(?:INFO|WARNING|WARN|DEBUG|ERROR|NOTICE|TRACE|CRITICAL)\b|[\w.]++(?=\s*+-\s)"
    r"|[\w.]++:\d++)*+", re.IGNORECASE)
HEAD_NEEDLES = ("iter", "Iter", "ITER", "step", "Step", "STEP", "update", "Update", "rollout",
                "Rollout", "episode", "Episode", "Epoch", "epoch", "EPOCH")
HEAD_REACH = 60  # lines from a header to its loss, at most
# a line that counts on its own ("val[ 0/40]  Time 2.093  Loss 8.08e-02", an evaluation's
# batch after DeepSpeed's "step=5000, skipped=0" header) or reports an evaluation: not the
# header's training loss
HEADED_NOT_RE = re.compile(r"\d\s*+/\s*+\d|\b(?:val|valid|validation|eval|evaluation|test)\b",
                           re.IGNORECASE)


def step_head(text: str) -> re.Match[str] | None:
    """A step's header (``STEP_HEAD_RE`` after a logger's prefix alone), or None."""
    if "|" in text or len(text) > 400 or LOSS_WORD_RE.search(text) is not None:
        return None
    m = STEP_HEAD_RE.search(text)
    if m is None or HEAD_PREFIX_RE.fullmatch(text, 0, m.start()) is None:
        return None
    return m


class HeadedStepParser:
    """Losses numbered by the step header before them (``step_head``), one writer each: the
    first line after a header with a training loss and no counter of its own
    (``headed_loss_row``) is that step's row; a step line of its own ends the header."""

    needles = (*HEAD_NEEDLES, *ROUND_LOSS_NEEDLES)
    tables = ("iterations",)
    section: str | None = None  # always None: the step is carried between records

    def __init__(self) -> None:
        self.section: str | None = None
        # step, total, line of the header, whether it numbers an epoch
        self.head: tuple[int, int | None, int, bool] | None = None

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the row of a header's loss."""
        line = ctx[1] if isinstance(ctx, tuple) and len(ctx) > 1 and isinstance(ctx[1], int) else None
        if any(map(text.__contains__, HEAD_NEEDLES)) and (m := step_head(text)) is not None \
                and (m["word"].lower() != "epoch" or m["tot"]):
            # (an epoch's header only with its total, "[Epoch 7/50]": nnU-Net's bare "Epoch 2"
            # opens an epoch whose losses come at its end, ``epoch_begun``; and never under a
            # step's header, whose own epochs they count: dotaclient's "iteration 9/10000",
            # then "epoch 1/4" … "epoch 4/4", then the iteration's stats)
            if m["word"].lower() == "epoch" and (
                    (self.head is not None and not self.head[3]) or KERAS_EPOCH_RE.match(text)):
                return []  # (Keras's bare "Epoch 1/20" is its epoch parser's)
            self.head = (int(m["n"]), int(m["tot"]) if m["tot"] else None, line or 0,
                         m["word"].lower() == "epoch")
            return []
        if self.head is None:
            return []
        step, total, at, epoch = self.head
        if line is not None and line - at > HEAD_REACH:
            self.head = None
            return []
        if not any(map(text.__contains__, ROUND_LOSS_NEEDLES)):
            if _step(text) is not None:
                self.head = None  # a step line of its own: the header is over
            return []
        row = headed_loss_row(step, text) if HEADED_NOT_RE.search(text) is None else None
        if row is None:
            if _step(text) is not None:
                self.head = None
            return []
        self.head = None
        if total is not None:
            row["total_iterations"] = total
        if epoch:  # an epoch's header: the loss is the epoch's ("[Epoch 7/50]", then "Train
            # Loss: nan, Train Acc: 0.03", othmaneechc/SpeedTransformer's fine-tuning sweep)
            row["epoch"] = float(step)
            row["event"] = EPOCH_EVENT  # counted as steps only where nothing else counts them
        return [("iterations", {**row, "_ctx": ctx})]

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: nothing pending."""
        self.head = None
        return []


# -- a table of metrics under a header of column names ----------------------------------------
# A header line of column names, the first the epoch, one naming a loss; each line under it the
# values in the same order, the epoch as "e/E", then the epoch's tqdm bar (ultralytics YOLOv8
# and later, trainer.py's ('\n' + '%11s' * (4 + len(self.loss_names))) % ('Epoch', 'GPU_mem',
# *self.loss_names, 'Instances', 'Size'): "      Epoch    GPU_mem   box_loss   cls_loss
# dfl_loss  Instances       Size" then "       8/55      9.03G     0.1321      8.032      3.308
#   22        640: 100%|██████████| 954/954 [11:41<00:00,  1.36it/s]", ultralytics/ultralytics#21765;
# meituan YOLOv6's "Epoch  lr  iou_loss  dfl_loss  cls_loss"). The bar's count is the batch of
# the epoch, its total the epoch's batches: the run's step is counted on across epochs from them
# (both are printed; a file's bar drawn once per epoch, at its end, shows no wrap for the loss
# runbook to count on), from epoch 0 where the writer's first row shows epoch 0 (YOLOv6 prints
# f"{epoch}/{max_epoch - 1}"), else from 1 (ultralytics prints f"{epoch + 1}/{epochs}"); a row
# without a bar is its epoch's.
TABLE_HEADER_RE = re.compile(r"^\s*(?P<first>epoch|iter(?:ation)?|step)(?P<rest>(?:\s+[A-Za-z][\w()./-]*){2,})\s*$",
                             re.IGNORECASE)
TABLE_VALUE_RE = re.compile(rf"^(?:{_NUM})(?:[KMG%])?$")
TABLE_COUNTER_RE = re.compile(r"^(?P<n>\d+)(?:/(?P<tot>\d+))?$")
# the row's values end at the bar's description colon; the bar's count of its total
# (tqdm's "100%|██████████| 954/954 [11:41<00:00,  1.36it/s]"; ultralytics 8.3's own bar
# "20% ━━────────── 1/5 2.6it/s 0.5s<1.5s")
TABLE_BAR_RE = re.compile(r":\s+\d{1,3}%(?:\|[^|]*\||[^\w|]*)\s*(?P<n>\d+)/(?P<tot>\d+)(?![\d/])")
EPOCH_TABLE_NEEDLES = ("Epoch", "epoch", "EPOCH")


def table_header(text: str) -> tuple[str, ...] | None:
    """The column names of a metrics table's header (``TABLE_HEADER_RE``) with a loss among
    them, or None."""
    m = TABLE_HEADER_RE.match(text)
    if m is None:
        return None
    cols = (m["first"], *m["rest"].split())
    if not any(_norm(c) in ("loss", "eval_loss") or _loss_part(c) for c in cols[1:]):
        return None
    return cols


def table_row(cols: tuple[str, ...], text: str, base: int | None = None) -> Row | None:
    """The row of a metrics table under its header ``cols``: the values in the header's order,
    the first the epoch (or step) counter; None for a line that is no such row. ``base``: the
    number of the writer's first epoch (0 or 1; None: this row's epoch is the first)."""
    bar = TABLE_BAR_RE.search(text)
    values = (text[:bar.start()] if bar else text).split()
    if len(values) != len(cols) or not (c := TABLE_COUNTER_RE.match(values[0])) \
            or not all(TABLE_VALUE_RE.match(v) for v in values[1:]):
        return None
    row: Row = {}
    parts: Row = {}
    for name, v in zip(cols[1:], values[1:], strict=True):
        if (col := _norm(name)) is not None and col not in row:
            row[col] = _number(v.rstrip("KMG%"), None)
        elif (part := _loss_part(name)) and part not in parts:
            parts[part] = _number(v, None)
    _with_parts(row, parts)
    if row.get("loss") is None and row.get("eval_loss") is None:
        return None
    if cols[0].lower() != "epoch":
        row["iteration"] = int(c["n"])
    elif bar is not None:
        epoch = int(c["n"])
        first = (0 if epoch == 0 else 1) if base is None else base
        row.update(iteration=max(epoch - first, 0) * int(bar["tot"]) + int(bar["n"]),
                   epoch=float(epoch))
    else:
        row.update(iteration=int(c["n"]), epoch=float(c["n"]), event=EPOCH_EVENT)
    row.pop("elapsed_s", None)  # (no column of the table is a step's time)
    return row


class MetricsTableParser:
    """Rows of a metrics table under its header (``table_header``, ``table_row``), one writer
    each: the header opens the table, each line that fits it is a row, any other line ends it."""

    needles = EPOCH_TABLE_NEEDLES
    tables = ("iterations",)
    section: str | None = None  # "table" under a header

    def __init__(self) -> None:
        self.section: str | None = None
        self.cols: tuple[str, ...] = ()
        self.base: int | None = None  # the number of the writer's first epoch

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the row of a table's line."""
        if any(map(text.__contains__, EPOCH_TABLE_NEEDLES)) and (cols := table_header(text)):
            self.cols, self.section = cols, "table"
            return []
        if self.section is None:
            return []
        row = table_row(self.cols, text, self.base)
        if row is None:
            self.section, self.cols = None, ()
            return []
        if self.base is None and row.get("epoch") is not None and row.get("event") is None:
            self.base = 0 if row["epoch"] == 0 else 1
        return [("iterations", {**row, "_ctx": ctx})]

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: nothing pending."""
        return []


# -- a table with a header row ------------------------------------------------------------------
# A loop that prints its metrics as a table: a header row of column names, then one row of
# values per epoch or step, the cells apart by a tab, two spaces or more, or " | " (fastai's
# Learner, v1 with spaces and v2 with tabs in a terminal: "epoch\ttrain_loss\tvalid_loss\t
# accuracy\ttime" / "0\tnan\tnan\t0.958595\t00:03", timeseriesAI/tsai#639; minai's
# "accuracy | loss | epoch | train | time" / "0.817 | 0.722 | 0 | True | 00:21",
# AnswerDotAI/minai#3). The counter's column is named by a step key or "epoch"; the metrics'
# columns by the same vocabulary as a step line's keys (a "time" of "00:21" is the row's
# minutes and seconds); a column of the phase ("train" True/False, "phase" train/valid) makes
# an evaluation's row an eval row.
TABLE_SPLIT_RE = re.compile(r"\s*\|\s*|\t+\s*|\s{2,}")
TABLE_NAME_RE = re.compile(r"[A-Za-z_][\w ./()%-]{0,40}")
TABLE_RULE_RE = re.compile(r"[\s|:+-]*-[\s|:+-]*")  # a markdown table's rule: "-- | --"
TABLE_PHASES = frozenset(("train", "phase", "split", "mode", "stage", "is_train"))
TABLE_EVAL_VALUES = frozenset(("false", "val", "valid", "validation", "eval", "test", "dev"))
TABLE_NEEDLES = ("loss", "Loss", "LOSS", "time", "Time", "TIME", "/s")
TABLE_NOT_HEADER = (":", "=", "[")
TABLE_NA = frozenset(("#na#", "none", "-", "n/a", "na"))
# lines that are no row the table outlives (fastai's callbacks print between its rows:
# "Better model found at epoch 1 with valid_loss value: 0.367225.")
TABLE_GAP = 2


def _table_cells(text: str) -> list[str]:
    """A line's cells as a printed table separates them (no empty outer cell of "| a | b |")."""
    cells = TABLE_SPLIT_RE.split(text.strip().strip("|").strip())
    return [c.strip() for c in cells]


def _table_header(text: str) -> tuple[int, bool, dict[int, str], int | None] | None:
    """The counter's cell, whether it counts epochs, the metric of each other cell and the
    phase's cell of a header row; None for a line that is no such header (fewer than three
    cells, a cell that is no name, no counter or no metric)."""
    if ("\t" not in text and "  " not in text and "|" not in text) or any(
            c in text for c in TABLE_NOT_HEADER):
        return None  # (a step line's "key: value" or "key=value" is never a header's cell)
    cells = _table_cells(text)
    if len(cells) < 3 or not all(TABLE_NAME_RE.fullmatch(c) for c in cells):
        return None
    step = by_epoch = None
    metrics: dict[int, str] = {}
    phase = None
    for i, c in enumerate(cells):
        key = re.sub(r"[\s_\-]", "", c.lower())
        if step is None and (key in STEP_RANK or key == "epoch"):
            step, by_epoch = i, key == "epoch"
        elif key in TABLE_PHASES and phase is None:
            phase = i
        elif (col := _norm(c)) is not None and col not in metrics.values():
            metrics[i] = col
    if step is None or not any(col in SIGNAL_COLUMNS or col == "elapsed_s"
                               for col in metrics.values()):
        return None
    return step, bool(by_epoch), metrics, phase


def _table_value(cell: str, col: str) -> float | None:
    """A cell's value: a number, nan/inf, a time as minutes and seconds ("00:21")."""
    if col == "elapsed_s" and CLOCK_CELL_RE.fullmatch(cell):
        return hms_to_s(cell)
    return None if cell.lower() in TABLE_NA else _number(cell, None)


CLOCK_CELL_RE = re.compile(r"[0-9]+:[0-9][0-9](?::[0-9][0-9])?")
TABLE_COUNT_RE = re.compile(r"[0-9]{1,12}")  # the counter's cell: a whole number


class HeadedTableParser:
    """A table of metrics under a header row (``_table_header``): one row per printed row of
    the header's width, until a line that is none."""

    needles = TABLE_NEEDLES
    tables = ("iterations",)
    section: str | None = None  # "table" under a header

    def __init__(self) -> None:
        self.section: str | None = None
        self.header: tuple[int, bool, dict[int, str], int | None] | None = None
        self.width = 0
        self.gap = 0  # lines since the table's last row

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the row of a table row under a header."""
        if self.header is not None:
            if TABLE_RULE_RE.fullmatch(text) and "-" in text:
                return []
            row = self._row(_table_cells(text))
            if row is not None:
                self.gap = 0
                return [("iterations", {**row, "_ctx": ctx})]
            self.gap += 1
            if self.gap <= TABLE_GAP and _table_header(text) is None:
                return []  # a callback's line between rows ("Better model found at epoch 1 …")
            self.header, self.section = None, None
        if (head := _table_header(text)) is not None:
            self.header, self.section = head, "table"
            self.width, self.gap = len(_table_cells(text)), 0
        return []

    def _row(self, cells: list[str]) -> Row | None:
        if self.header is None or len(cells) != self.width:
            return None
        step_at, by_epoch, metrics, phase = self.header
        if TABLE_COUNT_RE.fullmatch(cells[step_at]) is None:
            return None
        row: Row = {"iteration": int(cells[step_at])}
        for i, col in metrics.items():
            value = _table_value(cells[i], col)
            if value is None and cells[i].lower() not in TABLE_NA and not CLOCK_CELL_RE.fullmatch(
                    cells[i]):
                return None  # a cell that is no value: no row of this table
            if value is not None:
                row[col] = value
        if by_epoch:
            row["epoch"] = float(row["iteration"])
            row["event"] = EPOCH_EVENT
        if phase is not None and cells[phase].lower() in TABLE_EVAL_VALUES:
            loss = row.get("loss", row.get("eval_loss"))
            return None if loss is None else {"iteration": row["iteration"], "event": "eval",
                                              "eval_loss": loss}
        if row.get("loss") is None and row.get("eval_loss") is None and not any(
                row.get(c) is not None for c in (*SIGNAL_COLUMNS, "elapsed_s")):
            return None
        return row

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: nothing pending."""
        self.header, self.section = None, None
        return []


# -- a logger's table of keys and values, one record per printed table ------------------------
# Stable-Baselines3's HumanOutputFormat (and rl-zoo, SB3-contrib built on it) prints one table
# per logging call, sections as "| time/ |  |" rows with their keys indented under them:
# "|    fps                  | 671         |", "|    iterations           | 3290        |",
# "|    time_elapsed         | 20525       |" (hill-a/stable-baselines#1204; corpus
# throughput-trafficlightrl-sb3-ppo-cpu-steady); OpenAI baselines and Stable Baselines 2 print
# the keys flat ("| fps                | 637           |", "| nupdates | 782 |",
# hill-a/stable-baselines#121, #927), TRPO in CamelCase ("| TimeElapsed     | 18.3         |",
# "| TimestepsSoFar  | 128          |", #164). A record starts at a row naming the time or the
# timesteps (``LOGGER_TABLE_NEEDLES``: the rows before it are the episodes' statistics) and
# ends at the table's rule or at a line that is no row.
LOGGER_ROW_RE = re.compile(r"\s*\|\s*(?P<k>[^|]*?)\s*\|\s*(?P<v>[^|]*?)\s*\|\s*")
LOGGER_TABLE_NEEDLES = ("fps", "time/", "time_elapsed", "TimeElapsed", "timesteps", "Timesteps")
# the rule the logger draws above and below each table: a table starts after one whatever its
# first key (improved-diffusion's sorted keys start with "grad_norm")
LOGGER_RULE = "----------"
LOGGER_RULE_RE = re.compile(r"\s*+-{10,}\s*+")


def _logger_rule(text: str) -> bool:
    """Whether a line is the rule a logger draws above and below its tables."""
    return LOGGER_RULE in text and LOGGER_RULE_RE.fullmatch(text) is not None
# the step of a table, in order of preference (keys lower-cased, "_" dropped): SB3's on-policy
# "iterations", baselines' "nupdates", else the environment steps so far; OpenAI's
# improved-diffusion and guided-diffusion (and the many diffusion repositories built on them)
# dump the same table with "step" (printed to 3 significant digits: "| step | 2.26e+04 |"),
# "samples", "loss" and "grad_norm"
LOGGER_STEP_KEYS = ("iterations", "nupdates", "totaltimesteps", "timestepssofar", "steps", "step")
# keys of these tables that the line vocabulary does not hold: the environment's frames per
# second is its sample rate
LOGGER_KEYS = {"fps": "samples_per_s"}


def logger_table_row(cells: dict[str, str], step_key: str | None = None) -> Row | None:
    """The iterations row of one logger table (keys as printed, sections dropped), or None
    without a step or a figure: its step (``LOGGER_STEP_KEYS``; ``step_key`` alone where the
    writer's tables have used it), frames per second as samples per second, the time since the
    start as ``train_time_s``, the loss and the grad norm where they are named."""
    flat = {re.sub(r"[\s_]", "", k.rsplit("/", 1)[-1].lower()): v for k, v in cells.items()}
    keys = (step_key,) if step_key else LOGGER_STEP_KEYS
    step = next((flat[k] for k in keys if k in flat), None)
    n = _number(step, None) if step is not None else None
    if n is None or n != n or n < 0 or n != int(n):
        return None
    row: Row = {"iteration": int(n)}
    for key, value in flat.items():
        col = LOGGER_KEYS.get(key) or _norm(key)
        if col in ("samples_per_s", "train_time_s", "loss", "grad_norm") and col not in row:
            row[col] = _number(value, None)
    return row if any(row.get(c) is not None for c in ("samples_per_s", "train_time_s", "loss",
                                                          "grad_norm")) else None


class LoggerTableParser:
    """A logger's table of keys and values (``LOGGER_ROW_RE`` rows), one iterations row per
    table (``logger_table_row``)."""

    needles = (*LOGGER_TABLE_NEEDLES, LOGGER_RULE)
    tables = ("iterations",)
    section: str | None = None  # "logger_table" inside a table

    def __init__(self) -> None:
        self.section: str | None = None
        self.cells: dict[str, str] = {}
        self.under = ""  # the section the rows are under ("time/")
        self.ctx: object = None
        self.step_key: str | None = None  # the step's key in this writer's tables

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the table's row at its end."""
        m = LOGGER_ROW_RE.fullmatch(text)
        if self.section is None:
            if m is None and _logger_rule(text):
                self.section, self.cells, self.under, self.ctx = "logger_table", {}, "", None
                return []  # (the table's first row gives its place)
            if m is None or not any(map(text.__contains__, LOGGER_TABLE_NEEDLES)):
                return []
            self.section, self.cells, self.under, self.ctx = "logger_table", {}, "", ctx
        elif self.ctx is None and m is not None:
            self.ctx = ctx
        if m is None:
            out = self.close()
            if not out and _logger_rule(text):
                self.section, self.ctx = "logger_table", None  # two rules: the next table's
            return out
        key, value = m["k"], m["v"]
        if not value and key.endswith("/"):
            self.under = key
        elif key and value:
            self.cells[self.under + key] = value
        return []

    def close(self) -> list[tuple[str, Row]]:
        """End of a table or of the stream: its row, if it makes one. The step is read by the
        key the writer's first table with one used: SB3's evaluation table after training has
        no "iterations" and counts "n_updates" (ten a PPO iteration): no step of the same count."""
        row = None
        if self.section is not None:
            if self.step_key is None:
                flat = {re.sub(r"[\s_]", "", k.rsplit("/", 1)[-1].lower()) for k in self.cells}
                self.step_key = next((k for k in LOGGER_STEP_KEYS if k in flat), None)
            row = logger_table_row(self.cells, self.step_key)
        self.section, self.cells = None, {}
        return [] if row is None else [("iterations", {**row, "_ctx": self.ctx})]


# -- a record printed one key a line ----------------------------------------------------------
# Some trainers print each logging call as a block of "key: value" lines, one key a line, the
# step among them: min-decision-transformer and its many forks (Elastic Decision Transformer,
# goal-conditioned and safe-RL variants: a "=====" rule, "time elapsed: 0:01:04", "num of
# updates: 1000", "action loss: 0.25866", "eval avg reward: …"; corpus
# throughput-elastic-decision-mamba-hopper-steady). A record starts at a line whose key is a step
# or a clock (``VERTICAL_NEEDLES``), takes the writer's following lines of one key and one value
# (``VERTICAL_KV_RE``), and ends at the first other line (a rule, a blank line, any text) or at
# one of its keys again (the next record, where a fork prints no rule); its keys and values make one row as a JSON line's would (``pairs_row``).
# Only records of at least ``VERTICAL_MIN_KEYS`` numeric keys besides the step make a row: a
# header's "Step: 100" over one loss line is the headed-step parser's.
VERTICAL_KV_RE = re.compile(
    r"\s*+(?P<k>[A-Za-z][\w .()/-]{0,60}?)\s*+[:=]\s*+"
    r"(?P<v>(?:\d+ days?, )?[^\s:=]\S*|\d+:\d\d:\d\d(?:\.\d+)?)?\s*")
VERTICAL_NEEDLES = ("updates:", "Updates:", "iteration:", "Iteration:", "iter:", "Iter:",
                    "step:", "Step:", "elapsed:", "Elapsed:")
VERTICAL_MIN_KEYS = 3


def _vertical_start(key: str) -> bool:
    """Whether a record's first key names its step or its clock (a word, not "s")."""
    return len(key) > 2 and (_json_step_rank(key) is not None or _clock_key(key))


class VerticalRecordParser:
    """A record of ``key: value`` lines, one key a line (``VERTICAL_KV_RE``), with a step among
    its keys: one iterations row per record (``pairs_row``)."""

    needles = VERTICAL_NEEDLES
    tables = ("iterations",)
    section: str | None = None  # "vertical" inside a record

    def __init__(self) -> None:
        self.section: str | None = None
        self.cells: dict[str, str] = {}
        self.ctx: object = None

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the record's row at its end."""
        m = VERTICAL_KV_RE.fullmatch(text)
        if self.section is None:
            if (m is None or not m["v"] or not any(map(text.__contains__, VERTICAL_NEEDLES))
                    or not _vertical_start(m["k"])):
                return []
            self.section, self.cells, self.ctx = "vertical", {}, ctx
        elif m is None:
            return self.close()
        elif m["k"] in self.cells:
            out = self.close()  # a key again: the next record
            return out + self.feed(text, ctx)
        if m["v"]:
            self.cells.setdefault(m["k"], m["v"])
        return []

    def close(self) -> list[tuple[str, Row]]:
        """End of a record or of the stream: its row, if it makes one."""
        cells, self.section, self.cells = self.cells, None, {}
        pairs = {k: v for k, v in cells.items()
                 if NUMBER_STR_RE.fullmatch(v) or CLOCK_RE.fullmatch(v)}
        row = pairs_row(pairs) if len(pairs) > VERTICAL_MIN_KEYS else None  # (None: no step)
        return [] if row is None else [("iterations", {**row, "_ctx": self.ctx})]


# -- PaddlePaddle's hapi Model.fit ---------------------------------------------------------------
# Its ProgressBar (paddle/hapi/progressbar.py, verbose 2) prints each epoch's steps under
# Keras's own heading, its evaluation's steps alike between "Eval begin..." and "Eval samples:
# N" (Paddle-CheXNet's finetune.log: "    Epoch 2/10", "    step  10/614 - loss: 0.1275 - … -
# 3s/step", …, "    Eval begin...", "    step 10/88 - loss: 0.1258 - …", "    Eval samples:
# 11219"): its step counts the epoch's batches
HAPI_EVAL_BEGIN = "Eval begin..."
HAPI_EVAL_END_RE = re.compile(r"^\s*Eval samples: \d+\s*$")


class HapiParser:
    """hapi's step lines (``iterations.HAPI_STEP_RE``): the metric reader's row with the epoch
    of the heading above it, an evaluation's steps as eval rows."""

    needles = ("Epoch ", "step ", HAPI_EVAL_BEGIN, "Eval samples")
    tables = ("iterations",)
    section: str | None = None  # always None: each line is a record of its own

    def __init__(self) -> None:
        self.section: str | None = None
        self.epoch: int | None = None
        self.evaluating = False

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return a hapi step line's row."""
        if (m := KERAS_EPOCH_RE.match(text)) is not None:
            self.epoch, self.evaluating = int(m["e"]), False
            return []
        if HAPI_EVAL_BEGIN in text and text.strip() == HAPI_EVAL_BEGIN:
            self.evaluating = True
            return []
        if self.evaluating and HAPI_EVAL_END_RE.match(text):
            self.evaluating = False
            return []
        if self.epoch is None or not HAPI_STEP_RE.match(text):
            return []
        row = parse_metric_line(text.strip())
        if row is None:
            return []
        row = {**row, "epoch": float(self.epoch), "_ctx": ctx}
        if self.evaluating:
            row["event"] = "eval"
        return [("iterations", row)]

    def close(self) -> list[tuple[str, Row]]:
        """End of stream: nothing pending."""
        return []


BLOCKS = (HapiParser, CumulativeSkipParser, MetricsTableParser, HeadedTableParser,
          LoggerTableParser, RoundParser, HeadedStepParser, VerticalRecordParser)
