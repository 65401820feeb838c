"""The token-level perplexity paper (Prins et al., 2026, arXiv 2603.29396) on this run: its
tables and its claims.

The analysis layer of the token-level chapters. The method (prompt pairs, aligned token groups,
plain and normalized proportions) is :mod:`xcomps_utils.methods.perplexity`; here: per-item and
per-order tables (:func:`item_summary`, :func:`order_table`), the pivotal tokens' share of a
prompt pair's difference, per token and matched by length (:func:`prompt_pair_measures`), and
the paper's claims as tests (:func:`above_chance`, :func:`pivotal_rarely_whole`,
:func:`pivotal_carries_most`, :func:`pivotal_influence`, :func:`pivotal_direction`,
:func:`order_effect`), run together by :func:`claim_tests` (machinery:
:mod:`xcomps_utils.analysis.claims`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from . import claims
from .claims import ClaimTest, evaluate_claim, SESOI
from .scored import decided_rows

__all__ = ["item_summary", "prompt_pair_measures", "PRIMARY", "claim_tests", "order_table",
           "above_chance", "pivotal_rarely_whole", "pivotal_carries_most", "pivotal_influence",
           "pivotal_direction", "order_effect", "PPL_SOURCE", "sign_flip_p"]

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
    """The pivotal tokens' share of a prompt pair's difference, **per token**, from the aligned
    groups (the ``ppl_groups`` detail of a ``token_ppl`` run; nothing is recomputed, so run ids
    and stored numbers stay as they are).

    A group is usually one token on each side; a group of ``k_A`` tokens in the correct prompt
    and ``k_B`` in the incorrect one (a token straddling a slot boundary) has the per-token
    difference ``δ_g = exp(s_B(g) / k_B) - exp(s_A(g) / k_A)`` (``unit="ppl"``: the group's
    perplexity, ``exp`` of its *mean* surprisal, as the paper defines perplexity) or
    ``s_B(g) / k_B - s_A(g) / k_A`` (``"s"``, nats), and counts for ``n_g = (k_A + k_B) / 2``
    tokens. ``exp`` of a group's *summed* surprisal would multiply a several-token group's
    difference. With ``Z = Σ_g n_g |δ_g|`` (the paper's sum of per-token ``|ΔPPL|``), per
    (task, pair_id, wording, order):

    * ``whole_<unit>`` = ``Σ_g n_g δ_g``, the signed total;
    * ``plain_tok_pivotal_<unit>`` = ``Σ_pivotal n_g |δ_g| / Z``, the plain proportion on
      per-token differences;
    * ``signed_pivotal_<unit>`` = ``Σ_pivotal n_g δ_g / Z`` and ``signed_rest_<unit>`` (the same
      over the non-pivotal groups): the two parts of the signed total, ``whole / Z`` in sum;
    * ``influence_pivotal_<unit>``: how often a pivotal token's ``|δ_g|`` exceeds that of a
      non-pivotal group *of the same token count* (``(k_A, k_B)``) in its prompt pair (ties
      count half), minus 1/2, averaged over pivotal tokens (weights ``n_g``), in [-1/2, 1/2];
      NaN when a pivotal group's count has no non-pivotal group (no like-for-like comparison).
      0 for pivotal tokens like other tokens of their length, however many they are; a rank,
      not a share, because the mean of the skewed shares decides a null too often on one side;
    * ``direction_pivotal_<unit>`` = ``Σ_pivotal n_g δ_g / Σ_pivotal n_g |δ_g|`` in [-1, 1];
    * ``norm_avg_pivotal_<unit>``: the paper's normalized proportion as its text says, the
      average over pivotal tokens of ``δ_g / Z`` minus the median over groups;
    * ``n_pivotal_tokens``: ``Σ_pivotal n_g``.

    Args:
        groups: aligned groups with ``task``, ``pair_id``, ``wording``, ``order``,
            ``s_correct``, ``s_incorrect``, ``n_tokens_correct``, ``n_tokens_incorrect``,
            ``category``.
        metrics: the widened per-prompt-pair measures; when given, the new columns are joined
            to it.
        unit: ``"ppl"`` or ``"s"``.

    Returns:
        one row per prompt pair (or ``metrics`` with the columns added); a prompt pair without
        a pivotal group or with no difference has NaN, and so has one with a group that has no
        token on one side (an insertion: no per-token difference; callers count these pairs).

    Raises:
        KeyError: a column is missing. ValueError: an unknown ``unit``.
    """
    keys = ["task", "pair_id", "wording", "order"]
    need = ["s_correct", "s_incorrect", "n_tokens_correct", "n_tokens_incorrect", "category"]
    missing = [c for c in keys + need if c not in groups]
    if missing:
        raise KeyError(f"groups need column(s) {missing}; they have {list(groups.columns)}")
    if unit not in ("ppl", "s"):
        raise ValueError(f"unit must be 'ppl' or 's', got {unit!r}")
    pp = groups.groupby(keys, sort=False).ngroup().to_numpy()
    n_pp = int(pp.max()) + 1 if len(pp) else 0
    ka = groups["n_tokens_correct"].to_numpy(float)
    kb = groups["n_tokens_incorrect"].to_numpy(float)
    with np.errstate(invalid="ignore"):  # a group with no token on one side: NaN, as documented
        mean_a = groups["s_correct"].to_numpy(float) / ka
        mean_b = groups["s_incorrect"].to_numpy(float) / kb
    d = np.exp(mean_b) - np.exp(mean_a) if unit == "ppl" else mean_b - mean_a
    n = (ka + kb) / 2
    piv = (groups["category"] == "pivotal").to_numpy()

    def per_pp(w):
        return np.bincount(pp, weights=w, minlength=n_pp)
    z, piv_n = per_pp(n * np.abs(d)), per_pp(n * piv)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = d / z[pp]
        # each pivotal group against the non-pivotal groups of its length, in its prompt pair
        length = pd.factorize(ka * 100003 + kb)[0]
        cell = pp * (length.max() + 1 if len(length) else 1) + length
        mine = pd.DataFrame({"cell": cell[piv], "x": np.abs(d[piv])}).reset_index()
        pairs = mine.merge(pd.DataFrame({"cell": cell[~piv], "y": np.abs(d[~piv])}), on="cell")
        wins = ((pairs["x"] > pairs["y"]) + 0.5 * (pairs["x"] == pairs["y"])).groupby(
            pairs["index"]).mean().reindex(range(len(mine))).to_numpy()
        rank = np.full(len(d), np.nan)
        rank[piv] = wins
        unmatched = per_pp(piv & np.isnan(rank)) > 0
        excess = per_pp(np.where(piv, n * np.nan_to_num(rank - 0.5), 0.0))
        piv_a, piv_c = per_pp(n * np.abs(d) * piv), per_pp(n * d * piv)
        has = (piv_n > 0) & (z > 0)
        res = groups[keys].drop_duplicates().reset_index(drop=True)
        res[f"whole_{unit}"] = per_pp(n * d)
        res[f"plain_tok_pivotal_{unit}"] = np.where(has, piv_a / z, np.nan)
        res[f"signed_pivotal_{unit}"] = np.where(has, piv_c / z, np.nan)
        res[f"signed_rest_{unit}"] = np.where(has, per_pp(n * d * ~piv) / z, np.nan)
        res[f"influence_pivotal_{unit}"] = np.where(has & ~unmatched, excess / piv_n, np.nan)
        res[f"direction_pivotal_{unit}"] = np.where(has & (piv_a > 0), piv_c / piv_a, np.nan)
        median_v = pd.Series(v).groupby(pp).median().to_numpy()
        res[f"norm_avg_pivotal_{unit}"] = np.where(has, per_pp(n * v * piv) / piv_n - median_v,
                                                   np.nan)
        res["n_pivotal_tokens"] = piv_n
    cols = [c for c in res.columns if c not in keys]
    if metrics is None:
        return res
    m = metrics.drop(columns=[c for c in cols if c in metrics])
    res["pair_id"] = res["pair_id"].astype(m["pair_id"].dtype)
    return m.merge(res, on=keys, how="left")


#: the paper's primary claims (a confirmatory family): the nonsense control's pivotal token
#: carries most of the difference; in the main tasks, pivotal tokens rarely explain it whole
#: (other tokens carry a systematic part)
PRIMARY = ("pivotal_carries_most", "pivotal_rarely_whole")


def claim_tests(metrics: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> list:
    """The paper's claims tested per task on one run (:mod:`xcomps_utils.analysis.claims`), items
    (minimal pairs) resampled with all their prompt pairs, in two families:

    * **confirmatory** (the paper's primary claims, Holm over the family): in the nonsense
      control, the pivotal token carries most of the mean signed difference; in every other task,
      pivotal tokens rarely explain it whole (the other tokens carry a systematic part in the
      total's direction, against sign flips of their part);
    * **exploratory** (Holm over tasks x claims): accuracy above chance; an order effect
      (two-sided); pivotal influence beyond a token of the same length (unsigned); pivotal
      direction (signed).

    Every share is on per-token differences (:func:`prompt_pair_measures`).

    Args:
        metrics: the widened ``token_ppl`` measures with :func:`prompt_pair_measures`' columns
            (one row per prompt pair, with ``task``, ``pair_id``, ``order``, ``correct``,
            ``signed_pivotal_ppl``, ``signed_rest_ppl``, ``influence_pivotal_ppl``,
            ``direction_pivotal_ppl``).

    Returns:
        a list of :class:`xcomps_utils.analysis.claims.ClaimTest`, confirmatory first.
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


def sign_flip_p(fixed: np.ndarray, flipped: np.ndarray, n_rows: int, n_perm: int = 1999,
                seed: int = 0, exact_limit: int = 4096) -> tuple[float, float, float, float]:
    """A sign-flip test of the part of a total that is not fixed (a general helper).

    Per unit (item) ``i``, ``fixed[i]`` and ``flipped[i]`` are sums over its rows of two parts
    of a signed total. The statistic is the flipped part's mean in the total's direction,
    ``S = sign(Σ fixed + Σ flipped) · Σ flipped / n_rows``. Under the null that the flipped part
    of every unit is symmetric about 0 given the fixed part, flipping the sign of each unit's
    flipped part (all its rows together: rows of one unit are not independent) leaves the data's
    distribution unchanged; the orientation is recomputed after every flip, so the correlation
    of the flipped part with the total it helps orient is in the null distribution too.

    Args:
        fixed, flipped: ``[n_units]`` sums.
        n_rows: the number of rows behind them (the mean's denominator).
        n_perm: random flips when there are more than ``exact_limit`` distinct ones (``2 **
            n_units``); otherwise every flip is enumerated (an exact test).

    Returns:
        ``(S, p_above, p_below, smallest_p)``: one-sided p-values of ``S`` being above / below
        the null distribution and the smallest p the test can reach
        (:func:`xcomps_utils.analysis.claims.permutation_p`).
    """
    fixed, flipped = np.asarray(fixed, float), np.asarray(flipped, float)
    n = len(fixed)
    exact = 2.0 ** n <= exact_limit
    if exact:
        eps = 1 - 2 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
    else:
        eps = np.random.default_rng(seed).choice([-1.0, 1.0], size=(n_perm, n))

    def stat(e):
        r = e @ flipped
        return np.sign(fixed.sum() + r) * r / n_rows
    observed = float(stat(np.ones(n)))
    p_above, p_below, smallest = claims.permutation_p(observed, stat(eps), exact, +1)
    return observed, p_above, p_below, smallest


def pivotal_rarely_whole(metrics: pd.DataFrame, task: str, unit: str = "ppl",
                         item: str = "pair_id", n_perm: int = 1999, **kw) -> ClaimTest:
    """*Pivotal tokens rarely offer a complete explanation* of the perplexity shift (Prins et
    al. 2026, §3, "Results on normalized proportion"), read as: **the other tokens carry a
    systematic share of the difference in the total's direction**.

    Per prompt pair, the signed total of per-token differences splits into a pivotal and a
    non-pivotal part, ``signed_pivotal_<unit> + signed_rest_<unit>`` (each over ``Σ n_g |δ_g|``,
    :func:`prompt_pair_measures`). Effect: the mean non-pivotal part, signed so that positive is
    the direction of the task's mean total. Null: the non-pivotal part is mean-zero noise (the
    pivotal tokens explain the whole systematic difference), tested by flipping the sign of each
    item's non-pivotal parts (:func:`sign_flip_p`, unit: the item). Supported: the rest pushes
    with the total; contradicted: it pushes against it (the pivotal tokens carry more than the
    whole). The interval is a percentile bootstrap over items; it does not decide.
    """
    piv, rest = f"signed_pivotal_{unit}", f"signed_rest_{unit}"
    d = metrics[metrics["task"] == task].dropna(subset=[piv, rest])
    long = pd.concat([d[[item]].assign(_v=d[rest], _part="rest"),
                      d[[item]].assign(_v=d[piv] + d[rest], _part="total")], ignore_index=True)
    t = evaluate_claim("pivotal_rarely_whole", "the other tokens carry a systematic part of the "
                       "perplexity difference (pivotal tokens rarely explain it whole)",
                       f"mean non-pivotal share of Σ|Δ{unit.upper()}| in the total's direction",
                       long, ("_v", "_part", lambda m, _: np.sign(m[:, 1]) * m[:, 0]), item,
                       +1, 0.0, "item", PPL_SOURCE, scope=task,
                       null_hypothesis="the non-pivotal tokens' difference is mean-zero (the "
                       "pivotal tokens explain the whole systematic difference)",
                       sesoi=SESOI["proportion"], **kw)
    if len(d) == 0:
        return t
    sums = d.groupby(item, sort=False)[[piv, rest]].sum()
    _, p_up, p_down, smallest = sign_flip_p(sums[piv].to_numpy(), sums[rest].to_numpy(), len(d),
                                            n_perm, kw.get("seed", 0))
    t = replace(t, p_supported=p_up, p_contradicted=p_down,
                smallest_p=max(smallest, t.smallest_p),
                test=f"sign flips of the non-pivotal parts over items ({t.n_items} items); "
                     f"interval: {t.test}")
    return claims.finish(t, (1 - t.confidence) / 2)


def pivotal_carries_most(metrics: pd.DataFrame, task: str = "nonsense", unit: str = "ppl",
                         item: str = "pair_id", **kw) -> ClaimTest:
    """*In the nonsense control, most of the perplexity difference is caused by the single
    differing real word* (Prins et al. 2026, §3).

    Effect: the pivotal tokens' part of the mean signed total, ``mean(signed_pivotal) /
    mean(signed_pivotal + signed_rest)`` over prompt pairs (per-token differences,
    :func:`prompt_pair_measures`), above 0.5 supports it, below contradicts it. Signed, so that
    the noise of the other tokens, which cancels over prompt pairs, is not counted as part of the
    difference (with absolute values, 30 noisy tokens outweigh a pivot that carries the whole
    effect); per token, so that a pivot of several tokens is not multiplied. Unit: the item.
    """
    piv, rest = f"signed_pivotal_{unit}", f"signed_rest_{unit}"
    d = metrics[metrics["task"] == task].dropna(subset=[piv, rest])
    long = pd.concat([d[[item]].assign(_v=d[piv], _part="pivotal"),
                      d[[item]].assign(_v=d[piv] + d[rest], _part="total")], ignore_index=True)
    return evaluate_claim("pivotal_carries_most", "the pivotal token carries most of the "
                          "perplexity difference", f"pivotal part of the mean signed "
                          f"Δ{unit.upper()} (per token)", long,
                          ("_v", "_part", lambda m, _: m[:, 0] / m[:, 1]), item, +1, 0.5,
                          "item", PPL_SOURCE, scope=task,
                          null_hypothesis="the pivotal tokens carry half of the mean signed "
                          "difference", sesoi=SESOI["proportion"], **kw)


def pivotal_influence(metrics: pd.DataFrame, task: str, value: str = "influence_pivotal_ppl",
                      item: str = "pair_id", **kw) -> ClaimTest:
    """*Pivotal tokens contribute more to the perplexity difference than a typical token*,
    whatever the direction (Prins et al. 2026, §2, the normalized proportion's first reading).

    Effect: the mean over prompt pairs of how often a pivotal token's ``|δ_g|`` exceeds that of
    a non-pivotal group of the same token count, minus 1/2 (:func:`prompt_pair_measures`): per
    token, so that a pivot of more tokens is not a larger effect, and against like-length groups.
    The paper subtracts the *median* token's share, which a random token already exceeds on
    average in the skewed distributions of ΔPPL; against other tokens of its length a random
    token wins half the time, so 0 is the null. (The mean of shares, a first version, decided
    11% of simulated nulls, one side: the shares are too skewed for a percentile bootstrap.)
    Unit: the item.
    """
    return _mean_claim("pivotal_influence", "pivotal tokens move perplexity more than a typical "
                       "token (either direction)", metrics, task, value, item, +1, 0.0, kw,
                       "a pivotal token's |ΔPPL| exceeds that of a token of its length half the "
                       "time", "how often a pivotal token's |ΔPPL| exceeds a same-length token's, "
                       "minus 1/2")


def pivotal_direction(metrics: pd.DataFrame, task: str, value: str = "direction_pivotal_ppl",
                      item: str = "pair_id", **kw) -> ClaimTest:
    """*Pivotal tokens move perplexity in the correct direction* (Prins et al. 2026, §2, the
    normalized proportion's sign).

    Effect: the mean of ``Σ_pivotal n_g δ_g / Σ_pivotal n_g |δ_g|`` (per-token differences, in
    [-1, 1]; +1: every pivotal token makes the incorrect prompt more perplexed). Null 0: the
    pivotal tokens point either way alike. Unit: the item.
    """
    return _mean_claim("pivotal_direction", "pivotal tokens make the incorrect prompt more "
                       "perplexed", metrics, task, value, item, +1, 0.0, kw,
                       "the pivotal tokens' ΔPPL is as often negative as positive",
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
