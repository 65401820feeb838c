"""Helpers for the book's exercises: what a solution needs beyond a few lines of arithmetic.

Each helper re-uses what a chapter already computed (a :class:`~xcomps_utils.runs.execute.Results`
read from the results store), so a solution runs in seconds when the book is built.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold

from ..declare import ParameterError
from ..errors import InputError, NotFound
from ..lm.token_scores import TokenScores
from ..methods.probing import make_folds, probe_layers, probe_sentences
from ..runs.execute import ShardedStates

__all__ = ["reprobe", "Reprobe", "with_states", "compare_folds", "leaking_pairs",
           "compare_fold_runs", "exercise_model", "policy_flips", "first_word_split",
           "load_with_template"]


@dataclass(frozen=True)
class Reprobe:
    """The per-layer probe of :func:`reprobe` and how its folds were made.

    Attributes:
        curve: one row per layer (``L + 1`` rows): ``layer``, ``f1``, ``balanced_accuracy``,
            ``mcc``, ``convergence_warnings`` (:func:`xcomps_utils.methods.probing.probe_layers`).
        grouping: how the folds group the sentences (``"none (sentences)"`` for plain folds).
        leaked_concepts, leaked_items: distinct concepts, and concept-property items, found in
            both the training and the test sentences of some fold.
    """

    curve: pd.DataFrame
    grouping: str
    leaked_concepts: int
    leaked_items: int


def reprobe(results, pairs: pd.DataFrame, folds: str = "leak_free", lang: str | None = None,
            n_splits: int = 5, seed: int = 0) -> Reprobe:
    """Neuro's per-layer probe again, on the hidden states a Neuro run stored, with other folds.

    The chapter's probe (:func:`xcomps_utils.methods.probing.probe_pairs`) builds its cross-validation
    folds so that no concept and no concept-property item sits on both sides of a fold
    (``folds="leak_free"``, :func:`xcomps_utils.methods.probing.make_folds`). ``folds="sentences"``
    splits the sentences with a plain stratified K-fold instead, as a naive probing study would:
    sentences of one item, and sentences naming one concept, then land in training and test
    alike, so the probe is tested on concepts it was trained on (the leak that He et al.'s
    Neuro method, XCOMPS 2025, must avoid; Hewitt & Liang 2019 on probes that memorise).

    Args:
        results: the :class:`~xcomps_utils.runs.execute.Results` of a run with ``"neuro"``.
        pairs: the XCOMPS pairs of that run (``good``, ``bad``, ``lang``, ``property``,
            ``acceptable_concept``, ``unacceptable_concept``).
        folds: ``"leak_free"`` (the chapter's folds) or ``"sentences"`` (leaking folds).
        lang: keep one language's pairs (``None``: all pairs of ``pairs``).
        n_splits, seed: cross-validation folds and their seed.

    Returns:
        a :class:`Reprobe`: the per-layer scores (``.curve``), the folds' ``grouping`` and the
        leaked concepts and items.

    Raises:
        NotFound: (a ``KeyError``) ``results`` holds no Neuro run, or a sentence of ``pairs``
            has no stored state (pairs of another run).
        ParameterError: unknown ``folds``; no pair of ``lang``.
        ProbeError: too few sentences of a class for ``n_splits`` folds.
    """
    if "neuro" not in results.runs:
        raise NotFound(f"these results hold no Neuro run (runs: {list(results.runs)})")
    if folds not in ("leak_free", "sentences"):
        raise ParameterError("folds", "'leak_free' or 'sentences'", folds)
    if lang is not None:
        pairs = pairs[pairs["lang"] == lang]
        if pairs.empty:
            raise ParameterError("lang", "a language of the pairs", lang, "no pair has it")
    states = ShardedStates(results.store, results.runs["neuro"])
    sents = probe_sentences(pairs, "property" if "property" in pairs else "item")
    missing = [t for t in sents["text"] if t not in states.index]
    if missing:
        raise NotFound(f"{len(missing)} sentences have no stored state, e.g. {missing[0]!r}: "
                       f"pairs of another run?")
    y = sents["label"].to_numpy()
    concepts = sents["concept"].to_numpy(dtype=object)
    items = sents["item"].to_numpy(dtype=object)
    if folds == "leak_free":
        split, info = make_folds(y, items, concepts, n_splits, seed)
        grouping = info["grouping"]
    else:
        cv = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
        split, grouping = list(cv.split(np.zeros(len(y)), y)), "none (sentences)"
    leaked = {"leaked_concepts": set(), "leaked_items": set()}
    for tr, te in split:
        leaked["leaked_concepts"] |= set(concepts[tr]) & set(concepts[te])
        leaked["leaked_items"] |= set(items[tr]) & set(items[te])
    X = np.asarray(states[[states.index[t] for t in sents["text"]]])
    return Reprobe(probe_layers(X, y, split), grouping, len(leaked["leaked_concepts"]),
                   len(leaked["leaked_items"]))


def with_states(results, pairs: pd.DataFrame, lang: str, run, store="results"):
    """``results`` when its store holds the Neuro run's hidden states; otherwise a Neuro run of
    language ``lang``'s pairs alone, computed into ``store`` (a store the book did not ship).

    The book's shipped store (``store/``, :meth:`xcomps_utils.runs.store.Store.ship`) leaves the
    hidden states out: they are hundreds of megabytes and no page reads them. An exercise that
    re-probes them (:func:`reprobe`) then recomputes one language's states with the run's model:
    a sentence's last-token state does not depend on the other pairs of the run (batching moves
    it by float32 rounding only), so the probe of that language is the chapter's.

    Args:
        results: the chapter's :class:`~xcomps_utils.runs.execute.Results` with ``"neuro"``.
        pairs: the XCOMPS pairs of that run.
        lang: the language whose states are needed.
        run: the chapter's run call (:func:`xcomps_utils.pages.chapters.open`).
        store: where to compute the states when ``results`` lacks them (default ``results``,
            the git-ignored local store; a second call reads them from there).

    Returns:
        :class:`~xcomps_utils.runs.execute.Results` whose Neuro run holds ``lang``'s states.

    Raises:
        NotFound: (a ``KeyError``) ``results`` holds no Neuro run.
        ParameterError: no pair of ``lang``.
    """
    if "neuro" not in results.runs:
        raise NotFound(f"these results hold no Neuro run (runs: {list(results.runs)})")
    rid = results.runs["neuro"]
    if "states" not in results.store.omitted(rid):
        return results
    one = pairs[pairs["lang"] == lang]
    if one.empty:
        raise ParameterError("lang", "a language of the pairs", lang, "no pair has it")
    key = results.store.run(rid).record["key"]
    return run(key["model"], one, ["neuro"], store=store)


def compare_folds(results, pairs: pd.DataFrame, lang: str, seed: int = 0
                  ) -> tuple[pd.DataFrame, dict]:
    """:func:`reprobe` of one language under the chapter's leak-free folds and under plain
    sentence folds, side by side, on hidden states a store computed here holds (the chapter's
    exercise compares two runs instead, in every store: :func:`compare_fold_runs`).

    Returns:
        ``(table, curves)``: one row per fold scheme (``grouping``, ``leaked_items``,
        ``leaked_concepts``, ``best_balanced_accuracy`` and its ``best_layer``,
        ``mean_balanced_accuracy`` over layers), and ``{scheme: curve}`` for
        :func:`xcomps_utils.pages.plots.plot_reprobe`.
    """
    runs = {"leak-free folds": "leak_free", "sentence folds (leaking)": "sentences"}
    rows, curves = [], {}
    for name, folds in runs.items():
        t = reprobe(results, pairs, folds=folds, lang=lang, seed=seed)
        acc = t.curve.balanced_accuracy
        rows.append({"folds": name, "grouping": t.grouping, "leaked_items": t.leaked_items,
                     "leaked_concepts": t.leaked_concepts,
                     "best_balanced_accuracy": acc.max(), "best_layer": int(acc.idxmax()),
                     "mean_balanced_accuracy": acc.mean()})
        curves[name] = t.curve
    return pd.DataFrame(rows).set_index("folds"), curves


def leaking_pairs(pairs: pd.DataFrame, lang: str) -> pd.DataFrame:
    """Language ``lang``'s XCOMPS pairs with what the probe's folds group by hidden: each pair its
    own item (``property`` is its ``pair_id``) and no concept columns (a sentence is then its own
    concept), so Neuro's fold builder (:func:`xcomps_utils.methods.probing.make_folds`) sees no
    item and no concept to keep whole and splits the sentences almost freely (an acceptable
    sentence stays with the first negative it was paired with), as a naive probing study would.

    A Neuro run of these pairs (:func:`compare_fold_runs`) is the chapter's probe under leaking
    folds; its measures are what the shipped store holds of it (its hidden states are never
    shipped), so the book re-probes without a model.

    Raises:
        ParameterError: no pair of ``lang``.
    """
    one = pairs[pairs["lang"] == lang]
    if one.empty:
        raise ParameterError("lang", "a language of the pairs", lang, "no pair has it")
    item = "property" if "property" in one else "item"
    return (one.drop(columns=[c for c in ("acceptable_concept", "unacceptable_concept")
                              if c in one])
            .assign(**{item: one["pair_id"].astype(str)}).reset_index(drop=True))


def _lang_curve(results, lang: str) -> pd.DataFrame:
    from ..methods.probing import probe_tables

    by_layer, _ = probe_tables(results.wide("neuro"))
    one = by_layer[(by_layer["lang"] == lang) & (by_layer["subset"] == "all")]
    return one.set_index("layer").sort_index()


def compare_fold_runs(results, pairs: pd.DataFrame, lang: str, run, n_splits: int = 5,
                      seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """The probe of one language under the chapter's leak-free folds (its Neuro run) and under
    leaking folds (a Neuro run of :func:`leaking_pairs`), side by side: the XCOMPS chapter's
    leaking-folds exercise. Both probes are read from the runs' measures, in every store: the
    leaking-folds run is asked of ``run`` (the chapter's runner, so of the chapter's store),
    which reads it where the store holds it (the book's ``store/`` does, for its pairs: no model
    is loaded) and computes it otherwise. A build's log of what it read (``$XCOMPS_READS``) then
    names that run, so a store shipped from the build (:meth:`xcomps_utils.runs.store.Store.ship`)
    holds it too. (To refit the probe on hidden states a store computed here holds, with plain
    stratified folds instead, see :func:`reprobe`.)

    Args:
        results: the chapter's :class:`~xcomps_utils.runs.execute.Results` with ``"neuro"``.
        pairs: the XCOMPS pairs of that run.
        lang: the language re-probed.
        run: the chapter's run call (:func:`xcomps_utils.pages.chapters.open`, with the
            chapter's ``store``): it reads the leaking-folds run from there, or computes it
            (the model's states of ``lang``'s sentences, then the probes).
        n_splits, seed: the run's folds and seed, to count the leaks of its folds.

    Returns:
        ``(table, curves)``: one row per fold scheme (``run``, the Neuro run read, ``grouping``,
        ``leaked_items``, ``leaked_concepts`` counted with the real items and concepts,
        ``best_balanced_accuracy`` and its ``best_layer``, ``mean_balanced_accuracy``), and
        ``{scheme: curve}`` (indexed by layer, with ``balanced_accuracy`` and the run's
        ``null_q95``) for :func:`xcomps_utils.pages.plots.plot_reprobe`.

    Raises:
        NotFound: (a ``KeyError``) ``results`` holds no Neuro run.
        ParameterError: no pair of ``lang``.
    """
    if "neuro" not in results.runs:
        raise NotFound(f"these results hold no Neuro run (runs: {list(results.runs)})")
    hidden = leaking_pairs(pairs, lang)
    one = pairs[pairs["lang"] == lang]
    model = results.store.run(results.runs["neuro"]).record["key"]["model"]
    leaky = run(model, hidden, ["neuro"])
    item = "property" if "property" in one else "item"
    real = probe_sentences(one, item)
    schemes = {"leak-free folds": (results, real), "sentence folds (leaking)":
               (leaky, probe_sentences(hidden, item).set_index("text").loc[real["text"]]
                .reset_index())}
    rows, curves = [], {}
    y = real["label"].to_numpy()
    concepts, items = real["concept"].to_numpy(dtype=object), real["item"].to_numpy(dtype=object)
    for name, (res, folded) in schemes.items():
        split, info = make_folds(y, folded["item"].to_numpy(dtype=object),
                                 folded["concept"].to_numpy(dtype=object), n_splits, seed)
        leaked_c, leaked_i = set(), set()
        for tr, te in split:
            leaked_c |= set(concepts[tr]) & set(concepts[te])
            leaked_i |= set(items[tr]) & set(items[te])
        curve = _lang_curve(res, lang)
        acc = curve["balanced_accuracy"]
        grouping = (info["grouping"] if res is results
                    else "none (pairs: items and concepts hidden)")
        rows.append({"folds": name, "run": res.runs["neuro"], "grouping": grouping,
                     "leaked_items": len(leaked_i), "leaked_concepts": len(leaked_c),
                     "best_balanced_accuracy": acc.max(), "best_layer": int(acc.idxmax()),
                     "mean_balanced_accuracy": acc.mean()})
        curves[name] = curve
    return pd.DataFrame(rows).set_index("folds"), curves


def exercise_model(results, device="auto", dtype="auto", load: bool | None = None):
    """The model an exercise runs by hand: the one ``results`` loaded (a run computed here),
    else it loaded by name, except from a store a repository ships (``shipped.json``: the book's
    ``store/``), where nothing was computed and the book loads no model (``load=True`` loads it
    there too; ``load=False`` never loads).

    Returns:
        a :class:`~xcomps_utils.lm.models.LanguageModel`, or ``None`` (not loaded).
    """
    if results.model is not None:
        return results.model
    from ..runs.store import SHIPPED

    if load is None:
        load = not (results.store.root / SHIPPED).is_file()
    if not load:
        return None
    from ..lm.models import load_model

    rid = next(iter(results.runs.values()))
    return load_model(results.store.run(rid).record["key"]["model"], device=device, dtype=dtype)


def policy_flips(wide: pd.DataFrame) -> pd.DataFrame:
    """Pairs whose Direct decision changes with the first-token convention.

    Args:
        wide: Direct results of the same pairs under several BOS policies, one row per pair and
            policy: ``task``, ``pair_id``, ``policy``, ``delta`` (log p(good) - log p(bad), nats)
            and ``correct`` (as :meth:`~xcomps_utils.runs.execute.Results.wide` gives, with a
            ``policy`` column added).

    Returns:
        one row per pair whose ``correct`` differs between two policies: ``task``, ``pair_id``,
        and ``delta_<policy>`` / ``correct_<policy>`` for every policy, sorted by the largest
        spread of ``delta`` first.

    Raises:
        InputError: a required column is missing, or fewer than two policies.
    """
    need = {"task", "pair_id", "policy", "delta", "correct"}
    if need - set(wide):
        raise InputError(f"wide results lack column(s) {sorted(need - set(wide))}; pass "
                         f"Results.wide() of runs under each policy")
    if wide["policy"].nunique() < 2:
        raise InputError(f"need results under at least two policies, got "
                         f"{sorted(wide['policy'].unique())}")
    table = wide.pivot_table(index=["task", "pair_id"], columns="policy",
                             values=["delta", "correct"], aggfunc="first")
    table.columns = [f"{m}_{p}" for m, p in table.columns]
    correct = table[[c for c in table if c.startswith("correct_")]].astype(bool)
    deltas = table[[c for c in table if c.startswith("delta_")]]
    flips = table[correct.nunique(axis=1) > 1].copy()
    spread = (deltas.max(axis=1) - deltas.min(axis=1)).reindex(flips.index)
    flips = flips.loc[spread.sort_values(ascending=False).index]
    return flips.reset_index()[["task", "pair_id"] + sorted(deltas) + sorted(correct)]


def first_word_split(tokens: pd.DataFrame, pair, bos_policy: str) -> dict:
    """``log p(good) - log p(bad)`` of one pair (nats), split over the tokens of the first word,
    the pivotal tokens and the rest (the *first token* chapter's flipped-pair exercise).

    A token is in the first word when it starts inside the sentence's first whitespace word;
    pivotal when it overlaps a pivot span (and is not in the first word); the rest is the rest.
    The three parts sum to the pair's difference.

    Args:
        tokens: a Direct run's ``direct_tokens`` table under ``bos_policy``.
        pair: one pair with ``good``, ``bad``, ``good_pivots``, ``bad_pivots`` (character spans).
        bos_policy: the run's first-token convention (:data:`xcomps_utils.lm.scoring.BOS_POLICIES`).

    Returns:
        ``{"first word": float, "pivotal": float, "rest": float}``.

    Raises:
        KeyError: a sentence of the pair has no row in ``tokens``.
    """
    parts = {"first word": 0.0, "pivotal": 0.0, "rest": 0.0}
    for sign, text, pivots in ((1, pair.good, pair.good_pivots), (-1, pair.bad, pair.bad_pivots)):
        ts = TokenScores.from_table(tokens, text, bos_policy)
        first = ts.offsets[:, 0] < len(text.split()[0])
        piv = np.array([any(a < e and s < b for s, e in pivots) for a, b in ts.offsets],
                       dtype=bool) & ~first
        for name, mask in (("first word", first), ("pivotal", piv), ("rest", ~first & ~piv)):
            parts[name] += sign * float(ts.logprobs[mask].sum())
    return parts


def load_with_template(lang: str, template: dict) -> str:
    """Load a copy of the shipped Meta template file with ``template`` added (or replacing) for
    ``lang``, through :func:`xcomps_utils.methods.meta.load_meta_templates`, in a temporary folder.

    Returns:
        ``"the template file loads"``, or ``"DataError: ..."``: the loader's message, which names
        the file (``a copy of data/meta_templates.json``), the language and the field it
        rejects.
    """
    import json
    import tempfile
    from pathlib import Path

    from ..methods.meta import load_meta_templates, meta_templates_file
    from ..pairs.data import DataError

    shipped = json.loads(meta_templates_file().read_text(encoding="utf-8"))
    shipped["templates"][lang] = template
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "meta_templates.json"
        path.write_text(json.dumps(shipped, ensure_ascii=False), encoding="utf-8")
        try:
            load_meta_templates(path)
        except DataError as err:  # the copy's temporary path would be the build machine's
            return "DataError: " + str(err).replace(str(path), "a copy of data/meta_templates.json")
    return "the template file loads"
