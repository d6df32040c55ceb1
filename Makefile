# ingestlab — every target bootstraps what it needs on first use.
#   make reproduce   run every notebook on the embedded engines, print every fit
#   make test        unit, integration and notebook tests
#   make lab         JupyterLab on the project's kernel
#   make figures     re-export every article figure to figures/
#   make bench       harness-fidelity benchmarks (lab vs pgbench / mariadb-slap)

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

# MariaDB from Debian's packages, when this user can install them (root + apt); the lab
# starts mariadbd itself, so no service is enabled. Without it, MariaDB tests skip and say why.
engines:
	@if command -v mariadbd >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing mariadb-server (Debian) ..."; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server mariadb-client >/dev/null) \
	    || echo "warning: could not install mariadb-server; MariaDB tests will skip"; \
	else echo "note: mariadbd not found and cannot be installed here; MariaDB tests will skip"; fi

reproduce: $(STAMP)
	$(BIN)/ingestlab run all --out $(OUT) --summary

test: $(STAMP) engines
	$(BIN)/ruff check lib tests bench
	$(BIN)/python -m pytest --nbval-lax tests lib/ingestlab notebooks

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

figures: $(STAMP)
	$(BIN)/ingestlab run all --out $(OUT)
	@find figures -name '*.png' | sort

bench: $(STAMP)
	$(BIN)/python bench/insert_fidelity.py

# Only orphaned servers' folders are removed: a live run's server and data stay.
clean:
	@if [ -x $(BIN)/ingestlab ]; then $(BIN)/ingestlab clean; fi
	rm -rf runs .pytest_cache
