"""The families of claims the book's pages test together, and their correction (Holm).

A *family* is the tests a page prints together (:class:`Family`): the papers' primary claims are
one *confirmatory* family; per-language, per-task and second-model tests are *exploratory*
families. Every family the book forms is declared once, in :data:`FAMILIES` (its chapter, its
role, its claims, each a :class:`Claim`: its smallest effect of interest, from :data:`SESOI`, its
short name, the unit of its effect in words and what its outcomes mean for it), before the data
are read; :data:`QUESTIONS` says which paper's question (or the book's own) each chapter tests; :func:`correct` checks a family's tests against its declaration and adjusts them
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
from dataclasses import dataclass, field, replace
from typing import Mapping

import numpy as np

from .claims import ALPHA, VERDICTS, ClaimTest, finish

__all__ = ["Claim", "holm", "Family", "SESOI", "FAMILIES", "OUTCOMES", "READINGS", "QUESTIONS",
           "declared_family", "declared_claim", "question_of", "chapters_with_claims", "testable",
           "correct"]


@dataclass(frozen=True)
class Claim:
    """A claim as its family declares it: its smallest effect of interest, and how the book
    names it, measures it and reads its outcomes in words (the findings page's sentences and
    table, each chapter's box: :func:`xcomps_utils.analysis.report.findings_words`).

    Attributes:
        sesoi: the smallest effect of interest (the equivalence margin and the size
            ``items_needed`` plans for, in the claim's measure), or None for a claim with no
            equivalence test (a permutation over languages).
        short: the claim in a few words ("English advantage").
        effect_unit: what its effect is measured in, in words ("accuracy, English minus the
            others' mean"): not the unit of analysis (:attr:`ClaimTest.unit`, items or
            languages).
        means: what an outcome means for the claim where its label does not say it (the
            verdict -> words; "equivalent" of ``pivotal_rarely_whole``: the paper's reading
            fails). An outcome not named reads as :data:`OUTCOMES` says.

    Raises:
        ValueError: an empty ``short`` or ``effect_unit``; ``means`` naming an outcome that is
            not one of :data:`xcomps_utils.analysis.claims.VERDICTS`.
    """

    sesoi: float | None
    short: str
    effect_unit: str
    means: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        for name in ("short", "effect_unit"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"the {name!r} parameter of a Claim must be a non-empty string "
                                 f"(how the findings page names the claim); got {value!r}")
        unknown = [v for v in self.means if v not in VERDICTS]
        if unknown:
            raise ValueError(f"the 'means' parameter of a Claim must name outcomes of "
                             f"claims.VERDICTS {list(VERDICTS)}; got {unknown}")

    def reading(self, verdict: str) -> tuple[str, str]:
        """``(reading, words)`` of an outcome for this claim: the reading, one of
        :data:`READINGS`, from :data:`OUTCOMES`; the words from :attr:`means`, else the
        outcome's own.

        Raises:
            ValueError: an outcome not in :data:`xcomps_utils.analysis.claims.VERDICTS`.
        """
        if verdict not in OUTCOMES:
            raise ValueError(f"the 'verdict' parameter must be one of {list(OUTCOMES)}; "
                             f"got {verdict!r}")
        reading, words = OUTCOMES[verdict]
        return reading, self.means.get(verdict, words)


#: what a claim's reading is, in the order the findings page says them: it holds, it fails (the
#: other side, or no effect of the size that matters), it is not decided at this size, or no
#: size of the data available decides it
READINGS = ("holds", "fails", "undecided", "undecidable")
#: each outcome's reading for the claim (:data:`READINGS`) and its words, where a claim's
#: declaration (:attr:`Claim.means`) says nothing more precise
OUTCOMES = {
    "supported": ("holds", "holds"),
    "contradicted": ("fails", "the other side holds"),
    "negligible": ("fails", "an effect too small to matter"),
    "equivalent": ("fails", "no effect of the size that matters"),
    "inconclusive": ("undecided", "not decided at this size"),
    "cannot be decided": ("undecidable", "no outcome of the test could decide it"),
}


@dataclass(frozen=True)
class Family:
    """A family of tests a page prints together and corrects together (:func:`correct`).

    Attributes:
        name: the family's name (a page may add `` (<model>)`` to it).
        chapter: the chapter (``notebooks/<chapter>.md``) that prints it.
        role: ``"confirmatory"`` (a paper's primary claims, decided before the data were seen)
            or ``"exploratory"``.
        claims: each claim of the family (its name -> :class:`Claim`).
        per: ``""``, or what each of its tests is one of when the family tests a claim once per
            task or language (``"task"``, ``"language"``): the findings table counts those
            tests in one cell.
    """

    name: str
    chapter: str
    role: str
    claims: dict
    per: str = ""


#: smallest effects of interest (the size ``items_needed`` plans for), in each measure's unit.
#: ``"span"``: a trend over a label on [0, 1] (the morphology trend: the paper's types coded 0,
#: ½, 1, or the Grambank share of bound inflection), as the accuracy gained or lost from the
#: label's one end to the other: 0.10, the resource trend's 0.05 per tier step over the tiers'
#: two steps (declared in session 16, after the BMLAMA-53 estimates had been printed without it:
#: derived from the resource trend's margin, not from them)
SESOI = {"accuracy": 0.05, "slope": 0.05, "correlation": 0.3, "proportion": 0.1, "span": 0.1}
_A, _P, _C = SESOI["accuracy"], SESOI["proportion"], SESOI["correlation"]
_ENGLISH_RANK = "English ranks first"
_XCOMPS = {
    "english_advantage": Claim(_A, "English advantage", "accuracy, English minus the others' mean",
                               {"contradicted": "English is below the other languages"}),
    "english_rank": Claim(None, _ENGLISH_RANK, "accuracy, English minus the others' mean"),
    "subtle_negatives_harder": Claim(_A, "subtle negatives are harder",
                                     "accuracy, random minus subtle negatives",
                                     {"contradicted": "subtle negatives are easier"}),
    "morphology_trend": Claim(None, "accuracy falls with morphology",
                              "accuracy per morphology step"),
    "resource_trend": Claim(None, "accuracy rises with resources",
                            "accuracy per resource-level step")}
_DIRECT_NEURO = "Direct tracks the probe"

#: Every family the book's pages form, in one table: chapter, claims, role, and each claim's
#: smallest effect of interest, short name, effect unit and outcomes in words. :func:`correct`
#: reads it (a declared family's role, its claims and their SESOI are checked);
#: :func:`xcomps_utils.analysis.report.family_table` shows it with what each test can decide at
#: its run's size; the findings page names and reads every claim from it.
FAMILIES = {f.name: f for f in (
    Family("XCOMPS, primary claims (Direct)", "xcomps_results", "confirmatory",
           {**_XCOMPS, "direct_tracks_neuro": Claim(
               _C, _DIRECT_NEURO, "Pearson r across languages, mean within negative types")}),
    Family("XCOMPS, Meta and second model", "xcomps_results", "exploratory", _XCOMPS),
    Family("token-level perplexity, primary claims", "token_perplexity_results", "confirmatory",
           {"pivotal_carries_most": Claim(
               _P, "the pivotal token carries most", "pivotal share of the mean signed Δs",
               {"contradicted": "the other tokens carry most"}),
            "pivotal_rarely_whole": Claim(
                _P, "the other tokens carry a part", "non-pivotal share of Σ|Δs|",
                {"equivalent": "the paper's reading fails: the pivotal tokens "
                               "explain the difference whole",
                 "negligible": "the paper's reading fails: the other tokens' "
                               "part is too small to matter",
                 "contradicted": "the paper's reading fails: the other tokens push against "
                                 "the total"})},
           per="task"),
    Family("token-level perplexity, per task", "token_perplexity_results", "exploratory",
           {"above_chance": Claim(_A, "above the drawn chance", "accuracy above the drawn chance",
                                  {"equivalent": "at chance", "contradicted": "below chance"}),
            "order_effect": Claim(_A, "the order of the two matters",
                                  "accuracy, good first minus the other order",
                                  {"equivalent": "the order does not matter"}),
            "pivotal_influence": Claim(_P, "pivotal tokens follow the labels",
                                       "|label share| above random signs"),
            "pivotal_direction": Claim(_P, "pivotal tokens favour the correct prompt",
                                       "signed pivotal share (−1 to 1)",
                                       {"contradicted": "pivotal tokens favour the incorrect "
                                                        "prompt"})},
           per="task"),
    Family("where Δ comes from", "xcomps_token_level", "exploratory",
           {"concept_carries_most": Claim(_P, "concept tokens carry most",
                                          "share of Δ on concept tokens",
                                          {"contradicted": "the property tokens carry most"}),
            "property_above_chance": Claim(_A, "property tokens prefer the acceptable",
                                           "conditional accuracy above its drawn chance")}),
    Family("concept prior, pooled", "xcomps_token_level", "confirmatory",
           {"prior_favours_acceptable": Claim(_P, "the concept prior favours the acceptable",
                                              "share of pairs, minus one half"),
            "direct_gains_from_prior": Claim(_A, "Direct gains from the prior",
                                             "accuracy, Direct minus conditional Direct")}),
    Family("Direct's gain, per language", "xcomps_token_level", "exploratory",
           {"direct_gains_from_prior": Claim(_A, "Direct gains from the prior",
                                             "accuracy, Direct minus conditional Direct")},
           per="language"),
    Family("cross-lingual agreement", "xcomps_token_level_agreement", "exploratory",
           {"cross_lingual_agreement": Claim(_P, "items known across languages",
                                             "Cohen's κ, mean over language pairs"),
            "agreement_follows_morphological_type": Claim(
                None, "agreement follows morphology", "κ, same minus different type"),
            "agreement_follows_resource_level": Claim(
                None, "agreement follows resources", "κ, same minus different level")}),
    Family("across languages", "grammar_across_languages", "exploratory",
           {"construction_agreement": Claim(None, "hard constructions are hard everywhere",
                                            "Spearman r, mean over language pairs"),
            "grammar_tracks_concepts": Claim(None, "grammar tracks concepts",
                                             "Pearson r across languages")}),
    Family("pivot share per language", "grammar_across_languages", "exploratory",
           {"pivot_carries_most": Claim(None, "the pivot carries most",
                                        "pivot's per-token share above one half",
                                        {"contradicted": "the other words carry most"}),
            "pivot_influence": Claim(_P, "the pivot moves more than a later word",
                                     "share of comparisons above one half")},
           per="language"),
    Family("BMLAMA, primary claims", "bmlama_languages", "confirmatory",
           {"resource_trend": Claim(SESOI["slope"], "knowledge rises with resources",
                                    "accuracy beyond the control per tier step"),
            "morphology_trend": Claim(SESOI["span"], "knowledge falls with morphology",
                                      "accuracy beyond the control over the index (0 to 1)"),
            "english_rank": Claim(None, _ENGLISH_RANK,
                                  "accuracy beyond the control, English minus the others"),
            "direct_tracks_neuro": Claim(None, "Direct tracks Neuro",
                                         "Spearman r across languages")}),
    # the co-primary measure of the two trends (issue 42): the knowledge in nats; a trend is a
    # finding only where both measures decide the same side (bmlama_study.coprimary)
    Family("BMLAMA, primary claims in nats", "bmlama_languages", "confirmatory",
           {"resource_trend": Claim(None, "knowledge rises with resources (nats)",
                                    "nats beyond the control per tier step"),
            "morphology_trend": Claim(None, "knowledge falls with morphology (nats)",
                                      "nats beyond the control over the index (0 to 1)")}),
    Family("BMLAMA, other claims", "bmlama_languages", "exploratory",
           {"direct_tracks_meta": Claim(None, "Direct tracks Meta", "Spearman r across languages"),
            "consistency_follows_family": Claim(None, "consistency follows family",
                                                "RankC beyond chance, same minus other family"),
            "consistency_follows_script": Claim(None, "consistency follows script",
                                                "RankC beyond chance, same minus other script")}),
)}

#: The questions the book answers, in the order the findings page says them: a paper's (its
#: citation key) or the book's own (no key), each with the chapters that test it. Every chapter
#: of :data:`FAMILIES` is in one (``tests/analysis/test_families.py``).
QUESTIONS = {
    "XCOMPS": ("he2025xcomps", ("xcomps_results",)),
    "Token-level perplexity": ("prins2026perplexed", ("token_perplexity_results",)),
    "The book's own questions": ("", ("xcomps_token_level", "xcomps_token_level_agreement",
                                      "bmlama_languages", "grammar_across_languages")),
}


def declared_family(name: str) -> Family | None:
    """The :data:`FAMILIES` entry of a family name, with or without a trailing `` (<model>)``
    (None when undeclared)."""
    if name in FAMILIES:
        return FAMILIES[name]
    base = name.rsplit(" (", 1)[0] if name.endswith(")") else name
    return FAMILIES.get(base)


def declared_claim(family: str, claim: str) -> Claim | None:
    """The :class:`Claim` a family declares (its name with or without a trailing
    `` (<model>)``), or None when the family or the claim is undeclared."""
    fam = declared_family(family)
    return fam.claims.get(claim) if fam else None


def question_of(chapter: str) -> str:
    """The question of :data:`QUESTIONS` a chapter tests (``""`` for a chapter of none)."""
    return next((q for q, (_, chapters) in QUESTIONS.items() if chapter in chapters), "")


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
        want = fam.claims[t.claim].sesoi
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


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's (1979) step-down adjusted p-values of ``p`` (shape ``(m,)``, in its order): the
    running maximum of ``(m - i) * p_(i)`` over the sorted p-values, capped at 1. The values of
    ``statsmodels.stats.multitest.multipletests(p, method="holm")[1]`` (tests/analysis hold it),
    without its ``gc.collect()`` on every call, which took most of a claim contract's time in a
    process holding many objects."""
    p = np.asarray(p, float)
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate(p[order] * np.arange(len(p), 0, -1)))
    out = np.empty_like(adj)
    out[order] = adj
    return out


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
        adj[inside] = holm(p[inside])
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
