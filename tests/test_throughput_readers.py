"""Throughput readers of round y: rates and times in wordings the blind intakes met (a rate
named by words joined with ``per``, Stable-Baselines3's ``time/`` table, a cumulative clock
printed every N steps), each with its real line and source."""

from __future__ import annotations

from pathlib import Path

import traindoc
from traindoc.diagnose import throughput as tp
from traindoc.parse.metric_lines import parse_line

# aalexchengg/llmsys_s25_hw4 out/dp.out (corpus throughput-llmsys-s25-hw4-dp-2rank-healthy):
# a course's own per-epoch line, the rate named "Tokens_per_sec" with no "/" in it
LLMSYS_LINES = [
    "Epoch 0 on Rank 0: Training Time = 36.07007098197937, Tokens_per_sec = 104113.63863666085",
    "Epoch 1 on Rank 0: Training Time = 35.7384078502655, Tokens_per_sec = 105198.0141620345",
    "Epoch 2 on Rank 0: Training Time = 35.77734112739563, Tokens_per_sec = 105123.83041715014",
    "Epoch 3 on Rank 0: Training Time = 35.80731105804443, Tokens_per_sec = 105086.8",
]


def test_a_rate_named_with_per_is_read_without_a_slash() -> None:
    row = parse_line(LLMSYS_LINES[0])
    assert row is not None and row["tokens_per_s"] == 104113.63863666085 and row["iteration"] == 0


def test_per_epoch_tokens_per_sec_lines_give_the_rate_a_run_holds(tmp_path: Path) -> None:
    log = tmp_path / "dp.out"
    log.write_text("\n".join(LLMSYS_LINES) + "\n")
    rep = tp.report(tp.analyse(traindoc.load(log)))
    assert rep.facts["metric"] == "tokens_per_s"
    assert 104000 <= rep.facts["baseline"] <= 105300 and rep.facts["change_iteration"] is None
