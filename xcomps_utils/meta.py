"""*Meta*: metalinguistic prompting (Hu & Levy, 2023; as used by XCOMPS, He et al., 2025).

The model is asked, in the pair's own language, which of the two concepts has the property, and
the log-probabilities of the two answers are compared as continuations of the prompt::

    Question: Which one can fly: a robin or a penguin?
    Answer: a robin        <- log p(" a robin" | prompt)   vs   log p(" a penguin" | prompt)

Both option orders are presented and each answer's log-probability is averaged over the two,
cancelling position bias. Answer tokens come from encoding prompt + answer together
(:func:`xcomps_utils.scoring.continuation_scores`). The probability mass the two answers take of
the whole vocabulary, ``p(good) + p(bad)``, is reported: a low mass means the model would rather
say something else, and the comparison then means little.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .scoring import continuation_scores
from .xcomps import meta_template

__all__ = ["option_text", "build_meta_prompts", "score_meta"]


def option_text(prefix: str) -> str:
    """An answer option from a sentence's subject prefix: first character lower-cased
    (``"A robin"`` -> ``"a robin"``, ``"Ein Rotkehlchen"`` -> ``"ein Rotkehlchen"``)."""
    return prefix[:1].lower() + prefix[1:]


def _chat_context(tokenizer, question: str, answer_cue: str) -> str:
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError("use_chat_template=True but the tokenizer has no chat template")
    text = tokenizer.apply_chat_template([{"role": "user", "content": question}],
                                         add_generation_prompt=True, tokenize=False)
    bos = tokenizer.bos_token
    if bos and text.startswith(bos):  # scoring adds exactly one BOS itself
        text = text[len(bos):]
    return text + answer_cue


def build_meta_prompts(pairs: pd.DataFrame, use_chat_template: bool = False,
                       tokenizer=None) -> pd.DataFrame:
    """Two prompts per pair (``order`` 0: acceptable option first, 1: second) with the context
    and the two answer continuations (``answer_good``, ``answer_bad``).

    Raises:
        DataError: no template for a language; ValueError: chat template requested but missing.
    """
    rows = []
    templates = {lang: meta_template(lang) for lang in pairs["lang"].unique()}
    for i, r in enumerate(pairs.itertuples(index=False)):
        t = templates[r.lang]
        good = option_text(r.prefix_acceptable or r.acceptable_concept)
        bad = option_text(r.prefix_unacceptable or r.unacceptable_concept)
        sep = " " if t["space"] else ""
        for order, (o1, o2) in enumerate(((good, bad), (bad, good))):
            question = t["question"].format(property_phrase=r.property_phrase, option_1=o1,
                                            option_2=o2)
            if use_chat_template:
                context = _chat_context(tokenizer, question, t["answer"])
            else:
                context = question + "\n" + t["answer"]
            rows.append({"pair": i, "order": order, "context": context,
                         "answer_good": sep + good, "answer_bad": sep + bad})
    return pd.DataFrame(rows)


def score_meta(lm, pairs: pd.DataFrame, use_chat_template: bool = False, **kwargs) -> pd.DataFrame:
    """The Meta method on XCOMPS pairs (from :func:`xcomps_utils.xcomps.load_xcomps`).

    Each prompt is computed once for its two answers (shared prefix, see
    :func:`xcomps_utils.scoring.continuation_scores`, which takes the keyword arguments:
    ``batch_size``, ``token_budget``, ``progress``; resuming is the results store's job).

    Returns:
        ``pairs`` plus ``meta_good``/``meta_bad`` (answer log-probabilities in nats, mean over the
        two option orders), ``meta_delta``, ``meta_correct`` (delta > 0; ties are not correct),
        ``meta_tie``, ``meta_mass`` (mean over orders of p(good) + p(bad)), and per-order
        ``meta_good_0``/``meta_bad_0``/``meta_good_1``/``meta_bad_1``.
    """
    prompts = build_meta_prompts(pairs, use_chat_template, lm.tokenizer)
    contexts = list(prompts["context"]) * 2
    answers = list(prompts["answer_good"]) + list(prompts["answer_bad"])
    scores = continuation_scores(lm, contexts, answers, **kwargs)
    n = len(prompts)
    prompts["lp_good"] = [s.total for s in scores[:n]]
    prompts["lp_bad"] = [s.total for s in scores[n:]]
    out = pairs.copy()
    for order in (0, 1):
        sel = prompts[prompts["order"] == order].set_index("pair")
        out[f"meta_good_{order}"] = sel["lp_good"].reindex(range(len(out))).to_numpy()
        out[f"meta_bad_{order}"] = sel["lp_bad"].reindex(range(len(out))).to_numpy()
    out["meta_good"] = (out["meta_good_0"] + out["meta_good_1"]) / 2
    out["meta_bad"] = (out["meta_bad_0"] + out["meta_bad_1"]) / 2
    out["meta_delta"] = out["meta_good"] - out["meta_bad"]
    out["meta_correct"] = out["meta_delta"] > 0
    out["meta_tie"] = out["meta_delta"] == 0
    out["meta_mass"] = np.mean([np.exp(out[f"meta_good_{o}"]) + np.exp(out[f"meta_bad_{o}"])
                                for o in (0, 1)], axis=0)
    return out
