"""The findings page answers in a minute: opened at 1280 x 800 in headless Chromium (Playwright,
Debian's /usr/bin/chromium, as tests/book/test_live_figures.py), its first screen holds the
findings in words, paper by paper and model by model; its table of claims fits the page's width;
every effect in it is followed by its unit, as its claim's declaration says
(``families.Claim.effect_unit``); every link of it finds its test's row in its chapter; and every
chapter opens with its box (*What this chapter finds*).

The pages are `make smoke`'s (build/smoke/_build/html), which `make test` renders before the slow
tier; without them the test fails naming the command. ``check_findings_page`` and
``check_box`` take any build's folder (``make book``'s ``_build/html`` as well).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a browser, and the smoke build's rendered pages

REPO = Path(__file__).resolve().parents[2]
HTML = REPO / "build" / "smoke" / "_build" / "html"  # SMOKE_DIR's render in the Makefile
WIDTH, HEIGHT = 1280, 800
CHAPTERS = sorted(p.stem for p in (REPO / "notebooks").glob("*.md"))

_MEASURE = """() => {
  const box = [...document.querySelectorAll("div.admonition")]
    .find(a => a.querySelector(".admonition-title").textContent.includes("What the book finds"));
  const paragraphs = box ? [...box.querySelectorAll("p:not(.admonition-title)")] : [];
  const frame = document.querySelector("div.xcomps-findings");
  const table = frame && frame.querySelector("table");
  const cells = table ? [...table.querySelectorAll("tbody tr")].map(
    tr => [...tr.querySelectorAll("td")].map(td => td.innerText)) : [];
  return {
    paragraphs: paragraphs.map(p => ({top: p.getBoundingClientRect().top + scrollY,
                                      bottom: p.getBoundingClientRect().bottom + scrollY,
                                      text: p.innerText})),
    table: table && {scroll: table.scrollWidth, width: frame.clientWidth,
                     right: table.getBoundingClientRect().right},
    page: {scroll: document.documentElement.scrollWidth, width: innerWidth},
    cells: cells,
  };
}"""


def _open(browser, path: Path):
    """``path`` at 1280 x 800, every request but ``file://`` refused."""
    assert path.is_file(), (f"{path} is absent: `make smoke` renders it (`make test` does before "
                            f"the slow tier)")
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://")
               else r.abort())
    page.goto(path.as_uri(), wait_until="load")
    return page


def check_findings_page(browser, html: Path, screenshot: Path | None = None) -> dict:
    """The findings page of the build in ``html``, measured at 1280 x 800 (:data:`_MEASURE`):
    its words' paragraphs (their top and bottom on the page, their text), its table's and the
    page's width and scroll width, its cells' text. ``screenshot``: its first screen is saved
    there."""
    page = _open(browser, html / "executed" / "findings.html")
    try:
        got = page.evaluate(_MEASURE)
        if screenshot:
            page.screenshot(path=str(screenshot))
    finally:
        page.close()
    return got


def check_box(browser, html: Path, chapter: str, screenshot: Path | None = None) -> dict:
    """A chapter's box (*What this chapter finds*) in the build in ``html``: its top on the
    page and its text; ``screenshot``: the box saved there."""
    page = _open(browser, html / "executed" / f"{chapter}.html")
    try:
        box = page.locator("div.admonition", has_text="What this chapter finds").first
        box.scroll_into_view_if_needed(timeout=5000)  # the page is loaded: absent, fail soon
        if screenshot:
            box.screenshot(path=str(screenshot))
        return {"top": box.bounding_box()["y"] + page.evaluate("scrollY"), "text": box.inner_text()}
    finally:
        page.close()


def test_the_first_screen_answers_and_the_table_fits(browser):
    from xcomps_utils.analysis import families

    got = check_findings_page(browser, HTML)
    words = got["paragraphs"]
    assert words, "no findings in words on the findings page"
    # the papers' answers, each paper's heading and every model's sentences, lie within the
    # first screen (the book's own questions follow, below it)
    papers = [q for q, (key, _) in families.QUESTIONS.items() if key]
    starts = [i for i, p in enumerate(words)  # (Sphinx makes the apostrophe typographic)
              if p["text"].replace("’", "'").startswith(tuple(families.QUESTIONS))]
    heads = [words[i]["text"].split(" (")[0] for i in starts]
    assert heads[:len(papers)] == papers, heads
    first_screen = words[:starts[len(papers)]] if len(starts) > len(papers) else words
    assert len(first_screen) > len(papers)  # the models' sentences, not the headings alone
    below = [p["text"][:60] for p in first_screen if p["bottom"] > HEIGHT]
    assert not below, f"the papers' answers run below the first screen: {below}"
    # the table fits the page's text column; the page does not scroll sideways
    assert got["table"]["scroll"] <= got["table"]["width"], got["table"]
    assert got["page"]["scroll"] <= got["page"]["width"], got["page"]
    # every effect is followed by its unit, as the claim's declaration says it
    units = {c.effect_unit for f in families.FAMILIES.values() for c in f.claims.values()}
    effects = [cell for row in got["cells"] for cell in row[1:]
               if re.search(r"[+-−]?\d+\.\d\d", cell)]
    assert effects, got["cells"][:3]
    lacking = [cell for cell in effects if not any(u in cell.replace("’", "'") for u in units)]
    assert not lacking, f"effects without their unit: {lacking[:5]}"


def test_every_link_of_the_table_finds_its_test():
    """Each ``<page>.html#claim-...`` of the findings table is an id on that page (the row of
    its chapter's verdict table, report.claim_anchor)."""
    findings = (HTML / "executed" / "findings.html").read_text(encoding="utf-8")
    links = set(re.findall(r'href="(\w+)\.html#(claim-[\w-]+)"', findings))
    assert len(links) >= 10, links
    missing = [(page, anchor) for page, anchor in sorted(links)
               if f'id="{anchor}"' not in (HTML / "executed" / f"{page}.html").read_text(
                   encoding="utf-8")]
    assert not missing, f"links of the findings table to no test: {missing[:5]}"


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c != "findings"])
def test_every_chapter_opens_with_what_it_finds(browser, chapter):
    box = check_box(browser, HTML, chapter)
    assert box["top"] < HEIGHT, box  # under the title, on the first screen
    assert re.search(r"\d", box["text"]), box  # computed numbers, not a placeholder
