"""Which process ran where: NCCL's ``host:pid:tid [dev]`` init lines into ``processes``.

With ``NCCL_DEBUG=INFO`` every NCCL line starts with ``%h:%p:%t [%d]`` (``gethostname()``, pid,
thread id, CUDA device), so a few lines each process prints once name its machine beside its
pid — the pid torchrun's failure report gives, and which nothing else may tie to a host:

- ``g1002:2128869:2128880 [0] NCCL INFO Setting affinity for GPU 0 to ffff0000,…``
- ``6a9ab017bb44:454:461 [0] NCCL INFO comm 0x557b4c553c80 rank 0 nranks 1 cudaDev 0 nvmlDev 0
  busId d8000 commId 0x428d7c9b55223c50 - Init START`` (NCCL 2.18+; ``Init COMPLETE`` after)
- ``compute-gpu-st-distributed-ml-1:7614:7691 [0] NCCL INFO comm 0x573f9cb382e0 rank 0 nRanks 2
  nNodes 2 localRanks 1 localRank 0 MNNVL 0``
- ``node-003:4001:4001 [1] NCCL INFO cudaDriverVersion 12040``, ``… NCCL INFO Bootstrap : Using
  ib0:10.1.2.3<0>``
- ``cf0b62962198:378934:382525 [2] NCCL INFO Connected all trees`` (and ``… rings``), once per
  communicator a process joins (deepspeedai/DeepSpeed#2638, NVIDIA/nccl-tests#252)
- ``user-G493-ZB1-AAP1-000:275204:275658 [4] NCCL INFO misc/socket.cc:666 -> 2``: NCCL's trace of
  an error returned up its calls (``event`` "error_trace"), jax-ml/jax#22747

ezpz (ALCF's launcher helper, Aurora/Polaris/Sunspot) states each rank's machine once at set-up,
``[2025-01-28 08:49:37][I][ezpz/dist:869] ['x4204c5s6b0n0'][0/0]`` (the host, then the rank of
the last rank): a row with that rank and host (``event`` "ezpz"). fairseq states it as
``initialized host IR-86A4D2-FCC3 as rank 0`` (``event`` "fairseq").

``comm_rank`` is the rank inside that communicator (the global rank only for the default
one), so it never fills ``rank``: that comes from the line's launcher prefix. A Docker
container's host name is its 12-hex-digit id, no machine to drain: such a name is left out.
"""

from __future__ import annotations

import re

from .base import LineParser, Row, to_int

NCCL_PROCESS_RE = re.compile(
    r"(?:^|\s)(?P<host>[A-Za-z0-9][\w.\-]*):(?P<pid>\d{1,10}):(?P<tid>\d{1,10}) \[(?P<dev>\d{1,3})\]"
    r" NCCL INFO (?P<what>.*)")
NCCL_COMM_RE = re.compile(
    r"comm (?P<comm>0x[0-9a-fA-F]+) rank (?P<rank>\d+) n[Rr]anks (?P<size>\d+)"
    r"(?:.*?(?P<init>Init (?:START|COMPLETE)))?")
CONTAINER_ID_RE = re.compile(r"[0-9a-f]{12}")
# NCCL's trace of an error returned up its call chain, one line a frame ("misc/socket.cc:666 ->
# 2", "init.cc:1641 -> 2": jax-ml/jax#22747's ncclCommInitRank failure): the failing process
NCCL_ERROR_TRACE_RE = re.compile(r"[\w/.\-]+\.cc:\d+ -> \d+\s*$")

EVENTS = (("Setting affinity", "affinity"), ("cudaDriverVersion", "driver"),
          ("Bootstrap", "bootstrap"), ("Connected all ", "connected"))


def parse_nccl_process(text: str) -> Row | None:
    """One NCCL init line: the process's host, pid and device (and its communicator)."""
    m = NCCL_PROCESS_RE.search(text)
    if not m:
        return None
    what = m["what"]
    row: Row = {"pid": to_int(m["pid"]), "device": to_int(m["dev"])}
    c = NCCL_COMM_RE.match(what)
    if c:
        row.update(comm=c["comm"], comm_rank=to_int(c["rank"]), comm_size=to_int(c["size"]),
                   event=(c["init"] or "comm").lower().replace(" ", "_"))
    else:
        event = next((e for lead, e in EVENTS if what.startswith(lead)), None)
        if event is None and NCCL_ERROR_TRACE_RE.match(what):
            event = "error_trace"
        if event is None:
            return None
        row["event"] = event
    host = m["host"]
    if not CONTAINER_ID_RE.fullmatch(host):
        row["host"] = host
    else:
        row["host"] = None  # (the sink falls back to the line's prefix host, if any)
    return row


# ezpz's set-up line: "['x4204c5s6b0n0'][0/0]", the host quoted as a Python list item, then
# rank/last rank
EZPZ_RANK_RE = re.compile(r"\['(?P<host>[A-Za-z0-9][\w.\-]*)'\]\[\s*(?P<rank>\d{1,6})\s*/"
                          r"\s*(?P<last>\d{1,6})\s*\]\s*$")


def parse_ezpz_rank(text: str) -> Row | None:
    """ezpz's set-up line: the machine a rank runs on."""
    m = EZPZ_RANK_RE.search(text)
    if not m or int(m["rank"]) > int(m["last"]):
        return None
    return {"rank": int(m["rank"]), "host": m["host"], "event": "ezpz"}


# fairseq's set-up line, one per rank: "2022-06-06 09:17:48 | INFO | fairseq.distributed.utils |
# initialized host IR-86A4D2-FCC3 as rank 0" (fairseq >= 0.10's logger), "| initialized host
# gpu-node as rank 3" (fairseq 0.6-0.9's print), "| initialized host h as rank 0 (…)" (forks
# that add the init method)
FAIRSEQ_RANK_RE = re.compile(r"\binitialized host (?P<host>[A-Za-z0-9][\w.\-]*) as rank "
                             r"(?P<rank>\d{1,6})\b")


def parse_fairseq_rank(text: str) -> Row | None:
    """fairseq's set-up line: the machine a rank runs on."""
    m = FAIRSEQ_RANK_RE.search(text)
    if not m:
        return None
    return {"rank": int(m["rank"]), "host": m["host"], "event": "fairseq"}


PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "nccl_process", "processes",
        ("NCCL INFO comm 0x", "NCCL INFO Setting affinity", "NCCL INFO cudaDriverVersion",
         "NCCL INFO Bootstrap", "NCCL INFO Connected all ", ".cc:"),
        parse_nccl_process,
        example="0: g1002:2128869:2128880 [0] NCCL INFO Setting affinity for GPU 0 to "
                "ffff0000,00000000,ffff0000,00000000"),
    LineParser(
        "ezpz_rank", "processes", ("'][",), parse_ezpz_rank,
        # saforem2/sam.onl web/src/pages/posts/torchtune-aurora/index.mdx (an Aurora node)
        example="[2025-01-28 08:49:37][I][ezpz/dist:869] ['x4204c5s6b0n0'][0/0]"),
    LineParser(
        "fairseq_rank", "processes", ("initialized host ",), parse_fairseq_rank,
        # ropadet's fairseq train.out (corpus gpu_crash-ropadet-fairseq-enospc)
        example="2022-06-06 09:17:48 | INFO | fairseq.distributed.utils | initialized host "
                "IR-86A4D2-FCC3 as rank 0"),
)
