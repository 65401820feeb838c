"""The methods: their declarations and run parameters (``config``), Meta prompts, token-level
perplexity, Neuro states and probing. Imports pairs and lm.
"""
