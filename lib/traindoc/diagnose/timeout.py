"""Collective timeout: which ranks timed out in which collective, who never came, and why.

Patterns:

- ``desync``: ranks issued different collectives (or sizes/dtypes) at one sequence number.
- ``straggler``: some ranks never enqueued the collective the others wait in (named in
  ``lagging_ranks``): they were somewhere else (data loading, eval, a rank-conditional branch,
  a smaller data split).
- ``all_stuck``: every rank entered the same collective and it never finished: the transport
  (network, NVLink, a sick GPU) rather than the program.
- ``unknown``: the logs do not tell (e.g. only one rank's view was captured).
"""

from __future__ import annotations

import shlex
from typing import Any

import pandas as pd

from ..incident import Incident
from ..report import Action, Finding, Report, evidence, ranked
from .collectives import first_mismatch, rank_positions
from .common import input_findings, last_progress, split_source, step_totals_by_rank
from .gpu_crash import failure_events, first_failure

FSDP_GATHER_OPS = {"_ALLGATHER_BASE", "ALLGATHER", "_ALLGATHER_INTO_TENSOR_COALESCED",
                   "ALLGATHER_COALESCED", "_REDUCE_SCATTER_BASE", "REDUCE_SCATTER"}

STUCK_CODES = ("heartbeat_timeout", "watchdog_stuck")  # errors codes of the heartbeat monitor

FACT_KEYS = ("timed_out_ranks", "op_type", "seq_num", "timeout_ms", "ran_for_ms", "numel_in",
             "numel_out", "process_group", "lagging_ranks", "last_step", "total_steps",
             "pattern", "first_mismatch")


def _int(v: Any) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


def _str(v: Any) -> str | None:
    return None if v is None or pd.isna(v) else str(v)


def timeout_rows(incident: Incident) -> pd.DataFrame:
    """Timeout rows, one per (rank, process group, seq): the first line that reported each."""
    c = incident.collectives
    t = c[c["state"] == "timed_out"]
    if not len(t):
        return t
    key = t.assign(_r=t["rank"].fillna(-1), _pg=t["process_group"].fillna("?"),
                   _s=t["seq_num"].fillna(-1), _o=t["op_type"].fillna(""))
    return t.loc[~key.duplicated(["_r", "_pg", "_s", "_o"])]


def diagnose(incident: Incident, world_size: int | None = None) -> Report:
    """Diagnose a collective timeout. ``world_size``, when known, lets ranks that left no
    trace at all be named as lagging candidates."""
    incident = Incident({**incident.tables, "collectives": with_status_pg(incident.collectives)},
                        incident.account, incident.unrecognized)
    facts: dict[str, Any] = {k: None for k in FACT_KEYS}
    facts.update(timed_out_ranks=[], lagging_ranks=[], pattern="unknown")
    findings: list[Finding] = []
    actions: list[Action] = []
    prog = last_progress(incident)
    facts["last_step"], facts["total_steps"] = prog.step, prog.total

    timeouts = timeout_rows(incident)
    c = incident.collectives
    status = c[(c["state"] == "status") & c["seq_num"].notna() & c["rank"].notna()]
    absent = c[c["state"] == "absent"]
    nccl = timeouts[timeouts["seq_num"].notna()] if len(timeouts) else timeouts
    unnumbered = timeouts[timeouts["seq_num"].isna()] if len(timeouts) else timeouts
    ops = unnumbered["op_type"].fillna("gloo:")
    is_gloo = ops.str.startswith("gloo:") | ops.eq("MONITORED_BARRIER")
    gloo, legacy = unnumbered[is_gloo], unnumbered[~is_gloo]
    mismatch = (first_mismatch(c) or detail_mismatch(c) or unnumbered_mismatch(legacy))
    facts["first_mismatch"] = mismatch

    # The heartbeat monitor ("watchdog got stuck", "Heartbeat monitor timed out"): the rank hung
    # inside NCCL/CUDA so long that even its watchdog stopped; it names no collective.
    errs = incident.errors
    stuck = errs[errs["code"].isin(list(STUCK_CODES)) & errs["rank"].notna()]
    if not len(timeouts) and not len(status) and not mismatch and not len(stuck):
        findings.append(Finding(
            "no_timeout", "warning",
            "No collective timeout (NCCL watchdog or gloo) was found in these logs",
            evidence(incident.errors)))
        findings += input_findings(incident)
        actions += _evidence_actions(have_dumps=bool(incident.account.get("dumps")), prio=1)
        verdict = "No collective timeout found in the logs; " + (
            f"last progress: {prog.describe()}." if prog.step is not None
            else "check that log_path points at the failing job's logs.")
        return Report("timeout", verdict, "low", facts, findings, ranked(actions))

    # Timed out: ranks with a watchdog/gloo line, and ranks whose watchdog status line names
    # the work it failed on (its timeout line may be cut from the excerpt).
    facts["timed_out_ranks"] = sorted({int(r) for r in timeouts["rank"].dropna()}
                                      | {int(r) for r in status["rank"]}
                                      | {int(r) for r in stuck["rank"]})
    # The collective that timed out: the (pg, seq) most ranks report, earliest seq on a tie.
    # gloo's message names no collective: a timed-out rank's last flight-recorder entry does.
    inflight = in_flight(c)
    primary = None
    events = pd.concat([nccl[["rank", "process_group", "seq_num"]],
                        status[["rank", "process_group", "seq_num"]]], ignore_index=True)
    if not len(nccl) and len(inflight):
        events = inflight[inflight["rank"].isin(facts["timed_out_ranks"])]
    if len(events):
        events = events.assign(_pg=_adopt_pg(events))
        ranks = events.groupby(["_pg", "seq_num"])["rank"].nunique()
        sizes = ranks.reset_index(name="n").sort_values(["n", "seq_num"],
                                                        ascending=[False, True])
        pg, seq = sizes.iloc[0]["_pg"], sizes.iloc[0]["seq_num"]
        src = nccl if len(nccl) else inflight
        src = src.assign(_pg=_adopt_pg(src, events))
        at = src[(src["_pg"] == pg) & (src["seq_num"] == seq)]
        # In a desync the ranks name different ops: the one most ranks name (the first printed
        # on a tie) is the op; first_mismatch carries every rank's.
        op = _majority_op(at.dropna(subset=["op_type"])) if len(at) else None
        with_op = at[at["op_type"] == op] if op is not None else at
        primary = with_op.iloc[0] if len(with_op) else (at.iloc[0] if len(at) else None)
        facts.update(
            op_type=op,
            seq_num=_int(seq),
            timeout_ms=_int((at if len(nccl) else gloo)["timeout_ms"].max()),
            ran_for_ms=_int(at["ran_for_ms"].max()) if len(at) else None,
            numel_in=None if primary is None else _int(primary["numel_in"]),
            numel_out=None if primary is None else _int(primary["numel_out"]),
            process_group=None if pg == "?" else pg,
        )
        if facts["timeout_ms"] is None and len(nccl):
            facts["timeout_ms"] = _int(nccl["timeout_ms"].max())
    elif len(legacy):
        # torch <= 1.9: no SeqNum; the op most ranks timed out in
        primary = legacy.iloc[0]
        ops = legacy.dropna(subset=["op_type"])
        facts.update(op_type=_majority_op(ops), timeout_ms=_int(legacy["timeout_ms"].max()),
                     ran_for_ms=_int(legacy["ran_for_ms"].max()),
                     numel_in=_int(primary["numel_in"]), numel_out=_int(primary["numel_out"]),
                     process_group=_str(primary["process_group"]))
    else:
        facts["timeout_ms"] = _int(timeouts["timeout_ms"].max()) if len(timeouts) else None
        if len(gloo) and gloo["op_type"].eq("MONITORED_BARRIER").any():
            facts["op_type"] = "MONITORED_BARRIER"
        if mismatch:
            facts.update(seq_num=mismatch["seq_num"], process_group=mismatch["process_group"],
                         op_type=facts["op_type"]
                         or "/".join(sorted(set(mismatch["ops"].values()))))
    if facts["process_group"] == "?":
        facts["process_group"] = None

    # Who never entered it: ranks whose position in that process group is below it, dumped
    # ranks with no entry for it, ranks another rank reports absent, and ranks that failed
    # without timing out.
    seq, pg = facts["seq_num"], facts["process_group"] or "?"
    lagging: set[int] = {int(r) for r in absent["rank"].dropna()}
    arrived: set[int] = set(facts["timed_out_ranks"]) - lagging
    if seq is not None:
        same = c[(c["process_group"].fillna("?") == pg) & (c["seq_num"] == seq)
                 & ~c["state"].isin(["status", "absent", "mismatch"])]
        arrived |= {int(r) for r in same["rank"].dropna()}
        pos = rank_positions(c)
        pos = pos[pos["process_group"] == pg]
        arrived |= {int(r) for r in pos[pos["last_enqueued"].notna()
                                        & (pos["last_enqueued"] >= seq)]["rank"]}
        behind = pos[pos["last_enqueued"].notna() & (pos["last_enqueued"] < seq)]
        lagging |= {int(r) for r in behind["rank"]}
        # a rank that timed out earlier in this group (its own status says so) never got here
        arrived -= {int(r) for r in behind["rank"]} - {int(r) for r in same["rank"].dropna()}
        dumped = {int(r) for r in c[_is_dump(c)]["rank"].dropna()}
        lagging |= dumped - arrived
    known = _ranks_with_failure_output(incident)
    if _is_default_group(facts["process_group"]):
        lagging |= known - arrived  # a failed rank is in the default group; not always in a sub-group
    if world_size:
        unseen = set(range(world_size)) - arrived - known - lagging
        if unseen:
            findings.append(Finding(
                "ranks_without_logs", "warning",
                f"{len(unseen)} rank(s) of {world_size} left no line in these logs: "
                f"{sorted(unseen)[:32]}; they may be the lagging ones, or their logs are missing",
                []))
    facts["lagging_ranks"] = sorted(lagging - arrived)

    # Pattern.
    if mismatch and mismatch["kind"] in ("op", "size", "dtype"):
        facts["pattern"] = "desync"
    elif facts["lagging_ranks"]:
        facts["pattern"] = "straggler"
    elif (len(facts["timed_out_ranks"]) >= 2 and primary is not None
          and _every_rank_timed_out(facts, world_size)
          and len(nccl) and nccl["seq_num"].nunique() == 1 and nccl["op_type"].nunique() == 1):
        facts["pattern"] = "all_stuck"

    # Findings.
    findings.append(Finding(
        "collective_timeout", "critical",
        _timeout_title(facts), evidence(timeouts)))
    if mismatch:
        findings.append(Finding(
            "first_mismatch", "critical",
            f"Ranks disagree at sequence number {mismatch['seq_num']} of process group "
            f"{mismatch['process_group']} ({mismatch['kind']}): "
            + ", ".join(f"rank {r}: {o}" for r, o in mismatch["ops"].items())
            + (f"; differing or missing: {mismatch['ranks']}" if mismatch["ranks"] else ""),
            evidence(_mismatch_rows(incident, mismatch))))
    if facts["lagging_ranks"]:
        findings.append(Finding(
            "lagging_ranks", "critical",
            f"Rank(s) {facts['lagging_ranks']} never entered collective {seq}; the others "
            "waited for them until the timeout", evidence(_status_rows(incident, lagging))))
    elif facts["pattern"] == "unknown" and len(facts["timed_out_ranks"]) <= 1:
        findings.append(Finding(
            "one_view", "warning",
            "Only one rank's view of the timeout is in these logs (or the lines carry no rank): "
            "the rank(s) that never arrived cannot be named from it", []))
    totals = step_totals_by_rank(incident)
    if len(set(totals.values())) > 1:
        findings.append(Finding(
            "uneven_data", "critical",
            "Ranks disagree on the number of steps in their data: "
            + ", ".join(f"rank {r}: {t}" for r, t in sorted(totals.items()))
            + " — the ranks with fewer batches finish early and wait in a collective the others"
            " never reach", evidence(incident.progress.dropna(subset=["rank"])
                                     .drop_duplicates("rank", keep="last"))))
    if prog.step is not None:
        sat = facts["ran_for_ms"] or facts["timeout_ms"]
        findings.append(Finding(
            "last_progress", "info",
            f"Last progress before the hang: {prog.describe()}"
            + (f"; then it sat {sat / 1000:.0f} s ({sat / 60000:.1f} min) in the collective "
               "before timing out" if sat else ""),
            [f"{prog.source}: {prog.line}"]))
    teardown = incident.errors[incident.errors["code"].isin(
        ["nccl_teardown", "process_taken_down", "heartbeat_timeout", "watchdog_stuck"])]
    if len(teardown):
        findings.append(Finding(
            "teardown", "info", "The watchdog took the process(es) down after the timeout",
            evidence(teardown, limit=6)))
    if len(incident.exits):
        rc = incident.exits[incident.exits["root_cause"].fillna(False)]
        findings.append(Finding(
            "exits", "info",
            "torchrun reported failed workers" + (
                f"; root cause: rank {_int(rc.iloc[0]['rank'])} exit {_int(rc.iloc[0]['exitcode'])}"
                f" ({_str(rc.iloc[0]['signal']) or 'no signal'})" if len(rc) else ""),
            evidence(incident.exits)))
    findings += input_findings(incident)

    ratio = _group_size(facts)
    if ratio:
        findings.append(Finding(
            "group_size", "info",
            f"NumelOut/NumelIn = {ratio}: the process group of this {facts['op_type']} has "
            f"{ratio} ranks", []))
    finished = (prog.step is not None and prog.total is not None and prog.step >= prog.total
                and facts["pattern"] == "straggler")
    if finished:
        findings.append(Finding(
            "finished_early", "warning",
            f"The last progress line is the end of the data ({prog.describe()}) while rank(s) "
            f"{facts['lagging_ranks']} had not arrived: ranks ran out of data at different "
            "steps (uneven or unseeded data split)", [f"{prog.source}: {prog.line}"]))
    if len(stuck):
        findings.append(Finding(
            "watchdog_stuck", "critical",
            f"The NCCL watchdog of rank(s) {sorted({int(r) for r in stuck['rank']})} stopped "
            "making progress (heartbeat monitor): the process hung inside an NCCL/CUDA call or "
            "under the GIL, not only in a collective's wait", evidence(stuck)))
    crash = earlier_failure(incident, timeouts)
    if crash is not None:
        findings.insert(0, Finding(
            "earlier_failure", "critical",
            f"{_crash_words(crash)} before the first timeout: the timeouts are its "
            "consequence (its peers waited in a collective it never reached)",
            [f"{crash['source']}: {crash['line']}"]))
    actions = ranked(_actions(facts, incident, totals, finished, crash))
    verdict, confidence = _verdict(facts, prog.describe())
    if crash is not None:
        verdict = (f"{_timeout_title(facts)} — the consequence of an earlier failure: "
                   f"{_crash_words(crash)}. Diagnose that failure with the gpu_crash runbook.")
        confidence = "high" if pd.notna(crash["time"]) else "medium"
    if len(stuck) and facts["op_type"] is None and facts["seq_num"] is None:
        verdict = (f"The NCCL watchdog of rank(s) {facts['timed_out_ranks']} got stuck (heartbeat "
                   "monitor): the process hung inside NCCL/CUDA or under the GIL; no collective is "
                   "named — take py-spy dumps of the hung ranks (py-spy dump --native --pid …).")
        confidence = "medium"
    return Report("timeout", verdict, confidence, facts, findings, actions)


def _is_default_group(pg: str | None) -> bool:
    """The default (world) group, or a group the logs do not name."""
    return pg is None or pg == "?" or "default_pg" in pg or pg.split(" ")[0] == "0"


def _every_rank_timed_out(f: dict[str, Any], world_size: int | None) -> bool:
    """Every rank of the job (``world_size``), or of the group a gather/scatter's NumelOut/
    NumelIn implies, timed out. Without either the logs cannot say: the highest rank seen is
    no job size (a paste often stops before the last rank, or the missing rank printed
    nothing)."""
    timed = set(f["timed_out_ranks"])
    if world_size:
        return timed >= set(range(world_size))
    n = _group_size(f)
    return n is not None and len(timed) >= n


def _group_size(f: dict[str, Any]) -> int | None:
    """For a gather/scatter, the group size NumelOut/NumelIn implies."""
    op = (f["op_type"] or "").upper()
    n_in, n_out = f["numel_in"], f["numel_out"]
    if "GATHER" not in op and "SCATTER" not in op or not n_in or not n_out:
        return None
    big, small = max(n_in, n_out), min(n_in, n_out)
    return big // small if small and big % small == 0 and big // small > 1 else None


def with_status_pg(c: pd.DataFrame) -> pd.DataFrame:
    """Timeout rows with their process group filled in from the same rank's status line for
    the same sequence number (the watchdog line itself carries only ``[Rank N]``)."""
    st = c[(c["state"] == "status") & c["process_group"].notna() & c["rank"].notna()
           & c["seq_num"].notna()]
    need = (c["state"] == "timed_out") & c["process_group"].isna() & c["rank"].notna()
    if not len(st) or not need.any():
        return c
    lookup = {(int(r), int(q)): pg for r, q, pg in
              zip(st["rank"], st["seq_num"], st["process_group"], strict=False)}
    c = c.copy()
    idx = c.index[need & c["seq_num"].notna()]
    c.loc[idx, "process_group"] = [lookup.get((int(c.at[i, "rank"]), int(c.at[i, "seq_num"])))
                                   for i in idx]
    # A rank with no status line of its own: the group every status line names for that seq,
    # when they name only one (rank 7's status names default_pg for #80078, rank 3 printed none).
    still = c.index[(c["state"] == "timed_out") & c["process_group"].isna() & c["seq_num"].notna()]
    if len(still):
        named = st.groupby("seq_num")["process_group"].unique()
        only = {int(q): g[0] for q, g in named.items() if len(g) == 1}
        c.loc[still, "process_group"] = [only.get(int(c.at[i, "seq_num"])) for i in still]
    return c


def _adopt_pg(rows: pd.DataFrame, ref: pd.DataFrame | None = None) -> pd.Series:
    """Each row's process group, "?" when unknown; a row without one takes the group that
    ``ref``'s rows (default: ``rows``) name for the same sequence number, when only one does
    (a watchdog line carries ``[Rank N]`` only; the status line of another rank names it)."""
    pg = rows["process_group"].fillna("?").astype(object)
    ref = rows if ref is None else ref
    named = ref[ref["process_group"].notna() & (ref["process_group"] != "?")
                & ref["seq_num"].notna()]
    if not len(named) or not (pg == "?").any():
        return pg
    groups = named.groupby("seq_num")["process_group"].unique()
    only = {int(q): g[0] for q, g in groups.items() if len(g) == 1}
    fill = [only.get(int(q), "?") if p == "?" and pd.notna(q) else p
            for p, q in zip(pg, rows["seq_num"], strict=True)]
    return pd.Series(fill, index=rows.index, dtype=object)


def _ranks_seen(incident: Incident) -> int:
    """How many ranks the logs show at least (the highest rank named, plus one)."""
    top = -1
    for df in incident.tables.values():
        if "rank" in df and df["rank"].notna().any():
            top = max(top, int(df["rank"].max()))
    return top + 1


def _majority_op(rows: pd.DataFrame) -> str | None:
    """The op most ranks name (each rank counted once, by its first line; the first printed
    wins a tie)."""
    if not len(rows):
        return None
    first = rows.drop_duplicates("rank") if rows["rank"].notna().any() else rows
    counts: dict[str, int] = {}
    for op in first["op_type"].dropna():
        counts[str(op)] = counts.get(str(op), 0) + 1
    return max(counts, key=lambda o: counts[o]) if counts else None


def detail_mismatch(c: pd.DataFrame) -> dict[str, Any] | None:
    """TORCH_DISTRIBUTED_DEBUG=DETAIL's 'Detected mismatch between collectives': what each
    rank it names was running (the first report)."""
    rows = c[(c["state"] == "mismatch") & c["rank"].notna()]
    if not len(rows):
        return None
    first = rows.iloc[:2]  # one report: the printing rank, then the rank it differs from
    ops = {int(r): _str(o) or "?" for r, o in zip(first["rank"], first["op_type"], strict=True)}
    sizes = {_str(v) for v in first["sizes"]}
    dtypes = {_str(v) for v in first["dtypes"]} - {None}
    kind = ("op" if len(set(ops.values())) > 1 else "size" if len(sizes) > 1
            else "dtype" if len(dtypes) > 1 else "op")
    seqs = [_int(v) for v in first["seq_num"]]
    return {"process_group": _str(first["process_group"].iloc[0]) or "?",
            "seq_num": next((q for q in seqs if q is not None), None), "kind": kind,
            "ops": {str(r): o for r, o in sorted(ops.items())},
            "ranks": [int(first["rank"].iloc[-1])]}


def unnumbered_mismatch(legacy: pd.DataFrame) -> dict[str, Any] | None:
    """Watchdog lines without SeqNum (torch <= 1.9) where each rank timed out in one op and
    the ranks name different ops: the desync, as far as those lines tell."""
    rows = legacy.dropna(subset=["rank", "op_type"])
    per_rank = rows.groupby("rank")["op_type"].unique()
    if len(per_rank) < 2 or any(len(v) != 1 for v in per_rank):
        return None
    ops = {int(r): str(v[0]) for r, v in per_rank.items()}
    if len(set(ops.values())) < 2:
        return None
    maj = _majority_op(rows)
    return {"process_group": "?", "seq_num": None, "kind": "op",
            "ops": {str(r): o for r, o in sorted(ops.items())},
            "ranks": sorted(r for r, o in ops.items() if o != maj)}


def _is_dump(c: pd.DataFrame) -> pd.Series:
    """Rows that came from a flight-recorder dump."""
    return c["source"].str.contains("#entry", regex=False, na=False)


def in_flight(collectives: pd.DataFrame) -> pd.DataFrame:
    """Per dumped rank, its last flight-recorder entry: the collective it was in when it
    stopped (gloo's timeout message does not name one)."""
    fr = collectives[_is_dump(collectives) & collectives["rank"].notna()]
    if not len(fr):
        return fr
    fr = fr.assign(_t=fr["time"], _i=range(len(fr)))
    last = fr.sort_values(["rank", "_t", "_i"]).groupby("rank", as_index=False).tail(1)
    return last.drop(columns=["_t", "_i"])


HARD_FAILURE_STRENGTH = 2  # gpu_crash's strength of a local failure (CUDA, Xid, ECC, OOM, signal)


def earlier_failure(incident: Incident, timeouts: pd.DataFrame) -> pd.Series | None:
    """The gpu_crash runbook's first failure when it is a hard local failure (a CUDA error, an
    Xid, ECC, OOM, a crash signal) that came before the first collective timeout — by time, or
    by line order in the same file when a time is missing; None otherwise."""
    if not len(timeouts):
        return None
    crash = first_failure(failure_events(incident))
    first = crash.first
    if first is None or crash.by == "silent" or int(first["strength"] or 0) < HARD_FAILURE_STRENGTH:
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


def _crash_words(crash: pd.Series) -> str:
    who = f"rank {_int(crash['rank'])}" if pd.notna(crash["rank"]) else "a process"
    host = f" on {crash['host']}" if _str(crash["host"]) and not str(crash["host"]).startswith(
        "srun-task-") else ""
    when = f" at {pd.Timestamp(crash['time']):%Y-%m-%d %H:%M:%S}" if pd.notna(crash["time"]) else ""
    msg = str(crash["message"] or crash["code"] or "").strip().splitlines()[0][:160] if (
        _str(crash["message"]) or _str(crash["code"])) else "an error"
    return f"{who}{host} failed first{when} ({msg})"


def _ranks_with_failure_output(incident: Incident) -> set[int]:
    """Ranks whose failure output is in the logs: they reported an error or an exit."""
    ranks: set[int] = set()
    for df in (incident.errors, incident.exits):
        ranks |= {int(r) for r in df["rank"].dropna()}
    return ranks


def _status_rows(incident: Incident, ranks: set[int]) -> pd.DataFrame:
    c = incident.collectives
    rows = c[c["rank"].isin(list(ranks)) & c["state"].isin(["status"])]
    if not len(rows):
        rows = incident.exits[incident.exits["rank"].isin(list(ranks))]
    return rows


def _mismatch_rows(incident: Incident, mm: dict[str, Any]) -> pd.DataFrame:
    c = incident.collectives
    return c[(c["seq_num"] == mm["seq_num"]) & (c["process_group"].fillna("?") == mm["process_group"])]


def _timeout_title(f: dict[str, Any]) -> str:
    who = f"Rank(s) {f['timed_out_ranks']}" if f["timed_out_ranks"] else "A rank (no rank tag)"
    what = f["op_type"] or "a collective"
    seq = f" #{f['seq_num']}" if f["seq_num"] is not None else ""
    size = ""
    if f["numel_in"] is not None:
        size = f" (NumelIn={f['numel_in']}, NumelOut={f['numel_out']})"
    ran = f" after {f['ran_for_ms'] / 1000:.0f} s" if f["ran_for_ms"] else (
        f" after the {f['timeout_ms'] / 1000:.0f} s timeout" if f["timeout_ms"] else "")
    return f"{who} timed out in {what}{seq}{size}{ran}"


def _verdict(f: dict[str, Any], progress: str) -> tuple[str, str]:
    base = _timeout_title(f)
    if f["pattern"] == "desync":
        mm = f["first_mismatch"]
        return (f"{base}: a desync — ranks issued different collectives at sequence "
                f"{mm['seq_num']} ({', '.join(f'rank {r}: {o}' for r, o in mm['ops'].items())}).",
                "high")
    if f["pattern"] == "straggler":
        tail = "" if progress.startswith("no ") else f"; last progress {progress}"
        return (f"{base}: rank(s) {f['lagging_ranks']} never entered it (straggler){tail}.",
                "high" if f["timed_out_ranks"] else "medium")
    if f["pattern"] == "all_stuck":
        return (f"{base}: every rank entered it and it never completed — suspect the transport "
                "(network, NVLink, a sick GPU) rather than the program.", "medium")
    tail = "" if progress.startswith("no ") else f"; last progress {progress}"
    return (f"{base}; the logs do not show which rank(s) never arrived{tail}.",
            "medium" if f["op_type"] else "low")


def _evidence_actions(have_dumps: bool, prio: int) -> list[Action]:
    acts = []
    if not have_dumps:
        acts.append(Action(
            "flight_recorder", prio, "Turn on the flight recorder and dump-on-timeout",
            "Without per-rank dumps the runbook cannot see which collective each rank was in "
            "when the job stopped.",
            "export TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 "
            "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/shared/fr/nccl_trace_rank_  # then point log_path "
            "at the job's logs and /shared/fr"))
    acts.append(Action(
        "py_spy_all", prio + 1, "Next time it hangs, take py-spy dumps of every rank",
        "Stacks show where each rank is — the one not in the collective is the culprit.",
        "srun --overlap --jobid $SLURM_JOBID --ntasks-per-node=1 --output=trace-%N.out "
        "sh -c 'pgrep -f train | xargs -I{} py-spy dump --pid {}'"))
    acts.append(Action(
        "nccl_debug", prio + 2, "Rerun with NCCL and torch.distributed debug logging",
        "Logs which collective each rank issues, and checks that ranks agree on it.",
        "export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL TORCH_CPP_LOG_LEVEL=INFO "
        "TORCH_DISTRIBUTED_DEBUG=DETAIL"))
    return acts


def _actions(f: dict[str, Any], incident: Incident, totals: dict[int, int],
             finished: bool = False, crash: pd.Series | None = None) -> list[Action]:
    acts: list[Action] = []
    if crash is not None:
        acts.append(Action(
            "diagnose_crash", 1, "Diagnose the earlier failure, not the timeouts",
            f"{_crash_words(crash)}; the ranks that timed out were waiting for it. The gpu_crash "
            "runbook names the failure, its host and whether to drain it.",
            "traindoc run gpu_crash " + " ".join(
                shlex.quote(str(p)) for p in incident.account.get("paths", []) or ["LOGS"])
            + " -o gpu_crash-out"))
    uneven = len(set(totals.values())) > 1 or finished
    fsdp_gather = (f["op_type"] or "").upper() in FSDP_GATHER_OPS
    if uneven or (fsdp_gather and f["pattern"] in ("straggler", "unknown")):
        acts.append(Action(
            "seed_data_split", 1 if uneven else 3,
            "Seed every data split and shuffle so all ranks get the same number of batches",
            ("Ranks disagree on their number of steps, so some finish early and wait in a "
             "collective the others never reach." if uneven else
             f"A timeout in {f['op_type']} at the end of training or at save time is the classic "
             "sign of ranks with different amounts of data (unseeded train/test split)."),
            "ds.train_test_split(test_size=..., seed=1234); np.random.seed(seed); "
            "torch.manual_seed(seed); use DistributedSampler(drop_last=True)"))
    if f["pattern"] == "desync":
        mm = f["first_mismatch"]
        acts.append(Action(
            "fix_desync", 1, "Find the code path where ranks issue different collectives",
            f"At sequence {mm['seq_num']} the ranks called different collectives "
            f"({', '.join(f'rank {r}: {o}' for r, o in mm['ops'].items())}); look for a "
            "collective under a rank-conditional branch or data-dependent control flow.",
            "grep -n 'if .*rank' in the training step; rerun with TORCH_DISTRIBUTED_DEBUG=DETAIL, "
            "which checks that every rank issues the same collective"))
    if f["pattern"] == "straggler" and crash is None:
        acts.append(Action(
            "inspect_lagging", 1, f"Find where rank(s) {f['lagging_ranks']} were instead",
            "They never entered the collective the others waited in; their stacks or last log "
            "lines show what they were doing (data loading, eval, a branch that skips a "
            "collective).",
            f"py-spy dump --pid <pid of rank {f['lagging_ranks'][0]}> on its host while it hangs; "
            "or read its last log lines"))
    if f["pattern"] == "all_stuck":
        acts.append(Action(
            "check_transport", 1, "Test the interconnect and the GPUs of the nodes involved",
            "Every rank entered the collective and none finished: the transport, not the "
            "program, stalled.",
            "NCCL_DEBUG=INFO; run nccl-tests (all_reduce_perf -b 8 -e 1G -f 2 -g 8) per node and "
            "across nodes; check dmesg for Xid and link errors"))
    acts += _evidence_actions(have_dumps=bool(incident.account.get("dumps")), prio=len(acts) + 2)
    acts.append(Action(
        "longer_timeout_experiment", len(acts) + 3,
        "Only as an experiment: a longer timeout tells slow from stuck",
        "If the collective completes with a longer timeout the job is slow (bandwidth, "
        "stragglers); if it still times out it is stuck. Not a fix.",
        "dist.init_process_group(..., timeout=datetime.timedelta(minutes=30))"))
    return acts
