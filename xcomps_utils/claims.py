"""The papers' claims as tests: an effect size, a 95% interval, and a verdict.

A claim of He et al. (2025, XCOMPS) or Prins et al. (2026, "perplexed for the right reason") is
stated here as a hypothesis about an effect (a difference of accuracies, a slope, a correlation, a
proportion), measured on this run, with a percentile bootstrap interval that resamples **whole
items** (Efron & Tibshirani, 1993, ch. 13; the cluster bootstrap of Field & Welsh, 2007): a
concept-property item of XCOMPS with all its sentences and negatives, a minimal pair of the
perplexity tasks with all its prompt wordings and orders. Sentences are never resampled one by one:
they are not independent.

The verdict is read off the interval, never off the point estimate:

* ``supported``: the interval lies entirely on the side the hypothesis predicts;
* ``contradicted``: it lies entirely on the other side, or (for a two-sided hypothesis of *some*
  effect, given ``margin``) entirely within ``±margin`` of no effect;
* ``inconclusive``: anything else, at this sample size. :attr:`ClaimTest.items_needed` says roughly
  how many items would make the interval narrow enough to decide, if the effect stayed as measured.

Accuracies exclude ties and near ties (``tie`` / ``near_tie`` columns, when present) from their
denominator, as :func:`xcomps_utils.stats.accuracy_table` does.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import pandas as pd

__all__ = ["ClaimTest", "cluster_bootstrap", "bootstrap_means", "verdict", "evaluate_claim", "claims_table",
           "claims_markdown", "decided", "items_needed", "DEFAULT_N_BOOT",
           # XCOMPS (He et al., 2025)
           "english_advantage", "subtle_negatives_harder", "morphology_trend",
           "direct_tracks_neuro",
           # token-level perplexity (Prins et al., 2026)
           "above_chance", "pivotal_never_whole", "pivotal_carries_most", "pivotal_beyond_typical",
           "order_effect"]

DEFAULT_N_BOOT = 2000
VERDICTS = ("supported", "contradicted", "inconclusive")


@dataclass(frozen=True)
class ClaimTest:
    """One claim tested on one run.

    Attributes:
        claim: short identifier (``"subtle_negatives_harder"``).
        hypothesis: the paper's claim, stated as the hypothesis tested.
        measure: what ``effect`` is, in words, with its unit.
        effect: the point estimate on this run's data.
        ci_low, ci_high: the percentile bootstrap interval (``confidence``).
        null: the value of no effect (0 for a difference, 1 for "the whole difference").
        direction: ``+1`` the hypothesis predicts ``effect > null``, ``-1`` below, ``0`` either
            (some effect).
        verdict: ``"supported"``, ``"contradicted"`` or ``"inconclusive"``.
        n_items: number of resampled units (items, or cells for a correlation over cells).
        unit: what one resampled unit is.
        n_obs: rows of data behind the estimate (pairs, prompt pairs).
        source: where the claim is made.
        items_needed: for an inconclusive verdict, about how many units would make the interval
            exclude ``null`` if the effect stayed as measured (``None`` otherwise or when the
            effect is no effect).
        scope: what the test covers (method, task, model).
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

    @property
    def half_width(self) -> float:
        """Half the interval's width: the precision this sample size reached."""
        return (self.ci_high - self.ci_low) / 2

    def as_dict(self) -> dict:
        return {**asdict(self), "half_width": self.half_width}


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
    codes = data.groupby(cols, sort=False, dropna=False).ngroup().to_numpy()
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(codes.max() + 2))
    members = [order[starts[k]:starts[k + 1]] for k in range(codes.max() + 1)]
    estimate = float(statistic(data))
    rng = np.random.default_rng(seed)
    reps = np.empty(n_boot)
    for b in range(n_boot):
        drawn = rng.integers(0, len(members), len(members))
        reps[b] = statistic(data.iloc[np.concatenate([members[k] for k in drawn])])
    ok = reps[np.isfinite(reps)]
    if len(ok) < 0.95 * n_boot:
        return estimate, math.nan, math.nan, len(members)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(ok, [alpha, 1 - alpha])
    return estimate, float(low), float(high), len(members)


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
    cols = [cluster] if isinstance(cluster, str) else list(cluster)
    missing = [c for c in cols + [value] + ([by] if by else []) if c not in data]
    if missing:
        raise ValueError(f"column(s) {missing} not in the data (columns: {list(data.columns)})")
    if len(data) == 0:
        return math.nan, math.nan, math.nan, 0
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
    ok = reps[np.isfinite(reps)]
    if len(ok) < 0.95 * n_boot:
        return estimate, math.nan, math.nan, int(n_c)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(ok, [alpha, 1 - alpha])
    return estimate, float(low), float(high), int(n_c)


def verdict(low: float, high: float, direction: int, null: float = 0.0,
            margin: float | None = None) -> str:
    """The verdict an interval ``[low, high]`` gives a hypothesis.

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


def items_needed(effect: float, low: float, high: float, null: float, n: int,
                 power: float = 0.8, confidence: float = 0.95) -> int | None:
    """About how many units would give a ``power`` chance of an interval that excludes
    ``null``, if the true effect were the measured one.

    The standard normal-approximation sample size, ``n * ((z_(1-a/2) + z_power) * se / gap)**2``,
    with ``se`` read off the interval's half on the side of ``null`` (percentile intervals need
    not be symmetric) and ``gap = |effect - null|``.

    Returns:
        an integer, or ``None`` when the interval is undefined or the effect is no effect.
    """
    from scipy.stats import norm

    gap = abs(effect - null)
    half = (effect - low) if effect > null else (high - effect)
    if not (np.isfinite(half) and half > 0) or not np.isfinite(gap) or gap < 1e-12:
        return None
    z = norm.ppf(1 - (1 - confidence) / 2)
    se = half / z
    return int(math.ceil(n * ((z + norm.ppf(power)) * se / gap) ** 2))


def evaluate_claim(claim: str, hypothesis: str, measure: str, data: pd.DataFrame,
                   statistic: Callable[[pd.DataFrame], float] | tuple, cluster: str | list[str],
                   direction: int, null: float = 0.0, unit: str = "item", source: str = "",
                   scope: str = "", margin: float | None = None, n_boot: int = DEFAULT_N_BOOT,
                   seed: int = 0, confidence: float = 0.95) -> ClaimTest:
    """Test one claim: :func:`cluster_bootstrap` (or, when ``statistic`` is a tuple
    ``(value, by, combine)``, :func:`bootstrap_means`) then :func:`verdict`. The building block
    of the named claims below; use it for a claim of your own."""
    if callable(statistic):
        est, lo, hi, n = cluster_bootstrap(data, statistic, cluster, n_boot, seed, confidence)
    else:  # (value, by, combine): a statistic of group means, see bootstrap_means
        est, lo, hi, n = bootstrap_means(data, *statistic[:1], cluster, *statistic[1:],
                                         n_boot=n_boot, seed=seed, confidence=confidence)
    v = verdict(lo, hi, direction, null, margin)
    return ClaimTest(claim=claim, hypothesis=hypothesis, measure=measure, effect=est,
                     ci_low=lo, ci_high=hi, null=null, direction=direction, verdict=v,
                     n_items=n, unit=unit, n_obs=len(data), source=source,
                     items_needed=(items_needed(est, lo, hi, null, n, confidence=confidence)
                                   if v == "inconclusive" else None),
                     scope=scope, confidence=confidence)


def claims_table(tests: list[ClaimTest]) -> pd.DataFrame:
    """One row per test, the fields of :class:`ClaimTest` plus ``half_width``."""
    return pd.DataFrame([t.as_dict() for t in tests])


def decided(tests: list[ClaimTest]) -> list[ClaimTest]:
    """The tests whose verdict is not inconclusive."""
    return [t for t in tests if t.verdict != "inconclusive"]


def claims_markdown(tests: list[ClaimTest], digits: int = 2) -> str:
    """The verdicts as a Markdown list: hypothesis, scope, verdict, effect with its interval and
    the number of items, and for an inconclusive one the size that could decide it."""
    lines = []
    for t in tests:
        scope = f" ({t.scope})" if t.scope else ""
        line = (f"- **{t.verdict.capitalize()}**{scope}: *{t.hypothesis}* — {t.measure}: "
                f"{t.effect:.{digits}f}, {t.confidence:.0%} CI [{t.ci_low:.{digits}f}, "
                f"{t.ci_high:.{digits}f}], {t.n_items} {t.unit}s (±{t.half_width:.{digits}f}).")
        if t.verdict == "inconclusive":
            if t.items_needed and t.items_needed <= 100 * t.n_items:
                line += (f" Not decided at this size: about {t.items_needed:,} {t.unit}s would "
                         f"give an 80% chance of deciding it if the effect were "
                         f"{t.effect:.{digits}f}.")
            elif t.items_needed:
                line += (" Not decided at this size, and an effect this small would need over "
                         f"100 times as many {t.unit}s: there may be none to find.")
            else:
                line += " Not decided at this size."
        lines.append(line)
    return "\n".join(lines)


# --- accuracy helpers -------------------------------------------------------------------------

def _decided_rows(df: pd.DataFrame, correct: str) -> pd.DataFrame:
    """Rows that are a decision: not a tie, not a near tie, correct not missing."""
    keep = df[correct].notna()
    for col in (correct.replace("correct", "tie"), correct.replace("correct", "near_tie")):
        if col != correct and col in df:
            keep &= ~df[col].fillna(0).astype(bool)
    return df[keep]


XCOMPS_SOURCE = "He et al. (2025), XCOMPS, §4.3"
PPL_SOURCE = "Prins et al. (2026), perplexed for the right reason, §4"
SUBTLE = ("taxonomic", "overlap", "co-occurrence")
MORPH_ORDER = {"analytic": 0, "inflected": 1, "agglutinative": 2}


def _method(correct: str) -> str:
    return correct.rsplit("_correct", 1)[0] or correct


def english_advantage(scored: pd.DataFrame, correct: str = "direct_correct",
                      item: str | list[str] = "property", **kw) -> ClaimTest:
    """*Models do well in English and decline in other languages* (He et al. 2025, §4.3.0.1).

    Effect: accuracy in English minus the mean over the other languages' accuracies (fraction of
    decided pairs), resampling concept-property items (an item is resampled in every language at
    once, so the languages' shared items stay paired).

    Args:
        scored: one row per XCOMPS pair with ``lang``, the ``item`` column and ``correct`` (from
            :func:`xcomps_utils.xcomps.pair_table`), optionally ``<method>_tie`` and
            ``<method>_near_tie``.
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
                          _decided_rows(scored, correct), (correct, "lang", combine), item, +1,
                          0.0, "item", XCOMPS_SOURCE, scope=_method(correct), **kw)


def subtle_negatives_harder(scored: pd.DataFrame, correct: str = "direct_correct",
                            item: str | list[str] = "property", **kw) -> ClaimTest:
    """*Negatives that share semantic similarity are harder than random ones* (He et al. 2025,
    §4.3.0.2).

    Effect: accuracy on random negatives minus the mean accuracy over taxonomic, overlap and
    co-occurrence negatives (fraction of decided pairs; all languages of ``scored`` pooled);
    items resampled. NaN (inconclusive) when random or every subtle type has no decided pair.
    """
    def combine(m, levels):
        if "random" not in levels or not any(t in levels for t in SUBTLE):
            return np.full(len(m), np.nan)
        sub = m[:, [levels.index(t) for t in SUBTLE if t in levels]]
        return m[:, levels.index("random")] - np.nanmean(sub, axis=1)
    return evaluate_claim("subtle_negatives_harder", "negatives that share semantic similarity "
                          "are harder than random ones", "random minus mean subtle-negative "
                          "accuracy", _decided_rows(scored, correct),
                          (correct, "negative_sample_type", combine), item, +1, 0.0, "item",
                          XCOMPS_SOURCE, scope=_method(correct), **kw)


def morphology_trend(scored: pd.DataFrame, correct: str = "direct_correct",
                     item: str | list[str] = "property", **kw) -> ClaimTest:
    """*Accuracy falls from analytic to inflected to agglutinative languages* (He et al. 2025,
    §4.3.0.4).

    Effect: the least-squares slope of language accuracy on the morphological type coded 0, 1, 2
    (analytic, inflected, agglutinative), in accuracy per step; negative if the claim holds.
    Items are resampled; the languages are fixed, so the interval says nothing about languages
    not in the run.

    Raises:
        ValueError: no ``morphology`` column, or fewer than two morphological types.
    """
    if "morphology" not in scored:
        raise ValueError("scored pairs need a 'morphology' column (xcomps.pair_table adds it)")
    if scored["morphology"].nunique() < 2:
        raise ValueError(f"a trend needs two morphological types or more; the run has "
                         f"{sorted(scored['morphology'].unique())}")
    morph = scored.groupby("lang")["morphology"].first().map(MORPH_ORDER)

    def combine(m, levels):
        x = morph.reindex(levels).to_numpy(float)
        out = np.full(len(m), np.nan)
        for b, row in enumerate(m):
            ok = np.isfinite(row) & np.isfinite(x)
            if len(np.unique(x[ok])) >= 2:
                out[b] = np.polyfit(x[ok], row[ok], 1)[0]
        return out
    return evaluate_claim("morphology_trend", "accuracy falls from analytic to inflected to "
                          "agglutinative languages", "slope of language accuracy per "
                          "morphological step", _decided_rows(scored, correct),
                          (correct, "lang", combine), item, -1, 0.0, "item", XCOMPS_SOURCE,
                          scope=_method(correct), **kw)


def direct_tracks_neuro(cells: pd.DataFrame, direct: str = "direct", neuro: str = "neuro",
                        **kw) -> ClaimTest:
    """*Direct measurements closely track the internal representations* (He et al. 2025,
    §4.3.0.3).

    Effect: Pearson correlation, over language x negative-type cells, of Direct accuracy and the
    probe score (the paper compares Figure 1's panels). The cells are resampled (a probe cannot be
    re-fit per replicate cheaply), so the interval is over cells, not items.

    Args:
        cells: one row per cell with columns ``lang``, ``subset`` and the two scores.
    """
    cells = cells.dropna(subset=[direct, neuro])

    def stat(d):
        if d[direct].nunique() < 2 or d[neuro].nunique() < 2:
            return math.nan
        return float(np.corrcoef(d[direct], d[neuro])[0, 1])
    return evaluate_claim("direct_tracks_neuro", "Direct accuracy tracks the probe's score",
                      f"Pearson r of Direct accuracy and probe {neuro}", cells, stat,
                      ["lang", "subset"], +1, 0.0, "cell", XCOMPS_SOURCE, scope="direct vs neuro",
                      **kw)


def above_chance(items: pd.DataFrame, task: str, accuracy: str = "accuracy",
                 item: str = "pair_id", **kw) -> ClaimTest:
    """*The correct prompt gets the lower perplexity* (Prins et al. 2026, hypothesis 1):
    mean item accuracy minus chance (0.5), items resampled.

    Args:
        items: one row per item (or per item x wording x order) with ``accuracy`` in [0, 1].
    """
    d = items[items["task"] == task] if "task" in items else items
    return evaluate_claim("above_chance", "the correct prompt gets lower perplexity than the "
                          "incorrect one", "mean accuracy minus chance (0.5)", d,
                          (accuracy, None, lambda m, _: m[:, 0] - 0.5), item, +1, 0.0, "item",
                          PPL_SOURCE, scope=task, **kw)


def _mean_claim(claim, hypothesis, metrics, task, value, item, direction, null, kw):
    """A claim about the mean of one column over a task's prompt pairs, items resampled."""
    d = metrics[metrics["task"] == task].dropna(subset=[value])
    return evaluate_claim(claim, hypothesis, f"mean {value}", d,
                          (value, None, lambda m, _: m[:, 0]), item, direction, null, "item",
                          PPL_SOURCE, scope=task, **kw)


def pivotal_never_whole(metrics: pd.DataFrame, task: str, value: str = "plain_pivotal_ppl",
                        item: str = "pair_id", **kw) -> ClaimTest:
    """*Pivotal tokens never fully explain the perplexity shift* (Prins et al. 2026, abstract
    and §4): the mean plain proportion of ΔPPL carried by pivotal tokens is below 1.

    Args:
        metrics: one row per prompt pair (item x wording x order) with ``task``, the item column
            and ``value`` (the token-level perplexity measures, widened).
    """
    return _mean_claim("pivotal_never_whole", "pivotal tokens do not carry the whole "
                       "perplexity difference", metrics, task, value, item, -1, 1.0, kw)


def pivotal_carries_most(metrics: pd.DataFrame, task: str = "nonsense",
                         value: str = "plain_pivotal_ppl", item: str = "pair_id",
                         **kw) -> ClaimTest:
    """*In the nonsense control, most of the perplexity difference is caused by the single
    differing real word* (Prins et al. 2026, §4): the mean plain pivotal proportion is above 0.5.
    """
    return _mean_claim("pivotal_carries_most", "the pivotal token carries most of the "
                       "perplexity difference", metrics, task, value, item, +1, 0.5, kw)


def pivotal_beyond_typical(metrics: pd.DataFrame, task: str, value: str = "norm_pivotal_ppl",
                           item: str = "pair_id", **kw) -> ClaimTest:
    """*Pivotal tokens' influence is greater than that of other tokens* (Prins et al. 2026,
    §1): the mean normalized proportion of pivotal tokens is above 0 (a typical token's
    share)."""
    return _mean_claim("pivotal_beyond_typical", "pivotal tokens carry more of the "
                       "perplexity difference than a typical token", metrics, task, value, item,
                       +1, 0.0, kw)


def order_effect(prompts: pd.DataFrame, task: str, correct: str = "correct",
                 first: str = "good_first", item: str = "pair_id", margin: float = 0.05,
                 **kw) -> ClaimTest:
    """*Accuracy is sensitive to presentation order* (Prins et al. 2026, §4, shown for the
    nonsense task): accuracy when the ``first`` order is presented minus accuracy in the other
    order, two-sided; an interval within ±``margin`` contradicts it.

    Args:
        prompts: one row per prompt pair with ``task``, ``order``, the item column and a 0/1
            ``correct`` (ties: see the module docstring).
    """
    d = _decided_rows(prompts[prompts["task"] == task], correct)
    d = d.assign(_first=(d["order"] == first).map({True: "first", False: "other"}))
    return evaluate_claim("order_effect", "accuracy depends on the order the two sentences are "
                          "presented in", f"accuracy ({first.replace('_', ' ')}) minus accuracy "
                          f"(other order)", d,
                          (correct, "_first", lambda m, lv: m[:, lv.index("first")]
                           - m[:, lv.index("other")]), item, 0, 0.0, "item", PPL_SOURCE,
                          scope=task, margin=margin, **kw)
