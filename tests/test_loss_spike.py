"""traindoc.diagnose.loss_spike on the seed, the drill, a real W&B export and synthetic curves."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traindoc
from conftest import DATA
from traindoc import Incident
from traindoc.diagnose import loss_spike as ls
from traindoc.diagnose.loss_spike import detect as ls_detect
from traindoc.diagnose.loss_spike import series as ls_series
from traindoc.diagnose.loss_spike.report import spikes_table

GBS = 2048


def megatron(it: int, loss: float | str, gn: float | None = None, *, samples: int | None = None,
             scale: float | None = None, skipped: int = 0, nan: int = 0,
             lr: float = 6e-5) -> str:
    """A Megatron-DeepSpeed iteration line, fields as BigScience's fp16 104B log printed them:
    ``lm loss: 2.898812E+00 | loss scale: 4096.0 | grad norm: 2553.971 | num zeros: 0.0 |``."""
    samples = samples if samples is not None else it * GBS
    lv = loss if isinstance(loss, str) else f"{loss:.6E}"
    return (f"[default7]: iteration {it:>8d}/  159576 | consumed samples: {samples:>12d} | "
            f"consumed tokens: {samples * 2048:>13d} | elapsed time per iteration (ms): 255453.3 "
            f"| learning rate: {lr:.3E} | global batch size: {GBS:>5d} | lm loss: {lv} |"
            + (f" loss scale: {scale:.1f} |" if scale is not None else "")
            + (f" grad norm: {gn:.3f} |" if gn is not None else "")
            + f" num zeros: 0.0 | number of skipped iterations: {skipped:>3d} | number of nan "
            f"iterations: {nan:>3d} |\n")


def load_lines(tmp_path: Path, lines: list[str]) -> Incident:
    p = tmp_path / "main_log.txt"
    p.write_text("".join(lines))
    return traindoc.load(p)


def rows_incident(loss: np.ndarray, grad: np.ndarray | None = None, start: int = 1,
                  **extra: np.ndarray) -> Incident:
    rows = []
    for k, v in enumerate(loss):
        r = {"iteration": start + k, "loss": float(v), "consumed_samples": (start + k) * GBS,
             "global_batch_size": GBS, "source": f"synthetic:{k + 1}", "line": f"step {start + k}"}
        if grad is not None:
            r["grad_norm"] = float(grad[k])
        for name, arr in extra.items():
            r[name] = arr[k]
        rows.append(r)
    return Incident.from_rows({"iterations": rows}, account={"files": 1, "paths": ["synthetic"]})


def falling(n: int, noise: float, seed: int, floor: float = 2.0, amp: float = 8.0,
            tau: float = 300.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return (floor + amp * np.exp(-t / tau)) * (1 + noise * rng.standard_normal(n))


def grads(n: int, seed: int) -> np.ndarray:
    return 0.3 * np.exp(0.1 * np.random.default_rng(seed + 100).standard_normal(n))


# -- the seed ---------------------------------------------------------------------------------
def test_bloom_seed() -> None:
    r = ls.diagnose(traindoc.load(DATA / "loss_spike" / "bloom_seed"))
    f = r.facts
    assert set(ls.FACT_KEYS) <= set(f)
    assert len(f["spikes"]) == 1
    sp = f["spikes"][0]
    assert (sp["peak_loss"], sp["peak_iteration"], sp["peak_grad_norm"]) == (5.098124, 31219, 960.351)
    assert sp["recovered_iteration"] is not None and sp["recovered_iteration"] <= 31250
    assert f["grad_norm_leads"] is True
    assert sp["grad_norm_start_iteration"] == 31215 < sp["start_iteration"] == 31216
    assert sp["data_window"]["samples"] == [47768496, 47778736]  # 5 batches of 2048
    assert f["nan_iterations"] == [] and f["skipped_iterations"] == []
    assert f["rollback_iteration"] is None  # it recovered: no rollback
    # issue 15.4: the recovery sits in a gap (31223-31249 missing) at the log's end: likely,
    # not seen — medium, and the verdict says what to confirm
    assert "keep training" in r.verdict and r.confidence == "medium"
    assert "31223–31249 are missing" in r.verdict and "confirm" in r.verdict
    assert r.actions[0].id == "keep_going"
    ids = {x.id for x in r.findings}
    assert {"grad_norm_leads", "log_gap_31216", "data_window"} <= ids
    lead = next(x for x in r.findings if x.id == "grad_norm_leads")
    assert "0.242 → 0.947 → 2.39 → 15.89 → 145.1 → 960.4" in lead.title


def test_bloom_seed_names_the_checkpoint_to_keep() -> None:
    r = ls.diagnose(traindoc.load(DATA / "loss_spike" / "bloom_seed"), checkpoint_interval=100)
    assert "global_step31200" in r.actions[0].how
    assert r.facts["rollback_iteration"] is None


# -- curves with no spike ---------------------------------------------------------------------
@pytest.mark.parametrize("noise", [0.0, 0.005, 0.02, 0.05])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_smooth_falling_curve_has_no_spike(noise: float, seed: int) -> None:
    n = 2000
    r = ls.diagnose(rows_incident(falling(n, noise, seed), grads(n, seed)))
    assert r.facts["spikes"] == []
    assert r.facts["rollback_iteration"] is None
    assert r.verdict.startswith("No loss spike")
    assert r.actions[0].id == "keep_going"


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), noise=st.floats(0.0, 0.03), tau=st.floats(20, 2000),
       floor=st.floats(0.5, 5.0), n=st.integers(5, 600))
def test_no_spike_on_any_noisy_decay(seed: int, noise: float, tau: float, floor: float,
                                     n: int) -> None:
    loss = falling(n, noise, seed, floor=floor, tau=tau)
    assert ls_detect.find_spikes(ls_series.series(rows_incident(loss, grads(n, seed))))[0] == []


# -- known spikes ------------------------------------------------------------------------------
def spiky(n: int = 1500, at: int = 1200, lead: int = 3, seed: int = 0) -> tuple[np.ndarray, ...]:
    loss, grad = falling(n, 0.01, seed), grads(n, seed)
    i = at - 1  # row index of iteration `at`
    loss[i : i + 6] *= [1.4, 2.3, 1.8, 1.4, 1.15, 1.05]
    grad[i - lead : i + 4] *= np.geomspace(4, 3000, lead + 4)
    return loss, grad


def test_synthetic_spike_start_peak_recovery_and_lead() -> None:
    loss, grad = spiky()
    f = ls.diagnose(rows_incident(loss, grad)).facts
    assert len(f["spikes"]) == 1
    sp = f["spikes"][0]
    assert (sp["start_iteration"], sp["peak_iteration"]) == (1200, 1201)
    assert 1204 <= sp["recovered_iteration"] <= 1206
    assert sp["recovery_iterations"] == sp["recovered_iteration"] - 1200
    assert sp["baseline_loss"] == pytest.approx(2.0 + 8 * math.exp(-1199 / 300), rel=0.02)
    assert sp["grad_norm_start_iteration"] == 1197 and f["grad_norm_leads"] is True
    assert sp["data_window"]["iterations"] == [1197, 1201]
    assert sp["data_window"]["samples"] == [1196 * GBS, 1201 * GBS]


def test_bad_batch_moves_loss_and_grad_in_the_same_iteration() -> None:
    loss, grad = spiky(lead=0)
    r = ls.diagnose(rows_incident(loss, grad))
    assert r.facts["spikes"][0]["grad_norm_start_iteration"] == 1200
    assert r.facts["grad_norm_leads"] is False
    assert any(x.id == "grad_norm_with_loss" for x in r.findings)


def test_two_spikes_each_measured_against_its_own_baseline() -> None:
    loss, grad = falling(1500, 0.01, 3), grads(1500, 3)
    loss[699:702] *= [2.0, 1.6, 1.2]
    loss[1099:1101] *= [1.8, 1.3]
    f = ls.diagnose(rows_incident(loss, grad)).facts
    assert [s["peak_iteration"] for s in f["spikes"]] == [700, 1100]
    assert all(s["recovered_iteration"] is not None for s in f["spikes"])


def test_spike_detected_right_after_a_long_one() -> None:
    loss = falling(900, 0.01, 4)
    loss[399:430] *= 1.6  # 31 points high: more than half a 50-point window
    loss[459] *= 2.0
    f = ls.diagnose(rows_incident(loss)).facts
    assert [s["start_iteration"] for s in f["spikes"]] == [400, 460]


def test_a_bump_back_within_tolerance_does_not_open_the_spike_after_it() -> None:
    # holtin's DETR train_loss by epoch (loss_spike-holtin-detr-epoch-268-jump): 1.97 at 265
    # over a 1.72 level, 1.62 and 1.60, then 3.04 at 268: the spike opens at 268, not 265
    detr = DATA / "corpus" / "loss_spike" / "loss_spike-holtin-detr-epoch-268-jump" / "logs"
    sp = ls.diagnose(traindoc.load(detr)).facts["spikes"][0]
    assert (sp["start_iteration"], sp["peak_iteration"], sp["recovered_iteration"]) == (
        268, 268, 269)
    # the same shape on a falling curve: a 12 % bump back at once, then a doubling
    loss = falling(300, 0.01, 7)
    loss[199] *= 1.12
    loss[202] *= 2.0
    f = ls.diagnose(rows_incident(loss)).facts
    assert [(s["start_iteration"], s["peak_iteration"]) for s in f["spikes"]] == [(203, 203)]
    # a bump that was a spike itself stays one, with the taller one after it
    loss = falling(300, 0.01, 7)
    loss[199] *= 1.6
    loss[202] *= 2.0
    f = ls.diagnose(rows_incident(loss)).facts
    assert [s["start_iteration"] for s in f["spikes"]][:1] == [200]
    # deepspeech.pytorch's per-batch CTC loss (SortaGrad: longer utterances, higher loss):
    # 3.22, 3.69, 3.86, 1.99, 4.20 is no bump and a new rise after it, but one swing going up
    ctc = np.array([3.22, 3.69, 3.86, 1.99, 4.2, 10.1, 10.03, 12.37, 8.11, 5.78, 13.51, 8.88,
                    5.89, 14.88, 11.89, 12.54, 13.13])
    assert [e.start for e in ls_detect.excursions(ctc) if e.confirmed] == [1]


def test_unrecovered_spike_rolls_back_to_the_last_saved_checkpoint() -> None:
    loss, grad = falling(1300, 0.01, 5), grads(1300, 5)
    loss[1159:] *= 1.5  # up at 1160 and never back
    inc = rows_incident(loss, grad)
    inc.tables["checkpoints"] = pd.DataFrame({
        "iteration": [1000, 1000, 1100, 1100, 1150],
        "kind": ["save_start", "saved", "save_start", "saved", "save_start"],  # 1150 never finished
    })
    r = ls.diagnose(inc)
    sp = r.facts["spikes"][0]
    assert sp["start_iteration"] == 1160 and sp["recovered_iteration"] is None
    assert r.facts["rollback_iteration"] == 1100
    assert "roll back to checkpoint 1100" in r.verdict
    top = r.actions[0]
    assert top.id == "rollback_skip_data"
    assert "--skip-train-iteration-range 1160-" in top.how
    assert "latest_checkpointed_iteration.txt" in top.how
    assert f"samples {1159 * GBS}.." in top.how
    assert any(f.id == "loss_spike_1160" and f.severity == "critical" for f in r.findings)
    # without checkpoint lines, the save interval gives the rollback point
    inc.tables.pop("checkpoints")
    assert ls.diagnose(inc, checkpoint_interval=50).facts["rollback_iteration"] == 1150
    assert ls.diagnose(inc).facts["rollback_iteration"] is None


def test_rollback_point() -> None:
    assert ls_series.rollback_point(1160, [1000, 1100, 1200]) == 1100
    assert ls_series.rollback_point(1100, [1000, 1100]) == 1000  # iteration 1100's batch is suspect
    assert ls_series.rollback_point(1160, [], 100) == 1100
    assert ls_series.rollback_point(50, [], 100) is None


# -- NaN, skipped, loss scale --------------------------------------------------------------------
def test_nan_then_back_is_listed_not_rolled_back(tmp_path: Path) -> None:
    lines = [megatron(i, 2.0 - i * 1e-3, 0.3) for i in range(1, 30)]
    lines[14] = megatron(15, "NAN", None, nan=1)
    r = ls.diagnose(load_lines(tmp_path, lines))
    assert r.facts["nan_iterations"] == [15]
    assert r.facts["spikes"] == [] and r.facts["rollback_iteration"] is None
    assert any(f.id == "nan_iterations" and f.severity == "warning" for f in r.findings)


def test_nan_to_the_end_is_a_divergence(tmp_path: Path) -> None:
    lines = [megatron(i, 2.0, 0.3) for i in range(1, 21)]
    lines += [megatron(i, "nan", None, nan=1) for i in range(21, 31)]
    r = ls.diagnose(load_lines(tmp_path, lines), checkpoint_interval=10)
    assert r.facts["nan_iterations"] == list(range(21, 31))
    assert r.facts["rollback_iteration"] == 20
    assert "NaN at iteration 21" in r.verdict and r.confidence == "high"
    assert r.actions[0].id == "rollback_nan"


def test_loss_scale_collapse(tmp_path: Path) -> None:
    lines = [megatron(i, 2.5, 0.4, scale=65536.0) for i in range(1, 11)]
    scale = 65536.0
    for i in range(11, 21):  # overflow on every step: skipped, scale halved each time
        scale /= 2
        lines.append(megatron(i, 2.5, None, scale=scale, skipped=1))
    r = ls.diagnose(load_lines(tmp_path, lines))
    assert r.facts["skipped_iterations"] == list(range(11, 21))
    c = ls_series.loss_scale_collapses(ls_series.series(load_lines(tmp_path, lines)))
    assert c == [{"start_iteration": 10, "end_iteration": 20, "from": 65536.0, "to": 64.0,
                  "halvings": 10.0}]
    assert any(f.id == "loss_scale_collapse_10" and f.severity == "critical" for f in r.findings)
    assert "loss scale collapsed from 6.554e+04 to 64" in r.verdict
    assert any(a.id == "loss_scale" for a in r.actions)


def test_normal_dynamic_loss_scaling_is_no_collapse() -> None:
    # halve on an overflow, grow back ×2 after a quiet window: what a healthy fp16 run does
    scale = [65536.0] * 10 + [32768.0] * 10 + [65536.0] * 10 + [32768.0] * 5 + [16384.0] * 5
    s = pd.DataFrame({"iteration": range(1, 41), "loss_scale": scale})
    assert ls_series.loss_scale_collapses(s) == []
    assert ls_series.loss_scale_collapses(pd.DataFrame({"iteration": [1, 2], "loss_scale": [2.0, 1.0]}))


# -- the real samples ------------------------------------------------------------------------------
def test_drill_corrupted_batch() -> None:
    f = ls.diagnose(traindoc.load(DATA / "loss_spike" / "drill_loss_spike")).facts
    assert [s["start_iteration"] for s in f["spikes"]] == [20]
    sp = f["spikes"][0]
    assert (sp["peak_iteration"], sp["recovered_iteration"]) == (20, 21)
    assert f["grad_norm_leads"] is False


def test_wandb_lr_jump() -> None:
    r = ls.diagnose(traindoc.load(DATA / "loss_spike" / "wandb_lr_jump"), checkpoint_interval=100)
    sp = r.facts["spikes"][0]
    assert (sp["start_iteration"], sp["peak_iteration"], sp["recovered_iteration"]) == (261, 263, None)
    assert r.facts["rollback_iteration"] == 200
    assert "learning rate jumped ×30 (0.003 → 0.09) at iteration 260" in r.verdict
    assert r.actions[0].id == "restore_lr"
    assert sp["data_window"]["tokens"] == [260 * 512, 263 * 512]


# -- other log formats ---------------------------------------------------------------------------
def test_hf_trainer_torchtitan_and_deepspeed_lines(tmp_path: Path) -> None:
    loss, grad = spiky(n=60, at=40, lead=0)
    hf = "".join(f"{{'loss': {v:.4f}, 'grad_norm': {g:.4f}, 'learning_rate': 1e-05, 'epoch': "
                 f"{k / 100:.2f}}}\n" for k, (v, g) in enumerate(zip(loss, grad, strict=True)))
    f = ls.diagnose(load_lines(tmp_path, [hf])).facts
    assert [s["start_iteration"] for s in f["spikes"]] == [40]
    titan = "".join(f"[rank0]:[titan] 2025-01-01 10:00:00,000 - root - INFO - step: {k + 1}  "
                    f"loss: {v:7.4f}  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: "
                    "34.29%\n" for k, v in enumerate(loss))
    f = ls.diagnose(load_lines(tmp_path, [titan])).facts
    assert [s["start_iteration"] for s in f["spikes"]] == [40]
    # DeepSpeed's pipeline engine (runtime/pipe/engine.py): steps: N loss: X iter time (s): …
    ds = "".join(f"steps: {k + 1} loss: {v:.4f} iter time (s): 0.283 samples/sec: 226.457\n"
                 for k, v in enumerate(loss))
    f = ls.diagnose(load_lines(tmp_path, [ds])).facts
    assert [s["start_iteration"] for s in f["spikes"]] == [40]


def test_restarted_job_rerun_replaces_the_first_attempt(tmp_path: Path) -> None:
    first = [megatron(i, 2.0, 0.3) for i in range(1, 21)] + [megatron(21, 9.0, 50.0)]
    rerun = [megatron(i, 2.0, 0.3) for i in range(11, 31)]  # restarted from checkpoint 10
    s = ls_series.series(load_lines(tmp_path, first + rerun))
    assert s["iteration"].tolist() == list(range(1, 31))
    assert float(s.loc[s["iteration"] == 21, "loss"].item()) == 2.0


def test_no_metrics_is_a_finding() -> None:
    r = ls.diagnose(Incident.empty())
    assert set(r.facts) == set(ls.FACT_KEYS)
    assert r.facts["spikes"] == [] and r.confidence == "low"
    assert r.findings[0].id == "no_iterations"


# -- the detector's parts ------------------------------------------------------------------------
def test_rolling_stats_match_a_naive_computation() -> None:
    rng = np.random.default_rng(0)
    y = rng.standard_normal(300)
    y[rng.choice(300, 30, replace=False)] = np.nan
    med, mad, cnt = ls_detect.rolling_stats(y, 20)
    for i in (1, 5, 19, 20, 150, 299):
        w = y[max(0, i - 20) : i]
        w = w[~np.isnan(w)]
        assert cnt[i] == len(w)
        assert med[i] == pytest.approx(np.median(w))
        if len(w) < 2:  # one value tells no spread
            assert np.isnan(mad[i])
        else:
            assert mad[i] == pytest.approx(1.4826 * np.median(np.abs(w - np.median(w))))
    assert cnt[0] == 0 and np.isnan(med[0]) and np.isnan(mad[1])


def test_detection_is_fast_on_a_long_run() -> None:
    n = 200_000
    loss = falling(n, 0.02, 7, tau=20_000)
    loss[150_000] *= 3
    t = time.perf_counter()
    found = [e for e in ls_detect.excursions(loss) if e.confirmed]
    assert time.perf_counter() - t < 20
    assert [e.start for e in found] == [150_000]


def test_rollback_from_megatron_checkpoint_lines(tmp_path: Path) -> None:
    """megatron/checkpointing.py: 'saving checkpoint at iteration {:7d} to {}' then
    '  successfully saved checkpoint at iteration {:7d} to {}'; the save at 40 never finished."""
    loss = falling(50, 0.005, 9, tau=100)
    loss[42:] *= 1.8  # up at iteration 43 and never back
    lines = []
    for k, v in enumerate(loss):
        it = k + 1
        lines.append(megatron(it, float(v), 0.3))
        if it % 10 == 0:
            lines.append(f"[default0]:saving checkpoint at iteration {it:7d} to /ckpt/main\n")
            if it != 40:
                lines.append(f"[default0]:  successfully saved checkpoint at iteration {it:7d} to "
                             "/ckpt/main\n")
    inc = load_lines(tmp_path, lines)
    if "checkpoints" not in inc.tables or not len(inc.tables["checkpoints"]):
        pytest.skip("no checkpoints parser in this checkout")
    r = ls.diagnose(inc)
    assert r.facts["spikes"][0]["start_iteration"] == 43
    assert r.facts["rollback_iteration"] == 30
    assert "echo 30 > <save>/latest_checkpointed_iteration.txt" in r.actions[0].how


def test_deepspeed_overflow_lines_are_skipped_steps(tmp_path) -> None:
    # HF Trainer + DeepSpeed ZeRO-3 (transformers' DeepSpeed docs, 2022): the bar counts the
    # finished steps, the overflow behind it is the next one; initial calibration, no spike
    p = tmp_path / "job.log"
    p.write_text(
        "  0%|          | 0/500 [00:00<?, ?it/s][2022-07-26 19:15:51,159] [INFO] [stage3.py:1834:"
        "_overflow_clean_up] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: "
        "65536, reducing to 65536\n"
        "  0%|▍         | 1/500 [00:00<03:47,  2.19it/s][2022-07-26 19:15:52,710] [INFO] [stage3."
        "py:1834:_overflow_clean_up] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss "
        "scale: 65536, reducing to 32768\n")
    r = ls.diagnose(traindoc.load(p))
    assert r.facts["skipped_iterations"] == [1, 2] and r.facts["spikes"] == []


def test_overflow_wordings() -> None:
    from traindoc.parse.iterations import parse_overflow

    assert parse_overflow("[deepscale] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: "
                          "262144, reducing to 131072.0") == {"skipped": 1,
                                                              "loss_scale": 131072.0}
    assert parse_overflow("[2024-09-15 00:13:28,261] [INFO] [loss_scaler.py:190:update_scale] "
                          "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: "
                          "4294967296, but hysteresis is 2. Reducing hysteresis to 1"
                          )["skipped"] == 1
    assert parse_overflow("Grad overflow on iteration 118") == {"iteration": 118, "skipped": 1}
    assert parse_overflow("step:0, loss:5.453125") is None


def test_a_tenfold_grad_norm_jump_before_the_loss_moves_leads(tmp_path) -> None:
    # bigscience tr8-104B chronicles, experiment 11: grad norm x20 at 11447, loss x2.5 at 11448
    line = (" iteration    {it}/  159576 | consumed samples:      1256288 | elapsed time per "
            "iteration (ms): 78599.8 | learning rate: 3.000E-05 | global batch size:   432 | lm "
            "loss: {loss} | loss scale: 65536.0 | grad norm: {gn} | num zeros: 0.0 | number of "
            "skipped iterations:   0 | number of nan iterations:   0 |\ntime (ms)\n")
    p = tmp_path / "job.log"
    p.write_text("".join(line.format(it=it, loss=lo, gn=gn) for it, lo, gn in (
        (11446, "3.062589E+00", "12952.562"), (11447, "3.114286E+00", "262623.331"),
        (11448, "7.712340E+00", "254699.302"))))
    f = ls.diagnose(traindoc.load(p)).facts
    assert [s["start_iteration"] for s in f["spikes"]] == [11448]
    assert f["grad_norm_leads"] is True and f["spikes"][0]["grad_norm_start_iteration"] == 11447


def test_megatron_line_without_lm_loss_is_a_nan_iteration(tmp_path) -> None:
    # deepspeedai/Megatron-DeepSpeed#434: no lm loss printed, both counters 0
    line = (" iteration        {it}/      10 | consumed samples:          108 | elapsed time per "
            "iteration (ms): 1979.2 | learning rate: 4.219E-07 | global batch size:    12 | {loss}"
            "loss scale: 1.0 | number of skipped iterations:   {sk} | number of nan iterations:"
            "   0 |\n")
    p = tmp_path / "job.log"
    p.write_text(line.format(it=8, loss="lm loss: 2.5E+00 | ", sk=0)
                 + line.format(it=9, loss="", sk=0) + line.format(it=10, loss="", sk=1))
    f = ls.diagnose(traindoc.load(p)).facts
    assert f["nan_iterations"] == [9] and f["skipped_iterations"] == [10]


def test_recovery_after_a_huge_spike_with_little_history() -> None:
    from traindoc.diagnose.loss_spike.detect import LOSS, excursions

    # microsoft/LMOps#130: 1.53 → 2442.9 → 2.28
    ex = excursions(np.array([1.5269, 2442.9075, 2.2808]), LOSS)
    assert len(ex) == 1 and ex[0].confirmed and ex[0].end == 2


def test_noisy_first_micro_batches_are_no_spike() -> None:
    from traindoc.diagnose.loss_spike.detect import LOSS, excursions

    # Lightning-AI/litgpt#185: micro-batch losses 1.71-2.71 before the first optimizer step
    y = np.array([1.7089, 2.1155, 1.9496, 1.7309, 1.7632, 1.8084, 1.8845, 2.3051, 1.7964, 2.4444,
                  1.9692, 2.3963, 2.7146, 1.9210, 1.8052, 2.0308])
    assert not [e for e in excursions(y, LOSS) if e.confirmed]


def test_one_step_of_history_is_no_noise_scale() -> None:
    from traindoc.diagnose.loss_spike.detect import LOSS, excursions

    # awslabs/keys_values#97: an excerpt opening on 1.195 and a 0.000, per-step losses 0-3.3
    # after them, then 14.500 at iter 339 and back: the one step 1.195 -> 0.000 is no noise
    # scale, so 2.344 at the third point opens nothing and the spike is the 14.5 alone
    y = np.array([1.195, 0.000, 2.344, 2.094, 3.297, 1.273, 2.219, 1.492, 14.500, 4.188, 2.922,
                  3.406])
    ex = [e for e in excursions(y, LOSS) if e.confirmed]
    assert [(e.start, e.peak, e.end) for e in ex] == [(8, 8, 9)]


def test_a_whole_skipped_interval_lists_every_step() -> None:
    from traindoc.diagnose.loss_spike.series import skipped_iterations

    # NVIDIA/nccl#743 (Megatron BERT): "number of skipped iterations: 10" at iteration 10
    s = pd.DataFrame({"iteration": [10, 20, 30], "skipped": [10, 0, 3]})
    assert skipped_iterations(s) == [*range(1, 11), 30]


# -- analyse / report ---------------------------------------------------------------------------
@pytest.mark.parametrize("sample", ["bloom_seed", "drill_loss_spike", "wandb_lr_jump"])
def test_diagnose_is_report_of_analyse(sample: str) -> None:
    inc = traindoc.load(DATA / "loss_spike" / sample)
    a = ls.analyse(inc, checkpoint_interval=100)
    assert ls.report(a).summary(inc) == ls.diagnose(inc, checkpoint_interval=100).summary(inc)
    # the tables the runbook shows come from the analysis, equal to the library's own calls
    pd.testing.assert_frame_equal(a.series, ls_series.series(inc))
    assert a.checkpoints == ls_series.checkpoint_iterations(inc)
    assert a.loss_scale_collapses == ls_series.loss_scale_collapses(a.series)
    pd.testing.assert_frame_equal(a.spikes_table(), spikes_table(ls.report(a)))
    if a.spikes:
        pd.testing.assert_frame_equal(a.spike_rows(a.spikes[0]),
                                      ls_series.spike_rows(a.series, a.spikes[0]))


def test_analysis_holds_the_rollback_point_and_is_frozen() -> None:
    loss, grad = falling(1300, 0.01, 5), grads(1300, 5)
    loss[1159:] *= 1.5  # up at 1160 and never back
    a = ls.analyse(rows_incident(loss, grad), checkpoint_interval=50)
    assert a.main_spike is a.head_spike is a.spikes[0]
    assert a.first_bad == 1160 and a.rollback_iteration == 1150
    assert ls.report(a).facts["rollback_iteration"] == 1150
    with pytest.raises(AttributeError):
        a.rollback_iteration = 0  # type: ignore[misc]


def test_analysis_of_no_metrics_is_empty() -> None:
    a = ls.analyse(Incident.empty())
    assert not a.has_metrics and a.spikes == [] and a.rollback_iteration is None
    assert ls.report(a).findings[0].id == "no_iterations"


# -- issue 27: a learning rate that grows during warm-up is not a jump --------------------------

def test_a_warm_up_ramp_is_not_an_lr_jump() -> None:
    # Kimi-Audio's first logged steps: lr 1.98e-06, 3.14e-06, 3.96e-06, 4.6e-06 … (warm-up);
    # the ×1.58 step between the first two was called "the learning rate jumped"
    inc = traindoc.load(DATA / "corpus" / "loss_spike" / "loss_spike-kimi-audio-133" / "logs")
    r = ls.diagnose(inc)
    assert r.facts["spikes"]
    assert not any(f.id == "lr_jump" for f in r.findings)
    assert not any(a.id == "restore_lr" for a in r.actions)
    assert "jumped" not in r.verdict


def test_a_jump_from_a_flat_rate_is_still_an_lr_jump() -> None:
    # wandb_lr_jump: 0.003 for 259 steps, then 0.09 and it stays: a reset, not a warm-up
    r = ls.diagnose(traindoc.load(DATA / "loss_spike" / "wandb_lr_jump"))
    assert any(f.id == "lr_jump" for f in r.findings)
    assert r.actions[0].id == "restore_lr"


def test_a_blip_like_the_runs_unconfirmed_ones_is_no_spike() -> None:
    # PaddleSeg's per-batch loss (corpus gpu_crash-pp-industry-workerlog-healthy, workerlog.0:
    # "[TRAIN] epoch: …, iter: 13280/16000, loss: 0.4112, …"): about 0.2, and one logged batch
    # in a hundred or so reads 0.32-0.44; where the local noise scale confirms one of them
    # (here the batch at 861), it is no taller than the many the detector left unconfirmed
    rng = np.random.default_rng(1)
    n = 1400
    loss = 0.2 * np.exp(0.2 * rng.standard_normal(n))
    blips = np.arange(100, n - 20, 110)
    loss[blips] = 0.2 * (1 + rng.uniform(0.6, 1.0, len(blips)))
    found = ls_detect.excursions(loss, ls_detect.LOSS)
    assert [e.start for e in found if e.confirmed] == [860]
    assert ls_detect.find_spikes(ls_series.series(rows_incident(loss)))[0] == []
    # a blip far taller than the others is still a spike
    loss[1300] = 0.2 * 6
    spikes = ls_detect.find_spikes(ls_series.series(rows_incident(loss)))[0]
    assert [sp["peak_iteration"] for sp in spikes] == [1301]


def test_recovery_with_little_history_is_back_near_the_baseline() -> None:
    from traindoc.diagnose.loss_spike.detect import LOSS, excursions

    # bigscience-workshop/bigscience (Megatron gpt2 base, 8 nodes), lm loss every 10 iterations
    # from 20: 12.106 → 26.481 → 13.775 → 10.162 → 8.565: 13.8 is still above the 12.1 it came
    # from; it is back at 10.2 (the fourth point), however unknown the noise after one point
    y = np.array([12.10588, 26.48119, 13.775, 10.162, 8.565, 7.9, 7.6])
    ex = [e for e in excursions(y, LOSS) if e.confirmed]
    assert len(ex) == 1 and ex[0].start == 1 and ex[0].end == 3
    # microsoft/LMOps#130: 1.53 → 2442.9 → 2.28 is still over (98 % of its height back)
    ex = excursions(np.array([1.5269, 2442.9075, 2.2808]), LOSS)
    assert len(ex) == 1 and ex[0].confirmed and ex[0].end == 2
