"""Each claim test on synthetic data with a known answer."""

import numpy as np
import pandas as pd
import pytest

from xcomps_utils import claims

TYPES = ["taxonomic", "overlap", "co-occurrence", "random"]


def _xcomps(acc, n_items=60, langs=(("en", "analytic"),), seed=0):
    """One row per pair; ``acc(lang, type)`` is the probability a pair is correct."""
    rng = np.random.default_rng(seed)
    rows = []
    for lang, morph in langs:
        for i in range(n_items):
            for t in TYPES:
                rows.append({"lang": lang, "morphology": morph, "property": f"p{i}",
                             "negative_sample_type": t,
                             "direct_correct": float(rng.random() < acc(lang, t)),
                             "direct_tie": 0.0})
    return pd.DataFrame(rows)


def test_verdict_reads_the_interval():
    assert claims.verdict(0.1, 0.3, +1) == "supported"
    assert claims.verdict(-0.3, -0.1, +1) == "contradicted"
    assert claims.verdict(-0.1, 0.3, +1) == "inconclusive"
    assert claims.verdict(-0.3, -0.1, -1) == "supported"
    assert claims.verdict(0.5, 0.9, -1, null=1.0) == "supported"
    assert claims.verdict(-0.02, 0.03, 0, margin=0.05) == "contradicted"
    assert claims.verdict(-0.02, 0.08, 0, margin=0.05) == "inconclusive"
    assert claims.verdict(0.06, 0.2, 0) == "supported"
    assert claims.verdict(np.nan, 0.2, +1) == "inconclusive"
    with pytest.raises(ValueError, match="direction"):
        claims.verdict(0, 1, 2)


def test_cluster_bootstrap_resamples_whole_items():
    # 50 items, each either all-correct or all-wrong (4 pairs each): the item, not the pair, is
    # the unit, so the interval must be as wide as for 50 coin flips, not 200.
    df = pd.DataFrame({"property": np.repeat(np.arange(50), 4),
                       "correct": np.repeat(np.r_[np.ones(25), np.zeros(25)], 4)})
    est, lo, hi, n = claims.cluster_bootstrap(df, lambda d: d["correct"].mean(), "property",
                                              n_boot=2000, seed=1)
    assert est == 0.5 and n == 50
    se_items = np.sqrt(0.25 / 50)  # binomial SE over 50 items
    assert (hi - lo) / 2 == pytest.approx(1.96 * se_items, rel=0.15)
    with pytest.raises(ValueError, match="cluster column"):
        claims.cluster_bootstrap(df, lambda d: 0.0, "item")


def test_subtle_negatives_harder_supported_when_random_is_easier_and_inconclusive_when_equal():
    easy_random = _xcomps(lambda lang, t: 0.95 if t == "random" else 0.6, n_items=80)
    t = claims.subtle_negatives_harder(easy_random, n_boot=500)
    assert t.verdict == "supported" and t.effect == pytest.approx(0.35, abs=0.1)
    assert t.n_items == 80 and t.ci_low < t.effect < t.ci_high
    flat = _xcomps(lambda lang, t: 0.7, n_items=30, seed=3)
    t = claims.subtle_negatives_harder(flat, n_boot=500)
    assert t.verdict == "inconclusive" and t.ci_low < 0 < t.ci_high
    hard_random = _xcomps(lambda lang, t: 0.3 if t == "random" else 0.9, n_items=80)
    assert claims.subtle_negatives_harder(hard_random, n_boot=500).verdict == "contradicted"


def test_ties_and_near_ties_are_not_decisions():
    df = _xcomps(lambda lang, t: 1.0, n_items=20)
    df.loc[df.negative_sample_type == "random", "direct_correct"] = 0.0
    df.loc[df.negative_sample_type == "random", "direct_tie"] = 1.0  # ties, not errors
    df.loc[df.negative_sample_type == "taxonomic", "direct_correct"] = 0.0
    df["direct_near_tie"] = (df.negative_sample_type == "taxonomic").astype(float)
    # random has no decided pair: the statistic is undefined, not "random is hard"
    t = claims.subtle_negatives_harder(df, n_boot=200)
    assert np.isnan(t.effect) and t.verdict == "inconclusive"


def test_morphology_trend_recovers_a_planted_slope():
    langs = (("en", "analytic"), ("zh", "analytic"), ("de", "inflected"), ("fr", "inflected"),
             ("hu", "agglutinative"), ("tr", "agglutinative"))
    level = {"analytic": 0.9, "inflected": 0.75, "agglutinative": 0.6}
    morph = dict(langs)
    df = _xcomps(lambda lang, t: level[morph[lang]], n_items=60, langs=langs)
    t = claims.morphology_trend(df, n_boot=300)
    assert t.verdict == "supported" and t.effect == pytest.approx(-0.15, abs=0.05)
    with pytest.raises(ValueError, match="two morphological types"):
        claims.morphology_trend(df[df.morphology == "analytic"])


def test_english_advantage():
    langs = (("en", "analytic"), ("de", "inflected"), ("hu", "agglutinative"))
    df = _xcomps(lambda lang, t: 0.9 if lang == "en" else 0.6, n_items=60, langs=langs)
    t = claims.english_advantage(df, n_boot=300)
    assert t.verdict == "supported" and t.effect == pytest.approx(0.3, abs=0.08)


def test_direct_tracks_neuro_over_cells():
    rng = np.random.default_rng(0)
    cells = pd.DataFrame({"lang": np.repeat(list("abcdefg"), 4), "subset": TYPES * 7,
                          "direct": rng.uniform(0.5, 1, 28)})
    cells["neuro"] = cells["direct"] + rng.normal(0, 0.03, 28)
    t = claims.direct_tracks_neuro(cells, n_boot=500)
    assert t.verdict == "supported" and t.effect > 0.9 and t.unit == "cell"
    cells["neuro"] = rng.uniform(0.5, 1, 28)
    assert claims.direct_tracks_neuro(cells, n_boot=500).verdict != "supported"


def _prompts(p_first, p_second, n_items=60, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_items):
        for w in range(4):
            for order, p in (("good_first", p_first), ("bad_first", p_second)):
                rows.append({"task": "t", "pair_id": str(i), "wording": str(w), "order": order,
                             "correct": float(rng.random() < p)})
    return pd.DataFrame(rows)


def test_order_effect_two_sided_with_a_margin():
    t = claims.order_effect(_prompts(0.2, 0.85), "t", n_boot=500)
    assert t.verdict == "supported" and t.effect == pytest.approx(-0.65, abs=0.08)
    t = claims.order_effect(_prompts(0.6, 0.6, n_items=400), "t", margin=0.1, n_boot=300)
    assert t.verdict == "contradicted"  # no order effect, measured tightly
    acc = _prompts(0.9, 0.9).groupby(["task", "pair_id"], as_index=False)["correct"].mean()
    t = claims.above_chance(acc.rename(columns={"correct": "accuracy"}), "t", n_boot=300)
    assert t.verdict == "supported" and t.effect == pytest.approx(0.4, abs=0.05)


def test_pivotal_claims_on_planted_proportions():
    rng = np.random.default_rng(0)
    n = 50
    m = pd.DataFrame({"task": "t", "pair_id": np.repeat(np.arange(n).astype(str), 8)})
    m["plain_pivotal_ppl"] = rng.uniform(0.3, 0.6, 8 * n)
    m["norm_pivotal_ppl"] = rng.uniform(0.1, 0.4, 8 * n)
    t = claims.pivotal_never_whole(m, "t", n_boot=300)
    assert t.verdict == "supported" and t.null == 1.0 and t.effect == pytest.approx(0.45, abs=0.03)
    assert claims.pivotal_beyond_typical(m, "t", n_boot=300).verdict == "supported"
    assert claims.pivotal_carries_most(m, "t", n_boot=300).verdict == "contradicted"
    m["plain_pivotal_ppl"] = 1.0  # all of it, always
    assert claims.pivotal_never_whole(m, "t", n_boot=300).verdict == "inconclusive"
    assert claims.pivotal_carries_most(m, "t", n_boot=300).verdict == "supported"


def test_markdown_states_hypothesis_verdict_interval_and_size_needed():
    t = claims.subtle_negatives_harder(_xcomps(lambda lang, t: 0.7, n_items=30, seed=3),
                                       n_boot=300)
    md = claims.claims_markdown([t])
    assert md.startswith("- **Inconclusive** (direct): *negatives that share semantic")
    assert "95% CI [" in md and "30 items" in md
    assert t.items_needed and t.items_needed > t.n_items
    assert f"about {t.items_needed:,} items would give an 80% chance" in md
    # the sample size formula: n * ((1.96 + 0.84) * se / gap)^2, se from the near side
    assert claims.items_needed(0.1, 0.02, 0.2, 0.0, 30) == int(
        np.ceil(30 * ((1.959964 + 0.841621) * (0.08 / 1.959964) / 0.1) ** 2))
    assert claims.items_needed(0.0, -0.1, 0.1, 0.0, 30) is None
    table = claims.claims_table([t])
    assert table.loc[0, "half_width"] == pytest.approx((t.ci_high - t.ci_low) / 2)
