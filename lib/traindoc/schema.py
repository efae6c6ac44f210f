"""The fixed table schemas of an Incident (listed in ARCHITECTURE.md, "Tables").

Every table carries ``source`` ("file:lineno" of the evidence) and ``line`` (the log line's
text after prefix demultiplexing and ANSI stripping), so any finding can quote its evidence;
the ``iterations`` table holds its source as ``file`` and ``lineno`` (``sources`` makes the
text).
``rank`` and ``host`` are nullable: a log line without a rank prefix has rank <NA>.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from .linefacts import FACT_COLUMNS, line_facts

# column -> pandas dtype. Nullable dtypes throughout, so a missing value is <NA>, not 0.
SCHEMAS: dict[str, dict[str, str]] = {
    "iterations": {
        "iteration": "Int64",
        "total_iterations": "Int64",
        "consumed_samples": "Int64",
        "consumed_tokens": "Int64",
        "elapsed_s": "Float64",
        # the running mean of the step's time since the start, printed after it (an
        # AverageMeter's "Time 0.427 (2.561)"): far above the printed steps' times, the run
        # stalls between the steps it prints
        "elapsed_mean_s": "Float64",
        # wall seconds of the whole logging interval that ends at this iteration (Pythia's
        # "time(s): 307.7 s" over 100 iterations); the throughput runbook divides it by the gap
        "interval_s": "Float64",
        # training seconds since the run started, as the line states them (modded-nanogpt's
        # "train_time:219627ms"): a clock, not a time per step; the throughput runbook takes
        # the differences between successive step lines
        "train_time_s": "Float64",
        "lr": "Float64",
        "global_batch_size": "Int64",
        "loss": "Float64",
        "grad_norm": "Float64",
        "loss_scale": "Float64",
        "skipped": "Int64",
        "nan": "Int64",
        "samples_per_s": "Float64",
        "tflops": "Float64",
        "tokens_per_s": "Float64",  # whole job
        "tokens_per_s_per_gpu": "Float64",  # per device (torchtitan's tps)
        "mfu": "Float64",  # model FLOPs utilisation, percent
        "epoch": "Float64",  # fractional epoch (HF Trainer), or the epoch of a Lightning bar
        # <NA> for a training step; "eval" (a validation result), "train_summary" (HF's
        # end-of-run averages): such rows are not steps and carry no training loss.
        "event": "string",
        "eval_loss": "Float64",
        # what the analyses ask of the row's text, stated when the row is made
        # (``linefacts.line_facts``; a flag is True or <NA>): the line shows its loss or grad
        # norm as NaN/inf; it says a NaN check stopped the run; it is an HF Trainer dict that
        # names no step (the parser counted it); it is Megatron's train line with its counters
        "nan_text": "boolean",
        "fatal_nan": "boolean",
        "hf_dict": "boolean",
        "megatron_counters": "boolean",
        # the wording of a row counted by its epoch (``event="epoch"``): equal for lines that
        # differ only in their numbers (``linefacts.wording_id``)
        "wording": "Int64",
        # the steps HF's end-of-run summary accounts for (``event="train_summary"``: its
        # runtime x steps per second) and how far off that may be (the rate is rounded)
        "summary_steps": "Float64",
        "summary_steps_err": "Float64",
        "rank": "Int64",
        "host": "string",
        "time": "datetime64[ns]",
        # where the row's line is: its file (one category per file) and line number, in
        # place of the ``source`` text the other tables hold (``sources`` makes it for the
        # rows shown); a row of a metric export keeps its whole source in ``file`` and no
        # ``lineno`` (``trainer_state.json#log_history[3]``)
        "file": "category",
        "lineno": "Int64",
        "line": "string",
    },
    "collectives": {
        "rank": "Int64",
        "host": "string",
        "process_group": "string",
        "seq_num": "Int64",
        "op_type": "string",
        "numel_in": "Int64",
        "numel_out": "Int64",
        "timeout_ms": "Int64",
        "ran_for_ms": "Int64",
        "state": "string",
        "last_enqueued": "Int64",
        "last_completed": "Int64",
        "sizes": "string",
        "dtypes": "string",
        "frames": "object",
        "time": "datetime64[ns]",
        "source": "string",
        "line": "string",
    },
    "errors": {
        "rank": "Int64",
        "local_rank": "Int64",  # the rank on its machine, where the line names only that
        "host": "string",
        "kind": "string",
        "code": "string",
        "message": "string",
        "pid": "Int64",  # the process the line names (Xid pid=, OOM killer, launcher kill)
        # the srun task whose "N: " prefix the line bears where it names its own host (NCCL's
        # "nid001028:129497:129564 [3] … NCCL WARN …"): who wrote it, which the host hides
        "task": "Int64",
        "frames": "object",  # C++ frames of a c10 exception block, innermost first
        "time": "datetime64[ns]",
        "source": "string",
        "line": "string",
    },
    "stacks": {
        "host": "string",
        "pid": "Int64",
        "rank": "Int64",
        "thread": "string",
        "state": "string",
        "frames": "object",
        "leaf": "string",
        "tid": "string",  # the thread id as the dump prints it (py-spy: OS tid; faulthandler: 0x…)
        "cmd": "string",  # the process's command line (py-spy's "Process N: cmd")
        "count": "Int64",  # processes the row stands for in a condensed listing (NA: one)
        "source": "string",
        "line": "string",
    },
    "progress": {
        "step": "Int64",
        "total": "Int64",
        "elapsed_s": "Float64",
        "rate": "Float64",
        "rank": "Int64",
        "host": "string",
        "desc": "string",
        "time": "datetime64[ns]",
        "source": "string",
        "line": "string",
    },
    "exits": {
        "rank": "Int64",
        "local_rank": "Int64",
        # srun's task id ("srun: error: node-a: task 0: Exited …"): the rank when srun starts
        # the ranks itself; under a launcher (torchrun, deepspeed) a task is a node's agent,
        # and ``Incident`` clears the rank
        "task": "Int64",
        "host": "string",
        "pid": "Int64",
        "exitcode": "Int64",
        "signal": "string",
        "root_cause": "boolean",
        # the last line of the worker's error that torchrun's record embeds (its
        # ``traceback :`` field and the lines indented under it), in the record's file: the
        # error lines from the record's own line to this one are that record's rank's
        "traceback_end": "Int64",
        "time": "datetime64[ns]",
        "source": "string",
        "line": "string",
    },
    # Per-host / per-rank timings: benchmark CSVs (one row per host and metric), Megatron's
    # straggler-detector and timer lines, and SLURM node lists (metric "nodelist": ``host``
    # holds the hostlist expression, ``value`` its number of nodes).
    "host_timings": {
        "host": "string",
        "rank": "Int64",
        "metric": "string",
        "value": "Float64",
        "iteration": "Int64",
        "time": "datetime64[ns]",
        "source": "string",
        "line": "string",
    },
    # Checkpoint save/load lines (Megatron, DeepSpeed, HF Trainer, torchtitan, Lightning).
    # kind: save_start | saved | loaded; duration_s when the line states how long a save took.
    "checkpoints": {
        "iteration": "Int64",
        "path": "string",
        "kind": "string",
        "duration_s": "Float64",
        "rank": "Int64",
        "host": "string",
        "time": "datetime64[ns]",
        "source": "string",
        "line": "string",
    },
    # Which process ran where: NCCL's "host:pid:tid [dev] NCCL INFO" init lines. ``comm_rank``
    # is the rank inside communicator ``comm`` (of ``comm_size``), not the global rank; event:
    # init_start | init_complete | comm | affinity | driver | bootstrap; a launcher's or
    # trainer's set-up line naming a rank's machine: ezpz | fairseq.
    "processes": {
        "rank": "Int64",
        "host": "string",
        "pid": "Int64",
        "device": "Int64",
        "comm": "string",
        "comm_rank": "Int64",
        "comm_size": "Int64",
        "event": "string",
        "time": "datetime64[ns]",
        "source": "string",
        "line": "string",
    },
}

TABLES: tuple[str, ...] = tuple(SCHEMAS)

# The ``host`` the reader gives the lines of an ``srun -l`` task ("3: …") when no line names
# the machine: a writer, not a machine (srun's own exit lines say which machine it was).
SYNTHETIC_HOST_PREFIX = "srun-task-"

# Values a parser may put in ``collectives.state``.
# "mismatch": a DETAIL-mode report of what one rank ran; "absent": a rank another rank reports
# never arrived (gloo's monitored barrier).
COLLECTIVE_STATES = ("timed_out", "status", "scheduled", "started", "completed", "failed",
                     "mismatch", "absent")


def empty(table: str) -> pd.DataFrame:
    """An empty DataFrame with the columns and dtypes of ``table`` (a copy of ``_empty``'s:
    most tables of a load are empty, and building one column by column cost more than
    reading a small log)."""
    return _empty(table).copy()


@cache  # (one per table: SCHEMAS is fixed)
def _empty(table: str) -> pd.DataFrame:
    """The empty ``table`` that ``empty`` copies; never handed out itself."""
    schema = SCHEMAS[table]
    df = pd.DataFrame({col: [] for col in schema}, columns=list(schema))
    for col, dtype in schema.items():
        if dtype.startswith("datetime"):
            df[col] = pd.to_datetime(df[col], errors="coerce")
        elif dtype != "object":
            df[col] = df[col].astype(dtype)
    return df


def frame(table: str, rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Build ``table`` from row dicts; missing keys become <NA>, unknown keys are dropped."""
    schema = SCHEMAS[table]
    rows = list(rows)
    if not rows:
        return empty(table)
    # a column no row names is what ``compact`` would make of it, built at once: a format
    # fills a few of a table's columns, and converting the rest cost most of a small load
    named = set().union(*rows) if len(rows) > 1 else set(schema)
    cols: dict[str, Any] = {c: _unnamed(table, c, len(rows)) for c in schema if c not in named}
    # pandas reads a list of dicts in C (twice as quick as a list per column); each column is
    # then made anew, so that nothing keeps that first frame's object block alive
    raw = pd.DataFrame(rows, columns=[c for c in schema if cols.get(c) is None])
    for col, dtype in schema.items():
        if cols.get(col) is None:
            cols[col] = _compacted(_column(col, dtype, rows, raw))
    del raw
    if table == "iterations":
        _state_line_facts(cols, rows)
        cols["file"], cols["lineno"] = _places(rows)
    return pd.DataFrame(cols, columns=list(schema), copy=False)


def _column(col: str, dtype: str, rows: list[Mapping[str, Any]], raw: pd.DataFrame) -> pd.Series:
    """Column ``col`` of ``frame``'s table, of the dtype the schema gives it, from the rows
    (``raw``: pandas' frame of them, which has ``col`` unless it holds Python objects)."""
    if dtype == "object":  # (a missing key is None here, not NaN)
        return pd.Series([r.get(col) for r in rows], dtype=object)
    if dtype == "category":  # (a row dict names the source, not the file: ``_places``)
        return pd.Series(pd.Categorical([r.get(col) for r in rows]))
    if dtype.startswith("datetime"):  # (inferred from the values, as a list is)
        return pd.to_datetime(pd.Series([r.get(col) for r in rows]), errors="coerce")
    if dtype == "string":  # (a string array would keep a view of the object block)
        got = pd.Series(raw[col].to_numpy(dtype=object, copy=True)).astype(dtype)
        return got if col in _UNIQUE_TEXT else _shared(got)
    # (copied: a column pandas casts without a NaN stays a view of raw's 2-D block of every
    # float or int column, which then lives as long as the table)
    return raw[col].astype(dtype).copy()


@cache  # (one per column of a fixed schema)
def _unnamed_dtype(table: str, col: str) -> Any:
    """The dtype ``frame`` gives ``col`` of ``table`` when no row names it."""
    rows: list[Mapping[str, Any]] = [{}, {}]
    return _column(col, SCHEMAS[table][col], rows, pd.DataFrame(rows, columns=[col])).dtype


def _unnamed(table: str, col: str, n: int) -> pd.Series | None:
    """``compact``'s column for ``col`` of ``table`` in ``n`` rows none of which names it, or
    None where ``compact`` would keep the column built from the rows."""
    return missing(_unnamed_dtype(table, col), n) if n >= 2 else None


def _state_line_facts(cols: dict[str, Any], rows: list[Mapping[str, Any]]) -> None:
    """The iterations columns ``linefacts.line_facts`` reads from each row's ``line`` (a row
    without a line keeps what it holds)."""
    facts = [line_facts(r.get("line"), r.get("event")) for r in rows]
    if not any(facts):
        return  # (the columns hold what the rows hold)
    schema = SCHEMAS["iterations"]
    for col in FACT_COLUMNS:
        got = [f.get(col) if isinstance(r.get("line"), str) else r.get(col)
               for f, r in zip(facts, rows, strict=True)]
        cols[col] = _compacted(pd.Series(got, dtype=object).astype(schema[col]))


def _places(rows: list[Mapping[str, Any]]) -> tuple[pd.Series, pd.Series]:
    """The ``file`` and ``lineno`` columns of iterations rows that name their ``source``
    (or, where a row names none, its ``file`` and ``lineno``)."""
    files: list[Any] = []
    linenos: list[Any] = []
    for r in rows:
        src = r.get("source")
        if isinstance(src, str):
            f, n = split_place(src)
        else:
            f, n = r.get("file"), r.get("lineno")
        files.append(f)
        linenos.append(n)
    return (pd.Series(pd.Categorical(files)),
            _compacted(pd.Series(linenos, dtype=object).astype("Int64")))


# a source that names a line: "file:lineno" (the file's name may hold colons)
PLACE_RE = re.compile(r"^(?P<file>.*):(?P<lineno>\d+)$", re.DOTALL)


def split_place(source: str) -> tuple[str, int | None]:
    """The file and line number a ``source`` names (``None``: it names no line number)."""
    m = PLACE_RE.match(source)
    if m is None or (len(m["lineno"]) > 1 and m["lineno"][0] == "0") or len(m["lineno"]) > 18:
        return source, None  # (the text would not be made again from the number)
    return m["file"], int(m["lineno"])


def sources(df: pd.DataFrame) -> pd.Series:
    """The ``source`` text of each row of ``df`` ("file:lineno"): its ``source`` column, or
    made from its ``file`` and ``lineno`` (the iterations table's)."""
    if "source" in df.columns or "file" not in df.columns:
        return df["source"]
    if not len(df):
        return pd.Series([], index=df.index, dtype="string")
    file = df["file"].astype("string")
    lineno = df["lineno"]
    made = file + ":" + lineno.astype("string")
    return made.where(lineno.notna(), file).astype("string")


def with_source(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its ``source`` column (made from ``file`` and ``lineno`` where it holds
    those in its place, before ``line``): what readers that show or compare the text of a
    source take."""
    if "source" in df.columns or "file" not in df.columns:
        return df
    out = df.drop(columns=["file", "lineno"])
    at = list(out.columns).index("line") if "line" in out.columns else len(out.columns)
    out.insert(at, "source", sources(df))
    return out


def same_files(frames: Sequence[pd.DataFrame]) -> list[pd.DataFrame]:
    """``frames`` with their ``file`` columns on one set of categories (sorted), so that
    ``pd.concat`` keeps them categorical (it makes ``object`` of categoricals that differ)."""
    cats = [f["file"].dtype for f in frames if "file" in f.columns
            and isinstance(f["file"].dtype, pd.CategoricalDtype)]
    if len(cats) < 2 or all(c == cats[0] for c in cats):
        return list(frames)
    every = sorted(set().union(*(c.categories for c in cats)))
    out = []
    for f in frames:
        if "file" in f.columns and isinstance(f["file"].dtype, pd.CategoricalDtype):
            f = f.assign(file=f["file"].cat.set_categories(every))
        out.append(f)
    return out


def join_files(cols: Sequence[pd.Series]) -> pd.Series:
    """The ``file`` columns of parts of a table joined, categorical (``same_files``)."""
    every = sorted(set().union(*(c.cat.categories for c in cols)))
    return pd.concat([c.cat.set_categories(every) for c in cols], ignore_index=True)


# rows of one all-missing Arrow string chunk that a missing string column repeats
_MISSING_CHUNK = 16384
# the nullable dtypes of the schemas that keep their values and a mask in numpy arrays
_MASKED = (pd.Int64Dtype, pd.Float64Dtype, pd.BooleanDtype)


def copies_on_write() -> bool:
    """Whether pandas copies a column before a write into it (always from pandas 3; in
    pandas 2 only with ``mode.copy_on_write`` on): without it, a write into a column that
    is a view of one value would raise on the read-only view instead of copying it."""
    return int(pd.__version__.split(".")[0]) >= 3 or pd.options.mode.copy_on_write is True


def missing(dtype: Any, n: int) -> pd.Series | None:
    """A column of ``n`` missing values of ``dtype`` that holds no per-row storage (a
    view of one value, or one Arrow chunk of nulls repeated), or None for a dtype
    it cannot hold so (object, a string column of Python strings; a numpy-backed column
    where pandas does not copy on write). Reads as a column of <NA>/NaT of that dtype; a
    write into it copies it first (Arrow arrays are immutable; pandas copies the others
    before a write where ``copies_on_write``)."""
    if isinstance(dtype, pd.StringDtype):
        if dtype.storage != "pyarrow" or dtype.na_value is not pd.NA:
            return None
        import pyarrow as pa  # (installed wherever pandas keeps strings in Arrow)

        chunk = pa.nulls(min(n, _MISSING_CHUNK), pa.large_string())
        whole, rest = divmod(n, _MISSING_CHUNK)
        chunks = [chunk] * whole + ([chunk.slice(0, rest)] if rest else [])
        arr = pd.arrays.ArrowStringArray(pa.chunked_array(chunks, pa.large_string()))
    elif not copies_on_write():
        return None
    elif isinstance(dtype, _MASKED):
        # the values writable (pandas' cumsum and cummax write their fill into the values
        # under the mask; one element that every row shares, under a mask that hides it),
        # the mask read-only: a write that would show a value raises before it shows
        data = np.lib.stride_tricks.as_strided(np.zeros(1, dtype=dtype.numpy_dtype), (n,), (0,))
        arr = dtype.construct_array_type()(data, np.broadcast_to(np.True_, (n,)), copy=False)
    elif isinstance(dtype, np.dtype) and dtype.kind == "M":
        arr = np.broadcast_to(np.array("NaT", dtype=dtype), (n,))
    else:
        return None
    return pd.Series(arr, copy=False)


def compact(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each column that holds no value at all replaced by ``missing``'s (the
    same dtype and values, no per-row storage): a format fills a few of a table's columns,
    and an empty nullable column otherwise costs 9 bytes a row."""
    if len(df) < 2:
        return df
    given = {col: df[col] for col in df.columns}
    cols = {col: _compacted(c) for col, c in given.items()}
    changed = any(cols[col] is not c for col, c in given.items())
    return pd.DataFrame(cols, columns=df.columns, copy=False) if changed else df


def _compacted(col: pd.Series) -> pd.Series:
    """``col``, or ``missing``'s column in its place where it holds no value at all and is
    two rows or more (``compact`` of one column)."""
    if len(col) < 2 or not col.isna().all():
        return col
    got = missing(col.dtype, len(col))
    return col if got is None else got


# string columns whose values are (nearly) all different: no use looking for equal ones
_UNIQUE_TEXT = frozenset({"source", "line"})


def _shared(col: pd.Series) -> pd.Series:
    """``col`` (a string column) with equal values held by one string object: a parser makes
    a new string per row, and a column of few values ("Epoch 0", a checkpoint's path, a
    state) would otherwise hold one per row (70 bytes each, against the 8 of a reference)."""
    codes, uniques = col.factorize()
    if len(uniques) >= len(col):
        return col
    # the array's take, not the Index's: Index.take treats -1 (a missing value) as "the last
    # unique" unless given a fill value, and pandas 3.0 with pyarrow strings raises on it
    return pd.Series(uniques.array.take(codes, allow_fill=True))
