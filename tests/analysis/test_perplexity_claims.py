"""The token-level perplexity claims (:mod:`xcomps_utils.analysis.perplexity_paper`) on simulated aligned
groups, through the package's own functions (``prompt_pair_measures`` then the claim): each
outcome reachable, the rate of a false decision under the null at most nominal + 3 binomial
standard errors, power at a stated effect, and the traps of issue 27 (a 2- or 3-token pivot with
no role; one pivotal token carrying the whole effect among 30 noisy tokens; pivotal tokens doing
everything, nothing, or pushing the wrong way), in surprisal units, the claims' unit; then issue 42's
(a share whose total points nowhere, a merely rarer pivot, a different-word pivot with no role, a
length-only model against a drawn chance level) on ``perplexity_paper.simulate_groups``. The claims'
contracts (``perplexity_paper.CONTRACTS``) are run by ``test_claim_contract.py``. Seeded; every
simulation is small.
"""

import math

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import claims, families, perplexity_paper as PP, report


def _bound(p, n):
    """Nominal rate ``p`` plus three binomial standard errors of ``n`` simulations."""
    return p + 3 * math.sqrt(p * (1 - p) / n)


def simulate(n_items=30, seed=0, prompt_pairs=4, n_other=30, piv_tokens=1, piv_one_group=False,
             piv_shift=0.0, rest_shift=0.0, shifted_other=None, noise=0.5, item_sd=0.5,
             task="t"):
    """Aligned groups (the ``ppl_groups`` detail's columns) of ``n_items`` items x
    ``prompt_pairs`` prompt pairs.

    Every token has a base surprisal fixed within its item (uniform 0.5-5 nats) and, in each
    prompt, that base plus independent normal noise (sd ``noise``): a token with no role is
    exchangeable between the correct and the incorrect prompt, so its ΔPPL is mean-zero and
    heavy-tailed. The pivotal word has ``piv_tokens`` tokens, as many one-token groups (what the
    alignment makes of a word both prompts tokenize alike) or one group of that many tokens
    (``piv_one_group``, a fused group); its tokens are more surprising in the incorrect prompt by
    ``piv_shift`` nats, and every other token by ``rest_shift`` (only the first
    ``shifted_other`` other groups, of one token each, when given), each item's shifts scaled by
    ``1 + item_sd * N(0, 1)`` (items differ). The ``n_other`` other groups hold 1 (70%), 2 (20%)
    or 3 (10%) tokens, fixed within an item.
    """
    rng = np.random.default_rng(seed)
    cols = {k: [] for k in ("pair_id", "wording", "order", "s_correct", "s_incorrect",
                            "n_tokens", "category")}
    for i in range(n_items):
        lengths = rng.choice([1, 2, 3], size=n_other, p=[0.7, 0.2, 0.1])
        if shifted_other is not None:
            lengths[:shifted_other] = 1
        glen = np.r_[[piv_tokens] if piv_one_group else [1] * piv_tokens, lengths].astype(int)
        n_tok, n_g = glen.sum(), len(glen)
        base = rng.uniform(0.5, 5.0, n_tok)
        is_piv = np.arange(n_tok) < piv_tokens
        rest = ~is_piv if shifted_other is None else \
            ~is_piv & (np.arange(n_tok) < piv_tokens + shifted_other)
        shift = (piv_shift * is_piv + rest_shift * rest) * (1 + item_sd * rng.normal())
        starts = np.r_[0, np.cumsum(glen)[:-1]]
        cat = np.array(["pivotal"] * (n_g - n_other) + ["other"] * n_other)
        for k in range(prompt_pairs):
            sa = base + rng.normal(0, noise, n_tok)
            sb = base + rng.normal(0, noise, n_tok) + shift
            for key, val in (("pair_id", [str(i)] * n_g), ("wording", [str(k // 2)] * n_g),
                             ("order", [("good_first", "bad_first")[k % 2]] * n_g),
                             ("s_correct", np.add.reduceat(sa, starts)),
                             ("s_incorrect", np.add.reduceat(sb, starts)), ("n_tokens", glen),
                             ("category", cat)):
                cols[key].append(val)
    out = pd.DataFrame({k: np.concatenate(v) for k, v in cols.items()})
    out.insert(0, "task", task)
    return out.assign(n_tokens_correct=out.n_tokens, n_tokens_incorrect=out.n_tokens)


def measures(unit="s", **kw):
    return PP.prompt_pair_measures(simulate(**kw), unit=unit)


def _rates(make, test, n_sims, offset=0):
    out = pd.Series([test(make(offset + s)).verdict for s in range(n_sims)]).value_counts()
    return {v: float(out.get(v, 0)) / n_sims for v in claims.VERDICTS}


def _verdicts(m, n_boot=300, **claims_kw):
    return {name: getattr(PP, name)(m, "t", n_boot=n_boot, **claims_kw).verdict
            for name in ("pivotal_rarely_whole", "pivotal_carries_most", "pivotal_influence",
                         "pivotal_direction")}


def test_prompt_pair_measures_are_per_token_and_matched_by_length():
    # one prompt pair: a pivotal group of 2 tokens (per-token PPL e^1 -> e^2), a 2-token other
    # group (e^1 -> e^1.5), two 1-token other groups (ΔPPL +1 and -1)
    g = pd.DataFrame({"task": "t", "pair_id": "0", "wording": "w", "order": "good_first",
                      "s_correct": [2.0, 2.0, np.log(2.0), np.log(2.0)],
                      "s_incorrect": [4.0, 3.0, np.log(3.0), np.log(1.0)],
                      "n_tokens_correct": [2, 2, 1, 1], "n_tokens_incorrect": [2, 2, 1, 1],
                      "category": ["pivotal", "other", "other", "other"]})
    m = PP.prompt_pair_measures(g).iloc[0]
    dp, do = np.exp(2) - np.exp(1), np.exp(1.5) - np.exp(1)  # per-token ΔPPL, not exp(sum)
    z = 2 * dp + 2 * do + 1 + 1
    assert m.whole_ppl == pytest.approx(2 * dp + 2 * do)
    assert m.plain_tok_pivotal_ppl == pytest.approx(2 * dp / z)
    assert m.signed_pivotal_ppl + m.signed_rest_ppl == pytest.approx(m.whole_ppl / z)
    # the 2-token pivot is compared with the 2-token other group only
    assert m.influence_pivotal_ppl == pytest.approx(0.5)  # it exceeds its one like (dp > do)
    assert m.direction_pivotal_ppl == pytest.approx(1.0) and m.n_pivotal_tokens == 2
    assert m.norm_avg_pivotal_ppl == pytest.approx(dp / z - np.median([dp, do, 1, -1]) / z)
    s = PP.prompt_pair_measures(g, unit="s").iloc[0]
    assert s.whole_s == pytest.approx(2 * 1 + 2 * 0.5 + np.log(1.5) + np.log(0.5))
    # no non-pivotal group of the pivot's length: no like-for-like comparison
    assert np.isnan(PP.prompt_pair_measures(g.iloc[[0, 2, 3]]).influence_pivotal_ppl.iloc[0])
    with pytest.raises(KeyError, match="n_tokens_correct"):
        PP.prompt_pair_measures(g.drop(columns="n_tokens_correct"))


def test_sign_flip_p_enumerates_every_flip():
    # 4 items: the rest always with the total; 2**4 flips, the observed one the largest
    s, up, down, smallest = PP.sign_flip_p(np.zeros(4), np.array([1.0, 2, 3, 4]), 8)
    assert s == pytest.approx(10 / 8)
    assert up == pytest.approx(2 / 16) and smallest == pytest.approx(2 / 16)  # ±all the same
    assert down == pytest.approx(1.0)
    # the pivotal part sets the orientation: a rest against it sits in the lower tail
    s, up, down, _ = PP.sign_flip_p(np.full(12, 10.0), np.full(12, -0.5), 24)
    assert s == pytest.approx(-0.25) and down == pytest.approx(1 / 4096) and up == 1.0


def test_rarely_whole_decides_everything_nothing_and_the_wrong_way_apart():
    everything = _verdicts(measures(seed=1, n_items=60, piv_shift=1.0))
    nothing = _verdicts(measures(seed=2, rest_shift=0.2))
    wrong = _verdicts(measures(seed=3, piv_shift=-1.0, rest_shift=0.2))
    more = _verdicts(measures(seed=4, n_items=40, piv_shift=3.0, rest_shift=-0.04))
    assert everything["pivotal_rarely_whole"] not in ("supported", "contradicted")
    assert nothing["pivotal_rarely_whole"] == "supported"
    assert wrong["pivotal_rarely_whole"] == "supported"
    assert more["pivotal_rarely_whole"] == "contradicted"  # pivotal tokens carry more than whole
    # the other claims tell the three apart too
    assert (everything["pivotal_direction"], nothing["pivotal_direction"],
            wrong["pivotal_direction"]) == ("supported", "inconclusive", "contradicted")
    assert everything["pivotal_carries_most"] == "supported"
    assert nothing["pivotal_carries_most"] == wrong["pivotal_carries_most"] == "contradicted"


def test_rarely_whole_null_and_power():
    n = 60
    null = _rates(lambda s: measures(seed=s, piv_shift=1.0),
                  lambda m: PP.pivotal_rarely_whole(m, "t", n_boot=200), n, 100)
    assert null["supported"] + null["contradicted"] <= _bound(0.05, n)
    power = _rates(lambda s: measures(seed=s, piv_shift=1.0, rest_shift=0.05),
                   lambda m: PP.pivotal_rarely_whole(m, "t", n_boot=200), 25, 300)
    assert power["supported"] >= 0.8


def test_a_pivot_of_two_or_three_tokens_with_no_role_is_not_supported():
    n, decided, supported_most = 60, {"pivotal_influence": 0, "pivotal_direction": 0}, 0
    for s in range(n):  # half fused into one group, half one group a token
        m = measures(seed=500 + s, piv_tokens=2 + s % 2, piv_one_group=s % 2 == 0,
                     rest_shift=0.05)
        for name in decided:
            decided[name] += getattr(PP, name)(m, "t", n_boot=200).verdict in (
                "supported", "contradicted")
        supported_most += PP.pivotal_carries_most(m, "t", n_boot=200).verdict == "supported"
    assert all(k / n <= _bound(0.05, n) for k in decided.values()), decided
    assert supported_most / n <= _bound(0.05, n)


def test_one_pivotal_token_with_the_whole_effect_among_30_noisy_tokens_is_supported():
    # the pivot's ΔPPL is ~1/30 of Σ|ΔPPL| in a prompt pair, but all of the systematic part:
    # 60 items (the paper's nonsense control has 250) decide it
    r = {"pivotal_carries_most": 0, "pivotal_influence": 0, "pivotal_direction": 0}
    n = 25
    for s in range(n):
        m = measures(seed=700 + s, n_items=60, n_other=30, piv_shift=1.0)
        for name in r:
            r[name] += getattr(PP, name)(m, "t", n_boot=200).verdict == "supported"
    assert all(k / n >= 0.8 for k in r.values()), r


def test_carries_most_null_pivot_with_half_the_difference():
    # one other token gets the pivot's shift: the pivot carries half of the expected difference
    n = 60
    r = _rates(lambda s: measures(seed=s, piv_shift=1.0, rest_shift=1.0, shifted_other=1),
               lambda m: PP.pivotal_carries_most(m, "t", n_boot=200), n, 900)
    assert r["supported"] + r["contradicted"] <= _bound(0.05, n)


def test_the_pages_verdicts_flip_with_the_data():
    """What the results page prints (claim_tests, then report.claims_markdown) follows the
    data: the "rarely whole" line of a task flips when its other tokens stop carrying a part."""
    def page(rest_shift, seed):
        g = pd.concat([simulate(seed=seed, piv_shift=1.0, rest_shift=rest_shift, task="t"),
                       simulate(seed=seed + 1, piv_shift=1.5, task="nonsense")])
        m = PP.prompt_pair_measures(g, unit="s")
        m = m.assign(correct=(m.whole_s > 0).astype(float))
        tests = PP.claim_tests(m, n_boot=200)
        line = next(x for x in report.claims_markdown(tests).splitlines()
                    if x.endswith("| t |") and "pivotal tokens rarely explain" in x)
        return {t.claim: t.verdict for t in tests if t.scope == "t"}, line
    with_rest, line_rest = page(0.2, 0)
    alone, line_alone = page(0.0, 10)
    assert with_rest["pivotal_rarely_whole"] == "supported" and "**Supported**" in line_rest
    assert alone["pivotal_rarely_whole"] != "supported" and "**Supported**" not in line_alone


# --- surprisal units, a share's denominator, a drawn null and a drawn chance level (issue 42) ---

def test_label_share_and_length_decisions_by_hand():
    m = pd.DataFrame({"task": "t", "pair_id": ["0", "0", "1", "1"], "wording": "w",
                      "order": ["good_first", "bad_first"] * 2,
                      "whole_pivotal_s": [3.0, -1.0, 2.0, -2.0],
                      "tokens_correct": [5, 5, 4, 6], "tokens_incorrect": [5, 5, 6, 4]})
    q = PP.label_share(m).set_index("pair_id").label_share
    assert q["0"] == pytest.approx(2 / 4) and q["1"] == pytest.approx(0.0)  # position cancels
    pairs = pd.DataFrame({"task": "t", "pair_id": ["0", "1"], "good": ["ab", "abc"],
                          "bad": ["abc", "ab"]})
    d = PP.length_decisions(m, pairs)
    assert d.fewer_tokens_wins.tolist() == [0.5, 0.5, 1.0, 0.0]
    # pair 0: the good sentence is shorter; good first: the correct prompt's first slot holds it
    assert d.shorter_first_wins.tolist() == [1.0, 0.0, 0.0, 1.0]
    assert d.groupby("pair_id").shorter_first_wins.mean().tolist() == [0.5, 0.5]  # by design
    with pytest.raises(KeyError, match="tokens_correct"):
        PP.length_decisions(m.drop(columns="tokens_correct"))


def test_carries_most_is_not_read_where_the_total_points_nowhere():
    # the pivot +1 nat, the other tokens against it: a mean total of 0
    m = PP.prompt_pair_measures(PP.simulate_groups(3, piv_shift=1.0, rest_shift=-2 * PP._HALF),
                                unit="s")
    t = PP.pivotal_carries_most(m, "t", n_boot=500)
    assert t.verdict == "cannot be decided" and "not decided positive" in t.reason
    fam = families.correct([t], "token-level perplexity, primary claims")
    assert fam[0].verdict == "cannot be decided" and fam[0].reason == t.reason
    ok = PP.prompt_pair_measures(PP.simulate_groups(3, piv_shift=1.0), unit="s")
    assert PP.pivotal_carries_most(ok, "t", n_boot=500).verdict == "supported"


def test_a_merely_rarer_pivot_carries_most_only_in_perplexity_units():
    # base surprisal 5 for the pivots, 3 for every other word; the same 0.3-nat shift on all
    g = PP.simulate_groups(0, base=3.0, piv_base=5.0, piv_shift=0.3, rest_shift=0.3)
    in_ppl = PP.pivotal_carries_most(PP.prompt_pair_measures(g, unit="ppl"), "t", unit="ppl",
                                     n_boot=500)
    in_s = PP.pivotal_carries_most(PP.prompt_pair_measures(g, unit="s"), "t", n_boot=500)
    assert in_ppl.verdict == "supported"  # why ΔPPL is a description only
    assert in_s.verdict == "contradicted" and in_s.effect < 0.3


def test_a_different_word_pivot_with_no_role_wins_the_rank_not_the_claim():
    m = PP.prompt_pair_measures(PP.simulate_groups(1, fail=4.0, piv_noise=1.5), unit="s")
    assert m.influence_pivotal_s.mean() > 0.3  # beats same-word tokens: its copy fails
    assert PP.pivotal_influence(m, "t", n_boot=500, n_perm=999).verdict != "supported"
    role = PP.prompt_pair_measures(PP.simulate_groups(1, fail=4.0, piv_noise=1.5, piv_shift=1.0),
                                   unit="s")
    assert PP.pivotal_influence(role, "t", n_boot=500, n_perm=999).verdict == "supported"


def test_above_chance_reads_the_drawn_level():
    # a length-only model where the correct prompt is shorter in 77% of items (DUST, scored alone)
    d = PP.length_decisions(PP.simulate_prompt_pairs(0, n_items=60, shorter=0.77))
    assumed = PP.above_chance(d, "t", accuracy="correct", n_boot=500)
    drawn = PP.above_chance(d, "t", accuracy="correct", chance="fewer_tokens_wins", n_boot=500)
    assert assumed.verdict == "supported" and assumed.effect > 0.2
    assert drawn.verdict != "supported"
    assert drawn.effect == pytest.approx(d.correct.mean() - d.fewer_tokens_wins.mean())
    with pytest.raises(KeyError, match="'chance' parameter"):
        PP.above_chance(d, "t", accuracy="correct", chance="unigram_wins")


def test_ppl_reading_is_a_description_beside_the_verdicts():
    g = pd.concat([PP.simulate_groups(0, piv_shift=1.0, task="t"),
                   PP.simulate_groups(1, piv_shift=1.0, task="nonsense")])
    r = PP.ppl_reading(PP.prompt_pair_measures(g, unit="ppl"), n_boot=300)
    assert "verdict" not in r
    assert sorted(r.claim[r.scope == "nonsense"]) == ["pivotal_carries_most", "pivotal_direction",
                                                      "pivotal_influence"]
    assert (r.ci_low <= r.effect).all() and (r.effect <= r.ci_high).all()


def test_every_claim_of_the_module_has_a_contract():
    fams = [families.FAMILIES[f] for f in ("token-level perplexity, primary claims",
                                         "token-level perplexity, per task")]
    assert sorted(c.claim for c in PP.CONTRACTS) == sorted(c for f in fams for c in f.claims)
    assert all(c.traps for c in PP.CONTRACTS)
