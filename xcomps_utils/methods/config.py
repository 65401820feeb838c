"""The declarations every entry point shares: methods, dtypes, executors, data sources, and the
declared (pydantic) types of run parameters and sweep files.

The methods are objects, one module each, registered in :mod:`xcomps_utils.methods.registry`
(``METHODS`` here is that registry); adding a dtype is one edit here, :data:`DTYPES`. The command
line's choices (:mod:`xcomps_utils.runs.cli`), the sweep file's checks
(:mod:`xcomps_utils.runs.sweep`), the run key's columns and the shard sizes
(:mod:`xcomps_utils.runs.planner`) all read them from here.

Every check raises :class:`Invalid` (``<field>: <problem>; allowed: <values>``, with a
did-you-mean for a near miss); :func:`validate` turns pydantic's errors back into that one line,
prefixed with the file it came from.
"""

from __future__ import annotations

import numbers
from typing import Annotated, Any

from pydantic import BeforeValidator, model_validator

from ..errors import did_you_mean
from ..lm.precision import DTYPES
from .base import Invalid, Method, Strict, nested, validate  # noqa: F401 (re-exported)
from .meta import BmlamaMetaTemplate, MetaTemplate  # noqa: F401 (re-exported)

__all__ = ["Method", "DTYPES", "EXECUTORS", "SOURCES", "bos_policies", "Invalid",
           "validate", "nested", "integer", "number", "typed", "choice", "names", "RunParameters", "Ray", "Languages", "Tasks",
           "pair_set", "pair_sets", "MetaTemplate", "BmlamaMetaTemplate"]


def __getattr__(name):
    """``METHODS``: the registry (:data:`xcomps_utils.methods.registry.METHODS`), imported when
    first asked for (so that the method modules, which the registry imports, load first)."""
    if name == "METHODS":
        from .registry import METHODS

        return METHODS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _method_names() -> tuple[str, ...]:
    from .registry import METHODS

    return tuple(METHODS)


#: Where a sweep's shards are computed.
EXECUTORS = ("auto", "ray", "local")
#: XCOMPS data: the project's sample or the pinned upstream files.
SOURCES = ("sample", "upstream")


def bos_policies() -> tuple[str, ...]:
    """Direct's first-token conventions (:data:`xcomps_utils.lm.encoding.BOS_POLICIES`)."""
    from ..lm.encoding import BOS_POLICIES

    return tuple(BOS_POLICIES)


# --- reusable declared types ---------------------------------------------------------------------

def integer(low: int, none: bool = False) -> BeforeValidator:
    """An integer >= ``low`` (not a bool; ``None`` too when ``none``)."""
    def check(v):
        if v is None and none:
            return None
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low:
            raise Invalid(f"{v!r} is not an integer >= {low}",
                          f"an integer >= {low}" + (" or null" if none else ""))
        return int(v)
    return BeforeValidator(check)


def number(low: float, auto: bool = False) -> BeforeValidator:
    """A number >= ``low`` (not a bool; ``"auto"`` too when ``auto``)."""
    def check(v):
        if auto and v == "auto":
            return v
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < low:
            raise Invalid(f"{v!r} is not a number >= {low:g}",
                          ("auto or " if auto else "") + f"a number >= {low:g}")
        return v
    return BeforeValidator(check)


def choice(allowed) -> BeforeValidator:
    """A value out of ``allowed`` (a sequence, or a function returning one)."""
    def check(v):
        values = allowed() if callable(allowed) else allowed
        if v not in values:
            raise Invalid(f"{v!r} is not allowed", ", ".join(map(str, values)))
        return v
    return BeforeValidator(check)


def names(allowed=None) -> BeforeValidator:
    """A non-empty list of names (a single name accepted), each once; each out of ``allowed``
    (a sequence, or a function returning one) when given."""
    def check(v):
        values = allowed() if callable(allowed) else allowed
        v = [v] if isinstance(v, str) else list(v) if isinstance(v, tuple) else v
        if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
            raise Invalid(f"{v!r} is not a non-empty list of names",
                          ", ".join(values) if values else "a list of strings")
        for i, x in enumerate(v):
            if values is not None and x not in values:
                close = did_you_mean(x, values)
                raise Invalid(f"unknown value {x!r}" + (f" ({close})" if close else ""),
                              ", ".join(values), f"[{i}]")
        return list(dict.fromkeys(v))
    return BeforeValidator(check)


def typed(kind, what: str, allowed: str, none: bool = False) -> BeforeValidator:
    """A non-empty value of ``kind`` (``None`` too when ``none``); ``what`` and ``allowed`` in
    words for the message."""
    def check(v):
        if not (isinstance(v, kind) and v != "") and not (none and v is None):
            raise Invalid(f"{v!r} is not {what}", allowed)
        return v
    return BeforeValidator(check)


def device_name(v):
    """A device as a sweep file or the command line names it: ``auto``, ``cpu``, ``mps``,
    ``cuda`` or ``cuda:N`` (whether this machine has it is checked before a model loads)."""
    import re

    if not isinstance(v, str) or not re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?", v):
        raise Invalid(f"{v!r} is not a device", "auto, cpu, cuda, cuda:N, mps")
    return v


def _budget(v):
    return v if v == "auto" else integer(1, none=True).func(v)


def _wordings(v):
    return v if v == "all" else names().func(v)


def _probe_by(v):
    if not isinstance(v, (list, tuple)) or not all(
            isinstance(b, (list, tuple)) and all(isinstance(c, str) for c in b) for b in v):
        raise Invalid(f"{v!r} is not a list of lists of column names",
                      "a list of lists of pair columns (Neuro probe groups)")
    return [list(b) for b in v]


class RunParameters(Strict):
    """The method parameters of a run (as :func:`xcomps_utils.runs.execute.run` takes them)."""

    bos_policy: Annotated[str, choice(bos_policies)] = "bos"
    token_budget: Annotated[Any, BeforeValidator(_budget)] = "auto"
    batch_size: Annotated[int | None, integer(1, none=True)] = None
    use_chat_template: Annotated[bool, choice((True, False))] = False
    wordings: Annotated[Any, BeforeValidator(_wordings)] = "all"
    probe_by: Annotated[list, BeforeValidator(_probe_by)] = [["lang", "subset"], ["lang"]]
    n_splits: Annotated[int, integer(2)] = 5
    inner_splits: Annotated[int, integer(2)] = 3
    seed: Annotated[int, integer(-2**31)] = 0


def _shard_size(v):
    from .registry import METHODS

    if isinstance(v, dict):
        for m in v:
            if m not in METHODS:
                close = did_you_mean(m, METHODS)
                raise Invalid("unknown field" + (f" ({close})" if close else ""),
                              ", ".join(METHODS), str(m))
        for m, n in v.items():
            try:
                integer(1).func(n)
            except Invalid as err:
                err.field = m
                raise
        return dict(v)
    return integer(1, none=True).func(v)


ShardSize = Annotated[Any, BeforeValidator(_shard_size)]


# --- sweep files (the rest of a sweep file: xcomps_utils.runs.sweep.Sweep) ---------------------------

class Ray(Strict):
    """The ``ray`` mapping of a sweep file."""

    address: Annotated[Any, typed(str, "an address", "null (a local Ray, or the one this "
                                    "process already joined), auto, or ray://host:port",
                                    none=True)] = None
    replicas: Annotated[Any, BeforeValidator(lambda v: v if v == "auto" else integer(1).func(v))
                        ] = "auto"
    num_gpus: Annotated[Any, number(0, auto=True)] = "auto"
    num_cpus: Annotated[float, number(0)] = 1
    probe_cpus: Annotated[float, number(0)] = 1
    max_retries: Annotated[int, integer(0)] = 3


def _languages_of(source):
    from ..pairs import xcomps as X

    return X.SAMPLE_LANGUAGES if source == "sample" else ["en"] + list(X.XCOMPS_LANGUAGES)


class Languages(Strict):
    """A pair set of XCOMPS languages."""

    languages: Annotated[list, names()]
    source: Annotated[str, choice(SOURCES)] = "sample"
    items_per_language: Annotated[int | None, integer(1, none=True)] = None
    methods: Annotated[list | None, names(_method_names)] = None

    @model_validator(mode="after")
    def _in_data(self):
        try:
            names(_languages_of(self.source)).func(self.languages)
        except Invalid as err:
            raise Invalid(err.problem, err.allowed, "languages" + err.field) from None
        return self


class Tasks(Strict):
    """A pair set of minimal-pair tasks (``xcomps:<lang>`` among them)."""

    tasks: Annotated[list, names()]
    n_pairs: Annotated[int | None, integer(1, none=True)] = None
    methods: Annotated[list | None, names(_method_names)] = None

    @model_validator(mode="after")
    def _in_data(self):
        from ..pairs import data as D, tasks as T

        for j, name in enumerate(self.tasks):
            try:
                T.get(name)
            except D.DataError as err:
                raise Invalid(str(err), field=f"tasks[{j}]") from None
        return self


def pair_set(e):
    """One entry of a sweep's ``data``: :class:`Languages` or :class:`Tasks`."""
    if not isinstance(e, dict) or ("languages" in e) == ("tasks" in e):
        raise Invalid("each pair set has either 'languages' (XCOMPS) or 'tasks'",
                        "{languages: [en, de], source: sample, items_per_language: 10} or "
                        "{tasks: [blimp_anaphor], n_pairs: 200}")
    return nested(Languages if "languages" in e else Tasks, e)


def pair_sets(v):
    """A sweep's ``data``: a non-empty list of pair sets."""
    if not isinstance(v, list) or not v:
        raise Invalid(f"{v!r} is not a non-empty list of pair sets",
                        "a list of pair sets: {languages: [...]} or {tasks: [...]}")
    return v
