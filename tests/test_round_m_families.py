"""Families read in round m (issue 26), on real lines or the corpus's own logs."""

from __future__ import annotations

from pathlib import Path

import traindoc
from traindoc.diagnose import loss_spike

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"


def _case(runbook: str, case: str) -> traindoc.Incident:
    return traindoc.load(str(CORPUS / runbook / case / "logs"))


def test_a_spike_that_recovered_before_the_run_broke_is_no_reason_to_keep_going() -> None:
    # imagenet18: three spikes that each came back, then NaN from epoch 5 to the end; the
    # verdict and the actions are the NaN's, never "keep training"
    r = loss_spike.diagnose(_case("loss_spike", "loss_spike-imagenet18-verbose"))
    assert r.verdict.startswith("The loss/grad norm became NaN at iteration 1725")
    ids = [a.id for a in r.actions]
    assert "rollback_nan" in ids and "keep_going" not in ids
    # LLaMA-Factory#4202: a spike, then a zero loss with a NaN gradient norm at the log's end
    r = loss_spike.diagnose(_case("loss_spike", "loss_spike-llamafactory-4202"))
    assert "keep training" not in r.verdict.lower()
    assert "keep_going" not in [a.id for a in r.actions]


def test_a_spike_that_recovered_in_a_run_that_went_on_still_says_keep_going() -> None:
    # scalingdown: a spike at 4 back by 22, and NaN lines from 34 that do not last to the end
    r = loss_spike.diagnose(_case("loss_spike", "loss_spike-scalingdown-training-log-nan-session"))
    assert r.facts["nan_iterations"] and "recovered by itself by iteration 22" in r.verdict
    assert "keep_going" in [a.id for a in r.actions]
