# Set-up and common tasks. `make demo` and `make test` are the README's first two commands.
VENV ?= .venv
PY := $(VENV)/bin/python
SAMPLE ?= data/timeout/gemma3_seed
OUT ?= runbook-output

.PHONY: setup demo test test-fast lint lab samples bench clean

setup: $(VENV)/.installed

# torch only as the CPU build on this machine's disk (a plain `torch` pulls a CUDA build).
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

demo: setup
	mkdir -p $(OUT)
	$(VENV)/bin/papermill -k python3 --cwd . runbooks/timeout.ipynb $(OUT)/timeout.ipynb \
		-p log_path $(SAMPLE) -p output_dir $(OUT)
	@echo "executed notebook: $(OUT)/timeout.ipynb"; echo "summary: $(OUT)/summary.json"
	@$(PY) -c "import json; s=json.load(open('$(OUT)/summary.json')); print('verdict:', s['verdict'])"

test: setup
	$(PY) -m pytest -q

# Everything but the real torch.distributed drills (about a minute faster).
test-fast: setup
	$(PY) -m pytest -q -m "not drills"

lint: setup
	$(VENV)/bin/ruff check lib tests benchmarks

lab: setup
	$(PY) -m pip install -q -e '.[dev,lab]'
	$(VENV)/bin/jupyter lab runbooks/

# Ingest benchmark: inputs generated once into benchmarks/.cache/, then a table of targets.
# `make bench QUICK=1` takes about a minute; the full inputs take 8 GB of disk.
bench: setup
	$(PY) benchmarks/run.py $(if $(QUICK),--quick)

# Regenerate the drill-made samples under data/ (real torchrun/gloo runs; about 2 minutes).
samples: setup
	$(PY) -m traindoc.drills --regenerate-samples

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
