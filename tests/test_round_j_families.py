"""Families read in round j (issue 26), on real lines: a record printed one key a line (the
min-decision-transformer family's logging blocks)."""

from __future__ import annotations

from pathlib import Path

import pytest

import traindoc
from traindoc.diagnose import loss_spike

# ZhuangtianXu/Elastic-Decision-Mamba, wandb/run-20240426_230232-ablkasls/files/output.log
# (corpus throughput-elastic-decision-mamba-hopper-steady): its header's keys and values, then
# one block a logging call
VERTICAL = """max_train_iters:  500
num_updates_per_iter:  100
total updates:  50000
============================================================
start time: 24-04-26-23-02-38
============================================================
device set to: cuda
num of trajs: 2041
============================================================
time elapsed: 0:01:04
num of updates: 1000
ret loss: 3.30960
action loss: 0.25866
state loss: 0.14050
exp loss: 0.01254
============================================================
time elapsed: 0:02:01
num of updates: 2000
ret loss: 2.51256
action loss: 0.20117
state loss: 0.08374
exp loss: 0.00384
============================================================
time elapsed: 0:02:59
num of updates: 3000
ret loss: 2.31076
action loss: 0.17066
state loss: 0.06614
exp loss: 0.00238
============================================================
"""


def _iterations(tmp_path: Path, text: str) -> list[dict]:
    log = tmp_path / "output.log"
    log.write_text(text)
    df = traindoc.load(str(log)).tables["iterations"]
    return df[["iteration", "train_time_s", "loss"]].to_dict("records")


def test_a_record_of_one_key_a_line_is_one_step(tmp_path: Path) -> None:
    rows = _iterations(tmp_path, VERTICAL)
    assert [r["iteration"] for r in rows] == [1000, 2000, 3000]  # not the header's totals
    assert [r["train_time_s"] for r in rows] == [64, 121, 179]
    assert rows[0]["loss"] == pytest.approx(3.3096)


def test_a_record_ends_at_a_key_again(tmp_path: Path) -> None:
    # the same records with no rule between them (a fork that prints no "=" line)
    text = "\n".join(line for line in VERTICAL.splitlines() if not line.startswith("="))
    rows = _iterations(tmp_path, text)
    assert [(r["iteration"], r["train_time_s"]) for r in rows] == [(1000, 64), (2000, 121),
                                                                   (3000, 179)]


def test_a_step_over_one_value_is_no_vertical_record(tmp_path: Path) -> None:
    # fewer than VERTICAL_MIN_KEYS values besides the step: a header's step and its loss,
    # which the headed-step parser reads (or nothing), never a vertical record's row
    from traindoc.parse.metric_lines import VerticalRecordParser
    p = VerticalRecordParser()
    out = [r for t in ("step: 100", "loss: 0.5", "---") for r in p.feed(t)]
    assert out == []


# --- a step header with its fields between dashes, its stages' losses on the next line --------

def test_stage_losses_under_a_dashed_step_header(tmp_path: Path) -> None:
    # yaoqi-zd/FashionAI_KeyPoint_Detection_Challenge_Keras#2 (corpus
    # loss_spike-fashionai-cpm-2-stage-losses-nan)
    from traindoc.parse.metric_lines import _step, step_head
    header = "Step: 682/800000 ----- Cur_lr: 0.4000000 ----- Time: 0.82 sec."
    assert step_head(header) is not None
    log = tmp_path / "train.log"
    log.write_text(header + "\nS1 loss:     nan | S2 loss:     nan | S3 loss:     nan | S4 loss: "
                   "    nan | S5 loss:     nan | S6 loss:   25.47 | Total loss: nan\n")
    f = loss_spike.diagnose(traindoc.load(str(log))).facts
    assert f["nan_iterations"] == [682] and f["last_iteration"] == 682
    # a key that starts with "s" and a digit after a space is no duration after the step
    assert _step("step 682 S1 loss: 1.0")["n"] == "682"
    assert _step("Step: 12 s") is None and _step("Step: 88ms | Tot: 34s394ms") is None
