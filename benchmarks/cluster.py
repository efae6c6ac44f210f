"""Scaling on a Dask cluster: ``python benchmarks/cluster.py [--quick] [--workers 1 2]``.

Generates per-rank logs once into ``benchmarks/.cache/cluster/`` (``generate.per_rank_files``:
512 files of about 1 MiB; ``--quick``: 128 of 256 KiB), then reads them with
``traindoc.load(folder, executor=client.get_executor())`` on a ``distributed.LocalCluster`` of
1, 2, … worker processes (one thread each), and, for comparison in the same run, on this
machine's own pool (``workers=N``). Prints files/s and MiB/s, best of ``--repeat`` loads after
a warm-up load of a few files (workers import traindoc and compile their patterns once), and
the speed-up over one worker. Needs ``pip install 'traindoc[cluster]'``. Ratios, not absolute
targets: the figures depend on the machine's cores (the README says which were measured).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / ".cache" / "cluster"
MiB = 1 << 20


def best(repeat: int, load: Any, files: list[Path]) -> tuple[float, Any]:
    """The shortest of ``repeat`` timed ``load(files)``, after an untimed warm-up load of a
    few of them (workers import traindoc and compile the patterns once)."""
    load(files[:8])
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        inc = load(files)
        times.append(time.perf_counter() - t0)
    return min(times), inc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="128 files of 256 KiB")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2],
                    help="cluster sizes to measure (default: 1 2)")
    ap.add_argument("--repeat", type=int, default=2, help="timed loads per row (best is kept)")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args(argv)

    sys.path.insert(0, str(ROOT / "lib"))
    sys.path.insert(0, str(HERE))
    import generate
    import pandas as pd

    import traindoc

    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("needs Dask's distributed: pip install 'traindoc[cluster]'", file=sys.stderr)
        return 2

    n, size = (128, 256 << 10) if args.quick else (512, 1 << 20)
    folder = generate.per_rank_files(CACHE / f"{n}x{size >> 10}k", n=n, size_bytes=size)
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    total = sum(p.stat().st_size for p in files)
    print(f"{len(files)} files, {total / MiB:.0f} MiB, on {os.cpu_count()} CPUs",
          flush=True)

    rows: list[dict[str, Any]] = []
    reference = None

    def record(where: str, workers: int, seconds: float, inc: Any) -> None:
        nonlocal reference
        if reference is None:
            reference = inc
        else:  # every way of reading gives the same tables
            for t in reference.tables:
                pd.testing.assert_frame_equal(reference.tables[t], inc.tables[t], obj=t)
        rows.append({"where": where, "workers": workers, "seconds": round(seconds, 3),
                     "files_per_s": round(len(files) / seconds, 1),
                     "mib_per_s": round(total / MiB / seconds, 1)})
        print(f"  {where:<22} {workers:>2} worker(s): {seconds:7.2f} s  "
              f"{len(files) / seconds:8.1f} files/s  {total / MiB / seconds:7.1f} MiB/s",
              flush=True)

    for w in args.workers:
        secs, inc = best(args.repeat, lambda f, w=w: traindoc.load(f, workers=w,
                                                                   progress=False), files)
        record("this machine's pool", w, secs, inc)
    for w in args.workers:
        with LocalCluster(n_workers=w, processes=True, threads_per_worker=1,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            ex = client.get_executor()
            secs, inc = best(args.repeat, lambda f, ex=ex: traindoc.load(f, executor=ex,
                                                                         progress=False), files)
            record("dask LocalCluster", w, secs, inc)

    by = {(r["where"], r["workers"]): r for r in rows}
    for where in ("this machine's pool", "dask LocalCluster"):
        one = by.get((where, min(args.workers)))
        for w in args.workers:
            r = by.get((where, w))
            if one and r and w != min(args.workers):
                print(f"{where}: {w} workers read {r['files_per_s'] / one['files_per_s']:.2f}x "
                      f"the files/s of {min(args.workers)}")
    if args.json:
        args.json.write_text(json.dumps({"files": len(files), "bytes": total,
                                         "cpus": os.cpu_count(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
