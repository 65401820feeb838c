"""Cross-lingual consistency: is a concept-property item known in one language known in another?

XCOMPS (He et al., 2025) translates the same concept-property items into 17 languages, so one can
ask not only *how often* a model is right in each language but *whether it is right about the
same items*. The unit judged is one pair of an item (item x negative type, matched across
languages by ``unit`` columns; ``property`` is the item's language-independent key); each
language is a *rater* that calls every unit right (1) or wrong (0). Ties are no judgement (NaN)
and are left out of every comparison that involves them.

**Measure: Cohen's kappa, pairwise** (Cohen, 1960; ``sklearn.metrics.cohen_kappa_score``), and
their mean over language pairs (Light's kappa, Light 1971). Chance agreement is computed from
*each language's own* accuracy, which is what is needed here: languages differ in accuracy (that
is the paper's point), and two languages at 0.9 accuracy agree on 82% of units by chance alone.
Fleiss' kappa and Krippendorff's alpha pool the raters' marginals into one base rate, which
assumes interchangeable raters and, with unequal accuracies, confounds *how often* with *which
items*; they are better suited to many anonymous annotators than to 7-17 named languages.
Kappa's known limit (the "kappa paradox", Feinstein & Cicchetti 1990): near an accuracy of 0 or
1 it can be low while raw agreement is high, so the raw agreement is reported beside it.

**Intervals**: percentile bootstrap resampling whole concept-property items in every language at
once (:func:`xcomps_utils.claims.cluster_bootstrap`, ``item="property"``), since one item's
pairs are not independent.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .claims import ClaimTest, bootstrap_p, finish, language_claim, percentile_interval
from .xcomps import languages

__all__ = ["correctness_matrix", "cohen_kappa", "pairwise_agreement", "mean_kappa",
           "items_by_languages", "bootstrap_kappas", "KappaReplicates", "agreement_table",
           "cross_lingual_agreement", "agreement_follows"]

DEFAULT_UNIT = ("property", "negative_sample_type")


def _long(scored: pd.DataFrame, correct: str, unit, tie: str | None) -> pd.DataFrame:
    unit = [unit] if isinstance(unit, str) else list(unit)
    need = [c for c in ["lang", correct, *unit] if c not in scored]
    if need:
        raise ValueError(f"scored pairs lack column(s) {need} (have {list(scored.columns)})")
    d = scored[["lang", *unit, correct] + ([tie] if tie and tie in scored else [])].copy()
    dup = d.duplicated(["lang", *unit], keep=False)
    if dup.any():
        ex = d.loc[dup, ["lang", *unit]].head(3).to_dict("records")
        raise ValueError(f"{int(dup.sum())} rows share a (lang, {', '.join(unit)}) unit, e.g. "
                         f"{ex}: choose unit columns that name one pair per language "
                         f"(e.g. unit='pair_id' when ids are aligned across languages)")
    v = d[correct].astype(float)
    if tie and tie in d:
        v[d[tie].fillna(0).astype(bool)] = np.nan
    d["value"] = v
    return d


def correctness_matrix(scored: pd.DataFrame, correct: str = "direct_correct",
                       unit=DEFAULT_UNIT, tie: str | None = "auto") -> pd.DataFrame:
    """Units x languages table of correctness (1.0 right, 0.0 wrong, NaN tie or missing).

    Args:
        scored: one row per pair with ``lang``, the ``unit`` columns and ``correct`` (0/1), e.g.
            :class:`xcomps_utils.decompose.Decomposition` ``.pairs`` or
            :func:`xcomps_utils.xcomps_paper.pair_table`.
        unit: column(s) that identify the same pair across languages.
        tie: column marking ties (``"auto"``: ``correct`` with ``correct`` replaced by ``tie``).

    Raises:
        ValueError: a missing column, or two rows of one language with the same unit.
    """
    tie = correct.replace("correct", "tie") if tie == "auto" else tie
    d = _long(scored, correct, unit, tie)
    unit = [unit] if isinstance(unit, str) else list(unit)
    return d.pivot(index=unit, columns="lang", values="value")


def cohen_kappa(a, b) -> float:
    """Cohen's kappa of two 0/1 vectors (NaN entries dropped pairwise), via scikit-learn.

    Returns:
        kappa in [-1, 1]; NaN when fewer than two units remain or chance agreement is 1 (both
        raters constant and equal: kappa is 0/0).
    """
    from sklearn.metrics import cohen_kappa_score

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ok = ~(np.isnan(a) | np.isnan(b))
    a, b = a[ok], b[ok]
    if len(a) < 2:
        return math.nan
    pa, pb = a.mean(), b.mean()
    if pa * pb + (1 - pa) * (1 - pb) >= 1 - 1e-12:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(cohen_kappa_score(a.astype(int), b.astype(int), labels=[0, 1]))


def pairwise_agreement(matrix: pd.DataFrame) -> pd.DataFrame:
    """One row per pair of languages: ``lang_a``, ``lang_b``, ``n`` (units judged by both),
    ``agreement`` (raw fraction of units with the same judgement), ``kappa`` (Cohen's)."""
    rows = []
    for la, lb in itertools.combinations(matrix.columns, 2):
        a, b = matrix[la].to_numpy(float), matrix[lb].to_numpy(float)
        ok = ~(np.isnan(a) | np.isnan(b))
        rows.append({"lang_a": la, "lang_b": lb, "n": int(ok.sum()),
                     "agreement": float((a[ok] == b[ok]).mean()) if ok.any() else math.nan,
                     "kappa": cohen_kappa(a, b)})
    return pd.DataFrame(rows)


def mean_kappa(matrix: pd.DataFrame, pairs: list[tuple[str, str]] | None = None) -> float:
    """Mean Cohen's kappa over language pairs (Light's kappa; ``pairs``: only these), NaN pairs
    left out."""
    ks = [cohen_kappa(matrix[a], matrix[b])
          for a, b in (pairs if pairs is not None else itertools.combinations(matrix.columns, 2))
          if a in matrix and b in matrix]
    ks = [k for k in ks if np.isfinite(k)]
    return float(np.mean(ks)) if ks else math.nan


def items_by_languages(matrix: pd.DataFrame, item: str = "property") -> pd.DataFrame:
    """Per item: in how many languages it is judged correctly.

    An item is *known* in a language when the majority of its decided pairs there (its negative
    types) are correct (exactly half: not known).

    Returns:
        one row per item: ``languages`` (with a decision), ``known_in`` (count), ``known``
        (languages, comma-separated), ``unknown``, ``accuracy`` (mean over its pairs and
        languages), sorted by ``known_in``.
    """
    per = matrix.groupby(level=item).mean()
    rows = []
    for it, r in per.iterrows():
        dec = r.dropna()
        known = [l for l, v in dec.items() if v > 0.5]
        rows.append({item: it, "languages": len(dec), "known_in": len(known),
                     "known": ", ".join(known),
                     "unknown": ", ".join(l for l in dec.index if l not in known),
                     "accuracy": float(matrix.loc[it].stack().mean())})
    return pd.DataFrame(rows).sort_values(["known_in", "accuracy"]).reset_index(drop=True)


def _blocks(d: pd.DataFrame, unit: list[str], item: str):
    """Per item, its units x languages block of judgements (NaN: tie or missing)."""
    if item not in unit:
        raise ValueError(f"item column {item!r} must be one of the unit columns {unit}")
    m = d.pivot(index=unit, columns="lang", values="value")
    items = m.index.get_level_values(item)
    codes, uniques = pd.factorize(items)
    values = m.to_numpy(float)
    return [values[codes == k] for k in range(len(uniques))], list(m.columns)


def _kappas(values: np.ndarray, pairs: list[tuple[int, int]]) -> np.ndarray:
    """Cohen's kappa of column pairs of a 0/1/NaN matrix, vectorised (equal to scikit-learn's
    ``cohen_kappa_score`` on the rows both columns judge; tested), NaN where undefined."""
    a = values[:, [i for i, _ in pairs]]
    b = values[:, [j for _, j in pairs]]
    ok = ~(np.isnan(a) | np.isnan(b))
    n = ok.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        pa = np.where(ok, a, 0).sum(0) / n
        pb = np.where(ok, b, 0).sum(0) / n
        po = np.where(ok, a == b, False).sum(0) / n
        pe = pa * pb + (1 - pa) * (1 - pb)
        k = (po - pe) / (1 - pe)
    k[(n < 2) | (pe >= 1 - 1e-12)] = np.nan
    return k


@dataclass(frozen=True)
class KappaReplicates:
    """Pairwise kappas and their bootstrap replicates (:func:`bootstrap_kappas`).

    Attributes:
        table: one row per language pair, as :func:`pairwise_agreement`.
        replicates: ``[n_boot, language pairs]`` kappas (NaN where undefined).
        n_items: the items resampled.
    """

    table: pd.DataFrame
    replicates: np.ndarray
    n_items: int


def bootstrap_kappas(scored: pd.DataFrame, correct: str = "direct_correct", unit=DEFAULT_UNIT,
                     item: str = "property", n_boot: int = 2000, seed: int = 0
                     ) -> KappaReplicates:
    """Pairwise kappas and their bootstrap replicates, resampling whole items in every language
    at once (the scheme of :func:`xcomps_utils.claims.cluster_bootstrap`: each replicate draws
    as many items as there are, with replacement).

    Returns:
        a :class:`KappaReplicates`.
    """
    unit_l = [unit] if isinstance(unit, str) else list(unit)
    d = _long(scored, correct, unit_l, correct.replace("correct", "tie"))
    blocks, langs = _blocks(d, unit_l, item)
    table = pairwise_agreement(pd.DataFrame(np.concatenate(blocks), columns=langs))
    index = {l: k for k, l in enumerate(langs)}
    pairs = [(index[a], index[b]) for a, b in zip(table.lang_a, table.lang_b)]
    rng = np.random.default_rng(seed)
    reps = np.empty((n_boot, len(pairs)))
    for r in range(n_boot):
        drawn = rng.integers(0, len(blocks), len(blocks))
        reps[r] = _kappas(np.concatenate([blocks[k] for k in drawn]), pairs)
    return KappaReplicates(table, reps, len(blocks))


def agreement_table(scored: pd.DataFrame, correct: str = "direct_correct", unit=DEFAULT_UNIT,
                    item: str = "property", n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """:func:`pairwise_agreement` with a 95% percentile interval for each kappa, items resampled
    (all languages at once, :func:`bootstrap_kappas`), and each language's ``morphology`` and
    ``resource_level`` (:func:`xcomps_utils.xcomps.languages`)."""
    boot = bootstrap_kappas(scored, correct, unit, item, n_boot, seed)
    table, reps = boot.table, boot.replicates
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        table["ci_low"] = np.nanquantile(reps, 0.025, axis=0)
        table["ci_high"] = np.nanquantile(reps, 0.975, axis=0)
    lt = languages().set_index("iso")
    for side in ("a", "b"):
        table[f"morphology_{side}"] = table[f"lang_{side}"].map(lt["morphological_type"])
        table[f"resource_{side}"] = table[f"lang_{side}"].map(lt["resource_level"])
    return table


_SOURCE = "this book (issue 14), on XCOMPS (He et al., 2025)"


def _claim(name, hypothesis, measure, boot: KappaReplicates, groups, scope, confidence=0.95,
           null_hypothesis=""):
    """A ClaimTest from kappa replicates (items resampled). ``groups`` marks each language pair
    ``+1`` or ``-1``: the statistic is the mean kappa over the ``+1`` pairs minus the mean over
    the ``-1`` pairs (no ``-1`` pair: the mean over the ``+1`` pairs), undefined kappas left
    out."""
    table = boot.table
    est = _group_stat(table["kappa"].to_numpy(float), groups)
    vals = np.array([_group_stat(k, groups) for k in boot.replicates])
    est, lo, hi, ok = percentile_interval(est, vals, len(vals), confidence)
    p_sup, p_con = bootstrap_p(ok, 0.0, +1, None) if np.isfinite(lo) else (math.nan, math.nan)
    t = ClaimTest(claim=name, hypothesis=hypothesis, measure=measure, effect=est, ci_low=lo,
                  ci_high=hi, null=0.0, direction=+1, verdict="inconclusive",
                  n_items=boot.n_items, unit="item",
                  n_obs=int(table["n"].sum()), source=_SOURCE, scope=scope,
                  confidence=confidence, null_hypothesis=null_hypothesis or "kappa 0",
                  test=f"bootstrap over items ({len(vals)} replicates)", p_supported=p_sup,
                  p_contradicted=p_con, sesoi=0.1)
    return finish(t, (1 - confidence) / 2)


def _group_stat(k, groups):
    plus, minus = groups > 0, groups < 0

    def mean(m):
        v = k[m & np.isfinite(k)]
        return float(v.mean()) if len(v) else math.nan
    return mean(plus) - mean(minus) if minus.any() else mean(plus)


def cross_lingual_agreement(scored: pd.DataFrame, correct: str = "direct_correct",
                            unit=DEFAULT_UNIT, item: str = "property", n_boot: int = 2000,
                            seed: int = 0):
    """*An item judged correctly in one language tends to be judged correctly in the others*:
    mean pairwise Cohen's kappa (Light's kappa) above 0, items resampled in every language at
    once. A kappa of 0 is what independent languages with these accuracies would give.

    Returns:
        :class:`xcomps_utils.claims.ClaimTest`.
    """
    boot = bootstrap_kappas(scored, correct, unit, item, n_boot, seed)
    return _claim("cross_lingual_agreement", "an item judged correctly in one language is judged "
                  "correctly in the others, beyond chance", "mean pairwise Cohen's kappa", boot,
                  np.ones(len(boot.table)), correct.split("_")[0])


def agreement_follows(scored: pd.DataFrame, by: str = "morphological_type",
                      correct: str = "direct_correct", unit=DEFAULT_UNIT,
                      item: str = "property", n_boot: int = 2000, seed: int = 0):
    """*Languages of the same type* (``by``: a column of :func:`xcomps_utils.xcomps.languages`,
    ``morphological_type`` or ``resource_level``) *agree more on which items they know*: mean
    kappa over same-type language pairs minus the mean over different-type pairs.

    Unit: the **language** (the claim is about kinds of language): the types are permuted over
    languages, within each level of the other property (resource level for morphology and the
    other way round: the two are confounded in the book's languages), every distinct relabeling
    once (:func:`xcomps_utils.claims.language_claim`). With seven languages no relabeling can
    reach the level: the verdict is "cannot be decided" and the effect a description. The
    interval resamples items with the languages fixed (descriptive).

    Returns:
        :class:`xcomps_utils.claims.ClaimTest`.

    Raises:
        ValueError: no language pair of the same type, or none of different types.
    """
    info = languages().set_index("iso")
    other = "resource_level" if by == "morphological_type" else "morphological_type"
    boot = bootstrap_kappas(scored, correct, unit, item, n_boot, seed)
    table, reps = boot.table, boot.replicates
    kind = info[by]
    same = (table.lang_a.map(kind) == table.lang_b.map(kind)).to_numpy()
    if same.all() or not same.any():
        raise ValueError(f"need language pairs of the same and of different {by}; the languages "
                         f"give {int(same.sum())} same and {int((~same).sum())} different")
    kappas = table["kappa"].to_numpy(float)
    langs = sorted(set(table.lang_a) | set(table.lang_b))
    pos = {l: i for i, l in enumerate(langs)}
    a = table.lang_a.map(pos).to_numpy()
    b = table.lang_b.map(pos).to_numpy()

    def stat(_, labels):
        s = labels[a] == labels[b]
        return _group_stat(kappas, np.where(s, 1.0, -1.0)) if s.any() and (~s).any() \
            else math.nan
    desc = np.array([_group_stat(k, np.where(same, 1.0, -1.0)) for k in reps])
    desc = desc[np.isfinite(desc)]
    interval = (tuple(float(x) for x in np.quantile(desc, [0.025, 0.975]))
                if len(desc) >= 0.95 * len(reps) else (math.nan, math.nan))
    name = by.replace("_", " ")
    strata = info[other].reindex(langs).rename(other.replace("_", " "))
    return language_claim(
        f"agreement_follows_{by}", f"languages of the same {name} agree more on which items "
        f"they know", f"mean kappa, same minus different {name} ({int(same.sum())} vs "
        f"{int((~same).sum())} language pairs)", pd.Series(np.zeros(len(langs)), index=langs),
        kind.reindex(langs), stat, +1, strata=strata if strata.nunique() > 1 else None,
        source=_SOURCE, scope=correct.split("_")[0],
        null_hypothesis=f"agreement between two languages does not depend on sharing a {name}",
        interval=interval, n_obs=int(table["n"].sum()),
        caveat=f"{name} is confounded with {other.replace('_', ' ')} in these languages; types "
               f"are permuted within each {other.replace('_', ' ')}.", seed=seed)
