"""The grammar chapter's analysis: where a grammatical pair's difference sits, and what the
CLAMS, TurBLiMP and SLING pairs say across languages.

The pairs come from :mod:`xcomps_utils.grammar` (loaders, pivotal spans, the Hebrew article) and
:mod:`xcomps_utils.tasks`; the measures from :func:`xcomps_utils.methods.run`. Here:

* **Where the difference sits** (:func:`decompose`): a sentence-level pair is two texts that
  differ in one region, so :func:`xcomps_utils.decompose.split_pair` splits its ``Δ = log
  p(good) - log p(bad)`` exactly into the shared prefix, the **pivot** region (from the first to
  the last differing character, widened to whole words and to a token boundary both sentences
  share, and to the pivotal span when given), the shared continuation after it and a final
  period; the parts sum to ``Δ``. The pivot's share of ``Δ`` is ``delta_pivot / delta``, and the
  plain and normalized proportions of Prins et al. (2026) are computed over the aligned token
  groups (:func:`xcomps_utils.perplexity.plain_proportion`,
  :func:`~xcomps_utils.perplexity.normalized_proportion`).
* **Across languages**: accuracy per cell (:func:`accuracy_cells`), whether constructions agree
  across CLAMS languages (:func:`construction_agreement`) and whether grammar tracks concepts
  (:func:`grammar_vs_concepts`), Holm-corrected together by :func:`across_language_claims`.
* the chapter's tables: :func:`sample_pairs`, :func:`pair_table`, :func:`hebrew_join_effect`,
  :func:`language_accuracy`.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

from . import data, tasks
from .claims import correct, language_claim
from .decompose import split_pair
from .precision import decisions
from .scoring import TokenScores
from .stats import accuracy_table

__all__ = ["decompose", "pivot_summary", "accuracy_cells", "construction_agreement",
           "grammar_vs_concepts", "sample_pairs", "pair_table", "hebrew_join_effect",
           "language_accuracy", "across_language_claims"]


# --------------------------------------------------------------------------- where Δ sits

_PARTS = {"prefix": "prefix", "concept": "pivot", "property": "after", "period": "period"}


def decompose(pairs: pd.DataFrame, tokens: pd.DataFrame, bos_policy: str = "bos"
              ) -> pd.DataFrame:
    """Where each pair's ``Δ = log p(good) - log p(bad)`` sits (module docstring).

    Args:
        pairs: grammar (or BLiMP) pairs with ``task``, ``pair_id``, ``good``, ``bad`` and
            ``good_pivots``/``bad_pivots``; ``lang`` and ``subset`` are kept.
        tokens: the ``direct_tokens`` detail of a Direct run over them
            (``Results.detail("direct_tokens")``).

    Returns:
        one row per pair (identical pairs left out): ``task``, ``lang``, ``subset``,
        ``pair_id``, ``delta``; ``delta_prefix``, ``delta_pivot``, ``delta_after``,
        ``delta_period`` (nats; they sum to ``delta``); ``pivot_share`` (``delta_pivot /
        delta``, NaN when ``delta`` is 0); ``plain_pivot_s``, ``norm_pivot_s`` (proportions on
        surprisal differences of aligned groups), ``plain_pivot_ppl``, ``norm_pivot_ppl`` (on
        perplexity differences); ``pivot_good``, ``pivot_bad`` (the region's texts);
        ``n_groups``.

    Raises:
        KeyError: a sentence without scored tokens (tokens of another run?).
    """
    by_text = {t: g for t, g in tokens.drop_duplicates(["text", "position"]).groupby("text")}
    cache: dict = {}

    def scores(text):
        if text not in by_text:
            raise KeyError(f"no scored tokens for {text!r}: are the tokens from a Direct run "
                           f"over these pairs?")
        if text not in cache:
            cache[text] = TokenScores.from_table(by_text[text], text, bos_policy)
        return cache[text]

    rows = []
    for r in pairs.itertuples(index=False):
        if r.good == r.bad:
            continue
        gp = [r.good[s:e] for s, e in r.good_pivots]
        bp = [r.bad[s:e] for s, e in r.bad_pivots]
        s, _, _ = split_pair(scores(r.good), scores(r.bad), gp[0] if len(gp) == 1 else None,
                             bp[0] if len(bp) == 1 else None)
        row = {"task": r.task, "lang": getattr(r, "lang", ""), "subset": r.subset,
               "pair_id": str(r.pair_id), "delta": s["delta"]}
        for old, new in _PARTS.items():
            row[f"delta_{new}"] = s[f"delta_{old}"]
        row["pivot_share"] = s["delta_concept"] / s["delta"] if s["delta"] != 0 else np.nan
        for unit in ("s", "ppl"):
            row[f"plain_pivot_{unit}"] = s[f"plain_concept_{unit}"]
            row[f"norm_pivot_{unit}"] = s[f"norm_concept_{unit}"]
        row.update(pivot_good=s["concept_good"], pivot_bad=s["concept_bad"],
                   n_groups=s["n_groups"])
        rows.append(row)
    return pd.DataFrame(rows)


def pivot_summary(decomposed: pd.DataFrame, by=("lang",), unit: str = "s") -> pd.DataFrame:
    """Per group: pairs, mean ``delta`` and ``delta_pivot`` (nats), the pivot's share of the
    summed ``delta`` (``Σ delta_pivot / Σ delta``), and the mean plain and normalized proportions
    (``unit``: ``s`` nats, ``ppl`` perplexity)."""
    g = decomposed.groupby(list(by), sort=False)
    out = pd.DataFrame({
        "pairs": g.size(), "delta": g["delta"].mean(), "delta_pivot": g["delta_pivot"].mean(),
        "share_of_sum": g["delta_pivot"].sum() / g["delta"].sum(),
        "plain": g[f"plain_pivot_{unit}"].mean(), "normalized": g[f"norm_pivot_{unit}"].mean()})
    return out.reset_index()


# --------------------------------------------------------------------------- across languages

def accuracy_cells(scored: pd.DataFrame, by=("lang", "subset"), item: str = "item",
                   n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Direct accuracy per cell with an item-bootstrap interval, ties and near ties apart
    (:func:`xcomps_utils.stats.accuracy_table` over the ``decision`` column of
    :func:`xcomps_utils.precision.decisions`).

    Args:
        scored: one row per pair with ``direct_correct`` (and ``direct_tie``,
            ``direct_near_tie``), the ``by`` columns and ``item``.
    """
    d = scored.assign(decision=decisions(scored, "direct"), correct=scored["direct_correct"])
    return accuracy_table(d, list(by), item=item, n_boot=n_boot, seed=seed)


def _concordance(values: np.ndarray, labels: np.ndarray, langs: np.ndarray) -> float:
    """Mean Spearman correlation, over pairs of languages, of accuracy by construction (numpy:
    it runs once per permutation)."""
    cons, lang_codes = np.unique(labels.astype(str)), pd.factorize(langs)[0]
    table = np.full((len(cons), lang_codes.max() + 1), np.nan)
    table[np.searchsorted(cons, labels.astype(str)), lang_codes] = values
    ranks = pd.DataFrame(table).rank().to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (ranks - ranks.mean(0)) / ranks.std(0)
        r = (z.T @ z) / len(cons)
    iu = np.triu_indices(r.shape[0], 1)
    return float(np.nanmean(r[iu])) if np.isfinite(r[iu]).any() else float("nan")


def construction_agreement(cells: pd.DataFrame, scope: str = "", n_perm: int = 9999,
                           seed: int = 0):
    """Is a construction that is hard in one CLAMS language hard in the others?

    Effect: the mean Spearman correlation over pairs of languages of Direct accuracy across the
    constructions (cells ``lang`` × ``subset``). Null: construction labels exchangeable within
    each language (each language's accuracies shuffled over its constructions independently).
    Unit: the cell (language × construction); with 7 constructions a random permutation test
    can decide. Tested with :func:`xcomps_utils.claims.language_claim` (labels permuted within
    the language strata).

    Args:
        cells: :func:`accuracy_cells` by ``("lang", "subset")`` (CLAMS tasks only).

    Returns:
        a :class:`~xcomps_utils.claims.ClaimTest`, or None with fewer than 3 constructions or 2
        languages in every construction, or accuracies constant within every language.
    """
    c = cells.dropna(subset=["accuracy"])
    c = c[c.groupby("subset")["lang"].transform("nunique") == c["lang"].nunique()]
    idx = c["lang"] + ":" + c["subset"]
    values = pd.Series(c["accuracy"].to_numpy(), index=idx)
    labels = pd.Series(c["subset"].to_numpy(), index=idx)
    strata = pd.Series(c["lang"].to_numpy(), index=idx, name="language")
    langs = strata.to_numpy()
    if c["subset"].nunique() < 3 or c["lang"].nunique() < 2 or not np.isfinite(
            _concordance(values.to_numpy(), labels.to_numpy(), langs)):
        return None  # no correlation to test (too few cells, or constant accuracies)
    t = language_claim(
        "construction_agreement", "a construction hard in one language is hard in the others",
        "mean Spearman r over language pairs of Direct accuracy across constructions", values,
        labels, lambda v, lab: _concordance(v, lab, langs), +1, strata=strata, scope=scope,
        null_hypothesis="within each language, accuracy is unrelated to which construction it "
        "is (construction labels exchangeable within languages)", n_obs=int(c["n"].sum()),
        n_perm=n_perm, seed=seed,
        caveat="each cell's accuracy rests on few pairs: noise in the cells pulls r toward 0")
    return replace(t, unit="language × construction cell")


def grammar_vs_concepts(grammar: pd.Series, concepts: pd.Series, scope: str = "",
                        seed: int = 0):
    """Do the languages where the model knows grammar (Direct accuracy on grammar pairs) tend to
    be those where it knows concepts (Direct accuracy on XCOMPS)? Pearson r across languages,
    languages permuted (:func:`xcomps_utils.claims.language_claim`; unit: the language).

    Args:
        grammar, concepts: one accuracy per language (index: language codes); languages in both
            are used.

    Returns:
        a :class:`~xcomps_utils.claims.ClaimTest`, or None with fewer than 3 shared languages.
    """
    langs = grammar.index.intersection(concepts.index)
    if len(langs) < 3:
        return None
    g, c = grammar.loc[langs].astype(float), concepts.loc[langs].astype(float)
    return language_claim(
        "grammar_tracks_concepts", "languages where the model knows grammar are those where it "
        "knows concepts", "Pearson r across languages of grammar and XCOMPS Direct accuracy",
        g, c, lambda v, lab: float(np.corrcoef(v, lab.astype(float))[0, 1]), +1, scope=scope,
        null_hypothesis="a language's XCOMPS accuracy is unrelated to its grammar accuracy "
        "(languages exchangeable)", n_obs=len(langs), seed=seed,
        caveat="grammar and concepts come from different benchmarks, built differently in each "
        "language; the XCOMPS numbers are the project's own sample")


# --------------------------------------------------------------------------- the chapter's tables

def sample_pairs(names: list[str], n: int | None, seed: int = 0) -> pd.DataFrame:
    """``n`` seeded pairs of each task (:func:`xcomps_utils.tasks.sample`), with ``lang`` (BLiMP:
    ``en``) and ``item`` set for every row."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", data.SmallSampleWarning)
        pairs = tasks.sample(names, n, seed=seed)
    blimp = pairs["dataset"] == "blimp"
    pairs.loc[blimp, "lang"] = "en"
    pairs.loc[blimp, "item"] = pairs.loc[blimp, "task"] + ":" + pairs.loc[blimp, "pair_id"]
    return pairs

def pair_table(measures: pd.DataFrame, pairs: pd.DataFrame, method: str = "direct"
               ) -> pd.DataFrame:
    """The pairs with one ``<method>_<measure>`` column per measure of a run (long store rows
    keyed by ``task`` and ``pair_id``)."""
    m = measures[measures["method"] == method]
    wide = m.pivot_table(index=["task", "pair_id"], columns="measure", values="value",
                         aggfunc="first")
    wide.columns = [f"{method}_{c}" for c in wide.columns]
    out = pairs.assign(pair_id=pairs["pair_id"].astype(str)).merge(
        wide.reset_index(), on=["task", "pair_id"], how="inner")
    return out.assign(family=out["dataset"].map(
        {"clams": "CLAMS", "turblimp": "TurBLiMP", "sling": "SLING", "blimp": "BLiMP"}))


def hebrew_join_effect(joined: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Direct accuracy of the Hebrew pairs as published and with the article joined (decided
    pairs of both; :func:`xcomps_utils.precision.decisions`), the change, and the pairs whose
    decision flips."""
    a = published[published["lang"] == "he"].set_index(["task", "pair_id"])
    b = joined.set_index(["task", "pair_id"]).reindex(a.index)
    da, db = decisions(a, "direct"), decisions(b, "direct")
    ok = da.isin(["right", "wrong"]) & db.isin(["right", "wrong"])
    acc_a, acc_b = (da[ok] == "right").mean(), (db[ok] == "right").mean()
    return pd.DataFrame({"pairs": [int(ok.sum())], "accuracy as published": [acc_a],
                         "accuracy, article joined": [acc_b], "change": [acc_b - acc_a],
                         "decisions flipped": [int((da[ok] != db[ok]).sum())]})


def language_accuracy(scored: pd.DataFrame) -> pd.Series:
    """Mean over a language's tasks of Direct accuracy on decided pairs (each task weighs the
    same)."""
    d = scored.assign(decision=decisions(scored, "direct"))
    d = d[d["decision"].isin(["right", "wrong"])]
    return (d.assign(ok=d["decision"] == "right").groupby(["lang", "task"])["ok"].mean()
            .groupby("lang").mean())


def across_language_claims(scored: pd.DataFrame, xcomps_scored: pd.DataFrame, model: str,
                           n_boot: int = 2000, seed: int = 0) -> list:
    """The chapter's two claims across languages for one model, Holm-corrected as one family:
    :func:`construction_agreement` on the CLAMS cells of ``scored`` and
    :func:`grammar_vs_concepts` (grammar accuracy of ``scored`` per language against the Direct
    accuracy of ``xcomps_scored``, XCOMPS pairs with ``direct_*`` columns and ``lang``). Tests
    the data cannot support (too few cells or languages) are left out."""
    cells = accuracy_cells(scored[scored["dataset"] == "clams"], n_boot=n_boot, seed=seed)
    concepts = language_accuracy(xcomps_scored.assign(task=xcomps_scored.get("task", "xcomps")))
    tests = [construction_agreement(cells, scope=model, seed=seed),
             grammar_vs_concepts(language_accuracy(scored), concepts, scope=model, seed=seed)]
    return correct([t for t in tests if t is not None], f"across languages ({model})")
