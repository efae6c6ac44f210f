"""gpu_crash and timeout families on real lines (issue 26, round three): each family with its
corpus instance and at least one more real line from another source."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import traindoc
from traindoc.diagnose import gpu_crash, triage
from traindoc.diagnose.gpu_crash.events import EXCEPTION_WRAPPER_RE
from traindoc.parse.errors import parse_error


def _facts(tmp_path: Path, text: str, name: str = "job.log") -> dict:
    log = tmp_path / name
    log.write_text(text)
    return gpu_crash.diagnose(traindoc.load(str(log))).facts


# --- a Python exception is the error when torchrun only says "exitcode: 1" -------------------

TORCHRUN_EXIT_1 = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) "
                   "local_rank: {lr} (pid: {pid}) of binary: /opt/conda/bin/python\n")


@pytest.mark.parametrize("error, expected", [
    # THUDM/GLM-130B logs/2022.09.25-16:50:29.log (corpus gpu_crash-glm-130b-…-165029)
    ("ZeroDivisionError: division by zero", "ZeroDivisionError"),
    # THUDM/GLM-130B logs/2022.09.25-16:57:44.log
    ('RuntimeError: mask.size(2) == query_seq_len INTERNAL ASSERT FAILED at '
     '"csrc/megatron/scaled_masked_softmax_cuda.cu":51, please report a bug to PyTorch. ',
     "INTERNAL ASSERT FAILED"),
    # yangjianxin1/Firefly#32: a tokenizer's JSON error under a rich traceback
    ("Exception: expected value at line 1 column 1", "expected value at line 1 column 1"),
    # a port the host could not bind, though the words name the socket or the TCPStore:
    # JVrabel/LLM_KD logs/training.log (corpus gpu_crash-llm-kd-a100-eaddrinuse), torch >= 2.3
    ("RuntimeError: The server socket has failed to listen on any local network address. "
     "useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
     "address already in use"),
    # vllm-project/vllm#39015: the same as torch's DistNetworkError
    ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
     "network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: "
     "address already in use", "EADDRINUSE"),
    # meta-pytorch/torchtune#392: torch 1.11-2.2
    ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
     "network address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
     "already in use). The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - "
     "Address already in use).", "Address already in use"),
])
def test_the_workers_exception_is_the_message_of_an_exit_1(tmp_path: Path, error: str,
                                                           expected: str) -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/work/train.py", line 67, in <module>\n'
            "    main()\n"
            f"{error}\n" + TORCHRUN_EXIT_1.format(lr=0, pid=24024))
    f = _facts(tmp_path, text)
    assert f["error_kind"] == "python"
    assert expected in f["error_message"]


@pytest.mark.parametrize("error, kind", [
    # Z-Zheng/ChangeStar#5 (corpus gpu_crash-changestar-5): torch 1.9, DDP's first collective
    ("RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:911, unhandled "
     "system error, NCCL version 2.7.8", "nccl_error"),
    # torch >= 2.1's class for the same (vllm-project/vllm#4618's title)
    ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
     "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), "
     "NCCL version 2.20.5", "nccl_error"),
    # torch >= 2.1's OOM class (its message as torch 2.1 words it)
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
     "total capacty of 79.15 GiB of which 3.25 MiB is free.", "oom"),
])
def test_the_exit_1_record_names_the_rank_of_a_cuda_or_nccl_exception(
        tmp_path: Path, error: str, kind: str) -> None:
    """The worker's traceback names no rank; torchrun's record of its exit 1 below it does."""
    text = ("Traceback (most recent call last):\n"
            '  File "/work/train.py", line 67, in <module>\n'
            "    main()\n"
            f"{error}\n" + TORCHRUN_EXIT_1.format(lr=0, pid=31335))
    f = _facts(tmp_path, text)
    assert (f["error_kind"], f["failed_ranks"]) == (kind, [0])


def test_a_peers_exception_does_not_name_the_exit(tmp_path: Path) -> None:
    """A DistBackendError is what a rank saw of a peer, not its own error: the exit stays."""
    text = ("torch.distributed.DistBackendError: NCCL communicator was aborted on rank 0.\n"
            + TORCHRUN_EXIT_1.format(lr=0, pid=7))
    assert "DistBackendError" not in (_facts(tmp_path, text)["error_message"] or "")


@pytest.mark.parametrize("lines, expected", [
    # JVrabel/LLM_KD logs/training_detailed.log (corpus gpu_crash-llm-kd-a100-local-rank-argparse)
    (["usage: train_distr.py [-h] --config CONFIG [--resume RESUME]",
      "                      [--local_rank LOCAL_RANK]",
      "train_distr.py: error: unrecognized arguments: --local-rank=0",
      "E0211 19:15:09.221498 23456244216256 torch/distributed/elastic/multiprocessing/api.py:833]"
      " failed (exitcode: 2) local_rank: 0 (pid: 473728) of binary: /usr/bin/python"],
     "unrecognized arguments: --local-rank=0"),
    # wuyike2000/MLDT#3
    (["run_chatglm.py: error: the following arguments are required: --output_dir",
      "[2024-12-13 09:20:39,920] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
      "(exitcode: 2) local_rank: 0 (pid: 1280) of binary: /root/miniconda3/bin/python"],
     "the following arguments are required: --output_dir"),
])
def test_argparses_error_is_the_message_of_an_exit_2(tmp_path: Path, lines: list[str],
                                                      expected: str) -> None:
    f = _facts(tmp_path, "\n".join(lines) + "\n")
    assert f["error_kind"] == "python"
    assert expected in f["error_message"]


@pytest.mark.parametrize("line", [
    "gcc: error: unrecognized command-line option '-mavx512'",
    "error: the following arguments are required: --output_dir",
])
def test_other_error_lines_are_not_argparses(line: str) -> None:
    assert parse_error(line) is None or parse_error(line)["code"] != "argparse_error"


@pytest.mark.parametrize("line, code", [
    # stark-sim/megatron-deepspeed-lock-clock experiments/_screen_boot/
    # dual_tp2pp4dp2_static1185_20260320.log (corpus gpu_crash-megatron-deepspeed-lock-clock-
    # dual-tp2pp4dp2-static1185), under DeepSpeed's pdsh prefix and torch's rank prefix
    ("192.168.205.202: [rank13]: binascii.Error: Incorrect padding", "binascii.Error"),
    # Python's csv module on an over-long field
    ("_csv.Error: field larger than field limit (131072)", "_csv.Error"),
])
def test_a_modules_class_named_error_is_an_exception(tmp_path: Path, line: str,
                                                      code: str) -> None:
    log = tmp_path / "job.log"
    log.write_text(line + "\n")
    errs = traindoc.load(str(log)).errors
    assert list(errs["code"]) == [code]
    assert list(errs["kind"]) == ["python"]


def test_a_refused_connection_to_the_store_stays_a_peers(tmp_path: Path) -> None:
    """Only the bind of a taken port is local: a client's refused connection is not."""
    text = ("torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was "
            "likely closed. Did the remote server shutdown or crash?\n"
            + TORCHRUN_EXIT_1.format(lr=0, pid=7))
    assert "DistNetworkError" not in (_facts(tmp_path, text)["error_message"] or "")


# --- NCCL WARN lines of a failed system call are the host's own failure ----------------------

@pytest.mark.parametrize("line, host, words", [
    # pytorch/pytorch#37004 (corpus gpu_crash-pytorch-37004)
    ("node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : Permission "
     "denied", "node08", "shm_open failed"),
    # NVIDIA/nccl#290
    ("gpu2-ru7:2143:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No "
     "space left on device", "gpu2-ru7", "posix_fallocate failed"),
    # pytorch/ci-infra#490 (NCCL 2.2x wording of a full /dev/shm)
    ("mt-l-x86iavx512-45-172-t4-4-csmpw-runner-g4sfw-workflow:202016:202235 [0] "
     "misc/shmutils.cc:88 NCCL WARN Error: failed to extend /dev/shm/nccl-WU88OE to 9637892 "
     "bytes, error: No space left on device (28)",
     "mt-l-x86iavx512-45-172-t4-4-csmpw-runner-g4sfw-workflow", "failed to extend /dev/shm"),
    # NVIDIA/nccl#293 (corpus gpu_crash-nccl-293): a container's id is its host name
    ("42692884fcba:140:140 [0] include/socket.h:333 NCCL WARN Call to bind failed : Address "
     "already in use", "42692884fcba", "Address already in use"),
    # NVIDIA/nccl#1882: the ports of a large all-to-all exhausted
    ("node1:4242:4250 [0] misc/socket.cc:409 NCCL WARN Call to bind failed: Address already "
     "in use", "node1", "Address already in use"),
])
def test_a_failed_system_call_is_a_local_nccl_error(tmp_path: Path, line: str, host: str,
                                                    words: str) -> None:
    row = parse_error(line)
    assert row is not None and row["code"] == "nccl_warn_system" and row["host"] == host
    f = _facts(tmp_path, line + "\n")
    assert f["error_kind"] == "nccl_error" and words in f["error_message"]
    assert f["failed_hosts"] == [host]


def test_the_ras_clients_bind_is_no_failure() -> None:
    """NCCL >= 2.24's RAS client retries another port when its bind fails; the job goes on."""
    row = parse_error("A800:6801:6839 [1] ras/client_support.cc:159 NCCL WARN Call to bind "
                      "failed: Address already in use")
    assert row is not None and row["code"] == "nccl_warn"


@pytest.mark.parametrize("line", [
    # openai/parameter-golf records/track_10min_16mb/2026-03-17_NaiveBaseline/train.log (corpus
    # loss_spike-parameter-golf-naivebaseline-train): a healthy run, NCCL 2.23+ timestamps
    "[2026-03-18 14:38:12] pgut1-0:871784:871848 [5] ibvwrap.c:94 NCCL WARN Call to "
    "ibv_open_device failed",
    "[2026-03-18 14:38:12] pgut1-0:871784:871848 [5] p2p_plugin.c:565 NCCL WARN NET/IB : Unable "
    "to open device mlx5_an0",
    # zai-org/ImageReward#65: the same pair, then "NCCL INFO Using network IB"
    "65826-86bd789679-2dxbs:80746:80746 [3] transport/net_ib.cc:149 NCCL WARN NET/IB : Unable to "
    "open device mlx5_59",
    "65826-86bd789679-2dxbs:80744:80744 [1] misc/ibvwrap.cc:212 NCCL WARN Call to "
    "ibv_open_device failed",
    # horovod/horovod#685 (its title): no verbs library, NCCL uses sockets
    "ml3:32632:32662 [0] misc/ibvwrap.cu:63 NCCL WARN Failed to open libibverbs.so[.1]",
])
def test_an_ib_device_probe_that_falls_back_is_no_failure(line: str) -> None:
    assert parse_error(line) is None


def test_a_failed_verbs_call_on_an_open_device_stays_an_error() -> None:
    """NVIDIA/nccl#799: ibv_modify_qp failing on a device in use is a real failure."""
    row = parse_error("72bf7b08-26f3-4ebc-8b9d-85df3e4414c0:76786:77145 [3] misc/ibvwrap.cc:284 "
                      "NCCL WARN Call to ibv_modify_qp failed with error No such device")
    assert row is not None and row["kind"] == "nccl_error"


def test_a_bare_time_is_no_host() -> None:
    row = parse_error("19:30:48 [0] NCCL WARN Call to bind failed : Address already in use")
    assert row is not None and "host" not in row


# --- the run's length from `step:N/M` and `[e][i/N]` counters (timeout's total_steps) --------

@pytest.mark.parametrize("lines, last, total", [
    # KellerJordan/modded-nanogpt records/track_1_short/2025-01-04_SoftCap (corpus
    # timeout-modded-nanogpt-31d6c427)
    (["step:1389/1390 train_time:204113ms step_avg:148.02ms",
      "step:1390/1390 train_time:204266ms step_avg:148.02ms"], 1390, 1390),
    # openai/parameter-golf#839
    (["step:2400/20000 train_loss:2.1004 train_time:104264ms step_avg:43.44ms",
      "step:2450/20000 train_loss:2.2078 train_time:106409ms step_avg:43.43ms"], 2450, 20000),
    # open-mmlab/mmpose#2800 (corpus timeout-mmpose-2800)
    (["11/09 13:41:31 - mmengine - INFO - Epoch(train)   [1][  53/4405]  base_lr: 4.000000e-03 "
      "lr: 4.000000e-03  eta: 4 days, 6:56:17  time: 0.159001  data_time: 0.013465  memory: "
      "1620  loss: 11.404273  loss_kpt: 11.404273  acc_pose: 0.062500"], 53, 4405),
    # open-mmlab/mmengine#155
    (["04/21 21:03:53 - mmengine - INFO - Epoch(train) [1][80/90]  lr: 1.000e-02  eta: 0:00:03  "
      "time: 0.003  data_time: 0.000  memory: 0  loss: -47.0848"], 80, 90),
    # open-mmlab/mmdetection#2672 (mmcv's runner)
    (["2020-05-08 18:46:22,177 - mmdet - INFO - Epoch [1][1400/7517]\tlr: 0.00125, eta: 4:42:18, "
      "time: 0.594, data_time: 0.032, memory: 6836, loss_rpn_cls: 0.0934, loss: 0.4670"],
     1400, 7517),
])
def test_the_runs_length_is_read_from_the_step_counter(tmp_path: Path, lines: list[str],
                                                       last: int, total: int) -> None:
    from traindoc.diagnose import timeout

    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    f = timeout.diagnose(traindoc.load(str(log))).facts
    assert (f["last_step"], f["total_steps"]) == (last, total)


# --- the shell's "Killed" is a death by SIGKILL ------------------------------------------------

@pytest.mark.parametrize("lines", [
    # XavierXiao/Dreambooth-Stable-Diffusion#33 (corpus gpu_crash-dreambooth-stable-diffusion-33)
    ["Epoch 0: 0%| | 0/1010 [00:00<?, ?it/s]",
     "Epoch 0: 0%| | 1/1010 [00:02<47:26, 2.82s/it, loss=0.0249, v_num=0, train/losHere comes "
     "the checkpoint...",
     "Killed"],
    # castorini/hedwig#70
    ["100%██████████████████| 3000001/3000001 [03:33<00:00, 14061.26it/s]", "Killed"],
    # BVLC/caffe#886
    ["I0808 13:46:45.472862  2527 solver.cpp:142] Test score #1: 2.00962", "Killed", "Done."],
    # gc625/CenterPoint-KITTI tools/nohup.out (corpus gpu_crash-centerpoint-kitti-iassd-gan-killed):
    # the word glued to the last tqdm bar, which had no newline
    ["train:  12%|█▏        | 211/1767 [02:40<14:42,  1.76it/s, total_it=14347]\x1b[Aepochs:  20%|"
     "██        | 3/15 [1:27:15<5:56:40, 1783.41s/it, det_loss=2.59, loss=3.71, lr=0.01]Killed"],
])
def test_the_shells_killed_is_a_sigkill(tmp_path: Path, lines: list[str]) -> None:
    f = _facts(tmp_path, "\n".join(lines) + "\n")
    assert f["error_kind"] == "signal" and "Killed" in f["error_message"]


def test_a_bar_cut_by_the_next_message_is_the_last_step(tmp_path: Path) -> None:
    """Dreambooth-Stable-Diffusion#33: the bar at 1/1010 lost its closing bracket to the next
    message; the step reader took only the bar at 0/1010, the bar reader both."""
    lines = ["Epoch 0: 0%| | 0/1010 [00:00<?, ?it/s]",
             "Epoch 0: 0%| | 1/1010 [00:02<47:26, 2.82s/it, loss=0.0249, v_num=0, train/losHere "
             "comes the checkpoint...", "Killed"]
    assert _facts(tmp_path, "\n".join(lines) + "\n")["last_iteration"] == 1


# --- a step counter that restarts each epoch: the last step is in the last epoch -------------

def test_the_last_step_is_in_the_last_epoch(tmp_path: Path) -> None:
    # Alpha-VLLM/LLaMA2-Accessory#48 (corpus gpu_crash-llama2-accessory-48): MetricLogger lines
    lines = ["[05:21:10.402311] Epoch: [1]  [1500/1504]  lr: 0.000012  closs: 0.7704 (0.9509)  "
             "grad_norm: 0.2695 (0.3902)  time: 4.1524  data: 0.0003  max mem: 51710",
             "[05:25:06.033566] Epoch: [2]  [0/1504]  lr: 0.000012  closs: 0.9249 (0.9249)  time: "
             "5.8674  data: 1.3491  max mem: 51710",
             "[05:27:23.812437] Epoch: [2]  [30/1504]  lr: 0.000012  closs: 0.9175 (0.9249)  time: "
             "4.5800  data: 0.0002  max mem: 51710"]
    assert _facts(tmp_path, "\n".join(lines) + "\n")["last_iteration"] == 30
    # keke-nice/rPPG-MAE#8: the same logger (DeiT/MAE's) in another trainer, epoch and step
    log = tmp_path / "mae.log"
    log.write_text("Epoch: [2]  [200/208]  eta: 0:00:01  lr: 0.000148  loss: 0.3920 (0.4117)  "
                   "time: 0.1175  data: 0.0001  max mem: 16887\n")
    it = traindoc.load(str(log)).iterations
    assert (it["epoch"].iloc[0], it["iteration"].iloc[0]) == (2, 200)


# --- a failure line without a host, in a log whose NCCL lines name one machine ---------------

@pytest.mark.parametrize("lines, host", [
    # NVIDIA/nccl#1039 (corpus gpu_crash-nccl-1039): a pod's log, TensorFlow's error line
    (["2023/10/26 12:12:06 job-1111-2222-0:293:765 [0] NCCL INFO proxy.cc:614 -> 2 [Proxy Thread]",
      "2023/10/26 12:12:06 2023-10-26 12:12:06.704113: E hybridbackend/tensorflow/distribute/"
      "nccl/nccl_collective.cc:461] NCCL communication aborted: unhandled system error",
      "2023/10/26 12:12:07 job-1111-2222-0:293:763 [0] NCCL INFO comm 0x7fda2c015e20 rank 0 "
      "nranks 4 cudaDev 0 busId d9000 - Abort COMPLETE"], "job-1111-2222-0"),
    # sgl-project/sglang#4289: one node's NCCL lines, then torch's error
    (["node17-2:36748:36748 [0] NCCL INFO Bootstrap : Using ens5f0np0:192.168.89.206<0>",
      "node17-2:36750:36750 [2] NCCL INFO cudaDriverVersion 12020",
      "RuntimeError: NCCL error: unhandled system error"], "node17-2"),
])
def test_the_one_machine_of_nccls_lines_is_the_failed_host(tmp_path: Path, lines: list[str],
                                                           host: str) -> None:
    f = _facts(tmp_path, "\n".join(lines) + "\n")
    assert f["error_kind"] == "nccl_error" and f["failed_hosts"] == [host]


# --- torchelastic's JSON events (torch 1.9-1.10): a FAILED worker names its rank and host -----

PYTORCH_64990 = [
    '{"name": "torchelastic.worker.status.FAILED", "source": "WORKER", "timestamp": 0, "metadata": '
    '{"run_id": "1234", "global_rank": 1, "group_rank": 1, "worker_id": "28454", "role": "default"'
    ', "hostname": "ip-172-30-2-79", "state": "FAILED", "total_run_time": 43, "rdzv_backend": '
    '"c10d", "raw_error": "{\\"message\\": \\"<NONE>\\"}", "metadata": "{\\"group_world_size\\": 2,'
    ' \\"entry_point\\": \\"python3\\", \\"local_rank\\": [0], \\"role_rank\\": [1], '
    '\\"role_world_size\\": [2]}", "agent_restarts": 3}}',
    '{"name": "torchelastic.worker.status.SUCCEEDED", "source": "AGENT", "timestamp": 0, '
    '"metadata": {"run_id": "1234", "global_rank": null, "group_rank": 1, "worker_id": null, '
    '"role": "default", "hostname": "ip-172-30-2-79", "state": "SUCCEEDED", "total_run_time": 43, '
    '"rdzv_backend": "c10d", "raw_error": null, "metadata": "{\\"group_world_size\\": 2, '
    '\\"entry_point\\": \\"python3\\"}", "agent_restarts": 3}}',
    "[ERROR] 2021-09-14 14:03:12,880 error_handler: {",
    '  "message": {',
    '    "message": "MemoryError: std::bad_alloc",',
]


def test_a_failed_worker_event_and_its_error_file(tmp_path: Path) -> None:
    """pytorch/pytorch#64990 (corpus gpu_crash-pytorch-64990): the FAILED event names rank 1 on
    ip-172-30-2-79, the error file logged after it says what failed."""
    f = _facts(tmp_path, "\n".join(PYTORCH_64990) + "\n")
    assert (f["failed_ranks"], f["failed_hosts"]) == ([1], ["ip-172-30-2-79"])
    assert f["error_kind"] == "python" and "std::bad_alloc" in f["error_message"]


def test_worker_events_of_other_sources() -> None:
    from traindoc.parse.torchrun import parse_elastic_event

    # exiawsh/StreamPETR#19
    failed = ('{"name": "torchelastic.worker.status.FAILED", "source": "WORKER", "timestamp": 0, '
              '"metadata": {"run_id": "none", "global_rank": 3, "group_rank": 0, "worker_id": '
              '"11376", "role": "default", "hostname": "sajadi", "state": "FAILED", '
              '"total_run_time": 20, "rdzv_backend": "static"}}')
    assert parse_elastic_event(failed) == {"rank": 3, "host": "sajadi"}
    # pytorch/pytorch#60716: a worker that succeeded is no exit
    ok = ('{"name": "torchelastic.worker.status.SUCCEEDED", "source": "WORKER", "timestamp": 0, '
          '"metadata": {"run_id": "none", "global_rank": 11, "group_rank": 0, "worker_id": '
          '"34615", "role": "default", "hostname": "marvel.amem.cs.cmu.edu", "state": '
          '"SUCCEEDED"}}')
    assert parse_elastic_event(ok) is None
    assert parse_elastic_event(PYTORCH_64990[1]) is None


# --- "[e/E][i/N]" counters at the start of a step line ------------------------------------------

@pytest.mark.parametrize("line, epoch, step, total", [
    # NVIDIA/nccl#293 (corpus gpu_crash-nccl-293)
    ("[2/20][4084/7614] Loss: 9.590029", 2, 4084, 7614),
    # kimhc6028/acgan-pytorch#3 (the DCGAN example's line)
    ("[24/25][937/938] Loss_D: 0.0120 Loss_G: 6.1335 D(x): 0.9978 D(G(z)): 0.0097 / 0.0027",
     24, 937, 938),
    # zhangxiann/PyTorch_Practice#1 (tab-separated)
    ("[1/20][30/32]\tLoss_D: 0.0000\tLoss_G: 57.0740\tD(x): 1.0000\tD(G(z)): 0.0000 / 0.0000",
     1, 30, 32),
    # logging's asctime before the pair: PVD's train_generation.py ("%(asctime)s : %(message)s",
    # utils/file_utils.py) and its descendant pcdiff (corpus timeout-pcdiff-implant-8gpu-healthy)
    ("2026-04-06 07:01:11,957 : [101/5000][  0/  7]    loss:     0.2454,    grad_norm:     0.1428",
     101, 0, 7),
    ("2021-03-02 10:14:05,311 : [ 12/10000][ 40/ 94]    loss:     0.1043,    netpNorm:      83.27,"
     "   netgradNorm:       0.95     ", 12, 40, 94),
])
def test_an_epoch_and_batch_counter_pair_is_the_step(line: str, epoch: int, step: int,
                                                     total: int) -> None:
    from traindoc.parse.metric_lines import parse_metric_line

    row = parse_metric_line(line)
    assert row is not None
    assert (row["epoch"], row["iteration"], row["total_iterations"]) == (epoch, step, total)


# --- the watchdog's "failed or timed out", with no collective timed out, is what this side saw --

@pytest.mark.parametrize("lines", [
    # PKU-YuanGroup/UniWorld#46 (corpus gpu_crash-uniworld-46): socket errors at INFO under it
    ["n124-137-109:312247:326969 [0] NCCL INFO misc/socket.cc:829 -> 3",
     "n124-137-109:312249:326968 [2] NCCL INFO comm 0x12464df00 rank 6 nranks 8 cudaDev 2 busId "
     "b000 - Abort COMPLETE",
     "[rank6]:[E624 04:14:29.224103812 ProcessGroupNCCL.cpp:684] [Rank 6] Some NCCL operations "
     "have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU "
     "operations might run on corrupted/incomplete data.",
     "[rank6]:[E624 04:14:29.224139849 ProcessGroupNCCL.cpp:698] [Rank 6] To avoid data "
     "inconsistency, we are taking the entire process down."],
    # EvolvingLMMs-Lab/open-r1-multimodal#20
    ["[rank2]:[E220 01:25:08.728702337 ProcessGroupNCCL.cpp:681] [Rank 2] Some NCCL operations "
     "have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU "
     "operations might run on corrupted/incomplete data."],
])
def test_the_watchdogs_teardown_alone_is_an_nccl_error(tmp_path: Path, lines: list[str]) -> None:
    from traindoc.diagnose import triage

    f = _facts(tmp_path, "\n".join(lines) + "\n")
    assert f["error_kind"] == "nccl_error" and "failed or timed out" in f["error_message"]
    log = tmp_path / "job.log"
    assert triage.diagnose(traindoc.load(str(log))).facts["classes"][0]["class"] == "gpu_crash"


def test_the_teardown_after_a_watchdog_timeout_stays_the_timeouts(tmp_path: Path) -> None:
    """GAIR-NLP/DeepResearcher#16: the same teardown under a timed-out collective."""
    from traindoc.diagnose import triage

    log = tmp_path / "job.log"
    log.write_text(
        "(WorkerDict pid=63294) [rank3]:[E416 20:40:12.984683378 ProcessGroupNCCL.cpp:607] [Rank "
        "3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8, OpType=ALLTOALL, "
        "NumelIn=3150848, NumelOut=3150848, Timeout(ms)=600000) ran for 600000 milliseconds "
        "before timing out.\n"
        "(WorkerDict pid=63294) [rank3]:[E416 20:40:12.986061777 ProcessGroupNCCL.cpp:621] [Rank "
        "3] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
        "kernels, subsequent GPU operations might run on corrupted/incomplete data.\n")
    assert triage.diagnose(traindoc.load(str(log))).facts["classes"][0]["class"] == "timeout"


# --- Marian NMT's saves: the update in the path, or the update logged before the save --------

MARIAN_TRANSLATIONS_1002 = [  # mozilla/translations#1002 (corpus gpu_crash-translations-1002)
    "[2025-01-21 16:24:56] [valid] Ep. 1 : Up. 50000 : ce-mean-words : 2.62238 : new best",
    "[2025-01-21 16:25:04] Saving model weights and runtime parameters to "
    "/home/ubuntu/tasks/task_173745859288754/artifacts/model.npz.best-bleu-detok.npz",
    "[2025-01-21 16:25:07] [valid] Ep. 1 : Up. 50000 : bleu-detok : 26.4729 : new best",
    "[2025-01-21 16:30:34] Ep. 1 : Up. 51000 : Sen. 77,303,338 : Cost 1.41794586 : Time 370.55s "
    ": 97447.45 words/s : gNorm 0.5275",
    "[2025-01-21 16:30:37] Error: CUDA error 999 'unknown error' - /builds/worker/fetches/"
    "marian-source/src/tensors/gpu/algorithm.cu:54: cudaStreamSynchronize(0)",
]
MARIAN_ITER_SAVE = [  # a Marian training log of 2021 (its --overwrite off: model.iter5000.npz)
    "[2021-05-27 00:53:12] Ep. 1 : Up. 5000 : Sen. 154,472 : Cost 3.10490203 * 415,501 after "
    "4,125,163 : Time 608.22s : 683.15 words/s",
    "[2021-05-27 00:53:12] Saving model weights and runtime parameters to "
    "model.s2s-4/model.npz.orig.npz",
    "[2021-05-27 00:53:14] Saving model weights and runtime parameters to "
    "model.s2s-4/model.iter5000.npz",
    "[2021-05-27 00:53:15] Saving model weights and runtime parameters to model.s2s-4/model.npz",
    "[2021-05-27 00:53:17] Saving Adam parameters to model.s2s-4/model.npz.optimizer.npz",
    "[2021-05-27 00:53:30] [valid] Ep. 1 : Up. 5000 : cross-entropy : 219.282 : new best",
    "[2021-05-27 01:03:30] Ep. 1 : Up. 5500 : Sen. 170,001 : Cost 3.0 * 411,024 after "
    "4,500,000 : Time 600.00s : 684.00 words/s",
    "Error: CUDA error 999 'unknown error' - src/tensors/gpu/algorithm.cu:54: "
    "cudaStreamSynchronize(0)",
]


@pytest.mark.parametrize("lines, last, saved", [
    (MARIAN_TRANSLATIONS_1002, 51000, 50000),
    (MARIAN_ITER_SAVE, 5500, 5000),
])
def test_marians_saves_give_the_last_checkpoint(tmp_path: Path, lines: list[str], last: int,
                                                saved: int) -> None:
    f = _facts(tmp_path, "\n".join(lines) + "\n")
    assert (f["last_iteration"], f["last_checkpoint_iteration"]) == (last, saved)


# --- the Paddle suites' saves: no step in the line, the step logged before it ------------------

@pytest.mark.parametrize("line, path", [
    # oderformkie's committed PaddleOCR workerlog.0 (corpus gpu_crash-oderformkie-workerlog)
    ("[2023/12/19 01:56:46] ppocr INFO: save best model is to "
     "./output/re_vi_layoutxlm_xfund_zh/best_accuracy",
     "./output/re_vi_layoutxlm_xfund_zh/best_accuracy"),
    # PaddlePaddle/PaddleOCR doc/doc_ch/kie.md (the training log it shows)
    ("[2022/08/08 16:28:51] ppocr INFO: save model in ./output/ser_vi_layoutxlm_xfund_zh/latest",
     "./output/ser_vi_layoutxlm_xfund_zh/latest"),
    # a DeepFM training log in a PaddleRec-style README (the index did not name its repository);
    # the wording of PaddleClas ppcls/utils/save_load.py
    ("2021-08-13 20:23:33,390 - INFO - Already save model in output_model_all_deepfm/0",
     "output_model_all_deepfm/0"),
])
def test_the_paddle_suites_saves_are_checkpoints(line: str, path: str) -> None:
    from traindoc.parse.checkpoints import parse_checkpoint
    row = parse_checkpoint(line)
    assert row is not None and row["path"] == path and row["iteration"] is None


def test_a_model_saved_by_what_it_is_takes_the_epoch_logged_before_it(tmp_path: Path) -> None:
    # a hand-written loop's logger (corpus gpu_crash-dat550-animal-clef-train2-time-limit):
    # the epoch's loss, then the best model saved with no path; the scheduler ends epoch 47
    text = ("2025-04-02 12:58:15,001 [INFO] [Epoch 45] ArcFace Loss: 0.0361\n"
            "2025-04-02 12:58:17,548 [INFO]  Saved new best model at epoch 45\n"
            "2025-04-02 12:59:15,001 [INFO] [Epoch 46] ArcFace Loss: 0.0356\n"
            "2025-04-02 12:59:17,548 [INFO]  Saved new best model at epoch 46\n"
            "slurmstepd: error: *** JOB 403626 ON gorina8 CANCELLED AT 2025-04-02T13:00:11 "
            "DUE TO TIME LIMIT ***\n")
    f = _facts(tmp_path, text)
    assert (f["last_iteration"], f["last_checkpoint_iteration"]) == (46, 46)


def test_a_paddleocr_save_takes_the_step_logged_before_it(tmp_path: Path) -> None:
    step = ("[2022/08/08 16:2{s}:39] ppocr INFO: epoch: [1/200], global_step: {n}, lr: 0.000050, "
            "loss: 1.8, avg_reader_cost: 0.1 s, avg_batch_cost: 0.32 s, ips: 21.5 samples/s\n")
    text = (step.format(s=7, n=10) + "[2022/08/08 16:28:45] ppocr INFO: save best model is to "
            "./output/ser/best_accuracy\n" + step.format(s=9, n=20)
            + "Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n"
            "RuntimeError: boom\n")
    f = _facts(tmp_path, text)
    assert (f["last_iteration"], f["last_checkpoint_iteration"]) == (20, 10)


def test_paddleocrs_evaluation_schedule_is_read() -> None:
    from traindoc.parse.benchmarks import parse_eval_schedule
    # YunSungJu/OderformKIE log/workerlog.0 (corpus gpu_crash-oderformkie-workerlog)
    rows = parse_eval_schedule("[2023/12/19 01:51:20] ppocr INFO: During the training process, "
                               "after the 0th iteration, an evaluation is run every 19 iterations")
    assert rows == [{"metric": "plan:eval_start", "value": 0.0},
                    {"metric": "plan:eval_every", "value": 19.0}]
    # an empty evaluation set: PaddleOCR sets the start to 1e111, evaluation off
    assert parse_eval_schedule("During the training process, after the 1e+111th iteration, an "
                               "evaluation is run every 2000 iterations") is None


def test_a_best_model_save_takes_the_evaluation_step_the_schedule_places(tmp_path: Path) -> None:
    """PaddleOCR logs every 10 steps and evaluates at 19: the best model saved after that
    evaluation is step 19's, not step 10's (oderformkie's workerlog.0)."""
    step = ("[2023/12/19 01:5{s}] ppocr INFO: epoch: [1/5], global_step: {n}, lr: 0.000001, "
            "loss: 3.079246, avg_reader_cost: 0.00014 s, avg_batch_cost: 6.47094 s, avg_samples: "
            "4.0, ips: 0.61815 samples/s, eta: 0:46:16\n")
    schedule = ("[2023/12/19 01:51:20] ppocr INFO: During the training process, after the 0th "
                "iteration, an evaluation is run every 19 iterations\n")
    save = ("[2023/12/19 01:56:46] ppocr INFO: save best model is to "
            "./output/re_vi_layoutxlm_xfund_zh/best_accuracy\n")
    crash = ("Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n"
             "RuntimeError: boom\n")
    text = schedule + step.format(s="2:40", n=10) + save + step.format(s="6:50", n=20) + crash
    f = _facts(tmp_path, text)
    assert (f["last_iteration"], f["last_checkpoint_iteration"]) == (20, 19)
    # a save that is no best model's, or no evaluation between the steps around it: the step
    # logged before it
    f = _facts(tmp_path, text.replace("save best model is to", "save model in")
               .replace("best_accuracy", "latest"))
    assert f["last_checkpoint_iteration"] == 10
    f = _facts(tmp_path, text.replace("every 19 iterations", "every 25 iterations"))
    assert f["last_checkpoint_iteration"] == 10


# --- HF Trainer's stepless dicts: the last step is the one their epoch says ------------------

def test_the_last_step_of_stepless_hf_dicts_is_placed_by_their_epoch(tmp_path: Path) -> None:
    """CqGao112/CN-Mini-Phi3 sft.log (corpus gpu_crash-cn-mini-phi3-sft): 49 loss dicts logged
    every 10 steps; the end-of-run summary gives 6311.6 s x 0.076 steps/s = 480 steps over 1.99
    epochs; the last dict (epoch 1.99) is step 480, not dict 49."""
    src = (Path(__file__).parent.parent / "data" / "corpus" / "gpu_crash"
           / "gpu_crash-cn-mini-phi3-sft" / "logs" / "sft.log")
    dicts = [ln for ln in src.read_text().splitlines() if ln.startswith("{'")]
    f = _facts(tmp_path, "\n".join(dicts) + "\n")
    assert f["last_iteration"] == 480
    # without the summary the log gives no run length: the count stays
    f = _facts(tmp_path, "\n".join(d for d in dicts if "train_runtime" not in d) + "\n")
    assert f["last_iteration"] == 49


@pytest.mark.parametrize("out, err", [
    ("train.log", "train.err"), ("slurm-4242.out", "slurm-4242.err"), ("job.o77", "job.e77"),
    ("stdout.txt", "stderr.txt"),
])
def test_stepless_hf_dicts_are_placed_by_the_bar_of_the_jobs_other_stream(
        tmp_path: Path, out: str, err: str) -> None:
    """guoyu-zhang/PEFT-TRL-LLMs job_scripts/logs (corpus gpu_crash-peft-trl-llms-sft-disk-quota):
    the loss dicts, every 10 steps, in the job's stdout; tqdm's '260/500' bar in its stderr. The
    dict at epoch 0.52 is step 260, not dict 26."""
    src = (Path(__file__).parent.parent / "data" / "corpus" / "gpu_crash"
           / "gpu_crash-peft-trl-llms-sft-disk-quota" / "logs")
    (tmp_path / out).write_text((src / "train.log").read_text())
    (tmp_path / err).write_text((src / "train.err").read_text())
    assert gpu_crash.diagnose(traindoc.load(str(tmp_path))).facts["last_iteration"] == 260
    # a bar of another job's stream in the same folder is no bar of these dicts: the count
    (tmp_path / err).rename(tmp_path / "other.err")
    assert gpu_crash.diagnose(traindoc.load(str(tmp_path))).facts["last_iteration"] == 26


# --- any Py_FatalError is an abort of the interpreter: a crash, not a hang -------------------

@pytest.mark.parametrize("line", [
    # modelscope/ms-swift#5231 (corpus deadlock-ms-swift-5231), vllm-project/vllm#20431
    "Fatal Python error: none_dealloc: deallocating None: bug likely caused by a refcount "
    "error in a C extension",
    # MTG/gaia#82 (after a training script's last line); leetmaa/KMCLib#17 ('Abort trap: 6')
    "Fatal Python error: PyThreadState_Get: no current thread",
    # opencog/atomspace#671
    "Fatal Python error: ceval: tstate mix-up",
])
def test_a_fatal_python_error_is_an_abort(line: str) -> None:
    row = parse_error(line)
    assert row is not None
    assert (row["kind"], row["code"]) == ("signal", "SIGABRT")
    assert row["message"] == line


def test_the_signal_named_fatal_error_keeps_its_signal() -> None:
    assert parse_error("Fatal Python error: Segmentation fault")["code"] == "SIGSEGV"


def test_a_stream_lock_at_interpreter_shutdown_is_no_crash() -> None:
    """After the program's own end: the run it logged is not a crash."""
    assert parse_error("Fatal Python error: _enter_buffered_busy: could not acquire lock for "
                       "<_io.BufferedWriter name='<stdout>'> at interpreter shutdown, possibly "
                       "due to daemon threads") is None


def test_a_fatal_error_with_an_empty_faulthandler_dump_is_a_crash(tmp_path: Path) -> None:
    """vlm-r1#309's shape: a tqdm bar, the fatal error, threads with '<no Python frame>'."""
    text = (" 4%|▍         | 2269/60312 [5:23:03<378:19:09, 23.46s/it]\n"
            "Fatal Python error: none_dealloc: deallocating None\n"
            "Python runtime state: initialized\n\n"
            "Thread 0x00007fd0e57fe640 (most recent call first):\n  <no Python frame>\n\n")
    f = _facts(tmp_path, text)
    assert f["error_kind"] == "signal"
    assert "none_dealloc" in f["error_message"]


# --- a C/CUDA trainer's check macro: header line, the error string on the next ---------------

@pytest.mark.parametrize("lines, kind, message", [
    # llm.c fork's SLURM log (corpus gpu_crash-llmc-fork-gpt2-train-11678978)
    (["[CUDA ERROR] at file train_gpt2.cu:754:", "misaligned address"], "cuda_error",
     "misaligned address"),
    # karpathy/llm.c#492: cudnnCheck
    (["[CUDNN ERROR] at file cudnn_att.cpp:141:",
      "[cudnn_frontend] Error: No execution plans built successfully."], "cuda_error",
     "No execution plans built successfully"),
    # the "(line N)" form of other cudaCheck copies (found by the exact header string), with
    # cudaGetErrorName before the message
    (["[CUDA ERROR] at file sgemm.cu(line 42):",
      "cudaErrorIllegalAddress: an illegal memory access was encountered"], "cuda_error",
     "illegal memory access"),
    # HectorFCardenas/llm.c gpt2_train.11672072.log (corpus gpu_crash-llmc-fork-gpt2-train-
    # 11672072): the cudaMalloc of the activations fails, cudaGetErrorString says out of memory
    (["allocating 39612 MiB for activations", "[CUDA ERROR] at file train_gpt2.cu:265:",
      "out of memory"], "oom", "out of memory"),
    # the same check in the name-first form
    (["[CUDA ERROR] at file kernel.cu(line 88):",
      "cudaErrorMemoryAllocation: out of memory"], "oom", "out of memory"),
])
def test_a_check_macros_error_is_read_with_its_message(tmp_path: Path, lines: list[str],
                                                       kind: str, message: str) -> None:
    text = "step 1: train loss 4.27 (took 101.8 ms)\n" + "\n".join(lines) + "\n"
    f = _facts(tmp_path, text)
    assert f["error_kind"] == kind
    assert message in f["error_message"]


@pytest.mark.parametrize("line, kind, message", [
    # HectorFCardenas/llm.c gpt2_train.11679004.log (corpus gpu_crash-llmc-fork-gpt2-train-
    # 11679004): llm.c's cublasCheck, "[cuBLAS ERROR]: %d %s %d" (karpathy/llm.c dev/cuda/common.h)
    ("[cuBLAS ERROR]: 13 llmc/matmul.cuh 216", "cuda_error",
     "[cuBLAS ERROR]: 13 llmc/matmul.cuh 216"),
    # torch <= 1.0's THC checks: rowanz/neural-motifs#58, jiesutd/NCRFpp#121
    ("RuntimeError: cuda runtime error (2) : out of memory at "
     "/pytorch/aten/src/THC/THCTensorRandom.cu:25", "oom", "cuda runtime error (2) : out of memory"),
    ("THCudaCheck FAIL file=/pytorch/torch/lib/THC/generic/THCStorage.cu line=58 error=2 : out of "
     "memory", "oom", "out of memory"),
    # pytorch/pytorch#1204 (the device-side assert), pytorch/pytorch#24018 (THCBlas)
    ("RuntimeError: cuda runtime error (59) : device-side assert triggered at "
     "/pytorch/aten/src/THC/generic/THCTensorMath.cu:26", "cuda_error",
     "cuda runtime error (59) : device-side assert triggered"),
    ("RuntimeError: cublas runtime error : the GPU program failed to execute at "
     "/pytorch/aten/src/THC/THCBlas.cu:258", "cuda_error",
     "cublas runtime error : the GPU program failed to execute"),
    ("THCudaCheck FAIL file=/pytorch/aten/src/THC/THCCachingHostAllocator.cpp line=265 error=59 : "
     "device-side assert triggered", "cuda_error", "device-side assert triggered"),
    # bluer555/CR-GAN#8: torch's CUDA error without the space after its colon
    ("RuntimeError: CUDA error:out of memory", "oom", "CUDA error:out of memory"),
    # huggingface/autotrain-advanced#737: ROCm's torch says HIP
    ("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 124.00 MiB. GPU 0 has a total "
     "capacity of 19.94 GiB of which 554.47 MiB is free. Of the allocated memory 15.87 GiB is "
     "allocated by PyTorch, and 165.29 MiB is reserved by PyTorch but unallocated. If reserved but "
     "unallocated memory is large try setting PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to "
     "avoid fragmentation.", "oom", "HIP out of memory. Tried to allocate 124.00 MiB"),
    # Intel XPU: torch 2.5+'s allocator (pytorch/pytorch c10/xpu/XPUCachingAllocator.cpp), IPEX's
    # older form (intel/intel-extension-for-pytorch csrc/gpu/runtime/CachingDeviceAllocator.cpp),
    # and Level Zero/UR below it (open-edge-platform/geti_v2#1075, physical-ai-studio#440)
    ("[rank1]: torch.OutOfMemoryError: XPU out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
     "total capacity of 47.98 GiB of which 1.05 GiB is free. Of the allocated memory 45.10 GiB is "
     "allocated by PyTorch, and 512.00 MiB is reserved by PyTorch but unallocated.", "oom",
     "XPU out of memory. Tried to allocate 2.00 GiB"),
    ("RuntimeError: XPU out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.91 GiB total capacity; "
     "13.20 GiB already allocated; 14.10 GiB reserved in total by PyTorch)", "oom",
     "XPU out of memory. Tried to allocate 2.00 GiB (GPU 0"),
    ("RuntimeError: Native API failed. Native API returns: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)",
     "oom", "Native API returns: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)"),
    ("level_zero backend failed with error: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)", "oom",
     "level_zero backend failed with error: 39"),
    # TensorFlow: dBeker/Faster-RCNN-TensorFlow-Python3#110, Ma-Dan/XLNet-ChineseNER#4 (the
    # op_kernel warning), lc222/seq2seq_chatbot_new#19 (TF 1.x "of shape [N]")
    ("ResourceExhaustedError: OOM when allocating tensor with shape[25088,4096] and type float on "
     "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc", "oom",
     "OOM when allocating tensor with shape[25088,4096]"),
    ("2019-10-24 21:55:25.500952: W tensorflow/core/framework/op_kernel.cc:1318] OP_REQUIRES failed "
     "at cwise_ops_common.cc:70 : Resource exhausted: OOM when allocating tensor with "
     "shape[8,509,3072] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator "
     "GPU_0_bfc", "oom", "device:GPU:0 by allocator GPU_0_bfc"),
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor of "
     "shape [4096] and type float", "oom", "OOM when allocating tensor of shape [4096]"),
    # XLA: google-deepmind/alphafold#1023, onpix/LLNeRF#9, pytorch/xla#3470 (a TPU)
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
     "allocate 7406166528 bytes.", "oom", "Out of memory while trying to allocate 7406166528 bytes"),
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating "
     "20029400304 bytes.", "oom", "Out of memory allocating 20029400304 bytes"),
    ("2022-04-04 00:27:49.642380: E tensorflow/compiler/xla/xla_client/xla_util.cc:88]   (1) "
     "RESOURCE_EXHAUSTED: Attempting to reserve 6.48G at the bottom of memory. That was not "
     "possible. There are 6.78G free, 0B reserved, and 3.33G reservable.", "oom",
     "Attempting to reserve 6.48G"),
    # torch's cuDNN/cuBLAS checks: GeneZC/ASGCN#19, tbepler/protein-sequence-embedding-iclr2019#6
    # (older torch), jadore801120/attention-is-all-you-need-pytorch#193 (the call's form)
    ("RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", "cuda_error",
     "cuDNN error: CUDNN_STATUS_EXECUTION_FAILED"),
    ("RuntimeError: CUDNN_STATUS_EXECUTION_FAILED", "cuda_error", "CUDNN_STATUS_EXECUTION_FAILED"),
    ("RuntimeError: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, "
     "n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`", "cuda_error",
     "CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm("),
    # TensorFlow's stream executor: google-research/electra#136, kimiyoung/transformer-xl#139 (TF
    # 1.12 names the routine), Li-Chongyi/Ucolor#9 (cuDNN)
    ("2022-12-27 15:27:14.672772: E tensorflow/stream_executor/cuda/cuda_blas.cc:428] failed to run "
     "cuBLAS routine: CUBLAS_STATUS_EXECUTION_FAILED", "cuda_error",
     "failed to run cuBLAS routine: CUBLAS_STATUS_EXECUTION_FAILED"),
    ("2021-09-08 23:23:08.258752: E tensorflow/stream_executor/cuda/cuda_blas.cc:652] failed to run "
     "cuBLAS routine cublasSgemm_v2: CUBLAS_STATUS_EXECUTION_FAILED", "cuda_error",
     "cublasSgemm_v2: CUBLAS_STATUS_EXECUTION_FAILED"),
    ("E tensorflow/stream_executor/cuda/cuda_dnn.cc:81] CUDNN_STATUS_EXECUTION_FAILED", "cuda_error",
     "CUDNN_STATUS_EXECUTION_FAILED"),
])
def test_a_cuda_error_in_older_and_c_wordings(line: str, kind: str, message: str) -> None:
    row = parse_error(line)
    assert row is not None and row["kind"] == kind
    assert message in row["message"]
    assert " at /pytorch" not in row["message"]


@pytest.mark.parametrize("line", [
    # torch 2.3's cuDNN v8 API warns of a plan it skipped and goes on (mseitzer/pytorch-fid#111;
    # "the warning alone should not" stop a run, pytorch/pytorch#121834)
    "/usr/lib/python3/dist-packages/torch/nn/modules/conv.py:456: UserWarning: Plan failed with a "
    "cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize Descriptor Failed "
    "cudnn_status: CUDNN_STATUS_NOT_SUPPORTED (Triggered internally at "
    "../aten/src/ATen/native/cudnn/Conv_v8.cpp:919.)",
    "cudnn status: CUDNN_STATUS_SUCCESS",
])
def test_a_cudnn_status_inside_a_warning_is_no_error(line: str) -> None:
    assert parse_error(line) is None


def test_a_llmc_cublas_failure_is_the_one_process_crash(tmp_path: Path) -> None:
    """llm.c's single-GPU run: the parameter table states one process, the check names no rank."""
    f = _facts(tmp_path, "\n".join([
        "Multi-GPU support is disabled. Using a single GPU.",
        "| num_processes         | 1                                                  |",
        "device memory usage: 22211 MiB / 40338 MiB", "val loss nan",
        "[cuBLAS ERROR]: 13 llmc/matmul.cuh 216", ""]))
    assert f["error_kind"] == "cuda_error" and "cuBLAS ERROR]: 13" in f["error_message"]


# --- the raylet's worker-died record names the dead worker's machine and pid -----------------

@pytest.mark.parametrize("line, host, pid", [
    # OpenRLHF/OpenRLHF#621 (corpus gpu_crash-openrlhf-621)
    ("(raylet) A worker died or was killed while executing a task by an unexpected system "
     "error. To troubleshoot the problem, check the logs for the dead worker. RayTask ID: "
     "fffffffffffffffff274c61d686e9942cf058dcc11000000 Worker ID: d893621a96e2f8 Node ID: "
     "8440b94a47cd Worker IP address: 172.19.24.110 Worker port: 10185 Worker PID: 90738 "
     "Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a "
     "connection error code 2. End of file. There are some potential root causes.",
     "172.19.24.110", 90738),
    # verl-project/verl#316 (corpus gpu_crash-verl-316): the newer wording of the causes
    ("(raylet) A worker died or was killed while executing a task by an unexpected system "
     "error. Worker IP address: 10.49.144.10 Worker port: 32827 Worker PID: 93658 Worker exit "
     "type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error "
     "code 2. End of file. Some common causes include: (1) the process was killed by the OOM "
     "killer", "10.49.144.10", 93658),
    # the detail alone (verl#472's paste): no machine named
    ("Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a "
     "connection error code 2.", None, None),
])
def test_the_raylets_dead_worker_is_on_its_machine(line: str, host: str | None,
                                                   pid: int | None) -> None:
    row = parse_error(line)
    assert row is not None and row["code"] == "ray_worker_died"
    assert row["message"] == "Worker unexpectedly exits with a connection error code 2"
    assert row.get("host") == host and row.get("pid") == pid


# --- DeepSpeed's WORLD INFO DICT names the job's machines ------------------------------------

@pytest.mark.parametrize("line, hosts", [
    # microsoft/DeepSpeedExamples check-7b training.log (corpus gpu_crash-deepspeedexamples-…)
    ("[2023-06-09 05:17:52,629] [INFO] [launch.py:145:main] WORLD INFO DICT: {'worker-0': [0, 1, "
     "2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]}", "worker-0"),
    # a pdsh-launched two-node job's log (found by the exact string): IPs as the hostfile's names
    ("10.0.143.177: [2022-07-26 22:43:04,464] [INFO] [launch.py:103:main] WORLD INFO DICT: "
     "{'10.0.143.177': [0], '10.0.128.14': [0]}", "10.0.143.177,10.0.128.14"),
    # a one-machine job without a hostfile: 'localhost' names no machine
    ("[2022-09-15 05:57:44,795] [INFO] [launch.py:136:main] WORLD INFO DICT: {'localhost': [0, 1, "
     "2, 3]}", None),
])
def test_deepspeeds_world_info_is_a_node_list(line: str, hosts: str | None) -> None:
    from traindoc.parse.benchmarks import parse_nodelist
    row = parse_nodelist(line)
    assert (row["host"] if row else None) == hosts


# --- a Python exception, then the launcher's record of the worker that exited with code 1 ----

def test_the_exit_1_after_an_anonymous_exception_names_its_rank_and_machine(tmp_path: Path) -> None:
    """DeepSpeedExamples' check-7b shape: the traceback names no rank, DeepSpeed's launcher
    names the worker's local rank; one node (nnodes=1), so the local rank is the rank."""
    text = "\n".join([
        "[2023-06-09 05:17:52,629] [INFO] [launch.py:145:main] WORLD INFO DICT: {'worker-0': "
        "[0, 1]}",
        "[2023-06-09 05:17:52,629] [INFO] [launch.py:151:main] nnodes=1, num_local_procs=2, "
        "node_rank=0",
        "Traceback (most recent call last):",
        '  File "main.py", line 320, in main',
        "RuntimeError: Expected all tensors to be on the same device, but found at least two "
        "devices, cuda:1 and cpu!",
        "[2023-06-09 05:24:52,263] [ERROR] [launch.py:320:sigkill_handler] ['/opt/conda/bin/"
        "python', '-u', 'main.py', '--local_rank=1', '--zero_stage', '3'] exits with return "
        "code = 1", ""])
    f = _facts(tmp_path, text)
    assert f["error_kind"] == "python" and "same device" in f["error_message"]
    assert f["failed_ranks"] == [1] and f["failed_hosts"] == ["worker-0"]


# --- NCCL >= 2.23 stamps its WARN lines: the time stands before host:pid:tid ------------------

@pytest.mark.parametrize("text, host", [
    # dmlc/xgboost#11359 (corpus gpu_crash-xgboost-11359): a Kubernetes pod as the host
    ("rapids-dask-cluster-default-worker-4924628e24-7f5497b696-mwmk2:36:63 [0] NCCL INFO Using "
     "network Socket\n"
     "[2025-06-30 14:21:53] rapids-dask-cluster-default-worker-4924628e24-7f5497b696-mwmk2:36:63 "
     "[0] init.cc:426 NCCL WARN Cuda failure 'operation not supported'\n"
     "rapids-dask-cluster-default-worker-4924628e24-7f5497b696-mwmk2:36:63 [0] NCCL INFO "
     "init.cc:1437 -> 1\n",
     "rapids-dask-cluster-default-worker-4924628e24-7f5497b696-mwmk2"),
    # meta-pytorch/torchtune#2556: a CI runner's log, GitHub's own time before NCCL's
    ("2025-04-04T16:57:57.7153695Z [2025-04-04 16:57:39] ip-10-0-9-191:95209:95228 [0] "
     "init.cc:416 NCCL WARN Cuda failure 'operation not supported'\n"
     "2025-04-04T16:57:57.7153889Z ip-10-0-9-191:95209:95228 [0] NCCL INFO init.cc:1397 -> 1\n",
     "ip-10-0-9-191"),
    # NVIDIA/nccl#2101: NCCL 2.27.5 on a vGPU, the model server's pod
    ("[2026-04-13 19:52:24] pais-modelendpoint-c3dea45f-4e72-4a34-8888-7c855e768973-8579zt8:508:"
     "508 [0] init.cc:426 NCCL WARN Cuda failure 'operation not supported'\n",
     "pais-modelendpoint-c3dea45f-4e72-4a34-8888-7c855e768973-8579zt8"),
])
def test_a_stamped_nccl_warn_names_its_host(tmp_path: Path, text: str, host: str) -> None:
    f = _facts(tmp_path, text)
    assert f["failed_hosts"] == [host]
    assert "operation not supported" in f["error_message"]


# --- torchrun's Root Cause record: the worker's death in its own words -----------------------

ROOT_CAUSE = """\
{failed}
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : {time}
  host      : {host}
  rank      : 0 (local_rank: 0)
  exitcode  : {code} (pid: {pid})
  error_file: <N/A>
  traceback : {traceback}
============================================================
"""


@pytest.mark.parametrize("failed, time, host, code, pid, traceback", [
    # NVIDIA/Model-Optimizer#1681 (corpus gpu_crash-model-optimizer-1681): torch 2.x glog records
    ("E0612 01:14:57.061000 3908386 torch/distributed/elastic/multiprocessing/api.py:914] failed "
     "(exitcode: -9) local_rank: 0 (pid: 3908423) of binary: /opt/venv/bin/python",
     "2026-06-12_01:14:57", "pool0-01753", -9, 3908423,
     "Signal 9 (SIGKILL) received by PID 3908423"),
    # NVIDIA/Megatron-LM#1880 (corpus gpu_crash-megatron-lm-1880): a segfault, the report alone
    ("", "2025-12-23_05:17:58", "yotta-B200-232", -11, 3304209,
     "Signal 11 (SIGSEGV) received by PID 3304209"),
    # FasterDecoding/Medusa#118 (corpus gpu_crash-medusa-118): behind a tqdm bar
    ("Loading checkpoint shards:  50% 1/2 [00:49<00:49, 49.97s/it]E0825 17:31:27.240000 "
     "139795859210880 torch/distributed/elastic/multiprocessing/api.py:826] failed (exitcode: -9) "
     "local_rank: 0 (pid: 8158) of binary: /usr/bin/python3", "2024-08-25_17:31:27", "4b1a9e8a140f", -9, 8158,
     "Signal 9 (SIGKILL) received by PID 8158"),
])
def test_the_root_cause_quotes_the_signal_line(tmp_path: Path, failed: str, time: str, host: str,
                                               code: int, pid: int, traceback: str) -> None:
    text = ROOT_CAUSE.format(failed=failed, time=time, host=host, code=code, pid=pid,
                             traceback=traceback)
    f = _facts(tmp_path, text)
    assert f["error_kind"] == "signal" and f["failed_ranks"] == [0]
    assert f["error_message"] == traceback


# --- a save line in any trainer's words: a save verb, "checkpoint", where it went ------------

@pytest.mark.parametrize("line, kind, iteration", [
    # JunyiJ/PostTraining-LLM-Small logs/train.log (corpus gpu_crash-posttraining-llm-small-train)
    ("Saved checkpoint to /Users/junyi/Projects/PostTraining-LLM-Small/checkpoints/"
     "lora_epoch3_step150.pt", "saved", 150),
    # AkramjitS/gpt-lab-diffusion train.log (corpus throughput-gpt-lab-diffusion-train)
    ("Saved checkpoint to experiments/20250530_144815_ModdedGPT/state_step002000.pt", "saved",
     2000),
    # AntonioLopardo/OLMo checkpoints/OLMo-1B-tied-emb2-1000/train.log (corpus
    # loss_spike-olmo-fork-tied-emb2-train)
    ("2025-12-26 23:00:44.170\tripe-sun-crunches-fin-03:0\tolmo.train:1377\tINFO\tUnsharded "
     "checkpoint saved to /home/vec_norm/OLMo/checkpoints/OLMo-1B-tied-emb2-1000/step500-unsharded",
     "saved", 500),
    # Miracle2333/PaddleDetection log/workerlog.0 (corpus timeout-paddledetection-workerlog): no
    # step in the line or the path
    ("[03/08 14:11:13] ppdet.utils.checkpoint INFO: Save checkpoint: output/dino_ssod_debug",
     "save_start", None),
    # words about saving are no save line
    ("--save_checkpoint_steps 100", None, None),
    ("we should save checkpoint more often", None, None),
])
def test_a_save_line_in_any_words(line: str, kind: str | None, iteration: int | None) -> None:
    from traindoc.parse.checkpoints import parse_checkpoint
    row = parse_checkpoint(line)
    assert (row["kind"] if row else None) == kind
    assert (row["iteration"] if row else None) == iteration


def test_a_hand_written_loops_last_save_is_the_resume_point(tmp_path: Path) -> None:
    """PostTraining-LLM-Small's shape: '[step N] avg_loss=…' lines, then the epoch's save."""
    text = "\n".join([
        "[step 100] avg_loss=-0.0003 acc=0.5467",
        "Saved checkpoint to /Users/junyi/Projects/PostTraining-LLM-Small/checkpoints/"
        "lora_epoch2_step100.pt",
        "[step 150] avg_loss=-0.0001 acc=0.5933",
        "Saved checkpoint to /Users/junyi/Projects/PostTraining-LLM-Small/checkpoints/"
        "lora_epoch3_step150.pt", ""])
    f = _facts(tmp_path, text)
    assert f["last_iteration"] == 150 and f["last_checkpoint_iteration"] == 150
    assert f["error_kind"] is None


# --- a crash line's pid, tied by NCCL's lines to the GPU that is its local rank --------------

def test_a_crashed_pids_gpu_is_its_local_rank(tmp_path: Path) -> None:
    """deepspeedai/DeepSpeed#2638 (corpus gpu_crash-deepspeed-2638): UCX's handler names the
    pid, NCCL's 'host:pid:tid [dev]' lines its GPU; one machine, four processes on four GPUs."""
    text = "\n".join([
        "cf0b62962198:378934:382525 [2] NCCL INFO Connected all trees",
        "[cf0b62962198:378934:0:382579] Caught signal 7 (Bus error: nonexistent physical address)",
        "cf0b62962198:378935:382528 [3] NCCL INFO Connected all trees",
        "cf0b62962198:378938:382524 [5] NCCL INFO Connected all trees",
        "[cf0b62962198:378938:0:382583] Caught signal 7 (Bus error: nonexistent physical address)",
        "cf0b62962198:378936:382523 [4] NCCL INFO Connected all trees",
        "[cf0b62962198:378935:0:382582] Caught signal 7 (Bus error: nonexistent physical address)",
        ""])
    f = _facts(tmp_path, text)
    assert f["failed_hosts"] == ["cf0b62962198"] and f["error_kind"] == "signal"
    assert 2 in f["failed_ranks"] and set(f["failed_ranks"]) <= {2, 3, 5}


def test_gpus_are_local_ranks_only_per_machine_of_several_processes(tmp_path: Path) -> None:
    """NVIDIA/nccl-tests#252: two machines; kolyoz1 shows two processes on GPUs 1 and 3 (their
    local ranks), kolyoz2 one process (nothing to tell its GPU from a remapped device 0)."""
    from traindoc.diagnose.gpu_crash.events import device_local_ranks
    log = tmp_path / "job.log"
    log.write_text("\n".join([
        "kolyoz1:27223:27908 [1] NCCL INFO Connected all trees",
        "kolyoz2:25169:25829 [2] NCCL INFO Connected all trees",
        "kolyoz1:27225:27907 [3] NCCL INFO Connected all trees", ""]))
    assert device_local_ranks(traindoc.load(str(log))) == {27223: 1, 27225: 3}


# --- a job that states it runs one process: whatever failed is rank 0 ------------------------

@pytest.mark.parametrize("line", [
    # stanford-crfm/levanter logs/log-t1v-n-d3fbbfef-w-0.log (corpus gpu_crash-levanter-…-w-0)
    "INFO:levanter.distributed:Initialized jax.distributed with 8 devices, 1 processes, "
    "coordinator_address=None, process_id=None, my device_ids=None.",
    # microsoft/DeepSpeedExamples ViT CIFAR training.log (corpus
    # throughput-deepspeedexamples-vit-cifar-training): DeepSpeed's launcher on one process
    "[2022-11-22 10:02:01,787] [INFO] [launch.py:148:main] nnodes=1, num_local_procs=1, "
    "node_rank=0",
    # the same log: DeepSpeed's launcher counts the processes of the whole job
    "[2022-11-22 10:02:01,787] [INFO] [launch.py:162:main] dist_world_size=1",
    # gtseligas/lcn-llama train.out (corpus gpu_crash-lcn-llama-train-err): oumi's process info
    "[2025-02-13 15:01:10,876][oumi][rank0][pid:1122761][MainThread][INFO]][models.py:208] "
    "Building model using device_map: None (DeviceRankInfo(world_size=1, rank=0, "
    "local_world_size=1, local_rank=0))...",
    # a nanoT5 run's log (find_string index id 17965744338; the index names no repository):
    # Accelerate's state, printed by the script after "Distributed environment: NO"
    "Num processes: 1",
    # HectorFCardenas/llm.c gpt2_train.11672072.log (corpus gpu_crash-llmc-fork-gpt2-train-
    # 11672072): llm.c's parameter table and its batch plan
    "| num_processes         | 1                                                  |",
    "batch_size B=64 * seq_len T=1024 * num_processes=1 and total_batch_size=524288",
    # Chaklader/Difix train.log (corpus gpu_crash-difix-nerfstudio-train-log): nerfstudio's config
    "    machine=MachineConfig(seed=42, num_devices=1, num_machines=1, machine_rank=0, "
    "dist_url='auto', device_type='cuda'),",
    # an older nerfstudio's (find_string index id 31016138497): num_gpus
    "    machine=MachineConfig(seed=42, num_gpus=1, num_machines=1, machine_rank=0, "
    "dist_url='auto'),",
    # a detectron2 (YOLOF) training log (find_string index id 45552067125)
    "Command Line Args: Namespace(config_file='./configs/yolof_R_50_C5_1x.yaml', "
    "dist_url='tcp://127.0.0.1:49152', eval_only=False, machine_rank=0, num_gpus=1, "
    "num_machines=1, opts=[], resume=False)",
    # Lightning (lightning_fabric/utilities/distributed.py _init_dist_connection; corpus
    # gpu_crash-vault-genslm-single-gpu)
    "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/1",
    # older Lightning (pytorch_lightning accelerators' init_ddp_connection)
    "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/1",
    # detectron2/engine/defaults.py default_setup
    "[06/12 10:01:02 detectron2]: Rank of current process: 0. World size: 1",
    # transformers' examples/pytorch run_*.py (corpus gpu_crash-o-lora-train-and-infer-oom writes
    # the same line with "distributed training: True" for its torchrun job)
    "06/12/2024 10:01:02 - WARNING - __main__ - Process rank: 0, device: cuda:0, n_gpu: 1"
    "distributed training: False, 16-bits training: False",
    # LLaMA-Factory's parser.py (its wording, as corpus gpu_crash-ms-swift-6877's prints it)
    "[WARNING|parser.py:355] 2024-06-12 10:01:02,123 >> Process rank: 0, device: cuda:0, n_gpu: 1, "
    "distributed training: False, compute dtype: torch.bfloat16",
])
def test_a_one_process_job_is_one_node_of_one_process(line: str) -> None:
    from traindoc.parse.benchmarks import parse_node_layout
    rows = parse_node_layout(line) or []
    got = {r["metric"]: r["value"] for r in rows}
    assert got["layout:nnodes"] == 1 and got["layout:nproc_per_node"] == 1


@pytest.mark.parametrize("line", [
    # CqGao112/CN-Mini-Phi3 sft.log (corpus gpu_crash-cn-mini-phi3-sft): six processes
    "[2025-02-16 15:49:25,136] [INFO] [launch.py:164:main] dist_world_size=6",
    "[2025-02-13 15:01:10,876][oumi][rank0][pid:1122761][MainThread][INFO]][models.py:208] "
    "Building model using device_map: None (DeviceRankInfo(world_size=8, rank=0, "
    "local_world_size=8, local_rank=0))...",
    "Num processes: 4",
    "| num_processes         | 8                                                  |",
    "batch_size B=64 * seq_len T=1024 * num_processes=8 and total_batch_size=524288",
    "Initializing distributed: GLOBAL_RANK: 2, MEMBER: 3/4",
    "[06/12 10:01:02 detectron2]: Rank of current process: 0. World size: 8",
    "Process rank: 0, device: cuda:0, n_gpu: 1distributed training: True, 16-bits training: False",
    # Lightning's devices line: one device is one process per node, no node count
    "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]",
    "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3]",
])
def test_a_job_of_several_processes_states_no_single_node(line: str) -> None:
    from traindoc.parse.benchmarks import parse_node_layout
    rows = parse_node_layout(line) or []
    assert not any(r["metric"] == "layout:nnodes" for r in rows)


def test_a_machine_config_states_its_layout() -> None:
    """detectron2's launch (nerfstudio's too): num_gpus per machine, num_machines machines."""
    from traindoc.parse.benchmarks import parse_node_layout
    rows = parse_node_layout("    machine=MachineConfig(seed=42, num_devices=4, num_machines=2, "
                             "machine_rank=0, dist_url='auto', device_type='cuda'),") or []
    got = {r["metric"]: r["value"] for r in rows}
    assert got == {"layout:nnodes": 2.0, "layout:nproc_per_node": 4.0}


def test_the_failure_of_a_one_process_job_is_rank_0(tmp_path: Path) -> None:
    """levanter's single-host TPU job: the traceback names no process; the job has one."""
    text = "\n".join([
        "INFO:levanter.distributed:Initialized jax.distributed with 8 devices, 1 processes, "
        "coordinator_address=None, process_id=None, my device_ids=None.",
        "2024-01-01T07:27:55 - 0 - levanter.data.text - text.py:275 - ERROR :: error loading cache",
        "Traceback (most recent call last):",
        '  File "/home/kaiyue/venv310/lib/python3.10/site-packages/gcsfs/retry.py", line 103, in '
        "validate_response",
        '    raise OSError(f"Forbidden: {path}\\n{msg}")',
        "OSError: Forbidden: b/levanter-data/o/tokenized%2Fopenwebtext%2Fvalidation%2F"
        "cache_ledger.json", ""])
    f = _facts(tmp_path, text)
    assert f["error_kind"] == "python" and "Forbidden" in f["error_message"]
    # two processes: which one failed is not said
    f = _facts(tmp_path, text.replace("8 devices, 1 processes", "8 devices, 2 processes"))
    assert f["failed_ranks"] == []


def test_one_visible_device_is_one_process_per_node() -> None:
    """Lightning's "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]" (lightning/pytorch/accelerators/
    cuda.py): the machine shows one GPU, so one GPU process runs on it; several devices say
    nothing of how many processes, only that there may be more than one."""
    from traindoc.parse.benchmarks import parse_node_layout
    got = {r["metric"]: r["value"]
           for r in parse_node_layout("LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]") or []}
    assert got == {"layout:nproc_per_node": 1.0}
    # several devices: no processes per node, only the devices seen (no lone process then)
    assert parse_node_layout("LOCAL_RANK: 1 - CUDA_VISIBLE_DEVICES: [0,1]") == [
        {"metric": "layout:visible_devices", "value": 2.0}]


# a single-GPU Lightning run's output.log (corpus gpu_crash-kd-thesis-lightning-sanity-zerodivision,
# a kd_thesis run): Lightning's devices line, then a traceback no rank tags
LIGHTNING_ONE_GPU = [
    "GPU available: True (cuda), used: True",
    "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]",
    "Sanity Checking DataLoader 0:   0%|          | 0/2 [00:00<?, ?it/s]",
    "Traceback (most recent call last):",
    '  File "/workspace/kd_thesis/src/training/kd_module.py", line 389, in compute_weights',
    "    weights = (1.0 / (K - 1)) * torch.ones_like(x)",
    "ZeroDivisionError: float division by zero",
    ""]


def test_a_one_gpu_lightning_run_failed_on_rank_0(tmp_path: Path) -> None:
    f = _facts(tmp_path, "\n".join(LIGHTNING_ONE_GPU))
    assert f["failed_ranks"] == [0] and f["error_kind"] == "python"
    # four visible devices: four processes may write to this log, which one failed is not said
    f = _facts(tmp_path, "\n".join(LIGHTNING_ONE_GPU).replace("DEVICES: [0]", "DEVICES: [0,1,2,3]"))
    assert f["failed_ranks"] == []


# pytorch/PiPPy#259 (corpus gpu_crash-pippy-259): srun -l labels every line with its task; no
# launcher runs under srun, so the task is the rank
PIPPY_TASK_15 = [
    "15: ../aten/src/ATen/native/cuda/Loss.cu:271: nll_loss_forward_reduce_cuda_kernel_2d: block: "
    "[0,0,0], thread: [0,0,0] Assertion `t >= 0 && t < n_classes` failed.",
    "15: terminate called after throwing an instance of 'c10::CUDAError'",
    "15:   what():  CUDA error: device-side assert triggered",
    ""]


def test_an_srun_task_with_no_launcher_under_it_is_the_rank(tmp_path: Path) -> None:
    f = _facts(tmp_path, "\n".join(PIPPY_TASK_15))
    assert f["failed_ranks"] == [15] and f["error_kind"] == "cuda_error"
    # torchrun under srun (its record of a local rank): task 15 is a node's agent, not rank 15
    f = _facts(tmp_path, "\n".join([
        *PIPPY_TASK_15[:-1],
        "15: ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) "
        "local_rank: 3 (pid: 4242) of binary: /opt/conda/bin/python", ""]))
    assert 15 not in f["failed_ranks"]


# --- a scheduler ends the job at its time limit: no crash of the job's own --------------------

@pytest.mark.parametrize(("line", "code"), [
    # marbl/canu#1214, biocore/qiime#1048 (PBS/Torque's job stderr)
    ("=>> PBS: job killed: walltime 86415 exceeded limit 86400", "pbs_walltime"),
    # CoBrALab/MAGeTbrain#20 (Moab's mail, pasted)
    ("MOAB_INFO:  job exceeded wallclock limit", "moab_wallclock"),
    # marbl/canu#444 (LSF's job report)
    ("TERM_RUNLIMIT: job killed after reaching LSF run time limit.", "lsf_runlimit"),
    # LSF's job exit reasons (IBM Spectrum LSF, "Job termination reasons")
    ("TERM_PREEMPT: job killed after preemption.", "lsf_preempt"),
    # a Kubernetes Job past activeDeadlineSeconds (kubectl describe job: its event)
    ("  Warning  DeadlineExceeded  12s   job-controller  Job was active longer than specified "
     "deadline", "k8s_deadline_exceeded"),
])
def test_scheduler_time_limit_wordings(line: str, code: str) -> None:
    row = parse_error(line)
    assert row is not None and (row["kind"], row["code"]) == ("signal", code)


def test_a_walltime_kill_is_no_crash(tmp_path: Path) -> None:
    """The job ran out of the time it asked for; the SIGTERM its processes got is the kill."""
    f = _facts(tmp_path, "\n".join([
        " iteration       60/    1000 | elapsed time per iteration (ms): 1200.5 | lm loss: 6.2",
        "=>> PBS: job killed: walltime 7233 exceeded limit 7200",
        "Received SIGTERM, exiting", ""]))
    assert f["error_kind"] is None and f["failed_ranks"] == []
    # triage names no crash either (corpus loss_spike-monarch-readme-mlp ends on PBS's line)
    from traindoc.diagnose import triage
    assert triage.diagnose(traindoc.load(str(tmp_path / "job.log"))).facts["classes"] == []


# --- an interactive session's shell prompt names the machine the job ran on -------------------

@pytest.mark.parametrize("lines, host", [
    # ArjunaCluster/ArjunaUsers#52 (corpus gpu_crash-arjunausers-52): the prompt after "Killed"
    (["Epoch: [0][511/1736]\t Loss 0.5117 MAE 0.6075 RMSE 0.7153", "Killed",
      "(abnn) mingzeya@c002:~/CGCNN_project/AbNN_benchmark/hform/case1    $ "], "c002"),
    # jaewon-lee-b/lte#22: the prompt that started the training, then "Killed"
    (["(lte) root@401240707274117120-taskrole1-0:/gemini/code/lte-main# python train.py --config "
      "configs/train-div2k/train_edsr-baseline-lte.yaml --gpu 0", "config loaded.", "Killed"],
     "401240707274117120-taskrole1-0"),
])
def test_a_shell_prompt_names_the_failed_machine(tmp_path: Path, lines: list[str],
                                                 host: str) -> None:
    f = _facts(tmp_path, "\n".join(lines) + "\n")
    assert f["error_kind"] == "signal" and f["failed_hosts"] == [host]


@pytest.mark.parametrize("line", [
    "[user@login1 ~]$ sbatch train.slurm",  # the job runs on the nodes SLURM picks
    "user@laptop:~$ ssh gpu07",
    "user@localhost:~/run$ python train.py",
    "user@gpu07:~$ tail -f slurm-42.out",  # reads a log: the terminal's machine, not the job's
    "[me@login01 ~]$ ",  # a login node's prompt
    "git@github.com:org/repo.git",
    "@torch.no_grad()",
])
def test_a_prompt_that_sends_the_work_elsewhere_names_no_machine(line: str) -> None:
    from traindoc.parse.benchmarks import parse_nodelist
    assert parse_nodelist(line) is None


# --- triage names a start-up timeout as one, not as a collective's ----------------------------

@pytest.mark.parametrize("line", [
    # ModelTC/LightCompress#365 (corpus timeout-lightcompress-365)
    "[E416 15:40:10.861069241 socket.cpp:1023] [c10d] The client socket has timed out after "
    "300000ms while trying to connect to (mo.sy.cn, 40613).",
    # pytorch/pytorch#107021 (corpus timeout-pytorch-107021)
    "[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect "
    "to 192.0.0.1:1234",
    # pytorch/pytorch#79388 (corpus timeout-pytorch-79388)
    "[E socket.cpp:793] [c10d] The client socket has timed out after 60s while trying to connect "
    "to (IP1, 2222).",
])
def test_triage_calls_a_c10d_socket_timeout_a_start_up_one(tmp_path: Path, line: str) -> None:
    from traindoc.diagnose import triage
    log = tmp_path / "job.log"
    log.write_text(line + "\n")
    cls = triage.diagnose(traindoc.load(str(log))).facts["classes"][0]
    assert cls["class"] == "timeout" and "at start-up, before any collective" in cls["detail"]
    assert "in a collective" not in cls["detail"]


# --- the launcher told to stop from outside, no worker failing: a signal, no rank -------------

@pytest.mark.parametrize("lines, message", [
    # PrimeIntellect-ai/prime-rl#1360 (corpus gpu_crash-prime-rl-1360): torch 2.4+ glog wording
    (["[default0]:12:13:46    INFO Waiting for training batch to arrive",
      "W1130 12:13:49.388000 124326 torch/distributed/elastic/agent/server/api.py:723] Received 15"
      " death signal, shutting down workers",
      "W1130 12:13:49.389000 124326 torch/distributed/elastic/multiprocessing/api.py:900] Sending "
      "process 124533 closing signal SIGTERM"], "Received 15 death signal"),
    # modelscope/ms-swift#5884: SIGHUP under nohup, the agent's own traceback after it
    (["W0920 09:10:41.194000 84933 site-packages/torch/distributed/elastic/agent/server/api.py:719]"
      " Received 1 death signal, shutting down workers",
      "W0920 09:10:41.195000 84933 site-packages/torch/distributed/elastic/multiprocessing/api.py:"
      "900] Sending process 85005 closing signal SIGHUP",
      "torch.distributed.elastic.multiprocessing.api.SignalException: Process 84933 got signal: 1"],
     "Received 1 death signal"),
    # determined-ai/determined#8915: torch < 2.4's logger wording behind a collector's prefix
    (["[2024-02-27T21:35:32.106313Z] fa88a9df || WARNING: torch.distributed.elastic.agent.server."
      "api:Received 15 death signal, shutting down workers",
      "[2024-02-27T21:35:32.106517Z] fa88a9df || WARNING: torch.distributed.elastic.multiprocessing"
      ".api:Sending process 165 closing signal SIGTERM"], "Received 15 death signal"),
    # NeMo's resiliency guide (docs.nvidia.com nemo-framework resiliency): enum wording
    (["Received Signals.SIGTERM death signal, shutting down workers",
      "Sending process 404288 closing signal SIGTERM"], "Received Signals.SIGTERM death signal"),
])
def test_a_launcher_stopped_from_outside_is_a_signal_without_a_rank(
        tmp_path: Path, lines: list[str], message: str) -> None:
    rep = gpu_crash.diagnose(traindoc.load(str(_write(tmp_path, lines))))
    assert rep.facts["error_kind"] == "signal"
    assert message in rep.facts["error_message"]
    assert rep.facts["failed_ranks"] == []
    assert "from outside the job" in rep.verdict


def _write(tmp_path: Path, lines: list[str]) -> Path:
    log = tmp_path / "job.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def test_a_ctrl_c_of_the_launcher_is_no_failure(tmp_path: Path) -> None:
    """MCG-NJU/RTD-Action#31: the reporter interrupted a stuck job (SIGINT): a choice, not a
    failure — the hang, if any, is the story."""
    lines = ["WARNING:torch.distributed.elastic.agent.server.api:Received 2 death signal, "
             "shutting down workers",
             "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4797 closing "
             "signal SIGINT"]
    assert gpu_crash.diagnose(traindoc.load(str(_write(tmp_path, lines)))).facts["error_kind"] is None


# DeepSpeed's launcher (launch.py's sigkill_handler) told to stop: it kills its workers, then
# says so. Four DeepSpeed versions' wordings, all from committed logs.
DS_KILLED = [
    # madehua98/FoodHealthMMLLM scripts/v1/phi2/food_weight_train.out (corpus
    # gpu_crash-foodhealth-moellava-deepspeed-sigterm): the first kill glued to the tqdm bar
    [" 19%|█▊        | 22132/118611 [37:46:05<223:37:13,  8.34s/it][2024-04-17 09:44:32,867] "
     "[INFO] [launch.py:315:sigkill_handler] Killing subprocess 18135",
     "Terminated",
     "[2024-04-17 09:44:36,426] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 18136",
     "[2024-04-17 09:44:36,551] [INFO] [launch.py:324:sigkill_handler] Main process received "
     "SIGTERM, exiting"],
    # bigscience-workshop/bigscience benchmark logs (2021): DeepSpeed 0.3's bare wording
    ["Killing subprocess 45562", "Main process received SIGTERM, exiting"],
]


@pytest.mark.parametrize("lines", DS_KILLED)
def test_deepspeeds_launcher_stopped_from_outside_is_a_signal(tmp_path: Path,
                                                             lines: list[str]) -> None:
    rep = gpu_crash.diagnose(traindoc.load(str(_write(tmp_path, lines))))
    assert rep.facts["error_kind"] == "signal"
    assert rep.facts["error_message"] == "Main process received SIGTERM, exiting"
    assert rep.facts["failed_ranks"] == []
    assert "from outside the job" in rep.verdict


def test_a_worker_killed_by_sigterm_with_nothing_failing_is_a_signal_without_a_rank(
        tmp_path: Path) -> None:
    """madehua98/FoodHealthMMLLM scripts/v1/phi2/recognition_stage3_2k.out (corpus
    gpu_crash-foodhealth-moellava-worker-sigterm-rank-unnamed): DeepSpeed prints the command it
    spawned last whichever worker died, so '--local_rank=6' names no rank."""
    lines = ["[2024-05-26 23:35:05,853] [INFO] [launch.py:315:sigkill_handler] Killing subprocess "
             "3065546",
             "[2024-05-26 23:35:11,089] [ERROR] [launch.py:321:sigkill_handler] ['/home/data_llm/"
             "anaconda3/envs/moellava/bin/python', '-u', 'moellava/train/train_xformers.py', "
             "'--local_rank=6', '--do_train'] exits with return code = -15"]
    f = gpu_crash.diagnose(traindoc.load(str(_write(tmp_path, lines)))).facts
    assert f["error_kind"] == "signal" and "-15" in f["error_message"]
    assert f["failed_ranks"] == []


@pytest.mark.parametrize("lines", [
    # linskybing's DeepSpeed ZeRO-3 log (corpus loss_spike-linskybing-llm-zero-3-amd): Ctrl-C
    ["[Step 12/100] Loss: 5.0529 | Tokens/s: 137.20 | GPU Mem (GB): 26.79 | Peak Mem: 43.96",
     "[2025-08-15 08:42:10,745] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 3668201",
     "[2025-08-15 08:42:11,420] [INFO] [launch.py:328:sigkill_handler] Main process received "
     "SIGINT, exiting"],
    # Megatron-DeepSpeed's random-ltd example log (corpus gpu_crash-megatron-deepspeed-random-ltd-
    # lr-3-0e-4): the workers' KeyboardInterrupt tracebacks, then the runner's relayed SIGTERM
    ["Traceback (most recent call last):",
     '  File "/home/x/Megatron-DeepSpeed/pretrain_gpt.py", line 276, in <module>',
     "    pretrain(train_valid_test_datasets_provider, model_provider, forward_step)",
     "KeyboardInterrupt",
     "[2022-10-31 10:55:10,500] [INFO] [launch.py:286:sigkill_handler] Killing subprocess 19338",
     "[2022-10-31 10:55:14,192] [INFO] [launch.py:295:sigkill_handler] Main process received "
     "SIGTERM, exiting"],
])
def test_a_deepspeed_stop_someone_chose_is_no_failure(tmp_path: Path, lines: list[str]) -> None:
    assert gpu_crash.diagnose(traindoc.load(str(_write(tmp_path, lines)))).facts["error_kind"] is None


def test_a_scancel_before_the_launchers_teardown_is_the_jobs_end(tmp_path: Path) -> None:
    """bigscience-workshop/bigscience meg_gpt2_base_n4 (corpus timeout-bigscience-meg-gpt2-base-
    n4-dp1-tp4-pp4): scancel, then the launchers' teardown. The runbook says the scheduler
    cancelled the job on r8i3n1 (as corpus gpu_crash-deformable-detr-unzip-scancel is labelled);
    triage calls it no failure class (the case's label)."""
    lines = ["srun: Job step aborted: Waiting up to 62 seconds for job step to finish.",
             "Killing subprocess 64203",
             "Main process received SIGTERM, exiting",
             "slurmstepd: error: *** JOB 1809579 ON r8i3n1 CANCELLED AT 2021-05-23T08:45:57 ***"]
    inc = traindoc.load(str(_write(tmp_path, lines)))
    rep = gpu_crash.diagnose(inc)
    assert rep.facts["error_kind"] == "signal" and rep.facts["failed_hosts"] == ["r8i3n1"]
    assert rep.facts["failed_ranks"] == [] and "cancelled" in rep.verdict
    assert triage.diagnose(inc).facts["classes"] == []


def test_the_agents_stop_after_a_workers_failure_stays_the_teardown(tmp_path: Path) -> None:
    """A worker that failed first stays the failure; the agent's stop is its teardown."""
    lines = ["RuntimeError: CUDA error: an illegal memory access was encountered",
             "W1130 12:13:49.388000 124326 torch/distributed/elastic/agent/server/api.py:723] "
             "Received 15 death signal, shutting down workers"]
    f = gpu_crash.diagnose(traindoc.load(str(_write(tmp_path, lines)))).facts
    assert f["error_kind"] == "cuda_error"


# --- Hydra's trimmed traceback and its exit: the job died of that exception ---------------------

HYDRA_TAIL = "\nSet the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace."


@pytest.mark.parametrize("lines, message", [
    # zhiyuanhubj/logic-rl-formula grpo.log (corpus timeout-logic-rl-formula-grpo): verl's
    # main_task under Ray, Hydra's trimmed traceback (no '<module>' frame)
    (["Error executing job with overrides: ['algorithm.adv_estimator=grpo']",
      "Traceback (most recent call last):",
      '  File "/home/tri/zhiyuan/Logic-RL/verl/trainer/main_ppo.py", line 105, in main',
      "    ray.get(main_task.remote(config))",
      '  File "/home/tri/zhiyuan/Logic-RL/verl/single_controller/ray/base.py", line 274, in '
      "_init_with_resource_pool",
      "    assert register_center_actor is not None",
      "AssertionError: failed to get register_center_actor: V9zrH5_register_center in []", ""],
     "AssertionError"),
    # ashleve/lightning-hydra-template#350: a target Hydra could not import, no traceback at all
    (["[2022-06-08 08:12:42,395][src.training_pipeline][INFO] - Instantiating model "
      "<src.models.xxx_module.XXXLitModule>",
      "Error executing job with overrides: []",
      "Traceback (most recent call last):",
      '  File "/work/src/training_pipeline.py", line 40, in train',
      "    model = hydra.utils.instantiate(config.model)",
      "ImportError: Error locating target 'src.models.xxx_module.XXXLitModule', see chained "
      "exception above.", "full_key: model"], "Error locating target"),
])
def test_hydras_exit_after_its_trimmed_traceback_is_a_crash(tmp_path: Path, lines: list[str],
                                                             message: str) -> None:
    from traindoc.diagnose import triage

    inc = traindoc.load(str(_write(tmp_path, [*lines, HYDRA_TAIL])))
    f = gpu_crash.diagnose(inc).facts
    assert f["error_kind"] == "python"
    assert message in f["error_message"]  # the exception, not "exitcode: 1"
    assert triage.analyse(inc).cause == "gpu_crash"


def test_hydras_exit_after_a_peers_error_stays_a_symptom(tmp_path: Path) -> None:
    """verl's train.out (corpus throughput-verl-train-out): the exception above Hydra's line is
    Ray's report of a peer gone; the exit is its cascade, not a failure of its own."""
    lines = ["ray.exceptions.ActorUnavailableError: The actor d5a12869 is unavailable: RpcError: "
             "RPC error: Socket closed rpc_code: 14.", "", HYDRA_TAIL.strip()]
    assert gpu_crash.diagnose(traindoc.load(str(_write(tmp_path, lines)))).facts[
        "error_kind"] is None


def test_triage_names_an_outside_stop(tmp_path: Path) -> None:
    """modelscope/ms-swift#5884's agent lines alone: the job's end, named gpu_crash (signal);
    a hang killed by its runner stays the hang (test_triage's drill_hang)."""
    from traindoc.diagnose import triage

    lines = ["W0920 09:10:41.194000 84933 site-packages/torch/distributed/elastic/agent/server/"
             "api.py:719] Received 1 death signal, shutting down workers",
             "W0920 09:10:41.195000 84933 site-packages/torch/distributed/elastic/multiprocessing/"
             "api.py:900] Sending process 85005 closing signal SIGHUP"]
    assert triage.analyse(traindoc.load(str(_write(tmp_path, lines)))).cause == "gpu_crash"


# --- torch's ExceptionWrapper: the original error below "Caught X in replica N" is the failure -

@pytest.mark.parametrize("wrapper, original, kind, words", [
    # gtseligas/lcn-llama train.err (corpus gpu_crash-lcn-llama-train-err): nn.DataParallel
    ("torch.OutOfMemoryError: Caught OutOfMemoryError in replica 0 on device 0.",
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total "
     "capacity of 63.42 GiB of which 1.20 GiB is free.", "oom", "Tried to allocate 512.00 MiB"),
    # junyanz/pytorch-CycleGAN-and-pix2pix#1499: 8 GPUs under DataParallel, torch 1.x wording
    ("RuntimeError: Caught RuntimeError in replica 3 on device 3.",
     "RuntimeError: CUDA out of memory. Tried to allocate 16.00 MiB (GPU 0; 31.75 GiB total "
     "capacity; 883.36 MiB already allocated; 8.75 MiB free; 906.00 MiB reserved in total by "
     "PyTorch)", "oom", "Tried to allocate 16.00 MiB"),
    # a DataLoader worker's error, re-raised the same way (torch/_utils.py ExceptionWrapper)
    ("KeyError: Caught KeyError in DataLoader worker process 0.", "KeyError: 'image_id'",
     "python", "KeyError: 'image_id'"),
])
def test_the_wrapped_error_is_the_failure(tmp_path: Path, wrapper: str, original: str, kind: str,
                                          words: str) -> None:
    lines = ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>',
             "    loss = model(batch)", wrapper, "Original Traceback (most recent call last):",
             '  File "/opt/torch/nn/parallel/parallel_apply.py", line 83, in _worker',
             "    output = module(*input, **kwargs)", original]
    f = _facts(tmp_path, "\n".join(lines) + "\n")
    assert f["error_kind"] == kind
    assert words in f["error_message"]


# --- the kernel's OOM killer under a syslog/journald header: the header's host failed -----------

@pytest.mark.parametrize("line, host", [
    # huggingface/transformers#7020 (corpus gpu_crash-transformers-7020): /var/log/messages
    ("Sep  9 17:10:44 centos kernel: Out of memory: Kill process 126138 (python3) score 939 or "
     "sacrifice child", "centos"),
    # the kernel's mm/oom_kill.c patch adding oom_score_adj to the message (E. Chron, 2019)
    ("Aug 14 23:00:02 testserver kernel: Out of memory: Killed process 2692 (systemd-udevd) "
     "total-vm:1056800kB, anon-rss:1052760kB, file-rss:4kB, shmem-rss:0kB oom_score_adj:1000",
     "testserver"),
    # journalctl -o short-iso: the host after the time
    ("2024-05-14T03:12:09+0000 gpu-node-2 kernel: Memory cgroup out of memory: Killed process "
     "4242 (python) total-vm:81234567kB", "gpu-node-2"),
])
def test_the_kernels_oom_kill_names_the_syslog_host(tmp_path: Path, line: str, host: str) -> None:
    f = _facts(tmp_path, line + "\n")
    assert f["error_kind"] == "oom"
    assert f["failed_hosts"] == [host]



def test_jax_coordination_service_names_the_task_that_stopped_its_heartbeat(tmp_path: Path) -> None:
    # jax-ml/jax#23599: the coordination service's error for a task whose heartbeats stopped;
    # task N is jax.process_index() N, the rank here
    f = _facts(tmp_path, "I1009 15:40:00.000000 1 train.py:80] step 100 loss 2.31\n"
               "2024-10-09 15:47:38.568412: E external/xla/xla/tsl/distributed_runtime/coordination/"
               "coordination_service.cc:1170] /job:jax_worker/replica:0/task:3 has been set to ERROR "
               "in coordination service: UNAVAILABLE: Task /job:jax_worker/replica:0/task:3 heartbeat "
               "timeout. This indicates that the remote task has failed, got preempted, or crashed "
               "unexpectedly. Check the task logs for an earlier error to debug further. "
               "[type.googleapis.com/tensorflow.CoordinationServiceError='']\n")
    assert f["failed_ranks"] == [3]
    assert "task:3 heartbeat timeout" in f["error_message"]

# --- every rank raising the same Python exception, nothing ordering them: all of them failed ----

def test_the_same_exception_on_every_rank_names_them_all(tmp_path: Path) -> None:
    """ibot-paddle's workerlogs (corpus gpu_crash-ibot-paddle-workerlog): the same ValueError
    in each rank's file, no timestamps: a deterministic error of every rank, not rank 0's."""
    err = ("ValueError: (InvalidArgument) The 'shape' in ReshapeOp is invalid. The input tensor "
           "X'size must be equal to the capacity of 'shape'.")
    for r in range(4):
        (tmp_path / f"workerlog.{r}").write_text(
            "Starting IBOT training!\nTraceback (most recent call last):\n"
            '  File "main_ibot.py", line 300, in <module>\n    train_ibot(args)\n' + err + "\n")
    f = gpu_crash.diagnose(traindoc.load(str(tmp_path))).facts
    assert f["failed_ranks"] == [0, 1, 2, 3]


def test_different_exceptions_keep_the_first(tmp_path: Path) -> None:
    for r, err in enumerate(["KeyError: 'image_id'", "ValueError: bad shape"]):
        (tmp_path / f"workerlog.{r}").write_text(err + "\n")
    assert gpu_crash.diagnose(traindoc.load(str(tmp_path))).facts["failed_ranks"] == [0]


def test_the_kernels_killed_process_line_alone_is_the_oom_killer(tmp_path: Path) -> None:
    """huggingface/transformers#7020's second kernel line, pasted alone (old kernels print the
    victim on its own line: 'Killed process N (comm) total-vm:…')."""
    f = _facts(tmp_path, "Sep  9 17:10:44 centos kernel: Killed process 126170 (python3) "
                         "total-vm:325690732kB, anon-rss:125105968kB, file-rss:0kB\n")
    assert (f["error_kind"], f["failed_hosts"]) == ("oom", ["centos"])
    assert "Killed process 126170 (python3)" in f["error_message"]


# --- PaddlePaddle workerlogs: its error wordings, its signal handler's knock-on aborts ---------

@pytest.mark.parametrize("line, code, kind, words", [
    # aashishpokharel-fuse/Ernie-DocVQA log/workerlog.0 (corpus gpu_crash-ernie-docvqa-workerlog-oom)
    ("Out of memory error on GPU 0. Cannot allocate 732.427734MB memory on GPU 0, 14.383789GB "
     "memory has been allocated and available memory is only 200.562500MB.", "paddle_oom", "oom",
     "Out of memory error on GPU 0. Cannot allocate 732.427734MB memory on GPU 0, 14.383789GB "
     "memory has been allocated and available memory is only 200.562500MB."),
    # Paddle 2.0.1 (PaddlePaddle/PaddleDetection#3094), no "has been allocated" clause
    ("Out of memory error on GPU 0. Cannot allocate 40.500244MB memory on GPU 0, available memory "
     "is only 23.350001MB.", "paddle_oom", "oom", "available memory is only 23.350001MB."),
    # the advice on the same line (PaddlePaddle/PaddleGAN#587): kept out of the message
    ("Out of memory error on GPU 0. Cannot allocate 3.621826GB memory on GPU 0, 21.184814GB "
     "memory has been allocated and available memory is only 2.814575GB. Please check whether "
     "there is any other process using GPU 0.", "paddle_oom", "oom", "only 2.814575GB."),
    # Paddle 1.6 (PaddlePaddle/Paddle#19779)
    ("Out of memory error on GPU 0. Cannot allocate 145.468994MB GPU memory, available memory is "
     "72.312500MB.", "paddle_oom", "oom", "Cannot allocate 145.468994MB GPU memory"),
    # the signal handler (platform/init.cc): prenet's and paddlescripts' workerlogs, PaddleOCR#13976
    ("FatalError: `Termination signal` is detected by the operating system.", "SIGTERM", "signal",
     "`Termination signal`"),
    # PaddlePaddle/Paddle#53049
    ("FatalError: `Process abort signal` is detected by the operating system.", "SIGABRT",
     "signal", "`Process abort signal`"),
    # linhandev/iann log/workerlog.0 (corpus gpu_crash-iann-workerlog-cv2)
    ("FatalError: `Segmentation fault` is detected by the operating system.", "SIGSEGV", "signal",
     "`Segmentation fault`"),
    # PaddleOCR 3.4 on MKL, quoted in a project's progress notes
    ("FatalError: `Erroneous arithmetic operation` is detected by the operating system.",
     "SIGFPE", "signal", "Erroneous arithmetic"),
    # Paddle 2.6+: PaddlePaddle/PaddleHelix#315
    ("FatalError: The operating system has detected the 'Process abort signal'.", "SIGABRT",
     "signal", "'Process abort signal'"),
    # Paddle 2.0's NCCL wording: paddlescripts' workerlogs (corpus gpu_crash-paddlescripts-spawn-
    # workerlog), PaddlePaddle/PaddleDetection#4139
    ("OSError: (External)  Nccl error, unhandled cuda error  (at /paddle/paddle/fluid/platform/"
     "collective_helper.cc:100)", "nccl_unhandled_cuda", "nccl_error",
     "Nccl error, unhandled cuda error"),
    # Paddle 2.2+: PaddlePaddle/PaddleSpeech#3171, PaddleDetection#7380
    ("OSError: (External) NCCL error(1), unhandled cuda error. ", "nccl_unhandled_cuda",
     "nccl_error", "NCCL error(1), unhandled cuda error"),
    ("OSError: (External) NCCL error(2), unhandled system error.", "nccl_system", "nccl_error",
     "NCCL error(2), unhandled system error"),
    # a C++ extension's std::runtime_error (TheAtticusProject/cuad#9 quotes its what() text)
    ("NCCL Error 1: unhandled cuda error", "nccl_unhandled_cuda", "nccl_error",
     "NCCL Error 1: unhandled cuda error"),
    # OpenCV's lowercase exception class: linhandev/iann log/workerlog.0
    ("cv2.error: OpenCV(4.5.1) /tmp/pip-req-build-tk9iuyva/opencv/modules/imgproc/src/color.cpp:"
     "182: error: (-215:Assertion failed) !_src.empty() in function 'cvtColor'", "cv2.error",
     "python", "!_src.empty() in function 'cvtColor'"),
    ("struct.error: unpack requires a buffer of 4 bytes", "struct.error", "python",
     "unpack requires a buffer of 4 bytes"),
])
def test_paddle_wordings(line: str, code: str, kind: str, words: str) -> None:
    row = parse_error(line)
    assert row is not None
    assert (row["code"], row["kind"]) == (code, kind)
    assert words in row["message"]


# --- JAX / TensorFlow / XLA and Ray: their device OOMs, CUDA driver errors, host OOM kills ------

@pytest.mark.parametrize("line, code, kind, words", [
    # jax-ml/jax#13428
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
     "allocate 6291456 bytes.", "xla_oom", "oom", "allocate 6291456 bytes"),
    # ecmwf-lab/ai-models-graphcast#18
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for "
     "2.99GiB (3206250496B) on device ordinal 0", "xla_oom", "oom", "2.99GiB (3206250496B)"),
    # kingoflolz/mesh-transformer-jax#66 (before XLA's status codes were upper case)
    ("RuntimeError: Resource exhausted: Failed to allocate request for 32.00MiB (33554432B) on "
     "device ordinal 0", "xla_oom", "oom", "32.00MiB"),
    # TensorFlow's ResourceExhaustedError on a GPU (its allocator's wording, the one Keras's fit
    # raises)
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor "
     "with shape[256,1024,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0 "
     "by allocator GPU_0_bfc", "tf_oom", "oom", "device:GPU:0"),
    # openxla/xla#15945: the stream executor's driver error
    ("2024-08-10 13:09:02.411862: E external/xla/xla/stream_executor/cuda/cuda_driver.cc:663] "
     "failed to unload module 0x5215a9a0; leaking: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory "
     "access was encountered", "cuda_error", "cuda_error", "an illegal memory access"),
    ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable: "
     "run time error: custom call 'xla.gpu.func.launch' failed: Failed to launch CUDA kernel: add "
     "with block dimensions: 128x1x1 and grid dimensions: 448x1x1: CUDA_ERROR_ILLEGAL_ADDRESS: an "
     "illegal memory access was encountered.", "cuda_error", "cuda_error",
     "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"),
    # jax-ml/jax#3017
    ('Program hit CUDA_ERROR_ILLEGAL_ADDRESS (error 700) due to "an illegal memory access was '
     'encountered" on CUDA API call to cuMemcpyDtoHAsync_v2', "cuda_error", "cuda_error",
     "an illegal memory access"),
    # ray-project/ray#34695 (the raylet's summary of its memory monitor's kills)
    ("(raylet) [2023-04-19 16:22:19,798 E 329 329] (raylet) node_manager.cc:3069: 13 Workers "
     "(tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons "
     "at node (ID: 28753320d9099742bb03374decae7140368403e9aeda01a4e332761a, IP: 10.0.10.135) over "
     "the last time period.", "ray_oom", "oom", "13 Workers (tasks / actors) killed"),
    # ray-project/ray#28774 (Ray 2.0's wording)
    ("(raylet, ip=172.31.66.10) [2022-09-22 16:02:34,214 E 138 138] (raylet) node_manager.cc:2966: "
     "System memory low at node with IP 172.31.66.10. Used memory (54.90GB) / total capacity "
     "(57.60GB) (0.95307) exceeds threshold 0.95, killing latest task with name  and task ID "
     "NIL_ID to avoid running out of memory.", "ray_oom", "oom", "System memory low"),
])
def test_jax_tf_and_ray_wordings(line: str, code: str, kind: str, words: str) -> None:
    row = parse_error(line)
    assert row is not None
    assert (row["code"], row["kind"]) == (code, kind)
    assert words in row["message"]


@pytest.mark.parametrize("line", [
    # TF at every start on a machine without a GPU: no crash
    "2021-03-01 10:00:00.000000: E tensorflow/stream_executor/cuda/cuda_driver.cc:328] failed "
    "call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected",
    # XLA's allocator says itself this one is no failure (flatironinstitute/nemos#345)
    "2025-05-18 21:59:55.086788: W external/xla/xla/tsl/framework/bfc_allocator.cc:310] Allocator "
    "(GPU_0_bfc) ran out of memory trying to allocate 3.37GiB with freed_by_count=0. The caller "
    "indicates that this is not a failure, but this may mean that there could be performance "
    "gains if more memory were available.",
])
def test_jax_and_tf_lines_that_are_no_crash(line: str) -> None:
    assert parse_error(line) is None


def test_a_ray_oom_kill_names_its_node(tmp_path: Path) -> None:
    f = _facts(tmp_path, "(raylet) [2023-04-19 16:22:19,798 E 329 329] (raylet) "
                         "node_manager.cc:3069: 13 Workers (tasks / actors) killed due to memory "
                         "pressure (OOM), 0 Workers crashed due to other reasons at node (ID: "
                         "2875, IP: 10.0.10.135) over the last time period.\n")
    assert (f["error_kind"], f["failed_hosts"]) == ("oom", ["10.0.10.135"])


def test_a_module_exception_is_no_host_prefix(tmp_path: Path) -> None:
    """'cv2.error: …' looks like pdsh's 'host: line' (a name with a digit before ': ')."""
    (tmp_path / "workerlog.0").write_text(
        "cv2.error: OpenCV(4.5.1) /tmp/x/color.cpp:182: error: (-215:Assertion failed) "
        "!_src.empty() in function 'cvtColor'\n")
    for engine in ("plain", "fast"):
        e = traindoc.load(str(tmp_path), engine=engine).errors
        assert list(e["code"]) == ["cv2.error"] and e["host"].isna().all()


PADDLE_SIGTERM = ("\n\n--------------------------------------\nC++ Traceback (most recent call "
                  "last):\n--------------------------------------\n0   paddle::framework::"
                  "SignalHandle(char const*, int)\n\n----------------------\nError Message "
                  "Summary:\n----------------------\nFatalError: `Termination signal` is detected "
                  "by the operating system.\n  [TimeInfo: *** Aborted at 1649739461 (unix time) "
                  "try \"date -d @1649739461\" if you are using GNU date ***]\n  [SignalInfo: *** "
                  "SIGTERM (@0x14ef) received by PID 5379 (TID 0x7f82011f5780) from PID 5359 ***]\n")


def test_a_rank_paddles_launcher_terminated_is_not_the_failure(tmp_path: Path) -> None:
    """prenet's workerlogs (corpus gpu_crash-prenet-paddle-workerlog): rank 0 only reports the
    SIGTERM the launcher sent once rank 1 had raised; rank 1's error is the failure."""
    (tmp_path / "workerlog.0").write_text("W0412 04:57:40.681890  5379 device_context.cc:465] "
                                          "device: 0, cuDNN Version: 7.6." + PADDLE_SIGTERM)
    (tmp_path / "workerlog.1").write_text(
        'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
        "    from SSIM import SSIM\nNotImplementedError: (Unimplemented) Place CUDAPlace(0) is "
        "not supported. Please check that your paddle compiles with WITH_GPU\n")
    f = gpu_crash.diagnose(traindoc.load(str(tmp_path))).facts
    assert f["failed_ranks"] == [1]
    assert "CUDAPlace(0) is not supported" in f["error_message"]


def test_the_same_nccl_error_on_two_ranks_names_both(tmp_path: Path) -> None:
    """paddlescripts' workerlogs: ranks 0 and 7 fail alike building the communicator, the
    others are SIGTERMed; nothing orders the two."""
    err = ("OSError: (External)  Nccl error, unhandled cuda error  (at /work/paddle/paddle/fluid/"
           "platform/collective_helper.cc:80)\n")
    for r in range(4):
        (tmp_path / f"workerlog.{r}").write_text(err if r in (0, 3) else PADDLE_SIGTERM)
    f = gpu_crash.diagnose(traindoc.load(str(tmp_path))).facts
    assert f["failed_ranks"] == [0, 3]
    assert f["error_kind"] == "nccl_error"


def test_the_data_readers_error_beats_the_blocking_queue_restating_it(tmp_path: Path) -> None:
    """iann's workerlogs (corpus gpu_crash-iann-workerlog-cv2): Paddle's main loop restates the
    reader thread's exception printed above it; a teardown segfault follows."""
    (tmp_path / "workerlog.0").write_text(
        "[WARNING 2021-04-20 14:48:00,363 dataloader_iter.py:346] DataLoader reader thread raised "
        "an exception.\nException in thread Thread-127:\nTraceback (most recent call last):\n"
        '  File "data/sbd.py", line 33, in get_sample\n'
        "struct.error: unpack requires a buffer of 4 bytes\n\nTraceback (most recent call last):\n"
        '  File "train.py", line 80, in <module>\n    main()\n'
        "SystemError: (Fatal) Blocking queue is killed because the data reader raises an "
        "exception.\n  [Hint: Expected killed_ != true, but received killed_:1 == true:1.]\n"
        "FatalError: `Segmentation fault` is detected by the operating system.\n")
    f = gpu_crash.diagnose(traindoc.load(str(tmp_path))).facts
    assert f["error_message"].startswith("struct.error: unpack requires")


def test_the_blocking_queue_alone_stays_the_failure(tmp_path: Path) -> None:
    f = _facts(tmp_path, "SystemError: (Fatal) Blocking queue is killed because the data reader "
                         "raises an exception.\n", "workerlog.0")
    assert "Blocking queue is killed" in f["error_message"]


# -- the traceback torch.multiprocessing.spawn re-raises after "-- Process N terminated with the
# following error:" is process N's: its error is that rank's, not an exit without a message --

SPAWN_RAISED = (  # a deepseek-ai/DeepEP issue on tests/test_intranode.py (torch 2.x)
    "torch.multiprocessing.spawn.ProcessRaisedException:\n\n"
    "-- Process 4 terminated with the following error:\n"
    "Traceback (most recent call last):\n"
    "  File \"/usr/local/lib/python3.10/dist-packages/torch/multiprocessing/spawn.py\", line 75, "
    "in _wrap\n"
    "    fn(i, *args)\n"
    "  File \"/opt/DeepEP/tests/test_intranode.py\", line 58, in test_main\n"
    "    buffer.get_dispatch_layout(topk_idx, num_experts)\n"
    "RuntimeError: Failed: CUDA error /opt/DeepEP/csrc/kernels/internode.cu:133 'named symbol not "
    "found'\n")


def test_a_spawned_process_error_is_its_rank(tmp_path: Path) -> None:
    (tmp_path / "job.log").write_text(SPAWN_RAISED)
    r = gpu_crash.diagnose(traindoc.load(str(tmp_path / "job.log"), workers=1))
    assert r.facts["failed_ranks"] == [4]
    assert "named symbol not found" in r.facts["error_message"]


# --- one DataParallel process: the replica's error is rank 0's --------------------------------

DATA_PARALLEL = (  # asahi417/lm-question-generation's t5-base_output_cco_model.out (corpus
    # gpu_crash-lm-task-t5-base-cco-model-oom): nn.DataParallel on 2 GPUs, no torch.distributed
    "2023-08-25 09:11:02 INFO     start model training\n"
    "Traceback (most recent call last):\n"
    '  File "/envs/lmqg/lib/python3.8/site-packages/torch/_utils.py", line 644, in reraise\n'
    "    raise exception\n"
    "torch.cuda.OutOfMemoryError: Caught OutOfMemoryError in replica 0 on device 0.\n"
    "Original Traceback (most recent call last):\n"
    '  File "/envs/lmqg/lib/python3.8/site-packages/torch/nn/functional.py", line 1252, in '
    "dropout\n"
    "    return _VF.dropout_(input, p, training) if inplace else _VF.dropout(input, p, training)\n"
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 96.00 MiB (GPU 0; 47.54 "
    "GiB total capacity; 9.85 GiB already allocated; 86.69 MiB free; 9.97 GiB reserved in total "
    "by PyTorch)\n")


def test_one_data_parallel_process_is_rank_0(tmp_path: Path) -> None:
    f = _facts(tmp_path, DATA_PARALLEL)
    assert f["failed_ranks"] == [0] and f["error_kind"] == "oom"


def test_a_data_parallel_error_among_named_ranks_is_not_rank_0(tmp_path: Path) -> None:
    # DataParallel inside a distributed job: its lines name their rank, which stays theirs
    text = "".join(f"[rank3]: {line}\n" for line in DATA_PARALLEL.splitlines())
    assert _facts(tmp_path, text)["failed_ranks"] == [3]


# --- Paddle's operator wrapper: the exception content it goes on to is the failure -----------

PADDLE_OPERATOR_WRAPPER = (  # hutuxian/RSPNet's workerlog.0 (corpus gpu_crash-rspnet-paddle-8rank-
    # rank0-oom), frames shortened
    '  File "/usr/local/lib/python3.7/site-packages/paddle/nn/functional/norm.py", line 198, in '
    "batch_norm\n"
    "    *attrs)\n"
    "SystemError: (Fatal) Operator batch_norm raises an paddle::memory::allocation::BadAlloc "
    "exception.\n"
    "The exception content is\n"
    ":ResourceExhaustedError: \n"
    "\n"
    "Out of memory error on GPU 0. Cannot allocate 24.500244MB memory on GPU 0, available memory "
    "is only 13.750000MB.\n")


def test_paddle_operator_wrapper_is_context_for_the_error_it_wraps(tmp_path: Path) -> None:
    f = _facts(tmp_path, PADDLE_OPERATOR_WRAPPER)
    assert f["error_kind"] == "oom" and "Out of memory error on GPU 0" in f["error_message"]


@pytest.mark.parametrize("line", [
    "SystemError: (Fatal) Operator batch_norm raises an paddle::memory::allocation::BadAlloc "
    "exception.",
    # a Paddle issue's report (a GPU its build has no kernel for)
    "SystemError: (Fatal) Operator uniform_random raises an thrust::system::system_error exception.",
    "torch.OutOfMemoryError: Caught OutOfMemoryError in replica 0 on device 0."])
def test_exception_wrappers_are_known(line: str) -> None:
    assert EXCEPTION_WRAPPER_RE.search(line)


# --- the error inside a torchrun record's traceback field is that record's rank --------------

# QIU023/torchtitan_attention_residual phase3_attnres_pp_integration/
# run_kimi48b_d1280_e32_L32N8_pp8vp4_adapter.log (corpus gpu_crash-torchtitan-attnres-kimi48b-
# pp8vp4-oom), frames and the SIGTERMed records shortened; only rank 7 logs its own lines
TORCHRUN_EMBEDDED_OOM = """\
[rank7]:[titan] 2026-05-12 09:27:51,000 - root - INFO - step:  1  loss: 12.2600  memory: 26.15GiB(83.40%)
W0512 09:27:54.000000 41493 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 41562 closing signal SIGTERM
E0512 09:27:56.020000 41493 torch/distributed/elastic/multiprocessing/api.py:986] failed (exitcode: 1) local_rank: 1 (pid: 41563) of binary: /usr/bin/python3
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-05-12_09:27:54
  host      : f59652d27037
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 41562)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 41562
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-05-12_09:27:52
  host      : f59652d27037
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 41563)
  error_file: /tmp/torchelastic_c9meunw0/none_ee2_jkdl/attempt_0/1/error.json
  traceback : Traceback (most recent call last):
    File "/workspace/torchtitan/torchtitan/models/common/moe.py", line 68, in _run_experts_grouped_mm
      out = torch._grouped_mm(h, w2.bfloat16().transpose(-2, -1), offs=offsets).type_as(x)
  torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 40.00 MiB. GPU 1 has a total capacity of 31.36 GiB of which 8.94 MiB is free.

  The above exception was the direct cause of the following exception:

  Traceback (most recent call last):
    File "/usr/local/lib/python3.12/dist-packages/torch/distributed/pipelining/stage.py", line 711, in forward_one_chunk
      raise RuntimeError(exc_msg) from e
  RuntimeError: [Stage 1] failed to run forward

============================================================
"""


def test_the_error_a_torchrun_record_embeds_is_its_rank(tmp_path: Path) -> None:
    f = _facts(tmp_path, TORCHRUN_EMBEDDED_OOM)
    assert (f["failed_ranks"], f["failed_hosts"], f["error_kind"]) == (
        [1], ["f59652d27037"], "oom")
    assert "CUDA out of memory" in f["error_message"]


def test_an_error_after_a_record_without_an_embedded_one_gets_no_rank(tmp_path: Path) -> None:
    """A record that embeds no error ('To enable traceback see: …'): the next job's error
    below it is nobody's rank (the openvla-oft case a distance rule got wrong)."""
    text = (TORCHRUN_EMBEDDED_OOM.split("Root Cause")[0]
            + "Root Cause (first observed failure):\n[0]:\n"
              "  time      : 2026-05-12_09:27:52\n  host      : f59652d27037\n"
              "  rank      : 1 (local_rank: 1)\n  exitcode  : 1 (pid: 41563)\n"
              "  error_file: <N/A>\n"
              "  traceback : To enable traceback see: "
              "https://pytorch.org/docs/stable/elastic/errors.html\n"
            + "=" * 60 + "\n" + "next job\n" * 5
            + "datasets.exceptions.DatasetNotFoundError: Dataset 'x' doesn't exist\n")
    ev = gpu_crash.analyse(traindoc.load(_log_file(tmp_path, text))).events
    err = ev[ev["message"].astype(str).str.contains("DatasetNotFoundError")]
    assert len(err) == 1 and err["rank"].isna().all()


def _log_file(tmp_path: Path, text: str) -> str:
    log = tmp_path / "job.log"
    log.write_text(text)
    return str(log)


# --- a GPU thread's failed assertion ---------------------------------------------------------

@pytest.mark.parametrize("line, words", [
    # ecmwf/WeatherGenerator#255 (corpus gpu_crash-weathergenerator-255)
    ('/opt/pytorch/pytorch/aten/src/ATen/native/cuda/ScatterGatherKernel.cu:144: operator(): '
     'block: [7354,0,0], thread: [64,0,0] Assertion `idx_dim >= 0 && idx_dim < index_size && '
     '"index out of bounds"` failed.', "index out of bounds"),
    # hszhao/semseg#29: THC's kernel with its template signature
    ('/pytorch/aten/src/THCUNN/SpatialClassNLLCriterion.cu:104: void cunn_SpatialClassNLLCriterion'
     '_updateOutput_kernel(T *, T *, T *, long *, T *, int, int, int, int, int, long) [with T = '
     'float, AccumT = float]: block: [3,0,0], thread: [160,0,0] Assertion `t >= 0 && t < '
     'n_classes` failed.', "t < n_classes"),
    # open-mmlab/mmdetection#5100: the kernel's name only
    ('/pytorch/aten/src/THCUNN/SpatialClassNLLCriterion.cu:106: cunn_SpatialClassNLLCriterion_'
     'updateOutput_kernel: block: [0,0,0], thread: [500,0,0] Assertion `t >= 0 && t < n_classes` '
     'failed.', "t < n_classes"),
    # thu-coai/CDial-GPT#113: no kernel name, a Windows build path
    ('C:/cb/pytorch_1000000000000/work/aten/src/THCUNN/ClassNLLCriterion.cu:108: block: [0,0,0], '
     'thread: [0,0,0] Assertion `t >= 0 && t < n_classes` failed.', "t < n_classes"),
])
def test_a_kernel_assertion_is_a_cuda_error(line: str, words: str) -> None:
    row = parse_error(line)
    assert row is not None and (row["kind"], row["code"]) == ("cuda_error", "cuda_kernel_assert")
    assert words in row["message"]


KERNEL_ASSERT = ('/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:93: operator(): block: '
                 '[6,0,0], thread: [{t},0,0] Assertion `-sizes[i] <= index && index < sizes[i] && '
                 '"index out of bounds"` failed.\n')


def test_a_kernel_assertion_names_the_rank_of_the_traceback_after_it(tmp_path: Path) -> None:
    """The device prints it without the launcher's prefix; the traceback that starts on the
    next line is the rank's (WeatherGenerator#255: the RuntimeError itself cut off)."""
    text = ("".join(KERNEL_ASSERT.format(t=t) for t in range(3))
            + "[rank104]: Traceback (most recent call last):\n"
            + '[rank104]:   File "/app/train.py", line 10, in <module>\n'
            + "[rank104]:     sys.exit(train_continue())\n")
    f = _facts(tmp_path, text)
    assert (f["failed_ranks"], f["error_kind"]) == ([104], "cuda_error")
    assert "index out of bounds" in f["error_message"]


def test_the_device_side_assert_stays_the_error_beside_its_assertion(tmp_path: Path) -> None:
    """With torch's 'device-side assert triggered' in the log, the assertion is its detail
    (nerfstudio's Difix log: 1024 assertion lines, then the RuntimeError)."""
    text = ("".join(KERNEL_ASSERT.format(t=t) for t in range(32))
            + "Traceback (most recent call last):\n"
            + '  File "/app/train.py", line 10, in <module>\n'
            + "RuntimeError: CUDA error: device-side assert triggered\n")
    ev = gpu_crash.analyse(traindoc.load(_log_file(tmp_path, text))).events
    f = _facts(tmp_path, text)
    assert "device-side assert triggered" in f["error_message"]
    asserts = ev[ev["code"] == "cuda_kernel_assert"]
    assert len(asserts) == 1 and (asserts["role"] == "context").all()


def test_triage_names_the_device_side_assert_not_its_assertion(tmp_path: Path) -> None:
    """Triage's headline is the error the runbook names, not the assertion printed before it."""
    from traindoc.diagnose import triage

    text = ("".join(KERNEL_ASSERT.format(t=t) for t in range(4))
            + "RuntimeError: CUDA error: device-side assert triggered\n")
    got = triage.diagnose(traindoc.load(_log_file(tmp_path, text))).facts["classes"][0]
    assert got["class"] == "gpu_crash" and "device-side assert triggered" in got["detail"]
    # one line of the thread lines, then the error (Difix: 1024 lines hid it from the evidence)
    assert len(got["evidence"]) == 2 and "device-side assert" in got["evidence"][1]


# --- an OOM the program works around ---------------------------------------------------------

# QiuLiXiang/YOLO-DA26 train_det.log (corpus gpu_crash-yolo-da26-ultralytics-train-det): the
# bar's last update, the warning glued to it, then the interpreter's exit
ULTRALYTICS_BAR = ("      1/100      15G      3.566      8.982    0.02247         57        640: "
                   "9% ━━─────────── {n}/6848 2.7it/s 3:40<38:10")
ASSIGNER_OOM = "WARNING ⚠️ CUDA OutOfMemoryError in TaskAlignedAssigner, using CPU"


@pytest.mark.parametrize("line", [
    ASSIGNER_OOM,
    # detectron2/utils/memory.py retry_if_cuda_oom (quoted by maskAL's troubleshooting page)
    "d2.utils.memory Attempting to copy inputs of <function paste_masks_in_image at "
    "0x7f3b2c1d0e50> to CPU due to CUDA OOM",
])
def test_an_oom_worked_around_on_the_cpu_is_read(line: str) -> None:
    row = parse_error(line)
    assert row is not None and (row["kind"], row["code"]) == ("oom", "oom_fallback")


def test_an_oom_worked_around_is_the_failure_when_nothing_came_after(tmp_path: Path) -> None:
    text = "\r".join(ULTRALYTICS_BAR.format(n=n) for n in (607, 608, 609)) + ASSIGNER_OOM + "\n"
    f = _facts(tmp_path, text)
    assert (f["error_kind"], f["last_iteration"]) == ("oom", 609)
    assert "CUDA OutOfMemoryError" in f["error_message"]


def test_an_oom_worked_around_is_no_failure_when_training_went_on(tmp_path: Path) -> None:
    text = (ULTRALYTICS_BAR.format(n=609) + ASSIGNER_OOM + "\n"
            + "\r".join(ULTRALYTICS_BAR.format(n=n) for n in (610, 611, 612)) + "\n")
    f = _facts(tmp_path, text)
    assert (f["error_kind"], f["last_iteration"]) == (None, 612)


# --- srun -l task prefixes, where srun's exit lines make the tasks the ranks -----------------

# mlcommons/training_results_v5.1 Dell XE9680L rgat result_7.txt (corpus gpu_crash-mlperf-v5-1-
# dell-xe9680l-rgat-result-7), shortened
SRUN_TASKS = """\
7: Exception in thread Thread-33 (EmbedThread):
7: Traceback (most recent call last):
7:   File "/workspace/gnn/common/helper.py", line 65, in fp8_to_fp16
7: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.16 GiB. GPU 7 has a total capacity of 139.80 GiB of which 1.28 GiB is free.
5: RuntimeError: Time out when prefetcher wait for the sampled batch at 600 seconds.
7: RuntimeError: Time out when prefetcher wait for the sampled batch at 600 seconds.
srun: error: tnasnt5: task 5: Exited with exit code 134
srun: error: tnasnt5: task 7: Exited with exit code 1
"""


def test_an_srun_task_prefix_is_the_rank_srun_exits_name(tmp_path: Path) -> None:
    f = _facts(tmp_path, SRUN_TASKS)
    assert (f["failed_ranks"], f["failed_hosts"], f["error_kind"]) == ([7], ["tnasnt5"], "oom")


# --- one error on every rank, each with its own device ---------------------------------------

def test_every_rank_raising_one_error_with_its_own_device_is_one_failure(tmp_path: Path) -> None:
    """ILoveSorasakiHina/miles-credit train_log.txt: all eight ranks raise the same
    RuntimeError, each naming its own cuda:N."""
    text = "".join(
        f"[rank{r}]: RuntimeError: Expected all tensors to be on the same device, but found at "
        f"least two devices, cpu and cuda:{r}! (when checking argument for argument mat1 in "
        "method wrapper_CUDA_addmm)\n" for r in (2, 0, 1))
    assert _facts(tmp_path, text)["failed_ranks"] == [0, 1, 2]


# --- the teardown after a run that finished -------------------------------------------------

# mlcommons/training_results_v4.0 HPE XD670 ssd result_1.txt (corpus gpu_crash-mlperf-v4-0-hpe-
# xd670-ssd-result-1): the run reached its target; multiprocessing's finalizers fail at exit
RUN_STOP = (':::MLLOG {"namespace": "", "time_ms": 1714978963120, "event_type": "INTERVAL_END", '
            '"key": "run_stop", "value": null, "metadata": {"file": "/workspace/ssd/engine.py", '
            '"lineno": 315, "status": "{status}"}}\n')
FINALIZER = """\
Traceback (most recent call last):
  File "/usr/lib/python3.10/multiprocessing/util.py", line 300, in _run_finalizers
    finalizer()
  File "/usr/lib/python3.10/multiprocessing/synchronize.py", line 87, in _cleanup
    sem_unlink(name)
FileNotFoundError: [Errno 2] No such file or directory
"""


def test_an_error_after_mlperfs_successful_run_stop_is_teardown(tmp_path: Path) -> None:
    f = _facts(tmp_path, RUN_STOP.replace("{status}", "success") + FINALIZER)
    assert (f["error_kind"], f["failed_ranks"]) == (None, [])


def test_an_error_after_an_aborted_run_stop_stays_the_failure(tmp_path: Path) -> None:
    f = _facts(tmp_path, RUN_STOP.replace("{status}", "aborted") + FINALIZER)
    assert f["error_kind"] == "python"


# mlcommons training_results_v5.0 Supermicro a21ge retinanet (corpus gpu_crash-mlperf-v5-0-
# supermicro-a21ge-retinanet-vnic): after run_stop's success, a rank creating an NCCL
# communicator for a barrier aborts; the same NCCLUtils wording as torch 2.x's
# "NCCL error in: …/NCCLUtils.hpp:…, invalid usage" of a communicator created anywhere
VNIC_ABORT = """\
7: terminate called after throwing an instance of 'c10::DistBackendError'
7:   what():  NCCL error in: /opt/pytorch/pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.25.1
7: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.
7: Last error:
7: NET/IB : Requested properties for vNic 4, only 4 vNics have been created
7: /workspace/ssd/run_and_time.sh: line 95: 145306 Aborted                 (core dumped) ${LOGGER:-} "${CMD[@]}" train.py
srun: error: sys-a21ge-nbrt: task 7: Exited with exit code 134
"""


def test_an_nccl_abort_after_a_successful_run_stop_is_a_failure(tmp_path: Path) -> None:
    f = _facts(tmp_path, RUN_STOP.replace("{status}", "success") + VNIC_ABORT)
    assert f["error_kind"] == "nccl_error" and "only 4 vNics" in f["error_message"]
    f = _facts(tmp_path, RUN_STOP.replace("{status}", "success") + FINALIZER + VNIC_ABORT)
    assert f["error_kind"] == "nccl_error"  # the finalizer's teardown is still no failure


EPOCH_LINES = """\
0: Epoch: [4]  [   0/4572]  eta: 0:00:15    time: 0.0035  data: 0.0010  max mem: 21023
0: Epoch: [4]  [  20/4572]  eta: 0:04:39    time: 0.0644  data: 0.0618  max mem: 21023
0: Epoch: [4]  [  40/4572]  eta: 0:04:50    time: 0.0669  data: 0.0638  max mem: 21023
"""


def test_a_failure_after_a_successful_run_stop_loses_no_work(tmp_path: Path) -> None:
    # the benchmark had reached its target: no iterations lost, nothing to resume, no
    # checkpoint interval to change; before run_stop the same abort loses the epoch's work
    log = tmp_path / "job.log"
    log.write_text(EPOCH_LINES + RUN_STOP.replace("{status}", "success") + VNIC_ABORT)
    r = gpu_crash.diagnose(traindoc.load(str(log)))
    assert (r.facts["lost_iterations"], r.facts["lost_hours"]) == (0, 0.0)
    assert "finished with success, so no training work was lost" in r.verdict
    assert not {"resume", "save_interval"} & {a.id for a in r.actions}
    log.write_text(EPOCH_LINES + VNIC_ABORT)
    r = gpu_crash.diagnose(traindoc.load(str(log)))
    assert r.facts["lost_iterations"] and "resume" in {a.id for a in r.actions}


# mlcommons training_results_v5.0 HPE xd670 n4 stable_diffusion result_1.txt (corpus
# gpu_crash-mlperf-v5-0-hpe-xd670-n4-sd-close-error): 32 srun tasks, one of which reports an
# NCCL system error of its own; no other task reported anything
QUIET_TASKS = "".join(f"{t:2d}: num_gpus=8 num_sockets = 2 num_nodes=2 cores_per_socket=32\n"
                     for t in (0, 1, 2, 31))
TRACKED = (':::MLLOG {"namespace": "", "time_ms": 1746944317201, "event_type": "POINT_IN_TIME", '
           '"key": "tracked_stats", "value": {"throughput": 4457.517257120491}, "metadata": {"file": '
           '"/workspace/sd/callbacks.py", "lineno": 471, "step_num": 4000}}\n')
QUIET_TASKS += " 0: " + TRACKED  # training had begun: not an NCCL set-up error
CLOSE_ERROR = """\
30: [E511 01:46:13.812290483 ProcessGroupNCCL.cpp:541] [Rank 30] found async exception when checking for NCCL errors: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.22.3
30: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\x20
30: Last error:
30: [Proxy Service 30] Failed to execute operation Close from rank 30, retcode 3
"""


def test_the_one_rank_with_an_nccl_error_of_its_own_among_silent_peers_failed(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(QUIET_TASKS + CLOSE_ERROR)
    r = gpu_crash.diagnose(traindoc.load(str(log)))
    f = r.facts
    assert (f["failed_ranks"], f["error_kind"]) == ([30], "nccl_error")
    assert "Failed to execute operation Close from rank 30" in f["error_message"]
    assert r.confidence == "medium" and "its peers in the logs reported none" in r.findings[0].title
    # a second rank with the same error: a peer's loss seen from both sides, no rank to blame
    f = _facts(tmp_path, QUIET_TASKS + CLOSE_ERROR + CLOSE_ERROR.replace("30", "31"))
    assert f["failed_ranks"] == []
    # the rank's own lines alone: nothing says its peers were fine
    assert _facts(tmp_path, TRACKED + CLOSE_ERROR)["failed_ranks"] == []


# --- ezpz names each rank's machine ----------------------------------------------------------

def test_ezpz_names_the_failed_ranks_machine(tmp_path: Path) -> None:
    """saforem2/sam.onl web/src/pages/posts/torchtune-aurora/index.mdx (corpus gpu_crash-
    torchtune-aurora-xpu-fsdp-streams): an Aurora node's name only in ezpz's set-up line."""
    text = ("  [2025-01-28 08:49:37][I][ezpz/dist:869] ['x4204c5s6b0n0'][0/0]\n"
            "[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "/recipes/full_finetune_distributed.py", line 946, in recipe_main\n'
            "[rank0]: RuntimeError: FSDP requires CUDA for streams\n")
    f = _facts(tmp_path, text)
    assert (f["failed_ranks"], f["failed_hosts"]) == ([0], ["x4204c5s6b0n0"])


# --- fairseq names each rank's machine at set-up ------------------------------------------------

@pytest.mark.parametrize("setup", [
    # ropadet's fairseq train.out (corpus gpu_crash-ropadet-fairseq-enospc): fairseq >= 0.10
    "2022-06-06 09:17:48 | INFO | fairseq.distributed.utils | initialized host IR-86A4D2-FCC3 as "
    "rank 0\n2022-06-06 09:17:48 | INFO | fairseq.distributed.utils | initialized host "
    "IR-86A4D2-FCC3 as rank 1\n",
    # fairseq 0.6-0.9's print (fairseq train.py: print('| initialized host {} as rank {}'))
    "| initialized host IR-86A4D2-FCC3 as rank 0\n| initialized host IR-86A4D2-FCC3 as rank 1\n",
])
def test_fairseq_names_the_machine_of_a_one_host_job(tmp_path: Path, setup: str) -> None:
    text = setup + ("Traceback (most recent call last):\n"
                    '  File "/usr/lib/python3.8/multiprocessing/util.py", line 145, in _remove_temp_dir\n'
                    "OSError: [Errno 28] No space left on device: '/tmp/pymp-2ntknau9'\n")
    f = _facts(tmp_path, text)
    assert f["failed_hosts"] == ["IR-86A4D2-FCC3"] and f["error_kind"] == "python"


def test_torchruns_record_names_the_host_of_untagged_ooms(tmp_path: Path) -> None:
    """A Megatron-LM GPT-175B run on A800s (corpus gpu_crash-megatron-lm-a800-gpt175b-oom): the
    OOM tracebacks name devices only; torchrun closes the failed worker's siblings, then records
    its exit, whose pid NCCL's init lines place on a machine."""
    text = ("yq02-inf-sci-k8s-a800-hbxgn6-0023:18894:19598 [0] NCCL INFO Connected all rings\n"
            "yq02-inf-sci-k8s-a800-hbxgn6-0077:18916:19606 [7] NCCL INFO Connected all rings\n"
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 768.00 MiB (GPU 0; "
            "79.35 GiB total capacity; 52.52 GiB already allocated; 552.12 MiB free; 53.97 GiB "
            "reserved in total by PyTorch)\n"
            "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 18895 closing "
            "signal SIGTERM\n"
            "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 "
            "(pid: 18894) of binary: /env/bin/python\n")
    f = _facts(tmp_path, text)
    assert f["error_kind"] == "oom" and f["failed_hosts"] == ["yq02-inf-sci-k8s-a800-hbxgn6-0023"]


# --- a launcher's record of a worker's exit 1, the worker's own error printed below it ---------

def test_paddles_container_record_leads_to_the_workers_nccl_error(tmp_path: Path) -> None:
    """PaddlePaddle/PaddleDetection#7380 (corpus gpu_crash-paddledetection-7380): Paddle's
    launcher names the failed container, then prints its workerlog's tail."""
    text = ("LAUNCH INFO 2022-11-21 02:35:54,384 Pod failed\n"
            "LAUNCH ERROR 2022-11-21 02:35:54,385 Container failed !!!\n"
            "Container rank 0 status failed cmd ['/usr/bin/python3', '-u', 'tools/train.py', '-c', "
            "'configs/keypoint/tiny_pose/tinypose_256x192.yml', '--eval'] code 1 log "
            "log/workerlog.0\n"
            '  File "/usr/local/lib/python3.8/dist-packages/paddle/distributed/collective.py", '
            "line 328, in barrier\n"
            "    task = group.process_group.barrier()\n"
            "OSError: (External) NCCL error(2), unhandled system error.\n"
            "LAUNCH INFO 2022-11-21 02:35:54,386 Exit code 1\n")
    f = _facts(tmp_path, text)
    assert f["error_kind"] == "nccl_error" and "unhandled system error" in f["error_message"]
    assert f["failed_ranks"] == [0]


# --- a port the launcher could not bind, before any worker started: the job never ran ---------

RUNPY_HEAD = ("Traceback (most recent call last):\n"
              '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
              '  File "<frozen runpy>", line 88, in _run_code\n'
              '  File "/env/lib/python3.11/site-packages/torch/distributed/launch.py", line 208, in '
              "<module>\n"
              "    main()\n"
              '  File "/env/lib/python3.11/site-packages/torch/distributed/elastic/rendezvous/'
              'static_tcp_rendezvous.py", line 55, in next_rendezvous\n'
              "    self._store = TCPStore(  # type: ignore[call-arg]\n")


@pytest.mark.parametrize("error", [
    # s2s-train train_SI_2.out (corpus gpu_crash-s2s-train-si-2-eaddrinuse): torch >= 2.3
    "RuntimeError: The server socket has failed to listen on any local network address. port: "
    "29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use",
    # meta-pytorch/torchtune#392: torch 1.11-2.2
    "RuntimeError: The server socket has failed to listen on any local network address. The "
    "server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use). The "
    "server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use).",
    # pytorch/pytorch#72816: older torch
    "RuntimeError: Address already in use",
])
def test_a_port_taken_before_any_worker_started_is_the_failure(tmp_path: Path,
                                                               error: str) -> None:
    from traindoc.diagnose import triage
    log = tmp_path / "train.out"
    log.write_text(RUNPY_HEAD + error + "\n")
    inc = traindoc.load(str(log))
    f = gpu_crash.diagnose(inc).facts
    assert f["error_kind"] == "python" and "ddress already in use" in f["error_message"]
    assert (f["failed_ranks"], f["failed_hosts"]) == ([], [])
    assert triage.diagnose(inc).facts["classes"][0]["class"] == "gpu_crash"


# --- a thread's uncaught exception ends the thread, not the process -----------------------------

THREAD_TB = ("Traceback (most recent call last):\n"
             '  File "/home/lxc/miniconda3/envs/gan/lib/python3.10/threading.py", line 1016, in '
             "_bootstrap_inner\n"
             "    self.run()\n"
             '  File "/home/lxc/miniconda3/envs/gan/lib/python3.10/site-packages/tensorboardX/'
             'event_file_writer.py", line 202, in run\n'
             "    data = self._queue.get(True, queue_wait_duration)\n"
             '  File "/home/lxc/miniconda3/envs/gan/lib/python3.10/multiprocessing/connection.py", '
             "line 136, in _check_closed\n"
             '    raise OSError("handle is closed")\n'
             "OSError: handle is closed\n")


def test_a_writer_threads_exception_at_exit_is_no_crash(tmp_path: Path) -> None:
    """sttn-gait's train.out (corpus gpu_crash-sttn-gait-tensorboardx-teardown-oserror-healthy):
    tensorboardX's writer threads fail as the finished script exits."""
    text = ("d: -0.001;gen: -0.008: : 20001it [12:18:18,  2.21s/it]\n"
            "Exception in thread Thread-1:\n\nEnd training....\n" + THREAD_TB)
    assert _facts(tmp_path, text)["error_kind"] is None


def test_a_threads_exception_the_main_program_died_of_stays_the_failure(tmp_path: Path) -> None:
    """torch's wrapper re-raises what the pin-memory thread raised (torch/utils/data/_utils/
    pin_memory.py's ExceptionWrapper: 'Caught RuntimeError in pin memory thread'), below it."""
    text = (THREAD_TB + "RuntimeError: Caught OSError in pin memory thread for device 0.\n")
    assert _facts(tmp_path, text)["error_kind"] == "python"


# --- an exception raised with no message: its class alone ends the traceback -----------------

# DeepSpeed's launcher (launch.py sigkill_handler) after both workers' tracebacks
DS_EXIT_1 = ("[2025-08-27 17:13:06,226] [INFO] [launch.py:315:sigkill_handler] Killing subprocess "
             "672159\n"
             "[2025-08-27 17:13:06,389] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python3',"
             " '-u', 'src/run_uie_lora.py', '--local_rank=1'] exits with return code = 1\n")


@pytest.mark.parametrize("line, code", [
    # zyx303/O-LoRA logs_and_outputs/order_1/logs/train_and_infer.log: "raise NotImplementedError"
    # (the reader strips its "[rank1]: " prefix)
    ("NotImplementedError", "NotImplementedError"),
])
def test_an_exception_without_a_message_is_read(line: str, code: str) -> None:
    row = parse_error(line)
    assert row is not None and row["kind"] == "python"
    assert row["code"] == code and row["message"] == code


@pytest.mark.parametrize("line", ["ChildFailedError", "Error", "the run ended with an Error",
                                  "ValueError raised",
                                  # PaddlePaddle: its message follows in the lines below
                                  # (corpus gpu_crash-ernie-docvqa-workerlog-oom workerlog.0)
                                  "MemoryError: "])
def test_a_word_that_is_no_bare_exception_line(line: str) -> None:
    assert parse_error(line) is None


def test_a_bare_exception_is_the_message_over_the_launchers_exit(tmp_path: Path) -> None:
    """The worker's own exception names the failure; DeepSpeed's exit line is its consequence."""
    tb = ("[rank{r}]: Traceback (most recent call last):\n"
          '[rank{r}]:   File "/w/src/peft/utils/save_and_load.py", line 162, in set_peft_model_state_dict\n'
          "[rank{r}]:     raise NotImplementedError\n"
          "[rank{r}]: NotImplementedError\n")
    f = _facts(tmp_path, tb.format(r=1) + tb.format(r=0) + DS_EXIT_1)
    assert f["error_kind"] == "python"
    assert f["error_message"] == "NotImplementedError"
    assert f["failed_ranks"] in ([0, 1], [1])


def test_a_bare_exception_takes_the_message_it_states_nearby(tmp_path: Path) -> None:
    """Workers writing to one stream tear an exception's class from its message
    (mlcommons training_results_v3.1 Azure maskrcnn, 230503232823702563316_1.log)."""
    text = ("Traceback (most recent call last):\n"
            '  File "/w/maskrcnn/data/datasets/coco.py", line 41, in __init__\n'
            "    super().__init__(open(name, mode))\n"
            "FileNotFoundError\n"
            "FileNotFoundError: [Errno 2] No such file or directory: '/coco/img_info.pyt'\n"
            + TORCHRUN_EXIT_1.format(lr=0, pid=24024))
    f = _facts(tmp_path, text)
    assert "No such file or directory" in f["error_message"]


# --- MPI and UCX failures: the process that prints them failed (kind mpi_error) ----------------

@pytest.mark.parametrize("line, code, words, where", [
    # sparticlesteve/pytorch-cuda-mpi-error slurm-422332.out (corpus
    # gpu_crash-pytorch-cuda-mpi-error-slurm-422332)
    ("[1580511823.093560] [cgpu17:53890:1]          ib_md.c:478  UCX  ERROR ibv_reg_mr(address="
     "0x2aab4bc00000, length=131072, access=0xf) failed: Bad address", "ucx_error", "ibv_reg_mr",
     {"host": "cgpu17", "pid": 53890}),
    ("[cgpu17:53890] pml_ucx.c:775  Error: ucx send failed: Input/output error",
     "ompi_ucx_error", "ucx send failed", {"host": "cgpu17", "pid": 53890}),
    # open-mpi/ompi#8003
    ("[node6116:69399] pml_ucx.c:453  Error: Failed to resolve UCX endpoint for rank 95",
     "ompi_ucx_error", "Failed to resolve UCX endpoint", {"host": "node6116"}),
    # openucx/ucx#9908: pasted with one space
    ("[1716594409.541480] [gpu1:1581047:0] sock.c:323 UCX ERROR connect(fd=87, dest_addr="
     "172.17.0.1:47133) failed: Connection refused", "ucx_error", "Connection refused",
     {"host": "gpu1"}),
    # E3SM-Project/ACME-ECP#92
    ("[g32n01:32314] *** An error occurred in MPI_Allreduce", "mpi_errhandler",
     "An error occurred in MPI_Allreduce", {"host": "g32n01", "pid": 32314}),
    ("[g32n01:32314] *** reported by process [2154496201,608]", "mpi_reported_by",
     "reported by process", {"rank": 608}),
    # KaHIP/KaHIP#8: the reason on the line
    ("[cp-1:16051] *** An error occurred in MPI_Allreduce: the reduction operation MPI_SUM is "
     "not defined on the MPI_INTEGER datatype", "mpi_errhandler", "MPI_SUM is not defined",
     {"host": "cp-1"}),
    # Tencent/plato#164 (MPICH)
    ("Fatal error in MPI_Allreduce: Other MPI error, error stack:", "mpi_fatal",
     "Fatal error in MPI_Allreduce: Other MPI error", {}),
    # SGpp/DisCoTec#97 (Intel MPI)
    ("Abort(203042319) on node 4092 (rank 4092 in comm 0): Fatal error in PMPI_Wait: Other MPI "
     "error, error stack:", "mpi_fatal", "Fatal error in PMPI_Wait", {"rank": 4092}),
    # ofiwg/libfabric#11307 (Cray MPICH)
    ("MPICH ERROR [Rank 11122] [job id 41595204.0] [Thu Aug 14 08:27:11 2025] [nid006700] - "
     "Abort(2695311) (rank 11122 in comm 0): Fatal error in PMPI_Allreduce: Other MPI error, "
     "error stack:", "mpi_fatal", "Fatal error in PMPI_Allreduce",
     {"rank": 11122, "host": "nid006700"}),
    # pmodels/mpich#270
    ("application called MPI_Abort(MPI_COMM_WORLD, 0) - process 3[cli_3]: aborting job:",
     "mpi_abort", "MPI_Abort(MPI_COMM_WORLD, 0)", {"rank": 3}),
])
def test_mpi_and_ucx_error_lines(line: str, code: str, words: str, where: dict) -> None:
    row = parse_error(line)
    assert row is not None and row["kind"] == "mpi_error" and row["code"] == code
    assert words in row["message"]
    assert {k: row.get(k) for k in where} == where


def test_ucx_fatal_is_an_abort() -> None:
    # openucx/ucx#6805: ucs_fatal prints this, then abort()s
    row = parse_error("[jazz14:75380:0:75380]        rndv.c:1608 Fatal: error handling is "
                      "unsupported with rendezvous protocol")
    assert row is not None and (row["kind"], row["code"], row["host"]) == (
        "signal", "SIGABRT", "jazz14")


MPI_BCAST_FAILURE = [  # sparticlesteve/pytorch-cuda-mpi-error slurm-422332.out, cut
    "0: local result: tensor(114.2847, device='cuda:0')",
    "1: local result: tensor(308.4093, device='cuda:1')",
    "0: [1580511823.093560] [cgpu17:53890:1]          ib_md.c:478  UCX  ERROR ibv_reg_mr("
    "address=0x2aab4bc00000, length=131072, access=0xf) failed: Bad address",
    "0: [cgpu17:53890] pml_ucx.c:775  Error: ucx send failed: Input/output error",
    "0: [cgpu17:53890] *** An error occurred in MPI_Bcast",
    "0: [cgpu17:53890] *** reported by process [1908146176,0]",
    "0: [cgpu17:53890] *** on communicator MPI_COMM_WORLD",
    "0: [cgpu17:53890] *** MPI_ERR_OTHER: known error not in list",
    "0: [cgpu17:53890] *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,",
    "0: [cgpu17:53890] ***    and potentially your MPI job)",
    "0: slurmstepd: error: *** STEP 422332.0 ON cgpu17 CANCELLED AT 2020-01-31T15:03:43 ***",
    "srun: error: cgpu17: task 0: Killed",
    "srun: Terminating job step 422332.0",
    "srun: error: cgpu17: task 1: Killed",
]


def test_an_mpi_error_is_the_failure_and_the_other_tasks_kill_its_cascade(tmp_path: Path) -> None:
    """The MPI error's own report wins over UCX's detail lines before it; MPI's abort then
    kills every task, which srun reports for each: those kills are the cascade."""
    f = _facts(tmp_path, "\n".join(MPI_BCAST_FAILURE) + "\n")
    assert f["error_kind"] == "mpi_error"
    assert "ucx send failed" in f["error_message"]
    assert f["failed_ranks"] == [0] and f["failed_hosts"] == ["cgpu17"]
    rep = gpu_crash.report(gpu_crash.analyse(traindoc.load(str(tmp_path / "job.log"))))
    assert "NCCL" not in rep.verdict and "an MPI error" in rep.verdict
    assert rep.actions[0].id == "check_mpi_transport"


def test_a_ucx_error_the_run_went_on_after_is_no_failure(tmp_path: Path) -> None:
    lines = ["[1580511823.093560] [n1:53890:1]  sock.c:116  UCX  ERROR connect(fd=34, "
             "dest_addr=10.0.0.2:35892) failed: Connection timed out",
             *(f"step {i} loss {2.0 - i / 100:.3f}" for i in range(1, 30)),
             "Traceback (most recent call last):", "ValueError: bad batch"]
    f = _facts(tmp_path, "\n".join(lines) + "\n")
    assert f["error_kind"] == "python"


# --- one process and nothing beside it: the process that failed is rank 0 --------------------

@pytest.mark.parametrize("lines", [
    # SakuraRiven/EAST#58: "python train.py", one process, its traceback only
    ["Traceback (most recent call last):",
     '  File "train.py", line 38, in train',
     "    pred_score, pred_geo = model(img)",
     "RuntimeError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 0; 6.00 GiB total "
     "capacity; 4.64 GiB already allocated; 0 bytes free; 4.70 GiB reserved in total by "
     "PyTorch)"],
    # facebookarchive/loop#36: a tqdm bar, THC's check and the traceback after it (--gpu 1)
    ["Train (loss 63.31) epoch 1:   3%|████▍      | 1/29 [00:23<11:10, 23.93s/it]THCudaCheck "
     "FAIL file=/b/wheel/pytorch-src/torch/lib/THC/generic/THCStorage.cu line=66 error=2 : out "
     "of memory",
     "Traceback (most recent call last):",
     '  File "train.py", line 122, in train',
     "    loss.backward()",
     "RuntimeError: cuda runtime error (2) : out of memory at "
     "/b/wheel/pytorch-src/torch/lib/THC/generic/THCStorage.cu:66"],
    # kohya-ss/sd-scripts#87 style: accelerate's simple_launcher (one process) re-raising the
    # script's exit under the script's own exception
    ["Traceback (most recent call last):",
     '  File "train_network.py", line 88, in main',
     "KeyError: 'vision_tower'",
     "Traceback (most recent call last):",
     '  File "/venv/lib/site-packages/accelerate/commands/launch.py", line 580, in '
     "simple_launcher",
     "    raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)",
     "subprocess.CalledProcessError: Command '['/venv/bin/python', 'train_network.py']' "
     "returned non-zero exit status 1."],
])
def test_a_lone_processs_failure_is_rank_0(tmp_path: Path, lines: list[str]) -> None:
    f = _facts(tmp_path, "\n".join(lines) + "\n")
    assert f["failed_ranks"] == [0]
    rep = gpu_crash.report(gpu_crash.analyse(traindoc.load(str(tmp_path / "job.log"))))
    assert rep.facts["failed_ranks"] == [0]


@pytest.mark.parametrize("lines", [
    # an NCCL error tells of peers: the untagged process is not known to be rank 0
    ["RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:911, unhandled "
     "system error, NCCL version 2.7.8"],
    # a world of several processes stated: DeepSpeed's launcher, CqGao112/CN-Mini-Phi3 sft.log
    ["[2025-02-16 15:49:25,136] [INFO] [launch.py:164:main] dist_world_size=6",
     "Traceback (most recent call last):", "ValueError: bad batch"],
    # Megatron's arguments (bigscience meg_gpt2_base_n16_dp1_tp4_pp16-1809577.out, corpus
    # timeout-bigscience-meg-gpt2-base-n16-dp1-tp4-pp16)
    ["using world size: 64, data-parallel-size: 1, tensor-model-parallel size: 4, "
     "pipeline-model-parallel size: 16 ",
     "Traceback (most recent call last):", "ValueError: bad batch"],
    # a traceback through Ray Train's code: its workers are several processes
    # (ray-project/ray#39380)
    ["Traceback (most recent call last):",
     '  File "/Users/zsharee/RD/Ray/Torch_Image_Classifier.py", line 99, in <module>',
     "    result = trainer.fit()",
     '  File "/opt/homebrew/lib/python3.11/site-packages/ray/train/base_trainer.py", line 630, '
     "in fit",
     "    raise TrainingFailedError(",
     "ray.train.base_trainer.TrainingFailedError: The Ray Train run failed. Please inspect the "
     "previous error messages for a cause."],
    # the same failure printed by several processes (HEISENYAN/openpi rollout.out, corpus
    # gpu_crash-openpi-robotwin-rollout-oidn-oom: one evaluation task per GPU)
    ["Traceback (most recent call last):", "RuntimeError: CUDA error: out of memory",
     "Traceback (most recent call last):", "RuntimeError: CUDA error: out of memory"],
    # two machines named: which one printed the traceback is unknown
    ["NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
     "gpu-a:1234:1234 [0] NCCL INFO cudaDriverVersion 12020",
     "gpu-b:2345:2345 [0] NCCL INFO cudaDriverVersion 12020",
     "Traceback (most recent call last):", "ValueError: bad batch"],
])
def test_a_failure_beside_signs_of_peers_names_no_rank(tmp_path: Path, lines: list[str]) -> None:
    assert _facts(tmp_path, "\n".join(lines) + "\n")["failed_ranks"] == []


# --- the first process of an MPI or Horovod job to exit non-zero, as its launcher names it ----

@pytest.mark.parametrize("lines, rank", [
    # horovod/horovod#1421: Open MPI's block after an untagged worker's exception
    (["Traceback (most recent call last):", "OSError: [Errno 28] No space left on device",
      "Primary job  terminated normally, but 1 process returned",
      "a non-zero exit code. Per user-direction, the job has been aborted.",
      "mpirun detected that one or more processes exited with non-zero status, thus causing",
      "the job to be terminated. The first process to do so was:", "",
      "  Process name: [[29973,1],3]", "  Exit code:    1"], 3),
    # determined-ai/determined#3275: Horovod's gloo runner says the same with a bare rank
    (["Traceback (most recent call last):", "ValueError: bad batch",
      "RuntimeError: Horovod detected that one or more processes exited with non-zero status, "
      "thus causing the job to be terminated. The first process to do so was:",
      "Exit code: 1", "Process name: 1"], 1),
    # horovod/horovod#3472: the gloo runner's line for each process that ended non-zero, the
    # worker killed without a word of its own, then horovodrun's traceback
    (["Process 2 exit with status code 137.", "Traceback (most recent call last):",
      '  File "/venv/bin/horovodrun", line 8, in <module>', "    sys.exit(run_commandline())"],
     2),
    # open-mpi/ompi#6379: mpirun's "exited due to process rank"
    (["Traceback (most recent call last):", "ValueError: bad batch",
      "mpirun has exited due to process rank 5 with PID 24015 on",
      "node gpu07 exiting improperly. There are three reasons this could occur:"], 5),
])
def test_mpis_first_failed_process_is_the_failed_rank(tmp_path: Path, lines: list[str],
                                                      rank: int) -> None:
    f = _facts(tmp_path, "\n".join(lines) + "\n")
    assert f["failed_ranks"] == [rank]


@pytest.mark.parametrize("line, n", [
    # the parameter-golf runs' header (train_seed42.log, corpus
    # throughput-parameter-golf-minidepthrecurrence-seed42)
    ("world_size:8 grad_accum_steps:1", 8),
    # Megatron's argument dump (bigscience job.out, corpus
    # throughput-bigscience-hf-ds-gpt2-perf-n16-bs4-mbs8)
    ("  world_size ...................................... 16", 16),
    ("using world size: 64, data-parallel-size: 1, tensor-model-parallel size: 4, "
     "pipeline-model-parallel size: 16 ", 64),
    # levanter/distributed.py with two processes
    ("INFO:levanter.distributed:Initialized jax.distributed with 8 devices, 2 processes, "
     "coordinator_address=None, process_id=None, my device_ids=None.", 2),
])
def test_a_world_of_several_processes_is_stated_without_a_layout(line: str, n: int) -> None:
    from traindoc.parse.benchmarks import parse_node_layout
    assert parse_node_layout(line) == [{"metric": "layout:world_size", "value": float(n)}]


# --- a run of two training phases, each its own epochs and batches per epoch ------------------

def _ultralytics_bar(epoch: int, epochs: int, step: int, total: int) -> str:
    """An Ultralytics 8.4 training bar as X-7D1C11010/YOLO_DA26 finetune_target_domain.log
    prints it (corpus gpu_crash-yolo-da26-finetune-target-domain)."""
    pct = 100 * step // total
    return (f"      {epoch}/{epochs}      2.25G     0.8215      0.516   0.003812         39        "
            f"768: {pct}% ━━━━━━━━━━━━ {step}/{total} 5.5it/s 0.3s<0.2s")


@pytest.mark.parametrize("second", [
    # Ultralytics' own bars: the pseudo-label phase's 4 batches after the labelled phase's 5
    lambda e, n, s, t: _ultralytics_bar(e, n, s, t),
    # a tqdm bar of desc=f"Epoch {e}/{n}" (the form of many scripts' fine-tune stage)
    lambda e, n, s, t: f"Epoch {e}/{n}: {100 * s // t}%|██████████| {s}/{t} [00:01<00:00, "
                       f"3.10it/s, loss=0.52]",
])
def test_the_last_phases_bar_is_the_progress(tmp_path: Path, second) -> None:
    lines = [_ultralytics_bar(e, 3, s, 5) for e in (1, 2, 3) for s in range(1, 6)]
    lines += [second(e, 2, s, 4) for e in (1, 2) for s in range(1, 5)]
    lines += ["                 Class     Images  Instances      Box(P          R      mAP50  "
              "mAP50-95): 100% ━━━━━━━━━━━━ 5/5 23.6it/s 2.3s"]
    assert _facts(tmp_path, "\n".join(lines) + "\n")["last_iteration"] == 4


# --- a Python exception the run went on after is no failure -----------------------------------

SA_SSD_STEP = ("2024-04-12 04:18:49,049 - INFO - epoch[1][{n}/1856]: lr: 0.000300, "
               "aux_loss_cls: 0.265689, loss: 40.225271\n")


@pytest.mark.parametrize("error", [
    # anshuma/SA-SSD tools/nohup.out (corpus gpu_crash-sa-ssd-numba-typing-noise-healthy):
    # Numba's type-inference error quoted inside "Compilation is falling back to object mode"
    "            TypingError: array(float32, 2d, A) not allowed in a homogeneous sequence",
    # the same file, another Numba warning's quoted error
    "      NumbaTypeError: Unsupported array index type list(int64)<iv=None> in "
    "Tuple(slice<a:b>, list(int64)<iv=None>, slice<a:b>)",
    # PIL's wording (prannaykaul/lvc#19), here printed by a data loader that catches it, skips
    # the sample and goes on (the run's further steps are what the rule reads)
    "OSError: image file is truncated (7 bytes not processed)",
])
def test_an_exception_the_run_went_on_after_is_no_failure(tmp_path: Path, error: str) -> None:
    text = (f"{error}\n" + "".join(SA_SSD_STEP.format(n=n) for n in (20, 40, 60)))
    f = _facts(tmp_path, text)
    assert f["error_kind"] is None
    assert f["last_iteration"] == 60


def test_an_exception_a_peer_printed_one_more_step_after_is_the_failure(tmp_path: Path) -> None:
    """One step line after it is a peer finishing the step in flight, not a run that went on."""
    text = (SA_SSD_STEP.format(n=20) + "Traceback (most recent call last):\n"
            '  File "tools/train.py", line 120, in <module>\n'
            "KeyError: 'gt_boxes'\n" + SA_SSD_STEP.format(n=40))
    f = _facts(tmp_path, text)
    assert f["error_kind"] == "python"
    assert "gt_boxes" in f["error_message"]


# --- a model saved by name, or a checkpoint file saved with no other words --------------------

@pytest.mark.parametrize("line, path", [
    # GraphBEV's OpenPCDet nohup.out (corpus gpu_crash-graphbev-openpcdet-nohup-sighup),
    # OpenPCDet tools/train_utils/train_utils.py logger.info(f'Save latest model to {ckpt_name}')
    ("2023-09-11 22:32:21,024   INFO  Save latest model to /home/songziying/workspace/OpenPCDet/"
     "output/nuscenes_models/bevfusion/bevfusion_baseline/ckpt/latest_model",
     "/home/songziying/workspace/OpenPCDet/output/nuscenes_models/bevfusion/bevfusion_baseline/"
     "ckpt/latest_model"),
    # hand-written loops' print(f'Epoch {epoch}. Save latest model to {model_path}.') and
    # logger.info(f'save latest model to: {ckpt_path}') (GitHub code search, "Save latest model to")
    ("Epoch 3. Save latest model to ckpt/latest.pth.", "ckpt/latest.pth"),
    ("save latest model to: output/gpt2_weight.pth", "output/gpt2_weight.pth"),
    ("Save latest model to [saved_models/facades/generator_3.pth]",
     "saved_models/facades/generator_3.pth"),
    ("  --> Saved individual epoch checkpoint to checkpoints/exp1_epoch3.pt",
     "checkpoints/exp1_epoch3.pt"),
    # a SupContrast-style save_model that prints the file (corpus
    # gpu_crash-byol-v1-supcon-killed-epoch-10, mskang's BYOL train.out)
    ("==> Saving ./result/supcon/cifar10/resnet50/5.pt...", "./result/supcon/cifar10/resnet50/5.pt"),
    # words that save something else are no checkpoint
    ("Saving predictions to out/preds.pt", None),
    ("Saved config to output/config.yaml", None),
])
def test_a_model_saved_by_name_is_a_checkpoint(line: str, path: str | None) -> None:
    from traindoc.parse.checkpoints import parse_checkpoint
    row = parse_checkpoint(line)
    assert (row["path"] if row else None) == path


def test_an_epochs_save_of_a_file_is_that_epochs_checkpoint(tmp_path: Path) -> None:
    """The BYOL log's shape: an epoch line, then its save; killed epochs later."""
    step = "[epoch:{n}/1200] [loss:0.0016249] [lr:0.006503] [total time:0:02:27]\n"
    text = (step.format(n=4) + "==> Saving ./result/supcon/cifar10/resnet50/4.pt...\n"
            + step.format(n=5) + "==> Saving ./result/supcon/cifar10/resnet50/5.pt...\n"
            + step.format(n=6) + step.format(n=7) + "Killed\n")
    f = _facts(tmp_path, text)
    assert (f["last_iteration"], f["last_checkpoint_iteration"]) == (7, 5)


def test_an_exception_before_a_relaunchs_steps_is_the_failure(tmp_path: Path) -> None:
    """An exit record after the exception ends its run: the steps after it are a relaunch's
    (corpus timeout-openvla-oft-slurm: an srun job whose torchrun ran twice in one slurm.out)."""
    text = ("Traceback (most recent call last):\n"
            '  File "vla-scripts/finetune.py", line 1000, in <module>\n'
            "tensorflow_datasets.core.registered.DatasetNotFoundError: Dataset aloha_game not "
            "found.\n" + TORCHRUN_EXIT_1.format(lr=0, pid=1278528)
            + "".join(SA_SSD_STEP.format(n=n) for n in (20, 40, 60)))
    f = _facts(tmp_path, text)
    assert f["error_kind"] == "python"
    assert "aloha_game" in f["error_message"]


# --- srun's record of the tasks that exited on their own names the failed machine -------------

def test_srun_exit_lines_name_the_machine_of_an_untagged_nccl_error(tmp_path: Path) -> None:
    # elena-lyulina/Megatron-LM-Attention-Benchmark attn_bench/logs (corpus
    # gpu_crash-megatron-attn-bench-nid006742-nccl-net-plugin): Megatron under srun, one task
    # per rank, no launcher; the killed tasks are the step's teardown
    f = _facts(tmp_path, (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "NCCLUtils.hpp:275, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version "
        "2.21.5\nncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
        "srun: error: nid006742: tasks 32-33: Exited with exit code 1\n"
        "srun: error: nid006742: tasks 34-35: Exited with exit code 1\n"
        "srun: error: nid006717: tasks 12,15: Killed\n"
        "srun: error: nid006687: tasks 0-1,3: Killed\n"))
    assert f["failed_hosts"] == ["nid006742"]
    assert f["failed_ranks"] == [32, 33, 34, 35]


def test_srun_exit_lines_name_the_machines_of_an_untagged_oom(tmp_path: Path) -> None:
    # EveryVoiceTTS/EveryVoice#178: a CUDA OOM naming no rank, srun's exits on two nodes
    f = _facts(tmp_path, (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 112.00 MiB. GPU 2 "
        "has a total capacity of 79.15 GiB of which 39.62 MiB is free.\n"
        "srun: error: ib12gpu-002: task 4: Exited with exit code 1\n"
        "srun: error: ib12gpu-001: tasks 0-1: Exited with exit code 1\n"))
    assert f["failed_hosts"] == ["ib12gpu-001", "ib12gpu-002"]


def test_srun_exits_under_a_launcher_name_machines_not_ranks(tmp_path: Path) -> None:
    # picongpu#198's srun line; under torchrun a task is a node's agent, not a rank
    f = _facts(tmp_path, (
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 "
        "(pid: 4913) of binary: /usr/bin/python\n"
        "srun: error: taurusi2031: tasks 10-11: Exited with exit code 1\n"))
    assert "taurusi2031" in f["failed_hosts"]
    assert 10 not in f["failed_ranks"] and 11 not in f["failed_ranks"]


@pytest.mark.parametrize("header, host", [
    ("Node: fc10713 | Job: 35598063 | Start: Fri Apr 17 09:58:25 AM PDT 2026",
     "fc10713"),  # ermia's HF-TRL job-35598063.out (corpus gpu_crash-hf-trl-slurm-fc10713-…)
    ("Running on host gpu-a100-07", "gpu-a100-07"),  # echo "Running on host $(hostname)"
])
def test_a_job_banner_names_the_machine(tmp_path: Path, header: str, host: str) -> None:
    f = _facts(tmp_path, (
        f"{header}\n"
        "NotImplementedError: Unsloth cannot find any torch accelerator? You need a GPU.\n"))
    assert f["failed_hosts"] == [host]
    from traindoc.parse.benchmarks import parse_nodelist

    assert parse_nodelist("Node: 3 of 4 ready") is None


# --- Hydra's report of a failed job, the process group's aborted communicator, a shell's status -

HYDRA_LINES = [
    # facebookresearch/map-anything#89 (corpus gpu_crash-map-anything-89): the job's logger
    "[2025-10-31 05:07:11,062][__main__][ERROR] - Error executing job with overrides: "
    "['machine=hpc_train', 'model=mapanything']",
    # openai/mujoco-py#808: Hydra's own line, bare
    "Error executing job with overrides: ['task=dexart_laptop', 'training.seed=0']",
    "Error executing job with overrides: []",  # WEIRDLabUW/asid#1
]


@pytest.mark.parametrize("line", HYDRA_LINES)
def test_hydras_failed_job_report_alone_is_the_failure(tmp_path: Path, line: str) -> None:
    f = _facts(tmp_path, "Epoch: [7]  [ 600/2916]  eta: 0:54:53  lr: 0.000072\n" + line + "\n")
    assert f["error_kind"] == "python"
    assert "Error executing job with overrides" in f["error_message"]


def test_hydras_report_gives_way_to_the_exception_it_reports(tmp_path: Path) -> None:
    # actiongpt/actiongpt#4: the exception after Hydra's line is the failure
    f = _facts(tmp_path, (
        "Error executing job with overrides: ['folder=/path/to/experiment']\n"
        "Traceback (most recent call last):\n"
        '  File "interact_teach.py", line 45, in interact\n'
        '    prevcfg = OmegaConf.load(output_dir / ".hydra/config.yaml")\n'
        "FileNotFoundError: [Errno 2] No such file or directory: 'experiment/.hydra/config.yaml'\n"
        "\nSet the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n"))
    assert f["error_message"].startswith("FileNotFoundError")


@pytest.mark.parametrize("line", [
    # karfly/learnable-triangulation-pytorch#81 (corpus gpu_crash-learnable-triangulation-81),
    # torch 1.5: the traceback's head cut off
    "RuntimeError: NCCL communicator was aborted.",
    # pytorch/pytorch#64241's wording before the failure reason was added (torch 1.9)
    "RuntimeError: NCCL communicator was aborted on rank 1.",
])
def test_an_aborted_nccl_communicator_is_an_nccl_error(tmp_path: Path, line: str) -> None:
    f = _facts(tmp_path, (
        '  File "train.py", line 398, in one_epoch\n    total_loss.backward()\n' + line + "\n"))
    assert f["error_kind"] == "nccl_error"
    assert "NCCL communicator was aborted" in f["error_message"]


def test_an_abort_for_a_timed_out_collective_stays_the_timeouts() -> None:
    # mlfoundations/open_clip#1087: the watchdog's timeout is the reason given
    row = parse_error("RuntimeError: : NCCL communicator was aborted on rank 3.  Original reason "
                      "for failure was: [Rank 3] Watchdog caught collective operation timeout: "
                      "WorkNCCL(SeqNum=266392, OpType=ALLGATHER, Timeout(ms)=1800000) ran for "
                      "1803169 milliseconds before timing out.")
    assert row is None or row["code"] != "nccl_comm_aborted"


def test_a_shells_job_status_is_quoted_as_printed(tmp_path: Path) -> None:
    # idiap/pkwrap#4 (corpus gpu_crash-pkwrap-4): Kaldi's run.pl job died of SIGSEGV
    f = _facts(tmp_path, (
        "Running iter=0 of 12\n"
        "bash: line 1: 80675 Segmentation fault      ( local/chain/tuning/model/1d.py --dir "
        "exp/chain/tdnn_sp --mode training --lr 0.002 ) 2>> exp/chain/tdnn_sp/log/train.0.1.log\n"
        "run.pl: job failed, log is in exp/chain/tdnn_sp/log/train.0.1.log\n"))
    assert (f["error_kind"], f["error_message"]) == ("signal", "Segmentation fault (SIGSEGV)")


# --- the launchers' grammar of a rank's death (``LAUNCHER_DEATHS``) ---------------------------

@pytest.mark.parametrize("line, rank, host, code", [
    # saforem2/torchtitan (Sunspot reduce_scatter segfault; corpus gpu_crash-torchtitan-sunspot-…)
    ("x1922c6s0b0n0-hsn0: rank 4 died from signal 11 and dumped core", 4, "x1922c6s0b0n0-hsn0",
     "SIGSEGV"),
    # E3SM-Project/E3SM#6985 (Polaris)
    ("x3102c0s25b1n0.hsn.cm.polaris.alcf.anl.gov: rank 96 died from signal 11 and dumped core", 96,
     "x3102c0s25b1n0.hsn.cm.polaris.alcf.anl.gov", "SIGSEGV"),
    # pmodels/mpich#7605 (Aurora)
    ("x4213c4s7b0n0.hsn.cm.aurora.alcf.anl.gov: rank 27421 died from signal 6", 27421,
     "x4213c4s7b0n0.hsn.cm.aurora.alcf.anl.gov", "SIGABRT"),
    # Open MPI (the grammar's first row, unchanged)
    ("mpirun noticed that process rank 286 with PID 17969 on node ichost094 exited on signal 11 "
     "(Segmentation fault).", 286, "ichost094", "SIGSEGV"),
])
def test_a_launchers_death_line_names_rank_host_and_signal(line: str, rank: int, host: str,
                                                           code: str) -> None:
    row = parse_error(line)
    assert row is not None and row["kind"] == "signal"
    assert (row["rank"], row["host"], row["code"]) == (rank, host, code)


def test_a_pals_segfault_is_the_crash_of_its_rank(tmp_path: Path) -> None:
    # corpus gpu_crash-torchtitan-sunspot-reduce-scatter-segv; the SIGTERM of the others after it
    # (E3SM#6985's "rank 99 died from signal 15") is the teardown
    f = _facts(tmp_path, "node: x1922c6s0b0n0\n"
               "x1922c6s0b0n0-hsn0: rank 4 died from signal 11 and dumped core\n"
               "x1922c6s0b0n0-hsn0: rank 7 died from signal 15\nrc=139\n")
    assert f["failed_ranks"] == [4]
    assert f["failed_hosts"] == ["x1922c6s0b0n0-hsn0"]
    assert f["error_kind"] == "signal" and "died from signal 11" in f["error_message"]


HYDRA_FRAME = """===================================================================================
=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES
=   {who}
=   {how}
=   CLEANING UP REMAINING PROCESSES
=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES
===================================================================================
{after}"""


@pytest.mark.parametrize("who, how, after, rank, host, code", [
    # openai/jukebox#155 (MPICH hydra): the exit string after the frame says the signal
    ("PID 9665 RUNNING AT NeuroRTX6000", "EXIT CODE: 9",
     "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)\n"
     "This typically refers to a problem with your application.\n", None, "NeuroRTX6000",
     "SIGKILL"),
    # bsc-performance-tools/extrae#101 (Intel MPI): the rank and the signal in the frame
    ("RANK 6 PID 2447372 RUNNING AT node0009", "KILLED BY SIGNAL: 9 (Killed)", "", 6, "node0009",
     "SIGKILL"),
    # hydra's exit status of a shell-run rank: 128 + 11
    ("RANK 7 PID 2447373 RUNNING AT node0009", "EXIT CODE: 139", "", 7, "node0009", "SIGSEGV"),
])
def test_hydras_bad_termination_frame_is_one_death(tmp_path: Path, who: str, how: str,
                                                   after: str, rank: int | None, host: str,
                                                   code: str) -> None:
    log = tmp_path / "job.log"
    log.write_text(HYDRA_FRAME.format(who=who, how=how, after=after))
    for engine in ("plain", "fast"):
        e = traindoc.load(str(log), engine=engine).errors
        assert len(e) == 1, engine
        r = e.iloc[0]
        assert r["kind"] == "signal" and r["code"] == code and r["host"] == host
        assert (None if pd.isna(r["rank"]) else int(r["rank"])) == rank
        assert "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES" in r["message"]


def test_hydras_frame_of_a_plain_exit_is_an_exit_record(tmp_path: Path) -> None:
    # MPLBM-UT#92's frame, its exit code without a signal said: an exit, not a signal
    log = tmp_path / "job.log"
    log.write_text(HYDRA_FRAME.format(who="PID 92248 RUNNING AT fzh-desktop", how="EXIT CODE: 1",
                                      after=""))
    inc = traindoc.load(str(log))
    assert not len(inc.errors)
    x = inc.exits.iloc[0]
    assert (x["host"], int(x["pid"]), int(x["exitcode"])) == ("fzh-desktop", 92248, 1)


# --- a scheduler's plain cancel, nothing failing before it, is how the job ended -------------

@pytest.mark.parametrize("line, host", [
    # facebookresearch/Deformable-DETR fork's slurm.out (corpus gpu_crash-deformable-detr-…)
    ("slurmstepd: error: *** JOB 25883692 ON gr015 CANCELLED AT 2022-10-13T04:10:12 ***", "gr015"),
    # tdmolflow's slurm output (corpus timeout-tdmolflow-cancelled-no-collective)
    ("slurmstepd: error: *** JOB 3725795 ON bessemer-node026 CANCELLED AT 2025-01-20T16:42:49 ***",
     "bessemer-node026"),
])
def test_a_plain_scancel_is_the_jobs_end_on_its_host(tmp_path: Path, line: str, host: str) -> None:
    log = tmp_path / "slurm.out"
    log.write_text("step 10 loss 2.31\nstep 20 loss 2.20\n" + line + "\n")
    rep = gpu_crash.diagnose(traindoc.load(str(log)))
    f = rep.facts
    assert f["failed_hosts"] == [host] and f["failed_ranks"] == []
    assert f["error_kind"] == "signal" and "CANCELLED AT" in f["error_message"]
    assert rep.verdict.startswith("The scheduler cancelled the job")
    assert "peer" not in rep.verdict


def test_a_scancel_after_a_crash_stays_the_teardown(tmp_path: Path) -> None:
    f = _facts(tmp_path, "RuntimeError: CUDA error: an illegal memory access was encountered\n"
               "slurmstepd: error: *** JOB 1 ON gr015 CANCELLED AT 2022-10-13T04:10:12 ***\n")
    assert f["error_kind"] == "cuda_error"


# --- a wrapper's line is context for the error it wraps --------------------------------------

@pytest.mark.parametrize("line", [
    # NVIDIA/JAX-Toolbox jax-vllm offloading (corpus gpu_crash-jax-toolbox-eks-jax-vllm-…)
    "Exception: Call to collective_rpc method failed: ray::RayWorkerWrapper.execute_method() "
    "(pid=1117, ip=10.0.29.169, actor_id=f076802821d0864ad46eab6101000000, repr=<vllm.executor."
    "ray_utils.RayWorkerWrapper object at 0x7fbfee841a60>)",
    # a verl user's main_task OOM
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=399789, ip=10.128.0.9)",
])
def test_rays_remote_task_error_is_a_wrapper(line: str) -> None:
    assert EXCEPTION_WRAPPER_RE.search(line)


@pytest.mark.parametrize("line, words", [
    # NVIDIA/JAX-Toolbox#194 (XLA's nccl_utils.cc)
    ("2023-08-25 11:06:39.330561: E external/xla/xla/service/gpu/nccl_utils.cc:191] Aborting "
     "communicator: 0x5555a108ff90 due to async NCCL error: remote process exited or there was a "
     "network error", "due to async NCCL error: remote process exited"),
    # CuPy's NcclError (JAX-Toolbox's jax-vllm logs)
    ("cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_REMOTE_ERROR: remote process exited or "
     "there was a network error", "NCCL_ERROR_REMOTE_ERROR: remote process exited"),
    # the same for another NCCL error (a vLLM user's note on NCCL's memory)
    ("cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_UNHANDLED_CUDA_ERROR: unhandled cuda "
     "error", "NCCL_ERROR_UNHANDLED_CUDA_ERROR"),
])
def test_nccls_error_keeps_the_wrappers_own_words(line: str, words: str) -> None:
    row = parse_error(line)
    assert row is not None and row["kind"] == "nccl_error"
    assert words in row["message"]


def test_a_ray_wrapped_nccl_error_is_an_nccl_error(tmp_path: Path) -> None:
    f = _facts(tmp_path, "Traceback (most recent call last):\n"
               '  File "/opt/x/rollout_client.py", line 175, in call\n'
               "Exception: Call to collective_rpc method failed: ray::RayWorkerWrapper.execute_"
               "method() (pid=1117, ip=10.0.29.169, actor_id=f0768028)\n"
               '  File "cupy_backends/cuda/libs/nccl.pyx", line 129, in check_status\n'
               "cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_REMOTE_ERROR: remote process "
               "exited or there was a network error\n")
    assert f["error_kind"] == "nccl_error"
    assert "NCCL_ERROR_REMOTE_ERROR" in f["error_message"]


# --- Intel's Unified Runtime dies before the abort it causes ----------------------------------

def test_ur_die_is_the_error_of_the_abort_after_it(tmp_path: Path) -> None:
    # saforem2/torchtitan's Aurora MoE run (corpus gpu_crash-torchtitan-aurora-moe-ep-ur-die); the
    # same adapter's message in a oneCCL run script's note; the adapters' die() prints
    # "ur_die: <message>" then calls std::terminate()
    f = _facts(tmp_path, "step: 2  loss: 11.72962  grad_norm: 2.3820\n"
               "ur_die: urEventWait must not be called for an internal event\n"
               "terminate called without an active exception\nFatal Python error: Aborted\n")
    assert f["error_kind"] == "signal"
    assert f["error_message"] == "ur_die: urEventWait must not be called for an internal event"


@pytest.mark.parametrize("case", ["gpu_crash-deformable-detr-unzip-scancel",  # a plain scancel
                                  "gpu_crash-tdmolflow-slurm-time-limit"])  # the time limit
def test_a_job_the_scheduler_ended_gets_no_advice_for_hanging_survivors(case: str) -> None:
    # the job was ended from outside, no rank crashed: "make a crashed job exit instead of
    # hanging" (TORCH_NCCL_ASYNC_ERROR_HANDLING, srun --kill-on-bad-exit) does not apply
    logs = Path(__file__).parent.parent / "data" / "corpus" / "gpu_crash" / case / "logs"
    ids = [a.id for a in gpu_crash.diagnose(traindoc.load(str(logs))).actions]
    assert not {"exit_on_failure", "exit_on_failure_hung"} & set(ids), ids
    assert ids[0] in {"why_killed", "time_limit"}


# --- a worker interrupted from outside (SIGINT), the launcher stopping the others ---------------

# corpus gpu_crash-graphnovo-nohup-sigint-keyboardinterrupt (torch 1.10's torchrun in a
# nohup.out): rank 0's KeyboardInterrupt, torchrun's SIGTERM to the others and its record
GRAPHNOVO_SIGINT = """\
Traceback (most recent call last):
  File "/home/z37mao/Genova/train_encoder.py", line 197, in <module>
    scaler.step(optimizer)
KeyboardInterrupt
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2728582 closing signal SIGTERM
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2728583 closing signal SIGTERM
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -2) local_rank: 0 (pid: 2728581) of binary: /home/z37mao/anaconda3/envs/genova_torch/bin/python
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
=======================================================
train_encoder.py FAILED
-------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
-------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2022-03-06_18:50:55
  host      : ming-gpu-v100.cs.uwaterloo.ca
  rank      : 0 (local_rank: 0)
  exitcode  : -2 (pid: 2728581)
  error_file: <N/A>
  traceback : Signal 2 (SIGINT) received by PID 2728581
=======================================================
"""


@pytest.mark.parametrize("text", [
    GRAPHNOVO_SIGINT,
    # torch 2.x's agent words the same lines with its logger's name in brackets (a streaming
    # run's write-up quotes its root cause: "Signal 2 (SIGINT) received by PID 59987")
    GRAPHNOVO_SIGINT.replace("WARNING:torch.distributed.elastic.multiprocessing.api:",
                             "W1121 17:25:28.123000 59901 torch/distributed/elastic/"
                             "multiprocessing/api.py:897] ")
    .replace("ERROR:torch.distributed.elastic.multiprocessing.api:",
             "E1121 17:25:28.456000 59901 torch/distributed/elastic/multiprocessing/api.py:869] ")
    .replace("2728581", "59987"),
])
def test_a_worker_interrupted_from_outside_is_where_the_job_ended(tmp_path: Path,
                                                                  text: str) -> None:
    log = tmp_path / "nohup.out"
    log.write_text(text)
    r = gpu_crash.diagnose(traindoc.load(str(log)))
    assert (r.facts["failed_ranks"], r.facts["failed_hosts"]) == ([0], ["ming-gpu-v100.cs.uwaterloo.ca"])
    assert r.facts["error_kind"] == "signal" and "SIGINT" in r.facts["error_message"]
    assert "interrupted" in r.verdict and r.confidence.value != "high"


# --- processes stopped from outside, and signal handlers' banners -----------------------------

@pytest.mark.parametrize("text, message", [
    # PaddleOCR workers (corpus gpu_crash-haoyuscut-paddleocr-workers-sigterm-in-bcast-ncclid,
    # workerlog.1): the SIGTERM their launcher sent while they waited for the NCCL id
    ("Error Message Summary:\n----------------------\n"
     "FatalError: `Termination signal` is detected by the operating system.\n"
     "  [TimeInfo: *** Aborted at 1646294862 (unix time) try \"date -d @1646294862\" if you are "
     "using GNU date ***]\n"
     "  [SignalInfo: *** SIGTERM (@0x4070000be72) received by PID 48829 (TID 0x7fbc97240240) from "
     "PID 48754 ***]\n", "`Termination signal`"),
    # paddle.distributed.launch's workers after their launcher died (corpus gpu_crash-light-str-
    # paddleocr-4gpu-stops-iter-880-kill-process-group, workerlog.0)
    ("main proc 36818 exit, kill process group 36653\n", "kill process group 36653"),
])
def test_workers_stopped_from_outside_say_a_signal_ended_the_job(tmp_path: Path, text: str,
                                                                message: str) -> None:
    f = _facts(tmp_path, text)
    assert (f["error_kind"], f["failed_ranks"]) == ("signal", [])
    assert message in f["error_message"]


def test_a_launchers_teardown_after_a_ctrl_c_is_no_stop_signal(tmp_path: Path) -> None:
    # DeepSpeed's runner killing its workers after a KeyboardInterrupt (corpus gpu_crash-
    # megatron-deepspeed-random-ltd-lr-3-0e-4): nothing failed
    f = _facts(tmp_path, "KeyboardInterrupt\n[2022-11-10 10:01:02,345] [INFO] [launch.py:286:"
                         "sigkill_handler] Killing subprocess 19338\n")
    assert f["error_kind"] is None


def test_gloggs_signal_banner_is_the_failure(tmp_path: Path) -> None:
    # google/jax#12456: a TPU v3-128 pod's process dies in JAX's backend set-up
    f = _facts(tmp_path, "*** SIGSEGV (@(nil)), see gl__________41#s15 received by PID 11743 "
                         "(TID 12350) on cpu 17; stack trace: ***\n"
                         "PC: @     0x7facba4a8de2  (unknown)  (unknown)\n")
    assert f["error_kind"] == "signal" and "SIGSEGV" in f["error_message"]


def test_conda_complaining_about_the_shell_is_no_failure_of_the_run(tmp_path: Path) -> None:
    # jshe2304/smilesVAE train.err (corpus gpu_crash-smilesvae-midway3-conda-error-time-limit):
    # the batch script's 'conda activate' fails, the job runs on to its time limit
    text = ("CommandNotFoundError: Your shell has not been properly configured to use 'conda "
            "activate'.\nTo initialize your shell, run\n\n    $ conda init <SHELL_NAME>\n\n"
            "slurmstepd: error: *** JOB 13571631 ON midway3-0037 CANCELLED AT 2024-01-12T14:49:46 "
            "DUE TO TIME LIMIT ***\n")
    f = _facts(tmp_path, text)
    assert (f["error_kind"], f["failed_hosts"]) == ("signal", ["midway3-0037"])
    assert "DUE TO TIME LIMIT" in f["error_message"]
