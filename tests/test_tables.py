"""Headerless numeric tables of step and loss (parse/tables.py), each from its source; and
numeric output that is no such table is left to the text reader."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import traindoc
from traindoc.parse.tables import load_table, looks_like_table

# (file name, text, last iteration, NaN iterations, a (iteration, loss) pair, source)
TABLES = [
    ("train.log",
     "129993  43775.143725  1.1661369800567627   0.001\n"
     "129994  43776.223486  1.34615623950958252  0.001\n"
     "129995  43777.303355  1.44158244132995605  0.001\n",
     129995, [], (129994, 1.34615623950958252), "BVLC/caffe#1445 (parse_log.py rows)"),
    ("train.log",
     "...\n76950 2.596339\n76960 2.735384\n76970 2.6265104\n76980 nan\n76990 nan\n"
     "Saving the model\nLoading from checkpoint\n77000 nan\n77010 nan\n...\n",
     77010, [76980, 76990, 77000, 77010], (76960, 2.735384), "prajdabre/yanmtt#7"),
    ("summary.csv",
     "207,4.37085485458374,4.158743778991699,7.820000009155273,24.019999743652345\n"
     "208,4.367704391479492,4.161868629837036,7.62000002746582,23.86000018310547\n"
     "209,nan,4.160795520019532,7.7200000274658205,24.01999976196289\n"
     "210,nan,nan,1.0,5.0\n",
     210, [209, 210], (208, 4.367704391479492), "yitu-opensource/T2T-ViT#26 (timm summary.csv)"),
]


@pytest.mark.parametrize("name, text, last, nans, pair, source", TABLES,
                         ids=[t[5] for t in TABLES])
def test_headerless_tables(tmp_path: Path, name: str, text: str, last: int, nans: list[int],
                           pair: tuple[int, float], source: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert looks_like_table(path, text.encode()), source
    rows = {r["iteration"]: r for _, r in load_table(path)}
    assert max(rows) == last
    assert sorted(i for i, r in rows.items() if not math.isfinite(r["loss"])) == nans
    assert rows[pair[0]]["loss"] == pytest.approx(pair[1])
    inc = traindoc.load(str(path))
    assert int(inc.iterations["iteration"].max()) == last


@pytest.mark.parametrize("text", [
    # nvidia-smi dmon: the first column is the GPU index, it does not count up
    "# gpu   pwr  gtemp  mtemp     sm    mem    enc    dec\n"
    "    0    65     45      -     12      3      0      0\n"
    "    1    63     44      -     10      2      0      0\n"
    "    0    66     45      -     13      3      0      0\n",
    # a training log with a few numbers in it
    "epoch 1 loss 2.3\n3 4\nstep 10 loss 2.1\nstep 20 loss 2.0\n5 6\n",
])
def test_numeric_output_that_is_no_table(tmp_path: Path, text: str) -> None:
    path = tmp_path / "out.log"
    path.write_text(text)
    assert not looks_like_table(path, text.encode())
