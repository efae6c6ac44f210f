"""The ``traindoc`` command line: commands, exit codes, where outputs go, no shell."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import DATA, ROOT
from traindoc import cli

MIXED = DATA / "triage" / "crash_then_timeouts"
GEMMA = DATA / "timeout" / "gemma3_seed"


def traindoc(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``traindoc ARGS`` as a user runs it (a fresh process, real stdout/stderr)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "lib")}
    return subprocess.run([sys.executable, "-m", "traindoc.cli", *args], cwd=cwd or ROOT,
                          env=env, capture_output=True, text=True, timeout=600)


def run_main(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(list(args), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_console_script_is_registered() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["traindoc"] == "traindoc.cli:main"


@pytest.mark.parametrize(("text", "value"), [
    ("8", 8), ("0.5", 0.5), ("True", True), ("false", False), ("None", None), ("null", None),
    ("[0, 3]", [0, 3]), ("'x'", "x"), ("node-7", "node-7"), ("$(rm -rf ~)", "$(rm -rf ~)"),
    ("__import__('os')", "__import__('os')"),
])
def test_parse_value(text: str, value: object) -> None:
    assert cli.parse_value(text) == value


def test_help_documents_the_exit_codes() -> None:
    code, out, _ = run_main("--help")
    assert code == 0
    for n in (cli.EXIT_OK, cli.EXIT_NO_INPUT, cli.EXIT_USAGE, cli.EXIT_FAILED):
        assert f"  {n}  " in out
    assert "input unreadable" in out and "triage" in out and "drill" in out


def test_list_shows_runbooks_and_drills() -> None:
    code, out, _ = run_main("list")
    assert code == 0
    books = sorted(p.stem for p in (ROOT / "runbooks").glob("*.ipynb"))
    for b in books:
        assert f"  {b} " in out
    assert "triage — which failure is this?" in out
    assert "collective timeout" in out
    assert "crash" in out.split("drills", 1)[1]


@pytest.mark.parametrize("args", [
    [],
    ["run", "no_such_runbook", str(GEMMA)],
    ["run", "timeout", str(GEMMA), "-p", "log_path", "/etc"],
    ["run", "timeout", str(GEMMA), "-p", "output_dir", "/tmp/elsewhere"],
    ["run", "timeout", str(GEMMA), "-p", "no_such_knob", "1"],
    ["triage"],
    ["drill", "no_such_drill"],
    ["frobnicate"],
    # -p values checked against the parameters cell: type of the default, sane ranges (19.12)
    ["run", "timeout", str(GEMMA), "-p", "world_size", "100000000"],
    ["run", "timeout", str(GEMMA), "-p", "world_size", "0"],
    ["run", "timeout", str(GEMMA), "-p", "world_size", "-8"],
    ["run", "timeout", str(GEMMA), "-p", "world_size", "8.5"],
    ["run", "timeout", str(GEMMA), "-p", "world_size", "eight"],
    ["run", "timeout", str(GEMMA), "-p", "world_size", "[8]"],
    ["run", "timeout", str(GEMMA), "-p", "year", "99999"],
    ["run", "timeout", str(GEMMA), "-p", "interactive", "1"],
    ["run", "gpu_crash", str(GEMMA), "-p", "gpus_per_node", "None"],
    ["run", "gpu_crash", str(GEMMA), "-p", "mtbf_hours", "nan"],
    ["run", "gpu_crash", str(GEMMA), "-p", "mtbf_hours", "float('inf')"],
    ["run", "loss_spike", str(GEMMA), "-p", "window", "'50'"],
    ["run", "throughput", str(GEMMA), "-p", "min_drop_pct", "1000"],
    # drill sizes are checked before anything is launched (19.14)
    ["drill", "crash", "--steps", "-5"],
    ["drill", "crash", "--steps", "0"],
    ["drill", "crash", "--nproc", "0"],
    ["drill"],  # no name: says what to give, not "no drill None"
])
def test_usage_errors_exit_2(args: list[str], tmp_path: Path) -> None:
    extra = ["-o", str(tmp_path / "out")] if args[:1] in (["run"], ["drill"]) else []
    code, out, err = run_main(*args, *extra)
    assert code == cli.EXIT_USAGE, (out, err)
    assert not any(tmp_path.iterdir())
    assert "Traceback" not in err
    assert args != ["drill"] or "NAME" in err and "None" not in err


@pytest.mark.parametrize(("key", "text", "default", "value"), [
    ("world_size", "8", None, 8), ("world_size", "None", None, None),
    ("world_size", "1000000", None, 1_000_000), ("year", "2024", None, 2024),
    ("mtbf_hours", "100", 168.0, 100.0), ("checkpoint_save_s", "40", None, 40.0),
    ("metric", "tflops", "auto", "tflops"), ("job_script", "tr11.slurm", None, "tr11.slurm"),
    ("hosts", "node[01-48]", None, "node[01-48]"), ("interactive", "true", False, True),
    ("stack_depth", "0", 0, 0), ("some_new_knob", "7", None, 7),
])
def test_good_parameter_values_pass(key: str, text: str, default: object, value: object) -> None:
    got, problem = cli.check_value(key, text, default)
    assert problem is None and got == value and type(got) is type(value)


@pytest.mark.parametrize("argv", [["crash", "--out", "x", "--steps", "-5"],
                                  ["crash", "--out", "x", "--steps", "0"],
                                  ["crash", "--out", "x", "--nproc", "1"]])
def test_python_m_drills_refuses_bad_sizes(argv: list[str], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from traindoc.drills import __main__ as drills_main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        drills_main.main(argv)
    assert e.value.code == 2 and not any(tmp_path.iterdir())


OSC_LINE = ("[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered"
            " \x1b]0;PWNED\x07\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\ here"
            "\u009d0;c1 title\u009c\x1b[2J\x1b[31mred\x1b[0m\x08\x00\u202eend\n")


@pytest.mark.parametrize(("text", "clean"), [
    ("a\x1b]0;title\x07b", "ab"), ("a\x1b]8;;http://x/\x1b\\link\x1b]8;;\x1b\\b", "alinkb"),
    ("\x1b[1;31mred\x1b[0m", "red"), ("c1\u009b31mz", "c1z"), ("\x1bPdcs\x1b\\x", "x"),
    ("tab\tand\nnewline", "tab\tand\nnewline"), ("bell\x07 nul\x00 del\x7f", "bell nul del"),
    ("open\x1b]0;never closed\nnext", "open\nnext"), ("\u202egnp.exe", "gnp.exe"),
])
def test_terminal_text(text: str, clean: str) -> None:
    assert cli.terminal_text(text) == clean


def test_log_text_reaches_the_terminal_without_control_sequences(tmp_path: Path) -> None:
    """A log line's OSC title and hyperlink reach the verdict; the CLI prints neither (19.9)."""
    log = tmp_path / "job.log"
    log.write_text(OSC_LINE, encoding="utf-8")
    p = traindoc("run", "gpu_crash", str(log), "-o", str(tmp_path / "out"))
    assert p.returncode == cli.EXIT_OK, p.stderr
    verdict = p.stdout.strip().splitlines()[-1]
    assert "illegal memory access" in verdict and "click here" in verdict, verdict
    for text in (p.stdout, p.stderr):
        assert not cli.CONTROL_CHAR_RE.search(text.replace("\n", "")), repr(text)
        assert "PWNED" not in text and "evil.example" not in text


def test_unreadable_input_exits_1_with_one_sentence(tmp_path: Path) -> None:
    p = traindoc("run", "timeout", str(tmp_path / "no-such.log"), "-o", str(tmp_path / "out"))
    assert p.returncode == cli.EXIT_NO_INPUT, p.stderr
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout
    msg = [line for line in p.stderr.splitlines() if line.startswith("traindoc:")]
    assert len(msg) == 1 and "log_path" in msg[0] and "Nothing could be read" in msg[0]


def test_shell_metacharacters_are_only_ever_a_path(tmp_path: Path) -> None:
    evil = f"{tmp_path}/x; touch {tmp_path}/pwned $(touch {tmp_path}/pwned2)"
    p = traindoc("triage", evil, "-o", str(tmp_path / "out"), "-p", "interactive",
                 f"$(touch {tmp_path}/pwned3)")
    # exit 2 now: interactive takes True or False; either way nothing ran in a shell
    assert p.returncode in (cli.EXIT_NO_INPUT, cli.EXIT_USAGE, cli.EXIT_FAILED), p.stderr
    assert not list(tmp_path.glob("pwned*"))


def test_run_writes_everything_under_the_output_dir(tmp_path: Path) -> None:
    # Relative LOGS and -o, from a directory that is not the repository: LOGS are resolved
    # before papermill runs the notebook from the repository root.
    shutil.copytree(GEMMA, tmp_path / "logs")
    p = traindoc("run", "timeout", "logs", "-o", "out", "-p", "world_size", "8", "--html",
                 cwd=tmp_path)
    assert p.returncode == cli.EXIT_OK, p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["logs", "out"]
    out = tmp_path / "out"
    s = json.loads((out / "summary.json").read_text())
    assert s["runbook"] == "timeout" and s["facts"]["seq_num"] == 2901
    assert (out / "timeout.ipynb").exists() and (out / "timeout.html").exists()
    assert p.stdout.strip().splitlines()[-1] == f"verdict ({s['confidence']}): {s['verdict']}"


def test_triage_names_the_gpu_crash_as_cause_of_the_timeouts(tmp_path: Path) -> None:
    """Done-when: a GPU crash followed by NCCL timeouts -> crash is the cause."""
    p = traindoc("triage", str(MIXED), "-o", str(tmp_path / "out"))
    assert p.returncode == cli.EXIT_OK, p.stderr
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    cls = s["facts"]["classes"]
    assert [(c["class"], c["role"]) for c in cls[:2]] == [("gpu_crash", "cause"),
                                                        ("timeout", "consequence")]
    lines = p.stdout.strip().splitlines()
    assert lines[-1].startswith("verdict (high): gpu_crash is the likely cause")
    assert any(line.startswith("  1. gpu_crash (cause") for line in lines)
    assert any(line.startswith("  2. timeout (consequence") for line in lines)
    books = {b.stem for b in (ROOT / "runbooks").glob("*.ipynb")}
    for c in cls:
        if c["class"] in books:  # that class's runbook ran into out/<class>/
            assert c["summary"] == str(tmp_path / "out" / c["class"] / "summary.json")
            assert json.loads(Path(c["summary"]).read_text())["verdict"] == c["verdict"]
        else:
            assert c["summary"] is None and "no runbook" in c.get("error", "")


def test_triage_interactive_headless_and_without_runbooks(tmp_path: Path) -> None:
    # interactive=True in a headless run builds the widgets and still finishes.
    p = traindoc("triage", str(MIXED), "-o", str(tmp_path), "--no-runbooks",
                 "-p", "interactive", "True")
    assert p.returncode == cli.EXIT_OK, p.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert all(c["summary"] is None for c in s["facts"]["classes"])
    assert not [d for d in tmp_path.iterdir() if d.is_dir()]


def test_a_failing_runbook_exits_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    books = tmp_path / "runbooks"
    books.mkdir()
    nb = json.loads((ROOT / "runbooks" / "timeout.ipynb").read_text())
    nb["cells"].insert(2, {"cell_type": "code", "id": "broken", "metadata": {}, "outputs": [],
                           "execution_count": None, "source": "raise ZeroDivisionError('bug')"})
    (books / "broken.ipynb").write_text(json.dumps(nb))
    monkeypatch.setenv("TRAINDOC_RUNBOOKS", str(books))
    code, _, err = run_main("run", "broken", str(GEMMA), "-o", str(tmp_path / "out"))
    assert code == cli.EXIT_FAILED
    assert "ZeroDivisionError: bug" in err and "broken.ipynb" in err


@pytest.mark.drills
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="drills need torch")
def test_drill_then_triage(tmp_path: Path) -> None:
    p = traindoc("drill", "crash", "--out", str(tmp_path / "bundle"))
    assert p.returncode == cli.EXIT_OK, p.stderr
    assert "traindoc triage" in p.stdout
    t = traindoc("triage", str(tmp_path / "bundle"), "-o", str(tmp_path / "t"), "--no-runbooks")
    assert t.returncode == cli.EXIT_OK, t.stderr
    s = json.loads((tmp_path / "t" / "summary.json").read_text())
    # (the verdict and classes in the message: CI once saw 'throughput' named first here, on a
    # machine loaded enough to slow the drill's steps before its crash)
    assert s["facts"]["cause"] == "gpu_crash", (s["verdict"], s["facts"].get("classes"))


def test_runbooks_take_the_read_limits_as_parameters(tmp_path: Path) -> None:
    """-p max_file_gib caps what is read of one file; what was cut is a warning in summary.json."""
    out = tmp_path / "out"
    code = cli.main(["run", "timeout", str(DATA / "timeout" / "gemma3_seed"), "-o", str(out),
                     "-p", "max_file_gib", "0.000001"])
    assert code == cli.EXIT_OK
    warnings = json.loads((out / "summary.json").read_text())["inputs"]["warnings"]
    assert any("limit" in w or "cut" in w or "stopped" in w for w in warnings), warnings


@pytest.mark.parametrize("live", [False, True])
def test_a_drill_never_clears_a_folder_it_did_not_write(tmp_path: Path, monkeypatch,
                                                        live: bool) -> None:
    """``drill -o`` pointed at a project (its README.md and logs/ share a bundle's names) is
    refused before anything is removed or launched: exit 2, as for run's -o."""
    monkeypatch.setenv("TRAINDOC_DRILL_PYTHON", sys.executable)  # (no torch needed to refuse)
    d = tmp_path / "project"
    (d / "logs").mkdir(parents=True)
    (d / "README.md").write_text("mine")
    (d / "logs" / "keep.log").write_text("kept")
    (d / "train.py").write_text("print()")
    code, out, err = run_main("drill", "hang", *(["--live"] if live else []), "-o", str(d))
    assert code == cli.EXIT_USAGE, (out, err)
    assert "did not write" in err and "train.py" in err
    assert (d / "README.md").read_text() == "mine" and (d / "logs" / "keep.log").is_file()
    assert sorted(p.name for p in d.iterdir()) == ["README.md", "logs", "train.py"]


@pytest.mark.parametrize("where", ["a file", "under a file", "read-only"])
def test_drill_into_an_unusable_folder_is_exit_5(where: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 31: a traceback and exit 1 before
    (tmp_path / "f").write_text("mine")
    out = {"a file": tmp_path / "f", "under a file": tmp_path / "f" / "sub",
           "read-only": tmp_path / "ro"}[where]
    if where == "read-only":  # (root writes through a mode bit: the check is what is tested)
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, m, *a, **k: False if str(p) == str(out)
                            else real(p, m, *a, **k))
    err = io.StringIO()
    rc = cli.main(["drill", "timeout", "-o", str(out)], io.StringIO(), err)
    assert rc == 5, err.getvalue()
    assert "Traceback" not in err.getvalue() and "cannot write the drill's bundle" in err.getvalue()
    assert (tmp_path / "f").read_text() == "mine"
