"""The BMLAMA trends on two co-primary measures and at strata below the family (issue 42):
xcomps_utils.analysis.bmlama_study's knowledge in nats, coprimary, strata_table, depth_table and
the claim contracts' typology. Synthetic frames with a known answer; the data-folder test skips
without it."""


import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import bmlama_study as B
from xcomps_utils.analysis.claims import ClaimTest


def _frames(shift: dict, spread: dict, n_facts=40, seed=0):
    """Real and control pairs: control summed margins N(0, spread[lang]) (the distractor's
    log-probability carries it), the real frame's the same margins plus shift[lang] nats."""
    rng = np.random.default_rng(seed)
    real, ctl = [], []
    for lang in shift:
        for f in range(n_facts):
            for k in range(1, 10):
                m = rng.normal(0, spread[lang])
                row = {"lang": lang, "fact": f"f{f}", "candidate": k, "gold_candidate": 0,
                       "direct_logprob_good": -10.0, "direct_n_tokens_good": 5,
                       "direct_n_tokens_bad": 7}
                ctl.append({**row, "direct_logprob_bad": -10.0 - m})
                real.append({**row, "direct_logprob_bad": -10.0 - m - shift[lang]})
    out = []
    for rows in (real, ctl):
        d = pd.DataFrame(rows)
        d["direct_logprob_mean_good"] = d.direct_logprob_good / d.direct_n_tokens_good
        d["direct_logprob_mean_bad"] = d.direct_logprob_bad / d.direct_n_tokens_bad
        out.append(d)
    return out


def test_equal_knowledge_in_nats_is_equal_in_nats_but_not_in_accuracy():
    real, ctl = _frames({"narrow": 1.0, "wide": 1.0}, {"narrow": 2.0, "wide": 8.0})
    t = B.language_table(real, ctl, "sum", n_boot=200)
    # the pairing cancels every candidate's prior: the knowledge is 1 nat exactly, in both
    assert t.nats_beyond.to_numpy() == pytest.approx([1.0, 1.0])
    assert t.nats_beyond_low["wide"] == pytest.approx(1.0)
    # the wider spread flips fewer decisions: the same nats, less accuracy beyond the control
    assert t.pairwise_beyond["narrow"] > t.pairwise_beyond["wide"] + 0.05
    assert t.control_spread["wide"] == pytest.approx(8.0, rel=0.15)
    assert t.tokens["wide"] == t.control_tokens["wide"] == 6.0


def _test(verdict, effect, **kw):
    return ClaimTest("resource_trend", "h", "m", effect, -1.0, 1.0, 0.0, +1, verdict, 17,
                     "language", 17, "", caveat=kw.pop("caveat", ""), **kw)


@pytest.mark.parametrize("a, n, want", [
    ("supported", "supported", "supported"),
    ("negligible", "supported", "negligible"),
    ("supported", "inconclusive", "inconclusive"),
    ("supported", "contradicted", "inconclusive"),
    ("inconclusive", "supported", "inconclusive"),
    ("equivalent", "inconclusive", "inconclusive"),
    ("cannot be decided", "cannot be decided", "cannot be decided")])
def test_a_trend_is_a_finding_only_where_both_measures_decide_one_side(a, n, want):
    eff = {"contradicted": -1.0}.get(n, 1.0)
    t = B.coprimary(_test(a, 0.1, caveat="strata"), _test(n, eff))
    assert t.verdict == want
    if want != "cannot be decided":
        words = "agree" if want in ("supported", "negligible") else "do not agree"
        assert f"co-primary measures {words}" in t.caveat and f"knowledge in nats: {n}" in t.caveat
        assert t.caveat.startswith("strata; ")


def test_strata_below_the_family_and_the_caveat_they_generate():
    typ = B.contract_typology(17)
    v = pd.DataFrame({"pairwise_beyond": np.linspace(0, 0.1, 17)}, index=typ.index)
    got = {}
    for depth in B.STRATA:
        t = B.resource_trend(v, typ, "pairwise_beyond", strata=depth, n_perm=999)
        got[depth] = t
    # top families: Indo-European (9, en es fr high) x Afro-Asiatic (ar high, he): 84 x 2
    assert "168 distinct" in got["family"].test
    assert "2 of them hold two or more resource_tier values" in got["family"].caveat
    # Germanic (en high, nl medium) x Romance (es, fr high, ca medium) x Semitic (ar, he): 12;
    # Semitic splits by script (Arabic, Hebrew): 6. No relabeling then reaches 0.025
    assert "12 distinct" in got["genus"].test and "6 distinct" in got["genus_script"].test
    assert got["genus"].verdict == got["genus_script"].verdict == "cannot be decided"
    assert "13 strata of genus × script" in got["genus_script"].caveat


def test_depth_table_counts_labelings_and_power_at_each_depth():
    typ = B.contract_typology(53)
    rng = np.random.default_rng(0)
    v = pd.DataFrame({"pairwise_beyond": rng.normal(0.1, 0.05, 53),
                      "nats_beyond": rng.normal(0.5, 0.3, 53)}, index=typ.index)
    d = B.depth_table(v, typ, "sim", morphology="grambank_bound", n_perm=499,
                      n_sims=100).set_index(["claim", "depth"])
    r = d.loc["resource_trend"]
    # genus x script: Germanic (2 high of 6) x Romance (2 of 7) x Turkic (low, medium)
    assert r.loc["genus_script", "labelings"] == 15 * 21 * 2
    assert r.loc["genus_script", "smallest_p"] == pytest.approx(1 / 630)
    assert r.loc["family", "labelings"] > r.loc["genus", "labelings"] > r.loc[
        "genus_script", "labelings"]
    assert r.loc["family", "power"] > r.loc["genus_script", "power"] > 0
    assert set(d["verdict"]) <= {"supported", "contradicted", "negligible", "equivalent",
                                 "inconclusive", "cannot be decided"}


def test_the_simulations_skip_the_interval_but_not_the_verdict():
    sc = B.CONTRACTS[0].effect
    typ = B.contract_typology(53)
    for seed in range(6):
        rng = np.random.default_rng(10_000 + seed)
        table = B._knowledge_world(typ, seed, B._base(typ, rng) + 1.5 * B._step(typ))
        full = B.knowledge_trend("resource_trend", table, typ, n_perm=499, seed=seed)
        assert sc.draw(seed).verdict == full.verdict


def test_every_claim_of_the_chapter_has_a_contract():
    assert {c.claim for c in B.CONTRACTS} == {
        "resource_trend", "morphology_trend", "english_rank", "direct_tracks_neuro",
        "direct_tracks_meta", "consistency_follows_family", "consistency_follows_script"}
    assert all(len(c.traps) >= 1 and c.effect is not None for c in B.CONTRACTS)
    with pytest.raises(ValueError, match="'languages' parameter"):
        B.contract_typology(20)


def test_the_contracts_typology_is_the_pinned_sources(data_dir):
    from xcomps_utils.pairs import bmlama, typology

    snap = B.contract_typology(53)
    src = B.strata_table(typology.language_table(bmlama.languages("bmlama53"), data_dir),
                         data_dir)
    for col in ("family", "genus", "script", "resource_tier", "genus_script"):
        assert src[col].to_dict() == snap[col].to_dict(), col
    assert np.allclose(src.grambank_bound, snap.grambank_bound, atol=0.005, equal_nan=True)
