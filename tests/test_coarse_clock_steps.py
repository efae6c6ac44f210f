"""Step lines stamped by a clock coarser than a step (batch 2026-11-27p): ColBERT's
``print_message(batch_idx, train_loss)`` ("[Mar 29, 16:27:48] 473 5.8459", a month's name and no
year) is a step line with a time, and its per-step times to the second are timed over windows
of lines that span ``MIN_TIMED_TICKS`` ticks (diagnose/throughput/series.py)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

import traindoc
from traindoc.diagnose import throughput as tp
from traindoc.diagnose.throughput.series import timed_seconds
from traindoc.parse.iterations import parse_colbert
from traindoc.parse.prefixes import line_time

# (line, iteration, loss, source)
COLBERT_LINES = [
    ("[Mar 29, 16:27:48] 473 5.845928532131831", 473, 5.845928532131831,
     "bclavie/ColBERT train.out (corpus)"),
    ("[Jan 05, 09:02:11] 12000 0.4113254129886627", 12000, 0.4113254129886627,
     "stanford-futuredata/ColBERT colbert/training/training.py print_message(batch_idx, train_loss)"),
]


@pytest.mark.parametrize("line, it, loss, source", COLBERT_LINES, ids=[r[3] for r in COLBERT_LINES])
def test_colbert_step_line(line: str, it: int, loss: float, source: str) -> None:
    row = parse_colbert(line)
    assert row == {"iteration": it, "loss": pytest.approx(loss)}


@pytest.mark.parametrize("line", [
    "[Mar 29, 16:21:54] #> Loading the queries from queries.train.colbert.tsv ...",  # a message
    "[Mar 29, 16:27:48] 473",  # no loss
    "[Mar 29, 16:27:48] 473 5.84 extra",
])
def test_colbert_messages_are_no_step(line: str) -> None:
    assert parse_colbert(line) is None


def test_a_month_name_time_takes_the_stream_year() -> None:
    line = "[Mar 29, 16:27:48] 473 5.845928532131831"
    assert line_time(line, 2024) == datetime(2024, 3, 29, 16, 27, 48)
    assert line_time(line, None) is None  # no year known: no time, as for glog
    assert line_time("[Feb 29, 10:00:00] 1 2.0", 2023) is None  # no such day


def _steps(times: list[datetime], start: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"iteration": pd.array(range(start, start + len(times)), dtype="Int64"),
                         "time": pd.Series(times, dtype="datetime64[ns]"),
                         "source": [f"train.out:{i}" for i in range(len(times))],
                         "rank": pd.array([pd.NA] * len(times), dtype="Int64")})


def test_steps_quicker_than_the_clock_are_timed_over_windows() -> None:
    """0.74 s steps stamped to the second: every line is 0 or 1 s after the one before, no
    rate; windows of 14 lines span 10 s, their rate is within a tick of the truth."""
    t0 = datetime(2024, 3, 29, 16, 21, 59)
    times = [(t0 + timedelta(seconds=0.74 * i)).replace(microsecond=0) for i in range(300)]
    out = timed_seconds(_steps(times)).dropna()
    assert len(out) >= 20
    assert out.median() == pytest.approx(0.74, rel=0.1)


def test_a_restart_leaves_a_coarse_clock_untimed() -> None:
    t0 = datetime(2024, 3, 29, 16, 21, 59)
    times = [(t0 + timedelta(seconds=0.74 * i)).replace(microsecond=0) for i in range(200)]
    steps = _steps(times)
    steps.loc[100:, "iteration"] = steps.loc[100:, "iteration"] - 100  # a relaunch from step 0
    assert timed_seconds(steps).isna().all()


def test_colbert_log_gives_seconds_per_step(tmp_path: Path) -> None:
    t0 = datetime(2024, 3, 29, 16, 21, 59)
    lines = []
    for i in range(400):
        t = t0 + timedelta(seconds=0.74 * i)
        lines += ["#>>>    5.39 5.36 \t\t|\t\t 0.03", f"[{t:%b %d, %H:%M:%S}] {i} {6.2 - i / 1000}"]
    (tmp_path / "train.out").write_text("\n".join(lines) + "\n")
    a = tp.analyse(traindoc.load(str(tmp_path / "train.out")))
    r = tp.report(a)
    assert r.facts["metric"] == "s_per_iteration"
    assert r.facts["baseline"] == pytest.approx(0.74, rel=0.1)
    assert r.facts["drop_pct"] is None
