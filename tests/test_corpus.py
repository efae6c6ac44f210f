"""The corpus of real incident logs (data/corpus): every case is well formed, the scorer's
comparison rules hold, and the runbooks stay at or above the floor on it (CI runs this)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import CORPUS, CORPUS_SWEEP, CorpusSweep
from traindoc import score
from traindoc.diagnose import failure_class

# Raised as runbooks improve; never lowered to let a regression land. Each floor sits about one
# case below today's score. 2026-11-26: 217 cases came in three blind batches (their intake
# records say how the runbooks did before any change for them); the floors were set anew for the
# 461 cases (444 right), no case that was right having gone wrong. Batch 2026-11-26d (80 cases,
# 38 right blind) took the corpus to 541; after its round of family fixes 502 are right, no
# earlier case having gone wrong: the floors were set anew for those (lower, by the batch's
# wrong cases, not by a regression). Batch 2026-11-26e (55 cases, 31 right blind) took it to 596;
# after the round of fixes for it and for batch d, 553 are right and no case that was right went
# wrong: gpu_crash and throughput floors lower by batch e's wrong cases, the others raised.
# Batch 2026-11-27f (45 cases, 30 right blind) took it to 641; after its round of fixes 591 are
# right (556 of the 596 before it, against 553): deadlock, loss_spike, all and triage's floors
# lower by batch f's wrong cases, throughput's raised.
# Batch 2026-11-27g (42 cases, 26 right blind) took it to 683; after its round of fixes (and of
# the families left from batch f) 644 are right, no case that was right having gone wrong: every
# floor raised.
# Batches 2026-11-27h (48 cases, 30 right blind) and 2026-11-27i (24 cases, 14 right blind,
# scored after h's round) took it to 755; after their rounds 715 are right, no case that was
# right having gone wrong: deadlock's and triage's healthy floor lower by batch i's wrong cases
# (4 deadlock cases, 3 healthy runs triage names a class on), the others raised.
# Batches 2026-11-27j (36 cases, 22 right blind) and 2026-11-27k (21 cases, 17 right blind,
# scored after both rounds) took it to 812; after the rounds 775 are right, no case that was
# right having gone wrong: deadlock's floor lower by batch k's two Horovod stall reports (a
# family whose labels conflict), the others raised or kept.
# Batches 2026-11-27l (34 cases, 26 right blind), m (24, 12) and n (28, 17; l and m scored after
# round l, n after round m) took it to 898; after the rounds 854 are right, no case that was
# right having gone wrong: timeout's, throughput's, loss_spike's and all's floors lower by the
# new batches' wrong cases (n's came after the last round), gpu_crash's, deadlock's and triage's
# raised.
# Batches 2026-11-27o (32 cases, 24 right blind) and p (22, 12; both scored after round o) took
# it to 952; after round o and a short round on o and p, 908 are right, no case that was right
# having gone wrong: gpu_crash's and triage's failing floor lower by the new batches' wrong
# cases, the others raised.
# Batch 2026-11-27q (17 cases, 13 right blind, scored after round q) took it to 969; after round
# q and a short round on batch q 931 are right, no case that was right having gone wrong: every
# floor but deadlock's and triage's healthy one raised.
# Batch 2026-11-27r (36 cases, 24 right blind, scored after round s) took it to 1005; after a
# short round on batch r 962 are right, no case that was right having gone wrong: timeout's,
# gpu_crash's, throughput's, all's and triage's floors lower by batch r's wrong cases,
# deadlock's and loss_spike's raised.
# Batch 2026-11-28u (31 cases, 22 right blind, scored after round u) took it to 1036; after a
# short round on batch u 997 are right; two that were right went wrong on a label conflict
# (timeout-horovod-1012 and -334, Horovod stall reports labelled timeout where eight like them
# say deadlock): loss_spike's floor lower by batch u's wrong cases, every other one raised.
# Batch 2026-11-28w (55 cases from seven collectors, repositories new to the corpus, 26 right
# blind, scored after round w and before any change for it) took it to 1091; no round on batch
# w followed, and nothing right before it went wrong: the floors of every class batch w reached
# lower by its wrong cases (timeout, gpu_crash, throughput, loss_spike, all, triage's failing
# one), deadlock's unchanged, triage's healthy one raised.
# Round x (its engineers lost most of their time to an outage) fixed loss_spike's and gpu_crash's
# families of batch w (1025 -> 1031 of 1091); batch 2026-11-28x (13 cases, 10 right blind: 11
# negatives, two of them healthy throughput runs read wrong) took it to 1104: throughput's floor
# lower by those two, every other one raised where it moved, triage's healthy one unchanged.
# Rounds y and z: round y (fixers on the start list's families) took the corpus to 1059/1104;
# batch 2026-11-28y (48 cases, 3 in 4 positives, every repository new, 27 right blind) took it
# to 1152; round z fixed 9 of batch y's families (1086 -> 1095) with nothing right going wrong:
# deadlock's floor lower by batch y's healthy per-rank DDP logs read wrong, every other raised.
# Round a (1095 -> 1099 of 1152; a SLURM time limit read as the job's stop, which makes the
# three bigscience benchmark cases labelled healthy wrong: a label conflict named in the closing
# note) and batch 2026-11-28z (24 cases, 14 right blind) took it to 1176: gpu_crash's,
# throughput's, deadlock's and triage's healthy floors lower by batch z's wrong cases, every
# other raised. Batch 2026-11-28za (31 cases, 14 right blind) and round d (13 cases newly right,
# none newly wrong) took it to 1141 of 1207: every floor one case below today's (the all,
# gpu_crash, loss_spike and triage floors lower by batch za's wrong cases). Round e (six
# families, none newly wrong) took it to 1147: the floors it moved one case below today's.
# Batch 2026-11-29a (53 cases, 32 right blind) and round f (its families and the start list's,
# none newly wrong) took it to 1191 of 1260: every floor one case below today's (the all,
# gpu_crash, loss_spike, throughput and triage floors lower by batch 29a's wrong cases).
# Batch 2026-11-29b (62 cases, 32 right blind) and round h (its families and batch 29a's, none
# newly wrong) took it to 1248 of 1322: every floor one case below today's (the all, timeout,
# loss_spike, throughput and triage's healthy floors lower by batch 29b's wrong cases).
# Batch 2026-11-29c (64 cases, 45 right blind) and round i (its families, none newly wrong)
# took it to 1301 of 1386: every floor one case below today's (the all, gpu_crash, loss_spike,
# throughput and triage floors lower by batch 29c's wrong cases; timeout's and deadlock's
# raised).
# Batch 2026-11-29d (40 cases, 17 right blind; 14 more from forks of repositories the corpus
# holds, batch 2026-11-29d-forks, 7 right) and round j (its families, none newly wrong) took it
# to 1336 of 1440: every floor one case below today's (each lower by batch 29d's wrong cases).
# Batch 2026-11-29e (65 cases from nine collectors, 43 of them whole logs of 300 lines or more;
# 30 right blind) and round k (its families and the start list's, none newly wrong) took it to
# 1379 of 1505: every floor one case below today's (each lower by batch 29e's wrong cases but
# timeout's, raised). Batch 2026-11-29f (110 cases from thirteen collectors, 83 of them 300
# lines or more; 68 right blind) and round l (its families, none newly wrong) took it to 1468 of
# 1615: every floor one case below today's (each lower by batch 29f's wrong cases: 21 of them).
# Batch 2026-11-29g (71 cases from twelve collectors, 43 of them 300 lines or more; 40 right
# blind) and round m (its families; two cases right before went wrong: an mmdet excerpt labelled
# with the epoch's batch as printed, now read as the run's step, and a slowdown whose log ends in
# a cut traceback, now triaged as a crash) took it to 1529 of 1686: every floor one case below
# today's (gpu_crash's unchanged, timeout's and throughput's raised, the others lower by batch
# 29g's wrong cases). Batch 2026-11-29h (83 cases from twelve collectors, 49 right blind) and
# round n (its families; none right before went wrong) took it to 1587 of 1769: every floor one
# case below today's, each lower by batch 29h's wrong cases (25 of its 83) and triage's by its
# misses.
FLOOR_PCT = {"all": 89.6, "timeout": 95.1, "gpu_crash": 87.9, "loss_spike": 88.6,
             "throughput": 88.5, "deadlock": 86.2}
# triage: the share of failing cases where it names the expected class first (issue 26: 90),
# and of healthy cases where it names none (1094/1170 and 464/504 today)
TRIAGE_FLOOR_PCT = 93.4
TRIAGE_HEALTHY_FLOOR_PCT = 91.8
MAX_LOG_BYTES = 256 * 1024
CASES = score.find_cases(CORPUS) if CORPUS.is_dir() else []


# --- the comparison rules (data/corpus/README.md) --------------------------------------------

@pytest.mark.parametrize("expected, actual, ok", [
    ([0, 3], [3, 0], True),
    ([0, 3], [0, 3, 5], False),
    ([], [], True),
    (None, [], True),
    (None, None, True),
    (None, 5, False),
    ([], [1], False),
    (600000, 600000, True),
    (600000, 600001, False),
    (149.09, 147.0, True),
    (149.09, 140.0, False),
    (5, 5.05, True),
    ({"min": 10, "max": 20}, 15, True),
    ({"min": 10, "max": 20}, 21, False),
    ({"min": 10}, None, False),
    ({"any_of": ["desync", "straggler"]}, "straggler", True),
    ({"any_of": ["desync", "straggler"]}, "unknown", False),
    ({"any_of": [None, 7]}, None, True),
    ({"contains": "illegal memory"}, "CUDA error: an Illegal Memory access was", True),
    ({"contains": "illegal memory"}, None, False),
    ("ALLREDUCE", "ALLREDUCE", True),
    ("ALLREDUCE", "allreduce", False),
    ({"seq_num": 9, "ops": {"0": "gloo:all_reduce"}},
     {"seq_num": 9, "ops": {0: "gloo:all_reduce", 1: "gloo:all_gather"}, "kind": "op"}, True),
    ([{"peak_iteration": 5}], [{"peak_iteration": 5, "peak_loss": 3.0}], True),
    ([{"peak_iteration": 5}], [{"peak_iteration": 5}, {"peak_iteration": 9}], False),
    ([{"peak_iteration": {"min": 4, "max": 6}}], [{"peak_iteration": 6}], True),
    (True, True, True),
    (True, 1, False),
    (False, None, False),
])
def test_matches(expected, actual, ok) -> None:
    assert score.matches(expected, actual) is ok


def test_compare_names_each_wrong_fact() -> None:
    got = score.compare({"seq_num": 9, "op_type": "ALLREDUCE", "pattern": "desync"},
                        {"seq_num": 9, "op_type": "BROADCAST", "pattern": None})
    assert [m.fact for m in got] == ["op_type", "pattern"]
    line = score.Outcome("c", "timeout", False, got).line()
    assert "op_type: expected \"ALLREDUCE\", got \"BROADCAST\"" in line


def test_render_ends_with_the_count() -> None:
    outs = [score.Outcome("a", "timeout", True), score.Outcome("b", "timeout", False,
                                                                 error="boom")]
    text = score.render(outs)
    assert text.splitlines()[-1] == "1/2 cases right"
    assert "✗ b [timeout]: boom" in text


def test_a_crash_is_a_wrong_case(tmp_path) -> None:
    d = tmp_path / "timeout" / "empty"
    (d / "logs").mkdir(parents=True)
    (d / "case.json").write_text(json.dumps({
        "id": "empty", "runbook": "timeout", "source": {"repo": "a/b", "number": 1},
        "summary": "no logs at all", "facts": {"timed_out_ranks": [1]}}))
    [case] = score.find_cases(tmp_path)
    out = score.score_case(case)
    assert not out.right and out.error


# --- the corpus itself ----------------------------------------------------------------------

def _fact_keys(runbook: str) -> set[str]:
    return set(failure_class(runbook).FACT_KEYS)


def test_corpus_cases_are_well_formed() -> None:
    seen_ids: set[str] = set()
    sources: dict[tuple, str] = {}
    for c in CASES:
        assert c.id == c.path.name, f"{c.path}: id {c.id!r} is not the folder name"
        assert re.fullmatch(r"[a-z0-9][a-z0-9_-]*", c.id), c.id
        assert c.id not in seen_ids, f"two cases named {c.id}"
        seen_ids.add(c.id)
        assert c.path.parent.name == c.runbook, f"{c.id}: in {c.path.parent.name}/"
        src = c.source
        assert src.get("repo") and (src.get("number") or (src.get("path") and src.get("commit"))
                                    ), f"{c.id}: source needs repo and number, or path+commit"
        raw = (c.path / "case.json").read_text(encoding="utf-8")
        assert "http://" not in raw and "https://" not in raw, f"{c.id}: no links in case.json"
        keys = _fact_keys(c.runbook)
        if keys:
            assert set(c.facts) <= keys, f"{c.id}: unknown facts {set(c.facts) - keys}"
        files = [p for p in c.logs.rglob("*") if p.is_file()] if c.logs.is_dir() else []
        assert files, f"{c.id}: no logs/"
        for f in files:
            assert f.stat().st_size <= MAX_LOG_BYTES, f"{f}: over {MAX_LOG_BYTES} bytes"
        raw_case = json.loads(raw)
        # issue 30: what the source says caused and fixed it ("none stated" when it says nothing)
        assert "resolution" in raw_case, f"{c.id}: no resolution"
        res = raw_case["resolution"]
        assert isinstance(res, dict), f"{c.id}: resolution {res!r}"
        assert set(res) == {"cause", "fix", "who", "status"}, f"{c.id}: resolution {res}"
        assert res["status"] in RESOLUTION_STATUSES, f"{c.id}: status {res['status']!r}"
        assert res["who"] in RESOLUTION_WHO, f"{c.id}: who {res['who']!r}"
        assert res["status"] == "none stated" or res["cause"] or res["fix"], c.id
        key = (src.get("repo"), src.get("number"), src.get("path"))
        if not c.id.endswith(("-b", "-c", "-d")):
            if key in sources:
                pytest.fail(f"{c.id} and {sources[key]} cite the same source; a further case "
                            "from one thread ends in -b, -c or -d")
            sources[key] = c.id


RESOLUTION_STATUSES = ("confirmed", "suggested", "none stated")
RESOLUTION_WHO = ("reporter", "maintainer", "commenter", "chronicle", "")


def _sweep_params() -> list[Any]:
    """One parameter a corpus case (its folder: the case's xdist group), the cases that go
    through a notebook marked so."""
    by_notebook = score.notebook_sample(CASES, 1)
    return [pytest.param(c.path, id=c.id,
                         marks=[pytest.mark.notebooks] if c.id in by_notebook else [])
            for c in CASES]


@pytest.mark.parametrize("path", _sweep_params())
def test_corpus_case_is_scored(path: Path, corpus_sweep: CorpusSweep) -> None:
    """One case of the floor test's sweep, scored where the case's other sweeps read it."""
    case = next(c for c in CASES if c.path == path)
    out = corpus_sweep.outcome(path)
    assert (out.id, out.runbook, out.batch) == (case.id, case.runbook, case.batch)
    assert out.summary is not None and out.summary["runbook"] == case.runbook


@pytest.mark.notebooks
@pytest.mark.xdist_group(CORPUS_SWEEP)
def test_runbooks_on_the_corpus_stay_above_the_floor(capsys, corpus_sweep: CorpusSweep) -> None:
    if not CASES:
        pytest.skip("no corpus")
    outcomes = corpus_sweep.outcomes()
    with capsys.disabled():
        print("\n" + score.render(outcomes))
    for row in score.table(outcomes):
        floor = FLOOR_PCT.get(row["runbook"], 0.0)
        assert row["percent"] >= floor, f"{row['runbook']}: {row['percent']} % < floor {floor} %"
    by_nb = [o for o in outcomes if o.via == "notebook"]
    assert all(o.error is None or "NoInputError" not in o.error for o in by_nb)
    t = score.triage_table(outcomes)
    assert t["failing_percent"] >= TRIAGE_FLOOR_PCT, t
    assert t["healthy_percent"] >= TRIAGE_HEALTHY_FLOOR_PCT, t


# --- intake: the blind figure (issue 26) ------------------------------------------------------

def test_intake_records_match_the_facts_they_were_scored_with() -> None:
    """A case's facts are never edited after its intake: the record keeps their hash."""
    for c in CASES:
        if c.intake is None:
            continue
        assert set(c.intake) == {"commit", "right", "facts_sha256"}, c.id
        assert re.fullmatch(r"[0-9a-f]{40}", c.intake["commit"]), c.id
        assert c.intake["facts_sha256"] == c.facts_sha256, (
            f"{c.id}: facts changed after its intake ({c.intake['commit'][:12]})")
        assert c.batch, f"{c.id}: an intake record without a batch"


def _case(tmp_path, facts: dict, runbook: str = "timeout", **extra) -> score.Case:
    d = tmp_path / runbook / "c1"
    (d / "logs").mkdir(parents=True)
    (d / "logs" / "job.log").write_text("nothing here\n")
    (d / "case.json").write_text(json.dumps({
        "id": "c1", "runbook": runbook, "source": {"repo": "a/b", "number": 1},
        "summary": "s", "facts": facts, **extra}, indent=1))
    [case] = score.find_cases(tmp_path)
    return case


def test_record_intake_writes_once(tmp_path) -> None:
    case = _case(tmp_path, {"timed_out_ranks": [1]}, batch="b1")
    out = score.score_case(case)
    assert score.record_intake([case], [out], "a" * 40) == ["c1"]
    raw = json.loads((case.path / "case.json").read_text())
    assert raw["intake"] == {"commit": "a" * 40, "right": False,
                             "facts_sha256": score.facts_sha256({"timed_out_ranks": [1]})}
    [again] = score.find_cases(tmp_path)
    assert score.record_intake([again], [score.Outcome("c1", "timeout", True)], "b" * 40) == []
    assert json.loads((case.path / "case.json").read_text())["intake"]["commit"] == "a" * 40
    row = score.intake_table([score.Outcome("c1", "timeout", True, batch="b1",
                                            intake_right=False)])[0]
    assert (row["batch"], row["cases"], row["right"]) == ("b1", 1, 0)


@pytest.mark.parametrize("facts, extra, expected", [
    ({"timed_out_ranks": [1]}, {}, "timeout"),
    ({"timed_out_ranks": [], "pattern": "unknown"}, {}, score.NO_TRIAGE),
    ({"timed_out_ranks": [], "pattern": "desync"}, {}, "timeout"),
    ({"timed_out_ranks": []}, {"triage": None}, None),
    ({"timed_out_ranks": []}, {"triage": "gpu_crash"}, "gpu_crash"),
])
def test_expected_class(tmp_path, facts, extra, expected) -> None:
    assert _case(tmp_path, facts, **extra).expected_class == expected


def test_a_case_that_nothing_satisfies_is_caught(tmp_path) -> None:
    assert score.passes_blind(_case(tmp_path, {"timed_out_ranks": []}))
    assert not score.passes_blind(_case(tmp_path / "x", {"timed_out_ranks": [0]}))


def test_a_bad_triage_expectation_is_refused(tmp_path) -> None:
    with pytest.raises(ValueError, match="triage must be"):
        _case(tmp_path, {"timed_out_ranks": [1]}, triage="timeouts")


# issue 14: at least this many real cases per runbook (and 150 in all)
MIN_CASES = {"timeout": 40, "gpu_crash": 30, "deadlock": 25, "throughput": 25, "loss_spike": 30}


def test_corpus_keeps_its_size() -> None:
    if not CASES:
        pytest.skip("no corpus")
    counts: dict[str, int] = {}
    for c in CASES:
        counts[c.runbook] = counts.get(c.runbook, 0) + 1
    assert sum(counts.values()) >= 150, counts
    for rb, n in MIN_CASES.items():
        assert counts.get(rb, 0) >= n, (rb, counts)
