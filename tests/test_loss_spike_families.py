"""Loss-spike families on real lines (diagnose/loss_spike): a step counter that restarts every
epoch counted on across epochs, and no spike on a healthy noisy run (a rise that is small
against the range the loss has covered)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import traindoc
from traindoc.diagnose import loss_spike as ls
from traindoc.diagnose.loss_spike.detect import LOSS, excursions, find_spikes
from traindoc.diagnose.loss_spike.series import SERIES_COLUMNS
from traindoc.parse.metric_lines import parse_metric_line

# AnshDhalla1/PyTorch_finetune_GPT2 train.log (corpus loss_spike-pytorch-finetune-gpt2-train)
GPT2 = ("INFO:__main__:Epoch {e} | Step {s:4d}/6501 | Loss: {loss:.4f} | PPL: 1.70 | LR: 1.52e-04 "
        "| Grad: 0.203 | Time: 0.138s")


def test_the_epoch_is_read_before_the_step() -> None:
    row = parse_metric_line(GPT2.format(e=1, s=0, loss=0.5187))
    assert row is not None
    assert (row["epoch"], row["iteration"], row["total_iterations"]) == (1.0, 0, 6501)
    # noahchalifour/rnnt-speech-recognition#26: an epoch beside a global step
    row = parse_metric_line("Epoch: 0, Batch: 7, Global Step: 7, Step Time: 1.6160, "
                            "Loss: 327.3580")
    assert row is not None
    assert (row["epoch"], row["iteration"], row["loss"]) == (0.0, 7, 327.358)


def test_a_step_counter_that_restarts_each_epoch_counts_on(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    lines = [GPT2.format(e=e, s=s, loss=0.5 + 0.02 * rng.standard_normal())
             for e in (0, 1) for s in range(0, 6501, 100)]
    lines.append(GPT2.format(e=1, s=6500, loss=0.49))
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    a = ls.analyse(traindoc.load(str(log)))
    assert a.series["iteration"].max() == 6501 + 6500
    assert len(a.series) == 2 * 66  # epoch 1 does not overwrite epoch 0


def test_a_blip_of_a_memorised_fine_tune_is_no_spike() -> None:
    """112292454/ChatGLM-Efficient-Tuning-main trainer_log.jsonl: 3.57 at step 10, ~0.003 at
    the end; one record at 0.0077 is 2.4x its neighbours but 0.1 % of the range covered."""
    rng = np.random.default_rng(1)
    fall = np.geomspace(3.5663, 0.0035, 200)
    tail = 0.0033 + 0.0005 * np.abs(rng.standard_normal(300))
    tail[150] = 0.0077
    y = np.concatenate([fall, tail])
    assert any(e.confirmed for e in excursions(y, LOSS))  # the rolling detector alone
    s = _frame(y)
    spikes, _ = find_spikes(s)
    assert spikes == []


def test_a_real_spike_is_still_one() -> None:
    """A bigscience-like spike (2.5 -> 4.1 after a fall from 11) stays a spike."""
    y = np.concatenate([np.geomspace(11.0, 2.5, 100), np.full(60, 2.5), [4.1, 3.4, 2.6],
                        np.full(20, 2.5)])
    y = y + 0.01 * np.sin(np.arange(len(y)))
    spikes, _ = find_spikes(_frame(y))
    assert len(spikes) == 1 and spikes[0]["peak_iteration"] == 160


def _frame(y: np.ndarray) -> pd.DataFrame:
    n = len(y)
    s = pd.DataFrame({c: np.full(n, np.nan) for c in SERIES_COLUMNS})
    return s.assign(iteration=np.arange(n), loss=y)


# DeepSpeed's unnumbered "OVERFLOW! … Skipping step" placed by the step lines around it
TR8B_104B = [  # bigscience tr8b-104b chronicle (corpus loss_spike-bigscience-tr8b-104b-optim-reset-b)
    " iteration    17061/  159576 | consumed samples:      8128736 | elapsed time per iteration "
    "(ms): 423042.3 | learning rate: 5.948E-05 | global batch size:  2048 | lm loss: "
    "2.667128E+00 | loss scale: 1048576.0 | grad norm: 1.004 | number of skipped iterations:   0 "
    "| number of nan iterations:   0 |",
    "[2022-01-19 13:16:17,683] [INFO] [stage_1_and_2.py:1644:step] [deepscale] OVERFLOW! Rank 0 "
    "Skipping step. Attempted loss scale: 1048576.0, reducing to 524288.0",
    " iteration    17062/  159576 | consumed samples:      8130784 | elapsed time per iteration "
    "(ms): 422832.0 | learning rate: 5.948E-05 | global batch size:  2048 | lm loss: "
    "4.374269E+00 | loss scale: 524288.0 | grad norm: 464441.887 | number of skipped iterations:"
    "   0 | number of nan iterations:   0 |",
]
CHINESE_LLAMA_ALPACA_534 = [  # ymcui/Chinese-LLaMA-Alpaca#534: tqdm bars and HF dicts
    " 14%|█▍        | 378/2724 [13:58:09<86:18:35, 132.44s/it][2023-06-07 22:16:00,018] [INFO] "
    "[loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted "
    "loss scale: 64, reducing to 32",
    " 14%|█▍        | 379/2724 [14:00:21<86:09:52, 132.28s/it][2023-06-07 22:18:11,762] [INFO] "
    "[loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted "
    "loss scale: 32, reducing to 16",
    " 14%|█▍        | 380/2724 [14:02:33<86:01:24, 132.12s/it]",
    "{'loss': 2.0491, 'learning_rate': 0.0001961913563176343, 'epoch': 0.28}",
]


def test_an_overflow_belongs_to_the_step_whose_line_follows(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("\n".join(TR8B_104B) + "\n")
    a = ls.analyse(traindoc.load(str(log)))
    # Megatron's own counter says 0 at 17062: DeepSpeed's skip is kept all the same
    assert a.skipped_iterations == [17062]


def test_an_overflow_after_a_bar_belongs_to_the_next_step(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("\n".join(CHINESE_LLAMA_ALPACA_534) + "\n")
    inc = traindoc.load(str(log))
    a = ls.analyse(inc)
    assert a.skipped_iterations == [379, 380]


# unnumbered overflow notes after the last training line: skipped steps, not logged iterations
FAIRSEQ_1895 = [  # facebookresearch/fairseq#1895
    "2020-03-23 11:39:44 | INFO | train_inner | epoch 003:      5 / 356 loss=9.44, nll_loss=8.44, "
    "ppl=347.28, wps=30690.8, ups=0.07, wpb=427295, bsz=14390.4, num_updates=700, lr=0.000175, "
    "gnorm=156.036, loss_scale=0, train_wall=1281, wall=9877",
    "2020-03-23 11:41:18 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale "
    "to: 0.00048828125",
    "2020-03-23 11:48:04 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale "
    "to: 0.000244140625",
]
FAIRSEQ_512 = [  # facebookresearch/fairseq#512
    "| epoch 027 | loss 6.343 | nll_loss 4.984 | ppl 31.65 | wps 164346 | ups 0.4 | wpb 364096 | "
    "bsz 11907 | num_updates 10198 | lr 0.000626286 | gnorm 0.390 | clip 0% | oom 0 | loss_scale "
    "0.500 | wall 23080 | train_wall 21383",
    "| WARNING: overflow detected, setting loss scale to: 0.25",
    "| WARNING: overflow detected, setting loss scale to: 0.125",
]


def test_the_last_iteration_is_the_last_logged_loss(tmp_path: Path) -> None:
    for lines, last in ((FAIRSEQ_1895, 700), (FAIRSEQ_512, 10198)):
        log = tmp_path / "train.log"
        log.write_text("\n".join(lines) + "\n")
        assert ls.analyse(traindoc.load(str(log))).last_iteration == last


# overflows logged before the file's first numbered step: one skipped step each, counted back
# from that step (common.place_unnumbered_skips); after a step: counted on from it
SEEKPOINT_BERT = [  # SeekPoint/DeepSpeedExamples yknote-training-train_bert_ds.py (corpus case)
    "[2023-07-24 13:21:33,168] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! "
    "Rank 0 Skipping step. Attempted loss scale: 16777216, reducing to 8388608",
    "[2023-07-24 13:21:33,259] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! "
    "Rank 0 Skipping step. Attempted loss scale: 8388608, reducing to 4194304",
    "[2023-07-24 13:21:33,260] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=10, "
    "lr=[0.0001], mom=[(0.9, 0.999)]",
    "[2023-07-24 13:21:33,260] [INFO] [timer.py:215:stop] epoch=0/micro_step=10/global_step=10, "
    "RunningAvgSamplesPerSec=199.08122946828823, CurrSamplesPerSec=216.75849639214218, "
    "MemAllocated=0.06GB, MaxMemAllocated=1.68GB",
    "[2023-07-24 13:21:33,539] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! "
    "Rank 0 Skipping step. Attempted loss scale: 4194304, reducing to 2097152",
    "[2023-07-24 13:21:34,636] [INFO] [timer.py:215:stop] epoch=0/micro_step=20/global_step=20, "
    "RunningAvgSamplesPerSec=175.20191347781497, CurrSamplesPerSec=119.40314143577992, "
    "MemAllocated=0.06GB, MaxMemAllocated=2.04GB",
]
LARGE_SCALE_LM_ZERO = [  # hwang2006/large-scale-lm-tutorials docs/07_zero_redundancy_optimization.md
    "[2024-09-15 00:13:28,261] [INFO] [loss_scaler.py:190:update_scale] [deepspeed] OVERFLOW! "
    "Rank 0 Skipping step. Attempted loss scale: 4294967296, but hysteresis is 2. Reducing "
    "hysteresis to 1",
    "step:0, loss:5.453125",
    "[2024-09-15 00:13:28,307] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! "
    "Rank 0 Skipping step. Attempted loss scale: 4294967296, reducing to 2147483648",
    "[2024-09-15 00:13:28,340] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! "
    "Rank 0 Skipping step. Attempted loss scale: 2147483648, reducing to 1073741824",
    "step:10, loss:3.650390625",
]


def test_overflows_before_the_first_step_count_back_from_it(tmp_path: Path) -> None:
    for lines, skipped in ((SEEKPOINT_BERT, [9, 10, 11]), (LARGE_SCALE_LM_ZERO, [0, 1, 2])):
        log = tmp_path / "train.log"
        log.write_text("\n".join(lines) + "\n")
        assert ls.analyse(traindoc.load(str(log))).skipped_iterations == skipped


# a writer that logs no line for a skipped step (NVIDIA/tacotron2 train.py prints "Train iter"
# only ``if not is_overflow``; NVIDIA/tacotron2#54, corpus loss_spike-tacotron2-54-fp16-overflow):
# the overflow between 16 and 18 fills the gap, so the first logged step, 16, comes after the
# seven overflows before it (9 … 15), not among them
TACOTRON2_OVERFLOW = "OVERFLOW! Skipping step. Attempted loss scale: {s}.0"
TACOTRON2_ITER = "Train iter       {n} loss {l} Grad Norm 10.800460 3.22s/it"


def test_overflows_of_a_writer_that_logs_no_skipped_step(tmp_path: Path) -> None:
    lines = [TACOTRON2_OVERFLOW.format(s=2 ** (23 - k)) for k in range(7)]
    lines += [TACOTRON2_ITER.format(n=16, l=49.316841), TACOTRON2_OVERFLOW.format(s=65536)]
    lines += [TACOTRON2_ITER.format(n=n, l=40.0 - n) for n in range(18, 25)]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    assert ls.analyse(traindoc.load(str(log))).skipped_iterations == [9, 10, 11, 12, 13, 14,
                                                                       15, 17]
    # a writer that logs the skipped step's own line (b = a + k) keeps the count back from it
    lines[8 + 1] = TACOTRON2_ITER.format(n=17, l=41.0)
    log.write_text("\n".join(lines) + "\n")
    assert ls.analyse(traindoc.load(str(log))).skipped_iterations == [10, 11, 12, 13, 14, 15,
                                                                       16, 17]


# A set-up bar counts no training step: transformers' "Loading checkpoint shards" bar (2/2) before
# the first overflow made that overflow step 3. The bar lines: linskybing/LLM zero_3.out and
# microsoft/DeepSpeedExamples' check-7b training.log (corpus cases); the steps: zero_3.out's.
SHARD_BARS = [
    "Loading checkpoint shards: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588"
    "\u2588| 2/2 [00:43<00:00, 19.88s/it]",
    "Loading checkpoint shards: 100%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588"
    "\u2588| 2/2 [00:04<00:00,  1.95s/it]",
]
LINSKYBING_ZERO3 = [
    "[2025-10-28 20:50:31,653] [INFO] [loss_scaler.py:191:update_scale] [deepspeed] OVERFLOW! Rank 0 "
    "Skipping step. Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1",
    "[2025-10-28 20:50:31,653] [INFO] [logging.py:107:log_dist] [Rank 0] step=1, skipped=1, "
    "lr=[1e-05], mom=[[0.8, 0.999]]",
    "[Step 1/100] Loss: 5.0507 | Global Tokens/s: 1376.92 | GPU Mem (GB): 6.49 | Peak Mem: 21.31",
    "[2025-10-28 20:50:33,186] [INFO] [loss_scaler.py:184:update_scale] [deepspeed] OVERFLOW! Rank 0 "
    "Skipping step. Attempted loss scale: 65536, reducing to 32768",
    "[2025-10-28 20:50:33,186] [INFO] [logging.py:107:log_dist] [Rank 0] step=2, skipped=2, "
    "lr=[1e-05], mom=[[0.8, 0.999]]",
    "[Step 2/100] Loss: 5.1898 | Global Tokens/s: 1829.88 | GPU Mem (GB): 6.49 | Peak Mem: 21.31",
    "[Step 3/100] Loss: 5.0037 | Global Tokens/s: 1831.02 | GPU Mem (GB): 6.49 | Peak Mem: 21.31",
]


def test_a_setup_bar_counts_no_step(tmp_path: Path) -> None:
    for bar in SHARD_BARS:
        log = tmp_path / "train.log"
        log.write_text("\n".join([bar, *LINSKYBING_ZERO3]) + "\n")
        assert ls.analyse(traindoc.load(str(log))).skipped_iterations == [1, 2], bar


# A training loop that says where its steps start, then overflows before any step line: the
# overflows are that step and the ones after it. DeepSpeed-Chat's epoch header and overflows from
# deepspeedai/DeepSpeed#931 (corpus loss_spike-deepspeed-931); torchtitan's start line as
# saforem2/mmm's README.md quotes its train.py.
START_LINES = [
    ("Beginning of Epoch 1/16, Total Micro Batches 1840", 1.0),
    ("[2025-02-03 09:19:51][I][mmm/train:300:__main__] Training starts at step 1, with local batch "
     "size 1, global batch size 8, sequence length 2048, total steps 1000 (warmup 200)", 1.0),
    # torchtitan's train.py, f"Training starts at step {self.step + 1}", on a resumed run
    ("Training starts at step 501", 501.0),
]
DS931_OVERFLOWS = [
    "[2023-04-28 06:51:29,903] [INFO] [loss_scaler.py:188:update_scale] [deepspeed] OVERFLOW! Rank 0 "
    "Skipping step. Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1",
    "[2023-04-28 06:51:30,648] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 "
    "Skipping step. Attempted loss scale: 65536, reducing to 32768",
    "[2023-04-28 06:51:31,392] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 "
    "Skipping step. Attempted loss scale: 32768, reducing to 16384",
]


def test_a_stated_start_step_is_read() -> None:
    from traindoc.parse.benchmarks import parse_start_step
    for line, value in START_LINES:
        assert parse_start_step(line) == {"metric": "plan:start_step", "value": value}, line
    # a later epoch's first step is not told by its header
    assert parse_start_step("Beginning of Epoch 2/16, Total Micro Batches 1840") is None


def test_overflows_after_a_stated_start_are_its_first_steps(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    for head, skipped in (("Beginning of Epoch 1/16, Total Micro Batches 1840", [1, 2, 3]),
                          ("Training starts at step 501", [501, 502, 503]),
                          # no start stated, no step line: the overflows' steps are unknown
                          ("Beginning of Epoch 2/16, Total Micro Batches 1840", [])):
        log.write_text("\n".join([head, *DS931_OVERFLOWS]) + "\n")
        assert ls.analyse(traindoc.load(str(log))).skipped_iterations == skipped, head


# NaN warnings that name no step: a NaN at the step after the last one logged before them
NAN_WARNINGS = [
    ("Loss is nan, stopping training", "Intellindust-AI-Lab/DEIM#96"),
    ("loss is nan, stopping training!", "LayneH/GreenMIM#6"),
    ("ERROR:tensorflow:Model diverged with loss = NaN.", "NVIDIA/DeepLearningExamples#529"),
    ("E0526 15:34:12.011717 140569525946176 basic_session_run_hooks.py:760] Model diverged with "
     "loss = NaN.", "NVIDIA/DeepLearningExamples#529"),
    # Megatron-Core's --check-for-nan-in-loss-and-grad (NVIDIA/Megatron-LM pretrain_gpt.py
    # loss_func: f'Rank {global_rank}: found NaN in local forward loss calculation. Device: {…},
    # node: {…}'; megatron/core/distributed/param_and_grad_buffer.py: 'found NaN in local grad
    # norm in backward pass before data-parallel communication collective')
    ("AssertionError: Rank 3: found NaN in local forward loss calculation. Device: 3, node: "
     "gpu-node-12", "NVIDIA/Megatron-LM pretrain_gpt.py"),
    ("[rank0]: AssertionError: Rank 0: found NaN in local grad norm in backward pass before "
     "data-parallel communication collective. Device: 0, node: node-0",
     "NVIDIA/Megatron-LM megatron/core/distributed/param_and_grad_buffer.py"),
    # Keras's TerminateOnNaN callback (keras-team/keras keras/src/callbacks/terminate_on_nan.py:
    # f"Batch {batch}: Invalid loss, terminating training"; Keras 2 the same with %d)
    ("Batch 5: Invalid loss, terminating training", "keras-team/keras TerminateOnNaN"),
]


def test_a_nan_warning_is_a_nan_row_without_a_step() -> None:
    from traindoc.parse.iterations import parse_nan_warning
    for line, source in NAN_WARNINGS:
        assert parse_nan_warning(line) == {"nan": 1}, source
    # a line that names its step is a step line, read by the step parsers
    assert parse_nan_warning("Epoch 3 step 100: loss is nan") is None


def test_a_nan_warning_belongs_to_the_step_after_the_last_logged(tmp_path: Path) -> None:
    # the step lines are LARGE_SCALE_LM_ZERO's; the warning is DEIM#96's (no public log has
    # both, so the sequence is put together here)
    log = tmp_path / "train.log"
    log.write_text("step:0, loss:5.453125\nstep:10, loss:3.650390625\n"
                   "Loss is nan, stopping training\n")
    a = ls.analyse(traindoc.load(str(log)))
    assert a.nan_iterations == [11]
    assert a.last_iteration == 10  # the NaN's step is inferred, not logged


def test_megatron_core_rerun_nan_names_its_iteration() -> None:
    from traindoc.parse.iterations import parse_nan_warning
    # NVIDIA/Megatron-LM megatron/core/rerun_state_machine.py validate_result: f"Rank {rank},
    # node {node}, device {device}, iteration {iteration}: Unexpected result {result}
    # (message='{message}')", the result a tensor
    assert parse_nan_warning(
        "RuntimeError: Rank 255, node gpu-17, device 7, iteration 2: Unexpected result "
        "tensor(nan, device='cuda:7') (message='found NaN in local forward loss calculation')"
    ) == {"iteration": 2, "nan": 1}
    # a spiky loss the same machine rejects is finite: no NaN
    assert parse_nan_warning("RuntimeError: Rank 3, node gpu-17, device 3, iteration 1500: "
                             "Unexpected result tensor(12.5, device='cuda:3') (message='Spiky "
                             "loss')") is None


def test_a_loops_nan_guard_names_its_step_and_its_skip() -> None:
    from traindoc.parse.iterations import parse_nan_warning
    # AdrianTuci1/thunder-1 training_prefixlm.log (a custom loop's own guard)
    assert parse_nan_warning("[WARNING] NaN loss detected at step 816! Skipping step.") == {
        "iteration": 816, "nan": 1, "skipped": 1}
    # intrinsicD/DeepLearning2 archive/NAN_LOSS_FIXED.md (a guard that stops the run)
    assert parse_nan_warning("❌ NaN/Inf detected in text_loss at step 42!") == {
        "iteration": 42, "nan": 1}
    # vikasjangidmk/Inventam-Task docs/diagnosis.md
    assert parse_nan_warning("- Loss became NaN at step 342, GPU utilization spiked.") == {
        "iteration": 342, "nan": 1}


def test_a_custom_loops_epoch_heading_leaves_its_bar_to_the_step_readers(tmp_path: Path) -> None:
    # AdrianTuci1/thunder-1 training_prefixlm.log: a custom loop prints "Epoch 1/3" (Keras's
    # heading) above its own tqdm bar, whose postfix names the loss as "MSE"; its guard names
    # the step it skipped
    log = tmp_path / "train.log"
    bar = "Training:  {p}%|▍         | {n}/2500 [00:53<28:19,  1.41it/s, MSE={v}, RND=N/A]"
    lines = ["Epoch 1/3", ""] + [bar.format(p=4, n=n, v=0.85 - n / 10000) for n in range(100, 130)]
    lines.insert(20, "[WARNING] NaN loss detected at step 118! Skipping step.")
    log.write_text("\n".join(lines) + "\n")
    a = ls.analyse(traindoc.load(str(log)))
    assert a.last_iteration == 129 and a.spikes == []
    assert a.nan_iterations == [118] and a.skipped_iterations == [118]


def test_a_fatal_nan_check_on_every_rank_is_one_step(tmp_path: Path) -> None:
    # the check stops the run: each rank's copy after the last step line is that one step (the
    # step line is Megatron's, the checks the wording of NVIDIA/Megatron-LM
    # param_and_grad_buffer.py; no public log has both, so the sequence is put together here)
    log = tmp_path / "train.log"
    log.write_text(
        " iteration      100/  500000 | consumed samples:        51200 | elapsed time per "
        "iteration (ms): 1234.5 | learning rate: 3.0E-04 | global batch size:   512 | lm loss: "
        "7.123E+00 | loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | "
        "number of nan iterations:   0 |\n"
        + "".join(f"[rank{r}]: AssertionError: Rank {r}: found NaN in local grad norm in backward "
                  f"pass before data-parallel communication collective. Device: {r}, node: n0\n"
                  for r in range(4)))
    a = ls.analyse(traindoc.load(str(log)))
    assert a.nan_iterations == [101]
    assert a.last_iteration == 100


# A divergence check that stops the run names no step: its NaN is placed at the next step, and
# the last logged iteration stays the last step line's (tensorflow/tensor2tensor#106, TF 1.2's
# NanTensorHook; OpenNMT/OpenNMT-tf#927, OpenNMT-tf 2's own check in training.py _steps).
DIVERGED = [
    (["INFO:tensorflow:loss = 1.63497, step = 97601 (181.782 sec)",
      "INFO:tensorflow:Saving checkpoints for 97607 into /home/minjoong/t2t_train/"
      "koen_tokens_32k/transformer-transformer_big/model.ckpt.",
      "ERROR:tensorflow:Model diverged with loss = NaN."], 97601),
    (["2022-03-02 22:26:59.033000: I runner.py:276] Step = 297500 ; steps/s = 4.57, source "
      "words/s = 16758, target words/s = 19073 ; Learning rate = 0.000187 ; Loss = 1.602740",
      "2022-03-02 22:27:20.229000: I runner.py:276] Step = 297600 ; steps/s = 4.72, source "
      "words/s = 17585, target words/s = 19955 ; Learning rate = 0.000187 ; Loss = 1.610771",
      "Traceback (most recent call last):",
      '  File "/home/jovyan/project/atc-tf/opennmt/training.py", line 269, in _steps    '
      'raise RuntimeError("Model diverged with loss = NaN.")RuntimeError: Model diverged '
      "with loss = NaN."], 297600),
]


def test_a_divergence_stop_is_no_logged_iteration(tmp_path: Path) -> None:
    for lines, last in DIVERGED:
        log = tmp_path / "train.log"
        log.write_text("\n".join(lines) + "\n")
        a = ls.analyse(traindoc.load(str(log)))
        assert a.last_iteration == last
        assert a.nan_iterations == [last + 1]


# deepspeech.pytorch's guard: the warning, then "Skipping grad update", then the step's own line
# (its loss printed as the guard's 0): a NaN and a skipped update on the step that follows
DEEPSPEECH_485 = [  # SeanNaren/deepspeech.pytorch#485 (corpus loss_spike-deepspeech-pytorch-485)
    "Epoch: [1][4691/6051]   Time 1.861 (1.857)      Data 0.005 (0.005)      Loss 40.6438 (73.3686)",
    "WARNING: received a nan loss, setting loss value to 0",
    "Skipping grad update",
    "Epoch: [1][4692/6051]   Time 0.546 (1.856)      Data 0.004 (0.005)      Loss 0.0000 (73.3530)",
]
DEEPSPEECH_485_LATER = [  # SeanNaren/deepspeech.pytorch#485, liudq521's comment: another run
    "Epoch: [25][25916/12068]\tTime 0.672 (0.812)\tData 0.014 (0.101)\tLoss 0.0000 (1.8408)\t",
    "WARNING: received a nan loss, setting loss value to 0",
    "Skipping grad update",
    "Epoch: [25][25917/12068]\tTime 0.596 (0.812)\tData 0.005 (0.101)\tLoss 0.0000 (1.8395)\t",
]


def test_a_received_nan_loss_and_a_skipped_update_are_the_next_step(tmp_path: Path) -> None:
    from traindoc.parse.iterations import parse_nan_warning, parse_overflow
    # the inf spelling of the same check_loss (deepspeech.pytorch train.py)
    assert parse_nan_warning("WARNING: received an inf loss") == {"nan": 1}
    assert parse_overflow("Skipping grad update") == {"skipped": 1}
    for lines, step in ((DEEPSPEECH_485, 4692), (DEEPSPEECH_485_LATER, 25917)):
        log = tmp_path / "train.log"
        log.write_text("\n".join(lines) + "\n")
        a = ls.analyse(traindoc.load(str(log)))
        assert a.nan_iterations == [step]
        assert a.skipped_iterations == [step]


# a NaN warning after a step line or bar that already shows that step's loss as NaN is that NaN
# told again (by several ranks, with no rank prefix), not one more step per copy
GPSDIFFUSION_18 = [  # bcmi/GPSDiffusion-Object-Shadow-Generation-SDXL#18 (six ranks, accelerate)
    "Warning: loss is NaN, skipping this step",
    "Steps:   2%|\u258f         | 1299/82400 [31:29<30:59:03,  1.38s/it, loss=nan, lr=1e-5]"
    "Warning: loss is NaN, skipping this step",
    *["Warning: loss is NaN, skipping this step"] * 5,
    "Steps:   2%|\u258f         | 1300/82400 [31:31<30:49:04,  1.37s/it, loss=nan, lr=1e-5]"
    "Warning: loss is NaN, skipping this step",
    *["Warning: loss is NaN, skipping this step"] * 3,
    "Steps:   2%|\u258f         | 1301/82400 [31:31<24:02:05,  1.07s/it, loss=nan, lr=1e-5]"
    "Warning: loss is NaN, skipping this step",
    *["Warning: loss is NaN, skipping this step"] * 2,
    "Steps:   2%|\u258f         | 1302/82400 [31:32<22:28:14,  1.00it/s, loss=nan, lr=1e-5]"
    "Warning: loss is NaN, skipping this step",
    *["Warning: loss is NaN, skipping this step"] * 4,
]


def test_nan_warnings_after_a_nan_step_are_that_step(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(GPSDIFFUSION_18) + "\n")
    a = ls.analyse(traindoc.load(str(log)))
    assert a.nan_iterations == [1299, 1300, 1301, 1302]
    assert a.last_iteration == 1302
    # after a step whose own line shows a finite loss the warning is still the next step's
    # (SeanNaren/deepspeech.pytorch#485: "Loss 40.6438" then "received a nan loss")
    log.write_text("\n".join(DEEPSPEECH_485[:2]) + "\n")
    assert ls.analyse(traindoc.load(str(log))).nan_iterations == [4692]


# a 1-based step counter that wraps at an epoch, in an excerpt that starts late in the run
SID_117 = ["333 154 Loss=nan Time=0.040", "333 155 Loss=nan Time=0.041",
           "333 161 Loss=nan Time=0.042", "334 1 Loss=nan Time=0.044",
           "334 3 Loss=nan Time=0.036"]  # cchen156/Learning-to-See-in-the-Dark#117


def test_a_wrapping_counter_counts_from_the_epoch_number(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(SID_117) + "\n")
    a = ls.analyse(traindoc.load(str(log)))
    # 161 steps per epoch (the wrap 161 -> 1); epoch 333 starts at (333 - 1) * 161
    assert a.nan_iterations == [53606, 53607, 53613, 53614, 53616]


# the last logged iteration is a step line even without a loss: Megatron prints no loss or grad
# norm on a skipped step, and a log whose step lines name no loss ends at its last step line,
# not at an overflow placed after it
MEGATRON_LLM_34 = [  # epfLLM/Megatron-LLM#34 (corpus loss_spike-megatron-llm-34)
    " iteration     3633/    8000 | consumed samples:       232512 | elapsed time per iteration "
    "(ms): 6956.6 | learning rate: 6.245E-06 | global batch size:    64 | loss scale: 1.0 | grad "
    "norm: 0.794 | number of skipped iterations:   0 | number of nan iterations:   0 |",
    " iteration     3634/    8000 | consumed samples:       232576 | elapsed time per iteration "
    "(ms): 8295.0 | learning rate: 6.245E-06 | global batch size:    64 | loss scale: 1.0 | "
    "number of skipped iterations:   1 |",
]
NCCL_743 = [  # NVIDIA/nccl#743: Megatron-LM's BERT example, ten skipped calibration steps
    " iteration       10/ 1000000 | consumed samples:           40 | elapsed time per iteration "
    "(ms): 356.2 | learning rate: 0.000E+00 | global batch size:     4 | loss scale: 8388608.0 | "
    "number of skipped iterations:  10 | number of nan iterations:   0 |",
]
YOLACT_359 = [  # dbolya/yolact#359 (corpus loss_spike-yolact-359), apex's overflow after 1530
    "[  1]    1520 || B: 5.535 | C: 3.031 | M: 8.000 | S: 1.054 | T: 17.619 || ETA: 196 days, "
    "23:30:26 || timer: 2.222",
    "[  1]    1530 || B: 5.557 | C: 2.994 | M: 8.920 | S: 0.971 | T: 18.442 || ETA: 196 days, "
    "14:56:04 || timer: 0.321",
    "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 7.62939453125e-06",
]


def test_the_last_iteration_is_the_last_step_line(tmp_path: Path) -> None:
    for lines, last in ((MEGATRON_LLM_34, 3634), (NCCL_743, 10), (YOLACT_359, 1530)):
        log = tmp_path / "train.log"
        log.write_text("\n".join(lines) + "\n")
        assert ls.analyse(traindoc.load(str(log))).last_iteration == last, lines[0]


# an overflow note right after a numbered overflow is that overflow (one skipped step, not two)
DSE_FP16 = [  # deepspeedai/DeepSpeedExamples data_efficiency train_with_kernel_fp16.log (corpus)
    "[2022-10-28 04:10:05,553] [INFO] [unfused_optimizer.py:300:_update_scale] Grad overflow on "
    "iteration: 0",
    "[2022-10-28 04:10:05,553] [INFO] [unfused_optimizer.py:301:_update_scale] Reducing dynamic "
    "loss scale from 65536.0 to 32768.0",
    "[2022-10-28 04:10:05,559] [INFO] [unfused_optimizer.py:221:step] [deepspeed] fp16 dynamic "
    "loss scale overflow! Skipping step. Attempted loss scale: 65536.0, reducing to 32768.0",
    "[2022-10-28 04:10:07,054] [INFO] [unfused_optimizer.py:300:_update_scale] Grad overflow on "
    "iteration: 1",
    "[2022-10-28 04:10:07,058] [INFO] [unfused_optimizer.py:221:step] [deepspeed] fp16 dynamic "
    "loss scale overflow! Skipping step. Attempted loss scale: 32768.0, reducing to 16384.0",
]
DS_697 = [  # deepspeedai/DeepSpeed#697: the fused optimizer, the number on the line after its
    # header, repeated by ranks, then one "Overflow detected. Skipping step"
    "[2021-01-26 22:05:35,108] [INFO] [fused_optimizer.py:314:_update_scale] ",
    "Grad overflow on iteration 8",
    "[2021-01-26 22:05:35,108] [INFO] [fused_optimizer.py:314:_update_scale] ",
    "Grad overflow on iteration 8",
    "[2021-01-26 22:05:35,108] [INFO] [fused_optimizer.py:316:_update_scale] Reducing dynamic "
    "loss scale from 1 to 1",
    "[2021-01-26 22:05:35,108] [INFO] [logging.py:60:log_dist] [Rank 0] Overflow detected. "
    "Skipping step. Attempted loss scale: 1, reducing to 1",
]


def test_an_overflow_note_after_a_numbered_overflow_is_the_same_step(tmp_path: Path) -> None:
    for lines, skipped in ((DSE_FP16, [0, 1]), (DS_697, [8])):
        log = tmp_path / "train.log"
        log.write_text("\n".join(lines) + "\n")
        a = ls.analyse(traindoc.load(str(log)))
        assert sorted(set(a.skipped_iterations)) == skipped, lines[0]


# HF Trainer dicts printed right after the bar's redraws carry no step: the bar's last count on
# the line is the step (HF logs after the bar's update; the checkpoint names agree)
H2OGPT_86 = [  # h2oai/h2ogpt#86 (corpus loss_spike-h2ogpt-86): carriage returns pasted as '^M'
    "^M  4%|▎         | 1317/36234 [11:37<5:10:26,  1.87it/s]^M  4%|▎         | 1318/36234 "
    "[11:37<5:12:34,  1.86it/s]^M                                                      ^M"
    "{'loss': 1.5545, 'learning_rate': 0.00028994575745834946, 'epoch': 0.22}",
    "^M  4%|▎         | 1318/36234 [11:37<5:12:34,  1.86it/s]^M  4%|▎         | 1319/36234 "
    "[11:38<5:06:46,  1.90it/s]^M                                                      ^M"
    "{'loss': 1.3465, 'learning_rate': 0.000289937455028505, 'epoch': 0.22}",
]
NLP_HOMEWORK = [  # hef1023/NLP-Course-Homework-2022 README.md (then "checkpoint-500", …)
    " 30%|██▉       | 500/1689 [01:30<03:29,  5.68it/s]{'loss': 1.6771, 'learning_rate': "
    "7.039668442865602e-06, 'epoch': 0.89}",
    "Saving model checkpoint to translations\\checkpoint-500",
    " 59%|█████▉    | 1000/1689 [03:00<01:57,  5.87it/s]{'loss': 1.5235, 'learning_rate': "
    "4.079336885731202e-06, 'epoch': 1.78}",
]


def test_a_dict_after_a_bar_is_logged_at_the_bar_count(tmp_path: Path) -> None:
    for lines, steps in ((H2OGPT_86, [1318, 1319]), (NLP_HOMEWORK, [500, 1000])):
        log = tmp_path / "train.log"
        log.write_text("\n".join(lines) + "\n")
        it = traindoc.load(str(log)).iterations
        assert it.loc[it["loss"].notna(), "iteration"].tolist() == steps, lines[0]


# Keras fit(): an "Epoch N/M" heading, then the epoch's closing line with its averaged loss
KERAS_RUNS = [
    (["Epoch 1/500",  # corpus loss_spike-twitter-language-models-about-ukraine-readme
      "7/7 - 1s - loss: 5.1131 - accuracy: 0.0000e+00 - 1s/epoch - 206ms/step",
      "Epoch 2/500",
      "7/7 - 0s - loss: 5.1108 - accuracy: 0.0251 - 27ms/epoch - 4ms/step"],
     [(1, 5.1131), (2, 5.1108)]),
    (["Epoch 12/200",  # sleap-ai/sleap#2230 (corpus throughput-sleap-2230)
      "1490/1490 - 105s - loss: 1.8771e-05 - val_loss: 1.9864e-05 - lr: 1.0000e-04 - 105s/epoch - "
      "71ms/step",
      "Epoch 13/200",
      "1490/1490 - 107s - loss: 1.7938e-05 - val_loss: 1.9430e-05 - lr: 1.0000e-04 - 107s/epoch - "
      "72ms/step"],
     [(12, 1.8771e-05), (13, 1.7938e-05)]),
    # Keras 3's bar, its loss after the metrics compiled first (keras-team/keras-io
    # examples/nlp/md/lstm_seq2seq.md)
    (["Epoch 1/100",
      " 125/125 ━━━━━━━━━━━━━━━━━━━━ 5s 21ms/step - accuracy: 0.7338 - loss: 1.5405 - "
      "val_accuracy: 0.7138 - val_loss: 1.0745",
      "Epoch 2/100",
      " 125/125 ━━━━━━━━━━━━━━━━━━━━ 2s 10ms/step - accuracy: 0.7470 - loss: 0.9546 - "
      "val_accuracy: 0.7188 - val_loss: 1.0219"],
     [(1, 1.5405), (2, 0.9546)]),
]


def test_a_keras_epoch_is_an_iteration_with_its_loss(tmp_path: Path) -> None:
    for lines, expected in KERAS_RUNS:
        log = tmp_path / "train.log"
        log.write_text("\n".join(lines) + "\n")
        it = traindoc.load(str(log)).iterations
        got = [(int(i), float(v)) for i, v in zip(it["iteration"], it["loss"], strict=True)]
        assert got == expected
        assert ls.analyse(traindoc.load(str(log))).last_iteration == expected[-1][0]


# an overflow note fused onto a progress bar's line: the note is placed after the bar's step,
# the bar's own words (its postfix loss) stay on the bar's step
COLOSSALAI_EXAMPLES_37 = [  # hpcaitech/ColossalAI-Examples#37 (corpus loss_spike-colossalai-examples-37)
    "[Epoch 0 / Train]:   0%|          | 1/8614 [00:00<1:03:35,  2.26it/s, loss=265.25, lr=2.5e-05, "
    "throughput=4.5244][deepscale] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: "
    "4294967296, reducing to 2147483648.0",
    "[Epoch 0 / Train]:   0%|          | 2/8614 [00:00<1:00:07,  2.39it/s, loss=nan, lr=2.5e-05, "
    "throughput=4.9813][deepscale] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: "
    "2147483648.0, reducing to 1073741824.0",
    "[Epoch 0 / Train]:   0%|          | 3/8614 [00:01<56:35,  2.54it/s, loss=nan, lr=2.5e-05, "
    "throughput=5.4833][deepscale] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: "
    "1073741824.0, reducing to 536870912.0",
]
TRLX_342 = [  # CarperAI/trlx#342: the bar's loss in its description, finite
    "[losses/total_loss: 1.34 | losses/policy_loss: -0.39 | losses/value_loss: 8.65]:  16%|███▎"
    "      | 1044/6400 [1:16:09<1:07:04,  1.33it/s][2023-02-28 20:08:24,113] [INFO] "
    "[stage_1_and_2.py:1769:step] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss "
    "scale: 128.0, reducing to 64.0",
    "[losses/total_loss: 4.35 | losses/policy_loss: -0.03 | losses/value_loss: 21.92]:  16%|███▍"
    "      | 1045/6400 [1:16:09<53:12,  1.68it/s][2023-02-28 20:08:24,338] [INFO] "
    "[stage_1_and_2.py:1769:step] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss "
    "scale: 64.0, reducing to 32.0",
]


def test_a_fused_bar_keeps_its_nan_on_its_own_step(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(COLOSSALAI_EXAMPLES_37) + "\n")
    a = ls.analyse(traindoc.load(str(log)))
    assert a.nan_iterations == [2, 3]
    assert a.skipped_iterations == [2, 3, 4]
    assert a.last_iteration == 3
    log.write_text("\n".join(TRLX_342) + "\n")
    a = ls.analyse(traindoc.load(str(log)))
    assert a.nan_iterations == []
    assert a.skipped_iterations == [1045, 1046]


# HF Trainer's stepless log dicts placed by their epoch (diagnose.common.place_by_epoch), on
# real logs of three writers: the run's length from the training bar's total or from the end
# summary (train_runtime x train_steps_per_second), the epochs from the summary or the bar
HF_EPOCH_CASES = [
    # Ishihara-Masabumi/Llama_SFT train_log.txt: bar 1580/1677, dicts buffered behind it,
    # 'epoch': '2.809' (4 digits), logging every 10 steps
    ("loss_spike-llama-sft-train-log", 1570),
    # Ariz-Mohammadi/finetuned-qwen3-medical-qlora training.log: bar 1755/1755, summary
    # epoch 3.0, last dict 'epoch': 2.99 (2 decimals)
    ("loss_spike-qwen3-medical-qlora-training", 1750),
    # CqGao112/CN-Mini-Phi3 ds_pretrain.log: no bar; summary 14003.78 s x 0.141 steps/s
    ("loss_spike-cn-mini-phi3-ds-pretrain", 1960),
]
CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus" / "loss_spike"


def _placed(case: str) -> pd.DataFrame:
    from traindoc.diagnose.common import place_by_epoch
    inc = traindoc.load([str(CORPUS / case / "logs")])
    it = place_by_epoch(inc.iterations, inc.progress)
    return it[it["event"].isna() & it["loss"].notna()]


def test_stepless_hf_dicts_are_placed_by_their_epoch() -> None:
    for case, last in HF_EPOCH_CASES:
        steps = _placed(case)["iteration"].astype(int).tolist()
        assert steps[-1] == last, case
        assert steps == sorted(set(steps)), case  # one step each, in order


def test_each_launch_in_one_file_is_placed_by_its_own_run() -> None:
    # Hoilap/O-LoRA logs_and_outputs_llama/order_1/logs/train_and_infer_改accumulation.log
    # (corpus timeout-o-lora-train-and-infer-accumulation): one task's training, bar 78/78,
    # "{'loss': 10.4435, 'learning_rate': 0.0001, 'epoch': 0.13}" … 'epoch': 0.9, a predict
    # bar 950/950, then the next task's, bar …/156, 'epoch': 0.06 … 0.26: dicts every 10 steps
    # of each, not one count run on across both
    from traindoc.diagnose.common import place_by_epoch
    path = CORPUS.parent / "timeout" / "timeout-o-lora-train-and-infer-accumulation" / "logs"
    inc = traindoc.load([str(path)])
    it = place_by_epoch(inc.iterations, inc.progress)
    it = it[it["event"].isna() & it["loss"].notna()]
    assert it["iteration"].astype(int).tolist() == [10, 20, 30, 40, 50, 60, 70, 10, 20, 30, 40]


def test_epochs_too_coarse_or_too_few_keep_the_count() -> None:
    # LaVi-Lab/VG-LLM#21: two dicts at 'epoch': 0.01, 0.02 of a 1233-step bar (steps 10 and
    # 20, or 12 and 24: the rounding cannot tell); h2oai/h2ogpt#86: five dicts all at
    # 'epoch': 0.22, each after the bar it was logged at (1318-1322)
    assert _placed("loss_spike-vg-llm-21")["iteration"].tolist() == [1, 2]
    assert _placed("loss_spike-h2ogpt-86")["iteration"].tolist() == [1318, 1319, 1320, 1321, 1322]


def test_a_log_whose_only_loss_is_the_validations(tmp_path: Path) -> None:
    """NVIDIA/apex#493 (Tacotron 2's train.py): one "Validation loss N: v" line per epoch and
    no training loss; the save line after it names its own iteration and is no continuation
    of the validation line (which ends in blanks)."""
    lines = []
    for it, v in ((6312, 0.149928), (6838, 0.147172), (7364, 0.148571), (7890, 0.148049),
                  (8416, 0.711720)):
        lines += [f"Validation loss {it}:  {v:.6f}  ",
                  f"Saving model and optimizer state at iteration {it} to ru_ann.pt"]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    inc = traindoc.load([str(log)])
    assert inc.checkpoints["iteration"].tolist() == [6312, 6838, 7364, 7890, 8416]
    a = ls.analyse(inc)
    assert a.last_iteration == 8416
    assert [s["peak_iteration"] for s in a.spikes] == [8416]


# ColossalAI's optimizers skip a step with a note that names none, through a rich console that
# wraps a long line at its width (the rest indented to the message column)
COLOSSALAI_1375 = [  # hpcaitech/ColossalAI#1375 (corpus loss_spike-colossalai-1375)
    "[Epoch 0 / Train]:   0% 420/788222 [28:47<810:51:33,  3.71s/it, loss=nan, lr=2.5e-5, "
    "throughput=0.29466 sample_per_sec, 2.4123 Tflops][09/30/22 02:45:43] WARNING  colossalai - "
    "ShardedOptimizerV2 - WARNING:         ",
    "                             /usr/local/lib/python3.7/dist-packages/colossalai/z",
    "                             ero/sharded_optim/sharded_optim_v2.py:197 step     ",
    "                    WARNING  colossalai - ShardedOptimizerV2 - WARNING: found   ",
    "                             inf during ShardedOptimV2 step                     ",
    "[Epoch 0 / Train]:   0% 421/788222 [28:51<811:51:23,  3.71s/it, loss=nan, lr=2.5e-5, "
    "throughput=0.26885 sample_per_sec, 2.2009 Tflops][09/30/22 02:45:46] WARNING  colossalai - "
    "ShardedOptimizerV2 - WARNING:         ",
    "                             /usr/local/lib/python3.7/dist-packages/colossalai/z",
    "                             ero/sharded_optim/sharded_optim_v2.py:197 step     ",
    "                    WARNING  colossalai - ShardedOptimizerV2 - WARNING: found   ",
    "                             inf during ShardedOptimV2 step                     ",
]
# hpcaitech/ColossalAI#3069: ZeroOptimizer's wording, unwrapped
COLOSSALAI_3069 = [
    "INFO     colossalai - colossalai - INFO: /home/guohe/.conda/envs/stable-v2/lib/python3.8/"
    "site-packages/colossalai/nn/optimizer/zero_optimizer.py:218 step",
    "INFO     colossalai - colossalai - INFO: Found overflow. Skip step",
]


def test_a_colossalai_skip_note_is_a_skipped_step_even_wrapped(tmp_path: Path) -> None:
    from traindoc.parse.iterations import parse_colossal_skip
    assert parse_colossal_skip(COLOSSALAI_3069[1]) == {"skipped": 1}
    assert parse_colossal_skip(COLOSSALAI_3069[0]) is None
    log = tmp_path / "train.log"
    for engine in ("fast", "plain"):
        log.write_text("\n".join(COLOSSALAI_1375) + "\n")
        a = ls.analyse(traindoc.load(str(log), engine=engine))
        # the note is written after the bar that counted its step: the step after it
        assert a.skipped_iterations == [421, 422], engine
        assert a.nan_iterations == [420, 421], engine
        # the same wrap with ZeroOptimizer's words
        lines = [ln.replace("ShardedOptimizerV2 - WARNING: found   ", "colossalai - INFO: Found")
                 .replace("inf during ShardedOptimV2 step", "overflow. Skip step")
                 for ln in COLOSSALAI_1375]
        log.write_text("\n".join(lines) + "\n")
        assert ls.analyse(traindoc.load(str(log), engine=engine)).skipped_iterations == [421, 422]


# a grad norm that overflowed to inf inside the spike is no peak, but the finite ones before it
# still tell whether the grad norm led
FAIRSEQ_41 = [  # facebookresearch/fairseq#41 (corpus loss_spike-fairseq-41)
    f"| epoch 001  {it:d} / 331737 loss={loss} (9.0), wps=18515, wpb=31259, bsz=861, lr=1.25, clip=100%, "
    f"gnorm={g}"
    for it, loss, g in ((1000, "9.57", "2.0540"), (2000, "8.61", "1.7149"), (3000, "7.50", "2.7501"),
                        (4000, "6.87", "100615.8788"), (5000, "10405.01", "1500459828271.3960"),
                        (6000, "4773454961.36", "37459419138681.4219"),
                        (7000, "7746569234820.15", "inf"))
]


def test_an_inf_grad_norm_in_the_spike_leaves_the_lead_known(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(FAIRSEQ_41) + "\n")
    sp = ls.analyse(traindoc.load(str(log))).spikes[0]
    assert sp["grad_norm_leads"] is True
    assert sp["peak_grad_norm"] == 37459419138681.4219  # the largest finite one


# A skip counter that counts since the start, on step lines of two writers: its growth from one
# line to the next is the steps skipped there. NVIDIA's BERT (mlcommons/training_results_v0.7
# NVIDIA/results/dgx2h_ngc20.06_pytorch/bert/result_0.txt, Python dicts behind an MPI rank
# prefix: steps 1-7 skipped while the loss scale settles, then step 207) and DeepSpeed's engine
# (the SeekPoint/DeepSpeedExamples BERT run above: step=10, skipped=10).
NVIDIA_BERT = [
    " 0: {'training_steps': 6, 'average_loss': 6.01953125, 'step_loss': 6.01953125, "
    "'learning_rate': 0.00039995063556707395, 'seq/s': 961.428208038382, 'global_steps': 0, "
    "'samples_trained': 0, 'skipped_steps': 6, 'timestamp': 1593127352.3762188}",
    " 0: {'training_steps': 7, 'average_loss': 5.27734375, 'step_loss': 5.27734375, "
    "'learning_rate': 0.00039995063556707395, 'seq/s': 629.6788592839561, 'global_steps': 0, "
    "'samples_trained': 0, 'skipped_steps': 7, 'timestamp': 1593127353.0622835}",
    " 0: {'training_steps': 8, 'average_loss': 6.2890625, 'step_loss': 6.2890625, "
    "'learning_rate': 0.00039995063556707395, 'seq/s': 803.0645686419377, 'global_steps': 1, "
    "'samples_trained': 432, 'skipped_steps': 7, 'timestamp': 1593127353.6002235}",
    " 0: {'training_steps': 206, 'average_loss': 4.3984375, 'step_loss': 4.3984375, "
    "'learning_rate': 0.0003901764778477107, 'seq/s': 1050.3935211969786, 'global_steps': 199, "
    "'samples_trained': 85968, 'skipped_steps': 7, 'timestamp': 1593127437.3464925}",
    " 0: {'training_steps': 207, 'average_loss': 3.81640625, 'step_loss': 3.81640625, "
    "'learning_rate': 0.00039012711341478466, 'seq/s': 979.6575452376884, 'global_steps': 199, "
    "'samples_trained': 85968, 'skipped_steps': 8, 'timestamp': 1593127437.787464}",
    " 0: {'training_steps': 208, 'average_loss': 3.54296875, 'step_loss': 3.54296875, "
    "'learning_rate': 0.00039012711341478466, 'seq/s': 1035.0703682905971, 'global_steps': 200, "
    "'samples_trained': 86400, 'skipped_steps': 8, 'timestamp': 1593127438.2048275}",
]


def test_a_cumulative_skip_counter_counts_its_growth(tmp_path: Path) -> None:
    log = tmp_path / "result_0.txt"
    # the excerpt starts at step 6 with 6 skipped: every step so far was one (steps 1-6)
    log.write_text("\n".join(NVIDIA_BERT) + "\n")
    a = ls.analyse(traindoc.load(str(log)))
    assert a.skipped_iterations == [1, 2, 3, 4, 5, 6, 7, 207]
    assert a.last_iteration == 208
    assert a.series["loss"].notna().all()  # the skipped steps' lines keep their loss
    # without the first two lines, the count of 7 holds skips of steps not shown
    log.write_text("\n".join(NVIDIA_BERT[2:]) + "\n")
    assert ls.analyse(traindoc.load(str(log))).skipped_iterations == [207]
    # DeepSpeed's own counter, the same rule
    log.write_text("\n".join(SEEKPOINT_BERT[2:3]) + "\n")
    assert ls.analyse(traindoc.load(str(log))).skipped_iterations == list(range(1, 11))


# Per-batch losses printed unsmoothed: a rise no higher than the series' own noise reached
# above its baseline just before it is that noise, not a spike (detect.noise_reach).
MONARCH_TIMM = (  # fabfish/Monarch-README utils/mlp.log (corpus loss_spike-monarch-readme-mlp):
    # timm 'Train: 35 [b/10009]  Loss:  3.894885 (3.7473) …', the first value one batch's
    3.737203, 3.894885, 4.264811, 4.392262, 2.652405, 2.681263, 2.837823, 4.393907, 3.747158,
    3.497943, 4.328968, 3.059047)
FINETUNE_LLM = (  # LzZzZx328/finetune_LLM running_log.txt (corpus
    # loss_spike-finetune-llm-running-log): LLaMA-Factory "{'loss': 2.8274, …}", a 20-45 % bump
    # at each epoch's short last batch
    2.2818, 2.2647, 2.3045, 2.8274, 2.3486, 2.2083, 2.8014, 2.1802, 2.2209, 2.0920, 2.6093,
    2.1144, 2.1031, 2.5317, 2.0181, 2.0393, 2.0459, 2.4003, 1.9986, 1.9937, 2.6840, 1.9705,
    1.9779, 2.2567)
BERT_RRC = (  # howardhsu/BERT-for-RRC-ABSA#2 'step 23250 batch_loss 1.060201', every 50 steps
    1.060201, 1.449273, 0.857883, 1.117658, 1.289947, 1.296999, 1.051140, 1.439625, 0.884657,
    1.163339, 1.378097, 1.190969, 1.233999, 1.124069, 1.473860, 1.483228, 2.123017, 1.340707)


def test_a_rise_within_the_noise_of_per_batch_losses_is_no_spike() -> None:
    m = np.array(MONARCH_TIMM)
    assert any(e.confirmed for e in excursions(m, LOSS))  # the rolling detector alone
    assert find_spikes(_frame(m))[0] == []
    assert find_spikes(_frame(np.array(BERT_RRC)))[0] == []
    # the bump at point 20 rises no higher than the ones at 3, 6, 10 and 13 before it; the one
    # at point 3, with three points of history, rises no higher than those after it
    # (detect.reach_after)
    assert find_spikes(_frame(np.array(FINETUNE_LLM)))[0] == []
    assert find_spikes(_frame(np.array(OSCAR_PADDLE)))[0] == []


# A spike too early for the noise before it to be known is measured against the noise after it
# came back (detect.reach_after): the first bump of a series whose every epoch bumps as high
# (FINETUNE_LLM), a per-batch loss of 1e-4 whose batches jump to 1e-2 all along (OSCAR_PADDLE)
# are noise; a loss that doubles once at the start and then falls smoothly is still a spike.
OSCAR_PADDLE = (  # cattidea/Oscar-Paddle log/workerlog.0 (corpus loss_spike-oscar-paddle-workerlog):
    # PaddlePaddle 'Epoch: [18], step: [100], lr: 0.000004, batch_loss: 0.0002, avg_loss: 0.0044'
    0.0002, 0.0342, 0.0003, 0.0001, 0.0006, 0.0066, 0.0008, 0.0003, 0.0001, 0.0006, 0.0005,
    0.0002, 0.0005, 0.0004, 0.0002, 0.0002, 0.0002, 0.0005, 0.0004, 0.0020, 0.0004, 0.0006,
    0.0008, 0.0006, 0.0230, 0.0002, 0.0005, 0.0003, 0.0002, 0.0002, 0.0003, 0.0010, 0.0003,
    0.0004, 0.0013, 0.0003, 0.0002, 0.0004, 0.0002, 0.0037, 0.0121, 0.0004, 0.0009, 0.0006,
    0.0004, 0.0004, 0.0013, 0.0001, 0.0002, 0.0003, 0.0005, 0.0013, 0.0518, 0.0003, 0.0001,
    0.0001, 0.0004, 0.0003, 0.0007, 0.0009, 0.0002, 0.0005, 0.0020, 0.0002, 0.0004, 0.0003,
    0.0002, 0.0004, 0.0003, 0.0005, 0.0051, 0.0022, 0.0002, 0.0003, 0.0002, 0.0004, 0.0214,
    0.0005, 0.0000, 0.0004)
BIGSCIENCE_N8 = (  # bigscience-workshop/bigscience experiments/gpt2-meg/meg_gpt2_base_n8_dp1_tp4_pp8
    # -1809562.out (corpus loss_spike-bigscience-meg-gpt2-base-n8): Megatron 'lm loss' every 10
    # iterations from 20, 12.1 -> 26.5 at 30 while the fp16 loss scale came down
    12.10588, 26.48119, 13.77455, 10.16227, 8.564624, 8.262128, 8.284489, 8.143266, 8.085403,
    8.005534, 7.910791, 7.893549, 8.058861, 7.811383, 7.687405, 7.660599, 7.811917, 7.574084)


def test_an_early_spike_above_the_noise_after_it_stays() -> None:
    spikes, _ = find_spikes(_frame(np.array(BIGSCIENCE_N8)))
    assert [s["peak_iteration"] for s in spikes] == [1]
    # one batch ten times as high as the highest of the blips: a spike of that series
    spikes, _ = find_spikes(_frame(np.array(OSCAR_PADDLE + (0.5,) + OSCAR_PADDLE[:20])))
    assert [s["peak_iteration"] for s in spikes] == [len(OSCAR_PADDLE)]


def test_a_spike_above_the_noise_of_per_batch_losses_stays() -> None:
    """The same noisy batches with one batch at twice the loss: still a spike."""
    y = np.array(MONARCH_TIMM * 5 + (8.1,) + MONARCH_TIMM)
    spikes, _ = find_spikes(_frame(y))
    assert [s["peak_iteration"] for s in spikes] == [60]


# HF Trainer's start-up header (transformers trainer.py "***** Running training *****"), the
# run's length where no bar or end summary gives it
HF_HEADERS = [
    # LzZzZx328/finetune_LLM running_log.txt (LLaMA-Factory; corpus
    # loss_spike-finetune-llm-running-log): set by epochs, 17 steps each
    ("[INFO|2024-11-26 22:07:15] trainer.py:2315 >>   Num Epochs = 1,000", "plan:epochs", 1000.0),
    ("[INFO|2024-11-26 22:07:15] trainer.py:2321 >>   Total optimization steps = 17,000",
     "plan:total_steps", 17000.0),
    # mesolitica/malaya session/trainium-chip/README.md (corpus
    # loss_spike-malaya-trainium-chip-readme): --max_steps 10
    ("  Num Epochs = 1", "plan:epochs", 1.0),
    ("  Total optimization steps = 10", "plan:total_steps", 10.0),
    # saforem2/ezpz docs/examples/hf-trainer (corpus throughput-ezpz-hf-trainer): max_steps on a
    # streamed dataset, the epochs sys.maxsize
    ("[INFO|trainer.py:2521] 2025-12-31 13:12:20,429 >>   Num Epochs = 9,223,372,036,854,775,807",
     "plan:epochs", 9223372036854775807.0),
]


def test_the_trainer_header_states_the_run_length() -> None:
    from traindoc.parse.benchmarks import parse_run_plan
    for line, metric, value in HF_HEADERS:
        assert parse_run_plan(line) == {"metric": metric, "value": value}, line
    assert parse_run_plan("  Num examples = 2,182") is None


def test_the_header_places_stepless_dicts_where_nothing_else_does() -> None:
    from traindoc.diagnose.common import _planned, place_by_epoch
    inc = traindoc.load([str(CORPUS / "loss_spike-finetune-llm-running-log" / "logs")])
    it = place_by_epoch(inc.iterations, inc.progress, inc.tables["host_timings"])
    steps = it.loc[it["event"].isna() & it["loss"].notna(), "iteration"].astype(int).tolist()
    # a dict every 5 steps of 17 per epoch (epochs printed to 2 decimals); the log stops
    # after checkpoint-2100 with one more dict
    assert steps[:4] == [5, 10, 15, 20] and steps[-1] in range(2100, 2106)
    assert steps == sorted(set(steps))
    assert ls.analyse(inc).last_iteration in range(2100, 2106)

    def plan(epochs: float, steps: float) -> pd.DataFrame:
        return pd.DataFrame({"metric": ["plan:epochs", "plan:total_steps"],
                             "value": [epochs, steps]})
    assert _planned(plan(1000, 17000)) == (17000, 1000)
    # max_steps: the epochs are rounded up (or sys.maxsize), the quotient is no epoch's length
    assert _planned(plan(9223372036854775807, 100)) is None
    assert _planned(plan(4, 1000 + 2)) is None


def test_a_round_logging_interval_places_few_coarse_dicts(tmp_path: Path) -> None:
    from traindoc.diagnose.common import _interval
    # corpus loss_spike-simple-trl-training-train-log: 3 dicts at 'epoch': 0.28, 0.57, 0.85 of
    # a 175-step bar allow an interval of 49 to 50.75 steps: 50
    assert _placed("loss_spike-simple-trl-training-train-log")["iteration"].tolist() == [
        50, 100, 150]
    # an HF fine-tune tutorial (.rst, found by find_string: id 21162120454): HF's header, three
    # dicts and the bar of 3502 steps; logging_steps 1000
    lines = ["***** Running training *****", "  Num examples = 7004", "  Num Epochs = 1",
             "  Total optimization steps = 3502",
             "{'loss': 0.4458, 'learning_rate': 3.677248677248677e-05, 'epoch': 0.29}",
             "{'loss': 0.3704, 'learning_rate': 2.2075249853027632e-05, 'epoch': 0.57}",
             "{'loss': 0.3546, 'learning_rate': 7.37801293356849e-06, 'epoch': 0.86}",
             "100%|█████████████████████████| 3502/3502 [4:53:35<00:00,  4.90s/it]",
             "{'train_runtime': 17615.3528, 'train_samples_per_second': 0.398, "
             "'train_steps_per_second': 0.199, 'train_loss': 0.38377865323470295, 'epoch': 1.0}"]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    a = ls.analyse(traindoc.load(str(log)))
    assert a.series["iteration"].tolist() == [1000, 2000, 3000]
    # corpus gpu_crash-o-lora-train-and-infer-oom: a first dict off the others' grid (0.05, then
    # every 0.16 of 1919 steps): no interval fits every dict, the count stays
    assert _interval(np.array([0.05, 0.16, 0.32, 0.48, 0.64, 0.8, 0.96]), 1919.19) is None
    # corpus throughput-lmsys-train: 20 dicts over 0.0-0.05 of a 71514-step bar leave the
    # interval anywhere in 151-225 steps: too wide to pick one
    assert _interval(np.array([0.0] + [0.01] * 4 + [0.02] * 4 + [0.03] * 4 + [0.04] * 4
                              + [0.05] * 3), 71514.0) is None


# What the first noise pass finds to be noise stops hiding the noise after it (detect's
# _above_noise): mmaction2's per-batch loss opens a slow hump at its second point that the
# first pass drops, and the later one-point rises of 0.13 over 0.04 are then that series' own;
# parameter-golf's single-step train_loss rises by 15 % every few hundred steps all run long.
NOISE_RUNS = [
    # corpus throughput-mmaction2-train-log-20241010-170931 (mmaction2 'Epoch(train) [1][N/M]
    # … loss: 0.0341' every 20 iterations)
    ("throughput/throughput-mmaction2-train-log-20241010-170931", []),
    # corpus loss_spike-parameter-golf-naivebaseline-train ('step:2/20000 train_loss:16.8763 …'):
    # the step-2 spike of the untrained model stays, the later 15 % rises go
    ("loss_spike/loss_spike-parameter-golf-naivebaseline-train", [2]),
]


@pytest.mark.parametrize(("case", "peaks"), NOISE_RUNS)
def test_what_was_noise_no_longer_hides_the_noise(case: str, peaks: list[int]) -> None:
    from conftest import ROOT
    from traindoc.diagnose.loss_spike.series import series

    s = series(traindoc.load(ROOT / "data" / "corpus" / case / "logs", progress=False))
    assert [x["peak_iteration"] for x in find_spikes(s)[0]] == peaks


def test_every_nan_step_is_listed_however_many(tmp_path: Path) -> None:
    # llm.c's step line as an llm.c fork's gpt2_train.11672255.log prints it (corpus
    # loss_spike-llmc-fork-gpt2-train-11672255: NaN from step 1 to its last, 902); the facts
    # listed the first 500, which read as a run that stopped being NaN at 500
    log = tmp_path / "train.log"
    log.write_text("".join(
        f"step {i:4d}/19560 | loss     nan (+nanz)| norm    nan (+nanz)| lr 8.57e-07 | "
        "3788.44 ms | 35.6% bf16 MFU | 138391 tok/s\n" for i in range(1, 903)))
    facts = ls.diagnose(traindoc.load(str(log))).facts
    assert facts["nan_iterations"] == list(range(1, 903))
    assert facts["last_iteration"] == 902


def test_a_taller_spike_on_the_level_an_unrecovered_swell_settled_at_is_its_own() -> None:
    # corpus loss_spike-dp-train-doc-new-cosmas-nofreeze (a Marian-style cost every 500
    # updates): the cost swells from ~78 to 158.6 at Up. 27500 and settles at 105-121, never back
    # at 78; then 260 at Up. 39000 and 882 at 39500. The swell's excursion ran to the end of
    # the log and took the spike as its peak, 16,500 updates before the spike began.
    a = ls.analyse(traindoc.load(str(CORPUS / "loss_spike-dp-train-doc-new-cosmas-nofreeze"
                                     / "logs")))
    got = [(sp["start_iteration"], sp["peak_iteration"]) for sp in a.spikes]
    assert got[-2:] == [(22500, 27500), (39000, 39500)]
    assert a.spikes[-2]["recovered_iteration"] is None
    assert 49500 <= a.spikes[-1]["recovered_iteration"] <= 53000
    # a second hump that rises before the first one settled is the same excursion, and a
    # taller one after a settled swell is not split off unless it is TALLER times the swell
    base = [1.0, 1.02, 0.98, 1.01, 0.99] * 6
    for tail, starts in (([3.0, 2.0, 4.0, 1.0, 1.0, 1.0, 1.0], [30]),
                         ([2.0, 1.4, 1.4, 1.4, 1.4, 1.45, 1.4, 5.0, 1.4, 1.4], [30, 37]),
                         ([2.0, 1.4, 1.4, 1.4, 1.4, 1.45, 1.4, 2.5, 1.4, 1.4], [30])):
        found = [e.start for e in excursions(np.array(base + tail)) if e.confirmed]
        assert found == starts, tail


def test_dicts_every_step_with_a_two_decimal_epoch_are_counted_on() -> None:
    # Jingchensun/MobileVLM mobivlm.out (corpus loss_spike-mobilevlm-fork-mobivlm-out): a dict
    # after every step of a 4361-step bar, "{'loss': 0.5723, 'learning_rate': 1.757…e-05,
    # 'epoch': 0.25}": 0.01 epoch is 43.6 steps, so each dict's own epoch places it up to 22
    # steps off; counted on from the start the epochs' transitions pin, the last is step 1089
    steps = _placed("loss_spike-mobilevlm-fork-mobivlm-out")["iteration"].astype(int).tolist()
    assert steps == list(range(1, 1090))


def test_a_count_the_epochs_do_not_fit_is_not_counted_on() -> None:
    from traindoc.diagnose.common import _counted_start
    # dicts every step, 'epoch' to two decimals of a 1000-step epoch: steps 1-30 fit from 1
    ep = np.round(np.arange(1, 31) / 1000, 2)
    assert _counted_start(ep, 1000.0, 1) == 1
    # a dict missing in between (the epochs jump 0.05 over two dicts): no count fits them all
    ep = np.array([0.0, 0.0, 0.01, 0.06, 0.06])
    assert _counted_start(ep, 1000.0, 1) is None
    # an epoch fine enough to place each dict: not this rule's
    assert _counted_start(np.array([0.001, 0.002, 0.003]), 1000.0, 1) is None


# an epoch's header, then its loss alone on the next line (apoorvnandan/speech-recognition-primer#2,
# corpus loss_spike-speech-recognition-primer-2: a tf.keras loop's "Epoch    :  8" then
# "LOSS     :  nan"): one record, numbered by the epoch; a header followed by a line with more
# than the loss (a validation line, a bar) is not joined to it
PRIMER_EPOCHS = ["called epoch end, epoch num:  5", "Epoch    :  6", "LOSS     :  20.572273", "",
                 "called epoch end, epoch num:  6", "Epoch    :  7", "LOSS     :  29.43734", "",
                 "called epoch end, epoch num:  7", "Epoch    :  8", "LOSS     :  nan"]


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_an_epoch_header_numbers_the_loss_line_after_it(tmp_path: Path, engine: str) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(PRIMER_EPOCHS) + "\n")
    inc = traindoc.load(str(log), engine=engine)
    assert list(inc.iterations["iteration"]) == [6, 7, 8]
    a = ls.analyse(inc)
    assert a.nan_iterations == [8] and a.last_iteration == 8
    log.write_text("Epoch: 11\nValidation loss 6312:  0.149928\n")
    assert list(traindoc.load(str(log), engine=engine).iterations["iteration"]) != [11]


# a loss scaler's own note that it halved its scale after an overflow, no step named: the step
# whose line follows (PaddlePaddle/PaddleNLP#7537, corpus loss_spike-paddlenlp-7537-optimizer-not-run)
PADDLENLP_7537 = [
    "[2023-11-28 14:31:29,583] [ WARNING] - optimizer not run, scale_before: 0.25, scale_after: 0.125",
    "[2023-11-28 14:31:29,586] [    INFO] - loss: 2.09252715, learning_rate: 0.0, global_step: 18, "
    "interval_runtime: 4.3468, interval_samples_per_second: 3.680853064067234, "
    "interval_steps_per_second: 0.23005331650420213, ppl: 8.10537279652747, epoch: 0.0025",
    "[2023-11-28 14:31:34,041] [ WARNING] - optimizer not run, scale_before: 0.125, scale_after: 0.0625",
    "[2023-11-28 14:31:34,045] [    INFO] - loss: 2.04623556, learning_rate: 0.0, global_step: 19, "
    "interval_runtime: 4.4585, interval_samples_per_second: 3.588644056739075, "
    "interval_steps_per_second: 0.2242902535461922, ppl: 7.738714279163156, epoch: 0.0027",
]


@pytest.mark.parametrize(("line", "scale"), [
    (PADDLENLP_7537[0], 0.125),
    # Paddle's static-graph AMP decorator, its print() (python/paddle/fluid/contrib/
    # mixed_precision/decorator.py, update_loss_scaling's Python twin): scale times its ratio
    ("Found inf or nan, current scale is: 32768.0, decrease to: 32768.0*0.5", 16384.0),
    # mmcv's Fp16OptimizerHook with a dynamic loss scale (mmcv/runner/hooks/optimizer.py), through
    # the runner's logger
    ("2021-05-01 10:00:00,000 - mmdet - WARNING - Check overflow, downscale loss scale to 256.0",
     256.0),
    # DeepSpeed's FP16_Optimizer (deepspeedai/DeepSpeed#697)
    ("[2021-01-26 22:04:09,191] [INFO] [logging.py:60:log_dist] [Rank 0] Overflow detected. "
     "Skipping step. Attempted loss scale: 8.0, reducing to 4.0", 4.0),
])
def test_a_loss_scalers_halving_note_is_a_skipped_step(line: str, scale: float) -> None:
    from traindoc.parse.iterations import parse_overflow
    assert parse_overflow(line) == {"skipped": 1, "loss_scale": scale}


def test_paddlenlps_skipped_optimizer_steps_are_the_steps_that_follow(tmp_path: Path) -> None:
    log = tmp_path / "paddle.log"
    log.write_text("\n".join(PADDLENLP_7537) + "\n")
    a = ls.analyse(traindoc.load(str(log)))
    assert a.skipped_iterations == [18, 19]
    assert a.last_iteration == 19


# Keras's heading and the epoch's closing line in the versions before tf.keras's: Keras 0.x
# numbered epochs from 0 and printed no total (keras-team/keras#21, corpus
# loss_spike-keras-21-diverges-epoch10); verbose 2 before Keras 2.3 printed the epoch's seconds
# and no batch count (Keras 2.0-2.2: " - 122s - loss: …", keras/utils/generic_utils.py Progbar
# verbose 2, as in a fit's output pasted in a blog's notebook; Keras 1.x without the dash)
KERAS_0X = ["Epoch 0", "61878/61878 [==============================] - 5s - loss: 1.1788     ",
            "Epoch 1", "61878/61878 [==============================] - 5s - loss: 1.0403     "]
KERAS_2_VERBOSE_2 = [
    "Train on 37500 samples, validate on 12500 samples", "Epoch 1/20",
    " - 122s - loss: 1.5673 - acc: 0.4115 - val_loss: 1.2524 - val_acc: 0.5470", "",
    "Epoch 00001: val_loss improved from inf to 1.25245, saving model to ./weights.hdf5",
    "Epoch 2/20", " - 116s - loss: 1.1259 - acc: 0.5957 - val_loss: 1.0814 - val_acc: 0.6135"]
KERAS_1_VERBOSE_2 = ["Epoch 1/20", "5s - loss: 0.4955 - acc: 0.8078", "Epoch 2/20",
                     "4s - loss: 0.3955 - acc: 0.8178"]


@pytest.mark.parametrize(("lines", "steps", "losses"), [
    (KERAS_0X, [0, 1], [1.1788, 1.0403]),
    (KERAS_2_VERBOSE_2, [1, 2], [1.5673, 1.1259]),
    (KERAS_1_VERBOSE_2, [1, 2], [0.4955, 0.3955]),
])
def test_old_keras_epochs_are_read(tmp_path: Path, lines: list[str], steps: list[int],
                                   losses: list[float]) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    it = traindoc.load(str(log)).iterations
    got = it[it["loss"].notna()]
    assert got["iteration"].tolist() == steps
    assert got["loss"].tolist() == losses


def test_a_heading_with_no_total_leaves_the_next_lines_to_the_step_readers(tmp_path: Path) -> None:
    # nnU-Net's "Epoch 453" and then its own lines (no Keras closing line): still read
    log = tmp_path / "train.log"
    log.write_text("Epoch 453\nstep 10 loss: 0.25\n")
    it = traindoc.load(str(log)).iterations
    assert it.loc[it["loss"].notna(), "iteration"].tolist() == [10]


# a step's header alone on its line, the loss alone on the next: one record (BAI-Yeqi/TI_SV
# train.log, corpus loss_spike-ti-sv-ge2e-tf-healthy)
TI_SV = ["start from 0", "current step: 1th step", "batch loss:4.0292044", "current step: 2th step",
         "batch loss:3.9197984", "model saved in file: ./ckpt/model.ckpt-100 / 100 th step",
         "current step: 5168th step", "batch loss:0.94814676"]


def test_a_steps_header_and_its_lone_loss_line_are_one_record(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(TI_SV) + "\n")
    it = traindoc.load(str(log)).iterations
    got = it[it["loss"].notna()]
    assert got["iteration"].tolist() == [1, 2, 5168]
    assert got["loss"].tolist() == [4.0292044, 3.9197984, 0.94814676]


@pytest.mark.parametrize(("line", "row"), [
    # neemiasbsilva/developing-nanoGPT2-fineweb logs/train_log.txt (build-nanogpt's log.txt)
    ("1987 train 3.418830", {"iteration": 1987, "loss": 3.41883}),
    ("250 val 5.8727", {"iteration": 250, "eval_loss": 5.8727, "event": "eval"}),
    ("250 hella 0.2512", None),  # HellaSwag's accuracy: no loss
    # karpathy/llm.c train_gpt2.py's logfile ("s:%d trl:%f"), its C logger's val line
    ("s:0 trl:10.985140", {"iteration": 0, "loss": 10.98514}),
    ("s:250 tel:6.1234", {"iteration": 250, "eval_loss": 6.1234, "event": "eval"}),
    # llm.c's C trainer with its learning rate and grad norm ("s:%d trl:%.4f lr:%.6f norm:%.2f")
    ("s:12 trl:3.1234 lr:0.000600 norm:0.45",
     {"iteration": 12, "loss": 3.1234, "lr": 0.0006, "grad_norm": 0.45}),
])
def test_a_runs_record_file_is_read(line: str, row: dict | None) -> None:
    from traindoc.parse.iterations import parse_run_record
    assert parse_run_record(line) == row


def test_build_nanogpts_record_gives_the_last_step(tmp_path: Path) -> None:
    log = tmp_path / "train_log.txt"
    log.write_text("0 val 11.0213\n0 train 11.027695\n1 train 10.977922\n250 val 5.8727\n"
                   "1991 train 3.478232\n")
    assert ls.analyse(traindoc.load(str(log))).last_iteration == 1991


# ESPnet2's trainer: a window of the epoch's batches, the epoch's summary with its batch count,
# then the next epoch's first window (espnet/espnet#2674, corpus loss_spike-espnet-2674)
ESPNET_2674 = [
    "[PC] 2020-11-11 16:30:14,840 (trainer:486) INFO: 1epoch:train:7126-7500batch: iter_time=0.001, "
    "forward_time=0.005, loss=2.339, backward_time=0.005, optim_step_time=1.963e-04, lr_0=0.100, "
    "train_time=0.014",
    "[PC] 2020-11-11 16:30:18,406 (trainer:243) INFO: 1epoch results: [train] iter_time=0.001, "
    "forward_time=0.005, loss=2.853, backward_time=0.005, optim_step_time=1.974e-04, lr_0=0.100, "
    "train_time=0.013, time=1 minute and 42.6 seconds, total_count=7507, [valid] loss=2.387, "
    "time=3 seconds, total_count=240, [att_plot] time=0.28 seconds, total_count=0",
    "[PC] 2020-11-11 16:30:18,969 (trainer:184) INFO: 2/20epoch started. Estimated time to finish: "
    "33 minutes and 42.59 seconds",
    "[PC] 2020-11-11 16:30:24,312 (trainer:486) INFO: 2epoch:train:1-375batch: iter_time=0.001, "
    "forward_time=0.005, loss=2.313, backward_time=0.005, optim_step_time=2.000e-04, lr_0=0.100, "
    "train_time=0.014",
]


def test_espnets_windows_count_on_from_the_epochs_stated_batches(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(ESPNET_2674) + "\n")
    inc = traindoc.load(str(log))
    it = inc.iterations
    # the summary's mean loss is no point of the series
    assert it.loc[it["loss"].notna(), "loss"].tolist() == [2.339, 2.313]
    a = ls.analyse(inc)
    assert a.last_iteration == 7507 + 375
    assert a.spikes == []


# RLlib's result YAML: the learner's stats nested in the block, the iteration's count after them.
# DQN: corpus loss_spike-shogi-rl-rllib-dqn-q-divergence (its nohup.out, Ray Tune 1.x); PPO: a
# Tune run of PPO on CartPole-v0 (Ray 1.3, 2021-05-12) as a repository's notes paste it
RLLIB_DQN = [
    "Result for DQN_shogi_96499_00000:", "  agent_timesteps_total: 34214", "  info:",
    "    learner:", "      player_0:", "        custom_metrics: {}", "        learner_stats:",
    "          allreduce_latency: 0.0", "          cur_lr: 0.0005",
    "          grad_gnorm: 21.5760555267334", "          max_q: 367.2935485839844",
    "        mean_td_error: 20.40203285217285", "  iterations_since_restore: 11",
    "  training_iteration: 11"]
RLLIB_PPO = [
    "Result for PPO_CartPole-v0_0339b_00000:", "  agent_timesteps_total: 42800", "  info:",
    "    learner:", "      default_policy:", "        learner_stats:",
    "          cur_kl_coeff: 0.30000001192092896", "          cur_lr: 4.999999873689376e-05",
    "          entropy: 0.5984720587730408", "          policy_loss: -0.030758701264858246",
    "          total_loss: 394.77838134765625", "          vf_loss: 394.8033447265625",
    "    num_steps_trained: 42800", "  iterations_since_restore: 2", "  training_iteration: 2"]
# DQN on RLlib 0.8 (a Cray cluster's CartPole run, host r7i7n35): the stats directly under the
# policy, no grad norm, the mean TD error signed
RLLIB_DQN_08 = [
    "  info:", "    last_target_update_ts: 1000", "    learner:", "      default_policy:",
    "        cur_lr: 0.0005000000237487257", "        max_q: 0.3239544630050659",
    "        mean_q: -0.08293987810611725", "        mean_td_error: -1.207885503768921",
    "        min_q: -1.2971210479736328", "        model: {}", "    num_steps_sampled: 1000",
    "  iterations_since_restore: 1", "  training_iteration: 1"]


@pytest.mark.parametrize(("lines", "row"), [
    # a DQN prints no total_loss: its mean TD error is the loss (the shogi run's divergence)
    (RLLIB_DQN, {"iteration": 11, "grad_norm": 21.5760555267334, "lr": 0.0005,
                 "loss": 20.40203285217285}),
    (RLLIB_DQN_08, {"iteration": 1, "lr": 0.0005000000237487257, "loss": -1.207885503768921}),
    # a total_loss printed wins over a TD error printed before it
    (RLLIB_PPO[:10] + ["        mean_td_error: 3.5"] + RLLIB_PPO[10:],
     {"iteration": 2, "loss": 394.77838134765625}),
    (RLLIB_PPO, {"iteration": 2, "loss": 394.77838134765625, "lr": 4.999999873689376e-05}),
])
def test_rllibs_result_yaml_is_one_row_per_training_iteration(tmp_path: Path, lines: list[str],
                                                              row: dict) -> None:
    log = tmp_path / "nohup.out"
    log.write_text("\n".join(lines) + "\n")
    it = traindoc.load(str(log)).iterations
    assert len(it) == 1
    for k, v in row.items():
        assert it[k].iloc[0] == pytest.approx(v)


# RSL-RL's iteration blocks: legged_gym's (rsl_rl 1.x; OpenRobotLab/HoST's training notes) and
# rsl_rl 2.x's "Mean value_function loss" (unitree_rl_lab#107, corpus
# loss_spike-unitree-rl-lab-107-value-loss-inf)
RSL_RL_1 = [
    "#" * 80, "                      Learning iteration 49/12000                       ", "",
    "                       Computation: 29515 steps/s (collection: 20.346s, learning 2.524s)",
    "               Value function loss: 31.5798", "                    Surrogate loss: -0.0054",
    "             Mean action noise std: 0.84", "                       Mean reward: -547.75",
    "-" * 80, "                   Total timesteps: 33750000",
    "                    Iteration time: 22.87s", "                        Total time: 1108.08s",
    "                               ETA: 264853.5s", "", "#" * 80,
    "                     Learning iteration 1338/12000                      ", "",
    "               Value function loss: 13.6643", "                    Surrogate loss: 0.0029"]
RSL_RL_2 = [
    "#" * 80, "                     Learning iteration 10108/50000                     ", "",
    "                       Computation: 57897 steps/s (collection: 1.551s, learning 0.147s)",
    "             Mean action noise std: 0.53", "          Mean value_function loss: inf",
    "               Mean surrogate loss: 0.0000", "                 Mean entropy loss: 21.9732"]


@pytest.mark.parametrize(("lines", "rows"), [
    (RSL_RL_1, [{"iteration": 49, "total_iterations": 12000, "loss": 31.5798, "elapsed_s": 22.87},
                {"iteration": 1338, "loss": 13.6643}]),
    (RSL_RL_2, [{"iteration": 10108, "total_iterations": 50000, "nan": 1}]),
])
def test_rsl_rls_iteration_block_is_one_row_with_the_value_functions_loss(
        tmp_path: Path, lines: list[str], rows: list[dict]) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    it = traindoc.load(str(log)).iterations
    assert len(it) == len(rows)
    for i, row in enumerate(rows):
        for k, v in row.items():
            assert it[k].iloc[i] == pytest.approx(v)


@pytest.mark.parametrize(("line", "step", "loss"), [
    # PaddleSlim#1582 (corpus loss_spike-paddleslim-1582-nan-from-iter-10)
    ("2022-12-08 17:57:31,371-INFO: Total iter: 0, epoch: 0, batch: 0, loss: [10.000229]", 0,
     10.000229),
    ("Epoch 0 step 100, Loss = [1.1742566]", 100, 1.1742566),  # jina-ai/finetuner#2 (Paddle)
])
def test_a_loss_printed_as_a_one_element_array_is_read(tmp_path: Path, line: str, step: int,
                                                        loss: float) -> None:
    log = tmp_path / "train.log"
    log.write_text(line + "\n")
    it = traindoc.load(str(log)).iterations
    assert it["iteration"].tolist() == [step]
    assert it["loss"].iloc[0] == pytest.approx(loss)


def test_an_epochs_running_mean_reset_is_no_spike() -> None:
    # DSFD's train.py prints losses / (batch_idx + 1), reset each epoch: the first line of an
    # epoch is one batch's loss (6.6466 over a ~4.95 mean), back on the next lines (corpus
    # loss_spike-dsfd-running-mean-epoch-start-jumps-healthy)
    from traindoc.diagnose.loss_spike.detect import epoch_running_mean
    case = Path(__file__).parent.parent / "data/corpus/loss_spike" / \
        "loss_spike-dsfd-running-mean-epoch-start-jumps-healthy/logs"
    a = ls.analyse(traindoc.load(str(case)))
    assert epoch_running_mean(a.series)
    assert a.spikes == []


def test_a_per_batch_loss_is_no_running_mean() -> None:
    # the same shape with a per-batch loss: its noise does not shrink through an epoch, so a
    # rise at an epoch's first point is judged as any other
    from traindoc.diagnose.loss_spike.detect import epoch_running_mean
    rng = np.random.default_rng(0)
    n, per = 120, 30
    s = pd.DataFrame({c: np.full(n, np.nan) for c in SERIES_COLUMNS})
    s["iteration"] = np.arange(n) * 10
    s["epoch"] = (np.arange(n) // per).astype(float)
    s["loss"] = 5.0 + rng.normal(0, 0.2, n)
    assert not epoch_running_mean(s)


@pytest.mark.parametrize("lines, expected", [
    # lidengjiajia/DecisionSupportSystem-FedACT logs/logs/ablation/ (corpus
    # loss_spike-fedact-uci-alie-federated-healthy): a padded header, the loss on the next line
    (["[Round 10/100] 正在训练...", "  客户端训练 10/10...", "[Round 10/100]                  ",
      "Averaged Train Loss: 0.5390", "Averaged Test Accuracy: 0.7729",
      "[Round 11/100] 正在训练...", "[Round 20/100]                  ",
      "Averaged Train Loss: 0.5382"], [(10, 0.5390), (20, 0.5382)]),
    # TsingZ0/PFLlib system/flcore/servers/serverbase.py: print(f"\n-------------Round number:
    # {i}-------------"), print("\nEvaluate global model"), then evaluate()'s "Averaged Train
    # Loss: {:.4f}" a few lines below the header
    (["-------------Round number: 0-------------", "", "Evaluate global model",
      "Averaged Train Loss: 2.3012", "Averaged Test Accurancy: 0.1000",
      "-------------Round number: 1-------------", "", "Evaluate global model",
      "Averaged Train Loss: 1.9511"], [(0, 2.3012), (1, 1.9511)]),
    # zafaryabZhcet/DesignnTest README.md: a Flower server's round header, the app's own line
    (["INFO :      [ROUND 1]", "INFO :      configure_fit: strategy sampled 30 clients (out of 30)",
      "INFO :      aggregate_fit: received 30 results and 0 failures",
      "After 1 Round: loss = 0.4630947411060333, accuracy: 0.8183337450027466",
      "INFO :      [ROUND 2]",
      "After 2 Round: loss = 0.45277276635169983, accuracy: 0.810694694519043"],
     [(1, 0.4630947411060333), (2, 0.45277276635169983)]),
    # rosfi12/AdvanceML_FederatedLearning results.py: the round and its loss on one line
    (["Round 1/50", "Round 1, Global Loss: 0.0333", "Round 2/50", "Round 2, Global Loss: 0.0293"],
     [(1, 0.0333), (2, 0.0293)]),
    # FedML's fedavg_api.py: logging.info("################Communication round : {}"), then
    # the stats dict of _local_test_on_all_clients
    (["################Communication round : 0",
      "{'training_acc': 0.4123, 'training_loss': 1.8702}",
      "################Communication round : 1",
      "{'training_acc': 0.5210, 'training_loss': 1.5104}"], [(0, 1.8702), (1, 1.5104)]),
])
def test_a_federated_round_is_the_step(tmp_path: Path, lines: list[str],
                                       expected: list[tuple[int, float]]) -> None:
    log = tmp_path / "fl.log"
    log.write_text("\n".join(lines) + "\n")
    it = traindoc.load(str(log)).iterations
    got = [(int(i), float(v)) for i, v in zip(it["iteration"], it["loss"], strict=True)]
    assert got == [(i, pytest.approx(v)) for i, v in expected]


def test_a_round_header_without_a_loss_numbers_nothing_else(tmp_path: Path) -> None:
    # Flower's summary ("Run finished 10 round(s)", "round 1: 0.0229" under "History (loss,
    # distributed)": an evaluation loss, no training row) and a step line's own counter
    log = tmp_path / "fl.log"
    log.write_text("INFO :      [SUMMARY]\nINFO :      Run finished 10 round(s) in 171.81s\n"
                   "INFO :          History (loss, distributed):\n"
                   "INFO :                  round 7: 0.02296383590698242\n"
                   "Epoch 1, Loss: 0.1108, Accuracy: 0.9633\n")
    it = traindoc.load(str(log)).iterations
    assert list(it["iteration"]) == [1] and it["loss"].iloc[0] == pytest.approx(0.1108)


# a step line with no loss, the learning rate and the loss on indented lines after it: one record
# (Knover's trainer, PaddlePaddle/PaddleFleetX examples/moe/log/workerlog.0, corpus
# loss_spike-fleetx-knover-moe-4rank-healthy)
KNOVER = ["[train][1] progress: 1/1 step: 120, time: 8.494, queue size: 64, speed: 1.177 steps/s",
          "\tcurrent lr: 0.0000150",
          "\tlm_loss: 7.0933, ppl: 1203.8681, aux_loss: 0.0000, loss: 7.0933, loss_scaling: 32768.0000",
          "[train][1] progress: 1/1 step: 130, time: 8.307, queue size: 64, speed: 1.204 steps/s",
          "\tcurrent lr: 0.0000163",
          "\tlm_loss: 7.2077, ppl: 1349.7974, aux_loss: 0.0000, loss: 7.2077, loss_scaling: 32768.0000",
          "Traceback (most recent call last):",
          '  File "./knover/scripts/train.py", line 326, in <module>']


def test_a_step_line_and_its_indented_loss_lines_are_one_record(tmp_path: Path) -> None:
    log = tmp_path / "workerlog.0"
    log.write_text("\n".join(KNOVER) + "\n")
    it = traindoc.load(str(log)).iterations
    got = it[it["loss"].notna()]
    assert got["iteration"].tolist() == [120, 130]
    assert got["loss"].tolist() == [7.0933, 7.2077]


def test_an_indented_line_of_no_metric_does_not_join_a_step_line(tmp_path: Path) -> None:
    # a traceback's frame under a step line stays out of its record
    log = tmp_path / "train.log"
    log.write_text("step: 5, time: 1.2, speed: 0.8 steps/s\n"
                   '  File "train.py", line 3, in <module>\nstep: 6 loss: 2.5\n')
    it = traindoc.load(str(log)).iterations
    assert it["iteration"].tolist() == [5, 6]
    assert it.loc[it["loss"].notna(), "iteration"].tolist() == [6]


@pytest.mark.parametrize(("line", "row"), [
    # ShadowDet's logger (corpus gpu_crash-fgsd-shadowdet-healthy): the epoch after the batch,
    # and loss_total, the sum of the parts, is the loss
    ("[batch 10/152, epoch 1/15]: loss_rmse:0.13097001612186432 loss_inv:0.01808396726846695 "
     "loss_total:1.2998546361923218 binary_loss:0.04854962229728699",
     {"iteration": 10, "total_iterations": 152, "epoch": 1.0, "loss": 1.2998546361923218}),
    # ESRGAN trainers after eriklindernoren/PyTorch-GAN: "[Batch %d/%d] [Epoch %d/%d] [G pixel: %f]"
    ("[Batch 100/938] [Epoch 3/200] [loss: 0.0123]",
     {"iteration": 100, "total_iterations": 938, "epoch": 3.0, "loss": 0.0123}),
    # an epoch with no total after the step is no epoch of this wording
    ("step 5/10 epoch 3 loss 2", {"iteration": 5, "total_iterations": 10, "loss": 2.0}),
])
def test_an_epoch_of_its_total_after_the_step_is_the_epoch(line: str, row: dict) -> None:
    assert parse_metric_line(line) == row


def test_a_batch_counter_before_its_epoch_counts_on_across_epochs(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("".join(f"[batch {b}/152, epoch {e}/15]: loss_total:{1.0 + b / 1000}\n"
                           for e in (1, 2) for b in (10, 150)))
    it = traindoc.load(str(log)).iterations
    assert it["epoch"].tolist() == [1.0, 1.0, 2.0, 2.0]
    assert ls.report(ls.analyse(traindoc.load(str(log)))).facts["last_iteration"] == 302


@pytest.mark.parametrize(("line", "row"), [
    # facebookresearch's LogProgress, name=f"{label} | Epoch {epoch + 1}" (demucs and denoiser
    # solver.py; corpus loss_spike-audio-sep-demucs-musdb-healthy)
    ("- Train | Epoch 8 | 286/573 | 1.43 it/sec | Loss 0.1167 | Reco 0.1139 | Grad 0.0902",
     {"iteration": 286, "total_iterations": 573, "epoch": 8.0, "loss": 0.1167}),
    ("- Valid | Epoch 1 | 1/3 | 0.31 it/sec | Loss 0.2213 | Reco 0.2213 | Nsdr 3.922",
     {"iteration": 1, "eval_loss": 0.2213, "event": "eval", "epoch": 1.0}),
    # the same through Python's logging (denoiser's hydra logger "[…][denoiser.solver][INFO] - ",
    # the default basicConfig's "INFO:demucs.solver:")
    ("INFO:demucs.solver:Train | Epoch 2 | 100/500 | 3.20 it/sec | Loss 0.03120",
     {"iteration": 100, "total_iterations": 500, "epoch": 2.0, "loss": 0.0312}),
])
def test_logprogress_phase_epoch_and_batch_are_read(line: str, row: dict) -> None:
    assert parse_metric_line(line) == row


def test_logprogress_batches_count_on_across_epochs_past_the_valid_lines(tmp_path: Path) -> None:
    log = tmp_path / "train_log.txt"
    lines = []
    for e in (1, 2):
        lines += [f"- Train | Epoch {e} | {b}/573 | 1.45 it/sec | Loss 0.2 | Reco 0.2"
                  for b in (143, 286, 429, 572)]
        lines += [f"- Train Summary | Epoch {e} | Loss=0.2019 | Reco=0.1994",
                  f"- Valid | Epoch {e} | 1/3 | 0.31 it/sec | Loss 0.2213 | Reco 0.2213",
                  f"- Valid Summary | Epoch {e} | Loss=0.2223 | Reco=0.2223"]
    lines.append("- Train | Epoch 3 | 286/573 | 1.30 it/sec | Loss 0.1 | Reco 0.1")
    log.write_text("\n".join(lines) + "\n")
    assert ls.report(ls.analyse(traindoc.load(str(log)))).facts["last_iteration"] == 2 * 573 + 286


def test_a_loss_counter_restarting_while_the_trainers_goes_on_is_counted_on() -> None:
    # DeepSpeedExamples' random-LTD fine-tune: its own "Step at 262 with Perplexity: 102.18"
    # then "Step at 1 …" for epoch 2, while DeepSpeed's timer goes on ("0/262", then "0/264"):
    # one process's second epoch, counted on, not a relaunch overwriting epoch 1's rise
    from traindoc.diagnose.loss_spike.series import series
    case = Path(__file__).parent.parent / "data/corpus/loss_spike" / \
        "loss_spike-deepspeedexamples-random-ltd-my-implementation-fp16/logs"
    inc = traindoc.load(str(case))
    s = series(inc).dropna(subset=["loss"])
    assert int(s["iteration"].max()) == 524
    assert s.loc[s["loss"].idxmax(), "iteration"] == 84
    spikes = ls.analyse(inc).spikes
    assert len(spikes) == 1 and spikes[0]["peak_loss"] == pytest.approx(378.448, abs=0.01)


def test_a_relaunch_that_restarts_every_counter_is_no_epoch(tmp_path: Path) -> None:
    # the same lines with DeepSpeed's counter back at its start too: a relaunch, the last wins
    from traindoc.diagnose.loss_spike.series import series
    timer = ("[2022-10-28 04:31:16,175] [INFO] [timer.py:198:stop] 0/{n}, "
             "RunningAvgSamplesPerSec=57.53, CurrSamplesPerSec=45.50, MemAllocated=2.13GB, "
             "MaxMemAllocated=6.29GB")
    lines = []
    for n in (*range(1, 9), *range(1, 5)):
        lines += [timer.format(n=2 * n), f"Step at {n} with Perplexity: {60 + n}.5"]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    s = series(traindoc.load(str(log))).dropna(subset=["loss"])
    assert int(s["iteration"].max()) == 8
    assert s.loc[s["iteration"] == 1, "loss"].iloc[0] == pytest.approx(61.5)


def test_repeated_blips_that_all_stand_are_none_of_each_others_noise() -> None:
    # three one-batch spikes to 3× a quiet level: none was let go, so none is noise
    rng = np.random.default_rng(0)
    y = 2.0 + 0.02 * rng.standard_normal(400)
    for k in (100, 200, 300):
        y[k] = 6.0
    assert [s["start_iteration"] for s in find_spikes(_frame(y))[0]] == [100, 200, 300]


@pytest.mark.parametrize("lines, expected", [
    # a hand-written GRPO trainer (corpus loss_spike-cs336-a5-grpo-rl-log-healthy, rl.log): the
    # rollout batch's header, its loss on the next line with no counter
    (["2025-09-23 08:59:11,896 - train - INFO - rollout batch 0 generated, length: 256",
      "2025-09-23 09:01:00,984 - train - INFO - rl_loss: -0.0027044436428695917, time: "
      "109.08716797828674, l2_norm: 0.14105106890201569, token_entropy: 0.8196184635162354",
      "2025-09-23 09:02:07,510 - train - INFO - rollout batch 0 done, eval_acc: 0.4833984375",
      "2025-09-23 09:03:21,522 - train - INFO - rollout batch 1 generated, length: 256",
      "2025-09-23 09:05:16,843 - train - INFO - rl_loss: 0.0, time: 115.32045888900757, "
      "l2_norm: 0.1688903421163559, token_entropy: 0.5658361315727234"],
     [(0, -0.0027044436428695917), (1, 0.0)]),
    # dotaclient's PPO optimizer (corpus throughput-dotaclient-34, optimizer.log): the
    # iteration's header, its epochs, then its stats; the stats line before any header is no row
    (["2019-02-03 08:03:36,499 INFO     steps_per_s=443.39, avg_weight_age=4.9, "
      "reward_per_sec=-0.0046, loss=0.2225, entropy=7.487, advantage=0.121",
      "2019-02-03 08:03:36,767 INFO     iteration 9/10000",
      "2019-02-03 08:03:40,356 INFO      epoch 1/4", "2019-02-03 08:03:53,079 INFO      epoch 4/4",
      "2019-02-03 08:03:57,397 INFO     steps_per_s=428.69, avg_weight_age=5.8, "
      "reward_per_sec=-0.0031, loss=0.1637, entropy=7.529, advantage=-0.027",
      "2019-02-03 08:03:57,624 INFO     iteration 10/10000",
      "2019-02-03 08:04:26,668 INFO     steps_per_s=297.42, avg_weight_age=4.4, "
      "reward_per_sec=-0.0052, loss=0.2684, entropy=7.551, advantage=0.137"],
     [(9, 0.1637), (10, 0.2684)]),
    # DeepSpeedExamples' ViT on CIFAR (corpus throughput-deepspeedexamples-vit-cifar-training):
    # an evaluation's batch after DeepSpeed's step line is no training loss of that step
    (["[2022-11-22 11:17:04,090] [INFO] [logging.py:68:log_dist] [Rank 0] step=5000, skipped=0, "
      "lr=[0.0001], mom=[0.9]",
      "val[ 0/40]\tTime  2.093 ( 2.093)\tLoss 8.0803e-02 (8.0803e-02)\tAcc@1  97.27 ( 97.27)"], []),
    # a header that is a sentence's end is no header: "Saving model checkpoint at step 500"
    (["Saving model checkpoint at step 500", "Final loss: 0.25"], []),
])
def test_a_step_header_numbers_the_loss_line_after_it(tmp_path: Path, lines: list[str],
                                                      expected: list[tuple[int, float]]) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    it = traindoc.load(str(log)).iterations
    it = it[it["loss"].notna()] if len(it) else it
    got = [(int(i), float(v)) for i, v in zip(it["iteration"], it["loss"], strict=True)]
    assert got == [(i, pytest.approx(v)) for i, v in expected]


# spdistiller's Llama-3 QAT run (corpus throughput-spdistiller-llama3-qat-deepspeed-step-time):
# the first logged loss is the run's lowest draw, its noise 0.3-3.4 all run long
QAT = [0.519, 1.791, 1.554, 1.042, 0.875, 0.728, 0.934, 2.568, 1.546, 1.132, 1.008, 1.699, 3.388,
       1.488, 1.492, 2.388, 2.432, 0.904, 1.894, 1.216, 1.586, 1.785, 0.738, 2.585, 0.698]
# RLlib's DQN on shogi (corpus loss_spike-shogi-rl-rllib-dqn-q-divergence): the TD error leaves
# 0.065 and swings wider each iteration
DQN = [0.0649, 0.1824, 20.402, 905.9544, -370.4738, 33142.9531, -17759.2441, 42068.1875,
       78693.9688, 631935.375, 830613.9375, 840979.875]


@pytest.mark.parametrize("losses, spike", [(QAT * 3 + [0.30, 1.5, 2.0, 1.2], False), (DQN, True)])
def test_a_rise_off_the_first_logged_loss_alone(tmp_path: Path, losses: list[float],
                                                spike: bool) -> None:
    log = tmp_path / "train.log"
    log.write_text("".join(f"step {i + 1} loss {v}\n" for i, v in enumerate(losses)))
    facts = ls.diagnose(traindoc.load(str(log))).facts
    assert bool(facts["spikes"]) is spike
