"""Cost and scores of the Neuro probe's permutation null, before (main b882422: logistic
regression, 19 permutations of the per-layer probe, the nested score ranked against the null's
best layer) and after (closed-form ridge probe, 199 permutations of the whole nested procedure,
one joint max-T test over languages).

The old implementation is read from git (``git show b882422:xcomps_utils/methods/probing.py``) and run
in the same process, one BLAS thread, one worker. Real data: SmolLM2-135M (the embedded model)
on the XCOMPS sample, 24 items a language (the chapter's default size); synthetic: the states of
``tests/methods/test_probing.py``'s generator at the same size.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/probe_null_cost.py --old-langs en de zh
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd

from xcomps_utils.methods import probing


def old_probing():
    src = subprocess.run(["git", "show", "b882422:xcomps_utils/methods/probing.py"], capture_output=True,
                         text=True, check=True).stdout
    f = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
    f.write(src)
    f.close()
    spec = importlib.util.spec_from_file_location("probing_old", f.name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def real_states(langs, items):
    from xcomps_utils.lm import models
    from xcomps_utils.methods.neuro import last_token_states
    from xcomps_utils.pairs import xcomps

    pairs = xcomps.load_languages(langs, source="sample", items_per_language=items, seed=0)
    lm = models.load_model("smollm2-135m-instruct", device="cpu")
    out = {}
    for lang in langs:
        sub = pairs[pairs.lang == lang]
        texts = list(probing.probe_sentences(sub)["text"])
        out[lang] = (sub, last_token_states(lm, texts), {t: i for i, t in enumerate(texts)})
    return out


def synthetic(n_items=24, n_layers=31, dim=576, signal=0.0, seed=0):
    rng = np.random.default_rng(seed)
    rows = [{"property": f"p{i}", "acceptable_concept": f"pos{i % 12}",
             "unacceptable_concept": f"neg{n}", "good": f"pos{i % 12} p{i}",
             "bad": f"neg{n} p{i}", "subset": "abcd"[t]}
            for i in range(n_items) for t, n in enumerate(rng.choice(40, 4, replace=False))]
    pairs = pd.DataFrame(rows)
    sents = probing.probe_sentences(pairs)
    X = rng.normal(size=(len(sents), n_layers, dim))
    X[:, n_layers // 2] += signal * np.outer(sents.label * 2 - 1, rng.normal(size=dim))
    return pairs, X.astype(np.float32), {t: i for i, t in enumerate(sents.text)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--langs", nargs="+", default=["en", "de", "fr", "zh", "vi", "tr", "hu"])
    ap.add_argument("--old-langs", nargs="*", default=["en", "de", "zh"])
    ap.add_argument("--items", type=int, default=24)
    ap.add_argument("--permutations", type=int, default=probing.DEFAULT_N_PERMUTATIONS)
    a = ap.parse_args()
    old = old_probing()
    data = {"synthetic": synthetic()}
    data.update(real_states(a.langs, a.items))
    rows = []
    for name, (pairs, X, index) in data.items():
        t = time.perf_counter()
        _, new = probing.probe_pairs(X, index, pairs, n_permutations=a.permutations,
                                     null_seed=[0, len(rows)])
        row = {"language": name, "sentences": new["n_sentences"],
               "new s": time.perf_counter() - t,
               "new nested BA": new["nested_balanced_accuracy"],
               "new null mean": new["null_nested_mean"], "new p": new["p_permutation"]}
        if name == "synthetic" or name in a.old_langs:
            t = time.perf_counter()
            _, prev = old.probe_pairs(X, index, pairs, n_permutations=19, n_jobs=1)
            row.update({"old s": time.perf_counter() - t,
                        "old nested BA": prev["nested_balanced_accuracy"],
                        "old p": prev["p_permutation"]})
        rows.append(row)
        print(pd.DataFrame([row]).round(3).to_string(index=False), flush=True)
        if name != "synthetic":
            data[name] = (pairs, X, index, new)
    table = pd.DataFrame(rows).set_index("language")
    print(table.round(3).to_markdown())
    real = [n for n in data if n != "synthetic"]
    joint = probing.joint_permutation_test(
        [data[n][3]["nested_balanced_accuracy"] for n in real],
        np.column_stack([data[n][3]["null_nested"] for n in real]))
    print(pd.DataFrame({k: joint[k] for k in ("excess", "z", "p_language", "p_adjusted")},
                       index=real).round(3).to_markdown())
    print("pooled max-T p:", joint["p_pooled"])
    print("new, all real languages:", round(table.loc[real, "new s"].sum(), 1), "s; old, per",
          "language measured:", table["old s"].dropna().round(1).to_dict(), file=sys.stdout)


if __name__ == "__main__":
    main()
