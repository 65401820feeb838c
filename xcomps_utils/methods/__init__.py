"""The methods, one object per method (``base.Method``, registered in ``registry.METHODS``):
Direct, Meta prompts, token-level perplexity, Neuro states and probing; the run parameters and
sweep declarations (``config``). Imports pairs and lm.
"""
