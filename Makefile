# Two commands: `make run` and `make test`. Both create .venv/ when it is missing.
# `make run` installs the runtime only; `make test` (and `make venv`) everything the tests use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
# One stamp per set of declared dependencies, named by a hash of the files that declare them:
# a fresh clone reusing a .venv does not reinstall while they are unchanged (file times say
# nothing after a clone), and any change to them installs again.
DEPS    := $(shell cat pyproject.toml clients/python/pyproject.toml requirements.lock | sha256sum | cut -c1-12)
RUNTIME := $(VENV)/.runtime-$(DEPS)
FULL    := $(VENV)/.full-$(DEPS)
# Every install is constrained to requirements.lock's versions (its pins without the hashes):
# the tests run on exactly what the image installs, not on whatever the registry has today.
LOCKED  := $(VENV)/locked-$(DEPS).txt
# setuptools warns at every editable install about folders named like the package; here they
# are the package, so the 10-line notice is silenced rather than opening the first screen
export PYTHONWARNINGS := ignore:Editable installation

.PHONY: run port-free test lint venv clean docs docs-serve judge judge-stop
# where `make run` serves (127.0.0.1); `qadi demo` reads the same variable from the environment
QADI_PORT ?= 8000

venv: $(FULL)

# The venv, pip, and the constraints file: the first lines of both installs (a recipe, not
# a target of its own, so a stamp that is there makes the install nothing, whatever the
# file times of a fresh clone say).
define prepare
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	sed -n 's/^\([A-Za-z0-9_.-]*==[^ ;\\]*\).*/\1/p' requirements.lock > $(LOCKED)
endef

$(RUNTIME):
	$(prepare)
	$(PY) -m pip install --quiet -c $(LOCKED) -e .
	@touch $@

$(FULL):
	$(prepare)
	$(PY) -m pip install --quiet -c $(LOCKED) -e ".[test,ray,docs,export]" -e "./clients/python[inspect]"
	@touch $@ $(RUNTIME)

# the port is checked first, before minutes of installing: a taken one stops `make run` at once
run: port-free $(RUNTIME)
	$(VENV)/bin/qadi demo

port-free:
	@$(PYTHON) service/cli/ports.py 127.0.0.1 $(QADI_PORT)

# the real local judge (vLLM + SmolLM2-135M on 127.0.0.1; the first start installs it)
judge:
	bash .ci/vllm.sh start

judge-stop:
	bash .ci/vllm.sh stop

lint: $(FULL)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# The suite runs in two processes (pytest-xdist; tests that share one thing of the machine
# run in one, tests/conftest.py SHARED_GROUPS): on CI's two cores it takes about half the
# time of one. TEST_PROCESSES=0 runs it in this one (docs/how-to/run-the-tests.md).
TEST_PROCESSES ?= 2
test: $(FULL) lint
	$(PY) -m pytest -n $(TEST_PROCESSES)

# The documentation site (mkdocs.yml, docs/): built strictly into site/, or served with live
# reload on DOCS_ADDR (not 8000, where `qadi serve` listens). NO_MKDOCS_2_WARNING silences
# Material's end-of-life notice printed on every build.
DOCS_ADDR ?= 127.0.0.1:8008
docs: $(FULL)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: $(FULL)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr $(DOCS_ADDR)

clean:
	rm -rf $(VENV) var site .pytest_cache .ruff_cache
