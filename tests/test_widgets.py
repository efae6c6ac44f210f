"""Widgets: the pure parts, and that every widget builds and reacts without a front end."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

import traindoc
from conftest import DATA
from traindoc import widgets
from traindoc.diagnose import triage
from traindoc.report import Finding, Report

PNG = b"\x89PNG\r\n\x1a\n"
MIXED = DATA / "triage" / "crash_then_timeouts"
LOSS = DATA / "loss_spike" / "drill_loss_spike"


@pytest.fixture(scope="module")
def mixed() -> traindoc.Incident:
    return traindoc.load(MIXED)


def test_rows_for_filters_by_rank_and_host(mixed: traindoc.Incident) -> None:
    c = widgets.rows_for(mixed, "collectives", ranks=[4, 5])
    assert len(c) and set(c["rank"]) == {4, 5}
    assert len(widgets.rows_for(mixed, "collectives")) == len(mixed.collectives)
    e = widgets.rows_for(mixed, "exits", hosts=["node-a"])
    assert len(e) and set(e["host"]) == {"node-a"}
    assert not len(widgets.rows_for(mixed, "errors", ranks=[99]))


def test_lines_html_escapes_and_pages() -> None:
    inc = traindoc.Incident.from_rows({"errors": [
        {"kind": "python", "source": f"x.log:{i}", "line": f"<script>alert({i})</script>"}
        for i in range(1, 101)]})
    page = widgets.lines_html(inc.errors, 40, 40)
    assert "&lt;script&gt;alert(41)" in page and "<script>" not in page
    assert "alert(40)" not in page and "80 of 100 line(s)" in page


@pytest.mark.parametrize(("text", "want"), [
    ("logs/a.log:12", ("logs/a.log", 12)),
    ("logs/a.log:12: RuntimeError: x:3: y", ("logs/a.log", 12)),
    ("C:/logs/a.log:7: text", ("C:/logs/a.log", 7)),
    ("fr/rank0.pkl#entry3: x", None),
    ("… and 5 more line(s)", None),
])
def test_parse_source(text: str, want: tuple[str, int] | None) -> None:
    assert widgets.parse_source(text) == want


def test_context_lines_follow_the_loaders_numbering(tmp_path: Path) -> None:
    # tqdm's carriage returns do not start a new line number; the loader counts newlines.
    lines = [f"line {i}" for i in range(1, 31)]
    lines[9] = "Train: 1%|\r Train: 2%|\r Train: 3%|"
    lines[14] = ("[rank3]:[E708 01:47:23.901930947 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught "
                 "collective operation timeout: WorkNCCL(SeqNum=2901, OpType=ALLREDUCE, NumelIn=1, "
                 "NumelOut=1, Timeout(ms)=600000) ran for 600070 milliseconds before timing out.")
    p = tmp_path / "job.log"
    p.write_bytes(("\n".join(lines) + "\n").encode())
    row = traindoc.load(p).collectives.iloc[0]
    path, lineno = widgets.parse_source(row["source"])
    ctx = widgets.context_lines(path, lineno, 3)
    assert [n for n, _ in ctx] == [12, 13, 14, 15, 16, 17, 18]
    assert dict(ctx)[lineno] == lines[14]
    assert widgets.context_lines(path, 1, 2) == [(1, "line 1"), (2, "line 2"), (3, "line 3")]
    assert [n for n, _ in widgets.context_lines(path, 30, 5)][-1] == 30
    gz = tmp_path / "job.log.gz"
    gz.write_bytes(gzip.compress(p.read_bytes()))
    assert widgets.context_lines(str(gz), 15, 0) == [(15, lines[14])]
    assert widgets.context_lines(str(tmp_path / "missing.log"), 3) == []
    assert widgets.context_lines(path, 0) == []


def test_context_html_marks_and_escapes(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_text("one\n<script>alert(1)</script>\nthree\n")
    html = widgets.context_html([f"{p}:2: <script>alert(1)</script>", "fr/x.pkl#entry1: y"], n=1)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<b>› 2 │" in html and "  1 │ one" in html and "  3 │ three" in html
    assert "cannot be read" in widgets.context_html(["/nonexistent/x.log:3: z"])
    assert "No evidence line" in widgets.context_html([])


def test_iteration_window_and_metric_figure() -> None:
    it = traindoc.load(LOSS).iterations
    assert "loss" in widgets.metric_columns(it) and "grad_norm" in widgets.metric_columns(it)
    w = widgets.iteration_window(it, 10, 20)
    assert w["iteration"].between(10, 20).all() and len(w) == 11
    assert not len(widgets.iteration_window(it, 10, 20, ranks=[99]))
    fig = widgets.metric_figure(it, "loss", 15, 25)
    ax = fig.axes[0]
    xs = ax.lines[0].get_xdata()
    assert min(xs) == 15 and max(xs) == 25 and "15–25" in ax.get_title()
    assert widgets.figure_png(fig).startswith(PNG)
    empty = widgets.metric_figure(it, "tflops_missing", 1, 2)
    assert empty.axes[0].texts


def test_widgets_build_and_react_without_a_front_end(mixed: traindoc.Incident) -> None:
    import ipywidgets

    eb = widgets.evidence_browser(mixed)
    assert isinstance(eb, ipywidgets.VBox)
    out = eb.children[2]
    table, ranks, _hosts = eb.children[0].children
    table.value = "collectives"
    ranks.value = (5,)
    assert "Rank 5" in out.value and "Rank 4]" not in out.value

    loss = traindoc.load(LOSS)
    z = widgets.iteration_zoom(loss)
    (metric, _r), window, image, rows = z.children[0].children, z.children[1], z.children[2], z.children[3]
    assert bytes(image.value).startswith(PNG)
    before = bytes(image.value)
    window.value = (18, 22)
    assert bytes(image.value) != before and "iteration       18/" in rows.value
    metric.value = "grad_norm"
    assert bytes(image.value).startswith(PNG)
    assert isinstance(widgets.iteration_zoom(traindoc.Incident.empty()), ipywidgets.HTML)

    r = triage.diagnose(mixed)
    fc = widgets.finding_context(r)
    picker, around, html = fc.children
    assert "slurm-48213.out" in html.value or "dmesg-node-a.txt" in html.value
    picker.value = 1
    assert "Watchdog caught" in html.value
    around.value = 0
    assert html.value.count("│") == min(len(r.findings[1].evidence), widgets.MAX_SOURCES)
    none = widgets.finding_context(Report("x", "v", "low", {}, [Finding("a", "info", "t")]))
    assert isinstance(none, ipywidgets.HTML)

    tabs = widgets.explore(mixed, r)
    assert len(tabs.children) == 3 and tabs.get_title(2) == "findings in context"
    assert len(widgets.explore(mixed).children) == 2


def test_log_path_box_sets_the_notebooks_log_path() -> None:
    pytest.importorskip("ipywidgets")
    ns: dict = {"log_path": None}
    box = widgets.log_path_box(ns)
    text, button = box.children[0].children
    button.click()  # nothing typed: nothing set
    assert ns["log_path"] is None and "first" in box.children[1].value
    text.value = "/logs/job-<17>.log"
    button.click()
    assert ns["log_path"] == "/logs/job-<17>.log"
    assert "&lt;17&gt;" in box.children[1].value and "Run Selected Cell and All Below" in (
        box.children[1].value)


def test_no_log_path_names_the_parameter_and_a_sample() -> None:
    text = widgets.no_log_path("data/timeout/gemma3_seed")
    assert text.startswith("log_path is not set") and "'data/timeout/gemma3_seed'" in text
