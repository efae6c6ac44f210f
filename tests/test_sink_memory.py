"""What keeps a load's memory near the size of its tables (issue 17): rows are held as dicts
only a few thousand at a time, a table's columns hold nothing beyond their own values, and
the parts join without doubling. The tables themselves are those of ``schema.frame``."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd
import pytest

from traindoc.parse.prefixes import Origin
from traindoc.reader import sink
from traindoc.schema import SCHEMAS, frame


def _iteration(i: int) -> dict:
    return {"iteration": i, "total_iterations": 100, "elapsed_s": 2.0 + i, "lr": 1e-4,
            "loss": 3.5, "grad_norm": 0.25, "skipped": 0, "nan": 0,
            "time": datetime(2024, 1, 1, 0, 0, i % 60), "source": f"a.log:{i}",
            "line": f"iteration {i}"}


def test_numeric_columns_own_their_memory() -> None:
    """A column pandas casts without a NaN was a view of the first frame's block of every
    float column: 20 columns' memory held for one, for as long as the table lived."""
    df = frame("iterations", [_iteration(i) for i in range(1000)])
    numeric = [c for c, d in SCHEMAS["iterations"].items() if d in ("Int64", "Float64")]
    arrays = [df[c].array._data for c in numeric]  # (a masked array's values)
    for a in arrays:
        assert a.base is None or a.base.nbytes <= a.nbytes
    for i, a in enumerate(arrays):
        assert not any(np.shares_memory(a, b) for b in arrays[i + 1:])


def test_equal_strings_are_one_object_and_the_column_is_unchanged() -> None:
    rows = [{"path": "/ckpt/" + str(i % 2) * 3, "kind": "saved" if i % 3 else None,
             "source": f"a.log:{i}", "line": f"saved {i}"} for i in range(300)]
    df = frame("checkpoints", rows)
    expected = pd.Series([r["path"] for r in rows], dtype="string", name="path")
    pd.testing.assert_series_equal(df["path"], expected)
    pd.testing.assert_series_equal(
        df["kind"], pd.Series([r["kind"] for r in rows], dtype="string", name="kind"))
    assert df["kind"].isna().sum() == 100
    if df["path"].dtype.storage == "python":  # (pyarrow strings hold no Python objects)
        assert len({id(v) for v in df["path"].array}) == 2
        assert len({id(v) for v in df["source"].array}) == 300  # text that differs per row: as is


def test_rows_kept_as_dicts_are_bounded_across_tables(monkeypatch) -> None:
    monkeypatch.setattr(sink, "FLUSH_ROWS", 10)
    s = sink.Sink()
    origin = Origin()
    kept = []
    for i in range(95):
        table = "iterations" if i % 3 else "checkpoints"
        row = _iteration(i) if table == "iterations" else {"kind": "saved", "iteration": i}
        s.add(table, row, ("a.log", i + 1, origin, None), f"line {i}")
        kept.append(sum(len(r) for r in s.rows.values()))
    assert max(kept) < 10 and s.kept == kept[-1]
    tables = s.tables()
    assert len(tables["iterations"]) == 63 and len(tables["checkpoints"]) == 32
    assert tables["checkpoints"]["source"].tolist() == [f"a.log:{i + 1}" for i in range(0, 95, 3)]


def test_parts_join_as_pd_concat_does() -> None:
    parts = [frame("iterations", [_iteration(i) for i in range(k, k + 50)])
             for k in range(0, 200, 50)]
    expected = pd.concat(parts, ignore_index=True)
    got = sink._concat(parts)
    assert parts == []
    pd.testing.assert_frame_equal(got, expected)
    sink._release()  # (nothing to give back is no error, glibc or not)


@pytest.mark.parametrize("storage", ["python", "pyarrow"])
def test_a_missing_string_stays_missing_when_equal_ones_are_shared(storage: str) -> None:
    # pandas 3.0 with pyarrow strings (an H200 machine's torch image) raised ArrowIndexError
    # here, and Index.take may read -1 as "the last value": a missing path must stay missing
    if storage == "pyarrow":
        pytest.importorskip("pyarrow")
    with pd.option_context("mode.string_storage", storage):
        rows = [{"path": p, "iteration": i} for i, p in enumerate(["a", None, "a", "b", None])]
        df = frame("checkpoints", rows)
    assert df["path"].isna().tolist() == [False, True, False, False, True]
    assert df["path"].dropna().tolist() == ["a", "a", "b"]
