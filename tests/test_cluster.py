"""Reading on a foreign executor (traindoc.load(paths, executor=…), scheduler=…): a real Dask
``distributed.LocalCluster`` and plain process pools give the local load's tables and account."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import traindoc
from conftest import DATA, ROOT, SAMPLE_DIRS
from traindoc import cli
from traindoc.reader import SCHEDULER_ENV, SchedulerError, pool

# bundled samples of several files (per-rank logs, dumps), and real per-case corpus folders
MULTI = [d for d in SAMPLE_DIRS
         if sum(p.is_file() and p.name != "expected.json" for p in d.rglob("*")) > 1]
CORPUS_TIMEOUT = DATA / "corpus" / "timeout"


def same(a: traindoc.Incident, b: traindoc.Incident) -> None:
    assert a.account == b.account
    assert a.unrecognized == b.unrecognized
    assert set(a.tables) == set(b.tables)
    for t in a.tables:
        pd.testing.assert_frame_equal(a.tables[t], b.tables[t], obj=t)


def rank_log(rank: int, rnd: random.Random, steps: int) -> str:
    """A per-rank log: Megatron-LM iteration lines behind torchrun's prefix, chatter, and the
    NCCL watchdog's timeout at the end."""
    out = [f"[rank{rank}]:[W1108 01:00:0{rank % 10}.000000000 ProcessGroupNCCL.cpp:4115] "
           "Warning: expandable_segments not supported on this platform"]
    for it in range(1, steps + 1):
        ms = 2000 + rnd.random() * 60
        out.append(
            f"[rank{rank}]: [2024-11-08 01:{it // 60 % 60:02d}:{it % 60:02d}] iteration "
            f"{it:8d}/{100000:8d} | consumed samples: {it * 2048:12d} | elapsed time per "
            f"iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): "
            f"{400 + rnd.random() * 30:.1f} | learning rate: {1.5e-4:.6E} | global batch size: "
            f" 2048 | lm loss: {2.5 - it / 1000 + rnd.random() / 100:.6E} | loss scale: 1.0 | "
            f"grad norm: {0.2 + rnd.random() * 0.1:.3f} | number of skipped iterations:   0 | "
            "number of nan iterations:   0 |")
        if it % 7 == 0:
            out.append(f"[rank{rank}]: dataloader: prefetching shard {rnd.randrange(10**6)}")
    out.append(
        f"[rank{rank}]:[E1108 01:47:23.901930947 ProcessGroupNCCL.cpp:629] [Rank {rank}] "
        f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum={9000 + (rank == 3)}, "
        "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600070 "
        "milliseconds before timing out.")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def ranks512(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """512 per-rank logs of a few KiB each (one of them gzip, one empty)."""
    import gzip

    folder = tmp_path_factory.mktemp("ranks512")
    rnd = random.Random(17)
    for rank in range(512):
        text = rank_log(rank, rnd, steps=8 + rank % 13)
        if rank == 100:
            with gzip.open(folder / f"rank{rank:04d}.log.gz", "wt") as fh:
                fh.write(text)
        else:
            (folder / f"rank{rank:04d}.log").write_text("" if rank == 200 else text)
    return folder


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A Dask client on a real LocalCluster: two worker processes, one thread each."""
    distributed = pytest.importorskip(
        "distributed", reason="Dask's distributed is not installed (pip install "
        "'traindoc[cluster]'; the dev extra brings it)")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def test_multi_file_samples_on_a_local_cluster(client: Any) -> None:
    assert len(MULTI) >= 5, MULTI
    ex = client.get_executor()
    for sample in MULTI:
        same(traindoc.load(sample), traindoc.load(sample, executor=ex))
    # a list of 118 real corpus files and folders, as one incident
    paths = sorted(CORPUS_TIMEOUT.iterdir())
    same(traindoc.load(paths), traindoc.load(paths, executor=ex))


def test_512_rank_files_on_a_local_cluster(client: Any, ranks512: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    local = traindoc.load(ranks512)
    assert local.account["files"] == 512 and len(local.collectives) == 511
    assert len(local.iterations) > 5000
    got = traindoc.load(ranks512, executor=client.get_executor())
    same(local, got)
    same(traindoc.load(ranks512, workers=2), got)  # the local pool too
    # many tasks: each a few consecutive files
    monkeypatch.setattr(pool, "TASK_FILES", 5)
    same(local, traindoc.load(ranks512, executor=client.get_executor()))
    # by the scheduler's address, as a parameter and from the environment
    address = client.scheduler.address
    same(local, traindoc.load(ranks512, scheduler=address))
    monkeypatch.setenv(SCHEDULER_ENV, address)
    same(local, traindoc.load_or_fail(str(ranks512)))


def test_a_table_subset_on_a_local_cluster(client: Any, ranks512: Path) -> None:
    want = ["iterations"]
    same(traindoc.load(ranks512, tables=want),
         traindoc.load(ranks512, tables=want, executor=client.get_executor()))


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_a_process_pool_executor(ranks512: Path, method: str) -> None:
    """The worker function goes by reference and needs nothing a fork would inherit: a freshly
    spawned process reads the same."""
    if method not in mp.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    paths = [*sorted(ranks512.iterdir())[:64], *sorted((DATA / "deadlock" / "drill_hang").iterdir())]
    with cf.ProcessPoolExecutor(2, mp_context=mp.get_context(method)) as ex:
        same(traindoc.load(paths, workers=1), traindoc.load(paths, executor=ex))


def test_the_total_limit_is_held_at_merge_time(ranks512: Path) -> None:
    """Workers of a foreign executor share no byte counter: the parent holds
    max_total_bytes, and cuts exactly where a serial load does."""
    files = sorted(ranks512.iterdir())[:40]
    limit = sum(p.stat().st_size for p in files[:25]) + 1000  # into the 26th file
    serial = traindoc.load(files, workers=1, max_total_bytes=limit)
    with cf.ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as ex:
        got = traindoc.load(files, executor=ex, max_total_bytes=limit)
    same(serial, got)
    warned = [w for w in got.account["warnings"] if "max_total_bytes" in w]
    assert len(warned) == 15, got.account["warnings"]  # the 26th, cut, and the 14 after it
    full = traindoc.load(files, workers=1)
    assert 0 < len(got.iterations) < len(full.iterations)


def test_scheduler_errors_name_the_parameter(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed", reason="Dask's distributed is not installed")
    monkeypatch.setattr(pool, "SCHEDULER_TIMEOUT_S", 1.0)
    with pytest.raises(SchedulerError, match=r"scheduler='tcp://127\.0\.0\.1:9'.*within 1 s"):
        traindoc.load(DATA / "timeout" / "gemma3_seed", scheduler="tcp://127.0.0.1:9")
    monkeypatch.setenv(SCHEDULER_ENV, "no-port-here")
    with pytest.raises(SchedulerError, match=f"{SCHEDULER_ENV}='no-port-here'"):
        traindoc.load_or_fail(DATA / "timeout" / "gemma3_seed")
    with pytest.raises(ValueError, match="not both"):
        traindoc.load(DATA / "timeout" / "gemma3_seed", executor=cf.ThreadPoolExecutor(1),
                      scheduler="tcp://127.0.0.1:9")


def test_without_dask_only_a_scheduler_needs_it() -> None:
    """The library imports and loads without distributed; asking for a scheduler then says
    how to install it."""
    code = (
        "import sys; sys.modules['distributed'] = None; sys.modules['dask'] = None\n"
        "import traindoc\n"
        "from traindoc.reader import SchedulerError\n"
        f"assert traindoc.load({str(DATA / 'timeout' / 'gemma3_seed')!r}).readable\n"
        "try:\n"
        f"    traindoc.load({str(DATA / 'timeout' / 'gemma3_seed')!r}, scheduler='tcp://h:8786')\n"
        "except SchedulerError as e:\n"
        "    assert 'scheduler=' in str(e) and 'traindoc[cluster]' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('no SchedulerError')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True,
                   env={"PYTHONPATH": str(ROOT / "lib")})


def test_every_runbook_takes_a_scheduler() -> None:
    import nbformat

    for nb_path in sorted((ROOT / "lib" / "traindoc" / "runbooks").glob("*.ipynb")):
        nb = nbformat.read(nb_path, as_version=4)
        params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        assert 'scheduler = ""' in params.source, nb_path.name
        assert any("scheduler=scheduler" in c.source for c in nb.cells), nb_path.name
    assert cli.check_value("scheduler", "tcp://10.0.0.1:8786", "") == ("tcp://10.0.0.1:8786", None)


@pytest.mark.notebooks
def test_a_runbook_reads_on_the_cluster(client: Any, tmp_path: Path) -> None:
    """``traindoc run timeout LOGS -p scheduler tcp://…``: the same verdict as on this machine."""
    import json

    logs = str(DATA / "timeout" / "drill_desync")
    assert cli.main(["run", "timeout", logs, "-o", str(tmp_path / "here")]) == cli.EXIT_OK
    assert cli.main(["run", "timeout", logs, "-o", str(tmp_path / "there"),
                     "-p", "scheduler", client.scheduler.address]) == cli.EXIT_OK
    here, there = (json.loads((tmp_path / d / "summary.json").read_text())
                   for d in ("here", "there"))
    assert here["verdict"] == there["verdict"] and here["facts"] == there["facts"]
    assert here["inputs"] == there["inputs"]


class _Skewed(cf.Executor):
    """Runs each task here, and says its tables are not this traindoc's (an old worker)."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> cf.Future:
        future: cf.Future = cf.Future()
        part = fn(*args, **kwargs)
        future.set_result({**part, "schema": {**part["schema"], "extra": {"x": "string"}}})
        return future


def test_workers_of_another_version_are_refused() -> None:
    with pytest.raises(RuntimeError, match="another version of traindoc"):
        traindoc.load(DATA / "deadlock" / "drill_hang", executor=_Skewed())


# -- a scheduler address that hangs or answers junk (issue 31) ---------------------------------

def _server(reply: bytes | None) -> tuple[Any, int, Any]:
    """A TCP server on 127.0.0.1 that accepts and then sends ``reply`` (None: never a byte)."""
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    stop = threading.Event()
    conns: list[Any] = []

    def serve() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            conns.append(c)
            if reply is not None:
                try:
                    c.sendall(reply)
                except OSError:
                    pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()

    def close() -> None:
        stop.set()
        t.join()
        for c in conns:
            c.close()
        srv.close()

    return srv, srv.getsockname()[1], close


@pytest.mark.parametrize("reply", [None, b"\xff" * 64 + b"junk" * 1000],
                         ids=["silent", "junk"])
def test_a_scheduler_that_hangs_or_answers_junk_is_one_sentence_in_time(
        reply: bytes | None, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed", reason="Dask's distributed is not installed")
    monkeypatch.setattr(pool, "SCHEDULER_TIMEOUT_S", 2.0)
    _, port, close = _server(reply)
    try:
        t0 = time.monotonic()
        with pytest.raises(SchedulerError, match=rf"scheduler='tcp://127\.0\.0\.1:{port}'"):
            traindoc.load(DATA / "timeout" / "gemma3_seed", scheduler=f"tcp://127.0.0.1:{port}")
        assert time.monotonic() - t0 < 2.0 + 6.0
    finally:
        close()
