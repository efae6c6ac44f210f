"""Collective timeouts and work status from ProcessGroupNCCL's watchdog, from gloo and from
Ascend's HCCL.

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
- dump signal (2.4+): ``Received a dump signal due to a collective timeout from rank 7 and we
  will try our best to dump the debug info. Last enqueued NCCL work: 56116, last completed NCCL
  work: 56116.`` (``from this local rank`` when the printing rank's own watchdog fired): rank 7
  timed out; the printing rank's own position follows. Its forerunners: ``Received a timeout
  signal from this local rank and will start to dump the debug info. Last enqueued NCCL work: 2,
  last completed NCCL work: 1.`` (2.3) and ``Received a global timeout from another rank and
  will start to dump the debug info.`` (2.2: some rank timed out, unnamed).
- TORCH_DISTRIBUTED_DEBUG=DETAIL: ``Detected mismatch between collectives on ranks. Rank 0 is
  running collective: CollectiveFingerPrint(SequenceNumber=32, OpType=ALLREDUCE, TensorShape=[4],
  …), but Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=32,
  OpType=BROADCAST, …).`` (older: no SequenceNumber): one row per rank named.
- TORCH_DISTRIBUTED_DEBUG=DETAIL, every collective (ProcessGroupWrapper's INFO line before its
  checks): ``[Rank 1] Running collective: CollectiveFingerPrint(SequenceNumber=3,
  OpType=BROADCAST, TensorShape=[1], TensorDtypes=Long, …)``: the rank entered that collective, a
  ``started`` row with its shapes and dtypes (each rank's last one says where it is in a hang).
- gloo monitored barrier: ``[Rank 0]: Rank 2 failed to pass monitoredBarrier in 30000 ms`` /
  ``Ranks 1, 2 failed to pass monitoredBarrier``: rank 0 waited; ranks 1 and 2 never arrived.
- gloo: ``Timed out waiting 5000ms for recv operation to complete`` (also send).
- Ascend HCCL's execution timeout (EI0002's notify wait, the plog's ``[TaskExecStage][Timeout]``):
  ``HCCL_*`` below.
- a rank that timed out getting rank 0's ncclUniqueId from the store: ``UNIQUE_ID_RE`` below;
  XLA's coordination service giving up on a key (JAX): ``XLA_KV_RE``.
- start-up, before any collective (``STARTUP_TIMEOUTS``): the store-based barrier of
  ``init_process_group`` (``Timed out initializing process group in store based barrier on rank:
  5, for key: store_based_barrier_key:1 (world_size=8, worker_count=6, timeout=0:00:30)``; torch
  2.x: ``on rank 5`` and ``num_workers_joined=6``): rank 5 timed out, ``world_size -
  worker_count`` members never arrived, unnamed; the c10d client socket/TCPStore (``The client
  socket has timed out after 60s while trying to connect to 192.0.0.1:1234``, also ``600000ms``,
  ``20min``): no rank, no collective, only the timeout; the TCPStore server waiting for its
  clients (``Timed out after 601 seconds waiting for clients. 1/4 clients joined.``, torch 2.x):
  likewise; a TCPStore wait (``DistStoreError: wait timeout after 300000ms, keys: /k``, torch
  2.5+): the timeout only, a start-up one when its keys are torchelastic's rendezvous or the
  store-based barrier's (mid-run it is a store-backed group's barrier, vLLM's weight sync);
  torchelastic's rendezvous (``torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError``,
  raised bare): not every node joined in time, no rank, no duration.

- NCCL_DEBUG_SUBSYS=COLL's call trace (NCCL 2.x and RCCL alike): ``host:pid:tid [1] NCCL INFO
  AllGather: opCount 1b sendbuff 0x… recvbuff 0x… count 4100 datatype 0 op 0 root 0 comm 0x…
  [nranks=4] stream 0x…``: the rank (the ``[N]`` device of a one-node job; a per-rank file's or
  prefix's rank where there is one) entered that collective, a ``started`` row numbered by its
  hexadecimal opCount (some builds print 0 for every call: the diagnosis then counts the calls).
  Point-to-point calls (Send/Recv) are left out: two ranks at one opCount in Send and Recv agree.

A row whose rank the message names about another rank (``from rank 7``, ``but Rank 1``, ``Rank 2
failed``) carries ``_named_rank``: the loader keeps that rank instead of the line's prefix.
"""

from __future__ import annotations

import math
import re

from .base import LineParser, Row, digits_int, hms_to_s, to_float, to_int

# [Rank 3] / [PG 0 Rank 3] / [PG 0 (default_pg) Rank 3] / [PG ID 0 PG GUID 0(default_pg) Rank 3]
RANK_TAG_RE = re.compile(r"\[(?:PG (?P<pg>[^\[\]]*?) )?Rank (?P<rank>\d+)\]")
# c10's log prefix quoted without its colon before the message ("[rank3] Watchdog caught …",
# NVIDIA-NeMo/RL#2462), or with a space ("[rank 3]"): the global rank, when no tag above names one
BARE_RANK_TAG_RE = re.compile(r"\[[Rr]ank ?(?P<rank>\d+)\]:?\s")
PG_PART_RE = re.compile(
    r"^(?:ID )?(?P<id>[^\s(]+)(?: PG GUID (?P<guid>[^\s(]+))?\s*(?:\((?P<name>[^)]*)\))?"
)

WATCHDOG_RE = re.compile(
    r"Watchdog caught\s+collective\s+operation\s+timeout:\s*Work(?:NCCL|Gloo|UCC)?"
    r"\((?P<body>[^()]*(?:\(ms\)[^()]*)*)\)"
    r"(?:\s*ran for\s*(?P<ran>\d[\d\s]*?)\s*milliseconds\s*before\s*timing\s*out)?"
)
# NCCL_BLOCKING_WAIT=1: the main thread, not the watchdog, gives up: "Work WorkNCCL(…) timed out
# in blocking wait" (torch 1.9+), "[Rank 3] Caught collective operation timeout for work:
# WorkNCCL(OpType=ALLREDUCE, TensorShape=[1024], Timeout(ms)=1800000)" (torch 1.6-1.8's
# WorkNCCL::wait, then "Operation timed out!")
BLOCKING_WAIT_RES = (
    re.compile(r"Work WorkNCCL\((?P<body>[^()]*(?:\(ms\)[^()]*)*)\) timed out in blocking wait"),
    re.compile(r"Caught collective operation timeout for work:\s*WorkNCCL"
               r"\((?P<body>[^()]*(?:\(ms\)[^()]*)*)\)"),
)
WORK_FIELD_RE = re.compile(r"(?<!\w)(?P<key>\w+(?:\(ms\))?)\s*=\s*(?P<val>[^,]*)")

WORK_STATUS_RE = re.compile(
    r"(?:Timeout at NCCL work|Exception hit in NCCL work|by watchdog at work"
    r"(?: sequence id)?):?\s*(?P<seq>-?\d+),?"
    r"\s*(?:PG status:\s*)?last enqueued (?:NCCL )?work:\s*(?P<enq>-?\d+),\s*"
    r"last completed (?:NCCL )?work:\s*(?P<comp>-?\d+)"
)

# The heartbeat monitor's word that a timeout was signalled through the store, by torch version:
# 2.2 "Received a global timeout from another rank and will start to dump the debug info."
# (no rank), 2.3 "Received a timeout signal from this local rank and will start to dump …"
# (pytorch/pytorch#122850), 2.4+ "Received a dump signal due to a collective timeout from rank 7
# and we will try our best to dump …"; each may end with the printing rank's last works.
DUMP_SIGNAL_WORDINGS = (
    "Received a dump signal due to a collective timeout from",
    "Received a timeout signal from",
    "Received a global timeout from",
)
DUMP_SIGNAL_RE = re.compile(
    r"(?:" + "|".join(re.escape(w) for w in DUMP_SIGNAL_WORDINGS) + r")"
    r"\s+(?:rank\s+(?P<peer>\d+)|(?P<local>this local rank)|another rank)"
    r"(?:.*?Last enqueued \w+ work:\s*(?P<enq>-?\d+),\s*last completed \w+ work:\s*"
    r"(?P<comp>-?\d+))?"
)
DETAIL_MISMATCH_RE = re.compile(
    r"Detected mismatch between collectives on ranks\.\s*Rank (?P<r1>\d+) is running "
    r"collective:\s*(?P<b1>.*?),?\s+but Rank (?P<r2>\d+) is running collective:\s*(?P<b2>.*)"
)
# values may be glued to the next key ("SequenceNumber=0OpType=REDUCE", torch 2.x)
FINGERPRINT_FIELD_RE = re.compile(
    r"(?P<key>SequenceNumber|OpType|TensorShape|TensorDtypes)="
    r"(?P<val>\[[^\]]*\]|\d+(?=\D)|[A-Za-z_0-9]+?(?=OpType=|TensorShape=|[,)\s]|$))"
)
# ProcessGroupWrapper::runCollectiveChecks logs each collective a rank enters (torch 1.10+;
# SequenceNumber since 1.13), behind glog's "[I ProcessGroupWrapper.cpp:562] " or c10's prefix
FINGERPRINT_RUNNING_RE = re.compile(
    r"\[Rank (?P<rank>\d+)\]\s*Running collective:\s*CollectiveFingerPrint\((?P<body>.*)")
MONITORED_BARRIER_OP = "MONITORED_BARRIER"  # the op of gloo's monitored barrier's rows
MONITORED_BARRIER_RE = re.compile(
    r"Ranks? (?P<ranks>\d+(?:\s*,\s*\d+)*) failed to pass monitoredBarrier(?: in (?P<ms>\d+) ms)?"
)
STATUS_START_RE = re.compile(
    r"(?:Exception \(either an error or timeout\) detected|Timeout at NCCL work|failure detected"
    r")(?!.*last completed)"
)
GLOO_TIMEOUT_RE = re.compile(
    r"Timed out waiting (?P<ms>\d+)\s*ms for (?P<op>recv|send|connect)\w* operation to complete"
)
STORE_BARRIER_RE = re.compile(
    r"Timed out initializing process group in store based barrier on rank:?\s*(?P<rank>\d+),"
    r"\s*for key:\s*(?P<key>\S+)\s*\(world_size=(?P<world>\d+),\s*"
    r"(?:worker_count|num_workers_joined)=(?P<joined>\d+),\s*timeout=(?P<timeout>(?:\d+ days?,\s*)?[^,)\s]+)"
)
SOCKET_TIMEOUT_RE = re.compile(
    r"The client socket has timed out after\s*(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>ms|s|min|h)\b"
    r"\s*while trying to connect to"
)
# the TCPStore server (rank 0's store, torch 2.x TCPStore.cpp) waiting for its clients at start-up:
# "Timed out after 601 seconds waiting for clients. 1/4 clients joined." (vllm-project/vllm#16334)
STORE_CLIENTS_RE = re.compile(
    r"Timed out after (?P<s>\d+(?:\.\d+)?) seconds waiting for clients\.\s*"
    r"(?P<joined>\d+)/(?P<world>\d+) clients joined"
)
# a TCPStore wait/get that timed out (torch 2.5+ TCPStore.cpp, pytorch/pytorch#131808): "DistStoreError:
# wait timeout after 300000ms, keys: /broadcast_from/0/75465"; the keys say who waited for what
STORE_WAIT_RE = re.compile(
    r"wait timeout after (?P<ms>\d+)\s*ms(?:,\s*keys?:\s*(?P<keys>\S+(?:,\s*/\S+)*))?"
)
# torchelastic's rendezvous did not complete on time (the agent's join, before any worker
# starts): "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError" (raised bare by
# dynamic_rendezvous), "RendezvousTimeoutError: " in the elastic error file's JSON; never the
# traceback's echo of the raising source line ("raise RendezvousTimeoutError()")
RDZV_TIMEOUT_RE = re.compile(r"(?<!raise )(?<![\w])RendezvousTimeoutError\b(?!\s*\()")
# keys that only start-up writes: torchelastic's rendezvous, init_process_group's barrier
STORE_WAIT_STARTUP_RE = re.compile(r"wait timeout after .*keys?:.*(?:torchelastic/|store_based_barrier)")
# the collectives table's op_type of the barrier's rows (no OpType: the runbook's op_type stays
# null), and the prefix of the store keys that name it (``store_based_barrier_key:1``, the Nth
# process group initialised): the barrier's process_group
STORE_BARRIER_OP = "STORE_BASED_BARRIER"
STORE_BARRIER_KEY = "store_based_barrier_key:"
UNIT_MS = {"ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000}


def _rank_and_pg(text: str, end: int) -> tuple[int | None, str | None]:
    """The rank of the tag closest before ``end``, and the process group of the closest tag
    that names one (a wrapper line reads ``[PG 1 Rank 6] … exception: [Rank 6] Watchdog…``)."""
    rank = pg = None
    local = False
    for m in RANK_TAG_RE.finditer(text, 0, end):
        rank = int(m["rank"])
        if m["pg"]:
            pg = _pg_name(m["pg"])
            local = _group_local(m["pg"])
    if rank is None:
        bare = [int(m["rank"]) for m in BARE_RANK_TAG_RE.finditer(text, 0, end)]
        rank = bare[-1] if bare else None
    return (None if local else rank), pg


PG_ID_RE = re.compile(r"\d+")


def _group_local(part: str) -> bool:
    """Whether a ``[PG … Rank N]`` tag is of a non-default process group (``PG ID 5``), whose
    ``Rank N`` is the rank within that group, not the global one."""
    if "default_pg" in part:
        return False
    ids = PG_ID_RE.findall(part)
    return bool(ids) and ids[0] != "0"


def group_tag_rank(text: str) -> int | None:
    """The rank of the last ``[PG … Rank N]`` tag in ``text`` whatever its group: within a
    non-default group, the rank as the message gives it (no global rank)."""
    ranks = [int(m["rank"]) for m in RANK_TAG_RE.finditer(text)]
    return ranks[-1] if ranks else None


def rank_tag_pg(text: str) -> str | None:
    """The process group of the last ``[PG … Rank N]`` tag in ``text`` that names one."""
    return _rank_and_pg(text, len(text))[1]


def _pg_name(part: str | None) -> str | None:
    """A process group's identity as '0' or '0 (default_pg)'."""
    if not part:
        return None
    m = PG_PART_RE.match(part.strip())
    if not m:
        return part.strip()
    name = m["name"]
    return f"{m['id']} ({name})" if name else m["id"]


OP_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _op_name(value: str | None) -> str | None:
    """An OpType as printed (``_ALLGATHER_BASE``); None for a value a paste mangled (a tmux
    scroll marker over it: ``_ALLGATHER_BA[451/1919]``)."""
    return value if value and OP_NAME_RE.match(value) else None


def parse_watchdog(text: str) -> Row | None:
    """ProcessGroupNCCL's 'Watchdog caught collective operation timeout' line."""
    m = WATCHDOG_RE.search(text) if "Watchdog caught" in text else None
    if m is None:
        m = next((m for rx in BLOCKING_WAIT_RES if (m := rx.search(text))), None)
        if m is None:
            return _cut_watchdog(text)
    fields = {f["key"].lower(): f["val"].strip() for f in WORK_FIELD_RE.finditer(m["body"])}
    rank, pg = _rank_and_pg(text, m.start())
    return {
        "rank": rank,
        "process_group": pg,
        "seq_num": to_int(fields.get("seqnum")),
        "op_type": _op_name(fields.get("optype")),
        "numel_in": to_int(fields.get("numelin")),
        "numel_out": to_int(fields.get("numelout")),
        "timeout_ms": _duration(fields.get("timeout(ms)")),
        "ran_for_ms": _duration(m.groupdict().get("ran")),
        "state": "timed_out",
    }


def _duration(text: str | None) -> int | None:
    """Milliseconds as printed; a negative one (a corrupt or hostile line) is no duration."""
    v = to_int(text)
    return v if v is None or v >= 0 else None


CUT_WORK_RE = re.compile(r"Watchdog caught\s+collective\s+operation\s+timeout:\s*WorkNCCL\((?P<body>[^()]*)$")


def _cut_watchdog(text: str) -> Row | None:
    """A watchdog line the excerpt cut inside ``WorkNCCL(…``: the fields before the cut (each
    closed by its comma; a value at the cut may be missing digits)."""
    m = CUT_WORK_RE.search(text)
    if m is None:
        return None
    body = m["body"]
    fields = {f["key"].lower(): f["val"].strip() for f in WORK_FIELD_RE.finditer(body)
              if body[f.end():f.end() + 1] == ","}
    rank, pg = _rank_and_pg(text, m.start())
    return {"rank": rank, "process_group": pg, "seq_num": to_int(fields.get("seqnum")),
            "op_type": _op_name(fields.get("optype")),
            "numel_in": to_int(fields.get("numelin")), "numel_out": to_int(fields.get("numelout")),
            "timeout_ms": _duration(fields.get("timeout(ms)")), "state": "timed_out"}


RAN_FOR_TEXT = "ran for 0 milliseconds before timing out"  # digits as 0, spaces as one


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
    tail = re.sub(r"\d+", "0", re.sub(r"\s+", " ", text[m.end():].strip()))
    return tail != RAN_FOR_TEXT and RAN_FOR_TEXT.startswith(tail)


def status_incomplete(text: str) -> bool:
    """A status line wrapped before its 'last completed … work: N' (a terminal or a paste)."""
    return WORK_STATUS_RE.search(text) is None and bool(STATUS_START_RE.search(text))


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


def parse_dump_signal(text: str) -> list[Row] | None:
    """'Received a dump signal due to a collective timeout from rank N': rank N timed out (or
    the printing rank, 'from this local rank'); the printing rank's last enqueued/completed
    work is its position (a status row at the first uncompleted work)."""
    m = DUMP_SIGNAL_RE.search(text)
    if not m:
        return None
    rank, pg = _rank_and_pg(text, m.start())
    rows: list[Row] = []
    if m["peer"] is not None:
        rows.append({"rank": int(m["peer"]), "process_group": pg, "state": "timed_out",
                     "_named_rank": True})
    if m["enq"] is not None:
        enq, comp = int(m["enq"]), int(m["comp"])
        # the timed-out work is this group's first uncompleted one; with nothing uncompleted
        # here (enqueued == completed) it is in another group, which the line does not name.
        # 'last completed work: -1' is "none yet": sequence numbers start at 1 (the same
        # watchdog's 'WorkNCCL(SeqNum=1, …)' beside 'last enqueued work: 1, last completed
        # work: -1', Hoilap/AS-LoRA logs_llama/order_1.log)
        rows.append({"rank": rank, "process_group": pg, "state": "status",
                     "seq_num": max(comp + 1, 1) if m["local"] and enq > comp else None,
                     "last_enqueued": enq, "last_completed": comp})
        if m["local"] and enq <= comp:
            rows.append({"rank": rank, "state": "timed_out"})
    elif m["local"]:
        rows.append({"rank": rank, "process_group": pg, "state": "timed_out"})
    return rows or None


def _fingerprint(body: str) -> dict[str, str]:
    return {f["key"]: f["val"] for f in FINGERPRINT_FIELD_RE.finditer(body)}


def parse_detail_mismatch(text: str) -> list[Row] | None:
    """TORCH_DISTRIBUTED_DEBUG=DETAIL's 'Detected mismatch between collectives on ranks': one
    row per rank it names, with the collective that rank was running."""
    m = DETAIL_MISMATCH_RE.search(text)
    if not m:
        return None
    rows: list[Row] = []
    for r, body in ((m["r1"], m["b1"]), (m["r2"], m["b2"])):
        f = _fingerprint(body)
        op = f.get("OpType")
        if op is None:  # 'Rank 3 is running BROADCAST' (no fingerprint)
            w = re.match(r"\s*([A-Z_]{3,})\b", body)
            op = w.group(1) if w else None
        rows.append({"rank": int(r), "seq_num": to_int(f.get("SequenceNumber")), "op_type": op,
                     "sizes": f.get("TensorShape"), "dtypes": f.get("TensorDtypes"),
                     "state": "mismatch", "_named_rank": True})
    return rows


def parse_detail_running(text: str) -> Row | None:
    """TORCH_DISTRIBUTED_DEBUG=DETAIL's 'Running collective: CollectiveFingerPrint(…)': the
    collective the named rank entered, a ``started`` row."""
    m = FINGERPRINT_RUNNING_RE.search(text)
    if not m:
        return None
    f = _fingerprint(m["body"])
    if f.get("OpType") is None:
        return None
    return {"rank": int(m["rank"]), "seq_num": to_int(f.get("SequenceNumber")),
            "op_type": f["OpType"], "sizes": f.get("TensorShape"), "dtypes": f.get("TensorDtypes"),
            "state": "started", "_named_rank": True}


# NCCL_DEBUG_SUBSYS=COLL: "host:pid:tid [dev] NCCL INFO AllReduce: opCount 1a sendbuff … count 64
# datatype 7 op 0 root 0 comm 0x… [nranks=2] stream 0x…" (collectives only, not Send/Recv)
NCCL_COLL_TRACE_RE = re.compile(
    r"\[(?P<dev>\d+)\] NCCL INFO (?P<op>AllReduce|Broadcast|Bcast|Reduce|AllGather|ReduceScatter"
    r"|AllToAll|AlltoAll|Gather|Scatter): opCount (?P<op_count>[0-9a-fA-F]+)\b"
    r".*?\bcount (?P<count>\d+) datatype (?P<dtype>\d+)"
)


def parse_nccl_coll_trace(text: str) -> Row | None:
    """NCCL_DEBUG_SUBSYS=COLL's per-call line: the collective the rank entered, a ``started``
    row numbered by its opCount (hexadecimal), its count and datatype as sizes and dtypes."""
    m = NCCL_COLL_TRACE_RE.search(text)
    if not m:
        return None
    return {"rank": int(m["dev"]), "seq_num": int(m["op_count"], 16), "op_type": m["op"],
            "sizes": m["count"], "dtypes": m["dtype"], "state": "started"}


MONITORED_REACHED_RE = re.compile(
    r"Rank (?P<rank>\d+) successfully reached monitoredBarrier, but received errors while waiting "
    r"for send/recv from rank \d+")


def parse_monitored_barrier(text: str) -> list[Row] | None:
    """gloo's monitored barrier: the waiting rank (0) timed out, the ranks named never came; or
    a rank that reached it and timed out waiting on rank 0 (the barrier's root). That names no
    late rank: torch points at rank 0's logs for the faulty one ("Please check rank 0 logs for
    faulty rank"), and rank 0 stops answering either when it is late itself or when it gave up
    on another rank, which its own report names ("[Rank 0]: Rank 2 failed to pass
    monitoredBarrier in 30000 ms": FunAudioLLM/CosyVoice#180 holds both lines)."""
    r = MONITORED_REACHED_RE.search(text)
    if r:
        _, pg = _rank_and_pg(text, r.start())
        return [{"rank": int(r["rank"]), "process_group": pg, "op_type": MONITORED_BARRIER_OP,
                 "state": "timed_out", "_named_rank": True}]
    m = MONITORED_BARRIER_RE.search(text)
    if not m:
        return None
    rank, pg = _rank_and_pg(text, m.start())
    ms = to_int(m["ms"])
    rows: list[Row] = [{"rank": rank, "process_group": pg, "op_type": MONITORED_BARRIER_OP,
                        "timeout_ms": ms, "state": "timed_out"}]
    rows += [{"rank": int(r), "process_group": pg, "op_type": MONITORED_BARRIER_OP,
              "state": "absent", "_named_rank": True}
             for r in re.findall(r"\d+", m["ranks"])]
    return rows


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


def parse_store_barrier(text: str) -> Row | None:
    """init_process_group's store-based barrier timed out on the rank the message names."""
    m = STORE_BARRIER_RE.search(text)
    if not m:
        return None
    return {"rank": digits_int(m["rank"]), "op_type": STORE_BARRIER_OP, "process_group": m["key"],
            "timeout_ms": _ms(hms_to_s(m["timeout"]), 1000),
            "state": "timed_out", "_named_rank": True}


def parse_socket_timeout(text: str) -> Row | None:
    """The c10d client socket (rendezvous, TCPStore) gave up connecting: a timeout, no rank."""
    m = SOCKET_TIMEOUT_RE.search(text)
    if not m:
        return None
    return {"rank": None, "timeout_ms": _ms(to_float(m["value"]), UNIT_MS[m["unit"]]),
            "state": "timed_out"}


def parse_store_clients(text: str) -> Row | None:
    """The TCPStore server gave up waiting for its clients: a start-up timeout, no rank named."""
    m = STORE_CLIENTS_RE.search(text)
    if not m:
        return None
    return {"rank": None, "timeout_ms": _ms(to_float(m["s"]), 1000), "state": "timed_out"}


def parse_store_wait(text: str) -> Row | None:
    """A TCPStore wait timed out (a key nobody set in time): the timeout; no rank, no collective."""
    m = STORE_WAIT_RE.search(text)
    if not m:
        return None
    return {"rank": None, "timeout_ms": to_int(m["ms"]), "state": "timed_out"}


# the agent's warnings that it lost the rendezvous's store, its keep-alive or its shutdown
# failing with that error type once the store's host left (after a finished run, the master
# node's agent exits first: "The node 'hercules…_441213_0' has failed to send a keep-alive
# heartbeat to the rendezvous '1265' due to an error of type RendezvousTimeoutError.", then
# "… has failed to shutdown the rendezvous '1265' due to an error of type RendezvousConnectionError",
# bigyang's two-node DeepSpeed runs): no start-up that timed out
RDZV_AGENT_WARNING_RE = re.compile(r"has failed to (?:send a keep-alive heartbeat to|shutdown) "
                                   r"the rendezvous")


def parse_rendezvous_timeout(text: str) -> Row | None:
    """torchelastic's rendezvous timed out: a start-up timeout, no rank, no duration."""
    if not RDZV_TIMEOUT_RE.search(text) or RDZV_AGENT_WARNING_RE.search(text):
        return None
    return {"rank": None, "state": "timed_out"}


# --- Ascend HCCL (torch_npu, MindSpore, CANN's own log) ---------------------------------------
# HCCL's execution timeout (EI0002, default HCCL_EXEC_TIMEOUT 1800 s) is the NPU's counterpart of
# the NCCL watchdog: a rank waited on a notify its peer never sent. Wordings:
# torch_npu, the rank in the line before ("[ERROR] 2025-10-11-15:09:34 (PID:2969, Device:0,
# RankID:101) ERR00100 PTA call acl api failed." then "EI0002: [PID: 2969] 2025-10-11-15:09:34.713
# The wait execution of the Notify register times out. Reason: … remote rank: [24]. base
# information: [streamID:[109], taskID[38], taskType[Notify Wait], tag[AllReduce_group_name_1654
# NHRAllReduceComm_device], …]", vllm-project/vllm-ascend#3413); MindSpore, on one line ("RunGraph]
# Run task for graph:kernel_graph_1 error! … Ascend Error Message:EI0002: The wait execution of
# the Notify register times out. … tag[HcomAllReduce_6629421139219749105_0].]"); CANN's plog
# ("[ERROR] HCCL(2111665,all_reduce_test):2025-10-24-11:18:29.499.235 [task_exception_handler.cc
# :908] [2111665][TaskExecStage][Timeout][Host]Task run failed, base information is
# streamID:[2], taskID[21], tag[AllReduce_127.10.0.1%enp_60000_0_1761275812718970], …").
# The collective is the tag's leading word; the remote rank is a rank of the tag's group, not a
# global one, and is not read. No timeout value is printed (the advice's "default 1800s" is not
# this run's).
# The runtime's report of the same wait from the device's side (CANN's device_error_proc.cc),
# after torch_npu's line and an "EI9999: Inner Error!" header: "EI9999: 2024-07-03-11:28:40.419
# The error from device(chipId:0, dieId:0), serial number is 1, hccl fftsplus task timeout
# occurred during task execution, stream_id:4, sq_id:4, task_id:5, stuck notify num:7,
# timeout:1836." (Ascend/pytorch#43; "timeout:30min(default)." elsewhere): no collective named.
HCCL_NOTIFY_TEXT = "Notify register times out"
HCCL_PLOG_TEXT = "[TaskExecStage][Timeout]"
HCCL_FFTS_TEXT = "hccl fftsplus task timeout occurred"
HCCL_PTA_TEXT = "PTA call acl api failed"
# HCCL's socket timeout (EI0006: "Getting socket times out. Reason: Remote Rank did not send the
# data in time."), after torch_npu's "OPS function error: HcclAllreduce, error code is 6" and its
# "(PID:…, Device:1, RankID:1) ERR01100 OPS call acl api failed." (vllm-project/vllm-ascend#486):
# the collective is the OPS function's name
HCCL_SOCKET_TEXT = "Getting socket times out"
HCCL_OPS_FUNC_TEXT = "OPS function error: Hccl"
HCCL_OPS_CALL_TEXT = "OPS call acl api failed"
HCCL_OPS_FUNC_RE = re.compile(r"OPS function error: Hccl(?P<op>[A-Z][A-Za-z]*+)")
HCCL_TIMEOUT_TEXTS = (HCCL_NOTIFY_TEXT, HCCL_PLOG_TEXT, HCCL_FFTS_TEXT, HCCL_SOCKET_TEXT)
HCCL_INNER_ERROR_RE = re.compile(r"^\s*+E[A-Z]9999: Inner Error!\s*+$")
HCCL_TAG_RE = re.compile(r"tag\[(?:Hcom)?(?P<op>[A-Z][A-Za-z]*?)(?:V|C|VC)?(?=[_\]\d])")
HCCL_RANKID_RE = re.compile(r"\bRankID:\s*(?P<rank>\d+)\)")


def hccl_incomplete(text: str) -> bool:
    """torch_npu's 'PTA call acl api failed' line (or its 'OPS function error: Hccl…' and 'OPS
    call acl api failed' lines), whose error code and message (EI0002's notify timeout, EI0006's
    socket timeout, the device's fftsplus timeout) follow on the next lines: the rank is in
    the call's line."""
    if any(t in text for t in HCCL_TIMEOUT_TEXTS):
        return False
    return ((HCCL_PTA_TEXT in text or HCCL_OPS_CALL_TEXT in text) and "RankID:" in text
            or HCCL_OPS_FUNC_TEXT in text)


def hccl_continues(so_far: str, body: str) -> bool:
    """The line after torch_npu's failed call continues it when it is HCCL's timeout (an EI0002
    or EI0006 record, the device's fftsplus timeout), the "EI9999: Inner Error!" header before
    one, or the call's 'OPS call acl api failed' line after its 'OPS function error'."""
    return (HCCL_NOTIFY_TEXT in body or HCCL_FFTS_TEXT in body or HCCL_SOCKET_TEXT in body
            or HCCL_INNER_ERROR_RE.match(body) is not None
            or (HCCL_OPS_FUNC_TEXT in so_far and HCCL_OPS_CALL_TEXT in body))


def parse_hccl_timeout(text: str) -> Row | None:
    """HCCL's notify-wait execution timeout (EI0002), its socket timeout (EI0006), its plog's
    'Task run failed' timeout or the device's fftsplus task timeout: a timed-out row with the
    collective its tag (or torch_npu's OPS function) names and the RankID torch_npu prints."""
    if not any(t in text for t in HCCL_TIMEOUT_TEXTS):
        return None
    tag = HCCL_TAG_RE.search(text)
    rid = HCCL_RANKID_RE.search(text)
    ops = HCCL_OPS_FUNC_RE.search(text) if tag is None else None
    op = tag["op"].upper() if tag else ops["op"].upper() if ops else None
    return {"rank": int(rid["rank"]) if rid else None, "op_type": _op_name(op),
            "state": "timed_out"}


# --- a rank waiting for rank 0's NCCL unique id (ProcessGroupNCCL::broadcastUniqueNCCLID) --------
# When a communicator is first made (the group's first collective), rank 0 puts ncclUniqueId in
# the store and every other rank gets it: "[4] is setting up NCCL communicator and retrieving
# ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error:
# Socket Timeout" (torch 2.0-2.1, kyleliang919/C-Optim#10, SymbioticLab/Oobleck#19), "… got
# error: wait timeout after 600000ms" (2.2+, a SLURM run's slurm_927818.err quoted in its notes).
# The rank that waited timed out; the one it waited for had not reached that collective. A peer
# that went away instead ("got error: Connection reset by peer", "Failed to recv, got 0 bytes")
# is no timeout, and is left to the crash reader.
UNIQUE_ID_RE = re.compile(
    r"\[(?:[^\[\]]*Rank )?(?P<rank>\d+)\] is setting up NCCL communicator and retrieving "
    r"ncclUniqueId from \[(?P<root>\d+)\] via c10d key-value store by key '[^']*', but "
    r"store->get\('[^']*'\) got error: (?P<err>Socket Timeout|wait timeout after (?P<ms>\d+)ms"
    r"|Timed out)")


def parse_unique_id_timeout(text: str) -> list[Row] | None:
    """A rank that timed out getting rank 0's ncclUniqueId: it timed out, the root never came."""
    m = UNIQUE_ID_RE.search(text)
    if not m:
        return None
    return [{"rank": int(m["rank"]), "timeout_ms": to_int(m["ms"]), "state": "timed_out",
             "_named_rank": True},
            {"rank": int(m["root"]), "state": "absent", "_named_rank": True}]


# --- XLA's coordination service (JAX, TensorFlow): a key-value wait that timed out ---------------
# absl's "GetKeyValue() timed out with key: $0 and duration: $1" (xla/tsl coordination service
# agent; the duration as absl::FormatDuration writes it: "10m", "2m", "5m30s", "1.5s"): a process
# waited for a key another process never set. The key "devices=[0,…,29]; …; root_device=0" is an
# NCCL clique's id being set up for a collective (EnzymeAD/Enzyme-JAX#623, "Execution of replica
# 0 failed: DEADLINE_EXCEEDED: GetKeyValue() timed out with key: devices=[…] … and duration:
# 10m"); "cuda:local_topology/cuda/1" is jax.distributed.initialize's topology exchange at start-up
# ("Getting local topologies failed: GetKeyValue() timed out with key: cuda:local_topology/cuda/1
# … duration: 2m", notes of JAX users on Perlmutter and TPU hosts). No rank is printed.
XLA_KV_RE = re.compile(r"GetKeyValue\(\) timed out with key: (?P<key>.*?) and duration: "
                       r"(?P<dur>(?:\d+(?:\.\d+)?(?:ms|us|ns|h|m|s))+)\b")
XLA_TOPOLOGY_RE = re.compile(r"GetKeyValue\(\) timed out with key: \w+:local_topology/")
ABSL_DURATION_PART_RE = re.compile(r"(?P<v>\d+(?:\.\d+)?)(?P<u>ms|us|ns|h|m|s)")
ABSL_UNIT_MS = {"h": 3_600_000.0, "m": 60_000.0, "s": 1000.0, "ms": 1.0, "us": 1e-3, "ns": 1e-6}


def absl_duration_ms(text: str) -> int | None:
    """An absl::FormatDuration duration ("10m", "5m30s", "1.5s") in milliseconds."""
    parts = ABSL_DURATION_PART_RE.findall(text)
    if not parts:
        return None
    return _ms(sum(float(v) * ABSL_UNIT_MS[u] for v, u in parts), 1)


def parse_xla_kv_timeout(text: str) -> Row | None:
    """XLA's coordination service gave up waiting for a key: a timeout, its duration; no rank."""
    m = XLA_KV_RE.search(text)
    if not m:
        return None
    return {"rank": None, "timeout_ms": absl_duration_ms(m["dur"]), "state": "timed_out"}


# start-up's timeout lines that name no collective, and what each says happened
STARTUP_LINES: tuple[tuple[re.Pattern[str], str], ...] = (
    (SOCKET_TIMEOUT_RE, "the c10d client socket never reached the store (rendezvous or TCPStore)"),
    (STORE_CLIENTS_RE, "the TCPStore server waited for clients that never joined"),
    (STORE_WAIT_STARTUP_RE, "a start-up key of the store (rendezvous or barrier) was never set"),
    (RDZV_TIMEOUT_RE, "torchelastic's rendezvous did not complete: not every node joined"),
    (XLA_TOPOLOGY_RE, "jax.distributed's topology exchange did not complete: a process never "
     "published its devices"),
)


def is_store_barrier(process_group: str | None) -> bool:
    """Whether a process group is init_process_group's store-based barrier key."""
    return bool(process_group) and str(process_group).startswith(STORE_BARRIER_KEY)


def startup_kind(text: str) -> str | None:
    """What a start-up timeout line that names no collective says happened, or None."""
    return next((what for rx, what in STARTUP_LINES if rx.search(text)), None)


def startup_line(text: str) -> bool:
    """Whether a timeout line is one of start-up's that names no collective (the c10d client
    socket, the TCPStore server waiting for clients, torchelastic's rendezvous)."""
    return startup_kind(text) is not None


def _ms(value: float | None, scale: int) -> int | None:
    """A duration in milliseconds; None for one no clock could show (inf, beyond int64)."""
    if value is None or not math.isfinite(value) or value * scale >= 2**63:
        return None
    return round(value * scale)


# Timeouts at start-up, before any collective ran: one table, one entry per wording family.
STARTUP_TIMEOUTS: tuple[LineParser, ...] = (
    LineParser(
        "store_based_barrier_timeout",
        "collectives",
        ("in store based barrier on rank",),
        parse_store_barrier,
        example="RuntimeError: Timed out initializing process group in store based barrier on "
        "rank: 5, for key: store_based_barrier_key:32 (world_size=8, worker_count=4, "
        "timeout=0:00:30)",
    ),
    LineParser(
        "c10d_socket_timeout",
        "collectives",
        ("client socket has timed out",),
        parse_socket_timeout,
        example="[E socket.cpp:860] [c10d] The client socket has timed out after 60s while "
        "trying to connect to 192.0.0.1:1234",
    ),
    LineParser(
        "tcpstore_clients_timeout",
        "collectives",
        ("waiting for clients",),
        parse_store_clients,
        example="torch.distributed.DistStoreError: Timed out after 601 seconds waiting for "
        "clients. 1/4 clients joined.",
    ),
    LineParser(
        "rendezvous_timeout",
        "collectives",
        ("RendezvousTimeoutError",),
        parse_rendezvous_timeout,
        example="torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
    ),
    LineParser(
        "tcpstore_wait_timeout",
        "collectives",
        ("wait timeout after",),
        parse_store_wait,
        example="[rank0]: torch.distributed.DistStoreError: wait timeout after 300000ms, keys: "
        "/broadcast_from/0/75465",
    ),
)

PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "nccl_watchdog_timeout",
        "collectives",
        ("Watchdog caught", "timed out in blocking wait", "Caught collective operation timeout"),
        parse_watchdog,
        incomplete=watchdog_incomplete,
        example="[rank3]:[E708 01:47:23.901930947 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog "
        "caught collective operation timeout: WorkNCCL(SeqNum=2901, OpType=ALLREDUCE, NumelIn=1,"
        " NumelOut=1, Timeout(ms)=600000) ran for 600070 milliseconds before timing out.",
    ),
    LineParser(
        "nccl_work_status",
        "collectives",
        ("last enqueued", "or timeout) detected", "Timeout at NCCL work", "failure detected by"),
        parse_work_status,
        incomplete=status_incomplete,
        example="[rank0]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 0] Timeout at NCCL work: 5, "
        "last enqueued NCCL work: 5, last completed NCCL work: 4.",
    ),
    LineParser(
        "nccl_dump_signal",
        "collectives",
        ("Received a dump signal", "Received a timeout signal", "Received a global timeout"),
        parse_dump_signal,
        example="[rank6]:[E703 21:51:54.112142364 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID "
        "0(default_pg) Rank 6] Received a dump signal due to a collective timeout from  rank 7 and"
        " we will try our best to dump the debug info. Last enqueued NCCL work: 56116, last "
        "completed NCCL work: 56116.This is most likely caused by incorrect usages of collectives",
    ),
    LineParser(
        "detail_collective_mismatch",
        "collectives",
        ("Detected mismatch between collectives",),
        parse_detail_mismatch,
        example="RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
        "collective: CollectiveFingerPrint(OpType=ALLGATHER, TensorShape=[4], TensorDtypes=Float,"
        " TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided "
        "(default), requires_grad=false (default), pinned_memory=false (default), memory_format="
        "(nullopt))), but Rank 2 is running collective: CollectiveFingerPrint(OpType=ALLGATHER).",
    ),
    LineParser(
        "detail_collective_running",
        "collectives",
        ("Running collective:",),
        parse_detail_running,
        # Lightning-AI/pytorch-lightning#19106 (TORCH_DISTRIBUTED_DEBUG=DETAIL, torch 2.1)
        example="[I ProcessGroupWrapper.cpp:562] [Rank 1] Running collective: CollectiveFingerPrint("
        "SequenceNumber=3, OpType=BROADCAST, TensorShape=[1], TensorDtypes=Long, TensorDeviceTypes="
        "TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), requires_grad="
        "false (default), pinned_memory=false (default), memory_format=(nullopt)))",
    ),
    LineParser(
        "nccl_coll_trace",
        "collectives",
        (": opCount ",),
        parse_nccl_coll_trace,
        # ROCm/rccl#429 (maintainer's quote of the reporter's RCCL COLL trace)
        example="h03r3n06:45012:45012 [2] NCCL INFO AllGather: opCount 28c sendbuff 0x7f1fd894af00"
        " recvbuff 0x7f1ed1c00100 count 59205120 datatype 0 op 0 root 0 comm 0x559c24b55610 "
        "[nranks=4] stream 0x559c248a3630",
    ),
    LineParser(
        "nccl_unique_id_timeout",
        "collectives",
        ("retrieving ncclUniqueId from",),
        parse_unique_id_timeout,
        # kyleliang919/C-Optim#10 (torch 2.1)
        example="RuntimeError: [4] is setting up NCCL communicator and retrieving ncclUniqueId "
        "from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket "
        "Timeout",
    ),
    LineParser(
        "xla_kv_timeout",
        "collectives",
        ("GetKeyValue() timed out",),
        parse_xla_kv_timeout,
        # EnzymeAD/Enzyme-JAX#623 (cut before its key's list of devices ends, as pasted)
        example="E0000 00:00:1743713172.513857  698835 pjrt_stream_executor_client.cc:3072] "
        "Execution of replica 0 failed: DEADLINE_EXCEEDED: GetKeyValue() timed out with key: "
        "devices=[0,1]; stream=0; groups=[[0,1]]; root_device=0; num_local_participants=2 and "
        "duration: 10m [type.googleapis.com/tensorflow.CoordinationServiceError='']",
    ),
    LineParser(
        "hccl_exec_timeout",
        "collectives",
        (*HCCL_TIMEOUT_TEXTS, HCCL_PTA_TEXT, HCCL_OPS_FUNC_TEXT, HCCL_OPS_CALL_TEXT),
        parse_hccl_timeout,
        incomplete=hccl_incomplete,
        continues=hccl_continues,
        # vllm-project/vllm-ascend#3413 (torch_npu; the record's second line)
        example="EI0002: [PID: 2969] 2025-10-11-15:09:34.713.335 The wait execution of the Notify "
        "register times out. Reason: The Notify register has not received the Notify record from "
        "remote rank: [24]. base information: [streamID:[109], taskID[38], taskType[Notify Wait], "
        "tag[AllReduce_group_name_1654NHRAllReduceComm_device], AlgType(level 0-1-2):"
        "[ring-NHR-NHR].].",
    ),
    LineParser(
        "gloo_monitored_barrier",
        "collectives",
        ("failed to pass monitoredBarrier", "successfully reached monitoredBarrier"),
        parse_monitored_barrier,
        example="RuntimeError: Rank 1 failed to pass monitoredBarrier in 2000 ms",
    ),
    LineParser(
        "gloo_timeout",
        "collectives",
        ("Timed out waiting",),
        parse_gloo_timeout,
        example="RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Timed out "
        "waiting 5000ms for recv operation to complete",
    ),
    *STARTUP_TIMEOUTS,
)
