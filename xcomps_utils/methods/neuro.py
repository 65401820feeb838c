"""*Neuro*: what the hidden states know (the probing method of XCOMPS, He et al., 2025).

For each sentence, the hidden state of its last token is read at every layer:
the embedding output plus the output of each of the ``L`` blocks, ``L + 1`` states, with the last
one *after* the final normalisation (transformers' ``output_hidden_states`` convention; tested by
checking that the LM head applied to it gives the model's logits). Forward hooks keep only the last
token's state of each layer. :func:`xcomps_utils.runs.execute.run` extracts one shard of sentences at a
time and the results store writes each shard's states to a file of its own, so memory stays
bounded by one shard whatever the number of sentences, and an interrupted run resumes from its
finished shards (:mod:`xcomps_utils.runs.store`).

The probes trained on these states, and the protocol that keeps their scores honest
(folds that keep items whole and concepts apart, a layer chosen by nested cross-validation, a
label-permutation null and the embedding layer as baselines), are in :mod:`xcomps_utils.methods.probing`.
"""

from __future__ import annotations


import numpy as np
import torch
from tqdm.auto import tqdm

from ..lm.encoding import check_texts, encode, length_batches, resolve_token_budget

__all__ = ["last_token_states"]


@torch.inference_mode()
def last_token_states(lm, texts: list[str], batch_size: int | None = None,
                      token_budget: int | str | None = "auto",
                      progress: bool | str = False) -> np.ndarray:
    """Last token's hidden state at every layer, for each text (BOS + text).

    The convention is transformers' ``output_hidden_states``: index 0 is the embedding output (as
    the embedding module returns it, so Gemma's scaling included), index ``k`` (1 to ``L - 1``)
    the output of decoder block ``k - 1``, index ``L`` the output of the final norm (the last
    block's output is not kept: the final norm of it is). Texts are batched by length as in
    :func:`xcomps_utils.lm.scoring.token_scores` (``batch_size``, ``token_budget``): nothing is
    padded, so a text's states do not depend on the batch it ran in.

    Memory: forward hooks on the embedding module, the blocks and the final norm *copy* the last
    position of each layer's ``[B, length, H]`` output into one ``[B, L + 1, H]`` float32 buffer
    on the model's device (a view such as ``h[:, -1]`` would keep every layer's whole output
    alive until the batch ends: ``L x B x length x H`` values, about 30 GB for Llama-3.1-8B at
    an H200's token budget). What the hooks hold is therefore ``(L + 1) x H x 4`` bytes per
    text, independent of the texts' length, and the automatic token budget counts it
    (:func:`xcomps_utils.lm.encoding.default_token_budget`, ``held_per_text``). Beyond one batch's
    forward pass, memory is the ``[N, L + 1, H]`` float32 result; for runs too large for
    memory, :func:`xcomps_utils.runs.execute.run` extracts one shard of pairs at a time and the
    results store keeps each shard's states in its own file (and resumes from them).
    Measured: ``benchmarks/neuro_memory.py``.

    Args:
        texts: a list of ``N`` non-empty strings.
        progress: show a tqdm bar (a string is used as its description).

    Returns:
        ``[N, L + 1, H]`` float32 array, input order.

    Raises:
        TypeError: a bare string instead of a list.
        ValueError: empty text.
        TypeError: the model has no decoder with ``layers`` and ``norm`` to hook.
        FloatingPointError: a non-finite state.
    """
    encoded = encode(lm.tokenizer, check_texts(texts), "bos")
    decoder, n_layers = lm.model.get_decoder(), lm.model.config.num_hidden_layers
    if not (hasattr(decoder, "layers") and hasattr(decoder, "norm")):
        raise TypeError(f"{type(decoder).__name__} has no .layers and .norm: cannot hook its "
                        f"hidden states")
    hidden = lm.model.config.hidden_size
    out = np.empty((len(encoded), n_layers + 1, hidden), dtype=np.float32)
    todo = np.arange(len(encoded))
    token_budget = resolve_token_budget(lm, token_budget,
                                        held_per_text=(n_layers + 1) * hidden * 4)
    buffer: list[torch.Tensor] = []  # [B, L + 1, H] float32 of the running batch
    seen = np.zeros(n_layers + 1, dtype=bool)

    def keep(k):
        def hook(module, args, output):
            h = output[0] if isinstance(output, tuple) else output
            buffer[0][:, k].copy_(h[:, -1])  # a copy: the [B, T, H] output can be freed
            seen[k] = True
        return hook

    modules = [lm.model.get_input_embeddings(), *decoder.layers[:n_layers - 1], decoder.norm]
    handles = [m.register_forward_hook(keep(k)) for k, m in enumerate(modules)]
    bar = tqdm(total=len(encoded), unit="text", disable=not progress,
               desc=progress if isinstance(progress, str) else "hidden states")
    try:
        for batch in length_batches([len(encoded[i].ids) for i in todo], batch_size, token_budget):
            batch = todo[batch]  # texts of one length: no padding
            buffer[:] = [torch.empty((len(batch), n_layers + 1, hidden), dtype=torch.float32,
                                     device=lm.device)]
            seen[:] = False
            decoder(input_ids=torch.tensor([encoded[i].ids for i in batch], device=lm.device),
                    use_cache=False)
            if not seen.all():
                raise TypeError(f"{type(decoder).__name__} did not call its embedding, every "
                                f"block and its norm: cannot hook its hidden states")
            states = buffer.pop().cpu().numpy()
            if not np.isfinite(states).all():
                raise FloatingPointError(f"non-finite hidden state in texts {batch[:5]}...")
            out[batch] = states
            bar.update(len(batch))
    finally:
        for h in handles:
            h.remove()
        buffer.clear()
        bar.close()
    return out
