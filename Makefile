# Porto London: `make run` serves the console on demo data, `make test` runs the whole suite.
SHELL := /bin/bash
# Python's default: each module, and each test module pytest rewrites, is compiled once and cached in
# __pycache__/ (git-ignored). An environment that turns the cache off makes every process compile them again:
# seconds for each pytest worker and each child process the tests start.
unexport PYTHONDONTWRITEBYTECODE
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# One stamp per install set: `make run` installs what serving needs, `make test` adds the test extras. Each set
# installs from its lock (docs/adr/0096), so a stamp is older than its lock once the lock changes.
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
BENCH_STAMP := $(VENV)/.installed-bench
RUN_LOCK := requirements/run.txt
TEST_LOCK := requirements/test.txt
BENCH_LOCK := requirements/bench.txt
# This machine's pip configuration names index directories (file:///opt/pypi-more/simple) that hold pages for a
# few projects only; for every other project pip warns "Location '...' is ignored". The warning is about the
# machine's configuration, not this install: it alone is kept out of what make prints (the command is echoed without
# the filter), pip's exit status is kept.
PIP_IGNORED_LOCATION := ^WARNING: Location '.*' is ignored:
WITHOUT_IGNORED_LOCATIONS = @echo '$(1)'; set -o pipefail; $(1) 2>&1 | { grep -v "$(PIP_IGNORED_LOCATION)" || true; }
# --no-compile: pip would byte-compile every file of every package (a third of a first install's time on 2 cores);
# Python compiles a module the first time it imports it and caches that, so only what runs is ever compiled.
PIP_QUIET := -m pip install --quiet --disable-pip-version-check --no-compile
PIP_INSTALL = $(call WITHOUT_IGNORED_LOCATIONS,$(BIN)/python $(PIP_QUIET) $(1))
# The locked files are kept in a wheelhouse outside the clone, shared by every clone on this host as pip's cache is:
# installing from it asks no index about each of the locks' projects, which was most of a first start's time on a
# busy machine (docs/benchmarks.md, "First start"). When it lacks a file a lock names, that install fails quietly
# and the lock is downloaded into it first (pip download, from pip's cache where it can); every file is checked
# against the lock's hash on the way in. A lock's project published only as source (django-hordak) is built from it
# without an index too, so the wheelhouse also holds the build tools a source build asks for.
BUILD_TOOLS := setuptools wheel
WHEELHOUSE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/porto/wheels
FROM_WHEELHOUSE := --no-index --find-links $(WHEELHOUSE)
PIP_INSTALL_LOCK = @echo 'pip install -r $(1), from the wheelhouse $(WHEELHOUSE) (filled from the index first if it lacks a file)'; \
  $(BIN)/python $(PIP_QUIET) $(FROM_WHEELHOUSE) -r $(1) >/dev/null 2>&1 || { set -o pipefail; \
  { $(BIN)/python -m pip download --quiet --disable-pip-version-check -d $(WHEELHOUSE) -r $(1) \
    && $(BIN)/python -m pip download --quiet --disable-pip-version-check -d $(WHEELHOUSE) $(BUILD_TOOLS) \
    && $(BIN)/python $(PIP_QUIET) $(FROM_WHEELHOUSE) -r $(1); } 2>&1 | { grep -v "$(PIP_IGNORED_LOCATION)" || true; }; }
# `make lock` resolves the locks with pip-tools, kept in a venv of its own so it never enters the project's.
LOCK_VENV := $(VENV)/pip-tools
PIP_TOOLS := pip-tools==7.4.1
LOCK_OPTIONS ?=
PIP_COMPILE = $(call WITHOUT_IGNORED_LOCATIONS,CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe \
  --strip-extras --no-emit-index-url --no-emit-find-links $(LOCK_OPTIONS) $(1))
DATA_DIR ?= $(CURDIR)/var/ledger
PORT ?= 8000
CHROMIUM := /usr/bin/chromium
REDIS_SERVER := /usr/bin/redis-server
RESTIC := /usr/bin/restic
SSHD := /usr/sbin/sshd
NGINX := /usr/sbin/nginx

# The fast tier: everything but the process-kill, browser and worker suites, on the store that skips fsync,
# with a fifth of each property test's examples (docs/adr/0043), on both cores through pytest-xdist (docs/adr/0060),
# with its scratch directories in memory where the machine has a tmpfs, made afresh on each run (docs/adr/0064).
FAST_TIER := not slow and not slow_kill and not browser and not worker
FAST_WORKERS ?= 2
FAST_SCRATCH ?= $(if $(wildcard /dev/shm/.),/dev/shm/porto-test-fast,$(CURDIR)/var/test-fast)

# The peers benchmark's databases on the local PostgreSQL (benchmarks/peer_harness.py names them too).
PSQL := psql -h 127.0.0.1 -U postgres
PEER_DATABASES := porto_bench_hordak porto_bench_eventsourcing

.PHONY: setup setup-test setup-bench lock run test test-fast screenshots bench bench-databases clean

setup: $(RUN_STAMP)

setup-test: $(TEST_STAMP)

setup-bench: $(BENCH_STAMP)

# The locked versions first, then the project itself without resolving anything again.
$(RUN_STAMP): $(RUN_LOCK) pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(call PIP_INSTALL_LOCK,$(RUN_LOCK))
	$(call PIP_INSTALL,--no-deps -e .)
	touch $(RUN_STAMP)

$(TEST_STAMP): $(TEST_LOCK) $(RUN_STAMP)
	$(call PIP_INSTALL_LOCK,$(TEST_LOCK))
	touch $(TEST_STAMP)

$(BENCH_STAMP): $(BENCH_LOCK) $(TEST_STAMP)
	$(call PIP_INSTALL_LOCK,$(BENCH_LOCK))
	touch $(BENCH_STAMP)

# The locks, resolved from pyproject.toml for this Python (3.11) on Linux, with every file's hash. Each lock is
# constrained by the one below it, so adding the test or bench set never moves a version the run set installed.
# Pins pyproject.toml still allows are kept; `make lock LOCK_OPTIONS=--upgrade` (or --upgrade-package NAME)
# moves them.
lock: $(LOCK_VENV)/bin/pip-compile
	$(call PIP_COMPILE,-o $(RUN_LOCK) pyproject.toml)
	$(call PIP_COMPILE,--extra test -c $(RUN_LOCK) -o $(TEST_LOCK) pyproject.toml)
	$(call PIP_COMPILE,--extra test --extra bench -c $(TEST_LOCK) -o $(BENCH_LOCK) pyproject.toml)

$(LOCK_VENV)/bin/pip-compile:
	$(PYTHON) -m venv $(LOCK_VENV)
	$(call WITHOUT_IGNORED_LOCATIONS,$(LOCK_VENV)/bin/python $(PIP_QUIET) $(PIP_TOOLS))

run: setup $(RESTIC)
	DATA_DIR=$(DATA_DIR) PORT=$(PORT) $(BIN)/python scripts/run_console.py

# The suite includes the peers benchmark's own test, so it needs the bench extra too.
test: setup-bench $(CHROMIUM) $(REDIS_SERVER) $(RESTIC) $(SSHD) $(NGINX)
	$(BIN)/python -m pytest

# The fast tier installs the test extra (pytest-xdist with it) and the tools its backup tests call, as `make test` does.
test-fast: setup-test $(REDIS_SERVER) $(RESTIC) $(SSHD)
	rm -rf $(FAST_SCRATCH) && mkdir -p $(FAST_SCRATCH)
	TMPDIR=$(FAST_SCRATCH) PORTO_TEST_TIER=fast $(BIN)/python -m pytest -n $(FAST_WORKERS) --dist loadfile \
	  --basetemp=$(FAST_SCRATCH)/pytest -o tmp_path_retention_policy=failed -m "$(FAST_TIER)"

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

# The proxy test runs the shipped deploy/nginx/porto-console.conf under Debian's nginx (a slow test: not in test-fast).
$(NGINX):
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y nginx

# The README's screenshots, taken by the browser tests that walk the screens they show.
screenshots: setup-test $(CHROMIUM) $(REDIS_SERVER)
	PORTO_SCREENSHOTS=$(CURDIR)/docs/screenshots $(BIN)/python -m pytest -q -m browser \
	  tests/console/test_browser.py tests/console/test_readme_walk.py tests/console/test_verify_page.py \
	  tests/console/test_accounting_browser.py

bench: setup-bench $(REDIS_SERVER) bench-databases
	$(BIN)/python -m benchmarks

# The local server started as CI starts it, then each peer's database created unless it is there.
bench-databases:
	pg_isready -h 127.0.0.1 -p 5432 -q || pg_ctlcluster --skip-systemctl-redirect "$$(ls /etc/postgresql | head -n 1)" main start
	for _ in $$(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
	for database in $(PEER_DATABASES); do \
	  $(PSQL) -tAc "SELECT 1 FROM pg_database WHERE datname = '$$database'" | grep -q 1 \
	    || $(PSQL) -c "CREATE DATABASE $$database"; \
	done

clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis
