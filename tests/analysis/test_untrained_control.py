"""Issue 44, item 3: a trained model beside its untrained control on the same XCOMPS pairs
(``xcomps_paper.control_gaps``, ``control_probes``): the gap in accuracy with an interval that
resamples whole items, both models' decisions on an item together."""

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.analysis import xcomps_paper


def _scored(right: np.ndarray, decision=None) -> pd.DataFrame:
    n = len(right)
    decision = np.where(right, "right", "wrong") if decision is None else decision
    return pd.DataFrame({"property": [f"p{i // 4}" for i in range(n)], "lang": "en",
                         "direct_correct": right.astype(float), "direct_decision": decision})


def test_the_gap_is_trained_minus_control_over_each_ones_decided_pairs():
    rng = np.random.default_rng(0)
    trained = _scored(np.ones(160, bool))
    right = rng.random(160) < 0.5
    decision = np.where(right, "right", "wrong").astype(object)
    decision[:8] = "tie"  # two items' worth of ties: out of the control's decided pairs
    control = _scored(right, decision)
    (row,) = xcomps_paper.control_gaps(trained, control, n_boot=500, seed=0).to_dict("records")
    acc = right[8:].mean()
    assert row["method"] == "Direct" and (row["n_trained"], row["n_control"]) == (160, 152)
    assert row["trained"] == 1.0 and row["control"] == pytest.approx(acc)
    assert row["gap"] == pytest.approx(1 - acc)
    assert row["ci_low"] < row["gap"] < row["ci_high"] and row["ci_low"] > 0.3
    assert row["items"] == 40


def test_equal_decisions_give_a_gap_of_zero_with_no_width():
    """Paired by item: two models that decide every pair alike differ by exactly 0 in every
    replicate (an unpaired bootstrap would give an interval of some width)."""
    right = np.random.default_rng(1).random(120) < 0.7
    (row,) = xcomps_paper.control_gaps(_scored(right), _scored(right), n_boot=300).to_dict(
        "records")
    assert row["gap"] == 0 and row["ci_low"] == 0 and row["ci_high"] == 0


def test_the_probes_per_language_and_their_mean_gap():
    def groups(values):
        return pd.DataFrame([{"lang": lang, "subset": s, "nested_balanced_accuracy": v + d,
                              "p_permutation": 0.01} for lang, v in values.items()
                             for s, d in (("all", 0.0), ("taxonomic", 0.2))])

    trained = groups({"en": 0.9, "de": 0.8, "fr": 0.7})
    control = groups({"en": 0.5, "de": 0.55, "zh": 0.6})
    out = xcomps_paper.control_probes(trained, control, n_boot=500, seed=0)
    assert list(out.index) == ["en", "de", "mean"]  # the languages both hold, then the mean
    assert out.loc["en", "gap"] == pytest.approx(0.4) and out.loc["de", "gap"] == pytest.approx(0.25)
    assert out.loc["mean", "gap"] == pytest.approx(0.325) and out.loc["mean", "languages"] == 2
    assert 0.25 <= out.loc["mean", "ci_low"] <= out.loc["mean", "ci_high"] <= 0.4


# --- BMLAMA: knowledge beyond the control frame, a model beside its untrained control ------------

def _language_table(pairwise, beyond) -> pd.DataFrame:
    langs = [f"l{i}" for i in range(len(beyond))]
    return pd.DataFrame({"pairwise": pairwise, "pairwise_beyond": beyond},
                        index=pd.Index(langs, name="lang"))


def test_bmlama_gaps_are_per_language_with_a_mean_resampling_languages():
    from xcomps_utils.analysis import bmlama_study as B

    rng = np.random.default_rng(1)
    beyond_t, beyond_c = rng.normal(0.15, 0.05, 17), rng.normal(0.0, 0.03, 17)
    trained = _language_table(0.6 + beyond_t, beyond_t)
    control = _language_table(np.full(17, 0.62), beyond_c).drop(index="l3")  # one language less
    out = B.control_gaps(trained, control, n_boot=500, seed=0)
    gaps = np.delete(beyond_t - beyond_c, 3)
    assert list(out.index) == [f"l{i}" for i in range(17) if i != 3] + ["mean"]
    assert np.allclose(out["gap"].iloc[:-1], gaps)
    assert out.at["mean", "gap"] == pytest.approx(gaps.mean())
    assert out.at["mean", "languages"] == 16 and out["control_pairwise"].iloc[0] == 0.62
    lo, hi = out.at["mean", "ci_low"], out.at["mean", "ci_high"]
    se = gaps.std(ddof=1) / np.sqrt(16)  # a percentile interval about 2 standard errors wide
    assert lo < gaps.mean() < hi and 2.5 * se < hi - lo < 5.5 * se


def test_bmlama_gap_of_a_model_with_itself_is_zero_and_a_missing_column_is_named():
    from xcomps_utils.analysis import bmlama_study as B

    t = _language_table(np.linspace(0.5, 0.9, 5), np.linspace(0, 0.2, 5))
    out = B.control_gaps(t, t, n_boot=200, seed=0)
    assert (out["gap"] == 0).all() and out.at["mean", "ci_low"] == out.at["mean", "ci_high"] == 0
    with pytest.raises(ValueError, match="'beyond'"):
        B.control_gaps(t, t, value="beyond")
