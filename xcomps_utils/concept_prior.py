"""The concept prior in XCOMPS' Direct judgements: how often it decides a pair, and the claims
about it (this book's analysis, on the decompositions of :mod:`xcomps_utils.decompose`).

Direct decides a pair by ``delta = cond_delta + prior_delta``: the continuation after the
concept (conditional Direct, the property given the concept) plus the concept's own prior
(:func:`xcomps_utils.decompose.decompose_pairs`). Here: :func:`prior_share` (how often the two
judges disagree, with the prior's net effect), and three claims tested on items
(:class:`xcomps_utils.claims.ClaimTest`): :func:`direct_needs_prior`,
:func:`concept_carries_most`, :func:`property_above_chance`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .claims import SESOI, bootstrap_means, evaluate_claim

__all__ = ["prior_share", "direct_needs_prior", "concept_carries_most", "property_above_chance"]


def _decided(d: pd.DataFrame, cols=("direct_tie", "cond_tie")) -> pd.DataFrame:
    """Pairs that are a decision of each judge named in ``cols``: not a tie and, for full
    Direct, not a near tie of the run (``direct_near_tie``, or ``direct_decision`` when the pairs
    carry the run's decisions, :func:`xcomps_utils.precision.decisions`), so this chapter's
    Direct accuracy is the XCOMPS chapter's."""
    keep = np.ones(len(d), dtype=bool)
    for c in cols:
        if c == "direct_tie" and "direct_decision" in d:
            keep &= d["direct_decision"].isin(["right", "wrong"]).to_numpy()
            continue
        extra = ["direct_near_tie"] if c == "direct_tie" else []
        for col in [c] + extra:
            if col in d:
                keep &= ~d[col].fillna(0).astype(bool).to_numpy()
    return d[keep]


def _prior_rows(d: pd.DataFrame) -> pd.DataFrame:
    """Decided pairs with ``direct_right`` (the level) and ``prior_only`` (1: conditional Direct
    does not prefer the acceptable sentence) for :func:`xcomps_utils.claims.bootstrap_means`."""
    d = _decided(d, ("direct_tie",))
    return d.assign(direct_right=(d["direct_correct"] == 1).astype(int),
                    prior_only=(d["cond_correct"] != 1).astype(float))


def _level(value):
    """``combine`` for bootstrap_means: the mean of the level ``value`` (NaN if absent)."""
    def combine(means, levels):
        return means[:, levels.index(value)] if value in levels else np.full(len(means), np.nan)
    return combine


def prior_share(decomposed: pd.DataFrame, by: str | list[str] | None = "lang",
                item: str = "property", n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """How often the two judges of a pair disagree, with the net effect of the concept prior.

    ``prior_share`` (a *gross* count, not an explanation): among the pairs full-sentence Direct
    gets right (``delta > 0``; ties and near ties left out), the fraction whose continuation
    after the concept does *not* prefer the acceptable sentence (``cond_delta <= 0``). It is far
    from 0 even with no systematic prior and no knowledge: with independent zero-mean noise on
    both parts it is about 25%. The **net** effect, ``net``: Direct's accuracy minus its accuracy
    with the prior's sign flipped (:func:`_mirror_rows`), 0 when the prior is as likely to help
    as to hurt (sign-symmetric); it is what :func:`direct_needs_prior` tests. Also, per group:
    ``direct_acc``, ``cond_acc``, ``both``, ``only_direct``, ``only_cond``, ``neither`` (counts
    over all pairs), and ``prior_share``'s 95% percentile interval resampling whole items
    (``item``: a concept-property item in every language at once,
    :func:`xcomps_utils.claims.bootstrap_means`).

    Returns:
        one row per group (``by=None``: one row, ``all``): ``pairs``, ``direct_correct``
        (count), ``prior_share``, ``ci_low``, ``ci_high``, ``items``, ``direct_acc``,
        ``cond_acc``, ``both``, ``only_direct``, ``only_cond``, ``neither``, ``net``.
    """
    groups = [("all", decomposed)] if by is None else decomposed.groupby(by, sort=False)
    names = ["group"] if by is None else ([by] if isinstance(by, str) else list(by))
    rows = []
    for key, d in groups:
        est, lo, hi, n = bootstrap_means(_prior_rows(d), "prior_only", item, "direct_right",
                                         _level(1), n_boot=n_boot, seed=seed)
        dc, cc = d["direct_correct"] == 1, d["cond_correct"] == 1
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(names, key)), "pairs": len(d), "direct_correct": int(dc.sum()),
                     "prior_share": est, "ci_low": lo, "ci_high": hi, "items": n,
                     "direct_acc": float(_decided(d, ("direct_tie",))["direct_correct"].mean()),
                     "cond_acc": float(_decided(d, ("cond_tie",))["cond_correct"].mean()),
                     "both": int((dc & cc).sum()), "only_direct": int((dc & ~cc).sum()),
                     "only_cond": int((~dc & cc).sum()), "neither": int((~dc & ~cc).sum()),
                     "net": _net(d)})
    return pd.DataFrame(rows)


def _net(d: pd.DataFrame) -> float:
    """Direct's accuracy minus its mirror's (the prior's sign flipped), :func:`_mirror_rows`."""
    m = _mirror_rows(d) if "cond_delta" in d and "delta" in d else d.iloc[:0]
    if not len(m):
        return math.nan
    return float(m["direct_correct"].mean() - m["mirror_correct"].mean())


_SOURCE = ("this book (issue 14): XCOMPS (He et al., 2025) x token-level perplexity (Prins et al., "
           "2026)")


def _mirror_rows(d: pd.DataFrame) -> pd.DataFrame:
    """Pairs with Direct's decision and its *mirror*: the decision the same pair would get with
    the concept prior's sign flipped, ``cond_delta - prior_delta = 2 cond_delta - delta > 0``.
    A pair is kept when both are decisions: not a tie or near tie of the run (``_decided``),
    and the mirror not within the run's near-tie tolerance (``direct_near_tie_tolerance`` when
    present), so both sides are trimmed alike."""
    kept = _decided(d, ("direct_tie",))
    mirror = 2 * kept["cond_delta"] - kept["delta"]
    tol = kept["direct_near_tie_tolerance"].fillna(0) if "direct_near_tie_tolerance" in kept \
        else 0.0
    kept = kept[mirror.abs() > tol]
    return kept.assign(mirror_correct=((2 * kept["cond_delta"] - kept["delta"]) > 0)
                       .astype(float))


def direct_needs_prior(decomposed: pd.DataFrame, scope: str = "all languages",
                       item: str = "property", **kw):
    """*The concept prior helps Direct, net*: Direct's accuracy minus the accuracy the same
    pairs would have with the concept prior's sign flipped, items resampled.

    Direct decides by ``delta = cond_delta + prior_delta`` (the continuation after the concept
    plus the concept's prior). Under the null of a *sign-symmetric* prior (as likely to favour
    either concept, whatever the model knows of the property), ``cond + prior`` and
    ``cond - prior`` have the same distribution, so Direct is as accurate as its mirror,
    ``2 cond_delta - delta > 0``. (Direct minus *conditional* Direct accuracy is not 0 under
    that null: adding symmetric noise to a model that knows the property lowers its accuracy.)
    Supported: the prior systematically favours the acceptable concept, so part of Direct's
    accuracy is owed to it (COMPS, Misra et al. 2023, removes the prior the same way);
    contradicted: it favours the unacceptable one. Ties and near ties of either side are left
    out (:func:`_mirror_rows`).

    Returns:
        :class:`xcomps_utils.claims.ClaimTest`.
    """
    both = _mirror_rows(decomposed)
    long = pd.concat([both.assign(judge="a_direct", right=both["direct_correct"]),
                      both.assign(judge="b_mirror", right=both["mirror_correct"])])

    def combine(means, levels):
        return means[:, levels.index("a_direct")] - means[:, levels.index("b_mirror")]
    return evaluate_claim("direct_needs_prior", "the concept prior helps Direct, net: Direct is "
                          "more accurate than with the prior's sign flipped", "Direct minus "
                          "mirrored-prior accuracy (net effect of the prior)", long,
                          ("right", "judge", combine), item, +1, 0.0, "item", _SOURCE,
                          scope=scope, null_hypothesis="the prior is sign-symmetric: Direct is "
                          "as accurate as with the prior flipped", sesoi=SESOI["accuracy"], **kw)


def concept_carries_most(decomposed: pd.DataFrame, unit: str = "s",
                         scope: str = "all languages", item: str = "property", **kw):
    """*The concept tokens carry most of the log-probability difference* (the analogue of Prins
    et al.'s pivotal tokens, here the differing span): mean plain proportion of the concept
    group above 0.5, items resampled.

    Returns:
        :class:`xcomps_utils.claims.ClaimTest`.
    """
    col = f"plain_concept_{unit}"
    return evaluate_claim("concept_carries_most", "the concept tokens carry most of the "
                          "difference", f"mean plain proportion on concept tokens "
                          f"({'surprisal' if unit == 's' else 'perplexity'} differences)",
                          decomposed.dropna(subset=[col]), (col, None, _level(None)), item,
                          +1, 0.5, "item", _SOURCE, scope=scope, null_hypothesis="the concept "
                          "tokens carry half of the difference", sesoi=0.1, **kw)


def property_above_chance(decomposed: pd.DataFrame, scope: str = "all languages",
                          item: str = "property", **kw):
    """*The property tokens prefer the acceptable sentence*: conditional Direct accuracy minus
    chance (0.5), over the pairs it decides, items resampled. The null: the continuation after
    the concept is as likely to prefer either sentence (no knowledge of the property given the
    concept).

    Returns:
        :class:`xcomps_utils.claims.ClaimTest`.
    """
    d = _decided(decomposed, ("cond_tie",))
    return evaluate_claim("property_above_chance", "the property tokens prefer the acceptable "
                          "sentence", "conditional Direct accuracy minus 0.5", d,
                          ("cond_correct", None, lambda m, _: m[:, 0] - 0.5), item, +1, 0.0,
                          "item", _SOURCE, scope=scope, null_hypothesis="conditional Direct is "
                          "at chance (0.5)", sesoi=SESOI["accuracy"], **kw)
