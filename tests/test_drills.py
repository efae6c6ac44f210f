"""End-to-end tests for traindoc.drills: run each drill for real and check its bundle.

The ``drills`` tests launch torchrun (CPU, gloo) and need torch; they take ~10-20 s each.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
LIB = REPO / "lib"
if str(LIB) not in sys.path:
    sys.path.insert(0, str(LIB))

from conftest import drill_group  # noqa: E402
from traindoc.diagnose import NAMES  # noqa: E402
from traindoc.drills import DRILLS, SPECS, sample_dir  # noqa: E402
from traindoc.drills.worker import megatron_line  # noqa: E402

HAS_TORCH = importlib.util.find_spec("torch") is not None or "TRAINDOC_DRILL_PYTHON" in os.environ
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="drills need torch")

ITER_RE = re.compile(
    r"iteration\s+(\d+)/\s*\d+ \| consumed samples:\s+\d+ \| "
    r"elapsed time per iteration \(ms\): ([\d.]+) \|.*? lm loss: ([\d.E+-]+) \|"
)
TIMEOUT_RECV = "Timed out waiting 5000ms for recv operation to complete"
TIMEOUT_ANY_RE = re.compile(r"Timed out waiting 5000ms for (send|recv) operation to complete")
CHILD_FAILED = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"
ROOT_CAUSE = "Root Cause (first observed failure):"
PEER_GONE_RE = re.compile(r"Connection (reset|closed) by peer")
EXPECTED_KEYS = {
    "timeout": {"timed_out_ranks", "op_type", "seq_num", "lagging_ranks", "pattern"},
    "unseeded_split": {"timed_out_ranks", "op_type", "seq_num", "lagging_ranks", "pattern"},
    "desync": {"first_mismatch"},
    "crash": {"failed_ranks", "error_kind"},
    "hang": {"outlier_members", "outlier_leaf", "majority_leaf"},
    "slow_rank": {"change_iteration", "suspect_ranks"},
    "loss_spike": {"spikes"},
    "cuda_assert": {"failed_ranks", "error_kind"},
    "cuda_oom": {"failed_ranks", "error_kind"},
    "nccl_watchdog": {"timed_out_ranks", "op_type", "seq_num", "last_step"},
    "nccl_duplicate_gpu": {"failed_ranks", "error_kind"},
    "cuda_illegal_address": {"failed_ranks", "error_kind", "last_iteration"},
}
CLASSES = set(NAMES)


def _leftovers(marker: str) -> list[str]:
    """Live processes whose command line mentions ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd:
            found.append(f"{entry.name}: {cmd}")
    return found


def _fr(out: Path, rank: int) -> dict[str, Any]:
    return pickle.loads((out / "fr" / f"rank{rank}.pkl").read_bytes())


def _entries(out: Path, rank: int, pg: str = "0") -> list[dict[str, Any]]:
    return [e for e in _fr(out, rank)["entries"] if e["process_group"][0] == pg]


def _iterations(text: str) -> dict[int, tuple[float, float]]:
    return {int(m[1]): (float(m[2]), float(m[3])) for m in ITER_RE.finditer(text)}


def _check_common(out: Path, name: str) -> tuple[dict[str, Any], str]:
    rec = json.loads((out / "drill.json").read_text())
    assert rec["drill"] == name
    assert rec["class"] == SPECS[name].cls in CLASSES
    assert set(rec["facts"]) == EXPECTED_KEYS[name]
    assert not rec["run"]["timed_out"]
    log = (out / "torchrun.log").read_text(errors="replace")
    per_rank = sorted(out.glob("logs/*/attempt_0/*/stdout.log"))
    assert [p.parent.name for p in per_rank] == ["0", "1"]
    assert all((p.parent / "stderr.log").exists() for p in per_rank)
    assert " iteration        1/" in log
    for rel in rec["artifacts"]:
        assert (out / rel).is_file(), rel
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert size < 1_000_000
    assert not _leftovers(str(out)), _leftovers(str(out))
    return rec, log


def test_drills_registry() -> None:
    assert set(DRILLS) == set(EXPECTED_KEYS)
    assert all(isinstance(d, str) and d for d in DRILLS.values())


def test_import_does_not_import_torch() -> None:
    code = "import sys, traindoc.drills; assert 'torch' not in sys.modules, 'torch imported'"
    env = dict(os.environ, PYTHONPATH=str(LIB))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_megatron_line_format() -> None:
    expected = (
        " iteration       12/      40 | consumed samples:         96 | elapsed time per iteration"
        " (ms): 105.2 | learning rate: 1.000E-03 | global batch size:     8 | lm loss: 2.463556E+00"
        " | grad norm: 0.174 | number of skipped iterations:   0 | number of nan iterations:   0 |"
        " samples per second: 76.046 | TFLOPs: 0.01 |"
    )
    assert megatron_line(12, 40, 96, 105.2, 1e-3, 8, 2.463556, 0.174, 0.01) == expected


@pytest.mark.parametrize("name", list(EXPECTED_KEYS))
def test_sample_bundle_present(name: str) -> None:
    target = sample_dir(name)
    if not target.exists():
        pytest.skip("samples not generated: python -m traindoc.drills --regenerate-samples")
    rec = json.loads((target / "drill.json").read_text())
    assert rec["drill"] == name and rec["class"] == SPECS[name].cls
    assert "python -m traindoc.drills" in (target / "README.md").read_text()


@pytest.mark.drills
@pytest.mark.xdist_group(drill_group("timeout"))
@needs_torch
def test_timeout(drill_bundle: Callable[[str], Path]) -> None:
    out = drill_bundle("timeout")
    rec, log = _check_common(out, "timeout")
    facts = rec["facts"]
    assert rec["run"]["returncode"] != 0
    assert TIMEOUT_RECV in log and CHILD_FAILED in log and ROOT_CAUSE in log
    assert "closing signal SIGTERM" in log
    r0, r1 = _entries(out, 0), _entries(out, 1)
    assert r0[-1]["collective_seq_id"] == facts["seq_num"]
    assert r0[-1]["profiling_name"] == facts["op_type"] == "gloo:all_reduce"
    assert r1[-1]["collective_seq_id"] == facts["seq_num"] - 1
    assert facts["timed_out_ranks"] == [0] and facts["lagging_ranks"] == [1]


@pytest.mark.drills
@pytest.mark.xdist_group(drill_group("desync"))
@needs_torch
def test_desync(drill_bundle: Callable[[str], Path]) -> None:
    out = drill_bundle("desync")
    rec, log = _check_common(out, "desync")
    mm = rec["facts"]["first_mismatch"]
    assert TIMEOUT_ANY_RE.search(log) and CHILD_FAILED in log
    for rank, op in mm["ops"].items():
        entry = next(e for e in _entries(out, int(rank)) if e["collective_seq_id"] == mm["seq_num"])
        assert entry["profiling_name"] == op
    assert mm["ops"]["0"] != mm["ops"]["1"] and mm["ranks"] == [1]


@pytest.mark.drills
@pytest.mark.xdist_group(drill_group("crash"))
@needs_torch
def test_crash(drill_bundle: Callable[[str], Path]) -> None:
    out = drill_bundle("crash")
    rec, log = _check_common(out, "crash")
    assert rec["facts"] == {"failed_ranks": [1], "error_kind": "signal"}
    assert "Signal 9 (SIGKILL) received by PID" in log and CHILD_FAILED in log
    assert PEER_GONE_RE.search(log) or "closing signal SIGTERM" in log
    assert (out / "fr" / "rank0.pkl").exists()


@pytest.mark.drills
@pytest.mark.xdist_group(drill_group("hang"))
@needs_torch
def test_hang(drill_bundle: Callable[[str], Path]) -> None:
    out = drill_bundle("hang")
    rec, log = _check_common(out, "hang")
    facts = rec["facts"]
    traces = sorted((out / "pyspy").glob("trace-*-*.out"))
    assert len(traces) == 2
    text = "".join(p.read_text() for p in traces)
    assert text.count('"MainThread"') == 2
    assert facts["outlier_leaf"] in text and facts["majority_leaf"] in text
    assert facts["majority_leaf"].startswith("broadcast (")
    assert "queue.py" in text and "Timed out" not in log
    assert "SignalException" in log
    assert _entries(out, 0)[-1]["profiling_name"] == "gloo:broadcast"
    assert _entries(out, 1)[-1]["profiling_name"] == "gloo:all_reduce"


@pytest.mark.drills
@pytest.mark.xdist_group(drill_group("slow_rank"))
@needs_torch
def test_slow_rank(drill_bundle: Callable[[str], Path]) -> None:
    out = drill_bundle("slow_rank")
    rec, log = _check_common(out, "slow_rank")
    assert rec["run"]["returncode"] == 0
    k = rec["facts"]["change_iteration"]
    its = _iterations(log)
    before = statistics.median(ms for i, (ms, _) in its.items() if 1 < i < k)
    after = statistics.median(ms for i, (ms, _) in its.items() if i >= k)
    assert after > 2 * before


@pytest.mark.drills
@pytest.mark.xdist_group(drill_group("loss_spike"))
@needs_torch
def test_loss_spike(drill_bundle: Callable[[str], Path]) -> None:
    out = drill_bundle("loss_spike")
    rec, log = _check_common(out, "loss_spike")
    assert rec["run"]["returncode"] == 0
    k = rec["facts"]["spikes"][0]["start_iteration"]
    losses = {i: loss for i, (_, loss) in _iterations(log).items()}
    base = statistics.median(v for i, v in losses.items() if i < k)
    assert losses[k] > 10 * base
    assert statistics.median(v for i, v in losses.items() if i > k + 2) < 2 * base


@pytest.mark.drills
@pytest.mark.xdist_group(drill_group("unseeded_split"))
@needs_torch
def test_unseeded_split(drill_bundle: Callable[[str], Path]) -> None:
    out = drill_bundle("unseeded_split")
    rec, log = _check_common(out, "unseeded_split")
    facts = rec["facts"]
    assert TIMEOUT_ANY_RE.search(log) and CHILD_FAILED in log and "saving checkpoint" in log
    (short,) = facts["timed_out_ranks"]
    ckpt = _entries(out, short, pg="1")
    assert ckpt[-1]["profiling_name"] == facts["op_type"] == "gloo:all_gather"
    assert ckpt[-1]["collective_seq_id"] == facts["seq_num"]
    assert ckpt[-1]["process_group"] == ("1", "checkpoint")


@pytest.mark.drills
@pytest.mark.xdist_group(drill_group("cuda_assert"))
@needs_torch
def test_cuda_assert(drill_bundle: Callable[[str], Path]) -> None:
    out = drill_bundle("cuda_assert")
    rec, log = _check_common(out, "cuda_assert")
    assert rec["run"]["gpus"]
    # the kernel's own assertion, then torch's error, on the fault rank; torchrun names it
    assert re.search(r"Assertion `.*` failed\.", log) and "device-side assert triggered" in log
    assert CHILD_FAILED in log and ROOT_CAUSE in log


@pytest.mark.drills
@pytest.mark.xdist_group(drill_group("cuda_oom"))
@needs_torch
def test_cuda_oom(drill_bundle: Callable[[str], Path]) -> None:
    out = drill_bundle("cuda_oom")
    rec, log = _check_common(out, "cuda_oom")
    assert re.search(r"CUDA out of memory\. Tried to allocate [\d.]+ [GMT]iB", log)
    assert CHILD_FAILED in log and ROOT_CAUSE in log


@pytest.mark.drills
@pytest.mark.xdist_group(drill_group("nccl_watchdog"))
@needs_torch
def test_nccl_watchdog(drill_bundle: Callable[[str], Path]) -> None:
    out = drill_bundle("nccl_watchdog")
    rec = json.loads((out / "drill.json").read_text())
    log = (out / "torchrun.log").read_text(errors="replace")
    # the watchdog names the step's all_reduce; torch dumped NCCL's flight recorder itself
    assert f"WorkNCCL(SeqNum={rec['facts']['seq_num']}, OpType=ALLREDUCE" in log
    assert "Watchdog caught collective operation timeout" in log
    assert sorted(p.name for p in (out / "fr").glob("nccl_trace_rank_*")) == [
        f"nccl_trace_rank_{r}" for r in rec["facts"]["timed_out_ranks"]]
    assert CHILD_FAILED in log and ROOT_CAUSE in log


@pytest.mark.drills
@pytest.mark.xdist_group(drill_group("nccl_duplicate_gpu"))
@needs_torch
def test_nccl_duplicate_gpu(drill_bundle: Callable[[str], Path]) -> None:
    log = (drill_bundle("nccl_duplicate_gpu") / "torchrun.log").read_text(errors="replace")
    assert "ncclInvalidUsage" in log and "Duplicate GPU detected" in log
    assert CHILD_FAILED in log


@pytest.mark.drills
@pytest.mark.xdist_group(drill_group("cuda_illegal_address"))
@needs_torch
def test_cuda_illegal_address(drill_bundle: Callable[[str], Path]) -> None:
    out = drill_bundle("cuda_illegal_address")
    rec, log = json.loads((out / "drill.json").read_text()), (out / "torchrun.log").read_text(
        errors="replace")
    assert "an illegal memory access was encountered" in log
    assert f" iteration {rec['facts']['last_iteration']:8d}/" in log
    assert CHILD_FAILED in log and ROOT_CAUSE in log


def test_cuda_drill_refused_without_a_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from traindoc.drills import DrillError, runner

    monkeypatch.setattr(runner, "cuda_devices", lambda python: [])
    monkeypatch.setattr(runner, "_find_python", lambda python: sys.executable)
    with pytest.raises(DrillError, match="CUDA GPU"):
        runner.run("cuda_oom", tmp_path / "b")
    assert not (tmp_path / "b").exists()  # refused before anything was written


@pytest.mark.drills
@needs_torch
def test_interrupt_cleans_up(tmp_path: Path) -> None:
    out = tmp_path / "b"
    env = dict(os.environ, PYTHONPATH=str(LIB))
    cli = subprocess.Popen(
        [sys.executable, "-m", "traindoc.drills", "hang", "--out", str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _leftovers(f"--fr-dir={out}"):
        time.sleep(0.2)
    assert _leftovers(f"--fr-dir={out}"), "workers never started"
    cli.send_signal(signal.SIGTERM)
    output, _ = cli.communicate(timeout=60)
    assert cli.returncode == 130, output
    assert not _leftovers(str(out))
