"""*Neuro*: what the hidden states know (the probing method of XCOMPS, He et al., 2025).

For each sentence, the hidden state of its last non-padding token is read at every layer:
the embedding output plus the output of each of the ``L`` blocks, ``L + 1`` states, with the last
one *after* the final normalisation (transformers' ``output_hidden_states`` convention; tested by
checking that the LM head applied to it gives the model's logits). States are extracted in batches
and written to a ``.npy`` file on disk as they come, so memory stays bounded by one batch whatever
the number of sentences.

A probe per layer (standardisation + logistic regression) is trained to tell acceptable from
unacceptable sentences, scored by F1 with 5-fold cross-validation *grouped by item*: all sentences
of one concept-property item (its acceptable sentence and every negative) sit in the same fold, so
no sentence is tested on a probe that saw it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from .scoring import _batches, _encode

__all__ = ["last_token_states", "probe_layers", "probe_pairs", "ProbeError"]


class ProbeError(ValueError):
    """The probe cannot be trained as asked (one class, too few examples for the folds)."""


@torch.inference_mode()
def last_token_states(lm, texts: list[str], out_path: str | Path | None = None,
                      batch_size: int = 16, padding_side: str = "right",
                      progress: bool | str = False) -> np.ndarray:
    """Last non-pad token's hidden state at every layer, for each text (BOS + text).

    Args:
        out_path: ``.npy`` file written batch by batch (memory-mapped); ``None`` keeps it in RAM.

    Returns:
        ``[N, L + 1, H]`` float32 array (a memory map when ``out_path`` is given), input order.
        Index 0 is the embedding output, index ``L`` the final (normalised) state.

    Raises:
        ValueError: empty text or unknown padding side.
    """
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    texts = list(texts)
    encoded = _encode(lm.tokenizer, texts, "bos")
    cfg = lm.model.config
    shape = (len(texts), cfg.num_hidden_layers + 1, cfg.hidden_size)
    if out_path is not None:
        Path(out_path).parent.mkdir(parents=True, exist_ok=True)
        out = np.lib.format.open_memmap(out_path, mode="w+", dtype=np.float32, shape=shape)
    else:
        out = np.empty(shape, dtype=np.float32)
    pad = lm.tokenizer.pad_token_id
    pad = pad if pad is not None else encoded[0].ids[0]
    bar = tqdm(total=len(texts), desc=progress if isinstance(progress, str) else "hidden states",
               unit="text", disable=not progress)
    for batch in _batches([len(e.ids) for e in encoded], batch_size, None):
        width = max(len(encoded[i].ids) for i in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros_like(ids)
        last = []
        for b, i in enumerate(batch):
            seq = encoded[i].ids
            start = width - len(seq) if padding_side == "left" else 0
            ids[b, start:start + len(seq)] = torch.tensor(seq)
            mask[b, start:start + len(seq)] = 1
            last.append(start + len(seq) - 1)
        position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
        hs = lm.model.get_decoder()(input_ids=ids.to(lm.device), attention_mask=mask.to(lm.device),
                      position_ids=position_ids.to(lm.device), output_hidden_states=True,
                      use_cache=False).hidden_states
        rows = torch.arange(len(batch), device=lm.device)
        cols = torch.tensor(last, device=lm.device)
        states = torch.stack([h[rows, cols] for h in hs], dim=1).float().cpu().numpy()
        if not np.isfinite(states).all():
            raise FloatingPointError(f"non-finite hidden state in batch of texts {batch[:5]}...")
        out[batch] = states
        bar.update(len(batch))
    bar.close()
    if out_path is not None:
        out.flush()
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
