"""Cross-rank comparison of collectives: where ranks first disagree, and where each stands.

Works on any ``collectives`` rows: per-rank watchdog lines and flight-recorder entries alike.
``first_mismatch`` and ``rank_positions`` run on whole columns (a thousand ranks of thousands of
entries in about a second); only the one (process group, sequence number) reported is then read
row by row. The smaller readers below them fill in what a watchdog line leaves out (its
process group), pick each dumped rank's last entry, and read the mismatches that
TORCH_DISTRIBUTED_DEBUG=DETAIL and SeqNum-less (torch <= 1.9) watchdog lines report.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from .common import as_int, as_str
from .types import UNKNOWN_GROUP, Mismatch, MismatchKind

OP_ROW_STATES = ("timed_out", "scheduled", "started", "completed", "failed")
COMPARED = ("process_group", "seq_num", "rank", "op_type", "state", "numel_in", "numel_out",
            "sizes", "dtypes")
P2P_GLOO = ("gloo:recv", "gloo:send")


def _codes(values: pd.Series | pd.api.extensions.ExtensionArray) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of ``values`` (<NA> is -1) and the distinct values they number."""
    codes, uniques = pd.factorize(values, sort=False)
    return np.asarray(codes, dtype=np.int64), np.asarray(uniques, dtype=object)


def _op_mask(df: pd.DataFrame) -> np.ndarray:
    """Which rows are operations at a sequence number on a known rank (see ``op_rows``)."""
    st_c, st_u = _codes(df["state"])
    op_c, op_u = _codes(df["op_type"])
    return _op_mask_codes(df, st_c, st_u, op_c, op_u)


def _op_mask_codes(df: pd.DataFrame, st_c: np.ndarray, st_u: np.ndarray, op_c: np.ndarray,
                   op_u: np.ndarray) -> np.ndarray:
    # per distinct value, then per row (code -1, <NA>, picks the False appended last)
    ok_state = np.array([u in OP_ROW_STATES for u in st_u] + [False], dtype=bool)
    mask = ok_state[st_c] & (op_c >= 0)
    mask &= df["seq_num"].notna().to_numpy() & df["rank"].notna().to_numpy()
    # gloo's send/recv without a size are its p2p bookkeeping, not operations of their own
    p2p = np.array([str(o).startswith(P2P_GLOO) for o in op_u] + [False], dtype=bool)
    if p2p.any():
        mask &= ~p2p[op_c] | df["numel_in"].notna().to_numpy()
    return mask


def _first_per_key(pg: np.ndarray, seq: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Positions of the first row of each (process group code, seq, rank), in row order."""
    if not len(pg):
        return np.zeros(0, dtype=np.int64)
    s0, r0 = int(seq.min()), int(rank.min())
    ns, nr = int(seq.max()) - s0 + 1, int(rank.max()) - r0 + 1
    if (int(pg.max()) + 1) * ns * nr < 2**62:  # one int64 key per row: a cheap hash
        key = (pg * ns + (seq - s0)) * nr + (rank - r0)
        dup = pd.Series(key).duplicated(keep="first").to_numpy()
    else:
        dup = pd.DataFrame({"p": pg, "s": seq, "r": rank}).duplicated(keep="first").to_numpy()
    return np.flatnonzero(~dup)


def op_rows(collectives: pd.DataFrame) -> pd.DataFrame:
    """Rows that name an operation at a sequence number on a known rank, one per
    (process group, seq, rank): the first recorded."""
    df = collectives
    if not len(df):
        return df
    df = df[_op_mask(df)]
    df = df.assign(process_group=df["process_group"].fillna(UNKNOWN_GROUP))
    pg, _ = _codes(df["process_group"])
    keep = _first_per_key(pg, df["seq_num"].to_numpy(dtype=np.int64),
                          df["rank"].to_numpy(dtype=np.int64))
    return df.iloc[keep] if len(keep) < len(df) else df


def _majority(values: dict[int, Any]) -> Any:
    """The most common value; on a tie, the lowest rank's."""
    counts = Counter(values.values())
    best = max(counts.values())
    for r in sorted(values):
        if counts[values[r]] == best:
            return values[r]
    return None


def _na_none(v: Any) -> Any:
    """<NA> as None: a value of its own, equal to itself and to nothing else."""
    return None if v is pd.NA or v is None else v


def _group_min_max(codes: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.minimum.reduceat(codes, starts), np.maximum.reduceat(codes, starts)


def _pg_codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the process groups, an unknown one (<NA>) counted as ``UNKNOWN_GROUP``."""
    codes, names = _codes(values)
    if (codes < 0).any():
        q = np.flatnonzero(names == UNKNOWN_GROUP)
        if len(q):
            fill = int(q[0])
        else:
            fill = len(names)
            names = np.append(names, np.array([UNKNOWN_GROUP], dtype=object))
        codes = np.where(codes < 0, fill, codes)
    return codes, names


def first_mismatch(collectives: pd.DataFrame) -> Mismatch | None:
    """The first (process group, sequence number) at which ranks disagree (its ``kind`` a
    ``MismatchKind``), or None."""
    if not len(collectives):
        return None
    c = collectives[[k for k in COMPARED if k in collectives]]
    st_c, st_u = _codes(c["state"])
    op_c, op_u = _codes(c["op_type"])
    rows = np.flatnonzero(_op_mask_codes(c, st_c, st_u, op_c, op_u))
    if not len(rows):
        return None
    sub = c.iloc[rows]
    pg_codes, pgs = _pg_codes(sub["process_group"])
    seq = sub["seq_num"].to_numpy(dtype=np.int64)
    rank = sub["rank"].to_numpy(dtype=np.int64)
    keep = _first_per_key(pg_codes, seq, rank)
    rows, pg_codes, seq, rank = rows[keep], pg_codes[keep], seq[keep], rank[keep]
    st_c, op_c = st_c[rows], op_c[rows]

    # per (group, rank): first and last seq kept; a group compares from the latest first seq
    # (ring buffers forget: compare what all ranks kept); fewer than two ranks: nothing to compare.
    # A rank with one number only (its watchdog line) keeps no window: it moves no start, so
    # ranks that timed out at different numbers are still compared where two meet
    pr = pd.DataFrame({"p": pg_codes, "r": rank, "s": seq}).groupby(["p", "r"])["s"]
    per_rank = pd.DataFrame({"lo": pr.min(), "hi": pr.max()}).reset_index()
    per_rank["w"] = per_rank["lo"].where(per_rank["hi"] > per_rank["lo"])
    by_pg = per_rank.groupby("p").agg(ranks=("r", "size"), start=("w", "max"), low=("lo", "min"),
                                      last=("hi", "min"))
    by_pg["start"] = by_pg["start"].fillna(by_pg["low"]).astype(np.int64)
    n_pg = len(pgs)
    ranks_in = np.zeros(n_pg, dtype=np.int64)
    start = np.zeros(n_pg, dtype=np.int64)
    first_last = np.zeros(n_pg, dtype=np.int64)
    idx = by_pg.index.to_numpy()
    ranks_in[idx] = by_pg["ranks"].to_numpy()
    start[idx] = by_pg["start"].to_numpy()
    first_last[idx] = by_pg["last"].to_numpy()
    sel = (ranks_in[pg_codes] >= 2) & (seq >= start[pg_codes])
    if not sel.any():
        return None
    rows, pg_codes, seq, st_c, op_c = rows[sel], pg_codes[sel], seq[sel], st_c[sel], op_c[sel]
    sub = c.iloc[rows]

    # one block of rows per (group, seq): a block is flagged when its ranks disagree
    order = np.lexsort((seq, pg_codes))
    gp, gs = pg_codes[order], seq[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (gp[1:] != gp[:-1]) | (gs[1:] != gs[:-1])
    starts = np.flatnonzero(new)
    bp, bs = gp[starts], gs[starts]

    def differs(codes: np.ndarray) -> np.ndarray:
        lo, hi = _group_min_max(codes[order], starts)
        return lo != hi

    flag = differs(op_c)
    flag |= differs(_size_codes(sub))
    if "dtypes" in sub:
        d_o = _codes(sub["dtypes"])[0][order]
        lo = np.minimum.reduceat(np.where(d_o >= 0, d_o, np.iinfo(np.int64).max), starts)
        hi = np.maximum.reduceat(np.where(d_o >= 0, d_o, -1), starts)
        flag |= (hi >= 0) & (lo < hi)  # two different dtypes named (unknown ones aside)
    # Missing ranks and states compare positions within one group: not across lines whose
    # group is unknown (watchdog lines of several groups numbered independently).
    known_pg = np.array([str(g) != UNKNOWN_GROUP for g in pgs], dtype=bool)[bp]
    flag |= known_pg & (bs > first_last[bp])  # a rank of the group stopped before this number
    done = np.array([u == "completed" for u in st_u] + [False], dtype=bool)
    if done.any():
        has_done = np.maximum.reduceat(done[st_c[order]].astype(np.int8), starts) > 0
        flag |= known_pg & has_done & differs(st_c)
    # the first flagged block by (seq, group name); read row by row, it says what differs
    for b in sorted(np.flatnonzero(flag), key=lambda b: (int(bs[b]), str(pgs[bp[b]]))):
        p, s = bp[b], bs[b]
        last = (per_rank[per_rank["p"] == p] if str(pgs[p]) != UNKNOWN_GROUP
                else per_rank.iloc[:0])
        found = _describe(str(pgs[p]), int(s), sub[(pg_codes == p) & (seq == s)],
                          dict(zip(last["r"].tolist(), last["hi"].tolist(), strict=True)))
        if found is not None:
            return found
    return None


def _size_codes(df: pd.DataFrame) -> np.ndarray:
    """Codes equal where ``_size_key`` is equal: the sizes text, else (numel_in, numel_out)."""
    n_in, _ = _codes(df["numel_in"])
    n_out = _codes(df["numel_out"])[0] if "numel_out" in df else np.full(len(df), -1)
    pair = (n_in + 1) * (int(n_out.max(initial=-1)) + 2) + (n_out + 1)
    if "sizes" not in df:
        return pair
    s_c, _ = _codes(df["sizes"])
    return np.where(s_c >= 0, s_c, -1 - pair)


def _describe(pg: str, seq: int, block: pd.DataFrame,
              last: dict[int, int]) -> Mismatch | None:
    """The mismatch at one (process group, seq) block, its kind and the differing ranks; None
    when its ranks agree. ``last``: each rank of the group's last seq."""
    recs = {int(r): rec for r, rec in zip(block["rank"], block.to_dict("records"), strict=True)}
    ops = {r: str(rec["op_type"]) for r, rec in recs.items()}
    missing = [r for r in sorted(last) if r not in recs and last[r] < seq]
    result: tuple[MismatchKind, list[int]] | None = None
    if len(set(ops.values())) > 1:
        maj = _majority(ops)
        result = (MismatchKind.OP, [r for r, o in ops.items() if o != maj])
    else:
        sizes = {r: _size_key(rec) for r, rec in recs.items()}
        dtypes = {r: _na_none(rec.get("dtypes")) for r, rec in recs.items()}
        if len(set(sizes.values())) > 1:
            maj = _majority(sizes)
            result = (MismatchKind.SIZE, [r for r, v in sizes.items() if v != maj])
        elif len({d for d in dtypes.values() if isinstance(d, str)}) > 1:
            maj = _majority(dtypes)
            result = (MismatchKind.DTYPE, [r for r, v in dtypes.items() if v != maj])
        elif missing:
            result = (MismatchKind.MISSING_RANKS, missing)
        else:
            states = {r: str(rec["state"]) for r, rec in recs.items()}
            if "completed" in states.values() and len(set(states.values())) > 1:
                result = (MismatchKind.STATE, [r for r, v in states.items() if v != "completed"])
    if result is None:
        return None
    kind, differing = result
    return Mismatch(pg, seq, kind, {str(r): ops[r] for r in sorted(ops)}, sorted(differing))


def _size_key(rec: Any) -> Any:
    sizes = rec.get("sizes")
    if isinstance(sizes, str):
        return sizes
    return (_na_none(rec.get("numel_in")), _na_none(rec.get("numel_out")))


def rank_positions(collectives: pd.DataFrame) -> pd.DataFrame:
    """Per (process group, rank): last enqueued and last completed sequence numbers, and the
    sequence number each rank timed out in; from status lines, dumps and timeout lines."""
    cols = ["process_group", "rank", "last_enqueued", "last_completed", "timed_out_seq"]
    df = collectives[collectives["rank"].notna()]
    if not len(df):
        return pd.DataFrame(columns=cols)
    state = df["state"]
    is_op = state.isin(OP_ROW_STATES).to_numpy(dtype=bool)
    timed_out = state.eq("timed_out").fillna(False).to_numpy(dtype=bool)
    seq = df["seq_num"]
    parts = pd.DataFrame({
        "process_group": df["process_group"].fillna(UNKNOWN_GROUP),
        "rank": df["rank"],
        "enq": df["last_enqueued"],
        "comp": df["last_completed"],
        "ops": seq.where(is_op),
        "to": seq.where(timed_out),
    })
    g = parts.groupby(["process_group", "rank"], sort=True)
    agg = pd.DataFrame({"enq": g["enq"].max(), "comp": g["comp"].max(), "ops": g["ops"].max(),
                        "to": g["to"].min()})
    enq = agg["enq"].fillna(agg["ops"])

    def ints(s: pd.Series) -> list[int | None]:
        return [None if v is pd.NA else int(v) for v in s.astype(object)]

    out = [{"process_group": pg, "rank": int(rank), "last_enqueued": e, "last_completed": c,
            "timed_out_seq": t}
           for (pg, rank), e, c, t in zip(agg.index, ints(enq), ints(agg["comp"]),
                                          ints(agg["to"]), strict=True)]
    return pd.DataFrame(out, columns=cols).astype(
        {"rank": "Int64", "last_enqueued": "Int64", "last_completed": "Int64",
         "timed_out_seq": "Int64"})


# -- smaller readers: a watchdog line's process group, dumps, other mismatch reports ----------

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


def adopt_pg(rows: pd.DataFrame, ref: pd.DataFrame | None = None) -> pd.Series:
    """Each row's process group, ``UNKNOWN_GROUP`` when unknown; a row without one takes the group that
    ``ref``'s rows (default: ``rows``) name for the same sequence number, when only one does
    (a watchdog line carries ``[Rank N]`` only; the status line of another rank names it)."""
    pg = rows["process_group"].fillna(UNKNOWN_GROUP).astype(object)
    ref = rows if ref is None else ref
    named = ref[ref["process_group"].notna() & (ref["process_group"] != UNKNOWN_GROUP)
                & ref["seq_num"].notna()]
    if not len(named) or not (pg == UNKNOWN_GROUP).any():
        return pg
    groups = named.groupby("seq_num")["process_group"].unique()
    only = {int(q): g[0] for q, g in groups.items() if len(g) == 1}
    fill = [only.get(int(q), UNKNOWN_GROUP) if p == UNKNOWN_GROUP and pd.notna(q) else p
            for p, q in zip(pg, rows["seq_num"], strict=True)]
    return pd.Series(fill, index=rows.index, dtype=object)


def majority_op(rows: pd.DataFrame) -> str | None:
    """The op most ranks name (each rank counted once, by its first line; the first printed
    wins a tie)."""
    if not len(rows):
        return None
    first = rows.drop_duplicates("rank") if rows["rank"].notna().any() else rows
    counts: dict[str, int] = {}
    for op in first["op_type"].dropna():
        counts[str(op)] = counts.get(str(op), 0) + 1
    return max(counts, key=lambda o: counts[o]) if counts else None


def detail_mismatch(c: pd.DataFrame) -> Mismatch | None:
    """TORCH_DISTRIBUTED_DEBUG=DETAIL's 'Detected mismatch between collectives': what each
    rank it names was running (the first report)."""
    rows = c[(c["state"] == "mismatch") & c["rank"].notna()]
    if not len(rows):
        return None
    first = rows.iloc[:2]  # one report: the printing rank, then the rank it differs from
    ops = {int(r): as_str(o) or "?" for r, o in zip(first["rank"], first["op_type"], strict=True)}
    sizes = {as_str(v) for v in first["sizes"]}
    dtypes = {as_str(v) for v in first["dtypes"]} - {None}
    kind = (MismatchKind.OP if len(set(ops.values())) > 1 else MismatchKind.SIZE
            if len(sizes) > 1 else MismatchKind.DTYPE if len(dtypes) > 1 else MismatchKind.OP)
    seqs = [as_int(v) for v in first["seq_num"]]
    return Mismatch(as_str(first["process_group"].iloc[0]) or UNKNOWN_GROUP,
                    next((q for q in seqs if q is not None), None), kind,
                    {str(r): o for r, o in sorted(ops.items())}, [int(first["rank"].iloc[-1])])


def unnumbered_mismatch(legacy: pd.DataFrame) -> Mismatch | None:
    """Watchdog lines without SeqNum (torch <= 1.9) where each rank timed out in one op and
    the ranks name different ops: the desync, as far as those lines tell."""
    rows = legacy.dropna(subset=["rank", "op_type"])
    per_rank = rows.groupby("rank")["op_type"].unique()
    if len(per_rank) < 2 or any(len(v) != 1 for v in per_rank):
        return None
    ops = {int(r): str(v[0]) for r, v in per_rank.items()}
    if len(set(ops.values())) < 2:
        return None
    maj = majority_op(rows)
    return Mismatch(UNKNOWN_GROUP, None, MismatchKind.OP,
                    {str(r): o for r, o in sorted(ops.items())},
                    sorted(r for r, o in ops.items() if o != maj))


# the communicator an NCCL trace line names ("AllReduce: opCount 0 … comm 0x55d5f5bca580
# [nranks=2] stream 0x…")
NCCL_COMM_RE = re.compile(r"\bcomm (0x[0-9a-fA-F]+)\b")


def entered_rows(c: pd.DataFrame) -> pd.DataFrame:
    """Rows of a rank entering a numbered collective outside any dump or report of a group
    (``started``, a sequence number, no process group): TORCH_DISTRIBUTED_DEBUG=DETAIL's
    ``Running collective: CollectiveFingerPrint(SequenceNumber=…)`` lines."""
    if not len(c):
        return c
    keep = ((c["state"] == "started") & c["rank"].notna() & c["seq_num"].notna()
            & c["process_group"].isna() & ~is_dump(c))
    rows = c[keep.fillna(False)]
    if not len(rows):
        return rows
    # A counter that never moves (some NCCL builds trace every call as opCount 0): the calls'
    # order numbers them.
    by_rank = rows.groupby("rank")["seq_num"]
    still = by_rank.transform("nunique").eq(1) & by_rank.transform("size").gt(1)
    if still.any() and "line" in rows:
        # ... unless the calls are of several communicators (NCCL's trace names each, "comm
        # 0x55d5f5bca580"): nccl-tests' one process drives a communicator per GPU and test, its
        # calls in no one order (Timez-zx/nccl-tests' nccl-fault.log)
        comms = rows["line"].astype("string").str.extract(NCCL_COMM_RE, expand=False)
        mixed = still & comms.groupby(rows["rank"]).transform("nunique").gt(1)
        rows, still = rows[~mixed], still[~mixed]
    if still.any():
        order = rows.groupby("rank").cumcount()
        rows = rows.assign(seq_num=rows["seq_num"].where(~still, order).astype("Int64"))
    return rows


def _one_counter(rows: pd.DataFrame) -> bool:
    """Whether each rank's entered rows read as one counter on one machine: numbers never go
    back, and a rank number names one host (a device index repeats across a multi-node trace)."""
    seqs = rows.groupby("rank")["seq_num"]
    hosts = rows.groupby("rank")["host"].nunique()
    return bool(seqs.agg(lambda s: s.is_monotonic_increasing).all() and (hosts <= 1).all())


def entered_mismatch(c: pd.DataFrame) -> Mismatch | None:
    """The first number at which ranks entered different collectives, or one with another
    count or datatype (``entered_rows``): a desync. None unless each rank's numbers strictly
    rise (one communicator each: several interleaved ones repeat or go back)."""
    rows = entered_rows(c)
    if not len(rows) or rows["rank"].nunique() < 2 or not _one_counter(rows):
        return None
    if not rows.groupby("rank")["seq_num"].agg(lambda s: s.is_unique).all():
        return None
    for seq, block in rows.groupby("seq_num", sort=True):
        if block["rank"].nunique() > 1:
            found = _describe(UNKNOWN_GROUP, int(seq), block, {})
            if found is not None and found.kind.is_desync:
                return found
    return None


def entered_lag(c: pd.DataFrame) -> Mismatch | None:
    """The ranks whose last entered collective (``entered_rows``) is behind the furthest one
    any rank entered, as a ``missing_ranks`` mismatch at that number: in a hang the others wait
    there for them. None with fewer than two ranks, or all at the same number, or where a
    rank's numbers go back: each group's wrapper counts on its own (the lines name no group),
    so the last lines of ranks could then be of different groups."""
    rows = entered_rows(c)
    if not len(rows):
        return None
    if not _one_counter(rows):
        return None
    last = rows.groupby("rank", sort=True).tail(1)
    at = {int(r): int(s) for r, s in zip(last["rank"], last["seq_num"], strict=True)}
    if len(at) < 2 or len(set(at.values())) < 2:
        return None
    top = max(at.values())
    ops = {str(int(r)): as_str(o) or "?" for r, s, o in
           zip(last["rank"], last["seq_num"], last["op_type"], strict=True) if int(s) == top}
    return Mismatch(UNKNOWN_GROUP, top, MismatchKind.MISSING_RANKS, ops,
                    sorted(r for r, s in at.items() if s < top))


def is_dump(c: pd.DataFrame) -> pd.Series:
    """Rows that came from a flight-recorder dump."""
    return c["source"].str.contains("#entry", regex=False, na=False)


def in_flight(collectives: pd.DataFrame) -> pd.DataFrame:
    """Per dumped rank, its last flight-recorder entry: the collective it was in when it
    stopped (gloo's timeout message does not name one)."""
    fr = collectives[is_dump(collectives) & collectives["rank"].notna()]
    if not len(fr):
        return fr
    fr = fr.assign(_t=fr["time"], _i=range(len(fr)))
    last = fr.sort_values(["rank", "_t", "_i"]).groupby("rank", as_index=False).tail(1)
    return last.drop(columns=["_t", "_i"])
