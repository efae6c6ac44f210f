"""Figures, built with matplotlib's object API: each function returns a Figure; ``save``
writes it as PNG under ``output_dir`` (the notebook shows it, then closes it)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .diagnose.collectives import rank_positions


def save(fig: Figure, output_dir: str | Path, name: str) -> Path:
    """Write ``fig`` as ``output_dir/name.png``; ``name`` may not leave ``output_dir``."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name) or "figure"
    path = out / f"{safe}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


def _message(fig: Figure, text: str) -> Figure:
    ax = fig.add_subplot()
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    return fig


def collective_positions(collectives: pd.DataFrame, seq_num: int | None = None,
                         timed_out_ranks: list[int] | None = None,
                         process_group: str | None = None, max_ranks: int = 48) -> Figure:
    """Per rank: the span from last completed to last enqueued collective, and the one the
    timeout hit (dashed line). A rank whose span ends left of the line never arrived. With
    many ranks, the ones furthest behind are shown."""
    pos = rank_positions(collectives)
    everyone = sorted({int(r) for r in pos["rank"]}) if len(pos) else []
    if process_group is not None and len(pos):
        pos = pos[pos["process_group"] == process_group]
        absent = [r for r in everyone if r not in set(pos["rank"].astype(int))]
        if absent:
            pos = pd.concat([pos, pd.DataFrame({"process_group": process_group, "rank": absent})],
                            ignore_index=True)
    if not len(pos) or pos["last_enqueued"].isna().all():  # nothing to draw
        return _message(Figure(figsize=(8, 1.6)),
                        "No per-rank collective positions in these logs\n"
                        "(no watchdog status lines, rank-tagged timeouts or flight-recorder dumps)")
    pos = pos.astype({"last_enqueued": "Float64", "last_completed": "Float64"})
    pos = pos.sort_values(["last_enqueued", "rank"], na_position="first").head(max_ranks)
    pos = pos.sort_values("rank")
    fig = Figure(figsize=(8, 1.2 + 0.28 * len(pos)))
    ax = fig.add_subplot()
    timed = set(timed_out_ranks or [])
    for y, (_, r) in enumerate(pos.iterrows()):
        enq, comp = r["last_enqueued"], r["last_completed"]
        left = comp if pd.notna(comp) else enq
        color = "tab:red" if int(r["rank"]) in timed else "tab:blue"
        if pd.notna(enq):
            ax.plot([left, enq], [y, y], color=color, lw=5, alpha=0.5, solid_capstyle="butt")
            ax.plot([enq], [y], marker=">", color=color, ms=8)
    labels = [f"rank {int(r['rank'])}" + ("" if pd.notna(r["last_enqueued"]) else
                                          " (nothing recorded in this group)")
              for _, r in pos.iterrows()]
    ax.set_yticks(range(len(pos)), labels, fontsize=8)
    lo, hi = ax.get_xlim()
    if seq_num is not None:
        lo, hi = min(lo, seq_num - 1), max(hi, seq_num + 1)
    ax.set_xlim(lo - 0.5, hi + 0.5)
    if seq_num is not None:
        ax.axvline(seq_num, color="tab:red", ls="--", lw=1, label=f"timed out in #{seq_num}")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.ticklabel_format(axis="x", useOffset=False, style="plain")
    ax.set_xlabel("collective sequence number (bar: last completed → last enqueued)")
    title = "Where each rank stood when the job stopped"
    if process_group is not None:
        title += f" (process group {process_group})"
    ax.set_title(title + "\nred: timed out; blue: did not report a timeout", fontsize=10)
    ax.set_ylim(len(pos) - 0.5, -0.5)
    fig.tight_layout()
    return fig


def progress_timeline(progress: pd.DataFrame, iterations: pd.DataFrame) -> Figure:
    """Steps reached over elapsed time (tqdm) or iteration times (iteration lines)."""
    fig = Figure(figsize=(8, 3))
    ax = fig.add_subplot()
    if len(iterations) and iterations["elapsed_s"].notna().any():
        it = iterations.dropna(subset=["iteration", "elapsed_s"])
        ax.plot(it["iteration"], it["elapsed_s"], marker=".")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("iteration")
        ax.set_ylabel("seconds per iteration")
    elif len(progress) and progress["elapsed_s"].notna().any():
        pr = progress.dropna(subset=["step", "elapsed_s"])
        for rank, g in pr.groupby(pr["rank"].fillna(-1)):
            ax.plot(g["elapsed_s"] / 60, g["step"], marker=".",
                    label="rank ?" if rank == -1 else f"rank {int(rank)}")
        ax.set_xlabel("elapsed (min)")
        ax.set_ylabel("step")
        ax.legend(fontsize=8)
    else:
        return _message(Figure(figsize=(8, 1.5)), "No progress bars or iteration lines found")
    ax.set_title("Progress before the incident")
    fig.tight_layout()
    return fig
