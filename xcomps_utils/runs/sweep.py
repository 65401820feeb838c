"""Sweeps: models x data x methods as runs of the results store, on one process or on Ray.

A *sweep file* (YAML) names models, methods, pair sets (XCOMPS languages, or minimal-pair tasks
with their sample sizes), the run parameters, dtype, device and the store folder. Its fields are
declared (pydantic) here and in :mod:`xcomps_utils.methods.config`; :func:`load_sweep` validates a file
(every error names the file, the field and what is allowed). :func:`plan` expands it with
:func:`xcomps_utils.runs.planner.plan` into runs, one per model x pair set x method: the very runs
:func:`xcomps_utils.runs.execute.run` (and ``xcomps-study run``) make of the same selection, so either
one reads, resumes or completes the other's. :func:`run_sweep` computes their unfinished shards
on Ray (:mod:`xcomps_utils.runs.ray_executor`: one model replica per GPU) or, without Ray or with
``executor: local``, in this process (:func:`xcomps_utils.runs.execute.execute`).

Example::

    from xcomps_utils.runs.sweep import load_sweep, run_sweep
    result = run_sweep(load_sweep("sweeps/embedded.yaml"))   # Ray if installed, else one process
    result.runs                                              # one row per run
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import pandas as pd
from pydantic import PrivateAttr, model_validator

from ..declare import check, Device, Dtype, Models, ParameterError, Text, validate
from ..errors import XcompsError
from ..methods import config as C
from ..methods.config import Languages, MethodNames, Ray
from ..methods.registry import METHODS
from . import planner as P

__all__ = ["SweepError", "Sweep", "RunSpec", "SweepResult", "load_sweep", "parse_sweep", "plan",
           "run_sweep", "describe", "EXECUTORS"]

EXECUTORS = C.EXECUTORS
RunSpec = P.RunSpec


class SweepError(XcompsError, ValueError):
    """A sweep file that cannot run: names the file and what is wrong (a bad field's value is a
    :class:`~xcomps_utils.declare.ParameterError`)."""


# --- the sweep file: declared fields ------------------------------------------------------------

class Sweep(C.RunParameters):
    """A validated sweep file (see :func:`parse_sweep` for the fields): the run parameters of
    :class:`xcomps_utils.methods.config.RunParameters` and these, each of a declared type."""

    store: Text = "results"
    models: Models
    methods: MethodNames
    data: C.PairSets
    device: Device = "auto"
    dtype: Dtype = "auto"
    revision: Text | None = None
    shard_size: C.ShardSize = None
    executor: C.Executor = "auto"
    ray: Ray = Ray()
    _file: str = PrivateAttr("<sweep>")

    @property
    def file(self) -> str:
        """The sweep file (for messages and provenance)."""
        return self._file

    @model_validator(mode="after")
    def _runnable(self):
        for i, e in enumerate(self.data):
            kind = "languages" if isinstance(e, Languages) else "tasks"
            for m in e.methods or self.methods:
                need = METHODS[m].needs
                xcomps = kind == "languages" or all(t.startswith(METHODS[m].task_prefixes)
                                                    for t in e.tasks)
                if (need == "xcomps" and not xcomps) or (need == "tasks" and kind != "tasks"):
                    why = METHODS[m].why + (" (a pair set with 'languages')"
                                              if need == "xcomps" else "")
                    can = ", ".join(repr(n) for n, d in METHODS.items() if d.needs != need)
                    raise ParameterError(f"data[{i}].methods" if e.methods else "methods",
                                         f"methods a pair set of {kind} can run ({can})", m,
                                         f"{why}; give data[{i}] its own 'methods' list")
        self._sizes()
        return self

    def _sizes(self) -> None:
        """A pair set's size above what it holds is refused, as ``xcomps-study run`` refuses it
        (:func:`xcomps_utils.pairs.tasks.check_size`): ``n_pairs`` above the pairs of its
        largest task (per selection rule of its methods), ``items_per_language`` above the
        XCOMPS items of its languages."""
        from ..pairs import data as D, tasks as T

        for i, e in enumerate(self.data):
            try:
                if isinstance(e, Languages):
                    T.check_items(e.languages, e.items_per_language, e.source)
                    continue
                for selection in sorted({METHODS[m].selection for m in e.methods or self.methods}):
                    T.check_size(e.tasks, e.n_pairs, selection=selection, seed=self.seed)
            except D.DataError:
                continue  # no data to count here: plan() names the file (and checks again)
            except T.SizeError as err:
                raise err.moved(under=f"data[{i}]") from None

    def params(self) -> dict:
        """The run parameters (:class:`xcomps_utils.methods.config.RunParameters`)."""
        return {k: getattr(self, k) for k in C.RunParameters.model_fields}


def _unique_key_loader():
    import yaml

    class Loader(yaml.SafeLoader):
        """YAML's safe loader, refusing a key given twice in one mapping (YAML keeps the last
        value silently)."""

        def construct_mapping(self, node, deep=False):
            seen = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} (first on line {seen[key] + 1})",
                        key_node.start_mark)
                seen[key] = key_node.start_mark.line
            return super().construct_mapping(node, deep)

    return Loader


_UniqueKeyLoader = _unique_key_loader()


def load_sweep(path: str | os.PathLike) -> Sweep:
    """Read and validate a sweep file (YAML).

    Raises:
        SweepError: unreadable YAML or a key given twice in one mapping (with the line).
        ParameterError: an invalid field (see :func:`parse_sweep`).
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise SweepError(f"{path}: cannot read the sweep file ({err.strerror})") from err
    try:
        raw = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise SweepError(f"{path}:{where} not valid YAML: {getattr(err, 'problem', err)}") from err
    return parse_sweep(raw, file=str(path))


def parse_sweep(raw, file: str = "<sweep>") -> Sweep:
    """Validate a sweep description (the mapping a sweep file holds).

    Fields (only ``models``, ``methods`` and ``data`` are required)::

        store: results                  # the results store (on a cluster: a shared folder)
        models: [smollm2-135m-instruct, gemma-3-270m]
        methods: [direct, meta]
        data:                           # pair sets; each runs every method (or its own list)
          - {languages: [en, de], source: sample, items_per_language: 10}
          - {tasks: [blimp_anaphor, dust, xcomps:de], n_pairs: 200, methods: [direct]}
        seed: 0
        device: auto                    # as each replica sees it
        dtype: auto                     # xcomps_utils.methods.config.DTYPES
        shard_size: 100                 # or {direct: 1000, meta: 200}; default per method
        executor: auto                  # auto (Ray if installed), ray, local
        ray: {address: null, replicas: auto, num_gpus: auto, num_cpus: 1, max_retries: 3}

    Every field has a type declared in :mod:`xcomps_utils.declare` (the seed an integer from 0
    to 2**32 - 1, as for ``xcomps-study run --seed`` and :func:`xcomps_utils.runs.execute.run`).

    plus the run parameters of :class:`xcomps_utils.methods.config.RunParameters` (``revision``,
    ``token_budget``, ``batch_size``, ``bos_policy``, ``use_chat_template``, ``wordings``,
    ``probe_by``, ``n_splits``, ``inner_splits``) as for :func:`xcomps_utils.runs.execute.run`.

    Raises:
        ParameterError: ``"<file>: the '<field>' parameter must be ...; got ..."`` for a value
            of the wrong kind, an unknown method, task or language, a size above what the data
            holds, or a method a pair set cannot run (Meta needs XCOMPS pairs; token_ppl needs
            tasks); ``"<file>: '<field>' is not a parameter (...)"`` for an unknown field.
    """
    sweep = validate(Sweep, raw, file)
    sweep._file = file
    return sweep


# --- expanding into runs -------------------------------------------------------------------------

def plan(sweep: Sweep, store: str | os.PathLike | None = None) -> list[P.RunSpec]:
    """Expand a sweep into runs (:func:`xcomps_utils.runs.planner.plan`): models x pair sets x
    methods, model by model, each the run ``xcomps-study run`` makes of the same selection.

    Raises:
        SweepError: a model that cannot be loaded (names ``models[i]``), a store that is a file,
            a pair set with a bad text or parameter.
        DataError: a data file is missing or altered (see :mod:`xcomps_utils.pairs.data`).
    """
    from ..lm.models import check_model, ModelNotFoundError, ModelPackageMissing
    from .store import Store, StoreError

    for i, model in enumerate(sweep.models):
        try:
            check_model(model, sweep.revision)
        except (ModelNotFoundError, ModelPackageMissing) as err:
            raise SweepError(f"{sweep.file}: models[{i}]: {err}") from None
    root = str(Path(store if store is not None else sweep.store).resolve())
    try:
        Store(root)
    except StoreError as err:
        raise SweepError(f"{sweep.file}: store: {err}") from None
    sets = []
    for e in sweep.data:
        ms = e.methods or sweep.methods
        if isinstance(e, Languages):
            sets += P.select(ms, languages=e.languages, source=e.source,
                             items_per_language=e.items_per_language, seed=sweep.seed)
        else:
            sets += P.select(ms, tasks=e.tasks, n_pairs=e.n_pairs, seed=sweep.seed)
    for s in sets:
        try:
            P.plan([], [s], params=sweep.params(), store=root)  # the pairs' texts
        except ValueError as err:
            raise SweepError(f"{sweep.file}: data: {s.label}: {err}") from None
    return P.plan(sweep.models, sets, params=sweep.params(), store=root,
                  shard_size=sweep.shard_size, device=sweep.device, dtype=sweep.dtype,
                  revision=sweep.revision, sweep=sweep.file)


def describe(sweep: Sweep, specs: list[P.RunSpec]) -> pd.DataFrame:
    """The plan as a table: model, method, data, pairs, shards (for ``--dry-run``)."""
    return pd.DataFrame([{"model": s.model, "method": s.method, "data": s.data,
                          "pairs": len(s.used), "shard_size": s.shard_size,
                          "shards": s.n_shards} for s in specs])


# --- running a sweep -----------------------------------------------------------------------------

class SweepResult:
    """What :func:`run_sweep` returns.

    Attributes:
        runs: one row per run: ``model``, ``method``, ``data``, ``run`` (id), ``pairs``,
            ``shards``, ``computed`` (shards this call wrote), ``status``.
        store: the results store path.
        executor: ``"ray"`` or ``"local"``; replicas: how many model replicas worked.
        wall_s: seconds from the start to the last run's completion.
    """

    def __init__(self, runs, store, executor, replicas, wall_s):
        self.runs, self.store, self.executor = runs, store, executor
        self.replicas, self.wall_s = replicas, wall_s

    def measures(self) -> pd.DataFrame:
        """The long measures of the sweep's runs, with ``run`` and ``model`` columns."""
        from .store import Store

        m = Store(self.store).measures(list(self.runs["run"]))
        return m.merge(self.runs[["run", "model"]], on="run", how="left")

    def summary(self) -> pd.DataFrame:
        """Accuracy per model, method, task and language (:func:`xcomps_utils.runs.planner.summary`)."""
        return P.summary(self.measures())


def _ray_module():
    try:
        import ray
    except ImportError:
        return None
    return ray


def run_sweep(sweep: Sweep, *, executor: str | None = None, address: str | None = None,
              store: str | os.PathLike | None = None, progress: bool = True) -> SweepResult:
    """Compute every unfinished shard of a sweep's runs, then finish each run.

    Args:
        sweep: from :func:`load_sweep` / :func:`parse_sweep`.
        executor: ``"ray"``, ``"local"`` or ``"auto"`` (default: the sweep's ``executor``;
            ``auto`` is Ray if it is installed, else one process, with a warning).
        address: a Ray cluster to join (default: the sweep's ``ray.address``; none: the Ray this
            process already joined, else a new local one, shut down at the end).
        store: the results store (default: the sweep's ``store``).
        progress: a tqdm bar of shards.

    Raises:
        ParameterError: an unknown executor.
        SweepError: ``executor="ray"`` without Ray installed.
        DataError, ModelNotFoundError, StoreError: from the data, the models, the store.
        ray.exceptions.RayError: a shard failed after its retries (on Ray).
    """
    executor = check(C.Executor, executor or sweep.executor, "executor")
    ray = _ray_module() if executor in ("auto", "ray") else None
    if executor == "ray" and ray is None:
        raise SweepError(f"{sweep.file}: executor: ray is not installed; pip install "
                         f"'xcomps-study[ray]', or use executor: local")
    if executor == "auto" and ray is None:
        warnings.warn("Ray is not installed (pip install 'xcomps-study[ray]'): the sweep runs "
                      "in this process, one shard after the other", stacklevel=2)
    start = time.perf_counter()
    specs = plan(sweep, store)
    if ray is None:
        from .execute import execute

        rows, replicas, name = execute(specs, progress=progress), 1, "local"
    else:
        from .ray_executor import execute

        rows, replicas = execute(ray, specs, sweep.ray.model_dump(),
                                 address or sweep.ray.address, progress)
        name = "ray"
    runs = pd.DataFrame(rows, columns=["model", "method", "data", "run", "pairs", "shards",
                                       "computed", "status"])
    root = specs[0].store if specs else str(Path(store or sweep.store).resolve())
    return SweepResult(runs, root, name, replicas, time.perf_counter() - start)
