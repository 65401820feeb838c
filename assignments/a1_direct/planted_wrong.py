"""The planted wrong solution of assignment 1 (assignments/grade.py): edits of the reference
solution, each a mistake students make. `make grade` fails unless it scores below full marks."""

REPLACEMENTS = [
    # q1: the first token is not scored (no BOS): minicons' default, not the book's convention
    ('enc = encode(lm.tokenizer, [text], "bos")[0]', 'enc = encode(lm.tokenizer, [text], "drop_first")[0]'),
    # q2: ties counted as correct
    ("return float(np.mean([sentence_logprob(g) > sentence_logprob(b)",
     "return float(np.mean([sentence_logprob(g) >= sentence_logprob(b)"),
    # q3: the normal (Wald) interval instead of Wilson's
    ("    centre = (p + z * z / (2 * n)) / (1 + z * z / n)\n"
     "    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)",
     "    centre = p\n    half = z * np.sqrt(p * (1 - p) / n)"),
]
