"""The fast engine (traindoc.reader.fast) gives the reference path's tables and account exactly."""

from __future__ import annotations

import functools
import gzip
import os
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traindoc
from conftest import DATA, ROOT, SEEDS
from traindoc.parse import BLOCK_PARSERS, LINE_PARSERS
from traindoc.parse.prefixes import SRUN_SHAPE_RE, Origin, demux
from traindoc.reader import bulk, decode, patterns, planner, progress, registry, sink
from traindoc.reader import fast as fast_engine
from traindoc.reader.scanners import SCANNER_ENV
from traindoc.schema import frame

sys.path.insert(0, str(ROOT / "benchmarks"))
import generate  # noqa: E402

SCANNERS = ["python"] + (["hyperscan"] if patterns.hs is not None else [])


def same(a: traindoc.Incident, b: traindoc.Incident) -> None:
    assert a.account == b.account
    assert a.unrecognized == b.unrecognized
    for t in a.tables:
        pd.testing.assert_frame_equal(a.tables[t], b.tables[t], obj=t)


def both(paths, **kw) -> tuple[traindoc.Incident, traindoc.Incident]:
    plain = traindoc.load(paths, engine="plain", workers=1, **kw)
    fast = traindoc.load(paths, engine="fast", workers=1, **kw)
    return plain, fast


@pytest.fixture(params=SCANNERS)
def scanner(request, monkeypatch):
    monkeypatch.setenv(SCANNER_ENV, request.param)
    return request.param


SAMPLES = sorted(p for p in DATA.glob("*/*") if p.is_dir())


@functools.cache
def _plain_once(path: Path) -> traindoc.Incident:
    """The reference engine's load of ``path``: it uses no scanner, so both scanners' tests of
    a sample compare the fast engine with one load of it (the Incident is not changed)."""
    return traindoc.load(path, engine="plain", workers=1)


def _scanner_now() -> str:
    """The scanner a load made now uses (``TRAINDOC_SCANNER``, else the default)."""
    return os.environ.get(SCANNER_ENV) or ("hyperscan" if patterns.hs is not None else "python")


@functools.lru_cache(maxsize=2)
def _fast_once(path: Path, scanner: str) -> traindoc.Incident:
    """The fast engine's load of ``path`` (``workers=1``) with ``scanner``, which must be the
    scanner of the environment (``_scanner_now``): the engine sweep's test of a sample and the
    iterations test's full load of it are one load (same xdist group, run one after the other:
    two kept). The Incident is not changed."""
    assert scanner == _scanner_now(), (scanner, _scanner_now())
    return traindoc.load(path, engine="fast", workers=1)


def _sample_params() -> list:
    """One parameter a sample; a corpus class (read as one job: tens of seconds) in the slow
    tier (make test-fast leaves it out, make test runs it) and in one xdist group for its
    engine and iterations tests, which share its loads (``_plain_once``, ``_fast_once``)."""
    return [pytest.param(p, id=f"{p.parent.name}/{p.name}",
                         marks=[pytest.mark.slow,
                                pytest.mark.xdist_group(f"ingest-corpus-{p.name}")]
                         if p.parent.name == "corpus" else [])
            for p in SAMPLES]


@pytest.mark.parametrize("sample", _sample_params())
def test_every_sample_reads_the_same(sample: Path, scanner: str) -> None:
    same(_plain_once(sample), _fast_once(sample, scanner))


def test_seeds_read_the_same(scanner: str) -> None:
    if not SEEDS.is_dir():
        pytest.skip(f"seeds not found at {SEEDS}")
    same(*both(SEEDS))


@pytest.mark.parametrize("seed", range(6))
def test_adversarial_logs_read_the_same(tmp_path: Path, seed: int, scanner: str,
                                        monkeypatch) -> None:
    """Wrapped lines, ANSI, \\r, srun/torchrun/c10 prefixes, bad bytes, NULs, long lines, year
    changes, block records cut by other ranks; small chunks so records straddle them."""
    monkeypatch.setattr(decode, "CHUNK_BYTES", 1 << (12 + seed % 4))
    log = generate.torture_log(tmp_path / f"t{seed}.log", seed, n=1500, gz=seed % 3 == 2)
    plain, fast = both(log)
    same(plain, fast)
    assert plain.account["lines"] > 1500 and len(plain.iterations) and len(plain.collectives)


def test_a_big_generated_log_reads_the_same(tmp_path: Path, scanner: str) -> None:
    log = generate.write_lines(tmp_path / "m.log", generate.mixed_log_lines(3 << 20, seed=5))
    assert log > 0
    same(*both(tmp_path / "m.log"))


@pytest.mark.parametrize("chunk", [1 << 14, 4 << 20])
def test_the_hot_mix_reads_the_same(tmp_path: Path, scanner: str, chunk: int,
                                    monkeypatch) -> None:
    """Issue 17's hot mix (most lines parser targets, several writers, ANSI, tqdm bars)."""
    monkeypatch.setattr(decode, "CHUNK_BYTES", chunk)
    generate.write_lines(tmp_path / "hot.log", generate.hot_mix_lines(1 << 20, seed=3))
    plain, fast = both(tmp_path / "hot.log")
    same(plain, fast)
    assert len(plain.iterations) and len(plain.progress) and len(plain.checkpoints)


@pytest.mark.parametrize("chunk", [1 << 12, 1 << 14, 4 << 20])
def test_the_interleaved_mix_reads_the_same(tmp_path: Path, scanner: str, chunk: int,
                                            monkeypatch) -> None:
    """Issue 29's interleaved mix (one writer's iteration lines among seven others' lines,
    line by line; ANSI, tqdm bars, checkpoints), chunks small enough to cut it often."""
    monkeypatch.setattr(decode, "CHUNK_BYTES", chunk)
    generate.write_lines(tmp_path / "mix.log", generate.interleaved_lines(1 << 20, seed=4))
    plain, fast = both(tmp_path / "mix.log")
    same(plain, fast)
    assert len(plain.iterations) > 500 and len(plain.progress) and len(plain.checkpoints)


def bulk_lane_lines(rnd: random.Random, n: int) -> list[str]:
    """Megatron iteration lines the bulk lane takes, among lines it must leave to the
    per-line path: other years, bad dates, values its shapes refuse, another shape, trailing
    blanks, a collector's time, busy writers (tracebacks, timer blocks that read the last
    step), other step formats of the same table (with and without times)."""
    out = []
    t = generate.T0
    for i in range(1, n + 1):
        t += timedelta(seconds=2)
        r = rnd.randrange(4)
        k = rnd.randrange(14)
        mega = generate.iteration_line(i, t, rnd, 2.5)  # srun + torchrun prefixes, a time
        if k < 4:
            out.append(mega)
        elif k == 4:
            out.append(generate.INTERLEAVED_ITERATION.format(
                i=i, cs=i * 2048, ct=i * 4 << 20, t=105.5, lr=6e-5, loss=2.5, gn=0.2, sps=19.4,
                tf=149.0).replace("[default7]", f"[default{r}]"))
        elif k == 5:
            out.append(rnd.choice((
                mega.replace("2024-", "2025-"), mega.replace("2024-07-", "2024-13-"),
                mega.replace("lm loss: ", "lm loss: nan"), mega + "  ",
                mega.replace("global batch size:  2048", "global batch size: 2048.0"),
                mega.replace(f"iteration {i:8d}", "iteration 99999999999999999999"),
                mega.replace("lm loss", "lm loss: 1.0 | loss"),
                "2024-07-08T00:00:01.5Z " + mega.split("]:", 1)[1])))
        elif k == 6:
            out += [f"[default{r}]:{x}" for x in generate.TRACEBACK[:4]]
        elif k == 7:
            out += generate._timers(generate.RANKS - 1)[:4]
        elif k == 8:
            out.append(f"{{'loss': {rnd.random():.4f}, 'learning_rate': 1e-05, 'epoch': "
                       f"{i / 100:.2f}}}")
        elif k == 9:
            out.append(f"[default{r}]:[{t:%Y-%m-%d %H:%M:%S}] step {i} | loss {rnd.random():.3f}")
        elif k == 10:  # another shape: the fields in another order, without a time
            out.append(f"[rank{r}]: iteration {i}/ 1000 | lm loss: 2.0E+00 | consumed samples: "
                       f"{i * 8} | elapsed time per iteration (s): 1.5 | number of skipped "
                       "iterations: 0 | number of nan iterations: 0 |")
        else:
            out.append(f"[default{r}]:chatter {i}")
    return out


@functools.cache
def _plain_in_parts(path: Path, chunk: int, flush: int) -> traindoc.Incident:
    """The reference engine's load of ``path`` read in ``chunk``-byte chunks and flushed every
    ``flush`` rows (the patched values, checked): both scanners' tests of one seed compare
    with one load of the same file."""
    assert (decode.CHUNK_BYTES, sink.FLUSH_ROWS) == (chunk, flush)
    return traindoc.load(path, engine="plain", workers=1)


# both scanners' tests of a seed in one xdist group: one log file and one reference load
@pytest.mark.parametrize("seed", [pytest.param(s, marks=pytest.mark.xdist_group(
    f"ingest-bulk-lane-{s}")) for s in range(3)])
def test_the_bulk_lane_reads_what_the_parser_reads(tmp_path_factory: pytest.TempPathFactory,
                                                   seed: int, scanner: str,
                                                   monkeypatch) -> None:
    """Iteration lines made into columns by the bulk lane give the per-line path's rows, in
    its order, with the other step lines of their table; small chunks and flushes make the
    lane's rows and the per-line rows share many parts."""
    chunk, flush = 1 << (12 + seed), (29, 64, 16384)[seed]
    monkeypatch.setattr(decode, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(sink, "FLUSH_ROWS", flush)
    rnd = random.Random(seed)
    log = tmp_path_factory.getbasetemp() / f"bulk-lane-{seed}.log"  # (the same for both)
    text = "\n".join(bulk_lane_lines(rnd, 3000)) + "\n"
    if not log.exists() or log.read_text() != text:
        log.write_text(text)
        _plain_in_parts.cache_clear()
    taken = []
    add_bulk = sink.Sink.add_bulk
    monkeypatch.setattr(sink.Sink, "add_bulk",
                        lambda self, *a: taken.append(1) or add_bulk(self, *a))
    plain = _plain_in_parts(log, chunk, flush)
    fast = traindoc.load(log, engine="fast", workers=1)
    same(plain, fast)
    assert len(taken) > 800 and len(plain.iterations) > len(taken) + 300
    assert len(plain.tables["host_timings"]) and plain.iterations["time"].notna().any()
    monkeypatch.setenv(bulk.BULK_ENV, "0")
    taken.clear()
    same(plain, traindoc.load(log, engine="fast", workers=1))
    assert not taken


def test_the_bulk_lane_reads_times_as_the_per_line_path() -> None:
    """Its time column, made from the date groups at once, equals the per-line path's
    datetimes (None for no time or a date ``datetime`` refuses: 24:00, Feb 30, second 60)."""
    rnd = random.Random(0)
    for _ in range(300):
        rows = [(None,) * 6 if rnd.random() < 0.2 else
                (b"20%02d" % rnd.randint(0, 99), *(b"%02d" % rnd.randint(0, hi)
                                                   for hi in (13, 32, 25, 61, 61)))
                for _ in range(rnd.randint(1, 6))]
        want = pd.to_datetime(pd.Series([bulk.batch_time(v) for v in rows]), errors="coerce")
        got = bulk._times(list(zip(*rows, strict=True)), len(rows))
        pd.testing.assert_series_equal(got, want, check_names=False)


def test_the_sink_keeps_the_order_of_bulk_and_per_line_rows() -> None:
    """A flush of both paths' rows gives the table of all rows as dicts in reading order,
    whether the two frames join (a time column with no time takes the other's unit) or not
    (an aware time and a naive one: the rows as dicts)."""
    body = (b"[2024-07-08 00:00:02] iteration 5/ 10 | consumed samples: 40 | elapsed time per "
            b"iteration (ms): 2030.5 | lm loss: 2.5E+00 | number of skipped iterations: 0 | "
            b"number of nan iterations: 0 |")
    shape = bulk.learn(body)
    assert shape is not None
    for when in (None, datetime(2024, 7, 8, tzinfo=UTC), datetime(2024, 7, 8, 1)):
        got = sink.Sink()
        batch = bulk.Batch()
        batch.shapes.append(shape)
        want = []
        for i in range(6):
            if i % 3 == 1:
                row = {"iteration": i, "loss": 1.0}
                got.add("iterations", dict(row), ("f.log", i, Origin(rank=1), when), "x")
                want.append({**row, "rank": 1, "time": when, "source": f"f.log:{i}",
                             "line": "x"})
            else:
                m = shape.rx.fullmatch(body)
                assert m is not None
                batch.add(0, m.groups(), body, "f.log", i, 0, None)
                got.add_bulk("iterations", batch, "f.log")
                want.append({"iteration": 5, "total_iterations": 10, "consumed_samples": 40,
                             "elapsed_s": 2030.5 * 1e-3, "loss": 2.5, "skipped": 0, "nan": 0,
                             "rank": 0, "time": datetime(2024, 7, 8, 0, 0, 2),
                             "source": f"f.log:{i}", "line": body.decode()})
        pd.testing.assert_frame_equal(got.tables()["iterations"], frame("iterations", want))


def test_dated_lines_read_the_same(tmp_path: Path, scanner: str) -> None:
    generate.write_lines(tmp_path / "d.log", generate.dated_lines(1 << 20, seed=2))
    same(*both(tmp_path / "d.log"))


def test_year_changes_inside_a_file(tmp_path: Path, scanner: str) -> None:
    wd = generate.WATCHDOG.format(r=1, md="1231", s=5)
    lines = ["2023-12-31 23:59:58 INFO before midnight", wd, "chatter " * 3,
             "2024-01-01 00:00:01 INFO after midnight", wd.replace("E1231", "E101"),
             "\x1b[32m2025-01-01 00:00:00\x1b[0m coloured date", wd, "x" * 100 + " 2026-01-01 "
             "00:00:00 too far right", wd]
    p = tmp_path / "y.log"
    p.write_text("\n".join(lines * 400) + "\n")
    plain, fast = both(p)
    same(plain, fast)
    assert sorted({t.year for t in plain.collectives["time"].dropna()}) == [2023, 2024, 2025]


def test_many_files_through_the_pool(tmp_path: Path) -> None:
    for i in range(6):
        generate.torture_log(tmp_path / f"rank{i}.log", 100 + i, n=400, gz=i == 3)
    serial = traindoc.load(tmp_path, workers=1)
    pooled = traindoc.load(tmp_path, workers=2)
    same(serial, pooled)
    assert pooled.account["files"] == 6


def test_tables_made_in_parts_equal_tables_made_at_once(tmp_path: Path, monkeypatch) -> None:
    log = generate.torture_log(tmp_path / "t.log", 3, n=1500)
    whole = traindoc.load(log)
    monkeypatch.setattr(sink, "FLUSH_ROWS", 7)
    same(whole, traindoc.load(log))


@pytest.mark.parametrize("seed", range(3))
def test_a_table_subset_reads_the_same_through_both_engines(tmp_path: Path, seed: int,
                                                           scanner: str) -> None:
    log = generate.torture_log(tmp_path / f"t{seed}.log", 20 + seed, n=1500)
    for tables in (["iterations"], ["collectives", "errors"], ["stacks", "exits"]):
        plain, fast = both(log, tables=tables)
        same(plain, fast)
        assert plain.account["tables"] == sorted(tables)
        assert not plain.unrecognized  # a subset proves nothing about the lines left unread


@pytest.mark.parametrize("sample", [pytest.param(None, id="generated"), *_sample_params()])
def test_iterations_alone_are_the_iterations_of_a_full_load(tmp_path: Path,
                                                            sample: Path | None) -> None:
    """A generated mixed log and every sample, one test each: a sample's full load (the
    default engine's) is the one its engine sweep made (``_fast_once``, same group)."""
    log = tmp_path / "m.log"
    if sample is None:
        generate.write_lines(log, generate.mixed_log_lines(2 << 20, seed=7))
    path = sample or log
    full = (_fast_once(path, _scanner_now()) if sample is not None
            and registry.fast_engine_status()[0] else traindoc.load(path, workers=1))
    only = traindoc.load(path, workers=1, tables=["iterations"])
    pd.testing.assert_frame_equal(only.iterations, full.iterations, obj=str(path))
    assert all(len(df) == 0 for t, df in only.tables.items() if t != "iterations"), path
    assert only.account["lines"] == full.account["lines"]
    if sample is None:
        with pytest.raises(ValueError, match="unknown table"):
            traindoc.load(log, tables=["iteration"])


@pytest.mark.parametrize("engine", ["plain", "fast"])
def test_a_one_table_load_joins_wrapped_lines_as_a_full_load_does(tmp_path: Path,
                                                                    engine: str) -> None:
    # lines 10-15 of a corpus case.json read as a log (batch j's ms-swift#6877): a full load joins
    # the "step 6/15000" summary into a joiner's record, so the generic step reader never sees
    # it alone; a load of the iterations table alone gave that line a row of its own (the
    # joiners were left out with their tables: reader.lines.parsers_for keeps them now)
    case = ROOT / "data/corpus/gpu_crash/gpu_crash-ms-swift-6877/case.json"
    log = tmp_path / "joined.log"
    log.write_text("\n".join(case.read_text().splitlines()[9:15]) + "\n")
    full = traindoc.load(log, workers=1, engine=engine)
    only = traindoc.load(log, workers=1, engine=engine, tables=["iterations"])
    pd.testing.assert_frame_equal(only.iterations, full.iterations)


needs_hyperscan = pytest.mark.skipif(patterns.hs is None, reason="the planner needs hyperscan")


@needs_hyperscan
@pytest.mark.parametrize("seed", range(3))
def test_chunks_planned_in_a_child_process_read_the_same(tmp_path: Path, seed: int,
                                                        monkeypatch) -> None:
    monkeypatch.setenv(SCANNER_ENV, "hyperscan")
    monkeypatch.setattr(decode, "CHUNK_BYTES", 1 << (12 + seed))
    monkeypatch.setattr(planner, "PIPELINE_MIN_BYTES", 0)
    monkeypatch.setattr(fast_engine, "SKIP_WINDOW", 64 << seed)
    log = generate.torture_log(tmp_path / f"t{seed}.log", 40 + seed, n=2000)
    made = []
    real = planner.Planner.__init__

    def spy(self, *a, **kw):
        made.append(a[0])
        real(self, *a, **kw)

    monkeypatch.setattr(planner.Planner, "__init__", spy)
    piped = traindoc.load(log, engine="fast", workers=None)
    assert made == [str(log)]
    same(traindoc.load(log, engine="plain", workers=1), piped)
    for tables in (["iterations"], ["collectives", "stacks"]):
        same(traindoc.load(log, engine="plain", workers=1, tables=tables),
             traindoc.load(log, engine="fast", workers=None, tables=tables))


@needs_hyperscan
@pytest.mark.parametrize("fault", ["dies", "other_bytes"])
def test_the_reader_plans_itself_when_the_planner_fails(tmp_path: Path, fault: str,
                                                       monkeypatch) -> None:
    """A planner that dies after two chunks, or that read other bytes (a file rewritten in
    between): the reader plans the rest itself, with the same result."""
    monkeypatch.setenv(SCANNER_ENV, "hyperscan")
    monkeypatch.setattr(decode, "CHUNK_BYTES", 1 << 13)
    monkeypatch.setattr(planner, "PIPELINE_MIN_BYTES", 0)
    log = generate.torture_log(tmp_path / "t.log", 7, n=2000)

    class Conn:
        def __init__(self, conn, sent=0):
            self.conn, self.sent = conn, sent

        def send(self, msg):
            self.sent += 1
            if self.sent > 2 and fault == "dies":
                raise BrokenPipeError
            if self.sent == 3 and fault == "other_bytes":  # the plan of other bytes
                msg = ((0, b"", b""), self.last)
            self.last = msg[1]
            self.conn.send(msg)

        def close(self):
            self.conn.close()

    real = planner._plan_file
    monkeypatch.setattr(planner, "_plan_file", lambda path, scan, susp, conn:
                        real(path, scan, susp, Conn(conn)))
    same(traindoc.load(log, engine="plain", workers=1), traindoc.load(log, workers=None))


def test_engine_argument() -> None:
    with pytest.raises(ValueError, match="engine"):
        traindoc.load(DATA, engine="turbo")
    ok, why = registry.fast_engine_status()
    assert ok, why


def test_every_block_parser_declares_start_needles() -> None:
    _, missing = registry.block_needles()
    assert not missing, f"declare `needles` on {missing} (see traindoc.parse.base.BlockParser)"


def test_every_block_parser_states_the_whole_contract() -> None:
    """``needles``, ``tables`` and ``section`` are declared on each class (the reader reads them
    directly, with no fallback), with the types ``parse.base.BlockParser`` gives them."""
    for factory in BLOCK_PARSERS:
        name = factory.__qualname__
        for attr in ("needles", "tables", "section"):
            assert attr in vars(factory), f"{name} does not declare {attr}"
        assert isinstance(factory.needles, tuple) and all(isinstance(n, str) and n
                                                          for n in factory.needles), name
        assert isinstance(factory.tables, tuple), name
        assert factory.section is None and factory().section is None, name


NEEDLES = registry.all_needles()
plain_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80)


COMPLETE_ENDS = [(p, end) for p in LINE_PARSERS for end in p.complete_ends]
step_words = st.sampled_from(["Epoch 3", "epoch: 12/ 90", "step 5 loss 1.0 ", "it/s ", " ",
                              "| lm loss: 2.0 ", "Loss nan   ", "Global Step: 20", "3", ""])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(plain_text, step_words), max_size=6))
def test_a_line_ending_as_a_parser_declares_is_complete_to_it(parts: list[str]) -> None:
    """``LineParser.complete_ends`` (the bulk lane skips ``incomplete`` on such lines)."""
    assert COMPLETE_ENDS
    for parser, end in COMPLETE_ENDS:
        assert not parser.incomplete("".join(parts) + end), parser.name


@settings(max_examples=300, deadline=None)
@given(st.lists(plain_text, min_size=1, max_size=8))
def test_idle_block_parsers_ignore_lines_without_their_needles(lines: list[str]) -> None:
    """The contract the fast engine relies on: an idle block parser fed a line holding none of
    the needles returns nothing, stays idle and keeps its state."""
    for factory in BLOCK_PARSERS:
        p = factory()
        for text in lines:
            if any(n in text for n in NEEDLES):
                continue
            before = dict(vars(p))
            assert p.feed(text, ("f", 1, None, None, text)) == []
            assert p.section is None
            assert vars(p) == before, type(p).__name__


@settings(max_examples=500, deadline=None)
@given(st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=40))
def test_demux_stops_where_the_prefix_cache_assumes(rest: str) -> None:
    """Past a line's start, demux tries a prefix only at '[', '(' or a digit, and after a digit
    reads at most 8 characters (srun's ``\\d{1,6}: ``): what ``PrefixCache`` relies on."""
    stops = demux(" " + rest)[0] == rest
    ch = rest[0]
    if ch not in "[( " and not ch.isdigit():
        assert stops
    srun = SRUN_SHAPE_RE.match(rest)
    if ch.isdigit() and len(rest) >= 8 and not (srun and rest[srun.end():].startswith("[")):
        assert stops == (demux(" " + rest[:8] + "~x")[0] == rest[:8] + "~x")
    # (before '[', srun's shape looks to the line's end for a bare list of names: PrefixCache
    # memoises no line it refuses, test_srun_before_a_list_of_names_through_the_prefix_cache)


# Horovod's stall report under "Missing ranks:" numbers its lines by the rank that lacks the
# ops (horovod/horovod#2564; the corpus's hvd-tf-worker-desync): no srun task prefix, which the
# same shape before a rank tag or a message still is.
HVD_MISSING = ["1: [DistributedGradientTape_Allreduce/cond_163/then/_1304/HorovodAllreduce_AddN_103_0, "
               "DistributedGradientTape_Allreduce/cond_164/HorovodAllreduce_BiasAddGrad_0]",
               "0: [cond_1/then/_10/cond_1/SGD/PartitionedCall/DistributedSGD_Allreduce/cond/"
               "HorovodAllreduce_grads_0]"]
SRUN_LINES = ["1: [DistributedGradientTape] step 3 loss 2.0", "0: [cond_1]: x",
              "0: [rank0]: iteration 5", "1: ['a', 'b']", "0: [1, 2, 3]", "0: [cond_1/then] ok"]


def test_srun_before_a_list_of_names_through_the_prefix_cache() -> None:
    for text in HVD_MISSING:
        assert demux(text) == (text, Origin())
    for text in SRUN_LINES:
        assert demux(text)[1].task is not None, text
    for order in (HVD_MISSING + SRUN_LINES, SRUN_LINES + HVD_MISSING):
        cache = fast_engine.PrefixCache()
        for text in order * 2:
            c, o, _ = cache.split(text.encode())
            assert (text[c:], o) == demux(text), text


def test_prefix_cache_matches_demux() -> None:
    rnd = random.Random(0)
    cache = fast_engine.PrefixCache()
    lines = [b.decode("utf-8", "replace") for b in generate.torture_lines(rnd, 3000)]
    for text in lines * 2:
        if not text.isascii():
            continue
        body, origin = demux(text)
        c, o, _ = cache.split(text.encode())
        assert (text[c:], o) == (body, origin)


def test_progress_bar_only_when_asked_or_on_a_terminal(tmp_path: Path, capsys) -> None:
    assert progress.progress_bar(None, 10 << 20, 1) is None  # pytest's stderr is no terminal
    assert progress.progress_bar(False, 10 << 20, 1) is None
    bar = progress.progress_bar(True, 10 << 20, 2)
    assert bar is not None and bar.total == 10 << 20
    bar.close()
    p = tmp_path / "a.log.gz"
    with gzip.open(p, "wt") as fh:
        fh.write(generate.WATCHDOG.format(r=1, md="708", s=3) + "\n")
    inc = traindoc.load(p, progress=True)
    assert len(inc.collectives) == 1


def test_the_reader_limits_read_the_same_through_both_engines(tmp_path: Path) -> None:
    """A file cut at a byte limit, a line over 4 MiB, numbers beyond int64: the same tables and
    account from either engine (issue 19.6, 19.8, 19.11, 19.13)."""
    steps = "".join(f" iteration {i}/ 9000 | elapsed time per iteration (ms): 100.0 | "
                    "lm loss: 2.0E+00 |\n" for i in range(1, 9001))
    with gzip.open(tmp_path / "a.log.gz", "wt") as fh:
        fh.write(steps)
    (tmp_path / "b.log").write_text("x" * (5 * 1024 * 1024) + "\n" + steps[:2000]
                                    + "[rank99999999999999999999]: iteration 1/ 2 | lm loss: 2.0 |\n"
                                    + " iteration " + "1" * 23 + "/ 2 | lm loss: 2.0 |\n")
    for kw in ({"max_bytes": 100_000}, {"max_total_bytes": 300_000}, {}):
        plain, fast = both([tmp_path / "a.log.gz", tmp_path / "b.log"], **kw)
        same(plain, fast)
        assert plain.account["warnings"], kw


def test_the_writer_caches_stay_bounded(monkeypatch) -> None:
    """Lines whose writer the prefix cache does not keep (a host name leads them, or they are
    not ASCII) give a new Origin each: the engine's caches of them stay bounded."""
    from traindoc.reader.account import Account
    from traindoc.reader.lines import LineReader, Stream
    from traindoc.reader.sink import Sink

    monkeypatch.setattr(fast_engine, "CACHE_ENTRIES", 64)
    acc = Account()
    lines = LineReader(acc, Sink())
    ft = fast_engine.FastText(lines, Stream("x.log", demux("")[1], 2024), registry.Registry(),
                              fast_engine.PrefixCache())
    body = (" iteration {i}/ 9000 | lm loss: 2.0 | grad norm: 0.3 | number of skipped iterations:"
            "   0 | number of nan iterations:   0 |")
    chunk = "".join(f"node-{i % 4}:{body.format(i=i)}\n[default0]:Epoch 0: {i % 100}%|█ "
                    f"| {i}/9000 [00:01<00:02, 2.00it/s]\n" for i in range(1, 2001)).encode()
    ft.chunk(chunk)
    lines.end(ft.st)
    assert acc.lines == 4000 and len(lines.sink.rows["iterations"]) >= 2000
    assert len(ft._merged_origin) <= 64 and len(ft._merged) <= 64
