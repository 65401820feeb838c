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
  families. :func:`correct` adjusts each family with Holm's step-down method (Holm, 1979,
  ``statsmodels``), so the chance of any false decision in a family stays at 5%;
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

Families (:func:`correct`) are Holm-corrected over the tests that *can* reach the level at the
family's size (Tarone, 1990): a test that no outcome could decide is left out of the family and
of its printed size, instead of diluting the tests that can. The interval printed beside a
corrected verdict is the one the verdict reads (at the family-adjusted level), labelled, beside the
unadjusted 95% interval.

For a bootstrap, ``p_supported`` is the share of replicates on the null's side of ``null``
(``(k + 1) / (B + 1)``), so "supported" at 0.025 is "the 95% percentile interval excludes the
null". Accuracies exclude ties and near ties (``tie`` / ``near_tie`` columns, when present) from
their denominator, as :func:`xcomps_utils.analysis.stats.accuracy_table` does.
"""

from __future__ import annotations

import itertools
import math
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from .. import paths

__all__ = ["ClaimTest", "cluster_bootstrap", "bootstrap_means", "verdict", "evaluate_claim",
           "claims_table", "claims_markdown", "decided", "items_needed", "DEFAULT_N_BOOT",
           "ALPHA", "VERDICTS", "correct", "permutation_test", "relabelings", "language_claim",
           "finish", "INVERTED",
           "percentile_interval", "bootstrap_p", "permutation_p", "SESOI",
           "equivalence_p", "MIN_BOOTSTRAP_UNITS", "testable", "verdict_label", "Family",
           "FAMILIES", "declared_family", "family_table", "read_verdicts", "verdict_counts",
           "findings_markdown", "VERDICT_COLUMNS", "NEGLIGIBLE", "margin_verdicts",
           "MARGIN_RANGE", "MODEL_PARAMETERS", "deciding_sizes",
           "MOST_LANGUAGES", "SIZE_OUTCOMES", "deciding_sizes_markdown"]

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

    def as_dict(self) -> dict:
        """The fields (without the bootstrap replicates) plus ``half_width``."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_SAVED}
        return {**out, "half_width": self.half_width}


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
    elif t.reps is not None or _inverted(t) or t.unit != "language":
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
    margin is given), and the uncorrected verdict (a family of one; see :func:`correct`). The
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
    observed = float(statistic(labels))
    every, exact = relabelings(labels, strata, n_perm, seed, exact_limit)
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
    every = _labelings(labels, strata_arr, exact_limit)
    if every is not None:
        return np.array(every, dtype=object).reshape(len(every), len(labels)), True
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


# --- families ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Family:
    """A family of tests a page prints together and corrects together (:func:`correct`).

    Attributes:
        name: the family's name (a page may add `` (<model>)`` to it).
        chapter: the chapter (``notebooks/<chapter>.md``) that prints it.
        role: ``"confirmatory"`` (a paper's primary claims, decided before the data were seen)
            or ``"exploratory"``.
        claims: each claim of the family and its smallest effect of interest (the equivalence
            margin and the size ``items_needed`` plans for, in the claim's measure), or None
            for a claim with no equivalence test (a permutation over languages).
    """

    name: str
    chapter: str
    role: str
    claims: dict


#: smallest effects of interest (the size ``items_needed`` plans for), in each measure's unit.
#: ``"span"``: a trend over a label on [0, 1] (the morphology trend: the paper's types coded 0,
#: ½, 1, or the Grambank share of bound inflection), as the accuracy gained or lost from the
#: label's one end to the other: 0.10, the resource trend's 0.05 per tier step over the tiers'
#: two steps (declared in session 16, after the BMLAMA-53 estimates had been printed without it:
#: derived from the resource trend's margin, not from them)
SESOI = {"accuracy": 0.05, "slope": 0.05, "correlation": 0.3, "proportion": 0.1, "span": 0.1}
_A, _P, _C = SESOI["accuracy"], SESOI["proportion"], SESOI["correlation"]
_XCOMPS = {"english_advantage": _A, "english_rank": None, "subtle_negatives_harder": _A,
           "morphology_trend": None, "resource_trend": None}

#: Every family the book's pages form, in one table: chapter, claims, role, and each claim's
#: smallest effect of interest. :func:`correct` reads it (a declared family's role, its claims
#: and their SESOI are checked); :func:`family_table` shows it with what each test can decide
#: at its run's size.
FAMILIES = {f.name: f for f in (
    Family("XCOMPS, primary claims (Direct)", "xcomps_results", "confirmatory",
           {**_XCOMPS, "direct_tracks_neuro": _C}),
    Family("XCOMPS, Meta and second model", "xcomps_results", "exploratory", _XCOMPS),
    Family("token-level perplexity, primary claims", "token_perplexity_results", "confirmatory",
           {"pivotal_carries_most": _P, "pivotal_rarely_whole": _P}),
    Family("token-level perplexity, per task", "token_perplexity_results", "exploratory",
           {"above_chance": _A, "order_effect": _A, "pivotal_influence": _P,
            "pivotal_direction": _P}),
    Family("where Δ comes from", "xcomps_token_level", "exploratory",
           {"concept_carries_most": _P, "property_above_chance": _A}),
    Family("concept prior, pooled", "xcomps_token_level", "confirmatory",
           {"prior_favours_acceptable": _P, "direct_gains_from_prior": _A}),
    Family("Direct's gain, per language", "xcomps_token_level", "exploratory",
           {"direct_gains_from_prior": _A}),
    Family("cross-lingual agreement", "xcomps_token_level_agreement", "exploratory",
           {"cross_lingual_agreement": _P, "agreement_follows_morphological_type": None,
            "agreement_follows_resource_level": None}),
    Family("across languages", "grammar_across_languages", "exploratory",
           {"construction_agreement": None, "grammar_tracks_concepts": None}),
    Family("pivot share per language", "grammar_across_languages", "exploratory",
           {"pivot_carries_most": None, "pivot_influence": _P}),
    Family("BMLAMA, primary claims", "bmlama_languages", "confirmatory",
           {"resource_trend": SESOI["slope"], "morphology_trend": SESOI["span"], "english_rank": None,
            "direct_tracks_neuro": None}),
    # the co-primary measure of the two trends (issue 42): the knowledge in nats; a trend is a
    # finding only where both measures decide the same side (bmlama_study.coprimary)
    Family("BMLAMA, primary claims in nats", "bmlama_languages", "confirmatory",
           {"resource_trend": None, "morphology_trend": None}),
    Family("BMLAMA, other claims", "bmlama_languages", "exploratory",
           {"direct_tracks_meta": None, "consistency_follows_family": None,
            "consistency_follows_script": None}),
)}


def declared_family(name: str) -> Family | None:
    """The :data:`FAMILIES` entry of a family name, with or without a trailing `` (<model>)``
    (None when undeclared)."""
    if name in FAMILIES:
        return FAMILIES[name]
    base = name.rsplit(" (", 1)[0] if name.endswith(")") else name
    return FAMILIES.get(base)


def _check_declared(tests: list[ClaimTest], family: str, role: str | None) -> str:
    """The family's role, after checking the tests against its declaration."""
    fam = declared_family(family)
    if fam is None:
        if role is None:
            raise ValueError(f"family {family!r} is not declared in claims.FAMILIES: declare it "
                             f"there (chapter, role, claims, SESOI), or pass role= for a family "
                             f"of your own")
        return role
    if role is not None and role != fam.role:
        raise ValueError(f"family {family!r} is declared {fam.role!r} in claims.FAMILIES, "
                         f"not {role!r}")
    for t in tests:
        if t.claim not in fam.claims:
            raise ValueError(f"claim {t.claim!r} is not declared in family {fam.name!r} "
                             f"(claims.FAMILIES: {sorted(fam.claims)})")
        want = fam.claims[t.claim]
        if want is not None and t.sesoi != want:
            raise ValueError(f"claim {t.claim!r}: its test uses SESOI {t.sesoi!r}, family "
                             f"{fam.name!r} declares {want!r} (claims.FAMILIES)")
    return fam.role


def family_table(tests: list[ClaimTest]) -> pd.DataFrame:
    """The families of ``tests`` as declared (:data:`FAMILIES`) and as run: one row per test with
    ``chapter``, ``family``, ``claim``, ``scope``, ``role``, ``sesoi``, ``unit``, ``n`` and
    whether the test is decidable by design at this size (``decidable``: its smallest
    attainable p reaches the level within its family, :func:`testable`; else the reason)."""
    rows = []
    for t in tests:
        fam = declared_family(t.family)
        rows.append({"chapter": fam.chapter if fam else "", "family": t.family,
                     "claim": t.claim, "scope": t.scope, "role": t.role,
                     "sesoi": fam.claims.get(t.claim) if fam else t.sesoi, "unit": t.unit,
                     "n": t.n_items, "family size": t.family_size,
                     "decidable at this size": "yes" if t.verdict != "cannot be decided"
                     else f"no: {t.reason}"})
    return pd.DataFrame(rows)


def _min_p(t: ClaimTest) -> float:
    """The smallest two-sided decision p a test can reach (1 when it cannot be computed)."""
    if t.reason or not np.isfinite(t.p_supported):
        return 1.0
    return t.smallest_p if t.direction == 0 else min(1.0, 2 * t.smallest_p)


def testable(tests: list[ClaimTest], alpha: float = ALPHA) -> np.ndarray:
    """Which tests of a family can reach the level at the family's size (Tarone, 1990).

    ``K`` is the smallest ``k`` with at most ``k`` tests whose smallest attainable two-sided p
    is at most ``alpha / k``; those tests form the family. The others could not be decided by
    any outcome at that size, so counting them would only lower every other test's level. The
    choice reads the tests' designs (their smallest attainable p), never their outcomes, so the
    family-wise error stays at ``alpha``.

    Returns:
        ``[n_tests]`` booleans.
    """
    pmin = np.array([_min_p(t) for t in tests], float)
    for k in range(1, len(tests) + 1):
        inside = pmin <= alpha / k
        if inside.sum() <= k:
            return inside
    return np.zeros(len(tests), bool)


def _adjusted_interval(t: ClaimTest, p_raw: float, p_adj: float, alpha: float):
    """The interval at the level the family's correction gave this test (percentile, or the
    permutation test inverted: ``interval_at``): it excludes the null exactly when the adjusted
    p is at most ``alpha``."""
    if (t.reps is None and t.interval_at is None) or not (
            np.isfinite(p_raw) and np.isfinite(p_adj)) or p_adj <= 0:
        return math.nan, math.nan
    a = min(1 - t.confidence, alpha * p_raw / p_adj)
    if t.interval_at is not None:
        return t.interval_at(a)
    # the bootstrap p is (k + 1) / (B + 1): the replicates with the null value added once, so
    # the interval's ends and the p-values count the same replicates
    low, high = np.quantile(np.append(t.reps, t.null), [a / 2, 1 - a / 2],
                            method="inverted_cdf")
    return float(low), float(high)


def correct(tests: list[ClaimTest], family: str, role: str | None = None,
            alpha: float = ALPHA) -> list[ClaimTest]:
    """Holm's step-down correction over one family of tests (Holm, 1979; ``statsmodels``),
    restricted to the tests that can reach the level (:func:`testable`, Tarone, 1990).

    Each test's decision p is ``2 * min(p_supported, p_contradicted)`` (two-sided; for a
    two-sided hypothesis, its two-sided p); Holm adjusts them over the testable tests at
    ``alpha``, and each verdict is read again from the adjusted p (a side is decided when its
    adjusted one-sided p is at most ``alpha / 2``). Equivalence is Bonferroni-adjusted over the
    same tests. A test left out (no outcome could decide it at the family's size, or it could
    not be computed) is "cannot be decided", with its reason, and is not counted in
    ``family_size``. Bootstrap tests get the interval at their adjusted level (``adj_low``,
    ``adj_high``).

    A family the book's pages form is declared in :data:`FAMILIES` (its role, its claims and
    their SESOI; a test that disagrees with the declaration is an error); a family of your own
    needs ``role``.

    Returns:
        the tests with ``family``, ``family_size`` (the tests corrected over), ``role``,
        ``p_adjusted`` and the verdict set.

    Raises:
        ValueError: an unknown ``role``; an undeclared family without ``role``; a test whose
            claim or SESOI differs from its family's declaration.
    """
    from statsmodels.stats.multitest import multipletests

    role = _check_declared(tests, family, role)
    if role not in ("confirmatory", "exploratory"):
        raise ValueError(f"role must be 'confirmatory' or 'exploratory', got {role!r}")
    if not tests:
        return []
    p = np.array([t.p_supported if t.direction == 0 else
                  min(1.0, 2 * min(t.p_supported, t.p_contradicted)) for t in tests], float)
    inside = testable(tests, alpha) & np.isfinite(p)
    m = int(inside.sum())
    adj = np.full(len(p), np.nan)
    if m:
        adj[inside] = multipletests(p[inside], alpha=alpha, method="holm")[1]
    out = []
    for t, pr, a, ok in zip(tests, p, adj, inside):
        t = replace(t, family=family, family_size=max(m, 1), role=role, p_adjusted=float(a))
        if not ok:
            why = t.reason or (
                f"in a family of {m} test{'s' if m != 1 else ''} (Tarone), the smallest p this "
                f"test could give ({_min_p(t):.3g}, two-sided) cannot reach its level "
                f"({alpha / max(m, 1):.3g})")
            # a test's own interval (inverted) is not shown where the test reads no verdict
            gone = {"ci_low": math.nan, "ci_high": math.nan} if t.interval_at else {}
            out.append(replace(t, verdict="cannot be decided", items_needed=None, reason=why,
                               **gone))
            continue
        lo, hi = _adjusted_interval(t, pr, a, alpha)
        out.append(finish(replace(t, adj_low=lo, adj_high=hi), alpha / 2))
    return out


def claims_table(tests: list[ClaimTest]) -> pd.DataFrame:
    """One row per test, the fields of :class:`ClaimTest` plus ``half_width``."""
    return pd.DataFrame([t.as_dict() for t in tests])


def decided(tests: list[ClaimTest]) -> list[ClaimTest]:
    """The tests whose verdict is supported or contradicted."""
    return [t for t in tests if t.verdict in ("supported", "contradicted")]


def _p(p: float) -> str:
    return "n/a" if not np.isfinite(p) else ("< 0.001" if p < 0.001 else f"{p:.3f}")


def _interval_words(t: ClaimTest, digits: int) -> str:
    """The interval of a test, labelled by what it is."""
    if not (np.isfinite(t.ci_low) and np.isfinite(t.ci_high)):
        return ""
    iv = f"[{t.ci_low:.{digits}f}, {t.ci_high:.{digits}f}]"
    if t.verdict == "cannot be decided":
        how = ("items resampled, languages fixed" if t.unit == "language"
               else f"{t.unit}s resampled")
        return f", description ({how}; not a test) {iv}"
    text = f", {t.confidence:.0%} CI {iv}"
    if t.family_size > 1 and np.isfinite(t.adj_low):
        text += (f" (unadjusted; adjusted for the family, the interval the verdict reads: "
                 f"[{t.adj_low:.{digits}f}, {t.adj_high:.{digits}f}])")
    elif t.unit == "language" and not _inverted(t):
        text = f", description (items resampled, languages fixed; not the test) {iv}"
    return text


def verdict_label(t: ClaimTest) -> str:
    """The verdict as printed: "Supported", "Equivalent within ±0.05", "Cannot be decided with
    7 languages", ..."""
    if t.verdict == "cannot be decided":
        return f"Cannot be decided with {t.n_items} {t.unit}s"
    if t.verdict == "equivalent":
        return f"Equivalent within ±{t.margin:g}"
    if t.verdict == "negligible":
        return f"Negligible: {NEGLIGIBLE} (±{t.sesoi:g})"
    return t.verdict.capitalize()


#: a hypothesis longer than this is shown without its closing parenthetical in a table's claim
#: column (the whole of it is in the claim's details)
SHORT_CLAIM = 90


def _cell(text: str) -> str:
    """Text for one Markdown table cell: one line, ``|`` escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _short(hypothesis: str) -> str:
    """The hypothesis without a closing parenthetical remark when it is long."""
    if len(hypothesis) > SHORT_CLAIM and hypothesis.endswith(")") and " (" in hypothesis:
        return hypothesis[:hypothesis.rindex(" (")]
    return hypothesis


def _effect_cell(t: ClaimTest, digits: int) -> str:
    """The effect and the interval the verdict reads: the family-adjusted one (*adj.*), else the
    95% one, or a *description* (not a test) for a test that cannot be decided or whose
    interval is not the test (languages fixed)."""
    if not np.isfinite(t.effect):
        return "cannot be computed"
    effect = f"{t.effect:.{digits}f}"
    if not (np.isfinite(t.ci_low) and np.isfinite(t.ci_high)):
        return effect
    iv = f"[{t.ci_low:.{digits}f}, {t.ci_high:.{digits}f}]"
    if t.verdict == "cannot be decided":
        return f"{effect} *description* {iv}"
    if t.family_size > 1 and np.isfinite(t.adj_low):
        return f"{effect} [{t.adj_low:.{digits}f}, {t.adj_high:.{digits}f}] *adj.*"
    return (f"{effect} *description* {iv}" if t.unit == "language" and not _inverted(t)
            else f"{effect} {iv}")


#: how a test over languages whose interval is the test itself says so, in its ``test`` text
INVERTED = "interval: the effects this test does not reject"


def _inverted(t: ClaimTest) -> bool:
    """Whether a test's interval is its own permutation test inverted (saved in ``test``)."""
    return INVERTED in str(t.test)


def _details(t: ClaimTest, digits: int) -> list[str]:
    """Everything the table row leaves out, one sentence each: the claim and its measure with
    both intervals (labelled), the null and the test, the family (role, size, Holm-adjusted p)
    or the uncorrected p, equivalence, the caveat, why it cannot be decided, and the size that
    would decide an inconclusive one."""
    effect = (f"{t.effect:.{digits}f}" if np.isfinite(t.effect)
              else "cannot be computed on this data")
    whole = f" *{t.hypothesis}*;" if _short(t.hypothesis) != t.hypothesis else ""
    out = [f"`{t.claim}`:{whole} {t.measure}: {effect}{_interval_words(t, digits)}, "
           f"{t.n_items:,} {t.unit}s.", f"Null: {t.null_hypothesis}; {t.test}."]
    if t.verdict == "cannot be decided":
        out += [f"Not a test: {t.reason}."] if t.reason else []
    elif t.family:
        out.append(f"Family: {t.family} ({t.role}, {t.family_size} test"
                   f"{'s' if t.family_size != 1 else ''} that can reach the level, Holm), "
                   f"adjusted two-sided p {_p(t.p_adjusted)} (level {ALPHA}).")
    else:
        out.append(f"Uncorrected p {_p(min(t.p_supported, t.p_contradicted))}.")
    if t.verdict == "negligible":
        out.append(f"A side is decided, but the interval the verdict reads lies inside ±{t.sesoi:g} "
                   f"of {t.null:g}, the smallest effect of interest: an effect is shown, and shown "
                   f"too small to be the one the claim is about.")
    if t.verdict == "equivalent":
        out.append(f"The effect is shown within ±{t.margin:g} of {t.null:g} (two one-sided "
                   f"tests, p {_p(t.p_equivalent)} uncorrected): no effect of the size that "
                   f"matters.")
    by_margin = margin_verdicts(t)
    if len(set(by_margin.values())) > 1:
        out.append("The verdict depends on the smallest effect of interest: " + ", ".join(
            f"{v} at ±{m:g}" for m, v in by_margin.items()) + ".")
    if t.caveat:
        out.append(f"*Caveat:* {t.caveat}")
    if t.verdict == "inconclusive":
        if t.items_needed and t.sesoi and not np.isfinite(t.p_equivalent):
            out.append(f"Not decided at this size: about {int(t.items_needed):,} {t.unit}s would "
                       f"decide it either way with an equivalence test within ±{t.sesoi:g}, which "
                       f"this test does not have: an effect below {t.sesoi:g}, the smallest of "
                       f"interest, stays undecided at any size.")
        elif t.items_needed and t.sesoi:
            out.append(f"Not decided at this size: about {int(t.items_needed):,} {t.unit}s would give "
                       f"an 80% chance of deciding it (an effect of at least {t.sesoi:g}, the "
                       f"smallest of interest, or equivalence within ±{t.sesoi:g}).")
        elif t.unit == "language" and np.isfinite(t.p_equivalent):
            out.append(f"Not decided with these {t.n_items} languages: neither a trend nor its "
                       f"absence (within ±{t.margin:g}) yet; more items per language measure "
                       f"each language more precisely, and the findings page says whether "
                       f"these languages can decide it either way.")
        elif t.unit == "language":
            out.append(f"Not decided with these {t.n_items} languages: a permutation over "
                       f"languages decides an effect but never its absence, and more items per "
                       f"language add no language (the findings page says what could decide "
                       f"it).")
        else:
            out.append("Not decided at this size.")
    return out


#: the book's table cells do not wrap (``book/_assets/xcomps.css``); those of a verdict table do,
#: so that it fits the text column: the table is framed by a ``<div>`` of this class
_FRAME = ('<div class="xcomps-verdicts"><style>div.cell_output div.xcomps-verdicts table td '
          '{white-space: normal} div.xcomps-verdicts td details {min-width: 14em}</style>')
#: the header of :func:`claims_markdown`'s table and the line under it
_HEADER = "| claim | verdict | effect [interval] | n | scope |\n| --- | --- | --- | --- | --- |"
_LEGEND = ("*Effect [interval]*: the interval the verdict reads, 95% (*adj.*: at the level "
           "Holm's correction gave the test in its family); *description*: an interval that is "
           "not the test. Click a claim for its measure, null, test, family, adjusted p and "
           "caveat.")


def claims_markdown(tests: list[ClaimTest], digits: int = 2) -> str:
    """The verdicts as one compact Markdown table, a row per test: the claim (its hypothesis,
    short), the verdict (:func:`verdict_label`), the effect and the interval the verdict reads
    (labelled *adj.* when adjusted for the family, *description* when it is not a test), the
    number of units and the scope. Everything else is one click away, in an HTML ``<details>``
    under the claim (:func:`_details`: the measure, the unadjusted 95% interval, the null and
    the test, the family, its role and size and the Holm-adjusted p, equivalence, the caveat,
    why an undecidable claim cannot be decided, the size that could decide an inconclusive
    one). The table is framed by a ``<div>`` whose cells wrap (:data:`_FRAME`); a legend
    follows it. No tests: ``""``.

    When the environment variable ``XCOMPS_VERDICTS`` names a folder (the Makefile's chapter
    rule sets it, with ``XCOMPS_CHAPTER``), the tests are also written there, for the findings
    page (:func:`read_verdicts`): a row each in ``<folder>/<XCOMPS_CHAPTER>.csv``, which the
    first call of a process overwrites and later calls append to.

    Raises:
        ValueError: ``XCOMPS_VERDICTS`` is set and ``XCOMPS_CHAPTER`` is not.
    """
    _record_verdicts(tests)
    if not tests:
        return ""
    rows = [f"| {_claim_cell(t, digits)} | **{_cell(verdict_label(t))}** | "
            f"{_effect_cell(t, digits)} | {t.n_items:,} {_cell(t.unit)}s | {_cell(t.scope)} |"
            for t in tests]
    return _framed([_HEADER, *rows]) + "\n\n" + _LEGEND


def _framed(lines: list[str]) -> str:
    """A Markdown table (its lines) inside the frame whose cells wrap."""
    return "\n\n".join([_FRAME, "\n".join(lines), "</div>"])


def _claim_cell(t: ClaimTest, digits: int) -> str:
    """The hypothesis (short), and a click away everything else (:func:`_details`)."""
    return (f"<details><summary>{_cell(_short(t.hypothesis))}</summary>"
            f"{_cell('<br>'.join(_details(t, digits)))}</details>")


# --- the verdicts of a build, for the findings page ---------------------------------------------

#: the columns of a verdict file: :meth:`ClaimTest.as_dict`, the page that printed the test and
#: the model it tested
VERDICT_COLUMNS = [*(f.name for f in fields(ClaimTest) if f.name not in _NOT_SAVED), "half_width",
                   "page", "model"]
#: the parameters a chapter names its models with (read from the page's namespace)
MODEL_PARAMETERS = ("model", "models", "compare_model", "methods_model")
#: the verdict files this process has begun (the first call overwrites, later calls append)
_STARTED: set[str] = set()


def _model_of(t: ClaimTest, page: dict) -> str:
    """The model a test is about: the longest of the page's model parameters that its scope or
    family names (a second model, one of several), else the page's ``model``, else ``""``."""
    names = []
    for key in MODEL_PARAMETERS:
        value = page.get(key)
        names += [value] if isinstance(value, str) else (
            [v for v in value if isinstance(v, str)] if isinstance(value, (list, tuple)) else [])
    named = [n for n in names if n and n in f"{t.scope} {t.family}"]
    if named:
        return max(named, key=len)
    return page["model"] if isinstance(page.get("model"), str) else ""


def _record_verdicts(tests: list[ClaimTest]) -> None:
    """Write ``tests`` to ``$XCOMPS_VERDICTS/$XCOMPS_CHAPTER.csv`` (nothing when
    ``XCOMPS_VERDICTS`` is unset): the first call of this process overwrites the file (an empty
    list still makes it, so the findings page knows the page ran), later calls append. The
    model of each test is read from the page's parameters (the notebook's namespace, the
    ``__main__`` module in a kernel; :data:`MODEL_PARAMETERS`)."""
    folder = paths.verdicts_dir()
    if folder is None:
        return
    page = paths.chapter()
    if not page:
        raise ValueError("XCOMPS_VERDICTS is set but XCOMPS_CHAPTER is not: set both (the page's "
                         "name, as the Makefile's chapter rule does) or unset XCOMPS_VERDICTS")
    path = folder / f"{page}.csv"
    namespace = vars(sys.modules["__main__"]) if "__main__" in sys.modules else {}
    rows = pd.DataFrame([{**t.as_dict(), "page": page, "model": _model_of(t, namespace)}
                         for t in tests], columns=VERDICT_COLUMNS)
    first = str(path.resolve()) not in _STARTED
    path.parent.mkdir(parents=True, exist_ok=True)
    rows.to_csv(path, mode="w" if first else "a", header=first, index=False)
    _STARTED.add(str(path.resolve()))


def _pages_with_claims() -> list[str]:
    """The chapters that print verdicts, in the order :data:`FAMILIES` declares them."""
    return list(dict.fromkeys(f.chapter for f in FAMILIES.values()))


def read_verdicts(folder) -> tuple[pd.DataFrame, list[str]]:
    """The verdicts the chapters of a build printed (``<folder>/<page>.csv``, written by
    :func:`claims_markdown`), and the chapters that print verdicts (:data:`FAMILIES`) whose file
    is missing.

    Returns:
        ``(rows, missing)``: one row per test (:data:`VERDICT_COLUMNS`; the pages in the order
        :data:`FAMILIES` declares them, then any other, each page's rows as printed); the missing
        pages in that order. A folder that does not exist: no rows, every page missing.

    Raises:
        ValueError: a file whose columns are not :data:`VERDICT_COLUMNS` (named, with what to
            do).
    """
    folder = Path(folder)
    files = {p.stem: p for p in sorted(folder.glob("*.csv"))} if folder.is_dir() else {}
    order = _pages_with_claims()
    pages = [p for p in order if p in files] + [p for p in files if p not in order]
    frames = []
    for page in pages:
        df = pd.read_csv(files[page])
        if list(df.columns) != VERDICT_COLUMNS:
            raise ValueError(f"{files[page]}: its columns are not those of a verdict file "
                             f"(claims.VERDICT_COLUMNS): execute the chapter {page!r} again "
                             f"(make {files[page].parent.parent}/{page}.ipynb)")
        frames.append(df)
    rows = (pd.concat(frames, ignore_index=True) if frames
            else pd.DataFrame(columns=VERDICT_COLUMNS))
    for col in ("claim", "hypothesis", "measure", "verdict", "unit", "scope", "family", "role",
                "caveat", "reason", "page", "model", "source", "null_hypothesis", "test"):
        rows[col] = rows[col].fillna("").astype(str)
    return rows, [p for p in order if p not in files]


def _from_row(row: pd.Series) -> ClaimTest:
    """A :class:`ClaimTest` from a row of :func:`read_verdicts` (no replicates)."""
    kw = {f.name: row[f.name] for f in fields(ClaimTest) if f.name not in _NOT_SAVED}
    for name in ("items_needed", "sesoi", "margin"):
        kw[name] = None if pd.isna(kw[name]) else kw[name]
    for name in ("direction", "n_items", "n_obs", "family_size"):
        kw[name] = int(kw[name])
    return ClaimTest(**kw)


def verdict_counts(rows: pd.DataFrame) -> pd.DataFrame:
    """How many tests of each verdict, per role and model: index ``(role, model)``
    (confirmatory first, then exploratory; a model the pages did not name is
    ``"(not named)"``), columns :data:`VERDICTS` then ``total``; a row per pair that has tests."""
    df = rows.assign(model=rows["model"].replace("", "(not named)"),
                     role=pd.Categorical(rows["role"], ["confirmatory", "exploratory"]),
                     verdict=pd.Categorical(rows["verdict"], VERDICTS))
    counts = (df.groupby(["model", "role", "verdict"], observed=False).size()
              .unstack("verdict").reindex(columns=list(VERDICTS), fill_value=0))
    counts = counts[counts.sum(axis=1) > 0].assign(total=lambda c: c.sum(axis=1))
    counts.columns.name = None
    return counts.swaplevel().sort_index(level="role", sort_remaining=False).astype(int)


def findings_markdown(rows: pd.DataFrame, digits: int = 2) -> str:
    """The rows of :func:`read_verdicts` as one Markdown table, a row per test: a link to the
    page that tests it (``{doc}`` to ``/executed/<page>``, as ``book/_toc.yml`` names it), the
    claim (its hypothesis, short; its details a click away), the model, the verdict, the effect
    and the interval the verdict reads, the number of units and the scope (as
    :func:`claims_markdown` prints them). No rows: ``""``."""
    if rows.empty:
        return ""
    lines = ["| page | claim | model | verdict | effect [interval] | n | scope |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for _, row in rows.iterrows():
        t = _from_row(row)
        page = row["page"]
        lines.append(f"| {{doc}}`{page.replace('_', ' ')} </executed/{page}>` | "
                     f"{_claim_cell(t, digits)} | {_cell(row['model'])} | "
                     f"**{_cell(verdict_label(t))}** | {_effect_cell(t, digits)} | "
                     f"{t.n_items:,} {_cell(t.unit)}s | {_cell(t.scope)} |")
    return _framed(lines)



def deciding_sizes_markdown(sizes: pd.DataFrame) -> str:
    """The rows of :func:`deciding_sizes` as one Markdown table whose cells wrap (the text
    column holds it): the claim linked to its page, the model, the verdict, the units behind it,
    and the outcome in bold with why. No rows: ``""``."""
    if sizes.empty:
        return ""
    lines = ["| claim | model | verdict | n | outcome: why |", "| --- | --- | --- | --- | --- |"]
    for _, r in sizes.iterrows():
        page = r["page"]
        lines.append(f"| {{doc}}`{_cell(r['claim'].replace('_', ' '))} </executed/{page}>` | "
                     f"{_cell(r['model'])} | {_cell(r['verdict'])} | {int(r['n']):,} "
                     f"{_cell(r['unit'])}s | **{_cell(r['outcome'])}**"
                     + ("" if r["to decide"] == r["outcome"] else f": {_cell(r['to decide'])}")
                     + " |")
    return _framed(lines)


#: the most languages any benchmark of this study holds (BMLAMA-53): a claim about languages that
#: needs more has no size of the available data that decides it
MOST_LANGUAGES = 53

#: what :func:`deciding_sizes` says of each test, in its ``outcome`` column
SIZE_OUTCOMES = ("decided", "more data decides it", "needs an equivalence test",
                 "undecidable by design")


def deciding_sizes(rows: pd.DataFrame, available: dict | None = None,
                   most_languages: int = MOST_LANGUAGES,
                   languages_to_decide: dict | None = None) -> pd.DataFrame:
    """What size decides each test of :func:`read_verdicts` (issue 31's publish sizes): a row
    per test with ``page``, ``claim``, ``model``, ``verdict``, ``n`` (units behind it now),
    ``unit``, ``outcome`` (one of :data:`SIZE_OUTCOMES`) and ``to decide``, the sentence that
    says why:

    * a supported, contradicted or equivalent verdict: "decided";
    * an inconclusive item claim with a smallest effect of interest: about how many items give
      an 80% chance of deciding it whatever the true effect (``items_needed``): "more data
      decides it", or undecidable by design when the data hold fewer ("no size of the available
      data decides it");
    * an inconclusive claim about languages: how many languages, each measured without error,
      would decide it either way at the book's smallest effect (``languages_to_decide``, from
      the design, not from this run's interval): undecidable by design when no benchmark here
      has that many; otherwise, for a permutation over languages (which decides an effect but
      never its absence), "needs an equivalence test";
    * "cannot be decided": undecidable by design, with why no outcome of the test can reach the
      level at any size of these units (its ``reason``).

    Args:
        available: page -> the items its data hold at most (the project's XCOMPS sample: 30).
            An item claim that read them all and needs more is undecidable by design.
        most_languages: the most languages any benchmark here holds (:data:`MOST_LANGUAGES`).
        languages_to_decide: ``(page, claim)`` (or ``claim``) -> about how many languages
            would decide it either way
            (:func:`xcomps_utils.analysis.bmlama_study.languages_to_decide`).
    """
    available = available or {}
    languages_to_decide = languages_to_decide or {}
    out = []
    for _, row in rows.iterrows():
        v, unit, n = row["verdict"], row["unit"], int(row["n_items"])
        if v in ("supported", "contradicted", "negligible", "equivalent"):
            outcome, what = "decided", "decided"
        elif v == "inconclusive" and unit == "language":
            k = languages_to_decide.get((row["page"], row["claim"]),
                                        languages_to_decide.get(row["claim"]))
            k = int(k) if k is not None and np.isfinite(k) else None
            p_eq = pd.to_numeric(row.get("p_equivalent"), errors="coerce")
            how = (f"about {k:,} languages measured without error would decide it either way "
                   f"at the book's smallest effect (80% chance, with an equivalence test)"
                   if k is not None else "")
            if k is not None and k > most_languages:
                outcome = "undecidable by design"
                what = (f"{how}; no benchmark here has more than {most_languages} languages: no "
                        f"size of the available data decides it")
            elif np.isfinite(p_eq):
                outcome = "more data decides it"
                what = ((how + "; these languages do, with more items per language (the page's "
                         "size planning says how many)") if how else
                        "more items per language decide it (the page's size planning says how "
                        "many)")
            else:
                outcome = "needs an equivalence test"
                what = ("a permutation over languages decides an effect but never its absence"
                        + (f"; {how}, within the {most_languages} languages a benchmark here "
                           f"has" if k is not None else
                           "; no smallest effect of interest is declared for this measure"))
        elif v == "inconclusive":
            need = pd.to_numeric(row.get("items_needed"), errors="coerce")
            cap = available.get(row["page"])
            if np.isfinite(need):
                what = f"about {int(need):,} {unit}s (80% chance of deciding it either way)"
                # said only of a test that already read all the data hold (not a smaller sample)
                if cap is not None and need > cap and n >= cap:
                    outcome = "undecidable by design"
                    what += f"; the data hold {int(cap):,}: no size of the available data decides it"
                else:
                    outcome = "more data decides it"
            else:
                outcome = "needs an equivalence test"
                what = (f"no smallest effect of interest declared: more {unit}s decide an "
                        f"effect, never its absence")
        else:
            outcome = "undecidable by design"
            what = f"not by more {unit}s of these: {row.get('reason') or 'too few units'}"
        out.append({"page": row["page"], "claim": row["claim"], "model": row["model"],
                    "verdict": v, "n": n, "unit": unit, "outcome": outcome, "to decide": what})
    return pd.DataFrame(out, columns=["page", "claim", "model", "verdict", "n", "unit",
                                      "outcome", "to decide"])

