"""Headless runbook execution: papermill runs a runbook notebook into an output directory.

``execute_runbook`` never raises for a failing runbook (the ``Execution`` says what went wrong);
the CLI, triage and the corpus scorer all run notebooks through it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .locations import runbooks_dir

KERNEL = "python3"
# ipykernel warns on stderr that its local TCP sockets are unencrypted; in a nested run
# (triage running the class runbooks) that warning lands in the notebook, so keep it quiet.
KERNEL_ARGS = ["--IPKernelApp.log_level=ERROR"]


def available_runbooks(directory: Path | None = None) -> dict[str, Path]:
    """Runbook name -> notebook, for every ``*.ipynb`` in the runbooks directory."""
    d = directory or runbooks_dir()
    return {p.stem: p for p in sorted(d.glob("*.ipynb"))} if d.is_dir() else {}


@dataclass
class Execution:
    """One headless runbook execution."""

    runbook: str
    notebook: Path  # the executed notebook
    output_dir: Path
    summary: dict[str, Any] | None = None
    error: str | None = None
    no_input: bool = False

    @property
    def summary_path(self) -> Path:
        return self.output_dir / "summary.json"


def execute_runbook(name: str, log_path: str | list[str], output_dir: str | os.PathLike[str],
                    parameters: dict[str, Any] | None = None,
                    runbooks: dict[str, Path] | None = None) -> Execution:
    """Execute runbook ``name`` with papermill into ``output_dir`` (the executed notebook is
    ``output_dir/<name>.ipynb``). Never raises for a failing runbook: see ``error``."""
    import papermill as pm

    books = runbooks if runbooks is not None else available_runbooks()
    out = Path(output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    ex = Execution(name, out / f"{name}.ipynb", out)
    if name not in books:
        ex.error = f"no runbook {name}.ipynb in {runbooks_dir()}"
        return ex
    ex.summary_path.unlink(missing_ok=True)  # never report a previous run's summary
    params = {**(parameters or {}), "log_path": log_path, "output_dir": str(out)}
    try:
        pm.execute_notebook(str(books[name]), str(ex.notebook), parameters=params,
                            kernel_name=KERNEL, cwd=os.getcwd(),
                            progress_bar=False, log_output=False, extra_arguments=KERNEL_ARGS)
    except pm.PapermillExecutionError as e:
        ex.no_input = e.ename == "NoInputError"
        ex.error = e.evalue if ex.no_input else f"{e.ename}: {e.evalue}"
    except Exception as e:  # a kernel that died, a notebook that cannot be read
        ex.error = f"{type(e).__name__}: {e}"
    if ex.error is None and ex.summary_path.exists():
        try:
            ex.summary = json.loads(ex.summary_path.read_text(encoding="utf-8"))
        except ValueError as e:
            ex.error = f"{ex.summary_path} is not valid JSON: {e}"
    elif ex.error is None:
        ex.error = f"the runbook wrote no {ex.summary_path}"
    return ex


def runbook_runner(log_path: str | list[str], output_dir: str | os.PathLike[str],
                   ) -> Callable[[str], dict[str, Any]]:
    """For ``triage.with_runbooks``: runs class ``cls``'s runbook into ``output_dir/cls/``."""
    if isinstance(log_path, str | os.PathLike):
        logs: str | list[str] = os.path.abspath(log_path)
    else:
        logs = [os.path.abspath(p) for p in log_path]
    base = Path(output_dir).resolve()

    def run(cls: str) -> dict[str, Any]:
        ex = execute_runbook(cls, logs, base / cls)
        s = ex.summary or {}
        return {"summary": str(ex.summary_path) if ex.summary else None,
                "verdict": s.get("verdict"), "confidence": s.get("confidence"),
                "actions": s.get("actions", []), "error": ex.error}

    return run


__all__ = ["KERNEL", "KERNEL_ARGS", "Execution", "available_runbooks", "execute_runbook",
           "runbook_runner"]
