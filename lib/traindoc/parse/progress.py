"""tqdm progress bars into the ``progress`` table.

``Train: 0%| | 21/6336 [08:49<44:58:38, 25.64s/it]``; ``rate`` is stored in iterations per
second whatever unit the bar printed (``25.64s/it`` -> 0.039). A bar pasted into Markdown may
have its pipes escaped (``21%\\|█████▏ \\| 161544/770000 [...]``): read alike.
"""

from __future__ import annotations

import re

from .base import LineParser, Row, hms_to_s, to_float

TQDM_RE = re.compile(
    r"(?:(?P<desc>[^|\r\n]*?):?\s*)?(?P<pct>\d{1,3})%\\?\|[^|]*\|\s*(?P<n>\d+(?:\.\d+)?[kMG]?)"
    r"/(?P<total>\d+(?:\.\d+)?[kMG]?)\s*\[(?P<elapsed>[\d:]+(?:\s*days?,\s*[\d:]+)?)"
    r"(?:<(?P<remaining>[\d:?]+(?:\s*days?,\s*[\d:]+)?))?"
    r"(?:,\s*(?P<rate>[\d.]+|\?)\s*(?P<unit>[a-zA-Z]*/[a-zA-Z]+))?"
)
SCALE = {"k": 1e3, "M": 1e6, "G": 1e9}


def _count(v: str) -> int | None:
    if v[-1] in SCALE:
        f = to_float(v[:-1])
        return int(f * SCALE[v[-1]]) if f is not None else None
    f = to_float(v)
    return int(f) if f is not None else None


def parse_tqdm(text: str) -> Row | None:
    """The last tqdm bar in ``text``."""
    m = None
    for found in TQDM_RE.finditer(text):
        m = found
    if m is None:
        return None
    rate = to_float(m["rate"]) if m["rate"] and m["rate"] != "?" else None
    unit = m["unit"] or ""
    if rate is not None and unit.startswith("s/"):
        rate = 1.0 / rate if rate > 0 else None
    desc = (m["desc"] or "").strip() or None
    return {
        "step": _count(m["n"]),
        "total": _count(m["total"]),
        "elapsed_s": hms_to_s(m["elapsed"]),
        "rate": rate,
        "desc": desc,
    }


PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "tqdm",
        "progress",
        ("%|", "%\\|"),
        parse_tqdm,
        example="Train: 0%| | 21/6336 [08:49<44:58:38, 25.64s/it]",
    ),
)
