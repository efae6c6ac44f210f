"""Values from logs made safe for the shell commands the runbooks print.

A log is written by the job, and a job's owner is not the admin who pastes a runbook's
``scontrol``/``sbatch`` line: every value read from a log that goes into a printed command
passes here. A value is checked for what it claims to be (a host name is letters, digits,
``-``, ``.`` and ``_``; a rank is an int) and shell-quoted (``shlex.quote``); a value that
cannot be made safe is refused (``None``) and the caller says in words what to run by hand.
Nothing here expands, evaluates or runs anything.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from typing import Any

from .hostlist import compress

# A host name: starts with a letter or digit (never '-', which a command reads as an option).
HOST_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
# Control characters (newline included): a value holding one is never put into a command.
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# What a free-text reason (scontrol's reason="…") keeps: words, digits and plain punctuation,
# none of which the shell reads inside double quotes.
REASON_DROP_RE = re.compile(r"[^A-Za-z0-9 .,:;_/()+=#%@-]")
MAX_REASON = 60


def is_host_name(value: Any) -> bool:
    """``value`` is a host name: letters, digits, ``-``, ``.``, ``_``; not starting with ``-``."""
    return isinstance(value, str) and HOST_RE.fullmatch(value) is not None


def host_arg(value: Any) -> str | None:
    """One host name ready for a command line, or None when ``value`` is not a host name."""
    return shlex.quote(value) if is_host_name(value) else None


def hosts_arg(hosts: Iterable[Any], *, hostlist: bool = False) -> str | None:
    """Host names for a command line: comma-joined, quoted (or a compressed SLURM hostlist
    with ``hostlist=True``, always in single quotes: its brackets are glob characters); None
    when there is none or any one is not a host name."""
    names = list(dict.fromkeys(hosts))
    if not names or not all(is_host_name(h) for h in names):
        return None
    if hostlist:  # checked names and the hostlist's own "[],-" hold no quote
        return f"'{compress(names)}'"
    return shlex.quote(",".join(names))


def rank_arg(value: Any) -> int | None:
    """A rank as an int (a bool, a float with a fraction, text that is not a number: None)."""
    if isinstance(value, bool):
        return None
    try:
        out = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if isinstance(value, float) and out != value:
        return None
    return out if out >= 0 else None


def quote(value: Any) -> str | None:
    """Any text (a path, a name) quoted for the shell; None when it holds a control character
    (a newline would end the command where it is pasted). A leading ``-`` gets ``./`` in
    front of it so that a command never reads the value as an option."""
    text = str(value)
    if not text or CONTROL_RE.search(text):
        return None
    if text.startswith("-"):
        text = "./" + text
    return shlex.quote(text)


def quote_all(values: Iterable[Any]) -> str | None:
    """Values quoted and joined by spaces; None when any one cannot be made safe."""
    out = [quote(v) for v in values]
    return None if not out or any(q is None for q in out) else " ".join(out)  # type: ignore[misc]


def reason_text(text: Any, limit: int = MAX_REASON) -> str:
    """Free text (an error message) cut down to what is safe inside double quotes: letters,
    digits, spaces and plain punctuation; cut at a word boundary, never mid-word."""
    words = REASON_DROP_RE.sub(" ", CONTROL_RE.sub(" ", str(text))).split()
    out = ""
    for w in words:
        nxt = f"{out} {w}" if out else w
        if len(nxt) > limit:
            break
        out = nxt
    return out.strip(" .,:;") or "GPU failure"


def shown(value: Any, limit: int = 80) -> str:
    """A refused value as it may appear in a sentence: escaped (``repr``), never raw."""
    text = repr(str(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["hosts_arg", "host_arg", "is_host_name", "quote", "quote_all", "rank_arg",
           "reason_text", "shown"]
