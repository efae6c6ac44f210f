"""Figures people would rather look at than read: every figure a runbook draws, on every
sample, passes the same checks (issue 15.11) — data on every axes, labelled axes, whole-number
ticks where the quantity is a count, time ticks that differ, a marked failure moment, legends
whose colours are drawn, titles inside the figure."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import Collection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.text import Text

import traindoc
from conftest import DATA, SAMPLE_DIRS, analysis_once, load_once, triage_once
from traindoc import plots
from traindoc.diagnose import NAMES, failure_class, loss_spike, timeout, triage

COUNT_LABEL_RE = re.compile(r"^(iteration|step|collective sequence number|order of)\b", re.I)
FRACTION_RE = re.compile(r"^[−-]?\d+\.\d*[1-9]\d*$")


# Each DRAW function draws from the incident and ``analysed(name)``: class (or triage) ``name``'s
# analysis of it (``_fresh``: computed here; the sweeps: the one their case's other tests read).
Analysed = Callable[[str], Any]


def _fresh(inc: traindoc.Incident) -> Analysed:
    """``analysed`` for ``inc``: each analysis computed on the call."""
    return lambda name: (triage if name == "triage" else failure_class(name)).analyse(inc)


def _once(path: Path) -> Analysed:
    """``analysed`` for the sample or case at ``path``: ``analysis_once``, ``triage_once``."""
    return lambda name: triage_once(path) if name == "triage" else analysis_once(path, name)


def _timeout(inc: traindoc.Incident, analysed: Analysed | None = None) -> dict[str, Figure]:
    a = (analysed or _fresh(inc))("timeout")
    return {"collective_positions": plots.collective_positions(
                a.collectives, a.seq_num, a.timed_out_ranks, a.process_group,
                blamed_ranks=a.blamed_ranks),
            "progress": plots.progress_timeline(inc.progress, inc.iterations)}


def _gpu_crash(inc: traindoc.Incident, analysed: Analysed | None = None) -> dict[str, Figure]:
    return {"timeline": plots.gpu_crash_timeline((analysed or _fresh(inc))("gpu_crash").timeline)}


def _deadlock(inc: traindoc.Incident, analysed: Analysed | None = None) -> dict[str, Figure]:
    return {"stack_groups": plots.stack_groups((analysed or _fresh(inc))("deadlock").groups)}


def _throughput(inc: traindoc.Incident, analysed: Analysed | None = None) -> dict[str, Figure]:
    a = (analysed or _fresh(inc))("throughput")
    out = {"timeline": plots.throughput_timeline(
        a.series, a.spec.label if a.spec else "", a.change_iteration, a.baseline, a.degraded,
        a.events, a.discontinuities, a.set_aside())}
    peers = a.peers()
    if len(peers):
        first = peers[peers["source"] == peers["source"].iloc[0]]
        out["peers"] = plots.peer_bars(first, "who", "value", first["measure"].iloc[0],
                                       f"{first['source'].iloc[0]}: slow peers in red")
    return out


def _loss_spike(inc: traindoc.Incident, analysed: Analysed | None = None) -> dict[str, Figure]:
    a = (analysed or _fresh(inc))("loss_spike")
    f = loss_spike.report(a).facts
    out = {"curves": plots.loss_spike_curves(a.series, f["spikes"], f["nan_iterations"],
                                             f["skipped_iterations"])}
    if f["spikes"]:
        out["zoom"] = plots.loss_spike_zoom(a.series, f["spikes"][0])
    return out


def _triage(inc: traindoc.Incident, analysed: Analysed | None = None) -> dict[str, Figure]:
    analysed = analysed or _fresh(inc)
    out = {"timeline": plots.triage_timeline(analysed("triage").timeline)}
    for name, figs in (("timeout", _timeout(inc, analysed)),
                       ("gpu_crash", _gpu_crash(inc, analysed))):
        out.update({f"{name}_{k}": v for k, v in figs.items()})
    return out


DRAW: dict[str, Callable[[traindoc.Incident, Analysed | None], dict[str, Figure]]] = {
    "timeout": _timeout, "gpu_crash": _gpu_crash, "deadlock": _deadlock,
    "throughput": _throughput, "loss_spike": _loss_spike, "triage": _triage}


def _drawn(ax: Axes) -> list:
    """Artists that show data: lines with points, scatter/fill collections, bars."""
    out: list = []
    for ln in ax.get_lines():
        x = np.asarray(ln.get_xdata(), dtype=object)
        if len(x):
            out.append(ln)
    out += [c for c in ax.collections if isinstance(c, Collection) and (
        len(c.get_offsets()) or len(c.get_paths()))]
    out += [p for p in ax.patches if isinstance(p, Rectangle) and p.get_height() != 0]
    return out


def _colours(artist: object) -> set[str]:
    cols: list = []
    for get in ("get_color", "get_facecolor", "get_edgecolor", "get_markerfacecolor"):
        f = getattr(artist, get, None)
        if f is None:
            continue
        v = f()
        arr = np.atleast_2d(mcolors.to_rgba_array(v)) if v is not None and len(
            np.atleast_1d(v)) else []
        cols += [mcolors.to_hex(c, keep_alpha=False) for c in arr if c[3] > 0]
    return set(cols)


def check_figure(fig: Figure | plots.Message) -> list[str]:
    """What is wrong with ``fig`` (empty when nothing)."""
    if isinstance(fig, plots.Message):  # nothing to draw: one line of text, no figure
        return [] if fig.text and "\n" not in fig.text else [f"message {fig.text!r}"]
    FigureCanvasAgg(fig).draw()
    problems = []
    renderer = fig.canvas.get_renderer()
    fig_box = fig.bbox
    shown = set().union(*(_colours(a) for ax in fig.axes for a in _drawn(ax)))
    for ax in fig.axes:
        if not ax.axison:  # a message figure: text only
            continue
        twins = [o for o in fig.axes if o is not ax and o.bbox.bounds == ax.bbox.bounds]
        drawn = _drawn(ax) + [a for o in twins for a in _drawn(o)]
        if not drawn:
            problems.append(f"empty axes {ax.get_title()!r}")
            continue
        siblings = list(ax.get_shared_x_axes().get_siblings(ax)) + twins
        if not any(o.get_xlabel() for o in siblings):
            problems.append(f"no x label (unit) on {ax.get_title()!r}")
        if not any(o.get_ylabel() for o in [ax, *twins]) and not [
                t for t in ax.get_yticklabels() if t.get_text()]:
            problems.append(f"no y label on {ax.get_title()!r}")
        for axis, label in (("x", ax.get_xlabel()), ("y", ax.get_ylabel())):
            ticks = [t.get_text() for t in (ax.get_xticklabels() if axis == "x"
                                            else ax.get_yticklabels()) if t.get_text()]
            if len(ticks) >= 2 and len(set(ticks)) == 1:
                problems.append(f"{axis} ticks all read {ticks[0]!r}")
            if COUNT_LABEL_RE.search(label or "") and any(FRACTION_RE.match(t) for t in ticks):
                problems.append(f"fractional {axis} ticks {ticks} on a count ({label!r})")
        legend = ax.get_legend()
        if legend is not None:
            for h, t in zip(legend.legend_handles, legend.get_texts(), strict=False):
                hc = _colours(h)
                if hc and not hc & shown:
                    problems.append(f"legend entry {t.get_text()!r} has a colour nothing drawn has")
        title = ax.title
        if title.get_text():
            tb = title.get_window_extent(renderer)
            if tb.x0 < fig_box.x0 - 1 or tb.x1 > fig_box.x1 + 1:
                problems.append(f"title {title.get_text()!r} is cut by the figure's edge")
    return problems


CASES = [pytest.param(d.parent.name, d, id=f"{d.parent.name}/{d.name}") for d in SAMPLE_DIRS
         if d.parent.name in DRAW]


@functools.cache
def sample_figures(cls: str, sample: Path) -> dict[str, tuple[list[str], set[str] | None,
                                                             set[str] | None]]:
    """Each figure ``DRAW[cls]`` makes of ``sample``, made and drawn once for the two sample
    sweeps below: its problems (``check_figure``), the colours drawn and the colours its
    legends name (None for a message). Plain values are kept, not the figures."""
    out: dict[str, tuple[list[str], set[str] | None, set[str] | None]] = {}
    for name, fig in DRAW[cls](load_once(sample), _once(sample)).items():
        problems = check_figure(fig)  # (draws the figure)
        if isinstance(fig, plots.Message):
            out[name] = (problems, None, None)
            continue
        drawn = set().union(*(_colours(a) for ax in fig.axes for a in _drawn(ax)))
        legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
        named = set().union(*(_colours(h) for lg in legends for h in lg.legend_handles))
        out[name] = (problems, drawn, named)
    return out


@pytest.mark.parametrize(("cls", "sample"), CASES)
def test_every_figure_reads_well(cls: str, sample: Path) -> None:
    bad = {name: p for name, (p, _, _) in sample_figures(cls, sample).items() if p}
    assert not bad, bad


def test_failure_moment_is_marked_on_time_axes() -> None:
    inc = traindoc.load(DATA / "triage" / "crash_then_timeouts", progress=False)
    fig = _gpu_crash(inc)["timeline"]
    ax = fig.axes[0]
    vertical = [ln for ln in ax.get_lines() if len(set(map(str, ln.get_xdata()))) == 1]
    assert vertical, "the first failure's moment is not marked"
    lanes = [t.get_text() for t in ax.get_yticklabels()]
    assert lanes == ["node-a", "node-b"], lanes  # two nodes, two lanes (srun tasks are no hosts)


def test_timeout_figure_draws_the_ranks_the_verdict_blames() -> None:
    inc = traindoc.load(DATA / "triage" / "crash_then_timeouts", progress=False)
    a = timeout.analyse(inc)
    fig = _timeout(inc)["collective_positions"]
    names = {t.get_text().split(" (")[0] for t in fig.axes[0].get_yticklabels()}
    assert {f"rank {r}" for r in a.blamed_ranks + a.timed_out_ranks} <= names


def test_one_failure_line_is_not_drawn_on_an_invented_range() -> None:
    inc = traindoc.load(DATA / "gpu_crash" / "bloom_seed", progress=False)
    ax = _gpu_crash(inc)["timeline"].axes[0]
    FigureCanvasAgg(ax.figure).draw()
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert not any(FRACTION_RE.match(t) for t in ticks), ticks
    assert "by rank" in ax.get_title()  # the lanes are ranks, not hosts


def test_the_checker_catches_what_it_should() -> None:
    fig = Figure()
    ax = fig.add_subplot()
    ax.plot([0.5, 1.5], [1, 2], color="tab:blue")
    ax.set_xlabel("iteration")
    ax.set_xticks([0.5, 1.5], ["0.5", "1.5"])
    ax.legend(handles=[Line2D([], [], color="tab:green", label="phantom")])
    ax.set_title("x" * 400)
    problems = " | ".join(check_figure(fig))
    assert "fractional x ticks" in problems and "phantom" in problems
    assert "cut by the figure's edge" in problems
    empty = Figure()
    empty.add_subplot().set_xlabel("time")
    assert "empty axes" in " | ".join(check_figure(empty))
    same = Figure()
    sx = same.add_subplot()
    sx.plot(pd.to_datetime(["2024-01-01 00:00:01", "2024-01-01 00:00:02"]), [1, 2])
    sx.set_xticks(sx.get_xticks()[:2], ["00:00:00", "00:00:00"])
    sx.set_xlabel("time")
    sx.set_ylabel("y")
    assert "ticks all read" in " | ".join(check_figure(same))


CORPUS_LOGS = sorted(p for p in (DATA / "corpus").glob("*/*/logs") if p.parent.parent.name in NAMES)


@pytest.mark.parametrize("logs", CORPUS_LOGS, ids=lambda p: p.parent.name)
def test_every_figure_reads_well_on_the_corpus(logs: Path) -> None:
    """Real logs make the odd shapes (one iteration, steps that never move, a hundred ranks).
    One test a case, so that its load is the one its other sweeps share (conftest)."""
    from conftest import load_once

    inc = load_once(logs)
    bad = {name: problems for name, fig in DRAW[logs.parent.parent.name](inc, _once(logs)).items()
           if (problems := check_figure(fig))}
    assert not bad, bad


# -- text from logs is never parsed as math (issue 31) -----------------------------------------

MATH_BAIT = "${SLURM_JOB_ID}"


def _dollar_bundle(src: Path, dest: Path) -> Path:
    """``src`` copied with ``$…$`` in frame paths, file names and process-group names."""
    for f in sorted(p for p in src.rglob("*") if p.is_file()):
        rel = f.relative_to(src)
        target = dest / rel.parent / f"{MATH_BAIT}_{f.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        data = f.read_bytes()
        if f.suffix in (".out", ".log", ".txt", ".json", ""):
            text = data.decode("utf-8", "replace")
            text = text.replace(".py", f"_{MATH_BAIT}_$.py").replace(
                "default_pg", f"pg_{MATH_BAIT}_$")
            target.write_text(text)
        else:
            target.write_bytes(data)
    return dest


@pytest.mark.parametrize("cls", ["deadlock", "timeout"])
def test_dollar_signs_in_log_text_never_crash_a_figure(cls: str, tmp_path: Path) -> None:
    draw = {"deadlock": _deadlock, "timeout": _timeout}[cls]
    shown = []
    for i, src in enumerate(d for d in SAMPLE_DIRS if d.parent.name == cls):
        inc = traindoc.load(_dollar_bundle(src, tmp_path / str(i)), progress=False)
        for name, fig in draw(inc).items():
            plots.save(fig, tmp_path / "figs", f"{cls}-{i}-{name}")  # draws every text
            if not isinstance(fig, plots.Message):
                shown += [t.get_text() for t in fig.findobj(Text) if "$" in t.get_text()]
    if cls == "timeout":  # a process group named with an unexpanded variable
        a = timeout.analyse(traindoc.load(DATA / "timeout" / "drill_timeout", progress=False))
        bait = f"pg_{MATH_BAIT}_$"
        cols = a.collectives.copy()
        cols["process_group"] = cols["process_group"].astype(object).where(
            cols["process_group"] != a.process_group, bait)
        fig = plots.collective_positions(cols, a.seq_num, a.timed_out_ranks, bait,
                                         blamed_ranks=a.blamed_ranks)
        plots.save(fig, tmp_path / "figs", "pg")
        shown += [t.get_text() for t in fig.findobj(Text) if "$" in t.get_text()]
    assert shown  # the bait did reach a figure


def test_nothing_to_draw_is_one_line_not_a_figure(tmp_path: Path) -> None:
    """Issue 27: on a log with no progress and no timeout positions (the Xid 79 sample's
    kernel log alone) the figures that would only say so are one line each, saved as no PNG."""
    inc = traindoc.load(DATA / "gpu_crash" / "xid79_multinode" / "dmesg.log",
                        progress=False)
    for fig in (plots.progress_timeline(inc.progress, inc.iterations),
                plots.collective_positions(inc.collectives)):
        assert isinstance(fig, plots.Message) and fig.text.startswith("No ")
        assert plots.save(fig, tmp_path, "x") is None and "<i>No " in fig._repr_html_()
    assert not list(tmp_path.glob("*.png"))


@pytest.mark.parametrize(("cls", "sample"), CASES)
def test_every_colour_drawn_is_in_a_legend(cls: str, sample: Path) -> None:
    """Issue 27: a figure that draws more than one colour names each in a legend (the stack
    groups' and triage timeline's colours were told only in the title, the loss curves' spans,
    peaks and baselines nowhere)."""
    for name, (_, drawn, named) in sample_figures(cls, sample).items():
        if drawn is None or named is None:  # a message: nothing drawn
            continue
        if len(drawn) > 1:
            assert drawn <= named, f"{name}: colours {sorted(drawn - named)} in no legend"
