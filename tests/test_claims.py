"""Every claim on synthetic data: (a) "supported" and "contradicted" are both reachable, (b) under
a realistic null (items random, languages differing, types with main effects) the rate of a
false decision stays at or under nominal, (c) power at a stated effect. Seeded, fast.

Nominal: a decided verdict under the null ("supported" or "contradicted") has probability
alpha = 0.05 (0.025 a side); the bounds below add three binomial standard errors of the
simulated rate.
"""

import math

import numpy as np
import pandas as pd
import pytest

from xcomps_utils import claims, perplexity_paper, xcomps, xcomps_paper

TYPES = ["taxonomic", "overlap", "co-occurrence", "random"]
LANGS7 = [("en", "analytic", "high"), ("de", "inflected", "high"), ("fr", "inflected", "high"),
          ("zh", "analytic", "high"), ("vi", "analytic", "medium"),
          ("tr", "agglutinative", "medium"), ("hu", "agglutinative", "medium")]
LANGS18 = [(r.iso, r.morphological_type, r.resource_level)
           for r in xcomps.languages().itertuples()]


def _bound(p, n):
    """Nominal rate ``p`` plus three binomial standard errors of ``n`` simulations."""
    return p + 3 * math.sqrt(p * (1 - p) / n)


def _logit(p):
    return np.log(p / (1 - p))


def _xcomps(acc, n_items=30, langs=LANGS7, seed=0, lang_sd=0.0, item_sd=0.0):
    """One row per pair. ``acc(lang, morph, resource, type)`` is a pair's probability of being
    correct before the random effects: each language's offset (sd ``lang_sd``, logit scale:
    languages differ) and each item's (``item_sd``: items differ, in every language alike)."""
    rng = np.random.default_rng(seed)
    lang_off = rng.normal(0, lang_sd, len(langs))
    item_off = rng.normal(0, item_sd, n_items)
    frames = []
    for (lang, morph, res), lo in zip(langs, lang_off):
        for t in TYPES:
            p = 1 / (1 + np.exp(-(_logit(np.clip(acc(lang, morph, res, t), 1e-3, 1 - 1e-3))
                                  + lo + item_off)))
            frames.append(pd.DataFrame({
                "lang": lang, "morphology": morph, "resource_level": res,
                "property": [f"p{i}" for i in range(n_items)], "negative_sample_type": t,
                "direct_correct": (rng.random(n_items) < p).astype(float),
                "direct_tie": 0.0}))
    return pd.DataFrame(pd.concat(frames, ignore_index=True))


def _rates(make, test, n_sims):
    """Verdict frequencies of ``test(make(seed))`` over ``n_sims`` seeds."""
    out = pd.Series([test(make(s)).verdict for s in range(n_sims)]).value_counts() / n_sims
    return {v: float(out.get(v, 0.0)) for v in claims.VERDICTS}


# --- the verdict machinery -----------------------------------------------------------------------

def test_verdict_reads_the_interval():
    assert claims.verdict(0.1, 0.3, +1) == "supported"
    assert claims.verdict(-0.3, -0.1, +1) == "contradicted"
    assert claims.verdict(-0.1, 0.3, +1) == "inconclusive"
    assert claims.verdict(-0.3, -0.1, -1) == "supported"
    assert claims.verdict(0.5, 0.9, -1, null=1.0) == "supported"
    assert claims.verdict(-0.02, 0.03, 0, margin=0.05) == "contradicted"
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
    assert (hi - lo) / 2 == pytest.approx(1.96 * np.sqrt(0.25 / 50), rel=0.15)
    with pytest.raises(ValueError, match="cluster column"):
        claims.cluster_bootstrap(df, lambda d: 0.0, "item")


def test_bootstrap_p_values_agree_with_the_interval():
    df = _xcomps(lambda *a: 0.9 if a[3] == "random" else 0.75, n_items=60, seed=2)
    t = xcomps_paper.subtle_negatives_harder(df, n_boot=1000)
    assert (t.ci_low > 0) == (t.p_supported <= 0.025)
    assert t.p_supported + t.p_contradicted == pytest.approx(1.0, abs=0.01)


def test_holm_keeps_the_family_wise_error_at_nominal():
    # 15 true nulls per family (accuracy 0.5 on 40 items): uncorrected, some test of a family
    # is decided far more often than 5%; Holm keeps it near 5%.
    rng = np.random.default_rng(0)
    any_raw, any_holm, n_fam = 0, 0, 60
    for f in range(n_fam):
        tests = []
        for k in range(15):
            items = pd.DataFrame({"task": "t", "pair_id": np.arange(40).astype(str),
                                  "accuracy": (rng.random(40) < 0.5).astype(float)})
            tests.append(perplexity_paper.above_chance(items, "t", n_boot=400, seed=k))
        any_raw += any(t.verdict in ("supported", "contradicted") for t in tests)
        held = claims.correct(tests, "nulls", "exploratory")
        assert all(t.family_size == 15 and t.family == "nulls" for t in held)
        any_holm += any(t.verdict in ("supported", "contradicted") for t in held)
    assert any_raw / n_fam > 0.25
    assert any_holm / n_fam <= _bound(0.05, n_fam)


def test_too_few_items_for_a_bootstrap_verdict():
    two = pd.DataFrame({"task": "t", "pair_id": ["a", "b"], "accuracy": [1.0, 1.0]})
    t = perplexity_paper.above_chance(two, "t", n_boot=200)
    assert t.ci_low == t.ci_high == 0.5  # a zero-width interval: no test at all
    assert t.verdict == "cannot be decided" and "Fewer than 10 items" in \
        claims.claims_markdown([t])


def test_holm_still_decides_strong_effects_and_says_so():
    strong = pd.DataFrame({"task": "t", "pair_id": np.arange(60).astype(str),
                           "accuracy": np.r_[np.ones(55), np.zeros(5)]})
    t = claims.correct([perplexity_paper.above_chance(strong, "t", n_boot=500)] * 10, "ten", "confirmatory")
    assert all(x.verdict == "supported" and x.role == "confirmatory" for x in t)
    md = claims.claims_markdown(t[:1])
    assert "Family: ten (confirmatory, 10 tests, Holm)" in md and "Null: accuracy is 0.5" in md


def test_items_needed_plans_for_the_smallest_effect_of_interest_not_the_estimate():
    # half-width 0.08 at 30 items: se = 0.08 / 1.96; for an effect of 0.05,
    # n = 30 * ((1.96 + 0.84) * se / 0.05)^2, whatever the point estimate was
    assert claims.items_needed(0.02, 0.18, 30, 0.05) == int(
        np.ceil(30 * ((1.959964 + 0.841621) * (0.08 / 1.959964) / 0.05) ** 2))
    assert claims.items_needed(0.02, 0.18, 30, None) is None
    t = xcomps_paper.subtle_negatives_harder(_xcomps(lambda *a: 0.7, n_items=30, seed=3), n_boot=300)
    assert t.verdict == "inconclusive" and t.sesoi == 0.05
    assert t.items_needed == claims.items_needed(t.ci_low, t.ci_high, 30, 0.05)
    assert f"about {t.items_needed:,} items would give an 80% chance of deciding an effect " \
           f"of 0.05" in claims.claims_markdown([t])


def test_ties_and_near_ties_are_not_decisions():
    df = _xcomps(lambda *a: 1.0, n_items=20)
    rnd = df.negative_sample_type == "random"
    df.loc[rnd, "direct_correct"], df.loc[rnd, "direct_tie"] = 0.0, 1.0  # ties, not errors
    # random has no decided pair: the statistic is undefined, not "random is hard"
    t = xcomps_paper.subtle_negatives_harder(df, n_boot=200)
    assert np.isnan(t.effect) and t.verdict == "inconclusive"
    # the run's decision column wins over the flags
    df["direct_decision"] = np.where(rnd, "near_tie", "right")
    assert len(claims.decided_rows(df, "direct_correct")) == int((~rnd).sum())


# --- items as the unit ---------------------------------------------------------------------------

def test_english_advantage():
    up = _xcomps(lambda l, *a: 0.9 if l == "en" else 0.6, n_items=60)
    t = xcomps_paper.english_advantage(up, n_boot=400)
    assert t.verdict == "supported" and t.effect == pytest.approx(0.3, abs=0.08)
    assert "translated" in t.caveat and t.unit == "item"
    down = _xcomps(lambda l, *a: 0.5 if l == "en" else 0.8, n_items=60)
    assert xcomps_paper.english_advantage(down, n_boot=400).verdict == "contradicted"
    # null: English like the others, items and (non-English) languages differing
    r = _rates(lambda s: _xcomps(lambda *a: 0.7, n_items=30, seed=s, item_sd=0.8),
               lambda d: xcomps_paper.english_advantage(d, n_boot=400, seed=1), 150)
    assert r["supported"] + r["contradicted"] <= _bound(0.05, 150)
    # power: +0.15 in English at 30 items
    r = _rates(lambda s: _xcomps(lambda l, *a: 0.85 if l == "en" else 0.7, n_items=30, seed=s),
               lambda d: xcomps_paper.english_advantage(d, n_boot=400, seed=1), 60)
    assert r["supported"] >= 0.8


def test_subtle_negatives_harder():
    easy_random = _xcomps(lambda *a: 0.95 if a[3] == "random" else 0.6, n_items=80)
    t = xcomps_paper.subtle_negatives_harder(easy_random, n_boot=500)
    assert t.verdict == "supported" and t.effect == pytest.approx(0.35, abs=0.1)
    hard_random = _xcomps(lambda *a: 0.3 if a[3] == "random" else 0.9, n_items=80)
    assert xcomps_paper.subtle_negatives_harder(hard_random, n_boot=500).verdict == "contradicted"
    # null: types equal; languages differ a lot, items differ
    r = _rates(lambda s: _xcomps(lambda *a: 0.7, seed=s, lang_sd=0.8, item_sd=0.8),
               lambda d: xcomps_paper.subtle_negatives_harder(d, n_boot=400, seed=1), 150)
    assert r["supported"] + r["contradicted"] <= _bound(0.05, 150)
    # power: random 0.1 easier, 30 items x 7 languages
    r = _rates(lambda s: _xcomps(lambda *a: 0.8 if a[3] == "random" else 0.7, seed=s),
               lambda d: xcomps_paper.subtle_negatives_harder(d, n_boot=400, seed=1), 60)
    assert r["supported"] >= 0.8


# --- languages as the unit -------------------------------------------------------------------

LEVEL = {"analytic": 0.85, "inflected": 0.75, "agglutinative": 0.65}


def test_type_claims_cannot_be_decided_with_the_books_seven_languages():
    # a huge planted trend, 200 items: still no test at 2.5% (18 labelings within resource level)
    df = _xcomps(lambda l, m, *a: {"analytic": 0.95, "inflected": 0.7,
                                    "agglutinative": 0.4}[m], n_items=200)
    t = xcomps_paper.morphology_trend(df, n_boot=300)
    assert t.verdict == "cannot be decided" and t.unit == "language" and t.n_items == 7
    assert t.smallest_p == pytest.approx(1 / 18) and t.effect < -0.2
    assert "confounded with resource level" in t.caveat
    assert "Cannot be decided with 7 languages" in claims.claims_markdown([t])
    r = xcomps_paper.resource_trend(df, n_boot=300)  # 3 labelings within morphological type
    assert r.verdict == "cannot be decided" and r.smallest_p == pytest.approx(1 / 3)


def test_morphology_trend_over_eighteen_languages():
    down = _xcomps(lambda l, m, *a: LEVEL[m], langs=LANGS18, lang_sd=0.1)
    t = xcomps_paper.morphology_trend(down, n_boot=300)
    assert t.verdict == "supported" and t.effect == pytest.approx(-0.1, abs=0.04)
    up = _xcomps(lambda l, m, *a: 1.5 - LEVEL[m], langs=LANGS18, lang_sd=0.1)
    assert xcomps_paper.morphology_trend(up, n_boot=300).verdict == "contradicted"
    # null: languages differ (sd 0.5 on the logit scale, about ±0.1 accuracy), type irrelevant;
    # the old item-bootstrap test decided this 41-65% of the time
    kw = {"n_boot": 100, "n_perm": 499, "seed": 1}
    r = _rates(lambda s: _xcomps(lambda *a: 0.7, langs=LANGS18, seed=s, lang_sd=0.5),
               lambda d: xcomps_paper._type_trend("m", "h", d, "direct_correct", "morphology",
                                            xcomps_paper.MORPH_ORDER, "resource_level", -1,
                                            "property", **kw), 100)
    assert r["supported"] + r["contradicted"] <= _bound(0.05, 100)
    # power: 0.1 per step, languages differing by sd 0.2 (logit)
    r = _rates(lambda s: _xcomps(lambda l, m, *a: LEVEL[m], langs=LANGS18, seed=s, lang_sd=0.2),
               lambda d: xcomps_paper._type_trend("m", "h", d, "direct_correct", "morphology",
                                            xcomps_paper.MORPH_ORDER, "resource_level", -1,
                                            "property", **kw), 40)
    assert r["supported"] >= 0.8


def _cells(rng, langs, types_effect, coupling, noise=0.03):
    """Direct and Neuro per language x type: both share a type main effect; across languages,
    Neuro = coupling * Direct's language effect + independent noise."""
    lang_d = rng.normal(0, 0.08, len(langs))
    lang_n = coupling * lang_d + rng.normal(0, 0.08, len(langs)) * (1 - abs(coupling))
    rows = []
    for k, t in enumerate(TYPES):
        for i, l in enumerate(langs):
            rows.append({"lang": l, "subset": t,
                         "direct": 0.7 + types_effect[k] + lang_d[i] + rng.normal(0, noise),
                         "neuro": 0.6 + types_effect[k] + lang_n[i] + rng.normal(0, noise)})
    return pd.DataFrame(rows)


def test_direct_tracks_neuro_within_types():
    rng = np.random.default_rng(0)
    langs, fx = list("abcdefg"), [0.0, 0.02, 0.05, 0.2]
    t = xcomps_paper.direct_tracks_neuro(_cells(rng, langs, fx, 1.0), n_boot=300)
    assert t.verdict == "supported" and t.effect > 0.8 and t.unit == "language"
    assert xcomps_paper.direct_tracks_neuro(_cells(rng, langs, fx, -1.0), n_boot=300).verdict \
        == "contradicted"
    # null: unrelated across languages, both find random negatives easiest (type main effect).
    # One r over the pooled 28 cells is "significant" almost always; within types it is not.
    pooled, n_sims, decided = 0, 150, 0
    for s in range(n_sims):
        c = _cells(np.random.default_rng(s), langs, fx, 0.0)
        pooled += np.corrcoef(c.direct, c.neuro)[0, 1] > 0.5
        decided += xcomps_paper.direct_tracks_neuro(c, n_boot=200, seed=s).verdict in (
            "supported", "contradicted")
    assert pooled / n_sims > 0.5
    assert decided / n_sims <= _bound(0.05, n_sims)
    # power at a coupling of 0.8 with 7 languages
    r = _rates(lambda s: _cells(np.random.default_rng(1000 + s), langs, fx, 0.8),
               lambda c: xcomps_paper.direct_tracks_neuro(c, n_boot=200), 60)
    assert r["supported"] >= 0.8


# --- token-level perplexity -------------------------------------------------------------------

def _prompts(p_first, p_second, n_items=60, seed=0, item_sd=0.0):
    rng = np.random.default_rng(seed)
    item = rng.normal(0, item_sd, n_items)
    rows = []
    for i in range(n_items):
        for w in range(4):
            for order, p in (("good_first", p_first), ("bad_first", p_second)):
                q = 1 / (1 + np.exp(-(_logit(p) + item[i])))
                rows.append({"task": "t", "pair_id": str(i), "wording": str(w), "order": order,
                             "correct": float(rng.random() < q)})
    return pd.DataFrame(rows)


def test_order_effect_and_above_chance():
    t = perplexity_paper.order_effect(_prompts(0.2, 0.85), "t", n_boot=500)
    assert t.verdict == "supported" and t.effect == pytest.approx(-0.65, abs=0.08)
    t = perplexity_paper.order_effect(_prompts(0.6, 0.6, n_items=400), "t", margin=0.1, n_boot=300)
    assert t.verdict == "contradicted"  # no order effect, measured tightly
    r = _rates(lambda s: _prompts(0.7, 0.7, n_items=40, seed=s, item_sd=1.0),
               lambda d: perplexity_paper.order_effect(d, "t", n_boot=400), 150)
    assert r["supported"] <= _bound(0.05, 150)  # a false order effect, either side
    r = _rates(lambda s: _prompts(0.55, 0.8, n_items=40, seed=s),
               lambda d: perplexity_paper.order_effect(d, "t", n_boot=400), 40)
    assert r["supported"] >= 0.8

    def acc(d):
        return d.groupby(["task", "pair_id"], as_index=False)["correct"].mean().rename(
            columns={"correct": "accuracy"})
    assert perplexity_paper.above_chance(acc(_prompts(0.9, 0.9)), "t", n_boot=300).verdict == "supported"
    assert perplexity_paper.above_chance(acc(_prompts(0.2, 0.2)), "t", n_boot=300).verdict == \
        "contradicted"
    r = _rates(lambda s: acc(_prompts(0.5, 0.5, n_items=40, seed=s, item_sd=1.5)),
               lambda d: perplexity_paper.above_chance(d, "t", n_boot=400), 150)
    assert r["supported"] + r["contradicted"] <= _bound(0.05, 150)
    r = _rates(lambda s: acc(_prompts(0.62, 0.62, n_items=40, seed=s)),
               lambda d: perplexity_paper.above_chance(d, "t", n_boot=400), 40)
    assert r["supported"] >= 0.8


def _groups(n_items, seed, piv_scale=1.0, piv_sign=0.0, other_sign=0.0, n_groups=12):
    """Aligned groups of prompt pairs: every group's |ΔPPL| lognormal (heavy-tailed), one
    pivotal group scaled by ``piv_scale``; signs positive with probability ``(1 + sign) / 2``.
    Surprisals are set so that exp(s_incorrect) - exp(s_correct) is the drawn ΔPPL."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_items):
        for w in range(2):
            for order in ("good_first", "bad_first"):
                mag = rng.lognormal(0, 1.5, n_groups)
                mag[0] *= piv_scale
                p = np.r_[(1 + piv_sign) / 2, np.full(n_groups - 1, (1 + other_sign) / 2)]
                d = np.where(rng.random(n_groups) < p, mag, -mag)
                base = np.exp(rng.uniform(1, 3, n_groups))
                rows.append(pd.DataFrame({
                    "task": "t", "pair_id": str(i), "wording": str(w), "order": order,
                    "s_correct": np.log(base + np.maximum(-d, 0)),
                    "s_incorrect": np.log(base + np.maximum(d, 0)),
                    "category": ["pivotal"] + ["other"] * (n_groups - 1)}))
    return pd.concat(rows, ignore_index=True)


def test_prompt_pair_measures_follow_their_definitions():
    g = pd.DataFrame({"task": "t", "pair_id": "0", "wording": "w", "order": "good_first",
                      "s_correct": np.log([1.0, 1.0, 1.0]),
                      "s_incorrect": np.log([4.0, 1.5, 0.5]),  # ΔPPL 3, 0.5, -0.5
                      "category": ["pivotal", "other", "other"]})
    m = perplexity_measures(g).iloc[0]
    assert m.whole_ppl == pytest.approx(3.0)
    assert m.paper_plain_pivotal_ppl == pytest.approx(1.0) and m.pivotal_whole == 1.0
    assert m.influence_pivotal_ppl == pytest.approx(3 / 4 - 1 / 3)
    assert m.direction_pivotal_ppl == pytest.approx(1.0)
    assert m.norm_avg_pivotal_ppl == pytest.approx(3 / 4 - 0.5 / 4)


def perplexity_measures(g):
    from xcomps_utils.perplexity_paper import prompt_pair_measures
    return prompt_pair_measures(g)


def test_pivotal_rarely_whole_can_be_contradicted():
    from xcomps_utils.perplexity_paper import prompt_pair_measures

    # the pivotal group dominates: it explains the whole difference in most prompt pairs
    big = prompt_pair_measures(_groups(30, 0, piv_scale=50, piv_sign=1.0, other_sign=-0.9))
    assert perplexity_paper.pivotal_rarely_whole(big, "t", n_boot=300).verdict == "contradicted"
    typical = prompt_pair_measures(_groups(30, 1))
    t = perplexity_paper.pivotal_rarely_whole(typical, "t", n_boot=300)
    assert t.verdict == "supported" and t.effect < 0.3
    # null: whole in half of the prompt pairs, items differing
    rng = np.random.default_rng(0)

    def half(s):
        r = np.random.default_rng(s)
        item_p = np.clip(0.5 + r.normal(0, 0.2, 40), 0, 1)
        return pd.DataFrame({"task": "t", "pair_id": np.repeat(np.arange(40).astype(str), 8),
                             "pivotal_whole": (r.random(320) < np.repeat(item_p, 8)).astype(float)})
    r = _rates(half, lambda d: perplexity_paper.pivotal_rarely_whole(d, "t", n_boot=400), 150)
    assert r["supported"] + r["contradicted"] <= _bound(0.05, 150)
    assert rng  # seeded above

    def third(s):
        r = np.random.default_rng(s)
        return pd.DataFrame({"task": "t", "pair_id": np.repeat(np.arange(40).astype(str), 8),
                             "pivotal_whole": (r.random(320) < 0.35).astype(float)})
    assert _rates(third, lambda d: perplexity_paper.pivotal_rarely_whole(d, "t", n_boot=400),
                  40)["supported"] >= 0.8


def test_pivotal_influence_and_direction_against_a_random_group():
    from xcomps_utils.perplexity_paper import prompt_pair_measures

    # a pivotal group with 9x a typical group's |ΔPPL| but a slightly wrong mean sign: it is
    # influential (supported) and its direction is not decided the right way
    m = prompt_pair_measures(_groups(40, 0, piv_scale=9, piv_sign=-0.1))
    assert perplexity_paper.pivotal_influence(m, "t", n_boot=400).verdict == "supported"
    assert perplexity_paper.pivotal_direction(m, "t", n_boot=400).verdict != "supported"
    weak = prompt_pair_measures(_groups(40, 1, piv_scale=0.05))
    assert perplexity_paper.pivotal_influence(weak, "t", n_boot=400).verdict == "contradicted"
    right = prompt_pair_measures(_groups(40, 2, piv_sign=0.8))
    assert perplexity_paper.pivotal_direction(right, "t", n_boot=400).verdict == "supported"
    wrong = prompt_pair_measures(_groups(40, 3, piv_sign=-0.8))
    assert perplexity_paper.pivotal_direction(wrong, "t", n_boot=400).verdict == "contradicted"
    # null: the pivotal group is a random group. The paper's median-based normalization calls it
    # "beyond typical" (the median group sits below the average in heavy tails); ours does not.
    n, fp_ours, paper_pos, fp_dir = 80, 0, 0, 0
    for s in range(n):
        m = prompt_pair_measures(_groups(20, 100 + s))
        fp_ours += perplexity_paper.pivotal_influence(m, "t", n_boot=300).verdict in (
            "supported", "contradicted")
        fp_dir += perplexity_paper.pivotal_direction(m, "t", n_boot=300).verdict in (
            "supported", "contradicted")
        paper_pos += claims.evaluate_claim(
            "paper", "h", "m", _paper_unsigned(_groups(20, 100 + s)), ("v", None,
                                                                        lambda a, _: a[:, 0]),
            "pair_id", +1, n_boot=300).verdict == "supported"
    assert fp_ours / n <= _bound(0.05, n) and fp_dir / n <= _bound(0.05, n)
    assert paper_pos / n > 0.5
    # power: 3x a typical group
    r = _rates(lambda s: prompt_pair_measures(_groups(20, 500 + s, piv_scale=3)),
               lambda d: perplexity_paper.pivotal_influence(d, "t", n_boot=300), 30)
    assert r["supported"] >= 0.8


def _paper_unsigned(g):
    """The paper's normalization on |ΔPPL|: mean pivotal share minus the median share."""
    d = np.abs(np.exp(g.s_incorrect) - np.exp(g.s_correct))
    g = g.assign(share=d / d.groupby([g.pair_id, g.wording, g.order]).transform("sum"))
    keys = ["pair_id", "wording", "order"]
    med = g.groupby(keys).share.median()
    piv = g[g.category == "pivotal"].groupby(keys).share.mean()
    return (piv - med).rename("v").reset_index()


def test_pivotal_carries_most():
    def plain(mean, s, n=40):
        r = np.random.default_rng(s)
        item = np.clip(mean + r.normal(0, 0.1, n), 0, 1)
        return pd.DataFrame({"task": "nonsense",
                             "pair_id": np.repeat(np.arange(n).astype(str), 8),
                             "plain_pivotal_ppl": np.clip(np.repeat(item, 8)
                                                          + r.normal(0, 0.1, 8 * n), 0, 1)})
    assert perplexity_paper.pivotal_carries_most(plain(0.8, 0), n_boot=300).verdict == "supported"
    assert perplexity_paper.pivotal_carries_most(plain(0.2, 0), n_boot=300).verdict == "contradicted"
    r = _rates(lambda s: plain(0.5, s), lambda d: perplexity_paper.pivotal_carries_most(d, n_boot=400), 150)
    assert r["supported"] + r["contradicted"] <= _bound(0.05, 150)
    assert _rates(lambda s: plain(0.56, s), lambda d: perplexity_paper.pivotal_carries_most(
        d, n_boot=400), 40)["supported"] >= 0.8


def test_markdown_names_unit_null_family_and_caveat():
    df = _xcomps(lambda l, *a: 0.9 if l == "en" else 0.6, n_items=40)
    t = claims.correct([xcomps_paper.english_advantage(df, n_boot=300)], "XCOMPS", "confirmatory")
    md = claims.claims_markdown(t)
    assert md.startswith("- **Supported** (direct): *accuracy is higher in English")
    assert "40 items. Null: English accuracy equals the other languages' mean; bootstrap " \
           "over items" in md
    assert "Family: XCOMPS (confirmatory, 1 test, Holm)" in md and "*Caveat:* the sample " in md
    table = claims.claims_table(t)
    assert table.loc[0, "half_width"] == pytest.approx((t[0].ci_high - t[0].ci_low) / 2)


def test_resource_trend_over_eighteen_languages():
    up = _xcomps(lambda l, m, r, t: 0.8 if r == "high" else 0.65, langs=LANGS18, lang_sd=0.1)
    t = xcomps_paper.resource_trend(up, n_boot=200)
    assert t.verdict == "supported" and t.unit == "language"
    down = _xcomps(lambda l, m, r, t: 0.65 if r == "high" else 0.8, langs=LANGS18, lang_sd=0.1)
    assert xcomps_paper.resource_trend(down, n_boot=200).verdict == "contradicted"
    kw = {"n_boot": 100, "n_perm": 499, "seed": 1}
    r = _rates(lambda s: _xcomps(lambda *a: 0.7, langs=LANGS18, seed=s, lang_sd=0.5),
               lambda d: xcomps_paper._type_trend("r", "h", d, "direct_correct", "resource_level",
                                            xcomps_paper.RESOURCE_ORDER, "morphology", +1,
                                            "property", **kw), 60)
    assert r["supported"] + r["contradicted"] <= _bound(0.05, 60)
    r = _rates(lambda s: _xcomps(lambda l, m, res, t: 0.8 if res == "high" else 0.7,
                                 langs=LANGS18, seed=s, lang_sd=0.15),
               lambda d: xcomps_paper._type_trend("r", "h", d, "direct_correct", "resource_level",
                                            xcomps_paper.RESOURCE_ORDER, "morphology", +1,
                                            "property", **kw), 30)
    assert r["supported"] >= 0.8


def _item_means(mean, s, n=40, per=8, item_sd=0.1, sd=0.2, col="v", task="t"):
    r = np.random.default_rng(s)
    item = mean + r.normal(0, item_sd, n)
    return pd.DataFrame({"task": task, "pair_id": np.repeat(np.arange(n).astype(str), per),
                         "property": np.repeat(np.arange(n).astype(str), per),
                         col: np.repeat(item, per) + r.normal(0, sd, n * per)})


@pytest.mark.parametrize("name", ["pivotal_direction", "concept_carries_most",
                                  "property_above_chance"])
def test_mean_claims_reach_both_outcomes_hold_their_null_and_have_power(name):
    from xcomps_utils import concept_prior as D

    if name == "pivotal_direction":
        col, null = "direction_pivotal_ppl", 0.0
        run = lambda d: perplexity_paper.pivotal_direction(d, "t", n_boot=300)  # noqa: E731
    elif name == "concept_carries_most":
        col, null = "plain_concept_s", 0.5
        run = lambda d: D.concept_carries_most(d, n_boot=300)  # noqa: E731
    else:
        col, null = "cond_correct", 0.5
        run = lambda d: D.property_above_chance(d, n_boot=300)  # noqa: E731

    def make(mean, s):
        d = _item_means(mean, s, col=col)
        if name == "property_above_chance":  # 0/1 decisions, right with probability `mean`
            p = np.clip(d[col], 0, 1)
            d[col] = (np.random.default_rng(s).random(len(d)) < p).astype(float)
        return d
    assert run(make(null + 0.3, 0)).verdict == "supported"
    assert run(make(null - 0.3, 1)).verdict == "contradicted"
    r = _rates(lambda s: make(null, 50 + s), run, 100)
    assert r["supported"] + r["contradicted"] <= _bound(0.05, 100)
    assert _rates(lambda s: make(null + 0.12, 500 + s), run, 30)["supported"] >= 0.8
