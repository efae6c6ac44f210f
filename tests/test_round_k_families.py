"""Families read in round k (issue 26), on real lines: a caught exception that recurs after the
run went on past it, a bare "total" as a step line's loss, a save of "models", an HF summary's
steps within the rounding of its rate, and a step printed before an HF dict."""

from __future__ import annotations

from pathlib import Path

import traindoc
from traindoc.diagnose import gpu_crash
from traindoc.parse.checkpoints import parse_checkpoint
from traindoc.parse.metric_lines import parse_line


def _load(tmp_path: Path, text: str, name: str = "job.log") -> traindoc.Incident:
    log = tmp_path / name
    log.write_text(text)
    return traindoc.load(str(log))


# yuzhaouoe/GUI-Cursor-Moving's verl agent loop (corpus
# gpu_crash-gui-cursor-verl-agentloop-parse-errors-healthy): a worker logs the exception it
# caught while parsing the policy's answer, every rollout, the last ones after the last step
CAUGHT = """(CursorLoopWorker pid=57714) ERROR:2026-03-26 21:59:41,526:Traceback (most recent call last):
(CursorLoopWorker pid=57714)   File "/mnt/ceph_rbd/GUI-Cursor-Moving/cursor/env_and_state.py", line 270, in _extract_action_and_update_cursor
(CursorLoopWorker pid=57714)     action, action_x, action_y = extractor(output_text)
(CursorLoopWorker pid=57714) TypeError: cannot unpack non-iterable NoneType object
(CursorLoopWorker pid=57714) ERROR:2026-03-26 21:59:41,526:Error extracting action for item 35532
(TaskRunner pid=38606) step:1 - actor/pg_loss:0.012 - actor/grad_norm:0.31 - training/global_step:1
(TaskRunner pid=38606) step:2 - actor/pg_loss:0.011 - actor/grad_norm:0.29 - training/global_step:2
(CursorLoopWorker pid=57716) ERROR:2026-03-26 22:35:41,526:Traceback (most recent call last):
(CursorLoopWorker pid=57716)   File "/mnt/ceph_rbd/GUI-Cursor-Moving/cursor/env_and_state.py", line 270, in _extract_action_and_update_cursor
(CursorLoopWorker pid=57716)     action, action_x, action_y = extractor(output_text)
(CursorLoopWorker pid=57716) TypeError: cannot unpack non-iterable NoneType object
(CursorLoopWorker pid=57716) ERROR:2026-03-26 22:35:41,526:Error extracting action for item 61154
"""


def test_a_caught_exception_that_recurs_is_no_failure(tmp_path: Path) -> None:
    facts = gpu_crash.report(gpu_crash.analyse(_load(tmp_path, CAUGHT))).facts
    assert facts["error_kind"] is None
    assert facts["last_iteration"] == 2


def test_the_same_exception_before_an_exit_is_the_failure(tmp_path: Path) -> None:
    died = CAUGHT + "E1106 22:35:50.000000 1 torch/distributed/elastic/multiprocessing/api.py:" \
        "882] failed (exitcode: 1) local_rank: 0 (pid: 57716) of binary: /usr/bin/python\n"
    facts = gpu_crash.report(gpu_crash.analyse(_load(tmp_path, died))).facts
    assert facts["error_kind"] == "python"


def test_a_bare_total_is_the_step_lines_loss() -> None:
    # gitAIPattern/fer-ssl logs/train.log: its per-batch line prints the summed loss as "total"
    row = parse_line("[epoch: 144/200, iter: 175/640] total: 1.013207 ")
    assert row is not None and row["iteration"] == 175 and row["loss"] == 1.013207
    # a total with a unit is a time, and a loss beside it wins
    row = parse_line("step 10 total: 3.2s loss: 2.0")
    assert row is not None and row["loss"] == 2.0
    assert parse_line("Self CPU time total: 2.804s") is None


def test_a_save_of_models_names_its_checkpoint() -> None:
    # LLaVA-Med's LoRA trainer (corpus gpu_crash-eso-llava-ds-lora-healthy)
    row = parse_checkpoint("save models to /date/jc/models/MedLLMs/LLaVA-Med/checkpoints/"
                           "240818e2-lora-llava-v1.6-vicuna-13b/checkpoint-900 ")
    assert row is not None and row["iteration"] == 900


def _hf_run(n: int, runtime: float, rate: str, prefix: str = "") -> str:
    lines = [f"{prefix(i) if callable(prefix) else ''}{{'loss': {2.0 - i / 1000:.4f}, "
             f"'learning_rate': 1e-05, 'epoch': {10 * i / n:.2f}}}" for i in range(1, n + 1)]
    lines.append(f"{{'train_runtime': {runtime}, 'train_samples_per_second': 2.553, "
                 f"'train_steps_per_second': {rate}, 'train_loss': 0.05, 'epoch': 10.0}}")
    return "\n".join(lines) + "\n"


def test_a_summary_rate_rounded_leaves_the_count_of_dicts(tmp_path: Path) -> None:
    # 11174.986 s at 0.081 steps/s is 900 to 911 steps: the 900 dicts, one a step, say which
    facts = gpu_crash.report(gpu_crash.analyse(_load(tmp_path, _hf_run(900, 11174.986,
                                                                       "0.081")))).facts
    assert facts["last_iteration"] == 900


def test_a_step_printed_before_a_dict_is_its_step(tmp_path: Path) -> None:
    # oobabooga/text-generation-webui's training callback, as a note quoted it (corpus
    # loss_spike-tgwebui-llama1b-lora-grad-norm-inf): "Step:    683 {'loss': …}"
    text = _hf_run(171, 13893.3078, "0.012", lambda i: f"Step:    {4 * i - 1:>4} ")
    inc = _load(tmp_path, text)
    assert gpu_crash.report(gpu_crash.analyse(inc)).facts["last_iteration"] == 683


# -- batch 2026-11-29e's families ---------------------------------------------------------------

def test_a_step_tag_with_fields_after_it_is_no_olmo_header(tmp_path: Path) -> None:
    # LeeChangmin0310/RARE-3D's W&B output.log (corpus loss_spike-rldoom-*): "[step=N]" then the
    # episode's key=value fields on the same line; OLMo's header stands alone on its line
    text = ("[step=1] episode=1.0000 return=-102.3650 length=13.0000 global_step=13.0000\n"
            "[step=1998] episode=1998.0000 return=-85.0784 length=13.0000 global_step=59539.0000 "
            "loss=40981.3398 value_loss=40981.3398\n")
    it = _load(tmp_path, text).iterations
    assert it["loss"].dropna().tolist() == [40981.3398]
    assert it["iteration"].max() == 59539


def test_swin_s_train_counter_after_its_word() -> None:
    # X-CLIP (Swin Transformer's logger): "Train: [epoch/epochs][batch/batches]"
    row = parse_line("[2025-10-30 01:38:23 ViT-B/32] (train.py 183): INFO Train: [19/30][1750/1819]"
                     "\teta 0:00:41 lr 0.000002075\ttime 0.5652 (0.5948)\ttot_loss 0.0718 (0.1047)"
                     "\tmem 4896MB")
    assert row is not None
    assert (row["iteration"], row["total_iterations"], row["epoch"], row["loss"]) == (
        1750, 1819, 19.0, 0.0718)


def test_the_epoch_and_batch_in_one_bracket() -> None:
    # I-JEPA's logger and PyTorch's CIFAR-10 tutorial
    row = parse_line("INFO:root:[137,   520] loss: 0.186 masks: 68.5 44.3 [wd: 1.94e-01] "
                     "[lr: 6.17e-04] [mem: 4.37e+04] (433.7 ms)")
    assert row is not None and (row["iteration"], row["epoch"], row["loss"]) == (520, 137.0, 0.186)
    row = parse_line("[1,  2000] loss: 2.186")
    assert row is not None and (row["iteration"], row["epoch"]) == (2000, 1.0)
    assert parse_line("ranks [0, 1] loss: 3") is None


def test_milliseconds_per_iteration_after_the_value() -> None:
    # ethellight565/nanoGPT-seis: "[train] iter 4100: loss 2.5266 2942 ms/iter"
    row = parse_line("[train] iter 4100: loss 2.5266 2942 ms/iter")
    assert row is not None and row["elapsed_s"] == 2.942


def test_vllm_s_allocator_out_of_memory() -> None:
    from traindoc.parse.errors import parse_error
    row = parse_error("CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62")
    assert row is not None and row["kind"] == "oom" and row["code"] == "cuda_oom"


# koko0000000/elastic-verl-spot's verl log under Ray (corpus gpu_crash-elastic-verl-spot-4090-*):
# the workers print no rank; NCCL's init lines give each pid's rank in the world communicator
VERL_NCCL = """(WorkerDict pid=903150) gpu4090-x:903150:903150 [0] NCCL INFO comm 0x7f033d3dd730 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0
(WorkerDict pid=903151) gpu4090-x:903151:903151 [1] NCCL INFO comm 0x7f99613ad7b0 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0
(WorkerDict pid=903151) gpu4090-x:903151:903160 [1] NCCL WARN Error: failed to extend /dev/shm/nccl-abc to 9637892 bytes, error: No space left on device (28)
(WorkerDict pid=903150) gpu4090-x:903150:903161 [0] NCCL WARN Error: failed to extend /dev/shm/nccl-def to 9637892 bytes, error: No space left on device (28)
"""


def test_nccl_s_world_communicator_gives_a_pid_its_rank(tmp_path: Path) -> None:
    from traindoc.diagnose.common import nccl_world_ranks
    inc = _load(tmp_path, VERL_NCCL)
    assert nccl_world_ranks(inc) == {903150: 0, 903151: 1}
    facts = gpu_crash.report(gpu_crash.analyse(inc)).facts
    assert facts["failed_ranks"] and set(facts["failed_ranks"]) <= {0, 1}


# harryyuh/CausalDiffAE's SLURM output (improved-diffusion's logger, corpus
# gpu_crash-causaldiffae-gilbreth-nonfinite-loss): a table between rules, its keys sorted, the
# step to 3 significant digits; the saves name an EMA rate, no step
DIFFUSION = """-------------------------
| grad_norm  | 0.0312   |
| loss       | 0.0113   |
| samples    | 3.44e+05 |
| step       | 2.15e+04 |
-------------------------
saving model 0...
saving model 0.9999...
-------------------------
| grad_norm  | 190      |
| loss       | 157      |
| samples    | 3.61e+05 |
| step       | 2.26e+04 |
-------------------------
Non-finite loss detected, stopping training.
"""


def test_improved_diffusion_s_table_and_saves(tmp_path: Path) -> None:
    inc = _load(tmp_path, DIFFUSION)
    it = inc.iterations
    assert it[["iteration", "loss", "grad_norm"]].values.tolist() == [
        [21500, 0.0113, 0.0312], [22600, 157.0, 190.0]]
    facts = gpu_crash.report(gpu_crash.analyse(inc)).facts
    assert facts["last_iteration"] == 22600
    assert facts["last_checkpoint_iteration"] == 21500


def test_a_line_of_many_steps_is_no_step_line(tmp_path: Path) -> None:
    # mlcommons/submissions_algorithms (AlgoPerf, corpus timeout-algoperf-jax-fastmri-*): the
    # step lines, then the trial's closing summary of every evaluation's step
    text = ("I0307 16:49:42.675195 140390686496512 logging_writer.py:48] [32800] global_step=32800, "
            "grad_norm=0.1294979602098465, loss=0.2526533603668213\n"
            "I0307 16:49:47.620779 140545907463360 submission_runner.py:648] Metrics: "
            "{'eval_results': [(1, {'train/loss': 1.21, 'global_step': 1}), (245, {'train/loss': "
            "0.31, 'global_step': 245}), (287, {'train/loss': 0.31, 'global_step': 287})], "
            "'global_step': 32839}\n")
    from traindoc.diagnose.common import last_progress
    assert last_progress(_load(tmp_path, text)).step == 32800


def test_the_last_checkpoint_is_the_step_where_nothing_else_counts(tmp_path: Path) -> None:
    # xuyuzhuang11/OneBit#8: DeepSpeed commits a checkpoint, then rank 6's watchdog times out
    text = ("[torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint global_step5000 is ready now!\n"
            "[rank6]:[E ProcessGroupNCCL.cpp:523] [Rank 6] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=12029440, OpType=_ALLGATHER_BASE, NumelIn=512, NumelOut=4096, "
            "Timeout(ms)=1800000) ran for 1808499 milliseconds before timing out.\n")
    from traindoc.diagnose import timeout
    assert timeout.report(timeout.analyse(_load(tmp_path, text))).facts["last_step"] == 5000


def test_set_up_bars_alone_count_no_step(tmp_path: Path) -> None:
    # gnosia93/training-on-eks: rank 3 runs out of memory while DeepSpeed sets up, after the
    # dataset's bars
    text = ("Generating train split: 100%|██████████| 36718/36718 [00:00<00:00, 988900.72 examples/s]\n"
            "Map: 100%|██████████| 36718/36718 [00:02<00:00, 16263.00 examples/s]\n"
            "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB.\n")
    facts = gpu_crash.report(gpu_crash.analyse(_load(tmp_path, text))).facts
    assert facts["error_kind"] == "oom" and facts["last_iteration"] is None


def test_tracebacks_after_the_end_of_training_are_its_teardown(tmp_path: Path) -> None:
    # XDpaddle/irn_paddle (ClassSR, BasicSR's logger, under PaddleCloud)
    text = ("21-09-19 01:00:55.478 - INFO: [epoch:  5, iter: 200,000, lr:(1.378e-04,)] l_pix: "
            "5.5922e+00 loss: 2.2686e+01 \n"
            "21-09-19 01:00:55.481 - INFO: Saving models and training states.\n"
            "21-09-19 01:01:10.393 - INFO: End of training.\n"
            "ERROR:root:DataLoader reader thread raised an exception!\n"
            "Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.7/threading.py", line 926, in _bootstrap_inner\n'
            "RuntimeError: DataLoader 11 workers exit unexpectedly, pids: 59148, 59149\n"
            "[INFO]: train job success!\n")
    facts = gpu_crash.report(gpu_crash.analyse(_load(tmp_path, text))).facts
    assert facts["error_kind"] is None
    assert facts["last_iteration"] == 200000 and facts["last_checkpoint_iteration"] == 200000


def test_paddle_s_signal_words_name_the_signal() -> None:
    # txyugood/Neighbor2Neighbor_Paddle's train.log: Paddle's FatalError, its SignalInfo below
    from traindoc.parse.errors import parse_error
    row = parse_error("FatalError: `Termination signal` is detected by the operating system.")
    assert row is not None and row["code"] == "SIGTERM" and "(SIGTERM)" in row["message"]


# mlcommons/submissions_algorithms (AlgoPerf's schedule-free AdamW, corpus
# timeout-algoperf-sfadamw-deepspeech-rank6-oom-straggler): rank 6's traceback has no time but is
# printed above the others' watchdog timeouts; torchrun's record of its exit comes a minute later
OOM_THEN_WATCHDOGS = """[rank6]: Traceback (most recent call last):
[rank6]:   File "/usr/local/lib/python3.11/site-packages/torch/_tensor.py", line 581, in backward
[rank6]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.51 GiB. GPU 6 has a total capacity of 15.77 GiB of which 1.93 GiB is free.
[rank4]:[E318 18:39:29.863767211 ProcessGroupNCCL.cpp:616] [Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=454468, OpType=ALLREDUCE, NumelIn=2364928, NumelOut=2364928, Timeout(ms)=600000) ran for 600015 milliseconds before timing out.
[rank5]:[E318 18:39:29.863732260 ProcessGroupNCCL.cpp:616] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=454468, OpType=ALLREDUCE, NumelIn=2364928, NumelOut=2364928, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
E0318 18:40:21.513000 140 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 6 (pid: 2290) of binary: /usr/local/bin/python
"""


def test_an_untimed_failure_printed_before_timed_lines_came_first(tmp_path: Path) -> None:
    from traindoc.diagnose import triage
    a = triage.analyse(_load(tmp_path, OOM_THEN_WATCHDOGS))
    assert a.cause == "gpu_crash"
