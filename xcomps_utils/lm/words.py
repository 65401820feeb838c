"""Word-level surprisal in any script: token surprisals summed into words.

A language model scores *tokens*; people read *words*. This module sums the surprisals of a
scored text's tokens (nats, :class:`xcomps_utils.lm.scoring.TokenScores`) into words, for any script:

* **words**: whitespace-separated words by default (``"A robin can fly."`` has the words ``A``,
  ``robin``, ``can``, ``fly.``: punctuation stays with its word, as in minicons'
  ``word_score_tokenized`` and the ``surprisal`` package); a text without whitespace (Chinese,
  Japanese, Thai) is one word unless the caller gives a segmentation: a list of words (strings,
  found in order), a list of ``(start, end)`` character spans, a function ``text -> list of
  words`` (a segmenter such as jieba's ``lcut``), or ``"characters"`` (every non-space character a
  word; a fair default for Han). A segmentation must cover every non-whitespace character.
* **tokens to words**: each token owns the characters from its start to the next token's start
  (:func:`token_spans`, which also copes with byte-level pieces that share one character, as
  SmolLM2's tokenizer makes of Chinese and Vietnamese). A token belongs to the word(s) its
  non-whitespace characters fall in; a token of whitespace only (a lone ``"Ġ"``) belongs to the
  next token's word, or to the previous one at the end of the text. A token that spans two words
  (``"鸟会"`` when the caller segments ``鸟|会``) cannot be split, so the words it touches are
  **merged** into one unit (``n_words > 1``), the choice of ``perplexity.align_groups`` for tokens
  that straddle a slot boundary.

So every token belongs to exactly one (possibly merged) word, and the words' surprisals sum to
the text's surprisal exactly (the same float64 numbers, added in another order).
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..declare import ParameterError, ParameterTypeError
from ..errors import InputError

__all__ = ["token_spans", "token_boundaries", "word_spans", "token_word_index",
           "word_surprisals"]

_WS = re.compile(r"\S+")


def token_spans(offsets, length: int) -> list[tuple[int, int]]:
    """Token character spans made contiguous, so that they tile ``[0, length)``.

    Token ``i`` owns ``[start_i, start_{i+1})`` (the first token from 0, the last to ``length``):
    the whitespace after a token belongs to it unless the next token starts with it. Zero-width or
    out-of-order offsets (several byte-level pieces of one character share the character's
    offsets) are repaired so that each token owns at least one character where one is left.

    Args:
        offsets: ``[n, 2]`` character ``[start, end)`` of each token (``TokenScores.offsets``).
        length: the text's length in characters.

    Returns:
        ``n`` ``(start, end)`` pairs.

    Raises:
        InputError: no tokens, or a token starting beyond the text.
    """
    offsets = np.asarray(offsets)
    if len(offsets) == 0:
        raise InputError("no tokens: a scored text has at least one")
    starts = [int(a) for a, _ in offsets]
    if max(starts) > length:
        raise InputError(f"a token starts at character {max(starts)} of a {length}-character text")
    starts[0] = 0
    for i in range(1, len(starts)):  # zero-width or out-of-order offsets (byte pieces)
        starts[i] = max(starts[i], starts[i - 1])
    ends = starts[1:] + [length]
    spans = []
    for s, e in zip(starts, ends):
        if e <= s:  # a token sharing its start with the next (several byte pieces of one char)
            e = min(s + 1, length)
            s = min(s, e - 1)
        spans.append((s, e))
    return spans


def token_boundaries(offsets, length: int) -> list[int]:
    """Character positions where a text can be cut between two tokens, in order.

    A position is a boundary when it starts a token's contiguous span (:func:`token_spans`; 0
    and ``length`` always are) and no token's own offsets straddle it. The second condition
    matters for byte-level pieces: SmolLM2 spells ``" ş"`` as ``"ĠÅ"`` (offsets ``(3, 5)``: the
    space and the first byte of *ş*) then a piece for the second byte (``(4, 5)``); position 4
    starts a contiguous span but lies inside the first piece, so it is no boundary.

    Returns:
        sorted positions in ``[0, length]``.
    """
    offsets = np.asarray(offsets)
    starts = {s for s, _ in token_spans(offsets, length)} | {0, length}
    inside = set()
    for a, b in offsets:
        inside.update(range(int(a) + 1, int(b)))
    return sorted(starts - inside)


def word_spans(text: str, words: None | str | Sequence | Callable = None) -> list[tuple[int, int]]:
    """Character spans of the words of ``text``.

    Args:
        text: the text.
        words: ``None`` (whitespace-separated words), ``"characters"`` (each non-whitespace
            character), a list of word strings (found in order; whitespace between them is
            skipped), a list of ``(start, end)`` spans, or a function ``text -> list of words``.

    Returns:
        ``(start, end)`` spans in order, not overlapping, covering every non-whitespace character.

    Raises:
        InputError: a word not found where the previous one ended (names it and the position),
            spans that overlap or leave a non-whitespace character out (names it), an empty text.
        ParameterTypeError: (a ``TypeError``) ``words`` of another kind.
    """
    if not text or not text.strip():
        raise InputError("an empty text has no words")
    if words is None:
        return [m.span() for m in _WS.finditer(text)]
    if isinstance(words, str):
        if words != "characters":
            raise ParameterError("words", "None, 'characters', a list or a function", words)
        return [(i, i + 1) for i, ch in enumerate(text) if not ch.isspace()]
    if callable(words):
        words = list(words(text))
    words = list(words)
    if not words:
        raise InputError(f"the segmentation of {text!r} has no words")
    if all(isinstance(w, str) for w in words):
        spans, pos = [], 0
        for k, w in enumerate(words):
            w = w.strip()
            if not w:
                continue
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if not text.startswith(w, pos):
                raise InputError(f"word {k} {w!r} of the segmentation is not at character {pos} "
                                 f"of {text!r} (found {text[pos:pos + len(w)]!r}); the words "
                                 f"must be the text's characters in order")
            spans.append((pos, pos + len(w)))
            pos += len(w)
    elif all(isinstance(w, (tuple, list)) and len(w) == 2 for w in words):
        spans = sorted((int(a), int(b)) for a, b in words)
        if any(a >= b or a < 0 or b > len(text) for a, b in spans):
            raise InputError(f"word spans must be non-empty and inside the text "
                             f"(0..{len(text)}), got {spans}")
        if any(b > a2 for (_, b), (a2, _) in zip(spans, spans[1:])):
            raise InputError(f"word spans overlap: {spans}")
    else:
        raise ParameterTypeError("words", "word strings or (start, end) spans, not a mix",
                                 words)
    covered = np.zeros(len(text), dtype=bool)
    for a, b in spans:
        covered[a:b] = True
    left = [i for i, ch in enumerate(text) if not covered[i] and not ch.isspace()]
    if left:
        raise InputError(f"the segmentation leaves character {left[0]} ({text[left[0]]!r}) of "
                         f"{text!r} in no word; cover every non-whitespace character")
    return spans


def token_word_index(text: str, offsets, words=None) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Which word each token belongs to (see the module docstring for the rule).

    Args:
        text: the scored text.
        offsets: ``[n, 2]`` token character offsets into ``text``.
        words: a segmentation, as :func:`word_spans` takes.

    Returns:
        ``(units, index)``: ``units`` the character spans of the words, words sharing a token
        merged into one unit (in text order); ``index`` ``[n]`` the unit of each token.

    Raises:
        InputError: as :func:`word_spans` and :func:`token_spans`.
    """
    spans = word_spans(text, words)
    word_of = np.full(len(text), -1, dtype=np.int64)
    for k, (a, b) in enumerate(spans):
        word_of[a:b] = k
    tok = token_spans(offsets, len(text))
    # a token's characters: its contiguous span and its own offsets (a byte piece "ĠÅ" whose
    # span is only the space still carries the first byte of the next character)
    own = np.asarray(offsets)
    touched = [sorted({int(w) for w in word_of[min(s, int(a)):max(e, int(b))] if w >= 0})
               for (s, e), (a, b) in zip(tok, own)]
    # whitespace-only tokens take the next token's word (the previous one's at the end)
    nxt = None
    for i in range(len(tok) - 1, -1, -1):
        if touched[i]:
            nxt = touched[i][0]
        elif nxt is not None:
            touched[i] = [nxt]
    prev = None
    for i in range(len(tok)):
        if touched[i]:
            prev = touched[i][-1]
        else:
            touched[i] = [prev]
    # words that share a token are one unit (a token is never split)
    n = len(spans)
    links = np.array([(ws[0], w) for ws in touched for w in ws], dtype=np.int64).reshape(-1, 2)
    label = connected_components(coo_matrix((np.ones(len(links)), (links[:, 0], links[:, 1])),
                                            (n, n)), directed=False)[1]
    first = np.array(pd.Series(np.arange(n)).groupby(label).transform("min"))  # its first word
    roots = sorted({int(first[w]) for ws in touched for w in ws})
    unit_of_root = {r: k for k, r in enumerate(roots)}
    units = []
    for r in roots:
        members = np.flatnonzero(first == r)
        units.append((spans[members[0]][0], spans[members[-1]][1]))
    index = np.array([unit_of_root[int(first[ws[0]])] for ws in touched], dtype=np.int64)
    return units, index


def word_surprisals(scores, words=None) -> pd.DataFrame:
    """Surprisal of each word of a scored text: the sum of its tokens' surprisals (nats).

    Args:
        scores: a :class:`~xcomps_utils.lm.scoring.TokenScores` (``text``, ``offsets``,
            ``logprobs``), e.g. from :func:`~xcomps_utils.lm.scoring.token_scores` or
            ``TokenScores.from_table(results.detail("direct_tokens"), text)``.
        words: the segmentation (see :func:`word_spans`): ``None`` for whitespace words.

    Returns:
        one row per word (words sharing a token merged), in text order: ``word`` (0, 1, ...),
        ``text`` (its characters), ``start``, ``end`` (character offsets), ``n_tokens``,
        ``n_words`` (1 unless merged), ``tokens`` (the token strings joined by ``|``),
        ``surprisal`` (nats), ``logprob`` (``-surprisal``). ``surprisal.sum()`` equals
        ``-scores.total``.

    Raises:
        InputError: as :func:`token_word_index`; no scored tokens (``drop_first`` on a
            one-token text).

    Example:
        >>> word_surprisals(s)[["text", "n_tokens", "surprisal"]]   # "A robin can fly."
        #   A 1 3.1 / robin 2 14.2 / can 1 2.0 / fly. 2 4.5
    """
    lp = np.asarray(scores.logprobs, dtype=np.float64)
    if len(lp) == 0:
        raise InputError(f"{scores.text!r}: no scored tokens to sum into words")
    units, index = token_word_index(scores.text, scores.offsets, words)
    s = np.zeros(len(units))
    np.add.at(s, index, -lp)
    n_tok = np.bincount(index, minlength=len(units))
    spans = word_spans(scores.text, words)
    n_words = [sum(a >= u0 and b <= u1 for a, b in spans) for u0, u1 in units]
    toks = [[] for _ in units]
    for t, k in zip(scores.tokens, index):
        toks[k].append(t)
    return pd.DataFrame({"word": np.arange(len(units)),
                         "text": [scores.text[a:b] for a, b in units],
                         "start": [a for a, _ in units], "end": [b for _, b in units],
                         "n_tokens": n_tok, "n_words": n_words,
                         "tokens": ["|".join(t) for t in toks], "surprisal": s, "logprob": -s})
