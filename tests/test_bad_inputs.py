"""A catalogue of bad inputs, each run through every runbook: each finishes with a clear finding
or warning; only "nothing readable at all" fails, with one sentence naming log_path."""

from __future__ import annotations

import gzip
import os
import pickle
from collections.abc import Callable
from pathlib import Path

import papermill as pm
import pytest

import traindoc
from conftest import DATA
from test_runbooks import RUNBOOKS, execute

WATCHDOG = ("[rank0]:[E1121 10:00:00.1 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n")
FR_DUMP = (DATA / "timeout" / "drill_timeout" / "fr" / "rank0.pkl")


class Boom:
    def __reduce__(self):
        return (os.system, ("touch /tmp/traindoc-bad-input-pwned",))


def _empty_dir(d: Path) -> Path:
    (d / "empty").mkdir()
    return d / "empty"


def _unreadable(d: Path) -> Path:
    # root ignores file modes; /proc/self/mem refuses reads at offset 0 for anyone.
    (d / "job.log").symlink_to("/proc/self/mem")
    (d / "other.log").write_text(WATCHDOG)
    return d


def _broken_link(d: Path) -> Path:
    (d / "job.log").symlink_to(d / "gone.log")
    (d / "other.log").write_text(WATCHDOG)
    return d


def _truncated_gzip(d: Path) -> Path:
    data = gzip.compress((("noise line\n" * 20000) + WATCHDOG).encode())
    (d / "job.log.gz").write_bytes(data[: len(data) // 2])
    return d / "job.log.gz"


def _dumps(d: Path) -> Path:
    good = FR_DUMP.read_bytes()
    (d / "rank0.pkl").write_bytes(b"")
    (d / "rank1.pkl").write_bytes(good[: len(good) // 3])
    (d / "rank2.pkl").write_bytes(pickle.dumps({"entries": [Boom()]}))
    (d / "job.log").write_text(WATCHDOG)
    return d


def _long_line(d: Path) -> Path:
    with open(d / "job.log", "w") as fh:
        fh.write("x" * (50 * 1024 * 1024) + "\n" + WATCHDOG)
    return d / "job.log"


def _nul_bytes(d: Path) -> Path:
    (d / "job.log").write_bytes(b"\x00" * 5000 + WATCHDOG.encode() + b"\x00\x00\n")
    return d / "job.log"


def _latin1(d: Path) -> Path:
    (d / "job.log").write_bytes("d\u00e9j\u00e0 vu \u00ff\n".encode("latin-1") + WATCHDOG.encode())
    return d / "job.log"


def _utf16(d: Path) -> Path:
    (d / "job.log").write_text("hello\n" + WATCHDOG, encoding="utf-16")
    return d / "job.log"


def _many_files(d: Path) -> Path:
    for i in range(10_000):
        (d / f"rank{i}.log").write_text(f"step {i}\n")
    return d


def _two_jobs(d: Path) -> Path:
    for job, total in (("a1b2c3d4_job1", 1000), ("e5f6a7b8_job2", 5000)):
        run = d / job / "attempt_0" / "0"
        run.mkdir(parents=True)
        (run / "stdout.log").write_text("".join(
            f" iteration {i}/ {total} | elapsed time per iteration (ms): 100.0 | lm loss: 2.0E+00 |\n"
            for i in range(1, 6)))
    return d


SCRIPT = "<script>alert(1)</script>"


def _script_tag(d: Path) -> Path:
    (d / "job.log").write_text(
        WATCHDOG.replace("OpType=ALLREDUCE", "OpType=" + SCRIPT)
        + f"[rank1]: RuntimeError: {SCRIPT} CUDA error: {SCRIPT}\n"
        + f" iteration 1/ 10 | lm loss: 2.0E+00 | {SCRIPT}: 1 |\n"
        + f"Thread 1 (active): \"{SCRIPT}\"\n    {SCRIPT} (x.py:1)\n")
    return d / "job.log"


# name -> (builder, a phrase that must appear in the summary's warnings or findings)
CATALOGUE: dict[str, tuple[Callable[[Path], Path], str]] = {
    "unreadable_file": (_unreadable, "cannot be read"),
    "broken_symlink": (_broken_link, "broken symbolic link"),
    "truncated_gzip": (_truncated_gzip, "stopped reading early"),
    "bad_dumps": (_dumps, "refused to import"),
    "50MB_line": (_long_line, "was cut"),
    "nul_bytes": (_nul_bytes, "NUL bytes"),
    "latin1": (_latin1, "undecodable byte"),
    "utf16": (_utf16, "UTF-16"),
    "10000_files": (_many_files, ""),
    "two_jobs": (_two_jobs, "more than one job"),
    "script_tag": (_script_tag, ""),
}


def _text(summary: dict) -> str:
    parts = list(summary["inputs"]["warnings"])
    for f in summary["findings"]:
        parts.append(f["title"])
        parts.extend(f["evidence"])
    return "\n".join(parts)


@pytest.mark.parametrize("case", sorted(CATALOGUE))
def test_catalogue_loads_with_a_clear_account(case: str, tmp_path: Path) -> None:
    build, phrase = CATALOGUE[case]
    Path("/tmp/traindoc-bad-input-pwned").unlink(missing_ok=True)
    inc = traindoc.load(build(tmp_path))
    assert not Path("/tmp/traindoc-bad-input-pwned").exists()
    from traindoc.diagnose.common import input_findings

    text = "\n".join(inc.account["warnings"] + [f.title for f in input_findings(inc)])
    assert phrase in text, text[:2000]


@pytest.mark.notebooks
@pytest.mark.parametrize("runbook", RUNBOOKS)
@pytest.mark.parametrize("case", sorted(c for c in CATALOGUE if c != "10000_files"))
def test_every_runbook_survives_the_catalogue(runbook: str, case: str, tmp_path: Path) -> None:
    build, phrase = CATALOGUE[case]
    target = build(tmp_path / "in" if (tmp_path / "in").mkdir() is None else tmp_path)
    summary = execute(runbook, tmp_path, log_path=str(target), **_extra(runbook))
    assert summary["findings"], summary
    assert phrase in _text(summary), _text(summary)[:2000]
    if case == "script_tag":  # log text is data: never live markup in the notebook's HTML
        import nbformat

        nb = nbformat.read(tmp_path / f"{runbook}.ipynb", as_version=4)
        for cell in nb.cells:
            for out in cell.get("outputs", []):
                html = out.get("data", {}).get("text/html", "")
                assert SCRIPT not in html, (runbook, html[:500])


def _extra(runbook: str) -> dict:
    return {"run_runbooks": False} if runbook == "triage" else {}


@pytest.mark.notebooks
@pytest.mark.parametrize("runbook", RUNBOOKS)
def test_empty_directory_fails_naming_log_path(runbook: str, tmp_path: Path) -> None:
    with pytest.raises(pm.PapermillExecutionError) as e:
        execute(runbook, tmp_path, log_path=str(_empty_dir(tmp_path)), **_extra(runbook))
    assert "log_path" in str(e.value)
