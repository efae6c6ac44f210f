"""CLI: ``python -m traindoc.drills NAME --out DIR [--steps N] [--nproc 2] [--live
[--max-runtime S]]`` and ``python -m traindoc.drills --stop DIR``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from . import live
from .runner import DATA_ROOT, DRILLS, SPECS, DrillError, regenerate_samples, run, sample_dir

MAX_STEPS = 1_000_000  # --steps: 1 to this many training steps
MAX_NPROC = 64  # --nproc: 2 (a drill needs two ranks) to this many worker processes


def _summary(out: Path) -> str:
    rec = json.loads((out / "drill.json").read_text())
    r = rec["run"]
    return f"{rec['drill']:<21} {rec['class']:<11} rc={r['returncode']:<4} {r['duration_s']:>5.1f}s  {out}"


def main(argv: list[str] | None = None) -> int:
    """Parse arguments and run drills; returns the process exit code."""
    p = argparse.ArgumentParser(prog="python -m traindoc.drills", description=__doc__)
    p.add_argument("name", nargs="?", choices=list(DRILLS), help="drill to run")
    p.add_argument("--out", type=Path, help="bundle directory")
    p.add_argument("--steps", type=int, default=None, help="training steps (default per drill)")
    p.add_argument("--nproc", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--list", action="store_true", help="list drills and exit")
    p.add_argument(
        "--regenerate-samples",
        action="store_true",
        help=f"run every drill into {DATA_ROOT}/<class>/drill_<name>/",
    )
    live.add_arguments(p)
    args = p.parse_args(argv)
    if args.steps is not None and not 1 <= args.steps <= MAX_STEPS:
        p.error(f"--steps must be between 1 and {MAX_STEPS}, not {args.steps}")
    if not 2 <= args.nproc <= MAX_NPROC:
        p.error(f"--nproc must be between 2 and {MAX_NPROC}, not {args.nproc}")
    try:
        if args.list:
            for name, desc in DRILLS.items():
                print(f"{name:<21} {SPECS[name].cls:<11} {desc}")
            return 0
        if args.regenerate_samples:
            names = [args.name] if args.name else None
            for name in names or list(DRILLS):
                print(f"running {name} -> {sample_dir(name)}", flush=True)
                regenerate_samples(names=[name])
                print(_summary(sample_dir(name)), flush=True)
            return 0
        if args.live or args.stop is not None:
            return live.run_command(args.name, args.out, args, sys.stdout, sys.stderr)
        if not args.name or not args.out:
            p.error("give a drill NAME and --out DIR (or --list / --regenerate-samples)")
        t0 = time.monotonic()
        out = run(args.name, args.out, steps=args.steps, nproc=args.nproc)
        print(_summary(out), f"(wall {time.monotonic() - t0:.1f}s)")
        return 0
    except DrillError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"interrupted ({exc or 'SIGINT'}); drill processes cleaned up", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
