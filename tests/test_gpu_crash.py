"""GPU-crash parsers (errors, exits, Xid, checkpoints) and traindoc.diagnose.gpu_crash.

Example lines are real wordings (sources in the docstrings of traindoc.parse.errors / xid /
checkpoints); the multi-rank scenarios are built from them.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pandas as pd
import pytest

import traindoc
from conftest import CORPUS, DATA, ROOT, SEEDS
from traindoc import xid_catalog
from traindoc.diagnose import common, gpu_crash
from traindoc.diagnose.common import task_hosts
from traindoc.diagnose.gpu_crash import checkpoints as gc_checkpoints
from traindoc.diagnose.gpu_crash import events as gc_events
from traindoc.parse import checkpoints, errors, xid

# --- helpers --------------------------------------------------------------------------------------


def load_text(tmp_path: Path, text: str, name: str = "job.log") -> traindoc.Incident:
    p = tmp_path / name
    p.write_text(text)
    return traindoc.load(p)


def reaches(parsers, line: str) -> bool:
    """The loader hands ``line`` to one of ``parsers`` (a needle of it is in the line)."""
    return any(n in line for p in parsers for n in p.needles)


def err(line: str) -> dict:
    assert reaches(errors.PARSERS[:1], line), line
    row = errors.parse_error(line)
    assert row is not None, line
    return row


def test_line_needles_cover_every_pattern() -> None:
    for code, _kind, needle, _regex in errors.ERROR_PATTERNS:
        assert any(n in needle for n in errors.LINE_NEEDLES), code


SEED_BLOCK = """\
[default3]:terminate called after throwing an instance of 'c10::CUDAError'
[default3]: what(): CUDA error: unknown error
[default3]:Exception raised from query at ../aten/src/ATen/cuda/CUDAEvent.h:95 (most recent call first):
[default3]:frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x42 (0x1518a06137d2 in /gpfswork/rech/six/commun/conda/tr11-176B-ml/lib/python3.8/site-packages/torch/lib/libc10.so)
[default3]:frame #1: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x11a (0x15190c6c29ea in /gpfswork/rech/six/commun/conda/tr11-176B-ml/lib/python3.8/site-packages/torch/lib/libtorch_cuda_cpp.so)
[default3]:frame #2: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0x50 (0x15190c6c4fd0 in /gpfswork/rech/six/commun/conda/tr11-176B-ml/lib/python3.8/site-packages/torch/lib/libtorch_cuda_cpp.so)
[default3]:frame #3: c10d::ProcessGroupNCCL::workCleanupLoop() + 0x145 (0x15190c6c6265 in /gpfswork/rech/six/commun/conda/tr11-176B-ml/lib/python3.8/site-packages/torch/lib/libtorch_cuda_cpp.so)
[default3]:frame #4: <unknown function> + 0xc2ba3 (0x15191b339ba3 in /lib64/libstdc++.so.6)
[default3]:frame #5: <unknown function> + 0x814a (0x15191c77d14a in /lib64/libpthread.so.0)
[default3]:frame #6: clone + 0x43 (0x15191c4acdc3 in /lib64/libc.so.6)
"""


# --- parsers: errors ------------------------------------------------------------------------------

def test_every_parser_example_parses() -> None:
    for parser in (*errors.PARSERS, *xid.PARSERS, *checkpoints.PARSERS):
        assert parser.example and any(n in parser.example for n in parser.needles), parser.name
        assert parser.parse(parser.example) is not None, parser.name


def test_seed_c10_block_is_one_row_with_frames(tmp_path: Path) -> None:
    inc = load_text(tmp_path, SEED_BLOCK)
    assert inc.account["unparsed_lines"] == 0
    e = inc.errors
    assert len(e) == 1
    row = e.iloc[0]
    assert (row["rank"], row["kind"], row["code"], row["message"]) == (
        3, "cuda_error", "cuda_error", "CUDA error: unknown error")
    assert row["source"].endswith(":2")  # points at the what() line
    assert row["frames"][0] == "raised from query at ../aten/src/ATen/cuda/CUDAEvent.h:95"
    assert "c10d::ProcessGroupNCCL::workCleanupLoop() (libtorch_cuda_cpp.so)" in row["frames"]
    assert len(row["frames"]) == 8


def test_seed_file_in_the_shared_seeds_loads(tmp_path: Path) -> None:
    seed = next(SEEDS.glob("001_*.txt"), None)
    if seed is None:
        pytest.skip(f"seeds not found at {SEEDS} (set TRAINDOC_SEEDS)")
    inc = traindoc.load(seed)
    cuda = inc.errors[inc.errors["kind"] == "cuda_error"]
    assert list(cuda["rank"]) == [3]
    assert list(cuda["message"]) == ["CUDA error: unknown error"]


def test_torch2_watchdog_cuda_error_line() -> None:
    # sgl-project/sglang#8296, torch 2.5 wording
    line = ("[rank1]:[E519 05:58:22.475481966 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID "
            "0(default_pg) Rank 1] Process group watchdog thread terminated with exception: CUDA "
            "error: an illegal memory access was encountered")
    row = err(line)
    assert (row["kind"], row["code"], row["rank"]) == ("cuda_error", "cuda_error", 1)
    assert row["message"] == "CUDA error: an illegal memory access was encountered"
    # A non-default process group's tag names a group rank, not a global one.
    sub = err("[PG ID 2 PG GUID 3 Rank 1] Process group watchdog thread terminated with "
              "exception: CUDA error: an illegal memory access was encountered")
    assert "rank" not in sub


def test_terminate_block_classifies_nccl_message(tmp_path: Path) -> None:
    # tatsu-lab/stanford_alpaca#207 (torch 1.13, one physical line per message)
    text = ("terminate called after throwing an instance of 'std::runtime_error'\n"
            "  what():  NCCL error: remote process exited or there was a network error, NCCL "
            "version 2.14.3\n")
    e = load_text(tmp_path, text).errors
    assert list(e["code"]) == ["nccl_remote"]
    assert e.iloc[0]["message"].startswith("NCCL error: remote process exited")


@pytest.mark.parametrize(("line", "kind", "code", "message"), [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.22 GiB. GPU 0 has a total "
     "capacity of 15.77 GiB of which 959.44 MiB is free. Process 12447 has 14.83 GiB memory in "
     "use. Of the allocated memory 14.01 GiB is allocated by PyTorch, and 472.05 MiB is reserved "
     "by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
     "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
     "oom", "cuda_oom", None),
    ("RuntimeError: CUDA error: out of memory", "oom", "cuda_oom", "CUDA error: out of memory"),
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered", "ecc",
     "cuda_ecc_uncorrectable", "CUDA error: uncorrectable ECC error encountered"),
    ("[rank7]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
     "NCCLUtils.hpp:275, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL "
     "version 2.20.5", "nccl_error", "nccl_unhandled_cuda",
     "NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version "
     "2.20.5"),
    ("[rank7]: ncclUnhandledCudaError: Call to CUDA function failed.", "nccl_error",
     "nccl_unhandled_cuda", "ncclUnhandledCudaError: Call to CUDA function failed."),
    ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
     "ProcessGroupNCCL.cpp:1275, internal error, NCCL version 2.14.3", "nccl_error",
     "nccl_internal", "NCCL error: internal error, NCCL version 2.14.3"),
    ("[rank3]: ncclRemoteError: A call failed possibly due to a network error or a remote "
     "process exiting prematurely.", "nccl_error", "nccl_remote", None),
    ("RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, "
     "unhandled system error, NCCL version 2.10.3", "nccl_error", "nccl_system", None),
    ("Remapping Failure Occurred        : Yes", "ecc", "row_remap_failure", None),
    ("| Error                     | GPU 3 has uncorrectable memory errors and row  |", "ecc",
     "dcgm_uncorrectable_memory", "GPU 3 has uncorrectable memory errors"),
    ("[Tue May 14 03:12:30 2024] Memory cgroup out of memory: Killed process 48213 (python3) "
     "total-vm:1234kB, anon-rss:99kB", "oom", "host_oom_killer", None),
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=11300781.0. Some of the step tasks "
     "have been OOM Killed.", "oom", "slurm_oom_kill",
     "Detected 1 oom_kill event in StepId=11300781.0"),
    ("slurmstepd: error: Detected 2 oom-kill event(s) in step 3756240.batch cgroup.", "oom",
     "slurm_oom_kill", None),
    ("Fatal Python error: Segmentation fault", "signal", "SIGSEGV", None),
    ("W0616 00:44:57.731000 4026234 torch/distributed/elastic/agent/server/api.py:719] Received "
     "Signals.SIGTERM death signal, shutting down workers", "signal", "launcher_received_signal",
     None),
    ("slurmstepd: error: *** JOB 12345 ON node01 CANCELLED AT 2024-05-14T03:22:41 DUE TO TIME "
     "LIMIT ***", "signal", "slurm_time_limit", None),
    ("The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR "
     "Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of "
     "file.", "signal", "ray_worker_died", None),
    ("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
     "signal", "ray_actor_died", None),
    ("ValueError: too many values to unpack (expected 2)", "python", "ValueError",
     "ValueError: too many values to unpack (expected 2)"),
    ("OSError: [Errno 28] No space left on device", "python", "OSError", None),
])
def test_error_wordings(line: str, kind: str, code: str, message: str | None) -> None:
    row = err(line)
    assert (row["kind"], row["code"]) == (kind, code)
    if message is not None:
        assert row["message"] == message


def test_error_lines_with_pid_host_task() -> None:
    # nvidia/nccl#795: NCCL's own host:pid:tid prefix
    row = err("a100-st-p4d24xlarge-22:183006:183220 [1] misc/socket.cc:518 NCCL WARN Net : Call "
              "to recv from 10.200.84.247<58355> failed : Broken pipe")
    assert (row["code"], row["host"], row["pid"]) == (
        "nccl_warn_net", "a100-st-p4d24xlarge-22", 183006)
    assert err("tf144:143468:143535 [1] NCCL WARN NET/IB : Got completion from peer "
               "192.168.17.147<38560> with error 12, opcode 0, len 0, vendor err 129")["code"] \
        == "nccl_warn_net"
    assert err("node-2:48213:48390 [3] enqueue.cc:1451 NCCL WARN Cuda failure 'unknown "
               "error'")["code"] == "nccl_warn_cuda"
    row = err("srun: error: sdumont6156: task 0: Out Of Memory")
    assert (row["kind"], row["host"], row["rank"]) == ("oom", "sdumont6156", 0)
    row = err("W1121 23:47:48.809000 4885 torch/distributed/elastic/multiprocessing/api.py:1028] "
              "Sending process 4913 closing signal SIGTERM")
    assert (row["code"], row["pid"]) == ("launcher_sigterm", 4913)
    row = err("slurmstepd: error: *** STEP 1234.0 ON node-1 CANCELLED AT 2024-05-14T03:22:41 ***")
    assert (row["code"], row["host"]) == ("slurm_cancelled", "node-1")


def test_not_errors() -> None:
    for line in ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
                 "Remapping Failure Occurred        : No",
                 "  what():  something",  # a what() line belongs to its c10 block
                 "[INFO] all good: Error: none"):
        assert errors.parse_error(line) is None, line


def test_oom_figures() -> None:
    old = ("RuntimeError: CUDA out of memory. Tried to allocate 36.00 MiB (GPU 0; 7.93 GiB total "
           "capacity; 130.35 MiB already allocated; 47.06 MiB free; 188.00 MiB reserved in total "
           "by PyTorch)")
    f = errors.oom_figures(old)
    assert f["gpu"] == 0 and f["total"] == 7.93 and f["tried"] == pytest.approx(0.035, abs=1e-3)
    assert f["reserved_unallocated"] == pytest.approx((188.0 - 130.35) / 1024, abs=1e-3)
    new = ("CUDA out of memory. Tried to allocate 1.22 GiB. GPU 0 has a total capacity of 15.77 "
           "GiB of which 959.44 MiB is free. Process 12447 has 14.83 GiB memory in use. Of the "
           "allocated memory 14.01 GiB is allocated by PyTorch, and 472.05 MiB is reserved by "
           "PyTorch but unallocated.")
    f = errors.oom_figures(new)
    assert (f["tried"], f["total"], f["allocated"]) == (1.22, 15.77, 14.01)
    assert f["reserved_unallocated"] == pytest.approx(0.461, abs=1e-3)
    assert errors.oom_figures("no numbers here") == {}


# --- parsers: exits -------------------------------------------------------------------------------

@pytest.mark.parametrize(("line", "expected"), [
    ("E1121 23:47:49.404000 4885 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
     "(exitcode: -9) local_rank: 1 (pid: 4914) of binary: /tmp/venv-probe/bin/python3",
     {"local_rank": 1, "pid": 4914, "exitcode": -9, "signal": "SIGKILL"}),
    ("[2023-06-01 10:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u',"
     " 'train_ds.py', '--local_rank=3', '--version=xinlai/LISA-7B-v1'] exits with return code = "
     "-6", {"local_rank": 3, "exitcode": -6, "signal": "SIGABRT"}),
    ("srun: error: taurusi2031: tasks 10-11: Exited with exit code 1",
     {"host": "taurusi2031", "rank": None, "exitcode": 1}),
    ("srun: error: node-3: task 5: Killed", {"host": "node-3", "rank": 5, "signal": "SIGKILL"}),
    ("srun: error: node-3: task 2: Segmentation fault (core dumped)",
     {"rank": 2, "signal": "SIGSEGV"}),
    ("srun: error: node-3: task 7: Exited with exit code 137", {"exitcode": 137,
                                                               "signal": "SIGKILL"}),
    ("/var/spool/slurmd/job1234/slurm_script: line 42: 51234 Killed                  python "
     "train.py", {"pid": 51234, "signal": "SIGKILL"}),
])
def test_exit_wordings(line: str, expected: dict) -> None:
    assert reaches(errors.PARSERS[1:], line)
    row = errors.parse_exit(line)
    assert row is not None
    for k, v in expected.items():
        assert row.get(k) == v, (k, row)


# --- parsers: Xid -----------------------------------------------------------------------------------

def test_xid_lines() -> None:
    assert reaches(xid.PARSERS, "NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.")
    # leptonai/gpud xid matcher tests; stas00/ml-engineering; open-gpu-kernel-modules#1151
    r = xid.parse_xid("[111111111.111] NVRM: Xid (PCI:0000:05:00): 79, pid='<unknown>', "
                      "name=<unknown>, GPU has fallen off the bus.")
    assert (r["kind"], r["code"], r["pid"]) == ("xid", "79", None)
    assert r["message"] == "Xid 79 (PCI:0000:05:00): GPU has fallen off the bus"
    r = xid.parse_xid("NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked "
                      "for remapping, reset gpu to activate.")
    assert (r["code"], r["pid"]) == ("63", 1896)
    assert r["message"].startswith("Xid 63 (PCI:0000:10:1c): Row Remapper")
    r = xid.parse_xid("[...] NVRM: Xid (0000:03:00): 14, Channel 00000001")
    assert r["code"] == "14"
    r = xid.parse_xid("[171167.621162] NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action "
                      "changed from 0x0 (None) to 0x4 (Drain and Reset)")
    assert r["code"] == "154" and "Drain and Reset" in r["message"]
    r = xid.parse_xid("Feb 14 05:03:41 000-000-00000-1-gpu-1 kernel: NVRM: Xid (PCI:0000:44:00): "
                      "79, GPU has fallen off the bus.")
    assert r["host"] == "000-000-00000-1-gpu-1"
    r = xid.parse_xid("[Tue May 14 03:12:09 2024] NVRM: Xid (PCI:0000:3b:00): 48, pid=4242, "
                      "name=python3, An uncorrectable double bit error (DBE) has been detected")
    assert str(r["time"]) == "2024-05-14 03:12:09" and r["pid"] == 4242
    r = xid.parse_xid("NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.")
    assert r["code"] == "79" and "PCI:0000:29:00" in r["message"]
    assert xid.parse_xid("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.54.03") is None


def test_xid_catalog() -> None:
    assert xid_catalog.xid_info(79).scope == "node" and xid_catalog.xid_info(79).origin == "hardware"
    assert "dcgmi diag -r 3" in xid_catalog.xid_info(79).next_step
    assert xid_catalog.xid_info(48).category == "ecc" and xid_catalog.xid_info(48).scope == "gpu"
    assert xid_catalog.xid_info(13).origin == "application" and xid_catalog.xid_info(13).scope == "none"
    assert xid_catalog.xid_info(45).cascade and xid_catalog.xid_info(154).cascade
    assert xid.xid_info(74).category == "nvlink"
    assert xid.xid_info(9999).mnemonic == "UNLISTED"


# --- parsers: checkpoints ---------------------------------------------------------------------------

@pytest.mark.parametrize(("line", "kind", "iteration", "extra"), [
    ("saving checkpoint at iteration    4000 to /lustre/ckpt/gpt-13b in torch_dist format",
     "save_start", 4000, {"path": "/lustre/ckpt/gpt-13b"}),
    ("  successfully saved checkpoint from iteration     845 to /ckpt [ t 1/8, p 1/1 ]", "saved",
     845, {"path": "/ckpt"}),
    ("  successfully saved checkpoint at iteration   12600 to /gpfs/checkpoints/main", "saved",
     12600, {}),
    ("  successfully loaded checkpoint from /ckpt [ t 0, p 0 ] at iteration 3500", "loaded",
     3500, {}),
    ("    save-checkpoint ................................: (40123.45, 40125.67)", "saved", None,
     {"duration_s": 40.12567}),
    ("[2023-07-24 13:21:33,261] [INFO] [logging.py:96:log_dist] [Rank 0] [Torch] Checkpoint "
     "global_step10 is about to be saved!", "save_start", 10, {"rank": 0}),
    ("[2023-07-24 13:21:33,263] [INFO] [logging.py:96:log_dist] [Rank 0] Saving model checkpoint:"
     " experiments/bert/global_step10/mp_rank_00_model_states.pt", "save_start", 10, {}),
    ("[2023-07-24 13:21:33,440] [INFO] [torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint "
     "global_step10 is ready now!", "saved", 10, {}),
    ("Saving model checkpoint to out/checkpoint-500", "save_start", 500, {}),
    ("  Continuing training from global step 500", "loaded", 500, {}),
    ("[rank0]:2025-04-01 00:25:59,616 - root - INFO - Finished saving the checkpoint (or staging "
     "if async is enabled)in 5.53 seconds.", "saved", None, {"duration_s": 5.53}),
    ("[titan] Saving a model only checkpoint in torch.bfloat16 at last step, step 10.",
     "save_start", 10, {}),
    ("Epoch 3, global step 1000: 'val_loss' reached 0.12 (best 0.12), saving model to "
     "'/ckpt/epoch=3-step=1000.ckpt' as top 1", "saved", 1000, {}),
    # a filename template with no step (corpus gpu_crash-kd-thesis-wandb-artifact-auth-timeout,
    # a kd_thesis run's output.log): the step from Lightning's words
    ("Epoch 17, global step 6336: 'val/accuracy' reached 0.62720 (best 0.62720), saving model to "
     "'/workspace/kd_thesis/checkpoints/baseline/MobileNetV2-Baseline/7534idpa/best-epoch=epoch="
     "17-val_acc=val/accuracy=0.6272.ckpt' as top 1", "saved", 6336, {}),
    # a step named in words: MaxText (AI-Hypercomputer/maxtext MaxText/checkpointing.py
    # print_save_message: f"Saved a checkpoint at step {step}.", async: "Started an
    # asynchronous checkpoint save for step {step}"; its older train.py "saved a checkpoint at
    # step {step}")
    ("Saved a checkpoint at step 1000.", "saved", 1000, {}),
    ("saved a checkpoint at step 0", "saved", 0, {}),
    ("Started an asynchronous checkpoint save for step 2000", "save_start", 2000, {}),
    # NVIDIA-NeMo/RL nemo_rl/algorithms/grpo.py: print(f"Saving checkpoint for step {step + 1}...")
    ("Saving checkpoint for step 51...", "save_start", 51, {}),
    # OLMo-core's trainer, as a project's test quotes its console (olmo_core.train.trainer)
    ("2026-08-08 12:03:10 INFO [olmo_core.train.trainer:1003] Saving checkpoint for step 100 to "
     "'s3://b/k'...", "save_start", 100, {"path": "s3://b/k"}),
    ("2026-08-08 12:03:44 INFO [olmo_core.train.trainer:1064] Checkpoint for step 100 saved "
     "successfully", "saved", 100, {}),
    # "at step N" is the step, not the path (prime-rl: logger.info(f"Saving checkpoint at step
    # {progress.step}"), with a destination after it as other trainers print it)
    ("Saving checkpoint at step 1000 to gs://bucket/ckpt/run1", "save_start", 1000,
     {"path": "gs://bucket/ckpt/run1"}),
])
def test_checkpoint_wordings(line: str, kind: str, iteration: int | None, extra: dict) -> None:
    assert reaches(checkpoints.PARSERS, line)
    row = checkpoints.parse_checkpoint(line)
    assert row is not None
    assert (row["kind"], row["iteration"]) == (kind, iteration)
    for k, v in extra.items():
        assert row[k] == pytest.approx(v) if isinstance(v, float) else row[k] == v


def test_a_finished_save_is_the_save_its_writer_started(tmp_path) -> None:
    """torchtitan's "Finished saving the checkpoint" names no step: it finishes the save started
    just before it (step 644, the last step), not the step logged before that (640). Lines of
    corpus gpu_crash-newcomputebench-torchtitan-exit-sigabrt (a NewComputeBench run's log)."""
    log = tmp_path / "job.log"
    log.write_text("\n".join([
        "[rank0]:2025-04-01 00:25:47,084 - root - INFO - step: 640/644 = 99.3789%  loss:  6.2116  "
        "memory: 87.04GiB(93.48%)  tps: 52,142  mfu: 3.09%",
        "[rank0]:2025-04-01 00:25:54,090 - root - INFO - Saving a full checkpoint at last step, "
        "step 644.",
        "[rank0]:2025-04-01 00:25:59,616 - root - INFO - Finished saving the checkpoint (or "
        "staging if async is enabled)in 5.53 seconds.",
        "[rank0]:2025-04-01 00:26:01,706 - root - INFO - Training completed", ""]))
    f = gpu_crash.diagnose(traindoc.load(str(log))).facts
    assert f["last_checkpoint_iteration"] == 644


# --- cause vs cascade -------------------------------------------------------------------------------

def glog_err(rank: int, hms: str, body: str) -> str:
    return (f"[rank{rank}]:[E514 {hms}.100000000 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) "
            f"Rank {rank}] {body}\n")


CUDA = "Process group watchdog thread terminated with exception: CUDA error: unknown error"
REMOTE = ("Process group watchdog thread terminated with exception: NCCL error: remote process "
          "exited or there was a network error, NCCL version 2.19.3")
HEADER = "[2024-05-14 03:00:00,000] [INFO] job started\n"  # gives the glog lines their year


def diag(tmp_path: Path, text: str, **kw):
    inc = load_text(tmp_path, text)
    return inc, gpu_crash.diagnose(inc, **kw)


def test_first_in_time_not_first_in_file(tmp_path: Path) -> None:
    # The cascade lines come first in the file; timestamps say rank 2 failed first.
    text = HEADER + "".join(glog_err(r, "03:12:12", REMOTE) for r in (0, 1, 3)) \
        + glog_err(2, "03:12:10", CUDA)
    inc, r = diag(tmp_path, text)
    assert r.facts["failed_ranks"] == [2]
    assert r.facts["error_kind"] == "cuda_error"
    assert r.facts["first_failure_time"] == "2024-05-14T03:12:10.100000"
    crash = gc_events.first_failure(gc_events.failure_events(inc))
    assert sorted(int(x) for x in crash.cascade["rank"]) == [0, 1, 3]
    ct = gc_events.cascade_table(crash)
    assert list(ct["after_s"]) == [2.0, 2.0, 2.0]
    assert r.confidence == "high"


def test_cascade_only_is_low_confidence(tmp_path: Path) -> None:
    text = HEADER + "".join(glog_err(r, "03:12:12", REMOTE) for r in (0, 1))
    _, r = diag(tmp_path, text)
    # a victim's view: the kind of what it saw, nobody to blame
    assert r.facts["failed_ranks"] == [] and r.facts["error_kind"] == "nccl_error"
    assert r.confidence == "low"
    assert any(f.id == "no_failure" for f in r.findings)


# Only a peer's failure seen from here (the remote side exited, a socket broke): error_kind is
# what this side saw, no rank or host is blamed. Real lines: hiyouga/LlamaFactory#6849,
# NVIDIA/nccl#795, tatsu-lab/stanford_alpaca#207 (the corpus cases' logs).
PEER_ONLY = {
    "LlamaFactory#6849": "[rank5]:[E207 19:37:09.983600771 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG "
    "GUID 0(default_pg) Rank 5] Process group watchdog thread terminated with exception: NCCL "
    "error: remote process exited or there was a network error\n",
    "nccl#795": "a100-st-p4d24xlarge-22:183006:183220 [1] misc/socket.cc:518 NCCL WARN Net : Call "
    "to recv from 10.200.84.247<58355> failed : Broken pipe\n",
}


@pytest.mark.parametrize("name", list(PEER_ONLY))
def test_a_victims_view_names_the_kind_not_a_culprit(tmp_path: Path, name: str) -> None:
    f = gpu_crash.diagnose(load_text(tmp_path, PEER_ONLY[name])).facts
    assert (f["error_kind"], f["failed_ranks"], f["failed_hosts"]) == ("nccl_error", [], [])


def test_torchrun_root_cause_without_timestamps(tmp_path: Path) -> None:
    text = """\
[default0]:[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:55461: Connection reset by peer. This is typically caused by a remote worker hanging or bugs in the application.
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 4913)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 4914)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 4914
============================================================
"""
    _, r = diag(tmp_path, text)
    assert r.facts["failed_ranks"] == [1]
    assert r.facts["error_kind"] == "signal"
    assert "SIGKILL" in r.facts["error_message"]
    assert any(f.id == "killed" for f in r.findings)
    assert r.actions[0].id == "why_killed"


def test_simultaneous_ooms_are_all_failed(tmp_path: Path) -> None:
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
           "total capacity of 79.15 GiB of which 1.06 GiB is free.")
    text = HEADER + "".join(glog_err(r, "03:12:10", oom) for r in (0, 1, 2, 3))
    _, r = diag(tmp_path, text)
    assert r.facts["failed_ranks"] == [0, 1, 2, 3]
    assert r.facts["error_kind"] == "oom"
    assert r.actions[0].id == "reduce_memory"
    assert not any(a.id == "drain_node" for a in r.actions)


def test_sigkill_by_the_oom_killer_is_an_oom(tmp_path: Path) -> None:
    text = ("slurmstepd: error: Detected 1 oom_kill event in StepId=4242.0. Some of the step tasks "
            "have been OOM Killed.\n"
            "srun: error: node-7: task 3: Killed\n"
            "srun: error: node-7: tasks 0-2,4-7: Terminated\n")
    _, r = diag(tmp_path, text)
    assert r.facts["error_kind"] == "oom" and r.facts["failed_ranks"] == [3]
    assert r.facts["failed_hosts"] == ["node-7"]
    assert r.actions[0].id == "reduce_memory"


@pytest.mark.parametrize("text", [
    # corpus gpu_crash-vllmcluster-dataloader-oom-kill (job.err's last two lines)
    "RuntimeError: DataLoader worker (pid 933394) is killed by signal: Killed. \n"
    "slurmstepd: error: Detected 1 oom_kill event in StepId=66733646.batch. Some of the step "
    "tasks have been OOM Killed.\n",
    # the same torch wording (torch/utils/data/_utils/signal_handling.py) with the kernel's
    # OOM-killer line of the same pid (huggingface/transformers#7020's /var/log/messages line,
    # corpus gpu_crash-transformers-7020, its pid given to the worker)
    "RuntimeError: DataLoader worker (pid 126138) is killed by signal: Killed.\n"
    "Sep  9 17:10:44 centos kernel: Out of memory: Kill process 126138 (python3) score 939 or "
    "sacrifice child\n",
])
def test_the_oom_killers_line_says_which_process_it_killed(tmp_path: Path, text: str) -> None:
    _, r = diag(tmp_path, text)
    assert r.facts["error_kind"] == "oom"
    assert "is killed by signal: Killed" in r.facts["error_message"]


def test_silent_rank_is_named(tmp_path: Path) -> None:
    it = (" iteration        5/      40 | consumed samples:         40 | elapsed time per iteration"
          " (ms): 52.7 | lm loss: 2.567320E+00 |\n")
    text = "".join(f"[default{r}]:{it}" for r in (0, 1, 2)) + \
        "".join(f"[default{r}]:[rank{r}]: RuntimeError: Connection reset by peer\n" for r in (0, 2))
    _, r = diag(tmp_path, text)
    assert r.facts["failed_ranks"] == [1]
    assert r.confidence == "medium"
    assert any(f.id == "silent_rank" for f in r.findings)


# --- the bundles --------------------------------------------------------------------------------------

def test_bloom_seed_bundle() -> None:
    r = gpu_crash.diagnose(traindoc.load(DATA / "gpu_crash" / "bloom_seed"))
    f = r.facts
    assert (f["error_kind"], f["failed_ranks"], f["error_message"]) == (
        "cuda_error", [3], "CUDA error: unknown error")
    assert f["last_iteration"] == 12695 and f["checkpoint_interval_recommended"] == 66
    assert any(x.id == "async_cuda_error" for x in r.findings)
    # 'unknown error' with no Xid, ECC or bus line is a suspect, not hardware evidence (issue
    # 27): check the node first, drain nothing, and never guess the node from the rank
    assert r.actions[0].id == "check_node"
    assert not any(a.id == "drain_node" for a in r.actions)
    assert all("GPUs per node" not in a.how for a in r.actions)
    assert set(f) == set(gpu_crash.FACT_KEYS)


def test_drill_crash_bundle() -> None:
    inc = traindoc.load(DATA / "gpu_crash" / "drill_crash")
    r = gpu_crash.diagnose(inc)
    assert r.facts["failed_ranks"] == [1] and r.facts["error_kind"] == "signal"
    crash = gc_events.first_failure(gc_events.failure_events(inc), ranks_seen=inc.ranks)
    assert 0 in set(crash.cascade["rank"].dropna().astype(int))
    assert 1 not in set(crash.cascade["rank"].dropna().astype(int))


def test_xid79_bundle() -> None:
    inc = traindoc.load(DATA / "gpu_crash" / "xid79_multinode")
    r = gpu_crash.diagnose(inc)
    f = r.facts
    assert f["failed_ranks"] == [11] and f["failed_hosts"] == ["node-2"]
    assert f["error_kind"] == "xid" and f["xid_codes"] == [79, 154]
    assert (f["last_checkpoint_iteration"], f["lost_iterations"]) == (4000, 240)
    assert f["lost_hours"] == pytest.approx(0.842, abs=1e-3)
    crash = gc_events.first_failure(gc_events.failure_events(inc), ranks_seen=inc.ranks)
    assert set(crash.cascade["rank"].dropna().astype(int)) == set(range(0, 8)) | set(range(16, 32))
    drain = next(a for a in r.actions if a.id == "drain_node")
    assert 'scontrol update nodename=node-2 state=drain reason="Xid 79' in drain.how
    assert "sbatch --exclude=node-2" in drain.how
    diag_ = next(a for a in r.actions if a.id == "diagnose_gpu")
    assert "dcgmi diag -r 3" in diag_.how
    hang = next(a for a in r.actions if a.id == "exit_on_failure")
    assert "TORCH_NCCL_ASYNC_ERROR_HANDLING=1" in hang.how and "--kill-on-bad-exit=1" in hang.how
    assert "--wait=60" in hang.how and hang.priority <= 3  # the survivors hung 10 min
    assert any(x.id == "exit_delay" and x.severity == "warning" for x in r.findings)
    cost = dict(gc_checkpoints.cost_table(f).values.tolist())
    assert cost["lost_iterations"] == "240" and cost["checkpoint_interval_recommended"] == "541"
    tl = gc_events.timeline_frame(crash)
    assert tl["first"].sum() == 1 and tl.loc[tl["first"], "lane"].item() == "node-2"


# --- checkpoints and Young/Daly -----------------------------------------------------------------------

def test_young_daly_numbers() -> None:
    yd = gc_checkpoints.young_daly(40.0, 7 * 24 * 3600.0)
    assert yd["young_s"] == pytest.approx(math.sqrt(2 * 40 * 604800), rel=1e-9)
    assert yd["young_s"] == pytest.approx(6955.9, abs=0.1)  # ≈ 1.93 h
    assert yd["daly_s"] == pytest.approx(6929.0, abs=1.0)
    assert round(yd["young_s"] / 105) == 66
    # The interval minimises δ/τ + τ/2M: its neighbours waste more.
    w = [gc_checkpoints.expected_waste(t, 40.0, 604800.0) for t in (3000.0, yd["young_s"], 15000.0)]
    assert w[1] < w[0] and w[1] < w[2]
    assert gc_checkpoints.expected_waste(yd["young_s"], 40.0, 604800.0) == pytest.approx(
        2 * 40.0 / yd["young_s"], rel=1e-9)
    assert math.isnan(gc_checkpoints.young_daly(0.0, 1.0)["young_s"])


def test_interval_parameters_override(tmp_path: Path) -> None:
    _, r = diag(tmp_path, SEED_BLOCK, checkpoint_save_s=40, iteration_s=105, mtbf_hours=168)
    assert r.facts["checkpoint_interval_recommended"] == 66
    _, r = diag(tmp_path, SEED_BLOCK, checkpoint_save_s=40, iteration_s=105, mtbf_hours=24)
    assert r.facts["checkpoint_interval_recommended"] == round(math.sqrt(2 * 40 * 86400) / 105)
    table = gc_checkpoints.interval_table(40.0, 604800.0, 105.0, current_iterations=250)
    assert "66" in set(table["value"])


def test_incomplete_save_and_lost_time(tmp_path: Path) -> None:
    it = (" [2024-05-14 {t}] iteration {k:8d}/  100000 | elapsed time per iteration (ms): "
          "10000.0 | lm loss: 2.1E+00 |\n")
    text = (it.format(t="01:00:00", k=100)
            + "[2024-05-14 01:00:01,000] [INFO] saving checkpoint at iteration     100 to /ck\n"
            + "[2024-05-14 01:00:41,000] [INFO]   successfully saved checkpoint at iteration     "
              "100 to /ck\n"
            + it.format(t="01:16:41", k=200)
            + "[2024-05-14 01:16:42,000] [INFO] saving checkpoint at iteration     200 to /ck\n"
            + HEADER.replace("03:00:00", "01:17:00") + glog_err(5, "01:17:02", CUDA))
    inc, r = diag(tmp_path, text)
    ck = gc_checkpoints.checkpoint_state(inc, 200)
    assert (ck.last_iteration, ck.incomplete, ck.save_s) == (100, 200, 40.0)
    assert r.facts["last_checkpoint_iteration"] == 100 and r.facts["lost_iterations"] == 100
    assert r.facts["lost_hours"] == pytest.approx((17 * 60 + 2 - 41) / 3600, abs=1e-3)
    assert any(f.id == "incomplete_save" for f in r.findings)
    resume = next(a for a in r.actions if a.id == "resume")
    assert "iteration 100" in resume.title and "200" in resume.how


def test_empty_incident_fills_every_fact() -> None:
    r = gpu_crash.diagnose(traindoc.Incident.empty())
    assert set(r.facts) == set(gpu_crash.FACT_KEYS)
    assert r.facts["failed_ranks"] == [] and r.facts["xid_codes"] == []
    assert r.confidence == "low" and r.findings


def test_an_srun_task_id_is_never_a_host_to_drain() -> None:
    # srun -l's "0: " names a writer, not a machine; torchrun's report says "host : node-a"
    r = gpu_crash.diagnose(traindoc.load(DATA / "triage" / "crash_then_timeouts"))
    assert not any(h.startswith("srun-task") for h in r.facts["failed_hosts"])
    assert all("srun-task" not in a.how for a in r.actions)


def test_an_application_xid_is_never_drained() -> None:
    # Xid 31 (MMU fault) is an application fault in the catalogue the runbook shows: no drain
    r = gpu_crash.diagnose(traindoc.load(DATA / "triage" / "crash_then_timeouts"))
    assert r.facts["error_kind"] == "xid" and 31 in r.facts["xid_codes"]
    ids = [a.id for a in r.actions]
    assert "drain_node" not in ids and ids[0] == "application_xid"
    assert all("scontrol" not in a.how for a in r.actions)


def test_torchrun_record_quoted_without_its_header(tmp_path) -> None:
    # NVIDIA/Megatron-LM#1880: only the record's fields were pasted
    p = tmp_path / "job.log"
    p.write_text("  time      : 2025-12-23_05:17:58   \n  host      : yotta-B200-232   \n"
                 "  rank      : 0 (local_rank: 0)   \n  exitcode  : -11 (pid: 3304209)   \n"
                 "  error_file: <N/A>   \n  traceback : Signal 11 (SIGSEGV) received by PID "
                 "3304209   \n============================================================\n")
    f = gpu_crash.diagnose(traindoc.load(p)).facts
    assert (f["failed_ranks"], f["failed_hosts"], f["error_kind"]) == (
        [0], ["yotta-B200-232"], "signal")


# The local -> global rank rule (issue 26): a launcher's local rank is a global rank only when
# the log states the node rank and the processes per node (or one node); otherwise it stays
# "local rank R on its host". Real records: fudan-generative-vision/hallo2#56 (the agent's
# line, no layout), meta-pytorch/torchx#492 (torch elastic's rendezvous result lines),
# the Megatron-DeepSpeed MoE log of the corpus (DeepSpeed's launcher layout line).
HALLO2_56 = ("[2024-11-26 02:04:28,494] torch.distributed.elastic.multiprocessing.api: "
             "[WARNING] Sending process 750661 closing signal SIGTERM\n"
             "[2024-11-26 02:04:31,514] torch.distributed.elastic.multiprocessing.api: "
             "[ERROR] failed (exitcode: -11) local_rank: 1 (pid: 750662) of binary: "
             "/home/jinlin_li/anaconda3/envs/hallo/bin/python\n")
TORCHX_492_RDZV = ("INFO:torch.distributed.elastic.agent.server.api:[] Rendezvous complete for "
                   "workers. Result:\n  restart_count=0\n  master_addr=tristanr-arch2\n"
                   "  master_port=48089\n  group_rank={node}\n  group_world_size=2\n"
                   "  local_ranks=[0, 1]\n")
DS_LAUNCH_ONE_NODE = ("[2022-10-29 00:41:40,882] [INFO] [launch.py:142:main] nnodes=1, "
                      "num_local_procs=8, node_rank=0\n")


def test_local_rank_on_one_machine_without_a_layout_is_an_assumption(tmp_path) -> None:
    a = gpu_crash.analyse(load_text(tmp_path, HALLO2_56))
    assert (a.facts["failed_ranks"], a.facts["error_kind"]) == ([1], "signal")
    assert "taken as rank 1" in a.crash.first["rank_note"]
    assert "taken as rank 1" in gpu_crash.report(a).findings[0].title


def test_local_rank_on_a_node_of_several_stays_local(tmp_path) -> None:
    # the rendezvous says two nodes but not this node's rank: no global rank
    text = TORCHX_492_RDZV.replace("  group_rank={node}\n", "") + HALLO2_56
    a = gpu_crash.analyse(load_text(tmp_path, text))
    assert (a.facts["failed_ranks"], a.facts["error_kind"]) == ([], "signal")
    assert "local rank 1: the log does not give" in a.crash.first["rank_note"]


@pytest.mark.parametrize(("layout", "rank"), [
    (TORCHX_492_RDZV.format(node=1), 3), (TORCHX_492_RDZV.format(node=0), 1),
    (DS_LAUNCH_ONE_NODE, 1)])
def test_local_rank_with_the_node_layout_is_global(tmp_path, layout: str, rank: int) -> None:
    f = gpu_crash.diagnose(load_text(tmp_path, layout + HALLO2_56)).facts
    assert (f["failed_ranks"], f["error_kind"]) == ([rank], "signal")


def test_global_rank_rule() -> None:
    from traindoc.diagnose.common import NodeLayout, global_rank
    assert global_rank(1, None, NodeLayout({}, None, None, None)) is None
    assert global_rank(1, None, NodeLayout({}, None, 8, None)) is None  # node rank unknown
    assert global_rank(1, None, NodeLayout({}, 2, 8, None)) == 17
    assert global_rank(1, "n2", NodeLayout({"n1": 0, "n2": 1}, None, 8, 2)) == 9
    assert global_rank(1, None, NodeLayout({"n1": 0, "n2": 1}, None, 8, 2)) is None
    assert global_rank(3, None, NodeLayout({}, None, None, 1)) == 3  # one node
    assert global_rank(3, None, NodeLayout({}, None, None, None), one_machine=True) == 3
    assert global_rank(3, None, NodeLayout({}, None, None, 2), one_machine=True) is None
    assert global_rank(9, None, NodeLayout({}, 0, 8, None)) is None  # not a local rank of 8


def test_an_abort_is_named_by_the_error_that_caused_it(tmp_path) -> None:
    # vllm-project/vllm#4108: the Ray worker's abort is printed before rank 0's CUDA error
    p = tmp_path / "job.log"
    p.write_text("(RayWorkerVllm pid=7046) Fatal Python error: Aborted\n"
                 "(RayWorkerVllm pid=7046) \n"
                 "[E ProcessGroupNCCL.cpp:916] [Rank 0] NCCL watchdog thread terminated with "
                 "exception: CUDA error: an illegal memory access was encountered\n")
    f = gpu_crash.diagnose(traindoc.load(p)).facts
    assert f["error_kind"] == "cuda_error" and "illegal memory access" in f["error_message"]


def test_nccl_system_error_before_the_first_step_is_the_failure(tmp_path) -> None:
    # open-mmlab/OpenPCDet#1215: DDP's init fails on every rank; no peer died first
    p = tmp_path / "job.log"
    p.write_text("    dist._verify_model_across_ranks(self.process_group, parameters)\n"
                 "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:911, "
                 "unhandled system error, NCCL version 2.7.8\n"
                 "ncclSystemError: System call (socket, malloc, munmap, etc) failed.\n")
    f = gpu_crash.diagnose(traindoc.load(p)).facts
    assert f["error_kind"] == "nccl_error" and "unhandled system error" in f["error_message"]


@pytest.mark.parametrize("error", [
    # hosseinsarshar/a3-bandwidth-test a3-mega/vertex/nemo/job/job_template.sh (torch 2.4)
    "NCCL error: internal error - please report this issue to the NCCL developers, "
    "NCCL version 2.21.5",
    "NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details), "
    "NCCL version 2.19.3",
])
def test_nccl_init_error_ended_by_an_abort_is_the_failure(tmp_path, error: str) -> None:
    # the watchdog's rethrow ends the process with SIGABRT (OpenMPI's signal handler names the
    # host); the abort names no error of its own, so the NCCL error before it is the failure
    p = tmp_path / "rank0.log"
    host = "gke-a3-mega-asia-a3-mega-asia-node-po-c2a38dbc-bgzz"
    p.write_text(
        "[rank0]:[E ProcessGroupNCCL.cpp:564] [Rank 0] Some NCCL operations have failed or "
        "timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations "
        "might run on corrupted/incomplete data.\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:1335] [PG 0 Rank 0] NCCL watchdog thread terminated "
        f"with exception: {error}\n"
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        f"[{host}:00572] *** Process received signal ***\n"
        f"[{host}:00572] Signal: Aborted (6)\n"
        f"[{host}:00572] *** End of error message ***\n")
    f = gpu_crash.diagnose(traindoc.load(p)).facts
    assert f["error_kind"] == "nccl_error"
    assert error.split(" - ")[0].split(" (")[0] in f["error_message"]
    assert f["failed_ranks"] == [0] and f["failed_hosts"] == [host]


def _failure_record(rank: int, pid: int) -> str:
    return ("  time      : 2024-05-01_22:04:48\n  host      : smciserver\n"
            f"  rank      : {rank} (local_rank: {rank})\n  exitcode  : -11 (pid: {pid})\n"
            f"  error_file: <N/A>\n  traceback : Signal 11 (SIGSEGV) received by PID {pid}\n")


@pytest.mark.parametrize("closed, expected", [([224], [0, 1, 2]), ([224, 225], [0, 1])])
def test_the_one_worker_the_agent_closed_is_placed_by_elimination(
        tmp_path, closed: list[int], expected: list[int]) -> None:
    # mlcommons/training_results_v4.0 Red_Hat/benchmarks/llama2_70b_lora/implementations/
    # AS-8125GS-TNHR-RHEL9.4/scripts/results/240501220259714847728_1.log (8 workers there):
    # every worker segfaults; the agent SIGTERMs the one still alive, so its failure table
    # lists the others only
    p = tmp_path / "job.log"
    segv = "".join(f"[smciserver:{pid}  :0:{pid}] Caught signal 11 (Segmentation fault: address "
                   "not mapped to object at address 0xa00020000000a)\n" for pid in (222, 223, 224))
    close = "".join(
        "W0501 22:04:48.360000 139692391809664 torch/distributed/elastic/multiprocessing/"
        f"api.py:906] Sending process {pid} closing signal SIGTERM\n" for pid in closed)
    p.write_text(segv + close + (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "=====================================================\ntrain.py FAILED\n"
        "-----------------------------------------------------\nFailures:\n[1]:\n"
        + _failure_record(1, 223) +
        "-----------------------------------------------------\n"
        "Root Cause (first observed failure):\n[0]:\n" + _failure_record(0, 222) +
        "=====================================================\n"))
    f = gpu_crash.diagnose(traindoc.load(p)).facts
    # two closed pids, one local rank left (2): nothing to place either by
    assert f["failed_ranks"] == expected and f["failed_hosts"] == ["smciserver"]


@pytest.mark.parametrize("launch, oom, expected", [
    # EleutherAI/gpt-neox slurm/llemma-f-0.2/debug_0_62691629.out (llemma-f branch): DeepSpeed's
    # launcher on one node; the OOM names its device, the last line local_rank 7's command
    ("[2024-02-14 20:35:05,077] [INFO] [launch.py:151:main] nnodes=1, num_local_procs=8, "
     "node_rank=0",
     "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB (GPU 0; "
     "79.33 GiB total capacity; 27.16 GiB already allocated; 244.44 MiB free; 31.59 GiB reserved "
     "in total by PyTorch)", [0]),
    # torch >= 2.1 wording (an accelerate launch of 5 processes printed it as rank 3's, "GPU 3")
    ("torchrun --standalone --nproc_per_node=5 train.py",
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 3 has a total "
     "capacity of 23.56 GiB of which 15.88 MiB is free.", [3]),
    # one process per node (it may drive several GPUs): the device is no rank
    ("nnodes=1, num_local_procs=1, node_rank=0",
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 3 has a total "
     "capacity of 23.56 GiB of which 15.88 MiB is free.", [0]),
    # no layout stated: every process may see its own GPU as device 0
    ("Starting training",
     "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB (GPU 0; "
     "79.33 GiB total capacity; 27.16 GiB already allocated; 244.44 MiB free; 31.59 GiB reserved "
     "in total by PyTorch)", []),
])
def test_an_oom_without_a_rank_is_placed_by_its_device(tmp_path, launch: str, oom: str,
                                                        expected: list[int]) -> None:
    p = tmp_path / "job.out"
    p.write_text(f"{launch}\n{oom}\n"
                 "[2024-02-14 20:37:10,276] [INFO] [launch.py:314:sigkill_handler] Killing "
                 "subprocess 111991\n"
                 "[2024-02-14 20:37:14,113] [ERROR] [launch.py:320:sigkill_handler] ['/usr/bin/"
                 "python', '-u', 'train.py', '--local_rank=7'] exits with return code = 1\n")
    f = gpu_crash.diagnose(traindoc.load(p)).facts
    assert f["error_kind"] == "oom" and f["failed_ranks"] == expected


def test_fallen_off_the_bus_wrapped_over_three_nvrm_lines(tmp_path) -> None:
    # NVIDIA/NVSentinel#155: no Xid line, the probe's message wrapped by the kernel
    p = tmp_path / "dmesg.txt"
    p.write_text("[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
                 "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
                 "               NVRM: fallen off the bus and is not responding to commands.\n")
    f = gpu_crash.diagnose(traindoc.load(p)).facts
    assert "fallen off the bus" in f["error_message"] and f["xid_codes"] == [79]


def test_nvidia_smi_lost_gpu_is_a_hardware_failure(tmp_path) -> None:
    # rwth-i6/returnn#1484: the job hung; nvidia-smi could no longer reach the GPU
    p = tmp_path / "node.txt"
    p.write_text("$ nvidia-smi\nUnable to determine the device handle for GPU0000:03:00.0: "
                 "Unknown Error\n")
    r = gpu_crash.diagnose(traindoc.load(p))
    assert "Unable to determine the device handle" in r.facts["error_message"]
    assert r.actions[0].id == "drain_node" and '--exclude="$NODE"' in r.actions[0].how


def test_cascade_xids_alone_still_name_a_gpu_failure(tmp_path) -> None:
    # NVIDIA/open-gpu-kernel-modules#1150: only Xid 45 'caused by previous Xid 149' lines
    p = tmp_path / "dmesg.txt"
    p.write_text("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 "
                 "caused by previous Xid 149\n"
                 "kernel: NVRM: Xid (PCI:0000:ed:00): 45, pid=1818992, name=python3, Ch 0000000c "
                 "caused by previous Xid 145\n")
    f = gpu_crash.diagnose(traindoc.load(p)).facts
    assert f["error_kind"] == "xid" and 45 in f["xid_codes"]


def test_legacy_launcher_worker_died_with_a_signal(tmp_path) -> None:
    # rosinality/stylegan2-pytorch#233 (torch.distributed.launch, torch 1.x)
    p = tmp_path / "job.log"
    p.write_text("subprocess.CalledProcessError: Command '['/public/home/anaconda3/envs/stylegan/"
                 "bin/python', '-u', 'train.py', '--local_rank=1', '--batch', '16', './data/']' "
                 "died with <Signals.SIGSEGV: 11>.\n")
    f = gpu_crash.diagnose(traindoc.load(p)).facts
    assert f["error_kind"] == "signal" and "SIGSEGV" in f["error_message"]
    assert "--local_rank=1" in f["error_message"]


@pytest.mark.parametrize(("line", "expected"), [
    # NVIDIA/nccl#1050 (UCX's handler)
    ("[ib-vm-61:343042:0:345015] Caught signal 11 (Segmentation fault: invalid permissions for "
     "mapped object at address 0x1454012e46c0)",
     {"kind": "signal", "code": "SIGSEGV", "host": "ib-vm-61", "pid": 343042}),
    # NVIDIA/Megatron-LM#516
    ("[09677202c889:5283 :0:5704] Caught signal 7 (Bus error: nonexistent physical address)",
     {"code": "SIGBUS", "host": "09677202c889"}),
    # horovod/horovod#234 (Open MPI)
    ("[ichost094:17969] Signal: Segmentation fault (11)", {"code": "SIGSEGV", "host": "ichost094"}),
    ("mpirun noticed that process rank 286 with PID 17969 on node ichost094 exited on signal 11 "
     "(Segmentation fault).", {"code": "SIGSEGV", "rank": 286, "host": "ichost094"}),
    # open-mpi/ompi#2661 (the OOM killer's SIGKILL, as Open MPI reports it)
    ("mpirun noticed that process rank 0 with PID 21183 on node host01 exited on signal 9 "
     "(Killed).", {"code": "SIGKILL", "rank": 0, "host": "host01", "pid": 21183}),
    # Kay1794/Aware-of-the-history#2: PID and node blanked out by the poster (no host, no pid)
    ("mpirun noticed that process rank 1 with PID xxxxxx on node xxxxxxxx exited on signal 9 "
     "(Killed).", {"kind": "signal", "code": "SIGKILL", "rank": 1, "host": None, "pid": None}),
    # adda-team/adda#151 (mpiexec's wording; the post wraps the line before "signal")
    ("mpiexec noticed that process rank 0 with PID 10313 on node proton exited on signal 6 "
     "(Aborted).", {"code": "SIGABRT", "rank": 0, "host": "proton"}),
    # KdaiP/StableTTS#11
    ("torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal SIGBUS",
     {"kind": "signal", "code": "SIGBUS", "rank": 0}),
    # huggingface/peft#1703: the line under torch's "Last error:"
    ("Cuda failure 2 'out of memory'", {"kind": "nccl_error", "code": "nccl_last_error"}),
])
def test_signal_handler_and_last_error_wordings(line: str, expected: dict) -> None:
    row = err(line)
    for k, v in expected.items():
        assert row.get(k) == v, (k, row)


def test_unhandled_cuda_error_names_the_cuda_failure_under_it(tmp_path: Path) -> None:
    # huggingface/peft#1703
    text = ("torch.distributed.DistBackendError: NCCL error in: /opt/conda/conda-bld/pytorch/work/"
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, unhandled cuda error (run with "
            "NCCL_DEBUG=INFO for details), NCCL version 2.19.3\n"
            "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\n"
            "Cuda failure 2 'out of memory'\n")
    _, r = diag(tmp_path, text)
    assert "last error: Cuda failure 2 'out of memory'" in r.facts["error_message"]


def test_exit_message_quotes_the_launcher(tmp_path: Path) -> None:
    # microsoft/DeepSpeedExamples#626
    text = ("[2023-07-10 10:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python3',"
            " '-u', 'main.py', '--local_rank=0'] exits with return code = -11\n")
    _, r = diag(tmp_path, text)
    assert r.facts["error_message"] == "exits with return code = -11 (SIGSEGV)"


def test_an_untimed_line_before_a_timed_one_came_first(tmp_path: Path) -> None:
    # a-r-r-o-w/finetrainers (NVIDIA/nccl#1653): NCCL's WARN has no time, the logger line does
    text = ("DESKTOP-1CE5APL:1689:2800 [0] include/alloc.h:112 NCCL WARN Cuda failure 999 'unknown "
            "error'\n"
            "2025-03-21 17:08:31,569 - finetrainers - ERROR - Error during training: NCCL error in: "
            "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, unhandled cuda error (run with"
            " NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n")
    _, r = diag(tmp_path, text)
    assert r.facts["failed_hosts"] == ["DESKTOP-1CE5APL"]
    assert "unknown error" in r.facts["error_message"]


def test_a_rankless_error_takes_the_rank_of_the_same_error_below(tmp_path: Path) -> None:
    # kohya-ss/sd-scripts#1434
    text = ("RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n"
            "[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated with exception: "
            "CUDA error: uncorrectable ECC error encountered\n")
    _, r = diag(tmp_path, text)
    assert r.facts["failed_ranks"] == [1] and r.facts["error_kind"] == "ecc"


def test_checkpoint_advice_states_assumptions_and_fits_the_job() -> None:
    # issue 15.6: "save every 126241 iterations" for a 40-step drill, assumptions unstated
    r = gpu_crash.diagnose(traindoc.load(DATA / "gpu_crash" / "drill_crash"))
    a = next(a for a in r.actions if a.id == "save_interval")
    assert "40 iterations" in a.title and "every 20 iterations" in a.title
    assert "--save-interval 20" in a.how
    r = gpu_crash.diagnose(traindoc.load(DATA / "triage" / "crash_then_timeouts"))
    a = next(a for a in r.actions if a.id == "save_interval")
    assert "if a save takes 40 s and a GPU fails once a week" in a.title
    assert "Assumed" in a.why and "checkpoint_save_s" in a.why


@pytest.mark.parametrize("sample", ["bloom_seed", "drill_crash", "xid79_multinode"])
def test_verdict_speaks_words_not_fact_ids(sample: str) -> None:
    # issue 15.10: "failed first … with xid (…)" put an internal id in a sentence
    r = gpu_crash.diagnose(traindoc.load(DATA / "gpu_crash" / sample))
    for kind in ("cuda_error", "nccl_error", "python", "xid", "ecc", "oom", "signal"):
        assert f"with {kind} " not in r.verdict and f": {kind} —" not in r.findings[0].title


# --- analyse, report and the runbook's shape (issue 16.1) --------------------------------------------

def test_analyse_holds_every_table_the_runbook_shows() -> None:
    inc = traindoc.load(DATA / "gpu_crash" / "xid79_multinode")
    a = gpu_crash.analyse(inc)
    r = gpu_crash.report(a)
    assert r.summary(inc) == gpu_crash.diagnose(inc).summary(inc)
    assert a.facts == r.facts and a.facts is not r.facts
    crash = gc_events.first_failure(gc_events.failure_events(inc), ranks_seen=inc.ranks)
    pd.testing.assert_frame_equal(a.events, crash.events)
    pd.testing.assert_frame_equal(a.crash.cluster, crash.cluster)
    pd.testing.assert_frame_equal(a.cascade, gc_events.cascade_table(crash))
    pd.testing.assert_frame_equal(a.timeline, gc_events.timeline_frame(
        crash, common.rank_hosts(inc), task_hosts(inc)))
    pd.testing.assert_frame_equal(a.xids, gc_events.xid_table(inc))
    pd.testing.assert_frame_equal(a.interval, gc_checkpoints.interval_report(inc))
    pd.testing.assert_frame_equal(a.cost, gc_checkpoints.cost_table(r.facts))
    assert a.checkpoints.last_iteration == 4000 and len(a.checkpoint_lines)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.save_s = 1.0  # type: ignore[misc]


def test_analyse_takes_the_knobs_of_diagnose() -> None:
    inc = traindoc.load(DATA / "gpu_crash" / "bloom_seed")
    kw = dict(checkpoint_save_s=12.0, iteration_s=3.5, mtbf_hours=24.0, save_interval=50)
    a = gpu_crash.analyse(inc, **kw)
    assert (a.save_s, a.seconds_per_iteration, a.mtbf_s) == (12.0, 3.5, 24 * 3600.0)
    pd.testing.assert_frame_equal(a.interval, gc_checkpoints.interval_report(inc, **kw))
    assert gpu_crash.report(a).summary(inc) == gpu_crash.diagnose(inc, **kw).summary(inc)


def test_runbook_analyses_once_and_shows_the_bottom_line_first() -> None:
    nb = json.loads((ROOT / "runbooks" / "gpu_crash.ipynb").read_text())
    src = ["".join(c["source"]) for c in nb["cells"]]
    code = "\n".join(s for s, c in zip(src, nb["cells"], strict=True) if c["cell_type"] == "code")
    assert code.count("gpu_crash.analyse(") == 1 and "diagnose(" not in code
    i = next(k for k, s in enumerate(src) if "gpu_crash.analyse(" in s)
    assert "gpu_crash.report(analysis)" in src[i]
    assert src[i + 1].startswith("## Bottom line")
    assert src[i + 2] == "display(HTML(result.bottom_line_html()))"
    # right after loading, before any prose: above it only the title (issue 27)
    prose = [s for s, c in zip(src[:i], nb["cells"], strict=False) if c["cell_type"] == "markdown"]
    assert prose == ["# Runbook: GPU crash (CUDA error, Xid, OOM, a rank killed)"]
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in nb["cells"] if c["cell_type"] == "code")


# --- which process ran where: NCCL's host:pid:tid [dev] lines (parse/processes.py) --------------

NCCL_LINES = {  # real lines (pytorch#135486; public NCCL_DEBUG=INFO logs)
    "g1002:2128869:2128880 [0] NCCL INFO Setting affinity for GPU 0 to ffff0000,00000000,"
    "ffff0000,00000000": {"host": "g1002", "pid": 2128869, "device": 0, "event": "affinity"},
    "compute-gpu-st-distributed-ml-1:7614:7691 [0] NCCL INFO comm 0x573f9cb382e0 rank 0 nRanks 2 "
    "nNodes 2 localRanks 1 localRank 0 MNNVL 0": {
        "host": "compute-gpu-st-distributed-ml-1", "pid": 7614, "device": 0,
        "comm": "0x573f9cb382e0", "comm_rank": 0, "comm_size": 2, "event": "comm"},
    "VM-16-5-centos:39923:78857 [0] NCCL INFO comm 0x56501150c320 rank 0 nranks 16 cudaDev 0 "
    "nvmlDev 0 busId 3000 commId 0x1c6daa4f776f8e93 - Init COMPLETE": {
        "host": "VM-16-5-centos", "pid": 39923, "comm_rank": 0, "comm_size": 16,
        "event": "init_complete"},
    # a Docker container's host name is its id: no machine
    "6a9ab017bb44:454:461 [0] NCCL INFO comm 0x557b4c553c80 rank 0 nranks 1 cudaDev 0 nvmlDev 0 "
    "busId d8000 commId 0x428d7c9b55223c50 - Init START": {
        "host": None, "pid": 454, "event": "init_start"},
}


@pytest.mark.parametrize("line", list(NCCL_LINES))
def test_nccl_init_lines_name_the_process_and_its_machine(line: str) -> None:
    from traindoc.parse import processes

    assert reaches(processes.PARSERS, line)
    row = processes.parse_nccl_process(line)
    assert row is not None
    for k, v in NCCL_LINES[line].items():
        assert row.get(k) == v, (k, row)


def test_other_nccl_info_lines_are_no_process_rows() -> None:
    from traindoc.parse import processes

    line = ("compute-gpu-st-distributed-ml-1:7614:7691 [0] NCCL INFO Channel 00/02 : 0 1")
    assert not reaches(processes.PARSERS, line)
    assert processes.parse_nccl_process(line) is None


SEGV_TWO_NODES = """\
0: g1002:2128869:2128880 [0] NCCL INFO Setting affinity for GPU 0 to ffff0000,00000000
1: g1003:3300001:3300009 [0] NCCL INFO Setting affinity for GPU 0 to ffff0000,00000000
0: Fatal Python error: Segmentation fault
0: E0909 14:03:50.013000 22579342468928 torch/distributed/elastic/multiprocessing/api.py:833] \
failed (exitcode: -11) local_rank: 0 (pid: 2128869) of binary: /usr/bin/python
"""


def test_the_failed_pid_names_its_machine_through_nccl_lines(tmp_path: Path) -> None:
    """srun -l's task 0 names no machine; NCCL's line for the pid torchrun reports does."""
    a = gpu_crash.analyse(load_text(tmp_path, SEGV_TWO_NODES))
    assert a.facts["failed_hosts"] == ["g1002"]
    r = gpu_crash.report(a)
    assert r.actions[0].id == "debug_native_crash"  # a segfault is no kill from outside
    assert "g1003" not in r.verdict


def test_a_container_id_is_never_a_failed_host(tmp_path: Path) -> None:
    text = SEGV_TWO_NODES.replace("g1002", "6a9ab017bb44").replace("1: g1003:3300001:3300009 "
                                                                   "[0] NCCL INFO Setting "
                                                                   "affinity for GPU 0 to "
                                                                   "ffff0000,00000000\n", "")
    a = gpu_crash.analyse(load_text(tmp_path, text))
    assert a.facts["failed_hosts"] == []


# --- failures as a grammar of launchers and schedulers (issue 26, item 3) -------------------------
# Each family is read in every wording found: the corpus case's line and one more real line from
# another source, both cited.

@pytest.mark.parametrize("line,host", [
    # bigscience m4 logs (data/corpus/gpu_crash/gpu_crash-m4-logs-tr141-num-workers-06)
    ("srun: error: Node failure on jean-zay-iam37", "jean-zay-iam37"),
    # GoogleCloudPlatform/cluster-toolkit#1600
    ("srun: error: Node failure on hpcsmall-debug-ghpc-0", "hpcsmall-debug-ghpc-0"),
])
def test_a_node_failure_names_the_node_slurm_lost(line: str, host: str) -> None:
    row = err(line)
    assert (row["code"], row["host"]) == ("slurm_node_failure", host)


def test_the_host_of_a_node_failure_cancel_line_only_reports_it(tmp_path: Path) -> None:
    # m4 logs, tr141 num-workers-06: iam17 runs the step's first task and reports the cancel
    f = gpu_crash.diagnose(load_text(tmp_path, (
        "srun: error: Node failure on jean-zay-iam37\n"
        "srun: Job step aborted: Waiting up to 62 seconds for job step to finish.\n"
        "slurmstepd: error: *** STEP 1943824.0 ON jean-zay-iam17 CANCELLED AT "
        "2023-03-06T03:17:51 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n"))).facts
    assert f["failed_hosts"] == ["jean-zay-iam37"] and "Node failure" in f["error_message"]


def test_a_hostless_error_happened_on_the_node_slurm_lost(tmp_path: Path) -> None:
    # m4 logs, tr141 num-workers-02: the CUDA abort names no host; srun names the lost node
    f = gpu_crash.diagnose(load_text(tmp_path, (
        "terminate called after throwing an instance of 'c10::CUDAError'\n"
        "  what():  CUDA error: unknown error\n"
        "Exception raised from query at ../aten/src/ATen/cuda/CUDAEvent.h:91 (most recent call "
        "first):\n\n"
        "srun: error: Node failure on jean-zay-iam49\n"
        "srun: Job step aborted: Waiting up to 62 seconds for job step to finish.\n"))).facts
    assert (f["failed_hosts"], f["error_kind"]) == (["jean-zay-iam49"], "cuda_error")


@pytest.mark.parametrize("text", [
    # bigscience-workshop/bigscience experiments/gpt2-meg/meg_gpt2_base_n64…-1809655.out
    (" iteration       60/    1000 | consumed samples:          240 | elapsed time per iteration "
     "(ms): 6703.7 | learning rate: 1.494E-04 | global batch size:     4 | lm loss: 1.696940E+01 "
     "|\nsrun: Job step aborted: Waiting up to 62 seconds for job step to finish.\n"
     "Killing subprocess 35029\nMain process received SIGTERM, exiting\n"
     "slurmstepd: error: *** STEP 1809655.0 ON r6i4n3 CANCELLED AT 2021-05-24T09:50:34 DUE TO "
     "TIME LIMIT ***\n"
     "slurmstepd: error: *** JOB 1809655 ON r6i4n3 CANCELLED AT 2021-05-24T09:50:34 DUE TO TIME "
     "LIMIT ***\n"),
    # desihub/desitarget#628: the time limit, then srun's SIGTERM flood
    ("srun: Force Terminated job 32233190\n"
     "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
     "slurmstepd: error: *** STEP 32233190.0 ON nid01934 CANCELLED AT 2020-07-03T02:59:56 DUE TO "
     "TIME LIMIT ***\n"
     "srun: error: nid01934: tasks 2,4-5,7: Terminated\n"
     "srun: Terminating job step 32233190.0\n"
     "srun: error: nid01935: tasks 8-15: Terminated\n"
     "srun: error: nid01934: tasks 0-1,3,6: Terminated\n"),
])
def test_a_job_ended_at_its_time_limit_is_the_schedulers_stop(tmp_path: Path, text: str) -> None:
    # (the corpus' label since batch y: the scheduler's signal on the host its line names; no
    # rank failed of its own, the tasks' SIGTERM is the teardown)
    f = gpu_crash.diagnose(load_text(tmp_path, text)).facts
    host = "r6i4n3" if "r6i4n3" in text else "nid01934"
    assert (f["failed_ranks"], f["failed_hosts"], f["error_kind"]) == ([], [host], "signal")


@pytest.mark.parametrize("line,host", [
    # ZwwWayne/K-Net#30
    ("slurmstepd-gpu20-15: error: Detected 1 oom-kill event(s) in StepId=9411285.0. Some of your "
     "processes may have been killed by the cgroup out-of-memory handler.", "gpu20-15"),
    # a dask-on-SLURM job log found by find_string (id 33040942797; the index names no
    # repository); the daemon's name is Slurm's own (SchedMD/slurm
    # src/slurmd/slurmstepd/slurmstepd.c: "slurmstepd-%s" with the node name)
    ("slurmstepd-irene1112: error: *** STEP 8466589.0 ON irene1112 CANCELLED AT "
     "2023-02-22T05:15:11 ***", "irene1112"),
])
def test_slurmstepd_named_after_its_node_is_that_node(line: str, host: str) -> None:
    from traindoc.parse.prefixes import demux

    assert demux(line)[1].host == host


@pytest.mark.parametrize("text,host,task_words", [
    # ZwwWayne/K-Net#30
    ("slurmstepd-gpu20-15: error: Detected 1 oom-kill event(s) in StepId=9411285.0. Some of "
     "your processes may have been killed by the cgroup out-of-memory handler.\n"
     "srun: error: gpu20-15: task 0: Out Of Memory\n"
     "srun: launch/slurm: _step_signal: Terminating StepId=9411285.0\n"
     "slurmstepd-gpu20-15: error: *** STEP 9411285.0 ON gpu20-15 CANCELLED AT "
     "2022-05-17T17:58:10 ***\n", "gpu20-15", "task 0: Out Of Memory"),
    # chrisknewman/tusas#149
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=440575.0. Some of the step tasks "
     "have been OOM Killed.\n"
     "srun: error: nid001277: tasks 1-3: Out Of Memory\n"
     "srun: Terminating StepId=440575.0\n"
     "slurmstepd: error: *** STEP 440575.0 ON nid001277 CANCELLED AT 2023-12-05T07:16:01 ***\n",
     "nid001277", "tasks 1-3: Out Of Memory"),
])
def test_srun_names_the_task_slurms_oom_killer_hit(tmp_path: Path, text: str, host: str,
                                                   task_words: str) -> None:
    f = gpu_crash.diagnose(load_text(tmp_path, text)).facts
    assert (f["failed_hosts"], f["error_kind"]) == ([host], "oom")
    assert task_words in f["error_message"] and "oom" in f["error_message"].lower()


@pytest.mark.parametrize("line,code,sig", [
    # IBM/FfDL#127 (an FfDL learner pod's log viewer export)
    ("136 | 1534166953118 | Training process finished. Exit code: 137", 137, "SIGKILL"),
    ("137 | 1534166953119 | Job exited with error code 137", 137, "SIGKILL"),
    ("138 | 1534166953120 | Failed: learner_exit_code: 137", 137, "SIGKILL"),
    # horovod/horovod#2829
    ("Process 0 exit with status code 137.", 137, "SIGKILL"),
    ("Process 3 exit with status code 134.", 134, "SIGABRT"),
    # pytorch/executorch#15400 (a CI runner)
    ("Process completed with exit code 137.", 137, "SIGKILL"),
    # kubernetes/kubernetes#122256 (kubectl describe pod)
    ("      Exit Code: 137", 137, "SIGKILL"),
    # jupyter/docker-stacks#736
    ("command terminated with exit code 137", 137, "SIGKILL"),
])
def test_an_exit_status_above_128_is_a_death_by_signal(line: str, code: int, sig: str) -> None:
    assert reaches(errors.PARSERS[1:], line)
    row = errors.parse_exit(line)
    assert row is not None and (row["exitcode"], row["signal"]) == (code, sig)


def test_a_plain_exit_code_is_no_signal() -> None:
    assert errors.parse_exit("Process completed with exit code 1.") is None
    assert errors.parse_exit("      Exit Code:    0") is None


def test_a_shell_kill_is_quoted_with_the_exit_status_below_it(tmp_path: Path) -> None:
    # IBM/FfDL#127
    f = gpu_crash.diagnose(load_text(tmp_path, (
        "135 | 1534166953117 | /usr/local/bin/train.sh: line 18:    36 Killed                  "
        "python3 convolutional_network.py --trainImagesFile x 2>&1\n"
        "136 | 1534166953118 | Training process finished. Exit code: 137\n"
        "137 | 1534166953119 | Job exited with error code 137\n"))).facts
    assert f["error_kind"] == "signal" and "137" in f["error_message"]


@pytest.mark.parametrize("line,code", [
    # hmcts/cnp-flux-config#28772 (kubectl describe pod; kubectl get pods)
    ("      Reason:       OOMKilled", "k8s_oom_killed"),
    ("tax-tribunals-application-base-74464f6b98-2kj6g      0/1     OOMKilled   4 (57s ago)   "
     "2m40s", "k8s_oom_killed"),
    # kubeflow/kubeflow#1261 (kubectl get events: an eviction for memory)
    ("The node was low on resource: memory.", "k8s_evicted_memory"),
])
def test_kubernetes_memory_kills_are_an_oom(line: str, code: str) -> None:
    row = err(line)
    assert (row["kind"], row["code"]) == ("oom", code)


SPECULATORS_1115 = """\
Failures:
[1]:
  time      : 2026-09-07_13:02:58
  host      : localhost
  rank      : 3 (local_rank: 3)
  exitcode  : 1 (pid: 14692)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
[2]:
  time      : 2026-09-07_13:03:29
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -9 (pid: 14689)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 14689
[3]:
  time      : 2026-09-07_13:03:29
  host      : localhost
  rank      : 2 (local_rank: 2)
  exitcode  : -15 (pid: 14691)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 14691
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-09-07_13:02:58
  host      : localhost
  rank      : 1 (local_rank: 1)
"""


def test_a_sigkill_30_s_after_the_failure_is_the_launchers_escalation(tmp_path: Path) -> None:
    # vllm-project/speculators#1115: ranks 1 and 3 exit 1; 31 s later torchrun SIGKILLs rank 0
    # (it ignored SIGTERM) and rank 2 dies of the SIGTERM
    f = gpu_crash.diagnose(load_text(tmp_path, SPECULATORS_1115)).facts
    assert (f["failed_ranks"], f["error_kind"]) == ([1, 3], "python")


def test_a_sigkill_while_siblings_got_sigterm_is_the_first_failure(tmp_path: Path) -> None:
    # the same records with rank 3's exit taken out: nothing failed before the SIGKILL
    text = SPECULATORS_1115.split("Root Cause")[0].replace(
        "[1]:\n  time      : 2026-09-07_13:02:58\n  host      : localhost\n  rank      : 3 "
        "(local_rank: 3)\n  exitcode  : 1 (pid: 14692)\n  error_file: <N/A>\n  traceback : To "
        "enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n", "")
    a = gpu_crash.analyse(load_text(tmp_path, text))
    assert (a.facts["failed_ranks"], a.facts["error_kind"]) == ([0], "signal")
    assert "OOM killer" in " ".join(x.title + " " + " ".join(x.evidence)
                                    for x in gpu_crash.report(a).findings) + \
        " ".join(x.why + x.how for x in gpu_crash.report(a).actions)


@pytest.mark.parametrize("line", [
    # a write-up quoting torchrun 2.x's log, found by find_string (id 61421322529; the index
    # names no repository); the wording is torch/distributed/elastic/multiprocessing/api.py's
    "W0810 15:47:06 ... Unable to shutdown process 188 via Signals.SIGTERM, forcefully exiting "
    "via Signals.SIGKILL",
    # pytorch/pytorch#61602 (torch 1.10, when the 30 s escalation was added)
    "05:54:35 Unable to shutdown processes via 15, forcefully exitting via 9",
])
def test_torchruns_escalation_line_is_teardown(line: str) -> None:
    row = err(line)
    assert (row["kind"], row["code"]) == ("signal", "launcher_sigkill")


@pytest.mark.parametrize("text", [
    # THUDM/GLM-130B evaluate log (data/corpus/gpu_crash/gpu_crash-glm-130b-2022-09-23-003145)
    ("RuntimeError: CUDA out of memory. Tried to allocate 12.63 GiB (GPU 4; 79.17 GiB total "
     "capacity; 63.77 GiB already allocated; 11.35 GiB free; 65.52 GiB reserved in total by "
     "PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid "
     "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n"
     "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 4 "
     "(pid: 369177) of binary: /mnt/yrfs/qinkai/miniconda3/envs/largescale/bin/python\n"),
    # built from QwenLM/Qwen3-Coder#174 (torch 2.x's OOM line) and Facico/Chinese-Vicuna#113
    # (torchrun's record of a worker that exited 1, the reporter asking whether memory ran out)
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 132.00 MiB. GPU 3 has a "
     "total capacity of 79.10 GiB of which 98.00 MiB is free. Process 387746 has 78.89 GiB "
     "memory in use. Of the allocated memory 70.12 GiB is allocated by PyTorch, and 765.81 MiB "
     "is reserved by PyTorch but unallocated.\n"
     "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 "
     "(pid: 1622990) of binary: /home/changquan/anaconda3/envs/lang/bin/python\n"),
])
def test_an_exit_1_is_the_cuda_oom_its_worker_printed(tmp_path: Path, text: str) -> None:
    f = gpu_crash.diagnose(load_text(tmp_path, text)).facts
    assert f["error_kind"] == "oom" and "CUDA out of memory" in f["error_message"]


def test_a_job_log_header_names_the_machine_of_a_one_node_job(tmp_path: Path) -> None:
    # k2-fsa/icefall#247: the header Kaldi's queue.pl/slurm.pl write (kaldi-asr/kaldi
    # egs/wsj/s5/utils/parallel/queue.pl: echo '#' Running on `hostname`)
    f = gpu_crash.diagnose(load_text(tmp_path, (
        "# Running on r7n01\n# Started at Fri Mar 11 13:48:01 EST 2022\n"
        "# python conformer_ctc/train.py --world-size 4 \n\n"
        "terminate called after throwing an instance of 'c10::Error'\n"
        "  what():  CUDA error: an illegal memory access was encountered\n"))).facts
    assert (f["failed_hosts"], f["error_kind"]) == (["r7n01"], "cuda_error")
    from traindoc.parse.benchmarks import parse_nodelist

    assert parse_nodelist("Running on cuda:0") is None
    assert parse_nodelist("# Running on GPU 0 of 4 (cuda:0)") is None


@pytest.mark.parametrize("header", [
    "Hostname: cn-234",  # rwth-i6/returnn#1486 (PyTorch, 2024)
    "Hostname: cluster-cn-216",  # a RETURNN TF 1.10 training log of 2019 (the same print)
])
def test_returnn_start_up_header_names_the_machine(tmp_path: Path, header: str) -> None:
    # rwth-i6/returnn's __main__.py: print("Hostname:", socket.gethostname())
    f = gpu_crash.diagnose(load_text(tmp_path, (
        "RETURNN starting up, version 1.20240102.170719+git.83df39c7, pid 3948138\n"
        f"{header}\n"
        "terminate called after throwing an instance of 'c10::Error'\n"
        "  what():  CUDA error: an illegal memory access was encountered\n"))).facts
    assert f["failed_hosts"] == [header.split()[-1]]
    from traindoc.parse.benchmarks import parse_nodelist

    assert parse_nodelist("Hostname: cn-234 and more") is None


# -- issue 27: the first failure, not the first line that looks bad ---------------------------

def test_a_monitored_barrier_report_is_the_timeouts_consequence_not_the_failure() -> None:
    # rank 1 printed "successfully reached monitoredBarrier, but received errors while waiting
    # for send/recv from rank 0": a RuntimeError of the monitor, raised by the barrier's timeout
    inc = traindoc.load(DATA / "corpus" / "timeout" / "timeout-roboorchardlab-33" / "logs")
    r = gpu_crash.diagnose(inc)
    assert r.facts["error_kind"] != "python"
    assert 1 not in r.facts["failed_ranks"]


@pytest.mark.parametrize("sample", ["drill_hang", "gloo_desync_hang"])
def test_the_agents_signal_exception_is_teardown_not_a_python_failure(sample: str) -> None:
    # torchelastic's "SignalException: Process 9570 got signal: 15": the hang was killed
    r = gpu_crash.diagnose(traindoc.load(DATA / "deadlock" / sample))
    assert r.facts["error_kind"] != "python" and r.facts["failed_ranks"] == []


def test_a_python_error_after_a_timeout_on_the_same_rank_is_a_consequence(tmp_path: Path) -> None:
    # a real watchdog line, then the dump helper that ran after it raised a TypeError
    inc = load_text(tmp_path, (
        "[rank3]:[E708 01:47:23.901930947 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=2901, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600070 milliseconds before timing out.\n"
        "[rank3]: Traceback (most recent call last):\n"
        "[rank3]:   File \"train.py\", line 88, in dump_state\n"
        "[rank3]: TypeError: 'NoneType' object is not subscriptable\n"))
    ev = gpu_crash.analyse(inc).events
    py = ev[ev["kind"] == "python"]
    assert len(py) and (py["role"] == "cascade").all()


def test_an_abort_that_ends_a_peers_symptom_is_no_first_failure() -> None:
    # tatsu-lab/stanford_alpaca#207: "… taking the entire process down. terminate called after
    # throwing an instance of 'std::runtime_error' what(): NCCL error: remote process exited or
    # there was a network error …": the abort is how NCCL's report of a peer ended this process
    inc = traindoc.load(DATA / "corpus" / "gpu_crash" / "gpu_crash-stanford-alpaca-207" / "logs")
    r = gpu_crash.diagnose(inc)
    assert r.facts["failed_ranks"] == [] and r.facts["error_kind"] != "signal"
    assert r.verdict.startswith("Only symptoms of a peer's failure")


# --- drain only on hardware evidence, only a host the log names (issue 27) --------------------

def _drain(r):
    return next((a for a in r.actions if a.id == "drain_node"), None)


def test_nccl_cuda_failure_invalid_argument_drains_nothing(tmp_path: Path) -> None:
    text = ("node-a:4242:4300 [0] NCCL WARN Cuda failure 'invalid argument'\n"
            "node-a:4242:4300 [0] NCCL INFO transport/p2p.cc:275 -> 1\n")
    _, r = diag(tmp_path, text)
    assert r.facts["error_kind"] == "nccl_error"
    assert _drain(r) is None and all("scontrol" not in a.how for a in r.actions)
    assert r.actions[0].id == "debug_cuda_in_nccl"


def test_a_python_error_drains_nothing(tmp_path: Path) -> None:
    text = ("[rank2]: Traceback (most recent call last):\n"
            "[rank2]:   File \"train.py\", line 3, in <module>\n"
            "[rank2]: TypeError: unsupported operand type(s) for +: 'int' and 'str'\n")
    _, r = diag(tmp_path, text)
    assert _drain(r) is None and all("scontrol" not in a.how for a in r.actions)


def test_the_schedulers_node_failure_names_the_host_to_drain(tmp_path: Path) -> None:
    text = "srun: error: Node failure on gpu-node-7\n"
    _, r = diag(tmp_path, text)
    assert r.facts["failed_hosts"] == ["gpu-node-7"]
    drain = _drain(r)
    assert drain is not None and "nodename=gpu-node-7 state=drain" in drain.how


def test_a_drain_without_a_named_host_never_guesses_the_node(tmp_path: Path) -> None:
    text = ("[rank11]: RuntimeError: CUDA error: uncorrectable ECC error encountered\n")
    _, r = diag(tmp_path, text)
    drain = _drain(r)
    assert drain is not None
    assert "GPUs per node" not in drain.how and "sed -n" not in drain.how
    assert "do not name the host of rank 11" in drain.how


def test_a_drain_reason_is_never_cut_mid_word(tmp_path: Path) -> None:
    text = ("[rank0]: RuntimeError: CUDA error: GPU is lost and the framebuffer memory of "
            "this device can no longer be read by the driver\n")
    _, r = diag(tmp_path, text)
    drain = _drain(r)
    assert drain is not None
    reason = drain.how.split('reason="', 1)[1].split('"', 1)[0].split(" (job", 1)[0]
    words = ("CUDA error: GPU is lost and the framebuffer memory of this device can no longer "
             "be read by the driver").split()
    assert reason.split()[-1] in words, reason  # whole words only


# Two or more processes abort at once: their terminate lines (whole, or interleaved into shards
# of the type name) come before the what() they share. Real lines: huggingface/m4-logs
# tr_141 …-try5/README.md (two clean copies), huggingface/open-r1#620 (shards, a wrapped line).
INTERLEAVED_TERMINATES = {
    "m4-logs tr_141 try5": (
        "terminate called after throwing an instance of 'c10::CUDAError'\n"
        "terminate called after throwing an instance of 'c10::CUDAError'\n"
        "  what():  CUDA error: unknown error\n"
        "Exception raised from query at ../aten/src/ATen/cuda/CUDAEvent.h:91 (most recent call "
        "first):\n",
        "cuda_error", "CUDA error: unknown error", None),
    "open-r1#620": (
        "terminate called after throwing an instance of 'c10::DistBackendErrorterminate called "
        "after throwing an instance of ''\n"
        "terminate called after throwing an instance of 'terminate called after throwing an "
        "instance of 'terminate called after throwing an instan\n"
        "ce of 'c10::DistBackendErrorc10::DistBackendError'\n"
        "terminate called after throwing an instance of 'c10::DistBackendErrorc10::DistBackendError'\n"
        "c10::DistBackendError'\n'\n'\n"
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread "
        "terminated with exception: [Rank 3] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=112, NumelOut=112, Timeout(ms)=1800000) "
        "ran for 1800011 milliseconds before timing out.\n",
        "watchdog_terminated", "Process group watchdog thread terminated with exception", 3),
}


@pytest.mark.parametrize("name", list(INTERLEAVED_TERMINATES))
def test_interleaved_terminate_lines_share_one_what(tmp_path: Path, name: str) -> None:
    text, code, message, rank = INTERLEAVED_TERMINATES[name]
    e = load_text(tmp_path, text).errors
    assert list(e["code"]) == [code]
    assert e.iloc[0]["message"] == message
    assert (None if pd.isna(e.iloc[0]["rank"]) else int(e.iloc[0]["rank"])) == rank


# A launcher that exits with its child's -N is seen by ssh/pdsh, a wrapper or a container as the
# unsigned byte 256-N: death by signal N. Real lines: determined-ai/determined's
# cifar10_cpu_offloading README (DeepSpeed's launcher under pdsh, 247 = -9),
# deepspeedai/DeepSpeedExamples#614 (DeepSpeed-Chat's wrapper, 249 = -7), deepspeedai/DeepSpeed#3232
# (the same launcher line with the signed code).
UNSIGNED_EXITS = [
    ("[ERROR] [launch.py:184:sigkill_handler] ['python3', '-m', 'determined.exec.harness', "
     "'model_def_OOM_offload:CIFARTrial'] exits with return code = 247", 247, "SIGKILL"),
    ("pdsh@ip-172-31-36-1: 172.31.36.1: ssh exited with exit code 247", 247, "SIGKILL"),
    ("RuntimeError: Step 1 exited with non-zero status 249", 249, "SIGBUS"),
    ("[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', "
     "'main.py', '--local_rank=0'] exits with return code = -9", -9, "SIGKILL"),
]


@pytest.mark.parametrize(("line", "code", "sig"), UNSIGNED_EXITS)
def test_a_negative_return_code_as_an_unsigned_byte_is_a_signal(line, code, sig) -> None:
    row = errors.parse_exit(line)
    assert row is not None and (row["exitcode"], row["signal"]) == (code, sig)


def test_exit_255_is_not_a_signal() -> None:
    # exit(-1) is 255: a program's own error code, not a signal
    from traindoc.parse.torchrun import signal_name
    assert signal_name(255) is None and signal_name(1) is None and signal_name(137) == "SIGKILL"


# Kubernetes' eviction for a resource other than memory: the kubelet stops the pod. Real lines:
# kubernetes/kubernetes#91600 (kubectl describe pod), cloud-ark/kubeplus#1382.
EVICTIONS = [
    "Message:        The node was low on resource: ephemeral-storage. Container ebaogi-bff-app "
    "was using 34260Ki, which exceeds its request of 0. ",
    "Message:      The node was low on resource: ephemeral-storage. Threshold quantity: "
    "2146223340, available: 1883424Ki. Container helmer was using 10304Ki, request is 10Mi, has "
    "larger consumption of ephemeral-storage.",
]


@pytest.mark.parametrize("line", EVICTIONS)
def test_an_eviction_for_disk_is_a_failure(line: str) -> None:
    row = err(line)
    assert (row["code"], row["kind"]) == ("k8s_evicted", "signal")
    assert row["message"].startswith("The node was low on resource: ephemeral-storage")


def test_an_eviction_for_memory_stays_oom() -> None:
    # kubeflow/kubeflow#1261
    row = err("The node was low on resource: memory.")
    assert (row["code"], row["kind"]) == ("k8s_evicted_memory", "oom")


# slurmstepd's memory-limit kill: the job's cgroup passed its --mem, SLURM kills it. Real lines:
# coqui-ai/STT#2238 (no host: its CANCELLED line names xantipa), bcbio/bcbio-nextgen#2393 and
# openbabel/openbabel#2658 (slurmstepd-HOST: prefix).
MEM_LIMIT_KILLS = [
    ("slurmstepd: error: Job 7518 exceeded memory limit (626359956 > 512000000), being killed",
     None),
    ("slurmstepd-dback-c11-n01: error: Job 848444 exceeded memory limit (33715636 > 32757760), "
     "being killed", "dback-c11-n01"),
    ("slurmstepd-falkor7: error: Step 1141810.0 exceeded memory limit (52917772 > 20971520), "
     "being killed", "falkor7"),
]


@pytest.mark.parametrize(("line", "host"), MEM_LIMIT_KILLS)
def test_a_slurm_memory_limit_kill_is_a_host_oom(line: str, host: str | None) -> None:
    row = err(line)
    assert (row["code"], row["kind"]) == ("slurm_mem_limit", "oom")
    assert "exceeded memory limit" in row["message"] and row.get("host") == host


def test_a_memory_limit_kill_takes_the_host_of_its_cancelled_line(tmp_path: Path) -> None:
    # coqui-ai/STT#2238: the kill names no host, the job's CANCELLED line two lines on does
    inc = load_text(tmp_path, "Epoch 0 | Steps: 93 | Loss: 24.580695\n"
                    "slurmstepd: error: Job 7518 exceeded memory limit (626359956 > 512000000), "
                    "being killed\nslurmstepd: error: Exceeded job memory limit\n"
                    "slurmstepd: error: *** JOB 7518 ON xantipa CANCELLED AT "
                    "2022-06-10T17:11:35 ***\n")
    facts = gpu_crash.diagnose(inc).facts
    assert facts["failed_hosts"] == ["xantipa"] and facts["error_kind"] == "oom"
    assert "exceeded memory limit" in facts["error_message"]


# NCCL's WARN lines that name the far end of a failed link. Real lines: NVIDIA/nccl#1405 and
# #1814 (InfiniBand retries exhausted, status 12: the reporting host and its peer);
# stas00/ml-engineering's slurm-users.md and pytorch/pytorch#38702 (the peer refused the
# connection: that machine is the broken one).
LINK_FAULTS = [
    ("kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
     "10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid "
     "fd00:1148:9000:5000:4:200:3:ff22 remoteGidsfd00:1148:9000:5000:4:200:3:ff1f",
     ["10.216.210.236", "kp-ddp-worker-0"]),
    ("hostname-test:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
     "172.36.143.59<44206> with status=12 opcode=129 len=65536 vendor err 129 (Recv) localGid "
     "::ffff:29.87.88.182 remoteGids::ffff:29.87.4.221", ["172.36.143.59", "hostname-test"]),
    ("r11i6n2:486514:486651 [1] include/socket.h:403 NCCL WARN Connect to 10.148.3.247<56821> "
     "failed : Connection refused", ["10.148.3.247"]),
    ("NCCL WARN Connect to 10.38.10.112<21724> failed : Connection refused", ["10.38.10.112"]),
]


@pytest.mark.parametrize(("line", "hosts"), LINK_FAULTS)
def test_nccl_names_the_machines_at_a_failed_link(tmp_path: Path, line: str,
                                                  hosts: list[str]) -> None:
    facts = gpu_crash.diagnose(load_text(tmp_path, line + "\n")).facts
    assert facts["error_kind"] == "nccl_error" and facts["failed_hosts"] == hosts


def test_a_peer_that_went_away_names_no_host(tmp_path: Path) -> None:
    # NVIDIA/nccl#795: a broken pipe is the peer's process gone (a victim's view); the IB
    # error quoted inside torch's ncclRemoteError has no reporting host (stanford_alpaca#207)
    for line in ("host-a:1:2 [0] misc/socket.cc:503 NCCL WARN Net : Call to recv from "
                 "10.200.84.247<58355> failed : Broken pipe",
                 "NCCL error: remote process exited or there was a network error, NCCL version "
                 "2.14.3 ncclRemoteError: A call failed possibly due to a network error or a "
                 "remote process exiting prematurely. Last error: NET/IB : Got completion from "
                 "peer 11.214.147.122<39138> with error 12, opcode 0, len 0, vendor err 129"):
        facts = gpu_crash.diagnose(load_text(tmp_path, line + "\n")).facts
        assert facts["error_kind"] == "nccl_error" and facts["failed_hosts"] == [], line


# Hardware faults on more than one machine: each host with its own ECC/hardware Xid is a failed
# host, and each code is reported. Real lines: HuggingFaceM4's memo of Xid alerts (m4-logs
# memos/README.md), one file per alert. No second source with two hosts was found. A negative
# control (made up from the memo's second alert): an application Xid (13, the program's fault)
# on another host is not added.
M4_XID_ALERTS = {
    "xid-ip-26-0-146-100.log": "Xid errors on instance: ip-26-0-146-100, Error: May 19 07:08:57 "
    "ip-26-0-146-100 kernel: [680111.646286] NVRM: Xid (PCI:0000:10:1c): 63, pid=1850, Row "
    "Remapper: New row marked for remapping, reset gpu to activate\n",
    "xid-ip-26-0-147-135.log": "Xid errors on instance: ip-26-0-147-135, Error: May 29 01:37:38 "
    "ip-26-0-147-135 kernel: [257087.812628] NVRM: Xid (PCI:0000:90:1c): 64, ...\n",
}


def test_every_host_with_a_hardware_xid_is_a_failed_host(tmp_path: Path) -> None:
    for name, text in M4_XID_ALERTS.items():
        (tmp_path / name).write_text(text)
    facts = gpu_crash.diagnose(traindoc.load(tmp_path)).facts
    assert facts["failed_hosts"] == ["ip-26-0-146-100", "ip-26-0-147-135"]
    assert facts["xid_codes"] == [63, 64]


def test_an_application_xid_elsewhere_is_no_failed_host(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text(M4_XID_ALERTS["xid-ip-26-0-146-100.log"])
    (tmp_path / "b.log").write_text(
        "Xid errors on instance: ip-26-0-147-135, Error: May 29 01:37:38 ip-26-0-147-135 kernel: "
        "[257087.812628] NVRM: Xid (PCI:0000:90:1c): 13, Graphics Exception\n")
    facts = gpu_crash.diagnose(traindoc.load(tmp_path)).facts
    assert facts["failed_hosts"] == ["ip-26-0-146-100"]


# pdsh / DeepSpeed's launcher name the local node "localhost" (no digit in it) before the rank
# tag. Real lines: two runs of stark-sim/megatron-deepspeed-lock-clock (dual8_tp4pp1dp2 r2 and
# watch_and_launch_dual8), each its own log.
LOCALHOST_LINES = [
    ("localhost: [rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/"
     "distributed/c10d/NCCLUtils.cpp:230, unhandled cuda error (run with NCCL_DEBUG=INFO for "
     "details), NCCL version 2.27.5", 0),
    ("localhost: [rank1]:[E328 01:06:50.505414292 ProcessGroupNCCL.cpp:683] [Rank 1] Watchdog "
     "caught collective operation timeout: WorkNCCL(SeqNum=8, OpType=ALLREDUCE, NumelIn=1, "
     "NumelOut=1, Timeout(ms)=1800000) ran for 1800014 milliseconds before timing out.", 1),
]


@pytest.mark.parametrize(("line", "rank"), LOCALHOST_LINES)
def test_pdsh_localhost_prefix_is_a_host_before_the_rank(line: str, rank: int) -> None:
    from traindoc.parse.prefixes import demux
    body, origin = demux(line)
    assert (origin.host, origin.rank) == ("localhost", rank) and body.startswith(("torch", "[E"))


# DeepSpeed's launcher (launch.py sigkill_handler) prints the dead process's return code with
# ``cmd``, the last command its spawn loop built: always its last local rank. Real lines: the
# dual8_tp4pp1dp2 r2 log (rank 0 failed, the line names --local_rank=3 of 4) and
# deepspeedai/DeepSpeedExamples#626 (``deepspeed --num_gpus 2``: --local_rank=1).
def test_deepspeeds_exit_line_names_its_last_rank_not_the_failed_one(tmp_path: Path) -> None:
    text = (LOCALHOST_LINES[0][0] + "\n"
            "localhost: [rank0]: ncclUnhandledCudaError: Call to CUDA function failed.\n"
            "localhost: [2026-03-28 00:24:52,547] [ERROR] [launch.py:341:sigkill_handler] "
            "['/usr/bin/python3', '-u', 'pretrain_gpt.py', '--local_rank=3', "
            "'--tensor-model-parallel-size', '4'] exits with return code = 1\n")
    facts = gpu_crash.diagnose(load_text(tmp_path, text)).facts
    assert facts["failed_ranks"] == [0] and facts["failed_hosts"] == ["localhost"]
    # alone, the line is all there is: its rank stays the reading (DeepSpeedExamples#626)
    alone = ("[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['/global/D1/homes/"
             "sushant/sushanta/venv/bin/python3.10', '-u', 'trainCLM.py', '--local_rank=1', "
             "'--deepspeed', '/home/sushant/D1/sushanta/try/nepaligpt/clm/config/"
             "deepspeed_config.json'] exits with return code = -11\n")
    assert gpu_crash.diagnose(load_text(tmp_path, alone, "b.log")).facts["failed_ranks"] == [1]


# Determined's short log form: "[f35a2cc1] " (the container's id: no machine), "[rank=0] ", and
# a pdsh host prefix after it. DeepSpeed's launcher answers its child's death with 'Killing
# subprocess' lines and then the child's code: those lines are no earlier failure. Real lines:
# determined-ai/determined's cifar10 cpu-offloading example README (two containers, two hosts).
DETERMINED_LINES = (
    "[f35a2cc1] [rank=0] [INFO] [logging.py:69:log_dist] [Rank 0] Saving model checkpoint: "
    "/tmp/8596df39-c441-4259-a890-705a32f96326/model0/zero_pp_rank_0_mp_rank_00_model_states.pt\n"
    "[f35a2cc1] 172.31.42.141: [INFO] [launch.py:178:sigkill_handler] Killing subprocess 190\n"
    "[f35a2cc1] 172.31.36.1: [INFO] [launch.py:178:sigkill_handler] Killing subprocess 204\n"
    "[f35a2cc1] 172.31.42.141: [ERROR] [launch.py:184:sigkill_handler] ['python3', '-m', "
    "'determined.launch.wrap_rank', 'RANK', '--', 'python3', 'train.py'] exits with return code "
    "= 247\n"
    "[f35a2cc1] 172.31.36.1: [ERROR] [launch.py:184:sigkill_handler] ['python3', '-m', "
    "'determined.launch.wrap_rank', 'RANK', '--', 'python3', 'train.py'] exits with return code "
    "= 247\n"
    "[f35a2cc1] pdsh@ip-172-31-36-1: 172.31.36.1: ssh exited with exit code 247\n")


def test_determined_short_tags_and_the_host_behind_them(tmp_path: Path) -> None:
    from traindoc.parse.prefixes import demux
    first, third = DETERMINED_LINES.splitlines()[0], DETERMINED_LINES.splitlines()[1]
    assert demux(first)[1].rank == 0 and demux(third)[1].host == "172.31.42.141"
    facts = gpu_crash.diagnose(load_text(tmp_path, DETERMINED_LINES)).facts
    assert facts["failed_hosts"] == ["172.31.42.141"] and "247" in facts["error_message"]


# torch's DataLoader reporting a worker that a signal killed. Real lines: facebookresearch/
# pycls#146, sutrack#15 (segfault), THU-DA-6D-Pose-Group/GDR-Net#16 (bus error: shm),
# hezhangsprinter/DCPDN#58 (the C++ handler's bus-error line).
DATALOADER_SIGNALS = [
    ("RuntimeError: DataLoader worker (pid 624) is killed by signal: Segmentation fault. ",
     "SIGSEGV"),
    ("RuntimeError: DataLoader worker (pid 3216) is killed by signal: Bus error. It is possible "
     "that dataloader's workers are out of shared memory. Please try to raise your shared memory "
     "limit.", "SIGBUS"),
    ("ERROR: Unexpected segmentation fault encountered in worker.", "SIGSEGV"),
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
     "shared memory (shm).", "SIGBUS"),
]


@pytest.mark.parametrize(("line", "sig"), DATALOADER_SIGNALS)
def test_a_dataloader_worker_killed_by_a_signal_is_a_signal(line: str, sig: str) -> None:
    row = err(line)
    assert (row["kind"], row["code"]) == ("signal", sig)


@pytest.mark.parametrize("line, bus", [
    # huggingface/m4-logs memos/README (the corpus case gpu_crash-m4-logs-memos-readme)
    ("May 19 07:08:57 ip-26-0-146-100 kernel: [680111.646286] NVRM: Xid (PCI:0000:10:1c): 63, "
     "pid=1850, Row Remapper: New row marked for remapping, reset gpu to activate", "0000:10:1c"),
    # the driver's older wording without 'PCI:' (parse/xid.py's docstring, leptonai/gpud tests)
    ("NVRM: Xid (0000:03:00): 14, Channel 00000001", "0000:03:00"),
    # a bare fall off the bus, no domain (NVIDIA/open-gpu-kernel-modules issues)
    ("NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.", "0000:29:00"),
])
def test_pci_bus_id_of_an_xid_line(line: str, bus: str) -> None:
    from traindoc.parse.xid import parse_xid, pci_bus_id
    row = parse_xid(line)
    assert row is not None and pci_bus_id(row["message"]) == bus


def test_pci_bus_id_of_a_lost_gpu_and_none() -> None:
    from traindoc.parse.xid import parse_gpu_lost, pci_bus_id
    row = parse_gpu_lost("Unable to determine the device handle for GPU00000000:3B:00.0: Unknown Error")
    assert row is not None and pci_bus_id(row["message"]) == "0000:3b:00"
    assert pci_bus_id("CUDA error: an illegal memory access was encountered") is None


def test_pci_bus_ids_fact_names_each_failed_gpu() -> None:
    """Xid 63 and 64 on two hosts (m4 memos): both GPUs' bus ids, in order of appearance."""
    inc = traindoc.load(CORPUS / "gpu_crash" / "gpu_crash-m4-logs-memos-readme" / "logs",
                        progress=False)
    a = gpu_crash.analyse(inc)
    assert a.facts["pci_bus_ids"] == ["0000:10:1c", "0000:90:1c"]


@pytest.mark.parametrize("case", ["gpu_crash-akash-support-244", "gpu_crash-pytorch-51382"])
def test_a_dmesg_spanning_days_is_no_hang(case: str) -> None:
    """Xid lines of one host days apart (akash-network/support#244: Jul 28 to Aug 5; pytorch#51382)
    are several incidents on the host, not survivors that hung for days: no exit delay."""
    a = gpu_crash.analyse(traindoc.load(CORPUS / "gpu_crash" / case / "logs", progress=False))
    assert a.exit_delay_s is None
    assert not any(f.id == "exit_delay" for f in gpu_crash.report(a).findings)


def test_a_cascade_the_launcher_logged_before_the_exit_record_is_not_after_it() -> None:
    # hallo2#56: torchrun sends SIGTERM to ranks 0, 2, 3 at 02:04:28 and writes rank 1's
    # "failed (exitcode: -11)" record at 02:04:31, after them
    inc = traindoc.load(CORPUS / "gpu_crash" / "gpu_crash-hallo2-56" / "logs", progress=False)
    report = gpu_crash.report(gpu_crash.analyse(inc))
    cascade = next(f.title for f in report.findings if f.id == "cascade")
    assert "failed with it" in cascade and "3 s before the line that names it" in cascade
    assert "-3 s" not in cascade


# An exception raised inside a signal handler while the job is torn down is no crash:
# microsoft/Megatron-DeepSpeed's random-LTD log (Ctrl-C, then DeepSpeed runner's sigkill_handler
# fails) and scalableminds/webknossos-libs#851 (cluster_tools' handle_kill fails on SIGINT).
HANDLER_TRACEBACKS = {
    "deepspeed_runner.log": [
        "KeyboardInterrupt",
        "Traceback (most recent call last):",
        '  File "/opt/conda/bin/deepspeed", line 6, in <module>',
        "    main()",
        '  File "/opt/conda/lib/python3.8/site-packages/deepspeed/launcher/runner.py", line 519, '
        "in main",
        "    result.wait()",
        '  File "/opt/conda/lib/python3.8/subprocess.py", line 1083, in wait',
        "    return self._wait(timeout=timeout)",
        '  File "/opt/conda/lib/python3.8/site-packages/deepspeed/launcher/runner.py", line 511, '
        "in sigkill_handler",
        "    result_kill = subprocess.Popen(kill_cmd, env=env)",
        "NameError: free variable 'kill_cmd' referenced before assignment in enclosing scope",
    ],
    "cluster_tools.log": [
        "Traceback (most recent call last):",
        '  File "<string>", line 1, in <module>',
        '  File "/envs/vx-py39/lib/python3.9/multiprocessing/spawn.py", line 116, in spawn_main',
        "    exitcode = _main(fd, parent_sentinel)",
        '  File "/envs/vx-py39/lib/python3.9/threading.py", line 1477, in _shutdown',
        "    lock.acquire()",
        '  File "/envs/vx-py39/lib/python3.9/site-packages/cluster_tools/schedulers/'
        'cluster_executor.py", line 132, in handle_kill',
        "    existing_sigint_handler(signum, frame)",
        "TypeError: 'Handlers' object is not callable",
    ],
}


@pytest.mark.parametrize("name", sorted(HANDLER_TRACEBACKS))
def test_error_raised_in_a_signal_handler_is_teardown(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("\n".join(HANDLER_TRACEBACKS[name]) + "\n")
    inc = traindoc.load(tmp_path)
    ev = gc_events.failure_events(inc)
    py = ev[(ev["kind"] == "python") & (ev["table"] == "errors")]
    assert len(py) and (py["role"] == "cascade").all()
    assert gpu_crash.analyse(inc).facts["error_kind"] is None
    # the same exception outside a handler stays the failure
    plain = [ln.replace("sigkill_handler", "main").replace("handle_kill", "run")
             for ln in HANDLER_TRACEBACKS[name]]
    (tmp_path / name).write_text("\n".join(plain) + "\n")
    assert gpu_crash.analyse(traindoc.load(tmp_path)).facts["error_kind"] == "python"


@pytest.mark.parametrize(("line", "kind", "message"), [
    # mozilla/translations#1002 (Marian in a Taskcluster task)
    ("[task 2025-01-21T16:30:37.188Z] [2025-01-21 16:30:37] Error: CUDA error 999 'unknown error' "
     "- /builds/worker/fetches/marian-source/src/tensors/gpu/algorithm.cu:54: "
     "cudaStreamSynchronize(0)", "cuda_error", "CUDA error 999 'unknown error'"),
    # marian-nmt/marian-dev#439: code 2 is cudaErrorMemoryAllocation
    ("[2019-04-15 08:34:14] Error: CUDA error 2 'out of memory' - /data/home/mt/tools/marian/src/"
     "tensors/gpu/device.cu:32: cudaMalloc(&data_, size)", "oom", "CUDA error 2 'out of memory'"),
])
def test_cpp_trainer_cuda_error_with_its_code(line: str, kind: str, message: str) -> None:
    row = err(line)
    assert (row["kind"], row["message"]) == (kind, message)


@pytest.mark.parametrize(("line", "rows"), [
    # Paddle's old launcher (launch_utils.watch_local_trainers): global ranks, no exit code.
    # PaddlePaddle/Paddle#33074 (4 trainers, rank 3) and PaddlePaddle/Paddle#29172 (1 trainer)
    ("ERROR 2021-05-24 17:17:14,611 launch_utils.py:545] ABORT!!! Out of all 4 trainers, the "
     "trainer process with rank=[3] was aborted. Please check its log.",
     [{"rank": 3, "_named_rank": True}]),
    ("ABORT!!! Out of all 1 trainers, the trainer process with rank=[0] was aborted. Please "
     "check its log.", [{"rank": 0, "_named_rank": True}]),
    # several ranks at once (the launcher appends every rank whose return code is non-zero)
    ("ABORT!!! Out of all 8 trainers, the trainer process with rank=[2, 3] was aborted. Please "
     "check its log.", [{"rank": 2, "_named_rank": True}, {"rank": 3, "_named_rank": True}]),
    # Paddle's new launcher (paddle.distributed.launch >= 2.3): the container's rank on its node
    # (its env shows PADDLE_LOCAL_RANK 6, PADDLE_GLOBAL_RANK 8 in Paddle's launch guide) and
    # the exit code; PaddlePaddle/ERNIE#1291 (an erniekit SFT run)
    ("Container rank 6 status failed cmd ['/usr/bin/python', '-u', 'train.py'] code 1 log "
     "log/default.fxemxd.6.log", {"local_rank": 6, "exitcode": 1, "signal": None}),
    ("Container rank 0 status failed cmd ['/opt/conda/envs/python35-paddle120-env/bin/python', "
     "'-u', '/home/aistudio/ERNIE/erniekit/launcher.py', 'train', 'examples/configs/ERNIE-4.5-"
     "0.3B/sft/yue_zh_sft_full.yaml'] code 1 log erniekit_dist_log/workerlog.0",
     {"local_rank": 0, "exitcode": 1, "signal": None}),
    ("Container rank 2 status failed cmd ['python', '-u', 'train.py'] code -9 log "
     "log/workerlog.2", {"local_rank": 2, "exitcode": -9, "signal": "SIGKILL"}),
])
def test_paddle_launcher_records_are_exits(line: str, rows: object) -> None:
    assert reaches(errors.PARSERS[1:], line)
    assert errors.parse_exit(line) == rows


def test_paddle_abort_names_the_failed_rank_without_its_log(tmp_path: Path) -> None:
    # only the launcher's console (Paddle#33074): the rank that failed is the one it names
    text = ("INFO 2021-05-24 17:17:14,611 launch_utils.py:307] terminate all the procs\n"
            "ERROR 2021-05-24 17:17:14,611 launch_utils.py:545] ABORT!!! Out of all 4 trainers, "
            "the trainer process with rank=[3] was aborted. Please check its log.\n"
            "INFO 2021-05-24 17:17:17,615 launch_utils.py:307] terminate all the procs\n")
    _, r = diag(tmp_path, text)
    assert r.facts["failed_ranks"] == [3]


def test_paddle_container_failed_names_the_rank_of_an_unranked_traceback(tmp_path: Path) -> None:
    # PaddlePaddle/ERNIE#1291: the launcher's console holds the worker's traceback (no rank
    # tag) and then the new launcher's record of the container that failed
    text = ("Traceback (most recent call last):\n"
            "  File \"/home/aistudio/ERNIE/erniekit/launcher.py\", line 46, in <module>\n"
            "    launch()\n"
            "ValueError: (InvalidArgument) concat(): argument 'x' (position 0) must be list of "
            "Tensors, but got empty list (at /paddle/paddle/fluid/pybind/eager_utils.cc:1393)\n"
            "\n"
            "LAUNCH INFO 2025-09-27 09:32:31,869 Pod failed\n"
            "LAUNCH ERROR 2025-09-27 09:32:31,869 Container failed !!!\n"
            "Container rank 0 status failed cmd ['/opt/conda/envs/python35-paddle120-env/bin/"
            "python', '-u', '/home/aistudio/ERNIE/erniekit/launcher.py', 'train', 'examples/"
            "configs/ERNIE-4.5-0.3B/sft/yue_zh_sft_full.yaml'] code 1 log erniekit_dist_log/"
            "workerlog.0\n"
            "LAUNCH INFO 2025-09-27 09:32:32,471 Exit code 1\n")
    _, r = diag(tmp_path, text)
    assert r.facts["failed_ranks"] == [0]
    assert r.facts["error_kind"] == "python"


# --- "make a crashed job exit instead of hanging" only where the logs show a hang or cannot tell --

def _exit_actions(path: Path) -> list:
    r = gpu_crash.diagnose(traindoc.load(str(path)))
    return [a for a in r.actions if a.id == "exit_on_failure"]


def test_exit_on_failure_is_not_advised_when_the_job_ended_promptly() -> None:
    """drill_cuda_oom: the launcher's exit record comes a second after the OOM."""
    assert _exit_actions(DATA / "gpu_crash" / "drill_cuda_oom") == []


def test_exit_on_failure_says_unknown_without_times() -> None:
    """bloom_seed's lines carry no time after the failure: whether it hung is unknown."""
    (act,) = _exit_actions(DATA / "gpu_crash" / "bloom_seed")
    assert "unknown" in act.title and "unknown" in act.why


def test_exit_on_failure_after_a_hang_states_it() -> None:
    """xid79_multinode: the last rank timed out 10 min after the Xid."""
    (act,) = _exit_actions(DATA / "gpu_crash" / "xid79_multinode")
    assert "unknown" not in act.title and "min after the first" in act.why


# traindoc's drill_nccl_duplicate_gpu (torch 2.11, NCCL 2.28.9 on an H200): two ranks' tracebacks
# interleave in torchrun's stream, so rank 0's "Last error:" and its text are lines apart
DUPLICATE_GPU_LOG = """\
[default0]:[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.28.9
[default0]:[rank0]: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.
[default0]:[rank0]: Last error:
[default1]:[rank1]:   File "/work/main/lib/traindoc/drills/worker.py", line 273, in sync_params
[default1]:[rank1]:     self.dist.broadcast(flat, src=0)
[default0]:[rank0]: Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 60
[default1]:[rank1]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:93, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.28.9
[default1]:[rank1]: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.
[default1]:[rank1]: Last error:
[default1]:[rank1]: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 60
"""


@pytest.mark.parametrize("engine", ["auto", "plain"])
def test_the_text_under_last_error_is_added_to_the_nccl_error(tmp_path: Path, engine: str) -> None:
    p = tmp_path / "torchrun.log"
    p.write_text(DUPLICATE_GPU_LOG)
    inc = traindoc.load(p, engine=engine)
    texts = inc.errors[inc.errors["code"] == "nccl_last_error_text"]
    assert list(texts["rank"]) == [0, 1] and list(texts["message"]) == [
        "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 60",
        "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 60"]
    facts = gpu_crash.report(gpu_crash.analyse(inc)).facts
    assert facts["error_kind"] == "nccl_error" and facts["failed_ranks"][:1] == [0]
    assert facts["error_message"].startswith("ncclInvalidUsage: This usually reflects")
    assert "last error: Duplicate GPU detected : rank 0 and rank 1" in facts["error_message"]


def test_the_nccl_drills_bundles_read_as_injected() -> None:
    """The GPU drills' bundles (NCCL on an H200): the duplicate-GPU error says what NCCL said."""
    facts = gpu_crash.report(gpu_crash.analyse(
        traindoc.load(DATA / "gpu_crash" / "drill_nccl_duplicate_gpu"))).facts
    assert "Duplicate GPU detected" in facts["error_message"]


# SLURM's time limit ends the run: the scheduler's signal on the host it names, said as such,
# with a resubmission as the first action (no drain, no who-killed-it). Two real lines: the JOB
# form (Mattias421/tdmolflow slurm-3658512.out) and the STEP form under srun -l (corpus
# gpu_crash-megatron-attn-bench-slurm-time-limit-it344)
@pytest.mark.parametrize("line, host", [
    ("slurmstepd: error: *** JOB 3658512 ON bessemer-node030 CANCELLED AT 2024-10-21T17:00:20 "
     "DUE TO TIME LIMIT ***", "bessemer-node030"),
    ("0: slurmstepd: error: *** STEP 1861140.1 ON nid007420 CANCELLED AT 2026-04-15T11:31:51 DUE "
     "TO TIME LIMIT ***", "nid007420"),
])
def test_slurm_time_limit_is_the_schedulers_signal(tmp_path: Path, line: str, host: str) -> None:
    text = ("tick 1938  kimg 96993.1   time 6d 23h 54m   sec/tick 307.0   sec/kimg 6.13\n"
            "tick 1939  kimg 97043.1   time 6d 23h 59m   sec/tick 306.7   sec/kimg 6.13\n"
            f"{line}\n")
    _, rep = diag(tmp_path, text)
    assert rep.facts["error_kind"] == "signal"
    assert "TIME LIMIT" in rep.facts["error_message"]
    assert rep.facts["failed_hosts"] == [host]
    assert rep.facts["last_iteration"] == 1939
    assert rep.verdict.startswith("The scheduler ended the job at its time limit")
    assert rep.actions[0].id == "time_limit"
    assert "drain_node" not in [a.id for a in rep.actions]
