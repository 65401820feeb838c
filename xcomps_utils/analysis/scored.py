"""The one scored-pairs table and the one decision rule every analysis and chapter reads.

A run's measures are long (one row per pair, method, measure; :data:`xcomps_utils.methods.base.
MEASURE_COLUMNS`). :func:`scored_pairs` widens them into one row per pair: the pairs' own columns
and one ``<method>_<measure>`` column per measure (``direct_logprob_good``, ``meta_delta``,
...), with each judge's decision beside its ``correct``. A *judge* is what decides a pair: a
method (``direct``, ``meta``), a variant of one (``direct_mean``: Direct on the mean token
log-probability), or a column set a chapter derives (``cond``: conditional Direct; the empty
judge of the token-level perplexity prompts). Its columns follow one naming rule:
``<judge>_correct`` (1/0), ``<judge>_tie``, ``<judge>_near_tie`` and ``<judge>_decision``
(``"right"``, ``"wrong"``, ``"tie"``, ``"near_tie"``: :func:`xcomps_utils.lm.precision.decisions`).

:func:`decided_rows` is the one rule every accuracy reads: a pair counts when its decision is
``right`` or ``wrong``; ties and near ties (a difference below the run's error bound) are left
out. Before this module, the XCOMPS, grammar and BMLAMA chapters each widened the measures with
their own keys and found the tie columns by editing the ``correct`` column's name.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputError
from ..lm.precision import decide, decisions, per_unit_tolerance

__all__ = ["scored_pairs", "decided_rows", "decision_labels", "judge_columns", "KEYS"]

#: a pair's identity in a run (:func:`xcomps_utils.runs.planner.prepare_pairs`): the scored pairs are
#: joined on those of them the pairs carry, as text
KEYS = ("dataset", "task", "lang", "pair_id")


def judge_columns(correct: str) -> dict | None:
    """The columns of the judge whose ``correct`` column is ``correct``:
    ``{"correct", "decision", "tie", "near_tie"}`` -> column name, or None for a column not
    named as a judge's (a 0/1 column whose NaN already marks no decision, e.g. BMLAMA's
    ``top1_sum``).

    ``"direct_correct"`` is judge ``direct`` (``direct_decision``, ...); a bare ``"correct"`` is
    the unnamed judge (``decision``, ``tie``, ``near_tie``).
    """
    if correct == "correct":
        judge = ""
    elif correct.endswith("_correct"):
        judge = correct[: -len("correct")]
    else:
        return None
    return {k: judge + k for k in ("correct", "decision", "tie", "near_tie")}


def decision_labels(df: pd.DataFrame, correct: str) -> pd.Series:
    """Each row's decision by the judge whose column is ``correct``: ``"right"``, ``"wrong"``,
    ``"tie"`` or ``"near_tie"`` (NaN where ``correct`` is missing), the one entry point every
    accuracy, count of ties and claim reads.

    The ``<judge>_decision`` column when the table has it (a run's, :func:`scored_pairs`', or a
    derived judge's such as conditional Direct,
    :func:`xcomps_utils.analysis.decompose.conditional_decisions`), otherwise
    :func:`xcomps_utils.lm.precision.decisions` of its ``<judge>_tie`` and ``<judge>_near_tie``
    columns, the same rule. A column not named as a judge's (:func:`judge_columns`) decides
    ``right`` (1) or ``wrong`` (0) where it is not missing.

    Raises:
        InputError: ``correct`` is not a column of ``df``.
    """
    if correct not in df:
        raise InputError(f"the 'correct' parameter must be a column of the table; got "
                         f"{correct!r} (have {list(df.columns)})")
    cols = judge_columns(correct)
    c = df[correct]
    if cols is None:
        return pd.Series(np.where(c == 1, "right", "wrong"), index=df.index,
                         dtype=object).where(c.notna())
    if cols["decision"] in df:
        return df[cols["decision"]].where(c.notna())
    return decisions(df.rename(columns={v: f"j_{k}" for k, v in cols.items() if v in df}), "j")


def decided_rows(df: pd.DataFrame, correct: str) -> pd.DataFrame:
    """The rows of ``df`` that are a decision of the judge whose column is ``correct``
    (:func:`decision_labels` ``"right"`` or ``"wrong"``: ties and near ties left out).

    Raises:
        InputError: ``correct`` is not a column of ``df``.
    """
    return df[decision_labels(df, correct).isin(["right", "wrong"])]


def scored_pairs(measures: pd.DataFrame, pairs: pd.DataFrame, methods=("direct", "meta"),
                 how: str = "left") -> pd.DataFrame:
    """``pairs`` with one ``<method>_<measure>`` column per per-pair measure of ``methods``.

    Measures per pair are those with no wording order (``order == ""``) and no layer (Neuro's
    per-layer rows and token-level perplexity's per-prompt rows are other tables:
    :func:`xcomps_utils.methods.probing.probe_tables`, the perplexity chapter's prompt pairs).
    Booleans are 0/1 floats. For each method with a ``correct`` measure, ``<method>_decision``
    (:func:`xcomps_utils.lm.precision.decisions`); with Direct's per-token means,
    ``direct_mean_correct`` and ``direct_mean_decision``: the mean token log-probability of good
    minus bad (nats per token), decided by :func:`~xcomps_utils.lm.precision.decide` with the
    run's tolerance over the shorter sentence's tokens
    (:func:`~xcomps_utils.lm.precision.per_unit_tolerance`).

    Args:
        measures: long results of :func:`xcomps_utils.runs.execute.run` (``method``, the
            identifiers, ``order``, ``measure``, ``value``).
        pairs: ``[n, ...]`` the pairs the run scored, with ``pair_id`` and those of ``dataset``,
            ``task``, ``lang`` they carry (the join keys, :data:`KEYS`).
        methods: the methods whose measures become columns.
        how: ``"left"`` keeps every pair (NaN where a method did not score it), ``"inner"`` the
            scored ones.

    Returns:
        ``[n, ...]`` one row per pair (its key columns as text).

    Raises:
        ValueError: ``pairs`` without ``pair_id``, or two measure rows for one pair and measure.
    """
    if "pair_id" not in pairs:
        raise ValueError(f"pairs lack column 'pair_id' (have {list(pairs.columns)})")
    keys = [k for k in KEYS if k in pairs]
    m = measures[measures["method"].isin(list(methods))]
    if "order" in m:
        m = m[m["order"].fillna("") == ""]
    if "layer" in m:
        m = m[m["layer"].isna() | (m["layer"] < 0)]
    out = pairs.assign(**{k: pairs[k].astype(str) for k in keys})
    if len(m):
        m = m.assign(**{k: m[k].astype(str) for k in keys},
                     column=m["method"] + "_" + m["measure"])
        dup = m.duplicated(keys + ["column"])
        if dup.any():
            ex = m.loc[dup, keys + ["column"]].head(3).to_dict("records")
            raise ValueError(f"{int(dup.sum())} measure rows repeat a pair and measure, e.g. "
                             f"{ex}: pass the measures of one run per method")
        w = m.pivot(index=keys, columns="column", values="value")
        w.columns.name = None
        out = out.merge(w.reset_index(), on=keys, how=how)
    elif how == "inner":
        out = out.iloc[:0]
    if "direct_logprob_mean_good" in out:
        d_mean = (out["direct_logprob_mean_good"] - out["direct_logprob_mean_bad"]).to_numpy(float)
        out["direct_mean_correct"] = np.where(np.isfinite(d_mean), d_mean > 0, np.nan)
        if {"direct_n_tokens_good", "direct_n_tokens_bad"} <= set(out):
            tol = out.get("direct_near_tie_tolerance", pd.Series(0.0, index=out.index))
            out["direct_mean_decision"] = decide(d_mean, per_unit_tolerance(
                tol.fillna(0), out["direct_n_tokens_good"], out["direct_n_tokens_bad"]))
    for method in methods:
        if f"{method}_correct" in out:
            out[f"{method}_decision"] = decisions(out, method)
    return out
