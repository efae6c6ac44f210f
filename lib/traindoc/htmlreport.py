"""A clean HTML report of an executed runbook: its narrative, tables and figures, no code.

nbconvert's ``HTMLExporter`` with the code cells' inputs and all prompts left out; figures are
embedded (data URIs) and the page loads nothing from the network (no require.js, MathJax,
Mermaid, nor the widget manager nbconvert pulls from a CDN when a notebook saved widget state,
e.g. from the load progress bar), so it opens the same offline, attached to a ticket or in a headless browser.
Outputs are copied as the notebook holds them: runbooks escape log text before display.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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
     <pre> anywhere, mid-word): only a word longer than the page is broken */
  body.jp-Notebook .jp-RenderedHTMLCommon td { overflow-wrap: anywhere; }
  body.jp-Notebook .jp-OutputArea-output pre, body.jp-Notebook .jp-RenderedHTMLCommon pre {
    white-space: pre-wrap; word-break: normal; overflow-wrap: anywhere;
    font-family: var(--jp-code-font-family, monospace); font-size: 12px; }
</style>
{%- endblock extra_css -%}
"""


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
    """The report of notebook node ``nb`` as one HTML page."""
    resources = {"metadata": {"name": title or "traindoc report"}}
    body, _ = exporter().from_notebook_node(nb, resources=resources)
    return body


def write_html(notebook: str | os.PathLike[str], html_path: str | os.PathLike[str] | None = None,
               ) -> Path:
    """Write the report of the executed ``notebook`` (default: beside it, ``.html``)."""
    import nbformat

    src = Path(notebook)
    out = Path(html_path) if html_path is not None else src.with_suffix(".html")
    nb = nbformat.read(src, as_version=4)
    out.write_text(notebook_html(nb, title=src.stem), encoding="utf-8")
    return out


__all__ = ["exporter", "notebook_html", "write_html"]
