"""Checking a chapter's parameters on entry, so a wrong value fails with the parameter's name.

papermill passes ``-p n_pairs abc`` as the string ``"abc"``; without a check it would fail deep
inside a sampler with an error that names no parameter.

A kind that names a declaration of :mod:`xcomps_utils.methods.config` (``"dtype"``, ``"source"``,
``"bos_policy"``) takes its allowed values from there, so a chapter never types a list the
package declares.
"""

from __future__ import annotations

import functools
from typing import Annotated, Literal

from annotated_types import Ge, MinLen
from pydantic import Strict, StringConstraints, TypeAdapter, ValidationError

from ..methods.config import DTYPES, SOURCES, bos_policies

__all__ = ["ParameterError", "check", "check_range", "check_choice"]


class ParameterError(ValueError):
    """A chapter parameter has a value of the wrong kind; the message names it."""


def _declared() -> dict[str, tuple[str, ...]]:
    """The kinds whose values :mod:`xcomps_utils.methods.config` declares."""
    return {"dtype": DTYPES, "source": SOURCES, "bos_policy": bos_policies()}


def _choices(kind: str) -> tuple[str, ...] | None:
    if kind.startswith("choice:"):
        return tuple(kind[7:].split(","))
    return _declared().get(kind)


@functools.lru_cache(maxsize=None)
def _adapter(kind: str) -> TypeAdapter:
    """The declared (pydantic, strict) type of a parameter kind."""
    text = Annotated[str, StringConstraints(min_length=1)]
    if kind.startswith("int>="):
        return TypeAdapter(Annotated[int, Strict(), Ge(int(kind[5:]))])
    if _choices(kind) is not None:
        return TypeAdapter(Literal[_choices(kind)])
    types = {"None": None, "int": Annotated[int, Strict()], "str": Annotated[text, Strict()],
             "bool": Annotated[bool, Strict()],
             "list[str]": Annotated[list[Annotated[text, Strict()]] | tuple[Annotated[
                 text, Strict()], ...], MinLen(1)],
             "budget": Literal["auto"] | None | Annotated[int, Strict(), Ge(1)],
             "device": Annotated[str, Strict(), StringConstraints(
                 pattern=r"^(auto|cpu|mps|cuda(:\d+)?)$")]}
    if kind not in types:
        raise ValueError(f"unknown parameter kind {kind!r}")
    return TypeAdapter(types[kind])


def _ok(value, kind: str) -> bool:
    try:
        _adapter(kind).validate_python(value, strict=True)
    except ValidationError:
        return False
    return True


_WORDS = {"None": "None", "str": "a non-empty string", "bool": "True or False",
          "list[str]": "a non-empty list of strings, e.g. ['en', 'de']",
          "budget": "'auto', None or an integer >= 1", "int": "an integer",
          "device": "a device: 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'"}


def _describe(kind: str) -> str:
    if kind.startswith("int>="):
        return f"an integer >= {kind[5:]}"
    if _choices(kind) is not None:
        return "one of " + ", ".join(repr(c) for c in _choices(kind))
    return _WORDS[kind]


def check(values: dict, **kinds: str) -> None:
    """Check parameters against their kinds.

    Each kind is a declared (pydantic, strict) type. Kinds: ``"int"``, ``"int>=N"``, ``"str"``,
    ``"bool"``, ``"list[str]"``, ``"budget"`` (a token budget), ``"device"`` (``auto``, ``cpu``,
    ``cuda``, ``cuda:N``, ``mps``), ``"choice:a,b"`` (a chapter's own
    choices), ``"dtype"``, ``"source"`` and ``"bos_policy"`` (the values :mod:`xcomps_utils.methods.config`
    declares); alternatives joined by ``|`` (``"int>=1|None"``).

    A single string given for ``"list[str]"`` (papermill's ``-p languages en``) is an error
    that shows the list form (``-y '{languages: [en]}'``), so no chapter iterates its letters.

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
            hint = (f"; pass a list: -y '{{{name}: [{value}]}}'" if isinstance(value, str)
                    and "list[str]" in alternatives else "")
            raise ParameterError(f"parameter {name!r} must be "
                                 f"{' or '.join(_describe(k) for k in alternatives)}, got "
                                 f"{value!r} ({type(value).__name__}){hint}")


def check_range(values: dict, name: str, low: int, high: int, what: str = "") -> None:
    """Check that an integer parameter lies in ``[low, high]`` (e.g. an index into a table
    whose length is only known once it is loaded).

    Args:
        what: what the range is, for the message (``"the task 'dust' has 2,123 pairs"``).

    Raises:
        ParameterError: not an integer, or out of range, e.g. ``parameter 'pair_index' must be
            an integer from 0 to 999 (the task 'blimp_anaphor' has 1,000 pairs), got 1000000000``.
    """
    check(values, **{name: "int"})
    value = values[name]
    if not low <= value <= high:
        why = f" ({what})" if what else ""
        raise ParameterError(f"parameter {name!r} must be an integer from {low} to {high}{why}, "
                             f"got {value!r}")


def check_choice(values: dict, name: str, allowed, what: str = "") -> None:
    """Check that a parameter (a string, or each string of a list) is one of ``allowed``, values
    only known once something is loaded (a task's wordings, a source's languages).

    Args:
        what: where the values come from, for the message (``"the wordings of 'blimp'"``).

    Raises:
        ParameterError: e.g. ``parameter 'wording' must be one of 'grammatical', 'specified'
            (the wordings of 'blimp'), got 'nope'``.
    """
    value, allowed = values[name], list(allowed)
    given = value if isinstance(value, (list, tuple)) else [value]
    unknown = [v for v in given if v not in allowed]
    if unknown:
        why = f" ({what})" if what else ""
        raise ParameterError(f"parameter {name!r} must be {'each ' * (given is value)}one of "
                             f"{', '.join(map(repr, allowed))}{why}, got {value!r}")
