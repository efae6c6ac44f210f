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
A record's row stands at its ``[0]:`` line, or at its ``traceback`` line where that names the
signal the worker died of (the words a report quotes).
A record whose ``traceback`` field holds the worker's error (its error file's traceback, every
line indented two more spaces than the worker printed it) embeds that error in the report::

      traceback : Traceback (most recent call last):
        File ".../torch/distributed/distributed_c10d.py", line 4049, in all_gather_into_tensor
          work = group._allgather_base(output_tensor, input_tensor, opts)
      torch.AcceleratorError: CUDA error: device-side assert triggered

The reader hands lines over without their indentation, so the error is told by where it stands:
every line from the field to the report's next rule or record is the worker's, and the record's
row says where it ends (``traceback_end``): the error lines it holds are the record's rank's.
Where no rule or record closes it (a paste cut there, a log line with its own time header
next), nothing is marked: the lines after a cut report are not known to be the worker's.
A record pasted without its header (only the ``time : …`` / ``host : …`` fields, as people quote
the tail) is read too, as a failure that is not marked the root cause.

A table pasted flat is read as well (ZhehengJiangLancaster/AMVUR#2): a key alone on its line
with its value on a later line (several keys may come first, their values then in the same
order), fields glued together without whitespace, ``local rank`` for ``local_rank``, a
lower-case ``signal``, a time with a space for the ``_``::

    Root Cause (first observed failure) :
    [0]:
    time
    host
    2023-09-14 01:45:50
    ding-X10DRG
    rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>
    traceback : signal 9 (SIGKILL) received by PID 36071
"""

from __future__ import annotations

import re
import signal as _signal
from datetime import datetime

from .base import LineParser, Row

RECORD_RE = re.compile(r"^\s*\[(?P<n>\d+)\]:\s*$")
KEYS = r"time|host|rank|exitcode|error[_ ]file|traceback"
# a key alone on its line (a table pasted flat: its value comes on a later line)
BARE_KEY_RE = re.compile(rf"^\s*(?P<key>{KEYS})\s*+:?\s*$")
# where a field starts, also glued to the value before it ('…)exitcode: -9 (pid: 1)error file:
# <N/A>'); 'rank' without its ':' needs its number and local rank right after it ('rank2 (local
# rank: 2)') and is never the one of 'local rank' / 'local_rank'; a traceback takes the rest of
# the line
FIELD_START_RE = re.compile(
    r"(?<![A-Za-z])(?P<time>time)\s*:"
    r"|(?<![A-Za-z])(?P<host>host)\s*:"
    r"|(?<!local )(?<!local_)(?P<rank>rank)(?:\s*:|(?=\d+\s*\(local[_ ]rank))"
    r"|(?P<exitcode>exitcode)\s*:"
    r"|(?P<error_file>error[_ ]file)\s*:"
    r"|(?P<traceback>traceback)\s*:"
)
RANK_FIELD_RE = re.compile(r"^(?P<rank>\d+)(?:\s*\(local[_ ]rank:\s*(?P<local>\d+)\))?")
EXIT_FIELD_RE = re.compile(r"^(?P<code>-?\d+)(?:\s*\(pid:\s*(?P<pid>\d+)\))?")
HOST_VALUE_RE = re.compile(r"^\S+$")
SIGNAL_TEXT_RE = re.compile(r"\bsignal (?P<num>\d+) \((?P<name>SIG\w+)\)", re.IGNORECASE)
TIME_FORMATS = ("%Y-%m-%d_%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S")
RULE_RE = re.compile(r"^\s*(?:={8,}|-{8,})\s*$")
NO_OTHER_RE = re.compile(r"<NO[_ ]OTHER[_ ]FAILURES>")
# a record whose worker wrote no error file: torchrun points at the docs instead of a traceback
TRACEBACK_DOC_RE = re.compile(r"To enable traceback see")
# a logger's header at a line's start (glog 'E0512 09:27:56.020000', an ISO time): a line of
# the log, never one of the error a record embeds
LOG_HEADER_RE = re.compile(r"^\s*(?:[IWEF]\d{4} \d\d:\d\d:\d\d|\[?\d{4}-\d\d-\d\d[ T_]\d\d:\d\d)")
# the first field of a record quoted without its header: torchrun pads keys to 10 characters
ORPHAN_START_RE = re.compile(r"^\s*(?:time {6}: \d{4}-\d\d-\d\d[_ T]|host {6}: \S)")


# A launcher that exits with its child's -N (DeepSpeed's launch.py: sys.exit(returncode)) is seen
# by ssh/pdsh, a wrapper or a container as the unsigned byte 256-N: 247 is -9 (SIGKILL), 245 is
# -11 (SIGSEGV), 249 is -7 (SIGBUS). Only the fatal signals: 255 is the common exit(-1).
UNSIGNED_FATAL_SIGNALS = (4, 6, 7, 8, 9, 11, 15)


def signal_name(exitcode: int | None) -> str | None:
    """'SIGABRT' for exit code -6 (torchrun reports death by signal N as -N), 'SIGTERM' for 143
    (a shell's 128+N), 'SIGKILL' for 247 (-9 as an unsigned exit byte)."""
    if exitcode is not None and 256 - exitcode in UNSIGNED_FATAL_SIGNALS:
        exitcode -= 256
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
    # every line that starts a report while idle holds one: the headers, the padded first field
    # of a record quoted without them (a flat table's key and value lines only come after a
    # header, while the parser is inside the report)
    needles = ("Root Cause", "Failures:", "time      : ", "host      : ")
    section: str | None = None  # "root" | "failures" | "orphan" while inside the report

    def __init__(self) -> None:
        self.section: str | None = None
        self.record: Row | None = None
        self.ctx: object = None
        self.pending: list[str] = []  # keys of a flat table still waiting for their values
        # inside the worker's error a record's traceback field holds: its last line so far
        self.embedded: int | None = None

    def feed(self, text: str, ctx: object = None) -> list[tuple[str, Row]]:
        """Consume one line of the stream; ``ctx`` (where the line came from) rides along."""
        out: list[tuple[str, Row]] = []
        if self.embedded is not None and self._embedded_line(text, ctx):
            return out
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
                self._start(ctx, root=False)
                self._fields(text, ctx)
            return out
        if RECORD_RE.match(text):
            out += self._flush()
            self._start(ctx, root=self.section == "root")
            return out
        m = BARE_KEY_RE.match(text)
        if m:
            if self.record is None:  # the '[0]:' line left out of the paste
                self._start(ctx, root=self.section == "root")
            self.pending.append(_key(m["key"]))
            return out
        fields = _split_fields(text)
        if fields:
            if self.record is None:
                self._start(ctx, root=self.section == "root")
            self.pending.clear()
            for key, val in fields:
                self._field(key, val, ctx)
            return out
        if self.pending and self.record is not None and _fits(self.pending[0], text.strip()):
            self._field(self.pending.pop(0), text.strip(), ctx)
            return out
        if RULE_RE.match(text):
            out += self._flush()
            if text.strip().startswith("="):
                self.section = None
            return out
        if NO_OTHER_RE.search(text):
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

    def _start(self, ctx: object, root: bool) -> None:
        self.record = {"root_cause": root}
        self.ctx = ctx
        self.pending = []
        self.embedded = None

    def _fields(self, text: str, ctx: object) -> None:
        for key, val in _split_fields(text):
            self._field(key, val, ctx)

    def _field(self, key: str, val: str, ctx: object = None) -> None:
        rec = self.record
        assert rec is not None
        if key == "time":
            t = _time(val)
            if t is not None:
                rec["time"] = t
        elif key == "host":
            rec["host"] = val
        elif key == "rank":
            m = RANK_FIELD_RE.match(val)
            if m:
                rec["rank"] = int(m["rank"])
                if m["local"] is not None:
                    rec["local_rank"] = int(m["local"])
        elif key == "exitcode":
            m = EXIT_FIELD_RE.match(val)
            if m:
                rec["exitcode"] = int(m["code"])
                if m["pid"] is not None:
                    rec["pid"] = int(m["pid"])
                rec["signal"] = signal_name(rec["exitcode"])
        elif key == "traceback":
            m = SIGNAL_TEXT_RE.search(val)
            if m:
                rec["signal"] = m["name"].upper()
                # the line that says how the worker died is the record's evidence: its words
                # ("Signal 9 (SIGKILL) received by PID 3908423") are the ones people search for
                self.ctx = ctx
            elif val and not TRACEBACK_DOC_RE.match(val):
                self.embedded = _lineno(ctx)

    def _embedded_line(self, text: str, ctx: object) -> bool:
        """Whether ``text`` is one more line of the worker's error the record's traceback
        field holds. A rule or the next record closes it (the record's row then says where
        it ended); a log line's time header, or a line with no line number, abandons it."""
        ln = _lineno(ctx)
        if RULE_RE.match(text) or RECORD_RE.match(text):
            if self.record is not None and self.embedded is not None:
                self.record["traceback_end"] = self.embedded
            self.embedded = None
            return False
        if ln is None or LOG_HEADER_RE.match(text):
            self.embedded = None
            return False
        if text.strip():
            self.embedded = ln
        return True

    def _flush(self) -> list[tuple[str, Row]]:
        rec, self.record = self.record, None
        self.pending = []
        if rec is None or ("rank" not in rec and "exitcode" not in rec):
            return []
        rec["_ctx"] = self.ctx
        return [("exits", rec)]


def _lineno(ctx: object) -> int | None:
    """The line number of a line's context (the reader's ``(file, lineno, …)``), if any."""
    if isinstance(ctx, tuple) and len(ctx) > 1 and isinstance(ctx[1], int):
        return ctx[1]
    return None


def _key(name: str) -> str:
    return "error_file" if name.startswith("error") else name


def _split_fields(text: str) -> list[tuple[str, str]]:
    """The (key, value) fields of a line that starts with one, glued or not:
    'rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>' gives three; [] for a
    line that does not start with a field."""
    starts = list(FIELD_START_RE.finditer(text))
    if not starts or text[: starts[0].start()].strip():
        return []
    out: list[tuple[str, str]] = []
    for i, m in enumerate(starts):
        key = _key(m.lastgroup or "")
        if key == "traceback" or i + 1 == len(starts):
            out.append((key, text[m.end():].strip()))
            break
        out.append((key, text[m.end(): starts[i + 1].start()].strip()))
    return out


def _time(val: str) -> datetime | None:
    for fmt in TIME_FORMATS:
        try:
            return datetime.strptime(val, fmt)
        except ValueError:
            pass
    return None


def _fits(key: str, val: str) -> bool:
    """Whether a line of a flat table can be the value of ``key`` (anything else ends the
    record as an unknown line would)."""
    if not val or RULE_RE.match(val):
        return False
    if key == "time":
        return _time(val) is not None
    if key == "host":
        return bool(HOST_VALUE_RE.match(val))
    if key == "rank":
        return bool(RANK_FIELD_RE.fullmatch(val))
    if key == "exitcode":
        return bool(EXIT_FIELD_RE.fullmatch(val))
    return True


# torchelastic's events (torch 1.9-1.10 print them as JSON lines): a worker's FAILED status names
# its global rank and host ('{"name": "torchelastic.worker.status.FAILED", "source": "WORKER",
# … "metadata": {… "global_rank": 1, "group_rank": 1, … "hostname": "ip-172-30-2-79", "state":
# "FAILED", …'). The AGENT's own status lines are no worker's exit.
ELASTIC_EVENT_RE = re.compile(
    r'"name":\s*"torchelastic\.worker\.status\.FAILED",\s*"source":\s*"WORKER"'
    r'.*?"global_rank":\s*(?P<rank>\d+)(?:.*?"hostname":\s*"(?P<host>[\w.\-]+)")?')


def parse_elastic_event(text: str) -> Row | None:
    """A torchelastic FAILED worker event, as an ``exits`` row (rank and host; no exit code)."""
    m = ELASTIC_EVENT_RE.search(text)
    if not m:
        return None
    row: Row = {"rank": int(m["rank"])}
    if m["host"]:
        row["host"] = m["host"]
    return row


PARSERS = (LineParser(
    name="elastic_events", table="exits", needles=("torchelastic.worker.status.FAILED",),
    parse=parse_elastic_event,
    example='{"name": "torchelastic.worker.status.FAILED", "source": "WORKER", "timestamp": 0, '
            '"metadata": {"run_id": "1234", "global_rank": 1, "group_rank": 1, "worker_id": '
            '"28454", "role": "default", "hostname": "ip-172-30-2-79", "state": "FAILED"}}'),)
