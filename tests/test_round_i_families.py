"""Families read in round i (issue 26), on real lines: XLA:TPU's out-of-memory wordings, a step
counter ended by a full stop, times of lines without one next to a failure record timed to the
second, a DataLoader worker's signal told by its rank, a torchrun command quoted as a Python
list, episodes as a step counter, and a tqdm bar's fast first refreshes."""

from __future__ import annotations

from pathlib import Path

import pytest

import traindoc
from traindoc.diagnose import gpu_crash, loss_spike, throughput
from traindoc.parse.benchmarks import parse_node_layout
from traindoc.parse.errors import parse_error
from traindoc.parse.metric_lines import parse_line


def _load(tmp_path: Path, text: str, name: str = "job.log") -> traindoc.Incident:
    log = tmp_path / name
    log.write_text(text)
    return traindoc.load(str(log))


# --- XLA:TPU out of memory ---------------------------------------------------------------------

@pytest.mark.parametrize("line, said", [
    # erfanzar/EasyDeL#78 (the compiler)
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. "
     "Ran out of memory in memory space hbm. Used 21.90G of 7.48G hbm. Exceeded hbm capacity by "
     "14.42G.", "Used 21.90G of 7.48G hbm"),
    # vllm-project/tpu-inference (the runtime allocator, through a StatusOr)
    ("RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: Error allocating device buffer: "
     "Attempting to allocate 112.00M. That was not possible. There are 97.06M free.; "
     "(1x0x0_HBM0)", "There are 97.06M free"),
    # XLA's error catalogue (a Pallas kernel's scoped vector memory)
    ("RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem while allocating on stack for "
     "%ragged_latency_optimized_all_gather_lhs_contracting_gated_matmul_kernel.18", "vmem"),
])
def test_xla_tpu_out_of_memory_is_an_oom(line: str, said: str) -> None:
    row = parse_error(line)
    assert row is not None and row["kind"] == "oom" and said in row["message"]


# --- a step counter ended by a full stop ----------------------------------------------------

def test_a_step_ended_by_a_full_stop_is_the_step() -> None:
    # MeteorsHub/GLIA-Net#17
    row = parse_line("2024-08-17 01:24:07 [MainThread] INFO [TaskAneurysmSegTrainer] - (Time per "
                     "iter: 0.92s)train iter 3010. epoch 1/200. total_loss: 0.2283 local_loss: "
                     "0.1790 global_loss: 0.0493 ap: 0.3750")
    assert row is not None and row["iteration"] == 3010 and row["loss"] == pytest.approx(0.2283)
    assert parse_line("step 3.5 loss 1.0") is None  # a decimal is still no step


# --- untimed lines beside a failure record timed to the second --------------------------------

API = ("/hkfs/home/project/hk-project-sustainebot/bm3844/miniconda3/envs/roboG_train/lib/"
       "python3.12/site-packages/torch/distributed/elastic/multiprocessing/api.py")
RULE = "=" * 60
# nilsblank/LLaMA-Factory-RoboG-v2 RoboG_3598170.err (LLaMA-Factory's CLI runs torchrun in a
# subprocess: its CalledProcessError comes after torchrun's record, which is timed to the second)
ROBOG = "\n".join([
    "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 48.00 MiB. GPU 2 has "
    "a total capacity of 39.49 GiB of which 6.00 MiB is free. Including non-PyTorch memory, this "
    "process has 39.45 GiB memory in use.",
    "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has "
    "a total capacity of 39.49 GiB of which 6.00 MiB is free. Including non-PyTorch memory, this "
    "process has 39.45 GiB memory in use.",
    f"W1025 02:04:00.016000 1325594 {API}:900] Sending process 1325598 closing signal SIGTERM",
    f"W1025 02:04:00.017000 1325594 {API}:900] Sending process 1325599 closing signal SIGTERM",
    f"E1025 02:04:00.483000 1325594 {API}:874] failed (exitcode: 1) local_rank: 2 (pid: "
    "1325600) of binary: /home/bm3844/miniconda3/envs/roboG_train/bin/python3.12",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    RULE, "/home/bm3844/code/LLaMA-Factory-RoboG-v2/src/llamafactory/launcher.py FAILED",
    "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60,
    "Root Cause (first observed failure):", "[0]:",
    "  time      : 2025-10-25_02:04:00", "  host      : hkn0405.localdomain",
    "  rank      : 2 (local_rank: 2)", "  exitcode  : 1 (pid: 1325600)",
    "  error_file: <N/A>",
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    RULE,
    "subprocess.CalledProcessError: Command '['torchrun', '--nnodes', '1', '--node_rank', '0', "
    "'--nproc_per_node', '4', '--master_addr', '127.0.0.1', '--master_port', '35859', "
    "'/home/bm3844/code/LLaMA-Factory-RoboG-v2/src/llamafactory/launcher.py', 'x.yaml']' "
    "returned non-zero exit status 1.",
    "srun: error: hkn0405: task 0: Exited with exit code 1", ""])


def test_a_line_after_a_record_timed_to_the_second_is_no_earlier_than_the_lines_before(
        tmp_path: Path) -> None:
    f = gpu_crash.diagnose(_load(tmp_path, ROBOG, "RoboG_3598170.err")).facts
    assert f["error_kind"] == "oom" and "CUDA out of memory" in f["error_message"]
    assert 2 in f["failed_ranks"] and f["failed_hosts"] == ["hkn0405.localdomain"]


def test_a_torchrun_command_quoted_as_a_python_list_states_the_layout() -> None:
    rows = parse_node_layout(ROBOG.splitlines()[-2])
    assert rows is not None
    layout = {r["metric"]: r["value"] for r in rows}
    assert layout["layout:nnodes"] == 1 and layout["layout:nproc_per_node"] == 4


# --- a DataLoader worker's signal, told by its rank -------------------------------------------

# chrisindris/LLaMA-Factory-LFS kn171 job 1542197 (8 ranks on one node; the workers' own ERROR
# lines first, then the ranks' tracebacks, then torchrun's record)
SHM = ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
       "shared memory (shm).")
BUS = "\n".join([
    " 62%|██████▏   | 145/233 [3:56:59<2:20:29, 95.79s/it]", SHM, SHM,
    "[rank6]: Traceback (most recent call last):",
    "[rank6]:   File \"/opt/conda/lib/python3.11/site-packages/torch/utils/data/_utils/signal_"
    "handling.py\", line 73, in handler",
    "[rank6]:     _error_if_any_worker_fails()",
    "[rank6]: RuntimeError: DataLoader worker (pid 48170) is killed by signal: Bus error. It is "
    "possible that dataloader's workers are out of shared memory. Please try to raise your "
    "shared memory limit.",
    "[rank4]: RuntimeError: DataLoader worker (pid 48154) is killed by signal: Bus error. It is "
    "possible that dataloader's workers are out of shared memory. Please try to raise your "
    "shared memory limit.",
    "Root Cause (first observed failure):", "[0]:",
    "  time      : 2025-12-03_20:26:01", "  host      : kn171.paice.vectorinstitute.ai",
    "  rank      : 4 (local_rank: 4)", "  exitcode  : 1 (pid: 42286)",
    "  error_file: <N/A>",
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    RULE,
    "subprocess.CalledProcessError: Command '['torchrun', '--nnodes', '1', '--node_rank', '0', "
    "'--nproc_per_node', '8', '--master_addr', '127.0.0.1', '--master_port', '29500', "
    "'/app/src/llamafactory/launcher.py', 'x.yaml']' returned non-zero exit status 1.", ""])


def test_a_worker_signal_names_the_rank_that_reports_it(tmp_path: Path) -> None:
    f = gpu_crash.diagnose(_load(tmp_path, BUS)).facts
    assert f["error_kind"] == "signal" and 6 in f["failed_ranks"]
    assert "killed by signal: Bus error" in f["error_message"]
    assert "insufficient shared memory" in f["error_message"]  # the worker's words kept
    # torchrun says one node, the log names one machine: every rank ran there
    assert f["failed_hosts"] == ["kn171.paice.vectorinstitute.ai"]


# --- episodes as a step counter -----------------------------------------------------------

def test_episodes_count_steps_where_nothing_else_does(tmp_path: Path) -> None:
    # isaacbilsel/PyBoy-RL nohup.out (Kirby DQN); "Steps this episode" is no counter
    line = ("Episode {e} - Steps this episode {s} - Epsilon 1 - Learning Rate 0.000192 - "
            "Cummulative Reward 9996.58 - Max Length 3 - Mean Loss {loss} - Mean Q Value -0.4 - "
            "Time Delta 20.565 - Time 2025-04-28T02:38:15")
    row = parse_line(line.format(e=112, s=78332, loss="nan"))
    assert row is not None and row["iteration"] == 112
    text = "".join(line.format(e=e, s=1000 * e + 479, loss="nan" if e >= 6 else f"{2 - e / 10}")
                   + "\n" for e in range(9))
    f = loss_spike.diagnose(_load(tmp_path, text)).facts
    assert f["nan_iterations"] == [6, 7, 8] and f["last_iteration"] == 8
    # a counter of another kind outranks it
    assert parse_line("episode 3, step 500, loss 2.0")["iteration"] == 500  # type: ignore[index]


# --- a tqdm bar's fast first refreshes -------------------------------------------------------

def test_a_bars_first_second_of_fast_refreshes_is_start_up(tmp_path: Path) -> None:
    # asteriscrack/BipedRobot nohup log (D4PG; one line of carriage returns): 13 refreshes at
    # ~6,500 step/s in the first 1.5 s, then ~540 step/s for the rest of the run
    total = 30000000
    parts = [f"Training:   0%|          | {640 + 768 * i}/{total} [00:0{i // 7}<1:15:00, "
             f"{6500 + 20 * (i % 5):.2f}step/s]" for i in range(13)]
    step, t = 9856, 2.0
    for i in range(3000):
        step += 128
        t += 128 / 540
        rate = 540 + 10 * ((i * 7) % 3) - 10
        parts.append(f"Training:   0%|          | {step}/{total} "
                     f"[{int(t) // 60:02d}:{int(t) % 60:02d}<15:00:00, {rate:.2f}step/s]")
    a = throughput.analyse(_load(tmp_path, "\r".join(parts) + "\n"))
    assert a.change is None


# --- Ascend's fftsplus task timeout, torch_npu's rank on a prefixed line before it -------------

ASCEND_43 = "".join(f"worker-1: {line}\n" for line in [
    "RuntimeError: npuSynchronizeDevice:torch_npu/csrc/core/npu/NPUStream.cpp:363 NPU error, "
    "error code is 107020",
    "[ERROR] 2024-07-03-11:28:40 (PID:639, Device:0, RankID:16) ERR00100 PTA call acl api failed.",
    "EI9999: Inner Error!",
    "EI9999: 2024-07-03-11:28:40.419.527  The error from device(chipId:0, dieId:0), serial number "
    "is 1, hccl fftsplus task timeout occurred during task execution, stream_id:4, sq_id:4, "
    "task_id:5, stuck notify num:7, timeout:1836.[FUNC:ProcessStarsHcclFftsPlusTimeoutErrorInfo]"
    "[FILE:device_error_proc.cc][LINE:1389]"])


def test_an_hccl_fftsplus_timeout_takes_the_rank_of_torch_npus_line(tmp_path: Path) -> None:
    # Ascend/pytorch#43 (pdsh-style "worker-1: " on every line; the timeout's own text is a
    # needle of the record it continues)
    c = _load(tmp_path, ASCEND_43).collectives
    assert list(c["rank"]) == [16] and list(c["state"]) == ["timed_out"]
    assert list(c["host"]) == ["worker-1"]


# --- BasicSR's epoch end -------------------------------------------------------------------

def test_basicsrs_epoch_end_counts_the_epochs_where_nothing_else_does() -> None:
    # victorca25/traiNNer#72
    row = parse_line("22-12-06 08:47:56.875 - INFO: End of epoch 134 / 500000 \t Time Taken: "
                     "4.9714 sec")
    assert row is not None and row["iteration"] == 134 and row["event"] == "epoch"
    assert row["total_iterations"] == 500000 and row["elapsed_s"] == pytest.approx(4.9714)


# --- launchers' own words for an exit --------------------------------------------------------

def test_paddles_abort_line_is_the_message(tmp_path: Path) -> None:
    # PaddlePaddle/PaddleClas#727
    text = ("INFO 2021-05-16 22:14:00,648 launch_utils.py:307] terminate all the procs\n"
            "ERROR 2021-05-16 22:14:00,649 launch_utils.py:545] ABORT!!! Out of all 4 trainers, "
            "the trainer process with rank=[1, 2, 3] was aborted. Please check its log.\n")
    f = gpu_crash.diagnose(_load(tmp_path, text)).facts
    assert f["failed_ranks"] == [1, 2, 3]
    assert f["error_message"].startswith("ABORT!!! Out of all 4 trainers")


@pytest.mark.parametrize("line, rank, host, code", [
    ("x4512c5s2b0n0: rank 6 exited with code 1", 6, "x4512c5s2b0n0", 1),  # saforem2/mmm (Aurora)
    ("x3200c0s19b1n0.hsn.cm.sirius.alcf.anl.gov: rank 0 exited with code 134", 0,
     "x3200c0s19b1n0.hsn.cm.sirius.alcf.anl.gov", 134),
])
def test_pals_names_the_rank_that_exited(line: str, rank: int, host: str, code: int) -> None:
    from traindoc.parse.errors import parse_exit

    row = parse_exit(line)
    assert isinstance(row, dict)
    assert (row["rank"], row["host"], row["exitcode"]) == (rank, host, code)


# --- the ranks' copies of one overflow, a numbered overflow as the last step -----------------

DS_NOTE = ("[2023-10-31 08:58:26,908] [INFO] [unfused_optimizer.py:207:step] [deepspeed] fp16 "
           "dynamic loss scale overflow! Skipping step. Attempted loss scale: 8192.0, reducing to "
           "4096.0")


def test_each_ranks_copy_of_one_overflow_is_one_step(tmp_path: Path) -> None:
    # wangshuai09/notebook: DeepSpeed's CIFAR example on four Ascend NPUs, no rank prefixes
    text = "\n".join([
        DS_NOTE, DS_NOTE, DS_NOTE,
        "[2023-10-31 08:58:26,908] [INFO] [unfused_optimizer.py:281:_update_scale] Grad overflow "
        "on iteration: 13437",
        DS_NOTE,
        "[2023-10-31 08:58:33,237] [INFO] [logging.py:96:log_dist] [Rank 0] step=14000, "
        "skipped=25, lr=[0.001], mom=[0.9]",
        *["[2023-10-31 08:58:34,113] [INFO] [unfused_optimizer.py:281:_update_scale] Grad "
          "overflow on iteration: 14075"] * 3,
        DS_NOTE, DS_NOTE, DS_NOTE, ""])
    f = loss_spike.diagnose(_load(tmp_path, text)).facts
    assert f["skipped_iterations"] == [13437, 14075]
    assert f["last_iteration"] == 14075  # the numbered overflow after the last step line


# --- Open MPI's first failed process with its exit code; every step skipped ------------------

def test_open_mpis_first_process_takes_the_exit_code_under_it(tmp_path: Path) -> None:
    # ChenRocks/UNITER#31 (Horovod under mpirun; rank 1's lines only the shutdown's cascade)
    text = "\n".join([
        "[1,1]<stderr>:RuntimeError: Horovod has been shut down. This was caused by an exception "
        "on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor after "
        "one of the ranks finished execution.",
        "-" * 74,
        "mpirun detected that one or more processes exited with non-zero status, thus causing",
        "the job to be terminated. The first process to do so was:", "",
        "  Process name: [[50371,1],0]", "  Exit code:    1", "-" * 74, ""])
    inc = _load(tmp_path, text)
    assert list(inc.exits["rank"]) == [0] and list(inc.exits["exitcode"]) == [1]
    f = gpu_crash.diagnose(inc).facts
    assert f["failed_ranks"] == [0] and f["error_kind"] == "python"


def test_every_step_skipped_to_the_end_is_a_run_not_training(tmp_path: Path) -> None:
    # ourboros-alignment-team/RWKV-RM-Copilot's wandb output.log: DeepSpeed's counter equals
    # the step count on every line
    text = "".join(
        f"[2025-04-09 01:{39 + n // 60:02d}:{n % 60:02d},827] [INFO] [logging.py:96:log_dist] "
        f"[Rank 0] step={n}, skipped={n}, lr=[1e-05, 1e-05], mom=[(0.9, 0.99), (0.9, 0.99)]\n"
        for n in range(10, 260, 10))
    r = loss_spike.diagnose(_load(tmp_path, text))
    assert r.facts["skipped_iterations"][:3] == [1, 2, 3] and r.facts["last_iteration"] == 250
    assert "was skipped" in r.verdict and "not training" in r.verdict
    assert [a.id for a in r.actions][0] == "stop_skipping"


# --- a step within the series' own spread; a bar-only series counted by triage -----------------

def test_a_step_within_the_series_spread_is_no_throughput_incident() -> None:
    from traindoc.diagnose.throughput.change import Change, material

    # ning-guo/hotpotqa-agent's GRPO run: 62-90 s a step, the median 71.6 -> 74.9 s
    wander = Change(index=497, baseline=71.63, degraded=74.92, drop_pct=4.39, z=6.9, sigma=7.28,
                    n_before=497, n_after=1379, shape="step", onset=494, recovered=False)
    assert not material(wander)
    quiet = Change(index=50, baseline=1.0, degraded=1.045, drop_pct=4.3, z=30.0, sigma=0.005,
                   n_before=50, n_after=50, shape="step", onset=50, recovered=False)
    assert material(quiet)  # the same step in a quiet series is one


def test_triage_counts_a_tqdm_only_series_as_throughput_figures(tmp_path: Path) -> None:
    from traindoc.diagnose import triage

    bars = "\r".join(f" {i * 100 // 400:3d}%|#         | {i}/400 [{i // 60:02d}:{i % 60:02d}"
                     f"<10:00, {1.0 + (i % 7) / 100:.2f}s/it]" for i in range(1, 401))
    r = triage.diagnose(_load(tmp_path, bars + "\n"))
    assert not any(n["class"] == "throughput" for n in r.facts.get("not_checked") or [])
