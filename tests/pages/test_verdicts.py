"""The verdicts a chapter records for the findings page (xcomps_utils.pages.verdicts): written
where the chapter's entry installs them, appended, made afresh by a new execution, read back as
the findings page reads them, and printed there as the pages printed them."""

import re

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import claims, families, perplexity_paper, report
from xcomps_utils.pages import verdicts


@pytest.fixture(autouse=True)
def _nothing_installed():
    """Each test starts, and leaves the process, with no verdict folder installed."""
    verdicts.install(None)
    yield
    verdicts.install(None)


def _strong_and_few():
    strong = pd.DataFrame({"task": "t", "pair_id": np.arange(60).astype(str),
                           "accuracy": np.r_[np.ones(55), np.zeros(5)]})
    return (perplexity_paper.above_chance(strong, "t", n_boot=300),
            perplexity_paper.above_chance(strong.head(5), "t", n_boot=300))


def _table(md: str) -> tuple[str, list[list[str]]]:
    """The header line and the cells of each row of a Markdown table (``\\|`` is text)."""
    lines = next(b for b in md.split("\n\n") if b.startswith("| ")).splitlines()
    assert lines[1].startswith("| --- |"), lines[:2]
    return lines[0], [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
                      for line in lines[2:]]


def test_recorded_verdicts_are_written_appended_and_made_afresh_by_a_new_execution(tmp_path):
    folder = tmp_path / "verdicts"
    strong, few = _strong_and_few()
    verdicts.record([strong], "token_perplexity_results", "m")  # none installed: nothing
    assert not folder.exists()
    verdicts.install(folder)
    # None: a chapter's cell that ends with it shows no output
    assert verdicts.record([strong], "token_perplexity_results", "m", main="m") is None
    verdicts.record([few, strong], "token_perplexity_results", "m", main="m")  # appended
    path = folder / "token_perplexity_results.csv"
    written = pd.read_csv(path)
    assert list(written.columns) == verdicts.VERDICT_COLUMNS
    assert list(written.verdict) == ["supported", "cannot be decided", "supported"]
    assert written.effect.tolist() == pytest.approx([strong.effect, few.effect, strong.effect])
    assert written.ci_low[0] == pytest.approx(strong.ci_low)
    assert set(written.page) == {"token_perplexity_results"} and set(written.model) == {"m"}
    assert written.n_items.tolist() == [60, 5, 60]
    rows, missing = verdicts.read_verdicts(folder)
    assert len(rows) == 3 and rows.reason[1] == few.reason
    assert "token_perplexity_results" not in missing and "xcomps_results" in missing
    # the chapter executed again (its entry installs the folder again): its first record
    # replaces the page's file; each test's model is the longest of the page's models its scope
    # or family names, else the page's main model
    verdicts.install(folder)
    kw = dict(claim="c", hypothesis="h", measure="m", effect=0.3, ci_low=0.1, ci_high=0.5,
              null=0.0, direction=1, verdict="supported", n_items=30, unit="item", n_obs=30,
              source="s")
    tests = [claims.ClaimTest(scope="direct", **kw),
             claims.ClaimTest(scope="direct, smollm2-135m-instruct", **kw),
             claims.ClaimTest(scope="direct", family="f (smollm2-135m-instruct)", **kw)]
    verdicts.record(tests, "token_perplexity_results",
                    ["gemma-3-270m", "smollm2-135m-instruct", None], main="gemma-3-270m")
    again = pd.read_csv(path)
    assert again.scope.tolist() == ["direct", "direct, smollm2-135m-instruct", "direct"]
    assert again.model.tolist() == ["gemma-3-270m", "smollm2-135m-instruct",
                                    "smollm2-135m-instruct"]
    # on a page of several models, a test that names none is about no one model
    verdicts.record(tests[:1], "bmlama_languages", ["gemma-3-270m", "smollm2-135m-instruct"])
    assert verdicts.read_verdicts(folder)[0].query("page == 'bmlama_languages'").model.tolist() \
        == [""]
    # a page that printed no claim still says it ran
    verdicts.record([], "xcomps_results")
    rows, missing = verdicts.read_verdicts(folder)
    assert len(rows) == 4 and "xcomps_results" not in missing
    nothing, every = verdicts.read_verdicts(tmp_path / "none")  # no folder: every page missing
    assert nothing.empty and every == families.chapters_with_claims()
    assert every == list(dict.fromkeys(f.chapter for f in families.FAMILIES.values()))


def test_a_bad_page_or_test_is_named_before_anything_is_written(tmp_path):
    verdicts.install(tmp_path)
    strong, _ = _strong_and_few()
    with pytest.raises(ValueError, match=r"the 'page' parameter must be a chapter's name .*"
                                         r"got 'notebooks/xcomps_results.md'"):
        verdicts.record([strong], "notebooks/xcomps_results.md")
    with pytest.raises(ValueError, match="the 'tests' parameter must be a list of ClaimTest; "
                                         "got DataFrame"):
        verdicts.record([report.claims_table([strong])], "xcomps_results")
    assert list(tmp_path.iterdir()) == []


def test_findings_table_and_counts_read_what_the_pages_printed(tmp_path):
    folder = tmp_path / "verdicts"
    verdicts.install(folder)
    strong, few = _strong_and_few()
    confirmed = families.correct([strong, strong], "two", "confirmatory")
    printed = {}
    for page, tests in (("xcomps_results", confirmed), ("token_perplexity_results", [few])):
        printed[page] = _table(report.claims_markdown(tests))[1]
        verdicts.record(tests, page)
    rows, missing = verdicts.read_verdicts(folder)
    assert missing == [p for p in families.chapters_with_claims() if p not in printed]
    assert rows.page.tolist() == ["xcomps_results", "xcomps_results", "token_perplexity_results"]
    # the findings table: a row per claim and scope under its question, a column per model (none
    # named here), each cell's mark and effect linked to the row its page printed
    header, found = _table(report.findings_table(rows))
    assert header == "| claim | (not named) |"
    assert [re.sub(r"<[^>]+>", "", r[0]).strip() for r in found] == [
        "**XCOMPS**", "above chance t", "**Token-level perplexity**", "above chance t"]
    for row, page in ((found[1], "xcomps_results"), (found[3], "token_perplexity_results")):
        anchor = re.search(rf'href="{page}.html#([\w-]+)"', row[1]).group(1)
        assert any(f'id="{anchor}"' in cell for printed_row in printed[page]
                   for cell in printed_row)
    assert re.sub(r"<[^>]+>", "", found[1][1]) == (  # a family of its own: its measure
        f"✓2 of 2 tests; {confirmed[0].effect:+.2f} to {confirmed[1].effect:+.2f} "
        f"{confirmed[0].measure}")
    assert "∅ " in found[3][1]  # 5 items: cannot be decided
    counts = verdicts.verdict_counts(rows)
    assert counts.loc[("confirmatory", "(not named)"), "supported"] == 2
    assert counts.loc[("exploratory", "(not named)"), "cannot be decided"] == 1
    assert counts["total"].sum() == 3 and counts.index[0][0] == "confirmatory"
    (folder / "xcomps_results.csv").write_text("claim,verdict\nx,supported\n")
    with pytest.raises(ValueError, match="xcomps_results.csv: its columns"):
        verdicts.read_verdicts(folder)
    assert report.findings_table(rows.iloc[:0]) == ""


def test_a_test_read_back_from_its_file_is_the_test_recorded(tmp_path):
    """A verdict file holds every saved field: the row read back is the same ClaimTest (the
    findings page prints it from there)."""
    verdicts.install(tmp_path)
    strong, few = _strong_and_few()
    tests = families.correct([strong, few], "two", "exploratory") + [few]
    verdicts.record(tests, "xcomps_results")
    rows, _ = verdicts.read_verdicts(tmp_path)
    for t, (_, row) in zip(tests, rows.iterrows()):
        back = claims.ClaimTest.from_row(row)
        for name in claims.SAVED_FIELDS:
            got, want = getattr(back, name), getattr(t, name)
            if isinstance(want, float) and np.isnan(want):
                assert np.isnan(got), name
            else:
                assert got == (pytest.approx(want) if isinstance(want, float) else want), name
