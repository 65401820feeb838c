"""BMLAMA scored by the methods, for the BMLAMA chapter: whole facts sampled, Direct on them and
on their control frames, Meta and Neuro one score a language, what a size costs and decides.

The chapter's run call is passed in (``run(model, pairs, methods, **settings)``: the runner of
:func:`xcomps_utils.pages.chapters.open`), so this module reads no store itself; the tables and
claims over the scores are :mod:`xcomps_utils.analysis.bmlama_study`'s.

* :func:`score`: ``facts`` whole facts a language of BMLAMA-17 or -53 and their control pairs,
  Direct on both for every model (:class:`Scores`);
* :func:`method_scores`: Meta and Neuro on the same facts, one score a language;
* :func:`cost`: what the runs cost where they were computed, and what another size would;
* :func:`size_summary`, :func:`morphology_to_decide`: what this size decides, and what would.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from . import bmlama_study
from .families import SESOI
from .report import MOST_LANGUAGES
from .stats import accuracy_table
from .xcomps_paper import pair_table

__all__ = ["Scores", "sample_facts", "score", "control_gaps", "cost", "method_pairs",
           "method_scores", "size_summary", "morphology_to_decide"]


@dataclass
class Scores:
    """One BMLAMA benchmark scored by Direct (:func:`score`).

    Attributes:
        pairs, control: the sampled pairs and their control pairs (``[n, BMLAMA_COLUMNS]``).
        scored, scored_control: model -> :func:`xcomps_utils.analysis.bmlama_study.scored_pairs` of
            each.
        results, control_results: model -> the :class:`xcomps_utils.runs.execute.Results` of the
            real pairs' run and of the control's.
    """

    pairs: pd.DataFrame
    control: pd.DataFrame
    scored: dict = field(default_factory=dict)
    scored_control: dict = field(default_factory=dict)
    results: dict = field(default_factory=dict)
    control_results: dict = field(default_factory=dict)


def sample_facts(benchmark: str, languages, facts: int, seed: int = 0
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``facts`` whole facts a language of ``benchmark`` (``bmlama17``, ``bmlama53``), in the
    seeded fact order (so fewer facts are the first of more): ``(pairs, control pairs)``, each as
    :func:`xcomps_utils.pairs.tasks.sample` of its tasks gives them. A language's two tasks are
    sampled one after the other (the control task reuses the pairs the real one loaded)."""
    from ..pairs import tasks

    frames: dict[str, list] = {benchmark: [], f"{benchmark}_control": []}
    for lang in languages:
        for family, got in frames.items():
            got.append(tasks.sample([f"{family}:{lang}"], 9 * facts, seed))
    return tuple(pd.concat(f, ignore_index=True) for f in frames.values())


def _first_facts(pairs: pd.DataFrame, facts: int, seed: int = 0) -> pd.DataFrame:
    """The first ``facts`` facts of each task of a :func:`sample_facts` sample: the pairs a
    ``facts``-fact sample gives (each fact's place in the order, and its pairs, are the whole
    file's), taken from the sample instead of the files."""
    from ..pairs import data, tasks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", data.SmallSampleWarning)  # fewer facts: all of them
        return pd.concat([tasks.sample_units(g, 9 * facts, seed, "item")
                          for _, g in pairs.groupby("task", sort=False)], ignore_index=True)


def score(run: Callable, models: list[str], benchmark: str, languages: list[str], facts: int,
          seed: int = 0) -> Scores:
    """Sample ``facts`` whole facts a language of ``benchmark`` (``bmlama17``/``bmlama53``; the
    same facts in every language; as ``n_pairs = 9 * facts`` of the sweep files), their control
    pairs (task ``<benchmark>_control:<lang>``), and run Direct on both for every model through
    the chapter's runner (``run(model, pairs, method)``, :func:`xcomps_utils.pages.chapters.open`;
    a run the store holds is read).

    Raises:
        DataError: an unknown language of the benchmark.
    """
    pairs, control = sample_facts(benchmark, languages, facts, seed)
    out = Scores(pairs, control)
    for model in models:
        res = run(model, pairs, "direct")
        out.results[model] = res
        out.scored[model] = bmlama_study.scored_pairs(res.measures, pairs)
        out.control_results[model] = run(model, control, "direct")
        out.scored_control[model] = bmlama_study.scored_pairs(
            out.control_results[model].measures, control)
    return out


def control_gaps(run: Callable, tables: dict, languages: dict, facts: dict, reduction: str = "mean",
                 value: str = "pairwise_beyond", n_boot: int = 2000,
                 seed: int = 0) -> dict[tuple[str, str], pd.DataFrame]:
    """Each model beside its untrained control ``random:<model>`` on the same facts and control
    frames (:func:`score` of the controls, then
    :func:`xcomps_utils.analysis.bmlama_study.control_gaps`).

    Args:
        tables: ``{benchmark: {model: language_table}}``, the trained models' (the chapter's).
        languages, facts: ``{benchmark: ...}``, as :func:`score` was given them.

    Returns:
        ``{(benchmark, model): control_gaps table}`` (a ``mean`` row last; gaps in ``value``'s
        unit, a difference of accuracies).
    """
    out = {}
    for b, by_model in tables.items():
        ctl = score(run, [f"random:{m}" for m in by_model], b, languages[b], facts[b], seed)
        for m, table in by_model.items():
            real, frame = (f[~f["distractor_true"].astype(bool)] for f in (
                ctl.scored[f"random:{m}"], ctl.scored_control[f"random:{m}"]))
            out[b, m] = bmlama_study.control_gaps(
                table, bmlama_study.language_table(real, frame, reduction, n_boot=n_boot,
                                                   seed=seed), value, n_boot=n_boot, seed=seed)
    return out


def cost(scores: dict[str, Scores], facts_at: dict[str, int]) -> pd.DataFrame:
    """What the BMLAMA runs cost where they were computed, and what another size would: per
    benchmark and model, the pairs (real + control), the compute seconds the store recorded,
    pairs per second, and the minutes ``facts_at[benchmark]`` facts a language would take at
    that rate (9 pairs a fact, real and control).

    Args:
        scores: benchmark -> :func:`score`.

    Returns:
        one row per benchmark x model (seconds NaN where a run did not record them).
    """
    rows = []
    for b, s in scores.items():
        n_lang = s.pairs["lang"].nunique()
        for model, res in s.results.items():
            secs = [*res.compute_seconds().values(),
                    *s.control_results[model].compute_seconds().values()]
            sec = float("nan") if None in secs else float(sum(secs))
            n = len(s.pairs) + len(s.control)
            rate = n / sec if sec > 0 else float("nan")
            rows.append({"benchmark": b, "model": model, "languages": n_lang, "pairs": n,
                         "compute_s": sec, "pairs_per_s": rate,
                         "facts_at": facts_at[b],
                         "minutes_at": 2 * 9 * facts_at[b] * n_lang / rate / 60})
    return pd.DataFrame(rows)


def method_pairs(pairs: pd.DataFrame, facts: int | None = None, seed: int = 0) -> pd.DataFrame:
    """The pairs :func:`method_scores` runs Meta and Neuro on: ``pairs`` (:func:`score`'s), or
    the first ``facts`` facts of each language of them (:func:`_first_facts`) where that is
    fewer."""
    if facts is not None:
        first = _first_facts(pairs, facts, seed)
        if len(first) < len(pairs):
            return first
    return pairs


def method_scores(run: Callable, model: str, pairs: pd.DataFrame, methods=("meta", "neuro"),
                  facts: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Meta and Neuro on BMLAMA pairs (:func:`score`'s ``pairs``), one score a language,
    for the claims that Direct tracks them across languages.

    ``facts`` keeps the first ``facts`` facts of each language in the seeded order
    :func:`score` sampled them in (the same ``seed``): a subset of the same facts, since
    whole facts are taken in one order (:func:`xcomps_utils.pairs.tasks.sample`); ``None`` keeps
    every pair.

    Meta: accuracy over the decided pairs whose distractor is not also true (the gold's answer
    above the distractor's, each averaged over the two candidate orders of the question), with a
    95% interval resampling facts and the decided pairs. Neuro: the probe's nested balanced
    accuracy over a language's sentences (one probe a language, ``probe_by=[["lang"]]``; folds
    keep each prompt whole; chance 0.5), its p against its own permutation draws adjusted over
    the languages (max-T), and the sentences probed.

    Returns:
        one row per language: ``meta``, ``meta_low``, ``meta_high``, ``meta_pairs``, ``neuro``,
        ``neuro_p_adjusted``, ``neuro_sentences`` (those of the methods run).

    Raises:
        ValueError: Meta on a language without a template (names those with one).
    """
    from ..methods import probing

    pairs = method_pairs(pairs, facts, seed)
    res = run(model, pairs, list(methods), probe_by=[["lang"]])
    out = pd.DataFrame(index=pd.Index(sorted(pairs["lang"].unique()), name="lang"))
    if "meta" in methods:
        scored = pair_table(res.measures, pairs)
        scored = scored[~scored["distractor_true"].astype(bool)]
        acc = accuracy_table(scored.assign(correct=scored["meta_correct"],
                                           decision=scored["meta_decision"]), by="lang",
                             item="fact").set_index("lang")
        out = out.join(acc[["accuracy", "ci_low", "ci_high", "decided"]].rename(columns={
            "accuracy": "meta", "ci_low": "meta_low", "ci_high": "meta_high",
            "decided": "meta_pairs"}))
    if "neuro" in methods:
        groups = probing.probe_tables(res.wide("neuro"))[1]
        cols = {"nested_balanced_accuracy": "neuro", "p_adjusted": "neuro_p_adjusted",
                "n_sentences": "neuro_sentences"}
        if {"lang", *cols} <= set(groups):   # else no probe: too few sentences
            out = out.join(groups.set_index("lang")[list(cols)].rename(columns=cols))
        else:
            out["neuro"] = float("nan")
    return out


def size_summary(power: pd.DataFrame, cost: pd.DataFrame,
                 morphology: tuple[int, int] | None = None) -> str:
    """One sentence per benchmark and model saying what this size can decide and what the
    deciding size costs, read from :func:`xcomps_utils.analysis.bmlama_study.power_table` (with a
    ``benchmark`` column) and :func:`cost` (at the facts needed); with ``morphology``
    (:func:`morphology_to_decide`), a last one on deciding the morphology trend.

    Returns:
        Markdown, a bullet per row of ``power``.
    """
    out = []
    for _, r in power.iterrows():
        c = cost[(cost.benchmark == r.benchmark) & (cost.model == r.model)]
        minutes = float(c.minutes_at.iloc[0]) if len(c) else float("nan")
        spread = ("within their sampling noise: a single language's place among the others is "
                  "mostly its sample's at this size (a trend over many languages pools that "
                  "noise and can still be decided)" if r.between_sd == 0 else
                  f"beyond their sampling noise (spread {r.between_sd:.3f} once the noise is "
                  f"removed)")
        out.append(
            f"* **{r.benchmark}, {r.model}**: at {r.facts_now} facts a language the languages' "
            f"accuracies beyond the control differ by a standard deviation of "
            f"{r.observed_sd:.3f}, with a standard error of {r.mean_se:.3f} each: {spread}. "
            f"Planned for a spread of {r.planned_sd:.3f}, the deciding size is "
            f"**{r.facts_needed} facts a language**, where a resource trend of "
            f"{r.mde_resource_slope:.3f} per tier step is detected with 80% power across "
            f"{r.languages} languages; at this run's rate that is about {minutes:.0f} minutes "
            f"of compute for this model."
            + (f" At this run's {r.facts_now} facts the trend detected with 80% power is "
               f"{r.mde_resource_slope_now:.3f} per tier step: a smaller one is left "
               f"inconclusive, not ruled out." if r.facts_now < r.facts_needed
               else "")
            + (f" No number of facts goes below {r.mde_resource_slope_limit:.3f}: with every "
               f"language's error gone, {r.languages} languages detect no smaller trend with 80% "
               f"power." if "mde_resource_slope_limit" in r else "")
            + (_deciding_trend(r) if "languages_to_decide_slope" in r else ""))
    if "languages_to_decide_correlation" in power and len(power):
        k = int(power["languages_to_decide_correlation"].iloc[0])
        most = MOST_LANGUAGES
        out.append(f"* **Direct ~ Neuro and Direct ~ Meta** (a correlation across languages): "
                   f"deciding one of r = 0.3 either way (found, or a smaller one shown "
                   f"equivalent) with an 80% chance would take about {k:,} languages measured "
                   f"without error"
                   + (f"; no benchmark here has more than {most}: no size of these data decides "
                      f"it." if k > most else "."))
    if morphology is not None:
        k, n_index = morphology
        most = MOST_LANGUAGES
        out.append(f"* **The morphology trend over the Grambank index** (BMLAMA-53, {n_index} "
                   f"languages with a value): deciding one of 0.10 from the index's one end to "
                   f"the other either way (found, or a smaller one shown equivalent) with an 80% "
                   f"chance would take about {k:,} languages measured without error, spread "
                   f"over the index as these are (a plain permutation; the page's, within "
                   f"families, needs more)"
                   + (f"; no benchmark here has more than {most}: no size of these data decides "
                      f"it." if k > min(most, n_index) else "."))
    return "\n".join(out)


def morphology_to_decide(index: pd.Series) -> tuple[int, int]:
    """How many languages would decide the morphology trend either way at the book's smallest
    trend over a [0, 1] label (``SESOI["span"]``, 0.10 from end to end), spread over the label as
    ``index`` is (the Grambank share of bound inflection of BMLAMA-53's languages) and around
    the trend by the least spread the BMLAMA page plans for (0.05), each measured without error
    (:func:`xcomps_utils.analysis.bmlama_study.languages_to_decide`).

    Returns:
        ``(languages, languages with a value in index)``.
    """
    index = pd.to_numeric(index, errors="coerce").dropna()
    k = bmlama_study.languages_to_decide(SESOI["span"], SESOI["accuracy"],
                                         x=index.to_numpy(float))
    return k, len(index)


def _deciding_trend(r) -> str:
    """The sentence of :func:`size_summary` on deciding a resource trend either way."""
    k, most = int(r.languages_to_decide_slope), MOST_LANGUAGES
    head = (f" Deciding the trend either way (one of 0.05 per tier step found, a smaller one "
            f"shown equivalent) with an 80% chance would take about {k:,} languages measured "
            f"without error")
    if k > most:
        return head + f"; no benchmark here has more than {most}: no size of these data does."
    f = r.get("facts_to_decide_slope", math.inf)
    return head + (f"; {r.languages} languages would do it at about {int(f):,} facts a "
                   f"language (the resource trend's test has the equivalence branch at ±0.05)."
                   if np.isfinite(f) else
                   f"; {r.languages} languages are too few at any number of facts.")
