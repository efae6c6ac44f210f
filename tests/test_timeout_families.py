"""Timeout families beyond the corpus's instance: each read from at least two real sources (the
issue each line comes from is named beside it), through both reading engines."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import traindoc
from traindoc.diagnose import timeout


def _load(tmp_path: Path, text: str, engine: str = "plain") -> traindoc.Incident:
    (tmp_path / "job.log").write_text(text)
    return traindoc.load(str(tmp_path / "job.log"), engine=engine, workers=1)


def _both(tmp_path: Path, text: str) -> traindoc.Incident:
    """The incident the plain engine reads, checked equal to the fast engine's."""
    plain, fast = _load(tmp_path, text, "plain"), _load(tmp_path, text, "fast")
    for t in plain.tables:
        pd.testing.assert_frame_equal(plain.tables[t], fast.tables[t], obj=t)
    return plain


# -- a Ray actor's prefix (after a collector's time) before torch's global [rankN]: tag; the
# message's [Rank N] is the rank inside a sub-group -------------------------------------------

RAY_STACKED = [
    # verl-project/verl#1309: collector time, Ray actor with ip, [rank15]:, group-local Rank 1
    ("[2025-05-10 00:18:21] (WorkerDict pid=1230, ip=train-1316148307689748608-9zzm714v3bpc-worker-0) "
     "[rank15]:[E510 00:18:19.328053719 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective "
     "operation timeout: WorkNCCL(SeqNum=3, OpType=BROADCAST, NumelIn=1, NumelOut=1, "
     "Timeout(ms)=1800000) ran for 1800041 milliseconds before timing out.\n"
     "[2025-05-10 00:18:21] (WorkerDict pid=1230, ip=train-1316148307689748608-9zzm714v3bpc-worker-0) "
     "[rank15]:[E510 00:18:19.328151517 ProcessGroupNCCL.cpp:2168] [PG ID 4 PG GUID 20(mesh_tp) "
     "Rank 1]  failure detected by watchdog at work sequence id: 3 PG status: last enqueued work: 3, "
     "last completed work: 2\n", 15, "BROADCAST", 3, "mesh_tp"),
    # vllm-project/vllm#6042: Ray actor without ip or time, [rank1]: in the TP group "PG 1"
    ("(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught "
     "collective operation timeout: WorkNCCL(SeqNum=158046, OpType=GATHER, NumelIn=2867200, "
     "NumelOut=0, Timeout(ms)=600000) ran for 600027 milliseconds before timing out.\n"
     "(RayWorkerWrapper pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:1537] [PG 1 Rank 1] Timeout at "
     "NCCL work: 158046, last enqueued NCCL work: 158046, last completed NCCL work: 158045.\n",
     1, "GATHER", 158046, "1"),
]


@pytest.mark.parametrize(("text", "rank", "op", "seq", "pg"), RAY_STACKED)
def test_ray_actor_prefix_then_the_global_rank_tag(tmp_path: Path, text: str, rank: int, op: str,
                                                     seq: int, pg: str) -> None:
    a = timeout.analyse(_both(tmp_path, text))
    assert a.timed_out_ranks == [rank]
    assert (a.op_type, a.seq_num) == (op, seq)
    assert pg in (a.process_group or "")


def test_a_collector_time_before_a_ray_prefix_is_a_prefix() -> None:
    from traindoc.parse.prefixes import demux

    # the same stack, the time unbracketed (a collector's "date +%F %T"), and the actor's own line
    body, origin = demux("2025-05-10 00:18:21 (WorkerDict pid=1230, ip=10.0.0.7) [rank15]:[E510 x] y")
    assert (body, origin.rank, origin.pid, origin.host) == ("[E510 x] y", 15, 1230, "10.0.0.7")
    assert origin.rank_global and origin.time is not None
    body, origin = demux("[2025-05-10 00:18:21] (TaskRunner pid=30064) step:3 - loss:0.1")
    assert (body, origin.pid, origin.rank) == ("step:3 - loss:0.1", 30064, None)
    # a time not followed by a prefix stays the line's text
    assert demux("[2025-05-10 00:18:21] (not a prefix) x")[0].startswith("[2025-05-10")


# -- ranks of one group that timed out in different collectives at nearby numbers: their order
# diverged (a desync), though no two name the same SeqNum -------------------------------------

def _wd(prefix: str, rank: int, seq: int, op: str, numel: tuple[int, int], ran: int,
        timeout_ms: int = 1800000) -> str:
    return (f"{prefix}[E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective operation "
            f"timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel[0]}, NumelOut={numel[1]}, "
            f"Timeout(ms)={timeout_ms}) ran for {ran} milliseconds before timing out.\n")


ORDER_DESYNC = [
    # naver/unic#1 (torch 2.2 wording, no prefix): rank 1 in ALLREDUCE #791, rank 3 in ALLGATHER #786
    (_wd("", 1, 791, "ALLREDUCE", (768, 768), 1800885)
     + _wd("", 3, 786, "ALLGATHER", (18063360, 72253440), 1802330), [1, 3]),
    # pytorch/torchtune#1107 ([rankN]: prefixes; rank 0's status line names PG 0, rank 1's none)
    (_wd("[rank1]:", 1, 313, "_ALLGATHER_BASE", (262668288, 525336576), 600010, 600000)
     + _wd("[rank0]:", 0, 315, "ALLREDUCE", (1, 1), 600095, 600000)
     + "[rank0]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 0] Timeout at NCCL work: 315, last "
       "enqueued NCCL work: 315, last completed NCCL work: 314.\n", [0, 1]),
    # NVIDIA-NeMo/Speech#13562 (torch 2.4 wording, pasted hard-wrapped at the terminal's width):
    # ranks 1, 2 in BROADCAST #532339, rank 0 past it, in _ALLGATHER_BASE #532341
    ("".join(f"[rank{r}]:[E513 13:25:57.714781669 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog "
             "caught collective operation timeout: WorkNCCL(SeqNum=532339, OpType=BROADCAST, "
             "NumelIn=5164000, NumelOut=5\n164000, Timeout(ms)=1800000) ran for 1800042 "
             "milliseconds before timing out.\n" for r in (2, 1))
     + "[rank0]:[E513 13:25:57.714786872 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
       "collective operation timeout: WorkNCCL(SeqNum=532341, OpType=_ALLGATHER_BASE, "
       "NumelIn=513, NumelOut\n=2052, Timeout(ms)=1800000) ran for 1800036 milliseconds before "
       "timing out.\n", [0, 1, 2]),
]


@pytest.mark.parametrize(("text", "ranks"), ORDER_DESYNC)
def test_ranks_in_different_collectives_are_a_desync(tmp_path: Path, text: str,
                                                     ranks: list[int]) -> None:
    a = timeout.analyse(_both(tmp_path, text))
    assert a.timed_out_ranks == ranks
    assert a.pattern == "desync"
    assert a.first_mismatch is not None and len(set(a.first_mismatch.ops.values())) == 2


def test_far_apart_or_same_op_is_no_desync(tmp_path: Path) -> None:
    # NVIDIA/nccl#1610: #216 and #57 are of two groups the watchdog lines do not name
    far = (_wd("[rank13]:", 1, 216, "ALLTOALL_BASE", (1379328, 1572864), 600045, 600000)
           + _wd("[rank15]:", 1, 57, "ALLREDUCE", (32, 32), 600045, 600000))
    assert timeout.analyse(_both(tmp_path, far)).pattern == "unknown"
    # pytorch/torchrec#189: the same op at #4188 and #4190 is no disagreement about the order
    same = (_wd("[rank1]:", 1, 4188, "ALLTOALL_BASE", (8, 8), 1803676)
            + _wd("[rank4]:", 4, 4190, "ALLTOALL_BASE", (8, 8), 1803657))
    assert timeout.analyse(_both(tmp_path, same)).pattern != "desync"


# -- the MetricLogger counter's line with its time and no loss: the last step and the epoch's
# length in the timeout runbook ---------------------------------------------------------------

METRIC_LOGGER = [
    # naver/unic#1 (its header "Training - Epoch: [e/E]", four spaces before time:)
    ("Training - Epoch: [0/10]  [ 30/117]  eta: 0:04:58    time: 3.221811  data: 0.000114  max mem: 9312\n"
     "Training - Epoch: [0/10]  [ 40/117]  eta: 0:04:18    time: 3.160756  data: 0.000113  max mem: 9312\n",
     40, 117),
    # torchvision's references' MetricLogger.log_every (copied by DeiT, DINO, MAE) with no meter
    # updated: header "Epoch: [e]", then the counter, eta, time, data, max mem (a 2x T4 run's
    # saved notebook output, quoted in a public write-up)
    ("Epoch: [1]  [   0/2353]  eta: 3:08:37  time: 4.8098  data: 0.9323  max mem: 1847\n"
     "Epoch: [1]  [2352/2353]  eta: 0:00:00  time: 0.3439  data: 0.0003  max mem: 1847\n", 2352, 2353),
]


@pytest.mark.parametrize(("text", "step", "total"), METRIC_LOGGER)
def test_metric_logger_lines_without_a_loss_are_progress(tmp_path: Path, text: str, step: int,
                                                         total: int) -> None:
    a = timeout.analyse(_both(tmp_path, text))
    assert (a.progress.step, a.progress.total) == (step, total)


# -- the run's length a trainer's start-up header states, where no bar or step line gives it -----

WATCHDOG = ("[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n")


@pytest.mark.parametrize(("header", "total"), [
    # zhiyuanhubj/logic-rl-formula's grpo.log (older verl: the driver actor is "main_task")
    ("(main_task pid=2105103) Total training steps: 560\n", 560),
    # Foo1szz/verl's train.out (verl's ray_trainer under its TaskRunner actor)
    ("(TaskRunner pid=625502) Total training steps: 3746\n", 3746),
    # AnshDhalla1/PyTorch_finetune_GPT2's train.log (a hand-written loop's logger)
    ("INFO:__main__:\N{DIRECT HIT} Total training steps: 13002\n", 13002),
    # HF Trainer's "***** Running training *****" header (LLaMA-Factory's prefix)
    ("[INFO|2024-11-26 22:07:15] trainer.py:2321 >>   Total optimization steps = 17,000\n", 17000),
    # cattidea/VinVL-Paddle log/workerlog.0 (the run's steps after the epoch's "Num Iters: 4425";
    # corpus timeout-vinvl-paddle-workerlog)
    ("02/13/2022 23:10:01 - INFO - Num Iters: 4425\n"
     "02/13/2022 23:10:01 - INFO - Optim Steps: 132750\n", 132750),
    # fairseq <= 0.10's Namespace of arguments (tianxiexiaozhu77/syngec bash/english_exp/1.py;
    # corpus timeout-syngec-glat-enro-8gpu-train), trimmed to its neighbours
    ("2023-06-13 17:29:41 | INFO | fairseq_cli.train | Namespace(activation_dropout=0.0, "
     "lr_scheduler='inverse_sqrt', max_epoch=0, max_source_positions=1024, max_tokens=4096, "
     "max_tokens_valid=4096, max_update=300000, maximize_best_checkpoint_metric=True)\n", 300000),
    # fairseq >= 0.10.2's hydra config dict, the optimization's limit first, the lr scheduler's
    # copy after it (a data2vec run's printed cfg; facebookresearch/fairseq#3215 the same wording)
    # torchtitan's start-up line (pytorch/torchtitan#810; corpus gpu_crash-torchtitan-810)
    ("[rank0]:2025-01-28 13:23:00,193 - root - INFO - Training starts at step 1, with local batch "
     "size 8, global batch size 16, sequence length 2048, total steps 10 (warmup 2)\n", 10),
    # torchtitan since 2025, its fork under ezpz's logger (corpus
    # gpu_crash-auroragpt-torchtitan-aurora)
    ("  [2025-09-11 14:09:20,263362][I][blendcorpus/train:372:__init__] Trainer is initialized "
     "with local batch size 1, global batch size 24, gradient accumulation steps 1, sequence "
     "length 4096, total steps 1000 (warmup 2)\n", 1000),
    ("{'_name': None, 'optimization': {'_name': None, 'max_epoch': 0, 'max_update': 400000, "
     "'stop_time_hours': 0.0, 'clip_norm': 0.0}, 'lr_scheduler': {'_name': 'tri_stage', "
     "'max_update': 400000, 'lr': [0.0005]}}\n", 400000),
])
def test_the_headers_run_length_is_the_total(tmp_path: Path, header: str, total: int) -> None:
    a = timeout.analyse(_both(tmp_path, header + WATCHDOG))
    assert a.progress.total == total and a.progress.step is None


def test_fairseq_without_an_update_limit_states_no_total(tmp_path: Path) -> None:
    # facebookresearch/fairseq#3215: a run limited by epochs ("max_update': 0": no limit)
    text = ("{'optimization': {'_name': None, 'max_epoch': 2, 'max_update': 0, "
            "'stop_time_hours': 0.0, 'clip_norm': 0.0}}\n" + WATCHDOG)
    assert timeout.analyse(_both(tmp_path, text)).progress.total is None


def test_two_headers_that_disagree_state_no_total(tmp_path: Path) -> None:
    text = "Total training steps: 560\nTotal training steps: 3746\n" + WATCHDOG
    assert timeout.analyse(_both(tmp_path, text)).progress.total is None


# -- c10's [rankN] log prefix quoted without its colon, the watchdog's message wrapped after
# "timeout:" (no ProcessGroupNCCL.cpp header, no "ran for") -------------------------------------

@pytest.mark.parametrize(("text", "rank"), [
    # NVIDIA-NeMo/RL#2462 (the reporter's debug log; corpus timeout-nemo-rl-2462)
    ("[rank3] Watchdog caught collective operation timeout:\n"
     "WorkNCCL(SeqNum=64214, OpType=ALLGATHER, NumelIn=1, NumelOut=32, Timeout(ms)=600000)\n", 3),
    # the same line as torch prints it, its prefix whole (hiyouga/LlamaFactory#7396)
    ("[rank3]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught "
     "collective operation timeout: WorkNCCL(SeqNum=64214, OpType=ALLGATHER, NumelIn=1, "
     "NumelOut=32, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.\n", 3),
])
def test_a_bare_rank_tag_names_the_rank_that_timed_out(tmp_path: Path, text: str,
                                                        rank: int) -> None:
    a = timeout.analyse(_both(tmp_path, text))
    assert a.timed_out_ranks == [rank]
    assert (a.op_type, a.seq_num, a.timeout_ms) == ("ALLGATHER", 64214, 600000)


# -- torch.multiprocessing.spawn re-raising a process's exception: the traceback after its
# "-- Process N terminated with the following error:" header is process N's (a local rank) ----

YOLOV7_D2_66 = (  # lucasjinreal/yolov7_d2#66 (corpus timeout-yolov7-d2-66), torch 1.11
    "    raise ProcessRaisedException(msg, error_index, failed_process.pid)\n"
    "torch.multiprocessing.spawn.ProcessRaisedException: \n"
    "-- Process 1 terminated with the following error:\n"
    "File \"anaconda3/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py\", line "
    "2067, in all_gather\n"
    "    work.wait()\n"
    "RuntimeError: [/opt/conda/conda-bld/pytorch_1646755897462/work/third_party/gloo/gloo/"
    "transport/tcp/unbound_buffer.cc:136] Timed out waiting 1800000ms for send operation to "
    "complete\n")
# torch <= 1.8 raised a plain Exception with the same header (lkeab/BCNet#53's header and the
# first frame of its traceback), then the gloo line as detectron2 users report it from the same
# all_gather (facebookresearch/detectron2#3243): two posts' lines put together
BCNET_53 = (
    "Exception: \n\n"
    "-- Process 3 terminated with the following error:\n"
    "Traceback (most recent call last):\n"
    "  File \"/data1/mazeyu/BCNet-main/detectron2/engine/train_loop.py\", line 131, in train\n"
    "    self.run_step()\n"
    "torch/distributed/distributed_c10d.py\", line 1870, in all_gather\n"
    "    work.wait()\n"
    "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:136] Timed out "
    "waiting 1800000ms for send operation to complete\n")


@pytest.mark.parametrize(("text", "rank"), [(YOLOV7_D2_66, 1), (BCNET_53, 3)])
def test_a_spawned_process_traceback_names_its_rank(tmp_path: Path, text: str, rank: int) -> None:
    a = timeout.analyse(_both(tmp_path, text))
    assert a.timed_out_ranks == [rank] and a.timeout_ms == 1800000


def test_a_timeout_before_the_spawn_header_is_not_that_process(tmp_path: Path) -> None:
    gloo = YOLOV7_D2_66.splitlines(keepends=True)[-1]
    a = timeout.analyse(_both(tmp_path, gloo + YOLOV7_D2_66.replace(gloo, "")))
    assert a.timed_out_ranks == []


def test_the_spawn_header_is_a_local_rank_that_exited() -> None:
    from traindoc.parse.errors import parse_exit
    assert parse_exit("-- Process 1 terminated with the following error:") == {
        "local_rank": 1, "exitcode": 1}
    # PaddlePaddle's python/paddle/distributed/spawn.py prints it between dashed rules
    assert parse_exit("Process 0 terminated with the following error:") == {
        "local_rank": 0, "exitcode": 1}


# -- the few ranks of the world that printed no timeout where every other rank did: a collective
# of the whole world completes once every rank enters it, so they never entered it -------------

EFFICIENT_LLMS = (Path(__file__).parent.parent / "data" / "corpus" / "timeout"
                  / "timeout-efficient-llms-hanging-run-out" / "logs" / "hanging_run_out.txt")


def _efficient_llms(watchdogs: range, end: bool = True) -> str:
    """esemsc-gts124/Efficient-LLMs hanging_run_out.txt (corpus timeout-efficient-llms-hanging-
    run-out): the 8 ranks' NCCL communicator lines, the watchdog block of ``watchdogs`` (its
    lines' offsets: 0-15 is every rank but 7), torchrun's report of the failure after it."""
    lines = EFFICIENT_LLMS.read_text().splitlines(keepends=True)
    comm = [t for t in lines[235:249] if "NCCL INFO comm 0x" in t]
    block = [lines[1271 + i] for i in watchdogs if "NCCL INFO" not in lines[1271 + i]]
    return "".join(comm + block + (lines[1347:1348] if end else []))


def test_the_rank_silent_where_the_rest_of_the_world_timed_out_never_entered(
        tmp_path: Path) -> None:
    a = timeout.analyse(_both(tmp_path, _efficient_llms(range(16))))
    assert a.timed_out_ranks == [0, 1, 2, 3, 4, 5, 6]
    assert a.lagging_ranks == [7] and a.pattern == "straggler"


def test_a_paste_cut_inside_the_timeouts_names_no_one(tmp_path: Path) -> None:
    a = timeout.analyse(_both(tmp_path, _efficient_llms(range(16), end=False)))
    assert a.lagging_ranks == [] and a.pattern == "unknown"


def test_most_ranks_silent_are_no_stragglers(tmp_path: Path) -> None:
    # two ranks' timeouts of eight: the other six may have been torn down first
    a = timeout.analyse(_both(tmp_path, _efficient_llms(range(5))))
    assert a.timed_out_ranks == [0, 2] and a.lagging_ranks == []


# -- torchtitan logs rank 0 alone (--local-ranks-filter 0); torchrun then reports every rank
# ended by SIGABRT, as each watchdog ends a rank whose collective timed out: no straggler ------

def _rank0_then_all_aborted(world: int, other: str = "-6 (pid: {pid})  (SIGABRT)") -> str:
    # pytorch/torchtitan outputs/autoresearch/may19-qwen3-14b/run285-…/run.log (corpus)
    text = ("[rank0]:[E520 06:31:05.050097785 ProcessGroupNCCL.cpp:757] [Rank 0] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=3, OpType=_ALLGATHER_BASE, "
            "NumelIn=97239680, NumelOut=777917440, Timeout(ms)=300000) ran for 300051 milliseconds"
            " before timing out.\n"
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
            "========================================================\n"
            "torchtitan.train FAILED\n"
            "--------------------------------------------------------\n"
            "Failures:\n")
    for i, r in enumerate(range(1, world)):
        ex = other.format(pid=2763832 + r)
        text += (f"[{i + 1}]:\n  time      : 2026-05-20_06:32:05\n  host      : devgpu020\n"
                 f"  rank      : {r} (local_rank: {r})\n  exitcode  : {ex}\n"
                 f"  error_file: <N/A>\n  traceback : Signal 6 (SIGABRT) received by PID "
                 f"{2763832 + r}\n" if "SIGABRT" in ex else
                 f"[{i + 1}]:\n  time      : 2026-05-20_06:32:05\n  host      : devgpu020\n"
                 f"  rank      : {r} (local_rank: {r})\n  exitcode  : {ex}\n"
                 f"  error_file: <N/A>\n  traceback : To enable traceback see: "
                 "https://pytorch.org/docs/stable/elastic/errors.html\n")
    return text + "--------------------------------------------------------\n"


def test_ranks_the_launcher_reports_aborted_are_no_stragglers(tmp_path: Path) -> None:
    r = timeout.diagnose(_both(tmp_path, _rank0_then_all_aborted(8)))
    assert r.facts["timed_out_ranks"] == [0]
    assert r.facts["lagging_ranks"] == []
    assert str(r.facts["pattern"].value) in ("unknown", "all_stuck")


def test_a_rank_that_exited_otherwise_is_still_named(tmp_path: Path) -> None:
    r = timeout.diagnose(_both(tmp_path, _rank0_then_all_aborted(4, other="1 (pid: {pid})")))
    assert r.facts["lagging_ranks"] == [1, 2, 3]


# -- NCCL_DEBUG_SUBSYS=COLL's per-call trace: where each rank is in its communicator ------------

def _coll(prefix: str, op: str, op_count: str, count: int, dtype: int = 7) -> str:
    return (f"{prefix} NCCL INFO {op}: opCount {op_count} sendbuff 0x7f5dd32b2100 recvbuff "
            f"0x7f5dd32b2100 count {count} datatype {dtype} op 0 root 0 comm 0x55bef0201370 "
            "[nranks=4] stream 0x55bef0208bd0\n")


def test_coll_trace_ranks_in_different_ops_at_one_opcount_are_a_desync(tmp_path: Path) -> None:
    # ROCm/rccl#429 (maintainer's quote): rank 0 in AllReduce, rank 2 in AllGather at 28c, 28d
    text = (_coll("h03r3n06:45006:45006 [0]", "AllReduce", "28c", 9984512)
            + _coll("h03r3n06:45006:45006 [0]", "AllReduce", "28d", 8149504)
            + _coll("h03r3n06:45012:45012 [2]", "AllGather", "28c", 59205120, 0)
            + _coll("h03r3n06:45012:45012 [2]", "AllGather", "28d", 15360, 0))
    a = timeout.analyse(_both(tmp_path, text))
    assert a.pattern == "desync"
    assert a.first_mismatch is not None and a.first_mismatch.seq_num == 0x28C


def test_coll_trace_send_recv_and_several_hosts_name_no_one(tmp_path: Path) -> None:
    # NVIDIA/nccl#584: Send/Recv at one opCount is a pair, not a desync
    p2p = (_coll("ubuntu:199574:201142 [1]", "Send", "12", 2420736)
           + _coll("ubuntu:199575:201143 [0]", "Recv", "12", 2420736))
    assert timeout.analyse(_both(tmp_path, p2p)).pattern == "unknown"
    # NVIDIA/nccl#1193 (Ray, 128 ranks): device [2] of two hosts names no lagging rank
    hosts = (_coll("(RayTrainWorker pid=615, ip=10.72.7.6) node-a:615:18953 [2]", "AllReduce",
                   "139d", 7382228)
             + _coll("(RayTrainWorker pid=619, ip=10.72.2.6) node-b:619:19049 [2]", "AllReduce",
                     "139e", 7066572))
    assert timeout.analyse(_both(tmp_path, hosts)).pattern == "unknown"


# -- the rank behind: its watchdog says it never enqueued the collective the other rank is in --

# SWivid/F5-TTS#346: rank 1 enqueued up to 215121, rank 0 is in 215122 (same group)
F5_BEHIND = (
    "[rank1]:[E1030 03:19:32.584828663 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=215121, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=600000) ran for 600080 milliseconds before timing out.\n"
    "[rank1]:[E1030 03:19:32.585495736 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) "
    "Rank 1] Exception (either an error or timeout) detected by watchdog at work: 215121, last "
    "enqueued NCCL work: 215121, last completed NCCL work: 215120.\n"
    "[rank0]:[E1030 03:19:32.598350807 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=215122, OpType=BROADCAST, NumelIn=2149508, "
    "NumelOut=2149508, Timeout(ms)=600000) ran for 600093 milliseconds before timing out.\n"
    "[rank0]:[E1030 03:19:32.599256168 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) "
    "Rank 0] Exception (either an error or timeout) detected by watchdog at work: 215122, last "
    "enqueued NCCL work: 215122, last completed NCCL work: 215121.\n")


def test_the_rank_that_never_enqueued_the_others_collective_lags(tmp_path: Path) -> None:
    f = timeout.diagnose(_both(tmp_path, F5_BEHIND)).facts
    assert f["lagging_ranks"] == [1]
    assert f["pattern"] == "straggler"



def test_a_rank_past_the_others_collectives_names_no_straggler(tmp_path: Path) -> None:
    # the verl-agent SFT run (2025-11-18): rank 0 completed up to 2666, past rank 1's last
    # enqueued 2635 — the two streams went out of step, rank 1 is no rank behind in one stream
    text = (
        "[rank1]:[E1118 20:32:23.955028747 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=2635, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=1800000) ran for 1800024 milliseconds before timing out.\n"
        "[rank1]:[E1118 20:32:23.957372583 ProcessGroupNCCL.cpp:2168] [PG ID 0 PG GUID 0(default_pg) "
        "Rank 1]  failure detected by watchdog at work sequence id: 2635 PG status: last enqueued "
        "work: 2635, last completed work: 2634\n"
        "[rank0]:[E1118 20:32:23.968558948 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=2667, OpType=_REDUCE_SCATTER_BASE, "
        "NumelIn=46797824, NumelOut=23398912, Timeout(ms)=1800000) ran for 1800053 milliseconds "
        "before timing out.\n"
        "[rank0]:[E1118 20:32:23.969084696 ProcessGroupNCCL.cpp:2168] [PG ID 0 PG GUID 0(default_pg) "
        "Rank 0]  failure detected by watchdog at work sequence id: 2667 PG status: last enqueued "
        "work: 2689, last completed work: 2666\n")
    f = timeout.diagnose(_both(tmp_path, text)).facts
    assert f["lagging_ranks"] == [] and f["pattern"] != "straggler"


def test_a_rank_the_launcher_tore_down_is_not_behind() -> None:
    # Polaris (PALS): ranks 1, 4-6 time out, then the launcher reports "rank 1 died from signal
    # 6 and dumped core" and "rank 7 died from signal 15" — SIGTERM is how it ends the others,
    # so rank 7 is not named as a rank that never entered BROADCAST #1145 (rank 1 is: it timed
    # out at SeqNum 7, a thousand collectives behind)
    logs = (Path(__file__).parent.parent / "data" / "corpus" / "timeout"
            / "timeout-alcf-nccl-tests-vae-with-aws-20250115" / "logs")
    a = timeout.analyse(traindoc.load(str(logs)))
    assert a.lagging_ranks == [1]
