"""The summary guard (issue 28): every bundled sample's and corpus case's summary — its
runbook's and triage's facts, verdict, confidence, finding titles and action commands — equals
the committed snapshot ``tests/data/summaries.json``. A restructuring keeps it identical; a
regeneration is a deliberate behaviour change, named in its commit."""

from __future__ import annotations

import json

import pytest

from conftest import CORPUS, CORPUS_SWEEP, ROOT, CorpusSweep
from traindoc import score

SNAPSHOT = ROOT / "tests" / "data" / "summaries.json"
REGENERATE = ("rm -f tests/data/summaries.json && PYTHONPATH=lib python -m traindoc.cli score "
              "--summaries tests/data/summaries.json")


@pytest.mark.slow
@pytest.mark.xdist_group(CORPUS_SWEEP)
def test_every_summary_equals_the_snapshot(corpus_sweep: CorpusSweep) -> None:
    expected = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    # the corpus cases' records come with the floor test's sweep (one load a case for both)
    got = score.summaries(ROOT, workers=2, corpus=False)
    got |= {(CORPUS / o.runbook / o.id).relative_to(ROOT).as_posix(): o.summary
            for o in corpus_sweep.outcomes()}
    actual = json.loads(json.dumps(got, sort_keys=True, ensure_ascii=False, default=str))
    changed = sorted(k for k in expected.keys() | actual.keys()
                     if expected.get(k) != actual.get(k))
    detail = [f"{k}:\n  snapshot {json.dumps(expected.get(k), default=str)[:600]}\n"
              f"  now      {json.dumps(actual.get(k), default=str)[:600]}" for k in changed[:5]]
    assert not changed, (
        f"{len(changed)} summaries differ from {SNAPSHOT.name}:\n" + "\n".join(detail)
        + f"\nIf (and only if) the change is a deliberate behaviour change, regenerate with\n"
          f"  {REGENERATE}\nand name the change in the commit message.")
