"""The diagnoses' typed results: what the failure classes pass each other instead of loose
dicts, bare strings and magic numbers (modelled on torch's flight-recorder analyser,
``tools/flight_recorder/components/types.py``: documented enums, ``NamedTuple`` records).

The enums are ``StrEnum``/``IntEnum``: a value written to summary.json, a table or a message is
the same string or number as before, so the facts keep their names and values.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum
from typing import Any, NamedTuple

# The process group of a collective no line named (a watchdog line carries ``[Rank N]`` only).
# It is a value in tables and facts ("?"), so it stays a string, under one name.
UNKNOWN_GROUP = "?"


class MismatchKind(StrEnum):
    """How the ranks of one (process group, sequence number) disagree.

    OP: they issued different collectives.
    SIZE: the same collective with different element counts or shapes.
    DTYPE: the same collective with different dtypes.
    MISSING_RANKS: some ranks of the group recorded nothing at that number, having recorded
        earlier ones (they never got there).
    STATE: some completed it, others did not.
    """

    OP = "op"
    SIZE = "size"
    DTYPE = "dtype"
    MISSING_RANKS = "missing_ranks"
    STATE = "state"

    @property
    def is_desync(self) -> bool:
        """The ranks called different collectives (or sizes, dtypes): a program's desync."""
        return self in (MismatchKind.OP, MismatchKind.SIZE, MismatchKind.DTYPE)


class Mismatch(NamedTuple):
    """The first place ranks disagree: group, sequence number, how, what each rank ran
    (``ops``: rank as text → op) and the differing (or missing) ranks."""

    process_group: str
    seq_num: int | None
    kind: MismatchKind
    ops: dict[str, str]
    ranks: list[int]

    @classmethod
    def from_fact(cls, fact: dict[str, Any] | None) -> Mismatch | None:
        """The record of a ``first_mismatch`` fact (None for None)."""
        if not fact:
            return None
        return cls(fact["process_group"], fact["seq_num"], MismatchKind(fact["kind"]),
                   dict(fact["ops"]), list(fact["ranks"]))

    def as_fact(self) -> dict[str, Any]:
        """The ``first_mismatch`` fact of summary.json (a plain dict, ``kind`` a string)."""
        return {"process_group": self.process_group, "seq_num": self.seq_num,
                "kind": str(self.kind), "ops": dict(self.ops), "ranks": list(self.ranks)}


class Pattern(StrEnum):
    """What a collective timeout looks like across the ranks (the ``pattern`` fact).

    DESYNC: ranks issued different collectives (or sizes/dtypes) at one sequence number, or
        ranks of one group timed out in different ops a few numbers apart (their order diverged).
    STRAGGLER: some ranks never enqueued the collective the others wait in.
    ALL_STUCK: every rank entered the same collective and it never finished (the transport).
    UNKNOWN: the logs do not tell (e.g. only one rank's view was captured).
    """

    DESYNC = "desync"
    STRAGGLER = "straggler"
    ALL_STUCK = "all_stuck"
    UNKNOWN = "unknown"


class Strength(IntEnum):
    """How strongly a failure event says it is the cause (the ``strength`` column of
    gpu_crash's events; of events close in time, the stronger is the first failure).

    NONE: a cascade or context line (a peer's failure, a timeout, teardown, a benign Xid).
    WEAK: an exit, a preemption, a terminate request: something ended the rank, not why.
    LOCAL: a failure of the rank's own: a CUDA error, an OOM, a local NCCL error, a crash
        signal, a Python exception, torchrun's root-cause record.
    HARDWARE: the machine: an Xid, an ECC error, a node failure.
    """

    NONE = 0
    WEAK = 1
    LOCAL = 2
    HARDWARE = 3
