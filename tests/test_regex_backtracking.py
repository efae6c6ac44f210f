"""Hostile lines cost time linear in their length: no pattern of the readers backtracks over a
run of whitespace split between two ``\\s*`` around an optional separator.

A step key followed by 4,000 spaces (``iteration`` padded by a logger's fixed-width format,
the benchmark's long-lines mix) took hours to load when ``STEP_RE``'s ``\\s*[:=#]?\\s*\\[?\\s*``
tried every way of sharing the run between its three ``\\s*`` (cubic). A whitespace run before
an optional separator is possessive (``\\s*+``): it gives back nothing another ``\\s*`` could
take, and matches what it matched before.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import traindoc

# ``\\s*`` (not yet possessive) before optional atoms that cannot match whitespace and
# another ``\\s*``: the two runs can share one stretch of whitespace in quadratically many ways
SPLIT_RUN = re.compile(r"\\s\*(?!\+)(?=(?:(?:\[(?:[^\]\s\\]|\\[^sWD])*\]|\\[^sSwW.]|[^\\\s()|.*+?\[\]{}])\?)+\\s\*)")


# the same shape over digits: a number's integer part (``\\d+``, ``[\\d,]*``) not yet possessive
# before optional atoms and another run of digits (``\\.?\\d*``): a line of 20,000 zeros after
# "MFU" took minutes (``\\d+\\.?\\d*`` tries every split of the run, at every start)
DIGIT_SPLIT = re.compile(r"(?:\\d|\[\\d[^\]]*\])[*+](?!\+)"
                         r"(?=(?:(?:\\[^sSwWdD]|\[[^\]]*\]|[^\\\s()|.*+?\[\]{}])\?)+\\d[*+])")


def _patterns() -> list[tuple[str, str]]:
    out = []
    for info in pkgutil.walk_packages(traindoc.__path__, "traindoc."):
        if info.name.endswith(("drills", "__main__")) or ".drills." in info.name:
            continue
        mod = importlib.import_module(info.name)
        for name, value in vars(mod).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                out.append((f"{info.name}.{name}", value.pattern))
    return out


def test_no_reader_pattern_splits_a_whitespace_run_between_two_stars() -> None:
    bad = [name for name, pattern in _patterns() if SPLIT_RUN.search(pattern)]
    assert not bad, f"make the first \\s* possessive (\\s*+): {bad}"


def test_no_reader_pattern_splits_a_digit_run_between_two_stars() -> None:
    bad = [name for name, pattern in _patterns() if DIGIT_SPLIT.search(pattern)]
    assert not bad, f"make the integer part possessive (\\d++, [\\d,]*+): {bad}"


def test_the_guard_finds_the_shape_it_guards() -> None:
    assert SPLIT_RUN.search(r"iteration\s*[:=#]?\s*\[?\s*(?P<n>\d+)")
    assert not SPLIT_RUN.search(r"iteration\s*+[:=#]?\s*+\[?\s*(?P<n>\d+)")
    assert not SPLIT_RUN.search(r"\s*(?:\]\s*\[|[,;|]|\s)\s*epoch")  # no optional atom between
    assert SPLIT_RUN.search(r"[:=]\s*['\"]?[(\[]?\s*(?P<sizes>\d+)")  # two optional atoms
    assert DIGIT_SPLIT.search(r"[-+]?(?:\d+\.?\d*|\.\d+)")
    assert DIGIT_SPLIT.search(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)")
    assert DIGIT_SPLIT.search(r"(?P<v>[-+]?[\d,]*\.?\d+)")
    assert not DIGIT_SPLIT.search(r"[-+]?(?:\d++\.?\d*|\.\d+)")
    assert not DIGIT_SPLIT.search(r"[-+]?(?:[\d,]*+\.|(?:\d*+,)*)?\d++")


@pytest.mark.parametrize("key", ["iteration", "step", "global_step", "epoch", "Round", "iter"])
def test_a_step_key_padded_by_thousands_of_spaces_is_read_as_nothing(tmp_path, key) -> None:
    log = tmp_path / "job.log"
    log.write_text(f"{key}{' ' * 4000}\n{key}{chr(9) * 4000}x\n", encoding="utf-8")
    got = traindoc.load(log)
    assert got.iterations.empty


# lines a hostile (or broken) writer may print: a metric key before a run that every number
# pattern can start in; each took seconds to hours before the patterns above were made linear
HOSTILE_LINES = [
    "MFU" + "0" * 20000,  # a number's integer part split every way (metric_lines' _NUM)
    "ROUND " + "1," * 10000,  # a unit looked for after every number of a comma run (UNIT_RE)
    "std" + "1." * 10000 + ": x",  # a host prefix's name split around its digit (HOST_RE)
    "BS_SCHEDULE: " + " " * 20000,  # a batch schedule's spaces split three ways
    "a=" + "1" * 20000 + " x",  # OLMo's key=value whose value ends in a letter
]


@pytest.mark.parametrize("line", HOSTILE_LINES, ids=lambda s: s[:12])
def test_a_hostile_line_of_twenty_thousand_characters_loads(tmp_path, line) -> None:
    log = tmp_path / "job.log"
    log.write_text(f"iteration 1 loss 2.5\n{line}\n", encoding="utf-8")
    got = traindoc.load(log)
    assert got.account.lines == 2
