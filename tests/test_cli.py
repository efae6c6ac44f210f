"""The ``traindoc`` command line: commands, exit codes, where outputs go, no shell."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

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
])
def test_usage_errors_exit_2(args: list[str], tmp_path: Path) -> None:
    code, out, err = run_main(*args, *(["-o", str(tmp_path)] if args[:1] == ["run"] else []))
    assert code == cli.EXIT_USAGE, (out, err)
    assert not any(tmp_path.iterdir())


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
    assert p.returncode in (cli.EXIT_NO_INPUT, cli.EXIT_FAILED), p.stderr
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
    assert s["facts"]["cause"] == "gpu_crash"
