"""xcomps_utils: scoring, probing and metrics for the xcomps-study book.

The folders are the layers, each importing only those listed before it (``tests/test_layers.py``
reads them from this tree): :mod:`~xcomps_utils.pairs` (minimal-pair data, no torch),
:mod:`~xcomps_utils.lm` (models and log-probabilities, the only torch), :mod:`~xcomps_utils.methods`
(Direct, Meta, Neuro and probing, token-level perplexity), :mod:`~xcomps_utils.runs` (plan, execute,
store, command line), :mod:`~xcomps_utils.analysis` (claims and the papers' tables, no torch) and
:mod:`~xcomps_utils.pages` (what chapters share). :mod:`~xcomps_utils.paths` holds the data and
cache locations every layer reads.
"""

__version__ = "0.3.0"
