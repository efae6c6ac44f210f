"""Throughput read from an evaluation's own rate (the series where no training line carries one)
and from recurring stalls between the printed steps, each with real lines of two sources."""

from __future__ import annotations

import json
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


# AverageMeter step lines (the PyTorch ImageNet example and its descendants): the step's time,
# then its running mean since the start; (source, lines, the printed steps' time, the mean's)
AVERAGE_METER_RUNS = [
    ("Lyken17/Efficient-PyTorch#21", [
        "Epoch: [1][5760/10010]\tTime 0.427 (2.773)\tData 0.000 (2.393)\tLoss 8.4238 (10.3028)\t"
        "Acc@1 15.625 (9.299)\tAcc@5 38.281 (24.568)",
        "Epoch: [1][5888/10010]\tTime 0.432 (2.775)\tData 0.000 (2.395)\tLoss 8.2156 (10.2520)\t"
        "Acc@1 18.750 (9.495)\tAcc@5 45.312 (24.929)",
        "Epoch: [1][6016/10010]\tTime 0.427 (2.775)\tData 0.000 (2.395)\tLoss 6.8980 (10.2046)\t"
        "Acc@1 10.938 (9.690)\tAcc@5 39.062 (25.283)",
        "Epoch: [1][6144/10010]\tTime 0.427 (2.776)\tData 0.000 (2.396)\tLoss 7.0476 (10.1565)\t"
        "Acc@1 17.969 (9.886)\tAcc@5 39.844 (25.650)",
        "Epoch: [1][6272/10010]\tTime 0.430 (2.776)\tData 0.000 (2.396)\tLoss 6.9353 (10.1123)\t"
        "Acc@1 21.875 (10.068)\tAcc@5 47.656 (25.985)",
        "Epoch: [1][6400/10010]\tTime 0.430 (2.777)\tData 0.000 (2.397)\tLoss 7.1662 (10.0699)\t"
        "Acc@1 20.312 (10.249)\tAcc@5 42.188 (26.319)",
        "Epoch: [1][6528/10010]\tTime 0.428 (2.779)\tData 0.000 (2.399)\tLoss 8.6659 (10.0253)\t"
        "Acc@1 17.969 (10.437)\tAcc@5 41.406 (26.658)",
    ], 0.428, 2.776),
    ("pytorch/examples#164", [
        "Epoch: [0][14/5005]\tTime 0.154 (8.010)\tData 0.001 (7.720)\tLoss 6.9074 (6.9080)\t"
        "Prec@1 0.000 (0.026)\tPrec@5 0.391 (0.391)",
        "Epoch: [0][15/5005]\tTime 0.154 (7.519)\tData 0.001 (7.237)\tLoss 6.9078 (6.9080)\t"
        "Prec@1 0.000 (0.024)\tPrec@5 0.781 (0.415)",
        "Epoch: [0][17/5005]\tTime 0.160 (10.449)\tData 0.001 (10.186)\tLoss 6.9074 (6.9079)\t"
        "Prec@1 0.000 (0.022)\tPrec@5 0.000 (0.412)",
        "Epoch: [0][19/5005]\tTime 0.154 (9.565)\tData 0.001 (9.317)\tLoss 6.9084 (6.9080)\t"
        "Prec@1 0.000 (0.039)\tPrec@5 0.781 (0.449)",
        "Epoch: [0][21/5005]\tTime 0.154 (9.396)\tData 0.001 (9.161)\tLoss 6.9087 (6.9080)\t"
        "Prec@1 0.000 (0.036)\tPrec@5 0.781 (0.462)",
    ], 0.154, 9.396),
]


@pytest.mark.parametrize("source, lines, step, mean", AVERAGE_METER_RUNS,
                         ids=[r[0] for r in AVERAGE_METER_RUNS])
def test_recurring_stalls_between_the_printed_steps(tmp_path: Path, source: str,
                                                    lines: list[str], step: float,
                                                    mean: float) -> None:
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    incident = traindoc.load(tmp_path / "train.log")
    assert incident.iterations["elapsed_mean_s"].notna().all()
    rep = tp.diagnose(incident)
    assert rep.facts["shape"] == "stalls", rep.verdict
    assert rep.facts["baseline"] == pytest.approx(step, rel=0.02)
    assert rep.facts["degraded"] == pytest.approx(mean, rel=0.02)
    assert "check_input" in [a.id for a in rep.actions]


def test_a_mean_near_the_printed_steps_is_no_stall(tmp_path: Path) -> None:
    # Swin Transformer's main.py: "time 0.4283 (0.4481)" (the mean within 5 % of the steps)
    lines = [f"[2023-03-01 10:00:{k:02d} swin] (main.py 230): INFO Train: [29/300][{2600 + 10 * k}/"
             f"2859]\teta 0:01:24 lr 0.000872\t wd 0.0500\ttime 0.42{80 + k % 3} (0.4481)\tdata "
             f"time 0.0008 (0.0122)\tloss 2.0148 (1.9972)\tgrad_norm 4.1605 (inf)\tloss_scale "
             f"32768.0000 (34681.8180)\tmem 16138MB" for k in range(8)]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    incident = traindoc.load(tmp_path / "train.log")
    assert incident.iterations["elapsed_mean_s"].notna().all()
    facts = tp.diagnose(incident).facts
    assert facts["shape"] is None and facts["degraded"] is False


def test_a_slow_first_step_amortised_is_no_stall(tmp_path: Path) -> None:
    # one 20 s first step (compilation, a cold cache), then 0.4 s steps printed every 10: the
    # running mean decays as 1/n, the run does not stall
    lines = []
    for n in range(10, 60, 10):
        mean = (20.0 + 0.4 * (n - 1)) / n
        lines.append(f"Epoch: [0][{n}/5005]\tTime 0.40{n % 3} ({mean:.3f})\tData 0.001 (0.150)\t"
                     f"Loss 6.90{n % 7} (6.908)\tPrec@1 0.000 (0.026)\tPrec@5 0.391 (0.391)")
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    facts = tp.diagnose(traindoc.load(tmp_path / "train.log")).facts
    assert facts["shape"] != "stalls"


def test_trainer_states_evals_are_the_series_where_steps_carry_none(tmp_path: Path) -> None:
    # the log_history of yuanhuanghuang/quality's baselines/lrqa trainer_state.json (steps 50-250)
    history = []
    for step, (rate, runtime) in zip(range(50, 300, 50), [
            (22.671, 92.0138), (22.65, 92.0967), (22.64, 92.1391), (22.679, 91.9776),
            (22.684, 91.9584)], strict=True):
        history.append({"epoch": step / 158, "learning_rate": 1e-05, "loss": 1.387, "step": step})
        history.append({"epoch": step / 158, "eval_accuracy": 0.26, "eval_loss": 1.386,
                        "eval_runtime": runtime, "eval_samples_per_second": rate,
                        "eval_steps_per_second": 1.424, "step": step})
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    facts = tp.diagnose(traindoc.load(tmp_path / "trainer_state.json")).facts
    assert facts["metric"] == "samples_per_s" and 22.6 <= facts["baseline"] <= 22.7
    assert facts["degraded"] is False
