"""The planted wrong solution of assignment 3 (assignments/grade.py): edits of the reference
solution, each a mistake students make. `make grade` fails unless it scores below full marks."""

REPLACEMENTS = [
    # q1: plain K-fold over sentences: the same concepts and items on both sides (the leak)
    ("    groups = probing.leak_free_groups(items, concepts)\n"
     "    return list(GroupKFold(n_splits=n_splits).split(np.zeros(len(items)), groups=groups))",
     "    from sklearn.model_selection import KFold\n"
     "    return list(KFold(n_splits=n_splits, shuffle=True, random_state=0).split(np.zeros(len(items))))"),
    # q2: the majority-class accuracy (a share, not a balanced accuracy) as the baseline
    ("baseline = balanced_accuracy_score(y, np.ones_like(y))", "baseline = y.mean()"),
    # q3: labels shuffled per sentence, not one label per concept
    ("    uniq = pd.unique(concepts)\n",
     "    return np.random.default_rng(seed).integers(0, 2, len(concepts))\n"),
]
