"""traindoc.diagnose.timeout on the seeds and on synthetic multi-rank logs."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pandas as pd
import pytest

import traindoc
from conftest import DATA
from traindoc.diagnose import timeout
from traindoc.diagnose.collectives import first_mismatch
from traindoc.diagnose.timeout import analysis as to_analysis


def diag(tmp_path: Path, text: str, **kw):
    p = tmp_path / "job.log"
    p.write_text(text)
    inc = traindoc.load(p)
    return inc, timeout.diagnose(inc, **kw)


def wd(rank: int, seq: int, op: str = "ALLREDUCE", numel: int = 1, pg: str = "PG ID 0 PG GUID 0(default_pg) ") -> str:
    return (f"[rank{rank}]:[E1121 10:00:0{rank}.1 ProcessGroupNCCL.cpp:632] [{pg}Rank {rank}] Watchdog "
            f"caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn="
            f"{numel}, NumelOut={numel}, Timeout(ms)=600000) ran for 600012 milliseconds before "
            "timing out.\n")


def status(rank: int, seq: int, enq: int, comp: int) -> str:
    return (f"[rank{rank}]:[E1121 10:00:0{rank}.2 ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID "
            f"0(default_pg) Rank {rank}] Exception (either an error or timeout) detected by "
            f"watchdog at work: {seq}, last enqueued NCCL work: {enq}, last completed NCCL work: "
            f"{comp}.\n")


def test_gemma3_seed() -> None:
    inc = traindoc.load(DATA / "timeout" / "gemma3_seed")
    f = timeout.diagnose(inc).facts
    assert f["timed_out_ranks"] == [3]
    assert (f["op_type"], f["seq_num"], f["timeout_ms"], f["ran_for_ms"]) == (
        "ALLREDUCE", 2901, 600000, 600070)
    assert (f["last_step"], f["total_steps"]) == (21, 6336)


def test_skyrl_seed() -> None:
    f = timeout.diagnose(traindoc.load(DATA / "timeout" / "skyrl_seed")).facts
    assert (f["op_type"], f["numel_in"], f["numel_out"], f["seq_num"]) == (
        "_ALLGATHER_BASE", 68125120, 545000960, 19962)


def test_llama_seed_recommends_seeding_the_split() -> None:
    r = timeout.diagnose(traindoc.load(DATA / "timeout" / "llama_recipes_seed"))
    assert r.facts["op_type"] == "_ALLGATHER_BASE"
    assert any(a.id == "seed_data_split" for a in r.actions)
    assert any(f.id == "group_size" and "4 ranks" in f.title for f in r.findings)


def test_straggler_named_from_status_lines(tmp_path: Path) -> None:
    text = wd(0, 57) + status(0, 57, 57, 56) + wd(1, 57) + status(1, 57, 57, 56) + status(2, 56, 56, 56)
    _, r = diag(tmp_path, text)
    # rank 2's watchdog fired at work 56 (its status line says so): it timed out too, in an
    # earlier collective, and never entered 57
    assert r.facts["timed_out_ranks"] == [0, 1, 2]
    assert r.facts["lagging_ranks"] == [2]
    assert r.facts["pattern"] == "straggler"
    assert r.facts["process_group"] == "0 (default_pg)"
    assert r.confidence == "high"


def test_straggler_when_only_status_lines_name_the_group(tmp_path: Path) -> None:
    # torch 2.4-2.6: the watchdog line says only [Rank N]; the status line names the group.
    text = (wd(0, 57, pg="") + status(0, 57, 57, 56) + wd(1, 57, pg="") + status(1, 57, 57, 56)
            + status(2, 56, 56, 56))
    _, r = diag(tmp_path, text)
    assert r.facts["process_group"] == "0 (default_pg)"
    assert r.facts["lagging_ranks"] == [2] and r.facts["pattern"] == "straggler"


def test_desync_from_watchdog_lines(tmp_path: Path) -> None:
    _, r = diag(tmp_path, wd(0, 12, "ALLREDUCE") + wd(1, 12, "_ALLGATHER_BASE"))
    mm = r.facts["first_mismatch"]
    assert r.facts["pattern"] == "desync"
    assert mm["seq_num"] == 12 and mm["kind"] == "op"
    assert mm["ops"] == {"0": "ALLREDUCE", "1": "_ALLGATHER_BASE"}
    assert mm["ranks"] == [1]


def test_size_mismatch(tmp_path: Path) -> None:
    _, r = diag(tmp_path, wd(0, 3, numel=10) + wd(1, 3, numel=10) + wd(2, 3, numel=12))
    assert r.facts["first_mismatch"]["kind"] == "size"
    assert r.facts["first_mismatch"]["ranks"] == [2]


def test_all_stuck(tmp_path: Path) -> None:
    _, r = diag(tmp_path, wd(0, 9) + wd(1, 9) + wd(2, 9) + wd(3, 9), world_size=4)
    assert r.facts["pattern"] == "all_stuck"
    assert r.facts["lagging_ranks"] == []


def test_no_timeout_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    _, r = diag(tmp_path, "all good\nstep 5\n")
    assert r.facts["op_type"] is None and r.facts["timed_out_ranks"] == []
    assert r.confidence == "low" and r.findings[0].id == "no_timeout"
    assert set(r.facts) == set(timeout.FACT_KEYS)


def test_uneven_data_split_from_progress_bars(tmp_path: Path) -> None:
    text = ("[rank0]:Training Epoch: 1/1, step 99/100 completed:  99%|#########9| 99/100 [01:39<00:01,  1.00s/it]\n"
            "[rank1]:Training Epoch: 1/1, step 97/98 completed:  99%|#########9| 97/98 [01:37<00:01,  1.00s/it]\n"
            + wd(1, 500, "_ALLGATHER_BASE", 1000))
    _, r = diag(tmp_path, text)
    assert any(f.id == "uneven_data" for f in r.findings)
    assert r.actions[0].id == "seed_data_split"


def fr_dump(entries: list[tuple[int, str, list[list[int]]]]) -> bytes:
    return pickle.dumps({
        "version": "2.10", "pg_config": {"": {"name": "", "desc": "", "ranks": "[0, 1]"}},
        "pg_status": {"0": {"last_enqueued_collective": entries[-1][0],
                            "last_started_collective": -1, "last_completed_collective": entries[-1][0] - 1}},
        "entries": [{"record_id": i, "pg_id": 0, "process_group": ("0", "default_pg"),
                     "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq,
                     "profiling_name": op, "input_sizes": sizes, "input_dtypes": ["Float"],
                     "output_sizes": sizes, "output_dtypes": ["Float"], "state": "scheduled",
                     "is_p2p": False, "timeout_ms": 5000, "frames": [
                         {"name": "all_reduce", "filename": "train.py", "line": 10}],
                     "time_created_ns": 1795304549049221001}
                    for i, (seq, op, sizes) in enumerate(entries)],
    }, protocol=2)


def test_flight_recorder_desync(tmp_path: Path) -> None:
    (tmp_path / "rank0").write_bytes(fr_dump([(1, "gloo:all_reduce", [[4]]), (2, "gloo:all_reduce", [[4]])]))
    (tmp_path / "rank1").write_bytes(fr_dump([(1, "gloo:all_reduce", [[4]]), (2, "gloo:all_gather", [[4]])]))
    inc = traindoc.load(tmp_path)
    assert inc.account["dumps"] == 2
    mm = first_mismatch(inc.collectives).as_fact()
    assert mm == {"process_group": "0 (default_pg)", "seq_num": 2, "kind": "op",
                  "ops": {"0": "gloo:all_reduce", "1": "gloo:all_gather"}, "ranks": [1]}


def test_flight_recorder_missing_rank(tmp_path: Path) -> None:
    (tmp_path / "rank0").write_bytes(fr_dump([(1, "gloo:all_reduce", [[4]]), (2, "gloo:all_reduce", [[4]])]))
    (tmp_path / "rank1").write_bytes(fr_dump([(1, "gloo:all_reduce", [[4]])]))
    mm = first_mismatch(traindoc.load(tmp_path).collectives)
    assert mm.kind == "missing_ranks" and mm.ranks == [1] and mm.seq_num == 2


class Boom:
    def __reduce__(self):
        return (Path("/tmp/traindoc-pwned").touch, ())


@pytest.mark.parametrize("payload", [
    pickle.dumps({"entries": [Boom()]}),
    pickle.dumps({"entries": [], "x": Boom()}, protocol=4),
])
def test_malicious_dump_is_refused_and_runs_nothing(tmp_path: Path, payload: bytes) -> None:
    marker = Path("/tmp/traindoc-pwned")
    marker.unlink(missing_ok=True)
    (tmp_path / "rank0.pkl").write_bytes(payload)
    inc = traindoc.load(tmp_path)
    assert not marker.exists()
    assert any("refused to import" in w for w in inc.account["warnings"])


def test_truncated_and_empty_dumps_are_warnings(tmp_path: Path) -> None:
    good = fr_dump([(1, "gloo:all_reduce", [[4]])])
    (tmp_path / "rank0").write_bytes(good[: len(good) // 2])
    (tmp_path / "rank1").write_bytes(b"")
    inc = traindoc.load(tmp_path)
    text = " ".join(inc.account["warnings"])
    assert "truncated or corrupt" in text and "empty" in text


# --- families seen on real logs (issue "Right on real logs") ----------------------------------

def test_status_line_rank_timed_out_and_is_no_straggler(tmp_path: Path) -> None:
    # hiyouga/LlamaFactory#7396: rank 3's watchdog line is not in the paste, its status is
    text = """\
[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.
[80747] [rank4]:[E321 02:07:08.414640780 ProcessGroupNCCL.cpp:607] [Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for 600067 milliseconds before timing out.
[80748] [rank0]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an error or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.
[80749] [rank3]:[E321 02:07:08.465224069 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 3] Exception (either an error or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.
"""
    _, r = diag(tmp_path, text)
    f = r.facts
    assert f["timed_out_ranks"] == [0, 3, 4] and f["lagging_ranks"] == []
    assert (f["seq_num"], f["process_group"], f["op_type"]) == (1580, "1", "ALLREDUCE")
    # ranks 1 and 2 left no line: nobody can say every rank was stuck
    assert f["pattern"] == "unknown"


def test_wrapped_status_line_names_the_group_of_pg_less_watchdog_lines(tmp_path: Path) -> None:
    # mila-iqia/milabench#269: a terminal wrapped both lines; only rank 12's status names the PG
    text = """\
dinov2-giant-nodes.cn-d004 [stderr] [rank14]:[E909 09:55:29.307629539 ProcessGroupNCCL.cpp:607] [Rank 14] Watchdog caught collective operation timeout:
WorkNCCL(SeqNum=2070, OpType=REDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds before timing out.
dinov2-giant-nodes.cn-d004 [stderr] [rank12]:[E909 09:55:29.308889145 ProcessGroupNCCL.cpp:607] [Rank 12] Watchdog caught collective operation timeout:
WorkNCCL(SeqNum=2070, OpType=REDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600036 milliseconds before timing out.
dinov2-giant-nodes.cn-d004 [stderr] [rank12]:[E909 09:55:29.313379098 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 12] Exception (either an error or timeout) detected
by watchdog at work: 2070, last enqueued NCCL work: 2070, last completed NCCL work: 2069.
""".replace("timeout:\n", "timeout: \n")  # the paste keeps the terminal's trailing space
    _, r = diag(tmp_path, text)
    f = r.facts
    assert f["timed_out_ranks"] == [12, 14]
    assert (f["seq_num"], f["op_type"], f["process_group"]) == (2070, "REDUCE", "0 (default_pg)")
    assert f["pattern"] == "unknown"  # 2 of at least 15 ranks: not "all stuck"


def test_watchdog_lines_of_unknown_groups_are_no_missing_ranks(tmp_path: Path) -> None:
    # pytorch/pytorch#118369: rank 0 and rank 7 time out at unrelated numbers (other groups)
    text = """\
[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96120, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25624887 milliseconds before timing out.
[E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=96117, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25625613 milliseconds before timing out.
[E ProcessGroupNCCL.cpp:458] [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=64088, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 25625251 milliseconds before timing out.
"""
    _, r = diag(tmp_path, text)
    assert r.facts["first_mismatch"] is None and r.facts["pattern"] == "unknown"


def test_same_seq_different_op_without_group_is_a_desync(tmp_path: Path) -> None:
    text = wd(0, 57, pg="") + wd(1, 57, op="BROADCAST", pg="") + wd(2, 57, pg="")
    _, r = diag(tmp_path, text)
    mm = r.facts["first_mismatch"]
    assert r.facts["pattern"] == "desync" and mm["kind"] == "op" and mm["ranks"] == [1]


def test_legacy_lines_without_seqnum(tmp_path: Path) -> None:
    # torch 1.8/1.9 wording (tests/data/wordings/watchdog_timeout.txt): op, timeout, no SeqNum
    same = """\
[E ProcessGroupNCCL.cpp:566] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, Timeout(ms)=60000) ran for 66854 milliseconds before timing out.
[E ProcessGroupNCCL.cpp:566] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, Timeout(ms)=60000) ran for 66664 milliseconds before timing out.
"""
    _, r = diag(tmp_path, same)
    f = r.facts
    assert (f["op_type"], f["timeout_ms"], f["timed_out_ranks"]) == ("BROADCAST", 60000, [2, 3])
    assert f["first_mismatch"] is None
    other = same.replace("[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(OpType="
                         "BROADCAST", "[Rank 3] Watchdog caught collective operation timeout: "
                         "WorkNCCL(OpType=ALLREDUCE")
    _, r = diag(tmp_path, other)
    assert r.facts["pattern"] == "desync"
    assert r.facts["first_mismatch"]["ops"] == {"2": "BROADCAST", "3": "ALLREDUCE"}


def test_dump_signal_names_the_rank_that_timed_out(tmp_path: Path) -> None:
    # tests/data/wordings/work_status.txt (torch 2.6+)
    text = (
        "[rank6]:[E703 21:51:54.112142364 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg)"
        " Rank 6] Received a dump signal due to a collective timeout from  rank 7 and we will try "
        "our best to dump the debug info. Last enqueued NCCL work: 56116, last completed NCCL work:"
        " 56116.This is most likely caused by incorrect usages of collectives, e.g., wrong sizes "
        "used across ranks\n"
        "[rank0]:[E709 17:05:38.482119928 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg)"
        " Rank 0] Received a dump signal due to a collective timeout from this local rank and we "
        "will try our best to dump the debug info. Last enqueued NCCL work: 20589, last completed "
        "NCCL work: 20584.This is most likely caused by incorrect usages of collectives\n")
    inc, r = diag(tmp_path, text)
    assert r.facts["timed_out_ranks"] == [0, 7]
    st = inc.collectives[inc.collectives["state"] == "status"]
    assert sorted(st["rank"].tolist()) == [0, 6]
    assert st[st["rank"] == 0]["seq_num"].tolist() == [20585]


def test_dump_signal_with_nothing_completed_points_at_work_one(tmp_path: Path) -> None:
    # Hoilap/AS-LoRA logs_llama/order_1.log (torch 2.6): 'last completed work: -1' is "none
    # yet", and the watchdog beside it reports WorkNCCL(SeqNum=1, …): the first work is 1, not 0
    text = (
        "[rank0]:[E1217 00:14:36.809023396 ProcessGroupNCCL.cpp:685] [Rank 0] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLGATHER, NumelIn=1, NumelOut=2,"
        " Timeout(ms)=1800000) ran for 1800085 milliseconds before timing out.\n"
        "[rank0]:[E1217 00:14:36.115721285 ProcessGroupNCCL.cpp:1870] [PG ID 0 PG GUID 0(default_pg)"
        " Rank 0] Received a dump signal due to a collective timeout from this local rank and we "
        "will try our best to dump the debug info. Last enqueued NCCL work: 1, last completed NCCL "
        "work: -1.This is most likely caused by incorrect usages of collectives\n")
    inc, r = diag(tmp_path, text)
    st = inc.collectives[inc.collectives["state"] == "status"]
    assert st["seq_num"].tolist() == [1]
    assert (r.facts["op_type"], r.facts["seq_num"], r.facts["ran_for_ms"]) == (
        "ALLGATHER", 1, 1800085)


def test_a_rank_that_printed_only_a_dump_signal_line_left_lines(tmp_path: Path) -> None:
    # Megatron-DeepSpeed (corpus timeout-megatron-deepspeed-lock-clock-dual8-tp4pp1dp2): rank 0's
    # watchdog times out in PG 1; rank 3 prints only that it received rank 0's dump signal. With the
    # job's size given, rank 3 is no rank "without a line"; ranks 1 and 2 are.
    text = wd(0, 2, pg="PG ID 1 PG GUID 1 ") + (
        "[rank3]:[E328 00:21:12.921266 ProcessGroupNCCL.cpp:1858] [PG ID 0 PG GUID 0(default_pg)"
        " Rank 3] Received a dump signal due to a collective timeout from  rank 0 and we will try "
        "our best to dump the debug info. Last enqueued NCCL work: 7, last completed NCCL work: 7."
        "This is most likely caused by incorrect usages of collectives\n")
    p = tmp_path / "job.log"
    p.write_text(text)
    a = timeout.analyse(traindoc.load(p), world_size=4)
    assert a.unseen_ranks == [1, 2]


def test_detail_mode_mismatch_is_a_desync(tmp_path: Path) -> None:
    # the DETAIL report (TORCH_DISTRIBUTED_DEBUG=DETAIL), as quoted from a hang after eval
    text = ("RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
            "collective: CollectiveFingerPrint(SequenceNumber=32, OpType=ALLREDUCE, TensorShape="
            "[4], TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), "
            "device=cuda, layout=Strided (default), requires_grad=false (default), pinned_memory"
            "=false (default), memory_format=(nullopt))), but Rank 1 is running collective: "
            "CollectiveFingerPrint(SequenceNumber=32, OpType=BROADCAST, TensorShape=[1853171], "
            "TensorDtypes=Float).\n")
    _, r = diag(tmp_path, text)
    mm = r.facts["first_mismatch"]
    assert r.facts["pattern"] == "desync"
    assert (mm["seq_num"], mm["kind"], mm["ranks"]) == (32, "op", [1])
    assert mm["ops"] == {"0": "ALLREDUCE", "1": "BROADCAST"}


def test_monitored_barrier_names_the_lagging_ranks(tmp_path: Path) -> None:
    # torch's documented monitored_barrier failure (rank 0 reports the faulty ranks)
    text = ("RuntimeError: [Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 30000 ms\n"
            " Original exception: \n[../third_party/gloo/gloo/transport/tcp/pair.cc:598] "
            "Connection closed by peer [10.0.0.2]:8594\n")
    _, r = diag(tmp_path, text)
    f = r.facts
    assert f["lagging_ranks"] == [1, 3] and f["pattern"] == "straggler"
    assert f["timed_out_ranks"] == [0] and f["timeout_ms"] == 30000


def test_lightning_bar_fused_with_the_watchdog_line_gives_step_and_total(tmp_path: Path) -> None:
    # pytorch/pytorch#118369 (NeMo/Lightning): the bar has no newline before the error
    text = ("Epoch 0:   6%|██                               | 32040/500150 [6:28:43<94:39:17,  "
            "1.37it/s, loss=2.6, v_num=95nc, reduced_train_loss=2.590, global_step=3.2e+4, "
            "consumed_samples=2.56e+7][E ProcessGroupNCCL.cpp:458] [Rank 0] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=96120, OpType=ALLREDUCE, Timeout(ms)="
            "1800000) ran for 25624887 milliseconds before timing out.\n")
    _, r = diag(tmp_path, text)
    assert (r.facts["last_step"], r.facts["total_steps"]) == (32040, 500150)
    assert (r.facts["seq_num"], r.facts["timed_out_ranks"]) == (96120, [0])


def test_markdown_escaped_bar_gives_the_last_step(tmp_path: Path) -> None:
    # mosaicml/diffusion#70 (CloudWatch export pasted as a Markdown table: pipes escaped)
    text = ("  | 2023-10-05T04:00:22.604-07:00 | [0]:train 21%\\|█████▏ \\| 161544/770000 "
            "[29:39:25<310:42:33, 1.84s/ba, loss/train/t[6]:[E ProcessGroupNCCL.cpp:828] [Rank 38]"
            " Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4447361, OpType="
            "ALLREDUCE, Timeout(ms)=1800000) ran for 1805505 milliseconds before timing out.\n")
    _, r = diag(tmp_path, text)
    assert (r.facts["last_step"], r.facts["total_steps"]) == (161544, 770000)
    assert r.facts["timed_out_ranks"] == [38]


def test_watchdog_stuck_names_the_hung_rank(tmp_path: Path) -> None:
    # hiyouga/LlamaFactory#6964: the heartbeat monitor, no collective named
    text = ("[rank6]:[E217 00:13:05.609415848 ProcessGroupNCCL.cpp:1484] [PG ID 0 PG GUID "
            "0(default_pg) Rank 6] ProcessGroupNCCL's watchdog got stuck for 480 seconds without "
            "making progress in monitoring enqueued collectives. This typically indicates a "
            "NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog\n")
    _, r = diag(tmp_path, text)
    assert r.facts["timed_out_ranks"] == [6] and r.facts["op_type"] is None
    assert "got stuck" in r.verdict and any(f.id == "watchdog_stuck" for f in r.findings)


def test_a_crash_before_the_timeouts_is_the_verdict_not_a_straggler() -> None:
    # issue 15 point 3: rank 3's CUDA error (and Xid 31) at 01:36, the others time out at 01:46
    inc = traindoc.load(DATA / "triage" / "crash_then_timeouts")
    r = timeout.diagnose(inc)
    assert r.facts["lagging_ranks"] == [3]  # srun's "task 0"/"task 1" are node agents, not ranks
    assert "consequence of an earlier failure" in r.verdict and "rank 3" in r.verdict
    assert "gpu_crash" in r.verdict
    assert r.actions[0].id == "diagnose_crash"
    assert r.actions[0].how.startswith("traindoc run gpu_crash ")
    assert not any(a.id == "inspect_lagging" for a in r.actions)
    assert r.findings[0].id == "earlier_failure"


def test_a_crash_after_the_timeout_is_no_earlier_failure(tmp_path: Path) -> None:
    text = ("[rank1]:[E1121 10:00:00.000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, "
            "NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
            "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n")
    _, r = diag(tmp_path, text)
    assert not any(f.id == "earlier_failure" for f in r.findings)
    assert "earlier failure" not in r.verdict


def test_srun_task_is_no_rank_under_torchrun() -> None:
    from traindoc.incident import Incident

    inc = Incident.from_rows({"exits": [
        {"host": "node-a", "rank": 0, "task": 0, "exitcode": 1},
        {"host": "node-a", "local_rank": 3, "pid": 48234, "exitcode": -6}]})
    assert inc.exits["rank"].isna().all()
    alone = Incident.from_rows({"exits": [{"host": "node-7", "rank": 3, "task": 3,
                                           "signal": "SIGKILL"}]})
    assert list(alone.exits["rank"]) == [3]  # srun started the ranks itself


def test_highest_rank_seen_is_no_job_size(tmp_path: Path) -> None:
    # Megatron-LM#735: ranks 2, 0, 1 time out in ALLREDUCE #305; a fourth GPU printed nothing
    _, r = diag(tmp_path, wd(2, 305) + wd(0, 305) + wd(1, 305))
    assert r.facts["pattern"] == "unknown"
    _, r = diag(tmp_path, wd(2, 305) + wd(0, 305) + wd(1, 305), world_size=3)
    assert r.facts["pattern"] == "all_stuck"


def test_desync_when_only_one_rank_printed_a_status_line(tmp_path: Path) -> None:
    # NVIDIA/nccl#1409: rank 7's status line names default_pg, rank 3 printed none
    text = (
        "[rank7]:[E816 01:45:40.183009389 ProcessGroupNCCL.cpp:607] [Rank 7] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=80078, OpType=BROADCAST, NumelIn=5056, "
        "NumelOut=5056, Timeout(ms)=600000) ran for 600026 milliseconds before timing out.\n"
        "[rank7]:[E816 01:45:40.184373931 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 7] "
        "Exception (either an error or timeout) detected by watchdog at work: 80078, last "
        "enqueued NCCL work: 80078, last completed NCCL work: 80077.\n"
        "[rank3]:[E816 01:45:40.212150935 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=80078, OpType=ALLREDUCE, NumelIn=2106881,"
        " NumelOut=2106881, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.\n")
    _, r = diag(tmp_path, text)
    assert r.facts["pattern"] == "desync"
    assert r.facts["first_mismatch"]["ops"] == {"3": "ALLREDUCE", "7": "BROADCAST"}
    assert r.facts["op_type"] == "BROADCAST" and r.facts["numel_in"] == 5056  # first printed


def test_a_cut_watchdog_line_still_names_its_rank_and_seq(tmp_path: Path) -> None:
    # huggingface/trl#1405: the poster cut every line right after the op
    text = ("[rank6]:[E ProcessGroupNCCL.cpp:523] [Rank 6] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=956300, OpType=_ALLGATHER_BASE, .\n"
            "[rank4]:[E ProcessGroupNCCL.cpp:523] [Rank 4] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=956300, OpType=_ALLGATHER_BASE, NumelIn=.\n")
    _, r = diag(tmp_path, text)
    assert r.facts["timed_out_ranks"] == [4, 6]
    assert (r.facts["op_type"], r.facts["seq_num"]) == ("_ALLGATHER_BASE", 956300)
    assert r.facts["numel_in"] is None  # a value at the cut is never read


def test_a_failed_rank_is_no_straggler_of_a_sub_group(tmp_path: Path) -> None:
    # pytorch/pytorch#134006: rank 4 exited; rank 0 times out in a 2-rank group (PG 1)
    text = ("srun: error: workergpu008: task 1: Exited with exit code 1\n"
            "[rank4]: RuntimeError: boom\n"
            + wd(0, 2, op="_ALLGATHER_BASE", pg="PG 1 ")
            + "[rank0]:[E820 11:47:24.070046070 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception "
              "(either an error or timeout) detected by watchdog at work: 2, last enqueued NCCL "
              "work: 3, last completed NCCL work: 1.\n")
    _, r = diag(tmp_path, text)
    assert r.facts["process_group"] == "1"
    assert r.facts["lagging_ranks"] == [] and r.facts["pattern"] == "unknown"


def test_dump_signal_from_an_idle_group_blames_no_one(tmp_path: Path) -> None:
    # vllm-project/vllm-omni#2928: both ranks' default group has nothing uncompleted
    tail = (" and we will try our best to dump the debug info. Last enqueued NCCL work: 233659, "
            "last completed NCCL work: 233659.\n")
    text = ("[rank1]:[E418 01:32:50.907313453 ProcessGroupNCCL.cpp:1890] [PG ID 0 PG GUID "
            "0(default_pg) Rank 1] Received a dump signal due to a collective timeout from this "
            "local rank" + tail +
            "[rank0]:[E418 01:32:50.907342463 ProcessGroupNCCL.cpp:1890] [PG ID 0 PG GUID "
            "0(default_pg) Rank 0] Received a dump signal due to a collective timeout from  rank 1"
            + tail)
    _, r = diag(tmp_path, text)
    assert r.facts["timed_out_ranks"] == [1]
    assert r.facts["lagging_ranks"] == [] and r.facts["pattern"] == "unknown"
    assert r.facts["seq_num"] is None


def test_rank_that_reached_the_monitored_barrier_names_no_late_rank(tmp_path: Path) -> None:
    # HorizonRobotics/RoboOrchardLab#33: torch points at rank 0's logs, where the late rank is
    # named; rank 0 is not late for saying nothing (FunAudioLLM/CosyVoice#1727: ranks 5-7 so,
    # rank 0's log not shown; #180: rank 0's own report names rank 2)
    text = ("RuntimeError: Rank 1 successfully reached monitoredBarrier, but received errors while "
            "waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.\n"
            "[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129]\n"
            "Timed out waiting 600000ms for send operation to complete\n")
    _, r = diag(tmp_path, text)
    assert r.facts["timed_out_ranks"] == [1] and r.facts["lagging_ranks"] == []
    assert r.facts["pattern"] == "unknown"
    assert r.facts["timeout_ms"] == 600000 and r.facts["op_type"] == "MONITORED_BARRIER"


@pytest.mark.parametrize("sample", sorted(p.name for p in (DATA / "timeout").iterdir() if p.is_dir()))
def test_analyse_then_report_is_diagnose(sample: str) -> None:
    inc = traindoc.load(DATA / "timeout" / sample)
    for ws in (None, 8):
        a = timeout.analyse(inc, world_size=ws)
        r = timeout.report(a)
        assert r.summary(inc) == timeout.diagnose(inc, world_size=ws).summary(inc)
        assert (r.facts["timed_out_ranks"], r.facts["seq_num"], r.facts["pattern"]) == (
            a.timed_out_ranks, a.seq_num, a.pattern)
        assert r.facts["last_step"] == a.progress.step and len(a.timeouts) == len(
            to_analysis.timeout_rows(a.incident))


def test_analysis_without_a_timeout(tmp_path: Path) -> None:
    p = tmp_path / "job.log"
    p.write_text("step 1/10 loss 2.0\n")
    a = timeout.analyse(traindoc.load(p))
    assert not a.found and a.pattern == "unknown" and a.timed_out_ranks == []
    assert timeout.report(a).facts["pattern"] == "unknown"


def test_notebook_analyses_once() -> None:
    nb = json.loads((Path(timeout.__file__).parents[2] / "runbooks" / "timeout.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert code.count("timeout.analyse(") == 1 and "timeout.diagnose(" not in code
    assert "with_status_pg" not in code and "bottom_line_html()" in code


def test_a_negative_duration_is_no_duration(tmp_path: Path) -> None:
    """A corrupt or hostile Timeout(ms)=-1 is no timeout length: no '-0 s' in the verdict."""
    log = tmp_path / "job.log"
    log.write_text("[rank0]:[E708 01:46:13.700000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog "
                   "caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, "
                   "NumelIn=1, NumelOut=1, Timeout(ms)=-1) ran for 600009 milliseconds before "
                   "timing out.\n")
    r = timeout.diagnose(traindoc.load(log))
    assert r.facts["timeout_ms"] is None and r.facts["ran_for_ms"] == 600009
    assert "-0 s" not in r.verdict and "-" not in r.verdict.split("after", 1)[-1][:6]


def test_an_unreadable_seqnum_is_said_and_lowers_confidence(tmp_path: Path) -> None:
    """Rank 0's 23-digit SeqNum is <NA> (beyond int64): the report must not pretend both ranks
    are at #9 (issue 19.13)."""
    line = ("[rank{r}]:[E1121 10:00:00.1 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum={n}, OpType=ALLREDUCE, NumelIn=1, "
            "NumelOut=1, Timeout(ms)=600000) ran for 600009 milliseconds before timing out.\n")
    log = tmp_path / "job.log"
    log.write_text(line.format(r=0, n="1" * 23) + line.format(r=1, n=9))
    r = timeout.diagnose(traindoc.load(log))
    f = [x for x in r.findings if x.id == "seq_num_unreadable"]
    assert f and "rank 0" in f[0].title and r.confidence != "high"


def test_a_monitored_barrier_names_the_ranks_that_failed_to_pass_not_the_monitor() -> None:
    # issue 27: rank 1 printed that it waited for rank 0, the barrier's monitor; rank 0's own
    # report, which would name the rank that never came, is not in these logs
    r = timeout.diagnose(traindoc.load(DATA / "corpus" / "timeout" / "timeout-roboorchardlab-33"
                                       / "logs"))
    assert r.facts["lagging_ranks"] == [] and r.facts["timed_out_ranks"] == [1]
    assert "Rank 1 timed out in a monitoredBarrier (rank 0 is its monitor)" in r.verdict
    # CosyVoice#180: rank 0's report names rank 2, the monitor is no culprit
    r = timeout.diagnose(traindoc.load(DATA / "corpus" / "timeout" / "timeout-cosyvoice-180"
                                       / "logs"))
    assert r.facts["lagging_ranks"] == [2]
    lag = next(f for f in r.findings if f.id == "lagging_ranks")
    assert "None" not in lag.title and "MONITORED_BARRIER" in lag.title
    assert any(a.title == "Find where rank 2 was instead" for a in r.actions)


def test_a_size_desync_without_a_timeout_says_so() -> None:
    # issue 27: "Detected mismatch between collectives" with TensorShape differing, both
    # ALLREDUCE: it read "A rank (no rank tag) timed out … ranks issued different collectives"
    r = timeout.diagnose(traindoc.load(DATA / "corpus" / "timeout" / "timeout-ms-swift-9443"
                                       / "logs"))
    assert r.facts["pattern"] == "desync" and r.facts["timed_out_ranks"] == []
    assert r.verdict.startswith("ALLREDUCE #3104 (no timeout line in these logs)")
    assert "the same collective with different sizes" in r.verdict
    assert "different collectives" not in r.verdict


# The heartbeat monitor ending a rank whose watchdog hung (torch >= 2.4's LOG(FATAL) line), the
# last line such a rank prints when its "watchdog got stuck" line is cut from the excerpt. Real
# lines: NVIDIA/Fuser#3055, warpem/miss-alignment#105.
WATCHDOG_HANG_ENDS = [
    ("[F930 15:23:07.686401350 ProcessGroupNCCL.cpp:1309] [PG ID 6 PG GUID  Rank 0] [PG ID 6 PG "
     "GUID  Rank 0] Terminating the process after attempting to dump debug info, due to "
     "ProcessGroupNCCL watchdog hang.", None),  # rank 0 of PG 6: a group-local rank, not global
    ("[rank1]:[F513 12:46:14.495035780 ProcessGroupNCCL.cpp:1614] [PG ID 0 PG GUID 0(default_pg) "
     "Rank 1] [PG ID 0 PG GUID 0(default_pg) Rank 1] Terminating the process after attempting to "
     "dump debug info, due to ProcessGroupNCCL watchdog hang.", 1),
]


@pytest.mark.parametrize(("line", "rank"), WATCHDOG_HANG_ENDS)
def test_monitor_terminating_a_hung_watchdog_is_read(tmp_path: Path, line: str,
                                                     rank: int | None) -> None:
    p = tmp_path / "job.log"
    p.write_text(line + "\n")
    inc = traindoc.load(p)
    e = inc.errors
    got = e.iloc[0]["rank"] if len(e) else None
    assert list(e["code"]) == ["watchdog_stuck"]
    assert (None if pd.isna(got) else int(got)) == rank
    if rank is not None:
        assert timeout.analyse(inc).timed_out_ranks == [rank]


# A tag of a non-default process group ("[PG ID 1 PG GUID 1 Rank 1]") names the rank within
# that group: without a "[rankN]:" prefix the line's global rank is unknown, and a group-local
# rank must not be counted as another rank. Real lines: the whole-file driver log of
# megatron-deepspeed lock-clock ib_dual16_smoke_1080 (rank 4's c10 block lost its prefix),
# sgl-project/sglang#3709.
GROUP_LOCAL_TAGS = [
    ("  what():  [PG ID 1 PG GUID 1 Rank 1] Process group watchdog thread terminated with "
     "exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, "
     "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600025 milliseconds "
     "before timing out.", "1"),
    ("  what():  [PG ID 2 PG GUID 3 Rank 5] Process group watchdog thread terminated with "
     "exception: [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=91885, "
     "OpType=ALLREDUCE, NumelIn=1290240, NumelOut=1290240, Timeout(ms)=600000) ran for 600066 "
     "milliseconds before timing out.", "2"),
]


@pytest.mark.parametrize(("line", "pg"), GROUP_LOCAL_TAGS)
def test_a_non_default_group_tag_names_no_global_rank(line: str, pg: str) -> None:
    from traindoc.parse.collectives import parse_watchdog
    row = parse_watchdog(line)
    assert row is not None and row["rank"] is None and str(row["process_group"]).startswith(pg)


def test_the_rank_prefix_wins_over_a_group_local_rank(tmp_path: Path) -> None:
    # the smoke_1080 driver log: rank 4 (prefix) is group-local Rank 1; its c10 block's what()
    # line lost the prefix and must not add a rank 1
    text = ("v100x16-1: [rank0]:[E410 17:25:53.848336558 ProcessGroupNCCL.cpp:683] [Rank 0] "
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, "
            "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing "
            "out.\n"
            "v100x16-1: [rank4]:[E410 17:25:53.861955618 ProcessGroupNCCL.cpp:683] [Rank 1] "
            "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, "
            "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600025 milliseconds before timing "
            "out.\n"
            "v100x16-1: terminate called after throwing an instance of 'c10::DistBackendError'\n"
            f"v100x16-1: {GROUP_LOCAL_TAGS[0][0]}\n")
    assert diag(tmp_path, text)[1].facts["timed_out_ranks"] == [0, 4]


@pytest.mark.parametrize(("text", "ranks"), [
    # hiyouga/LLaMA-Factory#5558: an MPI launcher pod's prefix, no "[rankN]:" on any line
    ("mpi-rc1ou1aw-launcher:   what():  [PG 1 Rank 5] Process group watchdog thread terminated "
     "with exception: [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=635, "
     "OpType=ALLREDUCE, NumelIn=576156928, NumelOut=576156928, Timeout(ms)=600000) ran for 600097 "
     "milliseconds before timing out.\n", [5]),
    # sgl-project/sglang#3709: the what() line alone
    (GROUP_LOCAL_TAGS[1][0] + "\n", [5]),
])
def test_without_any_global_rank_the_group_tag_gives_the_rank(tmp_path: Path, text: str,
                                                              ranks: list[int]) -> None:
    # no line gives a global rank: the rank is the one the message gives (a prefix would win,
    # test_the_rank_prefix_wins_over_a_group_local_rank)
    assert diag(tmp_path, text)[1].facts["timed_out_ranks"] == ranks


# The last progress and the run's length. Megatron prints a validation line at the last
# iteration, without the total its train line gives: the total of any line at that step counts.
# Real lines: the megatron-deepspeed lock-clock tp1pp2dp8_base50 log, ROCm/rocm-blogs'
# megablocks/README.md (both end on 'iteration N/ N' then 'validation loss at iteration N').
MEGATRON_LAST_LINES = [
    (" iteration       50/      50 | consumed samples:          800 | consumed tokens:      "
     "1638400 | elapsed time per iteration (ms): 22625.0 | learning rate: 1.000E-05 | global "
     "batch size:    16 | lm loss: 8.953300E+00 | loss scale: 1.0 | grad norm: 2.129 |\n"
     " validation loss at iteration 50 on 160-sample draw from validation set | lm loss value: "
     "8.942019E+00 | lm loss PPL: 7.646624E+03 | \n", 50),
    (" iteration   2000/2000 | consumed samples:      1024000 | elapsed time per iteration (ms): "
     "657.1 | learning rate: 6.000E-05 | global batch size:   512 | lm loss: 4.640055E+00 | loss "
     "scale: 1.0 | grad norm: 0.344 | number of skipped iterations:   0 | number of nan "
     "iterations:   0 |\n"
     " validation loss at iteration 2000 | lm loss value: 4.583530E+00 | lm loss PPL: "
     "9.785927E+01 | \n", 2000),
]


@pytest.mark.parametrize(("text", "total"), MEGATRON_LAST_LINES)
def test_total_steps_from_the_train_line_of_the_last_step(tmp_path: Path, text: str,
                                                           total: int) -> None:
    facts = diag(tmp_path, text)[1].facts
    assert (facts["last_step"], facts["total_steps"]) == (total, total)


def _megatron_line(it: int) -> str:
    """The lock-clock tp1pp2dp8_base50 log's train line (above) at iteration ``it``."""
    return (f" iteration       {it}/      50 | consumed samples:          800 | consumed tokens:      "
            "1638400 | elapsed time per iteration (ms): 22625.0 | learning rate: 1.000E-05 | global "
            "batch size:    16 | lm loss: 8.953300E+00 | loss scale: 1.0 | grad norm: 2.129 |\n")


def test_the_last_step_is_the_last_runs(tmp_path: Path) -> None:
    # a relaunch appended to the same log (nohup … >> train.log), resumed from the checkpoint at
    # iteration 20: the job stopped at 30, not at the 40 the first launch had reached
    text = "".join(_megatron_line(i) for i in (10, 20, 30, 40, 20, 30))
    assert diag(tmp_path, text)[1].facts["last_step"] == 30


# HF Trainer's log dicts carry no step (the parser counts them); its tqdm bar beside them does.
# Real lines: ROCm/ROCm#4021 (the bar fused with a HW exception), hiyouga/LlamaFactory#8261
# (the bar fused with a watchdog line, as far as the stored excerpt goes; the paste's line
# numbers left out).
HF_DICTS_AND_BARS = [
    ("{'loss': 0.4589, 'grad_norm': 1.0493940198290594, 'learning_rate': 5.284132841328413e-06, "
     "'epoch': 1.22}\n"
     " 41%|" + "█" * 42 + "▌" + " " * 62 + "| 366/903 [5:15:39<6:53:09, 46.16s/it]HW Exception by "
     "GPU node-9 (Agent handle: 0x631351bb5a20) reason :GPU Hang\n", 366, 903),
    ("{'loss': 3.5534, 'grad_norm': 1.4142135381698608, 'learning_rate': 2.0454545454545457e-06, "
     "'epoch': 0.01}\n  1%|          | 20/1752 [00:57<1:22:40,  2.86s/it]\n"
     "{'loss': 0.0, 'grad_norm': 1.4142135381698608, 'learning_rate': 4.3181818181818185e-06, "
     "'epoch': 0.01}\n  1%|▏         | 24/1752 [01:08<1:22:56,  2.88s/it][rank5]:[E602 "
     "11:17:52.185053341 ProcessGroupNCCL.cpp:632] [Rank 5] Watchdog caught collective "
     "operati\n", 24, 1752),
]


@pytest.mark.parametrize(("text", "step", "total"), HF_DICTS_AND_BARS)
def test_the_bar_beside_stepless_hf_dicts_gives_the_step(tmp_path: Path, text: str, step: int,
                                                         total: int) -> None:
    facts = diag(tmp_path, text)[1].facts
    assert (facts["last_step"], facts["total_steps"]) == (step, total)


# A tqdm bar fused with another rank's watchdog line, that line wrapped by the terminal at a
# space (kept at the end of the physical line): nanotron#204, whole. The joined line has two
# spaces at the wrap, which the watchdog wording allows between its words. The fused bar and
# rank prefix also in hiyouga/LlamaFactory#8261 (its excerpt cut inside the wording).
NANOTRON_204 = (
    "[default0]:Grouping texts in chunks of 2049:   8%|▊         | 726000/9672101 [02:32<30:38, "
    "4866.01 examples/s][default2]:[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught \n"
    "collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=600000) ran for 600888 milliseconds before timing out.                   \n"
    "[default3]:[E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) \n"
    "ran for 600892 milliseconds before timing out.\n")


def test_a_watchdog_line_wrapped_at_a_space_after_a_fused_bar(tmp_path: Path) -> None:
    facts = diag(tmp_path, NANOTRON_204)[1].facts
    assert facts["timed_out_ranks"] == [2, 3] and facts["seq_num"] == 3


def test_a_rank_prefix_fused_to_a_bar_is_split_off(tmp_path: Path) -> None:
    # hiyouga/LlamaFactory#8261: the bar's line ends where rank 5's line begins
    inc, _ = diag(tmp_path, HF_DICTS_AND_BARS[1][0])
    assert inc.progress["step"].max() == 24 and inc.progress["rank"].isna().all()


# Watchdog lines are one number per rank: a rank that timed out at a later number does not hide
# the ranks that disagree at an earlier one (only a ring buffer's window moves the comparison's
# start). trlx#319 (corpus timeout-trlx-319): ranks 2 and 3 at 696 in BROADCAST and ALLREDUCE,
# rank 1 already at 697; NVIDIA/nccl#1409: ranks 7 and 3 at 80078 in BROADCAST and ALLREDUCE.
@pytest.mark.parametrize("text", [
    "  what():  [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=696, "
    "OpType=BROADCAST, Timeout(ms)=1800000) ran for 1802763 milliseconds before timing out.\n"
    "  what():  [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=696, "
    "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802485 milliseconds before timing out.\n"
    "[E ProcessGroupNCCL.cpp:821] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=697, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1803843 milliseconds "
    "before timing out.\n",
    "[rank7]:[E816 01:45:40.183009389 ProcessGroupNCCL.cpp:607] [Rank 7] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=80078, OpType=BROADCAST, NumelIn=5056, "
    "NumelOut=5056, Timeout(ms)=600000) ran for 600026 milliseconds before timing out.\n"
    "[rank3]:[E816 01:45:40.212150935 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=80078, OpType=ALLREDUCE, NumelIn=2106881, "
    "NumelOut=2106881, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.\n",
])
def test_watchdog_ranks_at_different_numbers_still_show_a_desync(tmp_path: Path, text: str) -> None:
    (tmp_path / "job.log").write_text(text)
    f = timeout.diagnose(traindoc.load(tmp_path, year=2024)).facts
    assert f["pattern"] == "desync"


def test_a_batch_counter_that_never_moves_counts_epochs(tmp_path: Path) -> None:
    """A loop that logs once an epoch at its first batch (PVD / pcdiff "[101/5000][  0/  7]")
    counts epochs: the last step is the last epoch, not the batch (0); a batch that moves (the
    DCGAN example's "[24/25][937/938]") stays the step."""
    from traindoc.diagnose.common import last_progress

    fixed = tmp_path / "fixed"
    fixed.mkdir()
    (fixed / "output.log").write_text("".join(
        f"2026-04-06 07:{e - 40:02d}:29,146 : [{e:>3d}/5000][  0/  7]    loss:     0.2{e},    "
        "grad_norm:     0.1531\n" for e in range(96, 102)))
    moving = tmp_path / "moving"
    moving.mkdir()
    (moving / "train.log").write_text("".join(
        f"[{e}/25][{b}/938] Loss_D: 0.0120 Loss_G: 6.1335 D(x): 0.9978 D(G(z)): 0.0097 / 0.0027\n"
        for e in range(22, 25) for b in (0, 937)))
    assert last_progress(traindoc.load(str(fixed))).step == 101
    assert last_progress(traindoc.load(str(moving))).step == 937


@pytest.mark.parametrize("bundle", [DATA / "timeout" / "drill_unseeded_split",
                                    Path(__file__).parent / "data" / "drills"
                                    / "unseeded_split_rank0_ahead"])
def test_a_mismatch_in_another_group_names_no_straggler_of_the_timed_out_one(bundle: Path) -> None:
    # Two recordings of the unseeded_split drill: rank 1 ran out of data and timed out in the
    # checkpoint group's all_gather #1, which rank 0 (still training) never entered. In the
    # second, rank 0 had also enqueued the default group's all_reduce #33 before the dump, so
    # the flight recorder shows rank 1 missing there: that says nothing of the checkpoint
    # group, and rank 1 is still no straggler (CI of 9dbebb4 met the second timing).
    truth = json.loads((bundle / "drill.json").read_text())["facts"]
    a = timeout.analyse(traindoc.load(bundle))
    assert a.timed_out_ranks == truth["timed_out_ranks"] == [1]
    assert a.lagging_ranks == truth["lagging_ranks"] == [0]
    assert str(a.process_group).startswith("1")
