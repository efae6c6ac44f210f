"""Dumps built to explode or crash (issue 19, points 5 and 8): each is skipped with a clear
warning, never an exception, a swap or a hang. Every bomb loads in a child process under an
address-space and CPU limit; the test checks it finished, within the limits, with the warning."""

from __future__ import annotations

import json
import os
import pickle
import resource
import struct
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import traindoc
from conftest import DATA

AS_LIMIT = 3_000_000_000  # the child's address space: a bomb that escaped its caps dies here
CPU_LIMIT = 120  # seconds of CPU for the child
WALL_LIMIT = 150
PEAK_LIMIT = 2 * 1024**3  # what a bomb may cost at most (resident), as issue 19 asks
ENTRY = {"collective_seq_id": 1, "profiling_name": "nccl:all_reduce", "state": "scheduled",
         "pg_id": 0, "time_created_ns": 1_720_400_000_000_000_000}
KEY = b"X\x07\x00\x00\x00entries"  # BINUNICODE 'entries'


def _dag(d: Path) -> Path:
    """438 bytes of shared references: input_sizes with 2**40 leaves once expanded."""
    a: list[Any] = [1]
    for _ in range(40):
        a = [a, a]
    path = d / "rank10.pkl"
    path.write_bytes(pickle.dumps({"entries": [{**ENTRY, "input_sizes": a}]}, protocol=2))
    return path


def _many_objects(d: Path) -> Path:
    """40 MB of one-byte EMPTY_LIST opcodes: 40 million lists, about 3 GB once built."""
    n = 40_000_000
    path = d / "rank11.pkl"
    path.write_bytes(b"\x80\x02}(" + KEY + b"](" + b"]" * n + b"eu.")
    return path


def _one_frame(d: Path) -> Path:
    """Protocol 4 with all of it in one 40 MB frame: the unpickler reads it in one go."""
    body = b"}(" + KEY + b"](" + b"]" * 40_000_000 + b"eu."
    path = d / "rank12.pkl"
    path.write_bytes(b"\x80\x04\x95" + struct.pack("<Q", len(body)) + body)
    return path


def _many_rows(d: Path) -> Path:
    """One entry referenced ten million times (BINGET, two bytes each): 20 MB of file, ten
    million rows of the table."""
    entry = pickle.dumps(ENTRY, protocol=2)[2:-1]  # the dict's opcodes, no PROTO, no STOP
    path = d / "rank13.pkl"
    path.write_bytes(b"\x80\x02}(" + KEY + b"](" + entry + b"q\x01" + b"h\x01" * 10_000_000
                     + b"eu.")
    return path


def _big_numel(d: Path) -> Path:
    """A shape of 200,000 dimensions of 2**64 - 1 each: multiplying them out takes minutes."""
    path = d / "rank14.pkl"
    path.write_bytes(pickle.dumps({"entries": [{**ENTRY, "input_sizes": [[2**64 - 1] * 200_000]}]},
                                  protocol=2))
    return path


def _memo_index(d: Path) -> Path:
    """Nine bytes: LONG_BINPUT at index 2**27 makes the unpickler write out a 2 GiB memo."""
    path = d / "rank18.pkl"
    path.write_bytes(b"\x80\x02}r" + struct.pack("<I", 2**27) + b".")
    return path


def _build(d: Path) -> Path:
    """33 bytes with a BUILD opcode on a dict."""
    path = d / "rank15.pkl"
    path.write_bytes(b"\x80\x02}q\x00(" + KEY + b"]u}(X\x01\x00\x00\x00aK\x01ub.")
    return path


def _binbytes8(d: Path) -> Path:
    """14 bytes: BINBYTES8 claiming 2**62 bytes."""
    path = d / "rank16.pkl"
    path.write_bytes(b"\x80\x04\x8e" + struct.pack("<Q", 2**62) + b"abc")
    return path


def _deep_json(d: Path) -> Path:
    """A flight-recorder JSON dump nested 200,000 deep."""
    path = d / "fr_trace_rank17.json"
    path.write_text('{"version": "2.4", "entries": ' + "[" * 200_000 + "]" * 200_000 + "}")
    return path


def _deep_pyspy(d: Path) -> Path:
    """A py-spy --json dump whose frames nest 200,000 deep."""
    path = d / "pyspy_rank0.json"
    path.write_text('[{"thread_id": 1, "thread_name": "MainThread", "owns_gil": false, '
                    '"frames": ' + "[" * 200_000 + "]" * 200_000 + "}]")
    return path


def _many_threads(d: Path) -> Path:
    """A py-spy --json dump of 100,000 threads: each one's line number was counted from the
    top of the file (quadratic)."""
    thread = ('{"thread_id": 1, "thread_name": "MainThread", "owns_gil": false, "active": true,'
              ' "frames": [{"name": "f", "filename": "x.py", "line": 1}]}')
    path = d / "pyspy_rank1.json"
    path.write_text("[" + ",\n".join([thread] * 100_000) + "]")
    return path


# name -> (builder, a phrase the warning must hold; None: it loads, with no warning)
BOMBS: dict[str, tuple[Callable[[Path], Path], str | None]] = {
    "dag_2e40_leaves": (_dag, "exceeds"),
    "40M_objects": (_many_objects, "exceeds"),
    "one_40MB_frame": (_one_frame, "frame"),
    "10M_rows": (_many_rows, "exceeds"),
    "huge_numel": (_big_numel, None),
    "pyspy_100k_threads": (_many_threads, None),
    "memo_index_2e27": (_memo_index, "exceeds"),
    "build_opcode": (_build, "corrupt"),
    "binbytes8_2e62": (_binbytes8, "corrupt"),
    "json_200k_deep": (_deep_json, "deep"),
    "pyspy_json_200k_deep": (_deep_pyspy, "deep"),
}

CHILD = textwrap.dedent("""
    import json, resource, sys, time
    import traindoc
    t = time.perf_counter()
    inc = traindoc.load(sys.argv[1], progress=False)
    print(json.dumps({"warnings": inc.account["warnings"], "seconds": time.perf_counter() - t,
                      "rows": {k: len(v) for k, v in inc.tables.items()},
                      "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
""")


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT, CPU_LIMIT))


def load_limited(path: Path) -> dict[str, Any]:
    """``traindoc.load(path)`` in a child under the limits: its warnings, seconds and peak."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True,
                          text=True, timeout=WALL_LIMIT, preexec_fn=_limits, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", sorted(BOMBS))
def test_bomb_is_skipped_within_limits(case: str, tmp_path: Path) -> None:
    build, phrase = BOMBS[case]
    path = build(tmp_path)
    got = load_limited(path)
    mine = [w for w in got["warnings"] if str(path) in w]
    if phrase is None:
        assert not mine and sum(got["rows"].values()) > 0, got
    else:
        assert len(mine) == 1 and "not loaded" in mine[0] and phrase in mine[0], got["warnings"]
        assert "Traceback" not in mine[0]
    assert got["peak"] < PEAK_LIMIT, got
    assert got["seconds"] < CPU_LIMIT, got


def test_real_dumps_load_beside_a_bomb(tmp_path: Path) -> None:
    """A bomb costs only its own file: the real dumps beside it load as they do alone."""
    good = DATA / "deadlock" / "drill_hang" / "fr"
    alone = traindoc.load(good, progress=False)
    for f in good.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    _build(tmp_path)
    _deep_json(tmp_path)
    _dag(tmp_path)
    both = traindoc.load(tmp_path, progress=False)
    assert len(both.collectives) == len(alone.collectives) > 0
    assert sum("not loaded" in w for w in both.account["warnings"]) == 3


def test_a_runbook_survives_crashing_dumps(tmp_path: Path) -> None:
    from traindoc.execute import execute_runbook

    logs = tmp_path / "logs"
    logs.mkdir()
    for build in (_build, _binbytes8, _deep_json, _dag):
        build(logs)
    (logs / "job.log").write_text(
        "[rank0]:[E1121 10:00:00.1 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n")
    ex = execute_runbook("timeout", str(logs), tmp_path / "out")
    assert ex.error is None, ex.error
    summary = json.loads(ex.summary_path.read_text())
    warnings = "\n".join(summary["inputs"]["warnings"])
    for name in ("rank15.pkl", "rank16.pkl", "fr_trace_rank17.json", "rank10.pkl"):
        assert f"{name}: flight-recorder dump not loaded" in warnings, warnings


def test_threads_take_turns_with_the_address_space_limit() -> None:
    """The limit is the process's: a second reader waits for the first, and the limit the
    process had is back once both are done (two at once could leave it lowered)."""
    import resource
    import threading

    from traindoc.parse import flight_recorder as fr

    before = resource.getrlimit(resource.RLIMIT_AS)
    entered = threading.Event()
    inside: list[str] = []

    def second() -> None:
        with fr._address_space_capped(1 << 30):
            inside.append("second")

    with fr._address_space_capped(1 << 30):
        inside.append("first")
        t = threading.Thread(target=second)
        t.start()
        entered.wait(0.3)
        assert inside == ["first"]  # the second waits
    t.join(10)
    assert inside == ["first", "second"]
    assert resource.getrlimit(resource.RLIMIT_AS) == before
