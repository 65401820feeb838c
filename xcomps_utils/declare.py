"""The parameters every entry point shares, declared once, and the one form of a parameter error.

Each shared parameter is an ``Annotated`` pydantic type here: the seed, the token budget, the
device, the dtype, a model, a name and a list of names, the XCOMPS source, the BOS policy,
sizes (``n_pairs``, ``n_boot``, ... : :func:`at_least`). These types are the only types of the
run parameters (:class:`xcomps_utils.methods.config.RunParameters`, what
:func:`xcomps_utils.runs.execute.run` takes), of the sweep files (:mod:`xcomps_utils.runs.sweep`),
of the chapters' declared parameters (:mod:`xcomps_utils.pages.params`) and of the command
line's options (:mod:`xcomps_utils.runs.cli`, through :func:`check`); a type that needs a
registry (task names, methods, XCOMPS languages) is built in the layer that holds the registry
from these (``Names`` and a validator raising :class:`ParameterError`). The layers below
(:mod:`xcomps_utils.lm`, :mod:`xcomps_utils.methods`) call :func:`check` where they are entered
directly and otherwise trust what these types checked.

A value these types refuse raises :class:`ParameterError`, one line in one form (sklearn's):
which parameter, what it must be, what it got, what to do::

    the 'seed' parameter must be an integer from 0 to 4294967295; got -5
    sweeps/a.yaml: the 'data[0].tasks[1]' parameter must be a task name (`xcomps-study tasks`
        lists them); got 'blimp_anaphr'; did you mean 'blimp_anaphor'?

:func:`validate` (a model) and :func:`check` (one value) turn pydantic's errors into it: what a
value must be is read from the type's JSON schema (its ``must`` entry where the words are
declared, else its bounds, choices and kinds).

The seed is an integer from 0 to 2**32 - 1: what numpy's ``RandomState``, pandas' ``sample`` and
scikit-learn's ``random_state`` accept (a negative seed means nothing to them; numpy refuses it).
"""

from __future__ import annotations

import copy
import numbers
from typing import Annotated, Any, Literal

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict,
                      StringConstraints, TypeAdapter, ValidationError)

from .errors import did_you_mean, XcompsError

__all__ = ["ParameterError", "ParameterTypeError", "MISSING", "validate", "check", "words",
           "Declared", "out_of", "among", "DTYPES", "DTYPE_ALIASES", "SOURCES", "BOS_POLICIES",
           "SEED_MAX", "Seed", "TokenBudget", "Device", "Dtype", "Model", "Models", "Text", "Name", "Names",
           "Source", "BosPolicy", "Flag", "Size", "SampleSize", "BatchSize", "at_least", "Folds",
           "Wordings", "ProbeBy", "Number"]

#: Model dtypes a run may ask for (``auto``: bfloat16 on CUDA, float32 on CPU).
DTYPES = ("auto", "float32", "bfloat16", "float16")
#: Short names accepted for :data:`DTYPES` (turned into the long name when checked).
DTYPE_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
#: XCOMPS data: the project's sample or the pinned upstream files.
SOURCES = ("sample", "upstream")
#: Direct's first-token conventions (:mod:`xcomps_utils.lm.encoding` applies them).
BOS_POLICIES = {
    "bos": "BOS (EOS if none) prepended; every token of the text scored",
    "drop_first": "no BOS; first token is context only (minicons default)",
    "lm_eval": "BOS (EOS if none) then ' ' + text; every token scored (lm-eval default)",
}
#: The largest seed (numpy's RandomState, pandas and scikit-learn take 0 to 2**32 - 1).
SEED_MAX = 2**32 - 1


# --- the one error ---------------------------------------------------------------------------------

#: The ``got`` of a parameter that was not given (``"...; it is missing"``).
MISSING = object()
_UNSET = object()  # no value to show


class ParameterError(XcompsError, ValueError):
    """A parameter (or a declared field of a file) with a value it must not have, in one line::

        [<where>: ]the '<name>' parameter must be <must>; got <value>[; <hint>]
        [<where>: ]'<name>' is not a parameter (the parameters: a, b, ...); did you mean 'a'?

    Attributes: ``name`` (a path such as ``data[0].n_pairs``), ``must`` (in words; ``None``:
    no such parameter), ``got`` (the value; :data:`MISSING`: not given; left out: nothing
    shown), ``hint`` (what to do), ``where`` (the file or chapter it was read from), ``kind``
    (``"parameter"``, ``"field"``, ...), ``known`` (with ``must=None``: the names there are, in
    words).
    """

    def __init__(self, name: str, must: str | None, got: Any = _UNSET, hint: str = "",
                 where: str = "", kind: str = "parameter", known: str = ""):
        self.name, self.must, self.got, self.hint = name, must, got, hint
        self.where, self.kind, self.known = where, kind, known
        super().__init__(self.line())

    def line(self) -> str:
        """The message."""
        if self.must is None:
            text = f"{self.name!r} is not a {self.kind}" + (f" ({self.known})" if self.known
                                                             else "")
        else:
            text = f"the {self.name!r} {self.kind} must be {self.must}"
            text += ("; it is missing" if self.got is MISSING else "" if self.got is _UNSET
                     else f"; got {_short(self.got)}")
        return (f"{self.where}: " if self.where else "") + text + (
            f"; {self.hint}" if self.hint else "")

    def __reduce__(self):  # pickled (Ray, multiprocessing) with its fields, not its line
        return _rebuilt, (type(self), self.__dict__)

    def moved(self, where: str | None = None, under: str = "") -> ParameterError:
        """The same error read at ``where`` (default: where it was), its name a path under
        ``under`` (``data[0]`` + ``n_pairs`` -> ``data[0].n_pairs``)."""
        new = copy.copy(self)
        new.name = _join(under, self.name)
        new.where = self.where if where is None else where
        new.args = (new.line(),)
        return new


class ParameterTypeError(ParameterError, TypeError):
    """A :class:`ParameterError` of a value of the wrong kind where callers expect a
    ``TypeError`` (a bare string for a list of texts, a list for a DataFrame)."""


def _rebuilt(cls, fields: dict) -> ParameterError:
    err = cls.__new__(cls)
    err.__dict__.update(fields)
    err.args = (err.line(),)
    return err


def _short(value) -> str:
    """``repr(value)``, cut to 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:76] + " ..."


def _join(path: str, part) -> str:
    """``data`` + 0 -> ``data[0]``; ``data[0]`` + ``languages`` -> ``data[0].languages``;
    ``data`` + ``[1]`` -> ``data[1]``."""
    part = f"[{part}]" if isinstance(part, int) else str(part)
    return path + part if not path or not part or part.startswith("[") else f"{path}.{part}"


def words(schema: dict) -> str:
    """What a JSON schema (of a field or a part of one) allows, in words: its ``must`` entry
    where a type declares one, else from its kinds, bounds and choices."""
    if "must" in schema:
        return schema["must"]
    if "anyOf" in schema:
        return " or ".join(dict.fromkeys(words(s) for s in schema["anyOf"]))
    if "const" in schema:
        return repr(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(map(repr, schema["enum"]))
    kind = schema.get("type")
    if kind == "integer":
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            return f"an integer from {low} to {high}"
        return "an integer" + (f" >= {low}" if low is not None else "")
    if kind == "number":
        low = schema.get("minimum")
        return "a number" + (f" >= {low:g}" if low is not None else "")
    if kind == "string":
        return "a non-empty string" if schema.get("minLength") else "a string"
    if kind == "array":
        items = words(schema.get("items", {}))
        items = " of strings" if items.endswith("string") else f", each {items}"
        return f"{'a non-empty' if schema.get('minItems') else 'a'} list{items}"
    if kind == "object":
        return "a mapping" + (" of " + ", ".join(schema["properties"])
                              if schema.get("properties") else "")
    return {"null": "None", "boolean": "True or False"}.get(kind, "a valid value")


def _at(schema: dict, path: list, root: dict) -> dict:
    """The part of ``schema`` at ``path`` (names and indices), ``$ref``s resolved; ``{}`` if the
    path leaves it."""
    def resolve(node):
        while "$ref" in node:
            node = root.get("$defs", {}).get(node["$ref"].rsplit("/", 1)[-1], {})
        return node

    node = resolve(schema)
    for part in path:
        options = [resolve(o) for o in node.get("anyOf", [node])]
        key = "items" if isinstance(part, int) else "properties"
        found = [o for o in options if key in o]
        if not found:
            return {}
        node = found[0][key] if isinstance(part, int) else found[0][key].get(part, {})
        if isinstance(part, str) and not node and "additionalProperties" in found[0]:
            node = found[0]["additionalProperties"] or {}
        node = resolve(node)
    return node


def _schema(kind) -> dict:
    try:
        return kind.json_schema() if isinstance(kind, TypeAdapter) else kind.model_json_schema()
    except Exception:  # noqa: BLE001 - a type without a JSON schema: its words are generic
        return {}


def _error(err: ValidationError, kind, value, where: str, name: str = "",
           noun: str = "parameter") -> Exception:
    """The first error of a pydantic validation of ``value`` by ``kind`` (a model or a
    :class:`~pydantic.TypeAdapter`) as one :class:`ParameterError` (or the exception a
    validator raised that is not about one parameter, e.g. a data file missing offline)."""
    def walk(e):  # the parts of the location that are keys or indices of the value (not the
        path, got = [], value  # tags pydantic gives the members of a union), and the value there
        for k, part in enumerate(e["loc"]):
            if isinstance(got, dict) and part in got:
                path, got = path + [part], got[part]
            elif isinstance(got, (list, tuple)) and isinstance(part, int) and 0 <= part < len(got):
                path, got = path + [part], got[part]
            elif e["type"] == "missing" and k == len(e["loc"]) - 1:
                path, got = path + [part], MISSING
        return path, got

    # of a union's errors, one a validator raised, else the deepest (the member that got
    # furthest), else the first
    e = max(err.errors(), key=lambda e: (isinstance((e.get("ctx") or {}).get("error"),
                                                    Exception), len(walk(e)[0])))
    path, got = walk(e)
    full = name
    for part in path:
        full = _join(full, part)
    cause = (e.get("ctx") or {}).get("error")
    if isinstance(cause, ParameterError):  # raised by a validator: its path under this one
        moved = cause.moved(where or None, full)
        if not cause.name and cause.got is _UNSET:
            moved.got = got
            moved.args = (moved.line(),)
        return moved
    if isinstance(cause, Exception):
        return cause  # a check of the whole model that met another error: shown as raised
    schema = _schema(kind)
    if e["type"] == "extra_forbidden":
        known = list(_at(schema, path[:-1], schema).get("properties", {}))
        return ParameterError(full, None, hint=did_you_mean(path[-1], known), where=where,
                              kind=noun, known=f"the {noun}s: {', '.join(known) or 'none'}")
    for k in range(len(path)):  # a type that declares its words is named whole
        if "must" in _at(schema, path[:k], schema):
            full, got = name, value
            for part in path[:k]:
                full, got = _join(full, part), got[part]
            path = path[:k]
            break
    must = words(_at(schema, path, schema))
    hint = ""
    if isinstance(got, str) and ("list of strings" in must or must.startswith("a non-empty list")):
        hint = f"pass a list: {got if got.startswith('[') else f'[{got}]'}"
    return ParameterError(full, must, got, hint, where, noun)


def validate(model: type[BaseModel], values: Any, where: str = "", noun: str = "parameter"
             ) -> BaseModel:
    """``model.model_validate(values)``.

    Raises:
        ParameterError: the first invalid value, one line prefixed with ``where`` (a file, a
            chapter), e.g. ``x.yaml: the 'seed' parameter must be an integer from 0 to
            4294967295; got -5``; a name the model does not declare, with a did-you-mean.
        Another error a model-level check raised (e.g. ``DataError``: the data it reads is
        missing), as it was raised.
    """
    try:
        return model.model_validate(values)
    except ValidationError as err:
        raise _error(err, model, values, where, noun=noun) from None


_ADAPTERS: dict[int, tuple[Any, TypeAdapter]] = {}


def check(kind, value, name: str, where: str = ""):
    """``value`` as the declared type ``kind`` (e.g. :data:`Seed`) makes it (a dtype's short
    name becomes its long name, a numpy integer an ``int``).

    Raises:
        ParameterError: ``the '<name>' parameter must be ...; got ...``.
    """
    if id(kind) not in _ADAPTERS:
        _ADAPTERS[id(kind)] = (kind, TypeAdapter(kind))  # the type kept: its id stays its own
    adapter = _ADAPTERS[id(kind)][1]
    try:
        return adapter.validate_python(value)
    except ValidationError as err:
        raise _error(err, adapter, value, where, name) from None


class Declared(BaseModel):
    """A mapping of declared parameters: a name it does not declare is refused (named, with a
    did-you-mean, by :func:`validate`)."""

    model_config = ConfigDict(extra="forbid")


def _shown(known: list, what: str) -> str:
    """``known`` in words: ``what`` and how many (if given), every one when they are few, else
    the first three."""
    listed = ", ".join(map(repr, known[:20] if len(known) <= 20 else known[:3]))
    listed += "" if len(known) <= 20 else ", ..."
    return f"one of the {len(known)} {what} ({listed})" if what else f"one of {listed}"


def out_of(name: str, given, known, what: str = "") -> None:
    """Each of ``given`` (a name or a list of names; ``None``: nothing to check) out of
    ``known`` (what exists: a registry, a benchmark's languages).

    Raises:
        ParameterError: ``the '<name>[i]' parameter must be one of ...; got 'x'; did you mean
            'y'?`` (``what``: the known ones in words, e.g. ``"CLAMS languages"``).
    """
    known = list(known)
    for i, x in enumerate(given if isinstance(given, (list, tuple)) else
                          [] if given is None else [given]):
        if x not in known:
            raise ParameterError(_join(name, i) if isinstance(given, (list, tuple)) else name,
                                 _shown(known, what), x, did_you_mean(x, known))


def among(known, what: str = "") -> AfterValidator:
    """A type's check: its name (or each of its names) out of ``known`` (a sequence, or a
    function returning one, called when a value is checked): :func:`out_of`."""
    def check(v):
        out_of("", v, known() if callable(known) else known, what)
        return v
    return AfterValidator(check)


# --- the types ---------------------------------------------------------------------------------------

def _integral(v):
    """A numpy integer as an ``int`` (a bool is left for the strict check to refuse)."""
    return int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v


def _dtype_name(v):
    return DTYPE_ALIASES.get(v, v) if isinstance(v, str) else v


def _each_once(v: list) -> list:
    return list(dict.fromkeys(v))


def _must(text: str) -> Field:
    return Field(json_schema_extra={"must": text})


def at_least(low: int):
    """The type of an integer >= ``low`` (a size, a count, a number of folds)."""
    return Annotated[int, Strict(), Field(ge=low), BeforeValidator(_integral)]


#: The seed of every draw (pairs sampled, Neuro's folds, bootstraps).
Seed = Annotated[int, Strict(), Field(ge=0, le=SEED_MAX), BeforeValidator(_integral)]
#: A size: pairs, items, shards, a batch (an integer >= 1).
Size = at_least(1)
#: A sample's size: an integer >= 1, or ``None`` (every one).
SampleSize = Annotated[Size | None, _must("an integer >= 1 or None (every one)")]
#: A batch's texts or tokens: an integer >= 1, or ``None`` (no cap).
BatchSize = Annotated[Size | None, _must("an integer >= 1 or None (no cap)")]
#: Cross-validation folds (an integer >= 2).
Folds = at_least(2)
#: A non-negative number (Ray's GPUs and CPUs per replica).
Number = Annotated[Annotated[int, Strict()] | Annotated[float, Strict()], Field(ge=0),
                   _must("a number >= 0")]
#: Tokens per forward pass: ``"auto"`` (from the device's free memory), an integer >= 1, or
#: ``None`` (no cap).
TokenBudget = Annotated[Literal["auto"] | Size | None,
                        _must("'auto' (from the device's memory), an integer >= 1 (tokens a "
                              "forward pass) or None (no cap)")]
#: Where a model runs: ``auto`` (CUDA if available, else CPU), ``cpu``, ``mps``, ``cuda`` or
#: ``cuda:N``; whether this machine has it is checked before a model loads
#: (:func:`xcomps_utils.lm.models.resolve_device_dtype`).
Device = Annotated[str, Strict(), Field(pattern=r"^(auto|cpu|mps|cuda(:\d+)?)$"),
                   _must("one of 'auto', 'cpu', 'mps', 'cuda' or 'cuda:N' (N: a GPU's index)")]
#: A model dtype out of :data:`DTYPES` (a short name of :data:`DTYPE_ALIASES` becomes its long
#: name).
Dtype = Annotated[Literal[DTYPES], BeforeValidator(_dtype_name),
                  _must(f"one of {', '.join(map(repr, DTYPES))} (or "
                        f"{', '.join(map(repr, DTYPE_ALIASES))})")]
#: A non-empty text.
Text = Annotated[str, Strict(), StringConstraints(min_length=1)]
#: A name: a non-empty text without surrounding whitespace.
Name = Annotated[str, Strict(), StringConstraints(min_length=1, pattern=r"^\S(.*\S)?$")]
#: A model: an embedded name, a local folder or a Hugging Face id.
Model = Annotated[str, Strict(), StringConstraints(min_length=1, pattern=r"^\S(.*\S)?$"),
                  _must("a model: an embedded name (`xcomps-study tasks` lists them), a local "
                        "folder or a Hugging Face id")]
#: A non-empty list of models, each kept once (in order).
Models = Annotated[list[Model], Field(min_length=1), AfterValidator(_each_once)]
#: A non-empty list of names, each kept once (in order).
Names = Annotated[list[Name], Field(min_length=1), AfterValidator(_each_once)]
#: XCOMPS data: the project's sample or the pinned upstream files.
Source = Literal[SOURCES]
#: Direct's first-token convention (:data:`BOS_POLICIES`).
BosPolicy = Literal[tuple(BOS_POLICIES)]
#: True or False (not 0 or 1).
Flag = Annotated[bool, Strict()]
#: Token-level perplexity's wordings: ``"all"`` or a list of wording ids.
Wordings = Literal["all"] | Names
#: Neuro's probe groups: a list of lists of pair columns (``[]``: one probe on all).
ProbeBy = Annotated[list[list[Annotated[str, Strict()]]],
                    _must("a list of lists of pair columns (Neuro's probe groups)")]
