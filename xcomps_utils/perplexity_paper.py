"""The token-level perplexity paper (Prins et al., 2026, arXiv 2603.29396) on this run: its
tables and its claims.

The analysis layer of the token-level chapters. The method (prompt pairs, aligned token groups,
plain and normalized proportions) is :mod:`xcomps_utils.perplexity`; here: per-item and
per-order tables (:func:`item_summary`, :func:`order_table`), the pivotal tokens' share of a
prompt pair's difference measured three ways (:func:`prompt_pair_measures`), and the paper's
claims as tests (:func:`above_chance`, :func:`pivotal_rarely_whole`,
:func:`pivotal_carries_most`, :func:`pivotal_influence`, :func:`pivotal_direction`,
:func:`order_effect`), run together by :func:`claim_tests` (machinery:
:mod:`xcomps_utils.claims`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import claims
from .claims import SESOI, ClaimTest, decided_rows, evaluate_claim

__all__ = ["item_summary", "prompt_pair_measures", "PRIMARY", "claim_tests", "order_table",
           "above_chance", "pivotal_rarely_whole", "pivotal_carries_most", "pivotal_influence",
           "pivotal_direction", "order_effect", "PPL_SOURCE"]

PPL_SOURCE = "Prins et al. (2026), perplexed for the right reason, §2–4"


def item_summary(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per item: ``accuracy`` = mean of ``correct`` over its prompt pairs (8 with the shipped
    wordings), and the mean of every proportion column."""
    cols = [c for c in metrics.columns if c.startswith(("plain_", "norm_"))]
    g = metrics.groupby("item", sort=True)
    out = g[cols].mean()
    out.insert(0, "prompt_pairs", g.size())
    out.insert(1, "accuracy", g["correct"].mean())
    return out.reset_index()


def prompt_pair_measures(groups: pd.DataFrame, metrics: pd.DataFrame | None = None,
                         unit: str = "ppl") -> pd.DataFrame:
    """The pivotal tokens' share of a prompt pair's difference, measured three ways, from the
    aligned groups (the ``ppl_groups`` detail of a ``token_ppl`` run).

    With ``d_g = PPL_B(g) - PPL_A(g)`` (``unit="ppl"``) or ``s_B(g) - s_A(g)`` (``"s"``), per
    (task, pair_id, wording, order):

    * ``whole_<unit>`` = ``Σ_g d_g``, the total (signed) difference, and ``paper_plain_pivotal_<unit>``
      = ``Σ_pivotal |d_g| / |Σ_g d_g|``: the plain proportion with the paper's denominator, "the
      total PPL difference between the two prompts" (Prins et al. 2026, §2), reconstructed as the
      sum of the groups' differences (the paper's prompt-level PPL difference is on another
      scale than token-level ΔPPL). It exceeds 1 when other tokens pull the other way.
      ``pivotal_whole`` is 1 where the pivotal groups, *in the total's direction*, reach the
      whole of it, ``Σ_pivotal d_g / Σ_g d_g >= 1`` (pivotal tokens pushing against the total
      explain none of it), else 0; NaN when the total is 0.
    * ``influence_pivotal_<unit>`` = ``mean_pivotal |d_g| / Σ|d| - mean_all |d_g| / Σ|d|``: the
      *average* pivotal group's share minus the average group's (``1 / n_groups``); 0 for a
      pivotal group like a random group, whatever its sign.
    * ``direction_pivotal_<unit>`` = ``Σ_pivotal d_g / Σ_pivotal |d_g|`` in [-1, 1].
    * ``norm_avg_pivotal_<unit>`` = ``mean_pivotal d_g / Σ|d| - median_all d_g / Σ|d|``: the
      paper's normalized proportion as its text says (the average over pivotal tokens); the
      stored ``norm_pivotal_<unit>`` is the sum over pivotal groups, ``n_pivotal`` times this.

    Args:
        groups: aligned groups with ``task``, ``pair_id``, ``wording``, ``order``,
            ``s_correct``, ``s_incorrect``, ``category``.
        metrics: the widened per-prompt-pair measures; when given, the new columns are joined
            to it.

    Returns:
        one row per prompt pair (or ``metrics`` with the columns added); a prompt pair without
        a pivotal group or with no difference has NaN.
    """
    keys = ["task", "pair_id", "wording", "order"]
    missing = [c for c in keys + ["s_correct", "s_incorrect", "category"] if c not in groups]
    if missing:
        raise KeyError(f"groups need column(s) {missing}; they have {list(groups.columns)}")
    g = groups[keys + ["s_correct", "s_incorrect", "category"]].copy()
    if unit == "ppl":
        g["d"] = np.exp(g["s_incorrect"]) - np.exp(g["s_correct"])
    elif unit == "s":
        g["d"] = g["s_incorrect"] - g["s_correct"]
    else:
        raise ValueError(f"unit must be 'ppl' or 's', got {unit!r}")
    g["a"] = g["d"].abs()
    g["piv"] = g["category"] == "pivotal"
    by = g.groupby(keys, sort=False)
    total_abs = by["a"].transform("sum")
    with np.errstate(invalid="ignore", divide="ignore"):
        g["share"] = g["a"] / total_abs
        g["signed"] = g["d"] / total_abs
    agg = by.agg(whole=("d", "sum"), n=("d", "size"),
                 median_signed=("signed", "median"))
    p = g[g["piv"]].groupby(keys, sort=False).agg(piv_abs=("a", "sum"), piv_d=("d", "sum"),
                                                  piv_share=("share", "mean"),
                                                  piv_signed=("signed", "mean"))
    out = agg.join(p, how="left")
    with np.errstate(invalid="ignore", divide="ignore"):
        paper = out["piv_abs"] / out["whole"].abs()
        out[f"whole_{unit}"] = out["whole"]
        out[f"paper_plain_pivotal_{unit}"] = paper.where(out["whole"] != 0)
        signed = out["piv_d"] / out["whole"]
        out["pivotal_whole"] = (signed >= 1).astype(float).where(
            (out["whole"] != 0) & out["piv_d"].notna())
        out[f"influence_pivotal_{unit}"] = out["piv_share"] - 1 / out["n"]
        out[f"direction_pivotal_{unit}"] = (out["piv_d"] / out["piv_abs"]).where(out["piv_abs"] > 0)
        out[f"norm_avg_pivotal_{unit}"] = out["piv_signed"] - out["median_signed"]
    cols = [f"whole_{unit}", f"paper_plain_pivotal_{unit}", "pivotal_whole",
            f"influence_pivotal_{unit}", f"direction_pivotal_{unit}", f"norm_avg_pivotal_{unit}"]
    out = out[cols].reset_index()
    if metrics is None:
        return out
    m = metrics.drop(columns=[c for c in cols if c in metrics])
    out["pair_id"] = out["pair_id"].astype(m["pair_id"].dtype)
    return m.merge(out, on=keys, how="left")


#: the paper's primary claims (a confirmatory family): the nonsense control's pivotal token
#: carries most of the difference; in the main tasks, pivotal tokens rarely explain it whole
PRIMARY = ("pivotal_carries_most", "pivotal_rarely_whole")


def claim_tests(metrics: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> list:
    """The paper's claims tested per task on one run (:mod:`xcomps_utils.claims`), items
    (minimal pairs) resampled with all their prompt pairs, in two families:

    * **confirmatory** (the paper's primary claims, Holm over the family): in the nonsense
      control, the pivotal token carries most of ``Σ|ΔPPL|``; in every other task, pivotal tokens
      rarely explain the whole difference (the paper's denominator, so "whole" is reachable);
    * **exploratory** (Holm over tasks x claims): accuracy above chance; an order effect
      (two-sided); pivotal influence beyond an average token (unsigned); pivotal direction
      (signed).

    Args:
        metrics: the widened ``token_ppl`` measures with :func:`prompt_pair_measures`' columns
            (one row per prompt pair, with ``task``, ``pair_id``, ``order``, ``correct``,
            ``plain_pivotal_ppl``, ``pivotal_whole``, ``influence_pivotal_ppl``,
            ``direction_pivotal_ppl``).

    Returns:
        a list of :class:`xcomps_utils.claims.ClaimTest`, confirmatory first.
    """
    kw = {"n_boot": n_boot, "seed": seed}
    primary, explore = [], []
    for task in metrics["task"].unique():
        if task == "nonsense":
            primary.append(pivotal_carries_most(metrics, task, **kw))
        else:
            primary.append(pivotal_rarely_whole(metrics, task, **kw))
        explore.append(above_chance(metrics, task, accuracy="correct", **kw))
        explore.append(order_effect(metrics, task, **kw))
        explore.append(pivotal_influence(metrics, task, **kw))
        explore.append(pivotal_direction(metrics, task, **kw))
    return (claims.correct(primary, "token-level perplexity, primary claims", "confirmatory")
            + claims.correct(explore, "token-level perplexity, per task", "exploratory"))


def order_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per task, wording and presentation order (the fraction of prompt pairs where the
    correct prompt is less perplexed), with the number of prompt pairs: where an order effect
    comes from."""
    t = metrics.groupby(["task", "wording", "order"], sort=False)["correct"].agg(["mean", "size"])
    return t.rename(columns={"mean": "accuracy", "size": "prompt pairs"}).reset_index()


# --- the paper's claims ---------------------------------------------------------------------

def above_chance(items: pd.DataFrame, task: str, accuracy: str = "accuracy",
                 item: str = "pair_id", **kw) -> ClaimTest:
    """*The correct prompt gets the lower perplexity* (Prins et al. 2026, hypothesis 1):
    mean accuracy minus chance (0.5), items resampled. Null: accuracy 0.5.

    Args:
        items: one row per item (or per item x wording x order) with ``accuracy`` in [0, 1].
    """
    d = items[items["task"] == task] if "task" in items else items
    return evaluate_claim("above_chance", "the correct prompt gets lower perplexity than the "
                          "incorrect one", "mean accuracy minus chance (0.5)", d,
                          (accuracy, None, lambda m, _: m[:, 0] - 0.5), item, +1, 0.0, "item",
                          PPL_SOURCE, scope=task, null_hypothesis="accuracy is 0.5 (chance)",
                          sesoi=SESOI["accuracy"], **kw)


def _mean_claim(claim, hypothesis, metrics, task, value, item, direction, null, kw,
                null_hypothesis="", measure=None):
    """A claim about the mean of one column over a task's prompt pairs, items resampled."""
    d = metrics[metrics["task"] == task].dropna(subset=[value])
    return evaluate_claim(claim, hypothesis, measure or f"mean {value}", d,
                          (value, None, lambda m, _: m[:, 0]), item, direction, null, "item",
                          PPL_SOURCE, scope=task, null_hypothesis=null_hypothesis,
                          sesoi=SESOI["proportion"], **kw)


def pivotal_rarely_whole(metrics: pd.DataFrame, task: str, value: str = "pivotal_whole",
                         item: str = "pair_id", **kw) -> ClaimTest:
    """*Pivotal tokens rarely offer a complete explanation of the perplexity shift* (Prins et
    al. 2026, §3, "Results on normalized proportion").

    With the paper's own denominator, the *total* (signed) perplexity difference, the pivotal
    groups can carry all of it or more (the other tokens pulling the other way), so "whole" is
    reachable: ``pivotal_whole`` is 1 for a prompt pair whose pivotal groups, in the total's
    direction, reach the total (:func:`prompt_pair_measures`). Effect:
    the share of prompt pairs the pivotal tokens explain whole; the hypothesis is that it is
    below one half ("rarely", a substantive threshold), contradicted when it is above. Unit:
    the item (with all its prompt pairs). Pivotal tokens with no role at all also explain the
    whole rarely (about 10-20% of prompt pairs under noise): that they matter is
    :func:`pivotal_influence`'s question, not this one's.
    """
    return _mean_claim("pivotal_rarely_whole", "pivotal tokens rarely explain the whole "
                       "perplexity difference", metrics, task, value, item, -1, 0.5, kw,
                       "pivotal tokens explain the whole difference in half of the prompt pairs",
                       "share of prompt pairs whose pivotal |ΔPPL| reaches the total ΔPPL")


def pivotal_carries_most(metrics: pd.DataFrame, task: str = "nonsense",
                         value: str = "plain_pivotal_ppl", item: str = "pair_id",
                         **kw) -> ClaimTest:
    """*In the nonsense control, most of the perplexity difference is caused by the single
    differing real word* (Prins et al. 2026, §3): the mean plain pivotal proportion (share of
    ``Σ_g |ΔPPL_g|``) is above 0.5; below 0.5 contradicts it. Unit: the item.
    """
    return _mean_claim("pivotal_carries_most", "the pivotal token carries most of the "
                       "perplexity difference", metrics, task, value, item, +1, 0.5, kw,
                       "the pivotal token carries half of Σ|ΔPPL|",
                       "mean plain proportion of Σ|ΔPPL| on pivotal tokens")


def pivotal_influence(metrics: pd.DataFrame, task: str, value: str = "influence_pivotal_ppl",
                      item: str = "pair_id", **kw) -> ClaimTest:
    """*Pivotal tokens contribute more to the perplexity difference than a typical token*,
    whatever the direction (Prins et al. 2026, §2, the normalized proportion's first reading).

    Effect: the mean over prompt pairs of the average pivotal group's share of ``Σ|ΔPPL|``
    minus the average group's share (``1 / n_groups``), the paper's *average* (not the sum over
    pivotal groups). The paper subtracts the *median* group's share; a median group sits below
    the average in the skewed distributions of ΔPPL, so a pivotal group drawn at random would
    already score above the median: the average is the share a random group has, and 0 is the
    null. Unit: the item.
    """
    return _mean_claim("pivotal_influence", "pivotal tokens move perplexity more than a typical "
                       "token (either direction)", metrics, task, value, item, +1, 0.0, kw,
                       "the pivotal group's share of Σ|ΔPPL| is that of an average group",
                       "mean pivotal minus average group share of Σ|ΔPPL|")


def pivotal_direction(metrics: pd.DataFrame, task: str, value: str = "direction_pivotal_ppl",
                      item: str = "pair_id", **kw) -> ClaimTest:
    """*Pivotal tokens move perplexity in the correct direction* (Prins et al. 2026, §2, the
    normalized proportion's sign).

    Effect: the mean of ``Σ_pivotal ΔPPL_g / Σ_pivotal |ΔPPL_g|`` (in [-1, 1]; +1: every pivotal
    group makes the incorrect prompt more perplexed). Null 0: the pivotal groups point either
    way alike. Unit: the item.
    """
    return _mean_claim("pivotal_direction", "pivotal tokens make the incorrect prompt more "
                       "perplexed", metrics, task, value, item, +1, 0.0, kw,
                       "the pivotal groups' ΔPPL is as often negative as positive",
                       "mean signed share of pivotal ΔPPL (-1 to 1)")


def order_effect(prompts: pd.DataFrame, task: str, correct: str = "correct",
                 first: str = "good_first", item: str = "pair_id", margin: float = 0.05,
                 **kw) -> ClaimTest:
    """*Accuracy is sensitive to presentation order* (Prins et al. 2026, §3, shown for the
    nonsense task): accuracy when the ``first`` order is presented minus accuracy in the other
    order, two-sided; an effect shown within ±``margin`` (two one-sided tests) contradicts it.
    Unit: the item (both orders of one item are paired).

    Args:
        prompts: one row per prompt pair with ``task``, ``order``, the item column and a 0/1
            ``correct`` (ties: see the module docstring).
    """
    d = decided_rows(prompts[prompts["task"] == task], correct)
    d = d.assign(_first=(d["order"] == first).map({True: "first", False: "other"}))

    def combine(m, lv):
        if "first" not in lv or "other" not in lv:
            return np.full(len(m), np.nan)
        return m[:, lv.index("first")] - m[:, lv.index("other")]
    return evaluate_claim("order_effect", "accuracy depends on the order the two sentences are "
                          "presented in", f"accuracy ({first.replace('_', ' ')}) minus accuracy "
                          f"(other order)", d, (correct, "_first", combine), item, 0, 0.0,
                          "item", PPL_SOURCE, scope=task, margin=margin,
                          null_hypothesis="accuracy is the same in both orders",
                          sesoi=margin, **kw)
