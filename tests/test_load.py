"""traindoc.load: paths, compression, prefixes, wrapping, bad input."""

from __future__ import annotations

import gzip
import os
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

import traindoc
from traindoc.parse.prefixes import (
    demux,
    drop_inner_tags,
    path_origin,
    split_physical,
    strip_ansi,
)

WATCHDOG = ("[rank3]:[E708 01:47:23.901930947 ProcessGroupNCCL.cpp:629] [Rank 3] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=2901, OpType=ALLREDUCE, NumelIn=1, "
            "NumelOut=1, Timeout(ms)=600000) ran for 600070 milliseconds before timing out.")
MEGATRON = ("[default7]: iteration 42780/ 115311 | consumed samples: 71455664 | consumed tokens: "
            "146341199872 | elapsed time per iteration (s): 105.16 | learning rate: 4.475E-05 | "
            "global batch size: 2048 | lm loss: 2.117073E+00 | grad norm: 0.150 | num zeros: 0.0 | "
            "number of skipped iterations: 0 | number of nan iterations: 0 | samples per second: "
            "19.474 | TFLOPs: 149.10 |")


def write(p: Path, text: str) -> Path:
    p.write_text(text)
    return p


def test_file_dir_glob_list_and_gzip(tmp_path: Path) -> None:
    a = write(tmp_path / "a.log", WATCHDOG + "\n")
    with gzip.open(tmp_path / "b.log.gz", "wt") as fh:
        fh.write(WATCHDOG.replace("rank3", "rank2").replace("Rank 3", "Rank 2") + "\n")
    assert len(traindoc.load(a).collectives) == 1
    assert len(traindoc.load(tmp_path).collectives) == 2
    assert len(traindoc.load(str(tmp_path / "*.gz")).collectives) == 1
    inc = traindoc.load([a, tmp_path / "b.log.gz"])
    assert sorted(inc.collectives["rank"].tolist()) == [2, 3]
    assert inc.account["files"] == 2


def test_gzip_cut_short_keeps_what_came_before(tmp_path: Path) -> None:
    data = gzip.compress(("hello\n" * 5000 + WATCHDOG + "\n").encode())
    (tmp_path / "cut.log.gz").write_bytes(data[: len(data) // 2])
    inc = traindoc.load(tmp_path / "cut.log.gz")
    assert inc.account["lines"] > 0
    assert any("stopped reading early" in w for w in inc.account["warnings"])


@pytest.mark.parametrize(
    ("line", "rank", "host", "rest"),
    [
        ("[rank3]:[E708 01:47:23] x", 3, None, "[E708 01:47:23] x"),
        ("[default7]: iteration 1/ 2 |", 7, None, "iteration 1/ 2 |"),
        ("  12: hello", None, "srun-task-12", "hello"),
        ("0: [default3]:[rank3]:boom", 3, "srun-task-0", "boom"),
        ("(FSDPPolicyWorkerBase pid=959049) Fatal Python error: Aborted", None, None,
         "Fatal Python error: Aborted"),
        ("(RayTrainWorker pid=1, ip=10.0.0.1) [rank1]:x", 1, "10.0.0.1", "x"),
        # SkyPilot's prefix (skypilot-org/skypilot examples/tpu/v6e/README.md): its "rank" is
        # the node's index, no process's rank; the worker's ip is its host
        ("(worker1, rank=1, pid=15406, ip=10.164.0.57)   train_loss               =     10.1527",
         None, "10.164.0.57", "train_loss               =     10.1527"),
        ("(head, rank=0, pid=17894) ***** train metrics *****", None, None,
         "***** train metrics *****"),
        ("(task, pid=17499)   epoch                    =      1.1765", None, None,
         "epoch                    =      1.1765"),
        ("(worker1, rank=1, pid=15406, ip=10.164.0.57) [rank9]:x", 9, "10.164.0.57", "x"),
        ("worker-3: [default0]:x", 0, "worker-3", "x"),
        ("[1,5]<stdout>:x", 5, None, "x"),
        # Polyaxon's log viewer before mpirun's tag (polyaxon/polyaxon#657); a worker replica
        ("2020-01-15 22:44:33 UTC master.0 -- [1,0]<stderr>:Stalled ranks:", 0, None,
         "Stalled ranks:"),
        ("2020-01-15 22:44:33 UTC worker.3 -- [1,3]<stdout>:x", 3, None, "x"),
        ("Traceback (most recent call last):", None, None, "Traceback (most recent call last):"),
        ("WARNING: something", None, None, "WARNING: something"),
    ],
)
def test_prefixes(line: str, rank: int | None, host: str | None, rest: str) -> None:
    from traindoc.parse.prefixes import Origin
    from traindoc.reader import merge_origin

    body, origin = demux(line)
    merged = merge_origin(Origin(), origin)
    assert (body, merged.rank, merged.host) == (rest, rank, host)


def test_mpirun_tags_inside_a_line_are_dropped() -> None:
    # mpirun --tag-output tags each write() of a line written in pieces (polyaxon/polyaxon#657)
    body, origin = demux("[1,0]<stderr>:[[1,0]<stderr>:2020-01-15 22:44:33[1,0]<stderr>:.214399")
    assert origin.rank == 0
    assert drop_inner_tags(body) == "[2020-01-15 22:44:33.214399"
    assert drop_inner_tags("0: [HorovodAllreduce][1,0]<stderr>:") == "0: [HorovodAllreduce]"


def test_ansi_and_tqdm_glued_line() -> None:
    assert strip_ansi("\x1b[31mred\x1b[0m text\x1b[K") == "red text"
    parts = split_physical("Train: 0%| | 21/6336 [08:49<44:58:38, 25.64s/it]" + WATCHDOG)
    assert len(parts) == 2 and parts[1].startswith("[rank3]:")
    assert split_physical("a\rb\rc") == ["a", "b", "c"]


def test_wrapped_megatron_line_reads_like_the_unwrapped_one(tmp_path: Path) -> None:
    one = traindoc.load(write(tmp_path / "one.log", MEGATRON + "\n")).iterations
    cut = MEGATRON.replace("| learning rate", "| learning\nrate").replace(
        "number of nan iterations", "number of nan\niterations")
    two = traindoc.load(write(tmp_path / "two.log", cut + "\n")).iterations
    cols = [c for c in one.columns if c not in ("line", "source", "file")]
    assert len(two) == 1
    assert one[cols].equals(two[cols])
    assert two.loc[0, "tflops"] == pytest.approx(149.10)


def test_ansi_coloured_log(tmp_path: Path) -> None:
    inc = traindoc.load(write(tmp_path / "c.log", "\x1b[1;31m" + WATCHDOG + "\x1b[0m\n"))
    assert inc.collectives.loc[0, "seq_num"] == 2901


def test_bad_bytes_are_replaced_and_counted(tmp_path: Path) -> None:
    p = tmp_path / "bad.log"
    p.write_bytes(b"\xff\xfe\xfa junk\n" + WATCHDOG.encode() + b"\n\x80\x81\n")
    inc = traindoc.load(p)
    assert inc.account["bad_bytes"] >= 2
    assert len(inc.collectives) == 1


def test_binary_junk_does_not_raise(tmp_path: Path) -> None:
    import random

    rnd = random.Random(0)
    (tmp_path / "junk.bin").write_bytes(bytes(rnd.randrange(256) for _ in range(200_000)))
    inc = traindoc.load(tmp_path / "junk.bin")
    assert inc.readable


def test_empty_file_and_missing_path(tmp_path: Path) -> None:
    write(tmp_path / "empty.log", "")
    inc = traindoc.load(tmp_path / "empty.log")
    assert inc.readable and any("empty" in w for w in inc.account["warnings"])
    with pytest.raises(traindoc.NoInputError, match="log_path"):
        traindoc.load_or_fail(tmp_path / "nope.log")


def test_rank_from_torchrun_log_dir(tmp_path: Path) -> None:
    d = tmp_path / "run_abc" / "attempt_0" / "2"
    d.mkdir(parents=True)
    write(d / "stderr.log", WATCHDOG.replace("[rank3]:", "").replace("[Rank 3] ", "") + "\n")
    inc = traindoc.load(tmp_path)
    assert inc.collectives.loc[0, "rank"] == 2


def test_glog_time_gets_a_year(tmp_path: Path) -> None:
    inc = traindoc.load(write(tmp_path / "t.log", WATCHDOG + "\n"), year=2025)
    t = inc.collectives.loc[0, "time"]
    assert (t.year, t.month, t.day, t.hour, t.minute) == (2025, 7, 8, 1, 47)


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_an_absl_header_is_the_line_time(tmp_path: Path, engine: str) -> None:
    # absl/glog's own header, unbracketed: ML4HPC/JAX-CFD logs/train_log.txt (corpus
    # throughput-jax-cfd-kolmogorov-train-healthy) and MaxText's metric_logger
    # (AI-Hypercomputer/maxtext#4847); the year is the stream's, as for c10's bracketed glog time
    log = ("I1216 14:22:57.913980 139628846601088 train.py:577] [Train 10/1882] {'grads_finite': "
           "1.0, 'loss_scale': 1.0, 'train_loss': 0.0077463057823479176}\n"
           "I0811 21:54:55.531340 138304841739136 metric_logger.py:226] completed step: 1, seconds: "
           "0.631, TFLOP/s/device: 5688.282, Tokens/s/device: 311629.521, total_weights: 1572864, "
           "loss: 12.979, lm_loss: 12.979, perplexity: 433358.281\n"
           "I1216 config: 14:22:57 is no header\n")
    it = traindoc.load(write(tmp_path / "t.log", log), year=2024, engine=engine).iterations
    assert list(it["time"]) == [datetime(2024, 12, 16, 14, 22, 57, 913980),
                                datetime(2024, 8, 11, 21, 54, 55, 531340)]


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_a_glog_time_takes_the_year_of_the_files_first_date(tmp_path: Path, engine: str) -> None:
    # torchrun's absl warning above srun's dated cancel line (corpus
    # gpu_crash-aurora-testbed-train-2gpus-13102221): both of the same year, whatever the file's
    # modification time says, so that their order is the log's
    log = ("W0710 16:55:26.227000 105975 torch/distributed/elastic/multiprocessing/api.py:897] "
           "Sending process 107669 closing signal SIGTERM\n"
           "slurmstepd: error: *** STEP 13102221.0 ON gcn112 CANCELLED AT 2025-07-10T16:55:26 ***\n")
    inc = traindoc.load(write(tmp_path / "t.log", log), engine=engine)
    assert inc.errors.loc[0, "time"].year == 2025


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_a_two_digit_year_first_is_the_line_time(tmp_path: Path, engine: str) -> None:
    # mmsr/EDVR/BasicSR's logger (datefmt '%y-%m-%d'): hnmizuho/AT-BSN#1 and XPixelGroup/BasicSR#204
    log = ("24-09-18 13:27:08.905 - INFO: <epoch: 16, iter:   3,800, lr:2.999e-04> l_all: "
           "3.4186e+00 \n"
           "19-08-09 08:25:25.996 - INFO: <epoch: 86, iter: 107,200, lr:2.500e-05> l_g_pix: "
           "1.4819e-03 l_g_fea: 1.0389e+00 l_g_gan: 7.2056e-02 \n")
    it = traindoc.load(write(tmp_path / "t.log", log), engine=engine).iterations
    assert list(it["time"]) == [datetime(2024, 9, 18, 13, 27, 8, 905000),
                                datetime(2019, 8, 9, 8, 25, 25, 996000)]


def test_seeds_all_load() -> None:
    from conftest import SEEDS

    if not SEEDS.is_dir():
        pytest.skip(f"seeds not found at {SEEDS} (set TRAINDOC_SEEDS)")
    inc = traindoc.load(SEEDS)
    assert inc.account["files"] == len(list(SEEDS.glob("*.txt")))
    assert len(inc.iterations) >= 15
    assert inc.collectives["seq_num"].dropna().astype(int).tolist().count(2901) >= 1


# A terminal wraps at a fixed column, mid-word (modelscope/ms-swift#5409, 168 columns, and
# pytorch/torchtune#2651, 166 columns, copied with the padding); a mail client wraps at a space.
TERMINAL_WRAP = (
    "[rank0]:[E816 00:34:01.151101643 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=137429, OpType=_ALLGATHER_BASE, NumelI\n"
    "n=71552, NumelOut=572416, Timeout(ms)=600000) ran for 600021 milliseconds before timing out."
    + " " * 76 + "\n"
    "[rank4]:[E430 05:09:48.830445837 ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) "
    "Rank 4]  failure detected by watchdog at work sequence id: 9387 PG status: \n"
    "last enqueued work: 9387, last completed work: 9386\n")


def test_terminal_wrap_mid_word_is_joined_without_a_space(tmp_path: Path) -> None:
    (tmp_path / "job.log").write_text(TERMINAL_WRAP)
    c = traindoc.load(tmp_path / "job.log").collectives
    t = c[c["state"] == "timed_out"].iloc[0]
    assert (t["numel_in"], t["numel_out"], t["ran_for_ms"]) == (71552, 572416, 600021)
    s = c[c["state"] == "status"].iloc[0]
    assert (s["rank"], s["process_group"], s["last_completed"]) == (4, "0 (default_pg)", 9386)


def test_word_wrap_at_a_space_keeps_the_space(tmp_path: Path) -> None:
    text = ("[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=8, NumelOut=8,\n"
            "Timeout(ms)=600000) ran for 600456 milliseconds before timing\n"
            "out.\n")
    (tmp_path / "job.log").write_text(text)
    t = traindoc.load(tmp_path / "job.log").collectives.iloc[0]
    assert (t["numel_out"], t["timeout_ms"], t["ran_for_ms"]) == (8, 600000, 600456)


def test_an_op_name_a_paste_mangled_is_no_op(tmp_path: Path) -> None:
    # modelscope/ms-swift#5409: tmux's scroll marker "[451/1919]" over "SE, NumelI"
    text = ("[rank2]:[E816 00:34:01.133910474 ProcessGroupNCCL.cpp:629] [Rank 2] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=137429, OpType=_ALLGATHER_BA[451/1919]\n"
            "n=71552, NumelOut=572416, Timeout(ms)=600000) ran for 600004 milliseconds before "
            "timing out.\n")
    (tmp_path / "job.log").write_text(text)
    t = traindoc.load(tmp_path / "job.log").collectives.iloc[0]
    assert pd.isna(t["op_type"]) and t["seq_num"] == 137429 and t["ran_for_ms"] == 600004


def test_failure_looking_lines_no_parser_read_are_shown(tmp_path: Path) -> None:
    # issue 15.9: triage promised them "at the end" and only counted them
    from traindoc import report

    lines = [f"shard {i} FAILED: brand-new failure wording\n" for i in range(25)]
    (tmp_path / "job.log").write_text("".join(lines))
    inc = traindoc.load(tmp_path / "job.log")
    shown = report.unrecognized_lines(inc, limit=20)
    assert len(shown) == 21 and "shard 0 FAILED" in shown[0]
    assert shown[-1].startswith("… and 5 more")


# -- binary files and kernel interfaces beside logs (issue 31) ----------------------------------

@pytest.mark.parametrize(("name", "head"), [
    ("core.12345", b"\x7fELF\x02\x01\x01" + b"\x00" * 57),
    ("model.pt", b"PK\x03\x04" + b"\x00" * 40),
    ("weights.npy", b"\x93NUMPY\x01\x00"),
    ("loss_curve.img", b"\x89PNG\r\n\x1a\n"),
])
def test_a_binary_file_beside_the_logs_is_skipped_with_a_note(name: str, head: bytes,
                                                               tmp_path: Path) -> None:
    (tmp_path / name).write_bytes(head + b"\n[rank0]: RuntimeError: CUDA error: made up\n" * 50)
    write(tmp_path / "job.log", "[rank1]: RuntimeError: CUDA error: an illegal memory access "
          "was encountered\n")
    inc = traindoc.load(tmp_path, progress=False)
    warnings = inc.account["warnings"]
    assert any(name in w and "recognised from its first bytes; skipped" in w for w in warnings)
    assert str(tmp_path / name) not in inc.account["file_list"]
    assert len(inc.errors) == 1 and inc.errors["rank"].tolist() == [1]  # the log still read


def test_nul_bytes_alone_do_not_make_a_log_binary(tmp_path: Path) -> None:
    (tmp_path / "job.log").write_bytes(b"\x00" * 5000 + b"[rank1]: RuntimeError: CUDA error: "
                                       b"an illegal memory access was encountered\n")
    inc = traindoc.load(tmp_path / "job.log", progress=False)
    assert len(inc.errors) == 1


def test_a_link_to_a_kernel_interface_is_never_opened(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from traindoc.reader.decode import not_regular

    # /proc/kmsg: as root, a read that blocks for ever (judged here without loading it, so a
    # regression fails instead of hanging the suite); /proc/uptime: the same rule, loaded
    (tmp_path / "kmsg.log").symlink_to("/proc/kmsg")
    assert "kernel interface" in (not_regular(tmp_path / "kmsg.log") or "")
    (tmp_path / "kmsg.log").unlink()
    (tmp_path / "uptime.log").symlink_to("/proc/uptime")
    write(tmp_path / "job.log", "hello\n")
    opened: list[str] = []
    real_open = builtins.open

    def spy(file, *a, **k):  # type: ignore[no-untyped-def]
        opened.append(str(file))
        return real_open(file, *a, **k)

    monkeypatch.setattr(builtins, "open", spy)
    inc = traindoc.load(tmp_path, progress=False, workers=1)
    assert not [p for p in opened if "uptime" in p]
    w = inc.account["warnings"]
    assert any("uptime.log" in x and "kernel interface" in x and "never opened" in x for x in w)


def test_a_folder_past_the_path_length_limit_is_a_warning(tmp_path: Path) -> None:
    write(tmp_path / "job.log", "hello\n")
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(24):  # 24 × 201 characters: past PATH_MAX (4096) under tmp_path
            os.mkdir("d" * 200, dir_fd=fd)
            nxt = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        with os.fdopen(os.open("deep.log", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as fh:
            fh.write("hello\n")
    finally:
        os.close(fd)
    inc = traindoc.load(tmp_path, progress=False)
    assert any("length limit" in w and "skipped" in w for w in inc.account["warnings"])
    assert inc.readable


# A log pasted into a Markdown note is read when the directory holds nothing else; beside a log,
# a note stays a bundle's README and is not read.
MD_LOGS = [
    # Qihongfei-hub/my_minimind train_log.md @ e3cbee4 (a training log committed as Markdown)
    ("train_log.md",
     "#\n1st \n\nEpoch:[2/3](1400/44160), loss: 2.1583, logits_loss: 2.1583, aux_loss: 0.0000, "
     "learning_rate: 0.00015239, epoch_time: 213.000min\n"
     "Epoch:[2/3](1500/44160), loss: 2.0514, logits_loss: 2.0514, aux_loss: 0.0000, "
     "learning_rate: 0.00015220, epoch_time: 213.000min\n", "iterations"),
    # the madeline error.md of corpus case gpu_crash-madeline-error (pasted terminal output)
    ("error.md",
     "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.44 GiB. GPU 1 has "
     "a total capacity of 10.75 GiB of which 748.75 MiB is free.", "errors"),
]


@pytest.mark.parametrize(("name", "text", "table"), MD_LOGS)
def test_a_log_in_a_markdown_note_is_read_when_alone(tmp_path: Path, name: str, text: str,
                                                     table: str) -> None:
    (tmp_path / name).write_text(text)
    inc = traindoc.load(tmp_path)
    assert len(inc.tables[table]) >= 1
    assert any(name in w for w in inc.account.warnings)
    (tmp_path / "job.log").write_text("hello\n")
    assert not len(traindoc.load(tmp_path).tables[table])  # beside a log: a README, not read


@pytest.mark.parametrize(("name", "rank", "host"), [
    ("run/attempt_0/3/stderr.log", 3, None),  # torchrun --log-dir
    ("trace-node17.out", None, "node17"),  # py-spy's trace-<host>.out
    ("rank0.log", 0, None),
    ("log_rank_3.txt", 3, None),
    # Paddle's launcher writes log/workerlog.<N>, one per process ("%s/workerlog.%d", N the
    # process's rank on the node): PaddlePaddle/Paddle#33074 (rank=[3] -> log/workerlog.3),
    # PaddlePaddle/PaddleOCR#3219 (rank[0] -> workerlog.0); torch DDP runs copy the name
    # (visionrd-ai/copilot-svtas log/workerlog.1)
    ("mylog/workerlog.3", 3, None),
    ("workerlog.0.gz", 0, None),
    # names that carry a number but no rank
    ("result_0.txt", None, None),  # MLPerf's result_<run>.txt
    ("kp-ddp-worker-0.log", None, None),  # a Kubernetes pod's index
    ("myworkerlog.1", None, None),
])
def test_rank_from_file_name_table(name: str, rank: int | None, host: str | None) -> None:
    o = path_origin(name)
    assert (o.rank, o.host) == (rank, host)


def test_paddle_workerlog_files_name_the_ranks_that_failed(tmp_path: Path) -> None:
    # a rank's error with no rank in its text: only its workerlog.N name tells whose it is
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 98.00 MiB. GPU 0 has a "
           "total capacity of 23.69 GiB of which 72.81 MiB is free.")  # visionrd-ai/copilot-svtas
    paddle = ("ValueError: (InvalidArgument) The shape of tensor assigned value must match the "
              "shape of target shape: [512, 3], but now shape is [513, 3]. (at /paddle/paddle/"
              "phi/kernels/impl/set_value_kernel_impl.h:69)")  # YunSungJu/OderformKIE workerlog.2
    d = tmp_path / "log"
    d.mkdir()
    write(d / "workerlog.0", "loading model\n")
    write(d / "workerlog.1", oom + "\n")
    write(d / "workerlog.2", "Traceback (most recent call last):\n  File \"train.py\", line 1, in "
          "<module>\n    main()\n" + paddle + "\n")
    err = traindoc.load(d).errors
    assert sorted(set(err["rank"].dropna().astype(int))) == [1, 2]
