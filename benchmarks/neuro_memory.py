"""Peak memory of the Neuro extraction as the token budget, the number of sentences and the
sentences' length double.

:func:`xcomps_utils.methods.neuro.last_token_states` reads the last token's hidden state at every layer
with forward hooks that copy that one position into a ``[batch, L + 1, H]`` float32 buffer. The
hooks used to keep ``h[:, -1]``, a *view* that keeps each layer's whole ``[batch, length, H]``
output alive until the batch ends; this script measures both (``view hook`` re-creates the old
hook on a plain forward pass) next to the model's plain forward pass, whose peak is the floor.

Memory is torch's own allocator, measured exactly: on CUDA ``torch.cuda.max_memory_allocated``;
on a CPU the torch profiler with ``profile_memory=True``, which records every allocation and free
of torch's CPU allocator (:func:`peak_memory`; ``tracemalloc`` sees only Python's allocator, and
the process's RSS mixes in allocator caches). The ``[N, L + 1, H]`` result is a NumPy array
outside torch's allocator: its size is printed beside.

    .venv/bin/python benchmarks/neuro_memory.py [--model gemma-3-270m] [--n 256]
"""

from __future__ import annotations

import argparse
import time

import torch


def peak_memory(fn, device="cpu"):
    """``(fn(), peak bytes allocated by torch above what was allocated before, seconds)``.

    CUDA: ``torch.cuda.max_memory_allocated`` after a reset. CPU: the running sum of the
    allocations and frees that ``torch.profiler`` records (``profile_memory=True``), in time
    order; an allocation freed inside the same operator is netted within it.
    """
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        start = time.perf_counter()
        out = fn()
        torch.cuda.synchronize(device)
        return out, torch.cuda.max_memory_allocated(device) - before, time.perf_counter() - start
    from torch.profiler import ProfilerActivity, profile

    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = fn()
    secs = time.perf_counter() - start
    events = sorted((e.time_range.start, e.self_cpu_memory_usage) for e in prof.events()
                    if e.self_cpu_memory_usage)
    live = peak = 0
    for _, b in events:
        live += b
        peak = max(peak, live)
    return out, peak, secs


@torch.inference_mode()
def plain_forward(lm, ids):
    """The decoder's forward pass with nothing kept (the floor)."""
    lm.model.get_decoder()(input_ids=ids, use_cache=False)


@torch.inference_mode()
def view_hook_forward(lm, ids):
    """The forward pass with the old hooks, which kept ``h[:, -1]`` (a view) of every layer."""
    decoder, n = lm.model.get_decoder(), lm.model.config.num_hidden_layers
    picked = []
    modules = [lm.model.get_input_embeddings(), *decoder.layers[:n - 1], decoder.norm]
    handles = [m.register_forward_hook(
        lambda mod, a, o: picked.append((o[0] if isinstance(o, tuple) else o)[:, -1]))
        for m in modules]
    try:
        decoder(input_ids=ids, use_cache=False)
        torch.stack(picked, dim=1).float().cpu()
    finally:
        for h in handles:
            h.remove()


def sentences(base: list[str], n: int) -> list[str]:
    """``n`` texts: ``base`` repeated with a numbered suffix when more are needed."""
    return [base[i % len(base)] + ("" if i < len(base) else f" ({i // len(base)})")
            for i in range(n)]


def main():
    from xcomps_utils.lm import encoding, models
    from xcomps_utils.methods import neuro
    from xcomps_utils.pairs import xcomps

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gemma-3-270m")
    ap.add_argument("--n", type=int, default=256, help="sentences in the first run")
    ap.add_argument("--budget", type=int, default=256, help="token budget of the first run")
    ap.add_argument("--length", type=int, default=64, help="tokens of the shortest long text")
    args = ap.parse_args()
    lm = models.load_model(args.model)
    cfg = lm.model.config
    per_text = (cfg.num_hidden_layers + 1) * cfg.hidden_size * 4
    pairs = xcomps.load_languages(xcomps.SAMPLE_LANGUAGES)
    base = list(dict.fromkeys(list(pairs.good) + list(pairs.bad)))
    mb = 2 ** 20
    print(f"{lm.name} ({lm.dtype}, {lm.device}); {cfg.num_hidden_layers + 1} layers x "
          f"{cfg.hidden_size}: {per_text / 1024:.1f} KiB of states per text; peak = torch "
          f"allocator memory above the loaded model")
    print("\n| sentences | token budget | peak MiB | states array MiB | seconds |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for n, budget in [(args.n * k, args.budget) for k in (1, 2, 4)] + \
                     [(args.n * 4, args.budget * k) for k in (2, 4)]:
        texts = sentences(base, n)
        states, peak, secs = peak_memory(
            lambda: neuro.last_token_states(lm, texts, token_budget=budget), lm.device)
        print(f"| {n:,} | {budget:,} | {peak / mb:.1f} | {states.nbytes / mb:.1f} | {secs:.1f} |",
              flush=True)
    print("\none text of T tokens (a sentence repeated), batch of 1:")
    print("| T tokens | plain forward MiB | last_token_states MiB | view hook (before) MiB |")
    print("| ---: | ---: | ---: | ---: |")
    unit = lm.tokenizer(" " + base[0], add_special_tokens=False)["input_ids"]
    for k in (1, 2, 4):
        ids = ([lm.tokenizer.bos_token_id] + unit * (args.length * k // len(unit) + 1))[
            :args.length * k]
        text = lm.tokenizer.decode(ids[1:])
        t = torch.tensor([ids], device=lm.device)
        _, floor, _ = peak_memory(lambda: plain_forward(lm, t), lm.device)
        _, ours, _ = peak_memory(lambda: neuro.last_token_states(lm, [text], token_budget=None),
                                 lm.device)
        _, view, _ = peak_memory(lambda: view_hook_forward(lm, t), lm.device)
        print(f"| {len(ids)} | {floor / mb:.1f} | {ours / mb:.1f} | {view / mb:.1f} |", flush=True)
        assert len(encoding.encode(lm.tokenizer, [text])[0].ids) == len(ids), "re-encoding differs"


if __name__ == "__main__":
    main()
