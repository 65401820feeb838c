"""The declarations every entry point shares that need the methods: the run parameters, the
method names, executors, and the declared (pydantic) parts of sweep files.

Every type here is built from :mod:`xcomps_utils.declare` (the one declaration of the shared
parameters: seed, token budget, device, dtype, sizes, names; and the one error,
:class:`~xcomps_utils.declare.ParameterError`). The methods are objects, one module each,
registered in :mod:`xcomps_utils.methods.registry` (``METHODS`` here is that registry); a dtype
is one entry of :data:`xcomps_utils.declare.DTYPES`. The command line
(:mod:`xcomps_utils.runs.cli`), the sweep files (:mod:`xcomps_utils.runs.sweep`) and the
planner (:mod:`xcomps_utils.runs.planner`) read them from here.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, model_validator

from ..declare import (among, at_least, BOS_POLICIES, BosPolicy, Declared, DTYPES, Flag, Folds,
                       Names, Number, out_of, ParameterError, ProbeBy, SampleSize, Seed, Size,
                       Source, SOURCES, Text, TokenBudget, validate, Wordings)
from ..pairs.tasks import TaskNames
from .base import Method  # noqa: F401 (re-exported)
from .meta import BmlamaMetaTemplate, MetaTemplate  # noqa: F401 (re-exported)
from .registry import METHODS

__all__ = ["Method", "METHODS", "DTYPES", "EXECUTORS", "SOURCES", "bos_policies", "MethodName",
           "MethodNames", "Executor", "ShardSize", "RunParameters", "Ray", "Languages", "Tasks",
           "pair_set", "PairSets", "MetaTemplate", "BmlamaMetaTemplate"]

#: Where a sweep's shards are computed.
EXECUTORS = ("auto", "ray", "local")
#: The declared type of an executor.
Executor = Literal[EXECUTORS]
#: The declared type of a method name (one of :data:`METHODS`, with a did-you-mean).
MethodName = Annotated[str, among(lambda: tuple(METHODS), "methods")]
#: The declared type of a non-empty list of method names, each once.
MethodNames = Annotated[Names, among(lambda: tuple(METHODS), "methods")]


def bos_policies() -> tuple[str, ...]:
    """Direct's first-token conventions (:data:`xcomps_utils.declare.BOS_POLICIES`)."""
    return tuple(BOS_POLICIES)


class RunParameters(Declared):
    """The method parameters of a run (as :func:`xcomps_utils.runs.execute.run` takes them),
    each of a type declared in :mod:`xcomps_utils.declare`."""

    bos_policy: BosPolicy = "bos"
    token_budget: TokenBudget = "auto"
    batch_size: Size | None = None
    use_chat_template: Flag = False
    wordings: Wordings = "all"
    probe_by: ProbeBy = [["lang", "subset"], ["lang"]]
    n_splits: Folds = 5
    inner_splits: Folds = 3
    seed: Seed = 0


#: Pairs per shard: one size, one per method (``{direct: 1000, meta: 200}``), or ``None`` (each
#: method's default).
ShardSize = Annotated[Size | None | dict[MethodName, Size], Field(json_schema_extra={
    "must": "an integer >= 1, a mapping of methods to integers >= 1 ({direct: 1000, meta: 200}) "
            "or None (each method's default)"})]


# --- sweep files (the rest of a sweep file: xcomps_utils.runs.sweep.Sweep) ---------------------------

class Ray(Declared):
    """The ``ray`` mapping of a sweep file."""

    address: Annotated[Text | None, Field(json_schema_extra={
        "must": "null (a local Ray, or the one this process already joined), auto, or "
                "ray://host:port"})] = None
    replicas: Literal["auto"] | Size = "auto"
    num_gpus: Literal["auto"] | Number = "auto"
    num_cpus: Number = 1
    probe_cpus: Number = 1
    max_retries: at_least(0) = 3


def _languages_of(source):
    from ..pairs import xcomps as X

    return X.SAMPLE_LANGUAGES if source == "sample" else ["en"] + list(X.XCOMPS_LANGUAGES)


class Languages(Declared):
    """A pair set of XCOMPS languages."""

    languages: Names
    source: Source = "sample"
    items_per_language: SampleSize = None
    methods: MethodNames | None = None

    @model_validator(mode="after")
    def _in_data(self):
        out_of("languages", self.languages, _languages_of(self.source),
               f"XCOMPS {self.source} languages")
        return self


class Tasks(Declared):
    """A pair set of minimal-pair tasks (``xcomps:<lang>`` among them)."""

    tasks: TaskNames
    n_pairs: SampleSize = None
    methods: MethodNames | None = None


def pair_set(e):
    """One entry of a sweep's ``data``: :class:`Languages` or :class:`Tasks`.

    Raises:
        ParameterError: neither or both of ``languages`` and ``tasks``; an invalid field (its
            path under the entry).
    """
    if not isinstance(e, dict) or ("languages" in e) == ("tasks" in e):
        raise ParameterError("", "a pair set with either 'languages' (XCOMPS) or 'tasks': "
                                 "{languages: [en, de], source: sample, items_per_language: "
                                 "10} or {tasks: [blimp_anaphor], n_pairs: 200}", e)
    return validate(Languages if "languages" in e else Tasks, e)


#: A sweep's ``data``: a non-empty list of pair sets.
PairSets = Annotated[list[Annotated[Languages | Tasks, BeforeValidator(pair_set)]],
                     Field(min_length=1, json_schema_extra={
                         "must": "a non-empty list of pair sets: {languages: [...]} or "
                                 "{tasks: [...]}"})]

