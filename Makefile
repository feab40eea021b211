# Two commands on a fresh machine (see README):
#   make demo   set up, then run the main job on the embedded default
#   make test   set up, then ruff, mypy --strict and the whole test suite
# Both create or refresh .venv themselves from the hash-checked pins of requirements/lock.txt.

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.chainrag-installed
PIP := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: demo test lint typecheck pytest venv lock bench clean

venv: $(STAMP)

$(STAMP): requirements/lock.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "chainrag needs Python >= 3.11, found " + sys.version)'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "== installing the exact pins of requirements/lock.txt, every file checked against its sha256"
	@$(PIP) install --require-hashes --no-deps -r requirements/lock.txt 2>&1 | sed '/is ignored: it is neither/d'
	@$(PIP) install --no-deps --no-build-isolation -e . 2>&1 | sed '/is ignored: it is neither/d'
	@$(BIN)/python -m pip check
	@$(BIN)/python -c 'import torch, sys; sys.exit(0 if torch.__version__.startswith("2.13.0") else "wrong torch " + torch.__version__)'
	@$(BIN)/python scripts/check_site_packages.py
	@touch $(STAMP)

# The main job: the local 1.5B model answers the first DEMO_N MuSiQue dev questions with
# ChainRAG (AnsInt and CxtInt from one run) and NaiveRAG, then the report is printed.
# Stopped at any point, `make demo` again continues where it stopped.
DEMO_N ?= 5
demo: venv
	$(BIN)/chainrag models fetch --llm qwen2.5-coder-1.5b
	$(BIN)/chainrag run recipes/chainrag/ansint.yaml recipes/baselines/naive.yaml \
		--dataset musique --limit $(DEMO_N) --out runs/demo --no-report
	$(BIN)/chainrag report runs/demo

lint: venv
	$(BIN)/ruff check chainrag tests bench scripts
	$(BIN)/ruff format --check chainrag tests bench scripts

typecheck: venv
	$(BIN)/mypy --strict chainrag

pytest: venv
	$(BIN)/python -m pytest

test: lint typecheck pytest

bench: venv
	$(BIN)/python -m pytest bench/bench_*.py --benchmark-only -p no:cacheprovider --benchmark-columns=min,median,mean,rounds

lock: venv
	@echo "regenerating requirements/lock.txt from $(VENV)"
	@$(BIN)/python scripts/write_lock.py > requirements/lock.txt.new && mv requirements/lock.txt.new requirements/lock.txt

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
