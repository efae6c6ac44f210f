"""Metric exports into the ``iterations`` table (a whole-file loader, in ``FILE_LOADERS``).

Formats, each recognised by its extension and its header (so an unrelated CSV or JSON is left
to the text reader):

- TensorBoard scalar CSV, one tag per file, as the scalars dashboard downloads it: header
  ``Wall time,Step,Value`` (``tensorboard/plugins/scalar/scalars_plugin.py`` writes exactly
  that row); the tag comes from the file name, ``run-<run>-tag-<tag>.csv`` (``/`` in the tag
  written as ``_``), else the file's stem.
- W&B history exports as CSV or JSONL (``run.history()``, ``wandb-history.jsonl``): ``_step``,
  ``_runtime``, ``_timestamp`` plus the logged keys (``train/loss``, ``train/grad_norm``,
  ``lr``, …). A W&B panel's "Export CSV" names columns ``<run> - <key>`` with ``__MIN`` /
  ``__MAX`` companions; the run name is dropped and the companions ignored.
- HF Trainer ``trainer_state.json``: ``log_history`` entries that carry ``loss`` (training
  logs; eval and end-of-run summary entries are skipped).
- Lightning ``CSVLogger`` ``metrics.csv`` (``step`` + ``train_loss``/``train_loss_step``).
- Keras ``CSVLogger`` (``epoch,loss,…`` rows), also under a log's name (its documentation's
  ``CSVLogger('training.log')``): a file of another extension is read as a CSV when its first
  line is a header of names with a step or epoch column and a metric, and every whole line of
  its head a row of as many numbers (or the header again).

Column names map by the tables below (exact names, lower-cased; no prefix guessing, so
``train/train_loss`` — the HF end-of-run average — is never read as a per-step loss).
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .base import FileLoader, Row, to_float

MAX_METRICS_BYTES = 1024 * 1024 * 1024
EXTENSIONS = (".csv", ".jsonl", ".json")
HEAD_BYTES = 4096  # what the loader hands to ``sniff``
TB_HEADER = ["wall time", "step", "value"]
TB_TAG_MARK = "-tag-"
JSON_KEY_RE = re.compile(r'"([^"\\]{1,200})"\s*:')
# a CSV header cell that is a name ("val_loss", "train/loss", "lr-adam") and a data cell that is
# a number (or empty, or Keras' "nan"/"inf")
CSV_NAME_RE = re.compile(r"^[A-Za-z_][\w/.\- ]{0,80}$")
CSV_NUMBER_RE = re.compile(r"^(?:[-+]?(?:\d++\.?\d*+|\.\d++)(?:[eE][-+]?\d++)?|[-+]?(?:nan|inf|NaN|Inf)|)$")

# Step columns, best first: W&B's ``_step`` counts log calls, so a trainer's own global step wins.
STEP_NAMES: tuple[str, ...] = (
    "iteration", "iterations", "global_step", "train/global_step", "trainer/global_step",
    "step", "steps", "_step",
)
# a per-epoch CSV with no step column: the epoch is its only counter, one row a point
# (Sagar063/week9_ERAV4_ImageNet_ResNet-50_Model_Experiments train_log.csv:
# "epoch,phase,loss,top1,top5,lr,imgs_per_sec"; timm's summary.csv "epoch,train_loss,…");
# not in JSON records, where a fractional epoch sits beside a step of another name (LLaMA-Factory's
# trainer_log.jsonl "current_steps"), left to the text reader
EPOCH_STEP = "epoch"

# metric name (lower case) -> iterations column. TensorBoard tags of Megatron's
# ``training_log`` (``lm loss``, ``grad-norm``, ``learning-rate``, ``loss-scale``, ``batch-size``)
# and the keys HF Trainer, W&B and Lightning users log.
METRIC_NAMES: dict[str, str] = {
    # loss
    "loss": "loss", "lm loss": "loss", "lm_loss": "loss", "lm-loss": "loss",
    "train/loss": "loss", "train/lm_loss": "loss", "train/lm loss": "loss",
    "train_loss": "loss", "train_loss_step": "loss", "training_loss": "loss",
    "loss/train": "loss", "train/loss_step": "loss",
    "main/loss": "loss",  # chainer's LogReport (the optimizer's target is "main")
    # grad norm
    "grad_norm": "grad_norm", "grad-norm": "grad_norm", "gradnorm": "grad_norm",
    "grad norm": "grad_norm", "train/grad_norm": "grad_norm", "train/grad-norm": "grad_norm",
    "grad_norm/total": "grad_norm", "train/gradient_norm": "grad_norm",
    # learning rate
    "lr": "lr", "learning_rate": "lr", "learning-rate": "lr", "learning rate": "lr",
    "train/learning_rate": "lr", "train/lr": "lr", "lr-adamw": "lr", "lr-adam": "lr",
    "lr-sgd": "lr",
    # fp16 loss scale
    "loss_scale": "loss_scale", "loss-scale": "loss_scale", "loss scale": "loss_scale",
    "train/loss_scale": "loss_scale", "train/loss-scale": "loss_scale",
    # data consumed
    "consumed_samples": "consumed_samples", "consumed-samples": "consumed_samples",
    "train/consumed_samples": "consumed_samples", "samples": "consumed_samples",
    "consumed_tokens": "consumed_tokens", "consumed-tokens": "consumed_tokens",
    "train/consumed_tokens": "consumed_tokens", "num_input_tokens_seen": "consumed_tokens",
    "train/num_input_tokens_seen": "consumed_tokens", "tokens": "consumed_tokens",
    # batch, skipped / nan counters
    "batch-size": "global_batch_size", "global_batch_size": "global_batch_size",
    "train/global_batch_size": "global_batch_size",
    "skipped_iterations": "skipped", "train/skipped_iterations": "skipped",
    "nan_iterations": "nan", "train/nan_iterations": "nan",
    # rates a per-epoch CSV states
    "imgs_per_sec": "samples_per_s", "images_per_sec": "samples_per_s",
    "img_per_sec": "samples_per_s", "imgs/s": "samples_per_s", "images/s": "samples_per_s",
    "samples_per_sec": "samples_per_s", "samples/s": "samples_per_s",
    "samples/sec": "samples_per_s", "tokens_per_sec": "tokens_per_s",
    "tokens/s": "tokens_per_s", "tokens/sec": "tokens_per_s",
}
# a column naming the phase a row reports (train or an evaluation), and its evaluation values:
# an evaluation row's loss is an eval loss and its rates no training rate
PHASE_NAMES = ("phase", "split", "mode", "stage")
EVAL_PHASES = frozenset(("val", "valid", "validation", "eval", "evaluation", "test", "dev"))
# TensorBoard's download writes a tag's "/" as "_": compare with every "_" read as "/".
TB_NAMES: dict[str, str] = {k.replace("_", "/"): v for k, v in METRIC_NAMES.items()}
TIME_NAMES = ("_timestamp", "wall time", "timestamp")
INT_COLUMNS = {"consumed_samples", "consumed_tokens", "global_batch_size", "skipped", "nan"}
# HF trainer_state.json log_history keys -> column
HF_KEYS = {"loss": "loss", "grad_norm": "grad_norm", "learning_rate": "lr",
           "num_input_tokens_seen": "consumed_tokens"}


def _key(name: str) -> str:
    """A column name as the tables spell it: W&B panel exports' ``<run> - `` dropped."""
    name = name.strip().strip('"').lower()
    if " - " in name:
        name = name.rsplit(" - ", 1)[1]
    return name


def _value(v: Any) -> float | None:
    """A number from a CSV cell or JSON value (nan/inf kept; empty, text, bool: None)."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    s = str(v).strip()
    low = s.lower()
    if low in ("infinity", "+infinity"):
        return math.inf
    if low == "-infinity":
        return -math.inf
    return to_float(s) if s else None


def _when(v: Any) -> datetime | None:
    f = _value(v)
    if f is None or not math.isfinite(f) or f <= 0 or f > 1e11:
        return None
    return datetime.fromtimestamp(f, tz=UTC).replace(tzinfo=None)


def tag_from_name(path: Path) -> str:
    """The TensorBoard tag a downloaded CSV holds: ``run-.-tag-lm loss.csv`` -> ``lm loss``."""
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    return stem.split(TB_TAG_MARK, 1)[1] if TB_TAG_MARK in stem else stem


def _tb_column(path: Path) -> str | None:
    """The column a TensorBoard tag fills (the download wrote its ``/`` as ``_``)."""
    tag = tag_from_name(path).lower()
    return METRIC_NAMES.get(tag) or TB_NAMES.get(tag.replace("_", "/"))


class _Columns:
    """Which header cell holds the step, the time and each metric."""

    def __init__(self, header: Iterable[str], by_epoch: bool = False) -> None:
        names = [_key(h) for h in header]
        self.steps = [i for s in STEP_NAMES for i, n in enumerate(names) if n == s]
        if by_epoch and not self.steps:
            self.steps = [i for i, n in enumerate(names) if n == EPOCH_STEP][:1]
        self.time = next((i for t in TIME_NAMES for i, n in enumerate(names) if n == t), None)
        self.phase = next((i for p in PHASE_NAMES for i, n in enumerate(names) if n == p), None)
        self.by_epoch = bool(self.steps) and names[self.steps[0]] == EPOCH_STEP
        self.metrics: list[tuple[int, str]] = []
        taken: set[str] = set()
        for i, n in enumerate(names):
            col = METRIC_NAMES.get(n)
            if col is not None and col not in taken and not n.endswith(("__min", "__max")):
                self.metrics.append((i, col))
                taken.add(col)

    @property
    def usable(self) -> bool:
        return bool(self.steps) and bool(self.metrics)

    def row(self, cells: list[str] | dict[str, Any]) -> Row | None:
        get = (lambda i: cells[i] if i < len(cells) else None) if isinstance(cells, list) else (
            lambda i: cells.get(i))
        step = None
        for i in self.steps:
            f = _value(get(i))
            if f is not None and math.isfinite(f):
                step = int(f) if f == int(f) or not self.by_epoch else None
                break
        if step is None or step < 0:
            return None  # an evaluation before training (epoch -1) is no step
        row: Row = {}
        for i, col in self.metrics:
            f = _value(get(i))
            if f is None:
                continue
            if col in INT_COLUMNS:
                if not math.isfinite(f):
                    continue
                row[col] = int(f)
            else:
                row[col] = f
        if self.phase is not None and str(get(self.phase) or "").strip().lower() in EVAL_PHASES:
            if row.get("loss") is None:
                return None
            row = {"eval_loss": row["loss"], "event": "eval"}
        if not row:
            return None  # a sparse history row holding other keys (eval, system metrics)
        _flag_nan(row)
        row["iteration"] = step
        if self.by_epoch:
            row["epoch"] = float(step)
            row.setdefault("event", "epoch")
        if self.time is not None:
            row["time"] = _when(get(self.time))
        return row


def _flag_nan(row: Row) -> None:
    """A NaN/inf loss or grad norm counts as a NaN iteration (the nullable table would keep a
    NaN only as <NA>, indistinguishable from "not logged")."""
    if "nan" not in row and any(
            isinstance(row.get(c), float) and not math.isfinite(row[c])
            for c in ("loss", "grad_norm")):
        row["nan"] = 1


def _head_text(head: bytes) -> str:
    return head.decode("utf-8", errors="replace").lstrip("\ufeff")


def _first_line(head: bytes) -> str:
    return _head_text(head).splitlines()[0] if head.strip() else ""


def _csv_cells(line: str) -> list[str]:
    try:
        return next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return []


def _csv_under_log_name(head: bytes) -> bool:
    """A metrics CSV saved under a log's name: Keras' ``CSVLogger('training.log')`` (its
    documentation's own example; irfanet's ``training_logs191017_5.log``, "epoch,acc,loss,
    val_acc,val_loss" then one numeric row an epoch). The header is names only, with a step
    or epoch column and a metric column, and every whole line of the head as many numbers (or
    the header again)."""
    lines = _head_text(head).splitlines()
    if len(lines) < 2:
        return False
    header = [c.strip() for c in _csv_cells(lines[0])]
    if len(header) < 2:
        return False
    if not all(CSV_NAME_RE.match(c) for c in header):
        return False
    # every whole line of the head a row of numbers (or the header again: appended runs)
    whole = lines[1:-1] if not head.endswith(b"\n") else lines[1:]
    for line in whole or lines[1:2]:
        cells = [c.strip() for c in _csv_cells(line)]
        if cells != header and (len(cells) != len(header)
                                or not all(CSV_NUMBER_RE.match(c) for c in cells)):
            return False
    return _Columns([c.lower() for c in header], by_epoch=True).usable


def looks_like_metrics(path: Path, head: bytes) -> bool:
    """True for a metrics export, by extension and header (not for any CSV or JSON); a
    metrics CSV under another extension (``CSVLogger('training.log')``) by its first rows."""
    suffix = path.suffix.lower()
    if not head.strip():
        return False
    if suffix not in EXTENSIONS:
        return _csv_under_log_name(head)
    if suffix == ".csv":
        header = [c.strip().lower() for c in _csv_cells(_first_line(head))]
        return header == TB_HEADER or _Columns(header, by_epoch=True).usable
    text = _head_text(head).lstrip()
    if suffix == ".json" and text.startswith("{"):
        return '"log_history"' in text
    first = text.split("\n", 1)[0] if suffix == ".jsonl" else text
    keys = {_key(k) for k in _json_keys(first)}
    cut = "\n" not in text and len(head) >= HEAD_BYTES  # a wide first record, cut by the head
    return bool(keys & set(STEP_NAMES)) and (bool(keys & set(METRIC_NAMES)) or cut)


def _json_keys(text: str) -> list[str]:
    """Keys of the first JSON object in ``text``, even when ``text`` is cut short."""
    start = text.find("{")
    return JSON_KEY_RE.findall(text[start:]) if start >= 0 else []


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of a text file, the BOM dropped."""
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as fh:
        for n, raw in enumerate(fh, 1):
            yield n, raw.rstrip("\r\n")


def _check_size(path: Path) -> None:
    size = path.stat().st_size
    if size > MAX_METRICS_BYTES:
        raise ValueError(f"{size} bytes is larger than the {MAX_METRICS_BYTES} byte cap")


def load_csv(path: Path) -> list[tuple[str, Row]]:
    """A TensorBoard scalar CSV or a W&B/Lightning history CSV as ``iterations`` rows."""
    _check_size(path)
    out: list[tuple[str, Row]] = []
    lines = _lines(path)
    first = next(lines, None)
    if first is None:
        raise ValueError("empty file")
    header = _csv_cells(first[1])
    if [c.strip().lower() for c in header] == TB_HEADER:
        column = _tb_column(path)
        if column is None:
            raise ValueError(f"TensorBoard scalar export of tag {tag_from_name(path)!r} (from the "
                             "file name): not a metric the iterations table keeps")
        cols = _Columns(["wall time", "step", column])
        cols.metrics = [(2, column)]
    else:
        cols = _Columns(header, by_epoch=True)
        if not cols.usable:
            raise ValueError("no step column and metric column in the header")
    for n, text in lines:
        if not text.strip():
            continue
        row = cols.row(_csv_cells(text))
        if row is not None:
            row.update(source=f"{path}:{n}", line=text)
            out.append(("iterations", row))
    return out


def load_jsonl(path: Path) -> list[tuple[str, Row]]:
    """A W&B history JSONL (one JSON object per line) as ``iterations`` rows."""
    _check_size(path)
    out: list[tuple[str, Row]] = []
    bad = 0
    for n, text in _lines(path):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):  # (nested deeper than Python's stack)
            bad += 1
            continue
        if not isinstance(obj, dict):
            continue
        row = _dict_row(obj)
        if row is not None:
            row.update(source=f"{path}:{n}", line=text)
            out.append(("iterations", row))
    if not out and bad:
        raise ValueError(f"{bad} line(s) are not JSON")
    return out


def _dict_row(obj: dict[str, Any]) -> Row | None:
    keys = list(obj)
    cols = _Columns(keys)
    return cols.row({i: obj[k] for i, k in enumerate(keys)}) if cols.usable else None


def complete_records(text: str) -> list[Any]:
    """The whole records of a JSON list cut short (a paste or a file that stops mid-record,
    chainer's ``log`` of a run still going): every object before the cut; [] for anything else."""
    body = text.lstrip().removeprefix("\ufeff")
    if not body.startswith("["):
        return []
    dec, out, i = json.JSONDecoder(), [], 1
    while True:
        while i < len(body) and body[i] in " \t\r\n,":
            i += 1
        if i >= len(body) or body[i] != "{":
            return out
        try:
            obj, i = dec.raw_decode(body, i)
        except (ValueError, RecursionError):
            return out + _cut_record(body[i:])
        out.append(obj)


def _cut_record(rest: str) -> list[Any]:
    """The last record of a cut list, its whole fields only (``{"iteration": 3000, "lr": …``
    up to the last comma before the cut), as a one-item list; [] when that does not parse."""
    end = len(rest)
    for _ in range(3):
        end = rest.rfind(",", 0, end)
        if end <= 0:
            return []
        try:
            obj = json.loads(rest[:end] + "}")
        except (ValueError, RecursionError):
            continue
        return [obj] if isinstance(obj, dict) and obj else []
    return []


def load_json(path: Path) -> list[tuple[str, Row]]:
    """HF Trainer ``trainer_state.json`` (``log_history``) or a JSON list of history records."""
    _check_size(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        doc = json.loads(text)
    except ValueError as e:
        doc = complete_records(text)
        if not doc:
            raise ValueError(f"not valid JSON ({e})") from None
    except RecursionError:
        raise ValueError("JSON nested too deep to read") from None
    out: list[tuple[str, Row]] = []
    if isinstance(doc, dict) and isinstance(doc.get("log_history"), list):
        for i, entry in enumerate(doc["log_history"]):
            if not isinstance(entry, dict) or "step" not in entry:
                continue
            step = _value(entry.get("step"))
            if step is None or not math.isfinite(step):
                continue
            if "loss" not in entry:  # an evaluation (its loss and its own rate: an eval row,
                # ``diagnose.throughput.series.eval_rates``), else the end-of-run summary
                if "eval_loss" in entry or "eval_runtime" in entry:
                    ev: Row = {"iteration": int(step), "event": "eval",
                               "eval_loss": _value(entry.get("eval_loss")),
                               "samples_per_s": _value(entry.get("eval_samples_per_second"))}
                    ev.update(source=f"{path}#log_history[{i}]", line=json.dumps(entry))
                    out.append(("iterations", ev))
                continue
            row: Row = {"iteration": int(step)}
            for k, col in HF_KEYS.items():
                f = _value(entry.get(k))
                if f is not None:
                    row[col] = int(f) if col in INT_COLUMNS and math.isfinite(f) else f
            _flag_nan(row)
            row.update(source=f"{path}#log_history[{i}]", line=json.dumps(entry))
            out.append(("iterations", row))
        return out
    if isinstance(doc, list):
        for i, obj in enumerate(doc):
            if isinstance(obj, dict):
                row = _dict_row(obj)
                if row is not None:
                    row.update(source=f"{path}#[{i}]", line=json.dumps(obj))
                    out.append(("iterations", row))
        return out
    raise ValueError("neither a trainer_state.json (log_history) nor a list of history records")


def load_metrics(path: Path) -> list[tuple[str, Row]]:
    """Dispatch on the extension; ValueError with a reason when the file cannot be used."""
    suffix = path.suffix.lower()
    if suffix == ".csv" or suffix not in EXTENSIONS:
        return load_csv(path)
    if suffix == ".jsonl":
        return load_jsonl(path)
    return load_json(path)


LOADER = FileLoader("metrics export", looks_like_metrics, load_metrics)
