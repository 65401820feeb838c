"""Claims as tests: an effect, an interval, a null, and a verdict that can fail (the machinery).

A claim of He et al. (2025, XCOMPS; :mod:`xcomps_utils.analysis.xcomps_paper`), of Prins et al. (2026,
"perplexed for the right reason"; :mod:`xcomps_utils.analysis.perplexity_paper`) or of this book
(:mod:`xcomps_utils.analysis.grammar_study`, :mod:`xcomps_utils.analysis.consistency`,
:mod:`xcomps_utils.analysis.concept_prior`) is stated in its analysis module as a hypothesis about an
effect (a difference of accuracies, a slope, a correlation, a proportion) and tested on this run
with the tests here. Every test names four things, printed beside its verdict:

* its **unit of analysis**: what varies in the population the sentence is about. Claims about
  *these* languages' items (English vs the others, subtle vs random negatives, a task's pairs)
  resample **whole items** (Efron & Tibshirani, 1993, ch. 13; the cluster bootstrap of Field &
  Welsh, 2007). Claims about *kinds of language* (morphological type, resource level) or about
  how two methods co-vary *across languages* have the **language** as their unit and are tested
  by permuting languages (Good, 2005), stratified by a known confound where there is one;
* its **null**, in words (:attr:`ClaimTest.null_hypothesis`);
* its **family**: the tests a page prints together. The papers' primary claims are one
  *confirmatory* family; per-language, per-task and second-model tests are *exploratory*
  families. :func:`xcomps_utils.analysis.families.correct` adjusts each family with Holm's
  step-down method (Holm, 1979, ``statsmodels``), so the chance of any false decision in a
  family stays at 5%;
* what the data's making can do to it (:attr:`ClaimTest.caveat`).

The verdict reads one-sided p-values at ``alpha / 2`` each side (0.025, the sides of a 95%
interval), after the family's correction:

* ``supported``: the effect is on the side the hypothesis predicts;
* ``contradicted``: it is on the other side, or (for a two-sided hypothesis of *some* effect,
  given ``margin``) within ``±margin`` of no effect (two one-sided tests);
* ``negligible``: a side is decided, but the interval the verdict reads lies inside
  ``null ± sesoi``: an effect is shown, and shown smaller than the smallest effect of interest
  (printed as :data:`NEGLIGIBLE`, never as "supported" or "contradicted": the claim's sentence
  is about an effect that matters);
* ``equivalent``: neither side is decided, but the effect is shown to lie within
  ``±sesoi`` of the null, the claim's stated smallest effect of interest (two one-sided tests,
  TOST: Schuirmann, 1987; Lakens, 2017): "no effect that matters", a result, not a failure to
  decide. For a two-sided hypothesis of *some* effect this is what contradicts it;
* ``inconclusive``: anything else, at this sample size. :attr:`ClaimTest.items_needed` says how
  many units would give an 80% chance of deciding (supported, contradicted or equivalent) whatever
  the true effect, from the precision reached, never from the point estimate; it is never a
  number at or below the units already used;
* ``cannot be decided``: no outcome of the test could reach the level (a permutation over 7
  languages with 18 distinct labelings has a smallest p of 1/18; a bootstrap over fewer than
  :data:`MIN_BOOTSTRAP_UNITS` units; a bootstrap whose resolution ``1 / (B + 1)`` is above the
  family's level), or the statistic could not be computed (:attr:`ClaimTest.reason` says why);
  the effect is shown as a description, never as a test.

Families (:mod:`xcomps_utils.analysis.families`) are Holm-corrected over the tests that *can*
reach the level at the family's size (Tarone, 1990); :func:`finish` reads a corrected test's
verdict from its adjusted p-values. How a page prints the verdicts is
:mod:`xcomps_utils.analysis.report`; how a chapter records them for the findings page,
:mod:`xcomps_utils.pages.verdicts`.

For a bootstrap, ``p_supported`` is the share of replicates on the null's side of ``null``
(``(k + 1) / (B + 1)``), so "supported" at 0.025 is "the 95% percentile interval excludes the
null". Accuracies exclude ties and near ties (``tie`` / ``near_tie`` columns, when present) from
their denominator, as :func:`xcomps_utils.analysis.stats.accuracy_table` does.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field, fields, replace
from typing import Callable

import numpy as np
import pandas as pd

__all__ = ["ClaimTest", "SAVED_FIELDS", "slope", "cluster_bootstrap", "bootstrap_means", "verdict",
           "evaluate_claim", "decided", "items_needed", "DEFAULT_N_BOOT", "ALPHA", "VERDICTS",
           "permutation_test", "relabelings", "language_claim", "finish", "INVERTED",
           "percentile_interval", "bootstrap_p", "permutation_p", "equivalence_p",
           "MIN_BOOTSTRAP_UNITS", "NEGLIGIBLE", "margin_verdicts", "MARGIN_RANGE", "slopes",
           "pearsons"]

DEFAULT_N_BOOT = 2000
#: fewer units than this and a bootstrap gives no verdict ("cannot be decided"): the percentile
#: interval of a handful of clusters covers far below 95% (two identical items give an interval
#: of width 0)
#: (measured in ``tests/analysis/test_claims.py``: at 10-12 clusters a percentile interval's one-sided
#: error is 1.5-2x its nominal 2.5%; from about 20 it is within simulation error of nominal)
MIN_BOOTSTRAP_UNITS = 20
#: family-wise error rate of a family of tests, two-sided: each side is tested at ALPHA / 2
ALPHA = 0.05
VERDICTS = ("supported", "contradicted", "negligible", "equivalent", "inconclusive",
            "cannot be decided")
#: how "negligible" prints: a side is decided, but the effect is shown smaller than the smallest
#: of interest (the interval the verdict reads lies inside ``null ± sesoi``)
NEGLIGIBLE = "smaller than the smallest effect of interest"


#: how a test over languages whose interval is the test itself says so, in its ``test`` text
INVERTED = "interval: the effects this test does not reject"
#: fields of :class:`ClaimTest` a verdict file does not hold (arrays, functions)
_NOT_SAVED = ("reps", "interval_at")


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
        margin: the equivalence margin (``sesoi`` unless given): ``equivalent`` means the effect
            is shown within ``null ± margin``.
        p_equivalent: the TOST p of equivalence within ``±margin`` (the larger of the two
            one-sided p-values), uncorrected; NaN where no margin or no replicates.
        adj_low, adj_high: the interval at the family-adjusted level (the one the verdict reads:
            it excludes the null exactly when the adjusted p is at most ``ALPHA``); NaN outside a
            family or for a permutation test.
        reason: why a test is "cannot be decided" (too few units, resolution, not computable).
        reps: the bootstrap replicates (not saved): the interval at another level.
        interval_at: for a test over languages whose permutation test can be inverted (a
            trend's slope), ``level -> (low, high)``: the effects it does not reject at that
            two-sided level (not saved); ``ci_low``, ``ci_high`` are it at ``1 - confidence``.
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
    p_equivalent: float = math.nan
    adj_low: float = math.nan
    adj_high: float = math.nan
    reason: str = ""
    reps: np.ndarray | None = field(default=None, repr=False, compare=False)
    interval_at: Callable[[float], tuple[float, float]] | None = field(default=None, repr=False,
                                                                         compare=False)

    @property
    def half_width(self) -> float:
        """Half the interval's width: the precision this sample size reached."""
        return (self.ci_high - self.ci_low) / 2

    @property
    def inverted(self) -> bool:
        """Whether the interval is the test's own permutation test inverted (said in ``test``,
        :data:`INVERTED`), not a description beside it."""
        return INVERTED in str(self.test)

    def as_dict(self) -> dict:
        """The fields (without the bootstrap replicates) plus ``half_width``."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_SAVED}
        return {**out, "half_width": self.half_width}

    @classmethod
    def from_row(cls, row) -> "ClaimTest":
        """A test from a row of a verdict file (a mapping holding :data:`SAVED_FIELDS`, as
        :meth:`as_dict` gives and ``pandas`` reads back: NaN for None); no replicates.

        Raises:
            KeyError: a field of :data:`SAVED_FIELDS` the row lacks.
        """
        kw = {name: row[name] for name in SAVED_FIELDS}
        for name in ("items_needed", "sesoi", "margin"):
            kw[name] = None if pd.isna(kw[name]) else kw[name]
        for name in ("direction", "n_items", "n_obs", "family_size"):
            kw[name] = int(kw[name])
        return cls(**kw)


#: the fields of :class:`ClaimTest` a verdict file holds, in order (all but the replicates and
#: the inverted test)
SAVED_FIELDS = tuple(f.name for f in fields(ClaimTest) if f.name not in _NOT_SAVED)


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


def bootstrap_p(reps: np.ndarray, null: float, direction: int, margin: float | None = None
                ) -> tuple[float, float]:
    """One-sided bootstrap p-values ``(p_supported, p_contradicted)`` from replicates ``[B]``
    (``(k + 1) / (B + 1)``, NaN replicates left out). For ``direction == 0``: ``(two-sided p,
    NaN)``; the equivalence p is :func:`equivalence_p` (``margin`` is ignored, kept for old
    callers)."""
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
    return float(min(1.0, 2 * min(below, above))), math.nan


def equivalence_p(reps: np.ndarray, null: float, margin: float | None) -> float:
    """The TOST p of equivalence, "the effect lies within ``null ± margin``" (Schuirmann, 1987):
    the larger of the two one-sided bootstrap p-values against ``null - margin`` and
    ``null + margin``. At one-sided level ``a`` it is "the ``1 - 2a`` percentile interval lies
    inside the margins". NaN without a margin or finite replicates."""
    ok = reps[np.isfinite(reps)] if reps is not None else np.array([])
    if margin is None or not margin > 0 or len(ok) == 0:
        return math.nan
    b = len(ok)
    return float(max((np.sum(ok >= null + margin) + 1) / (b + 1),
                     (np.sum(ok <= null - margin) + 1) / (b + 1)))


def _decide(p_sup: float, p_con: float, direction: int, level: float, smallest_p: float = 0.0,
            p_equiv: float = math.nan, level_equiv: float | None = None) -> str:
    """The verdict from one-sided p-values at ``level`` (0.025 uncorrected): supported, then
    contradicted, then equivalent (``p_equiv`` at ``level_equiv``, default ``level``), else
    inconclusive; "cannot be decided" when ``smallest_p`` cannot reach the level."""
    if smallest_p > (2 * level if direction == 0 else level):
        return "cannot be decided"
    if direction == 0:  # p_sup is two-sided
        if np.isfinite(p_sup) and p_sup <= 2 * level:
            return "supported"
    elif np.isfinite(p_sup) and p_sup <= level:
        return "supported"
    if direction != 0 and np.isfinite(p_con) and p_con <= level:
        return "contradicted"
    if np.isfinite(p_equiv) and p_equiv <= (level if level_equiv is None else level_equiv):
        return "equivalent"
    return "inconclusive"


def verdict(low: float, high: float, direction: int, null: float = 0.0,
            margin: float | None = None) -> str:
    """The verdict an interval ``[low, high]`` gives a hypothesis (no multiplicity correction).

    Args:
        direction: ``+1`` (predicts above ``null``), ``-1`` (below), ``0`` (some effect, either
            side).
        margin: an effect within ``±margin`` of ``null`` counts as no effect that matters: an
            interval inside it that does not decide a side is ``"equivalent"``.

    Returns:
        ``"supported"``, ``"contradicted"``, ``"equivalent"`` or ``"inconclusive"`` (also for a
        NaN interval).
    """
    if direction not in (-1, 0, 1):
        raise ValueError(f"direction must be -1, 0 or +1, got {direction!r}")
    if not (np.isfinite(low) and np.isfinite(high)):
        return "inconclusive"
    above, below = low > null, high < null
    if direction == 0 and (above or below):
        return "supported"
    if (above and direction > 0) or (below and direction < 0):
        return "supported"
    if direction != 0 and (above or below):
        return "contradicted"
    if margin is not None and null - margin < low and high < null + margin:
        return "equivalent"
    return "inconclusive"


def items_needed(low: float, high: float, n: int, sesoi: float | None, power: float = 0.8,
                 confidence: float = 0.95) -> int | None:
    """About how many units would give a ``power`` chance of deciding the claim whatever the
    true effect: supported (or contradicted) when it is at least ``sesoi`` away from the null,
    equivalent when it is within, from the precision this run reached.

    The hardest true effect is halfway, ``sesoi / 2``: the test against the null and the
    equivalence test against ``±sesoi`` are then both ``sesoi / 2`` away, and the two decisions
    exclude each other there, so each must come with probability ``power / 2``:
    ``n * ((z_(1-a/2) + z_(power/2)) * se / (sesoi / 2))**2`` (``z_0.4`` = -0.25), with ``se``
    = this interval's half-width / ``z_(1-a/2)`` and the standard error shrinking as
    ``1 / sqrt(n)``. Any other true effect is decided more often (tested by simulation). It uses
    the stated ``sesoi``, not the measured effect (post-hoc power is biased and far too variable
    to plan with).

    Returns:
        an integer above ``n``, or ``None`` when the interval is undefined, no ``sesoi`` is
        stated, or this precision already suffices (then the run needs no more units: it is
        decided, or more units will not change the normal-approximation answer).
    """
    from scipy.stats import norm

    half = (high - low) / 2
    if sesoi is None or not (np.isfinite(half) and half > 0) or not sesoi > 0:
        return None
    z = norm.ppf(1 - (1 - confidence) / 2)
    se = half / z
    need = int(math.ceil(n * ((z + norm.ppf(power / 2)) * se / (sesoi / 2)) ** 2))
    return need if need > n else None


def finish(t: ClaimTest, level: float) -> ClaimTest:
    """``t`` with its verdict read from its p-values at one-sided ``level`` (Holm-adjusted
    within its family when it has one; equivalence Bonferroni-adjusted over the family) and
    ``items_needed`` for an inconclusive item claim. A test whose p-values could not be computed
    is "cannot be decided", with its reason."""
    if t.reason:
        return replace(t, verdict="cannot be decided", items_needed=None)
    fam = t.family_size > 1 and np.isfinite(t.p_adjusted)
    p_eq = min(1.0, t.p_equivalent * t.family_size) if fam else t.p_equivalent
    v = _decide(_side_adjusted(t, "sup") if fam else t.p_supported,
                _side_adjusted(t, "con") if fam else t.p_contradicted,
                t.direction, level, t.smallest_p, p_eq)
    if v == "cannot be decided":
        why = (f"fewer than {MIN_BOOTSTRAP_UNITS} {t.unit}s: a bootstrap over so few is no test "
               f"(its interval covers far below {t.confidence:.0%})"
               if t.unit != "language" and t.smallest_p >= 1 else
               f"the smallest p any outcome could give is {t.smallest_p:.3g}, above {level:g}")
        return replace(t, verdict=v, items_needed=None, reason=why)
    if v in ("supported", "contradicted") and _inside_sesoi(t):
        v = "negligible"
    need = (items_needed(t.ci_low, t.ci_high, t.n_items, t.sesoi, confidence=t.confidence)
            if v == "inconclusive" and t.unit == "item" else None)
    return replace(t, verdict=v, items_needed=need)


def _inside_sesoi(t: ClaimTest) -> bool:
    """Whether the interval the verdict reads (the family-adjusted one where there is one, else
    the test's own: a bootstrap's, or a permutation test inverted) lies inside ``null ±
    sesoi``. A descriptive interval (languages fixed) is not the test and never counts."""
    if t.sesoi is None or not t.sesoi > 0:
        return False
    if t.family_size > 1 and np.isfinite(t.adj_low):
        low, high = t.adj_low, t.adj_high
    elif t.reps is not None or t.inverted or t.unit != "language":
        low, high = t.ci_low, t.ci_high
    else:
        return False
    return bool(np.isfinite(low) and np.isfinite(high)
                and t.null - t.sesoi < low and high < t.null + t.sesoi)


#: the margins :func:`margin_verdicts` reads, as multiples of a claim's smallest effect of interest
MARGIN_RANGE = (0.5, 1.0, 2.0)


def margin_verdicts(t: ClaimTest, factors=MARGIN_RANGE) -> dict[float, str]:
    """The verdict ``t`` would print with its smallest effect of interest (and equivalence margin)
    at each of ``factors`` times the declared one, the data and the family's correction as they
    are: where the verdict changes within the range, the page says so beside it. Only a test
    whose replicates are at hand (a bootstrap on its page) can be re-read; otherwise ``{}``.

    Returns:
        ``{margin: verdict}``, in the order of ``factors``.
    """
    if t.reps is None or t.sesoi is None or not t.sesoi > 0 or t.verdict == "cannot be decided":
        return {}
    out = {}
    level = ALPHA / 2 if t.family_size > 1 and np.isfinite(t.p_adjusted) else (
        1 - t.confidence) / 2
    for f in factors:
        m = t.sesoi * f
        again = replace(t, sesoi=m, margin=m, p_equivalent=equivalence_p(t.reps, t.null, m))
        out[m] = finish(again, level).verdict
    return out


def _side_adjusted(t: ClaimTest, side: str) -> float:
    """The Holm-adjusted p of one side: the adjusted decision p applies to the side that is
    the smaller; the other side is not decided."""
    if t.direction == 0:
        return t.p_adjusted if side == "sup" else math.nan
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
    p-values from the replicates, the TOST p of equivalence within ``±margin`` (``sesoi`` when no
    margin is given), and the uncorrected verdict (a family of one; see
    :func:`xcomps_utils.analysis.families.correct`). The
    building block of the named claims of the analysis modules; use it for a claim of your own.

    Returns:
        a :class:`ClaimTest`; "cannot be decided" with fewer than :data:`MIN_BOOTSTRAP_UNITS`
        clusters, or (with its ``reason``) when more than 5% of replicates are not finite.

    Raises:
        ValueError: a bad ``direction``, ``n_boot < 100``, a missing column, no rows.
    """
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
    margin = sesoi if margin is None else margin
    finite = np.isfinite(lo)
    p_sup, p_con = bootstrap_p(ok, null, direction) if finite else (math.nan, math.nan)
    few = n < MIN_BOOTSTRAP_UNITS
    reason = ""
    if not finite and not few:
        reason = (f"the statistic could not be computed in {1 - len(ok) / n_boot:.0%} of the "
                  f"bootstrap replicates (a group it needs is missing from them)"
                  if np.isfinite(est) else "the statistic cannot be computed on this data "
                  "(a group it needs is missing)")
    t = ClaimTest(claim=claim, hypothesis=hypothesis, measure=measure, effect=est,
                  ci_low=lo, ci_high=hi, null=null, direction=direction, verdict="inconclusive",
                  n_items=n, unit=unit, n_obs=len(data), source=source, scope=scope,
                  confidence=confidence, null_hypothesis=null_hypothesis or _default_null(
                      null, direction), test=f"bootstrap over {unit}s ({n_boot} replicates)",
                  p_supported=p_sup, p_contradicted=p_con, sesoi=sesoi, caveat=caveat,
                  margin=margin, smallest_p=1.0 if few else (2 if direction == 0 else 1) / (len(ok) + 1),
                  p_equivalent=equivalence_p(ok, null, margin) if finite else math.nan,
                  reason=reason, reps=ok if finite else None)
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


@functools.lru_cache(maxsize=256)
def _every_labeling(labels: tuple, strata: tuple | None, limit: int) -> np.ndarray | None:
    """:func:`_labelings` as a read-only ``[P, n]`` array, made once per labels and strata (a
    simulation tests many data sets over the same languages: the same labelings each time)."""
    every = _labelings(np.array(labels, dtype=object),
                       None if strata is None else np.array(strata, dtype=object), limit)
    if every is None:
        return None
    out = np.array(every, dtype=object).reshape(len(every), len(labels))
    out.setflags(write=False)
    return out


def slope(v, x) -> float:
    """The least-squares slope of ``v`` on ``x`` (NaN pairs dropped; NaN without two ``x``
    values): the statistic of the trend tests over languages (their permutation tests take
    every relabeling at once: :func:`slopes`); ``x`` centred, ``v`` not needed centred.

    Args:
        v, x: ``[n]`` values and labels (any float-castable).
    """
    x, v = np.asarray(x, dtype=float), np.asarray(v, dtype=float)
    ok = np.isfinite(v) & np.isfinite(x)
    if not ok.all():
        x, v = x[ok], v[ok]
    if not len(x):
        return math.nan
    xc = x - x.sum() / len(x)
    den = float(xc @ xc)
    return float(xc @ v / den) if den > 0 else math.nan


def slopes(v, xs) -> np.ndarray:
    """:func:`slope` of ``v`` on each row of ``xs`` at once (the batched statistic of a
    permutation test: one row per relabeling); equal to it up to the last bits.

    Args:
        v: ``[n]`` values; xs: ``[P, n]`` labels (any float-castable).

    Returns:
        ``[P]`` slopes (NaN where :func:`slope` gives NaN).
    """
    xs, v = np.asarray(xs, dtype=float), np.asarray(v, dtype=float)
    if not (np.isfinite(xs).all() and np.isfinite(v).all()):
        return np.array([slope(v, x) for x in xs], dtype=float)   # NaN pairs dropped per row
    xc = xs - (xs.sum(axis=1) / xs.shape[1])[:, None]
    den = np.einsum("pn,pn->p", xc, xc)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (xc @ v) / den, math.nan)


def pearsons(v, xs) -> np.ndarray:
    """``np.corrcoef(v, x)[0, 1]`` for each row ``x`` of ``xs`` at once (up to the last bits):
    NaN where a value is NaN or either side is constant; clipped to [-1, 1].

    Args:
        v: ``[n]`` values; xs: ``[P, n]`` (any float-castable).

    Returns:
        ``[P]`` correlations.
    """
    xs, v = np.asarray(xs, dtype=float), np.asarray(v, dtype=float)
    xc = xs - xs.mean(axis=1)[:, None]
    vc = v - v.mean()
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc @ vc) / (np.sqrt(np.einsum("pn,pn->p", xc, xc)) * math.sqrt(vc @ vc))
    return np.clip(r, -1.0, 1.0)


def permutation_test(labels, statistic: Callable[[np.ndarray], float], strata=None,
                     n_perm: int = 9999, seed: int = 0, exact_limit: int = 20000,
                     batched: bool = False) -> tuple[float, np.ndarray, bool]:
    """The permutation distribution of ``statistic`` over relabelings of ``labels``.

    Units (languages) are exchangeable under the null: every relabeling of ``labels`` that keeps
    each stratum's labels in that stratum (``strata``: a confound held fixed, e.g. resource
    level when the labels are morphological types) is equally likely. When there are at most
    ``exact_limit`` distinct relabelings all are enumerated (an exact test, whose smallest p is
    1 / their number); otherwise ``n_perm`` are drawn at random.

    Args:
        labels: ``[n_units]`` labels (types, or a permutation index).
        statistic: maps a relabeling ``[n_units]`` to a float; with ``batched``, maps
            ``[P, n_units]`` relabelings (object) to ``[P]`` floats.
        batched: call ``statistic`` once, on the observed labels (row 0) stacked over every
            relabeling, so that the observed value and the null come from the same arithmetic.

    Returns:
        ``(observed, null_values, exact)``: ``statistic(labels)``, the statistic over the
        relabelings (the observed labeling included when exact), and whether it was exact.
    """
    labels = np.asarray(labels, dtype=object)
    every, exact = relabelings(labels, strata, n_perm, seed, exact_limit)
    if batched:
        out = np.asarray(statistic(np.concatenate([labels[None], every])), dtype=float)
        return float(out[0]), out[1:], exact
    observed = float(statistic(labels))
    return observed, np.array([statistic(l) for l in every], dtype=float), exact


def relabelings(labels, strata=None, n_perm: int = 9999, seed: int = 0,
                exact_limit: int = 20000) -> tuple[np.ndarray, bool]:
    """The relabelings :func:`permutation_test` reads: every distinct one within ``strata``
    when there are at most ``exact_limit``, else ``n_perm`` drawn at random (seeded).

    Returns:
        ``(relabelings, exact)``: ``[P, n_units]`` labels (object), and whether they are all.
    """
    labels = np.asarray(labels, dtype=object)
    strata_arr = None if strata is None else np.asarray(strata, dtype=object)
    every = _every_labeling(tuple(labels.tolist()),
                            None if strata is None else tuple(strata_arr.tolist()), exact_limit)
    if every is not None:
        return every, True
    rng = np.random.default_rng(seed)
    st = (np.zeros(len(labels), dtype=int) if strata_arr is None
          else pd.factorize(strata_arr)[0])
    drawn = np.tile(np.arange(len(labels)), (n_perm, 1))
    for s in np.unique(st):
        idx = np.flatnonzero(st == s)
        drawn[:, idx] = idx[rng.random((n_perm, len(idx))).argsort(axis=1)]
    return labels[drawn], False


def permutation_p(observed: float, null_values: np.ndarray, exact: bool, direction: int
                  ) -> tuple[float, float, float]:
    """One-sided permutation p-values ``(p_supported, p_contradicted)`` and the smallest p the
    test of the hypothesis' side can reach (for ``direction == 0``: the smallest two-sided p).

    Args:
        observed: the statistic on the data as labelled.
        null_values: ``[P]`` the statistic under each permutation (NaN ones are left out).
        exact: ``null_values`` are every distinct labeling (p = share at least as extreme),
            else ``P`` random draws (p = ``(k + 1) / (P + 1)``).
        direction: +1 / -1, the side the hypothesis predicts; 0: two-sided (the second p is
            NaN).
    """
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
                   confidence: float = 0.95, batched: bool = False) -> ClaimTest:
    """A claim whose unit is the language, tested by permuting language labels.

    Args:
        values: one value per language (index: language codes), e.g. accuracy.
        labels: the property tested, per language (same index), e.g. morphological type.
        statistic: ``(values, labels) -> float`` (numpy arrays in the index order); with
            ``batched``, ``(values [n], labels [P, n]) -> [P]``
            (:func:`permutation_test`'s ``batched``).
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
    obs, null_vals, exact = permutation_test(lab, lambda l: statistic(v, l), st, n_perm, seed,
                                             batched=batched)
    p_sup, p_con, smallest = permutation_p(obs, null_vals, exact, direction)
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


def decided(tests: list[ClaimTest]) -> list[ClaimTest]:
    """The tests whose verdict is supported or contradicted."""
    return [t for t in tests if t.verdict in ("supported", "contradicted")]
