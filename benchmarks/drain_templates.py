"""Template mining (drain3) against the generic step-line reader on the corpus's logs:
``python benchmarks/drain_templates.py [--corpus data/corpus] [--drain-site DIR]``.

Issue 26 asks whether template mining finds an unseen log's repeated step line and its columns
where the hand-written reader (``parse/metric_lines.py`` and the per-trainer patterns) misses
it, and what it costs. For every log file of the corpus this measures:

- ``traindoc.load``: rows of ``iterations`` (steps with a loss, rate or time), seconds;
- drain3 (``TemplateMiner`` with its default masking, one pass over the lines): the largest
  cluster whose template holds a metric word (loss, step, iter, epoch, it/s, tokens) and two or
  more variable parameters (``<*>``) — the "step line" it would offer — its size, seconds.

A log "missed" by the reader is one with no ``iterations`` row; drain "finds" a step line in it
when that cluster has 5 lines or more. drain3 gives a template, not columns: which ``<*>`` is
the step and which the loss still needs the vocabularies the reader already has, so a hit is
an upper bound on what mining would add. drain3 is not a dependency of traindoc: install it in
a throwaway venv and pass its site-packages as ``--drain-site``.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

METRIC_WORD_RE = re.compile(r"loss|step|iter|epoch|it/s|s/it|tokens|samples|lr\b", re.IGNORECASE)
MIN_CLUSTER = 5


def drain_step_template(lines: list[str], miner_cls: type, config_cls: type
                        ) -> tuple[str | None, int]:
    """The largest mined template that looks like a step line, and its line count."""
    miner = miner_cls(config=config_cls())  # drain3's defaults, no drain3.ini looked for
    for line in lines:
        miner.add_log_message(line)
    best: tuple[str | None, int] = (None, 0)
    for c in miner.drain.clusters:
        t = c.get_template()
        if t.count("<*>") >= 2 and METRIC_WORD_RE.search(t) and c.size > best[1]:
            best = (t, c.size)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default="data/corpus")
    ap.add_argument("--drain-site", default="", help="site-packages holding drain3")
    args = ap.parse_args()
    if args.drain_site:
        sys.path.append(args.drain_site)
    from drain3 import TemplateMiner
    from drain3.template_miner_config import TemplateMinerConfig

    import traindoc

    files = sorted(p for p in Path(args.corpus).glob("*/*/logs/**/*") if p.is_file()
                   and p.suffix not in (".gz", ".pkl", ".pickle", ".json", ".csv", ".bin"))
    mb = t_reader = t_drain = 0.0
    missed = found = logs = 0
    examples: list[str] = []
    for p in files:
        try:
            text = p.read_text(errors="replace")
        except OSError:
            continue
        logs += 1
        mb += len(text.encode()) / 1e6
        t0 = time.perf_counter()
        rows = len(traindoc.load(str(p)).iterations)
        t1 = time.perf_counter()
        template, size = drain_step_template(text.splitlines(), TemplateMiner,
                                             TemplateMinerConfig)
        t2 = time.perf_counter()
        t_reader += t1 - t0
        t_drain += t2 - t1
        if rows == 0:
            missed += 1
            if size >= MIN_CLUSTER:
                found += 1
                examples.append(f"  {p.parent.parent.name}: {size} lines  {template[:110]}")
    print(f"{logs} log files, {mb:.1f} MB")
    print(f"reader (traindoc.load): {t_reader:.1f} s, {t_reader / max(mb, 1e-9):.2f} s/MB")
    print(f"drain3 (TemplateMiner): {t_drain:.1f} s, {t_drain / max(mb, 1e-9):.2f} s/MB")
    print(f"files with no iterations row: {missed}; drain3 offers a step-like template "
          f"(>= {MIN_CLUSTER} lines) in {found} of them:")
    print("\n".join(examples))


if __name__ == "__main__":
    main()
