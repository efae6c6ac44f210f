"""Families read in round n (issue 26), on real lines or the corpus's own logs."""

from __future__ import annotations

from pathlib import Path

import pytest

import traindoc
from test_round_m_families import _case  # the corpus case's own logs
from traindoc.diagnose import gpu_crash, throughput, timeout


def _load(tmp_path: Path, text: str, engine: str = "auto") -> traindoc.Incident:
    log = tmp_path / "job.log"
    log.write_text(text)
    return traindoc.load(str(log), engine=engine)


# PaddlePaddle's hapi Model.fit under Keras's own heading (Paddle-CheXNet's finetune.log)
HAPI = ("    Epoch 1/10\n"
        "    step  10/614 - loss: 0.1195 - AUROC_Atelectasis: 0.8004 - 3s/step\n"
        "    step  20/614 - loss: 0.1434 - AUROC_Atelectasis: 0.8199 - 3s/step\n"
        "    step  30/614 - loss: 0.1305 - AUROC_Atelectasis: 0.8146 - 3s/step\n"
        "    Eval begin...\n"
        "    step 10/88 - loss: 0.1258 - AUROC_Atelectasis: 0.8328 - 1s/step\n"
        "    Eval samples: 11219\n"
        "    Epoch 2/10\n"
        "    step  10/614 - loss: 0.1275 - AUROC_Atelectasis: 0.8636 - 3s/step\n")
# Informer's loop (mindspore-courses/competition ModelRain's train0718.txt)
INFORMER = ("\titers: 100, epoch: 1 | loss: 0.0412561\n"
            "\tspeed: 0.2843s/iter; left time: 19970.3128s\n"
            "\titers: 200, epoch: 1 | loss: 0.0371107\n"
            "\tspeed: 0.2666s/iter; left time: 18680.4594s\n")


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_paddles_hapi_steps_under_a_keras_heading_are_read(tmp_path: Path, engine: str) -> None:
    it = _load(tmp_path, HAPI, engine).iterations
    assert it["iteration"].tolist() == [10, 20, 30, 10, 10]
    assert it["epoch"].tolist() == [1.0, 1.0, 1.0, 1.0, 2.0]
    assert it["event"].isna().tolist() == [True, True, True, False, True]  # the eval's step
    assert it["elapsed_s"].tolist()[:3] == [3.0, 3.0, 3.0] and it["loss"].iloc[0] == 0.1195


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_informers_pace_line_is_its_step_lines(tmp_path: Path, engine: str) -> None:
    it = _load(tmp_path, INFORMER, engine).iterations
    assert it["iteration"].tolist() == [100, 200]
    assert it["elapsed_s"].tolist() == [0.2843, 0.2666]
    assert it["loss"].tolist() == [0.0412561, 0.0371107]


def test_a_step_lines_seconds_since_the_start_are_a_clock() -> None:
    # tiny-shrek's pretrain log: "iter   1400 | loss 0.9925 | lr 4.78e-04 | 245s"
    r = throughput.diagnose(_case(
        "throughput", "throughput-tiny-shrek-pretrain-l4-elapsed-seconds-steady"))
    assert 0.13 <= r.facts["baseline"] <= 0.16 and r.facts["degraded"] is False


def test_the_inner_of_nested_bars_times_the_steps() -> None:
    # pytorch-transformers' trange of epochs over each epoch's "Iteration" bar: the epoch bar's
    # 12833 s/it is an epoch's; the step bar's count goes on across epochs
    r = throughput.diagnose(_case(
        "throughput", "throughput-bert-qa-cpu-5-epochs-step-time-doubles"))
    assert 24.8 <= r.facts["baseline"] <= 25.8 and 2295 <= r.facts["change_iteration"] <= 2297
    # YOLO's epoch bar starts again each epoch, its val bar after it: no nesting
    r = throughput.diagnose(_case("throughput", "throughput-ultralytics-7618"))
    assert 0.32 <= r.facts["baseline"] <= 0.34


def test_threads_printing_into_each_other_are_no_failure_of_the_process() -> None:
    # STTN's convlstm.out: three tensorboardX writer threads' 'OSError: handle is closed'
    # interleaved line by line, then mp.spawn's traceback of rank 0's RuntimeError
    r = gpu_crash.diagnose(_case(
        "gpu_crash", "gpu_crash-sttn-convlstm-spawn-gait-eval-permute-step2000"))
    assert r.facts["failed_ranks"] == [0]
    assert r.facts["error_message"].startswith("RuntimeError: permute(sparse_coo)")


def test_rays_dead_actor_with_blank_indented_details_names_its_machine() -> None:
    # Agent-R1#33: verl's TaskRunner died, its details indented by blanks; no other cause
    r = gpu_crash.diagnose(_case("gpu_crash", "gpu_crash-agent-r1-33"))
    assert r.facts["failed_hosts"] == ["10.44.139.116"] and r.facts["error_kind"] == "signal"


def test_kaldis_run_pl_header_names_the_machine() -> None:
    # hexin's AVSE_Journal: "# Started at Tue Oct 22 09:31:35 +08 2024 on node09"
    r = gpu_crash.diagnose(_case(
        "gpu_crash", "gpu_crash-avse-journal-lightning-2gpu-concat-size-mismatch"))
    assert r.facts["failed_hosts"] == ["node09"]


def test_ranks_waiting_on_the_monitored_barriers_monitor_name_no_late_rank() -> None:
    # CosyVoice#1727: ranks 5-7 timed out waiting for rank 0; rank 0's own log is not shown
    r = timeout.diagnose(_case("timeout", "timeout-cosyvoice-1727"))
    assert r.facts["timed_out_ranks"] == [5, 6, 7] and r.facts["lagging_ranks"] == []
    assert r.facts["pattern"] == "unknown"


def test_a_loss_logged_at_one_batch_of_each_epoch_counts_epochs() -> None:
    # unetpp4hsi: "[train] epoch:162 iter:0/18 0.00% lr:0.000191 loss:0.450794 ETA:0.0min"
    from traindoc.diagnose import loss_spike

    r = loss_spike.diagnose(_case("loss_spike", "loss_spike-unetpp4hsi-sgdr-164-epochs-healthy"))
    assert r.facts["last_iteration"] == 163 and r.facts["spikes"] == []


def test_nccl_trace_calls_of_several_communicators_are_no_one_counter() -> None:
    # Timez-zx/nccl-tests' nccl-fault.log: one process, a communicator per GPU and test, every
    # call traced "AllReduce: opCount 0 … comm 0x55d5f5bca580 [nranks=2]": no rank is behind
    from traindoc.diagnose import deadlock, triage

    inc = _case("gpu_crash", "gpu_crash-timez-nccl-tests-topo-fail-allreduce-healthy")
    assert deadlock.diagnose(inc).facts["first_mismatch"] is None
    assert triage.diagnose(inc).facts["classes"] == []


def test_a_comparison_of_two_measures_is_no_perplexity() -> None:
    # nips-specquant: "Steps: 55, Measured: 13, Rhos: {'accept_vs_ppl': 'nan', …}" is no NaN loss
    from traindoc.parse.metric_lines import parse_line

    row = parse_line("2026-04-20 01:24:05,855 INFO   Steps: 55, Measured: 13, Rhos: "
                     "{'accept_vs_ppl': 'nan', 'accept_vs_attn': 'nan', 'ppl_vs_attn': '-0.010'}")
    assert row is None or row.get("loss") is None
