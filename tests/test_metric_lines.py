"""The generic step-line reader (parse/metric_lines.py): real lines of trainers that have no
pattern of their own, each with its source; and it reads only what no other parser read."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from traindoc import load
from traindoc.diagnose.common import last_progress, training_steps
from traindoc.parse.metric_lines import STEP_EVENT, parse_line, parse_metric_line

NAN = float("nan")

# (line, expected columns, source)
REAL_LINES = [
    ("Step: 4970, Loss: 0.189453, Time: 1638.07 ms, TPS: 6251, TFLOPS: 43.28, MFU: 29.1%",
     {"iteration": 4970, "loss": 0.189453, "elapsed_s": 1.63807, "tflops": 43.28, "mfu": 29.1},
     "tenstorrent/tt-metal#45335"),
    ("| Training Device=xla:0/5 Epoch=1 Step=340 Loss=0.00373 Rate=545.27 GlobalRate=300.64 "
     "Time=01:52:42", {"iteration": 340, "loss": 0.00373, "samples_per_s": 545.27},
     "pytorch/xla#4324"),
    ("step 1655 - loss        nan - moving ave loss        nan", {"iteration": 1655, "loss": NAN},
     "MahmudulAlam/Automatic-Identification-and-Counting-of-Blood-Cells#15"),
    ("[2025-12-31 12:15:32,154227][I][examples/vit:445:train_fn] iter=10 loss=7.111572 "
     "dt=0.744444 dtd=0.003141 dtf=0.021592 dto=0.698994 dtb=0.020717 loss/mean=7.036184",
     {"iteration": 10, "loss": 7.111572, "elapsed_s": 0.744444}, "saforem2/ezpz docs/examples/vit.md"),
    ("iteration:  4875/500000   0% | elapsed time: 19:29:30 | per_token_loss: 3.3900 | lr: "
     "9.942E-06 | num_tokens: 1536772503 | fwd_bwd_time: 80734.8",
     {"iteration": 4875, "total_iterations": 500000, "loss": 3.39, "lr": 9.942e-06},
     "huggingface/m4-logs tr_141 num_workers_04 README.md"),
    # JSON lines whose total_steps field is the total, not a setting (two trainers' logs)
    ('{"current_steps": 11900, "total_steps": 11900, "loss": 0.0023, "reward": null, '
     '"learning_rate": 2.7878267028214054e-11, "epoch": 24.96, "percentage": 100.0, '
     '"elapsed_time": "3:40:04", "remaining_time": "0:00:00"}',
     {"iteration": 11900, "total_iterations": 11900, "loss": 0.0023},
     "112292454/ChatGLM-Efficient-Tuning-main trainer_log.jsonl (corpus)"),
    ('{"current_steps": 43, "total_steps": 82, "loss": 0.6608, "eval_loss": null, '
     '"predict_loss": null, "reward": null, "accuracy": null, "learning_rate": '
     '6.971779275566593e-06, "epoch": 0.5220030349013657, "percentage": 52.44, '
     '"elapsed_time": "0:27:55", "remaining_time": "0:25:19"}',
     {"iteration": 43, "total_iterations": 82, "loss": 0.6608}, "hiyouga/LlamaFactory#4350"),
    # parts of a loss, no loss key of its own: the first part is the loss
    ("[^[[34m2025-05-28 14:40:17^[[0m] (step=0012490) Train Loss mse: 0.0018, Train Loss ce: "
     "0.0130, Train Steps/Sec: 0.16,",
     {"iteration": 12490, "loss": 0.0018, "elapsed_s": 1 / 0.16}, "ByteDance-Seed/Bagel#80"),
    ("02:31:56: train iter: 100 loss_net: nan loss_scale: 785.4200 norm: nan norm_average: "
     "0.8729 seconds: 122.871", {"iteration": 100, "loss": NAN, "loss_scale": 785.42},
     "christianpayer/MedicalDataAugmentationTool-VerSe#31"),
    ("step 700, training mse loss nan, val mse loss nan",
     {"iteration": 700, "loss": NAN, "eval_loss": NAN}, "yaoyichen/CIKM-Cup-2017#7"),
    ("step 100000: train loss nan, val loss nan", {"iteration": 100000, "loss": NAN,
                                                  "eval_loss": NAN}, "datawhalechina/tiny-universe#31"),
    # DLLogger (NVIDIA DeepLearningExamples): step_loss / average_loss are parts of the loss
    ("DLL 2020-06-04 01:09:11.569757 - Training Epoch: 0 Training Iteration: 2933  average_loss "
     ": nan  step_loss : 1.0703125  learning_rate : 0.003161792362931437",
     {"iteration": 2933, "loss": NAN}, "NVIDIA/DeepLearningExamples#543"),
    ("DLL 2022-04-05 02:22:54.614486 - Training Epoch: 1 Training Iteration: 2872  step_loss : "
     "0.6953772306442261  learning_rate : 1.5844598709048836e-05",
     {"iteration": 2872, "loss": 0.6953772306442261}, "NVIDIA/DeepLearningExamples#1107"),
    # llm.c's log file: f.write("s:%d trl:%f\n") and "s:%d tel:%f\n" (karpathy/llm.c
    # train_gpt2.py, and modded-nanogpt's logs written by the same code)
    ("s:9535 trl:3.340180", {"iteration": 9535, "loss": 3.34018},
     "KellerJordan/modded-nanogpt records (corpus loss_spike-modded-nanogpt-f66d43d7)"),
    ("s:9536 tel:3.275959", {"iteration": 9536, "eval_loss": 3.275959, "event": "eval"},
     "KellerJordan/modded-nanogpt records (corpus loss_spike-modded-nanogpt-f66d43d7)"),
    ("s:0 trl:10.965596", {"iteration": 0, "loss": 10.965596}, "karpathy/llm.c train_gpt2.py"),
    # "key is value" and records/second (BigDL's DistriOptimizer)
    ("2018-04-13 07:12:15 INFO  DistriOptimizer$:392 - [Epoch 42 933888/1281167][Iteration "
     "17442][Wall Clock 26290.6678436s] Trained 3072 records in 1.468526684 seconds. Throughput "
     "is 2091.8926 records/second. Loss is 1.72319. Current learning rate is "
     "0.07595911266872037.", {"iteration": 17442, "loss": 1.72319, "samples_per_s": 2091.8926},
     "intel/ipex-llm#2494"),
    # a parenthesised time per step after the metrics
    ("INFO:niftynet:2018-02-04 06:07:02,482: Training iter 3211, loss=0.4551212191581726 "
     "(1.349622s)", {"iteration": 3211, "loss": 0.4551212191581726, "elapsed_s": 1.349622},
     "NifTK/NiftyNet#47"),
    ("INFO:tensorflow:global step 2458: loss = nan (2.34 sec/step)",
     {"iteration": 2458, "loss": NAN, "elapsed_s": 2.34}, "ardiya/HashtagPrediction#6"),
    # a step of a total as a JSON string: ms-swift's jsonl "global_step/max_steps": "1/10000"
    ('{"loss": 0.0, "grad_norm": 0.0, "learning_rate": 1e-06, "step_time": 17.67188024, '
     '"epoch": 0.0001, "global_step/max_steps": "1/10000", "elapsed_time": "36s", '
     '"remaining_time": "4d 3h 37m 48s", "memory(GiB)": 55.33, "train_speed(s/it)": 35.870414}',
     {"iteration": 1, "total_iterations": 10000, "loss": 0.0, "elapsed_s": 17.67188024},
     "modelscope/ms-swift#9261"),
    # the PyTorch examples' "Train Epoch: E [n/N (p%)]" counter: sample position across epochs
    ("2019-09-19 14:39:57 Train Epoch: 1 [51200/490871 (10%)]100, Loss: 24.182110, Elapsed "
     "time: 198.7967s(100 iters) Margin: 0.4000, Scale: 30.00",
     {"iteration": 490871 + 51200, "epoch": 1.0, "loss": 24.18211, "elapsed_s": 1.987967},
     "MuggleWang/CosFace_pytorch#14"),
    ("Train Epoch: 1 [4672/60000 (31%)]       Loss: 0.126806",
     {"iteration": 64672, "loss": 0.126806}, "kubernetes-sigs/jobset#95"),
    ("2025-08-14T23:41:27Z INFO     Train Epoch: 1 [1920/60000 (3%)]    loss=2.2376",
     {"iteration": 61920, "loss": 2.2376}, "kubeflow/katib#2560"),
    # the same bracketed sample counter, its percentage the tell, without the word before it:
    # the epoch of a total inside the bracket (ALCF's ai4sci trainer), or before it in a bracket
    ("[2022-11-08 17:07:13,902][ai4sci.trainer][INFO] - [0] [0/1: 2560 / 160145 (2%)] "
     "epoch=0.0000 dt=0.2999 running_loss=0.0005 batch_loss=0.0293 acc=0.0000 batch_acc=0.0039",
     {"iteration": 2560, "epoch": 0.0, "elapsed_s": 0.2999, "loss": 0.0293},
     "anglilian ai4sci thetagpu22 log (corpus throughput-anglilian-ai4sci-thetagpu22)"),
    ("Train Epoch: [1/10] [2560/60000 (4%)]\tLoss: 0.302118",
     {"iteration": 62560, "epoch": 1.0, "loss": 0.302118},
     "a SENet18 CIFAR example's train(): 'Train Epoch: [{}/{}] [{}/{} ({:.0f}%)]' (code search)"),
    # PyTorch's word_language_model: pipe-separated fields, the step an "N/ M batches" count of
    # the epoch, the time per batch in ms (three sources of the same family)
    ("| epoch   1 |   200/ 2983 batches | lr 20.0000 | ms/batch 11.61 | loss   nan | ppl      nan",
     {"iteration": 200, "total_iterations": 2983, "epoch": 1.0, "lr": 20.0, "elapsed_s": 0.01161,
      "loss": NAN}, "nlpia2 0.2.0 wheel ch08/rnn_word checkpoint_notes (corpus)"),
    ("| epoch   1 |   200/ 2323 batches | lr 20.00 | ms/batch 15.86 | loss  6.78 | ppl   883.54",
     {"iteration": 200, "total_iterations": 2323, "epoch": 1.0, "elapsed_s": 0.01586, "loss": 6.78},
     "pytorch/examples#95"),
    ("| epoch   6 |   200/ 2983 batches | lr 5.00 | ms/batch 32.47 | loss  4.95 | ppl   140.84",
     {"iteration": 200, "epoch": 6.0, "lr": 5.0, "elapsed_s": 0.03247, "loss": 4.95},
     "pytorch/examples#642"),
    # a count before its unit word, no step key (HAKE-Action's AE pre-training log)
    ("000 epoch, 06000 iter, average time 0.6607, loss nan", {"iteration": 6000, "loss": NAN},
     "DirtyHarryLYL/HAKE-Action-Torch#34"),
    # bare counters at the start of the line before keyed metrics: the step (of a total), or
    # the epoch and the step
    ("268/446 (epoch 0), train_loss = 2.097, time/batch = 0.194",
     {"iteration": 268, "total_iterations": 446, "loss": 2.097, "elapsed_s": 0.194},
     "sherjilozair/char-rnn-tensorflow#138"),
    ("333 154 Loss=nan Time=0.040", {"iteration": 154, "epoch": 333.0, "loss": NAN,
                                     "elapsed_s": 0.04}, "cchen156/Learning-to-See-in-the-Dark#117"),
    # "Batch: b/B" is a step only with its total (a batch size has none)
    ("[Epoch: 1/200, Batch: 20/327] loss: nan, dsc: 0.2118112862110138, sen: 0.37746421322226525, "
     "ppv: 0.682047963514924", {"iteration": 20, "total_iterations": 327, "epoch": 1.0,
                                "loss": NAN}, "Tai-Hsien/MeshSegNet#32"),
    ("Epoch: 1/3, Batch: 100/391, Loss: 1.4052, Accuracy: 37.27%",
     {"iteration": 100, "total_iterations": 391, "epoch": 1.0, "loss": 1.4052},
     "zyz9740/public.ai.c_training pybind11/README.md"),
    # trainers whose own pattern (parse/iterations.py) was removed: this reader gives the same row
    ("[11/01 11:20:11 d2.utils.events]: eta: 8:29:46  iter: 19  total_loss: 1.739  loss_cls: "
     "1.226  loss_box_reg: 0.516  time: 0.3401  data_time: 0.0466  lr: 0.000200  max_mem: 3957M",
     {"iteration": 19, "loss": 1.739, "elapsed_s": 0.3401, "lr": 0.0002},
     "facebookresearch/detectron2#195"),
    ("step 00004/21400 (0.02%) | loss: 8.893647 | lrm: 1.00 | dt: 989.44ms | tok/sec: 529,882 | "
     "mfu: 74.13 | total time: 0.00m",
     {"iteration": 4, "total_iterations": 21400, "loss": 8.893647, "elapsed_s": 0.98944,
      "tokens_per_s": 529882.0, "mfu": 74.13}, "karpathy/nanochat#147"),
    ("Step 1 | loss:2.085338592529297 lr:2e-05 tokens_per_second_per_gpu:57.828881833956174",
     {"iteration": 1, "loss": 2.085338592529297, "lr": 2e-05,
      "tokens_per_s_per_gpu": 57.828881833956174}, "meta-pytorch/torchtune#1358"),
    ("Step 0 | loss:1.7535516023635864 lr:2e-05 gpu_resources:13708965376 ",
     {"iteration": 0, "loss": 1.7535516023635864, "lr": 2e-05}, "meta-pytorch/torchtune#640"),
    ("2025-08-23 06:20:07,600 - trainers.dit_trainer - INFO - Step   1560 | Loss: 0.5275 | LR: "
     "3.00e-04 | GradNorm: 2.29 | TPS: 16.88K | Data: 0.007s | Frozen: 0.097s | TrainableFwd: "
     "0.701s | TrainableBwd: 1.170s",
     {"iteration": 1560, "loss": 0.5275, "lr": 3e-04, "grad_norm": 2.29}, "Kai-46/minFM#4"),
    ("I0422 07:10:05.258542 140486560917376 learning.py:507] global step 409: loss = 25237.8984 "
     "(0.273 sec/step)", {"iteration": 409, "loss": 25237.8984, "elapsed_s": 0.273},
     "tensorflow/models#8423 (TF-slim)"),
    ("Iter 100: Train loss 6.437, Learning Rate 7.000e-05, It/sec 0.921, Tokens/sec 371.347, "
     "Trained Tokens 39407, Peak mem 8.626 GB",
     {"iteration": 100, "loss": 6.437, "lr": 7e-05, "tokens_per_s": 371.347,
      "elapsed_s": 1 / 0.921}, "ml-explore/mlx-examples#620"),
    ("iter 2 step 1: loss 3.3320, iter time: 765.52ms (optimizer.step)",
     {"iteration": 2, "loss": 3.332, "elapsed_s": 0.76552}, "Lightning-AI/litgpt (iterations.py's example)"),
    # RETURNN: every loss is named by its layer ("ce" is cross entropy), the step's time is
    # "value sec/step", and "max_size:time 291200" (the batch's longest sequence) is no time
    ("ep 1 train, step 902, ce 7.114, ctc_17 7.167, fer 0.967, mem_usage:cuda:2 6.8GB, "
     "0.504 sec/step", {"iteration": 902, "loss": 7.114, "elapsed_s": 0.504},
     "rwth-i6/returnn#1486"),
    ("ep 1 train, step 10, ce 1.5, num_seqs 12, max_size:time:var-unk:data 300000, "
     "mem_usage:cuda:0 52.8GB, 0.717 sec/step, elapsed 0:06:53, exp. remaining 0:55:35, "
     "complete 11.02%", {"iteration": 10, "loss": 1.5, "elapsed_s": 0.717},
     "rwth-i6/i6_experiments (a RETURNN throughput summary's test)"),
    ("ep 1 train, step 200, aux_full_sum_4 0.283, aux_full_sum_8 0.078, full_sum 0.072, "
     "num_seqs 10, max_size:time 181296, max_size:out-spatial 105, mem_usage:cuda 7.7GB, "
     "3.023 sec/step, elapsed 0:13:55, exp. remaining 1:08:29, complete 16.90%",
     {"iteration": 200, "elapsed_s": 3.023}, "an i6 sum-loss recipe's comment (RETURNN)"),
    ("att-weights epoch 183, step 0, max_size:classes 94, max_size:data 3206, mem_usage:GPU:0 "
     "1.4GB, num_seqs 1, 2.520 sec/step, elapsed 0:00:03, exp. remaining 0:17:07, complete "
     "0.38%", {"iteration": 0, "elapsed_s": 2.52},
     "nikita6187/NMT hmm-factorization forward-dev-other tf_log_dir/out.sh (RETURNN 2018)"),
    # Tacotron 2 and its descendants: the step between the loss's name and its value
    ("Validation loss 8416:  0.711720  ", {"iteration": 8416, "eval_loss": 0.71172,
                                           "event": "eval"}, "NVIDIA/apex#493"),
    # Tacotron 2's train.py ("Train loss {} {:.6f} Grad Norm {:.6f} {:.2f}s/it"), as its forks
    # (Flowtron, Mellotron) print it
    ("Train loss 2300 0.412345 Grad Norm 0.871234 1.52s/it",
     {"iteration": 2300, "loss": 0.412345, "elapsed_s": 1.52}, "tacotron2 train.py format"),
    # a tqdm bar printed without the bar (rich consoles, Colab): its postfix read as a bar's
    ("[Epoch 0 / Train]:   0% 420/788222 [28:47<810:51:33,  3.71s/it, loss=nan, lr=2.5e-5, "
     "throughput=0.29466 sample_per_sec, 2.4123 Tflops][09/30/22 02:45:43] WARNING  colossalai "
     "- ShardedOptimizerV2 - WARNING:", {"iteration": 420, "loss": float("nan"), "elapsed_s": 3.71},
     "hpcaitech/ColossalAI#1375"),
    ("''' Train Epoch     #73:  82% 1025/1252 [35:04<13:48,  3.65s/it, loss=0.946, accuracy=77]"
     "WARNING: One or more tensors were submitted to be reduced",
     {"iteration": 1025, "epoch": 73.0, "loss": 0.946, "elapsed_s": 3.65}, "horovod/horovod#334"),
    # torchtune's recipes: the epoch, the optimizer's step and the loss in the bar's description
    # (pbar.set_description(f"{curr_epoch + 1}|{self.global_step}|Loss: {loss_to_log}")), the
    # bar's own count behind it
    ("  1|1|Loss: 1.7553404569625854:   0%|                       | 0/13000 [00:03<?, ?it/s]",
     {"iteration": 1, "epoch": 1.0, "loss": 1.7553404569625854},
     "pytorch/torchtune docs/source/tutorials/first_finetune_tutorial.rst"),
    # tqdm-loggable's record of Levanter's training bar (stanford-crfm/levanter draws its bars
    # with tqdm_loggable.auto): the postfix's loss, the count the step (the line as a Levanter
    # user's run notes quote it, found by code search; the repository is not named there)
    ("Progress on:train 11.0it/18.0it rate:34.5s/it remaining:04:01 elapsed:17:46 "
     "postfix:loss=15.5", {"iteration": 11, "loss": 15.5, "elapsed_s": 34.5},
     "Levanter via tqdm-loggable"),
    # NVIDIA's MLPerf SSD: the step's loss, an EMA of it, the interval's rate (a spaced slash)
    ("Iteration:     40, Loss function: 18.340, Average Loss: 0.834, avg. samples / sec: 4425.19",
     {"iteration": 40, "loss": 18.34, "samples_per_s": 4425.19},
     "mlcommons/training_results_v0.6 NVIDIA/results/dgx1_ngc19.05_pytorch/ssd/result_0.txt"),
    ("Epoch:   3, Iteration:    400, Loss function: 5.100, Average Loss: 4.834, "
     "avg. samples / sec: 4425.19",
     {"iteration": 400, "epoch": 3.0, "loss": 5.1, "samples_per_s": 4425.19},
     "built from the print format of a later NVIDIA MLPerf SSD train.py: 'Epoch:{:4d}, Iteration: …'"),
    # a perplexity where the line prints no loss: the series that diverges, in its own units;
    # "Step at N" names the step
    ("Step at 84 with Perplexity: 378.44832789782026",
     {"iteration": 84, "loss": 378.44832789782026},
     "corpus loss_spike-deepspeedexamples-random-ltd-my-implementation-fp16 (DeepSpeedExamples)"),
    ("'step':10, 'ppl': 44.84108456803058, 'seq_len': 136, 'consume layer-tokens': 118144",
     {"iteration": 10, "loss": 44.84108456803058},
     "corpus throughput-deepspeedexamples-check-base-training (DeepSpeedExamples data_efficiency)"),
    # ... and a loss printed beside it is the loss
    ("| epoch 019 | 0161656 updates | words/s   14482| trainloss     1.94 | train ppl     3.84",
     {"iteration": 161656, "loss": 1.94}, "facebookresearch/fairseq-lua#26"),
]


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == pytest.approx(b)


@pytest.mark.parametrize("line, expected, source", REAL_LINES, ids=[r[2] for r in REAL_LINES])
def test_real_lines(line: str, expected: dict, source: str) -> None:
    row = parse_metric_line(line)
    assert row is not None, source
    for k, v in expected.items():
        assert _same(row.get(k), v), (source, k, row)
    assert "elapsed_s" not in row or "elapsed_s" in expected  # a clock is no time per step


@pytest.mark.parametrize("line", [
    # word_language_model's end-of-epoch summary names no step (pytorch/examples#95)
    "| end of epoch   1 | time: 24.19s | valid loss  5.15 | valid ppl   172.34",
    "max_steps: 1000 loss: 2",  # a setting
    "76930 2.6496577",  # a bare table row is the table loader's (parse/tables.py)
    "20240101 12:00:00 loss=2.0",  # a date and a clock are no counters
    "batch size 32 loss 2.3",  # a batch size is no step
    "[Rank 0] step=100, skipped=0, lr=[0.0001], mom=[(0.9, 0.95)]",  # no loss or rate
    "Namespace(lr=0.001, step=10, loss=2.0)",
    "step 3 loss_scale: 1024.0",  # a loss scale is no part of the loss
    "s:12 eval:0.29",  # llm.c's HellaSwag accuracy: no loss
    # a bar without a loss in its postfix is the progress parser's alone
    "Steps:  25%|██▌       | 382/1500 [5:29:27<15:48:09, 50.89s/it, step_time=50.94s]",
    # tqdm-loggable's record with no postfix (HEISENYAN/openpi train_aloha_folding.out)
    "02:03:13.439 [I] Progress on: 5.00it/200kit rate:1.3s/it remaining:71:35:34 elapsed:00:10 "
    "postfix:- (8428:tqdm_logging.py:145)",
    # a bar whose description names an eval loss or no loss
    "val loss: 2.3: 100%|██████████| 10/10 [00:01<00:00,  9.80it/s]",
    "Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.55s/it]",
    # deepspeedai/DeepSpeed#5008: a bar fused with a message that names a step
    "3%|▎         | 270/9847 [05:50<3:17:42,  1.24s/it]Invalidate trace cache @ step 1: "
    "expected module 25, but got module 323",
])
def test_lines_that_are_no_step(line: str) -> None:
    assert parse_metric_line(line) is None


@pytest.mark.parametrize("line, expected", [
    ('{"step": 10, "train/loss": NaN, "lr": 0.001}', {"iteration": 10, "loss": NAN}),
    ('{"global_step": 7, "loss": Infinity, "grad_norm": 3.2}',
     {"iteration": 7, "loss": float("inf"), "grad_norm": 3.2}),
    ("epoch 1 step 200/5000: loss=nan, grad_norm=inf, tokens/s=5,123",
     {"iteration": 200, "total_iterations": 5000, "tokens_per_s": 5123.0}),
    ("step: 5 eval_loss: 2.1", {"iteration": 5, "eval_loss": 2.1, "event": "eval"}),
    ("Iter [120/5000] loss: 0.123 time: 0.34", {"iteration": 120, "elapsed_s": 0.34}),
    ("global_step=40 step=3 train loss: 2.3 step_time: 230ms",
     {"iteration": 40, "loss": 2.3, "elapsed_s": 0.23}),
    ("step 12 | loss 2.1 | 9.8it/s", {"iteration": 12, "elapsed_s": 1 / 9.8}),
    # a loss in a tqdm bar's description, no postfix: the bar's count is the step
    ("loss: 2.3456: 100%|██████████| 10/10 [00:01<00:00,  9.80it/s]",
     {"iteration": 10, "loss": 2.3456, "elapsed_s": 1 / 9.8}),
    ("Epoch 3 loss=2.1: 50%|█████     | 5/10 [00:01<00:01,  4.00it/s]",
     {"iteration": 5, "epoch": 3.0, "loss": 2.1}),
])
def test_syntaxes(line: str, expected: dict) -> None:
    row = parse_metric_line(line)
    assert row is not None
    for k, v in expected.items():
        assert _same(row.get(k), v), (k, row)


@pytest.mark.parametrize("line, expected", [
    # cepin19/dp logs/opensubtiles/src1tgt0_fr/train_trans.newvocab3.2.log (Marian NMT, 2019)
    ("[2019-02-22 14:19:55] Ep. 41 : Up. 405500 : Sen. 3,713,239 : Cost 23.00790405 : Time "
     "1327.50s : 26701.88 words/s : L.r. 5.9592e-05",
     {"iteration": 405500, "loss": 23.00790405, "tokens_per_s": 26701.88, "interval_s": 1327.5}),
    # a 2022 Marian log found by find_string (index id 10910561532; the index names no
    # repository): the newer 'Cost avg * count @ labels after total' layout of
    # marian-nmt/marian's scheduler.h
    ("[2022-04-13 06:50:14] Ep. 743 : Up. 54500 : Sen. 2,024 : Cost 1.32428324 * 1,606,964 @ "
     "2,405 after 175,555,492 : Time 200.61s : 8010.57 words/s : L.r. 1.6255e-04",
     {"iteration": 54500, "loss": 1.32428324, "tokens_per_s": 8010.57, "interval_s": 200.61}),
])
def test_marian_update_lines(line: str, expected: dict) -> None:
    """Marian NMT: 'Up.' is the update counter, 'Cost' the loss, words/s the rate, and the bare
    'Time …s' beside that rate the display interval's wall time, not one update's."""
    row = parse_metric_line(line)
    assert row is not None and "elapsed_s" not in row
    for k, v in expected.items():
        assert _same(row.get(k), v), (k, row)


def test_only_lines_no_other_parser_read(tmp_path) -> None:
    """A Megatron line is read once, by its own parser; an unknown trainer's line by this one."""
    log = tmp_path / "job.log"
    log.write_text(
        " iteration       10/     100 | consumed samples:          160 | elapsed time per "
        "iteration (ms): 950.1 | learning rate: 1.000E-04 | global batch size:    16 | lm loss: "
        "7.1E+00 | loss scale: 1.0 | grad norm: 1.2 | number of skipped iterations:   0 | number "
        "of nan iterations:   0 |\n"
        "Step: 4970, Loss: 0.189453, Time: 1638.07 ms, TPS: 6251, TFLOPS: 43.28, MFU: 29.1%\n")
    it = load(str(log)).iterations
    assert list(it["iteration"]) == [10, 4970]


def test_ms_swift_printed_dict_names_its_step() -> None:
    """ms-swift prints an HF-style dict whose step is 'global_step/max_steps': 'N/M'
    (modelscope/ms-swift#4146), read by the HF dict parser, not counted."""
    from traindoc.parse.iterations import parse_hf_dict

    got = parse_hf_dict("{'loss': 0.21862793, 'grad_norm': 0.73740131, 'learning_rate': 8.6e-07, "
                        "'memory(GiB)': 63.16, 'train_speed(iter/s)': 0.011176, 'epoch': 0.65, "
                        "'global_step/max_steps': '57/176', 'percentage': '32.39%'}")
    assert got is not None
    kind, row = got
    assert (kind, row["iteration"], row["total_iterations"]) == ("train", 57, 176)


# deepinsight/insightface#2262: a paste broke the step line at a field separator
INSIGHTFACE_2262 = [
    "Training: 2023-03-14 09:08:43,293-Speed 2178.40 samples/sec   Loss nan   LearningRate "
    "0.001000   ",
    "Epoch: 0   Global Step: 20   Fp16 Grad Scale:  0   Required: 194 hours",
    "Training: 2023-03-14 09:08:47,984-Speed 2183.37 samples/sec   Loss nan   LearningRate "
    "0.001000   Epoch: 0   Global Step: 30   Fp16 Grad Scale:  0   Required: 144 hours",
]
# deepinsight/insightface#2277: the same record whole, and broken the same way
INSIGHTFACE_2277 = ("Training: 2023-04-07 09:02:24,067-Speed 931.38 samples/sec   Loss 9.5353   "
                    "LearningRate 0.066591490546   ", "Epoch: 5   Global Step: 440620   Fp16 Grad "
                    "Scale:  0   Required: 187 hours")


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_a_step_line_broken_before_its_step_is_rejoined(tmp_path, engine: str) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(INSIGHTFACE_2262) + "\n")
    it = load(str(log), engine=engine).iterations
    assert list(it["iteration"]) == [20, 30]
    assert it["nan"].fillna(0).astype(int).tolist() == [1, 1]
    whole = parse_metric_line("".join(INSIGHTFACE_2277))
    log.write_text("\n".join(INSIGHTFACE_2277) + "\n")
    it = load(str(log), engine=engine).iterations
    assert whole is not None and list(it["iteration"]) == [whole["iteration"]] == [440620]
    assert it["loss"].iloc[0] == pytest.approx(9.5353)


def test_a_metrics_line_is_not_joined_to_a_step_line_of_its_own(tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_text("eval loss 2.5 samples/sec 100   \nstep 10 loss 2.1\n")
    it = load(str(log)).iterations
    assert list(it["iteration"]) == [10]
    assert it["loss"].iloc[0] == pytest.approx(2.1)


# MLPerf's ":::MLLOG {json}" events: the step in the metadata, the rate in the value
MLLOG_LINES = [
    (':::MLLOG {"namespace": "", "time_ms": 1714541647261, "event_type": "POINT_IN_TIME", "key": '
     '"tracked_stats", "value": {"throughput": 56479.878083263764}, "metadata": {"file": '
     '"/workspace/image_classification/common/fit.py", "lineno": 1001, "step": 2}}',
     {"iteration": 2, "samples_per_s": 56479.878083263764},
     "LambdaLabsML/training_results_v4.0 Oracle resnet 240501044234180111914_4.log (corpus)"),
    (' 0: :::MLLOG {"namespace": "", "time_ms": 1719843792116, "event_type": "POINT_IN_TIME", '
     '"key": "tracked_stats", "value": {"throughput": 14214.65962521748}, "metadata": {"file": '
     '"/workspace/bert/run_pretraining.py", "lineno": 1850, "epoch_num": 799502}}',
     {"iteration": 799502, "samples_per_s": 14214.65962521748},
     "LambdaLabsML/training_results_v4.0 Lambda/benchmarks/bert/implementations/pytorch/Lambda.md"),
]


@pytest.mark.parametrize("line, expected, source", MLLOG_LINES, ids=[r[2] for r in MLLOG_LINES])
def test_mllog_events(line: str, expected: dict, source: str) -> None:
    assert parse_metric_line(line) == expected


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_mllog_events_by_either_engine(tmp_path, engine: str) -> None:
    log = tmp_path / "result.log"
    # an eval event is no step line: no loss, no rate
    log.write_text("\n".join(line for line, _, _ in MLLOG_LINES) + "\n"
                   ':::MLLOG {"namespace": "", "time_ms": 1714541672016, "event_type": '
                   '"POINT_IN_TIME", "key": "eval_accuracy", "value": 0.2938, "metadata": {"file": '
                   '"/workspace/image_classification/common/fit.py", "lineno": 1043, '
                   '"epoch_num": 3}}\n')
    it = load(str(log), engine=engine).iterations
    assert it["samples_per_s"].tolist() == [56479.878083263764, 14214.65962521748]


# running means printed beside the interval's rate: the interval's rate is read, the running
# mean only where the line has no other (torch_xla's and Cerebras' "Rate=… GlobalRate=…";
# DeepSpeed's "RunningAvgSamplesPerSec=…, CurrSamplesPerSec=…")
RATE_LINES = [
    ("| Training Device=xla:0/3 Epoch=1 Step=280 Loss=0.01022 Rate=1760.91 GlobalRate=257.10 "
     "Time=07:29:39", {"iteration": 280, "loss": 0.01022, "samples_per_s": 1760.91},
     "pytorch/xla#6026 (corpus)"),
    ("2024-03-30 15:16:51,449 INFO:   | Train Device=CSX, Step=200, Loss=8.70312, "
     "Rate=2941.41 samples/sec, GlobalRate=2948.08 samples/sec",
     {"iteration": 200, "loss": 8.70312, "samples_per_s": 2941.41},
     "kharelb/ai-science-training-series homework_7.md (a Cerebras CSX run)"),
    # (syntax, not a real line: DeepSpeed's two fields as JSON keys; a running mean alone)
    ('{"step": 20, "RunningAvgSamplesPerSec": 232.73, "CurrSamplesPerSec": 227.48, "loss": 2.1}',
     {"iteration": 20, "loss": 2.1, "samples_per_s": 227.48}, "syntax: DeepSpeed's fields"),
    ('{"step": 20, "GlobalRate": 257.1, "loss": 2.1}',
     {"iteration": 20, "loss": 2.1, "samples_per_s": 257.1}, "syntax: a running mean alone"),
]


@pytest.mark.parametrize("line, expected, source", RATE_LINES, ids=[r[2] for r in RATE_LINES])
def test_interval_rate_before_running_mean(line: str, expected: dict, source: str) -> None:
    row = parse_metric_line(line)
    assert row is not None
    assert {k: row.get(k) for k in expected} == expected
    assert "samples_per_s_mean" not in row


# bare counters before "|"-separated fields (llama2.c and its forks) and yolact's bracketed
# epoch before the counter; the MetricLogger counter of torchvision's references and DLRM
COUNTER_LINES = [
    ("590 | loss 6.1569 | lr 4.995067e-05 | 7949.49ms | mfu 0.21%",
     {"iteration": 590, "loss": 6.1569, "mfu": 0.21}, "karpathy/llama2.c#461 (corpus)"),
    ("10 | loss 9.3750 | lr 3.000000e-04 | 13597.70ms",
     {"iteration": 10, "loss": 9.375, "lr": 3e-4}, "nwyin/modded-llama2#10"),
    # counters joined by " : ": the epoch, the epoch's batch of its total, the run's step
    # (ecmwf/WeatherGenerator trainer.py @4a9330c5, '{:03d} : {:05d}/{:05d} : {:06d} : loss = …')
    ("000 : 00110/00239 : 000110 : loss = 1.1995E-01 (lr=1.59E-04, s/sec=0.514) ERA5 : 1.1995E-01",
     {"iteration": 110, "epoch": 0.0, "loss": 0.11995, "lr": 1.59e-4},
     "ecmwf/WeatherGenerator#255 (corpus gpu_crash-weathergenerator-255)"),
    ("[  1]    1530 || B: 5.557 | C: 2.994 | M: 8.920 | S: 0.971 | T: 18.442 || ETA: 196 days, "
     "14:56:04 || timer: 0.321", {"iteration": 1530, "epoch": 1.0, "elapsed_s": 0.321},
     "dbolya/yolact#359 (corpus)"),
    ("[ 10]    1000 || B: 2.486 | C: 2.181 | M: 1.478 | S: 0.064 | T: 6.209 || ETA: 93 days, "
     "12:50:16 || timer: 2.703", {"iteration": 1000, "epoch": 10.0, "elapsed_s": 2.703},
     "dbolya/yolact#560 (timer: one iteration's time, yolact#43)"),
    ("Epoch:[0/1] [68080/75869]  eta: 0:00:37  loss: 0.1228  step_time: 4.7715 ms  lr: 24.000000",
     {"iteration": 68080, "total_iterations": 75869, "epoch": 0.0, "loss": 0.1228,
      "elapsed_s": 0.0047715}, "mlcommons training_results_v0.7 NVIDIA DLRM result_0 (corpus)"),
    ("Epoch: [0]  [1/6]  eta: 0:00:11  lr: 0.002003  loss: 7.5953 (7.9363)  loss_classifier: "
     "0.7068 (0.7149)  loss_box_reg: 0.7579 (0.7598)  time: 2.2824  data: 0.6244  max mem: 2648",
     {"iteration": 1, "total_iterations": 6, "epoch": 0.0, "loss": 7.5953, "elapsed_s": 2.2824},
     "beijn/bachelor-thesis detection/traingraph.py (a torchvision detection log)"),
    # the run's count named by its unit before the epoch's batch counter: the run's is the step
    ("[03/08 16:18:39] ppdet.engine INFO:   5063/130860 iters Epoch: [6] [   700/727] "
     "learning_rate: 0.000100 loss_class: 0.632942 loss: 14.980160 eta: 4 days, 10:31:03 "
     "batch_cost: 2.5182 data_cost: 0.0018 ips: 1.5884 images/s",
     {"iteration": 5063, "total_iterations": 130860, "loss": 14.98016},
     "Miracle2333/PaddleDetection log/workerlog.0 (corpus timeout-paddledetection-workerlog)"),
    # the same SemiLogPrinter's format ('{}/{} iters', 'Epoch: [{}]', '[{}/{}]', the counts padded
    # to the run's width), wjm202/PaddleDetection_ssod_detr ppdet/engine/callbacks.py @323bcc2
    ("[05/16 10:02:11] ppdet.engine INFO:   2200/120000 iters Epoch: [1] [   700/1500] "
     "learning_rate: 0.000100 loss: 12.341250 eta: 3 days, 1:02:03 batch_cost: 2.1000 "
     "data_cost: 0.0020 ips: 3.8095 images/s",
     {"iteration": 2200, "total_iterations": 120000, "loss": 12.34125},
     "wjm202/PaddleDetection_ssod_detr ppdet/engine/callbacks.py SemiLogPrinter (its format)"),
    # Horovod's synthetic benchmarks (examples/pytorch/pytorch_synthetic_benchmark.py,
    # tensorflow2_synthetic_benchmark.py: 'Iter #%d: %.1f img/sec per %s'): "img/sec" is a rate
    ("Iter #0: 108.3 img/sec per GPU", {"iteration": 0, "samples_per_s": 108.3},
     "horovod/horovod#712"),
    ("Iter #99: 419.7 img/sec per GPU", {"iteration": 99, "samples_per_s": 419.7},
     "BFTrainer/BFTrainer stdout.txt (corpus gpu_crash-bftrainer-thetagpu-horovod-healthy)"),
    # tf_cnn_benchmarks' "Step\tImg/sec\ttotal_loss" rows (horovod/horovod#466)
    ("10\timages/sec: 204.8 +/- 0.1 (jitter = 0.6)\t9.228",
     {"iteration": 10, "samples_per_s": 204.8}, "horovod/horovod#466"),
    # the run's counter bare at the start of the line, before the epoch's batch counter:
    # carpedm20/DCGAN-tensorflow model.py's "[%8d Epoch:[%2d/%2d] [%4d/%4d] time: …" (counter, …)
    ("[     393 Epoch:[ 1/25] [ 119/ 273] time: 299.8392, d_loss: 1.39557624, g_loss: 0.69223416",
     {"iteration": 393, "elapsed_s": 299.8392, "loss": 1.39557624},
     "XBisATrouble/DCGAN-NPU nohup.out (corpus gpu_crash-dcgan-npu-ctx-oom-then-cpu)"),
    # an epoch, then its batch: MXNet's Speedometer (the batch alone, then the window it measured
    # since MXNet 1.2: its end is the batch) and gluon-cv's "[Epoch e Batch b]"; the epoch is no step
    ("INFO:root:Epoch[0] Batch [300]\tSpeed: 13594.84 samples/sec\tTrain-accuracy=0.934219",
     {"iteration": 300, "epoch": 0.0, "samples_per_s": 13594.84},
     "MXNet example/image-classification train_mnist.py output, as a public README quotes it"),
    ("Epoch[0] Batch [80-100]\tSpeed: 6.30 samples/sec\tLoss=25.103594",
     {"iteration": 100, "epoch": 0.0, "samples_per_s": 6.30, "loss": 25.103594},
     "BigDeviltjj/mxnet-cornernet#1"),
    ("INFO:root:[Epoch 1 Batch 300] Speed: 3402.10 samples/sec loss=0.234500",
     {"iteration": 300, "epoch": 1.0, "samples_per_s": 3402.1, "loss": 0.2345},
     "dmlc/gluon-cv#1663's '[Epoch 1 Batch 300]' counter (corpus gpu_crash-gluon-cv-1663) with a loss"),
]


@pytest.mark.parametrize("line, expected, source", COUNTER_LINES,
                         ids=[r[2] for r in COUNTER_LINES])
def test_counters_of_other_shapes(line: str, expected: dict, source: str) -> None:
    row = parse_metric_line(line)
    assert row is not None
    assert {k: row.get(k) for k in expected} == pytest.approx(expected)


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_yolact_lines_by_either_engine(tmp_path, engine: str) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(line for line, _, src in COUNTER_LINES if "yolact" in src) + "\n")
    assert load(str(log), engine=engine).iterations["iteration"].tolist() == [1530, 1000]


# MLPerf positions and names of more writers: NeMo stable diffusion's "step_num", a GPT-3
# writer's float "step" and "train_step_time"; the end-of-run average whose metadata step is a
# list is no step of its own (its value's "epoch_num" is no position)
MLLOG_MORE = [
    ('0: :::MLLOG {"namespace": "", "time_ms": 1745982402366, "event_type": "POINT_IN_TIME", '
     '"key": "tracked_stats", "value": {"throughput": 1060.6359424038478}, "metadata": {"file": '
     '"/workspace/sd/callbacks.py", "lineno": 471, "step_num": 100}}',
     {"iteration": 100, "samples_per_s": 1060.6359424038478},
     "mlcommons training_results_v5.0 h200 NeMo stable diffusion result_9 (corpus)"),
    (':::MLLOG {"namespace": "", "time_ms": 1745667468145, "event_type": "POINT_IN_TIME", "key": '
     '"tracked_stats", "value": {"train_step_time": 20.183792114257812, "reduced_train_loss": '
     '7.745606422424316}, "metadata": {"file": "/workspace/llm/custom_callbacks.py", "lineno": '
     '484, "step": 896.0}}',
     {"iteration": 896, "elapsed_s": 20.183792114257812, "loss": 7.745606422424316},
     "mlcommons training_results_v5.0 tyche gpt3 ngpu512 result_1 (corpus)"),
    # the metadata names the epoch before the step: the step is step_num, the lower rank
    (':::MLLOG {"namespace": "", "time_ms": 1695904474793, "event_type": "POINT_IN_TIME", "key": '
     '"train_loss", "value": 0.42877182364463806, "metadata": {"file": '
     '"/global/u2/s/sfarrell/WorkAreas/mlperf/optimized-hpc-23.09/deepcam/pytorch/src/deepCam/'
     'driver/trainer.py", "lineno": 672, "epoch_num": 1, "step_num": 58}}',
     {"iteration": 58, "loss": 0.42877182364463806},
     "mlcommons/hpc_results_v3.0 HPE+LBNL perlmutter_512x4 deepcam result_1.txt (corpus)"),
    # the metadata names only the run's samples: the count is the step (its tracked_stats name
    # the same count "step")
    ('0: :::MLLOG {"namespace": "", "time_ms": 1728539696697, "event_type": "POINT_IN_TIME", '
     '"key": "train_loss", "value": 2.153398036956787, "metadata": {"file": '
     '"/workspace/ft-llm/custom_callbacks.py", "lineno": 223, "samples_count": 80, "lr": '
     '0.0003998458072481446}}',
     {"iteration": 80, "loss": 2.153398036956787},
     "mlcommons/training_results_v4.1 Supermicro llama2_70b_lora result_10.txt (corpus)"),
]


def test_mllog_stats_keyed_only_by_samples_are_no_step() -> None:
    # mlcommons/training_results_v5.1 NVIDIA llama31_8b result_8.txt (corpus): between events
    # that count optimizer steps by "step", a dict of stats keyed only by the samples
    line = (':::MLLOG {"namespace": "", "time_ms": 1759965736104, "event_type": "POINT_IN_TIME", '
            '"key": "tracked_stats", "value": {"train_step_time": 0.08619298268750224}, '
            '"metadata": {"file": "/usr/local/lib/python3.12/dist-packages/mlperf_common/'
            'callbacks/logging.py", "lineno": 210, "samples_count": 12288}}')
    assert parse_metric_line(line) is None


@pytest.mark.parametrize("line, expected, source", MLLOG_MORE, ids=[r[2] for r in MLLOG_MORE])
def test_mllog_positions_and_names(line: str, expected: dict, source: str) -> None:
    assert parse_metric_line(line) == expected


def test_mllog_run_average_is_no_step() -> None:
    line = (':::MLLOG {"namespace": "", "time_ms": 1727863630647, "event_type": "POINT_IN_TIME", '
            '"key": "tracked_stats", "value": {"throughput": 7015.3764712020175, "epoch_num": '
            '2248947}, "metadata": {"file": "/workspace/bert/run_pretraining.py", "lineno": 2035, '
            '"step": [2, 2930]}}')
    assert parse_metric_line(line) is None


def test_the_tail_of_a_hyphenated_key_is_no_rate() -> None:
    # the pith trainer's job.log (corpus throughput-pith-train-7): "learning-rate" is no rate
    row = parse_metric_line(
        "2026-04-01 14:06:36 | INFO | step 00000001/00000015 | step-time 73.352 sec | "
        "cross-entropy-loss 2.6636 | load-balance-loss 0.001807 | learning-rate 1.000000e-06 | "
        "gradient-norm 20.2657 | tokens-per-second 28,590 | peak-gpu-memory 63.65 GB")
    assert row is not None
    assert "samples_per_s" not in row and row["loss"] == 2.6636


EPOCH_BATCH_LINES = [
    # corpus loss_spike-llm-pretrain-train (a committed train.log)
    ("ep: 0, batch: 260, time: 8.56, ntokens: 413.40/513, loss: 8.390625",
     {"iteration": 260, "epoch": 0.0, "elapsed_s": 8.56, "loss": 8.390625}),
    # EdisonChen0816/ner_toolkit#1
    ("2021-01-05 15:21:22,065|INFO|epoch:0, batch: 1, current loss: 4.891431",
     {"iteration": 1, "epoch": 0.0, "loss": 4.891431}),
]


@pytest.mark.parametrize(("line", "expected"), EPOCH_BATCH_LINES)
def test_a_keyed_batch_after_its_epoch_is_the_step(line: str, expected: dict) -> None:
    assert parse_metric_line(line) == expected


def test_a_keyed_batch_without_an_epoch_is_no_step() -> None:
    # a batch size written as "batch: 32" is no step counter
    assert parse_metric_line("batch: 32, lr: 0.1, loss: 2.0") is None


@pytest.mark.parametrize(("line", "expected"), [
    # mlcommons/training_results_v1.1 Baidu/results/1_node_8_A100_PaddlePaddle/resnet/result_0.txt:
    # PaddlePaddle's MLPerf ResNet-50, the pass and its batch, "speed" in images per second
    ("Train Pass 2, batch 220, rtime 0.1222, time 0.1234, speed 26454.34",
     {"iteration": 220, "epoch": 2.0, "samples_per_s": 26454.34}),
    # PaddlePaddle/Paddle#5473: the v2 API's event handler, the loss as "Cost"
    ("Pass 0, Batch 100, Cost 2.261713, {'classification_error_evaluator': 0.8359375}",
     {"iteration": 100, "epoch": 0.0, "loss": 2.261713}),
    # PaddlePaddle/models#4882: image_classification's bracketed pass and train batch
    ("INFO:utils.utility:[Pass 0, train batch 10]   loss 21.68535, acc1 0.00781, acc5 0.00781, "
     "lr 0.10000, batch_cost 0.13110 sec, reader_cost 0.00069 sec, ips 976.32917 images/sec",
     {"iteration": 10, "epoch": 0.0, "loss": 21.68535, "samples_per_s": 976.32917}),
])
def test_a_paddle_pass_and_its_batch_are_the_step(line: str, expected: dict) -> None:
    row = parse_metric_line(line)
    assert row is not None and {k: row.get(k) for k in expected} == expected


def test_a_speed_with_a_time_is_no_rate() -> None:
    # the Pose2Mesh family's "speed: 0.72(0.65s r0.00)s/itr" is seconds per iteration
    row = parse_metric_line("Epoch 0/7 itr 26/3489: lr: 0.0001 speed: 0.72(0.65s r0.00)s/itr "
                            "0.62h/epoch loss: 1.2")
    assert row is None or "samples_per_s" not in row


# (line, the optimizer step it names with no metric, source): the run's progress, no series point
STEP_MARKER_LINES = [
    ("PID 431169:  After activation tracker at opt_step 235", 235,
     "huggingface/m4-logs tr_141-hanging/…_num_workers_0-try5/README.md"),
    ("PID 2232678:  After save batch at opt_step 833", 833,
     "huggingface/m4-logs tr_141-hanging/…_num_workers_02/README.md"),
    ("2021-03-08 18:12:19 | INFO | fairseq_cli.train | Stopping training due to num_updates: 10 "
     ">= max_update: 10", 10, "facebookresearch/fairseq examples/fully_sharded_data_parallel/README.md"),
]

# lines whose only counter may not be the optimizer's: no step row (precision first)
NOT_STEP_MARKERS = [
    # environment steps of an RL trainer (spawnaga/GeneticTrading, attached_assets/Pasted-…)
    "[TRAINING] 2025-07-10 23:23:11 [INFO    ] 🔸 FUTURES_ENV    : 📊 Step 616689 | Action: BUY | "
    "Price: $7457.50 | Position: -4",
    # (dmlc/gluon-cv#1663's "[Epoch 1 Batch 300] Training: accuracy=…" names its epoch with the
    # batch: progress, test_an_epochs_batch_with_an_unknown_metric_is_progress)
    # (hpcaitech/ColossalAI#3172's "[3/1000] Forward GPU memory usage: …" is a step's memory
    # report, read by its own wording: test_a_steps_memory_report_is_the_step_the_run_reached)
    # a setting, not a step
    "max global_step 100",
    # a checkpoint's name (a DeepSpeed run's save, corpus loss_spike-cn-mini-phi3-ds-pretrain)
    "[2025-02-16 04:22:24,735] [INFO] [logging.py:96:log_dist] [Rank 0] [Torch] Checkpoint "
    "global_step1971 is about to be saved!",
    # a tqdm bar's postfix: the progress parser's line (facebookresearch/fairseq#247)
    "| epoch 001:   0%| | 50/11265 [02:25<9:05:31,  2.92s/it, loss=0.000, ppl=1.00, wps=0, "
    "ups=0.0, wpb=0, bsz=0, num_updates=0, lr=1e-07,",
]


@pytest.mark.parametrize(("line", "step", "source"), STEP_MARKER_LINES)
def test_a_line_naming_the_optimizer_step_is_progress_only(line: str, step: int,
                                                           source: str) -> None:
    assert parse_line(line) == {"iteration": step, "event": STEP_EVENT}, source


@pytest.mark.parametrize("line", NOT_STEP_MARKERS)
def test_other_counters_without_a_metric_are_no_step(line: str) -> None:
    assert parse_line(line) is None


def test_a_step_marker_gives_progress_and_no_series_point(tmp_path) -> None:
    log = tmp_path / "main_log.txt"
    log.write_text("PID 431169:  After activation tracker at opt_step 235\n"
                   "PID 431171:  Before backward pass in _do_batch\n")
    inc = load(str(tmp_path))
    assert last_progress(inc).step == 235
    assert training_steps(inc).empty


# fairseq's end-of-epoch stats with --log-format json: the step key behind the "train_" prefix
# (facebookresearch/fairseq examples/fully_sharded_data_parallel/README.md; #1529, as the
# issue's paste wrapped it mid-key every ~130 columns)
FAIRSEQ_FSDP_EPOCH = (
    '2021-03-08 12:43:15 | INFO | train | {"epoch": 1, "train_loss": "19.351", "train_ppl": '
    '"668509", "train_wps": "210.9", "train_ups": "0.01", "train_wpb": "16384", "train_bsz": "8", '
    '"train_num_updates": "10", "train_lr": "0", "train_gnorm": "36.26", "train_loss_scale": "1", '
    '"train_train_wall": "667", "train_gb_free": "9.3", "train_wall": "804"}')
FAIRSEQ_1529_WRAPPED = [
    '2020-10-01 10:25:50 | INFO | train | {"epoch": 73, "train_loss": "nan", "train_ntokens": '
    '"15558.8", "train_nsentences": "427.098", "t',
    'rain_nll_loss": "nan", "train_wps": "2443", "train_ups": "0.16", "train_wpb": "15558.8", '
    '"train_bsz": "427.1", "train_num_updates": "',
    '9291", "train_lr": "1e-08", "train_gnorm": "nan", "train_loss_scale": null, '
    '"train_train_wall": "867", "train_wall": "0"}',
    "2020-10-01 10:25:50 | INFO | fairseq.trainer | begin training epoch 74",
]


def test_fairseq_json_epoch_stats_are_a_step_even_wrapped(tmp_path) -> None:
    row = parse_metric_line(FAIRSEQ_FSDP_EPOCH)
    assert row is not None and (row["iteration"], row["loss"]) == (10, 19.351)
    log = tmp_path / "train.log"
    log.write_text("\n".join(FAIRSEQ_1529_WRAPPED) + "\n")
    it = training_steps(load(str(log)))
    assert it["iteration"].tolist() == [9291]
    assert it["line"].iloc[0].endswith('"train_wall": "0"}')
    # the validation's stats carry no training step ("valid_num_updates")
    assert parse_metric_line('2020-04-22 07:47:12 | INFO | valid | {"epoch": 10, "valid_loss": '
                             '"1.481", "valid_num_updates": "520"}') is None


# A unit in parentheses after a key says what its value is (DGL's examples), and a multi-word
# key known whole reads its bare value (TF2 Object Detection API's "per-step time"): two real
# lines (or log shapes) of each family, with their sources
UNIT_KEY_LINES = [
    ("Epoch 00001 | Step 00020 | Loss 1.6148 | Train Acc 0.6040 | Speed (samples/sec) "
     "42982.0896 | GPU 401.5 MB",
     {"iteration": 20, "epoch": 1.0, "loss": 1.6148, "samples_per_s": 42982.0896},
     "SijingYu/GraphSAGE_MultiGPU loss.md (corpus throughput-graphsage-multigpu-loss)"),
    # the shape dmlc/dgl's examples/distributed/graphsage/node_classification.py prints
    # (f"Part {g.rank()} | Epoch {epoch:05d} | Step {step:05d} | Loss … | Speed (samples/sec)
    # {sample_speed:.4f} | GPU {gpu_mem_alloc:.1f} MB | Mean step time {mean_step_time:.3f} s")
    ("Part 0 | Epoch 00003 | Step 00019 | Loss 1.2310 | Train Acc 0.7120 | Speed (samples/sec) "
     "2483.1102 | GPU 812.4 MB | Mean step time 0.412 s",
     {"iteration": 19, "epoch": 3.0, "loss": 1.231, "samples_per_s": 2483.1102},
     "dmlc/dgl examples/distributed/graphsage/node_classification.py (its print format)"),
    ("I0912 11:40:27.956218 139735407601536 model_lib_v2.py:652] Step 100 per-step time "
     "0.813s loss=1.396", {"iteration": 100, "elapsed_s": 0.813, "loss": 1.396},
     "armaanpriyadarshan/Training-a-Custom-TensorFlow-2.X-Object-Detector#6"),
    # TF >= 2.4's model_lib_v2.py prints no loss on the line ('Step {} per-step time {:.3f}s',
    # the losses follow as a pprinted dict): the time alone makes it a step line
    ("INFO:tensorflow:Step 1000 per-step time 17.001s", {"iteration": 1000, "elapsed_s": 17.001},
     "tensorflow/models research/object_detection/model_lib_v2.py (its log format)"),
    # 3DETR's "Iter time" (read since keys known whole read their bare value)
    ("Epoch [0/1080]; Iter [10/713880]; Loss 39.25; LR 2.17e-06; Iter time 0.47; ETA 3 days, "
     "20:36:27; Mem 11358.37MB", {"iteration": 10, "elapsed_s": 0.47, "loss": 39.25},
     "facebookresearch/3detr#61 (corpus timeout-3detr-61)"),
]


@pytest.mark.parametrize("line, expected, source", UNIT_KEY_LINES,
                         ids=[r[2] for r in UNIT_KEY_LINES])
def test_units_in_parentheses_and_keys_known_whole(line: str, expected: dict,
                                                   source: str) -> None:
    row = parse_line(line)
    assert row is not None, source
    for k, v in expected.items():
        assert _same(row.get(k), v), (source, k, row)


def test_a_unit_in_parentheses_scales_a_time_and_names_no_other_column() -> None:
    assert parse_metric_line("step 5 | loss 2.3 | time (ms) 350.2")["elapsed_s"] == \
        pytest.approx(0.3502)
    row = parse_metric_line("step 5 | loss 2.3 | GPU (MB) 401.5")
    assert row is not None and "elapsed_s" not in row and "samples_per_s" not in row


@pytest.mark.parametrize("line", [
    # dmlc/gluon-cv#1663 (corpus gpu_crash-gluon-cv-1663): Horovod MNIST, MXNet's epoch summary
    "INFO:root:Epoch[0]\tSpeed=28557.88 samples/s\tTime cost=2.097635",
    # kubeflow/kubeflow#68 (corpus throughput-kubeflow-68): MXNet's fit() epoch line
    "INFO:root:Epoch[1] Time cost=24.828",
    # Foo1szz/verl train.out (corpus throughput-verl-train-out): a phase's duration
    "INFO:2026-04-03 07:02:25,774:update_weights done, time cost: 2.19s",
])
def test_a_time_cost_is_no_loss(line: str) -> None:
    """'cost' is a loss only as the whole key (Marian's 'Cost 1.42'); 'Time cost' is a duration."""
    row = parse_line(line)
    assert row is None or "loss" not in row
    marian = parse_metric_line("[2025-01-21 16:30:34] Ep. 1 : Up. 51000 : Sen. 77,303,338 : "
                               "Cost 1.41794586 : Time 370.55s : 97447.45 words/s : gNorm 0.5275")
    assert marian is not None and marian["loss"] == pytest.approx(1.41794586)


@pytest.mark.parametrize("lines, step", [
    # MIC-DKFZ/nnUNet#2140 (nnU-Net v2): "Epoch N" opens an epoch, its losses come at its end
    (["2024-04-26 09:41:39.505914: Epoch time: 148.59 s",
      "2024-04-26 09:41:40.302549:",
      "2024-04-26 09:41:40.307418: Epoch 1",
      "2024-04-26 09:41:40.311464: Current learning rate: 0.00999",
      "2024-04-26 09:43:54.932336: train_loss 0.4043",
      "2024-04-26 09:43:54.939337: val_loss 0.3847",
      "2024-04-26 09:43:55.816868: Epoch 2",
      "2024-04-26 09:43:55.821115: Current learning rate: 0.00998"], 2),
    # ivadomed/seg-sc-ms-lesion-multicontrast#53 (corpus timeout-seg-sc-ms-lesion-multicontrast-53)
    (["Epoch 453", "Current learning rate: 0.00581", "2025-04-12 03:48:04.017921:",
      "2025-04-12 03:48:04.077450: Epoch 453",
      "2025-04-12 03:48:04.078914: Current learning rate: 0.00581"], 453),
    # MIC-DKFZ/nnUNet#640 (nnU-Net v1): the header on its own line after the timestamp
    (["2021-05-14 07:32:44.592158: This epoch took 5396.598688 s", "",
      "2021-05-14 09:24:00.819000: ", "epoch:  37",
      "2021-05-14 10:53:27.993159: train loss : -0.7615"], 37),
])
def test_an_epoch_begun_is_the_runs_progress_where_nothing_counts_steps(
        tmp_path, lines: list[str], step: int) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    assert last_progress(load(str(log))).step == step


def test_an_epoch_header_beside_a_keras_bar_is_no_step(tmp_path) -> None:
    """Keras: "Epoch 2/10" opens the epoch, its bar counts the steps: the run stopped at the
    700th of epoch 2's 1490 (its bar starts again every epoch), no step 2."""
    log = tmp_path / "train.log"
    log.write_text("Epoch 1/10\n1490/1490 [==============================] - 25s 17ms/step - "
                   "loss: 0.3100\nEpoch 2/10\n 700/1490 [=============>................] - ETA: "
                   "12s - loss: 0.2900\n")
    assert last_progress(load(str(log))).step == 700


# an epoch's batch counter on a line whose only metric has no column (an accuracy): the run's
# progress. logging.info('[Epoch %d Batch %d] Training: %s=%f' % (epoch, nbatch, name, acc)) is
# in Horovod's and BytePS's MXNet MNIST examples and the gluon tutorials; dmlc/gluon-cv#1663
# (corpus gpu_crash-gluon-cv-1663) is a Horovod run of it behind mpirun's prefixes
@pytest.mark.parametrize("lines, step", [
    (["Mon May 24 07:12:52 2021[1,0]<stderr>:INFO:root:Epoch[0]\tSpeed=28557.88 samples/s\t"
      "Time cost=2.097635",
      "Mon May 24 07:12:53 2021[1,0]<stderr>:INFO:root:[Epoch 1 Batch 200] Training: "
      "accuracy=0.985078",
      "Mon May 24 07:12:53 2021[1,0]<stderr>:INFO:root:[Epoch 1 Batch 300] Training: "
      "accuracy=0.985000"], 300),
    (["[Epoch 0 Batch 50] Training: accuracy=0.721875", "[Epoch 0] Training: accuracy=0.80",
      "[Epoch 0] Validation: accuracy=0.91", "[Epoch 1 Batch 50] Training: accuracy=0.93125"], 50),
])
def test_an_epochs_batch_with_an_unknown_metric_is_progress(
        tmp_path, lines: list[str], step: int) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    inc = load(str(log))
    assert last_progress(inc).step == step
    it = inc.iterations
    assert set(it.loc[it["line"].str.contains(" Batch "), "event"]) == {STEP_EVENT}  # no series


# ColossalAI's examples report a step's memory between its phases (get_mem_info(prefix=f"[{n +
# 1}/{NUM_STEPS}] Forward ")): hpcaitech/ColossalAI#3172 (corpus gpu_crash-colossalai-3172), the
# rich logger's continuation lines as the issue pasted them
COLOSSAL_3172 = [
    "                    INFO     colossalai - colossalai - INFO: [3/1000] Forward GPU memory "
    "usage: 8367.72 MB, CPU memory usage: 44096.98 MB                ",
    "[03/17/23 20:03:12] INFO     colossalai - colossalai - INFO: /data/zjt/colossal/ColossalAI/"
    "examples/language/gpt/gemini/./train_gpt_demo.py:320 train_step          ",
    "                    INFO     colossalai - colossalai - INFO: [3/1000] Backward GPU memory "
    "usage: 1605.80 MB, CPU memory usage: 44097.03 MB               ",
]


def test_a_steps_memory_report_is_the_step_the_run_reached(tmp_path) -> None:
    assert parse_line(COLOSSAL_3172[0]) == {"iteration": 3, "total_iterations": 1000,
                                           "event": STEP_EVENT}
    # a memory report without the step's counter, or a build step, is none
    assert parse_line("INFO: After init model, GPU memory usage: 1.2 MB, CPU memory usage: "
                      "3.4 MB") is None
    assert parse_line("[1/3] c++ -MMD -MF foo.o.d -O3 -c foo.cpp") is None
    log = tmp_path / "job.log"
    log.write_text("\n".join(COLOSSAL_3172) + "\n")
    inc = load(str(log))
    assert (last_progress(inc).step, last_progress(inc).total) == (3, 1000)
    assert training_steps(inc).empty


# NVIDIA's GNMT (MLPerf rnn_translator, DeepLearningExamples GNMT/PyTorch trainer.py: "{phase}
# [{epoch}][{i}/{len(data_loader)}]", phase TRAIN or VALIDATION; translator.py: "TEST [..][..]"):
# the batch of the epoch; "Decoder iters" is a metric, not the step; VALIDATION and TEST are
# evaluations
GNMT_LINES = [
    ("0: TRAIN [3][1930/1938]\tTime 0.178 (0.158)\tData 1.58e-04 (2.97e-04)\tTok/s 95001 (90281)"
     "\tLoss/tok 3.0178 (3.1454)\tLR 5.000e-04",
     {"iteration": 1930, "total_iterations": 1938, "epoch": 3.0, "loss": 3.0178},
     "mlcommons/training_results_v0.6 NVIDIA dgx1_ngc19.05_pytorch gnmt result_0.txt (corpus)"),
    ("0: TEST [3][0/3]\tTime 0.676 (0.676)\tDecoder iters 110.0 (110.0)\tTok/s 24259 (24259)",
     None,
     "mlcommons/training_results_v0.6 NVIDIA dgx1_ngc19.05_pytorch gnmt result_0.txt (corpus)"),
    ("0: VALIDATION [0][0/3]\tTime 0.120 (0.120)\tData 1.2e-03 (1.2e-03)\tTok/s 52000 (52000)"
     "\tLoss/tok 4.3921 (4.3921)",
     {"iteration": 0, "event": "eval", "eval_loss": 4.3921, "epoch": 0.0},
     "NVIDIA/DeepLearningExamples GNMT/PyTorch seq2seq/train/trainer.py's VALIDATION format"),
]


@pytest.mark.parametrize("line, expected, source", GNMT_LINES, ids=[r[2][:40] + str(i) for i, r
                                                                     in enumerate(GNMT_LINES)])
def test_gnmt_phase_counter(line: str, expected: dict | None, source: str) -> None:
    row = parse_metric_line(line)
    if expected is None:
        assert row is None
    else:
        assert row is not None and {k: row.get(k) for k in expected} == expected


# a phase's word and the step of a total in one bracket (ML4HPC/JAX-CFD logs/train_log.txt, corpus
# throughput-jax-cfd-kolmogorov-train-healthy, after its absl header): the step; another phase
# is an evaluation
PHASE_BRACKET_LINES = [
    ("[Train 10/1882] {'grads_finite': 1.0, 'loss_scale': 1.0, 'train_loss': 0.0077463057823479176}",
     {"iteration": 10, "total_iterations": 1882, "loss": 0.0077463057823479176, "event": None}),
    ("train.py:577] [Train 1880/1882] {'grads_finite': 1.0, 'loss_scale': 1.0, 'train_loss': nan}",
     {"iteration": 1880, "event": None}),
    ("[Eval 3/287] {'eval_loss': 0.51}", {"iteration": 3, "event": "eval", "eval_loss": 0.51}),
]


@pytest.mark.parametrize("line, expected", PHASE_BRACKET_LINES)
def test_a_phase_and_its_step_in_one_bracket(line: str, expected: dict) -> None:
    row = parse_metric_line(line)
    assert row is not None and {k: row.get(k) for k in expected} == expected
    # a bracket that only names a phase and a count with no metric is no step line
    assert parse_metric_line("[Train 3/100] (winner: 'x') in 20 turns") is None


def test_paddlerecs_batch_id_after_its_epoch() -> None:
    # PaddleRec's tools/trainer.py ("epoch: {}, batch_id: {}, " + metrics + "avg_reader_cost: …,
    # ips: … ins/s"), BamLubi/Paddle-SIGN train.log (corpus loss_spike-paddle-sign-avazu-healthy):
    # the batch of the epoch, as every per-epoch counter
    row = parse_metric_line("epoch: 0, batch_id: 500, AUC:0.788134, ACC:0.688159, loss:0.18541333,"
                            " avg_reader_cost: 0.00012 sec, avg_batch_cost: 0.56199 sec, "
                            "avg_samples: 1024.00000, ips: 1822.08655 ins/s")
    assert row is not None and (row["iteration"], row["epoch"], row["loss"]) == (500, 0.0, 0.18541333)
    assert row["samples_per_s"] == 1822.08655 and row["elapsed_s"] == 0.56199
    # with no epoch before it, a batch id is no step ("batch_id" of a data sample, a request)
    assert parse_metric_line("batch_id: 500, loss: 0.3") is None


def test_an_mse_is_a_part_of_the_loss() -> None:
    # AdrianTuci1/thunder-1 training_prefixlm.log: a diffusion loop names its objective "MSE"
    row = parse_metric_line("Training:  33%|███▎      | 816/2500 [07:24<13:12,  2.12it/s, "
                            "MSE=0.6866, RND=N/A]")
    assert row is not None and (row["iteration"], row["loss"]) == (816, 0.6866)
    # a loss key of the line's own wins over it; a validation's MSE is the eval loss
    row = parse_metric_line("step 10 | loss 1.25 | mse 0.5")
    assert row is not None and row["loss"] == 1.25
    row = parse_metric_line("step 10 | val_mse 0.5 | lr 1e-4")
    assert row is not None and row.get("eval_loss") == 0.5 and row.get("loss") is None
    # a word that only contains the letters is none ("rmse" is not the MSE)
    from traindoc.parse.metric_lines import _loss_part
    assert _loss_part("rmsep") is None and _loss_part("train_mse") == "loss"


def test_a_step_key_that_calls_it_an_index() -> None:
    # WayenVan/sign_language_rgb train_ddp.log (corpus timeout-sign-language-rgb-train-ddp)
    row = parse_metric_line("[2024-03-30 06:11:04,008][main.Trainner][INFO] - iteration index: 200,"
                            " batch loss: 82.67688751220703")
    assert row is not None and (row["iteration"], row["loss"]) == (200, 82.67688751220703)
    # the same word joined to the key ("step_idx"), and a word that only starts so is none
    row = parse_metric_line("step_idx: 5, loss: 1.25")
    assert row is not None and (row["iteration"], row["loss"]) == (5, 1.25)
    assert parse_metric_line("step indexing: 5, loss: 1.25") is None


# a table of metrics under a header row: fastai v2's Learner in a terminal, cells apart by tabs
# (timeseriesAI/tsai#639: the losses NaN from the first epoch), and minai's pipe table whose
# "train" column marks the evaluation rows (AnswerDotAI/minai#3); fastai v1 pads with spaces
# (fastai/fastai#2512's header "epoch     train_loss  valid_loss  error_rate  time    ")
TSAI_639 = ("epoch\ttrain_loss\tvalid_loss\taccuracy\ttime\n0\tnan\tnan\t0.958595\t00:03\n"
            "1\tnan\tnan\t0.958595\t00:03\n2\tnan\tnan\t0.958595\t00:03\n")
MINAI_3 = ("accuracy | loss | epoch | train | time\n-- | -- | -- | -- | --\n"
           "0.817 | 0.722 | 0 | True | 00:21\n0.850 | 0.547 | 0 | False | 00:01\n"
           "0.894 | 0.392 | 1 | True | 00:21\n0.862 | 0.462 | 1 | False | 00:01\n")
FASTAI_V1 = ("epoch     train_loss  valid_loss  error_rate  time    \n"
             "0         1.155185    0.567519    0.176591    00:39     \n"
             "1         0.624531    0.367225    0.115021    01:12     \n"
             "Better model found at epoch 1 with valid_loss value: 0.367225.\n"
             "2         0.437893    0.301142    0.095399    00:37     \n")


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_a_table_under_a_header_row(tmp_path: Path, engine: str) -> None:
    from traindoc.diagnose.loss_spike import analyse

    (tmp_path / "a.log").write_text(TSAI_639)
    inc = load(tmp_path / "a.log", engine=engine)
    it = inc.iterations
    assert list(it["iteration"]) == [0, 1, 2] and list(it["event"]) == ["epoch"] * 3
    assert list(it["nan"]) == [1, 1, 1] and list(it["elapsed_s"]) == [3.0, 3.0, 3.0]
    assert analyse(inc).nan_iterations[:1] == [0]
    (tmp_path / "b.log").write_text(MINAI_3)
    it = load(tmp_path / "b.log", engine=engine).iterations
    train = it[it["event"] == "epoch"]
    assert list(train["loss"]) == [0.722, 0.392] and list(train["elapsed_s"]) == [21.0, 21.0]
    assert list(it[it["event"] == "eval"]["eval_loss"]) == [0.547, 0.462]
    (tmp_path / "c.log").write_text(FASTAI_V1)
    it = load(tmp_path / "c.log", engine=engine).iterations
    # a callback's line between two rows (read as a line of its own) does not end the table
    rows = it[it["loss"].notna()]
    assert list(rows["iteration"]) == [0, 1, 2]
    assert list(rows["loss"]) == [1.155185, 0.624531, 0.437893]
    assert list(rows["elapsed_s"]) == [39.0, 72.0, 37.0]
    assert list(rows["eval_loss"]) == [0.567519, 0.367225, 0.301142]


# StyleGAN2-ADA/StyleGAN3/EDM training loops (NVlabs' training_loop.py) print the tick as the
# run's progress, a clock in days/hours/minutes and the tick's seconds: the tick is the step, the
# clock no step time
TICK_LINES = [
    ("tick 1939  kimg 97043.1   time 6d 23h 59m   sec/tick 306.7   sec/kimg 6.13    iters/sec "
     "2.549556233961029 maintenance 0.0    cpumem 1.60   gpumem 11.94  reserved 12.21 ",
     {"iteration": 1939, "elapsed_s": 306.7},
     "Mattias421/tdmolflow slurm-3658512.out (corpus gpu_crash-tdmolflow-slurm-time-limit)"),
    ("tick 0     kimg 0.0      time 1m 19s       sec/tick 13.5    sec/kimg 3373.51 maintenance "
     "65.6   cpumem 4.84   gpumem 5.30   augment 0.000", {"iteration": 0, "elapsed_s": 13.5},
     "NVlabs/stylegan2-ada-pytorch training/training_loop.py (its print format)"),
]


@pytest.mark.parametrize("line, expected, source", TICK_LINES, ids=[r[2] for r in TICK_LINES])
def test_stylegan_ticks_are_steps(line: str, expected: dict, source: str) -> None:
    row = parse_line(line)
    assert row is not None, source
    for k, v in expected.items():
        assert _same(row.get(k), v), (source, k, row)


# --- OpenPCDet's nested bars: the inner one counts the steps, the outer one the epochs --------

# gc625/CenterPoint-KITTI tools/nohup.out (corpus gpu_crash-centerpoint-kitti-iassd-gan-killed)
PCDET_TRAIN_BAR = "train:  12%|█▏        | 211/1767 [02:40<14:42,  1.76it/s, total_it=14347]"
PCDET_EPOCHS_BAR = ("epochs:  20%|██        | 3/15 [1:27:15<5:56:40, 1783.41s/it, det_loss=2.59, "
                    "gan_loss=11.2, tatal_loss=3.71, loss=3.71, lr=0.01]")


@pytest.mark.parametrize("line, step", [
    (PCDET_TRAIN_BAR, 14347),
    # the same trainer's bar as open-mmlab/OpenPCDet's train_utils draws it
    # (pbar.set_postfix(dict(total_it=accumulated_iter))), at its first steps
    ("train:   5%|▌         | 10/186 [00:12<03:31,  1.20s/it, total_it=10]", 10),
])
def test_a_bar_naming_only_the_global_step_is_a_step_row(line: str, step: int) -> None:
    assert parse_metric_line(line) == {"iteration": step, "event": STEP_EVENT}


def test_a_bar_of_the_epochs_counts_epochs_not_steps() -> None:
    row = parse_metric_line(PCDET_EPOCHS_BAR)
    assert row is not None and row["event"] == "epoch" and row["epoch"] == 3.0
    assert row["loss"] == 3.71


def test_nested_bars_reach_the_inner_bars_step(tmp_path: Path) -> None:
    # the bars as tqdm wrote them: the inner one, then the cursor up (ESC [A) and the outer one
    log = tmp_path / "nohup.out"
    log.write_text(f"\r{PCDET_TRAIN_BAR}\n\x1b[A\r{PCDET_EPOCHS_BAR}\r{PCDET_EPOCHS_BAR}Killed\n")
    assert last_progress(load(str(log))).step == 14347


def test_an_evaluations_perplexity_after_its_banner_is_no_training_loss(tmp_path: Path) -> None:
    # DeepSpeedExamples' data-efficiency fine-tune evaluates every 10 steps under a banner
    # (corpus throughput-deepspeedexamples-check-base-training): its perplexity is no point of
    # the training loss; the random-LTD one prints its own "Step at N with Perplexity" with no
    # banner: that is its series. HF Trainer's banner, "Num examples" after it, joins nothing.
    log = tmp_path / "training.log"
    log.write_text("\n".join([
        "***** Evaluating perplexity, Epoch 1/2 *****",
        "'step':10, 'ppl': 61.772465037680455, 'seq_len': 264, 'consume layer-tokens': 110912",
        "***** Running Evaluation *****",
        "  Num examples = 500",
        "Step at 3 with Perplexity: 63.11044985222126",
    ]) + "\n")
    it = load(str(log)).iterations
    assert it.loc[it["loss"].notna(), "iteration"].tolist() == [3]
    assert parse_line("***** Evaluating perplexity, Epoch 1/2 ***** 'step':10, 'loss': 4.12, "
                      "'ppl': 61.77") == {"iteration": 10, "eval_loss": 4.12, "event": "eval"}
