"""``traindoc watch``: following growing, appearing, rotated and truncated files; the stall,
error, throughput and loss-spike alerts; alert.json, --notify, --exit-on-alert; no alert on a
healthy run. A background thread plays the job, writing real line formats (the Megatron lines
of data/throughput/drill_slow_rank, a torch 2.4 NCCL watchdog line from
tests/data/wordings/watchdog_timeout.txt) into tmp_path. No torch, except the end-to-end
tests on the live drills (marker ``drills``), which print the detection latencies the README
quotes."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from traindoc import cli
from traindoc.schema import sources
from traindoc.watch import (
    EXIT_ALERT,
    EXIT_OK,
    Follower,
    Watcher,
    WatchOptions,
    alive,
    notify,
    pids_in,
    start_time,
    starts_in,
)

# torchrun --log-dir layout: <run id>/attempt_0/<local rank>/stdout.log
RANK_LOG = "logs/eeda3006_hv9lgs8h/attempt_0/{rank}/stdout.log"
WATCHDOG = ("[rank1]:[E1003 18:37:01.838048403 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) "
            "Rank 1] Process group watchdog thread terminated with exception: [Rank 1] Watchdog "
            "caught collective operation timeout: WorkNCCL(SeqNum=6463, OpType=ALLREDUCE, "
            "NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800017 milliseconds before "
            "timing out.")
CUDA_ERROR = ["[default3]:terminate called after throwing an instance of 'c10::CUDAError'",
              "[default3]:  what():  CUDA error: an illegal memory access was encountered"]


def megatron(it: int, ms: float = 100.0, loss: float | None = None, total: int = 1000,
             grad_norm: float = 1.5) -> str:
    """One Megatron iteration line, as the drills' logs hold it."""
    if loss is None:
        loss = 2.8 * math.exp(-it / 400) + 0.01 * math.sin(it * 1.7)
    sps = 8 / (ms / 1000.0)
    return (f" iteration {it:8d}/{total:8d} | consumed samples: {it * 8:10d} |"
            f" elapsed time per iteration (ms): {ms:.1f} | learning rate: 1.000E-02 |"
            f" global batch size:     8 | lm loss: {loss:.6E} | grad norm: {grad_norm:.3f} |"
            f" number of skipped iterations:   0 | number of nan iterations:   0 |"
            f" samples per second: {sps:.3f} | TFLOPs: 0.00 |")


def jitter(it: int) -> float:
    """A deterministic few-percent wobble of step times."""
    return 1.0 + 0.03 * math.sin(it * 2.3)


def append(path: Path, *lines: str, end: str = "\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + end)
        fh.flush()


class Job:
    """A background thread that plays a training job: ``script`` gets ``write`` and ``stop``
    (an Event) and appends lines with its own pacing."""

    def __init__(self, script: Callable[[Callable[..., None], threading.Event], None]) -> None:
        self.stop = threading.Event()
        self.times: list[float] = []  # when each write finished (wall clock)

        def write(path: Path, *lines: str, end: str = "\n") -> None:
            append(path, *lines, end=end)
            self.times.append(time.time())

        self.thread = threading.Thread(target=script, args=(write, self.stop), daemon=True)

    def __enter__(self) -> Job:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()


def watch(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["watch", *args], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def alert(out: Path) -> dict[str, Any]:
    return json.loads((out / "alert.json").read_text())


def line_of(path: Path, text: str) -> int:
    """The 1-based number of the first line of ``path`` holding ``text``."""
    return next(i for i, x in enumerate(path.read_text().splitlines(), 1) if text in x)


# -- following ---------------------------------------------------------------------------------

def test_follower_reads_only_new_whole_lines(tmp_path: Path) -> None:
    logs = tmp_path / "job"
    f0 = logs / RANK_LOG.format(rank=0)
    append(f0, megatron(1), megatron(2))
    append(f0, megatron(3)[:40], end="")  # a partial last line
    fol = Follower([str(logs)])
    got = fol.poll()["iterations"]
    assert list(got["iteration"]) == [1, 2]
    assert list(sources(got)) == [f"{f0}:1", f"{f0}:2"]
    assert list(got["rank"]) == [0, 0]  # from the torchrun --log-dir path
    append(f0, megatron(3)[40:], megatron(4))  # the rest of line 3, then line 4
    got = fol.poll()["iterations"]
    assert list(got["iteration"]) == [3, 4]
    assert list(sources(got)) == [f"{f0}:3", f"{f0}:4"]
    assert got["line"].iloc[0].strip() == megatron(3).strip()  # the whole line, once
    assert not len(fol.poll()["iterations"])  # nothing new: nothing read again

    # a file that appears later (another rank's), and a glob would find it too
    f1 = logs / RANK_LOG.format(rank=1)
    append(f1, megatron(4))
    got = fol.poll()["iterations"]
    assert list(got["iteration"]) == [4] and list(got["rank"]) == [1]
    assert any(n.startswith(f"following {f1}") for n in fol.notes)


def test_follower_rereads_truncated_and_rotated_files(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    append(log, megatron(1), megatron(2), megatron(3))
    fol = Follower([str(log)])
    assert len(fol.poll()["iterations"]) == 3
    log.write_text(megatron(10) + "\n")  # truncated (copytruncate) and written again
    got = fol.poll()["iterations"]
    assert list(got["iteration"]) == [10] and list(sources(got)) == [f"{log}:1"]
    assert any("truncated" in n for n in fol.notes)
    log.rename(tmp_path / "train.log.1")  # rotated: a new file under the old name
    append(log, megatron(11), megatron(12))
    got = fol.poll()["iterations"]
    assert list(got["iteration"]) == [11, 12] and list(sources(got)) == [f"{log}:1", f"{log}:2"]
    assert any("rotated" in n for n in fol.notes)


def test_follower_uses_the_loads_parsers_for_failure_lines(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    append(log, WATCHDOG, *CUDA_ERROR)
    fol = Follower([str(log)])
    new = fol.poll()
    assert list(new["collectives"]["state"]) == ["timed_out"]
    assert list(new["collectives"]["source"]) == [f"{log}:1"]
    # the c10 exception block stays open for its frames until a poll brings nothing new
    assert "cuda_error" in set(new["errors"]["kind"]) | set(fol.poll()["errors"]["kind"])


def test_line_times_stay_between_reads_whatever_the_files_clock(tmp_path: Path) -> None:
    """A file server whose clock is behind (an old mtime) or ahead cannot date new lines
    before the read that did not see them, nor after now."""
    import os

    log = tmp_path / "train.log"
    append(log, megatron(1))
    fol = Follower([str(log)])
    fol.poll()
    first = fol.tails[str(log)].read_at
    assert first is not None
    append(log, megatron(2))
    os.utime(log, (1_000_000, 1_000_000))  # 1970: a clock far behind
    fol.poll()
    assert first <= fol.times[str(log)] <= time.time()
    append(log, megatron(3))
    os.utime(log, (time.time() + 3600,) * 2)  # an hour ahead
    fol.poll()
    assert fol.times[str(log)] <= time.time()


def test_glob_follows_files_that_match_later(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    said: list[str] = []
    w = Watcher([str(tmp_path / "slurm-*.out")], out, WatchOptions(), say=said.append)
    assert w.poll_once() == [] and not len(w.tables.get("iterations", []))
    assert said == ["traindoc watch: no file under LOGS yet; waiting for files to appear"]
    append(tmp_path / "slurm-42.out", megatron(7))
    w.poll_once()
    assert list(w.tables["iterations"]["iteration"]) == [7]
    for r in range(20):  # many files at once are counted, not listed
        append(tmp_path / f"slurm-{100 + r}.out", megatron(8))
    w.poll_once()
    assert said[-1].startswith("traindoc watch: following 20 new files (")


def test_pids_json_of_a_live_drill() -> None:
    rec = {"supervisor": {"pid": 10, "start": "1"}, "launcher": {"pid": 11, "start": "2"},
           "pgid": 11, "ranks": {"0": {"pid": 12, "start": "3", "pgid": 11},
                                 "1": {"pid": 13, "start": "4", "pgid": 11}}}
    assert pids_in(rec) == [12, 13]
    assert pids_in({"pids": [5, 6]}) == [5, 6]
    assert starts_in(rec) == {10: "1", 11: "2", 12: "3", 13: "4"}


def test_a_pid_given_to_another_process_is_no_sign_of_life() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        start = start_time(child.pid)
        assert start is not None
        assert alive(child.pid) and alive(child.pid, start)
        assert not alive(child.pid, str(int(start) + 1))  # the same pid, started later
    finally:
        child.kill()
        child.wait()
    assert not alive(child.pid, start) and start_time(child.pid) is None


# -- alerts ------------------------------------------------------------------------------------

def _steady(f: Path, n: int, step_s: float) -> Callable[..., None]:
    def script(write: Callable[..., None], stop: threading.Event) -> None:
        for i in range(1, n + 1):
            if stop.is_set():
                return
            write(f, megatron(i, ms=1000 * step_s))
            time.sleep(step_s)
    return script


def test_stall_alert_after_the_threshold(tmp_path: Path) -> None:
    logs, out = tmp_path / "job", tmp_path / "out"
    f0 = logs / RANK_LOG.format(rank=0)
    # min_stall well above the writer's pace: on a loaded CI machine a 0.1 s sleep can stretch
    # past 0.5 s, and the alert then fires, rightly, on step 11 (CI on 7062c38 did)
    step, interval, min_stall = 0.1, 0.1, 1.5
    with Job(_steady(f0, 12, step)) as job:
        code, printed, err = watch([str(logs), "-o", str(out), "--interval", str(interval),
                                    "--min-stall", str(min_stall), "--exit-on-alert",
                                    "--no-runbook", "--max-runtime", "30"])
    assert code == EXIT_ALERT, (printed, err)
    a = alert(out)
    assert a["class"] == "deadlock"
    assert "no progress" in a["reason"] and "a hang is suspected" in a["reason"]
    # evidence: file:line and the line as the reader keeps it (prefixes and edges stripped)
    assert a["evidence"] == [f"{f0}:12: {megatron(12, ms=100).strip()}"]
    assert a["details"]["ranks"]["0"]["step"] == 12
    threshold = a["details"]["stall_threshold_s"]
    assert threshold == pytest.approx(max(5 * step, min_stall), rel=0.2)
    # detected after the threshold, within a few polls of it (generous: 2 CPUs are shared)
    since = a["seconds_since_progress"]
    assert threshold <= since <= threshold + 3 * interval + 2.0
    last_write = job.times[-1]
    detected = _epoch(a["detected_at"])
    assert detected - last_write >= threshold - 0.05  # (mtime has coarse resolution)
    assert sum(1 for x in printed.splitlines() if x.startswith("ALERT deadlock")) == 1
    assert [json.loads(x)["class"] for x in (out / "alerts.jsonl").read_text().splitlines()] \
        == ["deadlock"]


def _epoch(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


def test_startup_stall_is_a_hang_before_the_first_step(tmp_path: Path) -> None:
    """No progress line at all: off by default; with --startup-stall, a deadlock alert once
    that long has passed while the job lives (here this test's own process)."""
    import os

    logs, out = tmp_path / "job", tmp_path / "out"
    append(logs / "train.log", "NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>", "init ...")
    code, printed, _ = watch([str(logs), "-o", str(tmp_path / "quiet"), "--interval", "0.1",
                              "--min-stall", "0.2", "--no-runbook", "--max-runtime", "1.5",
                              "--pid", str(os.getpid())])
    assert code == EXIT_OK and "ALERT" not in printed  # (default: no start-up limit)
    code, printed, _ = watch([str(logs), "-o", str(out), "--interval", "0.1", "--min-stall",
                              "0.2", "--startup-stall", "1", "--no-runbook", "--exit-on-alert",
                              "--max-runtime", "20", "--pid", str(os.getpid())])
    assert code == EXIT_ALERT, printed
    a = alert(out)
    assert a["class"] == "deadlock" and "before the first step" in a["reason"]
    assert a["details"]["startup_stall_s"] == 1


def test_no_stall_alert_when_the_job_processes_ended(tmp_path: Path) -> None:
    logs, out = tmp_path / "job", tmp_path / "out"
    append(logs / "train.log", *(megatron(i) for i in range(1, 6)))
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = int(done.stdout)
    code, printed, _ = watch([str(logs), "-o", str(out), "--interval", "0.1", "--min-stall",
                              "0.2", "--pid", str(dead), "--no-runbook", "--max-runtime", "10"])
    assert code == EXIT_OK, printed
    assert "processes (--pid) ended" in printed and "ALERT" not in printed
    assert not (out / "alert.json").exists()


def test_a_crash_written_as_the_job_ends_is_still_raised(tmp_path: Path) -> None:
    logs, out = tmp_path / "job", tmp_path / "out"
    append(logs / "train.log", *(megatron(i) for i in range(1, 6)), *CUDA_ERROR)
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    code, printed, _ = watch([str(logs), "-o", str(out), "--interval", "0.1", "--pid",
                              done.stdout.strip(), "--no-runbook", "--max-runtime", "10"])
    assert code == EXIT_ALERT, printed
    assert alert(out)["class"] == "gpu_crash" and "ALERT gpu_crash" in printed


def test_stall_needs_a_live_process_from_pids_json(tmp_path: Path) -> None:
    import os

    logs, out = tmp_path / "job", tmp_path / "out"
    append(logs / "train.log", *(megatron(i) for i in range(1, 6)))
    (logs / "pids.json").write_text(json.dumps({"ranks": {"0": {"pid": os.getpid()}}}))
    code, printed, _ = watch([str(logs), "-o", str(out), "--interval", "0.1", "--min-stall",
                              "0.3", "--exit-on-alert", "--no-runbook", "--max-runtime", "10"])
    assert code == EXIT_ALERT, printed
    a = alert(out)
    assert a["class"] == "deadlock" and a["details"]["pids"] == [os.getpid()]
    assert "pids.json" in a["reason"]


def test_error_lines_alert_at_once_and_watching_goes_on(tmp_path: Path) -> None:
    logs, out = tmp_path / "job", tmp_path / "out"
    f1 = logs / RANK_LOG.format(rank=1)

    # The job's process (--pid) ends once its last line is written, and the watch ends after
    # reading that: no wall-clock budget (it was --max-runtime 3 against a 1.3 s script) for a
    # loaded machine to outrun. --max-runtime only stops a watch that never ends.
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])

    def script(write: Callable[..., None], stop: threading.Event) -> None:
        try:
            for i in range(1, 6):
                write(f1, megatron(i))
                time.sleep(0.05)
            write(f1, WATCHDOG)
            # a file that appears later: once the first alert is out (waited for, not slept)
            limit = time.monotonic() + 60
            while not (out / "alerts.jsonl").exists() and time.monotonic() < limit:
                if stop.wait(0.05):
                    return
            write(logs / "node3.log", *CUDA_ERROR)
        finally:
            proc.kill()
            proc.wait()

    notified = tmp_path / "notified.txt"
    hook = tmp_path / "hook.py"
    hook.write_text("import sys\nopen(sys.argv[1], 'a').write(sys.argv[-1] + '\\n')\n")
    with Job(script):
        code, printed, err = watch([str(logs), "-o", str(out), "--interval", "0.1",
                                    "--no-runbook", "--max-runtime", "120", "--pid",
                                    str(proc.pid),
                                    "--notify", f"{sys.executable} {hook} {notified}"])
    assert code == EXIT_ALERT, (printed, err)
    assert "processes (--pid) ended" in printed, printed  # not the --max-runtime
    seen = [json.loads(x) for x in (out / "alerts.jsonl").read_text().splitlines()]
    assert [a["class"] for a in seen] == ["timeout", "gpu_crash"]
    assert seen[0]["evidence"][0] == f"{f1}:6: {WATCHDOG.removeprefix('[rank1]:')}"
    assert "rank 1" in seen[0]["reason"] and "ALLREDUCE" in seen[0]["reason"]
    n3 = logs / "node3.log"
    assert any(e.startswith(f"{n3}:2: ") and "CUDA error" in e for e in seen[1]["evidence"])
    assert alert(out)["class"] == "gpu_crash"  # alert.json: the latest
    assert notified.read_text().splitlines() == [str(out / "alert.json")] * 2
    assert [x.split(":")[0] for x in printed.splitlines() if x.startswith("ALERT")] == [
        "ALERT timeout", "ALERT gpu_crash"]


def _poll_until(w: Watcher, cls: str, limit_s: float = 20.0) -> Any:
    end = time.time() + limit_s
    while time.time() < end:
        got = w.poll_once()
        if got:
            return got
    raise AssertionError(f"no {cls} alert")


def test_throughput_drop_alerts_once(tmp_path: Path) -> None:
    logs, out = tmp_path / "job", tmp_path / "out"
    out.mkdir()
    f1 = logs / RANK_LOG.format(rank=1)
    said: list[str] = []
    w = Watcher([str(logs)], out, WatchOptions(runbooks=False), say=said.append)
    append(f1, *(megatron(i, ms=100 * jitter(i)) for i in range(1, 31)))
    assert w.poll_once() == []  # healthy so far
    append(f1, *(megatron(i, ms=300 * jitter(i)) for i in range(31, 37)))
    (a,) = w.poll_once()
    assert a.cls == "throughput"
    assert a.details["change_iteration"] == 31 and a.details["drop_pct"] > 50
    assert a.evidence[0] == f"{f1}:31: {megatron(31, ms=300 * jitter(31)).strip()}"
    assert alert(out)["class"] == "throughput"
    append(f1, *(megatron(i, ms=300 * jitter(i)) for i in range(37, 45)))
    assert w.poll_once() == []  # the same drop: no second alert


def test_loss_spike_and_nan_alert(tmp_path: Path) -> None:
    logs, out = tmp_path / "job", tmp_path / "out"
    out.mkdir()
    f0 = logs / RANK_LOG.format(rank=0)
    w = Watcher([str(logs)], out, WatchOptions(runbooks=False))
    append(f0, *(megatron(i, ms=100 * jitter(i)) for i in range(1, 41)))
    assert w.poll_once() == []
    append(f0, megatron(41, loss=25.0, grad_norm=80.0))
    (a,) = w.poll_once()
    assert a.cls == "loss_spike" and a.details["spikes"][0]["start_iteration"] == 41
    assert f"{f0}:41: {megatron(41, loss=25.0, grad_norm=80.0).strip()}" in a.evidence
    append(f0, *(megatron(i, ms=100 * jitter(i)) for i in range(42, 50)))
    assert w.poll_once() == []  # recovered: the same spike is not told again
    nan = megatron(50).replace("lm loss: ", "lm loss: nan | was ").replace(
        "grad norm: 1.500", "grad norm: nan")
    append(f0, nan)
    (b,) = w.poll_once()
    assert b.cls == "loss_spike" and b.details["nan_iterations"] == [50], b.reason


def _healthy_run(tmp_path: Path) -> str | None:
    """One healthy run followed live (see below): None when nothing was raised; when a stall
    was raised, why the run was not healthy after all (the writer itself wrote nothing for the
    threshold: this process starved on a loaded machine). Any other alert fails."""
    logs, out = tmp_path / "job", tmp_path / "out"
    f0, f1 = logs / RANK_LOG.format(rank=0), logs / RANK_LOG.format(rank=1)
    out.mkdir(parents=True)

    def script(write: Callable[..., None], stop: threading.Event) -> None:
        for i in range(1, 121):
            for f in (f0, f1):
                write(f, megatron(i, ms=20 * jitter(i + f.parent.name.__len__())))
            time.sleep(0.02)

    said: list[str] = []
    w = Watcher([str(logs)], out, WatchOptions(interval=0.1, min_stall=2.0, runbooks=False),
                say=said.append)
    with Job(script) as job:
        raised: list[Any] = []
        while job.thread.is_alive() and not raised:
            raised = w.poll_once()
            time.sleep(0.1)
    raised = raised or w.poll_once()
    if raised:
        (a,) = raised
        assert a.cls == "deadlock", (a, said)
        written = max(t for t in job.times if t <= a.detected_at)
        # a stall is right only when the writer's own record shows the threshold's silence
        assert a.detected_at - written >= w.stall_threshold() - 0.05, (a, said)
        return f"the writer wrote nothing for {a.detected_at - written:.1f} s"
    assert w.progress.ranks[0].step == 120 and w.progress.ranks[1].step == 120
    assert w.progress.step_time() == pytest.approx(0.02, rel=0.1)
    assert not (out / "alert.json").exists()
    return None


def test_a_healthy_run_raises_nothing(tmp_path: Path) -> None:
    """The negative control: a job that makes steady progress with noisy steps and a
    falling, noisy loss, followed live, under every check. Under CI load the writer thread can
    starve past the 2 s stall threshold (it did, by 2.4 s): such a run was not healthy, the
    stall it raised was right, and it is played again (three runs at most)."""
    starved = []
    for attempt in range(3):
        why = _healthy_run(tmp_path / f"run{attempt}")
        if why is None:
            return
        starved.append(why)
    raise AssertionError(f"no healthy run in three: {starved}")


def test_runbook_and_triage_chosen_per_alert(tmp_path: Path) -> None:
    logs, out = tmp_path / "job", tmp_path / "out"
    out.mkdir()
    ran: list[tuple[str, list[str], Path]] = []

    def runner(name: str, paths: list[str], where: Path) -> dict[str, Any]:
        ran.append((name, paths, where))
        return {"summary": str(where / "summary.json"), "verdict": "v", "error": None}

    def collector(paths: list[str], pids: list[int], where: Path) -> tuple[list[str], list[str]]:
        (where / "evidence").mkdir(exist_ok=True)
        return [str(where / "evidence" / "py-spy-rank1-pid7.txt")], ["a note"]

    w = Watcher([str(logs)], out, WatchOptions(collect=True), runner=runner, collector=collector)
    append(logs / "a.log", WATCHDOG)
    w.poll_once()
    append(logs / "b.log", *CUDA_ERROR)
    w.poll_once()
    w.poll_once()  # (the c10 exception block closes on a poll with nothing new)
    ev = str(out / "evidence")  # what --collect took is read with the logs
    assert [(n, p, d.name) for n, p, d in ran] == [
        ("timeout", [str(logs), ev], "timeout"), ("triage", [str(logs), ev], "triage")]
    a = alert(out)
    assert a["runbook"]["name"] == "triage" and a["classes"] == ["gpu_crash"]
    assert a["collected"] == [f"{ev}/py-spy-rank1-pid7.txt"]
    assert a["details"]["collect_notes"] == ["a note"]


def test_notify_errors_are_reported_not_fatal(tmp_path: Path) -> None:
    p = tmp_path / "alert.json"
    p.write_text("{}")
    assert notify(f"{sys.executable} -c 'import sys; sys.exit(3)'", p) == \
        f"{sys.executable} exited with 3"
    assert "no-such-command-xyz" in (notify("no-such-command-xyz --flag", p) or "")
    assert notify("", p) == "the command is empty"
    assert notify(f"{sys.executable} -c pass", p) is None


def test_usage_errors(tmp_path: Path) -> None:
    logs = tmp_path / "job"
    logs.mkdir()
    code, _, err = watch([str(logs), "-o", str(logs / "out")])
    assert code == 2 and "inside the watched folder" in err
    assert watch([str(logs), "-o", ""])[0] == 2
    assert watch([str(logs), "--interval", "0"])[0] == 2
    assert watch([str(logs), "--stall-factor", "nan"])[0] == 2


@pytest.fixture
def no_threads_left() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    assert set(threading.enumerate()) <= before


@pytest.mark.notebooks
def test_the_matching_runbook_runs_on_the_logs_so_far(tmp_path: Path,
                                                      no_threads_left: None) -> None:
    logs, out = tmp_path / "job", tmp_path / "out"
    append(logs / RANK_LOG.format(rank=1), *(megatron(i) for i in range(1, 6)), WATCHDOG)
    code, printed, err = watch([str(logs), "-o", str(out), "--interval", "0.1",
                                "--exit-on-alert", "--max-runtime", "120"])
    assert code == EXIT_ALERT, (printed, err)
    a = alert(out)
    assert a["class"] == "timeout" and a["runbook"]["error"] is None, a["runbook"]
    summary = json.loads((out / "timeout" / "summary.json").read_text())
    assert summary["facts"]["timed_out_ranks"] == [1]
    assert "timeout runbook" in printed


# -- end to end on the live drills ---------------------------------------------------------------

needs_torch = pytest.mark.skipif(
    __import__("importlib").util.find_spec("torch") is None,
    reason="drills need torch (make setup installs torch==2.13.0)")
E2E_INTERVAL = 0.5


@pytest.fixture
def live_drill(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Start a live drill; whatever happens in the test, it is stopped and nothing is left."""
    started: list[Path] = []

    def start(name: str) -> Path:
        d = tmp_path / name
        started.append(d)
        code = cli.main(["drill", name, "--live", "-o", str(d)], stdout=io.StringIO(),
                        stderr=io.StringIO())
        assert code == 0
        return d

    yield start
    for d in started:
        rec = json.loads((d / "pids.json").read_text())
        out = io.StringIO()
        assert cli.main(["drill", "--stop", str(d)], stdout=out, stderr=io.StringIO()) == 0, \
            out.getvalue()
        pids = [rec["supervisor"]["pid"], rec["launcher"]["pid"],
                *(r["pid"] for r in rec["ranks"].values())]
        from traindoc.watch import alive

        assert not [p for p in pids if alive(p)], "left running"


def _watch_live(d: Path, out: Path) -> dict[str, Any]:
    code, printed, err = watch([str(d), "-o", str(out), "--collect", "--exit-on-alert",
                                "--min-stall", "1", "--interval", str(E2E_INTERVAL),
                                "--max-runtime", "240"])
    assert code == EXIT_ALERT, (printed, err)
    a = alert(out)
    print(f"{d.name}: {a['class']} {a['seconds_since_progress']} s after the last progress "
          f"line, {a['details'].get('seconds_since_onset')} s after the fault's first line; "
          f"{a['reason']}")
    return a


def _pg_timeout(d: Path) -> float:
    cmd = json.loads((d / "drill.json").read_text())["run"]["command"]
    return float(next(x for x in cmd if x.startswith("--pg-timeout=")).split("=", 1)[1])


@pytest.mark.drills
@needs_torch
def test_live_hang_is_a_stall_long_before_the_watchdog(live_drill: Callable[[str], Path],
                                                       tmp_path: Path) -> None:
    d = live_drill("hang")
    a = _watch_live(d, tmp_path / "watch")
    assert a["class"] == "deadlock"
    threshold = a["details"]["stall_threshold_s"]
    assert a["details"]["step_time_s"] == pytest.approx(1.0, rel=0.3)
    # within stall_factor x step time + 2 polls of the last progress line (+4 s: on 2 CPUs
    # shared with a parallel suite a poll can come seconds late; the watchdog is far later)
    assert threshold <= a["seconds_since_progress"] <= threshold + 2 * E2E_INTERVAL + 4.0
    assert a["seconds_since_progress"] < _pg_timeout(d) / 50
    summary = json.loads((tmp_path / "watch" / "deadlock" / "summary.json").read_text())
    truth = json.loads((d / "drill.json").read_text())["facts"]
    assert summary["facts"]["outlier_members"] == truth["outlier_members"], summary["verdict"]
    assert "evaluate" in (summary["facts"]["outlier_leaf"] or ""), summary["facts"]
    names = {Path(f).name.split("-pid")[0] for f in a["collected"]}
    assert {"py-spy-rank0", "py-spy-rank1"} <= names, a["collected"]  # a dump of every rank
    rec = json.loads((d / "pids.json").read_text())
    from traindoc.watch import alive

    assert all(alive(r["pid"]) for r in rec["ranks"].values())  # all while the job lives


@pytest.mark.drills
@needs_torch
@pytest.mark.parametrize("name", ["slow_rank", "loss_spike"])
def test_live_metric_drills_alert_their_class(name: str, live_drill: Callable[[str], Path],
                                              tmp_path: Path) -> None:
    d = live_drill(name)
    a = _watch_live(d, tmp_path / "watch")
    truth = json.loads((d / "drill.json").read_text())
    assert a["class"] == truth["class"]
    summary = json.loads((tmp_path / "watch" / truth["class"] / "summary.json").read_text())
    k = truth["run"]["fault_step"]
    if name == "slow_rank":  # (the runbook's verdict in the message: a disagreement says why)
        assert a["details"]["change_iteration"] == k == summary["facts"]["change_iteration"], \
            (a["reason"], summary["verdict"], summary["findings"][:3])
    else:
        assert a["details"]["spikes"][0]["start_iteration"] == k
        assert summary["facts"]["spikes"][0]["start_iteration"] == k


# -- an alert that survives (issue 31) ---------------------------------------------------------

def test_a_full_disk_never_holds_the_alert_back(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from traindoc import watch as watch_mod

    def full(*_a: Any, **_k: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(watch_mod, "write_json_atomic", full)
    monkeypatch.setattr(watch_mod, "_append_line", full)
    logs, out = tmp_path / "job", tmp_path / "out"
    out.mkdir()
    notified = tmp_path / "notified.txt"
    hook = tmp_path / "hook.py"
    hook.write_text("import sys\nopen(sys.argv[1], 'a').write('paged\\n')\n")
    order: list[str] = []

    def collector(paths: list[str], pids: list[int], where: Path) -> tuple[list[str], list[str]]:
        order.append("collect:" + ("paged" if notified.exists() else "not paged yet"))
        return [], []

    said: list[str] = []
    w = Watcher([str(logs)], out, WatchOptions(collect=True, runbooks=False,
                                               notify=f"{sys.executable} {hook} {notified}"),
                say=said.append, collector=collector)
    append(logs / "a.log", WATCHDOG)
    got = w.poll_once()
    assert got
    assert any(s.startswith("ALERT timeout") for s in said), said
    assert notified.read_text() == "paged\n"
    assert order == ["collect:paged"]  # the page went out before evidence was taken
    assert any("could not write alert.json" in s and "No space left" in s for s in said), said
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_a_full_disk_alert_ends_the_watch_with_the_alert_code(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from traindoc import report

    real = report.write_atomic

    def full(path: Any, content: Any) -> Any:
        if str(path).endswith("alert.json"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, content)

    monkeypatch.setattr("traindoc.watch.write_atomic", full)
    logs, out = tmp_path / "job", tmp_path / "out"
    append(logs / RANK_LOG.format(rank=1), *(megatron(i) for i in range(1, 6)), WATCHDOG)
    code, printed, err = watch([str(logs), "-o", str(out), "--interval", "0.1",
                                "--no-runbook", "--exit-on-alert", "--max-runtime", "20"])
    assert code == EXIT_ALERT, (printed, err)
    assert "ALERT timeout" in printed and "Traceback" not in err
    assert "could not write alert.json" in printed + err


def test_notify_waits_for_the_command_not_its_children(tmp_path: Path) -> None:
    p = tmp_path / "alert.json"
    p.write_text("{}")
    # the command returns at once and leaves a child holding stdout/stderr for 30 s
    code = ("import subprocess, sys; subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(30)']); print('sent')")
    t0 = time.monotonic()
    assert notify(f"{sys.executable} -c \"{code}\"", p) is None
    assert time.monotonic() - t0 < 15


def test_a_stale_pids_json_never_ends_the_watch_while_the_logs_grow(tmp_path: Path) -> None:
    # issue 31: an earlier run's pids.json (its pids gone) ended the watch with 'no alert'
    logs, out = tmp_path / "job", tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    append(logs / "pids.json", json.dumps({"ranks": {"0": {"pid": int(done.stdout)}}}))
    f0 = logs / RANK_LOG.format(rank=0)
    with Job(_steady(f0, 12, 0.1)):
        code, printed, err = watch([str(logs), "-o", str(out), "--interval", "0.1",
                                    "--min-stall", "0.5", "--exit-on-alert", "--no-runbook",
                                    "--max-runtime", "30"])
    assert "ended" not in printed, printed
    assert code == EXIT_ALERT, (printed, err)
    assert alert(out)["class"] == "deadlock"
    assert "names no live process" in printed
