"""``traindoc``: run the runbooks from a shell.

::

    traindoc triage LOGS... [-o DIR] [--html] [--no-runbooks]
    traindoc run CLASS LOGS... [-o DIR] [-p KEY VALUE]... [--html]
    traindoc drill NAME [-o DIR] [--live [--max-runtime S]] | traindoc drill --stop DIR
    traindoc list
    traindoc collect --pid P... | --from-logs LOGS... -o OUT [--hosts HOSTLIST] [--run]
    traindoc watch LOGS... [-o OUT] [--collect] [--notify CMD] [--exit-on-alert]

Runbooks are executed headless by papermill (kernel ``python3``) with the repository root as
working directory; LOGS are made absolute first. Everything is written under ``-o DIR``: the
executed notebook, ``summary.json``, CSV tables, figures and, with ``--html``, a report without
code. No value given on the command line ever reaches a shell.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import errno
import json
import math
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import collect as collect_cmd
from .drills import live as drills_live
from .execute import (
    Execution,
    OutputDirError,
    available_runbooks,
    claimed_output_dir,
    execute_runbook,
    parameters_cell,
    say_progress,
)
from .locations import CHECKOUT, runbooks_dir
from .report import write_new
from .shellsafe import quote
from .watch import add_arguments as watch_arguments
from .watch import main as watch_main

EXIT_OK = 0  # diagnosed: the runbook ran and wrote summary.json
EXIT_NO_INPUT = 1  # nothing could be read from LOGS (the runbook raised NoInputError)
EXIT_USAGE = 2  # bad command line: unknown runbook or parameter, missing argument
EXIT_FAILED = 3  # the runbook itself failed (a bug: the executed notebook holds the traceback)
EXIT_BELOW_FLOOR = 4  # traindoc score: fewer cases right than --floor
EXIT_OUTPUT = 5  # -o DIR cannot be used or written: a file, read-only, full, in use by a run

EXIT_CODES = f"""exit codes:
  {EXIT_OK}  diagnosed: the runbook ran and wrote DIR/summary.json
  {EXIT_NO_INPUT}  input unreadable: nothing could be read from LOGS (one sentence says why)
  {EXIT_USAGE}  usage: unknown runbook, drill or parameter, a missing argument, a -p value of the
     wrong type or out of range, an empty -o, or a DIR traindoc did not make and may not clear
  {EXIT_FAILED}  a runbook failed for another reason (see the executed notebook in DIR)
  {EXIT_BELOW_FLOOR}  traindoc score: fewer cases right than --floor
  {EXIT_OUTPUT}  output: DIR cannot be written (a file, under a file, read-only, disk full) or
     another traindoc run is writing into it (one sentence says which)

reading on a Dask cluster (-p scheduler tcp://HOST:8786, or TRAINDOC_SCHEDULER): connect only
to a scheduler you control; its protocol carries pickles, which run code in this process.
"""
RESERVED = ("log_path", "output_dir")  # set by LOGS and -o, never by -p
MAX_COUNT = 1_000_000  # the most ranks, nodes or steps a -p size may name
# -p knobs with a range (inclusive), and the type of those whose default is None
RANGES: dict[str, tuple[type, float, float]] = {
    "world_size": (int, 1, MAX_COUNT), "gpus_per_node": (int, 1, 1024),
    "spare_nodes": (int, 0, MAX_COUNT), "stack_depth": (int, 0, 100_000),
    "year": (int, 1970, 2999), "save_interval": (int, 1, 10**12),
    "checkpoint_interval": (int, 1, 10**12), "window": (int, 1, MAX_COUNT),
    "patience": (int, 1, MAX_COUNT), "min_segment": (int, 1, MAX_COUNT),
    "checkpoint_save_s": (float, 0, 10**9), "iteration_s": (float, 0, 10**9),
    "mtbf_hours": (float, 1e-6, 10**9), "k": (float, 0, 10**6),
    "threshold": (float, 0, 10**6), "rel_threshold": (float, 0, 10**6),
    "min_drop_pct": (float, 0, 100), "max_file_gib": (float, 1e-6, 10**6),
    "max_total_gib": (float, 1e-6, 10**7),
}
# control sequences a terminal acts on: CSI (7- and 8-bit), OSC/DCS/SOS/PM/APC strings up to
# their terminator (BEL or ST) or the end of the line, and two-byte escapes
TERMINAL_SEQ_RE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?")
# every C0/C1 control but newline and tab, DEL, and the bidi overrides that reorder text
CONTROL_CHAR_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_text(text: object) -> str:
    """``text`` safe to print on a terminal: no control sequence, no control but \\n and \\t."""
    return CONTROL_CHAR_RE.sub("", TERMINAL_SEQ_RE.sub("", str(text)))


def _say(text: object, file: Any) -> None:
    print(terminal_text(text), file=file)


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
        sp.add_argument("--progress", action="store_true",
                        help="show bytes read and which runbook runs on stderr even when it "
                             "is not a terminal (on a terminal it is always shown)")

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
    d.add_argument("name", metavar="NAME", nargs="?", default=None,
                   help="drill name (traindoc list shows them)")
    d.add_argument("-o", "--output-dir", "--out", dest="out", default=None, metavar="DIR",
                   help="bundle directory (default: drill-NAME)")
    d.add_argument("--steps", type=int, default=None, help="training steps (default per drill)")
    d.add_argument("--nproc", type=int, default=2, help="worker processes (default 2)")
    drills_live.add_arguments(d)
    watch_arguments(sub.add_parser("watch", help="follow a running job's logs; alert on a "
                                                 "stall, error, throughput drop or loss spike"))
    collect_cmd.add_arguments(sub.add_parser(
        "collect", help="save py-spy stacks, flight-recorder dumps and GPU state of a live job",
        description="Evidence from the job's processes while they still exist (this host); "
                    "fan-out commands for many hosts."))
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
    s.add_argument("--intake", default=None, metavar="BATCH",
                   help="score only the cases of this batch (case.json \"batch\") and write "
                        "each one's intake record (commit, right, facts' hash) into its "
                        "case.json, once; run it before any code changes for the batch")
    s.add_argument("--no-triage", action="store_true",
                   help="do not also score triage on each case")
    s.add_argument("--perturb", action="append", default=None, metavar="NAME",
                   help="instead of scoring, rewrite each case's logs by this transformation "
                        "(repeatable; 'all': every one; traindoc.score_perturb) and list the "
                        "cases whose facts differ from the runbook's own on the untouched logs")
    s.add_argument("--summaries", type=Path, default=None, metavar="OUT.json",
                   help="instead of scoring, write every bundled sample's and corpus case's "
                        "summary (facts, verdict, confidence, finding titles, action commands; "
                        "its runbook's and triage's) to OUT.json: the guard of "
                        "tests/test_summaries.py")
    s.add_argument("--similar-index", type=Path, default=None, metavar="OUT.json",
                   help="instead of scoring, write the index of every corpus case's incident "
                        "signature that 'Seen before' reads (lib/traindoc/similar_index.json)")
    s.add_argument("--similar", action="store_true",
                   help="instead of scoring, measure 'Seen before' leave-one-out on the "
                        "corpus: per class, how often a case with the same root cause is "
                        "among a case's nearest others")
    return p


def _params(p: argparse.ArgumentParser, books: dict[str, Path], name: str,
            pairs: list[list[str]]) -> dict[str, Any]:
    """-p pairs as parameters, checked against the runbook's parameters cell."""
    cell = parameters_cell(books[name])
    known = set(cell)
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in RESERVED:
            p.error(f"{key} is set by {'LOGS' if key == 'log_path' else '-o DIR'}, not by -p")
        if key not in known:
            p.error(f"runbook {name} has no parameter {key!r}; it has: {', '.join(sorted(known))}")
        out[key], problem = check_value(key, value, _default(cell[key]))
        if problem:
            p.error(f"-p {key}: {problem}")
    return out


def _default(source: Any) -> Any:
    """A parameter's default from the source text papermill read in the parameters cell."""
    try:
        return ast.literal_eval(str(source))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _type_name(t: type) -> str:
    return {bool: "True or False", int: "a whole number", float: "a number",
            str: "text"}.get(t, t.__name__)


def check_value(key: str, text: str, default: Any) -> tuple[Any, str | None]:
    """A ``-p`` value parsed and checked against the parameter's default type and its range
    (``RANGES``); returns the value and what is wrong with it (None: nothing)."""
    value = parse_value(text)
    want, lo, hi = RANGES.get(key, (None, None, None))
    if default is not None:
        want = type(default)
    if want is str:  # a text knob takes the text as given, even when it looks like a number
        return (value if isinstance(value, str) else text), None
    if value is None:
        return value, None if default is None else f"takes {_type_name(want)}, not None"
    if want is None:  # no default to go by: any plain value
        ok = isinstance(value, bool | int | float | str)
        return value, None if ok else f"takes a number, text, True/False or None, not {text!r}"
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if isinstance(value, bool) != (want is bool) or not isinstance(value, want):
        return value, f"takes {_type_name(want)}, not {text!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return value, f"takes a finite number, not {text!r}"
    if lo is not None and hi is not None and not lo <= value <= hi:
        return value, f"must be between {_num(lo)} and {_num(hi)}, not {text}"
    return value, None


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


@contextlib.contextmanager
def _progress_env(on: bool) -> Any:
    """With ``--progress``, ``TRAINDOC_PROGRESS=1`` for this run: the kernels inherit it, so
    triage's says which class runbook runs."""
    old = os.environ.get("TRAINDOC_PROGRESS")
    if on:
        os.environ["TRAINDOC_PROGRESS"] = "1"
    try:
        yield
    finally:
        if on and old is None:
            os.environ.pop("TRAINDOC_PROGRESS", None)
        elif on:
            os.environ["TRAINDOC_PROGRESS"] = old or ""


def _early_answer(name: str, logs: str | list[str], params: dict[str, Any], out: Path,
                  progress: bool, stdout: Any, stderr: Any) -> int | None:
    """Print the answer (verdict, confidence, where, first action) computed in this process
    by the notebook's own library calls, before the notebook runs; an exit code when the
    logs cannot be read (as the notebook would say), else None."""
    from .answer import RUNBOOK_CALLS, answer
    from .reader import NoInputError

    if name not in RUNBOOK_CALLS:  # a runbook of the user's own: only its notebook knows
        return None
    try:
        ans = answer(name, logs, params, out, progress=True if progress else None)
    except NoInputError as e:
        _say(f"traindoc: {e}", stderr)
        return EXIT_NO_INPUT
    except Exception:  # noqa: BLE001 - the notebook runs next and reports it with its traceback
        return None
    for line in ans.lines():
        _say(line, stdout)
    if name == "triage":
        for i, c in enumerate(ans.summary["facts"].get("classes", []), 1):
            when = f", {c['first_seen']}" if c.get("first_seen") else ""
            _say(f"  {i}. {c['class']} ({c['role']}{when}): {c.get('verdict') or c['detail']}",
                 stdout)
    with contextlib.suppress(AttributeError, OSError, ValueError):
        stdout.flush()
    return None


def _finish(ex: Execution, html: bool, stdout: Any, stderr: Any, early: bool = False) -> int:
    """Say where the notebook's results are and its verdict (the class list too, for triage,
    unless the ``early`` answer showed it); or the one sentence of why it failed."""
    if ex.no_input:
        _say(f"traindoc: {ex.error}", stderr)
        return EXIT_NO_INPUT
    if ex.output_error:
        _say(f"traindoc: cannot write the results into {ex.output_dir}: {ex.error}", stderr)
        return EXIT_OUTPUT
    if ex.error:
        _say(f"traindoc: the {ex.runbook} runbook failed: {ex.error}", stderr)
        _say(f"traindoc: executed notebook (with the traceback): {ex.notebook}", stderr)
        return EXIT_FAILED
    s = ex.summary or {}
    extra = []
    if ex.runbook == "triage":
        extra = [Path(c["summary"]).with_name(f"{c['class']}.ipynb")
                 for c in s.get("facts", {}).get("classes", []) if c.get("summary")]
    reports: list[Path] = []
    if html:
        try:
            reports = _write_html(ex, extra)
        except OSError as e:
            _say(f"traindoc: cannot write the HTML report into {ex.output_dir}: "
                 f"{e.strerror or e}", stderr)
            return EXIT_OUTPUT
    _say(f"notebook: {ex.notebook}", stdout)
    _say(f"summary:  {ex.summary_path}", stdout)
    for h in reports:
        _say(f"report:   {h}", stdout)
    if ex.runbook == "triage" and not early:
        for i, c in enumerate(s.get("facts", {}).get("classes", []), 1):
            when = f", {c['first_seen']}" if c.get("first_seen") else ""
            _say(f"  {i}. {c['class']} ({c['role']}{when}): {c.get('verdict') or c['detail']}",
                 stdout)
    _say(f"verdict ({s.get('confidence')}): {s.get('verdict')}", stdout)
    return EXIT_OK


def _drill(args: argparse.Namespace, p: argparse.ArgumentParser, stdout: Any, stderr: Any) -> int:
    from . import drills

    if args.live or args.stop is not None:
        return drills_live.run_command(args.name, args.out, args, stdout, stderr)
    if args.name is None:
        p.error(f"give a drill NAME ({', '.join(drills.DRILLS)}), or --stop DIR")
    if args.name not in drills.DRILLS:
        p.error(f"no drill {args.name!r}; drills: {', '.join(drills.DRILLS)}")
    if args.out is not None and not args.out.strip():
        p.error("the bundle folder is empty (an unset variable?); give -o DIR")
    if args.steps is not None and not 1 <= args.steps <= MAX_COUNT:
        p.error(f"--steps must be between 1 and {MAX_COUNT}, not {args.steps}")
    if not 2 <= args.nproc <= 64:
        p.error(f"--nproc must be between 2 and 64, not {args.nproc}")
    out = Path(args.out or f"drill-{args.name}").resolve()
    try:  # -o onto a file, under a file, read-only: one sentence and exit 5, as for run
        out.mkdir(parents=True, exist_ok=True)
        if not os.access(out, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, "not writable", str(out))
    except OSError as e:
        _say(f"traindoc: cannot write the drill's bundle into {out}: {e.strerror or e}", stderr)
        return EXIT_OUTPUT
    try:
        bundle = drills.run(args.name, out, steps=args.steps, nproc=args.nproc)
    except drills.DrillOutputError as e:  # (as for run: a DIR traindoc may not clear)
        _say(f"traindoc: {e}", stderr)
        return EXIT_USAGE
    except OSError as e:
        if e.filename is None or not str(e.filename).startswith(str(out)):
            raise
        _say(f"traindoc: cannot write the drill's bundle into {out}: {e.strerror or e}", stderr)
        return EXIT_OUTPUT
    except drills.DrillError as e:
        _say(f"traindoc: drill {args.name} failed: {e}", stderr)
        return EXIT_FAILED
    spec = drills.SPECS[args.name]
    print(f"bundle: {bundle}  (class {spec.cls}: {spec.description})", file=stdout)
    print(f"next:   traindoc triage {quote(bundle) or 'BUNDLE'} -o "
          f"{quote(f'{bundle}-triage') or 'OUT'}", file=stdout)
    return EXIT_OK


def _similar(args: argparse.Namespace, cases: list, stdout: Any) -> int:
    """``traindoc score --similar-index OUT`` / ``--similar``."""
    from . import score, similar

    if args.similar_index:
        doc = score.similar_index(cases, workers=args.workers)
        write_new(args.similar_index, json.dumps(doc, indent=1, sort_keys=True,
                                                 ensure_ascii=False) + "\n")
        print(f"wrote {len(doc['cases'])} signatures to {args.similar_index}", file=stdout)
        return EXIT_OK
    index = similar.load_index()
    known = {e["case"] for e in index}
    missing = [c.id for c in cases if c.id not in known]
    if missing:
        print(f"the index lacks {len(missing)} cases (first: {missing[0]}); rebuild it with "
              "traindoc score --similar-index lib/traindoc/similar_index.json", file=stdout)
    rows = score.similar_table([e for e in index if e["case"] in {c.id for c in cases}], cases)
    print(f"{'class':<12}{'cause':>7}{'hit':>6}{'%':>7}{'none':>6}"
          f"{'healthy':>9}{'shown':>7}", file=stdout)
    for r in rows:
        pct = 100 * r["hit"] / r["with_cause"] if r["with_cause"] else 0.0
        print(f"{r['class']:<12}{r['with_cause']:>7}{r['hit']:>6}{pct:>7.1f}"
              f"{r['shown_none']:>6}{r['without_cause']:>9}{r['shown_anyway']:>7}", file=stdout)
    return EXIT_OK


def _score(args: argparse.Namespace, p: argparse.ArgumentParser, stdout: Any) -> int:
    from . import score
    if args.summaries:
        doc = score.summaries(CHECKOUT, workers=args.workers)
        write_new(args.summaries, json.dumps(doc, indent=1, sort_keys=True,
                                             ensure_ascii=False, default=str) + "\n")
        print(f"wrote {len(doc)} summaries to {args.summaries}", file=stdout)
        return EXIT_OK
    root = Path(args.corpus) if args.corpus else CHECKOUT / "data" / "corpus"
    if not root.is_dir():
        p.error(f"no corpus folder {root}")
    try:
        cases = score.find_cases(root)
    except ValueError as e:
        p.error(str(e))
    if not cases:
        p.error(f"no case.json under {root}")
    if args.similar_index or args.similar:
        return _similar(args, cases, stdout)
    if args.perturb:
        from . import score_perturb
        names = None if "all" in args.perturb else args.perturb
        try:
            applied, changes = score_perturb.check(cases, names, workers=args.workers)
        except ValueError as e:
            p.error(str(e))
        print(score_perturb.render(applied, changes), file=stdout)
        return EXIT_OK
    commit = ""
    if args.intake:
        cases = [c for c in cases if c.batch == args.intake]
        if not cases:
            p.error(f"no case of batch {args.intake!r} under {root}")
        commit, dirty = score.head_commit(root)
        if dirty:
            p.error("the library has uncommitted changes: an intake is scored on a commit")
    outcomes = score.score(cases, notebooks=args.notebooks, workers=args.workers,
                           with_triage=not args.no_triage)
    print(score.render(outcomes), file=stdout)
    if args.intake:
        done = score.record_intake(cases, outcomes, commit)
        kept = len(cases) - len(done)
        print(f"intake of batch {args.intake} at {commit[:12]}: recorded for {len(done)} "
              f"case(s)" + (f"; {kept} already had one and keep it" if kept else ""),
              file=stdout)
    if args.json:
        write_new(args.json, json.dumps(score.as_json(outcomes), indent=1, default=str) + "\n")
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
    if args.command == "collect":
        return collect_cmd.main(args, stdout, stderr)
    if args.command == "watch":
        return watch_main(args, stdout, stderr, terminal_text)
    if args.command not in ("triage", "run"):
        p.print_help(stderr)
        return EXIT_USAGE
    if not args.output_dir.strip():  # an unset $OUT: never the working directory
        p.error("-o DIR is empty (an unset variable?); give the folder to write into")
    name = "triage" if args.command == "triage" else args.runbook
    if name not in books:
        p.error(f"no runbook {name!r} in {runbooks_dir()}; runbooks: {', '.join(books)}")
    params = _params(p, books, name, args.parameter)
    if args.command == "triage" and args.no_runbooks:
        params["run_runbooks"] = False
    logs = _logs(args.logs)
    try:
        with claimed_output_dir(args.output_dir, [logs] if isinstance(logs, str) else logs) as out, \
                _progress_env(args.progress):
            code = _early_answer(name, logs, params, out, args.progress, stdout, stderr)
            if code is not None:
                return code
            say_progress(f"running the {name} notebook into {out}")
            ex = execute_runbook(name, logs, out, params, books)
            return _finish(ex, args.html, stdout, stderr, early=True)
    except OutputDirError as e:
        _say(f"traindoc: {e}", stderr)
        return EXIT_USAGE if e.usage else EXIT_OUTPUT


if __name__ == "__main__":
    sys.exit(main())
