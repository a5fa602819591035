# Herald: the two set-up commands are `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: demo test lint typecheck unit bench bench-archive reliability console clean docs docs-images docs-gen

$(BIN)/python:
	@echo "Creating the virtual environment $(VENV)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# pip's own progress shows: the first `make demo` installs for a minute or so
$(STAMP): pyproject.toml | $(BIN)/python
	@echo "Installing Herald and its dependencies into $(VENV) (first run only)..."
	$(BIN)/python -m pip install --progress-bar on --disable-pip-version-check -e .
	touch $@

$(DEVSTAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(STAMP)

demo: $(STAMP)
	$(BIN)/herald demo

lint: $(DEVSTAMP)
	$(BIN)/ruff check core bot tui tests bench migrations deploy docs
	$(BIN)/lint-imports

typecheck: $(DEVSTAMP)
	$(BIN)/mypy

# Herald's own modules are compiled first: where PYTHONDONTWRITEBYTECODE is set, every
# `herald` process the tests start would otherwise compile them again (~0.5 s each).
# Three pytest-xdist workers on two cores: each test has its own database file or
# schema and ports, and a test waits on PostgreSQL, a process or a socket often enough
# that a third worker keeps both cores busy (tui + slack: 178 s on two, 158 s on four).
# Work stealing: with xdist's default (load) one worker was left with a queue of console
# tests for the run's last 114 s while the other two had finished; stolen, the three end
# together (a run 496 s -> 457 s).
TEST_WORKERS ?= 3
test: lint typecheck
	$(BIN)/python -m compileall -q -j 0 core bot tui migrations > /dev/null
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=15

# the documentation site (MkDocs, Material) into site/; `$(BIN)/mkdocs serve` to browse it.
# `make test` builds it too (tests/docs), with --strict: a broken link fails.
docs: $(DEVSTAMP)
	$(BIN)/mkdocs build --strict -d site

# the console's screenshots in the docs, taken by Textual of the real console over a
# seeded database at a fixed instant (docs-gen: every generated page and image)
docs-images: $(DEVSTAMP)
	$(BIN)/python -m docs.gen screenshots

docs-gen: $(DEVSTAMP)
	$(BIN)/python -m docs.gen all

unit: $(DEVSTAMP)
	$(BIN)/python -m pytest -q tests/unit

BENCHSTAMP := $(VENV)/.installed-bench

$(BENCHSTAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $@ $(STAMP) $(DEVSTAMP)

bench: $(BENCHSTAMP)
	$(BIN)/python -m bench

# archive, then prune (issue 38; ~15 minutes, not part of `make bench`): claim and list
# timings with a million finished jobs active, archived and absent, on SQLite and
# PostgreSQL; then PostgreSQL's partitioning by month against copy-and-delete
bench-archive: $(BENCHSTAMP)
	$(BIN)/python -m bench.archive --rounds 9
	$(BIN)/python -m bench.archive partition

# the full reliability suite (minutes): 20 SIGKILLs, 50,000 jobs on 4 dispatchers, fuzz,
# a random draw for every time zone, every phrase's preview against its save, and the
# runs `make test` leaves out to stay under ten minutes (marked `full` in tests/: each
# mark says what `make test` keeps instead), in a second pytest
reliability: $(DEVSTAMP)
	HERALD_RELIABILITY=full HERALD_FUZZ_CASES=10000 $(BIN)/python -m pytest -q \
		tests/reliability tests/unit/test_fuzz_inputs.py tests/unit/test_timeexpr_fuzz.py \
		tests/unit/test_timeexpr_budget.py tests/unit/test_timeexpr_properties.py \
		tests/slack/test_grammar_fuzz.py tests/api/test_api_schema.py \
		tests/integration/test_preview_is_the_truth.py tests/tui/test_large_database.py
	HERALD_RELIABILITY=full $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal -m full tests \
		--ignore=tests/reliability --ignore=tests/tui/test_large_database.py \
		--ignore=tests/api/test_api_schema.py

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .mypy_cache .ruff_cache site herald-demo.db* bench/bullmq/node_modules
