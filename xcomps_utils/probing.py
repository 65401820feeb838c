"""A probing protocol a reviewer accepts: leak-free folds, a layer chosen without peeking,
chance-aware scores, and baselines that hold under those folds.

XCOMPS' Neuro method (He et al., 2025) trains a logistic-regression probe on the last-token state
of each layer to tell acceptable from unacceptable sentences and reports F1 averaged over five
cross-validation folds. Read naively, four things mislead:

* **Peeking at the layer.** The best of ``L + 1`` cross-validated scores is biased upward.
  :func:`nested_probe` chooses the layer on inner folds of each outer training set only
  (nested cross-validation; Varma & Simon, 2006) and scores it on the outer test fold.
* **F1 is not chance-aware.** With one acceptable sentence to four unacceptable ones, always
  answering "acceptable" already gives F1 = 2p / (1 + p) ≈ 0.33. Balanced accuracy (chance 0.5)
  and the Matthews correlation (chance 0) are reported beside it, and :func:`baselines` gives the
  majority-class scores.
* **Concept identity leaks across folds.** A concept can be the acceptable concept of one item
  and a negative of another. No concept may sit in the training and the test sentences of a
  fold (:func:`make_folds`).
* **Splitting an item turns the probe below chance.** An item's five sentences share its
  property phrase, and exactly one of them is acceptable. Folds that keep concepts apart but
  split items (grouping by concept alone) put some of an item's sentences in training and the
  rest in test, and the label share of the two parts is anti-correlated: if the acceptable one is
  trained on, the test part is all negatives, and the other way round. A probe that learns the
  property phrase then predicts the wrong way on the test part: balanced accuracy *below* 0.5
  (shown on synthetic states in ``tests/test_probing.py``). So folds keep every item whole, and a
  concept shared between a test item and training items is removed from that fold's *training*
  sentences (``grouping="item, purged"``).

**Baselines that hold under these folds.** A control task (Hewitt & Liang, 2019: a random label
per concept) cannot be learnt when test concepts are never trained on: it sits at 0.5 whatever a
layer encodes, so it is not used (:func:`control_labels` stays for exercises on leaking folds,
where it measures memorisation). Instead: a **label-permutation null** (:func:`permutation_null`:
labels shuffled within items, the same folds, every layer refit; the null of the best layer's
score, which also bounds the nested score), and the **embedding layer** (layer 0: what the input
tokens alone give, the floor any contextual layer should beat).

Scores are computed from the pooled out-of-fold predictions (every sentence is predicted once, by
a probe that did not see it), which stays defined when a small test fold holds one class only.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd

__all__ = ["probe_sentences", "leak_free_groups", "control_labels", "baselines", "make_folds",
           "probe_layers", "nested_probe", "permutation_null", "probe_pairs", "probe_tables",
           "ProbeError", "DEFAULT_N_PERMUTATIONS"]


class ProbeError(ValueError):
    """The probe cannot be trained as asked (one class, too few examples for the folds)."""


#: label permutations of the probe's null per language: 19, a smallest per-language p of 1/20 =
#: 0.05. Per-language p-values are descriptions (no per-language correction could reach 0.025
#: with 39 either); the decision pools the languages (Fisher's method,
#: :func:`xcomps_utils.xcomps_paper.probe_verdict`), which 19 per language can reach.
DEFAULT_N_PERMUTATIONS = 19

#: worker processes for the permutation null (each fit stays on one BLAS thread):
#: ``XCOMPS_PROBE_JOBS``, else every core
PROBE_JOBS = int(os.environ.get("XCOMPS_PROBE_JOBS", 0)) or (os.cpu_count() or 1)

#: a group may hold at most this share of the sentences for concept-disjoint folds to be used
MAX_GROUP_SHARE = 0.5


def probe_sentences(pairs: pd.DataFrame, item: str = "property") -> pd.DataFrame:
    """The distinct sentences of some minimal pairs, labelled for a probe.

    Returns:
        one row per distinct sentence, first occurrence order: ``text``, ``label`` (1 acceptable,
        0 unacceptable), ``item`` (``pairs[item]``), ``concept`` (the acceptable or unacceptable
        concept when the pairs have them, else the sentence itself: no concept to leak).

    Raises:
        KeyError: ``pairs`` lacks ``good``, ``bad`` or the item column.
        ProbeError: a sentence is acceptable in one pair and unacceptable in another.
    """
    for c in ("good", "bad", item):
        if c not in pairs:
            raise KeyError(f"pairs need a {c!r} column to be probed; they have {list(pairs)}")
    has = {"acceptable_concept", "unacceptable_concept"} <= set(pairs.columns)
    rows = pd.DataFrame({
        "text": list(pairs["good"]) + list(pairs["bad"]),
        "label": [1] * len(pairs) + [0] * len(pairs),
        "item": list(pairs[item]) * 2,
        "concept": (list(pairs["acceptable_concept"]) + list(pairs["unacceptable_concept"])
                    if has else list(pairs["good"]) + list(pairs["bad"]))})
    both = rows.groupby("text")["label"].nunique()
    if (both > 1).any():
        raise ProbeError(f"sentence {both[both > 1].index[0]!r} is acceptable in one pair and "
                         f"unacceptable in another: it has no single label")
    return rows.drop_duplicates("text").reset_index(drop=True)


def leak_free_groups(items, concepts) -> np.ndarray:
    """Groups of sentences such that no item and no concept is shared between two groups: the
    connected components of the graph linking sentences of one item or one concept.

    Args:
        items, concepts: ``N`` labels each.

    Returns:
        ``N`` integer group ids (0 .. n_groups - 1).
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(items)
    rows, cols = [], []
    for keys in (items, concepts):  # link every sentence to the first one sharing its key
        first = pd.factorize(np.asarray(keys, dtype=object))[0]
        rows.append(np.arange(n))
        cols.append(pd.Series(np.arange(n)).groupby(first).transform("min").to_numpy())
    graph = coo_matrix((np.ones(2 * n), (np.concatenate(rows), np.concatenate(cols))), (n, n))
    return pd.factorize(connected_components(graph, directed=False)[1])[0]


def control_labels(concepts, labels, seed: int = 0) -> np.ndarray:
    """The control task of Hewitt & Liang (2019) for a sentence probe: every concept gets one
    random label, drawn so the share of concepts labelled 1 matches the share of sentences
    labelled 1; a sentence takes its concept's label.

    Returns:
        ``N`` 0/1 labels.
    """
    concepts, labels = np.asarray(concepts, dtype=object), np.asarray(labels)
    uniq = pd.unique(concepts)
    rng = np.random.default_rng(seed)
    k = int(round(labels.mean() * len(uniq)))
    k = min(max(k, 1), len(uniq) - 1) if len(uniq) > 1 else k
    ones = set(rng.choice(len(uniq), size=k, replace=False).tolist())
    lab = {c: int(i in ones) for i, c in enumerate(uniq)}
    return np.array([lab[c] for c in concepts])


def baselines(labels) -> dict:
    """Scores of the majority-free trivial probe that always answers "acceptable" (label 1):
    ``f1`` = 2p / (1 + p) with p the share of acceptable sentences, ``balanced_accuracy`` 0.5,
    ``mcc`` 0. The floor every probe score is read against."""
    p = float(np.mean(labels))
    return {"f1": 2 * p / (1 + p) if p > 0 else 0.0, "balanced_accuracy": 0.5, "mcc": 0.0}


def make_folds(labels, items, concepts, n_splits: int = 5, seed: int = 0
               ) -> tuple[list[tuple[np.ndarray, np.ndarray]], dict]:
    """Cross-validation folds that keep every item whole and no concept on both sides.

    Tried in this order, the first that fills ``n_splits`` stratified folds
    (``StratifiedGroupKFold``) with both classes in every training set wins:

    1. ``"item+concept"``: groups of :func:`leak_free_groups` (no item and no concept split),
       unless one group holds more than :data:`MAX_GROUP_SHARE` of the sentences;
    2. ``"item, purged"``: one group per item; then, in each fold, the training sentences that
       name a concept of the test sentences are left out of that fold's training set (counted in
       ``purged``). No item is split (splitting one anti-correlates the label shares of its two
       parts, see the module docstring) and no concept is on both sides.

    Returns:
        ``(folds, info)``: folds as (train, test) index arrays; ``info`` with ``grouping``,
        ``n_groups``, ``leaked_concepts`` (0), ``leaked_items`` (0) and ``purged`` (training
        sentences left out, summed over folds).

    Raises:
        ProbeError: one class only, or too few items or examples of a class for ``n_splits``,
            or a purged training set with one class.
    """
    from sklearn.model_selection import StratifiedGroupKFold

    labels = np.asarray(labels)
    concepts = np.asarray(concepts, dtype=object)
    items = np.asarray(items, dtype=object)
    classes, counts = np.unique(labels, return_counts=True)
    if len(classes) < 2:
        raise ProbeError(f"only one class ({classes.tolist()}) among {len(labels)} examples: "
                         f"nothing to probe")
    if counts.min() < n_splits:
        raise ProbeError(f"class {classes[counts.argmin()]!r} has {counts.min()} examples, fewer "
                         f"than the {n_splits} folds")

    def split(groups, purge):
        if len(np.unique(groups)) < n_splits:
            return None
        if np.bincount(groups).max() / len(groups) > MAX_GROUP_SHARE:
            return None
        cv = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
        folds = list(cv.split(np.zeros(len(labels)), labels, groups))
        if purge:
            folds = [(tr[~np.isin(concepts[tr], concepts[te])], te) for tr, te in folds]
        if any(len(np.unique(labels[tr])) < 2 or len(te) == 0 for tr, te in folds):
            return None
        return folds

    candidates = (("item+concept", lambda: leak_free_groups(items, concepts), False),
                  ("item, purged", lambda: pd.factorize(items)[0], True))
    for grouping, make, purge in candidates:
        groups = make()
        folds = split(groups, purge)
        if folds is not None:
            break
    else:
        raise ProbeError(f"{len(np.unique(groups))} items cannot fill {n_splits} folds with "
                         f"both classes in every training set")
    leaked_c, leaked_i = set(), set()
    for tr, te in folds:
        leaked_c |= set(concepts[tr]) & set(concepts[te])
        leaked_i |= set(items[tr]) & set(items[te])
    purged = sum(len(labels) - len(te) - len(tr) for tr, te in folds)
    return folds, {"grouping": grouping, "n_groups": int(len(np.unique(groups))),
                   "leaked_concepts": len(leaked_c), "leaked_items": len(leaked_i),
                   "purged": int(purged)}


def _probe(max_iter):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=max_iter))


def _scores(y, pred) -> dict:
    from sklearn.metrics import balanced_accuracy_score, f1_score, matthews_corrcoef

    return {"f1": float(f1_score(y, pred, zero_division=0.0)),
            "balanced_accuracy": float(balanced_accuracy_score(y, pred)),
            "mcc": float(matthews_corrcoef(y, pred))}


def _balanced_accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    """``sklearn.metrics.balanced_accuracy_score(y, pred)`` with the same arithmetic (the mean of
    the per-class recalls of the classes in ``y``; equal to the last bit, tested) without its
    input checks, a noticeable share of the permutation null's and the inner layer choice's
    loops (thousands of calls per language)."""
    recalls = np.array([np.count_nonzero(pred[y == c] == c) / np.count_nonzero(y == c)
                        for c in np.unique(y)])
    return float(np.mean(recalls))


def _single_threaded(fn):
    """Fit small probes on one BLAS thread: with few sentences, multithreaded BLAS only adds
    overhead, and on a loaded machine it oversubscribes the cores (measured: 350 ms per fit
    instead of 13 ms, 50 sentences x 576 dimensions, two busy cores)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):
            return fn(*args, **kwargs)
    return wrapper


def _oof(X, y, folds, max_iter, counter) -> np.ndarray:
    """Out-of-fold predictions of one layer's probe."""
    from sklearn.exceptions import ConvergenceWarning

    pred = np.empty(len(y), dtype=int)
    for tr, te in folds:
        if len(np.unique(y[tr])) < 2:  # a control task can leave one class in a training set
            pred[te] = y[tr][0]
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            pred[te] = _probe(max_iter).fit(X[tr], y[tr]).predict(X[te])
        counter[0] += sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    return pred


@_single_threaded
def probe_layers(states: np.ndarray, labels, folds, control=None, max_iter: int = 1000
                 ) -> pd.DataFrame:
    """A logistic-regression probe (standardisation + L2 logistic regression, C = 1) per layer,
    scored on pooled out-of-fold predictions.

    Args:
        states: ``[N, L + 1, H]`` (float32) from :func:`xcomps_utils.neuro.last_token_states`.
        labels: ``N`` 0/1 labels (1: acceptable).
        folds: (train, test) index pairs from :func:`make_folds`.
        control: ``N`` control-task labels (:func:`control_labels`), or None.

    Returns:
        one row per layer: ``layer``, ``f1``, ``balanced_accuracy``, ``mcc``, and with
        ``control``: ``control_balanced_accuracy``, ``selectivity`` (real minus control balanced
        accuracy); ``convergence_warnings`` (fits that did not converge in ``max_iter``).
    """
    labels = np.asarray(labels)
    rows = []
    for layer in range(states.shape[1]):
        X = np.asarray(states[:, layer], dtype=np.float64)
        counter = [0]
        row = {"layer": layer, **_scores(labels, _oof(X, labels, folds, max_iter, counter))}
        if control is not None:
            c = _scores(np.asarray(control), _oof(X, np.asarray(control), folds, max_iter, counter))
            row["control_balanced_accuracy"] = c["balanced_accuracy"]
            row["selectivity"] = row["balanced_accuracy"] - c["balanced_accuracy"]
        row["convergence_warnings"] = counter[0]
        rows.append(row)
    return pd.DataFrame(rows)


@_single_threaded
def nested_probe(states: np.ndarray, labels, items, concepts, folds, inner_splits: int = 3,
                 seed: int = 0, max_iter: int = 1000) -> dict:
    """The probe's score at a layer chosen without peeking (nested cross-validation).

    In each outer fold, the layer with the best balanced accuracy over ``inner_splits`` inner
    folds of the outer training sentences (built like the outer ones, :func:`make_folds`) is
    fit on the whole outer training set and predicts the outer test sentences; the pooled outer
    predictions are scored. Unlike the maximum over layers of :func:`probe_layers`, this is an
    unbiased estimate of what "the best layer" achieves on unseen sentences.

    Returns:
        ``f1``, ``balanced_accuracy``, ``mcc`` of the pooled outer predictions; ``layer_mean``,
        ``layer_min``, ``layer_max`` of the layers chosen by the outer folds.
    """
    labels = np.asarray(labels)
    items, concepts = np.asarray(items, dtype=object), np.asarray(concepts, dtype=object)
    pred = np.empty(len(labels), dtype=int)
    chosen, counter = [], [0]
    for tr, te in folds:
        try:
            inner, _ = make_folds(labels[tr], items[tr], concepts[tr], inner_splits, seed)
        except ProbeError:
            inner = None
        if inner is None:
            raise ProbeError(f"an outer training set of {len(tr)} sentences cannot be split into "
                             f"{inner_splits} inner folds")
        best, best_score = 0, -np.inf
        for layer in range(states.shape[1]):
            X = np.asarray(states[tr, layer], dtype=np.float64)
            score = _balanced_accuracy(labels[tr], _oof(X, labels[tr], inner, max_iter, counter))
            if score > best_score:
                best, best_score = layer, score
        chosen.append(best)
        X = np.asarray(states[:, best], dtype=np.float64)
        pred[te] = _probe(max_iter).fit(X[tr], labels[tr]).predict(X[te])
    return {**_scores(labels, pred), "layer_mean": float(np.mean(chosen)),
            "layer_min": int(min(chosen)), "layer_max": int(max(chosen))}


def _permute_within(labels: np.ndarray, items: np.ndarray, rng) -> np.ndarray:
    """``labels`` shuffled among the sentences of each item (each item keeps its label share)."""
    out = labels.copy()
    codes = pd.factorize(np.asarray(items, dtype=object))[0]
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    for idx in np.split(order, bounds):
        out[idx] = labels[rng.permutation(idx)]
    return out


def _null_row(states, y, folds, max_iter) -> np.ndarray:
    """Balanced accuracy by layer of the probe on one permutation of the labels."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return np.array([_balanced_accuracy(y, _oof(np.asarray(states[:, layer], dtype=np.float64),
                                                    y, folds, max_iter, [0]))
                         for layer in range(states.shape[1])])


def permutation_null(states: np.ndarray, labels, items, folds, n_permutations: int =
                     DEFAULT_N_PERMUTATIONS, seed: int = 0, max_iter: int = 1000,
                     n_jobs: int | None = None) -> np.ndarray:
    """The label-permutation null of the per-layer probe (Ojala & Garriga, 2010).

    Each permutation shuffles the labels among the sentences of every item (so each item keeps
    one acceptable sentence to its negatives, and the folds keep their class balance), refits
    the probe of every layer on the same folds, and scores its pooled out-of-fold predictions.
    Under the null that the states carry nothing about acceptability beyond the item, the real
    labels are one more draw from this distribution. Permutations run in ``n_jobs`` worker
    processes (joblib; default :data:`PROBE_JOBS`); the result does not depend on it.

    Args:
        states: ``[N, L + 1, H]``; labels, items: ``N`` each; folds: from :func:`make_folds`.

    Returns:
        ``[n_permutations, L + 1]`` balanced accuracies. The null of the best layer's score is
        its row-wise maximum; it also bounds the nested score (whose layer is chosen with less
        freedom), so a p-value of the nested score against it is conservative.
    """
    from joblib import Parallel, delayed

    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    ys = [_permute_within(labels, items, rng) for _ in range(n_permutations)]
    jobs = min(n_jobs or PROBE_JOBS, n_permutations) or 1
    rows = Parallel(n_jobs=jobs)(delayed(_null_row)(states, y, folds, max_iter) for y in ys)
    return np.array(rows).reshape(n_permutations, states.shape[1])


def probe_pairs(states, sentence_index: dict, pairs: pd.DataFrame, item: str = "property",
                n_splits: int = 5, inner_splits: int = 3, seed: int = 0, nested: bool = True,
                n_permutations: int = 0, max_iter: int = 1000, n_jobs: int | None = None
                ) -> tuple[pd.DataFrame, dict]:
    """The whole protocol on the sentences of some minimal pairs.

    Args:
        states: indexable by a list of rows, giving ``[n, L + 1, H]``; ``sentence_index`` maps a
            sentence to its row.
        pairs: minimal pairs with ``good``, ``bad``, the ``item`` column and, for XCOMPS,
            ``acceptable_concept`` / ``unacceptable_concept``.
        nested: also run :func:`nested_probe` (about ``inner_splits`` times the cost).
        n_permutations: label permutations of :func:`permutation_null` (0: none; each costs
            one per-layer probe).
        n_jobs: worker processes of :func:`permutation_null` (default :data:`PROBE_JOBS`; the
            result does not depend on it).

    Returns:
        ``(by_layer, summary)``: :func:`probe_layers`' table (with ``n_permutations``: a
        ``null_q95`` column, the null's 95th percentile per layer), and a dict with
        ``n_sentences``, ``n_acceptable``, ``n_groups``, ``grouping``, ``leaked_concepts``,
        ``leaked_items``, ``purged``, ``majority_f1``, ``layer0_balanced_accuracy`` (the
        embedding layer), (``nested``) ``nested_f1``, ``nested_balanced_accuracy``,
        ``nested_mcc``, ``nested_layer_mean``/``min``/``max``, and (``n_permutations``)
        ``null_max_q95`` (95th percentile of the null's best layer), ``p_permutation`` (the
        nested score against the null's best layer, or the best layer's score without
        ``nested``; ``(1 + k) / (1 + n)``) and ``n_permutations``.

    Raises:
        ProbeError: see :func:`make_folds`.
    """
    sents = probe_sentences(pairs, item)
    y = sents["label"].to_numpy()
    folds, info = make_folds(y, sents["item"], sents["concept"], n_splits, seed)
    X = np.asarray(states[[sentence_index[t] for t in sents["text"]]])
    by_layer = probe_layers(X, y, folds, None, max_iter)
    summary = {"n_sentences": len(sents), "n_acceptable": int(y.sum()), **info,
               "majority_f1": baselines(y)["f1"],
               "layer0_balanced_accuracy": float(by_layer["balanced_accuracy"].iloc[0])}
    if nested:
        nest = nested_probe(X, y, sents["item"], sents["concept"], folds, inner_splits, seed,
                            max_iter)
        summary.update({f"nested_{k}": v for k, v in nest.items()})
    if n_permutations:
        null = permutation_null(X, y, sents["item"].to_numpy(), folds, n_permutations, seed,
                                max_iter, n_jobs)
        by_layer["null_q95"] = np.quantile(null, 0.95, axis=0)
        best = null.max(axis=1)
        score = (summary["nested_balanced_accuracy"] if nested
                 else float(by_layer["balanced_accuracy"].max()))
        summary.update(null_max_q95=float(np.quantile(best, 0.95)),
                       p_permutation=float((1 + np.sum(best >= score)) / (1 + len(best))),
                       n_permutations=n_permutations)
    return by_layer, summary


def probe_tables(neuro: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split the widened Neuro measures (:meth:`xcomps_utils.methods.Results.wide`) into a table
    by layer and one by probe group.

    Returns:
        ``(by_layer, groups)``: ``by_layer`` one row per group and layer ``>= 0`` with the
        per-layer scores and each group's ``n_sentences``, ``majority_f1``; ``groups`` one row per
        probe group (``lang``, ``subset``) with its summary (sentence counts, fold grouping,
        leaked concepts, majority baseline, nested scores).
    """
    if len(neuro) == 0:
        return pd.DataFrame(), pd.DataFrame()
    keys = [c for c in ("run", "method", "dataset", "task", "lang", "subset") if c in neuro]
    layer = neuro[neuro["layer"] >= 0].dropna(axis=1, how="all")
    groups = neuro[neuro["layer"] < 0].dropna(axis=1, how="all")
    groups = groups.drop(columns=[c for c in ("pair_id", "item", "wording", "order", "layer")
                                  if c in groups]).reset_index(drop=True)
    by_layer = layer.merge(groups[keys + ["n_sentences", "majority_f1"]], on=keys, how="left")
    return by_layer.reset_index(drop=True), groups
