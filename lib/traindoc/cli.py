"""``traindoc``: run the runbooks from a shell.

::

    traindoc triage LOGS... [-o DIR] [--html] [--no-runbooks]
    traindoc run CLASS LOGS... [-o DIR] [-p KEY VALUE]... [--html]
    traindoc drill NAME [-o DIR]
    traindoc list

Runbooks are executed headless by papermill (kernel ``python3``) with the repository root as
working directory; LOGS are made absolute first. Everything is written under ``-o DIR``: the
executed notebook, ``summary.json``, CSV tables, figures and, with ``--html``, a report without
code. No value given on the command line ever reaches a shell.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .execute import Execution, available_runbooks, execute_runbook
from .locations import CHECKOUT, runbooks_dir

EXIT_OK = 0  # diagnosed: the runbook ran and wrote summary.json
EXIT_NO_INPUT = 1  # nothing could be read from LOGS (the runbook raised NoInputError)
EXIT_USAGE = 2  # bad command line: unknown runbook or parameter, missing argument
EXIT_FAILED = 3  # the runbook itself failed (a bug: the executed notebook holds the traceback)
EXIT_BELOW_FLOOR = 4  # traindoc score: fewer cases right than --floor

EXIT_CODES = f"""exit codes:
  {EXIT_OK}  diagnosed: the runbook ran and wrote DIR/summary.json
  {EXIT_NO_INPUT}  input unreadable: nothing could be read from LOGS (one sentence says why)
  {EXIT_USAGE}  usage: unknown runbook, drill or parameter, or a missing argument
  {EXIT_FAILED}  a runbook failed for another reason (see the executed notebook in DIR)
  {EXIT_BELOW_FLOOR}  traindoc score: fewer cases right than --floor
"""
RESERVED = ("log_path", "output_dir")  # set by LOGS and -o, never by -p
def describe(notebook: Path) -> str:
    """A runbook's one-line description: the title of its first markdown cell."""
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError):
        return "(unreadable notebook)"
    for c in cells:
        if c.get("cell_type") == "markdown":
            src = "".join(c.get("source", ""))
            for line in src.splitlines():
                line = line.strip().lstrip("#").strip()
                if line:
                    return line.removeprefix("Runbook:").strip()
    return ""


def parse_value(text: str) -> Any:
    """A ``-p`` value: a Python literal (42, 0.5, True, None, [0, 3], "x"), or the text."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


# -- the command line -------------------------------------------------------------------------

def _parser(books: dict[str, Path]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="traindoc", description="Executable incident runbooks for distributed training jobs.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("logs", nargs="+", metavar="LOGS",
                        help="log files, directories or globs of the failed job")
        sp.add_argument("-o", "--output-dir", default="traindoc-output", metavar="DIR",
                        help="where everything is written (default: traindoc-output)")
        sp.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                        metavar=("KEY", "VALUE"), help="a runbook parameter, e.g. -p world_size 8")
        sp.add_argument("--html", action="store_true",
                        help="also write DIR/<runbook>.html, a report without code")

    t = sub.add_parser("triage", help="say which failure classes a bundle shows; run their runbooks",
                       epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    common(t)
    t.add_argument("--no-runbooks", action="store_true",
                   help="only detect and order the classes; do not run their runbooks")
    r = sub.add_parser("run", help="run one runbook", epilog=EXIT_CODES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("runbook", metavar="CLASS", help="one of: " + ", ".join(books))
    common(r)
    d = sub.add_parser("drill", help="run a drill: a small real torch.distributed job with one "
                                     "injected fault (needs torch)")
    d.add_argument("name", metavar="NAME", help="drill name (traindoc list shows them)")
    d.add_argument("-o", "--output-dir", "--out", dest="out", type=Path, default=None, metavar="DIR",
                   help="bundle directory (default: drill-NAME)")
    d.add_argument("--steps", type=int, default=None, help="training steps (default per drill)")
    d.add_argument("--nproc", type=int, default=2, help="worker processes (default 2)")
    sub.add_parser("list", help="list the runbooks and drills")
    s = sub.add_parser("score", help="score the runbooks on a corpus of real incident logs",
                       description="Run every case's runbook on its logs and compare the facts "
                                   "with the case's expectations (data/corpus/README.md).")
    s.add_argument("corpus", nargs="?", default=None, metavar="DIR",
                   help="a corpus, one runbook's folder or one case (default: data/corpus)")
    s.add_argument("--json", type=Path, default=None, metavar="FILE",
                   help="also write the outcomes as JSON")
    s.add_argument("--notebooks", type=int, default=1, metavar="K",
                   help="cases of each runbook run through the notebook itself (default 1)")
    s.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes (default: one per core)")
    s.add_argument("--floor", type=float, default=None, metavar="PCT",
                   help="exit 4 when fewer than PCT %% of the cases are right")
    return p


def _params(p: argparse.ArgumentParser, books: dict[str, Path], name: str,
            pairs: list[list[str]]) -> dict[str, Any]:
    """-p pairs as parameters, checked against the runbook's parameters cell."""
    import papermill as pm

    known = set(pm.inspect_notebook(str(books[name])))
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in RESERVED:
            p.error(f"{key} is set by {'LOGS' if key == 'log_path' else '-o DIR'}, not by -p")
        if key not in known:
            p.error(f"runbook {name} has no parameter {key!r}; it has: {', '.join(sorted(known))}")
        out[key] = parse_value(value)
    return out


def _logs(raw: Sequence[str]) -> str | list[str]:
    paths = [os.path.abspath(os.path.expanduser(x)) for x in raw]
    return paths[0] if len(paths) == 1 else paths


def _write_html(ex: Execution, also: Sequence[Path] = ()) -> list[Path]:
    from .htmlreport import write_html

    out = []
    for nb in (ex.notebook, *also):
        if nb.exists():
            out.append(write_html(nb))
    return out


def _finish(ex: Execution, html: bool, stdout: Any, stderr: Any) -> int:
    if ex.no_input:
        print(f"traindoc: {ex.error}", file=stderr)
        return EXIT_NO_INPUT
    if ex.error:
        print(f"traindoc: the {ex.runbook} runbook failed: {ex.error}", file=stderr)
        print(f"traindoc: executed notebook (with the traceback): {ex.notebook}", file=stderr)
        return EXIT_FAILED
    s = ex.summary or {}
    extra = []
    if ex.runbook == "triage":
        extra = [Path(c["summary"]).with_name(f"{c['class']}.ipynb")
                 for c in s.get("facts", {}).get("classes", []) if c.get("summary")]
    print(f"notebook: {ex.notebook}", file=stdout)
    print(f"summary:  {ex.summary_path}", file=stdout)
    if html:
        for h in _write_html(ex, extra):
            print(f"report:   {h}", file=stdout)
    if ex.runbook == "triage":
        for i, c in enumerate(s.get("facts", {}).get("classes", []), 1):
            when = f", {c['first_seen']}" if c.get("first_seen") else ""
            print(f"  {i}. {c['class']} ({c['role']}{when}): {c.get('verdict') or c['detail']}",
                  file=stdout)
    print(f"verdict ({s.get('confidence')}): {s.get('verdict')}", file=stdout)
    return EXIT_OK


def _drill(args: argparse.Namespace, p: argparse.ArgumentParser, stdout: Any, stderr: Any) -> int:
    from . import drills

    if args.name not in drills.DRILLS:
        p.error(f"no drill {args.name!r}; drills: {', '.join(drills.DRILLS)}")
    out = (args.out or Path(f"drill-{args.name}")).resolve()
    try:
        bundle = drills.run(args.name, out, steps=args.steps, nproc=args.nproc)
    except drills.DrillError as e:
        print(f"traindoc: drill {args.name} failed: {e}", file=stderr)
        return EXIT_FAILED
    spec = drills.SPECS[args.name]
    print(f"bundle: {bundle}  (class {spec.cls}: {spec.description})", file=stdout)
    print(f"next:   traindoc triage {bundle} -o {bundle}-triage", file=stdout)
    return EXIT_OK


def _score(args: argparse.Namespace, p: argparse.ArgumentParser, stdout: Any) -> int:
    from . import score
    root = Path(args.corpus) if args.corpus else CHECKOUT / "data" / "corpus"
    if not root.is_dir():
        p.error(f"no corpus folder {root}")
    try:
        cases = score.find_cases(root)
    except ValueError as e:
        p.error(str(e))
    if not cases:
        p.error(f"no case.json under {root}")
    outcomes = score.score(cases, notebooks=args.notebooks, workers=args.workers)
    print(score.render(outcomes), file=stdout)
    if args.json:
        args.json.write_text(json.dumps(score.as_json(outcomes), indent=1, default=str) + "\n",
                             encoding="utf-8")
    pct = 100 * sum(o.right for o in outcomes) / len(outcomes)
    return EXIT_BELOW_FLOOR if args.floor is not None and pct < args.floor else EXIT_OK


def _list(books: dict[str, Path], stdout: Any) -> int:
    from . import drills

    print("runbooks:", file=stdout)
    for name, nb in books.items():
        print(f"  {name:<12} {describe(nb)}", file=stdout)
    print("drills (traindoc drill NAME):", file=stdout)
    for name, desc in drills.DRILLS.items():
        print(f"  {name:<15} {drills.SPECS[name].cls:<11} {desc}", file=stdout)
    return EXIT_OK


def main(argv: Sequence[str] | None = None, stdout: Any = None, stderr: Any = None) -> int:
    """Run the command line; returns the exit code (see ``EXIT_CODES``)."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    books = available_runbooks()
    p = _parser(books)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            args = p.parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return int(e.code or 0)
    try:
        with contextlib.redirect_stderr(stderr):
            return _dispatch(p, args, books, stdout, stderr)
    except SystemExit as e:  # p.error
        return int(e.code if e.code is not None else EXIT_USAGE)
    except KeyboardInterrupt:
        print("traindoc: interrupted", file=stderr)
        return 130


def _dispatch(p: argparse.ArgumentParser, args: argparse.Namespace, books: dict[str, Path],
              stdout: Any, stderr: Any) -> int:
    """Run one parsed command; usage errors raise SystemExit(2) through ``p.error``."""
    if args.command == "list":
        return _list(books, stdout)
    if args.command == "drill":
        return _drill(args, p, stdout, stderr)
    if args.command == "score":
        return _score(args, p, stdout)
    if args.command not in ("triage", "run"):
        p.print_help(stderr)
        return EXIT_USAGE
    name = "triage" if args.command == "triage" else args.runbook
    if name not in books:
        p.error(f"no runbook {name!r} in {runbooks_dir()}; runbooks: {', '.join(books)}")
    params = _params(p, books, name, args.parameter)
    if args.command == "triage" and args.no_runbooks:
        params["run_runbooks"] = False
    ex = execute_runbook(name, _logs(args.logs), args.output_dir, params, books)
    return _finish(ex, args.html, stdout, stderr)


if __name__ == "__main__":
    sys.exit(main())
