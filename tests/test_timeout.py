"""traindoc.diagnose.timeout on the seeds and on synthetic multi-rank logs."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import traindoc
from conftest import DATA
from traindoc.diagnose import timeout
from traindoc.diagnose.collectives import first_mismatch


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
    assert r.facts["timed_out_ranks"] == [0, 1]
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
    mm = first_mismatch(inc.collectives)
    assert mm == {"process_group": "0 (default_pg)", "seq_num": 2, "kind": "op",
                  "ops": {"0": "gloo:all_reduce", "1": "gloo:all_gather"}, "ranks": [1]}


def test_flight_recorder_missing_rank(tmp_path: Path) -> None:
    (tmp_path / "rank0").write_bytes(fr_dump([(1, "gloo:all_reduce", [[4]]), (2, "gloo:all_reduce", [[4]])]))
    (tmp_path / "rank1").write_bytes(fr_dump([(1, "gloo:all_reduce", [[4]])]))
    mm = first_mismatch(traindoc.load(tmp_path).collectives)
    assert mm["kind"] == "missing_ranks" and mm["ranks"] == [1] and mm["seq_num"] == 2


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
