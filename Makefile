# Two commands on a fresh machine: `make demo` runs the main job, `make test` runs the tests.
# Each creates .venv (Python 3.10-3.12) with everything it needs from PyPI.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck unit integration bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: $(BIN)/.installed
	$(BIN)/zskip demo

test: $(BIN)/.installed lint typecheck
	$(BIN)/pytest

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(BIN)/.installed
	$(BIN)/mypy

unit: $(BIN)/.installed
	$(BIN)/pytest -m "not integration and not cluster"

integration: $(BIN)/.installed
	$(BIN)/pytest -m "integration or cluster"

bench: $(BIN)/.installed
	$(BIN)/python bench/curves.py
	$(BIN)/python bench/optimize.py --scale-factor 1
	$(BIN)/python bench/indexes.py --scale-factor 1
	$(BIN)/python bench/planning.py --scale-factor 1

clean:
	rm -rf $(VENV) warehouse .pytest_cache .mypy_cache .ruff_cache
