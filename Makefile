# Bindery — `make run` and `make test` work on a fresh machine with nothing else to do first.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml requirements.lock | sha1sum | cut -c1-10)
CONFIG ?= sample/bindery.yaml

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export DO_NOT_TRACK := 1
export UNSTRUCTURED_DISABLE_NOTICE := 1
export TOKENIZERS_PARALLELISM := false
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: setup system-deps run test test-fast check ui serve bench bench-peers bench-scale devsets naive parse-report reliability clean help

help:
	@echo "make run | test | test-fast | check | ui | serve | bench CORPUS=dir QUERIES=file | bench-peers | bench-scale | devsets | naive [SETS=...] | parse-report DIR=dir | reliability | clean"

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# CPU torch first: anything that pulls torch later must find it satisfied (no CUDA download).
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -c requirements.lock -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

# OCR for scanned PDF pages (Debian's tesseract). Without it scanned pages are dead-lettered
# as needs-OCR, never indexed empty; the OCR tests then skip with a visible reason.
system-deps:
	@command -v tesseract >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (apt-get install -y -qq tesseract-ocr tesseract-ocr-eng >/dev/null 2>&1 || \
	     (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq tesseract-ocr tesseract-ocr-eng >/dev/null 2>&1)) \
	    || echo "warning: could not install tesseract-ocr; OCR disabled"; \
	  else echo "warning: tesseract-ocr not installed (apt-get install tesseract-ocr tesseract-ocr-eng)"; fi; }

# Headless Chromium for the web console's browser test (tests/test_console.py, via Playwright
# with executable_path); without it that test skips with the reason (CI requires it).
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (apt-get install -y -qq chromium >/dev/null 2>&1 || \
	     (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1)) \
	    || echo "warning: could not install chromium; the console browser test will skip"; \
	  else echo "warning: chromium not installed (apt-get install chromium)"; fi; }

# Bytecode: with PYTHONDONTWRITEBYTECODE (exported above, and set in many environments) imports
# never write it, so every `bindery` command would compile the packages' ~230 modules again
# (about 0.3 s a command: a fifth of a `bindery plan` on 300 e-mails). Compiled once here instead;
# a module edited since is compiled in memory as before, never run stale.
setup: $(STAMP) system-deps
	@$(BIN)/python -m compileall -q -j 0 orchestration assets connectors quality query_service evals >/dev/null

run: setup
	$(BIN)/bindery --config $(CONFIG) sync
	$(BIN)/bindery --config $(CONFIG) eval
	$(BIN)/bindery --config $(CONFIG) query "What is the battery life of the XR-4471?" -k 3
	@echo "--- second sync (nothing changed, so nothing is recomputed):"
	$(BIN)/bindery --config $(CONFIG) sync

# The full suite CI runs, spread over the cores (pytest-xdist; one file per worker keeps module
# fixtures such as a built Bindery instance shared). Tests are isolated: tmp_path, a private
# PostgreSQL schema per test, one moto server per worker.
test: setup
	$(BIN)/pytest -q -n auto --dist loadfile

# The edit-test loop: everything but the `slow` tests (embedding model, whole Dagster jobs,
# subprocesses); parsing, chunking, store, fusion, metrics, asset checks. About 3 minutes on 2 cores.
test-fast: setup
	$(BIN)/pytest -q -m "not slow" -n 2 --dist loadfile

# Long runs: SIGKILL trials, schemathesis fuzzing, the lifecycle state machine, ACL probes; one table.
reliability: setup
	$(BIN)/python -m tests.reliability

# ruff (with C901, max-complexity 20), strict mypy over the packages, tests/ and benchmarks/ (files and
# settings in pyproject.toml), and no function over 80 lines without a `# length:` reason.
check: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python tools/function_length.py --max 80

ui: setup
	$(BIN)/bindery --config $(CONFIG) ui

serve: setup
	$(BIN)/bindery --config $(CONFIG) serve

CORPUS ?=
QUERIES ?=
bench: setup
	@test -n "$(CORPUS)" || { echo "usage: make bench CORPUS=dir QUERIES=file.jsonl"; exit 2; }
	$(BIN)/python -m benchmarks.ingest --corpus $(CORPUS) $(if $(QUERIES),--queries $(QUERIES))

# Bindery against LlamaIndex (same corpus, same model), in one run. LlamaIndex lives in its own
# virtualenv so it can never disturb the product's pins; CPU torch goes in first (no CUDA build).
PEERS := .venv-peers
PEERS_STAMP := $(PEERS)/.installed-$(shell cat benchmarks/peers/requirements.txt | sha1sum | cut -c1-10)
PEERS_CORPUS ?= $(HOME)/.cache/bench-corpora/redis_commands
PEERS_QUERIES ?= benchmarks/evalsets/redis_commands.jsonl
PEERS_REPEATS ?= 3
$(PEERS_STAMP): benchmarks/peers/requirements.txt
	test -x $(PEERS)/bin/python || $(PY) -m venv $(PEERS)
	$(PEERS)/bin/pip install -q torch==2.13.0
	$(PEERS)/bin/pip install -q -r benchmarks/peers/requirements.txt
	rm -f $(PEERS)/.installed-*
	touch $@

bench-peers: setup $(PEERS_STAMP)
	$(BIN)/python -m benchmarks.bench_peers --peer-python $(PEERS)/bin/python \
	  --corpus $(PEERS_CORPUS) --queries $(PEERS_QUERIES) --repeats $(PEERS_REPEATS)

# Embedded vector engines at two synthetic sizes, projected to 1M chunks (see benchmarks/scale.py).
SCALE_SIZES ?= 50000,200000
SCALE_SIZES_LOCAL ?= 10000,20000
SCALE_ENGINES ?= qdrant-edge,qdrant-local
bench-scale: setup
	$(BIN)/python -m benchmarks.scale --sizes $(SCALE_SIZES) --sizes-local $(SCALE_SIZES_LOCAL) --engines $(SCALE_ENGINES)

# Real dev corpora for benchmarks/evalsets (Debian packages; see benchmarks/evalsets/README.md).
CORPORA ?= $(HOME)/.cache/bench-corpora
SETS ?= python_faq redis_commands debian_faq flex_manual git_commands git_asciidoc pdf_docs mail_ham man_pages docbook_faq info_manuals glib_api sphinx_rst mkdocs_md mail_lkml text_docs perl_pod pg_sql
devsets:
	benchmarks/corpora/fetch.sh $(CORPORA) $(SETS)

naive: setup
	for s in $(SETS); do $(BIN)/python -m benchmarks.naive --corpus $(CORPORA)/$$s \
	  --queries benchmarks/evalsets/$$s.jsonl || exit 1; done

DIR ?= sample/corpus
parse-report: setup
	$(BIN)/python -m assets.parsing.report $(DIR)

clean:
	rm -rf .bindery bench-out $(PEERS)
