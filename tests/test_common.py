"""Helpers every diagnosis shares: one meaning each."""

from __future__ import annotations

import numpy as np
import pandas as pd

import traindoc
from traindoc.diagnose.common import as_float, as_int, as_str, count, when_text, who


def test_who_writes_ranks_as_people_do() -> None:
    assert who([3]) == "rank 3"
    assert who([5, 0, 1, 2, 2]) == "ranks 0-2, 5"
    assert who([], cap=True) == "A rank (no rank tag)"
    assert who(pd.Series([4, pd.NA, 6], dtype="Int64"), cap=True) == "Ranks 4, 6"
    assert "[" not in who([0, 1, 3])


def test_na_aware_conversions() -> None:
    assert as_int(pd.NA) is None and as_int(np.nan) is None and as_int("x") is None
    assert as_int(np.int64(5)) == 5 and as_int(3.9) == 3
    assert as_float("1.5") == 1.5 and as_float(None) is None
    assert as_str(np.nan) is None and as_str(pd.NA) is None and as_str(7) == "7"


def test_one_format_per_quantity_in_sentences() -> None:
    assert when_text("2024-07-08T01:36:12.508213") == "2024-07-08 01:36:12"
    assert when_text(pd.NaT) == ""
    assert count(1, "host") == "1 host" and count(4, "other rank") == "4 other ranks"


def test_a_clock_that_goes_back_is_a_warning(tmp_path) -> None:
    import traindoc
    from traindoc.diagnose import timeout

    log = tmp_path / "job.log"
    line = ("[rank0]:[E708 {t} ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum={n}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600009 milliseconds before timing out.\n")
    log.write_text("[2024-07-08 00:00:00] start\n" + line.format(t="01:46:13.7", n=5)
                   + line.format(t="01:16:13.7", n=6))
    r = timeout.diagnose(traindoc.load(log))
    jump = [f for f in r.findings if f.id == "clock_went_back"]
    assert jump and "job.log:3" in jump[0].evidence[0], [f.id for f in r.findings]
    steady = tmp_path / "ok.log"
    steady.write_text("[2024-07-08 00:00:00] start\n" + line.format(t="01:46:13.7", n=5)
                      + line.format(t="01:46:12.7", n=6))  # a second back: jitter, not a jump
    assert not [f for f in timeout.diagnose(traindoc.load(steady)).findings
                if f.id == "clock_went_back"]


def test_a_log_nothing_understood_is_said_so(tmp_path) -> None:
    """Issue 26.5: a runbook that recognised nothing says so, with what it read; unplaced error
    lines are grouped by form with counts."""
    import traindoc
    from traindoc.diagnose import NAMES, failure_class
    from traindoc.diagnose.common import unplaced_forms

    log = tmp_path / "job.log"
    log.write_text("hello\nall good here\n")
    inc = traindoc.load(str(log))
    for rb in [n for n in NAMES if n != "deadlock"]:  # a hang names its own input
        r = failure_class(rb).diagnose(inc)
        assert "2 line(s) read, none of them understood" in r.verdict, (rb, r.verdict)
        assert "point log_path at the training log" not in r.verdict
    forms = unplaced_forms(["a.log:3: RuntimeError: bad value 17 at /x/y/z.py",
                            "a.log:9: RuntimeError: bad value 23 at /x/y/w.py",
                            "b.log:1: KeyError: 'foo'"])
    assert forms[0] == (2, "a.log:3", "RuntimeError: bad value 17 at /x/y/z.py")
    assert forms[1][0] == 1


def test_input_findings_are_computed_once_while_the_tables_stay() -> None:
    from traindoc.diagnose import common
    from traindoc.incident import Incident

    inc = Incident.from_rows({}, unrecognized=["a.log:3: NCCL error: something new"])
    calls: list[int] = []

    def counted(i: Incident) -> list:
        calls.append(1)
        return common._input_findings(i)

    first = inc.once("f", counted)
    assert inc.once("f", counted) is first and len(calls) == 1
    inc.unrecognized.append("a.log:9: NCCL error: again")  # grew: computed again
    assert inc.once("f", counted)[0].title.startswith("2 line(s)") and len(calls) == 2
    inc.tables["errors"] = inc.tables["errors"].copy()  # replaced (as watch does): again
    inc.once("f", counted)
    assert len(calls) == 3
    got = common.input_findings(inc)
    got[0].evidence.append("x")  # each call's findings are its own
    assert "x" not in common.input_findings(inc)[0].evidence


def test_mlperf_events_do_not_count_the_steps_of_the_progress_lines(tmp_path) -> None:
    # training_results_v4.0 HPE xd670 ssd result_1.txt (corpus gpu_crash-mlperf-v4-0-hpe-
    # xd670-ssd-result-1): tracked_stats' "step" counts epochs from 1, the progress lines the
    # iterations of the epoch; alone, the events' steps are the log's only counter
    from traindoc.diagnose.common import last_progress
    bars = ("Epoch: [4]  [   0/3657]  eta: 0:00:15    time: 0.0035  data: 0.0010  max mem: 21023\n"
            "Epoch: [4]  [  20/3657]  eta: 0:04:39    time: 0.0644  data: 0.0618  max mem: 21023\n")
    stats = (':::MLLOG {"namespace": "", "time_ms": 1714978963120, "event_type": "POINT_IN_TIME", '
             '"key": "tracked_stats", "value": {"throughput": 307.33317802311217}, "metadata": '
             '{"file": "/workspace/ssd/engine.py", "lineno": 334, "step": 5}}\n')
    log = tmp_path / "result_1.txt"
    log.write_text(bars + stats)
    assert last_progress(traindoc.load(str(log))).step == 20
    log.write_text(stats)
    assert last_progress(traindoc.load(str(log))).step == 5
