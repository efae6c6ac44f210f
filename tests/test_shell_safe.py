"""Commands built from log text are safe to paste (issue 31): every runbook's actions, on logs
whose hosts, ranks, messages and file names carry shell syntax, are pasted into a bash whose
PATH holds only stubs of the cluster's tools; the payloads' marker file is never created.

The payloads use nothing but the shell itself (``>MARKER`` creates the file), so a command
that would run them runs them here too.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import traindoc
from conftest import SAMPLE_DIRS
from traindoc import shellsafe
from traindoc.score import RUNBOOKS, diagnosis

# What a job's owner can write where a host name, a message or a file name goes.
PAYLOADS = ("a;>MARKER;#", "$(>MARKER)", "`>MARKER`", "x'>MARKER'", 'x"$(>MARKER)"',
            "x|>MARKER", "x&>MARKER&", "-x$(>MARKER)")

# Where a pasted command begins: the tools the actions name.
COMMAND_RE = re.compile(r"(?<![\w/.-])(?:scontrol|sbatch|srun|sacct|py-spy|traindoc|timeout|sudo|"
                        r"nvidia-smi|dcgmi|pdsh|export|grep|bash|sh|compute-sanitizer)(?![\w-])")
STUBS = ("scontrol", "sbatch", "srun", "sacct", "py-spy", "traindoc", "timeout", "sudo",
         "nvidia-smi", "dcgmi", "pdsh", "grep", "sed", "tr", "pgrep", "xargs", "hostname",
         "compute-sanitizer", "python", "python3", "gdb", "dmesg", "ibstat", "cut", "cat")


def _iterations(root: Path) -> Path:
    """A Megatron log whose throughput drops at iteration 42740 (test_throughput's)."""
    from test_throughput import seed_like_log
    return seed_like_log(root)


def hostile_logs(root: Path) -> list[list[Path]]:
    """Incidents whose every free field carries a payload: a torchrun root-cause host, an
    error message, srun's node failure, a slow host in a benchmark table, a node list."""
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for i, p in enumerate(PAYLOADS):
        d = root / f"case{i}"
        d.mkdir()
        host = p if not p.startswith("-") else "n" + p
        rec = d / f"torchrun{p.replace('/', '_')}.log"
        rec.write_text(
            "============================================================\n"
            "train.py FAILED\n"
            "------------------------------------------------------------\n"
            "Root Cause (first observed failure):\n[0]:\n"
            "  time      : 2025-12-23_05:17:58\n"
            f"  host      : {host}\n"
            f"  rank      : {i} (local_rank: {i})\n"
            f"  exitcode  : -11 (pid: {3304209 + i})\n"
            "  error_file: <N/A>\n"
            f"  traceback : Signal 11 (SIGSEGV) received by PID {3304209 + i}\n"
            "============================================================\n")
        ecc = d / "ecc.log"
        ecc.write_text(f"[rank{i}]: RuntimeError: CUDA error: uncorrectable ECC error "
                       f"encountered {p}\n")
        msg = d / "nccl.log"
        msg.write_text(f"node-{i}:42:43 [0] NCCL WARN Cuda failure 'GPU is lost {p} {p}'\n")
        lost = d / "lost.log"
        lost.write_text(f"[rank{i}]: RuntimeError: CUDA error: GPU is lost {p}\n")
        node = d / "node.log"
        node.write_text(f"srun: error: Node failure on {host}\n")
        out += [[rec], [rec, ecc], [msg], [lost], [node], [rec, lost]]
        slow = root / f"slow{i}"
        slow.mkdir()
        rows = [f"good-{k:02d},{296.5 + 0.1 * (k % 3):.1f}" for k in range(12)]
        rows.append(f"{host.replace(',', ';')},303.6")
        (slow / "bench.csv").write_text("host,seconds\n" + "\n".join(rows) + "\n")
        out.append([_iterations(slow), slow / "bench.csv"])
        bis = root / f"bisect{i}"
        bis.mkdir()
        (bis / "nodes.log").write_text(f"SLURM_JOB_NODELIST=node-[1-4],{host}\n")
        out.append([_iterations(bis), bis / "nodes.log"])
    return out


def hostile_samples(root: Path) -> list[list[Path]]:
    """Every sample bundle's files copied under names that carry the payloads, per bundle."""
    out = []
    for d in SAMPLE_DIRS:
        dest = root / d.parent.name / d.name
        group = []
        for i, f in enumerate(sorted(p for p in d.rglob("*") if p.is_file())):
            p = PAYLOADS[i % len(PAYLOADS)].replace("/", "_")
            target = dest / f.relative_to(d).parent / f"{p}{f.name}"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, target)
            group.append(target)
        if group:
            out.append(group)
    return out


def commands(how: str) -> list[str]:
    """Every text an operator could paste from ``how``: from each tool's name to the end, and
    to each ``;`` after it."""
    out = []
    for m in COMMAND_RE.finditer(how):
        rest = how[m.start():]
        out.append(rest)
        out += [rest[:j] for j, ch in enumerate(rest) if ch in ";#\n"]
    return out


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | Path]:
    box = tmp_path_factory.mktemp("paste")
    bin_ = box / "bin"
    bin_.mkdir()
    for name in STUBS:
        stub = bin_ / name
        stub.write_text("#!/bin/bash\nexit 0\n")
        stub.chmod(0o755)
    return {"box": box, "bin": bin_}


def paste(text: str, sandbox: dict[str, str | Path]) -> None:
    """``text`` run by a bash that finds only the stubs (a syntax error runs nothing)."""
    cwd = Path(sandbox["box"]) / "cwd"
    cwd.mkdir(exist_ok=True)
    env = {"PATH": str(sandbox["bin"]), "HOME": str(cwd), "SLURM_JOB_ID": "42"}
    subprocess.run([shutil.which("bash") or "/bin/bash", "--norc", "--noprofile", "-c",
                    "command_not_found_handle() { return 127; }\n" + text],
                   cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                   timeout=10, check=False)


def _marker(sandbox: dict[str, str | Path]) -> list[Path]:
    return [p for p in Path(sandbox["box"]).rglob("*MARKER*") if p.name == "MARKER"]


def _reports(paths: list[Path]) -> list:
    inc = traindoc.load(paths, progress=False)
    return [diagnosis(rb)(inc) for rb in RUNBOOKS]


@pytest.mark.parametrize("kind", ["logs", "samples"])
def test_no_action_runs_what_the_logs_say(kind: str, tmp_path: Path,
                                          sandbox: dict[str, str | Path]) -> None:
    if kind == "logs":
        groups = hostile_logs(tmp_path / "logs")
    else:
        groups = hostile_samples(tmp_path / "samples")
    pasted = 0
    seen: set[str] = set()
    for paths in groups:
        for r in _reports(paths):
            for a in r.actions:
                for text in commands(a.how):
                    if text in seen:
                        continue
                    seen.add(text)
                    paste(text, sandbox)
                    pasted += 1
                    ran = _marker(sandbox)
                    for f in ran:
                        f.unlink()
                    assert not ran, (r.runbook, a.id, a.how)
    assert pasted > 20


def test_a_drain_is_never_printed_with_a_host_it_could_not_make_safe(tmp_path: Path) -> None:
    from traindoc.diagnose import gpu_crash
    for p in PAYLOADS:
        f = tmp_path / "rec.log"
        host = p if not p.startswith("-") else "n" + p
        f.write_text("Root Cause (first observed failure):\n[0]:\n"
                     f"  host      : {host}\n  rank      : 0 (local_rank: 0)\n"
                     "  exitcode  : -11 (pid: 1)\n  error_file: <N/A>\n"
                     "  traceback : Signal 11 (SIGSEGV) received by PID 1\n"
                     "==========\n"
                     "[rank0]: RuntimeError: CUDA error: uncorrectable ECC error encountered\n")
        r = gpu_crash.diagnose(traindoc.load(f, progress=False))
        for a in r.actions:
            assert "MARKER" not in a.how or "not a host name" in a.how, (p, a.how)
            assert f"nodename={host}" not in a.how


@pytest.mark.parametrize("value", ["node-1", "gpu_p5.cluster", "a1"])
def test_host_names_pass(value: str) -> None:
    assert shellsafe.host_arg(value) == value
    assert shellsafe.hosts_arg([value, "n2"]) == f"{value},n2"


@pytest.mark.parametrize("value", [*PAYLOADS, "", "-x", "a b", "a\nb", "ünï", None, 3])
def test_anything_else_is_no_host(value: object) -> None:
    assert shellsafe.host_arg(value) is None
    assert shellsafe.hosts_arg(["ok", value]) is None


def test_quote_refuses_control_characters_and_options() -> None:
    assert shellsafe.quote("a\nb") is None and shellsafe.quote("a\x1b[2Jb") is None
    assert shellsafe.quote("-rf") == "./-rf"
    assert shellsafe.quote("log $(x).txt") == "'log $(x).txt'"


def test_reason_text_is_whole_words_and_inert() -> None:
    text = shellsafe.reason_text('GPU is lost $(>MARKER) `>M` "q" !x \\ ' + "word " * 30, 40)
    assert len(text) <= 40 and not set(text) & set('$`"!\\\n')
    assert text.split()[-1] in {"word", "lost", "MARKER", "M", "q", "x", "GPU", "is"}


def test_ranks_are_ints() -> None:
    assert shellsafe.rank_arg(3) == 3 and shellsafe.rank_arg("7") == 7
    for bad in ("3;x", 2.5, True, -1, None, "$(x)"):
        assert shellsafe.rank_arg(bad) is None


def test_the_sandbox_would_see_a_payload(sandbox: dict[str, str | Path]) -> None:
    # the check itself: an unquoted host in a drain line does run the payload
    paste("scontrol update nodename=a;>MARKER;# state=drain", sandbox)
    found = _marker(sandbox)
    assert found
    for f in found:
        os.unlink(f)
