"""Live drills: start a drill's job detached, leave it running, stop it later.

``start(name, out)`` launches a small supervisor process in its own session; the supervisor
starts torchrun (the same job the offline drill runs, with enough steps to keep going at about
one step a second), records every pid in ``out/pids.json``, and kills the whole tree when the
drill's time limit passes or torchrun ends. ``start`` returns once every rank is up. ``stop(out)``
kills what ``pids.json`` names, checking each pid's start time in ``/proc`` so that a recycled
pid is never signalled. The bundle files are the offline drill's (``torchrun.log``, ``logs/``,
``fr/``, ``drill.json``); flight-recorder dumps asked for with SIGUSR1 land in
``fr/rank<N>`` (torch's ``TORCH_FR_DUMP_TEMP_FILE`` convention, prefix ``fr/rank``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..collect import proc_stat
from . import worker
from .runner import (
    FR_BUFFER_SIZE,
    SPECS,
    DrillError,
    DrillOutputError,
    _clear_bundle,
    _facts,
    _find_python,
    job_command,
)

LIVE_DRILLS = ("hang", "slow_rank", "loss_spike")
DEFAULT_MAX_RUNTIME_S = 600.0
MAX_MAX_RUNTIME_S = 24 * 3600.0
STEP_TIME_S = 1.0
SLOW_TIME_S = 1.0  # slow_rank: the slow rank's extra seconds per step (1 s steps become 2 s)
FAULT_STEP = {"hang": 5, "slow_rank": 15, "loss_spike": 15}
PIDS_FILE = "pids.json"
SUPERVISOR_LOG = ".live-supervisor.log"
START_WAIT_S = 180.0  # torch imports on a busy machine can be slow
TERM_GRACE_S = 5.0
POLL_S = 0.2
WORKER_EXTRA_S = 5.0  # a worker exits on its own this long after the deadline (second guard)
LIB_DIR = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ProcRef:
    """A process as recorded: pid and /proc start time (clock ticks since boot)."""

    pid: int
    start: str

    def alive(self) -> bool:
        """True while this very process (same start time) exists and is not a zombie."""
        fields = proc_stat(self.pid)
        return bool(fields) and fields[19] == self.start and fields[0] not in ("Z", "X")

    def pgrp(self) -> int | None:
        """Its process group while alive, else None."""
        fields = proc_stat(self.pid)
        return int(fields[2]) if fields and fields[19] == self.start else None


def proc_ref(pid: int) -> ProcRef | None:
    """``pid`` with its current start time, or None when it does not exist."""
    fields = proc_stat(pid)
    return ProcRef(pid, fields[19]) if fields else None


@dataclass
class StopResult:
    """What ``stop`` found and did."""

    out: Path
    drill: str | None
    stopped: list[dict[str, Any]] = field(default_factory=list)  # role, pid, rank, signal
    already_gone: list[dict[str, Any]] = field(default_factory=list)
    left: list[dict[str, Any]] = field(default_factory=list)  # still alive (should be empty)
    notes: list[str] = field(default_factory=list)


def _now_iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def read_pids(out: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``pids.json`` of a live drill folder (DrillError when there is none)."""
    path = Path(out) / PIDS_FILE
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise DrillError(f"no {PIDS_FILE} in {out}: not a live drill folder") from None
    except (OSError, ValueError) as e:
        raise DrillError(f"cannot read {path}: {e}") from None


def _children(ppid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = proc_stat(int(entry.name))
            if fields and int(fields[1]) == ppid:
                out.append(int(entry.name))
    return out


def _env_value(pid: int, key: bytes) -> str | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for item in env:
        if item.startswith(key + b"="):
            return item[len(key) + 1 :].decode("utf-8", "replace")
    return None


def _rank_logs(out: Path, local_rank: int) -> dict[str, str]:
    found = sorted(out.glob(f"logs/*/attempt_*/{local_rank}"))
    if not found:
        return {}
    d = found[-1]
    return {"stdout": str(d / "stdout.log"), "stderr": str(d / "stderr.log")}


def _command(name: str, out: Path, py: str, nproc: int, steps: int, k: int,
             pg_timeout: float, deadline: float, worker_server: bool) -> list[str]:
    server = [f"--worker-socket={out / 'fr' / 'rank'}"] if worker_server else []
    return [
        *job_command(name, out, py, nproc, steps, k, pg_timeout),
        f"--fr-prefix={out / 'fr' / 'rank'}",
        f"--step-time={STEP_TIME_S:g}",
        f"--slow-time={SLOW_TIME_S:g}",
        f"--deadline={deadline + WORKER_EXTRA_S:.3f}",
        *server,
    ]


def start(
    name: str,
    out_dir: str | os.PathLike[str],
    *,
    max_runtime_s: float = DEFAULT_MAX_RUNTIME_S,
    nproc: int = 2,
    python: str | os.PathLike[str] | None = None,
    wait_s: float = START_WAIT_S,
    worker_server: bool = False,
) -> dict[str, Any]:
    """Start drill ``name`` detached into ``out_dir``; return its ``pids.json`` once all ranks run.

    The job is killed when ``max_runtime_s`` passes, whether or not ``stop`` is called. With
    ``worker_server`` each rank also serves torch's worker server on ``fr/rank<N>.sock``.
    """
    if name not in SPECS:
        raise DrillError(f"unknown drill {name!r}; choose from {', '.join(SPECS)}")
    if name not in LIVE_DRILLS:
        raise DrillError(f"drill {name!r} has no live mode; live drills: {', '.join(LIVE_DRILLS)}")
    if nproc < 2:
        raise DrillError("drills need at least 2 processes")
    if not (0 < max_runtime_s <= MAX_MAX_RUNTIME_S) or not math.isfinite(max_runtime_s):
        raise DrillError(f"--max-runtime must be between 1 s and {MAX_MAX_RUNTIME_S:g} s")
    py = _find_python(python)
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    old = out / PIDS_FILE
    if old.exists():
        with suppress(DrillError):
            if any(ref.alive() for _, ref, _ in _recorded(read_pids(out))):
                raise DrillError(f"a live drill still runs in {out}: traindoc drill --stop {out}")
        old.unlink()
    _clear_bundle(out)
    (out / "fr").mkdir()
    spec = SPECS[name]
    k = FAULT_STEP[name]
    steps = k + int(max_runtime_s / STEP_TIME_S) + 10  # keeps stepping until the limit
    started = time.time()
    deadline = started + max_runtime_s
    pg_timeout = max_runtime_s + 60.0 if name == "hang" else spec.pg_timeout * 12
    cmd = _command(name, out, py, nproc, steps, k, pg_timeout, deadline, worker_server)
    facts, notes = _facts(spec, nproc, steps, k, {})
    _write_json(out / "drill.json", {
        "drill": name, "class": spec.cls, "facts": facts, "notes": "; ".join(notes),
        "run": {"command": cmd, "live": True, "expected_success": spec.expect_success,
                "nproc": nproc, "steps": steps, "fault_step": k,
                "fault_rank": worker.FAULT_RANK, "step_time_s": STEP_TIME_S,
                "max_runtime_s": max_runtime_s},
    })
    config = {"drill": name, "out": str(out), "command": cmd, "nproc": nproc,
              "started_at": started, "deadline": deadline, "max_runtime_s": max_runtime_s}
    env = dict(os.environ, TORCH_FR_BUFFER_SIZE=FR_BUFFER_SIZE, OMP_NUM_THREADS="1",
               PYTHONUNBUFFERED="1", TORCH_FR_DUMP_TEMP_FILE=str(out / "fr" / "rank"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(LIB_DIR),
                                                        os.environ.get("PYTHONPATH")])))
    env.pop("TORCHELASTIC_ERROR_FILE", None)
    # An intermediate process that exits at once: the supervisor is nobody's child here (no
    # zombie in the caller) and leads its own session.
    try:
        subprocess.run(
            [sys.executable, "-m", "traindoc.drills.live", "--detach", json.dumps(config)],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise DrillError(f"could not start the live drill's supervisor: {e}") from None
    limit = time.monotonic() + wait_s
    while time.monotonic() < limit:
        with suppress(DrillError):
            rec = read_pids(out)
            if rec.get("ended_at"):
                raise DrillError(f"the live drill ended at once ({rec.get('end_reason')}); "
                                 f"see {out / 'torchrun.log'}")
            if len(rec.get("ranks", {})) >= nproc and all(
                    r.get("logs") for r in rec["ranks"].values()):
                return rec
        time.sleep(POLL_S)
    stop(out)
    raise DrillError(f"the live drill's ranks did not start within {wait_s:g} s; stopped it")


def _recorded(rec: dict[str, Any]) -> Iterator[tuple[str, ProcRef, int | None]]:
    """(role, process, rank) for every process ``pids.json`` names."""
    for role in ("supervisor", "launcher"):
        p = rec.get(role)
        if isinstance(p, dict) and "pid" in p:
            yield role, ProcRef(int(p["pid"]), str(p["start"])), None
    for rank, p in sorted(rec.get("ranks", {}).items(), key=lambda kv: int(kv[0])):
        yield "rank", ProcRef(int(p["pid"]), str(p["start"])), int(rank)


def _signal(pid: int, sig: int, group: bool) -> bool:
    try:
        os.killpg(pid, sig) if group else os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _kill_tree(rec: dict[str, Any], grace_s: float = TERM_GRACE_S,
               spare: int | None = None) -> StopResult:
    """SIGTERM, then SIGKILL, every recorded process and its group (start times checked)."""
    res = StopResult(Path(rec.get("out", ".")), rec.get("drill"))
    procs = list(_recorded(rec))
    live = [(role, ref, rank) for role, ref, rank in procs if ref.alive()]
    for role, ref, rank in procs:
        if (role, ref, rank) not in live:
            res.already_gone.append({"role": role, "pid": ref.pid, "rank": rank})
    # A process group is signalled only while one of our verified processes leads or is in it.
    groups = {g for _, ref, _ in live if (g := ref.pgrp()) is not None}
    if spare is not None:
        groups.discard(os.getpgrp())
    signalled: dict[int, str] = {}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for g in sorted(groups):
            if any(ref.alive() and ref.pgrp() == g for _, ref, _ in live if ref.pid != spare):
                _signal(g, sig, group=True)
        for _, ref, _ in live:
            if ref.pid != spare and ref.alive() and _signal(ref.pid, sig, group=False):
                signalled[ref.pid] = signal.Signals(sig).name
        # The ranks get the grace period (they dump their flight recorder on SIGTERM); once
        # they are gone, torchrun and the supervisor have nothing left to do but linger.
        waited = [ref for role, ref, _ in live if ref.pid != spare and
                  (role == "rank" or sig == signal.SIGKILL)]
        limit = time.monotonic() + (grace_s if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < limit and any(ref.alive() for ref in waited):
            time.sleep(0.05)
    for role, ref, rank in live:
        if ref.pid == spare:
            continue
        item = {"role": role, "pid": ref.pid, "rank": rank, "signal": signalled.get(ref.pid)}
        (res.left if ref.alive() else res.stopped).append(item)
    return res


def stop(out_dir: str | os.PathLike[str]) -> StopResult:
    """Kill the live drill in ``out_dir`` (everything ``pids.json`` names); say what was stopped."""
    out = Path(out_dir).resolve()
    rec = read_pids(out)
    rec["out"] = str(out)
    res = _kill_tree(rec)
    res.out = out
    rec = read_pids(out)
    if not rec.get("ended_at"):
        rec["ended_at"] = _now_iso(time.time())
        rec["end_reason"] = "stopped (traindoc drill --stop)"
        _write_json(out / PIDS_FILE, rec)
    if not res.stopped and not res.left:
        res.notes.append("nothing was running (the drill had ended or was stopped before)")
    if res.left:
        res.notes.append("some processes survived SIGKILL (another user's? a D-state wait?)")
    return res


# -- the supervisor (a detached process) --------------------------------------------------------


class _Stop(Exception):
    pass


def _supervise(config: dict[str, Any]) -> None:
    """Run torchrun, keep pids.json current, kill the tree at the deadline or when asked."""
    out = Path(config["out"])
    me = proc_ref(os.getpid())
    assert me is not None
    rec: dict[str, Any] = {
        "drill": config["drill"], "live": True, "out": str(out),
        "started_at": _now_iso(config["started_at"]), "started_at_epoch": config["started_at"],
        "deadline": _now_iso(config["deadline"]), "deadline_epoch": config["deadline"],
        "max_runtime_s": config["max_runtime_s"],
        "supervisor": {"pid": me.pid, "start": me.start}, "pgid": None,
        "launcher": None, "ranks": {}, "command": config["command"],
        "logs": {"torchrun": str(out / "torchrun.log"), "ranks": {}},
        "fr_dump_prefix": str(out / "fr" / "rank"),
    }

    def on_signal(signum: int, frame: Any) -> None:
        raise _Stop(signal.Signals(signum).name)

    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, on_signal)
    reason = "torchrun exited"
    proc: subprocess.Popen[bytes] | None = None
    try:
        with open(out / "torchrun.log", "wb") as log:
            proc = subprocess.Popen(config["command"], stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=out, start_new_session=True)
            ref = proc_ref(proc.pid)
            if ref:
                rec["launcher"] = {"pid": ref.pid, "start": ref.start}
                rec["pgid"] = proc.pid
            _write_json(out / PIDS_FILE, rec)
            while proc.poll() is None:
                if time.time() >= config["deadline"]:
                    reason = f"max runtime of {config['max_runtime_s']:g} s reached"
                    break
                changed = False
                for pid in _children(proc.pid):
                    r = _env_value(pid, b"RANK")
                    local = _env_value(pid, b"LOCAL_RANK")
                    child = proc_ref(pid)
                    if r is None or child is None:
                        continue
                    entry = rec["ranks"].get(r)
                    logs = _rank_logs(out, int(local or r))
                    if entry is None or entry["pid"] != pid or (logs and not entry.get("logs")):
                        rec["ranks"][r] = {"pid": pid, "start": child.start,
                                           "pgid": child.pgrp(), "logs": logs}
                        rec["logs"]["ranks"][r] = logs
                        changed = True
                if changed:
                    _write_json(out / PIDS_FILE, rec)
                time.sleep(POLL_S)
    except _Stop as e:
        reason = f"stopped ({e})"
    finally:
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, signal.SIG_IGN)
        if rec["launcher"] is None and proc is not None:
            proc.kill()
        _kill_tree(rec, spare=me.pid)
        if proc is not None:
            with suppress(Exception):
                proc.wait(5)
        rec["ended_at"] = _now_iso(time.time())
        rec["end_reason"] = reason
        with suppress(OSError):
            _write_json(out / PIDS_FILE, rec)


def _detach(config_json: str) -> None:
    """Start the supervisor in a new session and return at once."""
    config = json.loads(config_json)
    with open(Path(config["out"]) / SUPERVISOR_LOG, "ab") as log:
        subprocess.Popen([sys.executable, "-m", "traindoc.drills.live", "--supervise", config_json],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                         start_new_session=True)


# -- command line (shared by ``traindoc drill`` and ``python -m traindoc.drills``) -------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The live-drill options of a drill command line."""
    p.add_argument("--live", action="store_true",
                   help="start the job detached and return (hang, slow_rank, loss_spike); "
                        "pids in DIR/pids.json")
    p.add_argument("--stop", metavar="DIR", default=None,
                   help="stop the live drill in DIR: kill every process it started")
    p.add_argument("--max-runtime", type=float, default=DEFAULT_MAX_RUNTIME_S, metavar="S",
                   help="live drill: kill it after S seconds even if nobody stops it "
                        f"(default {DEFAULT_MAX_RUNTIME_S:g})")
    p.add_argument("--worker-server", action="store_true",
                   help="live drill: each rank also serves torch's worker server on "
                        "DIR/fr/rank<N>.sock (traindoc collect asks it for the flight recorder)")


def stop_lines(res: StopResult) -> list[str]:
    """What ``stop`` did, one line each, for a terminal."""
    lines = [f"stopped live drill {res.drill or '?'} in {res.out}"]
    for it in res.stopped:
        who = f"rank {it['rank']}" if it["rank"] is not None else it["role"]
        lines.append(f"  stopped {who} pid {it['pid']} ({it['signal'] or 'exited'})")
    for it in res.already_gone:
        who = f"rank {it['rank']}" if it["rank"] is not None else it["role"]
        lines.append(f"  {who} pid {it['pid']} had already exited")
    for it in res.left:
        who = f"rank {it['rank']}" if it["rank"] is not None else it["role"]
        lines.append(f"  STILL RUNNING: {who} pid {it['pid']}")
    lines.extend(f"  note: {n}" for n in res.notes)
    return lines


def start_lines(rec: dict[str, Any]) -> list[str]:
    """What ``start`` started, for a terminal."""
    out = rec["out"]
    lines = [f"live drill {rec['drill']} running in {out} (until {rec['deadline']}; "
             f"pids in {Path(out) / PIDS_FILE})",
             f"  torchrun pid {rec['launcher']['pid']} (process group {rec['pgid']})"]
    for r, p in sorted(rec["ranks"].items(), key=lambda kv: int(kv[0])):
        lines.append(f"  rank {r} pid {p['pid']}: {p['logs'].get('stdout', '')}")
    lines.append(f"stop:   traindoc drill --stop {out}")
    return lines


def run_command(name: str | None, out: str | os.PathLike[str] | None, args: argparse.Namespace,
                stdout: Any, stderr: Any) -> int:
    """``--live`` or ``--stop`` of a drill command line; returns the exit code (0, 2 usage,
    3 failed)."""
    if args.stop is not None:
        if not str(args.stop).strip():
            print("error: --stop DIR is empty (an unset variable?)", file=stderr)
            return 2
        try:
            res = stop(args.stop)
        except DrillError as e:
            print(f"error: {e}", file=stderr)
            return 2
        for line in stop_lines(res):
            print(line, file=stdout)
        return 3 if res.left else 0
    if not name or not out:
        print("error: --live needs a drill NAME and -o DIR", file=stderr)
        return 2
    try:
        rec = start(name, out, max_runtime_s=args.max_runtime, nproc=args.nproc,
                    worker_server=args.worker_server)
    except DrillOutputError as e:  # a folder it may not clear: a usage error, as for run
        print(f"error: {e}", file=stderr)
        return 2
    except DrillError as e:
        print(f"error: {e}", file=stderr)
        return 2 if name not in LIVE_DRILLS or "max-runtime" in str(e) else 3
    for line in start_lines(rec):
        print(line, file=stdout)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Internal entry points of the detached processes."""
    p = argparse.ArgumentParser(prog="python -m traindoc.drills.live")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--detach", metavar="CONFIG")
    g.add_argument("--supervise", metavar="CONFIG")
    args = p.parse_args(argv)
    if args.detach:
        _detach(args.detach)
    else:
        _supervise(json.loads(args.supervise))
    return 0


if __name__ == "__main__":
    sys.exit(main())
