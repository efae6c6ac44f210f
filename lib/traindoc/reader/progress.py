"""The progress bar of a long load (``tqdm.auto``: a widget in a notebook, text on a terminal)."""

from __future__ import annotations

import sys
from typing import Any


def _in_notebook() -> bool:
    """True inside a Jupyter kernel with a front end (where tqdm.auto draws a widget)."""
    ip = sys.modules.get("IPython")
    if ip is None:
        return False
    try:
        shell = ip.get_ipython()
    except Exception:  # noqa: BLE001
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def progress_bar(progress: bool | None, total: int, files: int) -> Any:
    """A tqdm bar over ``total`` input bytes, shown after a second; None when off (``progress``
    False, or None and neither a terminal nor a notebook)."""
    if progress is False or total <= 0:
        return None
    if progress is None and not (_in_notebook() or getattr(sys.stderr, "isatty", lambda: False)()):
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    desc = f"loading {files} file{'s' if files != 1 else ''}"
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc,
                delay=0 if progress else 1.0, leave=False, dynamic_ncols=True)
