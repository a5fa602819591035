# Herald: the two set-up commands are `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: demo test lint typecheck unit bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(DEVSTAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(STAMP)

demo: $(STAMP)
	$(BIN)/herald demo

lint: $(DEVSTAMP)
	$(BIN)/ruff check core bot tui tests bench migrations
	$(BIN)/lint-imports

typecheck: $(DEVSTAMP)
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/python -m pytest -q

unit: $(DEVSTAMP)
	$(BIN)/python -m pytest -q tests/unit

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .mypy_cache .ruff_cache herald-demo.db*
