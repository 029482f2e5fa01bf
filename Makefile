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
RESTIC := /usr/bin/restic
SSHD := /usr/sbin/sshd

.PHONY: setup run test bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: setup $(RESTIC)
	DATA_DIR=$(DATA_DIR) PORT=$(PORT) $(BIN)/python scripts/run_console.py

test: setup $(CHROMIUM) $(REDIS_SERVER) $(RESTIC) $(SSHD)
	$(BIN)/python -m pytest

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

bench: setup $(REDIS_SERVER)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis
