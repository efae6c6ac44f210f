"""A clean HTML report of an executed runbook: its narrative, tables and figures, no code.

nbconvert's ``HTMLExporter`` with the code cells' inputs and all prompts left out; figures are
embedded (data URIs) and the page loads nothing from the network (no require.js, MathJax,
Mermaid, nor the widget manager nbconvert pulls from a CDN when a notebook saved widget state,
e.g. from the load progress bar), so it opens the same offline, attached to a ticket or in a headless browser.
Runbooks escape log text before display (``report.escape_frame``, ``report.text_html``); on
the way to the page every output's control characters are made visible once more (``\\x1b``;
the colour codes that nbconvert renders as colour are kept), and the page is written atomically.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

from .report import clean_text, write_atomic

TEMPLATE_NAME = "traindoc_report.html.j2"
# The JupyterLab template minus its external scripts, plus a readable page width.
TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}
<style>
  body.jp-Notebook { max-width: 1180px; margin: 0 auto; padding: 12px 24px; }
  /* long log lines wrap at spaces (JupyterLab's own CSS, later in the page, breaks output
     <pre> anywhere, mid-word): only a word longer than the page is broken. break-word, not
     anywhere: 'anywhere' lets a table column shrink below its longest word, so every word
     of a narrow column was cut mid-word */
  body.jp-Notebook .jp-RenderedHTMLCommon td { overflow-wrap: break-word; word-break: normal; }
  body.jp-Notebook .jp-OutputArea-output pre, body.jp-Notebook .jp-RenderedHTMLCommon pre {
    white-space: pre-wrap; word-break: normal; overflow-wrap: break-word;
    font-family: var(--jp-code-font-family, monospace); font-size: 12px; }
</style>
{%- endblock extra_css -%}
"""
# Colour and style codes (CSI ... m): nbconvert's ansi2html turns them into styled spans.
SGR_RE = re.compile(r"\x1b\[[0-9;]*m")


def terminal_text(text: str) -> str:
    """Terminal text with its colour codes kept and every other control character (OSC, cursor
    moves, C1, ...) made visible."""
    parts, last = [], 0
    for m in SGR_RE.finditer(text):
        parts += [clean_text(text[last:m.start()]), m.group()]
        last = m.end()
    parts.append(clean_text(text[last:]))
    return "".join(parts)


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def clean_outputs(nb: Any) -> Any:
    """A copy of notebook node ``nb`` whose outputs hold no raw control character: streams,
    tracebacks and plain text keep only their colour codes; HTML, markdown and other text keep
    none."""
    nb = copy.deepcopy(nb)
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            if "text" in out:
                out["text"] = terminal_text(_joined(out["text"]))
            if "traceback" in out:
                out["traceback"] = [terminal_text(_joined(t)) for t in out["traceback"]]
            for key in ("ename", "evalue"):
                if key in out:
                    out[key] = terminal_text(_joined(out[key]))
            data = out.get("data", {})
            for mime, value in data.items():
                if mime == "text/plain":
                    data[mime] = terminal_text(_joined(value))
                elif mime.startswith("text/") or mime.endswith(("+json", "/json", "+xml")):
                    if isinstance(value, str | list):
                        data[mime] = clean_text(_joined(value))
    return nb


def exporter() -> Any:
    """An ``HTMLExporter`` for reports: no code, no prompts, nothing fetched from the network."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    return HTMLExporter(
        template_name="lab", template_file=TEMPLATE_NAME,
        extra_loaders=[DictLoader({TEMPLATE_NAME: TEMPLATE})],
        exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True,
        embed_images=True)


def notebook_html(nb: Any, title: str | None = None) -> str:
    """The report of notebook node ``nb`` as one HTML page (no raw control character from
    any output)."""
    resources = {"metadata": {"name": clean_text(title or "traindoc report")}}
    body, _ = exporter().from_notebook_node(clean_outputs(nb), resources=resources)
    return body


def write_html(notebook: str | os.PathLike[str], html_path: str | os.PathLike[str] | None = None,
               ) -> Path:
    """Write the report of the executed ``notebook`` (default: beside it, ``.html``) atomically:
    a failed write leaves the old page or none, and its ``OSError`` propagates."""
    import nbformat

    src = Path(notebook)
    out = Path(html_path) if html_path is not None else src.with_suffix(".html")
    nb = nbformat.read(src, as_version=4)
    return write_atomic(out, notebook_html(nb, title=src.stem))


__all__ = ["clean_outputs", "exporter", "notebook_html", "terminal_text", "write_html"]
