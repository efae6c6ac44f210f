"""pandas keeps "string" columns in Arrow wherever pyarrow is installed (pandas ≥ 3 by default;
most training environments have pyarrow through HF datasets or Ray), and in Python objects
elsewhere. The suite runs under the default (Arrow: pyarrow is a dev dependency, and a Dask
worker or a spawned process takes the default too, so one storage is what a load compares);
these tests read every bundled sample under each storage and want the snapshot's summaries.
Two crashes were found on a GPU machine's image (pandas 3.0.6, pyarrow 25) that the Python
storage alone never showed: a python StringArray concatenated with Arrow ones, and Index.take
over a missing value."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import ROOT
from traindoc import score

SNAPSHOT = ROOT / "tests" / "data" / "summaries.json"


ARRAYS = {"python": "StringArray", "pyarrow": "ArrowStringArray"}


@pytest.mark.slow
@pytest.mark.parametrize("storage", list(ARRAYS))
def test_every_sample_reads_the_same_under_each_string_storage(storage: str) -> None:
    if storage == "pyarrow":
        pytest.importorskip("pyarrow")
    with pd.option_context("mode.string_storage", storage):
        assert type(pd.Series(["a"], dtype="string").array).__name__ == ARRAYS[storage]
        got = score.summaries(ROOT, workers=1, corpus=False)  # (in this process: the option holds)
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    actual = json.loads(json.dumps(got, sort_keys=True, ensure_ascii=False, default=str))
    assert actual, "no samples found"
    changed = sorted(k for k in actual if expected.get(k) != actual[k])
    assert not changed, changed
