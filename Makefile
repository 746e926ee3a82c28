# Sluice developer tasks. `make run` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
export HF_HUB_OFFLINE := 1

.PHONY: install run test lint typecheck bench build clean build-SluiceLayer

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# torch first, as the CPU build that lies on this disk: a plain `torch` requirement
# would pull a multi-GB CUDA build through sentence-transformers.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet "torch==2.13.0"
	$(BIN)/pip install --quiet -e ".[local,dev]"
	touch $@

install: $(VENV)/.installed

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

bench: install
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
