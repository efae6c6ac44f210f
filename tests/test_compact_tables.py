"""A column a table never fills holds no per-row storage (issue 29, item 2): it reads as the
same dtype and the same <NA>/NaT values as a column built from the rows, and a write into it
copies it first."""

from __future__ import annotations

import pickle
from datetime import datetime

import numpy as np
import pandas as pd
import pytest

from traindoc.reader import sink
from traindoc.schema import SCHEMAS, TABLES, compact, copies_on_write, frame, missing


def _rows(n: int) -> list[dict]:
    return [{"iteration": i, "loss": 2.5, "time": datetime(2024, 1, 1, 0, 0, i % 60),
             "source": f"a.log:{i}", "line": f"iteration {i}"} for i in range(n)]


def _storage(col: pd.Series) -> int:
    """The bytes ``col``'s buffers hold (a view of one value: its item's)."""
    arr = col.array
    if hasattr(arr, "_pa_array"):
        bufs = {b.address: b.size for ch in arr._pa_array.chunks for b in ch.buffers() if b}
        return sum(bufs.values())
    held = 0
    for name in ("_data", "_mask", "_ndarray"):
        d = getattr(arr, name, None)
        if isinstance(d, np.ndarray):
            held += d.itemsize if d.strides == (0,) else d.nbytes
    return held


@pytest.mark.parametrize("table", TABLES)
def test_an_empty_column_reads_as_the_column_built_from_rows(table: str) -> None:
    n = 40000  # (more than one Arrow chunk of nulls)
    got = frame(table, [{"source": f"a.log:{i}", "line": "x"} for i in range(n)])
    for col in SCHEMAS[table]:
        if col in ("source", "line", "file", "lineno"):  # (the iterations table's source)
            continue
        made = missing(got[col].dtype, n)
        if made is None:  # (object columns keep their Nones)
            continue
        built = pd.Series([None] * n, dtype=got[col].dtype) if got[col].dtype.kind != "M" \
            else pd.Series(np.full(n, np.datetime64("NaT"), dtype=got[col].dtype))
        pd.testing.assert_series_equal(made, built, check_names=False)
        pd.testing.assert_series_equal(got[col], built, check_names=False)
        # no per-row storage: a value, or one chunk of 16,384 nulls that a string column repeats
        assert _storage(got[col]) <= 9 * 16384 < 9 * n, col
    again = pickle.loads(pickle.dumps(got))  # (what a worker process hands back)
    pd.testing.assert_frame_equal(again, got)


def test_filled_columns_are_untouched_and_a_write_copies() -> None:
    df = frame("iterations", _rows(1000))
    assert _storage(df["iteration"]) >= 8 * 1000
    if copies_on_write():  # (pandas 2 without copy-on-write keeps numeric columns whole)
        assert _storage(df["lr"]) < 1000
    other = df.copy(deep=False)
    other.loc[other["iteration"] < 3, "lr"] = 0.5
    assert other["lr"].head(4).tolist() == [0.5, 0.5, 0.5, pd.NA]
    if copies_on_write():  # (a shallow copy shares its columns in pandas 2)
        assert df["lr"].isna().all()  # (the table itself unchanged)
    df.loc[df["iteration"] < 2, "host"] = "node-1"
    assert df["host"].head(3).tolist() == ["node-1", "node-1", pd.NA]
    assert df["host"].fillna("").iloc[2] == ""


def test_joined_parts_keep_an_empty_column_empty() -> None:
    parts = [frame("iterations", _rows(700)) for _ in range(3)]
    want = pd.concat(parts, ignore_index=True)
    got = sink._concat(list(parts))
    pd.testing.assert_frame_equal(got, want)
    if copies_on_write():
        assert _storage(got["eval_loss"]) < 100
    assert _storage(got["iteration"]) >= 8 * 2100
    # a part that fills the column: the column is joined as before
    filled = frame("iterations", [{**r, "eval_loss": 1.0} for r in _rows(5)])
    got = sink._concat([frame("iterations", _rows(7)), filled])
    assert got["eval_loss"].tolist() == [pd.NA] * 7 + [1.0] * 5


def test_compact_leaves_a_one_row_frame_and_a_filled_frame_alone() -> None:
    one = frame("iterations", _rows(1))
    assert compact(one) is one
    full = pd.DataFrame({"a": pd.array([1, 2], dtype="Int64")})
    assert compact(full) is full


def test_cumulative_functions_read_an_empty_column() -> None:
    """pandas' masked cumsum/cummax write their fill value into the values under the mask."""
    df = frame("iterations", _rows(50))
    for op in ("cumsum", "cummax", "cummin", "cumprod"):
        assert getattr(df["lr"], op)().isna().all()
        assert getattr(df["skipped"], op)().isna().all()
    assert df["lr"].isna().all() and df["lr"].fillna(0.0).sum() == 0.0
