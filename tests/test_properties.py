"""Property-based tests (hypothesis): no input makes a parser or the loader raise, every line is
accounted for, and how a log is cut, wrapped, chunked or interleaved does not change what is
read from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import traindoc
from traindoc.parse import LINE_PARSERS
from traindoc.parse.prefixes import demux, line_time, split_physical, strip_ansi
from traindoc.reader import decode

WATCHDOG = ("[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={s}, "
            "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600070 "
            "milliseconds before timing out.")
MEGATRON = (" iteration {i}/ 115311 | consumed samples: 9841584 | consumed tokens: 20155564032 | "
            "elapsed time per iteration (s): 105.22 | learning rate: 5.969E-05 | global batch size: "
            "2048 | lm loss: 2.463556E+00 | grad norm: 0.174 | num zeros: 0.0 | number of skipped "
            "iterations: 0 | number of nan iterations: 0 | samples per second: 19.463 | TFLOPs: "
            "149.02 |")
TQDM = "Train:  {p}%|##   | {n}/6336 [08:49<44:58:38, 25.64s/it]"

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=400)
real_lines = st.sampled_from([
    WATCHDOG.format(r=3, s=2901), MEGATRON.format(i=12695), TQDM.format(p=0, n=21),
    "Timeout at NCCL work: 5, last enqueued NCCL work: 5, last completed NCCL work: 4.",
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Timed out waiting 5000ms for recv operation to complete",
    "Root Cause (first observed failure):", "[0]:", "  rank      : 1 (local_rank: 1)",
    "  exitcode  : -6 (pid: 1234)", "Failures:", "=" * 60, "-" * 60, "",
])


@SETTINGS
@given(texts)
def test_parsers_never_raise(text: str) -> None:
    for p in LINE_PARSERS:
        p.parse(text)
        if p.incomplete:
            p.incomplete(text)
    demux(text)
    split_physical(text)
    strip_ansi(text)
    line_time(text, 2024)


@SETTINGS
@given(real_lines, st.integers(0, 400), texts)
def test_corrupted_real_lines_never_raise(line: str, cut: int, junk: str) -> None:
    for variant in (line[:cut], line[:cut] + junk, junk + line, line.replace(" ", junk[:3])):
        for p in LINE_PARSERS:
            p.parse(variant)


@SETTINGS
@given(st.binary(max_size=3000))
def test_load_never_raises_and_accounts_for_every_line(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("p") / "x.log"
    path.write_bytes(data)
    inc = traindoc.load(path)
    a = inc.account
    assert a["parsed_lines"] + a["unparsed_lines"] == a["lines"]


@SETTINGS
@given(st.lists(real_lines | texts.filter(lambda t: "\n" not in t and "\r" not in t), max_size=40),
       st.integers(1, 200))
def test_chunk_size_does_not_change_the_result(tmp_path_factory, lines: list[str], chunk: int) -> None:
    path = tmp_path_factory.mktemp("c") / "x.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    whole = traindoc.load(path)
    old = decode.CHUNK_BYTES
    try:
        decode.CHUNK_BYTES = chunk
        pieces = traindoc.load(path)
    finally:
        decode.CHUNK_BYTES = old
    for t in whole.tables:
        where = ["source", "file", "lineno"]  # (the iterations table's source: file, lineno)
        assert whole.tables[t].drop(columns=where, errors="ignore").equals(
            pieces.tables[t].drop(columns=where, errors="ignore")), t
    assert whole.account["lines"] == pieces.account["lines"]


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(1, 9999)), min_size=1, max_size=30))
def test_interleaved_ranks_are_demultiplexed(tmp_path_factory, events: list[tuple[int, int]]) -> None:
    path = tmp_path_factory.mktemp("r") / "x.log"
    path.write_text("".join(f"[rank{r}]:" + WATCHDOG.format(r=r, s=s) + "\n" for r, s in events))
    c = traindoc.load(path).collectives
    assert list(zip(c["rank"], c["seq_num"], strict=True)) == events


@SETTINGS
@given(st.integers(1, 115311), st.lists(st.integers(0, 250), min_size=1, max_size=4, unique=True))
def test_wrapped_and_unwrapped_megatron_lines_give_the_same_row(tmp_path_factory, it: int,
                                                                  cuts: list[int]) -> None:
    line = "[default7]:" + MEGATRON.format(i=it)
    head = line.index("|") + 1  # a wrap inside "iteration N/ M" itself is not recognisable
    wrapped, last = [], 0
    for c in sorted(cuts):
        c += head
        if c < len(line) - 1 and line[c - 1] not in " |":
            wrapped.append(line[last:c])
            last = c
    wrapped.append(line[last:])
    d = tmp_path_factory.mktemp("w")
    (d / "one.log").write_text(line + "\n")
    (d / "two.log").write_text("\n".join(wrapped) + "\n")
    one = traindoc.load(d / "one.log").iterations
    two = traindoc.load(d / "two.log").iterations
    cols = ["iteration", "loss", "grad_norm", "tflops", "consumed_samples", "lr", "rank"]
    assert len(two) == 1, wrapped
    assert one[cols].equals(two[cols]), wrapped


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16"])
def test_other_encodings(tmp_path: Path, encoding: str) -> None:
    p = tmp_path / "x.log"
    p.write_text("caf\u00e9 d\u00e9j\u00e0\n[rank3]:" + WATCHDOG.format(r=3, s=7) + "\n", encoding=encoding)
    inc = traindoc.load(p)
    assert inc.collectives["seq_num"].tolist() == [7]
