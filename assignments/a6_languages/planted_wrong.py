"""The planted wrong solution of assignment 6 (assignments/grade.py): edits of the reference
solution, each a mistake students make. `make grade` fails unless it scores below full marks."""

REPLACEMENTS = [
    # q1: the pairs decided by the summed log-probability, not the per-token mean
    ('    decision = B.pair_decisions(frame, "mean")', '    decision = B.pair_decisions(frame, "sum")'),
    # q2: the tiers permuted over all languages, the families ignored (the trap)
    ("null = np.array([slope(ranks, lab) for lab in relabelings(tiers, families)])",
     "null = np.array([slope(ranks, lab) for lab in relabelings(tiers, np.zeros(len(tiers)))])"),
    # q3: the p-value counts only relabelings strictly above the observed slope (ties dropped)
    ("p_free = float(np.mean(free >= observed - 1e-9))", "p_free = float(np.mean(free > observed))"),
    # q4: the rate per byte divided by the number of characters, not of UTF-8 bytes (the same in
    # English, not in Greek)
    ('    n_bytes = {side: frame[side].map(lambda t: len(t.encode("utf-8"))) for side in ("good", "bad")}',
     '    n_bytes = {side: frame[side].map(len) for side in ("good", "bad")}'),
]
