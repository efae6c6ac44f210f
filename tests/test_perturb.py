"""The readers' metamorphic check (``traindoc.score_perturb``): a log rewritten the way another
launcher, logger or collector writes it reads the same. Unit tests of the transformations,
the real lines of each reader family it found, and the check itself on a fixed subset of the
corpus (``slow``)."""

from __future__ import annotations

import gzip
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

import traindoc
from traindoc import score_perturb as sp
from traindoc.diagnose import NAMES
from traindoc.parse.prefixes import demux
from traindoc.score import find_cases

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"

# --- the transformations -------------------------------------------------------------------

LOG = (b"[rank0]: step 1 loss 2.0\n"
       b"[rank1]: step 1 loss 2.1\n"
       b"[rank1]: Traceback (most recent call last):\n"
       b'  File "train.py", line 3, in <module>\n'
       b"RuntimeError: boom\n"
       b"2024-03-01 12:00:00,001 - INFO - already timed\n")


def test_crlf_and_ansi_keep_every_line() -> None:
    out = sp.crlf({"job.log": LOG})["job.log"]
    assert out.count(b"\r\n") == LOG.count(b"\n") and b"\r\r" not in out
    assert sp.crlf({"job.log": out}) == {"job.log": out}  # already CRLF: left as it is
    col = sp.ansi({"job.log": LOG})["job.log"].decode()
    assert col.count(sp.ANSI_ON) == LOG.count(b"\n")


def test_inner_timestamps_skip_tracebacks_indented_and_timed_lines() -> None:
    out = sp.BY_NAME["timestamp-logging"].apply({"job.log": LOG})["job.log"].decode()
    stamp = sp.TIMESTAMP_STYLES["logging"]
    assert out.splitlines() == [
        f"[rank0]: {stamp}step 1 loss 2.0", f"[rank1]: {stamp}step 1 loss 2.1",
        "[rank1]: Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
        "RuntimeError: boom", "2024-03-01 12:00:00,001 - INFO - already timed"]


def test_rank_prefixes_name_the_rank_the_line_states() -> None:
    out = sp.BY_NAME["torchrun-rank"].apply({"job.log": LOG})["job.log"].decode().splitlines()
    assert out[:3] == ["[default0]:[rank0]: step 1 loss 2.0", "[default1]:[rank1]: step 1 loss 2.1",
                       "[default1]:[rank1]: Traceback (most recent call last):"]
    assert out[3] == '  File "train.py", line 3, in <module>'  # no rank stated: untouched


def test_gzip_and_split_ranks() -> None:
    z = sp.gzip_files({"job.log": LOG})
    assert list(z) == ["job.log.gz"] and gzip.decompress(z["job.log.gz"]) == LOG
    parts = sp.split_ranks({"job.log": LOG})
    assert sorted(parts) == ["job.rank0.log", "job.rank1.log"]
    # the lines with no prefix go with the writer before them: rank 1's traceback
    assert parts["job.rank1.log"].count(b"\n") == 5
    assert sp.source_names({"job.log": LOG}, parts) == {"job.rank0.log": "job.log",
                                                       "job.rank1.log": "job.log"}


def test_changed_facts_skips_exempt_facts() -> None:
    before = {"failed_hosts": [], "failed_ranks": [3], "lost_hours": 1.0}
    after = {"failed_hosts": ["node-17"], "failed_ranks": [3], "lost_hours": 2.0}
    assert sp.changed_facts(before, after, sp.HOST_FACTS | sp.TIME_FACTS) == {}
    assert set(sp.changed_facts(before, after)) == {"failed_hosts", "lost_hours"}


# --- the reader families the check found ---------------------------------------------------

def test_collector_time_before_ray_and_rank_prefixes() -> None:
    # docker/kubectl --timestamps before Ray's worker tag and c10's rank (aphrodite-engine via
    # sonar#493, data/corpus/timeout/timeout-sonar-493)
    line = ("2024-05-31T12:37:42.149710014Z (RayWorkerAphrodite pid=6618) [rank1]:[E "
            "ProcessGroupNCCL.cpp:583] [Rank 1] To avoid data inconsistency, we are taking the "
            "entire process down.")
    body, origin = demux(line)
    assert body.startswith("[E ProcessGroupNCCL.cpp:583]")
    assert (origin.rank, origin.rank_global, origin.pid) == (1, True, 6618)
    assert origin.time == datetime(2024, 5, 31, 12, 37, 42, 149710)
    assert origin.writer().time is None


def test_collector_time_is_the_line_time_when_the_text_has_none(tmp_path: Path) -> None:
    # ms-swift#4291 (data/corpus/throughput/throughput-ms-swift-4291): kubectl --timestamps
    line = ("2025-05-21T03:50:19.029644300Z {'loss': 0.42409496, 'token_acc': 0.85283019, "
            "'grad_norm': 3.6537035, 'learning_rate': 9.99e-06, 'memory(GiB)': 76.72, "
            "'train_speed(iter/s)': 0.193983, 'epoch': 0.2, 'global_step/max_steps': '55/270'}")
    (tmp_path / "job.log").write_text(line + "\n")
    it = traindoc.load(str(tmp_path / "job.log")).iterations
    assert len(it) == 1 and it["time"].iloc[0] == datetime(2025, 5, 21, 3, 50, 19, 29644)


@pytest.mark.parametrize(("line", "rank", "host", "rest"), [
    # llamafactory#8871 (gpu_crash-llamafactory-8871) read through kubectl logs --prefix
    ("[pod/trainer-0/main] 192.168.13.81: [rank19]:[E808 10:31:07.406255799 "
     "ProcessGroupNCCL.cpp:1895] x", 19, "192.168.13.81", "[E808 10:31:07.406255799"),
    # nccl#957 (gpu_crash-nccl-957): mpirun --timestamp-output behind kubectl's prefix
    ("[pod/trainer-0/main] Fri Aug 11 12:31:45 2023[1,0]<stdout>:tomte401:1850301:1881341 "
     "[0] transport.cc:154 NCCL WARN Cuda failure 'invalid argument'", 0, None,
     "tomte401:1850301"),
    # srun -l before the deepspeed launcher's pdsh host (the same line, srun -l deepspeed …)
    ("0: 192.168.13.81: [rank19]:[E808 10:31:07.406255799 ProcessGroupNCCL.cpp:1895] x", 19,
     "192.168.13.81", "[E808 10:31:07.406255799"),
    # torchrun's ChildFailedError table (medusa#118, gpu_crash-medusa-118) behind
    # kubectl --timestamps: an indented line is no less a collector's
    ("2024-03-01T12:00:00.123456789Z   host      : 4b1a9e8a140f", None, None, "host      :"),
    # the same pdsh host behind kubectl --timestamps
    ("2024-03-01T12:00:00.123456789Z 192.168.13.81: [rank19]:[E808 x", 19, "192.168.13.81",
     "[E808 x"),
])
def test_launcher_prefixes_behind_a_collector_prefix(line: str, rank: int, host: str | None,
                                                     rest: str) -> None:
    body, origin = demux(line)
    assert (origin.rank, origin.host) == (rank, host)
    assert body.startswith(rest)


@pytest.mark.parametrize("prefix", ["0: ", "node-17: ", "(RayTrainWorker pid=123, ip=10.0.0.2) ",
                                    "2024-03-01T12:00:00.123456789Z "])
def test_a_wrapped_line_with_its_writers_prefix_is_rejoined(tmp_path: Path, prefix: str) -> None:
    # ms-swift#5409 (timeout-ms-swift-5409): a terminal wrapped the watchdog line mid-word; a
    # launcher or collector that prefixes every physical line puts the same prefix on both parts
    lines = ("[rank0]:[E816 00:34:01.151101643 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught "
             "collective operation timeout: WorkNCCL(SeqNum=137429, OpType=_ALLGATHER_BASE, NumelI",
             "n=71552, NumelOut=572416, Timeout(ms)=600000) ran for 600021 milliseconds before "
             "timing out.")
    (tmp_path / "job.log").write_text("".join(f"{prefix}{x}\n" for x in lines))
    col = traindoc.load(str(tmp_path / "job.log")).collectives
    row = col[col["state"] == "timed_out"].iloc[0]
    assert (row["rank"], row["numel_in"], row["ran_for_ms"]) == (0, 71552, 600021)


def test_another_writers_line_is_not_rejoined(tmp_path: Path) -> None:
    lines = ("[rank0]:[E816 00:34:01.151101643 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught "
             "collective operation timeout: WorkNCCL(SeqNum=137429, OpType=_ALLGATHER_BASE, NumelI",
             "[rank1]: n=71552, NumelOut=572416, Timeout(ms)=600000) ran for 600021 milliseconds")
    (tmp_path / "job.log").write_text("".join(f"0: {x}\n" for x in lines))
    col = traindoc.load(str(tmp_path / "job.log")).collectives
    assert col[col["state"] == "timed_out"]["numel_in"].isna().all()


def test_the_same_writers_next_record_is_not_rejoined(tmp_path: Path) -> None:
    # trl#1405 (timeout-trl-1405): two watchdog lines of rank 4, each cut by the poster; the
    # second is a record of its own, not the first one's continuation
    lines = ("[rank4]:[E ProcessGroupNCCL.cpp:523] [Rank 4] Watchdog caught collective operation "
             "timeout: WorkNCCL(SeqNum=956300, OpType=_ALLGATHER_BASE, .",
             "[rank4]:[E ProcessGroupNCCL.cpp:523] [Rank 4] Watchdog caught collective operation "
             "timeout: WorkNCCL(SeqNum=1008, OpType=ALLREDUCE, NumelIn=.")
    (tmp_path / "job.log").write_text("".join(f"{x}\n" for x in lines))
    col = traindoc.load(str(tmp_path / "job.log")).collectives
    assert sorted(col.loc[col["state"] == "timed_out", "seq_num"]) == [1008, 956300]


def test_score_perturb_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    from traindoc import cli

    case = CORPUS / "timeout" / "timeout-sonar-493"
    assert cli.main(["score", str(case), "--perturb", "crlf", "--perturb", "kubectl",
                     "--workers", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["transformation", "applied", "changed"]
    assert out[1].split() == ["crlf", "1", "0"] and out[2].split() == ["kubectl", "1", "0"]
    assert cli.main(["score", str(case), "--perturb", "no-such"]) != 0
    assert "no transformation no-such" in capsys.readouterr().err


def test_both_engines_read_prefixes_behind_a_collector_alike(tmp_path: Path) -> None:
    # the fast engine memoises who wrote a line by its first bytes: never where a host or a
    # collector's time may still start (after srun's task id, a pod's tag, a collector's time)
    watchdog = ("[rank19]:[E808 10:31:07.406255799 ProcessGroupNCCL.cpp:629] [Rank 19] Watchdog "
                "caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, "
                "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600021 milliseconds before "
                "timing out.")
    lines = []
    for lead in ("0: ", "[pod/trainer-0/main] ", "2024-03-01T12:00:00.123456789Z ", ""):
        lines += [f"{lead}nothing here {watchdog}", f"{lead}node-17: {watchdog}",
                  f"{lead}2024-03-01 12:00:00 {watchdog}",
                  f"{lead}2024-03-01T12:00:01.5Z {watchdog}"]
    (tmp_path / "job.log").write_text("\n".join(lines) + "\n")
    plain = traindoc.load(str(tmp_path), engine="plain", workers=1)
    fast = traindoc.load(str(tmp_path), engine="fast", workers=1)
    for t in plain.tables:
        pd.testing.assert_frame_equal(plain.tables[t], fast.tables[t], obj=t)
    col = plain.collectives
    assert set(col.loc[col["state"] == "timed_out", "host"].dropna()) == {"node-17",
                                                                         "srun-task-0"}


# --- the check on a fixed subset of the corpus ---------------------------------------------

SUBSET = (
    "timeout-sonar-493", "timeout-accelerate-1209", "timeout-nccl-1409", "timeout-olmo-846",
    "timeout-ms-swift-5409",
    "gpu_crash-llamafactory-8871", "gpu_crash-nccl-957", "gpu_crash-qwen3-coder-174",
    "gpu_crash-megatron-deepspeed-lock-clock-dual8-r2", "gpu_crash-nccl-1029",
    "deadlock-py-spy-221", "deadlock-sglang-30453", "deadlock-ms-swift-8307",
    "deadlock-accelerate-3104", "deadlock-bigscience-tr11-eval-redux",
    "throughput-ms-swift-4291", "throughput-horovod-824", "throughput-fgvc-herbs-19",
    "throughput-deepspeedexamples-check-base-training", "throughput-sphereface-103",
    "loss_spike-caffe-1445", "loss_spike-t2t-vit-26", "loss_spike-yanmtt-7",
    "loss_spike-minfm-4", "loss_spike-chinese-llama-alpaca-534",
)
# the semantic-preserving transformations the whole corpus reads the same under since the
# reader fixes (``sp.SEMANTIC_PRESERVING`` less those that still change cases: syslog, whose
# header no reader strips; srun/pdsh/Ray/kubectl-time prefixes on every line of a py-spy dump or
# a block the reader keys by its first line's writer)
PRESERVING = ("ansi", "crlf", "gzip", "kubectl", "torchrun-rank", "srun-rank")


@pytest.mark.slow
def test_semantic_preserving_rewritings_keep_the_facts() -> None:
    cases = [c for c in find_cases(CORPUS) if c.id in SUBSET]
    assert len(cases) == len(SUBSET)
    assert {c.runbook for c in cases} == set(NAMES)  # every class
    applied, changes = sp.check(cases, PRESERVING, workers=1)
    assert set(PRESERVING) <= set(sp.SEMANTIC_PRESERVING)
    assert all(applied[n] for n in PRESERVING if n not in ("torchrun-rank", "srun-rank")), applied
    assert not changes, sp.render(applied, changes)
