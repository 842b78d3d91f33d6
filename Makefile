# Two commands for a fresh machine: `make run` and `make test` (see README.md).
# Everything Python lives in .venv; the Rust and Go ports build with their own toolchains
# when those are on PATH.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test setup lint test-python test-rust test-go bench clean

run: setup
	$(BIN)/conformance run

test: setup test-python test-rust test-go

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

PY_SOURCES := reference conformance tests bench adapters/python adapters/micrograd adapters/torch adapters/broken

lint: setup
	$(BIN)/ruff check $(PY_SOURCES)
	$(BIN)/ruff format --check $(PY_SOURCES)
	$(BIN)/mypy

test-python: lint
	$(BIN)/conformance regen --check
	$(BIN)/python -m pytest -n auto -q

test-rust:
	@if [ -d adapters/rust ] && command -v cargo >/dev/null 2>&1; then \
	  cd adapters/rust && cargo fmt --check && cargo clippy --all-targets --quiet -- -D warnings && cargo test --quiet; \
	else echo "skipping Rust: adapters/rust or cargo missing"; fi

test-go:
	@if [ -d adapters/go ] && command -v go >/dev/null 2>&1; then \
	  cd adapters/go && test -z "$$(gofmt -l .)" && go vet ./... && go test ./...; \
	else echo "skipping Go: adapters/go or go missing"; fi

bench: setup
	$(BIN)/python bench/run.py
	$(BIN)/python bench/llm_step.py --repeat 3
	$(BIN)/python bench/fuzz_rate.py
	$(BIN)/python bench/unresponsive.py

clean:
	rm -rf $(VENV)
