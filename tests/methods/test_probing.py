"""The probing protocol on synthetic states with a known answer."""

import numpy as np
import pandas as pd
import pytest

from xcomps_utils.methods import probing
from xcomps_utils.methods.probing import ProbeError


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
    assert leaky["balanced_accuracy"].mean() > 0.65  # memorised concepts look like knowledge
    folds, info = probing.make_folds(y, sents["item"], sents["concept"])
    assert info["grouping"] == "item, purged" and info["purged"] > 0
    assert info["leaked_concepts"] == 0 and info["leaked_items"] == 0
    for tr, te in folds:
        assert not set(sents["concept"].iloc[tr]) & set(sents["concept"].iloc[te])
        assert not set(sents["item"].iloc[tr]) & set(sents["item"].iloc[te])
    ours = probing.probe_layers(X, y, folds, probing.control_labels(sents["concept"], y))
    # chance, within sampling noise (a balanced accuracy on 40 + 160 sentences has a standard
    # error of about 0.045; its mean over four datasets, about 0.025)
    means = [ours["balanced_accuracy"].mean()]
    for seed in (1, 2, 3):
        s2 = probing.probe_sentences(_xcomps_like(seed=seed))
        y2 = s2["label"].to_numpy()
        f2, _ = probing.make_folds(y2, s2["item"], s2["concept"], seed=seed)
        means.append(probing.probe_layers(_states(s2, concept_scale=3.0, seed=seed), y2, f2)[
            "balanced_accuracy"].mean())
    assert abs(np.mean(means) - 0.5) < 0.1
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
    assert abs(summary["null_nested_mean"] - 0.5) < 0.05 and len(summary["null_nested"]) == 19
    # no signal: the real labels are one more draw from the null
    X0 = _states(sents, n_layers=4, concept_scale=1.0, seed=2)
    _, s0 = probing.probe_pairs(X0, index, pairs, n_permutations=19)
    assert s0["p_permutation"] > 0.1


def test_the_probe_is_sklearns_standardised_ridge_classifier():
    """probing._hat (the closed form every score and every permutation uses) gives the decision
    values of make_pipeline(StandardScaler(), RidgeClassifier(alpha)) fit on the same rows."""
    from sklearn.linear_model import RidgeClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    for n, h, alpha in ((60, 200, 1.0), (80, 12, 5.0)):
        X = rng.normal(size=(n, h)) * rng.uniform(0.1, 10, h) + rng.normal(size=h)
        X[:, 0] = 3.0  # a constant feature keeps scale 1, as StandardScaler's
        y = (rng.random(n) < 0.3).astype(int)
        tr, te = np.arange(n)[: n * 3 // 4], np.arange(n)[n * 3 // 4:]
        ref = make_pipeline(StandardScaler(), RidgeClassifier(alpha)).fit(X[tr], y[tr])
        ours = probing._hat(X, tr, te, alpha) @ (2.0 * y[tr] - 1)
        np.testing.assert_allclose(ours, ref.decision_function(X[te]), atol=1e-8)
        assert ((ours > 0) == ref.predict(X[te])).all()


def _language(signal=0.0, seed=0, n_items=12):
    """One synthetic language (item-whole, concept-disjoint folds, no purge): pairs, states with
    a planted direction of size ``signal`` at layer 1, and the sentence index."""
    pairs = _xcomps_like(n_items=n_items, n_pos=n_items, n_neg=200, seed=seed)
    sents = probing.probe_sentences(pairs)
    X = _states(sents, n_layers=3, dim=8, concept_scale=1.0, signal_layer=1 if signal else None,
                signal=signal, seed=seed)
    return pairs, X, {t: i for i, t in enumerate(sents["text"])}


def test_the_nested_null_reruns_the_nested_procedure_on_each_permutation():
    pairs, X, index = _language(seed=3)
    sents = probing.probe_sentences(pairs)
    y, items, concepts = sents["label"].to_numpy(), sents["item"].to_numpy(), sents["concept"]
    folds, _ = probing.make_folds(y, items, concepts)
    _, nested = probing.permutation_null(X, y, items, folds, 5, seed=7,
                                         concepts=concepts.to_numpy())
    rng = np.random.default_rng(7)
    for b in range(5):
        yb = probing._permute_within(y, items, rng)
        assert probing.make_folds(yb, items, concepts)[0][0][1].tolist() == folds[0][1].tolist()
        assert nested[b] == probing.nested_probe(X, yb, items, concepts, folds)[
            "balanced_accuracy"]


def test_joint_test_is_calibrated_and_reaches_a_decision_per_language():
    """At the statistic's level, observed scores exchangeable with their draws (a true null in
    every language, discrete like balanced accuracies): the pooled test decides at most at
    nominal + 3 SE, and a per-language decision after the max-T correction is reachable with
    199 draws and seven languages (Holm on per-language p-values of 1 / 200 is not)."""
    rng = np.random.default_rng(0)
    n_sims, B, k, level = 2000, 199, 7, 0.025
    decided = 0
    for _ in range(n_sims):
        allv = np.round(rng.normal(0.5, 0.05, (B + 1, k)) * 48) / 48
        decided += probing.joint_permutation_test(allv[0], allv[1:])["p_pooled"] <= level
    assert decided / n_sims <= level + 3 * np.sqrt(level * (1 - level) / n_sims)
    null = rng.normal(0.5, 0.05, (B, k))
    obs = np.full(k, 0.5)
    obs[2] = 0.8
    out = probing.joint_permutation_test(obs, null)
    assert out["p_adjusted"][2] == out["p_pooled"] == 1 / (B + 1)
    assert (np.delete(out["p_adjusted"], 2) > level).all()
    with pytest.raises(ValueError, match=r"\[B, 7\]"):
        probing.joint_permutation_test(obs, null[:, :3])


def _groups(langs):
    """Probe groups as :func:`xcomps_utils.methods.neuro.probes` writes them (one per language, over
    all types, pooled by the joint test), from synthetic languages ``{lang: signal}``."""
    rows = []
    for j, (lang, signal) in enumerate(langs.items()):
        pairs, X, index = _language(signal, seed=10 + j)
        _, summary = probing.probe_pairs(X, index, pairs, n_permutations=99, null_seed=[0, j])
        rows.append({"lang": lang, "subset": "all", **summary})
    g = pd.DataFrame(rows)
    joint = probing.joint_permutation_test(g["nested_balanced_accuracy"],
                                           np.column_stack(g.pop("null_nested")))
    return g.assign(p_adjusted=joint["p_adjusted"], p_pooled=joint["p_pooled"], n_pooled=len(g))


def test_one_language_with_a_signal_among_six_without_is_decided_and_the_page_says_so():
    from xcomps_utils.analysis import xcomps_paper

    langs = {f"l{i}": 0.0 for i in range(7)}
    langs["l3"] = 0.6  # nested balanced accuracy about 0.8 in one language of seven
    g = _groups(langs)
    assert g["p_pooled"].iloc[0] <= 0.025
    assert g.set_index("lang")["p_adjusted"].le(0.025).tolist() == [i == 3 for i in range(7)]
    text = xcomps_paper.probe_verdict(g, list(langs))
    assert "**supported**" in text and "Beyond its null after the correction over the " \
        "languages: l3 (" in text and "l0 (" in text.split("Not told apart")[1]
    assert "in 1 of 7 languages" in xcomps_paper.probe_caveat(g)


def test_probe_paragraph_flips_with_the_data():
    from xcomps_utils.analysis import xcomps_paper

    null = _groups({"a": 0.0, "b": 0.0, "c": 0.0})
    text = xcomps_paper.probe_verdict(null, ["a", "b", "c"])
    assert "**inconclusive at this sample size**" in text and "Beyond its null" not in text
    assert "in 0 of 3 languages" in xcomps_paper.probe_caveat(null)
    strong = _groups({"a": 1.5, "b": 1.5, "c": 1.5})
    text = xcomps_paper.probe_verdict(strong, ["a", "b", "c"])
    assert "**supported**" in text and "Not told apart" not in text and "noise" not in text
    assert "in 3 of 3 languages" in xcomps_paper.probe_caveat(strong)
    assert "may be noise" not in xcomps_paper.probe_caveat(strong)
    coarse = strong.assign(n_permutations=19)  # 1/20 > 0.025: no outcome could be decided
    assert "**cannot be decided**" in xcomps_paper.probe_verdict(coarse, ["a", "b", "c"])


def test_power_of_the_joint_test_at_the_stated_effect():
    """Stated effect: a planted direction of size 0.6 in one language of three (nested balanced
    accuracy about 0.8 on 60 sentences); the pooled test rejects in at least 5 of 6 datasets
    (the calibration script measures the rate on more)."""
    rejected = 0
    for rep in range(6):
        g = []
        for j, signal in enumerate((0.6, 0.0, 0.0)):
            pairs, X, index = _language(signal, seed=100 + 3 * rep + j)
            g.append(probing.probe_pairs(X, index, pairs, n_permutations=99,
                                         null_seed=[rep, j])[1])
        joint = probing.joint_permutation_test([s["nested_balanced_accuracy"] for s in g],
                                               np.column_stack([s["null_nested"] for s in g]))
        rejected += joint["p_pooled"] <= 0.025
    assert rejected >= 5


def test_fast_balanced_accuracy_is_sklearns_to_the_last_bit():
    """The permutation null and the inner layer choice score every column at once with
    probing._balanced_accuracy; its value is sklearn's exactly, so no null draw or chosen layer
    moves."""
    from sklearn.metrics import balanced_accuracy_score

    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(2, 130))
        Y, P = rng.integers(0, 2, (n, 8)), rng.integers(0, 2, (n, 8))
        Y[:2] = [[0], [1]]
        ours = probing._balanced_accuracy(Y, P)
        assert ours.tolist() == [balanced_accuracy_score(Y[:, b], P[:, b]) for b in range(8)]
    y = np.array([1, 0, 0, 0, 0, 0, 0])  # an odd share: recalls with many bits
    for pred in ([1, 0, 1, 0, 0, 1, 0], [0, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 0]):
        assert probing._balanced_accuracy(y[:, None], np.array(pred)[:, None])[0] == \
            balanced_accuracy_score(y, pred)


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
