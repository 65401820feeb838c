"""Issue 45: prose that cannot drift, and references by label (fast: sources only, nothing executed).

**Numbers.** A page's static prose (the markdown of ``notebooks/*.md`` and ``book/*.md``: outside
code cells and code blocks, math, inline code and roles, with figure captions and exercise titles
included) carries no result-like number: a decimal, a percentage, a fraction, or a count of facts,
pairs, items, languages, labelings/relabelings, verdicts, tests or claims, in digits or in words.
A number about results is computed where it is shown: printed by a cell, or written by code into
a Markdown cell (``display(Markdown(...))``), so it cannot describe an earlier run. Design facts are
not results and pass by the rules of :func:`design`, each a precise rule with its reason, and by
the short list :data:`ALLOWED`; the declared sizes they accept are read from the package, so they
cannot drift either.

**References.** A figure, a table or an exercise of the book is cited through its MyST label
(``{numref}`fig-...```, ``{ref}```), never as "Figure 3" typed in prose, since the number is the
build's (per chapter: the table of contents is numbered); a figure of a paper is always "the
paper's Figure N".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt
from mdit_py_plugins.amsmath import amsmath_plugin
from mdit_py_plugins.colon_fence import colon_fence_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.myst_blocks import myst_block_plugin
from mdit_py_plugins.myst_role import myst_role_plugin

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted([*(REPO / "notebooks").glob("*.md"), *(REPO / "book").glob("*.md")])
IDS = [str(p.relative_to(REPO)) for p in PAGES]

# --- the static prose of a page -------------------------------------------------------------------

_MD = (MarkdownIt("commonmark").enable("table").use(front_matter_plugin).use(myst_role_plugin)
       .use(myst_block_plugin).use(dollarmath_plugin).use(amsmath_plugin).use(colon_fence_plugin))
#: what stands in the prose for what is left out of it (inline code, math, a role): no number
#: runs across it
GAP = "\u25a1"
_SKIPPED = {"code_inline", "math_inline", "math_inline_double", "myst_role", "html_inline", "image"}


@dataclass(frozen=True)
class Prose:
    """A stretch of static prose: the page, the line it starts on, its text (inline code, math
    and roles replaced by :data:`GAP`)."""

    page: str
    line: int
    text: str


def prose(text: str, page: str = "", offset: int = 0) -> list[Prose]:
    """The static prose of a MyST page: paragraphs, headings, list items and table cells, the
    bodies and titles of directives (exercises, notes), and the captions of figure cells; not
    code cells, code blocks, math, inline code or roles (``{doc}``, ``{numref}``, ``{cite}``)."""
    out = []
    for tok in _MD.parse(text):
        if tok.type == "inline":
            parts = []
            for child in tok.children or ():
                if child.type == "text":
                    parts.append(child.content)
                elif child.type in ("softbreak", "hardbreak"):
                    parts.append("\n")
                elif child.type in _SKIPPED:
                    parts.append(GAP)
            out.append(Prose(page, offset + tok.map[0] + 1, "".join(parts)))
        elif tok.type in ("fence", "colon_fence") and tok.info.startswith("{"):
            directive, _, title = tok.info.partition(" ")
            line = offset + tok.map[0] + 1
            if directive == "{code-cell}":
                header = re.match(r"---\n(.*?)\n---\n", tok.content, flags=re.S)
                meta = yaml.safe_load(header.group(1)) if header else None
                caption = ((meta or {}).get("mystnb") or {}).get("figure", {}).get("caption")
                if caption:
                    out += prose(caption, page, line)
                continue
            if title and not directive.startswith(("{solution", "{glue")):
                out += prose(title, page, line - 1)
            body = re.sub(r"^:[\w-]+:.*$", "", tok.content, flags=re.M)  # directive options
            out += prose(body, page, line)
    return out


def page_prose(path: Path) -> list[Prose]:
    return prose(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))


# --- result-like numbers ---------------------------------------------------------------------------

#: counts in words ("one" and "two" are left out: "one language", "two languages" are nearly
#: always a generic unit, not a count of results)
WORDS = {"three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
         "eleven": 11, "twelve": 12}
_NUM = r"\d[\d,]*(?:\.\d+)?"
_COUNTED = r"(?:facts?|pairs?|items?|languages?|(?:re)?label(?:l)?ings?|verdicts?|tests?|claims?)"
_WORD = "|".join(WORDS)
NUMBER = re.compile(
    rf"(?P<percentage>(?<![\w.\-/]){_NUM}\s?%)"
    rf"|(?P<fraction>(?<![\w.\-/]){_NUM}/{_NUM}(?![\w/]))"
    rf"|(?P<decimal>(?<![\w.\-/])(?:\d*\.\d+(?:e-?\d+)?|\d+e-\d+)(?![\w.]))"
    # a count: digits, then at most four words (not "per", "x": "6,435 fits per language" counts
    # fits), then what is counted; a count in words comes at most one word before it
    rf"|(?P<count>(?<![\w.\-/]){_NUM}(?:\s+(?!(?:per|x|×|a|an|each)\b)[\w'’-]+){{0,4}}?"
    rf"\s+{_COUNTED}\b|(?<![\w.\-/])(?i:\b(?:{_WORD}))(?:\s+[\w'’-]+)?\s+{_COUNTED}\b)")


@dataclass(frozen=True)
class Hit:
    """A result-like number in a page's prose."""

    page: str
    line: int
    kind: str  # percentage, fraction, decimal, count
    number: str
    context: str

    def __str__(self):
        return f"{self.page}:{self.line}: {self.kind} {self.number!r} in '...{self.context}...'"


@cache
def declared_sizes() -> list[tuple[int, str, str, str]]:
    """Counts that are a design's own size, not a result: ``(count, what is counted, the words
    that must be near it, why)`` (the two middle ones regular expressions), read from the package:
    BMLAMA-17's and BMLAMA-53's languages, XCOMPS's (with and without English), the project's
    XCOMPS sample's languages and its items a language, an XCOMPS item's pairs (one per
    negative-sample type), and the fewest units a bootstrap interval is drawn from."""
    from xcomps_utils.analysis import claims
    from xcomps_utils.pairs import bmlama, xcomps

    sample = xcomps.load_xcomps(xcomps.SAMPLE_LANGUAGES[0])
    languages, anywhere = r"languages?", ""
    return [(len(bmlama.languages("bmlama17")), languages, anywhere, "BMLAMA-17's languages"),
            (len(bmlama.languages("bmlama53")), languages, anywhere, "BMLAMA-53's languages"),
            (len(xcomps.XCOMPS_LANGUAGES), languages, anywhere, "XCOMPS's languages"),
            (len(xcomps.XCOMPS_LANGUAGES) + 1, languages, anywhere,
             "XCOMPS's languages and English"),
            (len(xcomps.SAMPLE_LANGUAGES), languages, anywhere, "the XCOMPS sample's languages"),
            (int(sample["item"].nunique()), r"items?", anywhere,
             "the XCOMPS sample's items a language"),
            (len(xcomps.NEGATIVE_TYPES), r"pairs?", r"negative|type",
             "an XCOMPS item's pairs, one per negative-sample type"),
            (claims.MIN_BOOTSTRAP_UNITS, r"items?|pairs?", r"under|fewer|minimum|at least",
             "the fewest units a bootstrap interval is drawn from (claims.MIN_BOOTSTRAP_UNITS)")]


@cache
def design_levels() -> dict[str, set[float]]:
    """The values a design sentence names, read from the code that uses them: the level of the
    tests and its intervals (``claims.ALPHA``: 5%, the 95% interval, 2.5% a side), the power the
    sizes are planned for (``claims.items_needed``), chance for two options (0.5), and the smallest
    effects of interest (``families.SESOI``) and the probe's level."""
    import inspect

    from xcomps_utils.analysis import claims, families, xcomps_paper

    alpha = claims.ALPHA
    power = inspect.signature(claims.items_needed).parameters["power"].default
    percent = {round(100 * x, 6) for x in (alpha, 1 - alpha, alpha / 2, power, 0.5)}
    return {"percentage": percent,
            "decimal": {alpha, alpha / 2, 0.5, xcomps_paper.PROBE_LEVEL, *families.SESOI.values()}}


#: the words that make a number a level, a power, a chance or a smallest effect of interest
_DESIGN_WORDS = re.compile(r"interval|level|power|chance|confiden|percentile|Wilson|bootstrap|"
                           r"significan|false|nominal|\bp\s*[<=]|interest|margin|±|equivalen|"
                           r"smallest|tier step|one-sided|two-sided|against", re.I)
#: a version or a licence: "Python 3.11", "Glottolog 5.1", "WALS v2020.4", "CC BY 4.0"
_VERSION = re.compile(r"(?:Python|Glottolog|MultiBLiMP|BLiMP|WALS|BY|BY-SA|Apache|v|version)[\s-]*$")
#: a unit of time, memory or throughput after a number (or a range of numbers)
_COST = re.compile(r"^(?:\s?[–-]\s?[\d.]+)?\s?(?:ms|s|min|minutes?|h|hours?|seconds?|core-hours|"
                   r"microseconds?|[KMGT]B(?:/s)?|sentences/s|prompts/s)\b")
#: scientific notation followed by nats: a rounding error or a tolerance of the scorer
_PRECISION = re.compile(r"^\s?nats?\b")


def design(hit: Hit, before: str, after: str) -> str | None:
    """Why a number is a design fact, not a result (``None``: it is result-like). The rules:

    * a **level, power or chance**: a percentage of the tests' level (5%, its 95% interval, 2.5% a
      side), the planned power or chance (50%), or a decimal that is the level, chance (0.5) or a
      declared smallest effect of interest, next to the word that says so (``interval``,
      ``level``, ``power``, ``chance``, ``smallest``, ``margin``, ``±``, ...);
    * a **version or a licence** (``Glottolog 5.1``, ``CC BY 4.0``);
    * a **cost**: a time, a size in bytes or a throughput (``4.6 s``, ``0.7 GB``): what computing
      took on a named machine, not a result of the study;
    * a **precision**: a number in scientific notation followed by nats, a rounding error or
      tolerance of the scorer (``xcomps_utils.lm.precision``, ``benchmarks/README.md``);
    * a **declared size**: a count of languages, items or pairs that is a design's own size
      (:func:`declared_sizes`: "BMLAMA-17's 17 languages").
    """
    window = before[-60:] + hit.number + after[:40]
    if hit.kind in ("percentage", "decimal"):
        value = float(re.sub(r"[^\d.e-]", "", hit.number.replace(",", "")).rstrip(".") or "nan")
        if value in design_levels()[hit.kind] and _DESIGN_WORDS.search(window):
            return "a level, a power, a chance or a smallest effect of interest"
    if hit.kind == "decimal":
        if _VERSION.search(before):
            return "a version or a licence"
        if "e-" in hit.number and _PRECISION.match(after):
            return "a rounding error or tolerance of the scorer, in nats"
    if hit.kind in ("decimal", "percentage") and _COST.match(after):
        return "a cost in time, bytes or throughput"
    if hit.kind == "count":
        noun = re.search(rf"{_COUNTED}$", hit.number).group()
        numbers = [int(n.replace(",", "")) if n[0].isdigit() else WORDS[n.lower()]
                   for n in re.findall(rf"\d[\d,]*|(?i:\b(?:{_WORD})\b)", hit.number)]
        sizes = {n for n, what, near, _ in declared_sizes()
                 if re.fullmatch(what, noun) and re.search(near, window, flags=re.I)}
        if numbers and set(numbers) <= sizes:
            return "a dataset's declared size"
    return None


#: Sentences that keep a number on purpose, each with its reason: (page, the number's phrase).
ALLOWED = {
    ("book/sweeps.md", "1,581 sentences/s (8–24 tokens, 41%"):
        "capacity planning: a throughput measured on one H200 (benchmarks/gpu_check.py)",
    ("book/sweeps.md", "429 prompts/s (40–96 tokens, 47%"):
        "capacity planning: a throughput measured on one H200 (benchmarks/gpu_check.py)",
    ("book/sweeps.md", "(1.25 per pair in the sample: 1,050 sentences for 840 pairs"):
        "capacity planning: the sentences per pair of the shipped sample file, a design of the data",
    ("book/sweeps.md", "5,477 items after selection"):
        "capacity planning: the token-level tasks' selected items at full size (the results "
        "chapter prints them), the workload of a sweep",
    ("book/sweeps.md", "43,816 prompt pairs"):
        "capacity planning: the arithmetic of the row (items x 4 wordings x 2 orders)",
    ("book/sweeps.md", "80 XCOMPS sample pairs"):
        "the size sweeps/embedded.yaml declares (10 items x 4 negatives x 2 languages)",
    ("book/sweeps.md", "x 1.25 x"):
        "capacity planning: the sentences per pair of the sample, as above",
    ("book/sweeps.md", "the default 1,000 pairs"):
        "Neuro's default shard size (xcomps_utils.methods.neuro), a design",
}


def _allowed(hit: Hit, prose_text: str) -> bool:
    return any(page == hit.page and phrase in prose_text.replace("\n", " ")
               and hit.number.replace("\n", " ") in phrase for page, phrase in ALLOWED)


def result_numbers(stretches: list[Prose]) -> list[Hit]:
    """The result-like numbers of some prose that no design rule and no :data:`ALLOWED` entry
    lets through: each must be computed by its page, or go."""
    hits = []
    for p in stretches:
        for m in NUMBER.finditer(p.text):
            hit = Hit(p.page, p.line + p.text.count("\n", 0, m.start()), m.lastgroup, m.group(),
                      p.text[max(0, m.start() - 50):m.end() + 30].replace("\n", " "))
            if design(hit, p.text[:m.start()], p.text[m.end():]) or _allowed(hit, p.text):
                continue
            hits.append(hit)
    return hits


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_prose_types_no_result(page):
    hits = result_numbers(page_prose(page))
    assert not hits, ("numbers in static prose that the page does not compute (print them from a "
                      "cell, or delete the sentence):\n" + "\n".join(map(str, hits)))


def test_every_allowed_sentence_is_on_its_page():
    """An entry of :data:`ALLOWED` whose sentence is gone goes too (the list stays short)."""
    for page, phrase in ALLOWED:
        text = " ".join(p.text.replace("\n", " ") for p in page_prose(REPO / page))
        assert phrase in text, (page, phrase)


def _plant(tmp_path: Path, page: str, after: str, sentence: str) -> Path:
    text = (REPO / page).read_text(encoding="utf-8")
    assert after in text, after
    planted = tmp_path / Path(page).name
    planted.write_text(text.replace(after, after + sentence, 1), encoding="utf-8")
    return planted


@pytest.mark.parametrize("sentence, kind", [
    (" Each cell holds 37 pairs.", "count"),
    (" The spread is 0.042 here.", "decimal"),
    (" Gemma gets 71% of them right.", "percentage"),
    (" Its smallest p is 2/19.", "fraction"),
    (" The family holds eleven claims.", "count"),
])
def test_a_planted_stale_number_is_caught(tmp_path, sentence, kind):
    """A result typed into a paragraph of a real page is flagged, whatever its kind; the page
    itself passes (the test above), so the planted sentence is what is caught."""
    page = "notebooks/grammar_across_languages.md"
    anchor = "## Direct accuracy\n\nEach pair is scored by both models"
    planted = _plant(tmp_path, page, anchor, "." + sentence + " Then each pair is scored by both models")
    before = result_numbers(page_prose(REPO / page))
    hits = [h for h in result_numbers(prose(planted.read_text(encoding="utf-8"), page))
            if (h.kind, h.number) not in {(b.kind, b.number) for b in before}]
    assert [h.kind for h in hits] == [kind], hits
    line = (REPO / page).read_text(encoding="utf-8").split(anchor)[0].count("\n") + 3
    assert hits[0].line == line, (hits[0], line)


def test_a_stale_number_in_a_caption_an_exercise_or_a_heading_is_caught():
    text = ("# Knowledge across 9 languages\n\n"
            "```{code-cell} ipython3\n---\nmystnb:\n  figure:\n    caption: Accuracy, 12 facts a "
            "language.\n    name: fig-x\n---\nplt.show()\n```\n\n"
            "```{exercise} By hand\n:label: x-ex-a\n\nWith 200 pairs a task the intervals are "
            "about ±0.07 wide.\n```\n")
    kinds = sorted((h.kind, h.number) for h in result_numbers(prose(text, "x.md")))
    assert kinds == [("count", "12 facts"), ("count", "200 pairs"), ("count", "9 languages"),
                     ("decimal", "0.07")], kinds


def test_what_is_computed_or_designed_passes():
    """Code, math, inline code, roles and Markdown printed by a cell are not prose; design facts
    pass by their rules."""
    text = ("The value `0.0588` and $p = 2/17$ and {glue:text}`acc:.3f` are not prose.\n\n"
            "```{code-cell} ipython3\ndisplay(Markdown(f\"{n} pairs, 0.91\"))\n```\n\n"
            "```bash\n.venv/bin/xcomps-study run direct --task dust --n-pairs 200\n```\n\n"
            "A 95% Wilson interval at the 5% level, 80% power, chance 0.5, the smallest effect "
            "of interest 0.05 per tier step, BMLAMA-17's 17 languages and 53 languages, seven "
            "languages of the sample, Glottolog 5.1, CC BY 4.0, 4.6 s on two cores, 0.7 GB, "
            "within 3e-6 nats per token.\n")
    assert result_numbers(prose(text, "x.md")) == []
    # the same words about a result are caught: 0.8 is no declared level, 12 no declared size
    caught = result_numbers(prose("Accuracy 0.8 in a 95% interval; 12 languages.", "x.md"))
    assert [h.number for h in caught] == ["0.8", "12 languages"]


# --- references by label ---------------------------------------------------------------------------

#: "Figure 3", "Fig. 3", "Table 2", "Exercise 19", "Listing 1" typed in prose
REFERENCE = re.compile(r"\b(?:Figures?|Figs?\.|Tables?|Exercises?|Listings?)\s+\d+(?:[.–-]\d+)?")
#: how a paper's own figure is named: "the paper's Figure 1" (or, for a page of two papers, the
#: paper named: "Prins et al.'s Figure 2")
_PAPERS = re.compile(r"(?:the\s+paper's|the\s+papers'|et\s+al\.'s)\s*$", re.I)


def bare_references(stretches: list[Prose]) -> list[str]:
    """Figure, table and exercise numbers typed in prose that are not "the paper's"."""
    out = []
    for p in stretches:
        for m in REFERENCE.finditer(p.text):
            if not _PAPERS.search(p.text[:m.start()]):
                line = p.line + p.text.count("\n", 0, m.start())
                out.append(f"{p.page}:{line}: {m.group()!r} in "
                           f"'...{p.text[max(0, m.start() - 40):m.end() + 20]}...'")
    return out


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_figures_tables_and_exercises_are_cited_by_label(page):
    found = bare_references(page_prose(page))
    assert not found, ("cite the book's figures, tables and exercises with {numref}`label` (their "
                       "numbers are the build's), a paper's as \"the paper's Figure N\":\n"
                       + "\n".join(found))


def test_a_typed_figure_number_is_caught():
    text = ("As our Figure 1 shows, and Exercise 19 asks; the paper's Figure 4 and "
            "{numref}`fig-bm-acc17` are fine.\n")
    assert [f.split(": ")[1].split(" in")[0] for f in bare_references(prose(text, "x.md"))] == [
        "'Figure 1'", "'Exercise 19'"]


def test_the_book_numbers_figures_and_exercises_per_chapter():
    """Figures and exercises are numbered within their chapter ("Exercise 5.2"): Sphinx prefixes
    an enumerable node's number with its chapter's only under a numbered table of contents
    (chapters numbered, not their sections) with ``numfig_secnum_depth`` 1; without it they run
    across the whole book (Exercise 3, then 19)."""
    toc = yaml.safe_load((REPO / "book" / "_toc.yml").read_text())
    assert all(part.get("numbered") == 1 for part in toc["parts"]), toc["parts"]
    config = yaml.safe_load((REPO / "_config.yml").read_text())["sphinx"]["config"]
    assert config["numfig"] and config.get("numfig_secnum_depth", 1) == 1
