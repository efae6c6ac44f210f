"""tqdm progress bars into the ``progress`` table.

``Train: 0%| | 21/6336 [08:49<44:58:38, 25.64s/it]``; ``rate`` is stored in iterations per
second whatever unit the bar printed (``25.64s/it`` -> 0.039). A bar pasted into Markdown may
have its pipes escaped (``21%\\|█████▏ \\| 161544/770000 [...]``), and a bar written where
the terminal is no tty (Colab, a redirected YOLO run) has no bar at all (``640: 100% 42/42
[01:09<00:00,  1.65s/it]``): read alike.

Keras prints one progress line per epoch: ``1490/1490 - 106s - loss: … - 71ms/step`` (verbose
2) or ``1000/1000 [=====] - 1873s 2s/step - loss: …`` (verbose 1): a row with the batch count
as step and total, the epoch's seconds as ``elapsed_s`` and the inverse of its time per step
as ``rate``. Such a bar starts again at every epoch; the throughput series counts steps across
the restarts (``diagnose.throughput.series``).
"""

from __future__ import annotations

import re

from .base import LineParser, Row, hms_to_s, to_float

TQDM_RE = re.compile(
    r"(?:(?P<desc>[^|\r\n]*?):?\s*)?(?P<pct>\d{1,3})%(?:\\?\|[^|]*\||\s)\s*(?P<n>\d+(?:\.\d+)?[kMG]?)"
    r"/(?P<total>\d+(?:\.\d+)?[kMG]?)\s*\[(?P<elapsed>[\d:]+(?:\s*days?,\s*[\d:]+)?)"
    r"(?:<(?P<remaining>[\d:?]+(?:\s*days?,\s*[\d:]+)?))?"
    r"(?:,\s*(?P<rate>[\d.]+|\?)\s*(?P<unit>[a-zA-Z]*/[a-zA-Z]+))?"
)
SCALE = {"k": 1e3, "M": 1e6, "G": 1e9}
# Keras: "1490/1490 - 106s - loss: … - 71ms/step", "1000/1000 [=====] - 1873s 2s/step - …"
KERAS_RE = re.compile(
    r"^\s*(?P<n>\d+)/(?P<total>\d+)\s+(?:\[[=>.]*\]\s+)?-\s+(?P<elapsed>\d+)s\b"
    r".*?(?<![\w.])(?P<per>\d+(?:\.\d+)?)(?P<unit>us|ms|s)/step\b")
PER_STEP_S = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


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


def parse_keras(text: str) -> Row | None:
    """One Keras epoch line: batches done of the total, seconds, and steps per second."""
    m = KERAS_RE.match(text)
    if m is None:
        return None
    per = float(m["per"]) * PER_STEP_S[m["unit"]]
    return {"step": int(m["n"]), "total": int(m["total"]), "elapsed_s": float(m["elapsed"]),
            "rate": 1.0 / per if per > 0 else None, "desc": "keras"}


PARSERS: tuple[LineParser, ...] = (
    LineParser(
        "tqdm",
        "progress",
        ("%|", "%\\|", "s/it]", "it/s]"),
        parse_tqdm,
        example="Train: 0%| | 21/6336 [08:49<44:58:38, 25.64s/it]",
    ),
    LineParser(
        "keras_epoch",
        "progress",
        ("/step",),
        parse_keras,
        # sleap-ai/sleap#2230
        example="1490/1490 - 106s - loss: 1.9500e-05 - val_loss: 2.0626e-05 - lr: 1.0000e-04 - "
        "106s/epoch - 71ms/step",
    ),
)
