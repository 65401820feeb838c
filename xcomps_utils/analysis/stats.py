"""Accuracy and its confidence interval."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .claims import bootstrap_means, percentile_interval
from .scored import decision_labels

__all__ = ["wilson_interval", "accuracy_table", "MIN_ITEMS", "length_baseline",
           "FAR_FROM_CHANCE"]

#: fewer shared items than this and the item bootstrap gives no interval (NaN): see
#: :data:`xcomps_utils.analysis.claims.MIN_BOOTSTRAP_UNITS`
MIN_ITEMS = 10


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (Wilson, 1927), via SciPy.

    Better behaved than the normal approximation near 0 and 1 and for small ``n``.

    Returns:
        ``(low, high)`` in [0, 1].

    Raises:
        ValueError: ``n < 1``, ``successes`` outside ``[0, n]`` or ``confidence`` outside (0, 1).
    """
    from scipy.stats import binomtest

    if n < 1 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n and n >= 1, got {successes}/{n}")
    ci = binomtest(successes, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def accuracy_table(scored: pd.DataFrame, by: str | list[str] = "task",
                   confidence: float = 0.95, item: str | None = None, n_boot: int = 2000,
                   seed: int = 0) -> pd.DataFrame:
    """Accuracy per group of scored pairs, with an interval; ties and near ties apart.

    The interval is Wilson's (Wilson, 1927) when pairs are independent; when pairs share items
    (``item``: the column naming them, e.g. XCOMPS' ``property``, 4 pairs an item), it is a
    percentile bootstrap that resamples whole items (:func:`xcomps_utils.analysis.claims.bootstrap_means`):
    a Wilson interval over pairs that share items is too narrow (it covered 86% for 95%).
    Pairs that are each their own item get Wilson's interval; fewer than :data:`MIN_ITEMS`
    shared items get none (NaN). Each pair is decided by the one rule every table reads
    (:func:`xcomps_utils.analysis.scored.decision_labels`: a ``decision`` column wins over ``tie`` /
    ``near_tie``); a pair without a decision or a ``correct`` value is not counted as decided.

    ``scored`` needs a boolean column ``correct``, and may have ``tie`` (the two log-probabilities
    are equal) and ``near_tie`` (their difference is below the precision of the run's dtype, see
    :mod:`xcomps_utils.lm.precision`). A tie or near tie is not a decision: it is left out of the
    accuracy's denominator and counted apart, so a pair the model cannot tell apart counts neither
    as right nor as wrong.

    Returns:
        one row per group: ``n`` (all pairs), ``ties``, ``near_ties``, ``decided`` (``n`` minus
        both), ``correct`` (among the decided), ``accuracy`` (``correct / decided``, NaN when no
        pair is decided), ``ci_low``, ``ci_high``.

    Raises:
        KeyError: no ``correct`` column.
    """
    if "correct" not in scored:
        raise KeyError(f"accuracy_table needs a 'correct' column; got {list(scored.columns)}")
    names = [by] if isinstance(by, str) else list(by)
    rows = []
    for key, g in scored.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        label = decision_labels(g, "correct")
        tie, near = label == "tie", label == "near_tie"
        dec = g[label.isin(["right", "wrong"])]
        k, n = int(dec["correct"].astype(bool).sum()), len(dec)
        shared = item is not None and dec[item].nunique() < n  # some item holds several pairs
        if not n:
            lo, hi = float("nan"), float("nan")
        elif shared and dec[item].nunique() < MIN_ITEMS:
            lo, hi = float("nan"), float("nan")  # too few items for a bootstrap interval
        elif shared:
            _, lo, hi, _ = bootstrap_means(dec.assign(correct=dec["correct"].astype(float)),
                                           "correct", item, None, lambda m, _: m[:, 0],
                                           n_boot=n_boot, seed=seed, confidence=confidence)
        else:
            lo, hi = wilson_interval(k, n, confidence)
        rows.append({**dict(zip(names, key)), "n": len(g), "ties": int(tie.sum()),
                     "near_ties": int(near.sum()), "decided": n, "correct": k,
                     "accuracy": k / n if n else float("nan"), "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


#: a drawn chance level whose interval lies this far or more from 0.5 makes a task's accuracy
#: unreadable against 0.5 (the accuracy's smallest effect of interest,
#: :data:`xcomps_utils.analysis.families.SESOI`)
FAR_FROM_CHANCE = 0.05


def length_baseline(scored: pd.DataFrame, by: str | list[str] = "task", n_boot: int = 2000,
                    seed: int = 0, confidence: float = 0.95) -> pd.DataFrame:
    """The drawn chance level of a sentence-scoring task: the accuracy of a decision by length
    alone ("the sentence of fewer tokens is the acceptable one", a coin where they have as many),
    read from the model's own tokenization.

    A summed log-probability falls with every token, so a task whose acceptable sentences are
    shorter is scored above 0.5 by any model, trained or not (DUST: the acceptable sentence is
    shorter in about three pairs of four). Its accuracy is then read against this level, not
    against 0.5.

    Args:
        scored: one row per pair with ``n_tokens_good`` and ``n_tokens_bad`` (a Direct run's
            :meth:`wide` table) and the ``by`` columns.

    Returns:
        one row per group: ``n`` pairs, ``shorter`` / ``equal`` / ``longer`` (share of pairs whose
        acceptable sentence has fewer / as many / more tokens), ``length_only`` (``shorter +
        equal / 2``: the expected accuracy of a length-only decision), ``ci_low``, ``ci_high``
        (its percentile bootstrap interval over pairs), and ``far_from_chance`` (the interval
        lies :data:`FAR_FROM_CHANCE` or more from 0.5).

    Raises:
        KeyError: ``n_tokens_good`` or ``n_tokens_bad`` is missing.
    """
    missing = [c for c in ("n_tokens_good", "n_tokens_bad") if c not in scored]
    if missing:
        raise KeyError(f"length_baseline needs the columns {missing} (a Direct run's wide "
                       f"table); got {list(scored.columns)}")
    names = [by] if isinstance(by, str) else list(by)
    rows = []
    for key, g in scored.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        diff = (g["n_tokens_bad"] - g["n_tokens_good"]).to_numpy()
        # a pair scores 1 (shorter), 0.5 (as long) or 0: resampling the pairs is drawing how
        # many of each kind a replicate holds (the same distribution as a pair bootstrap's,
        # without an n_boot x pairs matrix: the models page's 674 baselines, 37 s -> 0.1 s)
        kinds = np.array([(diff > 0).sum(), (diff == 0).sum(), (diff < 0).sum()])
        draws = np.random.default_rng(seed).multinomial(len(g), kinds / len(g), size=n_boot)
        reps = draws @ np.array([1.0, 0.5, 0.0]) / len(g)
        est, lo, hi, _ = percentile_interval(float(kinds @ [1.0, 0.5, 0.0] / len(g)), reps,
                                             n_boot, confidence)
        far = bool(lo >= 0.5 + FAR_FROM_CHANCE or hi <= 0.5 - FAR_FROM_CHANCE)
        rows.append({**dict(zip(names, key)), "n": len(g), "shorter": float((diff > 0).mean()),
                     "equal": float((diff == 0).mean()), "longer": float((diff < 0).mean()),
                     "length_only": float(est), "ci_low": lo, "ci_high": hi,
                     "far_from_chance": far})
    return pd.DataFrame(rows)
