"""The HTML report (``traindoc … --html``): every figure embedded, log text shown as text,
and the page rendered by headless Chromium.

CI installs Debian's ``chromium`` (``.ci/run``); where it is absent the browser checks skip.
"""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import matplotlib.image as mpimg
import nbformat
import numpy as np
import pytest

from conftest import DATA
from traindoc import cli
from traindoc.htmlreport import write_html

MIXED = DATA / "triage" / "crash_then_timeouts"
SCRIPT = "<script>alert(1)</script>"
PNG = b"\x89PNG\r\n\x1a\n"
IMG_RE = re.compile(r'<img\b[^>]*\bsrc="data:image/png;base64,([A-Za-z0-9+/=\s]+)"')
CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (CI installs it: apt-get install chromium)")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """``traindoc triage --html`` on the mixed bundle plus a log line carrying markup."""
    tmp = tmp_path_factory.mktemp("report")
    logs = tmp / "logs"
    shutil.copytree(MIXED, logs)
    (logs / "rank0.log").write_text(
        "[2024-07-08 00:12:09] rank 0 starting\n"  # dates the glog lines below
        "[rank0]:[E708 01:46:13.700000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=39617, OpType=ALLREDUCE, NumelIn=1, "
        f"NumelOut=1, Timeout(ms)=600000) ran for 600009 milliseconds before timing out. {SCRIPT}\n")
    out = tmp / "out"
    code = cli.main(["triage", str(logs), "-o", str(out), "--html", "--no-runbooks"])
    assert code == cli.EXIT_OK
    return {"out": out, "nb": out / "triage.ipynb", "html": out / "triage.html"}


def figures(nb_path: Path) -> list[bytes]:
    nb = nbformat.read(nb_path, as_version=4)
    return [base64.b64decode(o["data"]["image/png"]) for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if "image/png" in o.get("data", {})]


def test_every_figure_is_embedded(report: dict) -> None:
    html = report["html"].read_text()
    shown = figures(report["nb"])
    saved = sorted(report["out"].glob("*.png"))
    assert len(shown) >= 2 and len(shown) == len(saved)  # every saved figure is also shown
    imgs = [base64.b64decode(b) for b in IMG_RE.findall(html)]
    assert sorted(imgs) == sorted(shown)
    assert all(i.startswith(PNG) for i in imgs)


def test_report_has_no_code_and_fetches_nothing(report: dict) -> None:
    html = report["html"].read_text()
    body = html.split("<body", 1)[1]
    assert "triage.diagnose" not in body and "import traindoc" not in body
    assert "hl-ipython3" not in body  # nbconvert's class for highlighted code
    assert not re.search(r'class="[^"]*\b(?:jp-InputPrompt|jp-OutputPrompt)\b', body)
    assert "In&nbsp;[" not in body and "Out[" not in body
    assert not re.search(r"<script[^>]*\bsrc=", html)
    assert "Which came first" in html and "What to do next" in html


def test_log_markup_is_text(report: dict) -> None:
    nb = nbformat.read(report["nb"], as_version=4)
    htmls = [o["data"]["text/html"] for c in nb.cells if c.cell_type == "code"
             for o in c.get("outputs", []) if "text/html" in o.get("data", {})]
    joined = "".join("".join(h) if isinstance(h, list) else h for h in htmls)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in joined
    assert SCRIPT not in joined
    page = report["html"].read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and SCRIPT not in page


def test_tables_and_evidence_are_not_cut(report: dict) -> None:
    """Cells show their whole text (no pandas "…" truncation) (issue 15.10)."""
    nb = nbformat.read(report["nb"], as_version=4)
    cells = [t for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
             for t in re.findall(r"<td[^>]*>([^<]*)</td>", "".join(o.get("data", {}).get("text/html", "")))]
    assert cells and not [t for t in cells if t.endswith("...")], "a table cell was cut"


def test_write_html_beside_the_notebook(report: dict, tmp_path: Path) -> None:
    nb = tmp_path / "copy.ipynb"
    shutil.copy(report["nb"], nb)
    assert write_html(nb) == tmp_path / "copy.html"
    assert "<title>copy</title>" in (tmp_path / "copy.html").read_text()


def chromium(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", *args],
            capture_output=True, text=True, timeout=180)


@needs_chromium
def test_chromium_renders_the_report(report: dict, tmp_path: Path) -> None:
    url = report["html"].resolve().as_uri()
    dom = chromium("--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    n_figs = len(figures(report["nb"]))
    assert len(re.findall(r"<img\b[^>]*src=\"data:image/png", dom.stdout)) == n_figs
    assert SCRIPT not in dom.stdout and "&lt;script&gt;alert(1)&lt;/script&gt;" in dom.stdout

    shot = tmp_path / "report.png"
    p = chromium(f"--screenshot={shot}", "--window-size=1280,4000", url)
    assert p.returncode == 0 and shot.exists(), p.stderr[-2000:]
    img = mpimg.imread(shot)[..., :3]
    assert img.shape[:2] == (4000, 1280)
    ink = (img.mean(axis=2) < 0.6)  # text and plot lines, not the white page
    rows = ink.any(axis=1)
    assert ink.mean() > 0.005, "screenshot is (nearly) blank"
    assert rows[:1000].any() and rows[1000:3000].any(), "content only in one part of the page"
    colours = np.unique((img.reshape(-1, 3) * 255).astype(np.uint8), axis=0)
    assert len(colours) > 50  # figures (red/orange markers, blue lines) rendered, not just text
    red = (img[..., 0] > 0.7) & (img[..., 1] < 0.35) & (img[..., 2] < 0.35)
    assert red.sum() > 20, "the timeline's red 'cause' marker is not on the page"


@pytest.fixture(scope="module")
def timeout_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``traindoc run timeout --html`` on the bundled sample, once for the tests that read it."""
    out = tmp_path_factory.mktemp("timeout") / "out"
    code = cli.main(["run", "timeout", str(DATA / "timeout" / "gemma3_seed"), "-o", str(out),
                     "--html"])
    assert code == cli.EXIT_OK
    return out


@needs_chromium
def test_chromium_renders_a_class_runbook_report(timeout_report: Path) -> None:
    """The report of another runbook (here timeout's) renders too: same exporter."""
    out = timeout_report
    s = json.loads((out / "summary.json").read_text())
    dom = chromium("--dump-dom", (out / "timeout.html").resolve().as_uri())
    assert dom.returncode == 0 and s["verdict"][:60].replace("&", "&amp;") in dom.stdout


def test_saved_widget_state_pulls_no_cdn_script() -> None:
    # issue 15.12: nbconvert adds the widget manager from a CDN when widget state was saved
    from traindoc.htmlreport import notebook_html

    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {}, "version_major": 2, "version_minor": 0}}
    nb.cells.append(nbformat.v4.new_markdown_cell("# hello"))
    html = notebook_html(nb)
    assert "hello" in html
    assert not re.search(r"<script[^>]+src=", html), re.findall(r"<script[^>]+src=[^>]+>", html)
    assert "unpkg" not in html and "jsdelivr" not in html


@needs_chromium
def test_chromium_wraps_evidence_at_spaces(report: dict, tmp_path: Path) -> None:
    """Evidence blocks wrap at spaces, never mid-word: the style the browser computes for
    an output <pre> (issue 15.10). A copy of the page gets one inline script that writes it
    into the DOM."""
    page = report["html"].read_text()
    probe = ("<script>const p = document.querySelector('.jp-OutputArea-output pre');"
             "document.body.dataset.wb = getComputedStyle(p).wordBreak + '/' + "
             "getComputedStyle(p).whiteSpace;</script>")
    copy = tmp_path / "probe.html"
    copy.write_text(page.replace("</body>", probe + "</body>"))
    dom = chromium("--dump-dom", copy.resolve().as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-wb="normal/pre-wrap"' in dom.stdout, re.findall(r'data-wb="[^"]*"', dom.stdout)


# Chromium's own services (network time, component updates, sign-in): the browser's traffic,
# not the page's, even with background networking off.
BROWSER_HOSTS = ("clients2.google.com", "update.googleapis.com", "accounts.google.com",
                 "safebrowsing.googleapis.com", "optimizationguide-pa.googleapis.com",
                 "content-autofill.googleapis.com", "clientservices.googleapis.com",
                 "redirector.gvt1.com", "edgedl.me.gvt1.com")


class _Recorder:
    """A local HTTP proxy that answers 403 to everything and remembers what a page asked
    (the browser's own service requests left out)."""

    def __init__(self) -> None:
        import http.server
        import threading

        seen: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def _refuse(self) -> None:
                target = self.path.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]
                if target not in BROWSER_HOSTS:
                    seen.append(f"{self.command} {self.path}")
                self.send_response(403)
                self.end_headers()

            do_GET = do_POST = do_HEAD = do_CONNECT = do_OPTIONS = _refuse  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        self.seen = seen
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def flags(self) -> list[str]:
        port = self.server.server_address[1]
        return [f"--proxy-server=http://127.0.0.1:{port}", "--proxy-bypass-list=<-loopback>",
                "--virtual-time-budget=4000"]

    def close(self) -> None:
        self.server.shutdown()


@needs_chromium
def test_triage_reports_fetch_nothing_in_a_browser(tmp_path: Path) -> None:
    """Triage on a multi-file bundle, its class runbooks and every HTML report opened in
    headless Chromium behind a proxy that records every request: none is made (issue 15.12).
    A canary page proves the proxy sees what a page would fetch."""
    logs = tmp_path / "logs"
    shutil.copytree(MIXED, logs)
    assert len([p for p in logs.iterdir() if p.suffix in (".out", ".txt", ".log")]) >= 2
    out = tmp_path / "out"
    assert cli.main(["triage", str(logs), "-o", str(out), "--html"]) == cli.EXIT_OK
    pages = sorted(out.rglob("*.html"))
    assert {p.stem for p in pages} >= {"triage", "gpu_crash", "timeout"}, pages
    canary = tmp_path / "canary.html"
    canary.write_text('<html><body><img src="http://canary.invalid/x.png"></body></html>')
    proxy = _Recorder()
    try:
        dom = chromium(*proxy.flags, "--dump-dom", canary.as_uri())
        assert dom.returncode == 0 and any("canary.invalid" in s for s in proxy.seen), proxy.seen
        proxy.seen.clear()
        for page in pages:
            dom = chromium(*proxy.flags, "--dump-dom", page.resolve().as_uri())
            assert dom.returncode == 0, dom.stderr[-2000:]
            assert "Bottom line" in dom.stdout, page
            assert not proxy.seen, f"{page.name} fetched {proxy.seen}"
    finally:
        proxy.close()


@needs_chromium
def test_bottom_line_is_on_the_first_screen(report: dict, timeout_report: Path,
                                            tmp_path: Path) -> None:
    """Verdict, confidence and first action within the first 1000 px of the HTML report, for
    triage and for a class runbook (issue 15.7)."""
    out = timeout_report
    probe = ("<script>const b = document.querySelector('.traindoc-bottom-line');"
             "document.body.dataset.bl = b ? Math.round(b.getBoundingClientRect().bottom) : -1;"
             "</script>")
    for page in (report["html"], out / "timeout.html"):
        copy = tmp_path / f"probe-{page.name}"
        copy.write_text(page.read_text().replace("</body>", probe + "</body>"))
        dom = chromium("--window-size=1280,1000", "--dump-dom", copy.resolve().as_uri())
        bottom = int(re.search(r'data-bl="(-?\d+)"', dom.stdout)[1])
        assert 0 < bottom <= 1000, f"{page.name}: the bottom line ends at {bottom} px"
        text = re.sub(r"<[^>]+>", " ", page.read_text())
        assert text.index("Bottom line") < text.index("What was read")


@needs_chromium
def test_tables_have_no_index_column_and_no_word_cut(tmp_path: Path) -> None:
    """Issue 27: the gpu_crash report on the Xid 79 sample (wide tables: the Xid catalogue's
    advice, the cascade's messages) shows no pandas row numbers, and no word of a table cell
    is broken across lines in a 1280 px window."""
    out = tmp_path / "gpu"
    assert cli.main(["run", "gpu_crash", str(DATA / "gpu_crash" / "xid79_multinode"), "-o",
                     str(out), "--html"]) == cli.EXIT_OK
    page = (out / "gpu_crash.html").read_text()
    assert "row_heading" not in page  # the Styler's class for index cells
    probe = """<script>
const cut = [];
for (const td of document.querySelectorAll('td')) {
  const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const re = /\\S+/g; let m;
    while ((m = re.exec(n.data)) !== null) {
      const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
      const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
      if (tops.size > 1 && m[0].length < 40) cut.push(m[0]);
    }
  }
}
document.body.dataset.cut = JSON.stringify(cut.slice(0, 5));
document.body.dataset.cells = document.querySelectorAll('td').length;
</script>"""
    copy = tmp_path / "probe.html"
    copy.write_text(page.replace("</body>", probe + "</body>"))
    dom = chromium("--window-size=1280,1000", "--dump-dom", copy.resolve().as_uri())
    assert int(re.search(r'data-cells="(\d+)"', dom.stdout)[1]) > 20
    cut = html.unescape(re.search(r'data-cut="([^"]*)"', dom.stdout)[1])
    assert cut == "[]", f"words cut mid-word: {cut}"
