"""The planted wrong solution of assignment 3 (assignments/grade.py): edits of the reference
solution, each a mistake students make. `make grade` fails unless it scores below full marks."""

REPLACEMENTS = [
    # q1: items kept whole but nothing purged: a test concept is also trained on (the leak)
    ("        folds.append((train[~np.isin(concepts[train], concepts[test])], test))",
     "        folds.append((train, test))"),
    # q2: the majority-class accuracy (a share, not a balanced accuracy) as the baseline
    ("baseline = balanced_accuracy_score(y, np.ones_like(y))", "baseline = y.mean()"),
    # q3: labels shuffled over all sentences, not within items (items lose their one acceptable)
    ("    out = labels.copy()\n    for item in pd.unique(items):\n",
     "    return rng.permutation(labels)\n    out = labels.copy()\n    for item in pd.unique(items):\n"),
    # q4: stratified K-fold over sentences, no groups: concepts on both sides
    ("    cv = StratifiedGroupKFold(n_splits, shuffle=True, random_state=0)\n"
     "    return list(cv.split(np.zeros(len(labels)), labels, groups=concepts))",
     "    from sklearn.model_selection import StratifiedKFold\n"
     "    cv = StratifiedKFold(n_splits, shuffle=True, random_state=0)\n"
     "    return list(cv.split(np.zeros(len(labels)), labels))"),
]
