"""pyproject.toml and environment.yml list the same dependencies; the library needs no torch."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

from conftest import ROOT

NAME_RE = re.compile(r"^\s*-\s+([A-Za-z0-9_.\-]+)")


def names(specs: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[ ]", s, maxsplit=1)[0].lower() for s in specs}


def test_environment_yml_matches_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = names(project["dependencies"])
    for extra in ("dev", "torch", "lab", "cluster"):
        wanted |= names(project["optional-dependencies"][extra])
    env = set()
    text = (ROOT / "environment.yml").read_text()
    for line in text.split("dependencies:", 1)[1].splitlines():
        m = NAME_RE.match(line)
        if m and m.group(1) not in ("pip", "python", "-e"):
            env.add(m.group(1).lower())
    assert wanted == env - {"python"}, (wanted ^ env)


def test_library_imports_and_analyses_without_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import traindoc, traindoc.diagnose.timeout as t, traindoc.plots, traindoc.drills\n"
        f"inc = traindoc.load({str(ROOT / 'data' / 'timeout' / 'gemma3_seed')!r})\n"
        "assert t.diagnose(inc).facts['seq_num'] == 2901\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": str(ROOT / "lib")})
