"""Running methods into a results store: plan, execute (each method's shard computation), Ray,
sweeps, the store, results, the command line. Imports pairs, lm and methods; no analysis.
"""
