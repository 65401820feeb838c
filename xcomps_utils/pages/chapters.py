"""What the book's chapters share: their entry, the one-line run call, the sample notice, and
the few tables two pages (or two cells of a page) would otherwise copy.

A chapter enters in one line, after its parameters cell (:func:`open`: its parameters checked
and shown, its verdicts and reads recorded where the build collects them, its run settings
fixed once)::

    run = chapters.open(globals(), "direct_scoring")
    res = run(model, pairs, "direct")
    conv = run(model, conv_pairs, "direct", bos_policy="lm_eval")  # one setting changed

Analysis (tables and claims of a paper) lives in the per-paper modules; this module only wires
them to a page.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from types import MappingProxyType

import pandas as pd

from .. import paths
from ..declare import out_of, ParameterTypeError
from ..errors import InputError, did_you_mean
from ..runs import execute as _methods
from ..runs import store as _store
from . import params, verdicts

__all__ = ["open", "Runner", "runner", "run_settings", "sample_notice",
           "percent_style", "paired_model_difference", "probe_baselines", "XcompsSplit",
           "xcomps_split", "prior_shares", "findings_sizes", "StoredModels", "stored_models"]


def _run_settings() -> tuple[str, ...]:
    """The keyword-only parameters of :func:`xcomps_utils.runs.execute.run`: what a runner may fix."""
    sig = inspect.signature(_methods.run)
    return tuple(n for n, p in sig.parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY)


_SETTINGS = _run_settings()


def _check_settings(settings: dict, where: str) -> None:
    for name in settings:
        if name not in _SETTINGS:
            raise ParameterTypeError(name, None, hint=did_you_mean(name, _SETTINGS), where=where,
                                     kind="setting of methods.run", known=", ".join(_SETTINGS))


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
            ParameterTypeError: (a ``TypeError``) an override that is not a setting of
                ``methods.run`` (names the allowed ones and the nearest).
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
        ParameterTypeError: (a ``TypeError``) a name that is not a setting of ``methods.run``,
            with the allowed names and the nearest one (e.g. ``storе`` or the removed
            ``datasets``).
    """
    _check_settings(settings, "chapters.runner")
    return Runner(MappingProxyType(dict(settings)))


def run_settings(values: dict, name: str) -> dict:
    """The chapter's parameters that are settings of :func:`xcomps_utils.runs.execute.run`
    (``store``, ``device``, ``dtype``, ``token_budget``, ``seed``...): what :func:`open` fixes in
    the chapter's runner, and what the study's plan of the chapter's runs starts from
    (:mod:`xcomps_utils.pages.study`)."""
    fields = params.declaration(name).model_fields
    return {n: values[n] for n in fields if n in _SETTINGS}


def open(values: dict, name: str, **settings) -> Runner:
    """A chapter's entry, in one call after its parameters cell: check its parameters against
    their declaration (:func:`xcomps_utils.pages.params.check`), show them
    (:func:`xcomps_utils.pages.params.table`, displayed), send what it records where the build
    collects it, and return its runner.

    The build's chapter rule (the Makefile) sets ``$XCOMPS_VERDICTS``, ``$XCOMPS_READS`` and
    ``$XCOMPS_CHAPTER``: the verdicts the chapter records
    (:func:`xcomps_utils.pages.verdicts.record`) go to ``$XCOMPS_VERDICTS/<name>.csv``
    (:func:`xcomps_utils.pages.verdicts.install`), and every read of a run's folder by a results
    store of this process to ``$XCOMPS_READS/<name>.jsonl``
    (:func:`xcomps_utils.paths.read_log`, :func:`xcomps_utils.runs.store.log_reads`, for
    ``make ship``). Unset (a notebook run by hand), nothing is recorded.

    Args:
        values: where the parameters live (a chapter passes ``globals()``).
        name: the chapter's name (``notebooks/<name>.md``).
        settings: run settings the chapter's parameters do not hold, or that override them
            (``progress=False``).

    Returns:
        :func:`runner` with the chapter's parameters that are settings of
        :func:`xcomps_utils.runs.execute.run` fixed (``store``, ``device``, ``dtype``,
        ``token_budget``, ``seed``...), then ``settings``.

    Raises:
        ValueError: ``$XCOMPS_CHAPTER`` names another chapter than ``name``.
        KeyError: ``name`` is not a declared chapter (with the nearest).
        ParameterError: a wrong parameter (:func:`xcomps_utils.pages.params.check`).
        TypeError: a setting that is not one of ``methods.run``.
    """
    executed = paths.chapter()
    if executed is not None and executed != name:
        raise InputError(f"the 'name' parameter must be the chapter the build executes "
                         f"($XCOMPS_CHAPTER={executed!r}); got {name!r}")
    params.check(values, name)
    run = runner(**{**run_settings(values, name), **settings})
    _store.log_reads(paths.read_log())
    verdicts.install(paths.verdicts_dir())
    from IPython.display import display

    display(params.table(values, name))
    return run


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


def sample_notice(source: str, page: str = "results") -> str:
    """The MyST admonition an XCOMPS page shows when it reads the project's own sample.

    Args:
        source: the chapter's ``source`` parameter (``"sample"`` or ``"upstream"``).
        page: ``"results"`` (a page that scores models) or ``"dataset"`` (the dataset page).

    Returns:
        Markdown text; empty for ``source="upstream"``.

    Raises:
        ParameterError: an unknown ``page``.
    """
    out_of("page", page, _NOTICE)
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
    d = decompose.conditional_decisions(dec.pairs.merge(decisions, on=["lang", "pair_id"],
                                                        how="left"))
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



def findings_sizes(confirmatory: pd.DataFrame) -> tuple[str, pd.DataFrame]:
    """The findings page's deciding sizes: :func:`xcomps_utils.analysis.report.deciding_sizes`
    of the confirmatory verdict rows, with the items the project's XCOMPS sample holds (a
    language's concept-property items) and, for the claims about languages, how many languages
    would decide them either way at the book's smallest effects
    (:func:`xcomps_utils.analysis.bmlama_study.languages_to_decide`, each language measured
    without error): a correlation of 0.3 (Direct ~ Neuro), a resource trend of 0.05 per
    tier step over languages spread by 0.05 around it (the least spread the BMLAMA page plans
    for; a wider spread needs more), and a morphology trend of 0.10 over the Grambank index
    (:func:`xcomps_utils.analysis.bmlama_scoring.morphology_to_decide`).

    Returns:
        ``(summary, sizes)``: a Markdown sentence counting the outcomes, and the table (what a
        reader looks for first: claim, model, verdict, outcome and why, then n, unit and page,
        and the why in a few words, what the findings in words say), a row per row of
        ``confirmatory``, in its order (any verdict rows may be passed).
    """
    from ..analysis import bmlama_scoring, bmlama_study, report
    from ..analysis.families import SESOI
    from ..pairs import bmlama, typology, xcomps

    items = xcomps.load_languages(["en"], items_per_language=None)["item"].nunique()
    available = {p: items for p in ("xcomps_results", "xcomps_token_level",
                                    "xcomps_token_level_agreement")}
    s = SESOI
    r = bmlama_study.languages_to_decide(s["correlation"], kind="correlation")
    index = typology.language_table(bmlama.languages("bmlama53"))["grambank_bound"]
    need = {("bmlama_languages", "resource_trend"):
            bmlama_study.languages_to_decide(s["slope"], s["accuracy"]),
            ("bmlama_languages", "morphology_trend"):
            bmlama_scoring.morphology_to_decide(index)[0],
            ("bmlama_languages", "direct_tracks_neuro"): r,
            ("xcomps_results", "direct_tracks_neuro"): r}
    sizes = report.deciding_sizes(confirmatory, available, languages_to_decide=need)[
        ["claim", "model", "verdict", "outcome", "to decide", "n", "unit", "page", "why"]]
    n = sizes["outcome"].value_counts()
    summary = (f"Of **{len(sizes)} confirmatory tests**: "
               + "; ".join(f"{o}: {n.get(o, 0)}" for o in report.SIZE_OUTCOMES) + ".")
    return summary, sizes


@dataclass(frozen=True)
class StoredModels:
    """What a results store holds, read for the models page (:func:`stored_models`).

    Attributes:
        runs: :meth:`xcomps_utils.runs.store.Store.runs` of its complete runs.
        chosen: the Direct and Meta run used per model and task
            (:func:`xcomps_utils.analysis.model_comparison.choose_runs`).
        measures: the measures of the chosen runs and of every complete Neuro run (``run``
            column).
    """

    runs: pd.DataFrame
    chosen: pd.DataFrame
    measures: pd.DataFrame


def stored_models(store: str) -> StoredModels:
    """Every model ``store`` holds: its complete runs, the run used per model, method and task,
    and the measures of those (no model is loaded; only the chosen runs' results are read, and
    logged as read for ``make ship``).

    Raises:
        xcomps_utils.runs.store.StoreError: a damaged run or shard (named, with the repair).
    """
    from ..analysis.model_comparison import choose_runs
    from ..runs.store import Store

    st = Store(store)
    runs = st.runs()
    runs = runs[runs["status"] == "complete"].reset_index(drop=True)
    pairs = [st.run(r).pairs().assign(run=r) for r in runs["run"][runs["method"] != "neuro"]]
    chosen = choose_runs(runs, pd.concat(pairs, ignore_index=True) if pairs else
                         pd.DataFrame(columns=["run", "dataset", "task", "lang", "subset",
                                               "pair_id"]))
    neuro = runs["run"][runs["method"] == "neuro"].tolist()
    return StoredModels(runs, chosen, st.measures(list(dict.fromkeys(chosen["run"])) + neuro))
