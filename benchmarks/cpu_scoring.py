"""CPU scoring throughput, side by side in one process: plain loop, minicons, lm-eval, xcomps_utils.

Same model (an embedded model, ``--model``, float32; default smollm2-135m-instruct), same BLiMP
anaphor_gender_agreement pairs. Reports pairs per second, the ratio of xcomps_utils to each, the
achieved model GFLOP/s (2 x parameters x tokens / time) and the measured float32 matrix-product
rate of this machine. On sentences every scorer's first-token convention is stated (what it feeds
the model before the text and what it scores: minicons' ``bos_token=True`` gives Gemma, whose
tokenizer already adds a BOS, two of them), with the largest absolute difference of its sentence
log-probabilities from a plain one-sentence-at-a-time loop under the same convention and from
the plain loop with one BOS (the project's convention), and the pairs whose decision
(``good > bad``) differs from that loop's.

    .venv/bin/pip install -r benchmarks/requirements.txt
    XCOMPS_DATA_DIR=../shared/data .venv/bin/python benchmarks/cpu_scoring.py [--pairs 1000]
    ... benchmarks/cpu_scoring.py --model gemma-3-270m --pairs 300 --parts sentences --rounds 2
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

import transformers

from xcomps_utils.lm import encoding, models, scoring
from xcomps_utils.methods import meta, perplexity
from xcomps_utils.pairs import data, tasks, xcomps


def matmul_gflops(n: int = 2048, reps: int = 10) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    start = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n**3 * reps / (time.perf_counter() - start) / 1e9


@torch.inference_mode()
def plain_ids_loop(lm, seqs, first=1):
    """One token sequence at a time, no padding, full log-softmax of the float32 logits taken in
    float64 (a float32 log-softmax over a 49k vocabulary is itself only good to ~1e-5 nats per
    token): the sum of log p(ids[t] | ids[:t]) for t >= ``first``."""
    out = []
    for ids in seqs:
        logp = lm.model(torch.tensor([ids])).logits[0].double().log_softmax(-1)
        out.append(float(logp[torch.arange(first - 1, len(ids) - 1), torch.tensor(ids[first:])].sum()))
    return np.array(out)


def plain_loop(lm, texts, policy):
    """BOS + text (``policy="bos"``) or BOS + " " + text (``"lm_eval"``), every text token scored."""
    tok = lm.tokenizer
    return plain_ids_loop(lm, [[tok.bos_token_id] + tok(" " + t if policy == "lm_eval" else t,
                                                        add_special_tokens=False)["input_ids"]
                               for t in texts])


def minicons_ids(tok, text, bos_token):
    """The ids minicons' ``IncrementalLMScorer`` feeds for one text (before padding): the
    tokenizer's own special tokens, after a BOS string with ``bos_token=True``. It scores every
    token but the first."""
    return tok((tok.bos_token if bos_token else "") + text)["input_ids"]


def minicons_convention(tok, bos_token):
    ids = minicons_ids(tok, "The cat sat.", bos_token)
    k = next((i for i, t in enumerate(ids) if t != tok.bos_token_id), len(ids))
    if k == 0:
        return "text, first token context only (unscored)"
    if k == 1:
        return "BOS + text (as the plain loop)"
    return f"{k} x BOS + text; the BOS after the first scored"


def run_minicons(s, texts, batch_size, bos_token=True):
    """Sentence sums from a minicons ``IncrementalLMScorer`` ``s``, ``batch_size`` texts a call."""
    out = []
    for i in range(0, len(texts), batch_size):
        out += s.sequence_score(texts[i:i + batch_size], reduction=lambda x: x.sum(0).item(),
                                bos_token=bos_token)
    return np.array(out)


def run_lm_eval(path, contexts, choices, batch_size, delimiter=" ", add_bos=False):
    """lm-evaluation-harness on a local multiple-choice task, one document per context with its
    choices (BLiMP's own setup for sentences: empty context). Returns (seconds, [docs, choices]
    log-likelihoods)."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    tmp = Path(tempfile.mkdtemp())
    with open(tmp / "docs.jsonl", "w") as f:
        for c, ch in zip(contexts, choices):
            f.write(json.dumps({"context": c, "choices": list(ch)}) + "\n")
    (tmp / "xcomps_bench.yaml").write_text(
        "task: xcomps_bench\ndataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {tmp / 'docs.jsonl'}\n"
        "test_split: test\noutput_type: multiple_choice\ndoc_to_text: \"{{context}}\"\n"
        f"target_delimiter: {json.dumps(delimiter)}\n"
        "doc_to_target: 0\ndoc_to_choice: \"{{choices}}\"\nmetric_list:\n  - metric: acc\n")
    model_args = f"pretrained={path},dtype=float32" + (",add_bos_token=True" if add_bos else "")
    start = time.perf_counter()
    res = lm_eval.simple_evaluate(model="hf", model_args=model_args, tasks=["xcomps_bench"],
                                  batch_size=batch_size, device="cpu",
                                  task_manager=TaskManager(include_path=str(tmp)), log_samples=True)
    secs = time.perf_counter() - start
    samples = sorted(res["samples"]["xcomps_bench"], key=lambda s: s["doc_id"])
    return secs, np.array([[r[0][0] for r in s["resps"]] for s in samples])


@torch.inference_mode()
def plain_continuations(lm, contexts, answers):
    """Reference for prompts: BOS + context + answer in one forward pass, answer tokens from
    encoding the whole text (as xcomps_utils and lm-eval do), float64 log-softmax."""
    tok, out = lm.tokenizer, []
    for c, a in zip(contexts, answers):
        n_ctx = len(tok(c, add_special_tokens=False)["input_ids"])
        ids = [tok.bos_token_id] + tok(c + a, add_special_tokens=False)["input_ids"]
        logp = lm.model(torch.tensor([ids])).logits[0].double().log_softmax(-1)
        out.append(float(logp[torch.arange(n_ctx, len(ids) - 1), torch.tensor(ids[n_ctx + 1:])].sum()))
    return np.array(out)


def n_tokens(lm, texts, extra=1):
    return sum(len(lm.tokenizer(t, add_special_tokens=False)["input_ids"]) + extra for t in texts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=1000, help="BLiMP pairs (sentences part)")
    ap.add_argument("--batch-size", type=int, default=16, help="the peers' batch size")
    ap.add_argument("--parts", nargs="*", default=["sentences", "meta", "prompts"])
    ap.add_argument("--prompt-items", type=int, default=100,
                    help="BLiMP pairs turned into perplexity prompts (8 prompt pairs each)")
    ap.add_argument("--check", type=int, default=300,
                    help="texts of the meta/prompts parts checked against a plain loop (and "
                         "sentences against one under minicons' convention)")
    ap.add_argument("--skip", nargs="*", default=[], help="peers to skip: plain minicons lm_eval")
    ap.add_argument("--rounds", type=int, default=1,
                    help="sentences: time xcomps_utils and minicons this many times in turn (median)")
    ap.add_argument("--model", default="smollm2-135m-instruct", choices=list(models.EMBEDDED_MODELS),
                    help="embedded model, float32")
    args = ap.parse_args()
    lm = models.load_model(args.model, device="cpu", dtype="float32")
    path = lm.source["converted_to"]
    n_params = sum(p.numel() for p in lm.model.parameters())
    gemm = matmul_gflops()
    print(f"{args.model}, {n_params / 1e6:.1f} M parameters; "
          f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}, transformers {transformers.__version__}; float32 matmul "
          f"{gemm:.0f} GFLOP/s; xcomps_utils token budget {encoding.default_token_budget(lm)}")
    scoring.sequence_scores(lm, ["A warm-up sentence."] * 64)  # kernels, the LM-head check

    def table(title, unit, n, tokens, rows, ours, conventions=None):
        """``rows``: name -> (seconds, max abs diff vs the plain loop); with ``conventions``
        (name -> (convention, max abs diff vs the plain BOS loop, flips)) three more columns."""
        print(f"\n### {title}\n\n{n} {unit}, {tokens} tokens as full texts (with BOS)\n")
        extra = ("| first-token convention " if conventions else "")
        print(f"| scorer {extra}| {unit}/s | {ours} / it | model GFLOP/s | % of matmul | "
              f"max abs diff vs plain loop{', same convention' if conventions else ''} (nats) |"
              + (f" max abs diff vs plain BOS loop (nats/sentence) | flips of {n} pairs vs "
                 "plain BOS loop |" if conventions else ""))
        print("| --- " + ("| --- " if conventions else "") + "| ---: | ---: | ---: | ---: | ---: |"
              + ("---: | ---: |" if conventions else ""))
        for name, (secs, diff) in rows.items():
            flops = 2 * n_params * tokens / secs / 1e9
            conv = conventions.get(name, ("", float("nan"), "")) if conventions else None
            print(f"| {name} " + (f"| {conv[0]} " if conv else "")
                  + f"| {n / secs:.1f} | {rows[ours][0] and secs / rows[ours][0]:.2f} | "
                  f"{flops:.0f} | {100 * flops / gemm:.0f}% | {diff:.2e} |"
                  + (f" {conv[1]:.2e} | {conv[2]} |" if conv else ""))

    def timed(f):
        start = time.perf_counter()
        out = f()
        return time.perf_counter() - start, out

    def maxdiff(got, ref):
        return float(np.abs(np.asarray(got)[:len(ref)] - ref).max()) if len(ref) else float("nan")

    if "sentences" in args.parts:
        pairs = data.sample_pairs(tasks.load("blimp_anaphor"), args.pairs, seed=0)
        texts = list(pairs.good) + list(pairs.bad)
        n = len(pairs)
        rows, ref, conv = {}, {}, {}
        tok = lm.tokenizer

        def versus_bos(name, convention, got):
            """The convention and the distance from the plain BOS loop (difference, flips)."""
            if "bos" not in ref:
                conv[name] = (convention, float("nan"), "")
                return
            got, base = np.asarray(got), ref["bos"]
            flips = int(((got[:n] > got[n:]) != (base[:n] > base[n:])).sum())
            conv[name] = (convention, maxdiff(got, base), flips)

        if "plain" not in args.skip:
            secs, ref["bos"] = timed(lambda: plain_loop(lm, texts, "bos"))
            name = "plain loop (bos), one sentence at a time"
            rows[name] = (secs, 0.0)
            versus_bos(name, "BOS + text", ref["bos"])
            ref["lm_eval"] = plain_loop(lm, texts, "lm_eval")  # reference only, not timed
        labels = {"bos": "BOS + text", "lm_eval": "BOS + \" \" + text"}
        # The timed scorers, run in turn --rounds times (the median time is reported): on a
        # shared machine the load moves within minutes, and a scorer timed once, minutes
        # before another, can gain or lose a factor of 1.5 from it alone.
        timed_scorers = {}  # name -> (convention, reference key or array, scorer)
        for policy in ("bos", "lm_eval"):
            timed_scorers[f"xcomps_utils ({policy} policy)"] = (
                labels[policy], policy,
                lambda policy=policy: scoring.sequence_scores(lm, texts, bos_policy=policy).logprob_sum)
        timed_scorers[f"xcomps_utils (bos), batch {args.batch_size} like the peers"] = (
            labels["bos"], "bos",
            lambda: scoring.sequence_scores(lm, texts, batch_size=args.batch_size, token_budget=None,
                                            shared_prefix=False).logprob_sum)
        if "minicons" not in args.skip:
            from minicons import scorer

            mc = scorer.IncrementalLMScorer(str(path), device="cpu")
            for bos_token in (True, False):
                # reference under minicons' own convention: its ids, scored from the second
                seqs = [minicons_ids(tok, t, bos_token) for t in texts[:args.check]]
                if "bos" in ref and all(ids == [tok.bos_token_id] + tok(t, add_special_tokens=False)
                                        ["input_ids"] for ids, t in zip(seqs, texts)):
                    same = ref["bos"][:len(seqs)]  # the plain loop's own ids
                else:
                    same = plain_ids_loop(lm, seqs)
                timed_scorers[f"minicons batch {args.batch_size} (bos_token={bos_token})"] = (
                    minicons_convention(tok, bos_token), same,
                    lambda bos_token=bos_token: run_minicons(mc, texts, args.batch_size, bos_token))
        times, results = {name: [] for name in timed_scorers}, {}
        for _ in range(args.rounds):
            for name, (_, _, f) in timed_scorers.items():
                secs, results[name] = timed(f)
                times[name].append(secs)
        for name, (convention, reference, _) in timed_scorers.items():
            reference = ref.get(reference, []) if isinstance(reference, str) else reference
            rows[name] = (float(np.median(times[name])), maxdiff(results[name], reference))
            versus_bos(name, convention, results[name])
            shift = (f"; mean difference from the plain BOS loop "
                     f"{np.mean(np.asarray(results[name]) - ref['bos']):+.3g} nats/sentence"
                     if "bos" in ref else "")
            print(f"{name}: {', '.join(f'{t:.1f}' for t in times[name])} s{shift}")
        if "lm_eval" not in args.skip:
            secs, ll = run_lm_eval(path, [""] * len(pairs), list(zip(pairs.good, pairs.bad)),
                                   args.batch_size)
            name = f"lm-eval batch {args.batch_size} (BOS + ' ' + text)"
            rows[name] = (secs, maxdiff(np.r_[ll[:, 0], ll[:, 1]], ref.get("lm_eval", [])))
            versus_bos(name, labels["lm_eval"], np.r_[ll[:, 0], ll[:, 1]])
        table(f"Sentences: BLiMP anaphor_gender_agreement, {args.model}", "pairs", n,
              n_tokens(lm, texts), rows, "xcomps_utils (bos policy)", conv)

    if "meta" in args.parts:
        xc = xcomps.load_languages(["en", "de", "fr", "zh", "vi", "tr", "hu"])  # the sample
        prompts = meta.build_meta_prompts(xc)
        contexts = list(prompts.context) * 2
        answers = list(prompts.answer_good) + list(prompts.answer_bad)
        k = min(args.check, len(prompts))
        check = list(range(k)) + list(range(len(prompts), len(prompts) + k))
        ref = plain_continuations(lm, [contexts[i] for i in check], [answers[i] for i in check])
        rows = {}
        for name, shared in (("xcomps_utils, shared prompt", True), ("xcomps_utils, no sharing", False)):
            secs, got = timed(lambda: scoring.continuation_scores(lm, contexts, answers,
                                                                  shared_prefix=shared))
            rows[name] = (secs, maxdiff(np.array([got[i].total for i in check]), ref))
        if "lm_eval" not in args.skip:
            secs, ll = run_lm_eval(path, list(prompts.context),
                                   list(zip(prompts.answer_good, prompts.answer_bad)),
                                   args.batch_size, delimiter="", add_bos=True)
            got = np.r_[ll[:, 0], ll[:, 1]]
            rows[f"lm-eval batch {args.batch_size} (BOS, context + answer)"] = (
                secs, maxdiff(got[check], ref))
        table(f"Meta prompts, XCOMPS sample ({len(xc)} pairs, {xc.lang.nunique()} languages, "
              "both option orders), two answers each", "prompts", len(prompts),
              n_tokens(lm, [c + a for c, a in zip(contexts, answers)]), rows,
              "xcomps_utils, shared prompt")

    if "prompts" in args.parts:
        pairs = tasks.select("blimp_anaphor").head(args.prompt_items)
        pps = perplexity.build_prompt_pairs(pairs, perplexity.load_wordings("blimp"))
        texts = [t for pp in pps for t in (pp.correct, pp.incorrect)]
        ref = plain_loop(lm, texts[:args.check], "lm_eval")
        rows = {}
        for name, shared in (("xcomps_utils (lm_eval policy), shared prefixes", True),
                             ("xcomps_utils (lm_eval policy), no sharing", False)):
            secs, got = timed(lambda: scoring.sequence_scores(lm, texts, bos_policy="lm_eval",
                                                              shared_prefix=shared))
            rows[name] = (secs, maxdiff(got.logprob_sum, ref))
        if "lm_eval" not in args.skip:
            secs, ll = run_lm_eval(path, [""] * len(pps), [(pp.correct, pp.incorrect) for pp in pps],
                                   args.batch_size)
            rows[f"lm-eval batch {args.batch_size} (BOS + ' ' + text)"] = (secs, maxdiff(ll.ravel(), ref))
        table(f"Token-level perplexity prompts, {len(pairs)} BLiMP anaphor items x "
              f"{len(pps) // len(pairs)} prompt pairs", "prompt pairs", len(pps),
              n_tokens(lm, texts, extra=2), rows, "xcomps_utils (lm_eval policy), shared prefixes")


if __name__ == "__main__":
    main()
