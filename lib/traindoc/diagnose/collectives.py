"""Cross-rank comparison of collectives: where ranks first disagree, and where each stands.

Works on any ``collectives`` rows: per-rank watchdog lines and flight-recorder entries alike.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

OP_ROW_STATES = ("timed_out", "scheduled", "started", "completed", "failed")


def op_rows(collectives: pd.DataFrame) -> pd.DataFrame:
    """Rows that name an operation at a sequence number on a known rank, one per
    (process group, seq, rank): the first recorded."""
    df = collectives
    if not len(df):
        return df
    df = df[df["state"].isin(OP_ROW_STATES) & df["seq_num"].notna() & df["rank"].notna()
            & df["op_type"].notna()]
    df = df[~df["op_type"].str.startswith("gloo:recv") & ~df["op_type"].str.startswith("gloo:send")
            | df["numel_in"].notna()]
    df = df.assign(process_group=df["process_group"].fillna("?"))
    return df.drop_duplicates(["process_group", "seq_num", "rank"], keep="first")


def _majority(values: dict[int, Any]) -> Any:
    """The most common value; on a tie, the lowest rank's."""
    counts = Counter(values.values())
    best = max(counts.values())
    for r in sorted(values):
        if counts[values[r]] == best:
            return values[r]
    return None


def first_mismatch(collectives: pd.DataFrame) -> dict[str, Any] | None:
    """The first (process group, sequence number) at which ranks disagree, or None.

    ``kind`` is ``op`` (different collectives), ``size`` (different element counts or shapes),
    ``dtype``, ``missing_ranks`` (some ranks of the group recorded nothing at that number while
    having recorded earlier ones) or ``state`` (some completed it, others did not).
    """
    df = op_rows(collectives)
    if not len(df):
        return None
    found: list[tuple[int, str, dict[str, Any]]] = []
    for pg, g in df.groupby("process_group", sort=True):
        ranks = sorted(int(r) for r in g["rank"].unique())
        if len(ranks) < 2:
            continue
        per_rank_max = g.groupby("rank")["seq_num"].max()
        per_rank_min = g.groupby("rank")["seq_num"].min()
        start = int(per_rank_min.max())  # ring buffers forget: compare what all ranks kept
        for seq, s in g[g["seq_num"] >= start].groupby("seq_num", sort=True):
            seq = int(seq)
            recs = {int(r["rank"]): r for _, r in s.iterrows()}
            ops = {r: str(rec["op_type"]) for r, rec in recs.items()}
            missing = [r for r in ranks if r not in recs and int(per_rank_max[r]) < seq]
            result = None
            if len(set(ops.values())) > 1:
                maj = _majority(ops)
                result = ("op", [r for r, o in ops.items() if o != maj])
            else:
                sizes = {r: _size_key(rec) for r, rec in recs.items()}
                dtypes = {r: rec.get("dtypes") for r, rec in recs.items()}
                if len(set(sizes.values())) > 1:
                    maj = _majority(sizes)
                    result = ("size", [r for r, v in sizes.items() if v != maj])
                elif len({d for d in dtypes.values() if isinstance(d, str)}) > 1:
                    maj = _majority(dtypes)
                    result = ("dtype", [r for r, v in dtypes.items() if v != maj])
                elif missing:
                    result = ("missing_ranks", missing)
                else:
                    states = {r: str(rec["state"]) for r, rec in recs.items()}
                    if "completed" in states.values() and len(set(states.values())) > 1:
                        result = ("state", [r for r, v in states.items() if v != "completed"])
            if result:
                kind, differing = result
                found.append((seq, str(pg), {
                    "process_group": str(pg),
                    "seq_num": seq,
                    "kind": kind,
                    "ops": {str(r): ops[r] for r in sorted(ops)},
                    "ranks": sorted(differing),
                }))
                break
    if not found:
        return None
    found.sort(key=lambda t: (t[0], t[1]))
    return found[0][2]


def _size_key(rec: Any) -> Any:
    sizes = rec.get("sizes")
    if isinstance(sizes, str):
        return sizes
    return (rec.get("numel_in"), rec.get("numel_out"))


def rank_positions(collectives: pd.DataFrame) -> pd.DataFrame:
    """Per (process group, rank): last enqueued and last completed sequence numbers, and the
    sequence number each rank timed out in; from status lines, dumps and timeout lines."""
    cols = ["process_group", "rank", "last_enqueued", "last_completed", "timed_out_seq"]
    df = collectives[collectives["rank"].notna()]
    if not len(df):
        return pd.DataFrame(columns=cols)
    df = df.assign(process_group=df["process_group"].fillna("?"))
    out = []
    for (pg, rank), g in df.groupby(["process_group", "rank"], sort=True):
        enq = g["last_enqueued"].dropna()
        comp = g["last_completed"].dropna()
        to = g[g["state"] == "timed_out"]["seq_num"].dropna()
        ops = g[g["state"].isin(OP_ROW_STATES)]["seq_num"].dropna()
        out.append({
            "process_group": pg,
            "rank": int(rank),
            "last_enqueued": int(enq.max()) if len(enq) else (int(ops.max()) if len(ops) else None),
            "last_completed": int(comp.max()) if len(comp) else None,
            "timed_out_seq": int(to.min()) if len(to) else None,
        })
    return pd.DataFrame(out, columns=cols).astype(
        {"rank": "Int64", "last_enqueued": "Int64", "last_completed": "Int64",
         "timed_out_seq": "Int64"})
