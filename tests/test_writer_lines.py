"""Step lines as their WRITERS print them: for each trainer, the line its logging code formats
(rendered from the format string, or a real user's line where one was found), read by a whole
``traindoc.load`` — whichever parser takes it — into the row it means: the step, the loss, the
rate and its unit, skipped and NaN steps. Running means printed beside the instantaneous value
are not the value; a cumulative skipped counter marks only the steps it grew by."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from traindoc import load
from traindoc.diagnose.loss_spike.series import series, skipped_iterations

NAN = float("nan")

# (trainer, line, expected columns of its one row, the writer and where the line comes from)
WRITER_LINES = [
    ("megatron-2019",
     " iteration      100/  500000 | elapsed time per iteration (ms): 574.2 | learning rate "
     "1.500E-04 | lm loss 7.123456E+00 | loss scale 131072.0 |",
     {"iteration": 100, "total_iterations": 500000, "elapsed_s": 0.5742, "lr": 1.5e-4,
      "loss": 7.123456, "loss_scale": 131072.0},
     "Megatron-LM 2019 pretrain_gpt2.py and DeepSpeedExamples' copy: ' learning rate {:.3E} |', "
     "' lm loss {:.6E} |', ' loss scale {:.1f} |' (no colon)"),
    ("megatron-core-2024",
     " [2024-05-01 12:00:00] iteration      100/   10000 | consumed samples:         3200 | "
     "elapsed time per iteration (ms): 1234.5 | throughput per GPU (TFLOP/s/GPU): 150.2 | "
     "learning rate: 1.500000E-04 | global batch size:    32 | lm loss: 7.123456E+00 | loss "
     "scale: 1.0 | grad norm: 1.234 | num zeros: 0.0 | number of skipped iterations:   0 | number "
     "of nan iterations:   0 |",
     {"iteration": 100, "elapsed_s": 1.2345, "tflops": 150.2, "loss": 7.123456, "grad_norm": 1.234,
      "skipped": 0, "nan": 0},
     "megatron/training/training.py training_log with --log-throughput (rendered)"),
    ("megatron-deepspeed",
     "iteration      199/  317892 | consumed samples:       152832 | consumed tokens:    "
     "625999872 | elapsed time per iteration (ms): 14287.5 | learning rate: 2.407E-04 | global "
     "batch size:   768 | lm loss: 5.905366E+00 | loss scale: 8192.0 | actual seqlen:  4096 | "
     "number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: "
     "53.753 | tokens per gpu per second (tgs): 1146.733 | TFLOPs: 69.85 |",
     {"iteration": 199, "loss": 5.905366, "elapsed_s": 14.2875, "samples_per_s": 53.753,
      "tflops": 69.85, "loss_scale": 8192.0},
     "argonne-lcf/Megatron-DeepSpeed on Polaris, a user's log quoted in a bug report"),
    ("fairseq-json",
     '2021-03-08 12:34:45 | INFO | train_inner | {"epoch": 1, "update": 0.001, "loss": "25.22", '
     '"ppl": "3.90691e+07", "wps": "123.4", "ups": "0.01", "wpb": "16384", "bsz": "8", '
     '"num_updates": "3", "lr": "6e-05", "gnorm": "131.281", "loss_scale": "1", "train_wall": '
     '"133", "gb_free": "9.3", "wall": "294"}',
     {"iteration": 3, "loss": 25.22, "grad_norm": 131.281, "tokens_per_s": 123.4,
      "loss_scale": 1.0, "lr": 6e-05},
     "fairseq examples/fully_sharded_data_parallel README, --log-format json (every stat a "
     "string)"),
    ("fairseq-simple-valid",
     "2021-01-01 00:00:00 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 9.1 | ppl "
     "551.2 | wps 60474.1 | wpb 12110.9 | bsz 402.6 | num_updates 1563",
     {"iteration": 1563, "eval_loss": 9.1, "event": "eval", "loss": None, "tokens_per_s": None},
     "fairseq progress_bar SimpleProgressBar.print: '{prefix} | {key} {value} | …' with the "
     "prefix \"epoch 001 | valid on 'valid' subset\" (rendered)"),
    ("fairseq-tqdm",
     "epoch 001:  10%|█         | 156/1563 [01:00<09:00, 2.60it/s, loss=9.600, nll_loss=9.1, "
     "ppl=551.2, wps=20474, ups=2.6, wpb=12110, bsz=402, num_updates=156, lr=1e-05, gnorm=2.3, "
     "loss_scale=64, train_wall=60, wall=62]",
     {"iteration": 156, "loss": 9.6, "grad_norm": 2.3, "elapsed_s": 1 / 2.6, "epoch": None},
     "fairseq progress_bar TqdmProgressBar: set_postfix of the same stats (rendered)"),
    ("llm.c-python",
     "step    1/74 | train loss 11.012345 | norm 15.3456 | lr 6.00e-06 | (345.67 ms | 1516543 "
     "tok/s)",
     {"iteration": 1, "total_iterations": 74, "loss": 11.012345, "grad_norm": 15.3456,
      "elapsed_s": 0.34567, "tokens_per_s": 1516543.0},
     "karpathy/llm.c train_gpt2.py print0(f'step {step+1:4d}/{…} | train loss {lossf:.6f} | "
     "norm {norm:.4f} | lr {lr:.2e} | ({(t1-t0)*1000:.2f} ms | {tokens_per_second:.0f} tok/s)')"),
    ("llm.c-cuda",
     "step    2/74 | loss 10.955826 (+0.00z)| norm 14.2310 (+0.00z)| lr 1.20e-05 | 345.12 ms | "
     "42.1% bf16 MFU | 1489012 tok/s",
     {"iteration": 2, "loss": 10.955826, "grad_norm": 14.231, "elapsed_s": 0.34512, "mfu": 42.1},
     "karpathy/llm.c train_gpt2.cu printf0(\"step %4d/%d | loss %7.6f (%+.2fz)| norm %6.4f "
     "(%+.2fz)| lr %.2e | %.2f ms | %.1f%% bf16 MFU | %.0f tok/s\\n\")"),
    ("timm",
     "Train: 1 [  50/500 ( 10%)]  Loss: 4.234 (4.301)  Time: 0.512s,  500.12/s  (0.520s,  "
     "492.31/s)  LR: 1.000e-03  Data: 0.012 (0.015)",
     {"iteration": 550, "epoch": 1.0, "loss": 4.234, "elapsed_s": 0.512, "samples_per_s": 500.12,
      "interval_s": None},
     "huggingface/pytorch-image-models train.py: 'Train: {} [{:>4d}/{} ({:>3.0f}%)]  Loss: "
     "{loss.val:#.4g} ({loss.avg:#.3g})  Time: {batch_time.val:.3f}s, {rate:>7.2f}/s  "
     "({batch_time.avg:.3f}s, {rate_avg:>7.2f}/s)' (the values in parentheses are running means)"),
    ("detectron2",
     " eta: 0:07:35  iter: 19  total_loss: 2.079  loss_cls: 0.6731  loss_box_reg: 0.0107  "
     "loss_mask: 0.6925  loss_rpn_cls: 0.6841  loss_rpn_loc: 0.0196    time: 0.4717  last_time: "
     "0.4712  data_time: 0.0130  last_data_time: 0.0060   lr: 0.00039962  max_mem: 2655M",
     {"iteration": 19, "loss": 2.079, "elapsed_s": 0.4717},
     "facebookresearch/detectron2 CommonMetricPrinter (rendered)"),
    ("mmengine",
     "Epoch(train)  [1][ 50/500]  lr: 1.0000e-03  eta: 0:10:00  time: 0.5000  data_time: 0.0100  "
     "memory: 1234  grad_norm: 5.0000  loss: 6.9000",
     {"iteration": 50, "loss": 6.9, "grad_norm": 5.0, "elapsed_s": 0.5},
     "open-mmlab/mmengine LoggerHook (rendered)"),
    ("nemo-bar",
     "Epoch 0: :  47%|████▋     | 7/15 [06:19<07:13, reduced_train_loss=11.50, global_step=5.000, "
     "consumed_samples=12288.0, train_step_timing in s=49.50]",
     {"iteration": 5, "loss": 11.5, "elapsed_s": 49.5},
     "NeMo's Megatron progress bar, a run's output quoted in a GPU cluster guide"),
    ("nemo-bar-lightning-loss",
     "Epoch 0:   0%|          | 189/301501 [59:12<1573:03:24, 18.79s/it, loss=7.75, v_num=3-16, "
     "reduced_train_loss=7.560, global_step=188.0, consumed_samples=24064.0]",
     {"iteration": 188, "loss": 7.56, "elapsed_s": 18.79},
     "NeMo on Trainium, a run's output quoted in the Neuron docs (Lightning 1.x's 'loss=' is a "
     "running mean of 20 steps; reduced_train_loss is the step's)"),
    ("openrlhf-bar",
     "Train step of epoch 0:   5%|▌         | 1/17 [00:04<01:10, gpt_loss=0.793, lr=1.25e-6, "
     "grad_norm=38.9]",
     {"iteration": 1, "epoch": 0.0, "loss": 0.793, "grad_norm": 38.9},
     "OpenRLHF SFTTrainer's tqdm postfix, from a healthy run quoted in an NPU guide (its "
     "remaining time, elided there as '<..', filled in)"),
    ("clu-t5x",
     "I0521 12:00:00.123456 140 logging_writer.py:48] [1000] collection=train accuracy=0.51, "
     "cross_ent_loss=2.3, learning_rate=0.001, loss=2.345, timing/seconds=12.3, "
     "timing/seqs_per_second=100.2, timing/steps_per_second=8.1",
     {"iteration": 1000, "loss": 2.345, "samples_per_s": 100.2, "elapsed_s": 1 / 8.1},
     "google/CommonLoopUtils clu/metric_writers/logging_writer.py: logging.info('[%d]%s %s', "
     "step, ' collection=train', 'k=v, …') as t5x writes its train summaries (rendered)"),
    ("apex-fp16-optimizer",
     "OVERFLOW! Skipping step. Attempted loss scale: 4294967296, reducing to 2147483648",
     {"iteration": None, "skipped": 1, "loss_scale": 2147483648.0},
     "NVIDIA/apex fp16_utils/fp16_optimizer.py: 'OVERFLOW! Skipping step. Attempted loss scale: "
     "{}, reducing to {}'"),
    ("fairseq-overflow",
     "2021-03-08 12:33:12 | INFO | fairseq.trainer | NOTE: gradient overflow detected, ignoring "
     "gradient, setting loss scale to: 2.0",
     {"iteration": None, "skipped": 1, "loss_scale": 2.0},
     "fairseq examples/fully_sharded_data_parallel README (fairseq/trainer.py since 0.10)"),
]


def _same(a: object, b: object) -> bool:
    if b is None:
        return a is None or a is NAN or (isinstance(a, float) and math.isnan(a)) or str(a) == "<NA>"
    if isinstance(b, float):
        return a is not None and str(a) != "<NA>" and (
            (math.isnan(b) and math.isnan(float(a))) or math.isclose(float(a), b, rel_tol=1e-6))
    return a == b


def _rows(tmp_path: Path, text: str) -> list[dict]:
    log = tmp_path / "train.log"
    log.write_text(text)
    it = load(str(log)).iterations
    return [{k: (None if str(v) == "<NA>" else v) for k, v in r.items()}
            for r in it.to_dict("records")]


@pytest.mark.parametrize("trainer, line, expected, source", WRITER_LINES,
                         ids=[r[0] for r in WRITER_LINES])
def test_writer_line(tmp_path, trainer: str, line: str, expected: dict, source: str) -> None:
    rows = _rows(tmp_path, line + "\n")
    assert len(rows) == 1, rows
    for k, v in expected.items():
        assert _same(rows[0].get(k), v), (k, rows[0])


# DeepSpeed's engine: "step=N, skipped=M" counts the skipped steps since the engine started
# (deepspeed/runtime/engine.py _report_progress); the lines and the overflow line as its
# loss_scaler.py prints them (rendered, steps_per_print=10)
DS_STEPS = (
    "[2023-07-25 21:01:20,125] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=10, "
    "lr=[0.0001], mom=[(0.9, 0.999)]\n"
    "[2023-07-25 21:01:21,125] [INFO] [logging.py:96:log_dist] [Rank 0] step=20, skipped=12, "
    "lr=[0.0001, 0.0001], mom=[(0.9, 0.999), (0.9, 0.999)]\n"
    "[2023-07-25 21:01:21,525] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! "
    "Rank 0 Skipping step. Attempted loss scale: 16384, reducing to 8192\n"
    "[2023-07-25 21:01:22,125] [INFO] [logging.py:96:log_dist] [Rank 0] step=30, skipped=13, "
    "lr=[0.0001, 0.0001], mom=[(0.9, 0.999), (0.9, 0.999)]\n")


def test_deepspeed_skipped_counter_marks_what_it_grew_by(tmp_path) -> None:
    """10 of the first 10 steps skipped (the loss-scale calibration) are steps 1–10; 2 more by
    step 20 stand at 20 (which two is unknown); the third, printed as an overflow line, is the
    step after 20 — and is not counted twice by step 30's counter, whose line then has nothing
    to say (no row: a step and a learning rate alone would outrank a tqdm bar's progress)."""
    rows = _rows(tmp_path, DS_STEPS)
    steps = [r for r in rows if r["iteration"] is not None]
    assert [(r["iteration"], r["skipped"]) for r in steps] == [(10, 10), (20, 2)]
    assert steps[0]["lr"] == pytest.approx(1e-4)
    log = tmp_path / "train.log"
    s = series(load(str(log)))
    assert skipped_iterations(s) == [*range(1, 11), 20, 21]


def test_deepspeed_counter_of_an_excerpt_is_not_placed(tmp_path) -> None:
    """A stream whose first line is mid-run (a user's Megatron-DeepSpeed excerpt: "step=200,
    skipped=4") holds skips of steps it does not show: none is placed at 200; nor is HF Trainer
    with DeepSpeed's "step=0, skipped=0" before the first step a step (its tqdm bar holds the
    progress: bigscience's hf_ds_gpt2_base logs in the corpus)."""
    rows = _rows(tmp_path, "[2024-03-07 15:27:15,063] [INFO] [logging.py:96:log_dist] [Rank 0] "
                           "step=200, skipped=4, lr=[0.000240653265864008, 0.000240653265864008], "
                           "mom=[(0.9, 0.999), (0.9, 0.999)]\n"
                           "[2021-05-25 06:38:26,358] [INFO] [logging.py:60:log_dist] [Rank 0] "
                           "step=0, skipped=0, lr=[5e-05], mom=[[0.9, 0.999]]\n")
    assert rows == []


def test_fairseq_json_stream_with_overflows(tmp_path) -> None:
    """fairseq's json log: every step's stats as strings, the overflow NOTE lines between."""
    text = (
        '2021-03-08 12:32:33 | INFO | train_inner | {"epoch": 1, "update": 0.0, "loss": "16.446", '
        '"ppl": "89281.6", "wps": "288.7", "ups": "0.02", "wpb": "16384", "bsz": "8", '
        '"num_updates": "2", "lr": "4e-05", "gnorm": "19.777", "loss_scale": "4", "train_wall": '
        '"57", "gb_free": "9.3", "wall": "161"}\n'
        "2021-03-08 12:33:12 | INFO | fairseq.trainer | NOTE: gradient overflow detected, "
        "ignoring gradient, setting loss scale to: 2.0\n"
        '2021-03-08 12:43:15 | INFO | valid | {"epoch": 1, "valid_loss": "17.953", "valid_ppl": '
        '"253807", "valid_wps": "1868.4", "valid_wpb": "15400.2", "valid_bsz": "7.6", '
        '"valid_num_updates": "10"}\n')
    rows = _rows(tmp_path, text)
    assert [(r["iteration"], r["loss"], r["skipped"]) for r in rows] == [
        (2, 16.446, None), (None, None, 1)]


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_either_engine_reads_the_same_rows(tmp_path, engine: str) -> None:
    """The fast engine finds these lines by their needles: the DeepSpeed counter, a bar's
    postfix, a JSON line of strings and a clu line read as the plain engine reads them."""
    text = DS_STEPS + "\n".join(line for trainer, line, _, _ in WRITER_LINES
                                if trainer in ("fairseq-tqdm", "fairseq-json", "clu-t5x",
                                               "nemo-bar", "timm")) + "\n"
    log = tmp_path / "train.log"
    log.write_text(text)
    it = load(str(log), engine=engine).iterations
    assert sorted(it["iteration"].dropna().astype(int)) == [3, 5, 10, 20, 156, 550, 1000]
    assert it["skipped"].fillna(-1).astype(int).tolist()[:3] == [10, 2, 1]


def test_a_bar_that_restarts_each_epoch_is_counted_on(tmp_path) -> None:
    """OpenRLHF's SFT bar restarts at every epoch under the epoch's name: the loss series
    counts its steps on across epochs instead of overwriting epoch 0 with epoch 1."""
    text = "".join(
        f"Train step of epoch {e}:  {n * 25}%|██        | {n}/4 [00:0{n}<00:0{4 - n}, 1.00it/s, "
        f"gpt_loss={2.0 - 0.1 * (4 * e + n):.2f}, lr=1e-05, grad_norm=1.0]\n"
        for e in (0, 1) for n in (1, 2, 3, 4))
    log = tmp_path / "train.log"
    log.write_text(text)
    s = series(load(str(log)))
    assert list(s["iteration"]) == list(range(1, 9))
    assert s["loss"].iloc[-1] == pytest.approx(1.2)
