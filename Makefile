# Porto London: `make run` serves the console on demo data, `make test` runs the whole suite.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DATA_DIR ?= $(CURDIR)/var/ledger
PORT ?= 8000
CHROMIUM := /usr/bin/chromium
REDIS_SERVER := /usr/bin/redis-server

# The fast tier: everything but the process-kill, browser and worker suites, on the store that skips fsync,
# with a fifth of each property test's examples (docs/adr/0043).
FAST_TIER := not slow and not slow_kill and not browser and not worker

.PHONY: setup run test test-fast bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: setup
	DATA_DIR=$(DATA_DIR) PORT=$(PORT) $(BIN)/python scripts/run_console.py

test: setup $(CHROMIUM) $(REDIS_SERVER)
	$(BIN)/python -m pytest

test-fast: setup $(REDIS_SERVER)
	PORTO_TEST_TIER=fast $(BIN)/python -m pytest -m "$(FAST_TIER)"

# The browser tests drive Debian's Chromium; it is installed once, never downloaded by Playwright.
$(CHROMIUM):
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium

# The effects tests start their own broker from Debian's redis-server; no Redis service is needed.
$(REDIS_SERVER):
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server

bench: setup $(REDIS_SERVER)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis
