"""Interactive exploration for JupyterLab (ipywidgets). Runbooks call these only when their
``interactive`` parameter is true; headless runs show the same tables without them."""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from .incident import Incident

PAGE = 40


def rows_for(incident: Incident, table: str, ranks: list[int] | None = None,
             hosts: list[str] | None = None) -> pd.DataFrame:
    """Rows of ``table`` restricted to ``ranks``/``hosts`` (None: all)."""
    df = incident.tables[table]
    if ranks:
        df = df[df["rank"].isin(ranks)]
    if hosts:
        df = df[df["host"].isin(hosts)]
    return df


def lines_html(df: pd.DataFrame, start: int = 0, page: int = PAGE) -> str:
    """One page of evidence lines ('source: line'), escaped, as a <pre> block."""
    part = df.iloc[start : start + page]
    body = "\n".join(f"{s}: {line}" for s, line in zip(part["source"], part["line"], strict=False))
    return f"<pre>{html.escape(body)}</pre><p>{start + len(part)} of {len(df)} line(s)</p>"


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
