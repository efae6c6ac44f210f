"""Collective timeout, the tables and rules: the timeout rows, the collective they name, who
never arrived, the pattern, and the earlier failure they may be the consequence of.

``analyse`` computes everything once into a ``TimeoutAnalysis``; ``report`` (in
``timeout.report``) turns it into prose.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from ...incident import Incident, Unreadable
from ...parse.collectives import (
    STORE_BARRIER_KEY,
    STORE_BARRIER_OP,
    group_tag_rank,
    is_store_barrier,
    rank_tag_pg,
    startup_kind,
)
from ...parse.missing_ranks import JAX_CONNECT_BARRIER, is_jax_barrier
from ..collectives import (
    adopt_pg,
    detail_mismatch,
    entered_mismatch,
    first_mismatch,
    in_flight,
    is_dump,
    majority_op,
    rank_positions,
    unnumbered_mismatch,
    with_status_pg,
)
from ..common import (
    Progress,
    as_int,
    as_str,
    last_progress,
    nccl_world_size,
    plan_values,
    spawned_ranks,
    split_source,
    step_totals_by_rank,
    world_stated,
)
from ..gpu_crash.events import TEARDOWN_SIGNALS, failure_events, first_failure
from ..types import UNKNOWN_GROUP, Mismatch, MismatchKind, Pattern, Strength

STUCK_CODES = ("heartbeat_timeout", "watchdog_stuck")  # errors codes of the heartbeat monitor
# Ranks of one group that each timed out in a different collective, the numbers at most this
# far apart: they disagree about the order of the collectives (a desync). Farther apart, the
# lines may be of two groups the wording does not name (nccl#1610: #216 and #57).
DESYNC_SEQ_WINDOW = 8


@dataclass(frozen=True, eq=False)
class TimeoutAnalysis:
    """What the timeout runbook shows, computed once by ``analyse``.

    ``incident`` is the incident with each watchdog line's process group adopted from the
    status lines (``collectives``); ``found`` is False when the logs hold no timeout at all
    (then the collective's fields stay empty)."""

    incident: Incident
    world_size: int | None
    progress: Progress
    timeouts: pd.DataFrame  # one row per (rank, process group, seq): ``timeout_rows``
    status: pd.DataFrame  # watchdog status lines naming a rank and a sequence number
    stuck: pd.DataFrame  # heartbeat-monitor errors (the watchdog itself hung)
    in_flight: pd.DataFrame  # per dumped rank, its last flight-recorder entry
    positions: pd.DataFrame  # per (process group, rank): last enqueued/completed, timed out
    first_mismatch: Mismatch | None
    step_totals: dict[int, int]  # per rank, the step total its progress bars announced
    found: bool = False
    timed_out_ranks: list[int] = field(default_factory=list)
    op_type: str | None = None
    seq_num: int | None = None
    timeout_ms: int | None = None
    ran_for_ms: int | None = None
    numel_in: int | None = None
    numel_out: int | None = None
    process_group: str | None = None
    lagging_ranks: list[int] = field(default_factory=list)
    # every rank some source names as not arrived (absent, behind, dumped without the entry,
    # failed), before the ranks seen in the collective are taken out: the evidence rows
    lagging_candidates: list[int] = field(default_factory=list)
    unseen_ranks: list[int] = field(default_factory=list)  # of world_size, with no line at all
    pattern: Pattern = Pattern.UNKNOWN
    finished_early: bool = False  # the data ended while a straggler had not arrived
    earlier_failure: pd.Series | None = None  # a hard failure before the first timeout

    @property
    def collectives(self) -> pd.DataFrame:
        """The collectives table, process groups adopted from the status lines."""
        return self.incident.collectives

    @property
    def blamed_ranks(self) -> list[int]:
        """The ranks the verdict points at: those that never arrived, and the rank that failed
        first when a hard failure came before the timeouts."""
        blamed = set(self.lagging_ranks)
        if self.earlier_failure is not None and as_int(self.earlier_failure.get("rank")) is not None:
            blamed.add(int(self.earlier_failure["rank"]))
        return sorted(blamed)

    @property
    def unreadable_seq_nums(self) -> list[Unreadable]:
        """The sequence numbers the reader could not keep (beyond 64 bits: read as <NA>), with
        where each was, in reading order."""
        return self.incident.account.unreadable_in("collectives", "seq_num")

    @property
    def at_startup(self) -> bool:
        """A timeout at start-up: the store-based barrier of init_process_group, the c10d
        client socket that never reached the store, the store that waited for its clients, or
        torchelastic's rendezvous."""
        lines = self.timeouts["line"].dropna().astype(str) if len(self.timeouts) else []
        return self.store_barrier or any(startup_kind(ln) for ln in lines)

    @property
    def startup(self) -> str | None:
        """What start-up's timeout lines that name no collective say happened (the c10d socket,
        the TCPStore, torchelastic's rendezvous), or None."""
        return startup_of(self.timeouts)

    @property
    def store_barrier(self) -> bool:
        """The timeout is init_process_group's store-based barrier (``process_group`` its key)."""
        return self.op_type is None and is_store_barrier(self.process_group)

    @property
    def jax(self) -> bool:
        """The timeout is a JAX coordination-service barrier's: torch's knobs do not apply."""
        return is_jax_barrier(self.op_type)

    @property
    def jax_connect(self) -> bool:
        """The JAX barrier is start-up's (``PjRT_Client_Connect``: the tasks connecting to the
        coordinator), whose limit ``jax.distributed.initialize`` sets."""
        return self.jax and JAX_CONNECT_BARRIER in str(self.op_type)

    @property
    def group_size(self) -> int | None:
        """For a gather/scatter, the group size NumelOut/NumelIn implies."""
        return group_size(self.op_type, self.numel_in, self.numel_out)


def startup_of(rows: pd.DataFrame) -> str | None:
    """What the first of ``rows`` that is a start-up timeout naming no collective says happened
    (``parse.collectives.STARTUP_LINES``), or None."""
    lines = rows["line"].dropna().astype(str) if len(rows) and "line" in rows else []
    return next((k for k in map(startup_kind, lines) if k is not None), None)


def planned_total(prog: Progress, incident: Incident) -> Progress:
    """``prog`` with the run's length its trainer's start-up header states (``plan:total_steps``:
    HF's "Total optimization steps = N", verl's "Total training steps: N") where no bar or step
    line gives one, and every header that states one agrees."""
    if prog.total is not None:
        return prog
    v = plan_values(incident.host_timings, "total_steps")
    if not len(v) or v.nunique() != 1:
        return prog
    total = int(v.iloc[0])
    if prog.step is not None and prog.step > total:
        return prog
    return replace(prog, total=total)


def timeout_rows(incident: Incident) -> pd.DataFrame:
    """Timeout rows, one per (rank, process group, seq): the first line that reported each."""
    c = incident.collectives
    t = c[c["state"] == "timed_out"]
    if not len(t):
        return t
    key = t.assign(_r=t["rank"].fillna(-1), _pg=t["process_group"].fillna(UNKNOWN_GROUP),
                   _s=t["seq_num"].fillna(-1), _o=t["op_type"].fillna(""))
    return t.loc[~key.duplicated(["_r", "_pg", "_s", "_o"])]


def analyse(incident: Incident, world_size: int | None = None) -> TimeoutAnalysis:
    """Read a collective timeout from ``incident``.

    Args:
        world_size: the job's number of ranks, when known: ranks that left no trace at all are
            then named as lagging candidates. Without it, the size the logs state (a
            launcher's world size or layout, else NCCL's largest communicator) still tells
            whether every rank timed out and which silent rank never entered; it names no
            rank as missing (an excerpt of the job's logs leaves most ranks out).
    """
    stated = world_size or world_stated(incident) or nccl_world_size(incident)
    # a new incident only where a process group was filled in: the same one keeps what the
    # other classes' reports computed once on it (Incident.once: the input's findings)
    collectives = with_status_pg(incident.collectives)
    if collectives is not incident.collectives:
        incident = Incident({**incident.tables, "collectives": collectives},
                            incident.account, incident.unrecognized)
    prog = planned_total(last_progress(incident), incident)
    timeouts = timeout_rows(incident)
    if len(timeouts):  # a spawned process's traceback, its rank in the header before it
        timeouts = timeouts.assign(rank=spawned_ranks(timeouts, incident))
    c = incident.collectives
    status = status_rows(c)
    absent = c[c["state"] == "absent"]
    waits = barrier_wait_rows(c)
    nccl = timeouts[timeouts["seq_num"].notna()] if len(timeouts) else timeouts
    unnumbered = timeouts[timeouts["seq_num"].isna()] if len(timeouts) else timeouts
    ops = unnumbered["op_type"].fillna("gloo:")
    is_gloo = ops.str.startswith("gloo:") | ops.eq("MONITORED_BARRIER")
    gloo, legacy = unnumbered[is_gloo], unnumbered[~is_gloo]
    mismatch = (first_mismatch(c) or detail_mismatch(c) or unnumbered_mismatch(legacy)
                or order_mismatch(nccl) or entered_mismatch(c))
    # The heartbeat monitor ("watchdog got stuck", "Heartbeat monitor timed out"): the rank hung
    # inside NCCL/CUDA so long that even its watchdog stopped; it names no collective.
    errs = incident.errors
    stuck = errs[errs["code"].isin(list(STUCK_CODES)) & errs["rank"].notna()]
    inflight = in_flight(c)
    positions = rank_positions(c)
    base: dict[str, Any] = dict(
        incident=incident, world_size=world_size, progress=prog, timeouts=timeouts,
        status=status, stuck=stuck, in_flight=inflight, positions=positions,
        first_mismatch=mismatch, step_totals=step_totals_by_rank(incident))
    # A report naming ranks that never arrived (fr_trace, NCCL RAS, a desync report) is a hang
    # in a collective even where no watchdog line survives.
    if not len(timeouts) and not len(status) and not mismatch and not len(stuck) \
            and not len(absent) and not len(waits):
        return TimeoutAnalysis(**base)

    # Timed out: ranks with a watchdog/gloo line, and ranks whose watchdog status line names
    # the work it failed on (its timeout line may be cut from the excerpt).
    timed_out = sorted({int(r) for r in timeouts["rank"].dropna()}
                       | {int(r) for r in status["rank"]} | {int(r) for r in stuck["rank"]})
    if not timed_out and len(timeouts):
        timed_out = tagged_ranks(timeouts)
    coll, primary = _timed_out_collective(timeouts, nccl, status, gloo, legacy, inflight,
                                          timed_out, mismatch)
    if coll["op_type"] is None and coll["seq_num"] is None:
        coll.update(_missed_collective(absent))
    if coll["process_group"] is None:
        coll["process_group"] = stuck_group(stuck, timed_out)
    if len(waits) and coll["op_type"] in (None, STORE_BARRIER_OP):
        coll.update(_barrier_wait(waits, coll))
    if coll["op_type"] == STORE_BARRIER_OP:
        # a store-based barrier is no collective and has no OpType: its key names it
        coll["op_type"] = None
    joined = desync_joined(c)
    beside = bool(timed_out) and set(timed_out) <= joined  # the report's ranks stuck with them
    if stated and timed_out and max(timed_out) >= stated:
        stated = world_size  # a rank beyond the size stated: that size was a group's, not the job's
    lagging, arrived, unseen = _lagging(incident, positions, absent, timed_out, coll["seq_num"],
                                        coll["process_group"], world_size, stated)
    if (mismatch and mismatch.kind == MismatchKind.MISSING_RANKS
            and _same_group(mismatch.process_group, coll["process_group"])
            and lines_up(positions, mismatch)):
        # ranks seen at an earlier number and never at this one are behind it; the ranks
        # seen at it (its ops) arrived there. A mismatch in another group says nothing of
        # the timed-out one: a rank stuck in a checkpoint group's all_gather never enters
        # the default group's next all_reduce, and is not behind in its own group for that
        missing = {int(r) for r in mismatch.ranks}
        lagging |= missing
        arrived = (arrived - missing) | ({int(r) for r in mismatch.ops if str(r).isdigit()}
                                         - missing)
    if beside:
        arrived |= joined
    elif timed_out:  # printed from a later collective: the joined ranks are behind it
        lagging |= joined
        arrived -= joined
    lagging_ranks = sorted(lagging - arrived)

    if mismatch and mismatch.kind.is_desync:
        pattern = Pattern.DESYNC
    elif lagging_ranks:
        pattern = Pattern.STRAGGLER
    elif (len(timed_out) >= 2 and primary is not None
          and _every_rank_timed_out(timed_out, coll, stated)
          and len(nccl) and nccl["seq_num"].nunique() == 1 and nccl["op_type"].nunique() == 1):
        pattern = Pattern.ALL_STUCK
    elif beside and len(joined) >= 2 and not len(absent) and primary is not None:
        pattern = Pattern.ALL_STUCK  # the desync report: every rank it lists joined, none finished
    else:
        pattern = Pattern.UNKNOWN
    finished = (prog.step is not None and prog.total is not None and prog.step >= prog.total
                and pattern == Pattern.STRAGGLER)
    return TimeoutAnalysis(
        **base, found=True, timed_out_ranks=timed_out, **coll, lagging_ranks=lagging_ranks,
        lagging_candidates=sorted(lagging), unseen_ranks=sorted(unseen), pattern=pattern,
        finished_early=finished, earlier_failure=earlier_failure(incident, timeouts))


def _same_group(a: str | None, b: str | None) -> bool:
    """Whether two process-group labels (``"1 (checkpoint)"``, ``"1"``) name one group; an
    unknown group matches any."""
    if a in (None, UNKNOWN_GROUP) or b in (None, UNKNOWN_GROUP):
        return True
    return str(a).split(" ", 1)[0] == str(b).split(" ", 1)[0]


def lines_up(positions: pd.DataFrame, mm: Mismatch) -> bool:
    """Whether the ranks a missing_ranks mismatch names can be behind the others: no rank that
    reached its number completed a collective past the last one a missing rank enqueued (a
    collective completes only when every rank of its group is in it; where one did, the
    numbers are of different groups under one id, or the ranks' streams went out of step)."""
    pos = positions[positions["process_group"] == mm.process_group]
    if not len(pos):
        return True
    enq = pos.set_index("rank")["last_enqueued"]
    done = pos.set_index("rank")["last_completed"]
    missing = [r for r in mm.ranks if r in enq.index and pd.notna(enq[r])]
    if not missing:
        return True
    if mm.seq_num is not None and any(int(enq[r]) >= int(mm.seq_num) for r in missing):
        # it had issued that collective (its own status: "last enqueued work: 405"), so it is
        # not missing from it: two ranks one apart, each past the other's number (Sunshine535/
        # nips-grpo-dynamics: rank 0 stuck at 404 with 405 enqueued, rank 1 at 405 having
        # completed 404) are out of step, not one behind
        return False
    low = min(int(enq[r]) for r in missing)
    return not any(pd.notna(done[r]) and int(done[r]) > low
                   for r in done.index if r not in mm.ranks)


def _timed_out_collective(timeouts: pd.DataFrame, nccl: pd.DataFrame, status: pd.DataFrame,
                          gloo: pd.DataFrame, legacy: pd.DataFrame, inflight: pd.DataFrame,
                          timed_out: list[int], mismatch: Mismatch | None,
                          ) -> tuple[dict[str, Any], pd.Series | None]:
    """The collective that timed out (op_type, seq_num, timeout_ms, ran_for_ms, numel_in,
    numel_out, process_group) and the row that best describes it (None when none does)."""
    f: dict[str, Any] = dict(op_type=None, seq_num=None, timeout_ms=None, ran_for_ms=None,
                             numel_in=None, numel_out=None, process_group=None)
    # The (pg, seq) most ranks report, earliest seq on a tie. gloo's message names no
    # collective: a timed-out rank's last flight-recorder entry does.
    primary = None
    events = pd.concat([nccl[["rank", "process_group", "seq_num"]],
                        status[["rank", "process_group", "seq_num"]]], ignore_index=True)
    if not len(nccl) and len(inflight):
        events = inflight[inflight["rank"].isin(timed_out)]
    if len(events):
        events = events.assign(_pg=adopt_pg(events))
        ranks = events.groupby(["_pg", "seq_num"])["rank"].nunique()
        sizes = ranks.reset_index(name="n").sort_values(["n", "seq_num"],
                                                        ascending=[False, True])
        pg, seq = sizes.iloc[0]["_pg"], sizes.iloc[0]["seq_num"]
        src = nccl if len(nccl) else inflight
        src = src.assign(_pg=adopt_pg(src, events))
        at = src[(src["_pg"] == pg) & (src["seq_num"] == seq)]
        # In a desync the ranks name different ops: the one most ranks name (the first printed
        # on a tie) is the op; first_mismatch carries every rank's.
        op = majority_op(at.dropna(subset=["op_type"])) if len(at) else None
        with_op = at[at["op_type"] == op] if op is not None else at
        primary = with_op.iloc[0] if len(with_op) else (at.iloc[0] if len(at) else None)
        f.update(
            op_type=op,
            seq_num=as_int(seq),
            timeout_ms=as_int((at if len(nccl) else gloo)["timeout_ms"].max()),
            ran_for_ms=as_int(at["ran_for_ms"].max()) if len(at) else None,
            numel_in=None if primary is None else as_int(primary["numel_in"]),
            numel_out=None if primary is None else as_int(primary["numel_out"]),
            process_group=None if pg == UNKNOWN_GROUP else pg,
        )
        if f["timeout_ms"] is None and len(nccl):
            f["timeout_ms"] = as_int(nccl["timeout_ms"].max())
    elif len(legacy):
        # torch <= 1.9: no SeqNum; the op most ranks timed out in
        primary = legacy.iloc[0]
        ops = legacy.dropna(subset=["op_type"])
        f.update(op_type=majority_op(ops), timeout_ms=as_int(legacy["timeout_ms"].max()),
                 ran_for_ms=as_int(legacy["ran_for_ms"].max()),
                 numel_in=as_int(primary["numel_in"]), numel_out=as_int(primary["numel_out"]),
                 process_group=as_str(primary["process_group"]))
    else:
        f["timeout_ms"] = as_int(timeouts["timeout_ms"].max()) if len(timeouts) else None
        if len(gloo) and gloo["op_type"].eq("MONITORED_BARRIER").any():
            f["op_type"] = "MONITORED_BARRIER"
        if mismatch:
            f.update(seq_num=mismatch.seq_num, process_group=mismatch.process_group,
                     op_type=f["op_type"] or "/".join(sorted(set(mismatch.ops.values()))))
    if f["process_group"] == UNKNOWN_GROUP:
        f["process_group"] = None
    return f, primary


def order_mismatch(nccl: pd.DataFrame) -> Mismatch | None:
    """Ranks of one process group that each timed out in one collective, at different sequence
    numbers (``DESYNC_SEQ_WINDOW`` apart at most) and in different ops: one rank is past the
    collective another waits in, in another op — their order diverged (a desync). A line that
    names no group is of the one group the others name. ``seq_num`` is the lowest; ``ops``
    names each rank's op and number."""
    rows = nccl.dropna(subset=["rank", "op_type", "seq_num"])
    if not len(rows):
        return None
    pg = rows["process_group"].fillna(UNKNOWN_GROUP).astype(str)
    named = set(pg) - {UNKNOWN_GROUP}
    if len(named) == 1:  # a line naming no group is of the one group the others name
        pg = pg.where(pg != UNKNOWN_GROUP, next(iter(named)))
    rows = rows.assign(_pg=pg)
    for pg, g in rows.groupby("_pg", sort=False):
        per_rank = g.groupby("rank").agg(seq=("seq_num", "unique"), op=("op_type", "unique"))
        one = per_rank[(per_rank["seq"].map(len) == 1) & (per_rank["op"].map(len) == 1)]
        if len(one) < 2:
            continue
        seqs = {int(r): int(v[0]) for r, v in one["seq"].items()}
        ops = {int(r): str(v[0]) for r, v in one["op"].items()}
        lo, hi = min(seqs.values()), max(seqs.values())
        if lo == hi or hi - lo > DESYNC_SEQ_WINDOW or len(set(ops.values())) < 2:
            continue
        return Mismatch(str(pg), lo, MismatchKind.OP,
                        {str(r): f"{ops[r]} #{seqs[r]}" for r in sorted(ops)},
                        sorted(r for r in seqs if seqs[r] != lo))
    return None


def tagged_ranks(timeouts: pd.DataFrame) -> list[int]:
    """Where no timeout line gives a global rank, the ranks their ``[PG 1 Rank 5]`` tags of a
    sub-group give: the rank as the message gives it (a ``[rankN]:`` prefix, anywhere, wins)."""
    lines = timeouts["line"].dropna().astype(str)
    return sorted({r for r in map(group_tag_rank, lines) if r is not None})


def desync_joined(c: pd.DataFrame) -> set[int]:
    """The ranks torch's desync report says joined the oldest collective and did not finish it
    (``started`` rows naming no op and no sequence number)."""
    rows = c[(c["state"] == "started") & c["op_type"].isna() & c["seq_num"].isna()]
    return {int(r) for r in rows["rank"].dropna()}


def status_rows(c: pd.DataFrame) -> pd.DataFrame:
    """Watchdog status lines that name the work a rank failed on (its seq_num), by rank."""
    return c[(c["state"] == "status") & c["seq_num"].notna() & c["rank"].notna()]


def barrier_wait_rows(c: pd.DataFrame) -> pd.DataFrame:
    """Ranks waiting in init_process_group's store-based barrier (its ``started`` rows)."""
    return c[(c["state"] == "started") & (c["op_type"] == STORE_BARRIER_OP).fillna(False)]


def _barrier_wait(waits: pd.DataFrame, coll: dict[str, Any]) -> dict[str, Any]:
    """The start-up barrier the waiting lines name, and its timeout (``timeout=0:30:00``),
    for what no timeout line said."""
    out: dict[str, Any] = {"op_type": STORE_BARRIER_OP}
    if coll["timeout_ms"] is None:
        out["timeout_ms"] = as_int(waits["timeout_ms"].max())
    if coll["process_group"] is None:
        out["process_group"] = as_str(waits["process_group"].dropna().iloc[0]) \
            if waits["process_group"].notna().any() else None
    return out


def _missed_collective(absent: pd.DataFrame) -> dict[str, Any]:
    """The collective a missing-ranks report names (op, seq, group), when no timeout line
    names one: the values most of its rows carry."""
    out: dict[str, Any] = {}
    for col in ("op_type", "seq_num", "process_group"):
        vals = absent[col].dropna()
        if len(vals):
            v = vals.value_counts(sort=True).index[0]
            out[col] = as_int(v) if col == "seq_num" else str(v)
    return out


def stuck_group(stuck: pd.DataFrame, timed_out: list[int]) -> str | None:
    """The process group the heartbeat monitor's lines name (``[PG 5 Rank 0] Heartbeat monitor
    timed out!``) for the timed-out ranks, when they name one group only: the watchdog line
    before it may carry ``[Rank N]`` alone, and a heartbeat hang has no watchdog line at all."""
    if not len(stuck):
        return None
    rows = stuck[stuck["rank"].isin(timed_out)] if timed_out else stuck
    groups = {g for g in (rank_tag_pg(str(line)) for line in rows["line"]) if g is not None}
    return groups.pop() if len(groups) == 1 else None


def _lagging(incident: Incident, positions: pd.DataFrame, absent: pd.DataFrame,
             timed_out: list[int], seq: int | None, process_group: str | None,
             world_size: int | None, stated: int | None = None
             ) -> tuple[set[int], set[int], set[int]]:
    """(lagging, arrived, unseen): ranks named as never entering collective ``seq``, ranks seen
    in it, and ranks of ``world_size`` the logs say nothing about (``stated``: the world size
    the logs state, for ``never_entered``).

    Lagging: ranks whose position in that process group is below it, dumped ranks with no
    entry for it, ranks another rank reports absent, and ranks that failed without timing
    out."""
    c = incident.collectives
    pg = process_group or UNKNOWN_GROUP
    lagging: set[int] = {int(r) for r in absent["rank"].dropna()}
    arrived: set[int] = set(timed_out) - lagging
    if seq is not None:
        same = c[(c["process_group"].fillna(UNKNOWN_GROUP) == pg) & (c["seq_num"] == seq)
                 & ~c["state"].isin(["status", "absent", "mismatch"])]
        arrived |= {int(r) for r in same["rank"].dropna()}
        pos = positions[positions["process_group"] == pg]
        arrived |= {int(r) for r in pos[pos["last_enqueued"].notna()
                                        & (pos["last_enqueued"] >= seq)]["rank"]}
        behind = pos[pos["last_enqueued"].notna() & (pos["last_enqueued"] < seq)]
        lagging |= {int(r) for r in behind["rank"]}
        # a rank that timed out earlier in this group (its own status says so) never got here
        arrived -= {int(r) for r in behind["rank"]} - {int(r) for r in same["rank"].dropna()}
        dumped = {int(r) for r in c[is_dump(c)]["rank"].dropna()}
        lagging |= dumped - arrived
    known = _ranks_with_failure_output(incident)
    if _is_default_group(process_group):
        lagging |= known - arrived  # a failed rank is in the default group; not always in a sub-group
    if seq is not None:
        timed = c[(c["process_group"].fillna(UNKNOWN_GROUP) == pg) & (c["seq_num"] == seq)
                  & (c["state"] == "timed_out")]
        lagging |= never_entered(incident, timed, arrived | known | lagging, stated)
    unseen: set[int] = set()
    if world_size:
        unseen = set(range(world_size)) - arrived - known - lagging - ranks_in_logs(incident)
    return lagging, arrived, unseen


def ranks_in_logs(incident: Incident) -> set[int]:
    """Every rank any table has a row of (a rank that printed only a dump-signal line or a
    step left lines in the logs)."""
    seen: set[int] = set()
    for tab in incident.tables.values():
        if "rank" in tab and len(tab):
            seen |= {int(r) for r in pd.to_numeric(tab["rank"], errors="coerce").dropna()}
    return seen


def never_entered(incident: Incident, timed: pd.DataFrame, accounted: set[int],
                  world_size: int | None = None) -> set[int]:
    """The few ranks of the world that printed no timeout in the default group's collective
    ``timed`` (its timeout rows) where every other rank did: a collective of the whole world
    completes once every rank enters it, so the silent ones never did. Only where the logs
    hold their output (their NCCL init lines in a communicator of the world's size, which
    gives that size; or, without such lines, a world size the logs state, ``world_size``, and
    ranks that log through one stream: the timeouts' file), the launcher's report of the job's
    end follows the timeouts in the same file (a paste cut inside the block of timeout lines
    names no one), and they are fewer than the ranks that timed out (chtmp223's
    llama_lora_25023524.out: DeepSpeed's "world_size = 4", ranks 1-3 time out in ALLREDUCE
    #875 while one process still generates the dataset)."""
    pg = str(timed["process_group"].iloc[0]) if len(timed) else ""
    if not ("default_pg" in pg or pg.split(" ")[0] == "0"):
        return set()
    p = incident.processes
    comms = p[p["comm_size"].notna() & p["comm_rank"].notna()] if len(p) else p
    if len(comms):
        world = int(comms["comm_size"].max())
        present = {int(r) for r in comms.loc[comms["comm_size"] == world, "comm_rank"]}
    elif world_size and len({w[0] for w in map(split_source, timed["source"])
                             if w is not None}) == 1:
        world, present = world_size, set(range(world_size))
    else:
        return set()
    ranks = {int(r) for r in timed["rank"].dropna()}
    silent = set(range(world)) - accounted - ranks
    if not silent or not silent <= present or len(silent) >= len(ranks) \
            or not ranks < set(range(world)):
        return set()
    where = [w for w in map(split_source, timed["source"]) if w is not None]
    ends = [w for w in map(split_source, incident.exits["source"]) if w is not None]
    covered = any(e[0] == f and e[1] > max(n for g, n in where if g == f)
                  for e in ends for f in {g for g, _ in where})
    return silent if covered else set()


def _is_default_group(pg: str | None) -> bool:
    """The default (world) group, or a group the logs do not name (the store-based barrier's
    first key is the default group's)."""
    return (pg is None or pg == UNKNOWN_GROUP or "default_pg" in pg or pg.split(" ")[0] == "0"
            or pg == f"{STORE_BARRIER_KEY}1")


def _every_rank_timed_out(timed_out: list[int], coll: dict[str, Any],
                          world_size: int | None) -> bool:
    """Every rank of the job (``world_size``), or of the group a gather/scatter's NumelOut/
    NumelIn implies, timed out. Without either the logs cannot say: the highest rank seen is
    no job size (a paste often stops before the last rank, or the missing rank printed
    nothing)."""
    timed = set(timed_out)
    if world_size:
        return timed >= set(range(world_size))
    n = group_size(coll["op_type"], coll["numel_in"], coll["numel_out"])
    return n is not None and len(timed) >= n


def group_size(op_type: str | None, numel_in: int | None, numel_out: int | None) -> int | None:
    """For a gather/scatter, the group size NumelOut/NumelIn implies."""
    op = (op_type or "").upper()
    if "GATHER" not in op and "SCATTER" not in op or not numel_in or not numel_out:
        return None
    big, small = max(numel_in, numel_out), min(numel_in, numel_out)
    return big // small if small and big % small == 0 and big // small > 1 else None


# an exit by SIGABRT is how the watchdog ends a rank whose collective timed out (and how
# torchrun then reports every rank: "exitcode: -6", "Signal 6 (SIGABRT) received by PID …"); a
# shell reports it as 134 (128 + 6)
ABORT_EXITCODES = (-6, 134)


def _aborted(exits: pd.DataFrame) -> pd.Series:
    """Exit rows of a SIGABRT: what a timed-out rank's own watchdog does."""
    sig = exits["signal"].astype("string").fillna("") if "signal" in exits else ""
    code = exits["exitcode"] if "exitcode" in exits else pd.Series(pd.NA, index=exits.index)
    return (sig == "SIGABRT") | code.isin(ABORT_EXITCODES).fillna(False).astype(bool)


# what ProcessGroupNCCL's watchdog prints on the rank whose own timeout it caught
WATCHDOG_TEARDOWN_CODES = frozenset({"nccl_teardown", "process_taken_down"})


def _ranks_with_failure_output(incident: Incident) -> set[int]:
    """Ranks whose failure output is in the logs: they reported an error, or exited other
    than by the SIGABRT a watchdog's timeout ends in (``_aborted``: the launcher's report of
    such an exit says nothing of where the rank was: torchtitan logs only rank 0,
    ``--local-ranks-filter 0``, then torchrun reports all ranks aborted). A launcher's report
    that a rank died by the signal it tears the job down with (PALS's "rank 7 died from signal
    15" after the others' timeouts) is no failure of that rank's own."""
    err = incident.errors
    if len(err) and "code" in err:
        err = err[~((err["kind"] == "signal") & err["code"].isin(list(TEARDOWN_SIGNALS)).fillna(False))]
        # a rank's own watchdog tearing it down after its timeout ("Some NCCL operations have
        # failed or timed out", "… taking the entire process down"; Ray folds the watchdog's
        # own line into "[repeated 2x across cluster]", DataArcTech/SQL-R1#18): no failure of
        # another kind, and no sign that it was behind
        err = err[~err["code"].isin(list(WATCHDOG_TEARDOWN_CODES)).fillna(False)]
    ranks = {int(r) for r in err["rank"].dropna()}
    ex = incident.exits
    if len(ex):
        ranks |= {int(r) for r in ex.loc[~_aborted(ex), "rank"].dropna()}
    return ranks


def earlier_failure(incident: Incident, timeouts: pd.DataFrame) -> pd.Series | None:
    """The gpu_crash runbook's first failure when it is a hard local failure (a CUDA error, an
    Xid, ECC, OOM, a crash signal) that came before the first collective timeout — by time, or
    by line order in the same file when a time is missing; None otherwise."""
    if not len(timeouts):
        return None
    crash = first_failure(failure_events(incident))
    first = crash.first
    if first is None or crash.by == "silent" or int(first["strength"] or 0) < Strength.LOCAL:
        return None
    t_first = timeouts["time"].dropna().min() if "time" in timeouts else pd.NaT
    if pd.notna(first["time"]) and pd.notna(t_first):
        return first if first["time"] < t_first else None
    where = split_source(first["source"])
    if where is None:
        return None
    for src in timeouts["source"].dropna():
        at = split_source(src)
        if at is not None and at[0] == where[0] and where[1] < at[1]:
            return first
    return None
