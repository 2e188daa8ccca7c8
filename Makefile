# Two commands: `make run` and `make test`. Both create .venv/ when it is missing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test lint venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml clients/python/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,ray]" -e "./clients/python[inspect]"
	@touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/qadi demo

lint: $(STAMP)
	$(VENV)/bin/ruff check .

test: $(STAMP) lint
	$(PY) -m pytest

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
