"""Cross-lingual consistency on synthetic judgements with a known answer."""

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import consistency as C

TYPES = ["taxonomic", "overlap", "co-occurrence", "random"]


def _scored(columns: dict, n_items: int) -> pd.DataFrame:
    """Long table: one row per language x item x negative type, ``direct_correct`` given per
    language as a vector over (item, type)."""
    rows = []
    for lang, values in columns.items():
        for k, v in enumerate(values):
            rows.append({"lang": lang, "property": f"p{k // 4:03d}", "negative_sample_type":
                         TYPES[k % 4], "direct_correct": float(v), "direct_tie": 0.0})
    return pd.DataFrame(rows)


def test_perfect_agreement_gives_kappa_one():
    rng = np.random.default_rng(0)
    v = rng.integers(0, 2, 200)
    d = _scored({"en": v, "de": v, "hu": v}, 50)
    table = C.pairwise_agreement(C.correctness_matrix(d))
    assert (table.kappa == 1).all() and (table.agreement == 1).all() and (table.n == 200).all()
    t = C.cross_lingual_agreement(d, n_boot=200)
    assert t.effect == 1 and t.ci_low == 1 and t.verdict == "supported"


def test_opposite_judgements_give_kappa_minus_one():
    v = np.tile([0, 1], 100)
    assert C.cohen_kappa(v, 1 - v) == pytest.approx(-1)


def test_independent_languages_give_kappa_near_zero_even_at_high_accuracy():
    rng = np.random.default_rng(1)
    n = 4000  # 1000 items x 4 types
    d = _scored({"en": rng.random(n) < 0.9, "de": rng.random(n) < 0.9,
                 "zh": rng.random(n) < 0.6}, n // 4)
    table = C.pairwise_agreement(C.correctness_matrix(d))
    en_de = table[(table.lang_a == "de") & (table.lang_b == "en")].iloc[0]  # sorted codes
    assert en_de.agreement > 0.8  # raw agreement is high by chance alone...
    assert abs(en_de.kappa) < 0.05  # ... kappa is not
    t = C.cross_lingual_agreement(d, n_boot=200)
    assert abs(t.effect) < 0.05 and t.ci_low < 0 < t.ci_high and t.verdict == "inconclusive"


def test_agreement_follows_morphology_when_planted():
    rng = np.random.default_rng(2)
    n = 400
    analytic = rng.integers(0, 2, n)
    agglutinative = rng.integers(0, 2, n)
    flip = lambda v, p: np.where(rng.random(n) < p, 1 - v, v)
    d = _scored({"en": flip(analytic, 0.05), "zh": flip(analytic, 0.05), "vi": flip(analytic, 0.05),
                 "tr": flip(agglutinative, 0.05), "hu": flip(agglutinative, 0.05)}, n // 4)
    t = C.agreement_follows(d, "morphological_type", n_boot=200)
    # five languages, types permuted within resource level: no outcome reaches 2.5%
    assert t.effect > 0.7 and t.verdict == "cannot be decided" and t.unit == "language"
    # resource level (en, zh high; vi, tr, hu medium) cuts across the planted structure
    r = C.agreement_follows(d, "resource_level", n_boot=200)
    assert r.effect < t.effect


def test_ties_are_left_out_and_units_must_be_unique():
    d = _scored({"en": [1, 0, 1, 1], "de": [1, 0, 0, 1]}, 1)
    d.loc[(d.lang == "de") & (d.negative_sample_type == "co-occurrence"), "direct_tie"] = 1.0
    m = C.correctness_matrix(d)
    assert m["de"].isna().sum() == 1
    assert C.pairwise_agreement(m).n.item() == 3
    with pytest.raises(ValueError, match="share a .lang, property"):
        C.correctness_matrix(pd.concat([d, d]), unit="property")


def test_items_by_languages_counts_where_an_item_is_known():
    d = _scored({"en": [1, 1, 1, 1, 0, 0, 0, 0], "de": [1, 1, 1, 0, 1, 1, 0, 0],
                 "hu": [0, 0, 0, 0, 1, 1, 1, 1]}, 2)
    t = C.items_by_languages(C.correctness_matrix(d)).set_index("property")
    assert t.loc["p000", "known_in"] == 2 and t.loc["p000", "known"] == "de, en"
    assert t.loc["p001", "known_in"] == 1 and t.loc["p001", "unknown"] == "de, en"


def test_interval_resamples_items_not_pairs():
    rng = np.random.default_rng(3)
    v = rng.integers(0, 2, 80)
    d = _scored({"en": v, "de": np.where(rng.random(80) < 0.2, 1 - v, v)}, 20)
    table = C.agreement_table(d, n_boot=300)
    row = table.iloc[0]
    assert row.ci_low < row.kappa < row.ci_high
    assert {"morphology_a", "resource_b"} <= set(table.columns)


def test_vectorised_kappa_equals_scikit_learn():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(4)
    m = (rng.random((60, 4)) < [0.9, 0.7, 0.5, 0.95]).astype(float)
    m[rng.random((60, 4)) < 0.1] = np.nan
    pairs = [(0, 1), (0, 2), (1, 3), (2, 3)]
    got = C._kappas(m, pairs)
    for (i, j), k in zip(pairs, got):
        ok = ~(np.isnan(m[:, i]) | np.isnan(m[:, j]))
        assert k == pytest.approx(cohen_kappa_score(m[ok, i], m[ok, j]), abs=1e-12)
        assert k == pytest.approx(C.cohen_kappa(m[:, i], m[:, j]), abs=1e-12)


def _typed(rng, langs, kind, n_items=40, flip=0.1, shared=0.0):
    """Judgements where languages of the same ``kind`` share a pattern of known items (each
    language flips ``flip`` of it); ``shared`` mixes in one pattern common to all."""
    common = rng.integers(0, 2, 4 * n_items)
    pattern = {k: np.where(rng.random(4 * n_items) < shared, common,
                           rng.integers(0, 2, 4 * n_items)) for k in sorted(set(kind.values()))}
    return _scored({l: np.where(rng.random(4 * n_items) < flip, 1 - pattern[kind[l]],
                                pattern[kind[l]]) for l in langs}, n_items)


@pytest.mark.slow  # a simulation over many data sets (issue 29)
def test_agreement_follows_type_is_a_language_level_test_over_eighteen_languages():
    from xcomps_utils.pairs import xcomps

    info = xcomps.languages().set_index("iso")
    langs = list(info.index)
    kind = info["morphological_type"].to_dict()
    # (a) planted: same-type languages share their known items -> supported
    t = C.agreement_follows(_typed(np.random.default_rng(0), langs, kind), n_boot=100)
    assert t.verdict == "supported" and t.unit == "language" and t.n_items == 18
    # ("contradicted" is the same permutation machinery's other side, reached in
    # tests/analysis/test_claims.py::test_morphology_trend_over_eighteen_languages)
    # (b) null: agreement unrelated to type (one pattern shared by all, languages differing)
    decided = sum(C.agreement_follows(_typed(np.random.default_rng(10 + s), langs,
                                             {l: l for l in langs}, shared=0.6),
                                      n_boot=100).verdict in ("supported", "contradicted")
                  for s in range(20))
    assert decided <= 3  # nominal 5% of 20 = 1; 3 allows for the small number of runs


# --- agreement within negative type (issue 27, item 3) ----------------------------------------

def _langs_typed(rng, n_items=24, langs=("en", "de", "fr", "zh", "vi", "tr", "hu"), copy=0.0,
                 random_boost=(0.2, 0.3), subtle=0.55, opposite=False):
    """7 languages x items x 4 types. Each language is right with probability ``subtle`` on the
    subtle types and ``subtle + boost`` on random negatives (the boost alternating between the
    two values over languages); with probability ``copy`` a unit's judgement is a pattern
    shared by every language (kappa about ``copy**2`` within a type), else independent.
    ``opposite``: the second half of the languages get the shared pattern flipped."""
    n = 4 * n_items
    p = np.array([subtle] * 3 + [np.nan])
    cols = {}
    shared = None
    for k, lang in enumerate(langs):
        pt = np.tile(np.where(np.isnan(p), subtle + random_boost[k % 2], p), n_items)
        if shared is None:
            shared = rng.random(n) < np.tile(np.where(np.isnan(p), subtle + 0.25, p), n_items)
        own = rng.random(n) < pt
        pattern = ~shared if opposite and k >= len(langs) // 2 else shared
        cols[lang] = np.where(rng.random(n) < copy, pattern, own)
    return _scored(cols, n_items)


def _rates(make, fn, n):
    v = [fn(make(s)).verdict for s in range(n)]
    return {k: v.count(k) / n for k in ("supported", "contradicted", "negligible")}


def _bound(n, level=0.05):
    return level + 3 * (level * (1 - level) / n) ** 0.5


@pytest.mark.slow  # a simulation of the decision rule (the slow tier's rule)
def test_a_type_effect_alone_does_not_make_languages_agree():
    """The trap: languages share nothing but random negatives being 0.2 / 0.3 easier. Kappa
    over pooled types is decided in most datasets; within type, at the nominal rate."""
    run = lambda d, w="negative_sample_type": C.cross_lingual_agreement(  # noqa: E731
        d, n_boot=200, n_perm=199, within=w)
    make = lambda s: _langs_typed(np.random.default_rng(1000 + s), n_items=40)  # noqa: E731
    n = 60
    within = _rates(make, run, n)
    assert within["supported"] + within["contradicted"] <= _bound(n)
    pooled = _rates(make, lambda d: run(d, None), 20)
    # the defect the within-type kappa removes: a side decided (an agreement smaller than the
    # smallest of interest, 0.1, prints "negligible", still a side decided by the type alone)
    assert pooled["supported"] + pooled["negligible"] >= 0.5


@pytest.mark.slow  # a simulation of the decision rule (the slow tier's rule)
def test_within_type_agreement_reaches_both_outcomes_and_has_power():
    run = lambda d: C.cross_lingual_agreement(d, n_boot=200, n_perm=199)  # noqa: E731
    # supported: languages share which items they know (within-type kappa about 0.12), 24
    # items x 4 types x 7 languages, the page's smoke size
    power = _rates(lambda s: _langs_typed(np.random.default_rng(2000 + s), copy=0.35), run, 30)
    assert power["supported"] >= 0.8
    # contradicted: two groups of languages judge the shared pattern the opposite way
    t = run(_langs_typed(np.random.default_rng(3), copy=0.8, opposite=True,
                         langs=("en", "de")))
    assert t.verdict == "contradicted" and t.effect < -0.3
    # null (no type effect either): decided at about the nominal rate
    null = _rates(lambda s: _langs_typed(np.random.default_rng(4000 + s), random_boost=(0, 0)),
                  run, 60)
    assert null["supported"] + null["contradicted"] <= _bound(60)


def test_within_type_kappa_is_the_mean_of_the_kappas_of_each_type():
    d = _langs_typed(np.random.default_rng(5), copy=0.5, langs=("en", "de", "hu"))
    table = C.agreement_table(d, n_boot=100)
    m = C.correctness_matrix(d)
    for r in table.itertuples():
        per = [C.cohen_kappa(g[r.lang_a], g[r.lang_b])
               for _, g in m.groupby(level="negative_sample_type")]
        assert r.kappa == pytest.approx(np.mean(per), abs=1e-12)
        assert r.kappa_pooled == pytest.approx(C.cohen_kappa(m[r.lang_a], m[r.lang_b]))


def test_agreement_and_the_xcomps_tables_keep_the_same_pairs():
    """One near-tie rule: a near tie and an exact tie are dropped by the kappa matrix exactly
    as by the XCOMPS accuracy tables (scored.decided_rows, xcomps_paper.method_tables), whether
    the pairs carry the run's decisions (precision.decisions) or only tie / near-tie flags."""
    from xcomps_utils.analysis import scored, xcomps_paper
    from xcomps_utils.lm import precision

    rng = np.random.default_rng(6)
    d = _scored({"en": rng.integers(0, 2, 40), "de": rng.integers(0, 2, 40)}, 10)
    d["direct_near_tie"] = 0.0
    d.loc[3, "direct_near_tie"] = 1.0    # a near tie (bf16: |delta| < 1 nat)
    d.loc[17, "direct_tie"] = 1.0        # an exact tie
    d.loc[[3, 17], "direct_correct"] = 1.0
    for frame in (d, d.assign(direct_decision=precision.decisions(d))):
        m = C.correctness_matrix(frame).stack(future_stack=True)
        kept = set(m[m.notna()].index)
        rows = frame.set_index(["property", "negative_sample_type", "lang"]).index
        xc = scored.decided_rows(frame, "direct_correct")
        assert kept == set(rows[frame.index.isin(xc.index)]) and len(kept) == len(d) - 2
        acc = xcomps_paper.method_tables(frame, pd.DataFrame(), ["de", "en"])["Direct"]
        mine = m.groupby(level=["lang", "negative_sample_type"]).mean().unstack()
        pd.testing.assert_frame_equal(mine[acc.columns], acc, check_names=False)


def test_the_printed_agreement_verdict_flips_with_the_data():
    """What the page prints (families.correct then claims_markdown, as its claims cell): shared
    item knowledge reads Supported; a type effect alone does not."""
    from xcomps_utils.analysis import families, report

    def printed(d):
        t = C.cross_lingual_agreement(d, n_boot=200, n_perm=499)
        return report.claims_markdown(families.correct([t], "cross-lingual agreement"))
    shared = printed(_langs_typed(np.random.default_rng(11), copy=0.6))
    typed = printed(_langs_typed(np.random.default_rng(12), n_items=40))
    assert "| **Supported** |" in shared and "within negative type" in shared
    assert "| **Supported** |" not in typed
