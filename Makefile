# Two commands on a fresh machine (Python 3.11 or 3.12, make, git): `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Installs come from the locks in requirements/ (exact versions with hashes, see lock.py there):
# `make run` installs the serve lock, the test and check targets the dev lock. Each first checks
# that its lock still matches pyproject.toml (the standard library only: no dev tools needed).
SERVE_STAMP := $(VENV)/.installed-serve
STAMP := $(VENV)/.installed-dev
SERVE_LOCK := requirements/serve.txt
DEV_LOCK := requirements/dev.txt
LOCK_CHECK := $(PY) requirements/lock.py check
# `make lock` installs this uv into $(VENV)/.lock-tools (not into the project's environment).
UV_VERSION := 0.13.9
UV := $(VENV)/.lock-tools/bin/uv
PYTEST := $(PY) -m pytest -p no:cacheprovider

.PHONY: run test unit integration e2e browser soak bench check format lock

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 12))' || { \
	  echo "Yuxi needs Python 3.11 or 3.12; $(PYTHON) is $$($(PYTHON) -V 2>&1)." \
	       "Try: make PYTHON=python3.12 ..." >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

# Shown with pip's progress: the first install takes a minute or two. The project itself goes
# in without its dependencies (the lock has them) and builds with the lock's setuptools.
$(SERVE_STAMP): pyproject.toml $(SERVE_LOCK) | $(PY)
	@echo "Installing Yuxi and what serving needs into $(VENV) (first time: a minute or two)..."
	@$(LOCK_CHECK)
	$(PY) -m pip install --progress-bar on --require-hashes -r $(SERVE_LOCK)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

$(STAMP): pyproject.toml $(DEV_LOCK) | $(PY)
	@echo "Installing Yuxi with the dev extras (tests, linters) into $(VENV)..."
	@$(LOCK_CHECK)
	$(PY) -m pip install --progress-bar on --require-hashes -r $(DEV_LOCK)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@ $(SERVE_STAMP)

# Makes requirements/serve.txt and dev.txt anew after a change to pyproject.toml's dependencies,
# keeping every pin that still fits; `make lock UPGRADE=1` moves all to the newest allowed.
lock: | $(PY)
	$(PY) -m pip install -q --upgrade --target $(VENV)/.lock-tools 'uv==$(UV_VERSION)'
	$(PY) requirements/lock.py refresh --uv $(UV)$(if $(UPGRADE), --upgrade)

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
	$(LOCK_CHECK)
	$(VENV)/bin/ruff format --check src tests benchmarks requirements
	$(VENV)/bin/ruff check src tests benchmarks requirements
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy requirements/lock.py

format: $(STAMP)
	$(VENV)/bin/ruff format src tests benchmarks requirements
	$(VENV)/bin/ruff check --fix src tests benchmarks requirements
