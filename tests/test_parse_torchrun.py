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


# kubectl logs --prefix puts "[pod/NAME/CONTAINER] " before every line: stripped, so a
# ChildFailedError table behind it is read. Real prefixes: sse-secure-systems/connaisseur#555,
# a HAMi blog post's ``kubectl logs --prefix`` output; the table is megatron-sft-recipes'
# run_sdpa stdout.log, given the prefix here (no public post with both was found).
KUBECTL_LINES = [
    ("[pod/connaisseur-deployment-7f5ddc58c5-vh8c6/connaisseur] [2022-02-18 09:50:25,270] INFO: "
     "{'message': 'automatic child approval'}", "[2022-02-18 09:50:25,270] INFO: "),
    ("[pod/pytorch-hami-demo-77b6f5dcd9-whrbg/pytorch] CUDA Available: True", "CUDA Available: "),
]


@pytest.mark.parametrize(("line", "body"), KUBECTL_LINES)
def test_kubectl_prefix_is_stripped(line: str, body: str) -> None:
    from traindoc.parse.prefixes import demux
    rest, origin = demux(line)
    assert rest.startswith(body) and origin.host is None


def test_a_childfailederror_table_behind_kubectl_prefixes_is_read(tmp_path: Path) -> None:
    table = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
             "============================================================\n"
             "/usr/local/lib/python3.12/site-packages/swift/cli/sft.py FAILED\n"
             "------------------------------------------------------------\n"
             "Failures:\n"
             "[1]:\n"
             "  time      : 2026-04-25_02:53:51\n"
             "  host      : am4g1r39bm1.mgt.ams4.paperspace.com\n"
             "  rank      : 2 (local_rank: 2)\n"
             "  exitcode  : -15 (pid: 130963)\n"
             "  error_file: <N/A>\n"
             "  traceback : Signal 15 (SIGTERM) received by PID 130963\n"
             "------------------------------------------------------------\n"
             "Root Cause (first observed failure):\n"
             "[0]:\n"
             "  time      : 2026-04-25_02:53:51\n"
             "  host      : am4g1r39bm1.mgt.ams4.paperspace.com\n"
             "  rank      : 1 (local_rank: 1)\n"
             "  exitcode  : 1 (pid: 130962)\n"
             "  error_file: <N/A>\n"
             "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
             "============================================================\n")
    p = tmp_path / "pod.log"
    p.write_text("".join(f"[pod/sft-master-0/pytorch] {ln}\n" for ln in table.splitlines()))
    ex = traindoc.load(p).exits
    assert sorted(ex["rank"].dropna().astype(int)) == [1, 2]
    assert ex.loc[ex["root_cause"].fillna(False).astype(bool), "exitcode"].tolist() == [1]


# --- the worker's error a record's traceback field embeds ------------------------------------

# QIU023/torchtitan_attention_residual phase11_rlhf_grpo_infra/run_overnight_pipeline.log
# (corpus gpu_crash-torchtitan-attnres-vlm447m-rank7-device-assert), frames shortened
EMBEDDED = """\
[rank0]:[titan] 2026-05-10 17:43:49,123 - root - INFO - step: 3829  loss:  2.1  tps: 1,820
Root Cause (first observed failure):
[0]:
  time      : 2026-05-10_17:43:49
  host      : dfbfb7339589
  rank      : 7 (local_rank: 7)
  exitcode  : -6 (pid: 1712658)
  error_file: /tmp/torchelastic_4s2yzn11/none_2d8h9cwf/attempt_0/7/error.json
  traceback : Traceback (most recent call last):
    File "/usr/local/lib/python3.12/dist-packages/torch/distributed/distributed_c10d.py", line 4049, in all_gather_into_tensor
      work = group._allgather_base(output_tensor, input_tensor, opts)
  torch.AcceleratorError: CUDA error: device-side assert triggered
  Search for `cudaErrorAssert' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.
  CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.


============================================================
[Sun May 10 05:43:55 PM UTC 2026] STAGE 1 done rc=1 last_step=3829
"""


@pytest.mark.parametrize("engine", ["plain", "auto"])
def test_a_records_embedded_error_is_marked(tmp_path: Path, engine: str) -> None:
    """The record says where the worker's error its traceback field holds ends: the lines
    up to the closing rule."""
    p = tmp_path / "job.log"
    p.write_text(EMBEDDED)
    ex = traindoc.load(p, engine=engine).exits
    assert len(ex) == 1
    r = ex.iloc[0]
    assert (r["rank"], r["host"], r["traceback_end"]) == (7, "dfbfb7339589", 14)


def test_a_record_cut_before_its_rule_marks_nothing(tmp_path: Path) -> None:
    """No rule or record closes the field (a paste cut there, the next job's output after
    it): the lines after it are not known to be the worker's."""
    p = tmp_path / "job.log"
    cut = EMBEDDED.split("====")[0].rstrip().rsplit("\n", 3)[0]
    p.write_text(cut + "\n2026-05-10 17:50:01 INFO next job starts\n"
                 "ValueError: a later job's error\n")
    ex = traindoc.load(p).exits
    assert len(ex) == 1 and ex["traceback_end"].isna().all()


def test_a_record_pointing_at_the_docs_embeds_nothing(tmp_path: Path) -> None:
    """'To enable traceback see: …' (no error file): no embedded error, whatever follows."""
    text = EMBEDDED.replace(
        EMBEDDED[EMBEDDED.index("Traceback (most"):EMBEDDED.index("=====")],
        "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n")
    p = tmp_path / "job.log"
    p.write_text(text)
    ex = traindoc.load(p).exits
    assert len(ex) == 1 and ex["traceback_end"].isna().all()
