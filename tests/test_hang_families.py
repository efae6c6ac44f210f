"""Hang evidence beyond py-spy: each family read from at least two real sources (the issue
each line comes from is named beside it)."""

from __future__ import annotations

from pathlib import Path

import pytest

import traindoc
from traindoc.diagnose import deadlock, triage


def _load(tmp_path: Path, text: str, name: str = "log.txt") -> traindoc.Incident:
    (tmp_path / name).write_text(text)
    return traindoc.load(tmp_path / name)


def _facts(tmp_path: Path, text: str) -> dict:
    return deadlock.diagnose(_load(tmp_path, text)).facts


def _classes(tmp_path: Path, text: str) -> list[str]:
    rep = triage.report(triage.analyse(_load(tmp_path, text)))
    return [c["class"] for c in rep.facts["classes"]]


# -- a traceback printed by a hung process (Ctrl-C, atexit) is one sample of its stack -----------

CTRL_C = [
    # pytorch/pytorch#39570: pasted without its header, ends in KeyboardInterrupt
    ('  File "iterative_clustering.py", line 80, in calculate_features\n'
     '    for batch in tqdm(dataloader, desc=f"Features (pass {i})"):\n'
     '  File "/m/lib/python3.7/site-packages/torch/utils/data/dataloader.py", line 830, in _next_data\n'
     "    self._shutdown_workers()\n"
     '  File "/m/lib/python3.7/site-packages/torch/utils/data/dataloader.py", line 942, in _shutdown_workers\n'
     "    w.join()\n"
     '  File "/m/lib/python3.7/multiprocessing/process.py", line 140, in join\n'
     "    res = self._popen.wait(timeout)\n"
     '  File "/m/lib/python3.7/multiprocessing/popen_fork.py", line 28, in poll\n'
     "    pid, sts = os.waitpid(self.pid, flag)\n"
     "KeyboardInterrupt\n", "interrupted"),
    # pytorch/pytorch#26072: with its header, stopped by hand, no exception line pasted
    ("Traceback (most recent call last):\n"
     '  File "imagenet_demo.py", line 286, in <module>\n'
     "    for j, (data1, data2) in enumerate(tqdm(dataloader)):\n"
     '  File "/usr/local/lib/python3.6/dist-packages/torch/utils/data/dataloader.py", line 830, in _next_data\n'
     "    self._shutdown_workers()\n"
     '  File "/usr/local/lib/python3.6/dist-packages/torch/utils/data/dataloader.py", line 942, in _shutdown_workers\n'
     "    w.join()\n"
     '  File "/usr/lib/python3.6/multiprocessing/process.py", line 124, in join\n'
     "    res = self._popen.wait(timeout)\n"
     '  File "/usr/lib/python3.6/multiprocessing/popen_fork.py", line 28, in poll\n'
     "    pid, sts = os.waitpid(self.pid, flag)\n", "cut"),
]


@pytest.mark.parametrize(("text", "state"), CTRL_C)
def test_a_ctrl_c_traceback_is_a_stack_sample(tmp_path: Path, text: str, state: str) -> None:
    inc = _load(tmp_path, text)
    assert list(inc.stacks["state"]) == [state]
    f = deadlock.diagnose(inc).facts
    # the leaf is past multiprocessing's process waiting (join, popen_fork's poll)
    assert f["processes_seen"] == 1 and f["majority_leaf"].startswith("_shutdown_workers (")
    assert _classes(tmp_path, text) == ["deadlock"]


# -- Ctrl-C reaches every process of the terminal's group: each prints its own traceback ---------
# (pytorch/pytorch#11718: "each process (main and workers) will print trace from KeyboardInterrupt")

CTRL_C_SEVERAL = [
    # SeanNaren/deepspeech.pytorch#287 (torch 0.3): a DataLoader worker, then the trainer in DDP's
    # broadcast; the worker's loop is still in dataloader.py itself, a helper (not counted)
    ("Traceback (most recent call last):\n"
     '  File "/root/anaconda2/lib/python2.7/multiprocessing/process.py", line 114, in run\n'
     "    self._target(*self._args, **self._kwargs)\n"
     '  File "/root/anaconda2/lib/python2.7/site-packages/torch/utils/data/dataloader.py", line 50, in _worker_loop\n'
     "    r = index_queue.get()\n"
     '  File "/root/anaconda2/lib/python2.7/multiprocessing/queues.py", line 374, in get\n'
     "    racquire()\n"
     "KeyboardInterrupt\n"
     "Traceback (most recent call last):\n"
     '  File "train.py", line 280, in <module>\n'
     "    out = model(inputs)\n"
     '  File "/root/anaconda2/lib/python2.7/site-packages/torch/nn/parallel/distributed.py", line 195, in _sync_params\n'
     "    dist.broadcast(flat_buffers, 0)\n"
     '  File "/root/anaconda2/lib/python2.7/site-packages/torch/distributed/__init__.py", line 198, in broadcast\n'
     "    return torch._C._dist_broadcast(tensor, src, group)\n", 1, "broadcast ("),
    # pytorch/examples#148 (torch 0.1, Python 3.5): two DataLoader workers interrupted in
    # index_queue.get, each its own traceback (the post's interleaving undone)
    ("KeyboardInterrupt\n" + 2 * (
        "Traceback (most recent call last):\n"
        '  File "/m/lib/python3.5/multiprocessing/process.py", line 93, in run\n'
        "    self._target(*self._args, **self._kwargs)\n"
        '  File "/m/lib/python3.5/site-packages/torch/utils/data/dataloader.py", line 28, in _worker_loop\n'
        "    r = index_queue.get()\n"
        '  File "/m/lib/python3.5/multiprocessing/queues.py", line 342, in get\n'
        "    with self._rlock:\n"
        '  File "/m/lib/python3.5/multiprocessing/synchronize.py", line 96, in __enter__\n'
        "    return self._semlock.__enter__()\n"
        "KeyboardInterrupt\n"), 2, "_worker_loop ("),
    # wandb/wandb#3223: a second Ctrl-C's traceback cut after one frame is no process of its own
    ("^CProcess wandb_internal:\nTraceback (most recent call last):\n"
     '  File "/m/lib/python3.9/multiprocessing/process.py", line 108, in run\n'
     "    self._target(*self._args, **self._kwargs)\n"
     '  File "/m/lib/python3.9/site-packages/wandb/sdk/internal/internal.py", line 153, in wandb_internal\n'
     "    thread.join()\n"
     '  File "/m/lib/python3.9/threading.py", line 1033, in join\n'
     "    self._wait_for_tstate_lock()\n"
     "KeyboardInterrupt\n"
     "^CTraceback (most recent call last):\n"
     '  File "<string>", line 1, in <module>\n', 1, ""),
]


@pytest.mark.parametrize(("text", "n", "leaf"), CTRL_C_SEVERAL)
def test_ctrl_c_tracebacks_of_several_processes(tmp_path: Path, text: str, n: int,
                                                leaf: str) -> None:
    r = deadlock.diagnose(_load(tmp_path, text))
    assert r.facts["processes_seen"] == n and r.facts["majority_leaf"].startswith(leaf)
    assert any(x.id == "helper_processes" for x in r.findings) is (leaf == "broadcast (")


def test_an_atexit_hang_with_python_3_12_carets(tmp_path: Path) -> None:
    # pytorch/pytorch#162199: the inductor compile workers' atexit hook waits 300 s
    f = _facts(tmp_path, (
        "Exception ignored in atexit callback: <function shutdown_compile_workers at 0x7f888065ca40>\n"
        "Traceback (most recent call last):\n"
        '  File "/p/torch/_inductor/async_compile.py", line 146, in shutdown_compile_workers\n'
        "    pool.shutdown()\n"
        '  File "/p/torch/_inductor/compile_worker/subproc_pool.py", line 269, in shutdown\n'
        "    self.process.wait(300)\n"
        '  File "/e/lib/python3.12/subprocess.py", line 1264, in wait\n'
        "    return self._wait(timeout=timeout)\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "/e/lib/python3.12/subprocess.py", line 2038, in _wait\n'
        "    raise TimeoutExpired(self.args, timeout)\n"))
    # the only process is the compile pool's parent: counted, not set aside as a helper
    assert f["processes_seen"] == 1 and f["majority_leaf"].startswith("_wait (")


CRASHES = [
    # facebookresearch/pycls#146: a chained exception, the cause's traceback innermost
    ("Traceback (most recent call last):\n"
     '  File "/usr/local/lib/python3.6/dist-packages/torch/utils/data/dataloader.py", line 986, in _try_get_data\n'
     "    data = self._data_queue.get(timeout=timeout)\n"
     '  File "/usr/lib/python3.6/queue.py", line 173, in get\n'
     "    self.not_empty.wait(remaining)\n"
     '  File "/usr/local/lib/python3.6/dist-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler\n'
     "    _error_if_any_worker_fails()\n"
     "RuntimeError: DataLoader worker (pid 624) is killed by signal: Segmentation fault. \n"
     "\n"
     "The above exception was the direct cause of the following exception:\n"
     "\n"
     "Traceback (most recent call last):\n"
     '  File "/workspace/pycls/train_net.py", line 24, in <module>\n'
     "    main()\n"
     '  File "/workspace/pycls/pycls/core/trainer.py", line 185, in train_model\n'
     "    train_epoch(*params, cur_epoch)\n", "handler (", "<module> ("),
    # chenxin-dlut/SUTrack#15: the same SIGCHLD handler, inside clip_grad_norm_
    ("Traceback (most recent call last):\n"
     '  File "/h/lib/train/trainers/ltr_trainer.py", line 87, in cycle_dataset\n'
     "    torch.nn.utils.clip_grad_norm_(self.actor.net.parameters(), self.settings.grad_clip_norm)\n"
     '  File "/h/lib/python3.8/site-packages/torch/nn/utils/clip_grad.py", line 55, in clip_grad_norm_\n'
     "    p.grad.detach().mul_(clip_coef_clamped.to(p.grad.device))\n"
     '  File "/h/lib/python3.8/site-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler\n'
     "    _error_if_any_worker_fails()\n"
     "RuntimeError: DataLoader worker (pid 346942) is killed by signal: Segmentation fault. \n"
     "\n"
     "Restarting training from last epoch ...\n", "handler (", "cycle_dataset ("),
]


@pytest.mark.parametrize(("text", "leaf", "outer"), CRASHES)
def test_a_crash_traceback_is_one_raised_sample_and_no_hang(tmp_path: Path, text: str, leaf: str,
                                                            outer: str) -> None:
    inc = _load(tmp_path, text)
    s = inc.stacks
    assert len(s) == 1 and s.iloc[0]["state"] == "raised"
    assert s.iloc[0]["frames"][0].startswith(leaf) and s.iloc[0]["frames"][-1].startswith(outer)
    f = deadlock.diagnose(inc).facts
    assert f["processes_seen"] == 1 and f["majority_leaf"].startswith(leaf)
    assert "deadlock" not in _classes(tmp_path, text)


def test_tracebacks_beside_dumps_do_not_count(tmp_path: Path) -> None:
    # a py-spy dump says more than the traceback the same job printed when it was stopped
    text = ("Process 12: python train.py\nPython v3.10.4 (/usr/bin/python3)\n\n"
            'Thread 12 (idle): "MainThread"\n    all_reduce (torch/distributed/distributed_c10d.py:2050)\n'
            "    step (train.py:40)\n\n"
            "Traceback (most recent call last):\n"
            '  File "train.py", line 40, in step\n    dist.all_reduce(t)\nKeyboardInterrupt\n')
    inc = _load(tmp_path, text)
    assert sorted(inc.stacks["state"].fillna("")) == ["idle", "interrupted"]
    procs = deadlock.stacks.processes(inc.stacks)
    assert len(procs) == 1 and procs[0].pid == 12


# -- gdb's `info threads`: one frame per thread, C only -------------------------------------------

GDB_INFO = [
    # pytorch/pytorch#75147 (a hung DataLoader loop)
    ("(gdb) info threads\n"
     "  Id   Target Id         Frame\n"
     '* 1    Thread 0x7fc73ac5d700 (LWP 52422) "" select_poll_poll () at /usr/local/src/conda/'
     "python-3.8.12/Modules/clinic/selectmodule.c.h:219\n"
     '  2    Thread 0x7fc6b59e6700 (LWP 52574) "" pthread_cond_wait@@GLIBC_2.3.2 () at ../sysdeps/'
     "unix/sysv/linux/x86_64/pthread_cond_wait.S:185\n"
     '  5    Thread 0x7fc6b71e9700 (LWP 52742) "" 0x00007fc739c909c8 in accept4 (fd=7, addr=..., '
     "addr_len=0x7fc6b71e8e58, flags=524288) at ../sysdeps/unix/sysv/linux/accept4.c:40\n",
     52422, "select_poll_poll"),
    # ponylang/ponyc#2472 (the file on a line of its own)
    ("(gdb) info threads\n"
     "  Id   Target Id         Frame \n"
     '* 1    Thread 0x7f1ea7af96c0 (LWP 16467) "stdlib" 0x00007f1ea697f44d in pthread_join ()\n'
     "   from /usr/lib/libpthread.so.0\n"
     '  2    Thread 0x7f1e9d44c700 (LWP 16469) "stdlib" 0x00005597f96330c9 in run_thread ()\n',
     16467, "pthread_join"),
]


@pytest.mark.parametrize(("text", "pid", "func"), GDB_INFO)
def test_gdb_info_threads(tmp_path: Path, text: str, pid: int, func: str) -> None:
    inc = _load(tmp_path, text)
    s = inc.stacks
    assert len(s) >= 2 and set(s["pid"]) == {pid}
    main = s[s["thread"] == "MainThread"]
    assert len(main) == 1 and main.iloc[0]["leaf"].startswith(func + " (")
    assert deadlock.diagnose(inc).facts["processes_seen"] == 1
    assert _classes(tmp_path, text) == ["deadlock"]


# -- the kernel's hung-task report: a process in uninterruptible sleep ----------------------------

HUNG = [
    # huggingface m4 logs, tr141 try3 dmesg (GPFS write)
    ("[Sat Mar  4 04:10:52 2023] INFO: task python:280058 blocked for more than 120 seconds.\n"
     "[Sat Mar  4 04:10:52 2023]       Tainted: P           OE    --------- -  - 4.18.0-372.36.1.el8_6.x86_64 #1\n"
     '[Sat Mar  4 04:10:52 2023] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.\n'
     "[Sat Mar  4 04:10:52 2023] task:python          state:D stack:    0 pid:280058 ppid:279966 flags:0x00000080\n"
     "[Sat Mar  4 04:10:52 2023] Call Trace:\n"
     "[Sat Mar  4 04:10:52 2023]  __schedule+0x2d1/0x860\n"
     "[Sat Mar  4 04:10:52 2023]  ? try_to_wake_up+0x1b4/0x4e0\n"
     "[Sat Mar  4 04:10:52 2023]  schedule+0x35/0xa0\n"
     "[Sat Mar  4 04:10:52 2023]  cxiWaitEventWait+0x208/0x330 [mmfslinux]\n"
     "[Sat Mar  4 04:10:52 2023]  vfs_write+0xa5/0x1a0\n", 280058, "cxiWaitEventWait (mmfslinux)"),
    # SymbioticLab/Infiniswap#25 (older kernels: the address before each frame)
    ("[  843.072392] INFO: task python3:5604 blocked for more than 120 seconds.\n"
     "[  843.092463]       Tainted: G           OE   4.4.0-140-generic #166~14.04.1-Ubuntu\n"
     '[  843.112863] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.\n'
     "[  843.133422] python3         D ffff880838017788     0  5604   3943 0x00000000\n"
     "[  843.133427]  ffff880838017788 0000000100000000 ffff880857d15400 ffff880838018000\n"
     "[  843.133434] Call Trace:\n"
     "[  843.133443]  [<ffffffff818205c0>] ? bit_wait+0x50/0x50\n"
     "[  843.133446]  [<ffffffff8181fe75>] schedule+0x35/0x80\n"
     "[  843.133449]  [<ffffffff8182286b>] schedule_timeout+0x23b/0x2d0\n"
     "[  843.133464]  [<ffffffff8181f5b6>] io_schedule_timeout+0xa6/0x110\n"
     "[  843.133467]  [<ffffffff818205db>] bit_wait_io+0x1b/0x60\n", 5604, "io_schedule_timeout (kernel)"),
]


@pytest.mark.parametrize(("text", "pid", "leaf"), HUNG)
def test_kernel_hung_task_report(tmp_path: Path, text: str, pid: int, leaf: str) -> None:
    inc = _load(tmp_path, text, "dmesg.txt")
    s = inc.stacks
    assert len(s) == 1 and s.iloc[0]["pid"] == pid and s.iloc[0]["state"] == "D"
    assert s.iloc[0]["leaf"] == leaf
    assert deadlock.diagnose(inc).facts["processes_seen"] == 1
    assert _classes(tmp_path, text) == ["deadlock"]


# -- init_process_group's store-based barrier, still waiting ----------------------------------------

def _waiting(rank: int, world: int, joined: int, timeout: str = "0:30:00") -> str:
    return (f"INFO:root:Waiting in store based barrier to initialize process group for rank: {rank}, "
            f"key: store_based_barrier_key:1 (world_size={world}, worker_count={joined}, "
            f"timeout={timeout})\n")


def test_barrier_waiters_are_processes_and_the_silent_rank_the_outlier(tmp_path: Path) -> None:
    # Lightning-AI/pytorch-lightning#4420: 7 of 8 ranks wait, rank 4 never printed
    text = "".join(_waiting(r, 8, 7) for r in (0, 2, 6, 1, 3, 7, 5))
    f = _facts(tmp_path, text)
    assert f["processes_seen"] == 7 and f["outlier_members"] == [4]
    assert _classes(tmp_path, text) == ["deadlock", "timeout"]


@pytest.mark.parametrize("text", [
    # ultralytics/yolov5#4574: rank 0 alone, more workers than the world (another job's store)
    _waiting(0, 4, 8) * 3,
    # AlibabaResearch/efficientteacher#85 (the same, a one-day timeout)
    ("Waiting in store based barrier to initialize process group for rank: 0, key: "
     "store_based_barrier_key:1 (world_size=2, worker_count=4, timeout=1 day, 0:00:00)\n") * 2,
])
def test_one_rank_waiting_names_no_outlier(tmp_path: Path, text: str) -> None:
    f = _facts(tmp_path, text)
    assert f["processes_seen"] == 1 and f["outlier_members"] == []
    # the hang leads; the timeout runbook's view of the same barrier follows, and never says
    # that a rank timed out (the barrier has not)
    rep = triage.report(triage.analyse(_load(tmp_path, text)))
    assert [c["class"] for c in rep.facts["classes"]] == ["deadlock", "timeout"]
    assert "timed out in" not in rep.verdict and "stack dumps" not in rep.verdict


def test_a_barrier_that_timed_out_stays_the_timeouts(tmp_path: Path) -> None:
    # ultralytics/yolov5#4409: the waiting lines, then the timeout
    text = _waiting(0, 4, 12, "0:01:00") * 2 + (
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for "
        "key: store_based_barrier_key:1 (world_size=4, worker_count=12, timeout=0:01:00)\n")
    assert _classes(tmp_path, text)[0] == "timeout"


# -- py-spy: an idle thread with no frame is a process doing nothing ------------------------------

def test_an_idle_worker_is_a_process_but_no_hang(tmp_path: Path) -> None:
    # benfred/py-spy#221: a uWSGI worker between requests; its thread id is its pid
    text = ("Process 25585: uwsgi --wsgi-file app/wsgi.py --http-socket :8000 --workers=2 --master\n"
            "Python v3.7.3 (/mnt/data/vad/cache/virtualenvs/app/bin/uwsgi)\n\n"
            'Thread 25585 (idle): "uWSGIWorker1Core0"\n')
    assert _facts(tmp_path, text)["processes_seen"] == 1
    assert _classes(tmp_path, text) == []


def test_dumps_of_pid_1_are_each_a_containers_process(tmp_path: Path) -> None:
    # marin-community/marin#7344: two pods' dumps, both "Process 1", the second without header
    text = ("Process 1: python -u /app/_callable_runner.py\nPython v3.12.13 (/usr/local/bin/python3.12)\n\n"
            'Thread 1 (idle): "MainThread"\n    main (experiments/grug/minimal_wedge_repro.py:389)\n'
            "    <module> (_callable_runner.py:40)\n"
            'Thread 1440 (idle): "fsspecIO"\n    select (selectors.py:468)\n\n'
            "# vs the non-lagging one:\n\n"
            'Thread 1 (idle): "MainThread"\n    _value (jax/_src/array.py:642)\n'
            "    main (experiments/grug/minimal_wedge_repro.py:392)\n"
            "    <module> (_callable_runner.py:40)\n")
    assert _facts(tmp_path, text)["processes_seen"] == 2


# -- reports that compare ranks, read as the hang's first mismatch --------------------------------

DETAIL = [
    # modelscope/ms-swift#8307
    ("[rank2]: RuntimeError: Detected mismatch between collectives on ranks. Rank 2 is running "
     "collective: CollectiveFingerPrint(SequenceNumber=8372, OpType=BROADCAST, TensorShape=[24084544], "
     "TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda)), but "
     "Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=8372, OpType=BROADCAST, "
     "TensorShape=[64], TensorDtypes=Float, TensorDeviceTypes=TensorOptions(dtype=float (default), "
     "device=cuda)).\n", 8372),
    # modelscope/ms-swift#9443 (another model, an ALLREDUCE of different sizes)
    ("[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running "
     "collective: CollectiveFingerPrint(SequenceNumber=3104, OpType=ALLREDUCE, TensorShape=[195812480], "
     "TensorDtypes=BFloat16, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, "
     "layout=Strided (default), requires_grad=false (default), pinned_memory=false (default), "
     "memory_format=(nullopt))), but Rank 0 is running collective: CollectiveFingerPrint("
     "SequenceNumber=3104, OpType=ALLREDUCE, TensorShape=[51123456], TensorDtypes=BFloat16, "
     "TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), "
     "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt)))."
     "Collectives differ in the following aspects:   Tensor Tensor shapes: 195812480vs 51123456\n",
     3104),
]


@pytest.mark.parametrize(("text", "seq"), DETAIL)
def test_detail_mismatch_is_the_first_mismatch(tmp_path: Path, text: str, seq: int) -> None:
    f = _facts(tmp_path, text)
    assert f["first_mismatch"]["seq_num"] == seq and f["processes_seen"] == 2


# Lightning-AI/pytorch-lightning#19106: TORCH_DISTRIBUTED_DEBUG=DETAIL's ProcessGroupWrapper
# logs every collective a rank enters; rank 1 is one broadcast behind ranks 0 and 2
_OPTS = ("TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided "
         "(default), requires_grad=false (default), pinned_memory=false (default), "
         "memory_format=(nullopt)))")
RUNNING = (
    "[I ProcessGroupWrapper.cpp:562] [Rank 1] Running collective: CollectiveFingerPrint("
    f"SequenceNumber=3, OpType=BROADCAST, TensorShape=[1], TensorDtypes=Long, {_OPTS}\n"
    "[I ProcessGroupWrapper.cpp:562] [Rank 0] Running collective: CollectiveFingerPrint("
    f"SequenceNumber=4, OpType=BROADCAST, TensorShape=[73], TensorDtypes=Byte, {_OPTS}\n"
    "[I ProcessGroupWrapper.cpp:562] [Rank 2] Running collective: CollectiveFingerPrint("
    f"SequenceNumber=4, OpType=BROADCAST, TensorShape=[73], TensorDtypes=Byte, {_OPTS}\n")


def test_detail_running_lines_name_the_rank_behind(tmp_path: Path) -> None:
    inc = _load(tmp_path, RUNNING)
    rows = inc.collectives
    assert list(rows["rank"]) == [1, 0, 2] and list(rows["seq_num"]) == [3, 4, 4]
    assert set(rows["state"]) == {"started"} and list(rows["sizes"]) == ["[1]", "[73]", "[73]"]
    f = _facts(tmp_path, RUNNING)
    assert f["processes_seen"] == 3 and f["outlier_members"] == [1]
    assert f["first_mismatch"]["seq_num"] == 4 and f["first_mismatch"]["ranks"] == [1]
    assert _classes(tmp_path, RUNNING) == ["deadlock"]


def test_detail_running_lines_all_at_one_collective_name_no_one(tmp_path: Path) -> None:
    # the same lines with every rank at SequenceNumber=4 (a run stopped between collectives)
    text = RUNNING.replace("SequenceNumber=3", "SequenceNumber=4").replace(
        "TensorShape=[1], TensorDtypes=Long", "TensorShape=[73], TensorDtypes=Byte")
    f = _facts(tmp_path, text)
    assert f["processes_seen"] == 3 and f["outlier_members"] == [] and f["first_mismatch"] is None
    assert "deadlock" not in _classes(tmp_path, text)


def test_detail_running_lines_a_run_went_on_after_are_no_hang(tmp_path: Path) -> None:
    # a Megatron step line (tests/data/wordings/iteration_lines.txt) after the lines: the run
    # went on, so the ranks' positions are a moment of a running job, no hang
    step = (" iteration       10/ 1000000 | consumed samples:           40 | elapsed time per "
            "iteration (ms): 356.2 | learning rate: 0.000E+00 | global batch size:     4 |\n")
    assert "deadlock" not in _classes(tmp_path, RUNNING + step)
    assert _classes(tmp_path, step + RUNNING) == ["deadlock"]


def test_detail_running_lines_of_two_groups_name_no_one(tmp_path: Path) -> None:
    # rank 0's earlier line at SequenceNumber=9 (a subgroup's wrapper counts apart, and the
    # lines name no group): the last lines may be of different groups, so no rank is behind
    first = RUNNING.splitlines(keepends=True)[1].replace("SequenceNumber=4", "SequenceNumber=9")
    f = _facts(tmp_path, first + RUNNING)
    assert f["outlier_members"] == [] and f["first_mismatch"] is None


FR_REPORTS = [
    # pytorch/pytorch#140969: the analyser's text report alone
    ("Not all ranks joining collective: sequence number: 31117\n"
     "internal record id: 31116\ngroup info: 0:default_pg\ncollective: nccl:all_reduce\n"
     "missing ranks: {3, 4, 5, 6, 7}\ninput sizes: [[1571911]]\noutput sizes: [[1571911]]\n"
     "world size: 8\nexpected ranks: {0, 1, 2, 3, 4, 5, 6, 7}\ncollective state: scheduled\n",
     31117, [3, 4, 5, 6, 7]),
    # pytorch/tutorials, prototype_source/flight_recorder_tutorial.rst (the older wording)
    ("Not all ranks joining collective 5 at entry 4\ngroup info: 0:default_pg\n"
     "collective: nccl:all_reduce\nmissing ranks: {1}\ninput sizes: [[3, 4]]\n"
     "output sizes: [[3, 4]]\nexpected ranks: 2\ncollective state: scheduled\n", 5, [1]),
]


@pytest.mark.parametrize(("text", "seq", "missing"), FR_REPORTS)
def test_fr_trace_missing_ranks_name_the_outliers(tmp_path: Path, text: str, seq: int,
                                                 missing: list[int]) -> None:
    f = _facts(tmp_path, text)
    assert f["first_mismatch"]["seq_num"] == seq and f["outlier_members"] == missing


def test_a_headless_faulthandler_tail_beside_a_crash_is_no_hang(tmp_path: Path) -> None:
    # pytorch/pytorch#152780: the end of a crash's faulthandler dump, then the watchdog's error
    text = ('  File "/h/lib/python3.12/multiprocessing/spawn.py", line 122 in spawn_main\n'
            '  File "<string>", line 1 in <module>\n'
            "[rank0]:[E504 23:32:59.338859795 ProcessGroupNCCL.cpp:1896] [PG ID 0 PG GUID 0(default_pg) "
            "Rank 0] Process group watchdog thread terminated with exception: CUDA error: an illegal "
            "memory access was encountered\n")
    assert "deadlock" not in _classes(tmp_path, text)


WATCHDOG_WENT_ON = (
    # apache/spark#51309: Spark's periodic dump of a slow UDTF analyze(), then the query's table
    'Timeout (0:00:10)!\nThread 0x00000001ff418f80 (most recent call first):\n'
    '  File "<stdin>", line 5 in analyze\n'
    '  File "/.../pyspark/sql/worker/analyze_udtf.py", line 160 in main\n...\n\n'
    "+-----+\n|x_out|\n+-----+\n|    1|\n+-----+\n",
    # vulnerability-lookup/vulnerability-lookup#591: pytest's faulthandler_timeout on a slow test
    'Timeout (0:00:02)!\nThread 0x00007f809fc98340 (most recent call first):\n'
    '  File ".../test_fh_probe.py", line 5 in test_slow\n'
    '  File ".../_pytest/python.py", line 167 in pytest_pyfunc_call\n  ...\n1 passed in 4.00s\n',
)


@pytest.mark.parametrize("text", WATCHDOG_WENT_ON)
def test_a_watchdog_dump_the_process_went_on_after_is_no_hang(tmp_path: Path, text: str) -> None:
    inc = _load(tmp_path, text)
    assert list(inc.stacks["state"]) == ["progress"]
    assert _facts(tmp_path, text)["processes_seen"] == 1
    assert "deadlock" not in _classes(tmp_path, text)


def test_a_watchdog_dump_with_nothing_after_or_a_kill_is_a_hang(tmp_path: Path) -> None:
    # Tribler/tribler#7696 (a test blocked in join), as posted and then killed
    dump = ('Timeout (0:00:15)!\nThread 0x0000700007d81000 (most recent call first):\n'
            '  File "/src/tribler/core/upgrade/tests/test_triblerversion.py", line 56 in '
            'block_forever\n  File "/usr/lib/python3.9/threading.py", line 910 in run\n')
    for text in (dump, dump + "Terminated\n"):
        assert "deadlock" in _classes(tmp_path, text)


# -- a thread cut below its waits takes its leaf from the threads that show the same waits -------

# mlcommons/modelbench#715: a faulthandler paste of a wedged threaded pipeline, cut after the
# third thread's ``get`` frame; CPython lists the main thread last, so the cut thread is read as
# MainThread, and its two frames say only that it waits
CUT_PIPELINE = """Thread 0x00007f2b33e006c0 (most recent call first):
File "/usr/local/lib/python3.12/threading.py", line 359 in wait
File "/usr/local/lib/python3.12/queue.py", line 180 in get
File "/venv/lib/python3.12/site-packages/modelgauge/pipeline.py", line 98 in upstream_get
File "/venv/lib/python3.12/site-packages/modelgauge/pipeline.py", line 288 in run
File "/usr/local/lib/python3.12/threading.py", line 1012 in run
File "/usr/local/lib/python3.12/threading.py", line 1075 in _bootstrap_inner
File "/usr/local/lib/python3.12/threading.py", line 1032 in _bootstrap

Thread 0x00007f2b3cc006c0 (most recent call first):
File "/usr/local/lib/python3.12/threading.py", line 1169 in _wait_for_tstate_lock
File "/usr/local/lib/python3.12/threading.py", line 1149 in join
File "/venv/lib/python3.12/site-packages/modelgauge/pipeline.py", line 201 in _notice_complete
File "/usr/local/lib/python3.12/threading.py", line 1012 in run
File "/usr/local/lib/python3.12/threading.py", line 1075 in _bootstrap_inner
File "/usr/local/lib/python3.12/threading.py", line 1032 in _bootstrap

Thread 0x00007f2b3d6006c0 (most recent call first):
File "/usr/local/lib/python3.12/threading.py", line 359 in wait
File "/usr/local/lib/python3.12/queue.py", line 180 in get
"""


def test_a_thread_cut_below_its_waits_takes_the_leaf_of_the_same_waits(tmp_path: Path) -> None:
    f = _facts(tmp_path, CUT_PIPELINE)
    assert f["processes_seen"] == 1
    assert "upstream_get (/venv/lib/python3.12/site-packages/modelgauge/pipeline.py:98)" == (
        f["majority_leaf"])


def test_a_thread_of_waits_only_keeps_its_wait_where_the_others_tie() -> None:
    from traindoc.diagnose.deadlock.stacks import continued_leaf, only_waits

    waits = ["wait (/usr/lib/python3.12/threading.py:359)"]
    assert only_waits(waits)
    assert not only_waits(["upstream_get (pipeline.py:98)", *waits])
    a = ["step (a.py:1)", "run (threading.py:1012)"]
    b = ["step (b.py:2)", "run (threading.py:1012)"]
    assert continued_leaf(waits, [a, b]) is None  # two threads at work, no majority: no guess
    assert continued_leaf(waits, [a, b, a]) == a
