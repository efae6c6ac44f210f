"""traindoc.diagnose.deadlock on the BLOOM seed, on real gloo hangs (py-spy + flight recorder),
the leaf/grouping rules on small synthetic dumps, and torch's torchfrtrace on the same dumps."""

from __future__ import annotations

import pickle
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traindoc
from conftest import DATA, ROOT, analysis_once, load_once
from test_timeout import Boom
from traindoc import plots, schema
from traindoc.diagnose import deadlock
from traindoc.diagnose.collectives import first_mismatch
from traindoc.diagnose.deadlock import stacks as deadlock_stacks
from traindoc.parse.flight_recorder import read_dump

FIX = ROOT / "tests" / "data" / "pyspy"
BLOOM = DATA / "deadlock" / "bloom_seed"
DESYNC = DATA / "deadlock" / "gloo_desync_hang"
DRILL_HANG = DATA / "deadlock" / "drill_hang"
DRILL_DESYNC = DATA / "timeout" / "drill_desync"


def diag(path: Path, **kw):
    inc = traindoc.load(path)
    return inc, deadlock.diagnose(inc, **kw)


# -- the seed ----------------------------------------------------------------------------------
def test_bloom_seed_names_the_dataloader_rank() -> None:
    _, r = diag(BLOOM)
    f = r.facts
    assert set(f) == set(deadlock.FACT_KEYS)
    assert f["processes_seen"] == 16
    assert f["outlier_members"] == ["jean-zay-iam48:688514"]
    assert f["outlier_leaf"] == "_try_get_data (torch/utils/data/dataloader.py:1011)"
    assert f["majority_leaf"] == "broadcast (torch/distributed/distributed_c10d.py:1191)"
    assert f["first_mismatch"] is None
    assert [g["count"] for g in f["groups"]] == [4, 4, 4, 3, 1]
    assert f["groups"][-1]["members"] == ["jean-zay-iam48:688514"]
    assert r.confidence == "high" and "_try_get_data" in r.verdict
    assert r.actions[0].id == "eval_loader_num_workers_0" and "num_workers=0" in r.actions[0].how
    ids = [a.id for a in r.actions]
    assert {"py_spy_all_ranks", "flight_recorder", "make_hangs_fail"} <= set(ids)
    how = " ".join(a.how for a in r.actions)
    for needle in ("srun", "py-spy dump", "TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE",
                   "TORCH_NCCL_DUMP_ON_TIMEOUT", "torchfrtrace"):
        assert needle in how, needle
    out = next(x for x in r.findings if x.id == "outliers")
    assert any("_try_get_data" in e for e in out.evidence)


# -- real gloo hangs ------------------------------------------------------------------------------
def test_desync_hang_names_seq_ops_and_ranks() -> None:
    _, r = diag(DESYNC)
    mm = r.facts["first_mismatch"]
    assert mm["kind"] == "op" and mm["ops"] == {"0": "gloo:all_reduce", "1": "gloo:all_gather"}
    seq = mm["seq_num"]
    for needle in (f"sequence number {seq}", "rank 0 issued gloo:all_reduce",
                   "rank 1 issued gloo:all_gather"):
        assert needle in r.verdict, needle
    # Two ranks, two different collectives: nobody is "the" outlier, both stacks are named.
    assert r.facts["outlier_members"] == [] and r.facts["processes_seen"] == 2
    assert "rank 0 in all_reduce" in r.verdict and "rank 1 in all_gather" in r.verdict
    assert r.actions[0].id == "rank_conditional_collective"
    assert {g["members"][0] for g in r.facts["groups"]} == {0, 1}  # ranks from trace-…-rank<N>-…


def test_drill_desync_flight_recorder_alone() -> None:
    if not (DRILL_DESYNC / "fr").is_dir():
        pytest.skip("drill bundle not generated")
    # the whole bundle: the ranks' crash tracebacks are their stacks (torchrun's own and its
    # copies left out), rank 1 the one outside the collective
    _, r = diag(DRILL_DESYNC)
    assert r.facts["processes_seen"] == 2 and r.facts["outlier_members"] == [1]
    assert "the flight recorder agrees" in r.verdict
    _, r = diag(DRILL_DESYNC / "fr")
    mm = r.facts["first_mismatch"]
    assert mm["kind"] == "op" and mm["ops"] == {"0": "gloo:all_reduce", "1": "gloo:all_gather"}
    assert f"sequence number {mm['seq_num']}" in r.verdict
    assert "rank 0 issued gloo:all_reduce" in r.verdict and "rank 1 issued gloo:all_gather" in r.verdict
    assert any(x.id == "no_stacks" for x in r.findings)


def test_drill_hang_rank_inferred_from_the_flight_recorder() -> None:
    if not (DRILL_HANG / "pyspy").is_dir():
        pytest.skip("drill bundle not generated")
    inc, r = diag(DRILL_HANG)
    assert inc.stacks["rank"].isna().all()  # the dumps name no rank…
    assert r.facts["outlier_members"] == [1]  # …the flight recorder does
    assert r.facts["majority_leaf"].startswith("broadcast (torch/distributed/distributed_c10d.py:")
    # the leaf rule looks through Condition.wait / Queue.get to the program's own frame
    assert r.facts["outlier_leaf"].startswith("_Trainer.evaluate (")
    mm = r.facts["first_mismatch"]
    assert mm["kind"] == "missing_ranks" and mm["ranks"] == [1]
    assert any(x.id == "ranks_inferred" for x in r.findings)


# -- torch's own analyser on the same dumps --------------------------------------------------
def _torchfrtrace() -> str:
    exe = shutil.which("torchfrtrace") or str(Path(sys.executable).with_name("torchfrtrace"))
    if not Path(exe).exists():
        pytest.skip("torchfrtrace not installed")
    return exe


def _copy_dumps(src: Path, dst: Path, nccl_shaped: bool) -> None:
    """As torchfrtrace wants them (<prefix><rank>); ``nccl_shaped``: pg_config keyed by the
    entries' process-group names, as ProcessGroupNCCL writes it (gloo on torch 2.13 keys it '')."""
    dst.mkdir()
    for p in sorted(src.glob("rank*.pkl")):
        dump = read_dump(p)  # our restricted loader: plain data only
        if nccl_shaped:
            names = {e["process_group"] for e in dump["entries"]}
            ranks = next(iter(dump["pg_config"].values()))["ranks"]
            dump["pg_config"] = {n: {"name": n, "desc": d, "ranks": ranks} for n, d in names}
        (dst / f"rank_{p.stem[4:]}").write_bytes(pickle.dumps(dump))


def _run(exe: str, d: Path) -> subprocess.CompletedProcess[str]:
    """torchfrtrace's report goes to its logger (stderr): ``stdout`` gets both streams."""
    return subprocess.run([exe, str(d), "-p", "rank_"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120, check=False)


def test_torchfrtrace_fails_on_gloo_dumps_where_we_do_not(tmp_path: Path) -> None:
    exe = _torchfrtrace()
    _copy_dumps(DESYNC / "fr", tmp_path / "raw", nccl_shaped=False)
    res = _run(exe, tmp_path / "raw")
    assert res.returncode != 0
    assert re.search(r"KeyError: \('0', 0\)", res.stdout), res.stdout[-2000:]
    assert first_mismatch(traindoc.load(DESYNC / "fr").collectives).kind == "op"


def test_torchfrtrace_agrees_on_nccl_shaped_dumps(tmp_path: Path) -> None:
    exe = _torchfrtrace()
    _copy_dumps(DESYNC / "fr", tmp_path / "desync", nccl_shaped=True)
    res = _run(exe, tmp_path / "desync")
    assert res.returncode == 0, res.stdout[-2000:]
    mm = first_mismatch(traindoc.load(DESYNC / "fr").collectives)
    m = re.search(r"Collective sequence number: (\d+) has errors", res.stdout)
    assert m and int(m[1]) == mm.seq_num
    m = re.search(r"Culprit rank (\d+); Error type: COLLECTIVE_TYPE_MISMATCH, Expected collective "
                  r"type: '(\w+)' does not match found collective type: '(\w+)'", res.stdout)
    assert m, res.stdout[-2000:]
    assert [int(m[1])] == mm.ranks
    assert {f"gloo:{m[2]}", f"gloo:{m[3]}"} == set(mm.ops.values())


def test_torchfrtrace_agrees_on_a_missing_rank(tmp_path: Path) -> None:
    if not (DRILL_HANG / "fr").is_dir():
        pytest.skip("drill bundle not generated")
    exe = _torchfrtrace()
    _copy_dumps(DRILL_HANG / "fr", tmp_path / "hang", nccl_shaped=True)
    res = _run(exe, tmp_path / "hang")
    assert res.returncode == 0, res.stdout[-2000:]
    mm = first_mismatch(traindoc.load(DRILL_HANG / "fr").collectives)
    m = re.search(r"Not all ranks joining collective, sequence number: (\d+)", res.stdout)
    assert m and int(m[1]) == mm.seq_num
    m = re.search(r"missing ranks: \{([\d, ]+)\}", res.stdout)
    assert m and sorted(int(x) for x in m[1].split(",")) == mm.ranks


def test_malicious_dump_beside_stacks_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    marker = Path("/tmp/traindoc-pwned")
    marker.unlink(missing_ok=True)
    shutil.copy(FIX / "plain.txt", tmp_path / "trace-node1.out")
    (tmp_path / "rank0.pkl").write_bytes(pickle.dumps({"entries": [Boom()]}))
    inc, r = diag(tmp_path)
    assert not marker.exists()
    assert any("refused to import" in w for w in inc.account["warnings"])
    assert r.facts["processes_seen"] == 1


# -- rules on small synthetic dumps (py-spy's shape) --------------------------------------------
MAIN = 'Thread {pid} ({state}): "MainThread"\n'


def dump(pid: int, frames: list[str], state: str = "active", extra: str = "") -> str:
    return (f"Process {pid}: python train.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
            + MAIN.format(pid=pid, state=state) + "".join(f"    {f}\n" for f in frames) + extra)


AR = ["all_reduce (torch/distributed/distributed_c10d.py:2501)", "step (train.py:40)",
      "main (train.py:90)"]
AG = ["all_gather (torch/distributed/distributed_c10d.py:2900)", "step (train.py:44)",
      "main (train.py:90)"]
LOADER = ["wait (threading.py:320)", "get (queue.py:171)",
          "_try_get_data (torch/utils/data/dataloader.py:1131)", "evaluate (train.py:60)",
          "main (train.py:92)"]


def write_dumps(tmp_path: Path, dumps: dict[str, str]) -> Path:
    for name, text in dumps.items():
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize(("frames", "leaf"), [
    (LOADER, "_try_get_data (torch/utils/data/dataloader.py:1131)"),
    (["Condition.wait (/usr/lib/python3.11/threading.py:327)", "f (/w/x.py:3)"], "f (/w/x.py:3)"),
    (["0x7f72b8ea3f16 (libc.so.6)", "PyThread_acquire_lock_timed (libpython3.11.so.1.0)",
      "Condition.wait (threading.py:327)", "Queue.get (queue.py:171)", "run (x.py:9)"], "run (x.py:9)"),
    (["Condition.wait (threading.py:327)", "Event.wait (threading.py:629)"],
     "Condition.wait (threading.py:327)"),  # nothing but waits: the innermost Python frame
    (["get (myproj/queue.py:10)", "f (x.py:1)"], "get (myproj/queue.py:10)"),  # not the stdlib
    (["syscall (libc.so.6)"], "syscall (libc.so.6)"),
    # intel/gprofiler#612: a PyInstaller bundle's bare file names; result is Future.result
    (["wait (threading.py:295)", "result (_base.py:427)", "_snapshot (main.py:278)"],
     "_snapshot (main.py:278)"),
    (["result (mypkg/_base.py:12)", "f (x.py:1)"], "result (mypkg/_base.py:12)"),  # a package's
    # pytorch/pytorch#16654: the stack printed by code run inside the hung process (gdb's
    # PyRun_SimpleString): 'File "<string>", line 1, in <module>' innermost is not the leaf
    (["<module> (<string>:1)",
      "all_reduce_multigpu (/a/lib/python2.7/site-packages/torch/distributed/__init__.py:306)",
      "reduction_fn_nccl (/a/lib/python2.7/site-packages/torch/nn/parallel/distributed.py:341)"],
     "all_reduce_multigpu (/a/lib/python2.7/site-packages/torch/distributed/__init__.py:306)"),
    # pyrasite's payload exec'd from the injected string: two such frames
    (["<module> (<string>:3)", "<module> (<string>:1)", "wait (threading.py:320)",
      "step (train.py:40)"], "step (train.py:40)"),
    (["<module> (<string>:1)"], "<module> (<string>:1)"),  # python -c: the whole program
    (["sleep (x.py:2)", "<module> (<string>:1)"], "sleep (x.py:2)"),  # outermost: a -c start
])
def test_key_leaf_rule(frames: list[str], leaf: str) -> None:
    assert deadlock_stacks.key_leaf(frames) == leaf


def test_native_dump_signature_has_no_addresses() -> None:
    inc = traindoc.load(FIX / "native.txt")
    p = deadlock_stacks.processes(inc.stacks)[0]
    assert p.leaf == "Trainer.evaluate (trainer.py:18)"
    assert "0x" not in p.signature and "libc" not in p.signature


def test_smallest_group_when_all_wait_in_collectives(tmp_path: Path) -> None:
    d = write_dumps(tmp_path, {f"trace-n{i}.out": dump(100 + i, AG if i == 2 else AR)
                               for i in range(4)})
    _, r = diag(d)
    assert r.facts["outlier_members"] == ["n2:102"]
    assert r.facts["outlier_leaf"] == AG[0] and r.facts["majority_leaf"] == AR[0]
    assert r.actions[0].id == "rank_conditional_collective"
    assert "step (train.py:44)" in r.actions[0].why  # the call sites, to find the branch


def test_outside_the_collective_beats_group_size(tmp_path: Path) -> None:
    d = write_dumps(tmp_path, {"trace-a.out": dump(1, AR) + dump(2, AR),
                               "trace-b.out": dump(3, LOADER, "idle") + dump(4, LOADER, "idle")})
    _, r = diag(d)
    assert r.facts["outlier_members"] == ["b:3", "b:4"]
    assert r.facts["outlier_leaf"] == LOADER[2]


def test_tie_without_flight_recorder_names_no_one(tmp_path: Path) -> None:
    d = write_dumps(tmp_path, {"trace-a.out": dump(1, AR) + dump(2, AG)})
    _, r = diag(d)
    assert r.facts["outlier_members"] == [] and r.facts["majority_leaf"] is None
    assert r.confidence == "low"


def test_all_in_the_same_collective(tmp_path: Path) -> None:
    d = write_dumps(tmp_path, {"trace-a.out": dump(1, AR) + dump(2, AR) + dump(3, AR)})
    _, r = diag(d)
    assert r.facts["outlier_members"] == [] and r.facts["majority_leaf"] == AR[0]
    assert "transport" in r.verdict and any(a.id == "check_transport" for a in r.actions)


def test_depth_and_thread_parameters(tmp_path: Path) -> None:
    other = ["all_reduce (torch/distributed/distributed_c10d.py:2501)", "step (train.py:40)",
             "main (train.py:95)"]
    helper = ('Thread 77 (idle): "pt_autograd_0"\n    Condition.wait (threading.py:327)\n'
              'Thread 78 (active): "compute"\n    busy (train.py:7)\n')
    d = write_dumps(tmp_path, {"trace-a.out": dump(1, AR, extra=helper) + dump(2, other)})
    whole = deadlock_stacks.processes(traindoc.load(d).stacks)
    assert len({p.signature for p in whole}) == 2
    top2 = deadlock_stacks.processes(traindoc.load(d).stacks, depth=2)
    assert len({p.signature for p in top2}) == 1
    every = deadlock_stacks.processes(traindoc.load(d).stacks, thread="*")
    p1 = next(p for p in every if p.pid == 1)
    assert p1.threads == ["MainThread", "compute"]  # pt_autograd_0 is an idle helper
    assert "busy (train.py:7)" in p1.signature


def test_dataloader_workers_are_set_apart(tmp_path: Path) -> None:
    worker = ["wait (threading.py:320)", "get (multiprocessing/queues.py:113)",
              "_worker_loop (torch/utils/data/_utils/worker.py:275)", "run (multiprocessing/process.py:108)"]
    d = write_dumps(tmp_path, {"trace-a.out": dump(1, AR) + dump(2, AR) + dump(3, worker, "idle")})
    _, r = diag(d)
    assert r.facts["processes_seen"] == 2 and r.facts["outlier_members"] == []
    assert any(x.id == "helper_processes" for x in r.findings)


def test_snapshots_tell_stuck_from_moving(tmp_path: Path) -> None:
    d = write_dumps(tmp_path, {"trace-a.out": dump(1, AR) + dump(2, AR) + dump(1, AR) + dump(2, AG)})
    _, r = diag(d)
    snap = next(x for x in r.findings if x.id == "snapshots")
    assert snap.severity == "warning" and "1 of 2" in snap.title


def test_flight_recorder_names_the_missing_rank_when_stacks_tie(tmp_path: Path) -> None:
    from test_timeout import fr_dump

    (tmp_path / "trace-a-rank0-1.out").write_text(dump(1, AR))
    (tmp_path / "trace-a-rank1-2.out").write_text(dump(2, AG))
    (tmp_path / "rank0").write_bytes(fr_dump([(1, "gloo:all_reduce", [[4]]), (2, "gloo:all_reduce", [[4]])]))
    (tmp_path / "rank1").write_bytes(fr_dump([(1, "gloo:all_reduce", [[4]])]))
    _, r = diag(tmp_path)
    assert r.facts["outlier_members"] == [1] and r.facts["outlier_leaf"] == AG[0]
    assert r.facts["first_mismatch"]["kind"] == "missing_ranks"


def test_py_spy_errors_are_a_finding(tmp_path: Path) -> None:
    d = write_dumps(tmp_path, {"trace-a.out": dump(1, AR) + (FIX / "error.txt").read_text()
                               + dump(2, AR)})
    _, r = diag(d)
    err = next(x for x in r.findings if x.id == "dump_errors")
    assert "1 process" in err.title and "Failed to find python version" in err.evidence[0]


@pytest.mark.parametrize("content", ["", "nothing wrong here\n", "loss 2.1 (train.py:4)\n"])
def test_no_stacks_is_a_finding_not_a_crash(tmp_path: Path, content: str) -> None:
    (tmp_path / "job.log").write_text(content)
    _, r = diag(tmp_path / "job.log")
    assert set(r.facts) == set(deadlock.FACT_KEYS)
    assert r.facts["processes_seen"] == 0 and r.facts["groups"] == []
    assert any(x.id == "no_stacks" for x in r.findings) and r.confidence == "low"
    assert r.actions and all(a.why and a.how for a in r.actions)


def test_groups_figure(tmp_path: Path) -> None:
    views = deadlock.analyse(traindoc.load(BLOOM)).tables()
    fig = plots.stack_groups(views["groups"])
    assert len(fig.axes[0].patches) == 5
    assert plots.save(fig, tmp_path, "g").stat().st_size > 1000
    assert isinstance(plots.stack_groups(views["groups"].iloc[0:0]), plots.Message)
    assert views["processes"]["outlier"].sum() == 1 and len(views["outliers"]) > 3


def test_a_lone_rank_in_a_collective_is_the_odd_one(tmp_path: Path) -> None:
    # NCCL ranks often block outside torch.distributed (in .item() or a CUDA sync); one rank in
    # a rank-0-only broadcast is then the odd one, not the many outside a collective.
    compute = ["step (train.py:50)", "main (train.py:90)"]
    extra = ["broadcast (torch/distributed/distributed_c10d.py:2000)", "log_metrics (train.py:70)",
             "main (train.py:91)"]
    d = write_dumps(tmp_path, {"trace-a.out": dump(1, extra) + dump(2, compute) + dump(3, compute)})
    _, r = diag(d)
    assert r.facts["outlier_members"] == ["a:1"] and r.facts["outlier_leaf"] == extra[0]



@pytest.mark.parametrize("path", [BLOOM, DESYNC, DRILL_HANG], ids=lambda p: p.name)
def test_report_of_analyse_is_diagnose(path: Path) -> None:
    inc = traindoc.load(path)
    a = deadlock.analyse(inc)
    r = deadlock.report(a)
    assert r.summary(inc) == deadlock.diagnose(inc).summary(inc)
    assert a.outlier_members == r.facts["outlier_members"]
    assert a.majority_leaf == r.facts["majority_leaf"] and (a.mismatch and a.mismatch.as_fact()) == r.facts["first_mismatch"]
    assert set(a.tables()) == {"processes", "groups", "outliers", "flight_recorder"}
    assert int(a.processes["outlier"].sum()) == len(a.outliers)
    assert int(a.groups["count"].sum()) == r.facts["processes_seen"]
    with pytest.raises(AttributeError):
        a.rule = "tie"  # frozen

# -- the fast grouping against the plain one -----------------------------------------------------
def reference_processes(stacks: pd.DataFrame, thread: str = "MainThread",
                        depth: int | None = None) -> list[deadlock_stacks.Proc]:
    """``deadlock_stacks.processes`` as it was before it grouped plain lists and memoised per stack: a
    pandas groupby, one ``itertuples`` per process and every frame list matched per row."""
    na, file_of = deadlock_stacks._na, deadlock_stacks._file_of
    mains_names = deadlock_stacks.MAIN_THREAD_NAMES

    def frames_of(row):
        return list(row.frames) if isinstance(row.frames, list) else []

    def to_int(v):
        v = na(v)
        return None if v is None else int(v)

    def choose(rows):
        if thread == "*":
            keep = [r for r in rows if not deadlock_stacks.is_idle_helper_thread(na(r.thread), frames_of(r))]
            return keep or [r for r in rows if na(r.thread) in mains_names]
        names = mains_names if thread in mains_names else (thread,)
        chosen = [r for r in rows if na(r.thread) in names]
        if chosen:
            return chosen
        if names == mains_names:  # the thread whose id is the pid
            chosen = [r for r in rows if na(r.pid) is not None and str(na(r.tid)) == str(na(r.pid))]
            if chosen:
                return chosen
        if len({na(r.tid) for r in rows}) == 1 and all(na(r.thread) is None for r in rows):
            return rows
        return []

    def snapshots(rows):
        snaps, seen = [], set()
        for r in sorted(rows, key=lambda r: r.order_):
            tid = (na(r.tid), na(r.thread))
            if tid in seen or not snaps:
                snaps.append([])
                seen = set()
            seen.add(tid)
            snaps[-1].append(r)
        return snaps

    if not len(stacks):
        return []
    # a traceback the process printed counts only where no dump is; beside ranks' tracebacks,
    # unranked ones are the launcher's
    tb = stacks["state"].fillna("").isin(deadlock_stacks.TRACEBACK_STATES)
    if tb.any() and not tb.all():
        stacks = stacks[~tb]
    elif tb.any() and stacks["rank"].notna().any():
        stacks = stacks[stacks["rank"].notna() | stacks["pid"].notna()]
    # a dump error or ps row counts only for a process the log names, and only when nothing
    # else of it was read (a ps row's D state stays with the process)
    no_stack = ("dump_error", "D")
    df = stacks[~stacks["state"].fillna("").isin(no_stack) | stacks["pid"].notna()
                | stacks["rank"].notna()]
    if not len(df):
        return []
    keys = []
    seen, dumps = set(), 0  # pid 1 on no host: each dump (a thread seen again) a container
    current: dict = {}
    for host, pid, rank, src, state, tid, thr in zip(df["host"], df["pid"], df["rank"],
                                                     df["source"], df["state"], df["tid"],
                                                     df["thread"], strict=False):
        host, pid, rank = na(host), na(pid), na(rank)
        if na(state) == "listed":
            keys.append(("listed", host, str(src)))
        elif pid == 1 and host is None and rank is None:
            if (na(tid), na(thr)) in seen:
                dumps, seen = dumps + 1, set()
            seen.add((na(tid), na(thr)))
            keys.append(("pid", None, 1, dumps))
        elif pid is not None:
            keys.append(("pid", host, int(pid)))
        elif rank is not None:
            keys.append(("rank", host, int(rank)))
        else:  # each "Current thread" id of a file that names no process: another dump's
            ids = current.setdefault((host, file_of(src)), [])
            if na(state) == "current" and na(tid) is not None:
                if na(tid) not in ids:
                    ids.append(na(tid))
                n = ids.index(na(tid))
            else:
                n = len(ids) - 1 if ids else 0
            keys.append(("file", host, file_of(src), n))
    df = df.assign(key_=keys, order_=range(len(df)))

    def proc(key, chosen, stuck, others=()):
        """One process of the reference grouping."""
        snaps = snapshots(chosen)

        def python(s):
            return any(deadlock_stacks.split_frame(str(f)).python for r in s for f in frames_of(r))

        # a native-only snapshot (gdb's backtrace after py-spy's dump) neither stands for the
        # process over an earlier one with Python frames nor says it moved
        native = [any(frames_of(r) for r in s) and not python(s) for s in snaps]
        at = len(snaps) - 1
        if native[at]:
            at = next((i for i in range(at - 1, -1, -1) if python(snaps[i])), at)
        last = snaps[at]
        mains = [r for r in last if na(r.thread) in mains_names]
        first = mains[0] if mains else last[0]
        frames = frames_of(first)
        sigs = [" ‖ ".join(sorted(deadlock_stacks.signature(frames_of(r), depth) for r in s)) for s in snaps]
        moving = [sig for sig, n in zip(sigs, native, strict=True) if not n] or sigs
        leaf, coll, sig_at = deadlock_stacks.key_leaf(frames), deadlock_stacks.in_collective(frames), None
        at_leaf = deadlock_stacks.split_frame(leaf) if leaf else None
        if others and at_leaf is not None and at_leaf.python and deadlock_stacks.generic_wait(
                at_leaf.func, at_leaf.file):  # the main thread only waits: its other threads say for what
            cont = deadlock_stacks.continued_leaf(frames, [
                frames_of(r) for r in others
                if not deadlock_stacks.HELPER_THREAD_RE.search(str(na(r.thread) or ""))])
            if cont is not None:
                leaf, coll = deadlock_stacks.key_leaf(cont), coll or deadlock_stacks.in_collective(cont)
                sig_at = deadlock_stacks.signature(cont, depth)
        return deadlock_stacks.Proc(
            key=key, rank=to_int(first.rank), host=na(first.host), pid=to_int(first.pid),
            frames=frames, leaf=(f"not dumped: {str(na(first.line) or 'py-spy error').strip()}"
                                 if na(first.state) == "dump_error" else
                                 f"uninterruptible sleep (D): {na(first.cmd) or 'no stack'}"
                                 if na(first.state) == "D" and not frames
                                 else leaf),
            signature=sig_at or sigs[at],
            in_collective=coll, helper=deadlock_stacks.is_helper_process(frames),
            source=str(first.source), line=str(na(first.line) or ""),
            thread=na(first.thread), state="D" if stuck else na(first.state), cmd=na(first.cmd),
            snapshots=len(snaps), moved=len(set(moving)) > 1,
            threads=[str(na(r.thread) or na(r.tid) or "?") for r in last])

    out = []
    no_main = []
    for key, g in df.groupby("key_", sort=False):
        rows = list(g.itertuples(index=False))
        stuck = any(na(r.state) == "D" for r in rows)
        if len(rows) > 1 and any(na(r.state) in no_stack for r in rows):
            rows = [r for r in rows if na(r.state) not in no_stack] or rows[:1]
        chosen = choose(rows)
        if not chosen:  # faulthandler threads only, none of them the main thread
            if thread in mains_names and all(re.fullmatch(r"0x[0-9a-fA-F]+", str(na(r.tid)))
                                             for r in rows):
                no_main.append((key, rows[-1:], stuck))
            continue
        out.append(proc(key, chosen, stuck, [r for r in rows if all(r is not c for c in chosen)]))
    if not out:  # no main thread anywhere: such a dump's last thread stands for its process
        out = [proc(key, chosen, stuck) for key, chosen, stuck in no_main]
    per_file = Counter(p.key[:3] for p in out if p.key[0] == "file")
    for p in out:
        p.several = p.key[0] == "file" and per_file[p.key[:3]] > 1
    if out and all(p.helper for p in out):  # helpers alone: they are the processes looked at
        for p in out:
            p.helper = False
    return deadlock_stacks.merge_listed(out)


THREAD_ARGS = [("MainThread", None), ("*", None), ("MainThread", 2), ("pt_autograd_0", None),
               ("pt_main_thread", 1), ("*", 3)]


@pytest.mark.parametrize("path", [BLOOM, DESYNC, DRILL_HANG, *sorted(
    p for p in FIX.iterdir() if p.suffix in (".txt", ".json"))], ids=lambda p: p.name)
def test_processes_equal_the_plain_grouping_on_the_samples(path: Path) -> None:
    stacks = traindoc.load(path).stacks
    for thread, depth in THREAD_ARGS:
        assert deadlock_stacks.processes(stacks, thread, depth) == reference_processes(stacks, thread, depth)


WAIT_FRAMES = [*AR, *AG, *LOADER, "0x7f72b8ea3f16 (libc.so.6)", "syscall (libc.so.6)",
               "Condition.wait (/usr/lib/python3.11/threading.py:327)", "select (selectors.py:416)",
               "_worker_loop (torch/utils/data/_utils/worker.py:275)", "sigwait (signal.py:9)",
               "<module> (<string>:5)", "not a frame"]
STACK_ROWS = st.lists(st.fixed_dictionaries({
    "host": st.sampled_from([None, "a", "node-1"]),
    "pid": st.sampled_from([None, 1, 2, 3]),
    "rank": st.sampled_from([None, 0, 1]),
    "thread": st.sampled_from([None, "MainThread", "pt_main_thread", "pt_autograd_0", "compute",
                               "tqdm_monitor", "Thread-2 (_pin_memory_loop)"]),
    "tid": st.sampled_from([None, "1", "2", "0x7F12AB"]),
    "state": st.sampled_from([None, "idle", "active", "dump_error", "D"]),
    "frames": st.one_of(st.none(), st.lists(st.sampled_from(WAIT_FRAMES), max_size=5)),
    "source": st.sampled_from(["trace-a.out:3", "trace-a.out:9", "job.log:1", "x/trace-b-rank1.out:4",
                               "fr#entry3"]),
    "cmd": st.sampled_from([None, "python train.py"]),
    "line": st.sampled_from([None, 'Thread 1 (idle): "MainThread"']),
}), max_size=14)


@settings(max_examples=300, deadline=None)
@given(STACK_ROWS, st.sampled_from(THREAD_ARGS))
def test_processes_equal_the_plain_grouping_on_generated_tables(rows: list[dict],
                                                                args: tuple[str, int | None]) -> None:
    for row in rows:
        row["leaf"] = row["frames"][0] if row["frames"] else None
    stacks = schema.frame("stacks", rows)
    assert deadlock_stacks.processes(stacks, *args) == reference_processes(stacks, *args)


def test_thread_header_with_its_id_cut_out(tmp_path) -> None:
    # RolnickLab/ami-data-companion#140: the poster removed the thread ids
    p = tmp_path / "pyspy.txt"
    p.write_text('Thread (idle): "MainThread"\n    wait (threading.py:359)\n    get (queue.py:180)\n'
                 "    _try_get_data (torch/utils/data/dataloader.py:1310)\n"
                 "    __next__ (torch/utils/data/dataloader.py:741)\n")
    f = deadlock.diagnose(traindoc.load(p)).facts
    assert f["processes_seen"] == 1 and "_try_get_data" in f["majority_leaf"]


# -- issue 27: advice for where the processes wait ---------------------------------------------
CORPUS = DATA / "corpus"


def _corpus(case: str):
    return diag(CORPUS / "deadlock" / case / "logs")


def test_a_stale_torch_extensions_lock_gets_its_fix_not_the_interconnect() -> None:
    # the main thread polls torch/utils/file_baton.py wait: a lock left by a killed build
    _, r = _corpus("deadlock-lamforest-megatron-file-baton")
    first = r.actions[0]
    assert first.id == "stale_extension_lock"
    assert "~/.cache/torch_extensions/py<python>_cu<cuda>/<extension>/lock" in first.how
    assert not any(a.id == "check_transport" for a in r.actions)
    assert "stale lock file (~/.cache/torch_extensions/*/*/lock" in r.verdict


def test_a_process_py_spy_could_not_suspend_is_the_outlier() -> None:
    # "Process 280058: ..." / "Error: Failed to suspend process" / "EPERM": in D state
    _, r = _corpus("deadlock-m4-logs-tr141-try3")
    assert r.facts["outlier_members"] == ["?:280058"]
    assert r.verdict.startswith("Process ?:280058 could not be dumped") and "D in ps" in r.verdict
    assert r.actions[0].id == "unsuspendable_process" and "ps -o pid,stat" in r.actions[0].how
    assert any(f.id == "unsuspendable" for f in r.findings)
    assert not any(a.id == "check_transport" for a in r.actions)


@pytest.mark.parametrize("case", ["deadlock-ami-data-companion-140", "deadlock-pytorch-87995"])
def test_a_process_waiting_for_a_batch_gets_data_loader_advice(case: str) -> None:
    _, r = _corpus(case)
    assert r.actions[0].id == "dataloader_queue"
    assert not any(a.id == "check_transport" for a in r.actions)


def test_a_logging_call_gets_logging_advice(tmp_path: Path) -> None:
    # frames as py-spy prints a handler blocked on its lock (no corpus log shows one yet)
    log = ["acquire (logging/__init__.py:917)", "handle (logging/__init__.py:1024)",
           "callHandlers (logging/__init__.py:1706)", "info (logging/__init__.py:1477)",
           "step (train.py:40)"]
    d = write_dumps(tmp_path, {"trace-a.out": dump(1, log) + dump(2, log)})
    _, r = diag(d)
    assert r.actions[0].id == "blocked_logging"
    assert not any(a.id == "check_transport" for a in r.actions)


@pytest.mark.parametrize("path", [*sorted(CORPUS.glob("*/*/logs")),
                                  *sorted((DATA / "deadlock").glob("*/"))],
                         ids=lambda p: p.parent.name if p.name == "logs" else p.name)
def test_transport_advice_only_where_every_stack_waits_in_one_collective(path: Path) -> None:
    """Every corpus case and sample with stacks: 'test the interconnect — every process waits
    inside the same collective' only where two or more stacks do. One test a case, in the
    case's group (conftest): the load is the one its other sweeps share."""
    inc = load_once(path)
    if not len(inc.stacks):
        return
    a = analysis_once(path, deadlock.NAME)
    r = deadlock.report(a)
    if any(x.id == "check_transport" for x in r.actions):
        assert len(a.ranks) >= 2 and all(q.in_collective for q in a.ranks), path
        assert len({q.leaf for q in a.ranks}) == 1, path


# cc-hpc-itwm/tarantella meta/ci/README.md (ctest's "31: " prefix): four ranks abort into one
# log, each printing its own faulthandler dump. Each "Current thread" id is one process; the
# same id again is that process dumped again.
ABORTS = """31: corrupted size vs. prev_size while consolidating
31: Fatal Python error: Aborted
31:
31: Current thread 0x00007fe807665740 (most recent call first):
31: <no Python frame>
31: double free or corruption (top)
31: Fatal Python error: Aborted
31:
31: Current thread 0x00007f374e1e7740 (most recent call first):
31: <no Python frame>
"""
FIRST_ABORT = "\n".join(ABORTS.splitlines()[1:5]) + "\n"


def test_each_current_thread_of_a_file_is_a_process(tmp_path: Path) -> None:
    (tmp_path / "ctest.log").write_text(ABORTS)
    a = deadlock.analyse(traindoc.load(tmp_path / "ctest.log"))
    assert len(a.procs) == 2 and len({p.member for p in a.procs}) == 2
    (tmp_path / "ctest.log").write_text(FIRST_ABORT + FIRST_ABORT)
    a = deadlock.analyse(traindoc.load(tmp_path / "ctest.log"))
    assert len(a.procs) == 1 and a.procs[0].snapshots == 2


# Ctrl-C on a process at work is no hang: the KeyboardInterrupt lands in computing code. Two
# real instances: a Megatron-DeepSpeed run interrupted at iteration 600 inside the attention's
# forward (corpus gpu_crash-megatron-deepspeed-random-ltd-lr-3-0e-4) and a waifu2x run interrupted
# in GradScaler.step (nagadomi/nunif#26); a Ctrl-C on a process blocked in select / a child's
# poll is one (corpus deadlock-detectron2-840, deadlock-pytorch-39570).
NUNIF_26 = r"""Traceback (most recent call last):
  File "C:\nunif\train.py", line 22, in <module>
    main()
  File "C:\nunif\nunif\training\env.py", line 52, in optimizer_step
    grad_scaler.step(optimizer)
  File "F:\1\envs\nunif\lib\site-packages\torch\cuda\amp\grad_scaler.py", line 287, in _maybe_opt_step
    if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
  File "F:\1\envs\nunif\lib\site-packages\torch\cuda\amp\grad_scaler.py", line 287, in <genexpr>
    if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
KeyboardInterrupt
"""


@pytest.mark.parametrize(("frames", "waiting"), [
    (["forward (megatron/model/transformer.py:347)"], False),
    (["<genexpr> (torch/cuda/amp/grad_scaler.py:287)", "_maybe_opt_step (torch/cuda/amp/grad_scaler.py:287)"], False),
    (["backward (torch/autograd/__init__.py:154)", "backward (torch/_tensor.py:307)"], False),
    (["select (/usr/lib/python3.7/selectors.py:415)", "wait (multiprocessing/connection.py:920)"], True),
    (["poll (/opt/lib/python3.7/multiprocessing/popen_fork.py:28)"], True),
    (["_wait_for_tstate_lock (/opt/lib/python3.9/threading.py:1049)"], True),
    (["synchronize (torch/cuda/__init__.py:801)", "step (train.py:40)"], True),
    (["all_reduce (torch/distributed/distributed_c10d.py:2050)"], True),
])
def test_ctrl_c_is_a_hang_only_where_it_caught_a_wait(frames: list[str], waiting: bool) -> None:
    assert deadlock_stacks.interrupted_waiting(frames) is waiting


def test_ctrl_c_of_a_working_run_shows_no_hang(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(NUNIF_26)
    inc = traindoc.load(tmp_path)
    assert (inc.stacks["state"] == "interrupted").any()
    assert not deadlock_stacks.shows_hang(inc)
    megatron = CORPUS / "gpu_crash" / "gpu_crash-megatron-deepspeed-random-ltd-lr-3-0e-4" / "logs"
    assert not deadlock_stacks.shows_hang(load_once(megatron))
    for case in ("deadlock-detectron2-840", "deadlock-pytorch-39570"):
        assert deadlock_stacks.shows_hang(load_once(CORPUS / "deadlock" / case / "logs"))


# A rank whose own watchdog timed out in a collective is a process the log shows waiting, stack
# or not: the condensed quote of autocast#381 (one rank, the WorkNCCL wrapped, no SeqNum) and
# OFA-Sys/OFA#271 (three ranks' watchdog lines of torch 1.x).
@pytest.mark.parametrize(("text", "ranks"), [
    ("`Trainer.fit` stopped: `max_epochs=N` reached.\n"
     "[Rank 0] Watchdog caught collective operation timeout:\n"
     "  WorkNCCL(..., OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000)\n"
     "  ran for 1800090 milliseconds before timing out.\n...\n"
     "srun: error: ... Aborted (core dumped)\n", 1),
    ("".join(f"[E ProcessGroupNCCL.cpp:737] [Rank {r}] Watchdog caught collective operation "
             f"timeout: WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for "
             f"1802212 milliseconds before timing out.\n" for r in (1, 3, 2)), 3),
])
def test_ranks_whose_watchdog_fired_are_processes_seen(tmp_path: Path, text: str, ranks: int) -> None:
    (tmp_path / "job.log").write_text(text)
    a = deadlock.analyse(traindoc.load(tmp_path))
    assert deadlock.report(a).facts["processes_seen"] == ranks
    assert all("watchdog" in p.signature for p in a.procs)


def test_a_watchdog_line_without_its_op_is_still_a_process() -> None:
    # ms-swift#5409 (corpus timeout-ms-swift-5409): rank 2's OpType is mangled in the paste
    inc = load_once(CORPUS / "timeout" / "timeout-ms-swift-5409" / "logs")
    assert deadlock.diagnose(inc).facts["processes_seen"] == 2


FEEDER = ['  File "D:\\Anaconda\\Lib\\threading.py", line 320 in wait',
          '  File "D:\\Anaconda\\Lib\\multiprocessing\\queues.py", line 231 in _feed',
          '  File "D:\\Anaconda\\Lib\\threading.py", line 975 in run',
          '  File "D:\\Anaconda\\Lib\\threading.py", line 1038 in _bootstrap_inner',
          '  File "D:\\Anaconda\\Lib\\threading.py", line 995 in _bootstrap']
WORKER = ['File "/usr/local/lib/python3.12/threading.py", line 359 in wait',
          'File "/usr/local/lib/python3.12/queue.py", line 180 in get',
          'File "/venv/lib/python3.12/site-packages/modelgauge/pipeline.py", line 98 in upstream_get',
          'File "/venv/lib/python3.12/site-packages/modelgauge/pipeline.py", line 210 in run',
          'File "/usr/local/lib/python3.12/threading.py", line 1012 in run',
          'File "/usr/local/lib/python3.12/threading.py", line 1075 in _bootstrap_inner',
          'File "/usr/local/lib/python3.12/threading.py", line 1032 in _bootstrap']


@pytest.mark.parametrize(("files", "main_leaf"), [
    # ultralytics/yolov5#12655: the poster's "Main thread:" (the current one) in one block, the
    # queue feeders threading started in another
    ({"main-thread.log": ["Main thread:", "Current thread 0x000033f0 (most recent call first):",
                          '  File "<__array_function__ internals>", line 200 in dot',
                          '  File "C:\\Users\\u\\site-packages\\matplotlib\\transforms.py", line 2436 in get_affine'],
      "threads-feeders.log": ["Thread 0x00004620 (most recent call first):", *FEEDER, "",
                              "Thread 0x0000130c (most recent call first):", *FEEDER]},
     "dot"),
    # mlcommons/modelbench#715: one dump stored as two excerpts; the second holds only threads
    # that threading started (the first ends in a thread cut inside its frames)
    ({"excerpt-1.txt": ["Thread 0x00007f2b33e006c0 (most recent call first):", *WORKER, "",
                        "Thread 0x00007f2b3d6006c0 (most recent call first):", *WORKER[:2]],
      "excerpt-2.txt": ["Thread 0x00007f2b4b4006c0 (most recent call first):", *WORKER, "",
                        "Thread 0x00007f2b4be006c0 (most recent call first):", *WORKER]},
     None),
])
def test_threads_threading_started_are_never_the_main_thread(tmp_path: Path, files: dict,
                                                             main_leaf: str | None) -> None:
    # CPython lists the main thread last, but a paste may move or cut it: a thread whose stack
    # starts in threading's _bootstrap is not it, and a file of such threads is a piece of the
    # process another file shows
    for name, lines in files.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    inc = traindoc.load(tmp_path)
    boot = inc.stacks[inc.stacks["frames"].map(lambda f: "_bootstrap" in f[-1])]
    assert len(boot) and boot["thread"].isna().all()
    f = deadlock.diagnose(inc).facts
    assert f["processes_seen"] == 1
    assert main_leaf is None or f["majority_leaf"].startswith(main_leaf + " (")


def test_a_dump_of_threading_threads_alone_is_still_its_process(tmp_path: Path) -> None:
    # PaddlePaddle/PARL#423: a segfault's dump cut before its main thread; the helper threads
    # shown are still one process's
    (tmp_path / "train.log").write_text("\n".join([
        "Thread 0x00007fb1cf73a700 (most recent call first):",
        '  File "/home/exp/anaconda3/envs/x/lib/python3.6/threading.py", line 299 in wait',
        '  File "/home/exp/anaconda3/envs/x/lib/python3.6/queue.py", line 173 in get',
        '  File "/home/exp/anaconda3/envs/x/lib/python3.6/site-packages/visualdl/writer/record_writer.py", line 171 in run',
        '  File "/home/exp/anaconda3/envs/x/lib/python3.6/threading.py", line 916 in _bootstrap_inner',
        '  File "/home/exp/anaconda3/envs/x/lib/python3.6/threading.py", line 884 in _bootstrap']) + "\n")
    assert deadlock.diagnose(traindoc.load(tmp_path)).facts["processes_seen"] == 1


def test_a_native_backtrace_after_a_pyspy_dump_of_the_same_pid_keeps_the_python_leaf(
        tmp_path: Path) -> None:
    """py-spy's dump of a process, then gdb's ``thread apply all bt`` of the same pid (its LWP):
    one process, one moment; the Python frames say where it waits, the native ones only how."""
    # rwth-i6/returnn#1811 (corpus deadlock-returnn-1811): py-spy of pid 390647 and gdb's
    # unresolved libcuda frames of its main thread; gdb's thread headers as NVIDIA/nccl#901's
    # "(gdb) thread apply all bt" prints them ("Thread 10 (Thread 0x7f322e3fa000 (LWP 496156)):")
    case = ROOT / "data" / "corpus" / "deadlock" / "deadlock-returnn-1811" / "logs"
    (tmp_path / "dump.txt").write_text(
        (case / "py-spy.txt").read_text() + "\n(gdb) thread apply all bt\n\n"
        "Thread 2 (Thread 0x7f322e3fa000 (LWP 390700)):\n"
        "#0  futex_wait_cancelable (private=<optimized out>, expected=0, "
        "futex_word=0x7f322e7fb158) at ../sysdeps/nptl/futex-internal.h:183\n"
        "#3  0x00007f326f3d9740 in ncclProxyGetPostedOps (added=<synthetic pointer>, "
        "proxyState=0x5603cb96d1e0) at proxy.cc:713\n\n"
        "Thread 1 (Thread 0x148ff7a4b740 (LWP 390647)):\n" + (case / "gdb.txt").read_text())
    a = deadlock.analyse(traindoc.load(tmp_path / "dump.txt"))
    assert [p.pid for p in a.ranks] == [390647]
    assert a.majority_leaf.startswith("copy_to_device (returnn/returnn/torch/frontend/_backend.py")
    assert not a.ranks[0].moved


def test_no_stacks_processes_are_the_ranks_the_logs_name(tmp_path: Path) -> None:
    """With no stack and no hang report, processes_seen counts the ranks the logs name:
    per-rank files (gao-hongnan's DDP tutorial, rank<N>.log) or rank prefixes (torchrun's
    c10 ``[rankN]:`` before torchtitan's step line), not 0."""
    files = tmp_path / "files"
    files.mkdir()
    for r in range(4):
        (files / f"rank{r}.log").write_text(
            f"2023-09-16 13:28:30 [INFO]: [TRAIN: NODE{r // 2} GPU{r}] Epoch 0 | Batchsize: 32 | "
            "Steps: 16 | Average Loss: 0.5412 | Learning Rate: 0.001\n")
    prefixed = tmp_path / "prefixed"
    prefixed.mkdir()
    (prefixed / "train.log").write_text("".join(
        f"[rank{r}]:[titan] 2024-04-19 16:22:37,422 - root - INFO - step:  1  loss: 12.2398  "
        "memory:  5.91GiB(6.22%)  wps: 1,213  mfu: 0.92%\n" for r in range(2)))
    for path, n in ((files, 4), (prefixed, 2)):
        facts = deadlock.diagnose(traindoc.load(str(path))).facts
        assert facts["processes_seen"] == n, path
        assert facts["outlier_members"] == []
