"""Frames in, claims out: the claims machinery, statistics, the token-level decomposition and
one module per paper or question. Imports no torch and no run machinery.
"""
