"""Deterministic, realistic inputs for the ingest benchmark (written under ``benchmarks/.cache/``).

- ``mixed_log``: the main log of a 48-node Megatron job (384 ranks) as ``srun -l`` + torchrun
  ``--tee`` write it: ``17: [default1]:`` prefixes, Megatron iteration lines from the last rank,
  timer blocks, loguru lines in ANSI colour, NCCL INFO chatter, Python tracebacks, tqdm
  validation bars redrawn with ``\\r``, checkpoint saves, and at the end every rank's NCCL
  watchdog timeout, c10 abort blocks and torchrun's ChildFailedError reports.
- ``per_rank_files``: one log per rank (``per_rank/rank0007.log``) ending in that rank's timeout.
- ``pyspy_dumps``: one ``py-spy dump`` text file per process (``trace-<host>-<pid>.out``); all
  ranks wait in an all-reduce except a few stuck in an evaluation broadcast.
- ``fr_dumps``: flight-recorder pickles shaped like torch 2.13's ``_dump_fr_trace()`` (NCCL
  shape: a ``pg_config`` naming every process group's ranks, as ``torchfrtrace`` requires; the
  gloo dumps torch 2.13 writes carry an empty ``pg_config`` key and ``torchfrtrace`` raises on
  them), ring buffers aligned on ``record_id``, one rank issuing a different collective last.
- ``torture_log``: small logs for equivalence tests (wrapped lines, ANSI, ``\\r``, prefixes, bad
  bytes, NULs, long lines, a year change, block records cut by other ranks' lines).

Everything derives from ``random.Random(seed)``: the same arguments give the same bytes.
Wordings follow the real sources: Megatron-LM ``training.py`` (``training_log``) and
``timers.py``, torch ``ProcessGroupNCCL.cpp`` (2.5+ ``[PG ID 0 PG GUID 0(default_pg) Rank N]``
tags), torchrun's ``ChildFailedError`` formatter, py-spy 0.4 ``dump``, loguru's default format.
"""

from __future__ import annotations

import gzip
import pickle
import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

NODES = 48
GPUS = 8
RANKS = NODES * GPUS
T0 = datetime(2024, 7, 8, 0, 0, 0)
TRAIN_ITERS = 2_000_000
LOG_INTERVAL = 10  # Megatron --log-interval: an iteration line and timers every 10 steps

TIMERS = ("forward-backward", "forward-compute", "backward-compute", "batch-generator",
          "layernorm-grads-all-reduce", "embedding-grads-all-reduce", "all-grads-sync",
          "params-all-gather", "optimizer-copy-to-main-grad", "optimizer-clip-main-grad",
          "optimizer-count-zeros", "optimizer-inner-step", "optimizer-copy-main-to-model-params",
          "optimizer")

NCCL_INFO = (
    "NCCL INFO Bootstrap : Using ib0:10.{a}.{b}.{c}<0>",
    "NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v8 symbol.",
    "NCCL INFO cudaDriverVersion 12040",
    "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB ib0:10.{a}.{b}.{c}<0>",
    "NCCL INFO Using non-device net plugin version 0",
    "NCCL INFO Using network IB",
    "NCCL INFO comm 0x{h:x} rank {r} nranks 384 cudaDev {g} nvmlDev {g} busId {bus}000 commId 0x{cid:x} - Init START",
    "NCCL INFO Setting affinity for GPU {g} to ffffffff,00000000,ffffffff",
    "NCCL INFO NVLS multicast support is available on dev {g}",
    "NCCL INFO Channel {ch:02d}/32 :    0   1   2   3   4   5   6   7",
    "NCCL INFO Trees [0] {t1}/-1/-1->{r}->{t2} [1] {t1}/-1/-1->{r}->{t2}",
    "NCCL INFO P2P Chunksize set to 524288",
    "NCCL INFO Channel {ch:02d}/0 : {r}[{g}] -> {t2}[{g2}] via P2P/CUMEM/read",
    "NCCL INFO Connected all rings",
    "NCCL INFO Connected all trees",
    "NCCL INFO NCCL_PROTO set by environment to Simple",
    "NCCL INFO comm 0x{h:x} rank {r} nranks 384 cudaDev {g} nvmlDev {g} busId {bus}000 commId 0x{cid:x} - Init COMPLETE",
)

TRACEBACK = (
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.10/dist-packages/urllib3/connectionpool.py", line 536, in _make_request',
    "    response = conn.getresponse()",
    '  File "/usr/local/lib/python3.10/dist-packages/urllib3/connection.py", line 464, in getresponse',
    "    httplib_response = super().getresponse()",
    '  File "/usr/lib/python3.10/http/client.py", line 1375, in getresponse',
    "    response.begin()",
    '  File "/usr/lib/python3.10/ssl.py", line 1303, in recv_into',
    "    return self.read(nbytes, buffer)",
    "TimeoutError: The read operation timed out",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.10/dist-packages/wandb/sdk/lib/retry.py", line 131, in __call__',
    "    result = self._call_fn(*args, **kwargs)",
    "requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='api.wandb.ai', port=443): Read "
    "timed out. (read timeout=20)",
)

C10_FRAMES = (
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f2ecd42a1b6 in /usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)",
    "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x2b4 (0x7f2ece773c74 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x890 (0x7f2ece7757d0 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f2ece7766ed in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so)",
    "frame #4: <unknown function> + 0x145c0 (0x7f2f1b1a95c0 in /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch.so)",
    "frame #5: <unknown function> + 0x94ac3 (0x7f2f1ca94ac3 in /usr/lib/x86_64-linux-gnu/libc.so.6)",
    "frame #6: <unknown function> + 0x126850 (0x7f2f1cb26850 in /usr/lib/x86_64-linux-gnu/libc.so.6)",
)

LOGURU_MODULES = (("data.loader", "__iter__", 88), ("data.shards", "open_shard", 141),
                  ("train.callbacks", "on_step_end", 57), ("utils.profiling", "report", 203))


def srun(rank: int) -> str:
    """The ``srun -l`` + ``torchrun --tee 3`` prefix of a rank's line."""
    return f"{rank // GPUS:2d}: [default{rank % GPUS}]:"


def glog_time(t: datetime, rnd: random.Random) -> str:
    """c10's glog header time: ``708 01:47:23.901930947`` (month unpadded)."""
    return f"{t.month}{t.day:02d} {t:%H:%M:%S}.{rnd.randrange(10**9):09d}"


def iteration_line(it: int, t: datetime, rnd: random.Random, loss: float) -> str:
    """Megatron-LM ``training_log`` (``megatron/training/training.py``) with --log-throughput."""
    ms = 2000 + rnd.random() * 60
    return (f"{srun(RANKS - 1)} [{t:%Y-%m-%d %H:%M:%S}] iteration {it:8d}/{TRAIN_ITERS:8d} | "
            f"consumed samples: {it * 2048:12d} | elapsed time per iteration (ms): {ms:.1f} | "
            f"throughput per GPU (TFLOP/s/GPU): {400 + rnd.random() * 30:.1f} | learning rate: "
            f"{1.5e-4 * (1 - it / TRAIN_ITERS):.6E} | global batch size:  2048 | lm loss: "
            f"{loss:.6E} | loss scale: 1.0 | grad norm: {0.2 + rnd.random() * 0.1:.3f} | "
            "number of skipped iterations:   0 | number of nan iterations:   0 |")


def _nccl_init(rank: int, rnd: random.Random, t: datetime) -> list[str]:
    node, g = divmod(rank, GPUS)
    pre = f"{srun(rank)}node-{node:03d}:{4000 + g}:{4000 + g}"
    out = []
    for i, tmpl in enumerate(NCCL_INFO):
        out.append(f"{pre} [{g}] " + tmpl.format(
            a=node // 200, b=node % 200, c=10 + g, h=0x55d5c8a0 + rank * 16, r=rank, g=g,
            bus=f"{0x1b + g * 0x10:x}", cid=0xd3f1e0ab5c7 + 17, ch=i % 32, t1=(rank + 1) % RANKS,
            t2=(rank - 1) % RANKS, g2=(g + 1) % GPUS))
    out.append(f"[rank{rank}]:[W{glog_time(t, rnd)} reducer.cpp:1400] Warning: "
               "find_unused_parameters=True was specified in DDP constructor, but did not find "
               "any unused parameters in the forward pass. This flag results in an extra "
               "traversal of the autograd graph every iteration,  which can adversely affect "
               "performance.")
    return out


def _loguru(rank: int, t: datetime, rnd: random.Random, it: int, colour: bool = True) -> str:
    """loguru's default format; in colour only where the sink thought it was a terminal."""
    mod, fn, line = LOGURU_MODULES[rnd.randrange(len(LOGURU_MODULES))]
    msg = (f"rank {rank} prefetched batch {it} of shard {rnd.randrange(4096):04d} in "
           f"{rnd.random():.3f}s")
    stamp = f"{t:%Y-%m-%d %H:%M:%S}.{rnd.randrange(1000):03d}"
    if not colour:
        return f"{srun(rank)}{stamp} | INFO     | {mod}:{fn}:{line} - {msg}"
    return (f"{srun(rank)}\x1b[32m{stamp}\x1b[0m | \x1b[1mINFO    \x1b[0m | \x1b[36m{mod}"
            f"\x1b[0m:\x1b[36m{fn}\x1b[0m:\x1b[36m{line}\x1b[0m - \x1b[1m{msg}\x1b[0m")


def _tqdm_bar(rank: int, n: int, rnd: random.Random) -> str:
    parts = [f"{srun(rank)}"]
    blocks = " ▏▎▍▌▋▊▉█"
    for i in range(n + 1):
        frac = i / n
        full = int(frac * 10)
        bar = "█" * full + (blocks[int((frac * 10 - full) * 8)] if full < 10 else "")
        rate = "?it/s" if i == 0 else f"{1.2 + rnd.random():.2f}s/it"
        left = "?" if i == 0 else f"00:{(n - i) * 1:02d}"
        parts.append(f"\rvalidation: {int(frac * 100):3d}%|{bar:<10}| {i}/{n} "
                     f"[00:{i:02d}<{left}, {rate}]")
    return "".join(parts)


def _timers(rank: int) -> list[str]:
    out = [f"{srun(rank)}(min, max) time across ranks (ms):"]
    for name in TIMERS:
        out.append(f"{srun(rank)}    {name} {'.' * (60 - len(name))}: "
                   f"({1000 + len(name) * 7.31:.2f}, {1001 + len(name) * 7.37:.2f})")
    return out


def _failure_tail(rnd: random.Random, t: datetime, seq: int, ranks: range) -> list[str]:
    """Every rank's watchdog timeout, status, teardown and c10 abort block; then torchrun's
    ChildFailedError report per node."""
    out: list[str] = []
    for r in ranks:
        tag = f"[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
        lag = r == 137
        s = seq - 1 if lag else seq
        pre = f"{srun(r)}[rank{r}]:[E{glog_time(t, rnd)} ProcessGroupNCCL.cpp:"
        out.append(f"{pre}632] {tag} Watchdog caught collective operation timeout: WorkNCCL("
                   f"SeqNum={s}, OpType=ALLREDUCE, NumelIn=33554432, NumelOut=33554432, "
                   f"Timeout(ms)=600000) ran for {600000 + rnd.randrange(200)} milliseconds "
                   "before timing out.")
        out.append(f"{pre}2271] {tag} failure detected by watchdog at work sequence id: {s} PG "
                   f"status: last enqueued work: {s}, last completed work: {s - 1}")
        out.append(f"{pre}1904] {tag} Some NCCL operations have failed or timed out. Due to "
                   "the asynchronous nature of CUDA kernels, subsequent GPU operations might "
                   "run on corrupted/incomplete data.")
        out.append(f"{srun(r)}terminate called after throwing an instance of "
                   "'c10::DistBackendError'")
        out.append(f"{srun(r)}  what():  {tag} Process group watchdog thread terminated with "
                   "exception: " + out[-4].split("] ", 2)[-1])
        out.append(f"{srun(r)}Exception raised from checkTimeout at /pytorch/torch/csrc/"
                   "distributed/c10d/ProcessGroupNCCL.cpp:635 (most recent call first):")
        out.extend(f"{srun(r)}{f}" for f in C10_FRAMES)
        out.append("")
    for node in range(NODES):
        out.append(f"{node:2d}: Traceback (most recent call last):")
        out.append(f'{node:2d}:   File "/usr/local/bin/torchrun", line 8, in <module>')
        out.append(f"{node:2d}:     sys.exit(main())")
        out.append(f"{node:2d}: torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ")
        out.append(f"{node:2d}: " + "=" * 60)
        out.append(f"{node:2d}: pretrain_gpt.py FAILED")
        out.append(f"{node:2d}: " + "-" * 60)
        out.append(f"{node:2d}: Failures:")
        out.append(f"{node:2d}:   <NO_OTHER_FAILURES>")
        out.append(f"{node:2d}: " + "-" * 60)
        out.append(f"{node:2d}: Root Cause (first observed failure):")
        out.append(f"{node:2d}: [0]:")
        out.append(f"{node:2d}:   time      : {t + timedelta(seconds=1):%Y-%m-%d_%H:%M:%S}")
        out.append(f"{node:2d}:   host      : node-{node:03d}")
        out.append(f"{node:2d}:   rank      : {node * GPUS} (local_rank: 0)")
        out.append(f"{node:2d}:   exitcode  : -6 (pid: {40000 + node})")
        out.append(f"{node:2d}:   error_file: <N/A>")
        out.append(f"{node:2d}:   traceback : Signal 6 (SIGABRT) received by PID {40000 + node}")
        out.append(f"{node:2d}: " + "=" * 60)
    return out


def mixed_log_lines(size_bytes: int, seed: int = 0) -> Iterator[str]:
    """Lines of the main log, about ``size_bytes`` in all (the failure tail included)."""
    rnd = random.Random(seed)
    t = T0
    written = 0
    for rank in range(RANKS):
        for line in _nccl_init(rank, rnd, t):
            written += len(line) + 1
            yield line
    tail_bytes = 2_400 * RANKS + 900 * NODES
    it = 0
    loss = 10.5
    while written < size_bytes - tail_bytes:
        it += 1
        t += timedelta(milliseconds=2030)
        loss = max(1.7, loss * 0.99995 + (rnd.random() - 0.5) * 0.01)
        batch = []
        if it % LOG_INTERVAL == 0:  # the last rank logs the iteration, then the timers
            batch.append(iteration_line(it, t, rnd, loss))
            batch += _timers(RANKS - 1)
        if it % 97 == 0:
            r = rnd.randrange(RANKS)
            batch.append(f"{srun(r)}[rank{r}]:[W{glog_time(t, rnd)} CUDAAllocatorConfig.h:28]"
                         " Warning: expandable_segments not supported on this platform "
                         "(function operator())")
        # per-rank chatter: about 60 lines an iteration from random ranks
        for _ in range(24):
            batch.append(_loguru(rnd.randrange(RANKS), t, rnd, it, colour=rnd.random() < 0.1))
        for _ in range(18):
            r = rnd.randrange(RANKS)
            node, g = divmod(r, GPUS)
            tmpl = NCCL_INFO[9 + rnd.randrange(4)]
            batch.append(f"{srun(r)}node-{node:03d}:{4000 + g}:{5000 + g} [{g}] " + tmpl.format(
                r=r, g=g, ch=rnd.randrange(32), t1=(r + 1) % RANKS, t2=(r - 1) % RANKS,
                g2=(g + 1) % GPUS))
        for _ in range(6):
            r = rnd.randrange(RANKS)
            batch.append(f"{srun(r)}/usr/local/lib/python3.10/dist-packages/torch/utils/"
                         "checkpoint.py:90: UserWarning: None of the inputs have "
                         "requires_grad=True. Gradients will be None")
            batch.append(f"{srun(r)}  warnings.warn(")
        for _ in range(6):
            r = rnd.randrange(RANKS)
            batch.append(f"{srun(r)}rank {r}: data wait {rnd.random() / 100:.4f}s, h2d "
                         f"{rnd.random() / 50:.4f}s, tokens {rnd.randrange(8_000_000)}")
        if it % 50 == 0:
            r = rnd.randrange(RANKS)
            batch += [f"{srun(r)}{x}" for x in TRACEBACK]
        if it % 200 == 0:
            batch.append(_tqdm_bar(0, 20, rnd))
        if it % 1000 == 0:
            batch.append(f"{srun(0)}saving checkpoint at iteration {it:7d} to /ckpt/gpt-175b in "
                         "torch_dist format")
            batch.append(f"{srun(0)}  successfully saved checkpoint from iteration {it:7d} to "
                         "/ckpt/gpt-175b [ t 1/8, p 1/16 ]")
        for line in batch:
            written += len(line.encode()) + 1
            yield line
    t += timedelta(minutes=10)
    yield from _failure_tail(rnd, t, it * 3 + 17, range(RANKS))


HOT_PG_WARNING = (
    "[rank{r}]:[W{md} {hms}.{ns:09d} ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank {r}] "
    "using GPU {r} to perform barrier as devices used by this process are currently unknown. "
    "This can potentially cause a hang if this rank to GPU mapping is incorrect. Specify "
    "device_ids in barrier() to force use of a particular device, or call init_process_group() "
    "with a device_id.")
HOT_FRAMES = (
    ("/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", 1532,
     "_wrapped_call_impl"),
    ("/usr/local/lib/python3.10/dist-packages/torch/nn/modules/module.py", 1541, "_call_impl"),
    ("/workspace/megatron/core/transformer/transformer_layer.py", 303, "forward"),
    ("/workspace/megatron/core/pipeline_parallel/schedules.py", 1402, "forward_backward_step"),
)


def hot_mix_lines(size_bytes: int, seed: int = 0, ranks: int = 8) -> Iterator[str]:
    """A log where most lines are parser targets (issue 17's hot mix): a quarter Megatron
    iteration lines behind torchrun's ``[defaultN]:`` prefixes (every rank logs them), the rest
    in equal parts ``ProcessGroupNCCL.cpp`` warnings, ANSI-coloured status lines, traceback
    ``File "…", line N, in …`` lines, tqdm bars, ``NCCL INFO Channel`` lines and ``saving
    checkpoint at iteration N`` lines; about ``size_bytes`` in all."""
    rnd = random.Random(seed)
    t = T0
    written = 0
    it = 0
    loss = 10.5
    while written < size_bytes:
        it += 1
        t += timedelta(milliseconds=2030)
        loss = max(1.7, loss * 0.99995 + (rnd.random() - 0.5) * 0.01)
        batch = []
        for r in rnd.sample(range(ranks), 6):
            ms = 2000 + rnd.random() * 60
            batch.append(
                f"[default{r}]: [{t:%Y-%m-%d %H:%M:%S}] iteration {it:8d}/{TRAIN_ITERS:8d} | "
                f"consumed samples: {it * 2048:12d} | elapsed time per iteration (ms): {ms:.1f} "
                f"| learning rate: {1.5e-4 * (1 - it / TRAIN_ITERS):.6E} | global batch size: "
                f" 2048 | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: "
                f"{0.2 + rnd.random() * 0.1:.3f} | number of skipped iterations:   0 | number "
                "of nan iterations:   0 |")
        for _ in range(3):
            r = rnd.randrange(ranks)
            batch.append(f"[default{r}]:" + HOT_PG_WARNING.format(
                r=r, md=f"{t.month}{t.day:02d}", hms=f"{t:%H:%M:%S}", ns=rnd.randrange(10**9)))
        for _ in range(3):
            r = rnd.randrange(ranks)
            batch.append(f"[default{r}]:\x1b[32m{t:%Y-%m-%d %H:%M:%S}.{rnd.randrange(1000):03d}"
                         f"\x1b[0m | \x1b[1mINFO    \x1b[0m | \x1b[36mtrain.loop\x1b[0m - step "
                         f"{it} data wait {rnd.random() / 100:.4f}s")
        for _ in range(3):
            r = rnd.randrange(ranks)
            path, no, fn = HOT_FRAMES[rnd.randrange(len(HOT_FRAMES))]
            batch.append(f'[default{r}]:  File "{path}", line {no}, in {fn}')
        for _ in range(3):
            r = rnd.randrange(ranks)
            i = rnd.randrange(1, 1001)
            full = i * 10 // 1000
            bar = "\u2588" * full + " " * (10 - full)
            batch.append(f"[default{r}]:Epoch 0: {i * 100 // 1000:3d}%|{bar}| {i}/1000 "
                         f"[{i // 60:02d}:{i % 60:02d}<{(1000 - i) // 60:02d}:"
                         f"{(1000 - i) % 60:02d}, {1 + rnd.random():.2f}it/s]")
        for _ in range(3):
            r = rnd.randrange(ranks)
            ch = rnd.randrange(32)
            batch.append(f"[default{r}]:node-000:{4000 + r}:{5000 + r} [{r}] NCCL INFO Channel "
                         f"{ch:02d}/0 : {r}[{r}] -> {(r + 1) % ranks}[{(r + 1) % ranks}] via "
                         "P2P/CUMEM/read")
        for _ in range(3):
            r = rnd.randrange(ranks)
            batch.append(f"[default{r}]:saving checkpoint at iteration {it:7d} to "
                         "/ckpt/gpt-175b in torch_dist format")
        for line in batch:
            written += len(line.encode()) + 1
            yield line


def hot_mix_log(path: Path, size_bytes: int, seed: int = 0) -> Path:
    """Write the hot mix (once: an existing file of the right name is kept)."""
    if not path.exists():
        write_lines(path, hot_mix_lines(size_bytes, seed))
    return path


# The interleaved eight-writer mix of issue 29, copied from the generator the issue names
# (the same random draws give the same bytes): Megatron iteration lines of one writer (``[default7]:``, no time, the
# elapsed time in seconds, TFLOP/s) among warnings, ANSI lines, traceback fragments, tqdm
# bars, NCCL INFO and checkpoint lines of eight ranks, one line at a time.
INTERLEAVED_NOISE = (
    "[default{r}]:[W1121 03:12:{s:02d}.123456 ProcessGroupNCCL.cpp:4561] Warning: "
    "TORCHELASTIC_ERROR_FILE is not set",
    "\x1b[32m[2022-05-01 03:56:11]\x1b[0m PULSE: tr11-176B-ml is running for 1-07:27:33 since "
    "2022-04-29T20:28:38",
    '[default{r}]:  File "/opt/megatron/training.py", line 904, in train',
    "Train:  {p}%|##        | {i}/115311 [08:22<44:22:11, 25.29s/it]",
    "[default{r}]: [Rank {r}] NCCL INFO Channel 00/32 : 0 1 2 3 4 5 6 7",
    "[default{r}]:saving checkpoint at iteration {i} to /checkpoints/main",
)
INTERLEAVED_ITERATION = (
    "[default7]: iteration {i:6d}/ 115311 | consumed samples: {cs} | consumed tokens: {ct} | "
    "elapsed time per iteration (s): {t:.2f} | learning rate: {lr:.3E} | global batch size: "
    "2048 | lm loss: {loss:.6E} | grad norm: {gn:.3f} | num zeros: 0.0 | number of skipped "
    "iterations: 0 | number of nan iterations: 0 | samples per second: {sps:.3f} | TFLOPs: "
    "{tf:.2f} |")


def interleaved_lines(size_bytes: int, seed: int = 0) -> Iterator[str]:
    """Issue 29's interleaved mix (``genlog.py``): a quarter Megatron iteration lines, the
    rest drawn from ``INTERLEAVED_NOISE`` for a random rank each; about ``size_bytes``."""
    rnd = random.Random(seed)
    written = 0
    it = 1
    while written < size_bytes:
        if rnd.random() < 0.25:
            t = 105 + rnd.random()
            s = INTERLEAVED_ITERATION.format(
                i=it, cs=it * 2048, ct=it * 2048 * 2048, t=t, lr=6e-5 * (1 - it / 200000),
                loss=2.5 - it * 1e-6, gn=0.15 + rnd.random() * 0.05, sps=2048 / t,
                tf=149 + rnd.random())
            it += 1
        else:
            s = rnd.choice(INTERLEAVED_NOISE).format(r=rnd.randrange(8), s=rnd.randrange(60),
                                                     p=it * 100 // 115311, i=it)
        written += len(s) + 1
        yield s


def interleaved_log(path: Path, size_bytes: int, seed: int = 0) -> Path:
    """Write the interleaved mix (once: an existing file of the right name is kept)."""
    if not path.exists():
        write_lines(path, interleaved_lines(size_bytes, seed))
    return path


def dated_lines(size_bytes: int, seed: int = 0) -> Iterator[str]:
    """Plain lines each stamped with an ISO date, across a new year (the year detection's
    worst case: every line a date, the year changing)."""
    rnd = random.Random(seed)
    t = datetime(2023, 12, 31, 23, 0, 0)
    written = 0
    while written < size_bytes:
        t += timedelta(milliseconds=rnd.randrange(1, 50))
        line = (f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d} - INFO - worker "
                f"{rnd.randrange(64)} fetched shard {rnd.randrange(10**6)} of volume 2024/1")
        written += len(line) + 1
        yield line


def dated_log(path: Path, size_bytes: int, seed: int = 0) -> Path:
    """Write the dated log (once)."""
    if not path.exists():
        write_lines(path, dated_lines(size_bytes, seed))
    return path


# Long lines that hold no record, as jobs print them: ms-swift's token-id dumps (a 56 KB
# "[LABELS_IDS] [-100, -100, …]"), padded tables, runs of spaces, dots and separators. Each is
# the start of a pattern many times over with nothing to complete it.
LONG_LINE_UNITS = ("-100, ", " ", "1234567890 ", "a", "| 12 ", "a: 1, ", "50% ", "1/2 ",
                   "loss=1.0 ", ".", "[1] ", "step loss lr ", "x=", "ab1")
LONG_LINE_HEADS = ("[INFO:swift] [LABELS_IDS] [", "", "    forward-compute ", "Epoch 3: ",
                   "rank0: ", "iteration ")


def long_lines(line_len: int, size_bytes: int) -> Iterator[str]:
    """Lines of ``line_len`` characters, every head with every unit in turn, up to
    ``size_bytes``."""
    n = 0
    while n < size_bytes:
        for head in LONG_LINE_HEADS:
            for unit in LONG_LINE_UNITS:
                line = (head + unit * (line_len // len(unit) + 1))[:line_len]
                n += len(line) + 1
                yield line
                if n >= size_bytes:
                    return


def long_lines_log(path: Path, line_len: int, size_bytes: int) -> Path:
    """Write the long-lines log (once)."""
    if not path.exists():
        write_lines(path, long_lines(line_len, size_bytes))
    return path


def write_lines(path: Path, lines: Iterator[str], gz: bool = False) -> int:
    """Write lines (each ending in a newline) in large batches; return the bytes written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".part")
    opener: Any = gzip.open if gz else open
    n = 0
    with opener(tmp, "wb") as fh:
        buf: list[str] = []
        size = 0
        for line in lines:
            buf.append(line)
            size += len(line)
            if size > 8 << 20:
                data = ("\n".join(buf) + "\n").encode()
                fh.write(data)
                n += len(data)
                buf, size = [], 0
        if buf:
            data = ("\n".join(buf) + "\n").encode()
            fh.write(data)
            n += len(data)
    tmp.replace(path)
    return n


def mixed_log(path: Path, size_bytes: int, seed: int = 0) -> Path:
    """Write the main log (once: an existing file of the right name is kept)."""
    if not path.exists():
        write_lines(path, mixed_log_lines(size_bytes, seed))
    return path


def per_rank_files(folder: Path, n: int = 512, size_bytes: int = 256 << 10, seed: int = 1) -> Path:
    """``n`` per-rank logs of about ``size_bytes`` each, under ``folder/per_rank/``."""
    out = folder / "per_rank"
    done = out / ".complete"
    if done.exists():
        return out
    rnd = random.Random(seed)
    for rank in range(n):
        lines = [x.split("]:", 1)[1] for x in _nccl_init(rank, rnd, T0)]
        t = T0
        it = 0
        size = sum(len(x) for x in lines)
        while size < size_bytes - 3000:
            it += 1
            t += timedelta(milliseconds=2030)
            batch = [_loguru(rank, t, rnd, it).split("]:", 1)[1],
                     f"[rank{rank}]:[W{glog_time(t, rnd)} CUDAAllocatorConfig.h:28] Warning: "
                     "expandable_segments not supported on this platform (function operator())"]
            if it % 25 == 0:
                batch.append(_tqdm_bar(rank, 8, rnd).split("]:", 1)[1])
            if it % 40 == 0:
                batch += list(TRACEBACK)
            size += sum(len(x) + 1 for x in batch)
            lines += batch
        tail = _failure_tail(rnd, t + timedelta(minutes=10), 9000, range(rank, rank + 1))
        lines += [x.split("]:", 1)[1] if "]:" in x[:16] else x for x in tail[:20]]
        write_lines(out / f"rank{rank:04d}.log", iter(lines))
    done.write_text("")
    return out


PYSPY_MAIN = (
    "all_reduce (torch/distributed/distributed_c10d.py:2501)",
    "wrapper (torch/distributed/c10d_logger.py:83)",
    "allreduce_gradients (megatron/core/distributed/param_and_grad_buffer.py:351)",
    "finish_grad_sync (megatron/core/distributed/distributed_data_parallel.py:302)",
    "forward_backward_pipelining_without_interleaving (megatron/core/pipeline_parallel/schedules.py:1324)",
    "train_step (megatron/training/training.py:587)",
    "train (megatron/training/training.py:1105)",
    "pretrain (megatron/training/training.py:301)",
    "<module> (pretrain_gpt.py:243)",
)
PYSPY_OUTLIER = (
    "broadcast (torch/distributed/distributed_c10d.py:2231)",
    "wrapper (torch/distributed/c10d_logger.py:83)",
    "evaluate (megatron/training/training.py:1301)",
    "evaluate_and_print_results (megatron/training/training.py:1367)",
    "train (megatron/training/training.py:1122)",
    "pretrain (megatron/training/training.py:301)",
    "<module> (pretrain_gpt.py:243)",
)
PYSPY_THREADS = (
    ("pt_autograd_0", "idle", ("wait (threading.py:324)",)),
    ("Thread-2 (_pin_memory_loop)", "idle", (
        "select (selectors.py:416)", "wait (multiprocessing/connection.py:931)",
        "_poll (multiprocessing/connection.py:424)", "poll (multiprocessing/connection.py:257)",
        "get (multiprocessing/queues.py:113)", "do_one_step (torch/utils/data/_utils/pin_memory.py:31)",
        "_pin_memory_loop (torch/utils/data/_utils/pin_memory.py:54)", "run (threading.py:953)",
        "_bootstrap_inner (threading.py:1016)", "_bootstrap (threading.py:973)")),
    ("tqdm_monitor", "idle", ("wait (threading.py:324)", "wait (threading.py:607)",
                              "run (tqdm/_monitor.py:60)", "_bootstrap_inner (threading.py:1016)",
                              "_bootstrap (threading.py:973)")),
)


def pyspy_dumps(folder: Path, n: int = 4096, outliers: tuple[int, ...] = (1337, 2050)) -> Path:
    """``n`` ``py-spy dump`` files (py-spy 0.4 text), one per process, 8 per host."""
    out = folder / f"pyspy_{n}"
    done = out / ".complete"
    if done.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        host, pid = f"node-{i // GPUS:04d}", 50000 + i
        main = PYSPY_OUTLIER if i in outliers else PYSPY_MAIN
        lines = [f"Process {pid}: /usr/bin/python3 -u pretrain_gpt.py --tensor-model-parallel-size 8"
                 " --pipeline-model-parallel-size 16",
                 "Python v3.10.12 (/usr/bin/python3.10)", "",
                 f'Thread {pid} (active): "MainThread"']
        lines += [f"    {f}" for f in main]
        for k, (name, state, frames) in enumerate(PYSPY_THREADS):
            lines.append(f'Thread {pid + 10 + k} ({state}): "{name}"')
            lines += [f"    {f}" for f in frames]
        lines.append("")
        (out / f"trace-{host}-{pid}.out").write_text("\n".join(lines) + "\n")
    done.write_text("")
    return out


def _fr_frames(kind: str, pool: dict[str, Any]) -> list[dict[str, Any]]:
    """A Python stack as the flight recorder stores it; strings shared (torch's pickler
    memoizes repeated strings, so real dumps hold each file name once)."""
    stacks = {
        "all_reduce": (("all_reduce", "torch/distributed/distributed_c10d.py", 2501),
                       ("allreduce_gradients", "megatron/core/distributed/param_and_grad_buffer.py", 351),
                       ("finish_grad_sync", "megatron/core/distributed/distributed_data_parallel.py", 302),
                       ("train_step", "megatron/training/training.py", 587),
                       ("train", "megatron/training/training.py", 1105),
                       ("pretrain", "megatron/training/training.py", 301),
                       ("<module>", "pretrain_gpt.py", 243)),
        "_all_gather_base": (("_all_gather_base", "torch/distributed/distributed_c10d.py", 3011),
                            ("all_gather_params", "megatron/core/distributed/param_and_grad_buffer.py", 402),
                            ("train_step", "megatron/training/training.py", 590),
                            ("train", "megatron/training/training.py", 1105),
                            ("<module>", "pretrain_gpt.py", 243)),
        "broadcast": (("broadcast", "torch/distributed/distributed_c10d.py", 2231),
                      ("evaluate", "megatron/training/training.py", 1301),
                      ("train", "megatron/training/training.py", 1122),
                      ("<module>", "pretrain_gpt.py", 243)),
    }
    out = []
    for name, file, line in stacks[kind]:
        out.append({"name": pool.setdefault(name, name), "filename": pool.setdefault(file, file),
                    "line": line})
    return out


def fr_dumps(folder: Path, ranks: int = 1024, entries: int = 2000, outlier: int | None = None) -> Path:
    """One NCCL-shaped flight-recorder pickle per rank (``rank<N>``): ``entries`` records each,
    the ring buffer aligned, the last record on ``outlier`` a broadcast where every other rank
    has an all-reduce (a desync, as torchfrtrace and ``first_mismatch`` report it)."""
    outlier = ranks * 517 // 1024 if outlier is None else outlier
    out = folder / f"fr_{ranks}x{entries}"
    done = out / ".complete"
    if done.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    first = 48_001
    ranks_str = str(list(range(ranks)))
    pool: dict[str, Any] = {}
    names = ("nccl:all_reduce", "nccl:_all_gather_base", "nccl:all_reduce", "nccl:all_reduce")
    t0 = 1_720_400_000_000_000_000
    for rank in range(ranks):
        rnd = random.Random(rank)
        recs = []
        for i in range(entries):
            seq = first + i
            last = i == entries - 1
            op = names[seq % 4]
            if last and rank == outlier:
                op = "nccl:broadcast"
            kind = op.split(":", 1)[1]
            numel = 33_554_432 if kind != "_all_gather_base" else 4_194_304
            out_numel = numel if kind != "_all_gather_base" else numel * 8
            state = "completed" if i < entries - 2 else ("started" if i == entries - 2 else "scheduled")
            t = t0 + i * 2_030_000_000 + rnd.randrange(1_000_000)
            recs.append({
                "record_id": seq - 1, "pg_id": 0, "process_group": ("0", "default_pg"),
                "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq,
                "profiling_name": pool.setdefault(op, op),
                "time_created_ns": t,
                "duration_ms": None if state != "completed" else 10.5 + rnd.random(),
                "input_sizes": [[numel]], "input_dtypes": ["BFloat16"],
                "output_sizes": [[out_numel]], "output_dtypes": ["BFloat16"],
                "state": pool.setdefault(state, state),
                "time_discovered_started_ns": t + 1000 if state != "scheduled" else None,
                "time_discovered_completed_ns": t + 9_000_000 if state == "completed" else None,
                "retired": state == "completed", "timeout_ms": 600000, "is_p2p": False,
                "thread_id": "140376518785920", "thread_name": "pt_main_thread",
                "frames": _fr_frames(kind, pool),
            })
        dump = {
            "version": "2.10", "comm_lib_version": "2.27.5",
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": ranks_str}},
            "pg_status": {"0": {"last_enqueued_collective": first + entries - 1,
                                "last_started_collective": first + entries - 2,
                                "last_completed_collective": first + entries - 3}},
            "entries": recs,
        }
        (out / f"rank{rank}").write_bytes(pickle.dumps(dump, protocol=2))
    done.write_text("")
    return out


# --- small adversarial logs for equivalence tests --------------------------------------------

WATCHDOG = ("[rank{r}]:[E{md} 01:47:23.901930947 ProcessGroupNCCL.cpp:629] [Rank {r}] Watchdog "
            "caught collective operation timeout: WorkNCCL(SeqNum={s}, OpType=ALLREDUCE, "
            "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600070 milliseconds before "
            "timing out.")


def torture_lines(rnd: random.Random, n: int) -> list[bytes]:
    """``n`` physical lines (bytes, no newline) mixing everything the loader must treat
    specially; a block record (torchrun report, py-spy dump, c10 block, timers) may be cut by
    other ranks' lines."""
    out: list[bytes] = []
    t = T0
    for i in range(n):
        t += timedelta(seconds=7)
        r = rnd.randrange(16)
        k = rnd.randrange(40)
        if k == 0:
            line = iteration_line(i + 1, t, rnd, 2.5)
            cut = rnd.randrange(40, len(line) - 5)
            out += [line[:cut].encode(), line[cut:].lstrip().encode()]  # a terminal wrap
            continue
        if k == 1:
            line = WATCHDOG.format(r=r, md=f"{t.month}{t.day:02d}", s=100 + i)
            cut = rnd.randrange(60, len(line) - 3)
            out += [line[:cut].encode(), line[cut:].encode()]
            continue
        if k == 2:
            out.append(_tqdm_bar(r, 5, rnd).encode())
        elif k == 3:
            out.append(("\x1b[1;31m" + WATCHDOG.format(r=r, md="708", s=i) + "\x1b[0m").encode())
        elif k == 4:
            out.append(b"\xff\xfe bad bytes " + bytes([rnd.randrange(256) for _ in range(6)]))
        elif k == 5:
            out.append(f"{t:%Y-%m-%d %H:%M:%S} INFO year marker".encode())
        elif k == 6:
            out.append(f"20{rnd.randrange(18, 30)}-0{rnd.randrange(1, 9)}-1{rnd.randrange(9)} "
                       "12:00:00 another year".encode())
        elif k == 7:
            out += [f"{srun(r)}{x}".encode() for x in TRACEBACK[:6]]
        elif k == 8:
            out += [x.encode() for x in _failure_tail(rnd, t, 50 + i, range(r, r + 1))[:9]]
        elif k == 9:
            node = rnd.randrange(4)
            rep = [f"{node:2d}: Failures:", f"{node:2d}:   <NO_OTHER_FAILURES>",
                   f"{node:2d}: Root Cause (first observed failure):", f"{node:2d}: [0]:",
                   f"{node:2d}:   time      : 2024-07-08_01:47:24",
                   f"{node:2d}:   host      : node-{node}",
                   f"{node:2d}:   rank      : {node * 8 + 3} (local_rank: 3)",
                   f"{node:2d}:   exitcode  : -6 (pid: 4242)",
                   f"{node:2d}: " + "=" * 40]
            if rnd.random() < 0.5:  # another node's line lands inside the report
                rep.insert(rnd.randrange(2, len(rep)), f"{(node + 1) % 4:2d}: hello from elsewhere")
            out += [x.encode() for x in rep]
        elif k == 10:
            out += [f"{srun(r)}{x}".encode() for x in _timers(r)[:5]]
        elif k == 11:
            pid = 1000 + r
            out += [f"Process {pid}: python train.py".encode(), b"Python v3.11.7 (/usr/bin/python3)",
                    b"", f'Thread {pid} (idle): "MainThread"'.encode()]
            out += [f"    {f}".encode() for f in PYSPY_MAIN[: rnd.randrange(1, 6)]]
            out.append(b"")
        elif k == 12:
            out.append(b"x" * rnd.choice((10, 5000, 70_000)) + b" Killed")
        elif k == 13:
            out.append(b"nul\x00in the middle " + WATCHDOG.format(r=r, md="708", s=i).encode())
        elif k == 14:
            out.append(b"crlf line\r")
        elif k == 15:
            out.append(f"{{'loss': {rnd.random():.4f}, 'grad_norm': 1.5, 'learning_rate': 1e-05, "
                       f"'epoch': {i / 100:.2f}}}".encode())
        elif k == 16:
            out.append(f"[rank{r}]:[E{t.month}{t.day:02d} 01:00:00.1 x.cpp:1] RuntimeError: "
                       "boom".encode())
        elif k == 17:
            out.append("  tqdm glued Train: 5%|▌ | 5/100 [00:05<01:35, 1.00it/s]".encode()
                       + f"[rank{r}]:".encode() + WATCHDOG.format(r=r, md="708", s=i).encode())
        elif k == 18:
            out.append(_loguru(r, t, rnd, i).encode())
        elif k == 19:  # an escape inside what a parser looks for: only the stripped line has it
            line = rnd.choice((WATCHDOG.format(r=r, md="708", s=i),
                               iteration_line(i + 1, t, rnd, 2.5),
                               f"{srun(r)}RuntimeError: boom {i}", f"{srun(r)}  what():  x"))
            cut = rnd.randrange(1, len(line) - 1)
            out.append((line[:cut] + rnd.choice(("\x1b[0m", "\x1b[1;31m", "\x1b(B", "\x1b="))
                        + line[cut:]).encode())
        elif k == 20:  # a date of another year cut by an escape, then a glog line that borrows it
            stamp = f"20{rnd.randrange(18, 30)}-0{rnd.randrange(1, 9)}-11 12:00:00"
            cut = rnd.randrange(1, len(stamp) - 1)
            out.append(f"\x1b[32m{stamp[:cut]}\x1b[0m{stamp[cut:]} cut date".encode())
            out.append(WATCHDOG.format(r=r, md="708", s=i).encode())
        else:
            out.append(f"{srun(r)} plain chatter {i} {rnd.random():.6f}".encode())
    return out


def torture_log(path: Path, seed: int, n: int = 3000, gz: bool = False) -> Path:
    """A small adversarial log; ``gz`` writes it gzip-compressed."""
    rnd = random.Random(seed)
    data = b"\n".join(torture_lines(rnd, n)) + (b"\n" if rnd.random() < 0.8 else b"")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path
