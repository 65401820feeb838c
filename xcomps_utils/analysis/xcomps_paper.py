"""The XCOMPS paper (He et al., 2025, arXiv 2502.19737) on this run: its tables and its claims.

The analysis layer of the XCOMPS chapters: :func:`pair_table` widens a run's long measures into
one row per pair, :func:`method_tables` makes the paper's Figure 1 (language x negative type),
and the paper's claims are tests (:class:`xcomps_utils.analysis.claims.ClaimTest`, the machinery of
:mod:`xcomps_utils.analysis.claims`): :func:`english_advantage`, :func:`subtle_negatives_harder`,
:func:`morphology_trend`, :func:`resource_trend` and :func:`direct_tracks_neuro`, run together
by :func:`claim_tests`. The pairs come from :mod:`xcomps_utils.pairs.xcomps` (the loader), the
measures from :func:`xcomps_utils.runs.execute.run`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pandas as pd

from . import claims
from .claims import (DEFAULT_N_BOOT, SESOI, ClaimTest, bootstrap_means, evaluate_claim, finish,
                     language_claim, percentile_interval, permutation_p)
from .scored import decided_rows, scored_pairs
from ..pairs.xcomps import languages, NEGATIVE_TYPES

__all__ = ["pair_table", "method_tables", "claim_tests", "neuro_cells", "probe_caveat",
           "probe_verdict", "english_advantage", "english_rank", "subtle_negatives_harder", "morphology_trend",
           "resource_trend", "direct_tracks_neuro", "XCOMPS_SOURCE", "SUBTLE", "MORPH_ORDER",
           "RESOURCE_ORDER", "TRANSLATION_CAVEAT"]

XCOMPS_SOURCE = "He et al. (2025), XCOMPS, §4.3"
SUBTLE = ("taxonomic", "overlap", "co-occurrence")
MORPH_ORDER = {"analytic": 0, "inflected": 1, "agglutinative": 2}
RESOURCE_ORDER = {"low": 0, "medium": 1, "high": 2}
TRANSLATION_CAVEAT = ("the sample was written in English and translated, so English sentences "
                      "are the originals: an English advantage on it is confounded with "
                      "translation quality.")


# --- the paper's claims ---------------------------------------------------------------------

def _method(correct: str) -> str:
    return correct.rsplit("_correct", 1)[0] or correct


def english_advantage(scored: pd.DataFrame, correct: str = "direct_correct",
                      item: str | list[str] = "property", **kw) -> ClaimTest:
    """*Models do well in English and decline in other languages* (He et al. 2025, §4.3.0.1),
    as "English is above the mean of *these* languages, items random, languages fixed".

    Effect: accuracy in English minus the mean over the other languages' accuracies (fraction of
    decided pairs). Unit: the concept-property item, resampled in every language at once (the
    claim is about these languages' items; for English's place among languages, the language as
    the unit, see :func:`english_rank`).
    Null: English accuracy equals the others' mean. Caveat: translation (see
    :data:`TRANSLATION_CAVEAT`).

    Args:
        scored: one row per XCOMPS pair with ``lang``, the ``item`` column and ``correct`` (from
            :func:`pair_table`), optionally ``<method>_decision`` or
            ``<method>_tie`` / ``<method>_near_tie``.
        **kw: ``n_boot``, ``seed``, ``confidence`` (see :func:`xcomps_utils.analysis.claims.evaluate_claim`).

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


def english_rank(scored: pd.DataFrame, correct: str = "direct_correct",
                 item: str | list[str] = "property", items: ClaimTest | None = None,
                 **kw) -> ClaimTest:
    """*Models do well in English and decline in other languages* (He et al. 2025, §4.3.0.1),
    with the **language** as the unit: is English's accuracy above the other languages' more
    than a language picked at random would be?

    Effect: English's accuracy minus the mean of the others' (fraction of decided pairs), as
    :func:`english_advantage`; the test is its exact permutation over which language is English
    (each of the ``k`` languages in English's place equally likely under the null), so the p is
    English's rank from the top divided by ``k`` and the smallest p is ``1 / k``: with fewer than
    40 languages (one-sided level 0.025) no outcome can decide it, and the claim prints as a
    description. The interval beside it resamples items with the languages fixed
    (:func:`english_advantage`'s); it does not decide the claim.

    Args:
        scored: as :func:`english_advantage`.
        items: :func:`english_advantage` of the same data, when already computed (its interval
            is the description shown; computed here otherwise).
        **kw: ``n_boot``, ``seed``, ``confidence`` (the descriptive interval).

    Raises:
        ValueError: no English pairs or no other language.
    """
    items = items if items is not None else english_advantage(scored, correct, item, **kw)
    d = decided_rows(scored, correct)
    acc = d.groupby("lang")[correct].mean()
    labels = pd.Series(acc.index == "en", index=acc.index, name="is English")

    def stat(v, lab):
        en = lab.astype(bool)
        return float(v[en].mean() - v[~en].mean())
    return language_claim(
        "english_rank", "English accuracy is above the other languages' (English's place among "
        "the languages)", "English minus mean other-language accuracy", acc, labels, stat, +1,
        source=XCOMPS_SOURCE, scope=_method(correct),
        null_hypothesis="English is one of the languages like any other (each language equally "
        "likely to hold English's place)", interval=(items.ci_low, items.ci_high),
        n_obs=len(d), caveat=TRANSLATION_CAVEAT, confidence=items.confidence)


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
    data's columns, else :func:`xcomps_utils.pairs.xcomps.languages`)."""
    d = decided_rows(scored, correct)
    out = d.groupby("lang")[correct].mean().rename("accuracy").to_frame()
    for col, src in (("morphology", "morphological_type"), ("resource_level", "resource_level")):
        if col in scored:
            out[col] = scored.groupby("lang")[col].first()
        else:
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
    every agglutinative one is medium-resource), :func:`xcomps_utils.analysis.claims.language_claim`.
    With seven languages the smallest reachable p is above 0.025, so the verdict is "cannot be
    decided"; the item bootstrap interval is shown as a description.

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
    p_sup, p_con, smallest = permutation_p(obs, r_of(perms), exact, +1)
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


# --- tables of the XCOMPS chapter -------------------------------------------------------------

def pair_table(measures: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """The XCOMPS pairs scored: :func:`xcomps_utils.analysis.scored.scored_pairs` of the Direct and
    Meta measures (``direct_correct``, ``meta_delta``, ``<method>_decision``,
    ``direct_mean_decision``, ...), with each language's ``morphology`` and ``resource_level``
    (from :func:`xcomps_utils.pairs.xcomps.languages`).

    Args:
        measures: long results of :func:`xcomps_utils.runs.execute.run` on these pairs.
        pairs: the XCOMPS pairs (``lang``, ``pair_id``, ...).
    """
    out = scored_pairs(measures, pairs, methods=("direct", "meta"))
    table = languages().set_index("iso")
    out["morphology"] = out["lang"].map(table["morphological_type"])
    out["resource_level"] = out["lang"].map(table["resource_level"])
    return out


def method_tables(scored: pd.DataFrame, probe_groups: pd.DataFrame, langs: list[str]) -> dict:
    """Language x negative-type tables (the paper's Figure 1): Meta and Direct accuracy over the
    decided pairs (ties and near ties left out; from :func:`pair_table`), and each cell's probe
    balanced accuracy at the layer chosen by nested cross-validation (from the second table of
    :func:`xcomps_utils.methods.probing.probe_tables`; not the maximum over layers, which is biased)."""
    tables = {}
    for name, col in (("Meta", "meta_correct"), ("Direct", "direct_correct")):
        if col in scored:
            d = decided_rows(scored, col)
            tables[name] = d.pivot_table(index="lang", columns="negative_sample_type",
                                         values=col, aggfunc="mean").reindex(langs)[NEGATIVE_TYPES]
    if len(probe_groups) and "nested_balanced_accuracy" in probe_groups:
        cells = probe_groups[probe_groups["subset"] != "all"]
        tables["Neuro (balanced accuracy, nested)"] = cells.pivot_table(
            index="lang", columns="subset", values="nested_balanced_accuracy"
        ).reindex(langs).reindex(columns=NEGATIVE_TYPES)
    return tables


def claim_tests(scored: pd.DataFrame, probe_groups: pd.DataFrame | None = None,
                n_boot: int = 2000, seed: int = 0, scored_other: pd.DataFrame | None = None,
                other_model: str = "") -> list:
    """The XCOMPS paper's claims tested on one run (:mod:`xcomps_utils.analysis.claims`), in families:

    * **confirmatory** (the paper's primary claims, Direct, Holm over the family): the English
      advantage and subtle negatives being harder (items); the morphological and resource-level
      trends (languages, permutation; "cannot be decided" with too few languages); Direct
      tracking Neuro within negative types (languages), given the probe groups;
    * **exploratory** (Holm over the family): the same claims for Meta, and for Direct with a
      second model (``scored_other``, named ``other_model``).

    A claim the run cannot test (one language, one type) is left out.

    Returns:
        a list of :class:`xcomps_utils.analysis.claims.ClaimTest`, confirmatory first.
    """
    def method_tests(sc, col):
        out = []
        if col not in sc or sc[col].isna().all():
            return out
        if "en" in set(sc["lang"]) and sc["lang"].nunique() > 1:
            out.append(english_advantage(sc, col, n_boot=n_boot, seed=seed))
            out.append(english_rank(sc, col, items=out[-1]))
        out.append(subtle_negatives_harder(sc, col, n_boot=n_boot, seed=seed))
        for fn in (morphology_trend, resource_trend):
            try:
                out.append(fn(sc, col, n_boot=n_boot, seed=seed))
            except ValueError:  # one type only in this run
                pass
        return out

    primary = method_tests(scored, "direct_correct")
    if probe_groups is not None and len(probe_groups) and "direct_correct" in scored:
        cells = neuro_cells(scored, probe_groups)
        try:
            primary.append(direct_tracks_neuro(cells, n_boot=n_boot, seed=seed,
                                               probe_caveat=probe_caveat(probe_groups)))
        except ValueError:  # fewer than 3 languages with every cell (a probe group failed)
            pass
    explore = method_tests(scored, "meta_correct")
    if scored_other is not None:
        explore += [replace(t, scope=f"{t.scope}, {other_model}")
                    for t in method_tests(scored_other, "direct_correct")]
    return (claims.correct(primary, "XCOMPS, primary claims (Direct)", "confirmatory")
            + claims.correct(explore, "XCOMPS, Meta and second model", "exploratory"))


def neuro_cells(scored: pd.DataFrame, probe_groups: pd.DataFrame) -> pd.DataFrame:
    """Direct accuracy (decided pairs) and the probe's nested balanced accuracy per language x
    negative-type cell: columns ``lang``, ``subset``, ``direct``, ``neuro``."""
    d = decided_rows(scored, "direct_correct")
    direct = d.groupby(["lang", "negative_sample_type"])["direct_correct"].mean()
    cells = probe_groups[probe_groups["subset"] != "all"][
        ["lang", "subset", "nested_balanced_accuracy"]].rename(
        columns={"nested_balanced_accuracy": "neuro"})
    cells["direct"] = direct.reindex(list(zip(cells["lang"], cells["subset"]))).to_numpy()
    return cells.dropna().reset_index(drop=True)


#: one-sided level of the probe's joint permutation test (and of a language's decision)
PROBE_LEVEL = 0.025


def _probe_nulls(probe_groups: pd.DataFrame, langs: list[str] | None = None) -> pd.DataFrame:
    """The probes over all negative types that carry the joint null (one row per language, in
    ``langs`` order when given)."""
    g = probe_groups[probe_groups["subset"] == "all"].set_index("lang")
    if langs is not None:
        g = g.reindex(langs)
    if "p_adjusted" not in g:
        return g.iloc[:0]
    return g.dropna(subset=["nested_balanced_accuracy", "p_adjusted"])


def probe_caveat(probe_groups: pd.DataFrame) -> str:
    """What the probes' joint permutation null says, as a sentence for a claim built on the
    probe ("" when the groups carry no joint null, :func:`xcomps_utils.methods.neuro.probes`)."""
    g = _probe_nulls(probe_groups)
    if not len(g):
        return ""
    n_perm = int(g["n_permutations"].max())
    if 1 / (n_perm + 1) > PROBE_LEVEL:
        return (f"with {n_perm} permutations no probe can be told from its label-permutation "
                f"null at one-sided {PROBE_LEVEL}: the probe side of this correlation is "
                f"undecided.")
    beyond = int((g["p_adjusted"] <= PROBE_LEVEL).sum())
    text = (f"the probe of all types is beyond its label-permutation null in {beyond} of "
            f"{len(g)} languages (joint test over languages, max-T corrected, one-sided "
            f"{PROBE_LEVEL}, {n_perm} permutations)")
    if beyond < len(g):
        text += ("; in the others this run cannot tell the probe from shuffled labels, and "
                 "their part of the correlation with Direct may be noise")
    return text + "."


def probe_verdict(probe_groups: pd.DataFrame, langs: list[str]) -> str:
    """One Markdown paragraph on the probes over all negative types against their joint
    label-permutation null.

    The test (:func:`xcomps_utils.methods.probing.joint_permutation_test`, computed by
    :func:`xcomps_utils.methods.neuro.probes`): in each of ``B`` draws the labels are permuted within
    items, independently in every language, and the whole nested procedure reruns; the
    statistic is the largest standardised excess of a language's nested balanced accuracy over
    its draws (max-T). The hypothesis *in at least one language the probe finds acceptability
    beyond shuffled labels* is supported when the pooled p is at most :data:`PROBE_LEVEL`
    (one-sided); a language is beyond its null when its max-T adjusted p is (family-wise error
    over the languages controlled). With ``1 / (B + 1) > PROBE_LEVEL`` no outcome could be
    decided, and the paragraph says so instead of a verdict. Languages not decided are named as
    undecided, not as at chance.
    """
    g = _probe_nulls(probe_groups, langs)
    if not len(g):
        return ""
    n_perm = int(g["n_permutations"].max())
    pooled, k = float(g["p_pooled"].iloc[0]), int(g["n_pooled"].iloc[0])
    head = (f"**The probe against its null.** In each of {n_perm} draws the labels were "
            f"shuffled within items, independently in each of the {k} languages, and the whole "
            f"nested procedure (layer choice included) was rerun; one test over the languages "
            f"(the largest standardised excess of a language's nested balanced accuracy over "
            f"its draws, max-T; one-sided level {PROBE_LEVEL}) asks whether *in at least one "
            f"language the probe finds acceptability beyond shuffled labels*. ")
    if 1 / (n_perm + 1) > PROBE_LEVEL:
        return head + (f"With {n_perm} draws the smallest p is {1 / (n_perm + 1):.3f}: this "
                       f"**cannot be decided** at this resolution, whatever the scores.")
    verdict = "supported" if pooled <= PROBE_LEVEL else "inconclusive at this sample size"
    text = head + f"It is **{verdict}** (pooled p = {pooled:.3g}). "
    row = "{} ({:.2f} against a null mean of {:.2f}, adjusted p {:.3f})"
    cells = [(lang, row.format(lang, b, m, q), q <= PROBE_LEVEL) for lang, b, m, q in zip(
        g.index, g["nested_balanced_accuracy"], g["null_nested_mean"], g["p_adjusted"])]
    beyond = [c for _, c, d in cells if d]
    rest = [c for _, c, d in cells if not d]
    if beyond:
        text += (f"Beyond its null after the correction over the languages: "
                 f"{', '.join(beyond)}. ")
    if rest:
        text += (f"Not told apart from shuffled labels by this run: {', '.join(rest)}; that "
                 f"is no evidence that these probes are at chance, only that these items do "
                 f"not show more (their layer curves and their part of the correlation with "
                 f"Direct below are not shown to be signal).")
    return text
