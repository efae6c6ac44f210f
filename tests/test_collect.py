"""traindoc collect: finding a job's rank processes, the SigCgt rule, the fan-out commands, and
the whole collection on the live hang drill (py-spy per rank, flight recorder, the deadlock
diagnosis naming the stuck rank), with nothing left running."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import traindoc
from test_drills_live import live_drill, needs_torch, wait_for  # noqa: F401 (fixture)
from traindoc import cli, collect
from traindoc.diagnose import deadlock

SLEEPER = "import time; print('ready', flush=True); time.sleep(120)"
HANDLER = ("import signal, time; signal.signal(signal.SIGUSR1, lambda *a: print('usr1', flush=True))"
           "; print('ready', flush=True); time.sleep(120)")
# a launcher that starts two ranks (RANK set) and waits, like torchrun
LAUNCHER = (
    "import os, subprocess, sys, time\n"
    "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],\n"
    "        env=dict(os.environ, RANK=str(r), LOCAL_RANK=str(r))) for r in range(2)]\n"
    "print('ready', ' '.join(str(k.pid) for k in kids), flush=True)\n"
    "time.sleep(120)\n")


@pytest.fixture
def spawn() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start Python children that print 'ready'; every one (and its group) is killed after."""
    procs: list[subprocess.Popen[str]] = []

    def start(code: str, env: dict[str, str] | None = None, stdout: Any = subprocess.PIPE
              ) -> subprocess.Popen[str]:
        p = subprocess.Popen([sys.executable, "-c", code], stdout=stdout, text=True,
                             env=dict(os.environ, **(env or {})), start_new_session=True)
        procs.append(p)
        return p

    yield start
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def ready(p: subprocess.Popen[str]) -> str:
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line.startswith("ready"), line
    return line


def test_sigcgt_says_whether_sigusr1_is_caught(spawn: Callable[..., Any]) -> None:
    plain, handled = spawn(SLEEPER), spawn(HANDLER)
    ready(plain), ready(handled)
    assert not collect.signal_caught(plain.pid, signal.SIGUSR1)
    assert collect.signal_caught(handled.pid, signal.SIGUSR1)
    assert not collect.signal_caught(handled.pid, signal.SIGUSR2)
    assert not collect.signal_caught(999_999_999, signal.SIGUSR1)


def test_sigusr1_never_sent_to_a_process_that_does_not_catch_it(
        spawn: Callable[..., Any], tmp_path: Path) -> None:
    plain = spawn(SLEEPER, env={"RANK": "3"})
    ready(plain)
    proc = collect.RankProcess(plain.pid, 3, collect.start_time(plain.pid) or "", "", "--pid")
    saved, notes = collect.signal_dumps([proc], tmp_path, wait_s=0.5, sigusr1=True)
    time.sleep(0.3)
    assert plain.poll() is None and not saved  # the default action would have killed it
    assert any("not sent" in n for n in notes)
    handled = spawn(HANDLER, env={"RANK": "4", "TORCH_FR_DUMP_TEMP_FILE": str(tmp_path / "fr")})
    ready(handled)
    proc = collect.RankProcess(handled.pid, 4, collect.start_time(handled.pid) or "", "", "--pid")
    saved, notes = collect.signal_dumps([proc], tmp_path, wait_s=0.5)
    assert not saved and any("catches SIGUSR1, not sent" in n for n in notes)  # not asked for
    saved, notes = collect.signal_dumps([proc], tmp_path, wait_s=0.5, sigusr1=True)
    assert handled.stdout is not None and handled.stdout.readline().strip() == "usr1"
    assert handled.poll() is None and any("SIGUSR1 sent" in n for n in notes)
    assert any(f"no new dump at {tmp_path / 'fr'}4" in n for n in notes)


def test_ranks_found_below_a_launcher_pid(spawn: Callable[..., Any]) -> None:
    launcher = spawn(LAUNCHER)
    kids = [int(x) for x in ready(launcher).split()[1:]]
    wait_for(lambda: all(collect.rank_of(k) is not None for k in kids), 30, "exec")  # not forks
    assert collect.children(launcher.pid) == sorted(kids)
    procs, notes = collect.find_processes(pids=[launcher.pid])
    assert [(p.rank, p.pid) for p in procs] == [(0, kids[0]), (1, kids[1])]
    assert any("left alone" in n and str(launcher.pid) in n for n in notes)


def test_a_ranks_helper_is_dumped_but_never_signalled(spawn: Callable[..., Any],
                                                      tmp_path: Path) -> None:
    """A child with its parent's RANK (a DataLoader worker) is that rank's helper."""
    code = ("import os, signal, subprocess, sys, time\n"
            "signal.signal(signal.SIGUSR1, lambda *a: None)\n"
            "k = subprocess.Popen([sys.executable, '-c', " + repr(HANDLER) + "],\n"
            "                     stdout=subprocess.DEVNULL)\n"
            "print('ready', k.pid, flush=True); time.sleep(120)\n")
    rank = spawn(code, env={"RANK": "2"})
    helper = int(ready(rank).split()[1])
    wait_for(lambda: collect.signal_caught(helper, signal.SIGUSR1), 30, "the helper's handler")
    procs, _ = collect.find_processes(pids=[rank.pid])
    assert [(p.pid, p.rank, p.helper_of) for p in procs] == [(rank.pid, 2, None),
                                                              (helper, 2, rank.pid)]
    _, notes = collect.signal_dumps(procs[1:], tmp_path, wait_s=0.1, sigusr1=True)
    assert any("a helper of" in n for n in notes) and not any("SIGUSR1 sent" in n for n in notes)


def test_ranks_found_from_logs(spawn: Callable[..., Any], tmp_path: Path) -> None:
    launcher = spawn(LAUNCHER)
    kids = [int(x) for x in ready(launcher).split()[1:]]
    wait_for(lambda: all(collect.rank_of(k) is not None for k in kids), 30, "exec")  # not forks
    log = tmp_path / "job.log"
    log.write_text(f"node01:{kids[0]}:{kids[0] + 7} [0] NCCL INFO Bootstrap : Using eth0\n"
                   f"worker started (pid: {kids[1]})\nProcess 999999999: gone\n")
    procs, notes = collect.find_processes(logs=[tmp_path])
    assert sorted((p.rank, p.pid) for p in procs) == [(0, kids[0]), (1, kids[1])]
    assert any("999999999" in n and "not running" in n for n in notes)
    # a process holding the log open (a rank's redirected stdout) is found without any pid
    with open(tmp_path / "rank5.log", "w") as out:
        holder = spawn(SLEEPER, env={"RANK": "5"}, stdout=out)
    wait_for(lambda: (tmp_path / "rank5.log").read_text().startswith("ready"), 30, "the child")
    procs, _ = collect.find_processes(logs=[tmp_path / "rank5.log"])
    assert [(p.rank, p.pid) for p in procs] == [(5, holder.pid)]


def test_pids_in_logs_ignores_what_is_no_pid(tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text(
        "iteration 100/200 | pid: 4242 |\nhost-a:1234:1290 [3] NCCL INFO comm 0x1 rank 3\n"
        "Process 77: python train.py\nrapid 55 steps\n")
    assert collect.pids_in_logs([tmp_path / "a.log"]) == {4242, 1234, 77}


def test_fanout_commands() -> None:
    cmds = collect.fanout_commands("node[01-03]", Path("/shared/ev"), "4242")
    srun = cmds["slurm"]
    assert srun[:3] == ["srun", "--overlap", "--jobid=4242"]
    assert "--nodelist=node[01-03]" in srun and "--nodes=3" in srun
    assert "--output=/shared/ev/evidence/trace-%N.out" in srun  # the name parse/stacks reads
    assert "py-spy dump" in srun[-1] and srun[-3:-1] == ["bash", "-c"]
    assert cmds["pdsh"][:3] == ["pdsh", "-w", "node[01-03]"]
    no_id = collect.fanout_commands(["node01", "node02"], Path("/ev"), None)
    assert '--jobid="$SLURM_JOB_ID"' in collect.command_text(no_id["slurm"])
    assert collect.fanout_commands(None, Path("/ev"), None) == {}


def test_cli_collect_a_plain_python_process(spawn: Callable[..., Any], tmp_path: Path) -> None:
    p = spawn(SLEEPER, env={"RANK": "0"})
    ready(p)
    out, err = io.StringIO(), io.StringIO()
    rc = cli.main(["collect", "--pid", str(p.pid), "-o", str(tmp_path / "ev"), "--hosts",
                   "n[1-2]"], out, err)
    assert rc == 0, err.getvalue()
    ev = tmp_path / "ev" / "evidence"
    notes = (ev / "notes.txt").read_text()
    assert f"pid {p.pid}" in notes and "srun --overlap" in notes
    # a GPU node saves the driver's state, elsewhere a note says why there is none (the note
    # alone was asserted, and the test failed on an H200 machine, where nvidia-smi exists)
    assert (ev / "nvidia-smi-q.txt").is_file() or "nvidia-smi" in notes, notes
    dumps = list(ev.glob(f"py-spy-rank0-pid{p.pid}.txt"))
    assert dumps or "py-spy" in notes  # py-spy absent or ptrace denied: a note says so
    assert p.poll() is None
    if dumps:
        stacks = traindoc.load(str(tmp_path / "ev")).stacks
        assert set(stacks["rank"].dropna()) == {0} and set(stacks["pid"].dropna()) == {p.pid}
    assert cli.main(["collect", "-o", str(tmp_path / "x")], io.StringIO(), io.StringIO()) == 2
    assert cli.main(["collect", "--pid", "999999999", "-o", str(tmp_path / "y")],
                    io.StringIO(), io.StringIO()) == 1


@pytest.mark.drills
@needs_torch
def test_collect_on_the_live_hang_drill(live_drill: Callable[..., dict[str, Any]],  # noqa: F811
                                        tmp_path: Path) -> None:
    rec = live_drill("hang", max_runtime_s=180)
    last = Path(rec["ranks"]["1"]["logs"]["stdout"])
    wait_for(lambda: " iteration        5/" in last.read_text(errors="replace"), 120, "the hang")
    # rank 1 waits on its eval loader, rank 0 in broadcast: seen in their stacks (py-spy, as
    # collect takes them), not a fixed sleep that a loaded machine can outlast
    pyspy = collect.find_pyspy()
    assert pyspy, "py-spy is a dev dependency (pip install -e '.[dev]')"

    def stack(rank: int) -> str:
        pid = str(rec["ranks"][str(rank)]["pid"])
        return subprocess.run([pyspy, "dump", "--pid", pid], capture_output=True, text=True,
                              timeout=60).stdout

    wait_for(lambda: "queue.py" in (s := stack(1)) and "evaluate" in s
             and "broadcast" in stack(0), 120,
             "rank 1 in its eval loader, rank 0 in broadcast")
    res = collect.collect(tmp_path / "ev", logs=[rec["out"]], sigusr1=True)
    assert sorted(p.rank for p in res.processes) == [0, 1]
    names = {p.name for p in res.saved}
    for r in (0, 1):
        pid = rec["ranks"][str(r)]["pid"]
        assert f"py-spy-rank{r}-pid{pid}.txt" in names
        assert f"fr-rank{r}.pkl" in names  # asked with SIGUSR1: the drill's worker catches it
    assert any("SIGUSR1 sent" in n for n in res.notes)
    facts = deadlock.diagnose(traindoc.load(str(tmp_path / "ev"))).facts
    assert facts["outlier_members"] == [1]
    assert "_Trainer.evaluate" in facts["outlier_leaf"]
    assert all(p.alive() for p in (collect_ref(rec, r) for r in ("0", "1")))  # still running


def collect_ref(rec: dict[str, Any], rank: str) -> Any:
    from traindoc.drills.live import ProcRef

    return ProcRef(rec["ranks"][rank]["pid"], rec["ranks"][rank]["start"])


@pytest.mark.drills
@needs_torch
def test_collect_asks_torchs_worker_server_without_a_signal(
        live_drill: Callable[..., dict[str, Any]], tmp_path: Path) -> None:  # noqa: F811
    rec = live_drill("hang", max_runtime_s=180, worker_server=True)
    last = Path(rec["ranks"]["1"]["logs"]["stdout"])
    wait_for(lambda: " iteration        5/" in last.read_text(errors="replace"), 120, "the hang")
    res = collect.collect(tmp_path / "ev", logs=[rec["out"]], system=False)
    names = {p.name for p in res.saved}
    assert {"fr-rank0.json", "fr-rank1.json"} <= names
    assert not any("SIGUSR1 sent" in n for n in res.notes)
    assert not list(Path(rec["out"], "fr").glob("rank?"))  # nobody was signalled to dump
    inc = traindoc.load(str(tmp_path / "ev"))
    assert set(inc.collectives["rank"].dropna()) == {0, 1}
    assert deadlock.diagnose(inc).facts["outlier_members"] == [1]


def test_an_earlier_collection_is_replaced_not_mixed(tmp_path: Path) -> None:
    ev = tmp_path / "ev" / "evidence"
    ev.mkdir(parents=True)
    old = ["py-spy-rank0-pid11.txt", "fr-rank1.pkl", "notes.txt", "trace-node01.out"]
    for name in [*old, "mine.log"]:
        (ev / name).write_text("x")
    res = collect.collect(tmp_path / "ev", pids=[999_999_999], system=False)
    assert not any((ev / n).exists() for n in old[:2] + old[3:])
    assert (ev / "mine.log").read_text() == "x"  # not collect's: kept
    assert any("earlier collection" in n for n in res.notes)


def test_run_fanout_runs_srun_else_pdsh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("srun", "pdsh"):
        (bin_dir / tool).write_text(f"#!/bin/sh\necho {tool} \"$@\" > {tmp_path}/{tool}.args\n"
                                    f"echo 'node01: Process 1: python'\n")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    ev = tmp_path / "ev"
    ev.mkdir()
    cmds = collect.fanout_commands("node[01-02]", tmp_path, "77")
    ran, _ = collect.run_fanout(cmds, ev)
    assert ran == {"slurm": 0}
    assert "--jobid=77" in (tmp_path / "srun.args").read_text()
    ran, notes = collect.run_fanout({"pdsh": cmds["pdsh"]}, ev)
    assert ran == {"pdsh": 0} and (ev / "pdsh-py-spy.txt").read_text().startswith("node01:")
    no_id = collect.fanout_commands("node01", tmp_path, None)
    ran, notes = collect.run_fanout({"slurm": no_id["slurm"]}, ev)
    assert ran == {} and any("no job id" in n for n in notes)


# -- files collect writes never follow a link (issue 31) -----------------------------------------

def test_a_link_planted_in_out_is_never_written_through(tmp_path: Path) -> None:
    ev = tmp_path / "ev" / "evidence"
    ev.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (ev / "notes.txt").symlink_to(victim)
    (ev / "py-spy-rank0-pid11.txt").symlink_to(victim)
    collect.collect(tmp_path / "ev", pids=[999_999_999], system=False)
    assert victim.read_text() == "keep\n"
    assert not (ev / "notes.txt").is_symlink() and (ev / "notes.txt").is_file()
    assert not (ev / "py-spy-rank0-pid11.txt").exists()


def test_an_evidence_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "evidence").symlink_to(elsewhere)
    err = io.StringIO()
    rc = cli.main(["collect", "--pid", "999999999", "-o", str(tmp_path / "ev")], io.StringIO(), err)
    assert rc == 5, err.getvalue()
    assert not list(elsewhere.iterdir())


def test_process_text_is_written_on_one_line(tmp_path: Path) -> None:
    res = collect.CollectResult(tmp_path, tmp_path)
    res.processes = [collect.RankProcess(pid=5, rank=0, start="1", cmdline="python train.py\n* * * * * "
                                         "root sh /tmp/x\x1b]0;title\x07", found_by="--pid")]
    res.notes = ["py-spy said\nline two \x1b[2J"]
    collect._write_notes(res)
    text = (tmp_path / "notes.txt").read_text()
    assert "\n* * * * *" not in text and "\x1b" not in text and "\x07" not in text
    assert "\\n* * * * * root" in text and "line two" in text


def test_a_link_to_a_kernel_interface_is_never_read_for_pids(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    (tmp_path / "kmsg.log").symlink_to("/proc/uptime")  # (/proc/kmsg: a read that never ends)
    (tmp_path / "job.log").write_text("node-1:4242:4300 [0] NCCL INFO Bootstrap\n")
    opened: list[str] = []
    real_open = builtins.open

    def spy(file, *a, **k):  # type: ignore[no-untyped-def]
        opened.append(str(file))
        return real_open(file, *a, **k)

    monkeypatch.setattr(builtins, "open", spy)
    pids = collect.pids_in_logs([tmp_path / "kmsg.log", tmp_path / "job.log"])
    assert not [p for p in opened if "kmsg" in p or "uptime" in p]
    assert 4242 in pids


def test_what_the_logs_name_must_run_as_the_logs_owner(spawn: Callable[..., Any],
                                                        tmp_path: Path) -> None:
    # issue 31: a job's owner prints another user's pid (or plants a pids.json) in its logs
    if os.geteuid() != 0:
        pytest.skip("needs root to start a process as another user")
    sleep = shutil.which("sleep") or "/bin/sleep"
    other = subprocess.Popen([sleep, "60"], env={"RANK": "0"}, user=65534, cwd="/",
                             start_new_session=True)
    try:
        wait_for(lambda: os.stat(f"/proc/{other.pid}").st_uid == 65534, 30, "the other user")
        (tmp_path / "job.log").write_text(f"worker started (pid: {other.pid})\n")
        (tmp_path / "pids.json").write_text(json.dumps({"ranks": {"0": {"pid": other.pid}}}))
        procs, notes = collect.find_processes(logs=[tmp_path])
        assert other.pid not in [p.pid for p in procs]
        assert any(f"pid {other.pid}" in n and "left alone" in n for n in notes), notes
    finally:
        other.kill()
        other.wait()


def test_a_link_to_another_jobs_open_log_makes_no_target(spawn: Callable[..., Any],
                                                         tmp_path: Path) -> None:
    elsewhere = tmp_path / "other-job"
    elsewhere.mkdir()
    with open(elsewhere / "rank5.log", "w") as out:
        holder = spawn(SLEEPER, env={"RANK": "5"}, stdout=out)
    wait_for(lambda: (elsewhere / "rank5.log").read_text().startswith("ready"), 30, "the child")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "job.log").write_text("nothing\n")
    (mine / "theirs.log").symlink_to(elsewhere / "rank5.log")
    procs, _ = collect.find_processes(logs=[mine])
    assert holder.pid not in [p.pid for p in procs]


# One NCCL rank on a CUDA GPU (a world of one: one GPU holds one NCCL rank) that records its
# collectives, then waits as a hung rank would; with SERVER it serves torch's worker server.
NCCL_RANK = (
    "import contextlib, os, time, torch, torch.distributed as dist\n"
    "from torch.distributed.elastic.control_plane import worker_main\n"
    "with worker_main() if os.environ.get('SERVER') else contextlib.nullcontext():\n"
    "    dist.init_process_group('nccl', rank=0, world_size=1, device_id=torch.device('cuda:0'))\n"
    "    t = torch.ones(1024, device='cuda')\n"
    "    for _ in range(5):\n"
    "        dist.all_reduce(t)\n"
    "    torch.cuda.synchronize()\n"
    "    print('ready', flush=True)\n"
    "    time.sleep(120)\n")


@pytest.mark.drills
@needs_torch
@pytest.mark.parametrize("way", ["pipe", "server"])
def test_collect_gets_ncclss_flight_recorder_on_a_cuda_gpu(spawn: Callable[..., Any],
                                                           tmp_path: Path, way: str) -> None:
    """The two ways collect asks a CUDA build for its flight recorder without a signal: NCCL's
    debug-info pipe (TORCH_NCCL_DEBUG_INFO_PIPE_FILE) and the worker server's
    ``dump_nccl_trace_pickle`` handler. Only a CUDA build has either; the CPU wheel skips."""
    from conftest import _cuda_seen
    from test_lab import _free_port

    if not _cuda_seen():
        pytest.skip("NCCL's flight recorder needs a CUDA GPU; torch sees none here")
    env = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(_free_port()), "TORCH_NCCL_TRACE_BUFFER_SIZE": "100",
           "TORCH_FR_DUMP_TEMP_FILE": str(tmp_path / "dump_")}
    if way == "pipe":
        env["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] = str(tmp_path / "pipe_")
    else:
        env["SERVER"] = "1"
        env["TORCH_WORKER_SERVER_SOCKET"] = str(tmp_path / "worker.sock")
    rank = spawn(NCCL_RANK, env=env)
    ready(rank)
    if way == "pipe":  # NCCL's monitor thread makes the pipe once it runs
        wait_for(lambda: (tmp_path / "pipe_0.pipe").exists(), 60, "NCCL's debug-info pipe")
    res = collect.collect(tmp_path / "ev", pids=[rank.pid], system=False)
    saved = [p.name for p in res.saved if p.name.startswith("fr-")]
    assert saved == ["fr-rank0.pkl"], res.notes
    how = "asked through" if way == "pipe" else "handler dump_nccl_trace_pickle"
    assert any(how in n for n in res.notes), res.notes
    assert not any("SIGUSR1 sent" in n for n in res.notes)
    inc = traindoc.load(str(tmp_path / "ev"))
    ops = inc.collectives[inc.collectives["rank"] == 0]
    assert len(ops) == 5 and set(ops["op_type"]) == {"nccl:all_reduce"}, ops
    assert rank.poll() is None  # still running: asked, not killed
