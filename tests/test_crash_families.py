"""gpu_crash and timeout families on real lines (issue 26, round three): each family with its
corpus instance and at least one more real line from another source."""

from __future__ import annotations

from pathlib import Path

import pytest

import traindoc
from traindoc.diagnose import gpu_crash


def _facts(tmp_path: Path, text: str, name: str = "job.log") -> dict:
    log = tmp_path / name
    log.write_text(text)
    return gpu_crash.diagnose(traindoc.load(str(log))).facts


# --- a Python exception is the error when torchrun only says "exitcode: 1" -------------------

TORCHRUN_EXIT_1 = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) "
                   "local_rank: {lr} (pid: {pid}) of binary: /opt/conda/bin/python\n")


@pytest.mark.parametrize("error, expected", [
    # THUDM/GLM-130B logs/2022.09.25-16:50:29.log (corpus gpu_crash-glm-130b-…-165029)
    ("ZeroDivisionError: division by zero", "ZeroDivisionError"),
    # THUDM/GLM-130B logs/2022.09.25-16:57:44.log
    ('RuntimeError: mask.size(2) == query_seq_len INTERNAL ASSERT FAILED at '
     '"csrc/megatron/scaled_masked_softmax_cuda.cu":51, please report a bug to PyTorch. ',
     "INTERNAL ASSERT FAILED"),
    # yangjianxin1/Firefly#32: a tokenizer's JSON error under a rich traceback
    ("Exception: expected value at line 1 column 1", "expected value at line 1 column 1"),
])
def test_the_workers_exception_is_the_message_of_an_exit_1(tmp_path: Path, error: str,
                                                           expected: str) -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/work/train.py", line 67, in <module>\n'
            "    main()\n"
            f"{error}\n" + TORCHRUN_EXIT_1.format(lr=0, pid=24024))
    f = _facts(tmp_path, text)
    assert f["error_kind"] == "python"
    assert expected in f["error_message"]


def test_a_peers_exception_does_not_name_the_exit(tmp_path: Path) -> None:
    """A DistBackendError is what a rank saw of a peer, not its own error: the exit stays."""
    text = ("torch.distributed.DistBackendError: NCCL communicator was aborted on rank 0.\n"
            + TORCHRUN_EXIT_1.format(lr=0, pid=7))
    assert "DistBackendError" not in (_facts(tmp_path, text)["error_message"] or "")
