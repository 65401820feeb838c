"""The probing protocol on synthetic states with a known answer."""

import numpy as np
import pandas as pd
import pytest

from xcomps_utils import probing
from xcomps_utils.probing import ProbeError


def _xcomps_like(n_items=40, n_pos=20, n_neg=40, seed=0):
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
    assert leaky["balanced_accuracy"].mean() > 0.7  # memorised concepts look like knowledge
    folds, info = probing.make_folds(y, sents["item"], sents["concept"])
    assert info["grouping"] == "item, purged" and info["purged"] > 0
    assert info["leaked_concepts"] == 0 and info["leaked_items"] == 0
    for tr, te in folds:
        assert not set(sents["concept"].iloc[tr]) & set(sents["concept"].iloc[te])
        assert not set(sents["item"].iloc[tr]) & set(sents["item"].iloc[te])
    ours = probing.probe_layers(X, y, folds, probing.control_labels(sents["concept"], y))
    assert ours["balanced_accuracy"].mean() < 0.6  # chance, within sampling noise
    # the control task (a random label per concept) cannot be learnt across concept-disjoint
    # folds: it sits at chance whatever the states encode, so it measures nothing here
    assert ours["control_balanced_accuracy"].max() < 0.7
    nested = probing.nested_probe(X, y, sents["item"], sents["concept"], folds)
    assert 0.3 < nested["balanced_accuracy"] < 0.7


def test_splitting_items_turns_the_probe_below_chance_and_item_folds_do_not():
    # One negative type (a language x type cell: two sentences an item), concepts never recur;
    # the states carry the item's property phrase and nothing about the label. Folds grouped by
    # concept split items: when the acceptable sentence is trained on, the test holds its
    # negative, and the other way round, so a probe that learns the item predicts the wrong way
    # (the artifact behind the book's below-chance curves). Folds that keep items whole stay at
    # chance.
    from sklearn.model_selection import StratifiedGroupKFold

    rng = np.random.default_rng(0)
    rows = [{"property": f"prop{i}", "acceptable_concept": f"pos{i}",
             "unacceptable_concept": f"neg{i}_{t}", "good": f"pos{i} prop{i}",
             "bad": f"neg{i}_{t} prop{i}"} for i in range(60) for t in range(1)]
    sents = probing.probe_sentences(pd.DataFrame(rows))
    y = sents["label"].to_numpy()
    vec = {p: rng.normal(size=24) for p in sents["item"].unique()}
    X = (rng.normal(size=(len(sents), 3, 24))
         + 2.0 * np.stack([vec[p] for p in sents["item"]])[:, None, :]).astype(np.float32)
    by_concept = list(StratifiedGroupKFold(5, shuffle=True, random_state=0).split(
        X, y, pd.factorize(sents["concept"])[0]))
    split = probing.probe_layers(X, y, by_concept)["balanced_accuracy"]
    assert split.max() < 0.4  # consistently below chance
    folds, info = probing.make_folds(y, sents["item"], sents["concept"])
    assert info["grouping"] == "item+concept" and info["leaked_items"] == 0
    whole = probing.probe_layers(X, y, folds)["balanced_accuracy"]
    assert 0.38 < whole.mean() < 0.62


def test_planted_linear_signal_is_found_at_its_layer_and_beats_the_permutation_null():
    pairs = _xcomps_like(seed=1)
    sents = probing.probe_sentences(pairs)
    index = {t: i for i, t in enumerate(sents["text"])}
    X = _states(sents, n_layers=4, concept_scale=1.0, signal_layer=2, signal=1.5, seed=1)
    by_layer, summary = probing.probe_pairs(X, index, pairs, n_permutations=19)
    assert by_layer["balanced_accuracy"].idxmax() == 2
    assert by_layer.loc[2, "balanced_accuracy"] > 0.9 and by_layer.loc[2, "mcc"] > 0.8
    assert summary["nested_layer_min"] == summary["nested_layer_max"] == 2
    assert summary["nested_balanced_accuracy"] > 0.9
    assert summary["leaked_concepts"] == 0 and summary["n_sentences"] == len(sents)
    # the layers without signal stay near chance and under their null's 95th percentile + noise
    assert by_layer.drop(index=2)["balanced_accuracy"].max() < 0.7
    assert summary["p_permutation"] == pytest.approx(1 / 20)  # the smallest p of 19 draws
    assert by_layer.loc[2, "balanced_accuracy"] > by_layer.loc[2, "null_q95"] + 0.2
    assert summary["layer0_balanced_accuracy"] == by_layer.loc[0, "balanced_accuracy"]
    # no signal: the real labels are one more draw from the null
    X0 = _states(sents, n_layers=4, concept_scale=1.0, seed=2)
    _, s0 = probing.probe_pairs(X0, index, pairs, n_permutations=19)
    assert s0["p_permutation"] > 0.1



def test_fast_balanced_accuracy_is_sklearns_to_the_last_bit():
    """The permutation null and the inner layer choice score with probing._balanced_accuracy
    (without sklearn's input checks); its value is sklearn's exactly, so no null row or chosen
    layer moves."""
    from sklearn.metrics import balanced_accuracy_score

    rng = np.random.default_rng(0)
    for _ in range(2000):
        n = int(rng.integers(2, 130))
        y, pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
        y[:2] = [0, 1]
        assert probing._balanced_accuracy(y, pred) == balanced_accuracy_score(y, pred)
    y = np.array([1, 0, 0, 0, 0, 0, 0])  # an odd share: recalls with many bits
    for pred in ([1, 0, 1, 0, 0, 1, 0], [0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 0]):
        assert probing._balanced_accuracy(y, np.array(pred)) == balanced_accuracy_score(y, pred)

def test_permutation_keeps_each_items_label_share():
    labels = np.tile([1, 0, 0, 0, 0], 6)
    items = np.repeat(np.arange(6), 5)
    out = probing._permute_within(labels, items, np.random.default_rng(0))
    assert (pd.Series(out).groupby(items).sum() == 1).all() and not (out == labels).all()


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
