# Two commands on a fresh machine (Python 3.11 or 3.12, make, git): `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# `make run` installs what serving needs; the test and check targets add the dev extras.
SERVE_STAMP := $(VENV)/.installed-serve
STAMP := $(VENV)/.installed-dev
PYTEST := $(PY) -m pytest -p no:cacheprovider

.PHONY: run test unit integration e2e browser soak bench check format

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 12))' || { \
	  echo "Yuxi needs Python 3.11 or 3.12; $(PYTHON) is $$($(PYTHON) -V 2>&1)." \
	       "Try: make PYTHON=python3.12 ..." >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

# Shown with pip's progress: the first install takes a minute or two.
$(SERVE_STAMP): pyproject.toml | $(PY)
	@echo "Installing Yuxi and what serving needs into $(VENV) (first time: a minute or two)..."
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install --progress-bar on -e .
	touch $@

$(STAMP): pyproject.toml | $(PY)
	@echo "Installing Yuxi with the dev extras (tests, linters) into $(VENV)..."
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install --progress-bar on -e '.[dev]'
	touch $@ $(SERVE_STAMP)

run: $(SERVE_STAMP)
	$(VENV)/bin/yuxi run

# Every tier. The browser tier skips with a message when no chromium is on PATH, except in CI
# (CI=true), where .ci/run installs Debian's chromium and a missing browser fails the run.
test: $(STAMP)
	$(PYTEST) tests/unit -q
	$(PYTEST) tests/integration -q
	$(PYTEST) tests/e2e -q
	$(PYTEST) tests/browser -q -rs
	$(PYTEST) tests/reliability -q

# Full reliability suite (hundreds of kills, thousands of probes).
soak: $(STAMP)
	YUXI_SOAK=1 $(PYTEST) tests/reliability -q

# Benchmarks: report.json, report.md and a PNG in bench-results/. ARGS=--quick for a smoke run.
bench: $(STAMP)
	$(PY) -m benchmarks $(ARGS)

e2e: $(STAMP)
	$(PYTEST) tests/e2e -q

browser: $(STAMP)
	$(PYTEST) tests/browser -q -rs

unit: $(STAMP)
	$(PYTEST) tests/unit -q

integration: $(STAMP)
	$(PYTEST) tests/integration -q

check: $(STAMP)
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format src tests benchmarks
	$(VENV)/bin/ruff check --fix src tests benchmarks
