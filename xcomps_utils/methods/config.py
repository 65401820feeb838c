"""The declarations every entry point shares: methods, dtypes, executors, data sources, and the
declared (pydantic) types of run parameters and sweep files.

Adding a method or a dtype is one edit here: :data:`METHODS` (name, default shard size, the pair
columns the method reads, the pairs it needs) or :data:`DTYPES`. The command line's choices
(:mod:`xcomps_utils.runs.cli`), the sweep file's checks (:mod:`xcomps_utils.runs.sweep`), the run key's
columns and the shard sizes (:mod:`xcomps_utils.runs.planner`) all read them from here.

Every check raises :class:`Invalid` (``<field>: <problem>; allowed: <values>``, with a
did-you-mean for a near miss); :func:`validate` turns pydantic's errors back into that one line,
prefixed with the file it came from.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, model_validator

from ..errors import did_you_mean, XcompsError
from ..lm.precision import DTYPES

__all__ = ["Method", "METHODS", "DTYPES", "EXECUTORS", "SOURCES", "bos_policies", "Invalid",
           "validate", "nested", "integer", "number", "typed", "choice", "names", "RunParameters", "Ray", "Languages", "Tasks",
           "pair_set", "pair_sets", "MetaTemplate", "BmlamaMetaTemplate"]


@dataclass(frozen=True)
class Method:
    """One method's declaration.

    Attributes:
        shard_size: default pairs per shard (the unit of resuming).
        uses: the pair columns it reads beyond the identifiers (they enter the run key's
            ``pairs_sha256``, in this order).
        needs: ``"xcomps"`` (XCOMPS pairs, or the tasks of ``task_prefixes``), ``"tasks"`` (not
            XCOMPS) or ``""``.
        why: the reason for ``needs``, in words (for the error message).
        task_prefixes: with ``needs="xcomps"``, the registry's task names (by prefix) whose
            pairs it also runs on (the command line's ``--task``, a sweep's ``tasks``).
        parameters: the :class:`RunParameters` fields that enter its run key.
        fingerprints: ``(key, "module:function")``: a function of the package returning the
            SHA-256 of a file the method reads (prompt templates), entered into the key.
        protocol: fixed descriptions of what it computes, entered into the key (a new protocol,
            new runs).
        bos_policy: whether it follows the run's ``bos_policy`` (else always ``"bos"``).
        pair_fingerprints: ``(column, key, "module:function")``: like ``fingerprints``, entered
            into the key only for pairs that have ``column`` (a file only those pairs read:
            Meta's BMLAMA templates), so the keys of other pairs stay what they were.
        version: its computation version, the package version at which its numbers last
            changed. It enters the run key (under the key's historical name
            ``package_version``), not the package's own version: a release that leaves a
            method's numbers as they were keeps its runs, so a shipped results store survives
            it. A change that moves a method's numbers sets this to the new package version (new
            run ids; the old runs stay in the store, unread) and says so in its commit.
    """

    shard_size: int
    uses: tuple[str, ...]
    needs: str = ""
    why: str = ""
    parameters: tuple[str, ...] = ()
    fingerprints: tuple[tuple[str, str], ...] = ()
    protocol: tuple[tuple[str, str], ...] = ()
    bos_policy: bool = False
    pair_fingerprints: tuple[tuple[str, str, str], ...] = ()
    version: str = "0.3.0"
    task_prefixes: tuple[str, ...] = ("xcomps:",)


#: The methods (the computation of one shard of each is ``xcomps_utils.runs.execute.SHARD[name]``).
METHODS: dict[str, Method] = {
    "direct": Method(1000, ("good", "bad"), bos_policy=True),
    # XCOMPS pairs read the first seven columns, BMLAMA pairs good, bad and the last four
    # (a column the pairs lack is not in the key: XCOMPS keys are what they were)
    "meta": Method(500, ("good", "bad", "property_phrase", "acceptable_concept",
                         "unacceptable_concept", "prefix_acceptable", "prefix_unacceptable",
                         "prompt", "gold", "candidate", "candidates"),
                   "xcomps", "Meta needs XCOMPS or BMLAMA pairs (its question names a "
                             "concept's property or a fact's candidates)",
                   task_prefixes=("xcomps:", "bmlama17:", "bmlama53:"),
                   parameters=("use_chat_template",),
                   fingerprints=(("templates_sha256", "xcomps_utils.methods.meta:meta_templates_sha256"),),
                   pair_fingerprints=(("candidates", "bmlama_templates_sha256",
                                       "xcomps_utils.methods.meta:bmlama_meta_templates_sha256"),)),
    # BMLAMA pairs add prompt and distractor_true (the probe's item, the pairs left out; see
    # xcomps_utils.runs.execute.probes); other pairs lack them, so their keys are what they were
    "neuro": Method(1000, ("good", "bad", "property", "acceptable_concept",
                           "unacceptable_concept", "prompt", "distractor_true"),
                    parameters=("probe_by", "n_splits", "inner_splits", "seed"),
                    protocol=(("protocol", "item-whole concept-disjoint folds (training purged of "
                                           "test concepts), nested layer choice, standardised ridge "
                                           "probe (closed form), label-permutation null (199, "
                                           "nested procedure rerun, per language, joint max-T)"),
                              ("layers", "embedding + every block, last after the final norm"))),
    "token_ppl": Method(50, ("good", "bad", "good_pivots", "bad_pivots"), "tasks",
                        "token-level perplexity has no prompt wordings for XCOMPS yet",
                        parameters=("wordings",),
                        fingerprints=(("wordings_sha256", "xcomps_utils.methods.perplexity:wordings_sha256"),)),
}
#: Where a sweep's shards are computed.
EXECUTORS = ("auto", "ray", "local")
#: XCOMPS data: the project's sample or the pinned upstream files.
SOURCES = ("sample", "upstream")


def bos_policies() -> tuple[str, ...]:
    """Direct's first-token conventions (:data:`xcomps_utils.lm.encoding.BOS_POLICIES`)."""
    from ..lm.encoding import BOS_POLICIES

    return tuple(BOS_POLICIES)


class Invalid(XcompsError, ValueError):
    """One invalid field: ``field`` (a path such as ``data[0].languages[1]``; ``""``: the field
    the validator belongs to), ``problem`` and ``allowed`` (in words)."""

    def __init__(self, problem: str, allowed: str | None = None, field: str = ""):
        self.problem, self.allowed, self.field = problem, allowed, field
        super().__init__(f"{problem}" + (f"; allowed: {allowed}" if allowed else ""))


def _join(path: str, part) -> str:
    """``data`` + 0 -> ``data[0]``; ``data[0]`` + ``languages`` -> ``data[0].languages``."""
    part = f"[{part}]" if isinstance(part, int) else str(part)
    return path + part if not path or not part or part.startswith("[") else f"{path}.{part}"


def _first(err: ValidationError) -> Invalid:
    """The first error of a pydantic validation as one :class:`Invalid` (with its path)."""
    e = err.errors()[0]
    path = ""
    for part in e["loc"]:
        path = _join(path, part)
    cause = (e.get("ctx") or {}).get("error")
    if isinstance(cause, Invalid):
        return Invalid(cause.problem, cause.allowed, _join(path, cause.field))
    if e["type"] == "missing":
        return Invalid("missing (required)", None, path)
    return Invalid(e["msg"].removeprefix("Value error, "), None, path)


def validate(model: type[BaseModel], raw: Any, file: str, error=ValueError) -> BaseModel:
    """``model.model_validate(raw)``, its first error raised as ``error("<file>: <field>:
    <problem>; allowed: <values>")``."""
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        bad = _first(err)
        raise error(f"{file}: {bad.field or '(top level)'}: {bad}") from None


def nested(model: type[BaseModel], raw: Any) -> BaseModel:
    """``model.model_validate(raw)`` inside another model's validator (its error as
    :class:`Invalid`, path kept)."""
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        raise _first(err) from None


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


class Strict(BaseModel):
    """A mapping of declared fields: an unknown field is named, with a did-you-mean."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    @model_validator(mode="before")
    @classmethod
    def _known(cls, raw):
        if not isinstance(raw, dict):
            raise Invalid(f"{raw!r} is not a mapping", ", ".join(cls.model_fields))
        own = [f for f in cls.__dict__.get("__annotations__", {}) if f in cls.model_fields]
        known = list(dict.fromkeys(own + list(cls.model_fields)))  # its own fields first
        for k in raw:
            if k not in cls.model_fields:
                close = did_you_mean(k, known)
                raise Invalid("unknown field" + (f" ({close})" if close else ""),
                              ", ".join(known), str(k))
        return raw


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
    methods: Annotated[list | None, names(tuple(METHODS))] = None

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
    methods: Annotated[list | None, names(tuple(METHODS))] = None

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


# --- Meta templates (data/meta_templates.json) ---------------------------------

def _text(v):
    if not isinstance(v, str):
        raise Invalid(f"expected str, got {type(v).__name__}")
    if not v.strip():
        raise Invalid("empty")
    return v


def _of(kind):
    def check(v):
        if not isinstance(v, kind):
            raise Invalid(f"expected {kind.__name__}, got {type(v).__name__}")
        return v
    return BeforeValidator(check)


Text = Annotated[str, BeforeValidator(_text)]


class MetaTemplate(BaseModel):
    """One language's metalinguistic prompt template (see
    :func:`xcomps_utils.methods.meta.load_meta_templates` for the fields' meaning); the loader's rules
    (placeholders, braces, lowercasing) run after these types."""

    question: Text
    answer: Text
    space: Annotated[bool, _of(bool)]
    determiners: Annotated[list, _of(list)]
    lowercase: Text
    lowercase_map: Annotated[dict, _of(dict)]
    options: Text
    source: Text
    review: Text

    @model_validator(mode="before")
    @classmethod
    def _fields(cls, t):
        fields = list(cls.model_fields)
        if not isinstance(t, dict):
            raise Invalid(f"expected an object, got {type(t).__name__}")
        for f in fields:
            if f not in t:
                raise Invalid(f"missing field {f!r} (required: {fields})")
        extra = sorted(set(t) - set(fields))
        if extra:
            raise Invalid(f"unknown field(s) {extra} (allowed: {fields})")
        return t


# --- Meta templates for BMLAMA (data/bmlama_meta_templates.json) -------------------------------

class BmlamaMetaTemplate(Strict):
    """One language's Meta template for BMLAMA facts (see
    :func:`xcomps_utils.methods.meta.load_bmlama_meta_templates`); the loader checks the placeholders
    after these types."""

    question: Text
    answer: Text
    space: Annotated[bool, _of(bool)]
    separator: Annotated[str, _of(str)]
    blank: Text
    source: Text
    review: Text
