"""What a load read, skipped and warned about, counted as it reads; ``Incident.account``
(``incident.ReadAccount``) is its summary.

The bottom of the reader: every other reader module counts into an ``Account``; it imports
none of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..incident import ReadAccount, Unreadable

MAX_WARNINGS = 200
# The counts one worker's account adds to the parent's (``Account.absorb``).
COUNTS = ("lines", "parsed_lines", "unparsed_lines", "bad_bytes", "truncated_lines",
          "rejoined_lines", "dumps")


@dataclass
class Account:
    """Paths asked for, files read, lines read, parsed and not, bytes replaced, warnings."""

    paths: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    lines: int = 0
    parsed_lines: int = 0
    unparsed_lines: int = 0
    bad_bytes: int = 0
    truncated_lines: int = 0
    rejoined_lines: int = 0
    dumps: int = 0
    warnings: list[str] = field(default_factory=list)
    unreadable: list[Unreadable] = field(default_factory=list)  # (the first MAX_WARNINGS)

    def warn(self, msg: str) -> None:
        """Keep a warning (the first ``MAX_WARNINGS``, then one line saying more were left)."""
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(msg)
        elif len(self.warnings) == MAX_WARNINGS:
            self.warnings.append("… further warnings left out")

    def unreadable_value(self, value: Unreadable) -> None:
        """Keep a value no column could hold, and warn about it."""
        if len(self.unreadable) < MAX_WARNINGS:
            self.unreadable.append(value)
        self.warn(str(value))

    def absorb(self, other: Account) -> None:
        """Add another account's files, warnings and counts (a worker's, read after ours)."""
        self.files.extend(other.files)
        for w in other.warnings:
            self.warn(w)
        self.unreadable.extend(other.unreadable[:MAX_WARNINGS - len(self.unreadable)])
        for k in COUNTS:
            setattr(self, k, getattr(self, k) + getattr(other, k))

    def summary(self, tables: list[str] | None = None) -> ReadAccount:
        """``Incident.account``: the counts, the files, the warnings, the values no column
        could hold (and ``tables`` when the load filled only those)."""
        return ReadAccount(
            paths=self.paths, files=len(self.files), file_list=self.files, lines=self.lines,
            parsed_lines=self.parsed_lines, unparsed_lines=self.unparsed_lines,
            rejoined_lines=self.rejoined_lines, truncated_lines=self.truncated_lines,
            bad_bytes=self.bad_bytes, dumps=self.dumps, warnings=self.warnings, tables=tables,
            unreadable=self.unreadable)
