"""Error lines into the ``errors`` table: what a process reported as it failed.

Each entry of ``ERROR_PATTERNS`` is (code, kind, needle, regex); the first match wins. The
``message`` column holds the matched phrase (or the regex's ``msg`` group).
"""

from __future__ import annotations

import re

from .base import LineParser, Row
from .collectives import RANK_TAG_RE

ERROR_PATTERNS: tuple[tuple[str, str, str, re.Pattern[str]], ...] = (
    (
        "nccl_teardown",
        "nccl_error",
        "Some NCCL operations have failed or timed out",
        re.compile(r"(?P<msg>Some NCCL operations have failed or timed out)"),
    ),
    (
        "process_taken_down",
        "nccl_error",
        "taking the entire process down",
        re.compile(r"(?P<msg>To avoid data inconsistency, we are taking the entire process down)"),
    ),
    (
        "heartbeat_timeout",
        "nccl_error",
        "Heartbeat monitor timed out",
        re.compile(r"(?P<msg>Heartbeat monitor timed out!.*?)(?:\s*workMetaList|$)"),
    ),
    (
        "watchdog_stuck",
        "nccl_error",
        "watchdog got stuck",
        re.compile(r"(?P<msg>ProcessGroupNCCL's watchdog got stuck for \d+ seconds[^.]*)"),
    ),
    (
        "watchdog_terminated",
        "nccl_error",
        "watchdog thread terminated with exception",
        re.compile(r"(?P<msg>(?:NCCL|Process group) watchdog thread terminated with exception)"),
    ),
    (
        "gloo_mismatch",
        "nccl_error",
        "collective mismatch",
        re.compile(r"(?P<msg>Is there a distributed collective mismatch in your code\?)"),
    ),
    (
        "gloo_connection_closed",
        "nccl_error",
        "Connection closed by peer",
        re.compile(r"(?P<msg>Connection closed by peer \[[^\]]*\])"),
    ),
    (
        "gloo_connection_reset",
        "nccl_error",
        "Connection reset by peer",
        re.compile(r"(?P<msg>Connection reset by peer)"),
    ),
)

NEEDLES = tuple(p[2] for p in ERROR_PATTERNS)


def parse_error(text: str) -> Row | None:
    """The first known error phrase in ``text``, as an ``errors`` row."""
    for code, kind, needle, regex in ERROR_PATTERNS:
        if needle not in text:
            continue
        m = regex.search(text)
        if not m:
            continue
        rank = None
        tag = RANK_TAG_RE.search(text, 0, m.start())
        if tag:
            rank = int(tag["rank"])
        return {"rank": rank, "kind": kind, "code": code, "message": m["msg"].strip()}
    return None


PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "nccl_errors",
        "errors",
        NEEDLES,
        parse_error,
        example="[rank3]:[E708 01:47:23.097674411 ProcessGroupNCCL.cpp:681] [Rank 3] Some NCCL "
        "operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, "
        "subsequent GPU operations might run on corrupted/incomplete data.",
    ),
)
