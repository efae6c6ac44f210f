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


# === batch 2026-11-29b's families (after its intake) =========================================

# --- a rank waiting for rank 0's NCCL unique id; XLA's key-value wait ------------------------

@pytest.mark.parametrize("line, rank, ms", [
    # kyleliang919/C-Optim#10 (torch 2.1)
    ("RuntimeError: [4] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via "
     "c10d key-value store by key '0', but store->get('0') got error: Socket Timeout", 4, None),
    # a SLURM run's notes quoting torch 2.2+ under torchrun's prefix
    ("[rank3]: torch.distributed.DistBackendError: [3] is setting up NCCL communicator and "
     "retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') "
     "got error: wait timeout after 600000ms", 3, 600000),
])
def test_a_rank_waiting_for_the_unique_id_timed_out_and_rank_0_never_came(
        tmp_path: Path, line: str, rank: int, ms: int | None) -> None:
    f = timeout.diagnose(_load(tmp_path, line + "\n")).facts
    assert f["timed_out_ranks"] == [rank]
    assert f["lagging_ranks"] == [0]
    assert f["timeout_ms"] == ms


def test_a_peer_gone_while_getting_the_unique_id_is_no_timeout(tmp_path: Path) -> None:
    # Databricks' TorchDistributor notes: rank 0 died, the store's connection was reset
    line = ("[rank3]: torch.distributed.DistBackendError: [3] is setting up NCCL communicator and "
            "retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but "
            "store->get('0') got error: Connection reset by peer\n")
    assert timeout.diagnose(_load(tmp_path, line)).facts["timed_out_ranks"] == []


@pytest.mark.parametrize("line, ms, startup", [
    # EnzymeAD/Enzyme-JAX#623: an NCCL clique's id for a collective
    ("E0000 00:00:1743713172.513857  698835 pjrt_stream_executor_client.cc:3072] Execution of "
     "replica 0 failed: DEADLINE_EXCEEDED: GetKeyValue() timed out with key: devices=[0,1]; "
     "stream=0; groups=[[0,1]]; root_device=0; num_local_participants=2 and duration: 10m "
     "[type.googleapis.com/tensorflow.CoordinationServiceError='']", 600000, False),
    # jax.distributed.initialize's topology exchange (a JAX user's notes on Perlmutter)
    ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Getting local topologies failed: "
     "GetKeyValue() timed out with key: cuda:local_topology/cuda/1 and duration: 2m", 120000, True),
])
def test_xlas_key_value_wait_is_a_timeout_of_its_duration(line: str, ms: int,
                                                           startup: bool) -> None:
    from traindoc.parse.collectives import parse_xla_kv_timeout, startup_line

    row = parse_xla_kv_timeout(line)
    assert row is not None and row["timeout_ms"] == ms and row["state"] == "timed_out"
    assert startup_line(line) is startup


def test_two_ranks_each_past_the_others_number_are_out_of_step(tmp_path: Path) -> None:
    # Sunshine535/nips-grpo-dynamics (torch 2.6, a sub-group's all-gathers)
    text = (
        "[rank0]:[E405 03:51:41.285624929 ProcessGroupNCCL.cpp:688] [Rank 0] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=404, OpType=_ALLGATHER_BASE, NumelIn=1140480,"
        " NumelOut=2280960, Timeout(ms)=600000) ran for 600053 milliseconds before timing out.\n"
        "[rank0]:[E405 03:51:41.286127773 ProcessGroupNCCL.cpp:2277] [PG ID 3 PG GUID 4 Rank 0]  "
        "failure detected by watchdog at work sequence id: 404 PG status: last enqueued work: 405,"
        " last completed work: 403\n"
        "[rank1]:[E405 03:51:41.321650177 ProcessGroupNCCL.cpp:688] [Rank 1] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=405, OpType=_ALLGATHER_BASE, NumelIn=1216512,"
        " NumelOut=2433024, Timeout(ms)=600000) ran for 600085 milliseconds before timing out.\n"
        "[rank1]:[E405 03:51:41.322157127 ProcessGroupNCCL.cpp:2277] [PG ID 3 PG GUID 4 Rank 1]  "
        "failure detected by watchdog at work sequence id: 405 PG status: last enqueued work: 406,"
        " last completed work: 404\n")
    f = timeout.diagnose(_load(tmp_path, text)).facts
    assert f["timed_out_ranks"] == [0, 1]
    assert f["lagging_ranks"] == [] and f["pattern"] != "straggler"


# --- detectron2's per-rank files, its train loop's report, its events line -------------------

D2_ERROR = (
    "[02/25 03:02:04] d2.engine.train_loop INFO: Starting training from iteration 0\n"
    "[02/25 03:02:13] d2.engine.train_loop ERROR: Exception during training:\n"
    "Traceback (most recent call last):\n"
    '  File "/env/detectron2/engine/train_loop.py", line 138, in train\n'
    "    self.run_step()\n"
    '  File "/env/detectron2/layers/wrappers.py", line 80, in forward\n'
    "    if x.numel() == 0 and self.training:\n"
    "AttributeError: 'list' object has no attribute 'numel'\n"
    "[02/25 03:02:13] d2.engine.hooks INFO: Total training time: 0:00:09 (0:00:00 on hooks)\n"
    "[02/25 03:02:13] d2.utils.events INFO:  iter: 0    lr: N/A  max_mem: 51M\n")


def test_detectron2s_per_rank_logs_and_its_train_loops_report(tmp_path: Path) -> None:
    # vaishnavmohit/imageclassification-detectron: log.txt (rank 0) beside log.txt.rank1
    (tmp_path / "log.txt").write_text(D2_ERROR)
    (tmp_path / "log.txt.rank1").write_text(D2_ERROR)
    inc = traindoc.load(str(tmp_path))
    f = gpu_crash.diagnose(inc).facts
    assert f["failed_ranks"] == [0, 1]
    assert f["error_kind"] == "python" and "numel" in f["error_message"]
    assert f["last_iteration"] == 0
    assert triage.diagnose(inc).facts["classes"][0]["class"] == "gpu_crash"


def test_a_log_txt_alone_names_no_rank(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text(D2_ERROR)
    assert gpu_crash.diagnose(traindoc.load(str(tmp_path))).facts["failed_ranks"] in ([], [0])
    from traindoc.parse.prefixes import path_origin

    assert path_origin("out/log.txt").rank is None
    assert path_origin("out/log.txt", ("log.txt.rank1",)).rank == 0
    assert path_origin("out/log.txt.rank3", ("log.txt.rank1",)).rank == 3


# --- Paddle: the error under "In user code:", a reader thread's exception, a device assert ----

def test_paddles_in_user_code_wraps_the_error_under_it(tmp_path: Path) -> None:
    # Yanxing-Shi/PaddleNLP's BERT run under CUDA-graph capture
    text = ("RuntimeError: In user code:\n\n"
            '    File "./run_pretrain.py", line 478, in <module>\n      do_train(args)\n\n'
            "    PreconditionNotMetError: Tensor not initialized yet when Tensor::place() is "
            "called.\n      [Hint: holder_ should not be null.] (at /work/Code/Paddle/paddle/"
            "fluid/framework/tensor.h:210)\n")
    f = gpu_crash.diagnose(_load(tmp_path, text)).facts
    assert "Tensor not initialized yet" in f["error_message"]


def test_a_data_loader_threads_exception_stops_the_run(tmp_path: Path) -> None:
    # JFrankLee/AI's PaddleSeg workerlog.0: the reader thread raises, the launcher stops it
    text = (
        "Exception in thread Thread-2:\nTraceback (most recent call last):\n"
        '  File "/env/lib/python3.8/threading.py", line 932, in _bootstrap_inner\n    self.run()\n'
        '  File "/env/lib/python3.8/threading.py", line 870, in run\n'
        "    self._target(*self._args, **self._kwargs)\n"
        '  File "/env/site-packages/paddle/fluid/dataloader/dataloader_iter.py", line 212, in '
        "_thread_loop\n    batch = self._dataset_fetcher.fetch(indices)\n"
        '  File "/seg/paddleseg/transforms/transforms.py", line 57, in __call__\n'
        "    im = im.astype('float32')\n"
        "AttributeError: 'NoneType' object has no attribute 'astype'\n\n"
        "FatalError: `Termination signal` is detected by the operating system.\n"
        "  [SignalInfo: *** SIGTERM (@0x3e800076868) received by PID 485569 (TID 0x7f5c0d486740) "
        "from PID 485480 ***]\n")
    inc = _load(tmp_path, text)
    f = gpu_crash.diagnose(inc).facts
    assert f["error_kind"] == "python" and "astype" in f["error_message"]
    assert triage.diagnose(inc).facts["classes"][0]["class"] == "gpu_crash"


def test_paddles_device_side_assertion_is_a_cuda_error() -> None:
    row = parse_error(
        "Error: /paddle/paddle/phi/kernels/funcs/gather.cu.h:68 Assertion `index_value >= 0 && "
        "index_value < input_dims[j]` failed. The index is out of bounds, please check whether the "
        "dimensions of index and input meet the requirements. It should be less than [300] and "
        "greater than or equal to 0, but received [0]")
    assert row is not None and row["kind"] == "cuda_error"
    assert row["message"].startswith("/paddle/paddle/phi/kernels/funcs/gather.cu.h:68 Assertion")
    assert "index is out of bounds" in row["message"]


# --- an epoch's header with its total, the loss on a line after it; epochs beside bars -----

def test_an_epoch_header_numbers_the_loss_after_it(tmp_path: Path) -> None:
    # othmaneechc/SpeedTransformer's fine-tuning sweep
    lines = []
    for e, loss in enumerate(["3.2327", "3.1928", "3.2684", "nan", "nan"], 1):
        lines += [f"2025-12-24 04:28:2{e},800 - INFO - [Epoch {e}/50]",
                  f"2025-12-24 04:28:2{e},900 - INFO - Train Loss: {loss}, Train Acc: 0.3183",
                  f"2025-12-24 04:28:2{e},950 - INFO - Val   Loss: 2.2890, Val   Acc: 0.5692"]
    f = loss_spike.diagnose(_load(tmp_path, "\n".join(lines) + "\n")).facts
    assert f["nan_iterations"] == [4, 5] and f["last_iteration"] == 5


def test_epoch_losses_beside_batch_bars_without_a_loss_are_the_series(tmp_path: Path) -> None:
    # lrlbbzl/llm_tkgc: a bar of 300 batches per epoch, no loss on it, then the epoch's loss
    text = "".join(
        f"100%|██████████| 300/300 [14:30<00:00,  2.90s/it]\n"
        f"2023-11-11 11:{e:02d}:35,065 - INFO: Epoch {e:04d} in static KGE | Ave Loss: "
        f"{8.6 - e * 0.2:.4f}\n" for e in range(14))
    f = loss_spike.diagnose(_load(tmp_path, text)).facts
    assert f["spikes"] == [] and f["last_iteration"] == 13


def test_stepless_dicts_after_a_bars_redraw_take_its_count(tmp_path: Path) -> None:
    # haotian-liu/LLaVA#918: a dict every step, each after the bar's redraw at that step
    lines = ["{'loss': 0.6623, 'learning_rate': 0.000176, 'epoch': 0.24}", ""]
    for step, loss in ((2565, 0.8022), (2566, 4.2653), (2567, 0.77), (2568, 0.556)):
        lines += [f" 24%|██▍       | {step - 1}/10485 [3:15:13<10:06:35,  4.59s/it]",
                  f" 24%|██▍       | {step}/10485 [3:15:17<10:03:00,  4.57s/it]",
                  " " * 57, f"{{'loss': {loss}, 'learning_rate': 0.000176, 'epoch': 0.24}}", ""]
    f = loss_spike.diagnose(_load(tmp_path, "\n".join(lines) + "\n")).facts
    assert f["last_iteration"] == 2568
    assert [sp["peak_iteration"] for sp in f["spikes"]] == [2566]


def test_dicts_without_a_bar_between_them_keep_their_count(tmp_path: Path) -> None:
    lines = [f"{{'loss': {1.0 - i / 100}, 'learning_rate': 0.0001, 'epoch': {i / 100}}}"
             for i in range(1, 6)]
    lines.insert(2, " 10%|█         | 500/5000 [5:19:05<47:36:18, 38.08s/it]")
    f = loss_spike.diagnose(_load(tmp_path, "\n".join(lines) + "\n")).facts
    assert f["last_iteration"] != 500  # one bar among five dicts places none of them


# --- MLPerf's imgs_sec, PaddleClas's [Eval] lines, a batch of an unknown number ---------------

def test_mlperf_imgs_sec_is_images_per_second() -> None:
    from traindoc.parse.metric_lines import parse_metric_line

    # NVIDIA's MXNet ResNet-50, MLPerf Training v1.1 (mlcommons/training_results_v1.1)
    row = parse_metric_line(
        ':::MLLOG {"namespace": "", "time_ms": 1634350124140, "event_type": "POINT_IN_TIME", '
        '"key": "tracked_stats", "value": {"imgs_sec": 26316.850046377196}, "metadata": {"file": '
        '"/workspace/image_classification/common/fit.py", "lineno": 994, "step": 2}}')
    assert row is not None and row["iteration"] == 2
    assert row["samples_per_s"] == pytest.approx(26316.85, rel=1e-6)


def test_paddleclas_eval_lines_are_no_training_rate() -> None:
    from traindoc.parse.metric_lines import parse_line

    # justld/CycleMlp_paddle log/stage3/train.log
    row = parse_line("[2022/01/29 07:31:34] root INFO: [Eval][Epoch 382][Iter: 0/98]CELoss: "
                     "1.20396, loss: 1.20396, top1: 0.72266, top5: 0.91016, batch_cost: 7.51021s, "
                     "reader_cost: 2.63817, ips: 34.08696 images/sec")
    assert row is None or (row.get("event") == "eval" and row.get("samples_per_s") is None)


def test_a_batch_of_an_unknown_number_is_the_step() -> None:
    from traindoc.parse.metric_lines import parse_line

    # Lightning-AI/litData#340 (an iterable dataset: the epoch's batches unknown)
    row = parse_line("2024-08-23T21:52:48.476Z | pytorch_lightning - INFO - RANK 0 - "
                     "on_train_batch_end - EPOCH 1 BATCH 80/inf(0.00%): train_loss=0.07478; "
                     "lr=0.0000499693")
    assert row is not None and row["iteration"] == 80 and row["epoch"] == 1.0


# --- a rank's own watchdog teardown, a network error before a time limit ---------------------

def test_a_ranks_own_watchdog_teardown_is_no_sign_it_was_behind(tmp_path: Path) -> None:
    # DataArcTech/SQL-R1#18 (Ray folded rank 0's own watchdog line into "[repeated 2x …]")
    text = (
        "(WorkerDict pid=3943529) [rank0]:[E816 01:09:38.266897325 ProcessGroupNCCL.cpp:621] "
        "[Rank 0] Some NCCL operations have failed or timed out. Due to the asynchronous nature "
        "of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data. "
        "[repeated 3x across cluster]\n"
        "(WorkerDict pid=3943529) [rank0]:[E816 01:09:38.266910599 ProcessGroupNCCL.cpp:627] "
        "[Rank 0] To avoid data inconsistency, we are taking the entire process down. [repeated "
        "3x across cluster]\n"
        "(WorkerDict pid=3944197) [rank2]:[E816 01:09:38.174648046 ProcessGroupNCCL.cpp:1515] "
        "[PG 0 (default_pg) Rank 2] Process group watchdog thread terminated with exception: "
        "[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
        "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600034 "
        "milliseconds before timing out.\n")
    f = timeout.diagnose(_load(tmp_path, text)).facts
    assert f["pattern"] != "straggler" and f["lagging_ranks"] == []


def test_a_network_error_before_a_time_limit_is_the_failure() -> None:
    # sparticlesteve/pytorch-nccl-test slurm-nccl-416593.out (srun -l, 16 tasks on two nodes):
    # task 10's "NET/IB : Got completion with error 12", then SLURM's time limit
    from conftest import ROOT

    case = ROOT / "data/corpus/gpu_crash/gpu_crash-pytorch-nccl-test-cgpu09-ib-completion-error-time-limit"
    f = gpu_crash.diagnose(traindoc.load(str(case / "logs"))).facts
    assert f["failed_hosts"] == ["cgpu09"]
    assert "Got completion with error 12" in f["error_message"]


def test_nccls_warn_before_a_generic_error_says_what_failed(tmp_path: Path) -> None:
    # sparticlesteve/podman-nccl-testing (Slingshot's cxi provider, NCCL's OFI plugin)
    text = (
        "nid004048:1379601:1379824 [2] register_mr_buffers:647 NCCL WARN NET/OFI Unable to "
        "register memory (type = 2) for device 3. RC: -22, Error: Invalid argument\n"
        "nid004048:1379601:1379824 [2] NCCL INFO transport/net.cc:410 -> 2\n"
        "nid004048:1379601:1379601 [2] init.cc:1236 NCCL WARN unhandled system error (run with "
        "NCCL_DEBUG=INFO for details)\n")
    f = gpu_crash.diagnose(_load(tmp_path, text)).facts
    assert f["error_kind"] == "nccl_error"
    assert "Unable to register memory" in f["error_message"]


def test_a_verbs_call_failing_on_every_node_names_those_nodes(tmp_path: Path) -> None:
    # turingaicloud/quickstart#6: machines named by their address with dashes
    text = (
        "10-0-4-11:62452:62548 [0] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed "
        "with error No such device\n"
        "10-0-4-10:74872:74954 [0] misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed "
        "with error No such device\n"
        "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
        "device error.\n")
    f = gpu_crash.diagnose(_load(tmp_path, text)).facts
    assert f["failed_hosts"] == ["10-0-4-10", "10-0-4-11"]
    assert f["error_kind"] == "nccl_error"
