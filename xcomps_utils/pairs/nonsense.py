"""The nonsense-word control task: lists of pronounceable pseudo-words, one with a real word.

Each item is a list of ``words_per_list`` pseudo-words (``good``: "only invented words") and the
same list with one position replaced by a common English noun (``bad``: "contains a real word").
The pivotal words are the real word and the pseudo-word it replaces. Pseudo-words are built from
consonant-vowel syllables by a seeded NumPy generator, so the same seed always gives the same
items; the syllable inventory and the real-word list are the project's own.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..declare import at_least, check, Size
from .data import PAIR_COLUMNS

__all__ = ["REAL_WORDS", "pseudo_word", "generate_nonsense"]

_ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
           "bl", "br", "dr", "fl", "gl", "gr", "kl", "pl", "pr", "sk", "sl", "sp", "st", "tr"]
_VOWELS = ["a", "e", "i", "o", "u"]
_CODAS = ["", "", "", "l", "m", "n", "r", "s", "k"]

REAL_WORDS = [
    "apple", "table", "window", "garden", "river", "pencil", "bottle", "doctor", "forest",
    "candle", "mirror", "basket", "ladder", "rabbit", "hammer", "blanket", "kitchen", "button",
    "pillow", "island", "castle", "pocket", "ticket", "carpet", "planet", "bridge", "spoon",
    "chair", "horse", "cloud", "bread", "glass", "train", "stone", "flower", "market", "jacket",
    "monkey", "letter", "camera", "engine", "farmer", "finger", "orange", "pepper", "silver",
    "winter", "violin", "wallet", "tomato",
]


def pseudo_word(rng: np.random.Generator, syllables: int = 2) -> str:
    """One pronounceable pseudo-word of ``syllables`` (onset + vowel) syllables and a coda."""
    parts = [rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)]
    return "".join(parts) + rng.choice(_CODAS)


_AT_LEAST_2 = at_least(2)


def generate_nonsense(n: int = 250, words_per_list: int = 6, seed: int = 0) -> pd.DataFrame:
    """``n`` nonsense minimal pairs in the project's pair schema (dataset ``nonsense``).

    ``good`` lists invented words only; ``bad`` has a real word at one position. Pseudo-words are
    unique within a list and never equal a word of :data:`REAL_WORDS`.

    Raises:
        ParameterError: ``n < 1`` or ``words_per_list < 2``.
    """
    n, words_per_list = check(Size, n, "n"), check(_AT_LEAST_2, words_per_list, "words_per_list")
    rng = np.random.default_rng(seed)
    real = set(REAL_WORDS)
    rows = []
    for i in range(n):
        words: list[str] = []
        while len(words) < words_per_list:
            w = pseudo_word(rng, syllables=int(rng.integers(2, 4)))
            if w not in real and w not in words:
                words.append(w)
        k = int(rng.integers(words_per_list))
        word = str(rng.choice(REAL_WORDS))
        with_real = words[:k] + [word] + words[k + 1:]
        good, bad = " ".join(words), " ".join(with_real)
        start = len(" ".join(words[:k])) + (1 if k else 0)
        rows.append({
            "pair_id": str(i), "dataset": "nonsense", "subset": "pseudo-words", "good": good,
            "bad": bad, "good_pivots": [[start, start + len(words[k])]],
            "bad_pivots": [[start, start + len(word)]], "identical": False, "duplicate": False,
            "source_row": i + 1,
            "extra": json.dumps({"real_word": word, "position": k, "seed": seed}),
        })
    return pd.DataFrame(rows)[PAIR_COLUMNS]
