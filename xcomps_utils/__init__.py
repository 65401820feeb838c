"""xcomps_utils: scoring, probing and metrics for the xcomps-study book.

Modules: :mod:`~xcomps_utils.data` (minimal-pair datasets), :mod:`~xcomps_utils.models` (loading a
causal LM), :mod:`~xcomps_utils.scoring` (token and sequence log-probabilities),
:mod:`~xcomps_utils.stats` (accuracy and intervals), :mod:`~xcomps_utils.results` (parquet with
provenance), :mod:`~xcomps_utils.plots` (figures).
"""

__version__ = "0.3.0"
