"""The planted wrong solution of assignment 5 (assignments/grade.py): edits of the reference
solution, each a mistake students make. `make grade` fails unless it scores below full marks."""

REPLACEMENTS = [
    # q1: the continuation without its final period (only the property's words)
    ("    keep = scores.offsets[:, 0] >= start\n",
     "    keep = (scores.offsets[:, 0] >= start) & (scores.offsets[:, 1] < len(scores.text))\n"),
    # q2: the prior's share over every pair, not over the pairs Direct gets right
    ("prior_share = float((table.cond_delta[table.delta > 0] <= 0).mean())",
     "prior_share = float((table.cond_delta <= 0).mean())"),
    # q3: the priors shuffled over all pairs, the negative-sample types mixed
    ("        for t in pd.unique(types):\n            idx = np.flatnonzero(types == t)\n"
     "            drawn[idx] = prior[rng.permutation(idx)]\n",
     "        drawn = prior[rng.permutation(len(prior))]\n"),
]
