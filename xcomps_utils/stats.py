"""Accuracy and its confidence interval."""

from __future__ import annotations

import pandas as pd

__all__ = ["wilson_interval", "accuracy_table"]


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
                   confidence: float = 0.95) -> pd.DataFrame:
    """Accuracy per group of scored pairs, with a Wilson interval.

    ``scored`` needs boolean columns ``correct`` and ``tie`` (from
    :func:`xcomps_utils.scoring.score_pairs`); ties count as not correct and are reported.

    Returns:
        one row per group: ``n``, ``correct``, ``ties``, ``accuracy``, ``ci_low``, ``ci_high``.
    """
    rows = []
    for key, g in scored.groupby(by, sort=False):
        k, n = int(g["correct"].sum()), len(g)
        lo, hi = wilson_interval(k, n, confidence)
        key = key if isinstance(key, tuple) else (key,)
        names = [by] if isinstance(by, str) else by
        rows.append({**dict(zip(names, key)), "n": n, "correct": k, "ties": int(g["tie"].sum()),
                     "accuracy": k / n, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


