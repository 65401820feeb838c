"""Sweeps: models x data x methods as runs of the results store, on one process or on Ray.

A *sweep file* (YAML) names models, methods, pair sets (XCOMPS languages or minimal-pair tasks with
their sample sizes), dtype, device and the store folder. :func:`load_sweep` validates it (every
error names the file, the field and what is allowed); :func:`plan` expands it into runs, one per
model x pair set x method, each with exactly the key, run id, pairs and shards that
:func:`xcomps_utils.methods.run` (and ``xcomps-study run``) gives the same selection, so a sweep's
runs *are* those runs: either one reads, resumes or completes the other's. :func:`run_sweep`
computes the runs' unfinished shards:

* on Ray (``pip install xcomps-study[ray]``): one long-lived actor per GPU (``num_gpus=1``) holds
  one model replica, loaded once and swapped only when the queue moves on to the next model; the
  driver hands each idle actor a shard (a few bytes: run id and shard number, the pairs travel once
  per run through the object store) and the actor writes the shard's files into the store itself
  (on a cluster, a folder every node mounts). A killed actor is restarted and its shard retried
  (``ray.max_retries``); the store's done markers and a per-shard file lock (:func:`commit_shard`)
  make every shard written exactly once. The run-level step of Neuro (the probes over every
  state shard) runs once, as a CPU task, after the run's last shard.
* without Ray, or with ``executor: local``, the same plan in this process, one shard after the
  other (what :func:`xcomps_utils.methods.run` does).

Why Ray actors and not Ray Data ``map_batches`` with an actor pool: the unit of work is a store
shard with a side effect (its files, then its done marker), not a stream of rows into a sink.
With actors the shard stays the unit of scheduling, retrying and resuming, the length bucketing
stays inside a shard (:func:`xcomps_utils.scoring.token_scores`), and results are written where
they are computed: Neuro's hidden states (~270 KB per sentence for an 8 B model) never cross the
object store or the driver. Ray Data would re-block the pairs, need a custom datasink for the
done markers, and stream every result back through the object store.

Example::

    from xcomps_utils.sweep import load_sweep, run_sweep
    result = run_sweep(load_sweep("sweeps/embedded.yaml"))   # Ray if installed, else one process
    result.runs                                              # one row per run
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import time
import warnings
from pathlib import Path

import pandas as pd

from . import __version__

__all__ = ["SweepError", "Sweep", "RunSpec", "SweepResult", "load_sweep", "parse_sweep", "plan",
           "run_sweep", "commit_shard", "EXECUTORS"]

EXECUTORS = ("auto", "ray", "local")
_DTYPES = ("auto", "float32", "bfloat16", "float16")
_SOURCES = ("sample", "upstream")
_TOP = {
    "store": "results store folder (default: results)",
    "models": "model names: embedded names, local folders or Hugging Face ids",
    "methods": "direct, meta, neuro, token_ppl",
    "data": "a list of pair sets: {languages: [...]} or {tasks: [...]}",
    "seed": "integer (sampling and Neuro folds), default 0",
    "device": "auto, cpu, cuda, ... (on Ray: as each replica sees it)",
    "dtype": ", ".join(_DTYPES),
    "revision": "hub revision, or null",
    "token_budget": "auto, null or an integer >= 1",
    "batch_size": "null or an integer >= 1",
    "bos_policy": "bos, drop_first, lm_eval",
    "use_chat_template": "true or false",
    "wordings": "all, or a list of token-level perplexity wording ids",
    "shard_size": "an integer >= 1, or {method: integer}",
    "probe_by": "a list of lists of pair columns (Neuro probe groups)",
    "n_splits": "an integer >= 2 (Neuro folds)",
    "inner_splits": "an integer >= 2 (Neuro's inner folds that choose the layer)",
    "executor": ", ".join(EXECUTORS),
    "ray": "{address, replicas, num_gpus, num_cpus, probe_cpus, max_retries}",
}
_DATA = {"languages": ("languages", "source", "items_per_language", "methods"),
         "tasks": ("tasks", "n_pairs", "methods")}
_RAY = {"address": "null (a local Ray, or the one this process already joined), auto, or "
                   "ray://host:port",
        "replicas": "auto (one per num_gpus GPUs, else per num_cpus CPUs) or an integer >= 1",
        "num_gpus": "auto (1 when the cluster has GPUs, else 0) or a number >= 0 per replica",
        "num_cpus": "a number >= 0 per replica (default 1)",
        "probe_cpus": "a number >= 0 for the Neuro probe task (default 1)",
        "max_retries": "an integer >= 0: restarts of a killed replica and retries of its shard"}


class SweepError(ValueError):
    """A sweep file that cannot run: names the file, the field and what is allowed."""


# --- the sweep file ------------------------------------------------------------------------------

@dataclasses.dataclass
class Sweep:
    """A validated sweep (see :func:`parse_sweep` for the fields)."""

    models: list
    methods: list
    data: list
    store: str = "results"
    seed: int = 0
    device: str = "auto"
    dtype: str = "auto"
    revision: str | None = None
    token_budget: int | str | None = "auto"
    batch_size: int | None = None
    bos_policy: str = "bos"
    use_chat_template: bool = False
    wordings: str | list = "all"
    shard_size: int | dict | None = None
    probe_by: list = dataclasses.field(default_factory=lambda: [["lang", "subset"], ["lang"]])
    n_splits: int = 5
    inner_splits: int = 3
    executor: str = "auto"
    ray: dict = dataclasses.field(default_factory=dict)
    file: str = "<sweep>"

    def shard_size_of(self, method: str) -> int | None:
        s = self.shard_size
        return s.get(method) if isinstance(s, dict) else s


def load_sweep(path: str | os.PathLike) -> Sweep:
    """Read and validate a sweep file (YAML).

    Raises:
        SweepError: unreadable YAML (with the line) or any invalid field (see :func:`parse_sweep`).
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise SweepError(f"{path}: cannot read the sweep file ({err.strerror})") from err
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise SweepError(f"{path}:{where} not valid YAML: {getattr(err, 'problem', err)}") from err
    return parse_sweep(raw, file=str(path))


def _fail(file, field, problem, allowed=None):
    raise SweepError(f"{file}: {field}: {problem}" + (f"; allowed: {allowed}" if allowed else ""))


def _unknown(file, where, keys, allowed):
    for k in keys:
        if k not in allowed:
            close = difflib.get_close_matches(str(k), list(allowed), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            _fail(file, f"{where}{k}", f"unknown field{hint}", ", ".join(allowed))


def _int(file, field, v, low, none=False):
    if v is None and none:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        _fail(file, field, f"{v!r} is not an integer >= {low}",
              f"an integer >= {low}" + (" or null" if none else ""))
    return v


def _names(file, field, v, allowed=None) -> list[str]:
    v = [v] if isinstance(v, str) else v
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
        _fail(file, field, f"{v!r} is not a non-empty list of names",
              ", ".join(allowed) if allowed else "a list of strings")
    if allowed is not None:
        for i, x in enumerate(v):
            if x not in allowed:
                close = difflib.get_close_matches(x, list(allowed), n=1)
                _fail(file, f"{field}[{i}]", f"unknown value {x!r}"
                      + (f" (did you mean {close[0]!r}?)" if close else ""), ", ".join(allowed))
    return list(dict.fromkeys(v))


def _choice(file, field, v, allowed):
    if v not in allowed:
        _fail(file, field, f"{v!r} is not allowed", ", ".join(map(str, allowed)))
    return v


def parse_sweep(raw, file: str = "<sweep>") -> Sweep:
    """Validate a sweep description (the mapping a sweep file holds).

    Fields (only ``models``, ``methods`` and ``data`` are required)::

        store: results                  # the results store (on a cluster: a shared folder)
        models: [smollm2-135m-instruct, gemma-3-270m]
        methods: [direct, meta]
        data:                           # pair sets; each runs every method (or its own list)
          - {languages: [en, de], source: sample, items_per_language: 10}
          - {tasks: [blimp_anaphor, dust], n_pairs: 200, methods: [direct, token_ppl]}
        seed: 0
        device: auto                    # as each replica sees it
        dtype: auto                     # auto, float32, bfloat16, float16
        shard_size: 100                 # or {direct: 1000, meta: 200}; default per method
        executor: auto                  # auto (Ray if installed), ray, local
        ray: {address: null, replicas: auto, num_gpus: auto, num_cpus: 1, max_retries: 3}

    plus ``revision``, ``token_budget``, ``batch_size``, ``bos_policy``, ``use_chat_template``,
    ``wordings``, ``probe_by``, ``n_splits``, ``inner_splits`` as for
    :func:`xcomps_utils.methods.run`.

    Raises:
        SweepError: ``"<file>: <field>: <problem>; allowed: <values>"`` for an unknown field, a
            value of the wrong kind, an unknown method, task, language or model, or a method a
            pair set cannot run (Meta needs XCOMPS languages; token_ppl needs tasks).
    """
    from . import data as D
    from . import tasks as T
    from . import xcomps as X
    from .encoding import BOS_POLICIES
    from .methods import METHODS

    if not isinstance(raw, dict):
        _fail(file, "(top level)", f"a sweep is a mapping of fields, got {type(raw).__name__}",
              ", ".join(_TOP))
    _unknown(file, "", raw, _TOP)
    for req in ("models", "methods", "data"):
        if req not in raw:
            _fail(file, req, "missing (required)", _TOP[req])
    s = Sweep(models=_names(file, "models", raw["models"]),
              methods=_names(file, "methods", raw["methods"], METHODS), data=[], file=file)
    if "store" in raw:
        if not isinstance(raw["store"], str) or not raw["store"]:
            _fail(file, "store", f"{raw['store']!r} is not a folder name", _TOP["store"])
        s.store = raw["store"]
    s.seed = _int(file, "seed", raw.get("seed", 0), -2**31)
    s.device = raw.get("device", "auto")
    if not isinstance(s.device, str):
        _fail(file, "device", f"{s.device!r} is not a device name", _TOP["device"])
    s.dtype = _choice(file, "dtype", raw.get("dtype", "auto"), _DTYPES)
    s.revision = raw.get("revision")
    if s.revision is not None and not isinstance(s.revision, str):
        _fail(file, "revision", f"{s.revision!r} is not a string", _TOP["revision"])
    tb = raw.get("token_budget", "auto")
    s.token_budget = tb if tb == "auto" else _int(file, "token_budget", tb, 1, none=True)
    s.batch_size = _int(file, "batch_size", raw.get("batch_size"), 1, none=True)
    s.bos_policy = _choice(file, "bos_policy", raw.get("bos_policy", "bos"), BOS_POLICIES)
    s.use_chat_template = _choice(file, "use_chat_template", raw.get("use_chat_template", False),
                                  (True, False))
    w = raw.get("wordings", "all")
    s.wordings = w if w == "all" else _names(file, "wordings", w)
    sz = raw.get("shard_size")
    if isinstance(sz, dict):
        _unknown(file, "shard_size.", sz, METHODS)
        s.shard_size = {m: _int(file, f"shard_size.{m}", v, 1) for m, v in sz.items()}
    else:
        s.shard_size = _int(file, "shard_size", sz, 1, none=True)
    pb = raw.get("probe_by", s.probe_by)
    if not isinstance(pb, list) or not all(isinstance(b, list) and all(isinstance(c, str)
                                                                       for c in b) for b in pb):
        _fail(file, "probe_by", f"{pb!r} is not a list of lists of column names", _TOP["probe_by"])
    s.probe_by = pb
    s.n_splits = _int(file, "n_splits", raw.get("n_splits", 5), 2)
    s.inner_splits = _int(file, "inner_splits", raw.get("inner_splits", 3), 2)
    s.executor = _choice(file, "executor", raw.get("executor", "auto"), EXECUTORS)
    r = raw.get("ray") or {}
    if not isinstance(r, dict):
        _fail(file, "ray", f"{r!r} is not a mapping", _TOP["ray"])
    _unknown(file, "ray.", r, _RAY)
    s.ray = {"address": r.get("address"), "replicas": r.get("replicas", "auto"),
             "num_gpus": r.get("num_gpus", "auto"), "num_cpus": r.get("num_cpus", 1),
             "probe_cpus": r.get("probe_cpus", 1), "max_retries": r.get("max_retries", 3)}
    if s.ray["address"] is not None and not isinstance(s.ray["address"], str):
        _fail(file, "ray.address", f"{s.ray['address']!r} is not an address", _RAY["address"])
    if s.ray["replicas"] != "auto":
        _int(file, "ray.replicas", s.ray["replicas"], 1)
    for k in ("num_gpus", "num_cpus", "probe_cpus"):
        v = s.ray[k]
        if not (k == "num_gpus" and v == "auto") and (isinstance(v, bool)
                                                      or not isinstance(v, (int, float)) or v < 0):
            _fail(file, f"ray.{k}", f"{v!r} is not a number >= 0", _RAY[k])
    _int(file, "ray.max_retries", s.ray["max_retries"], 0)

    entries = raw["data"]
    if not isinstance(entries, list) or not entries:
        _fail(file, "data", f"{entries!r} is not a non-empty list of pair sets", _TOP["data"])
    for i, e in enumerate(entries):
        f = f"data[{i}]"
        if not isinstance(e, dict) or ("languages" in e) == ("tasks" in e):
            _fail(file, f, "each pair set has either 'languages' (XCOMPS) or 'tasks'",
                  "{languages: [en, de], source: sample, items_per_language: 10} or "
                  "{tasks: [blimp_anaphor], n_pairs: 200}")
        kind = "languages" if "languages" in e else "tasks"
        _unknown(file, f"{f}.", e, _DATA[kind])
        ms = _names(file, f"{f}.methods", e["methods"], METHODS) if "methods" in e \
            else list(s.methods)
        entry = {"kind": kind, "methods": ms}
        if kind == "languages":
            entry["source"] = _choice(file, f"{f}.source", e.get("source", "sample"), _SOURCES)
            langs = (X.SAMPLE_LANGUAGES if entry["source"] == "sample"
                     else ["en"] + list(X.XCOMPS_LANGUAGES))
            entry["languages"] = _names(file, f"{f}.languages", e["languages"], langs)
            entry["items_per_language"] = _int(file, f"{f}.items_per_language",
                                               e.get("items_per_language"), 1, none=True)
            bad = [m for m in ms if m == "token_ppl"]
            why = "token-level perplexity has no prompt wordings for XCOMPS yet"
        else:
            entry["tasks"] = _names(file, f"{f}.tasks", e["tasks"])
            for j, name in enumerate(entry["tasks"]):
                try:
                    T.get(name)
                except D.DataError as err:
                    _fail(file, f"{f}.tasks[{j}]", str(err))
            entry["n_pairs"] = _int(file, f"{f}.n_pairs", e.get("n_pairs"), 1, none=True)
            bad = [m for m in ms if m == "meta"]
            why = "Meta needs XCOMPS pairs (a pair set with 'languages')"
        if bad:
            ok = [m for m in METHODS if m not in ("meta" if kind == "tasks" else "token_ppl")]
            _fail(file, f"{f}.methods" if "methods" in e else "methods",
                  f"a pair set of {kind} cannot run {bad[0]}: {why}; give data[{i}] its own "
                  f"'methods' list", ", ".join(ok))
        s.data.append(entry)
    return s


# --- expanding into runs -------------------------------------------------------------------------

@dataclasses.dataclass
class RunSpec:
    """One run of a sweep, before its model is loaded.

    Attributes:
        model: model name; method: one of :data:`xcomps_utils.methods.METHODS`.
        data: the pair set, in words (``"xcomps en,de (sample)"``).
        key_rest: the run's key without the model identity (which the replica that loads the
            model adds: device kind and weights revision are only certain there).
        used: the pairs the run scores (the columns the method uses), in shard order.
        shard_size: pairs per shard (an existing run keeps its own).
        p: the method parameters (as in :func:`xcomps_utils.methods.run`).
        datasets: ``{file: sha256}`` of the data files read.
        store: absolute path of the results store.
    """

    model: str
    method: str
    data: str
    key_rest: dict
    used: pd.DataFrame | None
    shard_size: int
    p: dict
    datasets: dict
    store: str
    device: str = "auto"
    dtype: str = "auto"
    revision: str | None = None
    sweep: str = ""

    @property
    def n_shards(self) -> int:
        return max(1, -(-len(self.used) // self.shard_size)) if self.used is not None else 0

    def light(self) -> "RunSpec":
        """The spec without its pairs (what travels with every shard task)."""
        return dataclasses.replace(self, used=None)


def _pair_sets(sweep: Sweep):
    """``[(label, methods, pairs, datasets)]``: the pairs of each data entry, selected exactly as
    ``xcomps-study run`` selects them (so a sweep's runs are the command's runs)."""
    from . import tasks as T
    from . import xcomps as X

    out = []
    for e in sweep.data:
        if e["kind"] == "languages":
            pairs = X.load_languages(e["languages"], source=e["source"],
                                     items_per_language=e["items_per_language"], seed=sweep.seed)
            label = f"xcomps {','.join(e['languages'])} ({e['source']})"
            out.append((label, e["methods"], pairs, {}))
            continue
        label = ",".join(e["tasks"])
        direct_like = [m for m in e["methods"] if m != "token_ppl"]
        if direct_like:
            out.append((label, direct_like, T.sample(e["tasks"], e["n_pairs"], sweep.seed),
                        T.checksums(e["tasks"])))
        if "token_ppl" in e["methods"]:
            out.append((label, ["token_ppl"],
                        T.sample(e["tasks"], e["n_pairs"], sweep.seed, selection=True),
                        T.checksums(e["tasks"])))
    return out


def plan(sweep: Sweep, store: str | os.PathLike | None = None) -> list[RunSpec]:
    """Expand a sweep into runs: models x pair sets x methods, model by model.

    Each run's pairs, key (less the model identity) and parameters are those
    :func:`xcomps_utils.methods.run` builds for the same call, so the run ids agree.

    Raises:
        SweepError: a model that cannot be loaded (names ``models[i]``; see
            :func:`xcomps_utils.models.check_model`), a store that is a file, a pair set with a
            bad text or parameter (see :func:`xcomps_utils.methods.run`).
        DataError: a data file is missing or altered (see :mod:`xcomps_utils.data`).
    """
    from . import methods as M
    from .models import ModelNotFoundError, check_model
    from .store import Store, StoreError

    for i, model in enumerate(sweep.models):
        try:
            check_model(model, sweep.revision)
        except (ModelNotFoundError, ModuleNotFoundError) as err:
            _fail(sweep.file, f"models[{i}]", str(err))
    root = str(Path(store if store is not None else sweep.store).resolve())
    try:
        Store(root)
    except StoreError as err:
        _fail(sweep.file, "store", str(err))
    p = dict(bos_policy=sweep.bos_policy, token_budget=sweep.token_budget,
             batch_size=sweep.batch_size, use_chat_template=sweep.use_chat_template,
             wordings=sweep.wordings, probe_by=[list(b) for b in sweep.probe_by],
             n_splits=sweep.n_splits, inner_splits=sweep.inner_splits, seed=sweep.seed)
    sets = [(label, ms, M.prepare_pairs(pairs), ds) for label, ms, pairs, ds in _pair_sets(sweep)]
    for label, ms, pairs, _ in sets:  # texts and parameters, as methods.run checks them
        try:
            M._check_inputs(pairs, ms, sweep.wordings, sweep.probe_by)
        except ValueError as err:
            _fail(sweep.file, "data", f"{label}: {err}")
    specs = []
    for model in sweep.models:
        for label, ms, pairs, datasets in sets:
            for method in ms:
                # as in methods.run: the key without the model identity, and the pairs used
                key_rest = {"method": method,
                            "bos_policy": sweep.bos_policy if method == "direct" else "bos",
                            "pairs_sha256": M._pairs_sha256(pairs, M._USES[method]),
                            "n_pairs": len(pairs), "parameters": M._parameters(method, p),
                            "package_version": __version__}
                used = pairs[M._ID + [c for c in M._USES[method] if c in pairs]]
                specs.append(RunSpec(model, method, label, json.loads(json.dumps(
                    key_rest, default=str)), used, sweep.shard_size_of(method)
                    or M.DEFAULT_SHARD_SIZE[method], p, datasets, root, sweep.device,
                    sweep.dtype, sweep.revision, sweep.file))
    return specs


# --- writing a shard exactly once ----------------------------------------------------------------

def commit_shard(run, shard, measures=None, details=None, _fault=None,
                 seconds: float | None = None) -> bool:
    """Write a computed shard unless another attempt already has: exactly one attempt wins.

    Two attempts of a shard (a retried task whose first attempt is still alive, two sweeps on
    one store) may compute it at the same time. Under the shard's lock, the first to commit
    writes it with :meth:`xcomps_utils.store.Run.write_shard` (files to temporary names, renamed
    into place, the done marker last); every later one finds the marker and writes nothing. A
    writer killed before its marker leaves at most files of the same name, which the next
    attempt replaces (never rows twice: a shard's rows live in one file).

    Args:
        run: a :class:`xcomps_utils.store.Run`; shard: shard number or name (``"probes"``).
        measures, details, seconds: as for :meth:`~xcomps_utils.store.Run.write_shard`.

    Returns:
        ``True`` if this call wrote the shard, ``False`` if it was already done (a no-op).
    """
    with run.lock(shard):  # a filelock.FileLock: released when its holder exits or dies
        if run.is_done(shard):
            return False
        if _fault is not None and _fault.hit("files", run.record["key"]["method"], shard):
            _fault.files_then_fire(run, shard, measures, details)
        run.write_shard(shard, measures, details, seconds=seconds)
        return True


class _Fault:
    """Test hook: interrupt a sweep at a stage (``open``, ``compute``, ``files``, ``finish``) of
    one method's run (and one shard), by ``os._exit`` (a killed worker) or an exception (an
    interrupted sweep), once: only while the file ``once`` exists (it is removed on firing)."""

    def __init__(self, stage, method, shard=None, action="exit", once=None):
        self.stage, self.method, self.shard, self.action, self.once = (stage, method, shard,
                                                                       action, once)

    def hit(self, stage, method, shard=None) -> bool:
        if stage != self.stage or method != self.method:
            return False
        if self.shard is not None and shard != self.shard:
            return False
        if self.once is not None:
            try:
                os.unlink(self.once)
            except FileNotFoundError:
                return False
        return True

    def fire(self):
        if self.action == "exit":
            os._exit(17)
        raise KeyboardInterrupt(f"test hook: interrupted at {self.stage}")

    def files_then_fire(self, run, shard, measures, details):
        """Write the shard's files, not its marker (as a writer killed between them would)."""
        import tempfile

        from .store import Run

        ghost = Run(run.store, run.id)
        ghost.folder = Path(tempfile.mkdtemp(prefix="xcomps-fault-"))
        ghost.write_shard(shard, measures, details)
        self.fire()


# --- the replica: one model, the work of shards --------------------------------------------------

class Replica:
    """The worker of a sweep: holds one model (loaded on first use, swapped when a shard of
    another model comes), opens runs, computes and commits shards. A Ray actor on Ray, a plain
    object in one process."""

    def __init__(self, fault: _Fault | None = None, threads: int | None = None):
        if threads:
            import torch

            torch.set_num_threads(max(1, int(threads)))
        self.fault = fault
        self._pairs = {}

    def _lm(self, spec: RunSpec):
        from . import methods as M

        return M._load(spec.model, spec.device, spec.dtype, spec.revision)

    def _used(self, spec: RunSpec, rid, pairs):
        if rid not in self._pairs:
            if isinstance(pairs, list):  # [ObjectRef]: fetched once per run and replica
                import ray

                pairs = ray.get(pairs[0])
            self._pairs = {rid: pairs}
        return self._pairs[rid]

    def open(self, spec: RunSpec, pairs) -> dict:
        """Load the model, open (or find) the run in the store; returns its id, shard size,
        shard count, unfinished shards and status."""
        from .results import provenance
        from .store import Store

        lm = self._lm(spec)
        key = json.loads(json.dumps({**lm.identity(), **spec.key_rest}, default=str))
        used = pairs if isinstance(pairs, pd.DataFrame) else self._used(spec, None, pairs)
        prov = provenance(lm, datasets=spec.datasets, method=spec.method,
                          token_budget=spec.p["token_budget"], batch_size=spec.p["batch_size"])
        prov["sweep"] = spec.sweep
        run = Store(spec.store).open_run(key, used, spec.shard_size, prov)
        self._pairs = {run.id: used}
        rec = run.record
        if self.fault is not None and self.fault.hit("open", spec.method):
            self.fault.fire()
        return {"run": run.id, "shard_size": rec["shard_size"], "n_shards": rec["n_shards"],
                "todo": [i for i in range(rec["n_shards"]) if not run.is_done(i)],
                "complete": rec["status"] == "complete", "model": lm.name}

    def shard(self, spec: RunSpec, rid: str, i: int, pairs) -> str:
        """Compute and commit shard ``i`` of run ``rid``: ``"written"``, ``"done"`` (finished
        before this attempt began) or ``"lost"`` (another attempt committed it first).

        Raises:
            StoreError: the replica's model, dtype or device kind is not the run's.
        """
        from . import methods as M
        from .store import Store, StoreError

        run = Store(spec.store).run(rid)
        if run.is_done(i):
            return "done"
        lm = self._lm(spec)
        key = run.record["key"]
        mine = json.loads(json.dumps(lm.identity(), default=str))
        if any(key.get(k) != v for k, v in mine.items()):
            raise StoreError(f"replica holds {mine}, but run {rid} was opened with "
                             f"{ {k: key.get(k) for k in mine} }")
        size = run.record["shard_size"]
        used = self._used(spec, rid, pairs)
        shard = used.iloc[i * size:(i + 1) * size].reset_index(drop=True)
        start = time.perf_counter()
        measures, details = M._SHARD[spec.method](lm, shard, spec.p)
        seconds = time.perf_counter() - start
        if self.fault is not None and self.fault.hit("compute", spec.method, i):
            self.fault.fire()
        return ("written" if commit_shard(run, i, measures, details, self.fault, seconds)
                else "lost")

    def pid(self) -> int:
        return os.getpid()


def finish_run(spec: RunSpec, rid: str, pairs, fault: _Fault | None = None) -> str:
    """The run-level step after the last shard: Neuro's probes over every state shard (once:
    the ``probes`` shard), then the run marked complete.

    Raises:
        StoreError: a shard of the run is not done.
    """
    from . import methods as M
    from .store import Store, StoreError

    run = Store(spec.store).run(rid)
    rec = run.record
    missing = [i for i in range(rec["n_shards"]) if not run.is_done(i)]
    if missing:
        raise StoreError(f"run {rid}: shard(s) {missing} not done; cannot finish it")
    if fault is not None and fault.hit("finish", spec.method):
        fault.fire()
    if spec.method == "neuro" and not run.is_done("probes"):
        if isinstance(pairs, list):
            import ray

            pairs = ray.get(pairs[0])
        start = time.perf_counter()
        probes = M._probes(run.store, rid, pairs, spec.p)
        commit_shard(run, "probes", probes, seconds=time.perf_counter() - start)
    if not run.complete:
        run.finish()
    return rid


# --- running a sweep -----------------------------------------------------------------------------

@dataclasses.dataclass
class SweepResult:
    """What :func:`run_sweep` returns.

    Attributes:
        runs: one row per run: ``model``, ``method``, ``data``, ``run`` (id), ``pairs``,
            ``shards``, ``computed`` (shards this call wrote), ``status``.
        store: the results store path.
        executor: ``"ray"`` or ``"local"``; replicas: how many model replicas worked.
        wall_s: seconds from the start to the last run's completion.
    """

    runs: pd.DataFrame
    store: str
    executor: str
    replicas: int
    wall_s: float

    def measures(self) -> pd.DataFrame:
        """The long measures of the sweep's runs, with ``run`` and ``model`` columns."""
        from .store import Store

        m = Store(self.store).measures(list(self.runs["run"]))
        return m.merge(self.runs[["run", "model"]], on="run", how="left")

    def summary(self) -> pd.DataFrame:
        """Accuracy per model, method, task and language (Meta: mean of both option orders)."""
        m = self.measures()
        m = m[(m.measure == "correct") & ((m.method == "token_ppl") | (m.order == ""))]
        if not len(m):
            return pd.DataFrame()
        g = m.groupby(["model", "method", "task", "lang"], sort=False)["value"]
        return g.agg(n="size", accuracy="mean").reset_index().round({"accuracy": 3})


def _ray_module():
    try:
        import ray
    except ImportError:
        return None
    return ray


def run_sweep(sweep: Sweep, *, executor: str | None = None, address: str | None = None,
              store: str | os.PathLike | None = None, progress: bool = True,
              _fault: _Fault | None = None) -> SweepResult:
    """Compute every unfinished shard of a sweep's runs, then finish each run.

    Args:
        sweep: from :func:`load_sweep` / :func:`parse_sweep`.
        executor: ``"ray"``, ``"local"`` or ``"auto"`` (default: the sweep's ``executor``;
            ``auto`` is Ray if it is installed, else one process, with a warning).
        address: a Ray cluster to join (default: the sweep's ``ray.address``; none: the Ray this
            process already joined, else a new local one, shut down at the end).
        store: the results store (default: the sweep's ``store``).
        progress: a tqdm bar of shards.
        _fault: test hook (a :class:`_Fault`).

    Returns:
        :class:`SweepResult`.

    Raises:
        SweepError: ``executor="ray"`` without Ray installed.
        DataError, ModelNotFoundError, StoreError: from the data, the models, the store.
        ray.exceptions.RayError: a shard failed after its retries (on Ray).
    """
    executor = executor or sweep.executor
    _choice(sweep.file, "executor", executor, EXECUTORS)
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
        rows, replicas, name = _run_local(specs, progress, _fault), 1, "local"
    else:
        rows, replicas = _run_ray(ray, sweep, specs, address, progress, _fault)
        name = "ray"
    runs = pd.DataFrame(rows, columns=["model", "method", "data", "run", "pairs", "shards",
                                       "computed", "status"])
    root = specs[0].store if specs else str(Path(store or sweep.store).resolve())
    return SweepResult(runs, root, name, replicas, time.perf_counter() - start)


def _row(spec, info, computed, status):
    return {"model": spec.model, "method": spec.method, "data": spec.data, "run": info["run"],
            "pairs": len(spec.used), "shards": info["n_shards"], "computed": computed,
            "status": status}


def _complete(spec: RunSpec, device: str) -> dict | None:
    """The row of a run the store already holds complete, found without loading the model
    (its identity as the replicas would load it); ``None`` otherwise."""
    from .models import model_identity
    from .store import Store, run_id

    try:
        ident = model_identity(spec.model, spec.revision,
                               device if spec.device == "auto" else spec.device, spec.dtype)
    except Exception:  # noqa: BLE001 - the replica that loads the model says why
        return None
    if ident.get("model_revision") is None:
        return None
    rid = run_id(json.loads(json.dumps({**ident, **spec.key_rest}, default=str)))
    try:
        run = Store(spec.store).run(rid)
    except KeyError:
        return None
    if not run.complete:
        return None
    return _row(spec, {"run": rid, "n_shards": run.record["n_shards"]}, 0, "complete")


def _run_local(specs, progress, fault) -> list[dict]:
    from tqdm.auto import tqdm

    from .models import resolve_device_dtype
    from .store import Store

    rep, rows, checked = Replica(fault), [], False
    bar = tqdm(total=0, unit="shard", desc="sweep (one process)", disable=not progress)
    try:
        for spec in specs:
            row = _complete(spec, resolve_device_dtype(spec.device, spec.dtype)[0].type)
            if row is not None:
                rows.append(row)
                continue
            if not checked:  # before the first model load: the store and the device
                Store(spec.store).check_writable()
                resolve_device_dtype(spec.device, spec.dtype, check=True)
                checked = True
            info = rep.open(spec, spec.used)
            if info["complete"]:
                rows.append(_row(spec, info, 0, "complete"))
                continue
            bar.total += len(info["todo"])
            bar.refresh()
            written = 0
            for i in info["todo"]:
                written += rep.shard(spec.light(), info["run"], i, spec.used) == "written"
                bar.update(1)
            finish_run(spec.light(), info["run"], spec.used, fault)
            rows.append(_row(spec, info, written, "complete"))
    finally:
        bar.close()
    return rows


def _replicas(ray, sweep, n_work) -> tuple[int, dict]:
    res = ray.cluster_resources()
    cfg = sweep.ray
    gpus = cfg["num_gpus"]
    if gpus == "auto":
        gpus = 1 if res.get("GPU", 0) >= 1 else 0
    cpus = cfg["num_cpus"]
    n = cfg["replicas"]
    if n == "auto":
        n = int(res.get("GPU", 0) // gpus) if gpus else int(res.get("CPU", 1) // max(cpus, 1e-9))
    n = max(1, min(int(n), max(1, n_work)))
    return n, {"num_gpus": gpus, "num_cpus": cpus}


def _run_ray(ray, sweep, specs, address, progress, fault):
    from tqdm.auto import tqdm

    started = False
    if not ray.is_initialized():
        ray.init(address=address or sweep.ray["address"], include_dashboard=False,
                 log_to_driver=progress)
        started = True
    try:
        # runs the store holds complete are read, as methods.run reads them (no replica needed)
        device = "cuda" if _gpus_per_replica(ray, sweep) else "cpu"
        rows, todo_specs = {}, []
        for k, spec in enumerate(specs):
            row = _complete(spec, device)
            if row is not None:
                rows[k] = row
            else:
                todo_specs.append(k)
        if todo_specs:
            from .store import Store

            Store(specs[todo_specs[0]].store).check_writable()
        n_work = sum(specs[k].n_shards for k in todo_specs)
        n, res = _replicas(ray, sweep, n_work)
        retries = sweep.ray["max_retries"]
        Actor = ray.remote(Replica).options(num_gpus=res["num_gpus"], num_cpus=res["num_cpus"],
                                            max_restarts=retries, max_task_retries=retries)
        finisher = ray.remote(finish_run).options(num_cpus=sweep.ray["probe_cpus"],
                                                  max_retries=retries)
        actors = ([Actor.remote(fault, threads=res["num_cpus"] if not res["num_gpus"] else None)
                   for _ in range(n)] if todo_specs else [])
        refs = {k: [ray.put(specs[k].used)] for k in todo_specs}
        light = {k: specs[k].light() for k in todo_specs}
        queue = [("open", k, None) for k in todo_specs]  # model by model (plan's order)
        holds = {a: None for a in actors}  # the model each replica has loaded
        inflight, left, info, written = {}, {}, {}, {}
        bar = tqdm(total=0, unit="shard", desc=f"sweep (Ray, {n} replicas)",
                   disable=not progress)

        def pick(actor):
            mine = [j for j, t in enumerate(queue) if specs[t[1]].model == holds[actor]]
            free = [j for j, t in enumerate(queue)
                    if specs[t[1]].model not in set(holds.values()) - {holds[actor]}]
            j = (mine or free or [0])[0]
            return queue.pop(j)

        try:
            while queue or inflight:
                busy = {a for a, _ in inflight.values() if a is not None}
                for actor in [a for a in actors if a not in busy]:
                    if not queue:
                        break
                    kind, k, i = task = pick(actor)
                    holds[actor] = specs[k].model
                    if kind == "open":
                        ref = actor.open.remote(light[k], refs[k])
                    else:
                        ref = actor.shard.remote(light[k], info[k]["run"], i, refs[k])
                    inflight[ref] = (actor, task)
                if not queue and actors and not any(t[0] == "open"
                                                    for _, t in inflight.values()):
                    # nothing left for replicas: free their CPUs/GPUs for the probe tasks
                    busy = {a for a, _ in inflight.values() if a is not None}
                    for actor in [a for a in actors if a not in busy]:
                        ray.kill(actor)
                        actors.remove(actor)
                        holds.pop(actor)
                (ref,), _ = ray.wait(list(inflight), num_returns=1)
                actor, (kind, k, i) = inflight.pop(ref)
                out = ray.get(ref)
                if kind == "open":
                    info[k], written[k] = out, 0
                    if out["complete"]:
                        rows[k] = _row(specs[k], out, 0, "complete")
                        continue
                    left[k] = len(out["todo"])
                    queue.extend(("shard", k, i) for i in out["todo"])
                    bar.total += len(out["todo"])
                    bar.refresh()
                elif kind == "shard":
                    written[k] += out == "written"
                    left[k] -= 1
                    bar.update(1)
                else:
                    rows[k] = _row(specs[k], info[k], written[k], "complete")
                    continue
                if left[k] == 0:
                    left[k] = -1
                    inflight[finisher.remote(light[k], info[k]["run"], refs[k], fault)] = (
                        None, ("finish", k, None))
        finally:
            bar.close()
            for actor in actors:
                ray.kill(actor)
        return [rows[k] for k in range(len(specs))], n
    finally:
        if started:
            ray.shutdown()


def _gpus_per_replica(ray, sweep) -> float:
    g = sweep.ray["num_gpus"]
    return (1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0) if g == "auto" else g


def describe(sweep: Sweep, specs: list[RunSpec]) -> pd.DataFrame:
    """The plan as a table: model, method, data, pairs, shards (for ``--dry-run``)."""
    return pd.DataFrame([{"model": s.model, "method": s.method, "data": s.data,
                          "pairs": len(s.used), "shard_size": s.shard_size,
                          "shards": s.n_shards} for s in specs])

