# Set-up and common tasks. `make demo` and `make test` are the README's first two commands.
VENV ?= .venv
PY := $(VENV)/bin/python
SAMPLE ?= data/timeout/gemma3_seed
OUT ?= runbook-output

.PHONY: setup demo test test-fast lint lab samples bench clean

setup: $(VENV)/.installed

# torch only as the CPU build on this machine's disk (a plain `torch` pulls a CUDA build).
$(VENV)/.installed: pyproject.toml
	@echo "setup: creating $(VENV)"
	python3 -m venv $(VENV)
	@echo "setup: installing torch 2.13.0, the CPU build (about a minute)"
	$(PY) -m pip install -q --progress-bar off torch==2.13.0
	@echo "setup: installing traindoc and its dependencies into $(VENV) (about a minute)"
	$(PY) -m pip install -q --progress-bar off -e '.[dev]'
	@echo "setup: done; the command is $(VENV)/bin/traindoc (or: source $(VENV)/bin/activate)"
	touch $@

# `traindoc run` is papermill with the kernel's log quieted (no "TCP without encryption" noise).
demo: setup
	$(VENV)/bin/traindoc run timeout $(SAMPLE) -o $(OUT)

# Every test over every core (pytest-xdist), the longest first (tests/conftest.py orders them);
# --dist loadgroup keeps each sample's and corpus case's sweep tests (the corpus floor's among
# them, one test a case) on one worker, which loads and triages it once, and both tests of a
# drill on one, which runs it once. Under pytest 9.2 the groups hold only through the conftest
# (pytest-xdist issue 1386: before it, every test was scheduled alone). Measured on 2 cores
# (-n 2, CPU time of the test processes and their children): 21.9 CPU-minutes before, 18.9
# after (22:47 and 42:00 wall, the machine shared at load 2-9 and 10-20: wall time there says
# little); from a fresh clone on the idle machine, 10:25 for 7,420 tests (ca4c30f). Since (j28),
# the in-process `traindoc run`s of the bad-input and output-folder tests and the hostile-output
# runbooks run in the test process's kernel (one start a worker, not one a run), and the two
# figure sweeps draw each sample's figures once: about 37 CPU-seconds less, measured file by
# file on the machine shared at load 12-17; from a fresh clone of 2926a7c on the idle machine,
# 11:51 for 7,880 tests (812 corpus cases, each with its own sweep tests). Two workers a core were measured no faster on 2 cores
# (14:26 against 14:19 from one fresh clone) for half again the CPU time: WORKERS chooses.
# Since (s_test) the tests that share a costly module fixture run on one worker
# (conftest's COSTLY_MODULE_FIXTURES): in a full run's --setup-plan the Dask cluster was set
# up 3 times, the wheel, the 512 rank files and the `run --html` report twice; now once each
# (about 10 CPU-s of set-up measured with --setup-only, on the machine shared at load 15).
# Since (u_test), per corpus case (1005, seven sweep tests each; CPU-s in one process, 16
# cases, the machine shared at load 8-13): the seven tests cost 0.43 CPU-s a case, of which
# load 0.03, triage (the five class analyses) 0.17, drawing and checking the case's figures
# 0.07, scoring and summary 0.06. The figure and deadlock-advice sweeps ran the case's class
# analyse again (conftest.analysis_once now: triage's analyses are theirs), scoring read the
# 1 MB similar index twice a case and ran triage again on the 92 cases that name no class
# (similar.load_index parsed once, score_case takes triage's report): 5.93 -> 5.22 CPU-s for
# the 16 cases' sweeps (about 45 CPU-s over the corpus), score_case 62 -> 23 ms a case. A load
# of a corpus case 45 -> 30 ms (100 cases; schema: empty tables copied from one built once, the
# columns no row names built as compact() makes them). Left: triage's analyses (0.17 CPU-s a case, two
# fifths of the corpus sweep) are the per-case cost that grows with the corpus. Full run from a
# fresh clone of 75d9887 (-n 2 --dist loadgroup, every marker): 10,476 passed, 4 skipped, 1,250
# CPU-s (1,166 user, 83 sys), 29:23 wall on the machine shared at load 4-13 (not comparable with
# CI's 12:59 idle); the two workers finished 5 s apart (no idle tail).
# Since (w_test): papermill saved a test's executed notebook after every cell (a full nbformat
# JSON dump, 66 a run); the tests' helper (test_runbooks.execute, ~190 runs) writes it once:
# test_runbooks.py 59.5 -> 49.9 CPU-s (one process, same load). The markup property drew 115
# tables that are 47 shapes to a poisoned table: 0.79 -> 0.29 CPU-s an example (25). Torch was
# asked for a CUDA GPU once a CUDA drill (1.7 CPU-s each); now once a process. Bytecode is
# written (below). Full run of da56b13 (-n 2 --dist loadgroup, every marker, the
# machine shared at load 5-13): 10,806 passed, 10 skipped, 1,251 CPU-s (1,171 user, 80 sys),
# 19:54 wall: the savings (~60 CPU-s) only pay for this round's 330 new tests. Largest test
# files by summed test time in that run: test_bad_inputs 350 s (126 catalogue runbook runs;
# `traindoc run gpu_crash` runs the gpu_crash runbook again on the same 20 inputs), test_ingest
# 309, test_actions 195, test_drills 147, test_cluster 126, test_flight_recorder_fast 121,
# test_watch 120, test_shell_safe 111. Left: the library's own papermill runs (CLI, score,
# watch: ~100 in the suite, 0.18 CPU-s each) still save after every cell, which keeps a dead
# kernel's partial notebook; each class's report and triage compute input_findings
# (clock_jumps) again, six times a case.
# Since (xtest): Incident.once computes the input's findings once an incident (call count: 6
# a case before, 53 for 50 corpus cases after; the timeout analysis rebuilt the incident, now
# only where it fills in a process group); under cProfile they were 1.25 of 7.6 s of triage
# over 25 cases; triage 0.16 -> 0.15 CPU-s a case (50 cases, load 2-3, noisy): ~10 CPU-s over
# the corpus. Summaries unchanged. Full run from a fresh clone of f7bc6ff (shared venv, -n 2
# --dist loadgroup, every marker, the machine shared at load 3-7): 11,287 passed, 20 skipped,
# 1,293 CPU-s (1,209 user, 85 sys), 20:30 wall. Largest files by summed test time there:
# test_ingest 546 s, test_actions 303, test_bad_inputs 218, test_triage 111,
# test_flight_recorder_fast 102, test_figures 99, test_drills 96, test_watch 92. Not measured
# yet: the library's papermill runs saving after every cell, bad-input runs done twice.
# Since (ytest): that ranking is wall time under load and charges a group's shared work to its
# first test (test_actions is first in each corpus case's group: its 303 s are the cases' loads
# and triage). test_ingest alone in one process (-n 0, every marker): 338 CPU-s (333 user, 5
# sys); of that each corpus class read as one job costs ~32 CPU-s (gpu_crash: plain 13.2, fast
# with the python scanner 8.6, with hyperscan 5.8, iterations alone 4.4), ~150 over the five,
# growing with the corpus: each load is a different engine or table set, nothing computed twice
# under --dist loadgroup (the group keeps _fast_once's load for the iterations test). Triage
# under cProfile (45 cases): the classes asked again and again for training_steps (6 a case),
# steps_with_seconds (5), last_progress (4) and the loss series (2); now Incident.once computes
# each once an incident: triage 0.18-0.22 -> 0.14 CPU-s a case (92 corpus cases, one process,
# load 9-13), ~50-80 CPU-s over the corpus sweep; summaries unchanged (test_summaries passes).
# Left: papermill's request_save_on_cell_execute=False for the library's runs (it passes
# output_path=None to the engine, so a kernel that dies leaves no notebook at all: ~4 CPU-s,
# not worth that); test_bad_inputs' `run gpu_crash` sharing the gpu_crash runbook's runs (~25
# CPU-s, but the CLI's run and papermill's with the test's parameters are two things tested).
# Full run from a fresh clone of dc0da10 (shared venv, -n 2 --dist loadgroup, every marker,
# seeds present, the machine shared at load 10-11): 11,422 passed, 15 skipped, 1,410 CPU-s
# (1,309 user, 101 sys), 40:12 wall; under that load CPU-s are inflated and not comparable with
# f7bc6ff's 1,293 at load 3-7: the idle CI run is the figure to read.
# Since (atest): the corpus sweep's seven tests on 110 cases (throughput-d*, gpu_crash-m*,
# timeout-m*; one process, cProfile, 125 s of test calls): triage's class analyses 63 s (50%:
# gpu_crash 17.5, throughput 15.4, timeout 10.1, loss 4.5, deadlock 3.5), drawing and checking
# the figures 30 (24%), the loads 23 (18%), report texts 7, actions 7, scoring with summary and
# similar 4.7, pytest's own per-test work ~2.5 (~3 ms a test). Done twice a case: the failure
# events (the timeout analysis's earlier_failure, 23 of 118 cases), the gpu_crash analysis
# (triage's _runbook_crash, 10 of 118), rank_hosts (three readings), choose_metric's counts
# (up to four times); now Incident.once each: ~6.6 of the 125 s, 66.1 -> 60.5 CPU-s for those
# 110 cases' sweeps at load 3-5 (~30 CPU-s over 1152 cases). The corpus sweep is ~0.5 CPU-s a
# case (~580 of the suite's ~1,600); turning its ~8,000 tests into one a case with subtests
# would save at most pytest-xdist's cost of a test (1.7 CPU-ms a trivial test under -n 1,
# controller and worker: 2000 tests 3.04 -> 6.48 CPU-s; ~15-25 CPU-s), not the < 10 min.
WORKERS ?= auto
# Bytecode written (PYTHONDONTWRITEBYTECODE emptied where the environment sets it, as this
# one does): the run's processes that import traindoc (kernels, `traindoc` subprocesses,
# drill workers) compile the library once between them, not once each (0.3 CPU-s a process).
test: setup
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(WORKERS) --dist loadgroup

# The edit-test loop: no notebooks, no drills, nothing slow (under 2 minutes on 2 cores).
test-fast: setup
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n auto -m "not runbooks and not drills and not slow"

lint: setup
	$(VENV)/bin/ruff check lib tests benchmarks notebooks

# JupyterLab on the runbooks (set `interactive = True` for the Explore widgets); it fetches
# nothing from outside the machine (no news, no extension catalogue).
lab: setup
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=$(CURDIR) --LabApp.default_url=/lab/tree/runbooks \
		--LabApp.news_url= --LabApp.extension_manager=readonly

# Ingest benchmark: inputs generated once into benchmarks/.cache/, then a table of targets.
# `make bench QUICK=1` takes about a minute; the full inputs take 8 GB of disk.
bench: setup
	$(PY) benchmarks/run.py $(if $(QUICK),--quick)
	$(PY) benchmarks/hostile.py $(if $(QUICK),--quick)

# Regenerate the drill-made samples under data/ (real torchrun/gloo runs; about 2 minutes).
samples: setup
	$(PY) -m traindoc.drills --regenerate-samples

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
