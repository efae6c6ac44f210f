"""The runbooks as on-call people use them: JupyterLab in a browser, `interactive = True`,
Run All, then the Explore widgets (issue 15.15). JupyterLab runs on a free local port and
headless Chromium (the system's, driven by Playwright) edits the parameters cell, runs the
notebook, picks a rank in the evidence browser and moves the iteration slider. Nothing may
be fetched from outside the machine and the browser console must stay free of errors."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT

CHROMIUM = shutil.which("chromium")
pytestmark = [
    pytest.mark.notebooks,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (CI installs it)"),
    pytest.mark.skipif(importlib.util.find_spec("playwright") is None
                       or importlib.util.find_spec("jupyterlab") is None,
                       reason="needs the dev extras: pip install -e '.[dev]'"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def lab(tmp_path: Path):
    """JupyterLab serving a copy of the runbooks, with its own config and runtime dirs."""
    root = tmp_path / "work"
    shutil.copytree(ROOT / "lib" / "traindoc" / "runbooks", root)
    port = _free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"),
               JUPYTER_DATA_DIR=str(tmp_path / "data"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"), IPYTHONDIR=str(tmp_path / "ipy"))
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
           "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=", "--ServerApp.password=",
           f"--ServerApp.root_dir={root}", "--LabApp.news_url=",
           "--LabApp.extension_manager=readonly", "--allow-root"]
    log = open(tmp_path / "lab.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)
                break
            except OSError:
                if server.poll() is not None:
                    break
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start")
        if server.poll() is not None:
            pytest.fail((tmp_path / "lab.log").read_text()[-3000:])
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def test_explore_widgets_in_jupyterlab(lab: str, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    requests: list[str] = []
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("request", lambda r: requests.append(r.url))
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(f"{lab}/lab/tree/throughput.ipynb")
            page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=90_000)
            # the kernel started (the toolbar's indicator says idle): waited for, not a fixed
            # sleep that a loaded machine can outlast
            page.wait_for_selector(
                '.jp-NotebookPanel-toolbar .jp-Notebook-ExecutionIndicator[data-status="idle"]',
                state="attached", timeout=90_000)
            # the on-call engineer edits the parameters cell: their logs, interactive on
            params = page.locator(".jp-Notebook .jp-CodeCell").first
            params.locator(".cm-line", has_text="interactive =").get_by_text(
                "False", exact=True).dblclick()
            page.keyboard.type("True")
            params.locator(".cm-line", has_text="log_path =").click()
            page.keyboard.press("End")
            page.keyboard.press("Shift+Home")
            page.keyboard.type('log_path = "data/throughput/drill_slow_rank"')
            page.keyboard.press("Escape")
            page.get_by_text("Run", exact=True).first.click()
            page.get_by_text("Run All Cells", exact=True).click()
            page.wait_for_selector(".jp-OutputArea .jupyter-widgets.widget-tab", timeout=240_000)
            tabs = page.locator(".jp-OutputArea .jupyter-widgets.widget-tab").last
            tabs.scroll_into_view_if_needed()
            assert page.locator(".traindoc-bottom-line").count() == 1

            # evidence browser: pick rank 0 and its lines (none: the iteration lines are
            # rank 1's) replace the unfiltered page
            lines = tabs.locator(".widget-html-content").first
            before = lines.inner_html()
            ranks = tabs.locator(".widget-select-multiple select").first
            assert ranks.locator("option").all_inner_texts() == ["0", "1"]
            ranks.select_option(label="0")
            page.wait_for_function(
                "([el, old]) => el.innerHTML !== old", arg=[lines.element_handle(), before],
                timeout=30_000)
            assert "0 of 0 line" in lines.inner_html()
            ranks.select_option(label="1")
            page.wait_for_function("el => el.innerHTML.includes('iteration')",
                                   arg=lines.element_handle(), timeout=30_000)

            # iterations tab: move the slider's upper handle, the figure is redrawn
            tabs.locator(".lm-TabBar-tab", has_text="iterations").click()
            image = tabs.locator("img >> visible=true").first
            image.wait_for(timeout=30_000)
            src = image.get_attribute("src")
            handle = tabs.locator(".noUi-handle >> visible=true").last
            top = float(handle.get_attribute("aria-valuenow"))
            handle.focus()
            for _ in range(5):
                page.keyboard.press("ArrowLeft")
            assert float(handle.get_attribute("aria-valuenow")) == top - 5
            page.wait_for_function("([el, old]) => el.getAttribute('src') !== old",
                                   arg=[image.element_handle(), src], timeout=30_000)
            page.screenshot(path=str(tmp_path / "lab.png"))
        finally:
            browser.close()
    outside = [u for u in requests if not u.startswith(("http://127.0.0.1", "ws://127.0.0.1",
                                                        "data:", "blob:"))]
    assert not outside, outside
    assert not problems, problems
