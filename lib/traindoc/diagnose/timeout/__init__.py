"""Collective timeout: which ranks timed out in which collective, who never came, and why.

Patterns:

- ``desync``: ranks issued different collectives (or sizes/dtypes) at one sequence number.
- ``straggler``: some ranks never enqueued the collective the others wait in (named in
  ``lagging_ranks``): they were somewhere else (data loading, eval, a rank-conditional branch,
  a smaller data split). Read from the ranks a hang report names missing, the ranks whose
  watchdog status shows them behind the collective (a rank seen at an earlier number and not
  at the others': unless a rank past it completed collectives it never enqueued, where the
  numbers do not line up). (A rank behind in the collectives each rank logged entering, with
  nothing timed out, is a hang: the deadlock runbook's.)
- ``all_stuck``: every rank entered the same collective and it never finished: the transport
  (network, NVLink, a sick GPU) rather than the program.
- ``unknown``: the logs do not tell (e.g. only one rank's view was captured).

``analyse`` (``analysis.py``: the tables and rules) reads the incident once into a
``TimeoutAnalysis``; ``report`` (``report.py``: facts, findings, verdict, actions) writes the
prose; ``diagnose`` is both.
"""

from __future__ import annotations

from ...incident import Incident
from ...report import Report
from .analysis import TimeoutAnalysis, analyse
from .report import FACT_KEYS, report

NAME = "timeout"
RUNBOOK = "timeout.ipynb"  # in traindoc/runbooks/
# the incident tables ``analyse`` reads
TABLES = ("collectives", "errors", "exits", "iterations", "progress")


def diagnose(incident: Incident, world_size: int | None = None) -> Report:
    """Diagnose a collective timeout. ``world_size``, when known, lets ranks that left no
    trace at all be named as lagging candidates."""
    return report(analyse(incident, world_size=world_size))


__all__ = ["FACT_KEYS", "NAME", "RUNBOOK", "TABLES", "TimeoutAnalysis", "analyse",
           "diagnose", "report"]
