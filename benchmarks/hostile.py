"""Hostile lines: does any reader pattern cost more than linear time in a line's length?

A log is written by whoever runs the job, and one line of it may be a megabyte. A pattern that
backtracks (a run split between two stars, a number's integer part split every way) turns such a
line into minutes or hours of loading. This benchmark builds lines from the words of every
compiled pattern of the library (each word, then a separator, then a filler repeated), loads
them at two lengths, and reports the worst growth of the load time: linear is 4x for 4x the
length. `make bench` runs it; `--quick` samples every eighth word (about a minute).

    python benchmarks/hostile.py [--quick] [--words WORD ...]
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lib"))

import traindoc  # noqa: E402

WORD_RE = re.compile(r"[A-Za-z_]{3,}")
FILLS = (" ", "\t", "0", "a", ":", " :", "1.", "-", "=", "[", "/", "a ", "0 ", ", ", "x=1 ", "|",
         "\\", "'", "(", "_", "0:", "a1", "1,")
SEPARATORS = ("", ": ", "=", " ", "[", "(", " 1")
SHORT, LONG = 400, 1600  # filler repeats: the long lines are 4x (or more) the short ones
GROWTH_LIMIT = 6.0  # linear is 4x; above this a pattern is taken for super-linear
MIN_SECONDS = 0.4  # a long load faster than this is noise whatever its ratio


def pattern_words() -> list[str]:
    """The words of every compiled pattern and needle of the library, sorted."""
    words: set[str] = set()
    for info in pkgutil.walk_packages(traindoc.__path__, "traindoc."):
        if info.name.endswith(("drills", "__main__")) or ".drills." in info.name:
            continue
        for value in vars(importlib.import_module(info.name)).values():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                words.update(WORD_RE.findall(value.pattern))
            elif isinstance(value, tuple):
                words.update(w for x in value if isinstance(x, str) for w in WORD_RE.findall(x))
    return sorted(words)


def load_seconds(path: Path, word: str, repeats: int) -> float:
    """Seconds to load one file of ``word``'s hostile lines at ``repeats`` fillers."""
    path.write_text("\n".join(word + sep + fill * repeats for fill in FILLS for sep in SEPARATORS)
                    + "\n", encoding="utf-8")
    t0 = time.perf_counter()
    traindoc.load(str(path))
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="every eighth word: about a minute")
    ap.add_argument("--words", nargs="*", help="only these words")
    args = ap.parse_args(argv)
    words = args.words or pattern_words()
    if args.quick and not args.words:
        words = words[::8]
    worst: list[tuple[float, float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hostile.log"
        for word in words:
            short, long = load_seconds(path, word, SHORT), load_seconds(path, word, LONG)
            worst.append((long / max(short, 1e-3), long, word))
    worst.sort(reverse=True)
    bad = [w for w in worst if w[0] > GROWTH_LIMIT and w[1] > MIN_SECONDS]
    print(f"hostile lines: {len(words)} words x {len(FILLS)} fillers x {len(SEPARATORS)} "
          f"separators, {SHORT} and {LONG} repeats")
    for growth, seconds, word in worst[:5]:
        print(f"  {word:<30} {growth:5.1f}x  ({seconds:.2f} s at {LONG})")
    print(f"  worst growth for 4x the length: {worst[0][0]:.1f}x (target <= {GROWTH_LIMIT:.0f}x "
          f"where a load takes over {MIN_SECONDS} s): {'NOT MET' if bad else 'met'}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
