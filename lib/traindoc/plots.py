"""Figures, built with matplotlib's object API: each function returns a Figure; ``save``
writes it as PNG under ``output_dir`` (the notebook shows it, then closes it). A figure that
would only say that there is nothing to draw is a ``Message`` instead: one line of text,
shown as such and saved as no PNG.

Text from logs is never parsed as math: a ``$…$`` in a frame path, a file name or a
process-group name (an unexpanded ``${SLURM_JOB_ID}`` is common) would go to matplotlib's
math parser, which raises on it. Importing this module turns math parsing and TeX off
(``text.parse_math``, ``text.usetex``; the figures here draw no math), and ``save`` draws
under the same settings, so tick labels made at draw time keep them too."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.dates as mdates
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.ticker import MaxNLocator

from .diagnose.collectives import rank_positions
from .report import text_html, write_new

NO_MATH = {"text.parse_math": False, "text.usetex": False}
matplotlib.rcParams.update(NO_MATH)


class Message:
    """What a figure would have said when there is nothing to draw: one line, no image."""

    def __init__(self, text: str) -> None:
        self.text = " ".join(text.split())

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return f"<p class='traindoc-no-figure'><i>{text_html(self.text)}</i></p>"


def save(fig: Figure | Message, output_dir: str | Path, name: str) -> Path | None:
    """Write ``fig`` as ``output_dir/name.png`` (a ``Message`` writes nothing: None);
    ``name`` may not leave ``output_dir``, and a link planted at that name is never followed
    (``report.write_new``)."""
    if isinstance(fig, Message):
        return None
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name) or "figure"
    path = out / f"{safe}.png"
    buf = io.BytesIO()
    for text in fig.findobj(Text):
        text.set_parse_math(False)
    with matplotlib.rc_context(NO_MATH):
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return write_new(path, buf.getvalue())


def _count_axis(ax: Any, values: pd.Series, axis: str = "x", from_zero: bool = False) -> None:
    """Whole-number ticks for a count (iterations, steps), on a range wide enough to hold
    some: one value alone gets one either side, not a fraction-labelled sliver."""
    v = pd.to_numeric(pd.Series(values), errors="coerce").dropna()
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(MaxNLocator(integer=True))
    ax.ticklabel_format(axis=axis, useOffset=False, style="plain")
    if not len(v):
        return
    lo, hi = float(v.min()), float(v.max())
    if from_zero:
        lo = 0.0
    if hi - lo < 2:
        lo, hi = (lo, lo + 2) if from_zero else (lo - 1, hi + 1)
        (ax.set_xlim if axis == "x" else ax.set_ylim)(lo, hi)
    elif from_zero:
        (ax.set_xlim if axis == "x" else ax.set_ylim)(0, hi * 1.05)


def collective_positions(collectives: pd.DataFrame, seq_num: int | None = None,
                         timed_out_ranks: list[int] | None = None,
                         process_group: str | None = None, max_ranks: int = 48,
                         blamed_ranks: list[int] | None = None) -> Figure | Message:
    """Per rank: the span from last completed to last enqueued collective, and the one the
    timeout hit (dashed line). A rank whose span ends left of the line never arrived. Every
    rank that timed out or that the verdict blames (``blamed_ranks``: never arrived, failed
    first) is drawn, with "nothing recorded" when the logs hold no position for it; with many
    ranks, the ones furthest behind fill the rest."""
    pos = rank_positions(collectives)
    everyone = sorted({int(r) for r in pos["rank"]}) if len(pos) else []
    if process_group is not None and len(pos):
        pos = pos[pos["process_group"] == process_group]
        absent = [r for r in everyone if r not in set(pos["rank"].astype(int))]
        if absent:
            pos = pd.concat([pos, pd.DataFrame({"process_group": process_group, "rank": absent})],
                            ignore_index=True)
    timed, blamed = set(timed_out_ranks or []), set(blamed_ranks or [])
    if not len(pos) or pos["last_enqueued"].isna().all():  # nothing to draw
        return Message("No per-rank collective positions in these logs\n"
                        "(no watchdog status lines, rank-tagged timeouts or flight-recorder dumps)")
    pos = pos.astype({"last_enqueued": "Float64", "last_completed": "Float64"})
    missing = sorted((timed | blamed) - set(pos["rank"].astype(int)))
    if missing:
        pos = pd.concat([pos, pd.DataFrame({"rank": missing})], ignore_index=True)
    must = pos["rank"].astype(int).isin(timed | blamed)
    rest = pos[~must].sort_values(["last_enqueued", "rank"], na_position="first")
    pos = pd.concat([pos[must], rest.head(max(0, max_ranks - int(must.sum())))])
    pos = pos.sort_values("rank")
    fig = Figure(figsize=(8, 1.2 + 0.28 * len(pos)))
    ax = fig.add_subplot()
    colours = {"timed out": "tab:red", "blamed: never arrived or failed first": "tab:purple",
               "did not report a timeout": "tab:blue"}
    drawn: set[str] = set()
    for y, (_, r) in enumerate(pos.iterrows()):
        enq, comp = r["last_enqueued"], r["last_completed"]
        left = comp if pd.notna(comp) else enq
        rank = int(r["rank"])
        kind = ("blamed: never arrived or failed first" if rank in blamed
                else "timed out" if rank in timed else "did not report a timeout")
        if pd.notna(enq):
            ax.plot([left, enq], [y, y], color=colours[kind], lw=5, alpha=0.5,
                    solid_capstyle="butt")
            ax.plot([enq], [y], marker=">", color=colours[kind], ms=8)
            drawn.add(kind)
    labels = [f"rank {int(r['rank'])}" + ("" if pd.notna(r["last_enqueued"]) else
                                          " (nothing recorded)")
              for _, r in pos.iterrows()]
    ax.set_yticks(range(len(pos)), labels, fontsize=8)
    lo, hi = ax.get_xlim()
    if seq_num is not None:
        lo, hi = min(lo, seq_num - 1), max(hi, seq_num + 1)
    if hi - lo < 2:  # every rank at one number (NCCL's COLL trace printing opCount 0): an
        mid = (lo + hi) / 2  # axis of whole numbers around it, not a sliver of fractions
        lo, hi = mid - 1, mid + 1
    ax.set_xlim(lo - 0.5, hi + 0.5)
    handles = [Line2D([], [], color=colours[k], lw=5, alpha=0.5, label=k)
               for k in colours if k in drawn]
    if seq_num is not None:
        handles.append(ax.axvline(seq_num, color="tab:red", ls="--", lw=1,
                                  label=f"timed out in #{seq_num}"))
    if handles:
        ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.ticklabel_format(axis="x", useOffset=False, style="plain")
    ax.set_xlabel("collective sequence number (bar: last completed → last enqueued)")
    title = "Where each rank stood when the job stopped"
    if process_group is not None:
        title += f"\n(process group {process_group})"
    ax.set_title(title, fontsize=10)
    ax.set_ylim(len(pos) - 0.5, -0.5)
    fig.tight_layout()
    return fig


def progress_timeline(progress: pd.DataFrame, iterations: pd.DataFrame) -> Figure | Message:
    """Steps reached over elapsed time (tqdm) or seconds per iteration (iteration lines), on
    axes from zero so that noise of a few per mille does not look like a sawtooth."""
    fig = Figure(figsize=(8, 3))
    ax = fig.add_subplot()
    if len(iterations) and iterations["elapsed_s"].notna().any():
        it = iterations.dropna(subset=["iteration", "elapsed_s"])
        ax.plot(it["iteration"], it["elapsed_s"].astype(float), marker=".")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.ticklabel_format(axis="x", useOffset=False, style="plain")
        ax.set_xlabel("iteration")
        ax.set_ylabel("seconds per iteration")
        ax.set_ylim(0, float(it["elapsed_s"].max()) * 1.15 or 1.0)
    elif len(progress) and progress["elapsed_s"].notna().any():
        pr = progress.dropna(subset=["step", "elapsed_s"])
        groups = list(pr.groupby(pr["rank"].fillna(-1)))
        for rank, g in groups:
            ax.plot(g["elapsed_s"].astype(float) / 60, g["step"].astype(float), marker=".",
                    label="no rank tag" if rank == -1 else f"rank {int(rank)}")
        ax.set_xlabel("elapsed (min)")
        ax.set_ylabel("step")
        _count_axis(ax, pr["step"], axis="y", from_zero=True)
        if len(groups) > 1:
            ax.legend(fontsize=8)
    else:
        return Message("No progress bars or iteration lines found")
    ax.set_title("Progress before the incident")
    fig.tight_layout()
    return fig


# -- loss spikes -----------------------------------------------------------------------------
def _spike_span(spike: dict, last_iteration: float) -> tuple[float, float, bool]:
    """(first sign, end, recovered) of a spike from loss_spike facts."""
    window = spike.get("data_window") or {}
    first = (window.get("iterations") or [spike["start_iteration"]])[0]
    rec = spike.get("recovered_iteration")
    return float(first), float(rec if rec is not None else last_iteration), rec is not None


def _log_helps(values: pd.Series) -> bool:
    v = values[values > 0]
    return len(v) > 1 and float(v.max()) / float(v.min()) > 50


def loss_spike_curves(series: pd.DataFrame, spikes: list[dict] | None = None,
                      nan_iterations: list[int] | None = None,
                      skipped_iterations: list[int] | None = None) -> Figure | Message:
    """Loss, grad norm (log scale when it spans decades) and, when logged, the fp16 loss scale
    (and the learning rate, when it moved by half or more) over iterations; spikes shaded from their first sign to their recovery (red: not
    recovered), NaN iterations as red ticks, skipped steps as crosses."""
    has = {c: c in series and series[c].notna().any() for c in ("loss", "grad_norm", "loss_scale")}
    panels = [c for c in ("loss", "grad_norm", "loss_scale") if has[c]]
    lr = series["lr"].astype(float) if "lr" in series else pd.Series(dtype=float)
    lr = lr[lr > 0]
    if panels and len(lr) > 1 and float(lr.max()) >= 1.5 * float(lr.min()):
        panels.append("lr")  # the schedule moved: show it beside the loss
    if not len(series) or not panels:
        return Message("No loss or grad-norm values in these logs")
    fig = Figure(figsize=(9, 2.4 * len(panels) + 0.4))
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    x = series["iteration"].astype(float)
    last = float(x.max())
    labels = {"loss": "loss", "grad_norm": "grad norm", "loss_scale": "loss scale",
              "lr": "learning rate"}
    for ax, col in zip(axes, panels, strict=True):
        y = series[col].astype(float)
        ax.plot(x, y, lw=0.9, marker="." if len(series) <= 200 else None, ms=3)
        # (a loss scale driven to 0 has nothing to put on a log axis: DeepSpeed's "Attempted
        # loss scale: 0, reducing to 0", ymcui/Chinese-LLaMA-Alpaca-2#97)
        if (col == "loss_scale" and bool((y > 0).any())) or (col == "grad_norm" and _log_helps(y)):
            ax.set_yscale("log")
        ax.set_ylabel(labels[col])
        for sp in spikes or []:
            a, b, ok = _spike_span(sp, last)
            ax.axvspan(a - 0.5, b + 0.5, color="tab:orange" if ok else "tab:red", alpha=0.2, lw=0)
        for it in nan_iterations or []:
            ax.axvline(it, color="red", lw=0.6, alpha=0.6)
    top = axes[0]
    if panels[0] == "loss":
        for sp in spikes or []:
            top.plot([sp["peak_iteration"]], [sp["peak_loss"]], "v", color="tab:red", ms=7)
            top.axhline(sp["baseline_loss"], color="grey", lw=0.6, ls="--")
    if skipped_iterations:
        sk = series[series["iteration"].isin(skipped_iterations)]
        top.plot(sk["iteration"], sk[panels[0]].astype(float), "x", color="black", ms=6)
    marks = [Line2D([], [], lw=0.9, color="tab:blue", label="logged value")]
    spans = [_spike_span(sp, last)[2] for sp in spikes or []]
    if any(spans):
        marks.append(Patch(color="tab:orange", alpha=0.2, label="spike, recovered"))
    if not all(spans):
        marks.append(Patch(color="tab:red", alpha=0.2, label="spike, not recovered"))
    if panels[0] == "loss" and spikes:
        marks += [Line2D([], [], ls="", marker="v", color="tab:red", label="spike peak"),
                  Line2D([], [], ls="--", lw=0.6, color="grey", label="loss before the spike")]
    if nan_iterations:
        marks.append(Line2D([], [], lw=0.6, color="red", alpha=0.6, label="NaN loss"))
    if skipped_iterations:
        marks.append(Line2D([], [], ls="", marker="x", color="black", label="skipped step"))
    top.legend(handles=marks, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    top.set_title("Loss and grad norm per iteration (shaded: spikes, first sign to recovery)")
    axes[-1].set_xlabel("iteration")
    # the ticks span the rows drawn: a line skips NaN values, so rows with none of the panels'
    # values (DeepSpeed's overflow notes without a loss) would leave a fraction-ticked sliver
    drawn = series[panels].apply(pd.to_numeric, errors="coerce").notna().any(axis=1)
    _count_axis(axes[-1], pd.concat([x[drawn.to_numpy()],
                                     pd.Series(nan_iterations or [], dtype=float)]))
    fig.tight_layout()
    return fig


def loss_spike_zoom(series: pd.DataFrame, spike: dict | None, before: int = 10,
                    after: int = 10) -> Figure | Message:
    """One spike up close (``before``/``after`` logged points around it): loss (left axis) and
    grad norm (right axis, log), the pre-spike baseline, and where each left its baseline —
    which moved first."""
    if spike is None or not len(series):
        return Message("No loss spike to show")
    a, b, _ = _spike_span(spike, float(series["iteration"].max()))
    its = series["iteration"].astype(float)
    ia, ip, ib = (int(its.searchsorted(v)) for v in (a, spike["peak_iteration"], b))
    ib = min(ib, ip + 100)  # a spike that never ends: its first 100 points after the peak
    win = series.iloc[max(ia - before, 0) : ib + after + 1]
    fig = Figure(figsize=(9, 3.6))
    ax = fig.add_subplot()
    ax.plot(win["iteration"], win["loss"].astype(float), marker="o", ms=3, color="tab:blue",
            label="loss")
    ax.axhline(spike["baseline_loss"], color="tab:blue", lw=0.7, ls="--", label="baseline loss")
    ax.axvline(spike["start_iteration"], color="tab:blue", lw=0.8, ls=":",
               label=f"loss leaves baseline ({spike['start_iteration']})")
    ax.set_xlabel("iteration")
    ax.set_ylabel("loss", color="tab:blue")
    handles, names = ax.get_legend_handles_labels()
    if win["grad_norm"].notna().any():
        ax2 = ax.twinx()
        g = win["grad_norm"].astype(float)
        ax2.plot(win["iteration"], g, marker="s", ms=3, color="tab:red", label="grad norm")
        if _log_helps(g):
            ax2.set_yscale("log")
        ax2.set_ylabel("grad norm", color="tab:red")
        gs = spike.get("grad_norm_start_iteration")
        if gs is not None:
            ax2.axvline(gs, color="tab:red", lw=0.8, ls=":", label=f"grad norm leaves ({gs})")
        h2, n2 = ax2.get_legend_handles_labels()
        handles, names = handles + h2, names + n2
    ax.legend(handles, names, fontsize=8, loc="upper right")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.ticklabel_format(axis="x", useOffset=False, style="plain")
    ax.set_title(f"Spike at iteration {spike['peak_iteration']}: which moved first?")
    fig.tight_layout()
    return fig


def _tail(text: str, width: int) -> str:
    """``text``, or its last ``width`` characters after an ellipsis when longer."""
    return text if len(text) <= width else "…" + text[-(width - 1):]


def stack_groups(groups: pd.DataFrame, max_groups: int = 20) -> Figure | Message:
    """Processes per stack signature (``diagnose.deadlock.groups_table``): one bar per group,
    labelled by its leaf frame; outliers red, groups waiting in a collective blue."""
    if not len(groups):
        return Message("No stack dumps (py-spy or faulthandler) found")
    g = groups.head(max_groups).iloc[::-1]
    # a two-line title, the axis label and the legend need about 1.5 in whatever the bars
    fig = Figure(figsize=(9, max(2.4, 1.2 + 0.55 * len(g))))
    ax = fig.add_subplot()
    colors = ["tab:red" if o else ("tab:blue" if c else "tab:gray")
              for o, c in zip(g["outlier"], g["in_collective"], strict=False)]
    labels = []
    sites = g["call_site"] if "call_site" in g else [None] * len(g)
    for leaf, site, members in zip(g["leaf"], sites, g["members"], strict=False):
        text = _tail(str(leaf) if isinstance(leaf, str) and leaf else "(no Python frame)", 60)
        if isinstance(site, str) and site:
            text += f"\n← {_tail(site, 58)}"
        names = [f"rank {m}" if isinstance(m, int) else _tail(str(m), 28)
                 for m in list(members)[:3]]
        labels.append(f"{text}\n[{', '.join(names)}{' …' if len(members) > 3 else ''}]")
    y = range(len(g))
    ax.barh(list(y), g["count"].astype(int).tolist(), color=colors)
    ax.set_yticks(list(y), labels, fontsize=7)
    ax.set_xlabel("processes")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    # on the figure, not the axes: long labels push a narrow axes' title off the edge
    fig.suptitle("Where each process's stack is\n(red: outliers, blue: in a collective, "
                 "grey: elsewhere)", fontsize=10)
    ax.legend(handles=[Patch(color=c, label=what) for c, what in (
        ("tab:red", "outlier"), ("tab:blue", "waiting in a collective"),
        ("tab:gray", "elsewhere")) if c in colors], fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


_ROLE_STYLE = {  # role -> (marker, colour, size, legend label, zorder): the cause on top
    "cascade": (".", "grey", 60, "cascade (a peer's symptom)", 3),
    "context": ("o", "orange", 45, "same failure (exit, follow-up Xid)", 4),
    "cause": ("X", "red", 110, "cause", 5),
}


def _time_axis(ax: Any) -> None:
    """Dates on x that read at any span: '01:36:12', 'Jul 08', never a row of equal ticks."""
    loc = mdates.AutoDateLocator(minticks=3, maxticks=7)
    ax.xaxis.set_major_locator(loc)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc))


def gpu_crash_timeline(timeline: pd.DataFrame, max_lanes: int = 40) -> Figure | Message:
    """Per host (or rank, when lines name no host) the failure events over time — the first
    failure ringed, its cascade in grey — from ``gpu_crash.timeline_frame``. When the lines
    carry no timestamps the x axis is their order in the logs."""
    fig = Figure(figsize=(9, 3.6))
    if timeline is None or not len(timeline):
        return Message("No failure lines to place on a timeline")
    lanes = list(dict.fromkeys(timeline["lane"].astype(str)))
    if len(lanes) > max_lanes:
        keep = set(lanes[:max_lanes])
        timeline = timeline[timeline["lane"].astype(str).isin(keep)]
        lanes = lanes[:max_lanes]
    fig.set_figheight(max(2.4, 0.9 + 0.32 * len(lanes)))
    ax = fig.add_subplot()
    ypos = {lane: i for i, lane in enumerate(lanes)}
    timed = pd.api.types.is_datetime64_any_dtype(timeline["x"])
    for role, (marker, colour, size, label, z) in _ROLE_STYLE.items():
        part = timeline[timeline["role"] == role]
        if not len(part):
            continue
        ax.scatter(part["x"], [ypos[str(v)] for v in part["lane"]], marker=marker, c=colour,
                   s=size, label=label, zorder=z)
    first = timeline[timeline["first"].astype(bool)]
    if len(first):
        f0 = first.iloc[0]
        ax.scatter([f0["x"]], [ypos[str(f0["lane"])]], s=420, facecolors="none",
                   edgecolors="red", linewidths=1.6, zorder=6, label="first failure")
        ax.axvline(f0["x"], color="red", lw=0.8, ls="--", zorder=1)
        ax.annotate(str(f0["label"]), (f0["x"], ypos[str(f0["lane"])]), xytext=(10, 9),
                    textcoords="offset points", fontsize=8, color="red",
                    annotation_clip=False, clip_on=False)
    ax.set_yticks(range(len(lanes)), lanes, fontsize=8)
    ax.set_ylim(len(lanes) - 0.4, -0.7)  # first lane on top, room for the label
    xs = timeline["x"].dropna()
    if timed:
        _time_axis(ax)
        ax.set_xlabel("time as logged")
        if xs.nunique() == 1:  # one moment: a minute either side, not an invented range
            t = pd.Timestamp(xs.iloc[0])
            ax.set_xlim(t - pd.Timedelta(minutes=1), t + pd.Timedelta(minutes=1))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("order of the failure lines in the logs (no timestamps)")
        lo, hi = float(xs.min()), float(xs.max())
        ax.set_xlim(lo - 1, hi + 1)
        if xs.nunique() == 1:
            ax.set_xticks([lo], ["the only failure line"])
    ax.grid(axis="x", alpha=0.3)
    by = "host" if any(not lane.startswith(("rank ", "unknown")) for lane in lanes) else "rank"
    ax.set_title(f"Failure cascade by {by}: the first failure and what followed")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    return fig


def throughput_timeline(series: pd.DataFrame, label: str, change_iteration: int | None = None,
                        baseline: float | None = None, degraded: float | None = None,
                        events: pd.DataFrame | None = None,
                        discontinuities: pd.DataFrame | None = None,
                        transients: pd.DataFrame | None = None) -> Figure | Message:
    """The throughput metric per logged iteration, the two levels and the change point, with
    eval/save events, restarts/gaps and the iterations set aside as transients marked."""
    fig = Figure(figsize=(9, 3.6))
    if series is None or not len(series):
        return Message("No throughput figures in these logs")
    ax = fig.add_subplot()
    x = series["iteration"].to_numpy()
    ax.plot(x, series["value"].to_numpy(dtype=float), marker="." if len(x) <= 2000 else None,
            lw=0.8, ms=4, label=label, zorder=2)
    if transients is not None and len(transients):
        ax.scatter(transients["iteration"], transients["value"].astype(float), marker="x",
                   color="grey", s=30, zorder=3, label="set aside (transient)")
    if change_iteration is not None:
        ax.axvline(change_iteration, color="red", lw=1.2, ls="--", zorder=1,
                   label=f"change at {change_iteration}")
        if baseline is not None:
            ax.hlines(baseline, x.min(), change_iteration, color="green", lw=1.5,
                      label=f"baseline {baseline:.4g}")
        if degraded is not None:
            ax.hlines(degraded, change_iteration, x.max(), color="red", lw=1.5,
                      label=f"degraded {degraded:.4g}")
    styles = {"eval": ("tab:purple", ":"), "save": ("tab:orange", ":")}
    if events is not None and len(events):
        shown = set()
        lo, hi = x.min(), x.max()
        for it, kind in zip(events["iteration"], events["kind"], strict=False):
            if not (lo <= it <= hi):
                continue
            colour, ls = styles.get(str(kind), ("grey", ":"))
            ax.axvline(it, color=colour, lw=0.8, ls=ls, zorder=0,
                       label=None if kind in shown else str(kind))
            shown.add(kind)
    if discontinuities is not None and len(discontinuities):
        for i, (pos, kind) in enumerate(zip(discontinuities["position"], discontinuities["kind"],
                                            strict=False)):
            it = series["iteration"].iloc[int(pos)]
            ax.axvline(it, color="black", lw=1.0, ls="-.", zorder=0,
                       label=f"{kind}" if i == 0 else None)
    ax.set_xlabel("iteration")
    ax.set_ylabel(label)
    ax.ticklabel_format(axis="x", useOffset=False, style="plain")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=8))
    if x.min() == x.max():  # every value at one iteration (per-epoch rates of one epoch's
        ax.set_xlim(x.min() - 1, x.max() + 1)  # counter): whole ticks around it
    ax.set_title(f"{label} per logged iteration")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def peer_bars(values: pd.DataFrame, key: str, value: str, label: str, title: str,
              max_bars: int = 64) -> Figure | Message:
    """One bar per rank or host (its median ``value``), suspects (column ``suspect``) in red,
    the peers' median as a line: the slow one stands out."""
    if values is None or not len(values):
        return Message("No per-rank or per-host figures in these logs")
    df = values.head(max_bars)
    width = min(12.0, max(5.0, 2 + 0.3 * len(df)))
    fig = Figure(figsize=(width, 3.4))
    ax = fig.add_subplot()
    sus = df["suspect"].fillna(False).astype(bool) if "suspect" in df else pd.Series(
        False, index=df.index)
    colours = ["tab:red" if s else "tab:blue" for s in sus]
    ax.bar(range(len(df)), df[value].astype(float), color=colours)
    median = ax.axhline(float(df[value].astype(float).median()), color="grey", ls="--", lw=0.8,
                        label="median of peers")
    ax.set_xticks(range(len(df)), [str(k) for k in df[key]], rotation=90 if len(df) > 12 else 0,
                  fontsize=7)
    ax.set_ylabel(label)
    keys = [str(k) for k in df[key]]
    ax.set_xlabel("rank" if all(k.startswith("rank") for k in keys) else "host")
    ax.set_title(textwrap.fill(title, width=int(width * 9)), fontsize=10)
    lo, hi = float(df[value].min()), float(df[value].max())
    if lo > 0 and (hi - lo) < 0.2 * hi:  # zoom on small differences
        ax.set_ylim(lo - (hi - lo) * 0.5 - 1e-9, hi + (hi - lo) * 0.3 + 1e-9)
    seen = {c for c, h in zip(colours, df[value].astype(float), strict=True)
            if pd.notna(h) and h != 0}  # a bar of height 0 draws nothing
    bars = [Patch(color=c, label=what) for c, what in (("tab:blue", "peer"),
                                                        ("tab:red", "suspect")) if c in seen]
    ax.legend(handles=[*bars, median], fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def triage_timeline(frame: pd.DataFrame) -> Figure | Message:
    """Each failure class's evidence (``triage.timeline_frame``) on one time axis, or in file
    order when not every class carries timestamps; the likely cause in red."""

    lanes = list(dict.fromkeys(frame["class"]))
    if not lanes:
        return Message("No failure class found in these logs")
    fig = Figure(figsize=(9, 1.4 + 0.7 * len(lanes)))
    ax = fig.add_subplot()
    by_class = {c: frame[frame["class"] == c] for c in lanes}
    cause = {c: (g["role"] == "cause").any() for c, g in by_class.items()}
    part = {c: str(g["role"].iloc[0]) if len(g) else "consequence" for c, g in by_class.items()}
    timed = all(g["time"].notna().any() for g in by_class.values())
    for y, cls in enumerate(reversed(lanes)):
        rows = by_class[cls]
        xs = pd.Series((rows["time"].dropna() if timed else rows["position"]).to_numpy())
        ax.scatter(xs, [y] * len(xs), s=36, color="tab:red" if cause[cls] else "tab:orange",
                   zorder=3)
        who = rows["who"].iloc[0] if len(rows) else ""
        if len(xs) and who:
            ax.annotate(who, (xs.min(), y), textcoords="offset points", xytext=(4, 8),
                        fontsize=8)
    ax.set_yticks(range(len(lanes)), [f"{c}\n({part[c]})" for c in reversed(lanes)], fontsize=9)
    ax.set_ylim(-0.6, len(lanes) - 0.3)
    ax.grid(axis="x", lw=0.4, alpha=0.5)
    ax.legend(handles=[Line2D([], [], ls="", marker="o", color=c, label=what)
                       for c, what, shown in (("tab:red", "the likely cause", any(cause.values())),
                                              ("tab:orange", "its consequences",
                                               not all(cause.values()))) if shown],
              fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if timed:
        _time_axis(ax)
        ax.set_xlabel(f"time as logged, {pd.Timestamp(frame['time'].min()):%Y-%m-%d}")
    else:
        ax.set_xticks([])
        ax.set_xlabel("order in the files (not every class carries timestamps)")
    ax.set_title("When each failure class first showed (red: the likely cause)")
    fig.tight_layout()
    return fig
