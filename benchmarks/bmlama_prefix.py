"""How much Direct's prefix reuse saves on BMLAMA pairs, and whether a smaller ``min_prefix`` helps.

A BMLAMA fact's sentences (the gold and each distractor filled in) share the prompt up to
``<mask>``; :func:`xcomps_utils.lm.scoring.prefix_groups` runs a shared prefix once when it is at
least ``min_prefix`` tokens (default 8). For each language and ``min_prefix``, this prints the
tokens the forward passes run with sharing against without (a ratio: tokens, not seconds), the
tokens before the mask (the most a fact's sentences could share), and the largest per-token
difference of the shared scores from the unshared ones (nats), checked against the bound
``tests/lm/test_scoring.py`` holds prefix reuse to (per token 2e-5 + 2e-6 x |log-probability|, the
batched 1e-5 doubled for the two extra GEMM shapes; per text 1e-4). Seconds are printed for
information only (a shared 2-core machine varies between runs).

    OMP_NUM_THREADS=1 XCOMPS_DATA_DIR=... .venv/bin/python benchmarks/bmlama_prefix.py \\
        --langs en ja --n-pairs 90 --min-prefix 1 2 4 8
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from xcomps_utils.lm import scoring
from xcomps_utils.lm.encoding import encode
from xcomps_utils.lm.models import load_model
from xcomps_utils.pairs import tasks


def tokens_run(seqs, groups) -> int:
    """Tokens the forward passes run: a group's prefix once, then every member's rest."""
    return sum(p + sum(len(seqs[i]) - p for i in m) if p else len(seqs[m[0]]) for p, m in groups)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--langs", nargs="+", default=["en", "ja"])
    ap.add_argument("--benchmark", default="bmlama17")
    ap.add_argument("--n-pairs", type=int, default=90)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-prefix", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--model", default="smollm2-135m-instruct")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    lm = load_model(args.model, device="cpu", dtype="float32")
    default = scoring.prefix_groups
    print(f"{args.model} float32 CPU, {args.benchmark}, {args.n_pairs} pairs (seed {args.seed}), "
          f"Direct's texts (bos)")
    print("| lang | texts | facts | tokens unshared | tokens before the mask, per fact | "
          "min_prefix | groups shared | tokens run shared | shared / unshared | "
          "max abs diff per token (nats) | s shared / s unshared |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for lang in args.langs:
        pairs = tasks.sample([f"{args.benchmark}:{lang}"], args.n_pairs, args.seed)
        texts = list(dict.fromkeys(list(pairs["good"]) + list(pairs["bad"])))
        seqs = [e.ids for e in encode(lm.tokenizer, texts, "bos")]
        facts = pairs.drop_duplicates("item")
        before = np.mean([len(lm.tokenizer(p.split("<mask>")[0], add_special_tokens=False)
                              ["input_ids"]) + 1 for p in facts["prompt"]])
        scoring.prefix_groups = default
        t = time.perf_counter()
        ref = scoring.token_scores(lm, texts, shared_prefix=False)
        t_ref = time.perf_counter() - t
        for m in args.min_prefix:
            scoring.prefix_groups = lambda s, min_prefix=m: default(s, min_prefix)  # noqa: E731
            groups = default(seqs, m)
            t = time.perf_counter()
            got = scoring.token_scores(lm, texts)
            secs = time.perf_counter() - t
            diff = max(float(np.max(np.abs(a.logprobs - b.logprobs))) for a, b in zip(got, ref))
            ok = all(np.allclose(a.logprobs, b.logprobs, rtol=2e-6, atol=2e-5)
                     and abs(a.total - b.total) < 1e-4 for a, b in zip(got, ref))
            run, full = tokens_run(seqs, groups), sum(map(len, seqs))
            print(f"| {lang} | {len(texts)} | {len(facts)} | {full} | {before:.1f} | {m} | "
                  f"{sum(p > 0 for p, _ in groups)} | {run} | {run / full:.3f} | "
                  f"{diff:.1e}{' (within)' if ok else ' (OVER the bound)'} | {secs / t_ref:.2f} |")
    scoring.prefix_groups = default


if __name__ == "__main__":
    main()
