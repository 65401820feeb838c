"""A probing protocol a reviewer accepts: leak-free folds, a layer chosen without peeking,
chance-aware scores, and baselines that hold under those folds.

XCOMPS' Neuro method (He et al., 2025) trains a logistic-regression probe on the last-token state
of each layer to tell acceptable from unacceptable sentences and reports F1 averaged over five
cross-validation folds. The probe here is a linear classifier in closed form (standardised
states, ridge regression on +-1 targets, sklearn's ``RidgeClassifier``; :func:`_hat`): its fit on
a training set is a linear map of the labels, so the permutation null reruns the whole procedure
on hundreds of label permutations for the cost of matrix products. Read naively, four things
mislead:

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
  (shown on synthetic states in ``tests/methods/test_probing.py``). So folds keep every item whole, and a
  concept shared between a test item and training items is removed from that fold's *training*
  sentences (``grouping="item, purged"``).

**Baselines that hold under these folds.** A control task (Hewitt & Liang, 2019: a random label
per concept) cannot be learnt when test concepts are never trained on: it sits at 0.5 whatever a
layer encodes, so it is not used (:func:`control_labels` stays for exercises on leaking folds,
where it measures memorisation). Instead: a **label-permutation null** (:func:`permutation_null`: labels shuffled within items,
the same folds, every layer refit and the nested procedure rerun, its layer choice included), and
the **embedding layer** (layer 0: what the input tokens alone give, the floor any contextual
layer should beat). Over languages, one joint test (:func:`joint_permutation_test`, max-T over
the languages' standardised nested scores) decides whether the probe beats shuffled labels in at
least one language and, from the same draws, in which.

Scores are computed from the pooled out-of-fold predictions (every sentence is predicted once, by
a probe that did not see it), which stays defined when a small test fold holds one class only.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..declare import ParameterError
from ..errors import NotFound, XcompsError

__all__ = ["probe_sentences", "leak_free_groups", "control_labels", "baselines", "make_folds",
           "probe_layers", "nested_probe", "permutation_null", "joint_permutation_test",
           "probe_pairs", "probe_tables", "RIDGE_ALPHA",
           "ProbeError", "DEFAULT_N_PERMUTATIONS"]


class ProbeError(XcompsError, ValueError):
    """The probe cannot be trained as asked (one class, too few examples for the folds)."""


#: label permutations of the probe's null per language: 199, a smallest p of 1 / 200 = 0.005,
#: per language and, after the max-T correction over languages (:func:`joint_permutation_test`),
#: whatever their number; so a language can be decided at one-sided 0.025.
DEFAULT_N_PERMUTATIONS = 199

#: a group may hold at most this share of the sentences for concept-disjoint folds to be used
MAX_GROUP_SHARE = 0.5


def probe_sentences(pairs: pd.DataFrame, item: str = "property") -> pd.DataFrame:
    """The distinct sentences of some minimal pairs, labelled for a probe.

    Returns:
        one row per distinct sentence, first occurrence order: ``text``, ``label`` (1 acceptable,
        0 unacceptable), ``item`` (``pairs[item]``), ``concept`` (the acceptable or unacceptable
        concept when the pairs have them, else the sentence itself: no concept to leak).

    Raises:
        NotFound: (a ``KeyError``) ``pairs`` lacks ``good``, ``bad`` or the item column.
        ProbeError: a sentence is acceptable in one pair and unacceptable in another.
    """
    for c in ("good", "bad", item):
        if c not in pairs:
            raise NotFound(f"pairs need a {c!r} column to be probed; they have {list(pairs)}")
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


def _standardise(X: np.ndarray, tr: np.ndarray) -> np.ndarray:
    """``X`` scaled by the mean and standard deviation of its rows ``tr`` (sklearn's
    ``StandardScaler`` fit on the training rows: a constant feature keeps scale 1)."""
    mu, sd = X[tr].mean(axis=0), X[tr].std(axis=0)
    return (X - mu) / np.where(sd < 10 * np.finfo(float).eps, 1.0, sd)


def _hat(X: np.ndarray, tr: np.ndarray, te: np.ndarray, alpha: float) -> np.ndarray:
    """The probe fit on rows ``tr`` as a linear map of the training targets: ``G`` of shape
    ``[len(te), len(tr)]`` with decision values ``G @ t[tr]`` on rows ``te`` for any ``t`` in
    {-1, +1} (predicted acceptable where > 0). The probe is sklearn's
    ``make_pipeline(StandardScaler(), RidgeClassifier(alpha))`` (equal predictions, tested),
    solved in its dual form: with ``Z`` the standardised training states and ``K = Z Z^T``,
    ``w = Z^T (K + alpha I)^-1 (t - mean t)`` and intercept ``mean t``. ``G`` does not depend
    on the labels, so a label permutation costs a matrix product, not a fit."""
    Z = _standardise(X, tr)
    ztr = Z[tr]
    K = ztr @ ztr.T
    K[np.diag_indices_from(K)] += alpha
    S = np.linalg.solve(K, ztr @ Z[te].T).T
    return S - S.mean(axis=1, keepdims=True) + 1.0 / len(tr)


def _scores(y, pred) -> dict:
    from sklearn.metrics import balanced_accuracy_score, f1_score, matthews_corrcoef

    return {"f1": float(f1_score(y, pred, zero_division=0.0)),
            "balanced_accuracy": float(balanced_accuracy_score(y, pred)),
            "mcc": float(matthews_corrcoef(y, pred))}


def _balanced_accuracy(Y: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Balanced accuracy of every column: ``Y``, ``P`` ``[n, B]`` 0/1 (true, predicted) ->
    ``[B]``, equal to ``sklearn.metrics.balanced_accuracy_score`` of each column to the last
    bit (the mean of the recalls of the classes in the column; tested)."""
    Y, P = np.asarray(Y, dtype=bool), np.asarray(P, dtype=bool)
    pos = Y.sum(axis=0)
    neg = len(Y) - pos
    with np.errstate(invalid="ignore", divide="ignore"):
        r1 = (Y & P).sum(axis=0) / pos
        r0 = (~Y & ~P).sum(axis=0) / neg
    return np.where(pos == 0, r0, np.where(neg == 0, r1, (r0 + r1) / 2))


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


class _Probe:
    """The probe's hat matrices (:func:`_hat`) of one set of states, computed once per layer and
    fold and shared by the observed labels and every permutation."""

    def __init__(self, states: np.ndarray, alpha: float):
        self.states, self.alpha, self.cache, self.fallbacks = states, alpha, {}, 0

    def hat(self, layer: int, tr: np.ndarray, te: np.ndarray) -> np.ndarray:
        key = (layer, tr.tobytes(), te.tobytes())
        if key not in self.cache:
            self.cache[key] = _hat(np.asarray(self.states[:, layer], dtype=np.float64), tr, te,
                                   self.alpha)
        return self.cache[key]

    def oof(self, layer: int, Y: np.ndarray, folds) -> np.ndarray:
        """Out-of-fold 0/1 predictions ``[n, B]`` of one layer's probe for every column of
        ``Y`` (``[n, B]`` 0/1 labels)."""
        T = 2.0 * Y - 1.0
        pred = np.zeros(Y.shape, dtype=bool)
        for tr, te in folds:
            pred[te] = self.hat(layer, tr, te) @ T[tr] > 0
        return pred

    def nested(self, Y: np.ndarray, items, concepts, folds, inner_splits: int, seed: int,
               observed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The nested procedure for every column of ``Y`` (``[n, B]`` 0/1 labels): outer
        predictions ``[n, B]`` and the layer each outer fold chose ``[n_folds, B]``. The inner
        folds are :func:`make_folds` of each column's outer training labels; they depend on
        the labels only through each item's label count there (through StratifiedGroupKFold),
        so columns with the same counts share them. Where a permuted column's outer training
        set cannot be split (a purged training set left with one class), the inner folds of
        the ``observed`` labels are used (counted in ``self.fallbacks``); without
        ``observed``, :class:`ProbeError`."""
        n_layers = self.states.shape[1]
        pred = np.zeros(Y.shape, dtype=bool)
        chosen = np.zeros((len(folds), Y.shape[1]), dtype=int)
        for f, (tr, te) in enumerate(folds):
            codes = pd.factorize(np.asarray(items[tr], dtype=object))[0]
            counts = np.stack([np.bincount(codes, Y[tr, b]) for b in
                               range(Y.shape[1])])
            _, key_of = np.unique(counts, axis=0, return_inverse=True)
            for k in np.unique(key_of):
                cols = np.flatnonzero(key_of.ravel() == k)
                y_tr = Y[tr][:, cols]
                try:
                    inner, _ = make_folds(y_tr[:, 0], items[tr], concepts[tr], inner_splits,
                                          seed)
                except ProbeError:
                    if observed is None:
                        raise ProbeError(f"an outer training set of {len(tr)} sentences cannot "
                                         f"be split into {inner_splits} inner folds") from None
                    inner, _ = make_folds(observed[tr], items[tr], concepts[tr], inner_splits,
                                          seed)
                    self.fallbacks += len(cols)
                absolute = [(tr[a], tr[b]) for a, b in inner]  # the cache's keys
                scores = np.empty((n_layers, len(cols)))
                T = 2.0 * y_tr - 1.0
                for layer in range(n_layers):
                    p = np.zeros(y_tr.shape, dtype=bool)
                    for (a, b), (ra, rb) in zip(absolute, inner):
                        p[rb] = self.hat(layer, a, b) @ T[ra] > 0
                    scores[layer] = _balanced_accuracy(y_tr, p)
                best = scores.argmax(axis=0)  # the first best layer, as a strict > loop
                chosen[f, cols] = best
                for layer in np.unique(best):
                    c = cols[best == layer]
                    pred[te[:, None], c] = self.hat(layer, tr, te) @ (2.0 * Y[tr][:, c] - 1) > 0
        return pred, chosen


#: ridge penalty of the probe on standardised states (sklearn's ``RidgeClassifier`` default)
RIDGE_ALPHA = 1.0


@_single_threaded
def probe_layers(states: np.ndarray, labels, folds, control=None, alpha: float = RIDGE_ALPHA
                 ) -> pd.DataFrame:
    """A linear probe per layer (standardisation + ridge classifier, :func:`_hat`), scored on
    pooled out-of-fold predictions.

    Args:
        states: ``[N, L + 1, H]`` (float32) from :func:`xcomps_utils.methods.neuro.last_token_states`.
        labels: ``N`` 0/1 labels (1: acceptable).
        folds: (train, test) index pairs from :func:`make_folds`.
        control: ``N`` control-task labels (:func:`control_labels`), or None.
        alpha: the ridge penalty.

    Returns:
        one row per layer: ``layer``, ``f1``, ``balanced_accuracy``, ``mcc``, and with
        ``control``: ``control_balanced_accuracy``, ``selectivity`` (real minus control balanced
        accuracy).
    """
    probe = _Probe(states, alpha)
    Y = np.asarray(labels, dtype=int)[:, None]
    if control is not None:
        Y = np.column_stack([Y, np.asarray(control, dtype=int)])
    rows = []
    for layer in range(states.shape[1]):
        pred = probe.oof(layer, Y, folds).astype(int)
        row = {"layer": layer, **_scores(Y[:, 0], pred[:, 0])}
        if control is not None:
            row["control_balanced_accuracy"] = _scores(Y[:, 1], pred[:, 1])["balanced_accuracy"]
            row["selectivity"] = row["balanced_accuracy"] - row["control_balanced_accuracy"]
        rows.append(row)
    return pd.DataFrame(rows)


@_single_threaded
def nested_probe(states: np.ndarray, labels, items, concepts, folds, inner_splits: int = 3,
                 seed: int = 0, alpha: float = RIDGE_ALPHA) -> dict:
    """The probe's score at a layer chosen without peeking (nested cross-validation).

    In each outer fold, the layer with the best balanced accuracy over ``inner_splits`` inner
    folds of the outer training sentences (built like the outer ones, :func:`make_folds`) is
    fit on the whole outer training set and predicts the outer test sentences; the pooled outer
    predictions are scored. Unlike the maximum over layers of :func:`probe_layers`, this is an
    unbiased estimate of what "the best layer" achieves on unseen sentences.

    Returns:
        ``f1``, ``balanced_accuracy``, ``mcc`` of the pooled outer predictions; ``layer_mean``,
        ``layer_min``, ``layer_max`` of the layers chosen by the outer folds.

    Raises:
        ProbeError: an outer training set cannot be split into ``inner_splits`` folds.
    """
    labels = np.asarray(labels, dtype=int)
    pred, chosen = _Probe(states, alpha).nested(
        labels[:, None], np.asarray(items, dtype=object), np.asarray(concepts, dtype=object),
        folds, inner_splits, seed)
    return {**_scores(labels, pred[:, 0].astype(int)), "layer_mean": float(chosen.mean()),
            "layer_min": int(chosen.min()), "layer_max": int(chosen.max())}


def _permute_within(labels: np.ndarray, items: np.ndarray, rng) -> np.ndarray:
    """``labels`` shuffled among the sentences of each item (each item keeps its label share)."""
    out = labels.copy()
    codes = pd.factorize(np.asarray(items, dtype=object))[0]
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    for idx in np.split(order, bounds):
        out[idx] = labels[rng.permutation(idx)]
    return out


@_single_threaded
def permutation_null(states: np.ndarray, labels, items, folds, n_permutations: int =
                     DEFAULT_N_PERMUTATIONS, seed=0, concepts=None, inner_splits: int = 3,
                     fold_seed: int = 0, alpha: float = RIDGE_ALPHA
                     ) -> tuple[np.ndarray, np.ndarray | None]:
    """The label-permutation null of the probe (Ojala & Garriga, 2010), by layer and nested.

    Each permutation shuffles the labels among the sentences of every item (so each item keeps
    one acceptable sentence to its negatives, and the outer folds, which depend on the labels
    only through each item's label count, stay the same), and reruns the probe of every layer
    on the same folds and, given ``concepts``, the whole nested procedure of
    :func:`nested_probe` (its inner folds and layer choice included). Under the null that the
    states carry nothing about acceptability beyond the item, the real labels are one more draw
    from this distribution. The probe's hat matrices are computed once per layer and fold and
    shared by all permutations (:func:`_hat`): a permutation costs matrix products, not fits.

    Args:
        states: ``[N, L + 1, H]``; labels, items (, concepts): ``N`` each; folds: from
            :func:`make_folds`.
        seed: of the permutations (an int or a sequence of ints, for ``numpy.random.default_rng``;
            give every language its own so their nulls are independent).
        fold_seed, inner_splits: the nested procedure's (as given to :func:`nested_probe`).

    Returns:
        ``(by_layer, nested)``: ``[n_permutations, L + 1]`` balanced accuracies by layer, and
        ``[n_permutations]`` nested balanced accuracies (None without ``concepts``).
    """
    labels = np.asarray(labels, dtype=int)
    rng = np.random.default_rng(seed)
    Y = np.column_stack([_permute_within(labels, items, rng) for _ in range(n_permutations)])
    probe = _Probe(states, alpha)
    by_layer = np.column_stack([_balanced_accuracy(Y, probe.oof(layer, Y, folds))
                                for layer in range(states.shape[1])])
    if concepts is None:
        return by_layer, None
    pred, _ = probe.nested(Y, np.asarray(items, dtype=object),
                           np.asarray(concepts, dtype=object), folds, inner_splits, fold_seed,
                           labels)
    if probe.fallbacks:
        warnings.warn(f"{probe.fallbacks} of {n_permutations} permutations: an outer training "
                      f"set could not be split; the inner folds of the real labels were used")
    return by_layer, _balanced_accuracy(Y, pred)


def joint_permutation_test(observed, null) -> dict:
    """One permutation test over languages of "the probe beats shuffled labels in at least one
    language", and per-language p-values corrected for the languages, from the same draws.

    Each language's score is standardised by the mean and standard deviation of its ``B + 1``
    values (the observed one and its ``B`` permutation draws; a symmetric function of them, so
    the observed scores stay exchangeable with the draws under the null). The statistic is the
    largest standardised excess over the languages (max-T): a signal in one language counts as
    much as in all. Since each language's labels are permuted independently, draw ``b`` of every
    language together is one joint permutation. ``p_adjusted`` is the single-step max-T
    adjustment (Westfall & Young, 1993): it controls the family-wise error over the languages,
    and its smallest possible value is ``1 / (B + 1)`` whatever the number of languages (unlike
    Holm on per-language p-values). The pooled p is the smallest adjusted one.

    Args:
        observed: ``[k]`` scores (e.g. nested balanced accuracies), one per language.
        null: ``[B, k]``: draw ``b`` of each language's permutation null.

    Returns:
        ``excess`` (observed minus the mean of the language's ``B + 1`` values), ``z``,
        ``p_language`` (uncorrected, ``(1 + #{draw >= observed}) / (B + 1)``), ``p_adjusted``
        (``[k]`` arrays), ``p_pooled`` and ``n_permutations`` (``B``).

    Raises:
        ParameterError: ``null`` is not ``[B, k]`` with ``B >= 1`` (names its shape).
    """
    obs = np.asarray(observed, dtype=float)
    null = np.asarray(null, dtype=float)
    if null.ndim != 2 or null.shape[1] != len(obs) or len(null) < 1:
        raise ParameterError("null", f"[B, {len(obs)}] draws with B >= 1", null.shape)
    allv = np.vstack([obs[None], null])
    mean, sd = allv.mean(axis=0), allv.std(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(sd > 0, (allv - mean) / sd, 0.0)
    top = z[1:].max(axis=1)
    B = len(null)
    p_adj = (1 + (top[:, None] >= z[0][None] - 1e-12).sum(axis=0)) / (B + 1)
    p_lang = (1 + (null >= obs[None] - 1e-12).sum(axis=0)) / (B + 1)
    return {"excess": obs - mean, "z": z[0], "p_language": p_lang, "p_adjusted": p_adj,
            "p_pooled": float(p_adj.min()), "n_permutations": B}


def probe_pairs(states, sentence_index: dict, pairs: pd.DataFrame, item: str = "property",
                n_splits: int = 5, inner_splits: int = 3, seed: int = 0, nested: bool = True,
                n_permutations: int = 0, null_seed=None, alpha: float = RIDGE_ALPHA
                ) -> tuple[pd.DataFrame, dict]:
    """The whole protocol on the sentences of some minimal pairs.

    Args:
        states: indexable by a list of rows, giving ``[n, L + 1, H]``; ``sentence_index`` maps a
            sentence to its row.
        pairs: minimal pairs with ``good``, ``bad``, the ``item`` column and, for XCOMPS,
            ``acceptable_concept`` / ``unacceptable_concept``.
        nested: also run :func:`nested_probe`.
        n_permutations: label permutations of :func:`permutation_null` (0: none), the nested
            procedure rerun in each when ``nested``.
        null_seed: the permutations' seed (default ``seed``; give each language its own).

    Returns:
        ``(by_layer, summary)``: :func:`probe_layers`' table (with ``n_permutations``: a
        ``null_q95`` column, the null's 95th percentile per layer), and a dict with
        ``n_sentences``, ``n_acceptable``, ``n_groups``, ``grouping``, ``leaked_concepts``,
        ``leaked_items``, ``purged``, ``majority_f1``, ``layer0_balanced_accuracy`` (the
        embedding layer), (``nested``) ``nested_f1``, ``nested_balanced_accuracy``,
        ``nested_mcc``, ``nested_layer_mean``/``min``/``max``, and (``n_permutations``)
        ``null_max_q95`` (95th percentile of the null's best layer), ``p_permutation`` (the
        nested score against the nested null, or the best layer's score against the null's
        best layer without ``nested``; ``(1 + k) / (1 + n)``), ``n_permutations``,
        ``null_nested_mean`` and ``null_nested`` (the ``[n_permutations]`` nested null draws,
        an array: for :func:`joint_permutation_test` over languages).

    Raises:
        ProbeError: see :func:`make_folds`.
    """
    sents = probe_sentences(pairs, item)
    y = sents["label"].to_numpy()
    folds, info = make_folds(y, sents["item"], sents["concept"], n_splits, seed)
    X = np.asarray(states[[sentence_index[t] for t in sents["text"]]])
    by_layer = probe_layers(X, y, folds, None, alpha)
    summary = {"n_sentences": len(sents), "n_acceptable": int(y.sum()), **info,
               "majority_f1": baselines(y)["f1"],
               "layer0_balanced_accuracy": float(by_layer["balanced_accuracy"].iloc[0])}
    if nested:
        nest = nested_probe(X, y, sents["item"], sents["concept"], folds, inner_splits, seed,
                            alpha)
        summary.update({f"nested_{k}": v for k, v in nest.items()})
    if n_permutations:
        null, null_nested = permutation_null(
            X, y, sents["item"].to_numpy(), folds, n_permutations,
            seed if null_seed is None else null_seed,
            sents["concept"].to_numpy() if nested else None, inner_splits, seed, alpha)
        by_layer["null_q95"] = np.quantile(null, 0.95, axis=0)
        best = null.max(axis=1)
        draws, score = ((null_nested, summary["nested_balanced_accuracy"]) if nested
                        else (best, float(by_layer["balanced_accuracy"].max())))
        summary.update(null_max_q95=float(np.quantile(best, 0.95)),
                       p_permutation=float((1 + np.sum(draws >= score - 1e-12))
                                           / (1 + len(draws))),
                       n_permutations=n_permutations)
        if nested:
            summary.update(null_nested_mean=float(null_nested.mean()), null_nested=null_nested)
    return by_layer, summary


def probe_tables(neuro: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split the widened Neuro measures (:meth:`xcomps_utils.runs.execute.Results.wide`) into a table
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
