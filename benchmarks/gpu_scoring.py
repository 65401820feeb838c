"""GPU scoring throughput and model FLOPs utilisation (MFU) with Llama-3.1-8B's shapes.

Random weights in bfloat16 (throughput does not depend on the values) and random token ids with
lengths like BLiMP sentences (8-24 tokens) and like the perplexity prompts (40-96 tokens), scored
three ways in one process:

* one sequence at a time (a plain loop);
* batches of 32 with a full float32 log-softmax over [batch, length, vocabulary] (the harness way);
* xcomps_utils' scoring path (batches of one length filling a token budget, the LM head and a
  chunked log-softmax only at scored positions, float32 normalisation of bf16 logits).

A third workload, counted separately, is Meta-like: prompts (one of 4 shared 24-token
instructions + a 16-64-token question) each scored with two 2-4-token answers; xcomps_utils runs
it with and without shared-prefix reuse. Its MFU counts the full texts' tokens (the work a scorer
without reuse does), so reuse can show more than the hardware's peak.

MFU = 2 x parameters x tokens / time / 989e12 (H100/H200 dense bf16 peak). Also reports the bf16 vs
float32 difference of sequence log-probabilities on the same random model and how often it flips
the decision between two sequences. Needs only torch and transformers (no internet, nothing
carried); on a machine without a GPU, ``--tiny`` runs a 2-layer model on the CPU as a smoke test.

    python benchmarks/gpu_scoring.py            # on the GPU machine
    python benchmarks/gpu_scoring.py --tiny     # anywhere, seconds
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from xcomps_utils import encoding, scoring
from xcomps_utils.models import LanguageModel

PEAK = 989e12


class _Ids:
    """Minimal tokenizer stand-in for pre-tokenized random ids."""

    bos_token_id, eos_token_id, pad_token_id = 1, 2, 2

    def convert_ids_to_tokens(self, ids):
        return [str(i) for i in ids]


def build(tiny: bool, dtype, device):
    from transformers import LlamaConfig, LlamaForCausalLM

    if tiny:
        cfg = LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, vocab_size=32000)
    else:  # Llama-3.1-8B
        cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                          num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                          rope_theta=500000.0, max_position_embeddings=8192)
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(cfg).to(dtype).eval()
    lm = LanguageModel(model, _Ids(), "random-llama", None, torch.device(device), dtype)
    lm.fast_head = True  # Llama applies no post-processing to its logits: head on scored rows only
    return lm


def encoded(n, lo, hi, vocab, seed):
    rng = np.random.default_rng(seed)
    seqs = [[1] + rng.integers(3, vocab, int(rng.integers(lo, hi + 1))).tolist() for _ in range(n)]
    return [encoding.Encoded(s, 1, np.zeros((len(s) - 1, 2), dtype=np.int64)) for s in seqs]


def meta_like(n, vocab, seed):
    """``n`` sequences: n / 2 prompts (4 shared instructions + a question) x 2 answers."""
    rng = np.random.default_rng(seed)
    instructions = [rng.integers(3, vocab, 24).tolist() for _ in range(4)]
    out = []
    for k in range(n // 2):
        context = [1] + instructions[k % 4] + rng.integers(3, vocab, int(rng.integers(16, 65))).tolist()
        for _ in range(2):
            answer = rng.integers(3, vocab, int(rng.integers(2, 5))).tolist()
            out.append(encoding.Encoded(context + answer, len(context),
                                         np.zeros((len(answer), 2), dtype=np.int64)))
    return out


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


@torch.inference_mode()
def one_at_a_time(lm, items):
    out = []
    for e in items:
        ids = torch.tensor([e.ids], device=lm.device)
        logp = lm.model(ids).logits[0].float().log_softmax(-1)
        out.append(float(logp[torch.arange(len(e.ids) - 1), ids[0, 1:]].sum()))
    return out


@torch.inference_mode()
def harness_batches(lm, items, bs=32):
    out = []
    for i in range(0, len(items), bs):
        chunk = items[i:i + bs]
        width = max(len(e.ids) for e in chunk)
        ids = torch.full((len(chunk), width), 2, device=lm.device)
        mask = torch.zeros_like(ids)
        for b, e in enumerate(chunk):
            ids[b, :len(e.ids)] = torch.tensor(e.ids)
            mask[b, :len(e.ids)] = 1
        logp = lm.model(ids, attention_mask=mask).logits.float().log_softmax(-1)  # [B, T, V] fp32
        tgt = logp[:, :-1].gather(-1, ids[:, 1:, None])[..., 0] * mask[:, 1:]
        out += tgt.sum(-1).tolist()
    return out


def ours(lm, items, token_budget, shared_prefix=True):
    texts = [str(i) for i in range(len(items))]
    return [s.total for s in scoring.score_encoded(lm, items, texts=texts, bos_policy="bos",
                                                   batch_size=None, token_budget=token_budget,
                                                   shared_prefix=shared_prefix, progress=False)]


def timed(fn, device):
    sync(device)
    start = time.perf_counter()
    res = fn()
    sync(device)
    return res, time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--n", type=int, default=8192, help="sequences per workload (batches hold one "
                    "length: enough sequences per length are needed to fill a GPU)")
    ap.add_argument("--token-budget", default="auto", help='"auto" (from free memory) or tokens')
    args = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() and not args.tiny else "cpu"
    n = 64 if args.tiny else args.n
    lm = build(args.tiny, torch.bfloat16 if device == "cuda" else torch.float32, device)
    budget = encoding.default_token_budget(lm) if args.token_budget == "auto" else int(args.token_budget)
    params = sum(p.numel() for p in lm.model.parameters())
    vocab = lm.model.config.vocab_size
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(f"{name}; {params / 1e9:.2f} B parameters, {lm.dtype}; torch {torch.__version__}; "
          f"token budget {budget}")
    print("| workload | scorer | seq/s | tokens/s | MFU |")
    print("| --- | --- | ---: | ---: | ---: |")
    for label, lo, hi in (("sentences 8-24", 8, 24), ("prompts 40-96", 40, 96), ("Meta-like", 0, 0)):
        items = meta_like(n, vocab, seed=7) if label == "Meta-like" else encoded(n, lo, hi, vocab, seed=lo)
        tokens = sum(len(e.ids) for e in items)
        ours(lm, items[:64], budget)  # warm-up
        runs = {"one at a time": lambda: one_at_a_time(lm, items[: max(n // 16, 8)]),
                "batch 32, fp32 log-softmax": lambda: harness_batches(lm, items),
                "xcomps_utils": lambda: ours(lm, items, budget)}
        if label == "Meta-like":
            runs["xcomps_utils, no prefix reuse"] = lambda: ours(lm, items, budget, False)
        results = {}
        for scorer, fn in runs.items():
            res, secs = timed(fn, device)
            k = len(res)
            tok = tokens * k / len(items)
            results[scorer] = np.array(res)
            print(f"| {label} | {scorer} | {k / secs:.0f} | {tok / secs:.0f} | "
                  f"{2 * params * tok / secs / PEAK:.1%} |")
        if label == "Meta-like":  # the harness sums whole texts here; compare the two ways of ours
            diff = np.abs(results["xcomps_utils"] - results["xcomps_utils, no prefix reuse"]).max()
            print(f"| {label} | max abs diff with vs without prefix reuse (nats) | {diff:.2e} | | |")
        else:
            diff = np.abs(results["xcomps_utils"] - results["batch 32, fp32 log-softmax"]).max()
            print(f"| {label} | max abs diff xcomps_utils vs harness (nats) | {diff:.2e} | | |")
    if device == "cuda":  # bf16 vs fp32 on the same weights
        items = encoded(512, 8, 24, vocab, seed=1)
        bf = np.array(ours(lm, items, budget))
        lm.model.float()
        lm.dtype = torch.float32
        fp = np.array(ours(lm, items, budget))
        flips = np.mean((bf[0::2] > bf[1::2]) != (fp[0::2] > fp[1::2]))
        print(f"bf16 vs fp32: max |dlogp| {np.abs(bf - fp).max():.3f} nats, mean "
              f"{np.abs(bf - fp).mean():.3f}; decision flips on {flips:.1%} of 256 pairs")


if __name__ == "__main__":
    main()
