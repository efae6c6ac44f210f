"""Families read in round m (issue 26), on real lines or the corpus's own logs."""

from __future__ import annotations

from pathlib import Path

import traindoc
from traindoc.diagnose import deadlock, gpu_crash, loss_spike

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"


def _load(tmp_path: Path, text: str, name: str = "job.log") -> traindoc.Incident:
    log = tmp_path / name
    log.write_text(text)
    return traindoc.load(str(log))


def _log(tmp_path: Path, text: str, name: str = "job.log") -> Path:
    log = tmp_path / name
    log.write_text(text)
    return log


def _case(runbook: str, case: str) -> traindoc.Incident:
    return traindoc.load(str(CORPUS / runbook / case / "logs"))


def test_a_spike_that_recovered_before_the_run_broke_is_no_reason_to_keep_going() -> None:
    # imagenet18: three spikes that each came back, then NaN from epoch 5 to the end; the
    # verdict and the actions are the NaN's, never "keep training"
    r = loss_spike.diagnose(_case("loss_spike", "loss_spike-imagenet18-verbose"))
    assert r.verdict.startswith("The loss/grad norm became NaN at iteration 1725")
    ids = [a.id for a in r.actions]
    assert "rollback_nan" in ids and "keep_going" not in ids
    # LLaMA-Factory#4202: a spike, then a zero loss with a NaN gradient norm at the log's end
    r = loss_spike.diagnose(_case("loss_spike", "loss_spike-llamafactory-4202"))
    assert "keep training" not in r.verdict.lower()
    assert "keep_going" not in [a.id for a in r.actions]


def test_a_spike_that_recovered_in_a_run_that_went_on_still_says_keep_going() -> None:
    # scalingdown: a spike at 4 back by 22, and NaN lines from 34 that do not last to the end
    r = loss_spike.diagnose(_case("loss_spike", "loss_spike-scalingdown-training-log-nan-session"))
    assert r.facts["nan_iterations"] and "recovered by itself by iteration 22" in r.verdict
    assert "keep_going" in [a.id for a in r.actions]


def test_a_stackless_log_counts_the_world_it_states() -> None:
    # DLcomm's terminal output: one writer prints "[CONFIG] World Size : 8", no stacks, no ranks
    r = deadlock.diagnose(_case("deadlock", "deadlock-dlcomm-benchmark-all-collectives-nccl-8rank-healthy"))
    assert r.facts["processes_seen"] == 8 and r.facts["outlier_members"] == []


# NVIDIA resiliency extension's flight-recorder attribution (tests/attribution/unit/
# reference_outputs/lock_gil_2nd_reference.txt): one stuck collective per process group
NVRX = """PGID   | Process Group Desc        | Op Type    | Size                                 | Dtype    | Missing Ranks
73     | EXPERT_MODEL_PARALLEL_GROUP,0 | nccl:all_to_all | 4096x5120                                 | BFloat16 | 10
74     | EXPERT_MODEL_PARALLEL_GROUP,0 | nccl:all_to_all | 4096x5120                                 | BFloat16 | 15
"""


def test_nvrx_attribution_names_the_missing_ranks_of_every_group(tmp_path: Path) -> None:
    inc = _load(tmp_path, NVRX, "fr_attribution.txt")
    c = inc.collectives
    assert list(c["rank"]) == [10, 15] and set(c["state"]) == {"absent"}
    assert list(c["process_group"]) == ["73 (EXPERT_MODEL_PARALLEL_GROUP,0)",
                                        "74 (EXPERT_MODEL_PARALLEL_GROUP,0)"]
    assert deadlock.diagnose(inc).facts["outlier_members"] == [10, 15]
    # its "Completed Ranks" table names the ranks that finished: no row
    done = NVRX.replace("Missing Ranks", "Completed Ranks")
    assert not len(_load(tmp_path, done, "done.txt").collectives)


def test_a_launchers_traceback_is_no_snapshot_of_its_worker() -> None:
    # ultralytics#1662: the worker's Ctrl-C in DDP's _sync_buffers (a broadcast: a wait), then
    # torch.distributed.run's own traceback, cut after runpy's frame
    r = deadlock.diagnose(_case("deadlock", "deadlock-ultralytics-1662"))
    assert "_sync_buffers" in r.facts["majority_leaf"]
    assert "No hang" not in r.verdict and "snapshots" not in [f.id for f in r.findings]


# AndreiS22/Reproduce_GCD_LLM slurm-7170238.out (facebookresearch SymbolicMathematics' logger)
GCD = """Running SLURM prolog script on indigo54.cluster.local
0 - SLURM_JOB_NODELIST: indigo54
INFO - 03/11/25 12:39:30 - 0:00:47 -     200 -  256.73 equations/s -  4584.27 words/s - ARITHMETIC:  0.5819 - LR: 1.0000e-04
INFO - 03/11/25 12:39:50 - 0:01:07 -     400 -  314.97 equations/s -  5620.24 words/s - ARITHMETIC:  0.3646 - LR: 1.0000e-04
RuntimeError: masked_fill only supports boolean masks, but got dtype Byte
Running epilogue script on indigo54.
"""


def test_a_bare_step_after_facebooks_log_prefix_and_the_jobs_one_machine(tmp_path: Path) -> None:
    inc = _load(tmp_path, GCD, "slurm-7170238.out")
    assert list(inc.iterations["iteration"]) == [200, 400]
    f = gpu_crash.diagnose(inc).facts
    # the node list, the prolog's full name and the epilogue's short one are one machine
    assert f["failed_hosts"] == ["indigo54"] and f["last_iteration"] == 400


def test_mmengine_epochs_count_from_one_and_a_save_at_an_epoch_is_its_end() -> None:
    # FRNet's nohup log from epoch 13 on: "Epoch(train) [20][ 800/2901]" is step 19 x 2901 +
    # 800; "Saving checkpoint at 19 epochs" after "[19][2900/2901]" is step 19 x 2901; the
    # launcher's CalledProcessError names '--local_rank=1' as the process SIGKILL ended
    f = gpu_crash.diagnose(_case("gpu_crash", "gpu_crash-frnet-2gpu-sigkill-epoch20")).facts
    assert f["last_iteration"] == 19 * 2901 + 800
    assert f["last_checkpoint_iteration"] == 19 * 2901
    assert f["failed_ranks"] == [1]  # one machine, no layout stated: local rank 1 taken as 1


# jax-ml/jax#22747: XLA's NCCL failure and NCCL's own trace of it, which names the machine
JAX_NCCL = """user-G493-ZB1-AAP1-000:275204:275658 [4] NCCL INFO misc/socket.cc:666 -> 2
user-G493-ZB1-AAP1-000:275204:275658 [4] NCCL INFO init.cc:1641 -> 2
INTERNAL: external/xla/xla/service/gpu/nccl_utils.cc:305: NCCL operation ncclCommInitRank(&comm, nranks, id, rank) failed: unhandled system error (run with NCCL_DEBUG=INFO for details). Last NCCL warning(error) log entry (may be unrelated) 'socketTryAccept: Accept failed: Bad file descriptor'.
"""


def test_xla_names_the_nccl_call_and_nccls_trace_its_machine(tmp_path: Path) -> None:
    f = gpu_crash.diagnose(_load(tmp_path, JAX_NCCL)).facts
    assert f["error_kind"] == "nccl_error"
    assert f["error_message"].startswith("NCCL operation ncclCommInitRank(")
    assert f["failed_hosts"] == ["user-G493-ZB1-AAP1-000"]


def test_a_helper_steps_exit_before_a_run_that_finished_is_no_failure() -> None:
    # Fujitsu's MLPerf v4.0 LoRA job: "srun: error: mlperf-h100-0208: task 0: Exited with exit
    # code 1" from mlperf-sysjson.sh, then the 4-rank run to its run_stop and RESULT line
    f = gpu_crash.diagnose(_case(
        "gpu_crash", "gpu_crash-training-results-v4-0-fujitsu-lora-sysjson-srun-error-healthy")).facts
    assert f["error_kind"] is None and f["failed_ranks"] == [] and f["failed_hosts"] == []


# vllm-project/vllm-ascend#486: torch_npu's failed HcclAllreduce, then HCCL's socket timeout
HCCL_SOCKET = """[rank1]: RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS function error: HcclAllreduce, error code is 6
[rank1]: [ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call acl api failed.
[rank1]: EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did not send the data in time. Please check the reason for the rank being stuck
"""


def test_hccls_socket_timeout_is_a_collective_timeout(tmp_path: Path) -> None:
    for engine in ("plain", "fast"):
        c = traindoc.load(str(_log(tmp_path, HCCL_SOCKET)), engine=engine).collectives
        assert list(zip(c["rank"], c["op_type"], c["state"], strict=True)) == [
            (1, "ALLREDUCE", "timed_out")], engine


def test_rays_dead_actor_is_the_failure_where_nothing_else_is() -> None:
    # RL-Factory#8 (verl): the driver's ActorDiedError and the actor's details under it; the
    # worker "Zap04XWorkerDict_0:1" (placement group 0, rank 1) died without a word of its own
    f = gpu_crash.diagnose(_case("gpu_crash", "gpu_crash-rl-factory-8-verl-workerdict-0-1-actor-died")).facts
    assert f["failed_ranks"] == [1] and f["failed_hosts"] == ["10.164.37.106"]
    assert "The actor died unexpectedly" in f["error_message"]


def test_a_headed_numeric_tables_columns_are_read_by_their_names() -> None:
    # AWR's log.txt: "Iteration  Wall_Time  Samples  …  Critic_Loss  …  Actor_Loss  …": the
    # third column is the samples seen, no loss; with a critic's and an actor's loss and none
    # the run's, the steps alone (no 43-million "loss" spike at the end)
    inc = _case("loss_spike", "loss_spike-awr-20000-iters-healthy")
    assert inc.iterations["loss"].isna().all()
    r = loss_spike.diagnose(inc)
    assert r.facts["spikes"] == [] and r.facts["last_iteration"] == 19950
    assert "count steps to iteration 19950" in r.verdict



def test_appended_runs_that_start_from_epoch_one_again_are_no_batches() -> None:
    # Dual_D's twelve runs in one nohup file, each from "Epoch 001/100 | loss 10.9673 | …": one
    # line an epoch per run, the epoch coming back at each run; no batch count, no spike at the
    # restarts (the loss back at ~11 is a new model's)
    r = loss_spike.diagnose(_case("loss_spike", "loss_spike-dual-d-all-weather-12-runs-healthy"))
    assert r.facts["spikes"] == []


def test_an_epochs_train_seconds_are_its_time(tmp_path: Path) -> None:
    # gaggenwaschke/NoProp's log: "Epoch 01 loss 12.9351 | train 3.2s"
    row = _load(tmp_path, "Epoch 01 loss 12.9351 | train 3.2s\n"
                "Epoch 02 loss 3.9656 | train 3.0s\n").iterations.iloc[0]
    assert row["iteration"] == 1 and row["elapsed_s"] == 3.2


def test_lbanns_objective_function_is_its_epochs_loss(tmp_path: Path) -> None:
    # LLNL/LBANN's fmow ResNet-50 log: the epoch's training objective, then the validation's
    text = ("Model 0 training epoch 1 objective function : 2.23222\n"
            "Model 0 validation objective function : 2.69997\n"
            "Model 0 training epoch 2 objective function : 1.80915\n")
    for engine in ("plain", "fast"):
        it = traindoc.load(str(_log(tmp_path, text)), engine=engine).iterations
        assert list(it["iteration"]) == [1, 2] and list(it["loss"]) == [2.23222, 1.80915], engine


def test_sb3s_eval_table_takes_no_step_of_another_count() -> None:
    # Stable-Baselines3 PPO: each training table counts "iterations"; the evaluation table
    # after the last one has only "n_updates" (1460, ten a PPO iteration): no step 1460
    it = _case("loss_spike", "loss_spike-hierarchical-rl-robotaxi-ppo-sb3-train-out").iterations
    assert int(it["iteration"].max()) == 147


def test_a_traceback_the_log_ends_in_is_a_crash_not_a_hang() -> None:
    # Stable-Pix2Seq#14: 'Epoch: [0]  [1330/3696] …', then "Traceback (most recent call last):"
    # and frames down to "losses.backward()", where the post's log ends: Python prints that
    # header only for an exception, so the process raised (what, the log does not say)
    inc = _case("gpu_crash", "gpu_crash-stable-pix2seq-14")
    assert list(inc.stacks["state"]) == ["cut"]
    f = gpu_crash.diagnose(inc).facts
    assert f["error_kind"] == "python" and f["last_iteration"] == 1330
    assert f["error_message"].startswith("a traceback cut before its exception's line")
    assert deadlock.diagnose(inc).facts["outlier_members"] == []
    from traindoc.diagnose import triage
    assert triage.diagnose(inc).facts["cause"] == "gpu_crash"
