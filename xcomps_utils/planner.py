"""One way from a selection to the results store: select pairs, plan runs, execute them.

* :func:`select` turns a selection (tasks, among them ``xcomps:<lang>``, or XCOMPS languages,
  with sample sizes) into :class:`PairSet` s, exactly as ``xcomps-study run`` and a sweep select.
* :func:`plan` turns models x pair sets x methods into :class:`RunSpec` s. A run's key is made
  in one place, :meth:`RunSpec.key` (the model identity, the method, the BOS policy, a SHA-256 of
  the pairs' identifiers and the columns the method reads, the method's parameters, the package
  version); its id is :func:`xcomps_utils.store.run_id` of that key.
* :func:`execute` computes the specs in this process (one shard after the other); the Ray
  executor (:mod:`xcomps_utils.ray_executor`) computes the same specs on actors. Both use
  :func:`open_run`, :func:`compute_shard` and :func:`finish`.

:func:`xcomps_utils.methods.run`, ``xcomps-study run`` and ``xcomps-study sweep`` are this plan.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from . import __version__
from .config import METHODS, RunParameters

__all__ = ["PairSet", "RunSpec", "select", "plan", "execute", "identity", "load", "open_run",
           "compute_shard", "finish", "parameters_of", "summary", "ID"]

#: The identifier columns of a pair (in the key and in every result row).
ID = ["dataset", "task", "lang", "subset", "pair_id", "item"]


@dataclasses.dataclass
class PairSet:
    """Pairs selected by one rule, and the methods to run on them; ``label`` in words."""

    label: str
    methods: list
    pairs: pd.DataFrame


def select(methods, tasks=(), languages=(), source="sample", items_per_language=None,
           n_pairs=None, seed=0) -> list[PairSet]:
    """The pairs of a selection: XCOMPS ``languages`` (``items_per_language`` whole items), or
    ``tasks`` (``n_pairs`` seeded pairs each; token-level perplexity samples from the task's
    selection rule, so it gets its own pair set).

    Raises:
        ValueError: both or neither of tasks and languages; ``n_pairs`` with languages.
        DataError: an unknown task or language, a missing or altered data file.
    """
    from . import tasks as T
    from . import xcomps as X

    if bool(tasks) == bool(languages):
        raise ValueError("give either tasks or languages")
    if languages:
        if n_pairs is not None:
            raise ValueError("n_pairs is for tasks; XCOMPS samples whole items: use "
                             "items_per_language")
        pairs = X.load_languages(list(languages), source=source,
                                 items_per_language=items_per_language, seed=seed)
        return [PairSet(f"xcomps {','.join(languages)} ({source})", list(methods), pairs)]
    out, label = [], ",".join(tasks)
    direct_like = [m for m in methods if m != "token_ppl"]
    if direct_like:
        out.append(PairSet(label, direct_like, T.sample(list(tasks), n_pairs, seed)))
    if "token_ppl" in methods:
        out.append(PairSet(label, ["token_ppl"],
                           T.sample(list(tasks), n_pairs, seed, selection=True)))
    return out


def _pairs_sha256(pairs: pd.DataFrame, columns) -> str:
    cols = ID + [c for c in columns if c in pairs]
    values = pairs[cols].astype(object).to_numpy().tolist()
    return hashlib.sha256(json.dumps([cols, values], default=lambda x: np.asarray(x).tolist(),
                                     ensure_ascii=False).encode()).hexdigest()


def _method_parameters(method: str, p: dict) -> dict:
    """The parameters of a method that enter its key (with the SHA-256 of its prompt files)."""
    if method == "meta":
        from .meta import meta_templates_sha256

        return {"use_chat_template": p["use_chat_template"],
                "templates_sha256": meta_templates_sha256()}
    if method == "token_ppl":
        from .perplexity import load_wordings

        return {"wordings": p["wordings"], "wordings_sha256": hashlib.sha256(
            json.dumps(load_wordings()).encode()).hexdigest()}
    if method == "neuro":
        return {"probe_by": [list(b) for b in p["probe_by"]], "n_splits": p["n_splits"],
                "inner_splits": p["inner_splits"], "seed": p["seed"],
                "protocol": "item-whole concept-disjoint folds (training purged of test "
                            "concepts), nested layer choice, label-permutation null (19, per "
                            "language)",
                "layers": "embedding + every block, last after the final norm"}
    return {}


def parameters_of(key: dict) -> dict:
    """The method parameters of a run, from its key (to recompute a shard of it)."""
    par = key.get("parameters", {})
    defaults = RunParameters().model_dump()
    return {**defaults, "bos_policy": key.get("bos_policy", "bos"),
            **{k: par[k] for k in ("use_chat_template", "wordings", "probe_by", "n_splits",
                                   "inner_splits", "seed") if k in par}}


@dataclasses.dataclass
class RunSpec:
    """One run, before its model is loaded.

    Attributes:
        model: model name; method: one of :data:`xcomps_utils.config.METHODS`.
        data: the pair set, in words (``"xcomps en,de (sample)"``).
        used: the pairs the run scores (identifiers and the columns the method reads).
        shard_size: pairs per shard (an existing run keeps its own).
        p: the method parameters (:class:`xcomps_utils.config.RunParameters`, as a dict).
        datasets: ``{file: sha256}`` of the data files read (from the pairs' tasks).
        store: absolute path of the results store.
        device, dtype, revision: how the model is loaded; sweep: the sweep file, if any.
    """

    model: str
    method: str
    data: str
    used: pd.DataFrame | None
    shard_size: int
    p: dict
    datasets: dict
    store: str
    device: str = "auto"
    dtype: str = "auto"
    revision: str | None = None
    sweep: str = ""
    key_rest: dict = dataclasses.field(default_factory=dict)

    @property
    def n_shards(self) -> int:
        return max(1, -(-len(self.used) // self.shard_size)) if self.used is not None else 0

    def key(self, ident: dict) -> dict:
        """The run's key for a model identity (:func:`identity`): the one definition."""
        return json.loads(json.dumps({**ident, **self.key_rest}, default=str))

    def run_id(self, ident: dict) -> str:
        from .store import run_id

        return run_id(self.key(ident))

    def light(self) -> "RunSpec":
        """The spec without its pairs (what travels with every shard task)."""
        return dataclasses.replace(self, used=None)


def plan(models, pairs, methods=None, params: dict | RunParameters | None = None, *,
         store, shard_size=None, device="auto", dtype="auto", revision=None,
         sweep: str = "") -> list[RunSpec]:
    """Expand models x pair sets x methods into runs, model by model.

    Args:
        models: a model name or a list of them.
        pairs: a DataFrame of minimal pairs (run with ``methods``) or a list of
            :class:`PairSet` s (each with its own methods).
        params: the method parameters (:class:`~xcomps_utils.config.RunParameters`).
        store: the results store folder; shard_size: an integer or ``{method: integer}``
            (default: :data:`xcomps_utils.config.METHODS`' shard sizes).

    Raises:
        ValueError: an unknown method or parameter, pairs a method cannot run, a bad text (see
            :func:`xcomps_utils.methods.check_inputs`).
    """
    from .methods import check_inputs, prepare_pairs
    from .tasks import provenance

    p = (params if isinstance(params, RunParameters) else RunParameters(**(params or {})))
    p = p.model_dump()
    sets = pairs if isinstance(pairs, list) else [PairSet("", methods, pairs)]
    models = [models] if isinstance(models, str) else list(models)
    root = str(Path(store).resolve())
    prepared = []
    for s in sets:
        ps = prepare_pairs(s.pairs)
        check_inputs(ps, s.methods, p["wordings"], p["probe_by"])
        prepared.append((s, ps, provenance(ps)))
    specs = []
    for model in models:
        for s, ps, datasets in prepared:
            for method in s.methods:
                key_rest = {"method": method,
                            "bos_policy": p["bos_policy"] if method == "direct" else "bos",
                            "pairs_sha256": _pairs_sha256(ps, METHODS[method].uses),
                            "n_pairs": len(ps), "parameters": _method_parameters(method, p),
                            "package_version": __version__}
                size = shard_size.get(method) if isinstance(shard_size, dict) else shard_size
                used = ps[ID + [c for c in METHODS[method].uses if c in ps]]
                specs.append(RunSpec(model, method, s.label, used,
                                     size or METHODS[method].shard_size, p, datasets, root,
                                     device, dtype, revision, sweep,
                                     json.loads(json.dumps(key_rest, default=str))))
    return specs


# --- the model ------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def load(name, device="auto", dtype="auto", revision=None):
    """The model (the last one loaded by name stays loaded: a chapter runs several calls)."""
    from .models import load_model

    return load_model(name, device=device, dtype=dtype, revision=revision)


def identity(spec: RunSpec, device_kind: str | None = None) -> dict | None:
    """The model identity of a spec's key as loading would give it, without loading
    (``None`` when only the loaded model knows it, e.g. a hub model without a pinned revision).
    ``device_kind``: what ``device="auto"`` resolves to (default: this machine's)."""
    from .models import model_identity

    try:
        device = device_kind if spec.device == "auto" and device_kind else spec.device
        ident = model_identity(spec.model, spec.revision, device, spec.dtype)
    except Exception:  # noqa: BLE001 - loading the model says why
        return None
    return ident if ident.get("model_revision") is not None else None


# --- the steps of a run: open, compute a shard, finish ------------------------------------------

def open_run(spec: RunSpec, lm, used: pd.DataFrame):
    """Open (or find) the run of a spec for a loaded model: a :class:`xcomps_utils.store.Run`."""
    from .results import provenance
    from .store import Store

    prov = provenance(lm, datasets=spec.datasets, method=spec.method,
                      token_budget=spec.p["token_budget"], batch_size=spec.p["batch_size"])
    if spec.sweep:
        prov["sweep"] = spec.sweep
    return Store(spec.store).open_run(spec.key(lm.identity()), used, spec.shard_size, prov)


def compute_shard(run, i: int, lm, used: pd.DataFrame, p: dict, wait: bool = True) -> str:
    """Compute and write shard ``i`` under its lock: ``"written"``, ``"done"`` (finished by
    another attempt) or ``"held"`` (another process holds it and ``wait`` is false).

    Raises:
        StoreError: the model, dtype or device kind is not the run's.
    """
    from .methods import SHARD
    from .store import StoreError

    key = run.record["key"]
    mine = json.loads(json.dumps(lm.identity(), default=str))
    if any(key.get(k) != v for k, v in mine.items()):
        raise StoreError(f"the model holds {mine}, but run {run.id} was opened with "
                         f"{ {k: key.get(k) for k in mine} }")
    if run.is_done(i):
        return "done"
    lock = run.lock(i) if wait else run.try_lock(i)
    if lock is None:
        return "held"
    with lock:
        if run.is_done(i):
            return "done"
        size = run.record["shard_size"]
        shard = used.iloc[i * size:(i + 1) * size].reset_index(drop=True)
        start = time.perf_counter()
        measures, details = SHARD[key["method"]](lm, shard, p)
        run.write_shard(i, measures, details, seconds=time.perf_counter() - start)
        return "written"


def finish(run, used: pd.DataFrame, p: dict) -> str:
    """The run-level step after the last shard: Neuro's probes over every state shard (once:
    the ``probes`` shard), then the run marked complete. Returns the run id.

    Raises:
        StoreError: a shard of the run is not done.
    """
    from .methods import probes
    from .store import StoreError

    rec = run.record
    missing = [i for i in range(rec["n_shards"]) if not run.is_done(i)]
    if missing:
        raise StoreError(f"run {run.id}: shard(s) {missing} not done; cannot finish it")
    if rec["key"]["method"] == "neuro" and not run.is_done("probes"):
        with run.lock("probes"):
            if not run.is_done("probes"):
                start = time.perf_counter()
                out = probes(run.store, run.id, used, p)
                run.write_shard("probes", out, seconds=time.perf_counter() - start)
    if not run.complete:
        run.finish()
    return run.id


def row(spec: RunSpec, rid: str, n_shards: int, computed: int, opened: bool = True) -> dict:
    """One row of the table of runs an executor returns (``opened``: the model was loaded
    for it; ``False``: read complete from the store)."""
    return {"model": spec.model, "method": spec.method, "data": spec.data, "run": rid,
            "pairs": len(spec.used) if spec.used is not None else None, "shards": n_shards,
            "computed": computed, "status": "complete", "opened": opened}


def stored(spec: RunSpec, device_kind: str | None = None) -> dict | None:
    """The row of a run the store already holds complete, found without loading the model;
    ``None`` otherwise."""
    from .store import Store

    ident = identity(spec, device_kind)
    if ident is None:
        return None
    try:
        run = Store(spec.store).run(spec.run_id(ident))
    except KeyError:
        return None
    return row(spec, run.id, run.record["n_shards"], 0, False) if run.complete else None


def execute(specs: list[RunSpec], lm=None, progress: bool = True, truncate: bool = False
            ) -> list[dict]:
    """Compute the specs in this process: a complete run is read (its model not loaded), an
    unfinished one resumes; a shard another process holds is left to it and waited for last.

    Args:
        lm: a loaded model for every spec (default: each spec's model loaded by name).
        truncate: the pairs were cut to the model's context (skip the context check).

    Returns:
        one :func:`row` per spec.

    Raises:
        StoreError: the store is not writable; ValueError: a device this machine lacks, a text
            longer than the model's context; ModelNotFoundError.
    """
    from tqdm.auto import tqdm

    from .encoding import fit_context
    from .models import resolve_device_dtype
    from .store import Store

    rows, todo = {}, []
    for k, spec in enumerate(specs):
        ident = lm.identity() if lm is not None else None
        found = (stored(spec) if lm is None else
                 _stored_by_id(spec, spec.run_id(ident)))
        if found is not None:
            rows[k] = found
        else:
            todo.append(k)
    if todo:  # before any model loads: the store and the device
        Store(specs[todo[0]].store).check_writable()
        if lm is None:
            for k in todo:
                resolve_device_dtype(specs[k].device, specs[k].dtype, check=True)
    by_model = {}
    for k in todo:
        s = specs[k]
        by_model.setdefault((s.model, s.device, s.dtype, s.revision), []).append(k)
    for (model, device, dtype, revision), ks in by_model.items():
        m = lm if lm is not None else load(model, device, dtype, revision)
        if not truncate:  # every text fits the context, before any shard is computed
            prompts = any(specs[k].method in ("meta", "token_ppl") for k in ks)
            for k in ks:
                fit_context(m, specs[k].used, together=prompts)
        for k in ks:
            spec = specs[k]
            run = open_run(spec, m, spec.used)
            n = run.record["n_shards"]
            left = [i for i in range(n) if not run.is_done(i)]
            size = run.record["shard_size"]
            bar = tqdm(total=len(spec.used), initial=len(spec.used) - sum(
                len(spec.used[i * size:(i + 1) * size]) for i in left), unit="pair",
                desc=f"{spec.method} ({m.name})", disable=not progress)
            written, held = 0, []
            try:
                for wait, shards in ((False, left), (True, held)):
                    for i in list(shards):
                        out = compute_shard(run, i, m, spec.used, spec.p, wait=wait)
                        if out == "held":
                            held.append(i)
                            continue
                        written += out == "written"
                        bar.update(len(spec.used[i * size:(i + 1) * size]))
            finally:
                bar.close()
            finish(run, spec.used, spec.p)
            rows[k] = row(spec, run.id, n, written)
    return [rows[k] for k in range(len(specs))]


def _stored_by_id(spec: RunSpec, rid: str) -> dict | None:
    from .store import Store

    try:
        run = Store(spec.store).run(rid)
    except KeyError:
        return None
    return row(spec, rid, run.record["n_shards"], 0, False) if run.complete else None


def summary(measures: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per (model,) method, task and language (Direct, Meta: per pair, Meta's mean of
    both option orders; token_ppl: per prompt pair)."""
    per_pair = (measures.method == "token_ppl") | (measures.order == "")
    m = measures[(measures.measure == "correct") & per_pair]
    if not len(m):
        return pd.DataFrame()
    by = [c for c in ("model", "method", "task", "lang") if c in m]
    g = m.groupby(by, sort=False)["value"]
    return g.agg(n="size", accuracy="mean").reset_index().round({"accuracy": 3})
