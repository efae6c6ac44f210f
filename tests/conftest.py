from __future__ import annotations

import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
# CI checks out the repo with shared/ beside it; elsewhere point TRAINDOC_SEEDS at the seeds.
SEEDS = Path(os.environ.get("TRAINDOC_SEEDS", ROOT.parent / "shared" / "seeds"))
DATA = ROOT / "data"
# Bundled samples (data/<runbook>/<sample>/); data/corpus holds real logs, scored apart.
SAMPLE_DIRS = sorted(p for p in DATA.glob("*/*/") if p.is_dir() and p.parent.name != "corpus")
CORPUS = DATA / "corpus"
