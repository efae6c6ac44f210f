"""Launch a drill under torchrun, supervise it, clean up, and write its bundle.

Bundle layout (``out_dir``)::

    torchrun.log           torchrun's own stdout+stderr (workers tee'd in, prefixed)
    logs/<run>/attempt_0/<local_rank>/{stdout,stderr}.log, error.json  (as torchrun writes them)
    fr/rank<N>.pkl         raw flight-recorder pickle bytes from torch, one per rank
    pyspy/trace-<host>-<pid>.out   py-spy dumps (hang only)
    drill.json             the injected truth
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..collect import environ, proc_stat
from . import worker

WORKER_SCRIPT = Path(worker.__file__).resolve()
REPO_ROOT = Path(__file__).resolve().parents[3]
DATA_ROOT = REPO_ROOT / "data"
FR_BUFFER_SIZE = "2000"
BUNDLE_ENTRIES = ("logs", "fr", "pyspy", "torchrun.log", "drill.json", "README.md")
LIVE_ENTRIES = ("pids.json", ".live-supervisor.log")  # what a live drill adds (drills.live)
POLL_S = 0.2
STALL_S = 3.0  # hang: no log output for this long after training started
TERM_GRACE_S = 15.0
WORKER_GRACE_S = 3.0
PYSPY_TIMEOUT_S = 30.0
FR_WAIT_S = 10.0

_ITERATION_RE = re.compile(r"^\S*\s?iteration\s+(\d+)/\s*(\d+) \|", re.MULTILINE)
_PYSPY_MAIN_RE = re.compile(r'^Thread \S+ \([^)]*\): "MainThread"\n((?:[ \t]+\S.*\n?)+)', re.MULTILINE)
# Frames that say only *that* a thread waits (stdlib locks and queues), not *for what*: the
# leaf a person reads is the first frame below them, the program's own.
_GENERIC_WAIT_RE = re.compile(r"\((?:threading|queue|selectors|multiprocessing/\w+)\.py:\d+\)$")


def _program_leaf(frames_text: str) -> str | None:
    """The innermost MainThread frame outside the stdlib's generic waits, as py-spy prints it."""
    frames = [ln.strip() for ln in frames_text.splitlines() if ln.strip()]
    frames = [f for f in frames if f.endswith(")") and "(" in f]
    for f in frames:
        if not _GENERIC_WAIT_RE.search(f):
            return f
    return frames[0] if frames else None


class DrillError(RuntimeError):
    """A drill could not be launched or produced no usable bundle."""


class DrillOutputError(DrillError):
    """The bundle folder cannot be used (it holds other files, or cannot be read)."""


@dataclass(frozen=True)
class DrillSpec:
    """Static description of one drill."""

    name: str
    cls: str
    description: str  # the injected fault (the answer: revealed after the reader predicts)
    shows: str
    page: str = "the job stopped mid-training; torchrun says it failed"  # what on-call sees
    steps: int = 40
    pg_timeout: float = 5.0
    save_timeout: float = 5.0
    expect_success: bool = False
    needs_cuda: bool = False  # trains on a CUDA GPU: refused where torch sees none

    def fault_step(self, steps: int) -> int:
        """Step at which the fault is injected (the middle of the run)."""
        return max(1, steps // 2)


SPECS: dict[str, DrillSpec] = {
    s.name: s
    for s in (
        DrillSpec(
            "timeout",
            "timeout",
            "rank 1 skips one gradient all_reduce (runs eval instead); rank 0 times out after 5 s",
            "gloo's real collective timeout on rank 0 (`Timed out waiting 5000ms for recv operation`), "
            "the SIGTERM torchrun sends rank 1, torchrun's ChildFailedError report, and both ranks' "
            "flight-recorder dumps (rank 0 holds one more all_reduce than rank 1).",
        ),
        DrillSpec(
            "desync",
            "timeout",
            "at step K rank 1 calls all_gather while rank 0 calls all_reduce (same sequence number)",
            "a collective mismatch under gloo: both ranks time out (recv on rank 0, send on rank 1) and "
            "the flight-recorder dumps disagree on the op at the same collective_seq_id.",
        ),
        DrillSpec(
            "crash",
            "gpu_crash",
            "rank 1 is SIGKILLed mid-training; rank 0 fails in its next all_reduce",
            "a rank dying from a signal: torchrun's report names rank 1 (`Signal 9 (SIGKILL)`) as root "
            "cause while rank 0 dies of gloo's `Connection reset by peer`; only rank 0 has a dump.",
        ),
        DrillSpec(
            "hang",
            "deadlock",
            "rank 1 blocks in an eval data-loader queue while rank 0 waits in broadcast (no timeout)",
            "a silent hang (600 s timeout never fires): py-spy dumps of both workers taken while hung, "
            "flight-recorder dumps requested with SIGUSR1, then the runner SIGTERMs torchrun.",
            pg_timeout=600.0,
            page="the job stopped logging mid-training and never exited; someone killed it",
        ),
        DrillSpec(
            "slow_rank",
            "throughput",
            "rank 1 sleeps an extra 250 ms per step from step K on; the job finishes",
            "a throughput drop: elapsed time per iteration jumps at step K in the Megatron log lines "
            "and tqdm's it/s falls; exit code 0.",
            expect_success=True,
            page="the job finished, but someone says its iterations got slower",
        ),
        DrillSpec(
            "loss_spike",
            "loss_spike",
            "rank 0 gets one corrupted batch (inputs x1e3) at step K; loss spikes then recovers",
            "a one-step loss spike (and grad-norm spike) in the Megatron log lines, followed by "
            "recovery; exit code 0.",
            expect_success=True,
            page="the job finished; someone noticed something odd on the loss curve",
        ),
        DrillSpec(
            "unseeded_split",
            "timeout",
            "ranks split the data with unseeded RNGs; the short rank's checkpoint all_gather times out",
            "ranks with different batch counts: rank 1 runs out of data first and enters the checkpoint "
            "all_gather (own gloo group, 5 s timeout) while rank 0 still trains; rank 1 times out at save.",
            pg_timeout=60.0,
            page="the job stopped before its last step; torchrun says it failed",
        ),
        DrillSpec(
            "cuda_assert",
            "gpu_crash",
            "rank 1 gets a sample whose label id is past the model's classes at step K (CUDA GPU)",
            "a device-side assert on a real GPU: the CUDA kernel's `Assertion ... failed.` lines and "
            "`CUDA error: device-side assert triggered` on rank 1, torchrun's report naming rank 1, "
            "and rank 0 killed by torchrun while it waits in the step's all_reduce.",
            needs_cuda=True,
        ),
        DrillSpec(
            "cuda_oom",
            "gpu_crash",
            "rank 1 asks for twice its GPU's memory in one allocation at step K (CUDA GPU)",
            "a CUDA out-of-memory on a real GPU: torch's `OutOfMemoryError: CUDA out of memory. Tried "
            "to allocate …` with the GPU's capacity on rank 1, torchrun's report naming rank 1.",
            needs_cuda=True,
        ),
        DrillSpec(
            "nccl_watchdog",
            "timeout",
            "at step K a kernel keeps rank 1's CUDA stream busy (rank 0 on one GPU) for six "
            "process-group timeouts, so the all_reduce queued behind it cannot run (NCCL, CUDA GPU)",
            "torch's NCCL watchdog on a real GPU: `Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=…, OpType=ALLREDUCE, …)`, the flight recorder torch dumps itself "
            "(TORCH_NCCL_DUMP_ON_TIMEOUT), the process aborted (SIGABRT) and torchrun's report.",
            pg_timeout=10.0,
            steps=12,
            needs_cuda=True,
        ),
        DrillSpec(
            "nccl_duplicate_gpu",
            "gpu_crash",
            "every rank trains on cuda:0 (no set_device by local rank): two ranks on one GPU "
            "(NCCL, CUDA GPU)",
            "NCCL's own error on a real GPU: `DistBackendError: NCCL error in: …, invalid usage`, "
            "`ncclInvalidUsage`, and its `Last error: Duplicate GPU detected : rank 1 and rank 0 "
            "both on CUDA device …` on both ranks at their first collective.",
            needs_cuda=True,
        ),
        DrillSpec(
            "cuda_illegal_address",
            "gpu_crash",
            "at step K a custom (Triton) kernel on rank 1 (rank 0 on one GPU) writes far outside "
            "its buffer (NCCL, CUDA GPU)",
            "an illegal memory access on a real GPU: `torch.AcceleratorError: CUDA error: an illegal "
            "memory access was encountered` at the next synchronisation, the NCCL watchdog thread "
            "terminating with the same error, SIGABRT, torchrun's report.",
            steps=12,
            needs_cuda=True,
        ),
    )
}

DRILLS: dict[str, str] = {name: spec.description for name, spec in SPECS.items()}


@dataclass
class _Proc:
    pid: int
    start: str  # /proc/<pid>/stat starttime, guards against pid reuse


def _children(ppid: int) -> list[_Proc]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = proc_stat(int(entry.name))
        if fields and int(fields[1]) == ppid:
            out.append(_Proc(int(entry.name), fields[19]))
    return out


def _alive(proc: _Proc) -> bool:
    fields = proc_stat(proc.pid)
    return bool(fields) and fields[19] == proc.start and fields[0] != "Z"


def _rank_of(pid: int) -> int | None:
    rank = environ(pid).get("RANK", "")
    return int(rank) if rank.isdigit() else None


def _signal(pid: int, sig: int, group: bool = False) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig) if group else os.kill(pid, sig)


class _Supervisor:
    """Owns torchrun and its workers; guarantees they are gone on exit."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.workers: dict[int, _Proc] = {}

    def refresh(self) -> list[_Proc]:
        for child in _children(self.proc.pid):
            self.workers.setdefault(child.pid, child)
        return [w for w in self.workers.values() if _alive(w)]

    def terminate(self) -> None:
        if self.proc.poll() is None:
            self.refresh()
            _signal(self.proc.pid, signal.SIGTERM, group=True)
            try:
                self.proc.wait(TERM_GRACE_S)
            except subprocess.TimeoutExpired:
                _signal(self.proc.pid, signal.SIGKILL, group=True)
                self.proc.wait()
        # Workers run in their own sessions (torchrun uses start_new_session).
        left = [w for w in self.workers.values() if _alive(w)]
        for w in left:
            _signal(w.pid, signal.SIGTERM, group=True)
        deadline = time.monotonic() + WORKER_GRACE_S
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = [w for w in left if _alive(w)]
        for w in left:
            _signal(w.pid, signal.SIGKILL, group=True)
            _signal(w.pid, signal.SIGKILL)


class _Interrupted(KeyboardInterrupt):
    """Raised in the main thread when the runner receives SIGTERM/SIGHUP."""


@contextmanager
def _interruptible() -> Iterator[None]:
    """Turn SIGTERM/SIGHUP into an exception so ``finally`` blocks clean up."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise _Interrupted(f"received {signal.Signals(signum).name}")

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _find_python(python: str | os.PathLike[str] | None) -> str:
    chosen = python or os.environ.get("TRAINDOC_DRILL_PYTHON")
    if chosen:
        return str(chosen)
    if importlib.util.find_spec("torch") is None:
        raise DrillError("drills need torch: install it or set TRAINDOC_DRILL_PYTHON")
    return sys.executable


def _launcher(python: str) -> list[str]:
    torchrun = Path(python).parent / "torchrun"
    return [str(torchrun)] if torchrun.exists() else [python, "-m", "torch.distributed.run"]


def _pyspy(python: str) -> str | None:
    sibling = Path(python).parent / "py-spy"
    return str(sibling) if sibling.exists() else shutil.which("py-spy")


_CUDA_PROBE = (
    "import torch\n"
    "for i in range(torch.cuda.device_count()): print(torch.cuda.get_device_name(i))\n"
)


def cuda_devices(python: str) -> list[str]:
    """Names of the CUDA GPUs that ``python``'s torch sees (none where it sees none)."""
    res = subprocess.run([python, "-c", _CUDA_PROBE], capture_output=True, text=True,
                         timeout=120, check=False)
    return [ln.strip() for ln in res.stdout.splitlines() if ln.strip()] if res.returncode == 0 else []


def job_command(name: str, out: Path, python: str, nproc: int, steps: int, fault_step: int,
                pg_timeout: float) -> list[str]:
    """The torchrun command line of drill ``name`` writing its bundle into ``out`` (a live
    drill appends its own worker options)."""
    return [
        *_launcher(python),
        "--standalone",
        "--nnodes=1",
        f"--nproc-per-node={nproc}",
        f"--log-dir={out / 'logs'}",
        "--redirects=3",
        "--tee=3",
        str(WORKER_SCRIPT),
        f"--drill={name}",
        f"--steps={steps}",
        f"--fault-step={fault_step}",
        f"--fr-dir={out / 'fr'}",
        f"--pg-timeout={pg_timeout:g}",
        f"--save-timeout={SPECS[name].save_timeout:g}",
    ]


def _clear_bundle(out: Path) -> None:
    """Remove an earlier drill's bundle from ``out``; a folder that holds anything a drill
    does not write (a project, a home) is refused before anything is removed."""
    try:
        foreign = sorted(p.name for p in out.iterdir()
                         if p.name not in BUNDLE_ENTRIES + LIVE_ENTRIES)
    except OSError as e:
        raise DrillOutputError(f"cannot read the bundle folder {out}: {e.strerror or e}") from None
    if foreign:
        shown = ", ".join(foreign[:3]) + (", …" if len(foreign) > 3 else "")
        raise DrillOutputError(f"{out} holds files a drill did not write ({shown}); give a new or "
                         "empty folder (-o DIR), or an earlier drill's bundle")
    for name in BUNDLE_ENTRIES:
        p = out / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


def _log_bytes(out: Path) -> int:
    return (
        sum(p.stat().st_size for p in out.joinpath("logs").rglob("*.log"))
        + (out / "torchrun.log").stat().st_size
    )


def _capture_hang(out: Path, sup: _Supervisor, python: str, notes: list[str]) -> dict[int, str]:
    """py-spy every worker, then ask each for a flight-recorder dump (SIGUSR1)."""
    workers = sup.refresh()
    leaves: dict[int, str] = {}
    pyspy = _pyspy(python)
    host = socket.gethostname()
    if pyspy is None:
        notes.append("py-spy not found: no stack dumps taken")
    else:
        (out / "pyspy").mkdir(exist_ok=True)
        for w in workers:
            res = subprocess.run(
                [pyspy, "dump", "--pid", str(w.pid)],
                capture_output=True,
                text=True,
                timeout=PYSPY_TIMEOUT_S,
                check=False,
            )
            text = res.stdout + (f"\n[py-spy stderr]\n{res.stderr}" if res.returncode else "")
            (out / "pyspy" / f"trace-{host}-{w.pid}.out").write_text(text)
            m = _PYSPY_MAIN_RE.search(res.stdout)
            rank = _rank_of(w.pid)
            leaf = _program_leaf(m.group(1)) if m else None
            if leaf and rank is not None:
                leaves[rank] = leaf
    fr_dir = out / "fr"
    asked = time.time()
    for w in workers:
        _signal(w.pid, signal.SIGUSR1)
    deadline = time.monotonic() + FR_WAIT_S
    while time.monotonic() < deadline:
        fresh = [p for p in fr_dir.glob("rank*.pkl") if p.stat().st_mtime >= asked - 1]
        if len(fresh) >= len(workers):
            break
        time.sleep(POLL_S)
    return leaves


def _facts(
    spec: DrillSpec, nproc: int, steps: int, k: int, leaves: dict[int, str]
) -> tuple[dict[str, Any], list[str]]:
    fault = min(worker.FAULT_RANK, nproc - 1)
    others = [r for r in range(nproc) if r != fault]
    seq = worker.collective_plan(k)
    notes: list[str] = []
    if spec.name == "timeout":
        facts: dict[str, Any] = {
            "timed_out_ranks": others,
            "op_type": "gloo:all_reduce",
            "seq_num": seq["grad_allreduce_at_fault"],
            "lagging_ranks": [fault],
            "pattern": "straggler",
        }
        notes.append(
            f"rank {fault} slept through the gradient all_reduce of iteration {k} (default process group '0')"
        )
    elif spec.name == "desync":
        ops = {str(r): "gloo:all_reduce" for r in others} | {str(fault): "gloo:all_gather"}
        facts = {
            "first_mismatch": {
                "process_group": "0 (default_pg)",  # id (desc), as traindoc names groups
                "seq_num": seq["grad_allreduce_at_fault"],
                "kind": "op",
                "ops": dict(sorted(ops.items(), key=lambda kv: int(kv[0]))),
                "ranks": [fault],
            }
        }
        notes.append(
            f"iteration {k}; process group '0' is desc 'default_pg'; gloo turns the mismatch into timeouts"
        )
    elif spec.name == "crash":
        facts = {"failed_ranks": [fault], "error_kind": "signal"}
    elif spec.name == "cuda_assert":
        facts = {"failed_ranks": [fault], "error_kind": "cuda_error"}
        notes.append(f"rank {fault}'s batch at iteration {k} holds label id "
                     f"{worker.CLASSES + 3} for a model of {worker.CLASSES} classes")
    elif spec.name == "cuda_oom":
        facts = {"failed_ranks": [fault], "error_kind": "oom"}
        notes.append(f"rank {fault} asked for {worker.OOM_FACTOR}x its GPU's memory at "
                     f"iteration {k}")
        notes.append(f"rank {fault} sent itself SIGKILL at iteration {k}, before its all_reduce")
    elif spec.name == "nccl_watchdog":
        facts = {
            "timed_out_ranks": list(range(nproc)),
            "op_type": "ALLREDUCE",
            "seq_num": seq["grad_allreduce_at_fault"],
            "last_step": k - 1,
        }
        notes.append(f"rank {fault}'s stream slept {worker.WATCHDOG_SLEEP_TIMEOUTS} timeouts "
                     f"before the gradient all_reduce of iteration {k}; every rank's watchdog "
                     "times that all_reduce out")
    elif spec.name == "nccl_duplicate_gpu":
        facts = {"failed_ranks": list(range(nproc)), "error_kind": "nccl_error"}
        notes.append("every rank on cuda:0; NCCL refuses the communicator at the first "
                     "collective (the parameter broadcast)")
    elif spec.name == "cuda_illegal_address":
        facts = {"failed_ranks": [fault], "error_kind": "cuda_error", "last_iteration": k - 1}
        notes.append(f"rank {fault}'s kernel stores 2**40 float32 elements past a one-element "
                     f"buffer at iteration {k}")
    elif spec.name == "hang":
        facts = {"outlier_members": [fault]}
        if fault in leaves:
            facts["outlier_leaf"] = leaves[fault]
        majority = Counter(v for r, v in leaves.items() if r != fault).most_common(1)
        if majority:
            facts["majority_leaf"] = majority[0][0]
        notes.append(
            f"after iteration {k} rank {fault} waits on an eval loader queue forever; the others wait in "
            f"broadcast (src={fault}, seq {seq['eval_broadcast']}); leaves are the innermost MainThread "
            "frames outside the stdlib's generic waits (threading, queue)"
        )
    elif spec.name == "slow_rank":
        facts = {"change_iteration": k, "suspect_ranks": [fault]}
        notes.append(f"rank {fault} sleeps an extra 250 ms per step from iteration {k} on")
    elif spec.name == "loss_spike":
        facts = {"spikes": [{"start_iteration": k}]}
        notes.append(f"rank 0's micro-batch at iteration {k} was scaled by 1e3")
    else:  # unseeded_split
        batches = {r: worker.split_batches(r, nproc, steps) for r in range(nproc)}
        short = min(batches.values())
        facts = {
            "timed_out_ranks": [r for r, b in batches.items() if b == short],
            "op_type": "gloo:all_gather",
            "seq_num": 1,
            "lagging_ranks": [r for r, b in batches.items() if b != short],
            "pattern": "straggler",
        }
        notes.append(
            f"batches per rank {batches}; seq_num 1 is on the checkpoint process group '1' "
            f"(save timeout {spec.save_timeout:g} s), not the default group"
        )
    return facts, notes


def run(
    name: str,
    out_dir: str | os.PathLike[str],
    *,
    steps: int | None = None,
    nproc: int = 2,
    python: str | os.PathLike[str] | None = None,
    timeout_s: float = 120.0,
) -> Path:
    """Run drill ``name`` and write its bundle into ``out_dir``; return ``out_dir``."""
    if name not in SPECS:
        raise DrillError(f"unknown drill {name!r}; choose from {', '.join(SPECS)}")
    if nproc < 2:
        raise DrillError("drills need at least 2 processes")
    spec = SPECS[name]
    steps = steps or spec.steps
    k = spec.fault_step(steps)
    if (
        spec.name == "unseeded_split"
        and len({worker.split_batches(r, nproc, steps) for r in range(nproc)}) < 2
    ):
        raise DrillError(
            f"unseeded_split: with {steps} steps all ranks get the same number of batches"
        )
    py = _find_python(python)
    gpus = cuda_devices(py) if spec.needs_cuda else []
    if spec.needs_cuda and not gpus:
        raise DrillError(f"drill {name} trains on a CUDA GPU and torch ({py}) sees none")
    if name in worker.NCCL_DRILLS and name != "nccl_duplicate_gpu":
        nproc = min(nproc, len(gpus))  # NCCL: one GPU a rank
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    _clear_bundle(out)
    (out / "fr").mkdir()
    cmd = job_command(name, out, py, nproc, steps, k, spec.pg_timeout)
    env = dict(
        os.environ, TORCH_FR_BUFFER_SIZE=FR_BUFFER_SIZE, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1"
    )
    env.pop("TORCHELASTIC_ERROR_FILE", None)
    if name in worker.NCCL_DRILLS:
        # torch dumps its own flight recorder on a watchdog timeout, as a job would be set up
        env.update(TORCH_NCCL_DUMP_ON_TIMEOUT="1", NCCL_DEBUG="WARN",
                   TORCH_FR_DUMP_TEMP_FILE=str(out / "fr" / "nccl_trace_rank_"),
                   TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC="30")
    notes: list[str] = []
    leaves: dict[int, str] = {}
    timed_out = False
    t0 = time.monotonic()
    with _interruptible(), open(out / "torchrun.log", "wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=out,
            start_new_session=True,
        )
        sup = _Supervisor(proc)
        try:
            last_size, last_change = -1, time.monotonic()
            while proc.poll() is None:
                sup.refresh()
                now = time.monotonic()
                if now - t0 > timeout_s:
                    timed_out = True
                    notes.append(f"runner deadline of {timeout_s:g} s hit: processes killed")
                    break
                if spec.name == "hang":
                    size = _log_bytes(out)
                    if size != last_size:
                        last_size, last_change = size, now
                    elif now - last_change > STALL_S and _ITERATION_RE.search(
                        (out / "torchrun.log").read_text("utf-8", "replace")
                    ):
                        leaves = _capture_hang(out, sup, py, notes)
                        break
                time.sleep(POLL_S)
        finally:
            sup.terminate()
    duration = time.monotonic() - t0
    facts, fact_notes = _facts(spec, nproc, steps, k, leaves)
    if spec.name == "hang" and not leaves:
        notes.append("no py-spy leaves captured")
    record = {
        "drill": name,
        "class": spec.cls,
        "facts": facts,
        "notes": "; ".join([*fact_notes, *notes]),
        "run": {
            "command": cmd,
            "returncode": proc.returncode,
            "expected_success": spec.expect_success,
            "duration_s": round(duration, 1),
            "nproc": nproc,
            "steps": steps,
            "fault_step": k,
            "fault_rank": min(worker.FAULT_RANK, nproc - 1),
            "timed_out": timed_out,
        },
    }
    if gpus:
        record["run"]["gpus"] = gpus
    files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    record["artifacts"] = sorted(files | {"drill.json"})
    (out / "drill.json").write_text(json.dumps(record, indent=2) + "\n")
    return out


def sample_dir(name: str, data_root: Path = DATA_ROOT) -> Path:
    """Where ``--regenerate-samples`` puts drill ``name``'s bundle."""
    return data_root / SPECS[name].cls / f"drill_{name}"


def regenerate_samples(data_root: Path = DATA_ROOT, names: list[str] | None = None) -> list[Path]:
    """Re-run every drill into ``<data_root>/<class>/drill_<name>/`` with a README."""
    made = []
    for name in names or [n for n, s in SPECS.items() if not s.needs_cuda]:
        target = sample_dir(name, data_root)
        if target.exists():
            shutil.rmtree(target)
        run(name, target)
        spec = SPECS[name]
        gpus = json.loads((target / "drill.json").read_text())["run"].get("gpus")
        run_rec = json.loads((target / "drill.json").read_text())["run"]
        comm = "NCCL" if name in worker.NCCL_DRILLS else "gloo"
        job = (f"{run_rec['nproc']}-process torchrun job whose ranks train on one {gpus[0]} "
               f"(collectives on {comm})" if gpus else "2-process CPU/gloo torchrun job")
        rel = target.relative_to(REPO_ROOT) if target.is_relative_to(REPO_ROOT) else target
        (target / "README.md").write_text(
            f"# drill `{name}` ({spec.cls})\n\n"
            f"Injected fault: {spec.description}.\n\n"
            f"What it shows: {spec.shows}\n\n"
            f"Real artifacts from a {job}: `torchrun.log` (torchrun's stdout+stderr "
            "with the workers tee'd in), `logs/` (per-rank files as torchrun wrote them), `fr/rank<N>.pkl` "
            "(flight-recorder pickles; `fr/nccl_trace_rank_<N>` where torch dumped NCCL's itself), "
            "`pyspy/` where taken; `drill.json` holds the injected truth.\n\n"
            "Made with:\n\n"
            f"```\nPYTHONPATH=lib python -m traindoc.drills {name} --out {rel}\n```\n\n"
            + (f"(on a machine with a CUDA GPU: `PYTHONPATH=lib python -m traindoc.drills {name} "
               "--regenerate-samples`)\n" if spec.needs_cuda else
               "(all samples: `PYTHONPATH=lib python -m traindoc.drills --regenerate-samples`)\n")
        )
        made.append(target)
    return made
