"""Regenerate this sample: a real 2-process CPU/gloo torchrun job that hangs because, at one
step, rank 1 calls all_gather while rank 0 calls all_reduce (the same collective sequence
number). The process-group timeout is 30 min, so nothing times out: the job just sits there.
While it hangs, this script takes py-spy dumps of both workers (files named
``trace-<host>-rank<N>-<pid>.out``, the rank read from the worker's environment) and asks each
worker for its flight-recorder dump (SIGUSR1), then stops the job.

    PYTHONPATH=lib python data/deadlock/gloo_desync_hang/make.py [--py-spy PATH]

Needs torch, and py-spy with ptrace rights (root). ``expected.json`` is written from the
injected plan (which step, which ops), not read back from the dumps.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
NPROC = 2
STEPS = 12
FAULT_STEP = 8
FAULT_RANK = 1
MARKER = "calling the step's collective"


def plan_seq(step: int) -> int:
    """collective_seq_id of step ``step``'s collective: 1 is the initial parameter broadcast,
    1 + s the gradient collective of step s."""
    return 1 + step


# -- the worker (run by torchrun) ------------------------------------------------------------------
def worker(fr_dir: Path) -> None:
    """Tiny data-parallel loop; at FAULT_STEP rank 1 all-gathers where the others all-reduce."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    import threading

    import torch
    import torch.distributed as dist
    from torch._C._distributed_c10d import _dump_fr_trace

    rank = int(os.environ["RANK"])

    def dump_on_signal() -> None:
        while True:
            signal.sigwait({signal.SIGUSR1})
            data = _dump_fr_trace()
            tmp = fr_dir / f".rank{rank}.tmp"
            tmp.write_bytes(data)
            os.replace(tmp, fr_dir / f"rank{rank}.pkl")
            print(f"[rank{rank}] dumped flight recorder: {len(data)} bytes", file=sys.stderr,
                  flush=True)

    threading.Thread(target=dump_on_signal, name="fr-dump", daemon=True).start()
    dist.init_process_group("gloo", timeout=timedelta(minutes=30))
    world = dist.get_world_size()
    torch.manual_seed(rank)
    model = torch.nn.Linear(16, 4)
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    dist.broadcast(flat, src=0)  # collective 1
    gen = torch.Generator().manual_seed(100 + rank)
    for step in range(1, STEPS + 1):
        x = torch.randn(8, 16, generator=gen)
        loss = model(x).pow(2).mean()
        model.zero_grad()
        loss.backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters()])
        if step == FAULT_STEP:
            print(f"[rank{rank}] step {step}: {MARKER}", flush=True)
            if rank == FAULT_RANK:  # the bug: a rank-dependent branch picks another collective
                out = [torch.empty_like(grads) for _ in range(world)]
                dist.all_gather(out, grads)
            else:
                dist.all_reduce(grads)
        else:
            dist.all_reduce(grads)
        print(f"[rank{rank}] step {step} loss {float(loss):.4f}", flush=True)
    dist.destroy_process_group()


# -- the runner ----------------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _rank_of(pid: int) -> int | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for item in env:
        if item.startswith(b"RANK="):
            return int(item[5:])
    return None


def run(pyspy: str) -> None:
    for sub in ("logs", "fr", "pyspy"):
        shutil.rmtree(HERE / sub, ignore_errors=True)
    (HERE / "fr").mkdir()
    (HERE / "pyspy").mkdir()
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    env = dict(os.environ, TORCH_FR_BUFFER_SIZE="2000", PYTHONUNBUFFERED="1")
    log = open(HERE / "torchrun.log", "w")  # noqa: SIM115
    job = subprocess.Popen(
        [torchrun, "--standalone", "--nnodes=1", f"--nproc-per-node={NPROC}",
         f"--log-dir={HERE / 'logs'}", "--redirects=3", "--tee=3", str(Path(__file__)),
         "--worker", f"--fr-dir={HERE / 'fr'}"],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if (HERE / "torchrun.log").read_text().count(MARKER) >= NPROC:
                break
            if job.poll() is not None:
                raise RuntimeError("the job ended before it hung; see torchrun.log")
            time.sleep(0.2)
        else:
            raise RuntimeError("the job never reached the fault step")
        time.sleep(3.0)  # let both ranks block inside their collectives
        host = socket.gethostname().split(".")[0]
        workers = [c for c in _children(job.pid) if b"--worker" in Path(
            f"/proc/{c}/cmdline").read_bytes()]
        for pid in workers:
            rank = _rank_of(pid)
            res = subprocess.run([pyspy, "dump", "--pid", str(pid)], capture_output=True,
                                 text=True, timeout=120, check=False)
            (HERE / "pyspy" / f"trace-{host}-rank{rank}-{pid}.out").write_text(
                res.stdout + res.stderr)
        for pid in workers:
            os.kill(pid, signal.SIGUSR1)
        deadline = time.monotonic() + 30
        while len(list((HERE / "fr").glob("rank*.pkl"))) < len(workers):
            if time.monotonic() > deadline:
                raise RuntimeError("flight-recorder dumps did not appear")
            time.sleep(0.2)
        time.sleep(0.5)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGTERM)
            try:
                job.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(job.pid, signal.SIGKILL)
                job.wait()
        log.close()
    seq = plan_seq(FAULT_STEP)
    others = {str(r): "gloo:all_reduce" for r in range(NPROC) if r != FAULT_RANK}
    expected = {
        "runbook": "deadlock",
        "facts": {
            "processes_seen": NPROC,
            "outlier_members": [],  # a 1:1 split names no one; the verdict names both ranks
            "first_mismatch": {
                "process_group": "0 (default_pg)",
                "seq_num": seq,
                "kind": "op",
                "ops": dict(sorted({**others, str(FAULT_RANK): "gloo:all_gather"}.items())),
            },
        },
        "notes": f"step {FAULT_STEP}: rank {FAULT_RANK} all_gather, the others all_reduce, "
                 f"collective_seq_id {seq}; pg timeout 30 min, so no timeout fired",
    }
    (HERE / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--fr-dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--py-spy", default=shutil.which("py-spy") or str(
        Path(sys.executable).with_name("py-spy")))
    a = ap.parse_args()
    if a.worker:
        worker(a.fr_dir)
    else:
        run(a.py_spy)


if __name__ == "__main__":
    main()
