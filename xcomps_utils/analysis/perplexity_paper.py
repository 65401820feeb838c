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

from . import claims, contract, families
from .claims import ClaimTest, evaluate_claim
from .families import SESOI
from .scored import decided_rows

__all__ = ["item_summary", "prompt_pair_measures", "PRIMARY", "claim_tests", "order_table",
           "above_chance", "pivotal_rarely_whole", "pivotal_carries_most", "pivotal_influence",
           "pivotal_direction", "order_effect", "PPL_SOURCE", "sign_flip_p", "UNIT",
           "TOKEN_CLAIMS", "ppl_reading", "length_decisions", "label_share", "simulate_groups",
           "simulate_prompt_pairs", "CONTRACTS"]

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

    * ``whole_<unit>`` = ``Σ_g n_g δ_g``, the signed total, and ``whole_pivotal_<unit>`` =
      ``Σ_pivotal n_g δ_g``, its pivotal part (NaN without a pivotal group);
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
    * ``n_pivotal_tokens``: ``Σ_pivotal n_g``; ``tokens_correct``, ``tokens_incorrect``: the
      prompts' token counts.

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
        res[f"whole_pivotal_{unit}"] = np.where(piv_n > 0, piv_c, np.nan)
        res[f"plain_tok_pivotal_{unit}"] = np.where(has, piv_a / z, np.nan)
        res[f"signed_pivotal_{unit}"] = np.where(has, piv_c / z, np.nan)
        res[f"signed_rest_{unit}"] = np.where(has, per_pp(n * d * ~piv) / z, np.nan)
        res[f"influence_pivotal_{unit}"] = np.where(has & ~unmatched, excess / piv_n, np.nan)
        res[f"direction_pivotal_{unit}"] = np.where(has & (piv_a > 0), piv_c / piv_a, np.nan)
        median_v = pd.Series(v).groupby(pp).median().to_numpy()
        res[f"norm_avg_pivotal_{unit}"] = np.where(has, per_pp(n * v * piv) / piv_n - median_v,
                                                   np.nan)
        res["n_pivotal_tokens"] = piv_n
        res["tokens_correct"], res["tokens_incorrect"] = per_pp(ka), per_pp(kb)
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

#: the unit the token-level claims decide in: per-token differences of surprisal (nats). A
#: difference of perplexities, ``exp(s_B) - exp(s_A)``, turns surprisal noise of mean zero into a
#: positive mean (Jensen's inequality) and makes a merely rarer token carry more of it; the
#: paper's unit, ``"ppl"``, is printed beside as a description (:func:`ppl_reading`)
UNIT = "s"

#: the four claims on the pivotal tokens (each takes ``unit``)
TOKEN_CLAIMS = ("pivotal_rarely_whole", "pivotal_carries_most", "pivotal_influence",
                "pivotal_direction")


def claim_tests(metrics: pd.DataFrame, n_boot: int = 2000, seed: int = 0, unit: str = UNIT,
                chance: str | float = "fewer_tokens_wins") -> list:
    """The paper's claims tested per task on one run (:mod:`xcomps_utils.analysis.claims`), items
    (minimal pairs) resampled with all their prompt pairs, in two families:

    * **confirmatory** (the paper's primary claims, Holm over the family): in the nonsense
      control, the pivotal token carries most of the mean signed difference; in every other task,
      pivotal tokens rarely explain it whole (the other tokens carry a systematic part in the
      total's direction, against sign flips of their part);
    * **exploratory** (Holm over tasks x claims): accuracy above its drawn chance level
      (``chance``: a label-blind decision per prompt pair, :func:`length_decisions`, or a
      number); an order effect (two-sided); the pivotal tokens' response to the labels
      (unsigned, :func:`pivotal_influence`); pivotal direction (signed).

    Every share is on per-token differences in ``unit`` (:func:`prompt_pair_measures`;
    surprisal, nats, by default).

    Args:
        metrics: the widened ``token_ppl`` measures with :func:`prompt_pair_measures`' columns
            in ``unit`` (one row per prompt pair, with ``task``, ``pair_id``, ``wording``,
            ``order``, ``correct``).

    Returns:
        a list of :class:`xcomps_utils.analysis.claims.ClaimTest`, confirmatory first.
    """
    kw = {"n_boot": n_boot, "seed": seed}
    if isinstance(chance, str) and chance not in metrics:
        metrics = length_decisions(metrics)
    primary, explore = [], []
    for task in metrics["task"].unique():
        if task == "nonsense":
            primary.append(pivotal_carries_most(metrics, task, unit=unit, **kw))
        else:
            primary.append(pivotal_rarely_whole(metrics, task, unit=unit, **kw))
        explore.append(above_chance(metrics, task, accuracy="correct", chance=chance, **kw))
        explore.append(order_effect(metrics, task, **kw))
        explore.append(pivotal_influence(metrics, task, unit=unit, **kw))
        explore.append(pivotal_direction(metrics, task, unit=unit, **kw))
    return (families.correct(primary, "token-level perplexity, primary claims", "confirmatory")
            + families.correct(explore, "token-level perplexity, per task", "exploratory"))


def ppl_reading(metrics: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """The four pivotal-token claims' effects in the paper's unit (per-token ΔPPL), per task,
    with their 95% percentile intervals over items: a **description** beside the verdicts in
    surprisal units, not a test (no verdict, no family).

    Args:
        metrics: :func:`prompt_pair_measures` columns with ``unit="ppl"``.

    Returns:
        one row per claim x task: ``claim``, ``scope``, ``measure``, ``effect``, ``ci_low``,
        ``ci_high``, ``reading`` and ``not readable because`` (a share whose denominator is not
        decided in the claim's direction, or ``""``).
    """
    rows = []
    for task in metrics["task"].unique():
        for name in TOKEN_CLAIMS:
            if name == "pivotal_carries_most" and task != "nonsense":
                continue
            if name == "pivotal_rarely_whole" and task == "nonsense":
                continue
            t = globals()[name](metrics, task, unit="ppl", n_boot=n_boot, seed=seed)
            rows.append({"claim": name, "scope": task, "measure": t.measure, "effect": t.effect,
                         "ci_low": t.ci_low, "ci_high": t.ci_high,
                         "reading": "description in ΔPPL (the paper's unit), not a test",
                         "not readable because": t.reason})
    return pd.DataFrame(rows)


def length_decisions(metrics: pd.DataFrame, pairs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Label-blind decisions per prompt pair, whose accuracy is a **drawn** chance level:
    ``fewer_tokens_wins`` (1: the correct prompt has fewer tokens, 0: more, 0.5: as many; from
    ``tokens_correct`` / ``tokens_incorrect``, :func:`prompt_pair_measures`) and, given the
    scored ``pairs`` (``task``, ``pair_id``, ``good``, ``bad``), ``shorter_first_wins`` (the
    prompt whose first slot holds the sentence of fewer characters wins; 0.5 for equal lengths).
    A rule that reads only which sentence fills which slot picks the correct prompt in one
    label order exactly when it picks the incorrect one in the other, so over both orders of an
    item its accuracy is 1/2 by the design; DUST's shorter acceptable sentences (a Direct
    score's length bias) cannot move it. These columns print that, from the run.

    Returns:
        ``metrics`` with the columns added.

    Raises:
        KeyError: a column is missing.
    """
    need = ["tokens_correct", "tokens_incorrect"]
    if any(c not in metrics for c in need):
        raise KeyError(f"metrics need {need} (prompt_pair_measures); they have "
                       f"{list(metrics.columns)}")
    a, b = metrics["tokens_correct"].to_numpy(float), metrics["tokens_incorrect"].to_numpy(float)
    out = metrics.assign(fewer_tokens_wins=np.where(a < b, 1.0, np.where(a > b, 0.0, 0.5)))
    if pairs is None:
        return out
    key = ["task", "pair_id"]
    miss = [c for c in key + ["good", "bad"] if c not in pairs]
    if miss:
        raise KeyError(f"pairs need column(s) {miss}; they have {list(pairs.columns)}")
    p = pairs[key].assign(_lg=pairs["good"].str.len(), _lb=pairs["bad"].str.len())
    p["pair_id"] = p["pair_id"].astype(out["pair_id"].dtype)
    m = out.merge(p, on=key, how="left")
    first_good = (m["order"] == "good_first").to_numpy()  # the correct prompt's first slot
    a_first = np.where(first_good, m["_lg"], m["_lb"])
    b_first = np.where(first_good, m["_lb"], m["_lg"])
    out["shorter_first_wins"] = np.where(a_first < b_first, 1.0,
                                         np.where(a_first > b_first, 0.0, 0.5))
    return out


def order_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per task, wording and presentation order (the fraction of prompt pairs where the
    correct prompt is less perplexed), with the number of prompt pairs: where an order effect
    comes from."""
    t = metrics.groupby(["task", "wording", "order"], sort=False)["correct"].agg(["mean", "size"])
    return t.rename(columns={"mean": "accuracy", "size": "prompt pairs"}).reset_index()


# --- the paper's claims ---------------------------------------------------------------------

def above_chance(items: pd.DataFrame, task: str, accuracy: str = "accuracy",
                 item: str = "pair_id", chance: float | str = 0.5, **kw) -> ClaimTest:
    """*The correct prompt gets the lower perplexity* (Prins et al. 2026, hypothesis 1):
    mean accuracy minus its chance level, items resampled.

    Args:
        items: one row per item (or per item x wording x order) with ``accuracy`` in [0, 1].
        chance: a number (0.5: chance assumed), or the column of a label-blind decision per
            row (:func:`length_decisions`: 1 it picks the correct prompt, 0.5 a tie): the
            **drawn** chance level, paired with the accuracy by item. Null: accuracy equals it.
    """
    d = items[items["task"] == task] if "task" in items else items
    if not isinstance(chance, str):
        return evaluate_claim("above_chance", "the correct prompt gets lower perplexity than "
                              "the incorrect one", f"mean accuracy minus chance ({chance:g})", d,
                              (accuracy, None, lambda m, _: m[:, 0] - chance), item, +1, 0.0,
                              "item", PPL_SOURCE, scope=task,
                              null_hypothesis=f"accuracy is {chance:g} (chance)",
                              sesoi=SESOI["accuracy"], **kw)
    if chance not in d:
        raise KeyError(f"the 'chance' parameter names column {chance!r}, which items lack "
                       f"(length_decisions adds it)")
    d = d.dropna(subset=[accuracy, chance])
    long = pd.concat([d[[item]].assign(_v=d[accuracy], _part="a"),
                      d[[item]].assign(_v=d[chance], _part="b")], ignore_index=True)
    return evaluate_claim("above_chance", "the correct prompt gets lower perplexity than a "
                          "label-blind rule picks it", f"mean accuracy minus the drawn chance "
                          f"level ({chance.replace('_', ' ')})", long,
                          ("_v", "_part", lambda m, _: m[:, 0] - m[:, 1]), item, +1, 0.0,
                          "item", PPL_SOURCE, scope=task,
                          null_hypothesis=f"accuracy is that of the label-blind rule "
                          f"'{chance}' (a drawn chance level)", sesoi=SESOI["accuracy"], **kw)


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


def _delta(unit):
    return "Δs" if unit == "s" else "ΔPPL"


def pivotal_rarely_whole(metrics: pd.DataFrame, task: str, unit: str = UNIT,
                         item: str = "pair_id", n_perm: int = 1999, **kw) -> ClaimTest:
    """*Pivotal tokens rarely offer a complete explanation* of the perplexity shift (Prins et
    al. 2026, §3, "Results on normalized proportion"), read as: **the other tokens carry a
    systematic share of the difference in the total's direction**.

    Per prompt pair, the signed total of per-token differences (``unit``: surprisal, nats, by
    default) splits into a pivotal and a non-pivotal part, ``signed_pivotal_<unit> +
    signed_rest_<unit>`` (each over ``Σ n_g |δ_g|``, :func:`prompt_pair_measures`). Effect: the
    mean non-pivotal part, signed so that positive is the direction of the task's mean total.
    Null: the non-pivotal part is mean-zero noise (the pivotal tokens explain the whole
    systematic difference), tested by flipping the sign of each item's non-pivotal parts
    (:func:`sign_flip_p`, unit: the item). Supported: the rest pushes with the total;
    contradicted: it pushes against it (the pivotal tokens carry more than the whole). The
    interval is a percentile bootstrap over items; it does not decide. In ``"ppl"`` units
    mean-zero surprisal noise is a positive mean ΔPPL, and the test decides where nothing is
    systematic: ``"ppl"`` is for description only.
    """
    piv, rest = f"signed_pivotal_{unit}", f"signed_rest_{unit}"
    d = metrics[metrics["task"] == task].dropna(subset=[piv, rest])
    long = pd.concat([d[[item]].assign(_v=d[rest], _part="rest"),
                      d[[item]].assign(_v=d[piv] + d[rest], _part="total")], ignore_index=True)
    t = evaluate_claim("pivotal_rarely_whole", "the other tokens carry a systematic part of the "
                       "perplexity difference (pivotal tokens rarely explain it whole)",
                       f"mean non-pivotal share of Σ|{_delta(unit)}| in the total's direction",
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


def pivotal_carries_most(metrics: pd.DataFrame, task: str = "nonsense", unit: str = UNIT,
                         item: str = "pair_id", **kw) -> ClaimTest:
    """*In the nonsense control, most of the perplexity difference is caused by the single
    differing real word* (Prins et al. 2026, §3).

    Effect: the pivotal tokens' part of the mean signed total, ``mean(signed_pivotal) /
    mean(signed_pivotal + signed_rest)`` over prompt pairs (per-token differences, surprisal by
    default, :func:`prompt_pair_measures`), above 0.5 supports it, below contradicts it. Signed,
    so that the noise of the other tokens, which cancels over prompt pairs, is not counted as
    part of the difference; per token, so that a pivot of several tokens is not multiplied; in
    surprisal, so that a merely rarer pivot (a larger base surprisal, the same shift as every
    token) does not carry more (in ΔPPL it does). Unit: the item.

    A share is read only where its denominator points the claim's way: when the mean signed
    total is not decided positive (its one-sided bootstrap p above 0.025: the incorrect prompt
    is not shown more surprising), the verdict is "cannot be decided", with that reason.
    """
    piv, rest = f"signed_pivotal_{unit}", f"signed_rest_{unit}"
    d = metrics[metrics["task"] == task].dropna(subset=[piv, rest])
    long = pd.concat([d[[item]].assign(_v=d[piv], _part="pivotal"),
                      d[[item]].assign(_v=d[piv] + d[rest], _part="total")], ignore_index=True)
    t = evaluate_claim("pivotal_carries_most", "the pivotal token carries most of the "
                       "perplexity difference", f"pivotal part of the mean signed "
                       f"{_delta(unit)} (per token)", long,
                       ("_v", "_part", lambda m, _: m[:, 0] / m[:, 1]), item, +1, 0.5,
                       "item", PPL_SOURCE, scope=task,
                       null_hypothesis="the pivotal tokens carry half of the mean signed "
                       "difference", sesoi=SESOI["proportion"], **kw)
    total = evaluate_claim("total", "", "", d.assign(_v=d[piv] + d[rest]),
                           ("_v", None, lambda m, _: m[:, 0]), item, +1, 0.0, **kw)
    if t.reason or not np.isfinite(total.p_supported) or total.p_supported <= claims.ALPHA / 2:
        return t
    # what precedes the first ": " is the reason in a few words (report.deciding_sizes' "why")
    why = (f"the share's denominator, the mean signed total ({_delta(unit)} over Σ|{_delta(unit)}|"
           f"), is not decided positive: {total.effect:.3g} [{total.ci_low:.3g}, "
           f"{total.ci_high:.3g}], one-sided p {total.p_supported:.3g}; so the incorrect prompt is "
           f"not shown more surprising and a share of that total has no direction to be most of")
    return replace(t, verdict="cannot be decided", reason=why, items_needed=None)


def label_share(metrics: pd.DataFrame, unit: str = UNIT, item: str = "pair_id") -> pd.DataFrame:
    """The part of the pivotal tokens' difference that follows the labels, per (task, item,
    wording), from the two label orders of a prompt pair.

    With ``P_o`` the pivotal tokens' signed total (``whole_pivotal_<unit>``,
    :func:`prompt_pair_measures`) in label order ``o``: ``q = (P_good_first + P_bad_first) /
    (|P_good_first| + |P_bad_first|)`` in [-1, 1]. Swapping the slots moves each sentence from
    one position to the other, so what position does to a token (the copy discount of a repeated
    word, the copy failure of the one word that differs) enters ``P`` with opposite signs in the
    two orders and cancels in the sum; what the labels do does not. A model that reads no label
    gives ``q`` and ``-q`` alike (swapping the label words exchanges the two orders' roles).

    Returns:
        columns ``task``, ``item``, ``wording``, ``label_share``; NaN where an order is missing
        or both totals are 0.

    Raises:
        KeyError: a column is missing.
    """
    col = f"whole_pivotal_{unit}"
    need = ["task", item, "wording", "order", col]
    miss = [c for c in need if c not in metrics]
    if miss:
        raise KeyError(f"metrics need column(s) {miss} (prompt_pair_measures, unit={unit!r})")
    w = metrics.set_index(["task", item, "wording", "order"])[col].unstack("order")
    for o in ("good_first", "bad_first"):
        if o not in w:
            w[o] = np.nan
    gf, bf = w["good_first"].to_numpy(float), w["bad_first"].to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = (gf + bf) / (np.abs(gf) + np.abs(bf))
    return w.index.to_frame(index=False).assign(label_share=q)


def pivotal_influence(metrics: pd.DataFrame, task: str, unit: str = UNIT, item: str = "pair_id",
                      n_perm: int = 1999, **kw) -> ClaimTest:
    """*Pivotal tokens contribute more to the perplexity difference than a typical token*,
    whatever the direction (Prins et al. 2026, §2, the normalized proportion's first reading),
    tested as: **the pivotal tokens' difference follows the labels, in a direction consistent
    within an item, more than chance gives**.

    The pivot is the one word that differs between the two sentences, so ranking its ``|δ|``
    against tokens that are the same word in both (the first version of this test, and the
    paper's median token) cannot fail: a different word with no role beats them (its copy
    fails where theirs succeeds). The stored runs hold no same-kind baseline (a different-word
    swap at another position), so the null is drawn from the pivot itself: its label part
    :func:`label_share` ``q`` per (item, wording), whose sign a label-blind model leaves to
    chance. Statistic: the mean over items of ``|mean over wordings of q|``; null: every ``q``'s
    sign flipped at random (``n_perm`` draws), keeping each one's size. Effect: the statistic
    minus its mean under the flips (0: a pivot whose label part is chance), interval a
    percentile bootstrap over items (it does not decide). Unit: the item.
    """
    q = label_share(metrics[metrics["task"] == task], unit, item).dropna(subset=["label_share"])
    codes, _ = pd.factorize(q[item])
    x = q["label_share"].to_numpy(float)
    n_i = int(codes.max()) + 1 if len(codes) else 0
    counts = np.bincount(codes, minlength=n_i) if n_i else np.zeros(0)

    def stat(signs):  # [P, rows] -> [P]
        sums = np.zeros((len(signs), n_i))
        np.add.at(sums.T, codes, (signs * x).T)
        return np.abs(sums / counts).mean(axis=1)
    observed = float(stat(np.ones((1, len(x))))[0]) if n_i else np.nan
    null = (stat(np.random.default_rng(kw.get("seed", 0)).choice([-1.0, 1.0], (n_perm, len(x))))
            if n_i else np.array([np.nan]))
    level = float(np.mean(null))
    per_item = pd.DataFrame({item: q[item].to_numpy(), "_v": x}).groupby(item, sort=False)["_v"]
    d = per_item.mean().abs().sub(level).rename("_v").reset_index()
    t = evaluate_claim("pivotal_influence", "the pivotal tokens' difference follows the labels "
                       "(either direction) more than chance gives",
                       f"mean over items of |label share of the pivotal {_delta(unit)}| minus "
                       f"its mean under random signs", d, ("_v", None, lambda m, _: m[:, 0]),
                       item, +1, 0.0, "item", PPL_SOURCE, scope=task,
                       null_hypothesis="the sign of each label share is chance (the labels do "
                       "nothing to the pivotal tokens: a different word with no role)",
                       sesoi=SESOI["proportion"], **kw)
    if not n_i or t.reason:
        return t
    p_up, p_down, smallest = claims.permutation_p(observed, null, False, +1)
    t = replace(t, p_supported=p_up, p_contradicted=p_down,
                smallest_p=max(smallest, t.smallest_p),
                test=f"random sign flips of the label shares ({n_perm} draws, {t.n_items} "
                     f"items); interval: {t.test}")
    return claims.finish(t, (1 - t.confidence) / 2)


def pivotal_direction(metrics: pd.DataFrame, task: str, unit: str = UNIT, item: str = "pair_id",
                      **kw) -> ClaimTest:
    """*Pivotal tokens move perplexity in the correct direction* (Prins et al. 2026, §2, the
    normalized proportion's sign).

    Effect: the mean of ``Σ_pivotal n_g δ_g / Σ_pivotal n_g |δ_g|`` (per-token differences,
    surprisal by default, in [-1, 1]; +1: every pivotal token makes the incorrect prompt more
    surprising). Null 0: the pivotal tokens point either way alike (both label orders of every
    item are averaged, so what position alone does cancels). Unit: the item.
    """
    return _mean_claim("pivotal_direction", "pivotal tokens make the incorrect prompt more "
                       "perplexed", metrics, task, f"direction_pivotal_{unit}", item, +1, 0.0, kw,
                       f"the pivotal tokens' {_delta(unit)} is as often negative as positive",
                       f"mean signed share of pivotal {_delta(unit)} (-1 to 1)")


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


# --- the claims' contracts (issue 42; xcomps_utils.analysis.contract) -------------------------

def simulate_groups(seed: int, n_items: int = 25, wordings: int = 2, n_words: int = 6,
                    n_template: int = 3, base: float | tuple = (0.5, 5.0),
                    piv_base: float | None = None, copy: float = 0.7, fail: float = 2.0,
                    fail_bad: float | None = None, piv_shift: float = 0.0,
                    rest_shift: float = 0.0, noise: float = 0.3, piv_noise: float | None = None,
                    task: str = "t") -> pd.DataFrame:
    """Aligned groups (the ``ppl_groups`` detail's columns) of a simulated token-level run, for
    the claims' contracts: ``n_items`` minimal pairs x ``wordings`` x both label orders.

    A pair is two sentences of ``n_words`` one-token words that differ in one word, the pivot
    (its position drawn). A word's base surprisal is drawn uniform in ``base`` (or fixed, a
    number; the two pivots' ``piv_base`` when given). In each prompt a sentence in the first slot
    has its base surprisal; in the second slot a word it shares with the other sentence is copied
    (``base * (1 - copy)``) and the pivot, which differs, is not (``base + fail_w``, ``fail_w``
    drawn ``fail * U(0.5, 1.5)`` per pivot word, or ``fail_bad`` for the bad sentence's pivot).
    ``2 n_template + 1`` template tokens (base 0.5-5) surround the slots. Each token gets normal
    noise (sd ``noise``; ``piv_noise`` for the pivots) independently in every prompt. The labels'
    role: in the incorrect prompt the two pivotal tokens are ``piv_shift`` nats more surprising
    and every other token ``rest_shift``.

    Returns:
        one row per group: ``task``, ``pair_id``, ``wording``, ``order``, ``s_correct``,
        ``s_incorrect``, ``n_tokens_correct``, ``n_tokens_incorrect``, ``category``.
    """
    rng = np.random.default_rng(seed)
    n_t, n_w, o_n = 2 * n_template + 1, n_words, 2

    def draw(size):
        return np.full(size, float(base)) if np.isscalar(base) else rng.uniform(*base, size)
    b_good = draw((n_items, n_w))
    k = rng.integers(0, n_w, n_items)
    rows = np.arange(n_items)
    b_bad = b_good.copy()
    b_bad[rows, k] = draw(n_items)
    if piv_base is not None:
        b_good[rows, k] = b_bad[rows, k] = piv_base
    f_good = fail * rng.uniform(0.5, 1.5, n_items)
    f_bad = fail * rng.uniform(0.5, 1.5, n_items) if fail_bad is None else np.full(n_items,
                                                                                   fail_bad)
    is_piv = np.arange(n_w)[None, :] == k[:, None]  # [I, n_w]

    def sentence(b, f, slot):  # [I, n_w] surprisal in slot 1 or 2
        return b if slot == 1 else np.where(is_piv, b + f[:, None], b * (1 - copy))
    tmpl = rng.uniform(0.5, 5.0, (n_items, n_t))
    piv = np.concatenate([np.zeros((n_items, n_t), bool), is_piv, is_piv], axis=1)  # [I, G]
    sd = np.where(piv, noise if piv_noise is None else piv_noise, noise)
    shift = np.where(piv, piv_shift, rest_shift)
    out_a, out_b = [], []
    for o in range(o_n):  # 0: good_first (the correct prompt has the good sentence first)
        good_a, good_b = (1, 2) if o == 0 else (2, 1)
        sa = np.concatenate([tmpl, sentence(b_good, f_good, good_a),
                             sentence(b_bad, f_bad, 3 - good_a)], axis=1)
        sb = np.concatenate([tmpl, sentence(b_good, f_good, good_b),
                             sentence(b_bad, f_bad, 3 - good_b)], axis=1)
        out_a.append(sa[:, None, :] + rng.normal(0, 1, (n_items, wordings, sa.shape[1])) * sd[:, None])
        out_b.append(sb[:, None, :] + shift[:, None]
                     + rng.normal(0, 1, (n_items, wordings, sb.shape[1])) * sd[:, None])
    sa, sb = np.stack(out_a, 2), np.stack(out_b, 2)  # [I, W, O, G]
    i, w, o, g = np.meshgrid(np.arange(n_items), np.arange(wordings), np.arange(o_n),
                             np.arange(sa.shape[-1]), indexing="ij")
    return pd.DataFrame({"task": task, "pair_id": i.ravel().astype(str),
                         "wording": w.ravel().astype(str),
                         "order": np.array(["good_first", "bad_first"])[o.ravel()],
                         "s_correct": sa.ravel(), "s_incorrect": sb.ravel(),
                         "n_tokens_correct": 1, "n_tokens_incorrect": 1,
                         "category": np.where(piv[i.ravel(), g.ravel()], "pivotal", "other")})


def simulate_prompt_pairs(seed: int, n_items: int = 40, prompt_pairs: int = 8,
                          accuracy: float = 0.5, order_gap: float = 0.0, item_sd: float = 1.0,
                          shorter: float | None = None, task: str = "t") -> pd.DataFrame:
    """Simulated prompt pairs for the accuracy claims' contracts: ``n_items`` items x
    ``prompt_pairs`` (label orders alternating), ``correct`` drawn with the item's logit
    ``logit(accuracy) + item_sd * N(0, 1)``, ``± order_gap / 2`` on the probability scale for the
    good-first / bad-first order; token counts equal (``tokens_correct`` = ``tokens_incorrect``)
    unless ``shorter`` is given: then the correct prompt is shorter in that share of items (as
    DUST's acceptable sentences are, scored alone), equal in a fifth of the rest, and
    ``correct`` is the length-only model's choice (fewer tokens wins; a tie at random).

    Returns:
        ``task``, ``pair_id``, ``wording``, ``order``, ``correct``, ``tokens_correct``,
        ``tokens_incorrect``.
    """
    rng = np.random.default_rng(seed)
    n = n_items * prompt_pairs
    item = np.repeat(np.arange(n_items), prompt_pairs)
    order = np.tile(np.array(["good_first", "bad_first"]), n // 2 + 1)[:n]
    logit = np.log(accuracy / (1 - accuracy)) + item_sd * rng.normal(size=n_items)[item]
    p = 1 / (1 + np.exp(-logit)) + np.where(order == "good_first", 1, -1) * order_gap / 2
    correct = (rng.random(n) < np.clip(p, 0, 1)).astype(float)
    ta = np.full(n, 20.0)
    tb = ta.copy()
    if shorter is not None:
        u = rng.random(n_items)[item]
        tb = np.where(u < shorter, ta + 2, np.where(u < shorter + (1 - shorter) * 0.8, ta, ta - 2))
        correct = np.where(ta < tb, 1.0, np.where(ta > tb, 0.0, (rng.random(n) < 0.5) * 1.0))
    return pd.DataFrame({"task": task, "pair_id": item.astype(str),
                         "wording": (np.arange(n) // 2 % 4).astype(str), "order": order,
                         "correct": correct, "tokens_correct": ta, "tokens_incorrect": tb})


_C = {"n_boot": 500, "n_perm": 999}


def _token(name, **sim):
    """A scenario's draw: ``name``'s claim on simulated groups (in surprisal units)."""
    def draw(seed):
        m = prompt_pair_measures(simulate_groups(seed, **sim), unit=UNIT)
        kw = {"n_boot": _C["n_boot"]}
        if name in ("pivotal_rarely_whole", "pivotal_influence"):
            kw["n_perm"] = _C["n_perm"]
        return globals()[name](m, "t", **kw)
    return draw


def _accuracy(name, **sim):
    def draw(seed):
        d = simulate_prompt_pairs(seed, **sim)
        if name == "above_chance":
            return above_chance(length_decisions(d), "t", accuracy="correct",
                                chance="fewer_tokens_wins", n_boot=_C["n_boot"])
        return order_effect(d, "t", n_boot=_C["n_boot"])
    return draw


_ONE_SIDE = claims.ALPHA / 2
#: the pivot carries half of the expected total: 2 pivotal tokens x s = 17 others x rest
_HALF = 2 / (2 * 6 + 2 * 3 + 1 - 2)

#: every claim this module tests, with its null, a stated effect and its named traps
#: (:mod:`xcomps_utils.analysis.contract`; surprisal units, the claims' own functions)
CONTRACTS = [
    contract.Contract(
        claim="pivotal_rarely_whole",
        null=contract.Scenario("the pivot carries the whole systematic difference (1 nat), "
                               "the other tokens mean-zero noise", _token(
                                   "pivotal_rarely_whole", piv_shift=1.0)),
        effect=contract.Scenario("every other token 0.5 nat more surprising in the incorrect "
                                 "prompt, beside a 1-nat pivot", _token(
                                     "pivotal_rarely_whole", piv_shift=1.0, rest_shift=0.5)),
        traps=(contract.Scenario("mean-zero surprisal noise, nothing systematic (sd 1 nat)",
                                 _token("pivotal_rarely_whole", noise=1.0)),)),
    contract.Contract(
        claim="pivotal_carries_most",
        null=contract.Scenario("the pivot carries half of the mean total", _token(
            "pivotal_carries_most", piv_shift=1.0, rest_shift=_HALF)),
        effect=contract.Scenario("the pivot carries the whole difference (1 nat)", _token(
            "pivotal_carries_most", piv_shift=1.0)),
        traps=(contract.Scenario("a merely rarer pivot: base surprisal 5 vs 3, the same 0.3-nat "
                                 "shift on every token", _token(
                                     "pivotal_carries_most", base=3.0, piv_base=5.0,
                                     piv_shift=0.3, rest_shift=0.3),
                                 wrong=("supported",), nominal=_ONE_SIDE),
               contract.Scenario("a total that points nowhere: the pivot +1 nat, the others "
                                 "against it to a mean total of 0", _token(
                                     "pivotal_carries_most", piv_shift=1.0, rest_shift=-_HALF * 2),
                                 wrong=("supported",), nominal=_ONE_SIDE))),
    contract.Contract(
        claim="pivotal_influence",
        null=contract.Scenario("no role: the pivot's surprisal moves with the slots only (its "
                               "copy fails, 2 nats)", _token("pivotal_influence")),
        effect=contract.Scenario("the labels' role: the pivots 0.5 nat more surprising in the "
                                 "incorrect prompt", _token("pivotal_influence", piv_shift=0.5)),
        traps=(contract.Scenario("a different-word pivot with no role whose copy fails by 4 "
                                 "nats, noisier than every other token (sd 1.5)", _token(
                                     "pivotal_influence", fail=4.0, piv_noise=1.5),
                                 wrong=("supported",), nominal=_ONE_SIDE),)),
    contract.Contract(
        claim="pivotal_direction",
        null=contract.Scenario("no role: the pivot's surprisal moves with the slots only",
                               _token("pivotal_direction")),
        effect=contract.Scenario("the pivots 0.5 nat more surprising in the incorrect prompt",
                                 _token("pivotal_direction", piv_shift=0.5)),
        traps=(contract.Scenario("a different-word pivot with no role whose copy fails by 1-3 "
                                 "nats for the good word, 1 for the bad", _token(
                                     "pivotal_direction", fail=2.0, fail_bad=1.0)),)),
    contract.Contract(
        claim="above_chance",
        null=contract.Scenario("accuracy 0.5, items differing (logit sd 1)",
                               _accuracy("above_chance")),
        effect=contract.Scenario("accuracy 0.6", _accuracy("above_chance", accuracy=0.6)),
        traps=(contract.Scenario("a length-only model where the correct prompt is shorter in 77% "
                                 "of items (DUST scored alone): against the drawn level",
                                 _accuracy("above_chance", shorter=0.77),
                                 wrong=("supported",), nominal=_ONE_SIDE),)),
    contract.Contract(
        claim="order_effect",
        null=contract.Scenario("the same accuracy in both orders", _accuracy("order_effect"),
                               wrong=("supported",)),
        effect=contract.Scenario("accuracy 0.3 higher with the good label first", _accuracy(
            "order_effect", order_gap=0.3)),
        traps=(contract.Scenario("items that differ widely (logit sd 2), few prompt pairs each",
                                 _accuracy("order_effect", item_sd=2.0, prompt_pairs=4),
                                 wrong=("supported",)),)),
]
