"""Token and sequence log-probabilities under a causal LM (all values in nats).

The log-probability of a text ``w_1 .. w_n`` is ``sum_t log p(w_t | context, w_<t)``, where the
*context* depends on the first-token convention (``bos_policy``), recorded with every result:

``bos``         prepend the tokenizer's BOS token (its EOS if it has no BOS, as GPT-2 and Qwen
                do); every token of the text is scored. Exactly one BOS: the text is encoded
                without special tokens. A one-token text gets a finite score.
``drop_first``  no BOS; the first token is context only and is not scored (minicons'
                ``IncrementalLMScorer`` default). A one-token text scores 0 with ``n_scored=0``.
``lm_eval``     BOS (EOS fallback) then ``" " + text``: lm-evaluation-harness' loglikelihood of a
                BLiMP sentence (empty context, target delimiter ``" "``). Offsets still point into
                the original text (the leading space is not part of any token's span).

Texts are batched longest first (either a fixed number of texts or a token budget), padded on the
right or left with explicit ``position_ids``, and returned in input order. In float32 the results
equal a one-text-at-a-time forward pass within 1e-5 whatever the batch size or padding side
(tested). Float32 logits are normalised (log-softmax) in float64; half-precision ones in float32.
A non-finite log-probability raises instead of reaching a result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from .models import LanguageModel

__all__ = ["BOS_POLICIES", "TokenScores", "token_scores", "continuation_scores",
           "sequence_scores", "score_pairs", "token_table"]

BOS_POLICIES = {
    "bos": "BOS (EOS if none) prepended; every token of the text scored",
    "drop_first": "no BOS; first token is context only (minicons default)",
    "lm_eval": "BOS (EOS if none) then ' ' + text; every token scored (lm-eval default)",
}


@dataclass
class TokenScores:
    """Scored tokens of one text.

    Attributes:
        text: the text as given.
        token_ids: ``[n]`` ids of the scored tokens.
        tokens: ``n`` token strings as the tokenizer spells them.
        offsets: ``[n, 2]`` character ``[start, end)`` of each token in ``text``.
        logprobs: ``[n]`` float64 log-probabilities in nats (``surprisal = -logprobs``).
        bos_policy: the first-token convention.
        context_ids: ids that preceded the scored tokens (BOS, or the unscored first token).
    """

    text: str
    token_ids: np.ndarray
    tokens: list[str]
    offsets: np.ndarray
    logprobs: np.ndarray
    bos_policy: str
    context_ids: list[int] = field(default_factory=list)

    @property
    def surprisals(self) -> np.ndarray:
        """``[n]`` surprisal ``-log p`` in nats."""
        return -self.logprobs

    @property
    def total(self) -> float:
        """Sentence log-probability (sum over scored tokens), nats."""
        return float(self.logprobs.sum())

    @property
    def mean(self) -> float:
        """Mean log-probability per scored token, nats (0.0 when nothing is scored)."""
        return float(self.logprobs.mean()) if len(self.logprobs) else 0.0


@dataclass
class _Encoded:
    ids: list[int]        # full input: context + text tokens
    n_context: int        # leading ids that are not scored
    offsets: np.ndarray   # [n_scored, 2]


def _context_token(tokenizer) -> int:
    tid = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    if tid is None:
        raise ValueError("the tokenizer has neither a BOS nor an EOS token; use bos_policy='drop_first'")
    return tid


def _encode(tokenizer, texts: list[str], bos_policy: str) -> list[_Encoded]:
    if bos_policy not in BOS_POLICIES:
        raise ValueError(f"unknown bos_policy {bos_policy!r}; use one of {list(BOS_POLICIES)}")
    for i, t in enumerate(texts):
        if not isinstance(t, str) or not t:
            raise ValueError(f"text #{i} is empty or not a string: {t!r}")
    shift = 1 if bos_policy == "lm_eval" else 0
    enc = tokenizer([" " + t if shift else t for t in texts], add_special_tokens=False,
                    return_offsets_mapping=True)
    out = []
    for i, (ids, offs) in enumerate(zip(enc["input_ids"], enc["offset_mapping"])):
        if not ids:
            raise ValueError(f"text #{i} {texts[i]!r} encodes to no token")
        offs = np.clip(np.asarray(offs, dtype=np.int64).reshape(-1, 2) - shift, 0, None)
        if bos_policy == "drop_first":
            out.append(_Encoded(list(ids), 1, offs[1:]))
        else:
            out.append(_Encoded([_context_token(tokenizer)] + list(ids), 1, offs))
    return out


def _batches(lengths: list[int], batch_size: int, token_budget: int | None) -> list[list[int]]:
    """Indices grouped into batches, longest first; a token budget caps ``n * max_len``."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches, current = [], []
    for i in order:
        longest = lengths[current[0]] if current else lengths[i]
        full = len(current) >= batch_size or (
            token_budget is not None and (len(current) + 1) * longest > token_budget)
        if current and full:
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def _head(lm: LanguageModel, hidden: torch.Tensor) -> torch.Tensor:
    """The LM head on selected hidden states, with the model's final logit soft-capping."""
    logits = lm.model.get_output_embeddings()(hidden)
    cap = getattr(lm.model.config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits


def _head_matches(lm: LanguageModel) -> bool:
    """Does base model + :func:`_head` reproduce the model's own logits? Checked once per model;
    a model with other post-processing of its logits falls back to the full forward pass."""
    if lm.fast_head is None:
        ids = torch.tensor([[_context_token(lm.tokenizer)] +
                            lm.tokenizer("The cat sat on the mat.", add_special_tokens=False)["input_ids"]],
                           device=lm.device)
        try:
            full = lm.model(input_ids=ids, use_cache=False).logits[0].float()
            hidden = lm.model.get_decoder()(input_ids=ids, use_cache=False).last_hidden_state[0]
            fast = _head(lm, hidden).float()
            lm.fast_head = bool(torch.allclose(fast, full, atol=1e-3, rtol=1e-3))
        except (AttributeError, TypeError, NotImplementedError):
            lm.fast_head = False
    return lm.fast_head


def _logits_at(lm: LanguageModel, ids, mask, position_ids, rows, cols) -> torch.Tensor:
    """Logits ``[n, vocabulary]`` at the (row, column) positions only: the LM head, often the
    largest matrix of a small multilingual model, is applied to the scored positions alone."""
    kwargs = dict(input_ids=ids, attention_mask=mask, position_ids=position_ids, use_cache=False)
    if _head_matches(lm):
        hidden = lm.model.get_decoder()(**kwargs).last_hidden_state
        return _head(lm, hidden[rows, cols])
    return lm.model(**kwargs).logits[rows, cols]


@torch.inference_mode()
def _score_batch(lm: LanguageModel, items: list[_Encoded], padding_side: str) -> list[np.ndarray]:
    device = lm.device
    pad = lm.tokenizer.pad_token_id
    if pad is None:
        pad = _context_token(lm.tokenizer)
    width = max(len(e.ids) for e in items)
    ids = torch.full((len(items), width), pad, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    starts = []
    for b, e in enumerate(items):
        start = width - len(e.ids) if padding_side == "left" else 0
        ids[b, start:start + len(e.ids)] = torch.tensor(e.ids)
        mask[b, start:start + len(e.ids)] = 1
        starts.append(start)
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    # rows predicting each scored token: position p predicts token p + 1
    rows, cols, targets, counts = [], [], [], []
    for b, (e, s) in enumerate(zip(items, starts)):
        positions = range(s + e.n_context, s + len(e.ids))
        rows += [b] * len(positions)
        cols += [p - 1 for p in positions]
        targets += [e.ids[p - s] for p in positions]
        counts.append(len(positions))
    if not rows:
        return [np.zeros(0) for _ in items]
    logits = _logits_at(lm, ids.to(device), mask.to(device), position_ids.to(device),
                        torch.tensor(rows, device=device), torch.tensor(cols, device=device))
    # float32 logits are normalised in float64: a float32 sum over a 50k-260k vocabulary is only
    # good to ~1e-5 nats per token, which would not survive summing over a sentence.
    acc = torch.float64 if logits.dtype == torch.float32 else torch.float32
    sel = logits.to(acc)
    tgt = torch.tensor(targets, device=device)
    lp = sel.gather(-1, tgt[:, None])[:, 0] - torch.logsumexp(sel, dim=-1)
    lp = lp.double().cpu().numpy()
    return np.split(lp, np.cumsum(counts)[:-1])


def token_scores(lm: LanguageModel, texts: list[str], *, bos_policy: str = "bos",
                 batch_size: int = 16, token_budget: int | None = None,
                 padding_side: str = "right", progress: bool | str = False) -> list[TokenScores]:
    """Per-token log-probabilities (nats) of each text, in input order.

    Args:
        lm: from :func:`xcomps_utils.models.load_model`.
        texts: ``N`` non-empty strings.
        bos_policy: first-token convention, one of :data:`BOS_POLICIES`.
        batch_size: at most this many texts per forward pass.
        token_budget: also cap ``texts x longest length`` per batch (``None``: no cap).
        padding_side: ``"right"`` or ``"left"``; results do not depend on it.
        progress: show a tqdm bar (a string is used as its description).

    Returns:
        ``N`` :class:`TokenScores`.

    Raises:
        ValueError: empty text, unknown policy/padding side, tokenizer without BOS/EOS.
        FloatingPointError: a log-probability is NaN or infinite (names the text and token).
    """
    texts = list(texts)
    return _score_encoded(lm, texts, _encode(lm.tokenizer, texts, bos_policy), bos_policy,
                          batch_size, token_budget, padding_side, progress)


def _score_encoded(lm, texts, encoded, bos_policy, batch_size, token_budget, padding_side,
                   progress) -> list[TokenScores]:
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    batches = _batches([len(e.ids) for e in encoded], batch_size, token_budget)
    logprobs: list[np.ndarray | None] = [None] * len(texts)
    bar = tqdm(total=len(texts), desc=progress if isinstance(progress, str) else "scoring",
               unit="text", disable=not progress)
    for batch in batches:
        for i, lp in zip(batch, _score_batch(lm, [encoded[i] for i in batch], padding_side)):
            logprobs[i] = lp
        bar.update(len(batch))
    bar.close()
    out = []
    for i, (text, e, lp) in enumerate(zip(texts, encoded, logprobs)):
        ids = e.ids[e.n_context:]
        if not np.isfinite(lp).all():
            j = int(np.flatnonzero(~np.isfinite(lp))[0])
            raise FloatingPointError(
                f"text #{i} {text!r}: log-probability {lp[j]} at token {j} "
                f"({lm.tokenizer.convert_ids_to_tokens(ids[j])!r}); model {lm.name}, {lm.dtype}")
        out.append(TokenScores(text, np.asarray(ids, dtype=np.int64),
                               lm.tokenizer.convert_ids_to_tokens(ids), e.offsets, lp,
                               bos_policy, e.ids[:e.n_context]))
    return out


def continuation_scores(lm: LanguageModel, contexts: list[str], continuations: list[str], *,
                        batch_size: int = 16, token_budget: int | None = None,
                        padding_side: str = "right", progress: bool | str = False
                        ) -> list[TokenScores]:
    """Log-probabilities (nats) of each continuation given BOS + its context, in input order.

    The answer tokens are taken from encoding ``context + continuation`` *together* (never the
    continuation alone, which tokenizes differently at its start): every token whose character
    span ends after ``len(context)`` belongs to the continuation. A token that straddles the
    boundary (a prompt ending without a space, e.g. ``"答："`` + ``"猫"``) is therefore scored as
    part of the answer, so no answer character is ever used as context. ``TokenScores.text`` is
    the continuation and its offsets point into it. Used by the *Meta* method.

    Raises:
        ValueError: lengths differ, an empty context or continuation, or a continuation that
            adds no token.
        FloatingPointError: as :func:`token_scores`.
    """
    contexts, continuations = list(contexts), list(continuations)
    if len(contexts) != len(continuations):
        raise ValueError(f"{len(contexts)} contexts but {len(continuations)} continuations")
    tok = lm.tokenizer
    full = [c + a for c, a in zip(contexts, continuations)]
    for i, (c, a) in enumerate(zip(contexts, continuations)):
        if not c or not a:
            raise ValueError(f"pair #{i}: empty context or continuation ({c!r}, {a!r})")
    enc = tok(full, add_special_tokens=False, return_offsets_mapping=True)
    encoded = []
    for i, (c, ids, offs) in enumerate(zip(contexts, enc["input_ids"], enc["offset_mapping"])):
        offs = np.asarray(offs, dtype=np.int64).reshape(-1, 2)
        answer = np.flatnonzero(offs[:, 1] > len(c))
        if len(answer) == 0:
            raise ValueError(f"pair #{i}: continuation {continuations[i]!r} adds no token")
        k = int(answer[0])
        encoded.append(_Encoded([_context_token(tok)] + list(ids), 1 + k,
                                np.clip(offs[k:] - len(c), 0, None)))
    return _score_encoded(lm, continuations, encoded, "bos", batch_size, token_budget,
                          padding_side, progress)


def sequence_scores(lm: LanguageModel, texts: list[str], **kwargs) -> pd.DataFrame:
    """Sentence log-probabilities (nats), one row per text in input order.

    Columns: ``text``, ``logprob_sum``, ``logprob_mean`` (per scored token), ``n_scored``,
    ``bos_policy``. Keyword arguments as :func:`token_scores`.
    """
    scores = token_scores(lm, texts, **kwargs)
    return pd.DataFrame({
        "text": [s.text for s in scores],
        "logprob_sum": [s.total for s in scores],
        "logprob_mean": [s.mean for s in scores],
        "n_scored": [len(s.logprobs) for s in scores],
        "bos_policy": [s.bos_policy for s in scores],
    })


def score_pairs(lm: LanguageModel, pairs: pd.DataFrame, **kwargs) -> pd.DataFrame:
    """Score both sentences of every minimal pair (the *Direct* method).

    Adds ``good_logprob``/``bad_logprob`` (sums, nats), ``good_logprob_mean``/``bad_logprob_mean``,
    ``good_n``/``bad_n`` (scored tokens), ``delta`` = good - bad (sum), ``correct`` (delta > 0) and
    ``tie`` (delta == 0, never counted correct), ``bos_policy``. Each distinct text is scored once.
    Keyword arguments as :func:`token_scores`.
    """
    texts = list(dict.fromkeys(list(pairs["good"]) + list(pairs["bad"])))
    seq = sequence_scores(lm, texts, **kwargs).set_index("text")
    out = pairs.copy()
    for side in ("good", "bad"):
        rows = seq.loc[out[side]]
        out[f"{side}_logprob"] = rows["logprob_sum"].to_numpy()
        out[f"{side}_logprob_mean"] = rows["logprob_mean"].to_numpy()
        out[f"{side}_n"] = rows["n_scored"].to_numpy()
    out["delta"] = out["good_logprob"] - out["bad_logprob"]
    out["correct"] = out["delta"] > 0
    out["tie"] = out["delta"] == 0
    out["bos_policy"] = kwargs.get("bos_policy", "bos")
    return out


def token_table(scores: list[TokenScores]) -> pd.DataFrame:
    """Long table of scored tokens: ``text_index``, ``position``, ``token_id``, ``token``,
    ``text_piece`` (the token's span of the text), ``start``, ``end``, ``logprob``, ``surprisal``
    (nats), ``bos_policy``."""
    frames = []
    for i, s in enumerate(scores):
        frames.append(pd.DataFrame({
            "text_index": i, "position": np.arange(len(s.logprobs)), "token_id": s.token_ids,
            "token": s.tokens, "text_piece": [s.text[a:b] for a, b in s.offsets],
            "start": s.offsets[:, 0], "end": s.offsets[:, 1], "logprob": s.logprobs,
            "surprisal": -s.logprobs, "bos_policy": s.bos_policy}))
    return pd.concat(frames, ignore_index=True)
