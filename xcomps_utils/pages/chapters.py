"""What the book's chapters share: the one-line run call, the sample notice, and the few tables
two pages (or two cells of a page) would otherwise copy.

A chapter types its run settings once::

    run = chapters.runner(store=store, device=device, dtype=dtype, token_budget=token_budget,
                          seed=seed)
    res = run(model, pairs, "direct")
    conv = run(model, conv_pairs, "direct", bos_policy="lm_eval")  # one setting changed

Analysis (tables and claims of a paper) lives in the per-paper modules; this module only wires
them to a page.
"""

from __future__ import annotations

import inspect
import math
import warnings
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pandas as pd

from ..analysis.claims import MOST_LANGUAGES
from ..errors import did_you_mean
from ..runs import execute as _methods

__all__ = ["Runner", "runner", "xcomps_languages", "wording_ids", "sample_notice", "percent_style", "paired_model_difference",
           "probe_baselines", "XcompsSplit", "xcomps_split", "prior_shares", "BmlamaScores", "bmlama_scores", "bmlama_cost", "bmlama_methods", "bmlama_size_summary",
           "bmlama_morphology_to_decide"]


def _run_settings() -> tuple[str, ...]:
    """The keyword-only parameters of :func:`xcomps_utils.runs.execute.run`: what a runner may fix."""
    sig = inspect.signature(_methods.run)
    return tuple(n for n, p in sig.parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY)


_SETTINGS = _run_settings()


def _check_settings(settings: dict, where: str) -> None:
    allowed = _SETTINGS
    for name in settings:
        if name not in allowed:
            near = did_you_mean(name, allowed)
            hint = f"; {near}" if near else ""
            raise TypeError(f"{where}: {name!r} is not a setting of methods.run (allowed: "
                            f"{', '.join(allowed)}){hint}")


@dataclass(frozen=True)
class Runner:
    """:func:`xcomps_utils.runs.execute.run` with a chapter's settings fixed (see :func:`runner`).

    Attributes:
        settings: the fixed keyword arguments of ``methods.run`` (read-only).
    """

    settings: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    def __call__(self, model, pairs: pd.DataFrame, methods="direct", **overrides):
        """``methods.run(model, pairs, methods, **settings, **overrides)``.

        Args:
            model: an embedded model name, local folder, Hugging Face id or loaded model.
            pairs: minimal pairs (see :func:`xcomps_utils.runs.execute.run`).
            methods: a method name or a list of them (default ``"direct"``).
            overrides: settings for this call only (e.g. ``bos_policy="lm_eval"``); they win
                over the fixed ones.

        Returns:
            :class:`xcomps_utils.runs.execute.Results`; a run the store already holds is read.

        Raises:
            TypeError: an override that is not a setting of ``methods.run`` (names the allowed
                ones and the nearest).
            Whatever ``methods.run`` raises (unknown method, model, device, bad pairs...).
        """
        _check_settings(overrides, "run(...)")
        return _methods.run(model, pairs, methods, **{**self.settings, **overrides})


def runner(**settings) -> Runner:
    """A chapter's run call with its settings typed once.

    Args:
        settings: any keyword-only settings of :func:`xcomps_utils.runs.execute.run` (``store``,
            ``device``, ``dtype``, ``token_budget``, ``bos_policy``, ``seed``, ``progress``...).
            Settings a method does not use are not part of its run key (``seed`` only keys Neuro,
            ``bos_policy`` only Direct), so fixing them for every call changes no run id.

    Returns:
        :class:`Runner`: call it as ``run(model, pairs, methods, **overrides)``.

    Raises:
        TypeError: a name that is not a setting of ``methods.run``, with the allowed names and
            the nearest one (e.g. ``storе`` or the removed ``datasets``).
    """
    _check_settings(settings, "chapters.runner")
    return Runner(MappingProxyType(dict(settings)))


_NOTICE = {
    "results": ":::{important}\nThese results come from the project's **own sample** (30 items × "
               "4 negative types in 7 languages, written for this book), scored with small models. "
               "They are **not comparable with the paper's**. For the real data, re-run with "
               "`-p source upstream` (and all 17 languages in `languages`).\n:::",
    "dataset": ":::{important}\nThis build uses the project's **own sample**, not XCOMPS: 30 "
               "concept–property items × 4 negative types, written in English and translated into "
               "six languages for this book. Its numbers are **not comparable with the paper's**. "
               "To use the real data run the chapters with `-p source upstream` (needs internet "
               "once; each file is checked against its pinned git blob id) and, for all 17 "
               "languages, `-y '{languages: [ar, ca, ...]}'`.\n:::",
}


def xcomps_languages(source: str) -> tuple[list[str], str]:
    """The XCOMPS languages a source has, and the words for a message (for
    the check of a chapter's ``languages`` in :mod:`xcomps_utils.pages.params`)."""
    from ..pairs.xcomps import SAMPLE_LANGUAGES, XCOMPS_LANGUAGES

    langs = SAMPLE_LANGUAGES if source == "sample" else ["en", *XCOMPS_LANGUAGES]
    return list(langs), f"the languages of XCOMPS' {source} files"


def wording_ids(task: str) -> tuple[list[str], str]:
    """The ids of the token-level perplexity wordings of a task's family, and the words for a
    message (for the check of a chapter's ``wording`` in :mod:`xcomps_utils.pages.params`).

    Raises:
        DataError: an unknown task (as :func:`xcomps_utils.pairs.tasks.get`).
    """
    from ..methods.perplexity import load_wordings
    from ..pairs.tasks import get

    family = get(task).wordings
    return [w["id"] for w in load_wordings(family)], f"the wordings of {family!r}"


def sample_notice(source: str, page: str = "results") -> str:
    """The MyST admonition an XCOMPS page shows when it reads the project's own sample.

    Args:
        source: the chapter's ``source`` parameter (``"sample"`` or ``"upstream"``).
        page: ``"results"`` (a page that scores models) or ``"dataset"`` (the dataset page).

    Returns:
        Markdown text; empty for ``source="upstream"``.

    Raises:
        ValueError: an unknown ``page``.
    """
    if page not in _NOTICE:
        raise ValueError(f"page must be one of {list(_NOTICE)}, got {page!r}")
    return _NOTICE[page] if source == "sample" else ""


def percent_style(table: pd.DataFrame, columns=("accuracy", "ci_low", "ci_high")):
    """An accuracy table (:func:`xcomps_utils.analysis.stats.accuracy_table`) with ``columns`` shown as
    percentages (one decimal) and no index: a pandas ``Styler`` to display."""
    present = [c for c in columns if c in table]
    return table.style.format({c: "{:.1%}" for c in present}).hide(axis="index")


def paired_model_difference(scored: pd.DataFrame, other: pd.DataFrame, model: str,
                            other_model: str, n_boot: int | None = None, seed: int = 0
                            ) -> pd.DataFrame:
    """Two models' Direct accuracy on the same pairs, and its paired difference per task.

    A pair counts when both models decide it (ties and near ties of either left out); the
    difference ``other - model`` in accuracy (fraction of pairs) has a 95% percentile bootstrap
    interval that resamples pairs (:func:`xcomps_utils.analysis.claims.bootstrap_means`, ``n_boot``
    replicates; ``None``: its default).

    Args:
        scored: ``Results.wide("direct")`` of ``model`` (``task``, ``pair_id``, ``correct``, and
            ``tie``/``near_tie`` when present).
        other: the same for ``other_model``, on some or all of the same pairs.

    Returns:
        one row per task (index ``task``): pairs decided by both, each model's accuracy, the
        difference and its interval as text, rounded to 3 decimals.
    """
    from ..analysis.claims import DEFAULT_N_BOOT, bootstrap_means

    n_boot = DEFAULT_N_BOOT if n_boot is None else n_boot
    two = scored.merge(other, on=["task", "pair_id"], suffixes=("", "_2"))
    rows = []
    for task, g in two.groupby("task", sort=False):
        flags = [c for c in ("tie", "near_tie", "tie_2", "near_tie_2") if c in g]
        g = g[~g[flags].fillna(0).astype(bool).any(axis=1)]
        g = g.assign(diff=g["correct_2"].astype(float) - g["correct"].astype(float))
        est, lo, hi, n = bootstrap_means(g, "diff", "pair_id", None, lambda m, _: m[:, 0],
                                         n_boot=n_boot, seed=seed)
        rows.append({"task": task, "pairs decided by both": n, model: g["correct"].mean(),
                     other_model: g["correct_2"].mean(), "difference": est,
                     "95% CI": f"[{lo:.3f}, {hi:.3f}]"})
    return pd.DataFrame(rows).set_index("task").round(3)


def probe_baselines(by_layer: pd.DataFrame, groups: pd.DataFrame, languages: list[str]
                    ) -> pd.DataFrame:
    """The XCOMPS chapter's Neuro table: each language's probe (probe group ``subset == "all"``)
    beside its baselines, one row per language in ``languages`` order, rounded to 2 decimals.

    Args:
        by_layer, groups: the two tables of :func:`xcomps_utils.methods.probing.probe_tables`.

    Returns:
        sentences, folds and leaks, F1 (majority baseline, max over layers, nested), balanced
        accuracy (max over layers, nested, embedding layer), the permutation null's best-layer
        95th percentile (context), the nested score's p against its own permutation draws and
        corrected over languages (max-T), MCC and the layers nested cross-validation chose.
    """
    g = groups[groups.subset == "all"].set_index("lang")
    best = by_layer[by_layer.subset == "all"].groupby("lang")[["f1", "balanced_accuracy"]].max()
    return pd.DataFrame({
        "sentences": g.n_sentences.astype(int), "acceptable": g.n_acceptable.astype(int),
        "folds": "items whole, concepts apart",
        "training sentences purged": g.purged.astype(int),
        "leaked items / concepts": [f"{int(a)} / {int(b)}"
                                    for a, b in zip(g.leaked_items, g.leaked_concepts)],
        "F1, always 'acceptable'": g.majority_f1,
        "F1, max over layers (biased)": best.f1,
        "F1, nested": g.nested_f1,
        "balanced acc., max over layers (biased)": best.balanced_accuracy,
        "balanced acc., nested (all types)": g.nested_balanced_accuracy,
        "balanced acc., embeddings (layer 0)": g.layer0_balanced_accuracy,
        "null, best layer 95th pct. (per-layer context)": g.null_max_q95,
        "p vs permutation null": g.p_permutation,
        "p, corrected over languages": g.p_adjusted,
        "MCC, nested": g.nested_mcc,
        "layers chosen": [f"{int(a)}–{int(b)}"
                          for a, b in zip(g.nested_layer_min, g.nested_layer_max)],
    }).reindex(languages).round(2)


@dataclass(frozen=True)
class XcompsSplit:
    """XCOMPS pairs' Direct difference split over concept and property tokens.

    Attributes:
        tokens: one row per token (:attr:`xcomps_utils.analysis.decompose.Decomposition.tokens`).
        pairs: one row per pair: the decomposition's columns (``delta_concept``,
            ``cond_correct``...) with the run's own decision (``direct_decision``,
            ``direct_near_tie_tolerance``), so Direct's accuracy is the XCOMPS chapter's.
        bos_policy: the first-token convention of the run the split was read from.
    """

    tokens: pd.DataFrame
    pairs: pd.DataFrame
    bos_policy: str


def xcomps_split(pairs: pd.DataFrame, res) -> XcompsSplit:
    """Split a Direct run's pairs over concept, property, period and prefix tokens
    (:func:`xcomps_utils.analysis.decompose.decompose_pairs`), read from its token table.

    Args:
        pairs: XCOMPS pairs (:func:`xcomps_utils.pairs.xcomps.load_languages`).
        res: :class:`xcomps_utils.runs.execute.Results` of a Direct run on those pairs.

    Raises:
        KeyError: ``res`` holds no Direct run.
    """
    from ..analysis import decompose
    from ..analysis.xcomps_paper import pair_table

    bos_policy = res.provenance("direct")["key"]["bos_policy"]
    dec = decompose.decompose_pairs(pairs, res.detail("direct_tokens"), bos_policy=bos_policy)
    decisions = pair_table(res.measures, pairs)[["lang", "pair_id", "direct_decision",
                                                 "direct_near_tie_tolerance"]]
    d = dec.pairs.merge(decisions, on=["lang", "pair_id"], how="left")
    return XcompsSplit(dec.tokens, d, bos_policy)


def prior_shares(d: pd.DataFrame, languages: list[str], n_boot: int, seed: int = 0
                 ) -> pd.DataFrame:
    """:func:`xcomps_utils.analysis.concept_prior.prior_share` per language (``languages`` order) and pooled
    (the last row, index ``"all"``), with item-bootstrap intervals."""
    from ..analysis.concept_prior import prior_share

    per = prior_share(d, "lang", n_boot=n_boot, seed=seed).set_index("lang").reindex(languages)
    pooled = prior_share(d, None, n_boot=n_boot, seed=seed)
    pooled.index = ["all"]
    return pd.concat([per, pooled])



@dataclass
class BmlamaScores:
    """One BMLAMA benchmark scored by Direct (:func:`bmlama_scores`).

    Attributes:
        pairs, control: the sampled pairs and their control pairs (``[n, BMLAMA_COLUMNS]``).
        scored, scored_control: model -> :func:`xcomps_utils.analysis.bmlama_study.scored_pairs` of each.
        results, control_results: model -> the :class:`xcomps_utils.runs.execute.Results` of the
            real pairs' run and of the control's.
    """

    pairs: pd.DataFrame
    control: pd.DataFrame
    scored: dict = field(default_factory=dict)
    scored_control: dict = field(default_factory=dict)
    results: dict = field(default_factory=dict)
    control_results: dict = field(default_factory=dict)


def _facts(benchmark: str, languages, facts: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
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


def _first_facts(pairs: pd.DataFrame, facts: int, seed: int) -> pd.DataFrame:
    """The first ``facts`` facts of each task of a :func:`_facts` sample: the pairs a
    ``facts``-fact sample gives (each fact's place in the order, and its pairs, are the whole
    file's), taken from the sample instead of the files."""
    from ..pairs import data, tasks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", data.SmallSampleWarning)  # fewer facts: all of them
        return pd.concat([tasks.sample_units(g, 9 * facts, seed, "item")
                          for _, g in pairs.groupby("task", sort=False)], ignore_index=True)


def bmlama_scores(run: Runner, models: list[str], benchmark: str, languages: list[str],
                  facts: int, seed: int = 0) -> BmlamaScores:
    """Sample ``facts`` whole facts a language of ``benchmark`` (``bmlama17``/``bmlama53``; the
    same facts in every language; as ``n_pairs = 9 * facts`` of the sweep files), their control
    pairs (task ``<benchmark>_control:<lang>``), and run Direct on both for every model through
    the chapter's runner (a run the store holds is read).

    Raises:
        DataError: an unknown language of the benchmark.
    """
    from ..analysis import bmlama_study

    pairs, control = _facts(benchmark, languages, facts, seed)
    out = BmlamaScores(pairs, control)
    for model in models:
        res = run(model, pairs, "direct")
        out.results[model] = res
        out.scored[model] = bmlama_study.scored_pairs(res.measures, pairs)
        out.control_results[model] = run(model, control, "direct")
        out.scored_control[model] = bmlama_study.scored_pairs(
            out.control_results[model].measures, control)
    return out


def bmlama_cost(scores: dict[str, BmlamaScores], facts_at: dict[str, int]) -> pd.DataFrame:
    """What the BMLAMA runs cost where they were computed, and what another size would: per
    benchmark and model, the pairs (real + control), the compute seconds the store recorded,
    pairs per second, and the minutes ``facts_at[benchmark]`` facts a language would take at
    that rate (9 pairs a fact, real and control).

    Args:
        scores: benchmark -> :func:`bmlama_scores`.

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


def bmlama_methods(run: Runner, model: str, pairs: pd.DataFrame, methods=("meta", "neuro"),
                   facts: int | None = None, seed: int = 0) -> pd.DataFrame:
    """Meta and Neuro on BMLAMA pairs (:func:`bmlama_scores`' ``pairs``), one score a language,
    for the claims that Direct tracks them across languages.

    ``facts`` keeps the first ``facts`` facts of each language in the seeded order
    :func:`bmlama_scores` sampled them in (the same ``seed``): a subset of the same facts, since
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
    from ..analysis.stats import accuracy_table
    from ..analysis.xcomps_paper import pair_table
    from ..methods import probing

    if facts is not None:
        first = _first_facts(pairs, facts, seed)
        if len(first) < len(pairs):
            pairs = first
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


def bmlama_size_summary(power: pd.DataFrame, cost: pd.DataFrame,
                        morphology: tuple[int, int] | None = None) -> str:
    """One sentence per benchmark and model saying what this size can decide and what the
    deciding size costs, read from :func:`xcomps_utils.analysis.bmlama_study.power_table` (with a
    ``benchmark`` column) and :func:`bmlama_cost` (at the facts needed); with ``morphology``
    (:func:`bmlama_morphology_to_decide`), a last one on deciding the morphology trend.

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


def bmlama_morphology_to_decide(index: pd.Series) -> tuple[int, int]:
    """How many languages would decide the morphology trend either way at the book's smallest
    trend over a [0, 1] label (``SESOI["span"]``, 0.10 from end to end), spread over the label as
    ``index`` is (the Grambank share of bound inflection of BMLAMA-53's languages) and around
    the trend by the least spread the BMLAMA page plans for (0.05), each measured without error
    (:func:`xcomps_utils.analysis.bmlama_study.languages_to_decide`).

    Returns:
        ``(languages, languages with a value in index)``.
    """
    from ..analysis import bmlama_study, claims

    index = pd.to_numeric(index, errors="coerce").dropna()
    k = bmlama_study.languages_to_decide(claims.SESOI["span"], claims.SESOI["accuracy"],
                                         x=index.to_numpy(float))
    return k, len(index)


def _deciding_trend(r) -> str:
    """The sentence of :func:`bmlama_size_summary` on deciding a resource trend either way."""
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


def findings_sizes(confirmatory: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """The findings page's deciding sizes: :func:`xcomps_utils.analysis.claims.deciding_sizes`
    of the confirmatory verdict rows, with the items the project's XCOMPS sample holds (a
    language's concept-property items) and, for the claims about languages, how many languages
    would decide them either way at the book's smallest effects
    (:func:`xcomps_utils.analysis.bmlama_study.languages_to_decide`, each language measured
    without error): a correlation of 0.3 (Direct ~ Neuro), a resource trend of 0.05 per
    tier step over languages spread by 0.05 around it (the least spread the BMLAMA page plans
    for; a wider spread needs more), and a morphology trend of 0.10 over the Grambank index
    (:func:`bmlama_morphology_to_decide`).

    Returns:
        ``(summary, sizes)``: a Markdown sentence counting the outcomes, and the table (what a
        reader looks for first: claim, model, verdict, outcome and why, then n, unit and page).
    """
    from ..analysis import bmlama_study, claims
    from ..pairs import bmlama, typology, xcomps

    items = xcomps.load_languages(["en"], items_per_language=None)["item"].nunique()
    available = {p: items for p in ("xcomps_results", "xcomps_token_level",
                                    "xcomps_token_level_agreement")}
    s = claims.SESOI
    r = bmlama_study.languages_to_decide(s["correlation"], kind="correlation")
    index = typology.language_table(bmlama.languages("bmlama53"))["grambank_bound"]
    need = {("bmlama_languages", "resource_trend"):
            bmlama_study.languages_to_decide(s["slope"], s["accuracy"]),
            ("bmlama_languages", "morphology_trend"): bmlama_morphology_to_decide(index)[0],
            ("bmlama_languages", "direct_tracks_neuro"): r,
            ("xcomps_results", "direct_tracks_neuro"): r}
    sizes = claims.deciding_sizes(confirmatory, available, languages_to_decide=need)[
        ["claim", "model", "verdict", "outcome", "to decide", "n", "unit", "page"]]
    n = sizes["outcome"].value_counts()
    summary = (f"Of **{len(sizes)} confirmatory tests**: "
               + "; ".join(f"{o}: {n.get(o, 0)}" for o in claims.SIZE_OUTCOMES) + ".")
    return summary, sizes
