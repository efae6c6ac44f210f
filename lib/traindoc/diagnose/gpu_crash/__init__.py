"""GPU crash: which rank and host failed first, how, what it cost, and how often to checkpoint.

One dead rank makes every other rank fail too: its peers' next collective fails (NCCL
``ncclRemoteError``, gloo ``Connection reset by peer``) or times out, and the launcher kills the
survivors. Those lines are loud and numerous; they are the *cascade*. The *cause* is the first
local failure in time: a driver Xid or ECC error, a CUDA error, an OOM, a crash signal, a Python
exception — or, when a rank was killed without a word, torchrun's "Root Cause (first observed
failure)" record.

``analyse(incident, **knobs)`` gives a ``GpuCrashAnalysis`` (every table the runbook shows);
``report(analysis)`` turns it into a ``Report``; ``diagnose`` does both. The modules:
``events`` (failure events, the first failure and its cascade), ``checkpoints`` (resume point,
lost work, Young/Daly interval), ``analysis`` (the analysis) and ``report`` (the prose).
"""

from __future__ import annotations

from ...incident import Incident
from ...report import Report
from .analysis import FACT_KEYS, GpuCrashAnalysis, analyse
from .checkpoints import DEFAULT_MTBF_HOURS
from .events import SAME_FAILURE_WINDOW_S
from .report import report

NAME = "gpu_crash"
RUNBOOK = "gpu_crash.ipynb"  # in traindoc/runbooks/
# the incident tables ``analyse`` reads
TABLES = ("errors", "exits", "iterations", "checkpoints", "collectives", "host_timings", "progress")


def diagnose(incident: Incident, checkpoint_save_s: float | None = None,
             iteration_s: float | None = None, mtbf_hours: float = DEFAULT_MTBF_HOURS,
             save_interval: int | None = None, gpus_per_node: int = 8,
             window_s: float = SAME_FAILURE_WINDOW_S) -> Report:
    """Diagnose a crashed job: ``report(analyse(incident, …))``. ``checkpoint_save_s`` /
    ``iteration_s`` override what the logs measure; ``mtbf_hours`` is the job's mean time
    between failures; ``save_interval`` (the job's --save-interval) places the last checkpoint
    when no save line was logged; ``gpus_per_node`` turns a rank into a node index when no line
    names the host."""
    return report(analyse(incident, checkpoint_save_s=checkpoint_save_s, iteration_s=iteration_s,
                          mtbf_hours=mtbf_hours, save_interval=save_interval,
                          gpus_per_node=gpus_per_node, window_s=window_s))


__all__ = ["FACT_KEYS", "GpuCrashAnalysis", "NAME", "RUNBOOK", "TABLES", "analyse",
           "diagnose", "report"]
