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


class InputError(XcompsError, ValueError):
    """Input the package cannot use (pairs, texts, a table, a folder it was given, arguments
    that do not go together); a parameter's value is :class:`xcomps_utils.declare.ParameterError`."""


class InputTypeError(XcompsError, TypeError):
    """An argument of the wrong kind (not a DataFrame, not a loaded model, not a setting)."""


class NotFound(XcompsError, KeyError):
    """A name looked up that is not there (a run, a column, a stored detail); the message says
    what there is. ``str()`` is the message (not ``KeyError``'s quoted repr)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class NumericalError(XcompsError, FloatingPointError):
    """A computation that gave a number it must not (an overflow, a non-finite value)."""


def did_you_mean(word, choices, n: int = 1, cutoff: float = 0.6) -> str:
    """``"did you mean 'deu'?"`` (or ``"did you mean 'a', 'b'?"`` for ``n > 1``): the closest of
    ``choices`` to ``word`` by :func:`difflib.get_close_matches`; ``""`` when none is close.

    >>> did_you_mean("direkt", ["direct", "meta"])
    "did you mean 'direct'?"
    """
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=n, cutoff=cutoff)
    return f"did you mean {', '.join(map(repr, close))}?" if close else ""
