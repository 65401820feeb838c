"""BMLAMA (Qi, Fernández & Bisazza, EMNLP 2023) on this run: knowledge decided at the language unit.

The analysis layer of the BMLAMA chapter (issue 28): data frames in, tables and
:class:`xcomps_utils.analysis.claims.ClaimTest` verdicts out; no model, no torch. Each BMLAMA row (a prompt
with ``<mask>``, the gold and 10 candidates, the gold among them) is scored by Direct as 9 minimal
pairs (good: the gold filled in; bad: one distractor), so every number below comes from the pairs
a Direct run stores (:data:`xcomps_utils.runs.store.MEASURE_SCHEMA`, widened one row a pair).

**Pairs** (``pairs``; the loader's pairs joined with the run's Direct measures, e.g. by
:func:`xcomps_utils.analysis.xcomps_paper.pair_table`), one row per pair:

=================================  ==============================================================
column                             meaning
=================================  ==============================================================
``lang``                           the language
``fact``                           the fact's id, the same in every language (the unit resampled)
``candidate``                      the distractor's index among the row's 10 candidates (aligned
                                   across languages: candidate ``k`` of a fact is the same entity
                                   in every language)
``gold_candidate`` (optional)      the gold's index among them (else the gold is labelled -1)
``<p>_logprob_good``, ``_bad``     summed log-probability of the two sentences (nats)
``<p>_logprob_mean_good``, ``_bad``  per-token mean log-probability (nats / token)
``<p>_n_tokens_good``, ``_bad``    scored tokens of each sentence
``<p>_near_tie_tolerance`` (opt.)  the run's error bound of the summed difference (nats; 0 if
                                   absent), :func:`xcomps_utils.lm.precision.pair_tolerance`
=================================  ==============================================================

``<p>`` is the method prefix (``direct``). The **control** frame has the same columns: the same
template and candidates with another fact's subject (so nothing of the fact is left), ``fact``
naming the fact whose template and candidates it uses (pairing it with that fact).

**Language table** (``typology``, one row per language, index the language code): ``family`` (the
stratum of every language-level null), ``resource_tier`` (``low``/``medium``/``high``),
``paper_type`` (the XCOMPS paper's ``analytic``/``inflected``/``agglutinative``, on its 17) and
``morphology_index`` (a derived Grambank/WALS index, larger = more complex); other names can be
passed. Missing values leave that language out of the claim that needs them.

Functions: :func:`pair_decisions` (the near-tie rule for both reductions), :func:`fact_table`
(rank, top-1 and pairwise accuracy per fact), :func:`language_table` (accuracies with intervals,
the control's, and accuracy beyond it), the claims :func:`resource_trend`,
:func:`morphology_trend`, :func:`english_rank`, :func:`methods_track`, each trend on its two
co-primary measures (:func:`knowledge_trend`, :func:`coprimary`) and at each depth of
stratification (:func:`strata_table`, :func:`depth_table`), :func:`minimum_detectable_effect`; cross-lingual consistency
:func:`rankc`, :func:`rankc_table`, :func:`rankc_null`, :func:`agreement_kappas`,
:func:`consistency_follows`; and :func:`correct_families` (the chapter's Holm families).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pandas as pd

from ..lm.precision import decide, per_unit_tolerance
from .claims import (ALPHA, INVERTED, ClaimTest, bootstrap_means, finish, language_claim,
                     pearsons, permutation_p, relabelings, slope, slopes)
from .families import SESOI, correct
from .scored import scored_pairs as _scored_pairs

__all__ = ["REDUCTIONS", "TIER_ORDER", "TYPE_ORDER", "BMLAMA_SOURCE", "RANKC_SOURCE",
           "scored_pairs", "spread_and_noise", "facts_for_power", "pair_decisions", "fact_table", "language_table", "control_gaps", "resource_trend",
           "morphology_trend", "english_rank", "methods_track", "STRATA", "HEADLINE_STRATA",
           "strata_table", "COPRIMARY", "coprimary", "knowledge_trend", "depth_table", "CONTRACTS",
           "minimum_detectable_effect", "rankc", "rankc_weights", "candidate_scores",
           "rankc_table", "rankc_null", "agreement_kappas", "consistency_follows",
           "correct_families", "language_claims", "power_table", "consistency_table",
           "PRIMARY_CLAIMS", "TrendInversion"]

#: the two reductions of a filled sentence's token log-probabilities: the sum (the project's
#: Direct) and the per-token mean (the BMLAMA authors' ranking, ``1_easyrun/main.py``)
REDUCTIONS = ("sum", "mean")
TIER_ORDER = {"low": 0, "medium": 1, "high": 2}
#: the paper's types on [0, 1], so that a morphology trend over them and one over the Grambank
#: share of bound inflection are read in one unit: accuracy from the label's one end to the other
TYPE_ORDER = {"analytic": 0.0, "inflected": 0.5, "agglutinative": 1.0}
BMLAMA_SOURCE = "He et al. (2025), XCOMPS, §4.3, on BMLAMA (Qi et al., 2023)"
RANKC_SOURCE = ("Qi, Fernández & Bisazza (2023), §3 (RankC); github.com/Betswish/"
                "Cross-Lingual-Consistency, 1_easyrun/RankC.py")
#: the XCOMPS paper's primary claims, tested on BMLAMA (confirmatory); the rest is exploratory
PRIMARY_CLAIMS = ("resource_trend", "morphology_trend", "english_rank", "direct_tracks_neuro")


def _cols(prefix: str, reduction: str) -> tuple[str, str]:
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")
    mid = "logprob" if reduction == "sum" else "logprob_mean"
    return f"{prefix}_{mid}_good", f"{prefix}_{mid}_bad"


def _need(frame: pd.DataFrame, cols, what: str) -> None:
    missing = [c for c in cols if c not in frame]
    if missing:
        raise ValueError(f"{what} lack column(s) {missing} (have {list(frame.columns)})")


def scored_pairs(measures: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """A Direct run's BMLAMA pairs in this module's columns: ``pairs`` (from
    :func:`xcomps_utils.pairs.bmlama.load_bmlama`, :func:`~xcomps_utils.pairs.bmlama.control_pairs` or
    :func:`xcomps_utils.pairs.tasks.sample` of their tasks) joined with the run's measures by
    :func:`xcomps_utils.analysis.scored.scored_pairs` (the one scored-pairs table every chapter reads),
    with ``candidate`` the distractor's index, ``gold_candidate`` the gold's and
    ``candidate_text`` the distractor itself.

    Pairs whose distractor is also true (``distractor_true``: relations with several answers)
    are kept and flagged; :func:`language_table` and the claims read the others (pass
    ``scored[~scored.distractor_true]``), RankC every candidate (a ranking, not a decision).

    Args:
        measures: long results of :func:`xcomps_utils.runs.execute.run` (Direct) on these pairs.
        pairs: ``[n, BMLAMA_COLUMNS]``.

    Returns:
        ``[n, ...]``: one row per pair, ``direct_logprob_good``/``_bad`` (nats),
        ``direct_logprob_mean_good``/``_bad`` (nats per token), ``direct_n_tokens_*``,
        ``direct_near_tie_tolerance`` and ``direct_decision``.

    Raises:
        ValueError: pairs without the BMLAMA columns, or measures without Direct's.
    """
    _need(pairs, ["lang", "fact", "candidate", "candidate_index", "gold_index"], "BMLAMA pairs")
    out = _scored_pairs(measures, pairs, methods=("direct",))
    _need(out, ["direct_logprob_good", "direct_logprob_bad"], "the run's measures (Direct)")
    return out.rename(columns={"candidate": "candidate_text"}).rename(
        columns={"candidate_index": "candidate", "gold_index": "gold_candidate"})


def spread_and_noise(table: pd.DataFrame, value: str = "accuracy", low: str = "ci_low",
                     high: str = "ci_high", confidence: float = 0.95) -> dict:
    """How far apart the languages are against how precisely each is measured: the
    between-language standard deviation of ``value`` with each language's sampling variance
    removed (method of moments: ``var(values) - mean(se^2)``, floored at 0), and the mean
    per-language standard error, read from the percentile intervals (``se = (high - low) /
    (2 z)``).

    Args:
        table: :func:`language_table` output, one row per language.

    Returns:
        ``{"between_sd", "observed_sd", "mean_se", "n_languages"}`` (accuracy units).
    """
    from scipy import stats

    _need(table, [value, low, high], "the language table")
    d = table[[value, low, high]].dropna()
    z = stats.norm.ppf(0.5 + confidence / 2)
    se = (d[high] - d[low]) / (2 * z)
    obs = float(d[value].std(ddof=1)) if len(d) > 1 else math.nan
    between = math.sqrt(max(obs ** 2 - float((se ** 2).mean()), 0.0)) if len(d) > 1 else math.nan
    return {"between_sd": between, "observed_sd": obs, "mean_se": float(se.mean()),
            "n_languages": len(d)}


def facts_for_power(mean_se: float, n_facts: int, between_sd: float, ratio: float = 0.5
                    ) -> int:
    """Facts per language at which a language's sampling error is ``ratio`` times the spread
    between languages (``se * sqrt(n_facts / F) <= ratio * between_sd``): the size at which a
    language's place among the others is its own, not its sample's. The standard error shrinks
    as ``1 / sqrt(F)`` because facts are resampled as independent units.

    Args:
        mean_se: the mean per-language standard error measured at ``n_facts`` facts.
        between_sd: the spread between languages (:func:`spread_and_noise`).

    Returns:
        the number of facts (at least ``n_facts`` is not implied: a spread already far above the
        noise returns fewer); a large sentinel (10**9) when ``between_sd`` is 0.

    Raises:
        ValueError: non-positive ``n_facts`` or ``ratio``.
    """
    if n_facts < 1 or ratio <= 0:
        raise ValueError(f"n_facts and ratio must be positive; got {n_facts}, {ratio}")
    if not between_sd > 0:
        return 10 ** 9
    return int(math.ceil(n_facts * (mean_se / (ratio * between_sd)) ** 2))


def pair_decisions(pairs: pd.DataFrame, reduction: str = "sum", prefix: str = "direct"
                   ) -> pd.Series:
    """Each pair's decision by one reduction: ``"right"``, ``"wrong"``, ``"tie"``, ``"near_tie"``.

    The one rule, :func:`xcomps_utils.lm.precision.decide`: a tie is ``delta == 0``; a near tie
    ``0 < |delta| <`` the pair's tolerance; otherwise the sign decides. For ``"sum"`` the
    tolerance is the run's ``<p>_near_tie_tolerance`` (nats per pair), so this equals
    :func:`~xcomps_utils.lm.precision.decisions` of the run's columns (tested). For ``"mean"`` it
    is that tolerance divided by the shorter sentence's tokens
    (:func:`~xcomps_utils.lm.precision.per_unit_tolerance`, a bound for every dtype), as the
    grammar chapter's per-token convention and the XCOMPS tables' ``direct_mean_decision``.

    Returns:
        ``[n]`` object Series of the four labels, NaN where a score is missing.

    Raises:
        ValueError: a missing column or an unknown reduction.
    """
    g, b = _cols(prefix, reduction)
    ng, nb = f"{prefix}_n_tokens_good", f"{prefix}_n_tokens_bad"
    _need(pairs, [g, b] + ([ng, nb] if reduction == "mean" else []), "pairs")
    delta = (pairs[g] - pairs[b]).to_numpy(float)
    tol_col = f"{prefix}_near_tie_tolerance"
    tol = (pairs[tol_col].fillna(0).to_numpy(float) if tol_col in pairs
           else np.zeros(len(pairs)))
    if reduction == "mean":
        tol = per_unit_tolerance(tol, pairs[ng], pairs[nb])
    return pd.Series(decide(delta, tol), index=pairs.index, dtype=object)


def fact_table(pairs: pd.DataFrame, prefix: str = "direct") -> pd.DataFrame:
    """One row per (``lang``, ``fact``): the gold's place among its candidates, both reductions.

    Columns, for ``r`` in ``sum``, ``mean``: ``top1_r`` (1: every distractor decided below the
    gold; 0: one or more decided above it; NaN: none above but some within the near-tie
    tolerance, no decision), ``rank_r`` (1 + distractors above the gold + half of the ties and
    near ties: a description), ``pairwise_r`` (the share of decided pairs the gold wins),
    ``decided_r`` (decided pairs), and ``n_candidates`` (pairs + 1).

    Raises:
        ValueError: a missing column (see the module's table).
    """
    _need(pairs, ["lang", "fact"], "pairs")
    keys = pairs[["lang", "fact"]].reset_index(drop=True)
    out = None
    for r in REDUCTIONS:
        dec = pair_decisions(pairs, r, prefix).reset_index(drop=True)
        d = keys.assign(right=(dec == "right").astype(float), wrong=(dec == "wrong").astype(float),
                        undecided=dec.isin(["tie", "near_tie"]).astype(float), n=1.0)
        s = d.groupby(["lang", "fact"], sort=True)[["right", "wrong", "undecided", "n"]].sum()
        decided = s["right"] + s["wrong"]
        f = pd.DataFrame({
            f"top1_{r}": np.where(s["wrong"] > 0, 0.0, np.where(s["undecided"] > 0, np.nan, 1.0)),
            f"rank_{r}": 1 + s["wrong"] + s["undecided"] / 2,
            f"pairwise_{r}": s["right"] / decided.where(decided > 0),
            f"decided_{r}": decided.astype(int)}, index=s.index)
        out = f.assign(n_candidates=(s["n"] + 1).astype(int)) if out is None else out.join(f)
    return out.reset_index()


def _boot_mean(values: pd.DataFrame, col: str, n_boot: int, seed: int, confidence: float):
    """Mean of ``col`` over facts (NaN rows out) and its percentile interval, facts resampled."""
    d = values[values[col].notna()]
    if len(d) < 2:
        return (float(d[col].mean()) if len(d) else math.nan), math.nan, math.nan
    est, lo, hi, _ = bootstrap_means(d, col, "fact", None, lambda m, lv: m[:, 0], n_boot, seed,
                                     confidence)
    return est, lo, hi


def language_table(pairs: pd.DataFrame, control: pd.DataFrame | None = None,
                   reduction: str = "mean", prefix: str = "direct", n_boot: int = 2000,
                   seed: int = 0, confidence: float = 0.95) -> pd.DataFrame:
    """Per language: top-1 accuracy and pairwise accuracy with intervals (facts resampled), the
    control's (the chance level drawn: what the candidates alone give), and accuracy beyond it.

    The chance of ranking the gold first among 10 is 1/10 only when the candidates are
    exchangeable; they are not (lengths and frequencies differ, and the gold is often the most
    frequent word), so the baseline is drawn from ``control``: the same template and candidates
    with another fact's subject. ``beyond`` is ``accuracy - control_accuracy``, its interval from
    resampling facts with both frames' rows of a fact kept together (paired by fact), as
    :mod:`xcomps_utils.analysis.concept_prior` reads Direct against its prior.

    Args:
        pairs, control: pair frames (module docstring); ``control`` may be None (no baseline).
        reduction: ``"mean"`` (the BMLAMA authors') or ``"sum"``.

    Returns:
        one row per language: ``n_facts``, ``accuracy`` (share of decided facts with the gold
        first), ``ci_low``, ``ci_high``, ``pairwise``, ``pairwise_low``, ``pairwise_high``,
        ``chance_exchangeable`` (1 / candidates), and with a control ``control_accuracy``,
        ``control_low``, ``control_high``, ``control_pairwise``, ``beyond``, ``beyond_low``,
        ``beyond_high``, ``pairwise_beyond``, ``pairwise_beyond_low``, ``pairwise_beyond_high``
        (both differences paired by fact), and the knowledge in nats, whatever ``reduction``:
        ``nats_beyond`` (``_low``, ``_high``; each pair's *summed* margin, gold minus
        distractor, in the real frame minus the same pair's in the control frame, averaged
        within a fact, then over facts: the log-odds the fact's subject adds to the gold), with
        ``control_spread`` (the standard deviation of the control's summed margins, nats),
        ``tokens`` and ``control_tokens`` (mean tokens per scored sentence in each frame).
    """
    facts = fact_table(pairs, prefix)
    ctl = fact_table(control, prefix) if control is not None else None
    top, pw = f"top1_{reduction}", f"pairwise_{reduction}"
    rows = []
    for lang, f in facts.groupby("lang", sort=True):
        row = {"lang": lang, "n_facts": int(f[top].notna().sum()),
               "chance_exchangeable": float((1 / f["n_candidates"]).mean())}
        row["accuracy"], row["ci_low"], row["ci_high"] = _boot_mean(f, top, n_boot, seed,
                                                                    confidence)
        row["pairwise"], row["pairwise_low"], row["pairwise_high"] = _boot_mean(
            f, pw, n_boot, seed, confidence)
        if ctl is not None:
            c = ctl[ctl["lang"] == lang]
            row["control_accuracy"], row["control_low"], row["control_high"] = _boot_mean(
                c, top, n_boot, seed, confidence)
            row["control_pairwise"] = float(c[pw].mean())

            def diff(m, levels):
                if "real" not in levels or "control" not in levels:
                    return np.full(len(m), np.nan)
                return m[:, levels.index("real")] - m[:, levels.index("control")]
            for name, col in (("beyond", top), ("pairwise_beyond", pw)):
                both = pd.concat([f[["fact", col]].assign(cond="real"),
                                  c[["fact", col]].assign(cond="control")]).dropna(subset=[col])
                if both["cond"].nunique() == 2 and both["fact"].nunique() >= 2:
                    est, lo, hi, _ = bootstrap_means(both, col, "fact", "cond", diff, n_boot,
                                                     seed, confidence)
                else:
                    est, lo, hi = math.nan, math.nan, math.nan
                row[name], row[f"{name}_low"], row[f"{name}_high"] = est, lo, hi
            row.update(_nats_row(pairs[pairs["lang"] == lang], control[control["lang"] == lang],
                                 prefix, n_boot, seed, confidence))
        rows.append(row)
    return pd.DataFrame(rows).set_index("lang")


def control_gaps(trained: pd.DataFrame, control: pd.DataFrame, value: str = "pairwise_beyond",
                 n_boot: int = 2000, seed: int = 0, confidence: float = 0.95) -> pd.DataFrame:
    """A trained model's knowledge beside its untrained control's (``random:<model>``: the same
    architecture and tokenizer, the initialiser's weights), language by language, on the same
    facts and control frames.

    Two controls of two things: the control frame (another fact's subject) removes what the
    candidates alone give; the untrained network removes what the architecture and tokenizer
    alone read from the prompt. An untrained network knows no fact, so its accuracy beyond the
    control frame is 0 up to noise, while its accuracy in the real frame may lie well above 0.5
    through the candidates' form (both shown).

    Args:
        trained, control: :func:`language_table` of the two models, each with its control frame.
        value: the column compared (``pairwise_beyond`` or ``beyond``: accuracy beyond the
            control frame, a difference of accuracies).

    Returns:
        one row per language both tables hold: ``trained_pairwise``, ``control_pairwise`` (each
        model's pairwise accuracy in the real frame), ``trained``, ``control`` (each model's
        ``value``), ``gap`` (trained minus control); then a row ``mean`` (means over the
        languages) whose ``gap`` has ``ci_low``, ``ci_high``, a percentile bootstrap over the
        languages (the unit: one value a language), and ``languages`` (their number).

    Raises:
        ValueError: ``value`` or ``pairwise`` not in a table; no language with a gap.
    """
    for t in (trained, control):
        if value not in t or "pairwise" not in t:
            raise ValueError(f"control_gaps: the language tables need 'pairwise' and {value!r} "
                             f"(language_table with a control frame); got {list(t.columns)}")
    both = trained[["pairwise", value]].join(control[["pairwise", value]], lsuffix="_t",
                                             rsuffix="_c", how="inner")
    out = pd.DataFrame({"trained_pairwise": both["pairwise_t"],
                        "control_pairwise": both["pairwise_c"],
                        "trained": both[f"{value}_t"], "control": both[f"{value}_c"]})
    out["gap"] = out["trained"] - out["control"]
    data = out["gap"].dropna().rename_axis("lang").reset_index()
    if data.empty:
        raise ValueError("control_gaps: no language has a value in both tables")
    est, lo, hi, n = bootstrap_means(data, "gap", "lang", None, lambda m, _: m[:, 0],
                                     n_boot=n_boot, seed=seed, confidence=confidence)
    mean = out.loc[data["lang"]].mean()
    mean["gap"] = est
    out.loc["mean"] = mean
    out["ci_low"], out["ci_high"] = np.nan, np.nan
    out.loc["mean", ["ci_low", "ci_high"]] = [lo, hi]
    out["languages"] = [1] * (len(out) - 1) + [n]
    return out


def _nats_row(real: pd.DataFrame, control: pd.DataFrame, prefix: str, n_boot: int, seed: int,
              confidence: float) -> dict:
    """One language's knowledge in nats (:func:`language_table`): each pair's summed margin in
    the real frame minus the same pair's (fact, candidate) in the control frame, averaged within
    a fact, then over facts (interval: facts resampled); the spread of the control margins and
    the tokens per sentence of both frames."""
    g, b = _cols(prefix, "sum")
    nt = [f"{prefix}_n_tokens_good", f"{prefix}_n_tokens_bad"]
    out = {"nats_beyond": math.nan, "nats_beyond_low": math.nan, "nats_beyond_high": math.nan,
           "control_spread": math.nan, "tokens": math.nan, "control_tokens": math.nan}
    if not all(c in real and c in control for c in ["candidate", g, b]):
        return out
    key = ["fact", "candidate"]
    m = real[key + [g, b]].merge(control[key + [g, b]], on=key, suffixes=("", "_c"))
    cm = control[g] - control[b]
    out["control_spread"] = float(cm.std(ddof=1)) if len(cm) > 1 else math.nan
    if all(c in real and c in control for c in nt):
        out["tokens"] = float(real[nt].to_numpy(float).mean())
        out["control_tokens"] = float(control[nt].to_numpy(float).mean())
    if m.empty:
        return out
    per = m.assign(nats=(m[g] - m[b]) - (m[f"{g}_c"] - m[f"{b}_c"])).groupby(
        "fact", as_index=False)["nats"].mean()
    out["nats_beyond"], out["nats_beyond_low"], out["nats_beyond_high"] = _boot_mean(
        per, "nats", n_boot, seed, confidence)
    return out


# --- language-level claims ----------------------------------------------------------------------

def _corr(v: np.ndarray, x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    ok = np.isfinite(v) & np.isfinite(x)
    if ok.sum() < 3 or np.std(v[ok]) == 0 or np.std(x[ok]) == 0:
        return math.nan
    return float(np.corrcoef(v[ok], x[ok])[0, 1])


def _corrs(v: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """:func:`_corr` of ``v`` with each row of ``xs`` (``[P, n]``) at once: ``[P]``."""
    xs, v = np.asarray(xs, dtype=float), np.asarray(v, dtype=float)
    if not (np.isfinite(xs).all() and np.isfinite(v).all()):
        return np.array([_corr(v, x) for x in xs], dtype=float)   # NaN pairs dropped per row
    if len(v) < 3:
        return np.full(len(xs), math.nan)
    return pearsons(v, xs)   # NaN where either side is constant, as _corr


def _aligned(table: pd.DataFrame, value: str, typology: pd.DataFrame, cols: list[str]):
    _need(table, [value], "the language table")
    _need(typology, cols, "the typology table")
    d = table[[value]].join(typology[cols], how="inner").dropna()
    return d


def _strata(d: pd.DataFrame, strata: str | None):
    if strata is None:
        return None
    s = d[strata].astype(str).rename(strata)
    return s if s.nunique() > 1 else None


#: the depths a language-level null is stratified at, shallow to deep: column -> words
STRATA = {"family": "top-level family (Glottolog)", "genus": "genus (WALS)",
          "genus_script": "genus × script"}
#: the depth the chapter's verdicts use: the deepest of :data:`STRATA`, the one a branch bonus
#: (Germanic and Romance better known) and a script bonus (Latin script) cannot pass
HEADLINE_STRATA = "genus_script"


def strata_table(typology: pd.DataFrame, data_dir=None) -> pd.DataFrame:
    """``typology`` (:func:`xcomps_utils.pairs.typology.language_table`) with the strata below
    the family: ``genus``, the WALS v2020.4 genus (``cldf/languages.csv``) of the WALS
    languages with the language's Glottocode, its ISO 639-3 code among their ``ISO_codes``, or
    a code in its ``wals_codes`` (Serbian and Croatian: Serbian-Croatian); a language WALS does
    not have, or whose WALS languages name several genera, is a stratum of its own
    (``"<name> (no WALS genus)"``: it adds no contrast, never a guess); and ``genus_script``,
    the genus and the script together.

    Raises:
        ValueError: a typology without ``glottocode``, ``iso639_3``, ``script``.
        DataError: the WALS file missing or failing its checksum.
    """
    from ..pairs.data import dataset_file

    _need(typology, ["glottocode", "iso639_3", "script", "name"], "the typology table")
    w = pd.read_csv(dataset_file("wals", "cldf/languages.csv", data_dir),
                    keep_default_na=False, na_values=[""])
    iso = w["ISO_codes"].fillna("").str.split()
    genus = {}
    for code, row in typology.iterrows():
        codes = str(row.get("wals_codes", "") or "").replace("nan", "").replace(",", " ").split()
        hit = (w["Glottocode"] == row["glottocode"]) | iso.map(lambda c: row["iso639_3"] in c) \
            | w["ID"].isin(codes)
        g = sorted(set(w.loc[hit, "Genus"].dropna()))
        genus[code] = g[0] if len(g) == 1 else f"{row['name']} (no WALS genus)"
    out = typology.assign(genus=pd.Series(genus))
    return out.assign(genus_script=out["genus"] + " / " + out["script"].astype(str))


def _count_labelings(x: np.ndarray, strata) -> int:
    """Distinct relabelings of ``x`` within ``strata`` (a multinomial per stratum)."""
    st = np.zeros(len(x)) if strata is None else pd.factorize(np.asarray(strata))[0]
    total = 1
    for k in np.unique(st):
        vals = pd.Series(np.asarray(x)[st == k]).value_counts()
        n = math.factorial(int(vals.sum()))
        for c in vals:
            n //= math.factorial(int(c))
        total *= n
    return total


def _strata_caveat(st: pd.Series | None, x: pd.Series, label: str) -> str:
    """The caveat of a trend, from the strata it used: how many strata, which of them hold two
    or more values of the label (the only contrasts the test reads), and what that protects
    against."""
    if st is None:
        return "languages permuted freely: related languages are treated as independent"
    name = st.name or "stratum"
    words = STRATA.get(name, name)
    spread = x.groupby(st.to_numpy()).nunique()
    live = sorted(spread.index[spread > 1])
    n_live = int(st.isin(live).sum())
    shown = ", ".join(live[:6]) + (f" and {len(live) - 6} more" if len(live) > 6 else "")
    return (f"labels permuted within {st.nunique()} strata of {words}; {len(live)} of them hold "
            f"two or more {label} values ({shown or 'none'}: {n_live} of {len(st)} languages), "
            f"the only contrasts the test reads: an effect shared by every language of one "
            f"{words} stratum cannot make the verdict, one that differs inside a stratum can")


_LABELINGS: dict = {}


def _relabelings(x: np.ndarray, strata, n_perm: int, seed: int):
    """:func:`xcomps_utils.analysis.claims.relabelings` of ``x``, the exact ones kept (a
    simulation draws the same labels again and again)."""
    key = (tuple(x.tolist()), None if strata is None else tuple(map(str, strata)))
    if key in _LABELINGS:
        return _LABELINGS[key], True
    lab, exact = relabelings(x.astype(object), strata, n_perm, seed)
    if exact and len(_LABELINGS) < 64:
        _LABELINGS[key] = lab
    return lab, exact


def _ranks(a: np.ndarray) -> np.ndarray:
    """``scipy.stats.rankdata(a)`` (average ranks, 1-based, float), by one sort where no two
    values tie and all are finite (a bisection ranks ``v - b * x`` about 150 times a test:
    scipy's checks took a third of a simulated trend test)."""
    order = np.argsort(a, kind="stable")
    s = a[order]
    if not np.isfinite(s).all() or (s[1:] == s[:-1]).any():
        from scipy.stats import rankdata

        return rankdata(a)
    out = np.empty(len(a))
    out[order] = np.arange(1, len(a) + 1, dtype=float)
    return out


class TrendInversion:
    """A trend's permutation test at every slope ``b``: were the slope of ``v`` on ``x`` equal to
    ``b`` (an additive trend), ``v - b * x`` would not depend on ``x``, so its languages are
    exchangeable within ``strata`` and the rank slope of ``v - b * x`` on ``x`` is compared with
    the same relabelings the trend's own test reads (:func:`xcomps_utils.analysis.claims.
    relabelings`, the same seed). At ``b = 0`` it is the trend's test.

    ``p(b)`` gives the one-sided p of the slope above ``b`` and below it; calling the object
    with a two-sided ``level`` gives the interval of the slopes it does not reject there (each
    end found by bisection: the rank slope of ``v - b * x`` only falls as ``b`` grows), NaN at an
    end no slope can be rejected (too few relabelings). The relabelings' statistics are one
    matrix product per ``b``.

    Args:
        v: ``[n]`` the languages' values (accuracy beyond the control).
        x: ``[n]`` their label, coded (tier step, a [0, 1] morphology label).
        strata: ``[n]`` the family of each language, or None.
    """

    def __init__(self, v: np.ndarray, x: np.ndarray, strata, n_perm: int, seed: int):
        self.v, self.x = np.asarray(v, float), np.asarray(x, float)
        lab, self.exact = _relabelings(self.x, strata, n_perm, seed)
        xs = lab.astype(float)
        ss = float(((self.x - self.x.mean()) ** 2).sum())
        self.xc = (self.x - self.x.mean()) / ss
        self.null = (xs - xs.mean(axis=1, keepdims=True)) / ss       # [P, n]
        self.scale = float(np.ptp(self.v) / np.ptp(self.x)) if np.ptp(self.x) > 0 else 1.0

    def p(self, b: float) -> tuple[float, float]:
        """``(p above, p below)``: one-sided p that the slope exceeds ``b`` / falls short."""
        w = _ranks(self.v - b * self.x)
        hi, lo, _ = permutation_p(float(self.xc @ w), self.null @ w, self.exact, +1)
        return hi, lo

    def __call__(self, level: float = 0.05) -> tuple[float, float]:
        a, far = level / 2, 10 * self.scale + 1.0

        def end(side: int) -> float:
            # side 0: the lowest b not rejected from below; side 1: the highest from above
            rejected = (lambda b: self.p(b)[0] <= a) if side == 0 else (
                lambda b: self.p(b)[1] <= a)
            inside, out = (far, -far) if side == 0 else (-far, far)
            if not rejected(out):
                return math.nan
            for _ in range(40):
                mid = (inside + out) / 2
                inside, out = (inside, mid) if rejected(mid) else (mid, out)
            return float(inside)
        return end(0), end(1)

    def p_equivalent(self, margin: float) -> float:
        """The TOST p that the slope lies within ``±margin``: a rank slope of ``v - margin * x``
        below what relabelings give rejects a slope of ``+margin`` or more; one of
        ``v + margin * x`` above them rejects ``-margin`` or less. The larger of the two
        one-sided p (each exact, or drawn as the trend's)."""
        return float(max(self.p(+margin)[1], self.p(-margin)[0]))

    def estimate(self) -> float:
        """The slope the test finds most central: where the p above and the p below cross (the
        middle of the interval at level 1, a Hodges-Lehmann estimate), so it lies inside every
        interval of the test. NaN when the relabelings cannot place it."""
        lo, hi = self(1.0)
        return float((lo + hi) / 2)


def _trend(claim, hypothesis, table, typology, value, label, order, direction, strata,
           n_perm, seed, unit_words, scope, sesoi=None, describe=True):
    cols = [label] + ([strata] if strata else [])
    d = _aligned(table, value, typology, list(dict.fromkeys(cols)))
    x = d[label].map(order) if order is not None else d[label].astype(float)
    d = d[x.notna()]
    x = x[x.notna()].astype(float)
    if x.nunique() < 2:
        raise ValueError(f"a trend needs two {label} levels or more among the languages; got "
                         f"{sorted(x.unique())}")
    st = _strata(d, strata)
    # the test reads the slope of the languages' *ranks* (one language far from the rest moves
    # it by one rank, so it cannot make a trend alone); the effect printed is the slope in
    # accuracy the same test finds most central, inside its interval (TrendInversion)
    ranks = pd.Series(d[value].rank().to_numpy(float), index=d.index)
    t = language_claim(
        claim, hypothesis, f"slope of language {value} per {unit_words} (the slope the test "
        f"finds most central; tested on the languages' ranks"
        + (f", within each {strata}" if st is not None else "") + ")", ranks, x,
        lambda v, l: slopes(v, l.astype(float)), direction, strata=st, source=BMLAMA_SOURCE,
        scope=scope, null_hypothesis=f"a language's {value} does not depend on its {label}"
        + (f" within its {strata}" if st is not None else ""), n_obs=len(d),
        caveat=_strata_caveat(st, x, label), n_perm=n_perm, seed=seed, batched=True)
    v, xv = d[value].to_numpy(float), x.to_numpy(float)
    if t.verdict == "cannot be decided":
        # no relabeling can decide: no interval, and the plain least-squares slope describes
        return replace(t, effect=slope(v, xv), measure=f"least-squares slope of language "
                       f"{value} per {unit_words} (a description: the test, on the languages' "
                       f"ranks, cannot decide)", sesoi=sesoi, margin=sesoi)
    inv = TrendInversion(v, xv, None if st is None else st.to_numpy(dtype=object), n_perm, seed)
    if describe or t.verdict in ("supported", "contradicted"):
        lo, hi = inv(1 - t.confidence)
        est = inv.estimate() if describe else math.nan
    else:   # the interval changes no verdict that decides no side (simulations skip it)
        lo = hi = est = math.nan
    t = replace(t, effect=est if np.isfinite(est) else slope(v, xv), ci_low=lo, ci_high=hi,
                interval_at=inv,
                test=f"{t.test}; {INVERTED} (accuracy minus slope × label, relabeled alike)")
    if sesoi is None:
        return t
    return finish(replace(t, sesoi=sesoi, margin=sesoi, p_equivalent=inv.p_equivalent(sesoi)),
                  (1 - t.confidence) / 2)


def resource_trend(table: pd.DataFrame, typology: pd.DataFrame, value: str = "beyond",
                   tier: str = "resource_tier", strata: str | None = "family",
                   n_perm: int = 9999, seed: int = 0, scope: str = "",
                   sesoi: float | None = SESOI["slope"], describe: bool = True) -> ClaimTest:
    """*Knowledge deteriorates in lower-resource languages* (He et al. 2025, §1, §4.3): the slope
    of a language's ``value`` (accuracy beyond the control by default) on its resource tier
    (low 0, medium 1, high 2), predicted positive.

    Unit: the language. Null: tiers permuted over languages **within families** (``strata``;
    :func:`xcomps_utils.analysis.claims.language_claim`, exact when there are at most 20,000 distinct
    labelings), so a family effect correlated with tier (Indo-European languages high-resource
    and better known) is part of the null. ``strata=None`` is the plain permutation (the trap).

    Equivalence (``sesoi``, the book's smallest slope of interest, 0.05 per tier step): the
    slope is shown within ``±sesoi`` by inverting the same permutation test
    (:meth:`TrendInversion.p_equivalent`, two one-sided tests under an additive trend), so
    "no trend that matters" can be decided too; ``sesoi=None`` leaves it out.
    ``describe=False`` (simulations) leaves out the estimate, and the interval where no side is
    decided: the same verdict, faster.

    Raises:
        ValueError: a missing column, fewer than two tiers among the languages.
    """
    return _trend("resource_trend", "accuracy is higher in higher-resource languages", table,
                  typology, value, tier, TIER_ORDER, +1, strata, n_perm, seed, "tier step",
                  scope, sesoi, describe)


def morphology_trend(table: pd.DataFrame, typology: pd.DataFrame, value: str = "beyond",
                     label: str = "paper_type", strata: str | None = "family",
                     n_perm: int = 9999, seed: int = 0, scope: str = "",
                     sesoi: float | None = SESOI["span"], describe: bool = True) -> ClaimTest:
    """*More morphological complexity lowers scores* (He et al. 2025, §4.3.0.4): the slope of
    ``value`` on a label on [0, 1], predicted negative: the paper's type (analytic 0, inflected
    ½, agglutinative 1; ``label="paper_type"``, its 17 languages) or a numeric index (any other
    ``label``, e.g. ``grambank_bound``, the share of 20 bound-inflection categories, on 53). The
    slope is then the accuracy gained or lost from the label's one end to the other. Null: labels
    permuted within families, as :func:`resource_trend`. Morphological type varies little within
    a family, so few relabelings remain: the smallest p says whether it can be decided.

    Equivalence (``sesoi``, the book's smallest trend over such a label, ``SESOI["span"]`` =
    0.10 from end to end: the resource trend's 0.05 per tier step over its two steps): the slope
    shown within ``±sesoi`` by the inverted permutation test
    (:meth:`TrendInversion.p_equivalent`);
    ``sesoi=None`` leaves it out.

    Raises:
        ValueError: a missing column, fewer than two label values among the languages, or a
            label outside [0, 1] with the default ``sesoi`` (rescale it to [0, 1], pass ``sesoi``
            in the label's own unit, or ``sesoi=None``).
    """
    order = TYPE_ORDER if label == "paper_type" else None
    if sesoi is not None and order is None:
        _need(typology, [label], "the typology table")
        x = pd.to_numeric(typology[label], errors="coerce").dropna()
        if len(x) and (x.min() < 0 or x.max() > 1) and sesoi == SESOI["span"]:
            raise ValueError(f"morphology_trend: {label!r} runs from {x.min():g} to {x.max():g}, "
                             f"but the smallest trend of interest (sesoi={sesoi:g}) is per unit "
                             f"of a label on [0, 1]: rescale {label!r} to [0, 1], pass sesoi in "
                             f"its own unit, or sesoi=None for no equivalence test")
    return _trend("morphology_trend", "accuracy falls as morphological complexity grows", table,
                  typology, value, label, order, -1, strata, n_perm, seed,
                  f"{label} range (0 to 1)" if order is None else
                  "the types' range (analytic 0 to agglutinative 1)", scope, sesoi, describe)


def english_rank(table: pd.DataFrame, value: str = "beyond", english: str = "en",
                 scope: str = "") -> ClaimTest:
    """*Models do best in English* (He et al. 2025, §4.3.0.1), the language as the unit:
    English's ``value`` minus the other languages' mean, tested by the exact permutation over
    which language holds English's place (p = English's rank from the top / k). The smallest p is
    ``1 / k``: with 17 languages 0.059, above the one-sided level 0.025 (cannot be decided); with
    53, 0.019 (decidable alone, and only when English is first).

    Raises:
        ValueError: English or another language missing.
    """
    _need(table, [value], "the language table")
    v = table[value].dropna()
    if english not in v.index or len(v) < 2:
        raise ValueError(f"English rank needs {english!r} and another language; got "
                         f"{list(v.index)}")
    labels = pd.Series(v.index == english, index=v.index, name="is English")

    def stat(vals, lab):
        en = lab.astype(bool)
        return float(vals[en].mean() - vals[~en].mean())
    return language_claim("english_rank", "accuracy is highest in English (English's place among "
                          "the languages)", f"English minus mean other-language {value}", v,
                          labels, stat, +1, source=BMLAMA_SOURCE, scope=scope,
                          null_hypothesis="English is a language like the others (each equally "
                          "likely to hold its place)", n_obs=len(v))


def methods_track(a: pd.Series, b: pd.Series, typology: pd.DataFrame | None = None,
                  strata: str | None = "family", claim: str = "direct_tracks_neuro",
                  names: tuple[str, str] = ("Direct", "Neuro"), n_perm: int = 9999,
                  seed: int = 0, scope: str = "") -> ClaimTest:
    """*Direct tracks Neuro* (He et al. 2025, §4.3.0.3; and Direct ~ Meta): Spearman's r
    across languages of two methods' per-language accuracies (``a``, ``b``: Series indexed by
    language); ranks, so that one language far from the rest cannot make the correlation.

    Unit: the language. Null: ``b``'s values permuted over languages within families (so two
    methods that share only a family effect are in the null). Needs 3 languages or more.

    Raises:
        ValueError: fewer than 3 languages with both values.
    """
    d = pd.DataFrame({"a": a, "b": b}).dropna()
    if typology is not None and strata:
        d = d.join(typology[[strata]], how="inner").dropna()
    if len(d) < 3:
        raise ValueError(f"a correlation across languages needs 3 languages; got {len(d)}")
    st = _strata(d, strata) if strata and strata in d else None
    return language_claim(
        claim, f"across languages, {names[0]} accuracy tracks {names[1]}'s",
        f"Spearman r of {names[0]} and {names[1]} across languages", d["a"].rank(),
        d["b"].rank(), _corrs, +1, strata=st, source=BMLAMA_SOURCE,
        scope=scope, null_hypothesis=f"a language's {names[1]} score is unrelated to its "
        f"{names[0]} accuracy" + (" within its family" if st is not None else ""),
        n_obs=len(d), n_perm=n_perm, seed=seed, batched=True)


def minimum_detectable_effect(n_languages: int, between_sd: float, kind: str = "slope",
                              x: np.ndarray | None = None, strata: np.ndarray | None = None,
                              alpha: float = ALPHA, power: float = 0.8, n_sims: int = 20000,
                              seed: int = 0) -> float:
    """The smallest true effect a language-level claim detects with ``power`` at two-sided
    ``alpha`` (one-sided ``alpha / 2``), given the between-language spread ``between_sd``.

    * ``"slope"`` (accuracy per label step; :func:`resource_trend`, :func:`morphology_trend`):
      ``(t_(1-alpha/2, n-2) + t_power) * between_sd / sqrt(sum (x - xbar)^2)``, where ``x`` is the
      coded label of each language (default: tiers as on BMLAMA-53, 7 low, 39 medium, 7 high,
      scaled to ``n``) and, with ``strata``, ``xbar`` is its family mean: a within-family
      permutation only uses the contrast inside families.
    * ``"correlation"`` (:func:`methods_track`): the r by Fisher's z,
      ``tanh((z_(1-alpha/2) + z_power) / sqrt(n - 3))`` (``between_sd`` unused), for an
      unstratified Pearson test: the within-family Spearman test of :func:`methods_track` needs
      more (simulated power at this r: 0.65 at 53 languages, 0.49 at 17).
    * ``"rank"`` (:func:`english_rank`): English's advantage over the others' mean, in the
      accuracy unit, at which English ranks within the top ``floor(alpha / 2 * n)`` with
      probability ``power`` when English and the others are normal with ``between_sd`` around
      their means (``n_sims`` draws);
      ``inf`` when ``1 / n > alpha / 2`` (no outcome decides it).

    Returns:
        the effect, in the claim's unit (inf when no effect can be detected).

    Raises:
        ValueError: an unknown ``kind``, fewer than 4 languages.
    """
    from scipy import stats

    if n_languages < 4:
        raise ValueError(f"need 4 languages or more, got {n_languages}")
    if kind == "correlation":
        z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
        return float(np.tanh(z / math.sqrt(n_languages - 3)))
    if kind == "slope":
        if x is None:
            k = max(1, round(7 * n_languages / 53))
            x = np.r_[np.zeros(k), np.ones(n_languages - 2 * k), 2 * np.ones(k)]
        x = np.asarray(x, float)
        if strata is not None:
            s = pd.Series(x).groupby(np.asarray(strata)).transform("mean").to_numpy()
            xc = x - s
        else:
            xc = x - x.mean()
        ss = float(xc @ xc)
        if ss <= 0:
            return math.inf
        df = len(x) - 2
        t = stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df)
        return float(t * between_sd / math.sqrt(ss))
    if kind == "rank":
        top = math.floor(alpha / 2 * n_languages + 1e-9)
        if top < 1:
            return math.inf
        others = np.random.default_rng(seed).normal(0, between_sd, (n_sims, n_languages - 1))
        # English at shift d ranks within the top `top` when fewer than `top` others exceed it
        kth = -np.sort(-others, axis=1)[:, top - 1]        # the top-th largest other value
        mean_o = others.mean(axis=1)
        own = np.random.default_rng(seed + 1).normal(0, between_sd, n_sims)   # English's noise
        need = np.quantile(kth - mean_o - own, power)       # advantage over the others' mean
        return float(need)
    raise ValueError(f"kind must be 'slope', 'correlation' or 'rank', got {kind!r}")


def _facts_to_decide(n: int, planned_sd: float, mean_se: float, n_facts: int,
                     power: float = 0.8) -> float:
    """Facts a language at which ``n`` languages decide a trend of ``SESOI["slope"]`` either way
    (:func:`languages_to_decide`'s criterion): the total spread may be at most
    ``(sesoi / 2) / mde(n, 1, power / 2)``, of which ``planned_sd`` is the languages' own and the
    rest each language's error, ``mean_se`` at ``n_facts`` shrinking as ``1 / sqrt(facts)``."""
    unit = minimum_detectable_effect(n, 1.0, "slope", power=power / 2)
    most_sd = SESOI["slope"] / 2 / unit
    if most_sd <= planned_sd or not mean_se > 0:
        return math.inf
    return float(math.ceil(n_facts * (mean_se / math.sqrt(most_sd ** 2 - planned_sd ** 2)) ** 2))


def languages_to_decide(sesoi: float, between_sd: float = 0.0, kind: str = "slope",
                        power: float = 0.8, alpha: float = ALPHA, most: int = 10 ** 4,
                        x: np.ndarray | None = None) -> int:
    """How many languages would decide a language-level claim *whatever the true effect*, with
    every language measured without error: an effect of ``sesoi`` or more detected, a smaller one
    shown equivalent (were the test given an equivalence branch at ``±sesoi``), with an 80%
    (``power``) chance. As in :func:`xcomps_utils.analysis.claims.items_needed`, the hardest
    true effect is ``sesoi / 2``, where the two decisions exclude each other and each must come
    with probability ``power / 2``: the smallest ``n`` whose :func:`minimum_detectable_effect`
    at power ``power / 2`` is ``sesoi / 2`` or less (``kind``: ``"slope"`` with tiers coded as
    on BMLAMA-53, or ``n`` languages spread over the label as ``x`` is (its ``n`` quantiles: the
    Grambank index of the languages that have one), ``between_sd`` the languages' spread around
    the trend; ``"correlation"`` by Fisher's z). A plain test over languages at two-sided
    ``alpha``: a within-family permutation or a family's correction needs more.

    Returns:
        the number of languages, or ``most + 1`` when even ``most`` do not suffice.

    Raises:
        ValueError: ``sesoi`` not positive, an unknown ``kind``, an ``x`` with one value.
    """
    if not sesoi > 0:
        raise ValueError(f"sesoi must be positive, got {sesoi!r}")
    if kind not in ("slope", "correlation"):
        raise ValueError(f"kind must be 'slope' or 'correlation', got {kind!r}")

    if x is not None:
        x = np.asarray(x, float)
        x = x[np.isfinite(x)]
        if x.size < 2 or np.ptp(x) == 0:
            raise ValueError(f"x must hold two distinct finite label values or more, got {x}")

    def ok(n: int) -> bool:
        design = None if x is None else np.quantile(x, (np.arange(n) + 0.5) / n)
        return minimum_detectable_effect(n, between_sd, kind, x=design, alpha=alpha,
                                         power=power / 2) <= sesoi / 2
    if not ok(most):
        return most + 1
    lo, hi = 4, most                          # the effect shrinks with n: bisect the first n
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return lo


# --- cross-lingual consistency --------------------------------------------------------------

def candidate_scores(pairs: pd.DataFrame, reduction: str = "mean", prefix: str = "direct"
                     ) -> pd.DataFrame:
    """One row per (``lang``, ``fact``, ``candidate``): the candidate's ``score`` (its filled
    sentence's log-probability by ``reduction``), the gold's candidate index from
    ``gold_candidate`` (else -1) and ``gold`` (bool).

    Raises:
        ValueError: a missing column.
    """
    g, b = _cols(prefix, reduction)
    _need(pairs, ["lang", "fact", "candidate", g, b], "pairs")
    bad = pairs[["lang", "fact", "candidate", b]].rename(columns={b: "score"})
    gold = pairs.groupby(["lang", "fact"], sort=False).agg(
        score=(g, "first"), **({"candidate": ("gold_candidate", "first")}
                               if "gold_candidate" in pairs else {})).reset_index()
    if "candidate" not in gold:
        gold["candidate"] = -1
    out = pd.concat([gold.assign(gold=True), bad.assign(gold=False)], ignore_index=True)
    return out.sort_values(["lang", "fact", "candidate"]).reset_index(drop=True)


def rankc_weights(n: int) -> np.ndarray:
    """RankC's weights of precision@k, ``k = 1..n``: the softmax of ``(n, n-1, ..., 1)`` (the
    authors' default, ``RankC.py``), so ``w_k = e^(n-k) / sum_j e^(n-j)``: top-1 weighs 0.63 at
    ``n = 10``."""
    order = np.arange(n, 0, -1, dtype=float)
    e = np.exp(order - order.max())
    return e / e.sum()


def _positions(scores: np.ndarray) -> np.ndarray:
    """``[F, N]`` each candidate's place (0 = best) in its fact's ranking by descending score
    (ties broken by the candidate's index, as a stable sort of the authors' list does)."""
    order = np.argsort(-scores, axis=1, kind="stable")
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.arange(scores.shape[1])[None, :], axis=1)
    return pos


def rankc(scores_a: np.ndarray, scores_b: np.ndarray, per_fact: bool = False):
    """RankC of two languages (Qi et al., 2023, eq. 1-2; ``1_easyrun/RankC.py``).

    For each fact, the ``N`` candidates are ranked by the model's score in each language;
    ``P@k`` is the share of language a's top ``k`` also in language b's top ``k``; a fact's
    consistency is ``sum_k w_k P@k`` with :func:`rankc_weights`, and RankC the mean over facts.
    Candidates are matched across languages by their index in the fact's list (the authors'
    ``candidate.index``).

    Args:
        scores_a, scores_b: ``[F, N]`` candidate scores, the same facts and candidate order.
        per_fact: return the ``[F]`` per-fact values instead of their mean.

    Raises:
        ValueError: shapes differ.
    """
    a, b = np.asarray(scores_a, float), np.asarray(scores_b, float)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"scores must be two [facts, candidates] arrays of one shape; got "
                         f"{a.shape} and {b.shape}")
    n = a.shape[1]
    both = np.maximum(_positions(a), _positions(b))      # in both top-k iff both < k
    counts = np.stack([(both == j).sum(1) for j in range(n)], axis=1)
    overlap = np.cumsum(counts, axis=1)                   # [F, N]: |top_k(a) & top_k(b)|
    per = (overlap / np.arange(1, n + 1)) @ rankc_weights(n)
    return per if per_fact else float(per.mean())


def _score_cube(pairs: pd.DataFrame, reduction: str, prefix: str):
    """``(langs, facts, [L, F, N] scores)`` over the facts every language has (complete)."""
    c = candidate_scores(pairs, reduction, prefix)
    # the gold in slot 0 of every fact (RankC does not depend on the candidates' labels), so a
    # shuffle of facts keeps each language's accuracy (gold first stays gold first)
    c = c.assign(slot=np.where(c["gold"], -1, c["candidate"]))
    cube = c.pivot_table(index=["fact", "slot"], columns="lang", values="score",
                         aggfunc="first")
    cube = cube.dropna()
    counts = cube.groupby(level="fact").size()
    n = int(counts.max()) if len(counts) else 0
    keep = counts.index[counts == n]
    cube = cube.loc[keep]
    langs = list(cube.columns)
    facts = list(keep)
    arr = cube.to_numpy(float).reshape(len(facts), n, len(langs)).transpose(2, 0, 1)
    return langs, facts, arr


def rankc_table(pairs: pd.DataFrame, reduction: str = "mean", prefix: str = "direct",
                n_perm: int = 199, seed: int = 0) -> pd.DataFrame:
    """RankC of every language pair, with its drawn chance level.

    The chance level is RankC with the facts of language b shuffled (:func:`rankc_null`), the
    gold kept in one slot: each language keeps its own rankings and its accuracy, only *which*
    fact a ranking belongs to is broken. High accuracy in both languages makes RankC high by
    itself (both put the gold first); ``rankc_beyond`` is what remains. Candidates' own pull
    (lengths, frequencies: the same entities in every language) is consistency too, but not
    knowledge: :func:`rankc_table` of the control frame measures it.

    Returns:
        one row per pair: ``lang_a``, ``lang_b``, ``n_facts`` (facts scored in every language),
        ``rankc``, ``rankc_chance`` (mean over ``n_perm`` shuffles), ``rankc_beyond``.
    """
    langs, facts, arr = _score_cube(pairs, reduction, prefix)
    rng = np.random.default_rng(seed)
    rows = []
    for i, j in itertools.combinations(range(len(langs)), 2):
        obs = rankc(arr[i], arr[j])
        null = rankc_null(arr[i], arr[j], n_perm, rng)
        rows.append({"lang_a": langs[i], "lang_b": langs[j], "n_facts": len(facts),
                     "rankc": obs, "rankc_chance": float(null.mean()),
                     "rankc_beyond": obs - float(null.mean())})
    return pd.DataFrame(rows)


def rankc_null(scores_a: np.ndarray, scores_b: np.ndarray, n_perm: int = 199,
               rng: np.random.Generator | int | None = 0) -> np.ndarray:
    """RankC under "the two languages share nothing about facts": ``[n_perm]`` RankC values
    with the facts of ``scores_b`` permuted (each language's rankings kept)."""
    rng = np.random.default_rng(rng)
    return np.array([rankc(scores_a, scores_b[rng.permutation(len(scores_b))])
                     for _ in range(n_perm)])


def agreement_kappas(facts: pd.DataFrame, reduction: str = "mean",
                     stratum: str | None = None, n_boot: int = 2000, seed: int = 0):
    """The project's agreement measure on BMLAMA: Cohen's kappa of per-fact correctness (top-1)
    between languages, within each level of ``stratum`` (e.g. the relation: some relations are
    easy in every language, the defect issue 27 removed from XCOMPS' agreement) and averaged;
    :func:`xcomps_utils.analysis.consistency.bootstrap_kappas` on :func:`fact_table`'s rows.

    Args:
        facts: :func:`fact_table` output, with ``stratum`` as a column when given.

    Returns:
        :class:`xcomps_utils.analysis.consistency.KappaReplicates` (``.table`` one row per pair).
    """
    from .consistency import bootstrap_kappas

    col = f"top1_{reduction}"
    unit = ["fact"] + ([stratum] if stratum else [])
    return bootstrap_kappas(facts, correct=col, unit=unit, item="fact", n_boot=n_boot,
                            seed=seed, within=stratum)


def consistency_follows(table: pd.DataFrame, labels: pd.Series, value: str = "rankc",
                        n_perm: int = 9999, seed: int = 0, scope: str = "",
                        strata: pd.Series | None = None) -> ClaimTest:
    """*Consistency is higher between related languages* (Qi et al. 2023, §5: language pairs of
    the same family or script, and with more shared subwords, are more consistent): mean
    ``value`` over language pairs that share a label (``labels``: family, script) minus the mean
    over pairs that do not.

    Unit: the **language**, not the pair: a language pair's values share languages (a language
    known well is consistent with every other), so pairs are not exchangeable. Null (Mantel
    type): the labels permuted over languages, every pair's same/different recomputed; exact
    when there are at most 20,000 relabelings (:func:`xcomps_utils.analysis.claims.language_claim`).

    Args:
        table: one row per language pair with ``lang_a``, ``lang_b`` and ``value`` (e.g.
            :func:`rankc_table`, or a kappa table).
        labels: one label per language (index: language codes).

    Raises:
        ValueError: no same-label pair or no different-label pair.
    """
    _need(table, ["lang_a", "lang_b", value], "the pair table")
    langs = sorted(set(table["lang_a"]) | set(table["lang_b"]))
    lab = labels.reindex(langs)
    if lab.isna().any():
        raise ValueError(f"no label for {list(lab.index[lab.isna()])}")
    pos = {l: k for k, l in enumerate(langs)}
    a = table["lang_a"].map(pos).to_numpy()
    b = table["lang_b"].map(pos).to_numpy()
    vals = table[value].to_numpy(float)
    same_obs = lab.to_numpy()[a] == lab.to_numpy()[b]
    if same_obs.all() or not same_obs.any():
        raise ValueError(f"need pairs of the same and of different {labels.name or 'label'}")

    def stat(_, l):
        s = l[a] == l[b]
        if s.all() or not s.any():
            return math.nan
        return float(np.nanmean(vals[s]) - np.nanmean(vals[~s]))
    name = labels.name or "label"
    return language_claim(
        f"consistency_follows_{name}", f"language pairs of the same {name} are more consistent",
        f"mean {value}, same minus different {name} ({int(same_obs.sum())} vs "
        f"{int((~same_obs).sum())} pairs)", pd.Series(np.zeros(len(langs)), index=langs), lab,
        stat, +1, strata=strata, source=RANKC_SOURCE, scope=scope,
        null_hypothesis=f"a pair's {value} does not depend on sharing a {name} (labels "
        f"exchangeable over languages)", n_obs=len(table), n_perm=n_perm, seed=seed)


# --- families -----------------------------------------------------------------------------------

def correct_families(tests: list[ClaimTest], alpha: float = ALPHA) -> list[ClaimTest]:
    """The chapter's Holm families (:func:`xcomps_utils.analysis.families.correct`, Tarone-restricted): the
    XCOMPS paper's claims (:data:`PRIMARY_CLAIMS`) on one benchmark and model are one
    confirmatory family per ``scope``; everything else of that scope (consistency, Direct ~ Meta,
    the sum reduction) one exploratory family. Order is kept.

    Returns:
        the corrected tests, in the input order.
    """
    groups: dict[tuple[str, str], list[int]] = {}
    for k, t in enumerate(tests):
        role = "confirmatory" if t.claim in PRIMARY_CLAIMS else "exploratory"
        groups.setdefault((t.scope, role), []).append(k)
    out: list[ClaimTest | None] = [None] * len(tests)
    for (scope, role), idx in groups.items():
        group = [tests[k] for k in idx]
        fam = (correct(group, f"BMLAMA, primary claims ({scope})", role, alpha)
               if role == "confirmatory" else
               correct(group, f"BMLAMA, other claims ({scope})", role, alpha))
        for k, t in zip(idx, fam):
            out[k] = t
    return out


#: the co-primary measures of a trend: pairwise accuracy beyond the control frame (decisions)
#: and the knowledge in nats (:func:`language_table`'s ``nats_beyond``)
COPRIMARY = ("pairwise_beyond", "nats_beyond")
_SIDED = ("supported", "contradicted", "negligible")


def _side(t: ClaimTest) -> int:
    return int(np.sign(t.effect - t.null)) if t.verdict in _SIDED else 0


def coprimary(primary: ClaimTest, nats: ClaimTest) -> ClaimTest:
    """One trend read on its two co-primary measures (an intersection-union test: each at its
    own level, no correction between them): ``primary`` (on pairwise accuracy beyond the
    control, with its equivalence margin) keeps its verdict only where ``nats`` (the same test
    on the knowledge in nats) decides the same side; otherwise the trend is "inconclusive" and
    the caveat names both verdicts. "equivalent" needs the absence shown on both, and the nats
    measure has no margin of equivalence, so it is never a finding here. A primary "cannot be
    decided" stays so.

    Returns:
        ``primary`` with that verdict, the nats test's effect and interval in ``measure`` and a
        caveat computed from the two verdicts.
    """
    iv = (f" [{nats.ci_low:.3f}, {nats.ci_high:.3f}]" if np.isfinite(nats.ci_low) and
          np.isfinite(nats.ci_high) else "")
    measure = (f"{primary.measure}; co-primary, the same test on the knowledge in nats: "
               f"{nats.effect:.3f}{iv}, {nats.verdict}")
    if primary.verdict == "cannot be decided":
        return replace(primary, measure=measure)
    agree = primary.verdict in _SIDED and _side(primary) == _side(nats) != 0
    if agree:
        note = (f"the two co-primary measures agree (pairwise accuracy beyond the control: "
                f"{primary.verdict}; knowledge in nats: {nats.verdict}): a finding")
        verdict = primary.verdict
    else:
        note = (f"the two co-primary measures do not agree (pairwise accuracy beyond the "
                f"control: {primary.verdict}; knowledge in nats: {nats.verdict}): not a finding")
        verdict = "inconclusive"
    caveat = "; ".join(filter(None, [primary.caveat, note]))
    return replace(primary, verdict=verdict, measure=measure, caveat=caveat)


def knowledge_trend(claim: str, table: pd.DataFrame, typology: pd.DataFrame,
                    label: str | None = None, strata: str | None = HEADLINE_STRATA,
                    value: str = COPRIMARY[0], nats: str = COPRIMARY[1], n_perm: int = 9999,
                    seed: int = 0, scope: str = "", describe: bool = True) -> ClaimTest:
    """A trend of the chapter (``claim``: ``"resource_trend"``, or ``"morphology_trend"`` over
    ``label``) on both co-primary measures, uncorrected (a family of one), read by
    :func:`coprimary`: the function the claim contract draws (:data:`CONTRACTS`);
    :func:`language_claims` does the same after each measure's family correction.

    Raises:
        ValueError: an unknown ``claim``; as :func:`resource_trend` / :func:`morphology_trend`.
    """
    def one(v, sesoi):
        if claim == "resource_trend":
            return resource_trend(table, typology, v, strata=strata, n_perm=n_perm, seed=seed,
                                  scope=scope, describe=describe,
                                  **({} if sesoi else {"sesoi": None}))
        if claim == "morphology_trend":
            return morphology_trend(table, typology, v, label or "paper_type", strata=strata,
                                    n_perm=n_perm, seed=seed, scope=scope, describe=describe,
                                    **({} if sesoi else {"sesoi": None}))
        raise ValueError(f"the 'claim' parameter must be 'resource_trend' or 'morphology_trend'; "
                         f"got {claim!r}")
    return coprimary(one(value, True), one(nats, False))


def _claim_parts(table, typology, scope, value, morphology, neuro, meta, n_perm, seed, strata,
                 nats):
    """``(primary tests, nats tests, combined tests, skipped)`` of :func:`language_claims`."""
    tests, skipped, in_nats = [], [], []
    acc = table[value]
    steps = [("resource_trend", lambda v, e: resource_trend(
                 table, typology, v, strata=strata, n_perm=n_perm, seed=seed, scope=scope,
                 **e)),
             ("morphology_trend", lambda v, e: morphology_trend(
                 table, typology, v, morphology, strata=strata, n_perm=n_perm, seed=seed,
                 scope=scope, **e)),
             ("english_rank", lambda v, e: english_rank(table, v, scope=scope))]
    for name, other in (("direct_tracks_neuro", neuro), ("direct_tracks_meta", meta)):
        if other is not None:
            steps.append((name, lambda v, e, o=other, c=name: methods_track(
                acc, o, typology, claim=c, names=("Direct", c.rsplit("_", 1)[1].capitalize()),
                n_perm=n_perm, seed=seed, scope=scope)))
    for name, make in steps:
        try:
            tests.append(make(value, {}))
            if nats and name.endswith("_trend"):
                in_nats.append(make(nats, {"sesoi": None}))
        except ValueError as e:
            skipped.append(f"{name} ({scope}): not tested: {e}")
    tests = correct_families(tests)
    in_nats = correct(in_nats, f"BMLAMA, primary claims in nats ({scope})", "confirmatory")
    by_claim = {t.claim: t for t in in_nats}
    combined = [coprimary(t, by_claim[t.claim]) if t.claim in by_claim else t for t in tests]
    return tests, in_nats, combined, skipped


def language_claims(table: pd.DataFrame, typology: pd.DataFrame, scope: str,
                    value: str = "beyond", morphology: str = "paper_type",
                    neuro: pd.Series | None = None, meta: pd.Series | None = None,
                    n_perm: int = 9999, seed: int = 0, strata: str | None = "family",
                    nats: str | None = None) -> tuple[list[ClaimTest], list[str]]:
    """The XCOMPS paper's language-level claims on one benchmark and model, decided at the
    language unit and corrected in the chapter's families (:func:`correct_families`):
    :func:`resource_trend`, :func:`morphology_trend` (``morphology``: the paper's types on its
    17 languages, or a numeric index such as ``grambank_bound`` on 53), :func:`english_rank`,
    and :func:`methods_track` of Direct against ``neuro`` / ``meta`` when given (per-language
    scores, index: language). The trends' nulls are stratified by ``strata`` (a column of
    ``typology``: ``"family"``, or a deeper one of :data:`STRATA`, e.g. from
    :func:`strata_table`); the correlations' by family.

    With ``nats`` (a column of ``table``, e.g. ``"nats_beyond"``) each trend is also tested on
    it, Holm-corrected in a family of its own (``BMLAMA, primary claims in nats``), and read by
    :func:`coprimary`: a trend is a finding only where both measures decide the same side.

    A claim the languages at hand cannot test at all (one tier only, English absent, fewer than
    three languages with both scores) is left out and named in the second list with why.

    Returns:
        ``(tests, skipped)``: the corrected tests, and one sentence per claim left out.
    """
    _, _, combined, skipped = _claim_parts(table, typology, scope, value, morphology, neuro,
                                           meta, n_perm, seed, strata, nats)
    return combined, skipped


def depth_table(table: pd.DataFrame, typology: pd.DataFrame, scope: str,
                value: str = COPRIMARY[0], nats: str = COPRIMARY[1],
                morphology: str = "paper_type", depths=tuple(STRATA), n_perm: int = 9999,
                seed: int = 0, n_sims: int = 200) -> pd.DataFrame:
    """How each trend's verdict depends on the depth its null is stratified at: for each of
    ``depths`` (columns of ``typology``, :data:`STRATA`), the chapter's confirmatory family on
    ``value`` and on ``nats`` (:func:`language_claims`), and per trend the strata, those that
    hold two or more values of the label (the contrasts read), the distinct relabelings, the
    smallest one-sided p, and the power at the smallest effect of interest.

    Power: the share of ``n_sims`` data sets, drawn as these languages' labels with a trend of
    the SESOI (0.05 per tier step; 0.10 over a [0, 1] morphology label) and normal scatter of
    ``value``'s observed spread across the languages, that the stratified test (the same
    relabelings, uncorrected) decides at one-sided 0.025.

    Returns:
        one row per depth x trend: ``depth``, ``claim``, ``strata``, ``contrasting_strata``,
        ``contrasting_languages``, ``labelings``, ``smallest_p``, ``power``, ``verdict_accuracy``,
        ``verdict_nats`` and ``verdict`` (the two read together, :func:`coprimary`).
    """
    from scipy.stats import rankdata

    rows = []
    for depth in depths:
        acc, kn, both, _ = _claim_parts(table, typology, scope, value, morphology, None, None,
                                        n_perm, seed, depth, nats)
        for claim, label, order, sesoi, sign in (
                ("resource_trend", "resource_tier", TIER_ORDER, SESOI["slope"], +1),
                ("morphology_trend", morphology, TYPE_ORDER if morphology == "paper_type"
                 else None, SESOI["span"], -1)):
            d = _aligned(table, value, typology, [label, depth])
            x = (d[label].map(order) if order is not None else d[label]).astype(float)
            d, x = d[x.notna()], x[x.notna()].to_numpy()
            st = d[depth].astype(str).to_numpy()
            spread = pd.Series(x).groupby(st).nunique()
            lab, exact = relabelings(x.astype(object), st, n_perm, seed)
            xs = lab.astype(float)
            null = xs - xs.mean(axis=1, keepdims=True)
            xc = x - x.mean()
            sd = float(d[value].std(ddof=1))
            rng = np.random.default_rng(seed)
            hits = 0
            for _ in range(n_sims):
                w = rankdata(sesoi * x + rng.normal(0, sd, len(x)))
                p = permutation_p(float(xc @ w), null @ w, exact, sign)[0]
                hits += p <= ALPHA / 2
            pick = {t.claim: t.verdict for t in acc}
            rows.append({"depth": depth, "claim": claim, "strata": len(spread),
                         "contrasting_strata": int((spread > 1).sum()),
                         "contrasting_languages": int(np.isin(st, spread.index[spread > 1]).sum()),
                         "labelings": _count_labelings(x, st),
                         "smallest_p": permutation_p(0.0, null @ x, exact, sign)[2],
                         "power": hits / n_sims, "verdict_accuracy": pick.get(claim, "not tested"),
                         "verdict_nats": {t.claim: t.verdict for t in kn}.get(claim, "not tested"),
                         "verdict": {t.claim: t.verdict for t in both}.get(claim, "not tested")})
    return pd.DataFrame(rows)


def power_table(tables: dict[str, pd.DataFrame], n_facts: int, sizes=(17, 53),
                value: str = "pairwise_beyond", ratio: float = 0.5, family_size: int = 3,
                smallest_sd: float | None = None) -> pd.DataFrame:
    """What the language-level claims can detect, from the spread this run measured.

    For each model (``tables``: model -> :func:`language_table`): the between-language spread
    of ``value`` (accuracy beyond the control) and the mean per-language standard error
    (:func:`spread_and_noise`), the facts per language at which that error is ``ratio`` times
    the spread (:func:`facts_for_power`), and for ``n`` in ``sizes`` the minimum detectable
    effects (80% power, two-sided 5%; :func:`minimum_detectable_effect`) of a resource trend
    (accuracy per tier step), an English advantage over the others' mean (the rank test) and a
    cross-language correlation (Direct ~ Neuro / Meta). English's place is read at the level it
    meets in its confirmatory family: ``alpha / family_size`` (Holm's first step; the family of
    resource, morphology and English holds 3 tests), so with 53 languages no outcome decides it
    (English first gives two-sided p = 2/53 = 0.038 > 0.05/3), and ``mde_english_alone`` is the
    same test as a family of its own.

    When the languages' observed spread is within their sampling noise (``between_sd`` 0 or
    below ``smallest_sd``, by default the accuracy SESOI of :data:`xcomps_utils.analysis.families.SESOI`,
    0.05), the sizes are planned for a spread of ``smallest_sd``: the smallest spread between
    languages worth measuring (``planned_sd``).

    Returns:
        one row per model x ``n``: ``between_sd``, ``observed_sd``, ``planned_sd``,
        ``mean_se``, ``facts_now``, ``facts_needed``, ``mde_resource_slope`` (at the deciding
        size), ``mde_resource_slope_now`` (at ``n_facts``), ``mde_resource_slope_limit`` (with
        every language's error gone: no number of facts detects a smaller trend across ``n``
        languages), ``mde_english``, ``mde_english_alone``,
        ``mde_correlation`` (inf: no effect is detectable), ``languages_to_decide_slope`` and
        ``languages_to_decide_correlation`` (:func:`languages_to_decide` at the book's SESOI,
        0.05 per tier step and r = 0.3: the languages that would decide a trend or a correlation
        whichever way it goes, with no noise left), and ``facts_to_decide_slope`` (the facts a
        language at which ``n`` languages would decide the trend either way, were the test given
        an equivalence branch; inf when no number does).
    """
    rows = []
    for model, t in tables.items():
        sn = spread_and_noise(t, value, f"{value}_low", f"{value}_high")
        planned = max(sn["between_sd"], SESOI["accuracy"] if smallest_sd is None
                      else smallest_sd)
        need = facts_for_power(sn["mean_se"], n_facts, planned, ratio)
        # the spread a claim sees at the deciding size: true spread + the noise left there
        sd = math.sqrt(planned ** 2 + (ratio * planned) ** 2)
        for n in sizes:
            rows.append({"model": model, "languages": n, "between_sd": sn["between_sd"],
                         "observed_sd": sn["observed_sd"], "planned_sd": planned,
                         "mean_se": sn["mean_se"], "facts_now": n_facts, "facts_needed": need,
                         "mde_resource_slope": minimum_detectable_effect(n, sd, "slope"),
                         # the same, with this run's noise instead of the deciding size's
                         "mde_resource_slope_now": minimum_detectable_effect(
                             n, math.sqrt(planned ** 2 + sn["mean_se"] ** 2), "slope"),
                         # and with no noise left (facts without end): what n languages allow
                         "mde_resource_slope_limit": minimum_detectable_effect(n, planned,
                                                                               "slope"),
                         "mde_english": minimum_detectable_effect(n, sd, "rank",
                                                                  alpha=ALPHA / family_size),
                         "mde_english_alone": minimum_detectable_effect(n, sd, "rank"),
                         "mde_correlation": minimum_detectable_effect(n, sd, "correlation"),
                         # deciding whatever the truth, no noise left, at the book's SESOI
                         "languages_to_decide_slope": languages_to_decide(SESOI["slope"],
                                                                          planned, "slope"),
                         "facts_to_decide_slope": _facts_to_decide(n, planned, sn["mean_se"],
                                                                   n_facts),
                         "languages_to_decide_correlation": languages_to_decide(
                             SESOI["correlation"], kind="correlation")})
    return pd.DataFrame(rows)


def consistency_table(scored: pd.DataFrame, reduction: str = "mean", n_perm: int = 99,
                      n_boot: int = 200, seed: int = 0) -> pd.DataFrame:
    """Both consistency measures of every language pair, side by side: RankC with its
    fact-shuffled chance level (:func:`rankc_table`, every candidate) and this project's
    agreement, Cohen's kappa of per-fact top-1 correctness within each relation, averaged
    (:func:`agreement_kappas`; pairs whose distractor is also true left out), so that relations
    easy in every language do not make agreement (the defect the XCOMPS agreement page had).

    Args:
        scored: :func:`scored_pairs` of one model, every language.

    Returns:
        one row per language pair: ``lang_a``, ``lang_b``, ``n_facts``, ``rankc``,
        ``rankc_chance``, ``rankc_beyond``, ``kappa`` (within relation), ``agreement``.
    """
    rank = rankc_table(scored, reduction, n_perm=n_perm, seed=seed)
    facts = fact_table(scored[~scored["distractor_true"].astype(bool)]).merge(
        scored[["lang", "fact", "relation"]].drop_duplicates(), on=["lang", "fact"])
    kap = agreement_kappas(facts, reduction, stratum="relation", n_boot=n_boot, seed=seed).table
    return rank.merge(kap[["lang_a", "lang_b", "kappa", "agreement"]], on=["lang_a", "lang_b"],
                      how="left")


# --- the claim contract (issue 42) ----------------------------------------------------------------

#: BMLAMA-53's languages as the pinned sources give them (``code:family:genus:script:tier:
#: grambank_bound``, ``-`` no value): :func:`xcomps_utils.pairs.typology.language_table` and
#: :func:`strata_table`, frozen for the simulations (``tests/analysis/test_bmlama_contracts.py``
#: checks it against the sources), so the contract runs without the data folder
_SHAPE53 = """
af:Indo-European:Germanic:Latn:medium:-
ar:Afro-Asiatic:Semitic:Arab:high:0.88
az:Turkic:Turkic:Latn:low:0.80
be:Indo-European:Slavic:Cyrl:medium:0.70
bg:Indo-European:Slavic:Cyrl:medium:-
bn:Indo-European:Indic:Beng:medium:-
ca:Indo-European:Romance:Latn:medium:0.60
ceb:Austronesian:Greater Central Philippine:Latn:medium:0.24
cs:Indo-European:Slavic:Latn:medium:0.85
cy:Indo-European:Celtic:Latn:low:0.40
da:Indo-European:Germanic:Latn:medium:0.42
de:Indo-European:Germanic:Latn:high:-
el:Indo-European:Greek:Grek:medium:0.65
en:Indo-European:Germanic:Latn:high:0.40
es:Indo-European:Romance:Latn:high:-
et:Uralic:Finnic:Latn:medium:0.55
eu:Basque:Basque:Latn:medium:0.50
fa:Indo-European:Iranian:Arab:medium:0.75
fi:Uralic:Finnic:Latn:medium:0.65
fr:Indo-European:Romance:Latn:high:0.65
ga:Indo-European:Celtic:Latn:low:0.65
gl:Indo-European:Romance:Latn:medium:0.55
he:Afro-Asiatic:Semitic:Hebr:medium:0.61
hi:Indo-European:Indic:Deva:medium:0.60
hr:Indo-European:Slavic:Latn:medium:0.75
hu:Uralic:Ugric:Latn:medium:0.75
hy:Indo-European:Armenian:Armn:low:0.75
id:Austronesian:Malayo-Sumbawan:Latn:medium:0.18
it:Indo-European:Romance:Latn:medium:0.60
ja:Japonic:Japanese:Jpan:high:0.60
ka:Kartvelian:Kartvelian:Geor:medium:0.75
ko:Koreanic:Korean:Kore:medium:0.60
la:Indo-European:Latin (no WALS genus):Latn:low:0.80
lt:Indo-European:Baltic:Latn:medium:0.75
lv:Indo-European:Baltic:Latn:medium:0.85
ms:Austronesian:Malayo-Sumbawan:Latn:medium:0.15
nl:Indo-European:Germanic:Latn:medium:0.55
pl:Indo-European:Slavic:Latn:medium:0.70
pt:Indo-European:Romance:Latn:medium:0.60
ro:Indo-European:Romance:Latn:medium:-
ru:Indo-European:Slavic:Cyrl:medium:0.85
sk:Indo-European:Slavic:Latn:medium:-
sl:Indo-European:Slavic:Latn:medium:0.75
sq:Indo-European:Albanian:Latn:low:0.70
sr:Indo-European:Slavic:Cyrl:medium:0.75
sv:Indo-European:Germanic:Latn:medium:0.42
ta:Dravidian:Dravidian:Taml:medium:0.70
th:Tai-Kadai:Kam-Tai:Thai:medium:0.00
tr:Turkic:Turkic:Latn:medium:0.85
uk:Indo-European:Slavic:Cyrl:medium:0.82
ur:Indo-European:Indic:Arab:medium:-
vi:Austroasiatic:Vietic:Latn:medium:0.00
zh:Sino-Tibetan:Chinese:Hans:high:0.05
"""
#: the control frame's spread of summed margins (nats) by tier and the pairs' noise around the
#: knowledge, as measured on the shipped Gemma-3 BMLAMA-53 run at its publish size (20 facts;
#: :func:`language_table`'s ``control_spread`` averaged over each tier's languages, rounded)
_SPREAD = {"high": 4.7, "medium": 6.5, "low": 8.5}
_CONTROL_MEAN, _PAIR_NOISE = 1.8, 3.4


def contract_typology(languages: int = 53) -> pd.DataFrame:
    """The typology the contract's simulations draw on: BMLAMA-53's (:data:`_SHAPE53`), or its
    BMLAMA-17 languages (``languages=17``), with ``family``, ``genus``, ``script``,
    ``genus_script``, ``resource_tier``, ``grambank_bound`` (NaN where the sources give none).

    Raises:
        ValueError: ``languages`` other than 17 or 53.
    """
    if languages not in (17, 53):
        raise ValueError(f"the 'languages' parameter must be 17 or 53; got {languages!r}")
    rows = [ln.split(":") for ln in _SHAPE53.strip().splitlines()]
    t = pd.DataFrame(rows, columns=["code", "family", "genus", "script", "resource_tier",
                                    "grambank_bound"]).set_index("code")
    t["grambank_bound"] = pd.to_numeric(t["grambank_bound"].replace("-", np.nan))
    t["genus_script"] = t["genus"] + " / " + t["script"]
    if languages == 17:
        t = t.loc["ar ca el en es fa fr he hu ja ko nl ru tr uk vi zh".split()]
    return t


def _knowledge_world(typ: pd.DataFrame, seed: int, nats, spread_by_tier: bool = False,
                     facts: int = 20) -> pd.DataFrame:
    """One simulated run at the language level, from pairs: each language's control margins
    ``N(1.8, spread)`` (the spread by tier as measured, or the medium tier's for every
    language), its real margins the same plus its knowledge ``nats[lang]`` and ``N(0, 3.4)``
    noise, ``9 * facts`` pairs; returns ``pairwise_beyond`` (share of pairs decided for the
    gold, real minus control) and ``nats_beyond`` (mean real-minus-control margin)."""
    rng = np.random.default_rng(seed)
    n = 9 * facts
    sd = (typ["resource_tier"].map(_SPREAD) if spread_by_tier
          else pd.Series(_SPREAD["medium"], index=typ.index)).to_numpy(float)
    m_c = _CONTROL_MEAN + rng.normal(0, 1, (len(typ), n)) * sd[:, None]
    m_r = m_c + np.asarray(nats, float)[:, None] + rng.normal(0, _PAIR_NOISE, (len(typ), n))
    return pd.DataFrame({"pairwise_beyond": (m_r > 0).mean(1) - (m_c > 0).mean(1),
                         "nats_beyond": (m_r - m_c).mean(1)}, index=typ.index)


def _trend_scenario(claim: str, name: str, knowledge, spread_by_tier=False, languages=53):
    """A :class:`~xcomps_utils.analysis.contract.Scenario` drawing :func:`knowledge_trend` at the
    headline depth on :func:`_knowledge_world` data; ``knowledge(typ, rng) -> [L]`` nats."""
    from .contract import Scenario

    typ = contract_typology(languages)
    label = "resource_tier" if claim == "resource_trend" else "grambank_bound"

    def draw(seed: int) -> ClaimTest:
        rng = np.random.default_rng(10_000 + seed)
        table = _knowledge_world(typ, seed, knowledge(typ, rng), spread_by_tier)
        return knowledge_trend(claim, table, typ, label, n_perm=499, seed=seed, describe=False)
    return Scenario(name, draw)


def _base(typ, rng):
    """Languages that differ in knowledge (sd 0.3 nats), families too (sd 0.3), around 0.5."""
    fam = typ["family"].unique()
    f = dict(zip(fam, rng.normal(0, 0.3, len(fam))))
    return 0.5 + typ["family"].map(f).to_numpy() + rng.normal(0, 0.3, len(typ))


def _step(typ):
    return typ["resource_tier"].map(TIER_ORDER).to_numpy(float)


def _bonus(mask_of):
    # 1 nat is about +0.05 pairwise accuracy at the medium tier's spread
    return lambda typ, rng: _base(typ, rng) + 1.0 * mask_of(typ)


_LATIN = _bonus(lambda t: (t["script"] == "Latn").to_numpy(float))
_BRANCH = _bonus(lambda t: t["genus"].isin(["Germanic", "Romance"]).to_numpy(float))


def _trend_contract(claim, effect_name, effect):
    from .contract import Contract

    return Contract(
        claim=claim,
        null=_trend_scenario(claim, "no trend: languages and families differ at random", _base),
        effect=_trend_scenario(claim, effect_name, effect),
        traps=(_trend_scenario(claim, "equal knowledge in nats, each tier's measured spread "
                               "of control margins (tokenization)", _base, spread_by_tier=True),
               _trend_scenario(claim, "a Latin-script bonus (+1 nat, about +0.05 accuracy), no "
                               "tier effect", _LATIN),
               _trend_scenario(claim, "a Germanic + Romance bonus (+1 nat), no tier effect",
                               _BRANCH)))


def _grambank(typ):
    g = typ["grambank_bound"].to_numpy(float)
    return np.where(np.isfinite(g), g, 0.0)


def _language_scenarios(claim):
    """english_rank and methods_track drawn at the language level."""
    from .contract import Contract, Scenario

    t53, t17 = contract_typology(53), contract_typology(17)

    def rank(shift, latin=0.0):
        def draw(seed):
            rng = np.random.default_rng(seed)
            v = rng.normal(0.1, 0.05, len(t53)) + latin * (t53["script"] == "Latn").to_numpy()
            v = v + shift * (t53.index == "en")
            return english_rank(pd.DataFrame({"pairwise_beyond": v}, index=t53.index),
                                "pairwise_beyond")
        return draw

    def track(r, outlier=False, shared_family=0.0):
        def draw(seed):
            rng = np.random.default_rng(seed)
            fam = t17["family"].unique()
            f = t17["family"].map(dict(zip(fam, rng.normal(0, shared_family or 1e-9,
                                                            len(fam))))).to_numpy()
            a = rng.normal(0, 1, len(t17))
            b = r * a + math.sqrt(1 - r * r) * rng.normal(0, 1, len(t17))
            a, b = a + f, b + f
            if outlier:
                a[0], b[0] = a[0] + 10, b[0] + 10
            return methods_track(pd.Series(a, t17.index), pd.Series(b, t17.index), t17,
                                 claim=claim, n_perm=499, seed=seed)
        return draw
    if claim == "english_rank":
        return Contract(claim, Scenario("English a language like the others", rank(0.0)),
                        Scenario("English 0.25 above the others (5 sd)", rank(0.25)),
                        (Scenario("a Latin-script bonus of +0.05, no English effect",
                                  rank(0.0, 0.05)),))
    return Contract(claim, Scenario("unrelated methods sharing family effects",
                                    track(0.0, shared_family=1.0)),
                    Scenario("methods correlated at r = 0.8", track(0.8)),
                    (Scenario("one language far above the rest in both, nothing else",
                              track(0.0, outlier=True)),))


def _consistency_contract(kind: str):
    """consistency_follows on 17 languages: pair values ``a_i + a_j + noise`` (a language known
    well is consistent with every other), plus ``effect`` for pairs sharing the label."""
    from .contract import Contract, Scenario

    t17 = contract_typology(17)
    lab = t17["family" if kind == "family" else "script"].rename(kind)
    i, j = np.triu_indices(len(t17), 1)
    same = lab.to_numpy()[i] == lab.to_numpy()[j]

    def world(effect, level_sd=0.05):
        def draw(seed):
            rng = np.random.default_rng(seed)
            a = rng.normal(0, level_sd, len(t17))
            v = a[i] + a[j] + effect * same + rng.normal(0, 0.02, len(i))
            table = pd.DataFrame({"lang_a": t17.index[i], "lang_b": t17.index[j], "rankc": v})
            return consistency_follows(table, lab, n_perm=499, seed=seed)
        return draw
    return Contract(f"consistency_follows_{kind}",
                    Scenario("no pair effect, languages differ in level", world(0.0)),
                    Scenario(f"pairs of one {kind} 0.05 more consistent", world(0.05)),
                    (Scenario("languages far apart in level (sd 0.3), no pair effect",
                              world(0.0, 0.3)),))


def _contracts() -> list:
    return [_trend_contract("resource_trend", "a trend of 1.5 nats a tier step (about 0.07 "
                            "accuracy)", lambda t, r: _base(t, r) + 1.5 * _step(t)),
            _trend_contract("morphology_trend", "a trend of -8 nats over the Grambank share",
                            lambda t, r: _base(t, r) - 8.0 * _grambank(t)),
            _language_scenarios("english_rank"), _language_scenarios("direct_tracks_neuro"),
            _language_scenarios("direct_tracks_meta"), _consistency_contract("family"),
            _consistency_contract("script")]


#: the claim contracts of this chapter's claims (:mod:`xcomps_utils.analysis.contract`): the
#: trends at the headline depth (:data:`HEADLINE_STRATA`, 53 languages: at 17 no depth below
#: the family leaves a relabeling that can decide) on both co-primary measures
CONTRACTS = _contracts()
