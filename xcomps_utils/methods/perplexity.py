"""Token-level perplexity: is the model perplexed for the right reason?

Implements the method of Prins, Punzo, Wildenburg, Cinà and Pezzelle, "Is my model perplexed for
the right reason?" (arXiv 2603.29396). A minimal pair (good, bad) is embedded in prompts with two
labelled slots. The *correct* prompt ``A`` puts each sentence in the slot its label describes; the
*incorrect* prompt ``B`` swaps the two sentences. Each task has 4 wordings x 2 label orders = 8
(A, B) prompt pairs per item.

Definitions (all logarithms natural; surprisal ``s = -log p`` in nats):

* prompt perplexity ``PPL = exp(mean_t s_t)``; **correct** when ``PPL(A) < PPL(B)``.
* **alignment**: ``A`` and ``B`` contain the same characters in another order. Every character is
  given a canonical coordinate (template piece or sentence, offset inside it). Token spans are made
  contiguous (each token also owns the whitespace up to the next token), and tokens of ``A`` and
  ``B`` that share a canonical character are joined into one *group* (a connected component of
  the characters linked by tokens). A group is one token on each side wherever both tokenize
  alike; tokens that straddle a slot boundary (``'K``, ``.'``) are grouped, never dropped. A
  group's surprisal is the sum over its tokens, its perplexity ``exp(sum)`` (exactly the token
  perplexity for one-token groups).
* categories: **pivotal** (the group overlaps a pivotal word of either sentence), **period** (not
  pivotal, contains a full stop ``.``/``。`` and no letter or digit), **other**.
* ``dPPL_g = PPL_B(g) - PPL_A(g)``: positive when the group makes the incorrect prompt more
  perplexed.
* **plain proportion** of a category = ``sum_cat |dPPL_g| / sum_all |dPPL_g|`` in [0, 1].
* **normalized proportion** = ``sum_cat d_g - n_cat * median_all(d_g)`` with
  ``d_g = dPPL_g / sum_all |dPPL_g|``: +1 when the whole difference sits on the category in the
  right direction, -1 in the wrong direction, about 0 when its groups behave like the median group.
  This is the project's reconstruction of the paper's verbal definition.
* the same two proportions computed on surprisal differences ``ds_g = s_B(g) - s_A(g)`` (nats), a
  robustness variant: perplexities span orders of magnitude and one rare token can dominate.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..lm.token_scores import TokenScores
from ..declare import check, ParameterError, Wordings
from ..errors import InputError, NotFound, NumericalError
from .base import Method, long_measures
from ..lm.words import token_spans as _contiguous_spans  # token i owns up to token i+1

__all__ = ["load_wordings", "wordings_sha256", "PromptPair", "build_prompt_pairs", "align_groups",
           "plain_proportion", "normalized_proportion", "score_prompt_pairs", "PromptPairScores",
           "CATEGORIES", "PERIODS", "wording_family", "wordings_of", "TokenPerplexity"]

CATEGORIES = ("pivotal", "period", "other")
PERIODS = ".\u3002\uff0e"  # full stop, ideographic full stop, fullwidth full stop
ORDERS = ("good_first", "bad_first")


def load_wordings(family: str | None = None) -> dict | list:
    """The prompt wordings shipped in ``xcomps_utils/methods/wordings.json`` (all, or one family:
    ``dust``, ``blimp``, ``crows_pairs``, ``nonsense``).

    Raises:
        NotFound: (a ``KeyError``) unknown family.
    """
    all_ = json.loads(resources.files("xcomps_utils.methods").joinpath("wordings.json").read_text())
    all_.pop("_doc")
    if family is None:
        return all_
    if family not in all_:
        raise NotFound(f"no wordings for {family!r}; have {sorted(all_)}")
    return all_[family]


def wordings_sha256() -> str:
    """SHA-256 of every prompt wording (for a run's key: new wording, new run)."""
    return hashlib.sha256(json.dumps(load_wordings()).encode()).hexdigest()


@dataclass
class PromptPair:
    """A correct and an incorrect prompt for one minimal pair, with their segment layout.

    ``segments_*`` are ``(key, start, end)`` character ranges of the prompt; keys are ``t0``,
    ``t1``, ``t2`` (template pieces), ``good`` and ``bad`` (the sentences).
    """

    item: int
    wording: str
    order: str
    correct: str
    incorrect: str
    segments_correct: list
    segments_incorrect: list
    good: str
    bad: str
    good_pivots: list
    bad_pivots: list


def _fill(template: str, s1: tuple[str, str], s2: tuple[str, str]) -> tuple[str, list]:
    if template.count("{s1}") != 1 or template.count("{s2}") != 1 or \
            template.index("{s1}") > template.index("{s2}"):
        raise InputError(f"template needs one {{s1}} then one {{s2}}: {template!r}")
    head, rest = template.split("{s1}")
    mid, tail = rest.split("{s2}")
    pieces = [("t0", head), s1, ("t1", mid), s2, ("t2", tail)]
    text, segments, pos = "", [], 0
    for key, piece in pieces:
        segments.append((key, pos, pos + len(piece)))
        text += piece
        pos += len(piece)
    return text, segments


def build_prompt_pairs(pairs: pd.DataFrame, wordings: list[dict]) -> list[PromptPair]:
    """All (correct, incorrect) prompt pairs: ``len(pairs) x len(wordings) x 2`` of them.

    ``good_first`` templates name the good sentence's property first: correct = (good, bad) in
    (s1, s2), incorrect = (bad, good). ``bad_first`` templates: correct = (bad, good), incorrect
    = (good, bad). (In DUST's terms: uuoo/uoou and oouu/ouuo.)
    """
    out = []
    for item, row in enumerate(pairs.itertuples(index=False)):
        g, b = ("good", row.good), ("bad", row.bad)
        for w in wordings:
            for order in ORDERS:
                right = (g, b) if order == "good_first" else (b, g)
                a, seg_a = _fill(w[order], *right)
                bb, seg_b = _fill(w[order], *right[::-1])
                out.append(PromptPair(item, w["id"], order, a, bb, seg_a, seg_b, row.good,
                                      row.bad, list(map(list, row.good_pivots)),
                                      list(map(list, row.bad_pivots))))
    return out


def _canonical(segments: list, lengths: dict) -> np.ndarray:
    """Canonical id of every character of a prompt (same ids in A and B)."""
    base, acc = {}, 0
    for key in ("t0", "t1", "t2", "good", "bad"):
        base[key] = acc
        acc += lengths[key]
    return np.concatenate([base[k] + np.arange(e - s) for k, s, e in segments]).astype(np.int64)


def align_groups(pp: PromptPair, sa: TokenScores, sb: TokenScores) -> pd.DataFrame:
    """Align the tokens of the correct (``sa``) and incorrect (``sb``) prompt into groups.

    Returns:
        one row per group, in the correct prompt's order: ``group``, ``text`` (the group's
        characters in A), ``n_tokens_correct``, ``n_tokens_incorrect``, ``s_correct``,
        ``s_incorrect`` (summed surprisal, nats), ``category``.

    Raises:
        ValueError: the two prompts do not hold the same characters (a bug in prompt building).
    """
    seg_len = {k: e - s for k, s, e in pp.segments_correct}
    ca, cb = _canonical(pp.segments_correct, seg_len), _canonical(pp.segments_incorrect, seg_len)
    n = len(ca)
    check = np.empty(n, dtype="<U1")
    check[ca] = list(pp.correct)
    if len(cb) != n or "".join(check[cb]) != pp.incorrect:
        raise ValueError(f"prompts of item {pp.item} ({pp.wording}, {pp.order}) differ in content")
    token_chars = []
    for scores, canon, text in ((sa, ca, pp.correct), (sb, cb, pp.incorrect)):
        token_chars.append([canon[s:e] for s, e in _contiguous_spans(scores.offsets, len(text))])
    # a token links its characters; a group is a connected component of characters
    first = np.concatenate([np.full(len(c), c[0]) for t in token_chars for c in t])
    every = np.concatenate([c for t in token_chars for c in t])
    root = connected_components(coo_matrix((np.ones(len(every)), (first, every)), (n, n)),
                                directed=False)[1]
    roots_a = [root[c[0]] for c in token_chars[0]]
    roots_b = [root[c[0]] for c in token_chars[1]]
    order = list(dict.fromkeys(roots_a))
    # pivotal and period characters, in canonical ids
    pivotal = np.zeros(n, dtype=bool)
    base_good = seg_len["t0"] + seg_len["t1"] + seg_len["t2"]
    for base, spans in ((base_good, pp.good_pivots), (base_good + seg_len["good"], pp.bad_pivots)):
        for s, e in spans:
            pivotal[base + s:base + e] = True
    position_a = np.empty(n, dtype=np.int64)
    position_a[ca] = np.arange(n)
    members = {r: [] for r in order}
    for x in range(n):
        members[root[x]].append(x)
    rows = []
    for gi, r in enumerate(order):
        chars = np.array(members[r])
        text = "".join(pp.correct[i] for i in np.sort(position_a[chars]))
        if pivotal[chars].any():
            cat = "pivotal"
        elif any(ch in PERIODS for ch in text) and not any(ch.isalnum() for ch in text):
            cat = "period"
        else:
            cat = "other"
        ia = [i for i, x in enumerate(roots_a) if x == r]
        ib = [i for i, x in enumerate(roots_b) if x == r]
        rows.append({"group": gi, "text": text, "n_tokens_correct": len(ia),
                     "n_tokens_incorrect": len(ib),
                     "s_correct": float(sa.surprisals[ia].sum()),
                     "s_incorrect": float(sb.surprisals[ib].sum()), "category": cat})
    return pd.DataFrame(rows)


def plain_proportion(delta: np.ndarray, mask: np.ndarray) -> float:
    """``sum_{mask} |delta| / sum_all |delta|``, in [0, 1].

    Raises:
        InputError: (a ``ValueError``) every delta is 0 (the two prompts score identically: no
            difference to share).
    """
    delta = np.asarray(delta, dtype=np.float64)
    total = np.abs(delta).sum()
    if not total > 0:
        raise InputError("all differences are zero: the proportion is undefined")
    return float(np.abs(delta[mask]).sum() / total)


def normalized_proportion(delta: np.ndarray, mask: np.ndarray) -> float:
    """``sum_{mask} d - n_mask * median(d)`` with ``d = delta / sum |delta|``.

    +1 when all the difference is on ``mask`` in the positive direction, -1 in the negative one,
    about 0 when the masked groups are like the median group.

    Raises:
        InputError: (a ``ValueError``) every delta is 0.
    """
    delta = np.asarray(delta, dtype=np.float64)
    total = np.abs(delta).sum()
    if not total > 0:
        raise InputError("all differences are zero: the proportion is undefined")
    d = delta / total
    return float(d[mask].sum() - mask.sum() * np.median(d))


def _metrics(groups: pd.DataFrame) -> dict:
    ppl_a, ppl_b = np.exp(groups["s_correct"]), np.exp(groups["s_incorrect"])
    d_ppl = (ppl_b - ppl_a).to_numpy()
    d_s = (groups["s_incorrect"] - groups["s_correct"]).to_numpy()
    if not np.isfinite(d_ppl).all():
        raise NumericalError("a group perplexity overflowed (surprisal > 709 nats)")
    out = {}
    for cat in CATEGORIES:
        m = (groups["category"] == cat).to_numpy()
        out[f"n_{cat}"] = int(m.sum())
        for name, delta in (("ppl", d_ppl), ("s", d_s)):
            out[f"plain_{cat}_{name}"] = plain_proportion(delta, m)
            out[f"norm_{cat}_{name}"] = normalized_proportion(delta, m)
    return out


@dataclass(frozen=True)
class PromptPairScores:
    """What :func:`score_prompt_pairs` computes.

    Attributes:
        metrics: one row per prompt pair (``item``, ``wording``, ``order``, ``ppl_correct``,
            ``ppl_incorrect``, ``correct``, ``n_groups``, ``n_<cat>``, ``plain_<cat>_ppl``,
            ``norm_<cat>_ppl``, ``plain_<cat>_s``, ``norm_<cat>_s``).
        groups: one row per aligned group (see :func:`align_groups`) with ``item``,
            ``wording``, ``order``, ``ppl_correct``/``ppl_incorrect`` (group perplexities),
            ``delta_ppl`` and ``delta_s``.
        scores: each prompt text -> its :class:`~xcomps_utils.lm.scoring.TokenScores`.
    """

    metrics: pd.DataFrame
    groups: pd.DataFrame
    scores: dict


def score_prompt_pairs(lm, prompt_pairs: list[PromptPair], **kwargs) -> PromptPairScores:
    """Score every prompt and compute accuracy and proportions per prompt pair.

    Prompts are scored with :func:`xcomps_utils.lm.scoring.token_scores` (BOS policy ``bos``), which
    takes the keyword arguments (``batch_size``, ``token_budget``, ``progress``); the template
    text the prompts share is computed once (``shared_prefix``).

    Returns:
        a :class:`PromptPairScores` (``.metrics``, ``.groups``, ``.scores``).
    """
    texts = list(dict.fromkeys(t for pp in prompt_pairs for t in (pp.correct, pp.incorrect)))
    from ..lm.scoring import token_scores

    scores = dict(zip(texts, token_scores(lm, texts, bos_policy="bos", **kwargs)))
    rows, tables = [], []
    for pp in prompt_pairs:
        sa, sb = scores[pp.correct], scores[pp.incorrect]
        g = align_groups(pp, sa, sb)
        ppl_a, ppl_b = float(np.exp(sa.surprisals.mean())), float(np.exp(sb.surprisals.mean()))
        rows.append({"item": pp.item, "wording": pp.wording, "order": pp.order,
                     "ppl_correct": ppl_a, "ppl_incorrect": ppl_b, "correct": ppl_a < ppl_b,
                     "n_groups": len(g), **_metrics(g)})
        g = g.assign(item=pp.item, wording=pp.wording, order=pp.order,
                     ppl_correct=np.exp(g["s_correct"]), ppl_incorrect=np.exp(g["s_incorrect"]))
        g["delta_ppl"] = g["ppl_incorrect"] - g["ppl_correct"]
        g["delta_s"] = g["s_incorrect"] - g["s_correct"]
        tables.append(g)
    return PromptPairScores(pd.DataFrame(rows), pd.concat(tables, ignore_index=True), scores)


# --- the method --------------------------------------------------------------------------------

def wording_family(task: str) -> str:
    """The token-level perplexity wordings family of a task.

    Raises:
        ParameterError: an XCOMPS task (it has no wordings; names ``task``).
    """
    from ..pairs.tasks import get

    if task.startswith("xcomps"):
        raise ParameterError("task", "a task with prompt wordings (token-level perplexity has "
                                     "none for XCOMPS yet)", task,
                             "run token_ppl on other tasks, or XCOMPS with other methods")
    return get(task).wordings


def wordings_of(family: str, wordings) -> list[dict]:
    """The chosen wordings (``"all"`` or ids) of a family.

    Raises:
        ParameterError: none of them exists (names ``wordings``).
    """
    ws = load_wordings(family)
    if wordings == "all":
        return ws
    chosen = [w for w in ws if w["id"] in wordings]
    if not chosen:
        raise ParameterError("wordings", f"'all' or wordings of the task family {family!r}: "
                                         f"{', '.join(w['id'] for w in ws)}", wordings)
    return chosen


@dataclass(frozen=True)
class TokenPerplexity(Method):
    """Token-level perplexity: each pair inside prompt pairs of every chosen wording.

    Measures per pair, ``wording`` and ``order``: ``ppl_correct``, ``ppl_incorrect``,
    ``correct``, ``n_groups``, ``n_<category>``, ``plain_<category>_<ppl|s>``,
    ``norm_<category>_<ppl|s>``. Details ``ppl_groups`` (aligned token groups) and
    ``ppl_tokens`` (every prompt token).
    """

    shard_size: int = 50
    uses: tuple[str, ...] = ("good", "bad", "good_pivots", "bad_pivots")
    needs: str = "tasks"
    why: str = "token-level perplexity has no prompt wordings for XCOMPS yet"
    parameters: tuple[str, ...] = ("wordings",)
    fingerprints: tuple = (("wordings_sha256", lambda: wordings_sha256()),)  # looked up when called

    name = "token_ppl"
    prompts = True
    selection = True
    per_order_decisions = True
    flags = {"wordings": ("--wordings", ())}
    audit_tolerance = "proportions"
    audit_details = {"ppl_tokens": "token_logprobs", "ppl_groups": "prompt_groups"}

    def check_inputs(self, pairs: pd.DataFrame, params: dict) -> None:
        """``wordings`` is ``"all"`` or a list of ids, and every task has those wordings
        (:class:`~xcomps_utils.declare.ParameterError` naming ``wordings`` or ``task``)."""
        wordings = check(Wordings, params["wordings"], "wordings")
        for task in pairs["task"].unique():
            wordings_of(wording_family(task), wordings)

    def compute_shard(self, lm, pairs: pd.DataFrame, params: dict) -> tuple[pd.DataFrame, dict]:
        """The prompt pairs of each task's wordings family, scored
        (:func:`score_prompt_pairs`): long measures and the ``ppl_groups``, ``ppl_tokens``
        details."""
        p = params
        measures, groups, tokens = [], [], []
        for family, sub in pairs.groupby(pairs["task"].map(wording_family), sort=False):
            sub = sub.reset_index(drop=True)
            pps = build_prompt_pairs(sub, wordings_of(family, p["wordings"]))
            r = score_prompt_pairs(lm, pps, token_budget=p["token_budget"],
                                   batch_size=p["batch_size"])
            m, g, scores = r.metrics, r.groups, r.scores
            values = [c for c in m.columns if c not in ("item", "wording", "order")]
            for (wording, order), mm in m.groupby(["wording", "order"], sort=False):
                measures.append(long_measures(sub.iloc[mm["item"].to_numpy()], self.name,
                                              {c: mm[c] for c in values}, wording=wording,
                                              order=order))
            ids = sub[["task", "lang", "pair_id"]]
            groups.append(pd.concat([ids.iloc[g["item"].to_numpy()].reset_index(drop=True),
                                     g.drop(columns="item").reset_index(drop=True)], axis=1))
            for pp in pps:
                for prompt, text in (("correct", pp.correct), ("incorrect", pp.incorrect)):
                    s = scores[text]
                    tokens.append(pd.DataFrame({
                        "task": sub["task"].iat[pp.item], "lang": sub["lang"].iat[pp.item],
                        "pair_id": sub["pair_id"].iat[pp.item], "wording": pp.wording,
                        "order": pp.order, "prompt": prompt,
                        "position": np.arange(len(s.logprobs)), "token_id": s.token_ids,
                        "token": s.tokens, "start": s.offsets[:, 0], "end": s.offsets[:, 1],
                        "logprob": s.logprobs}))
        return (pd.concat(measures, ignore_index=True),
                {"ppl_groups": pd.concat(groups, ignore_index=True),
                 "ppl_tokens": pd.concat(tokens, ignore_index=True)})
