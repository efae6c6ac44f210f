"""``traindoc collect``: evidence from a live job while its processes still exist.

Finds the rank processes on this host (from ``--pid`` and their process trees, or from the logs:
pids the logs print, processes holding the log files open, a live drill's ``pids.json``), then
writes into ``OUT/evidence/``:

- ``py-spy-rank<R>-pid<P>.txt``: ``py-spy dump --pid P`` (rank from the process's ``RANK``);
- ``fr-rank<R>.json`` / ``fr-rank<R>.pkl``: a flight-recorder dump, asked for only in ways that
  cannot hurt the job: the torch worker server's ``fr_trace_json`` handler over its unix socket
  (``TORCH_WORKER_SERVER_SOCKET``, ``torch.distributed.elastic.control_plane.worker_main``), the
  NCCL debug-info pipe (``TORCH_NCCL_DEBUG_INFO_PIPE_FILE``), or, with ``--sigusr1`` (the job's
  own handler dumps), SIGUSR1 — and then only where ``/proc/<pid>/status`` ``SigCgt`` shows the
  process catches it (its default action kills);
- ``nvidia-smi-q.txt`` and ``dmesg-xid.txt`` when those tools exist;
- ``notes.txt``: what was found, done and skipped, and why.

For jobs on many hosts it builds the SLURM (``srun --overlap``) and pdsh fan-out commands from a
hostlist; ``run=True`` runs one. The folder is a bundle ``traindoc.load`` and the deadlock and
timeout runbooks read as they are.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import hostlist
from .reader.decode import not_regular
from .report import create_new, line_text, own_dir, write_new
from .shellsafe import quote

PYSPY_TIMEOUT_S = 60.0
FR_WAIT_S = 10.0
TOOL_TIMEOUT_S = 60.0
MAX_LOG_SCAN_BYTES = 64 * 1024 * 1024  # per file: pids are looked for in the last 64 MiB
DEFAULT_FR_PREFIX = "/tmp/nccl_trace_rank_"  # torch's default TORCH_FR_DUMP_TEMP_FILE
FR_PREFIX_VARS = (b"TORCH_FR_DUMP_TEMP_FILE", b"TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
# pids as logs print them: NCCL's "host:pid:tid [rank] NCCL INFO", torchrun's "pid: N" /
# "(pid: N)", "PID N", "pid=N", "Process N:" (py-spy), "[PID N]"
LOG_PID_RES = (
    re.compile(r"^\S*?[\w.-]:(?P<pid>\d{1,9}):\d{1,9} \[\d+\] NCCL ", re.MULTILINE),
    re.compile(r"\bpid(?:\s*[:=]\s*|\s+)(?P<pid>\d{1,9})\b", re.IGNORECASE),
    re.compile(r"^Process (?P<pid>\d{1,9}): ", re.MULTILINE),
)
XID_RE = re.compile(r"NVRM: Xid|\bXid\b.*\d")
HANDLER_PATH = "/handler/"


@dataclass(frozen=True)
class RankProcess:
    """A process of the job on this host."""

    pid: int
    rank: int | None
    start: str  # /proc start time: the same process while this matches
    cmdline: str
    found_by: str
    helper_of: int | None = None  # a child of the rank process with the same RANK (DataLoader)


@dataclass
class CollectResult:
    """What ``collect`` found and saved."""

    out: Path
    evidence: Path
    processes: list[RankProcess] = field(default_factory=list)
    saved: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fanout: dict[str, list[str]] = field(default_factory=dict)  # scheduler -> argv
    ran: dict[str, int] = field(default_factory=dict)  # scheduler -> exit code

    def as_dict(self) -> dict[str, Any]:
        """The result as plain JSON-able values."""
        return {"out": str(self.out), "evidence": str(self.evidence),
                "processes": [p.__dict__ for p in self.processes],
                "saved": [str(p) for p in self.saved], "notes": list(self.notes),
                "fanout": {k: command_text(v) for k, v in self.fanout.items()}, "ran": self.ran}


# -- /proc ---------------------------------------------------------------------------------------


def proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name ([0] the state, [2] the process
    group, [19] the start time in clock ticks since boot); None when there is no such process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    return raw.rsplit(")", 1)[1].split()


def start_time(pid: int) -> str | None:
    """The process's start time from /proc (None when it does not exist or is a zombie)."""
    fields = proc_stat(pid)
    return fields[19] if fields and fields[0] not in ("Z", "X") else None


def environ(pid: int) -> dict[str, str]:
    """The process's initial environment ({} when unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    env = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return env


def cmdline(pid: int) -> str:
    """The process's command line, arguments joined by spaces."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return " ".join(a.decode("utf-8", "replace") for a in raw.split(b"\0") if a)


def rank_of(pid: int) -> int | None:
    """The process's ``RANK`` (torchrun, srun and most launchers set it), else None."""
    env = environ(pid)
    for key in ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
        if env.get(key, "").isdigit():
            return int(env[key])
    return None


def children(pid: int) -> list[int]:
    """Direct children: ``/proc/<pid>/task/*/children``, else a scan of every ppid."""
    kids: set[int] = set()
    tasks = Path(f"/proc/{pid}/task")
    found_file = False
    try:
        for t in tasks.iterdir():
            f = t / "children"
            if f.exists():
                found_file = True
                kids.update(int(x) for x in f.read_text().split())
    except OSError:
        pass
    if found_file:
        return sorted(kids)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = proc_stat(int(entry.name))
            if fields and fields[1] == str(pid):
                kids.add(int(entry.name))
    return sorted(kids)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, …)."""
    out: list[int] = []
    todo = children(pid)
    while todo:
        p = todo.pop(0)
        if p not in out:
            out.append(p)
            todo.extend(children(p))
    return out


def signal_caught(pid: int, signum: int) -> bool:
    """True when ``/proc/<pid>/status`` ``SigCgt`` shows a handler for ``signum``."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


# -- finding the processes -----------------------------------------------------------------------


def _log_files(logs: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The regular files under ``logs``; a file reached through a symbolic link in a log
    folder is left out (a link to another job's open log must not make its ranks targets)."""
    files: list[Path] = []
    for raw in logs:
        p = Path(raw)
        if p.is_dir():
            files.extend(f for f in sorted(p.rglob("*")) if f.is_file() and not f.is_symlink())
        elif p.is_file():
            files.append(p)
        else:
            files.extend(f for f in sorted(Path().glob(str(raw)))
                         if f.is_file() and not f.is_symlink())
    return [f.resolve() for f in files]


def proc_uid(pid: int) -> int | None:
    """The user id process ``pid`` runs as (its /proc entry's owner), or None when gone."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _owners(files: Iterable[Path]) -> set[int]:
    out = set()
    for f in files:
        with contextlib.suppress(OSError):
            out.add(os.stat(f).st_uid)
    return out


def pids_in_logs(files: Iterable[Path]) -> set[int]:
    """Pids the log files print (NCCL INFO prefixes, ``pid: N``, ``Process N:``) and the pids a
    live drill's ``pids.json`` records."""
    pids: set[int] = set()
    for f in files:
        if not_regular(f) is not None:  # a link to /proc/kmsg would block the read for ever
            continue
        if f.name == "pids.json":
            try:
                rec = json.loads(f.read_text())
                pids.update(int(r["pid"]) for r in rec.get("ranks", {}).values())
                if isinstance(rec.get("launcher"), dict):
                    pids.add(int(rec["launcher"]["pid"]))
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                pass
            continue
        try:
            with open(f, "rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                fh.seek(max(0, size - MAX_LOG_SCAN_BYTES))
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        for rx in LOG_PID_RES:
            pids.update(int(m["pid"]) for m in rx.finditer(text))
    return {p for p in pids if p > 1}


def holders_of(files: Iterable[Path]) -> set[int]:
    """Processes that hold one of ``files`` open (a rank's redirected stdout, torchrun's log)."""
    targets = {str(f) for f in files}
    found: set[int] = set()
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            for fd in (entry / "fd").iterdir():
                with_target = os.readlink(fd)
                if with_target in targets:
                    found.add(int(entry.name))
                    break
        except OSError:
            continue
    return found


def find_processes(pids: Sequence[int] = (), logs: Sequence[str | os.PathLike[str]] = ()
                   ) -> tuple[list[RankProcess], list[str]]:
    """The job's rank processes on this host, and notes on what was looked at."""
    notes: list[str] = []
    seeds: dict[int, str] = {}
    for p in pids:
        seeds.setdefault(int(p), "--pid")
    if logs:
        files = _log_files(logs)
        if not files:
            notes.append(f"no log files found under {', '.join(map(str, logs))}")
        # What the logs name is acted on only when it runs as the user who owns the logs:
        # a job's owner can print any pid (or plant a pids.json), never make it theirs.
        owners = _owners(files)
        from_logs = {p: "printed in the logs" for p in sorted(pids_in_logs(files))}
        from_logs.update({p: "has a log file open" for p in sorted(holders_of(files))
                          if p not in from_logs})
        for p, how in from_logs.items():
            uid = proc_uid(p)
            if uid is not None and uid not in owners:
                notes.append(f"pid {p} ({how}) runs as user {uid}, not as the logs' owner "
                             f"({', '.join(map(str, sorted(owners))) or 'none'}): left alone")
                continue
            seeds.setdefault(p, how)
    candidates: dict[int, str] = {}
    for p, how in seeds.items():
        if start_time(p) is None:
            notes.append(f"pid {p} ({how}) is not running on this host")
            continue
        candidates.setdefault(p, how)
        for d in descendants(p):
            candidates.setdefault(d, f"child of {p} ({how})")
    procs = [RankProcess(p, rank_of(p), start_time(p) or "", cmdline(p), how)
             for p, how in sorted(candidates.items()) if start_time(p) is not None]
    ranked = [p for p in procs if p.rank is not None]
    if ranked:
        # A pid from the logs is trusted only as a rank (RANK set): never a recycled pid.
        skipped = [p for p in procs if p.rank is None]
        if skipped:
            notes.append("not ranks (no RANK in their environment), left alone: " + ", ".join(
                f"{p.pid} ({p.cmdline[:60]})" for p in skipped))
        procs = ranked
    else:
        procs = [p for p in procs if p.found_by == "--pid"]
        if procs:
            notes.append("no process with RANK in its environment: dumping the --pid processes")
    if not procs:
        notes.append("no rank process of the job found on this host")
    procs = _mark_helpers(procs)
    procs.sort(key=lambda p: (p.rank if p.rank is not None else 1 << 30, p.pid))
    return procs, notes


def _mark_helpers(procs: list[RankProcess]) -> list[RankProcess]:
    """A process whose parent has the same rank is that rank's helper (a DataLoader worker
    inherits RANK): dumped by py-spy, never asked for a flight-recorder dump."""
    by_pid = {p.pid: p for p in procs}
    out = []
    for p in procs:
        fields = proc_stat(p.pid)
        parent = by_pid.get(int(fields[1])) if fields else None
        if parent is not None and parent.rank == p.rank and p.rank is not None:
            p = RankProcess(p.pid, p.rank, p.start, p.cmdline, p.found_by, parent.pid)
        out.append(p)
    return out


# -- dumps ---------------------------------------------------------------------------------------


def find_pyspy() -> str | None:
    """py-spy beside this Python, else on PATH."""
    sibling = Path(sys.executable).parent / "py-spy"
    return str(sibling) if sibling.exists() else shutil.which("py-spy")


def _tag(p: RankProcess) -> str:
    return f"rank{p.rank}" if p.rank is not None else "rankNA"


def pyspy_dump(p: RankProcess, evidence: Path, pyspy: str) -> tuple[Path | None, str | None]:
    """``py-spy dump`` of one process into ``py-spy-rank<R>-pid<P>.txt``; (file, note)."""
    try:
        res = subprocess.run([pyspy, "dump", "--pid", str(p.pid)], capture_output=True,
                             text=True, timeout=PYSPY_TIMEOUT_S, check=False,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, f"py-spy dump of pid {p.pid} took over {PYSPY_TIMEOUT_S:g} s: skipped"
    except OSError as e:
        return None, f"py-spy could not run: {e}"
    if res.returncode != 0 or not res.stdout.strip():
        why = (res.stderr or res.stdout).strip().splitlines()
        reason = why[-1] if why else f"exit {res.returncode}"
        hint = (" (ptrace denied: run as root or with CAP_SYS_PTRACE, or set "
                "kernel.yama.ptrace_scope=0)") if "ermission" in reason or "ptrace" in reason else ""
        return None, f"py-spy dump of pid {p.pid} failed: {reason}{hint}"
    path = evidence / f"py-spy-{_tag(p)}-pid{p.pid}.txt"
    write_new(path, res.stdout)
    return path, None


class _UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def _handler(path: str, name: str, timeout: float = FR_WAIT_S) -> bytes | None:
    try:
        c = _UnixHTTP(path, timeout)
        c.request("POST", HANDLER_PATH + name)
        r = c.getresponse()
        body = r.read()
        c.close()
    except (OSError, http.client.HTTPException):
        return None
    return body if r.status == 200 else None


def _listening_unix_sockets(pid: int) -> list[str]:
    """Named unix sockets the process holds (``/proc/net/unix`` inodes among its fds)."""
    inodes: set[str] = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with_target = os.readlink(fd)
            if with_target.startswith("socket:["):
                inodes.add(with_target[8:-1])
        table = Path(f"/proc/{pid}/net/unix").read_text().splitlines()[1:]
    except OSError:
        return []
    paths = []
    for line in table:
        parts = line.split()
        if len(parts) >= 8 and parts[6] in inodes and parts[7].startswith("/"):
            paths.append(parts[7])
    return sorted(set(paths))


def worker_server_dump(p: RankProcess, evidence: Path) -> tuple[Path | None, str | None]:
    """A flight-recorder dump from torch's worker server, if the process runs one."""
    env = environ(p.pid)
    paths = [env["TORCH_WORKER_SERVER_SOCKET"]] if env.get("TORCH_WORKER_SERVER_SOCKET") else []
    paths += [s for s in _listening_unix_sockets(p.pid) if s not in paths]
    for path in paths:
        try:
            if not stat.S_ISSOCK(os.stat(path).st_mode):
                continue
        except OSError:
            continue
        if _handler(path, "ping", 5.0) != b"pong":
            continue
        for name, ext in (("dump_nccl_trace_pickle", "pkl"), ("fr_trace_json", "json")):
            body = _handler(path, name)
            if body:
                out = evidence / f"fr-{_tag(p)}.{ext}"
                write_new(out, body)
                return out, f"{_tag(p)} (pid {p.pid}): flight recorder from torch's worker " \
                            f"server at {path} (handler {name})"
    return None, None


def _fr_prefix(env: dict[str, str]) -> str:
    for key in FR_PREFIX_VARS:
        if env.get(key.decode()):
            return env[key.decode()]
    return DEFAULT_FR_PREFIX


def _fresh(path: Path, since: float) -> bool:
    try:
        return path.stat().st_mtime >= since and path.stat().st_size > 0
    except OSError:
        return False


def signal_dumps(procs: Sequence[RankProcess], evidence: Path, wait_s: float = FR_WAIT_S,
                 sigusr1: bool = False) -> tuple[list[Path], list[str]]:
    """Ask processes for flight-recorder dumps through the NCCL debug pipe or, with
    ``sigusr1`` (the job's own handler dumps the flight recorder), SIGUSR1 where ``SigCgt``
    shows it caught; then copy the files they write into ``evidence``."""
    saved: list[Path] = []
    notes: list[str] = []
    asked: dict[RankProcess, Path] = {}
    since = time.time() - 1.0
    for p in procs:
        if p.rank is None or p.helper_of is not None:
            why = "no rank" if p.rank is None else f"a helper of pid {p.helper_of}"
            notes.append(f"pid {p.pid}: {why}, no flight-recorder dump asked")
            continue
        if start_time(p.pid) != p.start:
            notes.append(f"pid {p.pid} has exited (or is another process now): nothing asked")
            continue
        env = environ(p.pid)
        target = Path(f"{_fr_prefix(env)}{p.rank}")
        pipe = env.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE")
        if pipe and _write_pipe(Path(f"{pipe}{p.rank}.pipe")):
            asked[p] = target
            notes.append(f"{_tag(p)} (pid {p.pid}): asked through {pipe}{p.rank}.pipe")
        elif signal_caught(p.pid, signal.SIGUSR1):
            if not sigusr1:
                notes.append(f"{_tag(p)} (pid {p.pid}): catches SIGUSR1, not sent: the handler "
                             "may do something else (Lightning's SLURM auto-requeue saves a "
                             "checkpoint and requeues the job on it); --sigusr1 sends it when "
                             "the job's handler dumps the flight recorder")
                continue
            os.kill(p.pid, signal.SIGUSR1)
            asked[p] = target
            notes.append(f"{_tag(p)} (pid {p.pid}): SIGUSR1 sent (SigCgt shows it caught)")
        else:
            notes.append(f"{_tag(p)} (pid {p.pid}): SIGUSR1 not caught (its default action "
                         "would kill the job): not sent; no on-demand flight-recorder dump")
    limit = time.monotonic() + wait_s
    while asked and time.monotonic() < limit and not all(
            _fresh(t, since) for t in asked.values()):
        time.sleep(0.2)
    for p, target in asked.items():
        if _fresh(target, since) or _fresh(target.with_suffix(".pkl"), since):
            src = target if _fresh(target, since) else target.with_suffix(".pkl")
            data = src.read_bytes()
            ext = "json" if data.lstrip()[:1] == b"{" else "pkl"
            out = evidence / f"fr-{_tag(p)}.{ext}"
            write_new(out, data)
            saved.append(out)
            notes.append(f"{_tag(p)}: flight-recorder dump {src} -> {out.name}")
        else:
            notes.append(f"{_tag(p)}: no new dump at {target} within {wait_s:g} s (the process "
                         "may dump elsewhere; TORCH_FR_DUMP_TEMP_FILE names where)")
    return saved, notes


def _write_pipe(path: Path) -> bool:
    try:
        if not stat.S_ISFIFO(os.stat(path).st_mode):
            return False
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        os.write(fd, b"1\n")
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def fr_entries_note(path: Path) -> str | None:
    """A note when a saved flight-recorder dump holds no collective (gloo on CPU may not record)."""
    from .parse.flight_recorder import read_dump

    try:
        dump = json.loads(path.read_bytes()) if path.suffix == ".json" else read_dump(path)
    except Exception as e:  # a dump the reader refuses is still evidence
        return f"{path.name}: not readable as a flight-recorder dump ({type(e).__name__})"
    entries = dump.get("entries") if isinstance(dump, dict) else None
    if not entries:
        return f"{path.name}: the flight recorder holds no collective (nothing recorded)"
    return None


def system_evidence(evidence: Path) -> tuple[list[Path], list[str]]:
    """``nvidia-smi -q`` and dmesg's Xid lines, where those tools exist."""
    saved: list[Path] = []
    notes: list[str] = []
    smi = shutil.which("nvidia-smi")
    if smi is None:
        notes.append("nvidia-smi not found (no NVIDIA driver here): no GPU state saved")
    elif (res := _run_tool([smi, "-q"], "nvidia-smi -q", notes)) is not None:
        write_new(evidence / "nvidia-smi-q.txt", res.stdout + res.stderr)
        saved.append(evidence / "nvidia-smi-q.txt")
    dmesg = shutil.which("dmesg")
    if dmesg is None:
        notes.append("dmesg not found: no Xid lines saved")
    elif (res := _run_tool([dmesg, "-T"], "dmesg", notes)) is not None:
        if res.returncode != 0:
            notes.append(f"dmesg failed (exit {res.returncode}: "
                         f"{res.stderr.strip()[:120]}); try: sudo dmesg -T | grep -i xid")
        elif xid := [ln for ln in res.stdout.splitlines() if XID_RE.search(ln)]:
            write_new(evidence / "dmesg-xid.txt", "\n".join(xid) + "\n")
            saved.append(evidence / "dmesg-xid.txt")
        else:
            notes.append("dmesg: no Xid line")
    return saved, notes


def _run_tool(argv: list[str], what: str, notes: list[str]
              ) -> subprocess.CompletedProcess[str] | None:
    """``argv`` run with the tools' time limit, its output captured; None (and a note) when
    it could not run or ran out of time."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S,
                              check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        notes.append(f"{what} failed: {e}")
        return None


# -- many hosts ----------------------------------------------------------------------------------

# On each host: every process with RANK in its environment, dumped by py-spy with a time limit.
REMOTE_PYSPY = ("for p in $(grep -lsz '^RANK=' /proc/[0-9]*/environ | cut -d/ -f3); do "
                "timeout 120 py-spy dump --pid \"$p\"; done")


def fanout_commands(hosts: str | Sequence[str] | None, out: Path, jobid: str | None
                    ) -> dict[str, list[str]]:
    """The SLURM and pdsh commands that dump every rank on every host into ``out/evidence``."""
    names = hostlist.expand(hosts) if hosts else []
    expr = hostlist.compress(names) if names else None
    cmds: dict[str, list[str]] = {}
    if jobid or expr:
        cmd = ["srun", "--overlap", f"--jobid={jobid or '$SLURM_JOB_ID'}"]
        if expr:
            cmd += [f"--nodelist={expr}", f"--nodes={len(names)}"]
        cmd += ["--ntasks-per-node=1", f"--output={out / 'evidence' / 'trace-%N.out'}",
                "bash", "-c", REMOTE_PYSPY]
        cmds["slurm"] = cmd
    if expr:
        cmds["pdsh"] = ["pdsh", "-w", expr, REMOTE_PYSPY]
    return cmds


def command_text(cmd: Sequence[str]) -> str:
    """A fan-out command as a shell line to paste (``$SLURM_JOB_ID`` left for the shell)."""
    return shlex.join(cmd).replace("'--jobid=$SLURM_JOB_ID'", '--jobid="$SLURM_JOB_ID"')


def run_fanout(cmds: dict[str, list[str]], evidence: Path) -> tuple[dict[str, int], list[str]]:
    """Run the first fan-out whose tool exists here (srun, else pdsh)."""
    notes: list[str] = []
    for name, tool in (("slurm", "srun"), ("pdsh", "pdsh")):
        if name not in cmds:
            continue
        if shutil.which(tool) is None:
            notes.append(f"{tool} not found: the {name} fan-out was not run")
            continue
        cmd = cmds[name]
        if "$SLURM_JOB_ID" in " ".join(cmd):
            notes.append("no job id (--jobid or SLURM_JOB_ID): the srun fan-out was not run")
            continue
        try:
            if name == "pdsh":
                with create_new(evidence / "pdsh-py-spy.txt", binary=True) as fh:
                    rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, timeout=600,
                                        check=False).returncode
            else:
                rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, timeout=600,
                                    check=False).returncode
        except (OSError, subprocess.TimeoutExpired) as e:
            notes.append(f"{tool} failed: {e}")
            continue
        notes.append(f"ran the {name} fan-out: exit {rc}")
        return {name: rc}, notes
    return {}, notes


# -- the whole collection ------------------------------------------------------------------------


# the files collect writes: an earlier collection's are removed so two moments never mix
OWN_FILE_RES = (re.compile(r"^py-spy-rank(?:\d+|NA)-pid\d+\.txt$"),
                re.compile(r"^fr-rank(?:\d+|NA)\.(?:json|pkl)$"),
                re.compile(r"^(?:nvidia-smi-q|dmesg-xid|notes|pdsh-py-spy)\.txt$"),
                re.compile(r"^trace-[^/]+\.out$"))


def clear_previous(evidence: Path) -> list[Path]:
    """Remove the files an earlier ``collect`` wrote into ``evidence`` (nothing else), and a
    link planted under one of their names (the link itself, never what it points at: the
    next write must not follow it)."""
    gone = []
    for f in sorted(evidence.iterdir()):
        if (f.is_symlink() or f.is_file()) and any(rx.match(f.name) for rx in OWN_FILE_RES):
            f.unlink()
            gone.append(f)
    return gone


def collect(out: str | os.PathLike[str], *, pids: Sequence[int] = (),
            logs: Sequence[str | os.PathLike[str]] = (), hosts: str | Sequence[str] | None = None,
            jobid: str | None = None, run: bool = False, flight_recorder: bool = True,
            system: bool = True, sigusr1: bool = False) -> CollectResult:
    """Collect evidence of the job's live processes into ``out/evidence``; see the module doc
    (``sigusr1``: the job's SIGUSR1 handler dumps the flight recorder, so it may be sent)."""
    out_p = Path(out).resolve()
    evidence = out_p / "evidence"
    own_dir(evidence)
    res = CollectResult(out_p, evidence)
    cleared = clear_previous(evidence)
    if cleared:
        res.notes.append(f"removed {len(cleared)} files of an earlier collection in {evidence}")
    res.processes, notes = find_processes(pids, logs)
    res.notes += notes
    pyspy = find_pyspy()
    if pyspy is None:
        res.notes.append("py-spy not found (pip install py-spy): no stack dumps taken")
    else:
        for p in res.processes:
            path, note = pyspy_dump(p, evidence, pyspy)
            if path:
                res.saved.append(path)
            if note:
                res.notes.append(note)
    if flight_recorder and res.processes:
        rest = []
        for p in res.processes:
            if p.helper_of is not None:
                rest.append(p)
                continue
            path, note = worker_server_dump(p, evidence)
            if path:
                res.saved.append(path)
            else:
                rest.append(p)
            if note:
                res.notes.append(note)
        saved, notes = signal_dumps(rest, evidence, sigusr1=sigusr1)
        res.saved += saved
        res.notes += notes
        for path in [s for s in res.saved if s.name.startswith("fr-")]:
            if note := fr_entries_note(path):
                res.notes.append(note)
    if system:
        saved, notes = system_evidence(evidence)
        res.saved += saved
        res.notes += notes
    res.fanout = fanout_commands(hosts if hosts else os.environ.get("SLURM_JOB_NODELIST"),
                                 out_p, jobid or os.environ.get("SLURM_JOB_ID"))
    if run:
        if res.fanout:
            res.ran, notes = run_fanout(res.fanout, evidence)
            res.notes += notes
        else:
            res.notes.append("--run: no hostlist or job id, so no fan-out to run")
    _write_notes(res)
    return res


def _write_notes(res: CollectResult) -> None:
    lines = ["traindoc collect", f"at: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
             f"host: {socket.gethostname()}", "", "processes:"]
    lines += [f"  rank {p.rank if p.rank is not None else '?'} pid {p.pid} "
              f"({line_text(p.found_by)}): {line_text(p.cmdline[:200])}"
              for p in res.processes] or ["  (none)"]
    lines += ["", "notes:"] + [f"  {line_text(n)}" for n in res.notes]
    if res.fanout:
        lines += ["", "fan-out (every host):"] + [f"  {k}: {command_text(v)}"
                                                   for k, v in res.fanout.items()]
    path = res.evidence / "notes.txt"
    write_new(path, "\n".join(lines) + "\n")
    if path not in res.saved:
        res.saved.append(path)


# -- command line --------------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``traindoc collect``'s arguments."""
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--pid", type=int, nargs="+", metavar="P",
                     help="a rank or launcher (torchrun) pid; its children are found too")
    src.add_argument("--from-logs", nargs="+", metavar="LOGS",
                     help="the job's log files or folders: pids they print, processes holding "
                          "them open")
    p.add_argument("-o", "--output-dir", required=True, metavar="OUT",
                   help="evidence goes to OUT/evidence/")
    p.add_argument("--hosts", metavar="HOSTLIST", default=None,
                   help="the job's hosts (SLURM hostlist, e.g. node[01-16]; default "
                        "$SLURM_JOB_NODELIST): print the fan-out commands")
    p.add_argument("--jobid", default=None, help="SLURM job id (default $SLURM_JOB_ID)")
    p.add_argument("--run", action="store_true",
                   help="also run the fan-out (srun, else pdsh) from here")
    p.add_argument("--no-flight-recorder", action="store_true",
                   help="do not ask the processes for flight-recorder dumps")
    p.add_argument("--sigusr1", action="store_true",
                   help="the job's own SIGUSR1 handler dumps the flight recorder: send SIGUSR1 "
                        "to ranks that catch it (never without this: torch installs no such "
                        "handler, and Lightning's SLURM auto-requeue checkpoints and requeues "
                        "the job on SIGUSR1)")


def main(args: argparse.Namespace, stdout: Any, stderr: Any) -> int:
    """Run ``traindoc collect``; 0 when something was collected, 1 when no process was found,
    2 for a bad argument."""
    if not args.output_dir.strip():
        print("traindoc: -o OUT is empty (an unset variable?)", file=stderr)
        return 2
    try:
        hosts = hostlist.expand(args.hosts) if args.hosts else None
    except ValueError as e:
        print(f"traindoc: --hosts: {e}", file=stderr)
        return 2
    try:
        res = collect(args.output_dir, pids=args.pid or (), logs=args.from_logs or (),
                      hosts=hosts, jobid=args.jobid, run=args.run,
                      flight_recorder=not args.no_flight_recorder, sigusr1=args.sigusr1)
    except OSError as e:
        print(f"traindoc: cannot write into {args.output_dir}: {e.strerror or e}", file=stderr)
        return 5
    for p in res.processes:
        print(f"rank {p.rank if p.rank is not None else '?'} pid {p.pid}: {line_text(p.found_by)}",
              file=stdout)
    for path in res.saved:
        print(f"saved: {line_text(path)}", file=stdout)
    for n in res.notes:
        print(f"note:  {line_text(n)}", file=stdout)
    for name, cmd in res.fanout.items():
        print(f"{name} fan-out: {command_text(cmd)}", file=stdout)
    out_q, dest_q = quote(res.out), quote(f"{res.out}-deadlock")
    if out_q and dest_q:
        print(f"next:  traindoc run deadlock {out_q} -o {dest_q}", file=stdout)
    else:  # a control character in the path: no command line to paste
        print("next:  traindoc run deadlock on the output folder above", file=stdout)
    return 0 if res.processes else 1
