"""Reports that name the ranks that never arrived, and timeouts at start-up: each family read on
real lines from at least two sources (repo#number, or the file they come from)."""

from __future__ import annotations

from pathlib import Path

import pytest

import traindoc
from traindoc.diagnose import deadlock, timeout
from traindoc.parse.collectives import (
    parse_dump_signal,
    parse_socket_timeout,
    parse_store_barrier,
    parse_store_clients,
    parse_store_wait,
    startup_line,
)
from traindoc.parse.missing_ranks import (
    MissingRanksBlock,
    absl_duration_ms,
    parse_desync_lagging,
    parse_fr_inline,
    parse_jax_heartbeat,
    parse_stall,
)


def facts(tmp_path: Path, text: str) -> dict:
    p = tmp_path / "job.log"
    p.write_text(text)
    return timeout.diagnose(traindoc.load(p)).facts


# -- start-up: init_process_group's store-based barrier ------------------------------------------

STORE_BARRIER = [
    # facebookresearch/metaseq#52 (torch 1.x: "on rank: N", worker_count)
    ("RuntimeError: Timed out initializing process group in store based barrier on rank: 4330, "
     "for key: store_based_barrier_key:522 (world_size=2048, worker_count=1792, timeout=0:30:00)",
     4330, 1_800_000),
    # tczhangzhi/pytorch-distributed#18
    ("RuntimeError: Timed out initializing process group in store based barrier on rank: 2, for "
     "key: store_based_barrier_key:1 (world_size=2, worker_count=4, timeout=0:30:00)", 2, 1_800_000),
    # epfml/powersgd#21 (no exception name, a 2-minute timeout)
    ("Timed out initializing process group in store based barrier on rank: 0, for key: "
     "store_based_barrier_key:1 (world_size=2, worker_count=4, timeout=0:02:00)", 0, 120_000),
    # torch 2.x wording, pytorch/pytorch torch/distributed/distributed_c10d.py
    # (_store_based_barrier raises DistStoreError: "on rank {}", "num_workers_joined={}")
    ("torch.distributed.DistStoreError: Timed out initializing process group in store based "
     "barrier on rank 5, for key: store_based_barrier_key:1 (world_size=8, num_workers_joined=6, "
     "timeout=0:00:30 error=...)", 5, 30_000),
]


@pytest.mark.parametrize(("line", "rank", "ms"), STORE_BARRIER)
def test_store_barrier_timeout(line: str, rank: int, ms: int) -> None:
    row = parse_store_barrier(line)
    assert row is not None and row["rank"] == rank and row["timeout_ms"] == ms
    assert row["state"] == "timed_out" and row["_named_rank"]


def test_store_barrier_ranks_and_timeout_reach_the_facts(tmp_path: Path) -> None:
    # deepspeedai/Megatron-DeepSpeed#338: two ranks, 30 s, the missing members unnamed
    f = facts(tmp_path, "\n".join([
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 7, for"
        " key: store_based_barrier_key:32 (world_size=8, worker_count=4, timeout=0:00:30)",
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 5, for"
        " key: store_based_barrier_key:32 (world_size=8, worker_count=4, timeout=0:00:30)", ""]))
    assert f["timed_out_ranks"] == [5, 7] and f["timeout_ms"] == 30_000
    assert f["pattern"] == "unknown" and f["lagging_ranks"] == []


# The barrier's timeout alone: its rank arrived; where the ranks that timed out are exactly the
# worker_count that joined, the rest of world_size never did, and are named.
STORE_TIMEOUTS = [
    # neu-vi/ezflow#194 (the whole report is this line)
    ("RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for "
     "key: store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)\n",
     [0], [1], "straggler"),
    # NVIDIA/Megatron-LM#782 (the same family, a 10-minute timeout)
    ("RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for "
     "key: store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:10:00)\n",
     [0], [1], "straggler"),
    # tunib-ai/parallelformers#54: more workers than the world (a stale launch): nobody is named
    ("RuntimeError: Timed out initializing process group in store based barrier on rank: 7, for "
     "key: store_based_barrier_key:1 (world_size=8, worker_count=9, timeout=0:30:00)\n",
     [7], [], "unknown"),
    # deepspeedai/Megatron-DeepSpeed#338: 2 ranks printed of the 4 that joined: the 4 missing
    # ones are not known
    ("RuntimeError: Timed out initializing process group in store based barrier on rank: 7, for"
     " key: store_based_barrier_key:32 (world_size=8, worker_count=4, timeout=0:00:30)\n"
     "RuntimeError: Timed out initializing process group in store based barrier on rank: 5, for"
     " key: store_based_barrier_key:32 (world_size=8, worker_count=4, timeout=0:00:30)\n",
     [5, 7], [], "unknown"),
]


@pytest.mark.parametrize(("text", "timed_out", "lagging", "pattern"), STORE_TIMEOUTS)
def test_store_barrier_timeout_names_the_ranks_that_never_joined(
        tmp_path: Path, text: str, timed_out: list[int], lagging: list[int], pattern: str) -> None:
    f = facts(tmp_path, text)
    assert f["timed_out_ranks"] == timed_out and f["lagging_ranks"] == lagging
    assert f["pattern"] == pattern
    # a store-based barrier is no collective: no OpType, its key in process_group
    assert f["op_type"] is None and f["process_group"].startswith("store_based_barrier_key:")


def test_store_barrier_verdict_names_the_barrier(tmp_path: Path) -> None:
    # neu-vi/ezflow#194: the verdict says where the rank waited, though op_type is null
    p = tmp_path / "job.log"
    p.write_text(STORE_TIMEOUTS[0][0])
    rep = timeout.diagnose(traindoc.load(p))
    assert "store-based barrier (store_based_barrier_key:1)" in rep.verdict
    assert "rank 1 never entered it" in rep.verdict


def test_the_waiting_line_is_no_timeout() -> None:
    # ultralytics/yolov5#4574: the barrier still waiting, INFO every 10 s
    assert parse_store_barrier(
        "Waiting in store based barrier to initialize process group for rank: 0, key: "
        "store_based_barrier_key:1 (world_size=4, worker_count=8, timeout=0:30:00)") is None


# The waiting lines alone (the barrier has not raised yet): the runbook reads the barrier and its
# timeout from them, in any wording of torch's timedelta.
STORE_WAITS = [
    # uzh-rpg/RVT#18 (hydra's logger prefix, rank 1 never joins)
    ("[2023-07-14 17:56:10,371][torch.distributed.distributed_c10d][INFO] - Waiting in store based"
     " barrier to initialize process group for rank: 0, key: store_based_barrier_key:1 "
     "(world_size=2, worker_count=1, timeout=0:30:00)", 1_800_000, [1]),
    # huggingface/accelerate#1401 (the second key; rank 0 alone of 8 arrived: the rest never did)
    ("05/10/2023 23:07:45 - INFO - torch.distributed.distributed_c10d - Waiting in store based "
     "barrier to initialize process group for rank: 0, key: store_based_barrier_key:2 "
     "(world_size=8, worker_count=1, timeout=0:30:00)", 1_800_000, list(range(1, 8))),
    # ultralytics/yolov5#4290 (a one-minute timeout, more arrivals than the world)
    ("Waiting in store based barrier to initialize process group for rank: 3, key: "
     "store_based_barrier_key:1 (world_size=4, worker_count=8, timeout=0:01:00)", 60_000, []),
    # AlibabaResearch/efficientteacher#85 (a timedelta of a day)
    ("Waiting in store based barrier to initialize process group for rank: 0, key: "
     "store_based_barrier_key:1 (world_size=2, worker_count=4, timeout=1 day, 0:00:00)",
     86_400_000, []),
]


@pytest.mark.parametrize(("line", "ms", "lagging"), STORE_WAITS)
def test_store_barrier_wait_gives_its_timeout(tmp_path: Path, line: str, ms: int,
                                              lagging: list[int]) -> None:
    f = facts(tmp_path, line + "\n" + line + "\n")
    # no collective, no OpType: the barrier is named by its key
    assert f["op_type"] is None and f["process_group"].startswith("store_based_barrier_key:")
    assert f["timeout_ms"] == ms
    assert f["timed_out_ranks"] == [] and f["lagging_ranks"] == lagging


def test_store_barrier_timeout_of_a_day() -> None:
    # the raised form with a timedelta of a day (AlibabaResearch/efficientteacher#85's waiting
    # line, raised by the same format string)
    row = parse_store_barrier(
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for "
        "key: store_based_barrier_key:1 (world_size=2, worker_count=4, timeout=1 day, 0:00:00)")
    assert row is not None and row["timeout_ms"] == 86_400_000


# -- start-up: the c10d client socket (rendezvous, TCPStore) --------------------------------------

SOCKET = [
    # pytorch/pytorch#107021
    ("[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect"
     " to 192.0.0.1:1234", 60_000),
    # vllm-project/vllm#19670 (torch 2.x: milliseconds, "(host, port)")
    ("torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while "
     "trying to connect to (172.17.0.9, 46229).", 600_000),
]


@pytest.mark.parametrize(("line", "ms"), SOCKET)
def test_socket_timeout(line: str, ms: int) -> None:
    row = parse_socket_timeout(line)
    assert row == {"rank": None, "timeout_ms": ms, "state": "timed_out"}


# -- start-up: torchelastic's rendezvous ----------------------------------------------------------

RENDEZVOUS = [
    # torch 2.0's dynamic rendezvous raises the class bare: the trace's last line (a job script's
    # pasted trace, search index file 11802815379; the index names no repo; likewise the trace of
    # ymcui/Chinese-LLaMA-Alpaca-2#274, torchrun 2.0.1 on two nodes)
    "    raise RendezvousTimeoutError()\n"
    "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError\n",
    # facebookresearch/av_hubert#19: the elastic error handler's JSON record
    'ERROR:torch.distributed.elastic.multiprocessing.errors.error_handler:{\n'
    '  "message": {\n'
    '    "message": "RendezvousTimeoutError: ",\n',
]


@pytest.mark.parametrize("text", RENDEZVOUS)
def test_rendezvous_timeout_is_a_startup_timeout(tmp_path: Path, text: str) -> None:
    p = tmp_path / "job.log"
    p.write_text(text)
    a = timeout.analyse(traindoc.load(p))
    assert a.found and a.at_startup and a.timed_out_ranks == [] and a.op_type is None
    rep = timeout.report(a)
    assert "rendezvous did not complete" in rep.verdict and "in a collective" not in rep.verdict
    assert any(act.id == "check_startup" for act in rep.actions)


def test_the_raising_source_line_is_no_timeout() -> None:
    from traindoc.parse.collectives import parse_rendezvous_timeout
    assert parse_rendezvous_timeout("    raise RendezvousTimeoutError()") is None
    assert parse_rendezvous_timeout("    raise RendezvousTimeoutError") is None


# -- Horovod's stall inspector -------------------------------------------------------------------

def test_horovod_missing_ranks() -> None:
    # horovod/horovod#1012 (mpirun tag, a second tag spliced into the line) and horovod#534
    for line, op, missing in [
        ("[1,0]<stderr>:[2019-04-13 13:55:31.858146: W horovod/common/operations.cc[1,0]<stderr>"
         "::588] HorovodBroadcast_conv2d_1_kernel_0 [missing ranks: 1]",
         "HorovodBroadcast_conv2d_1_kernel_0", [1]),
        ("[1,0]<stderr>:Stalled ops:HorovodBroadcast_dense_1_bias_0 [missing ranks: 1]",
         "HorovodBroadcast_dense_1_bias_0", [1]),
        ("HorovodBroadcast_fully_connected_weights_0 [missing ranks: 0]",
         "HorovodBroadcast_fully_connected_weights_0", [0]),
    ]:
        rows = parse_stall(line) or []
        assert rows[0] == {"op_type": op, "state": "timed_out"}
        assert [r["rank"] for r in rows if r["state"] == "absent"] == missing


def test_horovod_ready_ranks() -> None:
    # horovod/horovod#336 (TF names with '/') and horovod#334 (before horovod#342: ready ranks)
    rows = parse_stall(
        "Stalled ops: HorovodAllreduce_loss_Mean_0 [ready ranks: 3], DistributedMomentumOptimizer_"
        "Allreduce/HorovodAllreduce_gradients_map_getter_Conv_Conv2D_grad_tuple_control_dependency"
        "_1_0 [ready ranks: 2, 0, 1]") or []
    assert [(r["op_type"][:16], r.get("rank"), r["state"]) for r in rows] == [
        ("HorovodAllreduce", None, "timed_out"), ("HorovodAllreduce", 3, "started"),
        ("DistributedMomen", None, "timed_out"), ("DistributedMomen", 2, "started"),
        ("DistributedMomen", 0, "started"), ("DistributedMomen", 1, "started")]
    assert not [r for r in rows if r["state"] == "absent"]  # a few ready: ops split, no lag
    rows = parse_stall("allreduce.conv1.weight [ready ranks: 5, 1, 4, 7, 2, 3]") or []
    assert {r.get("rank") for r in rows} == {None, 5, 1, 4, 7, 2, 3, 0, 6}
    # ranks count from 0: a gap below the highest ready rank lags; above it the world size is
    # not printed
    assert [r["rank"] for r in rows if r["state"] == "absent"] == [0, 6]


def test_horovod_ready_ranks_gaps_lag() -> None:
    # horovod/horovod#215 (32 ranks, 16 left out of both stalled ops' lists) and horovod#334
    # (ranks 2 and 3 left out of '1, 7, 5, 4, 6, 0')
    ready = ("21, 25, 26, 27, 28, 29, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 1, 3, 0, 15, 17, 18, 20, "
             "22, 23, 24, 31, 8, 19, 2, 30")
    rows = parse_stall(
        "WARNING: One or more tensors were submitted to be reduced, gathered or broadcasted by "
        "subset of ranks and are waiting for remainder of ranks for more than 60 seconds. [...] "
        "Stalled ops: training/SGD/DistributedSGD_Allreduce/HorovodAllreduce_training_SGD_gradien"
        f"ts_AddN_335_0 [ready ranks: {ready}]") or []
    assert [r["rank"] for r in rows if r["state"] == "absent"] == [16]
    rows = parse_stall("allreduce.conv1.weight [ready ranks: 1, 7, 5, 4, 6, 0]") or []
    assert [r["rank"] for r in rows if r["state"] == "absent"] == [2, 3]


def test_horovod_ready_ranks_are_the_deadlocks_processes(tmp_path: Path) -> None:
    # horovod/horovod#215's shape, eight ranks: the ready ranks are processes seen (no stack),
    # and so is the one left out, the outlier
    p = tmp_path / "job.log"
    p.write_text("WARNING: One or more tensors were submitted to be reduced, gathered or "
                 "broadcasted by subset of ranks and are waiting for remainder of ranks for more "
                 "than 60 seconds. Stalled ops: HorovodAllreduce_grad_0 [ready ranks: 3, 0, 7, 1, "
                 "2, 6, 4]\n")
    f = deadlock.diagnose(traindoc.load(p)).facts
    assert f["processes_seen"] == 8 and f["outlier_members"] == [5]


def test_horovod_stall_names_the_straggler(tmp_path: Path) -> None:
    f = facts(tmp_path, "WARNING: One or more tensors were submitted to be reduced, gathered or "
              "broadcasted by subset of ranks and are waiting for remainder of ranks for more "
              "than 60 seconds.\nStalled ops:\nHorovodBroadcast_conv_layer1_Conv_biases_0 "
              "[missing ranks: 0]\nHorovodBroadcast_conv_layer1_Conv_weights_0 [missing ranks: 0]\n")
    assert f["lagging_ranks"] == [0] and f["pattern"] == "straggler"
    assert "HorovodBroadcast" in f["op_type"]


# Horovod >= 0.19's stall report: a header, then one ``R: [ops]`` line per rank lacking those ops,
# behind mpirun's tag (whose ``0: `` is the report's rank column, no srun prefix)
HVD_WARNING = ("[1,0]<stderr>:[2021-02-10 17:39:53.403710: W horovod/common/stall_inspector.cc:105] "
               "One or more tensors were submitted to be reduced, gathered or broadcasted by subset "
               "of ranks and are waiting for remainder of ranks for more than 60 seconds. This may "
               "indicate that different ranks are trying to submit different tensors or that only "
               "subset of ranks is submitting tensors, which will cause deadlock.\n")
HVD_REPORTS = [
    # google/automl#563: each of two ranks lacks the ops the other waits in (no rank behind)
    ("Stalled ranks:\n0: [HorovodBroadcast_box_net_box_0_bias_0, "
     "HorovodBroadcast_box_net_box_0_bias_Momentum_0 ...]\n1: [DistributedMomentumOptimizer_"
     "Allreduce/HorovodAllreduce_gradients_AddN_100_0 ...]\n", [], [0, 1]),
    # horovod/horovod#2662 (the later header): rank 0 lacks every op, the others some
    ("Missing ranks:\n0: [broadcast.noname.3765, broadcast.noname.3873]\n"
     "1: [broadcast.noname.3873]\n2: [broadcast.noname.3765]\n3: [broadcast.noname.3765]\n",
     [0], [1, 2, 3]),
    # a stall report quoted in a comment of a TF training loop (the melt/gezi utilities): one rank,
    # one op
    ("Stalled ranks:\n0: [HorovodAllreduce_Const_9_0]\n", [0], []),
]


@pytest.mark.parametrize(("report", "behind", "waiting"), HVD_REPORTS)
def test_horovod_stalled_ranks_report(tmp_path: Path, report: str, behind: list[int],
                                      waiting: list[int]) -> None:
    p = tmp_path / "job.log"
    p.write_text(HVD_WARNING + "".join(f"[1,0]<stderr>:{line}\n" for line in report.splitlines()))
    c = traindoc.load(p).collectives
    named = c[c["state"].isin(["absent", "started"])]
    assert sorted(set(named.loc[named["state"] == "absent", "rank"])) == behind
    assert sorted(set(named.loc[named["state"] == "started", "rank"])) == waiting
    assert not c["op_type"].str.contains("...", regex=False).any()  # the report's elision
    assert (c.loc[c["state"] == "timed_out", "rank"] == 0).all()  # mpirun's tag: the printer


# polyaxon/polyaxon#657: Polyaxon's log viewer puts "<time> UTC master.0 -- " before mpirun's tag,
# a blank line after every line, and mpirun re-tags each piece Horovod's glog header was written in
POLYAXON_STALL = (
    "2020-01-15 22:44:33 UTC master.0 -- [1,0]<stderr>:[[1,0]<stderr>:2020-01-15 22:44:33"
    "[1,0]<stderr>:.[1,0]<stderr>:214399[1,0]<stderr>:: [1,0]<stderr>:W[1,0]<stderr>: "
    "[1,0]<stderr>:horovod/common/stall_inspector.cc[1,0]<stderr>::[1,0]<stderr>:105"
    "[1,0]<stderr>:] [1,0]<stderr>:One or more tensors were submitted to be reduced, gathered or "
    "broadcasted by subset of ranks and are waiting for remainder of ranks for more than 60 "
    "seconds.\n\n"
    "2020-01-15 22:44:33 UTC master.0 -- [1,0]<stderr>:Stalled ranks:\n\n"
    "2020-01-15 22:44:33 UTC master.0 -- [1,0]<stderr>:0: [HorovodAllreduce][1,0]<stderr>:\n\n")


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_horovod_report_behind_polyaxon_and_inner_mpi_tags(tmp_path: Path, engine: str) -> None:
    p = tmp_path / "master.log"
    p.write_text(POLYAXON_STALL)
    inc = traindoc.load(p, engine=engine)
    c = inc.collectives
    assert sorted(set(c.loc[c["state"] == "absent", "rank"])) == [0]
    assert set(c["op_type"]) == {"HorovodAllreduce"}
    assert deadlock.diagnose(inc).facts["outlier_members"] == [0]


@pytest.mark.parametrize(("report", "behind"), [
    # horovod/horovod#2564 (TF 2.4, Horovod 0.21): the report as the program printed it, no
    # launcher tag before its "1: [ops]" line
    ("Missing ranks:\n1: [DistributedGradientTape_Allreduce/cond_163/then/_1304/"
     "DistributedGradientTape_Allreduce/cond_163/HorovodAllreduce_AddN_103_0, "
     "DistributedGradientTape_Allreduce/cond_164/then/_1312/DistributedGradientTape_Allreduce/"
     "cond_164/HorovodAllreduce_gradient_tape_retinanet_post_hoc_d5_BiasAdd_BiasAddGrad_0]\n", [1]),
    # the corpus's deadlock-hvd-tf-worker-desync (HOROVOD_STALL_CHECK_TIME_SECONDS=10)
    ("Missing ranks:\n0: [cond_1/then/_10/cond_1/SGD/PartitionedCall/DistributedSGD_Allreduce/"
     "cond/then/_79/DistributedSGD_Allreduce/cond/HorovodAllreduce_grads_0]\n", [0]),
])
def test_horovod_report_without_a_launcher_tag_is_no_srun_prefix(tmp_path: Path, report: str,
                                                                behind: list[int]) -> None:
    # "N: [ops]" is the report's rank column, not srun -l's task id: the rank is the outlier
    p = tmp_path / "job.log"
    p.write_text(HVD_WARNING.removeprefix("[1,0]<stderr>:") + report)
    inc = traindoc.load(p)
    c = inc.collectives
    assert sorted(set(c.loc[c["state"] == "absent", "rank"])) == behind
    assert deadlock.diagnose(inc).facts["outlier_members"] == behind


@pytest.mark.parametrize(("text", "seen", "behind"), [
    # horovod/horovod#530 (Horovod before 0.19, mpirun --tag-output with a date): ready ranks
    # 0, 1, 3-6, rank 2 left out of every op: seven processes
    ("Stalled ops: HorovodBroadcast_InceptionV3_Logits_Conv2d_1c_1x1_weights_0 [ready ranks: 5, "
     "6, 3, 1, 4, 0]\nHorovodBroadcast_InceptionV3_AuxLogits_Conv2d_2a_5x5_weights_0 [ready "
     "ranks: 5, 6, 3, 1, 4, 0], \nFri Sep 28 11:14:00 2018[1,5]<stderr>:INFO:tensorflow:Running "
     "local_init_op.\n", 7, [2]),
    # horovod/horovod#1442 (0.18): the coordinator (mpirun's [1,0] tag) prints the report naming
    # rank 6; only those two are seen (its step lines carry no rank)
    (HVD_WARNING + "[1,0]<stderr>:Stalled ranks:\n[1,0]<stderr>:6: [horovod_allreduce.0, "
     "horovod_allreduce.1, horovod_allreduce.10, horovod_allreduce.100 ...]\n", 2, [6]),
    # HVD_TF_Worker_Desync_BugReport's README (no tag): rank 0 missing, the printer unknown
    (HVD_WARNING.removeprefix("[1,0]<stderr>:") + "Missing ranks:\n0: [cond_1/then/_10/cond_1/"
     "SGD/PartitionedCall/DistributedSGD_Allreduce/cond/HorovodAllreduce_grads_0]\n", 1, [0]),
])
def test_horovod_stall_reports_ranks_are_processes_seen(tmp_path: Path, text: str, seen: int,
                                                        behind: list[int]) -> None:
    # a rank the stall report names missing is a process of the running job (Horovod's
    # coordinator has its other requests), as is the rank that printed it
    p = tmp_path / "job.log"
    p.write_text(text)
    f = deadlock.diagnose(traindoc.load(p)).facts
    assert (f["processes_seen"], f["outlier_members"]) == (seen, behind)


def test_a_stall_reports_printer_is_shown_where_it_waits(tmp_path: Path) -> None:
    # google/automl#563: rank 0 prints the report and is ready in the allreduce rank 1 lacks:
    # its process is shown waiting there, not as the report's printer
    p = tmp_path / "job.log"
    p.write_text(HVD_WARNING + "".join(f"[1,0]<stderr>:{line}\n"
                                       for line in HVD_REPORTS[0][0].splitlines()))
    groups = deadlock.diagnose(traindoc.load(p)).facts["groups"]
    assert [(g["members"], g["signature"][:9]) for g in groups] == [([0], "(ready in"),
                                                                   ([1], "(ready in")]


def test_horovod_ranks_waiting_on_each_other_are_no_outlier(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_text(HVD_WARNING + "".join(f"[1,0]<stderr>:{line}\n"
                                       for line in HVD_REPORTS[0][0].splitlines()))
    f = deadlock.diagnose(traindoc.load(p)).facts
    assert f["processes_seen"] == 2 and f["outlier_members"] == []


# -- torch's desync report ----------------------------------------------------------------------

@pytest.mark.parametrize(("line", "ranks"), [
    # pytorch/pytorch#152623 (torch 2.7, "(count from 1)")
    ("             [7] finished collective #182, but didn't join collective #183 (count from 1)",
     [7]),
    # NVIDIA/nccl#2213 (as quoted there, without the suffix)
    ("[1] finished collective #1155873, but didn't join collective #1155874", [1]),
    # torch's TraceUtils.h ranksToString: several ranks, comma-separated
    ("     [0, 1, 2] finished collective #41207, but didn't join collective #41208", [0, 1, 2]),
    # TraceUtils.h analyzeLaggingRanks: ranks still inside the oldest collective
    ("[E ProcessGroupNCCL.cpp:470] [Rank 0]  - [47] joined but didn't finish collective #41207 "
     "(count from 1)", [47]),
    # TraceUtils.h analyzeMissingRanks (torch 1.13+): ranks that never joined any collective
    ("\t - To our best knowledge, ranks [1, 3] are the lagging ranks that caused this timeout. "
     "They never joined any collectives", [1, 3]),
])
def test_desync_report_names_lagging_ranks(line: str, ranks: list[int]) -> None:
    rows = parse_desync_lagging(line) or []
    joined = "joined but" in line  # inside the oldest collective: started, not absent
    assert [r["rank"] for r in rows] == ranks
    assert {r["state"] for r in rows} == {"started" if joined else "absent"}


# Every rank the report lists joined the collective and none finished: all stuck, none lagging.
DESYNC_ALL_JOINED = [
    # hiyouga/LlamaFactory#9496 (rank 6 prints it, 16 ranks, the snapshot's one state)
    ("[rank6]:[E1115 16:42:37.766242859 ProcessGroupNCCL.cpp:629] [Rank 6] Watchdog caught "
     "collective operation timeout: WorkNCCL(SeqNum=730, OpType=ALLREDUCE, NumelIn=544997376, "
     "NumelOut=544997376, Timeout(ms)=600000) ran for 600027 milliseconds before timing out.\n"
     "[rank6]:[E1115 16:42:37.768057301 ProcessGroupNCCL.cpp:1936] Rank 6\n"
     "\t - [6] Timeout at collective: ALLREDUCE, #730\n"
     "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
     "\t   - [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] joined but didn't finish "
     "collective #730 (count from 1)\n", list(range(16))),
]


@pytest.mark.parametrize(("text", "joined"), DESYNC_ALL_JOINED)
def test_desync_report_where_every_rank_joined_is_all_stuck(tmp_path: Path, text: str,
                                                            joined: list[int]) -> None:
    f = facts(tmp_path, text)
    assert f["timed_out_ranks"] == [6] and f["lagging_ranks"] == []
    assert f["pattern"] == "all_stuck"


def test_joined_ranks_of_a_report_with_no_printing_rank() -> None:
    # saforem2/ezpz docs/guides/lora-fsdp-deadlock.md (every rank's watchdog dump, TORCH_NCCL_
    # DESYNC_DEBUG=1; no comma spaces): the eight ranks are in the collective, not absent
    rows = parse_desync_lagging("  [0,1,2,3,4,5,6,7] joined but didn't finish collective #39") or []
    assert [r["rank"] for r in rows] == list(range(8))
    assert {r["state"] for r in rows} == {"started"}


def test_desync_report_makes_a_straggler(tmp_path: Path) -> None:
    # NVIDIA/nccl#2213: the watchdog line of rank 0 and the report naming rank 1
    f = facts(tmp_path, "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum="
              "1155874, OpType=ALLREDUCE, NumelIn=9445376, NumelOut=9445376, Timeout(ms)=1800000)"
              " ran for 1800002 milliseconds before timing out.\n\n[1] finished collective "
              "#1155873, but didn't join collective #1155874\n")
    assert f["timed_out_ranks"] == [0] and f["lagging_ranks"] == [1]
    assert f["pattern"] == "straggler" and f["seq_num"] == 1155874


# -- fr_trace / torchfrtrace -----------------------------------------------------------------------

FR_TUTORIAL = """$torchfrtrace --prefix "trace_" /tmp/
Not all ranks joining collective 5 at entry 4
group info: 0:default_pg
collective: nccl:all_reduce
missing ranks: {1}
input sizes: [[3, 4]]
output sizes: [[3, 4]]
expected ranks: 2
collective state: scheduled
collective stack trace:
  all_reduce at /home/cpio/local/pytorch/torch/distributed/distributed_c10d.py:2696
"""  # pytorch/tutorials prototype_source/flight_recorder_tutorial.rst

FR_140969 = """Not all ranks joining collective: sequence number: 31117
internal record id: 31116
group info: 0:default_pg
collective: nccl:all_reduce
missing ranks: {3, 4, 5, 6, 7}
input sizes: [[1571911]]
output sizes: [[1571911]]
world size: 8
expected ranks: {0, 1, 2, 3, 4, 5, 6, 7}
collective state: scheduled
"""  # pytorch/pytorch#140969 (the newer wording: "sequence number", "internal record id")


# fr_trace's first text report (tools/flight_recorder builder.py, a print of two f-strings
# joined by a space, then sizes, the expected rank count and the state)
FR_PRINT = ("Not all ranks joining collective for group 0:default_pg collective nccl:all_reduce  "
            "Missing ranks are {1, 3}  [[3, 4]] [[3, 4]] 4 scheduled  ")


def test_fr_trace_printed_line() -> None:
    rows = parse_fr_inline(FR_PRINT) or []
    assert [(r["rank"], r["op_type"], r["process_group"], r["state"]) for r in rows] == [
        (1, "nccl:all_reduce", "0 (default_pg)", "absent"),
        (3, "nccl:all_reduce", "0 (default_pg)", "absent")]
    assert parse_fr_inline(FR_PRINT.replace("{1, 3}", "set()")) is None


def test_fr_trace_printed_line_names_the_stragglers(tmp_path: Path) -> None:
    f = facts(tmp_path, FR_PRINT + "\nCollective stack traces: \n")
    assert f["lagging_ranks"] == [1, 3] and f["pattern"] == "straggler"
    assert f["op_type"] == "nccl:all_reduce"


@pytest.mark.parametrize(("text", "seq", "missing"), [(FR_TUTORIAL, 5, [1]),
                                                      (FR_140969, 31117, [3, 4, 5, 6, 7])])
def test_fr_trace_report(tmp_path: Path, text: str, seq: int, missing: list[int]) -> None:
    f = facts(tmp_path, text)
    assert f["seq_num"] == seq and f["lagging_ranks"] == missing
    assert f["op_type"] == "nccl:all_reduce" and f["process_group"] == "0 (default_pg)"
    assert f["pattern"] == "straggler"


# -- NCCL RAS --------------------------------------------------------------------------------------

RAS_1911 = """#0-0 (fa93daea854b060b) MISMATCH
  Communicator ranks have different AllGather operation counts
  30 ranks have launched up to operation 640
  2 ranks have launched up to operation 641
  Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124
  Rank 13 -- GPU 5 managed by process 323033 on node 10.137.190.124
"""  # NVIDIA/nccl#1911: the listed outliers are ahead; the other 30 are behind

RAS_DOCS = """#0-0 (27a079b828ff1a75) MISMATCH
  Communicator ranks have different collective operation counts
  26 ranks have launched up to operation 6650
  6 ranks have launched up to operation 6649
  Rank 0 -- GPU 0 managed by process 483072 on node 172.16.64.210
  Rank 2 -- GPU 2 managed by process 483074 on node 172.16.64.210
  Rank 3 -- GPU 3 managed by process 483075 on node 172.16.64.210
  Rank 4 -- GPU 4 managed by process 483076 on node 172.16.64.210
  Rank 5 -- GPU 5 managed by process 483077 on node 172.16.64.210
  Rank 7 -- GPU 7 managed by process 483079 on node 172.16.64.210
"""  # NVIDIA/nccl's RAS user guide (docs, "Warnings"): the listed outliers are behind


def test_ras_outliers_ahead(tmp_path: Path) -> None:
    f = facts(tmp_path, RAS_1911)
    assert f["lagging_ranks"] == [r for r in range(32) if r not in (12, 13)]
    assert f["seq_num"] == 641 and f["op_type"] == "AllGather" and f["pattern"] == "straggler"


def test_ras_outliers_behind(tmp_path: Path) -> None:
    f = facts(tmp_path, RAS_DOCS)
    assert f["lagging_ranks"] == [0, 2, 3, 4, 5, 7] and f["seq_num"] == 6650
    assert f["op_type"] is None  # "collective operation counts": RAS does not say which op


# -- torch_ucc's comm check ------------------------------------------------------------------------

UCC_53 = """terminate called after throwing an instance of 'c10::Error'
 what():  [Rank 1][ProcessGroupUCC-1][COMM_CHECK]
\tAborting comms #12 (op=ALLTOALL_BASE) due to the problematic ranks: [ 0 ]
\t\tRanks [0] are 'Collective wasn't posted'
\tComms status of other ranks:\x20
\t\tRanks [0] are last known progressing comms #11 (op=ALLTOALL_BASE)
\t\tRanks [1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] are last known progressing comms #12 (op=ALLTOALL_BASE)
Exception raised from comms_status_health_check at third-party/torch_ucc/src/torch_ucc.cpp:777 (most recent call first):
"""  # facebookresearch/torch_ucc#53's example output (corpus timeout-torch-ucc-53)


def test_ucc_comm_check_names_the_rank_behind(tmp_path: Path) -> None:
    f = facts(tmp_path, UCC_53)
    assert f["timed_out_ranks"] == [1] and f["lagging_ranks"] == [0]
    assert f["op_type"] == "ALLTOALL_BASE" and f["seq_num"] == 12 and f["pattern"] == "straggler"


def test_ucc_comm_check_with_every_rank_stuck_alike_names_none(tmp_path: Path) -> None:
    # torch_ucc's own rule: every rank in the same state and collective is "likely some
    # application issue", and the check names them all
    text = UCC_53.replace("problematic ranks: [ 0 ]", "problematic ranks: [ 0 1 2 ]").replace(
        "Ranks [0] are 'Collective wasn't posted'", "Ranks [0 1 2] are 'Collective posted and in progress'")
    text = "\n".join(line for line in text.splitlines()
                     if "#11" not in line).replace("[1 2 3 4 5 6 7 8 9 10 11 12 13 14 15]", "[0 1 2]")
    f = facts(tmp_path, text)
    assert f["timed_out_ranks"] == [1] and f["lagging_ranks"] == []


def test_ucc_log_lines_without_the_abort_give_no_rows() -> None:
    b = MissingRanksBlock()
    rows = b.feed("E1119 10:00:00.000000 12 torch_ucc.cpp:700] [Rank 1][ProcessGroupUCC-1]"
                  "[COMM_CHECK][ERROR] on rank 0: Collective wasn't posted") + b.close()
    assert rows == []


# -- JAX coordination-service barriers ------------------------------------------------------------

JAX_LLAMA = """    jax.distributed.initialize(coordinator_address="localhost", num_processes=8, process_id=0)
jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: PjRT_Client_Connect. Timed out task names:
/job:jax_worker/replica:0/task:1
/job:jax_worker/replica:0/task:6
/job:jax_worker/replica:0/task:3

Additional GRPC error information from remote target unknown_target_for_coordination_leader
"""  # ayaka14732/llama-2-jax#20 (four task lines of seven kept)

JAX_LEVANTER_GRPC = (  # marin-community/levanter#432: the GRPC detail repeats the list, escaped
    ':{"created":"@1706211255.371885374","grpc_message":"Barrier timed out. Barrier_id: '
    'multihost_broadcast_sync0. Timed out task names:\\n/job:jax_worker/replica:0/task:3\\n'
    '/job:jax_worker/replica:0/task:0\\n","grpc_status":4}\n')

# newer JAX ("Id:", the first task at the barrier): the wording of AI-Hypercomputer/gpu-recipes#2
# ("DEADLINE_EXCEEDED: Barrier timed out. Id: [Init]Wait_for_all_tasks_to_register::0. This usually
# happens because a task triggered the barrier too early or too slowly. …"), with task lines as a
# MaxText job log printed them
JAX_NEW = """jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: 0_async_write_complete.0.1. This usually happens because a task triggered the barrier too early or too slowly. Please look at the task logs (both timed out and first task) to debug further.
# of tasks that reached the barrier: 8/16.
The first task at the barrier: /job:jax_worker/replica:0/task:13. Some timed out task names:
/job:jax_worker/replica:0/task:6
/job:jax_worker/replica:0/task:0

RPC: /tensorflow.CoordinationService/Barrier [type.googleapis.com/tensorflow.CoordinationServiceError='']
"""


def test_jax_barrier_names_missing_tasks(tmp_path: Path) -> None:
    f = facts(tmp_path, JAX_LLAMA)
    assert f["timed_out_ranks"] == [0] and f["lagging_ranks"] == [1, 3, 6]
    assert f["pattern"] == "straggler"
    f = facts(tmp_path, JAX_LEVANTER_GRPC)
    assert f["lagging_ranks"] == [0, 3] and f["timed_out_ranks"] == []


def test_jax_barrier_newer_wording(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_text(JAX_NEW)
    c = traindoc.load(p).collectives
    assert sorted(c[c["state"] == "absent"]["rank"].tolist()) == [0, 6]
    assert c[c["state"] == "started"]["rank"].tolist() == [13]
    assert set(c["op_type"]) == {"barrier:0_async_write_complete.0.1"}


# A barrier whose report names no task still timed out (no rank named), with the timeout the
# coordination service's start-up barrier states before it, when it does
JAX_NO_TASKS = [
    # AI-Hypercomputer/gpu-recipes#2: the start-up barrier, its timeout '1h' stated before it
    ("Stopping coordination service as cluster registration failed. This may be due to 1) some "
     "tasks crashed earlier before connecting, 2) some tasks were never scheduled, or 3) "
     "scheduling delays. Consider setting a longer initialization timeout if such delays are "
     "expected, the timeout is currently set to: 1h.\n\nOriginal error: DEADLINE_EXCEEDED: "
     "Barrier timed out. Id: [Init]Wait_for_all_tasks_to_register::0. This usually happens "
     "because a task triggered the barrier too early or too slowly. Please look at the task logs "
     "(both timed out and first task) to debug further.\n",
     "barrier:[Init]Wait_for_all_tasks_to_register::0", 3_600_000),
    # a marin-community RL run's notes (levanter's barrier_sync on a v6e-16): a later barrier,
    # two lines, no task and no timeout stated
    ("DEADLINE_EXCEEDED: Barrier timed out. Id: levanter_barrier_sync_3::0.\n"
     "This usually happens because a task triggered the barrier too early or too slowly.\n",
     "barrier:levanter_barrier_sync_3::0", None),
]


@pytest.mark.parametrize(("text", "op", "timeout_ms"), JAX_NO_TASKS)
def test_jax_barrier_without_tasks_timed_out(tmp_path: Path, text: str, op: str,
                                             timeout_ms: int | None) -> None:
    p = tmp_path / "job.log"
    p.write_text(text)
    c = traindoc.load(p).collectives
    assert c["state"].tolist() == ["timed_out"] and c["rank"].isna().all()  # no rank named
    assert c["op_type"].tolist() == [op]
    f = facts(tmp_path, text)
    assert f["timeout_ms"] == timeout_ms and f["timed_out_ranks"] == []
    assert f["lagging_ranks"] == []


@pytest.mark.parametrize(("text", "ms"), [
    ("1h", 3_600_000), ("5m", 300_000), ("1h30m", 5_400_000), ("2.5s", 2500), ("300ms", 300),
    ("inf", None), ("", None),
])
def test_absl_duration(text: str, ms: int | None) -> None:
    assert absl_duration_ms(text) == ms


# -- the heartbeat monitor names the process group -------------------------------------------------

@pytest.mark.parametrize(("text", "pg"), [
    # xdit-project/xDiT#147: group 5, ranks 0 and 4 by their prefix
    ("[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 5 Rank 0] Heartbeat monitor timed out! Process "
     "will be terminated after dumping debug info. workMetaList_.size()=3\n"
     "[rank4]:[E ProcessGroupNCCL.cpp:1316] [PG 5 Rank 0] Heartbeat monitor timed out! Process "
     "will be terminated after dumping debug info. workMetaList_.size()=2\n", "5"),
    # warpem/miss-alignment#105: torch 2.7's tag, the default group by name
    ("[rank1]:[E513 12:38:14.493976596 ProcessGroupNCCL.cpp:1870] [PG ID 0 PG GUID 0(default_pg) "
     "Rank 1] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in "
     "monitoring enqueued collectives.\n", "0 (default_pg)"),
])
def test_heartbeat_names_the_group(tmp_path: Path, text: str, pg: str) -> None:
    assert facts(tmp_path, text)["process_group"] == pg


# -- the prose says what was read ----------------------------------------------------------------

def test_prose_of_a_report_without_a_timeout_line(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_text(FR_TUTORIAL)
    r = timeout.diagnose(traindoc.load(p))
    texts = [r.verdict] + [f.title for f in r.findings] + [a.title for a in r.actions]
    assert not [t for t in texts if "None" in t or "no rank tag" in t]
    assert "nccl:all_reduce #5 has not completed" in r.verdict and "rank 1" in r.verdict


# -- start-up: the TCPStore server waiting for its clients (torch 2.x TCPStore.cpp) -------------

STORE_CLIENTS = [
    # vllm-project/vllm#16334
    ("torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 1/4 "
     "clients joined.", 601_000),
    # vllm-project/vllm#24036 (vLLM's own logger prefix)
    ("ERROR 09-01 02:20:44 [engine.py:458] Timed out after 601 seconds waiting for clients. 1/8 "
     "clients joined.", 601_000),
    # OpenRLHF/OpenRLHF#1040 (the title)
    ("torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 1/3 "
     "clients joined.", 1_801_000),
]


@pytest.mark.parametrize(("line", "ms"), STORE_CLIENTS)
def test_store_clients_timeout(line: str, ms: int) -> None:
    assert parse_store_clients(line) == {"rank": None, "timeout_ms": ms, "state": "timed_out"}


# -- the heartbeat monitor told of a timeout through the store, by torch version -----------------

@pytest.mark.parametrize(("line", "peer", "enq", "comp"), [
    # torch 2.2-2.3 ProcessGroupNCCL.cpp heartbeatMonitor, on the ranks another rank's watchdog
    # signalled through the store: some rank timed out, none named
    ("[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 0] Received a global timeout from another "
     "rank and will start to dump the debug info. Last enqueued NCCL work: 12, last completed "
     "NCCL work: 12.", None, 12, 12),
    # pytorch/pytorch#122850 (torch 2.3): the printing rank's own watchdog fired (its peers
    # print the 'global timeout from another rank' line above)
    ("[rank0]:[E327 17:04:16.182548526 ProcessGroupNCCL.cpp:1346] [PG 0 Rank 0] Received a "
     "timeout signal from this local rank and will start to dump the debug info. Last enqueued "
     "NCCL work: 2, last completed NCCL work: 1.", None, 2, 1),
])
def test_dump_signal_forerunners(line: str, peer: int | None, enq: int, comp: int) -> None:
    rows = parse_dump_signal(line) or []
    assert [r["rank"] for r in rows if r.get("_named_rank")] == ([] if peer is None else [peer])
    status = [r for r in rows if r["state"] == "status"]
    assert [(r["last_enqueued"], r["last_completed"]) for r in status] == [(enq, comp)]


# -- a TCPStore wait that timed out (torch 2.5+ TCPStore.cpp) -------------------------------------

STORE_WAIT = [
    # modelscope/ms-swift#4906: mid-run, vLLM's StatelessProcessGroup barrier in the weight sync
    ("[rank0]: torch.distributed.DistStoreError: wait timeout after 300000ms, keys: "
     "/broadcast_from/0/75465", 300_000, False),
    # modelscope/ms-swift#4924: at start-up, torchelastic's rendezvous on two nodes
    ("torch.distributed.DistStoreError: wait timeout after 900000ms, keys: "
     "/none/torchelastic/role_info/0, /none/torchelastic/role_info/1", 900_000, True),
    # pytorch/pytorch#131808: the message as the PR that added it prints it
    ("DistStoreError: wait timeout after 100ms, keys: /the_key", 100, False),
]


@pytest.mark.parametrize(("line", "ms", "startup"), STORE_WAIT)
def test_store_wait_timeout(line: str, ms: int, startup: bool) -> None:
    assert parse_store_wait(line) == {"rank": None, "timeout_ms": ms, "state": "timed_out"}
    assert startup_line(line) is startup


def test_store_wait_timeout_is_a_timeout(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_text(STORE_WAIT[0][0] + "\n")
    assert timeout.diagnose(traindoc.load(p)).facts["timeout_ms"] == 300_000


@pytest.mark.parametrize("line", [STORE_BARRIER[0][0], SOCKET[1][0], STORE_CLIENTS[0][0],
                                  STORE_WAIT[1][0]])
def test_startup_timeouts_get_the_startup_action(tmp_path: Path, line: str) -> None:
    p = tmp_path / "job.log"
    p.write_text(line + "\n")
    r = timeout.diagnose(traindoc.load(p))
    assert r.actions[0].id == "check_startup"


def test_corrupt_ras_counts_claim_nothing(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_text("Communicator ranks have different AllReduce operation counts\n"
                 f"  {'9' * 30} ranks have launched up to operation 64\n"
                 "  2 ranks have launched up to operation 65\n  Rank 0 -- GPU 0 managed by x\n")
    assert not len(traindoc.load(p).collectives)


def test_ras_ranks_that_launched_nothing(tmp_path: Path) -> None:
    # NCCL's src/ras/client_support.cc: "%d ranks have not launched any operations"
    p = tmp_path / "job.log"
    p.write_text("  Communicator ranks have different AllReduce operation counts\n"
                 "  7 ranks have launched up to operation 64\n"
                 "  Rank 7 has not launched any operations -- GPU 3 managed by process 1 on node n1\n")
    f = timeout.diagnose(traindoc.load(p)).facts
    assert f["lagging_ranks"] == [7] and f["seq_num"] == 64


# -- NCCL RAS: an INCOMPLETE communicator (src/ras/client_support.cc) ------------------------------

RAS_INCOMPLETE_224 = """Errors
======

INCOMPLETE
  Missing communicator data from 1 job process
  Process 3487984 on node 172.16.64.213 managing GPU 5

#0-0 (cf264af53edbe986) INCOMPLETE
  Missing communicator data from 1 rank
  The missing rank: 21

Warnings
========
"""  # NCCL 2.24's user guide (troubleshooting/ras.rst): the rank list as one line

RAS_INCOMPLETE_226 = """#0-0 (1bdb83b038775869) INCOMPLETE
  Missing communicator data from 2 ranks
  Rank 7 -- GPU 3 managed by process 3748990 on node node1
  Rank 12 -- [process information not found]
"""  # NCCL 2.26+: one line per missing rank


@pytest.mark.parametrize(("text", "missing"), [
    (RAS_INCOMPLETE_224, [21]),
    (RAS_INCOMPLETE_224.replace("1 rank\n  The missing rank: 21", "2 ranks\n  The missing ranks: 3,7"),
     [3, 7]),
    (RAS_INCOMPLETE_226, [7, 12]),
])
def test_ras_incomplete_names_the_silent_ranks(tmp_path: Path, text: str, missing: list[int]) -> None:
    p = tmp_path / "ras.txt"
    p.write_text(text)
    c = traindoc.load(p).collectives
    assert sorted(c.loc[c["state"] == "absent", "rank"].astype(int)) == missing
    assert facts(tmp_path, text)["lagging_ranks"] == missing


@pytest.mark.parametrize("text, connect", [(JAX_LLAMA, True), (JAX_LEVANTER_GRPC, False),
                                           (JAX_NEW, False)])
def test_a_jax_barrier_gets_jax_advice_not_torchs(tmp_path: Path, text: str,
                                                  connect: bool) -> None:
    """No flight recorder, no TORCH_* variables, no init_process_group for a JAX job; a longer
    limit only for the start-up barrier (jax.distributed.initialize's initialization_timeout)."""
    log = tmp_path / "job.log"
    log.write_text(text)
    r = timeout.diagnose(traindoc.load(str(log)))
    how = " ".join(a.how for a in r.actions)
    assert "TORCH_" not in how and "init_process_group" not in how
    assert "TF_CPP_VMODULE=coordination_service" in how
    assert ("initialization_timeout" in how) == connect


# -- JAX's coordination service: a task's heartbeats stopped ---------------------------------------

JAX_HEARTBEAT = [
    # the architecture-objective#26 t5x run (tensorflow's copy of the service, 2022)
    ("2022-11-15 16:03:15.140058: E external/org_tensorflow/tensorflow/core/distributed_runtime/"
     "coordination/coordination_service.cc:954] /job:jax_worker/replica:0/task:37 has been set to "
     "ERROR in coordination service: UNAVAILABLE: Task /job:jax_worker/replica:0/task:37 heartbeat "
     "timeout. This indicates that the remote task has failed, got preempted, or crashed "
     "unexpectedly. [type.googleapis.com/tensorflow.CoordinationServiceError='']", 37),
    # jax-ml/jax#23599 (xla's tsl copy, 2024)
    ("2024-10-09 15:47:38.568412: E external/xla/xla/tsl/distributed_runtime/coordination/"
     "coordination_service.cc:1170] /job:jax_worker/replica:0/task:0 has been set to ERROR in "
     "coordination service: UNAVAILABLE: Task /job:jax_worker/replica:0/task:0 heartbeat timeout. "
     "This indicates that the remote task has failed, got preempted, or crashed unexpectedly. Check "
     "the task logs for an earlier error to debug further. "
     "[type.googleapis.com/tensorflow.CoordinationServiceError='']", 0),
]


@pytest.mark.parametrize(("line", "task"), JAX_HEARTBEAT)
def test_jax_heartbeat_timeout_names_the_silent_task(line: str, task: int) -> None:
    assert parse_jax_heartbeat(line) == [{"rank": task, "state": "absent", "_named_rank": True}]


def test_jax_heartbeat_timeout_is_the_lagging_task(tmp_path: Path) -> None:
    f = facts(tmp_path, "I1115 16:00:39.451247 140641718562816 trainer.py:501] Training: step 198\n"
              + JAX_HEARTBEAT[0][0] + "\n")
    assert f["lagging_ranks"] == [37]
    assert f["last_step"] == 198
    assert f["timed_out_ranks"] == []  # the coordinator's own rank is not printed


def test_a_heartbeat_timeout_of_another_kind_names_no_task() -> None:
    assert parse_jax_heartbeat("[Rank 3] Heartbeat timeout: the watchdog thread stopped") is None
