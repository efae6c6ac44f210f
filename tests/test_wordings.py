"""Every real line in tests/data/wordings/ (collected from torch's source and public issues,
each with its source) is read by the right parser."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import traindoc
from conftest import ROOT
from traindoc.parse.collectives import parse_gloo_timeout, parse_watchdog, parse_work_status
from traindoc.parse.errors import parse_error, parse_exit

WORDINGS = ROOT / "tests" / "data" / "wordings"
COMPLETE_WORK_RE = re.compile(r"WorkNCCL\([^()]*Timeout\(ms\)=\d+\)")


def lines(name: str) -> list[str]:
    return [ln for ln in (WORDINGS / name).read_text().splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]


def test_every_complete_watchdog_line_parses() -> None:
    found = [ln for ln in lines("watchdog_timeout.txt") if COMPLETE_WORK_RE.search(ln)
             and ("Watchdog caught collective operation timeout: WorkNCCL(" in ln
                  or "timed out in blocking wait" in ln)]
    assert len(found) >= 20
    for ln in found:
        row = parse_watchdog(ln)
        assert row is not None, ln
        assert row["op_type"] and row["timeout_ms"], ln


def test_watchdog_versions() -> None:
    old = "[E ProcessGroupNCCL.cpp:566] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, Timeout(ms)=60000) ran for 66854 milliseconds before timing out."
    row = parse_watchdog(old)
    assert (row["rank"], row["seq_num"], row["op_type"], row["ran_for_ms"]) == (2, None, "BROADCAST", 66854)
    wrapped = ("[rank6]:[E1206 18:44:16.997991020 ProcessGroupNCCL.cpp:1515] [PG 1 Rank 6] Process group "
               "watchdog thread terminated with exception: [Rank 6] Watchdog caught collective operation "
               "timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, "
               "NumelOut=68124672, Timeout(ms)=600000) ran for 600003 milliseconds before timing out.")
    row = parse_watchdog(wrapped)
    # "PG 1 Rank 6" is the rank within group 1, not a global rank: the "[rank6]:" prefix, which
    # the loader reads, gives the global one
    assert (row["rank"], row["process_group"], row["seq_num"]) == (None, "1", 7753)
    coalesced = ("[rank4]:[E318 07:39:53.792630246 ProcessGroupNCCL.cpp:616] [Rank 4] Watchdog caught "
                 "collective operation timeout: WorkNCCL(SeqNum=610, OpType=COALESCED, NumelIn="
                 "18446744073709551615, NumelOut=18446744073709551615, Timeout(ms)=600000) ran for "
                 "600086 milliseconds before timing out.")
    assert parse_watchdog(coalesced)["numel_in"] is None


def test_global_rank_prefix_beats_the_group_local_tag(tmp_path: Path) -> None:
    p = tmp_path / "x.log"
    p.write_text("[rank15]:[E1206 18:44:12.7 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective "
                 "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                 "Timeout(ms)=600000) ran for 600003 milliseconds before timing out.\n")
    assert traindoc.load(p).collectives.loc[0, "rank"] == 15


@pytest.mark.parametrize(("line", "pg", "seq", "enq", "comp"), [
    ("[rank14]:[E ProcessGroupNCCL.cpp:1537] [PG 1 Rank 14] Timeout at NCCL work: 15734, last enqueued NCCL work: 15735, last completed NCCL work: 15733.", "1", 15734, 15735, 15733),
    ("[rank1]:[E1003 18:37:01.833575187 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 1] Exception (either an error or timeout) detected by watchdog at work: 6463, last enqueued NCCL work: 6463, last completed NCCL work: 6462.", "0 (default_pg)", 6463, 6463, 6462),
    ("[rank4]:[E318 07:39:53.792772442 ProcessGroupNCCL.cpp:1785] [PG ID 2 PG GUID 9 Rank 4] Exception (either an error or timeout) detected by watchdog at work: 610, last enqueued NCCL work: 616, last completed NCCL work: 609.", "2", 610, 616, 609),
    ("[rank1]:[E1103 07:34:57.460801783 ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID 0(default_pg) Rank 1] Timeout at NCCL work: 1, last enqueued NCCL work: 1, last completed NCCL work: -1.", "0 (default_pg)", 1, 1, -1),
])
def test_work_status(line: str, pg: str, seq: int, enq: int, comp: int) -> None:
    row = parse_work_status(line)
    assert (row["process_group"], row["seq_num"], row["last_enqueued"], row["last_completed"]) == (pg, seq, enq, comp)


def test_every_status_line_parses() -> None:
    found = [ln for ln in lines("work_status.txt") if re.search(r"last enqueued (NCCL )?work: -?\d+, last completed (NCCL )?work: -?\d+", ln)]
    assert len(found) >= 10
    assert all(parse_work_status(ln) for ln in found)


def test_gloo_timeouts_parse() -> None:
    found = [ln for ln in lines("gloo_timeout.txt") if re.search(r"Timed out waiting \d+ms for (recv|send)", ln)]
    assert len(found) >= 5
    for ln in found:
        assert parse_gloo_timeout(ln)["timeout_ms"] > 0


def test_teardown_lines_are_errors() -> None:
    found = [ln for ln in lines("teardown.txt") if "taking the entire process down" in ln
             or "Some NCCL operations have failed or timed out" in ln]
    assert found
    assert all(parse_error(ln) for ln in found)


# om-ai-lab/VLM-R1#257: the heartbeat monitor's message wrapped by a terminal mid-word
STUCK_WRAPPED = (
    "[rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID 0(default_pg) "
    "Rank 6] ProcessGroupNCCL'\n"
    "s watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
    "collectives. This typically indi\n"
    "cates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog, and could be "
    "triggered by another thread \n")
# CASIA-LMC-Lab/AnomalyGPT#43: DeepSpeed's launcher line with its command list wrapped
DS_EXIT_WRAPPED = (
    "[2023-11-13 16:59:55,650] [ERROR] [launch.py:320:sigkill_handler] ['/opt/conda/bin/python', "
    "'-u', 'train_mvtec.py', '--local_rank=1', '--model', 'openllama_peft', '--stage', '1', \n"
    "'../pretrained_ckpt/imagebind_ckpt/imagebind_huge.pth', '--vicuna_ckpt_path', \n"
    "] exits with return code = -9\n")


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_wrapped_heartbeat_and_launcher_lines(tmp_path: Path, engine: str) -> None:
    (tmp_path / "a.log").write_text(STUCK_WRAPPED)
    err = traindoc.load(tmp_path / "a.log", engine=engine).errors
    assert list(err["rank"]) == [6] and list(err["kind"]) == ["nccl_error"]
    assert err["message"].iloc[0].startswith("ProcessGroupNCCL's watchdog got stuck for 480 seconds")
    (tmp_path / "b.log").write_text(DS_EXIT_WRAPPED)
    ex = traindoc.load(tmp_path / "b.log", engine=engine).exits
    assert list(ex["exitcode"]) == [-9] and list(ex["signal"]) == ["SIGKILL"]


@pytest.mark.parametrize("name", sorted(p.name for p in WORDINGS.glob("*.txt")))
def test_whole_corpus_loads_without_error(name: str) -> None:
    inc = traindoc.load(WORDINGS / name)
    assert inc.account["lines"] > 0


def test_pdsh_ip_prefix_names_the_host(tmp_path: Path) -> None:
    # DeepSpeed's pdsh runner prefixes the hostfile's IP (prefixes.txt, lambda-scalar cluster)
    p = tmp_path / "job.log"
    p.write_text("104.171.201.171: lambda-scalar02:95756:95756 [6] NCCL INFO Bootstrap : Using "
                 "enp161s0f0:104.171.201.171<0>\n"
                 "104.171.201.171: [rank14]:[E708 01:47:23.901930947 ProcessGroupNCCL.cpp:629] "
                 "[Rank 14] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, "
                 "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600070 "
                 "milliseconds before timing out.\n")
    inc = traindoc.load(p)
    row = inc.collectives.iloc[0]
    assert (row["host"], row["rank"]) == ("104.171.201.171", 14)


def test_collector_timestamp_before_the_rank_prefix() -> None:
    # QwenLM/Qwen3-Coder#174: "2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: …"
    from traindoc.parse.prefixes import demux

    text, origin = demux("2024-11-20 14:37:16 [rank3]: torch.OutOfMemoryError: CUDA out of "
                         "memory. Tried to allocate 132.00 MiB.")
    assert (origin.rank, origin.rank_global) == (3, True)
    assert text.startswith("torch.OutOfMemoryError")
    _, origin = demux("[2024-11-20 14:37:16] [default1]:[rank9]: x")
    assert origin.rank == 9
    # NVIDIA/nccl#1610: a leading space and a minute-only stamp
    text, origin = demux(" 2025-02-18 12:54 [rank13]:[E218 04:54:22.864467604 "
                         "ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught")
    assert (origin.rank, origin.rank_global) == (13, True) and text.startswith("[E218")


@pytest.mark.parametrize(("line", "rank", "body"), [
    # modelscope/ms-swift#7992: the collector's own time, no date
    ("18:00:35.575 [rank2]:[W205 18:00:35.271546125 ProcessGroupNCCL.cpp:1538] Warning: "
     "WARNING: destroy_process_group() was not called before program exit", 2, "[W205"),
    # GeneticTrading (pasted run): the app's tag on every line it relays
    ("[TRAINING] [rank0]: Traceback (most recent call last):", 0, "Traceback"),
    # a date in full-width brackets (a Chinese-language wrapper), glued to the tag
    ("\u30102025-03-04 10:11:12\u3011[rank3]: RuntimeError: CUDA error: an illegal memory "
     "access was encountered", 3, "RuntimeError"),
    # a Markdown quote of a pasted log
    ("> [rank1]: torch.distributed.DistBackendError: NCCL error", 1, "torch.distributed"),
])
def test_any_short_lead_before_the_rank_tag(line: str, rank: int, body: str) -> None:
    from traindoc.parse.prefixes import demux

    text, origin = demux(line)
    assert (origin.rank, origin.rank_global) == (rank, True) and text.startswith(body)


def test_a_host_or_an_exception_before_the_rank_tag_is_not_a_lead() -> None:
    from traindoc.parse.prefixes import demux

    assert demux("node-17: [rank0]: x")[1].host == "node-17"
    assert demux("(WorkerDict pid=4) [rank3]: y")[1].pid == 4
    assert demux("Exception: [rank0]: bad")[1].rank is None


def test_both_engines_read_a_lead_before_the_rank_tag_alike(tmp_path: Path) -> None:
    # the fast engine memoises who wrote a line by its first bytes: a stamp with no rank tag
    # after it must not decide the next line's, which has one
    stuck = ("[E205 18:11:06.375750231 ProcessGroupNCCL.cpp:1870] [PG ID 12 PG GUID "
             "99(EXPERT_MODEL_PARALLEL_GROUP) Rank {r}] ProcessGroupNCCL's watchdog got stuck for "
             "480 seconds without making progress in monitoring enqueued collectives.")
    lines = [f"18:00:31.711 {stuck.format(r=7)}",  # no rank tag: a memo on "18:00:31" says none
             *(f"18:00:3{r}.575 [rank{r}]:{stuck.format(r=r)}" for r in range(4))]
    (tmp_path / "job.log").write_text("\n".join(lines) + "\n")
    plain = traindoc.load(str(tmp_path), engine="plain", workers=1)
    fast = traindoc.load(str(tmp_path), engine="fast", workers=1)
    for t in plain.tables:
        pd.testing.assert_frame_equal(plain.tables[t], fast.tables[t], obj=t)
    assert sorted(plain.errors["rank"].dropna().astype(int)) == [0, 1, 2, 3]
    assert plain.errors["rank"].isna().sum() == 1


def test_docker_compose_prefix_is_stripped_not_a_host() -> None:
    # sgl-project/sglang#12076
    from traindoc.parse.prefixes import demux

    text, origin = demux("sglang-1  | [2025-10-29 11:25:58 TP7] Pyspy dump for PID 310:")
    assert text.startswith("[2025-10-29") and origin.host is None
    assert demux("E-05 | global batch size: 2048 |")[0].startswith("E-05")  # a wrapped Megatron line


@pytest.mark.parametrize(("line", "host", "pid", "rest"), [
    # journalctl's default output, as a service's error report quotes it (a public repository's
    # "Neura v2 Error Monitor" page: the day zero-padded)
    ("Apr 04 16:38:13 sweet-coffee.ptr.network python3[937165]: 2026-04-04 16:38:13,787 "
     "[telegram.ext.Updater] ERROR: Exception happened while polling for updates.",
     "sweet-coffee.ptr.network", 937165, "2026-04-04 16:38:13,787 [telegram.ext.Updater]"),
    # syslog's RFC 3164 form (the day space-padded) before a torchrun rank tag
    ("Mar  1 12:00:00 gpu-node-17 python[1234]: [rank3]: Watchdog caught collective operation "
     "timeout", "gpu-node-17", 1234, "Watchdog caught"),
    # journalctl -o short-iso: the collector's time, then host and program
    ("2024-03-01T12:00:00+0000 gpu7 python3[55]: iteration 10/100", "gpu7", 55, "iteration 10"),
])
def test_journald_and_syslog_headers_name_the_host(line: str, host: str, pid: int,
                                                   rest: str) -> None:
    from traindoc.parse.prefixes import demux

    body, origin = demux(line)
    # (the pid is the stream's opener, the launcher for all its ranks: not the writer's)
    assert (origin.host, origin.pid) == (host, None) and body.startswith(rest)


@pytest.mark.parametrize(("line", "host", "rest"), [
    # NVIDIA/nccl#1029 (DeepSpeed's pdsh launcher; a traceback's indented frame)
    ('rdma-test-gpu-worker-1:   File "/usr/local/lib/python3.10/dist-packages/torch/distributed/'
     'distributed_c10d.py", line 3665, in barrier', "rdma-test-gpu-worker-1", 'File "/usr/'),
    # stark-sim/megatron-deepspeed-lock-clock's dual-node logs (Megatron's indented arguments)
    ("v100x16-1:   rank ............................................ 0", "v100x16-1",
     "rank ....."),
    # torch_ucc's comm check indents with a tab (openucx/torch-ucc PR #53), behind a pdsh host
    ("node-17: \tAborting comms #12 (op=ALLTOALL_BASE) due to the problematic ranks: [0]",
     "node-17", "\tAborting comms #12"),
])
def test_a_pdsh_host_before_an_indented_line(line: str, host: str, rest: str) -> None:
    from traindoc.parse.prefixes import demux

    body, origin = demux(line)
    assert origin.host == host and body.startswith(rest)


def test_a_tqdm_description_with_a_digit_is_no_host() -> None:
    # ostris/ai-toolkit#595: the job's name as tqdm's description, then the bar
    from traindoc.parse.prefixes import demux

    line = ("lokr-test-2:  40%|###9      | 1199/3000 [2:49:04<14:04:18, 28.13s/it, lr: 2.0e-04 "
            "loss: 7.353e-01]")
    assert demux(line) == (line, demux("")[1])


def test_a_kernel_line_keeps_its_syslog_header() -> None:
    # parse.xid reads the host before "kernel:" itself
    from traindoc.parse.prefixes import demux

    line = "Mar  1 12:00:00 gpu-node-17 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen"
    assert demux(line)[0] == line
    assert demux("Mar 1 is when the run started")[0] == "Mar 1 is when the run started"


@pytest.mark.parametrize("line, rank, rest", [
    # NVIDIA/nccl#957 (mpirun --tag-output --timestamp-output)
    ("Fri Aug 11 12:31:45 2023[1,0]<stdout>:tomte401:1850301:1881341 [0] transport.cc:154 NCCL "
     "WARN Cuda failure 'invalid argument'", 0, "tomte401:1850301:1881341 [0] transport.cc:154"),
    # open-mpi/ompi#7710 (the prefix as Open MPI 4.0.2 prints it: ctime pads the day)
    ("Thu May  7 10:39:20 2020[1,1]<stdout>:Hello, World, I am 1 of 8", 1, "Hello, World"),
])
def test_mpirun_timestamp_before_its_tag(line: str, rank: int, rest: str) -> None:
    from traindoc.parse.prefixes import demux

    body, origin = demux(line)
    assert (origin.rank, origin.rank_global) == (rank, True) and body.startswith(rest)


# -- launcher and agent wordings across torch versions (torch/distributed/elastic/multiprocessing/
# api.py, agent/server/api.py, torch/multiprocessing/spawn.py) ---------------------------------
@pytest.mark.parametrize(("line", "code", "pid"), [
    # workers started as subprocesses (every version; pytorch/pytorch#150916)
    ("W0409 07:28:49.531000 1359 torch/distributed/elastic/multiprocessing/api.py:897] Sending "
     "process 1365 closing signal SIGTERM", "launcher_sigterm", 1365),
    # workers started by multiprocessing (torch 2.x; NVIDIA/nvidia-resiliency-ext#18)
    ("W0227 17:39:41.936000 293814 site-packages/torch/distributed/elastic/multiprocessing/api.py:"
     "766] Closing process 293866 via signal SIGTERM", "launcher_sigterm", 293866),
    # the agent told to stop, torch < 2.4
    ("WARNING:torch.distributed.elastic.agent.server.api:Received Signals.SIGTERM death signal, "
     "shutting down workers", "launcher_received_signal", None),
    # torch 2.4+: the signal's number (NVIDIA/nvidia-resiliency-ext#18, pytorch/pytorch#150916)
    ("W0227 17:39:41.936000 293817 site-packages/torch/distributed/elastic/agent/server/api.py:"
     "719] Received 15 death signal, shutting down workers", "launcher_received_signal", None),
    # nohup's SIGHUP (OpenMOSS/MOSS#237, as logging's "Message:" quotes it)
    ("Message: 'Received 1 death signal, shutting down workers'", "launcher_received_signal",
     None),
    # DeepSpeed's launcher (launch.py's sigkill_handler; madehua98/FoodHealthMMLLM
    # scripts/v1/phi2/food_weight_train.out), and DeepSpeed 0.3's bare line (bigscience logs)
    ("[2024-04-17 09:44:36,551] [INFO] [launch.py:324:sigkill_handler] Main process received "
     "SIGTERM, exiting", "launcher_received_signal", None),
    ("Main process received SIGINT, exiting", "launcher_received_signal", None),
])
def test_agent_signal_wordings(line: str, code: str, pid: int | None) -> None:
    row = parse_error(line)
    assert row is not None and row["code"] == code and row["kind"] == "signal"
    assert row.get("pid") == pid


@pytest.mark.parametrize(("line", "rank", "exitcode", "signal"), [
    # torch.multiprocessing.spawn (Plachtaa/VITS-fast-fine-tuning#284; facebookresearch/moco#54)
    ("torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with exit code 1",
     0, 1, None),
    # torch <= 1.4 raised a plain Exception with the same words
    ("Exception: process 1 terminated with exit code 1", 1, 1, None),
    # a Windows access violation (SayaSS/vits-finetuning#32): no signal
    ("torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with exit code "
     "3221226505", 0, 3221226505, None),
])
def test_spawn_exit_codes(line: str, rank: int, exitcode: int, signal: str | None) -> None:
    row = parse_exit(line)
    assert row is not None
    assert (row["rank"], row["exitcode"], row.get("signal")) == (rank, exitcode, signal)


def test_blocking_wait_of_torch_16_to_18() -> None:
    # torch 1.6-1.8 WorkNCCL::wait (NCCL_BLOCKING_WAIT=1): the rank's own line before its
    # "Operation timed out!"
    row = parse_watchdog("I1203 10:00:00.000 ProcessGroupNCCL.cpp:526] [Rank 3] Caught collective "
                         "operation timeout for work: WorkNCCL(OpType=ALLREDUCE, TensorShape=[4, "
                         "1024], Timeout(ms)=1800000)")
    assert row is not None
    assert (row["rank"], row["op_type"], row["timeout_ms"]) == (3, "ALLREDUCE", 1_800_000)


@pytest.mark.parametrize(("line", "rank", "rest"), [
    # huggingface/accelerate#1519: torchrun --tee 3 with '--role gpu187:' (role, then local rank)
    ("[gpu187:2]:torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB",
     2, "torch.cuda.OutOfMemoryError: CUDA out of memory."),
    # stas00/ml-engineering network/benchmarks/all_reduce_bench.py launches with
    # "--role `hostname -s`: --tee 3": every line reads "[<node>:<local rank>]:"
    ("[dgx-a100-07:5]:Traceback (most recent call last):", 5, "Traceback (most recent call last):"),
])
def test_torchrun_role_naming_the_node_is_a_prefix(line: str, rank: int, rest: str) -> None:
    from traindoc.parse.prefixes import demux

    text, origin = demux(line)
    assert text.startswith(rest)
    # the local rank, and no host: scripts hard-code the role for every node (accelerate#1519)
    assert (origin.rank, origin.rank_global, origin.host) == (rank, False, None)
    assert demux("[step:10] loss 2.3")[1].rank is None  # a bracketed tag with no ']:' is text
