"""torchrun's ChildFailedError report (``traindoc.parse.torchrun``): its printed form, and the
forms people paste it in."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

import traindoc
from traindoc.parse.torchrun import ChildFailedParser

# ZhehengJiangLancaster/AMVUR#2, line for line: the table pasted flat (keys, then their values,
# each on its own line), rank, exitcode and error file glued, 'local rank', lower-case 'signal'
AMVUR_2 = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
experiments/supervised HO3D V2.py FAILED
Failures:
<NO OTHER FAILURES>
Root Cause (first observed failure) :
[0]:
time
host
2023-09-14 01:45:50
ding-X10DRG
rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>
traceback : signal 9 (SIGKILL) received by PID 36071
"""

PRINTED = """\
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2024-07-08_01:47:24
  host      : node-7
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 4913)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-07-08_01:47:24
  host      : node-7
  rank      : 3 (local_rank: 3)
  exitcode  : -6 (pid: 4242)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 4242
============================================================
"""


def feed(text: str) -> list[dict]:
    p = ChildFailedParser()
    rows = [row for line in text.splitlines() for _, row in p.feed(line)]
    rows += [row for _, row in p.close()]
    for row in rows:
        row.pop("_ctx", None)
    return rows


def test_flat_table_of_amvur_2() -> None:
    assert feed(AMVUR_2) == [{
        "root_cause": True, "time": datetime(2023, 9, 14, 1, 45, 50),
        "host": "ding-X10DRG", "rank": 2, "local_rank": 2, "exitcode": -9, "pid": 36071,
        "signal": "SIGKILL"}]


@pytest.mark.parametrize("engine", ["plain", "auto"])
def test_flat_table_of_amvur_2_through_load(tmp_path: Path, engine: str) -> None:
    p = tmp_path / "job.log"
    p.write_text(AMVUR_2)
    ex = traindoc.load(p, engine=engine).exits
    assert len(ex) == 1
    r = ex.iloc[0]
    assert (r["rank"], r["local_rank"], r["host"], r["exitcode"], r["pid"], r["signal"],
            bool(r["root_cause"])) == (2, 2, "ding-X10DRG", -9, 36071, "SIGKILL", True)


def test_printed_form_still_reads() -> None:
    rows = feed(PRINTED)
    assert [(r["rank"], r["local_rank"], r["host"], r["exitcode"], r["pid"], r["signal"],
             r["root_cause"]) for r in rows] == [
        (0, 0, "node-7", 1, 4913, None, False), (3, 3, "node-7", -6, 4242, "SIGABRT", True)]
    assert rows[1]["time"].isoformat() == "2024-07-08T01:47:24"


def test_record_quoted_without_its_header_still_reads() -> None:
    # NVIDIA/Megatron-LM#1880
    rows = feed("  time      : 2025-12-23_05:17:58   \n  host      : yotta-B200-232   \n"
                "  rank      : 0 (local_rank: 0)   \n  exitcode  : -11 (pid: 3304209)   \n"
                "  error_file: <N/A>   \n  traceback : Signal 11 (SIGSEGV) received by PID "
                "3304209   \n============================================================\n")
    assert [(r["rank"], r["host"], r["exitcode"], r["signal"], r["root_cause"]) for r in rows] == [
        (0, "yotta-B200-232", -11, "SIGSEGV", False)]


def test_flat_table_key_then_value() -> None:
    # each key followed by its value line, the '[0]:' line left out, fields all glued
    rows = feed("Root Cause (first observed failure):\ntime\n2024-07-08_01:47:24\nhost :\nnode-7\n"
                "rank\n3 (local_rank: 3)\nexitcode\n-6 (pid: 4242)\nerror_file\n<N/A>\n"
                "traceback\nSignal 6 (SIGABRT) received by PID 4242\n" + "=" * 60 + "\n")
    assert [(r["rank"], r["local_rank"], r["host"], r["exitcode"], r["signal"]) for r in rows] == [
        (3, 3, "node-7", -6, "SIGABRT")]


def test_fields_glued_on_one_line() -> None:
    rows = feed("Root Cause (first observed failure):\n[0]:\n"
                "time      : 2024-07-08_01:47:24host      : node-7rank      : 3 (local_rank: 3)"
                "exitcode  : -6 (pid: 4242)error_file: <N/A>traceback : Signal 6 (SIGABRT) "
                "received by PID 4242\n")
    assert [(r["rank"], r["host"], r["exitcode"], r["signal"]) for r in rows] == [
        (3, "node-7", -6, "SIGABRT")]


def test_a_line_that_is_no_value_ends_the_flat_record() -> None:
    # a pending 'host' takes no line with spaces in it: the record ends as before, unread
    rows = feed("Root Cause (first observed failure):\n[0]:\ntime\nhost\n"
                "this is not a host name\nrank2 (local rank: 2)exitcode: -9 (pid: 1)\n")
    assert rows == []


def test_idle_lines_without_a_needle_are_ignored() -> None:
    # the BlockParser contract: while idle, a line holding no needle changes nothing
    for line in AMVUR_2.splitlines():
        if not any(n in line for n in ChildFailedParser.needles):
            p = ChildFailedParser()
            assert p.feed(line) == [] and p.section is None
