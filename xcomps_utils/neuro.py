"""*Neuro*: what the hidden states know (the probing method of XCOMPS, He et al., 2025).

For each sentence, the hidden state of its last token is read at every layer:
the embedding output plus the output of each of the ``L`` blocks, ``L + 1`` states, with the last
one *after* the final normalisation (transformers' ``output_hidden_states`` convention; tested by
checking that the LM head applied to it gives the model's logits). Forward hooks keep only the last
token's state of each layer. :func:`xcomps_utils.methods.run` extracts one shard of sentences at a
time and the results store writes each shard's states to a file of its own, so memory stays
bounded by one shard whatever the number of sentences, and an interrupted run resumes from its
finished shards (:mod:`xcomps_utils.store`).

A probe per layer (standardisation + logistic regression) is trained to tell acceptable from
unacceptable sentences, scored by F1 with 5-fold cross-validation *grouped by item*: all sentences
of one concept-property item (its acceptable sentence and every negative) sit in the same fold, so
no sentence is tested on a probe that saw it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from .encoding import check_texts, encode, length_batches, resolve_token_budget

__all__ = ["last_token_states", "probe_layers", "probe_pairs", "ProbeError"]


class ProbeError(ValueError):
    """The probe cannot be trained as asked (one class, too few examples for the folds)."""


@torch.inference_mode()
def last_token_states(lm, texts: list[str], batch_size: int | None = None,
                      token_budget: int | str | None = "auto",
                      progress: bool | str = False) -> np.ndarray:
    """Last token's hidden state at every layer, for each text (BOS + text).

    The convention is transformers' ``output_hidden_states``: index 0 is the embedding output (as
    the embedding module returns it, so Gemma's scaling included), index ``k`` (1 to ``L - 1``)
    the output of decoder block ``k - 1``, index ``L`` the output of the final norm (the last
    block's output is not kept: the final norm of it is). Forward hooks on the embedding module,
    the blocks and the final norm keep only the last token of each text; the full
    ``[B, length, H]`` states of every layer are never held. Texts are batched by length as in
    :func:`xcomps_utils.scoring.token_scores` (``batch_size``, ``token_budget``): nothing is
    padded, so a text's states do not depend on the batch it ran in.

    Memory: one batch's activations plus the ``[N, L + 1, H]`` float32 result. For runs too
    large for memory, :func:`xcomps_utils.methods.run` extracts one shard of pairs at a time and
    the results store keeps each shard's states in its own file (and resumes from them).

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
    out = np.empty((len(encoded), n_layers + 1, lm.model.config.hidden_size), dtype=np.float32)
    todo = np.arange(len(encoded))
    token_budget = resolve_token_budget(lm, token_budget)
    picked = [None] * (n_layers + 1)

    def keep(k):
        def hook(module, args, output):
            h = output[0] if isinstance(output, tuple) else output
            picked[k] = h[:, -1]
        return hook

    modules = [lm.model.get_input_embeddings(), *decoder.layers[:n_layers - 1], decoder.norm]
    handles = [m.register_forward_hook(keep(k)) for k, m in enumerate(modules)]
    bar = tqdm(total=len(encoded), unit="text", disable=not progress,
               desc=progress if isinstance(progress, str) else "hidden states")
    try:
        for batch in length_batches([len(encoded[i].ids) for i in todo], batch_size, token_budget):
            batch = todo[batch]  # texts of one length: no padding
            picked[:] = [None] * len(picked)
            decoder(input_ids=torch.tensor([encoded[i].ids for i in batch], device=lm.device),
                    use_cache=False)
            if any(p is None for p in picked):
                raise TypeError(f"{type(decoder).__name__} did not call its embedding, every "
                                f"block and its norm: cannot hook its hidden states")
            states = torch.stack(picked, dim=1).float().cpu().numpy()
            if not np.isfinite(states).all():
                raise FloatingPointError(f"non-finite hidden state in texts {batch[:5]}...")
            out[batch] = states
            bar.update(len(batch))
    finally:
        for h in handles:
            h.remove()
        bar.close()
    return out


def probe_layers(states: np.ndarray, labels, groups, n_splits: int = 5, seed: int = 0,
                 max_iter: int = 1000) -> pd.DataFrame:
    """Cross-validated F1 of a logistic-regression probe at every layer.

    Args:
        states: ``[N, L + 1, H]`` from :func:`last_token_states`.
        labels: ``N`` 0/1 labels (1: acceptable).
        groups: ``N`` group ids; a group never spans two folds (``StratifiedGroupKFold``).

    Returns:
        one row per layer: ``layer``, ``f1`` (mean over folds), ``f1_std``,
        ``convergence_warnings`` (fits that did not converge in ``max_iter`` iterations).

    Raises:
        ProbeError: one class only, or a class / the number of groups smaller than ``n_splits``.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedGroupKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    labels, groups = np.asarray(labels), np.asarray(groups)
    classes, counts = np.unique(labels, return_counts=True)
    if len(classes) < 2:
        raise ProbeError(f"only one class ({classes.tolist()}) among {len(labels)} examples: "
                         f"nothing to probe")
    if counts.min() < n_splits:
        raise ProbeError(f"class {classes[counts.argmin()]!r} has {counts.min()} examples, fewer "
                         f"than the {n_splits} folds")
    if len(np.unique(groups)) < n_splits:
        raise ProbeError(f"{len(np.unique(groups))} groups cannot fill {n_splits} folds")
    cv = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    rows = []
    for layer in range(states.shape[1]):
        probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=max_iter))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            f1 = cross_val_score(probe, np.asarray(states[:, layer]), labels, groups=groups,
                                 cv=cv, scoring="f1")
        rows.append({"layer": layer, "f1": float(f1.mean()), "f1_std": float(f1.std()),
                     "convergence_warnings": sum(issubclass(w.category, ConvergenceWarning)
                                                 for w in caught)})
    return pd.DataFrame(rows)


def probe_pairs(states: np.ndarray, sentence_index: dict, pairs: pd.DataFrame,
                group: str = "property", **kwargs) -> pd.DataFrame:
    """Per-layer probe on the sentences of some minimal pairs (acceptable = 1).

    Each distinct sentence is used once (an item's acceptable sentence is shared by its four
    negatives); groups are ``pairs[group]`` (the concept-property item by default).

    Args:
        states: ``[S, L + 1, H]`` states of distinct sentences; ``sentence_index`` maps a
            sentence to its row.
        **kwargs: passed to :func:`probe_layers`.
    """
    rows = pd.DataFrame({"text": list(pairs["good"]) + list(pairs["bad"]),
                         "label": [1] * len(pairs) + [0] * len(pairs),
                         "group": list(pairs[group]) * 2}).drop_duplicates("text")
    X = np.asarray(states[[sentence_index[t] for t in rows["text"]]])
    return probe_layers(X, rows["label"].to_numpy(), rows["group"].to_numpy(), **kwargs)
