# Two commands on a fresh machine (python3, make, git): `make run` and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev
PYTEST := $(PY) -m pytest -p no:cacheprovider

.PHONY: run test unit integration e2e browser soak bench check format

$(PY):
	python3 -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

run: $(STAMP)
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
