"""Throughput families of the start list at 40381e3c (issue 26 part 1), each with real lines of
two sources: an evaluation's own rate, the series where no training line carries one."""

from __future__ import annotations

from pathlib import Path

import pytest

import traindoc
from traindoc.diagnose import throughput as tp
from traindoc.parse.iterations import parse_hf_dict
from traindoc.parse.metric_lines import parse_metric_line

# an evaluation's record with its own rate: (line, step, samples/s, source)
EVAL_RATE_LINES = [
    ('{"eval_loss": 0.5716082453727722, "eval_runtime": 99.962, "eval_samples_per_second": '
     '12.805, "eval_steps_per_second": 3.201, "epoch": 0.6, "step": 60}', 60, 12.805,
     "BenasdTW/LLMTrain logs/qloraplus3-0202-193716.log"),
    ('{"epoch": 0.32, "eval_accuracy": 0.25503355264663696, "eval_loss": 1.3863019943237305, '
     '"eval_runtime": 92.0138, "eval_samples_per_second": 22.671, "eval_steps_per_second": '
     '1.424, "step": 50}', 50, 22.671,
     "yuanhuanghuang/quality baselines/lrqa trainer_state.json log_history"),
]


@pytest.mark.parametrize("line, step, rate, source", EVAL_RATE_LINES,
                         ids=[s[3] for s in EVAL_RATE_LINES])
def test_an_evaluations_rate_stays_on_its_eval_row(line: str, step: int, rate: float,
                                                   source: str) -> None:
    row = parse_metric_line(line)
    assert row is not None and row["event"] == "eval" and row["iteration"] == step
    assert row["samples_per_s"] == pytest.approx(rate)


def test_hf_trainers_printed_eval_dict_carries_its_rate() -> None:
    # a LLaMA-Factory LoRA SFT run under transformers 4.45.2 (its evaluation every 500 steps)
    got = parse_hf_dict("{'eval_loss': 3.297883987426758, 'eval_runtime': 4.3261, "
                        "'eval_samples_per_second': 23.115, 'eval_steps_per_second': 23.115, "
                        "'epoch': 1.11}")
    assert got is not None and got[0] == "eval"
    assert got[1]["samples_per_s"] == pytest.approx(23.115)


def test_a_training_line_takes_no_eval_rate() -> None:
    row = parse_metric_line('{"loss": 0.5972, "eval_samples_per_second": 12.8, "step": 61}')
    assert row is not None and row.get("samples_per_s") is None and row.get("event") is None


def test_the_evals_rates_are_the_series_where_steps_carry_none(tmp_path: Path) -> None:
    lines = []
    rates = [12.805, 12.797, 12.803, 12.807, 12.866, 12.852, 0.051, 12.799, 12.117]
    for k, r in enumerate(rates):
        step = 60 + 10 * k
        lines += [f'{{"loss": 0.5, "grad_norm": 0.07, "learning_rate": 4e-05, "epoch": 0.6, '
                  f'"step": {step + j}}}' for j in range(1, 10)]
        lines.append(f'{{"eval_loss": 0.55, "eval_runtime": {1280 / r:.4f}, '
                     f'"eval_samples_per_second": {r}, "eval_steps_per_second": 3.2, '
                     f'"epoch": 0.7, "step": {step + 10}}}')
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    facts = tp.diagnose(traindoc.load(tmp_path / "train.log")).facts
    assert facts["metric"] == "samples_per_s"
    assert 12.7 <= facts["baseline"] <= 12.9
    assert facts["degraded"] is False and facts["change_iteration"] is None
