"""Headless runbook execution: papermill runs a runbook notebook into an output directory.

``execute_runbook`` never raises for a failing runbook (the ``Execution`` says what went wrong);
the CLI, triage and the corpus scorer all run notebooks through it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .locations import runbooks_dir
from .report import write_new

KERNEL = "python3"
# ipykernel warns on stderr that its local TCP sockets are unencrypted, and logs "KeyboardInterrupt
# caught in kernel" when jupyter_client interrupts it on shut-down; its stderr is the terminal's
# (or, nested, the notebook's), so it logs only what stops it.
KERNEL_ARGS = ["--IPKernelApp.log_level=CRITICAL"]
KERNEL_START_S = 60  # the longest a kernel may take to start on a loaded machine

MARKER = ".traindoc"  # in a folder traindoc made: what its last run wrote there
LOCK = ".traindoc.lock"  # held (flock) while a run writes into the folder: pid, host, start
# errors that say the output cannot be written, wherever it is (full disk, quota, read-only)
OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})
OS_ERROR_NAMES = frozenset({"OSError", "IOError", "PermissionError", "FileNotFoundError",
                            "FileExistsError", "IsADirectoryError", "NotADirectoryError"})
ERRNO_RE = re.compile(r"\[Errno (\d+)\]")


def parameters_cell(notebook: Path) -> dict[str, str]:
    """A notebook's parameters (the cell tagged ``parameters``): name -> its default's source
    text, read without papermill (whose import costs a second)."""
    import ast

    cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    for c in cells:
        if c.get("cell_type") == "code" and "parameters" in c.get("metadata", {}).get("tags", []):
            src = "".join(c.get("source", ""))
            return {n.targets[0].id: ast.get_source_segment(src, n.value) or ""
                    for n in ast.parse(src).body
                    if isinstance(n, ast.Assign) and len(n.targets) == 1
                    and isinstance(n.targets[0], ast.Name)}
    return {}


def available_runbooks(directory: Path | None = None) -> dict[str, Path]:
    """Runbook name -> notebook, for every ``*.ipynb`` in the runbooks directory."""
    d = directory or runbooks_dir()
    return {p.stem: p for p in sorted(d.glob("*.ipynb"))} if d.is_dir() else {}


@dataclass
class Execution:
    """One headless runbook execution."""

    runbook: str
    notebook: Path  # the executed notebook
    output_dir: Path
    summary: dict[str, Any] | None = None
    error: str | None = None
    no_input: bool = False
    output_error: bool = False  # the error is about writing the output, not the runbook

    @property
    def summary_path(self) -> Path:
        return self.output_dir / "summary.json"


def execute_runbook(name: str, log_path: str | list[str], output_dir: str | os.PathLike[str],
                    parameters: dict[str, Any] | None = None,
                    runbooks: dict[str, Path] | None = None, km: Any = None) -> Execution:
    """Execute runbook ``name`` with papermill into ``output_dir`` (the executed notebook is
    ``output_dir/<name>.ipynb``), in a kernel of its own or in the running kernel of ``km``
    (``shared_kernel``). Never raises for a failing runbook: see ``error``."""
    import papermill as pm

    books = runbooks if runbooks is not None else available_runbooks()
    out = Path(output_dir).resolve()
    ex = Execution(name, out / f"{name}.ipynb", out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        ex.error, ex.output_error = f"cannot create {out}: {e.strerror or e}", True
        return ex
    if name not in books:
        ex.error = f"no runbook {name}.ipynb in {runbooks_dir()}"
        return ex
    ex.summary_path.unlink(missing_ok=True)  # never report a previous run's summary
    params = {**(parameters or {}), "log_path": log_path, "output_dir": str(out)}
    try:
        pm.execute_notebook(str(books[name]), str(ex.notebook), parameters=params,
                            kernel_name=KERNEL, cwd=os.getcwd(), progress_bar=False,
                            log_output=False, extra_arguments=KERNEL_ARGS,
                            **({"km": km} if km is not None else {}))
    except pm.PapermillExecutionError as e:
        ex.no_input = e.ename == "NoInputError"
        ex.error = e.evalue if ex.no_input else f"{e.ename}: {e.evalue}"
        ex.output_error = not ex.no_input and _about_output(e.ename, e.evalue, out)
    except Exception as e:  # a kernel that died, a notebook that cannot be read
        ex.error = f"{type(e).__name__}: {e}"
        ex.output_error = isinstance(e, OSError) and _about_output(type(e).__name__, str(e), out)
    if ex.error is None and ex.summary_path.exists():
        try:
            ex.summary = json.loads(ex.summary_path.read_text(encoding="utf-8"))
        except ValueError as e:
            ex.error = f"{ex.summary_path} is not valid JSON: {e}"
    elif ex.error is None:
        ex.error = f"the runbook wrote no {ex.summary_path}"
    return ex


def _about_output(ename: str, evalue: str, out: Path) -> bool:
    """Whether an error raised while running into ``out`` is a failure to write there."""
    if ename not in OS_ERROR_NAMES:
        return False
    m = ERRNO_RE.search(evalue)
    return (m is not None and int(m.group(1)) in OUTPUT_ERRNOS) or str(out) in evalue


class OutputDirError(Exception):
    """An output folder that cannot be used. ``usage``: the command line must name another
    (exit 2); else the folder or its disk is at fault (exit 5)."""

    def __init__(self, message: str, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


def _holder(lock: Path) -> str:
    """Who holds ``lock``, in words, from what its holder wrote there."""
    try:
        h = json.loads(lock.read_text(encoding="utf-8"))
        return f"pid {h['pid']} on host {h['host']}, started {h['started']}"
    except (OSError, ValueError, TypeError, KeyError):
        return "a process that has not yet said who it is"


def _lock(out: Path) -> int:
    """Take ``out``'s lock (an flock on ``out/.traindoc.lock``; a holder that died released it);
    returns its descriptor. Raises ``OutputDirError`` naming the holder."""
    lock = out / LOCK
    for _ in range(20):
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise OutputDirError(f"cannot write in {out}: {e.strerror or e}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise OutputDirError(
                f"{out} is in use by another traindoc run ({_holder(lock)}); wait for it to "
                "finish or choose another -o DIR") from None
        try:  # the file we locked may have been removed by a holder that just finished
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            continue
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        try:
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps(info).encode())
        except OSError as e:
            _unlock(out, fd)
            raise OutputDirError(f"cannot write in {out}: {e.strerror or e}") from None
        return fd
    raise OutputDirError(f"could not lock {out}: other runs keep taking it")


def _unlock(out: Path, fd: int) -> None:
    with contextlib.suppress(OSError):
        (out / LOCK).unlink()
    os.close(fd)


def _clear(out: Path) -> None:
    """Remove what an earlier traindoc run left in ``out``; refuse a folder holding other files."""
    entries = {e.name: e for e in out.iterdir() if e.name != LOCK}
    if not entries:
        return
    not_ours = OutputDirError(
        f"{out} is not empty and was not made by traindoc; choose a new or empty folder for -o "
        "(traindoc replaces only its own earlier results)", usage=True)
    try:
        ours = json.loads((out / MARKER).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, TypeError, KeyError):
        raise not_ours from None
    if ours is None:  # a run that died before saying what it wrote: everything here is its
        listed = set(entries)
    elif isinstance(ours, list):
        listed = {x for x in ours if isinstance(x, str)}
    else:
        raise not_ours
    foreign = sorted(set(entries) - {MARKER} - listed)
    if foreign:
        raise OutputDirError(
            f"{out} holds files an earlier traindoc run did not write ({', '.join(foreign[:3])}"
            f"{', ...' if len(foreign) > 3 else ''}); move them or choose another -o DIR",
            usage=True)
    for e in entries.values():
        try:
            if e.is_dir() and not e.is_symlink():
                shutil.rmtree(e)
            else:
                e.unlink()
        except OSError as err:
            raise OutputDirError(f"cannot remove the earlier result {e}: "
                                 f"{err.strerror or err}") from None


def _mark(out: Path, files: list[str] | None) -> None:
    """Record in ``out`` that traindoc made it and what it wrote (None: a run in progress)."""
    write_new(out / MARKER, json.dumps({"files": files}) + "\n")


def _inside(path: str, folder: Path) -> bool:
    p = Path(path)
    return p == folder or folder in p.parents


@contextlib.contextmanager
def claimed_output_dir(output_dir: str | os.PathLike[str],
                       logs: Sequence[str] = ()) -> Iterator[Path]:
    """``output_dir`` (made absolute) locked for this run and holding nothing from an earlier
    one. A folder traindoc did not make must be new or empty; ``logs`` must lie outside it.
    Raises ``OutputDirError`` before writing anything it must not."""
    text = os.fspath(output_dir)
    if not text.strip():
        raise OutputDirError("the output folder is empty (an unset variable?); give -o DIR",
                             usage=True)
    out = Path(text).expanduser().resolve()
    for p in (out, *out.parents):
        if p.exists() and not p.is_dir():
            where = "is a file" if p == out else f"is under the file {p}"
            raise OutputDirError(f"the output folder {out} {where}, not a folder")
    inside = [x for x in logs if _inside(os.path.abspath(x), out)]
    if inside:
        raise OutputDirError(f"the output folder {out} holds the logs ({inside[0]}); choose "
                             "another -o DIR", usage=True)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputDirError(f"cannot create the output folder {out}: {e.strerror or e}") from None
    fd = _lock(out)
    try:
        _clear(out)
        try:
            _mark(out, None)
        except OSError as e:
            raise OutputDirError(f"cannot write in {out}: {e.strerror or e}") from None
        try:
            yield out
        finally:
            with contextlib.suppress(OSError):
                _mark(out, sorted(e.name for e in out.iterdir() if e.name not in (LOCK, MARKER)))
    finally:
        _unlock(out, fd)


@contextlib.contextmanager
def shared_kernel() -> Iterator[Any]:
    """One kernel (its ``KernelManager``) for several runbooks run one after the other:
    each starts from an empty namespace; the kernel is shut down on leaving."""
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name=KERNEL)
    km.start_kernel(extra_arguments=KERNEL_ARGS, cwd=os.getcwd())
    try:
        yield km
    finally:
        km.shutdown_kernel(now=True)


def reset_kernel(km: Any) -> None:
    """Empty the namespace of ``km``'s kernel (the next runbook sees none of the last one's)."""
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=KERNEL_START_S)
        kc.execute_interactive("get_ipython().run_line_magic('reset', '-f')",
                               timeout=KERNEL_START_S, output_hook=lambda msg: None)
    finally:
        kc.stop_channels()


def say_progress(text: str) -> None:
    """``text`` on the terminal's stderr while a long run works: only when stderr is a
    terminal, or ``TRAINDOC_PROGRESS=1`` (``traindoc … --progress``)."""
    if os.environ.get("TRAINDOC_PROGRESS") == "1" or os.isatty(2):
        with contextlib.suppress(OSError):
            os.write(2, f"traindoc: {text}\n".encode(errors="replace"))


class RunbookRunner:
    """For ``triage.with_runbooks``: runs class ``cls``'s runbook into ``output_dir/cls/`` with
    ``parameters`` (the reading limits triage ran with, say). Used as a context manager, every
    runbook runs in one kernel, started once."""

    def __init__(self, log_path: str | list[str], output_dir: str | os.PathLike[str],
                 parameters: dict[str, Any] | None = None) -> None:
        if isinstance(log_path, str | os.PathLike):
            self.logs: str | list[str] = os.path.abspath(log_path)
        else:
            self.logs = [os.path.abspath(p) for p in log_path]
        self.base = Path(output_dir).resolve()
        self.parameters = parameters
        self._stack: contextlib.ExitStack | None = None
        self._km: Any = None

    def __enter__(self) -> RunbookRunner:
        self._stack = contextlib.ExitStack()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stack is not None:
            self._stack.close()
        self._stack, self._km = None, None

    def _kernel(self) -> Any:
        if self._stack is None:
            return None
        if self._km is None:
            self._km = self._stack.enter_context(shared_kernel())
        else:
            reset_kernel(self._km)
        return self._km

    def __call__(self, cls: str) -> dict[str, Any]:
        say_progress(f"running the {cls} runbook into {self.base / cls}")
        ex = execute_runbook(cls, self.logs, self.base / cls, self.parameters,
                             km=self._kernel() if cls in available_runbooks() else None)
        s = ex.summary or {}
        return {"summary": str(ex.summary_path) if ex.summary else None,
                "verdict": s.get("verdict"), "confidence": s.get("confidence"),
                "actions": s.get("actions", []), "error": ex.error}


def runbook_runner(log_path: str | list[str], output_dir: str | os.PathLike[str],
                   parameters: dict[str, Any] | None = None) -> RunbookRunner:
    """A ``RunbookRunner`` (``with runbook_runner(...) as run:`` runs them in one kernel)."""
    return RunbookRunner(log_path, output_dir, parameters)


__all__ = ["KERNEL", "KERNEL_ARGS", "LOCK", "MARKER", "Execution", "OutputDirError",
           "RunbookRunner", "available_runbooks", "claimed_output_dir", "execute_runbook",
           "parameters_cell", "reset_kernel", "runbook_runner", "say_progress",
           "shared_kernel"]
