# ingestlab — every target bootstraps what it needs on first use.
#   make reproduce   run every notebook on the embedded engines, print every fit
#   make test        unit, integration and notebook tests
#   make lab         JupyterLab on the project's kernel
#   make figures     re-export every article figure to figures/
#   make bench       harness-fidelity benchmarks (lab vs pgbench / mariadb-slap, one client and many; lab COPY vs psql \copy)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum < pyproject.toml | cut -d' ' -f1)
OUT    ?= runs/$(shell date -u +%Y%m%dT%H%M%SZ)

.PHONY: reproduce test lab figures bench clean engines help
.DEFAULT_GOAL := help

help:
	@sed -n 's/^#   //p' Makefile

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	@if git rev-parse --git-dir >/dev/null 2>&1; then $(BIN)/nbstripout --install --attributes .gitattributes; fi
	@rm -f $(VENV)/.installed-*
	@touch $@

# MariaDB and PostgreSQL 15 from Debian's packages, when this user can install them (root + apt);
# the lab starts mariadbd and postgres itself, so no service is enabled (Debian's postgresql-15
# creates a cluster and may start it; the lab never uses it). Without them, their tests skip and say why.
engines:
	@if command -v mariadbd >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing mariadb-server (Debian) ..."; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server mariadb-client >/dev/null) \
	    || echo "warning: could not install mariadb-server; MariaDB tests will skip"; \
	else echo "note: mariadbd not found and cannot be installed here; MariaDB tests will skip"; fi
	@# PostgreSQL 15 (Debian) for notebook 05's versions; the lab runs its binaries itself, never the service
	@if [ -x /usr/lib/postgresql/15/bin/postgres ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing postgresql-15 (Debian) ..."; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null) \
	    || echo "warning: could not install postgresql-15; its tests skip and notebook 05 runs without it"; \
	else echo "note: PostgreSQL 15 not found and cannot be installed here; notebook 05 runs without it"; fi

reproduce: $(STAMP)
	$(BIN)/ingestlab run all --out $(OUT) --summary

test: $(STAMP) engines
	$(BIN)/ruff check lib tests bench
	$(BIN)/python -m pytest --nbval-lax tests lib/ingestlab notebooks

# JupyterLab rooted at the repository (runs/, figures/ and data/ in its file browser) on a kernel named
# "ingestlab" (this venv); as root it needs --allow-root, which is harmless in a private container.
lab: $(STAMP)
	$(BIN)/python -m ipykernel install --sys-prefix --name ingestlab --display-name "ingestlab (.venv)" >/dev/null
	$(BIN)/jupyter lab --notebook-dir=. $$(test "$$(id -u)" = 0 && echo --allow-root) \
	  --MappingKernelManager.default_kernel_name=ingestlab

figures: $(STAMP)
	$(BIN)/ingestlab run all --out $(OUT)
	@find figures -name '*.png' | sort

bench: $(STAMP)
	$(BIN)/python bench/insert_fidelity.py
	$(BIN)/python bench/group_commit_fidelity.py
	$(BIN)/python bench/copy_fidelity.py

# Only orphaned servers' folders are removed: a live run's server and data stay.
clean:
	@if [ -x $(BIN)/ingestlab ]; then $(BIN)/ingestlab clean; fi
	rm -rf runs .pytest_cache
