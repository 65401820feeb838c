"""CPU scoring throughput, side by side in one process: plain loop, minicons, lm-eval, xcomps_utils.

Same model (the embedded smollm2-135m-instruct, float32), same BLiMP anaphor_gender_agreement
pairs. Reports pairs per second, the ratio of xcomps_utils to each, the largest absolute
difference of sentence log-probabilities from a plain one-sentence-at-a-time loop under the same
first-token convention, the achieved model GFLOP/s (2 x parameters x tokens / time) and the
measured float32 matrix-product rate of this machine.

    .venv/bin/pip install -r benchmarks/requirements.txt
    XCOMPS_DATA_DIR=../shared/data .venv/bin/python benchmarks/cpu_scoring.py [--pairs 1000]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from xcomps_utils import data, models, scoring


def matmul_gflops(n: int = 2048, reps: int = 10) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - start) / 1e9


@torch.inference_mode()
def plain_loop(lm, texts, policy):
    """One sentence at a time, no padding, full log-softmax of the float32 logits taken in float64
    (a float32 log-softmax over a 49k vocabulary is itself only good to ~1e-5 nats per token)."""
    tok, out = lm.tokenizer, []
    first = tok.bos_token_id
    for t in texts:
        ids = [first] + tok(" " + t if policy == "lm_eval" else t, add_special_tokens=False)["input_ids"]
        logp = lm.model(torch.tensor([ids])).logits[0].double().log_softmax(-1)
        out.append(float(logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].sum()))
    return np.array(out)


def run_minicons(path, texts, batch_size):
    from minicons import scorer

    s = scorer.IncrementalLMScorer(str(path), device="cpu")
    out = []
    for i in range(0, len(texts), batch_size):
        out += s.sequence_score(texts[i:i + batch_size], reduction=lambda x: x.sum(0).item(),
                                bos_token=True)
    return np.array(out)


def run_lm_eval(path, pairs, batch_size):
    """lm-evaluation-harness on a local task: the pairs as two choices (BLiMP's own setup)."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    tmp = Path(tempfile.mkdtemp())
    with open(tmp / "pairs.jsonl", "w") as f:
        for g, b in zip(pairs.good, pairs.bad):
            f.write(json.dumps({"sentence_good": g, "sentence_bad": b}) + "\n")
    (tmp / "xcomps_bench.yaml").write_text(
        "task: xcomps_bench\ndataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {tmp / 'pairs.jsonl'}\n"
        "test_split: test\noutput_type: multiple_choice\ndoc_to_text: \"\"\n"
        "doc_to_target: 0\ndoc_to_choice: \"{{[sentence_good, sentence_bad]}}\"\n"
        "metric_list:\n  - metric: acc\n")
    start = time.perf_counter()
    res = lm_eval.simple_evaluate(model="hf", model_args=f"pretrained={path},dtype=float32",
                                  tasks=["xcomps_bench"], batch_size=batch_size, device="cpu",
                                  task_manager=TaskManager(include_path=str(tmp)),
                                  log_samples=True)
    secs = time.perf_counter() - start
    samples = sorted(res["samples"]["xcomps_bench"], key=lambda s: s["doc_id"])
    good = np.array([s["resps"][0][0][0] for s in samples])
    bad = np.array([s["resps"][1][0][0] for s in samples])
    return secs, good, bad


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--skip", nargs="*", default=[], help="peers to skip: plain minicons lm_eval")
    args = ap.parse_args()
    pairs = data.sample_pairs(data.load_task("blimp_anaphor"), args.pairs, seed=0)
    texts = list(pairs.good) + list(pairs.bad)
    lm = models.load_model("smollm2-135m-instruct", device="cpu", dtype="float32")
    path = lm.source["converted_to"]
    n_params = sum(p.numel() for p in lm.model.parameters())
    tokens = sum(len(lm.tokenizer(t, add_special_tokens=False)["input_ids"]) + 1 for t in texts)
    gemm = matmul_gflops()
    print(f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}; {len(pairs)} pairs, {tokens} tokens (with BOS); "
          f"float32 matmul {gemm:.0f} GFLOP/s")
    scoring.sequence_scores(lm, texts[:64], batch_size=args.batch_size)  # warm-up (kernels, checks)
    rows = {}

    def record(name, secs, ref=None, got=None):
        rows[name] = {"secs": secs, "pairs/s": len(pairs) / secs,
                      "GFLOP/s": 2 * n_params * tokens / secs / 1e9,
                      "max |dlogp|": float(np.abs(got - ref).max()) if got is not None else float("nan")}

    ref = {}
    if "plain" not in args.skip:
        start = time.perf_counter()
        ref["bos"] = plain_loop(lm, texts, "bos")
        record("plain loop (bos)", time.perf_counter() - start, ref["bos"], ref["bos"])
        ref["lm_eval"] = plain_loop(lm, texts, "lm_eval")  # reference only, not timed
    start = time.perf_counter()
    ours = scoring.sequence_scores(lm, texts, bos_policy="bos", batch_size=args.batch_size)
    record("xcomps_utils (bos)", time.perf_counter() - start, ref.get("bos"),
           ours.logprob_sum.to_numpy() if "bos" in ref else None)
    if "minicons" not in args.skip:
        start = time.perf_counter()
        got = run_minicons(path, texts, args.batch_size)
        record(f"minicons batch {args.batch_size} (bos_token=True)", time.perf_counter() - start,
               ref.get("bos"), got if "bos" in ref else None)
    if "lm_eval" not in args.skip:
        secs, good, bad = run_lm_eval(path, pairs, args.batch_size)
        got = np.r_[good, bad]
        record(f"lm-eval batch {args.batch_size} (BOS + ' ' + text)", secs, ref.get("lm_eval"),
               got if "lm_eval" in ref else None)
        start = time.perf_counter()
        ours_le = scoring.sequence_scores(lm, texts, bos_policy="lm_eval", batch_size=args.batch_size)
        record("xcomps_utils (lm_eval policy)", time.perf_counter() - start, ref.get("lm_eval"),
               ours_le.logprob_sum.to_numpy() if "lm_eval" in ref else None)
    mine = rows["xcomps_utils (bos)"]["pairs/s"]
    print(f"\n| scorer | pairs/s | xcomps_utils / it | GFLOP/s | % of matmul | max abs diff vs plain loop (nats) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, r in rows.items():
        print(f"| {name} | {r['pairs/s']:.1f} | {mine / r['pairs/s']:.2f} | {r['GFLOP/s']:.0f} | "
              f"{100 * r['GFLOP/s'] / gemm:.0f}% | {r['max |dlogp|']:.2e} |")


if __name__ == "__main__":
    main()
