"""Diagnoses: one package per failure class, registered once in ``CLASSES`` below, and
``triage`` over them. ``collectives`` and ``common`` hold the cross-rank comparisons and small
helpers the classes share.

Every class package keeps the ``FailureClass`` contract and exports nothing else:
``analyse(incident, **knobs) -> <Class>Analysis`` (the tables and values its runbook shows),
``report(analysis) -> Report`` (findings, verdict, actions), ``diagnose = report ∘ analyse``,
and its ``NAME``, ``FACT_KEYS``, ``TABLES`` and ``RUNBOOK``. Triage, the scorer, ``watch``,
the CLI and the tests read ``CLASSES``: a new class is one package and one line here.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..incident import Incident
from ..report import Report


class FailureClass(Protocol):
    """What a failure class package provides (a module satisfies it by its names)."""

    NAME: str  # the class's name: its package, its runbook's stem, its summary's "runbook"
    FACT_KEYS: tuple[str, ...]  # the facts its summary.json always holds
    TABLES: tuple[str, ...]  # the incident tables its ``analyse`` reads
    RUNBOOK: str  # its notebook's file name in ``traindoc/runbooks/``

    def analyse(self, incident: Incident, **knobs: Any) -> Any:
        """The frozen analysis its runbook shows (knobs documented as Args)."""
        ...

    def report(self, analysis: Any) -> Report:
        """The verdict, findings and actions of an analysis."""
        ...

    def diagnose(self, incident: Incident, **knobs: Any) -> Report:
        """``report(analyse(incident, **knobs))``."""
        ...


from . import deadlock, gpu_crash, loss_spike, throughput, timeout  # noqa: E402  (after the protocol)

# The registry: every failure class, in the order triage and the scorer list them.
CLASSES: tuple[FailureClass, ...] = (timeout, gpu_crash, deadlock, throughput, loss_spike)
NAMES: tuple[str, ...] = tuple(c.NAME for c in CLASSES)


def failure_class(name: str) -> FailureClass:
    """The registered class called ``name`` (``KeyError`` naming the classes otherwise)."""
    for c in CLASSES:
        if c.NAME == name:
            return c
    raise KeyError(f"no failure class {name!r}; the classes: {', '.join(NAMES)}")


__all__ = ["CLASSES", "NAMES", "FailureClass", "failure_class"]
