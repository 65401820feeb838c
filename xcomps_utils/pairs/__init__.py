"""Minimal pairs: dataset manifests and loaders (XCOMPS, BLiMP and the grammar benchmarks, BMLAMA,
nonsense), the task registry, typology tables. Imports no torch and nothing above it.
"""
