# ingestlab — every target bootstraps what it needs on first use.
#   make reproduce   run every notebook (smoke scale) on the engines this machine has, print the summary
#   make test        unit, integration and notebook tests
#   make lab         JupyterLab on the project's kernel
#   make figures     run every notebook at paper scale (hours), then copy its figures into figures/
#   make toxiproxy   build Toxiproxy's server into .lab/bin (Go needed; notebook 08 injects latency with it)
#   make bench       harness-fidelity benchmarks (lab vs pgbench / mariadb-slap, one client and many; lab COPY vs psql \copy)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# the install is redone when what it builds from changes (the package's C half is compiled by it)
BUILT_FROM := pyproject.toml setup.py lib/ingestlab/_timing.c
STAMP  := $(VENV)/.installed-$(shell cat $(BUILT_FROM) | cksum | cut -d' ' -f1)
NOW    := $(shell date -u +%Y%m%dT%H%M%SZ)
OUT    ?= runs/$(NOW)

.PHONY: reproduce test lab figures bench clean engines client-headers toxiproxy help
.DEFAULT_GOAL := help

help:
	@sed -n 's/^#   //p' Makefile

# mysqlclient (the C driver MariaDB is measured through) builds from source; where it cannot, the
# lab measures through PyMySQL and says so once per run (run.json, each sample's `driver`).
# uv installs the same pins as pip, in parallel, compiled as pip compiles them (without bytecode every kernel
# compiled pandas again: a run of every notebook took 8 % longer): 13 s, not 38 s (2 cores, 2026-11-29).
UV_VERSION := 0.9.0
# Left out by uv (an override no platform matches): rfc3987-syntax, which JupyterLab's jupyter-events pulls in through
# jsonschema[format-nongpl] to check the "iri" format, which no schema the lab or Jupyter validates uses. jsonschema
# imports it at once (its issue 1428), and that builds some 35 parsers: 1 s of CPU in every process that imports
# nbformat (`pytest --co` 5.9 -> 4.2 s; JupyterLab's server). The runner blocks the import itself (runner.py), as
# it must where pip installs it (pip cannot leave it out); a venv made before keeps it until its pins change.
UV_LEFT_OUT := rfc3987-syntax; sys_platform == "never"
$(STAMP): $(BUILT_FROM) | client-headers
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet uv==$(UV_VERSION) 2>/dev/null || echo "note: uv could not be installed: pip installs the pins (about 40 s, not 10)"
	@printf '%s\n' '$(UV_LEFT_OUT)' > $(VENV)/uv-overrides.txt
	@if [ -x $(BIN)/uv ]; then install="$(BIN)/uv pip install --python $(BIN)/python --compile-bytecode --override $(VENV)/uv-overrides.txt"; else install="$(BIN)/python -m pip install"; fi; \
	  $$install --quiet -e ".[dev,mysql-c]" 2>$(VENV)/mysqlclient-build.log \
	  || { echo "note: mysqlclient could not be built (see $(VENV)/mysqlclient-build.log); MariaDB/MySQL will be measured through PyMySQL"; \
	       $$install --quiet -e ".[dev]"; }
	@$(BIN)/python -c "import ingestlab._timing" 2>/dev/null \
	  || echo "note: the package's C half was not built (no C compiler or Python headers); statements are timed in Python (each sample's timer says so)"
	@if git rev-parse --git-dir >/dev/null 2>&1; then $(BIN)/nbstripout --install --attributes .gitattributes; fi
	@# the notebooks name this kernel (JupyterLab, papermill run from this venv): it is the venv's own
	@$(BIN)/python -m ipykernel install --sys-prefix --name ingestlab --display-name "ingestlab (.venv)" >/dev/null
	@rm -f $(VENV)/.installed-*
	@touch $@

# What mysqlclient and the package's C half (ingestlab._timing, the timed loops) build with: MariaDB's
# client headers, pkg-config, a C compiler and Python's headers, from Debian's packages when this user
# can install them (root + apt). Without them pip installs PyMySQL, and the lab times in Python (saying so).
HAVE_PY_H := $(shell $(PYTHON) -c "import os, sysconfig; print(int(os.path.isfile(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))))" 2>/dev/null)
client-headers:
	@if { pkg-config --exists libmariadb 2>/dev/null || pkg-config --exists mysqlclient 2>/dev/null; } \
	    && command -v cc >/dev/null 2>&1 && [ "$(HAVE_PY_H)" = 1 ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing MariaDB client headers, pkg-config, a C compiler and Python's headers (Debian) ..."; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libmariadb-dev pkg-config build-essential python3-dev >/dev/null) \
	    || echo "warning: could not install them; MariaDB/MySQL may be measured through PyMySQL, and statements timed in Python"; \
	else echo "note: no C compiler, Python headers or MariaDB/MySQL client headers, and no way to install them here; MariaDB/MySQL may be measured through PyMySQL, and statements timed in Python"; fi

# MariaDB and PostgreSQL 15 from Debian's packages, when this user can install them (root + apt);
# the lab starts mariadbd and postgres itself, so no service is enabled (postgresql-15 is installed with
# create_main_cluster = false: no cluster, so nothing for an init system to start). Without them, their
# tests skip and say why.
engines:
	@if command -v mariadbd >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing mariadb-server (Debian) ..."; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server mariadb-client >/dev/null) \
	    || echo "warning: could not install mariadb-server; runs leave MariaDB out (saying so), its tests skip"; \
	else echo "note: mariadbd not found and cannot be installed here (not root): runs leave MariaDB out (saying so), its tests skip"; fi
	@# PostgreSQL 15 (Debian) for notebook 05's versions; the lab runs its binaries itself, never the service
	@if [ -x /usr/lib/postgresql/15/bin/postgres ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing postgresql-15 (Debian; no cluster, no service) ..."; \
	  mkdir -p /etc/postgresql-common/createcluster.d && \
	  echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/ingestlab.conf; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null) \
	    || echo "warning: could not install postgresql-15; its tests skip and notebook 05 runs without it"; \
	else echo "note: PostgreSQL 15 not found and cannot be installed here; notebook 05 runs without it"; fi

# Toxiproxy, the user-space proxy that puts a delay between a cluster's nodes (notebook 08), from its Go module
# (tcp netem is not on every kernel). `go install` again is fast (Go's cache); without Go the target says so and
# succeeds: notebook 08 then skips its delay grid, saying why.
GO ?= $(shell command -v go 2>/dev/null || { test -x /usr/local/go/bin/go && echo /usr/local/go/bin/go; })
TOXIPROXY_VERSION := 2.5.0
toxiproxy:
	@if [ -z "$(GO)" ]; then \
	  echo "note: Go not found: Toxiproxy not built; notebook 08 skips its delay grid (saying so)"; \
	else mkdir -p .lab/bin && GOBIN="$(CURDIR)/.lab/bin" $(GO) install github.com/Shopify/toxiproxy/v2/cmd/server@v$(TOXIPROXY_VERSION) \
	  && mv -f .lab/bin/server .lab/bin/toxiproxy-server \
	  || echo "warning: Toxiproxy could not be built; notebook 08 skips its delay grid (saying so)"; fi

# Engines that cannot be had here are left out, saying so once; a failing notebook does not stop the
# others, and the exit code says that one failed. Figures go to $(OUT)/<notebook>/figures/, never figures/.
# The first look at the lab saves its figures as PNG (each notebook's HTML shows them): the article's SVG and
# PDF come from `make figures` (or `make reproduce REPRODUCE_FORMATS=png,svg,pdf`); PNG alone saves 10 of its
# 190 s (2 cores, quiet, 2026-11-29).
REPRODUCE_FORMATS ?= $(or $(INGESTLAB_FIGURE_FORMATS),png)
reproduce: $(STAMP) engines toxiproxy
	PYTHONDONTWRITEBYTECODE= INGESTLAB_FIGURE_FORMATS=$(REPRODUCE_FORMATS) $(BIN)/ingestlab run all --out $(OUT) --summary

# Two pytest workers a core, at most 8 (each starts its own servers): most long tests wait (on a server,
# a cluster's nodes, a kernel, a sleep). Three a core were faster (6 min 8 s against 6 min 53 s with -n 4,
# 2026-11-29) until notebook 01 ran four engines under nbval: at -n 6 four CI runs of five failed a timed
# test (a kernel's start, a stopped server's bound, chDB's anatomy). Now the suite is bound by the CPU: -n 6 took
# 406 s for the parallel step against 367 s at -n 4 (2026-11-30, quiet; process accounting of the step: 663 s of
# CPU in 375 s on two cores); -n 3 took 381 s against 349 s (one run each, 2026-12-01). `make test TEST_WORKERS=2` for fewer.
# Where the CPU goes (process accounting of a whole `make test`, 634 s, 2026-12-01): python 404 s (the workers' own
# tests 158 s, the controller 16 s, the kernels the rest; notebook 01 on four engines under nbval 31 s), the CLI's
# runners 102 s over 99 processes (48 of them refusals, 0.7 s each: now run in the worker, tests/conftest.py's
# cli_here), PostgreSQL 51 s, MariaDB 46 s. A test class runs on one worker, its servers started once.
# A server's data folder is a copy of its build's template (servers/templates.py; the tests make theirs in a
# folder of the session's): 99 `initdb` had taken 32 s of that CPU, 51 MariaDB installs 13 s (2026-12-01).
# The serial step: the CLI runs that wait on a bound on one worker, niced below the timings on the other
# (tests/conftest.py's SERIAL_RUNS, test_cli_failures' SERIAL_NICE). 2026-12-01: both cores 95 % busy over the
# parallel step (vmstat: 68 % user, 25 % system, 2 % I/O wait); -n 5 took 317 and 324 s against 307–331 s at
# -n 4 and failed a timed test (Toxiproxy's delay) once in two.
# Only the modules that hold serial tests are collected for it: each of its workers collected all 3 000 tests
# first, about 3 s of CPU apiece on the step's way.
SERIAL_MODULES = $(or $(shell grep -rl --include='test_*.py' 'mark\.serial' tests 2>/dev/null),tests)
SERIAL_WORKERS ?= $(shell test "$$(nproc 2>/dev/null || echo 1)" -ge 2 && echo 2 || echo 0)
TEST_WORKERS ?= $(shell n=$$(( $$(nproc 2>/dev/null || echo 1) * 2 )); echo $$(( n > 8 ? 8 : n )))

# Bytecode is written even where $PYTHONDONTWRITEBYTECODE is set (as in some shells and CI images): the suite
# starts some 150 Python processes (workers, kernels, CLI runs), and without it each compiled the lab's modules
# and re-rewrote the test modules' asserts again (4 s per worker).
# A kernel started at the suite's busiest moment answered its first kernel_info after nbval's 60 s in one
# CI run (notebook 03's every cell an ERROR): 180 s, the bound of a kernel that never starts.
test: $(STAMP) engines toxiproxy
	$(BIN)/ruff check lib tests bench
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS) -m "not serial" --nbval-lax --nbval-current-env --nbval-kernel-startup-timeout 180 --durations=50 \
	  tests lib/ingestlab notebooks
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(SERIAL_WORKERS) -m serial $(SERIAL_MODULES)

# JupyterLab rooted at the repository (runs/, figures/ and data/ in its file browser) on a kernel named
# "ingestlab" (this venv); as root it needs --allow-root, which is harmless in a private container.
lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=. $$(test "$$(id -u)" = 0 && echo --allow-root) \
	  --MappingKernelManager.default_kernel_name=ingestlab

# The article's figures/ changes only here (or by `ingestlab figures RUN_DIR [NOTEBOOK...]` from a run
# you made): every notebook at paper scale (00 has no scale), expect several hours on 2 cores (02 about
# 6 min, 03 about 16 min as root; 04, 05 and 06 are the long ones), then the figures of every notebook that
# completed are copied with figures/<notebook>/SOURCE naming the run; a failed one keeps its old figures.
figures: $(STAMP) engines toxiproxy
	@echo "running every notebook at paper scale into $(OUT) (several hours) ..."
	@$(BIN)/ingestlab run all -p SCALE paper --out $(OUT) --summary; status=$$?; \
	  $(BIN)/ingestlab figures $(OUT) && git status --short figures; exit $$status

# Every benchmark runs even when one misses its target; the exit code says whether any did.
bench: $(STAMP)
	@status=0; for b in insert_fidelity group_commit_fidelity copy_fidelity; do \
	  $(BIN)/python bench/$$b.py || status=1; done; exit $$status

# Only orphaned servers' folders are removed: a live run's server and data stay.
clean:
	@if [ -x $(BIN)/ingestlab ]; then $(BIN)/ingestlab clean; fi
	rm -rf runs .pytest_cache
