"""The papers' claims as tests: an effect, an interval, a null, and a verdict that can fail.

A claim of He et al. (2025, XCOMPS) or Prins et al. (2026, "perplexed for the right reason") is
stated here as a hypothesis about an effect (a difference of accuracies, a slope, a correlation, a
proportion), tested on this run. Every test names four things, printed beside its verdict:

* its **unit of analysis**: what varies in the population the sentence is about. Claims about
  *these* languages' items (English vs the others, subtle vs random negatives, a task's pairs)
  resample **whole items** (Efron & Tibshirani, 1993, ch. 13; the cluster bootstrap of Field &
  Welsh, 2007). Claims about *kinds of language* (morphological type, resource level) or about
  how two methods co-vary *across languages* have the **language** as their unit and are tested
  by permuting languages (Good, 2005), stratified by a known confound where there is one;
* its **null**, in words (:attr:`ClaimTest.null_hypothesis`);
* its **family**: the tests a page prints together. The papers' primary claims are one
  *confirmatory* family; per-language, per-task and second-model tests are *exploratory*
  families. :func:`correct` adjusts each family with Holm's step-down method (Holm, 1979,
  ``statsmodels``), so the chance of any false decision in a family stays at 5%;
* what the data's making can do to it (:attr:`ClaimTest.caveat`).

The verdict reads one-sided p-values at ``alpha / 2`` each side (0.025, the sides of a 95%
interval), after the family's correction:

* ``supported``: the effect is on the side the hypothesis predicts;
* ``contradicted``: it is on the other side, or (for a two-sided hypothesis of *some* effect,
  given ``margin``) within ``±margin`` of no effect (two one-sided tests);
* ``inconclusive``: anything else, at this sample size. :attr:`ClaimTest.items_needed` says how
  many units would give an 80% chance of deciding an effect of the claim's stated smallest size
  of interest (``sesoi``), from the precision reached, never from the point estimate;
* ``cannot be decided``: no outcome of the test could reach the level (a permutation over 7
  languages with 18 distinct labelings has a smallest p of 1/18); the effect is shown as a
  description.

For a bootstrap, ``p_supported`` is the share of replicates on the null's side of ``null``
(``(k + 1) / (B + 1)``), so "supported" at 0.025 is "the 95% percentile interval excludes the
null". Accuracies exclude ties and near ties (``tie`` / ``near_tie`` columns, when present) from
their denominator, as :func:`xcomps_utils.stats.accuracy_table` does.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, replace
from typing import Callable

import numpy as np
import pandas as pd

__all__ = ["ClaimTest", "cluster_bootstrap", "bootstrap_means", "verdict", "evaluate_claim",
           "claims_table", "claims_markdown", "decided", "items_needed", "DEFAULT_N_BOOT",
           "ALPHA", "VERDICTS", "correct", "permutation_test", "language_claim", "finish",
           "percentile_interval", "bootstrap_p", "decided_rows",
           # XCOMPS (He et al., 2025)
           "english_advantage", "subtle_negatives_harder", "morphology_trend",
           "resource_trend", "direct_tracks_neuro",
           # token-level perplexity (Prins et al., 2026)
           "above_chance", "pivotal_rarely_whole", "pivotal_carries_most",
           "pivotal_influence", "pivotal_direction", "order_effect"]

DEFAULT_N_BOOT = 2000
#: fewer units than this and a bootstrap gives no verdict ("cannot be decided"): the percentile
#: interval of a handful of clusters covers far below 95% (two identical items give an interval
#: of width 0)
MIN_BOOTSTRAP_UNITS = 10
#: family-wise error rate of a family of tests, two-sided: each side is tested at ALPHA / 2
ALPHA = 0.05
VERDICTS = ("supported", "contradicted", "inconclusive", "cannot be decided")


@dataclass(frozen=True)
class ClaimTest:
    """One claim tested on one run.

    Attributes:
        claim: short identifier (``"subtle_negatives_harder"``).
        hypothesis: the paper's claim, stated as the hypothesis tested.
        measure: what ``effect`` is, in words, with its unit.
        effect: the point estimate on this run's data.
        ci_low, ci_high: a percentile bootstrap interval (``confidence``) over ``unit``; for a
            permutation test, a descriptive interval (see ``test``).
        null: the value of no effect (0 for a difference, 0.5 for chance).
        direction: ``+1`` the hypothesis predicts ``effect > null``, ``-1`` below, ``0`` either.
        verdict: one of :data:`VERDICTS`, after the family's correction.
        n_items: number of units behind the test (items, languages).
        unit: what one unit is (``"item"``, ``"language"``).
        n_obs: rows of data behind the estimate (pairs, prompt pairs, cells).
        source: where the claim is made.
        items_needed: for an inconclusive verdict, about how many units would give an 80%
            chance of deciding an effect of size ``sesoi`` (``None`` otherwise).
        scope: what the test covers (method, task, model).
        null_hypothesis: the null, in words.
        test: how the p-values were computed (bootstrap over items, permutation over languages).
        p_supported, p_contradicted: one-sided p-values against the null on each side (for
            ``direction == 0``: two-sided p of some effect, and the equivalence p within
            ``±margin``), uncorrected.
        p_adjusted: the Holm-adjusted p of the decision (``2 * min`` of the two sides), or NaN.
        family, family_size, role: the family the test was corrected in, its size, and
            ``"confirmatory"`` (a paper's primary claim) or ``"exploratory"``.
        smallest_p: the smallest one-sided p the test can reach (permutation tests; 0 for a
            bootstrap, whose resolution is ``1 / (B + 1)``).
        sesoi: the smallest effect of interest, in ``measure``'s unit.
        caveat: what the data's making can do to the effect (translation, confounds).
    """

    claim: str
    hypothesis: str
    measure: str
    effect: float
    ci_low: float
    ci_high: float
    null: float
    direction: int
    verdict: str
    n_items: int
    unit: str
    n_obs: int
    source: str
    items_needed: int | None = None
    scope: str = ""
    confidence: float = 0.95
    null_hypothesis: str = ""
    test: str = "bootstrap over items"
    p_supported: float = math.nan
    p_contradicted: float = math.nan
    p_adjusted: float = math.nan
    family: str = ""
    family_size: int = 1
    role: str = "exploratory"
    smallest_p: float = 0.0
    sesoi: float | None = None
    caveat: str = ""
    margin: float | None = None

    @property
    def half_width(self) -> float:
        """Half the interval's width: the precision this sample size reached."""
        return (self.ci_high - self.ci_low) / 2

    def as_dict(self) -> dict:
        return {**asdict(self), "half_width": self.half_width}


# --- resampling -------------------------------------------------------------------------------

def _members(data: pd.DataFrame, cols: list[str]) -> list[np.ndarray]:
    codes = data.groupby(cols, sort=False, dropna=False).ngroup().to_numpy()
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(codes.max() + 2))
    return [order[starts[k]:starts[k + 1]] for k in range(codes.max() + 1)]


def percentile_interval(estimate, reps, n_boot, confidence):
    """``(estimate, low, high, finite_reps)``: the percentile interval of bootstrap replicates
    ``reps`` (NaN bounds when more than 5% of the ``n_boot`` replicates are not finite)."""
    ok = reps[np.isfinite(reps)]
    if len(ok) < 0.95 * n_boot:
        return estimate, math.nan, math.nan, ok
    alpha = (1 - confidence) / 2
    low, high = np.quantile(ok, [alpha, 1 - alpha])
    return estimate, float(low), float(high), ok


def _cluster_reps(data, statistic, cluster, n_boot, seed):
    cols = [cluster] if isinstance(cluster, str) else list(cluster)
    missing = [c for c in cols if c not in data]
    if missing:
        raise ValueError(f"cluster column(s) {missing} not in the data (columns: "
                         f"{list(data.columns)})")
    if len(data) == 0:
        raise ValueError("no rows to bootstrap")
    if n_boot < 100:
        raise ValueError(f"n_boot must be >= 100, got {n_boot}")
    data = data.reset_index(drop=True)
    members = _members(data, cols)
    estimate = float(statistic(data))
    rng = np.random.default_rng(seed)
    reps = np.empty(n_boot)
    for b in range(n_boot):
        drawn = rng.integers(0, len(members), len(members))
        reps[b] = statistic(data.iloc[np.concatenate([members[k] for k in drawn])])
    return estimate, reps, len(members)


def cluster_bootstrap(data: pd.DataFrame, statistic: Callable[[pd.DataFrame], float],
                      cluster: str | list[str], n_boot: int = DEFAULT_N_BOOT, seed: int = 0,
                      confidence: float = 0.95) -> tuple[float, float, float, int]:
    """Percentile bootstrap of ``statistic`` resampling whole clusters.

    Each replicate draws as many clusters as there are, with replacement, and keeps all rows of
    each drawn cluster (a cluster drawn twice contributes its rows twice).

    Args:
        data: rows of observations.
        statistic: ``DataFrame -> float``; may return NaN for a replicate it cannot compute (for
            instance a group missing from it): such replicates are dropped, and if more than 5%
            are, the interval is NaN.
        cluster: column(s) naming the unit resampled (an item).

    Returns:
        ``(estimate, low, high, n_clusters)``; ``estimate`` is ``statistic(data)``.

    Raises:
        ValueError: no rows, a missing cluster column, ``n_boot < 100``.
    """
    est, reps, n = _cluster_reps(data, statistic, cluster, n_boot, seed)
    est, lo, hi, _ = percentile_interval(est, reps, n_boot, confidence)
    return est, lo, hi, n


def _means_reps(data, value, cluster, by, combine, n_boot, seed):
    cols = [cluster] if isinstance(cluster, str) else list(cluster)
    missing = [c for c in cols + [value] + ([by] if by else []) if c not in data]
    if missing:
        raise ValueError(f"column(s) {missing} not in the data (columns: {list(data.columns)})")
    if len(data) == 0:
        return math.nan, np.full(n_boot, np.nan), 0
    codes = data.groupby(cols, sort=False, dropna=False).ngroup().to_numpy()
    if by:
        lev_codes, levels = pd.factorize(data[by], sort=True)
        levels = list(levels)
    else:
        lev_codes, levels = np.zeros(len(data), dtype=int), [None]
    n_c, n_l = codes.max() + 1, len(levels)
    sums, counts = np.zeros((n_c, n_l)), np.zeros((n_c, n_l))
    np.add.at(sums, (codes, lev_codes), data[value].to_numpy(dtype=float))
    np.add.at(counts, (codes, lev_codes), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = float(combine((sums.sum(0) / counts.sum(0))[None, :], levels)[0])
        w = np.random.default_rng(seed).multinomial(n_c, np.full(n_c, 1 / n_c), size=n_boot)
        reps = np.asarray(combine((w @ sums) / (w @ counts), levels), dtype=float)
    return estimate, reps, int(n_c)


def bootstrap_means(data: pd.DataFrame, value: str, cluster: str | list[str],
                    by: str | None, combine: Callable[[np.ndarray, list], np.ndarray],
                    n_boot: int = DEFAULT_N_BOOT, seed: int = 0, confidence: float = 0.95
                    ) -> tuple[float, float, float, int]:
    """:func:`cluster_bootstrap` for statistics made of group means, in one matrix product.

    The statistic is ``combine(means, levels)``, where ``means[..., j]`` is the mean of ``value``
    over the rows whose ``by`` column equals ``levels[j]`` (one level ``None`` when ``by`` is
    None). Resampling whole clusters with replacement is drawing multinomial counts of the
    clusters, so each replicate's group means are ``(w @ sums) / (w @ counts)``.

    Args:
        combine: maps ``[n_boot, n_levels]`` means to ``[n_boot]`` statistics (vectorised; a
            level without rows in a replicate is NaN there).

    Returns:
        ``(estimate, low, high, n_clusters)`` as :func:`cluster_bootstrap`.
    """
    est, reps, n = _means_reps(data, value, cluster, by, combine, n_boot, seed)
    est, lo, hi, _ = percentile_interval(est, reps, n_boot, confidence)
    return est, lo, hi, n


def bootstrap_p(reps: np.ndarray, null: float, direction: int, margin: float | None
             ) -> tuple[float, float]:
    """One-sided bootstrap p-values ``(p_supported, p_contradicted)`` from replicates."""
    ok = reps[np.isfinite(reps)]
    if len(ok) == 0:
        return math.nan, math.nan
    b = len(ok)
    below = (np.sum(ok <= null) + 1) / (b + 1)   # evidence the effect is above null
    above = (np.sum(ok >= null) + 1) / (b + 1)   # evidence it is below
    if direction > 0:
        return float(below), float(above)
    if direction < 0:
        return float(above), float(below)
    two = min(1.0, 2 * min(below, above))
    if margin is None:
        return float(two), math.nan
    equiv = max((np.sum(ok >= null + margin) + 1) / (b + 1),
                (np.sum(ok <= null - margin) + 1) / (b + 1))
    return float(two), float(equiv)


def _decide(p_sup: float, p_con: float, direction: int, level: float, smallest_p: float = 0.0
            ) -> str:
    """The verdict from one-sided p-values at ``level`` (0.025 uncorrected)."""
    if smallest_p > (2 * level if direction == 0 else level):
        return "cannot be decided"
    if direction == 0:  # p_sup is two-sided
        if np.isfinite(p_sup) and p_sup <= 2 * level:
            return "supported"
    elif np.isfinite(p_sup) and p_sup <= level:
        return "supported"
    if np.isfinite(p_con) and p_con <= level:
        return "contradicted"
    return "inconclusive"


def verdict(low: float, high: float, direction: int, null: float = 0.0,
            margin: float | None = None) -> str:
    """The verdict an interval ``[low, high]`` gives a hypothesis (no multiplicity correction).

    Args:
        direction: ``+1`` (predicts above ``null``), ``-1`` (below), ``0`` (some effect, either
            side).
        margin: for ``direction=0`` only, an effect within ``±margin`` of ``null`` counts as no
            effect: an interval inside it contradicts the hypothesis.

    Returns:
        ``"supported"``, ``"contradicted"`` or ``"inconclusive"`` (also for a NaN interval).
    """
    if direction not in (-1, 0, 1):
        raise ValueError(f"direction must be -1, 0 or +1, got {direction!r}")
    if not (np.isfinite(low) and np.isfinite(high)):
        return "inconclusive"
    if direction == 0:
        if low > null or high < null:
            return "supported"
        if margin is not None and null - margin < low and high < null + margin:
            return "contradicted"
        return "inconclusive"
    above, below = low > null, high < null
    if (above and direction > 0) or (below and direction < 0):
        return "supported"
    if above or below:
        return "contradicted"
    return "inconclusive"


def items_needed(low: float, high: float, n: int, sesoi: float | None, power: float = 0.8,
                 confidence: float = 0.95) -> int | None:
    """About how many units would give a ``power`` chance of deciding an effect of size
    ``sesoi`` (the smallest effect of interest), from the precision this run reached.

    The normal-approximation sample size ``n * ((z_(1-a/2) + z_power) * se / sesoi)**2`` with
    ``se`` = the interval's half-width / ``z_(1-a/2)``. It uses the stated ``sesoi``, not the
    measured effect: a size computed from an inconclusive run's own estimate (post-hoc power) is
    biased and far too variable to plan with.

    Returns:
        an integer, or ``None`` when the interval is undefined or no ``sesoi`` is stated.
    """
    from scipy.stats import norm

    half = (high - low) / 2
    if sesoi is None or not (np.isfinite(half) and half > 0) or not sesoi > 0:
        return None
    z = norm.ppf(1 - (1 - confidence) / 2)
    se = half / z
    return int(math.ceil(n * ((z + norm.ppf(power)) * se / sesoi) ** 2))


def finish(t: ClaimTest, level: float) -> ClaimTest:
    """``t`` with its verdict read from its p-values at one-sided ``level`` (Holm-adjusted
    within its family when it has one) and ``items_needed`` for an inconclusive item claim."""
    v = _decide(t.p_supported if t.family_size == 1 or not np.isfinite(t.p_adjusted)
                else _side_adjusted(t, "sup"),
                t.p_contradicted if t.family_size == 1 or not np.isfinite(t.p_adjusted)
                else _side_adjusted(t, "con"), t.direction, level, t.smallest_p)
    need = (items_needed(t.ci_low, t.ci_high, t.n_items, t.sesoi, confidence=t.confidence)
            if v == "inconclusive" and t.unit == "item" else None)
    return replace(t, verdict=v, items_needed=need)


def _side_adjusted(t: ClaimTest, side: str) -> float:
    """The Holm-adjusted p of one side: the adjusted decision p applies to the side that is
    the smaller; the other side is not decided."""
    if t.direction == 0:
        # two-sided p adjusted; the equivalence p is Bonferroni-adjusted (conservative)
        return t.p_adjusted if side == "sup" else min(1.0, t.p_contradicted * t.family_size)
    sup_smaller = t.p_supported <= t.p_contradicted
    if (side == "sup") == sup_smaller:
        return t.p_adjusted / 2
    return 1.0


def evaluate_claim(claim: str, hypothesis: str, measure: str, data: pd.DataFrame,
                   statistic: Callable[[pd.DataFrame], float] | tuple, cluster: str | list[str],
                   direction: int, null: float = 0.0, unit: str = "item", source: str = "",
                   scope: str = "", margin: float | None = None, n_boot: int = DEFAULT_N_BOOT,
                   seed: int = 0, confidence: float = 0.95, null_hypothesis: str = "",
                   sesoi: float | None = None, caveat: str = "") -> ClaimTest:
    """Test one claim by bootstrap over ``cluster``: :func:`cluster_bootstrap` (or, when
    ``statistic`` is a tuple ``(value, by, combine)``, :func:`bootstrap_means`), one-sided
    p-values from the replicates, and the uncorrected verdict (a family of one; see
    :func:`correct`). The building block of the named claims below; use it for a claim of your
    own."""
    if direction not in (-1, 0, 1):
        raise ValueError(f"direction must be -1, 0 or +1, got {direction!r}")
    if callable(statistic):
        est, reps, n = _cluster_reps(data, statistic, cluster, n_boot, seed)
    else:  # (value, by, combine): a statistic of group means, see bootstrap_means
        if n_boot < 100:
            raise ValueError(f"n_boot must be >= 100, got {n_boot}")
        est, reps, n = _means_reps(data, statistic[0], cluster, statistic[1], statistic[2],
                                   n_boot, seed)
    est, lo, hi, ok = percentile_interval(est, reps, n_boot, confidence)
    p_sup, p_con = (bootstrap_p(ok, null, direction, margin) if np.isfinite(lo)
                    else (math.nan, math.nan))
    few = n < MIN_BOOTSTRAP_UNITS
    t = ClaimTest(claim=claim, hypothesis=hypothesis, measure=measure, effect=est,
                  ci_low=lo, ci_high=hi, null=null, direction=direction, verdict="inconclusive",
                  n_items=n, unit=unit, n_obs=len(data), source=source, scope=scope,
                  confidence=confidence, null_hypothesis=null_hypothesis or _default_null(
                      null, direction), test=f"bootstrap over {unit}s ({n_boot} replicates)",
                  p_supported=p_sup, p_contradicted=p_con, sesoi=sesoi, caveat=caveat,
                  margin=margin, smallest_p=1.0 if few else 0.0)
    return finish(t, (1 - confidence) / 2)


def _default_null(null: float, direction: int) -> str:
    if direction == 0:
        return f"the effect is {null:g}"
    return f"the effect is {null:g} (or on the other side)"


# --- permutation over languages ---------------------------------------------------------------

def _distinct_orders(values: list):
    """Every distinct ordering of a multiset, without walking all ``n!`` orders: positions are
    chosen label by label (``itertools.combinations``)."""
    counts = pd.Series(values).value_counts(sort=False)
    n = len(values)

    def place(free, k):
        if k == len(counts):
            yield {}
            return
        label, c = counts.index[k], int(counts.iloc[k])
        for pos in itertools.combinations(free, c):
            rest = [f for f in free if f not in pos]
            for tail in place(rest, k + 1):
                yield {**{q: label for q in pos}, **tail}
    for assignment in place(list(range(n)), 0):
        yield [assignment[i] for i in range(n)]


def _labelings(labels: np.ndarray, strata: np.ndarray | None, limit: int):
    """Every distinct relabeling of ``labels`` within ``strata`` (None when more than
    ``limit``)."""
    strata = np.zeros(len(labels), dtype=int) if strata is None else pd.factorize(strata)[0]
    groups = [np.flatnonzero(strata == s) for s in np.unique(strata)]
    total = 1
    for idx in groups:
        n_distinct = math.factorial(len(idx))
        for c in pd.Series(labels[idx]).value_counts():
            n_distinct //= math.factorial(int(c))
        total *= n_distinct
        if total > limit:
            return None
    per = [(idx, list(_distinct_orders(labels[idx].tolist()))) for idx in groups]
    out = []
    for combo in itertools.product(*[p for _, p in per]):
        lab = labels.copy()
        for (idx, _), perm in zip(per, combo):
            lab[idx] = perm
        out.append(lab)
    return out


def permutation_test(labels, statistic: Callable[[np.ndarray], float], strata=None,
                     n_perm: int = 9999, seed: int = 0, exact_limit: int = 20000
                     ) -> tuple[float, np.ndarray, bool]:
    """The permutation distribution of ``statistic`` over relabelings of ``labels``.

    Units (languages) are exchangeable under the null: every relabeling of ``labels`` that keeps
    each stratum's labels in that stratum (``strata``: a confound held fixed, e.g. resource
    level when the labels are morphological types) is equally likely. When there are at most
    ``exact_limit`` distinct relabelings all are enumerated (an exact test, whose smallest p is
    1 / their number); otherwise ``n_perm`` are drawn at random.

    Args:
        labels: ``[n_units]`` labels (types, or a permutation index).
        statistic: maps a relabeling ``[n_units]`` to a float.

    Returns:
        ``(observed, null_values, exact)``: ``statistic(labels)``, the statistic over the
        relabelings (the observed labeling included when exact), and whether it was exact.
    """
    labels = np.asarray(labels, dtype=object)
    strata_arr = None if strata is None else np.asarray(strata, dtype=object)
    observed = float(statistic(labels))
    every = _labelings(labels, strata_arr, exact_limit)
    if every is not None:
        return observed, np.array([statistic(l) for l in every], dtype=float), True
    rng = np.random.default_rng(seed)
    st = (np.zeros(len(labels), dtype=int) if strata_arr is None
          else pd.factorize(strata_arr)[0])
    drawn = np.tile(np.arange(len(labels)), (n_perm, 1))
    for s in np.unique(st):
        idx = np.flatnonzero(st == s)
        drawn[:, idx] = idx[rng.random((n_perm, len(idx))).argsort(axis=1)]
    vals = np.array([statistic(labels[d]) for d in drawn], dtype=float)
    return observed, vals, False


def _perm_p(observed, null_values, exact, direction):
    """One-sided permutation p-values ``(p_supported, p_contradicted)`` and the smallest p the
    test of the hypothesis' side can reach (for ``direction == 0``: the smallest two-sided p)."""
    v = null_values[np.isfinite(null_values)]
    tol = 1e-12 * max(1.0, abs(observed))
    if exact:
        hi = np.mean(v >= observed - tol)
        lo = np.mean(v <= observed + tol)
        small_hi = np.mean(v >= v.max() - tol)   # the best any labeling can do, upper side
        small_lo = np.mean(v <= v.min() + tol)
    else:
        hi = (np.sum(v >= observed - tol) + 1) / (len(v) + 1)
        lo = (np.sum(v <= observed + tol) + 1) / (len(v) + 1)
        small_hi = small_lo = 1 / (len(v) + 1)
    if direction > 0:
        return float(hi), float(lo), float(small_hi)
    if direction < 0:
        return float(lo), float(hi), float(small_lo)
    return float(min(1.0, 2 * min(hi, lo))), math.nan, float(min(1.0, 2 * min(small_hi,
                                                                                small_lo)))


def language_claim(claim: str, hypothesis: str, measure: str, values: pd.Series,
                   labels: pd.Series, statistic: Callable[[np.ndarray, np.ndarray], float],
                   direction: int, strata: pd.Series | None = None, null: float = 0.0,
                   source: str = "", scope: str = "", null_hypothesis: str = "",
                   interval: tuple[float, float] = (math.nan, math.nan), n_obs: int = 0,
                   caveat: str = "", n_perm: int = 9999, seed: int = 0,
                   confidence: float = 0.95) -> ClaimTest:
    """A claim whose unit is the language, tested by permuting language labels.

    Args:
        values: one value per language (index: language codes), e.g. accuracy.
        labels: the property tested, per language (same index), e.g. morphological type.
        statistic: ``(values, labels) -> float`` (numpy arrays in the index order).
        strata: a confound per language held fixed (labels permute within its levels), or None.
        interval: a descriptive interval for the effect (e.g. items resampled, languages
            fixed), shown beside the verdict; it does not decide it.

    Returns:
        :class:`ClaimTest` with ``unit="language"``; ``verdict="cannot be decided"`` when no
        relabeling could reach the level.
    """
    idx = values.index
    v = values.to_numpy(dtype=float)
    lab = labels.reindex(idx).to_numpy(dtype=object)
    st = None if strata is None else strata.reindex(idx).to_numpy(dtype=object)
    obs, null_vals, exact = permutation_test(lab, lambda l: statistic(v, l), st, n_perm, seed)
    p_sup, p_con, smallest = _perm_p(obs, null_vals, exact, direction)
    n_lab = len(null_vals)
    how = (f"exact permutation over languages ({n_lab} distinct labelings"
           + (f", within {pd.Series(st).nunique()} strata of {strata.name}" if st is not None
              else "") + ")" if exact else f"random permutation over languages ({n_lab} draws)")
    t = ClaimTest(claim=claim, hypothesis=hypothesis, measure=measure, effect=obs,
                  ci_low=interval[0], ci_high=interval[1], null=null, direction=direction,
                  verdict="inconclusive", n_items=len(idx), unit="language", n_obs=n_obs,
                  source=source, scope=scope, confidence=confidence,
                  null_hypothesis=null_hypothesis or "the languages' values do not depend on "
                  "the labels (every relabeling equally likely)", test=how,
                  p_supported=p_sup, p_contradicted=p_con, smallest_p=smallest, caveat=caveat)
    return finish(t, (1 - confidence) / 2)


# --- families ---------------------------------------------------------------------------------

def correct(tests: list[ClaimTest], family: str, role: str = "exploratory",
            alpha: float = ALPHA) -> list[ClaimTest]:
    """Holm's step-down correction over one family of tests (Holm, 1979; ``statsmodels``).

    Each test's decision p is ``2 * min(p_supported, p_contradicted)`` (two-sided; for a
    two-sided hypothesis, its two-sided p); Holm adjusts them over the family at ``alpha``, and
    each verdict is read again from the adjusted p (a side is decided when its adjusted
    one-sided p is at most ``alpha / 2``). Equivalence ("no effect within ±margin") is
    Bonferroni-adjusted. Tests that cannot be decided keep that verdict and count in the family.

    Returns:
        the tests with ``family``, ``family_size``, ``role``, ``p_adjusted`` and the verdict set.
    """
    from statsmodels.stats.multitest import multipletests

    if role not in ("confirmatory", "exploratory"):
        raise ValueError(f"role must be 'confirmatory' or 'exploratory', got {role!r}")
    if not tests:
        return []
    p = np.array([t.p_supported if t.direction == 0 else
                  min(1.0, 2 * min(t.p_supported, t.p_contradicted)) for t in tests], float)
    adj = np.full(len(p), np.nan)
    ok = np.isfinite(p)
    if ok.any():
        adj[ok] = multipletests(p[ok], alpha=alpha, method="holm")[1]
    out = []
    for t, a in zip(tests, adj):
        t = replace(t, family=family, family_size=len(tests), role=role, p_adjusted=float(a))
        out.append(finish(t, alpha / 2) if np.isfinite(a) or t.verdict == "cannot be decided"
                   else replace(finish(t, alpha / 2), verdict="inconclusive"))
    return out


def claims_table(tests: list[ClaimTest]) -> pd.DataFrame:
    """One row per test, the fields of :class:`ClaimTest` plus ``half_width``."""
    return pd.DataFrame([t.as_dict() for t in tests])


def decided(tests: list[ClaimTest]) -> list[ClaimTest]:
    """The tests whose verdict is supported or contradicted."""
    return [t for t in tests if t.verdict in ("supported", "contradicted")]


def _p(p: float) -> str:
    return "n/a" if not np.isfinite(p) else ("< 0.001" if p < 0.001 else f"{p:.3f}")


def claims_markdown(tests: list[ClaimTest], digits: int = 2) -> str:
    """The verdicts as a Markdown list: verdict, hypothesis and scope; the effect with its
    interval and units; the unit, the null and the test; the family, its size and the corrected
    p; the caveat; and, for an inconclusive one, the size that could decide it."""
    lines = []
    for t in tests:
        scope = f" ({t.scope})" if t.scope else ""
        v = t.verdict.capitalize()
        if t.verdict == "cannot be decided":
            v = f"Cannot be decided with {t.n_items} {t.unit}s"
        line = (f"- **{v}**{scope}: *{t.hypothesis}* — {t.measure}: "
                f"{t.effect:.{digits}f}, {t.confidence:.0%} CI [{t.ci_low:.{digits}f}, "
                f"{t.ci_high:.{digits}f}] (±{t.half_width:.{digits}f}), {t.n_items} "
                f"{t.unit}s. Null: {t.null_hypothesis}; {t.test}.")
        if t.family:
            line += (f" Family: {t.family} ({t.role}, {t.family_size} test"
                     f"{'s' if t.family_size != 1 else ''}, Holm), adjusted two-sided p "
                     f"{_p(t.p_adjusted)} (level {ALPHA}).")
        else:
            line += f" Uncorrected p {_p(min(t.p_supported, t.p_contradicted))}."
        if t.verdict == "cannot be decided" and t.unit != "language" and t.smallest_p >= 1:
            line += (f" Fewer than {MIN_BOOTSTRAP_UNITS} {t.unit}s: a bootstrap over so few is "
                     f"no test (its interval covers far below {t.confidence:.0%}); the effect "
                     f"is a description.")
        elif t.verdict == "cannot be decided":
            line += (f" The smallest p any outcome could give is {t.smallest_p:.3f}, above "
                     f"{ALPHA / 2}: the effect is a description, not a test.")
        if t.caveat:
            line += f" *Caveat:* {t.caveat}"
        if t.verdict == "inconclusive":
            if t.items_needed and t.sesoi:
                line += (f" Not decided at this size: about {t.items_needed:,} {t.unit}s would "
                         f"give an 80% chance of deciding an effect of {t.sesoi:g} (the smallest "
                         f"of interest).")
            else:
                line += " Not decided at this size."
        lines.append(line)
    return "\n".join(lines)


# --- accuracy helpers -------------------------------------------------------------------------

def decided_rows(df: pd.DataFrame, correct: str) -> pd.DataFrame:
    """Rows that are a decision: not a tie, not a near tie, correct not missing (the
    ``<method>_decision`` column of :func:`xcomps_utils.precision.decisions` when present)."""
    keep = df[correct].notna()
    dec = correct.replace("correct", "decision")
    if dec != correct and dec in df:
        return df[keep & df[dec].isin(["right", "wrong"])]
    for col in (correct.replace("correct", "tie"), correct.replace("correct", "near_tie")):
        if col != correct and col in df:
            keep &= ~df[col].fillna(0).astype(bool)
    return df[keep]


XCOMPS_SOURCE = "He et al. (2025), XCOMPS, §4.3"
PPL_SOURCE = "Prins et al. (2026), perplexed for the right reason, §2–4"
SUBTLE = ("taxonomic", "overlap", "co-occurrence")
MORPH_ORDER = {"analytic": 0, "inflected": 1, "agglutinative": 2}
RESOURCE_ORDER = {"low": 0, "medium": 1, "high": 2}
#: smallest effects of interest (the size ``items_needed`` plans for), in each measure's unit
SESOI = {"accuracy": 0.05, "slope": 0.05, "correlation": 0.3, "proportion": 0.1}
TRANSLATION_CAVEAT = ("the sample was written in English and translated, so English sentences "
                      "are the originals: an English advantage on it is confounded with "
                      "translation quality.")


def _method(correct: str) -> str:
    return correct.rsplit("_correct", 1)[0] or correct


def english_advantage(scored: pd.DataFrame, correct: str = "direct_correct",
                      item: str | list[str] = "property", **kw) -> ClaimTest:
    """*Models do well in English and decline in other languages* (He et al. 2025, §4.3.0.1).

    Effect: accuracy in English minus the mean over the other languages' accuracies (fraction of
    decided pairs). Unit: the concept-property item, resampled in every language at once (the
    claim is about these languages' items; one English cannot make it a claim about languages).
    Null: English accuracy equals the others' mean. Caveat: translation (see
    :data:`TRANSLATION_CAVEAT`).

    Args:
        scored: one row per XCOMPS pair with ``lang``, the ``item`` column and ``correct`` (from
            :func:`xcomps_utils.xcomps.pair_table`), optionally ``<method>_decision`` or
            ``<method>_tie`` / ``<method>_near_tie``.
        **kw: ``n_boot``, ``seed``, ``confidence`` (see :func:`evaluate_claim`).

    Raises:
        ValueError: no English pairs or no other language.
    """
    langs = set(scored["lang"])
    if "en" not in langs or len(langs) < 2:
        raise ValueError(f"the English advantage needs English and another language; the run "
                         f"has {sorted(langs)}")

    def combine(m, levels):
        en = levels.index("en")
        others = np.delete(m, en, axis=1)
        return m[:, en] - np.nanmean(others, axis=1)
    return evaluate_claim("english_advantage", "accuracy is higher in English than in the other "
                          "languages", "English minus mean other-language accuracy",
                          decided_rows(scored, correct), (correct, "lang", combine), item, +1,
                          0.0, "item", XCOMPS_SOURCE, scope=_method(correct),
                          null_hypothesis="English accuracy equals the other languages' mean",
                          sesoi=SESOI["accuracy"], caveat=TRANSLATION_CAVEAT, **kw)


def subtle_negatives_harder(scored: pd.DataFrame, correct: str = "direct_correct",
                            item: str | list[str] = "property", **kw) -> ClaimTest:
    """*Negatives that share semantic similarity are harder than random ones* (He et al. 2025,
    §4.3.0.2).

    Effect: accuracy on random negatives minus the mean accuracy over taxonomic, overlap and
    co-occurrence negatives (fraction of decided pairs; all languages of ``scored`` pooled).
    Unit: the item (each item has one negative of every type, so the comparison is paired).
    Null: equal accuracy. NaN (inconclusive) when random or every subtle type has no decided
    pair.
    """
    def combine(m, levels):
        if "random" not in levels or not any(t in levels for t in SUBTLE):
            return np.full(len(m), np.nan)
        sub = m[:, [levels.index(t) for t in SUBTLE if t in levels]]
        return m[:, levels.index("random")] - np.nanmean(sub, axis=1)
    return evaluate_claim("subtle_negatives_harder", "negatives that share semantic similarity "
                          "are harder than random ones", "random minus mean subtle-negative "
                          "accuracy", decided_rows(scored, correct),
                          (correct, "negative_sample_type", combine), item, +1, 0.0, "item",
                          XCOMPS_SOURCE, scope=_method(correct),
                          null_hypothesis="random and subtle negatives are equally hard",
                          sesoi=SESOI["accuracy"], **kw)


def _language_table(scored: pd.DataFrame, correct: str) -> pd.DataFrame:
    """Per language: decided-pair accuracy, morphological type and resource level (from the
    data's columns, else :func:`xcomps_utils.xcomps.languages`)."""
    d = decided_rows(scored, correct)
    out = d.groupby("lang")[correct].mean().rename("accuracy").to_frame()
    for col, src in (("morphology", "morphological_type"), ("resource_level", "resource_level")):
        if col in scored:
            out[col] = scored.groupby("lang")[col].first()
        else:
            from .xcomps import languages
            table = languages().set_index("iso")[src]
            out[col] = out.index.map(table)
    return out


def _slope(v: np.ndarray, x: np.ndarray) -> float:
    """Least-squares slope of ``v`` on ``x`` (NaN pairs dropped; NaN without two x values)."""
    x = np.asarray(x, dtype=float)
    ok = np.isfinite(v) & np.isfinite(x)
    x, v = x[ok], np.asarray(v, dtype=float)[ok]
    xc = x - x.mean() if len(x) else x
    den = float(xc @ xc)
    return float(xc @ (v - v.mean()) / den) if den > 0 else math.nan


def _type_trend(claim, hypothesis, scored, correct, label_col, order, strata_col, direction,
                item, n_boot=DEFAULT_N_BOOT, seed=0, confidence=0.95, n_perm=9999):
    langs = _language_table(scored, correct)
    if langs[label_col].isna().any():
        raise ValueError(f"no {label_col} for language(s) "
                         f"{list(langs.index[langs[label_col].isna()])}")
    if langs[label_col].nunique() < 2:
        raise ValueError(f"a trend needs two {label_col.replace('_', ' ')} levels or more; the "
                         f"run has {sorted(langs[label_col].unique())}")
    code = langs[label_col].map(order)
    # descriptive interval: items resampled, these languages fixed
    x = code.to_dict()

    def combine(m, levels):
        xs = np.array([x.get(l, np.nan) for l in levels], float)
        return np.array([_slope(row, xs) for row in m])
    _, lo, hi, _ = bootstrap_means(decided_rows(scored, correct), correct, item, "lang",
                                   combine, n_boot=n_boot, seed=seed, confidence=confidence)
    strata = langs[strata_col].rename(strata_col.replace("_", " "))
    stratified = strata.nunique() > 1
    name = label_col.replace("_", " ")
    return language_claim(
        claim, hypothesis, f"slope of language accuracy per {name} step", langs["accuracy"],
        code, lambda v, l: _slope(v, l.astype(float)), direction,
        strata=strata if stratified else None, source=XCOMPS_SOURCE, scope=_method(correct),
        null_hypothesis=f"a language's accuracy does not depend on its {name}"
        + (f" within its {strata.name}" if stratified else ""),
        interval=(lo, hi), n_obs=len(scored),
        caveat=(f"{name} is confounded with {strata.name} in these languages "
                f"({', '.join(f'{l}: {a}/{b}' for l, a, b in zip(langs.index, langs[label_col], langs[strata_col]))}); "
                f"labels are permuted only within each {strata.name}, so the test asks for an "
                f"effect beyond it. The interval resamples items with the languages fixed: it "
                f"describes these languages, it does not test the claim."),
        n_perm=n_perm, seed=seed, confidence=confidence)


def morphology_trend(scored: pd.DataFrame, correct: str = "direct_correct",
                     item: str | list[str] = "property", **kw) -> ClaimTest:
    """*Accuracy falls from analytic to inflected to agglutinative languages* (He et al. 2025,
    §4.3.0.4).

    Effect: the least-squares slope of language accuracy on the morphological type coded 0, 1, 2
    (analytic, inflected, agglutinative), in accuracy per step; negative if the claim holds.
    Unit: the **language** (the claim is about kinds of language). Test: permutation of the
    types over languages within each resource level (the confound: in the book's seven languages
    every agglutinative one is medium-resource), :func:`language_claim`. With seven languages
    the smallest reachable p is above 0.025, so the verdict is "cannot be decided"; the item
    bootstrap interval is shown as a description.

    Raises:
        ValueError: fewer than two morphological types, or a language without one.
    """
    return _type_trend("morphology_trend", "accuracy falls from analytic to inflected to "
                       "agglutinative languages", scored, correct, "morphology", MORPH_ORDER,
                       "resource_level", -1, item, **kw)


def resource_trend(scored: pd.DataFrame, correct: str = "direct_correct",
                   item: str | list[str] = "property", **kw) -> ClaimTest:
    """*Accuracy declines in lower-resource languages* (He et al. 2025, §1 and §4.3.0.1).

    Effect: slope of language accuracy on resource level (low 0, medium 1, high 2), positive if
    the claim holds. Unit: the language; types permuted within each morphological type (the
    confound), as :func:`morphology_trend`.
    """
    return _type_trend("resource_trend", "accuracy is higher in higher-resource languages",
                       scored, correct, "resource_level", RESOURCE_ORDER, "morphology", +1, item,
                       **kw)


def _standardize(a: np.ndarray) -> np.ndarray:
    """Rows of ``a`` centred and scaled so that ``mean(z_a * z_b)`` is Pearson's r (NaN rows
    where a row is constant)."""
    c = a - a.mean(axis=-1, keepdims=True)
    sd = np.sqrt((c ** 2).mean(axis=-1, keepdims=True))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sd > 0, c / sd, np.nan)


def direct_tracks_neuro(cells: pd.DataFrame, direct: str = "direct", neuro: str = "neuro",
                        n_boot: int = DEFAULT_N_BOOT, seed: int = 0, confidence: float = 0.95,
                        probe_caveat: str = "", **_) -> ClaimTest:
    """*Direct measurements closely track the internal representations, within every negative
    type* (He et al. 2025, §4.3.0.3).

    Effect: the mean over negative types of the Pearson correlation, across languages, of Direct
    accuracy and the probe's score. Correlating within each type removes what both methods share
    through the type alone (both find random negatives easiest), which makes one correlation
    over pooled language x type cells high even when the methods are unrelated across languages.
    Unit: the language. Test: the same permutation of languages applied to Neuro in every type
    (exact over the ``n!`` orders up to 8 languages, else 9,999 drawn); interval: languages
    resampled (descriptive, rough with few languages). Languages missing a cell are left out.

    Args:
        cells: one row per cell with columns ``lang``, ``subset`` and the two scores.
        probe_caveat: what the probe's own baseline says (e.g. "the probe is at chance in 6 of 7
            languages"): appended to the caveat.

    Raises:
        ValueError: fewer than 3 languages with every cell.
    """
    d = cells.pivot_table(index="subset", columns="lang", values=direct)
    n = cells.pivot_table(index="subset", columns="lang", values=neuro).reindex_like(d)
    keep = d.notna().all() & n.notna().all()
    d, n = d.loc[:, keep], n.loc[:, keep]
    if d.shape[1] < 3:
        raise ValueError(f"a correlation across languages needs 3 languages or more with every "
                         f"cell; got {d.shape[1]}")
    D, N = d.to_numpy(float), n.to_numpy(float)
    k = D.shape[1]
    zd, zn = _standardize(D), _standardize(N)

    def r_of(perms):  # [P, k] language orders -> [P] mean within-type r
        r = np.einsum("tk,tpk->tp", zd, zn[:, perms]) / k
        return np.nanmean(r, axis=0) if np.isfinite(r).any() else np.full(len(perms), np.nan)
    obs = float(r_of(np.arange(k)[None])[0])
    if math.factorial(k) <= 40320:
        perms = np.array(list(itertools.permutations(range(k))))
        exact = True
    else:
        rng = np.random.default_rng(seed)
        perms = np.array([rng.permutation(k) for _ in range(9999)])
        exact = False
    p_sup, p_con, smallest = _perm_p(obs, r_of(perms), exact, +1)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, k, (n_boot, k))
    zdb = _standardize(D[:, picks])                      # [T, B, k]
    znb = _standardize(N[:, picks])
    with np.errstate(invalid="ignore"):
        reps = np.nanmean((zdb * znb).mean(axis=-1), axis=0)
    _, lo, hi, _ = percentile_interval(obs, reps, n_boot, confidence)
    t = ClaimTest(claim="direct_tracks_neuro", hypothesis="across languages, Direct accuracy "
                  "tracks the probe's score within each negative type", measure="mean within-"
                  f"type Pearson r of Direct accuracy and probe {neuro}", effect=obs, ci_low=lo,
                  ci_high=hi, null=0.0, direction=+1, verdict="inconclusive",
                  n_items=k, unit="language", n_obs=len(cells), source=XCOMPS_SOURCE,
                  scope="direct vs neuro", confidence=confidence,
                  null_hypothesis="a language's probe score is unrelated to its Direct accuracy "
                  "within a negative type (languages exchangeable)",
                  test=(f"exact permutation of languages ({len(perms)} orders); interval: "
                        f"languages resampled" if exact else
                        f"random permutation of languages ({len(perms)} draws)"),
                  p_supported=p_sup, p_contradicted=p_con, smallest_p=smallest,
                  sesoi=SESOI["correlation"], caveat=probe_caveat)
    return finish(t, (1 - confidence) / 2)


def above_chance(items: pd.DataFrame, task: str, accuracy: str = "accuracy",
                 item: str = "pair_id", **kw) -> ClaimTest:
    """*The correct prompt gets the lower perplexity* (Prins et al. 2026, hypothesis 1):
    mean accuracy minus chance (0.5), items resampled. Null: accuracy 0.5.

    Args:
        items: one row per item (or per item x wording x order) with ``accuracy`` in [0, 1].
    """
    d = items[items["task"] == task] if "task" in items else items
    return evaluate_claim("above_chance", "the correct prompt gets lower perplexity than the "
                          "incorrect one", "mean accuracy minus chance (0.5)", d,
                          (accuracy, None, lambda m, _: m[:, 0] - 0.5), item, +1, 0.0, "item",
                          PPL_SOURCE, scope=task, null_hypothesis="accuracy is 0.5 (chance)",
                          sesoi=SESOI["accuracy"], **kw)


def _mean_claim(claim, hypothesis, metrics, task, value, item, direction, null, kw,
                null_hypothesis="", measure=None):
    """A claim about the mean of one column over a task's prompt pairs, items resampled."""
    d = metrics[metrics["task"] == task].dropna(subset=[value])
    return evaluate_claim(claim, hypothesis, measure or f"mean {value}", d,
                          (value, None, lambda m, _: m[:, 0]), item, direction, null, "item",
                          PPL_SOURCE, scope=task, null_hypothesis=null_hypothesis,
                          sesoi=SESOI["proportion"], **kw)


def pivotal_rarely_whole(metrics: pd.DataFrame, task: str, value: str = "pivotal_whole",
                         item: str = "pair_id", **kw) -> ClaimTest:
    """*Pivotal tokens rarely offer a complete explanation of the perplexity shift* (Prins et
    al. 2026, §3, "Results on normalized proportion").

    With the paper's own denominator, the *total* (signed) perplexity difference, the pivotal
    groups can carry all of it or more (the other tokens pulling the other way), so "whole" is
    reachable: ``pivotal_whole`` is 1 for a prompt pair whose pivotal groups, in the total's
    direction, reach the total (:func:`xcomps_utils.perplexity.prompt_pair_measures`). Effect:
    the share of prompt pairs the pivotal tokens explain whole; the hypothesis is that it is
    below one half ("rarely", a substantive threshold), contradicted when it is above. Unit:
    the item (with all its prompt pairs). Pivotal tokens with no role at all also explain the
    whole rarely (about 10-20% of prompt pairs under noise): that they matter is
    :func:`pivotal_influence`'s question, not this one's.
    """
    return _mean_claim("pivotal_rarely_whole", "pivotal tokens rarely explain the whole "
                       "perplexity difference", metrics, task, value, item, -1, 0.5, kw,
                       "pivotal tokens explain the whole difference in half of the prompt pairs",
                       "share of prompt pairs whose pivotal |ΔPPL| reaches the total ΔPPL")


def pivotal_carries_most(metrics: pd.DataFrame, task: str = "nonsense",
                         value: str = "plain_pivotal_ppl", item: str = "pair_id",
                         **kw) -> ClaimTest:
    """*In the nonsense control, most of the perplexity difference is caused by the single
    differing real word* (Prins et al. 2026, §3): the mean plain pivotal proportion (share of
    ``Σ_g |ΔPPL_g|``) is above 0.5; below 0.5 contradicts it. Unit: the item.
    """
    return _mean_claim("pivotal_carries_most", "the pivotal token carries most of the "
                       "perplexity difference", metrics, task, value, item, +1, 0.5, kw,
                       "the pivotal token carries half of Σ|ΔPPL|",
                       "mean plain proportion of Σ|ΔPPL| on pivotal tokens")


def pivotal_influence(metrics: pd.DataFrame, task: str, value: str = "influence_pivotal_ppl",
                      item: str = "pair_id", **kw) -> ClaimTest:
    """*Pivotal tokens contribute more to the perplexity difference than a typical token*,
    whatever the direction (Prins et al. 2026, §2, the normalized proportion's first reading).

    Effect: the mean over prompt pairs of the average pivotal group's share of ``Σ|ΔPPL|``
    minus the average group's share (``1 / n_groups``), the paper's *average* (not the sum over
    pivotal groups). The paper subtracts the *median* group's share; a median group sits below
    the average in the skewed distributions of ΔPPL, so a pivotal group drawn at random would
    already score above the median: the average is the share a random group has, and 0 is the
    null. Unit: the item.
    """
    return _mean_claim("pivotal_influence", "pivotal tokens move perplexity more than a typical "
                       "token (either direction)", metrics, task, value, item, +1, 0.0, kw,
                       "the pivotal group's share of Σ|ΔPPL| is that of an average group",
                       "mean pivotal minus average group share of Σ|ΔPPL|")


def pivotal_direction(metrics: pd.DataFrame, task: str, value: str = "direction_pivotal_ppl",
                      item: str = "pair_id", **kw) -> ClaimTest:
    """*Pivotal tokens move perplexity in the correct direction* (Prins et al. 2026, §2, the
    normalized proportion's sign).

    Effect: the mean of ``Σ_pivotal ΔPPL_g / Σ_pivotal |ΔPPL_g|`` (in [-1, 1]; +1: every pivotal
    group makes the incorrect prompt more perplexed). Null 0: the pivotal groups point either
    way alike. Unit: the item.
    """
    return _mean_claim("pivotal_direction", "pivotal tokens make the incorrect prompt more "
                       "perplexed", metrics, task, value, item, +1, 0.0, kw,
                       "the pivotal groups' ΔPPL is as often negative as positive",
                       "mean signed share of pivotal ΔPPL (-1 to 1)")


def order_effect(prompts: pd.DataFrame, task: str, correct: str = "correct",
                 first: str = "good_first", item: str = "pair_id", margin: float = 0.05,
                 **kw) -> ClaimTest:
    """*Accuracy is sensitive to presentation order* (Prins et al. 2026, §3, shown for the
    nonsense task): accuracy when the ``first`` order is presented minus accuracy in the other
    order, two-sided; an effect shown within ±``margin`` (two one-sided tests) contradicts it.
    Unit: the item (both orders of one item are paired).

    Args:
        prompts: one row per prompt pair with ``task``, ``order``, the item column and a 0/1
            ``correct`` (ties: see the module docstring).
    """
    d = decided_rows(prompts[prompts["task"] == task], correct)
    d = d.assign(_first=(d["order"] == first).map({True: "first", False: "other"}))

    def combine(m, lv):
        if "first" not in lv or "other" not in lv:
            return np.full(len(m), np.nan)
        return m[:, lv.index("first")] - m[:, lv.index("other")]
    return evaluate_claim("order_effect", "accuracy depends on the order the two sentences are "
                          "presented in", f"accuracy ({first.replace('_', ' ')}) minus accuracy "
                          f"(other order)", d, (correct, "_first", combine), item, 0, 0.0,
                          "item", PPL_SOURCE, scope=task, margin=margin,
                          null_hypothesis="accuracy is the same in both orders",
                          sesoi=margin, **kw)
