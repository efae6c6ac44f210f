"""A catalogue of bad inputs, each run through every runbook: each finishes with a clear finding
or warning; only "nothing readable at all" fails, with one sentence naming log_path."""

from __future__ import annotations

import gzip
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import papermill as pm
import pytest

import traindoc
from conftest import DATA
from test_runbooks import RUNBOOKS, execute
from traindoc.schema import sources

WATCHDOG = ("[rank0]:[E1121 10:00:00.1 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            "Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n")
FR_DUMP = (DATA / "timeout" / "drill_timeout" / "fr" / "rank0.pkl")


class Boom:
    def __reduce__(self):
        return (os.system, ("touch /tmp/traindoc-bad-input-pwned",))


def _empty_dir(d: Path) -> Path:
    (d / "empty").mkdir()
    return d / "empty"


def _unreadable(d: Path) -> Path:
    # root ignores file modes; /proc/self/mem refuses reads at offset 0 for anyone. Since
    # issue 31 a path under /proc is not even opened (/proc/kmsg would block for ever): it is
    # skipped as a kernel interface, which says as much.
    (d / "job.log").symlink_to("/proc/self/mem")
    (d / "other.log").write_text(WATCHDOG)
    return d


def _broken_link(d: Path) -> Path:
    (d / "job.log").symlink_to(d / "gone.log")
    (d / "other.log").write_text(WATCHDOG)
    return d


def _truncated_gzip(d: Path) -> Path:
    data = gzip.compress((("noise line\n" * 20000) + WATCHDOG).encode())
    (d / "job.log.gz").write_bytes(data[: len(data) // 2])
    return d / "job.log.gz"


def _dumps(d: Path) -> Path:
    good = FR_DUMP.read_bytes()
    (d / "rank0.pkl").write_bytes(b"")
    (d / "rank1.pkl").write_bytes(good[: len(good) // 3])
    (d / "rank2.pkl").write_bytes(pickle.dumps({"entries": [Boom()]}))
    (d / "job.log").write_text(WATCHDOG)
    return d


def _long_line(d: Path) -> Path:
    with open(d / "job.log", "w") as fh:
        fh.write("x" * (50 * 1024 * 1024) + "\n" + WATCHDOG)
    return d / "job.log"


def _nul_bytes(d: Path) -> Path:
    (d / "job.log").write_bytes(b"\x00" * 5000 + WATCHDOG.encode() + b"\x00\x00\n")
    return d / "job.log"


def _latin1(d: Path) -> Path:
    (d / "job.log").write_bytes("d\u00e9j\u00e0 vu \u00ff\n".encode("latin-1") + WATCHDOG.encode())
    return d / "job.log"


def _utf16(d: Path) -> Path:
    (d / "job.log").write_text("hello\n" + WATCHDOG, encoding="utf-16")
    return d / "job.log"


def _many_files(d: Path) -> Path:
    for i in range(10_000):
        (d / f"rank{i}.log").write_text(f"step {i}\n")
    return d


def _two_jobs(d: Path) -> Path:
    for job, total in (("a1b2c3d4_job1", 1000), ("e5f6a7b8_job2", 5000)):
        run = d / job / "attempt_0" / "0"
        run.mkdir(parents=True)
        (run / "stdout.log").write_text("".join(
            f" iteration {i}/ {total} | elapsed time per iteration (ms): 100.0 | lm loss: 2.0E+00 |\n"
            for i in range(1, 6)))
    return d


SCRIPT = "<script>alert(1)</script>"


def _script_tag(d: Path) -> Path:
    (d / "job.log").write_text(
        WATCHDOG.replace("OpType=ALLREDUCE", "OpType=" + SCRIPT)
        + f"[rank1]: RuntimeError: {SCRIPT} CUDA error: {SCRIPT}\n"
        + f" iteration 1/ 10 | lm loss: 2.0E+00 | {SCRIPT}: 1 |\n"
        + f"Thread 1 (active): \"{SCRIPT}\"\n    {SCRIPT} (x.py:1)\n")
    return d / "job.log"


def _fifo(d: Path) -> Path:
    os.mkfifo(d / "pipe.log")  # opening it would block until a writer comes: never
    (d / "job.log").write_text(WATCHDOG)
    return d


def _devices(d: Path) -> Path:
    (d / "zero.log").symlink_to("/dev/zero")  # endless reads
    (d / "urandom.log").symlink_to("/dev/urandom")
    (d / "job.log").write_text(WATCHDOG)
    return d


def _link_loops(d: Path) -> Path:
    (d / "sub").mkdir()
    (d / "sub" / "up1").symlink_to("..")  # `**` grew with 2**depth paths through these
    (d / "sub" / "up2").symlink_to("..")
    (d / "job.log").write_text(WATCHDOG)
    return d / "**"


def _with_rank(line: str, rank: str) -> str:
    return line.replace("[rank0]", f"[rank{rank}]").replace("[Rank 0]", f"[Rank {rank}]")


def _huge_rank(d: Path) -> Path:
    (d / "job.log").write_text(_with_rank(WATCHDOG, "99999999999999999999")
                               + _with_rank(WATCHDOG, "1"))
    return d / "job.log"


def _huge_seqnum(d: Path) -> Path:
    (d / "job.log").write_text(WATCHDOG.replace("SeqNum=9", "SeqNum=" + "9" * 5000)
                               + _with_rank(WATCHDOG, "1"))
    return d / "job.log"


def _long_seqnum(d: Path) -> Path:
    (d / "job.log").write_text(WATCHDOG.replace("SeqNum=9", "SeqNum=" + "1" * 23)
                               + _with_rank(WATCHDOG, "1"))
    return d / "job.log"


H = "9" * 5000
HUGE_LINES = [
    f" iteration {H}/ {H} | consumed samples: {H} | elapsed time per iteration (ms): 100.0 | "
    f"global batch size: {H} | lm loss: 2.0E+00 | number of skipped iterations: {H} |",
    f"[  123.4] NVRM: Xid (PCI:0000:3b:00): {H}, pid={H}, name=python, GPU has fallen off the bus.",
    f"[rank{H}]: RuntimeError: CUDA error: an illegal memory access was encountered",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", "=" * 60,
    "train.py FAILED", "-" * 60, "Root Cause (first observed failure):", "[0]:",
    "  time      : 2024-07-08_01:57:23", "  host      : node-1",
    f"  rank      : {H} (local_rank: {H})", f"  exitcode  : {H} (pid: {H})",
    "  error_file: <N/A>", "=" * 60,
    f"Process {H}: python train.py", "Python v3.10.12 (/usr/bin/python3.10)", "",
    f'Thread {H} (active): "MainThread"', "    wait (torch/distributed/x.py:10)", "",
    f"Epoch 0:  45%|####5     | {H}/{H} [01:00<01:13,  7.50it/s]",
    f"saving checkpoint at iteration {H} to /ckpt",
    f"[2024-07-08 01:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step={H}, skipped={H}, "
    "lr=[0.0001], mom=[(0.9, 0.95)]",
    f"srun: error: node-1: task {H}: Exited with exit code {H}",
    f"[rank0]:[E1121 10:00:00.1 ProcessGroupNCCL.cpp:632] [PG 0 Rank 0] Received a timeout. last "
    f"enqueued NCCL work: {H}, last completed NCCL work: {H}.",
]


def _huge_numbers(d: Path) -> Path:
    (d / "job.log").write_text("\n".join(HUGE_LINES) + "\n" + WATCHDOG)
    return d / "job.log"


def _deep_json(d: Path) -> Path:
    deep = "[" * 200_000 + "]" * 200_000  # deeper than Python's stack: json raised RecursionError
    (d / "trainer_state.json").write_text('{"log_history": ' + deep + "}")
    (d / "history.jsonl").write_text('{"step": 1, "loss": 2.0, "x": ' + deep + "}\n")
    (d / "job.log").write_text(WATCHDOG)
    return d


HOSTILE = "<img src=y onerror=alert(1)>"
OSC_TITLE = "\x1b]0;pwned\x07"
OSC_LINK = "\x1b]8;;http://evil.invalid\x1b\\click\x1b]8;;\x1b\\"


def _hostile_names(d: Path) -> Path:
    """A py-spy dump whose file NAME carries markup (it becomes a host), and a CUDA error line
    carrying terminal escapes (OSC title, OSC 8 hyperlink, C1 CSI) that reaches the verdict."""
    (d / f"trace-h{HOSTILE}-x.out").write_text(
        'Process 42: python train.py\nPython v3.10.12 (/usr/bin/python3.10)\n\n'
        'Thread 42 (idle): "MainThread"\n    wait (torch/distributed/distributed_c10d.py:1)\n'
        '    train (train.py:10)\n')
    (d / "job.log").write_text(
        f"[rank1]:[E708 01:36:12.5 ProcessGroupNCCL.cpp:1] CUDA error: an illegal memory access "
        f"was encountered {OSC_TITLE}{OSC_LINK}\x9b2J\n" + WATCHDOG)
    return d


def _hostile_pickles(d: Path) -> Path:
    """Flight-recorder pickles that crashed a runbook or exploded in memory (issue 19.5, 19.8):
    BUILD on a dict, BINBYTES8 claiming 2**62 bytes, a DAG of 2**40 shared references."""
    from test_dump_bombs import _binbytes8, _build, _dag

    fr = d / "fr"
    fr.mkdir()
    for build in (_build, _binbytes8, _dag):
        build(fr)
    (d / "job.log").write_text(WATCHDOG)
    return d


# name -> (builder, a phrase that must appear in the summary's warnings or findings)
CATALOGUE: dict[str, tuple[Callable[[Path], Path], str]] = {
    "unreadable_file": (_unreadable, "kernel interface"),
    "broken_symlink": (_broken_link, "broken symbolic link"),
    "truncated_gzip": (_truncated_gzip, "stopped reading early"),
    "bad_dumps": (_dumps, "refused to import"),
    "50MB_line": (_long_line, "was cut"),
    "nul_bytes": (_nul_bytes, "NUL bytes"),
    "latin1": (_latin1, "undecodable byte"),
    "utf16": (_utf16, "UTF-16"),
    "10000_files": (_many_files, ""),
    "two_jobs": (_two_jobs, "more than one job"),
    "script_tag": (_script_tag, ""),
    "fifo": (_fifo, "named pipe (FIFO); skipped"),
    "dev_zero_urandom": (_devices, "a device; skipped"),
    "glob_over_links_to_parent": (_link_loops, ""),
    "rank_prefix_20_digits": (_huge_rank, "collectives.rank was a number too large"),
    "seqnum_5000_digits": (_huge_seqnum, "collectives.seq_num was a number too large"),
    "seqnum_23_digits": (_long_seqnum, "collectives.seq_num was a number too large"),
    "numbers_of_5000_digits": (_huge_numbers, "a number of thousands of digits"),
    "metrics_json_nested_200k_deep": (_deep_json, "JSON nested too deep to read"),
    "hostile_file_names_and_escapes": (_hostile_names, ""),
    "pickles_build_binbytes8_dag": (_hostile_pickles, "not loaded"),
}


def _text(summary: dict) -> str:
    parts = list(summary["inputs"]["warnings"])
    for f in summary["findings"]:
        parts.append(f["title"])
        parts.extend(f["evidence"])
    return "\n".join(parts)


@pytest.mark.parametrize("case", sorted(CATALOGUE))
def test_catalogue_loads_with_a_clear_account(case: str, tmp_path: Path) -> None:
    build, phrase = CATALOGUE[case]
    Path("/tmp/traindoc-bad-input-pwned").unlink(missing_ok=True)
    inc = traindoc.load(build(tmp_path))
    assert not Path("/tmp/traindoc-bad-input-pwned").exists()
    from traindoc.diagnose.common import input_findings

    text = "\n".join(inc.account["warnings"] + [f.title for f in input_findings(inc)])
    assert phrase in text, text[:2000]


@pytest.mark.notebooks
@pytest.mark.parametrize("runbook", RUNBOOKS)
@pytest.mark.parametrize("case", sorted(c for c in CATALOGUE if c != "10000_files"))
def test_every_runbook_survives_the_catalogue(runbook: str, case: str, tmp_path: Path) -> None:
    build, phrase = CATALOGUE[case]
    target = build(tmp_path / "in" if (tmp_path / "in").mkdir() is None else tmp_path)
    summary = execute(runbook, tmp_path, log_path=str(target), **_extra(runbook))
    assert summary["findings"], summary
    assert phrase in _text(summary), _text(summary)[:2000]
    if case in ("script_tag", "hostile_file_names_and_escapes"):
        # log text and file names are data: never live markup or raw escapes in the notebook
        import nbformat

        nb = nbformat.read(tmp_path / f"{runbook}.ipynb", as_version=4)
        for cell in nb.cells:
            for out in cell.get("outputs", []):
                html = "".join(out.get("data", {}).get("text/html", ""))
                assert SCRIPT not in html and HOSTILE not in html, (runbook, html[:500])
                assert "\x1b]" not in html and "\x9b" not in html, (runbook, html[:500])


@pytest.mark.notebooks
@pytest.mark.parametrize("case", sorted(c for c in CATALOGUE if c != "10000_files"))
def test_the_command_line_survives_the_catalogue(case: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 cli_in_test_kernel: None) -> None:
    """``traindoc run`` on each bad input: a diagnosis (0) or unreadable input (1), one clear
    sentence, no traceback, nothing from the logs that a terminal would act on (the runbook in
    the test process's kernel: tests/test_cli.py starts ``traindoc run``'s own)."""
    from traindoc import cli

    build, _ = CATALOGUE[case]
    (tmp_path / "in").mkdir()
    target = build(tmp_path / "in")
    code = cli.main(["run", "gpu_crash", str(target), "-o", str(tmp_path / "out")])
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert code in (cli.EXIT_OK, cli.EXIT_NO_INPUT), text[-2000:]
    assert "Traceback" not in text
    assert not any(c in text for c in ("\x1b", "\x07", "\x9b")), repr(text[-500:])


def _extra(runbook: str) -> dict:
    return {"run_runbooks": False} if runbook == "triage" else {}


@pytest.mark.notebooks
@pytest.mark.parametrize("runbook", RUNBOOKS)
def test_empty_directory_fails_naming_log_path(runbook: str, tmp_path: Path) -> None:
    with pytest.raises(pm.PapermillExecutionError) as e:
        execute(runbook, tmp_path, log_path=str(_empty_dir(tmp_path)), **_extra(runbook))
    assert "log_path" in str(e.value)


# -- the reader's limits: hangs, bombs, overlong lines, numbers beyond int64 (issue 19) --------

def _load_in_child(expr: str, timeout: float = 120, address_space: int = 3 << 30) -> dict:
    """``expr`` (a load) evaluated in a child process under a memory and time limit, so that a
    regression hangs or swaps nothing: its account, table sizes and peak RSS (KiB)."""
    code = ("import json, resource, traindoc\n"
            f"resource.setrlimit(resource.RLIMIT_AS, ({address_space}, {address_space}))\n"
            f"inc = {expr}\n"
            "print(json.dumps({'account': dict(inc.account), "
            "'rows': {t: len(df) for t, df in inc.tables.items()}, "
            "'peak_kib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=timeout, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_fifos_devices_and_link_loops_are_skipped_not_read(tmp_path: Path, engine: str) -> None:
    d = tmp_path / "logs"
    d.mkdir()
    _fifo(d)
    _devices(d)
    _link_loops(d)
    for target in (d, d / "**", d / "**" / "*.log"):
        got = _load_in_child(f"traindoc.load({str(target)!r}, engine={engine!r})")
        acc = got["account"]
        assert acc["file_list"] == [str(d / "job.log")], acc  # each real file once
        assert got["rows"]["collectives"] == 1
        if target != d / "**" / "*.log":  # (that glob names no pipe and no device)
            assert any("named pipe" in w for w in acc["warnings"]), acc["warnings"]
            assert sum("a device; skipped" in w for w in acc["warnings"]) == 2, acc["warnings"]
    got = _load_in_child(f"traindoc.load(['/dev/zero', '/dev/urandom', {str(d / 'job.log')!r}], "
                         f"engine={engine!r})")
    assert got["account"]["files"] == 1 and got["rows"]["collectives"] == 1


def test_a_glob_reads_like_globs_own_expansion() -> None:
    import glob

    from traindoc.reader.decode import glob_paths

    for pat in ("data/**", "data/**/*.log", "data/**/", "data/*/**/*.txt", "data/**/[jt]*.log"):
        assert glob_paths(pat) == sorted(glob.glob(pat, recursive=True)), pat


ITERATIONS = "".join(f" iteration {i}/ 100000 | elapsed time per iteration (ms): 100.0 | "
                     "lm loss: 2.0E+00 |\n" for i in range(1, 10001))


def _bomb(d: Path, copies: int = 40) -> Path:
    with gzip.open(d / "bomb.log.gz", "wb") as fh:  # about 30 MB of step lines in 1 MB
        for _ in range(copies):
            fh.write(ITERATIONS.encode())
    (d / "job.log").write_text(WATCHDOG)
    return d


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_a_gzip_bomb_is_read_up_to_the_limit_and_the_rest_loads(tmp_path: Path, engine: str,
                                                                 monkeypatch) -> None:
    _bomb(tmp_path)
    cap = 2_000_000
    inc = traindoc.load([tmp_path / "bomb.log.gz", tmp_path / "job.log"], engine=engine,
                        max_bytes=cap)
    warn = [w for w in inc.account["warnings"] if "bomb.log.gz: only its first" in w]
    assert warn and "max_bytes=2000000" in warn[0], inc.account["warnings"]
    assert 0 < len(inc.iterations) <= cap // 80  # whole lines only, up to the cap
    assert sources(inc.iterations).iloc[-1].endswith(f":{len(inc.iterations)}")
    assert len(inc.collectives) == 1  # the next file is read in full
    from traindoc.diagnose.common import input_findings

    assert any("only its first" in e for f in input_findings(inc) for e in f.evidence)
    # the total over all files: the bomb takes it, the next file is said to be left out
    inc = traindoc.load([tmp_path / "bomb.log.gz", tmp_path / "job.log"], engine=engine,
                        max_total_bytes=cap)
    assert len(inc.collectives) == 0
    assert any("job.log: only its first 0 bytes" in w and "max_total_bytes" in w
               for w in inc.account["warnings"]), inc.account["warnings"]
    # a gzip file expanding past max_gzip_ratio times its size (once past GZIP_RATIO_FROM)
    from traindoc.reader import decode

    monkeypatch.setattr(decode, "GZIP_RATIO_FROM", cap)
    inc = traindoc.load(tmp_path / "bomb.log.gz", engine=engine, max_gzip_ratio=0.5)
    assert any("max_gzip_ratio=0.5" in w for w in inc.account["warnings"])
    assert len(inc.iterations) <= cap // 80


def test_the_total_limit_holds_across_worker_processes(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"rank{i}.log").write_text(ITERATIONS)
    one = len(ITERATIONS)
    inc = traindoc.load(tmp_path, workers=3, max_total_bytes=int(one * 2.5))
    assert len(inc.iterations) < 26_000  # of 60 000 (shorter lines first: a few more than 25 000)
    assert sum("max_total_bytes" in w for w in inc.account["warnings"]) >= 3


def test_a_bomb_by_default_limits_stays_bounded(tmp_path: Path) -> None:
    """The default gzip ratio stops a bomb (here 300 MiB of one line in about 300 KB)
    at 128 MiB: measured in a child with a memory limit."""
    with gzip.open(tmp_path / "bomb.log.gz", "wb", compresslevel=9) as fh:
        line = b"x" * 1023 + b"\n"
        for _ in range(300 * 1024):  # 300 MiB of one repeated line: ~1000:1
            fh.write(line)
    got = _load_in_child(f"traindoc.load({str(tmp_path / 'bomb.log.gz')!r})")
    assert any("max_gzip_ratio" in w for w in got["account"]["warnings"])
    assert got["account"]["lines"] <= 128 * 1024 + 1


MEGATRON_LINE = (" iteration {:8d}/ 2000000 | consumed samples: 2048 | elapsed time per "
                 "iteration (ms): 2000.0 | learning rate: 1.5E-04 | global batch size:  2048 | "
                 "lm loss: 2.000000E+00 | loss scale: 1.0 | grad norm: 0.250 | number of skipped "
                 "iterations:   0 | number of nan iterations:   0 |\n")


def test_a_bomb_of_parsed_lines_by_default_limits_stays_bounded(tmp_path: Path) -> None:
    """Issue 19.6's bomb: a few MB expanding to 1 GiB of Megatron iteration lines (every line
    a row). The default ratio stops it near 100 times its size; the load, in a child with a
    memory limit, stays under 2 GiB of RSS. Its time limit only catches a hang (about a minute
    on a quiet 2-core machine, past two on a busy one): the speed is `make bench`'s."""
    line = MEGATRON_LINE.format(7).encode()
    member = gzip.compress(line * ((64 << 20) // len(line)), compresslevel=9)  # 64 MiB of lines
    path = tmp_path / "bomb.log.gz"
    with open(path, "wb") as fh:  # members one after the other: one gzip stream to readers
        for _ in range(16):
            fh.write(member)
    size = path.stat().st_size
    assert 3 << 20 < size < 6 << 20  # (about 4.5 MB for 1 GiB)
    got = _load_in_child(f"traindoc.load({str(path)!r}, progress=False)",
                         timeout=600, address_space=6 << 30)
    warnings = got["account"]["warnings"]
    assert any("max_gzip_ratio=100" in w for w in warnings), warnings
    assert 0 < got["rows"]["iterations"] <= 100 * size // len(MEGATRON_LINE) + 1
    assert got["peak_kib"] < 2 << 20, f"peak RSS {got['peak_kib'] >> 10} MiB"


def test_a_whole_file_over_the_limits_is_not_loaded(tmp_path: Path) -> None:
    (tmp_path / "history.jsonl").write_text(
        "".join(f'{{"step": {i}, "loss": 2.0}}\n' for i in range(1, 1001)))
    (tmp_path / "job.log").write_text(WATCHDOG)
    inc = traindoc.load(tmp_path, max_bytes=1000)
    assert len(inc.iterations) == 0 and len(inc.collectives) == 1
    assert any("history.jsonl: metrics export file not loaded" in w and "max_bytes=1000" in w
               for w in inc.account["warnings"]), inc.account["warnings"]
    inc = traindoc.load(tmp_path, max_total_bytes=1000)
    assert any("not loaded: over the limit for all files together" in w
               for w in inc.account["warnings"]), inc.account["warnings"]


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_a_line_over_4_mib_is_one_line(tmp_path: Path, engine: str) -> None:
    (tmp_path / "job.log").write_text("x" * (9 * 1024 * 1024) + "\n" + WATCHDOG
                                      + "\u00e9" * (3 * 1024 * 1024) + "\n" + WATCHDOG)
    inc = traindoc.load(tmp_path / "job.log", engine=engine)
    assert inc.collectives["source"].tolist() == [f"{tmp_path / 'job.log'}:2",
                                                  f"{tmp_path / 'job.log'}:4"]
    assert inc.account["lines"] == 4 and inc.account["truncated_lines"] == 2
    assert inc.account["bad_bytes"] == 0  # the head is cut between characters
    assert any("a line of 9437184 bytes" in w for w in inc.account["warnings"])


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_an_out_of_range_seqnum_is_na_and_said_not_dropped(tmp_path: Path, engine: str) -> None:
    inc = traindoc.load(_long_seqnum(tmp_path), engine=engine)
    c = inc.collectives.sort_values("rank")
    assert c["rank"].tolist() == [0, 1]  # the row of rank 0 is kept …
    assert pd.isna(c["seq_num"].iloc[0]) and c["seq_num"].iloc[1] == 9  # … without a number
    assert any("seq_num was a number too large" in w for w in inc.account["warnings"])
    # … and the account holds it as data: table, column, file, line
    [u] = inc.account.unreadable_in("collectives", "seq_num")
    assert (u.table, u.column, u.file, u.line) == ("collectives", "seq_num",
                                                   str(tmp_path / "job.log"), 1)
    assert str(u) in inc.account.warnings and u.what == "a number too large for a count"


def test_numbers_of_thousands_of_digits_are_warnings(tmp_path: Path) -> None:
    plain = traindoc.load(_huge_numbers(tmp_path), engine="plain")
    fast = traindoc.load(tmp_path / "job.log", engine="fast")
    assert plain.account == fast.account
    for t in plain.tables:
        pd.testing.assert_frame_equal(plain.tables[t], fast.tables[t], obj=t)
    # the watchdog line after them is read
    assert plain.collectives["source"].tolist() == [f"{tmp_path / 'job.log'}:{len(HUGE_LINES) + 1}"]
    assert any("thousands of digits" in w for w in plain.account["warnings"])
