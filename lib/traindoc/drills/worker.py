"""Training script that ``torchrun`` launches for a traindoc drill.

A tiny MLP trains on synthetic data with gloo and a manual all-reduce of the
gradients; one fault is injected at step ``--fault-step``.  The last rank logs
Megatron-style iteration lines, rank 0 shows a tqdm bar.

torch is imported inside :func:`main` only, after the termination signals are
blocked, so the module itself imports without torch (the runner reads
:func:`split_batches` from it) and no thread torch starts can take a SIGTERM
before the flight-recorder signal thread is in place.
"""

from __future__ import annotations

import argparse
import os
import queue
import random
import signal
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

FAULT_RANK = 1
MICRO_BATCH = 4
IN_DIM, HIDDEN, CLASSES = 32, 64, 16
LR = 1e-2
# Signals handled by the flight-recorder thread: USR1 dumps, the others dump and exit.
DUMP_SIGNAL = signal.SIGUSR1
EXIT_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
HANDLED_SIGNALS = (DUMP_SIGNAL, *EXIT_SIGNALS)
DRILL_NAMES = (
    "timeout",
    "desync",
    "crash",
    "hang",
    "slow_rank",
    "loss_spike",
    "unseeded_split",
    "cuda_assert",
    "cuda_oom",
    "nccl_watchdog",
    "nccl_duplicate_gpu",
    "cuda_illegal_address",
)
# Drills whose collectives run on NCCL, from GPU memory: the NCCL watchdog, NCCL's own errors
# and the flight recorder torch dumps itself on a timeout (TORCH_NCCL_DUMP_ON_TIMEOUT).
NCCL_DRILLS = ("nccl_watchdog", "nccl_duplicate_gpu", "cuda_illegal_address")
# Drills that train on a CUDA GPU (every rank on ``cuda:<local rank % GPUs>``; gloo carries
# the collectives, from host memory, unless NCCL_DRILLS says NCCL), so the fault is the GPU's
# own error text.
CUDA_DRILLS = ("cuda_assert", "cuda_oom", *NCCL_DRILLS)
# nccl_watchdog: the fault rank's stream is kept busy this many process-group timeouts before
# its all_reduce (torch.cuda._sleep counts GPU cycles; 2 GHz is about a Hopper's SM clock,
# a slower clock only sleeps longer).
WATCHDOG_SLEEP_TIMEOUTS = 6
SLEEP_CYCLES_PER_S = 2_000_000_000
# cuda_oom: the fault rank asks for this many times the GPU's memory in one allocation.
OOM_FACTOR = 2
# Stands in for the OS entropy an unseeded RNG draws at start-up: fixed per rank
# so the drill is reproducible, but different per rank, exactly like the bug.
_SIMULATED_OS_ENTROPY = (0x5EED0, 0x5EED1, 0x5EED2, 0x5EED3, 0x5EED4, 0x5EED5, 0x5EED6, 0x5EED7)
SPLIT_DROP_FRACTION = 0.2


def split_batches(rank: int, world_size: int, steps: int) -> int:
    """Number of training batches ``rank`` gets in the ``unseeded_split`` drill.

    Every rank filters its shard with its own (unseeded) RNG, so the ranks end up
    with different numbers of batches.  Pure Python: the runner calls this too.
    """
    samples = steps * MICRO_BATCH
    rng = random.Random(_SIMULATED_OS_ENTROPY[rank % len(_SIMULATED_OS_ENTROPY)])
    kept = sum(1 for _ in range(samples) if rng.random() >= SPLIT_DROP_FRACTION)
    return kept // MICRO_BATCH


def collective_plan(fault_step: int) -> dict[str, int]:
    """Sequence numbers of the drill's collectives on the default process group.

    Collective 1 is the initial parameter broadcast, collective ``1 + s`` is the
    gradient all-reduce of step ``s``; ``hang`` adds the eval broadcast right after
    the fault step's all-reduce.
    """
    return {"grad_allreduce_at_fault": 1 + fault_step, "eval_broadcast": 2 + fault_step}


class FlightRecorder:
    """Writes this rank's flight-recorder dump to ``<fr_dir>/rank<N>.pkl``, or to
    ``<prefix><N>`` (torch's ``TORCH_FR_DUMP_TEMP_FILE`` convention) when a prefix is given."""

    def __init__(self, fr_dir: Path, rank: int, prefix: str | None = None,
                 nccl: bool = False) -> None:
        self.path = Path(f"{prefix}{rank}") if prefix else fr_dir / f"rank{rank}.pkl"
        self.rank = rank
        self.nccl = nccl  # NCCL's recorder, not the CPU (gloo) one
        self._lock = threading.Lock()

    def dump(self, reason: str) -> None:
        """Dump the flight recorder (raw pickle bytes from torch), atomically."""
        from torch._C import _distributed_c10d as c10d

        with self._lock:
            try:
                # a torch built without NCCL has no _dump_nccl_trace
                dump = getattr(c10d, "_dump_nccl_trace", None) if self.nccl else None
                data = (dump or c10d._dump_fr_trace)()
            except Exception as exc:  # a failed dump must not mask the fault
                _err(f"[rank{self.rank}] flight recorder dump failed ({reason}): {exc!r}")
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, self.path)
            _err(
                f"[rank{self.rank}] dumped flight recorder ({reason}): {len(data)} bytes -> {self.path}"
            )


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _signal_loop(recorder: FlightRecorder) -> None:
    """Wait for the blocked signals in a thread; works while main is stuck in C++."""
    while True:
        sig = signal.sigwait(HANDLED_SIGNALS)
        name = signal.Signals(sig).name
        recorder.dump(f"on {name}")
        if sig != DUMP_SIGNAL:
            _err(f"[rank{recorder.rank}] received {name}, exiting")
            sys.stdout.flush()
            os._exit(128 + sig)


def _exit_at(deadline: float, rank: int) -> None:
    """Exit the whole process at ``deadline`` (a live drill's own time limit)."""
    while (left := deadline - time.time()) > 0:
        time.sleep(min(left, 1.0))
    _err(f"[rank{rank}] drill time limit reached, exiting")
    os._exit(124)


class _Progress:
    """Minimal tqdm stand-in used when tqdm is not installed."""

    def __init__(self, total: int, desc: str) -> None:
        self.total, self.desc, self.n, self.t0 = total, desc, 0, time.monotonic()

    def update(self, n: int = 1) -> None:
        self.n += n
        frac = self.n / max(self.total, 1)
        elapsed = time.monotonic() - self.t0
        rate = self.n / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.n) / rate if rate else 0.0
        bar = ("#" * int(frac * 10)).ljust(10)
        sys.stderr.write(
            f"\r{self.desc}: {frac:4.0%}|{bar}| {self.n}/{self.total} "
            f"[{_mmss(elapsed)}<{_mmss(left)}, {rate:5.2f}it/s]"
        )
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


def _mmss(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m:02d}:{s:02d}"


def _progress(total: int) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:
        return _Progress(total, "Train")
    return tqdm(total=total, desc="Train", ascii=True, file=sys.stderr, mininterval=0)


def megatron_line(
    iteration: int,
    total: int,
    consumed: int,
    ms: float,
    lr: float,
    gbs: int,
    loss: float,
    grad_norm: float,
    tflops: float,
) -> str:
    """One Megatron-style iteration log line."""
    sps = gbs / (ms / 1000.0) if ms > 0 else 0.0
    return (
        f" iteration {iteration:8d}/{total:8d} |"
        f" consumed samples: {consumed:10d} |"
        f" elapsed time per iteration (ms): {ms:.1f} |"
        f" learning rate: {lr:.3E} |"
        f" global batch size: {gbs:5d} |"
        f" lm loss: {loss:.6E} |"
        f" grad norm: {grad_norm:.3f} |"
        f" number of skipped iterations: {0:3d} |"
        f" number of nan iterations: {0:3d} |"
        f" samples per second: {sps:.3f} |"
        f" TFLOPs: {tflops:.2f} |"
    )


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--drill", required=True, choices=DRILL_NAMES)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--fault-step", type=int, default=20)
    p.add_argument("--fr-dir", type=Path, required=True)
    p.add_argument("--pg-timeout", type=float, default=5.0, help="seconds")
    p.add_argument("--save-timeout", type=float, default=5.0, help="checkpoint group, seconds")
    p.add_argument(
        "--step-time", type=float, default=0.05, help="simulated compute per step, seconds"
    )
    p.add_argument(
        "--slow-time", type=float, default=0.25, help="slow_rank: extra seconds per step"
    )
    p.add_argument("--fr-prefix", default=None,
                   help="dump to <prefix><rank> instead of <fr-dir>/rank<N>.pkl (live drills)")
    p.add_argument("--worker-socket", default=None,
                   help="serve torch's worker server (flight recorder, stacks) on "
                        "<prefix><rank>.sock, as torch's control_plane.worker_main does")
    p.add_argument("--deadline", type=float, default=None,
                   help="epoch seconds: exit (124) at this time whatever the job is doing")
    return p.parse_args(argv)


class _Trainer:
    """The drill's training loop; one instance per rank."""

    def __init__(self, args: argparse.Namespace, recorder: FlightRecorder) -> None:
        import torch
        import torch.distributed as dist

        self.torch, self.dist, self.args, self.fr = torch, dist, args, recorder
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()
        self.device = drill_device(torch, args.drill, self.rank)
        # NCCL reduces GPU memory; gloo reduces host memory.
        self.comm_device = self.device if args.drill in NCCL_DRILLS else torch.device("cpu")
        # The fault rank; a one-GPU NCCL drill has rank 0 alone.
        self.fault = min(FAULT_RANK, self.world - 1)
        self.last = self.rank == self.world - 1
        self.gbs = MICRO_BATCH * self.world
        torch.manual_seed(1234 + self.rank)  # differs on purpose: the broadcast syncs it
        self.model = torch.nn.Sequential(
            torch.nn.Linear(IN_DIM, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES)
        ).to(self.device)
        self.params = list(self.model.parameters())
        self.opt = torch.optim.Adam(self.params, lr=LR)
        gen = torch.Generator().manual_seed(0)
        self.teacher = torch.randn(IN_DIM, CLASSES, generator=gen)
        self.data_gen = torch.Generator().manual_seed(100 + self.rank)
        n = sum(p.numel() for p in self.params)
        self.flops_per_step = 6 * n * self.gbs
        self.ckpt_group: Any = None

    def batch(self) -> tuple[Any, Any]:
        x = self.torch.randn(MICRO_BATCH, IN_DIM, generator=self.data_gen)
        y = (x @ self.teacher).argmax(dim=1)
        return x.to(self.device), y.to(self.device)

    def sync_params(self) -> None:
        flat = self.torch.cat([p.detach().flatten() for p in self.params]).to(self.comm_device)
        self.dist.broadcast(flat, src=0)
        self._unflatten(flat, grads=False)

    def _unflatten(self, flat: Any, grads: bool) -> None:
        off = 0
        for p in self.params:
            chunk = flat[off : off + p.numel()].view_as(p)
            if grads:
                p.grad.copy_(chunk)
            else:
                p.data.copy_(chunk)
            off += p.numel()

    def train(self, total: int) -> None:
        a, torch = self.args, self.torch
        bar = _progress(total) if self.rank == 0 else None
        for it in range(1, total + 1):
            t0 = time.perf_counter()
            x, y = self.batch()
            if a.drill == "loss_spike" and it == a.fault_step and self.rank == 0:
                x = x * 1e3  # corrupted batch: unnormalised features
            if a.drill == "cuda_assert" and it == a.fault_step and self.rank == FAULT_RANK:
                y[0] = CLASSES + 3  # corrupted sample: a label id the model has no class for
            self.opt.zero_grad(set_to_none=False)
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
            flat = torch.cat([p.grad.flatten() for p in self.params]
                             + [loss.detach().reshape(1)]).to(self.comm_device)
            self.inject_before_allreduce(it)
            if a.drill == "timeout" and it == a.fault_step and self.rank == FAULT_RANK:
                # The bug: eval runs in place of this step's gradient all-reduce.
                time.sleep(a.pg_timeout * 4)
            elif a.drill == "desync" and it == a.fault_step:
                self.mismatched_collective(flat)
            else:
                self.dist.all_reduce(flat)
            flat /= self.world
            self._unflatten(flat[:-1], grads=True)
            grad_norm = float(torch.nn.utils.clip_grad_norm_(self.params, 1.0))
            self.opt.step()
            time.sleep(a.step_time)
            if a.drill == "slow_rank" and it >= a.fault_step and self.rank == FAULT_RANK:
                time.sleep(a.slow_time)
            ms = (time.perf_counter() - t0) * 1000.0
            if self.last:
                tflops = self.flops_per_step / (ms / 1000.0) / 1e12
                line = megatron_line(
                    it, total, it * self.gbs, ms, LR, self.gbs, float(flat[-1]), grad_norm, tflops
                )
                print(line, flush=True)
            if bar is not None:
                bar.update(1)
            if a.drill == "hang" and it == a.fault_step:
                self.evaluate()
        if bar is not None:
            bar.close()

    def inject_before_allreduce(self, it: int) -> None:
        if self.args.drill == "crash" and it == self.args.fault_step and self.rank == FAULT_RANK:
            sys.stdout.flush()
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        if self.args.drill == "cuda_oom" and it == self.args.fault_step and self.rank == FAULT_RANK:
            # e.g. an activation buffer sized for a far longer sequence than the model's
            total = self.torch.cuda.get_device_properties(self.device).total_memory
            self.torch.empty(OOM_FACTOR * total, dtype=self.torch.uint8, device=self.device)
        if self.args.drill == "nccl_watchdog" and it == self.args.fault_step and self.rank == self.fault:
            # e.g. a kernel that spins: the all_reduce queued behind it cannot start
            seconds = WATCHDOG_SLEEP_TIMEOUTS * self.args.pg_timeout
            self.torch.cuda._sleep(int(seconds * SLEEP_CYCLES_PER_S))
        if self.args.drill == "cuda_illegal_address" and it == self.args.fault_step \
                and self.rank == self.fault:
            # a bad index in a custom kernel; torchrun runs this file as a script, beside it
            from oob_kernel import store_out_of_bounds  # type: ignore[import-not-found]

            store_out_of_bounds(self.torch.empty(1, device=self.device))

    def mismatched_collective(self, flat: Any) -> None:
        """desync: rank 1 all-gathers while the others all-reduce the same step."""
        if self.rank != FAULT_RANK:
            self.dist.all_reduce(flat)
            return
        out = [self.torch.empty_like(flat) for _ in range(self.world)]
        work = self.dist.all_gather(out, flat, async_op=True)
        self.fr.dump("after issuing the step's collective")
        work.wait()
        flat.copy_(self.torch.stack(out).sum(dim=0))

    def evaluate(self) -> None:
        """hang: eval batches come from a loader thread; rank 1's loader wedges."""
        torch = self.torch
        batches: queue.Queue[Any] = queue.Queue(maxsize=2)
        stuck = threading.Event()

        def read_eval_shard() -> None:
            if self.rank == FAULT_RANK:
                stuck.wait()  # e.g. a read from a dead NFS mount: never returns
            batches.put(self.batch())

        threading.Thread(target=read_eval_shard, name="eval-loader", daemon=True).start()
        x, y = batches.get()
        with torch.no_grad():
            eval_loss = torch.nn.functional.cross_entropy(self.model(x), y).reshape(1)
        self.dist.broadcast(eval_loss, src=FAULT_RANK)
        if self.last:
            k, value = self.args.fault_step, float(eval_loss)
            print(f" validation loss at iteration {k} | lm loss value: {value:.6E} |", flush=True)

    def save(self) -> None:
        """unseeded_split: gather a checksum of the state on the checkpoint group."""
        torch = self.torch
        state = torch.cat([p.detach().flatten() for p in self.params]).sum().reshape(1)
        out = [torch.empty_like(state) for _ in range(self.world)]
        print(f"[rank{self.rank}] saving checkpoint", flush=True)
        self.dist.all_gather(out, state, group=self.ckpt_group)
        print(f"[rank{self.rank}] checkpoint saved", flush=True)


def drill_device(torch: Any, drill: str, rank: int) -> Any:
    """The device a drill's rank trains on: the CPU, ``cuda:<local rank % GPUs>``, or
    ``cuda:0`` for every rank of ``nccl_duplicate_gpu`` (the fault: no ``set_device`` by
    local rank, so NCCL finds two ranks on one GPU)."""
    if drill not in CUDA_DRILLS:
        return torch.device("cpu")
    if drill == "nccl_duplicate_gpu":
        return torch.device("cuda", 0)
    local = int(os.environ.get("LOCAL_RANK", rank))
    return torch.device("cuda", local % torch.cuda.device_count())


def _run(args: argparse.Namespace) -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED_SIGNALS)
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    recorder = FlightRecorder(args.fr_dir, rank, args.fr_prefix, nccl=args.drill in NCCL_DRILLS)
    threading.Thread(target=_signal_loop, args=(recorder,), name="fr-signals", daemon=True).start()
    # A handler of its own, so /proc/<pid>/status SigCgt shows SIGUSR1 as caught (what
    # `traindoc collect` checks before it asks for a dump); while the signal is blocked the
    # signal thread above takes it, and the handler dumps if it is ever delivered.
    signal.signal(DUMP_SIGNAL, lambda signum, frame: recorder.dump("on SIGUSR1 (handler)"))
    if args.deadline is not None:
        threading.Thread(target=_exit_at, args=(args.deadline, rank), name="drill-deadline",
                         daemon=True).start()
    backend = "gloo"
    if args.drill in NCCL_DRILLS:
        import torch

        torch.cuda.set_device(drill_device(torch, args.drill, rank))
        backend = "nccl"
    dist.init_process_group(backend, timeout=timedelta(seconds=args.pg_timeout))
    if args.worker_socket:
        from torch._C._distributed_c10d import _WorkerServer

        server = _WorkerServer(f"{args.worker_socket}{rank}.sock")  # noqa: F841 (kept alive)
    try:
        trainer = _Trainer(args, recorder)
        total = args.steps
        if args.drill == "unseeded_split":
            # Checkpoint coordination on its own gloo group, as CPU-side checkpointers do.
            trainer.ckpt_group = dist.new_group(
                backend="gloo",
                timeout=timedelta(seconds=args.save_timeout),
                group_desc="checkpoint",
            )
            total = split_batches(rank, trainer.world, args.steps)
            print(f"[rank{rank}] train split: {total * MICRO_BATCH} samples, {total} batches")
        trainer.sync_params()
        trainer.train(total)
        if args.drill == "unseeded_split":
            trainer.save()
    except BaseException:
        recorder.dump("exception handler")
        raise
    if args.drill in ("slow_rank", "loss_spike"):
        recorder.dump("end of training")
    dist.destroy_process_group()


def main(argv: list[str] | None = None) -> None:
    """Entry point; ``@record`` makes torchrun show the traceback in its report."""
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED_SIGNALS)
    from torch.distributed.elastic.multiprocessing.errors import record

    record(_run)(_parse_args(argv))


if __name__ == "__main__":
    main()
