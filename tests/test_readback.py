"""The iterations table keeps its source as ``file`` and ``lineno`` (issue 29, item 2): the
``source`` text made from them, and each row's text read back from its file
(``Incident.text(rows, reread=True)``, ``reader.readback``) equal to the ``line`` the load gave."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

import traindoc
from traindoc.schema import frame, same_files, sources, split_place, with_source

ROOT = Path(__file__).resolve().parents[1]
# BLOOM's 176B run, a Megatron-DeepSpeed train line behind torchrun's prefix (the same line
# as tests/test_iterations.py's BLOOM)
BLOOM = ("[default7]: iteration 42783/ 115311 | consumed samples: 71461808 | consumed tokens: "
         "146353782784 | elapsed time per iteration (s): 110.17 | learning rate: 4.475E-05 | "
         "global batch size: 2048 | lm loss: 2.124820E+00 | grad norm: 0.135 | num zeros: 0.0 | "
         "number of skipped iterations: 0 | number of nan iterations: 0 | samples per second: "
         "18.589 | TFLOPs: 142.32 |")
SAMPLES = sorted(p for p in (ROOT / "data").glob("*/*") if p.is_dir() and p.parent.name != "corpus")


def _megatron(i: int, rank: int = 7) -> str:
    return BLOOM.replace("42783", str(i)).replace("default7", f"default{rank}")


def _reread_equals_line(inc: traindoc.Incident) -> None:
    it = inc.iterations
    got = inc.text(it, reread=True)
    # a place with several rows (a parser's rows of one line) reads back its first text
    first = it.groupby([it["file"].astype(object), it["lineno"].astype(object)], dropna=False,
                       sort=False)["line"].transform("first")
    pd.testing.assert_series_equal(got, first.astype("string"), check_names=False)


def test_the_source_is_a_file_and_a_line_number() -> None:
    df = frame("iterations", [{"iteration": 1, "source": "a.log:3", "line": "x"},
                              {"iteration": 2, "source": "logs/b:c.log:10", "line": "y"},
                              {"iteration": 3, "source": "trainer_state.json#log_history[3]"}])
    assert isinstance(df["file"].dtype, pd.CategoricalDtype)
    assert list(df["lineno"]) == [3, 10, pd.NA]
    assert list(sources(df)) == ["a.log:3", "logs/b:c.log:10", "trainer_state.json#log_history[3]"]
    assert list(with_source(df)["source"]) == list(sources(df))
    assert "file" not in with_source(df) and "source" not in df
    assert split_place("x.log:007") == ("x.log:007", None)  # (no number made again the same)


def test_parts_on_other_files_join_categorical() -> None:
    a = frame("iterations", [{"iteration": 1, "source": "a.log:1"}, {"iteration": 2, "source": "a.log:2"}])
    b = frame("iterations", [{"iteration": 3, "source": "b.log:1"}, {"iteration": 4, "source": "b.log:2"}])
    joined = pd.concat(same_files([a, b]), ignore_index=True)
    assert isinstance(joined["file"].dtype, pd.CategoricalDtype)
    assert list(sources(joined)) == ["a.log:1", "a.log:2", "b.log:1", "b.log:2"]


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_a_loaded_files_rows_read_back_as_their_lines(tmp_path: Path, engine: str) -> None:
    lines = ["starting"] + [_megatron(i, i % 2) for i in range(1, 400)]
    lines[100] = "\x1b[32m" + lines[100] + "\x1b[0m"  # (ANSI colour: the text is without it)
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    inc = traindoc.load(tmp_path / "train.log", engine=engine)
    assert len(inc.iterations) == 399
    assert sources(inc.iterations).iloc[0] == f"{tmp_path / 'train.log'}:2"
    _reread_equals_line(inc)


def test_gzip_and_wrapped_lines_read_back(tmp_path: Path) -> None:
    # a terminal wrapped the line at a fixed column (the reader rejoins it)
    wrapped = _megatron(9)
    text = "\n".join([_megatron(8), wrapped[:90], wrapped[90:], _megatron(10)]) + "\n"
    with gzip.open(tmp_path / "train.log.gz", "wt") as fh:
        fh.write(text)
    inc = traindoc.load(tmp_path / "train.log.gz")
    assert list(inc.iterations["iteration"]) == [8, 9, 10]
    assert inc.iterations["line"].iloc[1].replace(" ", "") == wrapped.split(": ", 1)[1].replace(" ", "")
    _reread_equals_line(inc)


@pytest.mark.parametrize("case", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_samples_rows_read_back_as_their_lines(case: Path) -> None:
    logs = case / "logs" if (case / "logs").is_dir() else case
    inc = traindoc.load(logs)
    if not len(inc.iterations):
        pytest.skip("no iterations rows")
    _reread_equals_line(inc)


def test_a_file_changed_since_the_load_reads_nothing(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text(f"{_megatron(1)}\n{_megatron(2)}\n")
    inc = traindoc.load(path)
    path.write_text("nothing here\n")
    assert inc.text(inc.iterations, reread=True).isna().all()
    assert list(inc.text(inc.iterations)) == list(inc.iterations["line"])  # (the table's own)


def test_a_metric_exports_rows_read_back_as_their_entries(tmp_path: Path) -> None:
    # Chainer's LogReport ``log`` file, a JSON array of per-interval dicts (chainer/chainercv
    # issue 391): its rows name their entry, not a line (``log.json#[0]``)
    entries = [{"main/loss": 3.2 - i, "epoch": 5 * i, "iteration": 1000 * (i + 1),
                "elapsed_time": 79.2 * (i + 1), "lr": 0.0001} for i in range(3)]
    (tmp_path / "log.json").write_text(json.dumps(entries, indent=4))
    inc = traindoc.load(tmp_path / "log.json")
    assert list(inc.iterations["iteration"]) == [1000, 2000, 3000]
    assert inc.iterations["lineno"].isna().all()
    assert sources(inc.iterations).iloc[0] == f"{tmp_path / 'log.json'}#[0]"
    _reread_equals_line(inc)
