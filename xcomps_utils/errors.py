"""The package's one error base and its one did-you-mean.

Every error the package raises on purpose derives from :class:`XcompsError` (and from the
built-in class a caller would expect: ``ValueError`` for bad input, ``RuntimeError`` for a
damaged store), so a front end tells the package's own errors — whose messages say what is wrong
and what to do — from a bug's (``xcomps-study`` prints the former in one line).
"""

from __future__ import annotations

import difflib


class XcompsError(Exception):
    """Base of the package's errors: the message names the file, row, field or parameter and
    says what to do."""


def did_you_mean(word, choices, n: int = 1, cutoff: float = 0.6) -> str:
    """``"did you mean 'deu'?"`` (or ``"did you mean 'a', 'b'?"`` for ``n > 1``): the closest of
    ``choices`` to ``word`` by :func:`difflib.get_close_matches`; ``""`` when none is close.

    >>> did_you_mean("direkt", ["direct", "meta"])
    "did you mean 'direct'?"
    """
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=n, cutoff=cutoff)
    return f"did you mean {', '.join(map(repr, close))}?" if close else ""
