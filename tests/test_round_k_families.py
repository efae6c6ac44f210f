"""Families read in round k (issue 26), on real lines: a caught exception that recurs after the
run went on past it, a bare "total" as a step line's loss, a save of "models", an HF summary's
steps within the rounding of its rate, and a step printed before an HF dict."""

from __future__ import annotations

from pathlib import Path

import traindoc
from traindoc.diagnose import gpu_crash
from traindoc.parse.checkpoints import parse_checkpoint
from traindoc.parse.metric_lines import parse_line


def _load(tmp_path: Path, text: str, name: str = "job.log") -> traindoc.Incident:
    log = tmp_path / name
    log.write_text(text)
    return traindoc.load(str(log))


# yuzhaouoe/GUI-Cursor-Moving's verl agent loop (corpus
# gpu_crash-gui-cursor-verl-agentloop-parse-errors-healthy): a worker logs the exception it
# caught while parsing the policy's answer, every rollout, the last ones after the last step
CAUGHT = """(CursorLoopWorker pid=57714) ERROR:2026-03-26 21:59:41,526:Traceback (most recent call last):
(CursorLoopWorker pid=57714)   File "/mnt/ceph_rbd/GUI-Cursor-Moving/cursor/env_and_state.py", line 270, in _extract_action_and_update_cursor
(CursorLoopWorker pid=57714)     action, action_x, action_y = extractor(output_text)
(CursorLoopWorker pid=57714) TypeError: cannot unpack non-iterable NoneType object
(CursorLoopWorker pid=57714) ERROR:2026-03-26 21:59:41,526:Error extracting action for item 35532
(TaskRunner pid=38606) step:1 - actor/pg_loss:0.012 - actor/grad_norm:0.31 - training/global_step:1
(TaskRunner pid=38606) step:2 - actor/pg_loss:0.011 - actor/grad_norm:0.29 - training/global_step:2
(CursorLoopWorker pid=57716) ERROR:2026-03-26 22:35:41,526:Traceback (most recent call last):
(CursorLoopWorker pid=57716)   File "/mnt/ceph_rbd/GUI-Cursor-Moving/cursor/env_and_state.py", line 270, in _extract_action_and_update_cursor
(CursorLoopWorker pid=57716)     action, action_x, action_y = extractor(output_text)
(CursorLoopWorker pid=57716) TypeError: cannot unpack non-iterable NoneType object
(CursorLoopWorker pid=57716) ERROR:2026-03-26 22:35:41,526:Error extracting action for item 61154
"""


def test_a_caught_exception_that_recurs_is_no_failure(tmp_path: Path) -> None:
    facts = gpu_crash.report(gpu_crash.analyse(_load(tmp_path, CAUGHT))).facts
    assert facts["error_kind"] is None
    assert facts["last_iteration"] == 2


def test_the_same_exception_before_an_exit_is_the_failure(tmp_path: Path) -> None:
    died = CAUGHT + "E1106 22:35:50.000000 1 torch/distributed/elastic/multiprocessing/api.py:" \
        "882] failed (exitcode: 1) local_rank: 0 (pid: 57716) of binary: /usr/bin/python\n"
    facts = gpu_crash.report(gpu_crash.analyse(_load(tmp_path, died))).facts
    assert facts["error_kind"] == "python"


def test_a_bare_total_is_the_step_lines_loss() -> None:
    # gitAIPattern/fer-ssl logs/train.log: its per-batch line prints the summed loss as "total"
    row = parse_line("[epoch: 144/200, iter: 175/640] total: 1.013207 ")
    assert row is not None and row["iteration"] == 175 and row["loss"] == 1.013207
    # a total with a unit is a time, and a loss beside it wins
    row = parse_line("step 10 total: 3.2s loss: 2.0")
    assert row is not None and row["loss"] == 2.0
    assert parse_line("Self CPU time total: 2.804s") is None


def test_a_save_of_models_names_its_checkpoint() -> None:
    # LLaVA-Med's LoRA trainer (corpus gpu_crash-eso-llava-ds-lora-healthy)
    row = parse_checkpoint("save models to /date/jc/models/MedLLMs/LLaVA-Med/checkpoints/"
                           "240818e2-lora-llava-v1.6-vicuna-13b/checkpoint-900 ")
    assert row is not None and row["iteration"] == 900


def _hf_run(n: int, runtime: float, rate: str, prefix: str = "") -> str:
    lines = [f"{prefix(i) if callable(prefix) else ''}{{'loss': {2.0 - i / 1000:.4f}, "
             f"'learning_rate': 1e-05, 'epoch': {10 * i / n:.2f}}}" for i in range(1, n + 1)]
    lines.append(f"{{'train_runtime': {runtime}, 'train_samples_per_second': 2.553, "
                 f"'train_steps_per_second': {rate}, 'train_loss': 0.05, 'epoch': 10.0}}")
    return "\n".join(lines) + "\n"


def test_a_summary_rate_rounded_leaves_the_count_of_dicts(tmp_path: Path) -> None:
    # 11174.986 s at 0.081 steps/s is 900 to 911 steps: the 900 dicts, one a step, say which
    facts = gpu_crash.report(gpu_crash.analyse(_load(tmp_path, _hf_run(900, 11174.986,
                                                                       "0.081")))).facts
    assert facts["last_iteration"] == 900


def test_a_step_printed_before_a_dict_is_its_step(tmp_path: Path) -> None:
    # oobabooga/text-generation-webui's training callback, as a note quoted it (corpus
    # loss_spike-tgwebui-llama1b-lora-grad-norm-inf): "Step:    683 {'loss': …}"
    text = _hf_run(171, 13893.3078, "0.012", lambda i: f"Step:    {4 * i - 1:>4} ")
    inc = _load(tmp_path, text)
    assert gpu_crash.report(gpu_crash.analyse(inc)).facts["last_iteration"] == 683
