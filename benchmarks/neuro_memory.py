"""Peak memory of the Neuro extraction as the number of sentences doubles twice.

Extracts last-token hidden states at every layer for N, 2N and 4N sentences of the XCOMPS sample
(all seven languages, repeated with a numbered suffix when more are needed) with
:func:`xcomps_utils.neuro.last_token_states`, which returns the ``[N, L + 1, H]`` float32 states
in memory, and reports the size of that array next to the peak anonymous resident memory (RSS
minus file-backed pages) above the loaded model, sampled every 10 ms. The states array is part of
that peak; what the extraction needs beyond it (one batch's activations, the tokenized inputs,
allocator caches) is the difference. Runs larger than memory go through
:func:`xcomps_utils.methods.run`, which extracts one shard at a time into the results store.

    .venv/bin/python benchmarks/neuro_memory.py [--model gemma-3-270m] [--n 1050]
"""

import argparse
import threading
import time

import psutil

from xcomps_utils import models, neuro, xcomps


def peak_rss_during(fn):
    """``(result of fn(), peak anonymous RSS in bytes, seconds)``."""
    proc, peak, done = psutil.Process(), [0], threading.Event()

    def sample():
        while not done.is_set():
            m = proc.memory_info()
            peak[0] = max(peak[0], m.rss - m.shared)  # anonymous memory: not file-backed pages
            time.sleep(0.01)

    t = threading.Thread(target=sample)
    t.start()
    start = time.perf_counter()
    try:
        out = fn()
    finally:
        done.set()
        t.join()
    return out, peak[0], time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="gemma-3-270m")
    ap.add_argument("--n", type=int, default=1050, help="sentences in the first run")
    ap.add_argument("--batch-size", type=int, default=16)
    args = ap.parse_args()
    lm = models.load_model(args.model)
    pairs = xcomps.load_languages(xcomps.SAMPLE_LANGUAGES)
    base = list(dict.fromkeys(list(pairs.good) + list(pairs.bad)))
    print(f"{args.model}; {len(base)} distinct sample sentences; batch size {args.batch_size}; "
          f"states kept in memory")
    print(f"{'sentences':>10} {'states array MB':>16} {'peak anonymous memory above model MB':>37} "
          f"{'beyond the states MB':>21} {'seconds':>8}")
    m = psutil.Process().memory_info()
    baseline = m.rss - m.shared
    for k in (1, 2, 4):
        n = args.n * k
        texts = [base[i % len(base)] + ("" if i < len(base) else f" ({i // len(base)})")
                 for i in range(n)]
        states, peak, secs = peak_rss_during(lambda: neuro.last_token_states(
            lm, texts, batch_size=args.batch_size))
        size, above = states.nbytes / 2**20, (peak - baseline) / 2**20
        print(f"{n:>10} {size:>16.1f} {above:>37.1f} {above - size:>21.1f} {secs:>8.1f}")
        del states


if __name__ == "__main__":
    main()
