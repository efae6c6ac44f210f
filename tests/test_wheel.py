"""Installed from a wheel (no checkout, no ``-e``), traindoc finds its runbooks and runs one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from importlib.metadata import version
from pathlib import Path

import pytest

from conftest import ROOT
from traindoc.score import RUNBOOKS

SAMPLE = ROOT / "data" / "timeout" / "gemma3_seed"


def _setuptools_ok() -> bool:
    try:
        return int(version("setuptools").split(".")[0]) >= 68
    except Exception:
        return False


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv holding the wheel built from this tree; the dev environment's
    site-packages supply the dependencies (added to sys.path, its .pth files not run, so
    the editable traindoc there stays invisible)."""
    tmp = tmp_path_factory.mktemp("wheel")
    tree = tmp / "tree"  # what the wheel is built from: the package and its metadata only
    shutil.copytree(ROOT / "lib", tree / "lib",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    dist = tmp / "dist"
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), "."]
    if _setuptools_ok():  # torch brings setuptools into the dev environment; else pip fetches it
        cmd.insert(4, "--no-build-isolation")
    built = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = next(dist.glob("traindoc-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = Path(subprocess.run(
        [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip())
    (purelib / "zz_dev_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    "--target", str(purelib), str(wheel)], check=True, capture_output=True)
    # console script: the wheel's entry point, written for this interpreter
    script = venv / "bin" / "traindoc"
    script.write_text(f"#!{venv / 'bin' / 'python'}\n"
                      "import sys\nfrom traindoc.cli import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return venv


def _env(venv: Path) -> dict[str, str]:
    """The caller's environment without what would point Python at the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRAINDOC_RUNBOOKS")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "bin" / "traindoc"), *args], cwd=cwd, env=_env(venv),
                          capture_output=True, text=True, timeout=600)


def test_wheel_ships_the_runbooks(installed: Path, tmp_path: Path) -> None:
    where = subprocess.run(
        [installed / "bin" / "python", "-c", "import traindoc, traindoc.locations as l; "
         "print(traindoc.__file__); print(l.runbooks_dir())"],
        cwd=tmp_path, env=_env(installed), capture_output=True, text=True, check=True
    ).stdout.split()
    assert not where[0].startswith(str(ROOT)), where  # the wheel's copy, not the checkout
    assert sorted(p.name for p in Path(where[1]).glob("*.ipynb")) == sorted(
        p.name for p in (ROOT / "lib" / "traindoc" / "runbooks").glob("*.ipynb"))


def test_installed_cli_lists_and_runs_from_another_directory(installed: Path,
                                                              tmp_path: Path) -> None:
    listed = _run(installed, "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    for name in RUNBOOKS:
        assert name in listed.stdout
    # a relative log path resolves against the caller's directory, not the package
    shutil.copytree(SAMPLE, tmp_path / "logs")
    ran = _run(installed, "run", "timeout", "logs", "-o", "out", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["facts"]["seq_num"] == 2901
    # "Seen before" reads the corpus index the wheel carries (nothing fetched, no checkout)
    assert summary["similar"] and all(s["source"] for s in summary["similar"]), summary["similar"]
    assert all(str(ROOT) not in p for p in summary["inputs"]["paths"]), summary["inputs"]
