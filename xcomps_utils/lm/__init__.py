"""The thin model part: loading a causal LM, encoding, token and sequence log-probabilities,
precision, word alignment. The only folder whose modules import torch (``models``, ``scoring``,
``encoding`` at call time); ``token_scores``, ``words`` and ``precision`` are plain data and
import none.
"""
