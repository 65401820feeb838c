"""Every model a results store holds, side by side: Direct and Meta accuracy per benchmark and
language with its interval, its pairs and its drawn chance level, Neuro's probe scores, and the
confirmatory verdicts per model.

Frames in, tables out (the models page reads the store: :func:`xcomps_utils.pages.chapters.
stored_models`). The unit of comparison is a *task*, a registry name (``blimp:<phenomenon>``,
``xcomps:<lang>``, ``bmlama17:<lang>``, ``clams:<lang>:<construction>``, ``dust``, ...: a
chapter's alias such as ``blimp_anaphor`` is read as the BLiMP phenomenon it names, a pair of
``xcomps`` as ``xcomps:<its language>``), its *benchmark* the family before the first ``:``.

**The run used** (:func:`choose_runs`). A model may have several complete runs of one method that
score a task: a chapter's and an exercise's, at other sizes, under other first-token conventions.
For each model, method and task, the run taken is, in this order of preference:

1. one under the book's first-token convention (``bos``);
2. the one with the most pairs of that task (the narrowest interval);
3. the larger run;
4. the first by run id (a tie-break only).

A task's pairs rebuilt as a control (conditional Direct's mismatched continuations,
:func:`xcomps_utils.analysis.decompose.mismatched_pairs`, ids holding
:data:`~xcomps_utils.analysis.decompose.CONTROL_MARK`) are not the task's pairs and are left out.

**Side by side** (:func:`accuracy`). A row (a benchmark and language, a benchmark, a task)
compares its models on the pairs every one of them scored: a pair only some of them scored is
left out of the row for all (counted in ``left_out``), so two accuracies of a row are read on
the same pairs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import stats
from .decompose import CONTROL_MARK
from .scored import scored_pairs
from ..pairs.grammar import DATASET_LANGUAGES

__all__ = ["identify", "choose_runs", "scored_by_model", "accuracy", "side_by_side",
           "summary_markdown", "neuro_scores", "neuro_markdown", "verdicts_by_model",
           "verdicts_markdown", "CONVENTION"]

#: the first-token convention the book's chapters score under (preferred by :func:`choose_runs`)
CONVENTION = "bos"
#: the language of a dataset whose pairs leave ``lang`` empty (all English, but TurBLiMP's,
#: SLING's and RuBLiMP's)
_LANGUAGE = {**DATASET_LANGUAGES, "crows_pairs": "en", "dust": "en"}
_ID = ["dataset", "task", "lang", "subset", "pair_id", "item"]
#: the per-pair measures a judge's decision and the drawn chance level read
_JUDGED = ("correct", "tie", "near_tie", "near_tie_tolerance", "n_tokens_good", "n_tokens_bad")


def _need(frame: pd.DataFrame, cols, name: str) -> None:
    missing = [c for c in cols if c not in frame]
    if missing:
        raise ValueError(f"the {name!r} parameter must be a table with the columns "
                         f"{list(cols)}; got one without {missing}")


def identify(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its ``task`` as a registry name, its ``benchmark`` (the task's family) and
    its ``lang`` filled in where its dataset has one language.

    Args:
        frame: rows with ``dataset``, ``task``, ``lang``, ``subset`` (a run's pairs or measures).

    Raises:
        ValueError: a column is missing.
    """
    _need(frame, ["dataset", "task", "lang", "subset"], "frame")
    task = frame["task"].astype(str)
    alias = (frame["dataset"] == "blimp") & ~task.str.startswith("blimp:") & (task != "all")
    task = task.where(~alias, "blimp:" + frame["subset"].astype(str))
    task = task.where(task != "xcomps", "xcomps:" + frame["lang"].astype(str))
    task = task.where(task != "all", frame["dataset"])  # a Neuro group of several tasks
    lang = frame["lang"].fillna("").astype(str)
    lang = lang.where(lang != "", frame["dataset"].map(_LANGUAGE).fillna(""))
    return frame.assign(task=task, benchmark=task.str.split(":").str[0], lang=lang)


def choose_runs(runs: pd.DataFrame, pairs: pd.DataFrame, methods=("direct", "meta")
                ) -> pd.DataFrame:
    """The run used for each model, method and task (the module's rule).

    Args:
        runs: :meth:`xcomps_utils.runs.store.Store.runs` (``run``, ``method``, ``status``,
            ``model``, ``bos_policy``, ``pairs``, ``dtype``, ``device``); only complete runs of
            ``methods`` count.
        pairs: the runs' pairs, one row per run and pair (``run`` and the pair columns
            ``dataset``, ``task``, ``lang``, ``subset``, ``pair_id``).

    Returns:
        one row per (method, model, task): ``benchmark``, ``lang``, ``run``, ``pairs`` (of that
        task in that run), ``bos_policy``, ``dtype``, ``device``, ``other_runs`` (the other runs
        that score the task, ``"<run> (<pairs>)"``, ``""`` when none).

    Raises:
        ValueError: a column is missing.
    """
    _need(runs, ["run", "method", "status", "model", "bos_policy", "pairs", "dtype", "device"],
          "runs")
    _need(pairs, ["run", "dataset", "task", "lang", "subset", "pair_id"], "pairs")
    runs = runs[(runs["status"] == "complete") & runs["method"].isin(list(methods))]
    p = pairs[pairs["run"].isin(runs["run"])]
    p = identify(p[~p["pair_id"].astype(str).str.contains(CONTROL_MARK, regex=False)])
    n = (p.groupby(["run", "task"], sort=False)
         .agg(benchmark=("benchmark", "first"), lang=("lang", "first"), n=("pair_id", "size"))
         .reset_index()
         .merge(runs[["run", "method", "model", "bos_policy", "pairs", "dtype", "device"]]
                .rename(columns={"pairs": "run_pairs"}), on="run"))
    n["other_convention"] = n["bos_policy"] != CONVENTION
    n = n.sort_values(["method", "model", "task", "other_convention", "n", "run_pairs", "run"],
                      ascending=[True, True, True, True, False, False, True])
    first = ~n.duplicated(["method", "model", "task"])
    others = (n[~first].assign(text=lambda d: d["run"] + " ("
                               + d["n"].map("{:,}".format).astype(str) + ")")
              .groupby(["method", "model", "task"])["text"].agg(", ".join))
    out = n[first].merge(others.rename("other_runs").reset_index(), how="left",
                         on=["method", "model", "task"])
    out["other_runs"] = out["other_runs"].fillna("")
    return (out.rename(columns={"n": "pairs"})
            [["method", "model", "benchmark", "lang", "task", "run", "pairs", "bos_policy",
              "dtype", "device", "other_runs"]].reset_index(drop=True))


def scored_by_model(measures: pd.DataFrame, chosen: pd.DataFrame, method: str = "direct"
                    ) -> pd.DataFrame:
    """One row per model and pair of the runs :func:`choose_runs` took for ``method``: the
    pair's identifiers (:func:`identify`'s ``task``, ``benchmark``, ``lang``), ``item``
    (``<task>|<item>``: pairs of one item share it, items of two tasks never do), ``correct``
    and ``decision`` (:func:`xcomps_utils.analysis.scored.scored_pairs`' judge of ``method``)
    and, for Direct, ``n_tokens_good`` / ``n_tokens_bad``; ``model`` and ``run``.

    Args:
        measures: long measures of (at least) the chosen runs, with a ``run`` column
            (:meth:`xcomps_utils.runs.store.Store.measures`).
        chosen: :func:`choose_runs`.

    Raises:
        ValueError: a column is missing, or a chosen run has no ``correct`` measure of
            ``method`` in ``measures``.
    """
    _need(measures, ["run", "method", *_ID, "order", "layer", "measure", "value"], "measures")
    _need(chosen, ["method", "model", "task", "run"], "chosen")
    chosen = chosen[chosen["method"] == method]
    keep = measures["method"].eq(method) & measures["run"].isin(set(chosen["run"])) & \
        measures["measure"].isin(_JUDGED) & measures["order"].fillna("").eq("")
    by_run = dict(tuple(measures[keep].groupby("run", sort=False)))
    frames = []
    for (run, model), tasks in chosen.groupby(["run", "model"])["task"]:
        m = by_run.get(run, measures.iloc[:0])
        ids = m.loc[m["measure"] == "correct", _ID]
        if ids.empty:
            raise ValueError(f"the 'measures' parameter must hold the measures of run {run!r} "
                             f"(chosen for {method}); it holds none of them")
        w = identify(scored_pairs(m, ids.drop_duplicates(), methods=(method,)))
        w = w[w["task"].isin(set(tasks))
              & ~w["pair_id"].str.contains(CONTROL_MARK, regex=False)]
        frames.append(w.rename(columns=lambda c: c.removeprefix(f"{method}_"))
                      .assign(item=lambda d: d["task"] + "|" + d["item"].astype(str),
                              model=model, run=run))
    if not frames:
        return pd.DataFrame(columns=[*_ID, "benchmark", "correct", "decision", "model", "run"])
    return pd.concat(frames, ignore_index=True)


def accuracy(scored: pd.DataFrame, by=("benchmark", "lang"), n_boot: int = 2000, seed: int = 0
             ) -> pd.DataFrame:
    """Accuracy per row of ``by`` and model, on the pairs every model of the row scored, with
    its 95% interval and, where the pairs have token counts, the drawn chance level.

    The interval is :func:`xcomps_utils.analysis.stats.accuracy_table`'s (Wilson's; an item
    bootstrap where pairs share an item, XCOMPS' and BMLAMA's); ties and near ties are not
    decisions (:func:`xcomps_utils.analysis.scored.decided_rows`' rule). The chance level is
    :func:`xcomps_utils.analysis.stats.length_baseline`: the accuracy of deciding by length
    alone, with the model's own tokens (DUST's lies far above 0.5).

    Args:
        scored: :func:`scored_by_model` (of one method).
        by: the row's columns.
        n_boot, seed: the bootstraps' replicates and seed.

    Returns:
        one row per row of ``by`` and model, rows sorted by ``by``: ``n`` (the row's pairs),
        ``left_out`` (the model's pairs of the row that another model of the row lacks),
        ``ties``, ``near_ties``, ``decided``, ``correct``, ``accuracy``, ``ci_low``, ``ci_high``,
        ``chance``, ``chance_low``, ``chance_high`` (NaN without token counts), ``runs``.

    Raises:
        ValueError: ``by`` names no column of ``scored``, or ``n_boot`` < 1.
    """
    by = [by] if isinstance(by, str) else list(by)
    _need(scored, [*by, "task", "pair_id", "model", "item", "correct", "decision", "run"],
          "scored")
    if not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ValueError(f"the 'n_boot' parameter must be an integer >= 1; got {n_boot!r}")
    if scored.empty:
        return pd.DataFrame(columns=[*by, "model", "n", "left_out", "accuracy", "ci_low",
                                     "ci_high", "decided", "chance", "runs"])
    models = scored.groupby(by)["model"].transform("nunique")
    holders = scored.groupby([*by, "task", "pair_id"])["model"].transform("nunique")
    common, apart = scored[holders == models], scored[holders < models]
    out = []
    for model, g in common.groupby("model", sort=False):
        t = stats.accuracy_table(g, by, item="item", n_boot=n_boot, seed=seed)
        t = t.assign(model=model)
        if {"n_tokens_good", "n_tokens_bad"} <= set(g):
            base = stats.length_baseline(g, by, n_boot=n_boot, seed=seed)
            t = t.merge(base[[*by, "length_only", "ci_low", "ci_high"]].rename(columns={
                "length_only": "chance", "ci_low": "chance_low", "ci_high": "chance_high"}),
                on=by)
        else:
            t = t.assign(chance=np.nan, chance_low=np.nan, chance_high=np.nan)
        t["runs"] = t[by].merge(g.groupby(by)["run"].agg(lambda r: ", ".join(dict.fromkeys(r)))
                                .reset_index(), on=by)["run"].to_numpy()
        out.append(t)
    t = pd.concat(out, ignore_index=True)
    left = apart.groupby([*by, "model"]).size().rename("left_out").reset_index()
    t = t.merge(left, on=[*by, "model"], how="left").fillna({"left_out": 0})
    t["left_out"] = t["left_out"].astype(int)
    cols = [*by, "model", "n", "left_out", "ties", "near_ties", "decided", "correct",
            "accuracy", "ci_low", "ci_high", "chance", "chance_low", "chance_high", "runs"]
    return t[cols].sort_values([*by, "model"], kind="stable").reset_index(drop=True)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'s' * (n != 1)}"


def _leader(g: pd.DataFrame) -> tuple[str, bool]:
    """The most accurate model of a row and whether its interval lies above every other's."""
    g = g[g["accuracy"].notna()].reset_index(drop=True)
    if len(g) < 2:
        return "", False
    top = g.loc[g["accuracy"].idxmax()]
    rest = g.drop(index=top.name)
    return top["model"], bool((top["ci_low"] > rest["ci_high"]).all())


def side_by_side(table: pd.DataFrame, by=("benchmark", "lang"), digits: int = 3
                 ) -> pd.DataFrame:
    """:func:`accuracy` with the models side by side, as a page prints it: one row per row of
    ``by``, its ``pairs``, and per model its accuracy with its interval (``"0.878 [0.862,
    0.892]"``, ``"—"`` where the model has no pair of the row) and its drawn chance level
    (``"<model>: chance"``, where the table has one); then, with two models or more, the ``most
    accurate`` model of the row and whether its interval lies ``apart`` from (above) every other
    model's (``"yes"``/``"no"``; empty where one model has the row)."""
    by = [by] if isinstance(by, str) else list(by)
    _need(table, [*by, "model", "n", "accuracy", "ci_low", "ci_high", "chance"], "table")
    f = f"{{:.{digits}f}}"
    rows = table[by].drop_duplicates().reset_index(drop=True)
    keyed = table.set_index(by)
    out = rows.assign(pairs=rows.merge(table.groupby(by)["n"].max().reset_index(),
                                       on=by)["n"].to_numpy())
    for model in dict.fromkeys(table["model"]):
        t = rows.merge(table[table["model"] == model], on=by, how="left")
        out[model] = [("—" if pd.isna(a) else f.format(a) + (
            f" [{f.format(lo)}, {f.format(hi)}]" if pd.notna(lo) else " [no interval]"))
            for a, lo, hi in zip(t["accuracy"], t["ci_low"], t["ci_high"])]
        if t["chance"].notna().any():
            out[f"{model}: chance"] = ["—" if pd.isna(c) else f"{c:.2f}" for c in t["chance"]]
    if table["model"].nunique() > 1:
        lead = [_leader(keyed.loc[[tuple(r)]] if len(by) > 1 else keyed.loc[[r[0]]])
                for r in rows.itertuples(index=False)]
        out["most accurate"] = [m for m, _ in lead]
        out["apart"] = [("yes" if a else "no") if m else "" for m, a in lead]
    return out


def summary_markdown(table: pd.DataFrame, by=("benchmark", "lang")) -> str:
    """What :func:`accuracy`'s table finds, in sentences made from its numbers: the models and
    rows, then a list: which model is the most accurate on how many of the rows two or more
    models share and on how many of those its interval lies above every other's, the pairs left
    out, and per model how many of its rows lie above their drawn chance level (the interval's
    low end above the length-only accuracy). No table: one sentence saying so."""
    by = [by] if isinstance(by, str) else list(by)
    if table.empty:
        return "The store holds no complete run of this method."
    models = list(dict.fromkeys(table["model"]))
    groups = [g for _, g in table.groupby(by, sort=False)]
    shared = [g for g in groups if g["accuracy"].notna().sum() >= 2]
    row = " in a ".join({"lang": "language"}.get(b, b) for b in by)
    text = [f"The store holds **{_count(len(models), 'model')}** with this method "
            f"({', '.join(f'`{m}`' for m in models)}), on {_count(len(groups), 'row')} (a "
            f"{row}); {len(shared)} of them scored by two models or more."]
    if shared:
        lead = pd.DataFrame([_leader(g) for g in shared], columns=["model", "apart"])
        for model in models:
            wins = lead[lead["model"] == model]
            text.append(f"* `{model}` is the most accurate on **{len(wins)} of the "
                        f"{len(shared)}**, its interval above every other model's on "
                        f"{int(wins['apart'].sum())} of them.")
        text.append(f"* On the other {int((~lead['apart']).sum())} the intervals overlap: the "
                    f"data do not order the models there.")
    if "left_out" in table and table["left_out"].sum():
        cut = table[table["left_out"] > 0]
        text.append(f"* {_count(int(cut['left_out'].sum()), 'pair')} that only some of a row's "
                    f"models scored {'is' if cut['left_out'].sum() == 1 else 'are'} left out of "
                    f"{_count(len(cut[by].drop_duplicates()), 'row')}, so that each row "
                    f"compares its models on the same pairs.")
    drawn = table[table["chance"].notna()] if "chance" in table else table.iloc[:0]
    for model, g in drawn.groupby("model", sort=False):
        above = int((g["ci_low"] > g["chance"]).sum())
        text.append(f"* `{model}` lies above its drawn chance level (the interval's low end "
                    f"above the length-only accuracy) on {above} of its {len(g)} rows.")
    return text[0] + "".join(("\n\n" if i == 1 else "\n") + t for i, t in enumerate(text) if i)


def neuro_scores(measures: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Neuro's probe scores per model and probe group (a benchmark, a language, a subset: a
    negative-sample type or ``all``), from the run with the most sentences of that group (then
    the larger run, then the first run id).

    Args:
        measures: long measures of Neuro runs (others are ignored), with a ``run`` column.
        runs: :meth:`xcomps_utils.runs.store.Store.runs` (``run``, ``model``, ``pairs``).

    Returns:
        one row per model and group: ``model``, ``benchmark``, ``lang``, ``subset``,
        ``sentences``, ``probe`` (the nested score: balanced accuracy with the layer chosen
        inside the training folds), ``best_layer`` and ``best_layer_score`` (the layer of the
        highest balanced accuracy over the folds, and that score: an optimistic maximum),
        ``null_best_q95`` (the label-permutation null's 95th percentile of that maximum, NaN
        where the run drew none), ``run``.

    Raises:
        ValueError: a column is missing.
    """
    _need(measures, ["run", "method", "dataset", "task", "lang", "subset", "layer", "measure",
                     "value"], "measures")
    _need(runs, ["run", "model", "pairs"], "runs")
    cols = ["model", "benchmark", "lang", "subset", "sentences", "probe", "best_layer",
            "best_layer_score", "null_best_q95", "run"]
    m = measures[measures["method"] == "neuro"]
    if m.empty:
        return pd.DataFrame(columns=cols)
    key = ["run", "dataset", "task", "lang", "subset"]
    summary = (m[m["layer"] < 0].pivot_table(index=key, columns="measure", values="value")
               .reindex(columns=["n_sentences", "nested_balanced_accuracy", "null_max_q95"])
               .reset_index())
    layers = m[(m["layer"] >= 0) & (m["measure"] == "balanced_accuracy")]
    best = layers.loc[layers.groupby(key)["value"].idxmax(), key + ["layer", "value"]]
    g = identify(summary.merge(best, on=key, how="left")).merge(
        runs[["run", "model", "pairs"]], on="run")
    g = g.sort_values(["model", "benchmark", "lang", "subset", "n_sentences", "pairs", "run"],
                      ascending=[True, True, True, True, False, False, True])
    g = g.drop_duplicates(["model", "benchmark", "lang", "subset"])
    g = g.rename(columns={"n_sentences": "sentences", "nested_balanced_accuracy": "probe",
                          "layer": "best_layer", "value": "best_layer_score",
                          "null_max_q95": "null_best_q95"})
    g["sentences"] = g["sentences"].astype(int)
    g["best_layer"] = g["best_layer"].astype("Int64")
    return g[cols].reset_index(drop=True)


def neuro_markdown(neuro: pd.DataFrame) -> str:
    """What :func:`neuro_scores` finds, in a sentence per model made from its numbers: its probe
    groups, and in how many of those with a permutation null the best layer's score lies above
    the null's 95th percentile of the best layer."""
    if neuro.empty:
        return "No model of the store has a complete Neuro run."
    text = []
    for model, g in neuro.groupby("model", sort=False):
        nulled = g[g["null_best_q95"].notna()]
        above = int((nulled["best_layer_score"] > nulled["null_best_q95"]).sum())
        text.append(f"`{model}`: {len(g)} probe groups; the best layer's score lies above the "
                    f"permutation null's 95th percentile in {above} of the {len(nulled)} "
                    f"groups with a null.")
    return " ".join(text)


def verdicts_by_model(rows: pd.DataFrame) -> pd.DataFrame:
    """Each confirmatory claim's verdict per model, from the verdicts the chapters wrote
    (:func:`xcomps_utils.pages.verdicts.read_verdicts`' rows): one row per (page, claim,
    scope), one column per model (``"(not named)"`` where a page named none), ``"—"`` where the
    claim was not tested on that model; two tests of one cell are joined with ``" / "``.

    Raises:
        ValueError: a column is missing.
    """
    _need(rows, ["page", "claim", "scope", "model", "verdict", "role"], "rows")
    c = rows[rows["role"] == "confirmatory"]
    if c.empty:
        return pd.DataFrame(columns=["page", "claim", "scope"])
    c = c.assign(model=c["model"].replace("", "(not named)"))
    out = c.pivot_table(index=["page", "claim", "scope"], columns="model", values="verdict",
                        aggfunc=" / ".join, fill_value="—", sort=False)
    out.columns.name = None
    return out.reset_index()


def verdicts_markdown(rows: pd.DataFrame) -> str:
    """How many confirmatory tests of each verdict each model has (``read_verdicts``' rows), in
    a sentence: ``"`m`: 3 supported, 1 inconclusive (of 4 tests)"``, verdicts in the order of
    their first appearance."""
    _need(rows, ["model", "verdict", "role"], "rows")
    c = rows[rows["role"] == "confirmatory"]
    if c.empty:
        return "No chapter wrote a confirmatory verdict in this build."
    c = c.assign(model=c["model"].replace("", "(not named)"))
    return "; ".join(f"`{model}`: " + ", ".join(f"{n} {v}" for v, n in g["verdict"].value_counts(
        sort=False).items()) + f" (of {len(g)} tests)" for model, g in c.groupby("model",
                                                                                sort=False)) + "."
