"""Executing methods: one entry point, the registered methods, one result schema, one store.

:func:`run` takes a model (loaded, or a name loaded only if something must be computed) and a
DataFrame of minimal pairs, runs any of the methods below over the same pairs, and returns
:class:`Results` in the long schema of :data:`xcomps_utils.runs.store.MEASURE_SCHEMA`: the item's
identifiers (``dataset``, ``task``, ``lang``, ``subset`` = negative-sample type / phenomenon /
bias type, ``pair_id``, ``item``), the ``method``, ``wording``/``order``/``layer`` where they apply,
the ``measure`` and its ``value``. Each method is a run of the results store
(:mod:`xcomps_utils.runs.store`): computed one shard of pairs at a time, resumed after an
interruption, read back instead of recomputed when the store already holds it.

=============  ===========================================================================
method         measures (nats for log-probabilities; booleans as 0/1)
=============  ===========================================================================
``direct``     per pair: ``logprob_good``, ``logprob_bad`` (sentence sums), ``logprob_mean_good``,
               ``logprob_mean_bad`` (per token), ``n_tokens_good``, ``n_tokens_bad``, ``delta``
               (good - bad, sums), ``correct`` (delta > 0), ``tie`` (delta == 0, never
               correct), ``near_tie`` (0 < |delta| below the run dtype's precision, never a
               tie), ``near_tie_tolerance`` (that precision, nats; see
               :mod:`xcomps_utils.lm.precision`). Detail ``direct_tokens``: every scored token of every sentence.
``meta``       per pair and option order (``order`` ``good_first``/``bad_first``):
               ``logprob_good``, ``logprob_bad`` (answers as continuations of the question);
               per pair (``order`` empty): their means over the two orders, ``delta``,
               ``correct``, ``tie``, ``near_tie``, ``near_tie_tolerance``, ``answer_mass``
               (mean of p(good) + p(bad)). XCOMPS pairs, and BMLAMA pairs of the
               languages with a template (one question listing the fact's candidates; see
               :mod:`xcomps_utils.methods.meta`).
``neuro``      per probe group and ``layer``: ``f1``, ``balanced_accuracy``, ``mcc``,
               and for a group over all negative types ``null_q95``
               (the label-permutation null's 95th percentile); per group (``layer`` -1):
               ``n_sentences``, ``n_acceptable``, ``n_groups``, ``concept_disjoint``,
               ``items_whole``, ``leaked_concepts``, ``leaked_items``, ``purged``,
               ``majority_f1``, ``layer0_balanced_accuracy``, ``nested_f1``,
               ``nested_balanced_accuracy``, ``nested_mcc``, ``nested_layer_mean``/``min``/``max``,
               and over all types ``null_max_q95``, ``null_nested_mean``, ``p_permutation``
               (the nested score against its own permutation draws), ``n_permutations``,
               ``p_adjusted`` (max-T over the run's languages), ``p_pooled``, ``n_pooled``;
               BMLAMA: ``n_true_distractors`` (pairs left out, see
               :func:`xcomps_utils.methods.neuro.probes`).
               Groups: each combination of ``probe_by`` columns (``"all"`` where a column is
               pooled). Hidden states stay in the store (``states``). See
               :mod:`xcomps_utils.methods.neuro` and :mod:`xcomps_utils.methods.probing`.
``token_ppl``  per pair, ``wording`` and ``order``: ``ppl_correct``, ``ppl_incorrect``,
               ``correct``, ``n_groups``, ``n_<category>``, ``plain_<category>_<ppl|s>``,
               ``norm_<category>_<ppl|s>``. Details ``ppl_groups`` (aligned token groups) and
               ``ppl_tokens`` (every prompt token). See :mod:`xcomps_utils.methods.perplexity`.
=============  ===========================================================================

The per-method work is the method object's (:data:`xcomps_utils.methods.registry.METHODS`: one
module each in :mod:`xcomps_utils.methods`): one shard is a plain function of (model, pairs),
``compute_shard``, with an optional run-level ``finish``; everything about files, resuming and
keys is the store's. Nothing here names a method.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ..declare import validate
from ..errors import InputError
from ..lm.encoding import fit_context
from ..methods.base import ID as _ID
from ..methods.neuro import ShardedStates
from ..methods.registry import DEFAULT_METHOD, METHODS as _REGISTRY
from . import planner
from .planner import check_inputs, prepare_pairs
from .store import Store, StoreError

__all__ = ["METHODS", "DEFAULT_SHARD_SIZE", "SHARD", "Results", "run", "wide", "prepare_pairs",
           "check_inputs", "ShardedStates", "open_run", "compute_shard", "finish",
           "execute", "repair", "verify", "pairs_problem", "precheck", "stored", "store_of",
           "specs"]

if TYPE_CHECKING:  # torch is imported where a model is loaded or scored, not to read a store
    from ..lm.models import LanguageModel

#: The method names (registered in :data:`xcomps_utils.methods.registry.METHODS`).
METHODS = tuple(_REGISTRY)
#: Pairs per shard (the unit of resuming): a shard is a few seconds to a minute on a CPU.
DEFAULT_SHARD_SIZE = {m: d.shard_size for m, d in _REGISTRY.items()}


#: The computation of one shard of each method: ``(model, pairs, parameters) -> (measures,
#: details)``, each method object's :meth:`~xcomps_utils.methods.base.Method.compute_shard`
#: (a new method is a module of :mod:`xcomps_utils.methods` and its registration).
SHARD = {name: m.compute_shard for name, m in _REGISTRY.items()}


# --- the steps of a run (both executors): open, compute a shard, finish ---------------------------

def open_run(store: Store, spec: planner.RunSpec, lm, used: pd.DataFrame):
    """Open (or find) the run of a spec in ``store`` for a loaded model: a
    :class:`xcomps_utils.runs.store.Run`. An existing run whose ``pairs.parquet`` is missing or
    altered gets it back from ``used`` (the spec's pairs, whose SHA-256 is the key's): the one
    place a run's pairs are restored (a read never writes them)."""
    from .results import provenance

    prov = provenance(lm, datasets=spec.datasets, method=spec.method,
                      token_budget=spec.p["token_budget"], batch_size=spec.p["batch_size"])
    if spec.sweep:
        prov["sweep"] = spec.sweep
    run = store.open_run(spec.key(lm.identity()), used, spec.shard_size, prov)
    if _restorable(run, used):
        run.write_pairs(used)
    return run


def pairs_problem(run) -> str | None:
    """What is wrong with a run's ``pairs.parquet``: not as ``run.json`` records it, or its
    pairs' SHA-256 (:func:`xcomps_utils.runs.planner.pairs_sha256`) is not the key's
    ``pairs_sha256``; ``None`` if it checks."""
    problem = run.store.pairs_problem(run)
    if problem:
        return problem
    key = run.record["key"]
    if "pairs_sha256" not in key or key.get("method") not in _REGISTRY:
        return None
    try:
        pairs = pd.read_parquet(run.folder / "pairs.parquet")
    except Exception:  # noqa: BLE001 - any unreadable file is damaged
        return "unreadable"
    if planner.pairs_sha256(pairs, _REGISTRY[key["method"]].uses) != key["pairs_sha256"]:
        return "altered (its pairs' SHA-256 is not the run key's pairs_sha256)"
    return None


def _restorable(run, used: pd.DataFrame | None) -> bool:
    """Whether the run's ``pairs.parquet`` has a problem that ``used`` fixes (its pairs SHA-256
    is the key's); reads only."""
    return used is not None and bool(pairs_problem(run)) and planner.pairs_sha256(
        used, _REGISTRY[run.record["key"]["method"]].uses) == run.record["key"].get(
        "pairs_sha256")


def verify(store: Store, runs: list[str] | None = None) -> list[dict]:
    """:meth:`xcomps_utils.runs.store.Store.verify`, and each run's ``pairs.parquet`` checked
    against the pairs SHA-256 of its key (:func:`pairs_problem`); same problem rows."""
    problems = store.verify(runs)
    seen = {(p["run"], p["file"]) for p in problems}
    bad = {p["run"] for p in problems if p["file"].endswith("run.json")}
    for rid in store.ids() if runs is None else runs:
        f = f"runs/{rid}/pairs.parquet"
        if rid in bad or (rid, f) in seen:
            continue
        problem = pairs_problem(store.run(rid))
        if problem:
            problems.append({"run": rid, "shard": "", "file": f, "repair": "",
                             "problem": f"{problem}; rerun the run (the same command or "
                                        f"methods.run call) to restore it, then repair"})
    return problems


def compute_shard(run, i: int, lm, used: pd.DataFrame, p: dict, wait: bool = True) -> str:
    """Compute and write shard ``i`` under its lock: ``"written"``, ``"done"`` (finished by
    another attempt) or ``"held"`` (another process holds it and ``wait`` is false).

    Raises:
        StoreError: the model, dtype or device kind is not the run's.
    """
    key = run.record["key"]
    mine = json.loads(json.dumps(lm.identity(), default=str))
    if any(key.get(k) != v for k, v in mine.items()):
        raise StoreError(f"the model holds {mine}, but run {run.id} was opened with "
                         f"{ {k: key.get(k) for k in mine} }")
    if run.is_done(i):
        return "done"
    lock = run.try_lock(i)
    if lock is None:
        if not wait:
            return "held"
        lock = run.lock(i)
        lock.acquire()
    try:
        if run.is_done(i):
            return "done"
        size = run.record["shard_size"]
        shard = used.iloc[i * size:(i + 1) * size].reset_index(drop=True)
        start = time.perf_counter()
        measures, details = SHARD[key["method"]](lm, shard, p)
        run.write_shard(i, measures, details, seconds=time.perf_counter() - start)
        return "written"
    finally:
        lock.release()


def finish(run, used: pd.DataFrame, p: dict) -> str:
    """The run-level step after the last shard: the method's finishing step, if it has one
    (``Method.finish_shard``, written once: Neuro's probes over every state shard), then the run
    marked complete. Returns the run id.

    Raises:
        StoreError: a shard of the run is not done.
    """
    rec = run.record
    missing = [i for i in range(rec["n_shards"]) if not run.is_done(i)]
    if missing:
        raise StoreError(f"run {run.id}: shard(s) {missing} not done; cannot finish it")
    method = _REGISTRY[rec["key"]["method"]]
    last = method.finish_shard
    if last and not run.is_done(last):
        with run.lock(last):
            if not run.is_done(last):
                start = time.perf_counter()
                out = method.finish(run.store, run.id, used, p)
                run.write_shard(last, out, seconds=time.perf_counter() - start)
    if not run.complete:
        run.finish()
    return run.id


def row(spec: planner.RunSpec, rid: str, n_shards: int, computed: int, opened: bool = True) -> dict:
    """One row of the table of runs an executor returns (``opened``: the model was loaded
    for it; ``False``: read complete from the store)."""
    return {"model": spec.model, "method": spec.method, "data": spec.data, "run": rid,
            "pairs": len(spec.used) if spec.used is not None else None, "shards": n_shards,
            "computed": computed, "status": "complete", "opened": opened}


def stored(store: Store, spec: planner.RunSpec, device_kind: str | None = None,
           ident: dict | None = None) -> dict | None:
    """The row of a run ``store`` holds complete, found without loading the model (``ident``:
    the identity of a loaded model); ``None`` otherwise, and for a complete run whose
    ``pairs.parquet`` must be restored from the spec's pairs (:func:`open_run` does). Writes
    nothing."""
    ident = ident or planner.identity(spec, device_kind)
    if ident is None:
        return None
    try:
        run = store.run(spec.run_id(ident))
    except KeyError:
        return None
    if not run.complete or _restorable(run, spec.used):
        return None
    return row(spec, run.id, run.record["n_shards"], 0, False)


def precheck(store: Store, spec: planner.RunSpec, ident: dict | None = None) -> None:
    """Before a model loads for a spec (where its id is known without loading): the run
    ``store`` holds of that id checks (an unfinished run's done shards, its record; a
    ``pairs.parquet`` that :func:`open_run` will restore from the spec's pairs apart), and no
    file of that id lies in the store without a record. Writes nothing.

    Raises:
        StoreError: names the run, the file and what to do.
    """
    ident = ident or planner.identity(spec)
    if ident is None:
        return
    rid = spec.run_id(ident)
    store.check_unowned(rid)
    if rid in store.ids():
        restored = {f"runs/{rid}/pairs.parquet"} if _restorable(store.run(rid), spec.used) \
            else set()
        store.check(rid, ignore=restored)


def store_of(specs: list[planner.RunSpec], store: Store | None = None) -> Store | None:
    """The one results store of ``specs``: ``store``, or opened from the folder they name
    (``None`` without specs).

    Raises:
        ValueError: the specs name several stores, or another than ``store``.
    """
    roots = {str(Path(s.store).resolve()) for s in specs}
    if store is not None:
        roots.add(str(store.root.resolve()))
    if len(roots) > 1:
        raise InputError(f"the 'specs' parameter must name one results store (that of "
                         f"'store' when given); got {sorted(roots)}")
    return store if store is not None or not specs else Store(specs[0].store)


def execute(specs: list[planner.RunSpec], lm=None, progress: bool = True, truncate: bool = False,
            store: Store | None = None) -> list[dict]:
    """Compute the specs in this process: a complete run is read (its model not loaded), an
    unfinished one resumes; a shard another process holds is left to it and waited for last.

    Args:
        lm: a loaded model for every spec (default: each spec's model loaded by name).
        truncate: the pairs were cut to the model's context (skip the context check).
        store: the results store the specs name (default: opened once from their folder,
            :func:`store_of`); every step gets this one.

    Returns:
        one :func:`row` per spec.

    Raises:
        StoreError: the store is not writable; ValueError: specs of several stores, a device
            this machine lacks, a text longer than the model's context; ModelNotFoundError.
    """
    from tqdm.auto import tqdm

    store = store_of(specs, store)
    rows, todo = {}, []
    for k, spec in enumerate(specs):
        found = stored(store, spec, ident=lm.identity() if lm is not None else None)
        if found is not None:
            rows[k] = found
        else:
            todo.append(k)
    if todo:  # before any model loads: the store, the runs it holds, and the device
        store.check_writable()
        for k in todo:
            precheck(store, specs[k], lm.identity() if lm is not None else None)
        if lm is None:
            from ..lm.models import resolve_device_dtype  # torch, only when something is computed

            for k in todo:
                resolve_device_dtype(specs[k].device, specs[k].dtype, check=True)
    by_model = {}
    for k in todo:
        s = specs[k]
        by_model.setdefault((s.model, s.device, s.dtype, s.revision), []).append(k)
    for (model, device, dtype, revision), ks in by_model.items():
        m = lm if lm is not None else planner.load(model, device, dtype, revision)
        if not truncate:  # every text fits the context, before any shard is computed
            prompts = any(_REGISTRY[specs[k].method].prompts for k in ks)
            for k in ks:
                fit_context(m, specs[k].used, together=prompts)
        for k in ks:
            spec = specs[k]
            run = open_run(store, spec, m, spec.used)
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


def repair(store: Store, problems: list[dict] | None = None, device: str = "auto") -> list[dict]:
    """:meth:`xcomps_utils.runs.store.Store.repair` with the run's own model, dtype, device kind and
    parameters: recompute the damaged shards :meth:`~xcomps_utils.runs.store.Store.verify` finds.

    Args:
        device: where to load each run's model (``"auto"``: the run's device kind).

    Raises:
        StoreError: before any model loads, a run that cannot be repaired (its record is
            unreadable or names another run, its ``pairs.parquet`` is missing or not the
            key's pairs, data no record owns) or a store that does not take files; after, a
            model loaded now that is not the run's (other weights or dtype).
    """
    import re

    problems = verify(store) if problems is None else problems
    # before any model loads: what no recomputation fixes, the inputs of every run to
    # recompute, and that the store takes the files
    for rid in dict.fromkeys(p["run"] for p in problems if p.get("repair") == "recompute"):
        problem = pairs_problem(store.run(rid))
        if problem:
            problems = problems + [{"run": rid, "shard": "", "repair": "",
                                    "file": f"runs/{rid}/pairs.parquet",
                                    "problem": f"{problem}: the shards cannot be recomputed "
                                               f"from it; rerun the run (the same command or "
                                               f"methods.run call) to restore it, then repair"}]
    manual = [p for p in problems if not p.get("repair", "recompute" if p["shard"] else "")]
    if manual:
        store.repair(None, manual)  # raises, naming the first
    if problems:
        store.check_writable()

    def recompute(run):
        key = run.record["key"]
        rev = key.get("model_revision")
        lm = planner.load(key["model"], key["device"] if device == "auto" else device,
                          key["dtype"], rev if rev and re.fullmatch(r"[0-9a-f]{40}", str(rev))
                          else None)
        mine = json.loads(json.dumps(lm.identity(), default=str))
        if any(key.get(k) != v for k, v in mine.items()):
            raise StoreError(f"cannot repair run {run.id}: it was computed with "
                             f"{ {k: key.get(k) for k in mine} }, the model loaded now is {mine}")
        p, used, size = planner.parameters_of(key), run.pairs(), run.record["shard_size"]

        method = _REGISTRY[key["method"]]

        def one(name):
            if name == method.finish_shard:  # reads the (verified) shards
                return method.finish(store, run.id, used, p), {}
            i = int(name.removeprefix("shard-"))
            return SHARD[key["method"]](lm, used.iloc[i * size:(i + 1) * size].reset_index(
                drop=True), p)
        return one

    return store.repair(recompute, problems)


@dataclass
class Results:
    """What :func:`run` returns.

    Attributes:
        measures: the long table (:data:`xcomps_utils.runs.store.MEASURE_COLUMNS` plus ``run``).
        runs: ``{method: run id}``.
        store: where they live.
        computed: ``{method: shards computed by this call}`` (0: read from the store).
        model: the loaded model, or ``None`` if nothing had to be computed.
    """

    measures: pd.DataFrame
    runs: dict
    store: Store
    computed: dict = field(default_factory=dict)
    model: LanguageModel | None = None

    def wide(self, method: str | None = None) -> pd.DataFrame:
        """:func:`wide` of the measures (of one method)."""
        m = self.measures if method is None else self.measures[self.measures.method == method]
        return wide(m)

    def detail(self, name: str) -> pd.DataFrame:
        """A detail table (``direct_tokens``, ``ppl_groups``, ``ppl_tokens``) of these runs."""
        frames = [self.store.detail(r, name) for r in self.runs.values()]
        frames = [f for f in frames if len(f)]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def provenance(self, method: str) -> dict:
        """The run record of a method: key, provenance, status."""
        return self.store.run(self.runs[method]).record

    def compute_seconds(self) -> dict:
        """Per method, the compute seconds its run took on the machine that computed it (sum
        over shards; ``None`` where a shard did not record it)."""
        return {m: self.store.run(r).compute_seconds() for m, r in self.runs.items()}

    def describe_model(self) -> str:
        """One line on the model, from the store's provenance when it was not loaded."""
        if self.model is not None:
            from ..lm.models import describe

            return describe(self.model)
        key = self.provenance(next(iter(self.runs)))["key"]
        return (f"{key['model']} ({key['dtype']}, {key['device']}; weights "
                f"{str(key['model_revision'])[:12]}): read from the results store {self.store.root}")


def wide(measures: pd.DataFrame) -> pd.DataFrame:
    """One row per (method, identifiers, wording, order, layer), one column per measure."""
    idx = [c for c in ["run", "method"] + _ID + ["wording", "order", "layer"] if c in measures]
    out = measures.set_index(idx + ["measure"])["value"].unstack("measure").reset_index()
    out.columns.name = None
    return out


def specs(model: str, pairs: pd.DataFrame, methods=(DEFAULT_METHOD,), *,
          store: str | Path, device="auto", dtype="auto", revision: str | None = None,
          shard_size: int | None = None, **parameters) -> list[planner.RunSpec]:
    """The runs :func:`run` makes of the same arguments, one per method, before any model loads:
    the arguments checked as :func:`run` checks them, then
    :func:`xcomps_utils.runs.planner.plan` (the one place :func:`run` plans). With the model's
    identity (:func:`xcomps_utils.runs.planner.identity`, no model loaded) a spec gives the run
    id; what :mod:`xcomps_utils.pages.study` lists before a study computes anything.

    Args:
        model: a model name (embedded, folder, hub id, ``random:``).
        pairs, methods, store, device, dtype, revision, shard_size: as for :func:`run`.
        parameters: the method parameters of :func:`run` (``bos_policy``, ``token_budget``,
            ``batch_size``, ``use_chat_template``, ``wordings``, ``probe_by``, ``n_splits``,
            ``inner_splits``, ``seed``; :class:`~xcomps_utils.methods.config.RunParameters`).

    Raises:
        ParameterError, InputError: as :func:`run` raises them before any model loads.
    """
    from ..declare import check, Device, Dtype, Model
    from ..methods.config import MethodNames, RunParameters, ShardSize

    methods = check(MethodNames, [methods] if isinstance(methods, str) else methods, "methods")
    params = validate(RunParameters, parameters)  # the pairs: checked by plan
    return planner.plan(check(Model, model, "model"), pairs, methods, params, store=store,
                        shard_size=check(ShardSize, shard_size, "shard_size"),
                        device=check(Device, device, "device"),
                        dtype=check(Dtype, dtype, "dtype"), revision=revision)


def run(model: str | LanguageModel, pairs: pd.DataFrame, methods=(DEFAULT_METHOD,), *,
        store: str | Store | None = None, device="auto", dtype="auto", revision: str | None = None,
        bos_policy: str = "bos", token_budget: int | str | None = "auto",
        batch_size: int | None = None, shard_size: int | None = None,
        use_chat_template: bool = False, wordings="all",
        probe_by=(("lang", "subset"), ("lang",)), n_splits: int = 5, inner_splits: int = 3,
        seed: int = 0, progress: bool = True,
        truncate: bool = False) -> Results:
    """Run methods over minimal pairs, through the results store.

    The pairs' tasks name the data files read (their checksums go into the provenance, see
    :func:`xcomps_utils.pairs.tasks.provenance`). The runs are :func:`xcomps_utils.runs.planner.plan` of
    this selection, executed in this process (:func:`execute`).

    For each method, the run's key (model and weights identity, dtype, device kind, BOS policy,
    a SHA-256 of the pairs' identifiers and texts, the method's parameters, its computation version) names
    a run of the store. A complete run is read, an unfinished one resumes from its finished
    shards, a new one is computed shard by shard. A model given by name is loaded only if some
    run must be computed.

    Args:
        model: an embedded model name, local folder or Hugging Face id, or a loaded
            :class:`~xcomps_utils.lm.models.LanguageModel`.
        pairs: minimal pairs (``dataset``, ``pair_id``, ``good``, ``bad``; the identifiers
            ``task``, ``lang``, ``subset``, ``item`` when known), e.g. from
            :func:`xcomps_utils.pairs.tasks.sample` or :func:`xcomps_utils.pairs.xcomps.load_languages`.
        methods: any of :data:`METHODS` (a single name is accepted).
        store: results folder (``None``: a temporary one, nothing kept).
        device, dtype, revision: for loading a model by name (see
            :func:`~xcomps_utils.lm.models.load_model`).
        bos_policy: Direct's first-token convention (:data:`xcomps_utils.lm.encoding.BOS_POLICIES`);
            Meta, Neuro and token-level perplexity always use ``"bos"``.
        token_budget, batch_size: batching (``token_budget="auto"``: from the device). They do
            not change the numbers (tested), so they are not part of the key.
        shard_size: pairs per shard (default :data:`DEFAULT_SHARD_SIZE`); a resumed run keeps
            the shard size it started with.
        use_chat_template: Meta's prompt through the tokenizer's chat template.
        wordings: token-level perplexity wordings, ``"all"`` or a list of wording ids.
        probe_by: Neuro probe groups, each a list of pair columns (``[]``: one probe on all).
        n_splits, inner_splits, seed: Neuro's outer and inner (layer choice) cross-validation
            folds and seed (:func:`xcomps_utils.methods.probing.probe_pairs`).
        progress: a tqdm bar per method (pairs done).
        truncate: cut texts longer than the model's context (with a warning; the run's key
            follows the cut texts) instead of failing. The model is loaded to count tokens.

    Every input is checked before any work, and before any run folder is created: the methods
    and parameters, the texts (:func:`xcomps_utils.lm.encoding.check_pair_texts`), the model name,
    device and dtype, the store; when something must be computed, that the store is writable,
    the device is there, and (once the model is loaded) that no text starts with the BOS string
    or exceeds the model's context (:func:`xcomps_utils.lm.encoding.fit_context`). Two processes
    running the same run share its shards: one skips a shard the other holds or has finished.

    Returns:
        :class:`Results`.

    Raises:
        ParameterError: a value its declared type refuses (:mod:`xcomps_utils.declare`: an
            unknown method, BOS policy, device or dtype, a seed outside 0 to 2**32 - 1, ...), a
            device this machine lacks, pairs without the columns a method needs.
        InputError: a bad text (names the pair and field).
        ModelNotFoundError: an unknown model name (see :func:`~xcomps_utils.lm.models.load_model`).
        StoreError: the store is a file or not writable, or a run it holds is damaged (see
            :meth:`xcomps_utils.runs.store.Store.verify`).
    """
    from ..declare import check, Device, Dtype, Model, ParameterTypeError
    from ..methods.config import MethodNames, RunParameters, ShardSize

    methods = check(MethodNames, [methods] if isinstance(methods, str) else methods, "methods")
    shard_size = check(ShardSize, shard_size, "shard_size")
    device, dtype = check(Device, device, "device"), check(Dtype, dtype, "dtype")
    params = validate(RunParameters, dict(
        bos_policy=bos_policy, token_budget=token_budget, batch_size=batch_size,
        use_chat_template=use_chat_template, wordings=wordings, probe_by=probe_by,
        n_splits=n_splits, inner_splits=inner_splits, seed=seed)).model_dump()
    given = not isinstance(model, str)
    if isinstance(model, str):
        lm, name = None, check(Model, model, "model")
    else:
        from ..lm.models import LanguageModel

        if not isinstance(model, LanguageModel):
            raise ParameterTypeError("model", "a model name or a loaded LanguageModel", model)
        lm, name = model, model.name
    pairs = prepare_pairs(pairs)
    check_inputs(pairs, methods, wordings, probe_by)
    tmp = None
    if store is None:
        tmp = tempfile.TemporaryDirectory(prefix="xcomps-store-")
        store = tmp.name
    store = store if isinstance(store, Store) else Store(store)
    if truncate:  # the cut texts are the pairs of the key
        lm = lm or planner.load(name, device, dtype, revision)
        prompts = any(_REGISTRY[m].prompts for m in methods)
        pairs = fit_context(lm, pairs, together=prompts, truncate=True)
    planned = specs(name, pairs, methods, store=store.root, device=device, dtype=dtype,
                    revision=revision, shard_size=shard_size, **params)
    rows = execute(planned, lm=lm, progress=progress, truncate=truncate, store=store)
    runs = {r["method"]: r["run"] for r in rows}
    computed = {r["method"]: r["computed"] for r in rows}
    if lm is None and any(r["opened"] for r in rows):  # loaded by execute (cached)
        lm = planner.load(name, device, dtype, revision)
    loaded = lm if lm is not None and any(r["opened"] for r in rows) or given else None
    results = Results(store.measures(list(runs.values())), runs, store, computed, loaded)
    results._tmp = tmp  # a temporary store lives as long as its results
    return results

