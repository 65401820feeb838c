"""BMLAMA at the language unit (xcomps_utils.analysis.bmlama_study), on synthetic frames with a known answer.

Pair frames imitate a Direct run on BMLAMA rows (a gold and 9 distractors per fact, candidate
priors shared across languages as lengths and frequencies are); language-level claims are fed
per-language values drawn with a family effect, a tier effect or neither, on a 53-language
typology shaped like BMLAMA-53's (7 high, 39 medium, 7 low; 30 Indo-European). Seeded, fast.
"""

import math

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import bmlama_study as B, claims
from xcomps_utils.analysis.claims import ALPHA
from xcomps_utils.analysis.families import correct
from xcomps_utils.lm.precision import decisions, near_ties


def _bound(p: float, n: int) -> float:
    """Nominal rate plus 3 simulation standard errors."""
    return p + 3 * math.sqrt(p * (1 - p) / n)


def _pairs(skill: dict, n_facts: int = 60, seed: int = 0, control: bool = False,
           gold_prior: float = 0.0, noise_seed: int | None = None, relation_effect=None,
           shared: float = 0.0, n_cand: int = 10, shared_prior: bool = True) -> pd.DataFrame:
    """Direct pairs: candidate k of fact f scores prior[f, k] + noise (per language) and the
    gold gets ``skill[lang]`` (+ ``gold_prior`` in every frame: a gold favoured by its length
    or frequency, which the control keeps). ``relation_effect``: per-relation gold boost in
    every language (relation = fact % 4); ``shared``: a per-fact knowledge shared by all
    languages; ``shared_prior=False``: every language draws its own candidate priors."""
    rng = np.random.default_rng(seed)
    prior = rng.normal(0, 1, (n_facts, n_cand))
    tokens = rng.integers(4, 8, (n_facts, n_cand))
    known = rng.normal(0, 1, n_facts)
    nrng = np.random.default_rng(seed + 1000 if noise_seed is None else noise_seed)
    rows = []
    for lang, s in skill.items():
        noise = nrng.normal(0, 1, (n_facts, n_cand))
        if not shared_prior:
            noise = noise + nrng.normal(0, 1, (n_facts, n_cand)) - prior
        for f in range(n_facts):
            g = f % n_cand
            sc = prior[f] + noise[f]
            sc[g] += gold_prior
            if not control:
                sc[g] += s + shared * known[f] + (relation_effect[f % 4] if relation_effect
                                                  else 0.0)
            for k in range(n_cand):
                if k != g:
                    rows.append({"lang": lang, "fact": f"f{f:03d}", "relation": f"r{f % 4}",
                                 "candidate": k, "gold_candidate": g,
                                 "direct_logprob_good": sc[g], "direct_logprob_bad": sc[k],
                                 "direct_logprob_mean_good": sc[g] / tokens[f, g],
                                 "direct_logprob_mean_bad": sc[k] / tokens[f, k],
                                 "direct_n_tokens_good": tokens[f, g],
                                 "direct_n_tokens_bad": tokens[f, k],
                                 "direct_near_tie_tolerance": 5.4e-4 * (tokens[f, g] +
                                                                         tokens[f, k])})
    return pd.DataFrame(rows)


def _typology53() -> pd.DataFrame:
    """53 languages: families and tiers shaped like BMLAMA-53's (tier correlated with family:
    high-resource languages in large families, low-resource ones mostly outside Indo-European)."""
    fams = (["ie"] * 30 + ["aa"] * 3 + ["ura"] * 3 + ["aus"] * 3 + ["tur"] * 2 + ["dra"] * 2
            + ["st", "jap", "kor", "aa2", "kar", "tk", "bas", "x1", "x2", "x3"])
    tiers = (["high"] * 4 + ["medium"] * 26                   # ie
             + ["high", "medium", "medium"]                     # aa
             + ["medium"] * 3 + ["medium", "low", "low"]        # ura, aus
             + ["medium", "low"] + ["medium", "low"]            # tur, dra
             + ["high", "high", "medium", "medium", "medium", "medium", "low", "low",
                "low", "medium"])
    langs = ["en"] + [f"l{k:02d}" for k in range(1, 53)]
    t = pd.DataFrame({"family": fams, "resource_tier": tiers}, index=langs)
    rng = np.random.default_rng(3)
    # a morphology index that varies inside families too
    t["morphology_index"] = rng.normal(0, 1, 53) + t["family"].map(
        {"ura": 1.0, "tur": 1.0, "jap": 1.0, "kor": 1.0}).fillna(0)
    # the same on [0, 1], as a share such as Grambank's bound inflection is
    mi = t["morphology_index"]
    t["morphology_share"] = (mi - mi.min()) / (mi.max() - mi.min())
    return t


def _typology17() -> pd.DataFrame:
    """The 17 BMLAMA-17 languages: families, the tiers of issue 28 and the XCOMPS paper's types."""
    fam = {"ar": "aa", "he": "aa", "hu": "ura", "ja": "jap", "ko": "kor", "tr": "tur",
           "vi": "aus", "zh": "st"}
    typ = {"en": "analytic", "vi": "analytic", "zh": "analytic", "hu": "agglutinative",
           "ja": "agglutinative", "ko": "agglutinative", "tr": "agglutinative"}
    langs = "ar ca el en es fa fr he hu ja ko nl ru tr uk vi zh".split()
    return pd.DataFrame({"family": [fam.get(l, "ie") for l in langs],
                         "resource_tier": ["high" if l in "ar en es fr ja zh".split()
                                           else "medium" for l in langs],
                         "paper_type": [typ.get(l, "inflected") for l in langs]}, index=langs)


def _values(typ: pd.DataFrame, rng, slope=0.0, family_sd=0.0, ie_effect=0.0, sd=0.05,
            col="resource_tier", order=B.TIER_ORDER) -> pd.DataFrame:
    fam = typ["family"].unique()
    f_eff = dict(zip(fam, rng.normal(0, family_sd, len(fam)) if family_sd else np.zeros(len(fam))))
    x = typ[col].map(order) if order else typ[col]
    v = (0.3 + slope * x.astype(float) + typ["family"].map(f_eff)
         + ie_effect * (typ["family"] == "ie") + rng.normal(0, sd, len(typ)))
    return pd.DataFrame({"beyond": v})


# --- pairs, facts, languages -------------------------------------------------------------------

def test_pair_decisions_are_precisions_rule_for_sums_and_scale_for_means():
    p = _pairs({"en": 0.5}, n_facts=20)
    p.loc[0, "direct_logprob_bad"] = p.loc[0, "direct_logprob_good"]                 # a tie
    p.loc[1, "direct_logprob_bad"] = p.loc[1, "direct_logprob_good"] - 1e-3          # near tie
    delta = p.direct_logprob_good - p.direct_logprob_bad
    n = p.direct_n_tokens_good + p.direct_n_tokens_bad
    run = pd.DataFrame({"direct_correct": (delta > 0).astype(float),
                        "direct_tie": (delta == 0).astype(float),
                        "direct_near_tie": near_ties(delta, "float32", n).astype(float)})
    mine = B.pair_decisions(p, "sum")
    assert (mine == decisions(run)).all()
    assert mine[0] == "tie" and mine[1] == "near_tie" and mine[2] in ("right", "wrong")
    # the mean's tolerance: two per-token errors, 2 x 5.4e-4 nats a token
    m = p.copy()
    m.loc[2, "direct_logprob_mean_bad"] = m.loc[2, "direct_logprob_mean_good"] - 1.0e-3
    m.loc[3, "direct_logprob_mean_bad"] = m.loc[3, "direct_logprob_mean_good"] - 1.2e-3
    dm = B.pair_decisions(m, "mean")
    assert dm[2] == "near_tie" and dm[3] == "right"
    with pytest.raises(ValueError, match="reduction"):
        B.pair_decisions(p, "median")


def test_fact_table_ranks_the_gold_and_keeps_near_ties_apart():
    p = _pairs({"en": 0.0}, n_facts=3)
    f0 = p.index[p.fact == "f000"]
    p.loc[f0, "direct_logprob_good"] = 0.0
    p.loc[f0, "direct_logprob_bad"] = -np.arange(1, 10, dtype=float)                 # gold first
    f1 = p.index[p.fact == "f001"]
    p.loc[f1, "direct_logprob_good"] = 0.0
    p.loc[f1, "direct_logprob_bad"] = [1.0, 2.0] + [-1.0] * 7                        # gold third
    f2 = p.index[p.fact == "f002"]
    p.loc[f2, "direct_logprob_good"] = 0.0
    p.loc[f2, "direct_logprob_bad"] = [-1e-4] + [-1.0] * 8                           # a near tie
    t = B.fact_table(p).set_index("fact")
    assert t.loc["f000", "top1_sum"] == 1 and t.loc["f000", "rank_sum"] == 1
    assert t.loc["f001", "top1_sum"] == 0 and t.loc["f001", "rank_sum"] == 3
    assert t.loc["f001", "pairwise_sum"] == pytest.approx(7 / 9)
    assert np.isnan(t.loc["f002", "top1_sum"]) and t.loc["f002", "decided_sum"] == 8
    assert t.loc["f002", "pairwise_sum"] == 1 and (t.n_candidates == 10).all()


def test_the_two_reductions_disagree_when_the_gold_is_longer():
    p = _pairs({"en": 0.0}, n_facts=1)
    p["direct_logprob_good"], p["direct_n_tokens_good"] = -12.0, 6       # -2 a token
    p["direct_logprob_bad"], p["direct_n_tokens_bad"] = -9.0, 3          # -3 a token
    p["direct_logprob_mean_good"] = -2.0
    p["direct_logprob_mean_bad"] = -3.0
    t = B.fact_table(p).iloc[0]
    assert t.top1_sum == 0 and t.top1_mean == 1


def test_chance_is_drawn_from_the_control_and_accuracy_read_beyond_it():
    # a gold favoured by its length/frequency: high accuracy with no knowledge at all
    skill = {"en": 0.0, "fr": 2.5}
    real = _pairs(skill, n_facts=120, gold_prior=2.0)
    ctl = _pairs(skill, n_facts=120, gold_prior=2.0, control=True, noise_seed=7)
    t = B.language_table(real, ctl, reduction="sum", n_boot=400)
    assert t.loc["en", "control_accuracy"] > 0.25 > t.loc["en", "chance_exchangeable"]
    assert t.loc["en", "accuracy"] > 0.25                   # would pass for knowledge vs 1/10
    assert t.loc["en", "beyond_low"] < 0 < t.loc["en", "beyond_high"]           # it is none
    assert t.loc["fr", "beyond_low"] > 0.2                                       # this is some
    assert t.loc["fr", "ci_low"] <= t.loc["fr", "accuracy"] <= t.loc["fr", "ci_high"]
    assert ((t.n_facts > 110) & (t.n_facts <= 120)).all()     # near ties are no decision


# --- language-level claims -------------------------------------------------------------------

def test_resource_trend_reaches_supported_and_contradicted_and_is_decidable_on_17():
    typ = _typology53()
    rng = np.random.default_rng(0)
    up = B.resource_trend(_values(typ, rng, slope=0.1), typ, n_perm=999)
    down = B.resource_trend(_values(typ, rng, slope=-0.1), typ, n_perm=999)
    assert up.verdict == "supported" and down.verdict == "contradicted"
    assert up.unit == "language" and up.n_items == 53 and "within its family" in \
        up.null_hypothesis
    t17 = _typology17()
    r17 = B.resource_trend(_values(t17, rng, slope=0.2, sd=0.02), t17)
    # within families: 84 labelings in Indo-European x 2 in Afro-Asiatic, exact
    assert "168 distinct" in r17.test and r17.smallest_p == pytest.approx(1 / 168)
    assert r17.verdict == "supported"


@pytest.mark.slow  # a simulation over many data sets (issue 29)
def test_resource_trend_null_rate_power_and_the_family_trap():
    typ = _typology53()
    rng = np.random.default_rng(1)
    n = 150
    # a trend claimed where there is none (equivalent is the right answer to a zero slope)
    wrong = ("supported", "contradicted")
    null = [B.resource_trend(_values(typ, rng, family_sd=0.05), typ, n_perm=199, seed=k)
            for k in range(n)]
    assert np.mean([t.verdict in wrong for t in null]) <= _bound(ALPHA, n)
    # the trap: a family effect (Indo-European better known), no tier effect at all
    fam_tests = {s: [] for s in ("family", None)}
    for k in range(n):
        v = _values(typ, rng, ie_effect=0.15, sd=0.05)
        for s in fam_tests:
            fam_tests[s].append(B.resource_trend(v, typ, strata=s, n_perm=199, seed=k).verdict
                                in wrong)
    assert np.mean(fam_tests["family"]) <= _bound(ALPHA, n)
    assert np.mean(fam_tests[None]) > 0.2          # the plain permutation decides it
    # power at the stated effect: the minimum detectable slope of the within-family design
    x = typ["resource_tier"].map(B.TIER_ORDER).to_numpy(float)
    mde = B.minimum_detectable_effect(53, 0.05, "slope", x=x, strata=typ["family"].to_numpy())
    hits = [B.resource_trend(_values(typ, rng, slope=mde), typ, n_perm=199, seed=k).verdict
            == "supported" for k in range(100)]
    assert np.mean(hits) >= 0.8 - 3 * math.sqrt(0.16 / 100)


@pytest.mark.slow  # a simulation over many data sets (issue 29)
def test_resource_trend_equivalence_is_reachable_and_rarely_wrong_at_the_margin():
    """The equivalence branch (the permutation test inverted at ±0.05 per tier step): a zero
    slope over 53 precisely measured languages is shown equivalent; one of exactly the margin is
    shown equivalent at most at the one-sided level (0.025); one of 0.15 is supported, never
    equivalent; with the margin left out the test cannot say equivalent at all."""
    typ = _typology53()
    rng = np.random.default_rng(4)
    flat = [B.resource_trend(_values(typ, rng, sd=0.01), typ, n_perm=199, seed=k)
            for k in range(40)]
    assert np.mean([t.verdict == "equivalent" for t in flat]) >= 0.8
    t = flat[0]
    assert t.sesoi == t.margin == 0.05 and 0 < t.p_equivalent <= 0.025
    edge = [B.resource_trend(_values(typ, rng, slope=0.05, sd=0.05), typ, n_perm=199,
                             seed=k).verdict for k in range(150)]
    assert np.mean([v == "equivalent" for v in edge]) <= _bound(ALPHA / 2, 150)
    steep = B.resource_trend(_values(typ, rng, slope=0.15, sd=0.02), typ, n_perm=199)
    assert steep.verdict == "supported" and steep.p_equivalent > 0.5
    bare = B.resource_trend(_values(typ, rng, sd=0.01), typ, n_perm=199, sesoi=None)
    assert bare.verdict == "inconclusive" and not np.isfinite(bare.p_equivalent)


@pytest.mark.slow  # a simulation over many data sets (issue 29)
def test_morphology_trend_over_a_share_falls_into_no_family_trap():
    """The trap of the morphology trend over 53 languages: the families richest in bound
    inflection (Uralic, Turkic, Japanese, Korean here) are also less well known, with no slope
    inside any family. The plain permutation then calls the trend supported; the within-family
    test keeps its false decisions at the level and can still show the trend absent."""
    typ = _typology53()
    rng = np.random.default_rng(12)
    heavy = typ["family"].isin(["ura", "tur", "jap", "kor"])
    wrong = ("supported", "contradicted")
    got = {"family": [], None: []}
    for k in range(100):
        v = _values(typ, rng, sd=0.05)
        v["beyond"] -= 0.15 * heavy
        for s in got:
            got[s].append(B.morphology_trend(v, typ, label="morphology_share", strata=s,
                                             n_perm=199, seed=k).verdict)
    assert np.mean([x in wrong for x in got["family"]]) <= _bound(ALPHA, 100)
    assert np.mean([x == "equivalent" for x in got["family"]]) > 0.05
    assert np.mean([x == "supported" for x in got[None]]) > 0.1      # the trap, taken


def test_trend_interval_is_the_test_inverted_and_covers_the_true_slope():
    """A trend's interval is the slopes its own permutation test does not reject: it excludes 0
    exactly when the test decides at the 5% level, lies inside ±margin exactly when the trend is
    shown equivalent, covers the true slope of an additive trend about 95% of the time, and is
    left out (NaN) where no relabeling can decide (the paper's types within families)."""
    typ = _typology53()
    rng = np.random.default_rng(8)
    covered, agree = [], []
    for k in range(100):
        t = B.resource_trend(_values(typ, rng, slope=0.03, sd=0.04), typ, n_perm=199, seed=k)
        lo, hi = t.ci_low, t.ci_high
        assert lo <= t.effect <= hi or not (lo <= hi)
        covered.append(lo <= 0.03 <= hi)
        two_sided = 2 * min(t.p_supported, t.p_contradicted)
        agree.append((lo > 0 or hi < 0) == (two_sided <= 0.05))
        agree.append((t.verdict == "equivalent") == (-0.05 < lo and hi < 0.05))
        # the vectorized test at slope 0 is the trend's own test, draw for draw
        assert t.interval_at.p(0.0)[0] == pytest.approx(t.p_supported)
    assert np.mean(covered) >= 1 - _bound(ALPHA, 100) and np.mean(covered) < 1
    assert all(agree)
    # at another level the interval narrows or widens with it
    lo90, hi90 = t.interval_at(0.10)
    lo99, hi99 = t.interval_at(0.01)
    assert lo99 <= t.ci_low <= lo90 and hi90 <= t.ci_high <= hi99
    from xcomps_utils.analysis import claims, report
    assert "*description* [" not in report.claims_markdown([t])
    # in a family, the interval at the level Holm's correction gave a trend is the one its
    # verdict reads: it excludes 0 exactly when the trend is decided
    checked = 0
    for k, slope in enumerate((0.0, 0.02, 0.04, 0.08)):
        v = _values(typ, rng, slope=slope, sd=0.04)
        v["beyond"] -= 0.1 * typ["morphology_share"]
        for t in B.language_claims(v, typ, "s", "beyond", "morphology_share", n_perm=199,
                                   seed=k)[0]:
            if t.claim in ("resource_trend", "morphology_trend") and t.family_size > 1:
                checked += 1
                assert (t.adj_low > 0 or t.adj_high < 0) == (
                    t.verdict in ("supported", "contradicted"))
    assert checked >= 6
    labs, exact = claims.relabelings(np.array(list("abab"), object), np.array([0, 0, 1, 1]))
    assert exact and labs.shape == (4, 4)       # 2 orders in each of two strata
    labs, exact = claims.relabelings(np.arange(30).astype(object), n_perm=50, seed=1)
    assert not exact and labs.shape == (50, 30)
    assert all(sorted(r) == list(range(30)) for r in labs)
    t17 = _typology17()
    types = B.morphology_trend(_values(t17, rng, col="paper_type", order=B.TYPE_ORDER), t17)
    assert types.verdict == "cannot be decided"
    assert np.isnan(types.ci_low) and np.isnan(types.ci_high)
    # where no relabeling decides, the plain least-squares slope describes, and says so
    d = t17.join(_values(t17, np.random.default_rng(0), col="paper_type", order=B.TYPE_ORDER))
    assert types.measure.startswith("least-squares slope") and "a description" in types.measure
    one = B.morphology_trend(d[["beyond"]], t17)
    assert one.effect == pytest.approx(claims.slope(d["beyond"].to_numpy(),
                                                d["paper_type"].map(B.TYPE_ORDER).to_numpy()))


def test_one_language_with_a_signal_does_not_make_a_trend():
    typ = _typology53()
    rng = np.random.default_rng(2)
    v = _values(typ, rng)
    v.loc["en", "beyond"] += 1.0                 # English (high tier) far above everyone
    t = B.resource_trend(v, typ, n_perm=999)
    assert t.verdict != "supported" and t.p_supported > 0.025
    # the slope printed is the test's own estimate: one language does not move it either
    assert abs(t.effect) < 0.02 and t.ci_low < t.effect < t.ci_high
    assert claims.slope(v["beyond"].to_numpy(), typ.resource_tier.map(B.TIER_ORDER)) > 0.05   # OLS
    hits = []
    for k in range(60):                          # on ranks, one language stays one rank
        w = _values(typ, rng)
        w.loc["en", "beyond"] += 1.0
        hits.append(B.resource_trend(w, typ, n_perm=199, seed=k).verdict == "supported")
    assert np.mean(hits) <= _bound(ALPHA, 60)
    # ... but it is what English's rank is about, at 53 languages, and not at 17
    assert B.english_rank(v).verdict == "supported"
    t17 = _typology17()
    v17 = _values(t17, rng)
    v17.loc["en", "beyond"] += 1.0
    e17 = B.english_rank(v17)
    assert e17.verdict == "cannot be decided" and e17.smallest_p == pytest.approx(1 / 17)


def test_english_rank_null_rate_at_53():
    typ = _typology53()
    rng = np.random.default_rng(4)
    n = 300
    hits = [B.english_rank(_values(typ, rng, family_sd=0.05)).verdict != "inconclusive"
            for _ in range(n)]
    assert np.mean(hits) <= _bound(ALPHA, n)


def test_morphology_on_the_papers_17_types_cannot_be_decided_within_families():
    t17 = _typology17()
    rng = np.random.default_rng(5)
    v = _values(t17, rng, slope=-0.2, sd=0.01, col="paper_type", order=B.TYPE_ORDER)
    m = B.morphology_trend(v, t17)
    # inside families only Indo-European varies (English analytic): 9 labelings
    assert m.verdict == "cannot be decided" and m.smallest_p == pytest.approx(1 / 9)
    free = B.morphology_trend(v, t17, strata=None)
    assert free.verdict == "supported"
    typ = _typology53()
    v53 = _values(typ, rng, slope=-0.2, sd=0.05, col="morphology_share", order=None)
    assert B.morphology_trend(v53, typ, label="morphology_share", n_perm=999).verdict == \
        "supported"
    # the margin is per unit of a [0, 1] label: an index on another scale is refused, with how
    with pytest.raises(ValueError, match="rescale 'morphology_index' to \\[0, 1\\]"):
        B.morphology_trend(v53, typ, label="morphology_index", n_perm=99)
    bare = B.morphology_trend(v53, typ, label="morphology_index", n_perm=99, sesoi=None)
    assert bare.sesoi is None and not np.isfinite(bare.p_equivalent)


@pytest.mark.slow  # a simulation of the decision rule (the slow tier's rule)
def test_morphology_trend_equivalence_over_a_share_is_reachable_and_rarely_wrong():
    """The morphology trend's equivalence branch, at ±0.10 from a [0, 1] label's one end to the
    other: no trend over 53 precisely measured languages is shown equivalent; a trend of exactly
    the margin (either sign) is shown equivalent at most at the one-sided level; a steep one in
    the predicted direction is supported, never equivalent. The paper's types are read on the
    same [0, 1] scale, and their few within-family relabelings still decide nothing."""
    typ = _typology53()
    rng = np.random.default_rng(11)
    flat = [B.morphology_trend(_values(typ, rng, sd=0.005, col="morphology_share", order=None),
                               typ, label="morphology_share", n_perm=199, seed=k)
            for k in range(30)]
    assert np.mean([t.verdict == "equivalent" for t in flat]) >= 0.8
    assert flat[0].sesoi == flat[0].margin == 0.1
    for slope in (-0.1, 0.1):
        # noisy enough that the margin is hard to tell (a third or so left inconclusive)
        edge = [B.morphology_trend(_values(typ, rng, slope=slope, sd=0.05,
                                           col="morphology_share", order=None),
                                   typ, label="morphology_share", n_perm=199, seed=k).verdict
                for k in range(100)]
        assert np.mean([v == "equivalent" for v in edge]) <= _bound(ALPHA / 2, 100)
        assert np.mean([v == "inconclusive" for v in edge]) > 0.15
        # a trend of the margin is found on its side: supported (predicted negative) or
        # contradicted
        assert ("supported" if slope < 0 else "contradicted") in edge
    steep = B.morphology_trend(_values(typ, rng, slope=-0.4, sd=0.02, col="morphology_share",
                                       order=None), typ, label="morphology_share", n_perm=199)
    assert steep.verdict == "supported" and steep.effect < -0.3 and steep.p_equivalent > 0.5
    t17 = _typology17()
    types = B.morphology_trend(_values(t17, rng, sd=0.001, col="paper_type",
                                       order=B.TYPE_ORDER), t17)
    assert types.verdict == "cannot be decided" and types.sesoi == 0.1
    assert "analytic 0 to agglutinative 1" in types.measure


@pytest.mark.slow  # a simulation over many data sets (issue 29)
def test_methods_track_null_with_shared_family_effects_and_power():
    typ = _typology53()
    rng = np.random.default_rng(6)
    n = 100
    within, plain, power = [], [], []
    r_mde = B.minimum_detectable_effect(53, 0.05, "correlation")
    for k in range(n):
        fam = dict(zip(typ.family.unique(), rng.normal(0, 1, typ.family.nunique())))
        f = typ.family.map(fam)
        a = pd.Series(f + rng.normal(0, 0.5, 53), index=typ.index)     # both share the family
        b = pd.Series(f + rng.normal(0, 0.5, 53), index=typ.index)
        within.append(B.methods_track(a, b, typ, n_perm=99, seed=k).verdict != "inconclusive")
        plain.append(B.methods_track(a, b, typ, strata=None, n_perm=99, seed=k).verdict
                     != "inconclusive")
        z = rng.normal(0, 1, 53)
        c = pd.Series(z, index=typ.index)
        d = pd.Series(r_mde * z + math.sqrt(1 - r_mde ** 2) * rng.normal(0, 1, 53),
                      index=typ.index)
        power.append(B.methods_track(c, d, typ, strata=None, n_perm=99, seed=k).verdict
                     == "supported")
    assert np.mean(within) <= _bound(ALPHA, n)
    assert np.mean(plain) > 0.5
    assert np.mean(power) >= 0.8 - 3 * math.sqrt(0.16 / n)


def test_minimum_detectable_effect_matches_the_simulated_power():
    from scipy import stats

    x = np.r_[np.zeros(7), np.ones(39), 2 * np.ones(7)]
    mde = B.minimum_detectable_effect(53, 0.1, "slope", x=x)
    rng = np.random.default_rng(8)
    hits = [stats.linregress(x, mde * x + rng.normal(0, 0.1, 53)).pvalue < ALPHA
            for _ in range(400)]
    assert abs(np.mean(hits) - 0.8) < 0.06
    assert B.minimum_detectable_effect(17, 0.1, "rank") == math.inf
    assert 0 < B.minimum_detectable_effect(53, 0.1, "rank") < 0.5
    assert B.minimum_detectable_effect(17, 0.1, "correlation") > \
        B.minimum_detectable_effect(53, 0.1, "correlation")
    with pytest.raises(ValueError):
        B.minimum_detectable_effect(53, 0.1, "median")


# --- consistency ---------------------------------------------------------------------------------

def _rankc_loop(a: np.ndarray, b: np.ndarray) -> float:
    """The authors' loop (RankC.py): rankings as candidate lists, overlaps by list index."""
    n = a.shape[1]
    order = np.array([n - i for i in range(n)], float)
    w = np.exp(order) / np.exp(order).sum()
    total = 0.0
    for fa, fb in zip(a, b):
        ra, rb = list(np.argsort(-fa, kind="stable")), list(np.argsort(-fb, kind="stable"))
        for j in range(n):
            total += w[j] * len(set(ra[:j + 1]) & set(rb[:j + 1])) / (j + 1)
    return total / len(a)


def test_rankc_is_the_authors_formula():
    rng = np.random.default_rng(9)
    a, b = rng.normal(size=(50, 10)), rng.normal(size=(50, 10))
    assert B.rankc(a, b) == pytest.approx(_rankc_loop(a, b))
    assert B.rankc(a, a) == pytest.approx(1.0)
    assert B.rankc(a, -a) < 0.05
    # independent rankings: the expected overlap share at k is k / n
    chance = float(B.rankc_weights(10) @ (np.arange(1, 11) / 10))
    assert B.rankc(a, b) == pytest.approx(chance, abs=0.05)
    with pytest.raises(ValueError):
        B.rankc(a, b[:, :9])


def test_rankc_beyond_its_chance_tracks_shared_knowledge():
    kw = dict(n_facts=150, shared_prior=False)
    none = B.rankc_table(_pairs({"en": 3.0, "fr": 3.0}, **kw), n_perm=99)
    some = B.rankc_table(_pairs({"en": 3.0, "fr": 3.0}, shared=2.0, **kw), n_perm=99)
    # equal accuracy, nothing shared: RankC is high (both rank the gold first) but at its chance
    chance = float(B.rankc_weights(10) @ (np.arange(1, 11) / 10))
    assert none.rankc.iloc[0] > chance + 0.1
    assert none.rankc_beyond.iloc[0] == pytest.approx(0, abs=0.03)
    assert some.rankc_beyond.iloc[0] > 0.05
    # the candidates' shared priors alone (the control: no fact at all) are consistency too
    ctl = B.rankc_table(_pairs({"en": 0.0, "fr": 0.0}, n_facts=150, control=True), n_perm=99)
    assert ctl.rankc_beyond.iloc[0] > 0.1


def test_agreement_kappa_within_relation_ignores_a_relation_effect():
    eff = [3.0, -3.0, 3.0, -3.0]                # some relations easy in every language
    p = _pairs({"en": 0.0, "fr": 0.0, "vi": 0.0}, n_facts=160, relation_effect=eff,
               shared_prior=False)
    facts = B.fact_table(p).merge(p[["lang", "fact", "relation"]].drop_duplicates(),
                                  on=["lang", "fact"])
    within = B.agreement_kappas(facts, "sum", stratum="relation", n_boot=200)
    assert within.table.kappa.mean() == pytest.approx(0, abs=0.12)
    assert within.table.kappa_pooled.mean() > 0.3


def _pair_table(langs, fam, rng, hub=None, same_effect=0.0):
    rows = []
    for a, b in [(x, y) for i, x in enumerate(langs) for y in langs[i + 1:]]:
        v = rng.normal(0.3, 0.05) + same_effect * (fam[a] == fam[b])
        if hub in (a, b):
            v += 0.3
        rows.append({"lang_a": a, "lang_b": b, "rankc": v})
    return pd.DataFrame(rows)


def test_consistency_follows_family_permutes_languages_not_pairs():
    typ = _typology17()
    langs = list(typ.index)
    fam = typ.family
    rng = np.random.default_rng(10)
    n = 100
    lang_level, pair_level = [], []
    for k in range(n):
        t = _pair_table(langs, fam, rng, hub="en")     # one language consistent with everyone
        lang_level.append(B.consistency_follows(t, fam, n_perm=99, seed=k).verdict
                          != "inconclusive")
        same = (t.lang_a.map(fam) == t.lang_b.map(fam)).to_numpy()
        obs = t.rankc[same].mean() - t.rankc[~same].mean()
        null = [t.rankc.to_numpy()[s].mean() - t.rankc.to_numpy()[~s].mean()
                for s in (rng.permutation(same) for _ in range(199))]
        p = (1 + np.sum(np.array(null) >= obs)) / 200
        pair_level.append(min(p, 1 - p + 1 / 200) <= 0.025)
    assert np.mean(lang_level) <= _bound(ALPHA, n)
    assert np.mean(pair_level) > np.mean(lang_level) + 0.1
    real = B.consistency_follows(_pair_table(langs, fam, rng, same_effect=0.1), fam, n_perm=999)
    assert real.verdict == "supported" and real.unit == "language" and real.n_items == 17


def test_correct_families_groups_by_scope_and_role_and_drops_undecidable():
    typ17 = _typology17()
    rng = np.random.default_rng(11)
    v = _values(typ17, rng, slope=0.2, sd=0.02)
    tests = [B.resource_trend(v, typ17, scope="17, gemma"), B.english_rank(v, scope="17, gemma"),
             B.consistency_follows(_pair_table(list(typ17.index), typ17.family, rng, same_effect=0.1),
                                   typ17.family, n_perm=999, scope="17, gemma")]
    out = B.correct_families(tests)
    assert [t.claim for t in out] == [t.claim for t in tests]
    assert out[0].role == "confirmatory" and out[2].role == "exploratory"
    assert out[1].verdict == "cannot be decided" and out[0].family_size == 1   # Tarone
    assert out[0].family == "BMLAMA, primary claims (17, gemma)"
    assert out[2].family == "BMLAMA, other claims (17, gemma)"
    assert out[0].verdict == correct([tests[0]], "x", "confirmatory")[0].verdict == "supported"


# --- the chapter's glue: scored pairs, spread and noise, sizes, the claims of one scope -------

def test_scored_pairs_joins_a_runs_measures_in_this_modules_columns():
    pairs = pd.DataFrame({"lang": ["en"] * 3, "pair_id": ["0:0", "0:1", "0:3"], "fact": [0] * 3,
                          "candidate": ["Rome", "Oslo", "Bern"], "candidate_index": [0, 1, 3],
                          "gold_index": [2] * 3, "distractor_true": [False, True, False]})
    rows = []
    for pid, g, b in (("0:0", -10.0, -12.0), ("0:1", -10.0, -9.0), ("0:3", -10.0, -10.0)):
        for m, v in (("logprob_good", g), ("logprob_bad", b), ("logprob_mean_good", g / 4),
                     ("logprob_mean_bad", b / 4), ("n_tokens_good", 4), ("n_tokens_bad", 4),
                     ("correct", float(g > b)), ("tie", float(g == b)), ("near_tie", 0.0),
                     ("near_tie_tolerance", 1e-3)):
            rows.append({"method": "direct", "lang": "en", "pair_id": pid, "order": "",
                         "measure": m, "value": v})
    s = B.scored_pairs(pd.DataFrame(rows), pairs)
    assert list(s.candidate) == [0, 1, 3] and (s.gold_candidate == 2).all()
    assert list(s.candidate_text) == ["Rome", "Oslo", "Bern"]
    assert list(s.direct_decision) == ["right", "wrong", "tie"]
    f = B.fact_table(s[~s.distractor_true])                 # the true distractor left out
    assert f.loc[0, "top1_sum"] != f.loc[0, "top1_sum"] and f.loc[0, "pairwise_sum"] == 1.0
    with pytest.raises(ValueError, match="Direct"):
        B.scored_pairs(pd.DataFrame(rows).assign(method="meta"), pairs)


def test_spread_and_noise_recovers_the_spread_between_languages_and_sizes_follow():
    rng = np.random.default_rng(5)
    true = rng.normal(0.3, 0.1, 400)                       # between-language sd 0.1
    se = 0.08
    obs = true + rng.normal(0, se, 400)
    t = pd.DataFrame({"v": obs, "v_low": obs - 1.96 * se, "v_high": obs + 1.96 * se})
    sn = B.spread_and_noise(t, "v", "v_low", "v_high")
    assert abs(sn["mean_se"] - se) < 1e-5 and abs(sn["between_sd"] - 0.1) < 0.015
    assert sn["observed_sd"] > sn["between_sd"]
    # se 0.08 at 10 facts, half the spread (0.05) wanted: 10 * (0.08 / 0.05)^2 = 25.6 -> 26
    assert B.facts_for_power(0.08, 10, 0.1) == 26
    assert B.facts_for_power(0.01, 10, 0.1) == 1 and B.facts_for_power(0.1, 10, 0.0) == 10 ** 9
    with pytest.raises(ValueError):
        B.facts_for_power(0.1, 0, 0.1)


def test_language_claims_name_what_they_leave_out_and_form_the_declared_families():
    typ17 = _typology17()
    rng = np.random.default_rng(2)
    v = _values(typ17, rng, slope=0.2, sd=0.02)
    tests, skipped = B.language_claims(v, typ17, "17, m", "beyond", n_perm=999)
    assert [t.claim for t in tests] == ["resource_trend", "morphology_trend", "english_rank"]
    assert {t.family for t in tests} == {"BMLAMA, primary claims (17, m)"}
    assert tests[0].verdict == "supported" and skipped == []
    assert tests[2].verdict == "cannot be decided"          # English's place: 1/17 > 0.025
    # one tier only and no English: those claims are named, not tested, not an error
    one = typ17.assign(resource_tier="medium").drop(index="en")
    tests, skipped = B.language_claims(v.drop(index="en"), one, "17, m", "beyond", n_perm=999)
    assert [t.claim for t in tests] == ["morphology_trend"]
    assert len(skipped) == 2 and any("resource_trend" in s for s in skipped)
    assert any("english_rank" in s for s in skipped)


def test_power_table_reads_the_spread_and_prints_the_sizes():
    rng = np.random.default_rng(9)
    lang = [f"l{k}" for k in range(30)]
    v = rng.normal(0.2, 0.1, 30)
    t = pd.DataFrame({"pairwise_beyond": v, "pairwise_beyond_low": v - 0.098,
                      "pairwise_beyond_high": v + 0.098}, index=lang)
    p = B.power_table({"m": t}, 10, (17, 53))
    assert list(p.languages) == [17, 53] and (p.facts_now == 10).all()
    assert (p.mde_resource_slope.iloc[0] > p.mde_resource_slope.iloc[1])   # more languages
    assert math.isinf(p.mde_english.iloc[0]) and math.isinf(p.mde_english_alone.iloc[0])
    # 53 languages: decidable as a family of its own, not at the level of a family of three
    assert math.isinf(p.mde_english.iloc[1]) and p.mde_english_alone.iloc[1] < 1
    alone = B.power_table({"m": t}, 10, (53,), family_size=1)
    assert alone.mde_english.iloc[0] == pytest.approx(p.mde_english_alone.iloc[1])
    # a spread lost in the noise: sizes planned for the smallest spread worth measuring (0.05)
    flat = t.assign(pairwise_beyond=0.2, pairwise_beyond_low=0.1, pairwise_beyond_high=0.3)
    q = B.power_table({"m": flat}, 10, (17,))
    assert q.between_sd.iloc[0] == 0 and q.planned_sd.iloc[0] == 0.05
    assert q.facts_needed.iloc[0] == B.facts_for_power(q.mean_se.iloc[0], 10, 0.05)
    assert np.isfinite(q.mde_resource_slope.iloc[0])
    # below the deciding size the noise is larger than planned: a larger trend is needed now
    assert q.facts_needed.iloc[0] > 10
    assert q.mde_resource_slope_now.iloc[0] > q.mde_resource_slope.iloc[0]
    from xcomps_utils.analysis import bmlama_scoring
    cost = pd.DataFrame({"benchmark": ["b"], "model": ["m"], "minutes_at": [5.0]})
    line = bmlama_scoring.size_summary(q.assign(benchmark="b"), cost)
    assert f"{q.mde_resource_slope_now.iloc[0]:.3f} per tier step: a smaller one" in line
    # facts without end remove each language's error, not the languages' own spread: the trend
    # 17 languages detect stops at the limit of the planned spread, below the deciding size's
    lim = q.mde_resource_slope_limit.iloc[0]
    assert lim == pytest.approx(B.minimum_detectable_effect(17, 0.05, "slope"))
    assert lim < q.mde_resource_slope.iloc[0] < q.mde_resource_slope_now.iloc[0]
    assert f"No number of facts goes below {lim:.3f}" in line
    k = int(q.languages_to_decide_slope.iloc[0])
    assert f"would take about {k:,} languages measured without error" in line
    assert "r = 0.3 either way" in line and "about 131 languages" in line
    assert "no size of these data decides it." in line
    # 53 languages with an equivalence test: enough facts decide the trend; 17 never do
    both = B.power_table({"m": flat}, 10, (17, 53))
    f17, f53 = both.facts_to_decide_slope
    assert math.isinf(f17) and 10 < f53 < 10 ** 4
    text = bmlama_scoring.size_summary(both.assign(benchmark="b"), cost)
    assert f"53 languages would do it at about {int(f53):,} facts a language" in text
    assert "; 17 languages are too few at any number of facts." in text
    # the morphology trend's sentence: beyond the benchmark, or within reach
    far = bmlama_scoring.size_summary(both.assign(benchmark="b"), cost, (63, 45))
    assert far.endswith("about 63 languages measured without error, spread over the index as "
                        "these are (a plain permutation; the page's, within families, needs "
                        "more); no benchmark here has more than 53: no size of these data "
                        "decides it.")
    near = bmlama_scoring.size_summary(both.assign(benchmark="b"), cost, (40, 45))
    assert near.endswith("needs more).")
    assert p.facts_needed.iloc[0] == B.facts_for_power(p.mean_se.iloc[0], 10,
                                                        p.between_sd.iloc[0])


def test_languages_to_decide_is_the_first_size_whose_detectable_effect_is_half_the_sesoi():
    """The inverse of minimum_detectable_effect at sesoi / 2: one language fewer detects only a
    larger effect; a spread twice as wide needs about four times the languages."""
    for kind, sd in (("slope", 0.05), ("correlation", 0.0)):
        sesoi = 0.05 if kind == "slope" else 0.3
        n = B.languages_to_decide(sesoi, sd, kind)
        assert (B.minimum_detectable_effect(n, sd, kind, power=0.4) <= sesoi / 2
                < B.minimum_detectable_effect(n - 1, sd, kind, power=0.4))
    one = B.languages_to_decide(0.05, 0.05)
    assert 3.5 < B.languages_to_decide(0.05, 0.1) / one < 4.5
    # a correlation of 0.3, hardest at 0.15, each decision with probability 0.4:
    # 3 + ((z_.975 + z_.4) / atanh(0.15))^2
    from scipy import stats
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.4)
    k = B.languages_to_decide(0.3, kind="correlation")
    assert k == math.ceil(3 + (z / math.atanh(0.15)) ** 2)
    # simulated: k languages with a true r of 0.15 decide it (Fisher interval above 0, or inside
    # ±0.3) in about 80% of draws (a little more: Fisher's z is not symmetric about 0.15); at 53
    # languages, far less
    rng = np.random.default_rng(5)

    def decided(n, r=0.15, sims=3000):
        a = rng.normal(size=(sims, n))
        b = r * a + math.sqrt(1 - r * r) * rng.normal(size=(sims, n))
        rr = np.array([np.corrcoef(x, y)[0, 1] for x, y in zip(a, b)])
        w = stats.norm.ppf(0.975) / math.sqrt(n - 3)
        lo, hi = np.tanh(np.arctanh(rr) - w), np.tanh(np.arctanh(rr) + w)
        return np.mean((lo > 0) | ((lo > -0.3) & (hi < 0.3)))
    assert 0.78 < decided(k) < 0.87
    assert decided(53) < 0.6
    assert B.languages_to_decide(0.05, 10.0, most=100) == 101
    with pytest.raises(ValueError):
        B.languages_to_decide(0.0)
    # spread over a label as x is: its n quantiles; a label twice as spread needs about a
    # quarter of the languages, and a label with one value cannot decide anything
    x = np.random.default_rng(2).uniform(0.2, 0.8, 45)
    n = B.languages_to_decide(0.1, 0.05, x=x)
    design = np.quantile(x, (np.arange(n) + 0.5) / n)
    assert B.minimum_detectable_effect(n, 0.05, x=design, power=0.4) <= 0.05
    assert 3.5 < n / B.languages_to_decide(0.1, 0.05, x=2 * x) < 4.5
    with pytest.raises(ValueError, match="two distinct"):
        B.languages_to_decide(0.1, 0.05, x=np.full(5, 0.5))


def test_consistency_table_sets_rankc_beside_kappa_within_relation():
    eff = [3.0, -3.0, 3.0, -3.0]                # relations easy or hard in every language
    p = _pairs({"en": 0.0, "fr": 0.0, "vi": 0.0}, n_facts=160, relation_effect=eff,
               shared_prior=False).assign(distractor_true=False)
    t = B.consistency_table(p, "sum", n_perm=49, n_boot=100)
    assert list(t[["lang_a", "lang_b"]].itertuples(index=False, name=None)) == [
        ("en", "fr"), ("en", "vi"), ("fr", "vi")]
    assert t.kappa.abs().max() < 0.15                    # the relation effect is not agreement
    assert (t.rankc_beyond > 0.05).all()                # but RankC sees the shared relation ranks
    ref = B.rankc_table(p, "sum", n_perm=49)
    assert np.allclose(t.rankc, ref.rankc)
    # a true distractor is left out of kappa (its fact's top-1 no longer depends on it)
    q = p.assign(distractor_true=p.candidate == (p.gold_candidate + 1) % 10)
    assert not B.consistency_table(q, "sum", n_perm=9, n_boot=50).kappa.isna().any()
