"""What reaches HTML is escaped and clean, and summaries are written whole (issue 19, points
1, 9 and 10).

- Every table and value becomes HTML at one boundary (``report.escape_frame``,
  ``report.text_html``): markup in any cell (str, list, dict, tuple, set, object) is text.
- Control characters (C0 but tab and newline, C1, ESC/OSC sequences) never reach HTML raw.
- Runbooks display tables only through that boundary (checked in their source and in their
  executed output), and a hostile bundle run through every runbook and the HTML report leaves
  no live markup; Chromium confirms no element carries an ``onerror``.
- ``Report.write``, ``write_tables`` and ``write_html`` write atomically: a full disk or a kill
  leaves the old file or none, never a partial one.
"""

from __future__ import annotations

import ast
import dataclasses
import errno
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traindoc
from conftest import DATA, ROOT, runbook_kernel
from traindoc import report as rep
from traindoc import widgets
from traindoc.diagnose import failure_class, triage
from traindoc.execute import execute_runbook
from traindoc.htmlreport import clean_outputs, notebook_html, terminal_text, write_html

PAYLOADS = ("<img src=x onerror=alert(1)>", "<script>alert(1)</script>",
            "\"'><svg onload=alert(1)>")
NAME_PAYLOAD = "<img src=y onerror=alert(1)>"
# An element with an event handler, or a script/svg/img tag that the payload would open.
LIVE_RE = re.compile(r"<[a-zA-Z][^<>]*\s(?:onerror|onload)\s*=|<script>alert|<svg\b|<img src=[xy]\b")
# Control characters that must never reach HTML raw (tab, newline, CR of line ends allowed).
RAW_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
CONTROLS = ("\x1b]0;pwned\x07", "\x1b]8;;http://evil/\x1b\\link\x1b]8;;\x1b\\", "\x1b[2J\x1b[H",
            "\x9b31m", "\x00\x08\x7f", "\u202egnp.exe")
RUNBOOKS = sorted(p.stem for p in (ROOT / "runbooks").glob("*.ipynb"))
SAMPLES = {"timeout": "timeout/drill_desync", "deadlock": "deadlock/gloo_desync_hang",
           "gpu_crash": None, "throughput": None, "loss_spike": None,
           "triage": "triage/crash_then_timeouts"}
WATCHDOG = ("[rank0]:[E1121 10:00:00.1 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600012 milliseconds before timing out. {}\n")
CHROMIUM = shutil.which("chromium")


class Shady:
    """An object whose text is markup."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


WRAPPERS = {
    "str": lambda p: p,
    "list": lambda p: [p, 1, None],
    "tuple": lambda p: (p, p),
    "dict": lambda p: {p: p, "k": [p]},
    "set": lambda p: {p},
    "object": Shady,
    "bytes": lambda p: p.encode(),
    "nested": lambda p: [{"a": (p,)}, [[p]]],
}


def assert_inert(html: str) -> None:
    for p in PAYLOADS + (NAME_PAYLOAD,):
        assert p not in html, html[max(0, html.find(p) - 300):html.find(p) + 300]
    m = LIVE_RE.search(html)
    assert m is None, html[max(0, m.start() - 300):m.end() + 300]


def assert_no_raw_control(text: str) -> None:
    m = RAW_CONTROL_RE.search(text)
    assert m is None, repr(text[max(0, m.start() - 200):m.end() + 200])


# -- the boundary -------------------------------------------------------------------------------

def _sample(cls: str) -> Path:
    rel = SAMPLES[cls]
    return DATA / rel if rel else sorted(p for p in (DATA / cls).glob("*/") if p.is_dir())[0]


def _frames_of(obj: object) -> dict[str, pd.DataFrame]:
    """Every DataFrame an analysis holds or gives from a method without arguments."""
    out = {}
    for name in dir(obj):
        if name.startswith("_"):
            continue
        try:
            value = getattr(obj, name)
        except Exception:  # noqa: BLE001 - a property that needs more than the sample has
            continue
        if callable(value) and not isinstance(value, pd.DataFrame):
            try:
                params = inspect.signature(value).parameters.values()
            except (TypeError, ValueError):
                continue
            if any(p.default is p.empty for p in params):
                continue
            try:
                value = value()
            except Exception:  # noqa: BLE001
                continue
        if isinstance(value, pd.DataFrame):
            out[name] = value
    return out


@pytest.fixture(scope="module")
def shown_tables() -> dict[str, pd.DataFrame]:
    """Every table a runbook shows (or could): each class's analysis tables, its report's
    findings and actions, the incident overview and every parsed table."""
    tables: dict[str, pd.DataFrame] = {}
    for cls in RUNBOOKS:
        mod = triage if cls == "triage" else failure_class(cls)
        inc = traindoc.load(_sample(cls))
        analysis = mod.analyse(inc)
        result = mod.report(analysis)
        assert dataclasses.is_dataclass(analysis)
        for name, df in _frames_of(analysis).items():
            tables[f"{cls}.{name}"] = df
        tables[f"{cls}.findings"] = result.findings_table()
        tables[f"{cls}.actions"] = result.actions_table()
        tables[f"{cls}.overview"] = inc.overview()
        for name, df in inc.tables.items():
            tables[f"{cls}.incident.{name}"] = df
        if cls == "triage":
            tables["triage.classes"] = mod.classes_table(result)
    assert len(tables) > 40
    return tables


def poisoned(df: pd.DataFrame, payload: str, kinds: list[str]) -> pd.DataFrame:
    """``df`` (its first rows, or one row when empty) with ``payload`` wrapped as ``kinds``
    (cycled) in every column, the index and the column names."""
    frame = df.head(3).copy() if len(df) else pd.DataFrame([[None] * df.shape[1]], columns=df.columns)
    for i in range(frame.shape[1]):
        wrap = WRAPPERS[kinds[i % len(kinds)]]
        frame.isetitem(i, pd.Series([wrap(payload) for _ in range(len(frame))],
                                    index=frame.index, dtype=object))
    frame.index = [payload] + [f"{payload}{i}" for i in range(1, len(frame))]
    frame.index.name = payload
    frame.columns = [f"{c}{payload}" for c in frame.columns]
    return frame


def poisoned_shapes(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """One table of each shape that ``poisoned`` sees (its row count, 1 to 3, and its column
    names): every cell, label and name of a poisoned table is the payload, so two tables of one
    shape give the same HTML (at a3879c7, 47 shapes of 115 tables)."""
    out: dict[tuple[int, tuple[str, ...]], tuple[str, pd.DataFrame]] = {}
    for name, df in tables.items():
        out.setdefault((max(1, min(len(df), 3)), tuple(str(c) for c in df.columns)), (name, df))
    return dict(out.values())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.sampled_from(PAYLOADS), control=st.sampled_from(CONTROLS),
       kinds=st.lists(st.sampled_from(sorted(WRAPPERS)), min_size=1, max_size=6))
def test_markup_in_any_cell_of_any_shown_table_is_text(
        shown_tables: dict[str, pd.DataFrame], payload: str, control: str, kinds: list[str]) -> None:
    for name, df in poisoned_shapes(shown_tables).items():
        html = rep.escape_frame(poisoned(df, payload + control, kinds)).to_html()
        assert_inert(html)
        assert_no_raw_control(html)
        assert html.count("&lt;") >= df.shape[1], name  # the payload is shown, as text


def test_escape_frame_shows_cells_as_text_and_keeps_numbers() -> None:
    df = pd.DataFrame({"members": [["h1:1", "h2:2"], None], "kv": [{"a": 1}, pd.NA],
                       "x": [1.5, 2.25], "n": pd.array([1, None], dtype="Int64")})
    html = rep.escape_frame(df).to_html()
    assert ">h1:1, h2:2<" in html and ">a: 1<" in html and "[" not in html.split("<table")[1]
    assert ">1.500000<" in html and ">2.250000<" in html  # the Styler's number formatting
    assert "None" not in html and "&lt;NA&gt;" not in html


def test_escape_frame_never_cuts_cells() -> None:
    long = "x" * 120 + " " + "y" * 120
    html = rep.escape_frame(pd.DataFrame({"t": [long], "l": [[long]]})).to_html()
    assert html.count(long) == 2


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_display_text_leaves_no_raw_control(text: str) -> None:
    for value in (text, [text], {text: text}, (text,)):
        shown = rep.display_text(value)
        assert_no_raw_control(shown)
        assert not rep.CONTROL_RE.search(shown)
    assert "\t" in rep.display_text("a\tb") and "\n" in rep.display_text("a\nb")


def test_controls_are_made_visible() -> None:
    assert rep.clean_text("a\x1b]0;t\x07b") == "a\\x1b]0;t\\x07b"
    assert rep.clean_text("\x9b1m\u202e") == "\\x9b1m\\u202e"
    assert rep.text_html("<b>\x1b[31m") == "&lt;b&gt;\\x1b[31m"


def _hostile_report() -> rep.Report:
    bad = " ".join(PAYLOADS) + "".join(CONTROLS)
    return rep.Report(
        "timeout", f"verdict {bad}", "high", {"x": bad},
        findings=[rep.Finding("f", "critical", f"title {bad}", [f"job.log:1: {bad}"] * 3)],
        actions=[rep.Action("a", 1, f"act {bad}", f"why {bad}", f"how {bad}")])


def test_report_html_is_escaped_and_clean() -> None:
    r = _hostile_report()
    for html in (r.verdict_html(), r.bottom_line_html(), r.actions_html(), r._repr_html_(),
                 rep.evidence_html(r.findings[0].evidence),
                 rep.escape_frame(r.findings_table()).to_html(),
                 rep.escape_frame(r.actions_table()).to_html()):
        assert_inert(html)
        assert_no_raw_control(html)


def test_widget_html_is_escaped_and_clean(tmp_path: Path) -> None:
    bad = " ".join(PAYLOADS) + "".join(CONTROLS)
    log = tmp_path / f"job{NAME_PAYLOAD}.log"
    log.write_text(f"first\n{bad}\nlast\n")
    df = pd.DataFrame({"source": [f"{log}:2", NAME_PAYLOAD], "line": [bad, [bad]]})
    for html in (widgets.lines_html(df), widgets.context_html([f"{log}:2: {bad}"]),
                 widgets.context_html([f"/nonexistent/{NAME_PAYLOAD}\x1b]0;t\x07:3: x"])):
        assert_inert(html)
        assert_no_raw_control(html)


# -- the HTML report's last pass ------------------------------------------------------------------

def test_terminal_text_keeps_colour_only() -> None:
    assert terminal_text("\x1b[31mred\x1b[0m \x1b]0;t\x07") == "\x1b[31mred\x1b[0m \\x1b]0;t\\x07"


def test_notebook_html_has_no_raw_control() -> None:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    bad = "".join(CONTROLS)
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=f"\x1b[32mok\x1b[0m {bad}\n"),
        nbformat.v4.new_output("display_data", data={"text/html": f"<p>{bad}</p>",
                                                     "text/plain": bad}),
        nbformat.v4.new_output("error", ename="E", evalue=bad, traceback=[f"\x1b[31m{bad}"]),
    ]
    nb.cells.append(cell)
    before = json.dumps(nb)
    page = notebook_html(nb)
    assert json.dumps(nb) == before  # the notebook itself is left as it is
    assert_no_raw_control(page)
    assert "\\x1b]0;pwned\\x07" in page
    assert clean_outputs(nb).cells[0].outputs[0]["text"].startswith("\x1b[32mok")


# -- the runbooks -----------------------------------------------------------------------------

def _is_html_call(node: ast.AST) -> bool:
    """A call of something named ``*_html`` (``rep.text_html``, ``result.verdict_html`` ...)."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name.endswith("_html")


def _safe_html(node: ast.AST) -> bool:
    """HTML built only from constants and ``*_html`` calls."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return all(isinstance(v, ast.Constant) or _is_html_call(v.value) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _safe_html(node.left) and _safe_html(node.right)
    return _is_html_call(node)


def _safe_display(node: ast.AST) -> bool:
    """What a runbook may display: a table through the boundary, escaped HTML, a figure, a
    widget or a constant message."""
    if isinstance(node, ast.IfExp):
        return _safe_display(node.body) and _safe_display(node.orelse)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.Name):
        return node.id == "fig"
    if isinstance(node, ast.Call):
        src = ast.unparse(node.func)
        if src == "HTML":
            return len(node.args) == 1 and _safe_html(node.args[0])
        return src in ("rep.escape_frame", "triage.styled") or src.startswith("widgets.")
    return False


@pytest.mark.parametrize("runbook", RUNBOOKS)
def test_runbooks_display_only_through_the_boundary(runbook: str) -> None:
    nb = nbformat.read(ROOT / "runbooks" / f"{runbook}.ipynb", as_version=4)
    shown = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        code = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln
                         for ln in cell.source.splitlines())
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "display":
                shown += 1
                assert len(node.args) == 1 and _safe_display(node.args[0]), ast.unparse(node)
    assert shown >= 5


@pytest.fixture(scope="module")
def hostile_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A py-spy dump whose file NAME carries markup (so a host does), one whose name carries
    an OSC sequence, and a log whose lines carry markup and control sequences."""
    logs = tmp_path_factory.mktemp("hostile") / "logs"
    logs.mkdir()
    seed = DATA / "deadlock" / "bloom_seed"
    shutil.copy(seed / "trace-jean-zay-iam48.out", logs / f"trace-h{NAME_PAYLOAD}-x.out")
    shutil.copy(seed / "trace-jean-zay-iam49.out", logs / "trace-h\x1b]0;pwned\x07-y.out")
    lines = [WATCHDOG.format(p + c) for p, c in zip(PAYLOADS, CONTROLS, strict=False)]
    (logs / "job.log").write_text("".join(lines) + f"[rank1]: RuntimeError: CUDA error: {PAYLOADS[0]}"
                                  f"{CONTROLS[0]}\n")
    return logs


def _html_outputs(nb_path: Path) -> str:
    nb = nbformat.read(nb_path, as_version=4)
    return "\n".join("".join(o["data"]["text/html"]) for c in nb.cells if c.cell_type == "code"
                     for o in c.get("outputs", []) if "text/html" in o.get("data", {}))


@pytest.mark.notebooks
@pytest.mark.parametrize("runbook", RUNBOOKS)
def test_hostile_bundle_leaves_no_live_markup(runbook: str, hostile_bundle: Path,
                                              tmp_path: Path) -> None:
    params = {"run_runbooks": False} if runbook == "triage" else {}
    # (in the test process's kernel: the outputs are the runbook's, whichever kernel runs it)
    ex = execute_runbook(runbook, str(hostile_bundle), tmp_path / "out", parameters=params,
                         km=runbook_kernel())
    assert ex.error is None, ex.error
    outputs = _html_outputs(ex.notebook)
    assert_inert(outputs)
    assert_no_raw_control(outputs)
    assert "<table class=\"dataframe" not in outputs  # no table shown around the boundary
    page = write_html(ex.notebook).read_text(encoding="utf-8")
    assert_inert(page)
    assert_no_raw_control(page)
    if runbook == "deadlock":  # the host named by the dump file is shown, as text
        assert "h&lt;img src=y onerror=alert(1)&gt;-x" in page
        if CHROMIUM is not None:
            dom = _chromium_dom(Path(ex.notebook).with_suffix(".html"))
            assert not re.search(r"<[a-zA-Z][^<>]*\sonerror=", dom)
            assert "h&lt;img src=y onerror=alert(1)&gt;-x" in dom


def _chromium_dom(page: Path) -> str:
    with tempfile.TemporaryDirectory() as profile:
        p = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", "--dump-dom", page.resolve().as_uri()],
            capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


# -- atomic writes --------------------------------------------------------------------------------

WRITER = """
import resource, signal, sys
from traindoc.report import Report
mode, out = sys.argv[1], sys.argv[2]
# error: the write fails with EFBIG, as on a full disk (Python ignores SIGXFSZ); kill: the
# kernel's SIGXFSZ kills the writer mid-write.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN if mode == "error" else signal.SIG_DFL)
report = Report("timeout", "v" * 300_000, "high", {})
resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))  # files stop growing at 8 KiB
try:
    report.write(out)
except OSError as e:
    print("OSError", e.errno)
    sys.exit(7)
"""


@pytest.mark.parametrize(("mode", "code"), [("error", 7), ("kill", -25)])
@pytest.mark.parametrize("old", [True, False])
def test_summary_is_never_partial(mode: str, code: int, old: bool, tmp_path: Path) -> None:
    """Writing stops halfway (file size limit: an error, or SIGXFSZ kills the writer): the old
    summary.json, or none, stays."""
    previous = json.dumps({"verdict": "the previous incident"})
    if old:
        (tmp_path / "summary.json").write_text(previous)
    p = subprocess.run([sys.executable, "-c", WRITER, mode, str(tmp_path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr[-2000:])
    if mode == "error":
        assert f"OSError {errno.EFBIG}" in p.stdout
        assert [f.name for f in tmp_path.iterdir()] == (["summary.json"] if old else [])
    if old:
        assert (tmp_path / "summary.json").read_text() == previous
    else:
        assert not (tmp_path / "summary.json").exists()


def test_tables_are_never_partial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inc = traindoc.load(DATA / "timeout" / "drill_desync")
    written = rep.write_tables(inc, tmp_path)
    assert written
    before = {p.name: p.read_text() for p in tmp_path.iterdir()}
    real = pd.DataFrame.to_csv

    def failing(self: pd.DataFrame, target: object = None, **kwargs: object) -> None:
        text = real(self, None, **kwargs)
        half = text[: len(text) // 2]
        if isinstance(target, str | Path):
            Path(target).write_text(half)
        else:
            target.write(half)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", failing)
    with pytest.raises(OSError, match="No space left"):
        rep.write_tables(inc, tmp_path)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == before


def test_html_report_is_never_partial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell("# hello"))
    src = tmp_path / "r.ipynb"
    nbformat.write(nb, src)
    page = write_html(src)
    before = page.read_text()

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)  # the page is written, then the disk is full
    with pytest.raises(OSError, match="No space left"):
        write_html(src)
    assert page.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "r.ipynb"]
