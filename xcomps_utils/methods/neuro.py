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


import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import paths
from ..declare import check, ParameterError, ProbeBy
from ..errors import InputTypeError, NumericalError

from ..lm.encoding import check_texts, encode, length_batches, resolve_token_budget
from .base import ID, MEASURE_COLUMNS, Method

__all__ = ["last_token_states", "ShardedStates", "GivenStates", "probes", "Neuro"]


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
    import torch  # only to compute
    from tqdm.auto import tqdm

    with torch.inference_mode():
        encoded = encode(lm.tokenizer, check_texts(texts), "bos")
        decoder, n_layers = lm.model.get_decoder(), lm.model.config.num_hidden_layers
        if not (hasattr(decoder, "layers") and hasattr(decoder, "norm")):
            raise InputTypeError(f"{type(decoder).__name__} has no .layers and .norm: cannot "
                                 f"hook its hidden states; Neuro needs a decoder-only model "
                                 f"with them (Llama, Gemma, Qwen, SmolLM)")
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
                    raise InputTypeError(f"{type(decoder).__name__} did not call its embedding, "
                                         f"every block and its norm: cannot hook its hidden "
                                         f"states; Neuro needs a model that does")
                states = buffer.pop().cpu().numpy()
                if not np.isfinite(states).all():
                    raise NumericalError(f"non-finite hidden state in texts {batch[:5]}...")
                out[batch] = states
                bar.update(len(batch))
        finally:
            for h in handles:
                h.remove()
            buffer.clear()
            bar.close()
        return out


# --- the run-level step: probes over the stored states ------------------------------------------

class ShardedStates:
    """Rows of the states of every shard, gathered on demand (memory: the rows asked for)."""

    def __init__(self, store, rid: str):
        self.parts = store.arrays(rid, "states")
        texts = store.detail(rid, "neuro_sentences")["text"]
        offsets = np.cumsum([0] + [len(a) for a in self.parts])
        where = [(k, r) for k, a in enumerate(self.parts) for r in range(len(a))]
        self.index = {}
        for t, (k, r) in zip(texts, where):
            self.index.setdefault(t, offsets[k] + r)
        self.where = where
        self.shape = (len(where),) + (self.parts[0].shape[1:] if self.parts else (0, 0))

    def __getitem__(self, rows):
        return np.stack([self.parts[self.where[i][0]][self.where[i][1]] for i in rows])


class GivenStates:
    """The states of ``texts`` held in one ``[N, L + 1, H]`` array (``states[i]`` is
    ``texts[i]``'s), read like :class:`ShardedStates`: what the audit recomputes of one
    language (:mod:`xcomps_utils.runs.audit`)."""

    def __init__(self, texts: list[str], states: np.ndarray):
        if len(texts) != len(states):
            raise InputTypeError(f"{len(texts)} texts but {len(states)} rows of states")
        self.index = {t: i for i, t in enumerate(texts)}
        self.array = states
        self.shape = states.shape

    def __getitem__(self, rows):
        return self.array[list(rows)]


_LAYER_MEASURES = ("f1", "balanced_accuracy", "mcc", "null_q95")


#: The nested null draws of the probes this process computed last, per run and probe group
#: (``(task, lang, subset)``: ``{"pool", "observed", "draws"}``): not stored (the measures hold
#: their summaries); the audit reads them to bound how far a p-value can move when the probes
#: are recomputed from recomputed states (:mod:`xcomps_utils.runs.audit`).
NULL_DRAWS: dict = {}


def probes(store, rid: str, pairs: pd.DataFrame, p: dict, states=None) -> pd.DataFrame:
    """Neuro's run-level step: the probes of every ``probe_by`` group over the run's state
    shards (long measures, ``layer`` -1 for a group's summary); ``states``: read them there
    instead (a :class:`GivenStates` holding every sentence of ``pairs``).

    The groups' probes run in :func:`xcomps_utils.paths.probe_jobs` worker processes
    (joblib), the groups with a permutation null first; every fit is single-threaded and seeded,
    so the numbers do not depend on the number of workers (tested). The groups with a null (one
    per language) permute their labels independently (each its own seed, from the run's seed and
    the group) and are pooled by one joint test
    (:func:`xcomps_utils.methods.probing.joint_permutation_test`): each gets ``p_adjusted`` (max-T over
    the groups), ``p_pooled`` and ``n_pooled``.

    The unit kept whole across folds (the probe's *item*) is the sentences' shared frame: the
    ``property`` for XCOMPS, the ``prompt`` for BMLAMA (a fact, with the facts that share its
    prompt: relations with several true answers, whose sentences coincide), else ``item``.
    BMLAMA pairs have no concepts (each sentence is its own: no purge), and their pairs whose
    distractor is true (``distractor_true``: its ``bad`` sentence is a true fact, the ``good``
    sentence of another fact) are left out, counted per group in ``n_true_distractors``."""
    from joblib import Parallel, delayed

    from .probing import (DEFAULT_N_PERMUTATIONS, joint_permutation_test,
                          probe_sentences)

    states = ShardedStates(store, rid) if states is None else states
    NULL_DRAWS.pop(rid, None)
    item = next(c for c in ("property", "prompt", "item") if c in pairs)
    true_bad = (pairs["distractor_true"].astype(bool) if "distractor_true" in pairs
                else pd.Series(False, index=pairs.index))
    groups, left_out = [], []
    for by in p["probe_by"]:
        by = list(by)
        for key, sub in pairs.groupby(by, sort=False) if by else [((), pairs)]:
            key = key if isinstance(key, tuple) else (key,)
            # the permutation null for each probe over all negative types (one per language)
            n_perm = DEFAULT_N_PERMUTATIONS if "subset" not in by else 0
            left_out.append(int(true_bad.loc[sub.index].sum()))
            sub = sub[~true_bad.loc[sub.index]]
            texts = list(dict.fromkeys(probe_sentences(sub, item)["text"]))
            groups.append((by, key, sub, n_perm, texts))
    order = sorted(range(len(groups)), key=lambda i: -groups[i][3])  # the longest first
    jobs = min(paths.probe_jobs(), len(groups)) or 1
    done = Parallel(n_jobs=jobs)(
        delayed(_probe_group)(states[[states.index[t] for t in groups[i][4]]],
                              {t: r for r, t in enumerate(groups[i][4])}, groups[i][2], item,
                              p, groups[i][3], groups[i][1])
        for i in order)
    results = dict(zip(order, done))
    for by in map(list, p["probe_by"]):  # one joint null over the groups of each probe_by
        pooled = [i for i, g in enumerate(groups) if g[0] == by and g[3]
                  and not isinstance(results[i], str)]
        if pooled:
            joint = joint_permutation_test(
                [results[i][1]["nested_balanced_accuracy"] for i in pooled],
                np.column_stack([results[i][1]["null_nested"] for i in pooled]))
            for j, i in enumerate(pooled):
                results[i][1].update(p_adjusted=joint["p_adjusted"][j],
                                     p_pooled=joint["p_pooled"], n_pooled=len(pooled))
    frames = []
    for i, (by, key, sub, _, _) in enumerate(groups):
        if isinstance(results[i], str):
            warnings.warn(f"{Neuro.name}: no probe for {dict(zip(by, key))}: {results[i]}")
            continue
        by_layer, summary = results[i]
        draws = summary.pop("null_nested", None)  # the draws: pooled above
        ids = {c: (sub[c].iat[0] if sub[c].nunique() == 1 else "all") for c in ID}
        ids.update(pair_id="", item="", **dict(zip(by, map(str, key))))
        for c in ("lang", "subset"):
            if c not in by:
                ids[c] = "all"
        if draws is not None:
            NULL_DRAWS.setdefault(rid, {})[tuple(str(ids[c]) for c in ("task", "lang", "subset"))] = {
                "pool": tuple(by), "observed": float(summary["nested_balanced_accuracy"]),
                "draws": np.asarray(draws, dtype=np.float64)}
        for measure in [m for m in _LAYER_MEASURES if m in by_layer]:
            f = pd.DataFrame({**ids, "method": Neuro.name, "wording": "", "order": "",
                              "layer": by_layer["layer"].to_numpy(), "measure": measure,
                              "value": by_layer[measure].to_numpy(dtype=np.float64)})
            frames.append(f[MEASURE_COLUMNS])
        if "distractor_true" in pairs:
            summary["n_true_distractors"] = left_out[i]
        summary["concept_disjoint"] = float(summary["leaked_concepts"] == 0)
        summary["items_whole"] = float(summary.pop("grouping") in ("item+concept",
                                                                   "item, purged"))
        f = pd.DataFrame({**ids, "method": Neuro.name, "wording": "", "order": "", "layer": -1,
                          "measure": list(summary), "value": np.asarray(
                              list(summary.values()), dtype=np.float64)})
        frames.append(f[MEASURE_COLUMNS])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=MEASURE_COLUMNS)


def _probe_group(states: np.ndarray, index: dict, sub: pd.DataFrame, item: str, p: dict,
                 n_perm: int, key: tuple = ()):
    """One group's :func:`~xcomps_utils.methods.probing.probe_pairs` (in a worker: its permutation
    null in this process, seeded by the run's seed and the group's ``key``); a
    :class:`~xcomps_utils.methods.probing.ProbeError` comes back as its message."""
    import zlib

    from .probing import ProbeError, probe_pairs

    try:
        return probe_pairs(states, index, sub, item=item, n_splits=p["n_splits"],
                           inner_splits=p["inner_splits"], seed=p["seed"],
                           n_permutations=n_perm,
                           null_seed=[p["seed"], zlib.crc32(repr(tuple(map(str, key))).encode())])
    except ProbeError as err:
        return str(err)


# --- the method --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Neuro(Method):
    """Neuro: each shard stores the last-token states of its sentences (no measures); the
    finishing step (``probes``) trains the probes of every ``probe_by`` group over all of them
    (:func:`probes`; its measures in the module doc of :mod:`xcomps_utils.runs.execute`)."""

    # BMLAMA pairs add prompt and distractor_true (the probe's item, the pairs left out; see
    # probes); other pairs lack them, so their keys are what they were
    shard_size: int = 1000
    uses: tuple[str, ...] = ("good", "bad", "property", "acceptable_concept",
                             "unacceptable_concept", "prompt", "distractor_true")
    parameters: tuple[str, ...] = ("probe_by", "n_splits", "inner_splits", "seed")
    protocol: tuple[tuple[str, str], ...] = (
        ("protocol", "item-whole concept-disjoint folds (training purged of test concepts), "
                     "nested layer choice, standardised ridge probe (closed form), "
                     "label-permutation null (199, nested procedure rerun, per language, "
                     "joint max-T)"),
        ("layers", "embedding + every block, last after the final norm"))

    name = "neuro"
    finish_shard = "probes"
    audit_tolerance = "probe"
    array_rows = "neuro_sentences"

    def check_inputs(self, pairs: pd.DataFrame, params: dict) -> None:
        """``probe_by`` is lists of columns of the pairs
        (:class:`~xcomps_utils.declare.ParameterError` naming ``probe_by``)."""
        probe_by = check(ProbeBy, params["probe_by"], "probe_by")
        missing = sorted({c for b in probe_by for c in b} - set(pairs))
        if missing:
            raise ParameterError("probe_by", f"lists of the pairs' columns ({', '.join(pairs)})",
                                 probe_by, f"{missing} are not columns of the pairs")

    def compute_shard(self, lm, pairs: pd.DataFrame, params: dict) -> tuple[None, dict]:
        """The states of the shard's distinct sentences (:func:`last_token_states`): details
        ``states`` and ``neuro_sentences`` (their texts), no measures."""
        texts = list(dict.fromkeys(list(pairs["good"]) + list(pairs["bad"])))
        states = last_token_states(lm, texts, token_budget=params["token_budget"],
                                   batch_size=params["batch_size"])
        return None, {"states": states, "neuro_sentences": pd.DataFrame({"text": texts})}

    def finish(self, store, rid: str, pairs: pd.DataFrame, params: dict) -> pd.DataFrame:
        """:func:`probes` over the run's state shards."""
        return probes(store, rid, pairs, params)
