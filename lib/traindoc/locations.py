"""Where traindoc's own files are: the runbooks shipped in the package, and the checkout.

The runbooks are package data (``traindoc/runbooks/*.ipynb``), found the same way in a
checkout, an editable install and an installed wheel. ``CHECKOUT`` is the repository root when
traindoc runs from a checkout (bundled samples, the corpus); in an installed wheel it does not
exist and nothing depends on it.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


def runbooks_dir() -> Path:
    """The runbooks: ``$TRAINDOC_RUNBOOKS`` if set, else the ones shipped in the package."""
    env = os.environ.get("TRAINDOC_RUNBOOKS")
    return Path(env) if env else Path(str(files("traindoc") / "runbooks"))


def in_checkout(path: str | os.PathLike[str]) -> Path | None:
    """``path`` under the checkout (bundled samples named relative to it), or None when
    there is no checkout or no such file."""
    p = CHECKOUT / path
    return p if (CHECKOUT / "pyproject.toml").is_file() and p.exists() else None
