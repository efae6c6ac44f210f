"""Triage: which failure classes a bundle shows, in which order, which one is the cause."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

import traindoc
from conftest import DATA, SAMPLE_DIRS, load_once, reports_once, triage_once
from test_loss_spike_families import PADDLENLP_7537  # the same real lines
from traindoc import plots
from traindoc.diagnose import NAMES, deadlock, failure_class, triage
from traindoc.diagnose.deadlock.stacks import n_procs
from traindoc.report import Action, Report

MIXED = DATA / "triage" / "crash_then_timeouts"
DRILL_CRASH = DATA / "gpu_crash" / "drill_crash"

WATCHDOG = ("[rank{r}]:[E708 01:47:2{r}.901930947 ProcessGroupNCCL.cpp:629] [Rank {r}] Watchdog "
            "caught collective operation timeout: WorkNCCL(SeqNum=2901, OpType=ALLREDUCE, "
            "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600070 milliseconds before timing "
            "out.")
# gloo's timeout (as the CPU drills print it): no timestamp.
GLOO_TIMEOUT = ("[rank{r}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/"
                "tcp/unbound_buffer.cc:78] Timed out waiting 5000ms for recv operation to complete")
SEGFAULT = "[rank{r}]:Fatal Python error: Segmentation fault"
ROOT_CAUSE = """Root Cause (first observed failure):
[0]:
  time      : 2026-11-21_23:51:54
  host      : localhost
  rank      : {r} (local_rank: {r})
  exitcode  : -9 (pid: 9487)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 9487
============================================================
"""


def classes(report: Report) -> list[tuple[str, str]]:
    return [(c["class"], c["role"]) for c in report.facts["classes"]]


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_gpu_crash_then_timeouts_names_the_crash_as_cause() -> None:
    r = triage.diagnose(traindoc.load(MIXED))
    assert classes(r)[:2] == [("gpu_crash", "cause"), ("timeout", "consequence")]
    crash, timeout = r.facts["classes"][:2]
    assert r.facts["cause"] == "gpu_crash" and r.facts["ordered_by"] == "time"
    assert r.confidence == "high"
    assert crash["first_seen"].startswith("2024-07-08T01:36:12")
    assert timeout["first_seen"].startswith("2024-07-08T01:46:13")
    assert crash["ranks"] == [3] and timeout["ranks"] == [4, 5, 6, 7]
    assert any("CUDA error: an illegal memory access" in e for e in crash["evidence"])
    assert any("SIGABRT" in e for e in crash["evidence"])
    assert all("Watchdog caught" in e or "watchdog" in e for e in timeout["evidence"])
    assert r.verdict.startswith("gpu_crash is the likely cause")
    assert r.actions[0].id == "start_with_gpu_crash"
    # the consequence's teardown (node-b's SIGABRTs, the launchers' SIGTERMs) is not a crash
    assert not any("01:46" in e and "SIGABRT" in e for e in crash["evidence"])


def test_expected_json_of_the_mixed_bundle_is_what_triage_finds() -> None:
    spec = json.loads((MIXED / "expected.json").read_text())
    r = triage.diagnose(traindoc.load(MIXED))
    assert spec["runbook"] == "triage"
    for want, got in zip(spec["facts"]["classes"], r.facts["classes"], strict=False):
        assert {k: got[k] for k in want} == want


def test_drill_crash_killed_rank_is_the_crash_and_survivors_errors_are_not() -> None:
    # Real drill: rank 1 SIGKILLed; rank 0 dies of gloo's "Connection reset by peer" (exit 1).
    r = triage.diagnose(traindoc.load(DRILL_CRASH))
    assert [c for c, _ in classes(r)][:1] == ["gpu_crash"]
    assert "timeout" not in [c for c, _ in classes(r)]
    crash = r.facts["classes"][0]
    assert crash["ranks"] == [1]
    assert "SIGKILL" in crash["detail"] and "root cause" in crash["detail"]
    assert r.facts["root_cause_exit"]["rank"] == 1


@pytest.mark.parametrize("sample", ["drill_timeout", "drill_unseeded_split", "drill_desync"])
def test_launcher_sigterm_and_peer_loss_are_not_crashes(sample: str) -> None:
    # torchrun SIGTERMs the survivor; the other rank exits 1 after "Connection closed by peer".
    r = triage.diagnose(traindoc.load(DATA / "timeout" / sample))
    assert classes(r)[:1] == [("timeout", "cause")]
    assert "gpu_crash" not in [c for c, _ in classes(r)]


def test_every_sample_shows_its_own_class() -> None:
    """Every bundled sample of a table-detected class (timeout, gpu_crash, deadlock) is
    triaged as that class; the others at least triage without error."""
    for d in SAMPLE_DIRS:
        spec = {}
        for name in ("expected.json", "drill.json"):
            if (d / name).exists():
                spec = json.loads((d / name).read_text())
                break
        cls = spec.get("class") or spec.get("runbook") or d.parent.name
        r = triage.diagnose(traindoc.load(d))
        assert r.confidence in ("high", "medium", "low") and r.findings, d
        if cls in triage.DETECTORS:  # the classes read straight off the tables
            assert cls in [c for c, _ in classes(r)], (d, r.verdict)


def test_without_timestamps_torchrun_root_cause_decides(tmp_path: Path) -> None:
    # The timeout line comes first in the file and carries no time; torchrun's root-cause record
    # names rank 1, killed: the crash is the cause.
    write(tmp_path, "job.log", GLOO_TIMEOUT.format(r=0) + "\n" + ROOT_CAUSE.format(r=1))
    r = triage.diagnose(traindoc.load(tmp_path))
    assert classes(r) == [("gpu_crash", "cause"), ("timeout", "consequence")]
    assert r.facts["ordered_by"] == "root_cause" and r.confidence == "medium"


@pytest.mark.parametrize("first", ["timeout", "gpu_crash"])
def test_without_times_or_root_cause_file_order_decides(tmp_path: Path, first: str) -> None:
    lines = [GLOO_TIMEOUT.format(r=0), SEGFAULT.format(r=1)]
    if first == "gpu_crash":
        lines.reverse()
    write(tmp_path, "job.log", "\n".join(lines) + "\n")
    r = triage.diagnose(traindoc.load(tmp_path))
    assert classes(r)[0] == (first, "cause")
    assert {c for c, _ in classes(r)} == {"timeout", "gpu_crash"}
    assert r.facts["ordered_by"] == "file_order" and r.confidence == "low"


def test_times_beat_file_order(tmp_path: Path) -> None:
    # The later timeout is logged first (another file sorts first); the times decide.
    write(tmp_path, "a_rank1.log", WATCHDOG.format(r=5) + "\n")
    write(tmp_path, "b_rank0.log", "[rank0]:[E708 01:37:10.000000000 ProcessGroupNCCL.cpp:1595] "
          "[PG ID 0 PG GUID 0(default_pg) Rank 0] Process group watchdog thread terminated with "
          "exception: CUDA error: an illegal memory access was encountered\n")
    r = triage.diagnose(traindoc.load(tmp_path, year=2024))
    assert classes(r) == [("gpu_crash", "cause"), ("timeout", "consequence")]
    assert r.facts["ordered_by"] == "time"


def test_teardown_abort_of_a_timed_out_rank_is_not_a_crash(tmp_path: Path) -> None:
    write(tmp_path, "job.log", WATCHDOG.format(r=3) + "\n" + SEGFAULT.format(r=3) + "\n")
    r = triage.diagnose(traindoc.load(tmp_path, year=2024))
    assert classes(r) == [("timeout", "cause")]


@pytest.mark.parametrize("exc", ["c10::DistBackendError", "c10::DistError"])
def test_c10d_abort_printed_above_the_timeout_is_its_teardown(tmp_path: Path, exc: str) -> None:
    # huggingface/accelerate#3861 (torch 2.7): another rank's abort, interleaved, lands above
    # rank 2's watchdog line; it names c10d's exception, not an error of its own
    write(tmp_path, "job.log",
          "frame #6: clone + 0x43 (0x7fb88736e353 in /lib/x86_64-linux-gnu/libc.so.6)\n\n"
          f"terminate called after throwing an instance of '{exc}'\n"
          "[rank2]:[E1128 21:12:49.422069862 ProcessGroupNCCL.cpp:2068] [PG ID 0 PG GUID "
          "0(default_pg) Rank 2] Process group watchdog thread terminated with exception: "
          "[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=22, "
          "OpType=BROADCAST, NumelIn=687, NumelOut=687, Timeout(ms)=600000) ran for 600084 "
          "milliseconds before timing out.\n")
    r = triage.diagnose(traindoc.load(tmp_path, year=2024))
    assert classes(r) == [("timeout", "cause")]


def test_deadlock_from_stack_dumps() -> None:
    r = triage.diagnose(traindoc.load(DATA / "deadlock" / "drill_hang"))
    assert ("deadlock", "cause") in classes(r)
    assert "gpu_crash" not in [c for c, _ in classes(r)]  # the runner's SIGTERMs


def test_nothing_found_is_a_finding_not_a_crash(tmp_path: Path) -> None:
    write(tmp_path, "job.log", "nothing wrong here\n")
    r = triage.diagnose(traindoc.load(tmp_path))
    assert r.facts["classes"] == [] and r.facts["cause"] is None
    assert r.confidence == "low" and "No known failure class" in r.verdict
    assert any(f.id == "no_failure_class" for f in r.findings)
    assert r.actions and r.actions[0].priority == 1


def test_empty_incident() -> None:
    r = triage.diagnose(traindoc.Incident.empty())
    assert r.facts["classes"] == [] and r.findings


def _module(facts: dict | None = None, error: Exception | None = None) -> types.SimpleNamespace:
    def diagnose(incident):  # noqa: ARG001
        if error:
            raise error
        return Report("x", "the class's own verdict", "high", facts or {})
    return types.SimpleNamespace(diagnose=diagnose)


LOSS = DATA / "loss_spike" / "drill_loss_spike"


def test_metric_classes_not_checked_without_their_module() -> None:
    r = triage.diagnose(traindoc.load(LOSS), modules={})
    nc = {n["class"]: n["reason"] for n in r.facts["not_checked"]}
    assert set(nc) == {"throughput", "loss_spike"}
    assert "not available" in nc["loss_spike"]
    assert "loss_spike" not in [c for c, _ in classes(r)]
    assert any(a.id == "check_loss_spike" for a in r.actions)


def test_metric_class_present_only_when_its_diagnosis_finds_something() -> None:
    inc = traindoc.load(LOSS)
    spike = {"spikes": [{"start_iteration": 20, "peak_iteration": 20}]}
    found = triage.diagnose(inc, modules={"loss_spike": _module(spike),
                                          "throughput": _module({"change_iteration": None})})
    assert classes(found) == [("loss_spike", "cause")]
    assert found.facts["classes"][0]["detail"] == "the class's own verdict"
    assert any("iteration       20/" in e for e in found.facts["classes"][0]["evidence"])
    assert found.facts["not_checked"] == []
    quiet = triage.diagnose(inc, modules={"loss_spike": _module({"spikes": []}),
                                          "throughput": _module({})})
    assert classes(quiet) == [] and quiet.facts["not_checked"] == []


def test_a_failing_class_module_is_reported_not_raised() -> None:
    r = triage.diagnose(traindoc.load(LOSS), modules={
        "loss_spike": _module(error=ValueError("boom")), "throughput": _module({})})
    nc = {n["class"]: n["reason"] for n in r.facts["not_checked"]}
    assert "ValueError: boom" in nc["loss_spike"]


CORPUS = DATA / "corpus"


def _case(path: str) -> traindoc.Incident:
    return traindoc.load(CORPUS / path / "logs")


@pytest.mark.parametrize("case", [
    "loss_spike/loss_spike-tablemaster-mmocr-32",  # 2 logged steps, a spike the runbook finds
    "loss_spike/loss_spike-waveglow-32",  # 7
    "loss_spike/loss_spike-xtuner-187",  # 6
])
def test_a_short_series_is_judged_by_the_class_runbook(case: str) -> None:
    # issue 27: loss and throughput were skipped below a fixed number of steps, not_checked empty
    inc = _case(case)
    assert triage._series_len(inc, "loss_spike") < triage.MIN_SERIES
    own = failure_class("loss_spike").diagnose(inc)
    assert own.facts["spikes"] or own.facts["nan_iterations"]
    r = triage.diagnose(inc)
    assert "loss_spike" in [c for c, _ in classes(r)]
    assert CONFIDENCE.index(r.confidence) <= CONFIDENCE.index(own.confidence)


@pytest.mark.parametrize("case", [
    "throughput/throughput-megatron-lm-756",  # 3 steps of each, nothing found
    "loss_spike/loss_spike-vmamba-273",  # 4
])
def test_a_short_series_with_nothing_found_is_listed_not_checked(case: str) -> None:
    r = triage.diagnose(_case(case))
    nc = {n["class"]: n["reason"] for n in r.facts["not_checked"]}
    assert {"throughput", "loss_spike"} <= set(nc) and r.facts["classes"] == []
    assert "too few to judge" in nc["loss_spike"] and "not checked: throughput, loss_spike" in r.verdict
    assert "look normal" not in " ".join(f.title for f in r.findings)
    assert any(a.id == "check_loss_spike" for a in r.actions)


def test_a_class_without_any_data_is_listed_without_an_action() -> None:
    r = triage.diagnose(_case("throughput/throughput-mxnet-223"))  # throughput only, no loss
    nc = {n["class"]: n["reason"] for n in r.facts["not_checked"]}
    assert nc == {"loss_spike": "no loss or grad-norm values in these logs"}
    assert not any(a.id == "check_loss_spike" for a in r.actions)


CONFIDENCE = ["low", "medium", "high"]
CLASS_IDS = NAMES


def _runbook_found(cls: str, rep: Report,
                   points: tuple[list[int], dict[int, float]] | None = None) -> bool:
    # ``points``: the logged steps with a loss and their losses, for loss spikes that are the
    # series' own noise (repeated blips, a rise within the loss's own moves), which triage
    # deliberately does not name
    f = rep.facts
    if cls == "loss_spike" and points is not None:
        f = triage._without_noise(f, *points)
    return {"timeout": not any(x.id == "no_timeout" for x in rep.findings),
            # a Python exception is a program error, not a GPU crash (issue 27)
            "gpu_crash": f.get("error_kind") not in (None, "python"),
            # stacks of processes that wait, not a crash's traceback (the no_hang finding)
            # (with no stack, processes_seen counts the ranks the logs name: no_stacks)
            "deadlock": bool(f.get("processes_seen"))
            and not any(x.id in ("no_hang", "no_stacks") for x in rep.findings),
            "throughput": f.get("change_iteration") is not None and bool(f.get("drop_pct")),
            "loss_spike": bool(f.get("spikes") or f.get("nan_iterations"))}[cls]


ALL_LOGS = sorted([*CORPUS.glob("*/*/logs"), *SAMPLE_DIRS])


@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: "/".join(p.parts[-3:-1]) if
                         p.name == "logs" else "/".join(p.parts[-2:]))
def test_triage_reports_every_class_a_runbook_reports(path: Path) -> None:
    """Every corpus case and sample: each class its runbook reports is a triage class (a
    signal that is a timed-out rank's own teardown aside), and triage is never surer than the
    cause's runbook."""
    inc = load_once(path)
    a = triage_once(path)
    r = reports_once(path)["triage"]
    got = [c for c, _ in classes(r)]
    for cls in CLASS_IDS:
        own = a.runbooks[cls]
        if own is None or not _runbook_found(cls, own, triage._loss_points(inc)) or (
                cls in got):
            continue
        # a desync report without a hung stack (TORCH_DISTRIBUTED_DEBUG=DETAIL's mismatch,
        # raised at once) is triage's timeout class: the collective desync, found by both
        desync = cls == "deadlock" and own.facts["first_mismatch"] and "timeout" in got
        # a change or spike at the start of another job than the one logged before it: set
        # aside by triage with that reason (``triage._between_jobs``)
        two_jobs = any(n["class"] == cls and "two jobs are not compared" in n["reason"]
                       for n in a.not_checked)
        # a NaN at the only logged step of a job that then crashed: set aside with that reason
        # (``triage._crashed_after_one_step``)
        one_point = any(n["class"] == cls and "one point is no series" in n["reason"]
                        for n in a.not_checked)
        # a scheduler's cancel on someone's word, nothing failing before it: the runbook says
        # how the job ended, triage names no failure class (``triage._runbook_crash``)
        cancelled = cls == "gpu_crash" and own.verdict.startswith((
            "The scheduler cancelled the job",
            # workers stopped from outside, nothing failing before it: likewise how it ended
            "The processes in these logs were stopped from outside"))
        assert desync or two_jobs or one_point or cancelled or (
            cls == "gpu_crash" and own.facts["error_kind"] == "signal"
            and "timeout" in got), (cls, own.verdict)
    if got:
        assert CONFIDENCE.index(r.confidence) <= CONFIDENCE.index(a.runbooks[got[0]].confidence)
    nc = [n["class"] for n in r.facts["not_checked"]]
    for cls in ("throughput", "loss_spike"):
        assert cls in got or cls in nc or triage._series_len(inc, cls) >= triage.MIN_SERIES
    # issue 27.2: a finding does not contradict its evidence
    for f in r.findings:
        if f.id == "no_failure_class" and any("NCCL" in e or "CUDA" in e for e in f.evidence):
            assert "NCCL error" not in f.title and "symptoms of a peer" in f.title, f


@pytest.mark.parametrize("case", ["timeout/timeout-ms-swift-9443",
                                  "timeout/timeout-speechbrain-2401"])
def test_a_desync_the_timeout_runbook_reports_is_triaged_as_timeout(case: str) -> None:
    # "Detected mismatch between collectives" (TORCH_DISTRIBUTED_DEBUG=DETAIL): no watchdog line
    r = triage.diagnose(_case(case))
    assert classes(r)[:1] == [("timeout", "cause")]
    assert "desync" in r.facts["classes"][0]["detail"]
    assert "gpu_crash" not in [c for c, _ in classes(r)]  # a RuntimeError is no GPU crash


@pytest.mark.parametrize("case", ["gpu_crash/gpu_crash-flavr-58", "gpu_crash/gpu_crash-nccl-1029",
                                  "gpu_crash/gpu_crash-nccl-629"])
def test_an_nccl_error_is_a_gpu_crash_and_never_no_sign_of_one(case: str) -> None:
    r = triage.diagnose(_case(case))
    assert classes(r) == [("gpu_crash", "cause")]
    assert not any(f.id == "no_failure_class" for f in r.findings)
    assert "NCCL error" in r.facts["classes"][0]["detail"]


def test_an_exit_with_code_1_is_a_crash_with_a_python_error() -> None:
    # torchrun's record: rank 1 exitcode 1, no GPU or NCCL error anywhere. The process died of
    # its exception: the corpus names that a gpu_crash (error_kind python), as the scorer's
    # rule for a case with failure facts and no triage of its own says
    r = triage.diagnose(_case("gpu_crash/gpu_crash-llamafactory-6040"))
    assert r.facts["cause"] == "gpu_crash" and "Python exception" in r.verdict
    assert not any(f.id == "program_error" for f in r.findings)


def test_a_python_exception_nothing_recorded_as_fatal_is_a_program_error(tmp_path: Path) -> None:
    # a traceback with no launcher record of the exit, and not up to the script's top level
    # (a handler logged it: the program went on), names no class
    p = tmp_path / "job.log"
    p.write_text("Traceback (most recent call last):\n  File \"train.py\", line 40, in "
                 "train_step\n    loss = model(batch)\n"
                 "RuntimeError: The size of tensor a (8) must match the size of tensor b (2) at "
                 "non-singleton dimension 1\n")
    r = triage.diagnose(traindoc.load(p))
    assert r.facts["classes"] == [] and "not a GPU crash" in r.verdict


@pytest.mark.parametrize("lines", [
    # ray-project/ray#2632: an ImportError at the script's first lines
    ['  File "figure_eight.py", line 8, in <module>', "    import ray.rllib.ppo as ppo",
     "ImportError: No module named 'ray.rllib.ppo'"],
    # stanford-crfm/levanter logs/log-t1v-n-d3fbbfef-w-0.log (corpus gpu_crash-levanter-…):
    # the run's entry point, then gcsfs raising deep below it
    ['  File "/home/kaiyue/levanter/src/levanter/main/train_lm.py", line 195, in <module>',
     "    levanter.config.main(main)()",
     '  File "/home/kaiyue/venv310/lib/python3.10/site-packages/gcsfs/retry.py", line 103, in '
     "validate_response", '    raise OSError(f"Forbidden: {path}\\n{msg}")',
     "OSError: Forbidden: b/levanter-data/o/tokenized%2Fopenwebtext%2Fvalidation%2Fcache_ledger"
     ".json"],
])
def test_an_exception_up_to_the_scripts_top_level_is_a_crash(tmp_path: Path,
                                                             lines: list[str]) -> None:
    # nothing caught it: the interpreter exited on it, as a launcher's exit record would say
    p = tmp_path / "job.log"
    p.write_text("\n".join(["Traceback (most recent call last):", *lines]) + "\n")
    r = triage.diagnose(traindoc.load(p))
    assert classes(r) == [("gpu_crash", "cause")] and "Python exception" in r.verdict


def test_a_program_error_before_a_timeout_is_named_as_what_it_waited_for() -> None:
    # rank 4 exits with code 1 at 11:37:36; rank 0 times out ten minutes later
    r = triage.diagnose(_case("timeout/timeout-pytorch-134006"))
    assert classes(r) == [("timeout", "cause")]
    assert "Before it, rank 4 exited with code 1 at 2024-08-20 11:37:36" in r.verdict
    assert r.confidence != "high"


def test_the_timeout_numbers_are_the_timeout_runbooks() -> None:
    # issue 27: "after 120 s" in triage, "after 121 s" in the timeout runbook, same event
    inc = _case("timeout/timeout-picotron-tutorial-6")
    a = triage.analyse(inc)
    detail = triage.report(a).facts["classes"][0]["detail"]
    ran = a.runbooks["timeout"].facts["ran_for_ms"]
    assert f"after {ran / 1000:.0f} s" in detail and "after 120 s" not in detail


def test_with_runbooks_fills_summary_and_verdict_and_merges_the_cause_actions() -> None:
    r = triage.diagnose(traindoc.load(MIXED))
    calls = []

    def runner(cls: str) -> dict:
        calls.append(cls)
        if cls == "timeout":
            return {"summary": None, "verdict": None, "error": "no runbook timeout.ipynb"}
        return {"summary": f"/out/{cls}/summary.json", "verdict": f"{cls} verdict",
                "confidence": "high", "error": None,
                "actions": [{"id": "drain", "title": "Drain the node", "why": "Xid", "how": "scontrol"}]}

    out = triage.with_runbooks(r, runner)
    assert calls == ["gpu_crash", "timeout"]
    crash, timeout = out.facts["classes"][:2]
    assert crash["summary"] == "/out/gpu_crash/summary.json" and crash["verdict"] == "gpu_crash verdict"
    assert timeout["summary"] is None and "no runbook" in timeout["error"]
    ids = [a.id for a in out.actions]
    assert ids[:2] == ["start_with_gpu_crash", "gpu_crash_drain"]
    assert [a.priority for a in out.actions] == list(range(1, len(ids) + 1))
    assert r.facts["classes"][0]["summary"] is None  # the input report is left alone


def test_summary_json_of_triage(tmp_path: Path) -> None:
    inc = traindoc.load(MIXED)
    r = triage.diagnose(inc)
    s = json.loads(r.write(tmp_path, inc).read_text())
    assert s["runbook"] == "triage"
    for c in s["facts"]["classes"]:
        assert {"class", "first_seen", "role", "evidence", "summary", "verdict"} <= set(c)
    assert [a["priority"] for a in s["actions"]] == list(range(1, len(s["actions"]) + 1))
    assert all(a["why"] and a["how"] for a in s["actions"])


def test_timeline_and_table(tmp_path: Path) -> None:
    inc = traindoc.load(MIXED)
    a = triage.analyse(inc)
    assert list(dict.fromkeys(a.timeline["class"])) == ["gpu_crash", "timeout"]
    assert set(a.timeline.groupby("class")["role"].first()) == {"cause", "consequence"}
    fig = plots.triage_timeline(a.timeline)
    assert len(fig.axes) == 1 and fig.axes[0].get_xlabel().startswith("time")
    t = triage.classes_table(triage.report(a))
    assert list(t["class"]) == ["gpu_crash", "timeout"]
    assert "<table" in triage.styled(t).to_html()
    # without timestamps the axis is the order in the files
    write(tmp_path, "job.log", GLOO_TIMEOUT.format(r=0) + "\n" + SEGFAULT.format(r=1) + "\n")
    inc2 = traindoc.load(tmp_path)
    fig2 = plots.triage_timeline(triage.analyse(inc2).timeline)
    assert "order in the files" in fig2.axes[0].get_xlabel()
    empty = triage.timeline_frame(traindoc.Incident.empty(), [])
    assert list(empty.columns) == triage.TIMELINE_COLUMNS and not len(empty)
    assert isinstance(plots.triage_timeline(empty), plots.Message)


def test_timeline_of_stack_dumps_has_no_time_column() -> None:
    # the stacks table carries no time: a deadlock lane is placed by file order
    inc = traindoc.load(DATA / "deadlock" / "drill_hang")
    a = triage.analyse(inc)
    assert "deadlock" in set(a.timeline["class"])
    assert plots.triage_timeline(a.timeline).axes


@pytest.mark.parametrize("sample", [MIXED, DATA / "timeout" / "drill_desync",
                                    DATA / "gpu_crash" / "drill_crash"])
def test_analyse_then_report_is_diagnose(sample: Path) -> None:
    inc = traindoc.load(sample)
    a = triage.analyse(inc)
    assert a.cause == (a.sightings[0].cls if a.sightings else None)
    assert triage.report(a).summary(inc) == triage.diagnose(inc).summary(inc)
    r, sightings = triage.triage(inc)
    assert r.summary(inc) == triage.diagnose(inc).summary(inc)
    assert [s.cls for s in sightings] == [s.cls for s in a.sightings]
    assert a.unparsed_lines == inc.unrecognized[:triage.MAX_UNPARSED] or len(
        inc.unrecognized) > triage.MAX_UNPARSED


def test_triage_module_draws_nothing() -> None:
    # figures belong in traindoc.plots: triage builds the timeline's table only
    src = Path(triage.__file__).read_text()
    assert "matplotlib" not in src


def test_notebook_analyses_once() -> None:
    nb = json.loads((Path(triage.__file__).parents[1] / "runbooks" / "triage.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert code.count("triage.analyse(") == 1 and "triage.diagnose(" not in code
    assert "triage.triage(" not in code and "bottom_line_html()" in code


def test_actions_are_ranked_with_why_and_how() -> None:
    r = triage.diagnose(traindoc.load(MIXED))
    assert all(isinstance(a, Action) and a.why and a.how for a in r.actions)
    assert [a.priority for a in r.actions] == list(range(1, len(r.actions) + 1))


def test_triage_actions_name_the_real_log_paths() -> None:
    # issue 15.8: "traindoc run gpu_crash LOGS -o out/…" with a placeholder
    inc = traindoc.load(MIXED)
    r, _ = triage.triage(inc)
    how = r.actions[0].how
    assert how.startswith(f"traindoc run gpu_crash {MIXED}") and "LOGS" not in how


def test_report_links_point_at_each_class_report() -> None:
    # issue 15.8: triage.html links to each class's report
    from traindoc.report import Report

    rep = Report("triage", "v", "high", {"classes": [
        {"class": "gpu_crash", "role": "cause", "summary": "/out/gpu_crash/summary.json"},
        {"class": "timeout", "role": "consequence", "summary": None}]}, [], [])
    links = triage.report_links_html(rep)
    assert 'href="gpu_crash/gpu_crash.html"' in links and "timeout" not in links


def test_a_program_error_before_the_timeout_comes_first_in_the_actions() -> None:
    r = triage.diagnose(_case("timeout/timeout-pytorch-134006"))
    assert [a.id for a in r.actions[:2]] == ["read_traceback", "start_with_timeout"]
    assert "before the timeout" in r.actions[0].why


@pytest.mark.parametrize("case", ["gpu_crash/gpu_crash-nccl-1405", "gpu_crash/gpu_crash-llamafactory-6849"])
def test_a_process_that_saw_its_peer_or_link_fail_is_a_crash(case: str) -> None:
    # NVIDIA/nccl#1405 (an InfiniBand retry error on a pod), hiyouga/LlamaFactory#6849 (the
    # watchdog dies of ncclRemoteError): no timeout, no failure of the process's own
    r = triage.diagnose(_case(case))
    assert r.facts["cause"] == "gpu_crash" and "peer or the network" in r.verdict


# skipped steps as loss_spike evidence: a run of consecutive skips past the start-of-run
# loss-scale calibration
TRANSFORMERS_14531 = [  # huggingface/transformers#14531: the scale stuck at 1, every step skipped
    f"  0%|▋          | {n}/24128 [00:40<2:40:10,  2.50it/s][2021-11-27 00:36:55,194] [INFO] "
    "[stage2.py:1628:step] [deepscale] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 1, "
    "reducing to 1" for n in (98, 99, 100, 101)]
MINFM_4 = [  # corpus loss_spike-minfm-4 (its trainer's own guard)
    f"Step {n}: detected nan/inf/spiky gradient (norm=2.1966569423675537); skipping optimizer step."
    for n in (1557, 1558, 1559, 1560)]


def test_a_run_of_skipped_steps_past_calibration_is_a_loss_problem(tmp_path) -> None:
    from traindoc.diagnose import loss_spike as ls
    from traindoc.diagnose.loss_spike.analysis import skipping_start as _skip_run
    for lines, first in ((TRANSFORMERS_14531, 99), (MINFM_4, 1557)):
        log = tmp_path / "train.log"
        log.write_text("\n".join(lines) + "\n")
        a = ls.analyse(traindoc.load(str(log)))
        assert _skip_run(a.skipped_iterations, a.last_iteration) == first
    # DeepSpeed's start-of-run calibration, one overflow now and then, and a run of them the
    # training went on after (the scaler finding its level) are no problem
    assert _skip_run([1, 2, 3, 4, 5, 6, 7, 207], 783) is None
    assert _skip_run([9, 10, 11], 20) is None
    assert _skip_run([1000, 3000, 5000], 6000) is None
    assert _skip_run([992, 993, 994, 995, 996], 3410) is None


# Healthy runs whose per-batch loss is heavy-tailed: one-step blips again and again, each back
# at the next step. AkramjitS/gpt-lab-diffusion:train.log ('step:699/20000
# train_loss:2.828738e-01' among ~0.027), KellerJordan/modded-nanogpt records c87bb826 and
# d4bfb25f ('step:306/3000 train_loss:4.5136' between 4.0155 and 3.9960).
NOISY_HEALTHY = ["throughput/throughput-gpt-lab-diffusion-train",
                 "timeout/timeout-modded-nanogpt-c87bb826",
                 "throughput/throughput-modded-nanogpt-d4bfb25f"]


@pytest.mark.parametrize("case", NOISY_HEALTHY)
def test_repeated_one_step_loss_blips_are_noise_not_a_spike(case: str) -> None:
    a = triage_once(DATA / "corpus" / case / "logs")
    assert "loss_spike" not in [s.cls for s in a.sightings]


def test_few_blips_or_a_lasting_spike_still_name_the_loss() -> None:
    from traindoc.diagnose.triage import _without_noise
    steps = list(range(1, 101))

    def spike(a: int, b: int | None) -> dict:
        return {"start_iteration": a, "peak_iteration": a, "recovered_iteration": b}

    blips = [spike(10, 11), spike(30, 31), spike(50, 52)]
    assert _without_noise({"spikes": blips}, steps)["spikes"] == []
    # two blips (tf-models#5817's 319 -> 320) are not yet noise; a spike that lasts stays
    assert len(_without_noise({"spikes": blips[:2]}, steps)["spikes"]) == 2
    kept = _without_noise({"spikes": [*blips, spike(70, 80), spike(90, None)]}, steps)
    assert [s["start_iteration"] for s in kept["spikes"]] == [70, 90]


# Spikes that came back by themselves again and again, none rising far above the others: the
# run's per-batch loss, unsmoothed. Paddle fleet's VinVL retrieval fine-tune (Epoch: [E], step:
# [N] … loss 0.004, up to ~0.1 every few hundred steps, 115 times; workerlog.0 of
# timeout-vinvl-paddle-workerlog) and the mmaction2 train log of 2024-10-10 17:09:31
# ('Epoch(train) [20][ 60/597] … loss: 0.0345' among ~0.003).
MANY_BACK = ["timeout/timeout-vinvl-paddle-workerlog",
             "throughput/throughput-mmaction2-train-log-20241010-170931"]


@pytest.mark.parametrize("case", MANY_BACK)
def test_many_spikes_back_by_themselves_are_the_series_noise(case: str) -> None:
    a = triage_once(DATA / "corpus" / case / "logs")
    assert "loss_spike" not in [s.cls for s in a.sightings]


def test_a_spike_that_stands_out_of_the_others_stays() -> None:
    from traindoc.diagnose.triage import _without_noise

    def spike(a: int, b: int | None, peak: float, base: float) -> dict:
        return {"start_iteration": a, "peak_iteration": a, "recovered_iteration": b,
                "peak_loss": peak, "baseline_loss": base}

    steps = list(range(1000, 1300))
    # noprop's CIFAR-100 log (loss_spike-noprop-log-cifar100): rises of 0.10 at 1035 and
    # 0.19 at 1197 are its noise; 0.66 -> 1.26 at 1080 is the spike
    found = [spike(1035, 1038, 0.7852, 0.6831), spike(1080, 1087, 1.2608, 0.6635),
             spike(1197, 1199, 0.7458, 0.5571)]
    kept = _without_noise({"spikes": found}, steps)["spikes"]
    assert [s["start_iteration"] for s in kept] == [1080]
    # three alike: none stands out; one that never came back stays whatever its rise
    alike = [spike(1035, 1038, 0.79, 0.68), spike(1080, 1087, 0.80, 0.66),
             spike(1197, 1199, 0.75, 0.56), spike(1250, None, 0.9, 0.6)]
    assert [s["start_iteration"] for s in _without_noise({"spikes": alike}, steps)["spikes"]] \
        == [1250]


def test_a_rise_within_the_loss_own_moves_is_no_spike() -> None:
    from traindoc.diagnose.triage import _without_noise

    # BrownianNotion/BitDistiller notes.md (gpu_crash-bitdistiller-notes): HF Trainer dicts of
    # a 10-step test run, {'loss': 2392.8262, …, 'epoch': 0.1} … {'loss': 454.5096, …}; the
    # runbook's spike 2080 -> 2558.5 at step 4 rose less than the loss moves between steps
    bit = [2392.8262, 1390.7155, 2080.0435, 2558.5049, 1194.2524, 1768.8893, 824.1122,
           1795.5801, 450.5551, 454.5096]
    steps = list(range(1, 11))
    s = {"start_iteration": 3, "peak_iteration": 4, "peak_loss": 2558.5049,
         "baseline_loss": 1891.77085, "recovered_iteration": 5}
    assert _without_noise({"spikes": [s]}, steps, dict(zip(steps, bit, strict=True)))[
        "spikes"] == []
    # the mmaction2 train log of 2024-10-10 17:09:31, its spike at iteration 12697 (0.0020 ->
    # 0.0145, back at 12797) read against the loss it logged every 20 iterations
    path = (DATA / "corpus" / "throughput" / "throughput-mmaction2-train-log-20241010-170931"
            / "logs")
    mm_steps, mm = triage._loss_points(load_once(path))
    s = {"start_iteration": 12697, "peak_iteration": 12697, "peak_loss": 0.0145,
         "baseline_loss": 0.002, "recovered_iteration": 12797}
    assert _without_noise({"spikes": [s]}, mm_steps, mm)["spikes"] == []
    # a rise like fairseq's FSDP README's (16.38 -> 23.68 at update 3, back at 6) against a
    # loss that barely moves otherwise (made-up values) stays a spike
    flat = {i: 16.38 + 0.01 * (i % 2) for i in steps}
    fs = {"start_iteration": 3, "peak_iteration": 3, "peak_loss": 23.682,
          "baseline_loss": 16.38, "recovered_iteration": 6}
    assert len(_without_noise({"spikes": [fs]}, steps, flat)["spikes"]) == 1


def test_a_lone_one_batch_blip_is_no_incident() -> None:
    from traindoc.diagnose.triage import _without_noise

    def spike(a: int, b: int | None, peak: float, base: float) -> dict:
        return {"start_iteration": a, "peak_iteration": a, "recovered_iteration": b,
                "recovery_confirmed": b is not None, "peak_loss": peak, "baseline_loss": base}

    # CeciliaGuo331/nano-gpt log/train.log (build-nanogpt, a line every step): "step 17632 |
    # loss: 3.404365 | …" among ~3.04, back the next step; OpenGVLab/InternVideo's ViCLIP
    # train.log ("Train Epoch: [0] [ 790/10397] … loss: 1.9347"), back at the next line
    steps = list(range(17600, 17700))
    assert _without_noise({"spikes": [spike(17632, 17633, 3.404365, 3.03512)]}, steps)[
        "spikes"] == []
    steps10 = list(range(700, 960, 10))
    assert _without_noise({"spikes": [spike(790, 800, 1.9347, 1.2426)]}, steps10)[
        "spikes"] == []
    # awslabs/keys_values#97: 14.500 at iter 339 among 0-3.3, back at 340: the loss rose
    # eightfold, an incident however short
    kv = list(range(331, 343))
    assert len(_without_noise({"spikes": [spike(339, 340, 14.5, 1.793)]}, kv)["spikes"]) == 1
    # the same rise over two logged points, or one never confirmed back, stays
    assert len(_without_noise({"spikes": [spike(17632, 17634, 3.404365, 3.03512)]}, steps)[
        "spikes"]) == 1
    tentative = {**spike(17632, 17633, 3.404365, 3.03512), "recovery_confirmed": False}
    assert len(_without_noise({"spikes": [tentative]}, steps)["spikes"]) == 1


def test_a_one_batch_blip_that_stands_out_of_the_run_is_an_incident() -> None:
    from traindoc.diagnose.triage import _without_noise

    def kept(case: str, a: int, b: int, peak: float, base: float) -> int:
        steps, losses = triage._loss_points(load_once(DATA / "corpus" / case / "logs"))
        s = {"start_iteration": a, "peak_iteration": a, "recovered_iteration": b,
             "recovery_confirmed": True, "peak_loss": peak, "baseline_loss": base,
             "history_points": 50}
        return len(_without_noise({"spikes": [s]}, steps, losses)["spikes"])

    # MLPerf v4.1 Llama-2 LoRA (Supermicro result_10): ":::MLLOG {… "key": "train_loss",
    # "value": 2.21329…, "metadata": {… "samples_count": 1680}}" among 1.23-1.37, back at
    # 1760: a rise of 0.88 where no other line strays 0.1 above its level
    assert kept("loss_spike/loss_spike-mlperf-v4-1-supermicro-llama2-lora-result-10",
                1680, 1760, 2.21329, 1.330337) == 1
    # torchtitan's "step: 8490  loss:  5.86923" among ~4.1 (the rest of the run strays 0.5
    # at most), back at 8500
    assert kept("loss_spike/loss_spike-torchtitan-attnres-baseline-step8490",
                8490, 8500, 5.86923, 4.10658) == 1
    # ViCLIP's 1.24 -> 1.93 -> 1.13 rises only about twice as high as its run's other lines do
    assert kept("throughput/throughput-internvideo-viclip-base", 790, 800, 1.9347, 1.2426) == 0
    # Megatron's GPT-2 "iteration       30/    1000 | … | lm loss: 2.247505E+01 |" after
    # 1.203115E+01 at 20 (its first loss), back at 40: one point of history knows no noise
    s = {"start_iteration": 30, "peak_iteration": 30, "recovered_iteration": 40,
         "recovery_confirmed": True, "peak_loss": 22.47505, "baseline_loss": 12.03115,
         "history_points": 1}
    steps, losses = triage._loss_points(load_once(
        DATA / "corpus" / "timeout" / "timeout-bigscience-meg-gpt2-base-n4-dp1-tp4-pp4" / "logs"))
    assert _without_noise({"spikes": [s]}, steps, losses)["spikes"] == []


def test_an_unrecovered_swing_on_few_points_is_no_incident() -> None:
    from traindoc.diagnose.triage import _without_noise

    def spike(a: int, p: int, peak: float, base: float, h: int) -> dict:
        return {"start_iteration": a, "peak_iteration": p, "recovered_iteration": None,
                "recovery_confirmed": False, "peak_loss": peak, "baseline_loss": base,
                "history_points": h}

    # hnmizuho/AT-BSN#1: "<epoch: …, iter:   3,800, lr:…> l_all: 3.4186" then 6.2897, 4.8096,
    # 4.5722, 6.9138 every 100 iterations: the loss falls back nearer 3.42 than 6.91
    at = dict(zip(range(3800, 4300, 100), [3.4186, 6.2897, 4.8096, 4.5722, 6.9138],
                  strict=True))
    s = spike(3900, 4200, 6.9138, 3.4186, 1)
    assert _without_noise({"spikes": [s]}, list(at), at)["spikes"] == []
    # SeanNaren/deepspeech.pytorch#127: "Loss 3.2168 (37.0903)" …, the per-batch CTC loss of
    # epoch 11, batches 1-17 (the run's average in brackets)
    ds = dict(zip(range(1, 18), [3.2168, 3.6915, 3.8567, 1.9861, 4.2020, 10.1045, 10.0306,
                                 12.3729, 8.1055, 5.7821, 13.5125, 8.8798, 5.8867, 14.8824,
                                 11.8922, 12.5397, 13.1328], strict=True))
    s = spike(2, 14, 14.8824, 3.2168, 1)
    assert _without_noise({"spikes": [s]}, list(ds), ds)["spikes"] == []
    # bigscience-workshop/bigscience tr8b-104B chronicles: lm loss 2.665, 2.667, then 4.374 …
    # 4.096, 4.137 every step: a jump to a level held stays a spike
    bl = dict(zip(range(17060, 17069), [2.665, 2.667, 4.374, 4.366, 4.391, 4.405, 4.398, 4.096,
                                        4.137], strict=True))
    s = spike(17062, 17065, 4.405, 2.666, 2)
    assert len(_without_noise({"spikes": [s]}, list(bl), bl)["spikes"]) == 1
    # tensorflow/models#8423: "global step 408: loss = 0.1442 (0.302 sec/step)", then
    # "global step 409: loss = 25237.8984" … 1216893.1250 at 415: a climb that never falls back
    # below its midpoint stays
    tf = dict(zip(range(408, 416), [0.1442, 25237.8984, 75835.2812, 28575.1914, 134869.8906,
                                    437442.4062, 212268.4531, 1216893.125], strict=True))
    s = spike(409, 415, 1216893.125, 0.1442, 1)
    assert len(_without_noise({"spikes": [s]}, list(tf), tf)["spikes"]) == 1
    # the same swing on a known noise (FEW_HISTORY points before it) is the runbook's to judge
    s = spike(3900, 4200, 6.9138, 3.4186, 5)
    assert len(_without_noise({"spikes": [s]}, list(at), at)["spikes"]) == 1


# The first updates overshooting the untrained model's loss (a spike opening at the second logged
# loss of a log that starts at step 1), back by themselves: openai/parameter-golf
# experiments/8xH100_fullrun.log ('step:1/20000 train_loss:6.9394', 'step:2/20000
# train_loss:12.3682', 'step:3/20000 train_loss:7.4167'), MoonshotAI/Kimi-Audio#133 (HF Trainer
# dicts {'loss': 10.2027, …}, {'loss': 10.6178, …}, {'loss': 14.8933, …}, {'loss': 17.8956, …},
# {'loss': 10.7146, …}). Slow humps, climbing for dozens of logged points and coming back:
# SongxiYoung/dino-main train.out (DINO MetricLogger, epochs 1-2 of the teacher's warm-up),
# the mmaction2 train log of 2024-10-10 17:09:31 ('Epoch(train) [11][ 40/597] … loss: 0.0700'
# climbing to [11][480/597]).
START_OR_HUMP = ["timeout/timeout-parameter-golf-8xh100-fullrun",
                 "loss_spike/loss_spike-kimi-audio-133",
                 "throughput/throughput-dino-main-train-out"]


@pytest.mark.parametrize("case", START_OR_HUMP)
def test_first_updates_overshoot_and_slow_humps_are_no_loss_spike(case: str) -> None:
    a = triage_once(DATA / "corpus" / case / "logs")
    assert "loss_spike" not in [s.cls for s in a.sightings]


def test_a_hump_goes_a_real_spike_stays() -> None:
    from traindoc.diagnose.triage import _without_noise

    def spike(a: int, p: int, b: int | None) -> dict:
        return {"start_iteration": a, "peak_iteration": p, "recovered_iteration": b,
                "recovery_confirmed": b is not None}

    # mmaction2's climb from [11][40] to [11][480] (23 points, every 20) and back by 1831
    steps = list(range(20, 2001, 20))
    assert _without_noise({"spikes": [spike(40, 480, 1840)]}, steps)["spikes"] == []
    # the same climb that never came back (a divergence: qwen3-non-moe train.out) stays
    assert len(_without_noise({"spikes": [spike(40, 480, None)]}, steps)["spikes"]) == 1
    # parameter-golf's step 2 against step 1 goes; a log starting at step 20 has no untrained
    # loss to measure against (bigscience meg_gpt2_base_n8: 12.1 at 20, 26.5 at 30) and stays
    assert _without_noise({"spikes": [spike(2, 2, 3)]}, list(range(1, 60)))["spikes"] == []
    late = list(range(20, 210, 10))
    assert len(_without_noise({"spikes": [spike(30, 30, 40)]}, late)["spikes"]) == 1
    # fairseq's FSDP README: flat at updates 1-2, the jump at update 3 is a spike (it stays)
    assert len(_without_noise({"spikes": [spike(3, 3, 6)]}, list(range(1, 11)))["spikes"]) == 1


@pytest.mark.parametrize(("last", "crash"), [
    # suprosanna/relationformer#18 (PyTorch-Ignite, one process)
    ("RuntimeError: DataLoader worker (pid(s) 411948) exited unexpectedly", True),
    # facebookresearch/detectron2#384 (docker's default /dev/shm)
    ("RuntimeError: DataLoader worker (pid(s) 25) exited unexpectedly", True),
    # the worker's own Python exception (pytorch/pytorch#5301): a program error, no crash
    ("RuntimeError: DataLoader worker (pid 39637) exited unexpectedly with exit code 1", False),
])
def test_a_dataloader_worker_that_died_is_a_crash(tmp_path: Path, last: str, crash: bool) -> None:
    write(tmp_path, "train.log", "\n".join([
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.8/site-packages/torch/utils/data/dataloader.py", line 1133, in '
        "_try_get_data",
        "    raise RuntimeError('DataLoader worker (pid(s) {}) exited unexpectedly'"
        ".format(pids_str)) from e",
        last, ""]))
    r = triage.diagnose(traindoc.load(tmp_path))
    assert (r.facts["cause"] == "gpu_crash") is crash


@pytest.mark.parametrize("lines", [
    # pbl-lab sambanova slurm.out (corpus gpu_crash-pbl-sambanova-measure-perf-args): eight
    # processes of an mpirun under sbatch, no launcher's exit record
    ["usage: sn_boilerplate_main.py [-h] {compile,run,test,measure-performance} ...",
     "sn_boilerplate_main.py: error: unrecognized arguments: -ws 8"] * 2,
    # wuyike2000/MLDT#3's message, here with no launcher's record after it
    ["run_chatglm.py: error: the following arguments are required: --output_dir"],
])
def test_an_argparse_error_ends_its_process(tmp_path: Path, lines: list[str]) -> None:
    """parser.error exits 2 with no traceback: the job's process died on a Python error."""
    write(tmp_path, "slurm.out", "\n".join(["Distributed run: True", *lines, ""]))
    r = triage.diagnose(traindoc.load(tmp_path))
    assert r.facts["cause"] == "gpu_crash"


# facebookincubator/submitit#1613: preempted, requeued, then rank 0 timed out in the store-based
# barrier; the same slurmstepd line (SchedMD/slurm slurmstepd/req.c) with a node failure is a crash.
PREEMPTED = ("slurmstepd: error: *** JOB 37361369 ON learnfair5146 CANCELLED AT "
             "2021-03-15T18:00:46 DUE TO {why} ***")
BARRIER = ("RuntimeError: Timed out initializing process group in store based barrier on rank: 0, "
           "for key: store_based_barrier_key:1 (world_size=8, worker_count=16, timeout=0:30:00)")


@pytest.mark.parametrize(("why", "then", "want"), [
    ("PREEMPTION", BARRIER, ["timeout"]),
    ("JOB REQUEUE", BARRIER, ["timeout"]),
    ("PREEMPTION", "", []),
    ("NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS", "", ["gpu_crash"]),
])
def test_a_preempted_job_is_no_crash(tmp_path: Path, why: str, then: str, want: list[str]) -> None:
    write(tmp_path, "job.log", PREEMPTED.format(why=why) + "\n"
          + "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
          + (then + "\n" if then else ""))
    r = triage.diagnose(traindoc.load(tmp_path))
    assert [c for c, _ in classes(r)] == want


@pytest.mark.parametrize(("dump", "leaf"), [
    # NatLabRockies/floris#1174: a segfault's dump, its "Fatal Python error" header cut off as
    # an excerpt cuts it; the current thread computes in inspect, the others have no frame
    (["Thread 0x000071fb66492640 (most recent call first):", "  <no Python frame>", "",
      "Current thread 0x00007200c424f440 (most recent call first):",
      '  File "/home/xxx/miniconda3/envs/floating_wind_env/lib/python3.9/inspect.py", line 745 in getmodule',
      '  File "/home/xxx/miniconda3/envs/floating_wind_env/lib/python3.9/inspect.py", line 829 in findsource',
      '  File "/home/xxx/miniconda3/envs/floating_wind_env/lib/python3.9/site-packages/floris/type_dec.py", line 159 in convert_to_path'],
     "getmodule"),
    # state-spaces/mamba#725: the one thread of a segfault in a Triton layer norm's forward
    (["Current thread 0x00007d28af644000 (most recent call first):",
      '  File "/home/b0457812963/testmambapy2.6/lib/python3.10/site-packages/torch/autograd/function.py", line 575 in apply',
      '  File "/home/b0457812963/testmambapy2.6/lib/python3.10/site-packages/mamba_ssm/ops/triton/layer_norm.py", line 902 in layer_norm_fn',
      '  File "/home/b0457812963/testmambapy2.6/lib/python3.10/site-packages/mamba_ssm/modules/block.py", line 57 in forward'],
     "apply"),
])
def test_a_fatal_errors_dump_without_its_header_is_a_crash(tmp_path: Path, dump: list[str],
                                                           leaf: str) -> None:
    # faulthandler marks "Current thread" in a fatal error's dump: one that was computing (not
    # waiting) beside threads that only wait is where the process died, not a hang
    p = tmp_path / "faulthandler.log"
    p.write_text("\n".join(dump) + "\n")
    r = triage.diagnose(traindoc.load(p))
    assert classes(r) == [("gpu_crash", "cause")]
    assert f"computing in {leaf}" in r.facts["classes"][0]["detail"]


@pytest.mark.parametrize("dump", [
    # sgl-project/sglang#10407 (corpus deadlock-sglang-10407): tensor-parallel workers abort
    # together; a second process's header lands inside this dump's last frame line, after it
    ['Thread 0x00007f0159038740 (most recent call first):',
     '  File "/opt/conda/lib/python3.10/threading.py", line 320 in wait',
     '  File "/opt/conda/lib/python3.10/queue.py", line 171 in get',
     '  File "/opt/conda/lib/python3.10/site-packages/sglang/srt/managers/scheduler.py", line 860 in event_loop_overlap',
     '  File "/opt/conda/lib/python3.10/site-packages/torch/utils/_contextlib.pyFatal Python error: "Aborted, line '],
    # scverse/squidpy#1123: the header behind pytest-xdist's progress dots, then every thread
    # of the dump waiting (the pool's handler threads, a select)
    ['..Fatal Python error: Aborted', '',
     'Thread 0x0000000172237000 (most recent call first):',
     '  File "/Users/selman/miniforge3/lib/python3.12/multiprocessing/pool.py", line 579 in _handle_results',
     '  File "/Users/selman/miniforge3/lib/python3.12/threading.py", line 1012 in run', '',
     'Thread 0x000000017021f000 (most recent call first):',
     '  File "/Users/selman/miniforge3/lib/python3.12/selectors.py", line 415 in select',
     '  File "/Users/selman/miniforge3/lib/python3.12/multiprocessing/connection.py", line 1136 in wait'],
])
def test_the_dump_a_fatal_error_printed_is_a_crash_not_a_hang(tmp_path: Path,
                                                             dump: list[str]) -> None:
    # the threads faulthandler prints under "Fatal Python error" are where a process was when
    # it died, waiting or not, wherever the header landed: triage and the deadlock runbook agree
    p = tmp_path / "job.log"
    p.write_text("\n".join(dump) + "\n")
    inc = traindoc.load(p)
    r = triage.diagnose(inc)
    assert classes(r)[0] == ("gpu_crash", "cause")
    assert "deadlock" not in [c for c, _ in classes(r)]
    a = deadlock.analyse(inc)
    assert a.fatal_dump and not a.hang_seen and n_procs(a.ranks) >= 1
    rep = deadlock.report(a)
    assert "crash dump" in rep.verdict and "no_hang" in [f.id for f in rep.findings]
    assert "diagnose_crash" in [x.id for x in rep.actions]


def test_a_dump_a_thread_asked_for_stays_a_hang(tmp_path: Path) -> None:
    # pytorch/pytorch#54818: the test harness's listener thread calls dump_traceback (it is the
    # current thread) while the main thread waits in a barrier: a hang's dump
    p = tmp_path / "job.log"
    p.write_text("\n".join([
        "Process 3 timed out with traceback:",
        "Current thread 0x00007ff3363ff700 (most recent call first):",
        '  File "torch/testing/_internal/common_distributed.py", line 373 in _event_listener',
        '  File "threading.py", line 870 in run', "",
        "Thread 0x00007ff406132180 (most recent call first):",
        '  File "torch/distributed/distributed_c10d.py", line 2477 in barrier',
        '  File "torch/testing/_internal/distributed/rpc/rpc_test.py", line 838 in test_reinit']) + "\n")
    r = triage.diagnose(traindoc.load(p))
    assert classes(r)[0] == ("deadlock", "cause")


def _paddleseg(total: int, cost: float, loss: float, iters: range) -> str:
    # PaddleSeg's train line (zlwangustc/encnet_reprod log/workerlog.0; corpus
    # timeout-encnet-reprod-workerlog)
    return "".join(
        f"2021-10-18 09:{i // 60:02d}:{i % 60:02d} [INFO]\t[TRAIN] epoch: 1, iter: {i}/{total}, "
        f"loss: {loss:.4f}, lr: 0.010000, batch_cost: {cost:.4f}, reader_cost: 0.00010, "
        f"ips: {4 / cost:.4f} samples/sec | ETA 00:10:00\n" for i in iters)


def test_a_relaunch_with_another_plan_is_not_compared_with_the_job_before(
        tmp_path: Path) -> None:
    # a fast 1000-iteration trial, then another model's 50000-iteration run resumed at 10010,
    # ten times slower and with another loss: two jobs, no throughput drop, no loss spike
    p = tmp_path / "workerlog.0"
    p.write_text(_paddleseg(1000, 0.18, 0.2, range(10, 1001, 10))
                 + _paddleseg(50000, 1.47, 0.9, range(10010, 11001, 10)))
    a = triage.analyse(traindoc.load(p))
    assert a.cause is None
    assert any("two jobs are not compared" in n["reason"] for n in a.not_checked)


@pytest.mark.parametrize(("shape", "first"), [("gradual", "gpu_crash"), ("step", "gpu_crash"),
                                              ("stall", "throughput")])
def test_a_slowdown_the_run_lived_with_is_no_cause_of_the_crash_after_it(shape: str,
                                                                         first: str) -> None:
    # linhandev/iann log/workerlog.0: s/iteration creeps 8.2 -> 9.4 from step 6070 (2021-04-19),
    # then a day later both ranks' data loaders raise cv2.error and the processes segfault; a
    # stall (progress stopped) keeps its place by time, as the hang a crash may follow
    inc = _case("gpu_crash/gpu_crash-iann-workerlog-cv2")
    facts = {"change_iteration": 6070, "drop_pct": 12.8, "shape": shape}
    r = triage.diagnose(inc, modules={"throughput": _module(facts), "loss_spike": _module({})})
    assert [c for c, _ in classes(r)] == [first, "gpu_crash" if first == "throughput"
                                          else "throughput"]
    if first == "gpu_crash":
        assert r.facts["ordered_by"] == "crash_over_slowdown" and r.confidence == "medium"
        assert "not the crash's cause" in r.verdict and "its consequence" not in r.verdict
        assert classes(r) == [("gpu_crash", "cause"), ("throughput", "separate")]
        tl = triage.analyse(inc, modules={"throughput": _module(facts),
                                          "loss_spike": _module({})}).timeline
        assert set(tl.loc[tl["class"] == "throughput", "role"]) == {"separate"}
    else:  # (the segfault line has no time: the files' order, as before)
        assert r.facts["ordered_by"] == "file_order"


# Horovod's stall inspector warns while ranks wait for a collective others never submitted;
# nothing has timed out: a hang, which the deadlock runbook reads (the timeout view is the same
# hang). horovod/horovod#1012 (operations.cc, [missing ranks: N]), #364 ([ready ranks: …]),
# polyaxon/polyaxon#657 (stall_inspector.cc since 0.19: "Stalled ranks:" then "R: [ops]").
HVD_WARN = ("[1,0]<stderr>:[2020-01-15 22:44:33.214399: W horovod/common/stall_inspector.cc:105] "
            "One or more tensors were submitted to be reduced, gathered or broadcasted by subset "
            "of ranks and are waiting for remainder of ranks for more than 60 seconds. This may "
            "indicate that different ranks are trying to submit different tensors or that only "
            "subset of ranks is submitting tensors, which will cause deadlock.")
HVD_STALLS = {
    "missing": ["[1,0]<stderr>:[2019-04-13 13:55:31.858119: W horovod/common/operations.cc:588] "
                "HorovodBroadcast_dense_kernel_Momentum_0 [missing ranks: 1]",
                "[1,0]<stderr>:[2019-04-13 13:55:31.858146: W horovod/common/operations.cc:588] "
                "HorovodBroadcast_conv2d_1_kernel_0 [missing ranks: 1]"],
    "ready": ["Stalled ops: ",
              "allreduce.conv1.weight [ready ranks: 0, 7, 3, 2, 4, 6], ",
              "allreduce.bn1.weight [ready ranks: 0, 7, 3, 2, 4, 6], "],
    "stalled_ranks": [HVD_WARN, "[1,0]<stderr>:Stalled ranks:",
                      "[1,0]<stderr>:0: [HorovodAllreduce]"],
}


@pytest.mark.parametrize("form", sorted(HVD_STALLS))
@pytest.mark.parametrize("watchdog", [False, True])
def test_a_stall_warning_without_a_timeout_is_a_hang(tmp_path: Path, form: str,
                                                     watchdog: bool) -> None:
    lines = HVD_STALLS[form] + ([WATCHDOG.format(r=3)] if watchdog else [])
    write(tmp_path, "job.log", "\n".join(lines) + "\n")
    r = triage.diagnose(traindoc.load(tmp_path))
    first = classes(r)[0][0]
    # a watchdog that timed out makes it a timeout, the stall warning its prelude
    assert first == ("timeout" if watchdog else "deadlock"), r.verdict
    if not watchdog:
        assert "stall warning" in r.verdict


@pytest.mark.parametrize("gloo", [False, True])
def test_a_monitored_barrier_that_gave_up_is_a_timeout_not_a_stall_warning(
        tmp_path: Path, gloo: bool) -> None:
    # HorizonRobotics/RoboOrchardLab#33: monitored_barrier raises once its timeout runs out (its
    # line names the rank it waited on, no time), with gloo's own timeout below it or alone
    lines = ["RuntimeError: Rank 1 successfully reached monitoredBarrier, but received errors "
             "while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank."]
    if gloo:
        lines.append("Timed out waiting 600000ms for send operation to complete")
    write(tmp_path, "job.log", "\n".join(lines) + "\n")
    r = triage.diagnose(traindoc.load(tmp_path))
    assert classes(r)[0][0] == "timeout", r.verdict


def test_a_stall_warning_before_mpirun_first_exit_is_the_cause() -> None:
    # horovod/horovod TF2 reproducer (corpus deadlock-hvd-tf-worker-desync): the stall
    # inspector names rank 0 as missing twice; rank 1 then dies with 'Horovod has been shut down'
    # and Open MPI's "The first process to do so was: Process name: [[56671,1],1]" names it,
    # with its "Exit code: 1" on the next line (joined to it: the record's code). The record
    # must not crash triage, and the hang it follows is the cause. (An exit with code 1 and no
    # error line of its own is no crash triage names, as for torchrun's record.)
    r = triage.diagnose(traindoc.load(CORPUS / "deadlock/deadlock-hvd-tf-worker-desync/logs"))
    assert classes(r)[0] == ("deadlock", "cause")
    assert ("gpu_crash", "cause") not in classes(r)


# mmengine's epoch-batch lines counted on across an epoch: the reader gives each epoch's end as
# the total (290, then 580), which is one job going on, not a relaunch with another plan
# (AILab-CVC/YOLO-World#276, corpus loss_spike-yolo-world-276)
YOLO_WORLD_276 = [
    "04/24 02:03:09 - mmengine - INFO - Epoch(train)  [16][200/290]  base_lr: 2.0000e-03 lr: "
    "1.7228e-03  eta: 1:20:08  time: 0.1792  data_time: 0.0081  memory: 4843  grad_norm: 0.0000  "
    "loss: 208.4161  loss_cls: 85.0224  loss_bbox: 56.8312  loss_dfl: 66.5625",
    "04/24 02:03:19 - mmengine - INFO - Epoch(train)  [16][250/290]  base_lr: 2.0000e-03 lr: "
    "1.7228e-03  eta: 1:19:57  time: 0.1959  data_time: 0.0164  memory: 4696  grad_norm: 0.0000  "
    "loss: 208.5272  loss_cls: 84.8246  loss_bbox: 57.1402  loss_dfl: 66.5625",
    "04/24 02:03:38 - mmengine - INFO - Epoch(train)  [17][ 50/290]  base_lr: 2.0000e-03 lr: "
    "1.7030e-03  eta: 1:19:44  time: 0.2323  data_time: 0.0627  memory: 4483  grad_norm: nan  "
    "loss: 209.1800  loss_cls: 85.1599  loss_bbox: 57.4576  loss_dfl: 66.5625",
    "04/24 02:03:47 - mmengine - INFO - Epoch(train)  [17][100/290]  base_lr: 2.0000e-03 lr: "
    "1.7030e-03  eta: 1:19:30  time: 0.1785  data_time: 0.0159  memory: 4310  grad_norm: 0.0000  "
    "loss: 208.8468  loss_cls: 85.0197  loss_bbox: 57.2646  loss_dfl: 66.5625",
]


def test_a_later_epochs_nan_is_the_same_jobs(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("\n".join(YOLO_WORLD_276) + "\n")
    r = triage.diagnose(traindoc.load(str(log)))
    assert classes(r)[:1] == [("loss_spike", "cause")]


# PaddleNLP's Trainer skipping the optimizer at a loss scale already under 1 (PaddlePaddle/
# PaddleNLP#7537, corpus loss_spike-paddlenlp-7537-optimizer-not-run): no calibration gets there


def test_skipped_steps_at_a_loss_scale_under_one_are_a_loss_problem(tmp_path: Path) -> None:
    log = tmp_path / "paddle.log"
    log.write_text("\n".join(PADDLENLP_7537) + "\n")
    r = triage.diagnose(traindoc.load(str(log)))
    assert classes(r)[:1] == [("loss_spike", "cause")]
    # the same skips at a scale a calibration passes through: the scaler finding its level
    log.write_text("\n".join(PADDLENLP_7537).replace("0.25", "65536.0").replace(
        "0.125", "32768.0").replace("0.0625", "16384.0") + "\n")
    assert classes(triage.diagnose(traindoc.load(str(log)))) == []


@pytest.mark.parametrize("text, detail", [
    # facebookresearch/map-anything#89: Hydra's report alone; run_and_report then exits 1
    ("[2025-10-31 05:07:02,550][__main__][INFO] - Epoch: [7]  [ 600/2916]  eta: 0:54:53\n"
     "[2025-10-31 05:07:11,062][__main__][ERROR] - Error executing job with overrides: "
     "['machine=hpc_train', 'model=mapanything']\n", "Error executing job"),
    # karfly/learnable-triangulation-pytorch#81: the process group's abort, the traceback cut
    ('  File "train.py", line 398, in one_epoch\n    total_loss.backward()\n'
     "RuntimeError: NCCL communicator was aborted.\n", "NCCL communicator was aborted"),
])
def test_a_job_that_went_down_on_hydras_report_or_an_aborted_communicator_is_a_crash(
        tmp_path: Path, text: str, detail: str) -> None:
    write(tmp_path, "job.log", text)
    r = triage.diagnose(traindoc.load(tmp_path))
    assert r.facts["cause"] == "gpu_crash"
    assert detail in r.facts["classes"][0]["detail"]


# A NaN/inf at the only logged step of a job that then ran out of GPU memory is no loss spike:
# one point is no series (Megatron-LM's first iteration of a GPT-175B run on A800s, 'grad norm:
# inf' at loss scale 1.0, then 'CUDA out of memory' on every rank: corpus
# gpu_crash-megatron-lm-a800-gpt175b-oom; the same with 'lm loss: nan', Megatron's own format)
@pytest.mark.parametrize("step", [
    (" iteration        1/      30 | consumed samples:           16 | elapsed time per iteration "
     "(ms): 175551.6 | learning rate: 4.68750e-08 | global batch size:    16 | lm loss: "
     "1069607.000000000 | loss scale: 1.0 | grad norm: inf | number of skipped iterations:   0 | "
     "number of nan iterations:   0 |"),
    (" iteration        1/    1000 | consumed samples:          512 | elapsed time per iteration "
     "(ms): 9123.4 | learning rate: 1.000E-06 | global batch size:   512 | lm loss: nan | loss "
     "scale: 4096.0 | number of skipped iterations:   0 | number of nan iterations:   1 |"),
])
def test_one_nan_step_then_oom_is_the_crash(tmp_path: Path, step: str) -> None:
    text = (step + "\n"
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 768.00 MiB (GPU 0; "
            "79.35 GiB total capacity; 52.52 GiB already allocated; 552.12 MiB free; 53.97 GiB "
            "reserved in total by PyTorch)\n")
    r, _ = triage.triage(traindoc.load(write(tmp_path, "job.log", text)))
    assert classes(r)[0][0] == "gpu_crash"
    assert "loss_spike" not in [c for c, _ in classes(r)]


# the resource tracker's warning at the interpreter's shutdown: tungtk2/ROPADet's fairseq
# train.out (corpus gpu_crash-ropadet-fairseq-enospc), a vLLM user's crash as memory ran out
SHUTDOWN_LINES = [
    "/usr/lib/python3.8/multiprocessing/resource_tracker.py:216: UserWarning: resource_tracker: "
    "There appear to be 662 leaked semaphore objects to clean up at shutdown",
    "/usr/local/python3.11.13/lib/python3.11/multiprocessing/resource_tracker.py:254: UserWarning:"
    " resource_tracker: There appear to be 5 leaked shared_memory objects to clean up at shutdown",
]
FEEDER_ENOSPC = ("Traceback (most recent call last):\n"
                 '  File "/usr/lib/python3.8/multiprocessing/queues.py", line 239, in _feed\n'
                 "    obj = _ForkingPickler.dumps(obj)\n"
                 '  File "/usr/lib/python3.8/tempfile.py", line 497, in mkdtemp\n'
                 "    _os.mkdir(file, 0o700)\n"
                 "OSError: [Errno 28] No space left on device: '/tmp/pymp-2ntknau9'\n")


@pytest.mark.parametrize("shutdown", SHUTDOWN_LINES)
def test_an_exception_the_interpreter_shut_down_on_is_a_crash(tmp_path: Path,
                                                              shutdown: str) -> None:
    # a thread's traceback (no top level): the shutdown after it says the process ended on it
    p = tmp_path / "train.out"
    p.write_text("2023-05-01 10:06:00 | INFO | train_inner | epoch 018:  88 / 800 loss=0.31, "
                 "num_updates=14200\n" + FEEDER_ENOSPC + shutdown + "\n"
                 "  warnings.warn('resource_tracker: There appear to be %d '\n")
    r = triage.diagnose(traindoc.load(p))
    assert classes(r) == [("gpu_crash", "cause")] and "No space left on device" in r.verdict


def test_a_shutdown_after_the_run_went_on_says_nothing_of_the_exception(tmp_path: Path) -> None:
    p = tmp_path / "train.out"
    p.write_text(FEEDER_ENOSPC + "2023-05-01 10:06:00 | INFO | train_inner | epoch 018:  88 / "
                 "800 loss=0.31, num_updates=14200\n" + SHUTDOWN_LINES[0] + "\n")
    r = triage.diagnose(traindoc.load(p))
    assert r.facts["classes"] == []
