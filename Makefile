# Two commands: `make run` and `make test`. Both create .venv/ when it is missing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test lint venv clean docs docs-serve judge judge-stop

venv: $(STAMP)

$(STAMP): pyproject.toml clients/python/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,ray,docs]" -e "./clients/python[inspect]"
	@touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/qadi demo

# the real local judge (vLLM + SmolLM2-135M on 127.0.0.1; the first start installs it)
judge:
	bash .ci/vllm.sh start

judge-stop:
	bash .ci/vllm.sh stop

lint: $(STAMP)
	$(VENV)/bin/ruff check .

test: $(STAMP) lint
	$(PY) -m pytest

# The documentation site (mkdocs.yml, docs/): built strictly into site/, or served with live
# reload on DOCS_ADDR (not 8000, where `qadi serve` listens). NO_MKDOCS_2_WARNING silences
# Material's end-of-life notice printed on every build.
DOCS_ADDR ?= 127.0.0.1:8008
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr $(DOCS_ADDR)

clean:
	rm -rf $(VENV) var site .pytest_cache .ruff_cache
