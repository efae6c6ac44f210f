"""A runbook's answer computed in this process: the load, ``analyse`` and ``report`` calls its
notebook makes, with the notebook's parameters, so ``traindoc run``/``triage`` can print the
verdict before the notebook (a kernel, matplotlib) has started.

``RUNBOOK_CALLS`` says, per runbook, which parameters go to ``load_or_fail`` and which go to
``analyse`` under which name; ``tests/test_answer.py`` checks the answer against the summary.json
the notebook writes on the bundled samples, so the two cannot drift apart unseen.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .diagnose import failure_class, triage
from .reader import load_or_fail
from .report import Report, where

READ_KNOBS = ("max_file_gib", "max_total_gib", "scheduler")
DEFAULT_READ = {"max_file_gib": 16.0, "max_total_gib": 64.0, "scheduler": ""}


@dataclass(frozen=True)
class Calls:
    """What one runbook's load and analyse cells pass: ``year`` to the load or not, and the
    notebook parameter behind each ``analyse`` keyword (keyword -> parameter)."""

    year: bool
    knobs: Mapping[str, str]


RUNBOOK_CALLS: dict[str, Calls] = {
    "timeout": Calls(True, {"world_size": "world_size"}),
    "gpu_crash": Calls(True, {k: k for k in ("checkpoint_save_s", "iteration_s", "mtbf_hours",
                                             "save_interval", "gpus_per_node")}),
    "deadlock": Calls(True, {"thread": "thread", "depth": "stack_depth"}),
    "loss_spike": Calls(True, {k: k for k in ("window", "k", "rel_threshold", "patience",
                                              "checkpoint_interval")}),
    "throughput": Calls(False, {k: k for k in ("metric", "hosts", "spare_nodes", "min_segment",
                                               "threshold", "min_drop_pct", "job_script")}),
    "triage": Calls(False, {}),
}


@dataclass(frozen=True)
class Answer:
    """The report a runbook's notebook will write, and the cause's report for triage."""

    report: Report
    summary: dict[str, Any]  # what summary.json will hold
    cause: Report | None = None  # triage: the cause class's own report

    def lines(self) -> list[str]:
        """The answer for a terminal: verdict, confidence, where, the first action."""
        s = self.summary
        out = [f"verdict ({s['confidence']}): {s['verdict']}"]
        facts = self.cause.facts if self.cause is not None else s["facts"]
        here = where(facts)
        if here:
            out.append(f"where: {here}")
        if s["actions"]:
            first = s["actions"][0]
            out.append(f"first action: {first['title']}")
            if first.get("how"):
                out.append(f"  {first['how']}")
        return out


def answer(name: str, log_path: str | list[str], parameters: Mapping[str, Any] | None = None,
           output_dir: str | os.PathLike[str] | None = None,
           progress: bool | None = None) -> Answer:
    """Runbook ``name``'s answer on ``log_path`` with the notebook's ``parameters`` (the
    parameters cell's defaults where absent); raises ``NoInputError`` as the notebook does.
    Triage with ``run_runbooks`` (its default) adds each class runbook's verdict, as the
    notebook does, from the class reports triage computed (their summaries go to
    ``output_dir/<class>/``)."""
    calls = RUNBOOK_CALLS[name]
    p = dict(parameters or {})
    read = {k: p.get(k, DEFAULT_READ[k]) for k in READ_KNOBS}
    incident = load_or_fail(
        log_path, max_bytes=int(read["max_file_gib"] * 2**30),
        max_total_bytes=int(read["max_total_gib"] * 2**30), scheduler=read["scheduler"],
        progress=progress, **({"year": p.get("year")} if calls.year else {}))
    module = triage if name == "triage" else failure_class(name)
    knobs = {kw: p[param] for kw, param in calls.knobs.items() if param in p}
    analysis = module.analyse(incident, **knobs)
    result = module.report(analysis)
    cause = None
    if name == "triage":
        cause = analysis.runbooks.get(analysis.cause) if analysis.cause else None
        if p.get("run_runbooks", True) and result.facts["classes"] and output_dir is not None:
            result = module.with_runbooks(result, _class_reports(analysis.runbooks, output_dir))
    return Answer(result, result.summary(incident), cause)


def _class_reports(reports: Mapping[str, Report | None], output_dir: str | os.PathLike[str]):
    """A ``triage.with_runbooks`` runner giving each class's report as its runbook's summary."""
    base = Path(output_dir).resolve()

    def run(cls: str) -> dict[str, Any]:
        rep = reports.get(cls)
        if rep is None:
            return {"summary": None, "verdict": None, "confidence": None, "actions": [],
                    "error": f"traindoc.diagnose.{cls} gave no report"}
        s = rep.summary()
        return {"summary": str(base / cls / "summary.json"), "verdict": s["verdict"],
                "confidence": s["confidence"], "actions": s["actions"], "error": None}

    return run


__all__ = ["RUNBOOK_CALLS", "Answer", "Calls", "answer"]
