"""The grammar chapter's analysis on synthetic frames: the three score conventions (sum, mean,
per byte), the pivot's per-token share and length-matched influence, and the per-language pivot
claims (each outcome reachable, a true null rarely decided)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import families, grammar_study
from xcomps_utils.lm.token_scores import TokenScores, token_table


# ------------------------------------------------------------------------------ conventions

def _scored(good, bad, lg, lb, ng, nb, tol=0.0, correct=None):
    return pd.DataFrame({
        "family": "MultiBLiMP", "lang": "en", "item": [f"t:{i}" for i in range(len(good))],
        "good": good, "bad": bad, "direct_logprob_good": lg, "direct_logprob_bad": lb,
        "direct_logprob_mean_good": np.divide(lg, ng), "direct_logprob_mean_bad": np.divide(lb, nb),
        "direct_n_tokens_good": ng, "direct_n_tokens_bad": nb,
        "direct_correct": (np.subtract(lg, lb) > 0) if correct is None else correct,
        "direct_tie": np.equal(lg, lb), "direct_near_tie": np.abs(np.subtract(lg, lb)) < tol,
        "direct_near_tie_tolerance": tol})


def test_conventions_decide_by_sum_mean_and_bytes():
    """A longer good sentence: the sum prefers bad, the mean and the per-byte rate prefer good;
    a pair of equal lengths is decided alike by all three; a tie is a tie in all three."""
    good = ["they are walking home", "ab", "xy"]
    bad = ["he walks home", "ac", "xz"]
    lg, lb = [-20.0, -5.0, -4.0], [-15.0, -6.0, -4.0]
    s = _scored(good, bad, lg, lb, [5, 2, 2], [3, 2, 2])
    d = grammar_study.convention_decisions(s)
    assert list(d["decision_sum"]) == ["wrong", "right", "tie"]
    assert list(d["decision_mean"]) == ["right", "right", "tie"]   # -4.0 vs -5.0 nats/token
    assert d["delta_byte"].iloc[0] == pytest.approx(-20 / 21 + 15 / 13)   # nats per byte
    assert list(d["decision_byte"]) == ["right", "right", "tie"]
    # bytes, not characters: Cyrillic letters are 2 bytes each
    r = _scored(["кот"], ["коты"], [-6.0], [-6.5], [2], [2])
    assert grammar_study.convention_decisions(r)["delta_byte"].iloc[0] == pytest.approx(
        -6 / 6 + 6.5 / 8)


def test_convention_near_tie_scales_the_sums_bound_by_length():
    # sum decided by 0.6 nats with a bound of 0.2; the means differ by 0.0095 < 0.2 / 10
    s = _scored(["a b"], ["a c"], [-10.0], [-10.6], [10], [10.5], tol=0.2)
    d = grammar_study.convention_decisions(s)
    assert d["decision_sum"].iloc[0] == "right"
    assert d["decision_mean"].iloc[0] == "near_tie"
    with pytest.raises(KeyError, match="direct_logprob_mean_good"):
        grammar_study.convention_decisions(s.drop(columns="direct_logprob_mean_good"))


def test_convention_table_counts_flips_and_sits_side_by_side():
    n = 30
    good = ["they are walking home"] * n
    bad = ["he walks home"] * n
    lg = np.full(n, -20.0)
    lb = np.r_[np.full(10, -15.0), np.full(20, -30.0)]  # 10 pairs: sum wrong, mean right
    t = grammar_study.convention_table(_scored(good, bad, lg, lb, [5] * n, [3] * n), n_boot=200)
    row = t.set_index("convention")
    assert row.loc["sum", "accuracy"] == pytest.approx(20 / 30)
    assert row.loc["mean", "accuracy"] == pytest.approx(1.0)
    assert row.loc["mean", "flips"] == 10 and row.loc["sum", "flips"] == 0
    assert (row["ci_low"] <= row["accuracy"]).all() and (row["decided"] == 30).all()
    wide = grammar_study.conventions_side_by_side(t.assign(model="m"))
    assert list(wide.columns[:3]) == list(grammar_study.CONVENTIONS)
    assert wide.iloc[0]["flips (mean)"] == 10 and wide.iloc[0]["decided (sum)"] == 30
    assert wide.iloc[0]["sum"].startswith("0.667 [")


# ------------------------------------------------------------------------------ pivot, per token

def _scores(text, pieces, logprobs):
    offsets, start = [], 0
    for p in pieces:
        start = text.index(p, start)
        offsets.append([start, start + len(p)])
        start += len(p)
    return TokenScores(text, np.arange(len(pieces)), list(pieces), np.array(offsets),
                       np.array(logprobs, dtype=float), "bos")


def _tokens(*scores):
    """The store's token table of these scores (``direct_tokens``: a ``text`` column)."""
    table = token_table(list(scores))
    return table.assign(text=table.text_index.map({i: s.text for i, s in enumerate(scores)}))


def _pair(good, bad, gp, bp, source="cue"):
    return pd.DataFrame({"task": ["multiblimp:eng"], "lang": ["en"], "subset": ["SV-#"],
                         "pair_id": ["0"], "good": [good.text], "bad": [bad.text],
                         "good_pivots": [[gp]], "bad_pivots": [[bp]],
                         "extra": [json.dumps({"pivot_source": source})]})


def test_per_token_share_and_length_matched_influence():
    """The verb carries 2 nats on one token, the next word 1 nat: per-token share 2/3, and the
    pivot beats the one later group of its length (influence +1/2). The prefix's tokens are
    left out: scored in the same context, they differ by nothing."""
    good = _scores("the authors laugh today", ["the", " authors", " laugh", " today"],
                   [-2.0, -3.0, -1.0, -4.0])
    bad = _scores("the authors laughs today", ["the", " authors", " laughs", " today"],
                  [-2.0, -3.0, -3.0, -5.0])
    d = grammar_study.decompose(_pair(good, bad, [12, 17], [12, 18]), _tokens(good, bad)).iloc[0]
    assert d.tok_share_pivot_s == pytest.approx(2 / 3)
    assert d.influence_pivot_s == pytest.approx(0.5)
    assert d.n_pivot_tokens == 1 and d.pivot_source == "cue"
    # the continuation moves more than the verb: the pivot loses its only comparison
    bad2 = _scores(bad.text, bad.tokens, [-2.0, -3.0, -3.0, -9.0])
    d = grammar_study.decompose(_pair(good, bad2, [12, 17], [12, 18]),
                                _tokens(good, bad2)).iloc[0]
    assert d.influence_pivot_s == pytest.approx(-0.5)
    assert d.tok_share_pivot_s == pytest.approx(2 / 7)
    # a two-token pivot with only one-token groups after it: no like-for-like comparison
    bad3 = _scores(bad.text, ["the", " authors", " laugh", "s", " today"],
                   [-2.0, -3.0, -1.5, -1.5, -5.0])
    d = grammar_study.decompose(_pair(good, bad3, [12, 17], [12, 18], "difference"),
                                _tokens(good, bad3)).iloc[0]
    assert np.isnan(d.influence_pivot_s) and d.n_pivot_tokens == pytest.approx(1.5)
    # per token: 1 token of 1 nat vs 2 tokens of 1.5 nats each -> |1.5 - 1| = 0.5 per token
    assert d.tok_share_pivot_s == pytest.approx(1.5 * 0.5 / (1.5 * 0.5 + 1.0))
    assert d.pivot_source == "difference"


def test_an_inserted_pivot_has_no_per_token_share_and_is_counted():
    """A word inserted in one sentence (SLING's negation pairs): the pivot has no token in the
    other, so no per-token difference; the pair keeps its sum-level parts, the table counts it
    out of ``per_token`` (``n_per_token``), and nothing warns on stderr."""
    good = _scores("他们不接受", ["他们", "不", "接受"], [-2.0, -2.5, -1.0])
    bad = _scores("他们接受", ["他们", "接受"], [-2.0, -3.0])
    kept = _scores("他们没接受", ["他们", "没", "接受"], [-2.0, -6.0, -1.0])
    pairs = pd.concat([_pair(good, bad, [2, 3], [2, 2], "difference"),
                       _pair(good, kept, [2, 3], [2, 3], "difference").assign(pair_id="1")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        d = grammar_study.decompose(pairs, _tokens(good, bad, kept)).set_index("pair_id")
    assert np.isnan(d.loc["0", "tok_share_pivot_s"]) and d.loc["0", "pivot_bad"] == ""
    assert d.loc["0", "delta"] == pytest.approx(-5.5 + 5.0)
    assert d.loc["0", "delta_pivot"] == pytest.approx(-2.5)
    assert d.loc["1", "tok_share_pivot_s"] == pytest.approx(1.0)
    t = grammar_study.pivot_table(d.reset_index(), n_boot=50).iloc[0]
    assert t["pairs"] == 2 and t["n_per_token"] == 1


def _decomposed(shares, influences, lang="en"):
    n = len(shares)
    return pd.DataFrame({"task": "t", "pair_id": [str(i) for i in range(n)], "lang": lang,
                         "family": "F", "pivot_source": "cue",
                         "tok_share_pivot_s": shares, "influence_pivot_s": influences})


def test_pivot_table_intervals_only_from_20_pairs():
    rng = np.random.default_rng(0)
    big = _decomposed(rng.uniform(0.6, 1.0, 40), rng.choice([-0.5, 0.5], 40))
    small = _decomposed(rng.uniform(0.6, 1.0, 8), [np.nan] * 8, lang="el")
    t = grammar_study.pivot_table(pd.concat([big, small]), n_boot=200).set_index("lang")
    assert t.loc["en", "per_token_low"] < t.loc["en", "per_token"] < t.loc["en", "per_token_high"]
    assert t.loc["en", "n_influence"] == 40 and t.loc["en", "marked"] == 1.0
    assert np.isnan(t.loc["el", "per_token_low"]) and t.loc["el", "n_influence"] == 0


def _claims(shares, influences, seed=0):
    return {t.claim: t for t in grammar_study.pivot_claims(
        _decomposed(shares, influences), "m", n_boot=400, seed=seed)}


def _influence(rng, n, p_win):
    return np.where(rng.random(n) < p_win, 0.5, -0.5)


def test_pivot_claims_reach_every_outcome():
    rng = np.random.default_rng(1)
    t = _claims(rng.uniform(0.6, 1.0, 60), _influence(rng, 60, 0.85))
    assert t["pivot_carries_most"].verdict == "supported"
    assert t["pivot_influence"].verdict == "supported"
    assert t["pivot_influence"].family == "pivot share per language (m)"
    t = _claims(rng.uniform(0.0, 0.4, 60), _influence(rng, 60, 0.15))
    assert t["pivot_carries_most"].verdict == "contradicted"
    assert t["pivot_influence"].verdict == "contradicted"
    t = _claims(rng.uniform(0.0, 1.0, 30), _influence(rng, 30, 0.5))
    assert t["pivot_influence"].verdict == "inconclusive"
    # a pivot like any later token, on many pairs: shown within ±0.1 of no influence
    t = _claims(rng.uniform(0.0, 1.0, 1200), _influence(rng, 1200, 0.5))
    assert t["pivot_influence"].verdict == "equivalent"
    t = _claims(rng.uniform(0.6, 1.0, 12), _influence(rng, 12, 0.9))
    assert {x.verdict for x in t.values()} == {"cannot be decided"}


@pytest.mark.slow  # a simulation over many data sets (issue 29)
def test_pivot_claims_rarely_decide_a_true_null():
    """Pivot share 1/2 on average and a pivot that wins half its comparisons: over 100
    simulated languages of 40 pairs, the claims are decided at about the 5% level."""
    decided = {"pivot_carries_most": 0, "pivot_influence": 0}
    sims = 100
    for s in range(sims):
        rng = np.random.default_rng(100 + s)
        t = _claims(rng.beta(2, 2, 40), _influence(rng, 40, 0.5), seed=s)
        for k in decided:
            decided[k] += t[k].verdict in ("supported", "contradicted")
    bound = 0.05 + 2 * np.sqrt(0.05 * 0.95 / sims)
    assert all(v / sims <= bound for v in decided.values()), decided


def test_pivot_family_is_declared():
    fam = families.declared_family("pivot share per language (gemma-3-270m)")
    assert set(fam.claims) == {"pivot_carries_most", "pivot_influence"}


def test_chapter_tasks_add_rublimp_and_multiblimp():
    names = grammar_study.chapter_tasks(["en"], ["simple_agrmt"], [], [], [],
                                        ["np_agreement_case"], ["ell", "nld"])
    assert names == ["clams:en:simple_agrmt", "rublimp:np_agreement_case", "multiblimp:ell",
                     "multiblimp:nld"]
    assert grammar_study.FAMILY_NAMES["multiblimp"] == "MultiBLiMP"
