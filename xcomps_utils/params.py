"""Checking a chapter's parameters on entry, so a wrong value fails with the parameter's name.

papermill passes ``-p n_pairs abc`` as the string ``"abc"``; without a check it would fail deep
inside a sampler with an error that names no parameter.
"""

from __future__ import annotations

__all__ = ["ParameterError", "check"]


class ParameterError(ValueError):
    """A chapter parameter has a value of the wrong kind; the message names it."""


def _ok(value, kind: str) -> bool:
    if kind == "None":
        return value is None
    if kind.startswith("int"):
        if isinstance(value, bool) or not isinstance(value, int):
            return False
        return value >= int(kind[5:]) if kind.startswith("int>=") else True
    if kind == "str":
        return isinstance(value, str) and bool(value)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "list[str]":
        return isinstance(value, (list, tuple)) and bool(value) and all(
            isinstance(v, str) and v for v in value)
    if kind == "budget":
        return value == "auto" or value is None or _ok(value, "int>=1")
    if kind.startswith("choice:"):
        return value in kind[7:].split(",")
    raise ValueError(f"unknown parameter kind {kind!r}")


_WORDS = {"None": "None", "str": "a non-empty string", "bool": "True or False",
          "list[str]": "a non-empty list of strings, e.g. ['en', 'de']",
          "budget": "'auto', None or an integer >= 1", "int": "an integer"}


def _describe(kind: str) -> str:
    if kind.startswith("int>="):
        return f"an integer >= {kind[5:]}"
    if kind.startswith("choice:"):
        return "one of " + ", ".join(repr(c) for c in kind[7:].split(","))
    return _WORDS[kind]


def check(values: dict, **kinds: str) -> None:
    """Check parameters against their kinds.

    Kinds: ``"int"``, ``"int>=N"``, ``"str"``, ``"bool"``, ``"list[str]"``, ``"budget"`` (a token
    budget), ``"choice:a,b"``; alternatives joined by ``|`` (``"int>=1|None"``).

    Args:
        values: where the parameters live (a chapter passes ``globals()``).

    Raises:
        ParameterError: the first parameter whose value is of none of its kinds, e.g.
            ``parameter 'n_pairs' must be an integer >= 1 or None, got 'abc' (str)``.
    """
    for name, kind in kinds.items():
        if name not in values:
            raise ParameterError(f"parameter {name!r} is not set")
        value = values[name]
        alternatives = kind.split("|")
        if not any(_ok(value, k) for k in alternatives):
            raise ParameterError(f"parameter {name!r} must be "
                                 f"{' or '.join(_describe(k) for k in alternatives)}, got "
                                 f"{value!r} ({type(value).__name__})")
