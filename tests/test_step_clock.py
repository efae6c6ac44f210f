"""A running mean is no rate: modded-nanogpt-style lines state a training clock
(``train_time``) and its running mean (``step_avg``); the throughput series takes the clock's
differences (parse/iterations.py, diagnose/throughput/series.py), the validation line at the
same step is an eval event, and a 1.5 % difference between coarse warm-up steps and a smooth
run is no drop (diagnose/throughput/change.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import traindoc
from traindoc.diagnose import throughput as tp
from traindoc.diagnose.throughput.change import find_change
from traindoc.parse.iterations import parse_step_kv

# (line, train_time_s, event, source)
CLOCK_LINES = [
    ("step:189/5100 train_loss:4.6349 train_time:25214ms step_avg:140.86ms", 25.214, None,
     "KellerJordan/modded-nanogpt records d4bfb25f"),
    ("step:5050/20000 train_loss:2.0232 train_time:219627ms step_avg:43.49ms", 219.627, None,
     "openai/parameter-golf#839"),
    ("step:1000/20000 val_loss:2.3036 val_bpb:1.3643 train_time:63809ms step_avg:63.81ms",
     63.809, "eval", "openai/parameter-golf records seq4096 seed1339"),
]


@pytest.mark.parametrize("line, clock, event, source", CLOCK_LINES,
                         ids=[r[3] for r in CLOCK_LINES])
def test_the_clock_is_read(line: str, clock: float, event: str | None, source: str) -> None:
    row = parse_step_kv(line)
    assert row is not None, source
    assert row["train_time_s"] == pytest.approx(clock)
    assert row.get("event") == event


def test_a_slowdown_shows_at_once_in_the_clock_not_in_the_mean(tmp_path: Path) -> None:
    """100 steps at 140 ms, then 100 at 280 ms: the clock's differences change at step 101;
    the running mean would still read 187 ms at step 200."""
    lines, clock = [], 0.0
    for step in range(1, 201):
        clock += 140.0 if step <= 100 else 280.0
        lines.append(f"step:{step}/5100 train_loss:4.0 train_time:{clock:.0f}ms "
                     f"step_avg:{clock / step:.2f}ms")
    log = tmp_path / "job.log"
    log.write_text("\n".join(lines) + "\n")
    a = tp.analyse(traindoc.load(str(log)))
    assert a.change is not None
    assert int(a.series["iteration"].iloc[a.change_position]) == 101
    assert a.change.degraded == pytest.approx(0.28, rel=0.01)


def test_coarse_warm_up_steps_are_no_drop() -> None:
    """openai/parameter-golf (quasi10b 4h record): warm-up steps timed to the millisecond
    (42-44 ms) before a smooth 43.6-43.8 ms run: a 1.5 % difference of medians, no change."""
    warm = [44.0, 43.0, 42.0, 44.0, 43.0, 43.0, 44.0, 42.0, 44.0]
    smooth = list(43.7 + 0.05 * np.sin(np.arange(300)))
    assert find_change(np.array(warm + smooth) / 1000, higher_is_better=False) is None


MEGATRON_LLM_22 = [  # epfLLM/Megatron-LLM#22: each interval slower than the one before (a leak)
    " iteration       10/     600 | consumed samples:          640 | elapsed time per iteration "
    "(ms): 84606.2 | learning rate: 8.000E-06 | ",
    " iteration       15/     600 | consumed samples:          960 | elapsed time per iteration "
    "(ms): 142474.1 | learning rate: 1.200E-05 | ",
    " iteration       20/     600 | consumed samples:         1280 | elapsed time per iteration "
    "(ms): 202438.6 | learning rate: 1.600E-05 |",
]
MEGATRON_LLM_11 = [  # epfLLM/Megatron-LLM#11: three neighbouring iterations, 1-2 % apart
    " iteration      122/  250000 | consumed samples:       124928 | elapsed time per iteration "
    "(ms): 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss: 2.504220E+00 |",
    " iteration      123/  250000 | consumed samples:       125952 | elapsed time per iteration "
    "(ms): 87871.6 | learning rate: 9.225E-06 | global batch size:  1024 | lm loss: 2.493043E+00 |",
    " iteration      124/  250000 | consumed samples:       126976 | elapsed time per iteration "
    "(ms): 89474.8 | learning rate: 9.300E-06 | global batch size:  1024 | lm loss: 2.559583E+00 |",
]


def test_three_points_that_worsen_at_every_step_are_a_change(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("\n".join(MEGATRON_LLM_22) + "\n")
    a = tp.analyse(traindoc.load(str(log)))
    assert a.change is not None and a.change.shape == "gradual"
    assert (a.change.baseline, a.change.degraded) == (pytest.approx(84.6062),
                                                      pytest.approx(202.4386))
    assert int(a.series["iteration"].iloc[a.change_position]) == 15


def test_three_points_a_few_percent_apart_are_no_change(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text("\n".join(MEGATRON_LLM_11) + "\n")
    assert tp.analyse(traindoc.load(str(log))).change is None


def test_two_writers_of_one_file_keep_their_own_clocks() -> None:
    """LLaMA-Factory's trainer_log.jsonl written by two launches into one output_dir (corpus
    throughput-sft-training-llm-trainer-log, sft-training-llm's committed file): every step
    twice, the second writer's clock minutes behind, then a resume whose clock starts again.
    The step's time is its own writer's clock difference, never the other writer's."""
    from traindoc.diagnose.throughput.series import clock_seconds
    # (current_steps, elapsed_time in s) of lines 993-1004, then the resume's 1043-1048
    first = [(5000, 75948), (5010, 76211), (5000, 76258), (5020, 76321), (5030, 76419),
             (5010, 76524), (5020, 76664), (5030, 76822)]
    resume = [(5010, 158), (5010, 158), (5020, 303), (5020, 303), (5030, 441), (5030, 441)]
    its, clock = zip(*(first + resume), strict=True)
    got = clock_seconds(list(its), list(clock))
    # writer A: 5000 -> 5010 -> 5020 -> 5030; writer B (after its step-5000 save) alike
    assert got[:5] == [None, 26.3, None, 11.0, 9.8]
    assert got[5:8] == [26.6, 14.0, 15.8]
    # the resume: its clock restarts, its own lines go on from it, duplicates alike
    assert got[8:] == [None, None, 14.5, 14.5, 13.8, 13.8]
    # one writer: the plain difference, a restart none
    assert clock_seconds([10, 20, 30, 10, 20], [10, 25, 40, 5, 20]) == [None, 1.5, 1.5, None, 1.5]
