"""Interactive exploration for JupyterLab (ipywidgets). Runbooks call these only when their
``interactive`` parameter is true; headless runs show the same tables and figures without them.

- ``evidence_browser``: a table picker, rank/host filters and a pager over the parsed lines.
- ``iteration_zoom``: a metric, a range slider over iterations and a rank filter redrawing a plot.
- ``finding_context``: pick a finding, read each of its evidence lines with the lines around it
  in the original file (read lazily from disk, with line numbers).
- ``explore``: the three as tabs.
- ``no_log_path``/``log_path_box``: a runbook opened without a ``log_path`` says so and, where
  ipywidgets runs, offers a text box that sets it.

The pure parts (``rows_for``, ``lines_html``, ``context_lines``, ``context_html``,
``iteration_window``, ``metric_figure``) work without a front end and are unit-tested.
"""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from .diagnose.common import steps_of
from .incident import Incident
from .report import Report, display_text, text_html
from .schema import with_source

PAGE = 40
CONTEXT = 5  # lines shown before and after an evidence line
MAX_CONTEXT = 50
MAX_CONTEXT_CHARS = 2000  # a context line longer than this is cut
MAX_SOURCES = 20  # evidence lines of one finding shown with context
METRICS = ("loss", "grad_norm", "elapsed_s", "samples_per_s", "tflops", "tokens_per_s",
           "tokens_per_s_per_gpu", "mfu", "lr", "loss_scale")
# 'file:lineno: text' as ``report.evidence`` writes it (the file name may hold colons).
EVIDENCE_SOURCE_RE = re.compile(r"^(?P<file>.+?):(?P<line>\d+): ")


def rows_for(incident: Incident, table: str, ranks: list[int] | None = None,
             hosts: list[str] | None = None) -> pd.DataFrame:
    """Rows of ``table`` restricted to ``ranks``/``hosts`` (None: all)."""
    df = with_source(incident.tables[table])
    if ranks:
        df = df[df["rank"].isin(ranks)]
    if hosts:
        df = df[df["host"].isin(hosts)]
    return df


def lines_html(df: pd.DataFrame, start: int = 0, page: int = PAGE) -> str:
    """One page of evidence lines ('source: line'), escaped, control characters made
    visible, as a <pre> block."""
    part = df.iloc[start : start + page]
    body = "\n".join(f"{text_html(s)}: {text_html(line)}"
                     for s, line in zip(part["source"], part["line"], strict=False))
    return f"<pre>{body}</pre><p>{start + len(part)} of {len(df)} line(s)</p>"


# -- context around evidence lines -------------------------------------------------------------

def parse_source(source: str) -> tuple[str, int] | None:
    """('file', lineno) from 'file:lineno' or from an evidence string 'file:lineno: text';
    None for a flight-recorder entry ('file#entry3') or anything without a line number."""
    if "#entry" in source:
        return None
    m = EVIDENCE_SOURCE_RE.match(source) or re.match(r"^(?P<file>.+):(?P<line>\d+)$", source)
    if not m:
        return None
    return m["file"], int(m["line"])


def _resolve(path: str) -> Path | None:
    from .locations import in_checkout

    p = Path(path)
    if p.is_file():
        return p
    alt = in_checkout(path)
    return alt if alt is not None and alt.is_file() else None


def context_lines(path: str, lineno: int, n: int = CONTEXT) -> list[tuple[int, str]]:
    """Lines ``lineno-n`` .. ``lineno+n`` of ``path`` (1-based, as the loader counts them: split
    on newlines only, gzip read through), streamed from disk; [] when it cannot be read."""
    p = _resolve(path)
    if p is None or lineno < 1:
        return []
    n = max(0, min(int(n), MAX_CONTEXT))
    lo, hi = max(1, lineno - n), lineno + n
    out: list[tuple[int, str]] = []
    try:
        with open(p, "rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        with (gzip.open(p, "rb") if gz else open(p, "rb")) as fh:  # noqa: SIM115
            for i, raw in enumerate(fh, 1):
                if i < lo:
                    continue
                if i > hi:
                    break
                text = raw.rstrip(b"\n").rstrip(b"\r").replace(b"\x00", b"")
                line = text.decode("utf-8", errors="replace")
                if len(line) > MAX_CONTEXT_CHARS:
                    line = line[:MAX_CONTEXT_CHARS] + " …"
                out.append((i, line))
    except (OSError, EOFError, ValueError):
        return out
    return out


def context_html(evidence: list[str], n: int = CONTEXT, limit: int = MAX_SOURCES) -> str:
    """Each evidence line with the ``n`` lines around it in its file, escaped, line-numbered;
    the evidence line itself marked."""
    blocks = []
    shown = 0
    for ev in evidence:
        src = parse_source(ev)
        if src is None:
            continue
        if shown >= limit:
            blocks.append(f"<p>… {len(evidence) - shown} more evidence line(s) not shown</p>")
            break
        shown += 1
        path, lineno = src
        lines = context_lines(path, lineno, n)
        if not lines:
            blocks.append(f"<p><code>{text_html(path)}:{lineno}</code>: the file cannot be "
                          "read from here</p>")
            continue
        width = len(str(lines[-1][0]))
        body = "\n".join(
            ("<b>" if i == lineno else "")
            + f"{'›' if i == lineno else ' '} {i:>{width}} │ {text_html(text)}"
            + ("</b>" if i == lineno else "") for i, text in lines)
        blocks.append(f"<p><code>{text_html(path)}:{lineno}</code></p><pre>{body}</pre>")
    return "\n".join(blocks) or "<p>No evidence line with a file and line number.</p>"


# -- iterations -------------------------------------------------------------------------------

def metric_columns(iterations: pd.DataFrame) -> list[str]:
    """Metrics with at least two values, in a useful order."""
    it = steps_of(iterations)
    return [c for c in METRICS if c in it and it[c].notna().sum() >= 2]


def iteration_window(iterations: pd.DataFrame, lo: int | None = None, hi: int | None = None,
                     ranks: list[int] | None = None) -> pd.DataFrame:
    """Training steps with ``lo <= iteration <= hi`` (None: unbounded) of ``ranks`` (None:
    all), sorted by iteration."""
    it = steps_of(iterations)
    if lo is not None:
        it = it[it["iteration"] >= lo]
    if hi is not None:
        it = it[it["iteration"] <= hi]
    if ranks:
        it = it[it["rank"].isin(ranks)]
    return it.sort_values("iteration", kind="stable")


def metric_figure(iterations: pd.DataFrame, metric: str, lo: int | None = None,
                  hi: int | None = None, ranks: list[int] | None = None) -> Figure:
    """``metric`` over iterations ``lo``..``hi``, one line per rank."""
    it = iteration_window(iterations, lo, hi, ranks)
    fig = Figure(figsize=(8, 3))
    ax = fig.add_subplot()
    if metric not in it or not it[metric].notna().any():
        ax.axis("off")
        ax.text(0.5, 0.5, f"No {metric} values in this range", ha="center", va="center")
        return fig
    it = it.dropna(subset=[metric])
    for rank, g in it.groupby(it["rank"].fillna(-1)):
        ax.plot(g["iteration"].astype(float), g[metric].astype(float),
                marker="." if len(g) <= 200 else None,
                label="rank ?" if rank == -1 else f"rank {int(rank)}")
    ax.set_xlabel("iteration")
    ax.set_ylabel(metric)
    ax.ticklabel_format(axis="x", useOffset=False, style="plain")
    if it["rank"].nunique(dropna=False) > 1:
        ax.legend(fontsize=8, loc="best")
    ax.set_title(f"{metric}, iterations {int(it['iteration'].min())}–{int(it['iteration'].max())}")
    fig.tight_layout()
    return fig


def figure_png(fig: Figure) -> bytes:
    """``fig`` as PNG bytes (shown by an Image widget: no plotting backend needed)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return buf.getvalue()


# -- widgets ----------------------------------------------------------------------------------

def evidence_browser(incident: Incident) -> Any:
    """A table picker, rank/host filters and a pager over the raw evidence lines."""
    import ipywidgets as w

    tables = [t for t, df in incident.tables.items() if len(df) and "line" in df]
    table = w.Dropdown(options=tables or ["collectives"], description="table")
    ranks = w.SelectMultiple(options=incident.ranks, description="ranks", rows=6)
    hosts = w.SelectMultiple(options=incident.hosts, description="hosts", rows=6)
    start = w.IntSlider(value=0, min=0, max=0, step=PAGE, description="from line")
    out = w.HTML()

    def refresh(*_: Any) -> None:
        df = rows_for(incident, table.value, list(ranks.value), list(hosts.value))
        start.max = max(len(df) - 1, 0)
        out.value = lines_html(df, min(start.value, start.max))

    for c in (table, ranks, hosts, start):
        c.observe(refresh, names="value")
    refresh()
    return w.VBox([w.HBox([table, ranks, hosts]), start, out])


def iteration_zoom(incident: Incident) -> Any:
    """A metric, a range slider over iterations and a rank filter, redrawing the plot."""
    import ipywidgets as w

    it = steps_of(with_source(incident.iterations))
    metrics = metric_columns(it)
    if not metrics:
        return w.HTML("<p>No per-iteration metrics in these logs.</p>")
    lo, hi = int(it["iteration"].min()), int(it["iteration"].max())
    metric = w.Dropdown(options=metrics, description="metric")
    window = w.IntRangeSlider(value=(lo, hi), min=lo, max=max(hi, lo + 1), step=1,
                              description="iterations", continuous_update=False,
                              layout=w.Layout(width="70%"))
    rank_opts = sorted({int(r) for r in it["rank"].dropna()})
    ranks = w.SelectMultiple(options=rank_opts, description="ranks", rows=min(6, max(2, len(rank_opts))))
    image = w.Image(format="png")
    table = w.HTML()

    def refresh(*_: Any) -> None:
        a, b = window.value
        fig = metric_figure(it, metric.value, a, b, list(ranks.value))
        image.value = figure_png(fig)
        part = iteration_window(it, a, b, list(ranks.value))
        table.value = lines_html(part, 0, 10) if len(part) else "<p>No rows in this range.</p>"

    for c in (metric, window, ranks):
        c.observe(refresh, names="value")
    refresh()
    return w.VBox([w.HBox([metric, ranks]), window, image, table])


def finding_context(report: Report, n: int = CONTEXT) -> Any:
    """Pick a finding; see each of its evidence lines in its file, ``n`` lines around it."""
    import ipywidgets as w

    found = [f for f in report.findings if f.evidence]
    if not found:
        return w.HTML("<p>No finding with evidence lines.</p>")
    picker = w.Dropdown(options=[(display_text(f"[{f.severity}] {f.title[:110]}"), i)
                                 for i, f in enumerate(found)],
                        description="finding", layout=w.Layout(width="90%"))
    around = w.IntSlider(value=n, min=0, max=MAX_CONTEXT, description="context")
    out = w.HTML()

    def refresh(*_: Any) -> None:
        f = found[picker.value]
        out.value = (f"<p><b>{text_html(f.title)}</b></p>"
                     + context_html(f.evidence, around.value))

    picker.observe(refresh, names="value")
    around.observe(refresh, names="value")
    refresh()
    return w.VBox([picker, around, out])


def explore(incident: Incident, report: Report | None = None) -> Any:
    """Evidence browser, iteration zoom and (with a report) finding context, as tabs."""
    import ipywidgets as w

    children = [evidence_browser(incident), iteration_zoom(incident)]
    titles = ["evidence lines", "iterations"]
    if report is not None:
        children.append(finding_context(report))
        titles.append("findings in context")
    tabs = w.Tab(children=children)
    for i, t in enumerate(titles):
        tabs.set_title(i, t)
    return tabs


def no_log_path(sample: str) -> str:
    """The sentence a runbook opened without a ``log_path`` stops with: which parameter to set,
    and how to try a bundled ``sample`` instead."""
    return (f"log_path is not set: set log_path in the parameters cell to the job's logs (a "
            f"file, a directory, a glob or a list) and run the notebook again; to try it on a "
            f"bundled sample, set log_path = {sample!r}.")


def log_path_box(namespace: dict[str, Any]) -> Any:
    """A text box that sets ``namespace['log_path']`` (the notebook's globals) to the path
    typed, then says to run the notebook from the load cell on."""
    import ipywidgets as w

    box = w.Text(placeholder="/path/to/the/job's/logs", description="log_path",
                 layout=w.Layout(width="60%"))
    button = w.Button(description="Use this path")
    said = w.HTML()

    def use(*_: Any) -> None:
        path = box.value.strip()
        if not path:
            said.value = "<p>Type the path of the job's logs first.</p>"
            return
        namespace["log_path"] = path
        said.value = (f"<p>log_path = <code>{text_html(path)}</code>. Now run this cell and "
                      "the ones below (Run ▸ Run Selected Cell and All Below).</p>")

    button.on_click(use)
    return w.VBox([w.HBox([box, button]), said])


__all__ = ["context_html", "context_lines", "evidence_browser", "explore", "figure_png",
           "finding_context", "iteration_window", "iteration_zoom", "lines_html",
           "log_path_box", "metric_columns", "metric_figure", "no_log_path", "parse_source",
           "rows_for"]
