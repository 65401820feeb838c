"""How far float32 log-probabilities move with MKL's kernel choice, against float64 (issue 41).

Each mode scores the same texts in a fresh process (MKL reads ``MKL_CBWR`` once, at its first
call): ``default`` (MKL picks kernels by CPU and by the number of rows: batched as the scorer
batches, and one text at a time), ``AVX2,STRICT`` (the study's pinned mode,
:data:`xcomps_utils.lm.precision.MKL_CBWR`), ``AVX512,STRICT`` where the CPU has it; and the
model in float64, one text at a time, as the reference. Prints, per mode, the largest and the
99.9th-percentile per-token distance to float64 and whether batching changed any bit, and writes
the table as JSON.

    python benchmarks/kernel_spread.py --model smollm2-135m-instruct --out spread.json
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

TASKS = ["blimp_anaphor", "bmlama17:ar", "bmlama17:ru", "bmlama17:ja"]


def texts(n: int) -> list[str]:
    """``n`` pairs of each of :data:`TASKS` and of the XCOMPS sample's Chinese, both sentences."""
    from xcomps_utils.pairs import tasks, xcomps
    frames = [tasks.sample([t], n, seed=0) for t in TASKS]
    frames.append(xcomps.load_languages(["zh"]).head(n))
    return list(dict.fromkeys(t for p in frames for t in list(p["good"]) + list(p["bad"])))


def score(model: str, n: int, batch_size, dtype: str) -> list[list[float]]:
    """Per-token log-probabilities (nats) of :func:`texts`: the scorer in float32, or a plain
    float64 loop (the model cast to float64, one text at a time, float64 log-softmax)."""
    import torch

    from xcomps_utils.lm.encoding import encode
    from xcomps_utils.lm.models import load_model
    from xcomps_utils.lm.scoring import token_scores
    lm = load_model(model)
    if dtype == "float32":
        return [s.logprobs.tolist() for s in token_scores(lm, texts(n), batch_size=batch_size,
                                                              shared_prefix=False)]
    lm.model.to(torch.float64)
    out = []
    with torch.inference_mode():
        for e in encode(lm.tokenizer, texts(n), "bos"):
            ids = torch.tensor([e.ids])
            lp = torch.log_softmax(lm.model(input_ids=ids).logits[0].double(), -1)
            out.append([float(lp[t - 1, e.ids[t]]) for t in range(e.n_context, len(e.ids))])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--n", type=int, default=100, help="pairs per task")
    ap.add_argument("--out")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        bs, dtype = a.child
        print(json.dumps(score(a.model, a.n, None if bs == "none" else int(bs), dtype)))
        return
    modes = [("default", "", "none"), ("default, one text at a time", "", "1"),
             ("AVX2,STRICT", "AVX2,STRICT", "none"), ("AVX2,STRICT, one at a time", "AVX2,STRICT", "1"),
             ("AVX512,STRICT", "AVX512,STRICT", "none")]
    env = dict(os.environ)

    def child(cbwr, bs, dtype):
        e = dict(env, MKL_CBWR=cbwr) if cbwr else {k: v for k, v in env.items() if k != "MKL_CBWR"}
        if not cbwr:
            e["XCOMPS_MKL_CBWR"] = "off"
        r = subprocess.run([sys.executable, __file__, "--model", a.model, "--n", str(a.n),
                            "--child", bs, dtype], env=e, capture_output=True, text=True, check=True)
        return [np.array(x) for x in json.loads(r.stdout.strip().splitlines()[-1])]

    ref = child("AVX2,STRICT", "1", "float64")
    got = {name: child(cbwr, bs, "float32") for name, cbwr, bs in modes}
    rows = []
    for name, lps in got.items():
        d = np.concatenate([np.abs(x - r) for x, r in zip(lps, ref)])
        rows.append({"mode": name, "tokens": int(d.size), "max_vs_float64": float(d.max()),
                     "p999_vs_float64": float(np.quantile(d, 0.999))})
    for base in ("default", "AVX2,STRICT"):
        a1 = got[base]
        b1 = got[base + (", one text at a time" if base == "default" else ", one at a time")]
        d = np.concatenate([np.abs(x - y) for x, y in zip(a1, b1)])
        rows.append({"mode": f"{base}: batched vs one at a time", "tokens": int(d.size),
                     "max_vs_float64": float(d.max()), "p999_vs_float64": float(np.quantile(d, 0.999))})
    allm = np.stack([np.concatenate(v) for v in got.values()])
    spread = float((allm.max(0) - allm.min(0)).max())
    out = {"model": a.model, "texts": len(ref), "rows": rows, "kernel_spread_max": spread}
    for r in rows:
        print(f"{r['mode']:42s} {r['tokens']:6d} tokens  max {r['max_vs_float64']:.3g}  "
              f"p99.9 {r['p999_vs_float64']:.3g}")
    print(f"largest spread of one token across the float32 modes: {spread:.3g} nats")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
