"""torchrun's ChildFailedError report into the ``exits`` table.

::

    Root Cause (first observed failure):
    [0]:
      time      : 2024-07-08_01:47:24
      host      : node-7
      rank      : 3 (local_rank: 3)
      exitcode  : -6 (pid: 4242)
      error_file: <N/A>
      traceback : Signal 6 (SIGABRT) received by PID 4242

Records under ``Failures:`` and ``Root Cause`` are read alike; ``root_cause`` tells them apart.
A record pasted without its header (only the ``time : …`` / ``host : …`` fields, as people quote
the tail) is read too, as a failure that is not marked the root cause.
"""

from __future__ import annotations

import re
import signal as _signal
from datetime import datetime

from .base import Row

RECORD_RE = re.compile(r"^\s*\[(?P<n>\d+)\]:\s*$")
FIELD_RE = re.compile(r"^\s*(?P<key>time|host|rank|exitcode|error_file|traceback)\s*:\s?(?P<val>.*)$")
RANK_FIELD_RE = re.compile(r"(?P<rank>\d+)\s*\(local_rank:\s*(?P<local>\d+)\)")
EXIT_FIELD_RE = re.compile(r"(?P<code>-?\d+)\s*\(pid:\s*(?P<pid>\d+)\)")
SIGNAL_TEXT_RE = re.compile(r"Signal (?P<num>\d+) \((?P<name>SIG\w+)\)")
RULE_RE = re.compile(r"^\s*(?:={8,}|-{8,})\s*$")
# the first field of a record quoted without its header: torchrun pads keys to 10 characters
ORPHAN_START_RE = re.compile(r"^\s*(?:time {6}: \d{4}-\d\d-\d\d_|host {6}: \S)")


def signal_name(exitcode: int | None) -> str | None:
    """'SIGABRT' for exit code -6 (torchrun reports death by signal N as -N) and 'SIGTERM'
    for 143 (a shell's 128+N)."""
    if exitcode is None or exitcode == 0 or 0 < exitcode <= 128 or exitcode > 128 + 64:
        return None
    num = -exitcode if exitcode < 0 else exitcode - 128
    try:
        return _signal.Signals(num).name
    except ValueError:
        return f"SIG{num}"


class ChildFailedParser:
    """Reads the framed failure report torchrun prints when a worker fails."""

    tables = ("exits",)  # what it fills (``load(tables=…)`` leaves it out otherwise)
    needles = ("Root Cause", "Failures:", "time      : ", "host      : ")
    section: str | None = None  # "root" | "failures" | "orphan" while inside the report

    def __init__(self) -> None:
        self.section: str | None = None
        self.record: Row | None = None
        self.ctx: object = None

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line of the stream; ``ctx`` (where the line came from) rides along."""
        out: list[tuple[str, Row]] = []
        if "Root Cause" in text:
            out += self._flush()
            self.section = "root"
            return out
        if text.strip().startswith("Failures:"):
            out += self._flush()
            self.section = "failures"
            return out
        if self.section is None:
            if ORPHAN_START_RE.match(text):
                self.section = "orphan"
                self.record = {"root_cause": False}
                self.ctx = ctx
                self._field(*self._key_val(text))
            return out
        m = RECORD_RE.match(text)
        if m:
            out += self._flush()
            self.record = {"root_cause": self.section == "root"}
            self.ctx = ctx
            return out
        m = FIELD_RE.match(text)
        if m and self.record is not None:
            self._field(m["key"], m["val"].strip())
            return out
        if RULE_RE.match(text):
            out += self._flush()
            if text.strip().startswith("="):
                self.section = None
            return out
        if "<NO_OTHER_FAILURES>" in text:
            return out
        if text.strip():
            out += self._flush()
            self.section = None
        return out

    def close(self) -> list[tuple[str, Row]]:
        """End of stream."""
        out = self._flush()
        self.section = None
        return out

    @staticmethod
    def _key_val(text: str) -> tuple[str, str]:
        m = FIELD_RE.match(text)
        return (m["key"], m["val"].strip()) if m else ("", "")

    def _field(self, key: str, val: str) -> None:
        rec = self.record
        assert rec is not None
        if key == "time":
            try:
                rec["time"] = datetime.strptime(val, "%Y-%m-%d_%H:%M:%S")
            except ValueError:
                pass
        elif key == "host":
            rec["host"] = val
        elif key == "rank":
            m = RANK_FIELD_RE.search(val)
            if m:
                rec["rank"], rec["local_rank"] = int(m["rank"]), int(m["local"])
        elif key == "exitcode":
            m = EXIT_FIELD_RE.search(val)
            if m:
                rec["exitcode"], rec["pid"] = int(m["code"]), int(m["pid"])
                rec["signal"] = signal_name(rec["exitcode"])
        elif key == "traceback":
            m = SIGNAL_TEXT_RE.search(val)
            if m:
                rec["signal"] = m["name"]

    def _flush(self) -> list[tuple[str, Row]]:
        rec, self.record = self.record, None
        if rec is None or ("rank" not in rec and "exitcode" not in rec):
            return []
        rec["_ctx"] = self.ctx
        return [("exits", rec)]
