"""Flight-recorder dumps (``TORCH_NCCL_TRACE_BUFFER_SIZE`` / ``TORCH_FR_BUFFER_SIZE``).

One file per rank, pickle (``_dump_fr_trace``) or JSON (``_dump_fr_trace_json``). Pickles are
read by ``SafeUnpickler``, which builds plain containers and scalars only: any opcode that
would import or call something (GLOBAL, STACK_GLOBAL, REDUCE, …) is refused, so no code from
the file ever runs. The rank is taken from the file name (torch writes ``<prefix><rank>``).
"""

from __future__ import annotations

import io
import json
import pickle
import re
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .base import FileLoader, Row

MAX_DUMP_BYTES = 512 * 1024 * 1024
RANK_IN_NAME_RE = re.compile(r"(\d+)(?:\.\w+)?$")
PICKLE_MAGIC = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")


class RefusedPickle(pickle.UnpicklingError):
    """A dump asked to import or call something; it was not loaded."""


class SafeUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists, tuples, strings, numbers, bools and None; refuses all else."""

    def find_class(self, module: str, name: str) -> Any:  # noqa: D102
        raise RefusedPickle(f"refused to import {module}.{name}: dumps hold plain data only")

    def persistent_load(self, pid: Any) -> Any:  # noqa: D102
        raise RefusedPickle("refused a persistent id: dumps hold plain data only")


def looks_like_dump(path: Path, head: bytes) -> bool:
    """True for a file that is a flight-recorder dump by its first bytes or its name."""
    if head.startswith(PICKLE_MAGIC):
        return True
    name = path.name.lower()
    return head.lstrip()[:1] == b"{" and ("trace" in name or "fr" in name or "dump" in name) and (
        b'"entries"' in head or b'"pg_config"' in head or b'"version"' in head
    )


def read_dump(path: Path) -> dict[str, Any]:
    """Load one dump as plain data. Raises ValueError with a clear reason when it cannot."""
    size = path.stat().st_size
    if size == 0:
        raise ValueError("empty file (0 bytes): the rank was probably killed while dumping")
    if size > MAX_DUMP_BYTES:
        raise ValueError(f"{size} bytes is larger than the {MAX_DUMP_BYTES} byte cap for a dump")
    data = path.read_bytes()
    try:
        if data.startswith(PICKLE_MAGIC):
            obj = SafeUnpickler(io.BytesIO(data)).load()
        else:
            obj = json.loads(data.decode("utf-8", errors="replace"))
    except RefusedPickle as e:
        raise ValueError(str(e)) from None
    except (pickle.UnpicklingError, EOFError, ValueError, IndexError, KeyError, TypeError) as e:
        raise ValueError(f"truncated or corrupt dump ({type(e).__name__}: {e})") from None
    if not isinstance(obj, dict) or "entries" not in obj:
        raise ValueError("not a flight-recorder dump (no 'entries' key)")
    return obj


def rank_from_name(path: Path) -> int | None:
    """The rank torch appended to the dump's file name."""
    m = RANK_IN_NAME_RE.search(path.name)
    return int(m.group(1)) if m else None


def _numel(sizes: Any) -> int | None:
    if not isinstance(sizes, list | tuple):
        return None
    total = 0
    for shape in sizes:
        if not isinstance(shape, list | tuple):
            return None
        n = 1
        for d in shape:
            if not isinstance(d, int):
                return None
            n *= d
        total += n
    return total


def _pg_label(entry: dict[str, Any]) -> str | None:
    pg = entry.get("process_group")
    if isinstance(pg, list | tuple) and pg:
        name = pg[1] if len(pg) > 1 else ""
        return f"{pg[0]} ({name})" if name else str(pg[0])
    pg_id = entry.get("pg_id")
    return None if pg_id is None else str(pg_id)


def dump_rows(dump: dict[str, Any], rank: int | None, source: str) -> Iterable[Row]:
    """One ``collectives`` row per recorded entry."""
    status = dump.get("pg_status") or {}
    for i, e in enumerate(dump.get("entries") or []):
        if not isinstance(e, dict):
            continue
        st = status.get(str(e.get("pg_id"))) if isinstance(status, dict) else None
        st = st if isinstance(st, dict) else {}
        p2p = bool(e.get("is_p2p"))
        seq = e.get("p2p_seq_id") if p2p else e.get("collective_seq_id")
        op = str(e.get("profiling_name") or "")
        state = str(e.get("state") or "")
        pg = _pg_label(e)
        sizes, dtypes = e.get("input_sizes"), e.get("input_dtypes")
        frames = [
            f"{f.get('name')} ({f.get('filename')}:{f.get('line')})"
            for f in (e.get("frames") or [])
            if isinstance(f, dict)
        ]
        t = e.get("time_created_ns")
        when = datetime.fromtimestamp(t / 1e9, tz=timezone.utc).replace(tzinfo=None) if isinstance(t, int) else None
        yield {
            "rank": rank,
            "process_group": pg,
            "seq_num": seq if isinstance(seq, int) else None,
            "op_type": op or None,
            "numel_in": _numel(sizes),
            "numel_out": _numel(e.get("output_sizes")),
            "timeout_ms": e.get("timeout_ms") if isinstance(e.get("timeout_ms"), int) else None,
            "state": state or None,
            "last_enqueued": st.get("last_enqueued_collective"),
            "last_completed": st.get("last_completed_collective"),
            "sizes": json.dumps(sizes) if sizes is not None else None,
            "dtypes": json.dumps(dtypes) if dtypes is not None else None,
            "frames": frames,
            "time": when,
            "source": f"{source}#entry{i}",
            "line": f"rank {rank} pg {pg} seq {seq} {op} sizes {sizes} {dtypes} state {state}"
            + (" (p2p)" if p2p else ""),
        }


def load_rows(path: Path) -> list[tuple[str, Row]]:
    """A dump as ``collectives`` rows (ValueError when it cannot be read)."""
    dump = read_dump(path)
    return [("collectives", r) for r in dump_rows(dump, rank_from_name(path), str(path))]


LOADER = FileLoader("flight_recorder", looks_like_dump, load_rows, kind="dump")
