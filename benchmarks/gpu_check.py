"""Ready for the GPU: speed, memory and bfloat16 trust of xcomps_utils in one table.

Two random-weight models built from a ``LlamaConfig`` (nothing is downloaded; throughput does not
depend on the weights' values): one with Llama-3.1-8B's shapes in bfloat16 for speed and memory,
and a small one for correctness. Needs only torch, transformers and this repository.

Rows of the table (``--smoke`` shrinks every size and runs on the CPU):

* **sentences** (8-24 tokens) and **prompts** (40-96 tokens): items/s and MFU for a one-at-a-time
  loop, batches of 32 with a full float32 log-softmax over ``[batch, length, vocabulary]`` (the
  harness' way), and ``xcomps_utils`` (one-length batches filling the token budget, the LM head
  in float32 on scored positions only, chunked normalisation). Max |difference| from the loop
  on the items the loop scored. Goals: MFU >= 60% on sentences, >= 65% on prompts.
* **Meta-like** prompts (one of 4 shared 24-token instructions + a 16-64-token question, each
  scored with two 2-4-token answers): ``xcomps_utils`` with and without prefix reuse; MFU counts
  the full texts. Goal: reuse >= 1.8x faster.
* **Neuro**: :func:`xcomps_utils.methods.neuro.last_token_states` peak memory (torch allocator above the
  loaded model; on CUDA ``max_memory_allocated``) as sentences double at a fixed token budget
  (goal: flat, within 10%), the old view-keeping hook at that budget, and the automatic budget
  (goal: peak within the quarter of free memory it aims at).
* **correctness** (small model, float32): ``xcomps_utils`` vs a float64 one-at-a-time reference,
  per token (goal <= 1e-5 nats); prefix reuse vs none; the same in bfloat16 (goal within
  :data:`xcomps_utils.lm.precision.BF16_PAIR_TOLERANCE`).
* **bf16 vs fp32** (8B shapes; the same weights cast): max |difference| per token, per sentence
  and per pair difference of 256 random minimal pairs (one token replaced), decision flips, and
  how many flips the near-tie flag catches.

MFU = 2 x parameters x tokens / time / 989e12 (H100/H200 dense bfloat16 peak). When a goal is
missed, a ``torch.profiler`` summary of the top kernels of the missed workload follows the table.

    python benchmarks/gpu_check.py             # one H200: about 3 minutes (sized for < 8)
    python benchmarks/gpu_check.py --smoke     # any CPU, well under a minute
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
import zlib

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from neuro_memory import peak_memory  # noqa: E402

from xcomps_utils.lm import encoding, precision
from xcomps_utils.methods import neuro

from xcomps_utils.lm import scoring  # noqa: E402
from xcomps_utils.lm.models import LanguageModel  # noqa: E402

PEAK = 989e12
COLUMNS = ["workload", "method", "items/s", "MFU", "peak MiB", "max abs diff (nats)", "goal"]
MIB = 2 ** 20


class WordIds:
    """Tokenizer for synthetic texts: a text is space-separated token ids (``"17 942 3"``); any
    other word maps to an id by CRC-32. Enough for :func:`xcomps_utils.lm.encoding.encode`,
    :func:`xcomps_utils.methods.neuro.last_token_states` and the LM-head check."""

    bos_token_id, eos_token_id, pad_token_id = 1, 2, 2

    def __init__(self, vocab: int):
        self.vocab = vocab

    def _one(self, text: str):
        ids, offs, pos = [], [], 0
        for w in text.split(" "):
            ids.append(int(w) if w.isdigit() else 3 + zlib.crc32(w.encode()) % (self.vocab - 3))
            offs.append((pos, pos + len(w)))
            pos += len(w) + 1
        return ids, offs

    def __call__(self, texts, add_special_tokens=False, return_offsets_mapping=False):
        one = isinstance(texts, str)
        enc = [self._one(t) for t in ([texts] if one else texts)]
        out = {"input_ids": [e[0] for e in enc]}
        if return_offsets_mapping:
            out["offset_mapping"] = [e[1] for e in enc]
        return {k: v[0] for k, v in out.items()} if one else out

    def convert_ids_to_tokens(self, ids):
        return [str(i) for i in ids]

    def decode(self, ids):
        return " ".join(map(str, ids))


def config(kind: str):
    from transformers import LlamaConfig

    shapes = {
        "llama-3.1-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                             num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                             rope_theta=500000.0, max_position_embeddings=8192),
        "small": dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=4,
                      num_attention_heads=8, num_key_value_heads=2, vocab_size=32000),
        "tiny": dict(hidden_size=64, intermediate_size=192, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, vocab_size=2048),
    }[kind]
    return LlamaConfig(**shapes, tie_word_embeddings=False)


def build(kind: str, dtype: torch.dtype, device: str, seed: int = 0) -> LanguageModel:
    """A random-weight Llama (``kind``: ``llama-3.1-8b``, ``small``, ``tiny``) as a
    :class:`~xcomps_utils.lm.models.LanguageModel` with a :class:`WordIds` tokenizer. Weights are
    drawn with std 0.02 (transformers' init); the LM head gets std 1 / sqrt(hidden) x 3 so
    that next-token distributions are not uniform."""
    from transformers import LlamaForCausalLM

    cfg = config(kind)
    torch.manual_seed(seed)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device), torch.no_grad():
            model = LlamaForCausalLM(cfg).eval()
            model.lm_head.weight.normal_(0, 3 / cfg.hidden_size ** 0.5)
    finally:
        torch.set_default_dtype(default)
    return LanguageModel(model, WordIds(cfg.vocab_size), f"random {kind}", None,
                         torch.device(device), dtype)


def random_items(n, lo, hi, vocab, seed):
    rng = np.random.default_rng(seed)
    seqs = [[1] + rng.integers(3, vocab, int(rng.integers(lo, hi + 1))).tolist() for _ in range(n)]
    return [encoding.Encoded(s, 1, np.zeros((len(s) - 1, 2), dtype=np.int64)) for s in seqs]


def meta_like(n, vocab, seed):
    """``n`` sequences: ``n / 2`` prompts (one of 4 shared instructions + a question) x 2 answers."""
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
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def timed(fn, device):
    sync(device)
    start = time.perf_counter()
    out = fn()
    sync(device)
    return out, time.perf_counter() - start


@torch.inference_mode()
def one_at_a_time(lm, items, dtype=torch.float32):
    """Sentence log-probabilities, one text per forward pass, full log-softmax in ``dtype``."""
    out = []
    for e in items:
        ids = torch.tensor([e.ids], device=lm.device)
        logp = lm.model(ids).logits[0].to(dtype).log_softmax(-1)
        t = torch.arange(e.n_context - 1, len(e.ids) - 1, device=lm.device)
        out.append(logp[t, ids[0, t + 1]].cpu().numpy().astype(np.float64))
    return out


@torch.inference_mode()
def harness_batches(lm, items, bs=32):
    """Batches of 32, right-padded with a mask, float32 log-softmax over the whole vocabulary."""
    out = []
    for i in range(0, len(items), bs):
        chunk = items[i:i + bs]
        width = max(len(e.ids) for e in chunk)
        ids = torch.full((len(chunk), width), 2, device=lm.device)
        mask = torch.zeros_like(ids)
        for b, e in enumerate(chunk):
            ids[b, :len(e.ids)] = torch.tensor(e.ids)
            mask[b, :len(e.ids)] = 1
        logp = lm.model(ids, attention_mask=mask).logits.float().log_softmax(-1)  # [B, T, V]
        tgt = logp[:, :-1].gather(-1, ids[:, 1:, None])[..., 0]
        for b, e in enumerate(chunk):
            out.append(tgt[b, e.n_context - 1:len(e.ids) - 1].cpu().numpy().astype(np.float64))
    return out


def ours(lm, items, token_budget, shared_prefix=True):
    return [s.logprobs for s in scoring.score_encoded(
        lm, items, texts=[str(i) for i in range(len(items))], token_budget=token_budget,
        shared_prefix=shared_prefix)]


def fmt(x, spec):
    return "" if x is None else format(x, spec)


class Table:
    def __init__(self):
        self.rows, self.missed = [], []

    def add(self, workload, method, items_s=None, mfu=None, peak=None, diff=None, goal=""):
        self.rows.append([workload, method, fmt(items_s, ",.1f"), fmt(mfu, ".1%"),
                          fmt(peak, ",.1f"), fmt(diff, ".2e"), goal])

    def goal(self, workload, ok: bool | None, text: str) -> str:
        if ok is False:
            self.missed.append(workload)
        return f"{text}: {'n/a (CPU)' if ok is None else 'met' if ok else 'MISSED'}"

    def print(self):
        print("| " + " | ".join(COLUMNS) + " |")
        print("| " + " | ".join("---" if i < 2 or i == 6 else "---:" for i in range(7)) + " |")
        for r in self.rows:
            print("| " + " | ".join(r) + " |")


def speed(table, lm, args, params, on_gpu, profiles):
    vocab = lm.model.config.vocab_size
    workloads = [("sentences 8-24", random_items(args.sentences, 8, 24, vocab, 1), 0.60),
                 ("prompts 40-96", random_items(args.prompts, 40, 96, vocab, 2), 0.65)]
    for label, items, goal in workloads:
        tokens = sum(len(e.ids) for e in items)
        loop_items = items[:args.loop]
        ours(lm, items[:64], args.budget)  # warm-up
        harness_batches(lm, items[:64])
        ref, secs = timed(lambda: one_at_a_time(lm, loop_items), lm.device)
        loop_tokens = sum(len(e.ids) for e in loop_items)
        table.add(label, "one at a time", len(loop_items) / secs,
                  2 * params * loop_tokens / secs / PEAK, diff=0.0, goal="(reference)")
        for method, fn in (("batch 32, fp32 log-softmax", lambda: harness_batches(lm, items)),
                           ("xcomps_utils", lambda: ours(lm, items, args.budget))):
            res, secs = timed(fn, lm.device)
            mfu = 2 * params * tokens / secs / PEAK
            diff = max(float(np.abs(a - b).max()) for a, b in zip(res, ref))
            text = ""
            if method == "xcomps_utils":
                text = table.goal(label, mfu >= goal if on_gpu else None, f"MFU >= {goal:.0%}")
                if not on_gpu or mfu < goal:
                    profiles.append((label, lambda items=items: ours(lm, items[:len(items) // 8],
                                                                     args.budget)))
            table.add(label, method, len(items) / secs, mfu, diff=diff, goal=text)
    items = meta_like(args.meta, vocab, 7)
    tokens = sum(len(e.ids) for e in items)
    ours(lm, items[:64], args.budget)
    with_reuse, t_reuse = timed(lambda: ours(lm, items, args.budget, True), lm.device)
    without, t_plain = timed(lambda: ours(lm, items, args.budget, False), lm.device)
    diff = max(float(np.abs(a - b).max()) for a, b in zip(with_reuse, without))
    ratio = t_plain / t_reuse
    text = table.goal("Meta-like", ratio >= 1.8 if on_gpu else None,
                      f"reuse {ratio:.2f}x faster, >= 1.8x")
    if on_gpu and ratio < 1.8:
        profiles.append(("Meta-like", lambda: ours(lm, items[:len(items) // 8], args.budget)))
    table.add("Meta-like prompts", "xcomps_utils, prefix reuse", len(items) / 2 / t_reuse,
              2 * params * tokens / t_reuse / PEAK, diff=diff, goal=text)
    table.add("Meta-like prompts", "xcomps_utils, no prefix reuse", len(items) / 2 / t_plain,
              2 * params * tokens / t_plain / PEAK, diff=0.0, goal="(reference)")


def texts_of(items):
    return [" ".join(map(str, e.ids[1:])) for e in items]


def memory(table, lm, args, params):
    vocab, device = lm.model.config.vocab_size, lm.device
    peaks = []
    for k in (1, 2, 4):
        texts = texts_of(random_items(args.neuro * k, 15, 15, vocab, 10 + k))
        _, peak, secs = peak_memory(
            lambda: neuro.last_token_states(lm, texts, token_budget=args.neuro_budget), device)
        peaks.append(peak)
        flat = peak <= 1.1 * peaks[0]
        table.add("Neuro extraction", f"{len(texts):,} sentences, budget {args.neuro_budget:,}",
                  len(texts) / secs, 2 * params * 16 * len(texts) / secs / PEAK, peak / MIB,
                  goal=table.goal("Neuro", flat, "flat within 10%") if k > 1 else "")
    ids = torch.tensor([e.ids for e in random_items(args.neuro_budget // 16, 15, 15, vocab, 10)],
                       device=device)
    from neuro_memory import view_hook_forward

    _, peak, _ = peak_memory(lambda: view_hook_forward(lm, ids), device)
    table.add("Neuro extraction", f"view hook (before), budget {args.neuro_budget:,}",
              peak=peak / MIB, goal="(the hook this replaces)")
    if device.type == "cuda":
        cfg = lm.model.config
        budget = encoding.default_token_budget(
            lm, held_per_text=(cfg.num_hidden_layers + 1) * cfg.hidden_size * 4)
        aim = torch.cuda.mem_get_info(device)[0] / 4
        texts = texts_of(random_items(2 * budget // 16 + 1, 15, 15, vocab, 20))
        _, peak, secs = peak_memory(lambda: neuro.last_token_states(lm, texts), device)
        table.add("Neuro extraction", f"{len(texts):,} sentences, auto budget {budget:,}",
                  len(texts) / secs, 2 * params * 16 * len(texts) / secs / PEAK, peak / MIB,
                  goal=table.goal("Neuro auto budget", peak <= aim,
                                  f"peak <= a quarter of free memory ({aim / MIB:,.0f} MiB)"))


def correctness(table, args, device):
    kind = "tiny" if args.smoke else "small"
    lm = build(kind, torch.float32, device, seed=1)
    vocab = lm.model.config.vocab_size
    items = random_items(args.check, 8, 24, vocab, 3) + meta_like(args.check, vocab, 4)
    ref = one_at_a_time(lm, items, torch.float64)
    for reuse in (False, True):
        res = ours(lm, items, args.budget, reuse)
        diff = max(float(np.abs(a - b).max()) for a, b in zip(res, ref))
        table.add(f"correctness ({kind}, float32)",
                  f"xcomps_utils{', prefix reuse' if reuse else ''} vs float64 loop, per token",
                  diff=diff, goal=table.goal("correctness", diff <= 1e-5, "<= 1e-5"))
    lm.model.to(torch.bfloat16)
    lm.dtype, lm.fast_head = torch.bfloat16, None
    alone = [s.total for s in scoring.score_encoded(lm, items, texts=[""] * len(items),
                                                    batch_size=1, shared_prefix=False)]
    res = [a.sum() for a in ours(lm, items, args.budget)]
    diff = float(np.abs(np.array(res) - np.array(alone)).max())
    table.add(f"correctness ({kind}, bfloat16)",
              "xcomps_utils batched + reuse vs one text per batch, per text",
              diff=diff, goal=table.goal("correctness bf16", diff <= precision.BF16_PAIR_TOLERANCE,
                                         f"<= {precision.BF16_PAIR_TOLERANCE} (tolerance)"))


def bf16_vs_fp32(table, lm, args):
    vocab = lm.model.config.vocab_size
    rng = np.random.default_rng(5)
    good = random_items(args.pairs, 8, 24, vocab, 6)
    bad = []
    for e in good:
        ids = list(e.ids)
        ids[int(rng.integers(1, len(ids)))] = int(rng.integers(3, vocab))
        bad.append(encoding.Encoded(ids, 1, e.offsets))
    items = good + bad
    bf = ours(lm, items, args.budget)
    lm.model.float()
    lm.dtype, lm.fast_head = torch.float32, None
    fp = ours(lm, items, args.budget)
    tok = max(float(np.abs(a - b).max()) for a, b in zip(bf, fp))
    sb, sf = np.array([a.sum() for a in bf]), np.array([a.sum() for a in fp])
    n = len(good)
    db, df = sb[:n] - sb[n:], sf[:n] - sf[n:]
    flips = (db > 0) != (df > 0)
    near = precision.near_ties(db, "bfloat16", 0)
    table.add("bf16 vs fp32 (8B shapes)" if not args.smoke else "bf16 vs fp32 (tiny)",
              "per token", diff=tok)
    table.add("bf16 vs fp32 (8B shapes)" if not args.smoke else "bf16 vs fp32 (tiny)",
              "per sentence", diff=float(np.abs(sb - sf).max()))
    table.add("bf16 vs fp32 (8B shapes)" if not args.smoke else "bf16 vs fp32 (tiny)",
              f"pair difference, {n} pairs", diff=float(np.abs(db - df).max()),
              goal=f"{int(flips.sum())} flips ({flips.mean():.1%}), {int((flips & near).sum())} "
                   f"of them near ties; {int(near.sum())} near ties")


def profile_summary(label, fn, device):
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=acts) as prof:
        fn()
        sync(device)
    key = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
    print(f"\nWhere the time goes: {label}, xcomps_utils on 1/8 of the items (top kernels by "
          f"{'GPU' if device.type == 'cuda' else 'CPU'} time)")
    print(prof.key_averages().table(sort_by=key, row_limit=12, max_name_column_width=60))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes on the CPU (seconds)")
    ap.add_argument("--budget", default="auto", help='token budget: "auto" or tokens')
    args = ap.parse_args()
    on_gpu = torch.cuda.is_available() and not args.smoke
    device = "cuda" if on_gpu else "cpu"
    sizes = dict(sentences=8192, prompts=4096, meta=4096, loop=256, neuro=2048,
                 neuro_budget=8192, check=64, pairs=256)
    if args.smoke:
        sizes = dict(sentences=48, prompts=24, meta=32, loop=8, neuro=32, neuro_budget=128,
                     check=6, pairs=16)
    elif not on_gpu:
        sys.exit("no GPU: run with --smoke on a CPU")
    vars(args).update(sizes)
    kind = "tiny" if args.smoke else "llama-3.1-8b"
    lm = build(kind, torch.bfloat16, device)
    args.budget = (encoding.default_token_budget(lm) if args.budget == "auto"
                   else int(args.budget))
    params = sum(p.numel() for p in lm.model.parameters())
    head = "float32 copy of the weight"
    if on_gpu:
        try:
            x = torch.ones(2, 8, dtype=torch.bfloat16, device=device)
            torch.mm(x, x.t(), out_dtype=torch.float32)
            head = "bf16 tensor cores, float32 output (torch.mm out_dtype)"
        except (RuntimeError, TypeError, NotImplementedError):
            pass
    name = torch.cuda.get_device_name() if on_gpu else "CPU (smoke)"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fast = scoring._head_matches(lm)
    print(f"{name}; random {kind}: {params / 1e9:.2f} B parameters, {lm.dtype}; torch "
          f"{torch.__version__}; token budget {args.budget:,}; LM head in float32 ({head}); "
          f"fast-head check {'passed' if fast and not caught else 'FAILED'}\n")
    table, profiles = Table(), []
    speed(table, lm, args, params, on_gpu, profiles)
    memory(table, lm, args, params)
    correctness(table, args, device)
    bf16_vs_fp32(table, lm, args)
    table.print()
    if table.missed:
        print(f"\nGoals missed: {', '.join(dict.fromkeys(table.missed))}")
    for label, fn in profiles[:2 if on_gpu else 1]:
        profile_summary(label, fn, torch.device(device))


if __name__ == "__main__":
    main()
