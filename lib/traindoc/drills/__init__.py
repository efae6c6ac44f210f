"""Executable drills: small real torch.distributed jobs (CPU, gloo, torchrun) with one injected fault.

Each drill writes a bundle of the real artifacts it produced (torchrun output, per-rank logs,
flight-recorder dumps, py-spy dumps) plus ``drill.json`` with the injected truth.  Importing this
package does not import torch; only the worker process that torchrun starts does.
"""

from .runner import (
    DRILLS,
    SPECS,
    DrillError,
    DrillOutputError,
    DrillSpec,
    regenerate_samples,
    run,
    sample_dir,
)

__all__ = ["DRILLS", "SPECS", "DrillError", "DrillOutputError", "DrillSpec", "regenerate_samples",
           "run", "sample_dir"]
