# Two commands on a fresh machine (see README):
#   make demo   set up, then run the main job on the embedded default
#   make test   set up, fetch the models the tests load, then ruff, mypy --strict and the
#               whole test suite
# Both create or refresh .venv themselves from the hash-checked pins of requirements/lock.txt.

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.chainrag-installed
PIP := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: demo test lint typecheck pytest test-models venv llama llama-rebuild lock bench clean

venv: $(STAMP)

# The local LLM: llama-cpp-python compiles llama.cpp from its sdist (requirements/llama.txt), and
# llama.cpp's own default is GGML_NATIVE=ON, i.e. -march=native. On a CPU that reports AMX (Intel
# Sapphire/Granite Rapids) that compiles ggml's AMX kernels, which die with a general protection
# fault on the first multi-token prompt on virtualised hosts (ggml-org/llama.cpp#20824): the
# server answers its readiness check and then crashes on every question. So the options are
# explicit: native off, AMX never, each x86-64 feature named. llama.cpp's runtime dispatch
# (GGML_BACKEND_DL with GGML_CPU_ALL_VARIANTS) would pick the kernels per CPU, but
# llama-cpp-python 0.3.36 never calls ggml_backend_load_all(), so such a build loads no CPU
# backend at all (abetlen/llama-cpp-python#2069). The avx2 variant runs on every x86-64 CPU with
# AVX2/FMA/F16C (Intel since 2013, AMD since 2015); scripts/llama_build.py refuses an older CPU
# with a message. See docs/local-llm.md for the speeds measured.
# LLAMA_CPU=auto picks the variant for this CPU; `make llama-rebuild LLAMA_CPU=avx2` forces one.
# The wheel is built with pip's cache off into a folder named by the options and the compiler,
# so it is never taken for another build; .venv/llama-build.json records what was installed.
LLAMA_CPU ?= auto
LLAMA_BASE := -DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
	-DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
	-DGGML_AVX_VNNI=OFF
LLAMA_AVX2 := $(LLAMA_BASE) -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF \
	-DGGML_AVX512_BF16=OFF
LLAMA_AVX512 := $(LLAMA_BASE) -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON \
	-DGGML_AVX512_BF16=ON
LLAMA_BUILD = $(BIN)/python scripts/llama_build.py --venv $(VENV) --cpu $(LLAMA_CPU) \
	--variant avx2='$(LLAMA_AVX2)' --variant avx512='$(LLAMA_AVX512)'

llama: venv
	@$(LLAMA_BUILD)

llama-rebuild: venv
	@$(LLAMA_BUILD) --force

$(STAMP): requirements/lock.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "chainrag needs Python >= 3.11, found " + sys.version)'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "== installing the exact pins of requirements/lock.txt, every file checked against its sha256"
	@$(PIP) install --require-hashes --no-deps -r requirements/lock.txt 2>&1 | sed '/is ignored: it is neither/d'
	@$(PIP) install --no-deps --no-build-isolation -e . 2>&1 | sed '/is ignored: it is neither/d'
	@$(BIN)/python -m pip check
	@echo "== llama-cpp-python: compiled for this CPU by the llama target (requirements/llama.txt)"
	@$(BIN)/python -c 'import torch, sys; sys.exit(0 if torch.__version__.startswith("2.13.0") else "wrong torch " + torch.__version__)'
	@$(BIN)/python scripts/check_site_packages.py
	@touch $(STAMP)

# The main job: the local 1.5B model answers the first DEMO_N MuSiQue dev questions with
# ChainRAG (AnsInt and CxtInt from one run) and NaiveRAG, then the report is printed.
# Stopped at any point, `make demo` again continues where it stopped.
DEMO_N ?= 5
demo: venv llama
	$(BIN)/chainrag models fetch --llm qwen2.5-coder-1.5b
	$(BIN)/chainrag run recipes/chainrag/ansint.yaml recipes/baselines/naive.yaml \
		--dataset musique --limit $(DEMO_N) --out-dir runs/demo --no-report
	$(BIN)/chainrag report runs/demo

lint: venv
	$(BIN)/ruff check chainrag tests bench scripts
	$(BIN)/ruff format --check chainrag tests bench scripts

typecheck: venv llama
	$(BIN)/mypy --strict chainrag

# The local models the tests load (tests/conftest.py's TEST_MODELS: tests/test_determinism.py,
# test_llm_integration.py, test_methods.py and test_llama_build.py serve the 0.5B model;
# test_estimate.py's token ratio reads the 1.5B one's tokenizer), fetched and verified as `make
# demo` fetches its own, so that a fresh clone runs every test; under CI (CI=true) a test whose
# model is missing fails rather than skips.
TEST_MODELS := qwen2.5-coder-0.5b qwen2.5-coder-1.5b

test-models: venv
	$(BIN)/chainrag models fetch $(foreach model,$(TEST_MODELS),--llm $(model))

pytest: venv llama test-models
	$(BIN)/python -m pytest

test: lint typecheck pytest

bench: venv llama
	$(BIN)/python -m pytest bench/bench_*.py --benchmark-only -p no:cacheprovider --benchmark-columns=min,median,mean,rounds

lock: venv
	@echo "regenerating requirements/lock.txt from $(VENV)"
	@$(BIN)/python scripts/write_lock.py > requirements/lock.txt.new && mv requirements/lock.txt.new requirements/lock.txt

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
