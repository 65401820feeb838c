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

How (issue 5, "scoring near the hardware limit"):

- Texts are batched by length, longest first, up to a token budget (by default from the device's
  free memory, :func:`default_token_budget`), and returned in input order. A batch holds texts of
  one length only, so nothing is padded (see :func:`xcomps_utils.lm.encoding.length_batches` for
  why this matters).
- The LM head is applied only at scored positions, in float32 whatever the model's dtype, and the
  log-softmax is taken a chunk of positions at a time (:data:`LOGIT_CHUNK_ELEMENTS`): no
  ``[batch, length, vocabulary]`` tensor, and no logits rounded to bfloat16.
- Texts sharing a prefix (a prompt's instruction; a Meta prompt scored with two answers) are
  grouped (:func:`prefix_groups`); the prefix runs once and its key/value cache is reused.

Resuming an interrupted run is the results store's job (:mod:`xcomps_utils.runs.store`), one finished
shard of pairs at a time; this module only computes.

In float32 on a CPU the results equal a one-text-at-a-time forward pass (float64 log-softmax)
bit for bit whatever the batch size and thread count, since importing the package pins MKL's
reproducible mode (:data:`xcomps_utils.MKL_CBWR`; :func:`xcomps_utils.lm.precision.mkl_mode`):
tested on real batch shapes (``tests/lm/test_batch_invariance.py``). Without it MKL rounds a row of
a product differently for other numbers of rows, and a model with massive activations (SmolLM2)
amplifies that to 6.5e-3 nats at one token (issue 41); scoring then warns once. With prefix
sharing the results are within 1e-4 per text. The gap to float64 is the model's arithmetic,
measured per model in :data:`xcomps_utils.lm.precision.FLOAT32_GAP_BY_MODEL`.
A non-finite log-probability raises instead of reaching a result. In bfloat16 the model body
rounds: how far such results can be trusted is measured in :mod:`xcomps_utils.lm.precision`.
"""

from __future__ import annotations

import inspect
import warnings
import weakref

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from .encoding import (BOS_POLICIES, Encoded, check_texts, context_token, default_token_budget,
                       encode, length_batches, resolve_token_budget)
from ..declare import BatchSize, check
from ..errors import InputError, NumericalError
from .models import LanguageModel
from .precision import MKL_CBWR, cpu_vendor, mkl_declined, mkl_mode
from .token_scores import token_table, TokenScores

__all__ = ["BOS_POLICIES", "TokenScores", "token_scores", "continuation_scores", "prefix_groups",
           "score_encoded", "sequence_scores", "token_table", "default_token_budget",
           "head_tolerance"]

#: Logits exist for at most this many (position x vocabulary) elements at a time.
LOGIT_CHUNK_ELEMENTS = 2 ** 23

#: On a CPU the LM head runs on blocks of this many vocabulary rows (:func:`_blocked_logprobs`)
CPU_VOCAB_BLOCK = 1024
#: ... for up to this many positions at once, gathered over forward passes (:func:`score_encoded`).
CPU_HEAD_POSITIONS = 2048


_FLOAT32_HEADS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _float32_weight(head: torch.nn.Module) -> torch.Tensor:
    """A float32 copy of a half-precision LM head's weight, made once per model (and again if
    the weight is replaced or moved)."""
    w = head.weight
    key = (w.data_ptr(), w.dtype, w.device, w._version)
    cached = _FLOAT32_HEADS.get(head)
    if cached is None or cached[0] != key:
        cached = (key, w.detach().float())
        _FLOAT32_HEADS[head] = cached
    return cached[1]


def _head(lm: LanguageModel, hidden: torch.Tensor) -> torch.Tensor:
    """``[n, V]`` float32 logits from ``[n, H]`` final hidden states: the LM head with the
    model's final logit soft-capping, computed in float32 whatever the model's dtype.

    A half-precision model's hidden states and head weight are exact in float32, so the logits
    are their float32 product: no rounding of the logits to bfloat16 (about 0.06 nats near a
    logit of 16), and a bfloat16 run's error comes from the model body alone. On CUDA the
    product runs on the half-precision tensor cores with float32 output
    (``torch.mm(..., out_dtype=torch.float32)``); elsewhere on a float32 copy of the weight
    (made once per model). Only scored positions reach the head, so this is cheap."""
    head = lm.model.get_output_embeddings()
    w = head.weight
    x = hidden.reshape(-1, hidden.shape[-1])
    if w.dtype == torch.float32:
        logits = head(x.float())  # the module itself (its hooks, any bias)
    else:
        logits = None
        if x.is_cuda and x.dtype == w.dtype:
            try:
                logits = torch.mm(x, w.t(), out_dtype=torch.float32)
            except (RuntimeError, TypeError, NotImplementedError):
                logits = None
        if logits is None:
            logits = x.float() @ _float32_weight(head).t()
        if getattr(head, "bias", None) is not None:
            logits = logits + head.bias.float()
    cap = getattr(lm.model.config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits.reshape(*hidden.shape[:-1], -1)


def head_tolerance(dtype: torch.dtype) -> float:
    """Relative and absolute tolerance at which :func:`_head` must reproduce a model's own
    logits: ``1e-4`` in float32 (the two differ by float32 rounding, ~1e-6), two units in the
    last place of a half-precision dtype (``2 x eps``: 0.0156 for bfloat16, 0.002 for float16),
    since the model's own logits are rounded to its dtype and ours are not."""
    return max(1e-4, 2 * torch.finfo(dtype).eps) if dtype.is_floating_point else 1e-4


def _head_matches(lm: LanguageModel) -> bool:
    """Does base model + :func:`_head` reproduce the model's own logits (within
    :func:`head_tolerance` of its dtype)? Checked once per model. A model with other
    post-processing of its logits (e.g. Granite's ``logits_scaling``) falls back to the full
    forward pass, with no prefix sharing and logits in the model's dtype, and a
    ``UserWarning`` naming the model says so."""
    if lm.fast_head is None:
        ids = torch.tensor([[context_token(lm.tokenizer)] +
                            lm.tokenizer("The cat sat on the mat.", add_special_tokens=False)["input_ids"]],
                           device=lm.device)
        tol = head_tolerance(lm.model.dtype)
        try:
            with torch.inference_mode():
                full = lm.model(input_ids=ids, use_cache=False).logits[0].float()
                hidden = lm.model.get_decoder()(input_ids=ids, use_cache=False).last_hidden_state[0]
                fast = _head(lm, hidden)
            lm.fast_head = bool(torch.allclose(fast, full, atol=tol, rtol=tol))
            why = (f"largest difference {float((fast - full).abs().max()):.3g} at a tolerance of "
                   f"{tol:.3g} for {lm.model.dtype}")
        except (AttributeError, TypeError, NotImplementedError) as err:
            lm.fast_head = False
            why = f"{type(err).__name__}: {err}"
        if not lm.fast_head:
            warnings.warn(
                f"model {lm.name!r}: the LM head applied to its final hidden states does not "
                f"reproduce the model's own logits ({why}); scoring falls back to the full "
                f"forward pass (logits in {lm.model.dtype} at every position) without prefix "
                f"sharing: slower, and in half precision less exact", UserWarning, stacklevel=3)
    return lm.fast_head


def _blockable(lm: LanguageModel, states: torch.Tensor, hidden: bool) -> bool:
    """Can :func:`_blocked_logprobs` replace the module's own head? On a CPU, for a plain
    ``nn.Linear`` head without hooks (a hooked or custom head goes through :func:`_head`, which
    calls the module)."""
    if not hidden or states.device.type != "cpu":
        return False
    head = lm.model.get_output_embeddings()
    return (type(head) is torch.nn.Linear and not head._forward_hooks
            and not head._forward_pre_hooks)


@torch.inference_mode()
def _blocked_logprobs(lm: LanguageModel, states: torch.Tensor, tgt: torch.Tensor) -> np.ndarray:
    """:func:`_target_logprobs` on a CPU: the head's product and the normalisation a block of
    :data:`CPU_VOCAB_BLOCK` vocabulary rows at a time, for up to :data:`CPU_HEAD_POSITIONS`
    positions at once.

    Why: a chunk of all ``V`` logits for a few positions (the GPU path) streams the whole head
    weight from memory for every chunk and writes a logits tensor larger than the cache: on
    Gemma-3-270M (``V`` = 262,144, 671 MB of float32 weight) that ran at 25 GFLOP/s on this
    project's CPU, against 55-60 for ``[2,048 positions x 1,024 rows]`` blocks (2.6 MB of weight,
    8 MB of logits, both in cache; ``benchmarks/cpu_scoring.py --model gemma-3-270m``).

    Each block's logits are the float32 product (plus bias and soft-capping, as :func:`_head`);
    a block gives its maximum ``m_b`` and ``s_b = sum(exp(logits - m_b))`` in float32, and the
    target's logit is read from the block that holds it. The blocks are combined in float64:
    ``logsumexp = M + log(sum_b s_b exp(m_b - M))`` with ``M = max_b m_b``; float32 sums over
    1,024 terms round less than one sum over the vocabulary, so this is at least as exact as the
    one-chunk normalisation."""
    head = lm.model.get_output_embeddings()
    w = head.weight.detach() if head.weight.dtype == torch.float32 else _float32_weight(head)
    bias = None if head.bias is None else head.bias.detach().float()
    cap = getattr(lm.model.config, "final_logit_softcapping", None)
    vocab, blk = w.shape[0], min(CPU_VOCAB_BLOCK, w.shape[0])
    starts = list(range(0, vocab, blk))
    x_all = states.reshape(-1, states.shape[-1]).float()
    out = []
    for i in range(0, len(x_all), CPU_HEAD_POSITIONS):
        x = x_all[i:i + CPU_HEAD_POSITIONS].contiguous()
        t = tgt[i:i + CPU_HEAD_POSITIONS]
        n = len(x)
        tops = torch.empty(n, len(starts))
        sums = torch.empty(n, len(starts))
        target = torch.empty(n)
        # positions grouped by the block that holds their target
        order = torch.argsort(t // blk, stable=True)
        bounds = torch.searchsorted(t[order] // blk, torch.arange(len(starts) + 1)).tolist()
        buf = torch.empty(n, blk)
        for b, j in enumerate(starts):
            rows = min(blk, vocab - j)
            logits = buf if rows == blk else torch.empty(n, rows)
            torch.mm(x, w[j:j + rows].t(), out=logits)
            if bias is not None:
                logits.add_(bias[j:j + rows])
            if cap:
                logits.div_(cap).tanh_().mul_(cap)
            if bounds[b + 1] > bounds[b]:
                hit = order[bounds[b]:bounds[b + 1]]
                target[hit] = logits[hit, t[hit] - j]
            top = logits.amax(dim=-1, keepdim=True)
            tops[:, b] = top[:, 0]
            sums[:, b] = logits.sub_(top).exp_().sum(dim=-1)
        tops64 = tops.double()
        big = tops64.max(dim=-1, keepdim=True).values
        total = (sums.double() * (tops64 - big).exp()).sum(dim=-1)
        out.append(target.double() - big[:, 0] - total.log())
    return torch.cat(out).numpy()


@torch.inference_mode()
def _target_logprobs(lm: LanguageModel, states: torch.Tensor, targets: list[int], *,
                     hidden: bool = True) -> np.ndarray:
    """``log p(target)`` (nats) from ``[n, H]`` final hidden states (``hidden=True``: the LM head
    is applied here) or ``[n, V]`` logits, a chunk of positions at a time so that no logits
    tensor larger than :data:`LOGIT_CHUNK_ELEMENTS` is materialised. On a CPU the head runs a
    block of the vocabulary at a time instead (:func:`_blocked_logprobs`).

    Normalisation: ``logsumexp = max + log(sum(exp(logits - max)))`` with the exponentials and
    their sum in float32 (:func:`_head` gives float32 logits; half-precision logits of the
    fallback path are cast first) but ``max + log(sum)`` and the
    target's logit minus it in float64. ``torch.logsumexp`` in float32 rounds that last addition
    to float32 (1.6e-6 nats per token near logits of 20); this is within 3e-7 of a float64
    log-softmax (measured, SmolLM2) at half its cost."""
    if len(targets) == 0:
        return np.zeros(0)
    tgt = torch.tensor(targets, device=states.device)
    if _blockable(lm, states, hidden):
        return _blocked_logprobs(lm, states, tgt)
    vocab = lm.model.get_output_embeddings().weight.shape[0] if hidden else states.shape[-1]
    step = max(1, LOGIT_CHUNK_ELEMENTS // vocab)
    out = []
    for i in range(0, len(tgt), step):
        logits = (_head(lm, states[i:i + step]) if hidden else states[i:i + step]).float()
        top = logits.max(dim=-1, keepdim=True).values
        target = logits.gather(-1, tgt[i:i + step, None])[:, 0].double()
        total = logits.sub_(top).exp_().sum(dim=-1).double()
        out.append((target - top[:, 0].double() - total.log()).cpu())
    return torch.cat(out).numpy()


def _pad_id(lm: LanguageModel) -> int:
    pad = lm.tokenizer.pad_token_id
    return pad if pad is not None else context_token(lm.tokenizer)


def _gather(x: torch.Tensor, rows: list[int], cols: list[int]) -> torch.Tensor:
    return x[torch.tensor(rows, dtype=torch.long, device=x.device),
             torch.tensor(cols, dtype=torch.long, device=x.device)]


def _cache_kwarg(decoder) -> str:
    """transformers >= 5.2x names the key/value cache argument ``cache``; before, ``past_key_values``."""
    return "cache" if "cache" in inspect.signature(decoder.forward).parameters else "past_key_values"


def _scored_positions(items: list[Encoded]):
    """``rows, cols, targets, counts`` of a batch: token ``t`` is predicted at position ``t - 1``."""
    rows, cols, targets, counts = [], [], [], []
    for b, e in enumerate(items):
        ts = range(e.n_context, len(e.ids))
        rows += [b] * len(ts)
        cols += [t - 1 for t in ts]
        targets += [e.ids[t] for t in ts]
        counts.append(len(ts))
    return rows, cols, targets, counts


@torch.inference_mode()
def _batch_states(lm: LanguageModel, items: list[Encoded]):
    """One forward pass of the decoder over whole texts of one length (no padding, no attention
    mask): ``([n, H] final hidden states at the scored positions, their n targets, scored
    tokens per item)``, for :func:`_target_logprobs` to finish."""
    rows, cols, targets, counts = _scored_positions(items)
    if not targets:
        return None, targets, counts
    hidden = lm.model.get_decoder()(input_ids=torch.tensor([e.ids for e in items], device=lm.device),
                                    use_cache=False).last_hidden_state
    return _gather(hidden, rows, cols), targets, counts


@torch.inference_mode()
def _score_batch(lm: LanguageModel, items: list[Encoded]) -> list[np.ndarray]:
    """One forward pass over whole texts: ``[n_scored]`` log-probabilities per item."""
    if _head_matches(lm):  # the LM head only at scored positions
        states, targets, counts = _batch_states(lm, items)
        lp = _target_logprobs(lm, states, targets) if targets else np.zeros(0)
    else:
        rows, cols, targets, counts = _scored_positions(items)
        if not targets:
            return [np.zeros(0) for _ in items]
        logits = lm.model(input_ids=torch.tensor([e.ids for e in items], device=lm.device),
                          use_cache=False).logits
        lp = _target_logprobs(lm, _gather(logits, rows, cols), targets, hidden=False)
    return np.split(lp, np.cumsum(counts)[:-1])


# --- shared prefixes -----------------------------------------------------------------------------

def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def prefix_groups(seqs: list[list[int]], min_prefix: int = 8) -> list[tuple[int, list[int]]]:
    """Group token sequences that share a prefix, so that the prefix is computed once.

    Sequences are sorted; neighbours join a group while its common prefix ``P`` (capped at each
    member's length - 1, so every member keeps a token of its own) stays ``>= min_prefix`` and
    the tokens saved, ``(members - 1) x P``, grow. A group of one has ``P = 0``.

    Args:
        seqs: ``N`` token-id lists.

    Returns:
        ``[(P, member indices), ...]`` covering each index once.
    """
    groups: list[tuple[int, list[int]]] = []
    members: list[int] = []
    p = 0
    for i in sorted(range(len(seqs)), key=lambda i: seqs[i]):
        if members:
            limit = p if len(members) > 1 else len(seqs[members[0]]) - 1
            q = min(limit, _common_prefix(seqs[members[-1]], seqs[i]), len(seqs[i]) - 1)
            if q >= min_prefix and len(members) * q > (len(members) - 1) * p:
                members.append(i)
                p = q
                continue
            groups.append((p, members))
        members, p = [i], 0
    if members:
        groups.append((p, members))
    return groups


@torch.inference_mode()
def _score_shared(lm: LanguageModel, encoded: list[Encoded],
                  groups: list[tuple[int, list[int]]], token_budget: int):
    """Score the members of prefix groups whose prefixes have one length ``P``. Stage 1 runs the
    prefixes once (one row per group) and keeps their key/value cache; stage 2 runs the members'
    remaining tokens, longest first and right-padded, on copies of their groups' cache rows
    (positions continue from ``P``). Prefix tokens that members score are scored once per group.

    Yields ``(indices, [n_scored] log-probabilities per index)`` per stage-2 batch.
    """
    from transformers import DynamicCache

    device, cfg, decoder = lm.device, lm.model.config, lm.model.get_decoder()
    kw = _cache_kwarg(decoder)
    width = groups[0][0]
    cache = DynamicCache(config=cfg)
    hidden = decoder(input_ids=torch.tensor([encoded[m[0]].ids[:width] for _, m in groups],
                                            device=device),
                     use_cache=True, **{kw: cache}).last_hidden_state
    rows, cols, targets, first = [], [], [], []
    for g, (p, members) in enumerate(groups):
        first.append((len(targets), min(encoded[i].n_context for i in members)))
        ts = range(first[-1][1], p)
        rows += [g] * len(ts)
        cols += [t - 1 for t in ts]
        targets += [encoded[members[0]].ids[t] for t in ts]
    prefix_lp = _target_logprobs(lm, _gather(hidden, rows, cols), targets)
    last = _gather(hidden, list(range(len(groups))), [p - 1 for p, _ in groups])  # [G, H]
    past_kv = [(layer.keys, layer.values) for layer in cache.layers]
    del hidden, cache
    group_of = {i: g for g, (_, members) in enumerate(groups) for i in members}
    members = sorted(group_of, key=lambda i: -len(encoded[i].ids))
    # Stage 2 pads on the right without an attention mask: in a causal model no real token
    # attends to a later (padding) one. Like any forward pass on a cache, it rounds differently
    # from scoring the full text alone: within 1e-4 nats per text (tested).
    taken = 0
    while taken < len(members):
        longest = len(encoded[members[taken]].ids)
        batch = members[taken:taken + max(1, token_budget // longest)]
        taken += len(batch)
        gidx = [group_of[i] for i in batch]
        plen = [width] * len(batch)
        g_t = torch.tensor(gidx, device=device)
        suffix = torch.full((len(batch), longest - width), _pad_id(lm), dtype=torch.long)
        for b, i in enumerate(batch):
            suffix[b, :len(encoded[i].ids) - width] = torch.tensor(encoded[i].ids[width:])
        out = decoder(input_ids=suffix.to(device), use_cache=True,
                      **{kw: DynamicCache([(k[g_t], v[g_t]) for k, v in past_kv],
                                          config=cfg)}).last_hidden_state
        rows, cols, targets, counts = [], [], [], []
        for b, (i, p) in enumerate(zip(batch, plen)):
            ts = range(max(encoded[i].n_context, p + 1), len(encoded[i].ids))
            rows += [b] * len(ts)
            cols += [t - p - 1 for t in ts]  # token P + j is predicted at suffix position j - 1
            targets += [encoded[i].ids[t] for t in ts]
            counts.append(len(ts))
        # one head call for the members' own tokens and the token each predicts from the prefix
        lp = _target_logprobs(lm, torch.cat([_gather(out, rows, cols), last[g_t]]),
                              targets + [encoded[i].ids[p] for i, p in zip(batch, plen)])
        rest = np.split(lp[:len(targets)], np.cumsum(counts)[:-1])
        at_p = lp[len(targets):]
        results = []
        for b, (i, g, p) in enumerate(zip(batch, gidx, plen)):
            start, lo = first[g]
            c = encoded[i].n_context
            own = prefix_lp[start + c - lo:start + p - lo] if c < p else np.zeros(0)
            results.append(np.concatenate([own, at_p[b:b + 1] if c <= p else np.zeros(0),
                                           rest[b]]))
        yield batch, results


def _chunks_of_groups(groups, token_budget: int):
    """Groups in chunks of one prefix length (longest first) that fit the token budget."""
    order = sorted(groups, key=lambda g: -g[0])
    for batch in length_batches([p for p, _ in order], None, token_budget):
        yield [order[j] for j in batch]


_SCORING_ARGS = """
        batch_size: at most this many texts per forward pass and per LM-head call (``None``:
            no cap).
        token_budget: at most this many tokens per forward pass
            (``"auto"``: :func:`default_token_budget`; ``None``: no cap).
        shared_prefix: compute a prefix shared by several texts (an instruction, a Meta prompt
            scored with two answers) once and reuse its key/value cache (:func:`prefix_groups`);
            equal to scoring every text in full within ``FLOAT32_LENGTH_TOLERANCE`` (5e-5) nats
            per token in float32: the prefix runs as a sequence of its own length, and attention
            sums a row in an order that depends on it (1.5e-5 measured on SmolLM2, tested).
        progress: show a tqdm bar (a string is used as its description).
"""


def token_scores(lm: LanguageModel, texts: list[str], *, bos_policy: str = "bos",
                 batch_size: int | None = None, token_budget: int | str | None = "auto",
                 shared_prefix: bool = True,
                 progress: bool | str = False) -> list[TokenScores]:
    """Per-token log-probabilities (nats) of each text, in input order.

    Args:
        lm: from :func:`xcomps_utils.lm.models.load_model`.
        texts: a list of ``N`` non-empty strings (``N = 0`` gives ``[]``).
        bos_policy: first-token convention, one of :data:`BOS_POLICIES`.{args}
    Returns:
        ``N`` :class:`TokenScores`.

    Raises:
        ParameterTypeError: (a ``TypeError``) a bare string instead of a list of texts.
        ParameterError: an empty text, an unknown policy, a batch size or token budget below 1.
        InputError: a tokenizer without BOS/EOS.
        NumericalError: (a ``FloatingPointError``) a log-probability is NaN or infinite (names
            the text and token).
    """
    texts = check_texts(texts)
    return score_encoded(lm, encode(lm.tokenizer, texts, bos_policy), texts=texts,
                         bos_policy=bos_policy, batch_size=batch_size, token_budget=token_budget,
                         shared_prefix=shared_prefix, progress=progress)




_WARNED_UNPINNED: list = []


def _warn_unpinned(lm: LanguageModel) -> None:
    """Warn once per process when a CPU model scores with MKL not in :data:`MKL_CBWR` mode: MKL
    was called before ``xcomps_utils`` was imported, or ``MKL_CBWR``/``XCOMPS_MKL_CBWR`` say
    otherwise (the mode in force is recorded with every run either way)."""
    if lm.device.type != "cpu" or _WARNED_UNPINNED:
        return
    mode = mkl_mode()
    if mode not in (MKL_CBWR, "no MKL"):
        _WARNED_UNPINNED.append(mode)
        if mkl_declined():
            warnings.warn(
                f"MKL declines the {MKL_CBWR!r} branch on this {cpu_vendor() or 'non-Intel'} CPU "
                f"and runs {mode!r}: batch invariance here is what tests/lm/"
                f"test_batch_invariance.py measures on this machine, and the audit holds runs "
                f"made so to the kernels' spread", UserWarning, stacklevel=3)
            return
        warnings.warn(
            f"MKL's reproducible mode is {mode!r}, not {MKL_CBWR!r} (MKL computed before "
            f"xcomps_utils was imported, or MKL_CBWR/XCOMPS_MKL_CBWR set otherwise): batched "
            f"float32 log-probabilities may differ from one-at-a-time ones by more than 1e-5 "
            f"nats per token (6.5e-3 measured on SmolLM2); import xcomps_utils before any torch "
            f"computation, or start Python with MKL_CBWR={MKL_CBWR}", UserWarning, stacklevel=3)


def score_encoded(lm: LanguageModel, encoded: list[Encoded], *, texts: list[str] | None = None,
                  bos_policy: str = "bos", batch_size: int | None = None,
                  token_budget: int | str | None = "auto", shared_prefix: bool = True,
                  progress: bool | str = False) -> list[TokenScores]:
    """Log-probabilities (nats) of already encoded items (:func:`xcomps_utils.lm.encoding.encode`),
    the engine under :func:`token_scores` and :func:`continuation_scores`; the benchmarks call it
    on synthetic token ids. ``texts`` (default: decoded ids) only label the results.

    Raises:
        ParameterError, InputError, NumericalError: as :func:`token_scores`.
    """
    if texts is None:
        texts = [lm.tokenizer.decode(e.ids[e.n_context:]) for e in encoded]
    _warn_unpinned(lm)
    batch_size = check(BatchSize, batch_size, "batch_size")
    token_budget = resolve_token_budget(lm, token_budget)
    logprobs: dict[int, np.ndarray] = {}
    todo = list(range(len(texts)))
    bar = tqdm(total=len(texts), unit="text", disable=not progress,
               desc=progress if isinstance(progress, str) else "scoring")

    def finish(indices, results):
        for i, lp in zip(indices, results):
            logprobs[i] = lp
        bar.update(len(indices))

    groups = [(0, [i]) for i in todo]
    window = lm.model.config.get_text_config(decoder=True).__dict__.get("sliding_window")
    longest = max((len(encoded[i].ids) for i in todo), default=0)
    if shared_prefix and todo and _head_matches(lm) and (not window or 2 * longest <= window):
        groups = [(p, [todo[j] for j in m])
                  for p, m in prefix_groups([encoded[i].ids for i in todo])]
    single = [m[0] for p, m in groups if p == 0]
    shared = [g for g in groups if g[0] > 0]
    try:
        for chunk in _chunks_of_groups(shared, token_budget or 4096):
            for indices, results in _score_shared(lm, encoded, chunk, token_budget or 4096):
                finish(indices, results)
        # On a CPU the hidden states of several forward passes wait for one head call of up to
        # CPU_HEAD_POSITIONS positions and at most batch_size texts (the head weight is read once
        # for all of them; on a large vocabulary the head costs more than the layers). Elsewhere
        # each batch is finished alone. batch_size=1 thus keeps the head to one text, as a plain
        # loop has it: with 2 threads MKL rounds a float32 product differently for other numbers
        # of rows (up to 5e-5 in SmolLM2's logits, measured), enough to cross the 1e-5 bound.
        gather = CPU_HEAD_POSITIONS if lm.device.type == "cpu" and _head_matches(lm) else 0
        cap = batch_size or len(single) or 1
        queue: list = []

        def flush():
            if queue:
                states = torch.cat([q[1] for q in queue])
                lp = _target_logprobs(lm, states, [t for q in queue for t in q[2]])
                counts = [c for q in queue for c in q[3]]
                finish([i for q in queue for i in q[0]], np.split(lp, np.cumsum(counts)[:-1]))
                queue.clear()

        for batch in length_batches([len(encoded[i].ids) for i in single], batch_size, token_budget):
            indices = [single[j] for j in batch]
            items = [encoded[i] for i in indices]
            if not gather:
                finish(indices, _score_batch(lm, items))
                continue
            states, targets, counts = _batch_states(lm, items)
            if not targets:
                finish(indices, [np.zeros(0) for _ in items])
                continue
            if sum(len(q[0]) for q in queue) + len(indices) > cap:
                flush()
            queue.append((indices, states, targets, counts))
            if sum(len(q[2]) for q in queue) >= gather or sum(len(q[0]) for q in queue) >= cap:
                flush()
        flush()
    finally:
        bar.close()
    out = []
    for i, (text, e) in enumerate(zip(texts, encoded)):
        ids, lp = e.ids[e.n_context:], logprobs[i]
        if not np.isfinite(lp).all():
            j = int(np.flatnonzero(~np.isfinite(lp))[0])
            raise NumericalError(
                f"text #{i} {text!r}: log-probability {lp[j]} at token {j} "
                f"({lm.tokenizer.convert_ids_to_tokens(ids[j])!r}); model {lm.name}, {lm.dtype}, "
                f"weights {getattr(lm, 'weights', None) or 'unknown'} (damaged weights give NaN "
                f"from the first token on: check a converted cache with "
                f"xcomps_utils.lm.models.verify_converted(folder, full=True))")
        out.append(TokenScores(text, np.asarray(ids, dtype=np.int64),
                               lm.tokenizer.convert_ids_to_tokens(ids), e.offsets, lp,
                               bos_policy, e.ids[:e.n_context]))
    return out


def continuation_scores(lm: LanguageModel, contexts: list[str], continuations: list[str], *,
                        batch_size: int | None = None, token_budget: int | str | None = "auto",
                        shared_prefix: bool = True,
                        progress: bool | str = False) -> list[TokenScores]:
    """Log-probabilities (nats) of each continuation given BOS + its context, in input order.

    The answer tokens are taken from encoding ``context + continuation`` *together* (never the
    continuation alone, which tokenizes differently at its start): every token whose character
    span ends after ``len(context)`` belongs to the continuation. A token that straddles the
    boundary (a prompt ending without a space, e.g. ``"答："`` + ``"猫"``) is therefore scored as
    part of the answer, so no answer character is ever used as context. ``TokenScores.text`` is
    the continuation and its offsets point into it. Used by the *Meta* method, where the two
    answers to one prompt share the prompt: with ``shared_prefix`` it is computed once.

    Args:
        contexts, continuations: ``N`` non-empty strings each.{args}
    Raises:
        InputError: lengths differ, an empty context or continuation, or a continuation that
            adds no token.
        NumericalError: as :func:`token_scores`.
    """
    contexts = check_texts(contexts, "contexts")
    continuations = check_texts(continuations, "continuations")
    if len(contexts) != len(continuations):
        raise InputError(f"{len(contexts)} contexts but {len(continuations)} continuations; "
                         f"give one continuation per context")
    tok = lm.tokenizer
    full = [c + a for c, a in zip(contexts, continuations)]
    for i, (c, a) in enumerate(zip(contexts, continuations)):
        if not c or not a:
            raise InputError(f"pair #{i}: empty context or continuation ({c!r}, {a!r})")
    enc = tok(full, add_special_tokens=False, return_offsets_mapping=True)
    encoded = []
    for i, (c, ids, offs) in enumerate(zip(contexts, enc["input_ids"], enc["offset_mapping"])):
        offs = np.asarray(offs, dtype=np.int64).reshape(-1, 2)
        answer = np.flatnonzero(offs[:, 1] > len(c))
        if len(answer) == 0:
            raise InputError(f"pair #{i}: continuation {continuations[i]!r} adds no token")
        k = int(answer[0])
        encoded.append(Encoded([context_token(tok)] + list(ids), 1 + k,
                                np.clip(offs[k:] - len(c), 0, None)))
    return score_encoded(lm, encoded, texts=continuations, bos_policy="bos",
                         batch_size=batch_size, token_budget=token_budget,
                         shared_prefix=shared_prefix, progress=progress)


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


for _f in (token_scores, continuation_scores):
    _f.__doc__ = _f.__doc__.replace("{args}", _SCORING_ARGS.rstrip() + "\n")
