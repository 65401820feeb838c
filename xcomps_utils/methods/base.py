"""The contract every method keeps: one object per method, one module per method.

A method is an instance of a subclass of :class:`Method`. Its dataclass fields are its
declaration (they enter the run key: shard size, the pair columns it reads, the pairs it needs,
its parameters, fingerprints, protocol, computation version); its class attributes and methods
are what the run machinery (:mod:`xcomps_utils.runs`) asks of it, so that no module there tests a
method's name: the computation of one shard (:meth:`Method.compute_shard`), an optional
run-level finishing step (:attr:`Method.finish_shard`, :meth:`Method.finish`), whether its texts
are scored inside prompts (:attr:`Method.prompts`), how its pairs are sampled
(:attr:`Method.selection`), its input checks (:meth:`Method.check_inputs`, raising
:class:`xcomps_utils.declare.ParameterError`), the command-line flags
only it reads (:attr:`Method.flags`), and what an audit compares with which tolerance
(:attr:`Method.audit_tolerance`). The methods are registered in
:data:`xcomps_utils.methods.registry.METHODS`: adding a method is one module plus its registration.

Nothing here imports torch: a method imports its model code inside :meth:`compute_shard`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np
import pandas as pd

__all__ = ["Method", "ID", "MEASURE_COLUMNS", "long_measures"]

#: The identifier columns of a pair (in the key and in every result row).
ID = ["dataset", "task", "lang", "subset", "pair_id", "item"]
#: The columns of every method's long measures (``xcomps_utils.runs.store.MEASURE_SCHEMA``).
MEASURE_COLUMNS = ["method", "dataset", "task", "lang", "subset", "pair_id", "item", "wording",
                   "order", "layer", "measure", "value"]


def long_measures(pairs: pd.DataFrame, method: str, values: dict, wording="", order="",
                  layer=-1) -> pd.DataFrame:
    """Long rows (:data:`MEASURE_COLUMNS`): every pair of ``pairs`` x every measure of
    ``values`` (name -> ``[n]``), for ``method``."""
    frames = []
    for measure, v in values.items():
        f = pairs[ID].copy()
        f["method"], f["wording"], f["order"], f["layer"] = method, wording, order, layer
        f["measure"], f["value"] = measure, np.asarray(v, dtype=np.float64)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)[MEASURE_COLUMNS]


# --- the contract ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Method:
    """One method: its declaration (the fields, which enter the run key) and its behaviour.

    Attributes:
        shard_size: default pairs per shard (the unit of resuming).
        uses: the pair columns it reads beyond the identifiers (they enter the run key's
            ``pairs_sha256``, in this order).
        needs: ``"xcomps"`` (XCOMPS pairs, or the tasks of ``task_prefixes``), ``"tasks"`` (not
            XCOMPS) or ``""``.
        why: the reason for ``needs``, in words (for the error message).
        parameters: the :class:`~xcomps_utils.methods.config.RunParameters` fields that enter
            its run key.
        fingerprints: ``(key, function)``: a function returning the SHA-256 of a file the
            method reads (prompt templates), entered into the key.
        protocol: fixed descriptions of what it computes, entered into the key (a new protocol,
            new runs).
        bos_policy: whether it follows the run's ``bos_policy`` (else always ``"bos"``).
        pair_fingerprints: ``(column, key, function)``: like ``fingerprints``, entered into the
            key only for pairs that have ``column`` (a file only those pairs read: Meta's BMLAMA
            templates), so the keys of other pairs stay what they were.
        version: its computation version, the package version at which its numbers last
            changed. It enters the run key (under the key's historical name
            ``package_version``), not the package's own version: a release that leaves a
            method's numbers as they were keeps its runs, so a shipped results store survives
            it. A change that moves a method's numbers sets this to the new package version (new
            run ids; the old runs stay in the store, unread) and says so in its commit.
        task_prefixes: with ``needs="xcomps"``, the registry's task names (by prefix) whose
            pairs it also runs on (the command line's ``--task``, a sweep's ``tasks``).

    Class attributes (behaviour, not in the key): ``name`` (its registered name, the key's
    ``method``), ``prompts``, ``selection``, ``flags``, ``finish_shard``,
    ``per_order_decisions``, ``audit_tolerance``; see each.
    """

    shard_size: int
    uses: tuple[str, ...]
    needs: str = ""
    why: str = ""
    parameters: tuple[str, ...] = ()
    fingerprints: tuple[tuple[str, Callable[[], str]], ...] = ()
    protocol: tuple[tuple[str, str], ...] = ()
    bos_policy: bool = False
    pair_fingerprints: tuple[tuple[str, str, Callable[[], str]], ...] = ()
    version: str = "0.3.0"
    task_prefixes: tuple[str, ...] = ("xcomps:",)

    #: The registered name (the run key's ``method``, the ``method`` column of its measures).
    name: ClassVar[str] = ""
    #: Its texts are scored inside prompts: a pair's texts are checked against the model's
    #: context together (``xcomps_utils.lm.encoding.fit_context(together=True)``).
    prompts: ClassVar[bool] = False
    #: Its pairs are sampled by each task's selection rule (``tasks.sample(selection=True)``),
    #: so a selection of tasks gives it a pair set of its own.
    selection: ClassVar[bool] = False
    #: The run parameters only it reads, as the command line names them:
    #: ``{parameter: (flag, default)}`` (a flag given to no method reading it is an error).
    flags: ClassVar[dict[str, tuple[str, object]]] = {}
    #: The name of its run-level shard written by :meth:`finish` after the last shard
    #: (``None``: no finishing step).
    finish_shard: ClassVar[str | None] = None
    #: Each of its ``correct`` rows (per ``wording`` and ``order``) is a decision; otherwise only
    #: the rows without an ``order`` are (the orders' mean).
    per_order_decisions: ClassVar[bool] = False
    #: What an audit (:mod:`xcomps_utils.runs.audit`) allows a recomputed measure to differ by:
    #: ``"sentence_tokens"`` (log-probabilities within the dtype's per-token tolerance, tokens
    #: counted by the ``n_tokens_good``/``n_tokens_bad`` measures; decisions by ``delta``),
    #: ``"answer_tokens"`` (the same, tokens counted by :meth:`token_counts`),
    #: ``"proportions"`` (perplexities through exp, proportions propagated from the
    #: ``ppl_groups`` detail; decisions by ``ln PPL(B) - ln PPL(A)``), ``"probe"`` (every
    #: measure within the probe tolerance) or ``"equal"``.
    audit_tolerance: ClassVar[str] = "equal"
    #: How an audit compares the float columns of its detail tables: ``{detail: kind}``, kind
    #: ``"token_logprobs"`` (column ``logprob`` within one token's tolerance) or
    #: ``"prompt_groups"`` (token-group sums and perplexities of ``ppl_groups`` within their
    #: tokens' tolerance); a detail not named here is compared equal (arrays: within the state
    #: tolerance).
    audit_details: ClassVar[dict[str, str]] = {}
    #: The detail table whose ``text`` column names the rows of its array details (Neuro's
    #: ``neuro_sentences``), for the audit's messages.
    array_rows: ClassVar[str | None] = None

    def compute_shard(self, lm, pairs: pd.DataFrame, params: dict
                      ) -> tuple[pd.DataFrame | None, dict]:
        """One shard: ``(long measures or None, {detail name: table or array})`` of the
        ``pairs`` (identifiers and the columns of ``uses``) with the loaded model ``lm`` and the
        run parameters ``params``."""
        raise NotImplementedError(f"{type(self).__name__} computes no shard")

    def finish(self, store, rid: str, pairs: pd.DataFrame, params: dict) -> pd.DataFrame:
        """The run-level step (:attr:`finish_shard`) over the run's stored shards: its long
        measures."""
        raise NotImplementedError(f"{type(self).__name__} has no finishing step")

    def check_inputs(self, pairs: pd.DataFrame, params: dict) -> None:
        """What can be checked of the pairs and the run parameters without a model (raises
        :class:`~xcomps_utils.declare.ParameterError` naming the parameter); nothing by
        default."""

    def token_counts(self, lm, pairs: pd.DataFrame, params: dict):
        """Per pair, the tokens of the good and of the bad score (``(good, bad)`` arrays), for
        the tolerance of ``audit_tolerance="answer_tokens"``."""
        raise NotImplementedError(f"{type(self).__name__} counts no answer tokens")

    def key_parameters(self, params: dict, columns=()) -> dict:
        """The parameters that enter its run key: its run ``parameters``, the SHA-256 of the
        files it reads (``pair_fingerprints`` only where the pairs' ``columns`` hold their
        column), its protocol."""
        import json

        out = {k: json.loads(json.dumps(params[k])) for k in self.parameters}
        prints = list(self.fingerprints) + [(k, f) for c, k, f in self.pair_fingerprints
                                            if c in columns]
        for k, function in prints:
            out[k] = function()
        return {**out, **dict(self.protocol)}
