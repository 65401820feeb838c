"""Audit a results store: verify it, then recompute a seeded sample of its shards from scratch
and compare them with what it holds.

:meth:`~xcomps_utils.runs.store.Store.verify` shows that every file is the one its shard's done
marker recorded; it cannot show that the recorded numbers are the ones the run's model computes
(a shard rewritten with its marker updated verifies). :func:`audit` recomputes shards with the
path of a repair (:func:`xcomps_utils.runs.execute.repair`: the run's own model, weights, dtype,
device kind, parameters and pairs, read from its ``run.json`` and ``pairs.parquet``) into a
temporary store, never writing into the audited one, and compares every file of each recomputed
shard with the stored one, row by row, under one rule per measure:

==========================================  ==================================================
what                                        rule (``tolerance_name`` in the table)
==========================================  ==================================================
counts, identifiers, tokens, texts,         equal (``n_tokens_*``, ``n_groups``, token ids,
``near_tie_tolerance``                      offsets, the sentences)
decisions (``correct``, ``tie``,            equal, except a pair whose margin (``delta``) is
``near_tie``)                               within its tolerance of the threshold in either
                                            computation (ties and near ties trade places)
a log-probability over ``n`` tokens         float32, both computations in MKL's pinned mode
(sentence sums, ``delta``, Meta answers,    (:data:`xcomps_utils.MKL_CBWR`, recorded as the
token and group log-probabilities)          run's ``mkl_cbwr``): ``FLOAT32_TOKEN_TOLERANCE x
                                            n`` (the kernels give the same bits in any batch,
                                            thread count and x86 CPU: a difference is damage);
                                            otherwise (a run computed before the mode was
                                            pinned) ``FLOAT32_KERNEL_SPREAD_BY_MODEL[model]`` a
                                            text (what different float32 kernels measurably
                                            give one token, ``benchmarks/kernel_spread.py``) +
                                            ``FLOAT32_GAP_BY_MODEL[model] x n``; a pinned pair
                                            sample ``FLOAT32_LENGTH_TOLERANCE x n``; float64
                                            ``FLOAT32_TOKEN_TOLERANCE x n``; a per-token mean
                                            ``x 1``
a perplexity ``exp(mean surprisal)``        relative, through ``exp``: ``ppl (e^u - 1) e^u``,
or ``exp(group surprisal)``, Meta's         ``u`` the tolerance of the log (mean: one token's)
``answer_mass``
token-level perplexity proportions          propagated from the group surprisals
(``plain_*``, ``norm_*``)                   (:func:`proportion_tolerance`)
Neuro hidden states                         ``|diff| <= STATE_ATOL + STATE_RTOL |stored|``
                                            (1e-4 each: the bound of batched vs one-at-a-time
                                            states, ``tests/pairs/test_xcomps.py``)
Neuro probe measures                        ``PROBE_TOLERANCE`` (1e-12): recomputed from the
                                            *stored* states they are the same numbers (the
                                            probe is a seeded closed-form ridge in float64; a
                                            flipped prediction moves a score by 1/n); from
                                            *recomputed* states (not shipped), a score within
                                            one flipped prediction (``PROBE_FLIP_SCORES``), a
                                            permutation p-value within the null draws that lie
                                            within one flipped prediction of the observed score
                                            (:func:`_p_value_bounds`); counts exact
==========================================  ==================================================

Runs in bfloat16 or float16 take :data:`xcomps_utils.lm.precision.BF16_PAIR_TOLERANCE` (1 nat)
whatever the tokens, and ``STATE_RTOL_BF16`` for states (bfloat16's rounding, not measured).

Why the MKL mode decides the float32 rule (issue 41): unpinned, MKL's AVX-512 ``sgemm`` rounds a
row of a product differently for 16 or more rows than for fewer, and SmolLM2's massive
activations amplify that to 6.5e-3 nats at the first token after BOS, so a shard computed on one
machine in one batching did not recompute on another within the model's float32 gap (5.4e-4).
Pinned, the same bits come back; a run from before is held to what float32 kernels measurably
differ by, and recomputing it pinned (``make publish``) tightens its rule to 1e-5.

*The sample*: at least one shard per run of the store, drawn with a seeded RNG (``make
audit``: the commit's, so the store is covered over the commits), then shards drawn from the rest
up to ``sample`` (:func:`plan_sample`); of a per-pair method's shard, ``pairs`` of its pairs
(``make audit``: :data:`PAIRS_PER_SHARD`), compared with the stored rows of those pairs. ``--all``
recomputes every shard, whole. ``make ship`` checks the runs it ships the same way, with
:func:`ship_sample_size` shards. A Neuro run's draw is a
state shard and the run's probes: the state shard recomputed and compared (states within the
tolerance above), and the probes recomputed from the stored (verified) states and compared. A
Neuro run whose states are not in the store (``states/`` not shipped: every state file its
markers record is missing, and nothing else) is not a verify failure; its draw is one of its
languages (when every ``probe_by`` list holds ``lang`` and the run has several; else the whole
run): the states of that language's sentences recomputed and, from those, the probes of its
groups, compared with the stored measures of those groups (the states themselves cannot be
compared: the table says so; nor can ``p_adjusted``, ``p_pooled`` and ``n_pooled``, which pool
every language's null: the table says so too). ``--all`` recomputes such a run whole, every state
shard and every probe, and compares all it stores. Such probes
can differ only if the recomputed states differ from the unshipped ones, where a prediction at
the threshold flips: their scores are held within one flipped prediction (``PROBE_FLIP_SCORES``),
their counts, chosen layers and p-values exactly.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from .. import MKL_CBWR
from ..declare import check, ParameterError, SampleSize, Size
from ..lm.precision import (BF16_PAIR_TOLERANCE, FLOAT32_GAP_BY_MODEL, FLOAT32_GAP_DEFAULT,
                            FLOAT32_KERNEL_SPREAD_BY_MODEL, FLOAT32_KERNEL_SPREAD_DEFAULT,
                            FLOAT32_LENGTH_TOLERANCE, FLOAT32_TOKEN_TOLERANCE, dtype_name,
                            mkl_mode)
from ..methods.registry import METHODS
from . import execute, planner
from .store import MEASURE_COLUMNS, Store, StoreError

__all__ = ["audit", "AuditError", "plan_sample", "units", "failures", "failure_line",
           "ship_sample_size", "PAIRS_PER_SHARD",
           "proportion_tolerance", "AUDIT_COLUMNS", "STATE_ATOL", "STATE_RTOL",
           "STATE_RTOL_BF16", "PROBE_TOLERANCE", "PROBE_FLIP_SCORES"]

#: nats (states are in the model's units): absolute part of the hidden-state tolerance.
STATE_ATOL = 1e-4
#: relative part of the hidden-state tolerance (float32 runs): the bound
#: ``tests/pairs/test_xcomps.py::test_last_token_states_equal_unbatched`` holds between batchings.
STATE_RTOL = 1e-4
#: relative hidden-state tolerance of bfloat16/float16 runs: 2**-7, bfloat16's rounding of one
#: value (not measured across batchings).
STATE_RTOL_BF16 = 2.0 ** -7
#: Neuro probe measures recomputed from the stored states: equal up to float64 rounding.
PROBE_TOLERANCE = 1e-12
#: Neuro probe scores recomputed from *recomputed* states (a run whose states are not shipped):
#: the states agree within ``STATE_ATOL``/``STATE_RTOL``, not bit for bit (float32 kernels round
#: differently from one CPU or thread count to another), so a prediction whose ridge score sits
#: at the threshold may flip. The permutation nulls, fitted to shuffled labels, put many there:
#: on this project's 2-core machine (session 16) ``null_q95`` of BMLAMA-17 Hungarian moved by
#: 9.2e-4 while every observed score was equal. A score may move by one flipped prediction per
#: fit: ``1 / (2 n_min)`` for a balanced accuracy and the quantiles and means of its draws (each
#: 1-Lipschitz in the draws), ``2 / n_min`` for F1 (its bound) and MCC (about as much, except
#: for a probe that predicts nearly one class, where one flip can move it further), ``n_min``
#: the smaller class of the probe group. Counts, the chosen layers and the permutation p-values
#: stay exact.
PROBE_FLIP_SCORES = {"balanced_accuracy": 0.5, "null_q95": 0.5, "null_max_q95": 0.5,
                     "null_nested_mean": 0.5, "layer0_balanced_accuracy": 0.5,
                     "nested_balanced_accuracy": 0.5, "f1": 2.0, "mcc": 2.0, "nested_f1": 2.0,
                     "nested_mcc": 2.0}

#: The columns of the table :func:`audit` returns.
AUDIT_COLUMNS = ["run", "method", "model", "shard", "measure", "rows", "max_abs_diff",
                 "tolerance", "tolerance_name", "where", "ok"]

_MEASURE_KEY = [c for c in MEASURE_COLUMNS if c != "value"]
_EQUAL = "equal"


class AuditError(StoreError):
    """The store cannot be audited: it does not verify (a file not as its marker records), it
    holds no shard to audit, or a run cannot be recomputed here (its model or device kind is not
    this machine's). The message names the run, the shard and what to do."""


# --- what to recompute ------------------------------------------------------------------------

def _marker_files(store: Store, rid: str, name: str) -> dict[str, dict | None]:
    """The files a shard's done marker records (``rel path -> record``; a marker from before
    checksums: the shard's files as they are, record ``None``)."""
    marker = store.root / "runs" / rid / "done" / name
    files = json.loads(marker.read_text()).get("files")
    if files is None:
        return {p.relative_to(store.root).as_posix(): None
                for p in store.root.glob(f"*/run={rid}/{name}.*")
                if p.relative_to(store.root).parts[0] != "quarantine"}
    return files


def _unshipped_states(store: Store, problems: list[dict]) -> set[str]:
    """Neuro runs whose states were not shipped: every ``states/`` file their markers record is
    missing, and that is all :func:`xcomps_utils.runs.execute.verify` says of them."""
    out = set()
    for rid in {p["run"] for p in problems}:
        mine = [p for p in problems if p["run"] == rid]
        if not all(p["file"].startswith(f"states/run={rid}/") and p["problem"] == "missing"
                   for p in mine):
            continue
        run = store.run(rid)
        if not _last(run.record["key"].get("method")):
            continue
        recorded = {rel for name in run.shard_names() for rel in _marker_files(store, rid, name)
                    if rel.startswith("states/")}
        if recorded and recorded == {p["file"] for p in mine}:
            out.add(rid)
    return out


def _check(store: Store, runs: list[str] | None = None) -> set[str]:
    """Verify the store (or ``runs``; :func:`xcomps_utils.runs.execute.verify`); returns the
    Neuro runs whose states were not shipped.

    Raises:
        AuditError: any other problem (the first named, with the run, shard and file).
    """
    problems = execute.verify(store, runs)
    # every state file of the run absent (and nothing else wrong with it), or declared by
    # Store.ship in shipped.json (verify accepts those absences and reports every other problem)
    inferred = _unshipped_states(store, problems)
    unshipped = inferred | {rid for rid in (runs or store.ids()) if "states" in store.omitted(rid)}
    left = [p for p in problems if p["run"] not in inferred]
    if left:
        p = left[0]
        where = f"shard {p['shard']}: " if p["shard"] else ""
        more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
        raise AuditError(f"verify failed, so nothing was recomputed: run {p['run']}: {where}"
                         f"{p['file']} {p['problem']}{more}; see `xcomps-study verify --store "
                         f"{store.root}`")
    return unshipped


def _last(method) -> str | None:
    """The finishing shard of a method (``Method.finish_shard``: Neuro's ``probes``), or
    ``None``."""
    m = METHODS.get(method)
    return m.finish_shard if m is not None else None


def _tolerance_kind(method) -> str:
    """The method's ``Method.audit_tolerance`` (``"equal"`` for a method not registered)."""
    m = METHODS.get(method)
    return m.audit_tolerance if m is not None else "equal"


def _probe_languages(run, key: dict) -> list[str] | None:
    """The languages a Neuro run's probes can be audited one at a time by: its pairs' languages
    when it has several and every ``probe_by`` list holds ``lang`` (so each probe group lies in
    one language), else ``None``."""
    probe_by = planner.parameters_of(key).get("probe_by") or [[]]
    if not all("lang" in by for by in probe_by):
        return None
    langs = sorted(run.pairs()["lang"].astype(str).unique())
    return langs if len(langs) > 1 else None


def units(store: Store, unshipped: set[str] = frozenset(), runs: list[str] | None = None,
          by_language: bool = True) -> list[dict]:
    """What can be drawn for an audit (of ``runs``, default every run): one unit per finished
    shard of each run (Neuro: per state shard, with the run's probes when they are done; a run
    whose states were not shipped: one unit per language, the states of its sentences and the
    probes of its groups recomputed (:func:`_probe_languages`), or with ``by_language=False``
    (``--all``) or a run probed across languages, one unit, its probes from every state shard
    recomputed).

    Returns:
        dicts ``{"run", "method", "model", "label", "jobs"}``; each job is ``{"recompute":
        [shards], "link": [stored shards it reads], "compare": [shards]}`` (and ``"lang"``: of
        one language only), computed in one temporary store.
    """
    out = []
    for rid in store.ids() if runs is None else runs:
        run = store.run(rid)
        key = run.record["key"]
        method, done = key.get("method"), run.shard_names()
        base = {"run": rid, "method": method, "model": key.get("model")}
        last = _last(method)
        states = [n for n in done if n != last]
        if last and rid in unshipped:
            langs = _probe_languages(run, key) if by_language and last in done else None
            for lang in langs or []:
                out.append({**base, "label": f"{last} lang={lang}", "jobs": [
                    {"recompute": states + [last], "link": [], "compare": [last],
                     "lang": lang}]})
            if last in done and not langs:
                out.append({**base, "label": last, "jobs": [
                    {"recompute": states + [last], "link": [], "compare": states + [last]}]})
            continue
        for name in states:
            jobs = [{"recompute": [name], "link": [], "compare": [name]}]
            if last and last in done:
                jobs.append({"recompute": [last], "link": states, "compare": [last]})
            out.append({**base, "label": name + (f" + {last}" if len(jobs) > 1 else ""),
                        "jobs": jobs})
    return out


#: Pairs recomputed per drawn shard by ``make audit`` (``--pairs``): a seeded sample of the
#: shard's pairs, for a method whose numbers are per pair (no finishing step). Pinned float32
#: scoring gives a pair the same bits in any batch (:mod:`xcomps_utils.lm.precision`), so the
#: sample is compared with the stored rows of those pairs under the same rules as a whole shard.
PAIRS_PER_SHARD = 12


def plan_sample(candidates: list[dict], sample: int | None = None, seed: int = 0) -> list[dict]:
    """A seeded draw of units: one per run, then more from the rest up to ``sample`` in all.

    Args:
        candidates: :func:`units` of the store.
        sample: units in all (default: one per run).
        seed: the draw's seed (the same seed draws the same units; ``make audit`` seeds it with
            the commit, so each commit draws another sample).

    Returns:
        the drawn units, ordered by model (each model loads once), run and shard.

    Raises:
        ParameterError: ``sample`` is below the number of runs (each gets one) or below 1.
    """
    groups: dict[str, list[dict]] = {}
    for u in sorted(candidates, key=lambda u: (u["run"], u["label"])):
        groups.setdefault(u["run"], []).append(u)
    least = max(1, len(groups))
    if check(SampleSize, sample, "sample") is not None and sample < least:
        raise ParameterError("sample", f"an integer >= {least} (the audit recomputes at least "
                                       f"one shard of each of the store's {len(groups)} run(s))",
                             sample, "or leave it out (one shard a run), or --all")
    rng = np.random.default_rng(seed)
    chosen = [us[int(rng.integers(len(us)))] for _, us in sorted(groups.items())]
    rest = [u for _, us in sorted(groups.items()) for u in us if not any(u is c for c in chosen)]
    extra = min(len(rest), (sample or len(chosen)) - len(chosen))
    if extra > 0:
        chosen += [rest[i] for i in sorted(rng.choice(len(rest), size=extra, replace=False))]
    return sorted(chosen, key=lambda u: (str(u["model"]), u["run"], u["label"]))


def ship_sample_size(n_units: int, bad_fraction: float = 0.05, power: float = 0.99) -> int:
    """Units to recompute, drawn without replacement from ``n_units``, so that a store in which
    a ``bad_fraction`` of the units is wrong (at least one) shows one of them with probability
    ``power`` (hypergeometric): ``make ship``'s check (all units when the store is small).

    Raises:
        ParameterError: a fraction or power outside (0, 1), or ``n_units`` below 1.
    """
    check(Size, n_units, "n_units")
    for name, value in (("bad_fraction", bad_fraction), ("power", power)):
        if not 0 < value < 1:
            raise ParameterError(name, "a number in (0, 1)", value)
    from scipy.stats import hypergeom

    bad = max(1, int(np.ceil(bad_fraction * n_units)))
    for k in range(1, n_units + 1):
        if 1 - hypergeom.pmf(0, n_units, bad, k) >= power:
            return k
    return n_units


# --- tolerances --------------------------------------------------------------------------------

class _Precision:
    """The tolerance of a run's log-probabilities (nats) when recomputed, from its dtype, model
    and the MKL mode it was computed in (its provenance's ``mkl_cbwr``) and is recomputed in:

    - float32, both in :data:`xcomps_utils.MKL_CBWR` mode: ``FLOAT32_TOKEN_TOLERANCE`` per token
      (the scorer's guarantee; the pinned kernels give the same bits on any x86 CPU with AVX2,
      whatever the batch and threads, so any difference is damage);
    - float32 otherwise (a run computed before the mode was pinned, or on a machine without MKL):
      two float32 computations by different kernels, each within the model's float32 arithmetic
      of the exact value: ``FLOAT32_KERNEL_SPREAD_BY_MODEL`` per token (measured:
      ``benchmarks/kernel_spread.py``), at least the model's ``FLOAT32_GAP_BY_MODEL``;
    - float64: ``FLOAT32_TOKEN_TOLERANCE`` per token; bfloat16 and float16:
      ``BF16_PAIR_TOLERANCE`` whatever the tokens."""

    def __init__(self, dtype: str, model: str | None, stored_mode: str | None = None,
                 mode: str | None = None, device: str = "cpu", sample: bool = False):
        self.dtype, self.model = dtype_name(dtype), model
        self.float32 = self.dtype in ("float32", "float64")
        mode = mkl_mode() if mode is None and self.dtype == "float32" else mode
        # MKL pins a CPU's products only; a GPU's float32 kernels are not batch-invariant
        self.pinned = stored_mode == MKL_CBWR and mode == MKL_CBWR and device == "cpu"
        self.per_text = 0.0
        if self.dtype == "float32" and self.pinned and sample:
            # a pair sample forms other prefix groups than its shard: a shared prefix is then
            # scored as a sequence of another length (FLOAT32_LENGTH_TOLERANCE)
            self.constant = ("FLOAT32_LENGTH_TOLERANCE (pinned, a pair sample: other prefix "
                             "groups than the shard's)")
            self.per_token = FLOAT32_LENGTH_TOLERANCE
        elif self.dtype == "float32" and self.pinned:
            self.constant = f"FLOAT32_TOKEN_TOLERANCE (both computed with MKL_CBWR={MKL_CBWR})"
            self.per_token = FLOAT32_TOKEN_TOLERANCE
        elif self.dtype == "float32":
            # the kernels' spread is one token's (the first after BOS, where SmolLM2 builds its
            # massive activation; 99.9% of tokens are within the model's gap): once a text, plus
            # the gap a token
            self.per_text = FLOAT32_KERNEL_SPREAD_BY_MODEL.get(model, FLOAT32_KERNEL_SPREAD_DEFAULT)
            named = (f"FLOAT32_KERNEL_SPREAD_BY_MODEL[{model!r}]"
                     if model in FLOAT32_KERNEL_SPREAD_BY_MODEL else "FLOAT32_KERNEL_SPREAD_DEFAULT")
            gap = ("FLOAT32_GAP_BY_MODEL" if model in FLOAT32_GAP_BY_MODEL
                   else "FLOAT32_GAP_DEFAULT")
            self.constant = (f"{named} ({self.per_text:g}) a text + {gap} (stored in MKL mode "
                             f"{stored_mode or 'unrecorded'}, recomputed in {mode})")
            self.per_token = FLOAT32_GAP_BY_MODEL.get(model, FLOAT32_GAP_DEFAULT)
        elif self.dtype == "float64":
            self.constant, self.per_token = "FLOAT32_TOKEN_TOLERANCE", FLOAT32_TOKEN_TOLERANCE
        else:
            self.constant, self.per_token = "BF16_PAIR_TOLERANCE", None

    def lp(self, n, texts=1) -> np.ndarray:
        """nats: the tolerance of a log-probability over ``n`` tokens of ``texts`` texts."""
        n = np.asarray(n, dtype=np.float64)
        if self.per_token is None:
            return np.full(n.shape, BF16_PAIR_TOLERANCE)
        return self.per_token * n + self.per_text * np.asarray(texts, dtype=np.float64)

    def name(self, n, what: str = "") -> str:
        """The rule's name: ``<constant> (<value>) x <n> tokens<what>`` (``n`` ``None``: per
        token)."""
        if self.per_token is None:
            return f"BF16_PAIR_TOLERANCE ({BF16_PAIR_TOLERANCE:g}, a {self.dtype} run){what}"
        head = f"{self.constant} ({self.per_token:g})"
        if n is None:
            return f"{head} per token{what}"
        n = int(n) if float(n).is_integer() else n
        return f"{head} x {n} token{'s' * (n != 1)}{what}"

    def rel(self, n, texts=1) -> np.ndarray:
        """Relative tolerance of ``exp`` of a log-probability over ``n`` tokens."""
        u = self.lp(n, texts)
        return np.expm1(u) * np.exp(u)

    def state_rtol(self) -> float:
        return STATE_RTOL if self.float32 else STATE_RTOL_BF16


def proportion_tolerance(groups: pd.DataFrame, category: str, kind: str, unit) -> dict:
    """The tolerance of a token-level perplexity proportion of one prompt pair, propagated from
    its groups' surprisals (each within ``unit(n)`` nats over its ``n`` tokens).

    With ``x_g`` the group differences (``kind`` ``"s"``: ``s_B - s_A``, within ``e_g = u_A +
    u_B``; ``"ppl"``: ``e^{s_B} - e^{s_A}``, within ``e_g = e^{s_B}(e^{u_B}-1)e^{u_B} +`` the
    same for A), ``D = sum |x_g|``, ``E = sum e_g``: the plain proportion ``N / D`` lies between
    ``(N - e_N) / (N - e_N + R + e_R)`` and ``(N + e_N) / (N + e_N + R - e_R)`` (``N`` the
    category's share, ``R`` the rest, each clipped at 0), and the normalized proportion ``A / D``
    (``A = sum_cat x_g - n_cat median(x)``) changes by at most ``(e_A + |A/D| E) / (D - E)`` with
    ``e_A = e_N + n_cat max e_g`` (the median moves by at most ``max e_g``); infinite when
    ``D <= E`` (the difference is within its own error).

    Args:
        groups: one prompt pair's groups (``n_tokens_correct``, ``n_tokens_incorrect``,
            ``s_correct``, ``s_incorrect`` in nats, ``category``).
        category: ``pivotal``, ``period`` or ``other``; kind: ``"s"`` or ``"ppl"``.
        unit: ``unit(n) -> nats`` for ``n`` tokens.

    Returns:
        ``{"plain": tolerance, "norm": tolerance}``.
    """
    ka, kb = groups["n_tokens_correct"].to_numpy(), groups["n_tokens_incorrect"].to_numpy()
    sa, sb = (groups["s_correct"].to_numpy(np.float64), groups["s_incorrect"].to_numpy(np.float64))
    ua, ub = np.asarray(unit(ka), np.float64), np.asarray(unit(kb), np.float64)
    if kind == "s":
        x, e = sb - sa, ua + ub
    else:
        x = np.exp(sb) - np.exp(sa)
        e = np.exp(sb) * np.expm1(ub) * np.exp(ub) + np.exp(sa) * np.expm1(ua) * np.exp(ua)
    m = (groups["category"] == category).to_numpy()
    big_d, big_e = np.abs(x).sum(), e.sum()
    n, e_n = np.abs(x[m]).sum(), e[m].sum()
    r, e_r = big_d - n, big_e - e_n
    p = n / big_d if big_d > 0 else np.nan
    lo_n, hi_n = max(n - e_n, 0.0), n + e_n
    lo = lo_n / (lo_n + r + e_r) if lo_n + r + e_r > 0 else 0.0
    hi_den = hi_n + max(r - e_r, 0.0)
    hi = hi_n / hi_den if hi_den > 0 else 1.0
    plain = max(hi - p, p - lo) if np.isfinite(p) else np.inf
    if big_d > big_e and len(x):
        a = x[m].sum() - m.sum() * np.median(x)
        norm = (e_n + m.sum() * e.max() + abs(a / big_d) * big_e) / (big_d - big_e)
    else:
        norm = np.inf
    return {"plain": float(plain), "norm": float(norm)}


# --- comparing ---------------------------------------------------------------------------------

def _diff(old, new) -> np.ndarray:
    a, b = np.asarray(old, np.float64), np.asarray(new, np.float64)
    with np.errstate(invalid="ignore"):
        d = np.where(a == b, 0.0, np.abs(a - b))
    both = np.isnan(a) & np.isnan(b)
    return np.where(both, 0.0, np.where(np.isnan(d), np.inf, d))


def _result(measure: str, diff, tol, names, where) -> dict:
    """One table row: the row of ``diff`` furthest past (or closest to) its tolerance."""
    diff, tol = np.asarray(diff, np.float64), np.broadcast_to(np.asarray(tol, np.float64),
                                                              np.shape(diff))
    if not len(diff):
        return {"measure": measure, "rows": 0, "max_abs_diff": 0.0, "tolerance": np.nan,
                "tolerance_name": "no rows", "where": "", "ok": True}
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff == 0, 0.0, diff / tol)
    # the row furthest past (or nearest to) its tolerance; nothing differs: the tightest one
    k = int(np.argmax(ratio)) if ratio.any() else int(np.argmin(tol))
    name = names(k) if callable(names) else names
    return {"measure": measure, "rows": len(diff), "max_abs_diff": float(diff[k]),
            "tolerance": float(tol[k]), "tolerance_name": name, "where": where(k),
            "ok": bool((diff <= tol).all())}


def _equal_column(measure: str, old: pd.Series, new: pd.Series, where) -> dict:
    """Text or identifier columns: equal row by row."""
    if pd.api.types.is_numeric_dtype(old) and pd.api.types.is_numeric_dtype(new):
        return _result(measure, _diff(old, new), 0.0, "equal", where)
    a, b = old.astype(str).to_numpy(), new.astype(str).to_numpy()
    bad = np.flatnonzero(a != b)
    return {"measure": measure, "rows": len(a), "max_abs_diff": np.nan, "tolerance": 0.0,
            "tolerance_name": f"equal: {len(bad)} of {len(a)} rows differ" if len(bad)
            else "equal", "where": where(int(bad[0])) if len(bad) else "", "ok": not len(bad)}


def _rows_differ(measure: str, old: pd.DataFrame, new: pd.DataFrame, keys: list[str]) -> dict | None:
    """A row that is not the same item in both tables (or other columns, or other lengths)."""
    why = None
    if list(old.columns) != list(new.columns):
        why = f"columns differ: stored {list(old.columns)}, recomputed {list(new.columns)}"
    elif len(old) != len(new):
        why = f"rows differ: stored {len(old)}, recomputed {len(new)}"
    else:
        for c in keys:
            a, b = old[c].astype(str).to_numpy(), new[c].astype(str).to_numpy()
            bad = np.flatnonzero(a != b)
            if len(bad):
                why = (f"rows differ: row {bad[0]} is {c}={a[bad[0]]!r} stored, "
                       f"{b[bad[0]]!r} recomputed")
                break
    if why is None:
        return None
    return {"measure": measure, "rows": max(len(old), len(new)), "max_abs_diff": np.nan,
            "tolerance": 0.0, "tolerance_name": why, "where": "", "ok": False}


def _pair_key(frame: pd.DataFrame, extra=()) -> list[tuple]:
    cols = [c for c in planner.ID + list(extra) if c in frame]
    return list(frame[cols].astype(str).itertuples(index=False, name=None))


def _where(frame: pd.DataFrame):
    def at(k):
        r = frame.iloc[k]
        parts = [f"{c}={r[c]}" for c in ("task", "pair_id", "wording", "order", "lang", "subset")
                 if c in frame and str(r[c]) not in ("", "nan")]
        if "layer" in frame and int(r["layer"]) >= 0:
            parts.append(f"layer={r['layer']}")
        return " ".join(parts) or f"row {k}"
    return at


def _group_keys(frame: pd.DataFrame) -> list[tuple]:
    """A probe group's key per row: its task, language and subset."""
    return list(frame[["task", "lang", "subset"]].astype(str).itertuples(index=False, name=None))


def _probe_minority(measures: pd.DataFrame) -> dict:
    """Probe group -> its smaller class (``min(n_acceptable, n_sentences - n_acceptable)``)."""
    m = measures[measures["measure"].isin(["n_sentences", "n_acceptable"])]
    n: dict = {}
    for key, name, v in zip(_group_keys(m), m["measure"], m["value"]):
        n.setdefault(key, {})[name] = float(v)
    return {k: min(v["n_acceptable"], v["n_sentences"] - v["n_acceptable"]) for k, v in n.items()
            if len(v) == 2 and min(v["n_acceptable"], v["n_sentences"] - v["n_acceptable"]) > 0}


def _null_draws_of(rid: str) -> dict:
    """The nested null draws of run ``rid``'s probes as this process just recomputed them
    (:data:`xcomps_utils.methods.neuro.NULL_DRAWS`), per probe group."""
    from ..methods.neuro import NULL_DRAWS

    return NULL_DRAWS.get(rid, {})


_P_VALUES = ("p_permutation", "p_adjusted", "p_pooled")
#: a probe group's measures that pool every language's null (a language recomputed alone cannot
#: reproduce them: :func:`xcomps_utils.methods.probing.joint_permutation_test`)
_POOLED = ("p_adjusted", "p_pooled", "n_pooled")


def _p_value_bounds(draws: dict, n_min: dict) -> dict:
    """Per probe group, how far each permutation p-value can move when every score (the
    observed one and each null draw) may move by one flipped prediction, ``d = 0.5 / n_min``
    (a balanced accuracy): the draws that can cross the observed score are those within ``2 d``
    of it, so ``p_permutation`` moves by at most their count over ``B + 1``. ``p_adjusted``
    (max-T over the pooled groups, :func:`xcomps_utils.methods.probing.joint_permutation_test`)
    counts the draws whose largest standardised score lies within ``(2 + |z_g|) d_g / s_g +
    max_j (2 + |z_bj|) d_j / s_j`` of the group's observed standardised score ``z_g`` (``s``: a
    group's standard deviation over its ``B + 1`` values; a value moving by ``d`` moves its
    standardised value by at most about ``(2 + |z|) d / s``: its own move, the mean's and the
    standard deviation's); ``p_pooled``, their smallest, by the largest of those bounds.

    Returns:
        ``{group key: {"p_permutation": t, "p_adjusted": t, "p_pooled": t}}``."""
    out, pools = {}, {}
    for k, g in draws.items():
        if k not in n_min:
            continue
        d = 0.5 / n_min[k]
        x = g["draws"]
        out[k] = {"p_permutation": float((np.abs(x - g["observed"]) <= 2 * d + 1e-12).sum())
                  / (len(x) + 1)}
        pools.setdefault(g["pool"], []).append(k)
    for keys in pools.values():
        keys = [k for k in keys if len(draws[k]["draws"]) == len(draws[keys[0]]["draws"])]
        allv = np.column_stack([np.concatenate([[draws[k]["observed"]], draws[k]["draws"]])
                                for k in keys])
        sd = allv.std(axis=0)
        d = np.array([0.5 / n_min[k] for k in keys])
        with np.errstate(invalid="ignore", divide="ignore"):
            z = np.where(sd > 0, (allv - allv.mean(axis=0)) / sd, 0.0)
            # a value moved by d moves its standardised value by up to (2 + |z|) d / s: its own
            # move, the mean's and the standard deviation's
            move = np.where(sd > 0, (2 + np.abs(z)) * d / sd, 0.0)
        top = z[1:].max(axis=1)
        top_move = move[1:].max(axis=1)
        tols = []
        for j, k in enumerate(keys):
            band = move[0, j] + top_move
            t = float((np.abs(top - z[0, j]) <= band + 1e-12).sum()) / len(allv)
            out[k]["p_adjusted"] = t
            tols.append(t)
        for k in keys:
            out[k]["p_pooled"] = max(tols)
    return out


def _measure_rules(method: str, new: pd.DataFrame, prec: _Precision, ctx: dict):
    """``measure -> (rows -> (tolerance array, name(k)))`` for one method's measures, by its
    ``Method.audit_tolerance``."""
    kind = _tolerance_kind(method)
    if kind == "probe" and ctx.get("recomputed_states"):
        n_min = _probe_minority(new)
        bounds = _p_value_bounds(ctx.get("null_draws") or {}, n_min)

        def flip(measure):
            if measure in _P_VALUES:
                def tol_p(rows):
                    t = np.array([bounds.get(k, {}).get(measure, PROBE_TOLERANCE)
                                  for k in _group_keys(rows)], float)
                    return (np.maximum(t, PROBE_TOLERANCE),
                            "null draws within one flipped prediction of the observed score, "
                            "over B + 1 (the states were recomputed, not shipped)")
                return tol_p
            if measure not in PROBE_FLIP_SCORES:
                return lambda rows: (np.full(len(rows), PROBE_TOLERANCE), "PROBE_TOLERANCE "
                                     "(recomputed states, but not a score: exact)")
            c = PROBE_FLIP_SCORES[measure]

            def tol(rows):
                n = np.array([n_min.get(k, np.nan) for k in _group_keys(rows)], float)
                # one flip exactly, and the rounding of a difference of two scores
                return (np.where(np.isfinite(n), c / n * (1 + 1e-9), PROBE_TOLERANCE),
                        f"PROBE_FLIP_SCORES ({c:g} / n_min: one flipped prediction; the states "
                        f"were recomputed, not shipped)")
            return tol
        return flip
    if kind == "probe":
        return lambda measure: (lambda rows: (np.full(len(rows), PROBE_TOLERANCE),
                                              "PROBE_TOLERANCE (probes from the stored states, "
                                              "float64 rounding)"))
    if kind in ("sentence_tokens", "answer_tokens"):
        if kind == "sentence_tokens":
            counts = new[new.measure.isin(["n_tokens_good", "n_tokens_bad"])]
            table = {}
            for key, m, v in zip(_pair_key(counts), counts["measure"], counts["value"]):
                table.setdefault(key, {})[m] = v
            n_good = {k: v["n_tokens_good"] for k, v in table.items()}
            n_bad = {k: v["n_tokens_bad"] for k, v in table.items()}
        else:
            n_good, n_bad = ctx["answer_tokens"]
        n = {"logprob_good": lambda k: n_good[k], "logprob_bad": lambda k: n_bad[k],
             "delta": lambda k: n_good[k] + n_bad[k], "logprob_mean_good": lambda k: 1,
             "logprob_mean_bad": lambda k: 1, "answer_mass": lambda k: n_good[k] + n_bad[k]}

        def rule(measure):
            if measure in n:
                def tol(rows):
                    tokens = np.array([n[measure](k) for k in _pair_key(rows)], np.float64)
                    texts = 2 if measure in ("delta", "answer_mass") else 1
                    if measure == "answer_mass":
                        return (prec.rel(tokens, texts) * rows["value"].abs().to_numpy(),
                                lambda j: prec.name(tokens[j], ", through exp (probability "
                                                               "mass)"))
                    return prec.lp(tokens, texts), lambda j: prec.name(tokens[j])
                return tol
            return None  # equal
        return rule
    if kind == "proportions":
        bounds = ctx["ppl_bounds"]

        def rule(measure):
            if measure in ("ppl_correct", "ppl_incorrect"):
                return lambda rows: (prec.rel(1) * rows["value"].abs().to_numpy(),
                                     prec.name(None, ", through exp(mean surprisal)"))
            if re.fullmatch(r"(plain|norm)_[a-z]+_(ppl|s)", measure):
                def tol(rows):
                    keys = list(rows[["task", "lang", "pair_id", "wording", "order"]].astype(
                        str).itertuples(index=False, name=None))
                    return (np.array([bounds[k][measure] for k in keys]),
                            prec.name(None, ", propagated from the groups "
                                            "(proportion_tolerance)"))
                return tol
            return None
        return rule
    return lambda measure: None


def _ppl_bounds(groups: pd.DataFrame, prec: _Precision) -> dict:
    """Per prompt pair (identifiers, wording, order): the tolerance of each proportion."""
    from ..methods.perplexity import CATEGORIES

    out = {}
    keys = ["task", "lang", "pair_id", "wording", "order"]
    for key, g in groups.groupby(keys, sort=False):
        b = {}
        for cat in CATEGORIES:
            for kind in ("ppl", "s"):
                t = proportion_tolerance(g, cat, kind, prec.lp)
                b[f"plain_{cat}_{kind}"], b[f"norm_{cat}_{kind}"] = t["plain"], t["norm"]
        out[tuple(map(str, key))] = b
    return out


_DECISIONS = ("correct", "tie", "near_tie")
_PROMPT_KEY = ["task", "lang", "pair_id", "wording", "order"]


def _decision_tolerance(method: str, measure: str, old: pd.DataFrame, new: pd.DataFrame,
                        rows: pd.DataFrame, rule, prec: _Precision):
    """A decision (``correct``, ``tie``, ``near_tie``) is equal, except for a pair whose margin
    lies within its tolerance of the decision's threshold in either computation (there the
    arithmetic decides, not the model: ties and near ties may trade places, and the book leaves
    both out of every accuracy). Direct and Meta: ``delta`` within the delta's tolerance of 0
    (and, for ``near_tie``, of ``near_tie_tolerance``); token-level perplexity: ``ln PPL(B) -
    ln PPL(A)`` within two tokens' tolerance of 0. Returns ``(tolerance: 0 or inf per row,
    name)``."""
    def by_key(frame, m, cols=None):
        f = frame[frame["measure"] == m]
        keys = (list(f[cols].astype(str).itertuples(index=False, name=None)) if cols
                else _pair_key(f))
        return dict(zip(keys, f["value"].to_numpy(np.float64)))

    kind = _tolerance_kind(method)
    if kind in ("sentence_tokens", "answer_tokens"):
        d_new = new[new["measure"] == "delta"].reset_index(drop=True)
        tol_of = dict(zip(_pair_key(d_new), rule("delta")(d_new)[0]))
        margins = [by_key(old, "delta"), by_key(new, "delta")]
        threshold = by_key(new, "near_tie_tolerance")
        keys, what = _pair_key(rows), "delta"
    elif kind == "proportions" and measure == "correct":
        margins, threshold = [], {}
        for f in (old, new):
            inc = by_key(f, "ppl_incorrect", _PROMPT_KEY)
            margins.append({k: np.log(inc[k]) - np.log(v)
                            for k, v in by_key(f, "ppl_correct", _PROMPT_KEY).items()})
        keys = list(rows[_PROMPT_KEY].astype(str).itertuples(index=False, name=None))
        tol_of = dict.fromkeys(keys, float(2 * prec.lp(1)))
        what = "ln PPL(B) - ln PPL(A)"
    else:
        return None
    at = np.array([any(abs(m[k]) <= tol_of[k] or (measure == "near_tie" and k in threshold and
                                                  abs(abs(m[k]) - threshold[k]) <= tol_of[k])
                       for m in margins) for k in keys], dtype=bool)
    name = "equal (a decision)" + (f"; {int(at.sum())} pair(s) whose {what} is within its "
                                   f"tolerance of the threshold may differ" if at.any() else "")
    return np.where(at, np.inf, 0.0), name


def _compare_measures(method: str, old: pd.DataFrame, new: pd.DataFrame, prec: _Precision,
                      ctx: dict) -> list[dict]:
    bad = _rows_differ("measures", old, new, _MEASURE_KEY)
    if bad:
        return [bad]
    rule = _measure_rules(method, new, prec, ctx)
    out = []
    for measure in dict.fromkeys(new["measure"]):
        rows = np.flatnonzero((new["measure"] == measure).to_numpy())
        o, n = old.iloc[rows], new.iloc[rows].reset_index(drop=True)
        if ctx.get("lang") is not None and measure in _POOLED:
            out.append({"measure": measure, "rows": len(rows), "max_abs_diff": np.nan,
                        "tolerance": np.nan, "tolerance_name": "pooled over every language's "
                        f"null: not compared (lang={ctx['lang']} recomputed alone)",
                        "where": "", "ok": True})
            continue
        tol = rule(measure)
        decision = (_decision_tolerance(method, measure, old, new, n, rule, prec)
                    if measure in _DECISIONS else None)
        if decision is not None:
            t, name = decision
        elif tol is None:
            t, name = 0.0, _EQUAL + (" (a count)" if measure.startswith("n_") else "")
        else:
            t, name = tol(n)
        out.append(_result(measure, _diff(o["value"], n["value"]), t, name, _where(n)))
    return out


def _detail_rules(kind: str | None, new: pd.DataFrame, prec: _Precision) -> dict:
    """``column -> (tolerance array, name)`` for a detail table's float columns, by the kind its
    method declares (``Method.audit_details``)."""
    one = (prec.lp(np.ones(len(new))), prec.name(1))
    if kind == "token_logprobs":
        return {"logprob": one}
    if kind == "prompt_groups":
        ka = new["n_tokens_correct"].to_numpy(np.float64)
        kb = new["n_tokens_incorrect"].to_numpy(np.float64)
        return {"s_correct": (prec.lp(ka), lambda j: prec.name(ka[j])),
                "s_incorrect": (prec.lp(kb), lambda j: prec.name(kb[j])),
                "delta_s": (prec.lp(ka) + prec.lp(kb), lambda j: prec.name(ka[j] + kb[j])),
                "ppl_correct": (prec.rel(ka) * new["ppl_correct"].abs().to_numpy(),
                                lambda j: prec.name(ka[j], ", through exp")),
                "ppl_incorrect": (prec.rel(kb) * new["ppl_incorrect"].abs().to_numpy(),
                                  lambda j: prec.name(kb[j], ", through exp")),
                "delta_ppl": (prec.rel(ka) * new["ppl_correct"].abs().to_numpy()
                              + prec.rel(kb) * new["ppl_incorrect"].abs().to_numpy(),
                              lambda j: prec.name(ka[j] + kb[j], ", through exp"))}
    return {}


def _compare_detail(detail: str, old: pd.DataFrame, new: pd.DataFrame, prec: _Precision,
                    kind: str | None = None) -> list[dict]:
    rules = _detail_rules(kind, new, prec)
    keys = [c for c in new.columns if c not in rules]
    bad = _rows_differ(detail, old, new, [c for c in keys if c in old])
    if bad:
        return [bad]
    out, where = [], _where(new)
    for c in new.columns:
        if c in rules:
            t, name = rules[c]
            out.append(_result(f"{detail}.{c}", _diff(old[c], new[c]), t, name, where))
        else:
            out.append(_equal_column(f"{detail}.{c}", old[c], new[c], where))
    return out


def _compare_states(old: np.ndarray, new: np.ndarray, prec: _Precision, texts) -> list[dict]:
    """Hidden states ``[sentences, layers + 1, hidden]``, a block of sentences at a time (the
    stored ones memory-mapped): ``|diff| <= STATE_ATOL + rtol |stored|``."""
    if old.shape != new.shape:
        return [{"measure": "states", "rows": len(new), "max_abs_diff": np.nan,
                 "tolerance": 0.0, "tolerance_name": f"shape differs: stored {old.shape}, "
                 f"recomputed {new.shape}", "where": "", "ok": False}]
    rtol = prec.state_rtol()
    name = (f"STATE_ATOL {STATE_ATOL:g} + {'STATE_RTOL' if prec.float32 else 'STATE_RTOL_BF16'}"
            f" {rtol:g} x |stored|")
    worst, ok = None, True  # (ratio, diff, tolerance, sentence, layer)
    for i in range(0, len(old), 64):
        a = np.asarray(old[i:i + 64], np.float64)
        d = _diff(a, new[i:i + 64])
        tol = STATE_ATOL + rtol * np.abs(a)
        ok &= bool((d <= tol).all())
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(d == 0, 0.0, d / tol)
        k = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        if worst is None or ratio[k] > worst[0]:
            worst = (ratio[k], d[k], tol[k], i + k[0], k[1] if a.ndim == 3 else 0)
    if worst is None:
        return [_result("states", [], [], name, str)]
    _, diff, tol, sentence, layer = worst
    text = texts[sentence] if sentence < len(texts) else f"row {sentence}"
    return [{"measure": "states", "rows": len(new), "max_abs_diff": float(diff),
             "tolerance": float(tol), "tolerance_name": name,
             "where": f"sentence {text!r} layer={layer}", "ok": ok}]


def _restrict(frame: pd.DataFrame, subset: pd.DataFrame | None) -> pd.DataFrame:
    """The rows of a stored table that belong to the pairs of ``subset`` (a pair-sample audit):
    by the pairs' identifiers where the table has them (measures, token-level perplexity's
    groups and tokens), else by their sentences (``text``: Direct's tokens, each sentence once,
    in order of text and position, as a sample orders them the same way)."""
    if subset is None:
        return frame
    ids = [c for c in planner.ID if c in frame and c in subset]
    if "pair_id" in ids:
        want = set(subset[ids].astype(str).itertuples(index=False, name=None))
        keep = [k in want for k in frame[ids].astype(str).itertuples(index=False, name=None)]
        return frame[keep].reset_index(drop=True)
    if "text" in frame:
        texts = {t for c in ("good", "bad") if c in subset for t in subset[c]}
        out = frame[frame["text"].isin(texts)]
        order = [c for c in ("text", "position") if c in out]
        return out.drop_duplicates(subset=order).sort_values(order, kind="stable"
                                                             ).reset_index(drop=True)
    return frame


def _compare_shard(store: Store, tmp: Store, rid: str, name: str, method: str,
                   prec: _Precision, ctx: dict, unshipped: bool) -> list[dict]:
    stored, again = _marker_files(store, rid, name), _marker_files(tmp, rid, name)
    sub = ctx.get("subset")
    out = []
    for rel in sorted(set(stored) | set(again)):
        folder = rel.split("/")[0]
        if rel not in again or rel not in stored:
            out.append({"measure": folder, "rows": 0, "max_abs_diff": np.nan, "tolerance": 0.0,
                        "tolerance_name": f"{rel} is {'not ' if rel not in again else ''}"
                        f"recomputed but {'not ' if rel not in stored else ''}stored",
                        "where": "", "ok": False})
            continue
        old_path, new_path = store.root / rel, tmp.root / rel
        if folder in store.omitted(rid) and not old_path.exists() and not rel.endswith(".npy"):
            out.append({"measure": folder, "rows": 0, "max_abs_diff": np.nan,
                        "tolerance": np.nan, "tolerance_name": "not shipped (shipped.json): "
                        "not compared", "where": "", "ok": True})
            continue
        if rel.endswith(".npy"):
            if unshipped and not old_path.exists():
                out.append({"measure": "states", "rows": 0, "max_abs_diff": np.nan,
                            "tolerance": np.nan, "tolerance_name": "not shipped: not compared "
                            "(the probes are recomputed from recomputed states)", "where": "",
                            "ok": True})
                continue
            rows = METHODS[method].array_rows if method in METHODS else None
            path = tmp.root / f"{rows}/run={rid}/{name}.parquet"
            texts = list(pd.read_parquet(path)["text"]) if rows and path.exists() else []
            out += _compare_states(np.load(old_path, mmap_mode="r"), np.load(new_path), prec,
                                   texts)
        elif folder == "measures":
            old = _restrict(pd.read_parquet(old_path), sub)
            if ctx.get("lang") is not None:  # one language of an unshipped Neuro run
                old = old[old["lang"].astype(str) == ctx["lang"]].reset_index(drop=True)
                out.append({"measure": "states", "rows": 0, "max_abs_diff": np.nan,
                            "tolerance": np.nan, "tolerance_name": "not shipped: not compared "
                            f"(the probes of lang={ctx['lang']} are recomputed from its "
                            "sentences' recomputed states)", "where": "", "ok": True})
            out += _compare_measures(method, old, _restrict(pd.read_parquet(new_path), sub),
                                     prec, ctx)
        else:
            kind = METHODS[method].audit_details.get(folder) if method in METHODS else None
            out += _compare_detail(folder, _restrict(pd.read_parquet(old_path), sub),
                                   _restrict(pd.read_parquet(new_path), sub), prec, kind)
    return out


# --- recomputing ---------------------------------------------------------------------------------

def _load_args(key: dict, device: str) -> tuple:
    """The arguments :func:`xcomps_utils.runs.execute.repair` loads a run's model with (so the
    model it loaded is the one :func:`xcomps_utils.runs.planner.load` has cached)."""
    rev = key.get("model_revision")
    return (key["model"], key["device"] if device == "auto" else device, key["dtype"],
            rev if rev and re.fullmatch(r"[0-9a-f]{40}", str(rev)) else None)


def _answer_tokens(key: dict, device: str, pairs: pd.DataFrame) -> tuple[dict, dict]:
    """Per pair, the tokens of each answer as the method's shard counts them for its near-tie
    tolerance (``Method.token_counts``: Meta's answers tokenized alone, plus one)."""
    lm = planner.load(*_load_args(key, device))
    good, bad = METHODS[key["method"]].token_counts(lm, pairs, planner.parameters_of(key))
    keys = _pair_key(pairs)
    return dict(zip(keys, good.tolist())), dict(zip(keys, bad.tolist()))


def _setup(store: Store, tmp_root: Path, rid: str, link: list[str]) -> Store:
    """A temporary store holding the run's record (status ``running``: only its done shards are
    checked), its pairs, and the stored shards of ``link`` (marker copied, files symlinked:
    read, never written)."""
    src, dst = store.root / "runs" / rid, tmp_root / "runs" / rid
    (dst / "done").mkdir(parents=True)
    record = json.loads((src / "run.json").read_text())
    record["status"] = "running"
    (dst / "run.json").write_text(json.dumps(record, indent=1, default=str, ensure_ascii=False))
    shutil.copyfile(src / "pairs.parquet", dst / "pairs.parquet")
    for name in link:
        for rel in _marker_files(store, rid, name):
            (tmp_root / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink((store.root / rel).resolve(), tmp_root / rel)
        shutil.copyfile(src / "done" / name, dst / "done" / name)
    return Store(tmp_root)


def _run_model(key: dict, device: str):
    """The run's model, as :func:`xcomps_utils.runs.execute.repair` loads it.

    Raises:
        StoreError: the model loaded now is not the run's (other weights or dtype)."""
    lm = planner.load(*_load_args(key, device))
    mine = json.loads(json.dumps(lm.identity(), default=str))
    if any(key.get(k) != v for k, v in mine.items()):
        raise StoreError(f"it was computed with { {k: key.get(k) for k in mine} }, the model "
                         f"loaded now is {mine}")
    return lm


def _recompute_language(tmp: Store, rid: str, lang: str, device: str) -> None:
    """A Neuro run whose states were not shipped, one language of it: the last-token states of
    that language's sentences recomputed with the run's model and parameters, and from them the
    probes of that language's groups, written into ``tmp`` as the run's finishing shard."""
    from ..methods.neuro import GivenStates, last_token_states, probes

    run = tmp.run(rid)
    key = run.record["key"]
    lm = _run_model(key, device)
    p, pairs = planner.parameters_of(key), run.pairs()
    sub = pairs[pairs["lang"].astype(str) == lang]
    texts = list(dict.fromkeys(list(sub["good"]) + list(sub["bad"])))
    states = last_token_states(lm, texts, token_budget=p["token_budget"],
                               batch_size=p["batch_size"])
    run.write_shard(_last(key["method"]), probes(None, rid, sub, p,
                                                 states=GivenStates(texts, states)))


def _recompute_pairs(tmp: Store, rid: str, name: str, rows: list[int], device: str) -> None:
    """Recompute ``rows`` (positions in shard ``name``) of a per-pair method into ``tmp`` as
    that shard: the run's model, dtype and parameters, as :func:`xcomps_utils.runs.execute.repair`
    loads them, on only those pairs."""
    run = tmp.run(rid)
    key = run.record["key"]
    lm = _run_model(key, device)
    size, i = run.record["shard_size"], int(name.removeprefix("shard-"))
    shard = run.pairs().iloc[i * size:(i + 1) * size].reset_index(drop=True)
    measures, details = execute.SHARD[key["method"]](
        lm, shard.iloc[rows].reset_index(drop=True), planner.parameters_of(key))
    run.write_shard(i, measures, details)


def _shard_rows(store: Store, rid: str, name: str) -> int:
    """Pairs in shard ``name`` of a run."""
    rec = store.run(rid).record
    i = int(name.removeprefix("shard-"))
    return max(0, min(rec["shard_size"], rec["n_pairs"] - i * rec["shard_size"]))


def _shard_pairs(store: Store, rid: str, name: str) -> pd.DataFrame:
    run = store.run(rid)
    size, i = run.record["shard_size"], int(name.removeprefix("shard-"))
    return run.pairs().iloc[i * size:(i + 1) * size].reset_index(drop=True)


def _job(store: Store, unit: dict, job: dict, device: str, unshipped: bool, log) -> list[dict]:
    rid, method = unit["run"], unit["method"]
    record = store.run(rid).record
    key = record["key"]
    subset = job.get("pairs")
    prec = _Precision(key.get("dtype", "float32"), key.get("model"),
                      (record.get("provenance") or {}).get("mkl_cbwr"),
                      device=str(key.get("device", "cpu")), sample=subset is not None)
    with tempfile.TemporaryDirectory(prefix="xcomps-audit-") as d:
        tmp = _setup(store, Path(d), rid, job["link"])
        problems = [{"run": rid, "shard": n, "file": f"runs/{rid}/done/{n}",
                     "problem": "audit: recomputed", "repair": "recompute"}
                    for n in job["recompute"]]
        start = time.perf_counter()
        try:
            if subset is not None:
                _recompute_pairs(tmp, rid, job["recompute"][0], subset, device)
            elif job.get("lang") is not None:
                _recompute_language(tmp, rid, job["lang"], device)
            else:
                execute.repair(tmp, problems, device=device)
        except (StoreError, ValueError, ImportError, OSError) as err:
            raise AuditError(f"run {rid}, shard {', '.join(job['recompute'])}: cannot "
                             f"recompute it here: {' '.join(str(err).split())}") from err
        seconds = time.perf_counter() - start
        rows = []
        for name in job["compare"]:
            ctx = {}
            pairs = None
            if subset is not None:
                pairs = _shard_pairs(store, rid, name).iloc[subset].reset_index(drop=True)
                ctx["subset"] = pairs
            if _tolerance_kind(method) == "proportions" and name != _last(method):
                groups = pd.read_parquet(tmp.root / f"ppl_groups/run={rid}/{name}.parquet")
                ctx["ppl_bounds"] = _ppl_bounds(groups, prec)
            if _tolerance_kind(method) == "answer_tokens":
                ctx["answer_tokens"] = _answer_tokens(
                    key, device, pairs if pairs is not None else _shard_pairs(store, rid, name))
            if _tolerance_kind(method) == "probe" and unshipped:
                ctx["recomputed_states"] = True
                ctx["null_draws"] = _null_draws_of(rid)
            if job.get("lang") is not None:
                ctx["lang"] = job["lang"]
            for r in _compare_shard(store, tmp, rid, name, method, prec, ctx, unshipped):
                rows.append({"run": rid, "method": method, "model": unit["model"],
                             "shard": name, **r})
    bad = sum(not r["ok"] for r in rows)
    what = (f"{job['compare'][0]} of lang={job['lang']} (the states of its sentences, the "
            f"probes of its groups)" if job.get("lang") is not None else
            ", ".join(job["recompute"]) + (f" ({len(subset)} of its pairs)"
                                           if subset is not None else ""))
    log(f"audit: {rid} {what}: recomputed in {seconds:.1f} s, "
        f"{len(rows)} comparison(s), " + (f"{bad} out of tolerance" if bad else "all within "
                                          "tolerance"))
    return rows


def audit(store: str | os.PathLike | Store, sample: int | None = None, seed: int = 0,
          device: str = "auto", runs: list[str] | None = None, log=None,
          pairs: int | None = None, every: bool = False,
          journal: str | os.PathLike | None = None) -> pd.DataFrame:
    """Verify a store, then recompute a seeded sample of its shards and compare (module doc).

    Nothing is written into ``store``: each shard is recomputed into a temporary store (the
    run's record and pairs copied, the stored state shards the probes read linked) through
    :func:`xcomps_utils.runs.execute.repair`, with the run's model, dtype, device kind and
    parameters.

    Args:
        store: the results store (a folder or a :class:`~xcomps_utils.runs.store.Store`).
        sample: units to recompute in all (:func:`plan_sample`; default one per run).
        seed: the seed of the draw (of the units, and of the pairs of each).
        pairs: recompute only this many pairs of each drawn shard (seeded; all when it has
            fewer) for a method whose numbers are per pair (no finishing step: Direct, Meta,
            token-level perplexity); ``None``: whole shards. Neuro's units are always whole.
        every: recompute every unit of the store, whole (``xcomps-study audit --all``);
            ``sample`` and ``pairs`` are then ignored.
        journal: a JSON-lines file of the units audited whole and found within tolerance (one
            line each: run, shard, the SHA-256 of its done markers, seconds), appended as each
            passes; a unit it already holds with the same markers is not recomputed again, so
            ``--all`` resumes after a kill and can be spread over sessions (``make audit-all``
            keeps it in ``benchmarks/audit-all.jsonl``, committed with its time a unit).
        device: where to load each run's model (``"auto"``: the run's device kind; the run's
            device kind is required, as for a repair).
        runs: audit only these runs (verified and drawn from; default: the whole store).
        log: ``log(line)`` for progress (default: silent).

    Returns:
        one row per compared measure or column (:data:`AUDIT_COLUMNS`): ``run``, ``method``,
        ``model``, ``shard``, ``measure`` (a measure name; ``<detail>.<column>`` for a detail
        table; ``states``), ``rows`` compared, ``max_abs_diff`` and ``tolerance`` at the row
        furthest past (or nearest to) its tolerance (for a constant tolerance, the largest
        difference; ``NaN`` for text columns), ``tolerance_name`` (the rule, e.g.
        ``FLOAT32_TOKEN_TOLERANCE x 12 tokens``), ``where`` (that row's pair or sentence),
        ``ok``. ``attrs``: ``units`` (the draw), ``not_shipped`` (Neuro runs without states),
        ``seconds``.

    Raises:
        AuditError: the store does not verify (names the first problem), holds no finished
            shard, or a run cannot be recomputed here (another device kind, other weights, its
            model not installed: names the run, the shard and the cause).
        ParameterError: ``sample`` below the number of runs, ``pairs`` below 1.
        KeyError: a run of ``runs`` is not in the store.
    """
    log = log or (lambda line: None)
    store = store if isinstance(store, Store) else Store(store)
    if not store.ids():
        raise AuditError(f"{store.root} holds no run (no runs/*/run.json): nothing to audit")
    for rid in runs or []:
        store.run(rid)  # KeyError naming the store's runs
    start = time.perf_counter()
    unshipped = _check(store, runs)
    log(f"audit: verify: {len(runs or store.ids())} run(s), every shard as recorded"
        + (f" (the states of {len(unshipped)} Neuro run(s) not shipped: "
           f"{', '.join(sorted(unshipped))})" if unshipped else ""))
    candidates = units(store, unshipped, runs, by_language=not every)
    if not candidates:
        raise AuditError(f"{store.root}: no finished shard to audit")
    check(SampleSize, pairs, "pairs")
    done = _journal_read(journal, store) if journal else set()
    if every:
        drawn, pairs = sorted(candidates, key=lambda u: (str(u["model"]), u["run"], u["label"])), None
        left = [u for u in drawn if _unit_digest(store, u) not in done]
        log(f"audit: all {len(drawn)} shard(s), whole" + (
            f"; {len(drawn) - len(left)} already in {journal}, {len(left)} to recompute"
            if journal else ""))
        drawn = left
    else:
        drawn = plan_sample(candidates, sample, seed)
        log(f"audit: {len(drawn)} of {len(candidates)} shard(s) drawn (seed {seed}"
            + (f", {pairs} pair(s) of each per-pair shard" if pairs else "") + "): "
            + ", ".join(f"{u['run']} {u['label']}" for u in drawn))
    if pairs:
        rng = np.random.default_rng([seed, 1])
        for u in drawn:
            if _last(u["method"]) is None and len(u["jobs"]) == 1:
                n = _shard_rows(store, u["run"], u["jobs"][0]["recompute"][0])
                if n > pairs:
                    u["jobs"] = [{**u["jobs"][0], "pairs": sorted(
                        rng.choice(n, size=int(pairs), replace=False).tolist())}]
    rows = []
    for u in drawn:
        t0, mine = time.perf_counter(), []
        for job in u["jobs"]:
            mine += _job(store, u, job, device, u["run"] in unshipped, log)
        rows += mine
        whole = all("pairs" not in job for job in u["jobs"])
        if journal and whole and all(r["ok"] for r in mine):
            _journal_add(journal, store, u, time.perf_counter() - t0)
    out = pd.DataFrame(rows, columns=AUDIT_COLUMNS)
    out.attrs.update(units=[(u["run"], u["label"]) for u in drawn],
                     not_shipped=sorted(unshipped), seconds=time.perf_counter() - start)
    return out


#: The audit's rules, as a journal line records them: a line written under other rules (or
#: another MKL mode) does not count as audited. Change it with the tolerances.
_RULES = "issue-41.2"


def _unit_digest(store: Store, unit: dict) -> tuple:
    """``(run, label, SHA-256 of the done markers the unit reads)``: a unit whose stored files
    changed is another unit."""
    import hashlib

    h = hashlib.sha256()
    names = sorted({n for job in unit["jobs"] for n in job["recompute"] + job["link"]})
    for n in names:
        marker = store.root / "runs" / unit["run"] / "done" / n
        h.update(n.encode() + b"\0" + (marker.read_bytes() if marker.exists() else b""))
    return unit["run"], unit["label"], h.hexdigest()


def _journal_read(journal, store: Store) -> set:
    path = Path(journal)
    if not path.exists():
        return set()
    out = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            if r.get("mkl_cbwr") == mkl_mode() and r.get("rules") == _RULES:
                out.add((r["run"], r["shard"], r["markers_sha256"]))
    return out


def _journal_add(journal, store: Store, unit: dict, seconds: float) -> None:
    rid, label, digest = _unit_digest(store, unit)
    line = json.dumps({"run": rid, "shard": label, "markers_sha256": digest,
                       "seconds": round(seconds, 1), "mkl_cbwr": mkl_mode(), "rules": _RULES,
                       "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    with open(journal, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def failures(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of an :func:`audit` table out of tolerance, the gravest first: a decision that
    differs (``correct``, ``tie``, ``near_tie``: what a page counts), then the measures furthest
    beyond their tolerance (difference over tolerance), then what cannot be compared (rows or
    texts that differ)."""
    bad = table[~table["ok"].astype(bool)].copy()
    if bad.empty:
        return bad
    diff, tol = bad["max_abs_diff"].astype(float), bad["tolerance"].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff.isna(), -1.0, np.where(tol > 0, diff / tol, np.inf))
    decision = bad["measure"].isin(_DECISIONS).to_numpy()
    order = np.lexsort((-ratio, ~decision))
    return bad.iloc[order]


def failure_line(row) -> str:
    """One failure in one line: ``run <id>, shard <name>: <measure> differs by X > tolerance T
    (<name>)`` (text and row mismatches: what differs), with where."""
    at = f" at {row['where']}" if row["where"] else ""
    if row["measure"] in _DECISIONS:
        return (f"run {row['run']}, shard {row['shard']}: a decision differs: {row['measure']} "
                f"is not the stored one ({row['tolerance_name']}){at}")
    if np.isnan(row["max_abs_diff"]):
        return f"run {row['run']}, shard {row['shard']}: {row['measure']}: {row['tolerance_name']}{at}"
    return (f"run {row['run']}, shard {row['shard']}: {row['measure']} differs by "
            f"{row['max_abs_diff']:.3g} > tolerance {row['tolerance']:.3g} "
            f"({row['tolerance_name']}){at}")
