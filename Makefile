# Porto London: `make run` serves the console on demo data, `make test` runs the whole suite.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# One stamp per install set: `make run` installs what serving needs, `make test` adds the test extras.
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check
DATA_DIR ?= $(CURDIR)/var/ledger
PORT ?= 8000
CHROMIUM := /usr/bin/chromium
REDIS_SERVER := /usr/bin/redis-server
RESTIC := /usr/bin/restic
SSHD := /usr/sbin/sshd

# The fast tier: everything but the process-kill, browser and worker suites, on the store that skips fsync,
# with a fifth of each property test's examples (docs/adr/0043).
FAST_TIER := not slow and not slow_kill and not browser and not worker

.PHONY: setup setup-test run test test-fast bench clean

setup: $(RUN_STAMP)

setup-test: $(TEST_STAMP)

$(RUN_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	touch $(RUN_STAMP)

$(TEST_STAMP): $(RUN_STAMP)
	$(PIP) -e '.[test]'
	touch $(TEST_STAMP)

run: setup $(RESTIC)
	DATA_DIR=$(DATA_DIR) PORT=$(PORT) $(BIN)/python scripts/run_console.py

test: setup-test $(CHROMIUM) $(REDIS_SERVER) $(RESTIC) $(SSHD)
	$(BIN)/python -m pytest

test-fast: setup $(REDIS_SERVER)
	PORTO_TEST_TIER=fast $(BIN)/python -m pytest -m "$(FAST_TIER)"

# The browser tests drive Debian's Chromium; it is installed once, never downloaded by Playwright.
$(CHROMIUM):
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium

# The effects tests start their own broker from Debian's redis-server; no Redis service is needed.
$(REDIS_SERVER):
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server

# Backups go to a restic repository; the drill's SFTP repository sits behind a temporary loopback sshd.
$(RESTIC):
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y restic

$(SSHD):
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y openssh-server

bench: setup-test $(REDIS_SERVER)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis
