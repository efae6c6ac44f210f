"""Families read in round l (issue 26), on real lines: a loss of exactly 0 with a NaN gradient
norm, a metrics CSV under a log's name, GluonCV's epoch totals and a second launch in one log, a
launch that logs at another interval, Python's "Exception ignored in" tracebacks, Marian's own
host line, and a timeout's world size from the logs."""

from __future__ import annotations

from pathlib import Path

import traindoc
from traindoc.diagnose import gpu_crash, loss_spike, throughput, timeout

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"


def _load(tmp_path: Path, text: str, name: str = "job.log") -> traindoc.Incident:
    log = tmp_path / name
    log.write_text(text)
    return traindoc.load(str(log))


# hiyouga/LLaMA-Factory#4202: after a spike the loss reads 0.0 with a NaN gradient norm
ZERO_NAN = """{'loss': 3.5967, 'grad_norm': 7.328238010406494, 'learning_rate': 4.9997428980535714e-05, 'epoch': 0.01}
{'loss': 63.3672, 'grad_norm': nan, 'learning_rate': 4.999715123024551e-05, 'epoch': 0.02}
{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 4.999715123024551e-05, 'epoch': 0.02}
"""


def test_a_zero_loss_with_a_nan_gradient_measured_nothing(tmp_path: Path) -> None:
    facts = loss_spike.diagnose(_load(tmp_path, ZERO_NAN)).facts
    assert facts["zero_loss_from"] == 3
    # a loss that reaches 0 with a finite gradient norm, once at the end, is not enough
    healthy = ZERO_NAN.replace("'loss': 0.0, 'grad_norm': nan", "'loss': 0.0, 'grad_norm': 0.01")
    assert loss_spike.diagnose(_load(tmp_path, healthy, "b.log")).facts["zero_loss_from"] is None


def test_a_csv_logger_log_is_a_metrics_table(tmp_path: Path) -> None:
    # irfanet's Keras CSVLogger file (corpus loss_spike-irfanet-keras-csvlogger-appended-runs-healthy)
    text = ("epoch,acc,loss,val_acc,val_loss\n"
            "0,0.82398325219,0.492232147164,0.804403048315,0.552083199883\n"
            "1,0.839460870799,0.445733688112,0.833827264929,0.470656693007\n"
            "2,0.850163479408,0.412215844876,0.812870448671,0.515576797381\n")
    it = _load(tmp_path, text, "training_logs191017_5.log").iterations
    assert list(it["iteration"]) == [0, 1, 2] and it["loss"].iloc[2] == 0.412215844876


# dmlc/web-data's GluonCV logs: the epoch's batches after the batch ("/[0606]")
SLOWFAST = """Epoch[088] Batch [0049]/[0606]	Speed: 29.497151 samples/sec	 accuracy=42.562500	 loss=2.490627	 lr=0.583593
Epoch[088] Batch [0099]/[0606]	Speed: 40.934200 samples/sec	 accuracy=42.156250	 loss=2.512863	 lr=0.583327
Epoch[089] Batch [0049]/[0606]	Speed: 36.500330 samples/sec	 accuracy=43.281250	 loss=2.432839	 lr=0.580341
"""


def test_gluoncv_epochs_count_from_the_run_start(tmp_path: Path) -> None:
    it = _load(tmp_path, SLOWFAST).iterations
    assert list(it["iteration"]) == [88 * 606 + 49, 88 * 606 + 99, 89 * 606 + 49]
    assert it["total_iterations"].isna().all()  # (an epoch's batches: no plan of the run)


def test_an_epoch_that_goes_back_is_a_new_launch(tmp_path: Path) -> None:
    # GluonCV's simple-pose log: an 8-GPU run to epoch 139, then a 1-GPU run from epoch 0
    text = ("Epoch[139] Batch [119]\tSpeed: 2455.944085 samples/sec\tloss=0.000407\tlr=0.000080\n"
            "Epoch[139] Batch [139]\tSpeed: 2402.061984 samples/sec\tloss=0.000380\tlr=0.000080\n"
            "Epoch[0] Batch [99]\tSpeed: 535.683342 samples/sec\tloss=0.001323\tlr=0.001000\t"
            "heatmap_accuracy=0.008\n")
    it = _load(tmp_path, text).iterations
    assert list(it["iteration"]) == [119, 139, 99]


def test_a_second_launch_at_another_interval_is_not_a_drop() -> None:
    # the whole simple-pose log: ~2,050 samples/s on 8 GPUs, then ~850 on one, after a
    # second Namespace line; the second run logs every 100 batches, the first every 20
    case = CORPUS / "throughput" / "throughput-gluoncv-simple-pose-r50v1d-two-runs-not-a-drop"
    facts = throughput.diagnose(traindoc.load(str(case / "logs"))).facts
    assert facts["degraded"] is False and facts["change_iteration"] is None


# bigyanghimire/deepspeed-experiments' ulysses log (corpus
# gpu_crash-bigyang-ulysses-2node-800-iters-atexit-noise-healthy): DeepSpeed's Triton autotune
# cache races at exit; Python prints the atexit callback's exception and goes on
IGNORED = """0: Iteration 798: loss=5.7624
0: Iteration 799: loss=5.8401
0: final peak_mem=19.53 GB
0: === Summary over 790 iterations ===
0: Step time: 2.09s ± 0.01s (min=2.05s, max=2.15s)
1: Exception ignored in atexit callback: <function matmul_ext_update_autotune_table at 0x7fad296677e0>
1: Traceback (most recent call last):
1:   File "/home/bigyang/llm-training/DeepSpeed/deepspeed/ops/transformer/inference/triton/matmul_ext.py", line 105, in put
1:     os.replace(self.file_path + ".tmp", self.file_path)
1: FileNotFoundError: [Errno 2] No such file or directory: '/home/bigyang/.triton/autotune/Fp16Matmul_2d_kernel.pickle.tmp' -> '/home/bigyang/.triton/autotune/Fp16Matmul_2d_kernel.pickle'
"""


def test_an_exception_python_ignored_is_no_failure(tmp_path: Path) -> None:
    facts = gpu_crash.diagnose(_load(tmp_path, IGNORED)).facts
    assert facts["error_kind"] is None and facts["failed_ranks"] == []
    assert facts["last_iteration"] == 799
    raised = IGNORED.replace("Exception ignored in atexit callback: <function "
                             "matmul_ext_update_autotune_table at 0x7fad296677e0>\n", "")
    assert gpu_crash.diagnose(_load(tmp_path, raised, "b.log")).facts["error_kind"] == "python"


# cepin19/dp's Marian logs: the program names its machine beside its pid at start-up
MARIAN = """[2019-01-07 04:46:00] [marian] Marian v1.7.6 9cc5b17 2018-12-14 15:11:34 -0800
[2019-01-07 04:46:00] [marian] Running on spider3.lingea.cz as process 19132 with command line:
[2019-01-08 04:42:16] Ep. 3 : Up. 99500 : Sen. 37,412,931 : Cost 25.13078499 : Time 414.78s : 13257.96 words/s : L.r. 1.2030e-04
[2019-01-08 04:45:31] Error: CUDA error 4 'unspecified launch failure' - /home/big_maggie/usr/marian_spider/marian_1.7.6/marian-dev/src/tensors/gpu/cuda_helpers.h:45: cudaMemcpy(dest, start, (end - start) * sizeof(T), cudaMemcpyDefault)
"""


def test_marian_names_its_machine(tmp_path: Path) -> None:
    facts = gpu_crash.diagnose(_load(tmp_path, MARIAN)).facts
    assert facts["failed_hosts"] == ["spider3.lingea.cz"] and facts["error_kind"] == "cuda_error"


def test_the_world_size_from_nccls_communicator_makes_every_rank_stuck() -> None:
    # chtmp223/alignment-handbook llama_lora_25040931.out: four ranks, "nranks 4", all time
    # out in the first ALLREDUCE
    case = CORPUS / "timeout" / "timeout-alignment-handbook-llama-lora-25040931"
    facts = timeout.diagnose(traindoc.load(str(case / "logs"))).facts
    assert facts["pattern"] == "all_stuck"


def test_a_stated_world_names_the_silent_rank() -> None:
    # llama_lora_25023524.out: DeepSpeed's "world_size = 4"; ranks 1-3 time out in ALLREDUCE
    # #875 and torchrun's report follows; rank 0 printed nothing
    case = CORPUS / "timeout" / "timeout-alignment-handbook-llama-lora-25023524"
    facts = timeout.diagnose(traindoc.load(str(case / "logs"))).facts
    assert facts["lagging_ranks"] == [0] and facts["pattern"] == "straggler"


# yysijie/st-gcn's processor (a fork's committed log, corpus
# loss_spike-st-gcn-improved-nan-every-epoch-from-0): "Training epoch: N" then the epoch's
# mean loss on a line of its own, each under its own time stamp
STGCN = ("[03.24.23|13:31:31] Training epoch: 0\n[03.24.23|13:31:51] \tmean_loss: nan\n"
         "[03.24.23|13:31:51] Time consumption:\n[03.24.23|13:31:51] Done.\n"
         "[03.24.23|13:31:51] Training epoch: 1\n[03.24.23|13:32:11] \tmean_loss: nan\n")


def test_a_training_epochs_header_numbers_its_mean_loss(tmp_path: Path) -> None:
    facts = loss_spike.diagnose(_load(tmp_path, STGCN)).facts
    assert facts["nan_iterations"] == [0, 1] and facts["last_iteration"] == 1


def test_a_bracketed_step_of_a_total_leads_its_fields() -> None:
    # DA-AT-VFI's unified trainer (corpus loss_spike-da-at-vfi-unified-ssim-term-at-5000-healthy)
    from traindoc.parse.metric_lines import parse_line

    row = parse_line("[000500/50000] X4K    | loss 0.0488 | VRAM 9.8/15.9GB (62%) | GPU 0% | "
                     "3.04 it/s | ETA 271.3 min | batch 16")
    assert row is not None and (row["iteration"], row["total_iterations"]) == (500, 50000)
    assert row["loss"] == 0.0488


def test_a_rate_in_thousands_of_words_per_second() -> None:
    # dmlc/web-data's GluonNLP transformer log (corpus
    # throughput-gluonnlp-transformer-en-de-wmt14-4gpu-healthy)
    from traindoc.parse.metric_lines import parse_line

    row = parse_line("2018-06-25 19:23:08,412 - root - [Epoch 0 Batch 1600/34064] loss=9.9823, "
                     "ppl=21639.1107, throughput=60.65K wps, wc=6526.33K")
    assert row is not None and row["tokens_per_s"] == 60650.0 and row["iteration"] == 1600


def test_an_agent_losing_its_rendezvous_store_is_no_startup_timeout() -> None:
    # bigyanghimire/deepspeed-experiments' two-node run after its last step (corpus
    # timeout-deepspeed-experiments-grouped-16000-rdzv-teardown-healthy)
    from traindoc.parse.collectives import parse_rendezvous_timeout

    line = ("W0324 13:46:04.745000 441213 site-packages/torch/distributed/elastic/rendezvous/"
            "dynamic_rendezvous.py:1331] The node 'hercules.olympus.clemson.edu_441213_0' has "
            "failed to send a keep-alive heartbeat to the rendezvous '1265' due to an error of "
            "type RendezvousTimeoutError.")
    assert parse_rendezvous_timeout(line) is None
    assert parse_rendezvous_timeout(
        "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError") is not None


def test_a_barrier_wait_that_completed_is_no_hang(tmp_path: Path) -> None:
    # hpcaitech/OPT-Benchmark's ds_13b log (corpus gpu_crash-opt-benchmark-ds-13b-zero3-offload-healthy)
    text = ("08/17/2022 21:31:00 - INFO - torch.distributed.distributed_c10d - Waiting in store "
            "based barrier to initialize process group for rank: 1, key: store_based_barrier_key:2 "
            "(world_size=8, worker_count=7, timeout=0:30:00)\n"
            "08/17/2022 21:31:00 - INFO - torch.distributed.distributed_c10d - Added key: "
            "store_based_barrier_key:2 to store for rank: 2\n")
    done = ("08/17/2022 21:31:00 - INFO - torch.distributed.distributed_c10d - Rank 2: Completed "
            "store-based barrier for key:store_based_barrier_key:2 with 8 nodes.\n")
    waiting = _load(tmp_path, text).collectives
    assert (waiting["state"] == "started").sum() == 1
    assert not len(_load(tmp_path, text + done, "b.log").collectives)


def test_a_value_printed_as_a_tensors_repr() -> None:
    # PaddlePaddle/PaddleFleetX's GPT example, a committed workerlog.0 (corpus
    # gpu_crash-paddlefleetx-gpt-serial-sigterm-step301): the loss as a list of one numpy array
    from traindoc.parse.metric_lines import parse_line

    row = parse_line("step:  301 loss_print:  [array([9.164496], dtype=float32)]")
    assert row is not None and (row["iteration"], row["loss"]) == (301, 9.164496)


# ljm565/universal-llm-trainer's docs/bugs.md, its FSDP case (corpus
# gpu_crash-universal-llm-trainer-fsdp-min-params-illegal-access): C++'s terminate message has no
# rank; the same process's watchdog restates the error under its rank prefix
RESTATED = ("terminate called after throwing an instance of 'terminate called after throwing an instance of 'c10::Errorc10::Error'\n"
            "'\n"
            '  what():  CUDA error: an illegal memory access was encountered\n'
            '[rank1]:[E409 05:10:01.930967482 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered\n')


def test_an_error_restated_by_one_rank_is_that_ranks(tmp_path: Path) -> None:
    facts = gpu_crash.diagnose(_load(tmp_path, RESTATED)).facts
    assert facts["failed_ranks"] == [1] and facts["error_kind"] == "cuda_error"


def test_a_data_sets_map_bar_is_no_run_going_on_past_an_exception() -> None:
    # bigyanghimire/deepspeed-experiments' grouped ulysses run (corpus
    # gpu_crash-bigyang-grouped-ulysses-1355-2node-labels-valueerror): seven ranks raise the
    # same ValueError while the others' datasets "Map:" bars still move; no training step
    case = CORPUS / "gpu_crash" / "gpu_crash-bigyang-grouped-ulysses-1355-2node-labels-valueerror"
    facts = gpu_crash.diagnose(traindoc.load(str(case / "logs"))).facts
    assert "Columns ['labels'] not in the dataset" in facts["error_message"]


def test_torchtitans_validate_step_is_an_evaluation(tmp_path: Path) -> None:
    # QIU023/torchtitan_attention_residual's kd_student_eval log (corpus
    # gpu_crash-torchtitan-attnres-kd-student-eval-4rank-validation-oom)
    text = ("[rank0]:[titan] 2026-04-26 04:32:38,654 - root - INFO - \x1b[33mvalidate step:  5  "
            "\x1b[32mloss:  3.7874  \x1b[38;2;54;234;195mmemory: 30.50GiB(97.27%)  "
            "\x1b[34mtps: 8,143\x1b[39m\n")
    it = _load(tmp_path, text).iterations
    assert it["event"].tolist() == ["eval"] and it["eval_loss"].tolist() == [3.7874]
    assert it["loss"].isna().all()


def test_a_crashs_dumps_name_no_outlier() -> None:
    # mlcommons/submissions_algorithms' ogbg Shampoo log (corpus
    # deadlock-submissions-algorithms-ogbg-shampoo-s0-eight-aborts): eight "Fatal Python error:
    # Aborted" dumps inside JAX's backend_compile, differing below that leaf; nothing hangs
    from traindoc.diagnose import deadlock

    case = CORPUS / "deadlock" / "deadlock-submissions-algorithms-ogbg-shampoo-s0-eight-aborts"
    facts = deadlock.diagnose(traindoc.load(str(case / "logs"))).facts
    assert facts["outlier_members"] == [] and facts["processes_seen"] == 8


def test_launches_of_a_short_series() -> None:
    # a series of one or two points has no launch interval of its own to read (the first version
    # of the second-launch rule failed on handson-ml2#398's seven steps, run by run)
    import pandas as pd

    from traindoc.diagnose.throughput.series import launches

    for n in (1, 2, 3):
        s = pd.DataFrame({"iteration": [100 * (k + 1) for k in range(n)], "run": [0] * n})
        assert list(launches(s)) == [0] * n
