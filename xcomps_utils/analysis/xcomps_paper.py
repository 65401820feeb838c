"""The XCOMPS paper (He et al., 2025, arXiv 2502.19737) on this run: its tables and its claims.

The analysis layer of the XCOMPS chapters: :func:`pair_table` widens a run's long measures into
one row per pair, :func:`method_tables` makes the paper's Figure 1 (language x negative type),
and the paper's claims are tests (:class:`xcomps_utils.analysis.claims.ClaimTest`, the machinery of
:mod:`xcomps_utils.analysis.claims`): :func:`english_advantage`, :func:`subtle_negatives_harder`,
:func:`morphology_trend`, :func:`resource_trend` and :func:`direct_tracks_neuro`, run together
by :func:`claim_tests`; :data:`CONTRACTS` simulates each claim's null, stated effect and trap
(:mod:`xcomps_utils.analysis.contract`, on :func:`simulate_pairs`). The pairs come from :mod:`xcomps_utils.pairs.xcomps` (the loader), the
measures from :func:`xcomps_utils.runs.execute.run`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pandas as pd

from . import claims, families
from .claims import (DEFAULT_N_BOOT, ClaimTest, bootstrap_means, evaluate_claim, finish,
                     language_claim, percentile_interval, permutation_p, slope, slopes)
from .families import SESOI
from .scored import decided_rows, scored_pairs
from ..pairs.xcomps import languages, NEGATIVE_TYPES, XCOMPS_LANGUAGES

__all__ = ["pair_table", "control_gaps", "control_probes", "method_tables", "claim_tests",
           "neuro_cells", "probe_caveat",
           "probe_verdict", "english_advantage", "english_rank", "subtle_negatives_harder", "morphology_trend",
           "resource_trend", "direct_tracks_neuro", "XCOMPS_SOURCE", "SUBTLE", "MORPH_ORDER",
           "RESOURCE_ORDER", "TRANSLATION_CAVEAT", "simulate_pairs", "CHAPTER_LANGUAGES", "CONTRACTS"]

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


def _items_gap(scored: pd.DataFrame, correct: str, item, n_boot: int = DEFAULT_N_BOOT,
               seed: int = 0, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval of English minus the others' mean accuracy with the items
    resampled and the languages fixed (a description of *these* languages, not a test)."""
    def combine(m, levels):
        return m[:, levels.index("en")] - np.nanmean(np.delete(m, levels.index("en"), axis=1),
                                                      axis=1)
    _, lo, hi, _ = bootstrap_means(decided_rows(scored, correct), correct, item, "lang", combine,
                                   n_boot=n_boot, seed=seed, confidence=confidence)
    return lo, hi


def english_advantage(scored: pd.DataFrame, correct: str = "direct_correct",
                      confidence: float = 0.95, **_) -> ClaimTest:
    """*Models do well in English and decline in other languages* (He et al. 2025, §4.3.0.1),
    as "English is above the mean of the other ``m`` languages by more than their spread allows
    a language like them".

    Effect: accuracy in English minus the mean of the other languages' accuracies (fractions of
    decided pairs). Unit: the **language**. Test: English as a single case against the ``m``
    other languages (Crawford & Howell, 1998): ``t = gap / (sd * sqrt(1 + 1/m))`` with
    ``m - 1`` degrees of freedom, ``sd`` the other languages' standard deviation; the interval
    is that test inverted (the gaps it does not reject), equivalence within ±SESOI by two
    one-sided t-tests. Why not items resampled with the languages fixed (the test before issue
    42): languages differ, so English differs from the others' mean even when it is a
    language like any other; with languages that differ by sd 0.3 logit and no English effect
    that test decided 29% of datasets. Here the between-language spread is part of the null
    (it assumes the languages' accuracies roughly normal; item noise is in each language's
    accuracy, and the part items share across languages cancels in the gap). The measure
    prints the spread beside the gap.

    Args:
        scored: one row per XCOMPS pair with ``lang`` and ``correct`` (from
            :func:`pair_table`), optionally ``<method>_decision`` or ``<method>_tie`` /
            ``<method>_near_tie``.
        **_: bootstrap settings (``n_boot``, ``seed``) the item claims take; unused here.

    Raises:
        ValueError: no English pairs, or fewer than two other languages.
    """
    from scipy.stats import t as student

    d = decided_rows(scored, correct)
    acc = d.groupby("lang")[correct].mean()
    if "en" not in acc.index or len(acc) < 3:
        raise ValueError(f"the English advantage needs English and two other languages with "
                         f"decided pairs; the run has {sorted(acc.index)}")
    others = acc.drop("en")
    m = len(others)
    gap, sd = float(acc["en"] - others.mean()), float(others.std(ddof=1))
    se, df = sd * math.sqrt(1 + 1 / m), m - 1
    margin = SESOI["accuracy"]
    ok = se > 0
    z = gap / se if ok else math.nan

    def interval_at(level):
        half = student.ppf(1 - level / 2, df) * se
        return gap - half, gap + half
    lo, hi = interval_at(1 - confidence) if ok else (math.nan, math.nan)
    t = ClaimTest(
        claim="english_advantage", hypothesis=f"accuracy is higher in English than in a "
        f"language like the other {m} (English above their mean by more than their spread "
        f"allows)", measure=f"English minus the mean accuracy of the other {m} languages "
        f"(between-language sd of theirs: {sd:.3f})", effect=gap, ci_low=lo, ci_high=hi,
        null=0.0, direction=+1, verdict="inconclusive", n_items=len(acc), unit="language",
        n_obs=len(d), source=XCOMPS_SOURCE, scope=_method(correct), confidence=confidence,
        null_hypothesis=f"English is one more language drawn like the other {m} (normal "
        f"accuracies)", test=f"English against the other {m} languages, t with {df} df "
        f"(Crawford & Howell, 1998); {claims.INVERTED}",
        p_supported=float(student.sf(z, df)) if ok else math.nan,
        p_contradicted=float(student.cdf(z, df)) if ok else math.nan, sesoi=margin,
        margin=margin, p_equivalent=float(max(student.sf((gap + margin) / se, df),
                                              student.cdf((gap - margin) / se, df)))
        if ok else math.nan, caveat=TRANSLATION_CAVEAT,
        reason="" if ok else "the other languages' accuracies do not vary: no spread to "
        "compare English with", interval_at=interval_at if ok else None)
    return finish(t, (1 - confidence) / 2)


def english_rank(scored: pd.DataFrame, correct: str = "direct_correct",
                 item: str | list[str] = "property", **kw) -> ClaimTest:
    """*Models do well in English and decline in other languages* (He et al. 2025, §4.3.0.1),
    with the **language** as the unit and no assumption on how languages spread: is English's
    accuracy above the other languages' more than a language picked at random would be?

    Effect: English's accuracy minus the mean of the others' (fraction of decided pairs), as
    :func:`english_advantage`; the test is its exact permutation over which language is English
    (each of the ``k`` languages in English's place equally likely under the null), so the p is
    English's rank from the top divided by ``k`` and the smallest p is ``1 / k``: with fewer than
    40 languages (one-sided level 0.025) no outcome can decide it, and the claim prints as a
    description. The interval beside it resamples items with the languages fixed; it does not
    decide the claim.

    Args:
        scored: as :func:`english_advantage`, with the ``item`` column.
        **kw: ``n_boot``, ``seed``, ``confidence`` (the descriptive interval).

    Raises:
        ValueError: no English pairs or no other language.
    """
    d = decided_rows(scored, correct)
    acc = d.groupby("lang")[correct].mean()
    if "en" not in acc.index or len(acc) < 2:
        raise ValueError(f"English's place needs English and another language; the run has "
                         f"{sorted(acc.index)}")
    labels = pd.Series(acc.index == "en", index=acc.index, name="is English")

    def stat(v, lab):
        en = lab.astype(bool)
        return float(v[en].mean() - v[~en].mean())
    return language_claim(
        "english_rank", "English accuracy is above the other languages' (English's place among "
        "the languages)", "English minus mean other-language accuracy", acc, labels, stat, +1,
        source=XCOMPS_SOURCE, scope=_method(correct),
        null_hypothesis="English is one of the languages like any other (each language equally "
        "likely to hold English's place)", interval=_items_gap(scored, correct, item, **kw),
        n_obs=len(d), caveat=TRANSLATION_CAVEAT, confidence=kw.get("confidence", 0.95))


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
        return np.array([slope(row, xs) for row in m])
    _, lo, hi, _ = bootstrap_means(decided_rows(scored, correct), correct, item, "lang",
                                   combine, n_boot=n_boot, seed=seed, confidence=confidence)
    strata = langs[strata_col].rename(strata_col.replace("_", " "))
    stratified = strata.nunique() > 1
    name = label_col.replace("_", " ")
    return language_claim(
        claim, hypothesis, f"slope of language accuracy per {name} step", langs["accuracy"],
        code, lambda v, l: slopes(v, l.astype(float)), direction,
        strata=strata if stratified else None, source=XCOMPS_SOURCE, scope=_method(correct),
        null_hypothesis=f"a language's accuracy does not depend on its {name}"
        + (f" within its {strata.name}" if stratified else ""),
        interval=(lo, hi), n_obs=len(scored),
        caveat=(f"{name} is confounded with {strata.name} in these languages "
                f"({', '.join(f'{l}: {a}/{b}' for l, a, b in zip(langs.index, langs[label_col], langs[strata_col]))}); "
                f"labels are permuted only within each {strata.name}, so the test asks for an "
                f"effect beyond it. The interval resamples items with the languages fixed: it "
                f"describes these languages, it does not test the claim."),
        n_perm=n_perm, seed=seed, confidence=confidence, batched=True)


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


def control_gaps(trained: pd.DataFrame, control: pd.DataFrame, n_boot: int = DEFAULT_N_BOOT,
                 seed: int = 0, confidence: float = 0.95) -> pd.DataFrame:
    """How far a trained model's Meta and Direct accuracies lie beyond its untrained control's
    (``random:<model>``: the same architecture and tokenizer, the initialiser's weights) on the
    same XCOMPS pairs: what the training added to what the architecture and tokenizer alone read.

    Args:
        trained, control: :func:`pair_table` of the two models' runs on the same pairs.

    Returns:
        one row per method both tables hold (``Meta``, ``Direct``): each model's accuracy
        (``trained``, ``control``) over the pairs it decides (``n_trained``, ``n_control``; ties
        and near ties left out, as every table), ``gap`` (trained minus control, a difference of
        accuracies), its percentile
        bootstrap interval ``ci_low``, ``ci_high`` resampling whole items (``property``: an
        item's pairs in every language, and both models' decisions on them, together), and
        ``items``.
    """
    rows = []
    for name, col in (("Meta", "meta_correct"), ("Direct", "direct_correct")):
        if col not in trained or col not in control:
            continue
        data = pd.concat([decided_rows(t, col).assign(source=s, right=lambda d: d[col].astype(
            float))[["property", "source", "right"]] for s, t in (("trained", trained),
                                                                 ("control", control))])
        if data["source"].nunique() < 2:
            continue
        est, lo, hi, n = bootstrap_means(
            data, "right", "property", "source",
            lambda m, levels: m[:, levels.index("trained")] - m[:, levels.index("control")],
            n_boot=n_boot, seed=seed, confidence=confidence)
        acc = data.groupby("source")["right"].agg(["mean", "size"])
        rows.append({"method": name, "trained": acc.at["trained", "mean"],
                     "n_trained": int(acc.at["trained", "size"]),
                     "control": acc.at["control", "mean"],
                     "n_control": int(acc.at["control", "size"]),
                     "gap": est, "ci_low": lo, "ci_high": hi, "items": n})
    return pd.DataFrame(rows)


def control_probes(trained: pd.DataFrame, control: pd.DataFrame, n_boot: int = DEFAULT_N_BOOT,
                   seed: int = 0, confidence: float = 0.95) -> pd.DataFrame:
    """A trained model's probes beside its untrained control's (the control Hewitt & Liang, 2019,
    and Voita & Titov, 2020, ask of a probe): per language, the probe over every negative type
    (``subset == "all"``) of each, its balanced accuracy at the nested layer and its permutation
    p-value, and the difference; then a row ``mean`` whose interval is a percentile bootstrap over
    the languages (the unit: one probe a language).

    Args:
        trained, control: the probe-group tables of :func:`xcomps_utils.methods.probing.probe_tables`.

    Returns:
        one row per language both hold, then ``mean``: ``trained``, ``control`` (balanced
        accuracies, chance 0.5), ``p_trained``, ``p_control``, ``gap``, ``ci_low``, ``ci_high``
        (``mean`` only), ``languages``.
    """
    cols = ["lang", "nested_balanced_accuracy", "p_permutation"]
    t, c = ([g[g["subset"] == "all"][cols].set_index("lang") for g in (trained, control)]
            if len(trained) and len(control) else (pd.DataFrame(columns=cols[1:]),) * 2)
    both = t.join(c, lsuffix="_t", rsuffix="_c", how="inner")
    out = pd.DataFrame({"trained": both["nested_balanced_accuracy_t"],
                        "control": both["nested_balanced_accuracy_c"],
                        "p_trained": both["p_permutation_t"], "p_control": both["p_permutation_c"]})
    out["gap"] = out["trained"] - out["control"]
    if len(out):
        data = out.reset_index().rename(columns={"index": "lang"})
        est, lo, hi, n = bootstrap_means(data, "gap", "lang", None, lambda m, _: m[:, 0],
                                         n_boot=n_boot, seed=seed, confidence=confidence)
        out.loc["mean"] = [out["trained"].mean(), out["control"].mean(), np.nan, np.nan, est]
        out["ci_low"], out["ci_high"] = np.nan, np.nan
        out.loc["mean", ["ci_low", "ci_high"]] = [lo, hi]
        out["languages"] = [1] * (len(out) - 1) + [n]
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
        tables["Neuro (bal. acc., nested, per type)"] = cells.pivot_table(
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
        if "en" in set(sc["lang"]) and sc["lang"].nunique() > 2:
            out.append(english_advantage(sc, col))
            out.append(english_rank(sc, col, n_boot=n_boot, seed=seed))
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
    return (families.correct(primary, "XCOMPS, primary claims (Direct)", "confirmatory")
            + families.correct(explore, "XCOMPS, Meta and second model", "exploratory"))


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


# --- the claim contract (issue 42): each claim's null, stated effect and trap, simulated -------

#: the XCOMPS chapter's seven languages (its ``languages`` parameter)
CHAPTER_LANGUAGES = ("en", "de", "fr", "zh", "vi", "tr", "hu")


def simulate_pairs(seed: int, langs=CHAPTER_LANGUAGES, n_items: int = 30, base: float = 0.75,
                   lang_sd: float = 0.3, item_sd: float = 0.8, shift=None) -> pd.DataFrame:
    """One simulated XCOMPS run scored by Direct: a row per language x item x negative type
    (``lang``, ``morphology``, ``resource_level``, ``property``, ``negative_sample_type``,
    ``direct_correct``), each pair right with probability ``logistic(logit(base) + language
    offset (sd lang_sd) + item offset (sd item_sd, alike in every language) + shift)``.

    Args:
        langs: XCOMPS language codes (their type and resource level from
            :func:`xcomps_utils.pairs.xcomps.languages`), or ``(code, morphology, resource)``.
        shift: ``(lang, morphology, resource_level, negative type) -> logit offset`` arrays of
            the rows (vectorised), or None.
    """
    table = languages().set_index("iso")
    info = [(l, table.at[l, "morphological_type"], table.at[l, "resource_level"])
            if isinstance(l, str) else tuple(l) for l in langs]
    rng = np.random.default_rng(seed)
    k, t = len(info), len(NEGATIVE_TYPES)
    lang = np.repeat([i[0] for i in info], n_items * t)
    morph = np.repeat([i[1] for i in info], n_items * t)
    res = np.repeat([i[2] for i in info], n_items * t)
    item = np.tile(np.repeat(np.arange(n_items), t), k)
    neg = np.tile(NEGATIVE_TYPES, k * n_items)
    z = (math.log(base / (1 - base)) + np.repeat(rng.normal(0, lang_sd, k), n_items * t)
         + rng.normal(0, item_sd, n_items)[item])
    if shift is not None:
        z = z + shift(lang, morph, res, neg)
    return pd.DataFrame({"lang": lang, "morphology": morph, "resource_level": res,
                         "property": [f"p{i}" for i in item], "negative_sample_type": neg,
                         "direct_correct": (rng.random(len(z)) < 1 / (1 + np.exp(-z))).astype(
                             float)})


def _english(by: float):
    return lambda lang, *_: np.where(lang == "en", by, 0.0)


def _sim_neuro_cells(seed: int, r: float = 0.0, type_effect: float = 0.0,
                     langs=CHAPTER_LANGUAGES) -> pd.DataFrame:
    """Simulated cells for :func:`direct_tracks_neuro`: per language x type, Direct accuracy
    and the probe's balanced accuracy, correlated ``r`` across languages within each type;
    ``type_effect``: what random negatives add to both (a main effect they share)."""
    rng = np.random.default_rng(seed)
    k = len(langs)
    rows = []
    for j, typ in enumerate(NEGATIVE_TYPES):
        a, b = rng.normal(size=(2, k))
        shared = type_effect if typ == "random" else 0.0
        direct = 0.7 + shared + 0.05 * a
        neuro = 0.6 + shared + 0.05 * (r * a + math.sqrt(1 - r * r) * b)
        rows += [{"lang": l, "subset": typ, "direct": x, "neuro": y}
                 for l, x, y in zip(langs, direct, neuro)]
    return pd.DataFrame(rows)


def _contracts():
    from .contract import Contract, Scenario

    n, fast = dict(n_boot=500), dict(n_boot=500, n_perm=999)
    all17 = tuple(XCOMPS_LANGUAGES)  # the paper's 17 languages (English is not among them)
    # the resource trend's exact permutation over 17 enumerates 5,544 relabelings a draw; 15
    # (Arabic and Ukrainian, two inflected, left out) 1,512: still decidable, 4 times cheaper
    all15 = tuple(l for l in all17 if l not in ("ar", "uk"))
    step = lambda col, order, by: (lambda lang, m, r, t: by * np.vectorize(  # noqa: E731
        order.get)(m if col == "m" else r).astype(float))
    # 40 languages: English's rank can reach 1/40 = 0.025 (53 and more could not be simulated
    # cheaply; 40 is the fewest that can decide)
    many = (("en", "analytic", "high"),) + tuple((f"l{i:02d}", "inflected", "medium")
                                                 for i in range(39))
    ea = lambda **k: lambda s: english_advantage(simulate_pairs(s, **k))  # noqa: E731
    return [
        Contract("english_advantage",
                 null=Scenario("English like the others; languages equal, items differ (sd 0.8 "
                               "logit)", ea(lang_sd=0.0)),
                 effect=Scenario("English +1.5 logit (about +0.2 accuracy), languages sd 0.3",
                                 ea(shift=_english(1.5))),
                 traps=(Scenario("languages that merely differ (sd 0.3 logit), no English "
                                 "effect", ea()),)),
        Contract("english_rank",
                 null=Scenario("40 languages, sd 0.3 logit, English one of them", lambda s:
                               english_rank(simulate_pairs(s, many, n_items=12), **n)),
                 effect=Scenario("40 languages, English +1.5 logit", lambda s: english_rank(
                     simulate_pairs(s, many, n_items=12, shift=_english(1.5)), **n))),
        Contract("subtle_negatives_harder",
                 null=Scenario("every negative type alike; languages sd 0.3, items sd 0.8",
                               lambda s: subtle_negatives_harder(simulate_pairs(s), **n)),
                 effect=Scenario("random negatives +0.5 logit", lambda s: subtle_negatives_harder(
                     simulate_pairs(s, shift=lambda l, m, r, t: 0.5 * (t == "random")), **n)),
                 traps=(Scenario("languages differ a lot (sd 0.8 logit), no type effect",
                                 lambda s: subtle_negatives_harder(
                                     simulate_pairs(s, lang_sd=0.8), **n)),)),
        Contract("morphology_trend",
                 null=Scenario("the paper's 17 languages, sd 0.3 logit, no morphology effect",
                               lambda s: morphology_trend(simulate_pairs(s, all17, 12), **fast)),
                 effect=Scenario("17 languages, -0.6 logit per morphological step", lambda s:
                                 morphology_trend(simulate_pairs(s, all17, 12, shift=step(
                                     "m", MORPH_ORDER, -0.6)), **fast)),
                 traps=(Scenario("17 languages, +0.6 logit per resource step (the confound), "
                                 "no morphology effect", lambda s: morphology_trend(
                                     simulate_pairs(s, all17, 12, shift=step(
                                         "r", RESOURCE_ORDER, 0.6)), **fast)),)),
        Contract("resource_trend",
                 null=Scenario("15 of the paper's languages, sd 0.3 logit, no resource effect",
                               lambda s: resource_trend(simulate_pairs(s, all15, 12), **fast)),
                 effect=Scenario("15 languages, +0.6 logit per resource step", lambda s:
                                 resource_trend(simulate_pairs(s, all15, 12, shift=step(
                                     "r", RESOURCE_ORDER, 0.6)), **fast)),
                 traps=(Scenario("15 languages, -0.6 logit per morphological step (the "
                                 "confound), no resource effect", lambda s: resource_trend(
                                     simulate_pairs(s, all15, 12, shift=step(
                                         "m", MORPH_ORDER, -0.6)), **fast)),)),
        Contract("direct_tracks_neuro",
                 null=Scenario("7 languages, Direct and probe unrelated within every type",
                               lambda s: direct_tracks_neuro(_sim_neuro_cells(s), **n)),
                 effect=Scenario("r = 0.8 across languages within each type", lambda s:
                                 direct_tracks_neuro(_sim_neuro_cells(s, 0.8), **n)),
                 traps=(Scenario("a type effect both share (random negatives +0.2 in both), "
                                 "unrelated across languages", lambda s: direct_tracks_neuro(
                                     _sim_neuro_cells(s, 0.0, 0.2), **n)),)),
    ]


#: the XCOMPS claims' contracts (:mod:`xcomps_utils.analysis.contract`)
CONTRACTS = _contracts()
