"""Step-line parsers (iterations) and per-host timing parsers (host_timings), each on real lines.

Real lines come from tests/data/wordings/iteration_lines.txt (each with its source there) and
from the seeds; the rest are quoted from the projects' own code or README in a comment.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import traindoc
from conftest import ROOT
from traindoc.parse import BLOCK_PARSERS, FILE_LOADERS, LINE_PARSERS
from traindoc.parse.benchmarks import (
    LOADER,
    RankTimingsParser,
    looks_like_benchmark,
    metric_direction,
    parse_nodelist,
    parse_straggler,
)
from traindoc.parse.iterations import (
    HF_EXAMPLE,
    PARSERS,
    HFTrainerParser,
    parse_deepspeed_pipe,
    parse_deepspeed_timer,
    parse_hf_dict,
    parse_lightning,
    parse_megatron,
    parse_step_kv,
    parse_validation,
)
from traindoc.schema import sources

WORDINGS = ROOT / "tests" / "data" / "wordings" / "iteration_lines.txt"
BLOOM = ("[default7]: iteration 42783/ 115311 | consumed samples: 71461808 | consumed tokens: "
         "146353782784 | elapsed time per iteration (s): 110.17 | learning rate: 4.475E-05 | "
         "global batch size: 2048 | lm loss: 2.124820E+00 | grad norm: 0.135 | num zeros: 0.0 | "
         "number of skipped iterations: 0 | number of nan iterations: 0 | samples per second: "
         "18.589 | TFLOPs: 142.32 |")


def corpus() -> list[str]:
    return [ln for ln in WORDINGS.read_text().splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_registered() -> None:
    names = {p.name for p in LINE_PARSERS}
    assert {p.name for p in PARSERS} <= names
    assert "slurm_nodelist" in names
    assert HFTrainerParser in BLOCK_PARSERS and RankTimingsParser in BLOCK_PARSERS
    assert LOADER in FILE_LOADERS


@pytest.mark.parametrize("parser", PARSERS, ids=lambda p: p.name)
def test_every_example_parses_and_matches_its_needles(parser) -> None:
    assert any(n in parser.example for n in parser.needles)
    row = parser.parse(parser.example)
    # an fp16 overflow or a NaN warning numbers no step: the runbook places it
    # (common.place_unnumbered_skips)
    assert row is not None and (row.get("iteration") is not None or row.get("skipped") == 1
                                or row.get("nan") == 1)


def test_megatron_keeps_its_behaviour() -> None:
    row = parse_megatron(BLOOM)
    assert row == {
        "iteration": 42783, "total_iterations": 115311, "consumed_samples": 71461808,
        "consumed_tokens": 146353782784, "elapsed_s": 110.17, "lr": 4.475e-05,
        "global_batch_size": 2048, "loss": 2.12482, "grad_norm": 0.135, "skipped": 0, "nan": 0,
        "samples_per_s": 18.589, "tflops": 142.32}


def test_megatron_variants_from_the_corpus() -> None:
    lines = corpus()
    core = next(ln for ln in lines if "throughput per GPU (TFLOP/s/GPU): 243.6" in ln)
    row = parse_megatron(core)
    assert (row["iteration"], row["tflops"], row["elapsed_s"]) == (71, 243.6, pytest.approx(5.3616))
    neox = next(ln for ln in lines if ln.startswith(" samples/sec: 6.699"))
    row = parse_megatron(neox)
    assert (row["iteration"], row["samples_per_s"], row["tflops"], row["loss"]) == (
        6, 6.699, pytest.approx(97.0), pytest.approx(11.18582))
    nan_norm = next(ln for ln in lines if "grad norm: nan" in ln)
    row = parse_megatron(nan_norm)
    assert row["tflops"] == 78.36 and row["grad_norm"] != row["grad_norm"]


def test_megatron_deepspeed_pipeline_lm_loss_key_is_the_loss() -> None:
    # bigscience-workshop/bigscience experiments/gpt2-meg/meg_ds_3d_gpt2_perf_n16-ds-on.out: the
    # pipeline engine's loss dict key is "lm-loss" (Megatron's pretrain() docstring: "for example
    # `lm-loss: value`"); unread, the step looked like Megatron's no-loss (NaN) interval
    line = (" iteration        3/    1000 | consumed samples:         3072 | elapsed time per "
            "iteration (ms): 137138.4 | learning rate: 5.625E-05 | global batch size:  1024 | "
            "lm-loss: 4.103157E+01 | loss scale: -1.0 | grad norm: 0.000 | num zeros: 0.0 | "
            "number of skipped iterations:   0 | number of nan iterations:   0 |")
    row = parse_megatron(line)
    assert (row["iteration"], row["loss"], row["nan"]) == (3, pytest.approx(41.03157), 0)
    # the hyphen is only another spelling of Megatron's "lm loss" (epfLLM/Megatron-LLM#11)
    spaced = line.replace("lm-loss: 4.103157E+01", "lm loss: 2.504220E+00")
    assert parse_megatron(spaced)["loss"] == pytest.approx(2.50422)


def test_validation_line_is_an_eval_event() -> None:
    # BigScience's fork (seed 001) and Megatron-LM's wording
    row = parse_validation("[default7]:valid loss at iteration 45000 | lm loss value: "
                           "2.327091E+00 | lm loss PPL: 1.024808E+01 |")
    assert row == {"iteration": 45000, "event": "eval", "eval_loss": 2.327091}
    row = parse_validation(" validation loss at iteration 1000 on validation set | lm loss value: "
                           "2.724416E+00 | lm loss PPL: 15.25 |")
    assert (row["iteration"], row["eval_loss"]) == (1000, 2.724416)


def test_deepspeed_lines_from_the_corpus() -> None:
    lines = corpus()
    pipe = [parse_deepspeed_pipe(ln) for ln in lines if "iter time (s):" in ln]
    assert [r["iteration"] for r in pipe] == [30, 200, 100]
    assert pipe[1] == {"iteration": 200, "loss": 5.5508, "elapsed_s": 0.936,
                       "samples_per_s": 136.706}
    timers = [parse_deepspeed_timer(ln) for ln in lines if "SamplesPerSec=" in ln]
    assert [(r["iteration"], round(r["samples_per_s"], 2)) for r in timers] == [(6, 6.86),
                                                                               (40, 83.49)]


def test_torchtitan_with_ansi_colour(tmp_path: Path) -> None:
    # torchtitan/components/metrics.py: f"{color.red}step: {step:2}  {color.green}loss: ..."
    red, green, yellow, blue, cyan, magenta, reset = (
        "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[34m", "\x1b[36m", "\x1b[35m", "\x1b[39m")
    line = (f"[rank0]:[titan] 2025-06-16 22:30:50,322 - root - INFO - {red}step: 10  {green}loss:"
            f"  9.6012  {yellow}memory: 49.66GiB(52.28%)  {blue}tps: 5,856  {cyan}tflops: 339.16"
            f"  {magenta}mfu: 34.29%{reset}\n")
    it = traindoc.load(write(tmp_path, "titan.log", line)).iterations
    assert len(it) == 1
    r = it.iloc[0]
    assert (r["iteration"], r["loss"], r["tokens_per_s_per_gpu"], r["tflops"], r["mfu"],
            r["rank"]) == (10, 9.6012, 5856.0, 339.16, 34.29, 0)


def test_step_kv_lines_from_the_corpus() -> None:
    rows = [parse_step_kv(ln) for ln in corpus() if "step:" in ln]
    rows = [r for r in rows if r]
    big = next(r for r in rows if r["iteration"] == 700)
    assert big["tokens_per_s_per_gpu"] == 1541366.0
    diloco = [r for r in rows if r["iteration"] == 1244]
    assert sorted(r["rank"] for r in diloco) == [0, 1]
    assert diloco[0]["tokens_per_s"] == pytest.approx(89174.58)
    assert parse_step_kv("Resuming from step: 100") is None  # no throughput field


def test_lightning() -> None:
    row = parse_lightning("Epoch 0:  31%|███▏      | 10/32 [00:00<00:00, 58.54it/s, loss=0.804, "
                          "v_num=15]")
    assert row["iteration"] == 10 and row["loss"] == 0.804
    assert row["elapsed_s"] == pytest.approx(1 / 58.54)
    row = parse_lightning("Epoch 2:  50%|█████     | 16/32 [00:40<00:40,  2.50s/it, v_num=3, "
                          "train_loss=1.25]")
    assert (row["iteration"], row["epoch"], row["elapsed_s"], row["loss"]) == (80, 2.0, 2.5, 1.25)


def test_lightning_pads_a_nonfinite_loss() -> None:
    # FoxNickel/OmniAvatar train_log_save.txt (Lightning's Tqdm.format_num pads "nan" to "nan.0")
    row = parse_lightning("Epoch 0:   0%|          | 1/224174 [00:12<805:51:49,  0.08it/s, "
                          "v_num=22, train_loss_step=nan.0]")
    assert row["iteration"] == 1 and row["nan"] == 1 and row["loss"] != row["loss"]
    # the same padding of an inf ("inf" -> "inf.0") and of a minus inf ("-inf" -> "-inf.")
    row = parse_lightning("Epoch 1:  50%|█████     | 16/32 [00:40<00:40,  2.50s/it, v_num=3, "
                          "train_loss=inf.0]")
    assert row["nan"] == 1 and row["loss"] == float("inf")
    assert parse_lightning("Epoch 1:  50%|█████     | 16/32 [00:40<00:40,  2.50s/it, "
                           "loss=-inf.]")["nan"] == 1
    assert "nan" not in parse_lightning("Epoch 0:  31%|███▏      | 10/32 [00:00<00:00, "
                                        "58.54it/s, loss=0.804, v_num=15]")


def test_hf_dicts(tmp_path: Path) -> None:
    assert parse_hf_dict(HF_EXAMPLE) == ("train", {"loss": 1.5214, "grad_norm": 82.93941089686794,
                                                   "lr": 1.4285714285714286e-06, "epoch": 0.01})
    kind, row = parse_hf_dict("{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 0.00055, "
                              "'epoch': 0.01}                                  ")
    assert kind == "train" and row["grad_norm"] != row["grad_norm"]
    lines = [ln for ln in corpus() if "{'" in ln]
    text = "\n".join(lines) + ("\n{'train_runtime': 437.8544, 'train_samples_per_second': 25.132, "
                               "'train_steps_per_second': 3.145, 'train_loss': 0.4564, 'epoch': 3.0}\n")
    it = traindoc.load(write(tmp_path, "hf.log", text)).iterations
    train = it[it["event"].isna()]
    assert train["iteration"].tolist() == list(range(1, len(train) + 1))  # running count
    assert train["loss"].tolist()[:2] == [1.5214, 1.5197]
    ev = it[it["event"] == "eval"]
    assert ev["eval_loss"].round(4).tolist() == [0.662, 0.6605]
    assert ev["loss"].isna().all()
    summ = it[it["event"] == "train_summary"].iloc[0]
    assert summ["samples_per_s"] == 25.132 and pd.isna(summ["loss"])


def test_hf_count_is_per_source_and_step_wins(tmp_path: Path) -> None:
    write(tmp_path, "a.log", "{'loss': 1.0, 'learning_rate': 1e-05, 'epoch': 0.1}\n" * 3)
    write(tmp_path, "b.log", "{'loss': 2.0, 'learning_rate': 1e-05, 'epoch': 0.1, 'step': 500}\n"
          "{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 0.2}\n")
    it = traindoc.load(tmp_path).iterations
    by = it.groupby(sources(it).str.contains("a.log"))["iteration"].apply(list).to_dict()
    assert by[True] == [1, 2, 3]
    assert by[False] == [500, 501]


def test_whole_corpus_rows() -> None:
    it = traindoc.load(WORDINGS).iterations
    steps = it[it["event"].isna()]
    # every non-comment line that is a step line of a known format became a row
    assert steps["iteration"].notna().all()
    assert {"tflops", "samples_per_s", "tokens_per_s_per_gpu", "elapsed_s", "mfu"} <= {
        c for c in steps.columns if steps[c].notna().any()}
    assert len(steps) >= 35


# -- host_timings -----------------------------------------------------------------------------
# megatron/core/README_STRAGGLER.md (NVIDIA Megatron-LM), verbatim
STRAGGLER = ("[2024-03-14 23:07:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3468.20ms/0 | "
             "MnPwr/Rnk: 601796W/8 | MxPwr/Rnk: 683801W/18 | MnTmp/Rnk: 52C/0 | MxTmp/Rnk: 65C/21 | "
             "MnUtl/Rnk: 97%/8 | MxUtl/Rnk: 100%/6 | MnClk/Rnk: 1950MHz/28 | MxClk/Rnk: 1980MHz/0 | "
             "MnDRtt/Rnk: 14.27ms/23 | MxDRtt/Rnk: 34.65ms/3 | MnEtpt/Rnk: 296.02TF/0 | "
             "MxEtpt/Rnk: 297.32TF/8")
BOTTOM = "^^^^ Bottom 4 Ranks with lowest  Etpt(TF): 296.02/0, 296.17/2, 296.23/1, 296.23/4,"


def test_straggler_detector_lines() -> None:
    rows = parse_straggler(STRAGGLER)
    got = {r["metric"]: (r["value"], r["rank"]) for r in rows}
    assert got["Rtt/Mx"] == (3468.20, 0) and got["Rtt/Mn"] == (3453.08, 8)
    assert got["Clk/Mn"] == (1950.0, 28) and got["Etpt/Mn"] == (296.02, 0)
    assert len(rows) == 14
    bottom = parse_straggler(BOTTOM)
    assert [(r["metric"], r["rank"]) for r in bottom] == [("Etpt/Bottom", 0), ("Etpt/Bottom", 2),
                                                          ("Etpt/Bottom", 1), ("Etpt/Bottom", 4)]


def test_megatron_timer_blocks(tmp_path: Path) -> None:
    # megatron/core/timers.py: _get_global_min_max_time_string / _get_all_ranks_time_string
    text = (" iteration        7/     100 | elapsed time per iteration (ms): 5361.6 |\n"
            "(min, max) time across ranks (ms):\n"
            "    forward-backward ...............................: (26094.39, 26095.09)\n"
            "    optimizer ......................................: (3407.56, 3409.92)\n"
            "times across ranks (ms):\n"
            "  forward-compute:\n"
            "     rank  0: 3621.02\n"
            "     rank  1: 3700.50\n"
            "  backward-compute:\n"
            "     rank  0: 7000.00\n"
            "     rank  1: 7100.00\n"
            "[after training is done] datetime: 2024-01-01 00:00:00\n"
            "successfully saved checkpoint from iteration 50 to /ckpt [ t 1/1, p 1/1 ] (min, max) "
            "time across ranks (ms): save-checkpoint ................................: "
            "(24895.07, 24895.13)\n")
    inc = traindoc.load(write(tmp_path, "megatron.log", text))
    ht = inc.host_timings
    minmax = ht[ht["metric"] == "timer:forward-backward:max"]
    assert minmax["value"].tolist() == [26095.09] and minmax["iteration"].tolist() == [7]
    per = ht[ht["metric"] == "timer:forward-compute"]
    assert per.set_index("rank")["value"].to_dict() == {0: 3621.02, 1: 3700.5}
    assert len(ht[ht["metric"] == "timer:backward-compute"]) == 2
    assert ht[ht["metric"] == "timer:save-checkpoint:min"]["value"].tolist() == [24895.07]
    assert not ht["metric"].str.contains("after training").any()


def test_nodelists() -> None:
    pulse = ("[2022-05-01 03:56:11] PULSE: tr11-176B-ml is running for 1-07:27:33 since "
             "2022-04-29T20:28:38 (1528763 on 'gpu_p5' partition (jean-zay-iam[01-34,36-49])")
    assert parse_nodelist(pulse) == {"host": "jean-zay-iam[01-34,36-49]", "metric": "nodelist",
                                     "value": 48.0}
    waiting = ("[2022-05-01 03:56:11] PULSE: tr11-176B-ml is waiting to be scheduled "
               "(1528874_[1-3%1] on 'gpu_p5' partition)")
    assert parse_nodelist(waiting) is None
    assert parse_nodelist("SLURM_JOB_NODELIST=gpu-st-[1-4],login2")["value"] == 5.0
    assert parse_nodelist("   NodeList=node[001-003] BatchHost=node001")["host"] == "node[001-003]"
    assert parse_nodelist("   NodeList=(null)") is None


def test_benchmark_csv_wide_long_and_tsv(tmp_path: Path) -> None:
    wide = write(tmp_path, "bench.csv", "host,seconds,tflops\nn01,296.5,310\nn02,303.6,290.1\n")
    long = write(tmp_path, "long.csv", "hostname,gpu,metric,value\nn01,0,busbw_gbps,180\n")
    tsv = write(tmp_path, "b.tsv", "node\ttime_s\nn03\t12.5\n")
    inc = traindoc.load([wide, long, tsv])
    ht = inc.host_timings
    assert set(zip(ht["host"], ht["metric"], ht["value"], strict=False)) == {
        ("n01", "seconds", 296.5), ("n01", "tflops", 310.0), ("n02", "seconds", 303.6),
        ("n02", "tflops", 290.1), ("n01", "busbw_gbps", 180.0), ("n03", "time_s", 12.5)}
    assert ht[ht["metric"] == "busbw_gbps"]["rank"].tolist() == [0]
    lines = dict(zip(ht["host"], ht["source"].str.rsplit(":", n=1).str[1], strict=False))
    assert lines == {"n01": "2", "n02": "3", "n03": "2"}
    # a metrics export (step, loss) is not a benchmark table
    assert not looks_like_benchmark(Path("m.csv"), b"step,loss\n1,2.0\n")


def test_metric_direction() -> None:
    assert metric_direction("seconds") == 1 and metric_direction("time_s") == 1
    assert metric_direction("tflops") == -1 and metric_direction("busbw_gbps") == -1
    assert metric_direction("score") == 0


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_mmengine_and_mmcv_runner_lines(tmp_path: Path, engine: str) -> None:
    from traindoc.parse.iterations import parse_mmengine

    # InternLM/xtuner#187 (mmengine), junjie18/CMT#83 (mmcv): epoch-based runners count from
    # the first epoch in the log, as printed
    (tmp_path / "a.log").write_text(
        "10/30 22:19:57 - mmengine - INFO - Epoch(train) [1][240/735]  lr: 1.9813e-04  eta: "
        "2:44:49  time: 2.8874  data_time: 0.0042  memory: 10762  loss: 2.5128  grad_norm: nan\n"
        "2023-10-24 08:06:41,294 - mmdet - INFO - Epoch [7][5850/32025]\tlr: 7.146e-04, eta: 4 "
        "days, 0:19:04, time: 0.775, data_time: 0.025, memory: 30983, loss_cls: 0.4233, loss: "
        "31.4201, grad_norm: 3637.0292\n")
    it = traindoc.load(tmp_path / "a.log", engine=engine).iterations
    assert list(it["iteration"]) == [240, 735 + 5850]
    assert (it.iloc[0]["loss"], it.iloc[0]["elapsed_s"]) == (2.5128, 2.8874)
    assert (it.iloc[1]["lr"], it.iloc[1]["grad_norm"]) == (7.146e-04, 3637.0292)
    row = parse_mmengine("01/29 21:35:34 - mmengine - INFO - Iter(train) [ 10/720]  lr: "
                         "9.0001e-05  eta: 0:31:46  time: 2.6851  data_time: 0.0077  memory: "
                         "12762  loss: 2.6900")
    assert (row["iteration"], row["total_iterations"], row["loss"]) == (10, 720, 2.69)


def test_hf_dict_with_nan_grad_norm_is_a_nan_iteration(tmp_path) -> None:
    # AnswerDotAI/ModernBERT#233
    import traindoc
    from traindoc.diagnose import loss_spike

    p = tmp_path / "job.log"
    p.write_text("{'loss': 0.2051, 'grad_norm': nan, 'learning_rate': 9.774074342405685e-06, "
                 "'epoch': 0.53}\n{'loss': 0.0, 'grad_norm': nan, 'learning_rate': "
                 "9.773696745450087e-06, 'epoch': 0.53}\n")
    assert loss_spike.diagnose(traindoc.load(p)).facts["nan_iterations"] == [1, 2]


def test_nanogpt_lines() -> None:
    from traindoc.parse.iterations import parse_nanogpt

    # karpathy/nanoGPT#110
    row = parse_nanogpt("iter 1631: loss 4.0863, time 561.94ms")
    assert (row["iteration"], row["loss"]) == (1631, 4.0863)
    assert abs(row["elapsed_s"] - 0.56194) < 1e-9
    row = parse_nanogpt("iter 0: loss 10.9871, time 30542.10ms, mfu -100.00%")
    assert "mfu" not in row and row["iteration"] == 0
    assert parse_nanogpt("iter 100: loss 4.2, time 123.45ms, mfu 30.12%")["mfu"] == 30.12


def test_pythia_lines_carry_the_interval_time() -> None:
    from traindoc.parse.iterations import parse_pythia

    # facebookresearch/mmf#27 (Pythia v0.1)
    row = parse_pythia("iter: 600 train_loss: 2.1245  train_score: 0.4711  avg_train_score: "
                       "0.4355 val_score: 0.3736 val_loss: 2.5149 time(s): 329.9 s")
    assert row == {"iteration": 600, "interval_s": 329.9, "loss": 2.1245}
    assert parse_pythia("time(s): 3 s") is None


OLMO_BLOCK = """olmo.train:979  INFO    [step=20800/23842,epoch=0]
    train/masked_instances_local_rank=0
    optim/total_grad_norm=0.1075
    train/CrossEntropyLoss=1.834
    throughput/device/tokens_per_second=15,537
    System/Peak GPU Memory (MB)=51,497
[rank2]:[E531 18:49:48.928853486 ProcessGroupNCCL.cpp:629] [Rank 2] Watchdog caught
"""


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_olmo_metrics_block(tmp_path: Path, engine: str) -> None:
    # allenai/OLMo#846
    (tmp_path / "train.log").write_text(OLMO_BLOCK)
    it = traindoc.load(tmp_path / "train.log", engine=engine).iterations
    assert len(it) == 1
    row = it.iloc[0]
    assert (row["iteration"], row["total_iterations"], row["loss"]) == (20800, 23842, 1.834)
    assert (row["grad_norm"], row["tokens_per_s_per_gpu"]) == (0.1075, 15537.0)


# OLMo-core's ConsoleLoggerCallback (allenai/OLMo-core
# src/olmo_core/train/callbacks/console_logger.py: f"[step={step}/{max_steps or '???'},
# epoch={epoch},eta={eta}]", then f"    {name}={format_float(value)}" for its default metrics
# "train/CE loss", "optim/total grad norm", "optim/step skipped", "throughput/*")
OLMO_CORE_BLOCK = """2026-08-08 12:01:00 INFO [olmo_core.train.callbacks.console_logger:68] [step=100/2000,epoch=0,eta=5h11m]
    train/CE loss=6.2341
    train/PPL=511.9
    optim/total grad norm=0.7164
    optim/step skipped=0.0
    throughput/device/TPS=15,537
2026-08-08 12:03:10 INFO [olmo_core.train.trainer:1003] Saving checkpoint for step 100
2026-08-08 12:04:00 INFO [olmo_core.train.callbacks.console_logger:68] [step=200/???,epoch=1]
    train/CE loss=nan
    optim/total grad norm=nan
    optim/step skipped=1.0
"""


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_olmo_core_metrics_block(tmp_path: Path, engine: str) -> None:
    (tmp_path / "train.log").write_text(OLMO_CORE_BLOCK)
    it = traindoc.load(tmp_path / "train.log", engine=engine).iterations
    assert it["iteration"].tolist() == [100, 200]
    first, second = it.iloc[0], it.iloc[1]
    assert (first["total_iterations"], first["loss"], first["grad_norm"]) == (2000, 6.2341, 0.7164)
    assert (first["tokens_per_s_per_gpu"], first["skipped"]) == (15537.0, 0)
    assert pd.isna(second["total_iterations"]) and second["epoch"] == 1.0
    assert (second["skipped"], second["nan"]) == (1, 1)


# Composer's console blocks (llm-foundry): mosaicml/llm-foundry scripts/train/README.md (the
# first blocks, metrics indented by spaces as the README shows them), then a block of an
# epoch-based run with its global batch count and rates (the layout of
# mosaicml/composer composer/loggers/console_logger.py: a tab, a space, the prefix), then an
# evaluation as log_to_console prints it ("[Eval batch=…/…] Eval on eval data:")
COMPOSER_BLOCKS = """[batch=1/100]:
         Train LanguageCrossEntropy: 10.9736
         Train Perplexity: 58312.0586
         Train loss/train/total: 10.9736
[batch=2/100]:
         Train LanguageCrossEntropy: 10.9724
         Train Perplexity: 58243.8086
         Train loss/train/total: nan
[Eval batch=1/10] Eval on eval data
[Eval batch=10/10] Eval on eval data:
\t Eval metrics/eval/LanguageCrossEntropy: 2.3400
\t Eval metrics/eval/LanguagePerplexity: 10.3812
[epoch=2][batch=5/5]:
\t Train time/batch: 9
\t Train time/sample: 4096
\t Train loss/train/total: 8.4213
\t Train metrics/train/LanguageCrossEntropy: 8.4620
\t Train throughput/batches_per_sec: 0.0027
\t Train throughput/device/tokens_per_sec: 222.2194
\t Train lr-DecoupledAdamW/group0: 0.0001
\t Train l2_norm/grad/global: 0.0015
[token=29254495/100000000]:
\t Train loss/train/total: 8.1000
"""


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_composer_console_blocks(tmp_path: Path, engine: str) -> None:
    (tmp_path / "train.log").write_text(COMPOSER_BLOCKS)
    it = traindoc.load(tmp_path / "train.log", engine=engine).iterations
    # a block of a token-based run without its batch count names no step
    assert it["iteration"].tolist() == [1, 2, 2, 10]
    assert (it.iloc[0]["loss"], it.iloc[0]["total_iterations"]) == (10.9736, 100)
    assert it.iloc[1]["nan"] == 1
    assert (it.iloc[2]["event"], it.iloc[2]["eval_loss"]) == ("eval", 2.34)
    last = it.iloc[3]
    assert (last["loss"], last["epoch"], last["grad_norm"], last["lr"]) == (8.4213, 2.0, 0.0015,
                                                                           0.0001)
    assert last["elapsed_s"] == pytest.approx(1 / 0.0027)
    assert last["tokens_per_s_per_gpu"] == 222.2194 and pd.isna(last["total_iterations"])


@pytest.mark.parametrize(("line", "expected"), [
    # facebookresearch/fairseq#301 (epoch 15 of 8223 updates each)
    ("| epoch 015  4000 / 8223 loss=0.73 (0.96), wps=963, wpb=915, bsz=32, lr=0.001, clip=100%, "
     "gnorm=1.8137", {"iteration": 14 * 8223 + 4000, "loss": 0.73, "tokens_per_s": 963.0,
                      "grad_norm": 1.8137}),
    # NVIDIA/bionemo-framework (recipes) #740
    ("Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121 | global_batch_size:"
     " 1 | global_step: 120 | reduced_train_loss: 1.233 | train_step_timing in s: 0.03146 | "
     "val_loss: 4.106", {"iteration": 120, "total_iterations": 149, "loss": 1.233,
                         "elapsed_s": 0.03146}),
    # mks0601/Hand4Whole_RELEASE#31
    ("09-24 22:50:46 Epoch 0/7 itr 26/3489: lr: 0.0001 speed: 0.72(0.65s r0.07)s/itr 0.70h/epoch "
     "loss_smpl_pose: 0.3386", {"iteration": 26, "elapsed_s": 0.72, "lr": 0.0001}),
    # DLLXW/baby-llama2-chinese#17 (epoch 0 of 2; the step inside the epoch in parentheses)
    ("[2023-08-30 16:26:16,924][pretrain.py][INFO] Epoch:[0/2](6000/293491) loss:4.294 "
     "lr:0.0000991 epoch_Time:1053.0min:",
     {"iteration": 6000, "epoch": 0, "loss": 4.294, "lr": 0.0000991}),
    # huggingface/nanotron#390: human-format suffixes (K, G) and milliseconds named in the key
    ("10/17/2025 16:31:56 [INFO|DP=0|PP=0|TP=0]: iteration: 327281 / 378950 | consumed_tokens: "
     "85.8G | elapsed_time_per_iteration_ms: 11.5K | tokens_per_sec: 22.8K | tokens_per_sec_per_gpu"
     ": 11.4K | global_batch_size: 64 | lm_loss: 2.38 | lr: 1e-05 | model_tflops_per_gpu: 38.3 | "
     "hardware_tflops_per_gpu: 38.3 | grad_norm: 1.25",
     {"iteration": 327281, "total_iterations": 378950, "consumed_tokens": 85_800_000_000,
      "elapsed_s": 11.5, "tokens_per_s": 22800.0, "tokens_per_s_per_gpu": 11400.0,
      "global_batch_size": 64, "loss": 2.38, "lr": 1e-05, "tflops": 38.3, "grad_norm": 1.25}),
    # facebookresearch/fairseq#515 (fairseq 0.6-0.10: the update count is the iteration)
    ("| epoch 001:    300 / 1374 loss=13.689, ppl=13208.82, wps=51846, ups=0, wpb=277242.090, "
     "bsz=8636.772, num_updates=290, lr=7.34275e-06, gnorm=3.057, clip=0.000, oom=0.000, "
     "loss_scale=0.062, wall=1551, train_wall=1413",
     {"iteration": 290, "loss": 13.689, "tokens_per_s": 51846.0, "lr": 7.34275e-06,
      "grad_norm": 3.057, "loss_scale": 0.062}),
    # AI-Hypercomputer/maxtext#4847 and #8 (before mid-2024: "TFLOP/s", already per device)
    ("I0811 21:54:55.531340 138304841739136 metric_logger.py:226] completed step: 1, seconds: "
     "0.631, TFLOP/s/device: 5688.282, Tokens/s/device: 311629.521, total_weights: 1572864, loss:"
     " 12.979, lm_loss: 12.979, perplexity: 433358.281",
     {"iteration": 1, "elapsed_s": 0.631, "tflops": 5688.282, "tokens_per_s_per_gpu": 311629.521,
      "loss": 12.979}),
    ("completed step: 15107, seconds: 2.167, TFLOP/s: 36.722, loss: 2.191",
     {"iteration": 15107, "elapsed_s": 2.167, "tflops": 36.722, "loss": 2.191}),
    # jcjohnson/torch-rnn train.lua's line as printed in jcjohnson/torch-rnn#65 (the reporter's
    # script appends "time = …" with no unit: not read)
    ("Epoch 1.04 / 50, i = 8 / 10050, loss = 2.992056, time = 705.056393",
     {"iteration": 8, "total_iterations": 10050, "loss": 2.992056, "elapsed_s": None}),
    ("Epoch 3.50 / 50, i = 2400 / 48000, loss = 1.342871",
     {"iteration": 2400, "total_iterations": 48000, "loss": 1.342871}),
])
def test_kv_step_formats(line: str, expected: dict) -> None:
    from traindoc.parse.iterations import parse_kv_step

    row = parse_kv_step(line)
    assert row is not None
    for k, v in expected.items():
        if v is None:
            assert k not in row, k
        else:
            assert row[k] == pytest.approx(v), k


# The llama2.c-style "Epoch:[E/N](n/M)" line is printed with epochs from 0 by one family of
# scripts and from 1 by another: the file decides (an epoch 0 shown: from 0, else from 1).
EPOCH_PAREN_LOGS = [
    # DLLXW/baby-llama2-chinese#17 (pretrain.py prints `epoch`: from 0)
    ("Epoch:[0/2](293000/293491) loss:2.301 lr:0.0000987 epoch_Time:1044.0min:\n"
     "Epoch:[1/2](5/293491) loss:nan lr:0.0000987 epoch_Time:1044.0min:\n", [293000, 293005]),
    # Coicozoi/minimind-from-scratch logs/sft.log (MiniMind prints `epoch + 1`: from 1; one epoch)
    ("Epoch:[1/1](50/56608), loss: 2.4945, logits_loss: 2.4945, aux_loss: 0.0000, lr: 0.00001000,"
     " epoch_time: 116.0min\nEpoch:[1/1](56608/56608), loss: 1.8960, logits_loss: 1.8960, "
     "aux_loss: 0.0000, lr: 0.00000100, epoch_time: 0.0min\n", [50, 56608]),
    # Qihongfei-hub/my_minimind train_log.md @ e3cbee4 (MiniMind, 3 epochs; its epoch-2 line is
    # real, the epoch-1 line before it is made in the same format to show the wrap)
    ("Epoch:[1/3](44100/44160), loss: 2.2000, logits_loss: 2.2000, aux_loss: 0.0000, "
     "learning_rate: 0.00016000, epoch_time: 213.000min\n"
     "Epoch:[2/3](1400/44160), loss: 2.1583, logits_loss: 2.1583, aux_loss: 0.0000, "
     "learning_rate: 0.00015239, epoch_time: 213.000min\n", [44100, 44100 + 1400]),
]


@pytest.mark.parametrize(("text", "steps"), EPOCH_PAREN_LOGS)
def test_epoch_paren_counts_epochs_as_its_file_does(tmp_path: Path, text: str,
                                                    steps: list[int]) -> None:
    from traindoc.diagnose.loss_spike.series import series

    (tmp_path / "train.log").write_text(text)
    s = series(traindoc.load(tmp_path / "train.log"))
    assert list(s["iteration"]) == steps
    assert s["loss"].isna().any() == ("nan" in text)


def test_verl_step_lines() -> None:
    from traindoc.parse.iterations import parse_step_kv

    # verl-project/verl#2060 (cut by the poster after prompt_length)
    row = parse_step_kv(
        "step:1 - global_seqlen/min:484245.000 - global_seqlen/max:519990.000 - actor/entropy:0.323"
        " - actor/kl_loss:0.000 - actor/kl_coef:0.001 - actor/pg_loss:0.001 - actor/pg_clipfrac:"
        "0.001 - actor/ppo_kl:-0.000 - actor/pg_clipfrac_lower:0.000 - actor/grad_norm:0.020 - "
        "perf/mfu/actor:0.343 - perf/max_memory_allocated_gb:62.447 - actor/lr:0.000 - "
        "training/global_step:1.000 - training/epoch:0.000 - critic/score/mean:0.558")
    assert row is not None and row["iteration"] == 1 and row["grad_norm"] == 0.02
    assert row["mfu"] == pytest.approx(34.3) and "loss" not in row  # (pg_loss is no LM loss)
    # a line built for this test from the keys of verl's compute_throughout_metrics (tokens/s
    # per GPU, its docstring says) and the numpy scalars newer verl prints
    row = parse_step_kv("step:3 - actor/grad_norm:np.float64(0.0284423828125) - "
                        "perf/time_per_step:17.620004686992615 - perf/throughput:11.733822077392881")
    assert row is not None and row["grad_norm"] == 0.0284423828125
    assert (row["elapsed_s"], row["tokens_per_s_per_gpu"]) == (17.620004686992615, 11.733822077392881)


def test_deit_json_epoch_lines() -> None:
    from traindoc.parse.iterations import parse_json_epoch

    # yuhuan-wu/P2T#13 (DeiT's log.txt): one JSON object per epoch
    assert parse_json_epoch(
        '{"train_lr": 0.000756975500796447, "train_loss": 3.762699702232004, "test_loss": '
        '1.2603078159212155, "test_acc1": 71.27800225585938, "test_acc5": 90.97800259765626, '
        '"epoch": 100, "n_parameters": 11590840}') == {
        "iteration": 100, "epoch": 100.0, "loss": 3.762699702232004, "lr": 0.000756975500796447}
    assert parse_json_epoch('{"train_loss": "n/a", "epoch": 3}') is None
    assert parse_json_epoch('{"train_loss": 1.0, "epoch": 3') is None  # cut


def test_a_trainers_own_skip_guard_is_a_skipped_step(tmp_path: Path) -> None:
    from traindoc.parse.iterations import parse_overflow

    # facebookresearch/fairseq#515
    assert parse_overflow("| WARNING: overflow detected, setting loss scale to: 0.03125") == {
        "skipped": 1, "loss_scale": 0.03125}

    # Kai-46/minFM#4: a tqdm bar with the trainer's warning glued behind it
    line = ("Training:  78%|███████▊  | 1556/2000 [6:15:28<1:55:17, 15.58s/step]2025-08-23 "
            "06:19:20,889 - trainers.dit_trainer - WARNING - Step 1557: detected nan/inf/spiky "
            "gradient (norm=2.1966569423675537); skipping optimizer step.")
    assert parse_overflow(line) == {"iteration": 1557, "skipped": 1}
    (tmp_path / "train.log").write_text(line + "\n")
    it = traindoc.load(tmp_path / "train.log").iterations
    assert list(it["iteration"]) == [1557] and list(it["skipped"]) == [1]


def test_tf_example_and_onmt_lines() -> None:
    from traindoc.parse.iterations import parse_onmt
    from traindoc.parse.metric_lines import parse_metric_line

    # tensorflow/models#1264: the generic reader's (its "sec/batch" unit)
    assert parse_metric_line("2017-03-28 14:49:10.061204: step 10, loss = 4.59 (821.9 "
                             "examples/sec; 0.156 sec/batch)") == {
        "iteration": 10, "loss": 4.59, "samples_per_s": 821.9, "elapsed_s": 0.156}
    # OpenNMT/OpenNMT-py#431
    assert parse_onmt("Epoch  2, 52600/733817; acc:  42.20; ppl:  22.37; 998 src tok/s; 1132 tgt "
                      "tok/s;   6234 s elapsed") == {"iteration": 52600, "tokens_per_s": 2130.0}


EPOCH_BATCH_LOG = (
    # SeanNaren/deepspeech.pytorch#127 and apache/mxnet#75
    "Epoch: [11][1/48]\tTime 0.470 (1.206)\tData 0.076 (0.004)\tLoss 3.2168 (37.0903)\t\n"
    "Epoch: [11][2/48]\tTime 0.407 (1.204)\tData 0.002 (0.004)\tLoss 3.6915 (37.0201)\t\n"
    "Epoch: [12][1/48]\tTime 0.401 (1.204)\tData 0.002 (0.004)\tLoss 3.6915 (37.0201)\t\n"
)
MX_LOG = ("Epoch[0] Batch [20]\tSpeed: 95.71 samples/sec\tTrain-CrossEntropy=3.167187\n"
          "Epoch[0] Batch [40]\tSpeed: 94.49 samples/sec\tTrain-CrossEntropy=2.297927\n"
          "Epoch[1] Batch [20]\tSpeed: 46.48 samples/sec\tTrain-CrossEntropy=0.6\n")
# RTM3D#4: the ImageNet example's meter with the epoch count; MzeroMiko/VMamba#273: Swin's main.py
IMAGENET_TOTAL_LOG = (
    "Train - Epoch: [127/300][ 35/464]\tTime  0.738 ( 0.738)\tData  0.000 ( 0.014)\tLoss "
    "2.1274e+00 (1.5406e+00)\n"
    "Train - Epoch: [127/300][ 85/464]\tTime  0.730 ( 0.730)\tData  0.000 ( 0.006)\tLoss "
    "1.2996e+00 (1.5485e+00)\n")
SWIN_LOG = (
    "[2024-07-27 03:32:50 vssm1_high_tiny_gradacc2] (main.py 295): INFO Train: [29/300][2670/2859]"
    "\teta 0:01:24 lr 0.000872\t wd 0.0500\ttime 0.4283 (0.4481)\tdata time 0.0008 (0.0122)\t"
    "model time 0.4275 (0.4359)\tloss 2.0148 (1.9972)\tgrad_norm 4.1605 (inf)\tloss_scale "
    "32768.0000 (34681.8180)\tmem 16138MB\n"
    "[2024-07-27 03:32:55 vssm1_high_tiny_gradacc2] (main.py 295): INFO Train: [30/300][10/2859]"
    "\teta 0:01:20 lr 0.000871\t wd 0.0500\ttime 0.4272 (0.4481)\tdata time 0.0015 (0.0122)\t"
    "model time 0.4256 (0.4359)\tloss 2.1019 (1.9973)\tgrad_norm 2.5604 (inf)\tloss_scale "
    "32768.0000 (34674.6796)\tmem 16138MB\n")
TF_EPOCH_LOG = "\tEpoch: 0001 cost= 29.860479714\n\ttime this epoch= 1.749361\n"
# SNU-ARC/Ginex#6 (PyG's GraphSAGE epoch lines): the epoch's loss, then its time in ms
GINEX_EPOCH_LOG = ("Running Epoch 0...\nEpoch 00, Loss: 1.8456, Approx. Train: 0.4851\n"
                   "Epoch time: 948457.4916 ms\n\n==============================\n"
                   "Running Epoch 1...\nEpoch 01, Loss: 1.6139, Approx. Train: 0.5369\n"
                   "Epoch time: 487353.0626 ms\n")


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_epoch_batch_counts_on_across_epochs(tmp_path: Path, engine: str) -> None:
    (tmp_path / "a.log").write_text(EPOCH_BATCH_LOG)
    it = traindoc.load(tmp_path / "a.log", engine=engine).iterations
    assert list(it["iteration"]) == [1, 2, 49]  # epoch 12 continues after epoch 11's 48
    assert list(it["elapsed_s"]) == [0.470, 0.407, 0.401] and it["loss"].iloc[0] == 3.2168
    (tmp_path / "b.log").write_text(MX_LOG)
    it = traindoc.load(tmp_path / "b.log", engine=engine).iterations
    assert list(it["iteration"]) == [20, 40, 60]
    assert list(it["samples_per_s"]) == [95.71, 94.49, 46.48]
    (tmp_path / "d.log").write_text(IMAGENET_TOTAL_LOG)
    it = traindoc.load(tmp_path / "d.log", engine=engine).iterations
    assert list(it["iteration"]) == [35, 85] and list(it["loss"]) == [2.1274, 1.2996]
    (tmp_path / "e.log").write_text(SWIN_LOG)
    it = traindoc.load(tmp_path / "e.log", engine=engine).iterations
    # Swin counts epochs from 0: epoch 29 comes after 29 epochs of 2859, epoch 30 after it
    assert list(it["iteration"]) == [29 * 2859 + 2670, 30 * 2859 + 10]
    assert list(it["loss"]) == [2.0148, 2.1019] and list(it["grad_norm"]) == [4.1605, 2.5604]
    assert list(it["elapsed_s"]) == [0.4283, 0.4272] and list(it["lr"]) == [0.000872, 0.000871]
    assert list(it["loss_scale"]) == [32768.0, 32768.0]
    (tmp_path / "c.log").write_text(TF_EPOCH_LOG)
    it = traindoc.load(tmp_path / "c.log", engine=engine).iterations
    assert (it.iloc[0]["iteration"], it.iloc[0]["elapsed_s"]) == (1, 1.749361)
    (tmp_path / "e.log").write_text(GINEX_EPOCH_LOG)
    it = traindoc.load(tmp_path / "e.log", engine=engine).iterations
    assert list(it["iteration"]) == [0, 1] and list(it["loss"]) == [1.8456, 1.6139]
    assert list(it["elapsed_s"]) == pytest.approx([948.4574916, 487.3530626])


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_a_closed_keras_epoch_leaves_the_next_lines_to_the_other_readers(tmp_path: Path,
                                                                        engine: str) -> None:
    # Keras fit()'s epoch (the shape of KERAS_END_RE's comment), then a step line of another
    # writer (tenstorrent/tt-metal#45335, the generic reader's example) before the next epoch
    (tmp_path / "a.log").write_text(
        "Epoch 1/2\n1490/1490 [==============================] - 25s 17ms/step - loss: 0.3100 - "
        "val_loss: 0.2900\nStep: 4970, Loss: 0.189453, Time: 1638.07 ms\nEpoch 2/2\n"
        "1490/1490 [==============================] - 25s 17ms/step - loss: 0.2100 - "
        "val_loss: 0.1900\n")
    it = traindoc.load(tmp_path / "a.log", engine=engine).iterations
    assert list(it["iteration"]) == [1, 4970, 2]


# MindSpore's LossMonitor then TimeMonitor: once an epoch in sink mode (corpus
# throughput-food-conformer-mindspore-steady, "Train " prefixed; a MatchNet README's 8p run), the
# epoch in seconds and the step in ms (a model zoo README: "epoch time: 185.432 s, per step
# time: 23178.955 ms"); per step where LossMonitor prints every step, the time line closing
# the epoch
MINDSPORE_SINK_LOG = (
    "epoch: 1 step: 62, loss is 2.279783010482788\n"
    "Train epoch time: 230188.469 ms, per step time: 3712.717 ms\n"
    "epoch: 1 acc: 0.33482142857142855, best acc is 0.33482142857142855\n"
    "epoch: 2 step: 1954, loss is 0.09641222655773163\n"
    "Train epoch time: 112773.925 ms, per step time: 57.714 ms\n"
    "epoch: 3 step: 8, loss is 8.101629\n"
    "epoch time: 0.490 s, per step time: 61.248 ms\n")
MINDSPORE_STEPS_LOG = (
    "epoch: 1 step: 1, loss is 2.30\nepoch: 1 step: 2, loss is 2.20\n"
    "epoch time: 140522.500, per step time: 224.836, avg loss: 5.258\n"
    "epoch: 2 step: 1, loss is 2.00\nepoch: 2 step: 2, loss is 1.90\n")


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_mindspore_time_monitor_closes_the_epoch(tmp_path: Path, engine: str) -> None:
    (tmp_path / "a.log").write_text(MINDSPORE_SINK_LOG)
    it = traindoc.load(tmp_path / "a.log", engine=engine).iterations
    assert list(it["event"]) == ["epoch"] * 3 and list(it["iteration"]) == [1, 2, 3]
    assert list(it["elapsed_s"]) == pytest.approx([3.712717, 0.057714, 0.061248])
    assert list(it["loss"]) == pytest.approx([2.279783010482788, 0.09641222655773163, 8.101629])
    (tmp_path / "b.log").write_text(MINDSPORE_STEPS_LOG)
    it = traindoc.load(tmp_path / "b.log", engine=engine).iterations
    steps = it[it["event"].isna()]
    assert list(steps["iteration"]) == [1, 2, 1, 2] and list(steps["epoch"]) == [1, 1, 2, 2]
    assert list(steps["loss"]) == pytest.approx([2.3, 2.2, 2.0, 1.9])
    epochs = it[it["event"] == "epoch"]
    assert list(epochs["iteration"]) == [1] and epochs["loss"].isna().all()
    assert list(epochs["elapsed_s"]) == pytest.approx([0.224836])


# vinthony/GLPDepth#13 (corpus loss_spike-glpdepth-13-nan-epoch-11): an epoch's header, then
# pytorch-cifar's progress bar (utils.progress_bar: "  Step: %s" | " | Tot: %s" | msg, the counter
# after the message, or inside the bar when a redraw garbles it), its loss the epoch's running
# mean; the test loop's bar after it; a TensorRT benchmark's eval bar ("Step: 4ms | Tot:
# 44s170ms | Acc: 94.9 (9490/10000)") has no step of 4
GLPDEPTH_LOG = (
    "Epoch: 010 - 025\n"
    " [=============================>]  St 6057/6057  Tot: 41m50s | Rem: 10h28s | Depth Loss: "
    "0.1365 (0.0447)9)\n"
    " [=========== 654/654 =========>]  Step: 052ms | Tot: 35s649ms | Rem: 08m34s\n\n"
    "Epoch: 011 - 025\n"
    " [============================ 6057/6057 404ms | Tot: 40m47s | Rem: 9h31m | Depth Loss: nan "
    "(nan)n))n)31)2)\n"
    "WARNING:root:NaN or Inf found in input tensor.\n"
    " [=========== 654/654 =========>]  Step: 051ms | Tot: 35s674ms | Rem: 07m55s\n")
CIFAR_BAR_LOG = (
    "Epoch: 0\n"
    " [=======================>]  Step: 88ms | Tot: 34s394ms | Loss: 1.626 | Acc: 40.172% "
    "(20086/50000) 391/391 \n"
    " [=======================>]  Step: 15ms | Tot: 1s864ms | Loss: 1.384 | Acc: 50.040% "
    "(5004/10000) 100/100 \n"
    " [============================ 10000/10000 =======================>]  Step: 4ms | Tot: "
    "44s170ms | Acc: 94.9 (9490/10000)\n")


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_an_epochs_text_bar_closes_the_epoch(tmp_path: Path, engine: str) -> None:
    (tmp_path / "a.log").write_text(GLPDEPTH_LOG)
    it = traindoc.load(tmp_path / "a.log", engine=engine).iterations
    # (tensorboardX's "NaN or Inf found in input tensor." is a NaN event of its own, which the
    # loss runbook places at the epoch its line follows)
    it = it[~it["line"].astype(str).str.contains("NaN or Inf found")]
    assert list(it["iteration"]) == [10, 11] and list(it["event"]) == ["epoch", "epoch"]
    assert it["loss"].iloc[0] == 0.1365 and it["nan"].iloc[1] == 1
    assert list(it["elapsed_s"]) == [2510.0, 2447.0]
    (tmp_path / "b.log").write_text(CIFAR_BAR_LOG)
    it = traindoc.load(tmp_path / "b.log", engine=engine).iterations
    rated = it[it["loss"].notna()]  # (the header's own row, "Epoch: 0", has no metric)
    assert list(rated["iteration"]) == [0] and rated["loss"].iloc[0] == 1.626  # not "step 88"
    assert rated["elapsed_s"].iloc[0] == pytest.approx(34.394)
    assert set(it["iteration"]) == {0}


# TensorFlow's Transformer tutorial as tensorflow/tensorflow#28621 pasted it: batch lines, then the
# epoch's loss and "Time taken for 1 epoch: … secs"; the epoch is its own row (event "epoch"),
# never a step among the batch lines' counter, and its time is the throughput runbook's series
TF_TUTORIAL_EPOCH_LOG = (
    "Epoch 1 Batch 0 Loss 4.4481 Accuracy 0.0000\nEpoch 1 Batch 500 Loss 3.6211 Accuracy 0.0405\n"
    "Epoch 1 Loss 3.3870 Accuracy 0.0524\nTime taken for 1 epoch: 630.2422263622284 secs\n\n"
    "Epoch 2 Batch 0 Loss 2.7912 Accuracy 0.1001\nEpoch 2 Batch 500 Loss 2.4382 Accuracy 0.1176\n"
    "Epoch 2 Loss 2.3831 Accuracy 0.1230\nTime taken for 1 epoch: 495.0642912387848 secs\n\n"
    "Epoch 3 Batch 0 Loss 2.3392 Accuracy 0.1482\nEpoch 3 Batch 500 Loss 2.1384 Accuracy 0.1470\n"
    "Epoch 3 Loss 2.1120 Accuracy 0.1501\nTime taken for 1 epoch: 148.81153535842896 secs\n")


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_an_epoch_time_after_its_loss_line(tmp_path: Path, engine: str) -> None:
    from traindoc.diagnose.throughput.series import steps_with_seconds

    (tmp_path / "a.log").write_text(TF_TUTORIAL_EPOCH_LOG)
    inc = traindoc.load(tmp_path / "a.log", engine=engine)
    it = inc.iterations
    epochs = it[it["event"] == "epoch"]
    assert list(epochs["iteration"]) == [1, 2, 3] and list(epochs["loss"]) == [3.387, 2.3831, 2.112]
    assert list(epochs["elapsed_s"]) == pytest.approx([630.2422263622284, 495.0642912387848,
                                                       148.81153535842896])
    assert list(it[it["event"].isna()]["iteration"]) == [0, 500] * 3
    assert list(steps_with_seconds(inc)["elapsed_s"]) == pytest.approx(list(epochs["elapsed_s"]))


@pytest.mark.parametrize(("line", "expected"), [
    # NVIDIA/waveglow#32
    ("step_78540:\tloss_-4.065555573", {"iteration": 78540, "loss": -4.065555573}),
    # Lightning-AI/litgpt#185
    ("iter 16 step 1: loss nan, train time: 1405.01ms", {"iteration": 16, "elapsed_s": 1.40501}),
    # danijar/dreamer#58
    ("[5000] expl_amount 0.0 / model_grad_norm nan / value_grad_norm 40.3 / actor_grad_norm 0.3 / "
     "prior_ent 61.4 / model_loss 5864.5 / value_loss 6.4", {"iteration": 5000, "loss": 5864.5}),
    # nv-tlabs/LION#9
    ("2023-01-25 00:21:34.569 | INFO     | trainers.base_trainer:train_epochs:256 - [R0] | E6 "
     "iter[ 14/ 15] | [Loss] nan | [exp] ./exp/0125/car/x | [step]   104 | [url] none",
     {"iteration": 104}),
    # BVLC/caffe#1255 (older Caffe) and wy1iu/sphereface#103 (the rate since Caffe 1.0)
    ("I1010 17:40:30.682349 24907 solver.cpp:191] Iteration 1000, loss = 8.26466",
     {"iteration": 1000, "loss": 8.26466}),
    ("I0718 05:27:41.934793 23375 solver.cpp:218] Iteration 23500 (1.00034 iter/s, 99.9662s/100 "
     "iters), loss = 38.7695", {"iteration": 23500, "loss": 38.7695, "elapsed_s": 1 / 1.00034}),
    # open-mmlab/OpenPCDet#1229 (its timm-style logger: Acc_iter is the iteration)
    ("2023-01-05 16:34:49,377   INFO  Train:    1/3 ( 33%) [  49/323 ( 15%)]  Loss: 36.77 (81.7)  "
     "LR: 1.351e-04  Time cost: 00:15/01:25 [00:15/04:48]  Acc_iter 50          Data time: "
     "0.00(0.02)  Forward time: 0.31(0.29)  Batch time: 0.31(0.31)",
     {"iteration": 50, "loss": 36.77, "lr": 1.351e-04, "elapsed_s": 0.31}),
    # Lightning-AI/litgpt#1607 (litgpt's pretrain since 2024)
    ("Epoch 34 | iter 3050700 step 610140 | loss train: 2.846, val: 2.861 | iter time: 112.20 ms "
     "(step) remaining time: 0:01:54", {"iteration": 3050700, "loss": 2.846, "elapsed_s": 0.1122}),
    # RVC-Project/Retrieval-based-Voice-Conversion-WebUI#1882 (no rate: only the line's time)
    ("2024-04-10 05:01:07 | INFO | logs | Total loss at epoch 5, step at 58600, "
     "loss=33.73411178588867", {"iteration": 58600, "loss": 33.73411178588867}),
    # NLUT#12
    (" iter 3700   time/iter: 0.50  lr: 0.000100 loss_mn: 0.0016 loss_c: 0.5781   loss_s: 2.8997"
     "   loss_mse: 0.0280 losses: 3.4793", {"iteration": 3700, "loss": 3.4793, "elapsed_s": 0.5}),
    # one line per epoch, the epoch the iteration. MouseLand/cellpose#450: the training clock
    ("2022-02-18 01:46:44,126 [INFO] Epoch 10, Time 9074.8s, Loss 0.5035, LR 0.2000",
     {"iteration": 10, "train_time_s": 9074.8, "loss": 0.5035, "lr": 0.2}),
    # MouseLand/cellpose#594 (with a test loss) and #403 (a padded time)
    ("2022-01-05 21:36:32,809 [INFO] Epoch 190, Time 43354.3s, Loss 0.6758, Loss Test 0.3793, "
     "LR 0.2000", {"iteration": 190, "train_time_s": 43354.3, "loss": 0.6758}),
    ("INFO: cellpose: 2021-12-10 09:40:52,305 [INFO] Epoch 8, Time  5.2s, Loss 1.3378, Loss Test "
     "2570.9651, LR 0.2000", {"iteration": 8, "train_time_s": 5.2, "loss": 1.3378}),
    # cellpose 3-4 (train.py's train_logger): the clock since t0 too. MouseLand/cellpose#1377
    ("2025-12-01 12:10:57,884 [INFO] 350, train_loss=0.2587, test_loss=0.0000, LR=0.000010, "
     "time 1736.08s", {"iteration": 350, "train_time_s": 1736.08, "loss": 0.2587, "lr": 1e-05}),
    # chou141253/FGVC-HERBS#19: the epoch's seconds (misspelt too)
    ("Start Training 59 Epoch..0%..10%..20%..30%..40%..50%..60%..70%..80%..90%....[success]"
     "[4623.6682 seconds]", {"iteration": 59, "elapsed_s": 4623.6682}),
    ("Start Training 54 Epoch..0%..10%..20%..30%..40%..50%..60%..70%..80%..90%....[success]"
     "[172.7062 sceonds]", {"iteration": 54, "elapsed_s": 172.7062}),
    # caiyuanhao1998/MST#7: the epoch's seconds
    ("2022-07-21 04:20:03,677 - INFO: ===> Epoch 222 Complete: Avg. Loss: 0.013878 time: 659.40",
     {"iteration": 222, "loss": 0.013878, "elapsed_s": 659.40}),
    # t5x's trainer.py (log_every_n_seconds "Training: step %d"): google-research/t5x, the
    # architecture-objective#26 paste; a TF script's logging.info("Training: step %d, accuracy:
    # %g") with the metric after it
    ("I1115 16:00:39.451247 140641718562816 trainer.py:501] Training: step 198", {"iteration": 198}),
    ("INFO:root:Training: step 1200, accuracy: 0.98", {"iteration": 1200}),
])
def test_simple_step_formats(line: str, expected: dict) -> None:
    from traindoc.parse.iterations import parse_simple_step

    row = parse_simple_step(line)
    assert row is not None
    for k, v in expected.items():
        assert row[k] == pytest.approx(v), k


def test_nan_read_as_a_float_marks_the_step(tmp_path: Path) -> None:
    # karpathy/nanoGPT#215: "loss nan" (no colon) is a NaN step
    (tmp_path / "a.log").write_text("iter 3000: loss 3.9883, time 1099.34ms, mfu 15.34%\n"
                                    "iter 3010: loss nan, time 1019.95ms, mfu 14.12%\n")
    it = traindoc.load(tmp_path / "a.log").iterations
    assert list(it["nan"].fillna(0)) == [0, 1]


def test_megatron_line_broken_at_its_bars_is_one_record(tmp_path: Path) -> None:
    # NVIDIA-NeMo/Megatron-Bridge#5306
    (tmp_path / "a.log").write_text(
        "iteration 5/50 | elapsed time per iteration: 21392.5 ms |\n"
        "learning rate: 1.350000E-04 | global batch size: 4096 |\n"
        "loss scale: 1.0 | grad norm: nan |\n"
        "number of skipped iterations: 0 | number of nan iterations: 0\n"
        "iteration 6/50 | elapsed time per iteration: 21000.0 ms | number of nan iterations: 0 |\n")
    it = traindoc.load(tmp_path / "a.log").iterations
    assert list(it["iteration"]) == [5, 6]
    assert it.iloc[0]["lr"] == pytest.approx(1.35e-4) and it.iloc[0]["loss_scale"] == 1.0


@pytest.mark.parametrize("summary", [
    # bigscience-workshop/bigscience experiments/gpt2-hf-ds/hf_ds_gpt2_base_n4-1832555.out
    # (16 steps, logging_steps above that: only the end-of-run dict and the bars)
    "{'train_runtime': 919.097, 'train_samples_per_second': 1.088, 'train_steps_per_second': "
    "0.017, 'epoch': 1.0}",
    # a model card's "Training output", found by find_string (id 35357560349; the index names no
    # repository)
    "{'train_runtime': 11.8075, 'train_samples_per_second': 42.431, 'train_steps_per_second': "
    "5.336, 'train_loss': 0.9835215977260044, 'epoch': 3.0}",
])
def test_an_hf_summary_before_any_logged_step_is_at_no_step(tmp_path: Path, summary: str) -> None:
    """With no training dict before it, the end-of-run dict counts no step (it is not step 0):
    the bars say how far the run got."""
    (tmp_path / "a.log").write_text(
        summary + "\n100%|██████████| 16/16 [15:19<00:00, 57.45s/it]\n")
    inc = traindoc.load(tmp_path / "a.log")
    assert inc.iterations["iteration"].isna().all()
    from traindoc.diagnose.common import last_progress

    assert last_progress(inc).step == 16
    p = HFTrainerParser()
    p.feed("{'loss': 1.52, 'grad_norm': 82.9, 'learning_rate': 1.4e-06, 'epoch': 0.01}")
    assert p.feed(summary)[0][1]["iteration"] == 1  # after a logged step: that step


# Per-trainer patterns stay only where the generic reader (parse/metric_lines.py) gives a wrong
# row (issue 26): each kept pattern's real line, and what the generic reader gets wrong on it.
KEPT_PATTERNS = [
    # NVIDIA/waveglow#32: "loss_-4.06" glues key and value: no row
    ("step_78540:\tloss_-4.065555573", "loss"),
    # Lightning-AI/litgpt#185: "train time" is no key the generic reader knows
    ("iter 16 step 1: loss nan, train time: 1405.01ms", "elapsed_s"),
    # danijar/dreamer#58: "[5000]" and model_loss among other losses: no row
    ("[5000] expl_amount 0.0 / model_grad_norm nan / value_grad_norm 40.3 / actor_grad_norm 0.3 / "
     "prior_ent 61.4 / model_loss 5864.5 / value_loss 6.4", "loss"),
    # RVC-Project/Retrieval-based-Voice-Conversion-WebUI#1882: "step at N" is read now (as
    # DeepSpeedExamples' "Step at 84 with Perplexity"), "epoch N" after "at" is not
    ("2024-04-10 05:01:07 | INFO | logs | Total loss at epoch 5, step at 58600, "
     "loss=33.73411178588867", "epoch"),
    # BVLC/caffe / wy1iu/sphereface#103: the rate "1.00034 iter/s" is missed
    ("I0718 05:27:41.934793 23375 solver.cpp:218] Iteration 23500 (1.00034 iter/s, 99.9662s/100 "
     "iters), loss = 38.7695", "elapsed_s"),
    # NLUT#12: the generic reader takes the first loss part (loss_mn), not the total "losses"
    (" iter 3700   time/iter: 0.50  lr: 0.000100 loss_mn: 0.0016 loss_c: 0.5781   loss_s: 2.8997"
     "   loss_mse: 0.0280 losses: 3.4793", "loss"),
    # facebookresearch/fairseq#301: "epoch 015  4000 / 8223": no row
    ("| epoch 015  4000 / 8223 loss=0.73 (0.96), wps=963, wpb=915, bsz=32, lr=0.001, clip=100%, "
     "gnorm=1.8137", "iteration"),
    # mks0601/Hand4Whole_RELEASE#31: "itr 26/3489": no row
    ("09-24 22:50:46 Epoch 0/7 itr 26/3489: lr: 0.0001 speed: 0.72(0.65s r0.07)s/itr 0.70h/epoch "
     "loss_smpl_pose: 0.3386", "iteration"),
    # AI-Hypercomputer/maxtext#8: "seconds" is no key the generic reader knows
    ("completed step: 15107, seconds: 2.167, TFLOP/s: 36.722, loss: 2.191", "elapsed_s"),
    # nanoGPT: "-100.00%" before the first measurement is no MFU
    ("iter 0: loss 10.9877, time 29632.61ms, mfu -100.00%", "mfu"),
]


@pytest.mark.parametrize(("line", "column"), KEPT_PATTERNS, ids=[c for _, c in KEPT_PATTERNS])
def test_a_kept_pattern_reads_what_the_generic_reader_gets_wrong(line: str, column: str) -> None:
    from traindoc.parse import LINE_PARSERS
    from traindoc.parse.metric_lines import parse_metric_line

    own = next(r for p in LINE_PARSERS if not p.fallback
               and any(n in line for n in p.needles) and (r := p.parse(line)) is not None)
    generic = parse_metric_line(line) or {}
    assert generic.get(column) != own.get(column)


def test_a_training_start_banner_is_no_step() -> None:
    from traindoc.parse.iterations import parse_simple_step

    assert parse_simple_step("INFO Starting training: step 0 -> 20000") is None
