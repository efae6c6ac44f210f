"""Families read in round j (issue 26), on real lines: a record printed one key a line (the
min-decision-transformer family's logging blocks)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import traindoc
from traindoc.diagnose import gpu_crash, loss_spike

# ZhuangtianXu/Elastic-Decision-Mamba, wandb/run-20240426_230232-ablkasls/files/output.log
# (corpus throughput-elastic-decision-mamba-hopper-steady): its header's keys and values, then
# one block a logging call
VERTICAL = """max_train_iters:  500
num_updates_per_iter:  100
total updates:  50000
============================================================
start time: 24-04-26-23-02-38
============================================================
device set to: cuda
num of trajs: 2041
============================================================
time elapsed: 0:01:04
num of updates: 1000
ret loss: 3.30960
action loss: 0.25866
state loss: 0.14050
exp loss: 0.01254
============================================================
time elapsed: 0:02:01
num of updates: 2000
ret loss: 2.51256
action loss: 0.20117
state loss: 0.08374
exp loss: 0.00384
============================================================
time elapsed: 0:02:59
num of updates: 3000
ret loss: 2.31076
action loss: 0.17066
state loss: 0.06614
exp loss: 0.00238
============================================================
"""


def _incident(tmp_path: Path, text: str, name: str = "job.log") -> traindoc.Incident:
    log = tmp_path / name
    log.write_text(text)
    return traindoc.load(str(log))


def _iterations(tmp_path: Path, text: str) -> list[dict]:
    log = tmp_path / "output.log"
    log.write_text(text)
    df = traindoc.load(str(log)).tables["iterations"]
    return df[["iteration", "train_time_s", "loss"]].to_dict("records")


def test_a_record_of_one_key_a_line_is_one_step(tmp_path: Path) -> None:
    rows = _iterations(tmp_path, VERTICAL)
    assert [r["iteration"] for r in rows] == [1000, 2000, 3000]  # not the header's totals
    assert [r["train_time_s"] for r in rows] == [64, 121, 179]
    assert rows[0]["loss"] == pytest.approx(3.3096)


def test_a_record_ends_at_a_key_again(tmp_path: Path) -> None:
    # the same records with no rule between them (a fork that prints no "=" line)
    text = "\n".join(line for line in VERTICAL.splitlines() if not line.startswith("="))
    rows = _iterations(tmp_path, text)
    assert [(r["iteration"], r["train_time_s"]) for r in rows] == [(1000, 64), (2000, 121),
                                                                   (3000, 179)]


def test_a_step_over_one_value_is_no_vertical_record(tmp_path: Path) -> None:
    # fewer than VERTICAL_MIN_KEYS values besides the step: a header's step and its loss,
    # which the headed-step parser reads (or nothing), never a vertical record's row
    from traindoc.parse.metric_lines import VerticalRecordParser
    p = VerticalRecordParser()
    out = [r for t in ("step: 100", "loss: 0.5", "---") for r in p.feed(t)]
    assert out == []


# --- a step header with its fields between dashes, its stages' losses on the next line --------

def test_stage_losses_under_a_dashed_step_header(tmp_path: Path) -> None:
    # yaoqi-zd/FashionAI_KeyPoint_Detection_Challenge_Keras#2 (corpus
    # loss_spike-fashionai-cpm-2-stage-losses-nan)
    from traindoc.parse.metric_lines import _step, step_head
    header = "Step: 682/800000 ----- Cur_lr: 0.4000000 ----- Time: 0.82 sec."
    assert step_head(header) is not None
    log = tmp_path / "train.log"
    log.write_text(header + "\nS1 loss:     nan | S2 loss:     nan | S3 loss:     nan | S4 loss: "
                   "    nan | S5 loss:     nan | S6 loss:   25.47 | Total loss: nan\n")
    f = loss_spike.diagnose(traindoc.load(str(log))).facts
    assert f["nan_iterations"] == [682] and f["last_iteration"] == 682
    # a key that starts with "s" and a digit after a space is no duration after the step
    assert _step("step 682 S1 loss: 1.0")["n"] == "682"
    assert _step("Step: 12 s") is None and _step("Step: 88ms | Tot: 34s394ms") is None


# --- a step counted in thousands with a lower-case suffix --------------------------------------

def test_a_step_in_thousands_with_a_lower_case_k() -> None:
    # fatchord/WaveRNN#129 (its trainer's progress line, printed by every WaveRNN fork)
    from traindoc.parse.metric_lines import parse_line
    row = parse_line("| Epoch: 1516/2733 (359/366) | Loss: nan | 3.9 steps/s | Step: 569k | ")
    assert row is not None and row["iteration"] == 569000


# --- gpu_crash: which failure came first, and where ---------------------------------------------

# shiminzhang/llm-sat train_log.log (corpus gpu_crash-llm-sat-gptoss-dpo-rank0-nameerror-sigkill-
# root), shortened: rank 0's traceback three minutes before torchrun's record of rank 3's SIGKILL
LLM_SAT = """Traceback (most recent call last):
  File "/pscratch/sd/s/shimin/verltest/src/dpo.py", line 190, in setup_wandb_if_needed
    logger.warning("Wandb init failed: %s", exc)
NameError: name 'logger' is not defined
[rank0]: Traceback (most recent call last):
[rank0]:   File "/pscratch/sd/s/shimin/verltest/src/dpo.py", line 190, in setup_wandb_if_needed
[rank0]:     logger.warning("Wandb init failed: %s", exc)
[rank0]: NameError: name 'logger' is not defined
[rank0]:[W1013 15:59:28.073974083 ProcessGroupNCCL.cpp:1538] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources.
W1013 16:02:19.112000 641967 site-packages/torch/distributed/elastic/multiprocessing/api.py:900] Sending process 642033 closing signal SIGTERM
W1013 16:02:19.123000 641967 site-packages/torch/distributed/elastic/multiprocessing/api.py:900] Sending process 642034 closing signal SIGTERM
W1013 16:02:19.123000 641967 site-packages/torch/distributed/elastic/multiprocessing/api.py:900] Sending process 642035 closing signal SIGTERM
E1013 16:02:21.119000 641967 site-packages/torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -9) local_rank: 3 (pid: 642036) of binary: /pscratch/sd/s/shimin/.conda/envs/llmsat/bin/python3.10
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
=======================================================
src/dpo.py FAILED
-------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
-------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-10-13_16:02:19
  host      : nid008493-hsn0
  rank      : 3 (local_rank: 3)
  exitcode  : -9 (pid: 642036)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 642036
=======================================================
"""


def test_a_record_places_the_ranks_below_it_on_its_host(tmp_path: Path) -> None:
    # rank 3 with local rank 3 on nid008493-hsn0 puts ranks 0-3 on that machine; the first
    # failure itself is still the record's (no line of the traceback is timed: noticed, left)
    f = gpu_crash.diagnose(_incident(tmp_path, LLM_SAT)).facts
    from traindoc.diagnose.gpu_crash.events import _node_block_hosts
    ev = pd.DataFrame({"rank": [3, pd.NA], "local_rank": [3, pd.NA],
                       "host": ["nid008493-hsn0", None]})
    assert _node_block_hosts(ev) == {k: "nid008493-hsn0" for k in range(4)}
    assert f["failed_hosts"] == ["nid008493-hsn0"]


# sparticlesteve/nersc-pytorch-testing (corpus gpu_crash-nersc-perlmutter-ddp-ibv-create-cq),
# shortened: srun -l over eight ranks on two nodes; ranks 3 and 7 cannot create an InfiniBand
# completion queue, ranks 0 and 4 lose them ("Connection closed by remote peer")
NERSC = """3: Initialized host nid001028 rank 3 local-rank 3 size 8
7: Initialized host nid001029 rank 7 local-rank 3 size 8
0: Initialized host nid001028 rank 0 local-rank 0 size 8
4: Initialized host nid001029 rank 4 local-rank 0 size 8
3: nid001028:129497:129564 [3] misc/ibvwrap.cc:268 NCCL WARN Call to ibv_create_cq failed
7: nid001029:130778:130844 [3] misc/ibvwrap.cc:268 NCCL WARN Call to ibv_create_cq failed
3: RuntimeError: NCCL error in: /opt/conda/conda-bld/pytorch_1614378083779/work/torch/lib/c10d/ProcessGroupNCCL.cpp:825, unhandled system error, NCCL version 2.7.8
3: ncclSystemError: System call (socket, malloc, munmap, etc) failed.
7: RuntimeError: NCCL error in: /opt/conda/conda-bld/pytorch_1614378083779/work/torch/lib/c10d/ProcessGroupNCCL.cpp:825, unhandled system error, NCCL version 2.7.8
7: ncclSystemError: System call (socket, malloc, munmap, etc) failed.
0: nid001028:129494:129556 [0] include/socket.h:416 NCCL WARN Net : Connection closed by remote peer
0: RuntimeError: NCCL error in: /opt/conda/conda-bld/pytorch_1614378083779/work/torch/lib/c10d/ProcessGroupNCCL.cpp:825, unhandled system error, NCCL version 2.7.8
0: ncclSystemError: System call (socket, malloc, munmap, etc) failed.
4: nid001029:130775:130842 [0] include/socket.h:416 NCCL WARN Net : Connection closed by remote peer
4: RuntimeError: NCCL error in: /opt/conda/conda-bld/pytorch_1614378083779/work/torch/lib/c10d/ProcessGroupNCCL.cpp:825, unhandled system error, NCCL version 2.7.8
4: ncclSystemError: System call (socket, malloc, munmap, etc) failed.
srun: error: nid001029: task 7: Exited with exit code 1
srun: error: nid001028: task 3: Exited with exit code 1
srun: error: nid001029: task 4: Exited with exit code 1
srun: error: nid001028: task 0: Exited with exit code 1
"""


def test_an_nccl_warn_line_keeps_its_srun_task(tmp_path: Path) -> None:
    errors = _incident(tmp_path, NERSC).tables["errors"]
    warn = errors[errors["code"] == "nccl_warn"]
    assert list(warn["host"]) == ["nid001028", "nid001029"] and list(warn["task"]) == [3, 7]


def test_a_rank_that_lost_its_peer_is_no_first_failure(tmp_path: Path) -> None:
    f = gpu_crash.diagnose(_incident(tmp_path, NERSC)).facts
    assert f["failed_ranks"] == [3, 7] and f["failed_hosts"] == ["nid001028", "nid001029"]


def test_a_ray_task_error_places_its_traceback(tmp_path: Path) -> None:
    # ninamiolane/vaetree (corpus gpu_crash-vaetree-lsf-ray-tune-trial-error), Ray 0.7 under LSF
    text = """2019-10-31 14:34:49,149	ERROR trial_runner.py:569 -- Error processing event.
Traceback (most recent call last):
  File "/usr/local/lib/python3.5/dist-packages/ray/worker.py", line 2121, in get
    raise value.as_instanceof_cause()
ray.exceptions.RayTaskError(RuntimeError): \x1b[36mray_Train:train()\x1b[39m (pid=8861, host=cryoem-gpu50)
  File "ray_pipeline.py", line 445, in _test
    mu, logvar = encoder(batch_data)
RuntimeError: Expected 4-dimensional input for 4-dimensional weight [64, 1, 4, 4], but got 3-dimensional input of size [1, 128, 128] instead
"""
    f = gpu_crash.diagnose(_incident(tmp_path, text)).facts
    assert f["failed_hosts"] == ["cryoem-gpu50"] and f["error_kind"] == "python"
    assert "Expected 4-dimensional input" in f["error_message"]


def test_a_bracket_of_keys_and_a_bracket_of_values() -> None:
    # erikdengerud/GPTime-Series (corpus gpu_crash-gptime-idun-makedirs-after-200-epochs)
    from traindoc.parse.metric_lines import parse_line
    row = parse_line("2021-08-08 15:47:42,748 - GPTime.model.train - INFO - Epoch 200   "
                     "[Avg. Loss, Loss]: [6.0864, 6.0953], 0")
    assert row is not None and row["iteration"] == 200 and row["loss"] == pytest.approx(6.0864)
    from traindoc.parse.metric_lines import _unzipped
    assert _unzipped("step 5 [loss, acc]: [1.0, 2.0, 3.0]") == "step 5 [loss, acc]: [1.0, 2.0, 3.0]"


def test_a_wandb_summary_counts_by_its_trainer_step() -> None:
    # fpt-vvu/ViVidBot wandb-summary.json (corpus gpu_crash-vividbot-phogpt4b-deepspeed-4090-
    # oom-step1): W&B's own "_step" counts log calls; "train/global_step" is the step
    from traindoc.parse.metric_lines import parse_line
    row = parse_line('{"train/loss": 9.6875, "train/grad_norm": 109.4695816040039, '
                     '"train/learning_rate": 2.7464982147761607e-07, "train/epoch": '
                     '4.119786924620259e-06, "train/global_step": 1, "_timestamp": '
                     '1723045197.559875, "_runtime": 22.456737995147705, "_step": 0}')
    assert row is not None and row["iteration"] == 1 and row["loss"] == pytest.approx(9.6875)


def test_a_setup_bar_is_no_training_rate(tmp_path: Path) -> None:
    # stark-sim/npu_train (corpus timeout-npu-train-tp-moe-4card-hccl-smoke-healthy): four ranks'
    # "Loading checkpoint shards" bars on one line, then two steps with no rate of their own
    from traindoc.diagnose import throughput
    text = ("Loading checkpoint shards:  25%|██▌       | 1/4 [00:16<00:50, 16.99s/it]"
            "Loading checkpoint shards:  25%|██▌       | 1/4 [00:18<00:56, 18.74s/it]\n"
            "Loading checkpoint shards:  50%|█████     | 2/4 [00:35<00:35, 17.60s/it]"
            "Loading checkpoint shards:  50%|█████     | 2/4 [00:54<00:55, 27.57s/it]\n"
            "Loading checkpoint shards: 100%|██████████| 4/4 [01:10<00:00, 16.77s/it]"
            "Loading checkpoint shards: 100%|██████████| 4/4 [01:10<00:00, 29.77s/it]\n"
            "Step 1/2 | Loss: 18.5557 | Aux: 0.000000 | LR: 4.00e-05 | Tokens/sec: 2\n")
    f = throughput.diagnose(_incident(tmp_path, text)).facts
    assert f["metric"] != "s_per_iteration" and not f["degraded"]


@pytest.mark.parametrize("line, code", [
    # itssshikhar/parameter-golf (corpus gpu_crash-pgolf-qat-8rank-dynamo-recompile-limit-at-val)
    ("torch._dynamo.exc.FailOnRecompileLimitHit: recompile_limit reached with fullgraph=True. "
     "Excessive recompilations can degrade performance", "torch._dynamo.exc.FailOnRecompileLimitHit"),
    # rbitr/parameter-golf (corpus gpu_crash-pgolf-8rank-gptq-cholesky-after-collapse)
    ("torch._C._LinAlgError: linalg.cholesky: The factorization could not be completed because "
     "the input is not positive-definite (the leading minor of order 2 is not positive-definite).",
     "torch._C._LinAlgError"),
])
def test_an_exception_class_of_an_exceptions_module_or_a_private_one(line: str, code: str) -> None:
    from traindoc.parse.errors import parse_error
    row = parse_error(line)
    assert row is not None and row["kind"] == "python" and row["code"] == code


def test_a_loss_scale_driven_to_zero_draws_without_a_log_axis() -> None:
    # ymcui/Chinese-LLaMA-Alpaca-2#97 (corpus loss_spike-chinese-llama-alpaca-2-97-scale-zero-
    # then-traceback): "Attempted loss scale: 0, reducing to 0" on every skipped step
    import warnings

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from traindoc import plots
    series = pd.DataFrame({"iteration": [94, 95], "loss": [float("nan")] * 2,
                           "grad_norm": [float("nan")] * 2, "loss_scale": [0.0, 0.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plots.loss_spike_curves(series, skipped_iterations=[94, 95])
        FigureCanvasAgg(fig).draw()
    assert fig.axes[0].get_yscale() == "linear"
