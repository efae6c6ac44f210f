"""What the analyses ask of an iterations row's text, stated as columns (``traindoc.linefacts``):
each fact from a real line, the same through both engines and the bulk lane's shapes, and no
analysis of the iterations table reading ``line`` for it (issue 29, item 2)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import traindoc
from traindoc.linefacts import FACT_COLUMNS, line_facts, wording_id
from traindoc.schema import SCHEMAS, frame

# NVIDIA/Megatron-LM's train line (megatron/training/training.py training_log), as in
# tests/test_cluster.py and tests/test_drills.py
MEGATRON = ("[2024-11-08 01:00:01] iteration        1/  100000 | consumed samples:         2048 | "
            "elapsed time per iteration (ms): 2011.3 | learning rate: 1.500000E-04 | global "
            "batch size:  2048 | lm loss: 2.499000E+00 | loss scale: 1.0 | grad norm: 0.213 | "
            "number of skipped iterations:   0 | number of nan iterations:   0 |")

LINES = [
    # (line, event, the facts it states, where it comes from)
    (MEGATRON, None, {"megatron_counters": True}, "NVIDIA/Megatron-LM training_log"),
    # bcmi/GPSDiffusion-Object-Shadow-Generation-SDXL#18 (tests/test_loss_spike_families.py)
    ("Steps:   2%|\u258f         | 1299/82400 [31:29<30:59:03,  1.38s/it, loss=nan, lr=1e-5]",
     None, {"nan_text": True}, "bcmi/GPSDiffusion-Object-Shadow-Generation-SDXL#18"),
    ("Loss is nan, stopping training", None, {"fatal_nan": True}, "Intellindust-AI-Lab/DEIM#96"),
    ("AssertionError: Rank 3: found NaN in local forward loss calculation. Device: 3, node: "
     "gpu-node-12", None, {"fatal_nan": True}, "NVIDIA/Megatron-LM pretrain_gpt.py"),
    # HF Trainer's log dict without a step (tests/test_iterations.py)
    ("{'loss': 0.4512, 'grad_norm': 1.23, 'learning_rate': 4.5e-05, 'epoch': 0.51}", None,
     {"hf_dict": True}, "huggingface/transformers Trainer.log"),
    # bigscience-workshop/bigscience experiments/gpt2-hf-ds/hf_ds_gpt2_base_n4-1832555.out
    ("{'train_runtime': 919.097, 'train_samples_per_second': 1.088, 'train_steps_per_second': "
     "0.017, 'epoch': 1.0}", "train_summary",
     {"hf_dict": True, "summary_steps": 919.097 * 0.017, "summary_steps_err": 919.097 * 0.0005},
     "bigscience-workshop/bigscience"),
    # a dict that names its step is no stepless dict (ms-swift's 'global_step/max_steps')
    ("{'loss': 1.2, 'learning_rate': 1e-05, 'epoch': 0.1, 'global_step/max_steps': '57/176'}",
     None, {}, "modelscope/ms-swift"),
]


@pytest.mark.parametrize(("line", "event", "want", "where"), LINES)
def test_line_facts_of_real_lines(line: str, event: str | None, want: dict, where: str) -> None:
    got = line_facts(line, event)
    floats = ("summary_steps", "summary_steps_err")
    assert {k: v for k, v in got.items() if k not in floats} == {
        k: v for k, v in want.items() if k not in floats}, where
    for k in floats:
        assert got.get(k) == pytest.approx(want.get(k)), where


def test_wording_ignores_numbers_only() -> None:
    # 1025378573/T5-Finetune train.log (tests/test_step_line_families.py): batches and the
    # epoch's summary in another wording
    assert wording_id("Epoch 1 - Batch loss: 12.1336") == wording_id("Epoch 2 - Batch loss: 9.5")
    assert wording_id("Epoch 1 - Batch loss: 12.1336") != wording_id(
        "Epoch 1 - Average Train Loss: 1.6334")
    assert line_facts("Epoch 1 - Batch loss: 12.1336", "epoch")["wording"] == wording_id(
        "Epoch 7 - Batch loss: 1")


def test_the_columns_are_in_the_schema_and_hold_nothing_where_no_line_says_them() -> None:
    assert set(FACT_COLUMNS) <= set(SCHEMAS["iterations"])
    df = frame("iterations", [{"iteration": i, "loss": 1.0, "source": f"a.log:{i}",
                               "line": f"step {i} loss 1.0"} for i in range(100)])
    for col in FACT_COLUMNS:
        assert df[col].isna().all()
        assert df[col].dtype == SCHEMAS["iterations"][col]


def test_a_row_without_a_line_keeps_its_own_facts() -> None:
    df = frame("iterations", [{"iteration": 1, "nan_text": True},
                              {"iteration": 2, "line": "loss: nan"}])
    assert list(df["nan_text"]) == [True, True]


@pytest.mark.parametrize("bulk", ["1", "0"])
def test_the_bulk_lane_states_what_the_per_line_path_states(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bulk: str) -> None:
    monkeypatch.setenv("TRAINDOC_BULK", bulk)
    lines = [MEGATRON.replace("iteration        1/", f"iteration {i:8d}/") for i in range(1, 40)]
    (tmp_path / "a.log").write_text("\n".join(lines) + "\n")
    it = traindoc.load(tmp_path / "a.log").iterations
    want = pd.DataFrame([line_facts(t) for t in it["line"]]).reindex(columns=FACT_COLUMNS)
    for col in FACT_COLUMNS:
        assert list(it[col].astype(object).where(it[col].notna(), None)) == list(
            want[col].astype(object).where(want[col].notna(), None)), col
    assert it["megatron_counters"].all()


def test_no_analysis_reads_the_iterations_line_for_a_pattern() -> None:
    """The patterns live in ``linefacts`` alone: the analyses read the columns."""
    root = Path(traindoc.__file__).parent
    for name in ("HF_STEPLESS_DICT_RE", "HF_SUMMARY_STEPS_RE", "MEGATRON_COUNTERS_RE",
                 "FATAL_NAN_RE", "WORDING_DIGITS_RE"):
        users = [p.relative_to(root).as_posix() for p in root.rglob("*.py")
                 if f"{name}." in p.read_text(encoding="utf-8")]
        assert users == ["linefacts.py"], (name, users)
