"""Where an XCOMPS pair's log-probability difference comes from: concept, property, the rest.

XCOMPS' *Direct* method (He et al., 2025, arXiv 2502.19737) calls a concept-property item known
when ``log p(good) > log p(bad)`` (``"A robin can fly."`` over ``"A penguin can fly."``). That
difference (``Δ``, nats) has two very different parts: how probable the *concept* is at all (a
frequency prior: *robin* vs *penguin*) and how probable the *property* is given the concept (the
knowledge tested). This module splits ``Δ`` token by token with the ideas of token-level
perplexity (Prins et al., 2026, arXiv 2603.29396; :mod:`xcomps_utils.methods.perplexity`), and judges
each pair by its property tokens alone, as COMPS (Misra et al., 2023) removes the concept prior.

**Regions.** The two sentences share a prefix and a suffix of characters; between them lies the
*concept span* (the differing characters). The span is found on the text, for any script and word
order, in three steps, each only ever widening it:

1. the longest common character prefix and suffix of the two sentences (``"A "`` and
   ``" can fly."``);
2. the concept strings of the data (``acceptable_concept``/``unacceptable_concept``), when found
   in their sentence, are inside the span (a concept sharing characters with the other, 企鹅/天鹅,
   keeps its shared 鹅);
3. the span is widened to whole words (runs of letters between whitespace and punctuation, or
   characters in a text without whitespace; a segmentation of the caller's choice), then to a
   **token boundary both sentences share** (:func:`xcomps_utils.lm.words.token_boundaries`: never
   inside a token, nor inside a byte-level piece that carries part of the next character),
   repeating until both hold. So a token that straddles the span's edge (``"Ġrob"``
   owns the space before *robin*; ``"鸟会"`` would fuse concept and property) goes **to the
   concept**: its probability is in part a probability of concept characters, and cutting at a
   boundary both tokenizations share keeps the property measured on the *same text* in both
   sentences. A suffix written attached to the concept (Hungarian *elefánt-nak*, Turkish
   *fil-in*, Korean 울새-는) is part of the concept's word and so of the concept: its form often
   depends on the concept (vowel harmony, 은/는), and its probability is that of the concept's
   inflected form.

Every token of each sentence is then in exactly one category: **prefix** (before the span),
**concept** (in it), **property** (after it: the shared continuation, scored after a *different*
concept in each sentence) or **period** (after it, a full stop and no letter or digit, Prins et
al.'s period category). For a concept-last word order (the property before the concept) the
property falls in the prefix: a causal model can only show what it knows about a concept in
tokens that come after it.

**Decomposition** (additive, exact): ``Δ = Δ_prefix + Δ_concept + Δ_property + Δ_period`` with
``Δ_c = Σ_{t in c} log p_good(t) - Σ_{t in c} log p_bad(t)``; the parts sum to the whole because
they partition the same tokens. ``Δ_prefix`` is zero up to rounding (same text, same context).

**Conditional Direct**: ``log p(continuation | concept prefix)`` = the sum of the log-probabilities
of the tokens after the span (property + period), per sentence; the pair is judged by
``cond_delta = Δ_property + Δ_period > 0``. It equals ``log p(sentence) - log p(prefix)`` computed
on the two texts (tested against a float64 one-text-at-a-time loop within 1e-5 nats). The **concept
prior** is ``prior_delta = Δ_prefix + Δ_concept = log p(prefix_good) - log p(prefix_bad)``.

**Proportions** (Prins et al. 2026, §3; the formulas of :mod:`xcomps_utils.methods.perplexity`): tokens of
the two sentences are aligned into *groups* — in the shared prefix and suffix, tokens covering the
same characters; the two concept spans form one group — and each group has
``ds_g = s_bad(g) - s_good(g)`` (surprisal difference, nats; positive: the group prefers the
acceptable sentence) and ``dPPL_g = exp(s_bad(g)) - exp(s_good(g))``. Per category, the plain
proportion ``Σ_cat |d| / Σ |d|`` and the normalized proportion ``Σ_cat d / Σ|d| - n_cat ·
median(d / Σ|d|)``, in nats (``_s``) and in perplexity (``_ppl``).

How often the concept prior decides a pair, and the claims about it, are the analysis layer:
:mod:`xcomps_utils.analysis.concept_prior`.
"""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..lm.token_scores import TokenScores
from ..lm.words import token_boundaries, token_spans, word_spans
from ..methods.perplexity import normalized_proportion, PERIODS, plain_proportion
from ..pairs.xcomps import languages

__all__ = ["conditional_decisions", "CATEGORIES", "ConceptSpan", "concept_span", "continuation_logprob", "split_pair",
           "split_pair_parts", "Decomposition", "decompose_pairs", "proportion_summary", "mismatched_pairs",
           "CONTROL_MARK"]

CATEGORIES = ("prefix", "concept", "property", "period")
#: what the id of a pair :func:`mismatched_pairs` rebuilt holds between its own id and the id of
#: the pair its continuation comes from (``"<own>|cont:<other>"``): such a pair is a control,
#: not one of its task's pairs
CONTROL_MARK = "|cont:"


@dataclass(frozen=True)
class ConceptSpan:
    """The concept span of a pair, as the lengths of the text the two sentences share around it.

    Attributes:
        prefix: characters before the span, the same in both sentences (``good[:prefix] ==
            bad[:prefix]``).
        suffix: characters after it, the same in both (``good[-suffix:] == bad[-suffix:]``).
        good_found, bad_found: whether the concept string was found in its sentence (``None``:
            not given).
    """

    prefix: int
    suffix: int
    good_found: bool | None = None
    bad_found: bool | None = None

    def span(self, text: str) -> tuple[int, int]:
        """``(start, end)`` of the concept span in one of the two sentences."""
        return self.prefix, len(text) - self.suffix


def _find(text: str, concept: str | None, lo: int, hi: int) -> tuple[int, int] | None:
    """The occurrence of ``concept`` (case-insensitive) overlapping ``[lo, hi)``, else the nearest."""
    if not concept or not str(concept).strip():
        return None
    hits = [m.span() for m in re.finditer(re.escape(str(concept).strip()), text, re.IGNORECASE)]
    if not hits:
        return None
    return min(hits, key=lambda h: (0 if h[0] < max(hi, lo + 1) and h[1] > lo else 1,
                                    min(abs(h[0] - lo), abs(h[1] - hi))))


def _letter_runs(text: str) -> list[tuple[int, int]]:
    """Words for the span: runs of characters that are neither whitespace nor punctuation
    (Unicode category P*); each punctuation mark is a word of its own."""
    spans, start = [], None
    for i, ch in enumerate(text + " "):
        sep = ch.isspace() or unicodedata.category(ch).startswith("P")
        if sep and start is not None:
            spans.append((start, i))
            start = None
        if not sep and start is None:
            start = i
        if sep and not ch.isspace() and i < len(text):
            spans.append((i, i + 1))
    return spans


def _segmentation(text: str, words):
    if words == "auto":
        return _letter_runs if any(ch.isspace() for ch in text.strip()) else "characters"
    return words


def concept_span(good: str, bad: str, good_concept: str | None = None,
                 bad_concept: str | None = None, *, words="auto",
                 good_offsets=None, bad_offsets=None) -> ConceptSpan:
    """The concept span of a minimal pair (module docstring, steps 1-3).

    Args:
        good, bad: the acceptable and unacceptable sentence.
        good_concept, bad_concept: the concepts (``acceptable_concept``, ``unacceptable_concept``);
            optional, a concept not found in its sentence is ignored (``*_found`` says so).
        words: word segmentation for step 3: ``"auto"`` (runs of letters, digits and marks
            between whitespace and punctuation, so ``"fly."`` is ``fly`` and ``.``; every character
            in a text without whitespace), ``None`` (whitespace words,
            :func:`xcomps_utils.lm.words.word_spans`), ``"characters"``, a function ``text ->
            words``, or ``False`` (no widening to words).
        good_offsets, bad_offsets: ``[n, 2]`` token offsets of each sentence; given both, the span
            ends on a token boundary both sentences share.

    Returns:
        :class:`ConceptSpan`.

    Raises:
        ValueError: the two sentences are identical (no span).
    """
    if good == bad:
        raise ValueError(f"identical sentences {good!r}: a minimal pair needs a difference")
    n = min(len(good), len(bad))
    p = next((i for i in range(n) if good[i] != bad[i]), n)
    q = next((i for i in range(n - p) if good[-1 - i] != bad[-1 - i]), n - p)
    found = []
    for text, concept in ((good, good_concept), (bad, bad_concept)):
        hit = _find(text, concept, p, len(text) - q)
        found.append(None if concept is None else hit is not None)
        if hit is not None:
            p, q = min(p, hit[0]), min(q, len(text) - hit[1])
    texts = (good, bad)
    bounds = []
    if good_offsets is not None and bad_offsets is not None:
        for text, off in zip(texts, (good_offsets, bad_offsets)):
            bounds.append(token_boundaries(off, len(text)))
    segs = [] if words is False else [
        _letter_runs(t) if _segmentation(t, words) is _letter_runs
        else word_spans(t, _segmentation(t, words)) for t in texts]
    while True:
        p0, q0 = p, q
        for text, spans in zip(texts, segs):  # whole words
            end = len(text) - q
            for a, b in spans:
                if a < p < b:
                    p = a
                if a < end < b:
                    q = min(q, len(text) - b)
        for text, bd in zip(texts, bounds):  # a token boundary in both
            p = min(p, max(x for x in bd if x <= p))
            q = min(q, len(text) - min(x for x in bd if x >= len(text) - q))
        if (p, q) == (p0, q0):
            break
    return ConceptSpan(p, q, *found)


def continuation_logprob(scores: TokenScores, start: int) -> float:
    """``log p(text[start:] | text[:start])``: the sum of the log-probabilities (nats) of the
    tokens from character ``start`` on (token spans as in :func:`xcomps_utils.lm.words.token_spans`).

    Raises:
        ValueError: ``start`` is not a token boundary of ``scores`` (a token straddles it).
    """
    spans = token_spans(scores.offsets, len(scores.text))
    bounds = token_boundaries(scores.offsets, len(scores.text))
    if start not in bounds:
        raise ValueError(f"character {start} of {scores.text!r} is inside a token; "
                         f"boundaries are {bounds}")
    keep = np.array([s >= start for s, _ in spans])
    return float(scores.logprobs[keep].sum())


def _category(text: str) -> str:
    return "period" if any(c in PERIODS for c in text) and not any(c.isalnum() for c in text) \
        else "property"


def _merge(intervals: list[tuple[int, int, str, int]]) -> list[list[tuple[str, int]]]:
    """Connected components of intervals sharing a character: ``[(side, token index), ...]``."""
    groups, end = [], -1
    for s, e, side, i in sorted(intervals):
        if groups and s < end:
            groups[-1].append((side, i))
            end = max(end, e)
        else:
            groups.append([(side, i)])
            end = e
    return groups


def split_pair(good: TokenScores, bad: TokenScores, good_concept: str | None = None,
               bad_concept: str | None = None, *, words="auto"
               ) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """Split one pair's ``Δ = log p(good) - log p(bad)`` into prefix, concept, property, period.

    Args:
        good, bad: the two sentences' scores (same model and BOS policy).
        good_concept, bad_concept, words: see :func:`concept_span`.

    Returns:
        ``(summary, groups, tokens)``:

        * ``summary``: ``logprob_good``, ``logprob_bad``, ``delta``; ``delta_<cat>`` (nats, they
          sum to ``delta``); ``n_<cat>_good``, ``n_<cat>_bad`` (tokens); ``cond_good``,
          ``cond_bad`` (log p of the continuation given the concept prefix), ``cond_delta``,
          ``prior_delta``; ``plain_<cat>_s``, ``norm_<cat>_s`` (on surprisal differences) and
          ``plain_<cat>_ppl``, ``norm_<cat>_ppl`` (on perplexity differences), NaN when every
          group difference is 0; ``n_groups``; ``concept_good``, ``concept_bad`` (span texts),
          ``continuation``; ``same_continuation`` (the tokens after the span have the same ids in
          both sentences); ``good_found``, ``bad_found``.
        * ``groups``: one row per aligned group: ``group``, ``category``, ``text`` (``good|bad``
          for the concept group), ``s_good``, ``s_bad`` (summed surprisal, nats), ``n_good``,
          ``n_bad``, ``delta_s`` (``s_bad - s_good``), ``delta_ppl``.
        * ``tokens``: one row per token of both sentences: ``side`` (good/bad), ``position``,
          ``token``, ``start``, ``end``, ``surprisal``, ``category``, ``group``.

    Raises:
        ValueError: identical sentences, or scores without tokens.
    """
    out, groups, cats, group_of = split_pair_parts(good, bad, good_concept, bad_concept, words)
    return out, pd.DataFrame(groups), pd.DataFrame(_token_columns(good, bad, cats, group_of))


_GROUP_COLUMNS = ("group", "category", "text", "s_good", "s_bad", "n_good", "n_bad", "delta_s",
                  "delta_ppl")


def split_pair_parts(good: TokenScores, bad: TokenScores, good_concept, bad_concept, words):
    """:func:`split_pair` without its tables: the decompositions of thousands of pairs build
    theirs once, from these parts.

    Returns:
        ``(summary, groups, categories, group_of)``: ``summary`` as :func:`split_pair`'s;
        ``groups`` its groups as ``{column: list}`` (one entry a group; surprisals in nats);
        ``categories`` each side's ``[n_tokens]`` array of token categories (``"good"``,
        ``"bad"``); ``group_of`` ``{(side, token index): group}``.

    Raises:
        ValueError: as :func:`split_pair`.
    """
    sides = {"good": good, "bad": bad}
    span = concept_span(good.text, bad.text, good_concept, bad_concept, words=words,
                        good_offsets=good.offsets, bad_offsets=bad.offsets)
    p, q = span.prefix, span.suffix
    tok_spans = {k: token_spans(s.offsets, len(s.text)) for k, s in sides.items()}
    cats, pre, post = {}, [], []
    for side, s in sides.items():
        end = len(s.text) - q
        c = []
        for i, (a, b) in enumerate(tok_spans[side]):
            if b <= p:
                c.append("prefix")
                pre.append((a, b, side, i))
            elif a >= end:
                c.append(_category(s.text[a:b]))
                post.append((a - end, b - end, side, i))
            else:
                c.append("concept")
        cats[side] = np.array(c)
    members = _merge(pre)
    concept = [(side, i) for side in sides for i in np.flatnonzero(cats[side] == "concept")]
    if concept:
        members.append(concept)
    members += _merge(post)
    group_of = {m: g for g, ms in enumerate(members) for m in ms}
    groups = {c: [] for c in _GROUP_COLUMNS}
    for g, ms in enumerate(members):
        sg = [i for side, i in ms if side == "good"]
        sb = [i for side, i in ms if side == "bad"]
        cat = cats["good"][sg[0]] if sg else cats["bad"][sb[0]]
        if cat == "concept":
            text = f"{good.text[slice(*span.span(good.text))]}|{bad.text[slice(*span.span(bad.text))]}"
        else:
            side, idx = ("good", sg) if sg else ("bad", sb)
            sp = tok_spans[side]
            text = sides[side].text[sp[min(idx)][0]:sp[max(idx)][1]]
        s_good, s_bad = float(-good.logprobs[sg].sum()), float(-bad.logprobs[sb].sum())
        for c, v in zip(_GROUP_COLUMNS, (g, str(cat), text, s_good, s_bad, len(sg), len(sb),
                                         s_bad - s_good,
                                         math.exp(min(s_bad, 700)) - math.exp(min(s_good, 700)))):
            groups[c].append(v)
    out = {"logprob_good": good.total, "logprob_bad": bad.total,
           "delta": good.total - bad.total}
    for cat in CATEGORIES:
        lg = float(good.logprobs[cats["good"] == cat].sum())
        lb = float(bad.logprobs[cats["bad"] == cat].sum())
        out[f"delta_{cat}"] = lg - lb
        out[f"n_{cat}_good"] = int((cats["good"] == cat).sum())
        out[f"n_{cat}_bad"] = int((cats["bad"] == cat).sum())
    after = {k: np.isin(cats[k], ("property", "period")) for k in sides}
    out["cond_good"] = float(good.logprobs[after["good"]].sum())
    out["cond_bad"] = float(bad.logprobs[after["bad"]].sum())
    out["cond_delta"] = out["cond_good"] - out["cond_bad"]
    out["prior_delta"] = out["delta_prefix"] + out["delta_concept"]
    group_cats = np.array(groups["category"], dtype=object)
    for name, col in (("s", "delta_s"), ("ppl", "delta_ppl")):
        d = np.array(groups[col], dtype=np.float64)
        for cat in CATEGORIES:
            m = group_cats == cat
            try:
                out[f"plain_{cat}_{name}"] = plain_proportion(d, m)
                out[f"norm_{cat}_{name}"] = normalized_proportion(d, m)
            except ValueError:
                out[f"plain_{cat}_{name}"] = out[f"norm_{cat}_{name}"] = math.nan
    out["n_groups"] = len(members)
    out["concept_good"] = good.text[slice(*span.span(good.text))]
    out["concept_bad"] = bad.text[slice(*span.span(bad.text))]
    out["continuation"] = good.text[len(good.text) - q:] if q else ""
    out["same_continuation"] = bool(np.array_equal(good.token_ids[after["good"]],
                                                   bad.token_ids[after["bad"]]))
    out["good_found"], out["bad_found"] = span.good_found, span.bad_found
    return out, groups, cats, group_of


def _token_columns(good: TokenScores, bad: TokenScores, cats: dict, group_of: dict) -> dict:
    """:func:`split_pair`'s token table as ``{column: array}`` (good's tokens, then bad's)."""
    cols = {k: [] for k in ("side", "position", "token", "start", "end", "surprisal",
                            "category", "group")}
    for side, s in (("good", good), ("bad", bad)):
        n = len(s.logprobs)
        cols["side"].append(np.full(n, side, dtype=object))
        cols["position"].append(np.arange(n))
        cols["token"].append(np.array(list(s.tokens), dtype=object))
        cols["start"].append(np.asarray(s.offsets[:, 0]) if n else np.zeros(0, np.int64))
        cols["end"].append(np.asarray(s.offsets[:, 1]) if n else np.zeros(0, np.int64))
        cols["surprisal"].append(-s.logprobs)
        cols["category"].append(np.asarray(cats[side], dtype=object))
        cols["group"].append(np.array([group_of[(side, i)] for i in range(n)], dtype=np.int64))
    return {k: np.concatenate(v) for k, v in cols.items()}


@dataclass
class Decomposition:
    """What :func:`decompose_pairs` returns.

    Attributes:
        pairs: one row per pair: the pairs' columns, the summary of :func:`split_pair`, and
            ``direct_correct`` (``delta > 0``), ``direct_tie``, ``cond_correct``
            (``cond_delta > 0``), ``cond_tie``, ``morphology``, ``resource_level``.
        groups: aligned groups of every pair (``lang``, ``pair_id`` + :func:`split_pair` groups).
        tokens: tokens of every pair (``lang``, ``pair_id`` + :func:`split_pair` tokens, with
            the group's ``delta_s``).
    """

    pairs: pd.DataFrame
    groups: pd.DataFrame
    tokens: pd.DataFrame


def decompose_pairs(pairs: pd.DataFrame, tokens: pd.DataFrame, *, bos_policy: str = "bos",
                    words="auto", progress: bool = False) -> Decomposition:
    """:func:`split_pair` for every XCOMPS pair, from a Direct run's token table.

    Args:
        pairs: XCOMPS pairs (:func:`xcomps_utils.pairs.xcomps.load_languages`): ``lang``,
            ``pair_id``, ``good``, ``bad``; ``acceptable_concept``/``unacceptable_concept`` used
            when present.
        tokens: the ``direct_tokens`` detail of a Direct run over these pairs
            (``Results.detail("direct_tokens")``: ``text``, ``position``, ``token_id``,
            ``token``, ``start``, ``end``, ``logprob``).
        bos_policy: the run's first-token convention (recorded in the scores only).
        words: see :func:`concept_span`.

    Returns:
        :class:`Decomposition`.

    Raises:
        KeyError: a sentence of ``pairs`` has no scored tokens (names it: tokens of another run?).
        ValueError: ``pairs`` lacks a column.
    """
    from tqdm.auto import tqdm

    need = [c for c in ("lang", "pair_id", "good", "bad") if c not in pairs]
    if need:
        raise ValueError(f"pairs lack column(s) {need}")
    by_text = TokenScores.of_texts(tokens, bos_policy)
    missing = [t for t in pd.unique(pd.concat([pairs["good"], pairs["bad"]])) if t not in by_text]
    if missing:
        raise KeyError(f"{len(missing)} sentences have no scored tokens, e.g. {missing[0]!r}: "
                       f"is the token table from a Direct run over these pairs?")

    rows, groups, toks, keys = [], [], [], []
    has_concepts = "acceptable_concept" in pairs and "unacceptable_concept" in pairs
    for r in tqdm(pairs.itertuples(index=False), total=len(pairs), disable=not progress,
                  desc="decomposing", unit="pair"):
        if r.good == r.bad:
            continue
        good, bad = by_text[r.good], by_text[r.bad]
        summary, g, cats, group_of = split_pair_parts(
            good, bad, r.acceptable_concept if has_concepts else None,
            r.unacceptable_concept if has_concepts else None, words)
        t = _token_columns(good, bad, cats, group_of)
        t["delta_s"] = np.asarray(g["delta_s"], dtype=np.float64)[t["group"]]
        key = (r.lang, str(r.pair_id))
        rows.append({"lang": key[0], "pair_id": key[1], **summary})
        groups.append(g)
        toks.append(t)
        keys.append(key)
    table = pd.DataFrame(rows)
    base = pairs.assign(pair_id=pairs["pair_id"].astype(str))
    out = base.merge(table, on=["lang", "pair_id"], how="inner")
    out["direct_correct"] = (out["delta"] > 0).astype(float)
    out["direct_tie"] = (out["delta"] == 0).astype(float)
    out["cond_correct"] = (out["cond_delta"] > 0).astype(float)
    out["cond_tie"] = (out["cond_delta"] == 0).astype(float)
    lang_table = languages().set_index("iso")
    out["morphology"] = out["lang"].map(lang_table["morphological_type"])
    out["resource_level"] = out["lang"].map(lang_table["resource_level"])
    return Decomposition(out, _keyed(groups, keys), _keyed(toks, keys))


def conditional_decisions(pairs: pd.DataFrame) -> pd.DataFrame:
    """``pairs`` (:attr:`Decomposition.pairs`, joined with the run's ``direct_near_tie_tolerance``)
    with conditional Direct decided by the one rule, :func:`xcomps_utils.lm.precision.decide`:
    ``cond_decision`` is ``"tie"`` where ``cond_delta`` is 0, ``"near_tie"`` where it is within the
    run's error bound of the pair, else ``"right"`` or ``"wrong"``; ``cond_near_tie`` beside it. The
    bound is the whole pair's (a sum over every token of both sentences bounds the sum over the
    continuation's tokens), so conditional Direct's near ties are left out of its accuracy as
    Direct's are (:func:`xcomps_utils.analysis.scored.decided_rows`), never counted by their sign.
    Without the tolerance column only exact ties are left out.

    Raises:
        InputError: ``pairs`` has no ``cond_delta``.
    """
    from ..errors import InputError
    from ..lm.precision import decide

    if "cond_delta" not in pairs:
        raise InputError(f"the 'pairs' parameter must hold 'cond_delta' (decompose_pairs); got "
                         f"{list(pairs.columns)}")
    tol = (pairs["direct_near_tie_tolerance"].fillna(0).to_numpy(float)
           if "direct_near_tie_tolerance" in pairs else np.zeros(len(pairs)))
    label = decide(pairs["cond_delta"].to_numpy(float), tol)
    return pairs.assign(cond_decision=label, cond_near_tie=(label == "near_tie").astype(float))


def _keyed(frames: list[dict], keys: list[tuple[str, str]]) -> pd.DataFrame:
    """The tables of every pair (each ``{column: values}``), one below the other, led by the
    pair's ``lang`` and ``pair_id``."""
    n = [len(next(iter(f.values()))) for f in frames]
    cols = {"lang": np.repeat([k[0] for k in keys], n).astype(object),
            "pair_id": np.repeat([k[1] for k in keys], n).astype(object)}
    for c in (frames[0] if frames else {}):
        parts = [f[c] for f in frames]
        cols[c] = (np.concatenate(parts) if isinstance(parts[0], np.ndarray)
                   else list(itertools.chain.from_iterable(parts)))
    return pd.DataFrame(cols)


def proportion_summary(decomposed: pd.DataFrame, by: str | list[str] = "lang",
                       unit: str = "s") -> pd.DataFrame:
    """Mean plain and normalized proportion per category (``unit`` ``"s"``: on surprisal
    differences, nats; ``"ppl"``: on perplexity differences), and the mean additive parts
    ``delta_<cat>`` (nats), per group of pairs.

    Returns:
        one row per group: ``pairs``, ``delta``, ``delta_<cat>``, ``plain_<cat>``, ``norm_<cat>``.
    """
    cols = (["delta"] + [f"delta_{c}" for c in CATEGORIES]
            + [f"plain_{c}_{unit}" for c in CATEGORIES] + [f"norm_{c}_{unit}" for c in CATEGORIES])
    g = decomposed.groupby(by, sort=False)
    out = g[cols].mean()
    out.columns = [c.replace(f"_{unit}", "") if c.startswith(("plain_", "norm_")) else c
                   for c in out.columns]
    out.insert(0, "pairs", g.size())
    return out


def mismatched_pairs(pairs: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Control pairs for conditional Direct's chance level: each pair's two concept prefixes
    followed by **another item's continuation** (``"A bicycle" / "A kayak"`` + ``" is used for
    writing."``).

    Conditional Direct calls a pair right when the continuation is more probable after the
    acceptable concept. Whether 0.5 is its chance level is an assumption: an acceptable concept
    may raise the probability of any continuation (a more frequent or more generic noun). On
    these pairs no continuation is about its concept, so their conditional accuracy is the level
    a model reaches without knowing the property: the chance level, drawn. Within each language
    and negative-sample type the items are deranged (a random cyclic order: no item keeps its own
    continuation, and where the group allows, none gets a continuation of its own property).

    The split is text-level (:func:`concept_span` on the two sentences, widened to words): the
    continuation is the text both sentences share after the concept span.

    Args:
        pairs: XCOMPS pairs (:func:`xcomps_utils.pairs.xcomps.load_languages`): ``lang``,
            ``negative_sample_type``, ``property``, ``good``, ``bad``, ``pair_id``,
            ``acceptable_concept``, ``unacceptable_concept``.
        seed: the derangement's seed.

    Returns:
        the pairs with ``good`` / ``bad`` rebuilt, ``pair_id`` ``"<own>|cont:<other>"``,
        ``continuation_of`` (the other pair's id); every other column is the pair's own (so the
        item, the language and the type are those of the prefixes). A group of one pair has no
        other continuation and is left out.

    Raises:
        KeyError: a column above is missing.
    """
    missing = [c for c in ("lang", "negative_sample_type", "property", "good", "bad", "pair_id",
                           "acceptable_concept", "unacceptable_concept") if c not in pairs]
    if missing:
        raise KeyError(f"mismatched_pairs needs the XCOMPS pair columns {missing}")
    rng = np.random.default_rng(seed)
    heads, conts = [], []
    for r in pairs.itertuples(index=False):
        span = concept_span(r.good, r.bad, r.acceptable_concept, r.unacceptable_concept)
        cut = span.suffix
        heads.append((r.good[:len(r.good) - cut], r.bad[:len(r.bad) - cut]))
        conts.append(r.good[len(r.good) - cut:] if cut else "")
    out = []
    for _, grp in pairs.reset_index(drop=True).groupby(["lang", "negative_sample_type"],
                                                       sort=True):
        idx = grp.index.to_numpy()
        if len(idx) < 2:
            continue
        order = idx[rng.permutation(len(idx))]
        props = pairs["property"].to_numpy()
        # a cyclic shift of a random order is a derangement; shift further while some item
        # would get a continuation of its own property and another shift avoids it
        shift = next((k for k in range(1, len(order))
                      if not (props[order] == props[np.roll(order, -k)]).any()), 1)
        for i, j in zip(order, np.roll(order, -shift)):
            row = pairs.iloc[i].copy()
            row["good"] = heads[i][0] + conts[j]
            row["bad"] = heads[i][1] + conts[j]
            row["continuation_of"] = pairs["pair_id"].iloc[j]
            row["pair_id"] = f"{pairs['pair_id'].iloc[i]}{CONTROL_MARK}{pairs['pair_id'].iloc[j]}"
            out.append(row)
    return pd.DataFrame(out).reset_index(drop=True)

