"""The output folder (issue 19, points 2, 3, 4, 10): each run leaves only its own files, one run
at a time, never the working directory by accident, and output problems are exit 5 in one
sentence."""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA, ROOT
from traindoc import cli
from traindoc.execute import LOCK, MARKER, OutputDirError, claimed_output_dir

# `traindoc run` in-process runs its runbook in the test process's kernel: these tests are of the
# output folder, not of starting a kernel (tests/test_cli.py starts the command's own); the runs
# in subprocesses start their own.
pytestmark = pytest.mark.usefixtures("cli_in_test_kernel")

GEMMA = DATA / "timeout" / "gemma3_seed"
XID = DATA / "gpu_crash" / "xid79_multinode"


def run_main(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def one_sentence(err: str) -> str:
    """The one ``traindoc:`` line of ``err``, which holds no traceback."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("traindoc")]
    assert len(lines) == 1, err
    return lines[0]


def names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


# -- point 2: a reused -o holds only this run's files ---------------------------------------

def test_a_rerun_leaves_only_its_own_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, _, err = run_main("run", "gpu_crash", str(XID), "-o", str(out), "--html")
    assert code == cli.EXIT_OK, err
    assert {"gpu_crash.ipynb", "gpu_crash.html", "summary.json"} <= names(out)
    code, _, err = run_main("run", "timeout", str(GEMMA), "-o", str(out))
    assert code == cli.EXIT_OK, err
    left = names(out)
    assert not [n for n in left if n.startswith("gpu_crash")], left
    assert json.loads((out / "summary.json").read_text())["runbook"] == "timeout"
    assert LOCK not in left  # the lock goes with the run
    assert set(json.loads((out / MARKER).read_text())["files"]) == left - {MARKER}


def test_a_failed_run_leaves_no_earlier_result(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_main("run", "timeout", str(GEMMA), "-o", str(out))[0] == cli.EXIT_OK
    code, _, err = run_main("run", "timeout", str(tmp_path / "no-such.log"), "-o", str(out))
    assert code == cli.EXIT_NO_INPUT, err
    assert not [n for n in names(out) if n.endswith((".csv", ".png", ".json"))], names(out)


def test_a_folder_traindoc_did_not_make_is_refused(tmp_path: Path) -> None:
    (tmp_path / "thesis.tex").write_text("mine")
    code, out, err = run_main("run", "timeout", str(GEMMA), "-o", str(tmp_path))
    assert code == cli.EXIT_USAGE, (out, err)
    assert "not made by traindoc" in one_sentence(err)
    assert names(tmp_path) == {"thesis.tex"} and (tmp_path / "thesis.tex").read_text() == "mine"


def test_files_added_to_a_traindoc_folder_are_kept(tmp_path: Path) -> None:
    (tmp_path / MARKER).write_text(json.dumps({"files": ["summary.json"]}))
    (tmp_path / "summary.json").write_text("{}")
    (tmp_path / "notes.md").write_text("mine")
    code, _, err = run_main("run", "timeout", str(GEMMA), "-o", str(tmp_path))
    assert code == cli.EXIT_USAGE
    assert "notes.md" in one_sentence(err)
    assert names(tmp_path) == {MARKER, "summary.json", "notes.md"}


@pytest.mark.parametrize("marker", ["dir", "not json", '{"files": 3}', "[]"])
def test_a_marker_traindoc_did_not_write_clears_nothing(marker: str, tmp_path: Path) -> None:
    if marker == "dir":
        (tmp_path / MARKER).mkdir()
    else:
        (tmp_path / MARKER).write_text(marker)
    (tmp_path / "thesis.tex").write_text("mine")
    code, _, err = run_main("run", "timeout", str(GEMMA), "-o", str(tmp_path))
    assert code == cli.EXIT_USAGE
    assert "not made by traindoc" in one_sentence(err)
    assert names(tmp_path) == {MARKER, "thesis.tex"}


def test_logs_inside_the_output_folder_are_refused(tmp_path: Path) -> None:
    (tmp_path / MARKER).write_text(json.dumps({"files": ["train.log"]}))
    (tmp_path / "train.log").write_text((GEMMA / "train.log").read_text())
    code, _, err = run_main("run", "timeout", str(tmp_path / "train.log"), "-o", str(tmp_path))
    assert code == cli.EXIT_USAGE
    assert "holds the logs" in one_sentence(err)
    assert (tmp_path / "train.log").exists()


# -- point 3: one run at a time ---------------------------------------------------------------

HOLD = """
import sys
sys.path.insert(0, sys.argv[2])
from traindoc.execute import claimed_output_dir
with claimed_output_dir(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_second_run_into_a_locked_folder_says_who_holds_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out), str(ROOT / "lib")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, _, err = run_main("run", "timeout", str(GEMMA), "-o", str(out))
        assert code == cli.EXIT_OUTPUT
        msg = one_sentence(err)
        assert "in use by another traindoc run" in msg and f"pid {holder.pid} on host" in msg
        assert not (out / "summary.json").exists()
    finally:
        holder.communicate("", timeout=60)
    assert holder.returncode == 0 and not (out / LOCK).exists()
    with claimed_output_dir(out) as d:  # free again
        assert (d / LOCK).exists()


def test_two_runs_started_together_never_mix(tmp_path: Path) -> None:
    """Two real processes into one DIR: one waits its turn or is refused naming the other;
    never exit 3, and DIR holds one run's files only."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    runs = {book: subprocess.Popen([sys.executable, "-m", "traindoc.cli", "run", book, str(logs),
                                    "-o", str(out)], env=env, cwd=tmp_path, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for book, logs in (("timeout", GEMMA), ("gpu_crash", XID))}
    done = {book: (p.wait(timeout=600), *p.communicate()) for book, p in runs.items()}
    codes = {book: code for book, (code, _, _) in done.items()}
    assert cli.EXIT_OK in codes.values() and set(codes.values()) <= {cli.EXIT_OK, cli.EXIT_OUTPUT}
    for code, _, err in done.values():
        if code == cli.EXIT_OUTPUT:
            assert "in use by another traindoc run (pid" in one_sentence(err)
    last = json.loads((out / "summary.json").read_text())["runbook"]
    assert codes[last] == cli.EXIT_OK
    other = ({"timeout", "gpu_crash"} - {last}).pop()
    assert not [n for n in names(out) if n.startswith(other)], names(out)
    assert done[last][1].strip().splitlines()[-1].startswith("verdict")


def test_a_lock_left_by_a_dead_run_is_taken_over(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    (tmp_path / LOCK).write_text(json.dumps({"pid": int(dead.stdout), "host": "here",
                                             "started": "earlier"}))
    with claimed_output_dir(tmp_path) as d:
        assert json.loads((d / LOCK).read_text())["pid"] == os.getpid()
    assert not (tmp_path / LOCK).exists()


# -- point 4: an empty -o (an unset $OUT) -----------------------------------------------------

@pytest.mark.parametrize("command", [["run", "timeout", str(GEMMA)], ["triage", str(GEMMA)],
                                     ["drill", "crash"]])
@pytest.mark.parametrize("empty", ["", " "])
def test_an_empty_output_dir_is_refused(command: list[str], empty: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "summary.json").write_text('{"mine": 1}')
    (tmp_path / "errors.csv").write_text("mine")
    monkeypatch.chdir(tmp_path)
    code, _, err = run_main(*command, "-o", empty)
    assert code == cli.EXIT_USAGE, err
    assert "empty" in err and "Traceback" not in err
    assert names(tmp_path) == {"summary.json", "errors.csv"}
    assert (tmp_path / "summary.json").read_text() == '{"mine": 1}'


def test_claimed_output_dir_refuses_an_empty_path(tmp_path: Path) -> None:
    with pytest.raises(OutputDirError) as e, claimed_output_dir(""):
        pass
    assert e.value.usage


# -- point 10: output problems are exit 5 in one sentence --------------------------------------

def test_output_dir_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "out"
    f.write_text("mine")
    for target in (f, f / "sub"):
        code, _, err = run_main("run", "timeout", str(GEMMA), "-o", str(target))
        assert code == cli.EXIT_OUTPUT, err
        assert "is a file" in one_sentence(err) or "under the file" in one_sentence(err)
    assert f.read_text() == "mine"


def test_read_only_output_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def read_only(path: os.PathLike[str] | str, flags: int, *a: object, **k: object) -> int:
        if str(path).startswith(str(tmp_path)) and flags & (os.O_WRONLY | os.O_RDWR):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(os, "open", read_only)
    code, _, err = run_main("run", "timeout", str(GEMMA), "-o", str(tmp_path))
    assert code == cli.EXIT_OUTPUT
    assert "Read-only file system" in one_sentence(err)


def test_disk_full_while_writing_the_notebook(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import papermill.execute

    def full(nb: object, path: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", path)

    monkeypatch.setattr(papermill.execute, "write_ipynb", full)
    code, out, err = run_main("run", "timeout", str(GEMMA), "-o", str(tmp_path / "out"))
    assert code == cli.EXIT_OUTPUT, (out, err)
    # the answer computed in-process is printed before the notebook runs; what must not be
    # printed is the claim that the results were written
    assert "No space left on device" in one_sentence(err) and "summary:" not in out


def test_disk_full_inside_the_runbook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    books = tmp_path / "runbooks"
    books.mkdir()
    nb = json.loads((ROOT / "runbooks" / "timeout.ipynb").read_text())
    nb["cells"].insert(2, {"cell_type": "code", "id": "full", "metadata": {}, "outputs": [],
                           "execution_count": None,
                           "source": "raise OSError(28, 'No space left on device', "
                                     "output_dir + '/summary.json')"})
    (books / "full.ipynb").write_text(json.dumps(nb))
    monkeypatch.setenv("TRAINDOC_RUNBOOKS", str(books))
    code, _, err = run_main("run", "full", str(GEMMA), "-o", str(tmp_path / "out"))
    assert code == cli.EXIT_OUTPUT
    assert "No space left on device" in one_sentence(err)


def test_disk_full_while_writing_the_html_report(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import traindoc.htmlreport

    def full(nb: Path, *a: object, **k: object) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device", str(nb.with_suffix(".html")))

    monkeypatch.setattr(traindoc.htmlreport, "write_html", full)
    code, out, err = run_main("run", "timeout", str(GEMMA), "-o", str(tmp_path), "--html")
    assert code == cli.EXIT_OUTPUT, (out, err)
    assert "HTML report" in one_sentence(err) and "summary:" not in out


def test_exit_5_is_documented() -> None:
    code, out, _ = run_main("--help")
    assert code == 0 and f"  {cli.EXIT_OUTPUT}  output" in out
    readme = (ROOT / "README.md").read_text()
    assert f"| {cli.EXIT_OUTPUT} | output" in readme


# -- every file traindoc writes is created without following a link (issue 31) -------------------

def test_write_new_never_follows_a_link(tmp_path: Path) -> None:
    from traindoc.report import write_new
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "out.txt").symlink_to(victim)
    with pytest.raises(FileExistsError):
        write_new(tmp_path / "out.txt", "x")
    assert victim.read_text() == "keep"
    (tmp_path / "old.txt").write_text("old")
    write_new(tmp_path / "old.txt", "new")  # our earlier regular file: replaced
    assert (tmp_path / "old.txt").read_text() == "new"


def test_a_figure_save_never_follows_a_link(tmp_path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from traindoc import plots
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "timeline.png").symlink_to(victim)
    with pytest.raises(FileExistsError):
        plots.save(Figure(), tmp_path, "timeline")
    assert victim.read_text() == "keep"


def test_summary_and_tables_replace_a_planted_link(tmp_path: Path) -> None:
    import traindoc
    from traindoc.diagnose import gpu_crash
    from traindoc.report import write_tables
    log = tmp_path / "job.log"
    log.write_text("[rank0]: RuntimeError: CUDA error: uncorrectable ECC error encountered\n")
    inc = traindoc.load(log, progress=False)
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (out / "summary.json").symlink_to(victim)
    (out / "errors.csv").symlink_to(victim)
    gpu_crash.diagnose(inc).write(out, inc)
    write_tables(inc, out)
    assert victim.read_text() == "keep"
    assert not (out / "summary.json").is_symlink() and not (out / "errors.csv").is_symlink()
