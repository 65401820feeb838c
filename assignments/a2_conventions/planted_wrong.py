"""The planted wrong solution of assignment 2 (assignments/grade.py): edits of the reference
solution, each a mistake students make. `make grade` fails unless it scores below full marks."""

REPLACEMENTS = [
    # q1: lm-eval's convention without its leading space (it then equals the BOS convention)
    ('return [bos] + tok(" " + text, add_special_tokens=False).input_ids, 1',
     'return [bos] + tok(text, add_special_tokens=False).input_ids, 1'),
    # q2: flips looked for between two conventions only, lm-eval's left out
    ("flipped = sorted(decisions.index[decisions.nunique(axis=1) > 1])",
     'flipped = sorted(decisions.index[decisions["bos"] != decisions["drop_first"]])'),
    # q4: the file hashed as text, its final newline stripped
    ("digest = hashlib.sha256(path.read_bytes()).hexdigest()",
     'digest = hashlib.sha256(path.read_text(encoding="utf-8").strip().encode()).hexdigest()'),
    # q5: the package version taken for part of the key, and the run's seed for the sample's
    ('    "run_seed": False,\n    "sample_seed": True,\n    "package_version": False,',
     '    "run_seed": True,\n    "sample_seed": True,\n    "package_version": True,'),
]
