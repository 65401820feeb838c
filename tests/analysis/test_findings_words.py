"""Every claim is declared with a short name, the unit of its effect in words and what its
outcomes mean for it (families.Claim); the findings in words and the compact table
(report.findings_words, report.findings_table) say each test from that declaration, and link it
to its row in its chapter (report.claim_anchor)."""

import re

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import claims, families, perplexity_paper, report
from xcomps_utils.pages import verdicts


@pytest.fixture(autouse=True)
def _nothing_installed():
    verdicts.install(None)
    yield
    verdicts.install(None)


def test_every_declared_claim_has_a_short_name_a_unit_and_a_question():
    for fam in families.FAMILIES.values():
        assert fam.per in ("", "task", "language"), fam.name
        assert families.question_of(fam.chapter), f"{fam.chapter} is in no QUESTIONS entry"
        for name, claim in fam.claims.items():
            assert isinstance(claim, families.Claim), (fam.name, name)
            assert claim.short.strip() and claim.effect_unit.strip(), (fam.name, name)
            assert set(claim.means) <= set(claims.VERDICTS), (fam.name, name)
    chapters = [c for _, (_, cs) in families.QUESTIONS.items() for c in cs]
    assert sorted(chapters) == sorted(set(chapters)), "a chapter in two questions"
    assert set(families.chapters_with_claims()) <= set(chapters)
    assert set(families.OUTCOMES) == set(claims.VERDICTS)
    assert {r for r, _ in families.OUTCOMES.values()} == set(families.READINGS)


@pytest.mark.parametrize("kw, match", [
    (dict(short="", effect_unit="accuracy"), "'short' parameter"),
    (dict(short="a claim", effect_unit="  "), "'effect_unit' parameter"),
    (dict(short="a claim", effect_unit="r", means={"holds": "x"}), "'means' parameter"),
])
def test_a_claim_declared_without_its_words_fails(kw, match):
    with pytest.raises(ValueError, match=match):
        families.Claim(0.1, **kw)
    with pytest.raises(TypeError):
        families.Claim(0.1, "a claim")  # no unit: not a declaration


def test_an_outcome_reads_as_declared_where_its_label_says_less():
    whole = families.declared_claim("token-level perplexity, primary claims",
                                    "pivotal_rarely_whole")
    reading, words = whole.reading("equivalent")
    assert reading == "fails" and words.startswith("the paper's reading fails")
    assert whole.reading("supported") == ("holds", "holds")
    plain = families.declared_claim("XCOMPS, Meta and second model (x)", "resource_trend")
    assert plain.reading("equivalent") == families.OUTCOMES["equivalent"]
    with pytest.raises(ValueError, match="the 'verdict' parameter"):
        plain.reading("confirmed")


def _row(**kw) -> dict:
    base = dict(claim="c", hypothesis="h", measure="m", effect=0.3, ci_low=0.1, ci_high=0.5,
                null=0.0, direction=1, verdict="supported", n_items=30, unit="item", n_obs=30,
                source="s")
    return claims.ClaimTest(**{**base, **kw})


def _rows(folder, tests_by_page):
    verdicts.install(folder)
    for page, (tests, models, main) in tests_by_page.items():
        verdicts.record(tests, page, models, main=main)
    return verdicts.read_verdicts(folder)[0]


@pytest.fixture
def rows(tmp_path):
    """Three pages' tests, as their chapters record them: an English advantage supported with
    one model and not decided with the other, the pivotal tokens shown to explain the
    difference whole on two tasks (the paper's reading fails), a trend over seven languages no
    outcome can decide."""
    fam = "XCOMPS, primary claims (Direct)"
    second = "XCOMPS, Meta and second model"
    whole = "token-level perplexity, primary claims"
    lang = dict(unit="language", n_items=7)
    return _rows(tmp_path, {
        "xcomps_results": ([
            _row(claim="english_advantage", family=fam, scope="direct", effect=0.32, **lang),
            _row(claim="english_advantage", family=second, scope="direct, smollm2",
                 effect=0.04, verdict="inconclusive", **lang),
            _row(claim="resource_trend", family=fam, scope="direct", effect=0.23,
                 verdict="cannot be decided",
                 reason="the smallest p any outcome could give is 0.333, above 0.025", **lang)],
            ["gemma", "smollm2"], "gemma"),
        "token_perplexity_results": ([
            _row(claim="pivotal_rarely_whole", family=whole, scope=task, effect=e,
                 verdict="equivalent", margin=0.1, sesoi=0.1, ci_low=-0.01, ci_high=0.01)
            for task, e in (("blimp_anaphor", 0.0003), ("dust", -0.0001))], ["smollm2"],
            "smollm2")})


def test_the_findings_in_words_say_what_holds_fails_and_cannot_be_decided(rows):
    words = report.findings_words(rows)
    blocks = words.split("\n\n")
    assert blocks[0] == "**XCOMPS** {cite:p}`he2025xcomps`, tested in {doc}`xcomps_results`:"
    gemma, smol = blocks[1].splitlines()
    assert gemma == ("* **gemma**: *Holds*: English advantage (direct: +0.32 accuracy, English "
                     "minus the others' mean). *No available data decides*: accuracy rises with "
                     "resources: with 7 languages no outcome of the test reaches the level.")
    # not decided, and what would decide it (a test over languages: only an effect, ever)
    assert smol == ("* **smollm2**: *Not decided at this size*: English advantage: a permutation "
                    "over languages decides an effect, never its absence.")
    assert blocks[2].startswith("**Token-level perplexity** {cite:p}`prins2026perplexed`")
    # the label is "equivalent"; what it means for the paper's claim is said, per task
    assert blocks[3] == ("* **smollm2**: *Fails*: the other tokens carry a part (2 of 2 tasks: "
                         "the paper's reading fails: the pivotal tokens explain "
                         "the difference whole).")
    one = report.findings_words(rows[rows.page == "xcomps_results"], questions=False)
    assert one == "\n".join([gemma, smol])
    assert report.findings_words(rows.iloc[:0]) == ""


def _flipped(rows, i, verdict, effect):
    out = rows.copy()
    out.loc[i, ["verdict", "effect"]] = [verdict, effect]
    return out


def test_a_flipped_verdict_changes_the_words(rows):
    """The sentences are said from the verdict rows, not written beside them: flip one row's
    verdict (and its effect) and its model's sentence says the other reading, with the new
    effect; the other model's sentence is unchanged."""
    def gemma(r):
        return report.findings_words(r).split("\n\n")[1].splitlines()[0]

    def smol(r):
        return report.findings_words(r).split("\n\n")[1].splitlines()[1]

    i = rows.index[(rows.claim == "english_advantage") & (rows.model == "gemma")][0]
    assert gemma(rows).startswith("* **gemma**: *Holds*: English advantage (direct: +0.32 ")
    against = _flipped(rows, i, "contradicted", -0.21)
    assert gemma(against).startswith(
        "* **gemma**: *Fails*: English advantage (direct: English is below the other "
        "languages: -0.21 accuracy, English minus the others' mean). *No available data ")
    assert smol(against) == smol(rows)
    undecided = _flipped(rows, i, "inconclusive", 0.32)
    assert gemma(undecided).startswith("* **gemma**: *Not decided at this size*: English "
                                       "advantage: a permutation over languages decides an "
                                       "effect, never its absence. *No available data decides*: ")
    # smollm2's inconclusive English advantage flipped to supported: now it holds, with its effect
    j = rows.index[(rows.claim == "english_advantage") & (rows.model == "smollm2")][0]
    assert smol(_flipped(rows, j, "supported", 0.12)) == (
        "* **smollm2**: *Holds*: English advantage (direct: +0.12 accuracy, English minus the "
        "others' mean).")
    # one task of two flipped from equivalent to supported: the count per task follows
    k = rows.index[rows.claim == "pivotal_rarely_whole"][0]
    tasks = report.findings_words(_flipped(rows, k, "supported", 0.4)).split("\n\n")[3]
    assert tasks == ("* **smollm2**: *Holds*: the other tokens carry a part (1 of 2 tasks). "
                     "*Fails*: the other tokens carry a part (1 of 2 tasks: the paper's reading "
                     "fails: the pivotal tokens explain the difference whole).")


def test_the_findings_table_fits_a_claim_a_row_a_model_a_column_each_effect_with_its_unit(rows):
    md = report.findings_table(rows)
    lines = [x for x in md.splitlines() if x.startswith("| ")]
    assert lines[0] == "| claim | gemma | smollm2 |"
    body = [re.split(r"(?<!\\)\|", x)[1:-1] for x in lines[2:]]
    labels = [re.sub(r"<[^>]+>", "", c[0]).strip() for c in body]
    assert labels == ["**XCOMPS**", "English advantage direct", "accuracy rises with resources direct",
                      "**Token-level perplexity**", "the other tokens carry a part per task"]
    english = body[1]
    assert "✓ +0.32 accuracy, English minus the others' mean</a>" in english[1]
    assert "? +0.04 accuracy, English minus the others' mean</a>" in english[2]
    assert english[2].count('href="xcomps_results.html#') == 1
    assert body[2][2].strip() == "—"  # not tested on that model
    tasks = re.sub(r"<[^>]+>", "", body[4][2]).strip()
    assert tasks == "≡2 of 2 tasks; -0.00 to +0.00 non-pivotal share of Σ\\|Δs\\|"
    # every cell with an effect says its unit, as the claim's declaration writes it
    units = {families.declared_claim(r.family, r.claim).effect_unit for r in rows.itertuples()}
    for cells in body:
        for cell in cells[1:]:
            if re.search(r"\d\.\d\d", cell):
                assert any(u.replace("|", "\\|") in cell for u in units), cell
    assert report.findings_table(rows.iloc[:0]) == ""


def test_each_link_of_the_table_finds_its_test_in_its_chapter(rows):
    """The table links to ``<page>.html#<id>``; the chapter's verdict table
    (report.claims_markdown) gives the test's row that id."""
    md = report.findings_table(rows)
    links = re.findall(r'href="(\w+)\.html#([\w-]+)"', md)
    assert links
    for page, anchor in links:
        printed = report.claims_markdown([claims.ClaimTest.from_row(r)
                                          for _, r in rows[rows.page == page].iterrows()])
        assert f'id="{anchor}"' in printed, (page, anchor)
    here = report.findings_table(rows[rows.page == "xcomps_results"], here=True)
    assert 'href="#claim-' in here and ".html#" not in here


def test_a_claim_of_a_family_of_ones_own_is_said_by_its_name_and_measure(tmp_path):
    items = pd.DataFrame({"pair_id": np.arange(60).astype(str), "task": "t",
                          "accuracy": np.r_[np.ones(50), np.zeros(10)]})
    mine = families.correct([perplexity_paper.above_chance(items, "t", n_boot=200)], "mine",
                            "exploratory")
    rows = _rows(tmp_path, {"direct_scoring": (mine, [], "")})
    words = report.findings_words(rows)
    assert words.startswith("**Other claims**, tested in {doc}`direct_scoring`:")
    assert "* **(not named)**: *Holds*: above chance (t: +" in words
    assert mine[0].measure in words
