"""Reports that name the ranks that never arrived at a collective or barrier → ``collectives``.

Each rank such a report names as missing is an ``absent`` row (``_named_rank``: the report speaks
of another rank than the one that printed it); the timeout runbook counts them as lagging ranks.

One line each (``LINE_PARSERS``):

- Horovod's stall inspector: ``HorovodBroadcast_dense_kernel_0 [missing ranks: 1]`` (after
  horovod#342) or ``allreduce.conv1.weight [ready ranks: 1, 7, 5]`` (before): the stalled op, a
  ``timed_out`` row for the rank that printed it, ``absent`` (missing) or ``started`` (ready) rows;
  where most ranks up to the highest ready one are ready, one the list leaves out never arrived
  (ranks count from 0: horovod#215 lists 0-31 without 16), an ``absent`` row; above it the world
  size is unknown, and a list of a few (horovod#336's ``[ready ranks: 3]``) is ranks split over
  different ops, not stragglers.
- torch's desync report (``TORCH_DISTRIBUTED_DEBUG``/``TORCH_NCCL_DESYNC_DEBUG``): ``[7] finished
  collective #182, but didn't join collective #183 (count from 1)``, ``[2] joined but didn't
  finish collective #5 (count from 1)`` (still in the oldest collective) and ``ranks [1, 3] are
  the lagging ranks that caused this timeout. They never joined any collectives``: each names
  ranks behind the others (absent), except the ranks that joined: those are ``started`` rows
  (no op, no sequence number), inside the oldest collective — behind a rank that printed the
  report from a later one, beside it when it is one of them (then every rank listed is stuck in
  the same collective: ``[0, …, 15] joined but didn't finish collective #730`` from rank 6).
  Its numbers count from 1 and are not the WorkNCCL SeqNum, so the rows carry none.
- JAX's coordination service on a task whose heartbeats stopped: ``/job:jax_worker/replica:0/
  task:37 has been set to ERROR in coordination service: UNAVAILABLE: Task /job:jax_worker/
  replica:0/task:37 heartbeat timeout``: an ``absent`` row of that task (the task id is
  ``jax.process_index()``), no collective named; the coordinator that prints it says nothing
  of its own rank.
- fr_trace's first form, one printed line: ``Not all ranks joining collective for group
  0:default_pg collective nccl:all_reduce  Missing ranks are {1}`` (no sequence number).

Blocks of several lines (``MissingRanksBlock``, one per writer):

- Horovod's stall inspector since 0.19 (``stall_inspector.cc``): ``Stalled ranks:`` (later
  ``Missing ranks:``), then one ``R: [op, op, …]`` line per rank that has not submitted those ops
  (``R!:`` a rank that shut down; five ops at most, then ``...``): a ``timed_out`` row per op (for
  the rank that printed it); a rank lacking every op listed is behind (``absent`` rows), one that
  lacks only some is ``started`` in the others (automl#563: rank 0 lacks the broadcasts rank 1
  waits in, rank 1 the allreduces rank 0 waits in: no rank is behind, they wait on each other).

- flight recorder's analyser (``torchfrtrace`` / ``fr_trace``): ``Not all ranks joining
  collective 5 at entry 4`` (or ``…collective, sequence number: 4`` / ``…collective: sequence
  number: 31117``), then ``group info: 0:default_pg``, ``collective: nccl:all_reduce``,
  ``missing ranks: {1}``.
- NCCL's RAS status report (NCCL >= 2.24): ``Communicator ranks have different AllGather
  operation counts``, then ``30 ranks have launched up to operation 640``, ``2 ranks have launched
  up to operation 641`` and the ranks of the outlier group(s) (``Rank 12 -- GPU 4 managed by
  process …``, or ``Rank 7 has launched up to operation 60 -- GPU 3 …`` for a group of one). The
  ranks at the highest count arrived there; the others are behind it (lagging). Its INCOMPLETE
  communicators name the ranks that did not answer: ``Missing communicator data from 1 rank``
  then ``The missing rank: 21`` (2.24-2.25) or ``Rank 7 -- GPU 3 managed by process 3748990 on
  node node1`` (2.26+): absent rows (no operation: RAS says only that they are silent).
- NVIDIA resiliency extension's flight-recorder attribution (``nvidia_resiliency_ext.attribution.
  trace_analyzer.fr_attribution``): a ``PGID | Process Group Desc | Op Type | Size | Dtype |
  Missing Ranks`` header, then one row per process group's stuck collective, ``72 |
  EXPERT_MODEL_PARALLEL_GROUP,0 | nccl:all_to_all | 2048x5120 | BFloat16 | 9,14``: the ranks of
  the last column never arrived (``absent``). Its ``Completed Ranks`` table names the ranks
  that finished and gives no row.
- init_process_group's store-based barrier while it waits (torch < 2.1, every
  ``_store_based_barrier`` poll): ``Waiting in store based barrier to initialize process group for
  rank: 0, key: store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)``.
  Each line is a ``started`` row of the rank that waits (with the barrier's ``timeout_ms``),
  unless the barrier then completes (``Completed store-based barrier for key:… with 8 nodes``:
  the wait ended, no row); where one writer's lines show exactly
  ``worker_count`` waiting ranks and ``world_size - worker_count`` ranks of the world never
  print, those are ``absent`` (read by absence, at the end of the stream). The barrier's timeout
  (``Timed out initializing process group in store based barrier on rank: 0, for key: … (world_size=2,
  worker_count=1, …)``, its row written by ``parse.collectives``) counts its rank as one that
  arrived, by the same rule: the one rank of two that never joined is named.
- torch_ucc's comm check on a collective timeout (ProcessGroupUCC, facebookresearch/torch_ucc
  #39 and #53, 2021-2022): the ``[Rank 1][ProcessGroupUCC-1][COMM_CHECK]`` header, then ``Aborting
  comms #12 (op=ALLTOALL_BASE) due to the problematic ranks: [ 0 ]``, ``Ranks [0] are 'Collective
  wasn't posted'`` (each problematic state) and, after ``Comms status of other ranks:``, ``Ranks [1
  2 … 15] are last known progressing comms #12 (op=ALLTOALL_BASE)`` per sequence number. The
  printing rank timed out in the aborted collective (``timed_out``); the ranks whose last
  collective is behind the highest one, and the problematic ranks the check names besides the
  printer, are ``absent`` from it, the others ``started`` in it. Where the check names every rank
  (all stuck alike, its "application issue") no rank is behind.
- JAX's coordination-service barrier: ``DEADLINE_EXCEEDED: Barrier timed out. Barrier_id:
  PjRT_Client_Connect. Timed out task names:`` then one ``/job:jax_worker/replica:0/task:3`` line
  per task that never arrived (also inline, ``\\n``-escaped, in the GRPC detail); newer JAX:
  ``Barrier timed out. Id: …`` and ``The first task at the barrier: /job:…/task:13`` (arrived).
  The printing task is the one whose ``jax.distributed.initialize(…, process_id=N)`` the
  traceback shows, when it does. A barrier that names no task still timed out: its
  ``timed_out`` row, with the timeout the start-up barrier's ``Stopping coordination service as
  cluster registration failed. … the timeout is currently set to: 1h.`` states before it (an
  absl duration).
"""

from __future__ import annotations

import re

from .base import LineParser, Row, digits_int, hms_to_s

MAX_COMM_RANKS = 1 << 20  # the largest communicator RAS can describe, far above any real job
RANK_LIST_RE = re.compile(r"\d+")

STALL_RE = re.compile(r"(?<![\w./-])(?P<op>[\w./-]+)\s*\[(?P<kind>missing|ready)\s+ranks:\s*"
                      r"(?P<ranks>\d+(?:\s*,\s*\d+)*)\s*\]")
# torch's desync report (c10d TraceUtils.h, 1.13+), one line per finding, each naming the ranks
# behind the rest: those that never reached the next collective, those still inside the oldest
# one, those that never joined any
DESYNC_LAGGING_RES = (
    re.compile(r"\[(?P<ranks>\d+(?:\s*,\s*\d+)*)\]\s*finished collective #\d+,\s*but didn't "
               r"join collective #\d+"),
    re.compile(r"\[(?P<ranks>\d+(?:\s*,\s*\d+)*)\]\s*(?P<joined>joined) but didn't finish "
               r"collective #\d+"),
    re.compile(r"ranks \[(?P<ranks>\d+(?:\s*,\s*\d+)*)\] are the lagging ranks that caused this "
               r"timeout"),
)

FR_START_RE = re.compile(
    r"Not all ranks joining collective(?:[,:]?\s*sequence number:)?\s*(?P<seq>\d+)"
    r"(?:\s+at entry \d+)?\s*$")
# fr_trace's first text report (a print, before its logger lines): one line, no sequence number
FR_INLINE_RE = re.compile(
    r"Not all ranks joining collective for group (?P<group>\S+) collective (?P<op>\S+)\s+"
    r"Missing ranks are (?P<ranks>\{[\d,\s]*\}|set\(\))")
FR_FIELD_RE = re.compile(r"^\s*(?P<key>group info|collective|missing ranks|collective state):"
                         r"\s*(?P<val>.*?)\s*$")
FR_OTHER_RE = re.compile(r"^\s*(?:internal record id|input sizes|output sizes|world size|"
                         r"expected ranks|collective stack trace|\S+ at \S+:\d+)")

# Horovod >= 0.19's stall report: a header line, then one line per rank that lacks the ops listed
HVD_START_RE = re.compile(r"^\s*(?:Stalled|Missing) ranks:\s*$")
HVD_RANK_RE = re.compile(r"^\s*(?P<rank>\d+)!?:\s*\[(?P<ops>[^\]]*)\]\s*$")
HVD_MORE = "..."  # the report's mark of ops left out after the fifth
RAS_START_RE = re.compile(r"Communicator ranks have different (?P<op>\w+) operation counts")
RAS_GROUP_RE = re.compile(r"^\s*(?P<n>\d+) ranks have (?:launched up to operation (?P<seq>\d+)|"
                          r"not launched any operations)")
RAS_ONE_RE = re.compile(r"^\s*Rank (?P<rank>\d+) has (?:launched up to operation (?P<seq>\d+)|"
                        r"not launched any operations)")
RAS_RANK_RE = re.compile(r"^\s*Rank (?P<rank>\d+) -- ")
# RAS's INCOMPLETE communicator (ranks that did not answer): "Missing communicator data from 1
# rank", then "The missing rank: 21" (NCCL 2.24-2.25; "The missing ranks: 3,7") or one "Rank 7
# -- GPU 3 managed by process …" line per rank (2.26+)
RAS_MISSING_START_RE = re.compile(r"Missing communicator data from (?P<n>\d+) ranks?\s*$")
RAS_MISSING_LIST_RE = re.compile(r"^\s*The missing ranks?:\s*(?P<ranks>\d+(?:\s*,\s*\d+)*)\s*$")

# NVRx's attribution table (fr_attribution.py print_ranks_in_pgs): the header names which ranks
# its rows list, missing or completed
NVRX_HEADER_RE = re.compile(r"^\s*PGID\s*\|\s*Process Group Desc\s*\|\s*Op Type\s*\|.*\|\s*"
                            r"(?P<which>Missing|Completed) Ranks\s*$")
NVRX_ROW_RE = re.compile(r"^\s*(?P<pg>\d+)\s*+\|\s*+(?P<desc>[^|]*?)\s*+\|\s*+(?P<op>[^\s|]++)\s*+\|"
                         r"[^|]*+\|[^|]*+\|\s*+(?P<ranks>\d+(?:\s*,\s*\d+)*+)\s*$")

STORE_WAIT_RE = re.compile(
    r"Waiting in store based barrier to initialize process group for rank:?\s*(?P<rank>\d+),\s*"
    r"key:\s*(?P<key>\S+)\s*\(world_size=(?P<world>\d+),\s*"
    r"(?:worker_count|num_workers_joined)=(?P<joined>\d+)"
    r"(?:,\s*timeout=(?P<timeout>(?:\d+ days?,\s*)?[\d:.]+))?")
# the barrier's timeout names the rank that gave up waiting in it (torch 1.x "on rank: N",
# worker_count; 2.x "on rank N", num_workers_joined)
STORE_TIMEOUT_RE = re.compile(
    r"Timed out initializing process group in store based barrier on rank:?\s*(?P<rank>\d+),"
    r"\s*for key:\s*(?P<key>\S+)\s*\(world_size=(?P<world>\d+),\s*"
    r"(?:worker_count|num_workers_joined)=(?P<joined>\d+)")
# the barrier completed: every rank joined ("Rank 2: Completed store-based barrier for
# key:store_based_barrier_key:2 with 8 nodes.", torch < 2.1; OPT-Benchmark's ds_13b log, where
# rank 1 had waited for rank 2 a second before): the waits before it ended
STORE_DONE_RE = re.compile(r"Completed store-based barrier for key:\s*(?P<key>\S+) with \d+ nodes")
STORE_BARRIER_OP = "STORE_BASED_BARRIER"  # as parse.collectives names the barrier's timeout
MAX_WORLD = 1 << 20
MAX_READY_RANK = 1 << 16  # a ready list's gaps are read below this rank only (a corrupt number)

# torch_ucc's comm check (src/torch_ucc.cpp comms_status_health_check; the logger's prefix
# "[Rank N][ProcessGroupUCC-ID][COMM_CHECK]"), ranks printed space-separated: "[1 2 3]", "[ 0 ]"
UCC_CHECK_RE = re.compile(r"\[Rank (?P<rank>\d+)\]\[ProcessGroupUCC-[^\]]*\]\[COMM_CHECK\]")
UCC_ABORT_RE = re.compile(r"Aborting comms #(?P<seq>\d+) \(op=(?P<op>\w+)\) due to the "
                          r"problematic ranks: \[(?P<ranks>[\d\s,]*)\]")
UCC_STATE_RE = re.compile(r"^\s*Ranks \[[\d\s,]*\] are '.*'\s*$")  # ("Collective wasn't posted")
UCC_OTHERS_RE = re.compile(r"^\s*Comms status of other ranks:\s*$")
UCC_SEQ_RE = re.compile(r"^\s*Ranks \[(?P<ranks>[\d\s,]*)\] are last known progressing comms "
                        r"#(?P<seq>\d+)")

JAX_START_RE = re.compile(r"Barrier timed out\.\s*(?:Barrier_id|Id):\s*(?P<id>[^\s.]+(?:\.[^\s.]+)*?)"
                          r"\.(?:\s|$)")
# the op of a JAX coordination-service barrier row: "barrier:" and the barrier's id
JAX_BARRIER_OP = "barrier:"
JAX_CONNECT_BARRIER = "PjRT_Client_Connect"
JAX_TASK_RE = re.compile(r"/job:[\w-]+/replica:\d+/task:(?P<task>\d+)")
JAX_FIRST_RE = re.compile(r"first task at the barrier:\s*/job:[\w-]+/replica:\d+/task:(?P<task>\d+)")
JAX_COUNT_RE = re.compile(r"tasks that reached the barrier:\s*\d+/\d+")
# the coordination service's start-up barrier states its timeout as an absl duration ("1h",
# "5m", "1h30m", "300s") just before the barrier's error (xla coordination_service.cc)
JAX_REGISTER_TIMEOUT_RE = re.compile(
    r"the timeout is currently set to:\s*(?P<d>(?:\d+(?:\.\d+)?(?:ms|us|ns|h|m|s))+)(?![\w])")
ABSL_PART_RE = re.compile(r"(?P<n>\d+(?:\.\d+)?)(?P<unit>ms|us|ns|h|m|s)")
ABSL_UNIT_MS = {"h": 3_600_000, "m": 60_000, "s": 1000, "ms": 1, "us": 1e-3, "ns": 1e-6}
# the coordination service (xla/tsl coordination_service.cc) on a task whose heartbeats stopped:
# "/job:jax_worker/replica:0/task:37 has been set to ERROR in coordination service: UNAVAILABLE:
# Task /job:jax_worker/replica:0/task:37 heartbeat timeout. This indicates that the remote task
# has failed, got preempted, or crashed unexpectedly."
JAX_HEARTBEAT_RE = re.compile(r"\bTask /job:[\w-]+/replica:\d+/task:(?P<task>\d+) heartbeat timeout\b")
JAX_PROCESS_RE = re.compile(r"jax\.distributed\.initialize\(.*?\bprocess_id\s*=\s*(?P<pid>\d+)")


def _timeout_ms(value: str | None) -> int | None:
    """The barrier's timeout as torch prints a timedelta ('0:30:00', '1 day, 0:00:00'), in ms."""
    s = hms_to_s(value) if value else None
    return None if s is None or s * 1000 >= 2**63 else round(s * 1000)


def absl_duration_ms(value: str) -> int | None:
    """An absl duration as XLA prints it ('1h', '1h30m', '2.5s', '300ms') in ms."""
    ms = sum(float(m["n"]) * ABSL_UNIT_MS[m["unit"]] for m in ABSL_PART_RE.finditer(value))
    return round(ms) if 0 < ms < 2**62 else None


def _ranks(text: str) -> list[int]:
    return [digits_int(r) for r in RANK_LIST_RE.findall(text)]


def parse_stall(text: str) -> list[Row] | None:
    """Horovod's stalled ops: per op, the rank that reported the stall and the ranks it names."""
    rows: list[Row] = []
    for m in STALL_RE.finditer(text):
        op = m["op"]
        rows.append({"op_type": op, "state": "timed_out"})
        state = "absent" if m["kind"] == "missing" else "started"
        named = _ranks(m["ranks"])
        rows += [{"rank": r, "op_type": op, "state": state, "_named_rank": True} for r in named]
        ready = state == "started" and max(named) < MAX_READY_RANK
        gaps = sorted(set(range(max(named))) - set(named)) if ready else []
        if gaps and len(gaps) < len(set(named)):  # most ready: the gaps lag
            rows += [{"rank": r, "op_type": op, "state": "absent", "_named_rank": True}
                     for r in gaps]
    return rows or None


def parse_jax_heartbeat(text: str) -> list[Row] | None:
    """The coordination service's word that one task stopped sending heartbeats: that task is
    the one the others were left waiting for (``absent``, no collective named)."""
    m = JAX_HEARTBEAT_RE.search(text)
    if not m:
        return None
    return [{"rank": digits_int(m["task"]), "state": "absent", "_named_rank": True}]


def parse_desync_lagging(text: str) -> list[Row] | None:
    """torch's desync report: the ranks behind the others (finished one collective and never
    joined the next, still in the oldest one, or never joined any)."""
    m = next((m for rx in DESYNC_LAGGING_RES if (m := rx.search(text))), None)
    if not m:
        return None
    state = "started" if m.groupdict().get("joined") else "absent"
    return [{"rank": r, "state": state, "_named_rank": True} for r in _ranks(m["ranks"])]


def parse_fr_inline(text: str) -> list[Row] | None:
    """fr_trace's one-line report: the missing ranks of a group's collective, no seq number."""
    m = FR_INLINE_RE.search(text)
    if not m:
        return None
    return [{"rank": r, "op_type": m["op"], "process_group": _pg(m["group"]), "state": "absent",
             "_named_rank": True} for r in _ranks(m["ranks"])] or None


def _pg(group_info: str | None) -> str | None:
    """fr_trace's ``0:default_pg`` as the collectives table writes groups, ``0 (default_pg)``."""
    if not group_info:
        return None
    pg, sep, desc = group_info.partition(":")
    return f"{pg} ({desc})" if sep and desc else pg


class MissingRanksBlock:
    """The multi-line reports that name missing ranks: fr_trace, NCCL RAS, JAX barriers."""

    tables = ("collectives",)
    section: str | None = None
    needles = ("Not all ranks joining collective", "operation counts", "Barrier timed out",
               "[COMM_CHECK]",
               "Stalled ranks:", "Missing ranks:", "Process Group Desc",
               "Missing communicator data from",
               "process_id=", "timeout is currently set to", "Waiting in store based barrier",
               "in store based barrier on rank", "Completed store-based barrier")

    def __init__(self) -> None:
        self.section: str | None = None
        self.ctx: object = None
        self.fields: dict[str, str] = {}
        self.groups: list[tuple[int, int, list[int]]] = []  # (count, operation, listed ranks)
        self.lacking: dict[int, list[str]] = {}  # Horovod: rank -> the ops it has not submitted
        self.nvrx: list[tuple[str | None, str, list[int]]] = []  # NVRx: (group, op, missing)
        self.tasks: list[int] = []
        self.first_task: int | None = None
        self.process_id: int | None = None
        self.register_timeout_ms: int | None = None  # the JAX start-up barrier's, if stated
        # store-based barrier keys -> (world size, worker count, waiting ranks, first ctx)
        self.barrier: dict[str, tuple[int, int, set[int], object]] = {}
        # store-based barrier keys -> the waiting ranks' rows, kept until the barrier completes
        # (then none: the wait ended) or the stream ends (a wait that never did)
        self.waiting: dict[str, list[tuple[str, Row]]] = {}

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line; return the rows of a report it ends."""
        if self.section is not None and self._continue(text):
            return []
        out = self._end_report() if self.section is not None else []
        if "Waiting in store based barrier" in text:
            return out + self._barrier_wait(text, ctx)
        if "in store based barrier on rank" in text:
            self._barrier_timeout(text, ctx)
            return out
        if "Completed store-based barrier" in text and (
                done := STORE_DONE_RE.search(text)) is not None:
            self.waiting.pop(done["key"], None)
            self.barrier.pop(done["key"], None)
            return out
        m = JAX_PROCESS_RE.search(text)
        if m:
            self.process_id = digits_int(m["pid"])
        t = JAX_REGISTER_TIMEOUT_RE.search(text)
        if t:
            self.register_timeout_ms = absl_duration_ms(t["d"])
        self._start(text, ctx)
        return out

    def _start(self, text: str, ctx: object) -> None:
        if not any(rx.search(text) for rx in (FR_START_RE, RAS_START_RE, RAS_MISSING_START_RE,
                                               JAX_START_RE, HVD_START_RE, UCC_CHECK_RE,
                                               NVRX_HEADER_RE)):
            return  # idle, and stays as it was (the fast engine's contract)
        self.ctx, self.fields, self.groups, self.tasks = ctx, {}, [], []
        self.first_task, self.lacking, self.nvrx = None, {}, []
        m = NVRX_HEADER_RE.search(text)
        if m:
            self.section, self.fields["which"] = "nvrx", m["which"]
            return
        m = UCC_CHECK_RE.search(text)
        if m:
            self.section, self.fields["rank"] = "ucc", m["rank"]
            self._ucc_line(text)
            return
        if HVD_START_RE.search(text):
            self.section = "horovod"
            return
        m = FR_START_RE.search(text)
        if m:
            self.section, self.fields["seq"] = "fr_trace", m["seq"]
            return
        m = RAS_START_RE.search(text)
        if m:
            self.section, self.fields["op"] = "ras", m["op"]
            return
        m = RAS_MISSING_START_RE.search(text)
        if m:
            self.section, self.fields["n"] = "ras_missing", m["n"]
            return
        m = JAX_START_RE.search(text)
        if m:
            self.section, self.fields["op"] = "jax", f"{JAX_BARRIER_OP}{m['id']}"
            self.fields["timeout_ms"], self.register_timeout_ms = self.register_timeout_ms, None
            self._jax_line(text)

    def _continue(self, text: str) -> bool:
        """Whether ``text`` belongs to the open report (and read it)."""
        if self.section == "fr_trace":
            f = FR_FIELD_RE.match(text)
            if f:
                self.fields[f["key"]] = f["val"]
                return True
            return bool(FR_OTHER_RE.match(text))
        if self.section == "ras":
            g = RAS_GROUP_RE.match(text)
            if g:
                self.groups.append((digits_int(g["n"]), digits_int(g["seq"] or "0"), []))
                return True
            one = RAS_ONE_RE.match(text)
            if one:
                self.groups.append((1, digits_int(one["seq"] or "0"), [digits_int(one["rank"])]))
                return True
            r = RAS_RANK_RE.match(text)
            if r and self.groups:
                self.groups[-1][2].append(digits_int(r["rank"]))
                return True
            return False
        if self.section == "ras_missing":
            m = RAS_MISSING_LIST_RE.match(text)
            if m:
                self.tasks += _ranks(m["ranks"])
                return True
            r = RAS_RANK_RE.match(text)
            if r:
                self.tasks.append(digits_int(r["rank"]))
                return True
            return False
        if self.section == "horovod":
            if not text.strip():
                return True  # a viewer's blank line after every line (Polyaxon's, #657)
            m = HVD_RANK_RE.match(text)
            if m:
                ops = [o.strip().removesuffix(HVD_MORE).strip() for o in m["ops"].split(",")]
                self.lacking[digits_int(m["rank"])] = [o for o in ops if o and o != HVD_MORE]
            return bool(m)
        if self.section == "ucc":
            return not UCC_CHECK_RE.search(text) and self._ucc_line(text)
        if self.section == "nvrx":
            m = NVRX_ROW_RE.match(text)
            if m and self.fields["which"] == "Missing":
                self.nvrx.append((_pg(f"{m['pg']}:{m['desc']}"), m["op"], _ranks(m["ranks"])))
            return bool(m)
        if self.section == "jax":
            if JAX_START_RE.search(text):
                return False
            return self._jax_line(text) or bool(JAX_COUNT_RE.search(text))
        return False

    def _ucc_line(self, text: str) -> bool:
        """Read one line of torch_ucc's comm check; whether it was one."""
        m = UCC_ABORT_RE.search(text)
        if m:
            self.fields.update(seq=m["seq"], op=m["op"], problematic=m["ranks"])
            return True
        m = UCC_SEQ_RE.match(text)
        if m:
            self.groups.append((0, digits_int(m["seq"]), _ranks(m["ranks"])))
            return True
        return bool(UCC_STATE_RE.match(text) or UCC_OTHERS_RE.match(text))

    def _jax_line(self, text: str) -> bool:
        first = JAX_FIRST_RE.search(text)
        if first:
            self.first_task = digits_int(first["task"])
            text = text[:first.start()] + text[first.end():]
        tasks = [digits_int(t) for t in JAX_TASK_RE.findall(text)]
        self.tasks += tasks
        return bool(tasks or first)

    def _barrier_wait(self, text: str, ctx: object) -> list[tuple[str, Row]]:
        """A rank waiting in the store-based barrier: a ``started`` row, its rank remembered."""
        m = STORE_WAIT_RE.search(text)
        if not m:
            return []
        if digits_int(m["world"]) > MAX_WORLD:
            return []
        self._barrier_member(m, ctx)
        self.waiting.setdefault(m["key"], []).append(
            ("collectives", {"rank": digits_int(m["rank"]), "op_type": STORE_BARRIER_OP,
                             "process_group": m["key"], "timeout_ms": _timeout_ms(m["timeout"]),
                             "state": "started", "_named_rank": True, "_ctx": ctx}))
        return []

    def _barrier_timeout(self, text: str, ctx: object) -> None:
        """A rank that timed out in the store-based barrier had arrived in it: remembered (its
        timeout row is ``parse.collectives``'s)."""
        for m in STORE_TIMEOUT_RE.finditer(text):
            self._barrier_member(m, ctx)

    def _barrier_member(self, m: re.Match[str], ctx: object) -> None:
        """Remember the rank a barrier line names, with its key's world size and worker count."""
        rank, world, joined = digits_int(m["rank"]), digits_int(m["world"]), digits_int(m["joined"])
        if world > MAX_WORLD:
            return
        w, j, ranks, first = self.barrier.get(m["key"], (world, joined, set(), ctx))
        ranks.add(rank)
        self.barrier[m["key"]] = (world, max(j, joined), ranks, first)

    def _barrier_absent(self) -> list[tuple[str, Row]]:
        """The ranks that never waited at a barrier, where exactly ``worker_count`` did."""
        out: list[tuple[str, Row]] = []
        for key, (world, joined, ranks, ctx) in self.barrier.items():
            missing = sorted(set(range(world)) - ranks)
            if len(ranks) == joined and ranks <= set(range(world)) and len(missing) == world - joined:
                out += [("collectives", {"rank": r, "op_type": STORE_BARRIER_OP,
                                         "process_group": key, "state": "absent",
                                         "_named_rank": True, "_ctx": ctx}) for r in missing]
        self.barrier = {}
        return out

    def close(self) -> list[tuple[str, Row]]:
        """End of the stream: the open report's rows, the ranks still waiting in a barrier that
        never completed, and the ranks no barrier saw."""
        waiting = [row for rows in self.waiting.values() for row in rows]
        self.waiting = {}
        return self._end_report() + waiting + self._barrier_absent()

    def _end_report(self) -> list[tuple[str, Row]]:
        """End of the report: its rows."""
        section, self.section = self.section, None
        rows: list[Row] = []
        if section == "fr_trace":
            rows = self._fr_rows()
        elif section == "ras":
            rows = self._ras_rows()
        elif section == "ras_missing":
            rows = [{"rank": r, "state": "absent", "_named_rank": True}
                    for r in sorted(set(self.tasks)) if r < MAX_COMM_RANKS]
        elif section == "horovod":
            rows = self._horovod_rows()
        elif section == "ucc":
            rows = self._ucc_rows()
        elif section == "nvrx":
            rows = [{"rank": r, "op_type": op, "process_group": pg, "state": "absent",
                     "_named_rank": True}
                    for pg, op, ranks in self.nvrx for r in ranks if r < MAX_COMM_RANKS]
        elif section == "jax":
            # the barrier timed out even where no task is named (the start-up barrier of
            # gpu-recipes#2 names none): its timed-out row, the printer's rank if known
            rows = [{"rank": self.process_id, "op_type": self.fields["op"],
                     "timeout_ms": self.fields.get("timeout_ms"),
                     "state": "timed_out", "_named_rank": True}]
            if self.first_task is not None:
                rows.append({"rank": self.first_task, "op_type": self.fields["op"],
                             "state": "started", "_named_rank": True})
            rows += [{"rank": t, "op_type": self.fields["op"], "state": "absent",
                      "_named_rank": True} for t in sorted(set(self.tasks))]
        for r in rows:
            r["_ctx"] = self.ctx
        return [("collectives", r) for r in rows]

    def _horovod_rows(self) -> list[Row]:
        """Each stalled op once (``timed_out``, the printing rank's); a rank that lacks every op
        of the report is behind them all (``absent``); one that lacks some only is ``started`` in
        the others, waiting there for the ranks that lack those (ranks waiting on each other)."""
        lacking = {r: set(ops) for r, ops in self.lacking.items() if r < MAX_COMM_RANKS}
        ops = list(dict.fromkeys(o for lacked in self.lacking.values() for o in lacked))
        rows: list[Row] = [{"op_type": op, "state": "timed_out"} for op in ops]
        for r, lacked in sorted(lacking.items()):
            behind = lacked >= set(ops)
            rows += [{"rank": r, "op_type": op, "state": "absent" if behind else "started",
                      "_named_rank": True} for op in ops if behind or op not in lacked]
        return rows

    def _ucc_rows(self) -> list[Row]:
        """The printer timed out in the aborted collective; the ranks behind the highest
        collective any rank reached, and the problematic ranks besides the printer, are absent
        from it, the others started in it. None without the abort line."""
        if "seq" not in self.fields:
            return []
        printer, seq, op = digits_int(self.fields["rank"]), digits_int(self.fields["seq"]), \
            self.fields["op"]
        rows: list[Row] = [{"rank": printer, "seq_num": seq, "op_type": op,
                            "state": "timed_out", "_named_rank": True}]
        known = {r for _, _, ranks in self.groups for r in ranks if r < MAX_COMM_RANKS}
        top = max((s for _, s, _ in self.groups), default=seq)
        behind = {r for _, s, ranks in self.groups for r in ranks if s < top}
        problematic = set(_ranks(self.fields["problematic"]))
        if not known or not problematic >= known:  # all stuck alike: none is behind
            behind |= problematic - {printer}
        behind &= set(range(MAX_COMM_RANKS))
        rows += [{"rank": r, "seq_num": seq, "op_type": op, "state": "absent",
                  "_named_rank": True} for r in sorted(behind)]
        rows += [{"rank": r, "seq_num": seq, "op_type": op, "state": "started",
                  "_named_rank": True} for r in sorted(known - behind - {printer})]
        return rows

    def _fr_rows(self) -> list[Row]:
        missing = _ranks(self.fields.get("missing ranks", ""))
        op, pg = self.fields.get("collective"), _pg(self.fields.get("group info"))
        return [{"rank": r, "seq_num": digits_int(self.fields["seq"]), "op_type": op,
                 "process_group": pg, "state": "absent", "_named_rank": True} for r in missing]

    def _ras_rows(self) -> list[Row]:
        """The ranks behind the highest operation count are absent from it; those at it, there.
        A group RAS does not list is every rank the listed groups leave, when only one is."""
        groups = self.groups
        if len(groups) < 2:
            return []
        total = sum(n for n, _, _ in groups)
        if total > MAX_COMM_RANKS:  # no communicator is that big: a corrupt count
            return []
        listed = {r for _, _, ranks in groups for r in ranks}
        unlisted = [i for i, (n, _, ranks) in enumerate(groups) if len(ranks) < n]
        if len(unlisted) > 1:
            return []
        members = [sorted(ranks) for _, _, ranks in groups]
        if unlisted:
            rest = sorted(set(range(total)) - listed)
            if len(rest) != groups[unlisted[0]][0]:
                return []
            members[unlisted[0]] = rest
        top = max(seq for _, seq, _ in groups)
        op = None if self.fields["op"] == "collective" else self.fields["op"]
        return [{"rank": r, "seq_num": top, "op_type": op,
                 "state": "started" if seq == top else "absent", "_named_rank": True}
                for (_, seq, _), ranks in zip(groups, members, strict=True) for r in ranks]


PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "horovod_stall",
        "collectives",
        ("missing ranks:", "ready ranks:"),
        parse_stall,
        example="[1,0]<stderr>:[2019-04-13 13:55:31.858119: W horovod/common/operations.cc:588] "
        "HorovodBroadcast_dense_kernel_Momentum_0 [missing ranks: 1]",
    ),
    LineParser(
        "jax_heartbeat_timeout",
        "collectives",
        (" heartbeat timeout",),
        parse_jax_heartbeat,
        # jax-ml/jax#23599
        example="2024-10-09 15:47:38.568412: E external/xla/xla/tsl/distributed_runtime/"
        "coordination/coordination_service.cc:1170] /job:jax_worker/replica:0/task:0 has been set "
        "to ERROR in coordination service: UNAVAILABLE: Task /job:jax_worker/replica:0/task:0 "
        "heartbeat timeout. This indicates that the remote task has failed, got preempted, or "
        "crashed unexpectedly.",
    ),
    LineParser(
        "desync_report_lagging",
        "collectives",
        ("but didn't join collective", "but didn't finish collective",
         "are the lagging ranks that caused"),
        parse_desync_lagging,
        example="     [1] finished collective #2, but didn't join collective #3 (count from 1)",
    ),
    LineParser(
        "fr_trace_inline",
        "collectives",
        ("Missing ranks are",),
        parse_fr_inline,
        example="Not all ranks joining collective for group 0:default_pg collective "
        "nccl:all_reduce  Missing ranks are {1}  [[3, 4]] [[3, 4]] 2 scheduled  ",
    ),
)

BLOCKS = (MissingRanksBlock,)


def is_jax_barrier(op_type: str | None) -> bool:
    """Whether a collective's op is a JAX coordination-service barrier (``barrier:<id>``)."""
    return bool(op_type) and str(op_type).startswith(JAX_BARRIER_OP)
