"""The findings page (notebooks/findings.md) executed by papermill on a verdict folder made here:
what two pages recorded (verdicts.record into the folder a chapter's entry installs from
XCOMPS_VERDICTS, as the Makefile's chapter rule sets it), read back as one table per role,
counted per model, the pages that printed nothing named."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import bmlama_study as B
from xcomps_utils.analysis import families, perplexity_paper, report
from xcomps_utils.pages import verdicts

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _nothing_installed():
    verdicts.install(None)
    yield
    verdicts.install(None)


def _verdict_folder(folder: Path) -> dict:
    """Two pages' verdicts, as their chapters would record them: a confirmatory family of two
    decided tests (no model named) and a test of 5 items that cannot be decided."""
    verdicts.install(folder)
    items = pd.DataFrame({"pair_id": np.arange(60).astype(str),
                          "accuracy": np.r_[np.ones(45), np.zeros(15)]})
    tests = {"token_perplexity_results": families.correct(
        [perplexity_paper.above_chance(items.assign(task="blimp"), "blimp", n_boot=300),
         perplexity_paper.above_chance(items.assign(task="dust", accuracy=1 - items.accuracy),
                                       "dust", n_boot=300)], "two tasks", "confirmatory"),
        "xcomps_results": [perplexity_paper.above_chance(items.head(5).assign(task="crows"),
                                                         "crows", n_boot=300)]}
    for page, t in tests.items():
        verdicts.record(t, page)
    return tests


GLUED = "application/papermill.record/text/markdown"  # myst-nb's glue, not displayed


def outputs_markdown(nb: dict) -> list[str]:
    """The Markdown and HTML every output of an executed notebook shows, glued ones (a
    chapter's box, :mod:`xcomps_utils.pages.finds`) included."""
    return ["".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/markdown", ""))
            + "".join(o.get("data", {}).get(GLUED, ""))
            + "".join(o.get("data", {}).get("text/html", ""))
            for c in nb["cells"] for o in c.get("outputs", [])]


@pytest.mark.slow
def test_findings_page_shows_what_the_pages_printed(tmp_path, monkeypatch, data_dir):
    import jupytext
    import papermill

    from xcomps_utils.pages import chapters

    tests = _verdict_folder(tmp_path / "verdicts")
    monkeypatch.delenv("XCOMPS_VERDICTS", raising=False)  # the page reads its parameter
    src, out = tmp_path / "findings.ipynb", tmp_path / "out.ipynb"
    jupytext.write(jupytext.read(REPO / "notebooks" / "findings.md"), src)
    papermill.execute_notebook(str(src), str(out), parameters={"verdicts": str(tmp_path / "verdicts")},
                               cwd=str(tmp_path), kernel_name="python3", progress_bar=False)
    nb = json.loads(out.read_text())
    texts = outputs_markdown(nb)
    page = "\n".join(texts)
    blimp, dust = tests["token_perplexity_results"]
    crows = tests["xcomps_results"][0]
    assert (blimp.verdict, dust.verdict, crows.verdict) == ("supported", "contradicted",
                                                            "cannot be decided")
    rows, _ = verdicts.read_verdicts(tmp_path / "verdicts")
    sizes = chapters.findings_sizes(rows)[1]
    # the page opens with the findings in words, in its box, glued from its first cell
    (box,) = [o["data"][GLUED] for c in nb["cells"] for o in c.get("outputs", [])
              if o.get("metadata", {}).get("scrapbook", {}).get("name") == "finds"]
    assert box.startswith("::::{admonition} What the book finds\n")
    assert report.findings_words(rows, sizes) in box
    # (a family of the test's own: each claim named by its name, measured in its measure)
    assert "* **(not named)**: *Holds*: above chance (blimp: +" in box
    assert "*Fails*: above chance (dust: the other side holds: " in box
    # then the table, a row per claim and scope, linked to its test
    assert report.findings_table(rows, sizes) in page
    assert f'href="token_perplexity_results.html#{report.claim_anchor(blimp.family, blimp.claim, blimp.scope)}"' in page
    # the headline: 3 tests on 2 pages, counted by verdict; the pages that printed nothing named
    assert ("**3 tests** on 2 pages: 1 supported, 1 contradicted, 0 negligible, 0 equivalent, "
            "0 inconclusive, 1 cannot be decided.") in page
    missing = [p for p in dict.fromkeys(f.chapter for f in families.FAMILIES.values())
               if p not in tests]
    assert "No verdicts from " + ", ".join(f"`{p}`" for p in missing) in page
    # the deciding sizes of the confirmatory tests; the exercises ran
    assert "Of **2 confirmatory tests**: decided: 2;" in page
    counts = next(t for t in texts if "<table" in t and "cannot be decided" in t)
    assert "confirmatory" in counts and "(not named)" in counts and not any(
        o.get("output_type") == "error" for c in nb["cells"] for o in c.get("outputs", []))
    assert "2 verdict files, 3 tests; (not named): 3 tests" in page  # the first exercise


def test_deciding_sizes_say_decided_how_many_more_or_why_never(tmp_path):
    """One row per test: a decided one says so; an inconclusive item claim the items that give
    an 80% chance of deciding it (its items_needed); a claim about languages the languages that
    would, from the design; one that cannot be decided its reason."""
    _verdict_folder(tmp_path / "verdicts")
    items = pd.DataFrame({"pair_id": np.arange(40).astype(str),
                          "accuracy": np.r_[np.ones(21), np.zeros(19)]})
    weak = perplexity_paper.above_chance(items.assign(task="dust"), "dust", n_boot=300)
    verdicts.record([weak], "direct_scoring")
    rows, _ = verdicts.read_verdicts(tmp_path / "verdicts")
    sizes = report.deciding_sizes(rows)
    got = dict(zip(sizes["verdict"] + ":" + sizes["n"].astype(str), sizes["to decide"]))
    assert got["supported:60"] == "decided" and got["contradicted:60"] == "decided"
    assert weak.verdict == "inconclusive" and weak.items_needed and weak.items_needed > 40
    assert got["inconclusive:40"] == (f"about {weak.items_needed:,} items (80% chance of "
                                      f"deciding it either way)")
    assert got["cannot be decided:5"].startswith("not by more items of these: ")
    assert sizes.set_index("verdict")["outcome"].to_dict() == {
        "supported": "decided", "contradicted": "decided", "inconclusive":
        "more data decides it", "cannot be decided": "undecidable by design"}
    # a page whose data hold fewer items than needed: no size of them decides it
    page = rows.loc[rows.verdict == "inconclusive", "page"].iloc[0]
    capped = report.deciding_sizes(rows, available={page: 40})
    line = capped.loc[capped.verdict == "inconclusive", "to decide"].iloc[0]
    assert line.endswith("; the data hold 40: no size of the available data decides it")
    assert capped.loc[capped.verdict == "inconclusive", "outcome"].iloc[0] == \
        "undecidable by design"
    roomy = report.deciding_sizes(rows, available={page: 10 ** 6})
    assert roomy.loc[roomy.verdict == "inconclusive", "to decide"].iloc[0] == got["inconclusive:40"]
    # no SESOI and no equivalence test: an effect is decided, never its absence
    lang = rows[rows.verdict == "inconclusive"].assign(unit="language", n_items=17,
                                                      items_needed=np.nan, sesoi=np.nan,
                                                      p_equivalent=np.nan)
    item = lang.assign(unit="item")
    said = report.deciding_sizes(pd.concat([lang, item]))
    assert said["to decide"].tolist() == [
        "a permutation over languages decides an effect but never its absence; no smallest "
        "effect of interest is declared for this measure",
        "no smallest effect of interest declared: more items decide an effect, never its absence"]
    assert said["outcome"].tolist() == ["needs an equivalence test"] * 2
    # the languages that would decide it either way, keyed by page and claim (or claim alone):
    # more than any benchmark here has (53) is undecidable by design, whatever this test is
    key = (lang["page"].iloc[0], lang["claim"].iloc[0])
    for k, outcome in ((131, "undecidable by design"), (50, "needs an equivalence test")):
        row = report.deciding_sizes(lang, languages_to_decide={key: k}).iloc[0]
        assert row["outcome"] == outcome
        assert (f"about {k} languages measured without error would decide it either way"
                in row["to decide"])
    far = report.deciding_sizes(lang, languages_to_decide={key[1]: 131}).iloc[0]["to decide"]
    assert far.endswith("; no benchmark here has more than 53 languages: no size of the "
                        "available data decides it")
    other = report.deciding_sizes(lang, languages_to_decide={("elsewhere", key[1]): 131})
    assert other.iloc[0]["outcome"] == "needs an equivalence test"     # another page's number
    # a claim about languages with an equivalence test, within reach: more data decides it
    eq = report.deciding_sizes(lang.assign(p_equivalent=0.3), languages_to_decide={key: 50})
    assert eq.iloc[0]["outcome"] == "more data decides it"
    assert eq.iloc[0]["to decide"].endswith("; these languages do, with more items per language "
                                            "(the page's size planning says how many)")


def test_findings_sizes_reads_what_the_xcomps_sample_holds_and_counts_the_outcomes(data_dir):
    """The page's table: an XCOMPS item claim needing more than the sample's 30 items is
    undecidable on the sample; Direct ~ Neuro needs more languages than any benchmark has; a
    BMLAMA resource trend would need an equivalence test; the sentence counts each outcome."""
    from xcomps_utils.pages import chapters

    base = {"model": "m", "role": "confirmatory", "sesoi": np.nan, "ci_low": np.nan,
            "ci_high": np.nan, "reason": "", "p_equivalent": np.nan}
    rows = pd.DataFrame([
        {**base, "page": "xcomps_results", "claim": "direct_tracks_neuro", "verdict":
         "inconclusive", "n_items": 7, "unit": "language", "items_needed": np.nan, "sesoi": 0.3},
        {**base, "page": "bmlama_languages", "claim": "resource_trend", "verdict": "inconclusive",
         "n_items": 53, "unit": "language", "items_needed": np.nan},
        {**base, "page": "xcomps_token_level", "claim": "prior_favours_acceptable", "verdict":
         "inconclusive", "n_items": 30, "unit": "item", "items_needed": 45, "sesoi": 0.1},
        {**base, "page": "xcomps_results", "claim": "english_advantage", "verdict": "supported",
         "n_items": 30, "unit": "item", "items_needed": np.nan},
        {**base, "page": "bmlama_languages", "claim": "morphology_trend", "verdict":
         "inconclusive", "n_items": 45, "unit": "language", "items_needed": np.nan,
         "sesoi": 0.1, "p_equivalent": 0.3}])
    summary, sizes = chapters.findings_sizes(rows)
    assert summary == ("Of **5 confirmatory tests**: decided: 1; more data decides it: 0; needs "
                       "an equivalence test: 1; undecidable by design: 3.")
    assert list(sizes.columns) == ["claim", "model", "verdict", "outcome", "to decide", "n",
                                   "unit", "page", "why"]
    table = report.deciding_sizes_markdown(sizes)
    assert table.count("\n| {doc}`") == 5 and "xcomps-verdicts" in table      # framed: wraps
    assert ("| {doc}`direct tracks neuro </executed/xcomps_results>` | m | inconclusive | 7 "
            "languages | **undecidable by design**: about ") in table
    assert report.deciding_sizes_markdown(sizes.iloc[:0]) == ""
    assert "| 30 items | **decided** |" in table                          # not "decided: decided"
    said = sizes["to decide"].tolist()
    r = B.languages_to_decide(0.3, kind="correlation")
    assert said[0].startswith(f"about {r} languages measured without error")
    k = B.languages_to_decide(0.05, 0.05)
    assert f"about {k} languages measured without error" in said[1] and k <= 53
    assert said[2].endswith("; the data hold 30: no size of the available data decides it")
    # the morphology trend over the Grambank index of BMLAMA-53's 45 languages that have one:
    # spread over it as they are, more languages than any benchmark here has
    from xcomps_utils.analysis import bmlama_scoring
    from xcomps_utils.pairs import bmlama, typology
    index = typology.language_table(bmlama.languages("bmlama53"))["grambank_bound"]
    km, n_index = bmlama_scoring.morphology_to_decide(index)
    assert n_index == 45 and 53 < km < 100
    assert said[4].startswith(f"about {km} languages measured without error") and \
        said[4].endswith("no size of the available data decides it")
