# Two commands for a fresh machine: `make run` and `make test` (see README.md).
# Everything Python lives in .venv; the Rust and Go ports build with their own toolchains
# when those are on PATH.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test setup lint test-python test-rust test-go bench bench-html report-screenshot clean engines mutate

run: setup
	$(BIN)/conformance run

test: setup test-python test-rust test-go

setup: $(STAMP)

$(STAMP): pyproject.toml
	@echo "== setting up $(VENV): the kit and its dev tools from PyPI (once; about a minute)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

PY_SOURCES := reference conformance tests bench adapters/python adapters/micrograd adapters/micrograd_rust adapters/autograd adapters/tinygrad adapters/torch adapters/broken tools

# Each suite prints a heading when it starts and its duration when it passes, so a long
# `make test` shows where it is; a failing suite stops the run with its own output.
lint: setup
	@echo "== Python lint: ruff, ruff format, mypy"
	@t=$$(date +%s); $(BIN)/ruff check $(PY_SOURCES) && $(BIN)/ruff format --check $(PY_SOURCES) && $(BIN)/mypy \
	  && echo "== Python lint passed in $$(( $$(date +%s) - t )) s"

test-python: lint
	@echo "== Python: regen --check, then pytest on every core (the slowest tests are listed at the end)"
	@t=$$(date +%s); $(BIN)/conformance regen --check \
	  && $(BIN)/python -m pytest -n auto -q -o console_output_style=count --durations=5 \
	  && echo "== Python passed in $$(( $$(date +%s) - t )) s"

test-rust:
	@if [ -d adapters/rust ] && command -v cargo >/dev/null 2>&1; then \
	  echo "== Rust: cargo fmt --check, clippy, cargo test (the port, then bench/minimal/rust; the first build takes a minute)"; t=$$(date +%s); \
	  cd adapters/rust && cargo fmt --check && cargo clippy --all-targets --quiet -- -D warnings && cargo test --quiet \
	  && cd ../../bench/minimal/rust && cargo fmt --check && cargo clippy --all-targets --quiet -- -D warnings \
	  && echo "== Rust passed in $$(( $$(date +%s) - t )) s"; \
	else echo "== skipping Rust: adapters/rust or cargo missing"; fi

test-go:
	@if [ -d adapters/go ] && command -v go >/dev/null 2>&1; then \
	  echo "== Go: gofmt, go vet, go test (the port, then bench/minimal/go)"; t=$$(date +%s); \
	  cd adapters/go && { test -z "$$(gofmt -l .)" || { echo "gofmt: these files need formatting:"; gofmt -l .; false; }; } && go vet ./... && go test ./... \
	  && cd ../../bench/minimal/go && go vet ./... && go test ./... \
	  && echo "== Go passed in $$(( $$(date +%s) - t )) s"; \
	else echo "== skipping Go: adapters/go or go missing"; fi

bench: setup
	$(BIN)/python bench/run.py
	$(BIN)/python bench/llm_step.py --repeat 3
	$(BIN)/python bench/fuzz_rate.py
	$(BIN)/python bench/unresponsive.py
	$(BIN)/python bench/mutation_score.py
	$(BIN)/python bench/diagnosis_time.py
	$(BIN)/python bench/reproducers.py
	$(BIN)/python bench/bounds_check.py --examples 10000

# Automatic mutation testing (bench/mutate/, README "Mutation score"): cosmic-ray over reference/,
# cargo-mutants over the Rust port's engine files, gremlins over the Go port's autograd package, each
# installed from its registry on first use, every mutant judged by the corpus alone. Not part of
# `make test`: 44 minutes on 2 cores, end to end (README "Mutation score"). Fails when a mutant survives that bench/mutate/equivalent.toml
# does not list.
mutate: setup
	$(BIN)/python bench/mutate/run.py

# The matrix of real engines (docs/engines.md): the optional engines go into a venv of their own,
# every registered adapter runs, and docs/engines.json and docs/engines.md are rewritten. tinygrad
# needs clang (`apt-get install clang`); without it, its row keeps the date of its last run.
# TORCH=1 adds PyTorch from the CPU-only wheel index; the default PyPI wheel pulls about 5 GB of CUDA.
# Where only PyPI is reachable (as on the kit's own machine), TORCH_INDEX=https://pypi.org/simple takes
# that default wheel, CUDA libraries and all, and torch runs on the CPU.
ENGINES_VENV := .venv-engines
ENGINES_STAMP := $(ENGINES_VENV)/.installed
TORCH ?= 0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

engines: $(ENGINES_STAMP)
	@if [ "$(TORCH)" = 1 ] && ! $(ENGINES_VENV)/bin/python -c 'import torch' 2>/dev/null; then \
	  echo "== installing torch from the CPU-only index $(TORCH_INDEX)"; \
	  $(ENGINES_VENV)/bin/python -m pip install --quiet --index-url $(TORCH_INDEX) torch \
	  || { echo "make engines: torch could not be installed from $(TORCH_INDEX); where only PyPI is reachable, TORCH_INDEX=https://pypi.org/simple takes its default wheel (about 5 GB with CUDA)"; exit 2; }; fi
	@command -v clang >/dev/null || echo "== clang is not on PATH: tinygrad is reported unavailable (apt-get install clang)"
	$(ENGINES_VENV)/bin/python tools/engines.py run

$(ENGINES_STAMP): pyproject.toml
	@echo "== setting up $(ENGINES_VENV): the kit and the optional engines from PyPI (once; about a minute)"
	$(PYTHON) -m venv $(ENGINES_VENV)
	$(ENGINES_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(ENGINES_VENV)/bin/python -m pip install --quiet -e '.[engines]'
	touch $(ENGINES_STAMP)

# The HTML report (README.md, "The HTML report"): its size and open time in headless Chromium, and the
# README's screenshot of a real report. Both need Debian's chromium and graphviz (.ci/run installs them as root).
bench-html: setup
	$(BIN)/python bench/html_report.py

report-screenshot: setup
	$(BIN)/python bench/report_screenshot.py

clean:
	rm -rf $(VENV) $(ENGINES_VENV)
