"""Which engine could parse hot lines in bulk: ``python benchmarks/bulk.py [--mib N]``.

Issue 17 asks for iteration lines at 1 M lines/s per core, parsed "in bulk (one compiled
pattern per format run over the whole block, or Arrow/Polars regex extraction over the
block's lines)", the library chosen by measurement. This measures, on the Megatron iteration
lines of the hot mix (``generate.hot_mix_log``, one thread, the same lines for each), what each
candidate costs to turn the lines into numeric columns (iteration, total, consumed samples,
elapsed ms, lr, batch size, loss, loss scale, grad norm, skipped, nan):

- ``parse_megatron`` per line (today's parser, row dicts): the reference;
- Python ``re``: one pattern over the block's lines joined (``finditer``), columns of floats;
- the reader's bulk lane (``reader.bulk``, issue 29): a shape's pattern per line (what the
  engine runs on each line the scan found), the table's columns made by ``Batch.frame``;
- pyarrow (RE2): ``extract_regex`` over an array of the lines, then casts;
- polars (Rust regex): ``str.extract_groups`` over a Series of the lines, then casts;
- the same two picking the lines out of the raw chunk themselves (split on line breaks,
  keep those holding "iteration"): what a bulk lane would run per 4 MiB chunk.

pyarrow and polars are not dependencies of traindoc; the rows for an engine not installed say
so. Every engine's columns are checked equal to ``parse_megatron``'s before it is timed.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lib"))
sys.path.insert(0, str(HERE))

import generate  # noqa: E402

from traindoc.parse.iterations import parse_megatron  # noqa: E402
from traindoc.parse.prefixes import demux  # noqa: E402

# The canonical Megatron-LM iteration line (the hot mix's): one group per field.
FIELDS = ("iteration", "total_iterations", "consumed_samples", "elapsed_ms", "lr",
          "global_batch_size", "loss", "loss_scale", "grad_norm", "skipped", "nan")
INTS = {"iteration", "total_iterations", "consumed_samples", "global_batch_size", "skipped",
        "nan"}
NUM = r"([-+0-9.eE]+)"
PATTERN = (r"iteration +(\d+)/ *(\d+) \| consumed samples: +(\d+) \| elapsed time per "
           r"iteration \(ms\): " + NUM + r" \| learning rate: " + NUM + r" \| global batch "
           r"size: +(\d+) \| lm loss: " + NUM + r" \| loss scale: " + NUM + r" \| grad norm: "
           + NUM + r" \| number of skipped iterations: +(\d+) \| number of nan iterations: +"
           r"(\d+) \|")
ROW_KEYS = {"elapsed_ms": "elapsed_s"}  # parse_megatron's column for the field (in seconds)


def hot_lines(mib: int) -> tuple[bytes, list[str]]:
    """The hot mix's first ``mib`` MiB, and the bodies (prefix removed) of its Megatron lines."""
    path = generate.hot_mix_log(HERE / ".cache" / f"hot_{mib}MiB.log", mib << 20)
    raw = path.read_bytes()
    bodies = []
    for line in raw.decode("utf-8").split("\n"):
        if "iteration" in line and "consumed samples" in line:
            bodies.append(demux(line)[0])
    return raw, bodies


def reference(bodies: list[str]) -> dict[str, list[Any]]:
    rows = [parse_megatron(b) for b in bodies]
    out: dict[str, list[Any]] = {}
    for f in FIELDS:
        key = ROW_KEYS.get(f, f)
        out[f] = [r.get(key) for r in rows]  # type: ignore[union-attr]
    return out


def with_re(bodies: list[str]) -> dict[str, list[Any]]:
    rx = re.compile(PATTERN)
    cols: list[list[str]] = [[] for _ in FIELDS]
    for m in rx.finditer("\n".join(bodies)):
        for c, v in zip(cols, m.groups(), strict=True):
            c.append(v)
    return {f: list(map(int if f in INTS else float, c)) for f, c in zip(FIELDS, cols,
                                                                         strict=True)}


def with_lane(raw: list[bytes]) -> dict[str, Any]:
    """The reader's bulk lane (``reader.bulk``): each line matched by its shape's pattern, the
    values kept as strings, the columns made by ``Batch.frame`` (the iterations table)."""
    from traindoc.reader.bulk import Batch, learn

    batch = Batch()
    shape = learn(raw[0])
    assert shape is not None
    batch.shapes.append(shape)
    rx = shape.rx.fullmatch
    for i, b in enumerate(raw):
        m = rx(b)
        batch.add(0, m.groups(), b, "hot.log", i, 0, None)  # type: ignore[union-attr]
    df = batch.frame()
    out = {f: df[ROW_KEYS.get(f, f)] for f in FIELDS}
    out["elapsed_ms"] = df["elapsed_s"] * 1000
    return out


def with_arrow(bodies: list[str]) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.compute as pc

    named = _named(PATTERN)
    got = pc.extract_regex(pa.array(bodies), named)
    return {f: pc.cast(got.field(f), pa.int64() if f in INTS else pa.float64())
            for f in FIELDS}


def with_arrow_split(bodies: list[str]) -> dict[str, Any]:
    """awk's way: split each line on "|", each field's value after its last ":"."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = pc.split_pattern(pa.array(bodies), "|")
    it = pc.split_pattern(pc.replace_substring_regex(pc.list_element(parts, 0),
                                                     r"^.*iteration +", ""), "/")
    out = {"iteration": pc.cast(pc.list_element(it, 0), pa.int64()),
           "total_iterations": pc.cast(pc.utf8_trim_whitespace(pc.list_element(it, 1)),
                                       pa.int64())}
    for k, f in enumerate(FIELDS[2:], start=1):
        v = pc.utf8_trim_whitespace(pc.replace_substring_regex(pc.list_element(parts, k),
                                                               r"^.*:", ""))
        out[f] = pc.cast(v, pa.int64() if f in INTS else pa.float64())
    return out


def with_polars(bodies: list[str]) -> dict[str, Any]:
    import polars as pl

    s = pl.Series(bodies).str.extract_groups(_named(PATTERN))
    df = s.struct.unnest()
    return {f: df[f].cast(pl.Int64 if f in INTS else pl.Float64) for f in FIELDS}


def arrow_chunk(raw: bytes) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.compute as pc

    lines = pc.split_pattern(pa.array([raw], pa.large_binary()), b"\n").flatten()
    lines = lines.filter(pc.match_substring(lines, b"iteration"))
    got = pc.extract_regex(lines.cast(pa.large_string()), _named(PATTERN))
    got = got.filter(got.is_valid())  # (lines holding "iteration" of another shape)
    return {f: pc.cast(got.field(f), pa.int64() if f in INTS else pa.float64())
            for f in FIELDS}


def polars_chunk(raw: bytes) -> dict[str, Any]:
    import polars as pl

    s = pl.Series([raw.decode("utf-8")]).str.split("\n").explode()
    s = s.filter(s.str.contains("iteration", literal=True))
    df = s.str.extract_groups(_named(PATTERN)).struct.unnest().drop_nulls()
    return {f: df[f].cast(pl.Int64 if f in INTS else pl.Float64) for f in FIELDS}


def _awk(raw: bytes) -> float | None:
    """CPU seconds awk takes over the iteration lines grep picked (run.py's fields), or None."""
    import resource
    import shutil
    import subprocess
    import tempfile

    from run import AWK, GREP

    if not (shutil.which("grep") and shutil.which("awk")):
        return None
    picked = subprocess.run(["grep", "-E", GREP], input=raw, capture_output=True).stdout
    with tempfile.NamedTemporaryFile(suffix=".log") as fh:
        fh.write(picked)
        fh.flush()
        best = float("inf")
        for _ in range(3):
            t = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(["awk", "-F|", AWK, fh.name], check=True, stdout=subprocess.DEVNULL)
            u = resource.getrusage(resource.RUSAGE_CHILDREN)
            best = min(best, u.ru_utime + u.ru_stime - t.ru_utime - t.ru_stime)
        return best


def _named(pattern: str) -> str:
    it = iter(FIELDS)
    return re.sub(r"(?<!\\)\((?!\?)", lambda _: f"(?P<{next(it)}>", pattern)


def _same(got: dict[str, Any], ref: dict[str, list[Any]]) -> bool:
    for f in FIELDS:
        col = got[f]
        vals = list(col.to_pylist() if hasattr(col, "to_pylist") else  # (pyarrow)
                    col.to_list() if hasattr(col, "to_list") else col)
        want = ref[f]
        if f == "elapsed_ms":
            want = [None if v is None else round(v * 1000, 6) for v in want]
            vals = [round(v, 6) for v in vals]
        if [x for x in vals if x is not None] != [x for x in want if x is not None]:
            return False
    return True


def _best(fn: Callable[[], Any], repeat: int = 3) -> float:
    """The least CPU seconds of ``repeat`` runs (this process's: the machine may be shared)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=64, help="size of the hot-mix slice (MiB)")
    args = ap.parse_args(argv)
    raw, bodies = hot_lines(args.mib)
    n = len(bodies)
    ref = reference(bodies)
    raw_bodies = [b.encode("ascii") for b in bodies]
    print(f"{n} Megatron iteration lines from {args.mib} MiB of the hot mix; one thread; "
          "CPU seconds\n")
    print("| engine | lines/s | vs parse_megatron |\n| --- | ---: | ---: |")
    base = _best(lambda: reference(bodies))
    print(f"| parse_megatron per line (row dicts) | {n / base:,.0f} | 1.0× |")
    awk = _awk(raw)
    if awk:
        print(f"| grep \\| awk (5 fields, two processes; awk's lines/s) | {n / awk:,.0f} | "
              f"{base / awk:.1f}× |")
    cases: list[tuple[str, Callable[[], Any], bool]] = [
        ("Python re, one pattern over the joined lines", lambda: with_re(bodies), True),
        ("the reader's bulk lane: a shape's pattern per line, Batch.frame",
         lambda: with_lane(raw_bodies), True),
        ("pyarrow extract_regex (RE2) over the lines", lambda: with_arrow(bodies), True),
        ("pyarrow: split on \"|\", the value after \":\" (awk's way)",
         lambda: with_arrow_split(bodies), True),
        ("polars extract_groups over the lines", lambda: with_polars(bodies), True),
        ("pyarrow: split the chunk, pick, extract", lambda: arrow_chunk(raw), False),
        ("polars: split the chunk, pick, extract", lambda: polars_chunk(raw), False),
    ]
    for name, fn, check in cases:
        try:
            got = fn()
        except ImportError as e:
            print(f"| {name} | not installed ({e.name}) | |")
            continue
        if check and not _same(got, ref):
            print(f"| {name} | columns differ from parse_megatron's | |")
            continue
        t = _best(fn)
        print(f"| {name} | {n / t:,.0f} | {base / t:.1f}× |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
