"""traindoc.parse.stacks on real py-spy (0.4.3) and faulthandler dumps (tests/data/pyspy/,
made by make_fixtures.py), on the BLOOM chronicle's condensed listing, and on bad input."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traindoc
from conftest import DATA, ROOT, SEEDS
from traindoc.parse import stacks as stacks_mod
from traindoc.parse.prefixes import Origin
from traindoc.parse.stacks import StackParser, name_hints

FIX = ROOT / "tests" / "data" / "pyspy"
PROCESS_RE = re.compile(r"^Process (\d+): ", re.M)
MAIN_FRAMES = ["Condition.wait (threading.py:327)", "Queue.get (queue.py:171)",
               "Trainer.evaluate (trainer.py:18)", "main (trainer.py:24)", "<module> (trainer.py:27)"]
LOADER_FRAMES = ["Condition.wait (threading.py:327)", "Event.wait (threading.py:629)",
                 "read_eval_shard (trainer.py:7)", "Thread.run (threading.py:982)",
                 "Thread._bootstrap_inner (threading.py:1045)", "Thread._bootstrap (threading.py:1002)"]


def stacks(path: Path):
    inc = traindoc.load(path)
    return inc, inc.stacks


def pid_of(name: str) -> int:
    return int(PROCESS_RE.search((FIX / name).read_text())[1])


def test_plain_dump() -> None:
    inc, s = stacks(FIX / "plain.txt")
    assert inc.account["unparsed_lines"] == 0
    assert list(s["thread"]) == ["MainThread", "eval-loader"]
    main = s.iloc[0]
    assert main["pid"] == pid_of("plain.txt") and main["tid"] == str(main["pid"])
    assert main["state"] == "idle" and main["cmd"].endswith("python trainer.py")
    assert main["frames"] == MAIN_FRAMES and main["leaf"] == "Condition.wait (threading.py:327)"
    assert s.iloc[1]["frames"] == LOADER_FRAMES
    assert main["source"].endswith("plain.txt:4") and main["line"] == f'Thread {main["pid"]} (idle): "MainThread"'


def test_native_dump_keeps_native_frames_in_order() -> None:
    _, s = stacks(FIX / "native.txt")
    frames = s.iloc[0]["frames"]
    assert frames[0].endswith("(libc.so.6)") and "PyThread_acquire_lock_timed (libpython3.11.so.1.0)" in frames
    assert [f for f in frames if ".py:" in f] == MAIN_FRAMES


def test_locals_lines_are_not_frames() -> None:
    _, s = stacks(FIX / "locals.txt")
    assert s.iloc[0]["frames"] == MAIN_FRAMES
    assert s.iloc[1]["frames"] == LOADER_FRAMES
    assert "Arguments:" in (FIX / "locals.txt").read_text()  # the fixture does hold locals


def test_subprocesses_dump_multiline_cmd_and_active_gil() -> None:
    _, s = stacks(FIX / "subprocesses.txt")
    assert len(s) == 3
    child = s.iloc[2]
    assert child["state"] == "active+gil" and pd_na(child["thread"])  # py-spy printed no name
    assert child["pid"] == int(child["tid"]) and child["pid"] != s.iloc[0]["pid"]
    assert "while True:" in child["cmd"]  # python -c "…" spans several lines
    assert child["frames"] == ["spin (<string>:4)", "<module> (<string>:5)"]


def pd_na(v) -> bool:
    return v is None or str(v) == "<NA>"


def test_json_dump_matches_text_dump() -> None:
    inc, js = stacks(FIX / "dump.json")
    _, txt = stacks(FIX / "plain.txt")
    assert inc.account["files"] == 1 and inc.account["unparsed_lines"] == 0
    as_set = lambda df: {(t, tuple(f), st) for t, f, st in zip(df["thread"], df["frames"], df["state"], strict=True)}  # noqa: E731
    assert as_set(js) == as_set(txt)
    assert set(js["pid"]) == set(txt["pid"])


def test_concatenated_json_arrays(tmp_path: Path) -> None:
    text = (FIX / "dump.json").read_text()
    (tmp_path / "trace-node7.json").write_text(text + "\n" + text)
    _, s = stacks(tmp_path / "trace-node7.json")
    assert len(s) == 4 and set(s["host"]) == {"node7"}
    assert s.iloc[0]["source"].endswith("trace-node7.json:4")


def test_corrupt_json_is_a_warning(tmp_path: Path) -> None:
    text = (FIX / "dump.json").read_text()
    (tmp_path / "dump.json").write_text(text[: len(text) // 2])  # a dump cut short
    inc = traindoc.load(tmp_path)
    assert not len(inc.stacks)
    assert any("py-spy --json" in w for w in inc.account["warnings"])


def test_faulthandler_dump_names_the_last_thread_main() -> None:
    inc, s = stacks(FIX / "faulthandler.txt")
    assert inc.account["unparsed_lines"] == 0
    assert len(s) == 2 and list(s["thread"].fillna("?")) == ["?", "MainThread"]
    main = s.iloc[1]
    assert main["state"] == "current" and main["tid"].startswith("0x")
    assert main["frames"][2].startswith("evaluate (") and main["frames"][2].endswith("trainer.py:18)")
    assert main["leaf"].startswith("wait (") and "threading.py:327)" in main["leaf"]


def test_faulthandler_behind_torchrun_prefixes_gets_the_rank(tmp_path: Path) -> None:
    lines = (FIX / "faulthandler.txt").read_text().splitlines()
    (tmp_path / "torchrun.log").write_text(
        "".join(f"[default2]:{ln}\n" for ln in lines) + "[default0]:iteration 5 done\n")
    _, s = stacks(tmp_path / "torchrun.log")
    assert list(s["rank"]) == [2, 2] and s.iloc[1]["thread"] == "MainThread"


def test_faulthandler_thread_names_of_newer_pythons(tmp_path: Path) -> None:
    # CPython 3.14 Python/traceback.c write_thread_id(): "Thread 0x… [name] (most recent call first):"
    (tmp_path / "err.log").write_text(
        "Fatal Python error: Aborted\n\n"
        "Thread 0x00007f3a1c9ff640 [pt_autograd_0] (most recent call first):\n"
        '  File "/usr/lib/python3.14/threading.py", line 359 in wait\n\n'
        "Current thread 0x00007f3a2d6b5740 [pt_main_thread] (most recent call first):\n"
        '  File "/work/train.py", line 12 in step\n'
        '  File "/work/train.py", line 30 in <module>\n'
        "Aborted (core dumped)\n")
    _, s = stacks(tmp_path / "err.log")
    assert list(s["thread"]) == ["pt_autograd_0", "MainThread"]
    assert s.iloc[1]["frames"] == ["step (/work/train.py:12)", "<module> (/work/train.py:30)"]


def test_pyspy_error_becomes_a_dump_error_row() -> None:
    _, s = stacks(FIX / "error.txt")
    assert list(s["state"]) == ["dump_error"]
    assert s.iloc[0]["line"].startswith("Error: Failed to find python version")


def test_many_dumps_concatenated_with_an_error(tmp_path: Path) -> None:
    text = "".join((FIX / n).read_text() for n in ("plain.txt", "error.txt", "subprocesses.txt"))
    (tmp_path / "trace-gpu-node-12.out").write_text(text)
    _, s = stacks(tmp_path / "trace-gpu-node-12.out")
    assert list(s["state"]).count("dump_error") == 1
    assert len(s) == 2 + 1 + 3
    # the host ends in digits that are not a pid: the name is kept whole
    assert set(s["host"]) == {"gpu-node-12"}


def test_seed_condensed_listing_loads(tmp_path: Path) -> None:
    seed = next(SEEDS.glob("001_*.txt"), None)
    if seed is None:
        pytest.skip("seeds not present")
    lines = seed.read_text().splitlines()
    start = lines.index("Node 48:")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("All were in groups"))
    (tmp_path / "condensed.txt").write_text("\n".join(lines[start:end]) + "\n")
    _, s = stacks(tmp_path / "condensed.txt")
    assert len(s) == 16 and set(s["thread"]) == {"MainThread"}
    assert list(s["pid"][:4]) == [688510, 688511, 599212, 599213]
    shared = s.iloc[0]["frames"]
    assert all(f == shared for f in s["frames"][:4]) and len(shared) == 10
    odd = s[s["pid"] == 688514].iloc[0]
    assert odd["state"] == "idle" and odd["frames"][:3] == [
        "wait (threading.py:306)", "get (queue.py:179)",
        "_try_get_data (torch/utils/data/dataloader.py:1011)"]


def test_bloom_seed_bundle_hosts_from_file_names() -> None:
    _, s = stacks(DATA / "deadlock" / "bloom_seed")
    assert len(s) == 16
    assert s.groupby("host").size().to_dict() == {"jean-zay-iam48": 8, "jean-zay-iam49": 8}


@pytest.mark.parametrize(("name", "pid", "want"), [
    ("d/trace-vm-5024.out", 5024, ("vm", None, None)),
    ("d/trace-vm-5024.out", 77, ("vm-5024", None, None)),
    ("trace-gpu-node-12.out", 5024, ("gpu-node-12", None, None)),
    ("x/trace-node3-rank7-4242.out", None, ("node3", 7, 4242)),
    ("x/trace-node3.rank7.out", None, ("node3", 7, None)),
    ("x/train.log", 1, (None, None, None)),
])
def test_name_hints(name: str, pid: int | None, want: tuple) -> None:
    assert name_hints(name, pid) == want


def test_rank_tagged_file_names(tmp_path: Path) -> None:
    shutil.copy(FIX / "plain.txt", tmp_path / f"trace-node3-rank5-{pid_of('plain.txt')}.out")
    _, s = stacks(tmp_path)
    assert set(s["rank"]) == {5} and set(s["host"]) == {"node3"}


def test_frame_like_text_outside_a_dump_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "job.log").write_text(
        "loss went up (train.py:12)\nThread pool started\nProcess group initialised\n"
        "Error: bad config\nError: Failed to load checkpoint\n    broadcast (torch/distributed/distributed_c10d.py:1191)\n")
    inc, s = stacks(tmp_path / "job.log")
    assert not len(s)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([
    "Process 12: python x.py", "Python v3.11.7 (/usr/bin/python)", "", "4 in:",
    'Thread 12 (idle): "MainThread"', "Thread 0x7F (active+gil)", "    f (a.py:1)", "Arguments:",
    "self: <x at 0x1>", "Current thread 0x00007f (most recent call first):",
    '  File "a.py", line 3 in g', "...", "Stack (most recent call first):", "Error: Failed to x",
    "-" * 80, "random text", "Thread 5 (idle)", "Parent Process 1: init"]), max_size=40))
def test_parser_never_raises(lines: list[str]) -> None:
    p = StackParser()
    rows = []
    for i, ln in enumerate(lines):
        rows += p.feed(ln.strip(), ("f", i, None, None, ln))
    rows += p.close()
    for table, row in rows:
        assert table == "stacks" and isinstance(row["frames"], list)


def test_fixture_generator_is_kept() -> None:
    text = (FIX / "make_fixtures.py").read_text()
    assert "--native" in text and "--locals" in text and "--json" in text
    json.loads((FIX / "dump.json").read_text())


def test_a_stray_process_line_does_not_swallow_the_log(tmp_path: Path) -> None:
    watchdog = ("[rank3]:[E708 01:47:23.901930947 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught "
                "collective operation timeout: WorkNCCL(SeqNum=2901, OpType=ALLREDUCE, NumelIn=1, "
                "NumelOut=1, Timeout(ms)=600000) ran for 600070 milliseconds before timing out.")
    (tmp_path / "job.log").write_text("Process 42: started\n" + "step ok\n" * 30 + watchdog + "\n")
    inc = traindoc.load(tmp_path / "job.log")
    assert not len(inc.stacks) and len(inc.collectives) == 1
    assert inc.account["unparsed_lines"] >= 10  # the plain lines after it count as unparsed


# -- the memoised frame and file-name paths against the plain ones ------------------------------
def reference_frame(text: str) -> str | None:
    """A py-spy frame line as ``StackParser`` read it before frames were memoised (old py-spy
    indents frames with a tab: the line is stripped first)."""
    text = text.strip()
    m = stacks_mod.FRAME_RE.match(text)
    if m and ": " not in m["func"] and not stacks_mod.LOCALS_HEADER_RE.match(text):
        return stacks_mod.frame_text(m["func"], m["file"], int(m["line"]) if m["line"] else None)
    return None


def reference_row(t: dict, frames: list[str]) -> dict:
    """``stacks._row`` before the file-name hints were memoised."""
    ctx = t.get("_ctx")
    row = {"pid": t.get("pid"), "cmd": t.get("cmd"), "tid": t.get("tid"), "thread": t.get("thread"),
           "state": t.get("state"), "frames": frames, "leaf": frames[0] if frames else None,
           "_ctx": ctx}
    if isinstance(ctx, tuple) and len(ctx) > 2:
        source, origin = str(ctx[0]), ctx[2]
        m = stacks_mod.TRACE_NAME_RE.search(source)
        if m:
            host, rank, name_pid = name_hints(source, row["pid"])
            if getattr(origin, "host", None) in (None, m["host"]):
                row["host"] = host
            if rank is not None and getattr(origin, "rank", None) is None:
                row["rank"] = rank
            if row["pid"] is None and name_pid is not None:
                row["pid"] = name_pid
    return row


FRAME_PARTS = st.sampled_from(["f", "Trainer.evaluate", "<module>", "0x7f72b8ea3f16", "a: b", "x (y)",
                               " ", "(", ")", ":", ": ", "a.py", "lib/python3.11/threading.py",
                               "libc.so.6", ":0", ":007", ":12", ":\u0661\u0662", "\n", "Arguments:",
                               "Locals:", "é", "x" * 600])


@settings(max_examples=500, deadline=None)
@given(st.lists(FRAME_PARTS, max_size=8).map("".join),
       st.sampled_from(["", "f (a.py:{})", "{} (b.py)", "g ({}:3)"]))
def test_memoised_frames_equal_the_plain_parse(text: str, shape: str) -> None:
    line = shape.format(text) if shape else text
    for _ in range(2):  # a cache miss, then a hit
        assert stacks_mod.pyspy_frame(line) == reference_frame(line)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["x/trace-node3-rank7-4242.out", "trace-gpu-node-12-5024.out", "x/train.log",
                        "trace-a.out#entry2", "trace-.out", "d/trace-n1_rank3.txt",
                        "trace-" + "h" * 600 + ".out"]),
       st.sampled_from([None, 5024, 4242, 7]),
       st.sampled_from([None, Origin(), Origin(host="node3"), Origin(rank=1),
                        Origin(host="gpu-node-12-5024", rank=2)]))
def test_memoised_file_hints_equal_the_plain_ones(source: str, pid: int | None, origin: Origin) -> None:
    ctx = (source, 4, origin, None, "Thread 1")
    t = {"pid": pid, "cmd": None, "tid": "1", "thread": "MainThread", "state": "idle", "_ctx": ctx}
    for _ in range(2):
        assert stacks_mod._row(dict(t), ["f (a.py:1)"]) == reference_row(dict(t), ["f (a.py:1)"])


def parse_all(parser: StackParser, lines: list[str]) -> list:
    rows = []
    for i, ln in enumerate(lines):
        rows += parser.feed(ln.strip(), ("trace-n1-rank2.out", i, None, None, ln))
    return rows + parser.close()


@pytest.mark.parametrize("name", ["plain.txt", "locals.txt", "native.txt", "subprocesses.txt",
                                  "faulthandler.txt", "error.txt"])
def test_fixture_rows_equal_the_plain_parse(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = (FIX / name).read_text().splitlines() * 2
    got = parse_all(StackParser(), lines)
    monkeypatch.setattr(stacks_mod, "pyspy_frame", reference_frame)
    assert got and got == parse_all(StackParser(), lines)


# The BigScience tr11-176B hang notes (train/tr11-176B-ml/hang-debug.md): one thread stands
# for "N processes".
TR11_CONDENSED = """6 processes are in:

Thread 835990 (active): "MainThread"
    train (megatron/training.py:915)
    pretrain (megatron/training.py:187)
    <module> (pretrain_gpt.py:239)

2 processes are in:

Thread 835995 (active): "MainThread"
    broadcast (torch/distributed/distributed_c10d.py:1191)
    _aggregate_total_loss (deepspeed/runtime/pipe/engine.py:540)
    train_batch (deepspeed/runtime/pipe/engine.py:330)
    <module> (pretrain_gpt.py:239)
"""


def test_condensed_count_header_gives_the_row_a_count(tmp_path: Path) -> None:
    (tmp_path / "hang.txt").write_text(TR11_CONDENSED)
    inc, s = stacks(tmp_path / "hang.txt")
    assert list(s["count"]) == [6, 2]
    from traindoc.diagnose import deadlock
    rep = deadlock.diagnose(inc)
    assert rep.facts["processes_seen"] == 8
    assert [g["count"] for g in rep.facts["groups"]] == [6, 2]
    assert rep.facts["outlier_leaf"].startswith("broadcast")
    assert rep.facts["majority_leaf"].startswith("train ")


def test_condensed_header_with_every_thread_listed_adds_no_count(tmp_path: Path) -> None:
    text = ('2 in:\nThread 11 (active): "MainThread"\nThread 12 (active): "MainThread"\n'
            "    train (t.py:3)\n")
    (tmp_path / "hang.txt").write_text(text)
    _, s = stacks(tmp_path / "hang.txt")
    assert len(s) == 2 and s["count"].isna().all()


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_stacks_pasted_without_a_header(tmp_path: Path, engine: str) -> None:
    from traindoc.diagnose import deadlock

    # Lightning-AI/pytorch-lightning#18857: py-spy frames only
    (tmp_path / "a.txt").write_text(
        "   __to_tensor (pytorch_lightning/core/module.py:619)\n"
        "    apply_to_collection (lightning_utilities/core/apply_func.py:51)\n"
        "    log (pytorch_lightning/core/module.py:447)\n")
    inc = traindoc.load(tmp_path / "a.txt", engine=engine)
    assert len(inc.stacks) == 1 and len(inc.stacks.iloc[0]["frames"]) == 3
    assert deadlock.diagnose(inc).facts["majority_leaf"].startswith("__to_tensor")
    # vllm-project/vllm#2731: faulthandler frames only
    (tmp_path / "b.txt").write_text(
        '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", '
        "line 2050 in all_reduce\n"
        '  File "/workspace/vllm/model_executor/parallel_utils/communication_op.py", line 24 in '
        "tensor_model_parallel_all_reduce\n")
    inc = traindoc.load(tmp_path / "b.txt", engine=engine)
    assert deadlock.diagnose(inc).facts["processes_seen"] == 1
    assert inc.stacks.iloc[0]["leaf"].startswith("all_reduce (")
    # one frame-shaped line alone is no stack
    (tmp_path / "c.txt").write_text("loading (model.py:12)\nnothing else\n")
    assert len(traindoc.load(tmp_path / "c.txt", engine=engine).stacks) == 0


def test_ray_stack_old_pyspy_format_finds_the_main_thread(tmp_path: Path) -> None:
    from traindoc.diagnose import deadlock

    # ray-project/ray#3187: tab-indented frames, unnamed threads
    (tmp_path / "ray.txt").write_text(
        "Stack dump for ddrl     20768  0.1  0.1 1751908 151888 pts/0  Sl   12:48   0:01 ray_worker\n"
        "Thread 0x7F4AA36D9700 (active)\n"
        "\t _periodically_flush_profile_events (ray/profiling.py:97)\n"
        "\t run (threading.py:864)\n"
        "Thread 0x7F4AD3B8E740 (active)\n"
        "\t _get_next_task_from_local_scheduler (ray/worker.py:988)\n"
        "\t main_loop (ray/worker.py:1011)\n"
        "\t <module> (ray/workers/default_worker.py:105)\n")
    inc = traindoc.load(tmp_path / "ray.txt")
    assert len(inc.stacks) == 2
    f = deadlock.diagnose(inc).facts
    assert f["processes_seen"] == 1 and f["majority_leaf"].startswith(
        "_get_next_task_from_local_scheduler")


def test_thread_header_after_prose_and_compose_prefix(tmp_path: Path) -> None:
    # modelscope/ms-swift#8506 (prose before the header); sgl-project/sglang#12076 (compose)
    (tmp_path / "a.txt").write_text(
        '使用py-spy dump --pid查看 对应的进程call stack如下所示：0卡： Thread 59633 (active): "MainThread"\n'
        "    __call__ (torch/_ops.py:1209)\n"
        "    all_reduce (vllm/distributed/device_communicators/symm_mem.py:148)\n")
    s = traindoc.load(tmp_path / "a.txt").stacks
    assert list(s["pid"]) == [59633] and s.iloc[0]["leaf"] == "__call__ (torch/_ops.py:1209)"
    (tmp_path / "b.txt").write_text(
        "sglang-1  | Process 310: sglang::scheduler_TP7\n"
        "sglang-1  | Python v3.12.12 (/usr/bin/python3.12)\n"
        "sglang-1  | \n"
        'sglang-1  | Thread 310 (active): "MainThread"\n'
        "sglang-1  |     _apply (penaltylib/min_new_tokens.py:78)\n"
        "sglang-1  |     apply (penaltylib/orchestrator.py:150)\n")
    s = traindoc.load(tmp_path / "b.txt").stacks
    assert s.iloc[0]["frames"] == ["_apply (penaltylib/min_new_tokens.py:78)",
                                   "apply (penaltylib/orchestrator.py:150)"]


def test_a_failed_dump_after_its_process_header_keeps_the_pid() -> None:
    # issue 27 (huggingface/m4-logs tr_141): "Process 280058: ..." then py-spy's
    # "Error: Failed to suspend process" — the error was read as the header's command line
    log = ROOT / "data" / "corpus" / "deadlock" / "deadlock-m4-logs-tr141-try3" / "logs"
    s = traindoc.load(log).stacks
    err = s[s["state"] == "dump_error"]
    assert len(err) == 1 and int(err.iloc[0]["pid"]) == 280058
    assert err.iloc[0]["line"] == "Error: Failed to suspend process"


# -- dump forms people paste (the 2026-11-26 batch's families) -----------------------------------
GDB_PY_BT = [
    # internetarchive/brozzler#91: thread apply all py-bt (gdb's header, source lines)
    "Thread 1 (Thread 0x7f9af26b3700 (LWP 13663)):\n"
    "Traceback (most recent call first):\n"
    "  <built-in method acquire of _thread.RLock object at remote 0x7f9aeed3ed00>\n"
    '  File "/usr/lib/python3.5/logging/__init__.py", line 804, in acquire\n'
    "    self.lock.acquire()\n"
    '  File "/usr/lib/python3.5/logging/__init__.py", line 853, in handle\n'
    "    self.acquire()\n",
    # python/cpython#142096: py-bt of the current thread only, with a frame it could not read
    "(gdb) py-bt\n"
    "Traceback (most recent call first):\n"
    "  (unable to read python frame information)\n"
    '  File "/home/user/devel/cpython/Lib/_pyrepl/unix_console.py", line 448, in wait\n'
    "    or bool(self.pollob.poll(timeout))\n"
    '  File "/home/user/devel/cpython/Lib/_pyrepl/reader.py", line 705, in handle1\n'
    "    self.console.wait(100)\n",
]


@pytest.mark.parametrize("text,leaf,tid", [
    (GDB_PY_BT[0], "acquire (/usr/lib/python3.5/logging/__init__.py:804)", "13663"),
    (GDB_PY_BT[1], "wait (/home/user/devel/cpython/Lib/_pyrepl/unix_console.py:448)", None)])
def test_gdb_py_bt(tmp_path: Path, text: str, leaf: str, tid: str | None) -> None:
    from traindoc.diagnose import deadlock

    (tmp_path / "gdb.txt").write_text(text)
    inc = traindoc.load(tmp_path / "gdb.txt")
    s = inc.stacks
    assert len(s) == 1 and s.iloc[0]["frames"][-1].startswith("handle")
    assert (s.iloc[0]["tid"] if tid else None) == tid
    f = deadlock.diagnose(inc).facts
    assert f["processes_seen"] == 1 and f["majority_leaf"] == leaf


CALL_LAST_DUMPS = [
    # huggingface/transformers#24589: "Printing stack" / "-- Thread ID: N ---", unindented
    ("Printing stack\n-- Thread ID: 139870071547712 ---\n"
     'File "/data/work/train_gptj_summarize.py", line 281, in <module>\ntrainer.train()\n'
     'File "/root/env/lib/python3.9/site-packages/transformers/trainer.py", line 3266, in evaluation_loop\n'
     "logits = self._pad_across_processes(logits)\n"
     'File "/root/env/lib/python3.9/site-packages/transformers/trainer.py", line 3410, in _pad_across_processes\n'
     "sizes = self._nested_gather(size).cpu()\n",
     "_pad_across_processes", "<module>"),
    # spesmilo/electrum@8829b7cd (commit message): the "# ThreadID:" recipe, opening quote lost
    ("# ThreadID: 19100\n"
     'File: ...\\Python\\Python310\\lib\\threading.py", line 966, in _bootstrap\n'
     "  self._bootstrap_inner()\n"
     'File: ...\\Python\\Python310\\lib\\threading.py", line 1009, in _bootstrap_inner\n'
     "  self.run()\n"
     'File: ...\\Python\\Python310\\lib\\threading.py", line 946, in run\n'
     "  self._target(*self._args, **self._kwargs)\n",
     "run", "_bootstrap"),
]


@pytest.mark.parametrize("text,inner,outer", CALL_LAST_DUMPS)
def test_most_recent_call_last_dumps_are_reversed(tmp_path: Path, text: str, inner: str,
                                                 outer: str) -> None:
    (tmp_path / "dump.txt").write_text(text)
    s = traindoc.load(tmp_path / "dump.txt").stacks
    assert len(s) == 1
    frames = s.iloc[0]["frames"]
    assert frames[0].startswith(inner + " (") and frames[-1].startswith(outer + " (")


MANHOLE_DUMPS = [
    # allenai/allennlp#5088: python-manhole's dump_stacktraces, "######### ProcessID=P, ThreadID=N"
    ("######### ProcessID=82627, ThreadID=4617211392 #########\n"
     'File: "<string>", line 1, in <module>\n'
     'File: "/envs/allennlp/lib/python3.8/multiprocessing/spawn.py", line 116, in spawn_main\n'
     "  exitcode = _main(fd, parent_sentinel)\n"
     'File: "/allennlp/allennlp/commands/train.py", line 531, in run\n'
     "  return self.trainer.train()\n", 82627, None, "run"),
    # ionelmc/python-manhole src/manhole/__init__.py (dump_stacktraces since 1.x): the thread's
    # name after its id, '## ProcessID=P, ThreadID=N "name" ##'
    ('## ProcessID=4242, ThreadID=139870071547712 "MainThread" ##\n'
     'File: "/usr/lib/python3.10/threading.py", line 973, in _bootstrap\n'
     "  self._bootstrap_inner()\n"
     'File: "/usr/lib/python3.10/threading.py", line 320, in wait\n'
     "  waiter.acquire()\n", 4242, "MainThread", "wait"),
]


@pytest.mark.parametrize("text,pid,name,leaf", MANHOLE_DUMPS)
def test_manhole_dumps_name_their_process(tmp_path: Path, text: str, pid: int, name: str | None,
                                          leaf: str) -> None:
    from traindoc.diagnose import deadlock

    (tmp_path / "dump.txt").write_text(text)
    inc = traindoc.load(tmp_path / "dump.txt")
    s = inc.stacks
    assert len(s) == 1 and int(s.iloc[0]["pid"]) == pid
    assert (None if pd.isna(s.iloc[0]["thread"]) else s.iloc[0]["thread"]) == name
    assert s.iloc[0]["leaf"].startswith(leaf + " (")
    assert deadlock.diagnose(inc).facts["processes_seen"] == 1


STAMPED_FAULTHANDLER = [
    # om-ai-lab/VLM-R1#309: a collector's time and two spaces before each line; the blank
    # separator lines keep the stamp
    ("Fatal Python error: none_dealloc: deallocating None\n"
     "2025-06-22 03:09:55  Python runtime state: initialized\n"
     "2025-06-22 03:09:55  \n"
     "2025-06-22 03:09:55  Thread 0x00007fd0e57fe640 (most recent call first):\n"
     "2025-06-22 03:09:55    <no Python frame>\n"
     "2025-06-22 03:09:55  \n"
     "2025-06-22 03:09:55  Thread 0x00007fd629fff640 (most recent call first):\n"
     '2025-06-22 03:09:55    File "/m/lib/python3.10/threading.py", line 324 in wait\n'
     '2025-06-22 03:09:55    File "/m/train.py", line 12 in main\n', 2, "main ("),
    # blakeblackshear/frigate discussion #22137: nanosecond times, and a blank line that reads as
    # two stamps (the viewer's own before the process's)
    ("2026-02-28 17:01:34.862189576  Fatal Python error: Illegal instruction\n"
     "2026-02-28 17:02:26.472571  2026-02-28 17:01:34.862195671\n"
     "2026-02-28 17:01:34.862198068  Thread 0x000075fcea82b6c0 (most recent call first):\n"
     '2026-02-28 17:01:34.863564051    File "/usr/lib/python3.11/threading.py", line 320 in wait\n'
     '2026-02-28 17:01:34.863569967    File "/usr/lib/python3.11/queue.py", line 171 in get\n'
     '2026-02-28 17:01:34.863572951    File "/usr/local/lib/python3.11/dist-packages/playhouse/'
     'sqliteq.py", line 162 in loop\n'
     "2026-02-28 17:02:26.472616  2026-02-28 17:01:34.863628244\n"
     "2026-02-28 17:01:34.863630573  Current thread 0x000075fd12e91040 (most recent call first):\n"
     '2026-02-28 17:01:34.863729751    File "/usr/local/lib/python3.11/dist-packages/tensorflow/'
     'python/platform/self_check.py", line 63 in preload_check\n'
     '2026-02-28 17:01:34.874042617    File "<string>", line 1 in <module>\n', 2, "preload_check ("),
]


@pytest.mark.parametrize("text,threads,leaf", STAMPED_FAULTHANDLER)
def test_faulthandler_under_a_collectors_time(tmp_path: Path, text: str, threads: int,
                                              leaf: str) -> None:
    from traindoc.diagnose import deadlock

    (tmp_path / "job.log").write_text(text)
    inc = traindoc.load(tmp_path / "job.log")
    assert len(inc.stacks) == threads
    assert any(f.startswith(leaf) for f in inc.stacks.iloc[-1]["frames"])
    assert deadlock.diagnose(inc).facts["processes_seen"] == 1


def test_a_stamped_log_line_is_no_stack(tmp_path: Path) -> None:
    (tmp_path / "job.log").write_text("2025-06-22 03:09:55  Thread pool started with 4 workers\n"
                                      "2025-06-22 03:09:56  step 10 loss 2.1\n")
    assert not len(traindoc.load(tmp_path / "job.log").stacks)


def test_an_exception_traceback_is_one_raised_sample(tmp_path: Path) -> None:
    # a crash's traceback is one sample of the process's stack, innermost first, state
    # "raised" (triage does not call it a hang)
    (tmp_path / "tb.txt").write_text(
        "Traceback (most recent call last):\n"
        '  File "/root/env/lib/python3.9/site-packages/transformers/trainer.py", line 1645, in train\n'
        "    return inner_training_loop(\n"
        '  File "/root/env/lib/python3.9/site-packages/transformers/trainer.py", line 3410, in x\n'
        "    sizes = self._nested_gather(size).cpu()\n"
        "RuntimeError: boom\n")
    s = traindoc.load(tmp_path / "tb.txt").stacks
    assert len(s) == 1 and s.iloc[0]["state"] == "raised"
    assert [f.split(" (")[0] for f in s.iloc[0]["frames"]] == ["x", "train"]


def test_faulthandler_under_determined_prefix(tmp_path: Path) -> None:
    # determined-ai/determined#4245 (a periodic faulthandler dump in a trial log)
    (tmp_path / "trial.log").write_text(
        "[2022-05-31T14:27:44.145661Z] dc5b74e6 [rank=0] || \n"
        "[2022-05-31T14:27:44.145665Z] dc5b74e6 [rank=0] || Thread 0x00007f34546e3240 (most recent call first):\n"
        '[2022-05-31T14:27:44.145784Z] dc5b74e6 [rank=0] ||   File "/opt/conda/lib/python3.8/site-packages/'
        'model_hub/mmdetection/_data.py", line 82 in __iter__\n'
        '[2022-05-31T14:27:44.146254Z] dc5b74e6 [rank=0] ||   File "/opt/conda/lib/python3.8/site-packages/'
        'torch/utils/data/dataloader.py", line 512 in _next_index\n')
    s = traindoc.load(tmp_path / "trial.log").stacks
    assert list(s["rank"]) == [0] and s.iloc[0]["leaf"].startswith("__iter__ (")


@pytest.mark.parametrize("line,rank,rest", [
    ("[2022-05-31T14:27:44.145665Z] dc5b74e6 [rank=0] || Thread 0x00007f34546e3240 (most recent "
     "call first):", 0, "Thread 0x00007f34546e3240 (most recent call first):"),  # determined#4245
    ("[2022-07-12T01:07:19.518332Z] 74370f8a || + trap 'handle_signals SIGUSR2' SIGUSR2", None,
     "+ trap 'handle_signals SIGUSR2' SIGUSR2"),  # determined-ai/determined#4506 (agent's own line)
])
def test_determined_prefix(line: str, rank: int | None, rest: str) -> None:
    from traindoc.parse.prefixes import demux

    text, origin = demux(line)
    assert text == rest and origin.rank == rank


def test_separator_and_prompt_name_the_dumps_host_and_pid(tmp_path: Path) -> None:
    # devopsrustem/slurmv4 3/14.sh: a prompt on each host, then a loop's "=== PID N ===" dumps
    (tmp_path / "launchers.txt").write_text(
        '((sglang-0.5.9) ) [dcbsr_dev@tpgds-aihub0007 ~]$ py-spy dump --pid $(pgrep -f "sglang.launch_server")\n'
        "Process 544105: python3 -m sglang.launch_server --tp-size 16\n"
        "Python v3.12.12 (/usr/bin/python3.12)\n\n"
        'Thread 544105 (idle): "MainThread"\n'
        "    _recv (multiprocessing/connection.py:395)\n"
        "    _wait_for_scheduler_ready (engine.py:894)\n\n\n\n"
        '((sglang-0.5.9) ) [dcbsr_dev@tpgds-aihub0008 ~]$ py-spy dump --pid $(pgrep -f "sglang.launch_server")\n'
        "Process 581325: python3 -m sglang.launch_server --tp-size 16\n"
        "Python v3.12.12 (/usr/bin/python3.12)\n\n"
        'Thread 581325 (idle): "MainThread"\n'
        "    _recv (multiprocessing/connection.py:395)\n"
        "    _wait_for_scheduler_ready (engine.py:894)\n")
    s = traindoc.load(tmp_path / "launchers.txt").stacks
    assert list(zip(s["host"], s["pid"], strict=True)) == [("tpgds-aihub0007", 544105),
                                                           ("tpgds-aihub0008", 581325)]
    # marin-community/marin#7344's loop prints "== pid $p ==" before each headless dump; a host
    # in the separator ("=== node17 4242 ===") is the process's host
    (tmp_path / "loop.txt").write_text(
        "== pid 4242 ==\n"
        'Thread 4242 (active): "MainThread"\n'
        "    all_reduce (torch/distributed/distributed_c10d.py:2050)\n"
        "=== node17 4243 ===\n"
        'Thread 4243 (active): "MainThread"\n'
        "    all_reduce (torch/distributed/distributed_c10d.py:2050)\n")
    s = traindoc.load(tmp_path / "loop.txt").stacks
    assert list(zip(s["host"].fillna("?"), s["pid"], strict=True)) == [("?", 4242), ("node17", 4243)]


@pytest.mark.parametrize("text,pid", [
    # huggingface/m4-logs tr_141 try3 README: the hung rank could not be dumped
    ("py-spy dump --pid 280058\nProcess 280058: ...\nError: Failed to suspend process\n"
     "Reason: EPERM: Operation not permitted\n", 280058),
    # benfred/py-spy#804 (zsh prompt, sudo, -p)
    ("➜  py-spy git:(master) sudo py-spy dump -p 555\n"
     "Error: Failed to open process - check if it is running.\n"
     "Reason: Operation not permitted (os error 1)\n", 555),
])
def test_a_dump_error_names_the_process_it_failed_on(tmp_path: Path, text: str, pid: int) -> None:
    from traindoc.diagnose import deadlock

    (tmp_path / "d.txt").write_text(
        'Thread 280064 (active): "MainThread"\n'
        "    barrier (torch/distributed/distributed_c10d.py:2784)\n"
        "    wait_for_everyone (accelerate/utils/other.py:81)\n" + text)
    inc = traindoc.load(tmp_path / "d.txt")
    errors = inc.stacks[inc.stacks["state"] == "dump_error"]
    assert list(errors["pid"]) == [pid]
    r = deadlock.diagnose(inc)
    assert r.facts["outlier_members"] == [f"?:{pid}"]
    assert r.facts["outlier_leaf"].startswith("not dumped: Error: Failed to")
    assert r.facts["majority_leaf"].startswith("barrier (")
    # the deadlock report's "unsuspendable" finding (issue 27) names it when py-spy said why
    assert any(f.id in ("outliers", "unsuspendable")
               and ("could not attach" in f.title or "could not be dumped" in f.title)
               for f in r.findings)


# BigScience tr11-176B chronicles.md, "hanging at eval redux": the leaves per trace file, and
# the one full stack the author quotes
TR11_LISTING = ("trace-jean-zay-iam06\n    send\n    send\n    broadcast\n    broadcast\n"
                "trace-jean-zay-iam52\n    all_reduce\n    all_reduce\n    all_reduce\n    all_reduce\n    wait\n"
                "    broadcast\n")
TR11_FULL = ('Thread 1439102 (idle): "MainThread"\n    wait (threading.py:306)\n'
             "    get (queue.py:179)\n    _try_get_data (torch/utils/data/dataloader.py:1011)\n"
             "    eval_batch (deepspeed/runtime/pipe/engine.py:453)\n")


def test_per_node_leaf_listing(tmp_path: Path) -> None:
    from traindoc.diagnose import deadlock

    (tmp_path / "trace-leaves.txt").write_text(TR11_LISTING)
    (tmp_path / "pyspy-deadlocked.txt").write_text(TR11_FULL)
    s = traindoc.load(tmp_path / "trace-leaves.txt").stacks
    assert len(s) == 10 and set(s["state"]) == {"listed"}
    assert list(s["host"].unique()) == ["jean-zay-iam06", "jean-zay-iam52"]
    f = deadlock.diagnose(traindoc.load(tmp_path)).facts
    # the full stack is the listing's one "wait": counted once, and the outlier
    assert f["processes_seen"] == 10
    assert f["outlier_leaf"].startswith("_try_get_data (") and f["majority_leaf"] == "all_reduce"


@pytest.mark.parametrize("ps_line,pid", [
    # fyu/drn#50 (ps aux, no header)
    ("wust     13620  0.3  0.5 1394124 253628 pts/9  D    19:18   0:00 python classify.py train "
     "--arch drn_d_38 -j 8 --batch-size 128 data/goods --epochs 120", 13620),
    # huggingface/m4-logs tr_141 try3 README (`ps auxc`: the hung rank py-spy could not attach to)
    ("ura81os   280058  117  4.6 17517200480 24494736 ? Dl  00:36 291:14 python", 280058),
])
def test_a_process_in_uninterruptible_sleep_is_the_outlier(tmp_path: Path, ps_line: str,
                                                          pid: int) -> None:
    from traindoc.diagnose import deadlock

    (tmp_path / "d.txt").write_text(
        'Thread 280064 (active): "MainThread"\n'
        "    barrier (torch/distributed/distributed_c10d.py:2784)\n"
        'Thread 280065 (active): "MainThread"\n'
        "    barrier (torch/distributed/distributed_c10d.py:2784)\n"
        "\n" + ps_line + "\n"
        # the others' rows: m4-logs' next one, and benfred/py-spy#390's `ps PID` layout
        "ura81os   280059 87.9  4.4 17508566232 23526964 ? Rl  00:36 217:52 python\n"
        "20463 ?        Tsl   43:28 /opt/sygnal/env/bin/python -m sygnal.sygnal\n")
    inc = traindoc.load(tmp_path / "d.txt")
    assert list(inc.stacks[inc.stacks["state"] == "D"]["pid"]) == [pid]
    r = deadlock.diagnose(inc)
    assert r.facts["processes_seen"] == 3 and r.facts["outlier_members"] == [f"?:{pid}"]
    assert r.facts["majority_leaf"].startswith("barrier (")
    assert r.facts["outlier_leaf"].startswith("uninterruptible sleep (D): ")
    assert any(f.id == "outliers" and "uninterruptible sleep" in f.title for f in r.findings)


def test_a_faulthandler_dump_is_one_writers(tmp_path: Path) -> None:
    # Ray's prefixes as ray-project/ray#29576 ("(Actor pid=11471) ") and #47759
    # ("(RayTrainWorker pid=43515) ") print them, before faulthandler lines as
    # pytorch/pytorch#54531 quotes them: each prefixed process's dump is its own, the pid its
    (tmp_path / "ray.log").write_text(
        "(Actor pid=11471) Current thread 0x00007f04d36bb740 (most recent call first):\n"
        '(Actor pid=11471)   File "test/distributed/test_c10d.py", line 4610 in _test_nccl_errors_blocking\n'
        "(RayTrainWorker pid=43515) Current thread 0x00007f04d36bb741 (most recent call first):\n"
        '(RayTrainWorker pid=43515)   File "test/distributed/test_c10d.py", line 4634 in <lambda>\n')
    s = traindoc.load(tmp_path / "ray.log").stacks
    assert list(s["pid"]) == [11471, 43515]
    assert [f[0].split(" (")[0] for f in s["frames"]] == ["_test_nccl_errors_blocking", "<lambda>"]


def test_a_ray_prefix_with_an_ipv6_node_names_the_writer(tmp_path: Path) -> None:
    # OpenRLHF/OpenRLHF#1052 (corpus deadlock-openrlhf-1052): headerless faulthandler frames
    # of two actors behind "(LLMRayActor pid=N, ip=[IPv6])", one with GitHub's line number
    # fused before it; a verl recipe's notes (recipe/srt, gRPC IPv6 issue) print the same prefix
    # with a compressed address: "(SRTDAPOTaskRunner pid=39990, ip=[2605:340:cdb1:6400::a7c:172])"
    a, b = "2605:340:cd51:4900:c06a:4260:c8a8:4be7", "2605:340:cdb1:6400::a7c:172"
    (tmp_path / "ray.log").write_text(
        f'(LLMRayActor pid=3823828, ip=[{a}])   File "/x/vllm/device_allocator/cumem.py", line 204 in sleep\n'
        f'(LLMRayActor pid=3823828, ip=[{a}])   File "/x/vllm/v1/worker/gpu_worker.py", line 76 in sleep\n'
        f'(SRTDAPOTaskRunner pid=39990, ip=[{b}])   File "/x/vllm/executor/executor_base.py", line 205 in sleep\n'
        f'49192(SRTDAPOTaskRunner pid=39990, ip=[{b}])   File "/x/vllm/v1/engine/core.py", line 254 in sleep\n')
    for engine in ("plain", "fast"):
        s = traindoc.load(tmp_path / "ray.log", engine=engine).stacks
        assert list(zip(s["pid"], s["host"], strict=True)) == [(3823828, a), (39990, b)]
        assert [len(f) for f in s["frames"]] == [2, 2]


def test_rays_dedup_count_is_no_part_of_a_frame(tmp_path: Path) -> None:
    # PeterGriffinJin/Search-R1#134: faulthandler frames behind a Ray prefix, each ending in
    # Ray's "[repeated 3x across cluster]"; ray-project/ray#29576's "(Actor pid=N)" dump with
    # the same count on its thread header (as Ray >= 2.5 prints a line other actors printed too)
    root = "/data/miniconda3/envs/searchr1/lib/python3.9/site-packages/ray/_private"
    (tmp_path / "ray.log").write_text(
        "(Actor pid=11471) Current thread 0x00007f04d36bb740 (most recent call first): "
        "[repeated 3x across cluster]\n"
        '(Actor pid=11471)   File "test/distributed/test_c10d.py", line 4610 in '
        "_test_nccl_errors_blocking [repeated 3x across cluster]\n"
        "(WorkerDict pid=358920) Thread 0x00007f3a1c9ff640 (most recent call first):\n"
        f'(WorkerDict pid=358920)   File "{root}/function_manager.py", line 689 in '
        "actor_method_executor [repeated 3x across cluster]\n"
        f'(WorkerDict pid=358920)   File "{root}/worker.py", line 953 in main_loop '
        "[repeated 3x across cluster]\n"
        f'(WorkerDict pid=358920)   File "{root}/workers/default_worker.py", line 330 in <module> '
        "[repeated 3x across cluster]\n")
    for engine in ("plain", "fast"):
        s = traindoc.load(tmp_path / "ray.log", engine=engine).stacks
        assert list(s["pid"]) == [11471, 358920]
        assert list(s["state"].fillna("")) == ["current", ""]
        assert [f[-1].split(" (")[0] for f in s["frames"]] == ["_test_nccl_errors_blocking",
                                                               "<module>"]


# pytest-timeout's dump of a test past its limit (pytest-dev/pytest-timeout pytest_timeout.py
# dump_stacks: write_title("Stack of %s (%s)" % (thread_name, thread_ident)) with "~", then
# traceback.format_stack, most recent call last), as two CI logs quote it: a Windows run whose
# tqdm monitor thread is dumped before MainThread (its name holds parentheses), and a macOS run
# (pytest 5.4, timeout-1.3.4, --timeout_method=thread) hung in a sleep under requests.get
PYTEST_TIMEOUT_DUMPS = [
    ("+++++++++++++++++++++++++++++++++++ Timeout +++++++++++++++++++++++++++++++++++\n"
     "~~~~~~~~~~~~~~~~ Stack of Thread-1 (_monitor) (31076) ~~~~~~~~~~~~~~~~\n"
     '  File "C:\\py\\Lib\\threading.py", line 355, in wait\n'
     "~~~~~~~~~~~~~~~~~~~~~~~~~ Stack of MainThread (27216) ~~~~~~~~~~~~~~~~~~~~~~~~~\n"
     '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
     '  File "D:\\repo\\.venv\\Lib\\site-packages\\_pytest\\python.py", line 167, in pytest_pyfunc_call\n'
     '  File "D:\\repo\\tests\\unit\\solver\\test_slow_convergence.py", line 88, in test_converges_within_budget\n'
     '  File "D:\\repo\\src\\pkg\\solver.py", line 171, in solve_it\n'
     "+++++++++++++++++++++++++++++++++++ Timeout +++++++++++++++++++++++++++++++++++\n",
     [("Thread-1 (_monitor)", "31076"), ("MainThread", "27216")], "solve_it"),
    ("test_script.py .\n"
     "+++++++++++++++++++++++++++++++++++++++++ Timeout ++++++++++++++++++++++++++++++++++++++++++\n\n"
     "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~ Stack of MainThread (4523748800) ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"
     '\tFile "/Users/bob/code/test-debug/venv/lib/python3.8/site-packages/_pytest/python.py", line 184, in pytest_pyfunc_call\n'
     "\t\tresult = testfunction(**testargs)\n"
     '\tFile "/Users/bob/code/test-debug/test_script.py", line 10, in test_call_api\n'
     "\t\tresp = call_api()\n"
     '\tFile "/Users/bob/code/test-debug/script.py", line 5, in call_api\n'
     "\t\trequests.get('https://pybit.es')\n"
     '\tFile "/Users/bob/Downloads/requests.org/requests/api.py", line 71, in get\n'
     "\t\ttime.sleep(60)\n\n"
     "+++++++++++++++++++++++++++++++++++++++++ Timeout ++++++++++++++++++++++++++++++++++++++++++\n",
     [("MainThread", "4523748800")], "get"),
]


@pytest.mark.parametrize("text, threads, leaf", PYTEST_TIMEOUT_DUMPS)
def test_pytest_timeout_dumps_are_read(tmp_path: Path, text: str, threads: list, leaf: str) -> None:
    (tmp_path / "ci.log").write_text(text)
    for engine in ("plain", "fast"):
        s = traindoc.load(tmp_path / "ci.log", engine=engine).stacks
        assert list(zip(s["thread"], s["tid"], strict=True)) == threads
        assert s["frames"].iloc[-1][0].split(" (")[0] == leaf  # innermost first


def test_ssh_names_the_host_of_the_dumps_after_it(tmp_path: Path) -> None:
    # huggingface/m4-logs tr_141 try3 README: "ssh jean-zay-iam06", then py-spy there fails
    (tmp_path / "notes.txt").write_text(
        "ssh jean-zay-iam06\n"
        "source $cnw_ALL_CCFRWORK/start-m4-user; conda activate stas-m4;\n"
        "py-spy dump --pid 280058\n"
        "Process 280058: ...\n"
        "Error: Failed to suspend process\n"
        "Reason: EPERM: Operation not permitted\n")
    s = traindoc.load(tmp_path / "notes.txt").stacks
    assert list(zip(s["host"], s["pid"], s["state"], strict=True)) == [
        ("jean-zay-iam06", 280058, "dump_error")]


# -- py-spy 0.1's --dump (src/main.rs v0.1.11: the interpreter, "Python version", thread ids
# "python/os" in hex, frames "\t func (file:line)") --------------------------------------------
PYSPY_01 = ("$ sudo py-spy --dump --pid 3016\n"
            "/usr/bin/python3.6\n"
            "Python version 3.6.8\n"
            "Thread 0x7F3C2A6B5740/0x1A2B (active)\n"
            "\t wait (threading.py:295)\n"
            "\t all_reduce (torch/distributed/distributed_c10d.py:898)\n"
            "\t train (train.py:120)\n"
            "\t <module> (train.py:130)\n"
            "Thread 0x7F3C1A0FF700/0x1A2C (idle)\n"
            "\t _worker_loop (torch/utils/data/_utils/worker.py:178)\n")


def test_pyspy_01_dump(tmp_path: Path) -> None:
    (tmp_path / "dump.txt").write_text(PYSPY_01)
    s = traindoc.load(tmp_path / "dump.txt").stacks
    assert list(s["tid"]) == ["0x7F3C2A6B5740", "0x7F3C1A0FF700"]
    assert list(s["state"]) == ["active", "idle"] and set(s["pid"]) == {3016}
    assert s.iloc[0]["frames"][:3] == ["wait (threading.py:295)",
                                       "all_reduce (torch/distributed/distributed_c10d.py:898)",
                                       "train (train.py:120)"]
    from traindoc.diagnose import deadlock

    f = deadlock.diagnose(traindoc.load(tmp_path / "dump.txt")).facts
    assert f["processes_seen"] == 1
    assert f["majority_leaf"] == "all_reduce (torch/distributed/distributed_c10d.py:898)"


# -- gdb's thread apply all bt: C frames under gdb's thread headers ---------------------------------
GDB_BT_899 = """(gdb) thread apply all bt

Thread 18 (Thread 0x7f0498ffd700 (LWP 135332)):
#0  0x00007f05daa8fe8b in pthread_rwlock_wrlock () from /usr/lib/x86_64-linux-gnu/libpthread.so.0
#1  0x00007f0580bb3641 in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so
#8  0x00007f04fc98d6e6 in ncclGroupEnd () from /usr/lib/x86_64-linux-gnu/libnccl.so.2
#9  0x00007f05da06e256 in tfrt::gpu::wrapper::NcclGroupEnd() () from /workdir/UDLC/runtime/tfrt/example/test_all_reduce/pyRuntime.so

Thread 1 (Thread 0x7f05dae9f740 (LWP 135300)):
#0  0x00007f05daa8f00c in pthread_cond_wait@@GLIBC_2.3.2 () from /usr/lib/x86_64-linux-gnu/libpthread.so.0
#1  0x00007f04fc98d6e6 in ncclGroupEnd () from /usr/lib/x86_64-linux-gnu/libnccl.so.2
"""  # NVIDIA/nccl#899 (no debug info; a C++ name with its own parentheses; thread 1 invented
#      from the issue's other threads' shape, as the excerpt is cut)

GDB_BT_901 = """========rank0=================
(gdb) thread apply all bt

Thread 10 (Thread 0x7f322e3fa000 (LWP 496156)):
#0  futex_wait_cancelable (private=<optimized out>, expected=0, futex_word=0x7f322e7fb158) at ../sysdeps/nptl/futex-internal.h:183
#1  __pthread_cond_wait_common (abstime=0x0, clockid=0, mutex=0x7f322e7fb108, cond=0x7f322e7fb130) at pthread_cond_wait.c:508
#2  __pthread_cond_wait (cond=cond@entry=0x7f322e7fb130, mutex=mutex@entry=0x7f322e7fb108) at pthread_cond_wait.c:647
#3  0x00007f326f3d9740 in ncclProxyGetPostedOps (added=<synthetic pointer>, proxyState=0x5603cb96d1e0) at proxy.cc:713
#4  ncclProxyProgress (proxyState_=0x5603cb96d1e0) at proxy.cc:868
#5  0x00007f326f33f609 in start_thread (arg=<optimized out>) at pthread_create.c:477
#6  0x00007f326ef18133 in clone () at ../sysdeps/unix/sysv/linux/x86_64/clone.S:95
"""  # NVIDIA/nccl#901 (debug info: arguments, source lines, inlined frames without an address)

GDB_BT_2560 = """Thread 4 (Thread 0x7fd09a759000 (LWP 3913167) "cuda00006000019"):
#0  0x00007fd0b01abac1 in poll () from /lib64/libc.so.6
#1  0x00007fd0b2867e4f in ?? () from /lib64/libcuda.so.1
#4  0x00007fd0b0d861ca in start_thread () from /lib64/libpthread.so.0
#5  0x00007fd0b00b28d3 in clone () from /lib64/libc.so.6
"""  # NVIDIA/TensorRT-LLM#2560 (newer gdb: the thread's name after its LWP)

GDB_BT_719 = """Thread 11 (Thread 0x7fd087fff700 (LWP 110)):
#0  0x00007fd31dce9cb9 in __GI_ppoll (fds=0x0, nfds=140533611620016, timeout=<optimized out>, sigmask=0x7fd087ffeab0) at ../sysdeps/unix/sysv/linux/ppoll.c:39
#1  0x0000000000000000 in ?? ()
"""  # NVIDIA/nccl#719 (an unknown frame in no library: left out)

GDB_BT_WRAPPED = """Thread 1 (Thread 0x7f0b6e1b4740 (LWP 4242) "python"):
#0  0x00007f0b6e291117 in __futex_abstimed_wait_common64 (private=0, cancel=true, abstime=0x0,
    op=393, expected=0, futex_word=0x55d2c1c0) at ./nptl/futex-internal.c:57
#1  __futex_abstimed_wait_common (cancel=true, private=0, abstime=0x0, clockid=0, expected=0,
    futex_word=0x55d2c1c0) at ./nptl/futex-internal.c:87
#2  0x00007f0ab12c4a31 in ncclGroupEnd () from /opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so
"""  # gdb's own wrapping of a long frame at the terminal's width (rendered, gdb 12)


@pytest.mark.parametrize(("text", "rows", "leaves"), [
    (GDB_BT_899, 2, ["pthread_rwlock_wrlock (libpthread.so.0)",
                     "pthread_cond_wait@@GLIBC_2.3.2 (libpthread.so.0)"]),
    (GDB_BT_901, 1, ["futex_wait_cancelable (../sysdeps/nptl/futex-internal.h:183)"]),
    (GDB_BT_2560, 1, ["poll (libc.so.6)"]),
    (GDB_BT_719, 1, ["__GI_ppoll (../sysdeps/unix/sysv/linux/ppoll.c:39)"]),
    (GDB_BT_WRAPPED, 1, ["__futex_abstimed_wait_common64 (./nptl/futex-internal.c:57)"]),
])
def test_gdb_thread_apply_all_bt(tmp_path: Path, text: str, rows: int, leaves: list[str]) -> None:
    (tmp_path / "gdb.txt").write_text(text)
    s = traindoc.load(tmp_path / "gdb.txt").stacks
    assert len(s) == rows and list(s["leaf"]) == leaves
    assert not [f for fr in s["frames"] for f in fr if f.startswith("?? (?)")]


def test_gdb_bt_frames_in_order_and_the_main_thread_names_the_process(tmp_path: Path) -> None:
    (tmp_path / "gdb.txt").write_text(GDB_BT_899 + "\n" + GDB_BT_WRAPPED.replace("Thread 1 ", "Thread 2 "))
    s = traindoc.load(tmp_path / "gdb.txt").stacks
    assert s.iloc[0]["frames"] == [
        "pthread_rwlock_wrlock (libpthread.so.0)", "?? (libcuda.so)", "ncclGroupEnd (libnccl.so.2)",
        "tfrt::gpu::wrapper::NcclGroupEnd() (pyRuntime.so)"]
    assert s["thread"].isna().iloc[0] and s.iloc[1]["thread"] == "MainThread"
    assert set(s["pid"]) == {135300}
    assert s.iloc[2]["frames"][1] == "__futex_abstimed_wait_common (./nptl/futex-internal.c:87)"


def test_gdb_bt_leaf_is_outside_the_c_library_waits(tmp_path: Path) -> None:
    from traindoc.diagnose import deadlock

    (tmp_path / "gdb.txt").write_text(GDB_BT_899)
    f = deadlock.diagnose(traindoc.load(tmp_path / "gdb.txt")).facts
    assert f["processes_seen"] == 1 and f["majority_leaf"] == "ncclGroupEnd (libnccl.so.2)"


@pytest.mark.parametrize("line", [
    # py-spy's errors for a Python it cannot read (src/python_spy.rs, src/python_process_info.rs)
    "Error: Failed to copy PyThreadState",
    "Error: Unsupported version of Python: 3.13.0",
    "Error: Failed to find a python interpreter in the .data section",
    "Error: Failed to parse python binary",
])
def test_pyspy_errors_of_every_version(tmp_path: Path, line: str) -> None:
    (tmp_path / "trace-node3.out").write_text(line + "\n")
    s = traindoc.load(tmp_path / "trace-node3.out").stacks
    assert list(s["state"]) == ["dump_error"] and list(s["host"]) == ["node3"]


def test_faulthandler_notes_do_not_end_the_dump(tmp_path: Path) -> None:
    # CPython traceback.c: "  Garbage-collecting" under the current thread's header (3.12+),
    # "  <no Python frame>" for a thread without one
    (tmp_path / "fh.txt").write_text(
        "Fatal Python error: Aborted\n\n"
        "Thread 0x00007f3a1c9ff640 (most recent call first):\n  <no Python frame>\n\n"
        "Current thread 0x00007f3a2d6b5740 (most recent call first):\n  Garbage-collecting\n"
        '  File "/work/train.py", line 12 in step\n'
        '  File "/work/train.py", line 120 in <module>\n\n'
        "Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)\n")
    s = traindoc.load(tmp_path / "fh.txt").stacks
    main = s[s["tid"] == "0x00007f3a2d6b5740"]
    assert len(main) == 1 and main.iloc[0]["frames"] == ["step (/work/train.py:12)",
                                                         "<module> (/work/train.py:120)"]
    assert main.iloc[0]["thread"] == "MainThread"


GDB_BT_PYTHON = """Thread 1 (Thread 0x7f0b6e1b4740 (LWP 4242) "python"):
#0  0x00007f0b6e291117 in __futex_abstimed_wait_common () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007f0a9c3a2b1d in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1
#2  0x00007f0ab12c4a31 in cudaStreamSynchronize () from /opt/conda/lib/libcudart.so.12
#3  0x000055555568d142 in _PyEval_EvalFrameDefault (tstate=<optimized out>, f=Frame 0x7f0a2c1d3a40, for file /work/train.py, line 88, in train_step (model=<Model at remote 0x7f0a>, batch=<Tensor at remote 0x7f0b>), throwflag=<optimized out>) at Python/ceval.c:4181
#4  0x000055555568d142 in _PyEval_EvalFrameDefault (tstate=<optimized out>, f=Frame 0x7f0a2c1d3c00, for file /work/train.py, line 120, in <module> (), throwflag=<optimized out>) at Python/ceval.c:4181
"""  # CPython's gdb helpers name the evaluation loop's frame (Tools/gdb/libpython.py,
#      PyFrameObjectPtr.write_repr); rendered


def test_gdb_bt_python_frames_named_by_libpython(tmp_path: Path) -> None:
    from traindoc.diagnose import deadlock

    (tmp_path / "gdb.txt").write_text(GDB_BT_PYTHON)
    inc = traindoc.load(tmp_path / "gdb.txt")
    assert inc.stacks.iloc[0]["frames"][3:] == ["train_step (/work/train.py:88)",
                                                "<module> (/work/train.py:120)"]
    assert deadlock.diagnose(inc).facts["majority_leaf"] == "train_step (/work/train.py:88)"


def test_ray_stack_names_each_workers_pid(tmp_path: Path) -> None:
    from traindoc.diagnose import deadlock

    # `ray stack` (python/ray/scripts/scripts.py) over two workers, with the py-spy of
    # ray-project/ray#3187 (no Process line): each "Stack dump for <ps row>" names its pid
    (tmp_path / "ray.txt").write_text(
        "Stack dump for ddrl     20768  0.1  0.1 1751908 151888 pts/0  Sl   12:48   0:01 ray_worker\n"
        "Thread 0x7F4AD3B8E740 (active)\n"
        "\t _get_next_task_from_local_scheduler (ray/worker.py:988)\n"
        "\t main_loop (ray/worker.py:1011)\n"
        "\t <module> (ray/workers/default_worker.py:105)\n"
        "\n"
        "Stack dump for ddrl     20769  0.1  0.1 1751908 151888 pts/0  Sl   12:48   0:01 ray_worker\n"
        "Thread 0x7F4AD3B8E741 (active)\n"
        "\t all_reduce (torch/distributed/distributed_c10d.py:898)\n"
        "\t main_loop (ray/worker.py:1011)\n"
        "\t <module> (ray/workers/default_worker.py:105)\n")
    inc = traindoc.load(tmp_path / "ray.txt")
    assert list(inc.stacks["pid"]) == [20768, 20769]
    assert deadlock.diagnose(inc).facts["processes_seen"] == 2


# Dumps as posters paste them (issue 26, batch 2026-11-26d).
# bitofant/vllm-custom-build issue.md (py-spy of vLLM's EngineCore, function names padded to one
# column); two snapshots of one process in two files are both kept (not echoes of each other).
PADDED_1 = """Thread 435 (idle): "MainThread"
    find_longest_cache_hit (vllm/v1/core/single_type_kv_cache_manager.py:531)
    get_computed_blocks    (vllm/v1/core/kv_cache_manager.py:203)
    schedule               (vllm/v1/core/sched/scheduler.py:613)
    run_engine_core        (vllm/v1/engine/core.py:1101)
"""
PADDED_7 = """Thread 435 (idle): "MainThread"
    _process_engine_step (vllm/v1/engine/core.py:1193)
    run_busy_loop       (vllm/v1/engine/core.py:1142)
    run_engine_core     (vllm/v1/engine/core.py:1101)
"""


def test_padded_pyspy_frames_and_two_snapshots_of_one_process(tmp_path: Path) -> None:
    (tmp_path / "a-1of8.txt").write_text(PADDED_1)
    (tmp_path / "b-7of8.txt").write_text(PADDED_7)
    s = traindoc.load(tmp_path).stacks
    assert list(s["leaf"]) == [
        "find_longest_cache_hit (vllm/v1/core/single_type_kv_cache_manager.py:531)",
        "_process_engine_step (vllm/v1/engine/core.py:1193)"]
    assert s["frames"].iloc[0][1] == "get_computed_blocks (vllm/v1/core/kv_cache_manager.py:203)"
    assert len(s["frames"].iloc[1]) == 3


# pytorch/tutorials intermediate_source/debug_hangs_with_flight_recorder.rst: the debug
# server's stacks file, one "=== Rank N ===" section per rank, an author's note after a frame
RANK_SECTIONS = """$ cat /tmp/fr_hang_debug/stacks_20260401_192104.txt

=== Rank 0 ===
  File "verify_flight_recorder.py", line 148 in main    ← all_reduce (waiting)

=== Rank 1 ===
  File "verify_flight_recorder.py", line 140 in main    ← time.sleep (the hang!)
"""


def test_rank_sections_name_each_dumps_rank(tmp_path: Path) -> None:
    (tmp_path / "stacks.txt").write_text(RANK_SECTIONS)
    s = traindoc.load(tmp_path / "stacks.txt").stacks
    assert list(s["rank"]) == [0, 1]
    assert list(s["leaf"]) == ["main (verify_flight_recorder.py:148)",
                               "main (verify_flight_recorder.py:140)"]
    assert s["pid"].isna().all()


@pytest.mark.parametrize("line,func", [
    ('File "verify_flight_recorder.py", line 148 in main    ← all_reduce (waiting)', "main"),
    ('File "train.py", line 12 in <module> ', "<module>"),  # a trailing blank
    ('File "/usr/local/lib/python3.12/queue.py", line 180 in get', "get"),
])
def test_faulthandler_frame_function(line: str, func: str) -> None:
    m = stacks_mod.FH_FRAME_RE.match(line)
    assert m is not None and m["func"] == func


@pytest.mark.parametrize(("text", "frames"), [
    # siavushshahrizad/rl_from_scratch stack_trace.txt (commit 88550d8): a terminal wrapped at
    # its width mid-word, in the path and in "line"
    ("Traceback (most recent call last):\n"
     '  File "/Users/siasha/Documents/github/rl_from_scratch/PPO.py", line 199, in <module>\n'
     "    loss.backward()\n"
     '  File "/Users/siasha/Documents/github/rl_from_scratch/.venv/lib/python3.9/site-packages/torch/_tensor.py", l\n'
     "ine 626, in backward\n"
     "    torch.autograd.backward(\n"
     '  File "/Users/siasha/Documents/github/rl_from_scratch/.venv/lib/python3.9/site-packages/torch/autograd/graph\n'
     '.py", line 823, in _engine_run_backward\n'
     "    return Variable._execution_engine.run_backward(  # Calls into the C++ engine\n"
     "RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation:\n",
     ["_engine_run_backward", "backward", "<module>"]),
    # vwrideout/cs398 README.md: a Windows console at 80 columns, wrapped inside the line number
    # and at the space before "in" (which it dropped)
    ("Traceback (most recent call last):\n"
     '  File "C:\\Users\\Vincent\\Documents\\GitHub\\cs398\\mysite\\tweeter\\views.py", line 1\n'
     "4, in index\n"
     "    z = requests.post('http://localhost:7000/', data = {'tweet':form.cleaned_dat\n"
     "a})\n"
     '  File "C:\\Users\\Vincent\\Anaconda\\lib\\site-packages\\requests\\api.py", line 109,\n'
     "in post\n"
     "    return request('post', url, data=data, json=json, **kwargs)\n"
     '  File "C:\\Users\\Vincent\\Anaconda\\lib\\site-packages\\requests\\adapters.py", line\n'
     "415, in send\n"
     "    raise ConnectionError(err, request=request)\n"
     "ConnectionError: ('Connection aborted.', error(10054, 'An existing connection wa\n"
     "s forcibly closed by the remote host'))\n",
     ["send", "post", "index"]),
])
def test_a_traceback_a_terminal_wrapped_keeps_every_frame(tmp_path: Path, text: str,
                                                          frames: list[str]) -> None:
    (tmp_path / "terminal.txt").write_text(text)
    s = traindoc.load(tmp_path / "terminal.txt").stacks
    assert len(s) == 1 and s.iloc[0]["state"] == "raised"
    assert [f.split(" (")[0] for f in s.iloc[0]["frames"]] == frames
    assert s.iloc[0]["frames"][0].endswith(":823)") or s.iloc[0]["frames"][0].endswith(":415)")


# underworldcode/underworld3 src/underworld3/utilities/hang_report.py (format_report), as run in
# underworld3#630 (the corpus's deadlock-underworld3-630): ranks grouped by where they stopped
ROLL_CALL = """Hang report: 4 rank(s)

ranks [0, 2, 3]  stopped at  discretisation_mesh.py:6954 in get_max_radius
        via  discretisation_mesh.py:6140 in _classify_points_in_domain
        via  swarm.py:3786 in migrate
        ... 4 more frame(s)

rank  [1]        stopped at  swarm.py:3801 in migrate

=> 3 of 4 ranks are waiting together at discretisation_mesh.py:6954, and ranks [1]
   are somewhere else.
"""


def test_roll_call_of_ranks_by_where_they_stopped(tmp_path: Path) -> None:
    from traindoc.diagnose import deadlock, triage

    (tmp_path / "hang_report.txt").write_text(ROLL_CALL)
    inc = traindoc.load(tmp_path / "hang_report.txt")
    s = inc.stacks
    assert list(s["rank"]) == [0, 2, 3, 1] and set(s["thread"]) == {"MainThread"}
    assert s.iloc[0]["frames"] == [
        "get_max_radius (discretisation_mesh.py:6954)",
        "_classify_points_in_domain (discretisation_mesh.py:6140)", "migrate (swarm.py:3786)"]
    assert s.iloc[3]["frames"] == ["migrate (swarm.py:3801)"]
    f = deadlock.diagnose(inc).facts
    assert (f["processes_seen"], f["outlier_members"]) == (4, [1])
    assert f["majority_leaf"].startswith("get_max_radius") and f["outlier_leaf"].startswith("migrate")
    # triage counts the ranks' stacks as four processes (no pid: each rank is one)
    assert "stack dumps of 4 process(es)" in triage.diagnose(inc).verdict


@pytest.mark.parametrize("line", [
    "Training stopped at epoch 5", "rank [1] stopped at step 12",
    "ranks [0, 1] stopped at the barrier in train.py"])
def test_prose_about_stopping_is_no_roll_call(tmp_path: Path, line: str) -> None:
    (tmp_path / "job.log").write_text(line + "\n")
    assert not len(traindoc.load(tmp_path / "job.log").stacks)
