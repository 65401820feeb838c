"""The families of claims the book's pages test together, and their correction (Holm).

A *family* is the tests a page prints together (:class:`Family`): the papers' primary claims are
one *confirmatory* family; per-language, per-task and second-model tests are *exploratory*
families. Every family the book forms is declared once, in :data:`FAMILIES` (its chapter, its
role, its claims and each claim's smallest effect of interest, from :data:`SESOI`), before the
data are read; :func:`correct` checks a family's tests against its declaration and adjusts them
with Holm's step-down method (Holm, 1979, ``statsmodels``), so the chance of any false decision in
a family stays at 5%.

Families are Holm-corrected over the tests that *can* reach the level at the family's size
(:func:`testable`, Tarone, 1990): a test that no outcome could decide is left out of the family
and of its printed size, instead of diluting the tests that can. Each corrected test gets the
interval at its family-adjusted level (the one its verdict reads), and its verdict is read again
from the adjusted p-values (:func:`xcomps_utils.analysis.claims.finish`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .claims import ALPHA, ClaimTest, finish

__all__ = ["Family", "SESOI", "FAMILIES", "declared_family", "chapters_with_claims", "testable",
           "correct"]


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
#: and their SESOI are checked); :func:`xcomps_utils.analysis.report.family_table` shows it with
#: what each test can decide at its run's size.
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


def chapters_with_claims() -> list[str]:
    """The chapters that print verdicts, in the order :data:`FAMILIES` declares them."""
    return list(dict.fromkeys(f.chapter for f in FAMILIES.values()))


def _check_declared(tests: list[ClaimTest], family: str, role: str | None) -> str:
    """The family's role, after checking the tests against its declaration."""
    fam = declared_family(family)
    if fam is None:
        if role is None:
            raise ValueError(f"family {family!r} is not declared in families.FAMILIES: declare it "
                             f"there (chapter, role, claims, SESOI), or pass role= for a family "
                             f"of your own")
        return role
    if role is not None and role != fam.role:
        raise ValueError(f"family {family!r} is declared {fam.role!r} in families.FAMILIES, "
                         f"not {role!r}")
    for t in tests:
        if t.claim not in fam.claims:
            raise ValueError(f"claim {t.claim!r} is not declared in family {fam.name!r} "
                             f"(families.FAMILIES: {sorted(fam.claims)})")
        want = fam.claims[t.claim]
        if want is not None and t.sesoi != want:
            raise ValueError(f"claim {t.claim!r}: its test uses SESOI {t.sesoi!r}, family "
                             f"{fam.name!r} declares {want!r} (families.FAMILIES)")
    return fam.role


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
