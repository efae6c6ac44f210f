"""traindoc.parse.metrics: TensorBoard, W&B, HF Trainer and Lightning metric exports."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pandas as pd
import pytest

import traindoc
from conftest import DATA
from traindoc.diagnose.loss_spike import series as ls_series
from traindoc.parse import FILE_LOADERS
from traindoc.parse.metrics import LOADER, looks_like_metrics, tag_from_name
from traindoc.schema import sources

WANDB = DATA / "loss_spike" / "wandb_lr_jump" / "history.csv"
# The rows of BLOOM's seed (iterations 31214-31219) as TensorBoard would export Megatron's
# "lm loss" and "grad-norm" tags (training_log's writer.add_scalar names).
SEED = [(31214, 2.198845, 0.242), (31215, 2.220424, 0.947), (31216, 2.595213, 2.390),
        (31217, 2.241558, 15.886), (31218, 2.345279, 145.119), (31219, 5.098124, 960.351)]


def tb_csv(path: Path, rows: list[tuple[int, float]], t0: float = 1647000000.0) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["Wall time", "Step", "Value"])  # scalars_plugin.py's header
        for i, (step, v) in enumerate(rows):
            w.writerow([t0 + 106 * i, step, v])
    return path


def test_registered() -> None:
    assert LOADER in FILE_LOADERS


def test_tensorboard_per_tag_csvs_merge_by_step(tmp_path: Path) -> None:
    tb_csv(tmp_path / "run-.-tag-lm loss.csv", [(i, loss) for i, loss, _ in SEED])
    tb_csv(tmp_path / "run-.-tag-grad-norm.csv", [(i, g) for i, _, g in SEED])
    inc = traindoc.load(tmp_path)
    assert len(inc.iterations) == 12
    assert inc.account["files"] == 2
    s = ls_series.series(inc)
    assert s["iteration"].tolist() == [i for i, _, _ in SEED]
    assert s["loss"].tolist() == [loss for _, loss, _ in SEED]
    assert s["grad_norm"].tolist() == [g for _, _, g in SEED]
    it = inc.iterations
    row = it[sources(it).str.endswith("run-.-tag-lm loss.csv:2")].iloc[0]
    assert (row["iteration"], row["loss"], row["line"]) == (31214, 2.198845, "1647000000.0,31214,2.198845")
    assert str(row["time"]).startswith("2022-03-11")


def test_tensorboard_tag_with_slash_written_as_underscore(tmp_path: Path) -> None:
    p = tb_csv(tmp_path / "run-train-tag-train_grad_norm.csv", [(1, 0.5), (2, 0.6)])
    assert tag_from_name(p) == "train_grad_norm"
    assert traindoc.load(p).iterations["grad_norm"].tolist() == [0.5, 0.6]


def test_tensorboard_unknown_tag_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    p = tb_csv(tmp_path / "run-.-tag-lm loss vs samples.csv", [(2048, 2.2)])
    inc = traindoc.load(p)
    assert len(inc.iterations) == 0
    assert any("lm loss vs samples" in w and "not a metric" in w for w in inc.account["warnings"])


def test_wandb_history_csv_from_a_real_run() -> None:
    inc = traindoc.load(WANDB)
    it = inc.iterations
    # 400 training rows; the 4 sparse eval rows (eval/loss only) carry no training metric.
    assert len(it) == 400
    # train/global_step (the optimizer step) wins over _step (W&B's count of log calls).
    assert it["iteration"].tolist() == list(range(1, 401))
    first = it.iloc[0]
    assert (first["loss"], first["grad_norm"], first["lr"]) == (4.18263, 0.578571, 0.003)
    assert first["consumed_tokens"] == 512
    assert it.loc[it["iteration"] == 260, "lr"].item() == 0.09
    assert first["time"].year >= 2020


def test_wandb_panel_export_drops_run_name_and_min_max(tmp_path: Path) -> None:
    p = tmp_path / "wandb_export.csv"
    p.write_text('"Step","run-7 - train/loss","run-7 - train/loss__MIN","run-7 - train/loss__MAX"\n'
                 '"10","2.5","2.4","2.6"\n"20","2.3","2.2","2.4"\n')
    it = traindoc.load(p).iterations
    assert it[["iteration", "loss"]].values.tolist() == [[10, 2.5], [20, 2.3]]


def test_wandb_jsonl_matches_the_csv(tmp_path: Path) -> None:
    with open(WANDB, newline="") as fh:
        rows = list(csv.DictReader(fh))
    p = tmp_path / "wandb-history.jsonl"
    with open(p, "w") as fh:
        for r in rows:
            fh.write(json.dumps({k: float(v) if "." in v else int(v)
                                 for k, v in r.items() if v != ""}) + "\n")
    a, b = traindoc.load(p).iterations, traindoc.load(WANDB).iterations
    assert a["iteration"].tolist() == b["iteration"].tolist()
    assert a["loss"].tolist() == b["loss"].tolist()
    assert sources(a).iloc[0].endswith("wandb-history.jsonl:1")


def test_nan_and_infinity_values_count_as_nan_iterations(tmp_path: Path) -> None:
    p = tmp_path / "history.jsonl"
    p.write_text('{"_step": 1, "train/loss": 2.0, "train/grad_norm": 0.5}\n'
                 '{"_step": 2, "train/loss": NaN, "train/grad_norm": Infinity}\n'
                 '{"_step": 3, "train/loss": 2.1, "train/grad_norm": 0.4}\n')
    s = ls_series.series(traindoc.load(p))
    assert s["is_nan"].tolist() == [False, True, False]
    assert math.isinf(s["grad_norm"].iloc[1])
    c = tmp_path / "history.csv"
    c.write_text("_step,train/loss\n1,2.0\n2,nan\n3,2.1\n")
    assert ls_series.nan_iterations(ls_series.series(traindoc.load(c))) == [2]


def test_hf_trainer_state_json(tmp_path: Path) -> None:
    state = {"global_step": 30, "log_history": [
        {"epoch": 0.1, "grad_norm": 82.9, "learning_rate": 1.4e-06, "loss": 1.52, "step": 10},
        {"epoch": 0.2, "grad_norm": 80.1, "learning_rate": 2.8e-06, "loss": 1.49, "step": 20},
        {"epoch": 0.2, "eval_loss": 1.40, "eval_runtime": 3.1, "step": 20},
        {"epoch": 0.3, "grad_norm": 79.0, "learning_rate": 4.2e-06, "loss": 1.47, "step": 30},
        {"epoch": 0.3, "step": 30, "total_flos": 1.0e15, "train_loss": 1.49,
         "train_runtime": 100.0, "train_samples_per_second": 9.6},
    ]}
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps(state))
    it = traindoc.load(p).iterations
    ev = it[(it["event"] == "eval").fillna(False)]  # the eval entry: an eval row of its step
    assert ev[["iteration", "eval_loss"]].values.tolist() == [[20, 1.40]]
    it = it[it["event"].isna()]
    assert it["iteration"].tolist() == [10, 20, 30]
    assert it["loss"].tolist() == [1.52, 1.49, 1.47]
    assert it["lr"].tolist() == [1.4e-06, 2.8e-06, 4.2e-06]
    assert sources(it).iloc[2].endswith("trainer_state.json#log_history[3]")


def test_lightning_csvlogger_metrics(tmp_path: Path) -> None:
    p = tmp_path / "metrics.csv"
    p.write_text("epoch,step,train_loss_step,val_loss,train_loss_epoch\n"
                 "0,49,2.31,,\n0,99,2.12,,\n0,99,,2.05,2.2\n")
    it = traindoc.load(p).iterations
    assert it[["iteration", "loss"]].values.tolist() == [[49, 2.31], [99, 2.12]]


@pytest.mark.parametrize(("name", "text"), [
    ("people.csv", "name,age\nbob,3\n"),
    ("steps.csv", "step,reward\n1,0.5\n"),  # a step but no metric this table keeps
    ("config.json", '{"lr": 0.1, "step": 3}'),  # a JSON object that is not trainer_state.json
    ("events.jsonl", '{"event": "start"}\n'),
    # right header under a log's name, but a text line among its rows: a log, not a CSV
    ("train.log", "step,loss\n1,2.0\nEpoch 1 done\n"),
])
def test_other_files_are_not_mistaken_for_exports(tmp_path: Path, name: str, text: str) -> None:
    p = tmp_path / name
    p.write_text(text)
    assert not looks_like_metrics(p, text.encode())
    inc = traindoc.load(p)
    assert len(inc.iterations) == 0
    assert not any("metrics export" in w for w in inc.account["warnings"])


def test_header_with_bom_and_cut_head(tmp_path: Path) -> None:
    p = tmp_path / "h.csv"
    p.write_bytes("\ufeff_step,train/loss\n1,2.0\n".encode())
    assert traindoc.load(p).iterations["loss"].tolist() == [2.0]
    # A wide W&B record whose metric keys lie beyond the 4 KiB the sniffer sees.
    wide = '{"_step": 1, ' + ", ".join(f'"sys/k{i}": {i}' for i in range(600)) + ', "loss": 2}\n'
    assert looks_like_metrics(Path("x.jsonl"), wide.encode()[:4096])
    p = tmp_path / "wide.jsonl"
    p.write_text(wide)
    assert traindoc.load(p).iterations["loss"].tolist() == [2.0]


def test_corrupt_export_is_a_warning(tmp_path: Path) -> None:
    p = tmp_path / "trainer_state.json"
    p.write_text('{"log_history": [{"loss": 1.0, "step": 1}')  # cut short
    inc = traindoc.load(p)
    assert len(inc.iterations) == 0
    assert any("metrics export file not loaded" in w for w in inc.account["warnings"])


# A JSON list of history records cut short (a paste that stops mid-record, the log of a run still
# going): the whole records are read, and the cut one keeps its whole fields.
CUT_LISTS = [
    # chainer/chainer#7463: LogReport's `log`, the example cut after its second record
    ('[\n    {\n        "main/loss": 0.19019192457199097,\n        "main/accuracy": '
     '0.9424172043800354,\n        "epoch": 1,\n        "iteration": 600,\n        '
     '"elapsed_time": 5.149539570091292\n    },\n    {\n        "main/loss": 0.0739726647734642,'
     '\n        "main/accuracy": 0.976883053779602,\n        "epoch": 2,\n        "iteration": '
     '1200,\n        "elapsed_time": 8.111513606039807\n    },', [600, 1200]),
    # chainer/chainercv#391: the third record cut after its loss fields
    ('[\n    {\n        "lr": 0.0001,\n        "epoch": 12,\n        "iteration": 2000,\n        '
     '"main/loss": 2.2189900875091553\n    },\n    {\n        "lr": 0.0001,\n        "epoch": 17,'
     '\n        "elapsed_time": 263.30492639541626,\n        "iteration": 3000,\n        '
     '"main/loss/conf": 1.4860771894454956,\n', [2000, 3000]),
]


@pytest.mark.parametrize(("text", "iterations"), CUT_LISTS)
def test_json_list_cut_short_keeps_its_whole_records(tmp_path: Path, text: str,
                                                     iterations: list[int]) -> None:
    p = tmp_path / "log.json"
    p.write_text(text)
    it = traindoc.load(p).iterations
    assert it["iteration"].tolist() == iterations and pd.notna(it["loss"].iloc[0])


def test_per_epoch_csv_with_a_phase_column(tmp_path: Path) -> None:
    # the head of Sagar063/week9_ERAV4_ImageNet_ResNet-50_Model_Experiments
    # out/imagenet1kfull_g5x_1gpu_dali_nvme_lr0p125_bs256_e150_work6/train_log.csv
    p = tmp_path / "train_log.csv"
    p.write_text("epoch,phase,loss,top1,top5,lr,imgs_per_sec\n"
                 "-1,val,41.140252,0.1000,0.5000,0.005000,\n"
                 "0,train,5.968157,4.7438,13.4723,0.005146,810\n"
                 "0,val,5.498916,8.6060,22.2700,0.005146,\n"
                 "1,train,4.904754,15.6586,34.7683,0.005584,811\n")
    it = traindoc.load(p).iterations
    train = it[it["event"] == "epoch"]
    assert train[["iteration", "loss", "samples_per_s"]].values.tolist() == [
        [0, 5.968157, 810.0], [1, 4.904754, 811.0]]
    ev = it[it["event"] == "eval"]
    assert ev[["iteration", "eval_loss"]].values.tolist() == [[0, 5.498916]]


def test_fractional_epoch_is_no_step(tmp_path: Path) -> None:
    p = tmp_path / "history.csv"
    p.write_text("epoch,loss\n0.25,2.1\n0.5,2.0\n")
    assert traindoc.load(p).iterations.empty


def test_a_csv_logger_file_under_a_log_name_is_read() -> None:
    """Keras' CSVLogger('training.log') (its documentation's example) writes a CSV under a log's
    name: read by its rows (irfanet's training_logs191017_5.log; two runs appended, the epoch
    counter starting again)."""
    text = ("epoch,acc,loss,val_acc,val_loss\n"
            "0,0.82398325219,0.492232147164,0.804403048315,0.552083199883\n"
            "1,0.839460870799,0.445733688112,0.833827264929,0.470656693007\n"
            "0,0.82398325219,0.494232147164,0.804403048315,0.552083199883\n")
    assert looks_like_metrics(Path("training_logs191017_5.log"), text.encode())
    assert not looks_like_metrics(Path("train.log"), b"Namespace(lr=0.1)\nepoch,loss\n")

