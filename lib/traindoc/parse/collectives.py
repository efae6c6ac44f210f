"""Collective timeouts and work status from ProcessGroupNCCL's watchdog and from gloo.

Wordings (checked against torch's ProcessGroupNCCL.cpp across versions, and public issues):

- watchdog timeout, every version: ``Watchdog caught collective operation timeout:
  WorkNCCL(SeqNum=2901, OpType=ALLREDUCE[, NumelIn=1, NumelOut=1], Timeout(ms)=600000) ran for
  600070 milliseconds before timing out.`` behind no tag (<=1.13), ``[Rank 3]`` (2.0-2.3),
  ``[PG 0 Rank 3]`` / ``[PG 0 (default_pg) Rank 3]`` (2.3-2.4) or
  ``[PG ID 0 PG GUID 0(default_pg) Rank 3]`` (2.5+).
- work status: ``Timeout at NCCL work: 5, last enqueued NCCL work: 5, last completed NCCL work:
  4.`` (2.2-2.4), ``Exception (either an error or timeout) detected by watchdog at work: 5,
  last enqueued NCCL work: 5, last completed NCCL work: 4.`` (2.4-2.6), ``failure detected by
  watchdog at work sequence id: 5 PG status: last enqueued work: 5, last completed work: 4``
  (2.7+).
- gloo: ``Timed out waiting 5000ms for recv operation to complete`` (also send).
"""

from __future__ import annotations

import re

from .base import LineParser, Row, to_int

# [Rank 3] / [PG 0 Rank 3] / [PG 0 (default_pg) Rank 3] / [PG ID 0 PG GUID 0(default_pg) Rank 3]
RANK_TAG_RE = re.compile(r"\[(?:PG (?P<pg>[^\[\]]*?) )?Rank (?P<rank>\d+)\]")
PG_PART_RE = re.compile(
    r"^(?:ID )?(?P<id>[^\s(]+)(?: PG GUID (?P<guid>[^\s(]+))?\s*(?:\((?P<name>[^)]*)\))?"
)

WATCHDOG_RE = re.compile(
    r"Watchdog caught collective operation timeout:\s*Work(?:NCCL|Gloo|UCC)?"
    r"\((?P<body>[^()]*(?:\(ms\)[^()]*)*)\)"
    r"(?:\s*ran for\s*(?P<ran>\d[\d\s]*?)\s*milliseconds\s*before\s*timing\s*out)?"
)
# TORCH_NCCL_BLOCKING_WAIT=1: the main thread, not the watchdog, gives up.
BLOCKING_WAIT_RE = re.compile(
    r"Work WorkNCCL\((?P<body>[^()]*(?:\(ms\)[^()]*)*)\) timed out in blocking wait"
)
WORK_FIELD_RE = re.compile(r"(?P<key>\w+(?:\(ms\))?)\s*=\s*(?P<val>[^,]*)")

WORK_STATUS_RE = re.compile(
    r"(?:Timeout at NCCL work|Exception hit in NCCL work|by watchdog at work"
    r"(?: sequence id)?):?\s*(?P<seq>-?\d+),?"
    r"\s*(?:PG status:\s*)?last enqueued (?:NCCL )?work:\s*(?P<enq>-?\d+),\s*"
    r"last completed (?:NCCL )?work:\s*(?P<comp>-?\d+)"
)

GLOO_TIMEOUT_RE = re.compile(
    r"Timed out waiting (?P<ms>\d+)\s*ms for (?P<op>recv|send|connect)\w* operation to complete"
)
GLOO_SITE_RE = re.compile(r"\[(?P<site>[^\]]*gloo[^\]]*?):\d+\]")


def _rank_and_pg(text: str, end: int) -> tuple[int | None, str | None]:
    """The rank of the tag closest before ``end``, and the process group of the closest tag
    that names one (a wrapper line reads ``[PG 1 Rank 6] … exception: [Rank 6] Watchdog…``)."""
    rank = pg = None
    for m in RANK_TAG_RE.finditer(text, 0, end):
        rank = int(m["rank"])
        if m["pg"]:
            pg = _pg_name(m["pg"])
    return rank, pg


def _pg_name(part: str | None) -> str | None:
    """A process group's identity as '0' or '0 (default_pg)'."""
    if not part:
        return None
    m = PG_PART_RE.match(part.strip())
    if not m:
        return part.strip()
    name = m["name"]
    return f"{m['id']} ({name})" if name else m["id"]


def parse_watchdog(text: str) -> Row | None:
    """ProcessGroupNCCL's 'Watchdog caught collective operation timeout' line."""
    m = WATCHDOG_RE.search(text) if "Watchdog caught" in text else None
    if m is None:
        m = BLOCKING_WAIT_RE.search(text)
        if m is None:
            return None
    fields = {f["key"].lower(): f["val"].strip() for f in WORK_FIELD_RE.finditer(m["body"])}
    rank, pg = _rank_and_pg(text, m.start())
    return {
        "rank": rank,
        "process_group": pg,
        "seq_num": to_int(fields.get("seqnum")),
        "op_type": fields.get("optype"),
        "numel_in": to_int(fields.get("numelin")),
        "numel_out": to_int(fields.get("numelout")),
        "timeout_ms": to_int(fields.get("timeout(ms)")),
        "ran_for_ms": to_int(m.groupdict().get("ran")),
        "state": "timed_out",
    }


def watchdog_incomplete(text: str) -> bool:
    """A watchdog line cut before its end (wrapped by a terminal or a paste): the WorkNCCL(…)
    is not closed, or the line stops right after it or inside 'ran for …'."""
    if "Watchdog caught" not in text:
        return False
    m = WATCHDOG_RE.search(text)
    if m is None:
        return True
    if m["ran"] is not None:
        return False
    tail = text[m.end():].strip()
    return tail == "" or (len(tail) < 40 and "ran for".startswith(tail[:7]) and "." not in tail)


def parse_work_status(text: str) -> Row | None:
    """The watchdog's 'last enqueued / last completed work' status line."""
    m = WORK_STATUS_RE.search(text)
    if not m:
        return None
    rank, pg = _rank_and_pg(text, m.start())
    return {
        "rank": rank,
        "process_group": pg,
        "seq_num": int(m["seq"]),
        "last_enqueued": int(m["enq"]),
        "last_completed": int(m["comp"]),
        "state": "status",
    }


def parse_gloo_timeout(text: str) -> Row | None:
    """gloo's 'Timed out waiting Nms for recv operation to complete'."""
    m = GLOO_TIMEOUT_RE.search(text)
    if not m:
        return None
    return {
        "op_type": f"gloo:{m['op']}",
        "timeout_ms": int(m["ms"]),
        "state": "timed_out",
    }


PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "nccl_watchdog_timeout",
        "collectives",
        ("Watchdog caught", "timed out in blocking wait"),
        parse_watchdog,
        incomplete=watchdog_incomplete,
        example="[rank3]:[E708 01:47:23.901930947 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog "
        "caught collective operation timeout: WorkNCCL(SeqNum=2901, OpType=ALLREDUCE, NumelIn=1,"
        " NumelOut=1, Timeout(ms)=600000) ran for 600070 milliseconds before timing out.",
    ),
    LineParser(
        "nccl_work_status",
        "collectives",
        ("last enqueued",),
        parse_work_status,
        example="[rank0]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 0] Timeout at NCCL work: 5, "
        "last enqueued NCCL work: 5, last completed NCCL work: 4.",
    ),
    LineParser(
        "gloo_timeout",
        "collectives",
        ("Timed out waiting",),
        parse_gloo_timeout,
        example="RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Timed out "
        "waiting 5000ms for recv operation to complete",
    ),
)
