"""Families read in round h (issue 26), each on its corpus instance's real lines and on a
second source's: Ascend HCCL's execution timeout, an exception whose message goes on under it,
Lightning's SIGTERM handler, program errors that quote NCCL's name, a step printed before a
Trainer dict, tensorboardX's NaN check, apex's overflow notes per writer, a loss stuck at
exactly zero, and ModelCheckpoint's message fused into a Lightning bar."""

from __future__ import annotations

from pathlib import Path

import pytest

import traindoc
from traindoc.diagnose import gpu_crash, loss_spike, timeout, triage
from traindoc.parse.collectives import parse_hccl_timeout
from traindoc.parse.errors import parse_error
from traindoc.parse.prefixes import demux


def _load(tmp_path: Path, text: str, name: str = "job.log") -> traindoc.Incident:
    log = tmp_path / name
    log.write_text(text)
    return traindoc.load(str(log))


# --- Ascend HCCL's execution timeout ----------------------------------------------------------

# vllm-project/vllm-ascend#3413 (torch_npu: the rank on the line before, the record after)
VLLM_ASCEND = (
    "[ERROR] 2025-10-11-15:09:34 (PID:2969, Device:0, RankID:101) ERR00100 PTA call acl api "
    "failed.\n"
    "EI0002: [PID: 2969] 2025-10-11-15:09:34.713.335 The wait execution of the Notify register "
    "times out. Reason: The Notify register has not received the Notify record from remote rank: "
    "[24]. base information: [streamID:[109], taskID[38], taskType[Notify Wait], tag[AllReduce_"
    "group_name_1654NHRAllReduceComm_device], AlgType(level 0-1-2):[ring-NHR-NHR].]. task "
    "information: [notify id:[0x0000000000000213], stage:[0], remote rank:[24]]. group "
    "information: [group:[group_name_1654], user define information[Unspecified], rankSize[32], "
    "rankId[25 24]]\n")
# MindSpore on Ascend (a CI log quoted in mindspore's troubleshooting): one line, no RankID
MINDSPORE = (
    "[CRITICAL] DEVICE(162844,fffd6cff91e0,python):2022-12-01-00:26:58.399.787 [mindspore/ccsrc/"
    "plugin/device/ascend/hal/hardware/ascend_graph_executor.cc:240] RunGraph] Run task for graph:"
    "kernel_graph_1 error! The details refer to 'Ascend Error Message'.Ascend Error Message:EI0002:"
    " The wait execution of the Notify register times out. Reason: The Notify register has not "
    "received the Notify record from remote rank [0].base information: [streamID:[14], taskID[4], "
    "taskType[Notify Wait], tag[HcomAllReduce_6629421139219749105_0].] task information: [notify "
    "id:[0x0000000100000058], stage:[ffffffff], remote rank:[0].")
# CANN's own plog (HCCL's troubleshooting guide)
PLOG = (
    "[ERROR] HCCL(2111665,all_reduce_test):2025-10-24-11:18:29.499.235 [task_exception_handler.cc"
    ":908] [2111665][TaskExecStage][Timeout][Host]Task run failed, base information is streamID:"
    "[2], taskID[21], tag[AllReduce_127.10.0.1%enp_60000_0_1761275812718970], AlgType(level 0-1-2)"
    ":[fullmesh-ring-NHR].")


def test_hccl_notify_timeout_names_the_rank_and_the_collective(tmp_path: Path) -> None:
    f = timeout.diagnose(_load(tmp_path, VLLM_ASCEND)).facts
    assert f["timed_out_ranks"] == [101]
    assert f["op_type"] == "ALLREDUCE"


@pytest.mark.parametrize("line", [MINDSPORE, PLOG])
def test_hccl_timeouts_in_other_wordings_are_allreduce_timeouts(line: str) -> None:
    row = parse_hccl_timeout(line)
    assert row is not None and row["state"] == "timed_out" and row["op_type"] == "ALLREDUCE"
    assert row["rank"] is None  # no RankID printed: the writer's prefix or file says


def test_an_ascend_error_code_is_no_host_prefix() -> None:
    body, origin = demux("EI0002: [PID: 2969] 2025-10-11-15:09:34.713.335 The wait execution")
    assert origin.host is None and body.startswith("EI0002: ")
    assert demux("EE9999: Inner Error!")[1].host is None


# --- a Python exception whose message goes on, indented, under it -----------------------------

# bert-stockprediction's train.err (torch's load_state_dict through transformers)
STATE_DICT = (
    "Traceback (most recent call last):\n"
    '  File "/home/u/train.py", line 44, in train\n'
    "    model = BertForSequenceClassification.from_pretrained(path)\n"
    "RuntimeError: Error(s) in loading state_dict for BertForSequenceClassification:\n"
    "\tsize mismatch for classifier.weight: copying a param with shape torch.Size([3, 768]) from "
    "checkpoint, the shape in current model is torch.Size([2, 768]).\n"
    "\tsize mismatch for classifier.bias: copying a param with shape torch.Size([3]) from "
    "checkpoint, the shape in current model is torch.Size([2]).\n")
# the same message under DDP, through torchrun's rank prefix (Lightning-AI/pytorch-lightning
# threads quote it so: "Missing key(s) in state_dict:" on the next line)
DDP_STATE_DICT = (
    "[rank1]: RuntimeError: Error(s) in loading state_dict for DistributedDataParallel:\n"
    '[rank1]: \tMissing key(s) in state_dict: "module.fc.weight", "module.fc.bias".\n')


@pytest.mark.parametrize("text, words", [
    (STATE_DICT, "size mismatch for classifier.weight"),
    (DDP_STATE_DICT, 'Missing key(s) in state_dict: "module.fc.weight"'),
])
def test_an_exception_message_continued_below_is_read_whole(tmp_path: Path, text: str,
                                                            words: str) -> None:
    f = gpu_crash.diagnose(_load(tmp_path, text)).facts
    assert f["error_kind"] == "python"
    assert words in f["error_message"]


def test_a_colon_ended_message_with_nothing_indented_after_stays_as_it_is(tmp_path: Path) -> None:
    f = gpu_crash.diagnose(_load(tmp_path, "ValueError: bad value:\nnext line\n")).facts
    assert f["error_message"] == "ValueError: bad value:"


# --- Lightning's SIGTERM handler ----------------------------------------------------------------

# eagnet QCNet's train.out: rank 2 of five, fused to the last tqdm update
LIGHTNING_JOB = (
    "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/5\n"
    "Initializing distributed: GLOBAL_RANK: 2, MEMBER: 3/5\n"
    "Epoch 0:  31%|███       | 1225/3999 [1:07:35<2:33:02,  3.31s/it, v_num=29, "
    "train_total_loss=0.375][rank: 2] Received SIGTERM: 15\n"
    "RuntimeError: DataLoader worker (pid 4020138) is killed by signal: Terminated. \n")


def test_lightnings_sigterm_is_read_with_its_local_rank() -> None:
    # a second source: the line a Lightning user quoted from a resumed run ("[rank: 0]
    # Received SIGTERM: 15 three minutes after a clean checkpoint resume")
    row = parse_error("[rank: 0] Received SIGTERM: 15")
    assert row is not None and row["kind"] == "signal" and row["code"] == "SIGTERM"
    assert row["local_rank"] == 0 and "rank" not in row


def test_one_rank_of_several_stopped_from_outside_is_named(tmp_path: Path) -> None:
    inc = _load(tmp_path, LIGHTNING_JOB)
    rep = gpu_crash.diagnose(inc)
    assert rep.facts["failed_ranks"] == [2]
    assert rep.facts["error_kind"] == "signal"
    assert "Received SIGTERM" in rep.facts["error_message"]
    assert "alone was stopped from outside" in rep.verdict
    assert triage.diagnose(inc).facts["classes"][0]["class"] == "gpu_crash"


def test_a_stop_every_rank_reports_names_no_rank(tmp_path: Path) -> None:
    text = ("Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n"
            "[rank: 0] Received SIGTERM: 15\n[rank: 1] Received SIGTERM: 15\n")
    f = gpu_crash.diagnose(_load(tmp_path, text)).facts
    assert f["error_kind"] == "signal" and f["failed_ranks"] == []


# --- a program error that quotes NCCL's name is no peer's failure -------------------------------

@pytest.mark.parametrize("line", [
    # PaddleOCR RobustScanner / UIE on Windows (corpus): Paddle built without NCCL
    "AttributeError: module 'paddle.fluid.core_avx' has no attribute 'NCCLParallelContext'",
    # an image without NCCL's library (pytorch/pytorch threads)
    "ImportError: libnccl.so.2: cannot open shared object file: No such file or directory",
])
def test_a_program_error_naming_nccl_is_the_failure(tmp_path: Path, line: str) -> None:
    text = ('Traceback (most recent call last):\n  File "tools/train.py", line 148, in <module>\n'
            f"    main()\n{line}\n")
    f = gpu_crash.diagnose(_load(tmp_path, text)).facts
    assert f["error_kind"] == "python" and f["error_message"] == line


# --- a step printed before the Trainer's dict ---------------------------------------------------

@pytest.mark.parametrize("line, step", [
    # text-generation-webui's LoRA training.log (a TrainerCallback's on_log)
    ("Step:      3 {'loss': 2.4395, 'grad_norm': inf, 'learning_rate': 8.000000000000001e-06, "
     "'epoch': 0.017543859649122806}", 3),
    ("[Step 100] {'loss': 1.25, 'learning_rate': 2e-05, 'epoch': 0.5}", 100),
    ("global_step=40 {'loss': 0.9, 'grad_norm': 1.2, 'learning_rate': 1e-05, 'epoch': 1.0}", 40),
])
def test_a_step_before_the_dict_is_its_step(tmp_path: Path, line: str, step: int) -> None:
    it = _load(tmp_path, line + "\n").iterations
    assert it["iteration"].tolist() == [step]


def test_an_inf_grad_norm_on_every_callback_step(tmp_path: Path) -> None:
    lines = "".join(f"Step: {s:6d} {{'loss': 2.4{s % 7}, 'grad_norm': inf, 'learning_rate': 1e-05,"
                    f" 'epoch': {s / 100}}}\n" for s in range(3, 44, 4))
    f = loss_spike.diagnose(_load(tmp_path, lines)).facts
    assert f["nan_iterations"] == list(range(3, 44, 4))
    assert f["last_iteration"] == 43


# --- tensorboardX's NaN check, apex's overflow notes, one step per writer ---------------------

# MEmoBert's Horovod run (mpirun --tag-output), rank 0 logging two NaN scalars
MEMOBERT = (
    " 11%|#1        | 34081/300000 [9:57:53<76:49:37,  1.04s/it]\n"
    "[1,0]<stdout>:Warning: NaN or Inf found in input tensor.\n"
    "[1,0]<stdout>:Warning: NaN or Inf found in input tensor.\n"
    "[1,0]<stdout>:Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 4096.0\n"
    "[1,1]<stdout>:Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 4096.0\n"
    "[1,0]<stdout>:Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 4096.0\n"
    "[1,1]<stdout>:Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 4096.0\n")


def test_overflow_notes_of_two_writers_at_one_scale_are_one_step(tmp_path: Path) -> None:
    f = loss_spike.diagnose(_load(tmp_path, MEMOBERT)).facts
    assert f["skipped_iterations"] == [34082]
    assert f["nan_iterations"] == [34082]
    assert f["last_iteration"] == 34081


def test_apex_overflows_falling_to_lower_scales_are_successive_steps(tmp_path: Path) -> None:
    text = ("  5%|5         | 100/2000 [01:00<19:00,  1.66it/s]\n"
            + "".join(f"Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to "
                      f"{s}.0\n" for s in (32768, 16384, 8192)))
    f = loss_spike.diagnose(_load(tmp_path, text)).facts
    assert f["skipped_iterations"] == [101, 102, 103]


def test_tensorboardx_warning_through_logging_is_a_nan() -> None:
    from traindoc.parse.iterations import parse_nan_warning

    # a GLPDepth reproduction's log (corpus): the logging module's root logger
    assert parse_nan_warning("WARNING:root:NaN or Inf found in input tensor.") == {"nan": 1}


# --- a loss stuck at exactly zero ---------------------------------------------------------------

def _hf_lines(losses: list[float]) -> str:
    return "".join(f"{{'loss': {v}, 'learning_rate': 5e-05, 'epoch': {i / 10}, 'step': {10 * i}}}\n"
                   for i, v in enumerate(losses, 1))


def test_a_loss_that_falls_to_exactly_zero_and_stays_is_degenerate(tmp_path: Path) -> None:
    # graduate-agent's LLaMA-Factory run: 122.1416 at step 10, then 0.0 to step 370
    inc = _load(tmp_path, _hf_lines([122.1416] + [0.0] * 8))
    rep = loss_spike.diagnose(inc)
    assert rep.facts["zero_loss_from"] == 20
    assert rep.facts["spikes"] == [] and rep.facts["nan_iterations"] == []
    assert "exactly 0" in rep.verdict
    assert [c["class"] for c in triage.diagnose(inc).facts["classes"]] == ["loss_spike"]


def test_a_surrogate_loss_about_zero_is_not_degenerate(tmp_path: Path) -> None:
    # a policy-gradient loss within ±0.003 that is often exactly 0 (CS336's GRPO log)
    f = loss_spike.diagnose(_load(tmp_path, _hf_lines([0.002, -0.001] + [0.0] * 8))).facts
    assert f["zero_loss_from"] is None


def test_zeros_the_run_came_back_from_are_no_stuck_loss(tmp_path: Path) -> None:
    f = loss_spike.diagnose(_load(tmp_path, _hf_lines([2.0] + [0.0] * 6 + [1.9, 1.8]))).facts
    assert f["zero_loss_from"] is None


# --- ModelCheckpoint's message written into a Lightning bar -------------------------------------

def test_a_bar_cut_by_model_checkpoints_message_is_read(tmp_path: Path) -> None:
    # autom3l's readme_result.log (a NaN loss on every reading)
    line = ("Epoch 0:  50%|█████     | 1007/2015 [04:03<04:03,  4.14it/s, loss=nan, v_num=Epoch 0, "
            "global step 51: 'val_accuracy' reached 0.02055 (best 0.02055), saving model to "
            "'/home/ubuntu/out/epoch=0-step=51.ckpt' as top 3\n")
    it = _load(tmp_path, line).iterations
    assert it["iteration"].tolist() == [1007]
    assert it["nan"].tolist() == [1]
