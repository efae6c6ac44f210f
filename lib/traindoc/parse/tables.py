"""Headerless numeric tables of a training run (a whole-file loader) → ``iterations``.

Some trainers and scripts write their progress as bare columns of numbers, one row per logged
step and no header in the excerpt: caffe's ``parse_log.py`` rows (``129995  43777.303355
1.44158244132995605  0.001``: NumIters, Seconds, TrainingLoss, LearningRate), a bare
``print(step, loss)`` (``76930 2.6496577``), timm's ``summary.csv`` pasted without its header
(``209,nan,4.1607955,7.72,24.02``: epoch, train_loss, eval_loss, top1, top5).

A file is such a table when most of its first 4 KiB are rows of two or more numbers (comma or
blank separated) with the same count, whose first column counts up in whole numbers; lines of
``...`` (a poster's elision) are ignored, and a few lines of text between rows are allowed
(``Saving the model``). Its columns are read by position, the only thing a headerless table
has: the first is the iteration; the second is the loss, unless it only grows (then it is a
clock, caffe's Seconds, and the loss is the third). Other columns are not read.

A header row of names as wide as the rows, above them (AWR's "Iteration  Wall_Time  Samples
Train_Return … Critic_Loss … Actor_Loss …"), says what each column is: the loss is the one
column it names the loss (``loss``, ``train_loss``, ``total_loss``), none where it names none
(a critic's and an actor's loss: neither is the run's); positions are not guessed.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from .base import FileLoader, Row

HEAD_ROWS_MIN = 3  # numeric rows the head must hold
NUMERIC_SHARE = 0.75  # of the head's non-blank, non-elision lines
MAX_TABLE_BYTES = 64 * 1024 * 1024
NUMBER = r"[-+]?(?:\d++\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|NaN|inf|-inf)"
ROW_RE = re.compile(rf"^\s*(?P<cells>\d+(?:\s*[,\s]\s*{NUMBER})+)\s*+,?\s*$")
SPLIT_RE = re.compile(r"\s*,\s*|\s+")
ELISION_RE = re.compile(r"^\s*(?:\.\.\.|…)\s*$")
HEADER_NAME_RE = re.compile(r"[A-Za-z_][\w./()%-]*+")
LOSS_NAMES = frozenset(("loss", "trainloss", "trainingloss", "totalloss"))


def _cells(line: str) -> list[str] | None:
    m = ROW_RE.match(line)
    return SPLIT_RE.split(m["cells"].strip()) if m else None


def _rows(lines: list[str]) -> tuple[list[list[str]], int]:
    """The numeric rows among ``lines`` and the count of lines that could have been one."""
    rows, counted = [], 0
    for line in lines:
        if not line.strip() or ELISION_RE.match(line):
            continue
        counted += 1
        cells = _cells(line)
        if cells is not None:
            rows.append(cells)
    return rows, counted


def looks_like_table(path: Path, head: bytes) -> bool:
    """True for a text file whose head is mostly one headerless numeric table with a counting
    first column."""
    text = head.decode("utf-8", errors="replace")
    lines = text.splitlines()
    if len(head) >= 4096 and lines:
        lines = lines[:-1]  # (the last line may be cut by the head)
    rows, counted = _rows(lines)
    if len(rows) < HEAD_ROWS_MIN or len(rows) < NUMERIC_SHARE * counted:
        return False
    if len({len(r) for r in rows}) != 1:
        return False
    first = [int(r[0]) for r in rows]
    return all(b > a for a, b in zip(first, first[1:], strict=False))


def _float(cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        return math.nan


def load_table(path: Path) -> list[tuple[str, Row]]:
    """The table's rows as ``iterations`` rows: iteration and loss (see the module)."""
    if path.stat().st_size > MAX_TABLE_BYTES:
        raise ValueError(f"larger than the {MAX_TABLE_BYTES} byte cap of a numeric table")
    found: list[tuple[int, str, list[str]]] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, raw in enumerate(fh, 1):
            line = raw.rstrip("\r\n")
            cells = _cells(line)
            if cells is not None:
                found.append((n, line, cells))
    if not found:
        raise ValueError("no numeric rows")
    width = min(len(c) for _, _, c in found)
    named = _header_loss(path, found[0][0], width)
    second = [_float(c[1]) for _, _, c in found]
    finite = [v for v in second if math.isfinite(v)]
    clock = width >= 3 and len(finite) >= 2 and all(b >= a for a, b in zip(finite, finite[1:],
                                                                           strict=False))
    col = (2 if clock else 1) if named is False else named
    out: list[tuple[str, Row]] = []
    for n, line, cells in found:
        if col is None:  # a header that names no single loss: the steps alone
            out.append(("iterations", {"iteration": int(cells[0]), "source": f"{path}:{n}",
                                       "line": line}))
            continue
        loss = _float(cells[col]) if col < len(cells) else math.nan
        row: Row = {"iteration": int(cells[0]), "loss": loss, "source": f"{path}:{n}",
                    "line": line}
        if not math.isfinite(loss):
            row["nan"] = 1
        out.append(("iterations", row))
    return out


def _header_loss(path: Path, first_row: int, width: int) -> int | None | bool:
    """The column the header row above the first numeric row names the loss (None: a header
    that names no single loss); False where there is no header as wide as the rows."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        above = [raw.strip() for _, raw in zip(range(first_row - 1), fh, strict=False)]
    head = next((ln for ln in reversed(above) if ln), "")
    names = head.split()
    if len(names) != width or not all(HEADER_NAME_RE.fullmatch(c) for c in names):
        return False
    loss = [i for i, c in enumerate(names) if re.sub(r"[\s_\-]", "", c.lower()) in LOSS_NAMES]
    return loss[0] if len(loss) == 1 and loss[0] > 0 else None


LOADER = FileLoader("numeric table", looks_like_table, load_table)
