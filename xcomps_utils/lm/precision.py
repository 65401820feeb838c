"""How far a log-probability difference can be trusted in a given precision, and *near ties*.

A Direct or Meta decision rests on one number per minimal pair, ``delta = log p(good) - log p(bad)``
(nats). Computed in a finite precision it carries an error; a pair whose ``|delta|`` is below
that error could have the other sign in exact arithmetic, so it is a *near tie*, not a confident
decision (:func:`near_ties`; reported apart from exact ties ``delta == 0`` and from decided pairs).

float32 (and float64)
    What the scorer guarantees: on a CPU its float32 log-probabilities are the bits of a plain
    one-text-at-a-time float32 computation, whatever the batching and the thread count, because
    importing the package pins MKL's reproducible mode (:data:`MKL_CBWR`, :func:`mkl_mode`; tested
    on real batch shapes, ``tests/lm/test_batch_invariance.py``). Without the pin MKL's AVX-512
    ``sgemm`` rounds a row differently for 16 or more rows than for fewer, and SmolLM2's massive
    activations amplify that to 6.7e-3 nats at the first token after BOS (issue 41; minicons
    alike): ``benchmarks/kernel_spread.py`` measures it, :data:`FLOAT32_KERNEL_SPREAD_BY_MODEL`.
    On a GPU, or a CPU without MKL, batching is held to :data:`FLOAT32_TOKEN_TOLERANCE` (1e-5
    nats) per token. The same tokens scored inside sequences of other lengths (a shared prefix
    run on its own) differ by up to :data:`FLOAT32_LENGTH_TOLERANCE` per token (attention sums a
    row in an order that depends on the length), and the gap to a float64 computation is a
    property of the model and the script, :data:`FLOAT32_GAP_BY_MODEL` (measured, per token;
    pinned, SmolLM2's is 2.4e-4 on the kernel-spread texts). A float32 pair's near-tie tolerance
    is that gap times the pair's tokens.

bfloat16 (and float16)
    The model body rounds every activation to 8 significant bits (the LM head and the
    normalisation run in float32, :func:`xcomps_utils.lm.scoring._head`). The tolerance
    :data:`BF16_PAIR_TOLERANCE` is measured, not derived: see its docstring. float16 keeps 11
    bits but was not measured; it is given bfloat16's tolerance (an upper bound).
"""

from __future__ import annotations

import functools
import os

import numpy as np

from .. import MKL_CBWR
from ..declare import DTYPE_ALIASES, ParameterError

__all__ = ["MKL_CBWR", "mkl_mode", "mkl_pinned", "mkl_declined", "cpu_vendor", "FLOAT32_TOKEN_TOLERANCE", "FLOAT32_LENGTH_TOLERANCE", "FLOAT32_GAP_BY_MODEL",
           "FLOAT32_GAP_DEFAULT", "FLOAT32_KERNEL_SPREAD_BY_MODEL", "FLOAT32_KERNEL_SPREAD_DEFAULT",
           "BF16_PAIR_TOLERANCE", "pair_tolerance", "near_ties",
           "dtype_name", "decisions", "DECISIONS"]

#: nats per scored token: batched float32 scoring vs a plain one-text-at-a-time float32 loop (the
#: scorer's guarantee, tested in tests/lm/test_scoring.py).
FLOAT32_TOKEN_TOLERANCE = 1e-5

#: nats per token: one model in float32, the same tokens with the same context, inside sequences
#: of different lengths (a prefix scored alone vs inside its sentence). Measured: 1.37e-5 worst
#: (SmolLM2-135M, English, 2-core x86 CI machine, main 983efd0; first token -7.14215043 vs
#: -7.14213877); 5e-5 leaves 3.6x headroom. Tests that compare across lengths use this constant.
FLOAT32_LENGTH_TOLERANCE = 5e-5

#: nats per token: the largest change of a token's float32 log-probability that the model's own
#: float32 arithmetic makes, measured per model: against a float64 one-text-at-a-time loop and
#: between batch shapes. SmolLM2-135M (massive residual activations, |h| about 25,000): 4.8e-4
#: against float64 on 400 XCOMPS sentences in zh, en, hu (worst 砧板是用来切东西的。), 5.4e-4
#: batched vs one at a time on the same sentences (benchmarks/README.md, "GPU readiness");
#: by script 3.0e-4 (ar), 2.0e-4 (zh), 1.2e-4 (hi), 3.0e-5 (ru), 1.3e-5 (en) against float64
#: (issue 19; minicons shows the same gaps, so they are the model's, not the scorer's).
FLOAT32_GAP_BY_MODEL = {"smollm2-135m-instruct": 5.4e-4}

#: for a model not measured (Gemma-3-270M included): SmolLM2's worst gap, an upper bound for
#: models without massive activations. Re-measure a new model before trusting float32 near ties.
FLOAT32_GAP_DEFAULT = 5.4e-4

#: nats per token: how far two float32 computations of one token's log-probability by *different
#: MKL kernels* can lie apart (a run computed before the mode was pinned, :data:`MKL_CBWR`,
#: against one recomputed pinned; or two machines without MKL). Measured with
#: ``benchmarks/kernel_spread.py`` (the same texts under MKL's default kernels, batched and one at
#: a time, ``AVX2,STRICT`` and ``AVX512,STRICT``; the largest spread of one token across them),
#: on this project's 2-core x86 CPU (AVX-512, AMX), 2026-12-04, over 100 pairs each of BLiMP
#: anaphor agreement, BMLAMA-17 Arabic, Russian and Japanese and the XCOMPS sample's Chinese
#: (``benchmarks/kernel_spread_*.json``): SmolLM2-135M 6.7e-3 over 14,612 tokens (unpinned
#: batched against float64 6.66e-3, pinned 2.4e-4), Gemma-3-270M 7.0e-5 over 6,527 (no massive
#: activations); rounded up to 1e-2 and 1e-4.
FLOAT32_KERNEL_SPREAD_BY_MODEL = {"smollm2-135m-instruct": 1e-2, "gemma-3-270m": 1e-4}

#: for a model not measured: the largest measured spread, rounded up.
FLOAT32_KERNEL_SPREAD_DEFAULT = 1e-2

#: nats per pair difference, for bfloat16 (and float16) runs: 1.0.
#:
#: Measured (``benchmarks/bf16_tolerance.py``, 2026-12-01, CPU, both embedded models loaded in
#: float32 and in bfloat16; BLiMP ``anaphor_gender_agreement`` and ``animate_subject_passive``,
#: 300 pairs each; XCOMPS sample, 210 pairs as Direct sentences and 70 as Meta prompts, seven
#: languages): ``|delta_bf16 - delta_fp32|`` over 1,550 pairs has a 99th percentile of 0.37 nats,
#: a 99.9th of 0.85 and a maximum of 1.00 (Gemma-3-270M alone, 880 pairs: 0.45 / 0.73 / 0.82);
#: the largest change of a BLiMP sentence's bfloat16 score between batch shapes (alone vs token-
#: budget batches) is 0.84 (SmolLM2; Gemma 0.33). 1.0 nat is above all of these but one pair
#: (1.003): about 1.2 x the 99.9th percentile. Decision flips between the dtypes: 9 of 1,760
#: pairs (SmolLM2 7 of 880, Gemma 2 of 880), 8 of them with ``|delta_bf16| < 0.25``.
#:
#: Not covered: SmolLM2-135M's XCOMPS *Direct* pairs (210 pairs: 99th percentile 10.7 nats,
#: maximum 16.1; 14 pairs above 1 nat; worst on Chinese sentences). SmolLM2 has massive
#: activations (``|h|`` about 25,000 in the residual stream from block 12 on), which bfloat16's
#: 8 significant bits round by about 100: an 8% error in the residual stream, 20% after the final
#: norm. Run such a model in float32 (the CPU default); re-measure a new model with the script
#: (``--models <name>``) before trusting its bfloat16 results.
BF16_PAIR_TOLERANCE = 1.0


#: ``mkl_serv_cbwr_get`` codes (Intel MKL's ``mkl_cbwr.h``) and their ``MKL_CBWR`` names.
_CBWR_BRANCHES = {1: "OFF", 2: "AUTO", 3: "COMPATIBLE", 4: "SSE2", 6: "SSSE3", 7: "SSE4_1",
                  8: "SSE4_2", 9: "AVX", 10: "AVX2", 12: "AVX512", 14: "AVX512_E1"}
_CBWR_STRICT = 0x10000


@functools.lru_cache(maxsize=1)
def _mkl_cbwr_get():
    """MKL's ``mkl_serv_cbwr_get`` from the torch library that carries MKL, or ``None`` (a torch
    built without MKL: ARM, macOS; or one that does not export it)."""
    import ctypes

    import torch

    lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    try:
        get = ctypes.CDLL(lib).mkl_serv_cbwr_get
    except (OSError, AttributeError):
        return None
    get.restype, get.argtypes = ctypes.c_int, [ctypes.c_int]
    return get


def mkl_mode() -> str:
    """The MKL conditional-numerical-reproducibility mode in force in this process, as
    ``MKL_CBWR`` spells it (``"AVX2,STRICT"``; ``"OFF"``: MKL picks its kernels by CPU and by the
    shape of each product), or ``"no MKL"`` (torch without MKL: its CPU products are not pinned).

    Why it matters (issue 41): with the mode off, MKL's AVX-512 ``sgemm`` rounds a row of a float32
    product differently for 16 or more rows than for fewer (2e-6 on a 576 x 1536 product), and
    SmolLM2-135M amplifies that rounding at the first token after BOS (its layers 9-11 write an
    activation of about 1,800 there, layers 28-29 cancel it) to 6.5e-3 nats: *Roger had known
    himself.* scores -11.25221 at that token batched with 7 other texts, -11.25871 alone,
    -11.25887 in float64. Pinned (:data:`MKL_CBWR`) every row's bits are the same whatever the
    batch and the thread count, on any x86 CPU with AVX2 (``benchmarks/kernel_spread.py``)."""
    get = _mkl_cbwr_get()
    if get is None:
        return "no MKL"
    code = int(get(-1))
    name = _CBWR_BRANCHES.get(code & ~_CBWR_STRICT & 0xFFFF, str(code & 0xFFFF))
    return name + (",STRICT" if code & _CBWR_STRICT else "")


def cpu_vendor() -> str:
    """The CPU's vendor string (``"GenuineIntel"``, ``"AuthenticAMD"``), ``""`` where
    ``/proc/cpuinfo`` does not say."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def mkl_declined() -> bool:
    """Was the pin asked for (``MKL_CBWR`` is :data:`MKL_CBWR`) and declined by MKL? MKL accepts
    a named code branch such as ``AVX2`` only on Intel CPUs; on others (AMD EPYC here) it keeps
    ``AUTO``, with ``STRICT``. Its non-Intel path does not pick kernels by CPU generation, and
    ``tests/lm/test_batch_invariance.py`` measures on each machine whether a batch moves a row's
    bits; the audit holds a run made so to the kernels' spread, as an unpinned one."""
    import os

    return (os.environ.get("MKL_CBWR") == MKL_CBWR and mkl_mode() == "AUTO,STRICT"
            and cpu_vendor() != "GenuineIntel")


def mkl_pinned() -> bool:
    """Is MKL in :data:`MKL_CBWR` mode (``False`` without MKL)?"""
    return mkl_mode() == MKL_CBWR


def dtype_name(dtype) -> str:
    """``"bfloat16"``, ``"float32"``, ... from a ``torch.dtype`` or a name (``"bf16"``,
    ``"torch.float16"``).

    Raises:
        ParameterError: not a floating-point dtype this module knows.
    """
    name = str(dtype).removeprefix("torch.")
    name = {**DTYPE_ALIASES, "half": "float16", "float": "float32", "fp64": "float64",
            "double": "float64"}.get(name, name)
    if name not in ("float32", "float64", "bfloat16", "float16"):
        raise ParameterError("dtype", "a dtype with a tolerance: 'float32', 'float64', "
                             "'bfloat16' or 'float16'", dtype)
    return name


def pair_tolerance(dtype, n_tokens, model: str | None = None) -> np.ndarray:
    """The error bound of a pair's ``delta`` (nats) in a run of ``dtype``.

    Args:
        dtype: the run's dtype (``torch.dtype`` or name).
        n_tokens: ``[n]`` scored tokens of good + bad per pair (used in float32).
        model: the model's name, for its measured float32 gap (:data:`FLOAT32_GAP_BY_MODEL`).

    Returns:
        ``[n]`` float64: the model's float32 gap per token x ``n_tokens`` in float32,
        ``FLOAT32_TOKEN_TOLERANCE x n_tokens`` in float64, :data:`BF16_PAIR_TOLERANCE` in
        bfloat16/float16.

    Raises:
        ParameterError: unknown dtype, negative token counts.
    """
    n = np.asarray(n_tokens, dtype=np.float64)
    if (n < 0).any():
        raise ParameterError("n_tokens", "token counts >= 0", n_tokens)
    name = dtype_name(dtype)
    if name == "float32":
        return FLOAT32_GAP_BY_MODEL.get(model, FLOAT32_GAP_DEFAULT) * n
    if name == "float64":
        return FLOAT32_TOKEN_TOLERANCE * n
    return np.full(n.shape, BF16_PAIR_TOLERANCE)


def near_ties(delta, dtype, n_tokens, model: str | None = None) -> np.ndarray:
    """Pairs decided by less than the precision's error: ``0 < |delta| < pair_tolerance``.

    Exact ties (``delta == 0``) are not near ties (they are counted as ties), so ties, near ties
    and decided pairs are disjoint.

    Args:
        delta: ``[n]`` log p(good) - log p(bad), nats.
        dtype, n_tokens: as :func:`pair_tolerance`.

    Returns:
        ``[n]`` bool.
    """
    d = np.abs(np.asarray(delta, dtype=np.float64))
    return (d > 0) & (d < pair_tolerance(dtype, n_tokens, model))


#: the one decision of a pair, written from the run's measures and read by every consumer
DECISIONS = ("right", "wrong", "tie", "near_tie")


def decide(delta, tolerance) -> np.ndarray:
    """The one decision rule, for any score difference: ``"tie"`` where ``delta == 0``,
    ``"near_tie"`` where ``0 < |delta| < tolerance``, else ``"right"`` (``delta > 0``) or
    ``"wrong"``; NaN where ``delta`` is not finite. :func:`decisions` (a run's sums), the
    per-token-mean and per-byte conventions of the grammar chapter and BMLAMA's reductions all
    decide through it, so no two tables decide one pair differently.

    Args:
        delta: ``[n]`` good minus bad (nats, nats per token or nats per byte).
        tolerance: ``[n]`` (or a scalar) error bound of ``delta`` in the same unit
            (:func:`pair_tolerance`, :func:`per_unit_tolerance`).

    Returns:
        ``[n]`` object array of :data:`DECISIONS` labels and NaN.
    """
    d = np.asarray(delta, dtype=np.float64)
    out = np.where(d > 0, "right", "wrong").astype(object)
    out[(np.abs(d) < tolerance) & (d != 0)] = "near_tie"
    out[d == 0] = "tie"
    out[~np.isfinite(d)] = np.nan
    return out


def per_unit_tolerance(tolerance, units_good, units_bad) -> np.ndarray:
    """The error bound of a difference of two length-normalised scores (per token, per byte)
    from the bound of the sums: ``|e_g / x - e_b / y| <= (|e_g| + |e_b|) / min(x, y)``, so the
    pair's tolerance (:func:`pair_tolerance`, nats) divided by the smaller length. It holds for
    every dtype (a float32 tolerance is per token, a bfloat16 one per pair).

    Args:
        tolerance: ``[n]`` nats per pair; units_good, units_bad: ``[n]`` lengths (> 0).

    Returns:
        ``[n]`` float64, in nats per unit.
    """
    return (np.asarray(tolerance, dtype=np.float64)
            / np.minimum(np.asarray(units_good, dtype=np.float64),
                         np.asarray(units_bad, dtype=np.float64)))


def decisions(table, method: str = "direct"):
    """One decision per pair: ``"right"``, ``"wrong"``, ``"tie"`` or ``"near_tie"``, from the
    ``<method>_correct``, ``<method>_tie`` and ``<method>_near_tie`` columns a run wrote.

    The book's primary convention leaves ties and near ties out of every accuracy (they are not
    decisions at the run's precision); counting near ties by their sign is the sensitivity
    check. Every table, claim and chapter reads this column (``<method>_decision``), so two
    chapters never disagree on a pair.

    Returns:
        a ``pandas.Series`` of the four labels (NaN where the pair has no ``correct``).
    """
    import pandas as pd

    c = table[f"{method}_correct"]
    tie = table.get(f"{method}_tie", pd.Series(0.0, index=table.index)).fillna(0).astype(bool)
    near = table.get(f"{method}_near_tie",
                     pd.Series(0.0, index=table.index)).fillna(0).astype(bool)
    out = pd.Series(np.where(c == 1, "right", "wrong"), index=table.index, dtype=object)
    out[near & ~tie] = "near_tie"
    out[tie] = "tie"
    out[c.isna()] = np.nan
    return out
