"""The concept prior in XCOMPS' Direct judgements: how often it decides a pair, and the claims
about it (this book's analysis, on the decompositions of :mod:`xcomps_utils.analysis.decompose`).

Direct decides a pair by ``delta = cond_delta + prior_delta``: the continuation after the
concept (conditional Direct, the property given the concept) plus the concept's own prior
(:func:`xcomps_utils.analysis.decompose.decompose_pairs`). Here: :func:`prior_share` (how often the two
judges disagree, the accuracies of Direct, conditional Direct and Direct with a shuffled prior,
and the prior's correlation with the continuation), and four claims tested on items
(:class:`xcomps_utils.analysis.claims.ClaimTest`): :func:`prior_favours_acceptable`,
:func:`direct_gains_from_prior`, :func:`concept_carries_most`, :func:`property_above_chance`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .claims import ClaimTest, bootstrap_means, evaluate_claim
from .families import SESOI, correct
from .scored import decided_rows

__all__ = ["prior_share", "accuracy_by_type", "prior_favours_acceptable",
           "direct_gains_from_prior", "shuffled_prior_accuracy", "concept_carries_most",
           "property_above_chance", "simulate_decomposed", "CONTRACTS"]


def _decided(d: pd.DataFrame, cols=("direct_correct", "cond_correct")) -> pd.DataFrame:
    """Pairs that are a decision of each judge named in ``cols``, by the book's one rule
    (:func:`xcomps_utils.analysis.scored.decided_rows`: the run's ``direct_decision`` when present,
    else ties and near ties out), so this chapter's Direct accuracy is the XCOMPS chapter's."""
    for c in cols:
        d = decided_rows(d, c)
    return d


def accuracy_by_type(d: pd.DataFrame, languages: list[str]) -> pd.DataFrame:
    """Direct and conditional Direct accuracy per language (rows, in ``languages`` order) and
    negative-sample type, each over the pairs that judge decides
    (:func:`xcomps_utils.analysis.scored.decided_rows`: ties and near ties left out, as in every
    XCOMPS table).

    Args:
        d: decomposed pairs (:attr:`xcomps_utils.pages.chapters.XcompsSplit.pairs`: ``lang``,
            ``negative_sample_type``, ``direct_correct``, ``cond_correct`` and their tie columns
            or the run's ``direct_decision``).

    Returns:
        ``[languages, 2 x types]``, columns ``"Direct: <type>"`` and ``"conditional: <type>"``.
    """
    parts = {name: decided_rows(d, f"{judge}_correct").pivot_table(
                 index="lang", columns="negative_sample_type", values=f"{judge}_correct",
                 aggfunc="mean")
             for judge, name in (("direct", "Direct"), ("cond", "conditional"))}
    out = pd.concat(parts, axis=1).reindex(languages)
    out.columns = [f"{name}: {t}" for name, t in out.columns]
    return out


def _prior_rows(d: pd.DataFrame) -> pd.DataFrame:
    """Decided pairs with ``direct_right`` (the level) and ``prior_only`` (1: conditional Direct
    does not prefer the acceptable sentence) for :func:`xcomps_utils.analysis.claims.bootstrap_means`."""
    d = _decided(d, ("direct_correct",))
    return d.assign(direct_right=(d["direct_correct"] == 1).astype(int),
                    prior_only=(d["cond_correct"] != 1).astype(float))


def shuffled_prior_accuracy(d: pd.DataFrame, n_draws: int = 200, seed: int = 0) -> float:
    """Direct's accuracy with each pair's concept prior replaced by that of another pair of the
    same language and negative type (``cond_delta + prior_delta`` shuffled; the run's near-tie
    tolerance ``direct_near_tie_tolerance`` applied as to Direct), mean over ``n_draws``: what a
    prior with the same distribution but unrelated to the pair would give (a drawn chance
    level for Direct beside conditional Direct).

    Returns:
        the mean accuracy over the draws (NaN without pairs).
    """
    d = _decided(d, ("cond_correct",))
    if not len(d):
        return math.nan
    keys = [c for c in ("lang", "negative_sample_type") if c in d]
    codes = d.groupby(keys, sort=False).ngroup().to_numpy() if keys else np.zeros(len(d), int)
    prior = d["prior_delta"].to_numpy(float) if "prior_delta" in d else \
        (d["delta"] - d["cond_delta"]).to_numpy(float)
    tol = d["direct_near_tie_tolerance"].fillna(0).to_numpy(float) \
        if "direct_near_tie_tolerance" in d else np.zeros(len(d))
    rng = np.random.default_rng(seed)
    order = np.argsort(codes, kind="stable")
    drawn = np.argsort(codes[None, :] + rng.random((n_draws, len(d))), axis=1)
    shuffled = np.empty((n_draws, len(d)))
    shuffled[:, order] = prior[drawn]
    s = d["cond_delta"].to_numpy(float)[None, :] + shuffled
    ok = (s != 0) & (np.abs(s) >= tol[None, :])
    with np.errstate(invalid="ignore"):
        return float(np.nanmean((s > 0).sum(1, where=ok) / ok.sum(1)))


def _level(value):
    """``combine`` for bootstrap_means: the mean of the level ``value`` (NaN if absent)."""
    def combine(means, levels):
        return means[:, levels.index(value)] if value in levels else np.full(len(means), np.nan)
    return combine


def prior_share(decomposed: pd.DataFrame, by: str | list[str] | None = "lang",
                item: str = "property", n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """How often the two judges of a pair disagree, the three accuracies, and how the concept
    prior relates to the continuation.

    ``prior_share`` (a *gross* count, not an explanation): among the pairs full-sentence Direct
    gets right (ties and near ties left out), the fraction whose continuation after the concept
    does *not* prefer the acceptable sentence (``cond_delta <= 0``). It is far from 0 even with
    no systematic prior and no knowledge: with independent zero-mean noise on both parts it is
    about 25%. Beside it: ``direct_acc`` (Direct), ``cond_acc`` (conditional Direct),
    ``shuffled_acc`` (Direct with the prior of another pair of the same language and type,
    :func:`shuffled_prior_accuracy`), ``gain`` (Direct minus conditional accuracy on the pairs
    both decide, what :func:`direct_gains_from_prior` tests), ``prior_favours`` (the share of
    pairs whose prior favours the acceptable concept, :func:`prior_favours_acceptable`),
    ``prior_cond_r`` (Spearman correlation of ``prior_delta`` and ``cond_delta`` over pairs: a
    prior tied to the continuation changes Direct's accuracy whatever its mean), the counts
    ``both``, ``only_direct``, ``only_cond``, ``neither`` (over all pairs), and
    ``prior_share``'s 95% percentile interval resampling whole items (``item``: a concept-property
    item in every language at once, :func:`xcomps_utils.analysis.claims.bootstrap_means`).

    Returns:
        one row per group (``by=None``: one row, ``all``): ``pairs``, ``direct_correct``
        (count), ``prior_share``, ``ci_low``, ``ci_high``, ``items``, ``direct_acc``,
        ``cond_acc``, ``shuffled_acc``, ``gain``, ``prior_favours``, ``prior_cond_r``,
        ``both``, ``only_direct``, ``only_cond``, ``neither``.
    """
    groups = [("all", decomposed)] if by is None else decomposed.groupby(by, sort=False)
    names = ["group"] if by is None else ([by] if isinstance(by, str) else list(by))
    rows = []
    for key, d in groups:
        est, lo, hi, n = bootstrap_means(_prior_rows(d), "prior_only", item, "direct_right",
                                         _level(1), n_boot=n_boot, seed=seed)
        dc, cc = d["direct_correct"] == 1, d["cond_correct"] == 1
        both = _decided(d)
        prior = d["delta"] - d["cond_delta"]
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(names, key)), "pairs": len(d), "direct_correct": int(dc.sum()),
                     "prior_share": est, "ci_low": lo, "ci_high": hi, "items": n,
                     "direct_acc": float(_decided(d, ("direct_correct",))["direct_correct"]
                                         .mean()),
                     "cond_acc": float(_decided(d, ("cond_correct",))["cond_correct"].mean()),
                     "shuffled_acc": shuffled_prior_accuracy(d, seed=seed),
                     "gain": float(both["direct_correct"].mean() - both["cond_correct"].mean()),
                     "prior_favours": float((prior[prior != 0] > 0).mean()),
                     "prior_cond_r": float(prior.corr(d["cond_delta"], method="spearman")),
                     "both": int((dc & cc).sum()), "only_direct": int((dc & ~cc).sum()),
                     "only_cond": int((~dc & cc).sum()), "neither": int((~dc & ~cc).sum())})
    return pd.DataFrame(rows)


_SOURCE = ("this book (issue 14): XCOMPS (He et al., 2025) x token-level perplexity (Prins et al., "
           "2026)")


def prior_favours_acceptable(decomposed: pd.DataFrame, scope: str = "all languages",
                             item: str = "property", **kw):
    """*The concept prior favours the acceptable concept*: the share of pairs whose prior
    (``prior_delta = delta - cond_delta``, the prefix and concept part of Direct's difference)
    is positive, minus 0.5, items resampled; pairs with a prior of exactly 0 left out.

    The null: the prior is as likely to favour either concept (its median is 0). What it does
    not test: whether the prior *helps Direct* (a prior that favours the acceptable concept on
    average can still cost Direct accuracy by its spread; :func:`direct_gains_from_prior`), and
    a zero-mean prior that is correlated with the continuation is, rightly, not decided here,
    although it changes Direct's accuracy (the earlier mirror test, Direct against the prior's
    sign flipped, decided such a prior in every dataset).

    Returns:
        :class:`xcomps_utils.analysis.claims.ClaimTest`.
    """
    prior = decomposed["delta"] - decomposed["cond_delta"]
    d = decomposed.assign(prior_favours=(prior > 0).astype(float))[prior != 0]
    return evaluate_claim("prior_favours_acceptable", "the concept prior favours the acceptable "
                          "concept", "share of pairs whose concept prior favours the acceptable "
                          "concept", d, ("prior_favours", None, _level(None)), item, +1, 0.5,
                          "item", _SOURCE, scope=scope, null_hypothesis="the prior is as likely "
                          "to favour either concept (median 0)", sesoi=SESOI["proportion"],
                          **kw)


def direct_gains_from_prior(decomposed: pd.DataFrame, scope: str = "all languages",
                            item: str = "property", **kw):
    """*Direct gains from the concept prior*: Direct's accuracy minus conditional Direct's
    (``cond_delta``: the continuation after the concept, the prior removed), over the pairs both
    decide (:func:`xcomps_utils.analysis.scored.decided_rows`), items resampled (paired: the same pairs).

    Null: the two are equally accurate. It is decided either way by what the prior does to
    Direct: a prior that favours the acceptable concept on average but is noisy can make Direct
    *less* accurate (contradicted), a zero-mean prior tied to the continuation can make it more
    or less accurate. The page shows, beside it, the drawn chance level of a prior unrelated to
    the pair (:func:`shuffled_prior_accuracy`) and the correlation of prior and continuation
    (:func:`prior_share`).

    Returns:
        :class:`xcomps_utils.analysis.claims.ClaimTest`.
    """
    both = _decided(decomposed)
    long = pd.concat([both.assign(judge="a_direct", right=both["direct_correct"]),
                      both.assign(judge="b_cond", right=both["cond_correct"])])

    def combine(means, levels):
        return means[:, levels.index("a_direct")] - means[:, levels.index("b_cond")]
    return evaluate_claim("direct_gains_from_prior", "Direct gains from the concept prior: it "
                          "is more accurate than conditional Direct", "Direct minus conditional "
                          "Direct accuracy", long, ("right", "judge", combine), item, +1, 0.0,
                          "item", _SOURCE, scope=scope, null_hypothesis="Direct and conditional "
                          "Direct are equally accurate on the pairs both decide",
                          sesoi=SESOI["accuracy"], **kw)


def concept_carries_most(decomposed: pd.DataFrame, unit: str = "s",
                         scope: str = "all languages", item: str = "property", **kw):
    """*The concept tokens carry most of the log-probability difference* (the analogue of Prins
    et al.'s pivotal tokens, here the differing span): mean plain proportion of the concept
    group above 0.5, items resampled.

    Returns:
        :class:`xcomps_utils.analysis.claims.ClaimTest`.
    """
    col = f"plain_concept_{unit}"
    return evaluate_claim("concept_carries_most", "the concept tokens carry most of the "
                          "difference", f"mean plain proportion on concept tokens "
                          f"({'surprisal' if unit == 's' else 'perplexity'} differences)",
                          decomposed.dropna(subset=[col]), (col, None, _level(None)), item,
                          +1, 0.5, "item", _SOURCE, scope=scope, null_hypothesis="the concept "
                          "tokens carry half of the difference", sesoi=0.1, **kw)


def property_above_chance(decomposed: pd.DataFrame, scope: str = "all languages",
                          item: str = "property", control: pd.DataFrame | None = None, **kw):
    """*The property tokens prefer the acceptable sentence*: conditional Direct accuracy against
    its chance level, over the pairs it decides, items resampled.

    The chance level is **drawn** when ``control`` is given: the conditional Direct accuracy of
    the same prefixes followed by another item's continuation
    (:func:`xcomps_utils.analysis.decompose.mismatched_pairs`, decomposed the same way), where no
    continuation is about its concept. The effect is then the accuracy minus the control's, the
    two paired by item (an item's pairs and its control pairs are resampled together). Without
    ``control`` the level is the assumed 0.5, and the claim's caveat says so.

    Args:
        decomposed: decomposed XCOMPS pairs (``cond_correct``, the item column, the run's
            decision columns).
        control: the decomposed mismatched-continuation pairs, or None.

    Returns:
        :class:`xcomps_utils.analysis.claims.ClaimTest`.
    """
    d = _decided(decomposed, ("cond_correct",))
    if control is None:
        return evaluate_claim("property_above_chance", "the property tokens prefer the "
                              "acceptable sentence", "conditional Direct accuracy minus 0.5", d,
                              ("cond_correct", None, lambda m, _: m[:, 0] - 0.5), item, +1, 0.0,
                              "item", _SOURCE, scope=scope, null_hypothesis="conditional Direct "
                              "is at chance (0.5)", sesoi=SESOI["accuracy"],
                              caveat="the chance level 0.5 is assumed, not drawn (no "
                              "mismatched-continuation control was given)", **kw)
    c = _decided(control, ("cond_correct",))
    both = pd.concat([d.assign(frame="pairs"), c.assign(frame="control")], ignore_index=True)

    def combine(m, levels):
        if "control" not in levels or "pairs" not in levels:
            return np.full(len(m), np.nan)
        return m[:, levels.index("pairs")] - m[:, levels.index("control")]
    ctrl = float(c["cond_correct"].mean()) if len(c) else math.nan
    return evaluate_claim("property_above_chance", "the property tokens prefer the acceptable "
                          "sentence", "conditional Direct accuracy minus its drawn chance level "
                          f"(another item's continuation: {ctrl:.3f})", both,
                          ("cond_correct", "frame", combine), item, +1, 0.0, "item", _SOURCE,
                          scope=scope, null_hypothesis="conditional Direct is as accurate with "
                          "the item's own continuation as with another item's (the drawn "
                          "chance level)", sesoi=SESOI["accuracy"], **kw)


# --- the families this question tests (corrected here, not on the page) -------------------------

def where_delta_comes_from(decomposed: pd.DataFrame, control: pd.DataFrame, n_boot: int = 2000,
                           seed: int = 0) -> list[ClaimTest]:
    """The family "where Δ comes from": :func:`concept_carries_most` and
    :func:`property_above_chance` (against the drawn ``control`` of mismatched continuations) on
    every language pooled, Holm-corrected together (:func:`~xcomps_utils.analysis.families.correct`).
    """
    tests = [concept_carries_most(decomposed, n_boot=n_boot, seed=seed, scope="all languages"),
             property_above_chance(decomposed, scope="all languages", n_boot=n_boot, seed=seed,
                                   control=control)]
    return correct(tests, "where Δ comes from")


def prior_claims(decomposed: pd.DataFrame, languages: list[str], n_boot: int = 2000,
                 seed: int = 0) -> list[ClaimTest]:
    """The concept-prior families: "concept prior, pooled" (confirmatory:
    :func:`prior_favours_acceptable` and :func:`direct_gains_from_prior` on every language
    pooled) and "Direct's gain, per language" (exploratory: :func:`direct_gains_from_prior` in
    each of ``languages``), each Holm-corrected within itself."""
    pooled = [f(decomposed, n_boot=n_boot, seed=seed, scope="all languages")
              for f in (prior_favours_acceptable, direct_gains_from_prior)]
    per_language = [direct_gains_from_prior(decomposed[decomposed.lang == lang], n_boot=n_boot,
                                            seed=seed, scope=lang) for lang in languages]
    return (correct(pooled, "concept prior, pooled", "confirmatory")
            + correct(per_language, "Direct's gain, per language", "exploratory"))



# --- the claim contract (issue 42): each claim's null, stated effect and trap, simulated -------

def simulate_decomposed(seed: int, prior_mean: float = 0.0, prior_tied: float = 0.0,
                        exchangeable: bool = False, concept_share: float = 0.5,
                        concept_base: float = 3.0, cond_shift: float = 0.0, n_items: int = 30,
                        n_langs: int = 7) -> pd.DataFrame:
    """One simulated decomposition of XCOMPS pairs (:func:`xcomps_utils.analysis.decompose.
    decompose_pairs`' columns these claims read), a row per language x item x negative type.

    Knowledge ``K`` (nats; 0.3 plus an item offset, sd 0.5, alike in every language) is read
    by the continuation, ``cond_delta = K + cond_shift + e`` (``e`` ~ N(0, 1)); the prior is
    ``prior_mean`` + an item offset (sd 0.3) + ``prior_tied`` times ``e`` + N(0, 1) noise, and
    ``delta = cond_delta + prior_delta``. ``exchangeable``: Direct and conditional Direct are
    two equally noisy readings of ``K`` (``delta = K + prior_mean + e'``), what
    :func:`direct_gains_from_prior`'s null says. The surprisal differences of the concept and
    the property groups (per token sums over 3 tokens each, base surprisal ``concept_base``
    and 3 nats a token) share ``|delta|`` as ``concept_share`` to ``1 - concept_share`` plus
    mean-zero noise; ``plain_concept_s`` is the concept's plain proportion of them.
    """
    rng = np.random.default_rng(seed)
    n_t = 4
    n = n_langs * n_items * n_t
    item = np.tile(np.repeat(np.arange(n_items), n_t), n_langs)
    know = 0.3 + rng.normal(0, 0.5, n_items)[item]
    e = rng.normal(size=n)
    cond = know + cond_shift + e
    if exchangeable:
        delta = know + prior_mean + rng.normal(size=n)
    else:
        delta = cond + prior_mean + rng.normal(0, 0.3, n_items)[item] + prior_tied * e \
            + rng.normal(size=n)
    # surprisal of each group in both sentences: the base cancels in their difference
    base_c, base_p = 3 * concept_base, 3 * 3.0
    d_c = concept_share * delta + rng.normal(0, 0.5, n)
    d_p = (1 - concept_share) * delta + rng.normal(0, 0.5, n)
    s_good_c, s_good_p = base_c + rng.normal(0, 1, n), base_p + rng.normal(0, 1, n)
    dc, dp = (s_good_c + d_c) - s_good_c, (s_good_p + d_p) - s_good_p
    with np.errstate(invalid="ignore"):
        plain = np.abs(dc) / (np.abs(dc) + np.abs(dp))
    return pd.DataFrame({
        "lang": np.repeat([f"l{k}" for k in range(n_langs)], n_items * n_t),
        "property": [f"p{i}" for i in item],
        "negative_sample_type": np.tile(["taxonomic", "overlap", "co-occurrence", "random"],
                                        n_langs * n_items),
        "delta": delta, "cond_delta": cond, "prior_delta": delta - cond,
        "direct_correct": (delta > 0).astype(float), "cond_correct": (cond > 0).astype(float),
        "plain_concept_s": plain})


def _control(seed: int, level: float, n_items: int = 30, n_langs: int = 7) -> pd.DataFrame:
    """Simulated mismatched-continuation pairs for :func:`property_above_chance`: conditional
    Direct right with probability ``level`` (a chance level drawn, not 0.5), items as in
    :func:`simulate_decomposed`."""
    rng = np.random.default_rng(seed + 10 ** 6)
    n = n_langs * n_items * 4
    item = np.tile(np.repeat(np.arange(n_items), 4), n_langs)
    return pd.DataFrame({"property": [f"p{i}" for i in item],
                         "cond_correct": (rng.random(n) < level).astype(float)})


def _at(level: float, seed: int, n_items: int = 30, n_langs: int = 7) -> pd.DataFrame:
    """Decomposed pairs whose conditional Direct is right with probability ``level``."""
    d = simulate_decomposed(seed, n_items=n_items, n_langs=n_langs)
    rng = np.random.default_rng(seed + 2 * 10 ** 6)
    return d.assign(cond_correct=(rng.random(len(d)) < level).astype(float))


def _contracts():
    from .contract import Contract, Scenario

    n = dict(n_boot=500)
    sim = lambda f, **k: lambda s: f(simulate_decomposed(s, **k), **n)  # noqa: E731
    chance = lambda pairs, ctrl: lambda s: property_above_chance(  # noqa: E731
        _at(pairs, s), control=_control(s, ctrl), **n)
    return [
        Contract("prior_favours_acceptable",
                 null=Scenario("a prior of median 0 (item offsets sd 0.3), independent of the "
                               "continuation", sim(prior_favours_acceptable)),
                 effect=Scenario("a prior of mean 0.4 nats (favours the acceptable concept in "
                                 "about 63% of pairs)", sim(prior_favours_acceptable,
                                                            prior_mean=0.4)),
                 traps=(Scenario("a zero-mean prior tied to the continuation (0.8 of its "
                                 "noise): it changes Direct's accuracy, not the prior's sign",
                                 sim(prior_favours_acceptable, prior_tied=0.8)),)),
        Contract("direct_gains_from_prior",
                 null=Scenario("Direct and conditional Direct two equally noisy readings of "
                               "the same knowledge", sim(direct_gains_from_prior,
                                                         exchangeable=True)),
                 effect=Scenario("Direct's reading shifted 0.5 nats toward the acceptable "
                                 "concept by its prior", sim(direct_gains_from_prior,
                                                             exchangeable=True, prior_mean=0.5))),
        Contract("concept_carries_most",
                 null=Scenario("concept and property groups share the difference equally, "
                               "mean-zero surprisal noise on both", sim(concept_carries_most)),
                 effect=Scenario("the concept carries 70% of the difference",
                                 sim(concept_carries_most, concept_share=0.7)),
                 traps=(Scenario("a rarer concept (5 nats a token against 3), the same shift "
                                 "as the property", sim(concept_carries_most,
                                                        concept_base=5.0)),)),
        Contract("property_above_chance",
                 null=Scenario("the continuation as accurate as another item's (both 0.5)",
                               chance(0.5, 0.5)),
                 effect=Scenario("0.65 against a drawn level of 0.55", chance(0.65, 0.55)),
                 traps=(Scenario("a chance level far from 0.5: both at 0.62 (what a length "
                                 "preference alone gives)", chance(0.62, 0.62)),)),
    ]


#: the concept-prior claims' contracts (:mod:`xcomps_utils.analysis.contract`)
CONTRACTS = _contracts()
