"""Log-line parsers. A new log format goes in the module of the table it fills, and is listed
in ``LINE_PARSERS`` (one line each) or ``BLOCK_PARSERS`` (multi-line records).

- ``collectives``: NCCL watchdog timeouts, watchdog work status, gloo timeouts
- ``errors``: NCCL/gloo failure and teardown lines
- ``iterations``: Megatron/DeepSpeed iteration lines
- ``progress``: tqdm bars
- ``torchrun``: torchrun's ChildFailedError report (block parser)
- ``flight_recorder``: flight-recorder dumps (a whole-file loader, in ``FILE_LOADERS``)
- ``prefixes``: rank/host prefixes, ANSI, timestamps (not a table of its own)
"""

from __future__ import annotations

from collections.abc import Callable

from . import collectives, errors, flight_recorder, iterations, progress, torchrun
from .base import BlockParser, FileLoader, LineParser, Row

LINE_PARSERS: tuple[LineParser, ...] = (
    *collectives.PARSERS,
    *errors.PARSERS,
    *iterations.PARSERS,
    *progress.PARSERS,
)

# Factories: the loader makes one block parser of each kind per stream.
BLOCK_PARSERS: tuple[Callable[[], BlockParser], ...] = (torchrun.ChildFailedParser,)

# Whole-file readers, tried (by their sniff) before a file is read as a text log.
FILE_LOADERS: tuple[FileLoader, ...] = (flight_recorder.LOADER,)

__all__ = ["BLOCK_PARSERS", "FILE_LOADERS", "LINE_PARSERS", "BlockParser", "FileLoader",
           "LineParser", "Row"]
