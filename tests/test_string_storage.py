"""pandas keeps "string" columns in Arrow wherever pyarrow is installed (pandas ≥ 3 by default;
most training environments have pyarrow through HF datasets or Ray), and in Python objects
elsewhere. The suite runs under the Python storage (conftest); these tests read every bundled
sample again under the Arrow one and want the same summaries. Two crashes were found that way
on a GPU machine's image (pandas 3.0.6, pyarrow 25): a python StringArray concatenated with
Arrow ones, and Index.take over a missing value."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from conftest import ROOT
from traindoc import score

SNAPSHOT = ROOT / "tests" / "data" / "summaries.json"


@pytest.mark.slow
def test_every_sample_reads_the_same_with_arrow_strings() -> None:
    pytest.importorskip("pyarrow")
    with pd.option_context("mode.string_storage", "pyarrow"):
        assert pd.Series(["a"], dtype="string").array.__class__.__name__ == "ArrowStringArray"
        got = score.summaries(ROOT, workers=1, corpus=False)  # (in this process: the option holds)
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    actual = json.loads(json.dumps(got, sort_keys=True, ensure_ascii=False, default=str))
    assert actual, "no samples found"
    changed = sorted(k for k in actual if expected.get(k) != actual[k])
    assert not changed, changed
