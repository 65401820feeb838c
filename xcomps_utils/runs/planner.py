"""One way from a selection to the results store: select pairs, plan runs, execute them.

* :func:`select` turns a selection (tasks, among them ``xcomps:<lang>``, or XCOMPS languages,
  with sample sizes) into :class:`PairSet` s, exactly as ``xcomps-study run`` and a sweep select.
* :func:`plan` turns models x pair sets x methods into :class:`RunSpec` s. A run's key is made
  in one place, :meth:`RunSpec.key` (the model identity, the method, the BOS policy, a SHA-256 of
  the pairs' identifiers and the columns the method reads, the method's parameters, its
  computation version ``Method.version``, not the package's); its id is :func:`xcomps_utils.runs.store.run_id` of that key.
* :func:`xcomps_utils.runs.execute.execute` computes the specs in this process (one shard after the
  other); the Ray executor (:mod:`xcomps_utils.runs.ray_executor`) computes the same specs on actors.
  Both use the steps of a run in :mod:`xcomps_utils.runs.execute` (``open_run``, ``compute_shard``,
  ``finish``).

:func:`xcomps_utils.runs.execute.run`, ``xcomps-study run`` and ``xcomps-study sweep`` are this plan.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..declare import ParameterError, ParameterTypeError, validate
from ..errors import InputError
from ..lm.encoding import check_pair_texts
from ..methods.base import ID
from ..methods.config import RunParameters
from ..methods.registry import METHODS

__all__ = ["PairSet", "RunSpec", "select", "plan", "identity", "load", "check_model_folder",
           "parameters_of",
           "prepare_pairs", "check_inputs", "pairs_sha256", "summary", "ID"]


@dataclasses.dataclass
class PairSet:
    """Pairs selected by one rule, and the methods to run on them; ``label`` in words."""

    label: str
    methods: list
    pairs: pd.DataFrame


def select(methods, tasks=(), languages=(), source="sample", items_per_language=None,
           n_pairs=None, seed=0) -> list[PairSet]:
    """The pairs of a selection: XCOMPS ``languages`` (``items_per_language`` whole items), or
    ``tasks`` (``n_pairs`` seeded pairs each; a method that samples by the task's selection
    rule, ``Method.selection``, gets a pair set of its own).

    A size above what the selection holds is refused before any pair is sampled (the one policy
    of the command line, the sweep files and the chapters): ``n_pairs`` above the pairs of the
    largest task (:func:`xcomps_utils.pairs.tasks.check_size`; a smaller task of several gives
    all of its pairs), ``items_per_language`` above the XCOMPS items of the languages.

    Raises:
        InputError: both or neither of tasks and languages; ``n_pairs`` with languages.
        SizeError: ``the 'n_pairs' parameter must be an integer from 1 to 59,143 (the pairs
            bmlama17:vi holds) or None (every one); got 1000000000000`` (a
            :class:`~xcomps_utils.declare.ParameterError`: ``xcomps-study run`` prints it in one
            line, exit code 1, before any model loads).
        DataError: an unknown task or language, a missing or altered data file.
    """
    from ..pairs import tasks as T, xcomps as X

    if bool(tasks) == bool(languages):
        raise InputError("give either tasks or languages")
    if languages:
        if n_pairs is not None:
            raise InputError("n_pairs is for tasks; XCOMPS samples whole items: use "
                             "items_per_language")
        T.check_items(list(languages), items_per_language, source)
        pairs = X.load_languages(list(languages), source=source,
                                 items_per_language=items_per_language, seed=seed)
        return [PairSet(f"xcomps {','.join(languages)} ({source})", list(methods), pairs)]
    out, label = [], ",".join(tasks)
    for selection in (False, True):
        chosen = [m for m in methods if METHODS[m].selection == selection]
        if chosen:
            T.check_size(list(tasks), n_pairs, "n_pairs", selection=selection, seed=seed)
            out.append(PairSet(label, chosen, T.sample(list(tasks), n_pairs, seed,
                                                       selection=selection)))
    return out


def pairs_sha256(pairs: pd.DataFrame, columns) -> str:
    """The SHA-256 of pairs that a run key holds (``pairs_sha256``): the identifiers
    (:data:`ID`) and the ``columns`` a method reads, as JSON."""
    cols = ID + [c for c in columns if c in pairs]
    values = pairs[cols].astype(object).to_numpy().tolist()
    return hashlib.sha256(json.dumps([cols, values], default=lambda x: np.asarray(x).tolist(),
                                     ensure_ascii=False).encode()).hexdigest()


def parameters_of(key: dict) -> dict:
    """The method parameters of a run, from its key (to recompute a shard of it)."""
    par = key.get("parameters", {})
    defaults = RunParameters().model_dump()
    return {**defaults, "bos_policy": key.get("bos_policy", "bos"),
            **{k: par[k] for m in METHODS.values() for k in m.parameters if k in par}}


@dataclasses.dataclass
class RunSpec:
    """One run, before its model is loaded.

    Attributes:
        model: model name; method: one of :data:`xcomps_utils.methods.registry.METHODS`.
        data: the pair set, in words (``"xcomps en,de (sample)"``).
        used: the pairs the run scores (identifiers and the columns the method reads).
        shard_size: pairs per shard (an existing run keeps its own).
        p: the method parameters (:class:`xcomps_utils.methods.config.RunParameters`, as a dict).
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
        params: the method parameters (:class:`~xcomps_utils.methods.config.RunParameters`).
        store: the results store folder; shard_size: an integer or ``{method: integer}``
            (default: :data:`xcomps_utils.methods.registry.METHODS`' shard sizes).

    Raises:
        ParameterError: an invalid parameter, pairs a method cannot run (see
            :func:`check_inputs`).
        InputError: a bad text.
    """
    from ..pairs.tasks import provenance

    p = params if isinstance(params, RunParameters) else validate(RunParameters, params or {})
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
                            "bos_policy": p["bos_policy"] if METHODS[method].bos_policy else "bos",
                            "pairs_sha256": pairs_sha256(ps, METHODS[method].uses),
                            "n_pairs": len(ps),
                            "parameters": METHODS[method].key_parameters(p, ps.columns),
                            # the method's computation version, not the package's
                            "package_version": METHODS[method].version}
                size = shard_size.get(method) if isinstance(shard_size, dict) else shard_size
                used = ps[ID + [c for c in METHODS[method].uses if c in ps]]
                specs.append(RunSpec(model, method, s.label, used,
                                     size or METHODS[method].shard_size, p, datasets, root,
                                     device, dtype, revision, sweep,
                                     json.loads(json.dumps(key_rest, default=str))))
    return specs


# --- checks before any model loads ---------------------------------------------------------------

def prepare_pairs(pairs: pd.DataFrame) -> pd.DataFrame:
    """Pairs with every identifier column as text: ``task`` defaults to ``dataset``, ``lang`` and
    ``subset`` to ``""``, ``item`` to ``pair_id``.

    Raises:
        ParameterTypeError: (a ``TypeError``) not a DataFrame.
        ParameterError: a required column (``dataset``, ``pair_id``, ``good``, ``bad``) is
            missing.
        InputError: a pair's ``dataset`` or ``pair_id`` is missing or blank (names the row), or
            two rows share their identifiers (names them).
    """
    must = "a pandas DataFrame of minimal pairs (columns dataset, pair_id, good, bad)"
    if not isinstance(pairs, pd.DataFrame):
        raise ParameterTypeError("pairs", must, type(pairs).__name__)
    missing = [c for c in ("dataset", "pair_id", "good", "bad") if c not in pairs]
    if missing:
        raise ParameterError("pairs", must, hint=f"these lack {missing}; load them with "
                                                 f"xcomps_utils.pairs.tasks or xcomps_utils."
                                                 f"pairs.xcomps")
    df = pairs.reset_index(drop=True).copy()
    for col in ("dataset", "pair_id"):
        blank = df[col].map(lambda v: v is None or (isinstance(v, float) and np.isnan(v))
                            or not str(v).strip())
        if blank.any():
            row = int(np.flatnonzero(blank.to_numpy())[0])
            raise InputError(f"pair (row {row}): {col!r} is missing ({df[col].iat[row]!r}); "
                             f"every pair needs its {col} ({int(blank.sum())} row(s) lack it)")
    defaults = {"task": df["dataset"], "lang": "", "subset": "", "item": df["pair_id"]}
    for col, default in defaults.items():
        if col not in df:
            df[col] = default
    for col in ID:
        df[col] = df[col].astype(str)
    dup = df.duplicated(["dataset", "task", "lang", "pair_id"], keep=False)
    if dup.any():
        rows = df.loc[dup, ["task", "lang", "pair_id"]].head(4).to_dict("records")
        raise InputError(f"{int(dup.sum())} pairs share (dataset, task, lang, pair_id), e.g. "
                         f"{rows}; each pair needs its own id")
    return df


def check_inputs(pairs: pd.DataFrame, methods: list[str], wordings, probe_by) -> None:
    """What can be checked of the pairs and parameters without a model.

    Raises:
        InputError: a bad text (names pair and field).
        ParameterError: each method's own checks
            (:meth:`xcomps_utils.methods.base.Method.check_inputs`: pairs it cannot run, unknown
            wordings, probe groups over columns the pairs lack), naming the parameter.
    """
    check_pair_texts(pairs, ("good", "bad"))
    params = {"wordings": wordings, "probe_by": probe_by}
    for m in methods:
        METHODS[m].check_inputs(pairs, params)


# --- the model ------------------------------------------------------------------------------------

def check_model_folder(name: str) -> None:
    """A model given as a local folder: its ``config.json`` is a JSON object with a
    ``model_type`` (what loading needs first), before anything else runs.

    Raises:
        InputError: names the folder, the file and what is wrong.
    """
    folder = Path(name)
    if not folder.is_dir() or not (folder / "config.json").is_file():
        return
    try:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8") or "null")
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(f"model folder {name}: config.json is not JSON ({str(err)[:60]}); "
                         f"save the model with save_pretrained") from None
    if not isinstance(cfg, dict) or "model_type" not in cfg:
        raise InputError(f"model folder {name}: config.json has no 'model_type' (it holds "
                         f"{str(cfg)[:40]}); save the model with save_pretrained")


@functools.lru_cache(maxsize=1)
def load(name, device="auto", dtype="auto", revision=None):
    """The model (the last one loaded by name stays loaded: a chapter runs several calls).

    Raises:
        InputError: a local model folder that does not load (names the folder); else what
            :func:`xcomps_utils.lm.models.load_model` raises.
    """
    from ..lm.models import load_model

    check_model_folder(name)
    try:
        return load_model(name, device=device, dtype=dtype, revision=revision)
    except (OSError, ValueError, KeyError, TypeError) as err:
        if Path(name).is_dir():
            raise InputError(f"model folder {name} does not load ({type(err).__name__}: "
                             f"{' '.join(str(err).split())[:120]}); it needs config.json, the "
                             f"weights and the tokenizer files (save_pretrained)") from None
        raise


def identity(spec: RunSpec, device_kind: str | None = None) -> dict | None:
    """The model identity of a spec's key as loading would give it, without loading
    (``None`` when only the loaded model knows it, e.g. a hub model without a pinned revision).
    ``device_kind``: what ``device="auto"`` resolves to (default: this machine's)."""
    from ..lm.models import model_identity

    try:
        device = device_kind if spec.device == "auto" and device_kind else spec.device
        ident = model_identity(spec.model, spec.revision, device, spec.dtype)
    except Exception:  # noqa: BLE001 - loading the model says why
        return None
    return ident if ident.get("model_revision") is not None else None


def summary(measures: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per (model,) method, task and language (per pair: the rows without an order, the
    mean of the option orders; a method with ``per_order_decisions``: per prompt pair). Every
    task keeps its rows: a task without a language (``lang`` empty or missing) has ``"—"``."""
    per_order = [n for n, m in METHODS.items() if m.per_order_decisions]
    per_pair = measures.method.isin(per_order) | (measures.order == "")
    m = measures[(measures.measure == "correct") & per_pair]
    if not len(m):
        return pd.DataFrame()
    if "lang" in m:
        m = m.assign(lang=m["lang"].fillna("").astype(str).replace("", "—"))
    by = [c for c in ("model", "method", "task", "lang") if c in m]
    g = m.groupby(by, sort=False, dropna=False)["value"]
    return g.agg(n="size", accuracy="mean").reset_index().round({"accuracy": 3})
