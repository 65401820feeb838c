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
