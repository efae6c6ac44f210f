"""Log parsers, one module per kind of record, and their registries. Where a new log format
goes (ARCHITECTURE.md, "Adding a log format"): a new wording of a record already read is one
entry in its module's table of patterns; a new kind of record is a new module here and one line
in ``LINE_PARSERS`` (line parsers), ``BLOCK_PARSERS`` (multi-line records) or ``FILE_LOADERS``
(whole files); ``base`` states what each kind must provide. The modules:

- ``collectives``: NCCL watchdog timeouts, watchdog work status, gloo timeouts, start-up
  (store-based barrier, c10d socket) timeouts
- ``missing_ranks``: reports naming the ranks that never arrived (Horovod's stall inspector,
  torch's desync report, fr_trace, NCCL RAS, JAX barriers) into ``collectives``
- ``errors``: CUDA/NCCL/gloo/OOM/ECC/signal error lines, c10 exception blocks (block parser),
  launcher/scheduler exit lines into ``exits``
- ``xid``: NVIDIA driver Xid lines (dmesg/journal/syslog) and the Xid catalog
- ``checkpoints``: checkpoint save/load lines
- ``processes``: NCCL's ``host:pid:tid [dev]`` init lines (which process ran where)
- ``iterations``: Megatron/DeepSpeed/torchtitan/Lightning/HF Trainer step lines
- ``metric_lines``: the generic step-line reader (any trainer's ``step … loss …`` line that no
  other parser read), by syntax and vocabulary; step lines with a cumulative skip counter
  (block parser)
- ``progress``: tqdm bars
- ``torchrun``: torchrun's ChildFailedError report (block parser)
- ``flight_recorder``: flight-recorder dumps (a whole-file loader, in ``FILE_LOADERS``)
- ``metrics``: TensorBoard/W&B/HF metric exports into ``iterations`` (a whole-file loader)
- ``stacks``: py-spy and faulthandler stack dumps (block parser; py-spy --json a file loader)
- ``tables``: headerless numeric tables of step and loss (a whole-file loader)
- ``benchmarks``: per-host benchmark CSVs (file loader), Megatron straggler/timer lines,
  SLURM node lists, launchers' node layout into ``host_timings``
- ``prefixes``: rank/host prefixes, ANSI, timestamps (not a table of its own)
"""

from __future__ import annotations

from . import (
    benchmarks,
    checkpoints,
    collectives,
    errors,
    flight_recorder,
    iterations,
    metric_lines,
    metrics,
    missing_ranks,
    processes,
    progress,
    stacks,
    tables,
    torchrun,
    xid,
)
from .base import BlockParser, FileLoader, LineParser, Row

LINE_PARSERS: tuple[LineParser, ...] = (
    *collectives.PARSERS,
    *missing_ranks.PARSERS,
    *errors.PARSERS,
    *torchrun.PARSERS,
    *xid.PARSERS,
    *checkpoints.PARSERS,
    *iterations.PARSERS,
    *metric_lines.PARSERS,
    *progress.PARSERS,
    *benchmarks.PARSERS,
    *processes.PARSERS,
)

# Classes: the reader makes one block parser of each kind per writer of a stream, and reads
# their ``needles`` and ``tables`` off the class (the contract: ``base.BlockParser``).
BLOCK_PARSERS: tuple[type[BlockParser], ...] = (torchrun.ChildFailedParser,
                                                        stacks.StackParser,
                                                        errors.CudaErrorBlock,
                                                        errors.LastErrorBlock,
                                                        errors.CheckMacroError,
                                                        errors.HydraTermination,
                                                        *iterations.BLOCKS,
                                                        *metric_lines.BLOCKS,
                                                        *benchmarks.BLOCKS,
                                                        *missing_ranks.BLOCKS)

# Whole-file readers, tried (by their sniff) before a file is read as a text log.
FILE_LOADERS: tuple[FileLoader, ...] = (flight_recorder.LOADER, metrics.LOADER,
                                        stacks.JSON_LOADER, stacks.BARE_LOADER, benchmarks.LOADER,
                                        tables.LOADER)

__all__ = ["BLOCK_PARSERS", "FILE_LOADERS", "LINE_PARSERS", "BlockParser", "FileLoader",
           "LineParser", "Row"]
