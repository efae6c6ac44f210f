"""Helpers every diagnosis shares: one meaning each."""

from __future__ import annotations

import numpy as np
import pandas as pd

from traindoc.diagnose.common import as_float, as_int, as_str, count, when_text, who


def test_who_writes_ranks_as_people_do() -> None:
    assert who([3]) == "rank 3"
    assert who([5, 0, 1, 2, 2]) == "ranks 0-2, 5"
    assert who([], cap=True) == "A rank (no rank tag)"
    assert who(pd.Series([4, pd.NA, 6], dtype="Int64"), cap=True) == "Ranks 4, 6"
    assert "[" not in who([0, 1, 3])


def test_na_aware_conversions() -> None:
    assert as_int(pd.NA) is None and as_int(np.nan) is None and as_int("x") is None
    assert as_int(np.int64(5)) == 5 and as_int(3.9) == 3
    assert as_float("1.5") == 1.5 and as_float(None) is None
    assert as_str(np.nan) is None and as_str(pd.NA) is None and as_str(7) == "7"


def test_one_format_per_quantity_in_sentences() -> None:
    assert when_text("2024-07-08T01:36:12.508213") == "2024-07-08 01:36:12"
    assert when_text(pd.NaT) == ""
    assert count(1, "host") == "1 host" and count(4, "other rank") == "4 other ranks"
