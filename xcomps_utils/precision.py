"""How far a log-probability difference can be trusted in a given precision, and *near ties*.

A Direct or Meta decision rests on one number per minimal pair, ``delta = log p(good) - log p(bad)``
(nats). Computed in a finite precision it carries an error; a pair whose ``|delta|`` is below
that error could have the other sign in exact arithmetic, so it is a *near tie*, not a confident
decision (:func:`near_ties`; reported apart from exact ties ``delta == 0`` and from decided pairs).

float32 (and float64)
    The scorer's tested guarantee is 1e-5 nats per token against a float64 one-text-at-a-time
    reference (:mod:`xcomps_utils.scoring`), so a pair's delta is within
    ``FLOAT32_TOKEN_TOLERANCE x (tokens of good + tokens of bad)`` of exact: that is the float32
    tolerance, 1e-4 to 1e-3 nats for sentence pairs.

bfloat16 (and float16)
    The model body rounds every activation to 8 significant bits (the LM head and the
    normalisation run in float32, :func:`xcomps_utils.scoring._head`). The tolerance
    :data:`BF16_PAIR_TOLERANCE` is measured, not derived: see its docstring. float16 keeps 11
    bits but was not measured; it is given bfloat16's tolerance (an upper bound).
"""

from __future__ import annotations

import numpy as np

__all__ = ["FLOAT32_TOKEN_TOLERANCE", "BF16_PAIR_TOLERANCE", "pair_tolerance", "near_ties",
           "dtype_name"]

#: nats per scored token: float32 scoring vs a float64 reference (tested in tests/test_scoring.py).
FLOAT32_TOKEN_TOLERANCE = 1e-5

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


def dtype_name(dtype) -> str:
    """``"bfloat16"``, ``"float32"``, ... from a ``torch.dtype`` or a name (``"bf16"``,
    ``"torch.float16"``).

    Raises:
        ValueError: not a floating-point dtype this module knows.
    """
    name = str(dtype).removeprefix("torch.")
    name = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32",
            "float": "float32", "fp64": "float64", "double": "float64"}.get(name, name)
    if name not in ("float32", "float64", "bfloat16", "float16"):
        raise ValueError(f"no tolerance for dtype {dtype!r}; use float32, float64, bfloat16 or "
                         f"float16")
    return name


def pair_tolerance(dtype, n_tokens) -> np.ndarray:
    """The error bound of a pair's ``delta`` (nats) in a run of ``dtype``.

    Args:
        dtype: the run's dtype (``torch.dtype`` or name).
        n_tokens: ``[n]`` scored tokens of good + bad per pair (used in float32/float64).

    Returns:
        ``[n]`` float64: ``FLOAT32_TOKEN_TOLERANCE x n_tokens`` in float32/float64,
        :data:`BF16_PAIR_TOLERANCE` in bfloat16/float16.

    Raises:
        ValueError: unknown dtype, negative token counts.
    """
    n = np.asarray(n_tokens, dtype=np.float64)
    if (n < 0).any():
        raise ValueError("n_tokens must be >= 0")
    if dtype_name(dtype) in ("float32", "float64"):
        return FLOAT32_TOKEN_TOLERANCE * n
    return np.full(n.shape, BF16_PAIR_TOLERANCE)


def near_ties(delta, dtype, n_tokens) -> np.ndarray:
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
    return (d > 0) & (d < pair_tolerance(dtype, n_tokens))
