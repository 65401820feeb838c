"""The planted wrong solution of assignment 4 (assignments/grade.py): edits of the reference
solution, each a mistake students make. `make grade` fails unless it scores below full marks."""

REPLACEMENTS = [
    # q1: A and B built from the bad_first template with the good_first slot filling
    ('A = wording["good_first"].format(s1=good, s2=bad)', 'A = wording["bad_first"].format(s1=good, s2=bad)'),
    # q2: signed differences, which cancel, instead of absolute ones
    ("plain = np.abs(dppl[pivotal]).sum() / np.abs(dppl).sum()",
     "plain = abs(dppl[pivotal].sum()) / abs(dppl.sum())"),
    # q3: the mean instead of the median as the typical group
    ("normalized = d[pivotal].sum() - pivotal.sum() * np.median(d)",
     "normalized = d[pivotal].sum() - pivotal.sum() * np.mean(d)"),
]
