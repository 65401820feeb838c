"""xcomps_utils: scoring, probing and metrics for the xcomps-study book.

The folders are the layers, each importing only those listed before it (``tests/test_layers.py``
reads them from this tree): :mod:`~xcomps_utils.pairs` (minimal-pair data, no torch),
:mod:`~xcomps_utils.lm` (models and log-probabilities, the only torch), :mod:`~xcomps_utils.methods`
(Direct, Meta, Neuro and probing, token-level perplexity), :mod:`~xcomps_utils.runs` (plan, execute,
store, command line), :mod:`~xcomps_utils.analysis` (claims and the papers' tables, no torch) and
:mod:`~xcomps_utils.pages` (what chapters share). :mod:`~xcomps_utils.paths` holds the data and
cache locations every layer reads.

Importing the package pins MKL's conditional numerical reproducibility (``MKL_CBWR``, read by
MKL once, at its first call: so before torch computes anything) to :data:`MKL_CBWR`: with it a
float32 matrix product gives the same bits for a row whatever the number of rows, the thread
count and the x86 CPU (AVX2 or later), so batching cannot move a log-probability
(:mod:`xcomps_utils.lm.precision`, issue 41). ``MKL_CBWR`` set by the user is left as it is, and
``XCOMPS_MKL_CBWR=off`` leaves MKL its own choice (what ``benchmarks/kernel_spread.py`` compares
against); either way the mode in force is recorded with every run.
"""

import os as _os

__version__ = "0.3.0"

#: The MKL mode a run is computed in: the AVX2 code path, strict (independent of threads).
MKL_CBWR = "AVX2,STRICT"

if _os.environ.get("XCOMPS_MKL_CBWR", "").lower() != "off":
    _os.environ.setdefault("MKL_CBWR", MKL_CBWR)
