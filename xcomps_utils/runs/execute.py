"""Executing methods: one entry point, four methods, one result schema, one store.

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
               BMLAMA: ``n_true_distractors`` (pairs left out, see :func:`probes`).
               Groups: each combination of ``probe_by`` columns (``"all"`` where a column is
               pooled). Hidden states stay in the store (``states``). See
               :mod:`xcomps_utils.methods.neuro` and :mod:`xcomps_utils.methods.probing`.
``token_ppl``  per pair, ``wording`` and ``order``: ``ppl_correct``, ``ppl_incorrect``,
               ``correct``, ``n_groups``, ``n_<category>``, ``plain_<category>_<ppl|s>``,
               ``norm_<category>_<ppl|s>``. Details ``ppl_groups`` (aligned token groups) and
               ``ppl_tokens`` (every prompt token). See :mod:`xcomps_utils.methods.perplexity`.
=============  ===========================================================================

The per-method work of one shard is a plain function of (model, pairs); everything about files,
resuming and keys is the store's.
"""

from __future__ import annotations

import json
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .. import paths
from ..lm.encoding import fit_context
from ..methods import config
from . import planner
from .planner import check_inputs, ID as _ID, prepare_pairs, wording_family, wordings_of
from .store import MEASURE_COLUMNS, Store, StoreError

__all__ = ["METHODS", "DEFAULT_SHARD_SIZE", "SHARD", "Results", "run", "wide", "prepare_pairs",
           "check_inputs", "probes", "ShardedStates", "open_run", "compute_shard", "finish",
           "execute", "repair", "verify", "pairs_problem", "precheck"]

if TYPE_CHECKING:  # torch is imported where a model is loaded or scored, not to read a store
    from ..lm.models import LanguageModel

#: The method names (declared in :data:`xcomps_utils.methods.config.METHODS`).
METHODS = tuple(config.METHODS)
#: Pairs per shard (the unit of resuming): a shard is a few seconds to a minute on a CPU.
DEFAULT_SHARD_SIZE = {m: d.shard_size for m, d in config.METHODS.items()}


# --- pairs ---------------------------------------------------------------------------------------

def _long(pairs: pd.DataFrame, method: str, values: dict, wording="", order="", layer=-1
          ) -> pd.DataFrame:
    """Long rows: every pair of ``pairs`` x every measure of ``values`` (name -> ``[n]``)."""
    frames = []
    for measure, v in values.items():
        f = pairs[_ID].copy()
        f["method"], f["wording"], f["order"], f["layer"] = method, wording, order, layer
        f["measure"], f["value"] = measure, np.asarray(v, dtype=np.float64)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)[MEASURE_COLUMNS]


# --- one shard of each method ---------------------------------------------------------------------

def _direct(lm, pairs: pd.DataFrame, p: dict) -> tuple[pd.DataFrame, dict]:
    from ..lm.precision import near_ties, pair_tolerance
    from ..lm.scoring import token_scores, token_table

    texts = list(dict.fromkeys(list(pairs["good"]) + list(pairs["bad"])))
    scores = token_scores(lm, texts, bos_policy=p["bos_policy"], token_budget=p["token_budget"],
                          batch_size=p["batch_size"])
    by = dict(zip(texts, scores))
    good, bad = [by[t] for t in pairs["good"]], [by[t] for t in pairs["bad"]]
    n_tokens = [len(g.logprobs) + len(b.logprobs) for g, b in zip(good, bad)]
    lg, lb = np.array([s.total for s in good]), np.array([s.total for s in bad])
    measures = _long(pairs, "direct", {
        "logprob_good": lg, "logprob_bad": lb,
        "logprob_mean_good": [s.mean for s in good], "logprob_mean_bad": [s.mean for s in bad],
        "n_tokens_good": [len(s.logprobs) for s in good],
        "n_tokens_bad": [len(s.logprobs) for s in bad],
        "delta": lg - lb, "correct": lg - lb > 0, "tie": lg == lb,
        # 0 < |delta| < the tolerance of the run's dtype, and that tolerance (nats)
        "near_tie": near_ties(lg - lb, lm.dtype, n_tokens, getattr(lm, "name", None)),
        "near_tie_tolerance": pair_tolerance(lm.dtype, n_tokens, getattr(lm, "name", None))})
    tokens = token_table(scores)
    tokens.insert(0, "text", np.asarray(texts, dtype=object)[tokens["text_index"].astype(int)])
    tokens = tokens[["text", "position", "token_id", "token", "start", "end", "logprob"]]
    return measures, {"direct_tokens": tokens}


def _meta(lm, pairs: pd.DataFrame, p: dict) -> tuple[pd.DataFrame, dict]:
    from ..lm.precision import near_ties, pair_tolerance
    from ..methods.meta import build_meta_prompts, score_meta

    m = score_meta(lm, pairs.reset_index(drop=True), use_chat_template=p["use_chat_template"],
                   token_budget=p["token_budget"], batch_size=p["batch_size"])
    # tokens in delta, for float32's per-token tolerance: each answer tokenized alone, plus one
    # (a token straddling the prompt/answer boundary is scored as part of the answer)
    first = build_meta_prompts(pairs.reset_index(drop=True), p["use_chat_template"],
                               lm.tokenizer).query("order == 0").set_index("pair")
    n_tokens = [len(lm.tokenizer(first.at[i, a], add_special_tokens=False)["input_ids"]) + 1
                for a in ("answer_good", "answer_bad") for i in range(len(pairs))]
    n_tokens = np.add(*np.split(np.array(n_tokens), 2))
    frames = [_long(pairs, "meta", {"logprob_good": m[f"meta_good_{o}"],
                                    "logprob_bad": m[f"meta_bad_{o}"]}, order=name)
              for o, name in enumerate(("good_first", "bad_first"))]
    frames.append(_long(pairs, "meta", {
        "logprob_good": m["meta_good"], "logprob_bad": m["meta_bad"], "delta": m["meta_delta"],
        "correct": m["meta_correct"], "tie": m["meta_tie"], "answer_mass": m["meta_mass"],
        "near_tie": near_ties(m["meta_delta"], lm.dtype, n_tokens, getattr(lm, "name", None)),
        "near_tie_tolerance": pair_tolerance(lm.dtype, n_tokens, getattr(lm, "name", None))}))
    return pd.concat(frames, ignore_index=True), {}


def _token_ppl(lm, pairs: pd.DataFrame, p: dict) -> tuple[pd.DataFrame, dict]:
    from ..methods.perplexity import build_prompt_pairs, score_prompt_pairs

    measures, groups, tokens = [], [], []
    for family, sub in pairs.groupby(pairs["task"].map(wording_family), sort=False):
        sub = sub.reset_index(drop=True)
        pps = build_prompt_pairs(sub, wordings_of(family, p["wordings"]))
        r = score_prompt_pairs(lm, pps, token_budget=p["token_budget"], batch_size=p["batch_size"])
        m, g, scores = r.metrics, r.groups, r.scores
        values = [c for c in m.columns if c not in ("item", "wording", "order")]
        for (wording, order), mm in m.groupby(["wording", "order"], sort=False):
            measures.append(_long(sub.iloc[mm["item"].to_numpy()], "token_ppl",
                                  {c: mm[c] for c in values}, wording=wording, order=order))
        ids = sub[["task", "lang", "pair_id"]]
        groups.append(pd.concat([ids.iloc[g["item"].to_numpy()].reset_index(drop=True),
                                 g.drop(columns="item").reset_index(drop=True)], axis=1))
        for pp in pps:
            for prompt, text in (("correct", pp.correct), ("incorrect", pp.incorrect)):
                s = scores[text]
                tokens.append(pd.DataFrame({
                    "task": sub["task"].iat[pp.item], "lang": sub["lang"].iat[pp.item],
                    "pair_id": sub["pair_id"].iat[pp.item], "wording": pp.wording,
                    "order": pp.order, "prompt": prompt, "position": np.arange(len(s.logprobs)),
                    "token_id": s.token_ids, "token": s.tokens, "start": s.offsets[:, 0], "end": s.offsets[:, 1],
                    "logprob": s.logprobs}))
    return (pd.concat(measures, ignore_index=True),
            {"ppl_groups": pd.concat(groups, ignore_index=True),
             "ppl_tokens": pd.concat(tokens, ignore_index=True)})


def _neuro(lm, pairs: pd.DataFrame, p: dict) -> tuple[None, dict]:
    from ..methods.neuro import last_token_states

    texts = list(dict.fromkeys(list(pairs["good"]) + list(pairs["bad"])))
    states = last_token_states(lm, texts, token_budget=p["token_budget"],
                               batch_size=p["batch_size"])
    return None, {"states": states, "neuro_sentences": pd.DataFrame({"text": texts})}


class ShardedStates:
    """Rows of the states of every shard, gathered on demand (memory: the rows asked for)."""

    def __init__(self, store: Store, rid: str):
        self.parts = store.arrays(rid, "states")
        texts = store.detail(rid, "neuro_sentences")["text"]
        offsets = np.cumsum([0] + [len(a) for a in self.parts])
        where = [(k, r) for k, a in enumerate(self.parts) for r in range(len(a))]
        self.index = {}
        for t, (k, r) in zip(texts, where):
            self.index.setdefault(t, offsets[k] + r)
        self.where = where
        self.shape = (len(where),) + (self.parts[0].shape[1:] if self.parts else (0, 0))

    def __getitem__(self, rows):
        return np.stack([self.parts[self.where[i][0]][self.where[i][1]] for i in rows])


_LAYER_MEASURES = ("f1", "balanced_accuracy", "mcc", "null_q95")


def probes(store: Store, rid: str, pairs: pd.DataFrame, p: dict) -> pd.DataFrame:
    """Neuro's run-level step: the probes of every ``probe_by`` group over the run's state
    shards (long measures, ``layer`` -1 for a group's summary).

    The groups' probes run in :func:`xcomps_utils.paths.probe_jobs` worker processes
    (joblib), the groups with a permutation null first; every fit is single-threaded and seeded,
    so the numbers do not depend on the number of workers (tested). The groups with a null (one
    per language) permute their labels independently (each its own seed, from the run's seed and
    the group) and are pooled by one joint test
    (:func:`xcomps_utils.methods.probing.joint_permutation_test`): each gets ``p_adjusted`` (max-T over
    the groups), ``p_pooled`` and ``n_pooled``.

    The unit kept whole across folds (the probe's *item*) is the sentences' shared frame: the
    ``property`` for XCOMPS, the ``prompt`` for BMLAMA (a fact, with the facts that share its
    prompt: relations with several true answers, whose sentences coincide), else ``item``.
    BMLAMA pairs have no concepts (each sentence is its own: no purge), and their pairs whose
    distractor is true (``distractor_true``: its ``bad`` sentence is a true fact, the ``good``
    sentence of another fact) are left out, counted per group in ``n_true_distractors``."""
    from joblib import Parallel, delayed

    from ..methods.probing import (DEFAULT_N_PERMUTATIONS, joint_permutation_test,
                          probe_sentences)

    states = ShardedStates(store, rid)
    item = next(c for c in ("property", "prompt", "item") if c in pairs)
    true_bad = (pairs["distractor_true"].astype(bool) if "distractor_true" in pairs
                else pd.Series(False, index=pairs.index))
    groups, left_out = [], []
    for by in p["probe_by"]:
        by = list(by)
        for key, sub in pairs.groupby(by, sort=False) if by else [((), pairs)]:
            key = key if isinstance(key, tuple) else (key,)
            # the permutation null for each probe over all negative types (one per language)
            n_perm = DEFAULT_N_PERMUTATIONS if "subset" not in by else 0
            left_out.append(int(true_bad.loc[sub.index].sum()))
            sub = sub[~true_bad.loc[sub.index]]
            texts = list(dict.fromkeys(probe_sentences(sub, item)["text"]))
            groups.append((by, key, sub, n_perm, texts))
    order = sorted(range(len(groups)), key=lambda i: -groups[i][3])  # the longest first
    jobs = min(paths.probe_jobs(), len(groups)) or 1
    done = Parallel(n_jobs=jobs)(
        delayed(_probe_group)(states[[states.index[t] for t in groups[i][4]]],
                              {t: r for r, t in enumerate(groups[i][4])}, groups[i][2], item,
                              p, groups[i][3], groups[i][1])
        for i in order)
    results = dict(zip(order, done))
    for by in map(list, p["probe_by"]):  # one joint null over the groups of each probe_by
        pooled = [i for i, g in enumerate(groups) if g[0] == by and g[3]
                  and not isinstance(results[i], str)]
        if pooled:
            joint = joint_permutation_test(
                [results[i][1]["nested_balanced_accuracy"] for i in pooled],
                np.column_stack([results[i][1]["null_nested"] for i in pooled]))
            for j, i in enumerate(pooled):
                results[i][1].update(p_adjusted=joint["p_adjusted"][j],
                                     p_pooled=joint["p_pooled"], n_pooled=len(pooled))
    frames = []
    for i, (by, key, sub, _, _) in enumerate(groups):
        if isinstance(results[i], str):
            warnings.warn(f"neuro: no probe for {dict(zip(by, key))}: {results[i]}")
            continue
        by_layer, summary = results[i]
        summary.pop("null_nested", None)  # the draws: pooled above
        ids = {c: (sub[c].iat[0] if sub[c].nunique() == 1 else "all") for c in _ID}
        ids.update(pair_id="", item="", **dict(zip(by, map(str, key))))
        for c in ("lang", "subset"):
            if c not in by:
                ids[c] = "all"
        for measure in [m for m in _LAYER_MEASURES if m in by_layer]:
            f = pd.DataFrame({**ids, "method": "neuro", "wording": "", "order": "",
                              "layer": by_layer["layer"].to_numpy(), "measure": measure,
                              "value": by_layer[measure].to_numpy(dtype=np.float64)})
            frames.append(f[MEASURE_COLUMNS])
        if "distractor_true" in pairs:
            summary["n_true_distractors"] = left_out[i]
        summary["concept_disjoint"] = float(summary["leaked_concepts"] == 0)
        summary["items_whole"] = float(summary.pop("grouping") in ("item+concept",
                                                                   "item, purged"))
        f = pd.DataFrame({**ids, "method": "neuro", "wording": "", "order": "", "layer": -1,
                          "measure": list(summary), "value": np.asarray(
                              list(summary.values()), dtype=np.float64)})
        frames.append(f[MEASURE_COLUMNS])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=MEASURE_COLUMNS)


def _probe_group(states: np.ndarray, index: dict, sub: pd.DataFrame, item: str, p: dict,
                 n_perm: int, key: tuple = ()):
    """One group's :func:`~xcomps_utils.methods.probing.probe_pairs` (in a worker: its permutation
    null in this process, seeded by the run's seed and the group's ``key``); a
    :class:`~xcomps_utils.methods.probing.ProbeError` comes back as its message."""
    import zlib

    from ..methods.probing import ProbeError, probe_pairs

    try:
        return probe_pairs(states, index, sub, item=item, n_splits=p["n_splits"],
                           inner_splits=p["inner_splits"], seed=p["seed"],
                           n_permutations=n_perm,
                           null_seed=[p["seed"], zlib.crc32(repr(tuple(map(str, key))).encode())])
    except ProbeError as err:
        return str(err)


#: The computation of one shard of each method: ``(model, pairs, parameters) -> (measures,
#: details)``; a new method adds its function here and its declaration to
#: :data:`xcomps_utils.methods.config.METHODS`.
SHARD = {"direct": _direct, "meta": _meta, "token_ppl": _token_ppl, "neuro": _neuro}


# --- the steps of a run (both executors): open, compute a shard, finish ---------------------------

def open_run(spec: planner.RunSpec, lm, used: pd.DataFrame):
    """Open (or find) the run of a spec for a loaded model: a :class:`xcomps_utils.runs.store.Run`.
    An existing run whose ``pairs.parquet`` is missing or altered gets it back from ``used``
    (the spec's pairs, whose SHA-256 is the key's)."""
    from .results import provenance

    prov = provenance(lm, datasets=spec.datasets, method=spec.method,
                      token_budget=spec.p["token_budget"], batch_size=spec.p["batch_size"])
    if spec.sweep:
        prov["sweep"] = spec.sweep
    run = Store(spec.store).open_run(spec.key(lm.identity()), used, spec.shard_size, prov)
    _restore_pairs(run, used)
    return run


def pairs_problem(run) -> str | None:
    """What is wrong with a run's ``pairs.parquet``: not as ``run.json`` records it, or its
    pairs' SHA-256 (:func:`xcomps_utils.runs.planner.pairs_sha256`) is not the key's
    ``pairs_sha256``; ``None`` if it checks."""
    problem = run.store.pairs_problem(run)
    if problem:
        return problem
    key = run.record["key"]
    if "pairs_sha256" not in key or key.get("method") not in config.METHODS:
        return None
    try:
        pairs = pd.read_parquet(run.folder / "pairs.parquet")
    except Exception:  # noqa: BLE001 - any unreadable file is damaged
        return "unreadable"
    if planner.pairs_sha256(pairs, config.METHODS[key["method"]].uses) != key["pairs_sha256"]:
        return "altered (its pairs' SHA-256 is not the run key's pairs_sha256)"
    return None


def _restore_pairs(run, used: pd.DataFrame | None) -> None:
    if used is not None and pairs_problem(run) and planner.pairs_sha256(
            used, config.METHODS[run.record["key"]["method"]].uses) == run.record["key"].get(
            "pairs_sha256"):
        run.write_pairs(used)


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
    """The run-level step after the last shard: Neuro's probes over every state shard (once:
    the ``probes`` shard), then the run marked complete. Returns the run id.

    Raises:
        StoreError: a shard of the run is not done.
    """
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


def row(spec: planner.RunSpec, rid: str, n_shards: int, computed: int, opened: bool = True) -> dict:
    """One row of the table of runs an executor returns (``opened``: the model was loaded
    for it; ``False``: read complete from the store)."""
    return {"model": spec.model, "method": spec.method, "data": spec.data, "run": rid,
            "pairs": len(spec.used) if spec.used is not None else None, "shards": n_shards,
            "computed": computed, "status": "complete", "opened": opened}


def stored(spec: planner.RunSpec, device_kind: str | None = None, ident: dict | None = None
           ) -> dict | None:
    """The row of a run the store already holds complete, found without loading the model
    (``ident``: the identity of a loaded model); ``None`` otherwise."""
    ident = ident or planner.identity(spec, device_kind)
    if ident is None:
        return None
    try:
        run = Store(spec.store).run(spec.run_id(ident))
    except KeyError:
        return None
    if not run.complete:
        return None
    _restore_pairs(run, spec.used)  # no model needed: the pairs are the spec's
    return row(spec, run.id, run.record["n_shards"], 0, False)


def precheck(spec: planner.RunSpec, ident: dict | None = None) -> None:
    """Before a model loads for a spec (where its id is known without loading): the run the
    store holds of that id checks (an unfinished run's done shards, its record), and no file
    of that id lies in the store without a record.

    Raises:
        StoreError: names the run, the file and what to do.
    """
    ident = ident or planner.identity(spec)
    if ident is None:
        return
    store, rid = Store(spec.store), spec.run_id(ident)
    store.check_unowned(rid)
    if rid in store.ids():
        _restore_pairs(store.run(rid), spec.used)
        store.check(rid)


def execute(specs: list[planner.RunSpec], lm=None, progress: bool = True, truncate: bool = False
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

    rows, todo = {}, []
    for k, spec in enumerate(specs):
        found = stored(spec, ident=lm.identity() if lm is not None else None)
        if found is not None:
            rows[k] = found
        else:
            todo.append(k)
    if todo:  # before any model loads: the store, the runs it holds, and the device
        Store(specs[todo[0]].store).check_writable()
        for k in todo:
            precheck(specs[k], lm.identity() if lm is not None else None)
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

        def one(name):
            if name == "probes":  # reads the (verified) state shards
                return probes(store, run.id, used, p), {}
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


def run(model: str | LanguageModel, pairs: pd.DataFrame, methods=("direct",), *,
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
        ValueError: an unknown method, BOS policy, device or dtype, a device this machine lacks,
            pairs without the columns a method needs, a bad text (names the pair and field).
        ModelNotFoundError: an unknown model name (see :func:`~xcomps_utils.lm.models.load_model`).
        StoreError: the store is a file or not writable, or a run it holds is damaged (see
            :meth:`xcomps_utils.runs.store.Store.verify`).
    """
    if methods is None or not isinstance(methods, (str, list, tuple, set)):
        raise ValueError(f"methods must be a method name or a list of them, any of "
                         f"{list(METHODS)}; got {methods!r}")
    methods = [methods] if isinstance(methods, str) else list(dict.fromkeys(methods))
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"unknown method(s) {unknown or methods}; use any of {list(METHODS)}")
    if shard_size is not None and (isinstance(shard_size, bool) or int(shard_size) < 1):
        raise ValueError(f"shard_size must be an integer >= 1, got {shard_size!r}")
    params = _parameters(bos_policy=bos_policy, token_budget=token_budget, batch_size=batch_size,
                         use_chat_template=use_chat_template, wordings=wordings,
                         probe_by=probe_by, n_splits=n_splits, inner_splits=inner_splits,
                         seed=seed)
    given = not isinstance(model, str)
    if isinstance(model, str):
        lm, name = None, model
    else:
        from ..lm.models import LanguageModel

        if not isinstance(model, LanguageModel):
            raise TypeError(f"model must be a name or a loaded LanguageModel, got "
                            f"{type(model).__name__}")
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
        prompts = any(m in ("meta", "token_ppl") for m in methods)
        pairs = fit_context(lm, pairs, together=prompts, truncate=True)
    specs = planner.plan(name, pairs, methods, params, store=store.root, shard_size=shard_size,
                         device=device, dtype=dtype, revision=revision)
    rows = execute(specs, lm=lm, progress=progress, truncate=truncate)
    runs = {r["method"]: r["run"] for r in rows}
    computed = {r["method"]: r["computed"] for r in rows}
    if lm is None and any(r["opened"] for r in rows):  # loaded by execute (cached)
        lm = planner.load(name, device, dtype, revision)
    loaded = lm if lm is not None and any(r["opened"] for r in rows) or given else None
    results = Results(store.measures(list(runs.values())), runs, store, computed, loaded)
    results._tmp = tmp  # a temporary store lives as long as its results
    return results


def _parameters(**values) -> dict:
    """The run parameters, checked against their declaration
    (:class:`xcomps_utils.methods.config.RunParameters`).

    Raises:
        ValueError: ``"<field>: <problem>; allowed: <values>"`` for the first invalid one.
    """
    from ..methods.config import RunParameters, validate

    return validate(RunParameters, values, "run parameters").model_dump()
