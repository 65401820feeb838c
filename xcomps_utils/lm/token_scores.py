"""The scored tokens of a text, as plain data (numpy and pandas): what the scorer
(:mod:`xcomps_utils.lm.scoring`, the torch side) returns and what the analysis, the decomposition and
the figures read, so that none of those imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import NotFound

__all__ = ["TokenScores", "token_table"]


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

    @classmethod
    def from_table(cls, tokens: pd.DataFrame, text: str, bos_policy: str = "bos") -> "TokenScores":
        """The scores of ``text`` from a token table with ``text`` (or one text's rows),
        ``position``, ``token_id``, ``token``, ``start``, ``end``, ``logprob`` columns, such as
        the results store's ``direct_tokens``.

        Raises:
            NotFound: (a ``KeyError``) the table has no row for ``text``.
        """
        rows = tokens[tokens["text"] == text] if "text" in tokens else tokens
        if not len(rows):
            raise NotFound(f"no scored tokens for {text!r}")
        rows = rows.sort_values("position")
        return cls(text, rows["token_id"].to_numpy(np.int64), list(rows["token"]),
                   rows[["start", "end"]].to_numpy(np.int64), rows["logprob"].to_numpy(np.float64),
                   bos_policy)

    @classmethod
    def of_texts(cls, tokens: pd.DataFrame, bos_policy: str = "bos") -> dict[str, "TokenScores"]:
        """Every text's scores from a token table (the columns of :meth:`from_table`), in one
        pass: ``{text: TokenScores}``, equal to :meth:`from_table` text by text. A repeated
        ``(text, position)`` row (the same sentence scored in two pairs) counts once."""
        t = tokens.drop_duplicates(["text", "position"]).sort_values(["text", "position"],
                                                                      kind="stable")
        texts = t["text"].to_numpy(object)
        ids, toks = t["token_id"].to_numpy(np.int64), t["token"].to_numpy(object)
        offsets, lp = t[["start", "end"]].to_numpy(np.int64), t["logprob"].to_numpy(np.float64)
        cut = np.flatnonzero(texts[1:] != texts[:-1]) + 1
        bounds = zip(np.r_[0, cut], np.r_[cut, len(t)]) if len(t) else ()
        return {texts[a]: cls(texts[a], ids[a:b], list(toks[a:b]), offsets[a:b], lp[a:b],
                              bos_policy) for a, b in bounds}

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


def token_table(scores: list[TokenScores]) -> pd.DataFrame:
    """Long table of scored tokens: ``text_index``, ``position``, ``token_id``, ``token``,
    ``text_piece`` (the token's span of the text), ``start``, ``end``, ``logprob``, ``surprisal``
    (nats), ``bos_policy``."""
    frames = [pd.DataFrame(columns=["text_index", "position", "token_id", "token", "text_piece",
                                    "start", "end", "logprob", "surprisal", "bos_policy"])]
    for i, s in enumerate(scores):
        frames.append(pd.DataFrame({
            "text_index": i, "position": np.arange(len(s.logprobs)), "token_id": s.token_ids,
            "token": s.tokens, "text_piece": [s.text[a:b] for a, b in s.offsets],
            "start": s.offsets[:, 0], "end": s.offsets[:, 1], "logprob": s.logprobs,
            "surprisal": -s.logprobs, "bos_policy": s.bos_policy}))
    return pd.concat(frames[1:] or frames, ignore_index=True)
