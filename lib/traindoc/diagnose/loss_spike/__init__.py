"""Loss and grad-norm spikes, NaN and skipped iterations, fp16 loss-scale collapses.

The loss of a healthy run falls, noisily. A spike is measured against a robust baseline that
follows that fall: the median of the preceding ``window`` logged points, or of their recent
half when that is lower (on a falling curve the full median lags half a window behind), with
a scale of 1.4826·MAD (the standard deviation, were the noise Gaussian) of the values or of
the steps (/√2; a steep fall inflates the former, not the latter), whichever is smaller,
floored at a small fraction of the baseline. A point above ``baseline + max(onset_k·scale, onset_rel·baseline)`` opens an
excursion; the baseline is then frozen; the excursion ends (recovered) when ``patience``
consecutive points are back within ``max(recover_k·scale, recover_rel·baseline)`` of that
pre-spike baseline (the log ending on such points counts, flagged). It is a spike when
its peak clears ``baseline + max(k·scale, rel·baseline)``; both margins are widened while the
history is short (few points, wider margin), and a spike is also over once the loss is back
down ``recover_frac`` of its height. Points inside spikes are left out of later baselines.
A rise no higher than the series' own noise is no spike: the noise before it, or after it
when it came too early to know that, and the run's frequent blips when they are the noise
(detect.py).

Grad norms run the same detector on ``log(grad norm)`` with factor thresholds (2× opens,
4× confirms); a grad-norm excursion that opened before the loss's and was still open when the
loss left its baseline *led* the loss — the usual sign of an optimizer instability (Adam's
second moment too small for a sudden large gradient) rather than of one bad batch, which moves
both in the same iteration.

What to do follows PaLM (Chowdhery et al. 2022, §5.1: restart ~100 steps before the spike and
skip 200–500 batches) and the BigScience runs (``--skip-train-iteration-range``): keep going
when the spike recovered; otherwise roll back to the last checkpoint before its first sign and
skip the batches that led into it.

``analyse`` (analysis.py) gathers what the runbook shows — the series (series.py), the
detector's spikes (detect.py), NaNs, skipped steps, collapses, the rollback point; ``report``
(report.py) words it; ``diagnose`` is both.
"""

from __future__ import annotations

from ...incident import Incident
from ...report import Report
from .analysis import LossSpikeAnalysis, analyse
from .report import FACT_KEYS, report

NAME = "loss_spike"
RUNBOOK = "loss_spike.ipynb"  # in traindoc/runbooks/
# the incident tables ``analyse`` reads
TABLES = ("iterations", "checkpoints", "progress", "host_timings")


def diagnose(incident: Incident, *, window: int = 50, k: float = 6.0, rel_threshold: float = 0.10,
             patience: int = 3, checkpoint_interval: int | None = None,
             loss_scale_halvings: int = 4) -> Report:
    """Find loss spikes (and NaNs, skipped steps, loss-scale collapses) and say whether to keep
    going or to roll back and skip data. ``window``/``k``/``rel_threshold``/``patience`` tune
    the detector (see the module doc); ``checkpoint_interval`` (iterations) gives the rollback
    point when the logs have no checkpoint lines."""
    return report(analyse(incident, window=window, k=k, rel_threshold=rel_threshold,
                          patience=patience, checkpoint_interval=checkpoint_interval,
                          loss_scale_halvings=loss_scale_halvings))


__all__ = ["FACT_KEYS", "LossSpikeAnalysis", "NAME", "RUNBOOK", "TABLES", "analyse",
           "diagnose", "report"]
