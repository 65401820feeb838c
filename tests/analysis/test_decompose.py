"""Decomposition of XCOMPS pairs: parts sum to the whole in every script; conditional Direct
equals log p(sentence) - log p(prefix) from a plain float64 loop."""

import numpy as np
import pandas as pd
import pytest
import torch

from xcomps_utils.analysis import concept_prior, decompose as D
from xcomps_utils.lm.precision import FLOAT32_LENGTH_TOLERANCE
from xcomps_utils.lm.scoring import TokenScores
from xcomps_utils.pairs import xcomps
from xcomps_utils.runs.execute import run

LANGS = xcomps.SAMPLE_LANGUAGES  # en de fr zh vi tr hu: Latin, Han, diacritics, suffixes


def _span(good, bad, *args, **kw):
    s = D.concept_span(good, bad, *args, **kw)
    return good[slice(*s.span(good))], bad[slice(*s.span(bad))], good[len(good) - s.suffix:]


def test_concept_span_in_every_sample_script():
    assert _span("A robin can fly.", "A penguin can fly.") == ("robin", "penguin", " can fly.")
    # the concepts share a final n: step 3 widens the span back to whole words
    assert _span("Ein Rotkehlchen kann fliegen.", "Ein Pinguin kann fliegen.") == \
        ("Rotkehlchen", "Pinguin", " kann fliegen.")
    # the article agrees with the concept: it differs, so it is in the span
    assert _span("An elephant has a trunk.", "A hippopotamus has a trunk.") == \
        ("An elephant", "A hippopotamus", " has a trunk.")
    assert _span("Con chim cổ đỏ biết bay.", "Con chim cánh cụt biết bay.") == \
        ("cổ đỏ", "cánh cụt", " biết bay.")
    # ... and with the data's concept strings, the whole concept
    assert _span("Con chim cổ đỏ biết bay.", "Con chim cánh cụt biết bay.", "chim cổ đỏ",
                 "chim cánh cụt")[:2] == ("chim cổ đỏ", "chim cánh cụt")
    # Hungarian: the dative suffix -nak is attached to the concept and goes with it
    assert _span("Az elefántnak van ormánya.", "A vízilónak van ormánya.") == \
        ("Az elefántnak", "A vízilónak", " van ormánya.")
    # no spaces: characters are the words; a shared character of two concepts (鹅) is kept in
    # the span only when the concept strings are given
    assert _span("企鹅会飞。", "天鹅会飞。") == ("企", "天", "鹅会飞。")
    assert _span("企鹅会飞。", "天鹅会飞。", "企鹅", "天鹅") == ("企鹅", "天鹅", "会飞。")
    # concept last: the property is in the shared prefix, only the period follows
    assert _span("Fliegen kann ein Rotkehlchen.", "Fliegen kann ein Pinguin.") == \
        ("Rotkehlchen", "Pinguin", ".")
    with pytest.raises(ValueError, match="identical"):
        D.concept_span("A robin can fly.", "A robin can fly.")


def test_straddling_tokens_go_to_the_concept():
    # a tokenizer fusing 鸟会 in the acceptable sentence: the span widens to 知更鸟会 / 企鹅会,
    # the first boundary both share, and the property is measured on the same text 飞。
    good, bad = "知更鸟会飞。", "企鹅会飞。"
    g = TokenScores(good, np.arange(4), ["知更", "鸟会", "飞", "。"],
                    np.array([(0, 2), (2, 4), (4, 5), (5, 6)]), np.array([-1., -2, -3, -4]), "bos")
    b = TokenScores(bad, np.array([9, 8, 2, 3]), ["企鹅", "会", "飞", "。"],
                    np.array([(0, 2), (2, 3), (3, 4), (4, 5)]), np.array([-5., -6, -7, -8]), "bos")
    summary, groups, tokens = D.split_pair(g, b, "知更鸟", "企鹅")
    assert (summary["concept_good"], summary["concept_bad"]) == ("知更鸟会", "企鹅会")
    assert summary["continuation"] == "飞。" and summary["same_continuation"]
    assert summary["cond_good"] == -7 and summary["cond_bad"] == -15
    assert summary["delta_concept"] == (-1 - 2) - (-5 - 6)
    assert tokens.category.tolist() == ["concept", "concept", "property", "period"] * 2
    assert summary["delta"] == pytest.approx(sum(summary[f"delta_{c}"] for c in D.CATEGORIES))
    with pytest.raises(ValueError, match="inside a token"):
        D.continuation_logprob(g, 3)
    assert D.continuation_logprob(g, 4) == -7


def test_proportions_on_a_pair_with_known_parts():
    # only the concept differs in the continuation-free case: the concept carries everything
    g = TokenScores("A robin.", np.array([1, 2, 3]), ["A", " robin", "."],
                    np.array([(0, 1), (1, 7), (7, 8)]), np.array([-1., -5, -2]), "bos")
    b = TokenScores("A dog.", np.array([1, 4, 3]), ["A", " dog", "."],
                    np.array([(0, 1), (1, 5), (5, 6)]), np.array([-1., -8, -2]), "bos")
    s, groups, _ = D.split_pair(g, b)
    assert s["delta"] == 3 and s["delta_concept"] == 3 and s["cond_delta"] == 0
    assert s["plain_concept_s"] == 1 and s["plain_period_s"] == 0
    # normalized: 1 on the concept group minus 3 groups x median (0) = 1
    assert s["norm_concept_s"] == pytest.approx(1.0)
    assert list(groups.category) == ["prefix", "concept", "period"]


@pytest.fixture(scope="module")
def sample_pairs():
    return xcomps.load_languages(LANGS, items_per_language=3, seed=1)


def _plain_loop(lm, text):
    """Independent reference (as tests/lm/test_scoring.py): BOS + one text, no batching, no prefix
    sharing, float64 log-softmax of the model's logits."""
    tok = lm.tokenizer
    ids = tok(text, add_special_tokens=False)["input_ids"]
    first = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    ids = [first] + ids
    with torch.no_grad():
        logp = lm.model(torch.tensor([ids])).logits[0].double().log_softmax(-1)
    return np.array([logp[t - 1, ids[t]].item() for t in range(1, len(ids))]), ids[1:]


@pytest.mark.parametrize("model", ["lm", "gemma"])
def test_parts_sum_to_the_whole_in_every_script(model, request, sample_pairs, tmp_path):
    lm = request.getfixturevalue(model)
    res = run(lm, sample_pairs, ["direct"], store=tmp_path / "results", progress=False)
    dec = D.decompose_pairs(sample_pairs, res.detail("direct_tokens"))
    d = dec.pairs
    assert len(d) == len(sample_pairs) and set(d.lang) == set(LANGS)
    parts = sum(d[f"delta_{c}"] for c in D.CATEGORIES)
    np.testing.assert_allclose(parts, d.delta, atol=1e-9)
    # ... and the whole is the stored Direct difference
    stored = res.wide("direct").assign(pair_id=lambda x: x.pair_id.astype(str))
    m = d.merge(stored[["lang", "pair_id", "delta"]], on=["lang", "pair_id"], suffixes=("", "_m"))
    np.testing.assert_allclose(m.delta, m.delta_m, atol=1e-9)
    # every token of both sentences is in exactly one category and one group
    counts = dec.tokens.groupby(["lang", "pair_id", "side"]).size().unstack()
    tok = res.detail("direct_tokens").groupby("text").size()
    assert (counts["good"].to_numpy() == d.set_index(["lang", "pair_id"]).loc[counts.index]
            .good.map(tok).to_numpy()).all()
    # group differences also sum to the whole (the proportions' denominator shares the parts)
    g = dec.groups.groupby(["lang", "pair_id"]).delta_s.sum()
    np.testing.assert_allclose(g.loc[list(zip(d.lang, d.pair_id))].to_numpy(), d.delta,
                               atol=1e-9)
    # every pair has a concept and a continuation, the same tokens after the concept
    assert (d.n_concept_good > 0).all() and (d.n_concept_bad > 0).all()
    assert (d.n_property_good > 0).all() and d.same_continuation.all()
    # the shared prefix differs only by rounding (same tokens, same context)
    assert d.delta_prefix.abs().max() < 1e-4
    for cat in D.CATEGORIES:
        assert d[f"plain_{cat}_s"].between(0, 1).all()
    assert np.allclose(sum(d[f"plain_{c}_s"] for c in D.CATEGORIES), 1)


@pytest.mark.parametrize("model", ["lm", "gemma"])
def test_conditional_direct_equals_plain_loop(model, request, sample_pairs, tmp_path):
    """cond = log p(sentence) - log p(prefix up to the concept's end), each text scored alone by
    a plain loop, within the float32 tolerance across sequence lengths
    (:data:`xcomps_utils.lm.precision.FLOAT32_LENGTH_TOLERANCE` per token); and every continuation
    token within 1e-5 (same sequence, same length).

    The run scores one text per forward pass (``batch_size=1``): this test is about the identity
    and the token boundary, not batching. (Batched, the sample's texts of one length differ from
    the plain loop by up to 1.6e-4 nats per token on this CPU, e.g. SmolLM2 on 山羊有角。 batched
    with one other text: a scoring matter, reported apart.)"""
    lm = request.getfixturevalue(model)
    sub = sample_pairs.groupby("lang").head(2)  # 2 pairs per language, every script
    res = run(lm, sub, ["direct"], store=tmp_path / "results", progress=False, batch_size=1)
    dec = D.decompose_pairs(sub, res.detail("direct_tokens"))
    checked = 0
    for r in dec.pairs.itertuples():
        for side, text, cond, concept in (("good", r.good, r.cond_good, r.concept_good),
                                          ("bad", r.bad, r.cond_bad, r.concept_bad)):
            cut = len(text) - len(r.continuation)
            assert text[:cut].endswith(concept)
            full, ids = _plain_loop(lm, text)
            pre, pre_ids = _plain_loop(lm, text[:cut])
            assert ids[:len(pre_ids)] == pre_ids  # the prefix tokenizes as in the sentence
            n_after = len(ids) - len(pre_ids)
            assert n_after >= 1
            # the prefix alone and inside the sentence are different sequence lengths: equal
            # within the model's float32 arithmetic across lengths, per token of the prefix
            tol = FLOAT32_LENGTH_TOLERANCE * len(pre_ids)
            assert abs(cond - (full.sum() - pre.sum())) < tol, (text, cond)
            # per token: the stored continuation tokens are the loop's, within 1e-5 (+ float32 precision)
            t = dec.tokens[(dec.tokens.lang == r.lang) & (dec.tokens.pair_id == r.pair_id)
                           & (dec.tokens.side == side)]
            after = t[t.category.isin(["property", "period"])]
            np.testing.assert_allclose(-after.surprisal.to_numpy(), full[len(pre_ids):],
                                       atol=1e-5, rtol=2e-6)  # tests/lm/test_scoring.py's tolerance
            checked += 1
    assert checked == 4 * len(LANGS)


def test_prior_share_counts_pairs_right_only_because_of_the_prior():
    # delta = cond + prior
    cond = np.array([1.0, -1.0, -0.5, 2.0, 1.0])
    prior = np.array([0.5, 2.0, 1.0, -1.0, -3.0])
    d = pd.DataFrame({"lang": "xx", "property": ["a", "b", "c", "d", "e"],
                      "delta": cond + prior, "cond_delta": cond})
    d["direct_correct"] = (d.delta > 0).astype(float)
    d["cond_correct"] = (d.cond_delta > 0).astype(float)
    d["direct_tie"], d["cond_tie"] = 0.0, 0.0
    t = concept_prior.prior_share(d, n_boot=200)
    row = t.iloc[0]
    assert row.prior_share == 0.5 and (row.only_direct, row.only_cond, row.both) == (2, 1, 2)
    assert 0 <= row.ci_low <= 0.5 <= row.ci_high <= 1 and row["items"] == 5
    # Direct right on a, b, c, d (0.8), conditional on a, d, e (0.6); the prior favours the
    # acceptable concept in a, b, c (0.6); Spearman r of prior and continuation: ranks
    # (3, 5, 4, 2, 1) and (3.5, 1, 2, 5, 3.5), r = -8 / sqrt(10 * 9.5)
    assert (row.direct_acc, row.cond_acc) == (0.8, 0.6) and row.gain == pytest.approx(0.2)
    assert row.prior_favours == pytest.approx(0.6) and row.prior_cond_r == pytest.approx(-8 / 95 ** 0.5)
    claim = concept_prior.direct_gains_from_prior(d, n_boot=200)
    assert claim.effect == pytest.approx(0.2) and claim.verdict == "cannot be decided"
    # a near tie of the run is no decision of Direct, as in the XCOMPS tables
    d["direct_near_tie"] = [0.0, 1.0, 0.0, 0.0, 0.0]
    assert concept_prior.prior_share(d, n_boot=200).iloc[0].direct_acc == 0.75


TYPES = ["taxonomic", "overlap", "co-occurrence", "random"]


def _prior_pairs(seed, shift=0.0, n_items=40, per=4, spread=1.0, tie=0.0, know=0.5):
    """cond ~ know + N(0, 1) + an item effect N(0, 0.5); prior = shift + spread N(0, 1) +
    tie (cond - mean cond): ``tie`` > 0 is a prior correlated with the continuation, zero-mean
    when ``shift`` is 0."""
    rng = np.random.default_rng(seed)
    n = n_items * per
    cond = know + rng.normal(0, 1, n) + np.repeat(rng.normal(0, 0.5, n_items), per)
    prior = shift + spread * rng.normal(0, 1, n) + tie * (cond - cond.mean())
    d = pd.DataFrame({"lang": "xx", "property": np.repeat(np.arange(n_items).astype(str), per),
                      "negative_sample_type": np.tile(TYPES, n_items)[:n],
                      "delta": cond + prior, "cond_delta": cond, "prior_delta": prior})
    d["direct_correct"] = (d.delta > 0).astype(float)
    d["cond_correct"] = (d.cond_delta > 0).astype(float)
    d["direct_tie"] = d["cond_tie"] = 0.0
    return d


def _rates(make, fn, n):
    v = [fn(make(s)).verdict for s in range(n)]
    return {k: v.count(k) / n for k in ("supported", "contradicted")}


def _bound(n, level=0.05):
    return level + 3 * (level * (1 - level) / n) ** 0.5


def test_the_prior_favours_the_acceptable_concept_either_way_and_holds_its_null():
    run = lambda d: concept_prior.prior_favours_acceptable(d, n_boot=300)  # noqa: E731
    assert run(_prior_pairs(0, 0.6)).verdict == "supported"
    assert run(_prior_pairs(1, -0.6)).verdict == "contradicted"
    null = _rates(lambda s: _prior_pairs(100 + s), run, 60)
    assert null["supported"] + null["contradicted"] <= _bound(60)
    # the trap: a zero-mean prior tied to the continuation (the mirror test decided it in
    # every dataset): it favours neither concept, and is not decided
    trap = _rates(lambda s: _prior_pairs(200 + s, spread=0.3, tie=1.0), run, 60)
    assert trap["supported"] + trap["contradicted"] <= _bound(60)
    # power at the stated effect (0.6 of pairs, sesoi 0.1), 60 items x 4 pairs
    power = _rates(lambda s: _prior_pairs(300 + s, 0.253, n_items=60), run, 30)
    assert power["supported"] >= 0.8


def test_direct_gains_from_the_prior_is_decided_by_what_the_prior_does_to_direct():
    run = lambda d: concept_prior.direct_gains_from_prior(d, n_boot=300)  # noqa: E731
    assert run(_prior_pairs(0, 1.0, spread=0.5)).verdict == "supported"
    # the trap: a prior favouring the acceptable concept on average but noisy, Direct about 12.5
    # points below conditional Direct: never supported, contradicted when powered (80 items)
    trap = [_prior_pairs(400 + s, 0.3, n_items=80, spread=6.0) for s in range(30)]
    gap = np.mean([d.direct_correct.mean() - d.cond_correct.mean() for d in trap])
    assert -0.16 < gap < -0.09
    verdicts = [run(d).verdict for d in trap]
    assert "supported" not in verdicts and verdicts.count("contradicted") / 30 >= 0.8
    assert concept_prior.prior_favours_acceptable(trap[0], n_boot=300).verdict != "contradicted"
    # null: no knowledge and a symmetric prior, so both judges are at 0.5
    null = _rates(lambda s: _prior_pairs(500 + s, know=0.0), run, 60)
    assert null["supported"] + null["contradicted"] <= _bound(60)


def test_the_shuffled_prior_keeps_language_and_type_and_unties_the_prior_from_the_pair():
    d = _prior_pairs(7, spread=0.1, tie=-0.9)  # a prior tied to the continuation
    direct = d.direct_correct.mean()
    assert direct - concept_prior.shuffled_prior_accuracy(d) > 0.2
    free = _prior_pairs(8, 0.3, spread=2.0)  # unrelated to the pair: shuffling changes nothing
    assert abs(concept_prior.shuffled_prior_accuracy(free) - free.direct_correct.mean()) < 0.04
    # a prior of +10 in one language and -10 in the other stays in its language
    two = pd.concat([d.assign(lang="aa", prior_delta=10.0), d.assign(lang="bb", prior_delta=-10.0)])
    assert concept_prior.shuffled_prior_accuracy(two) == 0.5


def test_the_printed_gain_verdict_flips_with_the_data():
    """The page's claims cell (families.correct, claims_markdown): a helpful prior prints
    Supported, a noisy one that costs Direct accuracy prints Contradicted."""
    from xcomps_utils.analysis import families, report

    def printed(d):
        fns = (concept_prior.prior_favours_acceptable, concept_prior.direct_gains_from_prior)
        return report.claims_markdown(families.correct([f(d, n_boot=300) for f in fns],
                                                     "concept prior, pooled", "confirmatory"))
    def gain_row(md):  # the table's second row: direct_gains_from_prior
        return [r for r in md.splitlines() if r.startswith("| <details")][1]
    helps = gain_row(printed(_prior_pairs(20, 1.0, spread=0.5)))
    hurts = gain_row(printed(_prior_pairs(21, 0.0, n_items=120, spread=9.0)))
    assert "| **Supported** |" in helps and "| **Contradicted** |" in hurts
    assert "Direct gains from the concept prior" in hurts


def test_mismatched_pairs_keep_the_prefixes_and_take_another_items_continuation():
    pairs = xcomps.load_languages(["en", "de", "zh"], items_per_language=4)
    ctrl = D.mismatched_pairs(pairs, seed=1)
    assert len(ctrl) == len(pairs) and not ctrl.duplicated(["lang", "pair_id"]).any()
    own = pairs.set_index(["lang", "pair_id"])
    for r in ctrl.itertuples():
        me = own.loc[(r.lang, r.pair_id.split("|cont:")[0])]
        other = own.loc[(r.lang, r.continuation_of)]
        assert other.name != me.name and other.property != me.property
        assert other.negative_sample_type == me.negative_sample_type
        span = D.concept_span(me.good, me.bad, me.acceptable_concept,
                                      me.unacceptable_concept)
        ospan = D.concept_span(other.good, other.bad, other.acceptable_concept,
                                       other.unacceptable_concept)
        assert r.good == me.good[:len(me.good) - span.suffix] + other.good[len(other.good)
                                                                           - ospan.suffix:]
        assert r.bad.endswith(other.good[len(other.good) - ospan.suffix:])
    en = ctrl[ctrl.lang == "en"].iloc[0]
    assert en.good != en.bad and en.good.endswith(".")
    assert D.mismatched_pairs(pairs, seed=1).equals(ctrl)  # deterministic
    with pytest.raises(KeyError, match="acceptable_concept"):
        D.mismatched_pairs(pairs.drop(columns="acceptable_concept"))


def test_property_above_a_drawn_chance_level():
    # the acceptable concept raises every continuation (control accuracy 0.65): against the
    # assumed 0.5 the "knowledge" claim is supported; against the drawn level it is not, and a
    # real property effect on top is
    def frame(p, seed, n=60):
        rng = np.random.default_rng(seed)
        return pd.DataFrame({"property": np.repeat(np.arange(n).astype(str), 4),
                             "cond_correct": (rng.random(4 * n) < p).astype(float),
                             "cond_tie": 0.0})
    run = lambda d, c: concept_prior.property_above_chance(d, control=c, n_boot=300)  # noqa
    assert concept_prior.property_above_chance(frame(0.65, 1), n_boot=300).verdict == "supported"
    assert "assumed, not drawn" in concept_prior.property_above_chance(frame(0.65, 1),
                                                                         n_boot=300).caveat
    t = run(frame(0.65, 1), frame(0.65, 2))
    assert t.verdict != "supported" and "drawn chance level" in t.measure
    assert run(frame(0.85, 1), frame(0.65, 2)).verdict == "supported"
    assert run(frame(0.45, 1), frame(0.65, 2)).verdict == "contradicted"
    r = _rates(lambda s: (frame(0.65, s), frame(0.65, 1000 + s)), lambda dc: run(*dc), 100)
    assert r["supported"] + r["contradicted"] <= _bound(100)

