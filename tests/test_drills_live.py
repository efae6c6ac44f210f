"""Live drills: started detached, seen running and logging, stopped with nothing left behind,
and killed by their own time limit when nobody stops them."""

from __future__ import annotations

import importlib.util
import io
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from traindoc import cli
from traindoc.collect import proc_stat
from traindoc.drills import DrillError, live

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="drills need torch (make setup installs torch==2.13.0)")


def recorded_procs(rec: dict[str, Any]) -> list[live.ProcRef]:
    """Every process pids.json names."""
    return [ref for _, ref, _ in live._recorded(rec)]


def running_in_groups(pgids: set[int]) -> list[int]:
    """Pids of processes (not zombies) whose process group is one of ``pgids``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = proc_stat(int(entry.name))
            if fields and int(fields[2]) in pgids and fields[0] not in ("Z", "X"):
                found.append(int(entry.name))
    return found


def assert_nothing_left(rec: dict[str, Any], wait_s: float = 10.0) -> None:
    """No recorded process alive (start times checked) and none in their process groups."""
    pgids = {int(rec["pgid"])} | {int(r["pgid"]) for r in rec["ranks"].values() if r.get("pgid")}
    limit = time.monotonic() + wait_s
    while True:
        alive = [r.pid for r in recorded_procs(rec) if r.alive()]
        grouped = running_in_groups(pgids)
        if not alive and not grouped:
            return
        if time.monotonic() > limit:
            raise AssertionError(f"left running: pids {alive}, in groups {grouped}")
        time.sleep(0.2)


@pytest.fixture
def live_drill(tmp_path: Path) -> Iterator[Callable[..., dict[str, Any]]]:
    """Start live drills; whatever happens in the test, each is stopped and checked gone."""
    started: list[Path] = []

    def start(name: str, **kw: Any) -> dict[str, Any]:
        out = tmp_path / name
        started.append(out)
        return live.start(name, out, **kw)

    yield start
    for out in started:
        if (out / live.PIDS_FILE).exists():
            live.stop(out)
            assert_nothing_left(live.read_pids(out))


def _log_sizes(rec: dict[str, Any]) -> int:
    paths = [Path(rec["logs"]["torchrun"])] + [
        Path(p) for r in rec["logs"]["ranks"].values() for p in r.values()]
    return sum(p.stat().st_size for p in paths if p.exists())


def wait_for(pred: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``pred`` until true, else fail naming ``what``."""
    limit = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > limit:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.mark.drills
@needs_torch
@pytest.mark.parametrize("name", live.LIVE_DRILLS)
def test_live_drill_runs_logs_and_stops(name: str, live_drill: Callable[..., dict[str, Any]]
                                        ) -> None:
    rec = live_drill(name, max_runtime_s=180)
    out = Path(rec["out"])
    assert rec["drill"] == name and set(rec["ranks"]) == {"0", "1"}
    assert rec["launcher"]["pid"] == rec["pgid"] and rec["deadline_epoch"] > time.time()
    assert all(r.alive() for r in recorded_procs(rec))
    # the offline drill's files, in the same places
    assert (out / "torchrun.log").exists() and (out / "drill.json").exists()
    assert json.loads((out / "drill.json").read_text())["run"]["live"] is True
    last = Path(rec["ranks"]["1"]["logs"]["stdout"])
    wait_for(lambda: " iteration " in last.read_text(errors="replace"), 120, "a first step")
    size = _log_sizes(rec)
    wait_for(lambda: _log_sizes(rec) > size, 20, "the logs to grow")
    assert " iteration " in (out / "torchrun.log").read_text(errors="replace")  # tee'd as it goes
    res = live.stop(out)
    assert not res.left and {i["rank"] for i in res.stopped if i["role"] == "rank"} <= {0, 1}
    assert_nothing_left(rec)
    assert live.read_pids(out)["end_reason"]
    again = live.stop(out)
    assert not again.stopped and again.notes


@pytest.mark.drills
@needs_torch
def test_live_drill_killed_by_its_time_limit(live_drill: Callable[..., dict[str, Any]]) -> None:
    t0 = time.monotonic()
    rec = live_drill("hang", max_runtime_s=20)
    out = Path(rec["out"])
    wait_for(lambda: bool(live.read_pids(out).get("ended_at")), 60, "the time limit")
    assert_nothing_left(rec)
    assert "max runtime" in live.read_pids(out)["end_reason"]
    assert time.monotonic() - t0 < 60


def test_live_refuses_other_drills(tmp_path: Path) -> None:
    with pytest.raises(DrillError, match="no live mode"):
        live.start("timeout", tmp_path / "x")
    err = io.StringIO()
    assert cli.main(["drill", "crash", "--live", "-o", str(tmp_path / "y")],
                    io.StringIO(), err) == 2
    assert "no live mode" in err.getvalue()
    assert not (tmp_path / "y").exists()


def test_stop_without_a_live_drill(tmp_path: Path) -> None:
    err = io.StringIO()
    assert cli.main(["drill", "--stop", str(tmp_path)], io.StringIO(), err) == 2
    assert "pids.json" in err.getvalue()


def test_stop_never_signals_a_recycled_pid(tmp_path: Path) -> None:
    """A pid whose start time differs from the recorded one is another process: left alone."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             start_new_session=True)
    try:
        ref = live.proc_ref(child.pid)
        assert ref is not None
        rec = {"drill": "hang", "supervisor": {"pid": child.pid, "start": str(int(ref.start) - 1)},
               "launcher": None, "pgid": child.pid, "ranks": {}}
        (tmp_path / live.PIDS_FILE).write_text(json.dumps(rec))
        res = live.stop(tmp_path)
        assert not res.stopped and child.poll() is None
    finally:
        child.kill()
        child.wait()
