"""Figures, built with matplotlib's object API: each function returns a Figure; ``save``
writes it as PNG under ``output_dir`` (the notebook shows it, then closes it)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

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
                         max_ranks: int = 64) -> Figure:
    """Per rank: last enqueued and last completed sequence number, and the one it timed out
    in; a rank far below the others is the one that never arrived."""
    pos = rank_positions(collectives)
    fig = Figure(figsize=(8, 3.6))
    if not len(pos):
        return _message(fig, "No per-rank collective positions in these logs\n"
                             "(no watchdog status lines, rank-tagged timeouts or dumps)")
    pos = pos.sort_values(["process_group", "rank"]).head(max_ranks)
    ax = fig.add_subplot()
    labels = [f"{r}" if pg in ("?", None) else f"{r}\n{pg}" for pg, r in
              zip(pos["process_group"], pos["rank"], strict=False)]
    x = range(len(pos))
    ax.scatter(x, pos["last_enqueued"].astype("Float64").to_numpy(na_value=float("nan")),
               marker="^", s=60, label="last enqueued")
    ax.scatter(x, pos["last_completed"].astype("Float64").to_numpy(na_value=float("nan")),
               marker="o", s=40, label="last completed")
    ax.scatter(x, pos["timed_out_seq"].astype("Float64").to_numpy(na_value=float("nan")),
               marker="x", s=80, color="red", label="timed out in")
    if seq_num is not None:
        ax.axhline(seq_num, color="red", lw=0.8, ls="--")
    ax.set_xticks(list(x), labels, fontsize=8)
    ax.set_xlabel("rank (process group)")
    ax.set_ylabel("collective sequence number")
    ax.set_title("Where each rank stood when the job stopped")
    ax.ticklabel_format(axis="y", useOffset=False, style="plain")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def progress_timeline(progress: pd.DataFrame, iterations: pd.DataFrame) -> Figure:
    """Steps reached over elapsed time (tqdm) or iteration times (iteration lines)."""
    fig = Figure(figsize=(8, 3))
    ax = fig.add_subplot()
    if len(iterations) and iterations["elapsed_s"].notna().any():
        it = iterations.dropna(subset=["iteration", "elapsed_s"])
        ax.plot(it["iteration"], it["elapsed_s"], marker=".")
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
