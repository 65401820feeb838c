"""*Direct*: the two sentences of a pair scored as plain text (sentence log-probabilities).

Per pair: ``logprob_good``, ``logprob_bad`` (sentence sums), ``logprob_mean_good``,
``logprob_mean_bad`` (per token), ``n_tokens_good``, ``n_tokens_bad``, ``delta`` (good - bad,
sums), ``correct`` (delta > 0), ``tie`` (delta == 0, never correct), ``near_tie`` (0 < |delta|
below the run dtype's precision, never a tie), ``near_tie_tolerance`` (that precision, nats; see
:mod:`xcomps_utils.lm.precision`). Detail ``direct_tokens``: every scored token of every
sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .base import Method, long_measures

__all__ = ["Direct"]


@dataclass(frozen=True)
class Direct(Method):
    """Direct: sentence log-probabilities under the run's BOS policy."""

    shard_size: int = 1000
    uses: tuple[str, ...] = ("good", "bad")
    bos_policy: bool = True

    name = "direct"
    flags = {"bos_policy": ("--bos-policy", "bos")}
    audit_tolerance = "sentence_tokens"
    audit_details = {"direct_tokens": "token_logprobs"}

    def compute_shard(self, lm, pairs: pd.DataFrame, params: dict) -> tuple[pd.DataFrame, dict]:
        """Every distinct sentence scored once (:func:`xcomps_utils.lm.scoring.token_scores`);
        the pair measures of the module doc and the ``direct_tokens`` detail."""
        from ..lm.precision import near_ties, pair_tolerance
        from ..lm.scoring import token_scores, token_table

        p = params
        texts = list(dict.fromkeys(list(pairs["good"]) + list(pairs["bad"])))
        scores = token_scores(lm, texts, bos_policy=p["bos_policy"],
                              token_budget=p["token_budget"], batch_size=p["batch_size"])
        by = dict(zip(texts, scores))
        good, bad = [by[t] for t in pairs["good"]], [by[t] for t in pairs["bad"]]
        n_tokens = [len(g.logprobs) + len(b.logprobs) for g, b in zip(good, bad)]
        lg, lb = np.array([s.total for s in good]), np.array([s.total for s in bad])
        name = getattr(lm, "name", None)
        measures = long_measures(pairs, self.name, {
            "logprob_good": lg, "logprob_bad": lb,
            "logprob_mean_good": [s.mean for s in good], "logprob_mean_bad": [s.mean for s in bad],
            "n_tokens_good": [len(s.logprobs) for s in good],
            "n_tokens_bad": [len(s.logprobs) for s in bad],
            "delta": lg - lb, "correct": lg - lb > 0, "tie": lg == lb,
            # 0 < |delta| < the tolerance of the run's dtype, and that tolerance (nats)
            "near_tie": near_ties(lg - lb, lm.dtype, n_tokens, name),
            "near_tie_tolerance": pair_tolerance(lm.dtype, n_tokens, name)})
        tokens = token_table(scores)
        tokens.insert(0, "text", np.asarray(texts, dtype=object)[tokens["text_index"].astype(int)])
        tokens = tokens[["text", "position", "token_id", "token", "start", "end", "logprob"]]
        return measures, {"direct_tokens": tokens}
