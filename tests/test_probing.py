"""The probing protocol on synthetic states with a known answer."""

import numpy as np
import pandas as pd
import pytest

from xcomps_utils import probing
from xcomps_utils.neuro import ProbeError


def _xcomps_like(n_items=40, n_pos=10, n_neg=10, seed=0):
    """Pairs shaped like XCOMPS where concepts recur: each acceptable concept is acceptable for
    several properties, each negative concept is a negative of many items (so a concept always
    has the same label, and memorising concepts would predict the label)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_items):
        good = f"pos{i % n_pos}"
        for t, neg in enumerate(rng.choice(n_neg, 4, replace=False)):
            rows.append({"property": f"prop{i}", "acceptable_concept": good,
                         "unacceptable_concept": f"neg{neg}", "good": f"{good} prop{i}",
                         "bad": f"neg{neg} prop{i}", "subset": ["a", "b", "c", "d"][t]})
    return pd.DataFrame(rows)


def _states(sents, n_layers=3, dim=24, concept_scale=0.0, signal_layer=None, signal=0.0, seed=0):
    rng = np.random.default_rng(seed)
    vec = {c: rng.normal(size=dim) for c in sents["concept"].unique()}
    X = rng.normal(size=(len(sents), n_layers, dim))
    X += concept_scale * np.stack([vec[c] for c in sents["concept"]])[:, None, :]
    if signal_layer is not None:
        direction = rng.normal(size=dim)
        X[:, signal_layer] += signal * np.outer(sents["label"] * 2 - 1, direction)
    return X.astype(np.float32)


def _leaky_item_folds(sents, n_splits=5, seed=0):
    """The old protocol's folds: grouped by item only."""
    from sklearn.model_selection import StratifiedGroupKFold

    cv = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    return list(cv.split(np.zeros(len(sents)), sents["label"], sents["item"]))


def test_planted_concept_identity_leaks_through_item_folds_and_not_through_ours():
    pairs = _xcomps_like()
    sents = probing.probe_sentences(pairs)
    assert len(sents) == 40 + 40 * 4 - pairs.duplicated("bad").sum()
    X = _states(sents, concept_scale=3.0)  # the states carry concept identity, nothing else
    y = sents["label"].to_numpy()
    leaky = probing.probe_layers(X, y, _leaky_item_folds(sents))
    assert leaky["balanced_accuracy"].min() > 0.9  # memorised concepts look like knowledge
    folds, info = probing.make_folds(y, sents["item"], sents["concept"])
    assert info["grouping"] == "concept" and info["leaked_concepts"] == 0
    for tr, te in folds:
        assert not set(sents["concept"].iloc[tr]) & set(sents["concept"].iloc[te])
    ours = probing.probe_layers(X, y, folds, probing.control_labels(sents["concept"], y))
    assert ours["balanced_accuracy"].max() < 0.7  # chance, within sampling noise
    # the control task (random labels per concept) is not learnable across concept-disjoint folds
    assert ours["control_balanced_accuracy"].max() < 0.75
    nested = probing.nested_probe(X, y, sents["item"], sents["concept"], folds)
    assert 0.3 < nested["balanced_accuracy"] < 0.7


def test_planted_linear_signal_is_found_at_its_layer_by_the_nested_choice():
    pairs = _xcomps_like(seed=1)
    sents = probing.probe_sentences(pairs)
    X = _states(sents, n_layers=4, concept_scale=1.0, signal_layer=2, signal=1.5, seed=1)
    by_layer, summary = probing.probe_pairs(X, {t: i for i, t in enumerate(sents["text"])},
                                            pairs)
    assert by_layer["balanced_accuracy"].idxmax() == 2
    assert by_layer.loc[2, "balanced_accuracy"] > 0.9 and by_layer.loc[2, "mcc"] > 0.8
    assert by_layer.loc[2, "selectivity"] > 0.3  # real minus control
    assert summary["nested_layer_min"] == summary["nested_layer_max"] == 2
    assert summary["nested_balanced_accuracy"] > 0.9
    assert summary["leaked_concepts"] == 0 and summary["n_sentences"] == len(sents)
    # the layers without signal stay near chance
    assert by_layer.drop(index=2)["balanced_accuracy"].max() < 0.7


def test_baselines_and_the_f1_of_always_answering_acceptable():
    y = np.r_[np.ones(10), np.zeros(40)]
    b = probing.baselines(y)
    assert b["f1"] == pytest.approx(2 * 0.2 / 1.2) and b["balanced_accuracy"] == 0.5
    from sklearn.metrics import f1_score
    assert b["f1"] == pytest.approx(f1_score(y, np.ones(50)))


def test_leak_free_groups_join_items_and_concepts():
    g = probing.leak_free_groups(["i1", "i1", "i2", "i3", "i4"], ["a", "b", "b", "c", "d"])
    assert g[0] == g[1] == g[2] and len({g[2], g[3], g[4]}) == 3


def test_control_labels_are_per_concept_with_the_class_balance():
    concepts = [f"c{i % 20}" for i in range(100)]
    y = np.r_[np.ones(20), np.zeros(80)]
    c = probing.control_labels(concepts, y, seed=3)
    per = pd.Series(c).groupby(concepts).nunique()
    assert (per == 1).all() and pd.Series(c).groupby(concepts).first().sum() == 4


def test_probe_errors_name_the_problem():
    pairs = _xcomps_like(n_items=3)
    sents = probing.probe_sentences(pairs)
    with pytest.raises(ProbeError, match="fewer than the 5 folds"):
        probing.make_folds(sents["label"], sents["item"], sents["concept"])
    bad = pairs.copy()
    bad.loc[0, "bad"] = bad.loc[1, "good"]
    with pytest.raises(ProbeError, match="no single label"):
        probing.probe_sentences(bad)
    with pytest.raises(KeyError, match="'property'"):
        probing.probe_sentences(pairs.drop(columns="property"))
